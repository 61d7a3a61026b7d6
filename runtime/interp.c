/* runtime/interp.c - the reference backend "interp": evaluates the kernel
 * IR (fusion/st_kernel.h) with plain C loops, in blocks of up to BLK points
 * along the innermost iteration dim (one temporary array per node: double
 * for float dtypes, int64 for int/bool). It is the oracle every other
 * backend is tested against. Owns: st_interp_backend.
 *
 * Numerics (PyTorch semantics):
 * - float16/bfloat16/float32 nodes are rounded to float after every op
 *   (float32 semantics); float64 nodes stay double; int32 wraps like C
 *   int32; bool is 0/1. Stores round to the buffer dtype (nearest even).
 *   An explicit CAST to float16/bfloat16 rounds to that precision.
 * - Integer DIV truncates toward zero; integer DIV, FLOOR_DIVIDE and
 *   REMAINDER by zero give 0 (no trap). Integer POW with a negative
 *   exponent is an error, as in PyTorch.
 * - float -> int truncates toward zero; NaN/out of range give INT_MIN
 *   (what x86 gives); to bool is != 0. sign(NaN) = 0 (as ATen).
 * - RAND uniform values are kept below 1 in the node's precision.
 * - REDUCE kernels run their nreduce reductions in sequence per outer
 *   point, each a pass over the row (blocks of up to BLK points along the
 *   innermost row dim); the epilogue runs per point of the row once more
 *   (final_per_point) or per outer point. In a per-outer epilogue, INDEX
 *   -1 / RAND use the linear index of the output point in the outer
 *   (non-reduced) space; in the passes and a per-point epilogue, that of
 *   the point in the whole iteration space.
 * - MATMUL kernels with stores evaluate their epilogue per output point
 *   with REDUCED = the product, converted exactly to the node's dtype
 *   (float accumulation for float16/bfloat16/float32, double for float64,
 *   int64 for integers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_runtime.h"

#define BLK 256

typedef union {
    double f;
    int64_t i;
} slot;

/* Precomputed per kernel by compile(). */
typedef struct {
    /* nodes to evaluate, in order: ELEMENTWISE list[0] per point; REDUCE
     * list[p] in pass p < nreduce, list[nreduce] the epilogue; MATMUL
     * list[0] the epilogue (empty without stores) */
    int *list[ST_K_MAX_REDUCE + 1], n[ST_K_MAX_REDUCE + 1];
    int *reduced, nreduced; /* REDUCE/MATMUL: the REDUCED nodes */
    int nreduce;      /* REDUCE: reductions (k->nreduce, at least 1) */
    /* REDUCE with a per-point epilogue: the stores made per outer point
     * when the row is empty (st_kernel_outer_stores) and the nodes they
     * need; olist NULL when there are none */
    bool ostore[ST_K_MAX_STORES];
    int *olist, on;
    bool index_dims;  /* an INDEX node reads a dim coordinate (no collapse) */
} kinfo;

typedef struct {
    const st_kernel *ks;
    int n;
    kinfo *ki;
} ihandle;

/* One block of points: the block varies dim vd (or is one point when
 * vd < 0) from coordinates p over len points. */
typedef struct {
    const st_kernel *k;
    const st_kargs *a;
    slot *v;                        /* nnodes * BLK */
    slot *tmp;                      /* 3 * BLK scratch */
    int64_t p[ST_MAX_DIMS];
    int vd, noff;                   /* varying dim; dims used for offsets */
    int len;
    int ndims;                      /* dims with coordinates (INDEX) */
    int64_t lin0;                   /* linear index of the first point */
    int64_t boff[ST_K_MAX_BUFS];    /* element offset of the first point */
    int64_t vstr[ST_K_MAX_BUFS];    /* element stride along vd */
} blk;

static inline bool isf(st_dtype t)
{
    return t == ST_FLOAT16 || t == ST_BFLOAT16 || t == ST_FLOAT32 ||
           t == ST_FLOAT64;
}

static inline int64_t f2i64(double x)
{
    if (x >= -9223372036854775808.0 && x < 9223372036854775808.0)
        return (int64_t)x;
    return INT64_MIN;
}

static inline int32_t f2i32(double x)
{
    if (x > -2147483649.0 && x < 2147483648.0)
        return (int32_t)x;
    return INT32_MIN;
}

/* An int64 value wrapped into integer dtype t (two's complement, as a C
 * cast does; bool: nonzero). */
static inline int64_t wrapi(int64_t x, st_dtype t)
{
    switch (t) {
    case ST_BOOL: return x != 0;
    case ST_UINT8: return (uint8_t)(uint64_t)x;
    case ST_INT8: return (int8_t)(uint8_t)(uint64_t)x;
    case ST_INT16: return (int16_t)(uint16_t)(uint64_t)x;
    case ST_INT32: return (int32_t)(uint32_t)(uint64_t)x;
    default: return x;
    }
}

/* Float -> the integer representation of dtype t. Narrow types go through
 * int64 and wrap (PyTorch's float -> uint8 of -1.0 gives 255 on x86). */
static inline int64_t f2int(double x, st_dtype t)
{
    if (t == ST_BOOL)
        return x != 0;
    if (t == ST_INT32)
        return f2i32(x);
    if (t == ST_INT64)
        return f2i64(x);
    return wrapi(f2i64(x), t);
}

/* Rounds float values of a node of dtype t (float32 semantics). */
static void round_f(slot *v, int len, st_dtype t)
{
    if (t == ST_FLOAT64)
        return;
    for (int j = 0; j < len; j++)
        v[j].f = (double)(float)v[j].f;
}

static void wrap_i(slot *v, int len, st_dtype t)
{
    if (t == ST_INT32)
        for (int j = 0; j < len; j++)
            v[j].i = (int32_t)(uint32_t)(uint64_t)v[j].i;
    else if (t != ST_INT64)
        for (int j = 0; j < len; j++)
            v[j].i = wrapi(v[j].i, t);
}

/* Converts values of dtype sdt (in src) into dtype ddt (in dst, may alias).
 * exact: round to the destination's own precision (CAST) rather than to
 * float. */
static void convert(const slot *src, st_dtype sdt, slot *dst, st_dtype ddt,
                    int len, bool exact)
{
    if (isf(sdt)) {
        if (isf(ddt)) {
            if (ddt == ST_FLOAT64) {
                if (dst != src)
                    memcpy(dst, src, (size_t)len * sizeof *dst);
            } else if (exact && ddt == ST_FLOAT16) {
                for (int j = 0; j < len; j++)
                    dst[j].f = st_half_to_float(
                        st_float_to_half((float)src[j].f));
            } else if (exact && ddt == ST_BFLOAT16) {
                for (int j = 0; j < len; j++)
                    dst[j].f = st_bf16_to_float(
                        st_float_to_bf16((float)src[j].f));
            } else {
                for (int j = 0; j < len; j++)
                    dst[j].f = (double)(float)src[j].f;
            }
        } else {
            for (int j = 0; j < len; j++)
                dst[j].i = f2int(src[j].f, ddt);
        }
    } else {
        if (isf(ddt)) {
            if (ddt == ST_FLOAT64) {
                for (int j = 0; j < len; j++)
                    dst[j].f = (double)src[j].i;
            } else {
                for (int j = 0; j < len; j++)
                    dst[j].f = (double)(float)src[j].i;
                if (exact && ddt == ST_FLOAT16)
                    for (int j = 0; j < len; j++)
                        dst[j].f = st_half_to_float(
                            st_float_to_half((float)dst[j].f));
                else if (exact && ddt == ST_BFLOAT16)
                    for (int j = 0; j < len; j++)
                        dst[j].f = st_bf16_to_float(
                            st_float_to_bf16((float)dst[j].f));
            }
        } else {
            if (dst != src)
                memcpy(dst, src, (size_t)len * sizeof *dst);
            wrap_i(dst, len, ddt);
        }
    }
}

/* ---- memory access ---- */

static inline double read_f(const char *p, st_dtype t)
{
    switch (t) {
    case ST_FLOAT32: return *(const float *)p;
    case ST_FLOAT64: return *(const double *)p;
    case ST_FLOAT16: return st_half_to_float(*(const uint16_t *)p);
    case ST_BFLOAT16: return st_bf16_to_float(*(const uint16_t *)p);
    default: return 0;
    }
}

