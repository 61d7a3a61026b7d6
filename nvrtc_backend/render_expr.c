/* render_expr.c - the per-point semantics of the kernel IR as CUDA C
 * statements: value types and dtype conversions, every node kind (loads
 * with bounds checks that set the error record, params, constants,
 * unary/binary/where/cast, INDEX, RAND, REDUCED) and the stores (plain,
 * indexed, accumulating with atomics). Mirrors llvm_backend/codegen_expr.c
 * and runtime/interp.c: float16/bfloat16/float32 nodes hold float (rounded
 * to the dtype only by an explicit cast and by stores), float64 double,
 * integers computed in int64 and wrapped, bool as bool. Also the string
 * builder. Owns: st_nvrtc_sbf, st_nvrtc_sbs, st_nvrtc_pt_*. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_internal.h"

/* ---- string builder ---- */

static bool sb_grow(st_nvrtc_sb *b, size_t add)
{
    if (b->oom)
        return false;
    if (b->n + add + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + add + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void st_nvrtc_sbs(st_nvrtc_sb *b, const char *s)
{
    size_t n = strlen(s);
    if (!sb_grow(b, n))
        return;
    memcpy(b->s + b->n, s, n + 1);
    b->n += n;
}

void st_nvrtc_sbf(st_nvrtc_sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sb_grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

/* ---- types ---- */

bool st_nvrtc_isf(st_dtype t)
{
    return t == ST_FLOAT16 || t == ST_BFLOAT16 || t == ST_FLOAT32 ||
           t == ST_FLOAT64;
}

static bool is32(st_dtype t)
{
    return t == ST_FLOAT16 || t == ST_BFLOAT16 || t == ST_FLOAT32;
}

const char *st_nvrtc_vty(st_dtype t)
{
    switch (t) {
    case ST_BOOL: return "bool";
    case ST_UINT8: return "st_u8";
    case ST_INT8: return "st_i8";
    case ST_INT16: return "st_i16";
    case ST_INT32: return "int";
    case ST_INT64: return "st_i64";
    case ST_FLOAT64: return "double";
    default: return "float";
    }
}

const char *st_nvrtc_mty(st_dtype t)
{
    switch (t) {
    case ST_BOOL: case ST_UINT8: return "st_u8";
    case ST_INT8: return "st_i8";
    case ST_INT16: return "st_i16";
    case ST_INT32: return "int";
    case ST_INT64: return "st_i64";
    case ST_FLOAT16:
    case ST_BFLOAT16: return "st_u16";
    case ST_FLOAT32: return "float";
    default: return "double";
    }
}

#define isf st_nvrtc_isf
#define vty st_nvrtc_vty
#define mty st_nvrtc_mty
#define EX 256
typedef char ex_t[EX];

/* snprintf into an EX-sized expression buffer (a long expression is cut,
 * and the compile then fails loudly rather than the renderer) */
static void xs(char *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void xs(char *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d, EX, fmt, ap);
    va_end(ap);
}

/* memory representation m of dtype t -> value */
static void from_mem(char *d, const char *m, st_dtype t)
{
    switch (t) {
    case ST_BOOL: xs(d, "(%s != 0)", m); break;
    case ST_FLOAT16: xs(d, "st_h2f(%s)", m); break;
    case ST_BFLOAT16: xs(d, "st_b2f(%s)", m); break;
    default: xs(d, "%s", m); break;
    }
}

/* value v of dtype t (already rounded to t) -> memory representation */
static void to_mem(char *d, const char *v, st_dtype t)
{
    switch (t) {
    case ST_BOOL: xs(d, "(st_u8)(%s)", v); break;
    case ST_FLOAT16: xs(d, "st_f2h(%s)", v); break;
    case ST_BFLOAT16: xs(d, "st_f2b(%s)", v); break;
    default: xs(d, "%s", v); break;
    }
}

/* interp's convert: value v of dtype `from` as dtype `to`; exact: round
 * to the destination's own precision (a CAST, a store) */
void st_nvrtc_conv(char *d, const char *v, st_dtype from, st_dtype to,
                   bool exact)
{
    bool ff = isf(from), tf = isf(to);
    if (ff && tf) {
        if (to == ST_FLOAT64) {
            xs(d, from == ST_FLOAT64 ? "%s" : "(double)(%s)", v);
            return;
        }
        ex_t x;
        xs(x, from == ST_FLOAT64 ? "(float)(%s)" : "%s", v);
        if (exact && to == ST_FLOAT16)
            xs(d, "st_rh(%s)", x);
        else if (exact && to == ST_BFLOAT16)
            xs(d, "st_rb(%s)", x);
        else
            xs(d, "%s", x);
        return;
    }
    if (ff) {
        if (to == ST_BOOL)
            xs(d, "((%s) != 0)", v);
        else if (to == ST_INT32 || to == ST_INT64)
            xs(d, "%s((double)(%s))",
                     to == ST_INT32 ? "st_d2i32" : "st_d2i64", v);
        else /* uint8/int8/int16: through int64, wrapped (interp's f2int) */
            xs(d, "(%s)st_d2i64((double)(%s))", vty(to), v);
        return;
    }
    if (tf) {
        const char *t = to == ST_FLOAT64 ? "double" : "float";
        if (exact && to == ST_FLOAT16)
            xs(d, "st_rh((float)(%s))", v);
        else if (exact && to == ST_BFLOAT16)
            xs(d, "st_rb((float)(%s))", v);
        else
            xs(d, "(%s)(%s)", t, v);
        return;
    }
    if (from == to)
        xs(d, "%s", v);
    else if (to == ST_BOOL)
        xs(d, "((%s) != 0)", v);
    else
        xs(d, "(%s)(%s)", vty(to), v);
}

static void as_f(char *d, const char *v, st_dtype t)
{
    st_nvrtc_conv(d, v, t, ST_FLOAT64, false);
}

void st_nvrtc_as_i(char *d, const char *v, st_dtype t)
{
    if (isf(t))
        xs(d, "st_d2i64((double)(%s))", v);
    else
        st_nvrtc_conv(d, v, t, ST_INT64, false);
}
#define as_i st_nvrtc_as_i

static void truthy(char *d, const char *v, st_dtype t)
{
    if (t == ST_BOOL)
        xs(d, "%s", v);
    else
        xs(d, "((%s) != 0)", v);
}

/* float result r computed in float (c32) or double -> node dtype dt */
static void fin(char *d, const char *r, bool c32, st_dtype dt)
{
    if (isf(dt)) {
        if (dt == ST_FLOAT64 || c32)
            xs(d, "%s", r);
        else
            xs(d, "(float)(%s)", r);
        return;
    }
    ex_t x;
    xs(x, c32 ? "(double)(%s)" : "%s", r);
    st_nvrtc_conv(d, x, ST_FLOAT64, dt, false);
}

/* a float/double literal that survives every value (inf, nan, -0) */
static void flit(char *d, double v, bool dbl)
{
    if (dbl) {
        uint64_t u;
        memcpy(&u, &v, 8);
        if (isfinite(v) && !(v == 0 && signbit(v)))
            xs(d, "%.17e", v);
        else
            xs(d, "__longlong_as_double(0x%016llxll)", (unsigned long long)u);
    } else {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        if (isfinite(f) && !(f == 0 && signbit(f)))
            xs(d, "%.9ef", (double)f);
        else
            xs(d, "__int_as_float((int)0x%08xu)", u);
    }
}

/* ---- nodes ---- */

static void need(st_nvrtc_pc *pc, int i);

static void emit(st_nvrtc_pc *pc, int i, const char *expr)
{
    st_nvrtc_sbf(pc->b, "%sconst %s v%d = %s;\n", pc->ind,
                 vty(pc->k->nodes[i].dtype), i, expr);
}

/* m = the memory read of buffer b at the current point (its offset, or
 * through the unravel map) */
static void point_load(char *m, const st_nvrtc_pc *pc, int b)
{
    const st_kernel *k = pc->k;
    st_dtype bdt = k->bufs[b].dtype;
    if (k->bufs[b].unravel > 0)
        xs(m, "((const %s *)a.bufs[%d].data)[st_unravel(%s, a.bufs[%d], %d)]", mty(bdt), b,
           pc->off[b], b, k->bufs[b].unravel);
    else
        xs(m, "((const %s *)a.bufs[%d].data)[%s]", mty(bdt), b, pc->off[b]);
}

void st_nvrtc_pt_preload(st_nvrtc_pc *pc, int b)
{
    ex_t m;
    point_load(m, pc, b);
    st_nvrtc_sbf(pc->b, "%sL%d[j] = %s;\n", pc->ind, b, m);
}

static void emit_load(st_nvrtc_pc *pc, int i)
{
    const st_kernel *k = pc->k;
    const st_knode *n = &k->nodes[i];
    int b = n->buf;
    st_dtype bdt = k->bufs[b].dtype;
    ex_t m, v, c;
    if (n->idx_dim >= 0) {
        need(pc, n->a);
        ex_t x, va;
        xs(va, "v%d", n->a);
        as_i(x, va, k->nodes[n->a].dtype);
        st_nvrtc_sbf(pc->b, "%sconst st_i64 x%d = %s;\n", pc->ind, i, x);
        st_nvrtc_sbf(pc->b, "%sconst bool k%d = st_inb(err, x%d, a.bufs[%d].idx_size, %d);\n",
                     pc->ind, i, i, b, n->idx_dim);
        xs(m, "(k%d ? ((const %s *)a.bufs[%d].data)[%s + x%d * a.bufs[%d].idx_stride] : (%s)0)",
                 i, mty(bdt), b, pc->off[b], i, b, mty(bdt));
    } else {
        pc->loaded |= 1u << b;
        if (pc->vec || (pc->pre & (1u << b)))
            xs(m, "L%d[j]", b);
        else
            point_load(m, pc, b);
    }
    from_mem(v, m, bdt);
    if (n->dtype != bdt) {
        st_nvrtc_conv(c, v, bdt, n->dtype, true);
        emit(pc, i, c);
    } else {
        emit(pc, i, v);
    }
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

static void emit_unary(st_nvrtc_pc *pc, int i)
{
    const st_knode *n = &pc->k->nodes[i];
    st_dtype adt = pc->k->nodes[n->a].dtype, dt = n->dtype;
    ex_t a, r, t, o;
    xs(a, "v%d", n->a);
    if (n->op == ST_OP_CAST) {
        st_nvrtc_conv(o, a, adt, dt, true);
        emit(pc, i, o);
        return;
    }
    if (n->op == ST_OP_LOGICAL_NOT) {
        truthy(t, a, adt);
        xs(r, "!%s", t);
        st_nvrtc_conv(o, r, ST_BOOL, dt, false);
        emit(pc, i, o);
        return;
    }
    if (!isf(adt) && !isf(dt) && unary_int_native(n->op)) {
        ex_t x;
        as_i(x, a, adt);
        st_nvrtc_sbf(pc->b, "%sconst st_i64 u%d = %s;\n", pc->ind, i, x);
        switch (n->op) {
        case ST_OP_NEG: xs(r, "st_ineg(u%d)", i); break;
        case ST_OP_ABS: xs(r, "(u%d < 0 ? st_ineg(u%d) : u%d)", i, i, i); break;
        case ST_OP_RELU: xs(r, "(u%d > 0 ? u%d : 0ll)", i, i); break;
        case ST_OP_SIGN: xs(r, "((st_i64)(u%d > 0) - (st_i64)(u%d < 0))", i, i); break;
        default: xs(r, "u%d", i); break;
        }
        st_nvrtc_conv(o, r, ST_INT64, dt, false);
        emit(pc, i, o);
        return;
    }
    bool c32 = is32(adt) && is32(dt);
    ex_t x;
    if (c32)
        xs(x, "%s", a);
    else
        as_f(x, a, adt);
    const char *s = c32 ? "f" : "", *T = c32 ? "float" : "double";
    st_nvrtc_sbf(pc->b, "%sconst %s u%d = %s;\n", pc->ind, T, i, x);
    switch (n->op) {
    case ST_OP_NEG: xs(r, "(-u%d)", i); break;
    case ST_OP_EXP: xs(r, "exp%s(u%d)", s, i); break;
    case ST_OP_LOG: xs(r, "log%s(u%d)", s, i); break;
    case ST_OP_SQRT: xs(r, "sqrt%s(u%d)", s, i); break;
    case ST_OP_RSQRT: xs(r, "((%s)1 / sqrt%s(u%d))", T, s, i); break;
    case ST_OP_TANH: xs(r, "tanh%s(u%d)", s, i); break;
    case ST_OP_SIGMOID: xs(r, "st_fsigmoid(u%d)", i); break;
    case ST_OP_RELU: xs(r, "st_frelu(u%d)", i); break;
    case ST_OP_ERF: xs(r, "erf%s(u%d)", s, i); break;
    case ST_OP_ABS: xs(r, "fabs%s(u%d)", s, i); break;
    case ST_OP_SIN: xs(r, "sin%s(u%d)", s, i); break;
    case ST_OP_COS: xs(r, "cos%s(u%d)", s, i); break;
    case ST_OP_RECIPROCAL: xs(r, "((%s)1 / u%d)", T, i); break;
    case ST_OP_FLOOR: xs(r, "floor%s(u%d)", s, i); break;
    case ST_OP_CEIL: xs(r, "ceil%s(u%d)", s, i); break;
    case ST_OP_ROUND: xs(r, "rint%s(u%d)", s, i); break;
    case ST_OP_SIGN: xs(r, "st_fsign(u%d)", i); break;
    default:
        snprintf(pc->err, sizeof pc->err, "node %d: unsupported unary op %d", i, n->op);
        xs(r, "u%d", i);
        break;
    }
    fin(o, r, c32, dt);
    emit(pc, i, o);
}

static void emit_binary(st_nvrtc_pc *pc, int i)
{
    const st_kernel *k = pc->k;
    const st_knode *n = &k->nodes[i];
    st_dtype adt = k->nodes[n->a].dtype, bdt = k->nodes[n->b].dtype, dt = n->dtype;
    ex_t a, b, r, o, p, q;
    xs(a, "v%d", n->a);
    xs(b, "v%d", n->b);
    int op = n->op;
    if (op == ST_OP_LOGICAL_AND || op == ST_OP_LOGICAL_OR) {
        truthy(p, a, adt);
        truthy(q, b, bdt);
        xs(r, "(%s %s %s)", p, op == ST_OP_LOGICAL_AND ? "&&" : "||", q);
        st_nvrtc_conv(o, r, ST_BOOL, dt, false);
        emit(pc, i, o);
        return;
    }
    bool cmp = op >= ST_OP_EQ && op <= ST_OP_GE;
    bool fdom = isf(adt) || isf(bdt) || (!cmp && isf(dt));
    static const char *cops[] = {"==", "!=", "<", "<=", ">", ">="};
    if (cmp) {
        if (fdom) {
            bool c32 = is32(adt) && is32(bdt);
            if (c32) {
                xs(p, "%s", a);
                xs(q, "%s", b);
            } else {
                as_f(p, a, adt);
                as_f(q, b, bdt);
            }
        } else {
            as_i(p, a, adt);
            as_i(q, b, bdt);
        }
        xs(r, "(%s %s %s)", p, cops[op - ST_OP_EQ], q);
        st_nvrtc_conv(o, r, ST_BOOL, dt, false);
        emit(pc, i, o);
        return;
    }
    if (fdom) {
        bool c32 = is32(adt) && is32(bdt) && is32(dt);
        if (c32) {
            xs(p, "%s", a);
            xs(q, "%s", b);
        } else {
            as_f(p, a, adt);
            as_f(q, b, bdt);
        }
        const char *T = c32 ? "float" : "double", *s = c32 ? "f" : "";
        st_nvrtc_sbf(pc->b, "%sconst %s p%d = %s, q%d = %s;\n", pc->ind, T, i, p, i, q);
        switch (op) {
        case ST_OP_ADD: xs(r, "(p%d + q%d)", i, i); break;
        case ST_OP_SUB: xs(r, "(p%d - q%d)", i, i); break;
        case ST_OP_MUL: xs(r, "(p%d * q%d)", i, i); break;
        case ST_OP_DIV: xs(r, "(p%d / q%d)", i, i); break;
        case ST_OP_POW: xs(r, "pow%s(p%d, q%d)", s, i, i); break;
        case ST_OP_MAXIMUM: xs(r, "st_fmax(p%d, q%d)", i, i); break;
        case ST_OP_MINIMUM: xs(r, "st_fmin(p%d, q%d)", i, i); break;
        case ST_OP_FLOOR_DIVIDE: xs(r, "st_ffloordiv(p%d, q%d)", i, i); break;
        case ST_OP_REMAINDER: xs(r, "st_frem(p%d, q%d)", i, i); break;
        default:
            snprintf(pc->err, sizeof pc->err, "node %d: unsupported binary op %d", i, op);
            xs(r, "p%d", i);
            break;
        }
        fin(o, r, c32, dt);
        emit(pc, i, o);
        return;
    }
    as_i(p, a, adt);
    as_i(q, b, bdt);
    st_nvrtc_sbf(pc->b, "%sconst st_i64 p%d = %s, q%d = %s;\n", pc->ind, i, p, i, q);
    switch (op) {
    case ST_OP_ADD: xs(r, "st_iadd(p%d, q%d)", i, i); break;
    case ST_OP_SUB: xs(r, "st_isub(p%d, q%d)", i, i); break;
    case ST_OP_MUL: xs(r, "st_imul(p%d, q%d)", i, i); break;
    case ST_OP_DIV: xs(r, "st_idiv(p%d, q%d)", i, i); break;
    case ST_OP_FLOOR_DIVIDE: xs(r, "st_ifloordiv(p%d, q%d)", i, i); break;
    case ST_OP_REMAINDER: xs(r, "st_irem(p%d, q%d)", i, i); break;
    case ST_OP_POW: xs(r, "st_ipow(p%d, q%d)", i, i); break;
    case ST_OP_MAXIMUM: xs(r, "(p%d > q%d ? p%d : q%d)", i, i, i, i); break;
    case ST_OP_MINIMUM: xs(r, "(p%d < q%d ? p%d : q%d)", i, i, i, i); break;
    default:
        snprintf(pc->err, sizeof pc->err, "node %d: unsupported binary op %d", i, op);
        xs(r, "p%d", i);
        break;
    }
    st_nvrtc_conv(o, r, ST_INT64, dt, false);
    emit(pc, i, o);
}

static void emit_rand(st_nvrtc_pc *pc, int i)
{
    const st_knode *n = &pc->k->nodes[i];
    ex_t u, o;
    if (n->i == 1) {
        xs(u, "st_rand_normal(a.rng_seed, a.rng_offset + (st_u64)(%s))", pc->lin);
    } else if (n->dtype == ST_FLOAT64) {
        xs(u, "st_rand_uniform(a.rng_seed, a.rng_offset + (st_u64)(%s))", pc->lin);
    } else {
        xs(u, "st_rand_uniform_f(a.rng_seed, a.rng_offset, (st_u64)(%s), %a)",
                 pc->lin, st_rand_top(n->dtype));
    }
    fin(o, u, false, n->dtype);
    emit(pc, i, o);
}

static void emit_node(st_nvrtc_pc *pc, int i)
{
    const st_kernel *k = pc->k;
    const st_knode *n = &k->nodes[i];
    st_dtype dt = n->dtype;
    ex_t o, x;
    switch (n->kind) {
    case ST_KN_LOAD:
        emit_load(pc, i);
        return;
    case ST_KN_PARAM:
        if (n->buf < 0 || n->buf >= ST_K_MAX_PARAMS) {
            snprintf(pc->err, sizeof pc->err, "node %d: bad param %d", i, n->buf);
            emit(pc, i, "0");
            return;
        }
        if (isf(k->param_dtype[n->buf])) {
            xs(x, "a.params[%d].f", n->buf);
            st_nvrtc_conv(o, x, ST_FLOAT64, dt, false);
        } else {
            xs(x, "a.params[%d].i", n->buf);
            st_nvrtc_conv(o, x, ST_INT64, dt, false);
        }
        emit(pc, i, o);
        return;
    case ST_KN_CONST:
        if (isf(dt))
            flit(o, n->f, dt == ST_FLOAT64);
        else if (dt == ST_BOOL)
            xs(o, "%s", n->i != 0 ? "true" : "false");
        else if (dt == ST_INT32)
            xs(o, "(int)0x%08xu", (uint32_t)(uint64_t)n->i);
        else if (dt != ST_INT64)
            xs(o, "(%s)%lld", vty(dt), (long long)n->i);
        else
            xs(o, "(st_i64)0x%016llxull", (unsigned long long)n->i);
        emit(pc, i, o);
        return;
    case ST_KN_UNARY:
        need(pc, n->a);
        emit_unary(pc, i);
        return;
    case ST_KN_BINARY:
        need(pc, n->a);
        need(pc, n->b);
        emit_binary(pc, i);
        return;
    case ST_KN_WHERE: {
        need(pc, n->a);
        need(pc, n->b);
        need(pc, n->c);
        st_dtype at = k->nodes[n->a].dtype, bt = k->nodes[n->b].dtype,
                 ct = k->nodes[n->c].dtype;
        ex_t c, p, q, r, va, vb, vc;
        xs(va, "v%d", n->a);
        xs(vb, "v%d", n->b);
        xs(vc, "v%d", n->c);
        truthy(c, va, at);
        if (isf(dt)) {
            bool c32 = is32(bt) && is32(ct) && is32(dt);
            if (c32) {
                xs(p, "%s", vb);
                xs(q, "%s", vc);
            } else {
                as_f(p, vb, bt);
                as_f(q, vc, ct);
            }
            xs(r, "(%s ? %s : %s)", c, p, q);
            fin(o, r, c32, dt);
        } else {
            as_i(p, vb, bt);
            as_i(q, vc, ct);
            xs(r, "(%s ? %s : %s)", c, p, q);
            st_nvrtc_conv(o, r, ST_INT64, dt, false);
        }
        emit(pc, i, o);
        return;
    }
    case ST_KN_CAST:
        need(pc, n->a);
        xs(x, "v%d", n->a);
        st_nvrtc_conv(o, x, k->nodes[n->a].dtype, dt, true);
        emit(pc, i, o);
        return;
    case ST_KN_INDEX: {
        const char *c = n->i < 0 ? pc->lin
                        : (n->i < ST_MAX_DIMS && pc->coord[n->i][0]) ? pc->coord[n->i]
                        : "0ll";
        xs(x, "(st_i64)(%s)", c);
        st_nvrtc_conv(o, x, ST_INT64, dt, false);
        emit(pc, i, o);
        return;
    }
    case ST_KN_RAND:
        emit_rand(pc, i);
        return;
    case ST_KN_REDUCED: {
        int r = k->kind == ST_K_MATMUL ? 0 : (int)n->i;
        if (r < 0 || r >= ST_K_MAX_REDUCE || !pc->reduced[r][0]) {
            snprintf(pc->err, sizeof pc->err,
                     "node %d: REDUCED %d used before its reduction", i, r);
            emit(pc, i, "0");
            return;
        }
        st_nvrtc_conv(o, pc->reduced[r], pc->reduced_dt[r], dt, false);
        emit(pc, i, o);
        return;
    }
    }
    snprintf(pc->err, sizeof pc->err, "node %d: bad kind %d", i, (int)n->kind);
    emit(pc, i, "0");
}

static void need(st_nvrtc_pc *pc, int i)
{
    if (i < 0 || i >= pc->k->nnodes) {
        snprintf(pc->err, sizeof pc->err, "operand node %d out of range", i);
        return;
    }
    if (pc->done[i])
        return;
    pc->done[i] = 1;
    emit_node(pc, i);
}

void st_nvrtc_pt_reset(st_nvrtc_pc *pc)
{
    memset(pc->done, 0, (size_t)pc->k->nnodes + 1);
}

void st_nvrtc_pt_node(st_nvrtc_pc *pc, int i)
{
    need(pc, i);
}

/* ---- stores ---- */

static void store_at(st_nvrtc_pc *pc, int b, const char *off, const char *cv,
                     bool accumulate)
{
    st_dtype bdt = pc->k->bufs[b].dtype;
    const char *T = mty(bdt);
    if (pc->vec && !accumulate) {
        ex_t m;
        to_mem(m, cv, bdt);
        st_nvrtc_sbf(pc->b, "%sS%d[j] = %s;\n", pc->ind, b, m);
        return;
    }
    ex_t p;
    xs(p, "((%s *)a.bufs[%d].data + (%s))", T, b, off);
    if (accumulate) {
        switch (bdt) {
        case ST_FLOAT32:
        case ST_FLOAT64:
        case ST_INT32:
            st_nvrtc_sbf(pc->b, "%satomicAdd(%s, %s);\n", pc->ind, p, cv);
            break;
        case ST_INT64:
            st_nvrtc_sbf(pc->b, "%satomicAdd((st_u64 *)%s, (st_u64)(%s));\n", pc->ind, p, cv);
            break;
        case ST_FLOAT16:
        case ST_BFLOAT16:
            st_nvrtc_sbf(pc->b, "%sst_acc_f16(%s, %s, %s);\n", pc->ind, p, cv,
                         bdt == ST_BFLOAT16 ? "true" : "false");
            break;
        case ST_UINT8:
        case ST_INT8:
        case ST_INT16:
            st_nvrtc_sbf(pc->b, "%sst_acc_narrow(%s, (st_i64)(%s), %d);\n", pc->ind,
                         p, cv, (int)st_dtype_size(bdt));
            break;
        default:
            st_nvrtc_sbf(pc->b, "%sst_acc_u8_or(%s, (st_u8)(%s));\n", pc->ind, p, cv);
            break;
        }
        return;
    }
    ex_t m;
    to_mem(m, cv, bdt);
    st_nvrtc_sbf(pc->b, "%s*%s = %s;\n", pc->ind, p, m);
}

void st_nvrtc_pt_store_value(st_nvrtc_pc *pc, int buf, const char *v,
                             st_dtype vdt)
{
    ex_t cv;
    st_nvrtc_conv(cv, v, vdt, pc->k->bufs[buf].dtype, true);
    store_at(pc, buf, pc->off[buf], cv, false);
}

void st_nvrtc_pt_store(st_nvrtc_pc *pc, int s)
{
    const st_kernel *k = pc->k;
    int b = k->stores[s].buf, ni = k->stores[s].node;
    if (b < 0 || b >= k->nbufs || ni < 0 || ni >= k->nnodes) {
        snprintf(pc->err, sizeof pc->err, "store %d: bad buffer or node", s);
        return;
    }
    need(pc, ni);
    ex_t v, cv;
    xs(v, "v%d", ni);
    st_nvrtc_conv(cv, v, k->nodes[ni].dtype, k->bufs[b].dtype, true);
    if (k->stores[s].indexed) {
        int xi = k->stores[s].idx_node;
        need(pc, xi);
        ex_t xv, x, off;
        xs(xv, "v%d", xi);
        as_i(x, xv, k->nodes[xi].dtype);
        st_nvrtc_sbf(pc->b, "%sconst st_i64 y%d = %s;\n", pc->ind, s, x);
        st_nvrtc_sbf(pc->b, "%sif (st_inb(err, y%d, a.bufs[%d].idx_size, %d)) {\n",
                     pc->ind, s, b, k->stores[s].idx_dim);
        xs(off, "%s + y%d * a.bufs[%d].idx_stride", pc->off[b], s, b);
        const char *ind = pc->ind;
        pc->ind = pc->ind2;
        store_at(pc, b, off, cv, k->stores[s].accumulate);
        pc->ind = ind;
        st_nvrtc_sbf(pc->b, "%s}\n", pc->ind);
        return;
    }
    store_at(pc, b, pc->off[b], cv, k->stores[s].accumulate);
}
