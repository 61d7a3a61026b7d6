/* codegen_expr.c - the per-point semantics of the kernel IR in LLVM IR:
 * value types and dtype conversions (float16 and bfloat16 inline, so
 * their loops vectorize; see half_bits_to_f), every node kind (loads with bounds checks,
 * params, constants, unary/binary/where/cast, INDEX, RAND (uniform: an
 * inline Philox4x32-10, so dropout loops vectorize), REDUCED) and the
 * stores (plain, indexed, accumulating). Mirrors runtime/interp.c exactly:
 * float16/bfloat16/float32 nodes hold float (rounded after every op),
 * float64 double, ints their own width (computed in i64 and wrapped), bool
 * i1; float exp/log/tanh/sigmoid/erf inline from codegen_math.c (double
 * ones call libm). Also the table of external symbols the generated code
 * calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

/* ---- external helpers (registered with the JIT as absolute symbols) ---- */

static float h2f(uint32_t h) { return st_half_to_float((uint16_t)h); }
static uint32_t f2h(float f) { return st_float_to_half(f); }

static int64_t ipow(int64_t base, int64_t e)
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

static double my_erf(double x) { return erf(x); }
static float my_erff(float x) { return erff(x); }
static double my_tanh(double x) { return tanh(x); }
static float my_tanhf(float x) { return tanhf(x); }

#define SYM(n, a) {n, (void *)(a)}
static const st_llvm_sym syms[] = {
    SYM("st_llvm_h2f", h2f),
    SYM("st_llvm_f2h", f2h),
    SYM("st_llvm_ipow", ipow),
    SYM("st_llvm_erf", my_erf),
    SYM("st_llvm_erff", my_erff),
    SYM("st_llvm_tanh", my_tanh),
    SYM("st_llvm_tanhf", my_tanhf),
    SYM("st_rand_uniform", st_rand_uniform),
    SYM("st_rand_normal", st_rand_normal),
    SYM("expf", expf), SYM("exp", exp), SYM("logf", logf), SYM("log", log),
    SYM("sinf", sinf), SYM("sin", sin), SYM("cosf", cosf), SYM("cos", cos),
    SYM("powf", powf), SYM("pow", pow), SYM("fmodf", fmodf),
    SYM("fmod", fmod), SYM("floorf", floorf), SYM("floor", floor),
    SYM("ceilf", ceilf), SYM("ceil", ceil), SYM("roundevenf", roundevenf),
    SYM("roundeven", roundeven), SYM("exp2f", exp2f), SYM("exp2", exp2),
    SYM("log2f", log2f), SYM("log2", log2), SYM("sqrtf", sqrtf),
    SYM("sqrt", sqrt), SYM("sincosf", sincosf), SYM("sincos", sincos),
    SYM("memset", memset), SYM("memcpy", memcpy), SYM("memmove", memmove),
};
#undef SYM

const st_llvm_sym *st_llvm_symbols(int *n)
{
    *n = (int)(sizeof syms / sizeof syms[0]);
    return syms;
}

/* ---- types and small builders ---- */

void st_llvm_cg_types(st_llvm_cg *cg)
{
    cg->i1 = LLVMInt1TypeInContext(cg->C);
    cg->i8 = LLVMInt8TypeInContext(cg->C);
    cg->i16 = LLVMInt16TypeInContext(cg->C);
    cg->i32 = LLVMInt32TypeInContext(cg->C);
    cg->i64 = LLVMInt64TypeInContext(cg->C);
    cg->f32 = LLVMFloatTypeInContext(cg->C);
    cg->f64 = LLVMDoubleTypeInContext(cg->C);
    cg->ptr = LLVMPointerTypeInContext(cg->C, 0);
    cg->void_t = LLVMVoidTypeInContext(cg->C);
}

static inline bool isf(st_dtype t)
{
    return t == ST_FLOAT16 || t == ST_BFLOAT16 || t == ST_FLOAT32 ||
           t == ST_FLOAT64;
}

/* float16/bfloat16/float32: values held in float */
static inline bool is32(st_dtype t)
{
    return t == ST_FLOAT16 || t == ST_BFLOAT16 || t == ST_FLOAT32;
}

LLVMTypeRef st_llvm_vty(st_llvm_cg *cg, st_dtype t)
{
    switch (t) {
    case ST_BOOL: return cg->i1;
    case ST_UINT8: case ST_INT8: return cg->i8;
    case ST_INT16: return cg->i16;
    case ST_INT32: return cg->i32;
    case ST_INT64: return cg->i64;
    case ST_FLOAT64: return cg->f64;
    default: return cg->f32;
    }
}

LLVMTypeRef st_llvm_mty(st_llvm_cg *cg, st_dtype t)
{
    switch (t) {
    case ST_BOOL: case ST_UINT8: case ST_INT8: return cg->i8;
    case ST_INT16: return cg->i16;
    case ST_INT32: return cg->i32;
    case ST_INT64: return cg->i64;
    case ST_FLOAT16:
    case ST_BFLOAT16: return cg->i16;
    case ST_FLOAT32: return cg->f32;
    default: return cg->f64;
    }
}

LLVMValueRef st_llvm_i64c(st_llvm_cg *cg, int64_t v)
{
    return LLVMConstInt(cg->i64, (unsigned long long)v, 1);
}

static LLVMValueRef i32c(st_llvm_cg *cg, uint32_t v)
{
    return LLVMConstInt(cg->i32, v, 0);
}

static LLVMValueRef fc(LLVMTypeRef t, double v)
{
    return LLVMConstReal(t, v);
}

static LLVMValueRef intr(st_llvm_cg *cg, const char *name, LLVMValueRef *a,
                         int n)
{
    LLVMTypeRef t = LLVMTypeOf(a[0]);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(cg->M, id, &t, 1);
    LLVMTypeRef ft = LLVMIntrinsicGetType(cg->C, id, &t, 1);
    return LLVMBuildCall2(cg->B, ft, f, a, (unsigned)n, "");
}

static LLVMValueRef intr1(st_llvm_cg *cg, const char *name, LLVMValueRef x)
{
    return intr(cg, name, &x, 1);
}

