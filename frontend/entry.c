/* frontend/entry.c - compiled entries: return templates (build, free),
 * running a hit from C (gather the graph inputs by source, run the compiled
 * function, wrap its outputs, build the return value) and freeing entries. */
#include "st_fe_hook.h"
#include <frameobject.h>   /* PyFrame_New: stand-in frames of tracebacks */

#include <stdlib.h>

void st_fe_tmpl_free(st_fe_tmpl *t)
{
    if (!t) return;
    for (int i = 0; i < t->n; i++) st_fe_tmpl_free(t->items[i]);
    free(t->items);
    Py_XDECREF(t->obj);
    free(t);
}

/* Part k of a rebuilt exception: 0 args, 1 __cause__, 2 __context__. */
static int set_exc_part(PyObject *o, int k, PyObject *v)
{
    PyBaseExceptionObject *e = (PyBaseExceptionObject *)o;
    if (k == 0) {
        if (!PyTuple_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "compiled entry: exception args not a tuple");
            return -1;
        }
        Py_XSETREF(e->args, Py_NewRef(v));
    } else if (v != Py_None) {
        if (k == 1)
            Py_XSETREF(e->cause, Py_NewRef(v));
        else
            Py_XSETREF(e->context, Py_NewRef(v));
    }
    return 0;
}

static PyObject *build_node(const st_fe_tmpl *t, PyObject *const *outs,
                            const st_fe_frame *f, PyObject **memo, PyObject **shared);

/* A rebuilt exception's traceback, made anew from its entries (code,
 * globals, tb_lasti, tb_lineno), outermost first, each with a stand-in
 * frame of that code (tr_except.c's tb_push): where it was raised, as
 * Python reports it. */
static int set_exc_traceback(PyObject *o, PyObject *spec)
{
    PyObject *tb = Py_NewRef(Py_None);
    for (Py_ssize_t i = PyTuple_GET_SIZE(spec) - 1; tb && i >= 0; i--) {
        PyObject *e = PyTuple_GET_ITEM(spec, i);
        PyFrameObject *fr = PyFrame_New(PyThreadState_Get(), (PyCodeObject *)PyTuple_GET_ITEM(e, 0),
                                        PyTuple_GET_ITEM(e, 1), NULL);
        PyObject *n = fr ? PyObject_CallFunction((PyObject *)&PyTraceBack_Type, "OOOO", tb,
                                                 (PyObject *)fr, PyTuple_GET_ITEM(e, 2),
                                                 PyTuple_GET_ITEM(e, 3)) : NULL;
        Py_XDECREF(fr);
        Py_SETREF(tb, n);
    }
    if (!tb)
        return -1;
    int r = tb == Py_None ? 0 : PyException_SetTraceback(o, tb);
    Py_DECREF(tb);
    return r;
}

/* A cell or function made in the frame: the empty object is shared before
 * its parts are built, so that a function whose closure holds itself (a
 * recursive inner function) is one object. */
static PyObject *build_shell(const st_fe_tmpl *t, PyObject *const *outs,
                             const st_fe_frame *f, PyObject **memo, PyObject **shared)
{
    PyObject *o;
    if (t->kind == ST_T_CELL) {
        o = PyCell_New(NULL);
    } else {
        PyObject *ann = PyTuple_GET_ITEM(t->obj, 3);
        o = PyFunction_NewWithQualName(PyTuple_GET_ITEM(t->obj, 0), PyTuple_GET_ITEM(t->obj, 1),
                                       PyTuple_GET_ITEM(t->obj, 2));
        if (o && ann != Py_None && PyFunction_SetAnnotations(o, ann) < 0)
            Py_CLEAR(o);
    }
    if (!o)
        return NULL;
    if (t->share > 0 && shared)
        shared[t->share - 1] = Py_NewRef(o);
    for (int i = 0; i < t->n; i++) {
        PyObject *v = st_fe_tmpl_build(t->items[i], outs, f, memo, shared);
        int r = -1;
        if (v && t->kind == ST_T_CELL)
            r = PyCell_Set(o, v);
        else if (v && v == Py_None)
            r = 0;
        else if (v)
            r = i == 0 ? PyFunction_SetDefaults(o, v)
                : i == 1 ? PyFunction_SetKwDefaults(o, v) : PyFunction_SetClosure(o, v);
        Py_XDECREF(v);
        if (r < 0) {
            Py_DECREF(o);
            return NULL;
        }
    }
    return o;
}

