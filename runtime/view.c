/* runtime/view.c - owns the view functions on tensors (reshape/view,
 * permute, transpose, expand, slice, select, squeeze, unsqueeze), the
 * dispatch of ST_OPK_VIEW statements onto them (st_tensor_apply_view) and
 * st_tensor_contiguous. Semantics and error kinds follow PyTorch; every
 * message names the tensor's shape. Views share storage (st_tensor_view_of);
 * only reshape of a non-viewable layout and contiguous() copy, through the
 * eager COPY op. */
#include "st_runtime.h"

#include <inttypes.h>
#include <string.h>

#define SHAPE_BUF 160

static const char *shp(const st_tensor *t, char *buf)
{
    return st_shape_str(t->shape, t->ndim, buf, SHAPE_BUF);
}

/* PyTorch's maybe_wrap_dim: dim in [-n, n-1] with n = max(ndim, 1);
 * IndexError otherwise, naming the op and the tensor's shape. */
static bool wrap_dim(const char *op, int64_t *dim, int ndim, const st_tensor *t)
{
    int64_t n = ndim > 0 ? ndim : 1;
    if (*dim < -n || *dim > n - 1) {
        char buf[SHAPE_BUF];
        st_err(ST_ERR_INDEX,
               "%s(): Dimension out of range (expected to be in range of [%" PRId64 ", %" PRId64
               "], but got %" PRId64 ") for tensor of shape %s",
               op, -n, n - 1, *dim, shp(t, buf));
        return false;
    }
    if (*dim < 0)
        *dim += n;
    return true;
}

static bool check_tensor(const char *op, const st_tensor *t)
{
    if (!t || !t->storage) {
        st_err(ST_ERR_RUNTIME, "%s(): no tensor", op);
        return false;
    }
    return true;
}

/* ---------------- reshape ---------------- */

/* PyTorch's computeStride (st_view_strides in ir/) on a tensor. */
static bool compute_stride(const st_tensor *t, int nd, const int64_t *newshape,
                           int64_t *newstride)
{
    return st_view_strides(t->ndim, t->shape, t->strides, nd, newshape, newstride);
}

/* PyTorch's infer_size: resolves one -1 and checks the element count. */
static bool infer_size(const st_tensor *t, int nd, const int64_t *shape, int64_t *out)
{
    char buf[SHAPE_BUF];
    int64_t numel = st_tensor_numel(t), newsize = 1;
    int infer = -1;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == -1) {
            if (infer >= 0) {
                st_err(ST_ERR_RUNTIME, "only one dimension can be inferred (shape %s, "
                       "tensor of shape %s)", st_shape_str(shape, nd, buf, sizeof buf),
                       shp(t, (char[SHAPE_BUF]){0}));
                return false;
            }
            infer = d;
        } else if (shape[d] < 0) {
            st_err(ST_ERR_RUNTIME, "invalid shape dimension %" PRId64 " (shape %s, tensor of "
                   "shape %s)", shape[d], st_shape_str(shape, nd, buf, sizeof buf),
                   shp(t, (char[SHAPE_BUF]){0}));
            return false;
        } else {
            newsize *= shape[d];
        }
        out[d] = shape[d];
    }
    if (infer >= 0) {
        if (newsize == 0) {
            st_err(ST_ERR_RUNTIME, "cannot reshape tensor of 0 elements into shape %s because "
                   "the unspecified dimension size -1 can be any value and is ambiguous",
                   st_shape_str(shape, nd, buf, sizeof buf));
            return false;
        }
        if (numel % newsize == 0) {
            out[infer] = numel / newsize;
            return true;
        }
    } else if (numel == newsize) {
        return true;
    }
    st_err(ST_ERR_RUNTIME, "shape '%s' is invalid for input of size %" PRId64,
           st_shape_str(shape, nd, buf, sizeof buf), numel);
    return false;
}