static inline int64_t read_i(const char *p, st_dtype t)
{
    switch (t) {
    case ST_BOOL: return *(const uint8_t *)p != 0;
    case ST_UINT8: return *(const uint8_t *)p;
    case ST_INT8: return *(const int8_t *)p;
    case ST_INT16: return *(const int16_t *)p;
    case ST_INT32: return *(const int32_t *)p;
    case ST_INT64: return *(const int64_t *)p;
    default: return 0;
    }
}

/* len elements at base + j*st (elements of dtype t). */
static void load_strided(const char *base, int64_t st, st_dtype t, int len,
                         slot *out)
{
    switch (t) {
    case ST_FLOAT32: {
        const float *q = (const float *)base;
        if (st == 1)
            for (int j = 0; j < len; j++)
                out[j].f = q[j];
        else
            for (int j = 0; j < len; j++)
                out[j].f = q[j * st];
        break;
    }
    case ST_FLOAT64: {
        const double *q = (const double *)base;
        for (int j = 0; j < len; j++)
            out[j].f = q[j * st];
        break;
    }
    case ST_FLOAT16: {
        const uint16_t *q = (const uint16_t *)base;
        for (int j = 0; j < len; j++)
            out[j].f = st_half_to_float(q[j * st]);
        break;
    }
    case ST_BFLOAT16: {
        const uint16_t *q = (const uint16_t *)base;
        for (int j = 0; j < len; j++)
            out[j].f = st_bf16_to_float(q[j * st]);
        break;
    }
    case ST_INT32: {
        const int32_t *q = (const int32_t *)base;
        for (int j = 0; j < len; j++)
            out[j].i = q[j * st];
        break;
    }
    case ST_INT64: {
        const int64_t *q = (const int64_t *)base;
        for (int j = 0; j < len; j++)
            out[j].i = q[j * st];
        break;
    }
    case ST_BOOL: {
        const uint8_t *q = (const uint8_t *)base;
        for (int j = 0; j < len; j++)
            out[j].i = q[j * st] != 0;
        break;
    }
    case ST_UINT8: {
        const uint8_t *q = (const uint8_t *)base;
        for (int j = 0; j < len; j++)
            out[j].i = q[j * st];
        break;
    }
    case ST_INT8: {
        const int8_t *q = (const int8_t *)base;
        for (int j = 0; j < len; j++)
            out[j].i = q[j * st];
        break;
    }
    case ST_INT16: {
        const int16_t *q = (const int16_t *)base;
        for (int j = 0; j < len; j++)
            out[j].i = q[j * st];
        break;
    }
    default:
        break;
    }
}

