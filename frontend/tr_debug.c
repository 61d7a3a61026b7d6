/* frontend/tr_debug.c - debug bindings of the translator for tests:
 *   _C._fe_translate(fn, args=(), kwargs=None, backend="interp",
 *                    log_level=0, fullgraph=False) -> dict
 *       {"ok", "result", "reason", "filename", "lineno", "graph", "nops",
 *        "guards", "inputs", "entry"}: translates fn's frame for these
 *       arguments (entry: a capsule owning the st_fe_entry, or None)
 *   _C._fe_entry_call(entry, fn, args=(), kwargs=None) -> (passed, value):
 *       checks the entry's guards on a new frame and runs it on a hit. */
#include "tr_internal.h"

#include <stdlib.h>
#include <string.h>

#define ENTRY_CAPSULE "symtrace.fe_entry"

typedef struct {
    st_fe_frame f;
    PyObject **locals;
    int n;
} bound_frame;

static void bound_free(bound_frame *b)
{
    for (int i = 0; i < b->n; i++)
        Py_XDECREF(b->locals[i]);
    free(b->locals);
    b->locals = NULL;
}

static int bind_frame(PyObject *fn, PyObject *args, PyObject *kwargs, bound_frame *b)
{
    memset(b, 0, sizeof *b);
    if (!PyFunction_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "expected a Python function");
        return -1;
    }
    if (!PyTuple_Check(args) || (kwargs && kwargs != Py_None && !PyDict_Check(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "args must be a tuple and kwargs a dict");
        return -1;
    }
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    b->n = co->co_nlocalsplus;
    b->locals = calloc((size_t)b->n + 1, sizeof(PyObject *));
    Py_ssize_t np = PyTuple_GET_SIZE(args);
    Py_ssize_t nk = kwargs && kwargs != Py_None ? PyDict_GET_SIZE(kwargs) : 0;
    PyObject **argv = calloc((size_t)(np + nk) + 1, sizeof(PyObject *));
    PyObject *kwnames = nk ? PyTuple_New(nk) : NULL;
    if (!b->locals || !argv || (nk && !kwnames)) {
        free(argv);
        Py_XDECREF(kwnames);
        bound_free(b);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < np; i++)
        argv[i] = PyTuple_GET_ITEM(args, i);
    Py_ssize_t pos = 0, k = 0;
    PyObject *key, *val;
    while (nk && PyDict_Next(kwargs, &pos, &key, &val)) {
        PyTuple_SET_ITEM(kwnames, k, Py_NewRef(key));
        argv[np + k] = val;
        k++;
    }
    int rc = tr_bind_args(fn, argv, np, kwnames, b->locals, b->n);
    free(argv);
    Py_XDECREF(kwnames);
    if (rc < 0) {
        bound_free(b);
        return -1;
    }
    PyObject *globals = PyFunction_GET_GLOBALS(fn);
    PyObject *builtins = PyDict_GetItemString(globals, "__builtins__");
    if (builtins && PyModule_Check(builtins))
        builtins = PyModule_GetDict(builtins);
    if (!builtins || !PyDict_Check(builtins))
        builtins = PyEval_GetBuiltins();
    b->f.code = co;
    b->f.func = fn;
    b->f.locals = (PyObject *const *)b->locals;
    b->f.nlocals = b->n;
    b->f.globals = globals;
    b->f.builtins = builtins;
    b->f.closure = PyFunction_GET_CLOSURE(fn);
    return 0;
}

static void entry_capsule_free(PyObject *cap)
{
    st_fe_entry *e = PyCapsule_GetPointer(cap, ENTRY_CAPSULE);
    if (e)
        st_fe_entry_free(e);
    else
        PyErr_Clear();
}

