/* frontend/indexing.c - Tensor.__getitem__/__setitem__ with PyTorch's
 * indexing: ints, slices (step > 0), None, Ellipsis, True/False, tuples of
 * those (results are views sharing storage); plus one advanced index per
 * subscript: a 1-D (or n-D) int tensor / list of ints (index_select) or a
 * bool mask over consecutive dims (reads: the selected elements; writes:
 * a where()-style fill). */
#include "st_fe.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 64

typedef enum { IT_INT, IT_SLICE, IT_NONE, IT_ELLIPSIS, IT_BOOL, IT_ADV } it_kind;

typedef struct {
    it_kind k;
    int64_t i;                  /* IT_INT value, IT_BOOL value */
    Py_ssize_t start, stop, step;
    st_tensor *adv;             /* IT_ADV: owned */
    bool mask;                  /* IT_ADV: adv is a bool mask */
} item;

typedef struct {
    item it[MAX_ITEMS];
    int n;
    int adv;                    /* index of the advanced item or -1 */
} key_t_;

static void key_clear(key_t_ *k)
{
    for (int j = 0; j < k->n; j++)
        if (k->it[j].adv)
            st_tensor_decref(k->it[j].adv);
    k->n = 0;
}

static char *shp(const st_tensor *t, char *b, size_t n)
{
    return st_shape_str(t->shape, t->ndim, b, n);
}

/* ---- host reads of small tensors (index tensors, masks) ---- */
static int64_t *read_ints_host(st_tensor *t, int64_t *n_out)
{
    int64_t n = st_tensor_numel(t);
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!r) {
        PyErr_NoMemory();
        return NULL;
    }
    st_tensor *c = st_tensor_contiguous(t);
    if (!c) {
        free(r);
        st_fe_raise();
        return NULL;
    }
    size_t isz = st_dtype_size(c->dtype);
    st_device *dev = st_tensor_device(c);
    const char *src = st_tensor_data(c);
    char *tmp = NULL;
    if (dev && dev->type != ST_DEV_CPU && n > 0) {
        tmp = malloc((size_t)n * isz);
        if (!tmp || dev->copy(dev, tmp, src, (size_t)n * isz) != ST_OK) {
            free(tmp);
            free(r);
            st_tensor_decref(c);
            if (!PyErr_Occurred()) {
                if (st_err_kind() != ST_OK)
                    st_fe_raise();
                else
                    PyErr_NoMemory();
            }
            return NULL;
        }
        src = tmp;
    }
    for (int64_t j = 0; j < n; j++) {
        const char *p = src + j * (int64_t)isz;
        switch (c->dtype) {
        case ST_BOOL: r[j] = *(const uint8_t *)p != 0; break;
        case ST_INT32: { int32_t x; memcpy(&x, p, 4); r[j] = x; break; }
        default: { int64_t x; memcpy(&x, p, 8); r[j] = x; break; }
        }
    }
    free(tmp);
    st_tensor_decref(c);
    *n_out = n;
    return r;
}

/* A new 1-D int64 tensor on dev holding vals[0..n). */
static st_tensor *ints_to_tensor(st_device *dev, const int64_t *vals,
                                 int64_t n)
{
    st_tensor *t = st_tensor_empty(dev, ST_INT64, 1, &n);
    if (!t) {
        st_fe_raise();
        return NULL;
    }
    size_t nb = (size_t)n * sizeof(int64_t);
    if (nb) {
        if (!dev || dev->type == ST_DEV_CPU) {
            memcpy(st_tensor_data(t), vals, nb);
        } else if (dev->copy(dev, st_tensor_data(t), vals, nb) != ST_OK) {
            st_tensor_decref(t);
            st_fe_raise();
            return NULL;
        }
    }
    return t;
}

/* ---- key parsing ---- */
static int index_error_types(PyObject *o)
{
    PyErr_Format(PyExc_IndexError,
                 "only integers, slices (`:`), ellipsis (`...`), None and "
                 "long or byte Variables are valid indices (got %s)",
                 Py_TYPE(o)->tp_name);
    return -1;
}

