/* test_interp - tests of the kernel IR helpers (fusion/kernel.c), the
 * backend registry, the Philox generator and the reference backend interp:
 * kernels are built by hand and run over malloc'd arrays, then compared
 * with plain C loops. Exits non-zero naming each failed check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "st_runtime.h"
#include "st_test.h"

/* Timing budgets hold for optimized builds without sanitizers. */
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
#define TIMING_CHECKS 1
#else
#define TIMING_CHECKS 0
#endif

static st_backend *be;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* deterministic test data */
static uint64_t lcg = 12345;
static double frand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- kernel building ---- */
static int g_phase;

static st_knode mk(st_knode_kind kind, st_dtype dt)
{
    st_knode n;
    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.dtype = dt;
    n.a = n.b = n.c = -1;
    n.buf = -1;
    n.idx_dim = -1;
    n.phase = g_phase;
    return n;
}

static int nload(st_kernel *k, int buf, st_dtype dt)
{
    st_knode n = mk(ST_KN_LOAD, dt);
    n.buf = buf;
    return st_kernel_node(k, &n);
}

static int ngather(st_kernel *k, int buf, int dim, int idx, st_dtype dt)
{
    st_knode n = mk(ST_KN_LOAD, dt);
    n.buf = buf;
    n.idx_dim = dim;
    n.a = idx;
    return st_kernel_node(k, &n);
}

static int nun(st_kernel *k, st_op_id op, int a, st_dtype dt)
{
    st_knode n = mk(ST_KN_UNARY, dt);
    n.op = op;
    n.a = a;
    return st_kernel_node(k, &n);
}

static int nbin(st_kernel *k, st_op_id op, int a, int b, st_dtype dt)
{
    st_knode n = mk(ST_KN_BINARY, dt);
    n.op = op;
    n.a = a;
    n.b = b;
    return st_kernel_node(k, &n);
}

static int nconstf(st_kernel *k, double f, st_dtype dt)
{
    st_knode n = mk(ST_KN_CONST, dt);
    n.f = f;
    return st_kernel_node(k, &n);
}

static int nconsti(st_kernel *k, int64_t i, st_dtype dt)
{
    st_knode n = mk(ST_KN_CONST, dt);
    n.i = i;
    return st_kernel_node(k, &n);
}

static int ncast(st_kernel *k, int a, st_dtype dt)
{
    st_knode n = mk(ST_KN_CAST, dt);
    n.a = a;
    return st_kernel_node(k, &n);
}

static int nwhere(st_kernel *k, int c, int a, int b, st_dtype dt)
{
    st_knode n = mk(ST_KN_WHERE, dt);
    n.a = c;
    n.b = a;
    n.c = b;
    return st_kernel_node(k, &n);
}

static int nparam(st_kernel *k, int p, st_dtype dt)
{
    st_knode n = mk(ST_KN_PARAM, dt);
    n.buf = p;
    return st_kernel_node(k, &n);
}

static int nreduced(st_kernel *k, st_dtype dt)
{
    st_knode n = mk(ST_KN_REDUCED, dt);
    n.phase = 1;
    return st_kernel_node(k, &n);
}

static int nindex(st_kernel *k, int dim)
{
    st_knode n = mk(ST_KN_INDEX, ST_INT64);
    n.i = dim;
    return st_kernel_node(k, &n);
}

static int nrand(st_kernel *k, int which, st_dtype dt)
{
    st_knode n = mk(ST_KN_RAND, dt);
    n.i = which;
    k->uses_rng = true;
    return st_kernel_node(k, &n);
}

static void store(st_kernel *k, int buf, int node)
{
    k->stores[k->nstores].buf = buf;
    k->stores[k->nstores].node = node;
    k->nstores++;
}

static int addbuf(st_kernel *k, st_dtype dt, bool out, int d0, int d1, int d2,
                  int d3)
{
    int dm[4] = {d0, d1, d2, d3};
    return st_kernel_add_buf(k, 100 + k->nbufs, dt, out, dm);
}

static void set_buf(st_kargs *a, int b, void *data, int64_t s0, int64_t s1,
                   int64_t s2, int64_t s3)
{
    a->bufs[b].data = data;
    a->bufs[b].strides[0] = s0;
    a->bufs[b].strides[1] = s1;
    a->bufs[b].strides[2] = s2;
    a->bufs[b].strides[3] = s3;
}

static st_status run1(const st_kernel *k, const st_kargs *a)
{
    void *h = be->compile(be, k, 1);
    if (!h)
        return st_err_kind();
    st_status s = be->launch(be, h, 0, a);
    be->release(be, h);
    return s;
}

static bool close_to(double x, double y, double rtol, double atol)
{
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y);
    return fabs(x - y) <= atol + rtol * fabs(y);
}

/* ---- tests ---- */

static void test_registry(void)
{
    CHECK(be != NULL, "registry: st_backend_get(\"interp\") is NULL");
    CHECK(be == st_interp_backend(), "registry: interp is not the static one");
    CHECK(be && strcmp(be->name, "interp") == 0 && be->device == ST_DEV_CPU,
          "registry: interp name/device");
    st_err_clear();
    CHECK(st_backend_register(st_interp_backend()) != ST_OK,
          "registry: duplicate name accepted");
    CHECK(st_err_kind() != ST_OK && strstr(st_err_msg(), "interp"),
          "registry: duplicate error message '%s'", st_err_msg());
    static st_backend dummy;
    dummy = *st_interp_backend();
    dummy.name = "dummy_test";
    CHECK(st_backend_register(&dummy) == ST_OK, "registry: register dummy");
    CHECK(st_backend_get("dummy_test") == &dummy, "registry: get dummy");
    CHECK(st_backend_get("nope") == NULL, "registry: unknown name");
}

static void test_broadcast_add(void)
{
    enum { I = 37, J = 300 };
    float *X = malloc(sizeof(float) * I * J); /* stored [J, I]: X^T read */
    float *y = malloc(sizeof(float) * J);
    float *out = malloc(sizeof(float) * I * J);
    for (int i = 0; i < I * J; i++)
        X[i] = (float)(frand() * 4 - 2);
    for (int j = 0; j < J; j++)
        y[j] = (float)(frand() * 4 - 2);
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    addbuf(&k, ST_FLOAT32, false, 1, 0, -1, -1);
    addbuf(&k, ST_FLOAT32, false, -1, 0, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, 1, -1, -1);
    int a = nload(&k, 0, ST_FLOAT32), b = nload(&k, 1, ST_FLOAT32);
    store(&k, 2, nbin(&k, ST_OP_ADD, a, b, ST_FLOAT32));
    st_kargs ar = {0};
    ar.shape[0] = I;
    ar.shape[1] = J;
    set_buf(&ar, 0, X, 1, I, 0, 0);
    set_buf(&ar, 1, y, 0, 1, 0, 0);
    set_buf(&ar, 2, out, J, 1, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "broadcast add: launch: %s", st_err_msg());
    int bad = 0;
    for (int i = 0; i < I; i++)
        for (int j = 0; j < J; j++)
            if (out[i * J + j] != X[j * I + i] + y[j])
                bad++;
    CHECK(bad == 0, "broadcast add: %d mismatches", bad);
    st_kernel_clear(&k);
    free(X);
    free(y);
    free(out);
}

