/* test_llvm - tests of the LLVM backend (llvm_backend/) and the on-disk
 * kernel cache (runtime/kcache.c): every lowered primitive and composite op
 * run through st_fuse_lower + st_rt_exec with both "llvm" and the oracle
 * "interp" on random inputs of every dtype; hand-built kernels with several
 * reductions and matmul epilogues against C references; the thread pool;
 * the disk cache (a second process compiles nothing; a corrupted or a
 * truncated file is detected, rebuilt, never loaded). Exits non-zero
 * naming each failed check. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "st_llvm.h"
#include "st_test.h"

static st_backend *LB, *IB;

static uint64_t lcg = 12345;
static double frand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) * (1.0 / 9007199254740992.0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- tensors ---- */

static double get_el(const st_tensor *t, int64_t i)
{
    const char *d = st_tensor_data(t);
    switch (t->dtype) {
    case ST_BOOL: return ((const uint8_t *)d)[i];
    case ST_INT32: return ((const int32_t *)d)[i];
    case ST_INT64: return (double)((const int64_t *)d)[i];
    case ST_FLOAT16: return st_half_to_float(((const uint16_t *)d)[i]);
    case ST_BFLOAT16: return st_bf16_to_float(((const uint16_t *)d)[i]);
    case ST_FLOAT32: return ((const float *)d)[i];
    default: return ((const double *)d)[i];
    }
}

static void set_el(st_tensor *t, int64_t i, double v)
{
    char *d = st_tensor_data(t);
    switch (t->dtype) {
    case ST_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    case ST_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case ST_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case ST_FLOAT16: ((uint16_t *)d)[i] = st_float_to_half((float)v); break;
    case ST_BFLOAT16: ((uint16_t *)d)[i] = st_float_to_bf16((float)v); break;
    case ST_FLOAT32: ((float *)d)[i] = (float)v; break;
    default: ((double *)d)[i] = v; break;
    }
}

/* kind 0: general values; 1: positive; 2: indices in [0, hi) */
static st_tensor *rnd(st_dtype dt, int ndim, const int64_t *shape, int kind,
                      double hi)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), dt, ndim, shape);
    int64_t n = st_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (kind == 2)
            v = floor(frand() * hi);
        else if (dt == ST_BOOL)
            v = frand() < 0.5;
        else if (st_dtype_is_float(dt))
            v = kind == 1 ? 0.1 + 3 * frand() : 6 * frand() - 3;
        else
            v = kind == 1 ? 1 + floor(frand() * 9) : floor(frand() * 21) - 10;
        set_el(t, i, v);
    }
    return t;
}

/* ---- running graphs ---- */

/* Lowers g and runs it with be; outs[k] = output k (owned). */
static st_status run_graph(st_backend *be, const st_graph *g,
                           st_tensor **inputs, st_tensor **outs)
{
    st_kprog *p = st_fuse_lower(g, NULL);
    if (!p)
        return st_err_kind();
    void *h = be->compile(be, p->kernels, p->nkernels);
    st_status s = st_err_kind();
    st_tensor **vals = NULL;
    if (!h)
        goto done;
    vals = calloc((size_t)p->graph->nvalues, sizeof *vals);
    for (int i = 0; i < p->graph->ninputs; i++) {
        vals[p->graph->inputs[i]] = inputs[i];
        st_tensor_incref(inputs[i]);
    }
    st_rt_manual_seed(1234);
    s = st_rt_exec(p, be, h, vals);
    if (s == ST_OK)
        for (int o = 0; o < p->graph->noutputs; o++) {
            outs[o] = vals[p->graph->outputs[o]];
            if (outs[o])
                st_tensor_incref(outs[o]);
        }
    for (int v = 0; v < p->graph->nvalues; v++)
        if (vals[v])
            st_tensor_decref(vals[v]);
done:
    free(vals);
    if (h)
        be->release(be, h);
    st_kprog_free(p);
    return s;
}

static bool close_el(double a, double b, double tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= tol * (1 + fabs(b));
}

static double tol_for(st_dtype dt)
{
    switch (dt) {
    case ST_FLOAT16: return 2e-3;
    case ST_BFLOAT16: return 1.6e-2;
    case ST_FLOAT32: return 2e-6;
    case ST_FLOAT64: return 1e-12;
    default: return 0;
    }
}

/* Runs g with both backends and compares every output. */
static void both(const char *name, const st_graph *g, st_tensor **inputs)
{
    st_tensor *ol[ST_MAX_OUT * 4] = {0}, *oi[ST_MAX_OUT * 4] = {0};
    st_status si = run_graph(IB, g, inputs, oi);
    char imsg[300];
    snprintf(imsg, sizeof imsg, "%s", st_err_msg());
    st_err_clear();
    st_status sl = run_graph(LB, g, inputs, ol);
    CHECK(si == sl, "%s: interp status %d (%s), llvm %d", name, si, imsg, sl);
    if (si != ST_OK || sl != ST_OK) {
        if (si != ST_OK && sl == si)
            CHECK(strcmp(imsg, st_err_msg()) == 0, "%s: messages '%s' vs '%s'",
                  name, imsg, st_err_msg());
        st_err_clear();
        goto out;
    }
    for (int o = 0; o < g->noutputs; o++) {
        st_tensor *a = ol[o], *b = oi[o];
        CHECK(a && b, "%s: output %d missing", name, o);
        if (!a || !b)
            continue;
        CHECK(a->dtype == b->dtype && a->ndim == b->ndim, "%s: meta", name);
        st_tensor *ca = st_tensor_contiguous(a), *cb = st_tensor_contiguous(b);
        int64_t n = st_tensor_numel(cb);
        double tol = tol_for(b->dtype);
        if (strncmp(name, "matmul", 6) == 0 || strncmp(name, "linear", 6) == 0)
            tol *= 100; /* BLAS sums in another order */
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 3; i++) {
            double x = get_el(ca, i), y = get_el(cb, i);
            if (!close_el(x, y, tol)) {
                bad++;
                CHECK(0, "%s: output %d elem %lld: llvm %.9g interp %.9g (%s)",
                      name, o, (long long)i, x, y, st_dtype_name(b->dtype));
            }
        }
        st_test_checks++;
        st_tensor_decref(ca);
        st_tensor_decref(cb);
    }
out:
    for (int o = 0; o < ST_MAX_OUT * 4; o++) {
        if (ol[o])
            st_tensor_decref(ol[o]);
        if (oi[o])
            st_tensor_decref(oi[o]);
    }
}

static st_attrs A0(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

static int in_of(st_graph *g, st_dtype dt, int nd, const int64_t *sh)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = nd;
    for (int i = 0; i < nd; i++)
        m.shape[i] = sh[i];
    return st_ir_add_input(g, &m, false);
}

static int op_of(st_graph *g, st_op_id op, const int *in, int nin,
                 const st_attrs *a)
{
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = A0();
    if (st_ir_add_stmt(g, op, in, nin, a ? a : &z, outs) < 0)
        return -1;
    return outs[0];
}


/* ---- lowered ops, both backends ---- */

static const st_dtype all_dt[] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16,
                                  ST_BFLOAT16, ST_INT32, ST_INT64, ST_BOOL};
#define NDT 7

/* one-op graph over inputs of the given dtypes/shapes; kinds: input kind */
static void one_op(const char *name, st_op_id op, int nin, const st_dtype *dts,
                   const int *nds, const int64_t (*shs)[4], const int *kinds,
                   const double *his, const st_attrs *a)
{
    st_graph *g = st_ir_graph_new();
    int ins[ST_MAX_IN];
    st_tensor *ts[ST_MAX_IN] = {0};
    for (int i = 0; i < nin; i++) {
        ins[i] = in_of(g, dts[i], nds[i], shs[i]);
        ts[i] = rnd(dts[i], nds[i], shs[i], kinds ? kinds[i] : 0,
                    his ? his[i] : 0);
    }
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = A0();
    int si = st_ir_add_stmt(g, op, ins, nin, a ? a : &z, outs);
    if (si < 0) { /* not a valid combination: skip */
        st_err_clear();
    } else {
        for (int o = 0; o < g->stmts[si].nout; o++)
            st_ir_mark_output(g, outs[o]);
        char nm[160];
        snprintf(nm, sizeof nm, "%s(%s%s%s)", name, st_dtype_name(dts[0]),
                 nin > 1 ? "," : "", nin > 1 ? st_dtype_name(dts[1]) : "");
        both(nm, g, ts);
    }
    for (int i = 0; i < nin; i++)
        st_tensor_decref(ts[i]);
    st_ir_graph_free(g);
}