/* Writes len values v (of node dtype vdt) to base + j*st in dtype t. */
static void store_strided(char *base, int64_t st, st_dtype t, const slot *v,
                          st_dtype vdt, int len)
{
    bool vf = isf(vdt);
    switch (t) {
    case ST_FLOAT32: {
        float *q = (float *)base;
        if (vf && st == 1)
            for (int j = 0; j < len; j++)
                q[j] = (float)v[j].f;
        else if (vf)
            for (int j = 0; j < len; j++)
                q[j * st] = (float)v[j].f;
        else
            for (int j = 0; j < len; j++)
                q[j * st] = (float)v[j].i;
        break;
    }
    case ST_FLOAT64: {
        double *q = (double *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = vf ? v[j].f : (double)v[j].i;
        break;
    }
    case ST_FLOAT16: {
        uint16_t *q = (uint16_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = st_float_to_half(vf ? (float)v[j].f : (float)v[j].i);
        break;
    }
    case ST_BFLOAT16: {
        uint16_t *q = (uint16_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = st_float_to_bf16(vf ? (float)v[j].f : (float)v[j].i);
        break;
    }
    case ST_INT32: {
        int32_t *q = (int32_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = vf ? f2i32(v[j].f) : (int32_t)(uint32_t)v[j].i;
        break;
    }
    case ST_INT64: {
        int64_t *q = (int64_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = vf ? f2i64(v[j].f) : v[j].i;
        break;
    }
    case ST_BOOL: {
        uint8_t *q = (uint8_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = vf ? v[j].f != 0 : v[j].i != 0;
        break;
    }
    case ST_UINT8: {
        uint8_t *q = (uint8_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = (uint8_t)(vf ? f2int(v[j].f, t) : v[j].i);
        break;
    }
    case ST_INT8: {
        int8_t *q = (int8_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = (int8_t)(uint8_t)(vf ? f2int(v[j].f, t) : v[j].i);
        break;
    }
    case ST_INT16: {
        int16_t *q = (int16_t *)base;
        for (int j = 0; j < len; j++)
            q[j * st] = (int16_t)(uint16_t)(vf ? f2int(v[j].f, t) : v[j].i);
        break;
    }
    default:
        break;
    }
}

/* ---- node evaluation ---- */

static inline slot *nv(blk *b, int node)
{
    return b->v + (size_t)node * BLK;
}

/* Values of node as doubles (its own array, or converted into tmp). */
static const slot *as_f(blk *b, int node, slot *tmp)
{
    slot *v = nv(b, node);
    if (isf(b->k->nodes[node].dtype))
        return v;
    for (int j = 0; j < b->len; j++)
        tmp[j].f = (double)v[j].i;
    return tmp;
}

static const slot *as_i(blk *b, int node, slot *tmp)
{
    slot *v = nv(b, node);
    if (!isf(b->k->nodes[node].dtype))
        return v;
    for (int j = 0; j < b->len; j++)
        tmp[j].i = f2i64(v[j].f);
    return tmp;
}

static inline bool truthy(const slot *v, bool f, int j)
{
    return f ? v[j].f != 0 : v[j].i != 0;
}

static st_status eval_load(blk *b, int ni)
{
    const st_knode *n = &b->k->nodes[ni];
    const st_kbuf *kb = &b->k->bufs[n->buf];
    const st_karg_buf *ab = &b->a->bufs[n->buf];
    size_t isz = st_dtype_size(kb->dtype);
    slot *out = nv(b, ni);
    const char *base = ab->data + (ptrdiff_t)isz * b->boff[n->buf];
    int64_t st = b->vstr[n->buf];
    if (kb->unravel > 0) {
        /* an unravel load: boff/vstr give the linear index in the
         * reshaped value; unravel it over the source */
        const char *data = ab->data;
        for (int j = 0; j < b->len; j++) {
            int64_t off = st_kernel_unravel_off(b->boff[n->buf] + j * st,
                                                kb->unravel, ab->ushape,
                                                ab->ustrides);
            const char *p = data + (ptrdiff_t)isz * off;
            if (isf(kb->dtype))
                out[j].f = read_f(p, kb->dtype);
            else
                out[j].i = read_i(p, kb->dtype);
        }
    } else if (n->idx_dim < 0) {
        load_strided(base, st, kb->dtype, b->len, out);
    } else {
        const slot *idx = as_i(b, n->a, b->tmp);
        for (int j = 0; j < b->len; j++) {
            int64_t x = idx[j].i;
            if (x < 0 || x >= ab->idx_size)
                return st_err(ST_ERR_INDEX,
                              "index %lld is out of bounds for dimension %d "
                              "with size %lld",
                              (long long)x, n->idx_dim,
                              (long long)ab->idx_size);
            const char *p =
                base + (ptrdiff_t)isz * (j * st + x * ab->idx_stride);
            if (isf(kb->dtype))
                out[j].f = read_f(p, kb->dtype);
            else
                out[j].i = read_i(p, kb->dtype);
        }
    }
    /* Loaded values are already representable; only a dtype mismatch
     * between node and buffer needs a conversion. */
    if (n->dtype != kb->dtype)
        convert(out, kb->dtype, out, n->dtype, b->len, true);
    return ST_OK;
}

static bool unary_int_native(int op)
{
    switch (op) {
    case ST_OP_NEG: case ST_OP_ABS: case ST_OP_RELU: case ST_OP_SIGN:
    case ST_OP_LOGICAL_NOT: case ST_OP_FLOOR: case ST_OP_CEIL:
    case ST_OP_ROUND:
        return true;
    default:
        return false;
    }
}

static st_status eval_unary(blk *b, int ni)
{
    const st_knode *n = &b->k->nodes[ni];
    st_dtype adt = b->k->nodes[n->a].dtype;
    slot *out = nv(b, ni);
    int len = b->len;
    if (n->op == ST_OP_CAST) {
        convert(nv(b, n->a), adt, out, n->dtype, len, true);
        return ST_OK;
    }
    if (n->op == ST_OP_LOGICAL_NOT) {
        const slot *x = nv(b, n->a);
        bool f = isf(adt);
        for (int j = 0; j < len; j++)
            out[j].i = !truthy(x, f, j);
        convert(out, ST_BOOL, out, n->dtype, len, false);
        return ST_OK;
    }
    if (!isf(adt) && !isf(n->dtype) && unary_int_native(n->op)) {
        const slot *x = nv(b, n->a);
        for (int j = 0; j < len; j++) {
            int64_t v = x[j].i, r;
            switch (n->op) {
            case ST_OP_NEG: r = (int64_t)(0 - (uint64_t)v); break;
            case ST_OP_ABS: r = v < 0 ? (int64_t)(0 - (uint64_t)v) : v; break;
            case ST_OP_RELU: r = v > 0 ? v : 0; break;
            case ST_OP_SIGN: r = (v > 0) - (v < 0); break;
            default: r = v; break; /* floor/ceil/round of an int */
            }
            out[j].i = r;
        }
        wrap_i(out, len, n->dtype);
        return ST_OK;
    }
    const slot *x = as_f(b, n->a, b->tmp);
#define UF(EXPR)                                                            \
    for (int j = 0; j < len; j++) {                                         \
        double v = x[j].f;                                                  \
        out[j].f = (EXPR);                                                  \
    }                                                                       \
    break
    switch (n->op) {
    case ST_OP_NEG: UF(-v);
    case ST_OP_EXP: UF(exp(v));
    case ST_OP_LOG: UF(log(v));
    case ST_OP_SQRT: UF(sqrt(v));
    case ST_OP_RSQRT: UF(1.0 / sqrt(v));
    case ST_OP_TANH: UF(tanh(v));
    case ST_OP_SIGMOID: UF(1.0 / (1.0 + exp(-v)));
    case ST_OP_RELU: UF(isnan(v) ? v : (v > 0 ? v : 0.0));
    case ST_OP_ERF: UF(erf(v));
    case ST_OP_ABS: UF(fabs(v));
    case ST_OP_SIN: UF(sin(v));
    case ST_OP_COS: UF(cos(v));
    case ST_OP_RECIPROCAL: UF(1.0 / v);
    case ST_OP_FLOOR: UF(floor(v));
    case ST_OP_CEIL: UF(ceil(v));
    case ST_OP_ROUND: UF(nearbyint(v));
    case ST_OP_SIGN: UF((double)((v > 0) - (v < 0)));
    default:
        return st_err(ST_ERR_RUNTIME, "interp: unsupported unary op %d",
                      n->op);
    }
#undef UF
    if (isf(n->dtype))
        round_f(out, len, n->dtype);
    else
        convert(out, ST_FLOAT64, out, n->dtype, len, false);
    return ST_OK;
}

static inline int64_t ipow(int64_t base, int64_t e)
{
    if (e < 0) /* as torch: 1 and -1 stay on the unit circle, others truncate to 0 */
        return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)base;
    while (e > 0) {
        if (e & 1)
            r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

static inline int64_t idiv_trunc(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return (int64_t)(0 - (uint64_t)x);
    return x / y;
}

static inline int64_t idiv_floor(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return (int64_t)(0 - (uint64_t)x);
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0)))
        q--;
    return q;
}

static inline int64_t irem(int64_t x, int64_t y)
{
    if (y == 0 || y == -1)
        return 0;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

/* ATen's div_floor_floating. */
static inline double fdiv_floor(double a, double b)
{
    if (b == 0)
        return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0)))
        div -= 1.0;
    double fl;
    if (div != 0) {
        fl = floor(div);
        if (div - fl > 0.5)
            fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    return fl;
}

static inline double frem(double a, double b)
{
    double m = fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0)))
        m += b;
    return m;
}

static st_status eval_binary(blk *b, int ni)
{
    const st_knode *n = &b->k->nodes[ni];
    st_dtype adt = b->k->nodes[n->a].dtype, bdt = b->k->nodes[n->b].dtype;
    slot *out = nv(b, ni);
    int len = b->len;
    int op = n->op;
    if (op == ST_OP_LOGICAL_AND || op == ST_OP_LOGICAL_OR) {
        const slot *x = nv(b, n->a), *y = nv(b, n->b);
        bool xf = isf(adt), yf = isf(bdt);
        for (int j = 0; j < len; j++) {
            bool p = truthy(x, xf, j), q = truthy(y, yf, j);
            out[j].i = op == ST_OP_LOGICAL_AND ? (p && q) : (p || q);
        }
        convert(out, ST_BOOL, out, n->dtype, len, false);
        return ST_OK;
    }
    bool cmp = op >= ST_OP_EQ && op <= ST_OP_GE;
    bool fdom = isf(adt) || isf(bdt) || (!cmp && isf(n->dtype));
    if (cmp) {
        if (fdom) {
            const slot *x = as_f(b, n->a, b->tmp);
            const slot *y = as_f(b, n->b, b->tmp + BLK);
#define CMPL(OPR)                                                           \
    for (int j = 0; j < len; j++)                                           \
        out[j].i = x[j].f OPR y[j].f;                                       \
    break
            switch (op) {
            case ST_OP_EQ: CMPL(==);
            case ST_OP_NE: CMPL(!=);
            case ST_OP_LT: CMPL(<);
            case ST_OP_LE: CMPL(<=);
            case ST_OP_GT: CMPL(>);
            default: CMPL(>=);
            }
#undef CMPL
        } else {
            const slot *x = nv(b, n->a), *y = nv(b, n->b);
#define CMPL(OPR)                                                           \
    for (int j = 0; j < len; j++)                                           \
        out[j].i = x[j].i OPR y[j].i;                                       \
    break
            switch (op) {
            case ST_OP_EQ: CMPL(==);
            case ST_OP_NE: CMPL(!=);
            case ST_OP_LT: CMPL(<);
            case ST_OP_LE: CMPL(<=);
            case ST_OP_GT: CMPL(>);
            default: CMPL(>=);
            }
#undef CMPL
        }
        convert(out, ST_BOOL, out, n->dtype, len, false);
        return ST_OK;
    }
    if (fdom) {
        const slot *x = as_f(b, n->a, b->tmp);
        const slot *y = as_f(b, n->b, b->tmp + BLK);
#define BF(EXPR)                                                            \
    for (int j = 0; j < len; j++) {                                         \
        double p = x[j].f, q = y[j].f;                                      \
        out[j].f = (EXPR);                                                  \
    }                                                                       \
    break
        switch (op) {
        case ST_OP_ADD: BF(p + q);
        case ST_OP_SUB: BF(p - q);
        case ST_OP_MUL: BF(p * q);
        case ST_OP_DIV: BF(p / q);
        case ST_OP_POW: BF(pow(p, q));
        case ST_OP_MAXIMUM: BF(isnan(p) ? p : isnan(q) ? q : (p > q ? p : q));
        case ST_OP_MINIMUM: BF(isnan(p) ? p : isnan(q) ? q : (p < q ? p : q));
        case ST_OP_FLOOR_DIVIDE: BF(fdiv_floor(p, q));
        case ST_OP_REMAINDER: BF(frem(p, q));
        default:
            return st_err(ST_ERR_RUNTIME, "interp: unsupported binary op %d",
                          op);
        }
#undef BF
        if (isf(n->dtype))
            round_f(out, len, n->dtype);
        else
            convert(out, ST_FLOAT64, out, n->dtype, len, false);
        return ST_OK;
    }
    const slot *x = nv(b, n->a), *y = nv(b, n->b);
#define BI(EXPR)                                                            \
    for (int j = 0; j < len; j++) {                                         \
        int64_t p = x[j].i, q = y[j].i;                                     \
        out[j].i = (EXPR);                                                  \
    }                                                                       \
    break
    switch (op) {
    case ST_OP_ADD: BI((int64_t)((uint64_t)p + (uint64_t)q));
    case ST_OP_SUB: BI((int64_t)((uint64_t)p - (uint64_t)q));
    case ST_OP_MUL: BI((int64_t)((uint64_t)p * (uint64_t)q));
    case ST_OP_DIV: BI(idiv_trunc(p, q));
    case ST_OP_POW: BI(ipow(p, q));
    case ST_OP_MAXIMUM: BI(p > q ? p : q);
    case ST_OP_MINIMUM: BI(p < q ? p : q);
    case ST_OP_FLOOR_DIVIDE: BI(idiv_floor(p, q));
    case ST_OP_REMAINDER: BI(irem(p, q));
    default:
        return st_err(ST_ERR_RUNTIME, "interp: unsupported binary op %d", op);
    }
#undef BI
    wrap_i(out, len, n->dtype);
    return ST_OK;
}

static st_status eval_node(blk *b, int ni)
{
    const st_kernel *k = b->k;
    const st_knode *n = &k->nodes[ni];
    slot *out = nv(b, ni);
    int len = b->len;
    switch (n->kind) {
    case ST_KN_LOAD:
        return eval_load(b, ni);
    case ST_KN_PARAM: {
        st_dtype pdt = k->param_dtype[n->buf];
        slot s;
        if (isf(pdt))
            s.f = b->a->params[n->buf].f;
        else
            s.i = b->a->params[n->buf].i;
        convert(&s, pdt, &s, n->dtype, 1, false);
        for (int j = 0; j < len; j++)
            out[j] = s;
        return ST_OK;
    }
    case ST_KN_CONST: {
        slot s;
        if (isf(n->dtype))
            s.f = n->dtype == ST_FLOAT64 ? n->f : (double)(float)n->f;
        else
            s.i = wrapi(n->i, n->dtype);
        for (int j = 0; j < len; j++)
            out[j] = s;
        return ST_OK;
    }
    case ST_KN_UNARY:
        return eval_unary(b, ni);
    case ST_KN_BINARY:
        return eval_binary(b, ni);
    case ST_KN_WHERE: {
        const slot *c = nv(b, n->a);
        bool cf = isf(k->nodes[n->a].dtype);
        if (isf(n->dtype)) {
            const slot *x = as_f(b, n->b, b->tmp);
            const slot *y = as_f(b, n->c, b->tmp + BLK);
            for (int j = 0; j < len; j++)
                out[j].f = truthy(c, cf, j) ? x[j].f : y[j].f;
            round_f(out, len, n->dtype);
        } else {
            const slot *x = as_i(b, n->b, b->tmp);
            const slot *y = as_i(b, n->c, b->tmp + BLK);
            for (int j = 0; j < len; j++)
                out[j].i = truthy(c, cf, j) ? x[j].i : y[j].i;
            wrap_i(out, len, n->dtype);
        }
        return ST_OK;
    }
    case ST_KN_CAST:
        convert(nv(b, n->a), k->nodes[n->a].dtype, out, n->dtype, len, true);
        return ST_OK;
    case ST_KN_INDEX: {
        if (n->i < 0) {
            for (int j = 0; j < len; j++)
                out[j].i = b->lin0 + j;
        } else {
            int d = (int)n->i;
            int64_t c0 = d < b->ndims ? b->p[d] : 0;
            int64_t step = d == b->vd ? 1 : 0;
            for (int j = 0; j < len; j++)
                out[j].i = c0 + step * j;
        }
        if (n->dtype != ST_INT64)
            convert(out, ST_INT64, out, n->dtype, len, false);
        return ST_OK;
    }
    case ST_KN_RAND: {
        uint64_t seed = b->a->rng_seed;
        uint64_t off = b->a->rng_offset + (uint64_t)b->lin0;
        if (n->i == 1) {
            for (int j = 0; j < len; j++)
                out[j].f = st_rand_normal(seed, off + (uint64_t)j);
        } else {
            double top = st_rand_top(n->dtype);
            for (int j = 0; j < len; j++) {
                double u;
                if (n->dtype == ST_FLOAT64) {
                    u = st_rand_uniform(seed, off + (uint64_t)j);
                } else {
                    u = st_rand_uniform_f(seed, b->a->rng_offset,
                                          (uint64_t)b->lin0 + (uint64_t)j);
                    if (u > top)
                        u = top;
                }
                out[j].f = u;
            }
        }
        if (isf(n->dtype))
            round_f(out, len, n->dtype);
        else
            convert(out, ST_FLOAT64, out, n->dtype, len, false);
        return ST_OK;
    }
    case ST_KN_REDUCED:
        return ST_OK; /* filled by the reduction */
    }
    return st_err(ST_ERR_RUNTIME, "interp: bad node kind %d", (int)n->kind);
}

static st_status eval_list(blk *b, const int *list, int n)
{
    for (int i = 0; i < n; i++) {
        st_status s = eval_node(b, list[i]);
        if (s != ST_OK)
            return s;
    }
    return ST_OK;
}

/* Offsets of the block's first point over dims [0, noff), strides along vd. */
static void blk_offsets(blk *b)
{
    const st_kargs *a = b->a;
    for (int i = 0; i < b->k->nbufs; i++) {
        int64_t o = 0;
        for (int d = 0; d < b->noff; d++)
            o += b->p[d] * a->bufs[i].strides[d];
        b->boff[i] = o;
        b->vstr[i] = b->vd >= 0 ? a->bufs[i].strides[b->vd] : 0;
    }
}

/* One element of an accumulating store: *p (dtype t) += v, where v is
 * already converted to t's representation (double for floats, int64 for
 * ints; bool accumulates as a logical or). */
static void acc_one(char *p, st_dtype t, slot v)
{
    slot r;
    if (isf(t)) {
        r.f = read_f(p, t) + v.f;
        store_strided(p, 0, t, &r, ST_FLOAT64, 1);
    } else {
        r.i = t == ST_BOOL ? (read_i(p, t) != 0 || v.i != 0)
                           : (int64_t)((uint64_t)read_i(p, t) + (uint64_t)v.i);
        store_strided(p, 0, t, &r, ST_INT64, 1);
    }
}

/* An indexed and/or accumulating store of the block: every index is
 * bounds-checked before anything of the block is written. */
static st_status store_scatter(blk *b, int s)
{
    const st_kernel *k = b->k;
    int bi = k->stores[s].buf, ni = k->stores[s].node;
    st_dtype dt = k->bufs[bi].dtype;
    size_t isz = st_dtype_size(dt);
    const st_karg_buf *ab = &b->a->bufs[bi];
    char *base = ab->data + (ptrdiff_t)isz * b->boff[bi];
    const slot *idx = NULL;
    if (k->stores[s].indexed) {
        idx = as_i(b, k->stores[s].idx_node, b->tmp);
        for (int j = 0; j < b->len; j++)
            if (idx[j].i < 0 || idx[j].i >= ab->idx_size)
                return st_err(ST_ERR_INDEX,
                              "index %lld is out of bounds for dimension %d "
                              "with size %lld", (long long)idx[j].i,
                              k->stores[s].idx_dim, (long long)ab->idx_size);
    }
    /* the values in the buffer's dtype (rounded as a store would) */
    slot *cv = b->tmp + BLK;
    convert(nv(b, ni), k->nodes[ni].dtype, cv, dt, b->len, true);
    for (int j = 0; j < b->len; j++) {
        int64_t off = j * b->vstr[bi];
        if (idx)
            off += idx[j].i * ab->idx_stride;
        char *p = base + (ptrdiff_t)isz * off;
        if (k->stores[s].accumulate)
            acc_one(p, dt, cv[j]);
        else
            store_strided(p, 0, dt, &cv[j], isf(dt) ? ST_FLOAT64 : ST_INT64,
                          1);
    }
    return ST_OK;
}

static st_status do_stores(blk *b, const bool *only)
{
    const st_kernel *k = b->k;
    for (int s = 0; s < k->nstores; s++) {
        int bi = k->stores[s].buf, ni = k->stores[s].node;
        if (only && !only[s])
            continue;
        if (k->stores[s].indexed || k->stores[s].accumulate) {
            st_status st = store_scatter(b, s);
            if (st != ST_OK)
                return st;
            continue;
        }
        st_dtype dt = k->bufs[bi].dtype;
        char *base = b->a->bufs[bi].data +
                     (ptrdiff_t)st_dtype_size(dt) * b->boff[bi];
        store_strided(base, b->vstr[bi], dt, nv(b, ni), k->nodes[ni].dtype,
                      b->len);
    }
    return ST_OK;
}

/* ---- dim collapsing: merges adjacent dims of [lo, hi) that every buffer
 * walks contiguously, and drops size-1 dims. Writes the new dims at
 * position `at` of (shape, strides); returns how many. Sizes are >= 1. */
static int collapse_range(const st_kargs *in, int nbufs, int lo, int hi,
                          st_kargs *out, int at)
{
    int n = 0;
    for (int d = lo; d < hi; d++) {
        if (in->shape[d] == 1)
            continue;
        bool merge = n > 0;
        for (int i = 0; merge && i < nbufs; i++)
            if (out->bufs[i].strides[at + n - 1] !=
                in->bufs[i].strides[d] * in->shape[d])
                merge = false;
        if (merge) {
            out->shape[at + n - 1] *= in->shape[d];
            for (int i = 0; i < nbufs; i++)
                out->bufs[i].strides[at + n - 1] = in->bufs[i].strides[d];
        } else {
            out->shape[at + n] = in->shape[d];
            for (int i = 0; i < nbufs; i++)
                out->bufs[i].strides[at + n] = in->bufs[i].strides[d];
            n++;
        }
    }
    return n;
}

static st_status check_shape(const st_kernel *k, const st_kargs *a,
                             bool *empty)
{
    *empty = false;
    for (int d = 0; d < k->rank; d++) {
        if (a->shape[d] < 0)
            return st_err(ST_ERR_VALUE, "kernel %s: negative size %lld at "
                          "dim %d", k->name, (long long)a->shape[d], d);
        if (a->shape[d] == 0)
            *empty = true;
    }
    return ST_OK;
}

/* ---- ELEMENTWISE ---- */

static st_status run_elementwise(const st_kernel *k, const kinfo *ki,
                                 const st_kargs *args, slot *vals,
                                 slot *tmp)
{
    bool empty;
    st_status s = check_shape(k, args, &empty);
    if (s != ST_OK || empty)
        return s;
    st_kargs lk = *args;
    int rank = k->rank;
    if (!ki->index_dims)
        rank = collapse_range(args, k->nbufs, 0, k->rank, &lk, 0);
    blk b = {.k = k, .a = &lk, .v = vals, .tmp = tmp, .ndims = rank};
    int64_t inner = rank > 0 ? lk.shape[rank - 1] : 1;
    int64_t outer = 1;
    for (int d = 0; d < rank - 1; d++)
        outer *= lk.shape[d];
    b.vd = rank - 1;
    b.noff = rank;
    memset(b.p, 0, sizeof b.p);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j0 = 0; j0 < inner; j0 += BLK) {
            if (rank > 0)
                b.p[rank - 1] = j0;
            b.len = (int)(inner - j0 < BLK ? inner - j0 : BLK);
            b.lin0 = o * inner + j0;
            blk_offsets(&b);
            s = eval_list(&b, ki->list[0], ki->n[0]);
            if (s != ST_OK)
                return s;
            s = do_stores(&b, NULL);
            if (s != ST_OK)
                return s;
        }
        if (rank > 0)
            b.p[rank - 1] = 0;
        for (int d = rank - 2; d >= 0; d--) {
            if (++b.p[d] < lk.shape[d])
                break;
            b.p[d] = 0;
        }
    }
    return ST_OK;
}

