/* runtime/viewhist.c - views and autograd history, after PyTorch's rules
 * for views and in-place ops. Owns: the root base a view holds
 * (st_view_mark, called by the view functions of view.c), the new grad_fn
 * of a view whose base's history changed (st_ad_view_refresh: a gather of
 * the view's elements out of the base's current value, where torch has
 * AsStridedBackward), and in-place ops written through a view while its
 * base or an operand needs gradients (st_view_inplace: torch's
 * CopySlices; the op runs in place on the view of a contiguous base, and
 * otherwise as base = where(in the view, op(view), base) copied into the
 * base). Both address a view's elements by their positions in the base's
 * row-major order, computed on the host from the two layouts. */
#include "st_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_view_mark(st_tensor *src, st_tensor *r)
{
    if (!src || !r || r == src || r->view_base || r->storage != src->storage)
        return;
    /* a leaf that requires grad (requires_grad_() on a view) starts a
     * history of its own: its views are views of it; a view taken in
     * no_grad mode is no such leaf (its views are its base's) */
    bool nograd_src = src->view_base && src->view_nograd;
    bool own = src->requires_grad && !src->grad_fn && !nograd_src;
    st_tensor *root = src->view_base && !own ? src->view_base : src;
    st_tensor_incref(root);
    r->view_base = root;
    r->base_hist = root->hist;
    r->view_grad = st_ad_grad_enabled();
    /* torch's CreationMeta: kept by the views of a no_grad view; a view
     * taken with grad mode off of a base that requires grad requires grad
     * itself (as a leaf without a gradient accumulator, set_edge) */
    if (nograd_src)
        r->view_nograd = src->view_nograd;
    else if (!r->view_grad && root->requires_grad)
        r->view_nograd = st_ad_inference_mode() ? ST_VIEW_INFERENCE : ST_VIEW_NOGRAD;
    if (!r->view_grad && r->view_nograd && root->requires_grad && !r->grad_fn &&
        st_dtype_is_float(r->dtype))
        r->requires_grad = true;
    if (src->view_multi && !own) { /* a view of a multi-view output is one too */
        r->view_multi = src->view_multi;
        r->view_multi_nr = -1;
    }
}

/* ---------------- outputs of multi-view functions ---------------- */

/* The attrs of the traced view statement that made t (NULL: none). */
static st_attrs *traced_view_attrs(const st_tensor *t)
{
    st_graph *g = st_rt_trace_active() ? st_rt_trace_graph() : NULL;
    int v = g ? st_rt_trace_find(t) : -1;
    int p = v >= 0 && v < g->nvalues ? g->values[v].producer : -1;
    if (p < 0 || st_op(g->stmts[p].op)->kind != ST_OPK_VIEW || g->stmts[p].nout != 1)
        return NULL;
    return &g->stmts[p].attrs;
}

void st_view_multi_mark(st_tensor *r, int kind, int nr)
{
    if (!r)
        return;
    r->view_multi = r->view_base ? (uint8_t)kind : 0;
    r->view_multi_nr = nr;
    /* traced: the view statement that made r carries the mark, for the
     * compiled function to make its output again as one */
    st_attrs *a = traced_view_attrs(r);
    if (a && r->view_multi)
        a->flags = ST_VIEW_MULTI_FLAGS(kind, nr) | (a->flags & ST_VIEW_MULTI_STALE);
    else if (a && (a->flags & ST_VIEW_MULTI_ATTR))
        a->flags = 0;
}

