/* frontend/tr_except.c - exceptions raised and handled inside the
 * translated code (symbolic try/except). Owns: where the 3.11/3.12
 * exception table (read by resume.c's st_fe_exc_entry) sends a raise,
 * making the exception objects the code raises (an exception class
 * or instance built from plain values, assert's AssertionError, the
 * IndexError of an out-of-bounds index with static sizes, the ValueError of
 * int()/float() of a string computed in the frame, the KeyError of a
 * missing key of a dict made in the frame or guarded), the exception being
 * unwound (tr_state.exc_pending: to this frame's handler, else into the
 * caller through the call instruction) and the one being handled
 * (tr_state.exc_cur: PUSH_EXC_INFO / POP_EXCEPT), and the handler's own
 * instructions (CHECK_EXC_MATCH, RERAISE, WITH_EXCEPT_START of a grad-mode
 * block). Also: user exception classes with a Python __init__ (BaseException's
 * new run here, __init__ inlined by tr_calls.c, its super().__init__ run for
 * real), keyword arguments to C constructors, instances raised from outside
 * the frame (guarded source), IndexError of lists/tuples, handlers inside
 * generators (no yield inside one). An exception that no handler of the
 * translated frames covers is a graph break where it was raised (before the
 * try block around it, when there is one): Python raises it. */
#include "tr_internal.h"
#include <frameobject.h>   /* PyFrame_New: stand-in frames of tracebacks */

#include <string.h>

/* ---------------- the exception table ---------------- */
typedef struct {
    int target, depth;
    bool lasti;
} exc_entry;

/* The entry covering code unit u of co (resume.c parses the table):
 * true (e filled) or false (none). */
static bool exc_lookup(PyCodeObject *co, int u, exc_entry *e)
{
    return st_fe_exc_entry(co, u, &e->target, &e->depth, &e->lasti);
}

/* The entry covering fr's instruction when it is the code's own: in a
 * generator's frame not the implicit one around its body (3.12's
 * StopIteration-to-RuntimeError, CALL_INTRINSIC_1) nor yield from's
 * CLEANUP_THROW: those are the generator protocol's, not the user's. */
static bool frame_lookup(tr_frame *fr, exc_entry *e)
{
    static int intr = -2, cleanup = -2;
    if (intr == -2) {
        intr = tr_opnum("CALL_INTRINSIC_1");
        cleanup = tr_opnum("CLEANUP_THROW");
    }
    if (!exc_lookup(fr->code, fr->lasti, e))
        return false;
    if (!fr->is_genexpr)
        return true;
    if (e->target < 0 || e->target >= fr->ncode)
        return false;
    int op = fr->bc[2 * e->target];
    return op != intr && op != cleanup;
}

/* ---------------- where an exception can go ---------------- */
static bool is_call_op(int raw)
{
    static int call = -2, call_ex = -2;
    if (call == -2) {
        call = tr_opnum("CALL");
        call_ex = tr_opnum("CALL_FUNCTION_EX");
    }
    return raw == call || raw == call_ex;
}

/* fr's caller: the frame an exception from fr unwinds into, when fr is an
 * inlined plain call (the caller stands at its call instruction). */
static tr_frame *unwind_parent(tr_state *s, tr_frame *fr)
{
    tr_frame *p = fr->parent;
    if (!p || fr->is_genexpr || p->is_genexpr || s->lib_inline > 0)
        return NULL;
    return is_call_op(p->bc[2 * p->lasti]) ? p : NULL;
}

bool tr_exc_catchable(tr_state *s, tr_frame *fr)
{
    exc_entry e;
    if (s->lib_inline > 0)
        return false;
    /* a generator's frame: only its own handlers (an exception leaving it
     * goes to its consumer, not to a caller: unwind_parent stops) */
    for (; fr; fr = unwind_parent(s, fr))
        if (frame_lookup(fr, &e))
            return true;
    return false;
}

/* ---------------- raising ---------------- */
/* Unit u of the root frame is inside try blocks: the `try:` NOP that
 * starts the outermost of them (the code units before it covered by no
 * exception table entry), or -1. An exception no handler catches breaks
 * there instead: a partial graph cannot resume inside a try block, but it
 * can before one (the graph runs what comes before the try, Python the
 * rest, raise included). */
static int try_start(tr_frame *root, int u)
{
    static int nop = -2;
    if (nop == -2)
        nop = tr_opnum("NOP");
    exc_entry e;
    if (root->is_genexpr || !exc_lookup(root->code, u, &e))
        return -1;
    while (u > 0 && exc_lookup(root->code, u - 1, &e))
        u--;
    return u > 0 && root->bc[2 * (u - 1)] == nop ? u - 1 : -1;
}