/* ---- REDUCE ---- */

typedef struct {
    bool f;           /* accumulating doubles (else int64) */
    double fa;
    int64_t ia;
    int64_t arg;      /* argmax/argmin: linear position */
    bool started;
} acc_t;

static void acc_init(acc_t *c, st_reduce_op op, bool f)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    if (op == ST_RED_PROD) {
        c->fa = 1;
        c->ia = 1;
    }
}

static void acc_add(acc_t *c, st_reduce_op op, const slot *x, int len,
                    int64_t pos0)
{
    if (c->f) {
        switch (op) {
        case ST_RED_SUM:
        case ST_RED_MEAN:
            for (int j = 0; j < len; j++)
                c->fa += x[j].f;
            break;
        case ST_RED_PROD:
            for (int j = 0; j < len; j++)
                c->fa *= x[j].f;
            break;
        case ST_RED_MAX:
        case ST_RED_MIN:
            for (int j = 0; j < len; j++) {
                double v = x[j].f;
                if (!c->started) {
                    c->fa = v;
                    c->started = true;
                } else if (isnan(v) ||
                           (op == ST_RED_MAX ? v > c->fa : v < c->fa)) {
                    c->fa = v;
                }
            }
            break;
        case ST_RED_ARGMAX:
        case ST_RED_ARGMIN:
            for (int j = 0; j < len; j++) {
                double v = x[j].f;
                if (!c->started) {
                    c->fa = v;
                    c->arg = pos0 + j;
                    c->started = true;
                } else if (!isnan(c->fa) &&
                           (isnan(v) ||
                            (op == ST_RED_ARGMAX ? v > c->fa : v < c->fa))) {
                    c->fa = v;
                    c->arg = pos0 + j;
                }
            }
            break;
        }
    } else {
        switch (op) {
        case ST_RED_SUM:
        case ST_RED_MEAN:
            for (int j = 0; j < len; j++)
                c->ia = (int64_t)((uint64_t)c->ia + (uint64_t)x[j].i);
            break;
        case ST_RED_PROD:
            for (int j = 0; j < len; j++)
                c->ia = (int64_t)((uint64_t)c->ia * (uint64_t)x[j].i);
            break;
        case ST_RED_MAX:
        case ST_RED_MIN:
        case ST_RED_ARGMAX:
        case ST_RED_ARGMIN: {
            bool mx = op == ST_RED_MAX || op == ST_RED_ARGMAX;
            for (int j = 0; j < len; j++) {
                int64_t v = x[j].i;
                if (!c->started || (mx ? v > c->ia : v < c->ia)) {
                    c->ia = v;
                    c->arg = pos0 + j;
                    c->started = true;
                }
            }
            break;
        }
        }
    }
}