static void test_mixed_cast(void)
{
    enum { N = 600 };
    int32_t *ai = malloc(sizeof(int32_t) * N);
    double *bd = malloc(sizeof(double) * N);
    float *of = malloc(sizeof(float) * N);
    int64_t *oi = malloc(sizeof(int64_t) * N);
    uint8_t *ob = malloc(N);
    int32_t *o32 = malloc(sizeof(int32_t) * N);
    for (int i = 0; i < N; i++) {
        ai[i] = (int32_t)(frand() * 2000) - 1000;
        bd[i] = (frand() - 0.5) * 20;
        if (i % 7 == 0)
            bd[i] = 0;
    }
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, ST_INT32, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT64, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
    addbuf(&k, ST_INT64, true, 0, -1, -1, -1);
    addbuf(&k, ST_BOOL, true, 0, -1, -1, -1);
    addbuf(&k, ST_INT32, true, 0, -1, -1, -1);
    int a = nload(&k, 0, ST_INT32), b = nload(&k, 1, ST_FLOAT64);
    int af = ncast(&k, a, ST_FLOAT32), bf = ncast(&k, b, ST_FLOAT32);
    store(&k, 2, nbin(&k, ST_OP_MUL, af, bf, ST_FLOAT32));
    store(&k, 3, ncast(&k, b, ST_INT64));
    store(&k, 4, ncast(&k, b, ST_BOOL));
    /* int32 wrap: a * 3000000 in int32 */
    st_kernel k2;
    st_kernel_init(&k2, ST_K_ELEMENTWISE, 1);
    addbuf(&k2, ST_INT32, false, 0, -1, -1, -1);
    addbuf(&k2, ST_INT32, true, 0, -1, -1, -1);
    int a2 = nload(&k2, 0, ST_INT32);
    int c2 = nconsti(&k2, 3000000, ST_INT32);
    store(&k2, 1, nbin(&k2, ST_OP_MUL, a2, c2, ST_INT32));
    st_kargs ar = {0};
    ar.shape[0] = N;
    set_buf(&ar, 0, ai, 1, 0, 0, 0);
    set_buf(&ar, 1, bd, 1, 0, 0, 0);
    set_buf(&ar, 2, of, 1, 0, 0, 0);
    set_buf(&ar, 3, oi, 1, 0, 0, 0);
    set_buf(&ar, 4, ob, 1, 0, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "mixed cast: launch: %s", st_err_msg());
    st_kargs ar2 = {0};
    ar2.shape[0] = N;
    set_buf(&ar2, 0, ai, 1, 0, 0, 0);
    set_buf(&ar2, 1, o32, 1, 0, 0, 0);
    CHECK(run1(&k2, &ar2) == ST_OK, "int32 wrap: launch: %s", st_err_msg());
    int bad = 0, badi = 0, badb = 0, badw = 0;
    for (int i = 0; i < N; i++) {
        if (of[i] != (float)ai[i] * (float)bd[i])
            bad++;
        if (oi[i] != (int64_t)bd[i])
            badi++;
        if (ob[i] != (bd[i] != 0))
            badb++;
        if (o32[i] != (int32_t)((uint32_t)ai[i] * 3000000u))
            badw++;
    }
    CHECK(bad == 0, "mixed cast: float32 product: %d mismatches", bad);
    CHECK(badi == 0, "mixed cast: float64->int64 truncation: %d", badi);
    CHECK(badb == 0, "mixed cast: float64->bool: %d", badb);
    CHECK(badw == 0, "mixed cast: int32 wrap: %d", badw);
    st_kernel_clear(&k);
    st_kernel_clear(&k2);
    free(ai);
    free(bd);
    free(of);
    free(oi);
    free(ob);
    free(o32);
}

static void test_half_stores(void)
{
    enum { N = 1000 };
    float *x = malloc(sizeof(float) * N);
    uint16_t *h = malloc(2 * N), *bf = malloc(2 * N);
    float *back = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++)
        x[i] = (float)((frand() - 0.5) * 100);
    x[0] = 1.00048828125f / 3.0f; /* *3 rounds in float; exercised anyway */
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, ST_FLOAT32, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT16, true, 0, -1, -1, -1);
    addbuf(&k, ST_BFLOAT16, true, 0, -1, -1, -1);
    int a = nload(&k, 0, ST_FLOAT32);
    int m = nbin(&k, ST_OP_MUL, a, nconstf(&k, 3.0, ST_FLOAT32), ST_FLOAT32);
    store(&k, 1, m);
    store(&k, 2, m);
    st_kargs ar = {0};
    ar.shape[0] = N;
    set_buf(&ar, 0, x, 1, 0, 0, 0);
    set_buf(&ar, 1, h, 1, 0, 0, 0);
    set_buf(&ar, 2, bf, 1, 0, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "half stores: launch: %s", st_err_msg());
    int bad = 0, badb = 0;
    for (int i = 0; i < N; i++) {
        if (h[i] != st_float_to_half(x[i] * 3.0f))
            bad++;
        if (bf[i] != st_float_to_bf16(x[i] * 3.0f))
            badb++;
    }
    CHECK(bad == 0, "float16 store: %d mismatches", bad);
    CHECK(badb == 0, "bfloat16 store: %d mismatches", badb);
    /* round to nearest even at the ties */
    CHECK(st_float_to_half(1.00048828125f) == 0x3C00 &&
              st_float_to_half(1.00146484375f) == 0x3C02,
          "float16 RNE ties");
    CHECK(st_float_to_bf16(1.00390625f) == 0x3F80 &&
              st_float_to_bf16(1.01171875f) == 0x3F82,
          "bfloat16 RNE ties");
    /* loads back from float16, plus an explicit cast to half precision */
    st_kernel k2;
    st_kernel_init(&k2, ST_K_ELEMENTWISE, 1);
    addbuf(&k2, ST_FLOAT16, false, 0, -1, -1, -1);
    addbuf(&k2, ST_FLOAT32, true, 0, -1, -1, -1);
    addbuf(&k2, ST_FLOAT32, true, 0, -1, -1, -1);
    int l = nload(&k2, 0, ST_FLOAT16);
    int lf = ncast(&k2, l, ST_FLOAT32);
    store(&k2, 1, lf);
    int d = nbin(&k2, ST_OP_DIV, lf, nconstf(&k2, 3.0, ST_FLOAT32),
                 ST_FLOAT32);
    store(&k2, 2, ncast(&k2, ncast(&k2, d, ST_FLOAT16), ST_FLOAT32));
    float *third = malloc(sizeof(float) * N);
    st_kargs ar2 = {0};
    ar2.shape[0] = N;
    set_buf(&ar2, 0, h, 1, 0, 0, 0);
    set_buf(&ar2, 1, back, 1, 0, 0, 0);
    set_buf(&ar2, 2, third, 1, 0, 0, 0);
    CHECK(run1(&k2, &ar2) == ST_OK, "half loads: launch: %s", st_err_msg());
    bad = badb = 0;
    for (int i = 0; i < N; i++) {
        float v = st_half_to_float(h[i]);
        if (back[i] != v)
            bad++;
        if (third[i] != st_half_to_float(st_float_to_half(v / 3.0f)))
            badb++;
    }
    CHECK(bad == 0, "float16 load: %d mismatches", bad);
    CHECK(badb == 0, "cast to float16 rounds to half: %d mismatches", badb);
    st_kernel_clear(&k);
    st_kernel_clear(&k2);
    free(x);
    free(h);
    free(bf);
    free(back);
    free(third);
}

static void test_param_const(void)
{
    enum { N = 300 };
    float *x = malloc(sizeof(float) * N), *o = malloc(sizeof(float) * N);
    int64_t *xi = malloc(8 * N), *oi = malloc(8 * N);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(frand() * 10 - 5);
        xi[i] = (int64_t)(frand() * 100) - 50;
    }
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, ST_FLOAT32, false, 0, -1, -1, -1);
    addbuf(&k, ST_INT64, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
    addbuf(&k, ST_INT64, true, 0, -1, -1, -1);
    k.nparams = 2;
    k.param_dtype[0] = ST_FLOAT64;
    k.param_dtype[1] = ST_INT64;
    int a = nload(&k, 0, ST_FLOAT32);
    int p = nparam(&k, 0, ST_FLOAT32);
    int t = nbin(&k, ST_OP_MUL, a, p, ST_FLOAT32);
    store(&k, 2, nbin(&k, ST_OP_ADD, t, nconstf(&k, 1.0, ST_FLOAT32),
                      ST_FLOAT32));
    int bi = nload(&k, 1, ST_INT64);
    store(&k, 3, nbin(&k, ST_OP_ADD, bi, nparam(&k, 1, ST_INT64), ST_INT64));
    st_kargs ar = {0};
    ar.shape[0] = N;
    ar.params[0].f = 2.5;
    ar.params[1].i = 7;
    set_buf(&ar, 0, x, 1, 0, 0, 0);
    set_buf(&ar, 1, xi, 1, 0, 0, 0);
    set_buf(&ar, 2, o, 1, 0, 0, 0);
    set_buf(&ar, 3, oi, 1, 0, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "param/const: launch: %s", st_err_msg());
    int bad = 0, badi = 0;
    for (int i = 0; i < N; i++) {
        if (o[i] != x[i] * 2.5f + 1.0f)
            bad++;
        if (oi[i] != xi[i] + 7)
            badi++;
    }
    CHECK(bad == 0, "param/const float: %d mismatches", bad);
    CHECK(badi == 0, "param int: %d mismatches", badi);
    st_kernel_clear(&k);
    free(x);
    free(o);
    free(xi);
    free(oi);
}

