/* fusion/decompose.c - decomposition of composite ops (softmax, log_softmax,
 * layer_norm, gelu, cross_entropy, linear, dropout, clamp, masked_fill) and
 * of matmul with a 1-D operand into primitive statements. The result is a
 * new graph with the same inputs, constants and outputs; decompositions use
 * views with -1 / like-operands only, so the graph re-infers with new sizes.
 * Contract (runtime/eager.c relies on it): inputs keep their order, and the
 * original graph's constants are added first, in value order, before any
 * constant a decomposition introduces.
 * Owns: st_fuse_decompose. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "st_kernel.h"

#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Emission state: the new graph and the first failure (later emits are
 * no-ops once one failed, so decompositions read as straight-line code). */
typedef st_ir_builder dctx;

static int emit_n(dctx *c, st_op_id op, const int *in, int nin,
                  const st_attrs *a)
{
    return st_ir_emit(c, op, in, nin, a);
}

static int emit1(dctx *c, st_op_id op, int x)
{
    return st_ir_emit(c, op, &x, 1, NULL);
}

static int emit2(dctx *c, st_op_id op, int x, int y)
{
    int in[2] = {x, y};
    return st_ir_emit(c, op, in, 2, NULL);
}

static int emit3(dctx *c, st_op_id op, int x, int y, int z)
{
    int in[3] = {x, y, z};
    return st_ir_emit(c, op, in, 3, NULL);
}

static int fconst(dctx *c, double v) { return st_ir_emit_fconst(c, v); }
static int iconst(dctx *c, int64_t v) { return st_ir_emit_iconst(c, v); }

static const st_meta *meta_of(dctx *c, int v)
{
    return &c->g->values[v].meta;
}

static int cast_to(dctx *c, int x, st_dtype dt)
{
    if (c->failed || x < 0)
        return -1;
    if (meta_of(c, x)->dtype == dt)
        return x;
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    return emit_n(c, ST_OP_CAST, &x, 1, &a);
}

/* float16/bfloat16 -> float32: composites compute in float32 and round
 * once at the end (PyTorch's opmath), else each step rounds to 8 or 11
 * bits of mantissa */
static int up16(dctx *c, int x)
{
    if (c->failed || x < 0)
        return -1;
    st_dtype dt = meta_of(c, x)->dtype;
    return dt == ST_FLOAT16 || dt == ST_BFLOAT16 ? cast_to(c, x, ST_FLOAT32) : x;
}

/* Reduction over dims[0..nd) (already wrapped), with keepdim. */
static int reduce(dctx *c, st_op_id op, int x, const int64_t *dims, int nd,
                  bool keepdim)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < nd; i++)
        a.dims[i] = dims[i];
    a.ndims = nd;
    a.flags = keepdim ? ST_ATTR_KEEPDIM : 0;
    return emit_n(c, op, &x, 1, &a);
}

static int reduce_all(dctx *c, st_op_id op, int x)
{
    return reduce(c, op, x, NULL, 0, false);
}

static int unsqueeze(dctx *c, int x, int64_t dim)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = dim;
    return emit_n(c, ST_OP_UNSQUEEZE, &x, 1, &a);
}

static int squeeze(dctx *c, int x, const int64_t *dims, int nd)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < nd; i++)
        a.dims[i] = dims[i];
    a.ndims = nd;
    return emit_n(c, ST_OP_SQUEEZE, &x, 1, &a);
}

/* Wraps a dim of an op's attrs against rank; sets the failure on error. */
static int64_t wrap(dctx *c, const char *op, int64_t dim, int ndim)
{
    if (c->failed)
        return 0;
    if (st_wrap_dim(op, &dim, ndim) != ST_OK) {
        c->failed = true;
        return 0;
    }
    return dim;
}

/* ---- the decompositions ---- */

static int dec_softmax(dctx *c, int x, int64_t dim, bool log)
{
    const char *name = log ? "log_softmax" : "softmax";
    int nd = meta_of(c, x)->ndim;
    int64_t d = wrap(c, name, dim, nd);
    int m = reduce(c, ST_OP_AMAX, x, &d, 1, true);
    int s = emit2(c, ST_OP_SUB, x, m);
    int e = emit1(c, ST_OP_EXP, s);
    int z = reduce(c, ST_OP_SUM, e, &d, 1, true);
    if (log)
        return emit2(c, ST_OP_SUB, s, emit1(c, ST_OP_LOG, z));
    return emit2(c, ST_OP_DIV, e, z);
}

