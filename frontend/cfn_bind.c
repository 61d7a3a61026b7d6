/* frontend/cfn_bind.c - debug bindings of compiled functions
 * (runtime/cfn.c), for tests: trace a Python function on real arguments
 * (st_rt_trace_begin, call, st_rt_trace_end2), compile the graph with
 * st_rt_cfn_new and call it like the function.
 *
 *   _C._cfn_from_trace(fn, args, backend="interp") -> CompiledFn
 *       fn(*args) must return a Tensor or a tuple/list of Tensors; inputs
 *       that required grad at trace time get gradients. Tensors the trace
 *       read that are not among args are captured as they are.
 *   CompiledFn(*args) -> Tensor or tuple (the same structure), running
 *       the compiled graph on the tensors at the traced positions (other
 *       arguments are ignored); .graph / .backward_graph (str),
 *       .has_backward, .num_kernels, .num_backward_kernels,
 *       .num_inputs, .writebacks (graph input indices written back).
 *   _C._cfn_pylayer(cls, *args): what the translator does for
 *       cls.apply(*args) while a trace is active (st_fe_trace_pylayer),
 *       so functions traced by _cfn_from_trace can capture a PyLayer;
 *       also named _trace_pylayer, which Function.apply calls while a
 *       trace is active in grad mode (PyLayers run by library code, such
 *       as cat's, are captured too). */
#include "st_fe_tr.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    st_rt_cfn *f;
    int nargs;           /* the traced call's argument count */
    int ninputs;
    int *arg_of;         /* per graph input: the argument index, or -1 */
    PyObject **captured; /* per graph input: the captured tensor, or NULL */
    int nout;
    bool single;         /* fn returned one Tensor */
    PyObject *wb;        /* tuple of the input positions written back */
} cfn_obj;

static PyTypeObject cfn_type;

static void cfn_dealloc(PyObject *self)
{
    cfn_obj *o = (cfn_obj *)self;
    st_rt_cfn_free(o->f);
    for (int k = 0; o->captured && k < o->ninputs; k++)
        Py_XDECREF(o->captured[k]);
    free(o->captured);
    free(o->arg_of);
    Py_XDECREF(o->wb);
    Py_TYPE(self)->tp_free(self);
}

/* The StatementIR, then one line per region ("stop_gradient" statements
 * first..end-1, or "custom_vjp" with its inputs, outputs and the size of
 * its backward graph). */
static PyObject *graph_str(const st_graph *g)
{
    if (!g)
        Py_RETURN_NONE;
    char *s = st_ir_print(g);
    if (!s)
        return st_fe_raise();
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    if (r && g->nregions > 0) {
        PyObject *rs = PyUnicode_FromString("  regions:\n");
        PyUnicode_Append(&r, rs);
        Py_XDECREF(rs);
    }
    for (int k = 0; r && k < g->nregions; k++) {
        const st_ir_region *rg = &g->regions[k];
        char buf[64];
        PyObject *line;
        if (!rg->bwd) {
            line = PyUnicode_FromFormat("    stop_gradient: statements %d..%d\n",
                                        rg->first, rg->end - 1);
        } else {
            const char *a = rg->nin ? st_ir_value_name(g, rg->in[0], buf, sizeof buf) : "-";
            line = PyUnicode_FromFormat("    custom_vjp: statements %d..%d, %d inputs "
                                        "(first %s), %d outputs, backward of %d "
                                        "statements reading %d forward values\n",
                                        rg->first, rg->end - 1, rg->nin, a, rg->nout,
                                        rg->bwd->nstmts, rg->nread);
        }
        PyUnicode_Append(&r, line);
        Py_XDECREF(line);
    }
    return r;
}

