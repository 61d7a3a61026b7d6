/* frontend/indexing.c - Tensor.__getitem__/__setitem__ with PyTorch's
 * indexing. Basic items: ints, slices (step > 0), None, Ellipsis,
 * True/False, tuples of those (results are views sharing storage).
 * Advanced items, any number per subscript: int tensors / lists of ints
 * (nested lists: n-D indices; float lists truncate to int64, as torch's
 * conversion does) and bool masks (a k-D mask counts as k index tensors,
 * its nonzero() coordinates); True/False and 0-d bool tensors are
 * advanced too (an index [0] / [] on an unsqueezed dim, as torch's) once a
 * key has another advanced item or True/False (alone, a view gives the
 * same result). A
 * 0-d int tensor is an int. A top-level list holding sequences, tensors,
 * slices, None or Ellipsis is a tuple, with torch's deprecation warning.
 *
 * Reads (gather_adv): the basic items apply first as views (apply_basic);
 * the index shapes broadcast together (torch's rules); dims of that view
 * merge into one (a reshape: a view when their strides allow, else a
 * recorded copy) and one index_select (any device) reads it at positions
 * computed on the host from the index values (read_ints_host): for each
 * element of the broadcast shape, sum(idx_g * stride of g in the merged
 * dim). Placement as torch/numpy: the broadcast index dims replace the
 * advanced dims in place when these are adjacent, else (separated by a
 * slice, None or Ellipsis) they go first. Adjacent: the advanced dims
 * merge. Separated: either the span from the first advanced dim to the
 * last merges and the dims between are read too (positions [n, m], an
 * outer sum on the device; then the index dims are permuted first), or,
 * when that would read more than the span holds, the advanced dims are
 * permuted to the front and merged (a copy of the view). Results are
 * copies (no _base); the gradient is index_select's (scatter_add:
 * repeated positions accumulate). Errors as torch's: index shapes that do
 * not broadcast, out-of-bounds values (dimension: the index tensor's
 * ordinal among the indices, checked in torch's order: element by element,
 * index by index; none when the result is empty).
 *
 * Under a trace (symtrace.compile), the caller's int index tensors are
 * graph values: their positions are recorded ops (adv_positions_dev: the
 * wrap, the per-index bounds check as an index_select of zeros, the sum),
 * so one graph serves every index value; a mask or a 0-d tensor reads its
 * values on the host and fails the trace (a graph break), as .item() does,
 * except in a fill through one mask (st_fe_setitem_is_fill: a where()).
 *
 * Writes: basic keys, and one bool mask with a number or a one-element
 * value, write in place (a view copy / a where()-style fill; under
 * autograd a CopySlices node, runtime/viewhist.c); int indices, several
 * advanced items and other mask values go through
 * symtrace._tensor._setitem_functional: the positions from
 * _C._index_positions (st_fe_index_positions below: O(result), the read
 * path's placement and checks over a phantom of the tensor's shape), then
 * one scatter primitive into a flat view (in place, O(result), without
 * autograd). */
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
    bool user;                  /* IT_ADV: the caller's tensor (not made from
                                   a list here): under a trace its values
                                   are the graph's, read on the device */
    int dim;                    /* advanced (IT_ADV, or IT_BOOL in an
                                   advanced key): its first dim in the
                                   result of apply_basic */
} item;

typedef struct {
    item it[MAX_ITEMS];
    int n;
    int adv;                    /* index of the first IT_ADV item or -1 */
    int nbool;                  /* IT_BOOL items */
    int nadv;                   /* advanced items: IT_ADV ones, plus the
                                   IT_BOOL ones when there is an IT_ADV or
                                   another IT_BOOL */
} key_t_;

/* Whether item it of key k is advanced (see nadv). torch makes every
 * True/False an index tensor; a lone one without other advanced items
 * stays a view here (the same shape and values: unsqueeze, and for False
 * an empty slice). */
static bool is_adv(const key_t_ *k, const item *it)
{
    return it->k == IT_ADV ||
           (it->k == IT_BOOL && (k->adv >= 0 || k->nbool > 1));
}

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
        case ST_UINT8: r[j] = *(const uint8_t *)p; break;
        case ST_INT8: r[j] = *(const int8_t *)p; break;
        case ST_INT16: { int16_t x; memcpy(&x, p, 2); r[j] = x; break; }
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
    /* from shapes and key constants (a read of index values fails the
     * trace first): a constant of the graph */
    st_rt_trace_constant(t);
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

/* A read of the caller's index values on the host while a trace is active
 * (a 0-d index used as an int, a mask, whose count sets the result's
 * shape): the graph would hold them as constants, so the trace fails (the
 * read still happens, eagerly), as Tensor.item() does. */
static void data_read(const char *what)
{
    if (st_rt_trace_active())
        st_rt_trace_fail(what);
}

static st_tensor *ev(st_op_id op, st_tensor *a, st_tensor *b, st_tensor *c,
                     const st_operand *sa, const st_attrs *at);