/* x [A, B, C] float32, reductions over the last dim. */
static void test_reduce_last(void)
{
    enum { A = 5, B = 7, C = 300 };
    float *x = malloc(sizeof(float) * A * B * C);
    for (int i = 0; i < A * B * C; i++)
        x[i] = (float)(frand() * 2 - 1);
    /* a tie for argmax in row 3: two equal maxima, first wins */
    for (int c = 0; c < C; c++)
        x[3 * C + c] = 0;
    x[3 * C + 10] = 5;
    x[3 * C + 200] = 5;
    float *nanrow = x + 4 * C;
    nanrow[17] = NAN;
    st_reduce_op ops[4] = {ST_RED_SUM, ST_RED_MEAN, ST_RED_MAX,
                           ST_RED_ARGMAX};
    const char *names[4] = {"sum", "mean", "amax", "argmax"};
    for (int t = 0; t < 4; t++) {
        st_kernel k;
        st_kernel_init(&k, ST_K_REDUCE, 3);
        k.nred = 1;
        k.reduce[0].op = ops[t];
        st_dtype odt = ops[t] == ST_RED_ARGMAX ? ST_INT64 : ST_FLOAT32;
        addbuf(&k, ST_FLOAT32, false, 0, 1, 2, -1);
        addbuf(&k, odt, true, 0, 1, -1, -1);
        g_phase = 0;
        k.reduce[0].src = nload(&k, 0, ST_FLOAT32);
        store(&k, 1, nreduced(&k, odt));
        void *out = malloc(8 * A * B);
        st_kargs ar = {0};
        ar.shape[0] = A;
        ar.shape[1] = B;
        ar.shape[2] = C;
        set_buf(&ar, 0, x, B * C, C, 1, 0);
        set_buf(&ar, 1, out, B, 1, 0, 0);
        CHECK(run1(&k, &ar) == ST_OK, "reduce %s: launch: %s", names[t],
              st_err_msg());
        int bad = 0;
        for (int r = 0; r < A * B; r++) {
            const float *row = x + r * C;
            double s = 0, mx = row[0];
            int64_t am = 0;
            bool nan = false;
            for (int c = 0; c < C; c++) {
                s += row[c];
                if (isnan(row[c]) && !nan) {
                    nan = true;
                    am = c;
                }
                if (!nan && row[c] > mx) {
                    mx = row[c];
                    am = c;
                }
            }
            if (nan)
                mx = NAN;
            double want;
            double got;
            if (ops[t] == ST_RED_ARGMAX) {
                want = (double)am;
                got = (double)((int64_t *)out)[r];
            } else {
                want = ops[t] == ST_RED_SUM ? (float)s
                       : ops[t] == ST_RED_MEAN ? (float)(s / C)
                                               : (float)mx;
                got = ((float *)out)[r];
            }
            if (!close_to(got, want, 1e-6, 1e-6))
                bad++;
        }
        CHECK(bad == 0, "reduce %s over last dim: %d mismatches", names[t],
              bad);
        if (ops[t] == ST_RED_ARGMAX)
            CHECK(((int64_t *)out)[3] == 10 && ((int64_t *)out)[4] == 17,
                  "argmax: first max / NaN position (%lld, %lld)",
                  (long long)((int64_t *)out)[3],
                  (long long)((int64_t *)out)[4]);
        if (ops[t] == ST_RED_MAX)
            CHECK(isnan(((float *)out)[4]), "amax: NaN propagates");
        free(out);
        st_kernel_clear(&k);
    }
    free(x);
}

/* rms over two dims with phase-1 epilogue: out[a] = sqrt(mean(x*x)) + bias[a],
 * x read transposed (stored [C, B, A]). */
static void test_reduce_two_dims(void)
{
    enum { A = 9, B = 4, C = 70 };
    float *x = malloc(sizeof(float) * A * B * C);
    float *bias = malloc(sizeof(float) * A);
    float *out = malloc(sizeof(float) * A);
    for (int i = 0; i < A * B * C; i++)
        x[i] = (float)(frand() * 2 - 1);
    for (int i = 0; i < A; i++)
        bias[i] = (float)i;
    st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 3);
    k.nred = 2;
    k.reduce[0].op = ST_RED_MEAN;
    addbuf(&k, ST_FLOAT32, false, 2, 1, 0, -1);
    addbuf(&k, ST_FLOAT32, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
    g_phase = 0;
    int l = nload(&k, 0, ST_FLOAT32);
    k.reduce[0].src = nbin(&k, ST_OP_MUL, l, l, ST_FLOAT32);
    g_phase = 1;
    int r = nreduced(&k, ST_FLOAT32);
    int sq = nun(&k, ST_OP_SQRT, r, ST_FLOAT32);
    int bl = nload(&k, 1, ST_FLOAT32);
    store(&k, 2, nbin(&k, ST_OP_ADD, sq, bl, ST_FLOAT32));
    g_phase = 0;
    st_kargs ar = {0};
    ar.shape[0] = A;
    ar.shape[1] = B;
    ar.shape[2] = C;
    set_buf(&ar, 0, x, 1, A, A * B, 0);
    set_buf(&ar, 1, bias, 1, 0, 0, 0);
    set_buf(&ar, 2, out, 1, 0, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "rms: launch: %s", st_err_msg());
    int bad = 0;
    for (int a = 0; a < A; a++) {
        double s = 0;
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++) {
                float v = x[c * A * B + b * A + a];
                s += (float)(v * v);
            }
        float want = sqrtf((float)(s / (B * C))) + bias[a];
        if (!close_to(out[a], want, 1e-6, 1e-6))
            bad++;
    }
    CHECK(bad == 0, "rms over two dims + phase-1 epilogue: %d mismatches",
          bad);
    char *txt = st_kernel_print(&k);
    CHECK(txt && strstr(txt, "n3 = sqrt(n2) : float32") && strstr(txt, "reduce"),
          "st_kernel_print of the rms kernel");
    if (txt) {
        printf("%s", txt);
        free(txt);
    }
    st_kernel_clear(&k);
    free(x);
    free(bias);
    free(out);
}

