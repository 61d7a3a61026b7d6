/* st_nvrtc.h - the NVRTC backend's public surface: the renderer (kernel IR
 * -> one CUDA C translation unit per graph), the NVRTC loader and compiler
 * (libnvrtc found with dlopen at run time), the host-side launch decisions
 * (grid/block shape, the vector-path flags), and the "nvrtc" st_backend.
 * Prefix: st_nvrtc_. Nothing here needs cuda.h or nvrtc.h to build. */
#ifndef ST_NVRTC_H
#define ST_NVRTC_H

#include "st_runtime.h"

/* ---- rendering (render*.c) ----
 * Every generated kernel has the signature
 *   extern "C" __global__ void NAME(const st_kargs a, unsigned flags,
 *                                   st_kerr *err)
 * with `a` a by-value mirror of st_kargs (layout static-asserted in the
 * source), `flags` the run-time layout bits below and `err` a device
 * st_nvrtc_kerr (zeroed before the launch; the first failing thread fills
 * it). Names: st_nvrtc_kernel_name(); a MATMUL over float16/bfloat16 also
 * gets NAME_mma, the tensor-core (mma.sync) variant. */

/* flags of an ELEMENTWISE launch (st_nvrtc_ew_flags) */
enum {
    ST_NVRTC_F_VEC = 1u,          /* the 16-byte vector path may run */
    ST_NVRTC_F_BCAST0 = 2u,       /* bit (1 + b): buffer b is one scalar */
};

/* What a kernel writes into its error record (device memory). */
typedef struct {
    int32_t code;        /* 0 ok, ST_NVRTC_EINDEX */
    int32_t dim;
    int64_t value, size;
} st_nvrtc_kerr;
enum { ST_NVRTC_EINDEX = 1 };

/* Renders kernels ks[0..n) (VIEW kernels produce nothing) as one CUDA C
 * source (malloc'd, caller frees); NULL with the error set when a kernel
 * uses something the renderer does not know. */
char *st_nvrtc_render(const st_kernel *ks, int n);
/* The extern "C" name of kernel i of a rendered list (buf >= 64 bytes). */
void st_nvrtc_kernel_name(const st_kernel *k, int i, char *buf, size_t n);
/* Whether kernel k has the tensor-core variant NAME_mma. */
bool st_nvrtc_has_mma(const st_kernel *k);
/* Elements per thread of the vector path of an ELEMENTWISE kernel (1: the
 * kernel has no vector path). */
int st_nvrtc_vec_width(const st_kernel *k);
/* Points a thread of an ELEMENTWISE kernel's scalar path and of a REDUCE
 * kernel's row walk takes a trip, every point's loads issued before the
 * first point's statements (the launch gives each thread that many):
 * SYMTRACE_CUDA_UNROLL (1 to 8; 1 is a point a trip), default 4, read on
 * first use (not on every launch); st_nvrtc_unroll_reload reads it again
 * (tests). A launch whose count differs from its kernel's still covers
 * every point (the walks are grid-stride and bounded per point). */
int st_nvrtc_unroll(void);
int st_nvrtc_unroll_reload(void);
/* The most threads of a row-reduction block, its __launch_bounds__ and
 * launch.c's cap alike: 256 with the multi-point walks, so ptxas may give
 * a thread up to 255 registers (a row's 4-point trip keeps 4 points of
 * every loaded buffer live; under a 1024 bound the BERT LayerNorm kernels
 * spilled 64-144 bytes, now 0-20 at 80 registers); SYMTRACE_CUDA_ROW_BOUND
 * (256, 512, 1024; read with SYMTRACE_CUDA_UNROLL) for an A/B on a GPU;
 * 1024 with a point a trip (SYMTRACE_CUDA_UNROLL=1, the old rule). */
int st_nvrtc_row_threads(void);

/* The column variant NAME_col of a REDUCE kernel (render_kernels.c): for
 * reductions over dims that are not contiguous in memory while the kept
 * (outer) dims are, as in bias and LayerNorm weight gradients (a sum over
 * the token dims of [B, S, H]). Threads map to outer points along the
 * innermost outer dim (blockDim.x == 32 consecutive points, blockDim.y
 * groups of row points, <= 32), each thread accumulates its row points
 * (as the row path: double for float sources, int64 otherwise), the
 * groups are combined in shared memory in a fixed order (deterministic),
 * then the epilogue per outer point; with few outer points the rows are
 * sliced over gridDim.y blocks whose partials the last one adds in order
 * (deterministic too). Its signature adds a fourth parameter, `void *scr`,
 * the zeroed scratch of st_nvrtc_launch.col_scratch bytes (NULL when 0).
 * Rendered for kernels with one SUM/MEAN/MAX/MIN reduction (nreduce 1,
 * no ARGMAX/ARGMIN/PROD) over a permuted iteration space (some input
 * read with its innermost kept dim after its innermost reduced dim in
 * memory order) whose stores are plain and, with a per-point epilogue,
 * either made at every point and independent of the reduction (made in
 * the accumulation pass by the thread visiting the point) or constant over
 * the row (made once per outer point). */
