/* test_cudaemu - the NVRTC renderer's CUDA C run on the CPU by the
 * "cudaemu" backend (nvrtc_backend/emu/) against the interp oracle:
 * - the scheduler itself on hand-written kernels: __syncthreads over a
 *   block's fibers and shared memory per block, warp shuffles with warps
 *   that synchronize independently, grid/block coordinates, the four
 *   kernel signatures; a deadlock, a shuffle reading a lane that returned
 *   and inline PTX fail the launch with a message, never hang;
 * - programs lowered by st_fuse_lower and run by both backends, compared
 *   bit for bit on integers, bools and random numbers (the same Philox
 *   counters) and with a float tolerance elsewhere (transcendental math):
 *   elementwise (the 16-byte vector path with its scalar tail and a
 *   broadcast scalar, the strided scalar path, unravel loads of reshapes of
 *   permuted views, float16/bfloat16, integer ops), row reductions (warp
 *   rows, R <= 256, and block rows of 128..1024 threads), arg-max/min with
 *   NaN and ties, softmax and log_softmax, layer_norm forward and backward,
 *   column reductions (NAME_col; few output columns over many rows: the
 *   rows sliced over gridDim.y, the scratch kept zeroed; and
 *   SYMTRACE_CUDA_COLREDUCE=0), a gather with an index out of bounds (the
 *   nvrtc backend's error), matmuls through the cuBLAS plan (direct, into
 *   the scratch + NAME_epi with a bias/GELU epilogue, batched over views)
 *   and through the NVRTC matmul kernel (SYMTRACE_CUBLAS=0, integers),
 *   dropout and the random creation ops;
 * - every primitive op as a one-op program over the dtypes (606 programs:
 *   the cast matrix, promotions, integer division and powers, reductions
 *   over each dim choice, index ops with int32/int64 indices, scatter_add
 *   into every dtype through the emulated atomics, matmul dtype pairs);
 * - random DAGs (random_graph.h) under two fusion settings each.
 * The distinct kernels of a batch of programs compile as one list (two
 * objects compiled at once when large).
 * Everything runs twice: in thread order, then with each block's threads
 * and the grid's blocks last first (SYMTRACE_CUDAEMU_REVERSE=1), which
 * exposes a missing barrier that the forward order hides. A launch shim
 * records which launch paths ran (col, sliced col, plan direct/epi, NVRTC
 * matmul, vector flags, warp/block rows, unravel loads) and the test
 * checks each group reached the path it is about. Compiled objects are
 * cached on disk ($SYMTRACE_CACHE_DIR/cudaemu, else /tmp), so a second run
 * compiles nothing (about 40 s cold on 2 cores, 2.5 s warm). Exits 77
 * (skipped) without a C++ compiler.
 * Env: TEST_CUDAEMU_GRAPHS (random graphs, default 60; 20 in a sanitizer
 * build), TEST_CUDAEMU_SEED. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudaemu_internal.h"
#include "random_graph.h"

#ifdef __SANITIZE_ADDRESS__
/* The emulated kernels' objects use thread_local (fiber state, __shared__),
 * and this test loads enough of them that glibc grows the dynamic TLS
 * vector; gcc 12's LeakSanitizer then crashes scanning the stale dynamic
 * TLS ranges at exit ("Tracer caught signal 11"). So LSan does not scan
 * TLS here (an object only TLS points to would be reported, not missed),
 * and the grown vector, glibc's until exit, is no leak of ours. */
__attribute__((visibility("default"))) const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "use_tls=0";
}
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:_dl_resize_dtv\n";
}
#endif
#include "st_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static st_backend *EB, *IB;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ======================================================================
 * The scheduler on hand-written kernels (the ABI of st_cudaemu.hpp)
 * ====================================================================== */

static const char sched_src[] =
    "struct st_kargs { long long n; float *x; float *y; int *z; };\n"
    "struct st_kerr { int code; };\n"
    /* a block reverses its slice through shared memory */
    "extern \"C\" void rev(const st_kargs a, unsigned flags, st_kerr *err)\n"
    "{\n"
    "    __shared__ float s[256];\n"
    "    const unsigned t = threadIdx.x, b = blockIdx.x * blockDim.x;\n"
    "    s[t] = a.x[b + t];\n"
    "    __syncthreads();\n"
    "    a.y[b + t] = s[blockDim.x - 1 - t];\n"
    "}\n"
    /* warp sums by xor shuffles; odd warps shuffle once more than even
     * ones (warps synchronize on their own); __syncthreads after */
    "extern \"C\" void wsum(const st_kargs a, unsigned flags, st_kerr *err)\n"
    "{\n"
    "    const unsigned t = threadIdx.x + threadIdx.y * blockDim.x;\n"
    "    double v = a.x[t];\n"
    "    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);\n"
    "    if ((t / 32) % 2) v = __shfl_xor_sync(0xffffffffu, v, 1) + 1000.0;\n"
    "    __syncthreads();\n"
    "    a.y[t] = (float)v;\n"
    "}\n"
    /* coordinates; the fourth parameter of NAME_col and NAME_epi */
    "extern \"C\" void coords(const st_kargs a, unsigned flags, st_kerr *err)\n"
    "{\n"
    "    const unsigned tb = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
    "    const unsigned bl = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);\n"
    "    const unsigned nt = blockDim.x * blockDim.y * blockDim.z;\n"
    "    a.z[bl * nt + tb] = (int)(blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z +\n"
    "        1000 * threadIdx.x + 10000 * threadIdx.y + 100000 * threadIdx.z + (int)flags);\n"
    "}\n"
    "extern \"C\" void four_v(const st_kargs a, unsigned flags, st_kerr *err, void *p)\n"
    "{ if (threadIdx.x == 0) a.z[0] = *(int *)p; }\n"
    "extern \"C\" void four_f(const st_kargs a, unsigned flags, st_kerr *err, const float *p)\n"
    "{ if (threadIdx.x == 0) a.y[0] = p[1]; }\n"
    "extern \"C\" void four_d(const st_kargs a, unsigned flags, st_kerr *err, const double *p)\n"
    "{ if (threadIdx.x == 0) a.y[0] = (float)p[2]; err->code = 7; }\n"
    /* lane 0 waits at __syncthreads, the rest of its warp at a shuffle */
    "extern \"C\" void deadlock(const st_kargs a, unsigned flags, st_kerr *err)\n"
    "{\n"
    "    if (threadIdx.x == 0) __syncthreads();\n"
    "    else a.y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);\n"
    "}\n"
    /* odd lanes return; even ones read them */
    "extern \"C\" void gone(const st_kargs a, unsigned flags, st_kerr *err)\n"
    "{\n"
    "    if (threadIdx.x % 2) return;\n"
    "    a.y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);\n"
    "}\n"
    "extern \"C\" void ptx(const st_kargs a, unsigned flags, st_kerr *err)\n"
    "{\n"
    "    float c = 0;\n"
    "    ST_EMU_ASM(\"mov.f32 %0, 1.0;\" : \"=f\"(c));\n"
    "    a.y[0] = c;\n"
    "}\n"
    "ST_CUDAEMU_ENTRY\n";

typedef struct {
    long long n;
    float *x, *y;
    int *z;
} sched_args;

static char *sched_stacks;
static int sched_reverse;
#define SCHED_STACK (64u * 1024u)

static int sched_run(st_cudaemu_entry_fn entry, void *so, const char *fn, int sig,
                     const unsigned grid[3], const unsigned block[3], sched_args *a,
                     void *extra, int *code, char *msg, size_t nmsg)
{
    st_cudaemu_launch L;
    memset(&L, 0, sizeof L);
    memcpy(L.grid, grid, sizeof L.grid);
    memcpy(L.block, block, sizeof L.block);
    *(void **)&L.fn = dlsym(so, fn);
    L.sig = sig;
    L.args = a;
    L.flags = 5;
    *code = 0;
    L.err = code;
    L.extra = extra;
    L.name = fn;
    L.reverse = sched_reverse;
    L.stacks = sched_stacks;
    L.stack_size = SCHED_STACK;
    L.nstacks = 1024;
    int rc = L.fn ? entry(&L) : -1;
    snprintf(msg, nmsg, "%s", L.msg);
    return rc;
}