st_status st_view_multi_error(const st_tensor *v, bool indirect)
{
    static const char *const fn[] = {"", "Split", "SplitWithSizes", "Unbind"};
    const char *what = indirect ? "its base or another view of its base has been "
                                  "modified inplace" : "is being modified inplace";
    char head[200];
    if (v->view_multi_nr >= 0 && v->grad_fn && v->view_multi < 4) {
        snprintf(head, sizeof head, "Output %d of %s is a view and %s.",
                 (int)v->view_multi_nr, fn[v->view_multi], what);
    } else if (v->grad_fn) {
        /* a view of one: its own node's name without "Backward<n>", as torch's */
        char nm[64];
        snprintf(nm, sizeof nm, "%s", st_ad_node_name(v->grad_fn));
        char *b = strstr(nm, "Backward");
        if (b)
            *b = 0;
        snprintf(head, sizeof head, "Output %d of %s is a view and %s.", v->output_nr,
                 strcmp(nm, "Reshape") ? nm : "View", what);
    } else {
        snprintf(head, sizeof head, "A view was created in no_grad mode and %s.", what);
    }
    return st_err(ST_ERR_RUNTIME, "%s This view is the output of a function that returns "
                  "multiple views. Such functions do not allow the output views to be "
                  "modified inplace. You should replace the inplace operation by an "
                  "out-of-place one.", head);
}

st_status st_view_nograd_error(const st_tensor *v)
{
    bool inf = v->view_nograd == ST_VIEW_INFERENCE;
    const char *mode = inf ? "inference mode" : "no_grad mode";
    const char *now = inf ? "in normal mode" : "with grad mode enabled";
    char head[200];
    if (v->view_grad && v->grad_fn) {
        /* a view (taken in grad mode) of one: its node's name without
         * "Backward<n>", as torch's */
        char nm[64];
        snprintf(nm, sizeof nm, "%s", st_ad_node_name(v->grad_fn));
        char *bk = strstr(nm, "Backward");
        if (bk)
            *bk = 0;
        snprintf(head, sizeof head, "Output %d of %s is a view of a view which was created "
                 "in %s and is being modified inplace %s.", v->output_nr,
                 strcmp(nm, "Reshape") ? nm : "View", mode, now);
    } else {
        snprintf(head, sizeof head, "A view was created in %s and is being modified "
                 "inplace %s.", mode, now);
    }
    return st_err(ST_ERR_RUNTIME, "%s Given that this use case is ambiguous and "
                  "error-prone, it is forbidden. You can clarify your code by moving both "
                  "the view and the inplace either both inside the %s block (if you don't "
                  "want the inplace to be tracked) or both outside (if you want the inplace "
                  "to be tracked).", head, inf ? "inference_mode" : "no_grad");
}

void st_view_unbase(st_tensor *t)
{
    st_tensor *b = t ? t->view_base : NULL;
    if (!b || __atomic_load_n(&b->refcount, __ATOMIC_ACQUIRE) != 1)
        return;
    t->view_base = NULL;
    t->is_view = false;
    st_tensor_decref(b);
}

/* ---------------- positions ---------------- */

/* The storage offset of each element of t, in row-major order. */
static void offsets(const st_tensor *t, int64_t *out)
{
    int64_t n = st_tensor_numel(t), idx[ST_MAX_DIMS] = {0}, off = t->offset;
    for (int64_t i = 0; i < n; i++) {
        out[i] = off;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) {
                off += t->strides[d];
                break;
            }
            off -= (t->shape[d] - 1) * t->strides[d];
            idx[d] = 0;
        }
    }
}

/* The position of each element of view v (row-major) in base b's row-major
 * order: malloc'd int64[numel(v)], or NULL with the error set. */
