/* frontend/trace_bind.c - Python bindings of trace capture
 * (runtime/trace.c) and of backward graphs (ir/backward.c), plus a plain
 * runner for graphs. Graphs travel as PyCapsules named "symtrace.graph"
 * that own their st_graph* (the capsule's destructor frees it), so that
 * _C.Graph (frontend/graph_bind.c) can adopt them.
 *
 *   _C._trace_begin()
 *   _C._trace_end(outputs, candidates=()) -> (graph, inputs): outputs a
 *       Tensor or a sequence of them; inputs the tensors bound to the
 *       graph's inputs, in order (an object of `candidates` wrapping the
 *       same tensor is returned as itself, so identity is kept)
 *   _C._trace_abort(), _C._trace_active() -> bool, _C._trace_fail(reason)
 *   _C._graph_print(graph) -> str
 *   _C._graph_inputs(graph) -> ((value_id, is_param), ...)
 *   _C._graph_outputs(graph) -> (value_id, ...)
 *   _C._backward_graph(graph, wrt_value_ids) -> (bwd, saved_ids, fwd_saving):
 *       bwd's inputs are the forward values saved_ids then the loss
 *       gradient; its outputs the gradients of wrt; fwd_saving is the
 *       forward graph whose outputs are graph's, then the saved values
 *   _C._run_graph(graph, inputs, backend="interp") -> outputs tuple */
#include "st_fe.h"
#include "st_kernel.h"

#include <stdlib.h>
#include <string.h>

#define CAPSULE_NAME "symtrace.graph"

static void capsule_free(PyObject *cap)
{
    st_graph *g = PyCapsule_GetPointer(cap, CAPSULE_NAME);
    if (g)
        st_ir_graph_free(g);
    else
        PyErr_Clear();
}

/* Wraps g in a capsule that owns it (freed here on failure). */
static PyObject *capsule_of(st_graph *g)
{
    if (!g)
        return st_fe_raise();
    PyObject *c = PyCapsule_New(g, CAPSULE_NAME, capsule_free);
    if (!c)
        st_ir_graph_free(g);
    return c;
}