static void test_scheduler(void)
{
    void *so = NULL;
    st_cudaemu_entry_fn entry = NULL;
    st_status s = st_cudaemu_load(sched_src, &so, &entry);
    CHECK(s == ST_OK && entry, "scheduler kernels compile");
    if (s != ST_OK)
        return;
    sched_stacks = aligned_alloc(4096, (size_t)1024 * SCHED_STACK);
    enum { N = 3 * 256 };
    float x[N], y[N];
    int z[4096];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 97) - 40;
    sched_args a = {N, x, y, z};
    char msg[600];
    int code;
    unsigned g3[3] = {3, 1, 1}, b256[3] = {256, 1, 1};
    int rc = sched_run(entry, so, "rev", ST_CUDAEMU_SIG3, g3, b256, &a, NULL, &code, msg,
                       sizeof msg);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != x[(i / 256) * 256 + 255 - i % 256];
    CHECK(rc == 0 && bad == 0, "rev: %d wrong (%s)", bad, msg);

    /* 4 warps as a 32 x 4 block: sums per warp, the odd warps' extra shuffle */
    unsigned g1[3] = {1, 1, 1}, b32x4[3] = {32, 4, 1};
    rc = sched_run(entry, so, "wsum", ST_CUDAEMU_SIG3, g1, b32x4, &a, NULL, &code, msg,
                   sizeof msg);
    bad = 0;
    for (int w = 0; w < 4; w++) {
        double sum = 0;
        for (int l = 0; l < 32; l++)
            sum += x[w * 32 + l];
        for (int l = 0; l < 32; l++)
            bad += y[w * 32 + l] != (float)(sum + (w % 2 ? 1000.0 : 0.0));
    }
    CHECK(rc == 0 && bad == 0, "wsum: %d wrong (%s)", bad, msg);

    unsigned g232[3] = {2, 3, 2}, b423[3] = {4, 2, 3};
    memset(z, 0xff, sizeof z);
    rc = sched_run(entry, so, "coords", ST_CUDAEMU_SIG3, g232, b423, &a, NULL, &code, msg,
                   sizeof msg);
    bad = 0;
    for (int bz = 0; bz < 2; bz++)
        for (int by = 0; by < 3; by++)
            for (int bx = 0; bx < 2; bx++)
                for (int tz = 0; tz < 3; tz++)
                    for (int ty = 0; ty < 2; ty++)
                        for (int tx = 0; tx < 4; tx++) {
                            int bl = bx + 2 * (by + 3 * bz), tb = tx + 4 * (ty + 2 * tz);
                            bad += z[bl * 24 + tb] != bx + 10 * by + 100 * bz + 1000 * tx +
                                                      10000 * ty + 100000 * tz + 5;
                        }
    CHECK(rc == 0 && bad == 0, "coords: %d wrong (%s)", bad, msg);

    int iv = 4242;
    float fv[2] = {0, 2.5f};
    double dv[3] = {0, 0, -7.25};
    rc = sched_run(entry, so, "four_v", ST_CUDAEMU_SIG_VOIDP, g1, b256, &a, &iv, &code, msg,
                   sizeof msg);
    CHECK(rc == 0 && z[0] == 4242, "void * parameter: %d (%s)", z[0], msg);
    rc = sched_run(entry, so, "four_f", ST_CUDAEMU_SIG_FLOATP, g1, b256, &a, fv, &code, msg,
                   sizeof msg);
    CHECK(rc == 0 && y[0] == 2.5f, "const float * parameter: %g (%s)", y[0], msg);
    rc = sched_run(entry, so, "four_d", ST_CUDAEMU_SIG_DOUBLEP, g1, b256, &a, dv, &code, msg,
                   sizeof msg);
    CHECK(rc == 0 && y[0] == -7.25f && code == 7, "const double * parameter: %g, code %d (%s)",
          y[0], code, msg);

    unsigned b64[3] = {64, 1, 1};
    rc = sched_run(entry, so, "deadlock", ST_CUDAEMU_SIG3, g1, b64, &a, NULL, &code, msg,
                   sizeof msg);
    CHECK(rc != 0 && strstr(msg, "deadlock") && strstr(msg, "kernel deadlock"),
          "a deadlock is reported: %s", msg);
    rc = sched_run(entry, so, "gone", ST_CUDAEMU_SIG3, g1, b64, &a, NULL, &code, msg, sizeof msg);
    CHECK(rc != 0 && strstr(msg, "not at this shuffle"), "a shuffle from a returned lane: %s",
          msg);
    rc = sched_run(entry, so, "ptx", ST_CUDAEMU_SIG3, g1, b64, &a, NULL, &code, msg, sizeof msg);
    CHECK(rc != 0 && strstr(msg, "inline PTX"), "inline PTX fails the launch: %s", msg);
    unsigned b2048[3] = {2048, 1, 1};
    rc = sched_run(entry, so, "rev", ST_CUDAEMU_SIG3, g1, b2048, &a, NULL, &code, msg, sizeof msg);
    CHECK(rc != 0 && strstr(msg, "bad launch"), "a block of 2048 threads is refused: %s", msg);
    unsigned gy[3] = {1, 65536, 1};
    rc = sched_run(entry, so, "rev", ST_CUDAEMU_SIG3, gy, b256, &a, NULL, &code, msg, sizeof msg);
    CHECK(rc != 0 && strstr(msg, "bad launch"), "gridDim.y 65536 is refused: %s", msg);
    /* after the failures the scheduler runs again */
    rc = sched_run(entry, so, "rev", ST_CUDAEMU_SIG3, g3, b256, &a, NULL, &code, msg, sizeof msg);
    CHECK(rc == 0, "a launch after failed ones: %s", msg);
    free(sched_stacks);
    sched_stacks = NULL;
}

/* ======================================================================
 * Programs through interp and cudaemu
 * ====================================================================== */

/* ---- tensors ---- */
enum { F_UNIFORM, F_POS, F_INT, F_BOOL, F_NEAR1 };

static void put(char *base, st_dtype t, int64_t i, double v)
{
    switch (t) {
    case ST_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    case ST_UINT8: ((uint8_t *)base)[i] = (uint8_t)(int64_t)v; break;
    case ST_INT8: ((int8_t *)base)[i] = (int8_t)(uint8_t)(int64_t)v; break;
    case ST_INT16: ((int16_t *)base)[i] = (int16_t)(uint16_t)(int64_t)v; break;
    case ST_INT32: ((int32_t *)base)[i] = (int32_t)v; break;
    case ST_INT64: ((int64_t *)base)[i] = (int64_t)v; break;
    case ST_FLOAT16: ((uint16_t *)base)[i] = st_float_to_half((float)v); break;
    case ST_BFLOAT16: ((uint16_t *)base)[i] = st_float_to_bf16((float)v); break;
    case ST_FLOAT32: ((float *)base)[i] = (float)v; break;
    default: ((double *)base)[i] = v; break;
    }
}

static double get(const char *base, st_dtype t, int64_t i)
{
    switch (t) {
    case ST_BOOL: return ((const uint8_t *)base)[i];
    case ST_UINT8: return ((const uint8_t *)base)[i];
    case ST_INT8: return ((const int8_t *)base)[i];
    case ST_INT16: return ((const int16_t *)base)[i];
    case ST_INT32: return ((const int32_t *)base)[i];
    case ST_INT64: return (double)((const int64_t *)base)[i];
    case ST_FLOAT16: return st_half_to_float(((const uint16_t *)base)[i]);
    case ST_BFLOAT16: return st_bf16_to_float(((const uint16_t *)base)[i]);
    case ST_FLOAT32: return ((const float *)base)[i];
    default: return ((const double *)base)[i];
    }
}

static st_tensor *tensor_fill(st_dtype dt, int nd, const int64_t *sh, int fill)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), dt, nd, sh);
    int64_t n = st_tensor_numel(t);
    char *d = st_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        double v = frand();
        switch (fill) {
        case F_POS: v = 0.1 + 1.5 * (v + 1); break;
        case F_INT: v = (double)((int)(rnd() % 11) - 5); break;
        case F_BOOL: v = (double)(rnd() & 1); break;
        case F_NEAR1: v = 1 + 0.05 * v; break;
        default: v *= 2; break;
        }
        put(d, dt, i, v);
    }
    return t;
}

/* element i (row-major over the shape) through t's strides */
static int64_t offset_of(const st_tensor *t, int64_t i)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return off;
}

/* ---- results: each output as doubles and as its contiguous bytes ---- */
typedef struct {
    int n;
    st_dtype dt[8];
    int64_t len[8];
    double *v[8];
    unsigned char *raw[8];
} results;

static void results_free(results *r)
{
    for (int k = 0; k < r->n; k++) {
        free(r->v[k]);
        free(r->raw[k]);
    }
    memset(r, 0, sizeof *r);
}

static void collect(st_tensor *t, results *r)
{
    int k = r->n++;
    int64_t n = t ? st_tensor_numel(t) : 0;
    size_t es = t ? st_dtype_size(t->dtype) : 1;
    r->dt[k] = t ? t->dtype : ST_FLOAT64;
    r->len[k] = n;
    r->v[k] = malloc(sizeof(double) * (size_t)(n + 1));
    r->raw[k] = malloc(es * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        const char *b = st_tensor_data(t);
        int64_t o = offset_of(t, i);
        r->v[k][i] = get(b, t->dtype, o);
        memcpy(r->raw[k] + (size_t)i * es, b + (size_t)o * es, es);
    }
}

/* ---- the launch shim: which path each cudaemu launch takes ---- */
typedef struct {
    int vec, bcast, ew_scalar, unravel, warp_rows, block_rows, col, col_sliced, mm_direct,
        mm_epi, mm_kernel;
} coverage;
static coverage cov;
static const st_kernel *cur_kernels; /* of the program being run */
static int cur_nkernels;

static void note_launch(const st_kernel *k, const st_kargs *a)
{
    int sms = 2;
    if (k->kind == ST_K_ELEMENTWISE) {
        unsigned f = st_nvrtc_ew_flags(k, a);
        if (f & ST_NVRTC_F_VEC)
            cov.vec++;
        else
            cov.ew_scalar++;
        if (f & ~(unsigned)ST_NVRTC_F_VEC)
            cov.bcast++;
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b].unravel > 0) {
                cov.unravel++;
                break;
            }
    } else if (k->kind == ST_K_REDUCE) {
        st_nvrtc_col c;
        st_nvrtc_col_plan(k, &c);
        const char *e = getenv("SYMTRACE_CUDA_COLREDUCE");
        st_nvrtc_launch L = {.col = false};
        if (c.ok && !(e && e[0] == '0'))
            L = st_nvrtc_col_config(k, a, sms);
        if (L.col) {
            cov.col++;
            cov.col_sliced += L.grid[1] > 1;
        } else {
            L = st_nvrtc_launch_config(k, a, sms, 90);
            if (L.block[0] == 32)
                cov.warp_rows++;
            else
                cov.block_rows++;
        }
    } else if (k->kind == ST_K_MATMUL) {
        const char *e = getenv("SYMTRACE_CUBLAS");
        st_nvrtc_gemm p;
        memset(&p, 0, sizeof p);
        if (st_nvrtc_has_epi(k) && !(e && e[0] == '0'))
            st_nvrtc_gemm_plan(k, a, &p);
        if (p.ok && p.direct)
            cov.mm_direct++;
        else if (p.ok)
            cov.mm_epi++;
        else
            cov.mm_kernel++;
    }
}

