/* runtime/layout.c - the memory order of an elementwise result. As
 * PyTorch's TensorIterator, a result follows the order of its operands'
 * strides (st_layout_perm): x.t() * 2 has x.t()'s strides, not row-major
 * ones. The kernels stay row-major: st_layout_run permutes the operands so
 * that the chosen order is the row-major one, runs the op on them and
 * permutes its result back, a view that the tape and the trace record as
 * any other (so compiled code gives eager's strides). */
#include "st_runtime.h"

#include <string.h>

/* st_layout_perm's op: -1 for a copy (clone, a *_like factory, a cast).
 * Only the single-operand case reads it: torch copies a dense tensor's
 * strides (empty_like) but gives a unary op of a contiguous one a
 * row-major result. */
static bool copy_like(int op)
{
    if (op < 0 || op == ST_OP_COPY || op == ST_OP_CAST)
        return true;
    st_op_kind k = st_op((st_op_id)op)->kind;
    return k == ST_OPK_CREATE || k == ST_OPK_RANDOM;
}

bool st_layout_op(st_op_id op)
{
    switch (st_op(op)->kind) {
    case ST_OPK_UNARY:
    case ST_OPK_BINARY:
    case ST_OPK_TERNARY:
        return true;
    case ST_OPK_CREATE:
    case ST_OPK_RANDOM:
        /* with a shape operand: the *_like factories (preserve_format) */
        return op != ST_OP_ARANGE;
    default:
        /* the composites torch runs as elementwise kernels (its softmax,
         * layer_norm and masked_fill give contiguous results) */
        return op == ST_OP_GELU || op == ST_OP_DROPOUT || op == ST_OP_CLAMP;
    }
}

/* Operand t's stride along dim d of the nd-dim result of shape `shape`:
 * 0 where t is broadcast (a missing leading dim or a size-1 dim). */
static int64_t bstride(const st_tensor *t, int nd, const int64_t *shape, int d)
{
    int k = d - (nd - t->ndim);
    if (k < 0 || (t->shape[k] == 1 && shape[d] != 1))
        return 0;
    return t->strides[k];
}

/* TensorIterator's should_swap: > 0 when dim a belongs inside dim b (the
 * first operand that tells the two apart decides; a broadcast dim tells
 * nothing; equal strides put the smaller dim inside), < 0 when it belongs
 * outside, 0 when no operand tells. */
static int inner_first(const st_operand *in, int nin, int nd, const int64_t *shape, int a, int b)
{
    for (int k = 0; k < nin; k++) {
        const st_tensor *t = in[k].t;
        if (!t || t->ndim == 0)
            continue;
        int64_t sa = bstride(t, nd, shape, a), sb = bstride(t, nd, shape, b);
        if (sa == 0 || sb == 0)
            continue;
        if (sa < sb)
            return -1;
        if (sa > sb)
            return 1;
        if (shape[a] > shape[b])
            return 1;
    }
    return 0;
}

/* t's strides are the row-major ones of its shape, size-1 dims included */
static bool strictly_row_major(const st_tensor *t)
{
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 0)
            return true;
        if (t->strides[d] != expected)
            return false;
        expected *= t->shape[d];
    }
    return true;
}

/* a 4-d t is channels-last (NHWC) in memory, size-1 dims' strides aside
 * (torch's is_contiguous(channels_last)) */
static bool channels_last(const st_tensor *t)
{
    static const int inner_to_outer[4] = {1, 3, 2, 0};
    if (t->ndim != 4)
        return false;
    int64_t expected = 1;
    for (int i = 0; i < 4; i++) {
        int d = inner_to_outer[i];
        if (t->shape[d] == 0)
            return true;
        if (t->shape[d] == 1)
            continue;
        if (t->strides[d] != expected)
            return false;
        expected *= t->shape[d];
    }
    return true;
}

