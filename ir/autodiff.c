/* ir/autodiff.c - VJP rules of the op registry, written as StatementIR
 * statements appended to a graph, and st_ir_sum_to (undoing broadcasting).
 * Owns: st_ir_autodiff_init (fills every op's VJP slot and vjp_saves mask),
 * st_ir_sum_to.
 *
 * Contract (st_ir.h): a rule receives the forward statement (its operand and
 * result ids name values of g carrying the forward metas), the gradient of
 * its result and fills one gradient per operand, of that operand's exact
 * shape and dtype, or -1 (no gradient: wrapped scalars, constants, int/bool
 * operands, index operands). At run time a rule reads only the values its
 * op's vjp_saves names; the others serve as metas only (e.g. as the
 * like-operand of FULL, whose data is never read).
 *
 * Notes:
 * - Views and reductions are undone with size-carrying attrs (EXPAND to the
 *   input's shape, RESHAPE back, ARANGE of a slice's length): a VJP graph is
 *   built for the sizes it is called with.
 * - Broadcast operands get st_ir_sum_to; results computed in a promoted
 *   dtype are cast back to the operand's dtype.
 * - float16/bfloat16 rules compute in float32 and cast back once (fin):
 *   layer_norm, softmax, log_softmax, gelu, cross_entropy, and the
 *   elementwise unary and binary rules (PyTorch's opmath).
 * - Not differentiable (slot NULL): comparisons, logical ops, floor_divide,
 *   argmax/argmin, creation and random ops, and dropout: the runtime records
 *   eager dropout as where(rand(like x) >= p, x * 1/(1-p), 0), so a dropout
 *   node never needs a VJP (its random mask cannot be recomputed from x or
 *   y when x has exact zeros).
 * - remainder is differentiable as in PyTorch: d/da = g, d/db =
 *   -g * floor(a / b).
 * - scatter_add: self gets g; src gets gather(g, dim, index), embedded into
 *   zeros of src's shape when index is smaller than src.
 * - scatter: self gets g with the written positions zeroed (a scatter of
 *   zeros), src as scatter_add's (a repeated position: every point of it).
 * - slice_scatter: base gets g with the slice zeroed, src the slice of g.
 * - slice: g written into zeros at the slice (a slice_scatter: elementwise,
 *   it fuses; a scatter_add at an arange index ran serially). */
#include <math.h>
#include <string.h>

#include "st_ir.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Emission state: the graph and the first failure (later emits are no-ops
 * once one failed, so rules read as straight-line code). Value ids stay
 * valid across emits; pointers into g do not (arrays grow). */
typedef st_ir_builder ad;

static st_meta M(ad *c, int v)
{
    st_meta m;
    if (c->failed || v < 0 || v >= c->g->nvalues) {
        memset(&m, 0, sizeof m);
        return m;
    }
    return c->g->values[v].meta;
}

