/* llvm_internal.h - what the files of llvm_backend/ share: the calling
 * convention of generated kernels, the code generator's context, the thread
 * pool and the matmul driver. Not installed; prefix st_llvm_. */
#ifndef ST_LLVM_INTERNAL_H
#define ST_LLVM_INTERNAL_H

#include <llvm-c/Core.h>

#include "st_llvm.h"

/* Filled by a kernel that fails (code != 0). */
typedef struct {
    int64_t value, size;
    int32_t dim, code;
} st_llvm_err;

enum { ST_LLVM_EOK = 0, ST_LLVM_EINDEX = 1 };

/* Every generated function: points [lo, hi) of its outer range (linear
 * points of an ELEMENTWISE kernel or a MATMUL epilogue, outer points of a
 * REDUCE kernel); extra: the matmul product (contiguous over [batch, M, N],
 * float, double or int64 as st_llvm_mm_acc says). Returns ST_LLVM_E*. */
typedef int32_t (*st_llvm_fn)(const st_kargs *a, int64_t lo, int64_t hi,
                              st_llvm_err *err, const void *extra);

/* ---- codegen (codegen*.c) ---- */
typedef struct {
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, void_t;
    const st_kernel *k;
    LLVMValueRef fn, args, err, extra;
    LLVMBasicBlockRef entry;      /* allocas only; branches to the body */
    /* hoisted launch arguments */
    LLVMValueRef shape[ST_MAX_DIMS];
    LLVMValueRef data[ST_K_MAX_BUFS];
    LLVMValueRef stride[ST_K_MAX_BUFS][ST_MAX_DIMS];
    LLVMValueRef idx_size[ST_K_MAX_BUFS], idx_stride[ST_K_MAX_BUFS];
    /* unravel buffers: the source's sizes and strides */
    LLVMValueRef ushape[ST_K_MAX_BUFS][ST_MAX_DIMS];
    LLVMValueRef ustride[ST_K_MAX_BUFS][ST_MAX_DIMS];
    bool uplain;  /* off[] of unravel buffers are source offsets already
                     (a segment of a row, see emit_segments) */
    /* the current point */
    LLVMValueRef off[ST_K_MAX_BUFS];   /* element offsets (i64) */
    LLVMValueRef vstride[ST_K_MAX_BUFS]; /* stride along the varying dim */
    LLVMValueRef coord[ST_MAX_DIMS];   /* NULL: 0 */
    LLVMValueRef lin;                  /* linear index (RAND, INDEX -1) */
    /* RAND narrower than float64 in an elementwise row: the row's Philox
     * words (filled before the row, a block per four points) and the
     * linear index of the first; NULL: each point runs its own block */
    LLVMValueRef rwords, rbase;
    /* the row pointers of an elementwise kernel's splat path (see
     * emit_pointwise), buffer accesses as those of data[] */
    LLVMValueRef splat_ptr[ST_K_MAX_BUFS];
    LLVMValueRef *vals;                /* memo per node, reset per region */
    LLVMValueRef *pre;  /* values computed before a row's loop (an index
                           loaded once per row), kept across memo resets;
                           NULL: none */
    LLVMValueRef reduced[ST_K_MAX_REDUCE];
    st_dtype reduced_dt[ST_K_MAX_REDUCE];
    int mm_acc;                        /* MATMUL: accumulation dtype */
    bool f16c;   /* host converts float to float16 in hardware (x86
                    F16C): an fptrunc to half, which vectorizes, instead
                    of a call to st_llvm_f2h */
    char errmsg[256];
} st_llvm_cg;

/* codegen_expr.c: whether k has a RAND narrower than float64 (a uniform
 * of four points per Philox block); the words of blocks [b0, b0 + nb) of
 * the launch into words[0 .. 4 nb) (a loop the vectorizer widens). */
bool st_llvm_has_rand_f(const st_kernel *k);
void st_llvm_rand_fill(st_llvm_cg *cg, LLVMValueRef words, LLVMValueRef b0,
                       LLVMValueRef nb);
/* Acc dtype of a matmul kernel: ST_FLOAT32, ST_FLOAT64 or ST_INT64. */
st_dtype st_llvm_mm_acc(const st_kernel *k);
/* Emits kernel k as function `name` into cg->M (C, M, types set). */
st_status st_llvm_emit_kernel(st_llvm_cg *cg, const st_kernel *k,
                              const char *name);
/* codegen_kernels.c: loop helpers shared with codegen_colreduce.c. */
typedef struct {
    LLVMValueRef var, i;
    LLVMBasicBlockRef cond, exit;
} st_llvm_loop;
/* An alloca in the entry block. */
LLVMValueRef st_llvm_entry_alloca(st_llvm_cg *cg, LLVMTypeRef t);
LLVMBasicBlockRef st_llvm_bb(st_llvm_cg *cg, const char *name);
/* for (i = start; i < end; i++): returns i, builder in the body; end
 * closes the body and leaves the builder after the loop. */
LLVMValueRef st_llvm_loop_begin(st_llvm_cg *cg, st_llvm_loop *L,
                                LLVMValueRef start, LLVMValueRef end);