static st_tensor *reshape_raw(st_tensor *t, int ndim, const int64_t *shape, bool view_only)
{
    const char *op = view_only ? "view" : "reshape";
    if (!check_tensor(op, t))
        return NULL;
    char buf[SHAPE_BUF];
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape)) {
        st_err(ST_ERR_RUNTIME, "%s(): %d dimensions requested for tensor of shape %s; at most "
               "%d are supported", op, ndim, shp(t, buf), ST_MAX_DIMS);
        return NULL;
    }
    int64_t newshape[ST_MAX_DIMS], newstride[ST_MAX_DIMS];
    if (!infer_size(t, ndim, shape, newshape))
        return NULL;
    if (compute_stride(t, ndim, newshape, newstride))
        return st_tensor_view_of(t, ndim, newshape, newstride, t->offset);
    if (view_only) {
        st_err(ST_ERR_RUNTIME,
               "view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
               "(tensor of shape %s, view shape %s)",
               shp(t, buf), st_shape_str(newshape, ndim, (char[SHAPE_BUF]){0}, SHAPE_BUF));
        return NULL;
    }
    st_tensor *c = st_tensor_contiguous(t);
    if (!c)
        return NULL;
    st_tensor *r = st_tensor_view_of(c, ndim, newshape, NULL, c->offset);
    st_tensor_decref(c);
    return r;
}

/* ---------------- permute / transpose ---------------- */

static st_tensor *permute_raw(st_tensor *t, const int64_t *perm)
{
    if (!check_tensor("permute", t))
        return NULL;
    int nd = t->ndim;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    bool used[ST_MAX_DIMS] = {0};
    if (nd > 0 && !perm) {
        st_err(ST_ERR_RUNTIME, "permute(): no dims given");
        return NULL;
    }
    for (int i = 0; i < nd; i++) {
        int64_t d = perm[i];
        if (!wrap_dim("permute", &d, nd, t))
            return NULL;
        if (used[d]) {
            char buf[SHAPE_BUF];
            st_err(ST_ERR_RUNTIME, "permute(): duplicate dims are not allowed (dim %" PRId64
                   " repeated) for tensor of shape %s", d, shp(t, buf));
            return NULL;
        }
        used[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return st_tensor_view_of(t, nd, shape, strides, t->offset);
}

static st_tensor *transpose_raw(st_tensor *t, int64_t d0, int64_t d1)
{
    if (!check_tensor("transpose", t))
        return NULL;
    if (!wrap_dim("transpose", &d0, t->ndim, t) || !wrap_dim("transpose", &d1, t->ndim, t))
        return NULL;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        shape[d0] = t->shape[d1];
        shape[d1] = t->shape[d0];
        strides[d0] = t->strides[d1];
        strides[d1] = t->strides[d0];
    }
    return st_tensor_view_of(t, t->ndim, shape, strides, t->offset);
}

/* ---------------- expand ---------------- */

static st_tensor *expand_raw(st_tensor *t, int ndim, const int64_t *sizes)
{
    if (!check_tensor("expand", t))
        return NULL;
    char buf[SHAPE_BUF], buf2[SHAPE_BUF];
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !sizes)) {
        st_err(ST_ERR_RUNTIME, "expand(): %d sizes given for tensor of shape %s; at most %d "
               "dimensions are supported", ndim, shp(t, buf), ST_MAX_DIMS);
        return NULL;
    }
    if (ndim < t->ndim) {
        st_err(ST_ERR_RUNTIME,
               "expand(tensor of shape %s, size=%s): the number of sizes provided (%d) must be "
               "greater or equal to the number of dimensions in the tensor (%d)",
               shp(t, buf), st_shape_str(sizes, ndim, buf2, sizeof buf2), ndim, t->ndim);
        return NULL;
    }
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int offset = ndim - 1 - i;
        int dim = t->ndim - 1 - offset;
        int64_t size = dim >= 0 ? t->shape[dim] : 1;
        int64_t stride = dim >= 0 ? t->strides[dim]
                                  : (i == ndim - 1 ? 1 : shape[i + 1] * strides[i + 1]);
        int64_t target = sizes[i];
        if (target == -1) {
            if (dim < 0) {
                st_err(ST_ERR_RUNTIME,
                       "expand(tensor of shape %s, size=%s): the expanded size of the tensor "
                       "(-1) isn't allowed in a leading, non-existing dimension %d",
                       shp(t, buf), st_shape_str(sizes, ndim, buf2, sizeof buf2), i);
                return NULL;
            }
            target = size;
        }
        if (target < 0) {
            st_err(ST_ERR_RUNTIME, "expand(tensor of shape %s, size=%s): invalid size %" PRId64
                   " at dimension %d", shp(t, buf), st_shape_str(sizes, ndim, buf2, sizeof buf2),
                   target, i);
            return NULL;
        }
        if (size != target) {
            if (size != 1) {
                st_err(ST_ERR_RUNTIME,
                       "The expanded size of the tensor (%" PRId64 ") must match the existing "
                       "size (%" PRId64 ") at non-singleton dimension %d.  Target sizes: %s.  "
                       "Tensor sizes: %s", target, size, i,
                       st_shape_str(sizes, ndim, buf2, sizeof buf2), shp(t, buf));
                return NULL;
            }
            size = target;
            stride = 0;
        }
        shape[i] = size;
        strides[i] = stride;
    }
    return st_tensor_view_of(t, ndim, shape, strides, t->offset);
}