static void test_reduce_int_and_empty(void)
{
    /* int32 sum -> int64 over [3, 5] */
    int32_t xi[15];
    for (int i = 0; i < 15; i++)
        xi[i] = 1000000000 + i;
    int64_t oi[3];
    st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 2);
    k.nred = 1;
    k.reduce[0].op = ST_RED_SUM;
    addbuf(&k, ST_INT32, false, 0, 1, -1, -1);
    addbuf(&k, ST_INT64, true, 0, -1, -1, -1);
    k.reduce[0].src = nload(&k, 0, ST_INT32);
    store(&k, 1, nreduced(&k, ST_INT64));
    st_kargs ar = {0};
    ar.shape[0] = 3;
    ar.shape[1] = 5;
    set_buf(&ar, 0, xi, 5, 1, 0, 0);
    set_buf(&ar, 1, oi, 1, 0, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "int sum: launch: %s", st_err_msg());
    CHECK(oi[0] == 5000000010LL && oi[2] == 5000000060LL,
          "int sum accumulates in int64 (%lld)", (long long)oi[0]);
    st_kernel_clear(&k);

    /* full reduction of [3, 5] (no outer dims) and of a rank-0 input */
    {
        float xf[15], o1 = -1;
        double want = 0;
        for (int i = 0; i < 15; i++) {
            xf[i] = (float)i * 0.5f;
            want += xf[i];
        }
        st_kernel_init(&k, ST_K_REDUCE, 2);
        k.nred = 2;
        k.reduce[0].op = ST_RED_SUM;
        addbuf(&k, ST_FLOAT32, false, 0, 1, -1, -1);
        addbuf(&k, ST_FLOAT32, true, -1, -1, -1, -1);
        k.reduce[0].src = nload(&k, 0, ST_FLOAT32);
        store(&k, 1, nreduced(&k, ST_FLOAT32));
        st_kargs f = {0};
        f.shape[0] = 3;
        f.shape[1] = 5;
        set_buf(&f, 0, xf, 5, 1, 0, 0);
        set_buf(&f, 1, &o1, 0, 0, 0, 0);
        CHECK(run1(&k, &f) == ST_OK && o1 == (float)want,
              "full sum to a scalar: %g vs %g (%s)", o1, want, st_err_msg());
        st_kernel_clear(&k);
        float x0 = 2.5f, o0 = 0;
        st_kernel_init(&k, ST_K_REDUCE, 0);
        k.nred = 0;
        k.reduce[0].op = ST_RED_MEAN;
        addbuf(&k, ST_FLOAT32, false, -1, -1, -1, -1);
        addbuf(&k, ST_FLOAT32, true, -1, -1, -1, -1);
        k.reduce[0].src = nload(&k, 0, ST_FLOAT32);
        store(&k, 1, nreduced(&k, ST_FLOAT32));
        st_kargs z = {0};
        set_buf(&z, 0, &x0, 0, 0, 0, 0);
        set_buf(&z, 1, &o0, 0, 0, 0, 0);
        CHECK(run1(&k, &z) == ST_OK && o0 == 2.5f,
              "rank-0 mean (nred 0): %g (%s)", o0, st_err_msg());
        st_kernel_clear(&k);
        /* rank-0 elementwise: one point */
        st_kernel_init(&k, ST_K_ELEMENTWISE, 0);
        addbuf(&k, ST_FLOAT32, false, -1, -1, -1, -1);
        addbuf(&k, ST_FLOAT32, true, -1, -1, -1, -1);
        store(&k, 1, nun(&k, ST_OP_NEG, nload(&k, 0, ST_FLOAT32), ST_FLOAT32));
        CHECK(run1(&k, &z) == ST_OK && o0 == -2.5f, "rank-0 neg: %g", o0);
        st_kernel_clear(&k);
    }

    /* empty reduced extent: x [4, 0] */
    st_reduce_op ops[4] = {ST_RED_SUM, ST_RED_MEAN, ST_RED_PROD, ST_RED_MAX};
    for (int t = 0; t < 4; t++) {
        float out[4] = {-7, -7, -7, -7};
        float dummy = 0;
        st_kernel_init(&k, ST_K_REDUCE, 2);
        k.nred = 1;
        k.reduce[0].op = ops[t];
        addbuf(&k, ST_FLOAT32, false, 0, 1, -1, -1);
        addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
        k.reduce[0].src = nload(&k, 0, ST_FLOAT32);
        store(&k, 1, nreduced(&k, ST_FLOAT32));
        st_kargs e = {0};
        e.shape[0] = 4;
        e.shape[1] = 0;
        set_buf(&e, 0, &dummy, 0, 1, 0, 0);
        set_buf(&e, 1, out, 1, 0, 0, 0);
        st_err_clear();
        st_status s = run1(&k, &e);
        if (ops[t] == ST_RED_MAX) {
            CHECK(s == ST_ERR_RUNTIME, "empty amax must fail (got %d)", s);
        } else {
            CHECK(s == ST_OK, "empty reduce %d: %s", t, st_err_msg());
            float want = ops[t] == ST_RED_SUM ? 0.0f
                         : ops[t] == ST_RED_PROD ? 1.0f : NAN;
            bool ok = true;
            for (int i = 0; i < 4; i++)
                ok = ok && close_to(out[i], want, 0, 0);
            CHECK(ok, "empty reduce op %d identity (got %g)", t, out[0]);
        }
        st_kernel_clear(&k);
    }
}

static void naive_mm(const float *A, const float *B, double *C, int nb, int M,
                     int N, int K, bool bt)
{
    for (int b = 0; b < nb; b++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int k = 0; k < K; k++) {
                    float bv = bt ? B[b * N * K + n * K + k]
                                  : B[b * K * N + k * N + n];
                    s += (double)A[b * M * K + m * K + k] * bv;
                }
                C[b * M * N + m * N + n] = s;
            }
}

static st_status run_mm(st_dtype dt, void *A, void *B, void *C, int nb,
                        int M, int N, int K, bool bt)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_MATMUL, 4);
    addbuf(&k, dt, false, 0, 1, -1, 2);
    addbuf(&k, dt, false, 0, -1, 2, 1);
    addbuf(&k, dt, true, 0, 1, 2, -1);
    st_kargs ar = {0};
    ar.shape[0] = nb;
    ar.shape[1] = M;
    ar.shape[2] = N;
    ar.shape[3] = K;
    set_buf(&ar, 0, A, (int64_t)M * K, K, 0, 1);
    if (bt)
        set_buf(&ar, 1, B, (int64_t)N * K, 0, K, 1);
    else
        set_buf(&ar, 1, B, (int64_t)K * N, 0, 1, N);
    set_buf(&ar, 2, C, (int64_t)M * N, N, 1, 0);
    st_status s = run1(&k, &ar);
    st_kernel_clear(&k);
    return s;
}

static void test_matmul(void)
{
    enum { NB = 3, M = 33, N = 47, K = 65 };
    float *A = malloc(sizeof(float) * NB * M * K);
    float *B = malloc(sizeof(float) * NB * K * N);
    float *C = malloc(sizeof(float) * NB * M * N);
    double *R = malloc(sizeof(double) * NB * M * N);
    for (int i = 0; i < NB * M * K; i++)
        A[i] = (float)(frand() * 2 - 1);
    for (int i = 0; i < NB * K * N; i++)
        B[i] = (float)(frand() * 2 - 1);
    for (int bt = 0; bt < 2; bt++) {
        CHECK(run_mm(ST_FLOAT32, A, B, C, NB, M, N, K, bt) == ST_OK,
              "matmul: launch: %s", st_err_msg());
        naive_mm(A, B, R, NB, M, N, K, bt);
        int bad = 0;
        for (int i = 0; i < NB * M * N; i++)
            if (!close_to(C[i], R[i], 1e-4, 1e-4))
                bad++;
        CHECK(bad == 0, "batched matmul (B %s): %d mismatches",
              bt ? "transposed" : "contiguous", bad);
    }
    /* float64 */
    double *Ad = malloc(sizeof(double) * NB * M * K);
    double *Bd = malloc(sizeof(double) * NB * K * N);
    double *Cd = malloc(sizeof(double) * NB * M * N);
    for (int i = 0; i < NB * M * K; i++)
        Ad[i] = A[i];
    for (int i = 0; i < NB * K * N; i++)
        Bd[i] = B[i];
    CHECK(run_mm(ST_FLOAT64, Ad, Bd, Cd, NB, M, N, K, false) == ST_OK,
          "matmul f64: launch");
    naive_mm(A, B, R, NB, M, N, K, false);
    int bad = 0;
    for (int i = 0; i < NB * M * N; i++)
        if (!close_to(Cd[i], R[i], 1e-12, 1e-12))
            bad++;
    CHECK(bad == 0, "matmul float64: %d mismatches", bad);
    /* int32: small exact */
    int32_t Ai[6] = {1, 2, 3, 4, 5, 6}, Bi[6] = {7, 8, 9, 10, 11, 12}, Ci[4];
    CHECK(run_mm(ST_INT32, Ai, Bi, Ci, 1, 2, 2, 3, false) == ST_OK,
          "matmul int32: launch");
    CHECK(Ci[0] == 58 && Ci[1] == 64 && Ci[2] == 139 && Ci[3] == 154,
          "matmul int32 values");
    free(A);
    free(B);
    free(C);
    free(R);
    free(Ad);
    free(Bd);
    free(Cd);
}

static void test_gather(void)
{
    enum { T = 5, W = 4, NI = 6 };
    float table[T * W];
    for (int i = 0; i < T * W; i++)
        table[i] = (float)i;
    int64_t idx[NI] = {4, 0, 2, 2, 1, 3};
    float out[NI * W];
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    addbuf(&k, ST_FLOAT32, false, -1, 1, -1, -1); /* table, dim 0 indexed */
    addbuf(&k, ST_INT64, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, 1, -1, -1);
    int ix = nload(&k, 1, ST_INT64);
    store(&k, 2, ngather(&k, 0, 0, ix, ST_FLOAT32));
    st_kargs ar = {0};
    ar.shape[0] = NI;
    ar.shape[1] = W;
    set_buf(&ar, 0, table, 0, 1, 0, 0);
    ar.bufs[0].idx_size = T;
    ar.bufs[0].idx_stride = W;
    set_buf(&ar, 1, idx, 1, 0, 0, 0);
    set_buf(&ar, 2, out, W, 1, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "gather: launch: %s", st_err_msg());
    int bad = 0;
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < W; j++)
            if (out[i * W + j] != table[idx[i] * W + j])
                bad++;
    CHECK(bad == 0, "gather: %d mismatches", bad);
    idx[3] = 7;
    st_err_clear();
    CHECK(run1(&k, &ar) == ST_ERR_INDEX, "gather: out-of-bounds index 7");
    CHECK(strcmp(st_err_msg(), "index 7 is out of bounds for dimension 0 "
                 "with size 5") == 0,
          "gather: error message '%s'", st_err_msg());
    idx[3] = -1;
    CHECK(run1(&k, &ar) == ST_ERR_INDEX, "gather: negative index");
    st_kernel_clear(&k);
}

