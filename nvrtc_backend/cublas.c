/* cublas.c - cuBLAS for the MATMUL kernels of the nvrtc backend, loaded
 * with dlopen at run time (never linked): the library search
 * ($SYMTRACE_CUBLAS_PATH, the directories the Python layer found, the
 * loader's search, /usr/local/cuda/lib64: libsearch.c; SYMTRACE_CUBLAS=0
 * turns it off),
 * one handle per device bound to the device's stream (default math: float32
 * products are true float32, never TF32), one growable scratch product per
 * device, and the calls of a st_nvrtc_gemm plan through
 * cublasGemmStridedBatchedEx; a plan of several calls (batch dims that do
 * not collapse to one stride, as attention's [batch, heads] over permuted
 * views) runs as one cublasGemmBatchedEx over pointer arrays copied to
 * the device on the stream (SYMTRACE_CUBLAS_PTRS=0: one call each).
 * Callers hold the backend's gemm lock (backend.c). Owns:
 * st_nvrtc_set_cublas_search_path, st_nvrtc_cublas_available,
 * st_nvrtc_cublas_library, st_nvrtc_cublas_gemm. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvrtc_internal.h"

/* the subset of cublas_api.h / library_types.h we use */
typedef int st_cublas_status;
typedef struct st_cublas_ctx_s *st_cublas_handle;
enum {
    ST_CUBLAS_OP_N = 0, ST_CUBLAS_OP_T = 1,
    ST_CUBLAS_DEFAULT_MATH = 0,
    CUDA_R_32F_ = 0, CUDA_R_64F_ = 1, CUDA_R_16F_ = 2, CUDA_R_16BF_ = 14,
    ST_CUBLAS_COMPUTE_32F = 68, ST_CUBLAS_COMPUTE_64F = 70,
    ST_CUBLAS_GEMM_DEFAULT = -1,
};

#if defined(ST_HAVE_CUDA) && defined(__has_include)
#if __has_include(<library_types.h>)
#include <library_types.h>
_Static_assert((int)CUDA_R_32F_ == (int)CUDA_R_32F, "CUDA_R_32F");
_Static_assert((int)CUDA_R_64F_ == (int)CUDA_R_64F, "CUDA_R_64F");
_Static_assert((int)CUDA_R_16F_ == (int)CUDA_R_16F, "CUDA_R_16F");
_Static_assert((int)CUDA_R_16BF_ == (int)CUDA_R_16BF, "CUDA_R_16BF");
#endif
#if __has_include(<cublas_api.h>)
#include <cublas_api.h>
_Static_assert((int)ST_CUBLAS_OP_N == (int)CUBLAS_OP_N, "CUBLAS_OP_N");
_Static_assert((int)ST_CUBLAS_OP_T == (int)CUBLAS_OP_T, "CUBLAS_OP_T");
_Static_assert((int)ST_CUBLAS_DEFAULT_MATH == (int)CUBLAS_DEFAULT_MATH, "CUBLAS_DEFAULT_MATH");
_Static_assert((int)ST_CUBLAS_COMPUTE_32F == (int)CUBLAS_COMPUTE_32F, "CUBLAS_COMPUTE_32F");
_Static_assert((int)ST_CUBLAS_COMPUTE_64F == (int)CUBLAS_COMPUTE_64F, "CUBLAS_COMPUTE_64F");
_Static_assert((int)ST_CUBLAS_GEMM_DEFAULT == (int)CUBLAS_GEMM_DEFAULT, "CUBLAS_GEMM_DEFAULT");
#endif
#endif

