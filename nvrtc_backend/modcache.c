/* modcache.c - the CUDA modules of kernels: each kernel of a graph is
 * rendered alone (named as kernel 0 of its own translation unit), so the
 * same kernel met again (the twelve layers of BERT, the next graph, the
 * next eager op) has the same source; one module per distinct source,
 * kept for the process. Sources not loaded yet come from the disk cache
 * (runtime/kcache.c, key nvrtc-<NVRTC version>-<arch>-<source hash>) or
 * are compiled by NVRTC, several at once on worker threads (NVRTC
 * compiles of one big translation unit took minutes for BERT base).
 * Owns: st_nvrtc_modules. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "nvrtc_internal.h"
#include "st_cuda.h"

typedef struct {
    XXH128_hash_t h;
    st_cu_module mod;
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *tab;               /* open addressing, cap a power of two */
static size_t cap, used;

static size_t slot_of(XXH128_hash_t h)
{
    size_t m = cap - 1, j = (size_t)h.low64 & m;
    while (tab[j].mod && !XXH128_isEqual(tab[j].h, h))
        j = (j + 1) & m;
    return j;
}

static st_cu_module find(XXH128_hash_t h)
{
    return cap ? tab[slot_of(h)].mod : NULL;
}

static st_status put(XXH128_hash_t h, st_cu_module mod)
{
    if (2 * (used + 1) > cap) {
        size_t ncap = cap ? 2 * cap : 256;
        entry *old = tab;
        size_t ocap = cap;
        tab = calloc(ncap, sizeof *tab);
        if (!tab) {
            tab = old;
            return st_err(ST_ERR_MEMORY, "nvrtc: out of memory (module table)");
        }
        cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].mod)
                tab[slot_of(old[i].h)] = old[i];
        free(old);
    }
    size_t j = slot_of(h);
    if (!tab[j].mod)
        used++;
    tab[j].h = h;
    tab[j].mod = mod;
    return ST_OK;
}

/* one distinct source to load */
typedef struct {
    char *src;
    XXH128_hash_t h;
    char key[96];
    void *image;                 /* cubin, from the disk or NVRTC */
    size_t size;
    bool from_disk;
    char err[1024];              /* a worker's error */
} job;

typedef struct {
    job *jobs;
    int n;
    atomic_int next;
    const char *arch;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) {
        job *j = &p->jobs[i];
        if (j->image)
            continue;
        st_nvrtc_output out;
        if (st_nvrtc_compile(j->src, "symtrace_kernel.cu", p->arch, false, &out) != ST_OK) {
            snprintf(j->err, sizeof j->err, "%s", st_err_msg());
            continue;
        }
        j->image = out.image;
        j->size = out.size;
        out.image = NULL;
        st_nvrtc_output_free(&out);
    }
    return NULL;
}

static int nthreads(int jobs)
{
    const char *e = getenv("SYMTRACE_NVRTC_THREADS");
    long n = e && *e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > 32)
        n = 32;
    return jobs < n ? jobs : (int)n;
}

/* compiles the jobs without an image, on up to nthreads threads */
static st_status compile_all(job *jobs, int n, const char *arch)
{
    int todo = 0;
    for (int i = 0; i < n; i++)
        todo += jobs[i].image == NULL;
    if (!todo)
        return ST_OK;
    pool p = {.jobs = jobs, .n = n, .arch = arch};
    atomic_init(&p.next, 0);
    int nt = nthreads(todo);
    pthread_t th[32];
    int started = 0;
    for (int t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, worker, &p) == 0)
            started++;
    worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < n; i++)
        if (jobs[i].err[0])
            return st_err(ST_ERR_RUNTIME, "%s", jobs[i].err);
    return ST_OK;
}

st_status st_nvrtc_modules(const st_kernel *ks, int n, const char *arch,
                           st_cu_module *mods)
{
    const st_cuda_api *api = st_cuda_api_get();
    if (!api)
        return st_err_kind();
    if (!st_nvrtc_available())
        return st_err_kind();
    job *jobs = calloc((size_t)n + 1, sizeof *jobs);
    int *which = malloc(sizeof(int) * ((size_t)n + 1));  /* kernel -> job, -1 */
    if (!jobs || !which) {
        free(jobs);
        free(which);
        return st_err(ST_ERR_MEMORY, "nvrtc: out of memory");
    }
    st_status s = ST_OK;
    int nj = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n && s == ST_OK; i++) {
        mods[i] = NULL;
        which[i] = -1;
        if (ks[i].kind == ST_K_VIEW)
            continue;
        char *src = st_nvrtc_render(&ks[i], 1);
        if (!src) {
            s = st_err_kind();
            break;
        }
        XXH3_state_t *hs = XXH3_createState();
        XXH128_hash_t h;
        if (!hs) {
            free(src);
            s = st_err(ST_ERR_MEMORY, "nvrtc: out of memory");
            break;
        }
        XXH3_128bits_reset(hs);
        XXH3_128bits_update(hs, arch, strlen(arch));
        XXH3_128bits_update(hs, src, strlen(src));
        h = XXH3_128bits_digest(hs);
        XXH3_freeState(hs);
        if ((mods[i] = find(h))) {
            free(src);
            continue;
        }
        for (int j = 0; j < nj && which[i] < 0; j++)
            if (XXH128_isEqual(jobs[j].h, h))
                which[i] = j;
        if (which[i] >= 0) {
            free(src);
            continue;
        }
        job *jb = &jobs[nj];
        jb->src = src;
        jb->h = h;
        snprintf(jb->key, sizeof jb->key, "nvrtc-%s-%s-%016llx%016llx",
                 st_nvrtc_version() ? st_nvrtc_version() : "x", arch,
                 (unsigned long long)h.high64, (unsigned long long)h.low64);
        jb->from_disk = st_kcache_load(jb->key, &jb->image, &jb->size);
        which[i] = nj++;
    }
    if (s == ST_OK)
        s = compile_all(jobs, nj, arch);
    st_cu_module *jm = calloc((size_t)nj + 1, sizeof *jm);
    if (s == ST_OK && !jm)
        s = st_err(ST_ERR_MEMORY, "nvrtc: out of memory");
    for (int j = 0; s == ST_OK && j < nj; j++) {
        s = st_cuda_check(api->ModuleLoadData(&jm[j], jobs[j].image), "cuModuleLoadData");
        if (s == ST_OK)
            s = put(jobs[j].h, jm[j]);
        if (s == ST_OK && !jobs[j].from_disk &&
            st_kcache_store(jobs[j].key, jobs[j].image, jobs[j].size) != ST_OK)
            st_err_clear();     /* the disk cache is best effort */
    }
    for (int i = 0; s == ST_OK && i < n; i++)
        if (which[i] >= 0)
            mods[i] = jm[which[i]];
    pthread_mutex_unlock(&mu);
    for (int j = 0; j < nj; j++) {
        free(jobs[j].src);
        free(jobs[j].image);
    }
    free(jobs);
    free(which);
    free(jm);
    return s;
}
