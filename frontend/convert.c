/* frontend/convert.c - conversion between Python data and tensors:
 * symtrace.tensor(data) from nested sequences, numbers, Tensors and
 * buffer-protocol objects (numpy arrays, array.array, memoryview);
 * Tensor.tolist()/item(); DLPack import (from_dlpack) and export
 * (__dlpack__, __dlpack_device__); numpy()/__array__ built on DLPack. */
#include "st_fe.h"
#include "st_cuda.h"
#include "st_nvrtc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================= DLPack ABI =================
 * Mirrors dlpack/include/dlpack/dlpack.h, DLPack v0.8 (DLPACK_VERSION 80,
 * the unversioned DLManagedTensor carried in a "dltensor" capsule), from
 * https://github.com/dmlc/dlpack. Layouts must match that header exactly. */
enum {
    kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3,
};
enum {
    kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLOpaqueHandle = 3,
    kDLBfloat = 4, kDLComplex = 5, kDLBool = 6,
};
typedef struct {
    int32_t device_type;      /* DLDeviceType (a C enum: int-sized) */
    int32_t device_id;
} DLDevice;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;         /* in elements; NULL = compact row-major */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* ================= scalar values and elements ================= */
enum { K_BOOL = 0, K_INT = 1, K_FLOAT = 2 };
typedef struct {
    int kind;
    double f;       /* K_FLOAT */
    int64_t i;      /* K_INT, K_BOOL (0/1) */
} sval;

/* float -> integer conversion truncates toward zero; values outside the
 * int64 range (and NaN) give INT64_MIN, what x86 itself produces. */
static int64_t f_to_i64(double f)
{
    if (!(f > -9223372036854775808.0 && f < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)f;
}

static void store_elem(char *p, st_dtype dt, const sval *v)
{
    double f = v->kind == K_FLOAT ? v->f : (double)v->i;
    switch (dt) {
    case ST_BOOL: {
        uint8_t b = v->kind == K_FLOAT ? (v->f != 0) : (v->i != 0);
        *(uint8_t *)p = b;
        break;
    }
    case ST_UINT8: case ST_INT8: {
        int64_t i = v->kind == K_FLOAT ? f_to_i64(v->f) : v->i;
        *(uint8_t *)p = (uint8_t)(uint64_t)i; /* wraps, as a C cast */
        break;
    }
    case ST_INT16: {
        int64_t i = v->kind == K_FLOAT ? f_to_i64(v->f) : v->i;
        uint16_t x = (uint16_t)(uint64_t)i;
        memcpy(p, &x, 2);
        break;
    }
    case ST_INT32: {
        int64_t i = v->kind == K_FLOAT ? f_to_i64(v->f) : v->i;
        int32_t x = (int32_t)(uint32_t)(uint64_t)i;
        memcpy(p, &x, 4);
        break;
    }
    case ST_INT64: {
        int64_t i = v->kind == K_FLOAT ? f_to_i64(v->f) : v->i;
        memcpy(p, &i, 8);
        break;
    }
    case ST_FLOAT16: {
        uint16_t h = st_float_to_half((float)f);
        memcpy(p, &h, 2);
        break;
    }
    case ST_BFLOAT16: {
        uint16_t h = st_float_to_bf16((float)f);
        memcpy(p, &h, 2);
        break;
    }
    case ST_FLOAT32: {
        float x = (float)f;
        memcpy(p, &x, 4);
        break;
    }
    case ST_FLOAT64:
        memcpy(p, &f, 8);
        break;
    default:
        break;
    }
}

static void load_elem(const char *p, st_dtype dt, sval *v)
{
    v->f = 0;
    v->i = 0;
    switch (dt) {
    case ST_BOOL:
        v->kind = K_BOOL;
        v->i = *(const uint8_t *)p != 0;
        break;
    case ST_UINT8:
        v->kind = K_INT;
        v->i = *(const uint8_t *)p;
        break;
    case ST_INT8:
        v->kind = K_INT;
        v->i = *(const int8_t *)p;
        break;
    case ST_INT16: {
        int16_t x;
        memcpy(&x, p, 2);
        v->kind = K_INT;
        v->i = x;
        break;
    }
    case ST_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        v->kind = K_INT;
        v->i = x;
        break;
    }
    case ST_INT64:
        v->kind = K_INT;
        memcpy(&v->i, p, 8);
        break;
    case ST_FLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        v->kind = K_FLOAT;
        v->f = st_half_to_float(h);
        break;
    }
    case ST_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        v->kind = K_FLOAT;
        v->f = st_bf16_to_float(h);
        break;
    }
    case ST_FLOAT32: {
        float x;
        memcpy(&x, p, 4);
        v->kind = K_FLOAT;
        v->f = x;
        break;
    }
    case ST_FLOAT64:
        v->kind = K_FLOAT;
        memcpy(&v->f, p, 8);
        break;
    default:
        v->kind = K_INT;
        break;
    }
}

static PyObject *sval_to_py(const sval *v)
{
    if (v->kind == K_BOOL)
        return PyBool_FromLong(v->i != 0);
    if (v->kind == K_INT)
        return PyLong_FromLongLong(v->i);
    return PyFloat_FromDouble(v->f);
}

static const char *shape_str(const int64_t *shape, int ndim, char *buf,
                             size_t n)
{
    return st_shape_str(shape, ndim, buf, n);
}

/* ================= host access to a tensor's elements =================
 * CPU tensors are read in place (any strides); other devices are copied
 * to a contiguous host buffer first. */
typedef struct {
    const char *data;             /* first element */
    int64_t strides[ST_MAX_DIMS]; /* in elements */
    void *owned;
} host_view;

