/* tensor_type.c - the Python type _C.TensorBase: wrapping and unwrapping
 * st_tensor, the number/sequence/mapping protocols (operators dispatch to
 * eager ops), metadata properties, views, and the argument helpers the
 * binding files share (shapes, operands, errors). */
#include "st_fe.h"
#include "st_fe_tr.h"
#include "structmember.h"

static PyTypeObject *tensor_cls; /* symtrace.Tensor once registered */

int st_fe_is_tensor(PyObject *o) {
    return PyObject_TypeCheck(o, &st_fe_TensorBase);
}

st_tensor *st_fe_unwrap(PyObject *o) { return ((st_fe_tensor_obj *)o)->t; }

/* One Python object per st_tensor while it lives, as PyTorch keeps one per
 * TensorImpl: `x.grad is x.grad`, and a hook given a leaf gets the
 * Parameter itself. t->pyobj points back (not owned); the wrapper's
 * dealloc clears it. Takes over the reference to t. */
PyObject *st_fe_wrap(st_tensor *t) {
    if (!t) return st_fe_raise();
    if (t->pyobj) {
        PyObject *w = (PyObject *)t->pyobj;
        Py_INCREF(w);
        st_tensor_decref(t);   /* the wrapper holds its own reference */
        return w;
    }
    PyTypeObject *tp = tensor_cls ? tensor_cls : &st_fe_TensorBase;
    st_fe_tensor_obj *o = (st_fe_tensor_obj *)tp->tp_alloc(tp, 0);
    if (!o) {
        st_tensor_decref(t);
        return NULL;
    }
    o->t = t;
    t->pyobj = o;
    return (PyObject *)o;
}

/* ---------------- errors ---------------- */
PyObject *st_fe_raise(void) {
    PyObject *exc;
    if (PyErr_Occurred()) { /* raised by Python code we called back */
        st_err_clear();
        return NULL;
    }
    switch (st_err_kind()) {
    case ST_ERR_VALUE: exc = PyExc_ValueError; break;
    case ST_ERR_TYPE: exc = PyExc_TypeError; break;
    case ST_ERR_INDEX: exc = PyExc_IndexError; break;
    case ST_ERR_MEMORY: exc = PyExc_MemoryError; break;
    case ST_ERR_NOTIMPL: exc = PyExc_NotImplementedError; break;
    case ST_OK:
        if (PyErr_Occurred()) return NULL;
        exc = PyExc_RuntimeError;
        break;
    default: exc = PyExc_RuntimeError; break;
    }
    const char *m = st_err_msg();
    PyErr_SetString(exc, (m && *m) ? m : "symtrace: unknown error");
    st_err_clear();
    return NULL;
}

int st_fe_raise_int(void) {
    st_fe_raise();
    return -1;
}

/* ---------------- argument helpers ---------------- */
static int parse_int64(PyObject *o, int64_t *v, const char *what) {
    if (st_fe_is_tensor(o) || PyFloat_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) {
        PyErr_Format(PyExc_OverflowError, "%s: int too large", what);
        return -1;
    }
    *v = x;
    return 0;
}

int st_fe_parse_shape_seq(PyObject *seq, int64_t *shape, int *ndim,
                          const char *what) {
    if (st_fe_is_tensor(seq) || !PySequence_Check(seq) || PyUnicode_Check(seq)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a sequence of ints as size, got %s", what,
                     Py_TYPE(seq)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Size(seq);
    if (n < 0) return -1;
    if (n > ST_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError,
                     "%s: at most %d dimensions are supported, got %zd", what,
                     ST_MAX_DIMS, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *it = PySequence_GetItem(seq, k);
        if (!it) return -1;
        int r = parse_int64(it, &shape[k], what);
        Py_DECREF(it);
        if (r) return -1;
    }
    *ndim = (int)n;
    return 0;
}

int st_fe_parse_shape(PyObject *args, int64_t *shape, int *ndim,
                      const char *what) {
    if (PyTuple_GET_SIZE(args) == 1 &&
        !PyLong_Check(PyTuple_GET_ITEM(args, 0)) &&
        PySequence_Check(PyTuple_GET_ITEM(args, 0)))
        return st_fe_parse_shape_seq(PyTuple_GET_ITEM(args, 0), shape, ndim,
                                     what);
    return st_fe_parse_shape_seq(args, shape, ndim, what);
}

int st_fe_operand(PyObject *o, st_operand *op, const char *what) {
    memset(op, 0, sizeof *op);
    if (st_fe_is_tensor(o)) {
        op->t = st_fe_unwrap(o);
        return 0;
    }
    if (PyBool_Check(o)) {
        op->sdtype = ST_BOOL;
        op->i = (o == Py_True);
        op->f = (double)op->i;
        return 0;
    }
    if (PyLong_Check(o)) {
        int overflow = 0;
        op->i = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_Format(PyExc_OverflowError,
                         "%s: Python int too large to convert to int64", what);
            return -1;
        }
        op->sdtype = ST_INT64;
        op->f = (double)op->i;
        return 0;
    }
    if (PyFloat_Check(o)) {
        op->sdtype = ST_FLOAT64;
        op->f = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    /* numpy scalars and friends */
    if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_index &&
        !PySequence_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (i) {
            int r = st_fe_operand(i, op, what);
            Py_DECREF(i);
            return r;
        }
        PyErr_Clear();
    }
    if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float &&
        !PySequence_Check(o)) {
        double d = PyFloat_AsDouble(o);
        if (!(d == -1.0 && PyErr_Occurred())) {
            op->sdtype = ST_FLOAT64;
            op->f = d;
            return 0;
        }
        PyErr_Clear();
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: expected a Tensor or a number, got %s", what,
                 Py_TYPE(o)->tp_name);
    return -1;
}