/* ---------------- slice / select ---------------- */

static st_tensor *slice_raw(st_tensor *t, int64_t dim, int64_t start, int64_t stop,
                           int64_t step)
{
    if (!check_tensor("slice", t))
        return NULL;
    char buf[SHAPE_BUF];
    if (t->ndim == 0) {
        st_err(ST_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor (shape %s)",
               shp(t, buf));
        return NULL;
    }
    if (!wrap_dim("slice", &dim, t->ndim, t))
        return NULL;
    if (step <= 0) {
        st_err(ST_ERR_VALUE, "step must be greater than zero (slice of tensor of shape %s, "
               "step %" PRId64 ")", shp(t, buf), step);
        return NULL;
    }
    int64_t len = st_slice_bounds(t->shape[dim], &start, &stop, step);
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    int64_t offset = t->offset + start * t->strides[dim];
    shape[dim] = len;
    strides[dim] = t->strides[dim] * step;
    return st_tensor_view_of(t, t->ndim, shape, strides, offset);
}

static st_tensor *select_raw(st_tensor *t, int64_t dim, int64_t index)
{
    if (!check_tensor("select", t))
        return NULL;
    char buf[SHAPE_BUF];
    if (t->ndim == 0) {
        st_err(ST_ERR_INDEX, "select() cannot be applied to a 0-dim tensor (shape %s)",
               shp(t, buf));
        return NULL;
    }
    if (!wrap_dim("select", &dim, t->ndim, t))
        return NULL;
    int64_t size = t->shape[dim];
    if (index < -size || index >= size) {
        st_err(ST_ERR_INDEX,
               "select(): index %" PRId64 " out of range for tensor of size %s at dimension %"
               PRId64, index, shp(t, buf), dim);
        return NULL;
    }
    if (index < 0)
        index += size;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d == dim)
            continue;
        shape[k] = t->shape[d];
        strides[k] = t->strides[d];
        k++;
    }
    return st_tensor_view_of(t, k, shape, strides, t->offset + index * t->strides[dim]);
}

/* ---------------- squeeze / unsqueeze ---------------- */

/* Drops the dims in mask whose size is 1. */
static st_tensor *squeeze_mask(st_tensor *t, const bool *mask)
{
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (mask[d] && t->shape[d] == 1)
            continue;
        shape[k] = t->shape[d];
        strides[k] = t->strides[d];
        k++;
    }
    return st_tensor_view_of(t, k, shape, strides, t->offset);
}

static st_tensor *squeeze_raw(st_tensor *t, int64_t dim)
{
    if (!check_tensor("squeeze", t))
        return NULL;
    bool mask[ST_MAX_DIMS] = {0};
    if (dim == ST_SQUEEZE_ALL) {
        for (int d = 0; d < t->ndim; d++)
            mask[d] = true;
    } else {
        if (!wrap_dim("squeeze", &dim, t->ndim, t))
            return NULL;
        if (t->ndim > 0)
            mask[dim] = true;
    }
    return squeeze_mask(t, mask);
}