static void test_elementwise_ops(void)
{
    static const int64_t sh[4][4] = {{4, 37}, {4, 37}, {4, 37}};
    int nds[3] = {2, 2, 2};
    for (int op = ST_OP_NEG; op <= ST_OP_SIGN; op++)
        for (int d = 0; d < NDT; d++) {
            int kind = (op == ST_OP_LOG || op == ST_OP_SQRT || op == ST_OP_RSQRT) ? 1 : 0;
            one_op(st_op(op)->name, op, 1, &all_dt[d], nds, sh, &kind, NULL, NULL);
        }
    for (int d = 0; d < NDT; d++)
        for (int e = 0; e < NDT; e++) {
            st_attrs a = A0();
            a.dtype = all_dt[e];
            one_op("cast", ST_OP_CAST, 1, &all_dt[d], nds, sh, NULL, NULL, &a);
        }
    /* binary ops: same dtypes, mixed, broadcasting */
    static const int64_t bsh[2][4] = {{3, 1, 33}, {4, 33}};
    int bnd[2] = {3, 2};
    for (int op = ST_OP_ADD; op <= ST_OP_REMAINDER; op++) {
        for (int d = 0; d < NDT; d++) {
            st_dtype dts[2] = {all_dt[d], all_dt[d]};
            int kinds[2] = {0, op == ST_OP_POW && !st_dtype_is_float(all_dt[d]) ? 1 : 0};
            one_op(st_op(op)->name, op, 2, dts, bnd, bsh, kinds, NULL, NULL);
        }
        st_dtype mix[3][2] = {{ST_FLOAT32, ST_INT64}, {ST_FLOAT32, ST_FLOAT64},
                              {ST_INT32, ST_INT64}};
        for (int m = 0; m < 3; m++) {
            int kinds[2] = {0, op == ST_OP_POW ? 1 : 0};
            one_op(st_op(op)->name, op, 2, mix[m], bnd, bsh, kinds, NULL, NULL);
        }
    }
    /* where */
    for (int d = 0; d < NDT; d++) {
        st_dtype dts[3] = {ST_BOOL, all_dt[d], all_dt[d]};
        one_op("where", ST_OP_WHERE, 3, dts, nds, sh, NULL, NULL, NULL);
    }
    /* a large one: the thread pool */
    static const int64_t big[2][4] = {{300, 1111}, {300, 1111}};
    int bn[2] = {2, 2};
    st_dtype f2[2] = {ST_FLOAT32, ST_FLOAT32};
    one_op("big add", ST_OP_ADD, 2, f2, bn, big, NULL, NULL, NULL);
    st_dtype h2[2] = {ST_FLOAT16, ST_FLOAT16};
    one_op("big mul f16", ST_OP_MUL, 2, h2, bn, big, NULL, NULL, NULL);
    static const int64_t bb[2][4] = {{300, 1}, {1, 1111}};
    one_op("big broadcast", ST_OP_SUB, 2, f2, bn, bb, NULL, NULL, NULL);
}

/* Distance of a from b in units of the float32 ulp at b (denormal ulp
 * 2^-149); 0 for equal infinities/nans, huge for mismatched ones. */
static double ulps_f32(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b) ? 0 : 1e30;
    if (isinf(a) || isinf(b))
        return a == b ? 0 : 1e30;
    float ab = fabsf(b);
    double u = ab < 0x1p-126f ? 0x1p-149
             : (double)nextafterf(ab, INFINITY) - (double)ab;
    return fabs((double)a - (double)b) / u;
}

/* The inline float32 exp/log/tanh/sigmoid/erf (codegen_math.c) against
 * interp (double, rounded once) over a dense sweep: 1M points of
 * [-100, 100], 1M scattered bit patterns (every binade, both signs) and
 * the special values; at most 2 ulp, the same sign (-0.0 stays -0.0).
 * float16/bfloat16 on a smaller sweep with the usual tolerance. */
static void test_math_sweep(void)
{
    static const int ops[] = {ST_OP_EXP, ST_OP_LOG, ST_OP_TANH,
                              ST_OP_SIGMOID, ST_OP_ERF};
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN,
        88.72f, 88.73f, 89.0f, -87.3f, -103.9f, -104.0f, -110.0f, 9.0f,
        -9.0f, 9.1f, 3.92f, -3.92f, 4.0f, 0.625f, -0.625f, 1.0f, 2.5f,
        0x1p-149f, 0x1p-126f, 0x1.fffffep127f, -0x1p-149f, 1e-30f, 1.0e-7f};
    int nsp = (int)(sizeof special / sizeof special[0]);
    int64_t n = 2000000 + nsp;
    st_tensor *x = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 1, &n);
    float *xd = st_tensor_data(x);
    for (int64_t i = 0; i < 1000000; i++)
        xd[i] = (float)(-100.0 + 200.0 * (double)i / 999999.0);
    for (int64_t i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)(i * 4294u) ^ (uint32_t)(frand() * 4096);
        memcpy(&xd[1000000 + i], &u, 4);
    }
    for (int i = 0; i < nsp; i++)
        xd[2000000 + i] = special[i];
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (int d = 0; d < 3; d++) {
            st_dtype dt = d == 0 ? ST_FLOAT32 : d == 1 ? ST_FLOAT16 : ST_BFLOAT16;
            int64_t m = d == 0 ? n : 100000;
            st_graph *g = st_ir_graph_new();
            int in = in_of(g, dt, 1, &m);
            st_ir_mark_output(g, op_of(g, ops[o], &in, 1, NULL));
            st_tensor *xi = x;
            if (d) {
                xi = st_tensor_empty(st_rt_cpu(), dt, 1, &m);
                for (int64_t i = 0; i < m; i++)
                    set_el(xi, i, xd[i * (n / m)]);
            }
            st_tensor *ol[ST_MAX_OUT * 4] = {0}, *oi[ST_MAX_OUT * 4] = {0};
            st_status sl = run_graph(LB, g, &xi, ol);
            st_status si = run_graph(IB, g, &xi, oi);
            CHECK(sl == ST_OK && si == ST_OK, "math sweep %s: status",
                  st_op(ops[o])->name);
            if (sl == ST_OK && si == ST_OK) {
                double worst = 0, tol = tol_for(dt);
                int64_t wi = 0, bad = 0;
                for (int64_t i = 0; i < m; i++) {
                    double a = get_el(ol[0], i), b = get_el(oi[0], i);
                    if (d == 0) {
                        double e = ulps_f32((float)a, (float)b);
                        if (!isnan(a) && !isnan(b) &&
                            signbit(a) != signbit(b) && bad++ < 3)
                            CHECK(0, "math sweep %s x=%a: sign of %a vs "
                                  "interp %a", st_op(ops[o])->name,
                                  (double)xd[i], a, b);
                        if (e > worst) {
                            worst = e;
                            wi = i;
                        }
                    } else if (!close_el(a, b, tol) && bad++ < 3) {
                        CHECK(0, "math sweep %s(%s) x=%.9g: llvm %.9g interp "
                              "%.9g", st_op(ops[o])->name, st_dtype_name(dt),
                              get_el(xi, i), a, b);
                    }
                }
                if (d == 0) {
                    printf("math sweep %-8s float32: max %.3f ulp (x=%a)\n",
                           st_op(ops[o])->name, worst, (double)xd[wi]);
                    CHECK(worst <= 2.0, "math sweep %s: %.3f ulp at x=%a: "
                          "llvm %a interp %a", st_op(ops[o])->name, worst,
                          (double)xd[wi], get_el(ol[0], wi),
                          get_el(oi[0], wi));
                }
            }
            for (int k = 0; k < ST_MAX_OUT * 4; k++) {
                if (ol[k])
                    st_tensor_decref(ol[k]);
                if (oi[k])
                    st_tensor_decref(oi[k]);
            }
            if (d)
                st_tensor_decref(xi);
            st_ir_graph_free(g);
        }
    }
    st_tensor_decref(x);
}