static bool same_shape(const st_tensor *a, const st_tensor *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

bool st_layout_perm(int op, const st_operand *in, int nin, int *ndim, int64_t *perm)
{
    int nd = 0, ntensors = 0;
    bool strict = true, loose = true, same = true, cl = true;
    const st_tensor *first = NULL;
    for (int k = 0; k < nin; k++) {
        const st_tensor *t = in[k].t;
        if (!t) {
            same = false;   /* a Python scalar: torch's wrapped 0-d operand */
            continue;
        }
        ntensors++;
        if (t->ndim > nd)
            nd = t->ndim;
        if (strict && !strictly_row_major(t))
            strict = false;
        if (loose && !st_tensor_is_contiguous(t))
            loose = false;
        if (cl && !channels_last(t))
            cl = false;
        if (!first)
            first = t;
        else if (same && !same_shape(first, t))
            same = false;
    }
    /* every operand row-major: its order is the result's. TensorIterator's
     * fast path also gives operands of one shape that are all contiguous
     * (size-1 dims' strides aside) a row-major result; a copy of one
     * tensor (clone, a cast, the *_like factories: torch's empty_like keeps
     * a dense tensor's strides) and operands of different shapes take the
     * order below, where size-1 dims count too */
    bool fast = same && !(ntensors == 1 && copy_like(op));
    if (strict || nd < 2 || (loose && fast))
        return false;
    if (cl && fast) {   /* likewise all channels-last: an NHWC result */
        perm[0] = 0, perm[1] = 2, perm[2] = 3, perm[3] = 1;
        *ndim = 4;
        return true;
    }
    int64_t shape[ST_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        shape[d] = 1;
    for (int k = 0; k < nin; k++) {
        const st_tensor *t = in[k].t;
        if (!t)
            continue;
        for (int j = 0; j < t->ndim; j++) {
            int d = j + nd - t->ndim;
            if (t->shape[j] == 1)
                continue;
            if (shape[d] != 1 && shape[d] != t->shape[j])
                return false; /* the op reports the bad broadcast */
            shape[d] = t->shape[j];
        }
    }
    /* order[i]: the dim i-th from the innermost; insertion sort that
     * leaves dims no operand tells apart in their logical order */
    int order[ST_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        order[i] = nd - 1 - i;
    for (int i = 1; i < nd; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int c = inner_first(in, nin, nd, shape, order[d0], order[d1]);
            if (c > 0) {
                int tmp = order[d0];
                order[d0] = order[d1];
                order[d1] = tmp;
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    }
    /* a size-1 dim's place in the order sets its stride, the product of
     * the sizes of the dims inside it (as torch's): any move is a new order */
    bool identity = true;
    for (int i = 0; i < nd; i++) {
        perm[i] = order[nd - 1 - i];
        if (perm[i] != i)
            identity = false;
    }
    *ndim = nd;
    return !identity;
}

st_tensor *st_layout_back(st_tensor *r, int nd, const int64_t *perm)
{
    int64_t inv[ST_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        inv[perm[d]] = d;
    st_tensor *o = st_tensor_permute(r, inv);
    st_tensor_decref(r);
    /* r's buffer is no one else's now: the result is no view. A trace's
     * map holds the buffer too, but nothing the program sees does: the
     * trace marks the statement ST_VIEW_OWN, and a compiled run returns
     * no view either (_base None, as eager's and torch's) */
    if (o && o->view_base && st_rt_trace_active()) {
        st_tensor *b = o->view_base;
        o->view_base = NULL;
        o->is_view = false;
        st_tensor_decref(b);
    } else if (o) {
        st_view_unbase(o);
    }
    return o;
}

bool st_layout_into_perm(const st_operand *in, int nin, st_tensor *into, int *ndim,
                         int64_t *perm)
{
    for (int k = 0; k < nin; k++)
        if (in[k].t && in[k].t->ndim > into->ndim)
            return false; /* the op reports the bad broadcast */
    st_operand o = {.t = into};
    /* into's own order (a copy of its layout) */
    return st_layout_perm(-1, &o, 1, ndim, perm) && *ndim == into->ndim;
}

/* t (of at most nd dims) viewed with nd dims in perm's order: a new
 * reference, or NULL with the error set. */
static st_tensor *permuted(st_tensor *t, int nd, const int64_t *perm)
{
    st_tensor *u = t;
    if (t->ndim < nd) {
        int64_t shape[ST_MAX_DIMS];
        int off = nd - t->ndim;
        for (int d = 0; d < nd; d++)
            shape[d] = d < off ? 1 : t->shape[d - off];
        if (!(u = st_tensor_reshape(t, nd, shape, true)))
            return NULL;
    }
    st_tensor *p = st_tensor_permute(u, perm);
    if (u != t)
        st_tensor_decref(u);
    return p;
}

int st_layout_run(st_op_id op, const st_operand *in, int nin, const st_attrs *attrs,
                  int nd, const int64_t *perm, st_tensor *into, st_tensor **out)
{
    st_operand pin[ST_MAX_IN];
    st_tensor *held[ST_MAX_IN] = {NULL}, *pinto = NULL;
    int n = -1;
    memcpy(pin, in, sizeof *in * (size_t)nin);
    if (into && !(pinto = permuted(into, nd, perm)))
        return -1;
    for (int k = 0; k < nin; k++) {
        st_tensor *t = in[k].t;
        /* a 0-d tensor broadcasts as it is (viewed with dims it would
         * take a dimensioned tensor's part in type promotion) */
        if (!t || t->ndim == 0)
            continue;
        if (t == into) {    /* the written tensor as an operand: the same view */
            st_tensor_incref(pinto);
            held[k] = pinto;
        } else if (!(held[k] = permuted(t, nd, perm))) {
            goto done;
        }
        pin[k].t = held[k];
    }
    st_tensor *r[ST_MAX_OUT] = {NULL}, *g[ST_MAX_OUT] = {pinto};
    n = st_rt_eager_in_order(op, pin, nin, attrs, into ? g : NULL, r);
    if (n != 1) {
        for (int k = 0; k < n; k++)
            st_tensor_decref(r[k]);
        if (n > 1) {
            n = -1;
            st_err(ST_ERR_RUNTIME, "%s: layout: more than one result", st_op(op)->name);
        }
        goto done;
    }
    if (into) {
        st_tensor_decref(r[0]);
        st_tensor_incref(into);
        out[0] = into;
    } else if (!(out[0] = st_layout_back(r[0], nd, perm))) {
        n = -1;
    }
done:
    for (int k = 0; k < nin; k++)
        st_tensor_decref(held[k]);
    st_tensor_decref(pinto);
    return n;
}
