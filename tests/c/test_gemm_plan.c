/* test_gemm_plan - the cuBLAS plan of a MATMUL launch (nvrtc_backend/
 * gemm_plan.c), checked without a GPU: for each layout (row-major,
 * transposed operands, batched, broadcast batch, non-collapsible batch
 * dims, padded and transposed outputs, epilogues) the plan's parameters
 * drive the host gemm the cudaemu backend runs for cuBLAS
 * (st_cudaemu_gemm: memory read as cuBLAS would, bounds-checked), and its
 * result must equal a naive row-major product read through the launch
 * strides; layouts and dtypes cuBLAS cannot take must be refused. Also the
 * epilogue kernel's launch shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_cudaemu.h"
#include "st_test.h"

/* ---- a case: a MATMUL kernel and its launch arguments over host memory
 * (doubles; element offsets are what the plan computes) ---- */
#define MEMN 4096
typedef struct {
    st_kernel k;
    st_kargs a;
    int rank, nb;
    double mem[3][MEMN];   /* A, B, C (output) */
    int out;               /* buffer index of the output */
} mcase;

static void case_init(mcase *c, int nb, st_dtype ta, st_dtype tb, st_dtype tc,
                      const int64_t *batch, int64_t M, int64_t N, int64_t K)
{
    memset(c, 0, sizeof *c);
    c->nb = nb;
    c->rank = nb + 3;
    st_kernel_init(&c->k, ST_K_MATMUL, c->rank);
    snprintf(c->k.name, sizeof c->k.name, "mm");
    int dm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = -1;
    st_kernel_add_buf(&c->k, 0, ta, false, dm);
    st_kernel_add_buf(&c->k, 1, tb, false, dm);
    st_kernel_add_buf(&c->k, 2, tc, true, dm);
    for (int d = 0; d < nb; d++)
        c->a.shape[d] = batch[d];
    c->a.shape[nb] = M;
    c->a.shape[nb + 1] = N;
    c->a.shape[nb + 2] = K;
    c->out = 2;
    for (int b = 0; b < 3; b++) {
        c->a.bufs[b].data = (char *)c->mem[b];
        for (int i = 0; i < MEMN; i++)
            c->mem[b][i] = b < 2 ? (double)((i * 7 + b * 3) % 11) - 5.0 : NAN;
    }
}

/* row-major contiguous strides of buffer b over the given dims order:
 * perm[j] = iteration dim of the j-th stored (outermost first) dim; the
 * dims not listed get stride 0 */
static void layout(mcase *c, int b, const int *perm, int n)
{
    int64_t s = 1;
    for (int d = 0; d < ST_MAX_DIMS; d++)
        c->a.bufs[b].strides[d] = 0;
    for (int j = n - 1; j >= 0; j--) {
        c->a.bufs[b].strides[perm[j]] = s;
        s *= c->a.shape[perm[j]];
    }
}

/* an epilogue: store(add(REDUCED, load bias)) into a new buffer 3 */
static void add_bias_epilogue(mcase *c)
{
    int dm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = -1;
    st_kernel_add_buf(&c->k, 3, ST_FLOAT32, false, dm);
    st_knode n;
    memset(&n, 0, sizeof n);
    n.a = n.b = n.c = -1;
    n.idx_dim = -1;
    n.phase = 1;
    n.kind = ST_KN_REDUCED;
    n.dtype = ST_FLOAT32;
    int r = st_kernel_node(&c->k, &n);
    n.kind = ST_KN_LOAD;
    n.buf = 3;
    int l = st_kernel_node(&c->k, &n);
    n.kind = ST_KN_BINARY;
    n.op = ST_OP_ADD;
    n.a = r;
    n.b = l;
    int s = st_kernel_node(&c->k, &n);
    c->k.stores[0].buf = 2;
    c->k.stores[0].node = s;
    c->k.nstores = 1;
}

/* a plain store of the product into buffer 2 */
static void plain_store(mcase *c)
{
    st_knode n;
    memset(&n, 0, sizeof n);
    n.a = n.b = n.c = -1;
    n.idx_dim = -1;
    n.phase = 1;
    n.kind = ST_KN_REDUCED;
    n.dtype = ST_FLOAT32;
    c->k.stores[0].buf = 2;
    c->k.stores[0].node = st_kernel_node(&c->k, &n);
    c->k.nstores = 1;
}

