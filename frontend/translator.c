/* frontend/translator.c - the bytecode translator (st_fe_translate):
 * translator frames, inlining a call into a new frame, and turning a
 * finished translation into an entry (graph, inputs, return template).
 * The stack machine is tr_exec.c; variables and breaks tr_vars.c; calls
 * tr_calls.c; attributes tr_attrs.c; iteration and subscripts tr_iter.c. */
#include "tr_internal.h"
#include "st_ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- frames ---------------- */
static void frame_free(tr_frame *fr)
{
    if (!fr)
        return;
    if (fr->yield_in_try && fr->closed)
        *fr->closed = true;    /* dropped unfinished: Python would run its cleanup */
    if (fr->gprev) {           /* off the live generator frames */
        *fr->gprev = fr->gnext;
        if (fr->gnext)
            fr->gnext->gprev = fr->gprev;
        fr->gprev = NULL;
    }
    for (int i = 0; i < fr->nlocals; i++)
        tr_var_clear(&fr->locals[i]);
    for (int i = 0; i < fr->sp; i++)
        tr_var_clear(&fr->stack[i]);
    free(fr->locals);
    free(fr->stack);
    Py_XDECREF(fr->code);
    Py_XDECREF(fr->codebytes);
    Py_XDECREF(fr->func);
    Py_XDECREF(fr->globals);
    Py_XDECREF(fr->builtins);
    Py_XDECREF(fr->gen_exc);
    free(fr);
}

static tr_frame *frame_new(tr_state *s, PyCodeObject *code, PyObject *func,
                           PyObject *globals, PyObject *builtins)
{
    tr_frame *fr = calloc(1, sizeof *fr);
    if (!fr) {
        PyErr_NoMemory();
        return NULL;
    }
    fr->code = (PyCodeObject *)Py_NewRef(code);
    fr->func = Py_XNewRef(func);
    fr->globals = Py_NewRef(globals);
    fr->builtins = Py_NewRef(builtins);
    fr->same_globals = (globals == s->f->globals);
    fr->codebytes = PyCode_GetCode(code);
    if (!fr->codebytes) {
        frame_free(fr);
        return NULL;
    }
    fr->bc = (const uint8_t *)PyBytes_AS_STRING(fr->codebytes);
    fr->ncode = (int)(PyBytes_GET_SIZE(fr->codebytes) / 2);
    fr->nlocals = code->co_nlocalsplus;
    fr->cap = code->co_stacksize + 4;
    fr->locals = calloc((size_t)fr->nlocals + 1, sizeof(tr_var));
    fr->stack = calloc((size_t)fr->cap, sizeof(tr_var));
    if (!fr->locals || !fr->stack) {
        frame_free(fr);
        PyErr_NoMemory();
        return NULL;
    }
    return fr;
}


void tr_frame_free(tr_frame *fr)
{
    frame_free(fr);
}

/* ---------------- generators ----------------
 * Calling a generator function makes its frame (arguments bound) and an
 * iterator var that owns it; each item asked of the iterator (next, for,
 * yield from, list()) resumes the frame up to its next yield, with the
 * asking frame as its parent, so that what it reads and does happens
 * where Python would do it. */
static int gen_make(tr_state *s, tr_frame *fr, tr_var *out)
{
    if (tr_iter_from(s, NULL, 0, (PyObject *)&PyGen_Type, out) < 0) {
        frame_free(fr);
        return -1;
    }
    out->it->gen = fr;
    fr->closed = &s->gen_closed;
    fr->gnext = s->gens;
    if (s->gens)
        s->gens->gprev = &fr->gnext;
    fr->gprev = &s->gens;
    s->gens = fr;
    return 0;
}

int tr_gen_check_closed(tr_state *s)
{
    bool pending = s->gen_closed;
    for (tr_frame *g = s->gens; g && !pending; g = g->gnext)
        pending = g->yield_in_try;
    if (!pending)
        return 0;
    s->gen_closed = false;
    s->no_resume = true;   /* the generator would not exist in Python to be closed */
    return tr_break(s, "a generator left suspended inside a try or with block (closing it "
                    "runs its finally/__exit__ code in Python)");
}

int tr_gen_resume(tr_state *s, tr_iter *it, tr_var *out)
{
    tr_frame *fr = it->gen;
    memset(out, 0, sizeof *out);
    if (fr->running)
        return tr_break(s, "generator already executing");
    int depth = s->top ? s->top->depth + 1 : 0;
    if (depth > TR_MAX_DEPTH)
        return tr_break(s, "inlining too deep (more than %d calls)", TR_MAX_DEPTH);
    fr->depth = depth;
    fr->parent = s->top;
    fr->running = true;
    fr->yield_in_try = false;
    s->top = fr;
    tr_var y = {0};
    /* the consumer's handled exception and the generator's own are apart,
     * as in Python: the generator's while it runs (tr_exc_suspend) */
    PyObject *consumer = s->exc_cur;
    s->exc_cur = fr->gen_exc ? fr->gen_exc : Py_XNewRef(consumer);
    fr->gen_exc = NULL;
    int rc = tr_run_frame(s, fr, &y);
    if (rc == 1 && fr->exc_nest > 0)
        fr->gen_exc = s->exc_cur;
    else
        Py_XDECREF(s->exc_cur);
    s->exc_cur = consumer;
    s->top = fr->parent;
    fr->parent = NULL;
    fr->running = false;
    if (rc < 0)
        return -1;
    if (rc == 1) {
        *out = y;
        return 1;
    }
    tr_var_clear(&it->ret);
    it->ret = y;
    it->gen = NULL;
    frame_free(fr);
    return 0;
}

/* ---------------- inlining ---------------- */
/* A user function inlined through a source: what its identity does not
 * pin is guarded too (fn.__code__, fn.__defaults__ and fn.__kwdefaults__
 * can be reassigned; the defaults are bound as constants). */
static int guard_fn_parts(tr_state *s, PyObject *fn)
{
    if (tr_fn_origin(fn) != 0 || tr_is_fresh(s, fn))
        return 0;
    st_fe_src *fs = tr_lookup_src(s, fn);
    if (!fs)
        return 0;
    static const char *const parts[] = {"__code__", "__defaults__", "__kwdefaults__"};
    PyFunctionObject *f = (PyFunctionObject *)fn;
    PyObject *vals[3] = {f->func_code, f->func_defaults ? f->func_defaults : Py_None,
                         f->func_kwdefaults ? f->func_kwdefaults : Py_None};
    for (int k = 0; k < 3; k++) {
        PyObject *nm = PyUnicode_InternFromString(parts[k]);
        st_fe_src *ps = nm ? st_fe_src_attr(&s->srcs, fs, nm) : NULL;
        Py_XDECREF(nm);
        if (!ps || st_fe_guard_add(&s->guards, ST_G_ID, ps, vals[k]) < 0)
            return tr_break_exc(s, "guard");
    }
    return 0;
}

/* The source of the default that fills slot i of fn (not passed by the
 * caller): fn.__defaults__[d] or fn.__kwdefaults__[name], so that it is
 * guarded as a value read from there (a list default appended to, or
 * __kwdefaults__ changed in place, misses). *src NULL: fn has no source
 * (made in the frame, or symtrace's own): the default is a constant. */
static int default_src(tr_state *s, PyObject *fn, int i, st_fe_src **src)
{
    *src = NULL;
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    int argc = co->co_argcount, total = argc + co->co_kwonlyargcount;
    if (i >= total || tr_fn_origin(fn) != 0 || tr_is_fresh(s, fn))
        return 0;
    st_fe_src *fs = tr_lookup_src(s, fn);
    if (!fs)
        return 0;
    PyObject *defs = PyFunction_GET_DEFAULTS(fn);
    Py_ssize_t ndef = defs ? PyTuple_GET_SIZE(defs) : 0;
    PyObject *nm = PyUnicode_InternFromString(i < argc ? "__defaults__" : "__kwdefaults__");
    PyObject *key = !nm ? NULL : i < argc ? PyLong_FromSsize_t(i - (argc - ndef))
                                          : Py_NewRef(tr_local_name(co, i));
    st_fe_src *ps = key ? st_fe_src_attr(&s->srcs, fs, nm) : NULL;
    *src = ps ? st_fe_src_item(&s->srcs, ps, key) : NULL;
    Py_XDECREF(nm);
    Py_XDECREF(key);
    return *src ? 0 : tr_break_exc(s, "source");
}