PyObject *st_fe_shape_tuple(const int64_t *shape, int ndim) {
    PyObject *t = PyTuple_New(ndim);
    if (!t) return NULL;
    for (int d = 0; d < ndim; d++) {
        PyObject *v = PyLong_FromLongLong(shape[d]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

/* ---------------- eager op helpers used by the protocols ---------------- */
int st_fe_eager_into(st_op_id op, const st_operand *in, int nin,
                     const st_attrs *attrs, st_tensor *dst) {
    st_tensor *given[ST_MAX_OUT] = {dst};
    st_tensor *out[ST_MAX_OUT] = {NULL};
    int n = st_rt_eager(op, in, nin, attrs, given, out);
    if (n < 0) return st_fe_raise_int();
    /* results come back as new references, the given tensor's included */
    for (int k = 0; k < n && k < ST_MAX_OUT; k++)
        if (out[k]) st_tensor_decref(out[k]);
    return 0;
}

static PyObject *run1(st_op_id op, const st_operand *in, int nin,
                      const st_attrs *attrs, st_tensor *given) {
    st_tensor *out = NULL;
    st_tensor *g[ST_MAX_OUT] = {given};
    if (st_rt_eager(op, in, nin, attrs, given ? g : NULL, &out) < 0)
        return st_fe_raise();
    return st_fe_wrap(out);
}

static PyObject *binop(st_op_id op, PyObject *a, PyObject *b) {
    st_operand in[2];
    if (!st_fe_is_tensor(a) && !st_fe_is_tensor(b)) Py_RETURN_NOTIMPLEMENTED;
    if (st_fe_operand(a, &in[0], st_op(op)->name) ||
        st_fe_operand(b, &in[1], st_op(op)->name)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (op == ST_OP_LOGICAL_AND || op == ST_OP_LOGICAL_OR) {
        /* & and | are bitwise in PyTorch; only bools (where bitwise and
         * logical agree) are supported here. */
        for (int k = 0; k < 2; k++) {
            st_dtype dt = in[k].t ? in[k].t->dtype : in[k].sdtype;
            if (dt != ST_BOOL) {
                PyErr_Format(PyExc_TypeError,
                             "%s: & and | are supported on bool tensors only, "
                             "got %s", op == ST_OP_LOGICAL_AND ? "and" : "or",
                             st_dtype_name(dt));
                return NULL;
            }
        }
    }
    st_attrs at;
    memset(&at, 0, sizeof at);
    return run1(op, in, 2, &at, NULL);
}

/* In-place operator: result of op(self, b) written into self. */
static PyObject *ibinop(st_op_id op, PyObject *a, PyObject *b) {
    if (!st_fe_is_tensor(a)) Py_RETURN_NOTIMPLEMENTED;
    st_operand in[2];
    if (st_fe_operand(a, &in[0], st_op(op)->name) ||
        st_fe_operand(b, &in[1], st_op(op)->name)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    st_attrs at;
    memset(&at, 0, sizeof at);
    PyObject *r = run1(op, in, 2, &at, st_fe_unwrap(a));
    if (!r) return NULL;
    Py_DECREF(r);
    Py_INCREF(a);
    return a;
}

static PyObject *unop(st_op_id op, PyObject *a) {
    st_operand in;
    if (st_fe_operand(a, &in, st_op(op)->name)) return NULL;
    st_attrs at;
    memset(&at, 0, sizeof at);
    return run1(op, &in, 1, &at, NULL);
}

/* ---------------- number protocol ---------------- */
#define BIN(name, op) \
    static PyObject *nb_##name(PyObject *a, PyObject *b) { return binop(op, a, b); }
#define IBIN(name, op) \
    static PyObject *nb_i##name(PyObject *a, PyObject *b) { return ibinop(op, a, b); }
BIN(add, ST_OP_ADD) BIN(sub, ST_OP_SUB) BIN(mul, ST_OP_MUL)
BIN(truediv, ST_OP_DIV) BIN(floordiv, ST_OP_FLOOR_DIVIDE)
BIN(mod, ST_OP_REMAINDER) BIN(and, ST_OP_LOGICAL_AND) BIN(or, ST_OP_LOGICAL_OR)
BIN(matmul, ST_OP_MATMUL)
IBIN(add, ST_OP_ADD) IBIN(sub, ST_OP_SUB) IBIN(mul, ST_OP_MUL)
IBIN(truediv, ST_OP_DIV)

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return binop(ST_OP_POW, a, b);
}
static PyObject *nb_neg(PyObject *a) { return unop(ST_OP_NEG, a); }
static PyObject *nb_abs(PyObject *a) { return unop(ST_OP_ABS, a); }
static PyObject *nb_pos(PyObject *a) {
    Py_INCREF(a);
    return a;
}
static PyObject *nb_invert(PyObject *a) {
    st_tensor *t = st_fe_unwrap(a);
    if (t->dtype != ST_BOOL) {
        PyErr_Format(PyExc_TypeError,
                     "~ (bitwise not) is only supported for bool tensors here, "
                     "got %s", st_dtype_name(t->dtype));
        return NULL;
    }
    return unop(ST_OP_LOGICAL_NOT, a);
}

static PyObject *scalar_of(PyObject *self, int kind) {
    st_tensor *t = st_fe_unwrap(self);
    if (st_tensor_numel(t) != 1) {
        char sb[128];
        PyErr_Format(PyExc_RuntimeError,
                     "a Tensor with %lld elements (shape %s) cannot be "
                     "converted to a Python scalar",
                     (long long)st_tensor_numel(t),
                     st_shape_str(t->shape, t->ndim, sb, sizeof sb));
        return NULL;
    }
    PyObject *v = st_fe_item(t);
    if (!v) return NULL;
    PyObject *r;
    if (kind == 0) r = PyNumber_Float(v);
    else if (kind == 1) r = PyNumber_Long(v);
    else {
        int b = PyObject_IsTrue(v);
        r = b < 0 ? NULL : PyBool_FromLong(b);
    }
    Py_DECREF(v);
    return r;
}
/* Data reads into Python fail an active trace (the read still happens). */
static void data_read(const char *what) {
    if (st_rt_trace_active()) st_rt_trace_fail(what);
}
static PyObject *nb_float(PyObject *a) {
    data_read("data-dependent: float(tensor)");
    return scalar_of(a, 0);
}
static PyObject *nb_int(PyObject *a) {
    data_read("data-dependent: int(tensor)");
    return scalar_of(a, 1);
}
static int nb_bool(PyObject *a) {
    data_read("data-dependent: bool(tensor)");
    PyObject *r = scalar_of(a, 2);
    if (!r) return -1;
    int b = (r == Py_True);
    Py_DECREF(r);
    return b;
}
static PyObject *nb_index(PyObject *a) {
    st_tensor *t = st_fe_unwrap(a);
    data_read("data-dependent: Tensor.__index__()");
    if (st_dtype_is_float(t->dtype)) {
        PyErr_SetString(PyExc_TypeError,
                        "only integer tensors of a single element can be "
                        "converted to an index");
        return NULL;
    }
    return scalar_of(a, 1);
}

static PyNumberMethods tensor_as_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul,
    .nb_true_divide = nb_truediv, .nb_floor_divide = nb_floordiv,
    .nb_remainder = nb_mod, .nb_power = nb_pow, .nb_negative = nb_neg,
    .nb_positive = nb_pos, .nb_absolute = nb_abs, .nb_invert = nb_invert,
    .nb_and = nb_and, .nb_or = nb_or, .nb_bool = nb_bool,
    .nb_float = nb_float, .nb_int = nb_int, .nb_index = nb_index,
    .nb_matrix_multiply = nb_matmul,
    .nb_inplace_add = nb_iadd, .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul, .nb_inplace_true_divide = nb_itruediv,
};

static PyObject *richcompare(PyObject *a, PyObject *b, int cmp) {
    st_op_id op;
    switch (cmp) {
    case Py_LT: op = ST_OP_LT; break;
    case Py_LE: op = ST_OP_LE; break;
    case Py_EQ: op = ST_OP_EQ; break;
    case Py_NE: op = ST_OP_NE; break;
    case Py_GT: op = ST_OP_GT; break;
    default: op = ST_OP_GE; break;
    }
    return binop(op, a, b);
}

static Py_hash_t tensor_hash(PyObject *self) {
    Py_hash_t h = (Py_hash_t)((uintptr_t)self >> 4);
    return h == -1 ? -2 : h;
}

/* ---------------- sequence / mapping ---------------- */
static Py_ssize_t mp_length(PyObject *self) {
    st_tensor *t = st_fe_unwrap(self);
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

static PyMappingMethods tensor_as_mapping = {
    .mp_length = mp_length,
    .mp_subscript = st_fe_getitem,
    .mp_ass_subscript = st_fe_setitem,
};

/* ---------------- lifetime ---------------- */
/* The garbage collector sees what a tensor's wrapper holds alone through
 * C: gradient hooks and custom Function contexts (st_fe_visit_owned in
 * autograd_bind.c), so a hook or ctx referring back to the tensor makes a
 * cycle the collector can free. (A heap subclass's type is visited by
 * CPython's subtype_traverse.) */
static int tensor_traverse(PyObject *self, visitproc visit, void *arg) {
    st_fe_tensor_obj *o = (st_fe_tensor_obj *)self;
    return o->t ? st_fe_visit_owned(o->t, visit, arg) : 0;
}

static void tensor_dealloc(PyObject *self) {
    st_fe_tensor_obj *o = (st_fe_tensor_obj *)self;
    PyObject_GC_UnTrack(self);
    if (o->weakrefs) PyObject_ClearWeakRefs(self);
    if (o->t) {
        if (o->t->pyobj == self) o->t->pyobj = NULL;
        st_tensor_decref(o->t);
        o->t = NULL;
    }
    Py_TYPE(self)->tp_free(self);
}

static PyObject *tensor_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    PyErr_SetString(PyExc_TypeError,
                    "create tensors with symtrace.tensor(data), "
                    "symtrace.zeros(shape), ... not Tensor(...)");
    return NULL;
}

/* ---------------- properties ---------------- */
static PyObject *get_shape(PyObject *self, void *c) {
    st_tensor *t = st_fe_unwrap(self);
    return st_fe_size_new(t->shape, t->ndim);
}
static PyObject *get_dtype(PyObject *self, void *c) {
    PyObject *d = st_fe_dtype_obj(st_fe_unwrap(self)->dtype);
    Py_XINCREF(d);
    return d;
}
static PyObject *get_ndim(PyObject *self, void *c) {
    return PyLong_FromLong(st_fe_unwrap(self)->ndim);
}
static PyObject *get_device_str(PyObject *self, void *c) {
    return PyUnicode_FromString(st_tensor_device(st_fe_unwrap(self))->name);
}
static PyObject *get_T(PyObject *self, void *c) {
    st_tensor *t = st_fe_unwrap(self);
    int64_t perm[ST_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) perm[d] = t->ndim - 1 - d;
    return st_fe_wrap(st_tensor_permute(t, perm));
}
static PyObject *get_version(PyObject *self, void *c) {
    return PyLong_FromUnsignedLong(st_fe_unwrap(self)->storage->version);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "the sizes, a symtrace.Size (a tuple)", NULL},
    {"dtype", get_dtype, NULL, "element type", NULL},
    {"ndim", get_ndim, NULL, "number of dimensions", NULL},
    {"_device_str", get_device_str, NULL, "device name", NULL},
    {"T", get_T, NULL, "dimensions reversed", NULL},
    {"_version", get_version, NULL, "in-place write counter", NULL},
    {NULL},
};

/* ---------------- methods: metadata ---------------- */
static int opt_dim(PyObject *self, PyObject *args, int64_t *dim, int *has) {
    PyObject *o = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &o)) return -1;
    *has = 0;
    if (o == Py_None) return 0;
    if (parse_int64(o, dim, "dim")) return -1;
    st_tensor *t = st_fe_unwrap(self);
    if (t->ndim == 0) {   /* torch's words: a 0-d tensor has no dim to ask about */
        PyErr_Format(PyExc_IndexError, "Dimension specified as %lld but tensor has no "
                     "dimensions", (long long)*dim);
        return -1;
    }
    if (st_wrap_dim("size", dim, t->ndim) != ST_OK) return st_fe_raise_int();
    *has = 1;
    return 0;
}