typedef struct {
    bool ok;                          /* NAME_col is rendered */
    bool touch[ST_K_MAX_BUFS];        /* read or written per row point */
    bool point[ST_K_MAX_STORES];      /* made in the accumulation pass */
} st_nvrtc_col;
/* Fills c for kernel k (c->ok false: no NAME_col). */
void st_nvrtc_col_plan(const st_kernel *k, st_nvrtc_col *c);

/* ---- launch decisions (launch.c; plain C, testable without a GPU) ---- */
typedef struct {
    unsigned grid[3], block[3];
    unsigned flags;
    bool mma;            /* launch NAME_mma instead of NAME */
    bool col;            /* st_nvrtc_col_config: launch NAME_col */
    /* NAME_col with grid[1] > 1 (the rows sliced over blocks): the bytes
     * of zeroed device scratch it needs (a counter per tile of 32 outer
     * points, 256-byte aligned, then [grid[1]][outer points] partials of 8
     * bytes); its last block per tile resets the counters, so the scratch
     * stays zeroed between launches. 0: no scratch (pass NULL). */
    int64_t col_scratch;
    bool empty;          /* nothing to do (a zero-size iteration space) */
} st_nvrtc_launch;

/* Layout flags of an ELEMENTWISE launch for arguments a. */
unsigned st_nvrtc_ew_flags(const st_kernel *k, const st_kargs *a);
/* Grid and block for kernel k with arguments a on a device with sm_count
 * multiprocessors and compute capability cc (e.g. 90). */
st_nvrtc_launch st_nvrtc_launch_config(const st_kernel *k, const st_kargs *a,
                                       int sm_count, int cc);
/* Whether the column variant NAME_col of REDUCE kernel k suits arguments
 * a (L.col) and its grid/block: k has it (st_nvrtc_col_plan), the
 * innermost outer dim has 4 points or more, the buffers read or written
 * per row point do not all move with stride 1 along the innermost row dim
 * (or it has size 1), and along the innermost outer dim they move with
 * stride 0 or 1 (or their strides there add up to less than along the
 * innermost row dim). Pure: the backend launches NAME_col only when this
 * says so, unless SYMTRACE_CUDA_COLREDUCE=0. L.col false: use st_nvrtc_launch_config. */
st_nvrtc_launch st_nvrtc_col_config(const st_kernel *k, const st_kargs *a,
                                    int sm_count);

/* ---- cuBLAS for MATMUL kernels (gemm_plan.c: host decision; cublas.c) ----
 * A MATMUL launch goes to cuBLAS (cublasGemmStridedBatchedEx, loaded with
 * dlopen) when st_nvrtc_gemm_plan says it can: float32 x float32 (true
 * float32, no TF32), float64 x float64, float16/bfloat16 pairs (float32
 * compute); each operand's matrix with one unit stride; the batch dims
 * collapsing to one stride per operand, outer non-collapsible batch dims
 * looped with one call each. The product goes straight into the output
 * (direct: no epilogue but the plain store of the product, output dtype
 * the product's, a row stride for ldc) or into a contiguous scratch
 * [batch..., M, N] product of the accumulation type (float, or double for
 * float64) that NAME_epi, the epilogue kernel, reads. */
#define ST_NVRTC_GEMM_MAX_CALLS 256
typedef struct {
    bool ok;               /* cuBLAS can run this launch */
    const char *why;       /* when !ok: the reason (a static string) */
    bool empty;            /* nothing to do (zero-size output) */
    st_dtype ab_dtype;     /* operand dtype (A and B alike) */
    st_dtype c_dtype;      /* dtype cuBLAS writes: the output's when direct,
                              else the accumulation type (float32/float64) */
    bool f64;              /* compute in float64 (else float32) */
    bool direct;           /* C is output buffer out_buf; else the scratch */
    int out_buf;           /* direct: the buffer written */
    /* cuBLAS column-major call: C' (m x n) = op(A') op(B'), where A' is our
     * B and B' our A (row-major C = A B is column-major C^T = B^T A^T) */
    bool transa, transb;   /* op(A'), op(B'): true = CUBLAS_OP_T */
    int m, n, k;           /* m = N, n = M, k = K */
    int lda, ldb, ldc;     /* of A' (our B), B' (our A), C */
    int batch;             /* batchCount of each call */
    int64_t stride_a, stride_b, stride_c;  /* of A' (our B), B' (our A), C */
    /* calls = product of outer_shape: the element offsets of call i come
     * from st_nvrtc_gemm_offsets */
    int nouter;
    int64_t outer_shape[ST_MAX_DIMS];
    int64_t outer_stride[3][ST_MAX_DIMS];  /* our A, our B, C */
    int64_t calls;
    int64_t scratch_bytes; /* !direct: bytes of the scratch product */
} st_nvrtc_gemm;