int tr_inline(tr_state *s, PyObject *fn, tr_var *args, int nargs,
              PyObject *kwnames, tr_var *out)
{
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    int depth = s->top ? s->top->depth + 1 : 0;
    if (depth > TR_MAX_DEPTH)
        return tr_break(s, "inlining too deep (more than %d calls)", TR_MAX_DEPTH);
    /* A generator function's frame runs when items are asked for (gen_make) */
    bool genexpr = (co->co_flags & CO_GENERATOR) &&
                   !(co->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE));
    if (!genexpr && (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR |
                                     CO_ITERABLE_COROUTINE)))
        return tr_break(s, "call to generator/coroutine %s is not supported",
                        PyUnicode_AsUTF8(co->co_qualname));
    PyObject *builtins = PyDict_GetItemString(PyFunction_GET_GLOBALS(fn), "__builtins__");
    if (builtins && PyModule_Check(builtins))
        builtins = PyModule_GetDict(builtins);
    if (!builtins || !PyDict_Check(builtins))
        builtins = s->f->builtins;
    if (guard_fn_parts(s, fn) < 0)
        return -1;
    tr_frame *fr = frame_new(s, co, fn, PyFunction_GET_GLOBALS(fn), builtins);
    if (!fr)
        return tr_break_exc(s, "inline");
    int nlocals = fr->nlocals;
    fr->depth = depth;
    fr->is_genexpr = genexpr;
    if (!fr->same_globals) {
        /* globals of another module: through a source of the function
         * (fn.__globals__), or of an enclosing frame with these globals */
        st_fe_src *fs = tr_is_fresh(s, fn) ? NULL : tr_lookup_src(s, fn);
        if (fs) {
            PyObject *gn = PyUnicode_FromString("__globals__");
            fr->globals_src = gn ? st_fe_src_attr(&s->srcs, fs, gn) : NULL;
            Py_XDECREF(gn);
            if (!fr->globals_src) {
                frame_free(fr);
                return tr_break_exc(s, "source");
            }
        } else {
            for (tr_frame *p = s->top; p; p = p->parent)
                if (p->globals == fr->globals) {
                    fr->same_globals = p->same_globals;
                    fr->globals_src = p->globals_src;
                    break;
                }
        }
    }
    /* bind: real binding on values gives the slot values; sources follow
     * the argument each slot came from */
    PyObject **vals = calloc((size_t)nargs + 1, sizeof(PyObject *));
    PyObject **slots = calloc((size_t)fr->nlocals + 1, sizeof(PyObject *));
    int rc = -1;
    if (!vals || !slots) {
        tr_break(s, "out of memory");
        goto done;
    }
    for (int i = 0; i < nargs; i++)
        vals[i] = args[i].v;
    int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
    if (tr_bind_args(fn, vals, npos, kwnames, slots, fr->nlocals) < 0) {
        tr_break_exc(s, "argument binding");
        goto done;
    }
    int argc = co->co_argcount;
    int total = argc + co->co_kwonlyargcount;
    for (int k = 0; k < nargs; k++) {
        /* which slot takes argument k (-1: *args / **kwargs) */
        int slot = -1;
        if (k < npos)
            slot = k < argc ? k : -1;
        else
            for (int i = co->co_posonlyargcount; i < total; i++)
                if (PyUnicode_Compare(tr_local_name(co, i),
                                      PyTuple_GET_ITEM(kwnames, k - npos)) == 0) {
                    slot = i;
                    break;
                }
        if (slot < 0 && args[k].it) {
            tr_break(s, "an iterator passed through *args/**kwargs (not supported)");
            goto done;
        }
    }
    for (int i = 0; i < fr->nlocals; i++) {
        if (!slots[i])
            continue;
        tr_var *l = &fr->locals[i];
        int from = -1;
        if (i < argc && i < npos)
            from = i;
        for (int k = npos; from < 0 && i < total && k < nargs; k++)
            if (PyUnicode_Compare(tr_local_name(co, i), PyTuple_GET_ITEM(kwnames, k - npos)) == 0)
                from = k;
        if (from >= 0) {
            tr_var_copy(l, &args[from]);
            Py_DECREF(slots[i]);
        } else {
            st_fe_src *ds;
            if (default_src(s, fn, i, &ds) < 0)
                goto done;
            if (ds) {
                if (tr_make_sourced(s, l, slots[i], ds) < 0) {
                    slots[i] = NULL;   /* stolen */
                    goto done;
                }
            } else {
                tr_make_value(s, l, slots[i]);
                if (PyTuple_Check(slots[i]) || PyDict_Check(slots[i]))
                    tr_mark_fresh(s, slots[i]);
            }
        }
        slots[i] = NULL;
    }
    if (genexpr) {
        rc = gen_make(s, fr, out);   /* it owns fr */
        fr = NULL;
        goto done;
    }
    fr->parent = s->top;
    s->top = fr;
    rc = tr_run_frame(s, fr, out);
    s->top = fr->parent;
done:
    if (slots)
        for (int i = 0; i < nlocals; i++)
            Py_XDECREF(slots[i]);
    free(slots);
    free(vals);
    frame_free(fr);
    return rc;
}

/* ---------------- finishing ---------------- */
/* Sharing (st_fe_tmpl.share): a list, dict, tuple or user object made in the
 * frame that the templates meet again becomes a REF node naming its first
 * node. s->live_seen maps id(v) to (v, first node, done); 1: t is now a
 * REF, 0: t is v's first node (share_done when its items are made), -1:
 * error or break (v contains itself). */
static int share_node(tr_state *s, PyObject *v, st_fe_tmpl *t)
{
    PyObject *k = tr_id_key(v);
    PyObject *e = k ? PyDict_GetItemWithError(s->live_seen, k) : NULL;
    if (e) {
        Py_DECREF(k);
        if (PyTuple_GET_ITEM(e, 2) != Py_True)
            return tr_break(s, "a %s made in the frame contains itself", tr_type_name(v));
        st_fe_tmpl *first = PyLong_AsVoidPtr(PyTuple_GET_ITEM(e, 1));
        if (!first->share)
            first->share = ++s->nshare;
        t->kind = ST_T_REF;
        t->ref = first;
        return 1;
    }
    PyObject *p = k && !PyErr_Occurred() ? PyLong_FromVoidPtr(t) : NULL;
    PyObject *ne = p ? PyTuple_Pack(3, v, p, Py_False) : NULL;
    int rc = ne && PyDict_SetItem(s->live_seen, k, ne) == 0 ? 0 : -1;
    Py_XDECREF(p);
    Py_XDECREF(ne);
    Py_XDECREF(k);
    return rc < 0 ? tr_break_exc(s, "return") : 0;
}

static int share_done(tr_state *s, PyObject *v)
{
    PyObject *k = tr_id_key(v);
    PyObject *e = k ? PyDict_GetItemWithError(s->live_seen, k) : NULL;
    PyObject *ne = e ? PyTuple_Pack(3, PyTuple_GET_ITEM(e, 0), PyTuple_GET_ITEM(e, 1), Py_True)
                     : NULL;
    int rc = ne && PyDict_SetItem(s->live_seen, k, ne) == 0 ? 0 : -1;
    Py_XDECREF(ne);
    Py_XDECREF(k);
    return rc < 0 ? tr_break_exc(s, "return") : 0;
}

typedef struct {
    st_tensor **outs;
    int nout, cap;
} outlist;

static int tmpl_closure_part(tr_state *s, PyObject *v, outlist *ol, st_fe_tmpl *t, int depth);