static int item_from_tensor(st_tensor *t, item *it, bool owned)
{
    if (t->dtype == ST_BOOL || t->dtype == ST_INT32 ||
        t->dtype == ST_INT64) {
        if (t->ndim == 0) {
            int64_t n;
            int64_t *v = read_ints_host(t, &n);
            if (!v)
                return -1;
            it->k = t->dtype == ST_BOOL ? IT_BOOL : IT_INT;
            it->i = v[0];
            free(v);
            if (owned)
                st_tensor_decref(t);
            return 0;
        }
        it->k = IT_ADV;
        it->mask = t->dtype == ST_BOOL;
        it->adv = t;
        if (!owned)
            st_tensor_incref(t);
        return 0;
    }
    if (owned)
        st_tensor_decref(t);
    PyErr_SetString(PyExc_IndexError,
                    "tensors used as indices must be long, int, byte or "
                    "bool tensors");
    return -1;
}

static int parse_item(PyObject *o, item *it)
{
    memset(it, 0, sizeof *it);
    if (o == Py_None) {
        it->k = IT_NONE;
        return 0;
    }
    if (o == Py_Ellipsis) {
        it->k = IT_ELLIPSIS;
        return 0;
    }
    if (PyBool_Check(o)) {
        it->k = IT_BOOL;
        it->i = o == Py_True;
        return 0;
    }
    if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_IndexError, "index out of range");
            return -1;
        }
        if (v == -1 && PyErr_Occurred())
            return -1;
        it->k = IT_INT;
        it->i = v;
        return 0;
    }
    if (PySlice_Check(o)) {
        if (PySlice_Unpack(o, &it->start, &it->stop, &it->step) < 0)
            return -1;
        if (it->step <= 0) {
            PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
            return -1;
        }
        it->k = IT_SLICE;
        return 0;
    }
    if (st_fe_is_tensor(o))
        return item_from_tensor(st_fe_unwrap(o), it, false);
    if (PyList_Check(o) || PyTuple_Check(o) ||
        (PyObject_CheckBuffer(o) && !PyBytes_Check(o) &&
         !PyByteArray_Check(o))) {
        st_tensor *t;
        if ((PyList_Check(o) || PyTuple_Check(o)) &&
            PySequence_Size(o) == 0) {
            st_dtype i64 = ST_INT64;
            t = st_fe_tensor_from_data(o, &i64);
        } else {
            t = st_fe_tensor_from_data(o, NULL);
        }
        if (!t) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                return index_error_types(o);
            }
            return -1;
        }
        return item_from_tensor(t, it, true);
    }
    if (PyIndex_Check(o)) {
        Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_IndexError);
        if (v == -1 && PyErr_Occurred())
            return -1;
        it->k = IT_INT;
        it->i = v;
        return 0;
    }
    return index_error_types(o);
}

static int parse_key(PyObject *key, key_t_ *k)
{
    k->n = 0;
    k->adv = -1;
    if (PyTuple_Check(key)) {
        Py_ssize_t n = PyTuple_GET_SIZE(key);
        if (n > MAX_ITEMS) {
            PyErr_Format(PyExc_IndexError, "too many indices (%zd)", n);
            return -1;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            if (parse_item(PyTuple_GET_ITEM(key, j), &k->it[k->n]) < 0) {
                key_clear(k);
                return -1;
            }
            k->n++;
        }
    } else {
        if (parse_item(key, &k->it[0]) < 0)
            return -1;
        k->n = 1;
    }
    for (int j = 0; j < k->n; j++) {
        if (k->it[j].k != IT_ADV)
            continue;
        if (k->adv >= 0) {
            key_clear(k);
            PyErr_SetString(PyExc_NotImplementedError,
                            "symtrace indexing supports one advanced index "
                            "(a tensor or list) per subscript");
            return -1;
        }
        k->adv = j;
    }
    return 0;
}

/* ---- applying the basic part ----
 * On success *out is a new tensor (never self itself), *adv_dim the
 * position of the advanced item's dims in *out and *adv_src its first dim
 * in self. */