static int host_view_get(st_tensor *t, host_view *hv)
{
    st_device *dev = st_tensor_device(t);
    hv->owned = NULL;
    if (!dev || dev->type == ST_DEV_CPU) {
        hv->data = st_tensor_data(t);
        memcpy(hv->strides, t->strides, sizeof(hv->strides));
        return 0;
    }
    size_t nbytes = (size_t)st_tensor_numel(t) * st_dtype_size(t->dtype);
    st_tensor *c = st_tensor_contiguous(t);
    if (!c)
        return st_fe_raise_int();
    void *buf = malloc(nbytes ? nbytes : 1);
    if (!buf) {
        st_tensor_decref(c);
        PyErr_NoMemory();
        return -1;
    }
    st_status s = nbytes ? dev->copy(dev, buf, st_tensor_data(c), nbytes)
                         : ST_OK;
    st_tensor_decref(c);
    if (s != ST_OK) {
        free(buf);
        return st_fe_raise_int();
    }
    hv->data = buf;
    hv->owned = buf;
    st_contiguous_strides(t->ndim, t->shape, hv->strides);
    return 0;
}

static void host_view_release(host_view *hv)
{
    free(hv->owned);
    hv->owned = NULL;
}

/* ================= tolist / item ================= */
static PyObject *tolist_rec(const st_tensor *t, const host_view *hv,
                            const char *p, int d)
{
    size_t isz = st_dtype_size(t->dtype);
    if (d == t->ndim) {
        sval v;
        load_elem(p, t->dtype, &v);
        return sval_to_py(&v);
    }
    PyObject *l = PyList_New(t->shape[d]);
    if (!l)
        return NULL;
    for (int64_t i = 0; i < t->shape[d]; i++) {
        PyObject *e = tolist_rec(t, hv, p + i * hv->strides[d] * (int64_t)isz,
                                 d + 1);
        if (!e) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

/* A read of tensor data into Python while a trace is active makes the
 * traced graph depend on data it cannot state: fail the trace (the read
 * itself still happens, eagerly). */
static void data_read(const char *what)
{
    if (st_rt_trace_active())
        st_rt_trace_fail(what);
}

PyObject *st_fe_tolist(st_tensor *t)
{
    host_view hv;
    if (host_view_get(t, &hv) < 0)
        return NULL;
    PyObject *r = tolist_rec(t, &hv, hv.data, 0);
    host_view_release(&hv);
    return r;
}

PyObject *st_fe_item(st_tensor *t)
{
    int64_t n = st_tensor_numel(t);
    if (n != 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "a Tensor with %lld elements cannot be converted to "
                     "Scalar", (long long)n);
        return NULL;
    }
    host_view hv;
    if (host_view_get(t, &hv) < 0)
        return NULL;
    sval v;
    load_elem(hv.data, t->dtype, &v);
    host_view_release(&hv);
    return sval_to_py(&v);
}

/* ================= buffer protocol import ================= */
typedef struct {
    char code;       /* struct-module code, prefix stripped */
    int size;
    bool is_signed;
    int kind;        /* K_BOOL, K_INT, K_FLOAT */
    st_dtype dtype;  /* symtrace dtype kept for this format */
} buf_fmt;

/* Parses a PEP 3118 single-item format. Integers narrower than 32 bits
 * (int8/uint8/int16/uint16) become int32 and uint32 becomes int64: symtrace
 * has no such dtypes (PyTorch would keep uint8 and friends). uint64 maps
 * to int64 (values >= 2**63 wrap). */
static int parse_buf_format(const Py_buffer *v, buf_fmt *f, const char *what)
{
    const char *s = v->format ? v->format : "B";
    const char *full = s;
    if (*s == '@' || *s == '=' || *s == '<') {
        s++;
    } else if (*s == '>' || *s == '!') {
        if (v->itemsize != 1) {
            PyErr_Format(PyExc_TypeError,
                         "%s: big-endian buffer format '%s' is not "
                         "supported", what, full);
            return -1;
        }
        s++;
    }
    if (!s[0] || s[1]) {
        PyErr_Format(PyExc_TypeError,
                     "%s: unsupported buffer format '%s'", what, full);
        return -1;
    }
    f->code = s[0];
    f->size = (int)v->itemsize;
    f->is_signed = false;
    switch (s[0]) {
    case '?':
        f->kind = K_BOOL;
        f->dtype = ST_BOOL;
        if (f->size != 1)
            goto bad;
        return 0;
    case 'b': case 'h': case 'i': case 'l': case 'q':
        f->is_signed = true;
        /* fall through */
    case 'B': case 'H': case 'I': case 'L': case 'Q':
        f->kind = K_INT;
        if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
            goto bad;
        if (f->size == 1)
            f->dtype = f->is_signed ? ST_INT8 : ST_UINT8;
        else if (f->size == 2 && f->is_signed)
            f->dtype = ST_INT16;
        else if (f->size < 4 || (f->size == 4 && f->is_signed))
            f->dtype = ST_INT32; /* uint16: no such dtype, widened */
        else
            f->dtype = ST_INT64;
        return 0;
    case 'e':
        f->kind = K_FLOAT;
        f->dtype = ST_FLOAT16;
        if (f->size != 2)
            goto bad;
        return 0;
    case 'f':
        f->kind = K_FLOAT;
        f->dtype = ST_FLOAT32;
        if (f->size != 4)
            goto bad;
        return 0;
    case 'd':
        f->kind = K_FLOAT;
        f->dtype = ST_FLOAT64;
        if (f->size != 8)
            goto bad;
        return 0;
    default:
        break;
    }
bad:
    PyErr_Format(PyExc_TypeError,
                 "%s: unsupported buffer format '%s' (itemsize %zd); "
                 "supported: bool, int8..int64, uint8..uint64, float16, "
                 "float32, float64", what, full, v->itemsize);
    return -1;
}

static void load_buf_elem(const char *p, const buf_fmt *f, sval *v)
{
    v->kind = f->kind;
    v->f = 0;
    v->i = 0;
    switch (f->code) {
    case '?':
        v->i = *(const uint8_t *)p != 0;
        return;
    case 'e': {
        uint16_t h;
        memcpy(&h, p, 2);
        v->f = st_half_to_float(h);
        return;
    }
    case 'f': {
        float x;
        memcpy(&x, p, 4);
        v->f = x;
        return;
    }
    case 'd':
        memcpy(&v->f, p, 8);
        return;
    default:
        break;
    }
    switch (f->size) {
    case 1:
        v->i = f->is_signed ? (int64_t)*(const int8_t *)p
                            : (int64_t)*(const uint8_t *)p;
        break;
    case 2: {
        uint16_t x;
        memcpy(&x, p, 2);
        v->i = f->is_signed ? (int64_t)(int16_t)x : (int64_t)x;
        break;
    }
    case 4: {
        uint32_t x;
        memcpy(&x, p, 4);
        v->i = f->is_signed ? (int64_t)(int32_t)x : (int64_t)x;
        break;
    }
    default: {
        uint64_t x;
        memcpy(&x, p, 8);
        v->i = (int64_t)x;
        break;
    }
    }
}

/* Fills a new contiguous CPU tensor from an already acquired buffer. */
static st_tensor *tensor_from_buffer(Py_buffer *v, const st_dtype *dtype)
{
    const char *what = "tensor()";
    buf_fmt f;
    if (parse_buf_format(v, &f, what) < 0)
        return NULL;
    if (v->ndim > ST_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError,
                     "%s: buffer has %d dimensions; at most %d are "
                     "supported", what, v->ndim, ST_MAX_DIMS);
        return NULL;
    }
    int ndim = v->ndim;
    int64_t shape[ST_MAX_DIMS], bstrides[ST_MAX_DIMS];
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        shape[d] = v->shape ? v->shape[d] : (d == 0 ? v->len / v->itemsize : 1);
        bstrides[d] = v->strides ? v->strides[d] : 0;
        numel *= shape[d];
    }
    if (!v->strides && ndim > 0) {
        int64_t s = v->itemsize;
        for (int d = ndim - 1; d >= 0; d--) {
            bstrides[d] = s;
            s *= shape[d];
        }
    }
    st_dtype dt = dtype ? *dtype : f.dtype;
    st_tensor *t = st_tensor_empty(st_rt_cpu(), dt, ndim, shape);
    if (!t) {
        st_fe_raise();
        return NULL;
    }
    char *dst = st_tensor_data(t);
    size_t osz = st_dtype_size(dt);
    bool same = (dt == f.dtype && (size_t)f.size == osz);
    if (numel == 0)
        return t;
    if (same && PyBuffer_IsContiguous(v, 'C')) {
        memcpy(dst, v->buf, (size_t)numel * osz);
        return t;
    }
    int64_t idx[ST_MAX_DIMS] = {0};
    const char *src = v->buf;
    for (int64_t k = 0; k < numel; k++) {
        if (same) {
            memcpy(dst, src, osz);
        } else {
            sval e;
            load_buf_elem(src, &f, &e);
            store_elem(dst, dt, &e);
        }
        dst += osz;
        for (int d = ndim - 1; d >= 0; d--) {
            src += bstrides[d];
            if (++idx[d] < shape[d])
                break;
            src -= bstrides[d] * shape[d];
            idx[d] = 0;
        }
    }
    return t;
}

