/* nvrtc_internal.h - what the files of nvrtc_backend/ share: a string
 * builder for the generated source and the prelude. Not installed; prefix
 * st_nvrtc_. */
#ifndef ST_NVRTC_INTERNAL_H
#define ST_NVRTC_INTERNAL_H

#include "st_cuda.h"
#include "st_nvrtc.h"

typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
} st_nvrtc_sb;

void st_nvrtc_sbf(st_nvrtc_sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void st_nvrtc_sbs(st_nvrtc_sb *b, const char *s);
/* Appends the prelude (with the host layout macros it checks). */
void st_nvrtc_prelude(st_nvrtc_sb *b);

/* cublas.c: runs plan p (p->ok) for arguments a on device dev's stream
 * (asynchronous): every call of the plan, C the output buffer when
 * p->direct, else the device's scratch product, grown as needed, whose
 * address goes to *prod (0 when direct). Errors name the cuBLAS call. */
st_status st_nvrtc_cublas_gemm(st_device *dev, const st_nvrtc_gemm *p,
                               const st_kargs *a, st_cu_ptr *prod);

/* modcache.c: mods[i] = the module holding kernel i of ks[0..n) (as kernel
 * 0 of its own translation unit; NULL for VIEW kernels), loaded from the
 * process's table, the disk cache or NVRTC (in parallel) for arch. */
st_status st_nvrtc_modules(const st_kernel *ks, int n, const char *arch,
                           st_cu_module *mods);

#endif