static int64_t nbatch_of(const mcase *c)
{
    int64_t p = 1;
    for (int d = 0; d < c->nb; d++)
        p *= c->a.shape[d];
    return p;
}

/* element of buffer b at batch index z (row-major over the batch dims),
 * rows r along iteration dim dr, column q along dim dq */
static int64_t at(const mcase *c, int b, int64_t z, int dr, int64_t r, int dq, int64_t q)
{
    int64_t off = 0;
    for (int d = c->nb - 1; d >= 0; d--) {
        off += (z % c->a.shape[d]) * c->a.bufs[b].strides[d];
        z /= c->a.shape[d];
    }
    return off + r * c->a.bufs[b].strides[dr] + q * c->a.bufs[b].strides[dq];
}

/* The column-major gemm the plan describes (st_cudaemu_gemm, the host
 * cuBLAS of the cudaemu backend), over the case's memory (or scratch), all
 * float64; false on an out-of-bounds read or write. ptrs: the products'
 * operands come from st_nvrtc_gemm_pointers (the one cublasGemmBatchedEx
 * call of a plan of several calls), else from the loop of calls. */
static bool run_plan(const st_nvrtc_gemm *p, mcase *c, double *scratch, int64_t nscratch,
                     bool ptrs)
{
    st_cudaemu_gemm_io io = {
        .a = c->mem[0], .b = c->mem[1], .c = p->direct ? c->mem[p->out_buf] : scratch,
        .ab_dtype = ST_FLOAT64, .c_dtype = ST_FLOAT64,
        .na = MEMN, .nb = MEMN, .nc = p->direct ? MEMN : nscratch, .ptrs = ptrs};
    return st_cudaemu_gemm(p, &io);
}

/* Plans the case, runs the plan, compares with the naive product. */
static void check_case(const char *label, mcase *c, bool want_ok, int want_direct)
{
    st_nvrtc_gemm p;
    st_nvrtc_gemm_plan(&c->k, &c->a, &p);
    CHECK(p.ok == want_ok, "%s: ok %d (want %d; why: %s)", label, p.ok, want_ok,
          p.why ? p.why : "-");
    if (!p.ok || !want_ok)
        return;
    if (want_direct >= 0)
        CHECK(p.direct == (want_direct == 1), "%s: direct %d (want %d)", label, p.direct,
              want_direct);
    int nb = c->nb;
    int64_t M = c->a.shape[nb], N = c->a.shape[nb + 1], K = c->a.shape[nb + 2];
    int64_t nbatch = nbatch_of(c), nprod = nbatch * M * N;
    /* a broadcast B folds the batch into cuBLAS's n (our M) */
    CHECK(p.calls >= 1 && p.n % M == 0 && p.calls * p.batch * (p.n / M) == nbatch,
          "%s: %lld calls x %d batch x %d/%lld rows != %lld", label, (long long)p.calls,
          p.batch, p.n, (long long)M, (long long)nbatch);
    size_t acc = p.f64 ? 8 : 4;
    if (!p.direct)
        CHECK(p.scratch_bytes == nprod * (int64_t)acc, "%s: scratch bytes %lld", label,
              (long long)p.scratch_bytes);
    double *scratch = malloc(sizeof(double) * (size_t)(nprod + 1));
    for (int pass = 0; pass < 2; pass++) {   /* the loop of calls, then the pointer arrays */
        const char *how = pass ? "pointer arrays" : "calls";
        for (int64_t i = 0; i <= nprod; i++)
            scratch[i] = NAN;
        if (p.direct)   /* poison the output between the passes */
            for (int64_t i = 0; i < MEMN; i++)
                c->mem[p.out_buf][i] = NAN;
        bool inb = run_plan(&p, c, scratch, nprod, pass == 1);
        CHECK(inb, "%s (%s): the plan reads or writes out of bounds", label, how);
        int bad = 0;
        for (int64_t z = 0; z < nbatch && inb; z++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double want = 0;
                    for (int64_t l = 0; l < K; l++)
                        want += c->mem[0][at(c, 0, z, nb, m, nb + 2, l)] *
                                c->mem[1][at(c, 1, z, nb + 2, l, nb + 1, n)];
                    double got = p.direct
                                     ? c->mem[p.out_buf][at(c, p.out_buf, z, nb, m, nb + 1, n)]
                                     : scratch[(z * M + m) * N + n];
                    if (!(got == want) && bad++ < 3)
                        printf("  %s (%s): [%lld,%lld,%lld] got %g want %g\n", label, how,
                               (long long)z, (long long)m, (long long)n, got, want);
                }
        CHECK(bad == 0, "%s (%s): %d wrong elements", label, how, bad);
    }
    free(scratch);
    printf("  %-34s ok=%d direct=%d transa=%d transb=%d m=%d n=%d k=%d lda=%d ldb=%d ldc=%d "
           "batch=%d calls=%lld\n", label, p.ok, p.direct, p.transa, p.transb, p.m, p.n, p.k,
           p.lda, p.ldb, p.ldc, p.batch, (long long)p.calls);
}

