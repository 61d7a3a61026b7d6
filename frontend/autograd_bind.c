/* autograd_bind.c - Python bindings of the autograd tape: the Tensor's
 * autograd attributes (requires_grad, grad, grad_fn, is_leaf), the Node
 * type behind grad_fn, grad mode, backward and grad, _make_subclass (for
 * nn.Parameter), custom nodes whose backward is a Python callable
 * (autograd.Function / PyLayer), the gradient hooks' owner
 * (Tensor.register_hook, retain_grad) and the saved-tensor hooks' owner
 * (autograd.graph.saved_tensors_hooks), and anomaly mode's owner
 * (autograd.detect_anomaly: its tracebacks, NaN check and report are
 * Python callables that symtrace.autograd.anomaly_mode registers). */
#include "st_fe.h"
#include "st_fe_tr.h"

/* ---------------- Node: what tensor.grad_fn returns ----------------
 * A custom Function's node is its ctx, as torch's: the ctx is an instance
 * of a Python subclass of Node (symtrace.autograd.function), which the
 * tape node owns as its ctx and which points back at the node without
 * owning it (weak; cleared when the node goes). */
typedef struct {
    PyObject_HEAD
    st_ad_node *node;   /* owned (not when weak); NULL for an AccumulateGrad */
    st_tensor *leaf;    /* owned; the leaf of an AccumulateGrad */
    int weak;           /* a custom Function's ctx: the node owns it */
} node_obj;

static PyTypeObject node_type;

/* One wrapper per op node while it lives (y.grad_fn is y.grad_fn, as
 * torch); an AccumulateGrad stand-in (leaf) is made each time. */
static PyObject *wrap_node(st_ad_node *n, st_tensor *leaf) {
    if (!n && !leaf) Py_RETURN_NONE;
    if (n && st_ad_node_pyobj(n))
        return Py_NewRef((PyObject *)st_ad_node_pyobj(n));
    node_obj *o = PyObject_New(node_obj, &node_type);
    if (!o) return NULL;
    o->node = n;
    o->leaf = leaf;
    o->weak = 0;
    if (n) {
        st_ad_node_incref(n);
        st_ad_node_set_pyobj(n, o);
    }
    if (leaf) st_tensor_incref(leaf);
    return (PyObject *)o;
}

/* Node() from Python: a custom Function's ctx before its node exists. */
static PyObject *node_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    node_obj *o = (node_obj *)tp->tp_alloc(tp, 0);
    if (o) o->weak = 1;
    return (PyObject *)o;
}

static void node_dealloc(PyObject *self) {
    node_obj *o = (node_obj *)self;
    if (o->node && st_ad_node_pyobj(o->node) == self) st_ad_node_set_pyobj(o->node, NULL);
    if (o->node && !o->weak) st_ad_node_decref(o->node);
    st_tensor_decref(o->leaf);
    Py_TYPE(self)->tp_free(self);
}

static const char *node_name_of(PyObject *self) {
    node_obj *o = (node_obj *)self;
    if (o->node) return st_ad_node_name(o->node);
    return o->leaf || !o->weak ? "AccumulateGrad" : Py_TYPE(self)->tp_name;
}

static PyObject *node_name(PyObject *self, PyObject *a) {
    return PyUnicode_FromString(node_name_of(self));
}

static PyObject *node_repr(PyObject *self) {
    return PyUnicode_FromFormat("<%s object at %p>", node_name_of(self), self);
}

static PyObject *node_next_functions(PyObject *self, void *c) {
    node_obj *o = (node_obj *)self;
    if (!o->node) return PyTuple_New(0);
    int n = st_ad_node_num_inputs(o->node);
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int k = 0; k < n; k++) {
        st_ad_node *nx;
        st_tensor *leaf;
        st_ad_node_next(o->node, k, &nx, &leaf);
        PyObject *w = wrap_node(nx, leaf);
        PyObject *pair = w ? Py_BuildValue("(Ni)", w, 0) : NULL;
        if (!pair) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, pair);
    }
    return t;
}

static PyObject *node_variable(PyObject *self, void *c) {
    node_obj *o = (node_obj *)self;
    if (!o->leaf) {
        PyErr_SetString(PyExc_AttributeError, "only AccumulateGrad has .variable");
        return NULL;
    }
    st_tensor_incref(o->leaf);
    return st_fe_wrap(o->leaf);
}

static PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS, "the node's name, e.g. MulBackward0"},
    {NULL},
};
static PyGetSetDef node_getset[] = {
    {"next_functions", node_next_functions, NULL, "edges to the inputs' nodes", NULL},
    {"variable", node_variable, NULL, "the leaf of an AccumulateGrad", NULL},
    {NULL},
};

static PyTypeObject node_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C.Node",
    .tp_basicsize = sizeof(node_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A node of the autograd tape (tensor.grad_fn).",
    .tp_new = node_new,
    .tp_dealloc = node_dealloc,
    .tp_repr = node_repr,
    .tp_methods = node_methods,
    .tp_getset = node_getset,
};

/* ---------------- Tensor attributes ---------------- */
/* self's tensor, a stale view's history made first (runtime/viewhist.c);
 * NULL with the exception set. */
