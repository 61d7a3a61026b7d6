/* gemm_plan.c - the host-side decision of a MATMUL launch, in plain C
 * (tested without a GPU by tests/c/test_gemm_plan.c): can cuBLAS run it
 * (dtypes, one unit stride per operand matrix, batch dims collapsing to
 * one stride per operand, outer ones looped), with which transposes,
 * leading dimensions and batch strides (row-major C = A B handed to the
 * column-major cuBLAS as C^T = B^T A^T), straight into the output or into
 * a scratch product that NAME_epi reads (its launch: launch.c).
 * Owns: st_nvrtc_gemm_plan, st_nvrtc_gemm_offsets, st_nvrtc_gemm_pointers,
 * st_nvrtc_has_epi. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "st_nvrtc.h"

/* the product's dtype: float32 (float16/bfloat16/float32 operands) or
 * float64; ST_INT64 when cuBLAS cannot take the pair (as the renderer's
 * mm_acc: any float64 among A, B, bufs[2] accumulates in double) */
static st_dtype gemm_acc(const st_kernel *k)
{
    if (k->kind != ST_K_MATMUL || k->nbufs < 3 || k->rank < 3)
        return ST_INT64;
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype, tc = k->bufs[2].dtype;
    if (ta != tb)
        return ST_INT64;
    if (ta == ST_FLOAT64)
        return ST_FLOAT64;
    if (ta != ST_FLOAT32 && ta != ST_FLOAT16 && ta != ST_BFLOAT16)
        return ST_INT64;
    return tc == ST_FLOAT64 ? ST_INT64 : ST_FLOAT32;
}

bool st_nvrtc_has_epi(const st_kernel *k)
{
    return gemm_acc(k) != ST_INT64 && k->bufs[0].unravel == 0 && k->bufs[1].unravel == 0;
}

/* [rows x cols] with strides (rs, cs), row-major view: a cuBLAS operand?
 * trans: the matrix is stored column-major (rs == 1); ld its leading
 * dimension (>= the stored inner size, >= 1). */
static bool operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                    int64_t *ld)
{
    int64_t r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;
    if (rows > INT_MAX || cols > INT_MAX)
        return false;
    if ((cs == 1 || cols == 1) && (rows == 1 || (rs >= c1 && rs <= INT_MAX))) {
        *trans = false;
        *ld = rows == 1 ? c1 : rs;
        return true;
    }
    if ((rs == 1 || rows == 1) && (cols == 1 || (cs >= r1 && cs <= INT_MAX))) {
        *trans = true;
        *ld = cols == 1 ? r1 : cs;
        return true;
    }
    return false;
}

/* The direct output's buffer, or -1: no stores (the product goes to
 * bufs[2]) or one plain store of the product itself. */
static int direct_buf(const st_kernel *k)
{
    if (k->nstores == 0)
        return 2;
    if (k->nstores != 1 || k->stores[0].indexed || k->stores[0].accumulate)
        return -1;
    int nd = k->stores[0].node;
    if (nd < 0 || nd >= k->nnodes || k->nodes[nd].kind != ST_KN_REDUCED)
        return -1;
    return k->stores[0].buf;
}

/* Collapses the batch dims: the run of adjacent non-unit dims that share
 * one stride per operand and holds the most batches forms the batched
 * call, the other dims are looped (attention's [batch, heads] over
 * permuted views does not collapse: 12 calls of 32 products, not 32 of
 * 12). st[]: the strides of our A, our B and C per dim. */