static int dec_layer_norm(dctx *c, const st_stmt *s, const int *in)
{
    int x = in[0];
    const st_meta *xm = meta_of(c, x);
    st_dtype xdt = xm->dtype;
    int n = xm->ndim, k = s->attrs.ndims;
    if (k < 0 || k > n) {
        st_err(ST_ERR_VALUE, "layer_norm: %d normalized dims for a %d-d input",
               k, n);
        c->failed = true;
        return -1;
    }
    int64_t dims[ST_MAX_DIMS];
    for (int i = 0; i < k; i++)
        dims[i] = n - k + i;
    int next = 1, w = -1, b = -1;
    if (s->attrs.flags & ST_ATTR_HAS_WEIGHT)
        w = in[next++];
    if (s->attrs.flags & ST_ATTR_HAS_BIAS)
        b = in[next++];
    bool low = xdt == ST_FLOAT16 || xdt == ST_BFLOAT16;
    int xc = low ? cast_to(c, x, ST_FLOAT32) : x;
    int mu = reduce(c, ST_OP_MEAN, xc, dims, k, true);
    int d = emit2(c, ST_OP_SUB, xc, mu);
    int var = reduce(c, ST_OP_MEAN, emit2(c, ST_OP_MUL, d, d), dims, k, true);
    int r = emit1(c, ST_OP_RSQRT,
                  emit2(c, ST_OP_ADD, var, fconst(c, s->attrs.f[0])));
    int y = emit2(c, ST_OP_MUL, d, r);
    if (w >= 0)
        y = emit2(c, ST_OP_MUL, y, w);
    if (b >= 0)
        y = emit2(c, ST_OP_ADD, y, b);
    return cast_to(c, y, xdt);
}

static int dec_gelu(dctx *c, const st_stmt *s, const int *in)
{
    int x = in[0];
    int half = emit2(c, ST_OP_MUL, x, fconst(c, 0.5));
    if (s->nin > 1) /* the caller's erf(x / sqrt(2)) + 1 */
        return emit2(c, ST_OP_MUL, half, in[1]);
    int t;
    if (s->attrs.flags & ST_ATTR_TANH) {
        int x3 = emit2(c, ST_OP_MUL, emit2(c, ST_OP_MUL, x, x), x);
        int inner = emit2(c, ST_OP_ADD, x,
                          emit2(c, ST_OP_MUL, x3, fconst(c, 0.044715)));
        t = emit1(c, ST_OP_TANH, emit2(c, ST_OP_MUL, inner,
                                       fconst(c, sqrt(2.0 / M_PI))));
    } else {
        t = emit1(c, ST_OP_ERF, emit2(c, ST_OP_MUL, x, fconst(c, M_SQRT1_2)));
    }
    return emit2(c, ST_OP_MUL, half, emit2(c, ST_OP_ADD, t, fconst(c, 1.0)));
}

/* logsumexp over the statement's dims: m + log(sum(exp(x - m))), m the
 * max with infinities replaced by 0 (a row of -inf gives -inf, one +inf
 * gives +inf, as torch.logsumexp); the dims squeezed unless keepdim. */
static int dec_logsumexp(dctx *c, const st_stmt *s, int x)
{
    int64_t dims[ST_MAX_DIMS];
    int nd = s->attrs.ndims;
    const st_meta *xm = meta_of(c, x);
    bool empty = false;
    for (int i = 0; i < nd; i++) {
        dims[i] = s->attrs.dims[i];
        int64_t d = dims[i] < 0 ? dims[i] + xm->ndim : dims[i];
        empty |= d >= 0 && d < xm->ndim && xm->shape[d] == 0;
    }
    if (empty) { /* no max to take: log(0) = -inf, as torch */
        int r = emit1(c, ST_OP_LOG, reduce(c, ST_OP_SUM, emit1(c, ST_OP_EXP, x), dims, nd, true));
        return s->attrs.flags & ST_ATTR_KEEPDIM ? r : squeeze(c, r, dims, nd);
    }
    int m = reduce(c, ST_OP_AMAX, x, dims, nd, true);
    int inf = emit2(c, ST_OP_EQ, emit1(c, ST_OP_ABS, m), fconst(c, INFINITY));
    int m0 = emit3(c, ST_OP_WHERE, inf, fconst(c, 0.0), m);
    int z = reduce(c, ST_OP_SUM, emit1(c, ST_OP_EXP, emit2(c, ST_OP_SUB, x, m0)),
                   dims, nd, true);
    int r = emit2(c, ST_OP_ADD, emit1(c, ST_OP_LOG, z), m0);
    if (s->attrs.flags & ST_ATTR_KEEPDIM)
        return r;
    return squeeze(c, r, dims, nd);
}