static LLVMValueRef ext_call(st_llvm_cg *cg, const char *name,
                             LLVMTypeRef ret, LLVMTypeRef *pt, int np,
                             LLVMValueRef *args)
{
    LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)np, 0);
    LLVMValueRef f = LLVMGetNamedFunction(cg->M, name);
    if (!f) {
        f = LLVMAddFunction(cg->M, name, ft);
        unsigned kid = LLVMGetEnumAttributeKindForName("nounwind", 8);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(cg->C, kid, 0));
    }
    return LLVMBuildCall2(cg->B, ft, f, args, (unsigned)np, "");
}

LLVMValueRef st_llvm_arg_field(st_llvm_cg *cg, size_t off, LLVMTypeRef t)
{
    LLVMValueRef o = st_llvm_i64c(cg, (int64_t)off);
    LLVMValueRef p = LLVMBuildGEP2(cg->B, cg->i8, cg->args, &o, 1, "");
    return LLVMBuildLoad2(cg->B, t, p, "");
}

static void err_store(st_llvm_cg *cg, size_t off, LLVMValueRef v)
{
    LLVMValueRef o = st_llvm_i64c(cg, (int64_t)off);
    LLVMValueRef p = LLVMBuildGEP2(cg->B, cg->i8, cg->err, &o, 1, "");
    LLVMBuildStore(cg->B, v, p);
}

void st_llvm_fail_if(st_llvm_cg *cg, LLVMValueRef cond, int code,
                     LLVMValueRef value, LLVMValueRef size, int dim)
{
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->C, cg->fn, "fail");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(cg->C, cg->fn, "ok");
    LLVMValueRef br = LLVMBuildCondBr(cg->B, cond, bad, ok);
    (void)br;
    LLVMPositionBuilderAtEnd(cg->B, bad);
    err_store(cg, offsetof(st_llvm_err, value), value);
    err_store(cg, offsetof(st_llvm_err, size), size);
    err_store(cg, offsetof(st_llvm_err, dim), i32c(cg, (uint32_t)dim));
    err_store(cg, offsetof(st_llvm_err, code), i32c(cg, (uint32_t)code));
    LLVMBuildRet(cg->B, i32c(cg, (uint32_t)code));
    LLVMPositionBuilderAtEnd(cg->B, ok);
}

/* ---- float16 / bfloat16 ---- */

/* float16 -> float without a call, so loops vectorize: the exponent and
 * mantissa moved into float position and scaled by 2^112 (exact, also
 * for subnormal halves, which come out normal), infinities and NaNs
 * given the float exponent, then the sign. Integer and float ops only:
 * InstCombine does not see an fpext of half here, which it would narrow
 * the float ops on into half ops (x86 scalarizes half compares).
 * (st_llvm_h2f stays registered for caches of older objects.)
 * float -> float16: with F16C the IR's fptrunc to half (round to nearest
 * even, NaN quieted with its top payload kept: st_float_to_half's
 * result), which vectorizes (vcvtps2ph); else a call to st_llvm_f2h. */
static LLVMValueRef half_bits_to_f(st_llvm_cg *cg, LLVMValueRef h16)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef u = LLVMBuildZExt(B, h16, cg->i32, "");
    LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, u, i32c(cg, 0x8000u), ""),
                                     i32c(cg, 16), "");
    LLVMValueRef em = LLVMBuildAnd(B, u, i32c(cg, 0x7fffu), "");
    LLVMValueRef m = LLVMBuildShl(B, em, i32c(cg, 13), "");
    LLVMValueRef f = LLVMBuildFMul(B, LLVMBuildBitCast(B, m, cg->f32, ""),
                                   fc(cg->f32, 0x1p112), "");
    LLVMValueRef special = LLVMBuildOr(B, m, i32c(cg, 0x7f800000u), "");
    LLVMValueRef bits = LLVMBuildSelect(B,
        LLVMBuildICmp(B, LLVMIntUGE, em, i32c(cg, 0x7c00u), ""),
        special, LLVMBuildBitCast(B, f, cg->i32, ""), "");
    return LLVMBuildBitCast(B, LLVMBuildOr(B, bits, sign, ""), cg->f32, "");
}

static LLVMValueRef f_to_half_bits(st_llvm_cg *cg, LLVMValueRef f)
{
    if (cg->f16c) {
        LLVMValueRef h = LLVMBuildFPTrunc(cg->B, f, LLVMHalfTypeInContext(cg->C), "");
        return LLVMBuildBitCast(cg->B, h, cg->i16, "");
    }
    LLVMTypeRef pt = cg->f32;
    LLVMValueRef r = ext_call(cg, "st_llvm_f2h", cg->i32, &pt, 1, &f);
    return LLVMBuildTrunc(cg->B, r, cg->i16, "");
}

static LLVMValueRef bf_bits_to_f(st_llvm_cg *cg, LLVMValueRef h16)
{
    LLVMValueRef a = LLVMBuildZExt(cg->B, h16, cg->i32, "");
    a = LLVMBuildShl(cg->B, a, i32c(cg, 16), "");
    return LLVMBuildBitCast(cg->B, a, cg->f32, "");
}

static LLVMValueRef f_to_bf_bits(st_llvm_cg *cg, LLVMValueRef f)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef x = LLVMBuildBitCast(B, f, cg->i32, "");
    LLVMValueRef ax = LLVMBuildAnd(B, x, i32c(cg, 0x7fffffffu), "");
    LLVMValueRef nan = LLVMBuildICmp(B, LLVMIntUGT, ax, i32c(cg, 0x7f800000u), "");
    LLVMValueRef hi = LLVMBuildLShr(B, x, i32c(cg, 16), "");
    LLVMValueRef qn = LLVMBuildOr(B, hi, i32c(cg, 0x40), "");
    LLVMValueRef odd = LLVMBuildAnd(B, hi, i32c(cg, 1), "");
    LLVMValueRef r = LLVMBuildAdd(B, x, i32c(cg, 0x7fff), "");
    r = LLVMBuildAdd(B, r, odd, "");
    r = LLVMBuildLShr(B, r, i32c(cg, 16), "");
    r = LLVMBuildSelect(B, nan, qn, r, "");
    return LLVMBuildTrunc(B, r, cg->i16, "");
}

