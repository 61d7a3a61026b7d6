/* sgemm.c - the LLVM backend's own float32 gemm for x86-64 CPUs with AVX2
 * and FMA (and an AVX-512 kernel where the CPU has AVX-512F): C (+)= A B
 * for operands of any element strides, C row-major.
 * The structure is BLIS's: B packed KC x NC at a time into 16-column
 * panels ([k][16], zero padded), A read in place 6 rows at a time (packed
 * into [k][6] panels instead when its rows are unit-stride columns and K is
 * long, so the kernel's A lines fit L1 beside B's panel), a 6 x 16
 * register-blocked kernel (12 accumulators, two B loads and six broadcasts
 * a step). matmul.c gives it the small float32 products: on the BERT
 * attention shapes (128x128x64 and the like) it measured 58-60 GFLOPS a
 * core against single-threaded OpenBLAS 0.3.21's 43-50 here, while on the
 * larger Linear and decoder products OpenBLAS's blocking did as well or
 * better in the training step. On AVX-512 CPUs an 8 x 32 kernel (16 zmm
 * accumulators, B in [k][32] panels, or read in place when B is row-major
 * and M <= 64: few row blocks do not repay the packing) runs instead, and
 * matmul.c gives it every float32 product: OpenBLAS 0.3.21 does not know
 * newer CPUs (AMD family 1Ah) and runs its AVX2 Haswell kernels there, at
 * half the FMA width (own 8 x 32: 160-257 GFLOPS a core on the BERT
 * shapes, OpenBLAS 58-130). Every output element is the same fused
 * multiply-add chain over k in either kernel (then C's old value added),
 * so both give the same bits. SYMTRACE_SGEMM=blas sends everything back
 * to OpenBLAS, SYMTRACE_SGEMM=avx2 keeps the AVX2 kernel.
 * Owns: st_llvm_sgemm, st_llvm_sgemm_wide. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define MR 6
#define NR 16
#define MR512 8  /* the AVX-512 kernel's block */
#define NR512 32
#define NRMAX 32
#define KC 256   /* K block: B's panel (KC x 16 floats, 16 KB) stays in L1 */
#define NC 256   /* N block: B's packed block (256 KB) stays in L2 */
#define MC 96    /* rows of A packed at a time, when A is packed (a multiple of MR and MR512) */
#define INB_M 64 /* up to this many rows the AVX-512 kernel reads a row-major B in place */

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* C[0..mr, 0..nr] (+)= A's mr rows (element (r, k) at a[r*ars + k*acs])
 * times the packed panel b ([kc][16]). Rows past mr read row 0 again. */
AVX2 static void kernel(long kc, const float *a, long ars, long acs,
                        const float *b, float *c, long ldc, bool beta1,
                        int mr, int nr)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
    __m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00;
    __m256 c50 = c00, c51 = c00;
    const float *a0 = a, *a1 = a + (mr > 1) * ars, *a2 = a + (mr > 2) * 2 * ars;
    const float *a3 = a + (mr > 3) * 3 * ars, *a4 = a + (mr > 4) * 4 * ars;
    const float *a5 = a + (mr > 5) * 5 * ars;
/* row r of the block: c_r0/c_r1 += a_r[k] * (b0, b1) */
#define ROW(ar, cr0, cr1)                                                   \
    do {                                                                    \
        __m256 x = _mm256_broadcast_ss((ar) + o);                           \
        cr0 = _mm256_fmadd_ps(x, b0, cr0);                                  \
        cr1 = _mm256_fmadd_ps(x, b1, cr1);                                  \
    } while (0)
    for (long k = 0; k < kc; k++, b += NR) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        long o = k * acs;
        ROW(a0, c00, c01);
        ROW(a1, c10, c11);
        ROW(a2, c20, c21);
        ROW(a3, c30, c31);
        ROW(a4, c40, c41);
        ROW(a5, c50, c51);
    }
#undef ROW
    __m256 v[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                       {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < mr; r++) {
        float *p = c + r * ldc;
        if (nr == NR) {
            __m256 x0 = v[r][0], x1 = v[r][1];
            if (beta1) {
                x0 = _mm256_add_ps(x0, _mm256_loadu_ps(p));
                x1 = _mm256_add_ps(x1, _mm256_loadu_ps(p + 8));
            }
            _mm256_storeu_ps(p, x0);
            _mm256_storeu_ps(p + 8, x1);
        } else {
            float t[NR];
            _mm256_storeu_ps(t, v[r][0]);
            _mm256_storeu_ps(t + 8, v[r][1]);
            for (int q = 0; q < nr; q++)
                p[q] = beta1 ? p[q] + t[q] : t[q];
        }
    }
}