/* Result into *r, of the representation given by *rf. */
static void acc_result(const acc_t *c, st_reduce_op op, int64_t count,
                       slot *r, bool *rf)
{
    switch (op) {
    case ST_RED_ARGMAX:
    case ST_RED_ARGMIN:
        r->i = c->arg;
        *rf = false;
        return;
    case ST_RED_MEAN:
        r->f = (c->f ? c->fa : (double)c->ia) / (double)count;
        *rf = true;
        return;
    default:
        if (c->f)
            r->f = c->fa;
        else
            r->i = c->ia;
        *rf = c->f;
        return;
    }
}

static const char *red_opname(st_reduce_op op)
{
    switch (op) {
    case ST_RED_MAX: return "amax";
    case ST_RED_MIN: return "amin";
    case ST_RED_ARGMAX: return "argmax";
    case ST_RED_ARGMIN: return "argmin";
    default: return "reduce";
    }
}

/* Fills the REDUCED nodes of reductions < upto with the outer point's
 * results res[i] (constant over len entries). */
static void fill_reduced_const(blk *b, const kinfo *ki, int upto,
                               const slot *res, const bool *resf, int len)
{
    const st_kernel *k = b->k;
    for (int t = 0; t < ki->nreduced; t++) {
        int ni = ki->reduced[t];
        int ri = (int)k->nodes[ni].i;
        if (ri >= upto)
            continue;
        slot v;
        convert(&res[ri], resf[ri] ? ST_FLOAT64 : ST_INT64, &v,
                k->nodes[ni].dtype, 1, false);
        slot *out = nv(b, ni);
        for (int j = 0; j < len; j++)
            out[j] = v;
    }
}

/* One pass over the row of the outer point q (coordinates q[0..ro), outer
 * linear index qlin): evaluates list over the trailing nr dims of lk in
 * blocks; accumulates node src into c, or (c NULL) performs the stores. */