/* A float rounded to float16 / bfloat16 precision (still a float). */
static LLVMValueRef round_to(st_llvm_cg *cg, LLVMValueRef f, st_dtype t)
{
    if (t == ST_FLOAT16)
        return half_bits_to_f(cg, f_to_half_bits(cg, f));
    if (t == ST_BFLOAT16)
        return bf_bits_to_f(cg, f_to_bf_bits(cg, f));
    return f;
}

LLVMValueRef st_llvm_from_mem(st_llvm_cg *cg, LLVMValueRef m, st_dtype t)
{
    switch (t) {
    case ST_BOOL:
        return LLVMBuildICmp(cg->B, LLVMIntNE, m, LLVMConstInt(cg->i8, 0, 0), "");
    case ST_FLOAT16: return half_bits_to_f(cg, m);
    case ST_BFLOAT16: return bf_bits_to_f(cg, m);
    default: return m;
    }
}

/* v: value of dtype t (already rounded to t) -> memory representation */
static LLVMValueRef to_mem(st_llvm_cg *cg, LLVMValueRef v, st_dtype t)
{
    switch (t) {
    case ST_BOOL: return LLVMBuildZExt(cg->B, v, cg->i8, "");
    case ST_FLOAT16: return f_to_half_bits(cg, v);
    case ST_BFLOAT16: return f_to_bf_bits(cg, v);
    default: return v;
    }
}

/* ---- conversions (interp's convert) ---- */

static LLVMValueRef f2int(st_llvm_cg *cg, LLVMValueRef d, st_dtype to)
{
    LLVMBuilderRef B = cg->B;
    if (to == ST_BOOL)
        return LLVMBuildFCmp(B, LLVMRealUNE, d, fc(LLVMTypeOf(d), 0), "");
    if (LLVMTypeOf(d) != cg->f64)
        d = LLVMBuildFPExt(B, d, cg->f64, "");
    LLVMValueRef inr, r, mn;
    if (to == ST_INT32) { /* narrower types: via int64, then wrapped */
        inr = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOGT, d, fc(cg->f64, -2147483649.0), ""),
                           LLVMBuildFCmp(B, LLVMRealOLT, d, fc(cg->f64, 2147483648.0), ""), "");
        r = LLVMBuildFPToSI(B, d, cg->i32, "");
        mn = LLVMConstInt(cg->i32, 0x80000000u, 0);
    } else {
        inr = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOGE, d, fc(cg->f64, -9223372036854775808.0), ""),
                           LLVMBuildFCmp(B, LLVMRealOLT, d, fc(cg->f64, 9223372036854775808.0), ""), "");
        r = LLVMBuildFPToSI(B, d, cg->i64, "");
        mn = LLVMConstInt(cg->i64, 0x8000000000000000ull, 0);
    }
    r = LLVMBuildFreeze(B, r, "");
    r = LLVMBuildSelect(B, inr, r, mn, "");
    if (to != ST_INT32 && to != ST_INT64) /* uint8/int8/int16: wrap */
        r = LLVMBuildTrunc(B, r, st_llvm_vty(cg, to), "");
    return r;
}

LLVMValueRef st_llvm_conv(st_llvm_cg *cg, LLVMValueRef v, st_dtype from,
                          st_dtype to, bool exact)
{
    LLVMBuilderRef B = cg->B;
    bool ff = isf(from), tf = isf(to);
    if (ff && tf) {
        if (to == ST_FLOAT64)
            return from == ST_FLOAT64 ? v : LLVMBuildFPExt(B, v, cg->f64, "");
        LLVMValueRef x = from == ST_FLOAT64 ? LLVMBuildFPTrunc(B, v, cg->f32, "") : v;
        return exact ? round_to(cg, x, to) : x;
    }
    if (ff)
        return f2int(cg, v, to);
    if (tf) {
        LLVMTypeRef t = to == ST_FLOAT64 ? cg->f64 : cg->f32;
        LLVMValueRef x = st_dtype_is_unsigned(from) ? LLVMBuildUIToFP(B, v, t, "")
                                                    : LLVMBuildSIToFP(B, v, t, "");
        return exact && to != ST_FLOAT64 ? round_to(cg, x, to) : x;
    }
    if (from == to)
        return v;
    if (to == ST_BOOL)
        return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
    int fb = st_dtype_int_bits(from), tb = st_dtype_int_bits(to);
    LLVMTypeRef tt = st_llvm_vty(cg, to);
    if (tb < fb)
        return LLVMBuildTrunc(B, v, tt, "");
    if (tb == fb) /* int8 <-> uint8: the same bits */
        return v;
    return st_dtype_is_unsigned(from) ? LLVMBuildZExt(B, v, tt, "")
                                      : LLVMBuildSExt(B, v, tt, "");
}

LLVMValueRef st_llvm_as_f(st_llvm_cg *cg, LLVMValueRef v, st_dtype t)
{
    return st_llvm_conv(cg, v, t, ST_FLOAT64, false);
}

LLVMValueRef st_llvm_as_i(st_llvm_cg *cg, LLVMValueRef v, st_dtype t)
{
    if (isf(t)) {
        LLVMValueRef d = t == ST_FLOAT64 ? v : LLVMBuildFPExt(cg->B, v, cg->f64, "");
        return f2int(cg, d, ST_INT64);
    }
    return st_llvm_conv(cg, v, t, ST_INT64, false);
}