static int64_t *positions(const st_tensor *v, const st_tensor *b)
{
    int64_t m = st_tensor_numel(v), n = st_tensor_numel(b);
    int64_t *pos = malloc(sizeof *pos * (size_t)(m ? m : 1));
    if (!pos) {
        st_err(ST_ERR_MEMORY, "view: out of host memory");
        return NULL;
    }
    offsets(v, pos);
    if (st_tensor_is_contiguous(b)) {
        for (int64_t i = 0; i < m; i++) {
            pos[i] -= b->offset;
            if (pos[i] < 0 || pos[i] >= n)
                goto outside;
        }
        return pos;
    }
    /* another layout: invert the base's map from positions to offsets */
    int64_t *bo = malloc(sizeof *bo * (size_t)(n ? n : 1));
    if (!bo) {
        free(pos);
        st_err(ST_ERR_MEMORY, "view: out of host memory");
        return NULL;
    }
    offsets(b, bo);
    int64_t lo = n ? bo[0] : 0, hi = lo;
    for (int64_t i = 0; i < n; i++) {
        if (bo[i] < lo) lo = bo[i];
        if (bo[i] > hi) hi = bo[i];
    }
    int64_t *inv = malloc(sizeof *inv * (size_t)(hi - lo + 1));
    if (!inv) {
        free(bo);
        free(pos);
        st_err(ST_ERR_MEMORY, "view: out of host memory");
        return NULL;
    }
    for (int64_t i = 0; i <= hi - lo; i++) inv[i] = -1;
    for (int64_t i = 0; i < n; i++) {
        if (inv[bo[i] - lo] >= 0) {
            free(inv);
            free(bo);
            free(pos);
            st_err(ST_ERR_RUNTIME, "unsupported operation: the base of the view has "
                   "elements that refer to a single memory location; clone() it first");
            return NULL;
        }
        inv[bo[i] - lo] = i;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t o = pos[i];
        pos[i] = o >= lo && o <= hi ? inv[o - lo] : -1;
        if (pos[i] < 0) {
            free(inv);
            free(bo);
            goto outside;
        }
    }
    free(inv);
    free(bo);
    return pos;
outside:
    free(pos);
    st_err(ST_ERR_RUNTIME, "view: an element of the view lies outside its base");
    return NULL;
}

/* ---------------- eager helpers ---------------- */

/* A 1-D tensor of n elements of dt on dev, from host memory. */
static st_tensor *from_host(st_device *dev, st_dtype dt, const void *data, int64_t n)
{
    st_tensor *t = st_tensor_empty(dev, dt, 1, &n);
    if (!t)
        return NULL;
    size_t nb = (size_t)n * st_dtype_size(dt);
    if (nb && dev->type == ST_DEV_CPU) {
        memcpy(st_tensor_data(t), data, nb);
    } else if (nb && dev->copy(dev, st_tensor_data(t), data, nb) != ST_OK) {
        st_tensor_decref(t);
        return NULL;
    }
    return t;
}

/* op(in) as a new tensor (recorded when grad mode is on). */
static st_tensor *run1(st_op_id op, const st_operand *in, int nin, const st_attrs *a,
                       st_tensor *given)
{
    st_tensor *g[ST_MAX_OUT] = {given}, *out[ST_MAX_OUT] = {0};
    st_attrs zero;
    memset(&zero, 0, sizeof zero);
    int n = st_rt_eager(op, in, nin, a ? a : &zero, given ? g : NULL, out);
    for (int k = 1; k < n; k++)
        st_tensor_decref(out[k]);
    if (n == 0)
        st_err(ST_ERR_RUNTIME, "%s: gave no result", st_op(op)->name);
    return n > 0 ? out[0] : NULL;
}

static st_tensor *flat(st_tensor *t)
{
    int64_t n = st_tensor_numel(t);
    return st_tensor_reshape(t, 1, &n, false);
}

static st_attrs dim0(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

/* ---------------- stale views ---------------- */

st_status st_ad_view_refresh(st_tensor *t)
{
    if (!st_ad_view_stale(t))
        return ST_OK;
    st_tensor *b = t->view_base;
    if (t->view_multi && t->view_grad && b->requires_grad) {
        /* torch's second rule for multi-view outputs: no new history; under
         * no_grad nothing reads it (it stays stale for a later use) */
        if (!st_ad_grad_enabled())
            return ST_OK;
        return st_view_multi_error(t, true);
    }
    t->base_hist = b->hist;
    if (!t->view_grad || !b->requires_grad || !st_dtype_is_float(t->dtype) ||
        (t->requires_grad && !t->grad_fn))
        return ST_OK;
    /* t = reshape(index_select(flat(b), positions)): the values are t's
     * own already; only the recorded history is kept */
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(true);
    st_rt_trace_suspend();
    st_status s = ST_OK;
    st_tensor *p = NULL, *bf = NULL, *g = NULL;
    int64_t *pos = positions(t, b);
    if (pos)
        p = from_host(st_tensor_device(b), ST_INT64, pos, st_tensor_numel(t));
    if (p)
        bf = flat(b);
    if (bf) {
        st_operand in[2] = {{.t = bf}, {.t = p}};
        st_attrs a = dim0();
        g = run1(ST_OP_INDEX_SELECT, in, 2, &a, NULL);
    }
    if (g) {
        st_attrs a = dim0();
        a.ndims = t->ndim;
        for (int d = 0; d < t->ndim; d++)
            a.dims[d] = t->shape[d];
        st_operand in = {.t = g};
        s = st_ad_record(ST_OP_RESHAPE, &in, 1, &a, &t, 1, true);
    } else {
        s = st_err_kind() ? st_err_kind() : st_err(ST_ERR_RUNTIME, "view: refresh failed");
    }
    free(pos);
    st_tensor_decref(p);
    st_tensor_decref(bf);
    st_tensor_decref(g);
    st_rt_trace_resume();
    st_ad_set_grad_enabled(was);
    if (s != ST_OK)
        t->base_hist = b->hist - 1; /* still stale: the next use tries again */
    return s;
}

/* ---------------- in-place ops through views ---------------- */

/* CopySlices: the base's node after an in-place write of r into its view
 * (base contiguous): the gradient of the base before the write is the
 * incoming one with the view's region zeroed, r's is that region. ctx: the
 * view's geometry in the base's (contiguous) layout. */
typedef struct {
    int ndim;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS], off;
} cs_ctx;