/* An entry for fr's current instruction put in front of the traceback of
 * exc (made in the frame: one from outside is not touched), as Python
 * does where an exception is raised and in each frame it unwinds into.
 * Its frame is a stand-in (fr's code and globals, no locals): the entry
 * gives a returned or stored exception such a traceback anew on every
 * call (tr_exc_tmpl_parts). Nothing is done on a failure. */
static void tb_push(tr_state *s, tr_frame *fr, PyObject *exc)
{
    if (!exc || !fr->globals || !tr_is_fresh(s, exc))
        return;
    PyObject *old = PyException_GetTraceback(exc);
    PyFrameObject *f = PyFrame_New(PyThreadState_Get(), fr->code, fr->globals, NULL);
    PyObject *tb = f ? PyObject_CallFunction((PyObject *)&PyTraceBack_Type, "OOii",
                                             old ? old : Py_None, (PyObject *)f, fr->lasti * 2,
                                             PyCode_Addr2Line(fr->code, fr->lasti * 2))
                     : NULL;
    if (tb)
        PyException_SetTraceback(exc, tb);
    else
        PyErr_Clear();
    Py_XDECREF(tb);
    Py_XDECREF(f);
    Py_XDECREF(old);
}

static void set_pending(tr_state *s, tr_frame *fr, PyObject *exc, bool new_site)
{
    if (new_site)
        tb_push(s, fr, exc);
    Py_XSETREF(s->exc_pending, exc);
    if (!new_site && s->exc_file)
        return;
    /* where it was raised: a break there if nothing catches it (before
     * the try block around it, when there is one) */
    tr_frame *root = fr;
    while (root->parent)
        root = root->parent;
    int at = try_start(root, root->lasti);
    s->exc_root_at = at >= 0 ? at : root->lasti;
    s->exc_line = PyCode_Addr2Line(fr->code, fr->lasti * 2);
    s->exc_depth = at >= 0 ? 0 : fr->depth;
    Py_XSETREF(s->exc_file, Py_NewRef(fr->code->co_filename));
}

static bool plain_arg(PyObject *o, int depth);

/* The pending exception is not caught by the translated frames: a break
 * at the instruction that raised it (Python raises it there). */
static int uncaught(tr_state *s)
{
    PyObject *exc = s->exc_pending;
    s->exc_pending = NULL;
    if (s->broke || s->fatal || !exc) {
        Py_XDECREF(exc);
        return -1;
    }
    /* its text, unless that would format a tensor of the trace (or run
     * a user __repr__) */
    PyObject *a = PyObject_GetAttrString(exc, "args");
    PyErr_Clear();
    PyObject *str = a && plain_arg(a, 0)
                        ? PyObject_Str(exc)
                        : PyUnicode_FromString("(not shown: its args are not plain values)");
    Py_XDECREF(a);
    const char *msg = str ? PyUnicode_AsUTF8(str) : NULL;
    if (!msg) {
        PyErr_Clear();
        msg = "";
    }
    tr_break(s, "raise of %s: %.200s (not caught in the compiled frame)",
             Py_TYPE(exc)->tp_name, msg);
    Py_XDECREF(str);
    Py_DECREF(exc);
    if (s->exc_file) {
        s->root_at = s->exc_root_at;
        s->brk_depth = s->exc_depth;
        s->brk->lineno = s->exc_line;
        Py_XSETREF(s->brk->filename, Py_NewRef(s->exc_file));
    }
    return -1;
}

/* A class the translation may instantiate: an exception class whose
 * construction runs no Python code (no __new__/__init__ of a user class). */
static bool safe_exc_class(PyObject *c)
{
    if (!PyExceptionClass_Check(c) || Py_TYPE(c) != &PyType_Type)
        return false;
    PyObject *mro = ((PyTypeObject *)c)->tp_mro;
    if (!mro)
        return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE))
            continue;
        if (Py_TYPE(t) != &PyType_Type || !t->tp_dict)
            return false;
        if (PyDict_GetItemString(t->tp_dict, "__init__") ||
            PyDict_GetItemString(t->tp_dict, "__new__") ||
            PyDict_GetItemString(t->tp_dict, "__init_subclass__"))
            return false;
    }
    return true;
}

/* A user exception class whose construction the translation runs itself:
 * BaseException's own tp_new (no Python __new__, no C base with another
 * new: OSError's), metaclass type, and a Python __init__ (inlined: its
 * super().__init__ reaches the C one, tr_exc_c_init). Its classes define
 * no attribute hooks the translator would bypass. */