static struct {
    st_cublas_status (*Create)(st_cublas_handle *);
    st_cublas_status (*SetStream)(st_cublas_handle, st_cu_stream);
    st_cublas_status (*SetMathMode)(st_cublas_handle, int);
    st_cublas_status (*GemmStridedBatchedEx)(
        st_cublas_handle, int transa, int transb, int m, int n, int k, const void *alpha,
        const void *A, int Atype, int lda, long long strideA, const void *B, int Btype,
        int ldb, long long strideB, const void *beta, void *C, int Ctype, int ldc,
        long long strideC, int batchCount, int computeType, int algo);
    st_cublas_status (*GemmBatchedEx)( /* optional */
        st_cublas_handle, int transa, int transb, int m, int n, int k, const void *alpha,
        const void *const A[], int Atype, int lda, const void *const Bm[], int Btype, int ldb,
        const void *beta, void *const C[], int Ctype, int ldc, int batchCount, int computeType,
        int algo);
    const char *(*GetStatusString)(st_cublas_status); /* optional */
} B;

static bool bind(st_nvrtc_lib *l, void *h, const char *path)
{
#define SYM(f, name)                                                        \
    do {                                                                    \
        *(void **)&B.f = dlsym(h, name);                                    \
        if (!B.f) {                                                         \
            char msg[1100];                                                 \
            snprintf(msg, sizeof msg, "%s (no %s)", path, name);            \
            st_nvrtc_lib_note(l, msg);                                      \
            return false;                                                   \
        }                                                                   \
    } while (0)
    SYM(Create, "cublasCreate_v2");
    SYM(SetStream, "cublasSetStream_v2");
    SYM(SetMathMode, "cublasSetMathMode");
    SYM(GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
#undef SYM
    *(void **)&B.GetStatusString = dlsym(h, "cublasGetStatusString");
    *(void **)&B.GemmBatchedEx = dlsym(h, "cublasGemmBatchedEx");
    return true;
}

static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                      NULL};

/* libcublas needs libcublasLt from its own directory */
static st_nvrtc_lib L = {
    .name = "libcublas", .env = "SYMTRACE_CUBLAS_PATH", .sonames = sonames,
    .preload = "libcublasLt.so*", .bind = bind, .lock = PTHREAD_MUTEX_INITIALIZER,
};
static bool disabled;

void st_nvrtc_set_cublas_search_path(const char *paths)
{
    st_nvrtc_lib_set_search_path(&L, paths);
}

bool st_nvrtc_cublas_available(void)
{
    pthread_mutex_lock(&L.lock);
    const char *env = getenv("SYMTRACE_CUBLAS");
    disabled = env && env[0] == '0';
    bool ok = !disabled && st_nvrtc_lib_load(&L);
    pthread_mutex_unlock(&L.lock);
    if (!ok) {
        if (disabled)
            st_err(ST_ERR_RUNTIME, "cuBLAS is disabled (SYMTRACE_CUBLAS=0)");
        else
            st_err(ST_ERR_RUNTIME,
                   "cuBLAS is not available: could not load libcublas (tried: %s). "
                   "Install the nvidia-cublas wheel or set SYMTRACE_CUBLAS_PATH", L.tried);
    }
    return ok;
}

const char *st_nvrtc_cublas_library(void)
{
    return L.handle ? L.path : NULL;
}

static st_status check(st_cublas_status r, const char *what)
{
    if (r == 0)
        return ST_OK;
    const char *msg = B.GetStatusString ? B.GetStatusString(r) : NULL;
    return st_err(ST_ERR_RUNTIME, "cuBLAS error in %s: %s (status %d)", what,
                  msg ? msg : "unknown", r);
}

/* ---- per device: the handle, the scratch product, the pointer arrays ---- */
#define MAX_DEV 64
typedef struct {
    st_cu_ptr p;
    size_t len;
} dev_buf;
static struct {
    st_cublas_handle h;
    dev_buf scratch;   /* products that NAME_epi reads */
    dev_buf ptrs;      /* cublasGemmBatchedEx's pointer arrays */
} per_dev[MAX_DEV];