static void test_reductions(void)
{
    static const int64_t sh[1][4] = {{5, 6, 7}};
    int nd[1] = {3};
    st_op_id ops[] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN,
                      ST_OP_ARGMAX, ST_OP_ARGMIN, ST_OP_PROD};
    for (unsigned o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int d = 0; d < NDT; d++)
            for (int v = 0; v < 4; v++) {
                st_attrs a = A0();
                bool arg = ops[o] == ST_OP_ARGMAX || ops[o] == ST_OP_ARGMIN;
                if (v == 1) { a.ndims = 1; a.dims[0] = 2; }
                if (v == 2) { a.ndims = 1; a.dims[0] = 0; a.flags = ST_ATTR_KEEPDIM; }
                if (v == 3) {
                    if (arg)
                        continue;
                    a.ndims = 2; a.dims[0] = 0; a.dims[1] = 2;
                }
                one_op(st_op(ops[o])->name, ops[o], 1, &all_dt[d], nd, sh,
                       NULL, NULL, &a);
            }
    /* a long row and many rows (pool) */
    static const int64_t lr[1][4] = {{3, 100003}};
    static const int64_t mr[1][4] = {{4000, 77}};
    int n2[1] = {2};
    st_dtype f = ST_FLOAT32;
    st_attrs a = A0();
    a.ndims = 1;
    a.dims[0] = 1;
    one_op("long sum", ST_OP_SUM, 1, &f, n2, lr, NULL, NULL, &a);
    one_op("many amax", ST_OP_AMAX, 1, &f, n2, mr, NULL, NULL, &a);
    one_op("many argmin", ST_OP_ARGMIN, 1, &f, n2, mr, NULL, NULL, &a);
}

/* A column sum (over dim 0 of [R, O]: the column path) with an odd outer
 * size runs on the pool, one outer range a thread (jit.c gives such
 * kernels grain O / threads; a grain rounded up would leave fewer than two
 * chunks and run serial), and agrees with the interpreter. */
static void test_column_chunks(void)
{
    static const int64_t shs[3][4] = {{600, 1023}, {30, 20, 1001}, {2000, 3}};
    int n2[1] = {2}, n3[1] = {3};
    st_dtype f = ST_FLOAT64; /* double accumulators: interp's sums */
    for (int i = 0; i < 3; i++) {
        st_attrs a = A0();
        a.ndims = i == 1 ? 2 : 1;
        a.dims[0] = 0;
        a.dims[1] = 1;
        st_llvm_stats_t s0, s1;
        st_llvm_stats(&s0);
        one_op("column sum", ST_OP_SUM, 1, &f, i == 1 ? n3 : n2, &shs[i], NULL,
               NULL, &a);
        st_llvm_stats(&s1);
        if (s1.threads > 1 && i < 2)
            CHECK(s1.parallel_launches > s0.parallel_launches,
                  "column sum %d: ran serial", i);
    }
}

/* An elementwise kernel's adjacent dims that every buffer walks as one are
 * merged at launch (jit.c merge_dims): a contiguous [3, 5, 6, 7] add is one
 * row, a [6, 7] operand broadcast over [3, 5] leaves rows of 42 over 15
 * outer points; both agree with the interpreter (both()). A kernel that
 * reads its coordinates (arange) keeps its dims. */
static void test_merged_dims(void)
{
    static const int64_t full[2][4] = {{3, 5, 6, 7}, {3, 5, 6, 7}};
    static const int64_t bcast[2][4] = {{3, 5, 6, 7}, {6, 7}};
    int n44[2] = {4, 4}, n42[2] = {4, 2};
    st_dtype ff[2] = {ST_FLOAT32, ST_FLOAT32};
    st_llvm_stats_t s0, s1;
    st_llvm_stats(&s0);
    one_op("merged add", ST_OP_ADD, 2, ff, n44, full, NULL, NULL, NULL);
    st_llvm_stats(&s1);
    CHECK(s1.merged_launches > s0.merged_launches, "contiguous add: dims not merged");
    st_llvm_stats(&s0);
    one_op("merged broadcast add", ST_OP_ADD, 2, ff, n42, bcast, NULL, NULL, NULL);
    st_llvm_stats(&s1);
    CHECK(s1.merged_launches > s0.merged_launches, "broadcast add: dims not merged");
    /* a reduction's row (its trailing reduced dims) merged too: sums over
     * (1, 2, 3) and over (0, 2, 3) (a batch norm's), an amax over (2, 3),
     * each against the interpreter (whole numbers: every order sums them
     * exactly) */
    static const int64_t one[1][4] = {{3, 5, 6, 7}};
    int n4[1] = {4}, whole[1] = {2};
    double his[1] = {9};
    st_attrs a = A0();
    a.ndims = 3;
    a.dims[0] = 1, a.dims[1] = 2, a.dims[2] = 3;
    st_llvm_stats(&s0);
    one_op("merged row sum", ST_OP_SUM, 1, ff, n4, one, whole, his, &a);
    st_llvm_stats(&s1);
    CHECK(s1.merged_launches > s0.merged_launches, "sum over (1, 2, 3): row not merged");
    a.dims[0] = 0;
    st_llvm_stats(&s0);
    one_op("merged channel sum", ST_OP_SUM, 1, ff, n4, one, whole, his, &a);
    st_llvm_stats(&s1);
    CHECK(s1.merged_launches > s0.merged_launches, "sum over (0, 2, 3): row not merged");
    a.ndims = 2;
    a.dims[0] = 2, a.dims[1] = 3;
    one_op("merged row amax", ST_OP_AMAX, 1, ff, n4, one, NULL, NULL, &a);
}

/* amax/amin of floats (accumulated through llvm.maximum/minimum, vectorized)
 * and softmax (max, then sum) against the interpreter on rows holding NaN
 * (first, middle, last: vector body and tail), infinities and zeros, of
 * lengths around the vector width. The one allowed difference: a row whose
 * extreme is a zero of both signs gives +0.0 (max) / -0.0 (min) under llvm,
 * where the interpreter keeps the first zero (both() compares values). */
static void test_minmax_special(void)
{
    static const st_dtype fd[] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16, ST_BFLOAT16};
    static const int64_t lens[] = {1, 3, 8, 17, 64, 100, 1027};
    enum { NPAT = 9 };
    for (unsigned d = 0; d < sizeof fd / sizeof fd[0]; d++)
        for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int64_t L = lens[li], sh[2] = {NPAT, L};
            st_tensor *x = rnd(fd[d], 2, sh, 0, 0);
            for (int p = 0; p < NPAT; p++)
                for (int64_t j = 0; j < L; j++) {
                    int64_t i = p * L + j;
                    switch (p) {
                    case 1: if (j == 0) set_el(x, i, NAN); break;
                    case 2: if (j == L / 2) set_el(x, i, NAN); break;
                    case 3: if (j == L - 1) set_el(x, i, NAN); break;
                    case 4: set_el(x, i, -INFINITY); break;
                    case 5:
                        if (j == L / 2)
                            set_el(x, i, INFINITY);
                        else if (j == L - 1)
                            set_el(x, i, -INFINITY);
                        break;
                    case 6: set_el(x, i, j % 2 ? 0.0 : -0.0); break;
                    case 7: set_el(x, i, NAN); break;
                    case 8: set_el(x, i, -1000.0 - (double)j); break;
                    default: break;
                    }
                }
            st_op_id ops[] = {ST_OP_AMAX, ST_OP_AMIN, ST_OP_SOFTMAX};
            for (int o = 0; o < 3; o++) {
                st_graph *g = st_ir_graph_new();
                int in = in_of(g, fd[d], 2, sh);
                st_attrs a = A0();
                if (ops[o] == ST_OP_SOFTMAX) {
                    a.i[0] = 1;
                } else {
                    a.ndims = 1;
                    a.dims[0] = 1;
                }
                int y = op_of(g, ops[o], &in, 1, &a);
                CHECK(y >= 0, "minmax special: graph");
                if (y >= 0) {
                    st_ir_mark_output(g, y);
                    char name[64];
                    snprintf(name, sizeof name, "special %s %s len %lld",
                             st_op(ops[o])->name, st_dtype_name(fd[d]), (long long)L);
                    both(name, g, &x);
                    if (ops[o] != ST_OP_SOFTMAX) {
                        st_tensor *out[ST_MAX_OUT * 4] = {0};
                        CHECK(run_graph(LB, g, &x, out) == ST_OK && out[0], "%s: run", name);
                        if (out[0]) {
                            double z = get_el(out[0], 6);
                            CHECK(z == 0 && (L == 1 || !signbit(z) == (ops[o] == ST_OP_AMAX)),
                                  "%s: zeros row gives %g (signbit %d)", name, z, signbit(z) != 0);
                            st_tensor_decref(out[0]);
                        }
                    }
                }
                st_ir_graph_free(g);
            }
            st_tensor_decref(x);
        }
}

/* The matmul driver's paths (llvm_backend/matmul.c) against interp: a
 * long-K product split across the pool (partial products summed), and an
 * epilogue that only adds a tensor (gemm with beta 1 into the output
 * prefilled with it): full, bias-broadcast and batched X, plain and with
 * transposed operands. */