static st_tensor *fresh(PyObject *self) {
    st_tensor *t = st_fe_unwrap(self);
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK) {
        st_fe_raise();
        return NULL;
    }
    return t;
}

/* As torch's view meta answers: the flag, or a view (taken with grad) of a
 * base that requires grad. A stale view's history is not made for it: a
 * split output whose base was written answers, as torch's, where using it
 * raises. */
static PyObject *get_requires_grad(PyObject *self, void *c) {
    st_tensor *t = st_fe_unwrap(self);
    if (st_ad_view_stale(t))
        return PyBool_FromLong(t->requires_grad ||
                               (t->view_base && t->view_grad && t->view_base->requires_grad));
    return PyBool_FromLong(t->requires_grad);
}

static int set_requires_grad(PyObject *self, PyObject *v, void *c) {
    if (!v) {
        PyErr_SetString(PyExc_TypeError, "cannot delete requires_grad");
        return -1;
    }
    int b = PyObject_IsTrue(v);
    if (b < 0) return -1;
    st_tensor *t = st_fe_unwrap(self);
    if (t->grad_fn) {
        if (b) return 0;
        PyErr_SetString(PyExc_RuntimeError,
                        "you can only change requires_grad flags of leaf variables. "
                        "If you want to use a computed variable in a subgraph that "
                        "doesn't require differentiation use var_no_grad = var.detach().");
        return -1;
    }
    if (b && !st_dtype_is_float(t->dtype)) {
        PyErr_Format(PyExc_RuntimeError,
                     "only Tensors of floating point dtype can require gradients "
                     "(got %s)", st_dtype_name(t->dtype));
        return -1;
    }
    /* a view taken in no_grad mode of a base that requires grad keeps
     * requiring it (torch's answers from the base) */
    if (!b && t->view_nograd && t->view_base && t->view_base->requires_grad) return 0;
    if (t->requires_grad != (bool)b) st_fe_meta_epoch++;   /* compiled guards */
    t->requires_grad = b;
    return 0;
}

static PyObject *get_grad(PyObject *self, void *c) {
    st_tensor *t = fresh(self);
    if (!t) return NULL;
    st_tensor *g = t->grad;
    /* torch's warning (TensorBase::grad), on each read */
    if (!g && t->grad_fn && !t->retains_grad &&
        PyErr_WarnEx(PyExc_UserWarning,
                     "The .grad attribute of a Tensor that is not a leaf Tensor is being "
                     "accessed. Its .grad attribute won't be populated during "
                     "autograd.backward(). If you indeed want the .grad field to be populated "
                     "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
                     "access the non-leaf Tensor by mistake, make sure you access the leaf "
                     "Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more "
                     "information.", 1) < 0)
        return NULL;
    if (!g) Py_RETURN_NONE;
    st_tensor_incref(g);
    return st_fe_wrap(g);
}

static int set_grad(PyObject *self, PyObject *v, void *c) {
    st_tensor *t = st_fe_unwrap(self);
    if (v && v != Py_None) {
        if (!st_fe_is_tensor(v)) {
            PyErr_Format(PyExc_TypeError, "assigned grad expected to be a Tensor or "
                         "None but got %s", Py_TYPE(v)->tp_name);
            return -1;
        }
        st_tensor *g = st_fe_unwrap(v);
        if (g->dtype != t->dtype) {
            PyErr_Format(PyExc_RuntimeError, "assigned grad has data of type %s "
                         "different from the tensor's %s", st_dtype_name(g->dtype),
                         st_dtype_name(t->dtype));
            return -1;
        }
        if (g->ndim != t->ndim || memcmp(g->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim)) {
            char a[128], b[128];
            PyErr_Format(PyExc_RuntimeError, "assigned grad has data of a different "
                         "size: %s, the tensor is %s",
                         st_shape_str(g->shape, g->ndim, a, sizeof a),
                         st_shape_str(t->shape, t->ndim, b, sizeof b));
            return -1;
        }
        st_tensor_incref(g);
        st_tensor *old = t->grad;
        t->grad = g;
        st_tensor_decref(old);
        return 0;
    }
    st_tensor *old = t->grad;
    t->grad = NULL;
    st_tensor_decref(old);
    return 0;
}

static PyObject *get_grad_fn(PyObject *self, void *c) {
    st_tensor *t = fresh(self);
    return t ? wrap_node(t->grad_fn, NULL) : NULL;
}

static PyObject *get_is_leaf(PyObject *self, void *c) {
    st_tensor *t = fresh(self);
    return t ? PyBool_FromLong(t->grad_fn == NULL) : NULL;
}

static PyObject *get_output_nr(PyObject *self, void *c) {
    st_tensor *t = fresh(self);
    return t ? PyLong_FromLong(t->output_nr) : NULL;
}

/* torch's Tensor._base: the tensor a view was made from (its root), else None */
static PyObject *get_base(PyObject *self, void *c) {
    st_tensor *b = st_fe_unwrap(self)->view_base;
    if (!b) Py_RETURN_NONE;
    st_tensor_incref(b);
    return st_fe_wrap(b);
}

static PyObject *get_retains_grad(PyObject *self, void *c) {
    return PyBool_FromLong(st_fe_unwrap(self)->retains_grad);
}

