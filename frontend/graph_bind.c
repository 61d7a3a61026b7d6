/* graph_bind.c - StatementIR graphs from Python: _C.Graph (build a graph:
 * inputs, constants, statements, outputs; print and hash it) and
 * _C.CompiledGraph (lowered by fusion/, compiled by a chosen backend, run
 * with its memory plan; the plan's per-kernel estimate beside the
 * allocator's measured bytes). The path the frontend's compiled frames
 * take, usable on its own. run() may write results into given tensors
 * (out=, also into an input when that is safe: see check_alias) and take
 * this run's values of the graph's constants (consts=, kernel params, so
 * the kernels are not rebuilt: symtrace/optim/_fused.py's update). */
#include "st_fe.h"

/* ---------------- Graph ---------------- */
typedef struct {
    PyObject_HEAD
    st_graph *g;        /* owned unless `owner` holds it */
    PyObject *owner;    /* a "symtrace.graph" capsule that owns g, or NULL */
} graph_obj;

static PyTypeObject graph_type, compiled_type;

static void graph_dealloc(PyObject *self) {
    graph_obj *o = (graph_obj *)self;
    if (o->owner) Py_DECREF(o->owner);
    else st_ir_graph_free(o->g);
    Py_TYPE(self)->tp_free(self);
}

/* Graph() or Graph(capsule): a new graph, or one made elsewhere (a trace). */
static PyObject *graph_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    PyObject *cap = NULL;
    if (!PyArg_ParseTuple(args, "|O:Graph", &cap)) return NULL;
    graph_obj *o = (graph_obj *)tp->tp_alloc(tp, 0);
    if (!o) return NULL;
    if (cap && cap != Py_None) {
        st_graph *g = PyCapsule_GetPointer(cap, "symtrace.graph");
        if (!g) {
            Py_DECREF(o);
            return NULL;
        }
        o->g = g;
        o->owner = cap;
        Py_INCREF(cap);
    } else {
        o->g = st_ir_graph_new();
        if (!o->g) {
            Py_DECREF(o);
            return st_fe_raise();
        }
    }
    return (PyObject *)o;
}

static int check_value(st_graph *g, long v) {
    if (v < 0 || v >= g->nvalues) {
        PyErr_Format(PyExc_IndexError, "no value %ld in the graph (it has %d)", v,
                     g->nvalues);
        return -1;
    }
    return 0;
}

static PyObject *g_input(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"shape", "dtype", "param", NULL};
    PyObject *so, *dto;
    int param = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|p:input", kwlist, &so, &dto, &param))
        return NULL;
    st_meta m;
    memset(&m, 0, sizeof m);
    if (st_fe_parse_shape_seq(so, m.shape, &m.ndim, "Graph.input") ||
        st_fe_parse_dtype(dto, &m.dtype, "Graph.input"))
        return NULL;
    for (int d = 0; d < m.ndim; d++)
        if (m.shape[d] < 0) {
            PyErr_SetString(PyExc_ValueError, "Graph.input: negative size");
            return NULL;
        }
    int v = st_ir_add_input(((graph_obj *)self)->g, &m, param);
    if (v < 0) return st_fe_raise();
    return PyLong_FromLong(v);
}

static PyObject *g_const(PyObject *self, PyObject *args) {
    PyObject *vo, *dto = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:const", &vo, &dto)) return NULL;
    st_operand op;
    if (st_fe_operand(vo, &op, "Graph.const")) return NULL;
    if (op.t) {
        PyErr_SetString(PyExc_TypeError, "Graph.const takes a Python number");
        return NULL;
    }
    st_dtype dt = op.sdtype;
    if (dto != Py_None && st_fe_parse_dtype(dto, &dt, "Graph.const")) return NULL;
    int v = st_ir_add_const(((graph_obj *)self)->g, dt, op.f, op.i);
    if (v < 0) return st_fe_raise();
    return PyLong_FromLong(v);
}

static PyObject *g_op(PyObject *self, PyObject *args) {
    int opid;
    PyObject *ins, *ao = Py_None;
    if (!PyArg_ParseTuple(args, "iO|O:op", &opid, &ins, &ao)) return NULL;
    st_graph *g = ((graph_obj *)self)->g;
    if (opid < 0 || opid >= ST_NOPS) {
        PyErr_Format(PyExc_ValueError, "unknown op id %d", opid);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(ins, "Graph.op: operands must be a sequence of value ids");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > ST_MAX_IN) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "Graph.op: too many operands");
        return NULL;
    }
    int in[ST_MAX_IN];
    for (Py_ssize_t k = 0; k < n; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k));
        if ((v == -1 && PyErr_Occurred()) || check_value(g, v)) {
            Py_DECREF(seq);
            return NULL;
        }
        in[k] = (int)v;
    }
    Py_DECREF(seq);
    st_attrs at;
    if (st_fe_parse_attrs(ao, &at)) return NULL;
    int outs[ST_MAX_OUT];
    int si = st_ir_add_stmt(g, (st_op_id)opid, in, (int)n, &at, outs);
    if (si < 0) return st_fe_raise();
    int nout = g->stmts[si].nout;
    PyObject *t = PyTuple_New(nout);
    for (int k = 0; t && k < nout; k++) PyTuple_SET_ITEM(t, k, PyLong_FromLong(outs[k]));
    return t;
}