static st_status shim_launch(st_backend *be, void *h, int index, const st_kargs *a)
{
    (void)be;
    if (cur_kernels && index >= 0 && index < cur_nkernels)
        note_launch(&cur_kernels[index], a);
    return EB->launch(EB, h, index, a);
}

static st_backend shim_be = {.name = "cudaemu-shim", .device = ST_DEV_CPU,
                             .launch = shim_launch};

/* Runs p (compiled by be into h; launches through launch_be) on ins; the
 * outputs into r (and, when outs, owned references into outs). */
static st_status exec_prog(st_kprog *p, st_backend *launch_be, void *h, st_tensor **ins,
                           results *r, st_tensor **outs)
{
    memset(r, 0, sizeof *r);
    st_graph *g = p->graph;
    st_tensor **vals = calloc((size_t)g->nvalues, sizeof *vals);
    for (int i = 0; i < g->ninputs; i++) {
        vals[g->inputs[i]] = ins[i];
        st_tensor_incref(ins[i]);
    }
    st_rt_manual_seed(1234);
    cur_kernels = p->kernels;
    cur_nkernels = p->nkernels;
    st_status s = st_rt_exec(p, launch_be, h, vals);
    cur_kernels = NULL;
    for (int k = 0; s == ST_OK && k < g->noutputs && k < 8; k++) {
        st_tensor *t = vals[g->outputs[k]];
        collect(t, r);
        if (outs) {
            outs[k] = t;
            st_tensor_incref(t);
        }
    }
    for (int v = 0; v < g->nvalues; v++)
        if (vals[v])
            st_tensor_decref(vals[v]);
    free(vals);
    return s;
}

/* Lowers g, compiles it with be (cudaemu launches through the shim), runs. */
static st_status run_graph(const st_graph *g, const st_fuse_options *o, st_backend *be,
                           st_tensor **ins, results *r, st_tensor **outs)
{
    memset(r, 0, sizeof *r);
    st_kprog *p = st_fuse_lower(g, o);
    if (!p)
        return st_err_kind();
    void *h = be->compile(be, p->kernels, p->nkernels);
    st_status s = h ? exec_prog(p, be == EB ? &shim_be : be, h, ins, r, outs) : st_err_kind();
    if (h)
        be->release(be, h);
    st_kprog_free(p);
    return s;
}

/* Compares cudaemu's results e with interp's i: rtol < 0 bit for bit;
 * else float outputs within rtol (plus rtol times the output's largest
 * magnitude: sums in another order), others bit for bit. */
static bool same(const results *e, const results *i, double rtol, char *msg, size_t mn)
{
    if (e->n != i->n) {
        snprintf(msg, mn, "%d outputs vs %d", e->n, i->n);
        return false;
    }
    for (int k = 0; k < e->n; k++) {
        if (e->len[k] != i->len[k] || e->dt[k] != i->dt[k]) {
            snprintf(msg, mn, "output %d: %lld %s vs %lld %s", k, (long long)e->len[k],
                     st_dtype_name(e->dt[k]), (long long)i->len[k], st_dtype_name(i->dt[k]));
            return false;
        }
        bool fl = st_dtype_is_float(i->dt[k]) && rtol >= 0;
        size_t es = st_dtype_size(i->dt[k]);
        double scale = 1;
        for (int64_t j = 0; fl && j < i->len[k]; j++)
            if (isfinite(i->v[k][j]) && fabs(i->v[k][j]) > scale)
                scale = fabs(i->v[k][j]);
        for (int64_t j = 0; j < i->len[k]; j++) {
            double x = e->v[k][j], y = i->v[k][j];
            bool ok;
            if (!fl)
                ok = memcmp(e->raw[k] + (size_t)j * es, i->raw[k] + (size_t)j * es, es) == 0;
            else if (isnan(x) || isnan(y))
                ok = isnan(x) && isnan(y);
            else if (isinf(x) || isinf(y))
                ok = x == y;
            else
                ok = fabs(x - y) <= rtol * (fabs(y) + scale);
            if (!ok) {
                snprintf(msg, mn, "output %d (%s) element %lld: cudaemu %.17g, interp %.17g", k,
                         st_dtype_name(i->dt[k]), (long long)j, x, y);
                return false;
            }
        }
    }
    return true;
}

/* ---- a case: a graph and its input tensors ---- */
typedef struct {
    st_graph *g;
    st_tensor *ins[8];
    int nin;
} gcase;

static void gc_init(gcase *c)
{
    memset(c, 0, sizeof *c);
    c->g = st_ir_graph_new();
}

static void gc_free(gcase *c)
{
    for (int i = 0; i < c->nin; i++)
        st_tensor_decref(c->ins[i]);
    st_ir_graph_free(c->g);
}

/* an input of the graph filled by `fill` */
static int gin(gcase *c, st_dtype dt, int nd, const int64_t *sh, int fill)
{
    c->ins[c->nin++] = tensor_fill(dt, nd, sh, fill);
    return input(c->g, dt, nd, sh);
}

/* an input given as tensor t (taken: a permuted view, special values) */
static int gin_t(gcase *c, st_tensor *t)
{
    c->ins[c->nin++] = t;
    return input(c->g, t->dtype, t->ndim, t->shape);
}

static st_fuse_options fused = {1, 1, 1, 0};

static int reduce_of(st_graph *g, st_op_id op, int x, int nd, const int *dims, bool keep)
{
    st_attrs a = attrs0();
    for (int i = 0; i < nd; i++)
        a.dims[i] = dims[i];
    a.ndims = nd;
    a.flags = keep ? ST_ATTR_KEEPDIM : 0;
    return stmt(g, op, &x, 1, &a);
}

static int permute_of(st_graph *g, int x, int nd, const int *perm)
{
    st_attrs a = attrs0();
    for (int i = 0; i < nd; i++)
        a.dims[i] = perm[i];
    a.ndims = nd;
    return stmt(g, ST_OP_PERMUTE, &x, 1, &a);
}

static int reshape_of(st_graph *g, int x, int nd, const int64_t *sh)
{
    st_attrs a = attrs0();
    for (int i = 0; i < nd; i++)
        a.dims[i] = sh[i];
    a.ndims = nd;
    return stmt(g, ST_OP_RESHAPE, &x, 1, &a);
}

/* Runs c's graph (outputs marked) with both backends and compares. */
static void check_case(const char *label, gcase *c, const st_fuse_options *o, double rtol)
{
    results re, ri;
    st_status si = run_graph(c->g, o, IB, c->ins, &ri, NULL);
    char imsg[300];
    snprintf(imsg, sizeof imsg, "%s", st_err_msg());
    st_err_clear();
    st_status se = run_graph(c->g, o, EB, c->ins, &re, NULL);
    char msg[400];
    if (si != ST_OK || se != ST_OK)
        CHECK(false, "%s: interp %d (%s), cudaemu %d", label, si, imsg, se);
    else
        CHECK(same(&re, &ri, rtol, msg, sizeof msg), "%s: %s", label, msg);
    st_err_clear();
    results_free(&re);
    results_free(&ri);
}