static int tmpl_of(tr_state *s, PyObject *v, outlist *ol, st_fe_tmpl **out, int depth)
{
    st_fe_tmpl *t = calloc(1, sizeof *t);
    if (!t) {
        PyErr_NoMemory();
        return tr_break_exc(s, "return");
    }
    *out = t;
    st_fe_src *lzsrc = tr_lazy_src(s, v);
    if (lzsrc) {
        /* a number argument passed on as it is: read from the frame */
        t->kind = ST_T_SOURCE;
        t->src = lzsrc;
        return 0;
    }
    if (tr_is_symint(v)) {
        /* a size or an int attribute's value, or arithmetic on them: the
         * expression, evaluated on every call */
        t->kind = ST_T_SYM;
        t->sym = s->guards.sym;
        t->index = tr_dyn_expr(s, v);
        if (t->index < 0) {
            t->kind = ST_T_CONST;
            t->obj = tr_dyn_plain(s, v, 0);
            return t->obj ? 0 : tr_break_exc(s, "symbolic int");
        }
        return 0;
    }
    st_fe_src *shsrc = tr_fx_shadow_src(s, v);
    if (shsrc) {
        /* a list/dict from outside mutated in this frame: the original */
        t->kind = ST_T_SOURCE;
        t->src = shsrc;
        return 0;
    }
    if (!st_fe_is_tensor(v) && !tr_is_plain_const(v)) {
        /* an object read from the frame (a list argument, self.cache)
         * keeps its identity: returned, stored or live at a break, it is
         * that object */
        st_fe_src *src = tr_lookup_src(s, v);
        if (src) {
            t->kind = ST_T_SOURCE;
            t->src = src;
            return 0;
        }
    }
    if (st_fe_is_tensor(v)) {
        st_fe_src *src = tr_lookup_src(s, v);
        if (src) {
            t->kind = ST_T_SOURCE;
            t->src = src;
            return 0;
        }
        if (ol->nout == ol->cap) {
            int nc = ol->cap ? 2 * ol->cap : 8;
            st_tensor **n = realloc(ol->outs, sizeof(st_tensor *) * (size_t)nc);
            if (!n)
                return tr_break(s, "out of memory");
            ol->outs = n;
            ol->cap = nc;
        }
        if (s->tmpl_what) {
            /* a side effect's value is replayed as the graph's output: a
             * tensor of a subclass (a Parameter made in the frame) is not */
            st_tensor *raw = st_fe_unwrap(v);
            st_tensor_incref(raw);
            PyObject *probe = st_fe_wrap(raw);
            bool same = probe && Py_TYPE(probe) == Py_TYPE(v);
            Py_XDECREF(probe);
            if (!same)
                return tr_break(s, "%s a new %s (a tensor subclass; not supported)",
                                s->tmpl_what, tr_type_name(v));
        }
        t->kind = ST_T_OUTPUT;
        st_tensor *raw = st_fe_unwrap(v);
        for (int k = 0; k < ol->nout; k++)
            if (ol->outs[k] == raw) {      /* one tensor, one output: identity kept */
                t->index = k;
                return 0;
            }
        t->index = ol->nout;
        ol->outs[ol->nout++] = raw;
        return 0;
    }
    if (tr_is_enum_member(v)) {
        /* an enum member (a Flag's composite too: enum caches it on its
         * class), fixed by the guarded values it came from */
        t->kind = ST_T_CONST;
        t->obj = Py_NewRef(v);
        return 0;
    }
    if (PySlice_Check(v)) {
        /* a slice holding a number argument or a size (x[::n] live at a
         * break): a constant of that value, guarded (it was unguarded: a
         * later n replayed the first) */
        PyObject *p = tr_dyn_plain(s, v, 0);
        if (!p)
            return tr_break_exc(s, "slice");
        t->kind = ST_T_CONST;
        t->obj = p;
        return 0;
    }
    if (tr_is_const_value(v)) {
        t->kind = ST_T_CONST;
        t->obj = Py_NewRef(v);
        return 0;
    }
    PyObject *items = NULL;
    if (depth > 32)
        return tr_break(s, "returns a structure nested too deep (or containing itself)");
    /* a list, dict, tuple (a namedtuple) or user object made in the frame:
     * one object however often the results and stored values reach it
     * (a tuple stored in d['t'] and returned is d['t']) */
    bool exc = tr_exc_rebuildable(s, v);
    bool shareable = PyList_CheckExact(v) || PyDict_CheckExact(v) || PyTuple_Check(v) ||
                     tr_fresh_user_obj(s, v) || exc;
    if (shareable) {
        int sh = share_node(s, v, t);
        if (sh != 0)
            return sh < 0 ? -1 : 0;
    }
    if (PyCell_Check(v) || (PyFunction_Check(v) && tr_is_fresh(s, v)))
        return tmpl_closure_part(s, v, ol, t, depth);
    if (PyTuple_Check(v)) {
        t->kind = ST_T_TUPLE;
        t->obj = Py_NewRef((PyObject *)Py_TYPE(v));
        items = Py_NewRef(v);
    } else if (PyList_CheckExact(v)) {
        t->kind = ST_T_LIST;
        items = PyList_AsTuple(v);
    } else if (PyDict_CheckExact(v)) {
        t->kind = ST_T_DICT;
        t->obj = PyTuple_New(PyDict_GET_SIZE(v));
        items = PyTuple_New(PyDict_GET_SIZE(v));
        Py_ssize_t pos = 0, k = 0;
        PyObject *key, *val;
        while (t->obj && items && PyDict_Next(v, &pos, &key, &val)) {
            PyTuple_SET_ITEM(t->obj, k, Py_NewRef(key));
            PyTuple_SET_ITEM(items, k, Py_NewRef(val));
            k++;
        }
    } else if (tr_fresh_user_obj(s, v)) {
        /* an instance of a plain user class made in the frame (tr_objects.c):
         * rebuilt on every call */
        t->kind = ST_T_OBJECT;
        if (tr_obj_tmpl_parts(v, &t->obj, &items) < 0)
            return tr_break_exc(s, "user object");
    } else if (exc) {
        /* an exception made in the frame (caught, returned or stored):
         * rebuilt on every call with its type, args and attributes */
        t->kind = ST_T_OBJECT;
        if (tr_exc_tmpl_parts(v, &t->obj, &items) < 0)
            return tr_break_exc(s, "exception");
    } else if (s->tmpl_live && (PyMethod_Check(v) ||
                                (PyCFunction_Check(v) && PyCFunction_GET_SELF(v) &&
                                 !PyModule_Check(PyCFunction_GET_SELF(v))))) {
        /* a bound method on the stack (x.item, self.helper): rebuilt from
         * its object on every call */
        bool py = PyMethod_Check(v);
        PyObject *fn = py ? PyMethod_GET_FUNCTION(v) : NULL;
        if (py && tr_is_fresh(s, fn))
            return tr_break(s, "a method of a function made in the frame is live at the break");
        t->kind = ST_T_METHOD;
        t->obj = py ? Py_NewRef(fn)
                    : PyUnicode_FromString(((PyCFunctionObject *)v)->m_ml->ml_name);
        t->items = calloc(2, sizeof(st_fe_tmpl *));
        if (!t->obj || !t->items)
            return tr_break_exc(s, "method");
        t->n = 1;
        return tmpl_of(s, py ? PyMethod_GET_SELF(v) : PyCFunction_GET_SELF(v), ol,
                       &t->items[0], depth + 1);
    } else if (s->tmpl_live && !tr_is_fresh(s, v) &&
               (PyFunction_Check(v) || PyCFunction_Check(v) || PyType_Check(v) ||
                PyModule_Check(v) || Py_IS_TYPE(v, &PyMethodDescr_Type) ||
                Py_IS_TYPE(v, &PyWrapperDescr_Type))) {
        /* a function or class found through guarded objects (a method of
         * a guarded type, a builtin): the same object on every call */
        t->kind = ST_T_CONST;
        t->obj = Py_NewRef(v);
        return 0;
    } else {
        return tr_break(s, "%s a %s", s->tmpl_what ? s->tmpl_what : "returns",
                        tr_type_name(v));
    }
    if (!items || (t->kind == ST_T_DICT && !t->obj))
        return tr_break_exc(s, "return");
    int n = (int)PyTuple_GET_SIZE(items);
    t->items = calloc((size_t)n + 1, sizeof(st_fe_tmpl *));
    if (!t->items) {
        Py_DECREF(items);
        return tr_break(s, "out of memory");
    }
    t->n = n;
    for (int i = 0; i < n; i++)
        if (tmpl_of(s, PyTuple_GET_ITEM(items, i), ol, &t->items[i], depth + 1) < 0) {
            Py_DECREF(items);
            return -1;
        }
    Py_DECREF(items);
    return shareable ? share_done(s, v) : 0;
}

/* Defaults that are constants (None, a tuple or dict of constants). */
static bool const_defaults(PyObject *d)
{
    if (d == Py_None)
        return true;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    if (PyDict_CheckExact(d)) {
        while (PyDict_Next(d, &pos, &k, &v))
            if (!tr_is_const_value(v))
                return false;
        return true;
    }
    for (Py_ssize_t i = 0; PyTuple_CheckExact(d) && i < PyTuple_GET_SIZE(d); i++)
        if (!tr_is_const_value(PyTuple_GET_ITEM(d, i)))
            return false;
    return PyTuple_CheckExact(d);
}