static st_graph *graph_of(PyObject *o)
{
    if (!PyCapsule_IsValid(o, CAPSULE_NAME)) {
        PyErr_Format(PyExc_TypeError, "expected a graph capsule (\"%s\"), "
                     "got %s", CAPSULE_NAME, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(o, CAPSULE_NAME);
}

static PyObject *trace_begin(PyObject *self, PyObject *noargs)
{
    if (st_rt_trace_begin() != ST_OK)
        return st_fe_raise();
    Py_RETURN_NONE;
}

static PyObject *trace_abort(PyObject *self, PyObject *noargs)
{
    st_rt_trace_abort();
    Py_RETURN_NONE;
}

static PyObject *trace_active(PyObject *self, PyObject *noargs)
{
    return PyBool_FromLong(st_rt_trace_active());
}

/* A tensor a symtrace function just built on the host from Python numbers
 * (tril_indices' coordinates): a constant of the graph being traced, not
 * an input without a source (which breaks the graph). Only for a tensor no
 * traced op has read yet; outside a trace, nothing. Returns t. */
static PyObject *trace_constant(PyObject *self, PyObject *t)
{
    if (!st_fe_is_tensor(t)) {
        PyErr_Format(PyExc_TypeError, "_trace_constant: expected a Tensor, got %s",
                     Py_TYPE(t)->tp_name);
        return NULL;
    }
    st_rt_trace_constant(st_fe_unwrap(t));
    return Py_NewRef(t);
}

/* Python code that finds it cannot state what it does in a graph (a view
 * the trace has no path back to the base for) fails the active trace: the
 * translator breaks the graph at the call and runs it eagerly. */
static PyObject *trace_fail(PyObject *self, PyObject *reason)
{
    const char *why = PyUnicode_AsUTF8(reason);
    if (!why)
        return NULL;
    if (st_rt_trace_active())
        st_rt_trace_fail(why);
    Py_RETURN_NONE;
}

static PyObject *trace_end(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"outputs", "candidates", NULL};
    PyObject *outs_o, *cands_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:_trace_end", kwlist,
                                     &outs_o, &cands_o)) {
        st_rt_trace_abort();
        return NULL;
    }
    PyObject *seq = NULL, *cands = NULL;
    st_tensor **outs = NULL;
    if (st_fe_is_tensor(outs_o)) {
        seq = PyTuple_Pack(1, outs_o);
    } else {
        seq = PySequence_Fast(outs_o, "_trace_end: outputs must be a Tensor "
                              "or a sequence of Tensors");
    }
    if (cands_o && cands_o != Py_None)
        cands = PySequence_Fast(cands_o, "_trace_end: candidates must be a "
                                "sequence");
    if (!seq || (cands_o && cands_o != Py_None && !cands))
        goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    outs = calloc((size_t)(n > 0 ? n : 1), sizeof *outs);
    if (!outs) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
        if (!st_fe_is_tensor(o)) {
            PyErr_Format(PyExc_TypeError, "_trace_end: output %zd is %s, "
                         "not a Tensor", k, Py_TYPE(o)->tp_name);
            goto fail;
        }
        outs[k] = st_fe_unwrap(o);
    }
    st_tensor **ins = NULL;
    int nins = 0;
    st_graph *g = st_rt_trace_end(outs, (int)n, &ins, &nins);
    free(outs);
    outs = NULL;
    Py_DECREF(seq);
    seq = NULL;
    if (!g) {
        Py_XDECREF(cands);
        return st_fe_raise();
    }
    PyObject *cap = capsule_of(g);
    PyObject *tup = cap ? PyTuple_New(nins) : NULL;
    for (int k = 0; k < nins; k++) {
        if (!tup) {
            st_tensor_decref(ins[k]);
            continue;
        }
        PyObject *item = NULL;
        Py_ssize_t nc = cands ? PySequence_Fast_GET_SIZE(cands) : 0;
        for (Py_ssize_t j = 0; j < nc && !item; j++) {
            PyObject *c = PySequence_Fast_GET_ITEM(cands, j);
            if (st_fe_is_tensor(c) && st_fe_unwrap(c) == ins[k]) {
                Py_INCREF(c);
                item = c;
            }
        }
        if (item)
            st_tensor_decref(ins[k]);
        else
            item = st_fe_wrap(ins[k]); /* steals the reference */
        if (!item) {
            Py_CLEAR(tup);
            continue;
        }
        PyTuple_SET_ITEM(tup, k, item);
    }
    free(ins);
    Py_XDECREF(cands);
    if (!tup) {
        Py_XDECREF(cap);
        return NULL;
    }
    PyObject *r = PyTuple_Pack(2, cap, tup);
    Py_DECREF(cap);
    Py_DECREF(tup);
    return r;
fail:
    st_rt_trace_abort();
    free(outs);
    Py_XDECREF(seq);
    Py_XDECREF(cands);
    return NULL;
}

static PyObject *graph_print(PyObject *self, PyObject *o)
{
    st_graph *g = graph_of(o);
    if (!g)
        return NULL;
    char *s = st_ir_print(g);
    if (!s)
        return st_fe_raise();
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    return r;
}

static PyObject *graph_inputs(PyObject *self, PyObject *o)
{
    st_graph *g = graph_of(o);
    if (!g)
        return NULL;
    PyObject *t = PyTuple_New(g->ninputs);
    for (int k = 0; t && k < g->ninputs; k++) {
        int v = g->inputs[k];
        PyObject *p = Py_BuildValue("(iO)", v, g->values[v].kind ==
                                    ST_VAL_PARAM ? Py_True : Py_False);
        if (!p) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, p);
    }
    return t;
}