/* ---- elementwise ---- */
static void test_elementwise(void)
{
    coverage c0 = cov;
    {   /* the vector path: contiguous inputs, a broadcast 0-d scalar, a
         * tail of 3 points; transcendental math */
        gcase c;
        gc_init(&c);
        int64_t sh[2] = {5, 1003};
        int x = gin(&c, ST_FLOAT32, 2, sh, F_UNIFORM), y = gin(&c, ST_FLOAT32, 2, sh, F_POS);
        int s = gin(&c, ST_FLOAT32, 0, NULL, F_UNIFORM);
        int v = bin(c.g, ST_OP_MUL, un(c.g, ST_OP_TANH, x), un(c.g, ST_OP_EXP, un(c.g, ST_OP_NEG, y)));
        v = bin(c.g, ST_OP_ADD, v, bin(c.g, ST_OP_MUL, un(c.g, ST_OP_ERF, x), s));
        v = bin(c.g, ST_OP_ADD, v, un(c.g, ST_OP_LOG, y));
        v = bin(c.g, ST_OP_SUB, v, un(c.g, ST_OP_RSQRT, y));
        v = bin(c.g, ST_OP_ADD, v, un(c.g, ST_OP_SIGMOID, bin(c.g, ST_OP_POW, y, x)));
        st_ir_mark_output(c.g, v);
        st_ir_mark_output(c.g, bin(c.g, ST_OP_GT, x, s));
        check_case("elementwise vector path f32", &c, &fused, 2e-6);
        gc_free(&c);
    }
    {   /* float64 and float16/bfloat16 vector paths (8 points a thread) */
        st_dtype dts[3] = {ST_FLOAT64, ST_FLOAT16, ST_BFLOAT16};
        for (int d = 0; d < 3; d++) {
            gcase c;
            gc_init(&c);
            int64_t sh[2] = {3, 517};
            int x = gin(&c, dts[d], 2, sh, F_UNIFORM), y = gin(&c, dts[d], 2, sh, F_UNIFORM);
            int v = bin(c.g, ST_OP_ADD, bin(c.g, ST_OP_MUL, x, y), un(c.g, ST_OP_RELU, y));
            v = bin(c.g, ST_OP_MAXIMUM, v, un(c.g, ST_OP_SIN, x));
            st_ir_mark_output(c.g, v);
            st_ir_mark_output(c.g, un(c.g, ST_OP_FLOOR, bin(c.g, ST_OP_MUL, x, y)));
            char label[64];
            snprintf(label, sizeof label, "elementwise vector path %s", st_dtype_name(dts[d]));
            check_case(label, &c, &fused, dts[d] == ST_FLOAT64 ? 1e-13 : 2e-3);
            gc_free(&c);
        }
    }
    {   /* integers and bools: bit for bit */
        gcase c;
        gc_init(&c);
        int64_t sh[2] = {4, 77};
        int a = gin(&c, ST_INT64, 2, sh, F_INT), b = gin(&c, ST_INT64, 2, sh, F_INT);
        int m = gin(&c, ST_BOOL, 2, sh, F_BOOL), i32 = gin(&c, ST_INT32, 2, sh, F_INT);
        st_ir_mark_output(c.g, bin(c.g, ST_OP_FLOOR_DIVIDE, a, b));
        st_ir_mark_output(c.g, bin(c.g, ST_OP_REMAINDER, a, b));
        st_ir_mark_output(c.g, bin(c.g, ST_OP_POW, a, un(c.g, ST_OP_ABS, b)));
        int w_in[3] = {m, bin(c.g, ST_OP_MAXIMUM, a, i32), bin(c.g, ST_OP_MUL, b, i32)};
        st_ir_mark_output(c.g, stmt(c.g, ST_OP_WHERE, w_in, 3, NULL));
        st_ir_mark_output(c.g, bin(c.g, ST_OP_LOGICAL_AND, m, bin(c.g, ST_OP_LT, a, b)));
        st_ir_mark_output(c.g, un(c.g, ST_OP_LOGICAL_NOT, bin(c.g, ST_OP_NE, i32, b)));
        check_case("elementwise integers and bools", &c, &fused, -1);
        gc_free(&c);
    }
    {   /* the strided scalar path: a transposed input, a broadcast row */
        gcase c;
        gc_init(&c);
        int64_t sh[2] = {33, 7}, shb[1] = {33};
        int64_t perm[2] = {1, 0};
        st_tensor *base = tensor_fill(ST_FLOAT32, 2, sh, F_UNIFORM);
        st_tensor *xt = st_tensor_permute(base, perm);
        st_tensor_decref(base);
        int x = gin_t(&c, xt), b = gin(&c, ST_FLOAT32, 1, shb, F_UNIFORM);
        int v = bin(c.g, ST_OP_ADD, bin(c.g, ST_OP_MUL, x, b), un(c.g, ST_OP_COS, x));
        st_ir_mark_output(c.g, v);
        check_case("elementwise strided + broadcast", &c, &fused, 2e-6);
        gc_free(&c);
    }
    {   /* unravel loads: a reshape of a permuted view, flattened */
        gcase c;
        gc_init(&c);
        int64_t sh[3] = {6, 10, 3}, sh2[2] = {9, 20}, shy[2] = {9, 20};
        int x = gin(&c, ST_FLOAT32, 3, sh, F_UNIFORM), y = gin(&c, ST_FLOAT32, 2, shy, F_UNIFORM);
        int p[3] = {1, 2, 0};
        int r = reshape_of(c.g, permute_of(c.g, x, 3, p), 2, sh2);
        st_ir_mark_output(c.g, bin(c.g, ST_OP_ADD, un(c.g, ST_OP_EXP, r), y));
        check_case("elementwise unravel loads", &c, &fused, 2e-6);
        gc_free(&c);
    }
    CHECK(cov.vec > c0.vec && cov.bcast > c0.bcast && cov.ew_scalar > c0.ew_scalar &&
          cov.unravel > c0.unravel, "elementwise paths: vec %d bcast %d scalar %d unravel %d",
          cov.vec - c0.vec, cov.bcast - c0.bcast, cov.ew_scalar - c0.ew_scalar,
          cov.unravel - c0.unravel);
}

/* ---- row reductions ---- */
static void test_reductions(void)
{
    coverage c0 = cov;
    /* warp rows (R <= 256) and block rows of 128, 256, 512, 1024 threads */
    static const int64_t shapes[5][2] = {{37, 100}, {3, 3000}, {2, 9000}, {2, 20000}, {1, 40000}};
    static const st_op_id ops[5] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN, ST_OP_PROD};
    int last[1] = {-1};
    for (int si = 0; si < 5; si++) {
        gcase c;
        gc_init(&c);
        int x = gin(&c, ST_FLOAT32, 2, shapes[si], F_UNIFORM);
        int d = gin(&c, ST_FLOAT64, 2, shapes[si], F_NEAR1);
        int i = gin(&c, ST_INT64, 2, shapes[si], F_INT);
        for (int o = 0; o < 5; o++)
            st_ir_mark_output(c.g, reduce_of(c.g, ops[o], o == 4 ? d : x, 1, last, o == 1));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_SUM, d, 1, last, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_SUM, i, 1, last, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_AMAX, i, 1, last, true));
        char label[80];
        snprintf(label, sizeof label, "row reductions [%lld, %lld]", (long long)shapes[si][0],
                 (long long)shapes[si][1]);
        check_case(label, &c, &fused, 1e-6);
        gc_free(&c);
    }
    {   /* a fused softmax-like row: max, exp, sum, divide (several
         * reductions in one kernel), and the whole tensor reduced */
        gcase c;
        gc_init(&c);
        int64_t sh[2] = {11, 300};
        int x = gin(&c, ST_FLOAT32, 2, sh, F_UNIFORM);
        int m = reduce_of(c.g, ST_OP_AMAX, x, 1, last, true);
        int e = un(c.g, ST_OP_EXP, bin(c.g, ST_OP_SUB, x, m));
        st_ir_mark_output(c.g, bin(c.g, ST_OP_DIV, e, reduce_of(c.g, ST_OP_SUM, e, 1, last, true)));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_SUM, x, 0, NULL, false));
        check_case("fused max/exp/sum rows, a full reduction", &c, &fused, 1e-6);
        gc_free(&c);
    }
    CHECK(cov.warp_rows > c0.warp_rows && cov.block_rows > c0.block_rows,
          "reduction paths: warp rows %d, block rows %d", cov.warp_rows - c0.warp_rows,
          cov.block_rows - c0.block_rows);
}

/* ---- arg-max/min: NaN first (the first NaN wins), ties to the lower
 * index, on warp rows and block rows, floats and integers ---- */
static void test_argreduce(void)
{
    static const int64_t shapes[2][2] = {{9, 50}, {4, 1500}};
    int last[1] = {-1}, first[1] = {0};
    for (int si = 0; si < 2; si++) {
        gcase c;
        gc_init(&c);
        int64_t R = shapes[si][1], rows = shapes[si][0];
        st_tensor *t = tensor_fill(ST_FLOAT32, 2, shapes[si], F_INT);  /* many ties */
        float *f = st_tensor_data(t);
        f[0 * R + R / 2] = NAN;                 /* row 0: one NaN */
        f[1 * R + 3] = NAN;                     /* row 1: two NaNs */
        f[1 * R + R - 2] = NAN;
        for (int64_t j = 0; j < R; j++)         /* row 2: all equal */
            f[2 * R + j] = 1.5f;
        f[3 * R + R - 1] = INFINITY;            /* row 3: +inf last, -inf first */
        f[3 * R + 0] = -INFINITY;
        if (rows > 4)
            f[4 * R + R - 1] = NAN;             /* row 4: NaN at the end */
        int x = gin_t(&c, t);
        int xi = gin(&c, ST_INT64, 2, shapes[si], F_INT);
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_ARGMAX, x, 1, last, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_ARGMIN, x, 1, last, true));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_ARGMAX, xi, 1, last, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_ARGMIN, xi, 1, first, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_ARGMAX, x, 1, first, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_AMAX, x, 1, last, false));
        st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_AMIN, x, 1, last, false));
        char label[80];
        snprintf(label, sizeof label, "argmax/argmin with NaN and ties [%lld, %lld]",
                 (long long)rows, (long long)R);
        check_case(label, &c, &fused, -1);
        gc_free(&c);
    }
}

/* ---- composites: softmax, log_softmax, layer_norm, forward and backward ---- */

/* fwd's outputs and the gradients of wrt[] (for random output gradients)
 * through both backends: the forward that saves what the backward reads
 * runs on interp, its saved values feed the backward on both */
static void check_fwd_bwd(const char *label, gcase *c, const int *wrt, int nwrt, double rtol)
{
    check_case(label, c, &fused, rtol);
    st_graph *bwd = NULL;
    st_ir_bwd_info info;
    int outs[8], nouts = c->g->noutputs;
    for (int k = 0; k < nouts; k++)
        outs[k] = c->g->outputs[k];
    st_status s = st_ir_backward_multi(c->g, wrt, nwrt, outs, nouts, &bwd, &info);
    CHECK(s == ST_OK, "%s: backward graph", label);
    if (s != ST_OK)
        return;
    st_graph *fw = st_ir_forward_saving(c->g, &info);
    results r;
    st_tensor *fo[8] = {NULL};
    s = fw ? run_graph(fw, &fused, IB, c->ins, &r, fo) : st_err_kind();
    CHECK(s == ST_OK, "%s: the saving forward", label);
    results_free(&r);
    gcase b;
    memset(&b, 0, sizeof b);
    b.g = bwd;
    for (int k = 0; s == ST_OK && k < info.nsaved; k++) {
        int v = info.saved[k], src = -1;
        for (int o = 0; o < fw->noutputs; o++)
            if (o >= c->g->noutputs && fw->outputs[o] == v)
                src = o;
        for (int i = 0; src < 0 && i < c->g->ninputs; i++)
            if (c->g->inputs[i] == v)
                b.ins[b.nin] = c->ins[i], st_tensor_incref(c->ins[i]), src = 99;
        if (src >= 0 && src < 99)
            b.ins[b.nin] = fo[src], st_tensor_incref(fo[src]);
        CHECK(src >= 0, "%s: saved value %d found", label, v);
        b.nin++;
    }
    for (int k = 0; s == ST_OK && k < nouts; k++) {
        const st_meta *m = &c->g->values[outs[k]].meta;
        b.ins[b.nin++] = tensor_fill(m->dtype, m->ndim, m->shape, F_UNIFORM);
    }
    char bl[120];
    snprintf(bl, sizeof bl, "%s (backward)", label);
    if (s == ST_OK && b.nin == bwd->ninputs)
        check_case(bl, &b, &fused, rtol);
    else
        CHECK(false, "%s: %d backward inputs for %d", label, b.nin, bwd->ninputs);
    for (int k = 0; k < 8; k++)
        if (fo[k])
            st_tensor_decref(fo[k]);
    b.g = NULL;
    for (int i = 0; i < b.nin; i++)
        st_tensor_decref(b.ins[i]);
    st_ir_graph_free(bwd);
    st_ir_graph_free(fw);
    st_ir_bwd_info_clear(&info);
}