static int apply_basic(st_tensor *self, key_t_ *k, st_tensor **out,
                       int *adv_dim, int *adv_src)
{
    int consumed = 0, ellipses = 0;
    for (int j = 0; j < k->n; j++) {
        item *it = &k->it[j];
        if (it->k == IT_INT || it->k == IT_SLICE)
            consumed++;
        else if (it->k == IT_ADV)
            consumed += it->mask ? it->adv->ndim : 1;
        else if (it->k == IT_ELLIPSIS)
            ellipses++;
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError,
                        "an index can only have a single ellipsis ('...')");
        return -1;
    }
    if (consumed > self->ndim) {
        if (self->ndim == 0)
            PyErr_SetString(PyExc_IndexError,
                            "invalid index of a 0-dim tensor. Use "
                            "`tensor.item()` in Python or `tensor.item<T>()`"
                            " in C++ to convert a 0-dim tensor to a number");
        else
            PyErr_Format(PyExc_IndexError,
                         "too many indices for tensor of dimension %d",
                         self->ndim);
        return -1;
    }
    st_tensor *cur = self;
    st_tensor_incref(cur);
    int d = 0, src = 0;
    *adv_dim = -1;
    *adv_src = -1;
    for (int j = 0; j < k->n; j++) {
        item *it = &k->it[j];
        st_tensor *nx = NULL;
        switch (it->k) {
        case IT_INT: {
            int64_t size = cur->shape[d], idx = it->i;
            if (idx < -size || idx >= size) {
                PyErr_Format(PyExc_IndexError,
                             "index %lld is out of bounds for dimension %d "
                             "with size %lld", (long long)it->i, src,
                             (long long)size);
                st_tensor_decref(cur);
                return -1;
            }
            if (idx < 0)
                idx += size;
            nx = st_tensor_select(cur, d, idx);
            src++;
            break;
        }
        case IT_SLICE: {
            Py_ssize_t start = it->start, stop = it->stop;
            PySlice_AdjustIndices((Py_ssize_t)cur->shape[d], &start, &stop,
                                  it->step);
            if (stop < start)
                stop = start;
            nx = st_tensor_slice(cur, d, start, stop, it->step);
            d++;
            src++;
            break;
        }
        case IT_NONE:
            nx = st_tensor_unsqueeze(cur, d);
            d++;
            break;
        case IT_BOOL:
            nx = st_tensor_unsqueeze(cur, d);
            if (nx && !it->i) {
                st_tensor *e = st_tensor_slice(nx, d, 0, 0, 1);
                st_tensor_decref(nx);
                nx = e;
            }
            d++;
            break;
        case IT_ELLIPSIS: {
            int skip = self->ndim - consumed;
            d += skip;
            src += skip;
            continue;
        }
        case IT_ADV: {
            int span = it->mask ? it->adv->ndim : 1;
            *adv_dim = d;
            *adv_src = src;
            d += span;
            src += span;
            continue;
        }
        }
        if (!nx) {
            st_tensor_decref(cur);
            st_fe_raise();
            return -1;
        }
        st_tensor_decref(cur);
        cur = nx;
    }
    if (cur == self) {
        /* a fresh alias: x[()] / x[...] return a new view, not self */
        st_tensor *u = st_tensor_unsqueeze(cur, 0);
        st_tensor *v = u ? st_tensor_select(u, 0, 0) : NULL;
        if (u)
            st_tensor_decref(u);
        st_tensor_decref(cur);
        if (!v) {
            st_fe_raise();
            return -1;
        }
        cur = v;
    }
    *out = cur;
    return 0;
}

/* Checks a mask against cur's dims [dim, dim + mask->ndim). */
static int check_mask(st_tensor *self, st_tensor *cur, st_tensor *mask,
                      int dim, int src)
{
    for (int j = 0; j < mask->ndim; j++) {
        if (mask->shape[j] != cur->shape[dim + j]) {
            char b1[128], b2[128];
            PyErr_Format(PyExc_IndexError,
                         "The shape of the mask %s at index %d does not "
                         "match the shape of the indexed tensor %s at index "
                         "%d", shp(mask, b1, sizeof b1), j,
                         shp(self, b2, sizeof b2), src + j);
            return -1;
        }
    }
    return 0;
}