static st_status row_pass(const st_kernel *k, const kinfo *ki, int pass,
                          const st_kargs *lk, int ro, int nr,
                          const int64_t *q, int64_t qlin, int64_t R,
                          slot *vals, slot *tmp, const slot *res,
                          const bool *resf, acc_t *c)
{
    int rank = ro + nr;
    blk b = {.k = k, .a = lk, .v = vals, .tmp = tmp, .ndims = rank,
             .noff = rank, .vd = nr > 0 ? rank - 1 : -1};
    memcpy(b.p, q, sizeof(int64_t) * (size_t)ro);
    for (int d = ro; d < rank; d++)
        b.p[d] = 0;
    int64_t inner = nr > 0 ? lk->shape[rank - 1] : 1;
    int64_t nouter = R / inner;
    fill_reduced_const(&b, ki, pass, res, resf,
                       (int)(inner < BLK ? inner : BLK));
    const int *list = ki->list[pass];
    int nl = ki->n[pass];
    int64_t pos = 0;
    for (int64_t o = 0; o < nouter; o++) {
        for (int64_t j0 = 0; j0 < inner; j0 += BLK) {
            if (nr > 0)
                b.p[rank - 1] = j0;
            b.len = (int)(inner - j0 < BLK ? inner - j0 : BLK);
            b.lin0 = qlin * R + pos;
            blk_offsets(&b);
            st_status s = eval_list(&b, list, nl);
            if (s != ST_OK)
                return s;
            if (c) {
                acc_add(c, k->reduce[pass].op,
                        nv(&b, k->reduce[pass].src), b.len, pos);
            } else {
                s = do_stores(&b, NULL);
                if (s != ST_OK)
                    return s;
            }
            pos += b.len;
        }
        if (nr > 0)
            b.p[rank - 1] = 0;
        for (int d = rank - 2; d >= ro; d--) {
            if (++b.p[d] < lk->shape[d])
                break;
            b.p[d] = 0;
        }
    }
    return ST_OK;
}

/* REDUCE: for every outer point the reductions run in sequence (pass p
 * reduces reduce[p].src with the results of reductions < p as constants),
 * then the epilogue runs per point of the row (final_per_point) or per
 * outer point (in blocks along the innermost outer dim). */
static st_status run_reduce(const st_kernel *k, const kinfo *ki,
                            const st_kargs *args, slot *vals, slot *tmp)
{
    bool empty;
    st_status s = check_shape(k, args, &empty);
    if (s != ST_OK)
        return s;
    int nred_ops = ki->nreduce;
    int ro = k->rank - k->nred;
    int64_t R = 1, O = 1;
    for (int d = ro; d < k->rank; d++)
        R *= args->shape[d];
    for (int d = 0; d < ro; d++)
        O *= args->shape[d];
    for (int r = 0; r < nred_ops; r++) {
        st_reduce_op op = k->reduce[r].op;
        if (R == 0 && O > 0 && op != ST_RED_SUM && op != ST_RED_MEAN &&
            op != ST_RED_PROD)
            return st_err(ST_ERR_RUNTIME, "%s(): Expected reduction dim to "
                          "have non-zero size.", red_opname(op));
    }
    if (O == 0)
        return ST_OK;
    st_kargs lk = *args;
    int nro = ro, nr = k->nred;
    if (!ki->index_dims && R > 0) {
        /* Collapse outer and reduced dims separately. */
        nro = collapse_range(args, k->nbufs, 0, ro, &lk, 0);
        nr = collapse_range(args, k->nbufs, ro, k->rank, &lk, nro);
    }
    /* results of the block's outer points: res[r * BLK + j] */
    slot res[ST_K_MAX_REDUCE * BLK];
    bool resf[ST_K_MAX_REDUCE * BLK];
    blk b = {.k = k, .a = &lk, .v = vals, .tmp = tmp, .ndims = nro,
             .noff = nro, .vd = nro - 1};
    memset(b.p, 0, sizeof b.p);
    int64_t inner = nro > 0 ? lk.shape[nro - 1] : 1;
    int64_t outer = O / inner;
    int64_t q[ST_MAX_DIMS];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j0 = 0; j0 < inner; j0 += BLK) {
            if (nro > 0)
                b.p[nro - 1] = j0;
            b.len = (int)(inner - j0 < BLK ? inner - j0 : BLK);
            b.lin0 = o * inner + j0;
            memcpy(q, b.p, sizeof q);
            for (int j = 0; j < b.len; j++) {
                if (nro > 0)
                    q[nro - 1] = j0 + j;
                slot pr[ST_K_MAX_REDUCE];
                bool pf[ST_K_MAX_REDUCE];
                for (int r = 0; r < nred_ops; r++) {
                    st_reduce_op op = k->reduce[r].op;
                    acc_t c;
                    acc_init(&c, op, isf(k->nodes[k->reduce[r].src].dtype));
                    if (R > 0) {
                        s = row_pass(k, ki, r, &lk, nro, nr, q, b.lin0 + j, R,
                                     vals, tmp, pr, pf, &c);
                        if (s != ST_OK)
                            return s;
                    }
                    acc_result(&c, op, R, &pr[r], &pf[r]);
                    res[r * BLK + j] = pr[r];
                    resf[r * BLK + j] = pf[r];
                }
                if (k->final_per_point && R > 0) {
                    s = row_pass(k, ki, nred_ops, &lk, nro, nr, q,
                                 b.lin0 + j, R, vals, tmp, pr, pf, NULL);
                    if (s != ST_OK)
                        return s;
                }
            }
            /* a per-point epilogue ran in the row pass; with an empty row
             * its row-constant stores are made here, per outer point */
            bool empty_row = k->final_per_point && R == 0 && ki->olist;
            if (k->final_per_point && !empty_row)
                continue;
            for (int t = 0; t < ki->nreduced; t++) {
                int ni = ki->reduced[t];
                int ri = (int)k->nodes[ni].i;
                for (int j = 0; j < b.len; j++)
                    convert(&res[ri * BLK + j],
                            resf[ri * BLK + j] ? ST_FLOAT64 : ST_INT64,
                            &nv(&b, ni)[j], k->nodes[ni].dtype, 1, false);
            }
            blk_offsets(&b);
            s = empty_row ? eval_list(&b, ki->olist, ki->on)
                          : eval_list(&b, ki->list[nred_ops], ki->n[nred_ops]);
            if (s != ST_OK)
                return s;
            s = do_stores(&b, empty_row ? ki->ostore : NULL);
            if (s != ST_OK)
                return s;
        }
        if (nro > 0)
            b.p[nro - 1] = 0;
        for (int d = nro - 2; d >= 0; d--) {
            if (++b.p[d] < lk.shape[d])
                break;
            b.p[d] = 0;
        }
    }
    return ST_OK;
}

/* ---- MATMUL ---- */

typedef enum { ACC_FLOAT, ACC_DOUBLE, ACC_INT } acc_kind;

/* Reads the [rows x cols] operand at base with strides (rs, cs) into a
 * contiguous array of the accumulation type. */
static void pack(const char *base, st_dtype t, int64_t rows, int64_t cols,
                 int64_t rs, int64_t cs, acc_kind ak, void *dst)
{
    size_t isz = st_dtype_size(t);
    for (int64_t r = 0; r < rows; r++) {
        const char *row = base + (ptrdiff_t)isz * r * rs;
        if (ak == ACC_FLOAT) {
            float *d = (float *)dst + r * cols;
            if (t == ST_FLOAT32 && cs == 1)
                memcpy(d, row, (size_t)cols * sizeof(float));
            else
                for (int64_t c = 0; c < cols; c++)
                    d[c] = (float)read_f(row + (ptrdiff_t)isz * c * cs, t);
        } else if (ak == ACC_DOUBLE) {
            double *d = (double *)dst + r * cols;
            for (int64_t c = 0; c < cols; c++) {
                const char *p = row + (ptrdiff_t)isz * c * cs;
                d[c] = isf(t) ? read_f(p, t) : (double)read_i(p, t);
            }
        } else {
            int64_t *d = (int64_t *)dst + r * cols;
            for (int64_t c = 0; c < cols; c++) {
                const char *p = row + (ptrdiff_t)isz * c * cs;
                d[c] = isf(t) ? f2i64(read_f(p, t)) : read_i(p, t);
            }
        }
    }
}