/* A cell, or a function made in the frame (st_fe_tmpl ST_T_CELL,
 * ST_T_FREECELL, ST_T_FUNCTION): one object however often the templates
 * meet it, made anew on every call. It is shared before its parts are
 * made, so that a recursive inner function (its closure holds a cell that
 * holds it) is rebuilt as one. */
static int tmpl_closure_part(tr_state *s, PyObject *v, outlist *ol, st_fe_tmpl *t, int depth)
{
    PyObject *clo = s->f->closure;
    if (PyCell_Check(v) && !tr_is_fresh(s, v)) {
        for (Py_ssize_t i = 0; clo && PyTuple_Check(clo) && i < PyTuple_GET_SIZE(clo); i++)
            if (PyTuple_GET_ITEM(clo, i) == v) {
                t->kind = ST_T_FREECELL;     /* the frame's own: itself */
                t->index = (int)i;
                return 0;
            }
        return tr_break(s, "%s a cell from outside the frame",
                        s->tmpl_what ? s->tmpl_what : "returns");
    }
    int sh = share_node(s, v, t);
    if (sh != 0)
        return sh < 0 ? -1 : 0;
    if (share_done(s, v) < 0)
        return -1;
    PyObject *parts[3] = {NULL, NULL, NULL};
    int n = 0;
    if (PyCell_Check(v)) {
        t->kind = ST_T_CELL;
        parts[0] = PyCell_GET(v);
        n = parts[0] ? 1 : 0;
    } else {
        PyFunctionObject *fn = (PyFunctionObject *)v;
        PyObject *d = fn->func_dict;
        if (!(((PyCodeObject *)fn->func_code)->co_flags & CO_NEWLOCALS))
            /* a class body: the class it makes would be new on every call,
             * and what reads it after the break is guarded on its identity */
            return tr_break(s, "%s a class body (a class defined in the frame)",
                            s->tmpl_what ? s->tmpl_what : "returns");
        if ((d && PyDict_GET_SIZE(d)) ||
            PyUnicode_Compare(fn->func_name, ((PyCodeObject *)fn->func_code)->co_name) ||
            fn->func_doc != (PyTuple_GET_SIZE(((PyCodeObject *)fn->func_code)->co_consts) &&
                             PyUnicode_Check(PyTuple_GET_ITEM(((PyCodeObject *)fn->func_code)->co_consts, 0))
                             ? PyTuple_GET_ITEM(((PyCodeObject *)fn->func_code)->co_consts, 0) : Py_None))
            return tr_break(s, "%s a function made in the frame with attributes set on it",
                            s->tmpl_what ? s->tmpl_what : "returns");
        t->kind = ST_T_FUNCTION;
        t->obj = Py_BuildValue("(OOOO)", fn->func_code, fn->func_globals, fn->func_qualname,
                               fn->func_annotations ? fn->func_annotations : Py_None);
        if (!t->obj)
            return tr_break_exc(s, "function");
        parts[0] = fn->func_defaults ? fn->func_defaults : Py_None;
        parts[1] = fn->func_kwdefaults ? fn->func_kwdefaults : Py_None;
        parts[2] = fn->func_closure ? fn->func_closure : Py_None;
        n = 3;
    }
    t->items = calloc((size_t)n + 1, sizeof(st_fe_tmpl *));
    if (!t->items)
        return tr_break(s, "out of memory");
    t->n = n;
    for (int i = 0; i < n; i++) {
        if (i < 2 && t->kind == ST_T_FUNCTION && const_defaults(parts[i])) {
            /* constant defaults: the same object on every call, as a
             * resume function that calls it guards __defaults__ by identity */
            if (!(t->items[i] = calloc(1, sizeof(st_fe_tmpl))))
                return tr_break(s, "out of memory");
            t->items[i]->kind = ST_T_CONST;
            t->items[i]->obj = Py_NewRef(parts[i]);
            continue;
        }
        if (tmpl_of(s, parts[i], ol, &t->items[i], depth + 1) < 0)
            return -1;
    }
    return 0;
}

/* A graph output that is just a graph input (a captured tensor returned
 * as is) is returned from its source or as the constant, not computed. */
static int outputs_from_inputs(st_fe_tmpl *t, const st_graph *g, st_fe_entry *e)
{
    if (t->kind == ST_T_OUTPUT) {
        int vid = g->outputs[t->index];
        for (int j = 0; j < g->ninputs && j < e->ninputs; j++) {
            if (g->inputs[j] != vid)
                continue;
            if (e->input_src[j]) {
                t->kind = ST_T_SOURCE;
                t->src = e->input_src[j];
            } else {
                t->kind = ST_T_CONST;
                t->obj = Py_NewRef(e->input_const[j]);
            }
            break;
        }
    }
    int n = 0;
    for (int i = 0; i < t->n; i++)
        n += outputs_from_inputs(t->items[i], g, e);
    return n + (t->kind == ST_T_OUTPUT);
}

/* The backend of a graph: the requested one where its kernels can read the
 * inputs, else the one of the inputs' device (a compile for the GPU keeps
 * CPU code on the CPU backend, and the reverse); NULL when tensors of
 * several dimensions sit on different devices (0-d CPU tensors may join a
 * GPU graph, as in eager). */
static const char *graph_backend(const char *req, st_tensor **ins, int nin)
{
    bool cuda = false, cpu = false;
    for (int k = 0; k < nin; k++) {
        const st_device *d = st_tensor_device(ins[k]);
        if (d->type == ST_DEV_CPU)
            cpu |= ins[k]->ndim > 0;
        else
            cuda = true;
    }
    if (cuda && cpu)
        return NULL;
    if (!strcmp(req, "eager"))
        return req;
    if (cuda)
        return "nvrtc";
    if (!strcmp(req, "nvrtc"))
        return st_backend_get("llvm") ? "llvm" : "interp";
    return req;
}

/* The side-effect log as the entry's records: each value a template
 * (tensors made by the graph become graph outputs). */
static int effects_of(tr_state *s, st_fe_entry *e, outlist *ol)
{
    if (s->nfx == 0)
        return 0;
    e->effects = calloc((size_t)s->nfx, sizeof(st_fe_effect));
    if (!e->effects)
        return tr_break(s, "out of memory");
    s->tmpl_what = "side effect: stores";
    int rc = 0;
    for (int i = 0; i < s->nfx && rc == 0; i++) {
        tr_fx *r = &s->fx[i];
        st_fe_effect *x = &e->effects[e->neffects++];
        x->kind = r->kind;
        x->target = r->target;
        x->name = Py_XNewRef(r->name);
        if (r->kind == ST_FX_LIST || r->kind == ST_FX_DICT) {
            /* the shadow's final contents, as a plain container */
            PyObject *c = r->kind == ST_FX_LIST ? PyList_GetSlice(r->val, 0, PY_SSIZE_T_MAX)
                                                : PyDict_Copy(r->val);
            rc = c ? tmpl_of(s, c, ol, &x->val, 0) : tr_break_exc(s, "side effect");
            Py_XDECREF(c);
        } else if (r->kind == ST_FX_CALL) {
            /* (fn, args, kwargs): a method or function of guarded objects,
             * rebuilt from them as a value live at a break is */
            bool live = s->tmpl_live;
            s->tmpl_live = true;
            rc = tmpl_of(s, r->val, ol, &x->val, 0);
            s->tmpl_live = live;
        } else {
            rc = tmpl_of(s, r->val, ol, &x->val, 0);
        }
    }
    s->tmpl_what = NULL;
    return rc;
}

