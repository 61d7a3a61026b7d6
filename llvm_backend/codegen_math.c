/* codegen_math.c - float32 transcendental functions (exp, log, tanh,
 * sigmoid, erf) emitted as inline LLVM IR built only from fadd/fmul,
 * llvm.fmuladd, bit casts, integer ops, compares and selects, so that the
 * loop vectorizer widens them (a libm call keeps a loop scalar). Range
 * reduction and polynomials after Cephes (exp, log, tanh); erf from
 * piecewise float polynomials fitted here; sigmoid computes in double (an
 * exp of 1e-11 error) and rounds once. Accuracy against the correctly
 * rounded result, on every float32 input: exp 1.01 ulp, log 0.8, tanh
 * 1.33, erf 1 (never more than one float away), sigmoid about 0.5.
 * inf, -inf, nan, -0.0, overflow, underflow (denormal results) and
 * saturation are handled by the formulas or by final selects. float64
 * stays with libm (st_llvm_math returns NULL). */
#include <string.h>

#include "llvm_internal.h"

/* ---- small builders ---- */

static LLVMValueRef C_(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

static LLVMValueRef fma_(st_llvm_cg *cg, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef c)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    static const char nm[] = "llvm.fmuladd";
    unsigned id = LLVMLookupIntrinsicID(nm, sizeof nm - 1);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(cg->M, id, &t, 1);
    LLVMTypeRef ft = LLVMIntrinsicGetType(cg->C, id, &t, 1);
    LLVMValueRef args[3] = {a, b, c};
    return LLVMBuildCall2(cg->B, ft, f, args, 3, "");
}

static LLVMValueRef un_(st_llvm_cg *cg, const char *nm, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    unsigned id = LLVMLookupIntrinsicID(nm, strlen(nm));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(cg->M, id, &t, 1);
    LLVMTypeRef ft = LLVMIntrinsicGetType(cg->C, id, &t, 1);
    return LLVMBuildCall2(cg->B, ft, f, &x, 1, "");
}

static LLVMValueRef add_(st_llvm_cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFAdd(cg->B, a, b, "");
}

static LLVMValueRef sub_(st_llvm_cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFSub(cg->B, a, b, "");
}

static LLVMValueRef mul_(st_llvm_cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFMul(cg->B, a, b, "");
}

static LLVMValueRef sel_(st_llvm_cg *cg, LLVMRealPredicate p, LLVMValueRef a,
                         LLVMValueRef b, LLVMValueRef t, LLVMValueRef f)
{
    return LLVMBuildSelect(cg->B, LLVMBuildFCmp(cg->B, p, a, b, ""), t, f, "");
}

/* |a| with the sign of b */
static LLVMValueRef copysign_(st_llvm_cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    static const char nm[] = "llvm.copysign";
    unsigned id = LLVMLookupIntrinsicID(nm, sizeof nm - 1);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(cg->M, id, &t, 1);
    LLVMValueRef args[2] = {a, b};
    return LLVMBuildCall2(cg->B, LLVMIntrinsicGetType(cg->C, id, &t, 1), f,
                          args, 2, "");
}

/* Horner: c[0] x^(n-1) + ... + c[n-1] */
static LLVMValueRef horner(st_llvm_cg *cg, LLVMValueRef x, const double *c,
                           int n)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef p = C_(t, c[0]);
    for (int i = 1; i < n; i++)
        p = fma_(cg, p, x, C_(t, c[i]));
    return p;
}

/* ---- float ---- */

/* 2^n for i32 n in [-126, 127], as float */
static LLVMValueRef pow2f(st_llvm_cg *cg, LLVMValueRef n)
{
    LLVMValueRef b = LLVMBuildShl(cg->B,
        LLVMBuildAdd(cg->B, n, LLVMConstInt(cg->i32, 127, 0), ""),
        LLVMConstInt(cg->i32, 23, 0), "");
    return LLVMBuildBitCast(cg->B, b, cg->f32, "");
}

/* Cephes expf: x = n ln2 + r, |r| <= ln2/2, exp(r) = 1 + r + r^2 P(r);
 * 2^n applied as 2^(n/2) 2^(n - n/2) so that denormal results round once.
 * x clamped to [-110, 90] (results 0 and inf beyond); nan propagates. */