static PyObject *g_output(PyObject *self, PyObject *args) {
    st_graph *g = ((graph_obj *)self)->g;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args); k++) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(args, k));
        if ((v == -1 && PyErr_Occurred()) || check_value(g, v)) return NULL;
        st_ir_mark_output(g, (int)v);
    }
    Py_RETURN_NONE;
}

static PyObject *g_str(PyObject *self) {
    char *s = st_ir_print(((graph_obj *)self)->g);
    if (!s) return st_fe_raise();
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    return r;
}

static PyObject *g_hash(PyObject *self, PyObject *args) {
    int ws = 0;
    if (!PyArg_ParseTuple(args, "|p:hash", &ws)) return NULL;
    return PyLong_FromUnsignedLongLong(st_ir_hash(((graph_obj *)self)->g, ws));
}

static PyObject *g_meta(PyObject *self, PyObject *vo) {
    st_graph *g = ((graph_obj *)self)->g;
    long v = PyLong_AsLong(vo);
    if ((v == -1 && PyErr_Occurred()) || check_value(g, v)) return NULL;
    const st_meta *m = &g->values[v].meta;
    PyObject *shape = st_fe_shape_tuple(m->shape, m->ndim);
    PyObject *dt = st_fe_dtype_obj(m->dtype);
    if (!shape) return NULL;
    Py_XINCREF(dt);
    return Py_BuildValue("(NN)", shape, dt);
}

static PyObject *ids_tuple(const int *ids, int n) {
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t && k < n; k++) PyTuple_SET_ITEM(t, k, PyLong_FromLong(ids[k]));
    return t;
}
static PyObject *g_inputs(PyObject *self, void *c) {
    st_graph *g = ((graph_obj *)self)->g;
    return ids_tuple(g->inputs, g->ninputs);
}
static PyObject *g_outputs(PyObject *self, void *c) {
    st_graph *g = ((graph_obj *)self)->g;
    return ids_tuple(g->outputs, g->noutputs);
}
static PyObject *g_capsule(PyObject *self, void *c) {
    graph_obj *o = (graph_obj *)self;
    if (!o->owner) {
        PyErr_SetString(PyExc_AttributeError,
                        "this graph was built in Python and has no capsule");
        return NULL;
    }
    Py_INCREF(o->owner);
    return o->owner;
}

static PyObject *g_nstmts(PyObject *self, void *c) {
    return PyLong_FromLong(((graph_obj *)self)->g->nstmts);
}

static PyObject *g_compile(PyObject *self, PyObject *args, PyObject *kw);