static st_fe_entry *finish(tr_state *s)
{
    st_fe_entry *e = calloc(1, sizeof *e);
    outlist ol = {0};
    st_tensor **ins = NULL;
    int nin = 0, *wb_in = NULL, nwb = 0;
    int *wb_out = NULL;
    bool *rg = NULL, *rg0 = NULL, *wb_quiet = NULL;
    int *smap = NULL, nsmap = 0;
    if (!e) {
        tr_break(s, "out of memory");
        return NULL;
    }
    PyDict_Clear(s->live_seen);
    s->nshare = 0;
    if (tmpl_of(s, s->retval, &ol, &e->ret, 0) < 0)
        goto fail;
    if (effects_of(s, e, &ol) < 0)
        goto fail;
    e->nshare = s->nshare;
    if (s->dyn && tr_dyn_validate(s) < 0)
        goto fail;      /* the trace is aborted: inputs written in place are restored */
    if (tr_dyn_shapes(s))
        st_rt_trace_symbolic();
    /* inputs need gradients where some op ran with grad on: the mode at the
     * end is the caller's again (with enable_grad() inside a frame called
     * under no_grad, it is off), and ops under no_grad are stop-gradient
     * regions of the graph */
    bool gm = st_rt_trace_grad_seen() || st_ad_grad_enabled();
    bool want_smap = s->dyn || s->nckpt > 0;
    st_graph *g = st_rt_trace_end3(ol.outs, ol.nout, &ins, &nin, &wb_in, &nwb,
                                   want_smap ? &smap : NULL, want_smap ? &nsmap : NULL, &rg0,
                                   &wb_quiet);
    if (!g) {
        const char *m = st_err_msg();
        tr_break(s, "%s%s", strncmp(m, "trace failed: ", 14) ? "trace failed: " : "", m);
        goto fail_ended;
    }
    if (s->nckpt > 0 && tr_checkpoint_apply(s, g, smap, nsmap) < 0) {
        tr_break(s, "checkpoint: %s", st_err_msg());
        st_ir_graph_free(g);
        goto fail_ended;
    }
    e->nops = g->nstmts;
    char *txt = st_ir_print(g);
    e->graph_str = PyUnicode_FromString(txt ? txt : "");
    free(txt);
    if (!e->graph_str) {
        st_ir_graph_free(g);
        tr_break_exc(s, "graph print");
        goto fail_ended;
    }
    e->ninputs = nin;
    e->noutputs = ol.nout;
    e->input_src = calloc((size_t)nin + 1, sizeof(st_fe_src *));
    e->input_const = calloc((size_t)nin + 1, sizeof(PyObject *));
    rg = calloc((size_t)nin + 1, sizeof(bool));
    wb_out = calloc((size_t)nwb + 1, sizeof(int));
    if (!e->input_src || !e->input_const || !rg || !wb_out) {
        st_ir_graph_free(g);
        tr_break(s, "out of memory");
        goto fail_ended;
    }
    for (int k = 0; k < nin; k++) {
        PyObject *key = tr_id_key(ins[k]);
        PyObject *m = key ? PyDict_GetItem(s->srcmap, key) : NULL;
        Py_XDECREF(key);
        if (m) {
            long id = PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
            e->input_src[k] = s->srcs.v[id];
        } else {
            st_tensor_incref(ins[k]);
            e->input_const[k] = st_fe_wrap(ins[k]);
            if (!e->input_const[k]) {
                st_ir_graph_free(g);
                tr_break_exc(s, "constant");
                goto fail_ended;
            }
        }
        /* as it was when the trace first read it: v = x * 2 before
         * x.div_(w) needs no gradient, though x does after */
        rg[k] = gm && (rg0 ? rg0[k] : ins[k]->requires_grad);
    }
    for (int k = 0; k < nwb; k++)
        wb_out[k] = ol.nout + k;
    int computed = outputs_from_inputs(e->ret, g, e);
    for (int k = 0; k < e->neffects; k++)
        computed += outputs_from_inputs(e->effects[k].val, g, e);
    if (g->nstmts > 0 || nwb > 0 || computed > 0) {
        const char *bname = graph_backend(s->opts->backend ? s->opts->backend : "interp",
                                          ins, nin);
        if (!bname) {
            st_ir_graph_free(g);
            tr_break(s, "the graph's inputs are on more than one device");
            goto fail_ended;
        }
        st_rt_cfn_opts o = {
            .backend = bname,
            .input_requires_grad = rg, .writeback_out = wb_out,
            .writeback_in = wb_in, .writeback_quiet = wb_quiet, .nwriteback = nwb,
            .nvisible = ol.nout,
            .grad_inside = gm && !s->guards.grad_mode,
        };
        if (s->dyn && tr_dyn_finish(s, e, g, ins, nin, smap, nsmap, &o) < 0) {
            st_ir_graph_free(g);
            goto fail_ended;
        }
        e->cfn = st_rt_cfn_new(g, &o);
        if (!e->cfn) {
            tr_break(s, "compiling the graph failed: %s", st_err_msg());
            goto fail_ended;
        }
        if (e->dyn)
            tr_dyn_adopt(e, e->cfn);
    } else {
        st_ir_graph_free(g);
    }
    goto done;
fail:
    st_rt_trace_abort();
fail_ended:
    e->srcs.v = NULL;
    e->srcs.n = 0;
    st_fe_entry_free(e);
    e = NULL;
done:
    for (int k = 0; k < nin; k++)
        st_tensor_decref(ins[k]);
    free(ins);
    free(wb_in);
    free(wb_out);
    free(wb_quiet);
    free(rg);
    free(rg0);
    free(ol.outs);
    free(smap);
    return e;
}

/* ---------------- partial graphs ---------------- */
/* A resume function's arguments and closure cells that hold user
 * functions: those made in the frame before the break are made anew on
 * every call (ST_T_FUNCTION), so they are guarded by their type, and where
 * they are called by their code, defaults and cell contents (guard_fn_parts,
 * COPY_FREE_VARS), not by their identity. */
static bool code_within(PyCodeObject *outer, PyObject *code, int depth)
{
    PyObject *cs = outer->co_consts;
    for (Py_ssize_t i = 0; depth < 8 && i < PyTuple_GET_SIZE(cs); i++) {
        PyObject *c = PyTuple_GET_ITEM(cs, i);
        if (c == code || (PyCode_Check(c) && code_within((PyCodeObject *)c, code, depth + 1)))
            return true;
    }
    return false;
}

static void resume_fn_guards(tr_state *s)
{
    if (!st_fe_is_resume_code(s->f->code))
        return;
    for (int g = 0; g < s->guards.n; g++) {
        st_fe_guard *gd = &s->guards.v[g];
        /* only functions whose code the frame's own code defines */
        if (gd->kind == ST_G_ID && gd->obj && PyFunction_Check(gd->obj) &&
            tr_fn_origin(gd->obj) == 0 &&
            (gd->src->kind == ST_SRC_LOCAL || gd->src->kind == ST_SRC_CLOSURE) &&
            code_within(s->f->code, PyFunction_GET_CODE(gd->obj), 0)) {
            gd->kind = ST_G_TYPE;
            Py_SETREF(gd->obj, Py_NewRef((PyObject *)&PyFunction_Type));
        }
    }
}

/* The values a partial graph hands to its break function, read from the
 * root frame stopped before the breaking group: the consumed stack items,
 * the items below them, the live locals (see st_fe_break_function). */