PyGetSetDef st_fe_autograd_getset[] = {
    {"retains_grad", get_retains_grad, NULL, "does backward fill .grad of this non-leaf", NULL},
    {"requires_grad", get_requires_grad, set_requires_grad, "does autograd record ops on it", NULL},
    {"grad", get_grad, set_grad, "the accumulated gradient (leaves)", NULL},
    {"grad_fn", get_grad_fn, NULL, "the node that computed it (None for leaves)", NULL},
    {"is_leaf", get_is_leaf, NULL, "created by the user, not by a recorded op", NULL},
    {"output_nr", get_output_nr, NULL, "which output of grad_fn it is", NULL},
    {"_base", get_base, NULL, "the base tensor of a view (None when not a view)", NULL},
    {NULL},
};

/* ---------------- module functions ---------------- */
static int tensor_list(PyObject *seq, st_tensor ***out, Py_ssize_t *n, bool allow_none,
                       const char *what) {
    PyObject *f = PySequence_Fast(seq, "expected a sequence of tensors");
    if (!f) return -1;
    *n = PySequence_Fast_GET_SIZE(f);
    *out = PyMem_Calloc((size_t)(*n > 0 ? *n : 1), sizeof **out);
    if (!*out) {
        Py_DECREF(f);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < *n; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(f, k);
        if (o == Py_None && allow_none) continue;
        if (!st_fe_is_tensor(o)) {
            PyErr_Format(PyExc_TypeError, "%s: element %zd must be a Tensor, got %s",
                         what, k, Py_TYPE(o)->tp_name);
            PyMem_Free(*out);
            Py_DECREF(f);
            return -1;
        }
        (*out)[k] = st_fe_unwrap(o);
    }
    Py_DECREF(f);
    return 0;
}