static PyMethodDef graph_methods[] = {
    {"input", (PyCFunction)(void (*)(void))g_input, METH_VARARGS | METH_KEYWORDS,
     "input(shape, dtype, param=False) -> value id"},
    {"const", g_const, METH_VARARGS, "const(number, dtype=None) -> value id"},
    {"op", g_op, METH_VARARGS, "op(op_id, operand_ids, attrs=None) -> result ids"},
    {"output", g_output, METH_VARARGS, "output(*value_ids)"},
    {"hash", g_hash, METH_VARARGS, "hash(with_sizes=False): xxHash of the structure"},
    {"meta", g_meta, METH_O, "meta(value_id) -> (shape, dtype)"},
    {"compile", (PyCFunction)(void (*)(void))g_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(backend='llvm' when built, else 'interp') -> CompiledGraph"},
    {NULL},
};
static PyGetSetDef graph_getset[] = {
    {"inputs", g_inputs, NULL, "input value ids", NULL},
    {"outputs", g_outputs, NULL, "output value ids", NULL},
    {"num_statements", g_nstmts, NULL, "statement count", NULL},
    {"capsule", g_capsule, NULL, "the \"symtrace.graph\" capsule of a traced graph", NULL},
    {NULL},
};

static PyTypeObject graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C.Graph",
    .tp_basicsize = sizeof(graph_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A StatementIR graph (SSA): inputs, statements, outputs.",
    .tp_new = graph_new,
    .tp_dealloc = graph_dealloc,
    .tp_str = g_str,
    .tp_repr = g_str,
    .tp_methods = graph_methods,
    .tp_getset = graph_getset,
};

/* ---------------- CompiledGraph ---------------- */
typedef struct {
    PyObject_HEAD
    st_kprog *prog;
    st_backend *be;
    void *compiled;
    PyObject *graph;    /* the source Graph (kept for printing) */
    /* cmap[v]: the program graph's value of source constant v, else -1
     * (decomposition and view folding copy the constants first, in order) */
    int *cmap;
    int ncmap;
} compiled_obj;

static void compiled_dealloc(PyObject *self) {
    compiled_obj *o = (compiled_obj *)self;
    if (o->compiled) o->be->release(o->be, o->compiled);
    st_kprog_free(o->prog);
    PyMem_Free(o->cmap);
    Py_XDECREF(o->graph);
    Py_TYPE(self)->tp_free(self);
}

static int map_consts(compiled_obj *o, const st_graph *g);

static PyObject *g_compile(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"backend", NULL};
    /* the default CPU backend: llvm when this build has it (interp is the
     * oracle) */
    const char *bname = st_backend_get("llvm") ? "llvm" : "interp";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|s:compile", kwlist, &bname)) return NULL;
    st_graph *g = ((graph_obj *)self)->g;
    if (g->noutputs == 0) {
        PyErr_SetString(PyExc_ValueError, "compile: the graph has no outputs");
        return NULL;
    }
    if (st_ir_verify(g) != ST_OK) return st_fe_raise();
    st_backend *be = st_backend_get(bname);
    if (!be) {
        PyErr_Format(PyExc_ValueError, "compile: no backend named '%s' in this build", bname);
        return NULL;
    }
    compiled_obj *o = PyObject_New(compiled_obj, &compiled_type);
    if (!o) return NULL;
    o->prog = NULL;
    o->compiled = NULL;
    o->cmap = NULL;
    o->ncmap = 0;
    o->be = be;
    o->graph = self;
    Py_INCREF(self);
    o->prog = st_fuse_lower(g, NULL);
    if (!o->prog) {
        Py_DECREF(o);
        return st_fe_raise();
    }
    o->compiled = be->compile(be, o->prog->kernels, o->prog->nkernels);
    if (!o->compiled) {
        Py_DECREF(o);
        return st_fe_raise();
    }
    if (map_consts(o, g)) {
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

/* The k-th constant of the source graph is the k-th of the program graph
 * (fusion/decompose.c and viewfold.c copy them first, in order). */
static int map_consts(compiled_obj *o, const st_graph *g) {
    const st_graph *pg = o->prog->graph;
    o->cmap = PyMem_Malloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
    if (!o->cmap) {
        PyErr_NoMemory();
        return -1;
    }
    o->ncmap = g->nvalues;
    for (int v = 0; v < g->nvalues; v++) o->cmap[v] = -1;
    int pv = 0;
    for (int v = 0; v < g->nvalues; v++) {
        if (g->values[v].kind != ST_VAL_CONST) continue;
        while (pv < pg->nvalues && pg->values[pv].kind != ST_VAL_CONST) pv++;
        if (pv >= pg->nvalues) break;
        if (pg->values[pv].meta.dtype == g->values[v].meta.dtype) o->cmap[v] = pv;
        pv++;
    }
    return 0;
}

/* Binds the inputs' metas and re-infers: what a plan or a run needs. All
 * inputs are checked before a meta changes; a failed re-inference leaves
 * the metas poisoned (the next call infers again), as runtime/exec.c does. */
static int bind(compiled_obj *o, PyObject *args, st_tensor ***vals_out) {
    st_graph *g = o->prog->graph;
    if (PyTuple_GET_SIZE(args) != g->ninputs) {
        PyErr_Format(PyExc_TypeError, "the graph takes %d inputs, %zd given", g->ninputs,
                     PyTuple_GET_SIZE(args));
        return -1;
    }
    for (int k = 0; k < g->ninputs; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        if (!st_fe_is_tensor(a)) {
            PyErr_Format(PyExc_TypeError, "input %d must be a Tensor, got %s", k,
                         Py_TYPE(a)->tp_name);
            return -1;
        }
        st_tensor *t = st_fe_unwrap(a);
        const st_meta *m = &g->values[g->inputs[k]].meta;
        if (st_tensor_device(t)->type != o->be->device) {
            PyErr_Format(PyExc_ValueError, "input %d is on %s, the graph was compiled for "
                         "backend %s", k, st_tensor_device(t)->name, o->be->name);
            return -1;
        }
        if (t->dtype != m->dtype || t->ndim != m->ndim) {
            char a1[128], a2[128];
            PyErr_Format(PyExc_TypeError, "input %d: the graph expects %s%s, got %s%s", k,
                         st_dtype_name(m->dtype), st_shape_str(m->shape, m->ndim, a1, sizeof a1),
                         st_dtype_name(t->dtype), st_shape_str(t->shape, t->ndim, a2, sizeof a2));
            return -1;
        }
    }
    st_tensor **vals = PyMem_Calloc((size_t)g->nvalues, sizeof *vals);
    if (!vals) {
        PyErr_NoMemory();
        return -1;
    }
    bool changed = false;
    for (int k = 0; k < g->ninputs; k++) {
        st_tensor *t = st_fe_unwrap(PyTuple_GET_ITEM(args, k));
        st_meta *m = &g->values[g->inputs[k]].meta;
        if (memcmp(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim)) {
            memcpy(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
            changed = true;
        }
        st_tensor_incref(t);
        vals[g->inputs[k]] = t;
    }
    if (changed && st_ir_reinfer(g) != ST_OK) {
        for (int k = 0; k < g->ninputs; k++) {
            st_meta *m = &g->values[g->inputs[k]].meta;
            for (int d = 0; d < m->ndim; d++) m->shape[d] = -1;
        }
        for (int v = 0; v < g->nvalues; v++) st_tensor_decref(vals[v]);
        PyMem_Free(vals);
        st_fe_raise();
        return -1;
    }
    *vals_out = vals;
    return 0;
}

/* The plan for the bound inputs (their real strides), kept by the program
 * per layout (the fused optimizer's update runs the same graph every step);
 * handed back with st_fuse_plan_release. */
static const st_mem_plan *plan_for(compiled_obj *o, st_tensor **vals) {
    const st_graph *g = o->prog->graph;
    const int64_t **strides = PyMem_Malloc(sizeof *strides * (size_t)(g->ninputs ? g->ninputs : 1));
    if (!strides) {
        st_err(ST_ERR_MEMORY, "CompiledGraph: out of memory");
        return NULL;
    }
    for (int k = 0; k < g->ninputs; k++)
        strides[k] = vals[g->inputs[k]] ? vals[g->inputs[k]]->strides : NULL;
    const st_mem_plan *m = st_fuse_plan_acquire(o->prog, strides);
    PyMem_Free(strides);
    return m;
}

static const char *kname(const st_kernel *k, const st_graph *g) {
    return k->kind == ST_K_VIEW ? st_op(g->stmts[k->stmt].op)->name : k->name;
}

/* ---- run(out=...): results written into given tensors ---- */

/* The kernel that stores graph value v (its buffer in *buf), or -1: an
 * input, a constant or the result of a view step. */
static int writer_of(const st_kprog *p, int v, int *buf) {
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW) continue;
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b].is_out && k->bufs[b].value == v) {
                *buf = b;
                return i;
            }
    }
    return -1;
}

