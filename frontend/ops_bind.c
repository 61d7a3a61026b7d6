/* ops_bind.c - module-level bindings of the eager ops (_C.op, a generic
 * entry the Python layer calls with an op id, operands and attributes),
 * tensor allocation, the random seed and generator state, allocator statistics and the kernel
 * cache. Op ids are exported as _C.OP_<NAME>. */
#include "st_fe.h"
#include "st_nvrtc.h"

static st_device *parse_device(PyObject *o) {
    if (!o || o == Py_None) return st_rt_cpu();
    PyObject *s = PyObject_Str(o);
    if (!s) return NULL;
    const char *c = PyUnicode_AsUTF8(s);
    st_device *d = NULL;
    if (!c) {
    } else if (!strcmp(c, "cpu")) {
        d = st_rt_cpu();
    } else if (!strncmp(c, "cuda", 4)) {
        int idx = c[4] == ':' ? atoi(c + 5) : 0;
        d = st_rt_device(ST_DEV_CUDA, idx);
        /* its kernels come from the nvrtc backend */
        if (d && st_nvrtc_register() != ST_OK) d = NULL;
        if (!d) st_fe_raise();
    } else {
        PyErr_Format(PyExc_RuntimeError,
                     "Expected one of cpu, cuda device type at start of "
                     "device string: %s", c);
    }
    Py_DECREF(s);
    return d;
}