/* _C._backward(tensors, grads, retain_graph, create_graph=False) */
static PyObject *f_backward(PyObject *m, PyObject *args) {
    PyObject *ts, *gs;
    int retain, create = 0;
    if (!PyArg_ParseTuple(args, "OOp|p:_backward", &ts, &gs, &retain, &create)) return NULL;
    st_tensor **roots = NULL, **grads = NULL;
    Py_ssize_t n, ng;
    if (tensor_list(ts, &roots, &n, false, "backward")) return NULL;
    if (tensor_list(gs, &grads, &ng, true, "backward: grad_tensors")) {
        PyMem_Free(roots);
        return NULL;
    }
    if (ng != n) {
        PyMem_Free(roots);
        PyMem_Free(grads);
        PyErr_Format(PyExc_RuntimeError, "grad_tensors has %zd entries for %zd tensors", ng, n);
        return NULL;
    }
    st_status s = st_ad_backward_create(roots, grads, (int)n, retain, create);
    PyMem_Free(roots);
    PyMem_Free(grads);
    if (s != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

/* _C._grad(outputs, grad_outputs, inputs, retain_graph, allow_unused,
 * create_graph=False) */
static PyObject *f_grad(PyObject *m, PyObject *args) {
    PyObject *os, *gs, *is;
    int retain, allow_unused, create = 0;
    if (!PyArg_ParseTuple(args, "OOOpp|p:_grad", &os, &gs, &is, &retain, &allow_unused,
                          &create))
        return NULL;
    st_tensor **outs = NULL, **gouts = NULL, **ins = NULL;
    Py_ssize_t no, ngo, ni;
    PyObject *res = NULL;
    if (tensor_list(os, &outs, &no, false, "grad: outputs")) return NULL;
    if (tensor_list(gs, &gouts, &ngo, true, "grad: grad_outputs")) goto out1;
    if (tensor_list(is, &ins, &ni, false, "grad: inputs")) goto out2;
    if (ngo != no) {
        PyErr_Format(PyExc_RuntimeError, "grad_outputs has %zd entries for %zd outputs", ngo, no);
        goto out3;
    }
    st_tensor **results = PyMem_Calloc((size_t)(ni > 0 ? ni : 1), sizeof *results);
    if (!results) {
        PyErr_NoMemory();
        goto out3;
    }
    if (st_ad_grad_create(outs, gouts, (int)no, ins, (int)ni, retain, create, allow_unused,
                          results) != ST_OK) {
        st_fe_raise();
    } else if ((res = PyTuple_New(ni))) {
        for (Py_ssize_t k = 0; k < ni; k++) {
            PyObject *w;
            if (results[k]) {
                w = st_fe_wrap(results[k]);
                results[k] = NULL;
            } else {
                w = Py_None;
                Py_INCREF(w);
            }
            if (!w) {
                Py_CLEAR(res);
                break;
            }
            PyTuple_SET_ITEM(res, k, w);
        }
    }
    for (Py_ssize_t k = 0; k < ni; k++) st_tensor_decref(results[k]);
    PyMem_Free(results);
out3:
    PyMem_Free(ins);
out2:
    PyMem_Free(gouts);
out1:
    PyMem_Free(outs);
    return res;
}

static PyObject *f_set_grad_enabled(PyObject *m, PyObject *o) {
    int b = PyObject_IsTrue(o);
    if (b < 0) return NULL;
    bool prev = st_ad_grad_enabled();
    st_ad_set_grad_enabled(b);
    return PyBool_FromLong(prev);
}

static PyObject *f_is_grad_enabled(PyObject *m, PyObject *a) {
    return PyBool_FromLong(st_ad_grad_enabled());
}

/* inference_mode's state, for the views taken in it (torch's CreationMeta) */
static PyObject *f_set_inference_mode(PyObject *m, PyObject *o) {
    int b = PyObject_IsTrue(o);
    if (b < 0) return NULL;
    bool prev = st_ad_inference_mode();
    st_ad_set_inference_mode(b);
    return PyBool_FromLong(prev);
}

/* autocast (runtime/autocast.c); device types by name, as PyTorch's */
static int parse_devtype(PyObject *o, st_device_type *d) {
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (s && !strcmp(s, "cpu")) *d = ST_DEV_CPU;
    else if (s && !strcmp(s, "cuda")) *d = ST_DEV_CUDA;
    else {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "autocast: device_type must be 'cpu' "
                         "or 'cuda', got %R", o);
        return -1;
    }
    return 0;
}

static PyObject *autocast_tuple(st_device_type d) {
    st_dtype t;
    bool on = st_rt_autocast_enabled(d, &t);
    return Py_BuildValue("(OO)", on ? Py_True : Py_False, st_fe_dtype_obj(t));
}

/* _C._set_autocast(device_type, enabled, dtype) -> the previous (enabled, dtype) */
static PyObject *f_set_autocast(PyObject *m, PyObject *args) {
    PyObject *devo, *eno, *dto;
    if (!PyArg_ParseTuple(args, "OOO:_set_autocast", &devo, &eno, &dto)) return NULL;
    st_device_type d;
    st_dtype t;
    int en = PyObject_IsTrue(eno);
    if (en < 0 || parse_devtype(devo, &d) || st_fe_parse_dtype(dto, &t, "autocast dtype"))
        return NULL;
    PyObject *prev = autocast_tuple(d);
    if (prev && st_rt_autocast_set(d, en, t) != ST_OK) {
        Py_DECREF(prev);
        return st_fe_raise();
    }
    return prev;
}

/* _C._get_autocast(device_type) -> (enabled, dtype) */
static PyObject *f_get_autocast(PyObject *m, PyObject *o) {
    st_device_type d;
    if (parse_devtype(o, &d)) return NULL;
    return autocast_tuple(d);
}

/* _C._autocast_policy(device_type, op_id) -> "none" | "lower" | "fp32" | "promote" */
static PyObject *f_autocast_policy(PyObject *m, PyObject *args) {
    PyObject *devo;
    int op;
    if (!PyArg_ParseTuple(args, "Oi:_autocast_policy", &devo, &op)) return NULL;
    st_device_type d;
    if (parse_devtype(devo, &d)) return NULL;
    if (op < 0 || op >= ST_NOPS) {
        PyErr_Format(PyExc_ValueError, "unknown op id %d", op);
        return NULL;
    }
    return PyUnicode_FromString(st_rt_autocast_policy_name(d, (st_op_id)op));
}

/* _C._make_subclass(cls, tensor, requires_grad): a new leaf of type cls
 * aliasing tensor's storage (nn.Parameter). */
static PyObject *f_make_subclass(PyObject *m, PyObject *args) {
    PyObject *cls, *to;
    int rg = 0;
    if (!PyArg_ParseTuple(args, "OO|p:_make_subclass", &cls, &to, &rg)) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &st_fe_TensorBase)) {
        PyErr_SetString(PyExc_TypeError, "_make_subclass: cls must subclass Tensor");
        return NULL;
    }
    if (!st_fe_is_tensor(to)) {
        PyErr_SetString(PyExc_TypeError, "_make_subclass: expected a Tensor");
        return NULL;
    }
    st_tensor *t = st_fe_unwrap(to);
    if (rg && !st_dtype_is_float(t->dtype)) {
        PyErr_Format(PyExc_RuntimeError, "only Tensors of floating point dtype can "
                     "require gradients (got %s)", st_dtype_name(t->dtype));
        return NULL;
    }
    st_tensor *a = st_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset);
    if (!a) return st_fe_raise();
    a->requires_grad = rg;
    a->is_view = false; /* a Parameter is its own tensor, not a view */
    PyTypeObject *tp = (PyTypeObject *)cls;
    st_fe_tensor_obj *o = (st_fe_tensor_obj *)tp->tp_alloc(tp, 0);
    if (!o) {
        st_tensor_decref(a);
        return NULL;
    }
    o->t = a;
    a->pyobj = o;
    return (PyObject *)o;
}

/* owner.<meth>(*args) */
static PyObject *call_owner(PyObject *owner, const char *meth, PyObject *args) {
    PyObject *f = PyObject_GetAttrString(owner, meth);
    PyObject *r = f ? PyObject_CallObject(f, args) : NULL;
    Py_XDECREF(f);
    return r;
}

/* A custom node's backward calls the Python callable (a custom
 * Function's ctx: its _st_backward method) with the output
 * gradients (Tensor or None) and takes a sequence of one gradient (Tensor
 * or None) per input. */