static bool same_layout(const st_tensor *a, const st_tensor *b) {
    return a->storage == b->storage && a->offset == b->offset && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) &&
           !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim);
}

/* out[k] (stored by kernel w, buffer wb) is input j's storage. Safe when it
 * is the same contiguous tensor, kernel w reads input j (or any view of
 * it) only at the point it writes (an elementwise load of input j itself
 * with the store's dimmap: every point is read before it is written), and
 * no kernel after w reads it. */
static int check_alias(const st_kprog *p, int k, int w, int wb, int j, const st_tensor *o,
                       const st_tensor *in, bool *al) {
    const st_graph *g = p->graph;
    if (!same_layout(o, in) || !st_tensor_is_contiguous(o)) {
        PyErr_Format(PyExc_ValueError,
                     "run: out[%d] shares storage with input %d but is not the same "
                     "contiguous tensor (same offset, shape and strides)", k, j);
        return -1;
    }
    int jv = g->inputs[j];
    for (int v = 0; v < g->nvalues; v++) al[v] = v == jv;
    const st_kernel *wk = &p->kernels[w];
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *ki = &p->kernels[i];
        if (ki->kind == ST_K_VIEW) { /* a view of the input aliases it too */
            const st_stmt *s = &g->stmts[ki->stmt];
            if (al[s->in[0]]) al[s->out[0]] = true;
            continue;
        }
        for (int b = 0; b < ki->nbufs; b++) {
            const st_kbuf *kb = &ki->bufs[b];
            if (kb->is_out || !al[kb->value] || i < w) continue;
            if (i > w) {
                PyErr_Format(PyExc_ValueError,
                             "run: out[%d] aliases input %d, which kernel %s reads after "
                             "kernel %s has overwritten it", k, j, ki->name, wk->name);
                return -1;
            }
            bool same = wk->kind == ST_K_ELEMENTWISE && kb->value == jv && kb->unravel == 0 &&
                        !memcmp(kb->dimmap, wk->bufs[wb].dimmap, sizeof(int) * (size_t)wk->rank);
            for (int n = 0; same && n < wk->nnodes; n++)
                same = !(wk->nodes[n].kind == ST_KN_LOAD && wk->nodes[n].buf == b &&
                         wk->nodes[n].idx_dim >= 0);
            for (int q = 0; same && q < wk->nstores; q++)
                same = !(wk->stores[q].buf == wb && wk->stores[q].indexed);
            if (!same) {
                PyErr_Format(PyExc_ValueError,
                             "run: out[%d] aliases input %d, which kernel %s reads at other "
                             "points than the one it writes (not an elementwise read of "
                             "the same layout)", k, j, wk->name);
                return -1;
            }
        }
    }
    return 0;
}