/* attrs tuple: (ints, floats, dims_or_None, flags, dtype_or_None) */
int st_fe_parse_attrs(PyObject *o, st_attrs *a) {
    memset(a, 0, sizeof *a);
    if (o == Py_None) return 0;
    PyObject *ints, *floats, *dims, *dt;
    int flags;
    if (!PyArg_ParseTuple(o, "OOOiO:attrs", &ints, &floats, &dims, &flags, &dt))
        return -1;
    a->flags = flags;
    int n;
    int64_t tmp[ST_MAX_DIMS];
    if (ints != Py_None) {
        if (st_fe_parse_shape_seq(ints, tmp, &n, "attrs")) return -1;
        if (n > 4) {
            PyErr_SetString(PyExc_ValueError, "attrs: at most 4 ints");
            return -1;
        }
        for (int k = 0; k < n; k++) a->i[k] = tmp[k];
    }
    if (floats != Py_None) {
        PyObject *seq = PySequence_Fast(floats, "attrs: floats must be a sequence");
        if (!seq) return -1;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t k = 0; k < m && k < 2; k++) {
            a->f[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
            if (a->f[k] == -1.0 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    if (dims != Py_None) {
        if (st_fe_parse_shape_seq(dims, a->dims, &a->ndims, "dims")) return -1;
    }
    if (dt != Py_None && st_fe_parse_dtype(dt, &a->dtype, "dtype")) return -1;
    return 0;
}

/* _C.op(op_id, operands, attrs=None, out=None) */
static PyObject *f_op(PyObject *m, PyObject *args) {
    int opid;
    PyObject *ins, *ao = Py_None, *outo = Py_None, *devo = Py_None;
    if (!PyArg_ParseTuple(args, "iO|OOO:op", &opid, &ins, &ao, &outo, &devo)) return NULL;
    st_device *fdev = NULL;     /* where a factory op's result goes */
    if (devo != Py_None && !(fdev = parse_device(devo))) return NULL;
    if (opid < 0 || opid >= ST_NOPS) {
        PyErr_Format(PyExc_ValueError, "unknown op id %d", opid);
        return NULL;
    }
    const char *name = st_op(opid)->name;
    PyObject *seq = PySequence_Fast(ins, "op: operands must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t nin = PySequence_Fast_GET_SIZE(seq);
    if (nin > ST_MAX_IN) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_TypeError, "%s: too many operands", name);
        return NULL;
    }
    st_operand in[ST_MAX_IN];
    for (Py_ssize_t k = 0; k < nin; k++)
        if (st_fe_operand(PySequence_Fast_GET_ITEM(seq, k), &in[k], name)) {
            Py_DECREF(seq);
            return NULL;
        }
    st_attrs at;
    if (st_fe_parse_attrs(ao, &at)) {
        Py_DECREF(seq);
        return NULL;
    }
    st_tensor *given[ST_MAX_OUT] = {NULL};
    bool has_given = false;
    if (outo != Py_None) {
        if (!st_fe_is_tensor(outo)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "%s: out= must be a Tensor", name);
            return NULL;
        }
        given[0] = st_fe_unwrap(outo);
        has_given = true;
    }
    st_tensor *out[ST_MAX_OUT];
    st_device *prev = st_rt_set_factory_device(fdev);
    int n = st_rt_eager(opid, in, (int)nin, &at, has_given ? given : NULL, out);
    st_rt_set_factory_device(prev);
    Py_DECREF(seq);
    if (n < 0) return st_fe_raise();
    if (n == 1) return st_fe_wrap(out[0]);
    PyObject *t = PyTuple_New(n);
    if (!t) {
        for (int k = 0; k < n; k++) st_tensor_decref(out[k]);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        PyObject *w = st_fe_wrap(out[k]);
        if (!w) {
            for (int j = k + 1; j < n; j++) st_tensor_decref(out[j]);
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, w);
    }
    return t;
}

/* _C._to_device(t, device): a contiguous copy of t on device (t itself
 * when it is there and contiguous); no autograd (symtrace/_tensor.py
 * wraps it in an autograd.Function) */
static PyObject *f_to_device(PyObject *m, PyObject *args) {
    PyObject *to, *devo;
    if (!PyArg_ParseTuple(args, "OO:_to_device", &to, &devo)) return NULL;
    if (!st_fe_is_tensor(to)) {
        PyErr_SetString(PyExc_TypeError, "_to_device: expected a Tensor");
        return NULL;
    }
    st_device *d = parse_device(devo);
    if (!d) return NULL;
    st_tensor *t = st_fe_unwrap(to);
    if (st_tensor_device(t) == d) {
        Py_INCREF(to);
        return to;
    }
    /* a graph runs on one device: a copy between devices ends the trace
     * (the translator breaks the graph there) */
    if (st_rt_trace_active()) st_rt_trace_fail("a copy between devices (Tensor.to)");
    st_tensor *r = st_rt_to_device(t, d);
    return r ? st_fe_wrap(r) : st_fe_raise();
}

/* _C.empty(shape, dtype, device=None) */
static PyObject *f_empty(PyObject *m, PyObject *args) {
    PyObject *so, *dto, *devo = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:empty", &so, &dto, &devo)) return NULL;
    int64_t shape[ST_MAX_DIMS];
    int nd;
    st_dtype dt;
    if (st_fe_parse_shape_seq(so, shape, &nd, "empty") ||
        st_fe_parse_dtype(dto, &dt, "empty"))
        return NULL;
    for (int d = 0; d < nd; d++)
        if (shape[d] < 0) {
            char sb[128];
            PyErr_Format(PyExc_RuntimeError,
                         "Trying to create tensor with negative dimension "
                         "%lld: %s", (long long)shape[d],
                         st_shape_str(shape, nd, sb, sizeof sb));
            return NULL;
        }
    st_device *dev = parse_device(devo);
    if (!dev) return NULL;
    st_tensor *t = st_tensor_empty(dev, dt, nd, shape);
    if (t && st_rt_trace_active()) st_rt_trace_fresh(t); /* runtime/trace.c */
    return st_fe_wrap(t);
}

static PyObject *f_manual_seed(PyObject *m, PyObject *o) {
    unsigned long long s = PyLong_AsUnsignedLongLongMask(o);
    if (PyErr_Occurred()) return NULL;
    st_rt_manual_seed(s);
    Py_RETURN_NONE;
}
static PyObject *f_initial_seed(PyObject *m, PyObject *a) {
    return PyLong_FromUnsignedLongLong(st_rt_initial_seed());
}
/* _C._rng_get_state() -> (seed, offset): the global generator's state, as
 * unsigned 64-bit Python ints (symtrace.random.get_rng_state packs them). */
static PyObject *f_rng_get_state(PyObject *m, PyObject *a) {
    uint64_t seed = 0, off = 0;
    st_rt_rng_get_state(&seed, &off);
    return Py_BuildValue("(KK)", (unsigned long long)seed, (unsigned long long)off);
}
/* _C._rng_set_state(seed, offset): both taken modulo 2**64. */
static PyObject *f_rng_set_state(PyObject *m, PyObject *args) {
    PyObject *so, *oo;
    if (!PyArg_ParseTuple(args, "OO:_rng_set_state", &so, &oo)) return NULL;
    if (!PyLong_Check(so) || !PyLong_Check(oo)) {
        PyErr_SetString(PyExc_TypeError, "_rng_set_state: seed and offset must be ints");
        return NULL;
    }
    unsigned long long s = PyLong_AsUnsignedLongLongMask(so);
    if (PyErr_Occurred()) return NULL;
    unsigned long long o = PyLong_AsUnsignedLongLongMask(oo);
    if (PyErr_Occurred()) return NULL;
    st_rt_rng_set_state((uint64_t)s, (uint64_t)o);
    Py_RETURN_NONE;
}

static st_allocator *alloc_of(PyObject *args) {
    PyObject *devo = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &devo)) return NULL;
    st_device *d = parse_device(devo);
    return d ? st_alloc_for(d) : NULL;
}