/* ================= nested sequences ================= */
static bool is_seq_like(PyObject *o)
{
    if (PyList_Check(o) || PyTuple_Check(o))
        return true;
    if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) ||
        PyDict_Check(o) || st_fe_is_tensor(o))
        return false;
    return PySequence_Check(o) && !PyIndex_Check(o) && !PyFloat_Check(o);
}

/* A 0-d buffer (numpy scalar, 0-d array): reads it. 1 = read, 0 = not
 * such an object, -1 = error. */
static int read_0d_buffer(PyObject *o, sval *v, st_dtype *dt)
{
    if (!PyObject_CheckBuffer(o) || PyBytes_Check(o) || PyByteArray_Check(o))
        return 0;
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return 0;
    }
    int r = 0;
    if (b.ndim == 0) {
        buf_fmt f;
        if (parse_buf_format(&b, &f, "tensor()") < 0) {
            r = -1;
        } else {
            load_buf_elem(b.buf, &f, v);
            *dt = f.dtype;
            r = 1;
        }
    }
    PyBuffer_Release(&b);
    return r;
}

/* An int (a PyLong) as an int64 leaf; ValueError when it does not fit. */
static int read_int(PyObject *l, sval *v, st_dtype *dt)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(l, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
        return -1;
    }
    if (x == -1 && PyErr_Occurred())
        return -1;
    v->kind = K_INT;
    v->i = x;
    *dt = ST_INT64;
    return 0;
}

/* Reads a leaf (a number). 0 ok, -1 error (TypeError for non-numbers). */
static int read_leaf(PyObject *o, sval *v, st_dtype *dt)
{
    if (PyBool_Check(o)) {
        v->kind = K_BOOL;
        v->i = o == Py_True;
        *dt = ST_BOOL;
        return 0;
    }
    if (PyLong_CheckExact(o))
        return read_int(o, v, dt);
    if (PyFloat_CheckExact(o)) {
        v->kind = K_FLOAT;
        v->f = PyFloat_AS_DOUBLE(o);
        *dt = ST_FLOAT32;
        return 0;
    }
    if (st_fe_is_tensor(o)) {
        st_tensor *t = st_fe_unwrap(o);
        if (st_tensor_numel(t) != 1) {
            char b[128];
            PyErr_Format(PyExc_ValueError,
                         "only one element tensors can be converted to "
                         "Python scalars (got a tensor of shape %s)",
                         shape_str(t->shape, t->ndim, b, sizeof b));
            return -1;
        }
        host_view hv;
        if (host_view_get(t, &hv) < 0)
            return -1;
        load_elem(hv.data, t->dtype, v);
        host_view_release(&hv);
        *dt = t->dtype;
        return 0;
    }
    int r = read_0d_buffer(o, v, dt);
    if (r != 0)
        return r < 0 ? -1 : 0;
    if (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o))) {
        PyObject *l = PyNumber_Index(o);
        if (!l)
            return -1;
        r = read_int(l, v, dt);
        Py_DECREF(l);
        return r;
    }
    if (PyFloat_Check(o)) {
        v->kind = K_FLOAT;
        v->f = PyFloat_AsDouble(o);
        *dt = ST_FLOAT32;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "tensor(): invalid data type '%s'",
                 Py_TYPE(o)->tp_name);
    return -1;
}