static st_tensor *index_select(st_tensor *x, st_tensor *idx, int dim)
{
    st_operand in[2] = {{.t = x}, {.t = idx}};
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = dim;
    st_tensor *given[ST_MAX_OUT] = {0};
    st_tensor *out[ST_MAX_OUT] = {0};
    if (st_rt_eager(ST_OP_INDEX_SELECT, in, 2, &a, given, out) < 0) {
        st_fe_raise();
        return NULL;
    }
    return out[0];
}

/* cur[..., index, ...] at dim (index: int tensor of any rank >= 1). */
static st_tensor *gather_index(st_tensor *cur, st_tensor *index, int dim,
                               int src)
{
    int64_t n;
    int64_t *v = read_ints_host(index, &n);
    if (!v)
        return NULL;
    int64_t size = cur->shape[dim];
    for (int64_t j = 0; j < n; j++) {
        if (v[j] < -size || v[j] >= size) {
            PyErr_Format(PyExc_IndexError,
                         "index %lld is out of bounds for dimension %d with "
                         "size %lld", (long long)v[j], src, (long long)size);
            free(v);
            return NULL;
        }
        if (v[j] < 0)
            v[j] += size;
    }
    st_tensor *it = ints_to_tensor(st_tensor_device(cur), v, n);
    free(v);
    if (!it)
        return NULL;
    st_tensor *r = index_select(cur, it, dim);
    st_tensor_decref(it);
    if (!r || index->ndim == 1)
        return r;
    int nd = cur->ndim - 1 + index->ndim;
    if (nd > ST_MAX_DIMS) {
        st_tensor_decref(r);
        PyErr_Format(PyExc_IndexError,
                     "indexing result would have %d dimensions (at most %d)",
                     nd, ST_MAX_DIMS);
        return NULL;
    }
    int64_t shape[ST_MAX_DIMS];
    int o = 0;
    for (int j = 0; j < dim; j++)
        shape[o++] = cur->shape[j];
    for (int j = 0; j < index->ndim; j++)
        shape[o++] = index->shape[j];
    for (int j = dim + 1; j < cur->ndim; j++)
        shape[o++] = cur->shape[j];
    st_tensor *rr = st_tensor_reshape(r, nd, shape, false);
    st_tensor_decref(r);
    if (!rr)
        st_fe_raise();
    return rr;
}

/* cur[..., mask, ...]: the mask's dims merge into one of size count. */
static st_tensor *gather_mask(st_tensor *cur, st_tensor *mask, int dim)
{
    int64_t n;
    int64_t *v = read_ints_host(mask, &n);
    if (!v)
        return NULL;
    int64_t cnt = 0;
    for (int64_t j = 0; j < n; j++)
        if (v[j])
            v[cnt++] = j;
    int64_t shape[ST_MAX_DIMS];
    int o = 0;
    for (int j = 0; j < dim; j++)
        shape[o++] = cur->shape[j];
    shape[o++] = n;
    for (int j = dim + mask->ndim; j < cur->ndim; j++)
        shape[o++] = cur->shape[j];
    st_tensor *flat = st_tensor_reshape(cur, o, shape, false);
    if (!flat) {
        free(v);
        st_fe_raise();
        return NULL;
    }
    st_tensor *it = ints_to_tensor(st_tensor_device(cur), v, cnt);
    free(v);
    if (!it) {
        st_tensor_decref(flat);
        return NULL;
    }
    st_tensor *r = index_select(flat, it, dim);
    st_tensor_decref(it);
    st_tensor_decref(flat);
    return r;
}

PyObject *st_fe_getitem(PyObject *self, PyObject *key)
{
    st_tensor *t = st_fe_unwrap(self);
    key_t_ k;
    if (parse_key(key, &k) < 0)
        return NULL;
    st_tensor *cur;
    int adim, asrc;
    if (apply_basic(t, &k, &cur, &adim, &asrc) < 0) {
        key_clear(&k);
        return NULL;
    }
    if (k.adv >= 0) {
        item *it = &k.it[k.adv];
        st_tensor *r;
        if (it->mask) {
            r = check_mask(t, cur, it->adv, adim, asrc) < 0
                    ? NULL : gather_mask(cur, it->adv, adim);
        } else {
            r = gather_index(cur, it->adv, adim, asrc);
        }
        st_tensor_decref(cur);
        key_clear(&k);
        if (!r)
            return NULL;
        return st_fe_wrap(r);
    }
    key_clear(&k);
    return st_fe_wrap(cur);
}