static st_status py_backward(void *ctx, int nout, st_tensor *const *gout, int nin,
                             st_tensor **gin) {
    PyGILState_STATE gs = PyGILState_Ensure();
    st_status s = ST_OK;
    PyObject *args = PyTuple_New(nout), *res = NULL, *seq = NULL;
    if (!args) goto pyerr;
    for (int k = 0; k < nout; k++) {
        PyObject *w;
        if (gout[k]) {
            st_tensor_incref(gout[k]);
            w = st_fe_wrap(gout[k]);
            if (!w) goto pyerr;
        } else {
            w = Py_None;
            Py_INCREF(w);
        }
        PyTuple_SET_ITEM(args, k, w);
    }
    res = PyObject_TypeCheck((PyObject *)ctx, &node_type)
              ? call_owner((PyObject *)ctx, "_st_backward", args)
              : PyObject_CallObject((PyObject *)ctx, args);
    if (!res) goto pyerr;
    seq = PySequence_Fast(res, "a custom backward must return a sequence");
    if (!seq) goto pyerr;
    if (PySequence_Fast_GET_SIZE(seq) != nin) {
        PyErr_Format(PyExc_RuntimeError, "function backward returned an incorrect "
                     "number of gradients (expected %d, got %zd)", nin,
                     PySequence_Fast_GET_SIZE(seq));
        goto pyerr;
    }
    for (int k = 0; k < nin; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
        if (o == Py_None) continue;
        if (!st_fe_is_tensor(o)) {   /* torch's text */
            PyErr_Format(PyExc_RuntimeError, "expected Variable or None (got %s)",
                         Py_TYPE(o)->tp_name);
            goto pyerr;
        }
        gin[k] = st_fe_unwrap(o);
        st_tensor_incref(gin[k]);
    }
    goto done;
pyerr:
    for (int k = 0; k < nin; k++) {
        st_tensor_decref(gin[k]);
        gin[k] = NULL;
    }
    /* the Python exception stays set; st_fe_raise keeps it */
    s = st_err(ST_ERR_RUNTIME, "custom backward raised");
done:
    Py_XDECREF(seq);
    Py_XDECREF(res);
    Py_XDECREF(args);
    PyGILState_Release(gs);
    return s;
}

static void py_ctx_free(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(gs);
}

/* A custom Function's ctx, owned by its node: the node goes, so the ctx
 * (which may live on) points at it no more. */
static void py_owner_free(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    node_obj *o = ctx;
    o->node = NULL;
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(gs);
}

/* After a backward that did not retain the graph: the ctx drops its saved
 * tensors (ctx._st_free_saved()); an error there cannot be raised. */
static void py_owner_release(void *ctx) {
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *r = PyObject_CallMethod((PyObject *)ctx, "_st_free_saved", NULL);
    if (!r) PyErr_WriteUnraisable((PyObject *)ctx);
    Py_XDECREF(r);
    PyErr_Restore(et, ev, etb);
    PyGILState_Release(gs);
}

/* tp_traverse of tensors: the Python objects (hooks, custom Function
 * backward callables) that t reaches through C references of its own,
 * when the wrapper is t's only holder. A tensor shared with other C
 * holders reports nothing: they keep what it reaches alive anyway. C
 * contexts (compiled regions' nodes) are not Python objects: only what
 * py_ctx_free releases is visited. */
typedef struct {
    visitproc visit;
    void *arg;
} gc_visit;

static int visit_py(void *obj, void (*release)(void *), void *arg) {
    gc_visit *v = arg;
    return release == py_ctx_free || release == py_owner_free
               ? v->visit((PyObject *)obj, v->arg) : 0;
}

int st_fe_visit_owned(st_tensor *t, visitproc visit, void *arg) {
    if (__atomic_load_n(&t->refcount, __ATOMIC_RELAXED) != 1) return 0;
    gc_visit v = {visit, arg};
    return st_ad_visit_owned(t, visit_py, &v);
}

/* _C._custom_node(name, backward, inputs, outputs): inputs are Tensors or
 * None (non-tensor arguments), outputs Tensors or None (not
 * differentiable); the outputs become results of the node. backward is a
 * callable, or a custom Function's ctx (an instance of a Node subclass not
 * yet attached): the node owns it until the node goes, calls its
 * _st_backward, calls its _st_free_saved after a backward that frees the
 * graph (the node may run again: ctx.saved_tensors raises then), and
 * grad_fn is that ctx. */
static PyObject *f_custom_node(PyObject *m, PyObject *args) {
    const char *name;
    PyObject *fn, *is, *os;
    if (!PyArg_ParseTuple(args, "sOOO:_custom_node", &name, &fn, &is, &os)) return NULL;
    if (!PyCallable_Check(fn) && !PyObject_TypeCheck(fn, &node_type)) {
        PyErr_SetString(PyExc_TypeError, "_custom_node: backward must be callable or a ctx");
        return NULL;
    }
    st_tensor **ins = NULL, **outs = NULL;
    Py_ssize_t ni, no;
    if (tensor_list(is, &ins, &ni, true, "custom node inputs")) return NULL;
    if (tensor_list(os, &outs, &no, true, "custom node outputs")) {
        PyMem_Free(ins);
        return NULL;
    }
    bool owner = PyObject_TypeCheck(fn, &node_type);
    if (owner && (((node_obj *)fn)->node || ((node_obj *)fn)->leaf || !((node_obj *)fn)->weak)) {
        PyMem_Free(ins);
        PyMem_Free(outs);
        PyErr_SetString(PyExc_RuntimeError, "_custom_node: this ctx already has a node");
        return NULL;
    }
    Py_INCREF(fn);
    st_ad_node *n = st_ad_custom_node(name, py_backward, fn,
                                      owner ? py_owner_free : py_ctx_free, (int)ni, ins,
                                      (int)no, outs);
    PyMem_Free(ins);
    PyMem_Free(outs);
    if (!n) {
        Py_DECREF(fn);
        return st_fe_raise();
    }
    if (owner) {
        ((node_obj *)fn)->node = n;   /* weak: n owns fn */
        st_ad_node_set_pyobj(n, fn);
        st_ad_node_keep_ctx(n, py_owner_release);
    }
    st_ad_node_decref(n); /* the outputs hold it */
    Py_RETURN_NONE;
}