static void mm_float(const float *restrict A, const float *restrict B,
                     float *restrict C, int64_t M, int64_t N, int64_t K)
{
    for (int64_t m = 0; m < M; m++) {
        float *restrict c = C + m * N;
        for (int64_t n = 0; n < N; n++)
            c[n] = 0;
        for (int64_t kk = 0; kk < K; kk++) {
            float av = A[m * K + kk];
            const float *restrict bb = B + kk * N;
            int64_t n = 0;
            /* fixed-width chunks: the SLP vectorizer of -O2 packs them */
            for (; n + 8 <= N; n += 8) {
                c[n + 0] += av * bb[n + 0];
                c[n + 1] += av * bb[n + 1];
                c[n + 2] += av * bb[n + 2];
                c[n + 3] += av * bb[n + 3];
                c[n + 4] += av * bb[n + 4];
                c[n + 5] += av * bb[n + 5];
                c[n + 6] += av * bb[n + 6];
                c[n + 7] += av * bb[n + 7];
            }
            for (; n < N; n++)
                c[n] += av * bb[n];
        }
    }
}

static void mm_double(const double *restrict A, const double *restrict B,
                      double *restrict C, int64_t M, int64_t N, int64_t K)
{
    for (int64_t m = 0; m < M; m++) {
        double *restrict c = C + m * N;
        for (int64_t n = 0; n < N; n++)
            c[n] = 0;
        for (int64_t kk = 0; kk < K; kk++) {
            double av = A[m * K + kk];
            const double *restrict bb = B + kk * N;
            for (int64_t n = 0; n < N; n++)
                c[n] += av * bb[n];
        }
    }
}

static void mm_int(const int64_t *restrict A, const int64_t *restrict B,
                   int64_t *restrict C, int64_t M, int64_t N, int64_t K)
{
    for (int64_t m = 0; m < M; m++) {
        uint64_t *restrict c = (uint64_t *)(C + m * N);
        for (int64_t n = 0; n < N; n++)
            c[n] = 0;
        for (int64_t kk = 0; kk < K; kk++) {
            uint64_t av = (uint64_t)A[m * K + kk];
            const int64_t *restrict bb = B + kk * N;
            for (int64_t n = 0; n < N; n++)
                c[n] += av * (uint64_t)bb[n];
        }
    }
}

/* The epilogue of row m of a matmul with stores: REDUCED = the products
 * row[0..N) (of dtype rdt, converted exactly to each REDUCED node's dtype),
 * evaluated in blocks along N; p holds the batch coordinates. */
static st_status mm_epilogue(const st_kernel *k, const kinfo *ki,
                             const st_kargs *args, slot *vals, slot *tmp,
                             int64_t *p, int64_t m, int64_t lin_row,
                             const slot *row, st_dtype rdt, int64_t N)
{
    int nb = k->rank - 3;
    blk b = {.k = k, .a = args, .v = vals, .tmp = tmp, .ndims = k->rank,
             .noff = nb + 2, .vd = nb + 1};
    memcpy(b.p, p, sizeof(int64_t) * (size_t)nb);
    b.p[nb] = m;
    b.p[nb + 2] = 0;
    for (int64_t n0 = 0; n0 < N; n0 += BLK) {
        b.p[nb + 1] = n0;
        b.len = (int)(N - n0 < BLK ? N - n0 : BLK);
        b.lin0 = lin_row + n0;
        for (int t = 0; t < ki->nreduced; t++) {
            int ni = ki->reduced[t];
            convert(row + n0, rdt, nv(&b, ni), k->nodes[ni].dtype, b.len,
                    true);
        }
        blk_offsets(&b);
        st_status s = eval_list(&b, ki->list[0], ki->n[0]);
        if (s == ST_OK)
            s = do_stores(&b, NULL);
        if (s != ST_OK)
            return s;
    }
    return ST_OK;
}

static st_status run_matmul(const st_kernel *k, const kinfo *ki,
                            const st_kargs *args, slot *vals, slot *tmp)
{
    bool empty;
    st_status s = check_shape(k, args, &empty);
    if (s != ST_OK)
        return s;
    int nb = k->rank - 3;
    int64_t M = args->shape[nb], N = args->shape[nb + 1],
            K = args->shape[nb + 2];
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++)
        nbatch *= args->shape[d];
    if (nbatch == 0 || M == 0 || N == 0)
        return ST_OK;
    bool epi = k->nstores > 0;
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype,
             tc = epi ? ta : k->bufs[2].dtype;
    acc_kind ak;
    if (!isf(ta) && !isf(tb))
        ak = ACC_INT;
    else if (ta == ST_FLOAT64 || tb == ST_FLOAT64 || tc == ST_FLOAT64)
        ak = ACC_DOUBLE;
    else
        ak = ACC_FLOAT;
    size_t esz = ak == ACC_FLOAT ? sizeof(float) : 8;
    void *pa = malloc(esz * (size_t)(M * K + 1));
    void *pb = malloc(esz * (size_t)(K * N + 1));
    void *pc = malloc(esz * (size_t)(M * N));
    slot *row = malloc(sizeof(slot) * (size_t)N);
    if (!pa || !pb || !pc || !row) {
        free(pa);
        free(pb);
        free(pc);
        free(row);
        return st_err(ST_ERR_MEMORY, "interp: out of memory in matmul "
                      "%lldx%lldx%lld", (long long)M, (long long)N,
                      (long long)K);
    }
    const st_karg_buf *A = &args->bufs[0], *B = &args->bufs[1],
                      *C = &args->bufs[epi ? 0 : 2];
    int64_t p[ST_MAX_DIMS] = {0};
    st_status st = ST_OK;
    for (int64_t bi = 0; bi < nbatch && st == ST_OK; bi++) {
        int64_t oa = 0, ob = 0, oc = 0;
        for (int d = 0; d < nb; d++) {
            oa += p[d] * A->strides[d];
            ob += p[d] * B->strides[d];
            oc += p[d] * C->strides[d];
        }
        const char *abase = A->data + (ptrdiff_t)st_dtype_size(ta) * oa;
        const char *bbase = B->data + (ptrdiff_t)st_dtype_size(tb) * ob;
        char *cbase = C->data + (ptrdiff_t)st_dtype_size(tc) * oc;
        pack(abase, ta, M, K, A->strides[nb], A->strides[nb + 2], ak, pa);
        pack(bbase, tb, K, N, B->strides[nb + 2], B->strides[nb + 1], ak,
             pb);
        if (ak == ACC_FLOAT)
            mm_float(pa, pb, pc, M, N, K);
        else if (ak == ACC_DOUBLE)
            mm_double(pa, pb, pc, M, N, K);
        else
            mm_int(pa, pb, pc, M, N, K);
        for (int64_t m = 0; m < M; m++) {
            st_dtype rdt;
            if (ak == ACC_FLOAT) {
                const float *cr = (const float *)pc + m * N;
                for (int64_t n = 0; n < N; n++)
                    row[n].f = cr[n];
                rdt = ST_FLOAT32;
            } else if (ak == ACC_DOUBLE) {
                const double *cr = (const double *)pc + m * N;
                for (int64_t n = 0; n < N; n++)
                    row[n].f = cr[n];
                rdt = ST_FLOAT64;
            } else {
                const int64_t *cr = (const int64_t *)pc + m * N;
                for (int64_t n = 0; n < N; n++)
                    row[n].i = cr[n];
                rdt = ST_INT64;
            }
            if (epi) {
                st = mm_epilogue(k, ki, args, vals, tmp, p, m,
                                 (bi * M + m) * N, row, rdt, N);
                if (st != ST_OK)
                    break;
                continue;
            }
            char *crow = cbase + (ptrdiff_t)st_dtype_size(tc) * m *
                                     C->strides[nb];
            for (int64_t n0 = 0; n0 < N; n0 += BLK) {
                int len = (int)(N - n0 < BLK ? N - n0 : BLK);
                store_strided(crow + (ptrdiff_t)st_dtype_size(tc) * n0 *
                                         C->strides[nb + 1],
                              C->strides[nb + 1], tc, row + n0, rdt, len);
            }
        }
        for (int d = nb - 1; d >= 0; d--) {
            if (++p[d] < args->shape[d])
                break;
            p[d] = 0;
        }
    }
    free(pa);
    free(pb);
    free(pc);
    free(row);
    return st;
}

/* ---- compile: validation and evaluation lists ---- */