/* The AVX-512 kernel: C[0..mr, 0..nr] (+)= A's mr rows (as kernel's) times
 * b's kc rows of 32 columns, row k at b + k*bs: the packed panel ([kc][32],
 * bs = 32) or B itself (row-major, bs = its row stride); 8 x 32 block, 16
 * accumulators. Rows past mr read row 0 again; columns past nr are masked
 * off (neither read nor written). */
AVX512 static void kernel512(long kc, const float *a, long ars, long acs,
                             const float *b, long bs, float *c, long ldc,
                             bool beta1, int mr, int nr)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
    __m512 c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00;
    __m512 c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    const float *a0 = a, *a1 = a + (mr > 1) * ars, *a2 = a + (mr > 2) * 2 * ars;
    const float *a3 = a + (mr > 3) * 3 * ars, *a4 = a + (mr > 4) * 4 * ars;
    const float *a5 = a + (mr > 5) * 5 * ars, *a6 = a + (mr > 6) * 6 * ars;
    const float *a7 = a + (mr > 7) * 7 * ars;
#define ROW(ar, cr0, cr1)                                                   \
    do {                                                                    \
        __m512 x = _mm512_set1_ps((ar)[o]);                                 \
        cr0 = _mm512_fmadd_ps(x, b0, cr0);                                  \
        cr1 = _mm512_fmadd_ps(x, b1, cr1);                                  \
    } while (0)
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF
                 : nr > 16  ? (__mmask16)((1u << (nr - 16)) - 1) : (__mmask16)0;
#define STEP(LOAD0, LOAD1)                                                  \
    for (long k = 0; k < kc; k++, b += bs) {                                \
        __m512 b0 = LOAD0, b1 = LOAD1;                                      \
        long o = k * acs;                                                   \
        ROW(a0, c00, c01);                                                  \
        ROW(a1, c10, c11);                                                  \
        ROW(a2, c20, c21);                                                  \
        ROW(a3, c30, c31);                                                  \
        ROW(a4, c40, c41);                                                  \
        ROW(a5, c50, c51);                                                  \
        ROW(a6, c60, c61);                                                  \
        ROW(a7, c70, c71);                                                  \
    }
#define ROW16(ar, cr0)                                                      \
    do {                                                                    \
        cr0 = _mm512_fmadd_ps(_mm512_set1_ps((ar)[o]), b0, cr0);            \
    } while (0)
    if (nr == NR512) { /* (a packed panel, or B's whole 32 columns in place) */
        STEP(_mm512_loadu_ps(b), _mm512_loadu_ps(b + 16))
    } else if (nr > 16) { /* B's last columns in place: read no further than nr */
        STEP(_mm512_maskz_loadu_ps(m0, b), _mm512_maskz_loadu_ps(m1, b + 16))
    } else { /* at most 16 columns: the right half's products are not made */
        for (long k = 0; k < kc; k++, b += bs) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, b);
            long o = k * acs;
            ROW16(a0, c00);
            ROW16(a1, c10);
            ROW16(a2, c20);
            ROW16(a3, c30);
            ROW16(a4, c40);
            ROW16(a5, c50);
            ROW16(a6, c60);
            ROW16(a7, c70);
        }
    }
