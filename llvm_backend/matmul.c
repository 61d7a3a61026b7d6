/* matmul.c - the MATMUL kernel driver of the LLVM backend. The product
 * goes to OpenBLAS (cblas_sgemm / cblas_dgemm, transposes and leading
 * dimensions taken from the strides; small float32 products to sgemm.c's
 * own kernel, on CPUs with AVX2/FMA) when the build found it, else to C
 * loops over packed operands; it is written straight into the output when
 * the kernel has no epilogue and the layouts allow, else into a contiguous
 * [batch, M, N] buffer of the accumulation type that the generated
 * epilogue function reads (st_kernel.h: REDUCED = the product). Owns:
 * st_llvm_matmul, st_llvm_have_blas. */
#include <limits.h>
#include <pthread.h>
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
    case ST_UINT8: return *(const uint8_t *)p;
    case ST_INT8: return *(const int8_t *)p;
    case ST_INT16: return *(const int16_t *)p;
    case ST_INT32: return *(const int32_t *)p;
    case ST_INT64: return (double)*(const int64_t *)p;
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
    default: {
        double x = read_f(p, t);
        if (x >= -9223372036854775808.0 && x < 9223372036854775808.0)
            return (int64_t)x;
        return INT64_MIN;
    }
    }
}

static inline float bf16_bits(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16; /* bfloat16 is float32's upper half */
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bfloat16 -> float32 packing, the autocast products' operands: a shift
 * in loops the compiler vectorizes, over row-major sources, or over
 * column-major ones (B of x @ w.T) into a transposed buffer (*tr; only
 * when tr is given: BLAS takes it transposed, the C loops do not).
 * st_bf16_to_float per element made a bfloat16 product 2-3.5x slower
 * than its float32 twin. false: not one of these layouts. */
static bool pack_bf16(const uint16_t *src, int64_t rows, int64_t cols,
                      int64_t rs, int64_t cs, float *restrict d, bool *tr)
{
    if (cs == 1 || (rs == 1 && tr)) {
        bool t = cs != 1; /* lines are columns: d is [cols][rows] */
        int64_t n = t ? cols : rows, len = t ? rows : cols, step = t ? cs : rs;
        for (int64_t i = 0; i < n; i++) {
            const uint16_t *restrict line = src + i * step;
            float *restrict o = d + i * len;
            for (int64_t j = 0; j < len; j++)
                o[j] = bf16_bits(line[j]);
        }
        if (tr)
            *tr = t;
        return true;
    }
    return false;
}

/* [rows x cols] at base with strides (rs, cs) -> a contiguous acc array,
 * row-major; or column-major with *tr set, when tr is given and that
 * reads the source in order (see pack_bf16). */
static void pack(const char *base, st_dtype t, int64_t rows, int64_t cols,
                 int64_t rs, int64_t cs, st_dtype acc, void *dst, bool *tr)
{
    size_t isz = st_dtype_size(t);
    if (tr)
        *tr = false;
    if (t == ST_BFLOAT16 && acc == ST_FLOAT32 &&
        pack_bf16((const uint16_t *)base, rows, cols, rs, cs, dst, tr))
        return;
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

/* C loops (no BLAS, or integers): C[MxN] = A[MxK] B[KxN], row-major with
 * leading dimensions lda, ldb, ldc. */
#define MM_LOOP(T, UT)                                                      \
    for (int64_t m = 0; m < M; m++) {                                       \
        UT *restrict c = (UT *)((T *)C + m * ldc);                          \
        for (int64_t n = 0; n < N; n++)                                     \
            c[n] = 0;                                                       \
        for (int64_t kk = 0; kk < K; kk++) {                                \
            UT av = (UT)((const T *)A)[m * lda + kk];                       \
            const T *restrict bb = (const T *)B + kk * ldb;                 \
            for (int64_t n = 0; n < N; n++)                                 \
                c[n] += av * (UT)bb[n];                                     \
        }                                                                   \
    }

static void mm_loops_ld(st_dtype acc, const void *A, int64_t lda,
                        const void *B, int64_t ldb, void *C, int64_t ldc,
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
                 int64_t ldb, void *C, int64_t ldc, bool beta1)
{
    /* small float32 products to sgemm.c: in the BERT mini step (paired
     * steps, own kernel against OpenBLAS) the attention products (128 x
     * 128 x 64 and the like, a batch of 32) took 12.9 ms against 15.0; the
     * larger ones (Linear layers, the decoder) were as fast or 1-2 ms
     * slower in OpenBLAS's hands, so they stay there. With AVX-512 sgemm.c
     * takes every size: its 8 x 32 kernel ran at 160-257 GFLOPS a core on
     * those shapes against OpenBLAS's (AVX2) 58-130 */
    if (acc == ST_FLOAT32 &&
        ((double)M * (double)N * (double)K <= 4194304.0 || st_llvm_sgemm_wide()) &&
        st_llvm_sgemm(M, N, K, A, ta ? 1 : lda, ta ? lda : 1, B, tb ? 1 : ldb,
                      tb ? ldb : 1, C, ldc, beta1))
        return;
    enum CBLAS_TRANSPOSE xa = ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE xb = tb ? CblasTrans : CblasNoTrans;
    if (acc == ST_FLOAT32)
        cblas_sgemm(CblasRowMajor, xa, xb, (int)M, (int)N, (int)K, 1.0f, A,
                    (int)lda, B, (int)ldb, beta1 ? 1.0f : 0.0f, C, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, xa, xb, (int)M, (int)N, (int)K, 1.0, A,
                    (int)lda, B, (int)ldb, beta1 ? 1.0 : 0.0, C, (int)ldc);
}
#endif

/* ---- the product's scratch buffer ----
 * One buffer is kept between calls (grown as needed) so that a matmul with
 * an epilogue does not map and fault in fresh pages every launch; a caller
 * that finds it taken (another thread's matmul) allocates its own. */
static pthread_mutex_t scratch_mu = PTHREAD_MUTEX_INITIALIZER;
static void *scratch_buf;
static size_t scratch_len;

static void *scratch_take(size_t n, size_t *got)
{
    void *p = NULL;
    size_t len = 0;
    pthread_mutex_lock(&scratch_mu);
    p = scratch_buf;
    len = scratch_len;
    scratch_buf = NULL;
    scratch_len = 0;
    pthread_mutex_unlock(&scratch_mu);
    if (p && len >= n) {
        *got = len;
        return p;
    }
    free(p);
    *got = n;
    return malloc(n ? n : 1);
}

static void scratch_give(void *p, size_t len)
{
    pthread_mutex_lock(&scratch_mu);
    if (!scratch_buf || scratch_len < len) {
        void *old = scratch_buf;
        scratch_buf = p;
        scratch_len = len;
        p = old;
    }
    pthread_mutex_unlock(&scratch_mu);
    free(p);
}

/* ---- the parallel driver ----
 * OpenBLAS runs single-threaded (its own threads would spin beside the
 * pool's on the same cores); the pool parallelizes instead: over the
 * batch, else over row blocks of M (each task then runs the epilogue of
 * its rows while they are in cache), else over column blocks of N. */
typedef struct {
    const st_kernel *k;
    const st_kargs *a;
    st_llvm_fn epi;
    st_llvm_err *err;
    st_dtype acc;
    int nb;
    int64_t M, N, K;
    bool blas, a_ok, b_ok, direct, tra, trb, split_n, epi_in_task;
    int addx;             /* >= 0: C = X + A B by a gemm with beta 1 (X: buffer addx) */
    int cbuf;             /* the buffer the gemm writes when direct: 2, or the
                             add-epilogue's output */
    int64_t lda, ldb, ldc;
    char *prod;           /* [batch, M, N] product when !direct */
    const char *pa, *pb;  /* packed operands of a single product, or NULL */
    bool pa_tr, pb_tr;    /* ... stored transposed (pack's tr) */
    int nparts;           /* K split: partial products, one a task */
    char *parts;          /* [nparts, M, N] */
} mm_ctx;

/* The add-epilogue (see addx): the X operand's buffer index, or -1. The
 * kernel's one store must be add(load X, product) in the accumulation
 * type, X a plain strided load. */
static int add_epilogue(const st_kernel *k, st_dtype acc)
{
    if (k->nstores != 1 || k->stores[0].indexed || k->stores[0].accumulate)
        return -1;
    const st_knode *s = &k->nodes[k->stores[0].node];
    if (s->kind != ST_KN_BINARY || s->op != ST_OP_ADD || s->dtype != acc)
        return -1;
    const st_knode *x = &k->nodes[s->a], *y = &k->nodes[s->b];
    if (x->kind == ST_KN_REDUCED) {
        const st_knode *t = x;
        x = y;
        y = t;
    }
    if (y->kind != ST_KN_REDUCED || x->kind != ST_KN_LOAD || x->idx_dim >= 0 ||
        x->dtype != acc || k->bufs[x->buf].dtype != acc ||
        k->bufs[k->stores[0].buf].dtype != acc || k->bufs[x->buf].is_out)
        return -1;
    return x->buf;
}

/* out[m0:m1, n0:n1] (leading dim ldo, already at (m0, n0)) = X's block */
static void fill_x(const mm_ctx *c, int64_t ox, int64_t m0, int64_t m1,
                   int64_t n0, int64_t n1, char *out, int64_t ldo)
{
    const st_karg_buf *X = &c->a->bufs[c->addx];
    int64_t rs = X->strides[c->nb], cs = X->strides[c->nb + 1];
    size_t esz = c->acc == ST_FLOAT32 ? 4 : 8;
    for (int64_t m = m0; m < m1; m++) {
        const char *src = X->data + (ptrdiff_t)esz * (ox + m * rs + n0 * cs);
        char *dst = out + (ptrdiff_t)esz * ((m - m0) * ldo);
        int64_t n = n1 - n0;
        if (src == dst)
            continue;
        if (cs == 1) {
            memmove(dst, src, esz * (size_t)n);
        } else if (esz == 4) {
            for (int64_t j = 0; j < n; j++)
                ((float *)dst)[j] = *(const float *)(src + 4 * (ptrdiff_t)(j * cs));
        } else {
            for (int64_t j = 0; j < n; j++)
                ((double *)dst)[j] = *(const double *)(src + 8 * (ptrdiff_t)(j * cs));
        }
    }
}

/* Do X's and C's memory overlap (other than as the very same layout)? */
static bool x_overlaps_c(const st_kargs *a, int nb, int rank, int xb,
                         int cb, size_t esz)
{
    const st_karg_buf *X = &a->bufs[xb], *C = &a->bufs[cb];
    int64_t xlo = 0, xhi = 0, clo = 0, chi = 0;
    bool same = X->data == C->data;
    for (int d = 0; d < rank; d++) {
        if (d == nb + 2)
            continue; /* K: neither moves */
        int64_t e = a->shape[d] - 1;
        int64_t xs = X->strides[d] * e, cs = C->strides[d] * e;
        if (xs < 0) xlo += xs; else xhi += xs;
        if (cs < 0) clo += cs; else chi += cs;
        same &= X->strides[d] == C->strides[d];
    }
    if (same)
        return false;
    ptrdiff_t e = (ptrdiff_t)esz;
    const char *x0 = X->data + e * xlo, *x1 = X->data + e * (xhi + 1);
    const char *c0 = C->data + e * clo, *c1 = C->data + e * (chi + 1);
    return x0 < c1 && c0 < x1;
}

/* C[m0:m1, n0:n1] of batch bi. */
static int32_t mm_block(mm_ctx *c, int64_t bi, int64_t m0, int64_t m1,
                        int64_t n0, int64_t n1)
{
    const st_kernel *k = c->k;
    const st_kargs *a = c->a;
    int nb = c->nb;
    const st_karg_buf *A = &a->bufs[0], *B = &a->bufs[1], *C = &a->bufs[c->cbuf];
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype, tc = k->bufs[c->cbuf].dtype;
    size_t sa = st_dtype_size(ta), sb = st_dtype_size(tb), sc = st_dtype_size(tc);
    size_t esz = c->acc == ST_FLOAT32 ? 4 : 8;
    int64_t M = c->M, N = c->N, K = c->K;
    int64_t oa = 0, ob = 0, oc = 0, ox = 0, q = bi;
    for (int d = nb - 1; d >= 0; d--) {
        int64_t pd = q % a->shape[d];
        q /= a->shape[d];
        oa += pd * A->strides[d];
        ob += pd * B->strides[d];
        oc += pd * C->strides[d];
        if (c->addx >= 0)
            ox += pd * a->bufs[c->addx].strides[d];
    }
    const char *ab = A->data + (ptrdiff_t)sa * oa;
    const char *bbp = B->data + (ptrdiff_t)sb * ob;
    char *pa = NULL, *pb = NULL;
    const void *opa = ab, *opb = bbp;
    bool xa = c->tra, xb = c->trb;
    int64_t la = c->lda, lb = c->ldb;
    if (!c->a_ok && K > 0) {
        if (c->pa) {
            opa = c->pa;
            xa = c->pa_tr;
        } else {
            if (!(pa = malloc(esz * (size_t)(M * K))))
                return -1;
            pack(ab, ta, M, K, A->strides[nb], A->strides[nb + 2], c->acc, pa,
                 c->blas ? &xa : NULL);
            opa = pa;
            xa = c->blas && xa;
        }
        la = xa ? M : K;
    }
    if (!c->b_ok && K > 0) {
        if (c->pb) {
            opb = c->pb;
            xb = c->pb_tr;
        } else {
            if (!(pb = malloc(esz * (size_t)(K * N)))) {
                free(pa);
                return -1;
            }
            pack(bbp, tb, K, N, B->strides[nb + 2], B->strides[nb + 1], c->acc, pb,
                 c->blas ? &xb : NULL);
            opb = pb;
            xb = c->blas && xb;
        }
        lb = xb ? K : N;
    }
    /* the block's operands: rows m0.. of A, columns n0.. of B */
    size_t ea = c->a_ok ? sa : esz, eb = c->b_ok ? sb : esz;
    opa = (const char *)opa + (ptrdiff_t)ea * (xa ? m0 : m0 * la);
    opb = (const char *)opb + (ptrdiff_t)eb * (xb ? n0 * lb : n0);
    int64_t ldo = c->direct ? c->ldc : N;
    char *out = c->direct ? (char *)C->data + (ptrdiff_t)sc * oc
                          : c->prod + esz * (size_t)(bi * M * N);
    out += (ptrdiff_t)(c->direct ? sc : esz) * (m0 * ldo + n0);
    if (c->addx >= 0)
        fill_x(c, ox, m0, m1, n0, n1, out, ldo);
    if (K > 0) {
#ifdef ST_HAVE_OPENBLAS
        if (c->blas)
            gemm(c->acc, xa, xb, m1 - m0, n1 - n0, K, opa, la, opb, lb, out, ldo,
                 c->addx >= 0);
        else
#endif
        {
            /* C loops on contiguous operands (packed when not BLAS) */
            mm_loops_ld(c->acc, opa, la, opb, lb, out, ldo, m1 - m0, n1 - n0, K);
        }
    } else if (!c->direct) {
        for (int64_t m = m0; m < m1; m++)
            memset(c->prod + esz * (size_t)((bi * M + m) * N + n0), 0,
                   esz * (size_t)(n1 - n0));
    }
    free(pa);
    free(pb);
    if (c->epi_in_task) {
        int64_t lo = (bi * M + m0) * N, hi = (bi * M + m1) * N;
        return c->epi(a, lo, hi, c->err, c->prod);
    }
    return 0;
}

static int32_t batch_task(void *ctx, int64_t lo, int64_t hi)
{
    mm_ctx *c = ctx;
    for (int64_t bi = lo; bi < hi; bi++) {
        int32_t r = mm_block(c, bi, 0, c->M, 0, c->N);
        if (r)
            return r;
    }
    return 0;
}

static int32_t rows_task(void *ctx, int64_t lo, int64_t hi)
{
    mm_ctx *c = ctx;
    return c->split_n ? mm_block(c, 0, 0, c->M, lo, hi)
                      : mm_block(c, 0, lo, hi, 0, c->N);
}

/* K split (a long reduction, a small output: the MLM decoder's input
 * gradient): task i multiplies the i-th K range into partial product i;
 * splitting M or N instead would have every task pack all of the long
 * operand. */
static int32_t kpart_task(void *ctx, int64_t lo, int64_t hi)
{
#ifdef ST_HAVE_OPENBLAS
    mm_ctx *c = ctx;
    const st_kargs *a = c->a;
    size_t esz = c->acc == ST_FLOAT32 ? 4 : 8;
    size_t sa = st_dtype_size(c->k->bufs[0].dtype), sb = st_dtype_size(c->k->bufs[1].dtype);
    for (int64_t i = lo; i < hi; i++) {
        int64_t k0 = c->K * i / c->nparts, k1 = c->K * (i + 1) / c->nparts;
        const char *pa = c->pa ? c->pa : a->bufs[0].data;
        const char *pb = c->pb ? c->pb : a->bufs[1].data;
        bool xa = c->pa ? c->pa_tr : c->tra, xb = c->pb ? c->pb_tr : c->trb;
        int64_t la = c->pa ? (c->pa_tr ? c->M : c->K) : c->lda;
        int64_t lb = c->pb ? (c->pb_tr ? c->K : c->N) : c->ldb;
        size_t ea = c->pa ? esz : sa, eb = c->pb ? esz : sb;
        pa += (ptrdiff_t)ea * (xa ? k0 * la : k0);
        pb += (ptrdiff_t)eb * (xb ? k0 : k0 * lb);
        char *out = c->parts + esz * (size_t)(i * c->M * c->N);
        if (k1 > k0)
            gemm(c->acc, xa, xb, c->M, c->N, k1 - k0, pa, la, pb, lb, out, c->N, false);
        else
            memset(out, 0, esz * (size_t)(c->M * c->N));
    }
    return 0;
#else
    (void)ctx;
    (void)lo;
    (void)hi;
    return -1;
#endif
}

/* the partial products summed into the product buffer or, direct, C */
static void kpart_sum(mm_ctx *c)
{
    int64_t M = c->M, N = c->N;
    const st_karg_buf *C = &c->a->bufs[2];
    for (int64_t m = 0; m < M; m++) {
        if (c->acc == ST_FLOAT32) {
            float *d = c->direct ? (float *)C->data + m * c->ldc : (float *)c->prod + m * N;
            const float *p = (const float *)c->parts + m * N;
            for (int64_t n = 0; n < N; n++) {
                float v = p[n];
                for (int i = 1; i < c->nparts; i++)
                    v += p[(size_t)i * M * N + n];
                d[n] = v;
            }
        } else {
            double *d = c->direct ? (double *)C->data + m * c->ldc : (double *)c->prod + m * N;
            const double *p = (const double *)c->parts + m * N;
            for (int64_t n = 0; n < N; n++) {
                double v = p[n];
                for (int i = 1; i < c->nparts; i++)
                    v += p[(size_t)i * M * N + n];
                d[n] = v;
            }
        }
    }
}

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

/* ---- batch folding ----
 * A batched product whose B is one matrix for every batch (a Linear
 * layer's weight applied to [batch, seq, in]) is a single product of
 * nbatch*M rows when the rows of A (and of whatever the gemm writes) run
 * on across batches with one stride: row bi*M + m at (bi*M + m) * rs.
 * One gemm a thread then packs B once, not once a batch, and works on
 * row blocks of nbatch*M / threads instead of M. */
static bool rows_run_on(const st_kargs *a, int b, int nb, int64_t M)
{
    int64_t want = M * a->bufs[b].strides[nb];
    for (int d = nb - 1; d >= 0; d--) {
        if (a->shape[d] == 1)
            continue;
        if (a->bufs[b].strides[d] != want)
            return false;
        want *= a->shape[d];
    }
    return true;
}

static bool batch_shared(const st_kargs *a, int b, int nb)
{
    for (int d = 0; d < nb; d++)
        if (a->shape[d] != 1 && a->bufs[b].strides[d] != 0)
            return false;
    return true;
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_init(void)
{
#ifdef ST_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
}

int32_t st_llvm_matmul(const st_kernel *k, const st_kargs *a, st_llvm_fn epi,
                       st_llvm_err *err, bool *parallel)
{
    if (parallel)
        *parallel = false;
    int nb = k->rank - 3;
    int64_t M = a->shape[nb], N = a->shape[nb + 1], K = a->shape[nb + 2];
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++)
        nbatch *= a->shape[d];
    if (nbatch == 0 || M == 0 || N == 0)
        return 0;
    pthread_once(&blas_once, blas_init);
    mm_ctx c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.a = a;
    c.epi = epi;
    c.err = err;
    c.nb = nb;
    c.M = M;
    c.N = N;
    c.K = K;
    c.acc = st_llvm_mm_acc(k);
    int64_t Mb = M; /* rows a batch */
    bool fold = nbatch > 1 && batch_shared(a, 1, nb) && rows_run_on(a, 0, nb, M);
    if (fold) {
        M *= nbatch;
        c.M = M;
        nbatch = 1;
    }
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype, tc = k->bufs[2].dtype;
    const st_karg_buf *A = &a->bufs[0], *B = &a->bufs[1], *C = &a->bufs[2];
    c.blas = st_llvm_have_blas() && c.acc != ST_INT64 && K > 0;
    c.a_ok = c.blas && ta == c.acc &&
             blas_layout(M, K, A->strides[nb], A->strides[nb + 2], &c.tra, &c.lda);
    c.b_ok = c.blas && tb == c.acc &&
             blas_layout(K, N, B->strides[nb + 2], B->strides[nb + 1], &c.trb, &c.ldb);
    bool trc = false;
    c.direct = c.a_ok && c.b_ok && k->nstores == 0 && tc == c.acc &&
               blas_layout(M, N, C->strides[nb], C->strides[nb + 1], &trc, &c.ldc) &&
               !trc && (!fold || rows_run_on(a, 2, nb, Mb));
    c.addx = -1;
    c.cbuf = 2;
    int xb = c.direct || !c.a_ok || !c.b_ok || K <= 0 ? -1 : add_epilogue(k, c.acc);
    int ob = xb >= 0 ? k->stores[0].buf : -1;
    if (xb >= 0 && fold && !(rows_run_on(a, xb, nb, Mb) && rows_run_on(a, ob, nb, Mb)))
        xb = -1;
    if (xb >= 0 && k->bufs[ob].dtype == c.acc &&
        blas_layout(M, N, a->bufs[ob].strides[nb], a->bufs[ob].strides[nb + 1], &trc, &c.ldc) &&
        !trc) {
        if (!x_overlaps_c(a, nb, k->rank, xb, ob, c.acc == ST_FLOAT32 ? 4 : 8)) {
            c.addx = xb;
            c.cbuf = ob;
            c.direct = true;
        }
    }
    if (!c.blas) { /* C loops want contiguous operands */
        c.a_ok = c.b_ok = false;
        c.tra = c.trb = false;
    }
    size_t esz = c.acc == ST_FLOAT32 ? 4 : 8;
    size_t plen = 0;
    char *pa = NULL, *pb = NULL;
    if (!c.direct && !(c.prod = scratch_take(esz * (size_t)(nbatch * M * N), &plen)))
        goto oom;
    bool serial_epi = has_scatter(k);
    int nt = st_llvm_pool_threads();
    double work = (double)nbatch * (double)M * (double)N * (double)(K > 0 ? K : 1);
    int32_t r = 0;
    bool par = false;
    if (nbatch > 1) {
        c.epi_in_task = !c.direct && !serial_epi;
        r = st_llvm_pool_run(batch_task, &c, nbatch,
                             work < 262144.0 ? nbatch : 1, &par);
    } else {
        /* a single product: pack a strided operand once, then blocks */
        if (!c.a_ok && K > 0) {
            if (!(pa = malloc(esz * (size_t)(M * K))))
                goto oom;
            pack(A->data, ta, M, K, A->strides[nb], A->strides[nb + 2], c.acc, pa,
                 c.blas ? &c.pa_tr : NULL);
            c.pa = pa;
        }
        if (!c.b_ok && K > 0) {
            if (!(pb = malloc(esz * (size_t)(K * N))))
                goto oom;
            pack(B->data, tb, K, N, B->strides[nb + 2], B->strides[nb + 1], c.acc, pb,
                 c.blas ? &c.pb_tr : NULL);
            c.pb = pb;
        }
        int64_t mn = M > N ? M : N;
        if (c.blas && c.addx < 0 && nt > 1 && work >= 262144.0 && K >= 2048 &&
            K >= 16 * mn && M * N <= (1 << 20)) {
            c.nparts = nt;
            c.parts = malloc(esz * (size_t)(nt * M * N));
            if (!c.parts)
                goto oom;
            r = st_llvm_pool_run(kpart_task, &c, nt, 1, &par);
            if (r == 0)
                kpart_sum(&c);
            free(c.parts);
            c.parts = NULL;
            goto blocks_done;
        }
        c.split_n = N > M;
        c.epi_in_task = !c.direct && !serial_epi && !c.split_n;
        int64_t dim = c.split_n ? N : M;
        /* one block a thread: each OpenBLAS call packs the shared operand
         * again, and two blocks a thread (once taken so that a thread the
         * OS delays holds up less) measured 1.5-4% slower on the BERT
         * shapes ([1024,256]x[256,1024], [1024,256]x[256,256], the
         * decoder's [160,256]x[256,30522]) */
        int ntd = nt > 0 ? nt : 1;
        int64_t grain = (dim + ntd - 1) / ntd;
        if (work < 262144.0 || grain < 16)
            grain = dim;
        r = st_llvm_pool_run(rows_task, &c, dim, grain, &par);
    }
blocks_done:
    if (parallel)
        *parallel = par;
    free(pa);
    free(pb);
    if (r == 0 && !c.direct && !c.epi_in_task) {
        epi_ctx ec = {epi, a, c.prod, err};
        int64_t total = nbatch * M * N;
        bool p2 = false;
        r = st_llvm_pool_run(epi_task, &ec, total, serial_epi ? total : 32768, &p2);
        if (parallel)
            *parallel = *parallel || p2;
    }
    if (c.prod)
        scratch_give(c.prod, plen);
    if (r < 0 && st_err_kind() == ST_OK)
        st_err(ST_ERR_MEMORY, "llvm: out of memory in matmul %lldx%lldx%lld",
               (long long)M, (long long)N, (long long)K);
    return r;
oom:
    if (c.prod)
        scratch_give(c.prod, plen);
    free(pa);
    free(pb);
    st_err(ST_ERR_MEMORY, "llvm: out of memory in matmul %lldx%lldx%lld",
           (long long)M, (long long)N, (long long)K);
    return -1;
}