PyObject *st_fe_tmpl_build(const st_fe_tmpl *t, PyObject *const *outs,
                           const st_fe_frame *f, PyObject **memo, PyObject **shared)
{
    if (t->kind == ST_T_REF)
        t = t->ref;
    if (t->share > 0 && shared && shared[t->share - 1])
        return Py_NewRef(shared[t->share - 1]);
    if (t->kind == ST_T_CELL || t->kind == ST_T_FUNCTION)
        return build_shell(t, outs, f, memo, shared);
    PyObject *v = build_node(t, outs, f, memo, shared);
    if (v && t->share > 0 && shared)
        shared[t->share - 1] = Py_NewRef(v);
    return v;
}

static PyObject *build_node(const st_fe_tmpl *t, PyObject *const *outs,
                            const st_fe_frame *f, PyObject **memo, PyObject **shared)
{
    switch (t->kind) {
    case ST_T_REF: case ST_T_CELL: case ST_T_FUNCTION: break;   /* st_fe_tmpl_build */
    case ST_T_FREECELL: {
        PyObject *c = f->closure && PyTuple_Check(f->closure) &&
                      t->index < PyTuple_GET_SIZE(f->closure)
                      ? PyTuple_GET_ITEM(f->closure, t->index) : NULL;
        if (!c)
            PyErr_SetString(PyExc_SystemError, "return template names a missing closure cell");
        return Py_XNewRef(c);
    }
    case ST_T_CONST: return Py_NewRef(t->obj);
    case ST_T_OUTPUT:
        if (!outs || !outs[t->index]) {
            PyErr_SetString(PyExc_SystemError, "return template names a missing graph output");
            return NULL;
        }
        return Py_NewRef(outs[t->index]);
    case ST_T_SOURCE: {
        PyObject *v = st_fe_src_eval(t->src, f, memo);
        if (!v && !PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "return template's source is missing");
        return v;
    }
    case ST_T_TUPLE: case ST_T_LIST: {
        PyObject *c = t->kind == ST_T_LIST ? PyList_New(t->n) : PyTuple_New(t->n);
        if (!c) return NULL;
        for (int i = 0; i < t->n; i++) {
            PyObject *v = st_fe_tmpl_build(t->items[i], outs, f, memo, shared);
            if (!v) { Py_DECREF(c); return NULL; }
            if (t->kind == ST_T_LIST) PyList_SET_ITEM(c, i, v);
            else PyTuple_SET_ITEM(c, i, v);
        }
        if (t->kind == ST_T_TUPLE && t->obj && t->obj != (PyObject *)&PyTuple_Type) {
            /* a namedtuple: tuple.__new__(cls, items), as its _make does,
             * without running its Python __new__ */
            PyObject *r = NULL, *a = PyTuple_Pack(1, c);
            if (a && PyType_Check(t->obj) && PyType_IsSubtype((PyTypeObject *)t->obj, &PyTuple_Type))
                r = PyTuple_Type.tp_new((PyTypeObject *)t->obj, a, NULL);
            else if (a)
                r = PyObject_Call(t->obj, c, NULL);
            Py_XDECREF(a);
            Py_DECREF(c);
            return r;
        }
        return c;
    }
    case ST_T_DICT: {
        PyObject *d = PyDict_New();
        if (!d) return NULL;
        for (int i = 0; i < t->n; i++) {
            PyObject *v = st_fe_tmpl_build(t->items[i], outs, f, memo, shared);
            int r = v ? PyDict_SetItem(d, PyTuple_GET_ITEM(t->obj, i), v) : -1;
            Py_XDECREF(v);
            if (r < 0) { Py_DECREF(d); return NULL; }
        }
        return d;
    }
    case ST_T_SYM: {
        int64_t vals[64], v;
        int r = t->sym && t->sym->nsym <= 64 ? st_fe_sym_values(t->sym, f, memo, vals) : 0;
        if (r < 0) return NULL;
        if (r == 0 || st_fe_sx_eval(t->sym, t->index, vals, &v) < 0) {
            PyErr_SetString(PyExc_RuntimeError, "compiled entry: a symbolic value cannot be evaluated");
            return NULL;
        }
        return PyLong_FromLongLong(v);
    }
    case ST_T_OBJECT: {
        PyTypeObject *tp = (PyTypeObject *)PyTuple_GET_ITEM(t->obj, 0);
        PyObject *keys = PyTuple_GET_ITEM(t->obj, 1), *names = PyTuple_GET_ITEM(t->obj, 2);
        Py_ssize_t ni = PyTuple_GET_SIZE(keys);
        PyObject *empty = PyTuple_New(0);
        PyObject *o = empty ? tp->tp_new(tp, empty, NULL) : NULL;
        Py_XDECREF(empty);
        PyObject *d = o ? PyObject_GenericGetDict(o, NULL) : NULL;
        if (!d) { Py_XDECREF(o); return NULL; }
        /* an exception (tr_objects.c): after its attributes come args,
         * __cause__ and __context__, then its C fields (StopIteration's
         * value, OSError's errno...) */
        bool exc = PyTuple_GET_SIZE(t->obj) == 6;
        PyObject *cf = exc ? PyTuple_GET_ITEM(t->obj, 4) : NULL;
        int ncf = cf ? (int)PyTuple_GET_SIZE(cf) : 0;
        int nd = exc ? t->n - 3 - ncf : t->n;
        /* items and attributes stored in C: the class's Python
         * __setitem__/__setattr__ ran in the frame, not again here */
        for (int i = 0; i < t->n; i++) {
            PyObject *v = st_fe_tmpl_build(t->items[i], outs, f, memo, shared);
            int r = -1;
            if (v && i < ni)
                r = PyODict_Check(o) ? PyODict_SetItem(o, PyTuple_GET_ITEM(keys, i), v)
                                     : PyDict_SetItem(o, PyTuple_GET_ITEM(keys, i), v);
            else if (v && i < nd)
                r = PyDict_SetItem(d, PyTuple_GET_ITEM(names, i - ni), v);
            else if (v && i < nd + 3)
                r = set_exc_part(o, i - nd, v);
            else if (v)   /* None: left unset (OSError's str tells unset from None) */
                r = v == Py_None ? 0 : PyObject_SetAttr(o, PyTuple_GET_ITEM(cf, i - nd - 3), v);
            Py_XDECREF(v);
            if (r < 0) { Py_DECREF(d); Py_DECREF(o); return NULL; }
        }
        Py_DECREF(d);
        if (exc) {
            ((PyBaseExceptionObject *)o)->suppress_context =
                (char)(PyTuple_GET_ITEM(t->obj, 3) == Py_True);
            if (set_exc_traceback(o, PyTuple_GET_ITEM(t->obj, 5)) < 0) {
                Py_DECREF(o);
                return NULL;
            }
        }
        return o;
    }
    case ST_T_METHOD: {
        PyObject *self = st_fe_tmpl_build(t->items[0], outs, f, memo, shared);
        if (!self) return NULL;
        PyObject *r = PyUnicode_Check(t->obj) ? PyObject_GetAttr(self, t->obj)
                                              : PyMethod_New(t->obj, self);
        Py_DECREF(self);
        return r;
    }
    }
    PyErr_SetString(PyExc_SystemError, "bad return template kind");
    return NULL;
}