/* Shape from the first element at each level. */
static int infer_seq_shape(PyObject *data, int64_t *shape, int *ndim)
{
    PyObject *cur = Py_NewRef(data);
    int n = 0;
    while (is_seq_like(cur)) {
        Py_ssize_t len = PySequence_Size(cur);
        if (len < 0) {
            /* 0-d numpy arrays are sequences without a length */
            PyErr_Clear();
            break;
        }
        if (n == ST_MAX_DIMS) {
            Py_DECREF(cur);
            PyErr_Format(PyExc_ValueError,
                         "tensor(): too many dimensions (at most %d are "
                         "supported)", ST_MAX_DIMS);
            return -1;
        }
        shape[n++] = len;
        if (len == 0)
            break;
        PyObject *next = PySequence_GetItem(cur, 0);
        Py_DECREF(cur);
        if (!next)
            return -1;
        cur = next;
    }
    Py_DECREF(cur);
    *ndim = n;
    return 0;
}

typedef struct {
    const int64_t *shape;
    int ndim;
    sval *vals;
    int64_t pos;
    st_dtype inferred;
    bool any;
} fill_ctx;

static int fill_rec(PyObject *o, int d, fill_ctx *c)
{
    if (d == c->ndim) {
        if (is_seq_like(o) && PySequence_Size(o) >= 0) {
            PyErr_Format(PyExc_ValueError,
                         "tensor(): expected a number at dim %d but got a "
                         "sequence ('%s')", d, Py_TYPE(o)->tp_name);
            return -1;
        }
        PyErr_Clear();
        st_dtype dt;
        sval *v = &c->vals[c->pos];
        if (read_leaf(o, v, &dt) < 0)
            return -1;
        c->pos++;
        c->inferred = c->any ? st_promote(c->inferred, dt) : dt;
        c->any = true;
        return 0;
    }
    if (!is_seq_like(o)) {
        PyErr_Format(PyExc_TypeError,
                     "tensor(): expected a sequence at dim %d (got '%s')",
                     d, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *seq = PySequence_Fast(o, "tensor(): expected a sequence");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != c->shape[d]) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError,
                     "expected sequence of length %lld at dim %d (got %zd)",
                     (long long)c->shape[d], d, n);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fill_rec(items[i], d + 1, c) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* Whether v overflows the integer dtype dt, as c10's checked_convert that
 * torch.tensor(data, dtype=...) applies to Python numbers: a float outside
 * [min, max] (or NaN), an int above max or below min (for uint8: below
 * -255, as a negative int wraps). Floats and bool take anything. */
static bool int_overflows(const sval *v, st_dtype dt)
{
    double lo, hi;
    switch (dt) {
    case ST_UINT8: lo = 0; hi = 255; break;
    case ST_INT8: lo = -128; hi = 127; break;
    case ST_INT16: lo = -32768; hi = 32767; break;
    case ST_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    case ST_INT64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
    default: return false;
    }
    if (v->kind == K_FLOAT)
        return !(v->f >= lo && (dt == ST_INT64 ? v->f < 9223372036854775808.0 : v->f <= hi));
    if (v->kind != K_INT || dt == ST_INT64)
        return false;
    if (dt == ST_UINT8)
        return v->i > 255 || v->i < -255;
    return v->i < (int64_t)lo || v->i > (int64_t)hi;
}

static st_tensor *tensor_from_seq(PyObject *data, const st_dtype *dtype)
{
    int64_t shape[ST_MAX_DIMS];
    int ndim = 0;
    if (infer_seq_shape(data, shape, &ndim) < 0)
        return NULL;
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++)
        numel *= shape[d];
    sval *vals = PyMem_Malloc(sizeof(sval) * (size_t)(numel ? numel : 1));
    if (!vals) {
        PyErr_NoMemory();
        return NULL;
    }
    fill_ctx c = {shape, ndim, vals, 0, ST_FLOAT32, false};
    if (fill_rec(data, 0, &c) < 0) {
        PyMem_Free(vals);
        return NULL;
    }
    /* An empty sequence is float32, as in PyTorch. */
    st_dtype dt = dtype ? *dtype : (c.any ? c.inferred : ST_FLOAT32);
    for (int64_t k = 0; dtype && k < numel; k++)
        if (int_overflows(&vals[k], dt)) {
            PyMem_Free(vals);
            PyErr_Format(PyExc_RuntimeError, "value cannot be converted to type %s "
                         "without overflow", st_dtype_name(dt));
            return NULL;
        }
    st_tensor *t = st_tensor_empty(st_rt_cpu(), dt, ndim, shape);
    if (!t) {
        PyMem_Free(vals);
        st_fe_raise();
        return NULL;
    }
    char *dst = st_tensor_data(t);
    size_t osz = st_dtype_size(dt);
    for (int64_t k = 0; k < numel; k++)
        store_elem(dst + k * (int64_t)osz, dt, &vals[k]);
    PyMem_Free(vals);
    return t;
}