/* Under create_graph (autograd records the backward's ops) CopySlices'
 * gradients must have histories: the base's is the incoming gradient times
 * a constant mask (zeros on the region), the source's is a region read.
 * Reading a region and writing one into zeros are each other's adjoints;
 * each is recorded as a custom node whose backward is the other, so the
 * gradients differentiate again to any order. rg_ctx: the region's
 * geometry in a contiguous tensor of the whole shape. */
typedef struct {
    cs_ctx r;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} rg_ctx;

static st_tensor *region_read(st_tensor *t, const rg_ctx *c);
static st_tensor *region_write(st_tensor *g, const rg_ctx *c);

static st_status rg_node(const char *name, st_ad_custom_fn fn, const rg_ctx *c,
                         st_tensor *in, st_tensor *out)
{
    rg_ctx *own = malloc(sizeof *own);
    if (!own)
        return st_err(ST_ERR_MEMORY, "view: out of host memory");
    *own = *c;
    st_tensor *ins[1] = {in}, *outs[1] = {out};
    st_ad_node *n = st_ad_custom_node(name, fn, own, free, 1, ins, 1, outs);
    if (!n) {
        free(own);
        return st_err_kind() ? st_err_kind() : st_err(ST_ERR_MEMORY, "view: out of host memory");
    }
    st_ad_node_decref(n);
    return ST_OK;
}

static st_status rr_backward(void *ctx, int nout, st_tensor *const *gout, int nin,
                             st_tensor **gin)
{
    gin[0] = NULL;
    if (nout < 1 || !gout[0])
        return ST_OK;
    return (gin[0] = region_write(gout[0], ctx)) ? ST_OK : st_err_kind();
}

static st_status rw_backward(void *ctx, int nout, st_tensor *const *gout, int nin,
                             st_tensor **gin)
{
    gin[0] = NULL;
    if (nout < 1 || !gout[0])
        return ST_OK;
    st_operand src = {.t = gout[0]};
    st_tensor *g = run1(ST_OP_COPY, &src, 1, NULL, NULL); /* contiguous, recorded */
    if (!g)
        return st_err_kind();
    gin[0] = region_read(g, ctx);
    st_tensor_decref(g);
    return gin[0] ? ST_OK : st_err_kind();
}

/* t: contiguous, of the whole shape. A copy of its region. */
static st_tensor *region_read(st_tensor *t, const rg_ctx *c)
{
    st_tensor *v = st_tensor_view_of(t, c->r.ndim, c->r.shape, c->r.strides, t->offset + c->r.off);
    if (!v)
        return NULL;
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_operand src = {.t = v};
    st_tensor *r = run1(ST_OP_COPY, &src, 1, NULL, NULL);
    st_ad_set_grad_enabled(was);
    st_tensor_decref(v);
    if (r && was && t->requires_grad &&
        rg_node("RegionReadBackward", rr_backward, c, t, r) != ST_OK) {
        st_tensor_decref(r);
        return NULL;
    }
    return r;
}