#undef ROW16
#undef STEP
#undef ROW
    __m512 v[MR512][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                          {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    for (int r = 0; r < mr; r++) {
        float *p = c + r * ldc;
        __m512 x0 = v[r][0], x1 = v[r][1];
        if (beta1) {
            x0 = _mm512_add_ps(x0, _mm512_maskz_loadu_ps(m0, p));
            x1 = _mm512_add_ps(x1, _mm512_maskz_loadu_ps(m1, p + 16));
        }
        _mm512_mask_storeu_ps(p, m0, x0);
        _mm512_mask_storeu_ps(p + 16, m1, x1);
    }
}

/* 8 rows of 8 floats (row i at q + i*ld) -> 8 columns at d, d + w, ... */
AVX2 static void transpose8(const float *q, long ld, float *d, long w)
{
    __m256 r0 = _mm256_loadu_ps(q), r1 = _mm256_loadu_ps(q + ld);
    __m256 r2 = _mm256_loadu_ps(q + 2 * ld), r3 = _mm256_loadu_ps(q + 3 * ld);
    __m256 r4 = _mm256_loadu_ps(q + 4 * ld), r5 = _mm256_loadu_ps(q + 5 * ld);
    __m256 r6 = _mm256_loadu_ps(q + 6 * ld), r7 = _mm256_loadu_ps(q + 7 * ld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_store_ps(d + 0 * w, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_store_ps(d + 1 * w, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_store_ps(d + 2 * w, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_store_ps(d + 3 * w, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_store_ps(d + 4 * w, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_store_ps(d + 5 * w, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_store_ps(d + 6 * w, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_store_ps(d + 7 * w, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* B's kc x nc block (element (k, j) at b[k*brs + j*bcs]) -> panels
 * [nc/w][kc][w] (w = the kernel's NR: 16 or 32), the last one zero padded.
 * Whole groups of 8 columns go by vectors (a partial last panel too), the
 * rest element by element. */
AVX2 static void pack_b(const float *b, long brs, long bcs, long kc, long nc,
                        float *dst, long w)
{
    for (long j = 0; j < nc; j += w, dst += kc * w) {
        long nr = nc - j < w ? nc - j : w;
        long nv = bcs == 1 || brs == 1 ? nr / 8 * 8 : 0; /* vector columns */
        const float *s = b + j * bcs;
        long k = 0; /* rows [0, k) of columns [0, nv) packed by a vector path */
        if (bcs == 1) {
            for (; k < kc; k++)
                for (long q = 0; q < nv; q += 8)
                    _mm256_store_ps(dst + k * w + q, _mm256_loadu_ps(s + k * brs + q));
        } else if (brs == 1) { /* B's columns are rows in memory */
            /* 8 columns (8 lines a k step, of one cache set when bcs is a
             * multiple of 1 KB) at a time, down all of kc: the lines stay
             * in L1 until their second half is read at k + 8 */
            long k8 = kc / 8 * 8;
            for (long q = 0; q < nv; q += 8)
                for (long kk = 0; kk < k8; kk += 8)
                    transpose8(s + q * bcs + kk, bcs, dst + kk * w + q, w);
            k = k8;
        }
        for (long r = 0; r < kc; r++) { /* the rest, element by element */
            for (long q = r < k ? nv : 0; q < nr; q++)
                dst[r * w + q] = s[q * bcs + r * brs];
            for (long q = nr; q < w; q++) /* the padding */
                dst[r * w + q] = 0.0f;
        }
    }
}

/* A's mc x kc block (element (i, k) at a[i*ars + k*acs]) -> panels
 * [mc/h][kc][h] (h = the kernel's MR: 6 or 8), the last one zero padded */
static void pack_a(const float *a, long ars, long acs, long mc, long kc,
                   float *dst, long h)
{
    for (long i = 0; i < mc; i += h, dst += kc * h) {
        long mr = mc - i < h ? mc - i : h;
        const float *s = a + i * ars;
        for (long k = 0; k < kc; k++)
            for (long r = 0; r < h; r++)
                dst[k * h + r] = r < mr ? s[r * ars + k * acs] : 0.0f;
    }
}

/* per-thread packing buffers, freed with the thread */
typedef struct {
    float *b, *a;
} bufs_t;

static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;
static bool bufs_ok;

static void bufs_free(void *p)
{
    bufs_t *t = p;
    free(t->b);
    free(t->a);
    free(t);
}

static void bufs_init(void)
{
    bufs_ok = pthread_key_create(&bufs_key, bufs_free) == 0;
}

static bufs_t *bufs(void)
{
    pthread_once(&bufs_once, bufs_init);
    if (!bufs_ok)
        return NULL;
    bufs_t *t = pthread_getspecific(bufs_key);
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->b = aligned_alloc(64, sizeof(float) * KC * (NC + NRMAX));
    t->a = aligned_alloc(64, sizeof(float) * KC * (MC + MR512));
    if (!t->b || !t->a || pthread_setspecific(bufs_key, t) != 0) {
        bufs_free(t);
        return NULL;
    }
    return t;
}

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static bool cpu_ok, cpu_512;

static void cpu_init(void)
{
    const char *e = getenv("SYMTRACE_SGEMM");
    __builtin_cpu_init();
    cpu_ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             !(e && strcmp(e, "blas") == 0);
    cpu_512 = cpu_ok && __builtin_cpu_supports("avx512f") &&
              !(e && strcmp(e, "avx2") == 0);
}

bool st_llvm_sgemm_wide(void)
{
    pthread_once(&cpu_once, cpu_init);
    return cpu_512;
}

bool st_llvm_sgemm(int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t ars, int64_t acs, const float *B, int64_t brs,
                   int64_t bcs, float *C, int64_t ldc, bool beta1)
{
    pthread_once(&cpu_once, cpu_init);
    bufs_t *t = cpu_ok ? bufs() : NULL;
    if (!t)
        return false;
    if (K <= 0) { /* an empty sum: C = 0, or C unchanged */
        for (int64_t i = 0; i < M && !beta1; i++)
            memset(C + i * ldc, 0, sizeof(float) * (size_t)(N > 0 ? N : 0));
        return true;
    }
    bool w512 = cpu_512;
    if (w512 && brs == 1 && bcs != 1 && acs == 1 && M > 0 && M <= INB_M && N > M &&
        K >= 8 * M) {
        /* A row-major, B transposed (a weight gradient: dY [M, K] times
         * columns^T), few rows, a long K: B would be packed (transposed)
         * for M rows only; C^T = B^T A^T packs A^T instead, the smaller,
         * and reads B^T's rows in place, at the price of C's M x N moved
         * through a transposed buffer (so K long against M). Same fma
         * chains, so the same bits. */
        float *T = malloc(sizeof(float) * (size_t)(N * M));
        if (T) {
            if (beta1)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++)
                        T[j * M + i] = C[i * ldc + j];
            bool ok = st_llvm_sgemm(N, M, K, B, bcs, 1, A, 1, ars, T, M, beta1);
            if (ok)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++)
                        C[i * ldc + j] = T[j * M + i];
            free(T);
            return ok;
        }
    }
    /* A column-major (rows unit-stride) and K long: each kernel call would
     * touch kc lines of A for 6 floats each */
    bool packa = ars == 1 && acs != 1 && K > 128;
    int64_t mrw = w512 ? MR512 : MR, nrw = w512 ? NR512 : NR;
    /* B row-major and few row blocks: the kernel reads B in place (packing
     * it cost about as much as the products of the ResNet step's
     * convolutions, M = 16..64 output channels, did) */
    bool inb = w512 && bcs == 1 && M <= INB_M;
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            bool b1 = beta1 || pc > 0;
            if (!inb)
                pack_b(B + pc * brs + jc * bcs, brs, bcs, kc, nc, t->b, nrw);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                const float *a = A + ic * ars + pc * acs;
                int64_t rs = ars, ks = acs, step = mrw * ars; /* a panel */
                if (packa) {
                    pack_a(a, ars, acs, mc, kc, t->a, mrw);
                    a = t->a;
                    rs = 1;
                    ks = mrw;
                    step = mrw * kc;
                }
                for (int64_t ir = 0; ir < mc; ir += mrw) {
                    int mr = mc - ir < mrw ? (int)(mc - ir) : (int)mrw;
                    const float *ai = a + ir / mrw * step;
                    for (int64_t jr = 0; jr < nc; jr += nrw) {
                        int nr = nc - jr < nrw ? (int)(nc - jr) : (int)nrw;
                        float *ci = C + (ic + ir) * ldc + jc + jr;
                        if (inb)
                            kernel512(kc, ai, rs, ks, B + pc * brs + jc + jr, brs, ci, ldc,
                                      b1, mr, nr);
                        else if (w512)
                            kernel512(kc, ai, rs, ks, t->b + jr * kc, NR512, ci, ldc, b1,
                                      mr, nr);
                        else
                            kernel(kc, ai, rs, ks, t->b + jr * kc, ci, ldc, b1, mr, nr);
                    }
                }
            }
        }
    }
    return true;
}

#else /* not x86-64 with GCC or clang: OpenBLAS or loops serve */

bool st_llvm_sgemm(int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t ars, int64_t acs, const float *B, int64_t brs,
                   int64_t bcs, float *C, int64_t ldc, bool beta1)
{
    (void)M; (void)N; (void)K; (void)A; (void)ars; (void)acs; (void)B;
    (void)brs; (void)bcs; (void)C; (void)ldc; (void)beta1;
    return false;
}

bool st_llvm_sgemm_wide(void)
{
    return false;
}

#endif