static PyObject *m_size(PyObject *self, PyObject *args) {
    int64_t d;
    int has;
    if (opt_dim(self, args, &d, &has)) return NULL;
    st_tensor *t = st_fe_unwrap(self);
    if (has) return PyLong_FromLongLong(t->ndim ? t->shape[d] : 1);
    return st_fe_size_new(t->shape, t->ndim);
}
static PyObject *m_stride(PyObject *self, PyObject *args) {
    int64_t d;
    int has;
    if (opt_dim(self, args, &d, &has)) return NULL;
    st_tensor *t = st_fe_unwrap(self);
    if (has) return PyLong_FromLongLong(t->ndim ? t->strides[d] : 1);
    return st_fe_shape_tuple(t->strides, t->ndim);
}
static PyObject *m_dim(PyObject *self, PyObject *a) {
    return PyLong_FromLong(st_fe_unwrap(self)->ndim);
}
static PyObject *m_numel(PyObject *self, PyObject *a) {
    return PyLong_FromLongLong(st_tensor_numel(st_fe_unwrap(self)));
}
static PyObject *m_is_contiguous(PyObject *self, PyObject *a) {
    return PyBool_FromLong(st_tensor_is_contiguous(st_fe_unwrap(self)));
}
static PyObject *m_data_ptr(PyObject *self, PyObject *a) {
    return PyLong_FromVoidPtr(st_tensor_data(st_fe_unwrap(self)));
}
static PyObject *m_element_size(PyObject *self, PyObject *a) {
    return PyLong_FromSize_t(st_dtype_size(st_fe_unwrap(self)->dtype));
}
static PyObject *m_storage_offset(PyObject *self, PyObject *a) {
    return PyLong_FromLongLong(st_fe_unwrap(self)->offset);
}
static PyObject *m_storage_id(PyObject *self, PyObject *a) {
    return PyLong_FromVoidPtr(st_fe_unwrap(self)->storage);
}