static LLVMValueRef truthy(st_llvm_cg *cg, LLVMValueRef v, st_dtype t)
{
    if (isf(t))
        return LLVMBuildFCmp(cg->B, LLVMRealUNE, v, fc(LLVMTypeOf(v), 0), "");
    if (t == ST_BOOL)
        return v;
    return LLVMBuildICmp(cg->B, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
}

/* Float result r computed in float (c32) or double -> node dtype dt. */
static LLVMValueRef fin(st_llvm_cg *cg, LLVMValueRef r, bool c32, st_dtype dt)
{
    if (isf(dt)) {
        if (dt == ST_FLOAT64 || c32)
            return r;
        return LLVMBuildFPTrunc(cg->B, r, cg->f32, "");
    }
    if (c32)
        r = LLVMBuildFPExt(cg->B, r, cg->f64, "");
    return st_llvm_conv(cg, r, ST_FLOAT64, dt, false);
}

/* ---- nodes ---- */

static LLVMValueRef emit_load(st_llvm_cg *cg, const st_knode *n)
{
    const st_kernel *k = cg->k;
    int b = n->buf;
    st_dtype bdt = k->bufs[b].dtype;
    LLVMValueRef off = cg->off[b];
    if (k->bufs[b].unravel > 0 && !cg->uplain) {
        /* off is the linear index in the reshaped value: unravel it over
         * the source's sizes, dot with its strides */
        LLVMValueRef q = off, o = st_llvm_i64c(cg, 0);
        for (int j = k->bufs[b].unravel - 1; j >= 0; j--) {
            LLVMValueRef c = j > 0 ? LLVMBuildURem(cg->B, q, cg->ushape[b][j], "") : q;
            o = LLVMBuildAdd(cg->B, o, LLVMBuildMul(cg->B, c, cg->ustride[b][j], ""), "");
            if (j > 0)
                q = LLVMBuildUDiv(cg->B, q, cg->ushape[b][j], "");
        }
        off = o;
    } else if (n->idx_dim >= 0) {
        LLVMValueRef x = st_llvm_as_i(cg, st_llvm_node(cg, n->a),
                                      k->nodes[n->a].dtype);
        LLVMValueRef bad = LLVMBuildOr(cg->B,
            LLVMBuildICmp(cg->B, LLVMIntSLT, x, st_llvm_i64c(cg, 0), ""),
            LLVMBuildICmp(cg->B, LLVMIntSGE, x, cg->idx_size[b], ""), "");
        st_llvm_fail_if(cg, bad, ST_LLVM_EINDEX, x, cg->idx_size[b], n->idx_dim);
        off = LLVMBuildAdd(cg->B, off,
                           LLVMBuildMul(cg->B, x, cg->idx_stride[b], ""), "");
    }
    LLVMTypeRef mt = st_llvm_mty(cg, bdt);
    LLVMValueRef p = LLVMBuildGEP2(cg->B, mt, cg->data[b], &off, 1, "");
    LLVMValueRef m = LLVMBuildLoad2(cg->B, mt, p, "");
    LLVMValueRef v = st_llvm_from_mem(cg, m, bdt);
    if (n->dtype != bdt)
        v = st_llvm_conv(cg, v, bdt, n->dtype, true);
    return v;
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

static LLVMValueRef libm1(st_llvm_cg *cg, const char *base, LLVMValueRef x)
{
    char name[64];
    bool f = LLVMTypeOf(x) == cg->f32;
    snprintf(name, sizeof name, "%s%s", base, f ? "f" : "");
    LLVMTypeRef t = LLVMTypeOf(x);
    return ext_call(cg, name, t, &t, 1, &x);
}

static LLVMValueRef emit_unary(st_llvm_cg *cg, const st_knode *n)
{
    LLVMBuilderRef B = cg->B;
    st_dtype adt = cg->k->nodes[n->a].dtype, dt = n->dtype;
    LLVMValueRef a = st_llvm_node(cg, n->a);
    if (n->op == ST_OP_CAST)
        return st_llvm_conv(cg, a, adt, dt, true);
    if (n->op == ST_OP_LOGICAL_NOT) {
        LLVMValueRef t = LLVMBuildNot(B, truthy(cg, a, adt), "");
        return st_llvm_conv(cg, t, ST_BOOL, dt, false);
    }
    if (!isf(adt) && !isf(dt) && unary_int_native(n->op)) {
        LLVMValueRef x = st_llvm_as_i(cg, a, adt), z = st_llvm_i64c(cg, 0), r;
        switch (n->op) {
        case ST_OP_NEG: r = LLVMBuildSub(B, z, x, ""); break;
        case ST_OP_ABS:
            r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, x, z, ""),
                                LLVMBuildSub(B, z, x, ""), x, "");
            break;
        case ST_OP_RELU:
            r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, x, z, ""), x, z, "");
            break;
        case ST_OP_SIGN:
            r = LLVMBuildSub(B,
                LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSGT, x, z, ""), cg->i64, ""),
                LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSLT, x, z, ""), cg->i64, ""), "");
            break;
        default: r = x; break;
        }
        return st_llvm_conv(cg, r, ST_INT64, dt, false);
    }
    bool c32 = is32(adt) && is32(dt);
    LLVMValueRef x = c32 ? a : st_llvm_as_f(cg, a, adt);
    LLVMTypeRef T = LLVMTypeOf(x);
    LLVMValueRef one = fc(T, 1.0), zero = fc(T, 0.0), r;
    if ((r = st_llvm_math(cg, n->op, x)))
        return fin(cg, r, c32, dt);
    switch (n->op) {
    case ST_OP_NEG: r = LLVMBuildFNeg(B, x, ""); break;
    case ST_OP_EXP: r = intr1(cg, "llvm.exp", x); break;
    case ST_OP_LOG: r = intr1(cg, "llvm.log", x); break;
    case ST_OP_SQRT: r = intr1(cg, "llvm.sqrt", x); break;
    case ST_OP_RSQRT: r = LLVMBuildFDiv(B, one, intr1(cg, "llvm.sqrt", x), ""); break;
    case ST_OP_TANH: r = libm1(cg, "st_llvm_tanh", x); break;
    case ST_OP_SIGMOID:
        r = LLVMBuildFDiv(B, one, LLVMBuildFAdd(B, one,
                intr1(cg, "llvm.exp", LLVMBuildFNeg(B, x, "")), ""), "");
        break;
    case ST_OP_RELU:
        r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLE, x, zero, ""), zero, x, "");
        break;
    case ST_OP_ERF: r = libm1(cg, "st_llvm_erf", x); break;
    case ST_OP_ABS: r = intr1(cg, "llvm.fabs", x); break;
    case ST_OP_SIN: r = intr1(cg, "llvm.sin", x); break;
    case ST_OP_COS: r = intr1(cg, "llvm.cos", x); break;
    case ST_OP_RECIPROCAL: r = LLVMBuildFDiv(B, one, x, ""); break;
    case ST_OP_FLOOR: r = intr1(cg, "llvm.floor", x); break;
    case ST_OP_CEIL: r = intr1(cg, "llvm.ceil", x); break;
    case ST_OP_ROUND: r = intr1(cg, "llvm.roundeven", x); break;
    case ST_OP_SIGN:
        r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, zero, ""), one,
              LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, zero, ""),
                              fc(T, -1.0), zero, ""), "");
        break;
    default:
        snprintf(cg->errmsg, sizeof cg->errmsg, "unsupported unary op %d", n->op);
        r = x;
        break;
    }
    return fin(cg, r, c32, dt);
}