static int dec_cross_entropy(dctx *c, const st_stmt *s, const int *in)
{
    int logits = in[0], target = in[1];
    const st_meta *lm = meta_of(c, logits);
    if (lm->ndim != 2 || meta_of(c, target)->ndim != 1) {
        st_err(ST_ERR_VALUE, "cross_entropy: expects logits [N, C] and target "
               "[N], got %d-d and %d-d", lm->ndim, meta_of(c, target)->ndim);
        c->failed = true;
        return -1;
    }
    st_dtype ldt = lm->dtype;
    /* log_softmax at the target only: the row's max and log-sum-exp (one
     * row kernel that stores [N, 1] values, not the [N, C] log-softmax),
     * then (x[t] - max) - log(sum), the very operations and order of
     * log_softmax's value at t; or x[t] - lse with the caller's lse */
    int64_t d1 = 1;
    int m = -1, lz = -1;
    if (s->nin < 3) {
        m = reduce(c, ST_OP_AMAX, logits, &d1, 1, true);
        int z = reduce(c, ST_OP_SUM, emit1(c, ST_OP_EXP, emit2(c, ST_OP_SUB, logits, m)),
                       &d1, 1, true);
        lz = emit1(c, ST_OP_LOG, z);
    }
    int valid = emit2(c, ST_OP_NE, target, iconst(c, s->attrs.i[0]));
    int safe = emit3(c, ST_OP_WHERE, valid, target, iconst(c, 0));
    st_attrs ga;
    memset(&ga, 0, sizeof ga);
    ga.i[0] = 1;
    int gin[2] = {logits, unsqueeze(c, safe, 1)};
    int64_t one = 1;
    int xt = squeeze(c, emit_n(c, ST_OP_GATHER, gin, 2, &ga), &one, 1);
    /* on [N] values, so that they join the loss's reduction kernel */
    int picked;
    if (s->nin < 3) {
        int ms = squeeze(c, m, &one, 1);
        int ls = squeeze(c, lz, &one, 1);
        picked = emit2(c, ST_OP_SUB, emit2(c, ST_OP_SUB, xt, ms), ls);
    } else {
        picked = emit2(c, ST_OP_SUB, xt, squeeze(c, in[2], &one, 1));
    }
    /* (operands are sequenced explicitly: the order of statements and
     * constants must not depend on the compiler's argument order) */
    int negp = emit1(c, ST_OP_NEG, picked);
    int zero = fconst(c, 0.0);
    int li = emit3(c, ST_OP_WHERE, valid, negp, zero);
    switch (s->attrs.i[1]) {
    case 0:
        return li;
    case 2:
        return reduce_all(c, ST_OP_SUM, li);
    case 1: {
        int total = reduce_all(c, ST_OP_SUM, li);
        int count = reduce_all(c, ST_OP_SUM, cast_to(c, valid, ldt));
        return emit2(c, ST_OP_DIV, total, count);
    }
    default:
        st_err(ST_ERR_VALUE, "cross_entropy: bad reduction %lld",
               (long long)s->attrs.i[1]);
        c->failed = true;
        return -1;
    }
}

/* matmul with numpy semantics: a 1-D operand is unsqueezed to 2-D and the
 * added dim squeezed from the result, so MATMUL sees rank >= 2 only. */
/* matmul(a, b) with attrs flags `flags` (ST_ATTR_ACC_OUT) */
static int dec_matmul_f(dctx *c, int a, int b, int flags)
{
    if (c->failed)
        return -1;
    st_attrs ma;
    memset(&ma, 0, sizeof ma);
    ma.flags = flags;
    bool a1 = meta_of(c, a)->ndim == 1, b1 = meta_of(c, b)->ndim == 1;
    int ab[2] = {a, b};
    if (!a1 && !b1)
        return emit_n(c, ST_OP_MATMUL, ab, 2, flags ? &ma : NULL);
    if (meta_of(c, a)->ndim == 0 || meta_of(c, b)->ndim == 0) {
        st_err(ST_ERR_RUNTIME, "matmul: both arguments need to be at least "
               "1D, got %dD and %dD", meta_of(c, a)->ndim,
               meta_of(c, b)->ndim);
        c->failed = true;
        return -1;
    }
    int ab1[2];
    ab1[0] = a1 ? unsqueeze(c, a, 0) : a;
    ab1[1] = b1 ? unsqueeze(c, b, 1) : b;
    int y = emit_n(c, ST_OP_MATMUL, ab1, 2, flags ? &ma : NULL);
    if (c->failed)
        return -1;
    int r = meta_of(c, y)->ndim;
    int64_t dims[2];
    int nd = 0;
    if (a1)
        dims[nd++] = r - 2;
    if (b1)
        dims[nd++] = r - 1;
    return squeeze(c, y, dims, nd);
}