static void test_composites(void)
{
    coverage c0 = cov;
    {
        gcase c;
        gc_init(&c);
        int64_t sh[2] = {13, 77};
        int x = gin(&c, ST_FLOAT32, 2, sh, F_UNIFORM);
        st_attrs a = attrs0();
        a.i[0] = 1;
        st_ir_mark_output(c.g, stmt(c.g, ST_OP_SOFTMAX, &x, 1, &a));
        a.i[0] = 0;
        st_ir_mark_output(c.g, stmt(c.g, ST_OP_LOG_SOFTMAX, &x, 1, &a));
        check_fwd_bwd("softmax / log_softmax", &c, &x, 1, 2e-6);
        gc_free(&c);
    }
    {   /* layer_norm over H of [B, S, H] with weight and bias: the backward
         * has the weight and bias gradients as column reductions */
        static const int64_t shs[2][3] = {{4, 16, 96}, {2, 3, 700}};
        for (int i = 0; i < 2; i++) {
            gcase c;
            gc_init(&c);
            int64_t hw[1] = {shs[i][2]};
            int x = gin(&c, ST_FLOAT32, 3, shs[i], F_UNIFORM);
            int w = gin(&c, ST_FLOAT32, 1, hw, F_POS), b = gin(&c, ST_FLOAT32, 1, hw, F_UNIFORM);
            st_attrs a = attrs0();
            a.ndims = 1;
            a.f[0] = 1e-5;
            a.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
            int in[3] = {x, w, b};
            st_ir_mark_output(c.g, stmt(c.g, ST_OP_LAYER_NORM, in, 3, &a));
            int wrt[3] = {x, w, b};
            char label[80];
            snprintf(label, sizeof label, "layer_norm [%lld, %lld, %lld]", (long long)shs[i][0],
                     (long long)shs[i][1], (long long)shs[i][2]);
            check_fwd_bwd(label, &c, wrt, 3, 1e-5);
            gc_free(&c);
        }
    }
    CHECK(cov.col > c0.col, "the layer_norm backward ran NAME_col (%d)", cov.col - c0.col);
}

/* ---- column reductions (NAME_col) ---- */
static void test_colreduce(void)
{
    coverage c0 = cov;
    static const int64_t shapes[3][3] = {{8, 64, 48}, {4096, 1, 20}, {2, 16, 256}};
    static const st_op_id ops[4] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN};
    for (int pass = 0; pass < 2; pass++) {   /* NAME_col, then the row kernels */
        if (pass)
            setenv("SYMTRACE_CUDA_COLREDUCE", "0", 1);
        for (int si = 0; si < 3; si++)
            for (int o = 0; o < 4; o++) {
                gcase c;
                gc_init(&c);
                int x = gin(&c, ST_FLOAT32, 3, shapes[si], F_UNIFORM);
                int y = gin(&c, ST_FLOAT32, 3, shapes[si], F_UNIFORM);
                int dims[2] = {0, 1};
                /* a prologue read per row point, an epilogue per column */
                int v = bin(c.g, ST_OP_MUL, x, un(c.g, ST_OP_TANH, y));
                int r = reduce_of(c.g, ops[o], v, 2, dims, false);
                st_ir_mark_output(c.g, bin(c.g, ST_OP_MUL, r, r));
                if (o == 0) /* a second column reduction over dim 0 only */
                    st_ir_mark_output(c.g, reduce_of(c.g, ST_OP_SUM, x, 1, dims, true));
                char label[100];
                snprintf(label, sizeof label, "column %s [%lld, %lld, %lld]%s",
                         st_op(ops[o])->name, (long long)shapes[si][0], (long long)shapes[si][1],
                         (long long)shapes[si][2], pass ? " (SYMTRACE_CUDA_COLREDUCE=0)" : "");
                check_case(label, &c, &fused, 1e-6);
                gc_free(&c);
            }
        if (pass == 0)
            CHECK(cov.col > c0.col && cov.col_sliced > c0.col_sliced,
                  "column paths: NAME_col %d, sliced over gridDim.y %d", cov.col - c0.col,
                  cov.col_sliced - c0.col_sliced);
        c0 = cov;
    }
    unsetenv("SYMTRACE_CUDA_COLREDUCE");
    CHECK(cov.col == c0.col, "SYMTRACE_CUDA_COLREDUCE=0: no NAME_col launch");
}

/* ---- gathers: a valid one bit for bit, an index out of bounds raises
 * as on the GPU ---- */
static void test_gather(void)
{
    for (int bad = 0; bad < 2; bad++) {
        gcase c;
        gc_init(&c);
        int64_t sx[2] = {5, 3}, si[2] = {4, 3};
        int x = gin(&c, ST_FLOAT32, 2, sx, F_UNIFORM);
        st_tensor *it = st_tensor_empty(st_rt_cpu(), ST_INT64, 2, si);
        int64_t *iv = st_tensor_data(it);
        for (int i = 0; i < 12; i++)
            iv[i] = (i * 7) % 5;
        if (bad)
            iv[7] = 7;
        int idx = gin_t(&c, it);
        st_attrs a = attrs0();
        a.i[0] = 0;
        int in[2] = {x, idx};
        st_ir_mark_output(c.g, bin(c.g, ST_OP_MUL, stmt(c.g, ST_OP_GATHER, in, 2, &a), x));
        if (!bad) {
            check_case("gather", &c, &fused, -1);
        } else {
            results ri, re;
            st_status si_ = run_graph(c.g, &fused, IB, c.ins, &ri, NULL);
            char imsg[300];
            snprintf(imsg, sizeof imsg, "%s", st_err_msg());
            st_err_clear();
            st_status se = run_graph(c.g, &fused, EB, c.ins, &re, NULL);
            CHECK(si_ == ST_ERR_INDEX && se == ST_ERR_INDEX &&
                  strstr(st_err_msg(), "index 7 is out of bounds for dimension 0 with size 5"),
                  "gather out of bounds: interp %d (%s), cudaemu %d", si_, imsg, se);
            st_err_clear();
            results_free(&ri);
            results_free(&re);
        }
        gc_free(&c);
    }
}

/* ---- matmuls ---- */
static void test_matmul(void)
{
    coverage c0 = cov;
    {   /* a plain product: the plan writes the output directly */
        gcase c;
        gc_init(&c);
        int64_t sa[2] = {33, 20}, sb[2] = {20, 17};
        int a = gin(&c, ST_FLOAT32, 2, sa, F_UNIFORM), b = gin(&c, ST_FLOAT32, 2, sb, F_UNIFORM);
        st_ir_mark_output(c.g, bin(c.g, ST_OP_MATMUL, a, b));
        check_case("matmul direct", &c, &fused, 1e-5);
        gc_free(&c);
    }
    {   /* linear + bias + GELU: the product into the scratch, NAME_epi;
         * then the same with SYMTRACE_CUBLAS=0: the NVRTC kernel (several
         * 64x64 tiles) */
        for (int pass = 0; pass < 2; pass++) {
            gcase c;
            gc_init(&c);
            int64_t sx[3] = {2, 45, 40}, sw[2] = {130, 40}, sb[1] = {130};
            int x = gin(&c, ST_FLOAT32, 3, sx, F_UNIFORM), w = gin(&c, ST_FLOAT32, 2, sw, F_UNIFORM);
            int b = gin(&c, ST_FLOAT32, 1, sb, F_UNIFORM);
            st_attrs a = attrs0();
            a.flags = ST_ATTR_HAS_BIAS;
            int in[3] = {x, w, b};
            int l = stmt(c.g, ST_OP_LINEAR, in, 3, &a);
            st_ir_mark_output(c.g, stmt(c.g, ST_OP_GELU, &l, 1, NULL));
            if (pass)
                setenv("SYMTRACE_CUBLAS", "0", 1);
            check_case(pass ? "linear + bias + gelu (SYMTRACE_CUBLAS=0)"
                            : "linear + bias + gelu (plan + _epi)", &c, &fused, 1e-5);
            unsetenv("SYMTRACE_CUBLAS");
            gc_free(&c);
        }
    }
    {   /* attention scores over permuted views, then softmax and @ v */
        gcase c;
        gc_init(&c);
        int64_t sq[4] = {2, 5, 3, 4};
        int q = gin(&c, ST_FLOAT32, 4, sq, F_UNIFORM), k = gin(&c, ST_FLOAT32, 4, sq, F_UNIFORM);
        int v = gin(&c, ST_FLOAT32, 4, sq, F_UNIFORM);
        int p0[4] = {0, 2, 1, 3}, pk[4] = {0, 2, 3, 1};
        int qp = permute_of(c.g, q, 4, p0), kp = permute_of(c.g, k, 4, pk);
        int vp = permute_of(c.g, v, 4, p0);
        int sc = bin(c.g, ST_OP_MATMUL, qp, kp);
        st_attrs a = attrs0();
        a.i[0] = 3;
        int pr = stmt(c.g, ST_OP_SOFTMAX, &sc, 1, &a);
        st_ir_mark_output(c.g, bin(c.g, ST_OP_MATMUL, pr, vp));
        check_case("attention over permuted views", &c, &fused, 1e-5);
        gc_free(&c);
    }
    {   /* float16 (into a float16 output) and float64 */
        st_dtype dts[2] = {ST_FLOAT16, ST_FLOAT64};
        for (int d = 0; d < 2; d++) {
            gcase c;
            gc_init(&c);
            int64_t sa[2] = {16, 24}, sb[2] = {24, 8};
            int a = gin(&c, dts[d], 2, sa, F_UNIFORM), b = gin(&c, dts[d], 2, sb, F_UNIFORM);
            st_ir_mark_output(c.g, bin(c.g, ST_OP_MATMUL, a, b));
            st_ir_mark_output(c.g, un(c.g, ST_OP_RELU, bin(c.g, ST_OP_MATMUL, a, b)));
            char label[64];
            snprintf(label, sizeof label, "matmul %s", st_dtype_name(dts[d]));
            check_case(label, &c, &fused, dts[d] == ST_FLOAT16 ? 2e-3 : 1e-12);
            gc_free(&c);
        }
    }
    {   /* integers: the NVRTC kernel, bit for bit */
        gcase c;
        gc_init(&c);
        int64_t sa[3] = {3, 7, 70}, sb[2] = {70, 66};
        int a = gin(&c, ST_INT64, 3, sa, F_INT), b = gin(&c, ST_INT64, 2, sb, F_INT);
        st_ir_mark_output(c.g, bin(c.g, ST_OP_MATMUL, a, b));
        check_case("matmul int64", &c, &fused, -1);
        gc_free(&c);
    }
    CHECK(cov.mm_direct > c0.mm_direct && cov.mm_epi > c0.mm_epi && cov.mm_kernel > c0.mm_kernel,
          "matmul paths: direct %d, _epi %d, NVRTC kernel %d", cov.mm_direct - c0.mm_direct,
          cov.mm_epi - c0.mm_epi, cov.mm_kernel - c0.mm_kernel);
}