/* Checks out= and binds the given tensors (new references) into vals. */
static int bind_out(compiled_obj *o, PyObject *outo, st_tensor **vals, PyObject **given) {
    const st_kprog *p = o->prog;
    const st_graph *g = p->graph;
    PyObject *seq = PySequence_Fast(outo, "run: out= must be a sequence of Tensors or None");
    if (!seq) return -1;
    int rc = -1;
    bool *al = NULL;
    if (PySequence_Fast_GET_SIZE(seq) != g->noutputs) {
        PyErr_Format(PyExc_ValueError, "run: out= has %zd entries, the graph has %d outputs",
                     PySequence_Fast_GET_SIZE(seq), g->noutputs);
        goto done;
    }
    st_device *dev = st_rt_device(o->be->device, 0);
    al = PyMem_Malloc((size_t)(g->nvalues ? g->nvalues : 1));
    if (!al || !dev) {
        if (!al) PyErr_NoMemory();
        else st_fe_raise();
        goto done;
    }
    for (int k = 0; k < g->noutputs; k++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, k);
        if (a == Py_None) continue;
        if (!st_fe_is_tensor(a)) {
            PyErr_Format(PyExc_TypeError, "run: out[%d] must be a Tensor or None, got %s", k,
                         Py_TYPE(a)->tp_name);
            goto done;
        }
        st_tensor *t = st_fe_unwrap(a);
        int v = g->outputs[k];
        const st_meta *m = &g->values[v].meta;
        if (t->dtype != m->dtype) {
            PyErr_Format(PyExc_TypeError, "run: out[%d] is %s, the graph's output %d is %s", k,
                         st_dtype_name(t->dtype), k, st_dtype_name(m->dtype));
            goto done;
        }
        if (t->ndim != m->ndim || memcmp(t->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim)) {
            char a1[128], a2[128];
            PyErr_Format(PyExc_ValueError, "run: out[%d] has shape %s, the graph's output %d "
                         "has shape %s", k, st_shape_str(t->shape, t->ndim, a1, sizeof a1), k,
                         st_shape_str(m->shape, m->ndim, a2, sizeof a2));
            goto done;
        }
        if (st_tensor_device(t) != dev) {
            PyErr_Format(PyExc_ValueError, "run: out[%d] is on %s, the graph runs on %s "
                         "(backend %s)", k, st_tensor_device(t)->name, dev->name, o->be->name);
            goto done;
        }
        if (t->requires_grad && st_ad_grad_enabled()) {
            /* a run records no autograd history (as a leaf's in-place op
             * in eager, refused) */
            PyErr_Format(PyExc_RuntimeError, "run: out[%d] requires grad and a run records no "
                         "autograd history; write into it under no_grad", k);
            goto done;
        }
        int wb = -1, w = writer_of(p, v, &wb);
        if (w < 0) {
            PyErr_Format(PyExc_ValueError, "run: the graph's output %d is not computed by a "
                         "kernel (an input, a constant or a view), so it cannot be written "
                         "into out[%d]", k, k);
            goto done;
        }
        for (int j = 0; j < k; j++) {
            if (!given[j]) continue;
            if (g->outputs[j] == v || st_fe_unwrap(given[j])->storage == t->storage) {
                PyErr_Format(PyExc_ValueError, "run: out[%d] and out[%d] %s", j, k,
                             g->outputs[j] == v ? "are the same graph output"
                                                : "share storage");
                goto done;
            }
        }
        for (int j = 0; j < g->ninputs; j++) {
            const st_tensor *in = vals[g->inputs[j]];
            if (in && in->storage == t->storage && check_alias(p, k, w, wb, j, t, in, al))
                goto done;
        }
        given[k] = a;
    }
    for (int k = 0; k < g->noutputs; k++) {
        if (!given[k]) continue;
        st_tensor *t = st_fe_unwrap(given[k]);
        st_tensor_incref(t);
        vals[g->outputs[k]] = t;
    }
    rc = 0;
done:
    PyMem_Free(al);
    Py_DECREF(seq);
    if (rc)
        for (int k = 0; k < g->noutputs; k++) given[k] = NULL;
    return rc;
}

/* consts={source constant id: number}: this run's values (restored after). */
typedef struct { int v; double f; int64_t i; } const_save;