bool tr_exc_user_init(PyObject *c)
{
    if (!PyExceptionClass_Check(c) || Py_TYPE(c) != &PyType_Type)
        return false;
    PyTypeObject *t = (PyTypeObject *)c;
    if (t->tp_new != ((PyTypeObject *)PyExc_BaseException)->tp_new || !t->tp_mro)
        return false;
    static const char *const hooks[] = {"__new__", "__setattr__", "__getattr__",
                                        "__getattribute__", "__delattr__", "__del__", NULL};
    if (!tr_heap_mro_plain(t, hooks))
        return false;
    PyObject *n = PyUnicode_InternFromString("__init__");
    PyObject *init = n ? tr_mro_lookup(t, n, NULL) : NULL;
    Py_XDECREF(n);
    PyErr_Clear();
    return init && PyFunction_Check(init);
}

/* Values an exception's C constructor may be given: plain values (lazy
 * numbers made plain, guarded), no iterator or super() stand-ins; with
 * tensors, also tensors (the positional arguments of a user class's
 * construction and its base's __init__: kept in .args, which str() and
 * repr() then leave to Python, exc_text). 1 yes, 0 no, -1 break. */
static int plain_vars(tr_state *s, tr_var *args, int n, bool tensors)
{
    for (int i = 0; i < n; i++)
        if (!args[i].v || args[i].it || args[i].aux)
            return 0;
    for (int i = 0; i < n; i++) {
        if (s->dyn && tr_dyn_plain_var(s, &args[i]) < 0)
            return -1;
        if (!plain_arg(args[i].v, 0) && !(tensors && st_fe_is_tensor(args[i].v)))
            return 0;
    }
    return 1;
}

int tr_exc_new(tr_state *s, PyTypeObject *t, tr_var *args, int nargs, PyObject *kwnames,
               PyObject **obj)
{
    *obj = NULL;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    if (!tr_exc_user_init((PyObject *)t) || !s->top ||
        (!tr_exc_catchable(s, s->top) && !tr_exc_class_rebuildable(t)))
        return 0;
    int pv = plain_vars(s, args, nargs - nkw, true);
    if (pv <= 0)
        return pv;
    /* BaseException's new keeps the positional arguments as .args (what
     * an __init__ that does not call the base's leaves there) */
    PyObject *a = PyTuple_New(nargs - nkw);
    for (int i = 0; a && i < nargs - nkw; i++)
        PyTuple_SET_ITEM(a, i, Py_NewRef(args[i].v));
    PyObject *o = a ? t->tp_new(t, a, NULL) : NULL;
    Py_XDECREF(a);
    if (!o || tr_mark_fresh(s, o) < 0) {
        Py_XDECREF(o);
        return tr_break_exc(s, "exception construction");
    }
    *obj = o;
    return 1;
}

int tr_exc_c_init(tr_state *s, PyObject *fn, PyObject *self, tr_var *args, int nargs)
{
    if (!self || !PyExceptionInstance_Check(self) || !tr_is_fresh(s, self))
        return 0;
    PyObject *oc = PyObject_GetAttrString(fn, "__objclass__");
    PyErr_Clear();
    bool ok = oc && PyExceptionClass_Check(oc) &&
              !(((PyTypeObject *)oc)->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
              PyObject_TypeCheck(self, (PyTypeObject *)oc);
    Py_XDECREF(oc);
    return ok ? plain_vars(s, args, nargs, true) : 0;
}

/* A plain value an exception may be built from. */
static bool plain_arg(PyObject *o, int depth)
{
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
        PyUnicode_CheckExact(o) || PyBytes_CheckExact(o))
        return true;
    if (PyTuple_CheckExact(o) && depth < 4) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            if (!plain_arg(PyTuple_GET_ITEM(o, i), depth + 1))
                return false;
        return true;
    }
    return false;
}

/* The exception instance `raise v` raises (new reference), or NULL with
 * the break recorded. */
static PyObject *exc_of(tr_state *s, tr_var *v, const char *what)
{
    PyObject *o = v->v;
    if (o && PyExceptionClass_Check(o) && !safe_exc_class(o) && tr_exc_user_init(o)) {
        /* `raise MyError` of a class with a Python __init__: called with
         * no arguments, its __init__ inlined (tr_calls.c, tr_exc_new) */
        tr_var r;
        if (tr_call(s, v, NULL, 0, NULL, &r) < 0)
            return NULL;
        if (!r.v || !PyExceptionInstance_Check(r.v) || !tr_is_fresh(s, r.v)) {
            tr_var_clear(&r);
            tr_break(s, "%s of %s", what, ((PyTypeObject *)o)->tp_name);
            return NULL;
        }
        PyObject *e = Py_NewRef(r.v);
        tr_var_clear(&r);
        return e;
    }
    if (o && PyExceptionClass_Check(o)) {
        if (!safe_exc_class(o)) {
            tr_break(s, "%s of %s (its construction runs Python code)", what,
                     ((PyTypeObject *)o)->tp_name);
            return NULL;
        }
        PyObject *r = PyObject_CallNoArgs(o);
        if (!r) {
            tr_break_exc(s, what);
            return NULL;
        }
        if (tr_mark_fresh(s, r) < 0) {
            Py_DECREF(r);
            tr_break_exc(s, what);
            return NULL;
        }
        return r;
    }
    if (o && PyExceptionInstance_Check(o) && tr_is_fresh(s, o))
        return Py_NewRef(o);
    /* an instance from outside (a global, an attribute): read through a
     * source, so guarded; raising it must not change it (no __context__
     * to set: exc_of's callers check) */
    if (o && PyExceptionInstance_Check(o) && tr_var_src(s, v) && !s->exc_cur)
        return Py_NewRef(o);
    tr_break(s, "%s of a %s (only exceptions made in the frame or read from a guarded "
             "source outside a handler)", what, tr_type_name(o));
    return NULL;
}