static st_tensor *unsqueeze_raw(st_tensor *t, int64_t dim)
{
    if (!check_tensor("unsqueeze", t))
        return NULL;
    char buf[SHAPE_BUF];
    if (t->ndim >= ST_MAX_DIMS) {
        st_err(ST_ERR_RUNTIME, "unsqueeze(): tensor of shape %s already has the maximum of %d "
               "dimensions", shp(t, buf), ST_MAX_DIMS);
        return NULL;
    }
    if (!wrap_dim("unsqueeze", &dim, t->ndim + 1, t))
        return NULL;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    int k = 0;
    for (int d = 0; d <= t->ndim; d++) {
        if (d == dim) {
            shape[k] = 1;
            strides[k] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
            k++;
        }
        if (d < t->ndim) {
            shape[k] = t->shape[d];
            strides[k] = t->strides[d];
            k++;
        }
    }
    return st_tensor_view_of(t, k, shape, strides, t->offset);
}

/* ---------------- autograd: views are recorded like ops ----------------
 * The public view functions record a node (the view op and attrs that
 * describe it) when the source requires grad and grad mode is on; the VJP
 * rules of ir/autodiff.c undo the view. select() records as slice +
 * squeeze. */

static bool recording(const st_tensor *t)
{
    return t && t->requires_grad && st_ad_grad_enabled();
}

/* Whether a view of t must be described as a statement: recorded on the
 * tape, or noted on an active trace (runtime/trace.c, every view). */
static bool hooked(const st_tensor *t)
{
    return recording(t) || (t && st_rt_trace_active());
}

/* Records r = op(src) and returns r (NULL, releasing r, on failure); notes
 * it on the active trace. */
static st_tensor *recorded(st_tensor *src, st_tensor *r, st_op_id op, const st_attrs *a)
{
    if (!r)
        return r;
    st_operand in = {.t = src};
    if (recording(src) && st_ad_record(op, &in, 1, a, &r, 1, false) != ST_OK) {
        st_tensor_decref(r);
        return NULL;
    }
    if (st_rt_trace_active())
        st_rt_trace_note(op, &in, 1, a, &r, 1);
    return r;
}

static st_attrs dims_attrs(int n, const int64_t *dims)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = n;
    for (int k = 0; k < n; k++)
        a.dims[k] = dims[k];
    return a;
}

static st_tensor *reshape_view(st_tensor *t, int ndim, const int64_t *shape, bool view_only)
{
    if (!hooked(t))
        return reshape_raw(t, ndim, shape, view_only);
    st_tensor *r = reshape_raw(t, ndim, shape, true);
    st_tensor *src = t;
    if (!r) {
        if (view_only)
            return NULL;
        /* a reshape that must copy: the copy is recorded by the eager COPY
         * and the result views the copy */
        st_err_clear();
        src = st_tensor_contiguous(t);
        if (!src)
            return NULL;
        r = reshape_raw(src, ndim, shape, true);
    } else {
        st_tensor_incref(src);
    }
    if (r) {
        st_attrs a = dims_attrs(r->ndim, r->shape);
        r = recorded(src, r, ST_OP_RESHAPE, &a);
    }
    if (r && src != t)
        st_view_mark(src, r); /* a view of the copy, its root */
    st_tensor_decref(src);
    /* the copy is no one else's (a trace may map it): r is no view, as
     * torch's _unsafe_view of a clone, so detach_() on it is allowed */
    if (r && src != t && r->view_base == src) {
        r->view_base = NULL;
        r->is_view = false;
        st_tensor_decref(src);
    }
    return r;
}

static st_tensor *permute_view(st_tensor *t, const int64_t *perm)
{
    st_tensor *r = permute_raw(t, perm);
    if (!r || !hooked(t))
        return r;
    st_attrs a = dims_attrs(t->ndim, perm);
    for (int k = 0; k < t->ndim; k++)
        if (a.dims[k] < 0)
            a.dims[k] += t->ndim;
    return recorded(t, r, ST_OP_PERMUTE, &a);
}

static st_tensor *transpose_view(st_tensor *t, int64_t d0, int64_t d1)
{
    st_tensor *r = transpose_raw(t, d0, d1);
    if (!r || !hooked(t))
        return r;
    if (d0 < 0)
        d0 += t->ndim;
    if (d1 < 0)
        d1 += t->ndim;
    int64_t perm[ST_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++)
        perm[k] = k;
    if (t->ndim > 0) {
        perm[d0] = d1;
        perm[d1] = d0;
    }
    st_attrs a = dims_attrs(t->ndim, perm);
    return recorded(t, r, ST_OP_PERMUTE, &a);
}