/* ---------------- side effects ---------------- */
int st_fe_fx_call(PyObject *v)
{
    if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(v, 1))) {
        PyErr_SetString(PyExc_SystemError, "side effect: bad call record");
        return -1;
    }
    PyObject *kw = PyTuple_GET_ITEM(v, 2);
    /* as eager runs it: its frames (a user's lr lambda) are not translated */
    st_fe_hook_suspend(1);
    PyObject *r = PyObject_Call(PyTuple_GET_ITEM(v, 0), PyTuple_GET_ITEM(v, 1),
                                PyDict_Check(kw) ? kw : NULL);
    st_fe_hook_suspend(-1);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

int st_fe_effects_replay(const st_fe_effect *fx, int n, PyObject *const *outs,
                         const st_fe_frame *f, PyObject **memo, PyObject **shared)
{
    PyObject *tg_s[16], **tg = tg_s;
    int rc = -1, got = 0;
    if (n > 16 && !(tg = calloc((size_t)n, sizeof *tg))) {
        PyErr_NoMemory();
        return -1;
    }
    /* targets first: the objects as they were when the frame began */
    for (; got < n; got++) {
        tg[got] = NULL;
        if (fx[got].kind == ST_FX_GLOBAL || fx[got].kind == ST_FX_CALL)
            continue;
        tg[got] = st_fe_src_eval(fx[got].target, f, memo);
        if (!tg[got]) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "compiled entry: a side effect's target is missing");
            goto done;
        }
    }
    for (int i = 0; i < n; i++) {
        PyObject *v = st_fe_tmpl_build(fx[i].val, outs, f, memo, shared), *t = tg[i];
        int r = -1;
        if (!v)
            goto done;
        switch (fx[i].kind) {
        case ST_FX_SETATTR: r = PyObject_SetAttr(t, fx[i].name, v); break;
        case ST_FX_GLOBAL: r = PyDict_SetItem(f->globals, fx[i].name, v); break;
        case ST_FX_LIST:
            if (PyList_Check(t) && PyList_Check(v))
                r = PyList_SetSlice(t, 0, PY_SSIZE_T_MAX, v);
            else
                PyErr_SetString(PyExc_SystemError, "side effect: list target is not a list");
            break;
        case ST_FX_DICT:
            if (PyDict_Check(t) && PyDict_Check(v)) {
                PyDict_Clear(t);
                r = PyDict_Update(t, v);
            } else {
                PyErr_SetString(PyExc_SystemError, "side effect: dict target is not a dict");
            }
            break;
        case ST_FX_CALL:
            r = st_fe_fx_call(v);
            break;
        }
        Py_DECREF(v);
        if (r < 0)
            goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < got; i++)
        Py_XDECREF(tg[i]);
    if (tg != tg_s)
        free(tg);
    return rc;
}