static void pop_to(tr_frame *fr, int sp)
{
    while (fr->sp > sp)
        tr_var_clear(&fr->stack[--fr->sp]);
}

int tr_exc_raise(tr_state *s, tr_frame *fr, int nargs)
{
    if (!tr_exc_catchable(s, fr))
        return tr_break(s, "raise with no handler in the translated code (Python raises it)");
    if (nargs == 0) {
        /* bare raise: the exception being handled */
        if (!s->exc_cur)
            return tr_break(s, "bare raise with no exception being handled");
        set_pending(s, fr, Py_NewRef(s->exc_cur), false);
        return -1;
    }
    if (fr->sp < nargs)
        return tr_break(s, "RAISE_VARARGS: stack underflow");
    PyObject *exc = exc_of(s, &fr->stack[fr->sp - nargs], "raise");
    if (!exc)
        return -1;
    if (nargs == 2) {
        tr_var *cv = &fr->stack[fr->sp - 1];
        PyObject *cause = NULL;
        if (!tr_is_fresh(s, exc)) {
            Py_DECREF(exc);
            return tr_break(s, "raise ... from of an exception from outside the frame");
        }
        if (cv->v != Py_None && !(cause = exc_of(s, cv, "raise ... from"))) {
            Py_DECREF(exc);
            return -1;
        }
        PyException_SetCause(exc, cause);   /* steals; sets __suppress_context__ */
    }
    if (s->exc_cur && s->exc_cur != exc)
        PyException_SetContext(exc, Py_NewRef(s->exc_cur));
    pop_to(fr, fr->sp - nargs);
    set_pending(s, fr, exc, true);
    return -1;
}

int tr_exc_reraise(tr_state *s, tr_frame *fr)
{
    if (fr->sp < 1 || !fr->stack[fr->sp - 1].v ||
        !PyExceptionInstance_Check(fr->stack[fr->sp - 1].v))
        return tr_break(s, "RERAISE of something else than an exception");
    PyObject *exc = Py_NewRef(fr->stack[fr->sp - 1].v);
    pop_to(fr, fr->sp - 1);
    if (!tr_exc_catchable(s, fr)) {
        set_pending(s, fr, exc, false);
        return uncaught(s);
    }
    set_pending(s, fr, exc, false);
    return -1;
}

int tr_exc_assertion(tr_state *s, tr_frame *fr, tr_var *out)
{
    if (!tr_exc_catchable(s, fr))
        return tr_break(s, "assertion failed (no handler in the translated code: Python "
                        "raises it)");
    memset(out, 0, sizeof *out);
    out->v = Py_NewRef(PyExc_AssertionError);
    return 0;
}

int tr_exc_unwind(tr_state *s, tr_frame *fr)
{
    if (!s->exc_pending)
        return 0;
    if (s->broke || s->fatal) {
        Py_CLEAR(s->exc_pending);
        return 0;
    }
    exc_entry e;
    if (s->lib_inline <= 0 && frame_lookup(fr, &e)) {
        if (e.depth > fr->sp || e.depth + 2 > fr->cap) {
            Py_CLEAR(s->exc_pending);
            tr_break(s, "exception table: bad stack depth");
            return 0;
        }
        pop_to(fr, e.depth);
        if (e.lasti) {
            tr_var l = {0};
            l.v = PyLong_FromLong(fr->lasti);
            if (!l.v) {
                Py_CLEAR(s->exc_pending);
                tr_break_exc(s, "exception");
                return 0;
            }
            fr->stack[fr->sp++] = l;
        }
        tr_var x = {0};
        x.v = s->exc_pending;
        s->exc_pending = NULL;
        fr->stack[fr->sp++] = x;
        fr->pc = e.target;
        return 1;
    }
    tr_frame *p = unwind_parent(s, fr);
    if (p && tr_exc_catchable(s, p)) {
        tb_push(s, p, s->exc_pending);
        return 0;           /* on to the caller's handler */
    }
    uncaught(s);
    return 0;
}

