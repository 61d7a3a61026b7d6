/* st_cudaemu.h - the "cudaemu" testing backend: the NVRTC renderer's CUDA
 * C compiled by the host C++ compiler (with the emulation header
 * st_cudaemu.hpp force-included) and run on the CPU, a fiber per CUDA
 * thread, so that generated kernels run (and are checked against interp)
 * where there is no GPU. Its launches mirror the nvrtc backend's
 * decisions (st_nvrtc_launch_config, NAME_col, cuBLAS plans + NAME_epi)
 * on an emulated device; a plan's product is computed by st_cudaemu_gemm
 * the way cuBLAS would. Not for production use: slow, and a testing aid
 * (DESIGN.md). Prefix: st_cudaemu_. */
#ifndef ST_CUDAEMU_H
#define ST_CUDAEMU_H

#include "st_nvrtc.h"

/* ---- the backend (cudaemu.c) ----
 * "cudaemu", device ST_DEV_CPU (its tensors are host tensors). compile =
 * st_nvrtc_render of the list, compiled to a shared object (cached on
 * disk under $SYMTRACE_CACHE_DIR/cudaemu/, else /tmp/symtrace-cudaemu-
 * <uid>/, keyed by an XXH64 of the emulation header, the source and the
 * compiler's command, flags and version) and loaded with dlopen; launch =
 * the nvrtc backend's decisions for a device of SYMTRACE_CUDAEMU_SMS
 * multiprocessors (default 2) and compute capability 9.0, run
 * synchronously (SYMTRACE_CUDAEMU_REVERSE=1: a block's threads and the
 * grid's blocks run last first, exposing races the forward order hides); a kernel's error record (an index out of bounds) comes
 * back as the nvrtc backend reports it. SYMTRACE_CUDA_COLREDUCE=0 and
 * SYMTRACE_CUBLAS=0 switch NAME_col and the cuBLAS path off as on a GPU;
 * the NAME_mma variants (inline PTX) never run. */
st_backend *st_cudaemu_backend(void);
/* Registers "cudaemu" when a C++ compiler is there; else the error names
 * what is missing. */
st_status st_cudaemu_register(void);

/* ---- the C++ compiler (cxx.c) ----
 * $CXX (words split on spaces), else `c++`, probed once with
 * -dumpfullversion. False with the error set when it cannot run. */
bool st_cudaemu_available(void);
/* The compiler command and version in use (after st_cudaemu_available). */
const char *st_cudaemu_compiler(void);

/* ---- a cuBLAS plan's product on the host (gemm.c) ----
 * Runs plan p (p->ok) as cuBLAS would: every call and batch of it, the
 * column-major C' = op(A') op(B') with A' our B and B' our A, alpha 1,
 * beta 0, accumulating in double when p->f64 else in float, rounding into
 * c_dtype. a, b: the bases of our A and B (elements of ab_dtype); c: C
 * (the output buffer when p->direct, else the contiguous [batch..., M, N]
 * scratch product), elements of c_dtype. The dtypes are the caller's (the
 * plan's ab_dtype and c_dtype for real buffers; a test may keep float64
 * everywhere). ptrs: address the products through st_nvrtc_gemm_pointers
 * (the pointer-array call) instead of st_nvrtc_gemm_offsets. na, nb, nc >
 * 0: the element extents of a, b, c; an access outside [0, n) stops the
 * run and returns false. */
typedef struct {
    const void *a, *b;
    void *c;
    st_dtype ab_dtype, c_dtype;
    int64_t na, nb, nc;     /* 0: unchecked */
    bool ptrs;
} st_cudaemu_gemm_io;
bool st_cudaemu_gemm(const st_nvrtc_gemm *p, const st_cudaemu_gemm_io *io);

#endif