static void test_matmul_paths(void)
{
    for (int d = 0; d < 2; d++) {
        st_dtype dt = d ? ST_FLOAT64 : ST_FLOAT32;
        /* long K: [8, 8192] x [8192, 8] (and A transposed) */
        for (int ta = 0; ta < 2; ta++) {
            st_graph *g = st_ir_graph_new();
            int64_t sa[2] = {ta ? 8192 : 8, ta ? 8 : 8192}, sb[2] = {8192, 8};
            int x = in_of(g, dt, 2, sa), y = in_of(g, dt, 2, sb);
            if (ta) {
                st_attrs p = A0();
                p.ndims = 2;
                p.dims[0] = 1;
                p.dims[1] = 0;
                x = op_of(g, ST_OP_PERMUTE, &x, 1, &p);
            }
            int ab[2] = {x, y};
            st_ir_mark_output(g, op_of(g, ST_OP_MATMUL, ab, 2, NULL));
            st_tensor *ts[2] = {rnd(dt, 2, sa, 0, 0), rnd(dt, 2, sb, 0, 0)};
            both(ta ? "matmul long K transposed" : "matmul long K", g, ts);
            st_tensor_decref(ts[0]);
            st_tensor_decref(ts[1]);
            st_ir_graph_free(g);
        }
        /* add epilogues: X of the output's shape, a bias row, batched */
        static const int64_t xs[3][3] = {{40, 50}, {50}, {3, 40, 50}};
        static const int xn[3] = {2, 1, 3};
        for (int c = 0; c < 3; c++) {
            st_graph *g = st_ir_graph_new();
            int64_t sa[3] = {3, 40, 30}, sb[3] = {3, 30, 50};
            int nd = c == 2 ? 3 : 2;
            const int64_t *pa = nd == 3 ? sa : sa + 1, *pb = nd == 3 ? sb : sb + 1;
            int x = in_of(g, dt, nd, pa), y = in_of(g, dt, nd, pb);
            int z = in_of(g, dt, xn[c], xs[c]);
            int ab[2] = {x, y};
            int mm = op_of(g, ST_OP_MATMUL, ab, 2, NULL);
            int ad[2] = {c == 1 ? z : mm, c == 1 ? mm : z};
            st_ir_mark_output(g, op_of(g, ST_OP_ADD, ad, 2, NULL));
            st_tensor *ts[3] = {rnd(dt, nd, pa, 0, 0), rnd(dt, nd, pb, 0, 0),
                                rnd(dt, xn[c], xs[c], 0, 0)};
            both(c == 0 ? "matmul add full" : c == 1 ? "matmul add bias"
                                                     : "matmul add batched", g, ts);
            for (int i = 0; i < 3; i++)
                st_tensor_decref(ts[i]);
            st_ir_graph_free(g);
        }
    }
}

static void test_matmul_ops(void)
{
    static const int64_t s1[2][4] = {{5, 7}, {7, 3}};
    static const int64_t s2[2][4] = {{2, 5, 7}, {7, 3}};
    static const int64_t s3[2][4] = {{2, 1, 64, 48}, {3, 48, 40}};
    int n1[2] = {2, 2}, n2[2] = {3, 2}, n3[2] = {4, 3};
    st_dtype dts[5][2] = {{ST_FLOAT32, ST_FLOAT32}, {ST_FLOAT64, ST_FLOAT64},
                          {ST_FLOAT16, ST_FLOAT16}, {ST_INT64, ST_INT64},
                          {ST_BFLOAT16, ST_BFLOAT16}};
    for (int d = 0; d < 5; d++) {
        one_op("matmul", ST_OP_MATMUL, 2, dts[d], n1, s1, NULL, NULL, NULL);
        one_op("matmul batched", ST_OP_MATMUL, 2, dts[d], n2, s2, NULL, NULL, NULL);
        one_op("matmul bcast", ST_OP_MATMUL, 2, dts[d], n3, s3, NULL, NULL, NULL);
    }
    /* transposed operands (views inside the graph) */
    for (int d = 0; d < 2; d++) {
        st_graph *g = st_ir_graph_new();
        int64_t sa[2] = {33, 20}, sb[2] = {17, 33};
        int x = in_of(g, dts[d][0], 2, sa), y = in_of(g, dts[d][0], 2, sb);
        st_attrs p = A0();
        p.ndims = 2;
        p.dims[0] = 1;
        p.dims[1] = 0;
        int xt = op_of(g, ST_OP_PERMUTE, &x, 1, &p);
        int yt = op_of(g, ST_OP_PERMUTE, &y, 1, &p);
        int ab[2] = {xt, yt};
        int r = op_of(g, ST_OP_MATMUL, ab, 2, NULL);
        st_ir_mark_output(g, r);
        st_tensor *ts[2] = {rnd(dts[d][0], 2, sa, 0, 0), rnd(dts[d][0], 2, sb, 0, 0)};
        both("matmul transposed", g, ts);
        st_tensor_decref(ts[0]);
        st_tensor_decref(ts[1]);
        st_ir_graph_free(g);
    }
}

static void test_index_ops(void)
{
    /* gather / index_select / scatter_add / embedding, and a bounds error */
    for (int bad = 0; bad < 2; bad++) {
        static const int64_t s[2][4] = {{6, 9}, {4}};
        int nd[2] = {2, 1};
        st_dtype dts[2] = {ST_FLOAT32, ST_INT64};
        int kinds[2] = {0, 2};
        double his[2] = {0, bad ? 9 : 6};
        st_attrs a = A0();
        a.i[0] = 0;
        one_op(bad ? "index_select oob" : "index_select", ST_OP_INDEX_SELECT, 2,
               dts, nd, s, kinds, his, &a);
        static const int64_t e[2][4] = {{10, 8}, {3, 5}};
        int ne[2] = {2, 2};
        double eh[2] = {0, bad ? 12 : 10};
        a.i[0] = -1;
        one_op(bad ? "embedding oob" : "embedding", ST_OP_EMBEDDING, 2, dts, ne, e,
               kinds, eh, &a);
        static const int64_t gs[2][4] = {{5, 7}, {5, 4}};
        int ng[2] = {2, 2};
        double gh[2] = {0, bad ? 8 : 7};
        a.i[0] = 1;
        one_op(bad ? "gather oob" : "gather", ST_OP_GATHER, 2, dts, ng, gs, kinds,
               gh, &a);
        static const int64_t ss[3][4] = {{5, 7}, {5, 4}, {5, 4}};
        int ns[3] = {2, 2, 2};
        st_dtype sd[3] = {ST_FLOAT32, ST_INT64, ST_FLOAT32};
        int sk[3] = {0, 2, 0};
        double sh2[3] = {0, bad ? 9 : 7, 0};
        one_op(bad ? "scatter_add oob" : "scatter_add", ST_OP_SCATTER_ADD, 3, sd,
               ns, ss, sk, sh2, &a);
        /* scatter: a repeated position keeps the last value on both (the
         * LLVM backend runs indexed stores in point order, as interp) */
        one_op(bad ? "scatter oob" : "scatter", ST_OP_SCATTER, 3, sd, ns, ss, sk,
               sh2, &a);
    }
}