static int bind_consts(compiled_obj *o, PyObject *co, const_save **saved, int *nsaved) {
    if (!PyDict_Check(co)) {
        PyErr_SetString(PyExc_TypeError, "run: consts= must be a dict {constant id: number}");
        return -1;
    }
    st_graph *pg = o->prog->graph;
    Py_ssize_t n = PyDict_Size(co), pos = 0;
    const_save *sv = PyMem_Malloc(sizeof *sv * (size_t)(n ? n : 1));
    if (!sv) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key, *val;
    int ns = 0;
    while (PyDict_Next(co, &pos, &key, &val)) {
        long v = PyLong_AsLong(key);
        if (v == -1 && PyErr_Occurred()) break;
        if (v < 0 || v >= o->ncmap || o->cmap[v] < 0) {
            PyErr_Format(PyExc_ValueError, "run: consts: value %ld is not a constant of the "
                         "graph", v);
            break;
        }
        st_operand op;
        if (st_fe_operand(val, &op, "run: consts") ) break;
        if (op.t) {
            PyErr_Format(PyExc_TypeError, "run: consts: constant %ld takes a Python number", v);
            break;
        }
        st_value *pv = &pg->values[o->cmap[v]];
        sv[ns].v = o->cmap[v];
        sv[ns].f = pv->fconst;
        sv[ns].i = pv->iconst;
        ns++;
        pv->fconst = op.sdtype == ST_FLOAT64 ? op.f : (double)op.i;
        pv->iconst = op.sdtype == ST_FLOAT64 ? (int64_t)op.f : op.i;
    }
    *saved = sv;
    *nsaved = ns;
    return PyErr_Occurred() ? -1 : 0;
}

static void restore_consts(compiled_obj *o, const_save *sv, int ns) {
    st_graph *pg = o->prog->graph;
    for (int k = ns - 1; k >= 0; k--) {
        pg->values[sv[k].v].fconst = sv[k].f;
        pg->values[sv[k].v].iconst = sv[k].i;
    }
    PyMem_Free(sv);
}

/* run(*tensors, out=None, consts=None, trace=False) -> outputs tuple, or
 * (outputs, rows) with rows = [(kernel, estimated_bytes, measured_bytes)]
 * when trace. out: one entry per output, a Tensor to write that output
 * into (returned as itself) or None. consts: {constant id: number}. */
static PyObject *c_run(PyObject *self, PyObject *args, PyObject *kw) {
    compiled_obj *o = (compiled_obj *)self;
    int want_trace = 0;
    PyObject *outo = NULL, *co = NULL;
    if (kw) {
        PyObject *tr = PyDict_GetItemString(kw, "trace");
        if (tr && (want_trace = PyObject_IsTrue(tr)) < 0) return NULL;
        outo = PyDict_GetItemString(kw, "out");
        co = PyDict_GetItemString(kw, "consts");
        if (PyDict_Size(kw) > !!tr + !!outo + !!co) {
            PyErr_SetString(PyExc_TypeError, "run() takes only the keywords out, consts and trace");
            return NULL;
        }
        if (outo == Py_None) outo = NULL;
        if (co == Py_None) co = NULL;
    }
    st_graph *g = o->prog->graph;
    st_tensor **vals;
    if (bind(o, args, &vals)) return NULL;
    PyObject *given_stack[16] = {NULL}, **given = given_stack;
    const_save *saved = NULL;
    int nsaved = 0;
    const st_mem_plan *plan = NULL;
    int64_t *trace = NULL;
    PyObject *res = NULL;
    st_alloc_stats before;
    if (g->noutputs > 16 && !(given = PyMem_Calloc((size_t)g->noutputs, sizeof *given))) {
        PyErr_NoMemory();
        given = given_stack;
        goto done;
    }
    if (outo && bind_out(o, outo, vals, given)) goto done;
    if (co && bind_consts(o, co, &saved, &nsaved)) goto done;
    if (st_rt_trace_active()) {
        /* the run is not traced: an active trace (a frame being translated)
         * fails, and the tensors written are backed up so that an aborted
         * trace puts them back */
        for (int k = 0; k < g->noutputs; k++)
            if (given[k]) st_rt_trace_will_write(st_fe_unwrap(given[k]));
        st_rt_trace_fail("a CompiledGraph ran inside a trace");
    }
    plan = plan_for(o, vals);
    trace = want_trace ? PyMem_Calloc((size_t)(o->prog->nkernels + 1), sizeof *trace) : NULL;
    st_alloc_stats_get(st_alloc_for(st_rt_device(o->be->device, 0)), &before);
    if (!plan || (want_trace && !trace)) {
        if (plan) PyErr_NoMemory();
        else st_fe_raise();
        goto done;
    }
    if (st_rt_exec_planned(o->prog, o->be, o->compiled, vals, plan, trace) != ST_OK) {
        st_fe_raise();
        goto done;
    }
    res = PyTuple_New(g->noutputs);
    for (int k = 0; res && k < g->noutputs; k++) {
        if (given[k]) {
            Py_INCREF(given[k]);
            PyTuple_SET_ITEM(res, k, given[k]);
            continue;
        }
        st_tensor *t = vals[g->outputs[k]];
        st_tensor_incref(t);
        PyObject *w = st_fe_wrap(t);
        if (!w) Py_CLEAR(res);
        else PyTuple_SET_ITEM(res, k, w);
    }
    if (res && want_trace) {
        PyObject *rows = PyList_New(0);
        for (int i = 0; rows && i < o->prog->nkernels; i++) {
            /* every column excludes the inputs: live (liveness), estimated
             * (what the runtime holds), measured (allocator - before run) */
            PyObject *row = Py_BuildValue("(sLLL)", kname(&o->prog->kernels[i], g),
                                          (long long)(plan->live[i] - plan->input_bytes),
                                          (long long)(plan->resident[i] - plan->input_bytes),
                                          (long long)(trace[i] - before.requested_bytes));
            if (!row || PyList_Append(rows, row)) Py_CLEAR(rows);
            Py_XDECREF(row);
        }
        PyObject *pair = rows ? Py_BuildValue("(NN)", res, rows) : NULL;
        if (!pair) Py_DECREF(res);
        res = pair;
    }
done:
    if (saved) restore_consts(o, saved, nsaved);
    if (given != given_stack) PyMem_Free(given);
    for (int v = 0; v < g->nvalues; v++) st_tensor_decref(vals[v]);
    PyMem_Free(vals);
    PyMem_Free(trace);
    st_fuse_plan_release(o->prog, plan);
    return res;
}