static st_status handle_of(st_device *dev, st_cublas_handle *out)
{
    st_cuda_dev *g = st_cuda_dev_of(dev);
    if (!g || g->index < 0 || g->index >= MAX_DEV)
        return st_err(ST_ERR_RUNTIME, "cuBLAS: not a CUDA device (or index over %d)", MAX_DEV);
    if (per_dev[g->index].h) {
        *out = per_dev[g->index].h;
        return ST_OK;
    }
    st_cublas_handle h = NULL;
    st_status s = check(B.Create(&h), "cublasCreate_v2");
    if (s == ST_OK)
        s = check(B.SetStream(h, g->stream), "cublasSetStream_v2");
    if (s == ST_OK)
        s = check(B.SetMathMode(h, ST_CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    if (s != ST_OK)
        return s; /* a handle made before a failure is kept out of use (leaked once) */
    per_dev[g->index].h = h;
    *out = h;
    return ST_OK;
}

/* Device buffer b of the device, at least n bytes. Growing frees the old
 * one only after the stream is drained (queued kernels may still read it). */
static st_status grow(st_device *dev, dev_buf *b, size_t n, const char *what, st_cu_ptr *out)
{
    st_cuda_dev *g = st_cuda_dev_of(dev);
    const st_cuda_api *api = st_cuda_api_get();
    if (!api)
        return st_err_kind();
    if (b->p && b->len >= n) {
        *out = b->p;
        return ST_OK;
    }
    size_t len = b->len * 3 / 2;
    if (len < n)
        len = n;
    len = (len + 0xfffff) & ~(size_t)0xfffff; /* whole MiB */
    if (b->p) {
        st_status s = st_cuda_check(api->StreamSynchronize(g->stream), "cuStreamSynchronize");
        if (s != ST_OK)
            return s;
        api->MemFree(b->p);
        b->p = 0;
        b->len = 0;
    }
    st_cu_ptr p = 0;
    st_status s = st_cuda_check(api->MemAlloc(&p, len), what);
    if (s != ST_OK)
        return s;
    b->p = p;
    b->len = len;
    *out = p;
    return ST_OK;
}

static int cuda_type(st_dtype t)
{
    switch (t) {
    case ST_FLOAT64: return CUDA_R_64F_;
    case ST_FLOAT16: return CUDA_R_16F_;
    case ST_BFLOAT16: return CUDA_R_16BF_;
    default: return CUDA_R_32F_;
    }
}

/* SYMTRACE_CUBLAS_PTRS=0: a plan of several calls makes them one by one
 * (read at every launch, so a run can compare both) */
static bool ptrs_on(void)
{
    const char *e = getenv("SYMTRACE_CUBLAS_PTRS");
    return !(e && e[0] == '0');
}

/* Every product of plan p in one cublasGemmBatchedEx: the pointer arrays
 * are made here and copied to the device on the stream (from pageable
 * memory the copy is staged before cuMemcpyHtoDAsync returns, so the host
 * array can be reused at once; the device array is overwritten only by a
 * later copy on the same stream, after this call's product has read it). */
static st_status batched(st_device *dev, st_cublas_handle h, const st_nvrtc_gemm *p,
                         const st_kargs *a, char *c0, size_t ea, size_t ec, int tab, int tc,
                         int ct, const void *alpha, const void *beta)
{
    static const void **host;   /* grown, kept: calls are serialized (gemm lock) */
    static size_t host_cap;
    int64_t n = p->calls * p->batch;
    if (n > INT_MAX)
        return st_err(ST_ERR_RUNTIME, "cuBLAS: %lld products in one call", (long long)n);
    size_t bytes = 3 * (size_t)n * sizeof(void *);
    if (host_cap < (size_t)n * 3) {
        const void **nh = realloc(host, bytes);
        if (!nh)
            return st_err(ST_ERR_MEMORY, "cuBLAS pointer arrays (%zu bytes)", bytes);
        host = nh;
        host_cap = (size_t)n * 3;
    }
    const void **arr[3] = {host, host + n, host + 2 * n};
    st_nvrtc_gemm_pointers(p, a->bufs[0].data, a->bufs[1].data, c0, ea, ec, arr);
    st_cuda_dev *g = st_cuda_dev_of(dev);
    const st_cuda_api *api = st_cuda_api_get();
    st_cu_ptr d = 0;
    st_status s = grow(dev, &per_dev[g->index].ptrs, bytes, "cuMemAlloc (cuBLAS pointer arrays)", &d);
    if (s != ST_OK)
        return s;
    s = st_cuda_check(api->MemcpyHtoDAsync(d, host, bytes, g->stream), "cuMemcpyHtoDAsync");
    if (s != ST_OK)
        return s;
    const void *const *da = (const void *const *)(uintptr_t)d;
    return check(B.GemmBatchedEx(h, p->transa ? ST_CUBLAS_OP_T : ST_CUBLAS_OP_N,
                                 p->transb ? ST_CUBLAS_OP_T : ST_CUBLAS_OP_N, p->m, p->n, p->k,
                                 alpha, da, tab, p->lda, da + n, tab, p->ldb, beta,
                                 (void *const *)(da + 2 * n), tc, p->ldc, (int)n, ct,
                                 ST_CUBLAS_GEMM_DEFAULT),
                 "cublasGemmBatchedEx");
}

st_status st_nvrtc_cublas_gemm(st_device *dev, const st_nvrtc_gemm *p, const st_kargs *a,
                               st_cu_ptr *prod)
{
    *prod = 0;
    if (!p->ok)
        return st_err(ST_ERR_RUNTIME, "cuBLAS: no plan (%s)", p->why ? p->why : "?");
    if (!st_nvrtc_cublas_available())
        return st_err_kind();
    st_cublas_handle h = NULL;
    st_status s = handle_of(dev, &h);
    if (s != ST_OK)
        return s;
    char *c0;
    if (p->direct) {
        c0 = a->bufs[p->out_buf].data;
    } else {
        st_cu_ptr sp = 0;
        if ((s = grow(dev, &per_dev[st_cuda_dev_of(dev)->index].scratch,
                      (size_t)p->scratch_bytes, "cuMemAlloc (matmul scratch)", &sp)) != ST_OK)
            return s;
        *prod = sp;
        c0 = (char *)(uintptr_t)sp;
    }
    size_t ea = st_dtype_size(p->ab_dtype), ec = st_dtype_size(p->c_dtype);
    int tab = cuda_type(p->ab_dtype), tc = cuda_type(p->c_dtype);
    int ct = p->f64 ? ST_CUBLAS_COMPUTE_64F : ST_CUBLAS_COMPUTE_32F;
    float one_f = 1.0f, zero_f = 0.0f;
    double one_d = 1.0, zero_d = 0.0;
    const void *alpha = p->f64 ? (const void *)&one_d : (const void *)&one_f;
    const void *beta = p->f64 ? (const void *)&zero_d : (const void *)&zero_f;
    if (p->calls > 1 && B.GemmBatchedEx && ptrs_on())
        return batched(dev, h, p, a, c0, ea, ec, tab, tc, ct, alpha, beta);
    for (int64_t i = 0; i < p->calls; i++) {
        int64_t off[3];
        st_nvrtc_gemm_offsets(p, i, off);
        /* cuBLAS's A is our B, its B our A */
        const char *pa = a->bufs[1].data + (ptrdiff_t)(off[1] * (int64_t)ea);
        const char *pb = a->bufs[0].data + (ptrdiff_t)(off[0] * (int64_t)ea);
        char *pc = c0 + (ptrdiff_t)(off[2] * (int64_t)ec);
        s = check(B.GemmStridedBatchedEx(h, p->transa ? ST_CUBLAS_OP_T : ST_CUBLAS_OP_N,
                                         p->transb ? ST_CUBLAS_OP_T : ST_CUBLAS_OP_N, p->m, p->n,
                                         p->k, alpha, pa, tab, p->lda, (long long)p->stride_a,
                                         pb, tab, p->ldb, (long long)p->stride_b, beta, pc, tc,
                                         p->ldc, (long long)p->stride_c, p->batch, ct,
                                         ST_CUBLAS_GEMM_DEFAULT),
                  "cublasGemmStridedBatchedEx");
        if (s != ST_OK)
            return s;
    }
    return ST_OK;
}