/* A copy of a tensor's data, as torch.tensor(t): detached (no history). */
static st_tensor *copy_of_tensor(st_tensor *src, const st_dtype *dtype)
{
    st_dtype dt = dtype ? *dtype : src->dtype;
    bool grad = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_operand op = {.t = src};
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    st_tensor *given[ST_MAX_OUT] = {0}, *out[ST_MAX_OUT] = {0};
    int rc = st_rt_eager(dt != src->dtype ? ST_OP_CAST : ST_OP_COPY, &op, 1,
                         dt != src->dtype ? &a : NULL, given, out);
    st_ad_set_grad_enabled(grad);
    if (rc < 0)
        return (st_tensor *)st_fe_raise();
    return out[0];
}

st_tensor *st_fe_tensor_from_data(PyObject *data, const st_dtype *dtype)
{
    if (st_fe_is_tensor(data))
        return copy_of_tensor(st_fe_unwrap(data), dtype);
    if (PyUnicode_Check(data) || PyDict_Check(data) || data == Py_None) {
        PyErr_Format(PyExc_TypeError, "tensor(): invalid data type '%s'",
                     Py_TYPE(data)->tp_name);
        return NULL;
    }
    if (!PyList_Check(data) && !PyTuple_Check(data) &&
        PyObject_CheckBuffer(data)) {
        Py_buffer v;
        if (PyObject_GetBuffer(data, &v, PyBUF_RECORDS_RO) < 0)
            return NULL;
        st_tensor *t = tensor_from_buffer(&v, dtype);
        PyBuffer_Release(&v);
        return t;
    }
    return tensor_from_seq(data, dtype);
}

/* ================= DLPack ================= */
static int dl_from_dtype(st_dtype dt, DLDataType *o)
{
    o->lanes = 1;
    o->bits = (uint8_t)(st_dtype_size(dt) * 8);
    switch (dt) {
    case ST_BOOL: o->code = kDLBool; break;
    case ST_UINT8: o->code = kDLUInt; break;
    case ST_INT8: case ST_INT16: case ST_INT32: case ST_INT64: o->code = kDLInt; break;
    case ST_BFLOAT16: o->code = kDLBfloat; break;
    default: o->code = kDLFloat; break;
    }
    return 0;
}

static int dl_to_dtype(DLDataType d, st_dtype *out)
{
    if (d.lanes != 1)
        return -1;
    switch (d.code) {
    case kDLBool:
        if (d.bits == 8) { *out = ST_BOOL; return 0; }
        break;
    case kDLUInt:
        if (d.bits == 8) { *out = ST_UINT8; return 0; }
        break;
    case kDLInt:
        if (d.bits == 8) { *out = ST_INT8; return 0; }
        if (d.bits == 16) { *out = ST_INT16; return 0; }
        if (d.bits == 32) { *out = ST_INT32; return 0; }
        if (d.bits == 64) { *out = ST_INT64; return 0; }
        break;
    case kDLFloat:
        if (d.bits == 16) { *out = ST_FLOAT16; return 0; }
        if (d.bits == 32) { *out = ST_FLOAT32; return 0; }
        if (d.bits == 64) { *out = ST_FLOAT64; return 0; }
        break;
    case kDLBfloat:
        if (d.bits == 16) { *out = ST_BFLOAT16; return 0; }
        break;
    default:
        break;
    }
    return -1;
}

/* Export: one allocation holding the DLManagedTensor (first, so the
 * deleter can free it) and the shape/strides arrays it points into. */
typedef struct {
    DLManagedTensor mt;
    int64_t shape[ST_MAX_DIMS];
    int64_t strides[ST_MAX_DIMS];
} dl_export;

static void dl_export_deleter(DLManagedTensor *self)
{
    if (!self)
        return;
    st_tensor *t = self->manager_ctx;
    /* the consumer may still have kernels reading the memory on its own
     * stream: let them finish before the caching allocator can hand the
     * block to one of ours */
    const st_cuda_api *api = st_tensor_device(t)->type == ST_DEV_CUDA
                                 ? st_cuda_api_get() : NULL;
    if (api && st_cuda_make_current(st_tensor_device(t)) == ST_OK)
        api->CtxSynchronize();
    st_tensor_decref(t);
    free(self);
}

static void dl_capsule_destructor(PyObject *cap)
{
    /* A consumer renames a consumed capsule to "used_dltensor"; it owns
     * the tensor then. Otherwise the capsule still owns it. */
    if (!PyCapsule_IsValid(cap, "dltensor"))
        return;
    /* IsValid checked the name, so GetPointer cannot fail (and set an
     * exception inside a destructor); our own deleter raises nothing. */
    DLManagedTensor *mt = PyCapsule_GetPointer(cap, "dltensor");
    if (mt && mt->deleter)
        mt->deleter(mt);
}