/* Evaluates (into memo) every source t reads. */
static int presource(const st_fe_tmpl *t, const st_fe_frame *f, PyObject **memo)
{
    if (t->kind == ST_T_SOURCE) {
        PyObject *v = st_fe_src_eval(t->src, f, memo);
        if (!v) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_SystemError, "return template's source is missing");
            return -1;
        }
        Py_DECREF(v);
    }
    for (int i = 0; i < t->n; i++)
        if (presource(t->items[i], f, memo) < 0)
            return -1;
    return 0;
}

#define SMALL 64

PyObject *st_fe_entry_run(st_fe_entry *e, const st_fe_frame *f, PyObject **memo)
{
    return st_fe_entry_run_pre(e, f, memo, NULL);
}

PyObject *st_fe_entry_run_pre(st_fe_entry *e, const st_fe_frame *f, PyObject **memo,
                              st_tensor *const *pre)
{
    st_tensor *ins_s[SMALL], **ins = ins_s;
    PyObject *ins_obj_s[SMALL], **ins_obj = ins_obj_s;
    st_tensor *outs_s[SMALL], **outs = outs_s;
    PyObject *pouts_s[SMALL], **pouts = pouts_s;
    PyObject *res = NULL, **shared = NULL;
    int nin = e->ninputs, nout = e->noutputs, got = 0, nown = 0, nwrapped = 0;
    if (nin > SMALL) {
        ins = malloc((size_t)nin * sizeof *ins);
        ins_obj = malloc((size_t)nin * sizeof *ins_obj);
    }
    if (nout > SMALL) {
        outs = malloc((size_t)nout * sizeof *outs);
        pouts = malloc((size_t)nout * sizeof *pouts);
    }
    if (!ins || !ins_obj || !outs || !pouts) { PyErr_NoMemory(); goto done; }
    /* inputs are borrowed from the memo (which holds them until the caller
     * clears it) or from the entry's constants; without a memo, owned */
    for (; got < nin; got++) {
        if (pre && pre[got]) {
            ins[got] = pre[got];
            continue;
        }
        st_fe_src *s = e->input_src[got];
        PyObject *v;
        if (s) {
            v = memo ? memo[s->id] : NULL;
            if (!v) {
                v = st_fe_src_eval(s, f, memo);
                if (!v) {
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_RuntimeError, "compiled entry: a graph input is missing");
                    goto done;
                }
                if (memo) Py_DECREF(v);          /* the memo keeps its own reference */
                else ins_obj[nown++] = v;
            }
        } else {
            v = e->input_const ? e->input_const[got] : NULL;
        }
        if (!v || !st_fe_is_tensor(v)) {
            PyErr_SetString(PyExc_RuntimeError, "compiled entry: a graph input is not a Tensor");
            goto done;
        }
        ins[got] = st_fe_unwrap(v);
    }
    void *cfn = e->dyn ? st_fe_dyn_cfn(e, f, memo) : e->cfn;
    if (e->dyn && !cfn)
        goto done;
    /* no graph: its outputs were all inputs, which the templates read from
     * their sources (translator.c, outputs_from_inputs) */
    if (nout > 0 && cfn) {
        uint64_t t0 = st_fe_timing ? st_fe_now_ns() : 0;
        st_status rc = st_rt_cfn_run((st_rt_cfn *)cfn, ins, outs);
        if (st_fe_timing) st_fe_timing_ns[1] += st_fe_now_ns() - t0;
        if (rc != ST_OK) {
            st_fe_raise();
            goto done;
        }
        for (; nwrapped < nout; nwrapped++) {
            pouts[nwrapped] = st_fe_wrap(outs[nwrapped]);   /* steals */
            if (!pouts[nwrapped]) {
                for (int k = nwrapped + 1; k < nout; k++) st_tensor_decref(outs[k]);
                goto done;
            }
        }
    } else if (cfn) {
        /* a graph with no visible outputs (in-place updates only) */
        if (st_rt_cfn_run((st_rt_cfn *)cfn, ins, outs) != ST_OK) {
            st_fe_raise();
            goto done;
        }
    }
    e->hits++;
    if (e->nshare > 0 && !(shared = calloc((size_t)e->nshare, sizeof *shared))) {
        PyErr_NoMemory();
        goto done;
    }
    /* the objects the result reads from the frame, as they were before
     * the side effects (which may rebind or refill them) */
    if (e->neffects > 0 && memo && presource(e->ret, f, memo) < 0)
        goto done;
    for (int k = 0; k < e->neffects && memo; k++)
        if (presource(e->effects[k].val, f, memo) < 0)
            goto done;
    if (e->neffects > 0 &&
        st_fe_effects_replay(e->effects, e->neffects, pouts, f, memo, shared) < 0)
        goto done;
    res = st_fe_tmpl_build(e->ret, pouts, f, memo, shared);