static int set_item(PyObject *d, const char *k, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *fe_translate(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"fn", "args", "kwargs", "backend", "log_level", "fullgraph",
                             "partial", NULL};
    PyObject *fn, *fargs = NULL, *fkw = NULL;
    const char *backend = "interp";
    int log_level = 0, fullgraph = 0, partial = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOsipp", kwlist, &fn, &fargs, &fkw,
                                     &backend, &log_level, &fullgraph, &partial))
        return NULL;
    PyObject *empty = NULL;
    if (!fargs)
        fargs = empty = PyTuple_New(0);
    bound_frame b;
    int brc = bind_frame(fn, fargs, fkw, &b);
    Py_XDECREF(empty);
    if (brc < 0)
        return NULL;
    st_fe_options opts = {.backend = backend, .fullgraph = fullgraph != 0,
                          .dynamic = false, .log_level = log_level,
                          .no_partial = !partial};
    st_fe_break brk;
    memset(&brk, 0, sizeof brk);
    PyObject *result = NULL;
    st_fe_entry *e = st_fe_translate(&b.f, &opts, &result, &brk);
    bound_free(&b);
    if (!e && (PyErr_Occurred() || !brk.reason[0])) {
        st_fe_break_clear(&brk);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "translation failed");
        return NULL;
    }
    if (e && e->brk_fn && result) {
        /* a partial graph: the rest of the frame runs (plain: no hook here) */
        Py_SETREF(result, st_fe_call_break(e->brk_fn, result,
                                           (PyCodeObject *)PyFunction_GET_CODE(fn),
                                           PyFunction_GET_CLOSURE(fn)));
        if (!result) {
            st_fe_entry_free(e);
            st_fe_break_clear(&brk);
            return NULL;
        }
    }
    PyObject *d = PyDict_New();
    if (!d)
        goto fail;
    if (set_item(d, "ok", PyBool_FromLong(e != NULL)) ||
        set_item(d, "partial", PyBool_FromLong(e && e->brk_fn)) ||
        set_item(d, "result", Py_NewRef(result ? result : Py_None)) ||
        set_item(d, "reason", PyUnicode_FromString(brk.reason)) ||
        set_item(d, "filename", Py_NewRef(brk.filename ? brk.filename : Py_None)) ||
        set_item(d, "lineno", PyLong_FromLong(brk.lineno)))
        goto fail;
    if (e) {
        PyObject *inputs = PyList_New(e->ninputs);
        if (!inputs)
            goto fail;
        for (int k = 0; k < e->ninputs; k++) {
            PyObject *r = e->input_src[k] ? st_fe_src_repr(e->input_src[k])
                                          : PyUnicode_FromString("<const>");
            if (!r) {
                Py_DECREF(inputs);
                goto fail;
            }
            PyList_SET_ITEM(inputs, k, r);
        }
        if (set_item(d, "inputs", inputs) ||
            set_item(d, "graph", Py_NewRef(e->graph_str ? e->graph_str : Py_None)) ||
            set_item(d, "nops", PyLong_FromLong(e->nops)) ||
            set_item(d, "guards", st_fe_guards_describe(&e->guards)))
            goto fail;
        PyObject *cap = PyCapsule_New(e, ENTRY_CAPSULE, entry_capsule_free);
        if (!cap)
            goto fail;
        e = NULL;
        if (set_item(d, "entry", cap))
            goto fail;
    } else {
        if (set_item(d, "inputs", PyList_New(0)) ||
            set_item(d, "graph", Py_NewRef(Py_None)) ||
            set_item(d, "nops", PyLong_FromLong(0)) ||
            set_item(d, "guards", PyList_New(0)) ||
            set_item(d, "entry", Py_NewRef(Py_None)))
            goto fail;
    }
    Py_XDECREF(result);
    st_fe_break_clear(&brk);
    return d;
fail:
    Py_XDECREF(d);
    Py_XDECREF(result);
    if (e)
        st_fe_entry_free(e);
    st_fe_break_clear(&brk);
    return NULL;
}