/* Zeros of the whole shape (on g's device) with g in the region. */
static st_tensor *region_write(st_tensor *g, const rg_ctx *c)
{
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_tensor *z = st_rt_zeros_on(g, c->ndim, c->shape, g->dtype);
    st_tensor *v = z ? st_tensor_view_of(z, c->r.ndim, c->r.shape, c->r.strides,
                                         z->offset + c->r.off) : NULL;
    st_operand src = {.t = g};
    st_tensor *done = v ? run1(ST_OP_COPY, &src, 1, NULL, v) : NULL;
    st_ad_set_grad_enabled(was);
    st_tensor_decref(v);
    if (!done) {
        st_tensor_decref(z);
        return NULL;
    }
    st_tensor_decref(done);
    if (was && g->requires_grad &&
        rg_node("RegionWriteBackward", rw_backward, c, g, z) != ST_OK) {
        st_tensor_decref(z);
        return NULL;
    }
    return z;
}

/* cs_backward under create_graph (see rg_ctx). */
static st_status cs_backward_create(const cs_ctx *c, st_tensor *gout, int nin, st_tensor **gin)
{
    rg_ctx rc;
    rc.r = *c;
    rc.ndim = gout->ndim;
    memcpy(rc.shape, gout->shape, sizeof(int64_t) * (size_t)gout->ndim);
    st_operand src = {.t = gout};
    st_tensor *g = run1(ST_OP_COPY, &src, 1, NULL, NULL); /* contiguous, recorded */
    if (!g)
        return st_err_kind();
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_attrs a = dim0();
    a.f[0] = 1.0;
    a.dtype = g->dtype;
    st_operand gs = {.t = g};
    st_tensor *mask = run1(ST_OP_FULL, &gs, 1, &a, NULL), *z = NULL;
    st_tensor *region = mask ? st_tensor_view_of(mask, c->ndim, c->shape, c->strides,
                                                 mask->offset + c->off) : NULL;
    if (region) {
        st_operand rs = {.t = region};
        a.f[0] = 0.0;
        z = run1(ST_OP_FULL, &rs, 1, &a, region); /* zeros on the region */
    }
    st_ad_set_grad_enabled(was);
    st_tensor_decref(region);
    st_tensor *g0 = NULL, *g1 = NULL;
    if (z) {
        st_operand ms[2] = {{.t = g}, {.t = mask}};
        g0 = run1(ST_OP_MUL, ms, 2, NULL, NULL);
        g1 = g0 && nin > 1 ? region_read(g, &rc) : NULL;
    }
    st_tensor_decref(z);
    st_tensor_decref(mask);
    st_tensor_decref(g);
    if (!g0 || (nin > 1 && !g1)) {
        st_tensor_decref(g0);
        return st_err_kind() ? st_err_kind() : st_err(ST_ERR_RUNTIME, "CopySlices: backward failed");
    }
    gin[0] = g0;
    if (nin > 1)
        gin[1] = g1;
    return ST_OK;
}

static st_status cs_backward(void *ctx, int nout, st_tensor *const *gout, int nin,
                             st_tensor **gin)
{
    const cs_ctx *c = ctx;
    for (int k = 0; k < nin; k++)
        gin[k] = NULL;
    if (nout < 1 || !gout[0])
        return ST_OK;
    if (st_ad_creating())
        return cs_backward_create(c, gout[0], nin, gin);
    st_operand src = {.t = gout[0]};
    st_tensor *g = run1(ST_OP_COPY, &src, 1, NULL, NULL); /* a contiguous copy */
    if (!g)
        return st_err_kind();
    st_tensor *region = st_tensor_view_of(g, c->ndim, c->shape, c->strides, g->offset + c->off);
    st_tensor *gr = NULL, *z = NULL;
    if (region) {
        st_operand rs = {.t = region};
        gr = run1(ST_OP_COPY, &rs, 1, NULL, NULL);
        st_attrs a = dim0();
        a.dtype = region->dtype;
        z = gr ? run1(ST_OP_FULL, &rs, 1, &a, region) : NULL; /* zeros into the region */
    }
    st_tensor_decref(region);
    st_tensor_decref(z);
    if (!gr || !z) {
        st_tensor_decref(gr);
        st_tensor_decref(g);
        return st_err_kind() ? st_err_kind() : st_err(ST_ERR_RUNTIME, "CopySlices: backward failed");
    }
    gin[0] = g;
    if (nin > 1)
        gin[1] = gr;
    else
        st_tensor_decref(gr);
    return ST_OK;
}