static PyObject *graph_outputs(PyObject *self, PyObject *o)
{
    st_graph *g = graph_of(o);
    if (!g)
        return NULL;
    PyObject *t = PyTuple_New(g->noutputs);
    for (int k = 0; t && k < g->noutputs; k++) {
        PyObject *v = PyLong_FromLong(g->outputs[k]);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

static PyObject *backward_graph(PyObject *self, PyObject *args)
{
    PyObject *go, *wo;
    if (!PyArg_ParseTuple(args, "OO:_backward_graph", &go, &wo))
        return NULL;
    st_graph *g = graph_of(go);
    if (!g)
        return NULL;
    PyObject *ws = PySequence_Fast(wo, "_backward_graph: wrt must be a "
                                   "sequence of value ids");
    if (!ws)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ws);
    int *wrt = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!wrt) {
        Py_DECREF(ws);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(ws, k));
        if (v == -1 && PyErr_Occurred()) {
            free(wrt);
            Py_DECREF(ws);
            return NULL;
        }
        wrt[k] = (v < -1 || v > 0x7fffffff) ? -1 : (int)v;
    }
    Py_DECREF(ws);
    st_graph *bwd = NULL;
    st_ir_bwd_info info;
    memset(&info, 0, sizeof info);
    st_status s = st_ir_backward(g, wrt, (int)n, &bwd, &info);
    free(wrt);
    if (s != ST_OK)
        return st_fe_raise();
    st_graph *fs = st_ir_forward_saving(g, &info);
    if (!fs) {
        st_ir_graph_free(bwd);
        st_ir_bwd_info_clear(&info);
        return st_fe_raise();
    }
    PyObject *saved = PyTuple_New(info.nsaved);
    for (int k = 0; saved && k < info.nsaved; k++) {
        PyObject *v = PyLong_FromLong(info.saved[k]);
        if (!v) {
            Py_CLEAR(saved);
            break;
        }
        PyTuple_SET_ITEM(saved, k, v);
    }
    st_ir_bwd_info_clear(&info);
    PyObject *bc = capsule_of(bwd), *fc = capsule_of(fs);
    PyObject *r = (bc && fc && saved) ? PyTuple_Pack(3, bc, saved, fc) : NULL;
    Py_XDECREF(bc);
    Py_XDECREF(fc);
    Py_XDECREF(saved);
    return r;
}

