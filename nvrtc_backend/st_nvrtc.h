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
    int32_t code;        /* 0 ok, ST_NVRTC_EINDEX, ST_NVRTC_EPOW */
    int32_t dim;
    int64_t value, size;
} st_nvrtc_kerr;
enum { ST_NVRTC_EINDEX = 1, ST_NVRTC_EPOW = 2 };

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

/* ---- launch decisions (launch.c; plain C, testable without a GPU) ---- */
typedef struct {
    unsigned grid[3], block[3];
    unsigned flags;
    bool mma;            /* launch NAME_mma instead of NAME */
    bool empty;          /* nothing to do (a zero-size iteration space) */
} st_nvrtc_launch;

/* Layout flags of an ELEMENTWISE launch for arguments a. */
unsigned st_nvrtc_ew_flags(const st_kernel *k, const st_kargs *a);
/* Grid and block for kernel k with arguments a on a device with sm_count
 * multiprocessors and compute capability cc (e.g. 90). */
st_nvrtc_launch st_nvrtc_launch_config(const st_kernel *k, const st_kargs *a,
                                       int sm_count, int cc);

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