/* plan(*tensors) -> dict: the static estimate for these input sizes. */
static PyObject *c_plan(PyObject *self, PyObject *args) {
    compiled_obj *o = (compiled_obj *)self;
    st_tensor **vals;
    if (bind(o, args, &vals)) return NULL;
    st_graph *g = o->prog->graph;
    const st_mem_plan *m = plan_for(o, vals);
    for (int v = 0; v < g->nvalues; v++) st_tensor_decref(vals[v]);
    PyMem_Free(vals);
    if (!m) return st_fe_raise();
    PyObject *rows = PyList_New(0);
    for (int i = 0; rows && i < o->prog->nkernels; i++) {
        PyObject *row = Py_BuildValue("(sLL)", kname(&o->prog->kernels[i], g),
                                      (long long)m->live[i], (long long)m->resident[i]);
        if (!row || PyList_Append(rows, row)) Py_CLEAR(rows);
        Py_XDECREF(row);
    }
    PyObject *r = rows ? Py_BuildValue("{s:N,s:L,s:L,s:L,s:L,s:L}", "kernels", rows,
                                       "input_bytes", (long long)m->input_bytes,
                                       "output_bytes", (long long)m->output_bytes,
                                       "arena_bytes", (long long)m->arena_bytes,
                                       "peak_live_bytes", (long long)m->peak_live,
                                       "peak_bytes", (long long)m->peak_resident)
                       : NULL;
    st_fuse_plan_release(o->prog, m);
    return r;
}

static PyObject *c_kernel_ir(PyObject *self, PyObject *a) {
    compiled_obj *o = (compiled_obj *)self;
    PyObject *parts = PyList_New(0);
    for (int i = 0; parts && i < o->prog->nkernels; i++) {
        char *s = st_kernel_print(&o->prog->kernels[i]);
        PyObject *u = s ? PyUnicode_FromString(s) : NULL;
        free(s);
        if (!u || PyList_Append(parts, u)) Py_CLEAR(parts);
        Py_XDECREF(u);
    }
    if (!parts) return NULL;
    PyObject *sep = PyUnicode_FromString("\n");
    PyObject *r = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    return r;
}

static PyObject *c_num_kernels(PyObject *self, void *c) {
    compiled_obj *o = (compiled_obj *)self;
    int n = 0;
    for (int i = 0; i < o->prog->nkernels; i++) n += o->prog->kernels[i].kind != ST_K_VIEW;
    return PyLong_FromLong(n);
}

static PyObject *c_kernel_kinds(PyObject *self, void *c) {
    compiled_obj *o = (compiled_obj *)self;
    static const char *kinds[] = {"elementwise", "reduce", "matmul", "view"};
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < o->prog->nkernels; i++) {
        PyObject *s = PyUnicode_FromString(kinds[o->prog->kernels[i].kind]);
        if (!s || PyList_Append(l, s)) Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}

static PyObject *c_graph_str(PyObject *self, void *c) {
    char *s = st_ir_print(((compiled_obj *)self)->prog->graph);
    if (!s) return st_fe_raise();
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    return r;
}

static PyObject *c_backend(PyObject *self, void *c) {
    return PyUnicode_FromString(((compiled_obj *)self)->be->name);
}