static int live_values(tr_state *s, tr_frame *fr, const st_fe_brkpt *bp,
                       PyObject **tuple, PyObject **fn)
{
    int nstack = fr->sp, nloc = bp->nlocals, rc = -1;
    if (nstack < bp->npop)
        return tr_break(s, "the stack holds fewer values than the breaking instruction takes");
    bool *null = calloc((size_t)nstack + 1, sizeof(bool));
    uint8_t *lstate = calloc((size_t)nloc + 1, 1);
    PyObject *vals = PyList_New(0);
    if (!null || !lstate || !vals) {
        tr_break(s, "out of memory");
        goto out;
    }
    int below = nstack - bp->npop;
    for (int k = below; k < nstack && bp->kind == ST_BRK_SIMPLE; k++) {
        /* calls that read the calling frame itself cannot run in a break
         * function's frame: locals(), and vars()/dir()/super() without
         * arguments, eval/exec without their namespaces */
        PyObject *o = fr->stack[k].v;
        int nargs = bp->npop - 2;
        const char *nm = NULL;
        if (o && PyCFunction_Check(o) && PyCFunction_GET_SELF(o) && PyModule_Check(PyCFunction_GET_SELF(o))) {
            const char *mn = PyModule_GetName(PyCFunction_GET_SELF(o));
            if (mn && !strcmp(mn, "builtins"))
                nm = ((PyCFunctionObject *)o)->m_ml->ml_name;
            PyErr_Clear();
        }
        bool frame_reader = (o == (PyObject *)&PySuper_Type && nargs == 0) ||
                            (nm && (!strcmp(nm, "locals") ||
                                    ((!strcmp(nm, "vars") || !strcmp(nm, "dir")) && nargs == 0) ||
                                    ((!strcmp(nm, "eval") || !strcmp(nm, "exec")) && nargs < 2)));
        if (frame_reader) {
            tr_break(s, "the breaking call reads the frame itself (locals(), vars(), dir(), "
                     "eval/exec without namespaces, super())");
            goto out;
        }
    }
    for (int pass = 0; pass < 2; pass++)
        for (int k = pass ? 0 : below; k < (pass ? below : nstack); k++) {
            tr_var *v = &fr->stack[k];
            if (v->it || v->aux != TR_AUX_NONE) {
                tr_break(s, "an iterator or context manager is on the stack at the graph break");
                goto out;
            }
            if (!v->v)
                null[k] = true;
            else if (PyList_Append(vals, v->v) < 0) {
                tr_break_exc(s, "live values");
                goto out;
            }
        }
    for (int i = 0; i < nloc && i < fr->nlocals; i++) {
        if (!bp->live[i])
            continue;
        tr_var *l = &fr->locals[i];
        if (l->it || l->aux != TR_AUX_NONE) {
            tr_break(s, "local '%s' holds an iterator or context manager at the graph break",
                     PyUnicode_AsUTF8(tr_local_name(fr->code, i)));
            goto out;
        }
        lstate[i] = l->v ? 1 : 2;
        if (l->v && PyList_Append(vals, l->v) < 0) {
            tr_break_exc(s, "live values");
            goto out;
        }
    }
    int ncell = st_fe_cell_slots(fr->code, NULL);
    if (ncell > 0) {
        /* the resume closure: the frame's cells (rebuilt by the entry on
         * every call: new cells, the same one wherever a closure made in
         * the frame shares it), then the frame's own closure */
        int nfree = fr->code->co_nfreevars, *cells = calloc((size_t)ncell, sizeof(int));
        PyObject *clo = cells ? PyTuple_New(ncell + nfree) : NULL;
        if (!clo) {
            free(cells);
            tr_break(s, "out of memory");
            goto out;
        }
        st_fe_cell_slots(fr->code, cells);
        for (int p = 0; p < ncell + nfree; p++) {
            int slot = p < ncell ? cells[p] : fr->code->co_nlocalsplus - nfree + (p - ncell);
            PyObject *c = slot < fr->nlocals ? fr->locals[slot].v : NULL;
            if (!c || !PyCell_Check(c)) {
                free(cells);
                Py_DECREF(clo);
                tr_break(s, "a cell variable holds no cell at the graph break");
                goto out;
            }
            PyTuple_SET_ITEM(clo, p, Py_NewRef(c));
        }
        free(cells);
        int r = PyList_Append(vals, clo);
        Py_DECREF(clo);
        if (r < 0) {
            tr_break_exc(s, "live values");
            goto out;
        }
    }
    *fn = st_fe_break_function(fr->code, fr->globals, s->f->closure, bp, nstack, null, lstate);
    if (!*fn) {
        tr_break_exc(s, "making the resume functions");
        goto out;
    }
    *tuple = PyList_AsTuple(vals);
    if (!*tuple) {
        Py_CLEAR(*fn);
        tr_break_exc(s, "live values");
        goto out;
    }
    rc = 0;
out:
    free(null);
    free(lstate);
    Py_XDECREF(vals);
    return rc;
}

/* An argument that is a method bound to a tensor (a resume function's
 * stack item: (x * 2).add on the stack while y.sum().item() broke): its
 * tensor is read through L['a'].__self__ (a graph input, guarded as a
 * tensor) and the method by its name (a builtin's) or function (a Python
 * method's), not by the bound method's identity, which is new each call.
 * 1 done (out set), 0 not such an argument, -1 break. */
static int bound_method_arg(tr_state *s, tr_var *out, PyObject *v, st_fe_src *src)
{
    bool py = PyMethod_Check(v);
    PyObject *self = py ? PyMethod_GET_SELF(v)
                        : (PyCFunction_Check(v) ? PyCFunction_GET_SELF(v) : NULL);
    /* a list's, dict's or set's builtin method too (lst.append on the stack
     * while lst.append(t.item()) broke): its container gets a source, so
     * that the call's mutation is replayed on it, not on a copy */
    bool container = self && !py && (PyList_CheckExact(self) || PyDict_CheckExact(self) ||
                                     PyAnySet_CheckExact(self));
    if (!self || (!st_fe_is_tensor(self) && !container))
        return 0;
    PyObject *sn = PyUnicode_FromString("__self__");
    PyObject *mn = PyUnicode_FromString(py ? "__func__" : "__name__");
    st_fe_src *ss = sn ? st_fe_src_attr(&s->srcs, src, sn) : NULL;
    st_fe_src *ms = mn ? st_fe_src_attr(&s->srcs, src, mn) : NULL;
    Py_XDECREF(sn);
    Py_XDECREF(mn);
    if (!ss || !ms)
        return tr_break_exc(s, "source");
    PyObject *which = py ? Py_NewRef(PyMethod_GET_FUNCTION(v))
                         : PyUnicode_FromString(((PyCFunctionObject *)v)->m_ml->ml_name);
    int rc = which ? st_fe_guard_add(&s->guards, ST_G_TYPE, src, (PyObject *)Py_TYPE(v)) : -1;
    if (rc == 0)
        rc = st_fe_guard_add(&s->guards, py ? ST_G_ID : ST_G_EQ, ms, which);
    Py_XDECREF(which);
    if (rc < 0)
        return tr_break_exc(s, "guard");
    tr_var tv;
    if (tr_make_sourced(s, &tv, Py_NewRef(self), ss) < 0)
        return -1;
    tr_var_clear(&tv);
    memset(out, 0, sizeof *out);
    out->v = Py_NewRef(v);
    out->src = src;
    return 1;
}

typedef struct {
    int root_at, depth;
    int barrier_at;          /* root instruction of the first call made after the
                                graph that bars what follows (tr_effects.c), or -1 */
    bool barrier_call;       /* ... broken by a call: end the graph before it first */
    int weak_at;             /* root instruction of a zero_grad() made after the graph */
    bool resumable;          /* broke, not fatally, at a known root instruction */
    bool dyn_retry;          /* dynamic shapes could not express the frame */
    bool raised;             /* the break: a call the code makes raised (an error
                                the caller gets, not something not supported) */
} tr_outcome;

/* ---------------- st_fe_translate ---------------- */
/* One translation; bp: stop before bp->start in the root frame and make a
 * partial graph (result: the break function's arguments); pin: the numbers
 * the breaking instruction takes are guarded to their values there (it
 * raised with them: see pin_consumed). */
static void restore_pymodes(PyObject *snap)
{
    if (!snap)
        return;
    st_py_exc exc;
    st_py_err_save(&exc);
    PyObject *r = PyObject_CallOneArg(tr_refs.mode_restore, snap);
    Py_XDECREF(r);
    PyErr_Clear();
    st_py_err_restore(&exc);
}

/* A partial graph that stops before a call that raised: the numbers the
 * call takes (int arguments, sizes, lazy or symbolic, also inside tuples
 * and lists) guarded to their values, and with dynamic shapes the sizes of
 * the tensors it takes (its self, its arguments). Otherwise the entry, which guards
 * nothing about them, would take every later call, even those with values
 * for which the call succeeds: they would all run split at the break (two
 * graphs and a Python call between them) instead of the whole-frame graph. */
static int pin_tensors(tr_state *s, PyObject *o)
{
    if (!o)
        return 0;
    if (PyCFunction_Check(o) && PyCFunction_GET_SELF(o))   /* x.view: x */
        return tr_dyn_pin_tensor(s, PyCFunction_GET_SELF(o));
    if (PyMethod_Check(o))
        return tr_dyn_pin_tensor(s, PyMethod_GET_SELF(o));
    if (PyTuple_Check(o) || PyList_Check(o)) {   /* one level: cat's list */
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (tr_dyn_pin_tensor(s, PySequence_Fast_GET_ITEM(o, i)) < 0)
                return -1;
        return 0;
    }
    return tr_dyn_pin_tensor(s, o);
}

static int pin_consumed(tr_state *s, tr_frame *fr, const st_fe_brkpt *bp)
{
    for (int k = fr->sp - bp->npop; k < fr->sp; k++)
        if (k >= 0 && (pin_tensors(s, fr->stack[k].v) < 0 || tr_dyn_plain_var(s, &fr->stack[k]) < 0))
            return -1;
    return 0;
}

