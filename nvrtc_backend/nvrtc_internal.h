/* nvrtc_internal.h - what the files of nvrtc_backend/ share: a string
 * builder for the generated source and the prelude. Not installed; prefix
 * st_nvrtc_. */
#ifndef ST_NVRTC_INTERNAL_H
#define ST_NVRTC_INTERNAL_H

#include <pthread.h>

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

/* libsearch.c: one CUDA library loaded with dlopen (NVRTC, cuBLAS). The
 * caller fills name ("libnvrtc", for messages), env (the variable naming
 * files or directories to try first), sonames (NULL-terminated, newest
 * first), preload (a glob of a companion to load from the same directory
 * first, or NULL) and bind (its dlsym's; on a missing symbol it notes why
 * with st_nvrtc_lib_note and returns false); lock guards the rest. */
typedef struct st_nvrtc_lib st_nvrtc_lib;
struct st_nvrtc_lib {
    const char *name, *env;
    const char *const *sonames;
    const char *preload;
    bool (*bind)(st_nvrtc_lib *l, void *handle, const char *path);
    pthread_mutex_t lock;
    char *search_path;       /* the directories the Python layer found */
    void *handle;            /* loaded */
    char path[1024];         /* from where */
    char tried[2048];        /* what the last failed search tried */
};
void st_nvrtc_lib_set_search_path(st_nvrtc_lib *l, const char *paths);
void st_nvrtc_lib_note(st_nvrtc_lib *l, const char *what);
/* Searches and binds once (the caller holds l->lock); true when loaded. */
bool st_nvrtc_lib_load(st_nvrtc_lib *l);

/* cublas.c: runs plan p (p->ok) for arguments a on device dev's stream
 * (asynchronous): every call of the plan, C the output buffer when
 * p->direct, else the device's scratch product, grown as needed, whose
 * address goes to *prod (0 when direct). Errors name the cuBLAS call. */
st_status st_nvrtc_cublas_gemm(st_device *dev, const st_nvrtc_gemm *p,
                               const st_kargs *a, st_cu_ptr *prod);

/* backend.c: the error a kernel's error record e reports (ST_OK when its
 * code is 0), as the nvrtc backend raises it; kernel names the kernel for
 * the codes without a message of their own (NULL: unknown). Also the
 * cudaemu backend's (emu/cudaemu.c). */
st_status st_nvrtc_kerr_status(const st_nvrtc_kerr *e, const char *kernel);

/* modcache.c: mods[i] = the module holding kernel i of ks[0..n) (as kernel
 * 0 of its own translation unit; NULL for VIEW kernels), loaded from the
 * process's table, the disk cache or NVRTC (in parallel) for arch. */
st_status st_nvrtc_modules(const st_kernel *ks, int n, const char *arch,
                           st_cu_module *mods);

#endif