static PyMethodDef compiled_methods[] = {
    {"run", (PyCFunction)(void (*)(void))c_run, METH_VARARGS | METH_KEYWORDS,
     "run(*inputs, out=None, consts=None, trace=False) -> outputs (and the "
     "per-kernel memory rows); out: a Tensor (or None) per output to write it "
     "into; consts: {constant id: number} for this run"},
    {"plan", c_plan, METH_VARARGS, "plan(*inputs) -> the memory estimate"},
    {"kernel_ir", c_kernel_ir, METH_NOARGS, "the kernels in kernel IR, as text"},
    {NULL},
};
static PyGetSetDef compiled_getset[] = {
    {"num_kernels", c_num_kernels, NULL, "kernels that run code (views excluded)", NULL},
    {"kernel_kinds", c_kernel_kinds, NULL, "kind of every step", NULL},
    {"lowered_graph", c_graph_str, NULL, "the decomposed graph the kernels run", NULL},
    {"backend", c_backend, NULL, "backend name", NULL},
    {NULL},
};

static PyTypeObject compiled_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C.CompiledGraph",
    .tp_basicsize = sizeof(compiled_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A graph lowered into kernels and compiled by one backend.",
    .tp_dealloc = compiled_dealloc,
    .tp_methods = compiled_methods,
    .tp_getset = compiled_getset,
};

/* ---------------- fusion knobs (symtrace.config) ---------------- */
static PyObject *f_fuse_config(PyObject *m, PyObject *args) {
    const char *name = NULL;
    PyObject *val = NULL;
    if (!PyArg_ParseTuple(args, "|sO:_fuse_config", &name, &val)) return NULL;
    st_fuse_options *o = st_fuse_config();
    struct { const char *n; int *p; } f[] = {
        {"fusion", &o->fusion}, {"fuse_reductions", &o->fuse_reductions},
        {"fuse_matmul_epilogue", &o->fuse_matmul_epilogue},
        {"max_fused_ops", &o->max_fused_ops},
    };
    int nf = (int)(sizeof f / sizeof f[0]);
    if (!name) {
        PyObject *d = PyDict_New();
        for (int k = 0; d && k < nf; k++) {
            PyObject *v = PyLong_FromLong(*f[k].p);
            if (!v || PyDict_SetItemString(d, f[k].n, v)) Py_CLEAR(d);
            Py_XDECREF(v);
        }
        return d;
    }
    for (int k = 0; k < nf; k++) {
        if (strcmp(name, f[k].n)) continue;
        if (val) {
            long x = PyLong_AsLong(val);
            if (x == -1 && PyErr_Occurred()) return NULL;
            if (x < 0) {
                PyErr_Format(PyExc_ValueError, "config.%s must be >= 0", name);
                return NULL;
            }
            *f[k].p = (int)x;
            st_rt_kcache_clear(); /* cached eager programs used the old setting */
        }
        return PyLong_FromLong(*f[k].p);
    }
    PyErr_Format(PyExc_AttributeError, "no fusion option '%s'", name);
    return NULL;
}

/* _plan_stats() -> {"hits", "made"}: memory plans of compiled programs
 * found kept for their layout, and made (fusion/plancache.c). */
static PyObject *f_plan_stats(PyObject *self, PyObject *noargs) {
    int64_t hits, made;
    st_fuse_plan_cache_stats(&hits, &made);
    return Py_BuildValue("{s:L,s:L}", "hits", (long long)hits, "made", (long long)made);
}

/* _fusion_stats(reset=False) -> {"programs", "fused", "fallbacks",
 * "last_fallback"}: fused lowering's counts (fusion/fuse.c); a fallback is
 * a group that did not fit one kernel and was lowered a kernel per member. */
static PyObject *f_fusion_stats(PyObject *self, PyObject *args) {
    int reset = 0;
    if (!PyArg_ParseTuple(args, "|p:_fusion_stats", &reset)) return NULL;
    st_fuse_stats s;
    st_fuse_stats_get(&s, reset);
    return Py_BuildValue("{s:L,s:L,s:L,s:s}", "programs", (long long)s.programs,
                         "fused", (long long)s.fused, "fallbacks", (long long)s.fallbacks,
                         "last_fallback", s.last_fallback);
}

static PyMethodDef graph_module_methods[] = {
    {"_fusion_stats", f_fusion_stats, METH_VARARGS,
     "_fusion_stats(reset=False) -> counts of fused groups and of fallbacks"},
    {"_plan_stats", f_plan_stats, METH_NOARGS, "memory plans kept per layout: hits and made"},
    {"_fuse_config", f_fuse_config, METH_VARARGS,
     "_fuse_config() -> dict; _fuse_config(name) -> value; _fuse_config(name, value)"},
    {NULL},
};

int st_fe_init_graph(PyObject *m) {
    if (PyType_Ready(&graph_type) < 0 || PyType_Ready(&compiled_type) < 0) return -1;
    Py_INCREF(&graph_type);
    Py_INCREF(&compiled_type);
    if (PyModule_AddObject(m, "Graph", (PyObject *)&graph_type) < 0 ||
        PyModule_AddObject(m, "CompiledGraph", (PyObject *)&compiled_type) < 0)
        return -1;
    return PyModule_AddFunctions(m, graph_module_methods);
}
