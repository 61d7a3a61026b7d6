/* test_sgemm - the LLVM backend's own float32 gemm (llvm_backend/sgemm.c)
 * against a double-precision reference: every operand layout (A and B
 * row-major, transposed, with padded leading dimensions, and with neither
 * stride 1), sizes around the kernels' 6 x 16 and 8 x 32 blocks and the KC / NC / MC
 * blocks (edges, one row or column, K past the K block so partial sums are
 * accumulated, K = 0), beta 0 (C's old contents, NaN here, must not leak) and
 * beta 1 (added), C rows padded. With --bench, times it against OpenBLAS
 * on the BERT and ResNet-step shapes (no pass/fail). On an AVX-512 CPU the
 * checks run for the AVX-512 kernel, then once more for the AVX2 one (the
 * test runs itself again with SYMTRACE_SGEMM=avx2). Exit 77 (skip) where
 * it declines: no AVX2/FMA or SYMTRACE_SGEMM=blas. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llvm_internal.h"
#include "st_test.h"

static uint64_t lcg = 99;

static float frand(void)
{
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(lcg >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* layout: 0 row-major, 1 transposed (column-major), 2 row-major with a
 * padded leading dim, 3 strided both ways (neither stride 1) */
static void strides_of(int layout, int64_t rows, int64_t cols, int64_t *rs,
                       int64_t *cs, int64_t *len)
{
    switch (layout) {
    case 0: *rs = cols; *cs = 1; break;
    case 1: *rs = 1; *cs = rows; break;
    case 2: *rs = cols + 5; *cs = 1; break;
    default: *rs = 2 * cols + 3; *cs = 2; break;
    }
    *len = (rows - 1) * *rs + (cols - 1) * *cs + 1;
    if (*len < 1)
        *len = 1; /* an empty operand */
}

static void one(int64_t M, int64_t N, int64_t K, int la, int lb, bool beta1)
{
    int64_t ars, acs, alen, brs, bcs, blen;
    strides_of(la, M, K, &ars, &acs, &alen);
    strides_of(lb, K, N, &brs, &bcs, &blen);
    int64_t ldc = N + (M % 3);
    float *A = malloc(sizeof(float) * (size_t)alen);
    float *B = malloc(sizeof(float) * (size_t)blen);
    float *C = malloc(sizeof(float) * (size_t)(M * ldc));
    float *C0 = malloc(sizeof(float) * (size_t)(M * ldc));
    for (int64_t i = 0; i < alen; i++)
        A[i] = frand();
    for (int64_t i = 0; i < blen; i++)
        B[i] = frand();
    for (int64_t i = 0; i < M * ldc; i++)
        C0[i] = beta1 ? frand() : NAN;
    memcpy(C, C0, sizeof(float) * (size_t)(M * ldc));
    bool ok = st_llvm_sgemm(M, N, K, A, ars, acs, B, brs, bcs, C, ldc, beta1);
    CHECK(ok, "%lldx%lldx%lld: declined", (long long)M, (long long)N, (long long)K);
    int bad = 0;
    for (int64_t i = 0; ok && i < M && bad < 3; i++) {
        for (int64_t j = 0; j < ldc && bad < 3; j++) {
            float got = C[i * ldc + j];
            if (j >= N) { /* the row's padding: untouched */
                bool same = (isnan(got) && isnan(C0[i * ldc + j])) ||
                            got == C0[i * ldc + j];
                if (!same) {
                    bad++;
                    CHECK(0, "%lldx%lldx%lld layouts %d%d: padding [%lld,%lld] written",
                          (long long)M, (long long)N, (long long)K, la, lb,
                          (long long)i, (long long)j);
                }
                continue;
            }
            double ref = beta1 ? C0[i * ldc + j] : 0.0, mag = fabs(ref);
            for (int64_t k = 0; k < K; k++) {
                double p = (double)A[i * ars + k * acs] * B[k * brs + j * bcs];
                ref += p;
                mag += fabs(p);
            }
            if (!(fabs(got - ref) <= 1e-6 * mag + 1e-6)) {
                bad++;
                CHECK(0, "%lldx%lldx%lld layouts %d%d beta %d: [%lld,%lld] %.9g, want %.9g",
                      (long long)M, (long long)N, (long long)K, la, lb, beta1,
                      (long long)i, (long long)j, got, ref);
            }
        }
    }
    st_test_checks++;
    free(A);
    free(B);
    free(C);
    free(C0);
}

