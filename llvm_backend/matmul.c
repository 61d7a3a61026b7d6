/* matmul.c - the MATMUL kernel driver of the LLVM backend. The product
 * goes to OpenBLAS (cblas_sgemm / cblas_dgemm, transposes and leading
 * dimensions taken from the strides) when the build found it, else to C
 * loops over packed operands; it is written straight into the output when
 * the kernel has no epilogue and the layouts allow, else into a contiguous
 * [batch, M, N] buffer of the accumulation type that the generated
 * epilogue function reads (st_kernel.h: REDUCED = the product). Owns:
 * st_llvm_matmul, st_llvm_have_blas. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

#ifdef ST_HAVE_OPENBLAS
#include <cblas.h>
#endif

bool st_llvm_have_blas(void)
{
#ifdef ST_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

static inline bool isf(st_dtype t)
{
    return t == ST_FLOAT16 || t == ST_BFLOAT16 || t == ST_FLOAT32 ||
           t == ST_FLOAT64;
}

static inline double read_f(const char *p, st_dtype t)
{
    switch (t) {
    case ST_FLOAT32: return *(const float *)p;
    case ST_FLOAT64: return *(const double *)p;
    case ST_FLOAT16: return st_half_to_float(*(const uint16_t *)p);
    case ST_BFLOAT16: return st_bf16_to_float(*(const uint16_t *)p);
    case ST_BOOL: return *(const uint8_t *)p != 0;
    case ST_INT32: return *(const int32_t *)p;
    case ST_INT64: return (double)*(const int64_t *)p;
    default: return 0;
    }
}

static inline int64_t read_i(const char *p, st_dtype t)
{
    switch (t) {
    case ST_BOOL: return *(const uint8_t *)p != 0;
    case ST_INT32: return *(const int32_t *)p;
    case ST_INT64: return *(const int64_t *)p;
    default: {
        double x = read_f(p, t);
        if (x >= -9223372036854775808.0 && x < 9223372036854775808.0)
            return (int64_t)x;
        return INT64_MIN;
    }
    }
}

/* [rows x cols] at base with strides (rs, cs) -> contiguous acc array */
static void pack(const char *base, st_dtype t, int64_t rows, int64_t cols,
                 int64_t rs, int64_t cs, st_dtype acc, void *dst)
{
    size_t isz = st_dtype_size(t);
    for (int64_t r = 0; r < rows; r++) {
        const char *row = base + (ptrdiff_t)isz * r * rs;
        if (acc == ST_FLOAT32) {
            float *d = (float *)dst + r * cols;
            if (t == ST_FLOAT32 && cs == 1)
                memcpy(d, row, (size_t)cols * sizeof(float));
            else
                for (int64_t c = 0; c < cols; c++)
                    d[c] = (float)read_f(row + (ptrdiff_t)isz * c * cs, t);
        } else if (acc == ST_FLOAT64) {
            double *d = (double *)dst + r * cols;
            for (int64_t c = 0; c < cols; c++)
                d[c] = read_f(row + (ptrdiff_t)isz * c * cs, t);
        } else {
            int64_t *d = (int64_t *)dst + r * cols;
            for (int64_t c = 0; c < cols; c++)
                d[c] = read_i(row + (ptrdiff_t)isz * c * cs, t);
        }
    }
}

/* C loops (no BLAS, or integers): C[MxN] = A[MxK] B[KxN], contiguous. */
#define MM_LOOP(T, UT)                                                      \
    for (int64_t m = 0; m < M; m++) {                                       \
        UT *restrict c = (UT *)((T *)C + m * N);                            \
        for (int64_t n = 0; n < N; n++)                                     \
            c[n] = 0;                                                       \
        for (int64_t kk = 0; kk < K; kk++) {                                \
            UT av = (UT)((const T *)A)[m * K + kk];                         \
            const T *restrict bb = (const T *)B + kk * N;                   \
            for (int64_t n = 0; n < N; n++)                                 \
                c[n] += av * (UT)bb[n];                                     \
        }                                                                   \
    }

static void mm_loops(st_dtype acc, const void *A, const void *B, void *C,
                     int64_t M, int64_t N, int64_t K)
{
    if (acc == ST_FLOAT32) {
        MM_LOOP(float, float)
    } else if (acc == ST_FLOAT64) {
        MM_LOOP(double, double)
    } else {
        MM_LOOP(int64_t, uint64_t)
    }
}

/* Is [rows x cols] with strides (rs, cs) a BLAS operand? */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                        bool *trans, int64_t *ld)
{
    int64_t r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;
    if (rows > INT_MAX / 2 || cols > INT_MAX / 2)
        return false;
    if ((cs == 1 || cols == 1) && (rows == 1 || (rs >= c1 && rs < INT_MAX))) {
        *trans = false;
        *ld = rows == 1 ? c1 : rs;
        return true;
    }
    if ((rs == 1 || rows == 1) && (cols == 1 || (cs >= r1 && cs < INT_MAX))) {
        *trans = true;
        *ld = cols == 1 ? r1 : cs;
        return true;
    }
    return false;
}