/* ---------------- methods: views ---------------- */
static PyObject *m_view_impl(PyObject *self, PyObject *args, bool view_only) {
    int64_t shape[ST_MAX_DIMS];
    int nd;
    if (st_fe_parse_shape(args, shape, &nd, view_only ? "view" : "reshape"))
        return NULL;
    return st_fe_wrap(st_tensor_reshape(st_fe_unwrap(self), nd, shape,
                                        view_only));
}
static PyObject *m_view(PyObject *self, PyObject *args) {
    return m_view_impl(self, args, true);
}
static PyObject *m_reshape(PyObject *self, PyObject *args) {
    return m_view_impl(self, args, false);
}
static PyObject *m_permute(PyObject *self, PyObject *args) {
    int64_t perm[ST_MAX_DIMS];
    int nd;
    if (st_fe_parse_shape(args, perm, &nd, "permute")) return NULL;
    st_tensor *t = st_fe_unwrap(self);
    if (nd != t->ndim) {
        char sb[128];
        PyErr_Format(PyExc_RuntimeError,
                     "permute: number of dims don't match: the tensor of "
                     "shape %s has %d dims but %d were given",
                     st_shape_str(t->shape, t->ndim, sb, sizeof sb), t->ndim,
                     nd);
        return NULL;
    }
    return st_fe_wrap(st_tensor_permute(t, perm));
}
static PyObject *m_transpose(PyObject *self, PyObject *args) {
    long long d0, d1;
    if (!PyArg_ParseTuple(args, "LL:transpose", &d0, &d1)) return NULL;
    return st_fe_wrap(st_tensor_transpose(st_fe_unwrap(self), d0, d1));
}
static PyObject *m_expand(PyObject *self, PyObject *args) {
    int64_t shape[ST_MAX_DIMS];
    int nd;
    if (st_fe_parse_shape(args, shape, &nd, "expand")) return NULL;
    return st_fe_wrap(st_tensor_expand(st_fe_unwrap(self), nd, shape));
}
static PyObject *m_squeeze(PyObject *self, PyObject *args) {
    PyObject *o = Py_None;
    if (!PyArg_ParseTuple(args, "|O:squeeze", &o)) return NULL;
    st_tensor *t = st_fe_unwrap(self);
    if (o == Py_None) return st_fe_wrap(st_tensor_squeeze(t, ST_SQUEEZE_ALL));
    if (PyTuple_Check(o) || PyList_Check(o)) {
        int64_t dims[ST_MAX_DIMS];
        int nd;
        if (st_fe_parse_shape_seq(o, dims, &nd, "squeeze")) return NULL;
        st_attrs at;
        memset(&at, 0, sizeof at);
        for (int k = 0; k < nd; k++) at.dims[k] = dims[k];
        at.ndims = nd;
        if (nd == 0) {
            st_tensor_incref(t);
            return st_fe_wrap(t);
        }
        return st_fe_wrap(st_tensor_apply_view(t, ST_OP_SQUEEZE, &at));
    }
    int64_t d;
    if (parse_int64(o, &d, "squeeze")) return NULL;
    return st_fe_wrap(st_tensor_squeeze(t, d));
}
static PyObject *m_unsqueeze(PyObject *self, PyObject *args) {
    long long d;
    if (!PyArg_ParseTuple(args, "L:unsqueeze", &d)) return NULL;
    return st_fe_wrap(st_tensor_unsqueeze(st_fe_unwrap(self), d));
}
/* _multi_view(kind, nr): self is output nr of split / split_with_sizes /
 * unbind (kind 1, 2, 3; 0: none, as unsafe_split's), whose in-place writes
 * under autograd torch refuses (runtime/viewhist.c) */