static PyObject *t_dlpack(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy",
                             NULL};
    PyObject *stream = Py_None, *maxv = Py_None, *dldev = Py_None,
             *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OOO:__dlpack__", kwlist,
                                     &stream, &maxv, &dldev, &copy))
        return NULL;
    data_read("data-dependent: Tensor.__dlpack__()");
    st_tensor *t = st_fe_unwrap(self);
    st_device *dev = st_tensor_device(t);
    int devtype = (dev && dev->type == ST_DEV_CUDA) ? kDLCUDA : kDLCPU;
    int devid = (dev && dev->type == ST_DEV_CUDA) ? dev->index : 0;
    if (dldev != Py_None) {
        int dt_ = 0, di = 0;
        if (!PyArg_ParseTuple(dldev, "ii:dl_device", &dt_, &di))
            return NULL;
        if (dt_ != devtype || di != devid) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: cannot export a tensor on %s to "
                         "DLPack device (%d, %d)",
                         dev ? dev->name : "cpu", dt_, di);
            return NULL;
        }
    }
    st_tensor *src = t;
    st_tensor_incref(src);
    if (copy == Py_True) {
        st_tensor *c = st_tensor_empty(dev ? dev : st_rt_cpu(), t->dtype,
                                       t->ndim, t->shape);
        st_operand op = {.t = t};
        st_attrs a;
        memset(&a, 0, sizeof a);
        if (!c || st_fe_eager_into(ST_OP_COPY, &op, 1, &a, c) < 0) {
            if (c)
                st_tensor_decref(c);
            else
                st_fe_raise();
            st_tensor_decref(src);
            return NULL;
        }
        st_tensor_decref(src);
        src = c;
    }
    /* our kernels (the copy too) run on our own stream: the consumer's
     * stream may read only after they finished (the stream argument is
     * not used to order the two streams; a synchronization is always
     * right) */
    if (devtype == kDLCUDA && st_cuda_synchronize(dev->index) != ST_OK) {
        st_tensor_decref(src);
        return st_fe_raise();
    }
    dl_export *e = calloc(1, sizeof *e);
    if (!e) {
        st_tensor_decref(src);
        return PyErr_NoMemory();
    }
    e->mt.manager_ctx = src;
    e->mt.deleter = dl_export_deleter;
    DLTensor *d = &e->mt.dl_tensor;
    d->data = st_tensor_data(src);
    d->device.device_type = devtype;
    d->device.device_id = devid;
    d->ndim = src->ndim;
    dl_from_dtype(src->dtype, &d->dtype);
    memcpy(e->shape, src->shape, sizeof(int64_t) * (size_t)src->ndim);
    memcpy(e->strides, src->strides, sizeof(int64_t) * (size_t)src->ndim);
    d->shape = e->shape;
    d->strides = e->strides;
    d->byte_offset = 0;
    PyObject *cap = PyCapsule_New(&e->mt, "dltensor", dl_capsule_destructor);
    if (!cap) {
        dl_export_deleter(&e->mt);
        return NULL;
    }
    return cap;
}

static PyObject *t_dlpack_device(PyObject *self, PyObject *unused)
{
    st_tensor *t = st_fe_unwrap(self);
    st_device *dev = st_tensor_device(t);
    if (dev && dev->type == ST_DEV_CUDA)
        return Py_BuildValue("(ii)", kDLCUDA, dev->index);
    return Py_BuildValue("(ii)", kDLCPU, 0);
}

/* Import: the storage keeps the producer's DLManagedTensor; its deleter
 * runs (with the GIL) when the last tensor over it goes away. */
static void dl_import_free(void *ctx)
{
    DLManagedTensor *mt = ctx;
    if (!mt || !mt->deleter)
        return;
    if (!Py_IsInitialized())
        return;   /* interpreter gone: leak rather than crash */
    PyGILState_STATE g = PyGILState_Ensure();
    mt->deleter(mt);
    PyGILState_Release(g);
}

/* A tensor over an existing storage (steals s). The runtime has no
 * constructor for this, so an empty tensor's storage is replaced; the
 * st_tensor fields are public in st_runtime.h. */
static st_tensor *tensor_on_storage(st_storage *s, st_dtype dt, int ndim,
                                    const int64_t *shape,
                                    const int64_t *strides, int64_t offset)
{
    int64_t zero = 0;
    st_tensor *t = st_tensor_empty(s->device, dt, 1, &zero);
    if (!t) {
        st_storage_decref(s);
        return NULL;
    }
    st_storage_decref(t->storage);
    t->storage = s;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
    t->offset = offset;
    return t;
}

/* GPU idx for imported memory (its kernels come from the nvrtc backend);
 * NULL with the Python error set */
static st_device *dl_cuda_device(int idx)
{
    st_device *d = st_rt_device(ST_DEV_CUDA, idx);
    if (d && st_nvrtc_register() != ST_OK)
        d = NULL;
    if (!d)
        st_fe_raise();
    return d;
}