/* ---------------- the handler's instructions ---------------- */
int tr_exc_push_info(tr_state *s, tr_frame *fr)
{
    if (fr->sp < 1 || fr->sp + 1 > fr->cap)
        return tr_break(s, "PUSH_EXC_INFO: bad stack");
    tr_var *top = &fr->stack[fr->sp - 1];
    if (!top->v || !PyExceptionInstance_Check(top->v))
        return tr_break(s, "PUSH_EXC_INFO of a %s", tr_type_name(top->v));
    tr_var exc = *top, prev = {0};
    prev.v = s->exc_cur ? s->exc_cur : Py_NewRef(Py_None);
    s->exc_cur = Py_NewRef(exc.v);
    *top = prev;
    fr->stack[fr->sp++] = exc;
    fr->exc_nest++;
    return 0;
}

int tr_exc_pop_except(tr_state *s, tr_frame *fr)
{
    if (fr->sp < 1)
        return tr_break(s, "POP_EXCEPT: stack underflow");
    tr_var v = fr->stack[--fr->sp];
    if (fr->exc_nest > 0)
        fr->exc_nest--;
    Py_CLEAR(s->exc_cur);
    if (v.v && v.v != Py_None)
        s->exc_cur = Py_NewRef(v.v);
    tr_var_clear(&v);
    return 0;
}

static bool exc_classes(PyObject *t)
{
    if (PyTuple_Check(t)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++)
            if (!PyExceptionClass_Check(PyTuple_GET_ITEM(t, i)))
                return false;
        return true;
    }
    return t && PyExceptionClass_Check(t);
}

int tr_exc_match(tr_state *s, tr_frame *fr)
{
    if (fr->sp < 2)
        return tr_break(s, "CHECK_EXC_MATCH: stack underflow");
    tr_var t = fr->stack[--fr->sp];
    PyObject *exc = fr->stack[fr->sp - 1].v;
    if (!exc_classes(t.v) || !exc) {
        int rc = tr_break(s, "except with a %s (not exception classes)", tr_type_name(t.v));
        tr_var_clear(&t);
        return rc;
    }
    int m = PyErr_GivenExceptionMatches(exc, t.v);
    tr_var_clear(&t);
    tr_var r = {0};
    r.v = PyBool_FromLong(m);
    fr->stack[fr->sp++] = r;
    return 0;
}

/* WITH_EXCEPT_START: [exit, lasti, prev, exc]: a grad-mode block left by
 * an exception; its __exit__ runs for real (it restores the mode). */
int tr_exc_with_start(tr_state *s, tr_frame *fr)
{
    if (fr->sp < 4 || fr->sp + 1 > fr->cap)
        return tr_break(s, "WITH_EXCEPT_START: bad stack");
    PyObject *ex = fr->stack[fr->sp - 4].v, *exc = fr->stack[fr->sp - 1].v;
    PyObject *self = ex && PyMethod_Check(ex) ? PyMethod_GET_SELF(ex) : NULL;
    if (tr_is_nullcontext(self) && exc && PyExceptionInstance_Check(exc)) {
        /* nullcontext.__exit__ suppresses nothing */
        tr_var v = {0};
        v.v = Py_NewRef(Py_None);
        fr->stack[fr->sp++] = v;
        return 0;
    }
    if (!self || !tr_is_mode_ctx(self) || !exc || !PyExceptionInstance_Check(exc))
        return tr_break(s, "an exception leaving a with block on a %s",
                        tr_type_name(self ? self : ex));
    PyObject *tb = PyException_GetTraceback(exc);
    PyObject *r = PyObject_CallFunctionObjArgs(ex, (PyObject *)Py_TYPE(exc), exc,
                                               tb ? tb : Py_None, NULL);
    Py_XDECREF(tb);
    if (!r)
        return tr_break_exc(s, "__exit__");
    tr_var v = {0};
    v.v = r;
    fr->stack[fr->sp++] = v;
    return 0;
}

/* ---------------- exceptions of calls and subscripts ---------------- */
/* str(e) / repr(e) of an exception made in the frame from plain values,
 * or read through src (its args guarded), whose class defines no Python
 * __str__/__repr__. */