static void test_composites(void)
{
    static const int64_t s[3][4] = {{6, 50}, {50}, {50}};
    int nd[3] = {2, 1, 1};
    st_dtype f3[3] = {ST_FLOAT32, ST_FLOAT32, ST_FLOAT32};
    st_dtype d3[3] = {ST_FLOAT64, ST_FLOAT64, ST_FLOAT64};
    st_dtype *ds[2] = {f3, d3};
    for (int v = 0; v < 2; v++) {
        st_attrs a = A0();
        a.i[0] = 1;
        one_op("softmax", ST_OP_SOFTMAX, 1, ds[v], nd, s, NULL, NULL, &a);
        one_op("log_softmax", ST_OP_LOG_SOFTMAX, 1, ds[v], nd, s, NULL, NULL, &a);
        a = A0();
        a.ndims = 1;
        a.f[0] = 1e-5;
        a.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
        one_op("layer_norm", ST_OP_LAYER_NORM, 3, ds[v], nd, s, NULL, NULL, &a);
        a = A0();
        one_op("gelu", ST_OP_GELU, 1, ds[v], nd, s, NULL, NULL, &a);
        a.flags = ST_ATTR_TANH;
        one_op("gelu tanh", ST_OP_GELU, 1, ds[v], nd, s, NULL, NULL, &a);
        a = A0();
        a.f[0] = -0.5;
        a.f[1] = 0.7;
        a.flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX;
        one_op("clamp", ST_OP_CLAMP, 1, ds[v], nd, s, NULL, NULL, &a);
        a = A0();
        a.f[0] = 0.3;
        one_op("dropout", ST_OP_DROPOUT, 1, ds[v], nd, s, NULL, NULL, &a);
        static const int64_t ls[3][4] = {{6, 50}, {20, 50}, {20}};
        int ln[3] = {2, 2, 1};
        a = A0();
        a.flags = ST_ATTR_HAS_BIAS;
        one_op("linear", ST_OP_LINEAR, 3, ds[v], ln, ls, NULL, NULL, &a);
        static const int64_t cs[2][4] = {{6, 50}, {6}};
        int cn[2] = {2, 1};
        st_dtype cd[2] = {ds[v][0], ST_INT64};
        int ck[2] = {0, 2};
        double chh[2] = {0, 50};
        for (int red = 0; red < 3; red++) {
            a = A0();
            a.i[0] = -100;
            a.i[1] = red;
            one_op("cross_entropy", ST_OP_CROSS_ENTROPY, 2, cd, cn, cs, ck, chh, &a);
        }
    }
    /* creation and random ops */
    st_op_id cr[] = {ST_OP_FULL, ST_OP_ARANGE, ST_OP_RAND, ST_OP_RANDN, ST_OP_RANDINT};
    for (unsigned c = 0; c < 5; c++)
        for (int d = 0; d < NDT; d++) {
            st_attrs a = A0();
            a.ndims = cr[c] == ST_OP_ARANGE ? 1 : 2;
            a.dims[0] = 40;
            a.dims[1] = 3;
            a.dtype = all_dt[d];
            a.f[0] = cr[c] == ST_OP_RANDN ? 0.5 : 1.5;
            a.f[1] = 2.0;
            a.i[0] = 2;
            a.i[1] = 9;
            st_graph *g = st_ir_graph_new();
            int outs[ST_MAX_OUT];
            if (st_ir_add_stmt(g, cr[c], NULL, 0, &a, outs) >= 0) {
                st_ir_mark_output(g, outs[0]);
                char nm[64];
                snprintf(nm, sizeof nm, "%s(%s)", st_op(cr[c])->name,
                         st_dtype_name(all_dt[d]));
                both(nm, g, NULL);
            }
            st_err_clear();
            st_ir_graph_free(g);
        }
}

/* ---- hand-built kernels (several reductions, matmul epilogues) ---- */

static st_knode mk(st_knode_kind kind, st_dtype dt, int phase)
{
    st_knode n;
    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.dtype = dt;
    n.a = n.b = n.c = -1;
    n.buf = -1;
    n.idx_dim = -1;
    n.phase = phase;
    return n;
}

static int nload(st_kernel *k, int buf, int phase)
{
    st_knode n = mk(ST_KN_LOAD, k->bufs[buf].dtype, phase);
    n.buf = buf;
    return st_kernel_node(k, &n);
}

static int nop(st_kernel *k, st_knode_kind kind, int op, int a, int b, int phase)
{
    st_knode n = mk(kind, k->nodes[a].dtype, phase);
    n.op = op;
    n.a = a;
    n.b = b;
    return st_kernel_node(k, &n);
}

static int nred(st_kernel *k, int r, st_dtype dt, int phase)
{
    st_knode n = mk(ST_KN_REDUCED, dt, phase);
    n.i = r;
    return st_kernel_node(k, &n);
}

static st_status run_k(const st_kernel *k, const st_kargs *a)
{
    void *h = LB->compile(LB, k, 1);
    if (!h)
        return st_err_kind();
    st_status s = LB->launch(LB, h, 0, a);
    LB->release(LB, h);
    return s;
}

/* softmax as one kernel: max (phase 0), sum exp(x - max) (phase 1),
 * exp(x - max) / sum per point (phase 2); and a layer-norm style kernel
 * with a once-per-row epilogue (mean and rstd). */
static void test_multi_reduce(void)
{
    enum { R = 37, C = 1000 };
    int dm[ST_MAX_DIMS] = {0, 1, -1, -1, -1, -1, -1, -1};
    int dr[ST_MAX_DIMS] = {0, -1, -1, -1, -1, -1, -1, -1};
    st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 2);
    k.nred = 1;
    int xb = st_kernel_add_buf(&k, 0, ST_FLOAT32, false, dm);
    int yb = st_kernel_add_buf(&k, 1, ST_FLOAT32, true, dm);
    int x0 = nload(&k, xb, 0);
    int x1 = nload(&k, xb, 1), m1 = nred(&k, 0, ST_FLOAT32, 1);
    int e1 = nop(&k, ST_KN_UNARY, ST_OP_EXP, nop(&k, ST_KN_BINARY, ST_OP_SUB, x1, m1, 1), -1, 1);
    int x2 = nload(&k, xb, 2), m2 = nred(&k, 0, ST_FLOAT32, 2);
    int e2 = nop(&k, ST_KN_UNARY, ST_OP_EXP, nop(&k, ST_KN_BINARY, ST_OP_SUB, x2, m2, 2), -1, 2);
    int s2 = nred(&k, 1, ST_FLOAT32, 2);
    int y = nop(&k, ST_KN_BINARY, ST_OP_DIV, e2, s2, 2);
    k.nreduce = 2;
    k.reduce[0].op = ST_RED_MAX;
    k.reduce[0].src = x0;
    k.reduce[1].op = ST_RED_SUM;
    k.reduce[1].src = e1;
    k.final_per_point = true;
    k.stores[0].buf = yb;
    k.stores[0].node = y;
    k.nstores = 1;
    snprintf(k.name, sizeof k.name, "softmax1");
    float *x = malloc(sizeof(float) * R * C), *out = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++)
        x[i] = (float)(6 * frand() - 3);
    st_kargs a;
    memset(&a, 0, sizeof a);
    a.shape[0] = R;
    a.shape[1] = C;
    a.bufs[0].data = (char *)x;
    a.bufs[0].strides[0] = C;
    a.bufs[0].strides[1] = 1;
    a.bufs[1].data = (char *)out;
    a.bufs[1].strides[0] = C;
    a.bufs[1].strides[1] = 1;
    CHECK(run_k(&k, &a) == ST_OK, "softmax kernel");
    double maxerr = 0;
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, sum = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, x[r * C + c]);
        for (int c = 0; c < C; c++)
            sum += (float)exp((float)(x[r * C + c] - (float)m));
        for (int c = 0; c < C; c++) {
            double ref = (float)exp((float)(x[r * C + c] - (float)m)) / (float)sum;
            maxerr = fmax(maxerr, fabs(out[r * C + c] - ref) / (1e-30 + fabs(ref)));
        }
    }
    CHECK(maxerr < 1e-5, "softmax kernel: rel err %g", maxerr);
    /* in place (output bound to the input's memory, as an eager in-place
     * op may): the row kernel stashes exp(x - max) in the output during
     * the sum pass, after reading x at that point only */
    float *xin = malloc(sizeof(float) * R * C);
    memcpy(xin, x, sizeof(float) * R * C);
    a.bufs[0].data = (char *)xin;
    a.bufs[1].data = (char *)xin;
    CHECK(run_k(&k, &a) == ST_OK, "softmax kernel in place");
    /* (not bitwise: with the buffers overlapping, the vectorizer's
     * run-time alias check takes the scalar loop, which sums in another
     * order) */
    double ipe = 0;
    for (int i = 0; i < R * C; i++)
        ipe = fmax(ipe, fabs(xin[i] - out[i]) / (1e-30 + fabs(out[i])));
    CHECK(ipe < 1e-5, "softmax kernel in place: rel err %g vs out of place", ipe);
    free(xin);
    a.bufs[0].data = (char *)x;
    st_kernel_clear(&k);

    /* mean / rstd, once per row */
    st_kernel_init(&k, ST_K_REDUCE, 2);
    k.nred = 1;
    xb = st_kernel_add_buf(&k, 0, ST_FLOAT32, false, dm);
    int mb = st_kernel_add_buf(&k, 1, ST_FLOAT32, true, dr);
    int rb = st_kernel_add_buf(&k, 2, ST_FLOAT32, true, dr);
    x0 = nload(&k, xb, 0);
    x1 = nload(&k, xb, 1);
    m1 = nred(&k, 0, ST_FLOAT32, 1);
    int d1 = nop(&k, ST_KN_BINARY, ST_OP_SUB, x1, m1, 1);
    int sq = nop(&k, ST_KN_BINARY, ST_OP_MUL, d1, d1, 1);
    int mean = nred(&k, 0, ST_FLOAT32, 2), var = nred(&k, 1, ST_FLOAT32, 2);
    st_knode eps = mk(ST_KN_CONST, ST_FLOAT32, 2);
    eps.f = 1e-5;
    int ep = st_kernel_node(&k, &eps);
    int rstd = nop(&k, ST_KN_UNARY, ST_OP_RSQRT, nop(&k, ST_KN_BINARY, ST_OP_ADD, var, ep, 2), -1, 2);
    k.nreduce = 2;
    k.reduce[0].op = ST_RED_MEAN;
    k.reduce[0].src = x0;
    k.reduce[1].op = ST_RED_MEAN;
    k.reduce[1].src = sq;
    k.stores[0].buf = mb;
    k.stores[0].node = mean;
    k.stores[1].buf = rb;
    k.stores[1].node = rstd;
    k.nstores = 2;
    snprintf(k.name, sizeof k.name, "meanrstd");
    float mo[R], ro[R];
    a.bufs[1].data = (char *)mo;
    a.bufs[1].strides[0] = 1;
    a.bufs[1].strides[1] = 0;
    a.bufs[2].data = (char *)ro;
    a.bufs[2].strides[0] = 1;
    a.bufs[2].strides[1] = 0;
    CHECK(run_k(&k, &a) == ST_OK, "mean/rstd kernel");
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int c = 0; c < C; c++)
            m += x[r * C + c];
        m = (float)(m / C);
        for (int c = 0; c < C; c++) {
            float d = (float)(x[r * C + c] - (float)m);
            v += (float)(d * d);
        }
        v = (float)(v / C);
        CHECK(fabs(mo[r] - m) < 1e-5 && fabs(ro[r] - 1 / sqrt(v + 1e-5)) < 1e-4,
              "mean/rstd row %d: %g %g vs %g %g", r, mo[r], ro[r], m, 1 / sqrt(v + 1e-5));
    }
    st_kernel_clear(&k);
    free(x);
    free(out);
}