static PyObject *m_multi_view(PyObject *self, PyObject *args) {
    int kind, nr;
    if (!PyArg_ParseTuple(args, "ii:_multi_view", &kind, &nr))
        return NULL;
    if (kind < 0 || kind > ST_VIEW_MULTI_UNBIND) {
        PyErr_Format(PyExc_ValueError, "_multi_view: unknown kind %d", kind);
        return NULL;
    }
    st_view_multi_mark(st_fe_unwrap(self), kind, nr);
    Py_RETURN_NONE;
}
static PyObject *m_slice(PyObject *self, PyObject *args) {
    long long dim, start, stop, step = 1;
    if (!PyArg_ParseTuple(args, "LLL|L:_slice", &dim, &start, &stop, &step))
        return NULL;
    return st_fe_wrap(st_tensor_slice(st_fe_unwrap(self), dim, start, stop,
                                      step));
}
static PyObject *m_select(PyObject *self, PyObject *args) {
    long long dim, index;
    if (!PyArg_ParseTuple(args, "LL:select", &dim, &index)) return NULL;
    return st_fe_wrap(st_tensor_select(st_fe_unwrap(self), dim, index));
}
static PyObject *m_as_strided(PyObject *self, PyObject *args) {
    PyObject *so, *sto;
    long long off = -1;
    if (!PyArg_ParseTuple(args, "OO|L:as_strided", &so, &sto, &off))
        return NULL;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    int nd, ns;
    if (st_fe_parse_shape_seq(so, shape, &nd, "as_strided") ||
        st_fe_parse_shape_seq(sto, strides, &ns, "as_strided"))
        return NULL;
    st_tensor *t = st_fe_unwrap(self);
    if (nd != ns) {
        PyErr_SetString(PyExc_RuntimeError,
                        "as_strided: size and stride must have the same length");
        return NULL;
    }
    if (off < 0) off = t->offset;
    /* bounds: the furthest element must lie inside the storage */
    int64_t hi = off, isz = (int64_t)st_dtype_size(t->dtype);
    for (int d = 0; d < nd; d++) {
        if (shape[d] < 0 || strides[d] < 0) {
            PyErr_SetString(PyExc_RuntimeError,
                            "as_strided: negative size or stride");
            return NULL;
        }
        if (shape[d] == 0) hi = -1;
        if (hi >= 0) hi += (shape[d] - 1) * strides[d];
    }
    if (hi >= 0 && (hi + 1) * isz > (int64_t)t->storage->nbytes) {
        PyErr_SetString(PyExc_RuntimeError,
                        "as_strided: the view reaches outside the storage");
        return NULL;
    }
    /* a view of t's root base; a trace cannot express it (a graph would
     * keep the first call's view as a constant): symtrace.compile breaks
     * the graph. Its history, when the base requires grad, is made on
     * first use as a gather of its elements from the base (viewhist.c) */
    st_rt_trace_fail("as_strided: a raw strided view is not traced");
    /* as the other view functions: a stale source first (a split output
     * whose base changed refuses it, as torch's) */
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK) return st_fe_raise();
    st_tensor *r = st_tensor_view_of(t, nd, shape, strides, off);
    if (!r) return st_fe_raise();
    st_view_mark(t, r);
    if (r->view_base && r->view_grad && r->view_base->requires_grad) {
        r->base_hist = r->view_base->hist - 1; /* stale: history on first use */
        uint8_t mv = r->view_multi; /* made stale here, not by a write */
        r->view_multi = 0;
        st_status rs = st_ad_view_refresh(r);
        r->view_multi = mv;
        if (rs != ST_OK) {
            st_tensor_decref(r);
            return st_fe_raise();
        }
    }
    return st_fe_wrap(r);
}
/* self takes the geometry and history of v, a view of it (the in-place view
 * ops t_/transpose_/squeeze_/unsqueeze_/as_strided_, as torch's: self's
 * grad_fn becomes the view's node, its version moves on). */