static LLVMValueRef emit_binary(st_llvm_cg *cg, const st_knode *n)
{
    LLVMBuilderRef B = cg->B;
    const st_kernel *k = cg->k;
    st_dtype adt = k->nodes[n->a].dtype, bdt = k->nodes[n->b].dtype, dt = n->dtype;
    LLVMValueRef a = st_llvm_node(cg, n->a), b = st_llvm_node(cg, n->b);
    int op = n->op;
    if (op == ST_OP_LOGICAL_AND || op == ST_OP_LOGICAL_OR) {
        LLVMValueRef p = truthy(cg, a, adt), q = truthy(cg, b, bdt);
        LLVMValueRef r = op == ST_OP_LOGICAL_AND ? LLVMBuildAnd(B, p, q, "")
                                                 : LLVMBuildOr(B, p, q, "");
        return st_llvm_conv(cg, r, ST_BOOL, dt, false);
    }
    bool cmp = op >= ST_OP_EQ && op <= ST_OP_GE;
    bool fdom = isf(adt) || isf(bdt) || (!cmp && isf(dt));
    if (cmp) {
        LLVMValueRef r;
        if (fdom) {
            bool c32 = is32(adt) && is32(bdt);
            LLVMValueRef x = c32 ? a : st_llvm_as_f(cg, a, adt);
            LLVMValueRef y = c32 ? b : st_llvm_as_f(cg, b, bdt);
            LLVMRealPredicate pr = op == ST_OP_EQ ? LLVMRealOEQ
                : op == ST_OP_NE ? LLVMRealUNE : op == ST_OP_LT ? LLVMRealOLT
                : op == ST_OP_LE ? LLVMRealOLE : op == ST_OP_GT ? LLVMRealOGT
                : LLVMRealOGE;
            r = LLVMBuildFCmp(B, pr, x, y, "");
        } else {
            LLVMValueRef x = st_llvm_as_i(cg, a, adt), y = st_llvm_as_i(cg, b, bdt);
            LLVMIntPredicate pr = op == ST_OP_EQ ? LLVMIntEQ
                : op == ST_OP_NE ? LLVMIntNE : op == ST_OP_LT ? LLVMIntSLT
                : op == ST_OP_LE ? LLVMIntSLE : op == ST_OP_GT ? LLVMIntSGT
                : LLVMIntSGE;
            r = LLVMBuildICmp(B, pr, x, y, "");
        }
        return st_llvm_conv(cg, r, ST_BOOL, dt, false);
    }
    if (fdom) {
        bool c32 = is32(adt) && is32(bdt) && is32(dt);
        LLVMValueRef p = c32 ? a : st_llvm_as_f(cg, a, adt);
        LLVMValueRef q = c32 ? b : st_llvm_as_f(cg, b, bdt);
        LLVMTypeRef T = LLVMTypeOf(p);
        LLVMValueRef r, zero = fc(T, 0);
        switch (op) {
        case ST_OP_ADD: r = LLVMBuildFAdd(B, p, q, ""); break;
        case ST_OP_SUB: r = LLVMBuildFSub(B, p, q, ""); break;
        case ST_OP_MUL: r = LLVMBuildFMul(B, p, q, ""); break;
        case ST_OP_DIV: r = LLVMBuildFDiv(B, p, q, ""); break;
        case ST_OP_POW: {
            LLVMValueRef pq[2] = {p, q};
            r = intr(cg, "llvm.pow", pq, 2);
            break;
        }
        case ST_OP_MAXIMUM:
        case ST_OP_MINIMUM: {
            LLVMValueRef c = LLVMBuildFCmp(B, op == ST_OP_MAXIMUM ? LLVMRealOGT
                                           : LLVMRealOLT, p, q, "");
            r = LLVMBuildSelect(B, c, p, q, "");
            r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, q, q, ""), q, r, "");
            r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, p, p, ""), p, r, "");
            break;
        }
        case ST_OP_FLOOR_DIVIDE: {
            LLVMValueRef mod = LLVMBuildFRem(B, p, q, "");
            LLVMValueRef quo = LLVMBuildFDiv(B, p, q, "");
            LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, p, mod, ""), q, "");
            LLVMValueRef adj = LLVMBuildAnd(B,
                LLVMBuildFCmp(B, LLVMRealUNE, mod, zero, ""),
                LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, q, zero, ""),
                             LLVMBuildFCmp(B, LLVMRealOLT, mod, zero, ""), ""), "");
            div = LLVMBuildSelect(B, adj, LLVMBuildFSub(B, div, fc(T, 1), ""), div, "");
            LLVMValueRef fl = intr1(cg, "llvm.floor", div);
            fl = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT,
                                 LLVMBuildFSub(B, div, fl, ""), fc(T, 0.5), ""),
                                 LLVMBuildFAdd(B, fl, fc(T, 1), ""), fl, "");
            LLVMValueRef cs[2] = {zero, quo};
            LLVMValueRef z = intr(cg, "llvm.copysign", cs, 2);
            r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNE, div, zero, ""), fl, z, "");
            r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, q, zero, ""), quo, r, "");
            break;
        }
        case ST_OP_REMAINDER: {
            LLVMValueRef m = LLVMBuildFRem(B, p, q, "");
            LLVMValueRef adj = LLVMBuildAnd(B,
                LLVMBuildFCmp(B, LLVMRealUNE, m, zero, ""),
                LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, q, zero, ""),
                             LLVMBuildFCmp(B, LLVMRealOLT, m, zero, ""), ""), "");
            r = LLVMBuildSelect(B, adj, LLVMBuildFAdd(B, m, q, ""), m, "");
            break;
        }
        default:
            snprintf(cg->errmsg, sizeof cg->errmsg, "unsupported binary op %d", op);
            r = p;
            break;
        }
        return fin(cg, r, c32, dt);
    }
    LLVMValueRef x = st_llvm_as_i(cg, a, adt), y = st_llvm_as_i(cg, b, bdt);
    LLVMValueRef z = st_llvm_i64c(cg, 0), m1 = st_llvm_i64c(cg, -1), r;
    LLVMValueRef yz = LLVMBuildICmp(B, LLVMIntEQ, y, z, "");
    LLVMValueRef ym1 = LLVMBuildICmp(B, LLVMIntEQ, y, m1, "");
    LLVMValueRef bady = LLVMBuildOr(B, yz, ym1, "");
    LLVMValueRef safe = LLVMBuildSelect(B, bady, st_llvm_i64c(cg, 1), y, "");
    LLVMValueRef negx = LLVMBuildSub(B, z, x, "");
    switch (op) {
    case ST_OP_ADD: r = LLVMBuildAdd(B, x, y, ""); break;
    case ST_OP_SUB: r = LLVMBuildSub(B, x, y, ""); break;
    case ST_OP_MUL: r = LLVMBuildMul(B, x, y, ""); break;
    case ST_OP_DIV:
        r = LLVMBuildSDiv(B, x, safe, "");
        r = LLVMBuildSelect(B, yz, z, LLVMBuildSelect(B, ym1, negx, r, ""), "");
        break;
    case ST_OP_FLOOR_DIVIDE: {
        LLVMValueRef q = LLVMBuildSDiv(B, x, safe, "");
        LLVMValueRef rm = LLVMBuildSRem(B, x, safe, "");
        LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, rm, z, ""),
            LLVMBuildXor(B, LLVMBuildICmp(B, LLVMIntSLT, x, z, ""),
                         LLVMBuildICmp(B, LLVMIntSLT, safe, z, ""), ""), "");
        q = LLVMBuildSub(B, q, LLVMBuildZExt(B, adj, cg->i64, ""), "");
        r = LLVMBuildSelect(B, yz, z, LLVMBuildSelect(B, ym1, negx, q, ""), "");
        break;
    }
    case ST_OP_REMAINDER: {
        LLVMValueRef rm = LLVMBuildSRem(B, x, safe, "");
        LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, rm, z, ""),
            LLVMBuildXor(B, LLVMBuildICmp(B, LLVMIntSLT, rm, z, ""),
                         LLVMBuildICmp(B, LLVMIntSLT, y, z, ""), ""), "");
        rm = LLVMBuildSelect(B, adj, LLVMBuildAdd(B, rm, y, ""), rm, "");
        r = LLVMBuildSelect(B, bady, z, rm, "");
        break;
    }
    case ST_OP_POW: {
        LLVMTypeRef pt[2] = {cg->i64, cg->i64};
        LLVMValueRef av[2] = {x, y};
        r = ext_call(cg, "st_llvm_ipow", cg->i64, pt, 2, av);
        break;
    }
    case ST_OP_MAXIMUM:
        r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, x, y, ""), x, y, "");
        break;
    case ST_OP_MINIMUM:
        r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, x, y, ""), x, y, "");
        break;
    default:
        snprintf(cg->errmsg, sizeof cg->errmsg, "unsupported binary op %d", op);
        r = x;
        break;
    }
    return st_llvm_conv(cg, r, ST_INT64, dt, false);
}