static int node_operands(const st_knode *n, int ops[3])
{
    switch (n->kind) {
    case ST_KN_LOAD:
        if (n->idx_dim >= 0) {
            ops[0] = n->a;
            return 1;
        }
        return 0;
    case ST_KN_UNARY:
    case ST_KN_CAST:
        ops[0] = n->a;
        return 1;
    case ST_KN_BINARY:
        ops[0] = n->a;
        ops[1] = n->b;
        return 2;
    case ST_KN_WHERE:
        ops[0] = n->a;
        ops[1] = n->b;
        ops[2] = n->c;
        return 3;
    default:
        return 0;
    }
}

static st_status validate(const st_kernel *k, int idx)
{
    return st_kernel_verify(k, idx, "interp");
}

/* Nodes needed by roots (in order), skipping REDUCED nodes. */
static int *needed(const st_kernel *k, const int *roots, int nroots,
                   int *count)
{
    char *need = calloc((size_t)k->nnodes + 1, 1);
    int *list = malloc(sizeof(int) * ((size_t)k->nnodes + 1));
    if (!need || !list) {
        free(need);
        free(list);
        return NULL;
    }
    for (int r = 0; r < nroots; r++)
        need[roots[r]] = 1;
    for (int i = k->nnodes - 1; i >= 0; i--) {
        if (!need[i])
            continue;
        int ops[3];
        int no = node_operands(&k->nodes[i], ops);
        for (int o = 0; o < no; o++)
            need[ops[o]] = 1;
    }
    int n = 0;
    for (int i = 0; i < k->nnodes; i++)
        if (need[i] && k->nodes[i].kind != ST_KN_REDUCED)
            list[n++] = i;
    free(need);
    *count = n;
    return list;
}

static void kinfo_free(kinfo *ki)
{
    for (int p = 0; p <= ST_K_MAX_REDUCE; p++)
        free(ki->list[p]);
    free(ki->olist);
    free(ki->reduced);
}

static st_status kinfo_build(const st_kernel *k, kinfo *ki)
{
    memset(ki, 0, sizeof *ki);
    if (k->kind == ST_K_VIEW)
        return ST_OK;
    int roots[2 * ST_K_MAX_STORES], nroots = 0;
    for (int s = 0; s < k->nstores; s++) {
        roots[nroots++] = k->stores[s].node;
        if (k->stores[s].indexed)
            roots[nroots++] = k->stores[s].idx_node;
    }
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].kind == ST_KN_INDEX && k->nodes[i].i >= 0)
            ki->index_dims = true;
    if (k->kind == ST_K_ELEMENTWISE || k->kind == ST_K_MATMUL) {
        ki->list[0] = needed(k, roots, nroots, &ki->n[0]);
        ki->reduced = malloc(sizeof(int) * ((size_t)k->nnodes + 1));
        if (!ki->list[0] || !ki->reduced)
            return st_err(ST_ERR_MEMORY, "interp: out of memory");
        for (int i = 0; i < k->nnodes; i++)
            if (k->nodes[i].kind == ST_KN_REDUCED)
                ki->reduced[ki->nreduced++] = i;
        return ST_OK;
    }
    int nr = k->nreduce < 1 ? 1 : k->nreduce;
    ki->nreduce = nr;
    for (int p = 0; p < nr; p++) {
        ki->list[p] = needed(k, &k->reduce[p].src, 1, &ki->n[p]);
        if (!ki->list[p])
            return st_err(ST_ERR_MEMORY, "interp: out of memory");
    }
    ki->list[nr] = needed(k, roots, nroots, &ki->n[nr]);
    if (st_kernel_outer_stores(k, ki->ostore)) {
        int oroots[ST_K_MAX_STORES], no = 0;
        for (int s = 0; s < k->nstores; s++)
            if (ki->ostore[s])
                oroots[no++] = k->stores[s].node;
        ki->olist = needed(k, oroots, no, &ki->on);
        if (!ki->olist)
            return st_err(ST_ERR_MEMORY, "interp: out of memory");
    }
    ki->reduced = malloc(sizeof(int) * ((size_t)k->nnodes + 1));
    if (!ki->list[nr] || !ki->reduced)
        return st_err(ST_ERR_MEMORY, "interp: out of memory");
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].kind == ST_KN_REDUCED)
            ki->reduced[ki->nreduced++] = i;
    /* A reduction's source may use only the results of earlier ones:
     * dep[i] = 1 + the highest reduction index node i depends on. */
    int *dep = calloc((size_t)k->nnodes + 1, sizeof *dep);
    if (!dep)
        return st_err(ST_ERR_MEMORY, "interp: out of memory");
    for (int i = 0; i < k->nnodes; i++) {
        int ops[3];
        int no = node_operands(&k->nodes[i], ops);
        dep[i] = k->nodes[i].kind == ST_KN_REDUCED ? (int)k->nodes[i].i + 1
                                                    : 0;
        for (int o = 0; o < no; o++)
            if (dep[ops[o]] > dep[i])
                dep[i] = dep[ops[o]];
    }
    int badp = -1;
    for (int p = 0; p < nr && badp < 0; p++)
        if (dep[k->reduce[p].src] > p)
            badp = p;
    free(dep);
    if (badp >= 0)
        return st_err(ST_ERR_RUNTIME, "interp: kernel %s: the source n%d of "
                      "reduction %d depends on its own or a later reduction",
                      k->name, k->reduce[badp].src, badp);
    return ST_OK;
}

/* ---- the backend ---- */

static void interp_release(st_backend *be, void *compiled)
{
    ihandle *h = compiled;
    if (!h)
        return;
    for (int i = 0; i < h->n; i++)
        kinfo_free(&h->ki[i]);
    free(h->ki);
    free(h);
}

static void *interp_compile(st_backend *be, const st_kernel *ks, int n)
{
    if (n < 0 || (n > 0 && !ks)) {
        st_err(ST_ERR_VALUE, "interp: bad kernel list");
        return NULL;
    }
    ihandle *h = calloc(1, sizeof *h);
    if (!h) {
        st_err(ST_ERR_MEMORY, "interp: out of memory");
        return NULL;
    }
    h->ks = ks;
    h->n = n;
    h->ki = calloc((size_t)n + 1, sizeof *h->ki);
    if (!h->ki) {
        free(h);
        st_err(ST_ERR_MEMORY, "interp: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (ks[i].kind == ST_K_VIEW)
            continue;
        if (validate(&ks[i], i) != ST_OK ||
            kinfo_build(&ks[i], &h->ki[i]) != ST_OK) {
            interp_release(be, h);
            return NULL;
        }
    }
    return h;
}

static st_status interp_launch(st_backend *be, void *compiled, int index,
                               const st_kargs *args)
{
    ihandle *h = compiled;
    if (!h || index < 0 || index >= h->n)
        return st_err(ST_ERR_INDEX, "interp: kernel index %d out of range",
                      index);
    const st_kernel *k = &h->ks[index];
    const kinfo *ki = &h->ki[index];
    switch (k->kind) {
    case ST_K_VIEW:
        return ST_OK;
    case ST_K_MATMUL:
    case ST_K_ELEMENTWISE:
    case ST_K_REDUCE:
        break;
    default:
        return st_err(ST_ERR_RUNTIME, "interp: bad kernel kind %d",
                      (int)k->kind);
    }
    slot *vals = malloc(sizeof(slot) * BLK * ((size_t)k->nnodes + 3));
    if (!vals)
        return st_err(ST_ERR_MEMORY, "interp: out of memory");
    slot *tmp = vals + (size_t)BLK * (size_t)k->nnodes;
    st_status s = k->kind == ST_K_ELEMENTWISE
                      ? run_elementwise(k, ki, args, vals, tmp)
                  : k->kind == ST_K_MATMUL
                      ? run_matmul(k, ki, args, vals, tmp)
                      : run_reduce(k, ki, args, vals, tmp);
    free(vals);
    return s;
}

static const char *interp_cache_tag(st_backend *be)
{
    return "interp-1";
}

st_backend *st_interp_backend(void)
{
    static st_backend be = {
        .name = "interp",
        .device = ST_DEV_CPU,
        .compile = interp_compile,
        .launch = interp_launch,
        .release = interp_release,
        .cache_tag = interp_cache_tag,
        .impl = NULL,
    };
    return &be;
}