/* ---- writes ---- */

/* t converted to dtype dt (a new reference; t itself when it already is). */
static st_tensor *cast_to(st_tensor *t, st_dtype dt)
{
    if (t->dtype == dt) {
        st_tensor_incref(t);
        return t;
    }
    st_operand op = {.t = t};
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    st_tensor *given[ST_MAX_OUT] = {0};
    st_tensor *out[ST_MAX_OUT] = {0};
    if (st_rt_eager(ST_OP_CAST, &op, 1, &a, given, out) < 0) {
        st_fe_raise();
        return NULL;
    }
    return out[0];
}

/* A Python number converted to dt's category, as a write into a tensor
 * of dtype dt converts it (float -> int truncates, -> bool tests != 0). */
static void scalar_for_dtype(st_operand *op, st_dtype dt)
{
    if (dt == ST_BOOL) {
        bool b = op->sdtype == ST_FLOAT64 ? op->f != 0 : op->i != 0;
        op->sdtype = ST_BOOL;
        op->i = b;
        op->f = b;
    } else if (!st_dtype_is_float(dt) && op->sdtype == ST_FLOAT64) {
        double f = op->f;
        op->sdtype = ST_INT64;
        op->i = (f > -9223372036854775808.0 && f < 9223372036854775808.0)
                    ? (int64_t)f : INT64_MIN;
        op->f = (double)op->i;
    }
}

static int shape_mismatch(const st_tensor *v, const st_tensor *dst)
{
    char b1[128], b2[128];
    PyErr_Format(PyExc_RuntimeError,
                 "shape mismatch: value tensor of shape %s cannot be "
                 "broadcast to indexing result of shape %s",
                 shp(v, b1, sizeof b1), shp(dst, b2, sizeof b2));
    return -1;
}

/* The value as a tensor broadcast (expand) to dst's shape, a new ref.
 * Leading size-1 dims beyond dst's rank are dropped, as PyTorch does. */
static st_tensor *value_expanded(st_tensor *self, st_tensor *dst,
                                 PyObject *value)
{
    st_tensor *v;
    if (st_fe_is_tensor(value)) {
        v = st_fe_unwrap(value);
        st_tensor_incref(v);
    } else {
        v = st_fe_tensor_from_data(value, &dst->dtype);
        if (!v)
            return NULL;
        st_device *dd = st_tensor_device(dst);
        if (dd && dd->type != ST_DEV_CPU) {
            st_tensor *m = st_tensor_empty(dd, v->dtype, v->ndim, v->shape);
            st_operand op = {.t = v};
            st_attrs a;
            memset(&a, 0, sizeof a);
            if (!m) {
                st_tensor_decref(v);
                st_fe_raise();
                return NULL;
            }
            if (st_fe_eager_into(ST_OP_COPY, &op, 1, &a, m) < 0) {
                st_tensor_decref(m);
                st_tensor_decref(v);
                return NULL;
            }
            st_tensor_decref(v);
            v = m;
        }
    }
    while (v->ndim > dst->ndim && v->shape[0] == 1) {
        st_tensor *s = st_tensor_squeeze(v, 0);
        st_tensor_decref(v);
        if (!s) {
            st_fe_raise();
            return NULL;
        }
        v = s;
    }
    bool ok = v->ndim <= dst->ndim;
    for (int j = 1; ok && j <= v->ndim; j++) {
        int64_t a = v->shape[v->ndim - j], b = dst->shape[dst->ndim - j];
        if (a != b && a != 1)
            ok = false;
    }
    if (!ok) {
        shape_mismatch(v, dst);
        st_tensor_decref(v);
        return NULL;
    }
    if (v->dtype != dst->dtype) {
        st_tensor *c = cast_to(v, dst->dtype);   /* a fresh tensor */
        st_tensor_decref(v);
        if (!c)
            return NULL;
        v = c;
    }
    if (v->storage == self->storage) {
        /* overlapping source (x[1:] = x[:-1]): copy it out first */
        st_tensor *c = st_tensor_empty(st_tensor_device(v), v->dtype,
                                       v->ndim, v->shape);
        st_operand op = {.t = v};
        st_attrs a;
        memset(&a, 0, sizeof a);
        if (!c) {
            st_tensor_decref(v);
            st_fe_raise();
            return NULL;
        }
        if (st_fe_eager_into(ST_OP_COPY, &op, 1, &a, c) < 0) {
            st_tensor_decref(c);
            st_tensor_decref(v);
            return NULL;
        }
        st_tensor_decref(v);
        v = c;
    }
    st_tensor *e = st_tensor_expand(v, dst->ndim, dst->shape);
    st_tensor_decref(v);
    if (!e)
        st_fe_raise();
    return e;
}