static void finish(mcase *c)
{
    st_kernel_clear(&c->k);
}

static mcase C_;

/* 2-D: A [M,K], B [K,N], C [M,N]; ta/tb: stored transposed */
static void two_d(const char *label, bool ta, bool tb, st_dtype dt)
{
    mcase *c = &C_;
    case_init(c, 0, dt, dt, dt, NULL, 5, 3, 7);
    int amk[2] = {0, 2}, akm[2] = {2, 0}, bkn[2] = {2, 1}, bnk[2] = {1, 2}, cmn[2] = {0, 1};
    layout(c, 0, ta ? akm : amk, 2);
    layout(c, 1, tb ? bnk : bkn, 2);
    layout(c, 2, cmn, 2);
    check_case(label, c, true, 1);
    finish(c);
}

static void cases(void)
{
    mcase *c = &C_;
    two_d("row-major f32", false, false, ST_FLOAT32);
    two_d("transposed A", true, false, ST_FLOAT32);
    two_d("transposed B", false, true, ST_FLOAT32);
    two_d("both transposed", true, true, ST_FLOAT32);
    two_d("f64 both transposed", true, true, ST_FLOAT64);
    two_d("bf16", false, true, ST_BFLOAT16);
    {
        st_nvrtc_gemm p;
        two_d("f16 (direct into f16)", true, false, ST_FLOAT16);
        case_init(c, 0, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, NULL, 5, 3, 7);
        int amk[2] = {0, 2}, akm[2] = {2, 0}, bkn[2] = {2, 1}, cmn[2] = {0, 1};
        layout(c, 0, akm, 2);
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(p.ok && p.transb && !p.transa && p.m == 3 && p.n == 5 && p.k == 7 &&
                  p.ldb == 5 && p.lda == 3 && p.ldc == 3 && !p.f64 && p.c_dtype == ST_FLOAT32,
              "transposed A parameters");
        finish(c);
        (void)amk;
    }
    {   /* batched, contiguous batches: one call */
        int64_t bt[1] = {4};
        case_init(c, 1, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 3, 7);
        int pa[3] = {0, 1, 3}, pb[3] = {0, 3, 2}, pc[3] = {0, 1, 2};
        layout(c, 0, pa, 3);
        layout(c, 1, pb, 3);
        layout(c, 2, pc, 3);
        check_case("batched contiguous", c, true, 1);
        st_nvrtc_gemm p;
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(p.calls == 1 && p.batch == 4 && p.stride_a == 21 && p.stride_b == 35 &&
                  p.stride_c == 15, "batched strides %lld %lld %lld", (long long)p.stride_a,
              (long long)p.stride_b, (long long)p.stride_c);
        finish(c);
    }
    {   /* two batch dims, B broadcast (stride 0): one call, stride 0 */
        int64_t bt[2] = {2, 3};
        case_init(c, 2, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 3, 7);
        int pa[4] = {0, 1, 2, 4}, pb[2] = {4, 3}, pc[4] = {0, 1, 2, 3};
        layout(c, 0, pa, 4);
        layout(c, 1, pb, 2);
        layout(c, 2, pc, 4);
        check_case("broadcast B (stride 0)", c, true, 1);
        st_nvrtc_gemm p;
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        /* folded: one product of 6 x 5 rows against the one B */
        CHECK(p.calls == 1 && p.batch == 1 && p.n == 30, "broadcast: %lld calls x %d batch, n %d",
              (long long)p.calls, p.batch, p.n);
        finish(c);
    }
    {   /* attention: Q K^T over [B, H] of views permuted from [B, S, H, D]:
         * B and H never collapse; the larger (B) is the batch */
        int64_t bt[2] = {4, 3};
        case_init(c, 2, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 5, 2);
        int pa[4] = {0, 2, 1, 4}, pb[4] = {0, 3, 1, 4}, pc[4] = {0, 1, 2, 3};
        layout(c, 0, pa, 4);
        layout(c, 1, pb, 4);
        layout(c, 2, pc, 4);
        check_case("attention scores", c, true, 1);
        st_nvrtc_gemm p;
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(p.calls == 3 && p.batch == 4, "attention: %lld calls x %d", (long long)p.calls,
              p.batch);
        finish(c);
    }
    {   /* the context P @ V written in the heads-merge layout: product
         * [B, H, S, D] stored as [B, S, H, D] (fusion's perm rule): the
         * heads sit between the rows, direct (each point its own element) */
        int64_t bt[2] = {4, 3};
        case_init(c, 2, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 2, 5);
        int pa[4] = {0, 1, 2, 4}, pb[4] = {0, 4, 1, 3}, pc[4] = {0, 2, 1, 3};
        layout(c, 0, pa, 4);
        layout(c, 1, pb, 4);
        layout(c, 2, pc, 4);
        check_case("context into [B, S, H, D]", c, true, 1);
        /* a stride that makes two heads share elements: scratch */
        c->a.bufs[2].strides[1] = 1;
        check_case("heads overlapping -> scratch", c, true, 0);
        finish(c);
    }
    {   /* A broadcast along the outer batch dim only: not collapsible */
        int64_t bt[2] = {2, 3};
        case_init(c, 2, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 3, 7);
        int pa[3] = {1, 2, 4}, pb[4] = {0, 1, 4, 3}, pc[4] = {0, 1, 2, 3};
        layout(c, 0, pa, 3);
        layout(c, 1, pb, 4);
        layout(c, 2, pc, 4);
        check_case("A broadcast over outer batch", c, true, 1);
        st_nvrtc_gemm p;
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(p.calls == 2 && p.batch == 3, "outer broadcast: %lld calls x %d",
              (long long)p.calls, p.batch);
        finish(c);
    }
    {   /* batch dims stored swapped (a permuted view): looped calls */
        int64_t bt[2] = {2, 3};
        case_init(c, 2, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 3, 7);
        int pa[4] = {1, 0, 2, 4}, pb[4] = {0, 1, 4, 3}, pc[4] = {0, 1, 2, 3};
        layout(c, 0, pa, 4);
        layout(c, 1, pb, 4);
        layout(c, 2, pc, 4);
        check_case("non-collapsible batch dims", c, true, 1);
        finish(c);
    }
    {   /* batch dims of size 1 between others are skipped */
        int64_t bt[3] = {2, 1, 3};
        case_init(c, 3, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 4, 3, 5);
        int pa[5] = {0, 1, 2, 3, 5}, pb[5] = {0, 1, 2, 5, 4}, pc[5] = {0, 1, 2, 3, 4};
        layout(c, 0, pa, 5);
        layout(c, 1, pb, 5);
        layout(c, 2, pc, 5);
        c->a.bufs[0].strides[1] = 12345; /* size 1: never moves */
        check_case("unit batch dim", c, true, 1);
        finish(c);
    }
    {   /* odd strides: neither stride of A is 1 */
        case_init(c, 0, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, NULL, 5, 3, 7);
        int bkn[2] = {2, 1}, cmn[2] = {0, 1};
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        c->a.bufs[0].strides[0] = 14;
        c->a.bufs[0].strides[2] = 2;
        check_case("odd strides of A", c, false, -1);
        c->a.bufs[0].strides[0] = 7;
        c->a.bufs[0].strides[2] = 1;
        c->a.bufs[1].strides[2] = 6;   /* B: [K,N] with strides (6, 2) */
        c->a.bufs[1].strides[1] = 2;
        check_case("odd strides of B", c, false, -1);
        c->a.bufs[1].strides[2] = 3;
        c->a.bufs[1].strides[1] = 1;
        c->a.bufs[0].strides[0] = -7;  /* negative rows */
        check_case("negative stride", c, false, -1);
        finish(c);
    }
    {   /* integer and mixed dtypes */
        st_dtype pairs[4][3] = {{ST_INT64, ST_INT64, ST_INT64}, {ST_INT32, ST_INT32, ST_INT32},
                                {ST_FLOAT16, ST_FLOAT32, ST_FLOAT32},
                                {ST_FLOAT32, ST_FLOAT32, ST_FLOAT64}};
        const char *nm[4] = {"int64 falls back", "int32 falls back", "f16 x f32 falls back",
                             "f32 into f64 falls back"};
        for (int i = 0; i < 4; i++) {
            case_init(c, 0, pairs[i][0], pairs[i][1], pairs[i][2], NULL, 5, 3, 7);
            int amk[2] = {0, 2}, bkn[2] = {2, 1}, cmn[2] = {0, 1};
            layout(c, 0, amk, 2);
            layout(c, 1, bkn, 2);
            layout(c, 2, cmn, 2);
            check_case(nm[i], c, false, -1);
            CHECK(!st_nvrtc_has_epi(&c->k), "%s: no _epi kernel", nm[i]);
            finish(c);
        }
    }
    {   /* epilogue present: scratch; f32 operands with an f16 output: scratch */
        int64_t bt[1] = {3};
        case_init(c, 1, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 3, 7);
        int pa[3] = {0, 1, 3}, pb[3] = {0, 2, 3}, pc[3] = {0, 1, 2};
        layout(c, 0, pa, 3);
        layout(c, 1, pb, 3);
        layout(c, 2, pc, 3);
        add_bias_epilogue(c);
        check_case("bias epilogue -> scratch", c, true, 0);
        CHECK(st_nvrtc_has_epi(&c->k), "f32 matmul has _epi");
        finish(c);
        case_init(c, 0, ST_FLOAT32, ST_FLOAT32, ST_FLOAT16, NULL, 5, 3, 7);
        int amk[2] = {0, 2}, bkn[2] = {2, 1}, cmn[2] = {0, 1};
        layout(c, 0, amk, 2);
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        check_case("f32 -> f16 output: scratch", c, true, 0);
        finish(c);
    }
    {   /* one plain store of the product: direct */
        case_init(c, 0, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, NULL, 5, 3, 7);
        int amk[2] = {0, 2}, bkn[2] = {2, 1}, cmn[2] = {0, 1};
        layout(c, 0, amk, 2);
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        plain_store(c);
        check_case("plain store of the product", c, true, 1);
        finish(c);
    }
    {   /* outputs: padded rows direct; transposed or overlapping -> scratch */
        int64_t bt[1] = {2};
        case_init(c, 1, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 5, 3, 7);
        int pa[3] = {0, 1, 3}, pb[3] = {0, 3, 2};
        layout(c, 0, pa, 3);
        layout(c, 1, pb, 3);
        c->a.bufs[2].strides[0] = 50;
        c->a.bufs[2].strides[1] = 8;   /* ldc 8 > N */
        c->a.bufs[2].strides[2] = 1;
        check_case("padded output rows", c, true, 1);
        c->a.bufs[2].strides[0] = 15;
        c->a.bufs[2].strides[1] = 1;   /* transposed output */
        c->a.bufs[2].strides[2] = 5;
        check_case("transposed output -> scratch", c, true, 0);
        c->a.bufs[2].strides[0] = 3;   /* batches overlap */
        c->a.bufs[2].strides[1] = 3;
        c->a.bufs[2].strides[2] = 1;
        check_case("overlapping output -> scratch", c, true, 0);
        finish(c);
    }
    {   /* vectors: N == 1 and M == 1 with unit dims of any stride */
        case_init(c, 0, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, NULL, 6, 1, 9);
        int amk[2] = {0, 2}, bkn[2] = {2, 1}, cmn[2] = {0, 1};
        layout(c, 0, amk, 2);
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        c->a.bufs[1].strides[1] = 0;
        check_case("matrix x vector", c, true, 1);
        finish(c);
        case_init(c, 0, ST_FLOAT64, ST_FLOAT64, ST_FLOAT64, NULL, 1, 6, 9);
        layout(c, 0, amk, 2);
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        c->a.bufs[0].strides[0] = 0;
        c->a.bufs[2].strides[0] = 0;
        check_case("vector x matrix", c, true, -1);
        finish(c);
    }
    {   /* empty, K == 0, too many calls */
        st_nvrtc_gemm p;
        case_init(c, 0, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, NULL, 0, 3, 7);
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(!p.ok && p.empty, "empty output");
        c->a.shape[0] = 5;
        c->a.shape[2] = 0;
        int amk[2] = {0, 2}, bkn[2] = {2, 1}, cmn[2] = {0, 1};
        layout(c, 0, amk, 2);
        layout(c, 1, bkn, 2);
        layout(c, 2, cmn, 2);
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(!p.ok && !p.empty, "K == 0 falls back");
        finish(c);
        int64_t bt[2] = {300, 2};
        case_init(c, 2, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt, 2, 2, 2);
        int pa[4] = {1, 0, 2, 4}, pb[4] = {0, 1, 4, 3}, pc[4] = {0, 1, 2, 3};
        layout(c, 0, pa, 4);
        layout(c, 1, pb, 4);
        layout(c, 2, pc, 4);
        /* the larger dim is the batch: 2 calls of 300 products */
        check_case("300 x 2 non-collapsible", c, true, -1);
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(p.ok && p.calls == 2 && p.batch == 300, "300 x 2: %lld calls x %d",
              (long long)p.calls, p.batch);
        finish(c);
        /* three dims that never collapse: 400 calls of 20, too many */
        int64_t bt3[3] = {20, 20, 20};
        case_init(c, 3, ST_FLOAT32, ST_FLOAT32, ST_FLOAT32, bt3, 2, 2, 2);
        int qa[5] = {1, 0, 2, 3, 5}, qb[5] = {0, 1, 2, 5, 4}, qc[5] = {0, 1, 2, 3, 4};
        layout(c, 0, qa, 5);
        layout(c, 1, qb, 5);
        layout(c, 2, qc, 5);
        st_nvrtc_gemm_plan(&c->k, &c->a, &p);
        CHECK(!p.ok, "400 looped calls fall back");
        finish(c);
    }
}