/* ---- RAND: Philox4x32-10 inline (runtime/random.c bit for bit) ----
 * Inline i32 ops instead of a call to st_rand_uniform, so that the loop
 * vectorizer widens kernels with dropout; the 32x32 -> 64 products are
 * zext i64 muls (vpmuludq on AVX2). */

/* hi and lo 32 bits of the 64-bit product a * m */
static void mulhilo(st_llvm_cg *cg, LLVMValueRef a, uint32_t m,
                    LLVMValueRef *hi, LLVMValueRef *lo)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef p = LLVMBuildNUWMul(B, LLVMBuildZExt(B, a, cg->i64, ""),
                                     st_llvm_i64c(cg, m), "");
    *hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, p, st_llvm_i64c(cg, 32), ""),
                         cg->i32, "");
    *lo = LLVMBuildTrunc(B, p, cg->i32, "");
}

/* st_philox(seed, ctr) into o[4] (i32 values) */
static void philox(st_llvm_cg *cg, LLVMValueRef seed, LLVMValueRef ctr,
                   LLVMValueRef o[4])
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef s32 = st_llvm_i64c(cg, 32), z = LLVMConstInt(cg->i32, 0, 0);
    LLVMValueRef c0 = LLVMBuildTrunc(B, ctr, cg->i32, "");
    LLVMValueRef c1 = LLVMBuildTrunc(B, LLVMBuildLShr(B, ctr, s32, ""), cg->i32, "");
    LLVMValueRef c2 = z, c3 = z;
    LLVMValueRef k0 = LLVMBuildTrunc(B, seed, cg->i32, "");
    LLVMValueRef k1 = LLVMBuildTrunc(B, LLVMBuildLShr(B, seed, s32, ""), cg->i32, "");
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 = LLVMBuildAdd(B, k0, LLVMConstInt(cg->i32, 0x9E3779B9u, 0), "");
            k1 = LLVMBuildAdd(B, k1, LLVMConstInt(cg->i32, 0xBB67AE85u, 0), "");
        }
        LLVMValueRef hi0, lo0, hi1, lo1;
        mulhilo(cg, c0, 0xD2511F53u, &hi0, &lo0);
        mulhilo(cg, c2, 0xCD9E8D57u, &hi1, &lo1);
        c0 = LLVMBuildXor(B, LLVMBuildXor(B, hi1, c1, ""), k0, "");
        c1 = lo1;
        c2 = LLVMBuildXor(B, LLVMBuildXor(B, hi0, c3, ""), k1, "");
        c3 = lo0;
    }
    o[0] = c0;
    o[1] = c1;
    o[2] = c2;
    o[3] = c3;
}