/* ---- random numbers: the same Philox counters, bit for bit ---- */
static void test_random(void)
{
    st_dtype dts[4] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16, ST_BFLOAT16};
    for (int d = 0; d < 4; d++) {
        gcase c;
        gc_init(&c);
        int64_t sh[2] = {37, 129};
        int x = gin(&c, dts[d], 2, sh, F_UNIFORM);
        st_attrs a = attrs0();
        a.f[0] = 0.3;
        st_ir_mark_output(c.g, stmt(c.g, ST_OP_DROPOUT, &x, 1, &a));
        a = attrs0();
        a.dims[0] = 5;
        a.dims[1] = 1001;
        a.ndims = 2;
        a.dtype = dts[d];
        a.f[0] = -1;
        a.f[1] = 3;
        st_ir_mark_output(c.g, stmt(c.g, ST_OP_RAND, NULL, 0, &a));
        a.f[0] = 0;
        a.f[1] = 1;
        st_ir_mark_output(c.g, stmt(c.g, ST_OP_RANDN, NULL, 0, &a));
        char label[64];
        snprintf(label, sizeof label, "dropout, rand, randn %s", st_dtype_name(dts[d]));
        check_case(label, &c, &fused, -1);
        gc_free(&c);
    }
}

/* ---- random DAGs (random_graph.h) under two fusion settings each ----
 * The distinct kernels of a batch of graphs (the same rendered code and
 * buffer layout) are compiled as one list: one object per batch. */
#define BATCH 20
static uint64_t base_seed = 20250101;

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static st_tensor *rg_tensor(st_dtype dt, int ndim, const int64_t *shape)
{
    return tensor_fill(dt, ndim, shape, F_UNIFORM);
}

typedef struct {
    st_kernel *ks;    /* owned copies */
    char **key;       /* rendered text, then the buffer layout */
    size_t *klen;
    int n, cap;
} ktable;

/* k's entry in t (added when new) */
static int intern(ktable *t, const st_kernel *k)
{
    st_kernel c = *k;
    snprintf(c.name, sizeof c.name, "u");
    for (int b = 0; b < ST_K_MAX_BUFS; b++)
        c.bufs[b].value = c.bufs[b].view_value = 0;
    char *src = st_nvrtc_render(&c, 1);
    if (!src)
        return -1;
    size_t n = strlen(src), kl = n + sizeof c.bufs;
    char *key = malloc(kl);
    memcpy(key, src, n);
    memcpy(key + n, c.bufs, sizeof c.bufs);
    free(src);
    for (int i = 0; i < t->n; i++)
        if (t->klen[i] == kl && memcmp(t->key[i], key, kl) == 0) {
            free(key);
            return i;
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ks = realloc(t->ks, sizeof *t->ks * (size_t)t->cap);
        t->key = realloc(t->key, sizeof *t->key * (size_t)t->cap);
        t->klen = realloc(t->klen, sizeof *t->klen * (size_t)t->cap);
    }
    c.nodes = malloc(sizeof *c.nodes * (size_t)(k->nnodes + 1));
    if (k->nnodes > 0)
        memcpy(c.nodes, k->nodes, sizeof *c.nodes * (size_t)k->nnodes);
    c.cap_nodes = k->nnodes;
    t->ks[t->n] = c;
    t->key[t->n] = key;
    t->klen[t->n] = kl;
    return t->n++;
}

static void ktable_free(ktable *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->ks[i].nodes);
        free(t->key[i]);
    }
    free(t->ks);
    free(t->key);
    free(t->klen);
    memset(t, 0, sizeof *t);
}

/* launches of a program mapped to the batch's compiled lists: kernels
 * [0, batch_split) in batch_handle[0], the rest in batch_handle[1] (a
 * large batch compiles as two objects at once: this machine has 2 cores) */
static void *batch_handle[2];
static int batch_split;
static const int *batch_map;

static st_status batch_launch(st_backend *be, void *h, int index, const st_kargs *a)
{
    (void)be;
    (void)h;
    int u = batch_map[index];
    if (u < 0)
        return ST_OK;
    if (cur_kernels)
        note_launch(&cur_kernels[index], a);
    return u < batch_split ? EB->launch(EB, batch_handle[0], u, a)
                           : EB->launch(EB, batch_handle[1], u - batch_split, a);
}

typedef struct {
    const st_kernel *ks;
    int n;
    void *h;
    char err[400];
} compile_job;

static void *compile_thread(void *p)
{
    compile_job *j = p;
    j->h = j->n > 0 ? EB->compile(EB, j->ks, j->n) : NULL;
    snprintf(j->err, sizeof j->err, "%s", j->h || j->n == 0 ? "" : st_err_msg());
    st_err_clear();
    return NULL;
}

static st_backend batch_be = {.name = "cudaemu-batch", .device = ST_DEV_CPU,
                              .launch = batch_launch};

/* A program of a batch: its graph and inputs (the caller's), the
 * tolerance (as same()); errors_agree: both backends may fail, with the
 * same status and message (an index out of range). */
typedef struct {
    char label[200];
    const st_graph *g;
    st_tensor **ins;
    st_kprog *p;
    double rtol;
    bool errors_agree;
    int *map;
} bprog;

static void report(const bprog *b, const char *what)
{
    printf("FAIL %s: %s (err: %s)\n", b->label, what, st_err_msg());
    char *s = st_ir_print(b->g);
    printf("%s\n", s ? s : "");
    free(s);
    for (int i = 0; b->p && i < b->p->nkernels; i++) {
        char *ks = st_kernel_print(&b->p->kernels[i]);
        printf("%s", ks ? ks : "");
        free(ks);
    }
    st_test_failures++;
}

/* Runs the programs of ps[0..n) with interp and with cudaemu, their
 * distinct kernels compiled as one list; returns how many there were. */
static int run_batch(bprog *ps, int n)
{
    ktable t = {0};
    for (int j = 0; j < n; j++) {
        st_kprog *p = ps[j].p;
        ps[j].map = malloc(sizeof(int) * (size_t)(p->nkernels + 1));
        for (int i = 0; i < p->nkernels; i++)
            ps[j].map[i] = p->kernels[i].kind == ST_K_VIEW ? -1 : intern(&t, &p->kernels[i]);
    }
    batch_split = t.n >= 64 ? t.n / 2 : t.n;
    compile_job jobs[2] = {{t.ks, batch_split, NULL, ""},
                           {t.ks + batch_split, t.n - batch_split, NULL, ""}};
    pthread_t th;
    bool threaded = jobs[1].n > 0 && pthread_create(&th, NULL, compile_thread, &jobs[1]) == 0;
    compile_thread(&jobs[0]);
    if (threaded)
        pthread_join(th, NULL);
    else
        compile_thread(&jobs[1]);
    bool ok = jobs[0].h && (jobs[1].n == 0 || jobs[1].h);
    CHECK(ok, "a batch of %d programs (%s ...): %d kernels compile: %s%s", n,
          n ? ps[0].label : "", t.n, jobs[0].err, jobs[1].err);
    batch_handle[0] = jobs[0].h;
    batch_handle[1] = jobs[1].h;
    for (int j = 0; j < n && ok; j++) {
        bprog *b = &ps[j];
        st_test_checks++;
        results ri, re;
        void *hi = IB->compile(IB, b->p->kernels, b->p->nkernels);
        st_status si = hi ? exec_prog(b->p, IB, hi, b->ins, &ri, NULL) : st_err_kind();
        if (hi)
            IB->release(IB, hi);
        char imsg[300];
        snprintf(imsg, sizeof imsg, "%s", st_err_msg());
        st_err_clear();
        batch_map = b->map;
        st_status se = exec_prog(b->p, &batch_be, NULL, b->ins, &re, NULL);
        char msg[600];
        if (si != ST_OK || se != ST_OK) {
            bool agree = b->errors_agree && si == se && strcmp(imsg, st_err_msg()) == 0;
            snprintf(msg, sizeof msg, "status interp %d (%s), cudaemu %d", si, imsg, se);
            if (!agree)
                report(b, msg);
        } else if (!same(&re, &ri, b->rtol, msg, sizeof msg)) {
            report(b, msg);
        }
        st_err_clear();
        results_free(&ri);
        results_free(&re);
    }
    for (int k = 0; k < 2; k++)
        if (batch_handle[k])
            EB->release(EB, batch_handle[k]);
    batch_handle[0] = batch_handle[1] = NULL;
    for (int j = 0; j < n; j++) {
        free(ps[j].map);
        ps[j].map = NULL;
    }
    int nk = t.n;
    ktable_free(&t);
    return nk;
}