static LLVMValueRef exp_f32(st_llvm_cg *cg, LLVMValueRef x)
{
    LLVMTypeRef T = cg->f32;
    LLVMBuilderRef B = cg->B;
    x = sel_(cg, LLVMRealOLT, x, C_(T, -110.0), C_(T, -110.0), x);
    x = sel_(cg, LLVMRealOGT, x, C_(T, 90.0), C_(T, 90.0), x);
    LLVMValueRef magic = C_(T, 0x1.8p23);
    LLVMValueRef t = fma_(cg, x, C_(T, 1.44269504088896341), magic);
    LLVMValueRef j = sub_(cg, t, magic);
    LLVMValueRef r = fma_(cg, j, C_(T, -0.693359375), x);
    r = fma_(cg, j, C_(T, 2.12194440e-4), r);
    static const double P[] = {1.9875691500E-4, 1.3981999507E-3,
        8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
    LLVMValueRef p = horner(cg, r, P, 6);
    LLVMValueRef y = add_(cg, fma_(cg, p, mul_(cg, r, r), r), C_(T, 1.0));
    LLVMValueRef n = LLVMBuildSub(B, LLVMBuildBitCast(B, t, cg->i32, ""),
                                  LLVMConstInt(cg->i32, 0x4b400000, 0), "");
    LLVMValueRef n1 = LLVMBuildAShr(B, n, LLVMConstInt(cg->i32, 1, 0), "");
    LLVMValueRef n2 = LLVMBuildSub(B, n, n1, "");
    return mul_(cg, mul_(cg, y, pow2f(cg, n1)), pow2f(cg, n2));
}

/* Cephes logf: x = 2^e m, m in [sqrt(1/2), sqrt(2)), log(1+f) = f - f^2/2
 * + f^3 P(f); denormals scaled by 2^23 first; 0 -> -inf, < 0 or nan ->
 * nan, inf -> inf. */
static LLVMValueRef log_f32(st_llvm_cg *cg, LLVMValueRef x)
{
    LLVMTypeRef T = cg->f32;
    LLVMBuilderRef B = cg->B;
    LLVMValueRef den = LLVMBuildFCmp(B, LLVMRealOLT, x, C_(T, 0x1p-126), "");
    LLVMValueRef xs = LLVMBuildSelect(B, den, mul_(cg, x, C_(T, 0x1p23)), x, "");
    LLVMValueRef b = LLVMBuildBitCast(B, xs, cg->i32, "");
    LLVMValueRef e = LLVMBuildSub(B,
        LLVMBuildLShr(B, b, LLVMConstInt(cg->i32, 23, 0), ""),
        LLVMBuildSelect(B, den, LLVMConstInt(cg->i32, 126 + 23, 0),
                        LLVMConstInt(cg->i32, 126, 0), ""), "");
    LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B,
        LLVMBuildAnd(B, b, LLVMConstInt(cg->i32, 0x7fffff, 0), ""),
        LLVMConstInt(cg->i32, 0x3f000000, 0), ""), T, "");
    LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLT, m,
                                    C_(T, 0.707106781186547524), "");
    e = LLVMBuildSub(B, e, LLVMBuildZExt(B, lo, cg->i32, ""), "");
    LLVMValueRef ef = LLVMBuildSIToFP(B, e, T, "");
    m = sub_(cg, LLVMBuildSelect(B, lo, add_(cg, m, m), m, ""), C_(T, 1.0));
    LLVMValueRef z = mul_(cg, m, m);
    static const double P[] = {7.0376836292E-2, -1.1514610310E-1,
        1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
        2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1};
    LLVMValueRef y = mul_(cg, mul_(cg, horner(cg, m, P, 9), m), z);
    y = fma_(cg, ef, C_(T, -2.12194440e-4), y);
    y = fma_(cg, z, C_(T, -0.5), y);
    LLVMValueRef r = fma_(cg, ef, C_(T, 0.693359375), add_(cg, m, y));
    LLVMValueRef inf = C_(T, __builtin_inf());
    r = sel_(cg, LLVMRealOEQ, x, inf, inf, r);
    r = sel_(cg, LLVMRealOEQ, x, C_(T, 0.0), C_(T, -__builtin_inf()), r);
    return sel_(cg, LLVMRealULT, x, C_(T, 0.0), C_(T, __builtin_nan("")), r);
}

/* Cephes tanhf: |x| < 0.625: x + x^3 P(x^2); else 1 - 2/(exp(2|x|) + 1)
 * (saturates to +-1 through exp's overflow); the sign of x put on both
 * (so -0.0 stays -0.0). */
static LLVMValueRef tanh_f32(st_llvm_cg *cg, LLVMValueRef x)
{
    LLVMTypeRef T = cg->f32;
    LLVMValueRef a = un_(cg, "llvm.fabs", x);
    LLVMValueRef z = mul_(cg, x, x);
    static const double P[] = {-5.70498872745E-3, 2.06390887954E-2,
        -5.37397155531E-2, 1.33314422036E-1, -3.33332819422E-1};
    LLVMValueRef ys = fma_(cg, mul_(cg, horner(cg, z, P, 5), z), x, x);
    LLVMValueRef e = exp_f32(cg, add_(cg, a, a));
    LLVMValueRef yl = sub_(cg, C_(T, 1.0), LLVMBuildFDiv(cg->B, C_(T, 2.0),
                                         add_(cg, e, C_(T, 1.0)), ""));
    return copysign_(cg, sel_(cg, LLVMRealOLT, a, C_(T, 0.625), ys, yl), x);
}