void st_llvm_loop_end(st_llvm_cg *cg, st_llvm_loop *L);
/* closes the body with i = next instead of i + 1 */
void st_llvm_loop_next(st_llvm_cg *cg, st_llvm_loop *L, LLVMValueRef next);
void st_llvm_reset_memo(st_llvm_cg *cg);
/* Loads sizes, data pointers and strides of dims [0, rank). */
void st_llvm_hoist(st_llvm_cg *cg, int rank);
/* cg->coord[lo..hi) from the row-major linear index x over those dims. */
void st_llvm_coords_of(st_llvm_cg *cg, LLVMValueRef x, int lo, int hi);
/* Source offset of linear index q of unravel buffer b (div/mod walk). */
LLVMValueRef st_llvm_unravel_at(st_llvm_cg *cg, int b, LLVMValueRef q);
/* cls[i]: the first node structurally equal to node i, phases aside. */
void st_llvm_classes(const st_kernel *k, int *cls);
/* codegen_colreduce.c: column mode of an eligible REDUCE kernel (a SUM or
 * MEAN whose rows run along large strides). Called by the REDUCE emitter
 * after st_llvm_hoist: emits the run-time choice and the column loops
 * (which return), leaves the builder where the row path goes and returns
 * true; returns false, emitting nothing, for a kernel not eligible. */
bool st_llvm_emit_colreduce(st_llvm_cg *cg);
/* Whether kernel k has a column path (what st_llvm_emit_colreduce emits):
 * the launcher then gives each thread one contiguous outer range. */
bool st_llvm_has_colreduce(const st_kernel *k);
/* codegen_expr.c: the per-point semantics. */
void st_llvm_cg_types(st_llvm_cg *cg);
LLVMValueRef st_llvm_node(st_llvm_cg *cg, int ni);
/* codegen_math.c: inline vectorizable exp/log/tanh/sigmoid/erf of a float
 * value (op an ST_OP_*); NULL for other ops or types (call libm then). */
LLVMValueRef st_llvm_math(st_llvm_cg *cg, int op, LLVMValueRef x);
void st_llvm_store(st_llvm_cg *cg, int s);
/* The store of a MATMUL without stores: product -> bufs[2]. */
void st_llvm_store_value(st_llvm_cg *cg, int buf, LLVMValueRef v,
                         st_dtype vdt);
LLVMValueRef st_llvm_conv(st_llvm_cg *cg, LLVMValueRef v, st_dtype from,
                          st_dtype to, bool exact);
LLVMTypeRef st_llvm_mty(st_llvm_cg *cg, st_dtype t);
LLVMTypeRef st_llvm_vty(st_llvm_cg *cg, st_dtype t);
LLVMValueRef st_llvm_from_mem(st_llvm_cg *cg, LLVMValueRef m, st_dtype t);
LLVMValueRef st_llvm_i64c(st_llvm_cg *cg, int64_t v);
LLVMValueRef st_llvm_as_f(st_llvm_cg *cg, LLVMValueRef v, st_dtype t);
LLVMValueRef st_llvm_as_i(st_llvm_cg *cg, LLVMValueRef v, st_dtype t);
/* Loads field at byte offset off of the kargs struct. */
LLVMValueRef st_llvm_arg_field(st_llvm_cg *cg, size_t off, LLVMTypeRef t);
/* Returns code from the kernel (in a fresh block) when cond is true. */
void st_llvm_fail_if(st_llvm_cg *cg, LLVMValueRef cond, int code,
                     LLVMValueRef value, LLVMValueRef size, int dim);

/* External functions generated code calls, registered with the JIT as
 * absolute symbols (-fvisibility=hidden: the JIT cannot find ours). */
typedef struct {
    const char *name;
    void *addr;
} st_llvm_sym;
const st_llvm_sym *st_llvm_symbols(int *n);

/* ---- thread pool (pool.c) ---- */
typedef int32_t (*st_llvm_task)(void *ctx, int64_t lo, int64_t hi);
/* Runs task over [0, total) in chunks of at least grain on the pool
 * (inline when small or the pool is busy); returns the first nonzero. */
int32_t st_llvm_pool_run(st_llvm_task task, void *ctx, int64_t total,
                         int64_t grain, bool *parallel);
int st_llvm_pool_threads(void);

/* ---- matmul driver (matmul.c) ---- */
/* Runs a MATMUL kernel: the product (OpenBLAS or C loops), then the
 * generated epilogue `epi` over [batch, M, N]. */
int32_t st_llvm_matmul(const st_kernel *k, const st_kargs *a, st_llvm_fn epi,
                       st_llvm_err *err, bool *parallel);
bool st_llvm_have_blas(void);
/* sgemm.c: C[M x N] (row stride ldc) = A B (+ C when beta1), A's element
 * (i, k) at A[i*ars + k*acs], B's (k, j) at B[k*brs + j*bcs]. false (C
 * untouched) where the CPU lacks AVX2/FMA, SYMTRACE_SGEMM=blas is set or
 * its buffers could not be allocated: the caller goes to OpenBLAS. */
bool st_llvm_sgemm(int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t ars, int64_t acs, const float *B, int64_t brs,
                   int64_t bcs, float *C, int64_t ldc, bool beta1);
/* Does st_llvm_sgemm run its AVX-512 kernel here (then it is about twice
 * OpenBLAS 0.3.21's rate on every shape, and serves every size)? */
bool st_llvm_sgemm_wide(void);

#endif