/* Decides whether cuBLAS can run MATMUL kernel k with arguments a and how
 * (pure host code; plan->ok false with plan->why when it cannot: then the
 * NVRTC kernel runs). */
void st_nvrtc_gemm_plan(const st_kernel *k, const st_kargs *a, st_nvrtc_gemm *plan);
/* Element offsets of call i (0 <= i < plan->calls) into our A, our B and
 * C (the output buffer when direct, else the scratch product). */
void st_nvrtc_gemm_offsets(const st_nvrtc_gemm *plan, int64_t i, int64_t off[3]);
/* The calls x batch products of a plan as one pointer-array batched call
 * (cublasGemmBatchedEx): ptrs[0][j], ptrs[1][j], ptrs[2][j] are cuBLAS's
 * A (our B), B (our A) and C of product j = call * batch + b, from the
 * bases a (our A), b (our B) and c with element sizes eab and ec. */
void st_nvrtc_gemm_pointers(const st_nvrtc_gemm *plan, const char *a, const char *b, char *c,
                            size_t eab, size_t ec, const void **ptrs[3]);
/* Whether MATMUL kernel k gets NAME_epi (its epilogue over a scratch
 * product): when its operands are a pair cuBLAS may take. NAME_epi has
 * the signature of every kernel plus `const void *prod`: the contiguous
 * [batch..., M, N] product in float (double when the product is float64). */
bool st_nvrtc_has_epi(const st_kernel *k);
/* Grid and block of NAME_epi of kernel k (a grid-stride loop over the
 * batch x M x N points). */
st_nvrtc_launch st_nvrtc_epi_launch_config(const st_kernel *k, const st_kargs *a,
                                           int sm_count);

/* cuBLAS (cublas.c), loaded with dlopen: $SYMTRACE_CUBLAS_PATH (a file or
 * directory, ':'-separated), then the directories set here (the Python
 * layer passes the pip wheels' nvidia/.../lib holding libcublas), then the
 * loader (libcublas.so.13, .12, libcublas.so), then /usr/local/cuda/lib64.
 * SYMTRACE_CUBLAS=0 disables it (every matmul runs the NVRTC kernel). */
void st_nvrtc_set_cublas_search_path(const char *paths);
/* Loads cuBLAS once; false with the error set (naming what was tried, or
 * that SYMTRACE_CUBLAS=0). */
bool st_nvrtc_cublas_available(void);
/* The path of the loaded library, or NULL. */
const char *st_nvrtc_cublas_library(void);

/* ---- NVRTC (nvrtc.c) ---- */
/* Extra directories to look for libnvrtc in (the Python layer passes the
 * pip wheel's nvidia/cu13/lib); ':'-separated; NULL clears. Before these:
 * $SYMTRACE_NVRTC_PATH (a library file or a directory, ':'-separated);
 * after: the loader's own search (libnvrtc.so.13, libnvrtc.so, ...) and
 * /usr/local/cuda/lib64. */
void st_nvrtc_set_search_path(const char *paths);
/* Loads NVRTC once; false with the error set (naming what was tried). */
bool st_nvrtc_available(void);
/* "13.0" style version of the loaded NVRTC, or NULL. */
const char *st_nvrtc_version(void);
/* The path of the library that was loaded, or NULL. */
const char *st_nvrtc_library(void);

typedef struct {
    void *image;         /* cubin (want_ptx false) or NUL-terminated PTX */
    size_t size;
    char *log;           /* compiler log (may be empty); malloc'd */
} st_nvrtc_output;

/* Compiles source for arch ("sm_90", "sm_80"): a cubin, or PTX when
 * want_ptx. On a compile error returns ST_ERR_RUNTIME whose message holds
 * the head of the log and the path of a file the source was written to
 * ($SYMTRACE_DUMP_DIR, else /tmp); out->log keeps the whole log. */
st_status st_nvrtc_compile(const char *source, const char *name,
                           const char *arch, bool want_ptx,
                           st_nvrtc_output *out);
void st_nvrtc_output_free(st_nvrtc_output *out);

/* ---- the backend (backend.c) ----
 * "nvrtc": compile = render + NVRTC + cuModuleLoadData on the current CUDA
 * device; launch = cuLaunchKernel on the device's stream, then a check of
 * the error record. Registered by st_nvrtc_register() only when a CUDA
 * device is available. */
st_backend *st_nvrtc_backend(void);
st_status st_nvrtc_register(void);

#endif