static st_tensor *expand_view(st_tensor *t, int ndim, const int64_t *shape)
{
    st_tensor *r = expand_raw(t, ndim, shape);
    if (!r)
        return NULL;
    st_attrs a = dims_attrs(r->ndim, r->shape);
    return recorded(t, r, ST_OP_EXPAND, &a);
}

static st_tensor *slice_view(st_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step)
{
    st_tensor *r = slice_raw(t, dim, start, stop, step);
    if (!r || !hooked(t))
        return r;
    if (dim < 0)
        dim += t->ndim;
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = dim;
    a.i[1] = start;
    a.i[2] = stop;
    a.i[3] = step;
    st_slice_bounds(t->shape[dim], &a.i[1], &a.i[2], step);
    return recorded(t, r, ST_OP_SLICE, &a);
}

static st_tensor *select_view(st_tensor *t, int64_t dim, int64_t index)
{
    st_tensor *r = select_raw(t, dim, index);
    if (!r || !hooked(t))
        return r;
    st_tensor_decref(r);
    if (dim < 0)
        dim += t->ndim;
    if (index < 0)
        index += t->shape[dim];
    st_tensor *s = st_tensor_slice(t, dim, index, index + 1, 1);
    if (!s)
        return NULL;
    r = st_tensor_squeeze(s, dim);
    st_tensor_decref(s);
    return r;
}

static st_tensor *squeeze_view(st_tensor *t, int64_t dim)
{
    st_tensor *r = squeeze_raw(t, dim);
    if (!r || !hooked(t))
        return r;
    st_attrs a;
    memset(&a, 0, sizeof a);
    if (dim != ST_SQUEEZE_ALL) {
        a.ndims = 1;
        a.dims[0] = dim < 0 ? dim + t->ndim : dim;
    }
    return recorded(t, r, ST_OP_SQUEEZE, &a);
}

static st_tensor *unsqueeze_view(st_tensor *t, int64_t dim)
{
    st_tensor *r = unsqueeze_raw(t, dim);
    if (!r || !hooked(t))
        return r;
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = dim < 0 ? dim + t->ndim + 1 : dim;
    return recorded(t, r, ST_OP_UNSQUEEZE, &a);
}

/* ---------------- the public view functions: each result holds its root base ---------------- */

static st_tensor *marked(st_tensor *src, st_tensor *r)
{
    if (r)
        st_view_mark(src, r);
    return r;
}

st_tensor *st_tensor_reshape(st_tensor *t, int ndim, const int64_t *shape, bool view_only)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, reshape_view(t, ndim, shape, view_only));
}

st_tensor *st_tensor_permute(st_tensor *t, const int64_t *perm)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, permute_view(t, perm));
}

st_tensor *st_tensor_transpose(st_tensor *t, int64_t d0, int64_t d1)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, transpose_view(t, d0, d1));
}

st_tensor *st_tensor_expand(st_tensor *t, int ndim, const int64_t *shape)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, expand_view(t, ndim, shape));
}

st_tensor *st_tensor_slice(st_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, slice_view(t, dim, start, stop, step));
}

st_tensor *st_tensor_select(st_tensor *t, int64_t dim, int64_t index)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, select_view(t, dim, index));
}

st_tensor *st_tensor_squeeze(st_tensor *t, int64_t dim)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, squeeze_view(t, dim));
}

st_tensor *st_tensor_unsqueeze(st_tensor *t, int64_t dim)
{
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
        return NULL;
    return marked(t, unsqueeze_view(t, dim));
}

/* ---------------- view statements ---------------- */

static st_tensor *apply_view(st_tensor *t, st_op_id op, const st_attrs *attrs);

st_tensor *st_tensor_apply_view(st_tensor *t, st_op_id op, const st_attrs *attrs)
{
    st_tensor *r = apply_view(t, op, attrs);
    if (r && attrs && (attrs->flags & ST_VIEW_MULTI_ATTR)) { /* an output of split, unbind */
        int nr = attrs->flags & 0xfffff;
        st_view_multi_mark(r, (attrs->flags >> 20) & 0xff, nr == 0xfffff ? -1 : nr);
        if ((attrs->flags & ST_VIEW_MULTI_STALE) && r->view_base)
            r->base_hist = r->view_base->hist - 1;
    }
    return r;
}