static int exc_text(tr_state *s, tr_frame *fr, int nargs, PyObject *f, PyObject *e,
                    st_fe_src *src)
{
    /* str() reads only __str__ (a dataclass's own __repr__ does not matter) */
    const char *own = f == (PyObject *)&PyUnicode_Type ? "__str__" : "__repr__";
    PyObject *mro = Py_TYPE(e)->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if ((t->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
            (!t->tp_dict || PyDict_GetItemString(t->tp_dict, own)))
            return 0;
    }
    PyObject *a = PyObject_GetAttrString(e, "args");
    bool plain = a && plain_arg(a, 0);
    PyErr_Clear();
    if (!plain) {
        Py_XDECREF(a);
        return 0;
    }
    if (src) {
        PyObject *an = PyUnicode_InternFromString("args");
        st_fe_src *as = an ? st_fe_src_attr(&s->srcs, src, an) : NULL;
        Py_XDECREF(an);
        if (!as || st_fe_guard_add(&s->guards, ST_G_EQ, as, a) < 0) {
            Py_DECREF(a);
            return tr_break_exc(s, "guard");
        }
    }
    Py_DECREF(a);
    PyObject *r = PyObject_CallOneArg(f, e);
    if (!r)
        return tr_break_exc(s, "str() of an exception");
    pop_to(fr, fr->sp - nargs - 2);
    tr_var v = {0};
    v.v = r;
    fr->stack[fr->sp++] = v;
    return 1;
}

/* e.add_note(text) and e.with_traceback(None) of an exception the entry
 * rebuilds (f: the bound method, or the descriptor with e in args[0]):
 * run for real (the note is in e.__dict__; a traceback of None is what
 * the rebuilt one has). 1 done, 0 not this case, -1 break. */
static int exc_method(tr_state *s, tr_frame *fr, int nargs, PyObject *f, tr_var *args, int n)
{
    tr_var *self = NULL, *arg = NULL;
    const char *name = NULL;
    if (PyCFunction_Check(f) && n == 1 && PyCFunction_GET_SELF(f) &&
        PyExceptionInstance_Check(PyCFunction_GET_SELF(f))) {
        name = ((PyCFunctionObject *)f)->m_ml->ml_name;
        arg = &args[0];
    } else if (Py_IS_TYPE(f, &PyMethodDescr_Type) && n == 2 &&
               ((PyMethodDescrObject *)f)->d_common.d_type == (PyTypeObject *)PyExc_BaseException) {
        name = ((PyMethodDescrObject *)f)->d_method->ml_name;
        self = &args[0];
        arg = &args[1];
    }
    PyObject *e = self ? self->v : name ? PyCFunction_GET_SELF(f) : NULL;
    bool note = name && !strcmp(name, "add_note"), tb = name && !strcmp(name, "with_traceback");
    if (!e || !arg->v || (!note && !tb) || (self && (self->it || self->aux)) ||
        !tr_exc_rebuildable(s, e) || (note ? !PyUnicode_CheckExact(arg->v) : arg->v != Py_None))
        return 0;
    PyObject *r = PyObject_CallMethod(e, name, "O", arg->v);
    if (!r)
        return tr_break_exc(s, note ? "add_note()" : "with_traceback()");
    tr_var v = {0};
    if (r == e && self) {             /* with_traceback: the exception itself */
        Py_DECREF(r);
        tr_var_copy(&v, self);
    } else {
        v.v = r;
    }
    pop_to(fr, fr->sp - nargs - 2);
    fr->stack[fr->sp++] = v;
    return 1;
}