static void epi_launch(void)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_MATMUL, 4);
    st_kargs a;
    memset(&a, 0, sizeof a);
    a.shape[0] = 4;
    a.shape[1] = 5;
    a.shape[2] = 3;
    a.shape[3] = 100000; /* K does not count */
    /* a block per output row (batch x M of them), threads along N in whole warps */
    st_nvrtc_launch L = st_nvrtc_epi_launch_config(&k, &a, 132);
    CHECK(!L.empty && L.block[0] == 32 && L.grid[0] == 20 && L.grid[1] == 1,
          "epi launch of 20 rows of 3: %u x %u", L.grid[0], L.block[0]);
    a.shape[1] = 512;
    a.shape[2] = 768;
    L = st_nvrtc_epi_launch_config(&k, &a, 132);
    CHECK(L.grid[0] == 4 * 512 && L.block[0] == 256, "epi rows of 768: %u x %u", L.grid[0],
          L.block[0]);
    a.shape[1] = 5000;
    a.shape[2] = 100;
    L = st_nvrtc_epi_launch_config(&k, &a, 132);
    CHECK(L.grid[0] == 132 * 32 && L.block[0] == 128, "epi grid capped: %u x %u", L.grid[0],
          L.block[0]);
    a.shape[0] = 0;
    L = st_nvrtc_epi_launch_config(&k, &a, 132);
    CHECK(L.empty, "empty epi launch");
    st_kernel_clear(&k);
}

int main(void)
{
    RUN_TEST(cases());
    RUN_TEST(epi_launch());
    /* SYMTRACE_CUBLAS=0 turns cuBLAS off with a clear reason */
    setenv("SYMTRACE_CUBLAS", "0", 1);
    CHECK(!st_nvrtc_cublas_available() && strstr(st_err_msg(), "SYMTRACE_CUBLAS=0"),
          "SYMTRACE_CUBLAS=0: %s", st_err_msg());
    st_err_clear();
    return st_test_exit_code("test_gemm_plan");
}