static st_tensor *apply_view(st_tensor *t, st_op_id op, const st_attrs *attrs)
{
    if (!check_tensor("apply_view", t))
        return NULL;
    char buf[SHAPE_BUF];
    if (!attrs) {
        st_err(ST_ERR_RUNTIME, "apply_view(): no attrs for view op %d on tensor of shape %s",
               (int)op, shp(t, buf));
        return NULL;
    }
    if (attrs->ndims < 0 || attrs->ndims > ST_MAX_DIMS) {
        st_err(ST_ERR_RUNTIME, "apply_view(): attrs.ndims %d out of range for tensor of shape "
               "%s", attrs->ndims, shp(t, buf));
        return NULL;
    }
    switch (op) {
    case ST_OP_RESHAPE:
        return st_tensor_reshape(t, attrs->ndims, attrs->dims, false);
    case ST_OP_PERMUTE:
        if (attrs->ndims != t->ndim) {
            st_err(ST_ERR_RUNTIME,
                   "permute(): number of dimensions in the tensor input does not match the "
                   "length of the desired ordering of dimensions i.e. input.dim() = %d is not "
                   "equal to len(dims) = %d (tensor of shape %s)",
                   t->ndim, attrs->ndims, shp(t, buf));
            return NULL;
        }
        return st_tensor_permute(t, attrs->dims);
    case ST_OP_EXPAND:
        return st_tensor_expand(t, attrs->ndims, attrs->dims);
    case ST_OP_SLICE:
        return st_tensor_slice(t, attrs->i[0], attrs->i[1], attrs->i[2], attrs->i[3]);
    case ST_OP_SQUEEZE: {
        if (attrs->ndims == 0)
            return st_tensor_squeeze(t, ST_SQUEEZE_ALL);
        /* as the other view functions: a view whose base was written since
         * takes its new history first (a compiled function's squeeze(-1) of
         * an input view it wrote: the gradient saw the old values) */
        if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK)
            return NULL;
        bool mask[ST_MAX_DIMS] = {0};
        for (int k = 0; k < attrs->ndims; k++) {
            int64_t d = attrs->dims[k];
            if (!wrap_dim("squeeze", &d, t->ndim, t))
                return NULL;
            if (t->ndim == 0)
                continue;
            if (mask[d]) {
                st_err(ST_ERR_RUNTIME, "squeeze(): dim %" PRId64 " appears multiple times in "
                       "the list of dims (tensor of shape %s)", d, shp(t, buf));
                return NULL;
            }
            mask[d] = true;
        }
        return marked(t, recorded(t, squeeze_mask(t, mask), ST_OP_SQUEEZE, attrs));
    }
    case ST_OP_UNSQUEEZE:
        return st_tensor_unsqueeze(t, attrs->i[0]);
    default:
        st_err(ST_ERR_RUNTIME, "apply_view(): op %d is not a view op (tensor of shape %s)",
               (int)op, shp(t, buf));
        return NULL;
    }
}

/* ---------------- contiguous ---------------- */

st_tensor *st_tensor_contiguous(st_tensor *t)
{
    if (!check_tensor("contiguous", t))
        return NULL;
    if (st_tensor_is_contiguous(t)) {
        st_tensor_incref(t);
        return t;
    }
    st_operand operand;
    memset(&operand, 0, sizeof operand);
    operand.t = t;
    st_attrs attrs;
    memset(&attrs, 0, sizeof attrs);
    st_tensor *out[ST_MAX_OUT] = {0};
    int n = st_rt_eager(ST_OP_COPY, &operand, 1, &attrs, NULL, out);
    if (n < 1) {
        for (int k = 0; k < n; k++)
            st_tensor_decref(out[k]);
        if (n >= 0) {
            char buf[SHAPE_BUF];
            st_err(ST_ERR_RUNTIME, "contiguous(): the copy of tensor of shape %s gave no result",
                   shp(t, buf));
        }
        return NULL;
    }
    for (int k = 1; k < n && k < ST_MAX_OUT; k++)
        st_tensor_decref(out[k]);
    return out[0];
}