static PyObject *fe_from_dlpack(PyObject *mod, PyObject *obj)
{
    PyObject *cap = NULL;
    bool ordered = false;   /* the producer ordered its work before our stream */
    if (PyCapsule_CheckExact(obj)) {
        cap = Py_NewRef(obj);
    } else {
        PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
        if (!meth) {
            PyErr_Format(PyExc_TypeError,
                         "from_dlpack: expected an object with __dlpack__ "
                         "or a DLPack capsule, got %s", Py_TYPE(obj)->tp_name);
            return NULL;
        }
        PyObject *devm = PyObject_GetAttrString(obj, "__dlpack_device__");
        if (devm) {
            PyObject *dv = PyObject_CallNoArgs(devm);
            Py_DECREF(devm);
            int dtp = 0, did = 0;
            if (!dv || !PyArg_ParseTuple(dv, "ii", &dtp, &did)) {
                Py_XDECREF(dv);
                Py_DECREF(meth);
                return NULL;
            }
            Py_DECREF(dv);
            if (dtp != kDLCPU && dtp != kDLCUDAHost && dtp != kDLCUDA) {
                Py_DECREF(meth);
                PyErr_Format(PyExc_RuntimeError,
                             "from_dlpack: only CPU and CUDA memory can be "
                             "imported (got DLPack device type %d, id %d)", dtp, did);
                return NULL;
            }
            if (dtp == kDLCUDA) {
                /* the producer orders its pending work before our stream
                 * (the DLPack stream protocol) */
                st_device *gd = dl_cuda_device(did);
                if (!gd) {
                    Py_DECREF(meth);
                    return NULL;
                }
                PyObject *kw = Py_BuildValue("{s:K}", "stream", (unsigned long long)(uintptr_t)
                                             st_cuda_dev_of(gd)->stream);
                PyObject *noargs = PyTuple_New(0);
                cap = kw && noargs ? PyObject_Call(meth, noargs, kw) : NULL;
                Py_XDECREF(kw);
                Py_XDECREF(noargs);
                Py_DECREF(meth);
                if (!cap)
                    return NULL;
                meth = NULL;
                ordered = true;
            }
        } else {
            PyErr_Clear();
        }
        if (meth) {
            cap = PyObject_CallNoArgs(meth);
            Py_DECREF(meth);
            if (!cap)
                return NULL;
        }
    }
    if (!PyCapsule_IsValid(cap, "dltensor")) {
        if (PyCapsule_CheckExact(cap) &&
            PyCapsule_IsValid(cap, "used_dltensor"))
            PyErr_SetString(PyExc_ValueError,
                            "from_dlpack: this DLPack capsule was already "
                            "consumed");
        else
            PyErr_Format(PyExc_TypeError,
                         "from_dlpack: expected a \"dltensor\" capsule, got "
                         "%s", Py_TYPE(cap)->tp_name);
        Py_DECREF(cap);
        return NULL;
    }
    DLManagedTensor *mt = PyCapsule_GetPointer(cap, "dltensor");
    if (!mt) {
        Py_DECREF(cap);
        return NULL;
    }
    DLTensor *d = &mt->dl_tensor;
    st_dtype dt;
    st_device *on = st_rt_cpu();
    if (d->device.device_type == kDLCUDA) {
        if (!(on = dl_cuda_device(d->device.device_id)))
            goto fail;
        /* a bare capsule names no stream to order: wait for all work */
        if (!ordered && st_cuda_synchronize(-1) != ST_OK) {
            st_fe_raise();
            goto fail;
        }
    } else if (d->device.device_type != kDLCPU &&
               d->device.device_type != kDLCUDAHost) {
        PyErr_Format(PyExc_RuntimeError,
                     "from_dlpack: only CPU and CUDA memory can be imported "
                     "(got DLPack device type %d)", (int)d->device.device_type);
        goto fail;
    }
    if (d->ndim < 0 || d->ndim > ST_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError,
                     "from_dlpack: %d dimensions; at most %d are supported",
                     (int)d->ndim, ST_MAX_DIMS);
        goto fail;
    }
    if (dl_to_dtype(d->dtype, &dt) < 0) {
        PyErr_Format(PyExc_TypeError,
                     "from_dlpack: unsupported DLPack dtype (code %d, bits "
                     "%d, lanes %d); supported: bool, uint8, int8, int16, int32, int64, float16,"
                     " bfloat16, float32, float64",
                     d->dtype.code, d->dtype.bits, d->dtype.lanes);
        goto fail;
    }
    int ndim = d->ndim;
    int64_t strides[ST_MAX_DIMS];
    if (d->strides) {
        memcpy(strides, d->strides, sizeof(int64_t) * (size_t)ndim);
    } else {
        st_contiguous_strides(ndim, d->shape, strides);
    }
    int64_t lo = 0, hi = 0, numel = 1;
    for (int k = 0; k < ndim; k++) {
        if (d->shape[k] < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "from_dlpack: negative size in shape");
            goto fail;
        }
        numel *= d->shape[k];
    }
    if (numel > 0) {
        for (int k = 0; k < ndim; k++) {
            int64_t ext = (d->shape[k] - 1) * strides[k];
            if (ext < 0)
                lo += ext;
            else
                hi += ext;
        }
    }
    size_t isz = st_dtype_size(dt);
    char *base = (char *)d->data + d->byte_offset + lo * (int64_t)isz;
    size_t nbytes = numel > 0 ? (size_t)(hi - lo + 1) * isz : 0;
    st_storage *s = st_storage_external(on, base, nbytes, dl_import_free, mt);
    if (!s) {
        st_fe_raise();
        goto fail;
    }
    /* From here the storage owns mt: the capsule is consumed. */
    PyCapsule_SetName(cap, "used_dltensor");
    Py_DECREF(cap);
    st_tensor *t = tensor_on_storage(s, dt, ndim, d->shape, strides, -lo);
    return st_fe_wrap(t);
fail:
    Py_DECREF(cap);
    return NULL;
}

/* ================= numpy =================
 * numpy.from_dlpack() gives read-only arrays, so numpy() goes through the
 * array interface (version 3) instead: a small namespace object carries
 * __array_interface__ and a reference to the tensor, and becomes the
 * array's base, which keeps the memory alive. */
static PyObject *numpy_view(PyObject *np, PyObject *tensor)
{
    st_tensor *t = st_fe_unwrap(tensor);
    static const char *typestr[ST_NDTYPES] = {
        [ST_BOOL] = "|b1", [ST_UINT8] = "|u1", [ST_INT8] = "|i1",
        [ST_INT16] = "<i2", [ST_INT32] = "<i4", [ST_INT64] = "<i8",
        [ST_FLOAT16] = "<f2", [ST_BFLOAT16] = NULL, [ST_FLOAT32] = "<f4",
        [ST_FLOAT64] = "<f8",
    };
    if (!typestr[t->dtype]) {
        PyErr_SetString(PyExc_TypeError,
                        "Got unsupported ScalarType BFloat16");
        return NULL;
    }
    int64_t isz = (int64_t)st_dtype_size(t->dtype);
    PyObject *shape = PyTuple_New(t->ndim);
    PyObject *strides = PyTuple_New(t->ndim);
    if (!shape || !strides)
        goto fail0;
    for (int d = 0; d < t->ndim; d++) {
        PyObject *a = PyLong_FromLongLong(t->shape[d]);
        PyObject *b = PyLong_FromLongLong(t->strides[d] * isz);
        if (!a || !b) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            goto fail0;
        }
        PyTuple_SET_ITEM(shape, d, a);
        PyTuple_SET_ITEM(strides, d, b);
    }
    PyObject *iface = Py_BuildValue(
        "{sNsssNsNsi}", "shape", shape, "typestr", typestr[t->dtype],
        "data", Py_BuildValue("(NO)",
                              PyLong_FromVoidPtr(st_tensor_data(t)),
                              Py_False),
        "strides", strides, "version", 3);
    if (!iface)
        return NULL;
    PyObject *types = PyImport_ImportModule("types");
    PyObject *ns_t = types ? PyObject_GetAttrString(types, "SimpleNamespace")
                           : NULL;
    Py_XDECREF(types);
    PyObject *kw = ns_t ? Py_BuildValue("{sOsO}", "__array_interface__",
                                        iface, "tensor", tensor) : NULL;
    PyObject *empty = kw ? PyTuple_New(0) : NULL;
    PyObject *holder = empty ? PyObject_Call(ns_t, empty, kw) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(kw);
    Py_XDECREF(ns_t);
    Py_DECREF(iface);
    if (!holder)
        return NULL;
    PyObject *r = PyObject_CallMethod(np, "asarray", "O", holder);
    Py_DECREF(holder);
    return r;
