/* st_backend.h - the one interface a backend implements (compile a list of
 * kernels, launch one of them) and registers with the runtime. The runtime
 * never names a backend's internals. Prefix: st_backend_. */
#ifndef ST_BACKEND_H
#define ST_BACKEND_H

#include "st_kernel.h"

typedef enum { ST_DEV_CPU = 0, ST_DEV_CUDA = 1, ST_NDEVTYPES } st_device_type;

typedef struct st_backend {
    const char *name;           /* "interp", "llvm", "nvrtc" */
    st_device_type device;      /* where its kernels run */
    /* Compiles kernels ks[0..n) (VIEW kernels included: a backend skips
     * them). Returns an opaque handle or NULL with the error set. The
     * kernels stay alive and unchanged while the handle lives. */
    void *(*compile)(struct st_backend *be, const st_kernel *ks, int n);
    /* Runs kernel `index` of a compiled handle. Synchronous on the CPU.
     * Returns non-OK with the error set (e.g. an index out of bounds). */
    st_status (*launch)(struct st_backend *be, void *compiled, int index,
                        const st_kargs *args);
    void (*release)(struct st_backend *be, void *compiled);
    /* Optional: a string folded into kernel-cache keys (compiler version,
     * target). NULL means the name alone. */
    const char *(*cache_tag)(struct st_backend *be);
    void *impl;                 /* backend-private state */
} st_backend;

/* Registry: backends register at start-up; lookup by name. */
st_status st_backend_register(st_backend *be);
st_backend *st_backend_get(const char *name);   /* NULL if absent */

/* The reference backend (plain C loops over the kernel IR), always there. */
st_backend *st_interp_backend(void);

/* Counter-based random numbers (Philox4x32-10) shared by every backend. */
void st_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);
/* Uniform [0, 1) float from the generator at (seed, offset). */
double st_rand_uniform(uint64_t seed, uint64_t offset);
/* Uniform [0, 1) of the float dtypes narrower than float64 (24 bits, a
 * multiple of 2^-24): point i of a launch at offset; four points share a
 * Philox block, so that vectorized kernels run a quarter of the rounds. */
double st_rand_uniform_f(uint64_t seed, uint64_t offset, uint64_t i);
/* The largest uniform of dtype dt (its values are clamped to it). */
double st_rand_top(st_dtype dt);
/* Standard normal (Box-Muller on two uniforms of the same counter). */
double st_rand_normal(uint64_t seed, uint64_t offset);

#endif