static st_fe_entry *translate_once(const st_fe_frame *f, const st_fe_options *opts,
                                   PyObject **result, st_fe_break *brk,
                                   const st_fe_brkpt *bp, bool pin, tr_outcome *oc)
{
    *result = NULL;
    brk->reason[0] = 0;
    Py_CLEAR(brk->filename);
    brk->lineno = 0;
    if (tr_exec_init() < 0)
        return NULL;
    tr_state st;
    memset(&st, 0, sizeof st);
    tr_state *s = &st;
    s->f = f;
    s->opts = opts;
    s->brk = brk;
    s->stop_at = bp ? bp->start : -1;
    s->root_at = -1;
    oc->root_at = -1;
    oc->depth = 0;
    oc->barrier_at = -1;
    oc->barrier_call = false;
    oc->weak_at = -1;
    oc->resumable = false;
    oc->dyn_retry = false;
    oc->raised = false;
    st_fe_srctab_init(&s->srcs);
    st_fe_guardset_init(&s->guards);
    s->srcmap = PyDict_New();
    s->fresh = PyDict_New();
    s->cellmap = PyDict_New();
    s->live_seen = PyDict_New();
    uint64_t seed = 0, off = 0;
    st_rt_rng_get_state(&seed, &off);
    bool grad = st_ad_grad_enabled();
    uint32_t autocast = st_rt_autocast_state();
    /* the Python side of the modes a with block may enter while tracing
     * (inference_mode's depth): put back if the translation stops inside */
    PyObject *pymodes = PyObject_CallNoArgs(tr_refs.mode_snapshot);
    if (!pymodes)
        PyErr_Clear();
    s->guards.grad_mode = grad;
    s->guards.autocast = autocast;
    s->guards.module_epoch = st_fe_module_epoch;
    s->guards.meta_epoch = st_fe_meta_epoch;
    st_fe_entry *e = NULL;
    tr_frame *fr = NULL;
    bool tracing = false;
    if (!s->srcmap || !s->fresh || !s->cellmap || !s->live_seen)
        goto error;
    if (st_rt_trace_begin() != ST_OK) {
        st_fe_raise();
        goto error;
    }
    tracing = true;
    tr_state *prevcur = NULL;
    tr_dyn_enter(s, &prevcur);
    if (tr_dyn_begin(s, opts->dynamic) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto error;
    }
    fr = frame_new(s, f->code, f->func, f->globals, f->builtins);
    if (!fr)
        goto error;
    s->top = fr;
    {
        int nargs = f->code->co_argcount + f->code->co_kwonlyargcount +
                    !!(f->code->co_flags & CO_VARARGS) + !!(f->code->co_flags & CO_VARKEYWORDS);
        for (int i = 0; i < f->nlocals && i < fr->nlocals; i++) {
            if (!f->locals[i])
                continue;
            if (i < nargs) {
                st_fe_src *src = st_fe_src_local(&s->srcs, i, tr_local_name(f->code, i));
                if (!src)
                    goto error;
                PyObject *lz = tr_lazy_make(s, f->locals[i], src);
                if (lz) {
                    /* a number: guarded only if its value is used */
                    fr->locals[i].v = lz;
                    fr->locals[i].src = src;
                    continue;
                }
                int bm = bound_method_arg(s, &fr->locals[i], f->locals[i], src);
                if (bm < 0)
                    goto broke;
                if (bm)
                    continue;
                if (tr_make_sourced(s, &fr->locals[i], Py_NewRef(f->locals[i]), src) < 0)
                    goto broke;
            } else {
                tr_make_value(s, &fr->locals[i], Py_NewRef(f->locals[i]));
            }
        }
    }
    if (f->code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) {
        tr_break(s, "generators and coroutines are not supported");
        goto broke;
    }
    tr_var ret = {0};
    int run = tr_run_frame(s, fr, &ret);
    PyObject *brk_fn = NULL;
    if (run == -2 && bp && s->stopped) {
        /* stopped before the breaking instruction: the graph so far, and
         * what the break function needs */
        if (st_ad_grad_enabled() != grad) {
            tr_break(s, "the grad mode changed before the break (not supported)");
            goto broke;
        }
        if (st_rt_autocast_state() != autocast) {
            tr_break(s, "the autocast state changed before the break (not supported)");
            goto broke;
        }
        PyObject *live = NULL;
        if (pin && pin_consumed(s, fr, bp) < 0)
            goto broke;
        if (live_values(s, fr, bp, &live, &brk_fn) < 0)
            goto broke;
        s->retval = live;
        s->tmpl_live = true;
        s->tmpl_what = "at the graph break, a live value is";
        e = finish(s);
        s->tmpl_live = false;
        s->tmpl_what = NULL;
        tracing = false;
        if (!e) {
            Py_DECREF(brk_fn);
            goto broke_ended;
        }
        e->brk_fn = brk_fn;
        goto finished;
    }
    if (run < 0)
        goto broke;
    if (tr_gen_check_closed(s) < 0) {
        tr_var_clear(&ret);
        goto broke;
    }
    if (ret.it || ret.aux == TR_AUX_SUPER) {
        tr_var_clear(&ret);
        tr_break(s, "returns an iterator");
        goto broke;
    }
    if (st_ad_grad_enabled() != grad) {
        /* set_grad_enabled(m) as a call: global state an entry cannot replay */
        tr_var_clear(&ret);
        tr_break(s, "side effect: the frame changes the grad mode (not supported yet)");
        s->no_resume = true;
        goto broke;
    }
    if (st_rt_autocast_state() != autocast) {
        tr_var_clear(&ret);
        tr_break(s, "side effect: the frame changes the autocast state (not supported yet)");
        s->no_resume = true;
        goto broke;
    }
    s->retval = ret.v;
    ret.v = NULL;
    tr_var_clear(&ret);
    e = finish(s);
    tracing = false;
    if (!e)
        goto broke_ended;
finished:
    if (s->nfx > 0) {
        /* this call's side effects, performed once, in order; the result
         * names the originals of shadowed lists/dicts (tr_fx_apply) */
        if (tr_fx_apply(s) < 0) {
            st_fe_entry_free(e);
            e = NULL;
            goto error;
        }
    }
    {
        /* the first call's values: plain numbers, not the translation's
         * SymInts and lazy arguments */
        PyObject *p = tr_fx_plain(s->retval, NULL);
        if (!p) {
            st_fe_entry_free(e);
            e = NULL;
            goto error;
        }
        Py_SETREF(s->retval, p);
    }
    resume_fn_guards(s);
    /* the entry owns the sources and guards from here */
    e->srcs = s->srcs;
    e->guards = s->guards;
    st_fe_srctab_init(&s->srcs);
    st_fe_guardset_init(&s->guards);
    if (opts->log_level >= 2) {
        fprintf(stderr, "[symtrace] translated %s (%s:%d)\n%s\n",
                PyUnicode_AsUTF8(f->code->co_qualname),
                PyUnicode_AsUTF8(f->code->co_filename), f->code->co_firstlineno,
                e->graph_str ? PyUnicode_AsUTF8(e->graph_str) : "");
        for (int k = 0; k < e->neffects; k++) {
            static const char *const kn[] = {"setattr", "global store", "list contents",
                                             "dict contents", "call"};
            PyObject *tr = e->effects[k].target ? st_fe_src_repr(e->effects[k].target) : NULL;
            fprintf(stderr, "[symtrace]   side effect %d: %s %s%s%s\n", k + 1,
                    kn[e->effects[k].kind], tr ? PyUnicode_AsUTF8(tr) : "G",
                    e->effects[k].name ? "." : "",
                    e->effects[k].name ? PyUnicode_AsUTF8(e->effects[k].name) : "");
            Py_XDECREF(tr);
            PyErr_Clear();
        }
        PyObject *d = st_fe_guards_describe(&e->guards);
        Py_ssize_t n = d ? PyList_GET_SIZE(d) : 0;
        for (Py_ssize_t i = 0; i < n; i++)
            fprintf(stderr, "[symtrace]   guard %s\n", PyUnicode_AsUTF8(PyList_GET_ITEM(d, i)));
        Py_XDECREF(d);
        PyErr_Clear();
    }
    *result = s->retval;
    s->retval = NULL;
    goto cleanup;
broke:
    if (tracing)
        st_rt_trace_abort();
broke_ended:
    tracing = false;
    st_rt_rng_set_state(seed, off);
    restore_pymodes(pymodes);
    st_ad_set_grad_enabled(grad);
    st_rt_autocast_swap(autocast);
    if (!s->broke || s->fatal)
        goto error;
    oc->root_at = s->root_at;
    oc->depth = s->brk_depth;
    oc->barrier_at = s->fx_barrier_at - 1;
    oc->barrier_call = s->fx_barrier_call;
    oc->weak_at = s->fx_weak_at - 1;
    oc->dyn_retry = s->dyn && !strncmp(brk->reason, "dynamic shapes", 14);
    oc->raised = !strncmp(brk->reason, "call to ", 8) && strstr(brk->reason, " raised ");
    oc->resumable = !bp && !s->no_resume && !opts->fullgraph && !opts->no_partial &&
                    s->root_at >= 0 && !oc->dyn_retry;
    if (bp || oc->resumable || oc->dyn_retry)
        goto cleanup;     /* st_fe_translate reports it, after trying a partial graph */
    if (opts->log_level >= 1)
        fprintf(stderr, "[symtrace] graph break in %s:%d: %s\n",
                brk->filename ? PyUnicode_AsUTF8(brk->filename) : "?",
                brk->lineno, brk->reason);
    if (opts->fullgraph)
        PyErr_Format(PyExc_RuntimeError, "symtrace: graph break in %U:%d: %s",
                     brk->filename ? brk->filename : Py_None, brk->lineno, brk->reason);
    goto cleanup;
error:
    if (tracing)
        st_rt_trace_abort();
    st_rt_rng_set_state(seed, off);
    restore_pymodes(pymodes);
    st_ad_set_grad_enabled(grad);
    st_rt_autocast_swap(autocast);
    brk->reason[0] = 0;
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "symtrace: translation failed");
cleanup:
    Py_XDECREF(pymodes);
    frame_free(fr);
    s->top = NULL;
    while (s->gens) {          /* none left (their iterators went with the frames) */
        tr_frame *g = s->gens;
        s->gens = g->gnext;
        g->gprev = NULL;
        if (s->gens)
            s->gens->gprev = &s->gens;
    }
    Py_XDECREF(s->retval);
    tr_exc_clear(s);
    tr_fx_clear(s);
    /* drop references to fresh objects and the map before the sources go */
    Py_XDECREF(s->srcmap);
    Py_XDECREF(s->fresh);
    Py_XDECREF(s->cellmap);
    Py_XDECREF(s->live_seen);
    free(s->ckpt);
    tr_dyn_leave(prevcur);
    tr_dyn_end(s);
    st_fe_guardset_clear(&s->guards);
    st_fe_srctab_clear(&s->srcs);
    return e;
}