#ifdef ST_HAVE_OPENBLAS
static void gemm(st_dtype acc, bool ta, bool tb, int64_t M, int64_t N,
                 int64_t K, const void *A, int64_t lda, const void *B,
                 int64_t ldb, void *C, int64_t ldc)
{
    enum CBLAS_TRANSPOSE xa = ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE xb = tb ? CblasTrans : CblasNoTrans;
    if (acc == ST_FLOAT32)
        cblas_sgemm(CblasRowMajor, xa, xb, (int)M, (int)N, (int)K, 1.0f, A,
                    (int)lda, B, (int)ldb, 0.0f, C, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, xa, xb, (int)M, (int)N, (int)K, 1.0, A,
                    (int)lda, B, (int)ldb, 0.0, C, (int)ldc);
}
#endif

typedef struct {
    st_llvm_fn epi;
    const st_kargs *a;
    const void *prod;
    st_llvm_err *err;
} epi_ctx;

static int32_t epi_task(void *ctx, int64_t lo, int64_t hi)
{
    epi_ctx *e = ctx;
    return e->epi(e->a, lo, hi, e->err, e->prod);
}

static bool has_scatter(const st_kernel *k)
{
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].indexed || k->stores[s].accumulate)
            return true;
    return false;
}

int32_t st_llvm_matmul(const st_kernel *k, const st_kargs *a, st_llvm_fn epi,
                       st_llvm_err *err, bool *parallel)
{
    int nb = k->rank - 3;
    int64_t M = a->shape[nb], N = a->shape[nb + 1], K = a->shape[nb + 2];
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++)
        nbatch *= a->shape[d];
    if (nbatch == 0 || M == 0 || N == 0)
        return 0;
    st_dtype acc = st_llvm_mm_acc(k);
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype, tc = k->bufs[2].dtype;
    const st_karg_buf *A = &a->bufs[0], *B = &a->bufs[1], *C = &a->bufs[2];
    size_t sa = st_dtype_size(ta), sb = st_dtype_size(tb), sc = st_dtype_size(tc);
    bool blas = st_llvm_have_blas() && acc != ST_INT64 && K > 0;
    bool tra = false, trb = false, trc = false;
    int64_t lda = 0, ldb = 0, ldc = 0;
    bool a_ok = blas && ta == acc &&
                blas_layout(M, K, A->strides[nb], A->strides[nb + 2], &tra, &lda);
    bool b_ok = blas && tb == acc &&
                blas_layout(K, N, B->strides[nb + 2], B->strides[nb + 1], &trb, &ldb);
    bool direct = a_ok && b_ok && k->nstores == 0 && tc == acc &&
                  blas_layout(M, N, C->strides[nb], C->strides[nb + 1], &trc, &ldc) &&
                  !trc;
    size_t esz = acc == ST_FLOAT32 ? 4 : 8;
    char *prod = NULL, *pa = NULL, *pb = NULL;
    if (!direct) {
        prod = malloc(esz * (size_t)(nbatch * M * N));
        if (!prod)
            goto oom;
        if (K == 0)
            memset(prod, 0, esz * (size_t)(nbatch * M * N));
    }
    if (!a_ok && K > 0 && !(pa = malloc(esz * (size_t)(M * K))))
        goto oom;
    if (!b_ok && K > 0 && !(pb = malloc(esz * (size_t)(K * N))))
        goto oom;
    int64_t p[ST_MAX_DIMS] = {0};
    for (int64_t bi = 0; bi < nbatch && K > 0; bi++) {
        int64_t oa = 0, ob = 0, oc = 0;
        for (int d = 0; d < nb; d++) {
            oa += p[d] * A->strides[d];
            ob += p[d] * B->strides[d];
            oc += p[d] * C->strides[d];
        }
        const char *ab = A->data + (ptrdiff_t)sa * oa;
        const char *bbp = B->data + (ptrdiff_t)sb * ob;
        const void *opa = ab, *opb = bbp;
        bool xa = tra, xb = trb;
        int64_t la = lda, lb = ldb;
        if (!a_ok) {
            pack(ab, ta, M, K, A->strides[nb], A->strides[nb + 2], acc, pa);
            opa = pa;
            xa = false;
            la = K;
        }
        if (!b_ok) {
            pack(bbp, tb, K, N, B->strides[nb + 2], B->strides[nb + 1], acc, pb);
            opb = pb;
            xb = false;
            lb = N;
        }
        void *out = direct ? (void *)(C->data + (ptrdiff_t)sc * oc)
                           : (void *)(prod + esz * (size_t)(bi * M * N));
#ifdef ST_HAVE_OPENBLAS
        if (blas)
            gemm(acc, xa, xb, M, N, K, opa, la, opb, lb, out,
                 direct ? ldc : N);
        else
#endif
            mm_loops(acc, opa, opb, out, M, N, K);
        (void)xa;
        (void)xb;
        (void)la;
        (void)lb;
        for (int d = nb - 1; d >= 0; d--) {
            if (++p[d] < a->shape[d])
                break;
            p[d] = 0;
        }
    }
    free(pa);
    free(pb);
    if (direct)
        return 0;
    epi_ctx ec = {epi, a, prod, err};
    int64_t total = nbatch * M * N;
    int32_t r = st_llvm_pool_run(epi_task, &ec, total,
                                 has_scatter(k) ? total : 32768, parallel);
    free(prod);
    return r;
oom:
    free(prod);
    free(pa);
    free(pb);
    st_err(ST_ERR_MEMORY, "llvm: out of memory in matmul %lldx%lldx%lld",
           (long long)M, (long long)N, (long long)K);
    return -1;
}