/* r is v's elements themselves (the op ran in place on an alias of v). */
static bool same_elements(const st_tensor *r, const st_tensor *v)
{
    if (r->storage != v->storage || r->offset != v->offset || r->ndim != v->ndim ||
        r->dtype != v->dtype)
        return false;
    for (int d = 0; d < v->ndim; d++)
        if (r->shape[d] != v->shape[d] || (r->shape[d] > 1 && r->strides[d] != v->strides[d]))
            return false;
    return true;
}

static st_status copy_slices(st_tensor *b, st_tensor *v, st_tensor *r)
{
    if (!same_elements(r, v)) {
        bool was = st_ad_grad_enabled();
        st_ad_set_grad_enabled(false);
        st_operand src = {.t = r};
        st_tensor *done = run1(ST_OP_COPY, &src, 1, NULL, v); /* the write itself */
        st_ad_set_grad_enabled(was);
        if (!done)
            return st_err_kind();
        st_tensor_decref(done);
    }
    cs_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return st_err(ST_ERR_MEMORY, "view: out of host memory");
    c->ndim = v->ndim;
    memcpy(c->shape, v->shape, sizeof(int64_t) * (size_t)v->ndim);
    memcpy(c->strides, v->strides, sizeof(int64_t) * (size_t)v->ndim);
    c->off = v->offset - b->offset;
    st_tensor *ins[2] = {b, r}, *outs[1] = {b};
    st_ad_node *n = st_ad_custom_node("CopySlices", cs_backward, c, free, 2, ins, 1, outs);
    if (!n)
        return st_err_kind() ? st_err_kind() : st_err(ST_ERR_MEMORY, "view: out of host memory");
    st_ad_node_decref(n);
    return ST_OK;
}

static bool castable(st_dtype from, st_dtype to)
{
    if (st_dtype_is_float(from) && !st_dtype_is_float(to))
        return false;
    return !(from != ST_BOOL && to == ST_BOOL);
}