static void test_rand(void)
{
    /* Philox4x32-10 known answer (Random123 kat_vectors: zero key/ctr) */
    uint32_t o[4];
    st_philox(0, 0, o);
    CHECK(o[0] == 0x6627e8d5u && o[1] == 0xe169c58du &&
              o[2] == 0xbc57ac4cu && o[3] == 0x9b00dbd8u,
          "philox known answer: %08x %08x %08x %08x", o[0], o[1], o[2],
          o[3]);
    /* global generator */
    CHECK(st_rt_initial_seed() == 67280421310721ull, "default seed");
    uint64_t s0, off0, s1, off1;
    st_rt_rng_reserve(100, &s0, &off0);
    st_rt_rng_reserve(5, &s1, &off1);
    CHECK(s0 == s1 && off1 == off0 + 100, "rng_reserve advances offset");
    st_rt_manual_seed(42);
    st_rt_rng_reserve(1, &s0, &off0);
    CHECK(s0 == 42 && off0 == 0 && st_rt_initial_seed() == 42,
          "manual_seed resets");

    enum { N = 200000 };
    float *u = malloc(sizeof(float) * N), *u2 = malloc(sizeof(float) * N);
    double *z = malloc(sizeof(double) * N);
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    addbuf(&k, ST_FLOAT32, true, 0, 1, -1, -1);
    addbuf(&k, ST_FLOAT64, true, 0, 1, -1, -1);
    store(&k, 0, nrand(&k, 0, ST_FLOAT32));
    store(&k, 1, nrand(&k, 1, ST_FLOAT64));
    st_kargs ar = {0};
    ar.shape[0] = N / 1000;
    ar.shape[1] = 1000;
    ar.rng_seed = 1234;
    ar.rng_offset = 77;
    set_buf(&ar, 0, u, 1000, 1, 0, 0);
    set_buf(&ar, 1, z, 1000, 1, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "rand: launch: %s", st_err_msg());
    double mu = 0, mz = 0, vz = 0;
    int out_of_range = 0, mism = 0;
    for (int i = 0; i < N; i++) {
        if (!(u[i] >= 0 && u[i] < 1))
            out_of_range++;
        mu += u[i];
        mz += z[i];
        vz += z[i] * z[i];
        if (u[i] != (float)st_rand_uniform_f(1234, 77, (uint64_t)i) ||
            z[i] != st_rand_normal(1234, 77 + (uint64_t)i))
            mism++;
    }
    mu /= N;
    mz /= N;
    vz = vz / N - mz * mz;
    CHECK(out_of_range == 0, "rand uniform in [0,1): %d outside",
          out_of_range);
    CHECK(fabs(mu - 0.5) < 0.01, "rand uniform mean %g", mu);
    CHECK(fabs(mz) < 0.02 && fabs(vz - 1) < 0.03, "randn mean %g var %g", mz,
          vz);
    CHECK(mism == 0, "rand values follow (seed, offset, linear index): %d",
          mism);
    CHECK(run1(&k, &ar) == ST_OK, "rand: relaunch");
    memcpy(u2, u, sizeof(float) * N);
    CHECK(run1(&k, &ar) == ST_OK, "rand: relaunch");
    CHECK(memcmp(u, u2, sizeof(float) * N) == 0, "rand reproducible");
    ar.rng_offset = 77 + N;
    CHECK(run1(&k, &ar) == ST_OK, "rand: other offset");
    int same = 0;
    for (int i = 0; i < N; i++)
        same += u[i] == u2[i];
    CHECK(same < N / 1000, "rand: different offsets give different streams "
          "(%d equal)", same);
    /* uniform near 1 stays below 1 in half precision */
    uint16_t h[4096];
    st_kernel k2;
    st_kernel_init(&k2, ST_K_ELEMENTWISE, 1);
    addbuf(&k2, ST_FLOAT16, true, 0, -1, -1, -1);
    store(&k2, 0, nrand(&k2, 0, ST_FLOAT16));
    st_kargs a2 = {0};
    a2.shape[0] = 4096;
    a2.rng_seed = 5;
    set_buf(&a2, 0, h, 1, 0, 0, 0);
    CHECK(run1(&k2, &a2) == ST_OK, "rand f16: launch");
    int ge1 = 0;
    for (int i = 0; i < 4096; i++)
        ge1 += st_half_to_float(h[i]) >= 1.0f;
    CHECK(ge1 == 0, "rand float16 stays below 1: %d", ge1);
    st_kernel_clear(&k);
    st_kernel_clear(&k2);
    free(u);
    free(u2);
    free(z);
}

static void test_where_index(void)
{
    enum { R = 3, C = 4 };
    float x[R * C], y[R * C], o[R * C];
    int64_t oi[R * C];
    for (int i = 0; i < R * C; i++) {
        x[i] = (float)(i % 3) - 1.0f;
        y[i] = (float)i;
    }
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    addbuf(&k, ST_FLOAT32, false, 0, 1, -1, -1);
    addbuf(&k, ST_FLOAT32, false, 0, 1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, 1, -1, -1);
    addbuf(&k, ST_INT64, true, 0, 1, -1, -1);
    int a = nload(&k, 0, ST_FLOAT32), b = nload(&k, 1, ST_FLOAT32);
    int zero = nconstf(&k, 0.0, ST_FLOAT32);
    int gt = nbin(&k, ST_OP_GT, a, zero, ST_BOOL);
    int y2 = nbin(&k, ST_OP_MUL, b, nconstf(&k, 2.0, ST_FLOAT32), ST_FLOAT32);
    store(&k, 2, nwhere(&k, gt, a, y2, ST_FLOAT32));
    int col = nindex(&k, 1), lin = nindex(&k, -1);
    store(&k, 3, nbin(&k, ST_OP_ADD,
                      nbin(&k, ST_OP_MUL, col, nconsti(&k, 100, ST_INT64),
                           ST_INT64),
                      lin, ST_INT64));
    st_kargs ar = {0};
    ar.shape[0] = R;
    ar.shape[1] = C;
    set_buf(&ar, 0, x, C, 1, 0, 0);
    set_buf(&ar, 1, y, C, 1, 0, 0);
    set_buf(&ar, 2, o, C, 1, 0, 0);
    set_buf(&ar, 3, oi, C, 1, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "where: launch: %s", st_err_msg());
    int bad = 0, badi = 0;
    for (int i = 0; i < R * C; i++) {
        if (o[i] != (x[i] > 0 ? x[i] : y[i] * 2))
            bad++;
        if (oi[i] != (i % C) * 100 + i)
            badi++;
    }
    CHECK(bad == 0, "where: %d mismatches", bad);
    CHECK(badi == 0, "index nodes: %d mismatches", badi);
    st_kernel_clear(&k);
}

/* Elementwise binary op over 1-D arrays of dtype dt (8-byte values). */
static st_status ew2(st_op_id op, st_dtype dt, st_dtype odt, void *x,
                     void *y, void *o, int n)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, dt, false, 0, -1, -1, -1);
    addbuf(&k, dt, false, 0, -1, -1, -1);
    addbuf(&k, odt, true, 0, -1, -1, -1);
    int a = nload(&k, 0, dt), b = nload(&k, 1, dt);
    store(&k, 2, nbin(&k, op, a, b, odt));
    st_kargs ar = {0};
    ar.shape[0] = n;
    set_buf(&ar, 0, x, 1, 0, 0, 0);
    set_buf(&ar, 1, y, 1, 0, 0, 0);
    set_buf(&ar, 2, o, 1, 0, 0, 0);
    st_status s = run1(&k, &ar);
    st_kernel_clear(&k);
    return s;
}

static st_status ew1(st_op_id op, st_dtype dt, void *x, void *o, int n)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, dt, false, 0, -1, -1, -1);
    addbuf(&k, dt, true, 0, -1, -1, -1);
    store(&k, 1, nun(&k, op, nload(&k, 0, dt), dt));
    st_kargs ar = {0};
    ar.shape[0] = n;
    set_buf(&ar, 0, x, 1, 0, 0, 0);
    set_buf(&ar, 1, o, 1, 0, 0, 0);
    st_status s = run1(&k, &ar);
    st_kernel_clear(&k);
    return s;
}