static PyObject *m_become(PyObject *self, PyObject *arg) {
    if (!st_fe_is_tensor(arg)) {
        PyErr_SetString(PyExc_TypeError, "_become: expected a tensor");
        return NULL;
    }
    st_tensor *t = st_fe_unwrap(self), *v = st_fe_unwrap(arg);
    if (v->storage != t->storage || v->dtype != t->dtype) {
        PyErr_SetString(PyExc_RuntimeError, "_become: not a view of this tensor");
        return NULL;
    }
    if (t->requires_grad && !t->grad_fn && st_ad_grad_enabled()) {
        PyErr_SetString(PyExc_RuntimeError, "a leaf Variable that requires grad is being "
                        "used in an in-place operation.");
        return NULL;
    }
    /* the call breaks the graph: the aborted trace puts t back as it was,
     * before the call runs again as Python */
    st_rt_trace_will_reshape(t);
    st_rt_trace_fail("an in-place view op (t_, transpose_, squeeze_, ...) is not traced");
    t->ndim = v->ndim;
    t->offset = v->offset;
    for (int d = 0; d < v->ndim; d++) {
        t->shape[d] = v->shape[d];
        t->strides[d] = v->strides[d];
    }
    if (v->grad_fn && v->grad_fn != t->grad_fn) {
        st_ad_node_incref(v->grad_fn);
        if (t->grad_fn) st_ad_node_decref(t->grad_fn);
        t->grad_fn = v->grad_fn;
        t->output_nr = v->output_nr;
        t->requires_grad = v->requires_grad;
        t->hist++; /* its views' histories are stale now (viewhist.c) */
    }
    t->storage->version++;
    st_fe_meta_epoch++; /* compiled guards read shapes */
    return Py_NewRef(self);
}
/* self.data = other (torch's Variable::set_data): self keeps its identity,
 * its autograd state (requires_grad, grad, grad_fn, hooks) and takes
 * other's storage, dtype and geometry; self's views keep the old storage,
 * as torch's. */