/* A break inside an inlined call is reported where the frame itself
 * broke, the call's line, with the callee's location in the reason. */
static void at_root(st_fe_break *brk, const st_fe_frame *f, const tr_outcome *oc)
{
    if (oc->root_at < 0)
        return;
    if (oc->depth > 0 || (brk->filename && PyUnicode_Compare(brk->filename, f->code->co_filename))) {
        size_t n = strlen(brk->reason);
        snprintf(brk->reason + n, sizeof brk->reason - n, " (in a call at %s:%d)",
                 brk->filename ? PyUnicode_AsUTF8(brk->filename) : "?", brk->lineno);
        PyErr_Clear();
    }
    Py_XSETREF(brk->filename, Py_NewRef(f->code->co_filename));
    brk->lineno = PyCode_Addr2Line(f->code, oc->root_at * 2);
}

static void log_break(const st_fe_options *opts, const st_fe_break *brk)
{
    if (opts->log_level >= 1)
        fprintf(stderr, "[symtrace] graph break in %s:%d: %s\n",
                brk->filename ? PyUnicode_AsUTF8(brk->filename) : "?", brk->lineno, brk->reason);
}

st_fe_entry *st_fe_translate(const st_fe_frame *f, const st_fe_options *opts,
                             PyObject **result, st_fe_break *brk)
{
    tr_outcome oc;
    st_fe_entry *e = translate_once(f, opts, result, brk, NULL, false, &oc);
    if (!e && oc.dyn_retry && !PyErr_Occurred()) {
        /* what dynamic shapes could not express: translated with static
         * shapes instead (exact sizes guarded) */
        if (opts->log_level >= 1)
            fprintf(stderr, "[symtrace] %s: %s; translating with static shapes\n",
                    PyUnicode_AsUTF8(f->code->co_qualname), brk->reason);
        st_fe_options o2 = *opts;
        o2.dynamic = false;
        st_fe_break_clear(brk);
        return st_fe_translate(f, &o2, result, brk);
    }
    if (e || !oc.resumable || PyErr_Occurred())
        return e;
    /* a graph break: keep the graph before it when the frame can resume
     * after the breaking instruction (TorchDynamo's partial graphs) */
    st_fe_brkpt bp;
    char why[256];
    /* after opt.step() (or zero_grad()) made after the graph, a break
     * where the frame cannot resume, or at a call the resumed frame would
     * inline: the graph ends before that opt.step() instead */
    int alt = oc.barrier_at >= 0 ? oc.barrier_at : oc.weak_at;
    if (alt >= oc.root_at)
        alt = -1;
    int pr = 1;
    if (alt >= 0 && oc.barrier_call && oc.barrier_at >= 0)
        pr = st_fe_resume_plan(f->code, alt, &bp, why, sizeof why);
    if (pr == 0) {
        alt = -2;
    } else {
        if (alt >= 0 && oc.barrier_call && oc.barrier_at >= 0) {
            st_fe_brkpt_clear(&bp);
            PyErr_Clear();
        }
        pr = st_fe_resume_plan(f->code, oc.root_at, &bp, why, sizeof why);
        if (pr != 0 && alt >= 0) {
            st_fe_brkpt_clear(&bp);
            PyErr_Clear();
            pr = st_fe_resume_plan(f->code, alt, &bp, why, sizeof why);
            if (pr == 0)
                alt = -2;
        }
    }
    if (alt == -2) {
        oc.root_at = oc.barrier_at >= 0 ? oc.barrier_at : oc.weak_at;
        oc.depth = 0;
        size_t n = strlen(brk->reason);
        snprintf(brk->reason + n, sizeof brk->reason - n,
                 " (the graph ends before the earlier opt.step()/zero_grad() instead)");
    }
    if (pr != 0) {
        if (pr < 0) {
            snprintf(why, sizeof why, "resume plan failed");
            PyErr_Clear();
        }
        at_root(brk, f, &oc);
        size_t n = strlen(brk->reason);
        snprintf(brk->reason + n, sizeof brk->reason - n, " [no partial graph: %s]", why);
        st_fe_brkpt_clear(&bp);
        log_break(opts, brk);
        return NULL;
    }
    st_fe_break b2 = {.reason = "", .filename = NULL, .lineno = 0};
    tr_outcome oc2;
    e = translate_once(f, opts, result, &b2, &bp, oc.raised, &oc2);
    if (!e && oc2.dyn_retry && !PyErr_Occurred()) {
        /* the partial graph with static shapes instead */
        st_fe_options o2 = *opts;
        o2.dynamic = false;
        st_fe_break_clear(&b2);
        e = translate_once(f, &o2, result, &b2, &bp, oc.raised, &oc2);
    }
    if (!e) {
        if (PyErr_Occurred())
            PyErr_Clear();      /* the frame runs as plain Python instead */
        at_root(brk, f, &oc);
        size_t n = strlen(brk->reason);
        snprintf(brk->reason + n, sizeof brk->reason - n, " [no partial graph: %s]",
                 b2.reason[0] ? b2.reason : "translation failed");
        log_break(opts, brk);
    } else {
        /* reported where the frame broke: the root frame's breaking line */
        at_root(brk, f, &oc);
        if (oc.depth > 0) {
            size_t n = strlen(brk->reason);
            snprintf(brk->reason + n, sizeof brk->reason - n, "; the call runs as its own frame");
        }
        brk->lineno = bp.line;
        if (opts->log_level >= 1)
            fprintf(stderr, "[symtrace] graph break in %s:%d: %s; the graph before it is "
                    "kept, the rest resumes after it\n", PyUnicode_AsUTF8(brk->filename),
                    brk->lineno, brk->reason);
    }
    st_fe_break_clear(&b2);
    st_fe_brkpt_clear(&bp);
    return e;
}