static void test_layouts(void)
{
    static const int64_t sizes[][3] = {
        {1, 1, 1}, {6, 16, 1}, {5, 15, 7}, {7, 17, 9}, {12, 32, 64},
        {13, 33, 65}, {1, 100, 300}, {100, 1, 300}, {37, 45, 256},
        {37, 45, 257}, {97, 20, 600}, {200, 300, 40}, {128, 128, 64},
        {64, 128, 128}, {20, 530, 33}, {190, 20, 130}, {5, 7, 0},
        /* few rows, a long K (B transposed: computed as C^T = B^T A^T) */
        {16, 100, 300}, {9, 40, 600}};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int la = 0; la < 4; la++)
            for (int lb = 0; lb < 4; lb++)
                for (int b = 0; b < 2; b++)
                    one(sizes[s][0], sizes[s][1], sizes[s][2], la, lb, b);
}

/* ---- --bench: own kernel against OpenBLAS, single thread ---- */
#ifdef ST_HAVE_OPENBLAS
#include <cblas.h>
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void bench(void)
{
    static const int64_t shapes[][5] = { /* M N K ta tb */
        {128, 128, 64, 0, 1}, {128, 64, 128, 0, 0}, {64, 128, 128, 1, 0},
        {512, 1024, 256, 0, 1}, {512, 256, 256, 0, 1}, {512, 256, 1024, 1, 0},
        {160, 15261, 256, 0, 1}, {15261, 256, 160, 1, 0},
        /* the ResNet step's convolutions: weight @ columns, one sample */
        {16, 1024, 144, 0, 0}, {32, 256, 288, 0, 0}, {64, 64, 576, 0, 0},
        /* ... their weight gradients (per sample, and the batch in K) */
        {16, 144, 1024, 0, 1}, {16, 27, 1024, 0, 1}, {64, 576, 64, 0, 1},
        {32, 288, 256, 0, 1}, {16, 144, 16384, 0, 1}, {16, 27, 16384, 0, 1}};
    for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        bool ta = shapes[s][3], tb = shapes[s][4];
        int64_t lda = ta ? M : K, ldb = tb ? K : N;
        float *A = malloc(sizeof(float) * (size_t)(M * K));
        float *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C = malloc(sizeof(float) * (size_t)(M * N));
        for (int64_t i = 0; i < M * K; i++)
            A[i] = frand();
        for (int64_t i = 0; i < K * N; i++)
            B[i] = frand();
        double flop = 2.0 * (double)M * (double)N * (double)K;
        int reps = (int)(2e9 / flop) + 1;
        double best[2] = {1e30, 1e30};
        for (int trial = 0; trial < 5; trial++)
            for (int w = 0; w < 2; w++) {
                double t0 = now_s();
                for (int r = 0; r < reps; r++) {
                    if (w == 0)
                        st_llvm_sgemm(M, N, K, A, ta ? 1 : lda, ta ? lda : 1, B,
                                      tb ? 1 : ldb, tb ? ldb : 1, C, N, false);
#ifdef ST_HAVE_OPENBLAS
                    else
                        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                                    tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                                    (int)K, 1.0f, A, (int)lda, B, (int)ldb, 0.0f, C,
                                    (int)N);
#endif
                }
                double t = (now_s() - t0) / reps;
                if (t < best[w])
                    best[w] = t;
            }
        printf("%6lldx%6lldx%6lld t%d%d: own %6.1f GFLOPS, openblas %6.1f\n",
               (long long)M, (long long)N, (long long)K, ta, tb,
               flop / best[0] / 1e9, flop / best[1] / 1e9);
        free(A);
        free(B);
        free(C);
    }
}

int main(int argc, char **argv)
{
    float a = 1, b = 2, c = 0;
    if (!st_llvm_sgemm(1, 1, 1, &a, 1, 1, &b, 1, 1, &c, 1, false)) {
        printf("sgemm declined (no AVX2/FMA, or SYMTRACE_SGEMM=blas): skipped\n");
        return 77;
    }
#ifdef ST_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        bench();
        return 0;
    }
    RUN_TEST(test_layouts());
    int rc = st_test_exit_code("test_sgemm");
    const char *e = getenv("SYMTRACE_SGEMM");
    if (rc == 0 && st_llvm_sgemm_wide() && !(e && *e)) {
        printf("again with the AVX2 kernel (SYMTRACE_SGEMM=avx2):\n");
        fflush(stdout);
        setenv("SYMTRACE_SGEMM", "avx2", 1);
        execv(argv[0], argv);
        perror("execv");
        return 1;
    }
    return rc;
}