static PyObject *run_graph(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"graph", "inputs", "backend", NULL};
    PyObject *go, *io;
    const char *bname = "interp";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|s:_run_graph", kwlist, &go,
                                     &io, &bname))
        return NULL;
    st_graph *g = graph_of(go);
    if (!g)
        return NULL;
    st_backend *be = st_backend_get(bname);
    if (!be)
        return PyErr_Format(PyExc_ValueError, "_run_graph: no backend named "
                            "'%s'", bname);
    PyObject *is = PySequence_Fast(io, "_run_graph: inputs must be a "
                                   "sequence of Tensors");
    if (!is)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(is);
    if (n != g->ninputs) {
        Py_DECREF(is);
        return PyErr_Format(PyExc_ValueError, "_run_graph: the graph has %d "
                            "inputs, got %zd", g->ninputs, n);
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(is, k);
        if (!st_fe_is_tensor(o)) {
            Py_DECREF(is);
            return PyErr_Format(PyExc_TypeError, "_run_graph: input %zd is "
                                "%s, not a Tensor", k, Py_TYPE(o)->tp_name);
        }
        st_tensor *t = st_fe_unwrap(o);
        const st_meta *m = &g->values[g->inputs[k]].meta;
        if (t->dtype != m->dtype || t->ndim != m->ndim) {
            Py_DECREF(is);
            return PyErr_Format(PyExc_ValueError, "_run_graph: input %zd is "
                                "%s rank %d, the graph wants %s rank %d", k,
                                st_dtype_name(t->dtype), t->ndim,
                                st_dtype_name(m->dtype), m->ndim);
        }
    }
    st_rt_trace_suspend();
    st_kprog *p = st_fuse_lower(g, NULL);
    void *h = p ? be->compile(be, p->kernels, p->nkernels) : NULL;
    st_tensor **vals = h ? calloc((size_t)(p->graph->nvalues > 0
                                               ? p->graph->nvalues : 1),
                                  sizeof *vals)
                         : NULL;
    st_status s = vals ? ST_OK : st_err_kind() != ST_OK
                                     ? st_err_kind()
                                     : st_err(ST_ERR_MEMORY, "_run_graph: "
                                              "out of memory");
    if (s == ST_OK) {
        const st_graph *pg = p->graph;
        for (Py_ssize_t k = 0; k < n; k++) {
            st_tensor *t = st_fe_unwrap(PySequence_Fast_GET_ITEM(is, k));
            st_tensor_incref(t);
            vals[pg->inputs[k]] = t;
        }
        Py_BEGIN_ALLOW_THREADS
        s = st_rt_exec(p, be, h, vals);
        Py_END_ALLOW_THREADS
    }
    st_rt_trace_resume();
    Py_DECREF(is);
    PyObject *r = NULL;
    if (s == ST_OK) {
        const st_graph *pg = p->graph;
        r = PyTuple_New(pg->noutputs);
        for (int k = 0; r && k < pg->noutputs; k++) {
            st_tensor *t = vals[pg->outputs[k]];
            if (!t) {
                st_err(ST_ERR_RUNTIME, "_run_graph: output %d was not "
                       "computed", k);
                Py_CLEAR(r);
                st_fe_raise();
                break;
            }
            st_tensor_incref(t);
            PyObject *o = st_fe_wrap(t);
            if (!o) {
                Py_CLEAR(r);
                break;
            }
            PyTuple_SET_ITEM(r, k, o);
        }
    } else {
        st_fe_raise();
    }
    if (vals)
        for (int v = 0; v < p->graph->nvalues; v++)
            st_tensor_decref(vals[v]);
    free(vals);
    if (h)
        be->release(be, h);
    st_kprog_free(p);
    return r;
}

static PyMethodDef trace_methods[] = {
    {"_trace_begin", trace_begin, METH_NOARGS,
     "_trace_begin(): start capturing eager ops and views on this thread"},
    {"_trace_end", (PyCFunction)(void (*)(void))trace_end,
     METH_VARARGS | METH_KEYWORDS,
     "_trace_end(outputs, candidates=()) -> (graph, inputs)"},
    {"_trace_abort", trace_abort, METH_NOARGS, "_trace_abort(): discard"},
    {"_trace_active", trace_active, METH_NOARGS, "_trace_active() -> bool"},
    {"_trace_constant", trace_constant, METH_O,
     "_trace_constant(t) -> t: a tensor just built from Python numbers is a constant of the trace"},
    {"_trace_fail", trace_fail, METH_O,
     "_trace_fail(reason): fail the active trace (a graph break at the call)"},
    {"_graph_print", graph_print, METH_O, "_graph_print(graph) -> str"},
    {"_graph_inputs", graph_inputs, METH_O,
     "_graph_inputs(graph) -> ((value_id, is_param), ...)"},
    {"_graph_outputs", graph_outputs, METH_O,
     "_graph_outputs(graph) -> (value_id, ...)"},
    {"_backward_graph", backward_graph, METH_VARARGS,
     "_backward_graph(graph, wrt_value_ids) -> (bwd, saved_ids, fwd_saving)"},
    {"_run_graph", (PyCFunction)(void (*)(void))run_graph,
     METH_VARARGS | METH_KEYWORDS,
     "_run_graph(graph, inputs, backend='interp') -> outputs"},
    {NULL, NULL, 0, NULL},
};

int st_fe_init_trace(PyObject *m)
{
    return PyModule_AddFunctions(m, trace_methods);
}