static PyObject *cfn_call(PyObject *self, PyObject *args, PyObject *kw)
{
    cfn_obj *o = (cfn_obj *)self;
    if (kw && PyDict_Size(kw)) {
        PyErr_SetString(PyExc_TypeError, "CompiledFn takes no keywords");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != o->nargs) {
        PyErr_Format(PyExc_TypeError, "CompiledFn takes %d arguments, %zd "
                     "given", o->nargs, PyTuple_GET_SIZE(args));
        return NULL;
    }
    st_tensor **in = calloc((size_t)(o->ninputs ? o->ninputs : 1), sizeof *in);
    st_tensor **out = calloc((size_t)(o->nout ? o->nout : 1), sizeof *out);
    PyObject *res = NULL;
    if (!in || !out) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < o->ninputs; k++) {
        PyObject *a = o->arg_of[k] >= 0 ? PyTuple_GET_ITEM(args, o->arg_of[k])
                                        : o->captured[k];
        if (!st_fe_is_tensor(a)) {
            PyErr_Format(PyExc_TypeError, "CompiledFn: argument %d must be a "
                         "Tensor, got %s", o->arg_of[k], Py_TYPE(a)->tp_name);
            goto done;
        }
        in[k] = st_fe_unwrap(a);
    }
    if (st_rt_cfn_run(o->f, in, out) != ST_OK) {
        st_fe_raise();
        goto done;
    }
    if (o->single) {
        res = st_fe_wrap(out[0]);
        goto done;
    }
    res = PyTuple_New(o->nout);
    for (int k = 0; k < o->nout; k++) {
        PyObject *w = res ? st_fe_wrap(out[k]) : NULL;
        if (!res) {
            st_tensor_decref(out[k]);
            continue;
        }
        if (!w) {
            Py_CLEAR(res);
            continue;
        }
        PyTuple_SET_ITEM(res, k, w);
    }
done:
    free(in);
    free(out);
    return res;
}

static PyObject *get_graph(PyObject *self, void *c)
{
    (void)c;
    return graph_str(st_rt_cfn_graph(((cfn_obj *)self)->f, false));
}
static PyObject *get_bgraph(PyObject *self, void *c)
{
    (void)c;
    return graph_str(st_rt_cfn_graph(((cfn_obj *)self)->f, true));
}
static PyObject *get_hasb(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(st_rt_cfn_has_backward(((cfn_obj *)self)->f));
}
static PyObject *get_nk(PyObject *self, void *c)
{
    return PyLong_FromLong(st_rt_cfn_num_kernels(((cfn_obj *)self)->f, c != NULL));
}
static PyObject *get_nin(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(st_rt_cfn_num_inputs(((cfn_obj *)self)->f));
}
static PyObject *get_wb(PyObject *self, void *c)
{
    (void)c;
    Py_INCREF(((cfn_obj *)self)->wb);
    return ((cfn_obj *)self)->wb;
}

static PyGetSetDef cfn_getset[] = {
    {"graph", get_graph, NULL, "the forward StatementIR", NULL},
    {"backward_graph", get_bgraph, NULL, "the backward StatementIR or None", NULL},
    {"has_backward", get_hasb, NULL, "a backward graph was built", NULL},
    {"num_kernels", get_nk, NULL, "forward kernels", NULL},
    {"num_backward_kernels", get_nk, NULL, "backward kernels", (void *)1},
    {"num_inputs", get_nin, NULL, "graph inputs", NULL},
    {"writebacks", get_wb, NULL, "graph input indices written back", NULL},
    {NULL},
};

static PyTypeObject cfn_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C.CompiledFn",
    .tp_basicsize = sizeof(cfn_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A traced function compiled by st_rt_cfn (debug binding).",
    .tp_dealloc = cfn_dealloc,
    .tp_call = cfn_call,
    .tp_getset = cfn_getset,
};

/* Collects fn's result into tensors: *single for a bare Tensor. */
static st_tensor **result_tensors(PyObject *r, int *n, bool *single)
{
    PyObject *seq = st_fe_is_tensor(r) ? PyTuple_Pack(1, r)
                                       : (PyTuple_Check(r) || PyList_Check(r))
                                             ? PySequence_Fast(r, "")
                                             : NULL;
    *single = st_fe_is_tensor(r);
    if (!seq) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "_cfn_from_trace: the function "
                         "returned %s, not Tensors", Py_TYPE(r)->tp_name);
        return NULL;
    }
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    st_tensor **t = calloc((size_t)(m ? m : 1), sizeof *t);
    for (Py_ssize_t k = 0; t && k < m; k++) {
        PyObject *x = PySequence_Fast_GET_ITEM(seq, k);
        if (!st_fe_is_tensor(x)) {
            PyErr_Format(PyExc_TypeError, "_cfn_from_trace: result %zd is %s, "
                         "not a Tensor", k, Py_TYPE(x)->tp_name);
            free(t);
            t = NULL;
            break;
        }
        t[k] = st_fe_unwrap(x);
    }
    if (!t && !PyErr_Occurred())
        PyErr_NoMemory();
    *n = (int)m;
    Py_DECREF(seq);
    return t;
}