static bool is_number(PyObject *o)
{
    return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o);
}

static int scalar_operand(PyObject *value, st_operand *op)
{
    memset(op, 0, sizeof *op);
    if (PyBool_Check(value)) {
        op->sdtype = ST_BOOL;
        op->i = value == Py_True;
        op->f = (double)op->i;
        return 0;
    }
    if (PyLong_Check(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_RuntimeError,
                            "value cannot be converted to int64 without "
                            "overflow");
            return -1;
        }
        if (v == -1 && PyErr_Occurred())
            return -1;
        op->sdtype = ST_INT64;
        op->i = v;
        op->f = (double)v;
        return 0;
    }
    op->sdtype = ST_FLOAT64;
    op->f = PyFloat_AsDouble(value);
    if (op->f == -1.0 && PyErr_Occurred())
        return -1;
    return 0;
}

/* dst[...] = value (dst a view of self). */
static int write_view(st_tensor *self, st_tensor *dst, PyObject *value)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    if (is_number(value)) {
        st_operand sc;
        if (scalar_operand(value, &sc) < 0)
            return -1;
        /* FULL in its *_like form: the operand gives the shape only */
        st_operand like = {.t = dst};
        scalar_for_dtype(&sc, dst->dtype);
        a.dtype = dst->dtype;
        if (sc.sdtype == ST_FLOAT64) {
            a.f[0] = sc.f;
        } else {
            a.flags = ST_ATTR_INT_VALUE;
            a.i[0] = sc.i;
        }
        return st_fe_eager_into(ST_OP_FULL, &like, 1, &a, dst);
    }
    st_tensor *v = value_expanded(self, dst, value);
    if (!v)
        return -1;
    st_operand op = {.t = v};
    int r = st_fe_eager_into(ST_OP_COPY, &op, 1, &a, dst);
    st_tensor_decref(v);
    return r;
}