/* u53(lo, hi) = ((hi:lo) >> 11) * 2^-53 as a * 2^-27 + b * 2^-53 with
 * a = hi >> 5 (27 bits) and b the next 26 bits: both exact i32 -> double
 * conversions (vcvtdq2pd; AVX2 has no i64 -> double), and the sum, a
 * 53-bit integer times 2^-53, is exact. */
static LLVMValueRef u53(st_llvm_cg *cg, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef a = LLVMBuildLShr(B, hi, LLVMConstInt(cg->i32, 5, 0), "");
    LLVMValueRef b = LLVMBuildOr(B,
        LLVMBuildLShr(B, lo, LLVMConstInt(cg->i32, 11, 0), ""),
        LLVMBuildShl(B, LLVMBuildAnd(B, hi, LLVMConstInt(cg->i32, 31, 0), ""),
                     LLVMConstInt(cg->i32, 21, 0), ""), "");
    LLVMValueRef da = LLVMBuildFMul(B, LLVMBuildSIToFP(B, a, cg->f64, ""),
                                    fc(cg->f64, 0x1p-27), "");
    LLVMValueRef db = LLVMBuildFMul(B, LLVMBuildSIToFP(B, b, cg->f64, ""),
                                    fc(cg->f64, 0x1p-53), "");
    return LLVMBuildFAdd(B, da, db, "");
}

bool st_llvm_has_rand_f(const st_kernel *k)
{
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].kind == ST_KN_RAND && k->nodes[i].i != 1 &&
            k->nodes[i].dtype != ST_FLOAT64)
            return true;
    return false;
}

void st_llvm_rand_fill(st_llvm_cg *cg, LLVMValueRef words, LLVMValueRef b0,
                       LLVMValueRef nb)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef seed = st_llvm_arg_field(cg, offsetof(st_kargs, rng_seed), cg->i64);
    LLVMValueRef off = st_llvm_arg_field(cg, offsetof(st_kargs, rng_offset), cg->i64);
    off = LLVMBuildAdd(B, off, b0, "");
    st_llvm_loop L;
    LLVMValueRef q = st_llvm_loop_begin(cg, &L, st_llvm_i64c(cg, 0), nb);
    LLVMValueRef o[4];
    philox(cg, seed, LLVMBuildAdd(B, off, q, ""), o);
    LLVMValueRef q4 = LLVMBuildShl(B, q, st_llvm_i64c(cg, 2), "");
    for (int w = 0; w < 4; w++) {
        LLVMValueRef ix = LLVMBuildOr(B, q4, st_llvm_i64c(cg, w), "");
        LLVMBuildStore(B, o[w], LLVMBuildGEP2(B, cg->i32, words, &ix, 1, ""));
    }
    st_llvm_loop_end(cg, &L);
}

/* uniform narrower than float64 (st_rand_uniform_f): the top 24 bits of
 * word lin & 3 of block offset + lin / 4, from the row's words when the
 * row filled them, else from a block of this point's own */
static LLVMValueRef rand_f(st_llvm_cg *cg, LLVMValueRef seed, LLVMValueRef off)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef w;
    if (cg->rwords) {
        LLVMValueRef ix = LLVMBuildSub(B, cg->lin, cg->rbase, "");
        w = LLVMBuildLoad2(B, cg->i32, LLVMBuildGEP2(B, cg->i32, cg->rwords, &ix, 1, ""), "");
    } else {
        LLVMValueRef o[4];
        philox(cg, seed, LLVMBuildAdd(B, off, LLVMBuildLShr(B, cg->lin, st_llvm_i64c(cg, 2), ""), ""), o);
        LLVMValueRef sel = LLVMBuildTrunc(B, LLVMBuildAnd(B, cg->lin, st_llvm_i64c(cg, 3), ""),
                                          cg->i32, "");
        w = o[0];
        for (int k = 1; k < 4; k++)
            w = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, sel, LLVMConstInt(cg->i32, (unsigned)k, 0), ""),
                                o[k], w, "");
    }
    LLVMValueRef bits = LLVMBuildLShr(B, w, LLVMConstInt(cg->i32, 8, 0), "");
    /* < 2^24: exact in float, and so is the scaling */
    return LLVMBuildFMul(B, LLVMBuildSIToFP(B, bits, cg->f32, ""), fc(cg->f32, 0x1p-24), "");
}

static LLVMValueRef emit_rand(st_llvm_cg *cg, const st_knode *n)
{
    LLVMValueRef seed = st_llvm_arg_field(cg, offsetof(st_kargs, rng_seed), cg->i64);
    LLVMValueRef off = st_llvm_arg_field(cg, offsetof(st_kargs, rng_offset), cg->i64);
    if (n->i == 1) { /* normal: Box-Muller in libm, init only */
        LLVMTypeRef pt[2] = {cg->i64, cg->i64};
        LLVMValueRef av[2] = {seed, LLVMBuildAdd(cg->B, off, cg->lin, "")};
        LLVMValueRef u = ext_call(cg, "st_rand_normal", cg->f64, pt, 2, av);
        return fin(cg, u, false, n->dtype);
    }
    if (n->dtype == ST_FLOAT64) {
        LLVMValueRef o[4];
        philox(cg, seed, LLVMBuildAdd(cg->B, off, cg->lin, ""), o);
        return u53(cg, o[0], o[1]);
    }
    LLVMValueRef u = rand_f(cg, seed, off);
    LLVMValueRef t = fc(cg->f32, st_rand_top(n->dtype));
    u = LLVMBuildSelect(cg->B, LLVMBuildFCmp(cg->B, LLVMRealOGT, u, t, ""), t, u, "");
    return fin(cg, u, true, n->dtype);
}