int st_view_inplace(st_op_id op, const st_operand *in, int nin,
                    const st_attrs *attrs, st_tensor *v, st_tensor **out)
{
    const char *name = st_op(op)->name;
    st_tensor *b = v->view_base;
    char b1[160], b2[160];
    if (!st_dtype_is_float(v->dtype)) {
        /* an integer / bool view has no gradient (torch's views of them
         * are no differentiable views): a plain write, and the base
         * keeps its history (no CopySlices that would make an integer
         * base require grad) */
        bool was = st_ad_grad_enabled();
        st_ad_set_grad_enabled(false);
        st_tensor *d = run1(op, in, nin, attrs, v);
        st_ad_set_grad_enabled(was);
        if (!d)
            return -1;
        out[0] = d;
        return 1;
    }
    if (v->view_multi && v->view_grad)
        return st_view_multi_error(v, false), -1;
    if (v->view_nograd || !v->view_grad)
        return st_view_nograd_error(v), -1;
    if (b->requires_grad && !b->grad_fn)
        return st_err(ST_ERR_RUNTIME, "%s: a view of a leaf Variable that requires grad "
                      "is being used in an in-place operation.", name), -1;
    /* overlapping elements (an expanded view) were checked by eager_on */
    int ret = -1;
    st_tensor *r = NULL, *rc = NULL, *p = NULL, *mk = NULL, *rf = NULL, *bf = NULL;
    st_tensor *gat = NULL, *nf = NULL, *nb = NULL, *done = NULL, *w = NULL;
    int64_t *pos = NULL, *inv = NULL;
    bool *mask = NULL;
    if (st_tensor_is_contiguous(b) && v->dtype == b->dtype) {
        /* the op writes straight into the view's elements, through an
         * alias w of them that is no view of b (the eager path records
         * the op's node on w as for any in-place op; operands its VJP
         * saves were copied by the caller), and w is the result
         * CopySlices takes: O(op), where an out-of-place result copied
         * in was O(view) (a scatter into a flat view of a large base) */
        w = st_tensor_view_of(v, v->ndim, v->shape, v->strides, v->offset);
        r = w ? run1(op, in, nin, attrs, w) : NULL;
    } else {
        r = run1(op, in, nin, attrs, NULL); /* out of place, recorded */
    }
    if (!r)
        goto out;
    if (r->ndim != v->ndim ||
        memcmp(r->shape, v->shape, sizeof(int64_t) * (size_t)v->ndim)) {
        st_err(ST_ERR_RUNTIME, "%s: output with shape %s doesn't match the broadcast shape %s",
               name, st_shape_str(v->shape, v->ndim, b1, sizeof b1),
               st_shape_str(r->shape, r->ndim, b2, sizeof b2));
        goto out;
    }
    if (r->dtype != v->dtype) {
        if (op != ST_OP_COPY && !castable(r->dtype, v->dtype)) {
            st_err(ST_ERR_RUNTIME, "%s: result type %s can't be cast to the desired output "
                   "type %s", name, st_dtype_name(r->dtype), st_dtype_name(v->dtype));
            goto out;
        }
        st_tensor *e = st_tensor_empty(st_tensor_device(v), v->dtype, v->ndim, v->shape);
        st_operand src = {.t = r};
        rc = e ? run1(ST_OP_COPY, &src, 1, NULL, e) : NULL;
        st_tensor_decref(e);
        if (!rc)
            goto out;
    }
    int64_t m = st_tensor_numel(v), n = st_tensor_numel(b);
    if (st_tensor_is_contiguous(b)) {
        /* the result (cast to the view's dtype) written into the view,
         * and a CopySlices node as the base's history (O(view) work) */
        if (copy_slices(b, v, rc ? rc : r) != ST_OK)
            goto out;
    } else if (m > 0) {
        /* base = where(mask, gather(result, inv), base): mask marks the
         * view's positions, inv[p] the view element at position p */
        pos = positions(v, b);
        mask = calloc((size_t)(n ? n : 1), sizeof *mask);
        inv = calloc((size_t)(n ? n : 1), sizeof *inv);
        if (!pos || !mask || !inv) {
            if (pos)
                st_err(ST_ERR_MEMORY, "view: out of host memory");
            goto out;
        }
        for (int64_t i = 0; i < m; i++) {
            mask[pos[i]] = true;
            inv[pos[i]] = i;
        }
        st_device *dev = st_tensor_device(b);
        if (!(p = from_host(dev, ST_INT64, inv, n)) || !(mk = from_host(dev, ST_BOOL, mask, n)) ||
            !(rf = flat(rc ? rc : r)) || !(bf = flat(b)))
            goto out;
        st_attrs a = dim0();
        st_operand gi[2] = {{.t = rf}, {.t = p}};
        if (!(gat = run1(ST_OP_INDEX_SELECT, gi, 2, &a, NULL)))
            goto out;
        st_operand wi[3] = {{.t = mk}, {.t = gat}, {.t = bf}};
        if (!(nf = run1(ST_OP_WHERE, wi, 3, NULL, NULL)))
            goto out;
        if (!(nb = st_tensor_reshape(nf, b->ndim, b->shape, false)))
            goto out;
        st_operand ci = {.t = nb};
        if (!(done = run1(ST_OP_COPY, &ci, 1, NULL, b)))
            goto out;
    }
    st_tensor_incref(v);
    out[0] = v;
    ret = 1;
out:
    st_tensor_decref(r);
    st_tensor_decref(w);
    st_tensor_decref(rc);
    st_tensor_decref(p);
    st_tensor_decref(mk);
    st_tensor_decref(rf);
    st_tensor_decref(bf);
    st_tensor_decref(gat);
    st_tensor_decref(nf);
    st_tensor_decref(nb);
    st_tensor_decref(done);
    free(pos);
    free(inv);
    free(mask);
    return ret;
}