/* cur[mask over dims [dim, dim+k)] = value: where(mask, value, cur). */
static int write_mask(st_tensor *self, st_tensor *cur, st_tensor *mask,
                      int dim, PyObject *value)
{
    int64_t shape[ST_MAX_DIMS];
    for (int j = 0; j < cur->ndim; j++)
        shape[j] = (j >= dim && j < dim + mask->ndim) ? mask->shape[j - dim]
                                                      : 1;
    st_tensor *m = st_tensor_reshape(mask, cur->ndim, shape, false);
    st_tensor *me = m ? st_tensor_expand(m, cur->ndim, cur->shape) : NULL;
    if (m)
        st_tensor_decref(m);
    if (!me)
        return st_fe_raise_int();
    st_operand in[3];
    memset(in, 0, sizeof in);
    in[0].t = me;
    in[2].t = cur;
    st_tensor *vt = NULL;
    int r = -1;
    if (is_number(value)) {
        if (scalar_operand(value, &in[1]) < 0)
            goto done;
        /* the result must cast into cur (where() would promote) */
        scalar_for_dtype(&in[1], cur->dtype);
    } else {
        st_tensor *v = st_fe_is_tensor(value) ? st_fe_unwrap(value) : NULL;
        if (v)
            st_tensor_incref(v);
        else if (!(v = st_fe_tensor_from_data(value, &cur->dtype)))
            goto done;
        if (st_tensor_numel(v) != 1) {
            char b1[128];
            PyErr_Format(PyExc_NotImplementedError,
                         "symtrace: x[mask] = value supports a number or a "
                         "one-element tensor (got a value of shape %s); use "
                         "symtrace.where(mask, value, x)",
                         shp(v, b1, sizeof b1));
            st_tensor_decref(v);
            goto done;
        }
        st_tensor *c = cast_to(v, cur->dtype);
        st_tensor_decref(v);
        if (!c)
            goto done;
        v = c;
        int64_t ones[ST_MAX_DIMS];
        for (int j = 0; j < cur->ndim; j++)
            ones[j] = 1;
        st_tensor *v1 = st_tensor_reshape(v, cur->ndim, ones, false);
        st_tensor_decref(v);
        vt = v1 ? st_tensor_expand(v1, cur->ndim, cur->shape) : NULL;
        if (v1)
            st_tensor_decref(v1);
        if (!vt) {
            st_fe_raise();
            goto done;
        }
        in[1].t = vt;
    }
    st_attrs a;
    memset(&a, 0, sizeof a);
    r = st_fe_eager_into(ST_OP_WHERE, in, 3, &a, cur);
done:
    if (vt)
        st_tensor_decref(vt);
    st_tensor_decref(me);
    return r;
}

/* Whether t[key] = value goes through symtrace._tensor._setitem_functional
 * rather than a write into a view: an index tensor or list in the key, or
 * a write autograd must record (t, not a leaf that requires grad, or the
 * value requires grad), which a view cannot carry to its base. A leaf
 * that requires grad keeps the in-place error. */
static bool setitem_functional(st_tensor *t, key_t_ *k, PyObject *value)
{
    if (k->adv >= 0 && !k->it[k->adv].mask)
        return true;
    if (!st_ad_grad_enabled() || (t->requires_grad && !t->grad_fn))
        return false;
    return t->requires_grad ||
           (st_fe_is_tensor(value) && st_fe_unwrap(value)->requires_grad);
}

static int call_setitem_functional(PyObject *self, PyObject *key, PyObject *value)
{
    static PyObject *fn;
    if (!fn) {
        PyObject *m = PyImport_ImportModule("symtrace._tensor");
        fn = m ? PyObject_GetAttrString(m, "_setitem_functional") : NULL;
        Py_XDECREF(m);
        if (!fn)
            return -1;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(fn, self, key, value, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

int st_fe_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError,
                        "Tensor does not support item deletion");
        return -1;
    }
    st_tensor *t = st_fe_unwrap(self);
    key_t_ k;
    if (parse_key(key, &k) < 0)
        return -1;
    if (setitem_functional(t, &k, value)) {
        key_clear(&k);
        return call_setitem_functional(self, key, value);
    }
    if (t->requires_grad && !t->grad_fn && st_ad_grad_enabled()) {
        key_clear(&k);
        PyErr_SetString(PyExc_RuntimeError, "a view of a leaf Variable that requires grad "
                        "is being used in an in-place operation.");
        return -1;
    }
    st_tensor *cur;
    int adim, asrc;
    if (apply_basic(t, &k, &cur, &adim, &asrc) < 0) {
        key_clear(&k);
        return -1;
    }
    int r;
    if (k.adv >= 0) {
        item *it = &k.it[k.adv];
        if (!it->mask) {
            PyErr_SetString(PyExc_NotImplementedError,
                            "symtrace: assignment through an index tensor or"
                            " list (x[idx] = v) is not supported yet; use a "
                            "bool mask, basic indexing, or symtrace.where");
            r = -1;
        } else {
            r = check_mask(t, cur, it->adv, adim, asrc) < 0
                    ? -1 : write_mask(t, cur, it->adv, adim, value);
        }
    } else {
        r = write_view(t, cur, value);
    }
    st_tensor_decref(cur);
    key_clear(&k);
    if (r == 0)
        t->storage->version++;
    return r;
}