static int put(PyObject *d, const char *k, long long v) {
    PyObject *o = PyLong_FromLongLong(v);
    if (!o) return -1;
    int r = PyDict_SetItemString(d, k, o);
    Py_DECREF(o);
    return r;
}

static PyObject *f_memory_stats(PyObject *m, PyObject *args) {
    st_allocator *a = alloc_of(args);
    if (!a) return PyErr_Occurred() ? NULL : st_fe_raise();
    st_alloc_stats s;
    st_alloc_stats_get(a, &s);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (put(d, "allocated_bytes", s.allocated_bytes) ||
        put(d, "requested_bytes", s.requested_bytes) ||
        put(d, "reserved_bytes", s.reserved_bytes) ||
        put(d, "peak_allocated_bytes", s.peak_allocated_bytes) ||
        put(d, "peak_reserved_bytes", s.peak_reserved_bytes) ||
        put(d, "peak_requested_bytes", s.peak_requested_bytes) ||
        put(d, "num_allocs", s.num_allocs) || put(d, "num_frees", s.num_frees) ||
        put(d, "cache_hits", s.cache_hits) ||
        put(d, "num_system_allocs", s.num_system_allocs) ||
        put(d, "num_system_frees", s.num_system_frees) ||
        put(d, "active_blocks", s.active_blocks) ||
        put(d, "num_segments", s.num_segments)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}
static PyObject *f_empty_cache(PyObject *m, PyObject *args) {
    st_allocator *a = alloc_of(args);
    if (!a) return PyErr_Occurred() ? NULL : st_fe_raise();
    st_alloc_empty_cache(a);
    Py_RETURN_NONE;
}
static PyObject *f_reset_peak(PyObject *m, PyObject *args) {
    st_allocator *a = alloc_of(args);
    if (!a) return PyErr_Occurred() ? NULL : st_fe_raise();
    st_alloc_reset_peak(a);
    Py_RETURN_NONE;
}
static PyObject *f_alloc_check(PyObject *m, PyObject *args) {
    st_allocator *a = alloc_of(args);
    if (!a) return PyErr_Occurred() ? NULL : st_fe_raise();
    if (st_alloc_check(a) != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

static PyObject *f_kcache_stats(PyObject *m, PyObject *a) {
    st_kcache_stats s;
    st_rt_kcache_stats(&s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "hits", (long long)s.hits,
                         "misses", (long long)s.misses, "compiles",
                         (long long)s.compiles, "entries", (long long)s.entries);
}
static PyObject *f_kcache_clear(PyObject *m, PyObject *a) {
    st_rt_kcache_clear();
    Py_RETURN_NONE;
}
static PyObject *f_set_eager_backend(PyObject *m, PyObject *o) {
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) return NULL;
    if (st_rt_set_eager_backend(s) != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}
static PyObject *f_op_name(PyObject *m, PyObject *o) {
    long id = PyLong_AsLong(o);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (id < 0 || id >= ST_NOPS) {
        PyErr_Format(PyExc_ValueError, "unknown op id %ld", id);
        return NULL;
    }
    return PyUnicode_FromString(st_op((st_op_id)id)->name);
}

/* _C.result_type(a, b): PyTorch's result_type of two operands. */
static PyObject *f_result_type(PyObject *m, PyObject *args) {
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO:result_type", &a, &b)) return NULL;
    st_operand op[2];
    if (st_fe_operand(a, &op[0], "result_type") ||
        st_fe_operand(b, &op[1], "result_type"))
        return NULL;
    st_meta ms[2];
    for (int k = 0; k < 2; k++) {
        if (op[k].t) {
            st_tensor_meta(op[k].t, &ms[k]);
        } else {
            memset(&ms[k], 0, sizeof ms[k]);
            ms[k].dtype = op[k].sdtype;
            ms[k].kind = ST_META_SCALAR;
        }
    }
    PyObject *d = st_fe_dtype_obj(st_result_type(ms, 2));
    Py_XINCREF(d);
    return d;
}

/* _C.tensor(data, dtype=None): a new tensor holding a copy of data. */
static PyObject *f_tensor(PyObject *m, PyObject *args) {
    PyObject *data, *dto = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:tensor", &data, &dto)) return NULL;
    st_dtype dt;
    if (dto != Py_None && st_fe_parse_dtype(dto, &dt, "tensor")) return NULL;
    st_tensor *t = st_fe_tensor_from_data(data, dto == Py_None ? NULL : &dt);
    if (!t) return PyErr_Occurred() ? NULL : st_fe_raise();
    return st_fe_wrap(t);
}

static PyObject *f_overlap_vec_bytes(PyObject *m, PyObject *a) {
    (void)m; (void)a;
    return PyLong_FromLong(st_overlap_vec_bytes());
}

static PyMethodDef ops_methods[] = {
    {"tensor", f_tensor, METH_VARARGS, "tensor(data, dtype=None)"},
    {"result_type", f_result_type, METH_VARARGS, "result_type(a, b)"},
    {"op", f_op, METH_VARARGS, "op(op_id, operands, attrs=None, out=None, device=None)"},
    {"_index_positions", st_fe_index_positions, METH_VARARGS,
     "_index_positions(t, key): the row-major positions in t of t[key]'s elements"},
    {"_to_device", f_to_device, METH_VARARGS, "_to_device(t, device): a copy of t on device"},
    {"empty", f_empty, METH_VARARGS, "empty(shape, dtype, device=None)"},
    {"manual_seed", f_manual_seed, METH_O, "seed the global generator"},
    {"initial_seed", f_initial_seed, METH_NOARGS, "the current seed"},
    {"_rng_get_state", f_rng_get_state, METH_NOARGS, "(seed, offset) of the global generator"},
    {"_rng_set_state", f_rng_set_state, METH_VARARGS, "_rng_set_state(seed, offset)"},
    {"memory_stats", f_memory_stats, METH_VARARGS, "allocator statistics"},
    {"empty_cache", f_empty_cache, METH_VARARGS, "release cached segments"},
    {"reset_peak_stats", f_reset_peak, METH_VARARGS, "reset the peaks"},
    {"_alloc_check", f_alloc_check, METH_VARARGS, "check allocator invariants"},
    {"kcache_stats", f_kcache_stats, METH_NOARGS, "eager kernel cache stats"},
    {"kcache_clear", f_kcache_clear, METH_NOARGS, "drop cached kernels"},
    {"set_eager_backend", f_set_eager_backend, METH_O, "backend of eager ops"},
    {"op_name", f_op_name, METH_O, "name of an op id"},
    {"_overlap_vec_bytes", f_overlap_vec_bytes, METH_NOARGS,
     "bytes of torch's CPU vector (the in-place overlap order's block)"},
    {NULL},
};

int st_fe_init_ops(PyObject *m) {
    for (int id = 0; id < ST_NOPS; id++) {
        char name[64] = "OP_";
        const char *n = st_op((st_op_id)id)->name;
        if (!n) continue; /* an op still being added */
        size_t k = 3;
        for (; *n && k < sizeof name - 1; n++, k++)
            name[k] = (char)((*n >= 'a' && *n <= 'z') ? *n - 32 : *n);
        name[k] = 0;
        if (PyModule_AddIntConstant(m, name, id) < 0) return -1;
    }
    return PyModule_AddFunctions(m, ops_methods);
}