static bool collapse(st_nvrtc_gemm *p, const st_kargs *a, int nb,
                     const int64_t st[3][ST_MAX_DIMS])
{
    int64_t best = 1, bs[3] = {0, 0, 0};
    int blo = nb, bhi = -1;   /* the chosen run [blo, bhi] */
    for (int hi = nb - 1; hi >= 0; hi--) {
        if (a->shape[hi] == 1)
            continue;
        int64_t batch = 1, s[3] = {0, 0, 0};
        int lo = hi;
        for (int d = hi; d >= 0; d--) {
            int64_t n = a->shape[d];
            if (n == 1)
                continue;
            if (batch == 1) {
                for (int o = 0; o < 3; o++)
                    s[o] = st[o][d];
            } else {
                bool ok = true;
                for (int o = 0; o < 3; o++)
                    ok = ok && st[o][d] == s[o] * batch;
                if (!ok)
                    break;
            }
            if (batch > INT_MAX / n)
                break;
            batch *= n;
            lo = d;
        }
        if (batch > best) {   /* ties keep the innermost run */
            best = batch;
            blo = lo;
            bhi = hi;
            for (int o = 0; o < 3; o++)
                bs[o] = s[o];
        }
    }
    p->batch = (int)best;
    p->stride_b = bs[0];   /* our A is cuBLAS's B */
    p->stride_a = bs[1];
    p->stride_c = bs[2];
    p->nouter = 0;
    p->calls = 1;
    for (int e = 0; e < nb; e++) {
        if (a->shape[e] == 1 || (e >= blo && e <= bhi))
            continue;
        int j = p->nouter++;
        p->outer_shape[j] = a->shape[e];
        for (int o = 0; o < 3; o++)
            p->outer_stride[o][j] = st[o][e];
        p->calls *= a->shape[e];
        if (p->calls > ST_NVRTC_GEMM_MAX_CALLS)
            return false;
    }
    return true;
}

/* Whether output C of [batch..., M, N] (unit stride along N, rows ldc
 * apart) addresses each point once: its dims, by increasing stride, each
 * step past the span of the smaller ones. */
static bool disjoint(const st_kargs *a, int nb, const st_karg_buf *C, int64_t ldc)
{
    int64_t sz[ST_MAX_DIMS + 2], sd[ST_MAX_DIMS + 2];
    int n = 0;
    for (int d = 0; d < nb + 2; d++) {
        int64_t size = a->shape[d], stride = d < nb ? C->strides[d] : d == nb ? ldc : 1;
        if (size == 1)
            continue;
        if (stride <= 0)
            return false;
        int j = n++;
        for (; j > 0 && sd[j - 1] > stride; j--) {
            sz[j] = sz[j - 1];
            sd[j] = sd[j - 1];
        }
        sz[j] = size;
        sd[j] = stride;
    }
    int64_t span = 1; /* elements from the first to one past the last */
    for (int j = 0; j < n; j++) {
        if (sd[j] < span || sz[j] - 1 > (INT64_MAX - span) / sd[j])
            return false;
        span += (sz[j] - 1) * sd[j];
    }
    return true;
}

static void refuse(st_nvrtc_gemm *p, const char *why)
{
    p->ok = false;
    p->why = why;
}

static void fold_batch(st_nvrtc_gemm *p);