static int item_from_tensor(st_tensor *t, item *it, bool owned)
{
    if (t->dtype == ST_UINT8) {
        /* PyTorch still reads a uint8 index as a mask, with a warning */
        if (PyErr_WarnEx(PyExc_UserWarning,
                         "indexing with dtype torch.uint8 is now deprecated, "
                         "please use a dtype torch.bool instead.", 1) < 0) {
            if (owned)
                st_tensor_decref(t);
            return -1;
        }
        st_attrs at;
        memset(&at, 0, sizeof at);
        at.dtype = ST_BOOL;
        st_tensor *m = ev(ST_OP_CAST, t, NULL, NULL, NULL, &at);
        if (owned)
            st_tensor_decref(t);
        if (!m)
            return -1;
        t = m;
        owned = true;
    }
    if (t->dtype == ST_BOOL || t->dtype == ST_INT32 ||
        t->dtype == ST_INT64) {
        if (t->ndim == 0) {
            if (!owned)
                data_read("data-dependent: a 0-d tensor as an index");
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
        it->user = !owned;
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
        st_dtype i64 = ST_INT64;
        if ((PyList_Check(o) || PyTuple_Check(o)) &&
            PySequence_Size(o) == 0) {
            t = st_fe_tensor_from_data(o, &i64);
        } else {
            t = st_fe_tensor_from_data(o, NULL);
            if (t && st_dtype_is_float(t->dtype)) {
                /* torch's indexing_tensor_from_data: data that is not
                 * bool becomes int64 (floats truncate) */
                st_tensor_decref(t);
                t = st_fe_tensor_from_data(o, &i64);
            }
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

/* torch's treatSequenceAsTuple (numpy's old heuristic): a list key of
 * fewer than 32 items holding a tensor, a sequence, a slice, None or
 * Ellipsis is the tuple of its items (x[[rows, cols]] is x[rows, cols]),
 * with torch's deprecation warning. 1: a tuple, 0: not, -1: error (the
 * warning raised). */
static int list_as_tuple(PyObject *key)
{
    if (!PyList_Check(key) || PyList_GET_SIZE(key) >= 32)
        return 0;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(key); j++) {
        PyObject *o = PyList_GET_ITEM(key, j);
        if (st_fe_is_tensor(o) || PySequence_Check(o) || PySlice_Check(o) ||
            o == Py_None || o == Py_Ellipsis)
            return PyErr_WarnEx(PyExc_UserWarning,
                                "Using a non-tuple sequence for "
                                "multidimensional indexing is deprecated "
                                "(as in torch); use x[tuple(seq)] instead of "
                                "x[seq]: torch will read it as a tensor "
                                "index, x[torch.tensor(seq)], which will "
                                "give an error or a different result", 1) < 0
                       ? -1 : 1;
    }
    return 0;
}

static int parse_key(PyObject *key, key_t_ *k)
{
    k->n = 0;
    k->adv = -1;
    k->nbool = 0;
    k->nadv = 0;
    int as_tuple = PyTuple_Check(key) ? 1 : list_as_tuple(key);
    if (as_tuple < 0)
        return -1;
    if (as_tuple) {
        /* a list key is copied: parsing an item may run Python code */
        PyObject *tup = PySequence_Tuple(key);
        if (!tup)
            return -1;
        Py_ssize_t n = PyTuple_GET_SIZE(tup);
        if (n > MAX_ITEMS) {
            PyErr_Format(PyExc_IndexError, "too many indices (%zd)", n);
            Py_DECREF(tup);
            return -1;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            if (parse_item(PyTuple_GET_ITEM(tup, j), &k->it[k->n]) < 0) {
                key_clear(k);
                Py_DECREF(tup);
                return -1;
            }
            k->n++;
        }
        Py_DECREF(tup);
    } else {
        if (parse_item(key, &k->it[0]) < 0)
            return -1;
        k->n = 1;
    }
    for (int j = 0; j < k->n; j++) {
        if (k->it[j].k == IT_ADV && k->adv < 0)
            k->adv = j;
        k->nbool += k->it[j].k == IT_BOOL;
    }
    for (int j = 0; j < k->n; j++)
        if (is_adv(k, &k->it[j]))
            k->nadv++;
    return 0;
}

/* ---- applying the basic part ----
 * Ints select, slices slice, None (and True/False) unsqueeze; advanced
 * items leave their dims in place. On success *out is a new tensor (never
 * self itself) and each advanced item's dim is set: the position of its
 * dims in *out. */
static int apply_basic(st_tensor *self, key_t_ *k, st_tensor **out)
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
            if (is_adv(k, it)) {
                /* torch: an index [0] (True) or [] (False) on the new dim */
                it->dim = d;
            } else if (nx && !it->i) {
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
            it->dim = d;
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
    if (cur == self && k->nadv == 0) {
        /* a fresh alias: x[()] / x[...] return a new view, not self (an
         * advanced key makes a copy of it anyway) */
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

/* Checks a mask against cur's dims [dim, dim + mask->ndim); the message
 * names cur (the tensor after the basic items) and its dim, as torch's. */
static int check_mask(st_tensor *cur, st_tensor *mask, int dim)
{
    for (int j = 0; j < mask->ndim; j++) {
        if (mask->shape[j] != cur->shape[dim + j]) {
            char b1[128], b2[128];
            PyErr_Format(PyExc_IndexError,
                         "The shape of the mask %s at index %d does not "
                         "match the shape of the indexed tensor %s at index "
                         "%d", shp(mask, b1, sizeof b1), j,
                         shp(cur, b2, sizeof b2), dim + j);
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

/* ---- advanced indexing (reads) ----
 * One advanced item as torch's index tensors over dims [dim, dim + span)
 * of cur: its values index those dims merged (row-major; size is their
 * product). An int index: span 1, its own values and shape. A k-D mask:
 * span k, the flat positions of its true elements, shape [count]. True /
 * False in an advanced key: span 1 (the unsqueezed dim), [0] or []. */
typedef struct {
    int dim, span;
    int64_t size;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t *v;                 /* owned, host; NULL when dev */
    st_tensor *dev;             /* borrowed: an int index read on the device
                                   (the caller's, under a trace) */
    bool in_range;              /* mask/bool: values known in range */
    int ord;                    /* torch's ordinal of its (first) index */
    int64_t bstr[ST_MAX_DIMS];  /* element stride per broadcast dim */
    int64_t mul;                /* its stride in the merged dim */
} adv_group;

static bool has_negative(const int64_t *v, int64_t n)
{
    for (int64_t e = 0; e < n; e++)
        if (v[e] < 0)
            return true;
    return false;
}

/* Fills g[0..*ng) from k's advanced items (on error the caller frees
 * g[j].v for j < *ng). Mask shapes are checked here, as torch does before
 * broadcasting. */
static int adv_groups(st_tensor *cur, key_t_ *k, adv_group *g, int *ng)
{
    int ord = 0;
    *ng = 0;
    for (int j = 0; j < k->n; j++) {
        item *it = &k->it[j];
        if (!is_adv(k, it))
            continue;
        adv_group *a = &g[(*ng)++];
        memset(a, 0, sizeof *a);
        a->dim = it->dim;
        a->ord = ord;
        a->ndim = 1;
        if (it->k == IT_BOOL) {
            a->span = 1;
            a->size = 1;
            a->shape[0] = it->i ? 1 : 0;
            a->in_range = true;
            if (!(a->v = calloc(1, sizeof(int64_t)))) {
                PyErr_NoMemory();
                return -1;
            }
        } else if (it->mask) {
            if (check_mask(cur, it->adv, it->dim) < 0)
                return -1;
            if (it->user)
                data_read("data-dependent: indexing with a bool mask (its count "
                          "sets the result's shape)");
            int64_t n, cnt = 0;
            if (!(a->v = read_ints_host(it->adv, &n)))
                return -1;
            for (int64_t e = 0; e < n; e++)
                if (a->v[e])
                    a->v[cnt++] = e;
            a->span = it->adv->ndim;
            a->size = n;
            a->shape[0] = cnt;
            a->in_range = true;
        } else {
            int64_t n;
            if (it->user && st_rt_trace_active())
                a->dev = it->adv;          /* values stay on the device */
            else if (!(a->v = read_ints_host(it->adv, &n)))
                return -1;
            if (a->v && st_rt_trace_active() && has_negative(a->v, n)) {
                /* x[[-5, 3]]: a negative index wraps by the dim's size,
                 * which a dynamic-shape graph has as a symbol: wrapped in
                 * the graph (the index a constant of it), not here */
                free(a->v);
                a->v = NULL;
                st_rt_trace_constant(it->adv);
                a->dev = it->adv;
            }
            a->span = 1;
            a->size = cur->shape[it->dim];
            a->ndim = it->adv->ndim;
            memcpy(a->shape, it->adv->shape, sizeof(int64_t) * (size_t)a->ndim);
        }
        ord += a->span;
    }
    return 0;
}

/* torch's broadcast of the index shapes (a k-D mask counts k times in the
 * message, as its k nonzero() index tensors do). */
static int adv_broadcast(adv_group *g, int ng, int64_t *bshape, int *bnd)
{
    int nd = 0;
    for (int j = 0; j < ng; j++)
        if (g[j].ndim > nd)
            nd = g[j].ndim;
    for (int d = 0; d < nd; d++)
        bshape[d] = 1;
    bool ok = true;
    for (int j = 0; j < ng; j++)
        for (int d = 0; d < g[j].ndim; d++) {
            int64_t s = g[j].shape[d], *b = &bshape[nd - g[j].ndim + d];
            if (*b == 1)
                *b = s;
            else if (s != 1 && s != *b)
                ok = false;
        }
    if (!ok) {
        char msg[1024], b1[128];
        size_t o = 0;
        msg[0] = 0;
        for (int j = 0; j < ng; j++)
            for (int r = 0; r < g[j].span && o < sizeof msg; r++) {
                int w = snprintf(msg + o, sizeof msg - o, "%s%s",
                                 o ? ", " : "",
                                 st_shape_str(g[j].shape, g[j].ndim, b1,
                                              sizeof b1));
                o += w > 0 ? (size_t)w : 0;
            }
        PyErr_Format(PyExc_IndexError,
                     "shape mismatch: indexing tensors could not be "
                     "broadcast together with shapes %s", msg);
        return -1;
    }
    for (int j = 0; j < ng; j++) {
        int64_t st = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int e = d - (nd - g[j].ndim);   /* g[j]'s own dim, or < 0 */
            g[j].bstr[d] = e >= 0 && g[j].shape[e] != 1 ? st : 0;
            if (e >= 0)
                st *= g[j].shape[e];
        }
    }
    *bnd = nd;
    return 0;
}

/* The position, in the merged dim, of every element of the broadcast index
 * shape: sum(idx_g * mul_g) (host; values wrapped and bounds-checked in
 * torch's order: element by element, index by index). A new array of n. */
static int64_t *adv_positions(adv_group *g, int ng, const int64_t *bshape,
                              int bnd, int64_t n)
{
    int64_t *lin = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!lin) {
        PyErr_NoMemory();
        return NULL;
    }
    int64_t pos[ST_MAX_DIMS] = {0}, off[MAX_ITEMS] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t l = 0;
        for (int j = 0; j < ng; j++) {
            int64_t x = g[j].v[off[j]], size = g[j].size;
            if (!g[j].in_range) {
                if (x < -size || x >= size) {
                    PyErr_Format(PyExc_IndexError,
                                 "index %lld is out of bounds for dimension "
                                 "%d with size %lld", (long long)x, g[j].ord,
                                 (long long)size);
                    free(lin);
                    return NULL;
                }
                if (x < 0)
                    x += size;
            }
            l += x * g[j].mul;
        }
        lin[e] = l;
        for (int d = bnd - 1; d >= 0; d--) {
            for (int j = 0; j < ng; j++)
                off[j] += g[j].bstr[d];
            if (++pos[d] < bshape[d])
                break;
            for (int j = 0; j < ng; j++)
                off[j] -= g[j].bstr[d] * bshape[d];
            pos[d] = 0;
        }
    }
    return lin;
}

/* ---- positions on the device (a traced key) ----
 * Under a trace the caller's index tensors are graph values: the positions
 * are ops on them (recorded), sum over the groups of wrap(idx) * mul,
 * broadcast to the index shape; each device group's values are checked by
 * an index_select of a zero tensor shaped [1] * ord + [size] along dim ord,
 * whose kernel raises torch's message (a negative value out of range is
 * named after wrapping) and whose zeros join the sum. Host groups (lists,
 * True/False) join as constants. */

static st_tensor *ev(st_op_id op, st_tensor *a, st_tensor *b, st_tensor *c,
                     const st_operand *sa, const st_attrs *at)
{
    st_operand in[3];
    memset(in, 0, sizeof in);
    int n = 0;
    if (a)
        in[n++].t = a;
    if (sa)
        in[n++] = *sa;
    if (b)
        in[n++].t = b;
    if (c)
        in[n++].t = c;
    st_attrs z;
    memset(&z, 0, sizeof z);
    st_tensor *given[ST_MAX_OUT] = {0}, *out[ST_MAX_OUT] = {0};
    if (st_rt_eager(op, in, n, at ? at : &z, given, out) < 0) {
        st_fe_raise();
        return NULL;
    }
    return out[0];
}

static st_operand int_operand(int64_t v)
{
    st_operand o;
    memset(&o, 0, sizeof o);
    o.sdtype = ST_INT64;
    o.i = v;
    o.f = (double)v;
    return o;
}

/* a new reference to t reshaped to rank nd with leading ones (t's dims
 * last), or NULL */
static st_tensor *lead_ones(st_tensor *t, int nd)
{
    int64_t sh[ST_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        sh[d] = d < nd - t->ndim ? 1 : t->shape[d - (nd - t->ndim)];
    st_tensor *r = st_tensor_reshape(t, nd, sh, false);
    if (!r)
        st_fe_raise();
    return r;
}

/* group j's contribution, of its own shape with leading ones to rank bnd:
 * wrap(idx) * mul (+ the bounds check's zeros) */
static st_tensor *group_dev(adv_group *a, int bnd, st_device *dev, bool check)
{
    st_tensor *idx = NULL, *r = NULL;
    if (a->dev) {
        st_tensor *x = a->dev;
        st_tensor_incref(x);
        if (x->dtype != ST_INT64) {
            st_attrs at;
            memset(&at, 0, sizeof at);
            at.dtype = ST_INT64;
            st_tensor *c = ev(ST_OP_CAST, x, NULL, NULL, NULL, &at);
            st_tensor_decref(x);
            if (!(x = c))
                return NULL;
        }
        /* wrap: x + size * (x < 0) */
        st_operand zero = int_operand(0), size = int_operand(a->size);
        st_tensor *neg = ev(ST_OP_LT, x, NULL, NULL, &zero, NULL);
        st_tensor *sh = neg ? ev(ST_OP_MUL, neg, NULL, NULL, &size, NULL) : NULL;
        idx = sh ? ev(ST_OP_ADD, x, sh, NULL, NULL, NULL) : NULL;
        if (neg)
            st_tensor_decref(neg);
        if (sh)
            st_tensor_decref(sh);
        st_tensor_decref(x);
        if (!idx)
            return NULL;
        if (check) {
            /* index_select(zeros([1]*ord + [size]), ord, idx.flat) */
            int nd = a->ord + 1;
            int64_t zs[ST_MAX_DIMS], n = st_tensor_numel(idx);
            for (int d = 0; d < a->ord; d++)
                zs[d] = 1;
            zs[a->ord] = a->size;
            st_attrs fa;
            memset(&fa, 0, sizeof fa);
            fa.dtype = ST_INT64;
            fa.flags = ST_ATTR_INT_VALUE;
            fa.ndims = nd;
            memcpy(fa.dims, zs, sizeof(int64_t) * (size_t)nd);
            st_tensor *z = nd <= ST_MAX_DIMS ? ev(ST_OP_FULL, NULL, NULL, NULL, NULL, &fa) : NULL;
            st_tensor *fl = z ? st_tensor_reshape(idx, 1, &n, false) : NULL;
            st_attrs sa;
            memset(&sa, 0, sizeof sa);
            sa.i[0] = a->ord;
            st_tensor *chk = fl ? ev(ST_OP_INDEX_SELECT, z, fl, NULL, NULL, &sa) : NULL;
            st_tensor *c2 = chk ? st_tensor_reshape(chk, idx->ndim, idx->shape, false) : NULL;
            st_tensor *sum = c2 ? ev(ST_OP_ADD, idx, c2, NULL, NULL, NULL) : NULL;
            st_tensor *fr[4] = {z, fl, chk, c2};
            for (int j = 0; j < 4; j++)
                if (fr[j])
                    st_tensor_decref(fr[j]);
            st_tensor_decref(idx);
            if (!sum) {
                if (!PyErr_Occurred())
                    st_fe_raise();
                return NULL;
            }
            idx = sum;
        }
    } else {
        /* host values (in range or checked by adv_positions' caller) */
        int64_t n = 1;
        for (int d = 0; d < a->ndim; d++)
            n *= a->shape[d];
        st_tensor *f = ints_to_tensor(dev, a->v, n);
        idx = f ? st_tensor_reshape(f, a->ndim, a->shape, false) : NULL;
        if (f)
            st_tensor_decref(f);
        if (!idx) {
            if (!PyErr_Occurred())
                st_fe_raise();
            return NULL;
        }
        for (int64_t e = 0; e < n && !a->in_range; e++)
            if (a->v[e] < -a->size || a->v[e] >= a->size) {
                st_tensor_decref(idx);
                PyErr_Format(PyExc_IndexError,
                             "index %lld is out of bounds for dimension %d "
                             "with size %lld", (long long)a->v[e], a->ord,
                             (long long)a->size);
                return NULL;
            }
        if (!a->in_range) {
            st_operand zero = int_operand(0), size = int_operand(a->size);
            st_tensor *neg = ev(ST_OP_LT, idx, NULL, NULL, &zero, NULL);
            st_tensor *sh = neg ? ev(ST_OP_MUL, neg, NULL, NULL, &size, NULL) : NULL;
            st_tensor *w = sh ? ev(ST_OP_ADD, idx, sh, NULL, NULL, NULL) : NULL;
            if (neg)
                st_tensor_decref(neg);
            if (sh)
                st_tensor_decref(sh);
            st_tensor_decref(idx);
            if (!(idx = w))
                return NULL;
        }
    }
    st_operand mul = int_operand(a->mul);
    st_tensor *m = ev(ST_OP_MUL, idx, NULL, NULL, &mul, NULL);
    st_tensor_decref(idx);
    if (m) {
        r = lead_ones(m, bnd);
        st_tensor_decref(m);
    }
    return r;
}

static bool any_dev(const adv_group *g, int ng)
{
    for (int j = 0; j < ng; j++)
        if (g[j].dev)
            return true;
    return false;
}

/* sum over the groups of their contributions, broadcast to bshape and
 * flattened (n elements) plus off, recorded; check: run the bounds checks
 * (none when the result is empty, as torch's reads) */
static st_tensor *adv_positions_dev(adv_group *g, int ng, const int64_t *bshape,
                                    int bnd, int64_t n, int64_t off,
                                    st_device *dev)
{
    st_tensor *acc = NULL;
    for (int j = 0; j < ng; j++) {
        st_tensor *c = group_dev(&g[j], bnd, dev, n > 0);
        if (!c) {
            if (acc)
                st_tensor_decref(acc);
            return NULL;
        }
        if (!acc) {
            acc = c;
            continue;
        }
        st_tensor *s = ev(ST_OP_ADD, acc, c, NULL, NULL, NULL);
        st_tensor_decref(acc);
        st_tensor_decref(c);
        if (!(acc = s))
            return NULL;
    }
    if (off) {
        st_operand o = int_operand(off);
        st_tensor *s = ev(ST_OP_ADD, acc, NULL, NULL, &o, NULL);
        st_tensor_decref(acc);
        if (!(acc = s))
            return NULL;
    }
    /* to the broadcast shape (a group of it all, or the sum's broadcast) */
    st_tensor *e = st_tensor_expand(acc, bnd, bshape);
    st_tensor_decref(acc);
    if (!e) {
        st_fe_raise();
        return NULL;
    }
    st_tensor *r = st_tensor_reshape(e, 1, &n, false);  /* a copy if expanded */
    st_tensor_decref(e);
    if (!r)
        st_fe_raise();
    return r;
}

/* A contiguous copy of t that is no view (eager COPY, recorded). */
static st_tensor *fresh_copy(st_tensor *t)
{
    st_operand op = {.t = t};
    st_attrs a;
    memset(&a, 0, sizeof a);
    st_tensor *given[ST_MAX_OUT] = {0}, *out[ST_MAX_OUT] = {0};
    if (st_rt_eager(ST_OP_COPY, &op, 1, &a, given, out) < 0) {
        st_fe_raise();
        return NULL;
    }
    return out[0];
}

/* a[i] + b[j] over the elements of a (n) and b (m), int64 tensors on one
 * device: a new 1-D tensor of n * m, row-major (a's index first); one
 * eager ADD of their [n, 1] and [1, m] views (recorded under a trace). */
static st_tensor *outer_add(st_tensor *a, st_tensor *b)
{
    int64_t n = st_tensor_numel(a), m = st_tensor_numel(b);
    int64_t sa[2] = {n, 1}, sb[2] = {1, m}, nm = n * m;
    st_tensor *ra = st_tensor_reshape(a, 2, sa, false), *rb = NULL, *s = NULL,
              *r = NULL;
    if (ra && (rb = st_tensor_reshape(b, 2, sb, false)) &&
        (s = ev(ST_OP_ADD, ra, rb, NULL, NULL, NULL)))
        r = st_tensor_reshape(s, 1, &nm, false);
    if (!r && !PyErr_Occurred())
        st_fe_raise();
    st_tensor *fr[3] = {ra, rb, s};
    for (int j = 0; j < 3; j++)
        if (fr[j])
            st_tensor_decref(fr[j]);
    return r;
}

/* outer_add of a device tensor (NULL: host values av, n of them) and host
 * values b (m); a new tensor on dev, or NULL with the error set */
static st_tensor *outer_add_host(st_device *dev, st_tensor *a,
                                 const int64_t *av, int64_t n,
                                 const int64_t *b, int64_t m)
{
    st_tensor *ta = a, *tb = ints_to_tensor(dev, b, m), *r = NULL;
    if (!a)
        ta = tb ? ints_to_tensor(dev, av, n) : NULL;
    if (ta && tb)
        r = outer_add(ta, tb);
    if (ta && ta != a)
        st_tensor_decref(ta);
    if (tb)
        st_tensor_decref(tb);
    return r;
}

/* The advanced items of a key over cur, as reads and positions both take
 * them: the groups, the broadcast index shape (n elements; nsel: 0 when
 * another dim of cur is empty, as torch reads then check nothing), which
 * dims of cur they take and whether those are adjacent. */
typedef struct {
    adv_group g[MAX_ITEMS];
    int ng, bnd, span;
    int64_t bshape[ST_MAX_DIMS], n, nsel;
    bool adjacent, is_adv_dim[ST_MAX_DIMS];
} adv_key;

static void adv_key_clear(adv_key *a)
{
    for (int j = 0; j < a->ng; j++)
        free(a->g[j].v);
    a->ng = 0;
}

static int too_big(void)
{
    PyErr_SetString(PyExc_IndexError,
                    "indexing: the indexed dims or the broadcast index "
                    "shape hold more than 2**63 elements");
    return -1;
}

/* Fills a (0), or -1 with the error set and a cleared. */
static int adv_key_of(st_tensor *cur, key_t_ *k, adv_key *a)
{
    memset(a, 0, sizeof *a);
    a->adjacent = true;
    a->n = 1;
    if (adv_groups(cur, k, a->g, &a->ng) < 0 ||
        adv_broadcast(a->g, a->ng, a->bshape, &a->bnd) < 0)
        goto fail;
    for (int j = 0; j < a->ng; j++) {
        const adv_group *g = &a->g[j];
        if (j && g->dim != g[-1].dim + g[-1].span)
            a->adjacent = false;
        a->span += g->span;
        for (int s = 0; s < g->span; s++)
            a->is_adv_dim[g->dim + s] = true;
    }
    for (int d = 0; d < a->bnd; d++)
        if (__builtin_mul_overflow(a->n, a->bshape[d], &a->n)) {
            too_big();
            goto fail;
        }
    int nd = cur->ndim - a->span + a->bnd;
    if (nd > ST_MAX_DIMS) {
        PyErr_Format(PyExc_IndexError,
                     "indexing result would have %d dimensions (at most %d)",
                     nd, ST_MAX_DIMS);
        goto fail;
    }
    /* torch checks this one even when the result is empty (another dim
     * of cur is): indices into an empty indexed dim */
    for (int d = 0; a->n > 0 && d < cur->ndim; d++)
        if (a->is_adv_dim[d] && cur->shape[d] == 0) {
            PyErr_SetString(PyExc_IndexError,
                            "index is out of bounds for dimension with size 0");
            goto fail;
        }
    a->nsel = a->n;
    for (int d = 0; d < cur->ndim; d++)
        if (!a->is_adv_dim[d] && cur->shape[d] == 0)
            a->nsel = 0;
    return 0;
fail:
    adv_key_clear(a);
    return -1;
}

/* The positions of a's nsel index points, each group's mul set: host
 * values (*lin) or, for a traced key, recorded ops on the device (*lind),
 * plus off. 0, or -1 with the error set. */
static int adv_key_positions(adv_key *a, int64_t off, st_device *dev,
                             int64_t **lin, st_tensor **lind)
{
    if (a->nsel > 0 && any_dev(a->g, a->ng)) {
        *lind = adv_positions_dev(a->g, a->ng, a->bshape, a->bnd, a->nsel, off, dev);
        return *lind ? 0 : -1;
    }
    if (!(*lin = adv_positions(a->g, a->ng, a->bshape, a->bnd, a->nsel)))
        return -1;
    for (int64_t e = 0; off && e < a->nsel; e++)
        (*lin)[e] += off;
    return 0;
}

/* cur[advanced items of k] (cur: apply_basic's result, dims as recorded
 * in k's items): a new tensor, read by one index_select along one merged
 * dim of cur, in one of two ways:
 * - ranged (adjacent advanced dims; or separated ones when the positions
 *   read are no more than the elements of the dims spanned): the dims from
 *   the first advanced one to the last merge (a view when their strides
 *   allow); the positions are the advanced ones (n) plus, for separated
 *   items, the offsets of the dims between them (m), read as [n, m]: the
 *   broadcast index shape replaces the advanced dims in place (adjacent)
 *   or goes first (separated: a permute and a copy of the result);
 * - front: the advanced dims are permuted to the front and merged (a copy
 *   of cur) and the broadcast index shape replaces that first dim. */
static st_tensor *gather_adv(st_tensor *cur, key_t_ *k)
{
    adv_key a;
    int at, o = 0, first, end;
    int64_t shape[ST_MAX_DIMS], *lin = NULL, *mid = NULL;
    int64_t size = 1, rsize = 1, m = 1, rstr[ST_MAX_DIMS];
    bool ranged;
    st_tensor *base = NULL, *r = NULL, *it = NULL, *lind = NULL;
    st_device *dev = st_tensor_device(cur);
    if (adv_key_of(cur, k, &a) < 0)
        return NULL;
    adv_group *g = a.g;
    int ng = a.ng, bnd = a.bnd;
    int64_t *bshape = a.bshape, n = a.n, nsel = a.nsel;
    bool adjacent = a.adjacent, *is_adv_dim = a.is_adv_dim;
    for (int j = 0; j < ng; j++)
        if (__builtin_mul_overflow(size, g[j].size, &size))
            goto too_big;
    first = g[0].dim;
    end = g[ng - 1].dim + g[ng - 1].span;
    for (int d = end - 1; d >= first; d--) {
        rstr[d] = rsize;
        if (__builtin_mul_overflow(rsize, cur->shape[d], &rsize))
            goto too_big;
        if (!is_adv_dim[d])
            m *= cur->shape[d];
    }
    ranged = adjacent || (double)n * (double)m <= (double)rsize;
    if (ranged) {
        for (int j = 0; j < ng; j++)
            g[j].mul = rstr[g[j].dim + g[j].span - 1];
    } else {
        int64_t mul = 1;
        for (int j = ng - 1; j >= 0; j--) {
            g[j].mul = mul;
            mul *= g[j].size;
        }
    }
    /* a traced key: the positions are recorded ops on the indices */
    if (adv_key_positions(&a, 0, dev, &lin, &lind) < 0)
        goto done;
    if (ranged) {
        /* base: cur with dims [first, end) merged into dim `at` */
        at = first;
        for (int d = 0; d < at; d++)
            shape[o++] = cur->shape[d];
        shape[o++] = rsize;
        for (int d = end; d < cur->ndim; d++)
            shape[o++] = cur->shape[d];
        if (end - first == 1) {
            base = cur;
            st_tensor_incref(base);
        } else {
            base = st_tensor_reshape(cur, o, shape, false);
        }
        if (adjacent) {
            if (lind)
                st_tensor_incref(it = lind);
            else
                it = ints_to_tensor(dev, lin, nsel);
        } else {
            /* the offsets of the dims between the advanced ones */
            int64_t pos[ST_MAX_DIMS] = {0}, off = 0;
            if (!(mid = malloc(sizeof(int64_t) * (size_t)(m ? m : 1)))) {
                PyErr_NoMemory();
                goto done;
            }
            for (int64_t e = 0; e < m; e++) {
                mid[e] = off;
                for (int d = end - 1; d >= first; d--) {
                    if (is_adv_dim[d])
                        continue;
                    off += rstr[d];
                    if (++pos[d] < cur->shape[d])
                        break;
                    off -= rstr[d] * cur->shape[d];
                    pos[d] = 0;
                }
            }
            it = outer_add_host(dev, lind, lin, nsel, mid, m);
        }
    } else {
        int64_t perm[ST_MAX_DIMS];
        int p = 0;
        at = 0;
        for (int d = 0; d < cur->ndim; d++)
            if (is_adv_dim[d])
                perm[p++] = d;
        shape[o++] = size;
        for (int d = 0; d < cur->ndim; d++)
            if (!is_adv_dim[d]) {
                perm[p++] = d;
                shape[o++] = cur->shape[d];
            }
        st_tensor *pt = st_tensor_permute(cur, perm);
        base = pt ? st_tensor_reshape(pt, o, shape, false) : NULL;
        if (pt)
            st_tensor_decref(pt);
        if (base && lind)
            st_tensor_incref(it = lind);
        else if (base)
            it = ints_to_tensor(dev, lin, nsel);
    }
    if (!base) {
        st_fe_raise();
        goto done;
    }
    if (!it)
        goto done;
    r = index_select(base, it, at);
    if (r) {
        /* the merged dim becomes the broadcast index shape (and, ranged
         * and separated, the dims between the advanced ones) */
        int64_t rs[ST_MAX_DIMS];
        int q = 0;
        for (int d = 0; d < at; d++)
            rs[q++] = base->shape[d];
        for (int d = 0; d < bnd; d++)
            rs[q++] = bshape[d];
        if (ranged && !adjacent)
            for (int d = first; d < end; d++)
                if (!is_adv_dim[d])
                    rs[q++] = cur->shape[d];
        for (int d = at + 1; d < base->ndim; d++)
            rs[q++] = base->shape[d];
        st_tensor *sel = r, *v = r;
        st_tensor_incref(sel);
        if (q != v->ndim || bnd != 1 || nsel != n) {
            v = st_tensor_reshape(sel, q, rs, false);
        } else {
            st_tensor_incref(v);
        }
        if (v && ranged && !adjacent && at > 0) {
            /* separated: the index dims go first */
            int64_t perm[ST_MAX_DIMS];
            int p = 0;
            for (int d = 0; d < bnd; d++)
                perm[p++] = at + d;
            for (int d = 0; d < v->ndim; d++)
                if (d < at || d >= at + bnd)
                    perm[p++] = d;
            st_tensor *pt = st_tensor_permute(v, perm);
            st_tensor_decref(v);
            v = pt;
        }
        st_tensor_decref(r);
        st_tensor_decref(sel);
        /* a view of index_select's result, which nothing else holds: a
         * tensor of its own (no _base), as torch's; contiguous as torch's
         * (the separated case's permute is copied) */
        r = v;
        if (v && v != sel && !st_tensor_is_contiguous(v)) {
            r = fresh_copy(v);
            st_tensor_decref(v);
        } else if (v && v != sel) {
            st_view_unbase(v);
        }
        if (!r && !PyErr_Occurred())
            st_fe_raise();
    }
    goto done;
too_big:
    too_big();
done:
    if (it)
        st_tensor_decref(it);
    if (lind)
        st_tensor_decref(lind);
    if (base)
        st_tensor_decref(base);
    free(lin);
    free(mid);
    adv_key_clear(&a);
    return r;
}

/* ---- positions (writes through advanced keys) ----
 * The row-major positions in a tensor of the elements tensor[key] selects,
 * in O(result): the basic items apply to a phantom of the tensor's shape
 * (int64, row-major strides, over a storage nothing reads), so that each
 * view's offset and strides are positions; the advanced items give host
 * offsets through adv_positions (each group's multiplier its dim's stride
 * in the phantom view; a mask's flat positions unravelled over its dims),
 * checked and wrapped as a read checks them; the other dims add their
 * offsets by broadcast adds on the device. */

/* The offsets, row-major over dims dims[0..nd) of cur, of their elements
 * (a new array of *count). */
static int64_t *dim_offsets(const st_tensor *cur, const int *dims, int nd,
                            int64_t *count)
{
    int64_t n = 1;
    for (int j = 0; j < nd; j++)
        n *= cur->shape[dims[j]];
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!r) {
        PyErr_NoMemory();
        return NULL;
    }
    int64_t pos[ST_MAX_DIMS] = {0}, off = 0;
    for (int64_t e = 0; e < n; e++) {
        r[e] = off;
        for (int j = nd - 1; j >= 0; j--) {
            int d = dims[j];
            off += cur->strides[d];
            if (++pos[j] < cur->shape[d])
                break;
            off -= cur->strides[d] * cur->shape[d];
            pos[j] = 0;
        }
    }
    *count = n;
    return r;
}

/* A phantom of t: int64, t's shape, row-major strides, offset 0, on t's
 * device, over a storage of the right size whose data nothing reads (its
 * pointer is a placeholder). */
static st_tensor *phantom_of(const st_tensor *t)
{
    static char placeholder;
    int64_t n = st_tensor_numel(t);
    st_storage *s = st_storage_external(st_tensor_device(t), &placeholder,
                                        (size_t)(n ? n : 1) * sizeof(int64_t),
                                        NULL, NULL);
    if (!s)
        return NULL;
    st_tensor holder;
    memset(&holder, 0, sizeof holder);
    holder.storage = s;
    holder.dtype = ST_INT64;
    holder.refcount = 1;
    st_tensor *p = st_tensor_view_of(&holder, t->ndim, t->shape, NULL, 0);
    st_storage_decref(s);
    if (p)
        p->is_view = false;
    return p;
}

/* A 1-D tensor on dev of [A, n, C] (row-major) = a[i] + lin[j] + c[k]:
 * lin a device tensor of n (lind), or host values (lin, n of them: the
 * size-1 parts fold into them on the host). */
static st_tensor *combine3(st_device *dev, const int64_t *a, int64_t A,
                           st_tensor *lind, int64_t *lin, int64_t n,
                           const int64_t *c, int64_t C)
{
    if (!lind) {
        int64_t add = (A == 1 ? a[0] : 0) + (C == 1 ? c[0] : 0);
        for (int64_t j = 0; j < n; j++)
            lin[j] += add;
        if (A == 1 && C == 1)
            return ints_to_tensor(dev, lin, n);
        if (A == 1)
            return outer_add_host(dev, NULL, lin, n, c, C);
    }
    /* a's part first (a host array of A), then c's */
    st_tensor *t = lind;
    if (t)
        st_tensor_incref(t);
    else if (!(t = ints_to_tensor(dev, lin, n)))
        return NULL;
    if (A > 1 || lind) {
        st_tensor *ta = ints_to_tensor(dev, a, A);
        st_tensor *u = ta ? outer_add(ta, t) : NULL;
        if (ta)
            st_tensor_decref(ta);
        st_tensor_decref(t);
        if (!(t = u))
            return NULL;
    }
    if (C > 1 || lind) {
        st_tensor *u = outer_add_host(dev, t, NULL, 0, c, C);
        st_tensor_decref(t);
        t = u;
    }
    return t;
}

/* The positions of cur[advanced items of k] (cur: apply_basic's result on
 * a phantom), placed as a read places them; a new tensor. */
static st_tensor *positions_adv(st_tensor *cur, key_t_ *k)
{
    adv_key a;
    int pre[ST_MAX_DIMS], post[ST_MAX_DIMS], npre = 0, npost = 0;
    int64_t A = 1, C = 1, *lin = NULL, *pa = NULL, *pc = NULL;
    st_tensor *flat = NULL, *r = NULL, *lind = NULL;
    if (adv_key_of(cur, k, &a) < 0)
        return NULL;
    adv_group *g = a.g;
    int64_t nsel = a.nsel;
    for (int j = 0; j < a.ng; j++) {
        if (g[j].span > 1) {
            /* a mask: its flat positions become offsets in cur */
            int64_t *sh = &cur->shape[g[j].dim], *st = &cur->strides[g[j].dim];
            for (int64_t e = 0; e < g[j].shape[0]; e++) {
                int64_t f = g[j].v[e], off = 0;
                for (int d = g[j].span - 1; d >= 0; d--) {
                    off += (f % sh[d]) * st[d];
                    f /= sh[d];
                }
                g[j].v[e] = off;
            }
            g[j].mul = 1;
        } else {
            g[j].mul = cur->strides[g[j].dim];
        }
    }
    if (adv_key_positions(&a, cur->offset, st_tensor_device(cur), &lin, &lind) < 0)
        goto done;
    /* adjacent: the dims before the first advanced one, then the index
     * dims, then the rest; separated: the index dims, then every other */
    for (int d = 0; d < cur->ndim; d++) {
        if (a.is_adv_dim[d])
            continue;
        if (a.adjacent && d < g[0].dim)
            pre[npre++] = d;
        else
            post[npost++] = d;
    }
    if (!(pa = dim_offsets(cur, pre, npre, &A)) ||
        !(pc = dim_offsets(cur, post, npost, &C)))
        goto done;
    if (nsel == 0 || A == 0 || C == 0) {
        int64_t z = 0;
        flat = st_tensor_empty(st_tensor_device(cur), ST_INT64, 1, &z);
        if (!flat)
            st_fe_raise();
    } else {
        flat = combine3(st_tensor_device(cur), pa, A, lind, lin, nsel, pc, C);
    }
    if (flat) {
        int64_t rs[ST_MAX_DIMS];
        int q = 0;
        for (int j = 0; j < npre; j++)
            rs[q++] = cur->shape[pre[j]];
        for (int d = 0; d < a.bnd; d++)
            rs[q++] = a.bshape[d];
        for (int j = 0; j < npost; j++)
            rs[q++] = cur->shape[post[j]];
        r = st_tensor_reshape(flat, q, rs, false);
        st_tensor_decref(flat);
        flat = NULL;
        if (r)
            st_view_unbase(r);     /* the only holder of flat now */
        else
            st_fe_raise();
    }
done:
    if (flat)
        st_tensor_decref(flat);
    if (lind)
        st_tensor_decref(lind);
    free(lin);
    free(pa);
    free(pc);
    adv_key_clear(&a);
    return r;
}

/* _C._index_positions(t, key): an int64 tensor of the shape t[key] has,
 * on t's device, holding the row-major positions in t of the elements
 * t[key] selects (torch's placement, checks and errors), in O(result):
 * what a write through the key (t[key] = v, index_put) scatters to. */
PyObject *st_fe_index_positions(PyObject *self, PyObject *args)
{
    PyObject *to, *key;
    if (!PyArg_ParseTuple(args, "OO:_index_positions", &to, &key))
        return NULL;
    if (!st_fe_is_tensor(to)) {
        PyErr_SetString(PyExc_TypeError, "_index_positions: expected a Tensor");
        return NULL;
    }
    st_tensor *t = st_fe_unwrap(to);
    key_t_ k;
    if (parse_key(key, &k) < 0)
        return NULL;
    st_tensor *ph = phantom_of(t), *cur = NULL, *r = NULL;
    if (!ph) {
        key_clear(&k);
        return st_fe_raise();
    }
    if (apply_basic(ph, &k, &cur) == 0) {
        if (k.nadv > 0) {
            r = positions_adv(cur, &k);
        } else {
            int dims[ST_MAX_DIMS];
            int64_t n, *off;
            for (int d = 0; d < cur->ndim; d++)
                dims[d] = d;
            if ((off = dim_offsets(cur, dims, cur->ndim, &n))) {
                for (int64_t e = 0; e < n; e++)
                    off[e] += cur->offset;
                st_tensor *f = ints_to_tensor(st_tensor_device(cur), off, n);
                if (f) {
                    r = st_tensor_reshape(f, cur->ndim, cur->shape, false);
                    st_tensor_decref(f);   /* before unbase: r holds it alone */
                    if (r)
                        st_view_unbase(r);
                    else
                        st_fe_raise();
                }
                free(off);
            }
        }
        st_tensor_decref(cur);
    }
    st_tensor_decref(ph);
    key_clear(&k);
    return r ? st_fe_wrap(r) : NULL;
}

PyObject *st_fe_getitem(PyObject *self, PyObject *key)
{
    st_tensor *t = st_fe_unwrap(self);
    key_t_ k;
    if (parse_key(key, &k) < 0)
        return NULL;
    st_tensor *cur;
    if (apply_basic(t, &k, &cur) < 0) {
        key_clear(&k);
        return NULL;
    }
    if (k.nadv > 0) {
        st_tensor *r = gather_adv(cur, &k);
        st_tensor_decref(cur);
        key_clear(&k);
        return r ? st_fe_wrap(r) : NULL;
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
    /* the very elements of dst in its order (x[...] = x, x expanded too):
     * a copy onto itself, which torch's copy_ returns from at once */
    bool same = v->storage == dst->storage && v->offset == dst->offset &&
                v->ndim == dst->ndim &&
                !memcmp(v->shape, dst->shape, sizeof(int64_t) * (size_t)v->ndim) &&
                !memcmp(v->strides, dst->strides, sizeof(int64_t) * (size_t)v->ndim);
    /* an overlapping source of dst's shape (x[1:] = x[:-1]) is copy_'s
     * (torch's setitem is a copy_): refused where the overlap is partial
     * and both are dense, else written in order, in place */
    bool as_copy = v->ndim == dst->ndim &&
                   !memcmp(v->shape, dst->shape, sizeof(int64_t) * (size_t)v->ndim);
    if (v->storage == self->storage && !same && !as_copy && st_rt_trace_active()) {
        /* a broadcast overlapping source while tracing: copy it out first,
         * as a fresh result (a traced statement; a tensor made empty here
         * and written into would be a graph input holding this call's
         * data). Eager writes it in torch's order (runtime/overlap_seq.c) */
        st_operand op = {.t = v};
        st_tensor *given[ST_MAX_OUT] = {0}, *out[ST_MAX_OUT] = {0};
        int rc = st_rt_eager(ST_OP_COPY, &op, 1, NULL, given, out);
        st_tensor_decref(v);
        if (rc < 0) {
            st_fe_raise();
            return NULL;
        }
        v = out[0];
    }
    /* of dst's shape already: no expand (a traced expand would hold dst's
     * sizes as constants, which dynamic shapes could not explain: x[:n] *= 2) */
    if (v->ndim == dst->ndim &&
        !memcmp(v->shape, dst->shape, sizeof(int64_t) * (size_t)v->ndim))
        return v;
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

/* cur[mask over dims [dim, dim+k)] = value (a number or a one-element
 * tensor): where(mask, value, cur). */
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
        /* a one-element tensor (setitem_functional takes other values) */
        st_tensor *v = cast_to(st_fe_unwrap(value), cur->dtype);
        if (!v)
            goto done;
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
 * rather than a write into a view: an index tensor or list in the key,
 * several advanced items (masks, or True/False beside one), or one mask
 * with a value that is not a number or a one-element tensor. A write into
 * a view that autograd must record gets its CopySlices node from the
 * runtime (runtime/viewhist.c). */
static bool setitem_functional(const key_t_ *k, PyObject *value)
{
    if (k->nadv > 1 || (k->adv >= 0 && !k->it[k->adv].mask))
        return true;
    /* one mask: write_mask takes a number or a one-element tensor; other
     * values broadcast to the selected elements there */
    return k->adv >= 0 && !is_number(value) &&
           !(st_fe_is_tensor(value) &&
             st_tensor_numel(st_fe_unwrap(value)) == 1);
}

bool st_fe_setitem_is_fill(PyObject *key, PyObject *value)
{
    /* first, nothing parse_key would read on the host (a 0-d tensor, a
     * list that may hold tensors): that read would fail an active trace */
    if (PyList_Check(key))
        return false;
    bool tup = PyTuple_Check(key);
    Py_ssize_t n = tup ? PyTuple_GET_SIZE(key) : 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = tup ? PyTuple_GET_ITEM(key, i) : key;
        if (st_fe_is_tensor(o) ? st_fe_unwrap(o)->ndim == 0
                               : PyList_Check(o) || PyTuple_Check(o))
            return false;
    }
    key_t_ k;
    if (parse_key(key, &k) < 0) {
        PyErr_Clear();
        return false;
    }
    bool fill = k.nadv == 1 && k.adv >= 0 && k.it[k.adv].mask &&
                !setitem_functional(&k, value);
    key_clear(&k);
    return fill;
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
    if (setitem_functional(&k, value)) {
        key_clear(&k);
        return call_setitem_functional(self, key, value);
    }
    if (t->requires_grad && !t->grad_fn && st_ad_grad_enabled()) {
        /* torch: a basic key writes into a view, a mask by index_put_ */
        PyErr_SetString(PyExc_RuntimeError,
                        k.nadv ? "a leaf Variable that requires grad is being "
                                 "used in an in-place operation."
                               : "a view of a leaf Variable that requires grad "
                                 "is being used in an in-place operation.");
        key_clear(&k);
        return -1;
    }
    st_tensor *cur;
    if (apply_basic(t, &k, &cur) < 0) {
        key_clear(&k);
        return -1;
    }
    int r;
    if (k.adv >= 0) {
        /* one bool mask (setitem_functional took every other advanced
         * key) */
        item *it = &k.it[k.adv];
        r = check_mask(cur, it->adv, it->dim) < 0
                ? -1 : write_mask(t, cur, it->adv, it->dim, value);
    } else {
        r = write_view(t, cur, value);
    }
    st_tensor_decref(cur);
    key_clear(&k);
    return r; /* the write moved t's version on (runtime/exec.c) */
}