static void test_int_float_ops(void)
{
    int64_t a[6] = {7, -7, 7, -7, 5, INT64_MIN};
    int64_t b[6] = {2, 2, -2, -2, 0, -1};
    int64_t o[6];
    int64_t fd[6] = {3, -4, -4, 3, 0, INT64_MIN};
    int64_t rm[6] = {1, 1, -1, -1, 0, 0};
    CHECK(ew2(ST_OP_FLOOR_DIVIDE, ST_INT64, ST_INT64, a, b, o, 6) == ST_OK,
          "int floor_divide launch");
    CHECK(memcmp(o, fd, sizeof o) == 0,
          "int floor_divide: %lld %lld %lld %lld %lld", (long long)o[0],
          (long long)o[1], (long long)o[2], (long long)o[3],
          (long long)o[4]);
    CHECK(ew2(ST_OP_REMAINDER, ST_INT64, ST_INT64, a, b, o, 6) == ST_OK,
          "int remainder launch");
    CHECK(memcmp(o, rm, sizeof o) == 0,
          "int remainder: %lld %lld %lld %lld %lld", (long long)o[0],
          (long long)o[1], (long long)o[2], (long long)o[3],
          (long long)o[4]);
    CHECK(ew2(ST_OP_DIV, ST_INT64, ST_INT64, a, b, o, 6) == ST_OK &&
              o[4] == 0 && o[0] == 3 && o[1] == -3,
          "int div truncates, by zero gives 0");
    double fa[4] = {7.5, -7.5, 7.5, -7.5}, fb[4] = {2, 2, -2, -2}, fo[4];
    double ffd[4] = {3, -4, -4, 3}, frm[4] = {1.5, 0.5, -0.5, -1.5};
    CHECK(ew2(ST_OP_FLOOR_DIVIDE, ST_FLOAT64, ST_FLOAT64, fa, fb, fo, 4) ==
              ST_OK && memcmp(fo, ffd, sizeof fo) == 0,
          "float floor_divide: %g %g %g %g", fo[0], fo[1], fo[2], fo[3]);
    CHECK(ew2(ST_OP_REMAINDER, ST_FLOAT64, ST_FLOAT64, fa, fb, fo, 4) ==
              ST_OK && memcmp(fo, frm, sizeof fo) == 0,
          "float remainder: %g %g %g %g", fo[0], fo[1], fo[2], fo[3]);
    /* pow */
    int64_t pa[3] = {3, -2, 10}, pb[3] = {4, 3, 0};
    CHECK(ew2(ST_OP_POW, ST_INT64, ST_INT64, pa, pb, o, 3) == ST_OK &&
              o[0] == 81 && o[1] == -8 && o[2] == 1,
          "int pow");
    /* negative exponents as torch: 1 and -1 stay, others truncate to 0 */
    int64_t na[4] = {1, -1, -1, -2}, nb[4] = {-5, -1, -2, -1};
    CHECK(ew2(ST_OP_POW, ST_INT64, ST_INT64, na, nb, o, 4) == ST_OK &&
              o[0] == 1 && o[1] == -1 && o[2] == 1 && o[3] == 0,
          "int pow, negative exponents: %lld %lld %lld %lld", (long long)o[0],
          (long long)o[1], (long long)o[2], (long long)o[3]);
    /* maximum with NaN, comparisons */
    double ma[3] = {1, NAN, 3}, mb[3] = {2, 0, NAN};
    CHECK(ew2(ST_OP_MAXIMUM, ST_FLOAT64, ST_FLOAT64, ma, mb, fo, 3) ==
              ST_OK && fo[0] == 2 && isnan(fo[1]) && isnan(fo[2]),
          "maximum propagates NaN");
    uint8_t bo[3];
    CHECK(ew2(ST_OP_NE, ST_FLOAT64, ST_BOOL, ma, mb, bo, 3) == ST_OK &&
              bo[0] == 1 && bo[1] == 1 && bo[2] == 1,
          "ne with NaN");
    /* unary */
    double ux[6] = {0.5, 1.5, 2.5, -0.5, -2.5, NAN}, uo[6];
    CHECK(ew1(ST_OP_ROUND, ST_FLOAT64, ux, uo, 6) == ST_OK && uo[0] == 0 &&
              uo[1] == 2 && uo[2] == 2 && uo[3] == 0 && signbit(uo[3]) &&
              uo[4] == -2,
          "round half to even");
    CHECK(ew1(ST_OP_SIGN, ST_FLOAT64, ux, uo, 6) == ST_OK && uo[0] == 1 &&
              uo[3] == -1 && uo[5] == 0,
          "sign (NaN -> 0)");
    CHECK(ew1(ST_OP_RELU, ST_FLOAT64, ux, uo, 6) == ST_OK && uo[3] == 0 &&
              uo[1] == 1.5 && isnan(uo[5]),
          "relu");
    CHECK(ew1(ST_OP_SIGMOID, ST_FLOAT64, ux, uo, 6) == ST_OK &&
              close_to(uo[0], 1 / (1 + exp(-0.5)), 1e-15, 0),
          "sigmoid");
    float ex[3] = {0.1f, -3.0f, 10.0f}, eo[3];
    CHECK(ew1(ST_OP_EXP, ST_FLOAT32, ex, eo, 3) == ST_OK &&
              eo[0] == (float)exp(0.1f) && eo[2] == (float)exp(10.0),
          "exp float32");
}

static void test_hash(void)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    snprintf(k.name, sizeof k.name, "k0_add");
    addbuf(&k, ST_FLOAT32, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
    int a = nload(&k, 0, ST_FLOAT32), b = nload(&k, 1, ST_FLOAT32);
    int c = nbin(&k, ST_OP_ADD, a, b, ST_FLOAT32);
    store(&k, 2, c);
    uint64_t h0 = st_kernel_hash(&k);
    CHECK(h0 == st_kernel_hash(&k), "hash deterministic");
    k.bufs[0].value = 9999;
    k.src_stmt = 42;
    snprintf(k.name, sizeof k.name, "k7_other");
    CHECK(st_kernel_hash(&k) == h0, "hash ignores value ids, names");
    k.nodes[c].op = ST_OP_SUB;
    CHECK(st_kernel_hash(&k) != h0, "hash changes with a node op");
    k.nodes[c].op = ST_OP_ADD;
    CHECK(st_kernel_hash(&k) == h0, "hash restored");
    k.bufs[1].dtype = ST_FLOAT16;
    CHECK(st_kernel_hash(&k) != h0, "hash changes with a buffer dtype");
    k.bufs[1].dtype = ST_FLOAT32;
    k.bufs[1].dimmap[0] = -1;
    CHECK(st_kernel_hash(&k) != h0, "hash changes with a dimmap");
    k.bufs[1].dimmap[0] = 0;
    char *txt = st_kernel_print(&k);
    CHECK(txt && strstr(txt, "n2 = add(n0, n1) : float32") &&
              strstr(txt, "store buf2 <- n2"),
          "print format: %s", txt ? txt : "(null)");
    free(txt);
    st_kernel_clear(&k);
    CHECK(k.nodes == NULL && k.nnodes == 0, "st_kernel_clear");
}

static void test_bad_kernel(void)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
    st_knode n = mk(ST_KN_UNARY, ST_FLOAT32);
    n.op = ST_OP_EXP;
    n.a = 3; /* not an earlier node */
    store(&k, 0, st_kernel_node(&k, &n));
    st_err_clear();
    CHECK(be->compile(be, &k, 1) == NULL && st_err_kind() != ST_OK,
          "compile rejects a forward operand");
    st_kernel_clear(&k);
}