/* Row kernels against the interpreter where the LLVM code differs most
 * from it: rows longer than a float sum's chunk (partial chunks, several
 * chunks, many rows), softmax whose exp the sum pass stashes in the output
 * (with epilogues that scale it, or load an input, which turns the stash
 * off), a reduced dim that is not the last (strided rows), every float
 * dtype. */
static void test_row_kernels(void)
{
    static const int64_t shs[4][4] = {{7, 1300}, {3, 513, 4}, {2, 1}, {5, 2048}};
    static const int nds[4] = {2, 3, 2, 2};
    static const st_dtype fdt[4] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16, ST_BFLOAT16};
    int before = st_test_checks;
    for (int sv = 0; sv < 4; sv++)
        for (int d = 0; d < 4; d++)
            for (int v = 0; v < 5; v++) {
                st_graph *g = st_ir_graph_new();
                int x = in_of(g, fdt[d], nds[sv], shs[sv]);
                st_attrs a = A0();
                a.i[0] = sv == 1 ? 1 : -1;
                int y;
                const char *what;
                if (v < 3) {
                    y = op_of(g, ST_OP_SOFTMAX, &x, 1, &a);
                    what = "softmax";
                    if (v == 1) { /* softmax * 2: stash, epilogue scales */
                        int two = st_ir_add_const(g, fdt[d], 2.0, 0);
                        int in2[2] = {y, two};
                        y = op_of(g, ST_OP_MUL, in2, 2, NULL);
                        what = "softmax*2";
                    } else if (v == 2) { /* softmax + x: no stash */
                        int in2[2] = {y, x};
                        y = op_of(g, ST_OP_ADD, in2, 2, NULL);
                        what = "softmax+x";
                    }
                } else if (v == 3) {
                    y = op_of(g, ST_OP_LOG_SOFTMAX, &x, 1, &a);
                    what = "log_softmax";
                } else {
                    a = A0();
                    a.ndims = 1;
                    a.dims[0] = sv == 1 ? 1 : nds[sv] - 1;
                    y = op_of(g, ST_OP_MEAN, &x, 1, &a);
                    what = "mean";
                }
                CHECK(y >= 0, "row kernels: graph %s: %s", what, st_err_msg());
                if (y >= 0) {
                    st_ir_mark_output(g, y);
                    st_tensor *t = rnd(fdt[d], nds[sv], shs[sv], 0, 0);
                    char nm[96];
                    snprintf(nm, sizeof nm, "row %s %s shape %d", what,
                             st_dtype_name(fdt[d]), sv);
                    both(nm, g, &t);
                    st_tensor_decref(t);
                }
                st_err_clear();
                st_ir_graph_free(g);
            }
    printf("row kernels: %d checks\n", st_test_checks - before);
}

/* float16 <-> float32 through llvm (the F16C instructions where the host
 * has them) and through the interpreter, bit for bit: every float16, and
 * float32 values on a sweep of the bit patterns plus every midpoint
 * between neighbouring float16 values (ties round to even). NaNs must
 * stay NaNs of the same sign. */
static void half_cast(st_dtype from, st_dtype to, st_tensor *x, const char *what)
{
    st_graph *g = st_ir_graph_new();
    int xi = in_of(g, from, 1, x->shape);
    st_attrs a = A0();
    a.dtype = to;
    int y = op_of(g, ST_OP_CAST, &xi, 1, &a);
    /* and through a fused elementwise chain: -(-x) */
    int n1 = op_of(g, ST_OP_NEG, &xi, 1, NULL);
    int n2 = op_of(g, ST_OP_NEG, &n1, 1, NULL);
    int y2 = op_of(g, ST_OP_CAST, &n2, 1, &a);
    st_ir_mark_output(g, y);
    st_ir_mark_output(g, y2);
    st_tensor *ol[2] = {0}, *oi[2] = {0};
    CHECK(run_graph(IB, g, &x, oi) == ST_OK && run_graph(LB, g, &x, ol) == ST_OK,
          "%s: run: %s", what, st_err_msg());
    int64_t n = x->shape[0];
    for (int o = 0; o < 2; o++) {
        if (!ol[o] || !oi[o])
            continue;
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 3; i++) {
            uint32_t bl, bi;
            bool nl, ni;
            if (to == ST_FLOAT16) {
                bl = ((const uint16_t *)st_tensor_data(ol[o]))[i];
                bi = ((const uint16_t *)st_tensor_data(oi[o]))[i];
                nl = (bl & 0x7fff) > 0x7c00;
                ni = (bi & 0x7fff) > 0x7c00;
            } else {
                bl = ((const uint32_t *)st_tensor_data(ol[o]))[i];
                bi = ((const uint32_t *)st_tensor_data(oi[o]))[i];
                nl = (bl & 0x7fffffffu) > 0x7f800000u;
                ni = (bi & 0x7fffffffu) > 0x7f800000u;
            }
            bool ok = nl || ni ? nl && ni && (bl >> (to == ST_FLOAT16 ? 15 : 31)) ==
                                              (bi >> (to == ST_FLOAT16 ? 15 : 31))
                               : bl == bi;
            if (!ok) {
                bad++;
                CHECK(0, "%s (output %d): element %lld: llvm %#x, interp %#x", what,
                      o, (long long)i, bl, bi);
            }
        }
        st_test_checks++;
        st_tensor_decref(ol[o]);
        st_tensor_decref(oi[o]);
    }
    st_ir_graph_free(g);
}

static void test_half_conversions(void)
{
    int64_t n = 65536;
    st_tensor *h = st_tensor_empty(st_rt_cpu(), ST_FLOAT16, 1, &n);
    uint16_t *hp = st_tensor_data(h);
    for (int64_t i = 0; i < n; i++)
        hp[i] = (uint16_t)i;
    half_cast(ST_FLOAT16, ST_FLOAT32, h, "every float16 -> float32");
    st_tensor_decref(h);
    int64_t m = (int64_t)(0x100000000ull / 4099) + 2 * 65536;
    st_tensor *f = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 1, &m);
    uint32_t *fp = st_tensor_data(f);
    int64_t k = 0;
    for (uint64_t b = 0; b < 0x100000000ull && k < m; b += 4099)
        fp[k++] = (uint32_t)b;
    for (uint32_t i = 0; i < 65536 && k + 1 < m; i++) {
        /* the midpoint above float16 i (and its negative) */
        float lo = st_half_to_float((uint16_t)i), hi = st_half_to_float((uint16_t)(i + 1));
        float mid = (float)(((double)lo + (double)hi) / 2);
        memcpy(&fp[k++], &mid, 4);
        mid = -mid;
        memcpy(&fp[k++], &mid, 4);
    }
    while (k < m)
        fp[k++] = 0;
    half_cast(ST_FLOAT32, ST_FLOAT16, f, "float32 sweep -> float16");
    st_tensor_decref(f);
}

