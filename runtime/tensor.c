/* runtime/tensor.c - owns storage (reference-counted device memory from the
 * caching allocator, or wrapped external memory) and tensors (shape, strides,
 * offset over a storage; views share it): creation, reference counting,
 * contiguity and metadata helpers. The view functions live in view.c. */
#include "st_runtime.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- storage ---------------- */

st_storage *st_storage_new(st_device *dev, size_t nbytes)
{
    if (!dev)
        dev = st_rt_cpu();
    st_allocator *a = st_alloc_for(dev);
    if (!a)
        return NULL;
    st_storage *s = calloc(1, sizeof *s);
    if (!s) {
        st_err(ST_ERR_MEMORY, "out of host memory for a storage header");
        return NULL;
    }
    st_block *b = st_alloc_block(a, nbytes);
    if (!b) {
        free(s);
        return NULL;
    }
    s->refcount = 1;
    s->device = dev;
    s->block = b;
    s->data = b->ptr;
    s->nbytes = nbytes;
    return s;
}

st_storage *st_storage_external(st_device *dev, void *data, size_t nbytes,
                                void (*ext_free)(void *), void *ctx)
{
    if (!dev)
        dev = st_rt_cpu();
    if (!data && nbytes > 0) {
        st_err(ST_ERR_RUNTIME, "external storage of %zu bytes has no data pointer", nbytes);
        return NULL;
    }
    st_storage *s = calloc(1, sizeof *s);
    if (!s) {
        st_err(ST_ERR_MEMORY, "out of host memory for a storage header");
        return NULL;
    }
    s->refcount = 1;
    s->device = dev;
    s->block = NULL;
    s->data = data;
    s->nbytes = nbytes;
    s->ext_free = ext_free;
    s->ext_ctx = ctx;
    return s;
}

void st_storage_incref(st_storage *s)
{
    if (s)
        __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void st_storage_decref(st_storage *s)
{
    if (!s)
        return;
    if (__atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (s->block)
        st_alloc_free(st_alloc_for(s->device), s->block);
    else if (s->ext_free)
        s->ext_free(s->ext_ctx);
    free(s);
}

/* ---------------- tensors ---------------- */

void st_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t acc = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = acc;
        acc *= shape[d] > 1 ? shape[d] : 1;
    }
}

st_tensor *st_tensor_empty(st_device *dev, st_dtype dt, int ndim, const int64_t *shape)
{
    char buf[160];
    if ((int)dt < 0 || dt >= ST_NDTYPES) {
        st_err(ST_ERR_TYPE, "empty(): invalid dtype %d", (int)dt);
        return NULL;
    }
    if (ndim < 0 || ndim > ST_MAX_DIMS) {
        st_err(ST_ERR_RUNTIME, "empty(): %d dimensions requested; at most %d are supported",
               ndim, ST_MAX_DIMS);
        return NULL;
    }
    if (ndim > 0 && !shape) {
        st_err(ST_ERR_RUNTIME, "empty(): no shape given for %d dimensions", ndim);
        return NULL;
    }
    size_t item = st_dtype_size(dt);
    int64_t numel = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            st_err(ST_ERR_RUNTIME, "Trying to create tensor with negative dimension %" PRId64
                   ": %s", shape[d], st_shape_str(shape, ndim, buf, sizeof buf));
            return NULL;
        }
        if (shape[d] != 0 && numel > INT64_MAX / shape[d])
            overflow = true;
        else
            numel *= shape[d];
    }
    if (numel == 0)
        overflow = false;
    if (overflow || (item && (uint64_t)numel > (uint64_t)INT64_MAX / item)) {
        st_err(ST_ERR_MEMORY, "empty(): tensor of shape %s is too large",
               st_shape_str(shape, ndim, buf, sizeof buf));
        return NULL;
    }
    st_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        st_err(ST_ERR_MEMORY, "out of host memory for a tensor header");
        return NULL;
    }
    t->storage = st_storage_new(dev, (size_t)numel * item);
    if (!t->storage) {
        free(t);
        return NULL;
    }
    t->refcount = 1;
    t->offset = 0;
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    st_contiguous_strides(ndim, t->shape, t->strides);
    return t;
}

st_tensor *st_tensor_view_of(st_tensor *base, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset)
{
    char b1[160], b2[160];
    if (!base || !base->storage) {
        st_err(ST_ERR_RUNTIME, "view_of(): no base tensor");
        return NULL;
    }
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape)) {
        st_err(ST_ERR_RUNTIME, "view_of(): invalid rank %d (at most %d dimensions)", ndim,
               ST_MAX_DIMS);
        return NULL;
    }
    int64_t st[ST_MAX_DIMS];
    if (strides)
        memcpy(st, strides, sizeof(int64_t) * (size_t)ndim);
    else
        st_contiguous_strides(ndim, shape, st);
    /* Bounds: the highest element reached must lie inside the storage. */
    int64_t numel = 1, last = offset;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || st[d] < 0) {
            st_err(ST_ERR_RUNTIME, "view_of(): negative size or stride in shape %s, strides %s",
                   st_shape_str(shape, ndim, b1, sizeof b1), st_shape_str(st, ndim, b2, sizeof b2));
            return NULL;
        }
        numel *= shape[d];
        if (shape[d] > 0)
            last += (shape[d] - 1) * st[d];
    }
    size_t item = st_dtype_size(base->dtype);
    if (offset < 0 ||
        (numel > 0 && (uint64_t)(last + 1) * item > (uint64_t)base->storage->nbytes)) {
        st_err(ST_ERR_RUNTIME,
               "setStorage: sizes %s, strides %s, storage offset %" PRId64
               ", and itemsize %zu requiring a storage size of %" PRIu64
               " are out of bounds for storage of size %zu",
               st_shape_str(shape, ndim, b1, sizeof b1), st_shape_str(st, ndim, b2, sizeof b2),
               offset, item, (uint64_t)(last + 1) * item, base->storage->nbytes);
        return NULL;
    }
    st_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        st_err(ST_ERR_MEMORY, "out of host memory for a tensor header");
        return NULL;
    }
    t->refcount = 1;
    t->is_view = true;
    t->storage = base->storage;
    st_storage_incref(base->storage);
    t->offset = offset;
    t->dtype = base->dtype;
    t->own_version = base->own_version;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = st[d];
    }
    return t;
}