int tr_exc_call(tr_state *s, tr_frame *fr, int nargs, PyObject *kwnames)
{
    if (fr->sp < nargs + 2)
        return 0;
    tr_var *base = &fr->stack[fr->sp - nargs - 2];
    tr_var *fn = base[0].v ? &base[0] : &base[1];
    tr_var *args = fn + 1;
    int n = base[0].v ? nargs + 1 : nargs;
    PyObject *f = fn->v;
    if (!f)
        return 0;
    if (!kwnames) {
        int m = exc_method(s, fr, nargs, f, args, n);
        if (m)
            return m;
    }
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    /* keywords: to a C constructor (ImportError(name=...)); one that takes
     * none raises TypeError here, a break: Python raises it */
    bool exc_cls = PyExceptionClass_Check(f) && safe_exc_class(f);
    bool conv = !kwnames && (f == (PyObject *)&PyLong_Type || f == (PyObject *)&PyFloat_Type) && n == 1 &&
                args[0].v && PyUnicode_CheckExact(args[0].v) && !tr_var_src(s, &args[0]);
    static PyObject *repr_fn;
    if (!repr_fn)
        repr_fn = Py_XNewRef(PyDict_GetItemString(PyEval_GetBuiltins(), "repr"));
    if ((f == (PyObject *)&PyUnicode_Type || (repr_fn && f == repr_fn))
        && n == 1 && !kwnames && args[0].v && PyExceptionInstance_Check(args[0].v)) {
        if (tr_is_fresh(s, args[0].v))
            return exc_text(s, fr, nargs, f, args[0].v, NULL);
        st_fe_src *src = tr_var_src(s, &args[0]);
        if (src)
            return exc_text(s, fr, nargs, f, args[0].v, src);
    }
    /* outside a handler only when the entry can rebuild the exception:
     * the raise that follows is a break, whose partial graph holds the
     * exception as a live value */
    if ((!exc_cls && !conv) ||
        (!tr_exc_catchable(s, fr) && (conv || !tr_exc_class_rebuildable((PyTypeObject *)f))))
        return 0;
    int pv = plain_vars(s, args, n, exc_cls);
    if (pv <= 0)
        return pv;
    PyObject **av = PyMem_Malloc(sizeof(PyObject *) * (size_t)(n + 1));
    if (!av)
        return tr_break(s, "out of memory");
    for (int i = 0; i < n; i++)
        av[i] = args[i].v;
    PyObject *r = PyObject_Vectorcall(f, av, (size_t)(n - nkw), kwnames);
    PyMem_Free(av);
    if (conv) {
        /* int("12") is the normal path's; a ValueError is raised here when
         * a handler covers the call (the string is computed in the frame
         * from guarded values: the outcome is fixed) */
        if (r || !PyErr_ExceptionMatches(PyExc_ValueError)) {
            Py_XDECREF(r);
            PyErr_Clear();
            return 0;
        }
        PyObject *type, *val, *tb;
        PyErr_Fetch(&type, &val, &tb);
        PyErr_NormalizeException(&type, &val, &tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        if (!val || tr_mark_fresh(s, val) < 0) {
            Py_XDECREF(val);
            return tr_break_exc(s, "int()/float()");
        }
        PyException_SetTraceback(val, Py_None);   /* raised by the translation, not the code */
        if (s->exc_cur && s->exc_cur != val)
            PyException_SetContext(val, Py_NewRef(s->exc_cur));
        set_pending(s, fr, val, true);
        return -1;
    }
    if (!r)
        return tr_break_exc(s, "exception construction");
    if (tr_mark_fresh(s, r) < 0) {
        Py_DECREF(r);
        return tr_break_exc(s, "exception construction");
    }
    pop_to(fr, fr->sp - nargs - 2);
    tr_var v = {0};
    v.v = r;
    fr->stack[fr->sp++] = v;
    return 1;
}

/* d[key] of a dict without key: the KeyError is certain when d was made
 * in the frame (not a shadow of an outside dict) or key's absence from the
 * dict it was read from is guarded. 1: raised (pending), 0: not this case. */
static int dict_miss(tr_state *s, tr_frame *fr, tr_var *o, tr_var *k)
{
    if (PyDict_CheckExact(o->v) && s->dyn && (tr_is_lazy(k->v) || tr_is_symint(k->v)) &&
        tr_exc_catchable(s, fr) && tr_dyn_plain_var(s, k) < 0)
        return -1;
    if (!PyDict_CheckExact(o->v) || !tr_const_key(k->v) ||
        !(PyUnicode_CheckExact(k->v) || PyLong_CheckExact(k->v)))
        return 0;
    int has = PyDict_Contains(o->v, k->v);
    if (has != 0) {
        PyErr_Clear();
        return 0;
    }
    st_fe_src *ds = tr_var_src(s, o);
    bool fresh = tr_is_fresh(s, o->v);
    if ((!ds && !fresh) || tr_fx_shadow_src(s, o->v) || tr_fx_substitute(s, o->v) ||
        !tr_exc_catchable(s, fr))
        return 0;
    if (ds) {
        st_fe_src *is = st_fe_src_item(&s->srcs, ds, k->v);
        if (!is || st_fe_guard_add(&s->guards, ST_G_ABSENT, is, NULL) < 0)
            return tr_break_exc(s, "guard");
    }
    PyObject *exc = PyObject_CallOneArg(PyExc_KeyError, k->v);
    if (!exc || tr_mark_fresh(s, exc) < 0) {
        Py_XDECREF(exc);
        return tr_break_exc(s, "KeyError");
    }
    if (s->exc_cur)
        PyException_SetContext(exc, Py_NewRef(s->exc_cur));
    set_pending(s, fr, exc, true);
    return 1;
}

/* lst[i] of a list or tuple with an int i out of range: certain when the
 * sequence was made in the frame or read through a source (its length
 * guarded) and not changed since, and i is a constant or guarded.
 * 1: raised (pending), 0: not this case, -1: break. */
static int seq_miss(tr_state *s, tr_frame *fr, tr_var *o, tr_var *k)
{
    if (!(PyList_CheckExact(o->v) || PyTuple_CheckExact(o->v)) || !tr_exc_catchable(s, fr))
        return 0;
    if (s->dyn && (tr_is_lazy(k->v) || tr_is_symint(k->v)) && tr_dyn_plain_var(s, k) < 0)
        return -1;
    if (!PyLong_CheckExact(k->v))
        return 0;
    int ovf = 0;
    long long ix = PyLong_AsLongLongAndOverflow(k->v, &ovf);
    if (ix == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t n = PyList_CheckExact(o->v) ? PyList_GET_SIZE(o->v) : PyTuple_GET_SIZE(o->v);
    if (!ovf && ix >= -(long long)n && ix < (long long)n)
        return 0;
    st_fe_src *ds = tr_var_src(s, o);
    if ((!ds && !tr_is_fresh(s, o->v)) || tr_fx_shadow_src(s, o->v) ||
        tr_fx_substitute(s, o->v))
        return 0;
    st_fe_src *ks = tr_var_src(s, k);
    if ((ds && st_fe_guard_value(&s->guards, ds, o->v) < 0) ||
        (ks && st_fe_guard_add(&s->guards, ST_G_EQ, ks, k->v) < 0))
        return tr_break_exc(s, "guard");
    PyObject *exc = PyObject_CallFunction(PyExc_IndexError, "s",
                                          PyList_CheckExact(o->v) ? "list index out of range"
                                                                  : "tuple index out of range");
    if (!exc || tr_mark_fresh(s, exc) < 0) {
        Py_XDECREF(exc);
        return tr_break_exc(s, "IndexError");
    }
    if (s->exc_cur)
        PyException_SetContext(exc, Py_NewRef(s->exc_cur));
    set_pending(s, fr, exc, true);
    return 1;
}

int tr_exc_subscr(tr_state *s, tr_frame *fr)
{
    if (fr->sp < 2)
        return 0;
    tr_var *o = &fr->stack[fr->sp - 2], *k = &fr->stack[fr->sp - 1];
    if (o->v && k->v && !o->it && !k->it && PyDict_CheckExact(o->v))
        return dict_miss(s, fr, o, k) ? -1 : 0;
    if (o->v && k->v && !o->it && !k->it && (PyList_CheckExact(o->v) || PyTuple_CheckExact(o->v)))
        return seq_miss(s, fr, o, k) ? -1 : 0;
    if (!o->v || !k->v || !st_fe_is_tensor(o->v) || tr_dyn_shapes(s) || o->it || k->it)
        return 0;
    PyObject *key = k->v;
    int nk = PyTuple_CheckExact(key) ? (int)PyTuple_GET_SIZE(key) : 1;
    st_tensor *t = st_fe_unwrap(o->v);
    int dim = 0;
    for (int i = 0; i < nk; i++) {
        PyObject *it = PyTuple_CheckExact(key) ? PyTuple_GET_ITEM(key, i) : key;
        if (PySlice_Check(it)) {
            dim++;
            continue;
        }
        if (!PyLong_CheckExact(it) || dim >= t->ndim)
            return 0;       /* not a plain int index: the normal path */
        int ovf = 0;
        long long ix = PyLong_AsLongLongAndOverflow(it, &ovf);
        if (ovf || (ix == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        int64_t size = t->shape[dim];
        if (ix >= -size && ix < size) {
            dim++;
            continue;
        }
        /* out of bounds: with static sizes (guarded) and an int index the
         * IndexError is certain */
        if (!tr_exc_catchable(s, fr))
            return 0;
        st_fe_src *ks = tr_var_src(s, k);
        if (ks && st_fe_guard_add(&s->guards, ST_G_EQ, ks, key) < 0)
            return tr_break_exc(s, "guard");
        PyObject *msg = PyUnicode_FromFormat("index %lld is out of bounds for dimension %d "
                                             "with size %lld", ix, dim, (long long)size);
        PyObject *exc = msg ? PyObject_CallOneArg(PyExc_IndexError, msg) : NULL;
        Py_XDECREF(msg);
        if (!exc || PyErr_Occurred() || tr_mark_fresh(s, exc) < 0) {
            Py_XDECREF(exc);
            return tr_break_exc(s, "IndexError");
        }
        if (s->exc_cur)
            PyException_SetContext(exc, Py_NewRef(s->exc_cur));
        set_pending(s, fr, exc, true);
        return -1;
    }
    return 0;
}

void tr_exc_clear(tr_state *s)
{
    Py_CLEAR(s->exc_pending);
    Py_CLEAR(s->exc_cur);
    Py_CLEAR(s->exc_file);
}

int tr_exc_yield(tr_state *s, tr_frame *fr)
{
    /* Python gives the consumer back its own exception state while the
     * generator is suspended: tr_gen_resume keeps the generator's aside
     * (tr_frame.gen_exc) and restores the consumer's; only its frames yield */
    if (fr->exc_nest > 0 && !fr->is_genexpr)
        return tr_break(s, "yield inside an except block outside a generator");
    return 0;
}