static st_attrs A0(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

static int E(ad *c, st_op_id op, const int *in, int nin, const st_attrs *a)
{
    return st_ir_emit(c, op, in, nin, a);
}

static int E1(ad *c, st_op_id op, int x)
{
    return st_ir_emit(c, op, &x, 1, NULL);
}

static int E2(ad *c, st_op_id op, int x, int y)
{
    int in[2] = {x, y};
    return st_ir_emit(c, op, in, 2, NULL);
}

static int E3(ad *c, st_op_id op, int x, int y, int z)
{
    int in[3] = {x, y, z};
    return st_ir_emit(c, op, in, 3, NULL);
}

static int F(ad *c, double v) { return st_ir_emit_fconst(c, v); }
static int I(ad *c, int64_t v) { return st_ir_emit_iconst(c, v); }

static int cast(ad *c, int x, st_dtype dt)
{
    if (c->failed || x < 0)
        return -1;
    if (M(c, x).dtype == dt)
        return x;
    st_attrs a = A0();
    a.dtype = dt;
    return E(c, ST_OP_CAST, &x, 1, &a);
}

/* float16/bfloat16 -> float32 (computations of composite rules) */
static int up(ad *c, int x)
{
    st_dtype dt = M(c, x).dtype;
    return (dt == ST_FLOAT16 || dt == ST_BFLOAT16) ? cast(c, x, ST_FLOAT32)
                                                   : x;
}

static int mul(ad *c, int x, int y) { return E2(c, ST_OP_MUL, x, y); }
static int add(ad *c, int x, int y) { return E2(c, ST_OP_ADD, x, y); }
static int sub(ad *c, int x, int y) { return E2(c, ST_OP_SUB, x, y); }
static int dv(ad *c, int x, int y) { return E2(c, ST_OP_DIV, x, y); }
static int neg(ad *c, int x) { return E1(c, ST_OP_NEG, x); }

static int red(ad *c, st_op_id op, int x, const int64_t *dims, int nd,
               bool keep)
{
    st_attrs a = A0();
    for (int i = 0; i < nd; i++)
        a.dims[i] = dims[i];
    a.ndims = nd;
    a.flags = keep ? ST_ATTR_KEEPDIM : 0;
    return E(c, op, &x, 1, &a);
}

static int red1(ad *c, st_op_id op, int x, int64_t dim, bool keep)
{
    return red(c, op, x, &dim, 1, keep);
}

static int unsq(ad *c, int x, int64_t dim)
{
    st_attrs a = A0();
    a.i[0] = dim;
    return E(c, ST_OP_UNSQUEEZE, &x, 1, &a);
}

static int sq(ad *c, int x, const int64_t *dims, int nd)
{
    if (nd <= 0)
        return x;
    st_attrs a = A0();
    for (int i = 0; i < nd; i++)
        a.dims[i] = dims[i];
    a.ndims = nd;
    return E(c, ST_OP_SQUEEZE, &x, 1, &a);
}

static int view_to(ad *c, st_op_id op, int x, const int64_t *shape, int nd)
{
    st_attrs a = A0();
    for (int i = 0; i < nd; i++)
        a.dims[i] = shape[i];
    a.ndims = nd;
    return E(c, op, &x, 1, &a);
}

static bool same_shape(const st_meta *a, const st_meta *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

/* x expanded to shape (x itself when already of that shape). */
static int expand_to(ad *c, int x, const st_meta *m)
{
    if (c->failed)
        return -1;
    st_meta xm = M(c, x);
    if (same_shape(&xm, m))
        return x;
    return view_to(c, ST_OP_EXPAND, x, m->shape, m->ndim);
}

static int reshape_to(ad *c, int x, const st_meta *m)
{
    if (c->failed)
        return -1;
    st_meta xm = M(c, x);
    if (same_shape(&xm, m))
        return x;
    return view_to(c, ST_OP_RESHAPE, x, m->shape, m->ndim);
}

/* swaps the last two dims */
static int transpose(ad *c, int x)
{
    int n = M(c, x).ndim;
    if (c->failed)
        return -1;
    st_attrs a = A0();
    for (int d = 0; d < n; d++)
        a.dims[d] = d;
    a.dims[n - 2] = n - 1;
    a.dims[n - 1] = n - 2;
    a.ndims = n;
    return E(c, ST_OP_PERMUTE, &x, 1, &a);
}

/* FULL of value v shaped like `like` (its data is not read), dtype dt */
static int full_like(ad *c, int like, double v, st_dtype dt)
{
    st_attrs a = A0();
    a.dtype = dt;
    a.f[0] = v;
    if (!st_dtype_is_float(dt)) {
        a.flags = ST_ATTR_INT_VALUE;
        a.i[0] = (int64_t)v;
    }
    return E(c, ST_OP_FULL, &like, 1, &a);
}

static int arange(ad *c, int64_t n, double start, double step)
{
    st_attrs a = A0();
    a.dims[0] = n;
    a.ndims = 1;
    a.dtype = ST_INT64;
    a.f[0] = start;
    a.f[1] = step;
    return E(c, ST_OP_ARANGE, NULL, 0, &a);
}

/* A 1-D x of length shape[dim] viewed as [1.., n, ..1] of rank r. */
static int along(ad *c, int x, int dim, int r)
{
    for (int d = 0; d < dim; d++)
        x = unsq(c, x, 0);
    for (int d = dim + 1; d < r; d++)
        x = unsq(c, x, -1);
    return x;
}

/* ---- sum_to ---- */

static int sum_to(ad *c, int v, const st_meta *t)
{
    if (c->failed || v < 0)
        return -1;
    st_meta vm = M(c, v);
    if (t->ndim > vm.ndim || t->ndim < 0) {
        st_err(ST_ERR_RUNTIME, "sum_to: cannot sum a rank %d value to rank "
               "%d", vm.ndim, t->ndim);
        c->failed = true;
        return -1;
    }
    int lead = vm.ndim - t->ndim;
    int64_t dims[ST_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < vm.ndim; d++) {
        if (d < lead) {
            dims[nd++] = d;
            continue;
        }
        int64_t ts = t->shape[d - lead], vs = vm.shape[d];
        if (ts == vs)
            continue;
        if (ts != 1) {
            char a[96], b[96];
            st_err(ST_ERR_RUNTIME, "sum_to: shape %s is not broadcastable "
                   "to %s", st_shape_str(t->shape, t->ndim, a, sizeof a),
                   st_shape_str(vm.shape, vm.ndim, b, sizeof b));
            c->failed = true;
            return -1;
        }
        dims[nd++] = d;
    }
    if (nd == 0)
        return v;
    int r = red(c, ST_OP_SUM, v, dims, nd, true);
    if (lead > 0) {
        int64_t ld[ST_MAX_DIMS];
        for (int d = 0; d < lead; d++)
            ld[d] = d;
        r = sq(c, r, ld, lead);
    }
    return r;
}

void st_ir_zeros_attrs(const st_meta *m, st_attrs *a)
{
    memset(a, 0, sizeof *a);
    for (int d = 0; d < m->ndim; d++)
        a->dims[d] = m->shape[d];
    a->ndims = m->ndim;
    a->dtype = m->dtype;
    if (!st_dtype_is_float(m->dtype))
        a->flags = ST_ATTR_INT_VALUE;
}

int st_ir_sum_to(st_graph *g, int v, const st_meta *target)
{
    if (!g || !target || v < 0 || v >= g->nvalues) {
        st_err(ST_ERR_VALUE, "sum_to: bad arguments");
        return -1;
    }
    ad c = {g, false};
    int r = sum_to(&c, v, target);
    return c.failed ? -1 : r;
}

/* ---- operand gradients ---- */

/* Whether operand value v can receive a gradient. */
static bool diffable(ad *c, int v)
{
    if (c->failed || v < 0 || v >= c->g->nvalues)
        return false;
    const st_value *val = &c->g->values[v];
    return val->kind != ST_VAL_CONST && val->meta.kind != ST_META_SCALAR &&
           st_dtype_is_float(val->meta.dtype);
}

/* Finishes gradient gx of operand v: summed to v's shape, cast to v's
 * dtype; -1 when v takes no gradient. */
static int fin(ad *c, int gx, int v)
{
    if (!diffable(c, v) || gx < 0)
        return -1;
    st_meta vm = M(c, v);
    return cast(c, sum_to(c, gx, &vm), vm.dtype);
}

/* ---- rules. Each gets a copy of the statement (g's arrays may move), the
 * result's gradient og (never -1 here) and fills in[]. ---- */

typedef struct {
    st_stmt s;
    int og;        /* gradient of result 0, in the result's dtype */
    int y;         /* result 0 */
    int *gin;      /* in_grads */
} rule;

static int wrapd(ad *c, int64_t dim, int ndim)
{
    if (c->failed)
        return 0;
    if (st_wrap_dim("autodiff", &dim, ndim) != ST_OK) {
        c->failed = true;
        return 0;
    }
    return ndim == 0 ? 0 : (int)dim;
}

static void r_unary(ad *c, rule *r)
{
    int x0 = r->s.in[0], y0 = r->y, g = r->og;
    if (!diffable(c, x0))
        return;
    st_dtype odt = M(c, y0).dtype;
    /* 16-bit rules compute in float32 and round once (fin), as PyTorch's
     * kernels do in their opmath type: tanh's 1 - y^2 near saturation
     * would otherwise lose most of its bits. x and y are cast only where
     * a rule reads them (a value the op does not save must stay unread). */
    int gx = -1, x, y;
    if (r->s.op != ST_OP_CAST)
        g = up(c, g);
    switch (r->s.op) {
    case ST_OP_NEG: gx = neg(c, g); break;
    case ST_OP_EXP: gx = mul(c, g, up(c, y0)); break;
    case ST_OP_LOG: gx = dv(c, g, up(c, x0)); break;
    case ST_OP_SQRT: gx = dv(c, mul(c, g, F(c, 0.5)), up(c, y0)); break;
    case ST_OP_RSQRT: /* -0.5 y^3 */
        y = up(c, y0);
        gx = mul(c, mul(c, g, F(c, -0.5)), mul(c, mul(c, y, y), y));
        break;
    case ST_OP_TANH:
        y = up(c, y0);
        gx = mul(c, g, sub(c, F(c, 1.0), mul(c, y, y)));
        break;
    case ST_OP_SIGMOID:
        y = up(c, y0);
        gx = mul(c, g, mul(c, y, sub(c, F(c, 1.0), y)));
        break;
    case ST_OP_RELU:
        gx = E3(c, ST_OP_WHERE, E2(c, ST_OP_GT, y0, F(c, 0.0)), g, F(c, 0.0));
        break;
    case ST_OP_ERF: { /* 2/sqrt(pi) exp(-x^2) */
        x = up(c, x0);
        int e = E1(c, ST_OP_EXP, neg(c, mul(c, x, x)));
        gx = mul(c, g, mul(c, e, F(c, 2.0 / sqrt(M_PI))));
        break;
    }
    case ST_OP_ABS: gx = mul(c, g, E1(c, ST_OP_SIGN, x0)); break;
    case ST_OP_SIN: gx = mul(c, g, E1(c, ST_OP_COS, up(c, x0))); break;
    case ST_OP_COS: gx = neg(c, mul(c, g, E1(c, ST_OP_SIN, up(c, x0)))); break;
    case ST_OP_RECIPROCAL:
        y = up(c, y0);
        gx = neg(c, mul(c, g, mul(c, y, y)));
        break;
    case ST_OP_FLOOR: case ST_OP_CEIL: case ST_OP_ROUND: case ST_OP_SIGN:
        gx = full_like(c, x0, 0.0, M(c, x0).dtype);
        break;
    case ST_OP_CAST:
        if (!st_dtype_is_float(odt))
            return; /* to int/bool: no gradient flows */
        gx = g;
        break;
    default:
        return;
    }
    r->gin[0] = fin(c, gx, x0);
}

static void r_binary(ad *c, rule *r)
{
    int a0 = r->s.in[0], b0 = r->s.in[1], g = up(c, r->og);
    bool da = diffable(c, a0), db = diffable(c, b0);
    if (!da && !db)
        return;
    int ga = -1, gb = -1;
    /* in float32 for 16-bit operands, as r_unary; the operands are cast
     * only where a rule reads them */
    bool ra, rb; /* does the rule read a, b? */
    switch (r->s.op) {
    case ST_OP_MUL: ra = db; rb = da; break;
    case ST_OP_DIV: ra = db; rb = true; break;
    case ST_OP_REMAINDER: ra = rb = db; break;
    case ST_OP_POW: ra = true; rb = da; break;
    case ST_OP_ADD: case ST_OP_SUB: ra = rb = false; break;
    default: ra = rb = true; break;
    }
    int a = ra ? up(c, a0) : a0, b = rb ? up(c, b0) : b0;
    switch (r->s.op) {
    case ST_OP_ADD:
        ga = g;
        gb = g;
        break;
    case ST_OP_SUB:
        ga = g;
        gb = db ? neg(c, g) : -1;
        break;
    case ST_OP_MUL:
        ga = da ? mul(c, g, b) : -1;
        gb = db ? mul(c, g, a) : -1;
        break;
    case ST_OP_DIV:
        ga = da ? dv(c, g, b) : -1;
        if (db) /* -g a / b^2 */
            gb = neg(c, dv(c, mul(c, g, a), mul(c, b, b)));
        break;
    case ST_OP_POW: {
        if (da) { /* where(b == 0, 0, g b a^(b-1)) */
            /* b - 1 as a statement even for a scalar b: a scalar's value
             * is bound per call, never baked into the cached program */
            int bb = b;
            if (M(c, b).kind == ST_META_SCALAR && st_dtype_is_float(M(c, a).dtype)) {
                /* two wrapped scalars alone compute in float32: b - 1 in
                 * a's precision instead (x.pow(1/3) on float64) */
                st_attrs ca = A0();
                ca.dtype = M(c, a).dtype;
                bb = E(c, ST_OP_CAST, &b, 1, &ca);
            }
            int bm1 = sub(c, bb, F(c, 1.0));
            int t = mul(c, mul(c, g, b), E2(c, ST_OP_POW, a, bm1));
            ga = E3(c, ST_OP_WHERE, E2(c, ST_OP_EQ, b, F(c, 0.0)),
                    F(c, 0.0), t);
        }
        if (db) { /* g where(a == 0 & b >= 0, 0, y log(a)), y = a^b, as
                   * torch's: from the result, not b, so that writing into
                   * the exponent afterwards (2 ** x; x.add_(1)) leaves the
                   * gradient's values whole. At a == 0, b >= 0 is y <= 1
                   * (y is 0 or 1; inf or NaN otherwise). g multiplies
                   * outside the where, so a NaN g stays NaN there too. */
            int y = up(c, r->y);
            int t = mul(c, y, E1(c, ST_OP_LOG, a));
            int z = E2(c, ST_OP_LOGICAL_AND, E2(c, ST_OP_EQ, a, F(c, 0.0)),
                       E2(c, ST_OP_LE, y, F(c, 1.0)));
            gb = mul(c, g, E3(c, ST_OP_WHERE, z, F(c, 0.0), t));
        }
        break;
    }
    case ST_OP_MAXIMUM:
    case ST_OP_MINIMUM: {
        /* ties split the gradient half-half, as PyTorch */
        st_op_id win = r->s.op == ST_OP_MAXIMUM ? ST_OP_GT : ST_OP_LT;
        int eq = E2(c, ST_OP_EQ, a, b);
        int half = mul(c, g, F(c, 0.5));
        if (da)
            ga = E3(c, ST_OP_WHERE, eq, half,
                    E3(c, ST_OP_WHERE, E2(c, win, a, b), g, F(c, 0.0)));
        if (db)
            gb = E3(c, ST_OP_WHERE, eq, half,
                    E3(c, ST_OP_WHERE, E2(c, win, b, a), g, F(c, 0.0)));
        break;
    }
    case ST_OP_REMAINDER:
        ga = g;
        if (db) {
            st_dtype dt = M(c, g).dtype;
            int q = E2(c, ST_OP_FLOOR_DIVIDE, cast(c, a, dt), cast(c, b, dt));
            gb = neg(c, mul(c, g, q));
        }
        break;
    default:
        return;
    }
    r->gin[0] = da ? fin(c, ga, a0) : -1;
    r->gin[1] = db ? fin(c, gb, b0) : -1;
}

static void r_where(ad *c, rule *r)
{
    int cond = r->s.in[0], a = r->s.in[1], b = r->s.in[2], g = r->og;
    /* a constant condition (a copy into a view traces as where(False,
     * old, new)): the branch never picked gets no gradient rather than a
     * tensor of zeros, which its history (a slice's: a full-size scatter
     * and add) would carry back for nothing */
    const st_value *cv = c->failed || cond < 0 ? NULL : &c->g->values[cond];
    bool is_const = cv && cv->kind == ST_VAL_CONST && cv->meta.ndim == 0;
    bool pick = is_const && (cv->fconst != 0.0 || cv->iconst != 0);
    if (diffable(c, a) && (!is_const || pick))
        r->gin[1] = fin(c, is_const ? g : E3(c, ST_OP_WHERE, cond, g, F(c, 0.0)), a);
    if (diffable(c, b) && (!is_const || !pick))
        r->gin[2] = fin(c, is_const ? g : E3(c, ST_OP_WHERE, cond, F(c, 0.0), g), b);
}

/* Reduced dims of a reduction over rank n, as a mask; returns the count. */
static int reduced_dims(ad *c, const st_stmt *s, int n, bool *mask)
{
    for (int d = 0; d < ST_MAX_DIMS; d++)
        mask[d] = false;
    if (s->attrs.ndims == 0) {
        for (int d = 0; d < n; d++)
            mask[d] = true;
        return n;
    }
    int cnt = 0;
    for (int i = 0; i < s->attrs.ndims && i < ST_MAX_DIMS; i++) {
        int d = wrapd(c, s->attrs.dims[i], n);
        if (n > 0 && !mask[d]) {
            mask[d] = true;
            cnt++;
        }
    }
    return cnt;
}

/* The reduced dims, ascending, into dims; their count. */
static int reduced_dim_list(ad *c, const st_stmt *s, int n, int64_t *dims)
{
    bool mask[ST_MAX_DIMS];
    reduced_dims(c, s, n, mask);
    int nd = 0;
    for (int d = 0; d < n; d++)
        if (mask[d])
            dims[nd++] = d;
    return nd;
}

/* v (a reduction's result shape) with the reduced dims kept as size 1. */
static int keep_dims(ad *c, const st_stmt *s, int v, int n)
{
    if (s->attrs.flags & ST_ATTR_KEEPDIM)
        return v;
    bool mask[ST_MAX_DIMS];
    reduced_dims(c, s, n, mask);
    for (int d = 0; d < n; d++)
        if (mask[d])
            v = unsq(c, v, d);
    return v;
}

static void r_reduce(ad *c, rule *r)
{
    int x = r->s.in[0], g = r->og, y = r->y;
    if (!diffable(c, x))
        return;
    st_meta xm = M(c, x);
    int n = xm.ndim;
    int gk = keep_dims(c, &r->s, g, n);
    int gx = -1;
    switch (r->s.op) {
    case ST_OP_SUM:
        gx = expand_to(c, gk, &xm);
        break;
    case ST_OP_MEAN: {
        bool mask[ST_MAX_DIMS];
        reduced_dims(c, &r->s, n, mask);
        double cnt = 1;
        for (int d = 0; d < n; d++)
            if (mask[d])
                cnt *= (double)xm.shape[d];
        gx = expand_to(c, dv(c, gk, F(c, cnt)), &xm);
        break;
    }
    case ST_OP_AMAX:
    case ST_OP_AMIN: {
        /* even split among the positions equal to the result, as torch's
         * (g / count) * mask: a NaN or inf g reaches the other positions as
         * NaN (inf * 0), and a NaN input (count 0) makes every position NaN */
        int yk = keep_dims(c, &r->s, y, n);
        int eq = E2(c, ST_OP_EQ, x, yk);
        int64_t dims[ST_MAX_DIMS] = {0};
        int nd = reduced_dim_list(c, &r->s, n, dims);
        int cnt = red(c, ST_OP_SUM, cast(c, eq, M(c, g).dtype), dims, nd,
                      true);
        if (nd == 0) /* 0-d input: the single element */
            cnt = cast(c, eq, M(c, g).dtype);
        gx = mul(c, dv(c, gk, cnt), cast(c, eq, M(c, g).dtype));
        break;
    }
    case ST_OP_PROD: {
        /* g * prod / x where no element is zero; where one is, the product
         * of the others (the non-zero ones: exactly one zero) or 0 (more),
         * as torch's prod_backward, not 0/0 */
        int yk = keep_dims(c, &r->s, y, n);
        int z = E2(c, ST_OP_EQ, x, F(c, 0.0));
        int xs = E3(c, ST_OP_WHERE, z, F(c, 1.0), x);
        int64_t dims[ST_MAX_DIMS] = {0};
        int nd = reduced_dim_list(c, &r->s, n, dims);
        int zc = cast(c, z, M(c, g).dtype);
        int nz = nd ? red(c, ST_OP_SUM, zc, dims, nd, true) : zc;
        int pnz = nd ? red(c, ST_OP_PROD, xs, dims, nd, true) : xs;
        int at0 = E3(c, ST_OP_WHERE, E2(c, ST_OP_EQ, nz, F(c, 1.0)), mul(c, gk, pnz), F(c, 0.0));
        gx = E3(c, ST_OP_WHERE, z, at0, dv(c, mul(c, gk, yk), xs));
        break;
    }
    case ST_OP_LOGSUMEXP: { /* softmax over the dims, times g */
        int yk = keep_dims(c, &r->s, y, n);
        gx = mul(c, gk, E1(c, ST_OP_EXP, sub(c, x, yk)));
        break;
    }
    default:
        return;
    }
    r->gin[0] = fin(c, gx, x);
}

static void r_matmul(ad *c, rule *r)
{
    int a = r->s.in[0], b = r->s.in[1], g = r->og;
    bool da = diffable(c, a), db = diffable(c, b);
    if (!da && !db)
        return;
    st_meta am = M(c, a), bm = M(c, b);
    bool a1 = am.ndim == 1, b1 = bm.ndim == 1;
    if (am.ndim < 1 || bm.ndim < 1) {
        st_err(ST_ERR_RUNTIME, "matmul vjp: operands of rank %d and %d",
               am.ndim, bm.ndim);
        c->failed = true;
        return;
    }
    int A = a1 ? unsq(c, a, 0) : a;
    int B = b1 ? unsq(c, b, 1) : b;
    int G = g;
    if (a1 && b1)
        G = unsq(c, unsq(c, g, 0), 1);
    else if (a1)
        G = unsq(c, g, M(c, g).ndim - 1);
    else if (b1)
        G = unsq(c, g, M(c, g).ndim);
    if (da) {
        st_meta Am = M(c, A);
        int ga = sum_to(c, E2(c, ST_OP_MATMUL, G, transpose(c, B)), &Am);
        if (a1) {
            int64_t d0 = 0;
            ga = sq(c, ga, &d0, 1);
        }
        r->gin[0] = fin(c, ga, a);
    }
    if (db) {
        st_meta Bm = M(c, B);
        int gb = sum_to(c, E2(c, ST_OP_MATMUL, transpose(c, A), G), &Bm);
        if (b1) {
            int64_t d1 = 1;
            gb = sq(c, gb, &d1, 1);
        }
        r->gin[1] = fin(c, gb, b);
    }
}

static int as_long(ad *c, int idx)
{
    return cast(c, idx, ST_INT64);
}

static int scatter_add(ad *c, int self, int dim, int idx, int src)
{
    st_attrs a = A0();
    a.i[0] = dim;
    int in[3] = {self, idx, src};
    return E(c, ST_OP_SCATTER_ADD, in, 3, &a);
}

static void r_gather(ad *c, rule *r)
{
    int x = r->s.in[0], idx = r->s.in[1], g = r->og;
    if (!diffable(c, x))
        return;
    st_meta xm = M(c, x);
    int dim = wrapd(c, r->s.attrs.i[0], xm.ndim);
    int z = full_like(c, x, 0.0, xm.dtype);
    r->gin[0] = fin(c, scatter_add(c, z, dim, as_long(c, idx),
                                   cast(c, g, xm.dtype)), x);
}

static void r_index_select(ad *c, rule *r)
{
    int x = r->s.in[0], idx = r->s.in[1], g = r->og;
    if (!diffable(c, x))
        return;
    st_meta xm = M(c, x), gm = M(c, g);
    if (xm.ndim == 0) { /* a single element, selected once */
        r->gin[0] = fin(c, g, x);
        return;
    }
    int dim = wrapd(c, r->s.attrs.i[0], xm.ndim);
    int ix = as_long(c, idx);
    if (M(c, ix).ndim == 0)
        ix = unsq(c, ix, 0);
    ix = expand_to(c, along(c, ix, dim, xm.ndim), &gm);
    int z = full_like(c, x, 0.0, xm.dtype);
    r->gin[0] = fin(c, scatter_add(c, z, dim, ix, cast(c, g, xm.dtype)), x);
}

static void r_embedding(ad *c, rule *r)
{
    int w = r->s.in[0], idx = r->s.in[1], g = r->og;
    if (!diffable(c, w))
        return;
    st_meta wm = M(c, w);
    if (wm.ndim != 2) {
        st_err(ST_ERR_RUNTIME, "embedding vjp: weight of rank %d", wm.ndim);
        c->failed = true;
        return;
    }
    int64_t h = wm.shape[1];
    int64_t s2[2] = {-1, h}, s1[2] = {-1, 1};
    int g2 = view_to(c, ST_OP_RESHAPE, cast(c, g, wm.dtype), s2, 2);
    int i2 = view_to(c, ST_OP_RESHAPE, as_long(c, idx), s1, 2);
    st_meta g2m = M(c, g2);
    int ie = expand_to(c, i2, &g2m);
    int64_t pad = r->s.attrs.i[0];
    if (pad >= 0) /* the padding row gets no gradient */
        g2 = E3(c, ST_OP_WHERE, E2(c, ST_OP_EQ, ie, I(c, pad)), F(c, 0.0), g2);
    int z = full_like(c, w, 0.0, wm.dtype);
    r->gin[0] = fin(c, scatter_add(c, z, 0, ie, g2), w);
}

/* src's gradient of scatter_add and scatter: g gathered at index, placed
 * into zeros of src's shape where index is smaller than src */
static void scatter_src_grad(ad *c, rule *r)
{
    int idx = r->s.in[1], src = r->s.in[2], g = r->og;
    if (!diffable(c, src))
        return;
    st_meta sm = M(c, src), im = M(c, idx);
    int dim = wrapd(c, r->s.attrs.i[0], sm.ndim);
    st_attrs a = A0();
    a.i[0] = dim;
    int in[2] = {g, idx};
    int gs = E(c, ST_OP_GATHER, in, 2, &a);
    if (!c->failed && !same_shape(&sm, &im) && im.ndim > 0) {
        /* index smaller than src: gs[i, ...] lands at src[i, ...] */
        int ar = along(c, arange(c, im.shape[0], 0.0, 1.0), 0, im.ndim);
        ar = expand_to(c, ar, &im);
        gs = scatter_add(c, full_like(c, src, 0.0, sm.dtype), 0, ar, gs);
    }
    r->gin[2] = fin(c, gs, src);
}

static void r_scatter_add(ad *c, rule *r)
{
    int self = r->s.in[0];
    if (diffable(c, self))
        r->gin[0] = fin(c, r->og, self);
    scatter_src_grad(c, r);
}

/* scatter(self, index, src): self gets g with the written positions
 * zeroed (a scatter of zeros of index's shape), src gets g gathered at
 * index (every point, a repeated position's too, as torch's) */
static void r_scatter(ad *c, rule *r)
{
    int self = r->s.in[0], idx = r->s.in[1], g = r->og;
    if (diffable(c, self)) {
        st_meta gm = M(c, g);
        st_attrs a = A0();
        a.i[0] = wrapd(c, r->s.attrs.i[0], gm.ndim);
        int in[3] = {g, idx, full_like(c, idx, 0.0, gm.dtype)};
        r->gin[0] = fin(c, E(c, ST_OP_SCATTER, in, 3, &a), self);
    }
    scatter_src_grad(c, r);
}

/* slice_scatter(base, src): base gets g with the slice zeroed (a
 * slice_scatter of zeros), src gets the slice of g (in a cat's chain the
 * base gets g itself: backward.c's disjoint_chain) */
static void r_slice_scatter(ad *c, rule *r)
{
    int x = r->s.in[0], src = r->s.in[1], g = r->og;
    const st_attrs *at = &r->s.attrs;
    if (diffable(c, x)) {
        int in[2] = {g, full_like(c, src, 0.0, M(c, g).dtype)};
        r->gin[0] = fin(c, E(c, ST_OP_SLICE_SCATTER, in, 2, at), x);
    }
    if (diffable(c, src))
        r->gin[1] = fin(c, E(c, ST_OP_SLICE, &g, 1, at), src);
}

static void r_copy(ad *c, rule *r)
{
    r->gin[0] = fin(c, r->og, r->s.in[0]);
}

static void r_view(ad *c, rule *r)
{
    int x = r->s.in[0], g = r->og;
    if (!diffable(c, x))
        return;
    st_meta xm = M(c, x);
    const st_attrs *at = &r->s.attrs;
    int gx = -1;
    switch (r->s.op) {
    case ST_OP_RESHAPE:
        gx = reshape_to(c, g, &xm);
        break;
    case ST_OP_PERMUTE: {
        st_attrs a = A0();
        a.ndims = xm.ndim;
        for (int d = 0; d < xm.ndim && d < at->ndims; d++) {
            int p = wrapd(c, at->dims[d], xm.ndim);
            a.dims[p] = d;
        }
        /* the gradient of a transposed matmul operand (k^T in q @ k^T)
         * is T(q^T G): fusion's swap rule (fusion/viewfold.c) computes
         * it as G^T q, contiguous in k's layout */
        gx = E(c, ST_OP_PERMUTE, &g, 1, &a);
        break;
    }
    case ST_OP_EXPAND:
        gx = sum_to(c, g, &xm);
        break;
    case ST_OP_SLICE: {
        if (xm.ndim == 0) {
            gx = g;
            break;
        }
        int dim = wrapd(c, at->i[0], xm.ndim);
        int64_t step = at->i[3];
        if (step <= 0) {
            st_err(ST_ERR_VALUE, "slice vjp: step %lld", (long long)step);
            c->failed = true;
            return;
        }
        /* the grad written into zeros at the slice: slice_scatter, an
         * elementwise select that fuses with its neighbours (a scatter_add
         * at an arange index ran as a serial scatter kernel) */
        st_attrs sa = *at;
        sa.i[0] = dim;
        int in[2] = {full_like(c, x, 0.0, xm.dtype), cast(c, g, xm.dtype)};
        gx = E(c, ST_OP_SLICE_SCATTER, in, 2, &sa);
        break;
    }
    case ST_OP_SQUEEZE: {
        bool mask[ST_MAX_DIMS] = {false};
        if (at->ndims == 0) {
            for (int d = 0; d < xm.ndim; d++)
                mask[d] = xm.shape[d] == 1;
        } else {
            for (int i = 0; i < at->ndims && i < ST_MAX_DIMS; i++) {
                int d = wrapd(c, at->dims[i], xm.ndim);
                if (xm.ndim > 0 && xm.shape[d] == 1)
                    mask[d] = true;
            }
        }
        gx = g;
        for (int d = 0; d < xm.ndim; d++)
            if (mask[d])
                gx = unsq(c, gx, d);
        break;
    }
    case ST_OP_UNSQUEEZE: {
        int64_t d = wrapd(c, at->i[0], xm.ndim + 1);
        gx = sq(c, g, &d, 1);
        break;
    }
    default:
        return;
    }
    r->gin[0] = fin(c, gx, x);
}

static void r_softmax(ad *c, rule *r)
{
    int x = r->s.in[0];
    if (!diffable(c, x))
        return;
    int y = up(c, r->y), g = up(c, r->og);
    int dim = wrapd(c, r->s.attrs.i[0], M(c, y).ndim);
    int gx;
    if (r->s.op == ST_OP_SOFTMAX) /* y (g - sum(g y)) */
        gx = mul(c, y, sub(c, g, red1(c, ST_OP_SUM, mul(c, g, y), dim,
                                      true)));
    else /* g - exp(y) sum(g) */
        gx = sub(c, g, mul(c, E1(c, ST_OP_EXP, y),
                           red1(c, ST_OP_SUM, g, dim, true)));
    r->gin[0] = fin(c, gx, x);
}

static void r_layer_norm(ad *c, rule *r)
{
    const st_stmt *s = &r->s;
    int x = s->in[0], next = 1, w = -1, b = -1;
    if ((s->attrs.flags & ST_ATTR_HAS_WEIGHT) && next < s->nin)
        w = s->in[next++];
    if ((s->attrs.flags & ST_ATTR_HAS_BIAS) && next < s->nin)
        b = s->in[next++];
    st_meta xm = M(c, x);
    int n = xm.ndim, k = s->attrs.ndims;
    if (k < 0 || k > n) {
        st_err(ST_ERR_VALUE, "layer_norm vjp: %d normalized dims for a %d-d "
               "input", k, n);
        c->failed = true;
        return;
    }
    int64_t dims[ST_MAX_DIMS];
    for (int i = 0; i < k; i++)
        dims[i] = n - k + i;
    int g = up(c, r->og);
    if (b >= 0 && diffable(c, b))
        r->gin[next - 1] = fin(c, g, b);
    bool dx = diffable(c, x), dw = w >= 0 && diffable(c, w);
    if (!dx && !dw)
        return;
    /* recompute mean and rstd in (at least) float32 */
    int xc = up(c, x);
    int mu = red(c, ST_OP_MEAN, xc, dims, k, true);
    int d = sub(c, xc, mu);
    int var = red(c, ST_OP_MEAN, mul(c, d, d), dims, k, true);
    int rstd = E1(c, ST_OP_RSQRT, add(c, var, F(c, s->attrs.f[0])));
    int xhat = mul(c, d, rstd);
    if (dw)
        r->gin[1] = fin(c, mul(c, g, xhat), w);
    if (!dx)
        return;
    int gh = w >= 0 ? mul(c, g, up(c, w)) : g;
    /* rstd (gh - mean(gh) - xhat mean(gh xhat)) */
    int m1 = red(c, ST_OP_MEAN, gh, dims, k, true);
    int m2 = red(c, ST_OP_MEAN, mul(c, gh, xhat), dims, k, true);
    int gx = mul(c, rstd, sub(c, sub(c, gh, m1), mul(c, xhat, m2)));
    r->gin[0] = fin(c, gx, x);
}

static void r_gelu(ad *c, rule *r)
{
    int x0 = r->s.in[0];
    if (!diffable(c, x0))
        return;
    int x = up(c, x0), g = up(c, r->og);
    int dydx;
    if (r->s.attrs.flags & ST_ATTR_TANH) {
        /* y = 0.5 x (1 + t), t = tanh(k (x + a x^3)) */
        const double k = sqrt(2.0 / M_PI), a3 = 0.044715;
        int x2 = mul(c, x, x);
        int inner = mul(c, add(c, x, mul(c, mul(c, x2, x), F(c, a3))),
                        F(c, k));
        int t = E1(c, ST_OP_TANH, inner);
        int left = mul(c, F(c, 0.5), add(c, t, F(c, 1.0)));
        int dinner = mul(c, add(c, F(c, 1.0), mul(c, x2, F(c, 3.0 * a3))),
                         F(c, k));
        int right = mul(c, mul(c, mul(c, x, F(c, 0.5)),
                               sub(c, F(c, 1.0), mul(c, t, t))),
                        dinner);
        dydx = add(c, left, right);
    } else {
        /* Phi(x) + x phi(x); Phi from the forward's erf(x / sqrt(2)) + 1
         * when the op was given it (a saved value, no erf here) */
        int e1 = r->s.nin > 1 ? up(c, r->s.in[1])
                              : add(c, E1(c, ST_OP_ERF, mul(c, x, F(c, 1.0 / sqrt(2.0)))),
                                    F(c, 1.0));
        int cdf = mul(c, e1, F(c, 0.5));
        int pdf = mul(c, E1(c, ST_OP_EXP, mul(c, mul(c, x, x), F(c, -0.5))),
                      F(c, 1.0 / sqrt(2.0 * M_PI)));
        dydx = add(c, cdf, mul(c, x, pdf));
    }
    r->gin[0] = fin(c, mul(c, g, dydx), x0);
}

static void r_cross_entropy(ad *c, rule *r)
{
    int logits = r->s.in[0], target = r->s.in[1];
    if (!diffable(c, logits))
        return;
    st_meta lm = M(c, logits), tm = M(c, target);
    if (lm.ndim != 2 || tm.ndim != 1) {
        st_err(ST_ERR_VALUE, "cross_entropy vjp: expects logits [N, C] and "
               "target [N], got %d-d and %d-d", lm.ndim, tm.ndim);
        c->failed = true;
        return;
    }
    int g = up(c, r->og);
    st_dtype dt = M(c, g).dtype;
    /* two-operand form: sequenced so that fusion makes one row kernel of
     * it all: the row weights and the one-hot's operands first, then the
     * softmax, whose per-point epilogue computes (p - onehot) * w (no
     * [N, C] softmax or difference is stored); with lse, see below */
    int valid = E2(c, ST_OP_NE, target, I(c, r->s.attrs.i[0]));
    int scale;
    switch (r->s.attrs.i[1]) {
    case 0: case 2:
        scale = g;
        break;
    case 1: {
        int cnt = red(c, ST_OP_SUM, cast(c, valid, dt), NULL, 0, false);
        scale = dv(c, g, cnt);
        break;
    }
    default:
        st_err(ST_ERR_VALUE, "cross_entropy vjp: bad reduction %lld",
               (long long)r->s.attrs.i[1]);
        c->failed = true;
        return;
    }
    int wrow = E3(c, ST_OP_WHERE, valid, scale, F(c, 0.0));
    int wcol = unsq(c, wrow, 1);
    int xl = up(c, logits);
    if (r->s.nin > 2) {
        /* with the forward's log-sum-exp (a saved [N, 1]) the softmax is
         * one exp per point, no row passes: (exp(x - lse) * w, then -w
         * scattered at the targets (in place: the product dies there; an
         * ignored row adds 0 at class 0). lse goes through squeeze and
         * unsqueeze so that its size-1 dim is a static broadcast (the
         * kernel's vector loop) */
        int64_t d1 = 1;
        int lse = unsq(c, sq(c, up(c, r->s.in[2]), &d1, 1), 1);
        int pw = mul(c, E1(c, ST_OP_EXP, sub(c, xl, lse)), wcol);
        int tsafe = unsq(c, E3(c, ST_OP_WHERE, valid, target, I(c, 0)), 1);
        r->gin[0] = fin(c, scatter_add(c, pw, 1, tsafe, neg(c, wcol)), logits);
        return;
    }
    int cols = unsq(c, arange(c, lm.shape[1], 0.0, 1.0), 0);
    int trow = unsq(c, target, 1);
    st_attrs sa = A0();
    sa.i[0] = 1;
    int p = E(c, ST_OP_SOFTMAX, &xl, 1, &sa);
    int d = sub(c, p, cast(c, E2(c, ST_OP_EQ, trow, cols), dt));
    r->gin[0] = fin(c, mul(c, d, wcol), logits);
}

static void r_linear(ad *c, rule *r)
{
    int x = r->s.in[0], w = r->s.in[1], g = r->og;
    int b = ((r->s.attrs.flags & ST_ATTR_HAS_BIAS) && r->s.nin > 2)
                ? r->s.in[2] : -1;
    st_meta wm = M(c, w), xm = M(c, x);
    if (wm.ndim != 2 || xm.ndim < 1) {
        st_err(ST_ERR_RUNTIME, "linear vjp: weight of rank %d, input of "
               "rank %d", wm.ndim, xm.ndim);
        c->failed = true;
        return;
    }
    if (b >= 0 && diffable(c, b))
        r->gin[2] = fin(c, g, b);
    if (diffable(c, x)) /* g @ w */
        r->gin[0] = fin(c, E2(c, ST_OP_MATMUL, g, w), x);
    if (diffable(c, w)) { /* g2^T @ x2 over the flattened leading dims */
        int64_t so[2] = {-1, wm.shape[0]}, si[2] = {-1, wm.shape[1]};
        int g2 = view_to(c, ST_OP_RESHAPE, g, so, 2);
        int x2 = view_to(c, ST_OP_RESHAPE, x, si, 2);
        r->gin[1] = fin(c, E2(c, ST_OP_MATMUL, transpose(c, g2), x2), w);
    }
}

static void r_clamp(ad *c, rule *r)
{
    int x = r->s.in[0], g = r->og;
    if (!diffable(c, x))
        return;
    const st_attrs *a = &r->s.attrs;
    bool iv = a->flags & ST_ATTR_INT_VALUE;
    int ok = -1;
    if (a->flags & ST_ATTR_HAS_MIN) /* the gradient passes at the bounds */
        ok = E2(c, ST_OP_GE, x, iv ? I(c, a->i[0]) : F(c, a->f[0]));
    if (a->flags & ST_ATTR_HAS_MAX) {
        int le = E2(c, ST_OP_LE, x, iv ? I(c, a->i[1]) : F(c, a->f[1]));
        ok = ok < 0 ? le : E2(c, ST_OP_LOGICAL_AND, ok, le);
    }
    int gx = ok < 0 ? g : E3(c, ST_OP_WHERE, ok, g, F(c, 0.0));
    r->gin[0] = fin(c, gx, x);
}

static void r_masked_fill(ad *c, rule *r)
{
    int x = r->s.in[0], mask = r->s.in[1];
    if (diffable(c, x))
        r->gin[0] = fin(c, E3(c, ST_OP_WHERE, mask, F(c, 0.0), r->og), x);
}

/* ---- dispatch ---- */

static st_status vjp(st_graph *g, const st_stmt *s, const int *out_grads,
                     int *in_grads)
{
    if (!g || !s || !out_grads || !in_grads)
        return st_err(ST_ERR_VALUE, "vjp: null argument");
    rule r;
    r.s = *s; /* s may point into g->stmts, which emits reallocate */
    r.gin = in_grads;
    int nin = r.s.nin < 0 ? 0 : r.s.nin > ST_MAX_IN ? ST_MAX_IN : r.s.nin;
    for (int k = 0; k < nin; k++)
        in_grads[k] = -1;
    if (r.s.nout < 1 || r.s.nin != nin)
        return st_err(ST_ERR_VALUE, "vjp: bad statement (%d operands, %d "
                      "results)", r.s.nin, r.s.nout);
    for (int k = 0; k < nin; k++)
        if (r.s.in[k] < 0 || r.s.in[k] >= g->nvalues)
            return st_err(ST_ERR_VALUE, "vjp: operand %d is not a value", k);
    r.y = r.s.out[0];
    if (r.y < 0 || r.y >= g->nvalues)
        return st_err(ST_ERR_VALUE, "vjp: result is not a value");
    int og = out_grads[0];
    if (og < 0)
        return ST_OK;
    if (og >= g->nvalues)
        return st_err(ST_ERR_VALUE, "vjp: gradient %d is not a value", og);
    ad c = {g, false};
    st_meta ym = M(&c, r.y), gm = M(&c, og);
    if (!same_shape(&ym, &gm)) {
        char a[96], b[96];
        return st_err(ST_ERR_RUNTIME, "vjp of %s: gradient of shape %s for "
                      "a result of shape %s", st_op(r.s.op)->name,
                      st_shape_str(gm.shape, gm.ndim, a, sizeof a),
                      st_shape_str(ym.shape, ym.ndim, b, sizeof b));
    }
    if (!st_dtype_is_float(ym.dtype))
        return ST_OK; /* int/bool results carry no gradient */
    r.og = cast(&c, og, ym.dtype);
    switch (r.s.op) {
    case ST_OP_NEG: case ST_OP_EXP: case ST_OP_LOG: case ST_OP_SQRT:
    case ST_OP_RSQRT: case ST_OP_TANH: case ST_OP_SIGMOID: case ST_OP_RELU:
    case ST_OP_ERF: case ST_OP_ABS: case ST_OP_SIN: case ST_OP_COS:
    case ST_OP_RECIPROCAL: case ST_OP_FLOOR: case ST_OP_CEIL:
    case ST_OP_ROUND: case ST_OP_SIGN: case ST_OP_CAST:
        r_unary(&c, &r);
        break;
    case ST_OP_ADD: case ST_OP_SUB: case ST_OP_MUL: case ST_OP_DIV:
    case ST_OP_POW: case ST_OP_MAXIMUM: case ST_OP_MINIMUM:
    case ST_OP_REMAINDER:
        r_binary(&c, &r);
        break;
    case ST_OP_WHERE: r_where(&c, &r); break;
    case ST_OP_SUM: case ST_OP_MEAN: case ST_OP_AMAX: case ST_OP_AMIN:
    case ST_OP_LOGSUMEXP:
    case ST_OP_PROD:
        r_reduce(&c, &r);
        break;
    case ST_OP_MATMUL: r_matmul(&c, &r); break;
    case ST_OP_GATHER: r_gather(&c, &r); break;
    case ST_OP_INDEX_SELECT: r_index_select(&c, &r); break;
    case ST_OP_SCATTER_ADD: r_scatter_add(&c, &r); break;
    case ST_OP_SCATTER: r_scatter(&c, &r); break;
    case ST_OP_SLICE_SCATTER: r_slice_scatter(&c, &r); break;
    case ST_OP_EMBEDDING: r_embedding(&c, &r); break;
    case ST_OP_COPY: r_copy(&c, &r); break;
    case ST_OP_RESHAPE: case ST_OP_PERMUTE: case ST_OP_EXPAND:
    case ST_OP_SLICE: case ST_OP_SQUEEZE: case ST_OP_UNSQUEEZE:
        r_view(&c, &r);
        break;
    case ST_OP_SOFTMAX: case ST_OP_LOG_SOFTMAX: r_softmax(&c, &r); break;
    case ST_OP_LAYER_NORM: r_layer_norm(&c, &r); break;
    case ST_OP_GELU: r_gelu(&c, &r); break;
    case ST_OP_CROSS_ENTROPY: r_cross_entropy(&c, &r); break;
    case ST_OP_LINEAR: r_linear(&c, &r); break;
    case ST_OP_CLAMP: r_clamp(&c, &r); break;
    case ST_OP_MASKED_FILL: r_masked_fill(&c, &r); break;
    default:
        return st_err(ST_ERR_RUNTIME, "%s is not differentiable",
                      st_op(r.s.op) ? st_op(r.s.op)->name : "?");
    }
    if (c.failed) {
        for (int k = 0; k < nin; k++)
            in_grads[k] = -1;
        if (st_err_kind() == ST_OK)
            st_err(ST_ERR_RUNTIME, "vjp of %s failed", st_op(r.s.op)->name);
        return st_err_kind();
    }
    return ST_OK;
}

/* ---- the table: which ops have a rule and what each reads ---- */

#define B0 (1u << 0)
#define B1 (1u << 1)
#define B2 (1u << 2)
#define BO ST_VJP_SAVES_OUT

static const struct {
    st_op_id op;
    unsigned saves;
} rules[] = {
    {ST_OP_NEG, 0}, {ST_OP_EXP, BO}, {ST_OP_LOG, B0}, {ST_OP_SQRT, BO},
    {ST_OP_RSQRT, BO}, {ST_OP_TANH, BO}, {ST_OP_SIGMOID, BO},
    {ST_OP_RELU, BO}, {ST_OP_ERF, B0}, {ST_OP_ABS, B0}, {ST_OP_SIN, B0},
    {ST_OP_COS, B0}, {ST_OP_RECIPROCAL, BO}, {ST_OP_FLOOR, 0},
    {ST_OP_CEIL, 0}, {ST_OP_ROUND, 0}, {ST_OP_SIGN, 0}, {ST_OP_CAST, 0},
    {ST_OP_ADD, 0}, {ST_OP_SUB, 0}, {ST_OP_MUL, B0 | B1},
    {ST_OP_DIV, B0 | B1}, {ST_OP_POW, B0 | B1 | BO}, {ST_OP_MAXIMUM, B0 | B1},
    {ST_OP_MINIMUM, B0 | B1}, {ST_OP_REMAINDER, B0 | B1},
    {ST_OP_WHERE, B0},
    {ST_OP_SUM, 0}, {ST_OP_MEAN, 0}, {ST_OP_AMAX, B0 | BO},
    {ST_OP_AMIN, B0 | BO}, {ST_OP_PROD, B0 | BO},
    {ST_OP_MATMUL, B0 | B1},
    {ST_OP_GATHER, B1}, {ST_OP_INDEX_SELECT, B1}, {ST_OP_SCATTER_ADD, B1},
    {ST_OP_EMBEDDING, B1}, {ST_OP_LOGSUMEXP, B0 | BO},
    {ST_OP_COPY, 0}, {ST_OP_RESHAPE, 0}, {ST_OP_PERMUTE, 0},
    {ST_OP_EXPAND, 0}, {ST_OP_SLICE, 0}, {ST_OP_SQUEEZE, 0},
    {ST_OP_UNSQUEEZE, 0},
    {ST_OP_SOFTMAX, BO}, {ST_OP_LOG_SOFTMAX, BO},
    {ST_OP_LAYER_NORM, B0 | B1}, {ST_OP_GELU, B0 | B1},
    {ST_OP_CROSS_ENTROPY, B0 | B1 | B2}, {ST_OP_LINEAR, B0 | B1},
    {ST_OP_CLAMP, B0}, {ST_OP_MASKED_FILL, B1}, {ST_OP_SLICE_SCATTER, 0},
    {ST_OP_SCATTER, B1},
};

unsigned st_ir_vjp_saves_for(st_op_id op, unsigned needs)
{
    const st_op_def *d = st_op(op);
    unsigned all = d ? d->vjp_saves : 0;
    switch (op) {
    case ST_OP_MUL:    /* ga = g b, gb = g a */
    case ST_OP_MATMUL: /* ga = g b^T, gb = a^T g */
    case ST_OP_LINEAR: /* gx = g w, gw = g^T x, gbias = sum g */
        return all & (((needs & B0) ? B1 : 0u) | ((needs & B1) ? B0 : 0u));
    case ST_OP_DIV:    /* ga = g / b, gb = -g a / b^2 */
        return all & (((needs & (B0 | B1)) ? B1 : 0u) | ((needs & B1) ? B0 : 0u));
    case ST_OP_POW:    /* ga = g b a^(b-1), gb = g y log(a) */
        return all & (((needs & B0) ? B0 | B1 : 0u) | ((needs & B1) ? B0 | BO : 0u));
    case ST_OP_REMAINDER: /* ga = g, gb = -g floor(a / b): a write into a
                           * after x % 2 is fine, as torch's */
        return all & ((needs & B1) ? B0 | B1 : 0u);
    default:
        return all;
    }
}

int st_ir_vjp_helpers_from(st_op_id op)
{
    switch (op) {
    case ST_OP_GELU: return 1;          /* r_gelu: e1 when nin > 1 */
    case ST_OP_CROSS_ENTROPY: return 2; /* r_cross_entropy: lse when nin > 2 */
    default: return ST_MAX_IN;
    }
}

/* Sets the slots of the ops above (the others stay NULL, their default);
 * calling it again rewrites the same values. */
void st_ir_autodiff_init(void)
{
    static volatile bool done; /* a racing second fill writes the same */
    if (done)
        return;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        st_op_set_vjp(rules[i].op, vjp);
        st_op_set_vjp_saves(rules[i].op, rules[i].saves);
    }
    done = true;
}