/* ---- random DAGs ---- */
typedef struct {
    uint64_t seed;
    st_graph *g;
    st_tensor *ins[4];
    int nin;
    bool any_f32;
    int si[2];
    st_kprog *p[2];
} rcase;

static st_fuse_options setting(int s)
{
    st_fuse_options o;
    o.fusion = s & 1;
    o.fuse_reductions = (s >> 1) & 1;
    o.fuse_matmul_epilogue = (s >> 2) & 1;
    o.max_fused_ops = (s >> 3) & 1 ? 2 : 0;
    return o;
}

static const int64_t size_sets[][3] = {
    {3, 4, 5}, {2, 3, 17}, {4, 2, 9}, {2, 5, 33}, {3, 40, 70}, {2, 9, 300}, {5, 70, 4}};

static void rcase_label(const rcase *c, int j, char *buf, size_t n)
{
    st_fuse_options o = setting(c->si[j]);
    snprintf(buf, n, "random graph (TEST_CUDAEMU_SEED=%llu, graph seed %llu; fusion=%d "
             "fuse_reductions=%d fuse_matmul_epilogue=%d max_fused_ops=%d)",
             (unsigned long long)base_seed, (unsigned long long)c->seed, o.fusion,
             o.fuse_reductions, o.fuse_matmul_epilogue, o.max_fused_ops);
}

static void make_rcase(rcase *c, int it)
{
    memset(c, 0, sizeof *c);
    c->seed = splitmix(base_seed * 1000003ull + (uint64_t)it);
    rng_state = c->seed | 1;
    int ss = irand((int)(sizeof size_sets / sizeof size_sets[0]));
    memcpy(rg_sizes, size_sets[ss], sizeof rg_sizes);
    rg_extended = true;
    rg_max_stmts = 8;
    st_dtype dts[4];
    int mode = irand(3); /* float32, float64, mixed */
    for (int i = 0; i < 4; i++)
        dts[i] = mode == 0 ? ST_FLOAT32 : mode == 1 ? ST_FLOAT64 : irand(2) ? ST_FLOAT32 : ST_FLOAT64;
    c->g = st_ir_graph_new();
    c->nin = random_dag(c->g, dts, rg_tensor, c->ins);
    for (int v = 0; v < c->g->nvalues; v++)
        c->any_f32 |= c->g->values[v].meta.dtype == ST_FLOAT32;
    for (int j = 0; j < 2; j++) {
        c->si[j] = (2 * it + j) % 16;
        st_fuse_options o = setting(c->si[j]);
        c->p[j] = st_fuse_lower(c->g, &o);
        if (!c->p[j]) {
            bprog b = {.g = c->g};
            rcase_label(c, j, b.label, sizeof b.label);
            report(&b, "lowering failed");
            st_err_clear();
        }
    }
}

static void free_rcase(rcase *c)
{
    for (int j = 0; j < 2; j++)
        st_kprog_free(c->p[j]);
    for (int i = 0; i < c->nin; i++)
        st_tensor_decref(c->ins[i]);
    st_ir_graph_free(c->g);
}

static int run_random_batch(int first, int last)
{
    rcase cs[BATCH];
    bprog ps[2 * BATCH];
    int nc = 0, np = 0;
    for (int it = first; it < last; it++) {
        rcase *c = &cs[nc++];
        make_rcase(c, it);
        for (int j = 0; j < 2; j++) {
            if (!c->p[j])
                continue;
            bprog *b = &ps[np++];
            memset(b, 0, sizeof *b);
            rcase_label(c, j, b->label, sizeof b->label);
            b->g = c->g;
            b->ins = c->ins;
            b->p = c->p[j];
            b->rtol = c->any_f32 ? 2e-5 : 1e-9;
        }
    }
    int nk = run_batch(ps, np);
    for (int ci = 0; ci < nc; ci++)
        free_rcase(&cs[ci]);
    return nk;
}

/* ---- every primitive op, one-op graphs over the dtypes (as test_nvrtc
 * compiles them), run: casts, mixed promotions, integer division and
 * powers (negative exponents: 1, -1 or 0, as torch), reductions over
 * every dim choice and 0-d inputs, index_select/embedding/gather with
 * int32 and int64 indices, scatter_add into every dtype (the emulated
 * atomics: float16/bfloat16 by 32-bit CAS, bool by OR), matmuls of every
 * dtype pair the renderer takes. One batch, one object. ---- */
typedef struct {
    gcase c[1600];
    bprog b[1600];
    int n;
} sweep;

static const st_dtype all_dt[] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16, ST_BFLOAT16,
                                  ST_INT32, ST_INT64, ST_BOOL, ST_UINT8, ST_INT8, ST_INT16};
#define NDT 10

/* a one-op graph of op over inputs of dtypes dts, ranks nds, shapes shs;
 * idx_hi[i] > 0: input i holds indices in [0, idx_hi[i]) */
static void sweep_op(sweep *sw, const char *name, st_op_id op, int nin, const st_dtype *dts,
                     const int *nds, const int64_t (*shs)[4], const st_attrs *a,
                     const int64_t *idx_hi)
{
    CHECK(sw->n < 1600, "%s: the sweep is full (raise its capacity)", name);
    if (sw->n >= 1600)
        return;
    gcase *c = &sw->c[sw->n];
    gc_init(c);
    int ins[ST_MAX_IN];
    bool low = false, f32 = false;
    for (int i = 0; i < nin; i++) {
        st_dtype d = dts[i];
        low |= d == ST_FLOAT16 || d == ST_BFLOAT16;
        f32 |= d == ST_FLOAT32;
        int fill = d == ST_BOOL ? F_BOOL : st_dtype_is_float(d) ? F_UNIFORM : F_INT;
        ins[i] = gin(c, d, nds[i], shs[i], fill);
        if (idx_hi && idx_hi[i] > 0) {
            st_tensor *t = c->ins[i];
            for (int64_t j = 0; j < st_tensor_numel(t); j++)
                put(st_tensor_data(t), d, j, (double)(rnd() % (uint64_t)idx_hi[i]));
        } else if (idx_hi && idx_hi[i] < 0) {
            /* distinct values in [0, -idx_hi) along dim a->i[0] of a 2-D
             * index (scatter: a position written twice has no one value) */
            st_tensor *t = c->ins[i];
            int dim = (int)a->i[0];
            int64_t H = -idx_hi[i], L = t->shape[dim], M = t->shape[1 - dim], v[64];
            for (int64_t m = 0; m < M; m++) {
                for (int64_t j = 0; j < H; j++)
                    v[j] = j;
                for (int64_t j = 0; j < L; j++) {
                    int64_t r = j + (int64_t)(rnd() % (uint64_t)(H - j)), x = v[j];
                    v[j] = v[r];
                    v[r] = x;
                    put(st_tensor_data(t), d, dim ? m * L + j : j * M + m, (double)v[j]);
                }
            }
        }
    }
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = attrs0();
    int si = st_ir_add_stmt(c->g, op, ins, nin, a ? a : &z, outs);
    st_kprog *p = NULL;
    if (si >= 0) {
        for (int o = 0; o < c->g->stmts[si].nout; o++) {
            const st_meta *m = &c->g->values[outs[o]].meta;
            low |= m->dtype == ST_FLOAT16 || m->dtype == ST_BFLOAT16;
            f32 |= m->dtype == ST_FLOAT32;
            st_ir_mark_output(c->g, outs[o]);
        }
        p = st_fuse_lower(c->g, &fused);
        CHECK(p != NULL, "%s: lowering", name);
    }
    if (!p) { /* not a valid combination */
        st_err_clear();
        gc_free(c);
        return;
    }
    bprog *b = &sw->b[sw->n++];
    memset(b, 0, sizeof *b);
    snprintf(b->label, sizeof b->label, "%s(%s%s%s%s%s)", name, st_dtype_name(dts[0]),
             nin > 1 ? ", " : "", nin > 1 ? st_dtype_name(dts[1]) : "", nin > 2 ? ", " : "",
             nin > 2 ? st_dtype_name(dts[2]) : "");
    b->g = c->g;
    b->ins = c->ins;
    b->p = p;
    b->rtol = low ? 1e-2 : f32 ? 2e-6 : 1e-12;
    b->errors_agree = true;
}