fail0:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return NULL;
}

static PyObject *numpy_impl(PyObject *self, int force);

static PyObject *t_numpy(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"force", NULL};
    int force = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p:numpy", kwlist, &force))
        return NULL;
    data_read("data-dependent: Tensor.numpy()");
    return numpy_impl(self, force);
}

static PyObject *numpy_impl(PyObject *self, int force)
{
    st_tensor *t = st_fe_unwrap(self);
    st_device *dev = st_tensor_device(t);
    if (t->requires_grad && !force && st_ad_grad_enabled()) {   /* torch allows it under no_grad */
        PyErr_SetString(PyExc_RuntimeError,
                        "Can't call numpy() on Tensor that requires grad. "
                        "Use tensor.detach().numpy() instead.");
        return NULL;
    }
    if (dev && dev->type != ST_DEV_CPU && !force) {
        PyErr_Format(PyExc_TypeError,
                     "can't convert %s device type tensor to numpy. Use "
                     "Tensor.cpu() to copy the tensor to host memory first.",
                     dev->name);
        return NULL;
    }
    if (t->dtype == ST_BFLOAT16) {
        PyErr_SetString(PyExc_TypeError,
                        "Got unsupported ScalarType BFloat16");
        return NULL;
    }
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) {
        PyErr_Clear();
        PyErr_SetString(PyExc_RuntimeError,
                        "Numpy is not available: numpy() needs the numpy "
                        "package installed");
        return NULL;
    }
    PyObject *r;
    if (!dev || dev->type == ST_DEV_CPU) {
        r = numpy_view(np, self);
    } else {
        /* force=True: copy to the host through tolist-free raw bytes */
        PyObject *host = NULL;
        st_tensor *c = st_tensor_empty(st_rt_cpu(), t->dtype, t->ndim,
                                       t->shape);
        host_view hv;
        if (!c) {
            Py_DECREF(np);
            return st_fe_raise();
        }
        if (host_view_get(t, &hv) < 0) {
            st_tensor_decref(c);
            Py_DECREF(np);
            return NULL;
        }
        memcpy(st_tensor_data(c), hv.data,
               (size_t)st_tensor_numel(t) * st_dtype_size(t->dtype));
        host_view_release(&hv);
        host = st_fe_wrap(c);
        r = host ? numpy_view(np, host) : NULL;
        Py_XDECREF(host);
    }
    Py_DECREF(np);
    return r;
}

static PyObject *t_array(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:__array__", kwlist,
                                     &dtype, &copy))
        return NULL;
    data_read("data-dependent: Tensor.__array__()");
    PyObject *arr = numpy_impl(self, 0);
    if (!arr || (dtype == Py_None && copy != Py_True))
        return arr;
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) {
        Py_DECREF(arr);
        return NULL;
    }
    PyObject *r;
    if (copy == Py_None)
        r = PyObject_CallMethod(np, "asarray", "OO", arr, dtype);
    else {
        PyObject *f = PyObject_GetAttrString(np, "array");
        PyObject *a = f ? Py_BuildValue("(O)", arr) : NULL;
        PyObject *k = a ? Py_BuildValue("{sOsO}", "dtype", dtype, "copy",
                                        copy) : NULL;
        r = k ? PyObject_Call(f, a, k) : NULL;
        Py_XDECREF(f);
        Py_XDECREF(a);
        Py_XDECREF(k);
    }
    Py_DECREF(np);
    Py_DECREF(arr);
    return r;
}

static PyObject *t_tolist(PyObject *self, PyObject *unused)
{
    data_read("data-dependent: Tensor.tolist()");
    return st_fe_tolist(st_fe_unwrap(self));
}

static PyObject *t_item(PyObject *self, PyObject *unused)
{
    data_read("data-dependent: Tensor.item()");
    return st_fe_item(st_fe_unwrap(self));
}

PyMethodDef st_fe_convert_methods[] = {
    {"from_dlpack", fe_from_dlpack, METH_O,
     "from_dlpack(obj) -> Tensor sharing obj's memory (CPU only); obj has "
     "__dlpack__ or is a \"dltensor\" capsule"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef st_fe_convert_tensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))t_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(stream=None, *, max_version=None, dl_device=None, "
     "copy=None) -> \"dltensor\" capsule (unversioned DLPack)"},
    {"__dlpack_device__", t_dlpack_device, METH_NOARGS,
     "(device_type, device_id): (1, 0) for the CPU"},
    {"numpy", (PyCFunction)(void (*)(void))t_numpy,
     METH_VARARGS | METH_KEYWORDS,
     "numpy(*, force=False) -> numpy array sharing memory (CPU tensors)"},
    {"__array__", (PyCFunction)(void (*)(void))t_array,
     METH_VARARGS | METH_KEYWORDS, "__array__(dtype=None, copy=None)"},
    {"tolist", t_tolist, METH_NOARGS,
     "nested lists of Python numbers"},
    {"item", t_item, METH_NOARGS, "the value of a one-element tensor"},
    {NULL, NULL, 0, NULL},
};

int st_fe_init_convert(PyObject *m)
{
    return 0;
}