void st_tensor_incref(st_tensor *t)
{
    if (t)
        __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
}

void st_tensor_decref(st_tensor *t)
{
    if (!t)
        return;
    int64_t r = __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL);
    if (r == 1 && t->traced)
        st_rt_trace_released(t);
    if (r != 0)
        return;
    if (t->retains_grad || t->hooks)
        st_ad_tensor_gone(t);
    st_storage_decref(t->storage);
    st_tensor *g = t->grad, *vb = t->view_base;
    st_ad_node *fn = t->grad_fn;
    free(t);
    st_tensor_decref(g);
    st_tensor_decref(vb);
    if (fn)
        st_ad_node_decref(fn);
}

int64_t st_tensor_numel(const st_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* t's dims of size > 1, by |stride| ascending, into st/sh; their count */
static int dims_by_stride(const st_tensor *t, int64_t *st, int64_t *sh)
{
    int n = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 2)
            continue;
        int64_t a = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
        int i = n++;
        for (; i > 0 && st[i - 1] > a; i--) {
            st[i] = st[i - 1];
            sh[i] = sh[i - 1];
        }
        st[i] = a;
        sh[i] = t->shape[d];
    }
    return n;
}

bool st_tensor_may_overlap(const st_tensor *t, bool zero_strides)
{
    /* each dim must step past all the smaller ones */
    if (st_tensor_numel(t) == 0)
        return false;
    int64_t st[ST_MAX_DIMS], sh[ST_MAX_DIMS], reach = 0;
    int n = dims_by_stride(t, st, sh);
    for (int i = 0; i < n; i++) {
        if (st[i] == 0) {           /* expanded: sorted first */
            if (zero_strides)
                return true;
            continue;
        }
        if (st[i] <= reach)
            return true;
        reach += st[i] * (sh[i] - 1);
    }
    return false;
}

bool st_tensor_is_dense(const st_tensor *t)
{
    /* by stride, each dim steps exactly past the smaller ones */
    int64_t st[ST_MAX_DIMS], sh[ST_MAX_DIMS], want = 1;
    int n = dims_by_stride(t, st, sh);
    for (int i = 0; i < n; i++) {
        if (st[i] != want)
            return false;
        want *= sh[i];
    }
    return true;
}

bool st_tensor_is_contiguous(const st_tensor *t)
{
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 0)
            return true;
    }
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 1)
            continue;
        if (t->strides[d] != expected)
            return false;
        expected *= t->shape[d];
    }
    return true;
}

void *st_tensor_data(const st_tensor *t)
{
    if (!t || !t->storage || !t->storage->data)
        return NULL;
    return t->storage->data + t->offset * (int64_t)st_dtype_size(t->dtype);
}

st_device *st_tensor_device(const st_tensor *t)
{
    return t && t->storage ? t->storage->device : NULL;
}

void st_tensor_meta(const st_tensor *t, st_meta *m)
{
    memset(m, 0, sizeof *m);
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++)
        m->shape[d] = t->shape[d];
    m->kind = ST_META_TENSOR;
}

st_tensor *st_tensor_in_storage(st_storage *s, st_dtype dt, int ndim,
                                const int64_t *shape, int64_t byte_off)
{
    size_t isz = st_dtype_size(dt);
    if (!s || isz == 0 || ndim < 0 || ndim > ST_MAX_DIMS || byte_off < 0 ||
        byte_off % (int64_t)isz) {
        st_err(ST_ERR_RUNTIME, "tensor_in_storage: bad placement (offset %lld)",
               (long long)byte_off);
        return NULL;
    }
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    if (byte_off + n * (int64_t)isz > (int64_t)s->nbytes) {
        st_err(ST_ERR_RUNTIME, "tensor_in_storage: %lld bytes at offset %lld exceed the "
               "storage's %zu", (long long)(n * (int64_t)isz), (long long)byte_off,
               s->nbytes);
        return NULL;
    }
    st_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        st_err(ST_ERR_MEMORY, "out of host memory for a tensor header");
        return NULL;
    }
    t->refcount = 1;
    t->storage = s;
    st_storage_incref(s);
    t->offset = byte_off / (int64_t)isz;
    t->dtype = dt;
    t->ndim = ndim;
    if (ndim)
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    st_contiguous_strides(ndim, t->shape, t->strides);
    return t;
}