void st_nvrtc_gemm_plan(const st_kernel *k, const st_kargs *a, st_nvrtc_gemm *p)
{
    memset(p, 0, sizeof *p);
    p->out_buf = -1;
    st_dtype acc = gemm_acc(k);
    if (acc == ST_INT64)
        return refuse(p, "dtypes cuBLAS does not take (integer or mixed operands)");
    if (k->bufs[0].unravel || k->bufs[1].unravel)
        return refuse(p, "an unravel operand");
    int nb = k->rank - 3;
    int64_t M = a->shape[nb], N = a->shape[nb + 1], K = a->shape[nb + 2];
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++)
        nbatch *= a->shape[d];
    if (nbatch <= 0 || M <= 0 || N <= 0) {
        p->empty = true;
        return refuse(p, "empty output");
    }
    if (K <= 0)
        return refuse(p, "K == 0 (the NVRTC kernel writes the zeros)");
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return refuse(p, "a size over INT_MAX");
    const st_karg_buf *A = &a->bufs[0], *B = &a->bufs[1];
    bool tra, trb;
    int64_t lda, ldb;
    if (!operand(M, K, A->strides[nb], A->strides[nb + 2], &tra, &lda))
        return refuse(p, "A has no unit stride (or a leading dimension cuBLAS cannot take)");
    if (!operand(K, N, B->strides[nb + 2], B->strides[nb + 1], &trb, &ldb))
        return refuse(p, "B has no unit stride (or a leading dimension cuBLAS cannot take)");
    p->ab_dtype = k->bufs[0].dtype;
    p->f64 = acc == ST_FLOAT64;
    p->m = (int)N;
    p->n = (int)M;
    p->k = (int)K;
    p->transa = trb;
    p->lda = (int)ldb;
    p->transb = tra;
    p->ldb = (int)lda;
    int64_t st[3][ST_MAX_DIMS];
    for (int d = 0; d < nb; d++) {
        st[0][d] = A->strides[d];
        st[1][d] = B->strides[d];
    }
    /* direct: C's rows are the output's rows, batches the output's */
    int ob = direct_buf(k);
    if (ob >= 0 && ob < k->nbufs && k->bufs[ob].is_out && k->bufs[ob].unravel == 0) {
        st_dtype to = k->bufs[ob].dtype;
        const st_karg_buf *C = &a->bufs[ob];
        bool trc;
        int64_t ldc;
        bool ok = (to == acc || (to == p->ab_dtype && acc == ST_FLOAT32)) &&
                  operand(M, N, C->strides[nb], C->strides[nb + 1], &trc, &ldc) && !trc;
        /* no two points of the output may share an element: the batch
         * dims may sit between the rows (a product written permuted,
         * [b, s, h, d] for the product [b, h, s, d]) */
        ok = ok && disjoint(a, nb, C, ldc);
        if (ok) {
            for (int d = 0; d < nb; d++)
                st[2][d] = C->strides[d];
            if (collapse(p, a, nb, st)) {
                p->direct = true;
                p->out_buf = ob;
                p->c_dtype = to;
                p->ldc = (int)ldc;
                p->ok = true;
                fold_batch(p);
                return;
            }
        }
    }
    /* scratch: contiguous [batch..., M, N] of the accumulation type */
    int64_t s = M * N;
    for (int d = nb - 1; d >= 0; d--) {
        st[2][d] = a->shape[d] == 1 ? 0 : s;
        s *= a->shape[d];
    }
    if (!collapse(p, a, nb, st))
        return refuse(p, "batch dims that need more than ST_NVRTC_GEMM_MAX_CALLS calls");
    p->direct = false;
    p->c_dtype = acc;
    p->ldc = (int)N;
    p->scratch_bytes = s * (int64_t)st_dtype_size(acc);
    p->ok = true;
    fold_batch(p);
}

/* One B for every batch (a linear layer over [batch, M, K]) and our A's
 * and C's batches laid one after the other: one call with the batch
 * folded into cuBLAS's n (our M), a single large product instead of many
 * small ones. */
static void fold_batch(st_nvrtc_gemm *p)
{
    if (!p->ok || p->batch <= 1 || p->calls != 1 || p->stride_a != 0 || p->transb)
        return;
    int64_t n = (int64_t)p->n * p->batch;
    if (n > INT_MAX || p->stride_b != (int64_t)p->n * p->ldb ||
        p->stride_c != (int64_t)p->n * p->ldc)
        return;
    p->n = (int)n;
    p->batch = 1;
    p->stride_b = p->stride_c = 0;
}

void st_nvrtc_gemm_offsets(const st_nvrtc_gemm *p, int64_t i, int64_t off[3])
{
    off[0] = off[1] = off[2] = 0;
    for (int j = p->nouter - 1; j >= 0; j--) {
        int64_t c = i % p->outer_shape[j];
        i /= p->outer_shape[j];
        for (int o = 0; o < 3; o++)
            off[o] += c * p->outer_stride[o][j];
    }
}

void st_nvrtc_gemm_pointers(const st_nvrtc_gemm *p, const char *a, const char *b, char *c,
                            size_t eab, size_t ec, const void **ptrs[3])
{
    int64_t j = 0;
    for (int64_t i = 0; i < p->calls; i++) {
        int64_t off[3];
        st_nvrtc_gemm_offsets(p, i, off);
        for (int64_t q = 0; q < p->batch; q++, j++) {
            ptrs[0][j] = b + (ptrdiff_t)((off[1] + q * p->stride_a) * (int64_t)eab);
            ptrs[1][j] = a + (ptrdiff_t)((off[0] + q * p->stride_b) * (int64_t)eab);
            ptrs[2][j] = c + (ptrdiff_t)((off[2] + q * p->stride_c) * (int64_t)ec);
        }
    }
}