static PyObject *fe_entry_call(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"entry", "fn", "args", "kwargs", NULL};
    PyObject *cap, *fn, *fargs = NULL, *fkw = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO", kwlist, &cap, &fn, &fargs, &fkw))
        return NULL;
    st_fe_entry *e = PyCapsule_GetPointer(cap, ENTRY_CAPSULE);
    if (!e)
        return NULL;
    PyObject *empty = NULL;
    if (!fargs)
        fargs = empty = PyTuple_New(0);
    bound_frame b;
    int brc = bind_frame(fn, fargs, fkw, &b);
    Py_XDECREF(empty);
    if (brc < 0)
        return NULL;
    int n = e->srcs.n;
    PyObject **memo = calloc((size_t)n + 1, sizeof(PyObject *));
    PyObject *r = NULL;
    if (!memo) {
        PyErr_NoMemory();
        goto out;
    }
    const st_fe_guard *failed = NULL;
    int pass = st_fe_guards_check(&e->guards, &b.f, memo, &failed);
    if (pass < 0)
        goto out;
    if (!pass) {
        r = Py_BuildValue("(OO)", Py_False, Py_None);
        goto out;
    }
    PyObject *v = st_fe_entry_run(e, &b.f, memo);
    if (v) {
        r = Py_BuildValue("(ON)", Py_True, v);
        e->hits++;
    }
out:
    if (memo) {
        st_fe_memo_clear(memo, n);
        free(memo);
    }
    bound_free(&b);
    return r;
}

/* _fe_resume_plan(code, offset) -> dict or str: where a root frame that
 * breaks at byte offset `offset` resumes (resume.c), or why it cannot. */
static PyObject *fe_resume_plan(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *co;
    int off;
    if (!PyArg_ParseTuple(args, "O!i", &PyCode_Type, &co, &off))
        return NULL;
    st_fe_brkpt bp;
    char why[256];
    int r = st_fe_resume_plan((PyCodeObject *)co, off / 2, &bp, why, sizeof why);
    if (r < 0)
        return NULL;
    if (r > 0)
        return PyUnicode_FromString(why);
    static const char *const kinds[] = {"simple", "jump", "end"};
    PyObject *live = PyList_New(0);
    PyObject *names = PyObject_GetAttrString(co, "co_varnames");
    for (int i = 0; live && names && i < bp.nlocals; i++)
        if (bp.live[i] && PyList_Append(live, PyTuple_GET_ITEM(names, i)) < 0)
            Py_CLEAR(live);
    Py_XDECREF(names);
    PyObject *d = live ? Py_BuildValue("{s:i,s:i,s:s,s:i,s:(ii),s:(ii),s:i,s:N}", "start", 2 * bp.start,
                                       "end", 2 * bp.end, "kind", kinds[bp.kind], "npop", bp.npop,
                                       "nres", bp.nres[0], bp.nres[1], "exits", 2 * bp.exit[0],
                                       2 * bp.exit[1], "line", bp.line, "live", live)
                       : NULL;
    st_fe_brkpt_clear(&bp);
    return d;
}

static PyMethodDef tr_debug_methods[] = {
    {"_fe_resume_plan", fe_resume_plan, METH_VARARGS,
     "_fe_resume_plan(code, offset) -> dict (where a break at offset resumes) or str (why not)"},
    {"_fe_translate", (PyCFunction)(void (*)(void))fe_translate, METH_VARARGS | METH_KEYWORDS,
     "_fe_translate(fn, args=(), kwargs=None, backend='interp', log_level=0, "
     "fullgraph=False, partial=False) -> dict (partial: keep the graph before a break)"},
    {"_fe_entry_call", (PyCFunction)(void (*)(void))fe_entry_call, METH_VARARGS | METH_KEYWORDS,
     "_fe_entry_call(entry, fn, args=(), kwargs=None) -> (passed, value)"},
    {NULL, NULL, 0, NULL},
};

int st_fe_init_tr_debug(PyObject *m);
int st_fe_init_tr_debug(PyObject *m)
{
    return PyModule_AddFunctions(m, tr_debug_methods);
}