static void test_every_op(void)
{
    static sweep sw;
    sw.n = 0;
    static const int64_t sh[3][4] = {{4, 37}, {4, 37}, {4, 37}};
    int nds[3] = {2, 2, 2};
    for (int op = ST_OP_NEG; op <= ST_OP_SIGN; op++)
        for (int d = 0; d < NDT; d++)
            sweep_op(&sw, st_op(op)->name, op, 1, &all_dt[d], nds, sh, NULL, NULL);
    for (int d = 0; d < NDT; d++)
        for (int e = 0; e < NDT; e++) {
            st_attrs a = attrs0();
            a.dtype = all_dt[e];
            char nm[40];
            snprintf(nm, sizeof nm, "cast to %s", st_dtype_name(all_dt[e]));
            sweep_op(&sw, nm, ST_OP_CAST, 1, &all_dt[d], nds, sh, &a, NULL);
        }
    static const int64_t bsh[2][4] = {{3, 1, 33}, {4, 33}};
    int bnd[2] = {3, 2};
    for (int op = ST_OP_ADD; op <= ST_OP_REMAINDER; op++) {
        for (int d = 0; d < NDT; d++) {
            st_dtype dts[2] = {all_dt[d], all_dt[d]};
            sweep_op(&sw, st_op(op)->name, op, 2, dts, bnd, bsh, NULL, NULL);
        }
        st_dtype mix[5][2] = {{ST_FLOAT32, ST_INT64}, {ST_FLOAT16, ST_FLOAT64},
                              {ST_INT32, ST_INT64}, {ST_UINT8, ST_INT8},
                              {ST_INT16, ST_FLOAT32}};
        for (int m = 0; m < 5; m++)
            sweep_op(&sw, st_op(op)->name, op, 2, mix[m], bnd, bsh, NULL, NULL);
    }
    for (int d = 0; d < NDT; d++) {
        st_dtype dts[3] = {ST_BOOL, all_dt[d], all_dt[d]};
        sweep_op(&sw, "where", ST_OP_WHERE, 3, dts, nds, sh, NULL, NULL);
    }
    /* reductions: all dims, the last, the first (keepdim), two; a 0-d input */
    static const int64_t rsh[1][4] = {{5, 6, 7}}, r0[1][4] = {{0}};
    int rnd_[1] = {3}, rn0[1] = {0};
    st_op_id rops[] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN,
                       ST_OP_ARGMAX, ST_OP_ARGMIN, ST_OP_PROD};
    for (unsigned o = 0; o < sizeof rops / sizeof rops[0]; o++)
        for (int d = 0; d < NDT; d++) {
            bool arg = rops[o] == ST_OP_ARGMAX || rops[o] == ST_OP_ARGMIN;
            for (int v = 0; v < 4; v++) {
                st_attrs a = attrs0();
                if (v == 1) { a.ndims = 1; a.dims[0] = 2; }
                if (v == 2) { a.ndims = 1; a.dims[0] = 0; a.flags = ST_ATTR_KEEPDIM; }
                if (v == 3) {
                    if (arg)
                        continue;
                    a.ndims = 2; a.dims[0] = 0; a.dims[1] = 2;
                }
                sweep_op(&sw, st_op(rops[o])->name, rops[o], 1, &all_dt[d], rnd_, rsh, &a, NULL);
            }
            sweep_op(&sw, st_op(rops[o])->name, rops[o], 1, &all_dt[d], rn0, r0, NULL, NULL);
        }
    /* indexing */
    st_dtype vals[3] = {ST_FLOAT32, ST_FLOAT16, ST_INT64}, idx[2] = {ST_INT64, ST_INT32};
    for (int v = 0; v < 3; v++)
        for (int x = 0; x < 2; x++) {
            st_dtype dts[2] = {vals[v], idx[x]};
            st_attrs a = attrs0();
            static const int64_t s[2][4] = {{6, 9}, {4}};
            int nd[2] = {2, 1};
            int64_t hi_s[2] = {0, 6};
            sweep_op(&sw, "index_select", ST_OP_INDEX_SELECT, 2, dts, nd, s, &a, hi_s);
            static const int64_t e[2][4] = {{10, 8}, {3, 5}};
            int ne[2] = {2, 2};
            int64_t hi_e[2] = {0, 10};
            a.i[0] = -1;
            sweep_op(&sw, "embedding", ST_OP_EMBEDDING, 2, dts, ne, e, &a, hi_e);
            a.i[0] = 2;
            sweep_op(&sw, "embedding pad", ST_OP_EMBEDDING, 2, dts, ne, e, &a, hi_e);
            static const int64_t gs[2][4] = {{5, 7}, {5, 4}};
            int64_t hi_g[2] = {0, 7};
            a.i[0] = 1;
            sweep_op(&sw, "gather", ST_OP_GATHER, 2, dts, ne, gs, &a, hi_g);
        }
    for (int d = 0; d < NDT; d++)
        for (int dim = 0; dim < 2; dim++) {
            static const int64_t ss[3][4] = {{5, 7}, {5, 4}, {5, 4}};
            int ns[3] = {2, 2, 2};
            st_dtype sd[3] = {all_dt[d], ST_INT64, all_dt[d]};
            int64_t hi[3] = {0, dim ? 7 : 5, 0};
            st_attrs a = attrs0();
            a.i[0] = dim;
            sweep_op(&sw, dim ? "scatter_add dim 1" : "scatter_add dim 0", ST_OP_SCATTER_ADD, 3,
                     sd, ns, ss, &a, hi);
            int64_t hd[3] = {0, dim ? -7 : -5, 0};
            sweep_op(&sw, dim ? "scatter dim 1" : "scatter dim 0", ST_OP_SCATTER, 3,
                     sd, ns, ss, &a, hd);
        }
    /* matmuls: 2-D, batched, broadcast batch over the dtype pairs */
    static const int64_t m1[2][4] = {{5, 7}, {7, 3}}, m2[2][4] = {{2, 5, 7}, {7, 3}},
                         m3[2][4] = {{2, 1, 64, 48}, {3, 48, 40}};
    int n1[2] = {2, 2}, n2[2] = {3, 2}, n3[2] = {4, 3};
    st_dtype mdt[7][2] = {{ST_FLOAT32, ST_FLOAT32}, {ST_FLOAT64, ST_FLOAT64},
                          {ST_FLOAT16, ST_FLOAT16}, {ST_INT64, ST_INT64},
                          {ST_BFLOAT16, ST_BFLOAT16}, {ST_INT32, ST_INT32},
                          {ST_FLOAT16, ST_FLOAT32}};
    for (int d = 0; d < 7; d++) {
        sweep_op(&sw, "matmul", ST_OP_MATMUL, 2, mdt[d], n1, m1, NULL, NULL);
        sweep_op(&sw, "matmul batched", ST_OP_MATMUL, 2, mdt[d], n2, m2, NULL, NULL);
        sweep_op(&sw, "matmul broadcast", ST_OP_MATMUL, 2, mdt[d], n3, m3, NULL, NULL);
    }
    int nk = run_batch(sw.b, sw.n);
    printf("every op: %d programs, %d distinct kernels\n", sw.n, nk);
    for (int i = 0; i < sw.n; i++) {
        st_kprog_free(sw.b[i].p);
        gc_free(&sw.c[i]);
    }
}

static void test_random_graphs(int n)
{
    int kernels = 0;
    for (int it = 0; it < n && st_test_failures < 20; it += BATCH)
        kernels += run_random_batch(it, it + BATCH < n ? it + BATCH : n);
    printf("random graphs: %d (seed %llu), %d distinct kernels\n", n,
           (unsigned long long)base_seed, kernels);
}

int main(void)
{
    if (!st_cudaemu_available()) {
        printf("SKIP: %s\n", st_err_msg());
        return 77;
    }
    double t0 = now_s();
    printf("compiler: %s\n", st_cudaemu_compiler());
    EB = st_cudaemu_backend();
    IB = st_interp_backend();
    const char *ng = getenv("TEST_CUDAEMU_GRAPHS");
    if (getenv("TEST_CUDAEMU_SEED"))
        base_seed = strtoull(getenv("TEST_CUDAEMU_SEED"), NULL, 10);
    /* everything in thread order, then last thread (and block) first */
    for (int rev = 0; rev < 2; rev++) {
        sched_reverse = rev;
        if (rev)
            setenv("SYMTRACE_CUDAEMU_REVERSE", "1", 1);
        printf("-- %s order\n", rev ? "reverse" : "forward");
        double t1 = now_s();
        RUN_TEST(test_scheduler());
        RUN_TEST(test_elementwise());
        printf("scheduler, elementwise: %.1f s\n", now_s() - t1);
        t1 = now_s();
        RUN_TEST(test_reductions());
        RUN_TEST(test_argreduce());
        printf("reductions: %.1f s\n", now_s() - t1);
        t1 = now_s();
        RUN_TEST(test_composites());
        RUN_TEST(test_colreduce());
        printf("composites, column reductions: %.1f s\n", now_s() - t1);
        t1 = now_s();
        RUN_TEST(test_gather());
        RUN_TEST(test_matmul());
        RUN_TEST(test_random());
        printf("gather, matmul, random: %.1f s\n", now_s() - t1);
        t1 = now_s();
        RUN_TEST(test_every_op());
        printf("every op: %.1f s\n", now_s() - t1);
        t1 = now_s();
        RUN_TEST(test_random_graphs(ng && *ng ? atoi(ng) : SANITIZED ? 20 : 60));
        printf("random graphs: %.1f s\n", now_s() - t1);
    }
    unsetenv("SYMTRACE_CUDAEMU_REVERSE");
    printf("paths: vec %d, broadcast %d, strided %d, unravel %d, warp rows %d, block rows %d, "
           "col %d (sliced %d), matmul direct %d, _epi %d, NVRTC kernel %d\n", cov.vec,
           cov.bcast, cov.ew_scalar, cov.unravel, cov.warp_rows, cov.block_rows, cov.col,
           cov.col_sliced, cov.mm_direct, cov.mm_epi, cov.mm_kernel);
    printf("test_cudaemu: %.1f s\n", now_s() - t0);
    return st_test_exit_code("test_cudaemu");
}