/* _C._saved_output(t, nr): what a custom Function saved of its output nr,
 * as ctx.saved_tensors hands it back: inside that node's backward under
 * create_graph=True an alias whose history is the node's output nr, else
 * t itself (st_ad_saved_output). */
static PyObject *f_saved_output(PyObject *m, PyObject *args) {
    PyObject *o;
    int nr;
    if (!PyArg_ParseTuple(args, "Oi:_saved_output", &o, &nr)) return NULL;
    if (!st_fe_is_tensor(o)) {
        PyErr_SetString(PyExc_TypeError, "_saved_output: expected a Tensor");
        return NULL;
    }
    st_tensor *t = st_ad_saved_output(st_fe_unwrap(o), nr);
    return t ? st_fe_wrap(t) : st_fe_raise();
}

/* ---------------- gradient hooks ----------------
 * A slot's hooks object is a Python object (symtrace.autograd.hooks):
 * hooks(grad) -> Tensor or None, hooks._post(leaf). */
static st_status py_hook_call(void *hooks, int when, st_tensor *t, st_tensor *g,
                              st_tensor **out) {
    PyGILState_STATE gs = PyGILState_Ensure();
    st_status s = ST_OK;
    st_tensor *w = when == ST_AD_HOOK_GRAD ? g : t;
    st_tensor_incref(w);
    PyObject *arg = st_fe_wrap(w), *res = NULL;
    if (arg)
        res = when == ST_AD_HOOK_GRAD
                  ? PyObject_CallOneArg((PyObject *)hooks, arg)
                  : PyObject_CallMethod((PyObject *)hooks, "_post", "O", arg);
    if (!res) {
        s = st_err(ST_ERR_RUNTIME, "a gradient hook raised"); /* the Python error stays */
    } else if (when == ST_AD_HOOK_GRAD && res != Py_None && res != arg) {
        if (!st_fe_is_tensor(res)) {   /* torch's text */
            PyErr_Format(PyExc_TypeError, "expected Variable, but hook returned '%s'",
                         Py_TYPE(res)->tp_name);
            s = st_err(ST_ERR_RUNTIME, "a gradient hook returned a non-tensor");
        } else {
            *out = st_fe_unwrap(res);
            st_tensor_incref(*out);
        }
    }
    Py_XDECREF(res);
    Py_XDECREF(arg);
    PyGILState_Release(gs);
    return s;
}

/* _C._grad_hooks(t): the hooks object of t's gradient slot, or None. */
static PyObject *f_grad_hooks(PyObject *m, PyObject *o) {
    if (!st_fe_is_tensor(o)) {
        PyErr_SetString(PyExc_TypeError, "_grad_hooks: expected a Tensor");
        return NULL;
    }
    PyObject *h = st_ad_hooks(st_fe_unwrap(o));
    if (!h) Py_RETURN_NONE;
    Py_INCREF(h);
    return h;
}