/* matmul + bias + relu as one kernel; B transposed through its strides;
 * float32 (BLAS), float16 (packed), int64 (loops) */
static void test_matmul_epilogue(void)
{
    enum { M = 45, N = 70, K = 33 };
    st_dtype dts[3] = {ST_FLOAT32, ST_FLOAT16, ST_INT64};
    for (int v = 0; v < 3; v++) {
        st_dtype dt = dts[v];
        int da[ST_MAX_DIMS] = {-1, 0, -1, 1, -1, -1, -1, -1};
        int db[ST_MAX_DIMS] = {-1, -1, 1, 0, -1, -1, -1, -1};
        int dc[ST_MAX_DIMS] = {-1, 0, 1, -1, -1, -1, -1, -1};
        int dbias[ST_MAX_DIMS] = {-1, -1, 0, -1, -1, -1, -1, -1};
        st_kernel k;
        st_kernel_init(&k, ST_K_MATMUL, 4);
        st_kernel_add_buf(&k, 0, dt, false, da);
        st_kernel_add_buf(&k, 1, dt, false, db);
        int cb = st_kernel_add_buf(&k, 2, dt, true, dc);
        int bb = st_kernel_add_buf(&k, 3, dt, false, dbias);
        st_dtype acc = dt == ST_INT64 ? ST_INT64 : ST_FLOAT32;
        int p = nred(&k, 0, acc, 1);
        int bl = nload(&k, bb, 1);
        int sum = nop(&k, ST_KN_BINARY, ST_OP_ADD, p, nop(&k, ST_KN_CAST, 0, bl, -1, 1), 1);
        k.nodes[k.nnodes - 1].dtype = acc;
        k.nodes[k.nnodes - 2].dtype = acc;
        int r = nop(&k, ST_KN_UNARY, ST_OP_RELU, sum, -1, 1);
        k.stores[0].buf = cb;
        k.stores[0].node = r;
        k.nstores = 1;
        snprintf(k.name, sizeof k.name, "mm_bias_relu");
        size_t es = st_dtype_size(dt);
        char *A = malloc(es * M * K), *B = malloc(es * K * N), *Cc = malloc(es * M * N),
             *bias = malloc(es * N);
        double *Ad = malloc(8 * M * K), *Bd = malloc(8 * K * N), *bd = malloc(8 * N);
        int64_t sh[1] = {M * K};
        st_tensor *tA = rnd(dt, 1, sh, 0, 0);
        sh[0] = K * N;
        st_tensor *tB = rnd(dt, 1, sh, 0, 0);
        sh[0] = N;
        st_tensor *tb = rnd(dt, 1, sh, 0, 0);
        memcpy(A, st_tensor_data(tA), es * M * K);
        memcpy(B, st_tensor_data(tB), es * K * N);
        memcpy(bias, st_tensor_data(tb), es * N);
        for (int i = 0; i < M * K; i++) Ad[i] = get_el(tA, i);
        for (int i = 0; i < K * N; i++) Bd[i] = get_el(tB, i);  /* B stored [N, K] */
        for (int i = 0; i < N; i++) bd[i] = get_el(tb, i);
        st_kargs a;
        memset(&a, 0, sizeof a);
        a.shape[0] = 1; a.shape[1] = M; a.shape[2] = N; a.shape[3] = K;
        a.bufs[0].data = A; a.bufs[0].strides[1] = K; a.bufs[0].strides[3] = 1;
        a.bufs[1].data = B; a.bufs[1].strides[2] = K; a.bufs[1].strides[3] = 1;
        a.bufs[2].data = Cc; a.bufs[2].strides[1] = N; a.bufs[2].strides[2] = 1;
        a.bufs[3].data = bias; a.bufs[3].strides[2] = 1;
        CHECK(run_k(&k, &a) == ST_OK, "matmul epilogue %s", st_dtype_name(dt));
        double maxerr = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int q = 0; q < K; q++)
                    s += Ad[m * K + q] * Bd[n * K + q];
                s += bd[n];
                s = s > 0 ? s : 0;
                double got;
                switch (dt) {
                case ST_FLOAT32: got = ((float *)Cc)[m * N + n]; break;
                case ST_FLOAT16: got = st_half_to_float(((uint16_t *)Cc)[m * N + n]); break;
                default: got = (double)((int64_t *)Cc)[m * N + n]; break;
                }
                maxerr = fmax(maxerr, fabs(got - s) / (1 + fabs(s)));
            }
        CHECK(maxerr < (dt == ST_FLOAT16 ? 2e-3 : 1e-5), "matmul epilogue %s: err %g",
              st_dtype_name(dt), maxerr);
        st_kernel_clear(&k);
        st_tensor_decref(tA);
        st_tensor_decref(tB);
        st_tensor_decref(tb);
        free(A); free(B); free(Cc); free(bias); free(Ad); free(Bd); free(bd);
    }
}

/* ---- the disk cache ---- */

static st_kprog *cache_prog(void)
{
    st_graph *g = st_ir_graph_new();
    int64_t sh[2] = {9, 13};
    int x = in_of(g, ST_FLOAT32, 2, sh), y = in_of(g, ST_FLOAT64, 2, sh);
    int ins[2] = {x, y};
    int z = op_of(g, ST_OP_MUL, ins, 2, NULL);
    z = op_of(g, ST_OP_TANH, &z, 1, NULL);
    st_attrs a = A0();
    a.ndims = 1;
    a.dims[0] = 1;
    z = op_of(g, ST_OP_SUM, &z, 1, &a);
    st_ir_mark_output(g, z);
    st_kprog *p = st_fuse_lower(g, NULL);
    st_ir_graph_free(g);
    return p;
}

/* compiles the cache program; returns the compiles it took (-1: failed) */
static int64_t compile_count(void)
{
    st_llvm_stats_t s0, s1;
    st_llvm_stats(&s0);
    st_kprog *p = cache_prog();
    void *h = p ? LB->compile(LB, p->kernels, p->nkernels) : NULL;
    st_llvm_stats(&s1);
    if (h)
        LB->release(LB, h);
    st_kprog_free(p);
    return h ? s1.compiles - s0.compiles : -1;
}

static int child_main(const char *dir)
{
    setenv("SYMTRACE_CACHE_DIR", dir, 1);
    LB = st_llvm_backend();
    int64_t c = compile_count();
    st_llvm_stats_t s;
    st_llvm_stats(&s);
    printf("child: %lld compiles, %lld disk hits\n", (long long)c,
           (long long)s.disk_hits);
    return c == 0 && s.disk_hits >= 1 ? 0 : 1;
}

static bool only_file(const char *dir, char *path, size_t n)
{
    char kd[200];
    snprintf(kd, sizeof kd, "%s/kernels", dir);
    DIR *d = opendir(kd);
    int count = 0;
    if (!d)
        return false;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".bin")) {
            snprintf(path, n, "%s/%s", kd, e->d_name);
            count++;
        }
    closedir(d);
    return count == 1;
}