static LLVMValueRef emit_node(st_llvm_cg *cg, int ni)
{
    const st_kernel *k = cg->k;
    const st_knode *n = &k->nodes[ni];
    LLVMBuilderRef B = cg->B;
    st_dtype dt = n->dtype;
    switch (n->kind) {
    case ST_KN_LOAD:
        return emit_load(cg, n);
    case ST_KN_PARAM: {
        st_dtype pdt = k->param_dtype[n->buf];
        size_t off = offsetof(st_kargs, params) + sizeof(st_kparam) * (size_t)n->buf;
        if (isf(pdt))
            return st_llvm_conv(cg, st_llvm_arg_field(cg, off, cg->f64),
                                ST_FLOAT64, dt, false);
        return st_llvm_conv(cg, st_llvm_arg_field(cg, off, cg->i64), ST_INT64,
                            dt, false);
    }
    case ST_KN_CONST:
        if (isf(dt))
            return dt == ST_FLOAT64 ? fc(cg->f64, n->f) : fc(cg->f32, (double)(float)n->f);
        if (dt == ST_BOOL)
            return LLVMConstInt(cg->i1, n->i != 0, 0);
        if (dt == ST_INT64)
            return st_llvm_i64c(cg, n->i);
        /* narrower ints: LLVMConstInt keeps the low bits (wraps) */
        return LLVMConstInt(st_llvm_vty(cg, dt), (unsigned long long)n->i, 1);
    case ST_KN_UNARY:
        return emit_unary(cg, n);
    case ST_KN_BINARY:
        return emit_binary(cg, n);
    case ST_KN_WHERE: {
        LLVMValueRef c = truthy(cg, st_llvm_node(cg, n->a), k->nodes[n->a].dtype);
        st_dtype bt = k->nodes[n->b].dtype, ct = k->nodes[n->c].dtype;
        LLVMValueRef x = st_llvm_node(cg, n->b), y = st_llvm_node(cg, n->c);
        if (isf(dt)) {
            bool c32 = is32(bt) && is32(ct) && is32(dt);
            if (!c32) {
                x = st_llvm_as_f(cg, x, bt);
                y = st_llvm_as_f(cg, y, ct);
            }
            return fin(cg, LLVMBuildSelect(B, c, x, y, ""), c32, dt);
        }
        x = st_llvm_as_i(cg, x, bt);
        y = st_llvm_as_i(cg, y, ct);
        return st_llvm_conv(cg, LLVMBuildSelect(B, c, x, y, ""), ST_INT64, dt, false);
    }
    case ST_KN_CAST:
        return st_llvm_conv(cg, st_llvm_node(cg, n->a), k->nodes[n->a].dtype, dt, true);
    case ST_KN_INDEX: {
        LLVMValueRef v;
        if (n->i < 0)
            v = cg->lin;
        else
            v = cg->coord[n->i] ? cg->coord[n->i] : st_llvm_i64c(cg, 0);
        return st_llvm_conv(cg, v, ST_INT64, dt, false);
    }
    case ST_KN_RAND:
        return emit_rand(cg, n);
    case ST_KN_REDUCED: {
        int r = k->kind == ST_K_MATMUL ? 0 : (int)n->i;
        if (r < 0 || r >= ST_K_MAX_REDUCE || !cg->reduced[r]) {
            snprintf(cg->errmsg, sizeof cg->errmsg,
                     "node %d: REDUCED %d used before its reduction", ni, r);
            return LLVMGetUndef(st_llvm_vty(cg, dt));
        }
        return st_llvm_conv(cg, cg->reduced[r], cg->reduced_dt[r], dt, false);
    }
    }
    snprintf(cg->errmsg, sizeof cg->errmsg, "node %d: bad kind %d", ni, (int)n->kind);
    return LLVMGetUndef(st_llvm_vty(cg, dt));
}

LLVMValueRef st_llvm_node(st_llvm_cg *cg, int ni)
{
    if (!cg->vals[ni])
        cg->vals[ni] = emit_node(cg, ni);
    return cg->vals[ni];
}

/* ---- stores ---- */

static void store_at(st_llvm_cg *cg, int b, LLVMValueRef off, LLVMValueRef cv,
                     bool accumulate)
{
    LLVMBuilderRef B = cg->B;
    st_dtype bdt = cg->k->bufs[b].dtype;
    LLVMTypeRef mt = st_llvm_mty(cg, bdt);
    LLVMValueRef p = LLVMBuildGEP2(B, mt, cg->data[b], &off, 1, "");
    if (accumulate) {
        LLVMValueRef old = st_llvm_from_mem(cg, LLVMBuildLoad2(B, mt, p, ""), bdt);
        if (isf(bdt))
            cv = LLVMBuildFAdd(B, old, cv, "");
        else if (bdt == ST_BOOL)
            cv = LLVMBuildOr(B, old, cv, "");
        else
            cv = LLVMBuildAdd(B, old, cv, "");
    }
    LLVMBuildStore(B, to_mem(cg, cv, bdt), p);
}

void st_llvm_store_value(st_llvm_cg *cg, int buf, LLVMValueRef v, st_dtype vdt)
{
    LLVMValueRef cv = st_llvm_conv(cg, v, vdt, cg->k->bufs[buf].dtype, true);
    store_at(cg, buf, cg->off[buf], cv, false);
}

void st_llvm_store(st_llvm_cg *cg, int s)
{
    const st_kernel *k = cg->k;
    int b = k->stores[s].buf, ni = k->stores[s].node;
    LLVMValueRef off = cg->off[b];
    if (k->stores[s].indexed) {
        int xi = k->stores[s].idx_node;
        LLVMValueRef x = st_llvm_as_i(cg, st_llvm_node(cg, xi), k->nodes[xi].dtype);
        LLVMValueRef bad = LLVMBuildOr(cg->B,
            LLVMBuildICmp(cg->B, LLVMIntSLT, x, st_llvm_i64c(cg, 0), ""),
            LLVMBuildICmp(cg->B, LLVMIntSGE, x, cg->idx_size[b], ""), "");
        st_llvm_fail_if(cg, bad, ST_LLVM_EINDEX, x, cg->idx_size[b],
                        k->stores[s].idx_dim);
        off = LLVMBuildAdd(cg->B, off, LLVMBuildMul(cg->B, x, cg->idx_stride[b], ""), "");
    }
    LLVMValueRef v = st_llvm_node(cg, ni);
    LLVMValueRef cv = st_llvm_conv(cg, v, k->nodes[ni].dtype, k->bufs[b].dtype, true);
    store_at(cg, b, off, cv, k->stores[s].accumulate);
}