static int dec_matmul(dctx *c, int a, int b)
{
    return dec_matmul_f(c, a, b, 0);
}

static int dec_linear(dctx *c, const st_stmt *s, const int *in)
{
    st_attrs pa;
    memset(&pa, 0, sizeof pa);
    pa.dims[0] = 1;
    pa.dims[1] = 0;
    pa.ndims = 2;
    int wt = emit_n(c, ST_OP_PERMUTE, &in[1], 1, &pa);
    bool bias = (s->attrs.flags & ST_ATTR_HAS_BIAS) && s->nin > 2;
    st_dtype dt = c->failed ? ST_FLOAT32 : meta_of(c, in[0])->dtype;
    /* half operands with a bias: the bias added to the float32 product and
     * the sum rounded once, as torch's addmm (not the product rounded first) */
    if (bias && (dt == ST_FLOAT16 || dt == ST_BFLOAT16)) {
        int y = dec_matmul_f(c, in[0], wt, ST_ATTR_ACC_OUT);
        /* float32 + half promotes to float32 (the bias read exactly, in
         * the product's epilogue) */
        return cast_to(c, emit2(c, ST_OP_ADD, y, in[2]), dt);
    }
    int y = dec_matmul(c, in[0], wt);
    if (bias)
        y = emit2(c, ST_OP_ADD, y, in[2]);
    return y;
}

static int dec_dropout(dctx *c, const st_stmt *s, int x)
{
    double p = s->attrs.f[0];
    st_dtype xdt = meta_of(c, x)->dtype;
    if (p == 0.0)
        return emit1(c, ST_OP_COPY, x);
    st_attrs a;
    memset(&a, 0, sizeof a);
    if (p == 1.0) {
        a.dtype = xdt;
        if (!st_dtype_is_float(xdt))
            a.flags = ST_ATTR_INT_VALUE;
        return emit_n(c, ST_OP_FULL, &x, 1, &a);
    }
    a.dtype = ST_FLOAT32;
    a.f[0] = 0.0;
    a.f[1] = 1.0;
    /* a checkpoint's recomputation: the forward's numbers again */
    a.flags = s->attrs.flags & ST_ATTR_RNG_REPLAY;
    a.i[2] = a.flags ? s->attrs.i[2] : 0;
    int r = emit_n(c, ST_OP_RAND, &x, 1, &a);
    int keep = emit2(c, ST_OP_GE, r, fconst(c, p));
    int scaled = emit2(c, ST_OP_MUL, x, fconst(c, 1.0 / (1.0 - p)));
    int y = emit3(c, ST_OP_WHERE, keep, scaled, fconst(c, 0.0));
    return cast_to(c, y, xdt);
}

static int dec_clamp(dctx *c, const st_stmt *s, int x)
{
    const st_attrs *a = &s->attrs;
    bool iv = a->flags & ST_ATTR_INT_VALUE;
    int y = x;
    if (a->flags & ST_ATTR_HAS_MIN)
        y = emit2(c, ST_OP_MAXIMUM, y,
                  iv ? iconst(c, a->i[0]) : fconst(c, a->f[0]));
    if (a->flags & ST_ATTR_HAS_MAX)
        y = emit2(c, ST_OP_MINIMUM, y,
                  iv ? iconst(c, a->i[1]) : fconst(c, a->f[1]));
    if (y == x) /* no bound: still a fresh value */
        y = emit1(c, ST_OP_COPY, x);
    return y;
}

static int dec_masked_fill(dctx *c, const st_stmt *s, const int *in)
{
    const st_attrs *a = &s->attrs;
    int v = (a->flags & ST_ATTR_INT_VALUE) ? iconst(c, a->i[0])
                                           : fconst(c, a->f[0]);
    int y = emit3(c, ST_OP_WHERE, in[1], v, in[0]);
    return cast_to(c, y, meta_of(c, in[0])->dtype);
}

/* Decomposes one statement whose operands are already mapped (in[]);
 * returns its (single) result, or -1 when the statement is copied through
 * (*copied set) or on failure (c->failed). */