/* _C._set_grad_hooks(t, hooks): attaches hooks to t's gradient slot. */
static PyObject *f_set_grad_hooks(PyObject *m, PyObject *args) {
    PyObject *o, *h;
    if (!PyArg_ParseTuple(args, "OO:_set_grad_hooks", &o, &h)) return NULL;
    if (!st_fe_is_tensor(o)) {
        PyErr_SetString(PyExc_TypeError, "_set_grad_hooks: expected a Tensor");
        return NULL;
    }
    if (h == Py_None) h = NULL;
    Py_XINCREF(h);
    if (st_ad_set_hooks(st_fe_unwrap(o), h) != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

static PyObject *f_retain_grad(PyObject *m, PyObject *o) {
    if (!st_fe_is_tensor(o)) {
        PyErr_SetString(PyExc_TypeError, "retain_grad: expected a Tensor");
        return NULL;
    }
    if (st_ad_retain_grad(st_fe_unwrap(o)) != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

/* ---------------- saved-tensor hooks ----------------
 * A pushed pair is a tuple (pack_hook, unpack_hook); a packed object is a
 * tuple (unpack_hook, what pack_hook returned), so each saved tensor is
 * unpacked by the pair it was packed with. Both go with py_ctx_free, which
 * the garbage collector's visit recognizes (st_fe_visit_owned). */
static st_status py_saved_pack(void *pair, st_tensor *t, void **packed) {
    PyGILState_STATE gs = PyGILState_Ensure();
    st_status s = ST_OK;
    st_tensor_incref(t);
    PyObject *arg = st_fe_wrap(t), *res = NULL, *p = NULL;
    if (arg) res = PyObject_CallOneArg(PyTuple_GET_ITEM((PyObject *)pair, 0), arg);
    if (res) p = PyTuple_Pack(2, PyTuple_GET_ITEM((PyObject *)pair, 1), res);
    if (!p) /* the Python error stays */
        s = st_err(ST_ERR_RUNTIME, "a saved tensor pack hook raised");
    *packed = p;
    Py_XDECREF(res);
    Py_XDECREF(arg);
    PyGILState_Release(gs);
    return s;
}

static st_status py_saved_unpack(void *packed, st_tensor **out) {
    PyGILState_STATE gs = PyGILState_Ensure();
    st_status s = ST_OK;
    PyObject *p = packed;
    PyObject *res = PyObject_CallOneArg(PyTuple_GET_ITEM(p, 0), PyTuple_GET_ITEM(p, 1));
    if (!res) {
        s = st_err(ST_ERR_RUNTIME, "a saved tensor unpack hook raised");
    } else if (!st_fe_is_tensor(res)) {
        PyErr_Format(PyExc_TypeError, "Output of saved tensor unpack_hook expected to be a "
                     "Tensor but got result of type %s", Py_TYPE(res)->tp_name);
        s = st_err(ST_ERR_RUNTIME, "a saved tensor unpack hook returned a non-tensor");
    } else {
        *out = st_fe_unwrap(res);
        st_tensor_incref(*out);
    }
    Py_XDECREF(res);
    PyGILState_Release(gs);
    return s;
}

/* _C._push_saved_tensors_hooks(pack_hook, unpack_hook) */
static PyObject *f_push_saved_hooks(PyObject *m, PyObject *args) {
    PyObject *pk, *up;
    if (!PyArg_ParseTuple(args, "OO:_push_saved_tensors_hooks", &pk, &up)) return NULL;
    if (!PyCallable_Check(pk) || !PyCallable_Check(up)) {
        PyErr_SetString(PyExc_TypeError, "saved_tensors_hooks: pack_hook and unpack_hook "
                        "must be callable");
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, pk, up);
    if (!pair) return NULL;
    if (st_ad_saved_hooks_push(pair) != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

static PyObject *f_pop_saved_hooks(PyObject *m, PyObject *a) {
    if (st_ad_saved_hooks_pop() != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

/* _C._saved_tensors_hooks_top() -> (pack_hook, unpack_hook) or None */
static PyObject *f_top_saved_hooks(PyObject *m, PyObject *a) {
    PyObject *pair = st_ad_saved_hooks_top();
    if (!pair) Py_RETURN_NONE;
    Py_INCREF(pair);
    return pair;
}

/* ---------------- anomaly mode ---------------- */
/* the owner of runtime/autograd.c's anomaly mode (st_runtime.h) */

/* capture() -> traceback object; check(name, grads) raises on NaN;
 * report(name, traceback or None) warns (owned references) */
static PyObject *anomaly_py_capture, *anomaly_py_check, *anomaly_py_report;

static void *py_anomaly_capture(void) {
    if (!anomaly_py_capture) return NULL;
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *tb = PyObject_CallNoArgs(anomaly_py_capture);
    if (!tb) PyErr_Clear(); /* no traceback rather than a failing op */
    PyGILState_Release(gs);
    return tb;
}

static st_status py_anomaly_check(const char *node, int n, st_tensor *const *g) {
    if (!anomaly_py_check) return ST_OK;
    PyGILState_STATE gs = PyGILState_Ensure();
    st_status s = ST_OK;
    PyObject *grads = PyTuple_New(n), *res = NULL;
    for (int k = 0; grads && k < n; k++) {
        PyObject *w = Py_None;
        if (g[k]) {
            st_tensor_incref(g[k]);
            w = st_fe_wrap(g[k]);
            if (!w) {
                Py_CLEAR(grads);
                break;
            }
        } else {
            Py_INCREF(w);
        }
        PyTuple_SET_ITEM(grads, k, w);
    }
    if (grads) res = PyObject_CallFunction(anomaly_py_check, "sO", node, grads);
    if (!res) /* the Python error (the NaN message) stays set for st_fe_raise */
        s = st_err(ST_ERR_RUNTIME, "Function '%s' returned nan values", node);
    Py_XDECREF(res);
    Py_XDECREF(grads);
    PyGILState_Release(gs);
    return s;
}

static void py_anomaly_report(const char *node, void *tb) {
    if (!anomaly_py_report) return;
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb); /* the node's error, raised after the report */
    PyObject *res = PyObject_CallFunction(anomaly_py_report, "sO", node,
                                          tb ? (PyObject *)tb : Py_None);
    if (!res) PyErr_Clear();
    Py_XDECREF(res);
    PyErr_Restore(et, ev, etb);
    PyGILState_Release(gs);
}

/* _C._set_anomaly_hooks(capture, check, report) */
static PyObject *f_set_anomaly_hooks(PyObject *m, PyObject *args) {
    PyObject *c, *k, *r;
    if (!PyArg_ParseTuple(args, "OOO:_set_anomaly_hooks", &c, &k, &r)) return NULL;
    if (!PyCallable_Check(c) || !PyCallable_Check(k) || !PyCallable_Check(r)) {
        PyErr_SetString(PyExc_TypeError, "_set_anomaly_hooks: expected three callables");
        return NULL;
    }
    Py_XSETREF(anomaly_py_capture, Py_NewRef(c));
    Py_XSETREF(anomaly_py_check, Py_NewRef(k));
    Py_XSETREF(anomaly_py_report, Py_NewRef(r));
    st_ad_set_anomaly_owner(py_anomaly_capture, py_ctx_free, py_anomaly_check, py_anomaly_report);
    Py_RETURN_NONE;
}

/* _C._set_anomaly_enabled(enabled, check_nan=True) */
static PyObject *f_set_anomaly_enabled(PyObject *m, PyObject *args) {
    int on, nan = 1;
    if (!PyArg_ParseTuple(args, "p|p:_set_anomaly_enabled", &on, &nan)) return NULL;
    st_ad_set_anomaly(on, nan);
    Py_RETURN_NONE;
}

static PyObject *f_is_anomaly_enabled(PyObject *m, PyObject *a) {
    return PyBool_FromLong(st_ad_anomaly_enabled(NULL));
}

static PyObject *f_is_anomaly_check_nan_enabled(PyObject *m, PyObject *a) {
    bool nan;
    st_ad_anomaly_enabled(&nan);
    return PyBool_FromLong(nan);
}

static PyObject *f_ad_stats(PyObject *m, PyObject *a) {
    st_ad_stats s;
    st_ad_stats_get(&s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "nodes_alive", (long long)s.nodes_alive,
                         "programs", (long long)s.programs, "program_hits",
                         (long long)s.program_hits, "program_compiles",
                         (long long)s.program_compiles);
}

static PyMethodDef autograd_methods[] = {
    {"_backward", f_backward, METH_VARARGS, "_backward(tensors, grads, retain_graph)"},
    {"_grad", f_grad, METH_VARARGS, "_grad(outputs, grad_outputs, inputs, retain, allow_unused)"},
    {"_set_grad_enabled", f_set_grad_enabled, METH_O, "set grad mode; returns the previous"},
    {"_is_grad_enabled", f_is_grad_enabled, METH_NOARGS, "is grad mode on"},
    {"_set_inference_mode", f_set_inference_mode, METH_O,
     "set inference mode (the views taken in it); returns the previous"},
    {"_set_autocast", f_set_autocast, METH_VARARGS, "set autocast for a device type; returns the previous (enabled, dtype)"},
    {"_get_autocast", f_get_autocast, METH_O, "(enabled, dtype) of autocast for a device type"},
    {"_autocast_policy", f_autocast_policy, METH_VARARGS, "what autocast does to an op on a device type"},
    {"_make_subclass", f_make_subclass, METH_VARARGS, "_make_subclass(cls, t, requires_grad)"},
    {"_custom_node", f_custom_node, METH_VARARGS, "_custom_node(name, backward, inputs, outputs)"},
    {"_saved_output", f_saved_output, METH_VARARGS, "_saved_output(t, nr): a custom Function's saved output as its backward reads it"},
    {"_autograd_stats", f_ad_stats, METH_NOARGS, "tape and VJP program counters"},
    {"_grad_hooks", f_grad_hooks, METH_O, "the hooks object of a tensor's gradient slot, or None"},
    {"_set_grad_hooks", f_set_grad_hooks, METH_VARARGS, "_set_grad_hooks(t, hooks)"},
    {"_retain_grad", f_retain_grad, METH_O, "backward fills .grad of this non-leaf"},
    {"_push_saved_tensors_hooks", f_push_saved_hooks, METH_VARARGS, "_push_saved_tensors_hooks(pack_hook, unpack_hook)"},
    {"_pop_saved_tensors_hooks", f_pop_saved_hooks, METH_NOARGS, "pops the innermost saved-tensor hooks"},
    {"_saved_tensors_hooks_top", f_top_saved_hooks, METH_NOARGS, "the innermost (pack_hook, unpack_hook), or None"},
    {"_set_anomaly_hooks", f_set_anomaly_hooks, METH_VARARGS, "_set_anomaly_hooks(capture, check, report)"},
    {"_set_anomaly_enabled", f_set_anomaly_enabled, METH_VARARGS, "_set_anomaly_enabled(enabled, check_nan=True)"},
    {"_is_anomaly_enabled", f_is_anomaly_enabled, METH_NOARGS, "is anomaly mode on"},
    {"_is_anomaly_check_nan_enabled", f_is_anomaly_check_nan_enabled, METH_NOARGS, "does anomaly mode check for NaN"},
    {NULL},
};

int st_fe_init_autograd(PyObject *m) {
    if (PyType_Ready(&node_type) < 0) return -1;
    Py_INCREF(&node_type);
    if (PyModule_AddObject(m, "Node", (PyObject *)&node_type) < 0) return -1;
    if (PyModule_AddIntConstant(m, "AD_KEEP_INDEX", ST_AD_KEEP_INDEX) < 0) return -1;
    st_ad_set_hook_owner(py_hook_call, py_ctx_free);
    static const st_ad_saved_owner saved = {py_saved_pack, py_saved_unpack, py_ctx_free};
    st_ad_set_saved_hooks_owner(&saved);
    return PyModule_AddFunctions(m, autograd_methods);
}