static PyObject *cfn_from_trace(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"fn", "args", "backend", NULL};
    PyObject *fn, *fargs;
    const char *backend = "interp";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!|s:_cfn_from_trace", kwlist,
                                     &fn, &PyTuple_Type, &fargs, &backend))
        return NULL;
    if (st_rt_trace_begin() != ST_OK)
        return st_fe_raise();
    PyObject *r = PyObject_CallObject(fn, fargs);
    if (!r) {
        st_rt_trace_abort();
        return NULL;
    }
    int nout = 0;
    bool single = false;
    st_tensor **outs = result_tensors(r, &nout, &single);
    if (!outs) {
        Py_DECREF(r);
        st_rt_trace_abort();
        return NULL;
    }
    st_tensor **ins = NULL;
    int nins = 0, *wb_in = NULL, nwb = 0;
    bool *rg0 = NULL;    /* requires_grad when first read (see st_rt_trace_end3) */
    st_graph *g = st_rt_trace_end3(outs, nout, &ins, &nins, &wb_in, &nwb, NULL, NULL, &rg0,
                                   NULL);
    free(outs);
    Py_DECREF(r);
    if (!g)
        return st_fe_raise();
    cfn_obj *o = PyObject_New(cfn_obj, &cfn_type);
    bool *rg = calloc((size_t)(nins ? nins : 1), sizeof *rg);
    int *wb_out = malloc(sizeof(int) * (size_t)(nwb ? nwb : 1));
    PyObject *res = NULL;
    if (o) {
        o->f = NULL;
        o->nargs = (int)PyTuple_GET_SIZE(fargs);
        o->ninputs = nins;
        o->nout = nout;
        o->single = single;
        o->arg_of = malloc(sizeof(int) * (size_t)(nins ? nins : 1));
        o->captured = calloc((size_t)(nins ? nins : 1), sizeof *o->captured);
        o->wb = PyTuple_New(nwb);
    }
    if (!o || !rg || !wb_out || !o->arg_of || !o->captured || !o->wb) {
        if (o)
            o->ninputs = 0;
        st_ir_graph_free(g);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < nins; k++) {
        rg[k] = rg0 ? rg0[k] : ins[k]->requires_grad;
        o->arg_of[k] = -1;
        for (int j = 0; j < o->nargs && o->arg_of[k] < 0; j++) {
            PyObject *a = PyTuple_GET_ITEM(fargs, j);
            if (st_fe_is_tensor(a) && st_fe_unwrap(a) == ins[k])
                o->arg_of[k] = j;
        }
        if (o->arg_of[k] < 0) {
            st_tensor_incref(ins[k]);
            o->captured[k] = st_fe_wrap(ins[k]);
        }
    }
    for (int k = 0; k < nwb; k++) {
        wb_out[k] = nout + k;
        PyTuple_SET_ITEM(o->wb, k, PyLong_FromLong(wb_in[k]));
    }
    st_rt_cfn_opts opts = {
        .backend = backend,
        .input_requires_grad = rg,
        .writeback_out = wb_out,
        .writeback_in = wb_in,
        .nwriteback = nwb,
        .nvisible = nout,
    };
    o->f = st_rt_cfn_new(g, &opts);
    if (!o->f) {
        st_fe_raise();
        goto done;
    }
    res = (PyObject *)o;
    o = NULL;
done:
    for (int k = 0; k < nins; k++)
        st_tensor_decref(ins[k]);
    free(ins);
    free(wb_in);
    free(wb_out);
    free(rg);
    free(rg0);
    Py_XDECREF(o);
    return res;
}

static PyObject *cfn_pylayer(PyObject *self, PyObject *args)
{
    (void)self;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "_cfn_pylayer(cls, *args)");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (!rest)
        return NULL;
    PyObject *r = st_fe_trace_pylayer_apply(PyTuple_GET_ITEM(args, 0), rest);
    Py_DECREF(rest);
    return r;
}

static PyMethodDef cfn_methods[] = {
    {"_cfn_pylayer", cfn_pylayer, METH_VARARGS,
     "_cfn_pylayer(cls, *args): cls.apply(*args) as a traced region"},
    {"_trace_pylayer", cfn_pylayer, METH_VARARGS,
     "_trace_pylayer(cls, *args): Function.apply while a trace is active"},
    {"_cfn_from_trace", (PyCFunction)(void (*)(void))cfn_from_trace,
     METH_VARARGS | METH_KEYWORDS,
     "_cfn_from_trace(fn, args, backend='interp') -> CompiledFn"},
    {NULL},
};

int st_fe_init_cfn(PyObject *m)
{
    if (PyType_Ready(&cfn_type) < 0)
        return -1;
    Py_INCREF(&cfn_type);
    if (PyModule_AddObject(m, "CompiledFn", (PyObject *)&cfn_type) < 0) {
        Py_DECREF(&cfn_type);
        return -1;
    }
    return PyModule_AddFunctions(m, cfn_methods);
}