static void test_timing(void)
{
    enum { N = 4 * 1024 * 1024 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N),
          *o = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    addbuf(&k, ST_FLOAT32, false, 0, 1, -1, -1);
    addbuf(&k, ST_FLOAT32, false, 0, 1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, 1, -1, -1);
    store(&k, 2, nbin(&k, ST_OP_ADD, nload(&k, 0, ST_FLOAT32),
                      nload(&k, 1, ST_FLOAT32), ST_FLOAT32));
    st_kargs ar = {0};
    ar.shape[0] = 2048;
    ar.shape[1] = N / 2048;
    set_buf(&ar, 0, x, N / 2048, 1, 0, 0);
    set_buf(&ar, 1, y, N / 2048, 1, 0, 0);
    set_buf(&ar, 2, o, N / 2048, 1, 0, 0);
    void *h = be->compile(be, &k, 1);
    st_status s = be->launch(be, h, 0, &ar);
    double best = 1e9, t0, t1;
    for (int rep = 0; rep < 3; rep++) {
        t0 = now_s();
        s = be->launch(be, h, 0, &ar);
        t1 = now_s();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    be->release(be, h);
    CHECK(s == ST_OK && o[N - 1] == (float)(N - 1) + 1.0f, "4M add result");
    printf("timing: 4M-element float32 add: %.2f ms (best of 3)\n",
           best * 1e3);
    CHECK(!TIMING_CHECKS || best < 0.05, "4M add takes %.1f ms (>= 50 ms)",
          best * 1e3);
    st_kernel_clear(&k);
    free(x);
    free(y);
    free(o);

    enum { S = 512 };
    float *A = malloc(sizeof(float) * S * S), *B = malloc(sizeof(float) * S * S),
          *C = malloc(sizeof(float) * S * S);
    for (int i = 0; i < S * S; i++) {
        A[i] = (float)(frand() - 0.5);
        B[i] = (float)(frand() - 0.5);
    }
    t0 = now_s();
    s = run_mm(ST_FLOAT32, A, B, C, 1, S, S, S, false);
    t1 = now_s();
    double ref = 0;
    for (int kk = 0; kk < S; kk++)
        ref += (double)A[5 * S + kk] * B[kk * S + 7];
    CHECK(s == ST_OK && close_to(C[5 * S + 7], ref, 1e-4, 1e-4),
          "512^3 matmul result");
    printf("timing: 512^3 float32 matmul: %.1f ms\n", (t1 - t0) * 1e3);
    CHECK(!TIMING_CHECKS || t1 - t0 < 1.0, "512^3 matmul takes %.0f ms (>= 1 s)",
          (t1 - t0) * 1e3);
    free(A);
    free(B);
    free(C);
}

/* Indexed accumulating store (scatter_add along dim 0): out[idx[i], j] +=
 * src[i, j] over the index's space, duplicates accumulating, an
 * out-of-bounds index rejected before anything of the block is written;
 * and a float32 accumulate that rounds to the buffer dtype. */
static void test_scatter_store(void)
{
    enum { T = 5, W = 3, NI = 4, PAD = 3 * W };
    /* out lies between guard regions that must never be written */
    double mem[PAD + T * W + PAD], src[NI * W], want[T * W];
    double *out = mem + PAD;
    for (int i = 0; i < PAD + T * W + PAD; i++)
        mem[i] = -777.0;
    int64_t idx[NI] = {4, 1, 4, 0};
    for (int i = 0; i < T * W; i++)
        out[i] = want[i] = i * 0.5;
    for (int i = 0; i < NI * W; i++)
        src[i] = 1.0 + i;
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < W; j++)
            want[idx[i] * W + j] += src[i * W + j];
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    addbuf(&k, ST_INT64, false, 0, -1, -1, -1);     /* index [NI] as [NI, 1] */
    addbuf(&k, ST_FLOAT64, false, 0, 1, -1, -1);    /* src [NI, W] */
    addbuf(&k, ST_FLOAT64, true, -1, 1, -1, -1);    /* out [T, W], dim 0 indexed */
    int ix = nload(&k, 0, ST_INT64);
    int sv = nload(&k, 1, ST_FLOAT64);
    store(&k, 2, sv);
    k.stores[0].indexed = true;
    k.stores[0].idx_dim = 0;
    k.stores[0].idx_node = ix;
    k.stores[0].accumulate = true;
    st_kargs ar = {0};
    ar.shape[0] = NI;
    ar.shape[1] = W;
    set_buf(&ar, 0, idx, 1, 0, 0, 0);
    set_buf(&ar, 1, src, W, 1, 0, 0);
    set_buf(&ar, 2, out, 0, 1, 0, 0);
    ar.bufs[2].idx_size = T;
    ar.bufs[2].idx_stride = W;
    CHECK(run1(&k, &ar) == ST_OK, "scatter store: launch: %s", st_err_msg());
    int bad = 0;
    for (int i = 0; i < T * W; i++)
        if (out[i] != want[i])
            bad++;
    CHECK(bad == 0, "scatter store: %d mismatches", bad);
    /* out of bounds: an error, and nothing written outside the buffer */
    idx[2] = 7;
    st_err_clear();
    CHECK(run1(&k, &ar) == ST_ERR_INDEX, "scatter store: index 7");
    CHECK(strcmp(st_err_msg(), "index 7 is out of bounds for dimension 0 "
                 "with size 5") == 0,
          "scatter store: error message '%s'", st_err_msg());
    idx[2] = -1;
    CHECK(run1(&k, &ar) == ST_ERR_INDEX, "scatter store: negative index");
    bad = 0;
    for (int i = 0; i < PAD; i++)
        bad += (mem[i] != -777.0) + (mem[PAD + T * W + i] != -777.0);
    CHECK(bad == 0, "scatter store: %d writes outside the buffer", bad);
    idx[2] = 4;
    /* a plain (non-indexed) accumulating store into float32: rounding */
    st_kernel_clear(&k);
    st_kernel_init(&k, ST_K_ELEMENTWISE, 1);
    addbuf(&k, ST_FLOAT64, false, 0, -1, -1, -1);
    addbuf(&k, ST_FLOAT32, true, 0, -1, -1, -1);
    store(&k, 1, nload(&k, 0, ST_FLOAT64));
    k.stores[0].accumulate = true;
    double add[2] = {1e-9, 0.25};
    float acc[2] = {1.0f, 2.0f};
    st_kargs a2 = {0};
    a2.shape[0] = 2;
    set_buf(&a2, 0, add, 1, 0, 0, 0);
    set_buf(&a2, 1, acc, 1, 0, 0, 0);
    CHECK(run1(&k, &a2) == ST_OK, "accumulate f32: %s", st_err_msg());
    CHECK(acc[0] == 1.0f && acc[1] == 2.25f, "accumulate f32: %g %g",
          acc[0], acc[1]);
    /* a bad index node is rejected at compile time */
    k.stores[0].indexed = true;
    k.stores[0].idx_dim = 0;
    k.stores[0].idx_node = 9;
    CHECK(run1(&k, &a2) == ST_ERR_RUNTIME, "scatter store: bad idx_node");
    st_kernel_clear(&k);
    st_err_clear();
}

/* ---- multi-reduction row kernels and matmul epilogues ---- */

static int nreducedi(st_kernel *k, int i, st_dtype dt)
{
    st_knode n = mk(ST_KN_REDUCED, dt);
    n.i = i;
    return st_kernel_node(k, &n);
}

/* One kernel softmax over rows of [R, C] (C > BLK: several blocks):
 * max (phase 0), sum of exp(x - max) (phase 1), exp(x - max) / sum per
 * point (phase 2). */
static void test_softmax_kernel(void)
{
    enum { R = 7, C = 600 };
    double *x = malloc(sizeof(double) * R * C), *y = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R * C; i++)
        x[i] = frand() * 20 - 10;
    st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 2);
    k.nred = 1;
    k.nreduce = 2;
    k.final_per_point = true;
    addbuf(&k, ST_FLOAT64, false, 0, 1, -1, -1);
    addbuf(&k, ST_FLOAT64, true, 0, 1, -1, -1);
    g_phase = 0;
    k.reduce[0].op = ST_RED_MAX;
    k.reduce[0].src = nload(&k, 0, ST_FLOAT64);
    g_phase = 1;
    int e1 = nun(&k, ST_OP_EXP, nbin(&k, ST_OP_SUB, nload(&k, 0, ST_FLOAT64),
                                      nreducedi(&k, 0, ST_FLOAT64), ST_FLOAT64),
                 ST_FLOAT64);
    k.reduce[1].op = ST_RED_SUM;
    k.reduce[1].src = e1;
    g_phase = 2;
    int e2 = nun(&k, ST_OP_EXP, nbin(&k, ST_OP_SUB, nload(&k, 0, ST_FLOAT64),
                                      nreducedi(&k, 0, ST_FLOAT64), ST_FLOAT64),
                 ST_FLOAT64);
    store(&k, 1, nbin(&k, ST_OP_DIV, e2, nreducedi(&k, 1, ST_FLOAT64),
                      ST_FLOAT64));
    g_phase = 0;
    st_kargs ar = {0};
    ar.shape[0] = R;
    ar.shape[1] = C;
    set_buf(&ar, 0, x, C, 1, 0, 0);
    set_buf(&ar, 1, y, C, 1, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "softmax kernel: %s", st_err_msg());
    int bad = 0;
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, x[r * C + c]);
        for (int c = 0; c < C; c++)
            s += exp(x[r * C + c] - m);
        for (int c = 0; c < C; c++)
            bad += !close_to(y[r * C + c], exp(x[r * C + c] - m) / s, 1e-12,
                             1e-15);
    }
    CHECK(bad == 0, "softmax kernel: %d mismatches", bad);
    /* a source that reads its own reduction is rejected */
    k.reduce[1].src = nbin(&k, ST_OP_ADD, e1, nreducedi(&k, 1, ST_FLOAT64),
                           ST_FLOAT64);
    void *h = be->compile(be, &k, 1);
    CHECK(h == NULL, "reduction depending on itself accepted");
    if (h)
        be->release(be, h);
    st_err_clear();
    st_kernel_clear(&k);
    free(x);
    free(y);
}