static PyObject *m_set_data(PyObject *self, PyObject *arg) {
    if (!st_fe_is_tensor(arg)) {
        PyErr_Format(PyExc_TypeError, "Variable data has to be a tensor, but got %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    st_tensor *t = st_fe_unwrap(self), *o = st_fe_unwrap(arg);
    if (st_tensor_device(t) != st_tensor_device(o)) {
        PyErr_SetString(PyExc_RuntimeError, "Attempted to call `variable.set_data(tensor)`, but "
                        "`variable` and `tensor` have incompatible tensor type.");
        return NULL;
    }
    if (t == o)
        Py_RETURN_NONE;
    /* the call breaks the graph (run again as Python after the trace aborts) */
    st_rt_trace_will_reshape(t);
    st_rt_trace_fail("setting .data of a tensor is not traced");
    st_storage_incref(o->storage);
    st_storage_decref(t->storage);
    t->storage = o->storage;
    t->offset = o->offset;
    t->dtype = o->dtype;
    t->ndim = o->ndim;
    for (int d = 0; d < o->ndim; d++) {
        t->shape[d] = o->shape[d];
        t->strides[d] = o->strides[d];
    }
    if (t->view_base) { /* no longer a view of its old base */
        st_tensor_decref(t->view_base);
        t->view_base = NULL;
    }
    t->is_view = false;
    t->view_grad = false;
    t->hist++;          /* views made before see a changed history (viewhist.c) */
    st_fe_meta_epoch++; /* compiled guards read dtypes and shapes */
    Py_RETURN_NONE;
}
/* detach_(): self leaves the graph in place (a leaf that requires no
 * grad), as torch's; views refuse, with torch's message. */
static PyObject *m_detach_inplace(PyObject *self, PyObject *a) {
    st_tensor *t = st_fe_unwrap(self);
    if (t->view_base) {
        PyErr_SetString(PyExc_RuntimeError, "Can't detach views in-place. Use detach() instead.");
        return NULL;
    }
    st_rt_trace_fail("detach_() is not traced");
    if (t->grad_fn) {
        st_ad_node_decref(t->grad_fn);
        t->grad_fn = NULL;
        t->output_nr = 0;
        t->hist++;
    }
    t->requires_grad = false;
    t->retains_grad = false;
    return Py_NewRef(self);
}
static PyObject *m_contiguous(PyObject *self, PyObject *a) {
    return st_fe_wrap(st_tensor_contiguous(st_fe_unwrap(self)));
}
/* clone(*, memory_format=preserve_format): preserve_format keeps self's
 * memory order (an elementwise result's, runtime/layout.c), contiguous_format
 * is row-major, channels_last(_3d) NHWC / NDHWC. */
static PyObject *m_clone(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"memory_format", NULL};
    PyObject *fmt = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:clone", kwlist, &fmt)) return NULL;
    st_tensor *t = st_fe_unwrap(self);
    st_operand in = {.t = t};
    st_attrs at;
    memset(&at, 0, sizeof at);
    const char *name = "preserve_format";
    PyObject *nm = NULL;
    if (fmt != Py_None) {
        nm = PyObject_GetAttrString(fmt, "_name");
        name = nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8(nm) : NULL;
        if (!name) {
            Py_XDECREF(nm);
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError, "clone(): argument 'memory_format' must be "
                                "symtrace.memory_format, not %s", Py_TYPE(fmt)->tp_name);
        }
    }
    int64_t perm[ST_MAX_DIMS];
    int nd = 0, rank = 0;
    bool permuted = false;
    if (!strcmp(name, "preserve_format")) {
        permuted = st_layout_perm(-1, &in, 1, &nd, perm);
    } else if (!strcmp(name, "channels_last") || !strcmp(name, "channels_last_3d")) {
        rank = name[13] ? 5 : 4;
        if (t->ndim != rank) {
            PyErr_Format(PyExc_RuntimeError, "required rank %d tensor to use %s format",
                         rank, name);
            Py_XDECREF(nm);
            return NULL;
        }
        nd = rank;
        perm[0] = 0;
        for (int d = 2; d < rank; d++) perm[d - 1] = d;
        perm[rank - 1] = 1;
        permuted = true;
    } else if (strcmp(name, "contiguous_format")) {
        PyErr_Format(PyExc_RuntimeError, "clone(): unsupported memory format %s", name);
        Py_XDECREF(nm);
        return NULL;
    }
    Py_XDECREF(nm);
    if (!permuted) return run1(ST_OP_COPY, &in, 1, &at, NULL);
    st_tensor *out = NULL;
    if (st_layout_run(ST_OP_COPY, &in, 1, &at, nd, perm, NULL, &out) < 0) return st_fe_raise();
    return st_fe_wrap(out);
}
/* detach(), and t.data (data: writes through it and its views move no
 * version, as torch's .data has a counter of its own) */
static PyObject *detached(PyObject *self, bool data) {
    st_tensor *t = st_fe_unwrap(self);
    st_tensor *r = st_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset);
    if (r) r->own_version = data;
    /* traced as an identity under a stop-gradient (runtime/trace.c) */
    if (r && st_rt_trace_active()) st_rt_trace_detach(t, r);
    return st_fe_wrap(r);
}
static PyObject *m_detach(PyObject *self, PyObject *a) {
    return detached(self, false);
}
static PyObject *m_data_alias(PyObject *self, PyObject *a) {
    return detached(self, true);
}
static PyObject *m_storage_nbytes(PyObject *self, PyObject *a) {
    return PyLong_FromSize_t(st_fe_unwrap(self)->storage->nbytes);
}
static PyObject *m_bump_version(PyObject *self, PyObject *a) {
    if (!st_fe_unwrap(self)->own_version)
        st_fe_unwrap(self)->storage->version++;
    Py_RETURN_NONE;
}