/* erf in float32, pieces fitted (weighted least squares near minimax in
 * the result's ulp, coefficients rounded to float one at a time, lowest
 * first, the rest refitted): |x| < 1: x + x Q(x^2); [1, 2.25) and
 * [2.25, 3.92): P(|x| - m), m a float whose erf is within 0.003 ulp of a
 * float (the subtraction is exact); >= 3.92: 1 (erf rounds to 1 from
 * 3.9192059). Exhaustive check of every float: at most 1 ulp off the
 * correctly rounded erf, with or without fused multiply-adds. */
static const double erf_q1[] = {7.8951758e-05, -0.000802421651,
    0.0051901429, -0.0268549155, 0.11283616, -0.376126289, 0.128379166};
static const double erf_p2[] = {0.00126346783, -0.000928841473,
    -0.00608125608, 0.0147454152, -0.00264354888, -0.0496621095,
    0.115967467, -0.132727981, 0.0819646865, 0.977983713};
static const double erf_p3[] = {-0.000101997815, 0.000340421684,
    -0.000584993395, 0.000744805322, -0.00074357976, 0.000550090044,
    -0.000283789705, 9.23670887e-05, 0.999985635};

static LLVMValueRef erf_f32(st_llvm_cg *cg, LLVMValueRef x)
{
    LLVMTypeRef T = cg->f32;
    LLVMValueRef a = un_(cg, "llvm.fabs", x);
    LLVMValueRef b1 = fma_(cg, x, horner(cg, mul_(cg, x, x), erf_q1, 7), x);
    LLVMValueRef u2 = sub_(cg, a, C_(T, 1.6193358898162842));
    LLVMValueRef u3 = sub_(cg, a, C_(T, 3.067578077316284));
    LLVMValueRef v = sel_(cg, LLVMRealOGE, a, C_(T, 3.92), C_(T, 1.0),
                          horner(cg, u3, erf_p3, 9));
    v = sel_(cg, LLVMRealOLT, a, C_(T, 2.25), horner(cg, u2, erf_p2, 10), v);
    return sel_(cg, LLVMRealOLT, a, C_(T, 1.0), b1, copysign_(cg, v, x));
}

/* ---- double (for float results that need it) ---- */

/* exp(x) in double to ~1e-11 relative for x in [-150, 0] (callers' range;
 * clamped there, so -inf -> 2^-216, near 0 as a float result). */
static LLVMValueRef exp_f64_approx(st_llvm_cg *cg, LLVMValueRef x)
{
    LLVMTypeRef T = cg->f64;
    LLVMBuilderRef B = cg->B;
    x = sel_(cg, LLVMRealOLT, x, C_(T, -150.0), C_(T, -150.0), x);
    LLVMValueRef magic = C_(T, 0x1.8p52);
    LLVMValueRef t = fma_(cg, x, C_(T, 1.4426950408889634), magic);
    LLVMValueRef j = sub_(cg, t, magic);
    LLVMValueRef r = fma_(cg, j, C_(T, -6.93147180369123816490e-01), x);
    r = fma_(cg, j, C_(T, -1.90821492927058770002e-10), r);
    static const double P[] = {1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
        1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
    LLVMValueRef y = horner(cg, r, P, 10);
    LLVMValueRef n = LLVMBuildSub(B, LLVMBuildBitCast(B, t, cg->i64, ""),
        LLVMBuildBitCast(B, magic, cg->i64, ""), "");
    LLVMValueRef s = LLVMBuildBitCast(B, LLVMBuildShl(B,
        LLVMBuildAdd(B, n, LLVMConstInt(cg->i64, 1023, 0), ""),
        LLVMConstInt(cg->i64, 52, 0), ""), T, "");
    return mul_(cg, y, s);
}

/* 1/(1+exp(-x)) = (x >= 0 ? 1 : e)/(1 + e), e = exp(-|x|), in double */
static LLVMValueRef sigmoid_f32(st_llvm_cg *cg, LLVMValueRef x)
{
    LLVMTypeRef T = cg->f64;
    LLVMValueRef d = LLVMBuildFPExt(cg->B, x, T, "");
    LLVMValueRef e = exp_f64_approx(cg, LLVMBuildFNeg(cg->B,
                                    un_(cg, "llvm.fabs", d), ""));
    LLVMValueRef num = sel_(cg, LLVMRealOGE, d, C_(T, 0.0), C_(T, 1.0), e);
    LLVMValueRef r = LLVMBuildFDiv(cg->B, num, add_(cg, e, C_(T, 1.0)), "");
    return LLVMBuildFPTrunc(cg->B, r, cg->f32, "");
}

LLVMValueRef st_llvm_math(st_llvm_cg *cg, int op, LLVMValueRef x)
{
    if (LLVMTypeOf(x) != cg->f32)
        return NULL;
    switch (op) {
    case ST_OP_EXP: return exp_f32(cg, x);
    case ST_OP_LOG: return log_f32(cg, x);
    case ST_OP_TANH: return tanh_f32(cg, x);
    case ST_OP_SIGMOID: return sigmoid_f32(cg, x);
    case ST_OP_ERF: return erf_f32(cg, x);
    default: return NULL;
    }
}