/* layer_norm over the last dim of float32 [R, C] read transposed (stored
 * [C, R]), weight and bias [C]; also the mean stored per row (a per-outer
 * value stored from the per-point epilogue). */
static void test_layer_norm_kernel(void)
{
    enum { R = 9, C = 300 };
    float *x = malloc(sizeof(float) * R * C), *y = malloc(sizeof(float) * R * C);
    float w[C], bias[C], mu[R];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)(frand() * 4 - 2);
    for (int c = 0; c < C; c++) {
        w[c] = (float)frand();
        bias[c] = (float)(frand() - 0.5);
    }
    const st_dtype F = ST_FLOAT32;
    st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 2);
    k.nred = 1;
    k.nreduce = 2;
    k.final_per_point = true;
    addbuf(&k, F, false, 0, 1, -1, -1);  /* x */
    addbuf(&k, F, false, -1, 0, -1, -1); /* w */
    addbuf(&k, F, false, -1, 0, -1, -1); /* b */
    addbuf(&k, F, true, 0, 1, -1, -1);   /* y */
    addbuf(&k, F, true, 0, -1, -1, -1);  /* mean, [R] */
    k.nparams = 1;
    k.param_dtype[0] = ST_FLOAT64;
    g_phase = 0;
    k.reduce[0].op = ST_RED_MEAN;
    k.reduce[0].src = nload(&k, 0, F);
    g_phase = 1;
    int d1 = nbin(&k, ST_OP_SUB, nload(&k, 0, F), nreducedi(&k, 0, F), F);
    k.reduce[1].op = ST_RED_MEAN;
    k.reduce[1].src = nbin(&k, ST_OP_MUL, d1, d1, F);
    g_phase = 2;
    int m2 = nreducedi(&k, 0, F);
    int d2 = nbin(&k, ST_OP_SUB, nload(&k, 0, F), m2, F);
    int rs = nun(&k, ST_OP_RSQRT,
                 nbin(&k, ST_OP_ADD, nreducedi(&k, 1, F),
                      ncast(&k, nparam(&k, 0, ST_FLOAT64), F), F), F);
    int o = nbin(&k, ST_OP_ADD,
                 nbin(&k, ST_OP_MUL, nbin(&k, ST_OP_MUL, d2, rs, F),
                      nload(&k, 1, F), F),
                 nload(&k, 2, F), F);
    store(&k, 3, o);
    store(&k, 4, m2);
    g_phase = 0;
    st_kargs ar = {0};
    ar.shape[0] = R;
    ar.shape[1] = C;
    ar.params[0].f = 1e-5;
    set_buf(&ar, 0, x, 1, R, 0, 0); /* transposed */
    set_buf(&ar, 1, w, 0, 1, 0, 0);
    set_buf(&ar, 2, bias, 0, 1, 0, 0);
    set_buf(&ar, 3, y, C, 1, 0, 0);
    set_buf(&ar, 4, mu, 1, 0, 0, 0);
    CHECK(run1(&k, &ar) == ST_OK, "layer_norm kernel: %s", st_err_msg());
    int bad = 0;
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int c = 0; c < C; c++)
            m += x[c * R + r];
        m /= C;
        for (int c = 0; c < C; c++)
            v += (x[c * R + r] - m) * (x[c * R + r] - m);
        v /= C;
        bad += !close_to(mu[r], m, 1e-5, 1e-6);
        for (int c = 0; c < C; c++) {
            double want = (x[c * R + r] - m) / sqrt(v + 1e-5) * w[c] + bias[c];
            bad += !close_to(y[r * C + c], want, 1e-4, 1e-5);
        }
    }
    CHECK(bad == 0, "layer_norm kernel: %d mismatches", bad);
    st_kernel_clear(&k);
    free(x);
    free(y);
}

/* out = gelu(A @ B + bias) as a matmul epilogue, batched [NB, M, N]. */
static void test_matmul_epilogue(void)
{
    enum { NB = 2, M = 13, N = 300, K = 17 };
    float *A = malloc(sizeof(float) * NB * M * K);
    float *B = malloc(sizeof(float) * NB * K * N);
    float *O = malloc(sizeof(float) * NB * M * N);
    double *R = malloc(sizeof(double) * NB * M * N);
    float bias[N];
    for (int i = 0; i < NB * M * K; i++)
        A[i] = (float)(frand() * 2 - 1);
    for (int i = 0; i < NB * K * N; i++)
        B[i] = (float)(frand() * 2 - 1);
    for (int n = 0; n < N; n++)
        bias[n] = (float)(frand() - 0.5);
    const st_dtype F = ST_FLOAT32;
    st_kernel k;
    st_kernel_init(&k, ST_K_MATMUL, 4);
    addbuf(&k, F, false, 0, 1, -1, 2);
    addbuf(&k, F, false, 0, -1, 2, 1);
    addbuf(&k, F, true, 0, 1, 2, -1);
    addbuf(&k, F, false, -1, -1, 0, -1); /* bias [N] */
    g_phase = 1;
    int y = nbin(&k, ST_OP_ADD, nreducedi(&k, 0, F), nload(&k, 3, F), F);
    int half = nbin(&k, ST_OP_MUL, y, nconstf(&k, 0.5, F), F);
    int e = nun(&k, ST_OP_ERF, nbin(&k, ST_OP_MUL, y,
                                    nconstf(&k, M_SQRT1_2, F), F), F);
    store(&k, 2, nbin(&k, ST_OP_MUL, half,
                      nbin(&k, ST_OP_ADD, e, nconstf(&k, 1.0, F), F), F));
    g_phase = 0;
    st_kargs ar = {0};
    ar.shape[0] = NB;
    ar.shape[1] = M;
    ar.shape[2] = N;
    ar.shape[3] = K;
    set_buf(&ar, 0, A, (int64_t)M * K, K, 0, 1);
    set_buf(&ar, 1, B, (int64_t)K * N, 0, 1, N);
    set_buf(&ar, 2, O, (int64_t)M * N, N, 1, 0);
    set_buf(&ar, 3, bias, 0, 0, 1, 0);
    CHECK(run1(&k, &ar) == ST_OK, "matmul epilogue: %s", st_err_msg());
    naive_mm(A, B, R, NB, M, N, K, false);
    int bad = 0;
    for (int b = 0; b < NB; b++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int i = (b * M + m) * N + n;
                double v = R[i] + bias[n];
                double want = 0.5 * v * (1 + erf(v * M_SQRT1_2));
                bad += !close_to(O[i], want, 1e-4, 1e-5);
            }
    CHECK(bad == 0, "matmul + bias + gelu epilogue: %d mismatches", bad);
    st_kernel_clear(&k);
    free(A);
    free(B);
    free(O);
    free(R);
}

int main(void)
{
    be = st_backend_get("interp");
    if (!be) {
        printf("FAIL: no interp backend\n");
        return 1;
    }
    RUN_TEST(test_registry());
    RUN_TEST(test_broadcast_add());
    RUN_TEST(test_mixed_cast());
    RUN_TEST(test_half_stores());
    RUN_TEST(test_param_const());
    RUN_TEST(test_reduce_last());
    RUN_TEST(test_reduce_two_dims());
    RUN_TEST(test_reduce_int_and_empty());
    RUN_TEST(test_matmul());
    RUN_TEST(test_softmax_kernel());
    RUN_TEST(test_layer_norm_kernel());
    RUN_TEST(test_matmul_epilogue());
    RUN_TEST(test_gather());
    RUN_TEST(test_scatter_store());
    RUN_TEST(test_rand());
    RUN_TEST(test_where_index());
    RUN_TEST(test_int_float_ops());
    RUN_TEST(test_hash());
    RUN_TEST(test_bad_kernel());
    RUN_TEST(test_timing());
    return st_test_exit_code("test_interp");
}