static PyMethodDef tensor_methods[] = {
    {"size", m_size, METH_VARARGS, "size(dim=None)"},
    {"stride", m_stride, METH_VARARGS, "stride(dim=None)"},
    {"dim", m_dim, METH_NOARGS, "number of dimensions"},
    {"numel", m_numel, METH_NOARGS, "number of elements"},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "row-major dense?"},
    {"data_ptr", m_data_ptr, METH_NOARGS, "address of the first element"},
    {"element_size", m_element_size, METH_NOARGS, "bytes per element"},
    {"storage_offset", m_storage_offset, METH_NOARGS, "offset in elements"},
    {"_storage_id", m_storage_id, METH_NOARGS, "identity of the storage"},
    {"view", m_view, METH_VARARGS, "view(*shape): a view, never a copy"},
    {"reshape", m_reshape, METH_VARARGS, "reshape(*shape)"},
    {"permute", m_permute, METH_VARARGS, "permute(*dims)"},
    {"transpose", m_transpose, METH_VARARGS, "transpose(dim0, dim1)"},
    {"expand", m_expand, METH_VARARGS, "expand(*sizes)"},
    {"squeeze", m_squeeze, METH_VARARGS, "squeeze(dim=None)"},
    {"unsqueeze", m_unsqueeze, METH_VARARGS, "unsqueeze(dim)"},
    {"_slice", m_slice, METH_VARARGS, "_slice(dim, start, stop, step=1)"},
    {"_multi_view", m_multi_view, METH_VARARGS, "_multi_view(kind, nr): mark a split/unbind output"},
    {"select", m_select, METH_VARARGS, "select(dim, index)"},
    {"as_strided", m_as_strided, METH_VARARGS, "as_strided(size, stride, offset)"},
    {"_become", m_become, METH_O, "_become(view): take a view's geometry and history"},
    {"_set_data", m_set_data, METH_O, "_set_data(t): self.data = t (storage, dtype, geometry)"},
    {"detach_", m_detach_inplace, METH_NOARGS, "detach_() -> self: self leaves the graph in place"},
    {"contiguous", m_contiguous, METH_NOARGS, "a contiguous tensor"},
    {"clone", (PyCFunction)(void (*)(void))m_clone, METH_VARARGS | METH_KEYWORDS,
     "clone(*, memory_format=preserve_format): a copy"},
    {"detach", m_detach, METH_NOARGS, "a view outside autograd"},
    {"_data_alias", m_data_alias, METH_NOARGS, "t.data: detach() whose writes move no version"},
    {"_bump_version", m_bump_version, METH_NOARGS, "mark an in-place write"},
    {"_storage_nbytes", m_storage_nbytes, METH_NOARGS, "bytes of the whole storage"},
    {NULL},
};

PyTypeObject st_fe_TensorBase = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C.TensorBase",
    .tp_basicsize = sizeof(st_fe_tensor_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A tensor: a reference to strided, typed storage on a device.",
    .tp_new = tensor_new,
    .tp_dealloc = tensor_dealloc,
    .tp_traverse = tensor_traverse,
    .tp_free = PyObject_GC_Del,
    .tp_weaklistoffset = offsetof(st_fe_tensor_obj, weakrefs),
    .tp_as_number = &tensor_as_number,
    .tp_as_mapping = &tensor_as_mapping,
    .tp_richcompare = richcompare,
    .tp_hash = tensor_hash,
    .tp_getset = tensor_getset,
    .tp_methods = tensor_methods,
};

/* _C._set_tensor_class(cls): results of ops become instances of cls. */
static PyObject *set_tensor_class(PyObject *m, PyObject *cls) {
    if (!PyType_Check(cls) ||
        !PyType_IsSubtype((PyTypeObject *)cls, &st_fe_TensorBase)) {
        PyErr_SetString(PyExc_TypeError, "expected a subclass of TensorBase");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XDECREF((PyObject *)tensor_cls);
    tensor_cls = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

static PyMethodDef tensor_module_methods[] = {
    {"_set_tensor_class", set_tensor_class, METH_O, "register symtrace.Tensor"},
    {NULL},
};

int st_fe_init_tensor(PyObject *m) {
    /* Add the conversion methods (numpy, dlpack, tolist, item) to the type. */
    static PyMethodDef all[64];
    int n = 0;
    for (PyMethodDef *d = tensor_methods; d->ml_name; d++) all[n++] = *d;
    for (PyMethodDef *d = st_fe_convert_tensor_methods; d->ml_name; d++)
        all[n++] = *d;
    all[n] = (PyMethodDef){NULL};
    st_fe_TensorBase.tp_methods = all;
    static PyGetSetDef gs[32];
    int g = 0;
    for (PyGetSetDef *d = tensor_getset; d->name; d++) gs[g++] = *d;
    for (PyGetSetDef *d = st_fe_autograd_getset; d->name; d++) gs[g++] = *d;
    gs[g] = (PyGetSetDef){NULL};
    st_fe_TensorBase.tp_getset = gs;
    if (PyType_Ready(&st_fe_TensorBase) < 0) return -1;
    Py_INCREF(&st_fe_TensorBase);
    if (PyModule_AddObject(m, "TensorBase", (PyObject *)&st_fe_TensorBase) < 0)
        return -1;
    return PyModule_AddFunctions(m, tensor_module_methods);
}