static void test_disk_cache(const char *self)
{
    char dir[] = "/tmp/st_llvm_cacheXXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    setenv("SYMTRACE_CACHE_DIR", dir, 1);
    st_llvm_cache_clear_memory();
    CHECK(compile_count() == 1, "first compile compiles");
    CHECK(compile_count() == 0, "second compile: memory hit");
    char path[1200];
    CHECK(only_file(dir, path, sizeof path), "one cache file under %s", dir);
    st_llvm_cache_clear_memory();
    st_llvm_stats_t s0, s1;
    st_llvm_stats(&s0);
    CHECK(compile_count() == 0, "after clearing memory: from disk");
    st_llvm_stats(&s1);
    CHECK(s1.disk_hits == s0.disk_hits + 1, "disk hit counted");
    /* a second process compiles nothing */
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "--child", dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "second process loads from disk without compiling (status %d)", status);
    /* a flipped byte and a truncated file: detected, rebuilt, never loaded */
    for (int v = 0; v < 2; v++) {
        FILE *f = fopen(path, "r+b");
        CHECK(f != NULL, "open cache file");
        if (!f)
            return;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        if (v == 0) {
            fseek(f, len / 2, SEEK_SET);
            int c = fgetc(f);
            fseek(f, len / 2, SEEK_SET);
            fputc(c ^ 0x10, f);
            fclose(f);
        } else {
            fclose(f);
            CHECK(truncate(path, len / 2) == 0, "truncate");
        }
        st_kcache_file_stats_t k0, k1;
        st_kcache_file_stats(&k0);
        st_llvm_cache_clear_memory();
        CHECK(compile_count() == 1, "%s file is rebuilt", v ? "truncated" : "corrupt");
        st_kcache_file_stats(&k1);
        CHECK(k1.corrupt == k0.corrupt + 1, "%s file detected", v ? "truncated" : "corrupt");
        st_llvm_cache_clear_memory();
        CHECK(compile_count() == 0, "rebuilt file is used");
    }
    /* the rebuilt program still computes right */
    st_graph *g = st_ir_graph_new();
    int64_t sh[2] = {9, 13};
    int x = in_of(g, ST_FLOAT32, 2, sh), y = in_of(g, ST_FLOAT64, 2, sh);
    int ins[2] = {x, y};
    int z = op_of(g, ST_OP_MUL, ins, 2, NULL);
    z = op_of(g, ST_OP_TANH, &z, 1, NULL);
    st_attrs a = A0();
    a.ndims = 1;
    a.dims[0] = 1;
    z = op_of(g, ST_OP_SUM, &z, 1, &a);
    st_ir_mark_output(g, z);
    st_tensor *t[2] = {rnd(ST_FLOAT32, 2, sh, 0, 0), rnd(ST_FLOAT64, 2, sh, 0, 0)};
    both("cache program", g, t);
    st_tensor_decref(t[0]);
    st_tensor_decref(t[1]);
    st_ir_graph_free(g);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* ---- dispatch overhead ---- */

static void test_overhead(void)
{
    st_kprog *p;
    st_graph *g = st_ir_graph_new();
    int64_t sh[1] = {16};
    int x = in_of(g, ST_FLOAT32, 1, sh), y = in_of(g, ST_FLOAT32, 1, sh);
    int ins[2] = {x, y};
    st_ir_mark_output(g, op_of(g, ST_OP_ADD, ins, 2, NULL));
    p = st_fuse_lower(g, NULL);
    void *h = LB->compile(LB, p->kernels, p->nkernels);
    float xa[16] = {0}, ya[16] = {0}, za[16];
    st_kargs a;
    memset(&a, 0, sizeof a);
    a.shape[0] = 16;
    a.bufs[0].data = (char *)xa; a.bufs[0].strides[0] = 1;
    a.bufs[1].data = (char *)ya; a.bufs[1].strides[0] = 1;
    a.bufs[2].data = (char *)za; a.bufs[2].strides[0] = 1;
    int ki = 0;
    while (ki < p->nkernels && p->kernels[ki].kind == ST_K_VIEW)
        ki++;
    double t0 = now_s();
    int n = 100000;
    for (int i = 0; i < n; i++)
        LB->launch(LB, h, ki, &a);
    double us = (now_s() - t0) / n * 1e6;
    printf("tiny add launch: %.3f us\n", us);
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
    CHECK(us < 2.0, "tiny launch %.3f us", us);
#endif
    LB->release(LB, h);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

/* reshapes of strided views read through unravel loads (fusion/unravel.c):
 * no reshape is left as a view step (a copy in the runtime); llvm agrees
 * with interp for every dtype; the source view is also a non-contiguous
 * input's permute */
static void test_unravel_views(void)
{
    static const int64_t sx[3] = {4, 5, 6}, sy[2] = {12, 10};
    for (int d = 0; d < NDT; d++) {
        st_dtype dt = all_dt[d];
        for (int use = 0; use < 4; use++) {
            if (use == 2 && !st_dtype_is_float(dt))
                continue;
            st_graph *g = st_ir_graph_new();
            int x = in_of(g, dt, 3, sx);
            st_attrs a = A0();
            int src;
            if (use == 3) { /* slice of dim 2, then a reshape */
                a.i[0] = 2;
                a.i[1] = 1;
                a.i[2] = 6;
                a.i[3] = 2;
                src = op_of(g, ST_OP_SLICE, &x, 1, &a);
            } else {
                a.ndims = 3;
                a.dims[0] = 2;
                a.dims[1] = 0;
                a.dims[2] = 1;
                src = op_of(g, ST_OP_PERMUTE, &x, 1, &a);
            }
            a = A0();
            a.ndims = 2;
            a.dims[0] = use == 3 ? 6 : 12;
            a.dims[1] = use == 3 ? 10 : 10;
            int r = op_of(g, ST_OP_RESHAPE, &src, 1, &a);
            int out = r, y = -1;
            if (use == 0 || use == 3) {
                int64_t ys[2] = {a.dims[0], 10};
                y = in_of(g, dt, 2, ys);
                int ab[2] = {r, y};
                out = op_of(g, dt == ST_BOOL ? ST_OP_LOGICAL_OR : ST_OP_ADD, ab, 2, NULL);
            } else if (use == 2) {
                st_attrs sm = A0();
                sm.i[0] = 1;
                out = op_of(g, ST_OP_SOFTMAX, &r, 1, &sm);
            }
            CHECK(out >= 0, "unravel graph %d (%s): %s", use, st_dtype_name(dt), st_err_msg());
            if (out < 0) {
                st_err_clear();
                st_ir_graph_free(g);
                continue;
            }
            st_ir_mark_output(g, out);
            st_kprog *p = st_fuse_lower(g, NULL);
            CHECK(p != NULL, "unravel lower %d", use);
            int nun = 0, nreshape_steps = 0;
            for (int i = 0; p && i < p->nkernels; i++) {
                const st_kernel *k = &p->kernels[i];
                if (k->kind == ST_K_VIEW)
                    nreshape_steps += p->graph->stmts[k->stmt].op == ST_OP_RESHAPE;
                for (int b = 0; b < k->nbufs; b++)
                    nun += k->bufs[b].unravel > 0;
            }
            CHECK(nun == 1 && nreshape_steps == 0, "unravel %d (%s): %d unravel loads, "
                  "%d reshape steps", use, st_dtype_name(dt), nun, nreshape_steps);
            if (p)
                st_kprog_free(p);
            st_tensor *ins[2];
            ins[0] = rnd(dt, 3, sx, 0, 0);
            ins[1] = y >= 0 ? rnd(dt, 2, use == 3 ? (const int64_t[]){6, 10} : sy, 0, 0) : NULL;
            char nm[64];
            snprintf(nm, sizeof nm, "unravel %d (%s)", use, st_dtype_name(dt));
            both(nm, g, ins);
            /* the same through a non-contiguous input: x given as a
             * permuted view of a [6, 4, 5] tensor */
            static const int64_t sb[3] = {6, 4, 5};
            st_tensor *base = rnd(dt, 3, sb, 0, 0);
            int64_t perm[3] = {1, 2, 0};
            st_tensor *xv = st_tensor_permute(base, perm);
            if (xv) {
                st_tensor_decref(ins[0]);
                ins[0] = xv;
                snprintf(nm, sizeof nm, "unravel %d strided input (%s)", use,
                         st_dtype_name(dt));
                both(nm, g, ins);
            }
            st_tensor_decref(base);
            st_tensor_decref(ins[0]);
            if (ins[1])
                st_tensor_decref(ins[1]);
            st_ir_graph_free(g);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2]);
    /* a private cache directory unless the caller chose one */
    char dir[] = "/tmp/st_llvm_testXXXXXX";
    if (!getenv("SYMTRACE_CACHE_DIR") && mkdtemp(dir))
        setenv("SYMTRACE_CACHE_DIR", dir, 1);
    LB = st_llvm_backend();
    IB = st_interp_backend();
    RUN_TEST(test_elementwise_ops());
    RUN_TEST(test_math_sweep());
    RUN_TEST(test_reductions());
    RUN_TEST(test_minmax_special());
    RUN_TEST(test_matmul_ops());
    RUN_TEST(test_matmul_paths());
    RUN_TEST(test_index_ops());
    RUN_TEST(test_composites());
    RUN_TEST(test_multi_reduce());
    RUN_TEST(test_row_kernels());
    RUN_TEST(test_half_conversions());
    RUN_TEST(test_matmul_epilogue());
    RUN_TEST(test_unravel_views());
    RUN_TEST(test_merged_dims());
    RUN_TEST(test_column_chunks()); /* last: draws random inputs */
    RUN_TEST(test_overhead());
    RUN_TEST(test_disk_cache(argv[0]));
    return st_test_exit_code("test_llvm");
}