static int decompose_stmt(dctx *c, const st_stmt *s, const int *in,
                          bool *copied)
{
    *copied = false;
    switch (s->op) {
    case ST_OP_SOFTMAX: case ST_OP_LOG_SOFTMAX:
        return cast_to(c, dec_softmax(c, up16(c, in[0]), s->attrs.i[0],
                                      s->op == ST_OP_LOG_SOFTMAX),
                       meta_of(c, in[0])->dtype);
    case ST_OP_LAYER_NORM:
        return dec_layer_norm(c, s, in);
    case ST_OP_GELU: {
        int up[2] = {up16(c, in[0]), s->nin > 1 ? up16(c, in[1]) : -1};
        return cast_to(c, dec_gelu(c, s, up), meta_of(c, in[0])->dtype);
    }
    case ST_OP_CROSS_ENTROPY:
        return dec_cross_entropy(c, s, in);
    case ST_OP_LOGSUMEXP:
        return cast_to(c, dec_logsumexp(c, s, up16(c, in[0])), meta_of(c, in[0])->dtype);
    case ST_OP_LINEAR:
        return dec_linear(c, s, in);
    case ST_OP_MATMUL:
        if (s->nin == 2 && (c->g->values[in[0]].meta.ndim < 2 ||
                            c->g->values[in[1]].meta.ndim < 2))
            return dec_matmul(c, in[0], in[1]);
        break;
    case ST_OP_DROPOUT:
        return dec_dropout(c, s, in[0]);
    case ST_OP_CLAMP:
        return dec_clamp(c, s, in[0]);
    case ST_OP_MASKED_FILL:
        return dec_masked_fill(c, s, in);
    default:
        break;
    }
    *copied = true;
    return -1;
}

st_graph *st_fuse_decompose(const st_graph *g)
{
    if (!g) {
        st_err(ST_ERR_VALUE, "decompose: no graph");
        return NULL;
    }
    st_graph *ng = st_ir_graph_new();
    if (!ng)
        return NULL;
    int *map = malloc(sizeof(int) * (size_t)(g->nvalues > 0 ? g->nvalues : 1));
    if (!map) {
        st_ir_graph_free(ng);
        st_err(ST_ERR_MEMORY, "decompose: out of memory");
        return NULL;
    }
    for (int v = 0; v < g->nvalues; v++)
        map[v] = -1;
    dctx c = {ng, false};

    for (int i = 0; i < g->ninputs && !c.failed; i++) {
        int v = g->inputs[i];
        const st_value *val = &g->values[v];
        map[v] = st_ir_add_input(ng, &val->meta, val->kind == ST_VAL_PARAM);
        if (map[v] < 0)
            c.failed = true;
    }
    for (int v = 0; v < g->nvalues && !c.failed; v++) {
        const st_value *val = &g->values[v];
        if (val->kind != ST_VAL_CONST)
            continue;
        map[v] = st_ir_add_const(ng, val->meta.dtype, val->fconst,
                                 val->iconst);
        if (map[v] < 0)
            c.failed = true;
    }
    for (int si = 0; si < g->nstmts && !c.failed; si++) {
        const st_stmt *s = &g->stmts[si];
        int in[ST_MAX_IN];
        for (int k = 0; k < s->nin; k++) {
            int ov = s->in[k];
            if (ov < 0 || ov >= g->nvalues || map[ov] < 0) {
                st_err(ST_ERR_RUNTIME, "decompose: statement %d reads value "
                       "%d before it is defined", si, ov);
                c.failed = true;
                break;
            }
            in[k] = map[ov];
        }
        if (c.failed)
            break;
        bool copied;
        int r = decompose_stmt(&c, s, in, &copied);
        if (c.failed)
            break;
        if (!copied) {
            map[s->out[0]] = r;
            continue;
        }
        int outs[ST_MAX_OUT];
        if (st_ir_add_stmt(ng, s->op, in, s->nin, &s->attrs, outs) < 0) {
            c.failed = true;
            break;
        }
        for (int k = 0; k < s->nout; k++)
            map[s->out[k]] = outs[k];
    }
    for (int i = 0; i < g->noutputs && !c.failed; i++) {
        int v = g->outputs[i];
        if (v < 0 || v >= g->nvalues || map[v] < 0) {
            st_err(ST_ERR_RUNTIME, "decompose: output %d is undefined", v);
            c.failed = true;
            break;
        }
        st_ir_mark_output(ng, map[v]);
    }
    free(map);
    if (c.failed) {
        if (st_err_kind() == ST_OK)
            st_err(ST_ERR_RUNTIME, "decompose: failed");
        st_ir_graph_free(ng);
        return NULL;
    }
    return ng;
}