done:
    for (int k = 0; shared && k < e->nshare; k++) Py_XDECREF(shared[k]);
    free(shared);
    for (int k = 0; k < nown; k++) Py_DECREF(ins_obj[k]);
    for (int k = 0; k < nwrapped; k++) Py_DECREF(pouts[k]);
    if (ins != ins_s) free(ins);
    if (ins_obj != ins_obj_s) free(ins_obj);
    if (outs != outs_s) free(outs);
    if (pouts != pouts_s) free(pouts);
    return res;
}

void st_fe_entry_free(st_fe_entry *e)
{
    if (!e) return;
    if (e->cfn) st_rt_cfn_free((st_rt_cfn *)e->cfn);
    for (int k = 0; e->input_const && k < e->ninputs; k++) Py_XDECREF(e->input_const[k]);
    free(e->input_const);
    free(e->input_src);
    st_fe_tmpl_free(e->ret);
    for (int k = 0; k < e->neffects; k++) {
        st_fe_tmpl_free(e->effects[k].val);
        Py_XDECREF(e->effects[k].name);
    }
    free(e->effects);
    Py_XDECREF(e->graph_str);
    Py_XDECREF(e->brk_fn);
    st_fe_dyn_free(e->dyn);
    st_fe_guardset_clear(&e->guards);
    st_fe_srctab_clear(&e->srcs);
    free(e);
}

void st_fe_break_clear(st_fe_break *b)
{
    b->reason[0] = 0;
    Py_CLEAR(b->filename);
    b->lineno = 0;
}
