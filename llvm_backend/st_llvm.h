/* st_llvm.h - the LLVM CPU backend: kernel IR -> LLVM IR (LLVM-C) -> -O3
 * with the loop and SLP vectorizers for the host CPU -> an object file per
 * distinct kernel (kept in memory and in the on-disk kernel cache) -> ORC
 * LLJIT; kernels split their outer loop across a thread pool; matmul goes to OpenBLAS when built with it. The
 * one public entry is st_llvm_backend(); prefix st_llvm_. */
#ifndef ST_LLVM_H
#define ST_LLVM_H

#include "st_runtime.h"

/* The backend "llvm" (registered with the runtime on first call). NULL with
 * the error set if the JIT cannot be created on this machine. */
st_backend *st_llvm_backend(void);

typedef struct {
    int64_t compiles;     /* modules generated and optimized by LLVM (one
                             per distinct kernel: the cache is per kernel) */
    int64_t mem_hits;     /* kernels found compiled in memory by compile() */
    int64_t disk_hits;    /* objects loaded from the on-disk cache */
    int64_t kernels;      /* kernel functions generated (compiles only) */
    int64_t launches;
    int64_t parallel_launches; /* launches split across the thread pool */
    int64_t merged_launches;   /* elementwise launches whose adjacent dims were
                                  merged into longer rows (jit.c merge_dims) */
    int threads;          /* size of the thread pool (workers + caller) */
    bool have_blas;       /* matmul through OpenBLAS */
} st_llvm_stats_t;

void st_llvm_stats(st_llvm_stats_t *out);
/* Forgets compiled entries that no live handle uses (so a later compile of
 * the same kernels goes to the disk cache); resets nothing else. */
void st_llvm_cache_clear_memory(void);
/* LLVM version string ("19.1.7"). */
const char *st_llvm_version(void);

#endif
