/* cudaemu.c - the "cudaemu" st_backend, a TESTING backend: it runs the
 * NVRTC renderer's CUDA C on the CPU so that generated kernels are run and
 * checked against interp where there is no GPU (CI). Not for production:
 * every CUDA thread is a fiber. compile = st_nvrtc_render of the kernel
 * list, `asm volatile(` rewritten into ST_EMU_ASM( (inline PTX fails the
 * launch), the entry line appended, compiled and loaded by cxx.c, each
 * kernel's functions looked up (NAME, NAME_col, NAME_epi; never
 * NAME_mma). launch = the nvrtc backend's decisions (backend.c) on an
 * emulated device of SYMTRACE_CUDAEMU_SMS multiprocessors (default 2),
 * compute capability 9.0: st_nvrtc_launch_config, NAME_col when
 * st_nvrtc_col_config says so (unless SYMTRACE_CUDA_COLREDUCE=0) with a
 * zeroed host scratch that the kernels keep zeroed (checked after each
 * launch), a MATMUL through its cuBLAS plan (st_cudaemu_gemm) and NAME_epi
 * (unless SYMTRACE_CUBLAS=0), else the NVRTC matmul kernel. Launches are
 * synchronous and serialized (one emulated stream); the kernel's error
 * record is read after each and reported as the nvrtc backend does
 * (st_nvrtc_kerr_status). SYMTRACE_CUDAEMU_REVERSE=1: each block's threads
 * and the grid's blocks run last first. Fiber stacks: one pool, mapped
 * once. Owns: st_cudaemu_backend, st_cudaemu_register. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudaemu_internal.h"
#include "nvrtc_internal.h"

#define EMU_CC 90
#define STACK_SIZE (128u * 1024u)
#define MAX_THREADS 1024u

typedef void (*kfn)(void);

typedef struct {
    int n;
    const st_kernel *ks;
    st_cudaemu_entry_fn entry;
    kfn *fn, *fn_epi, *fn_col;   /* per kernel; NULL where absent */
} compiled;

static void release(st_backend *be, void *h)
{
    (void)be;
    compiled *c = h;
    if (!c)
        return;
    free(c->fn);   /* the object stays loaded (cxx.c's table) */
    free(c->fn_epi);
    free(c->fn_col);
    free(c);
}

static bool env_is(const char *name, char v)
{
    const char *e = getenv(name);
    return e && e[0] == v;
}

static int emu_sms(void)
{
    const char *e = getenv("SYMTRACE_CUDAEMU_SMS");
    int v = e && e[0] ? atoi(e) : 2;
    return v < 1 ? 1 : v > 1024 ? 1024 : v;
}

/* the source as compiled: inline PTX rewritten, the entry point appended */
static char *emu_source(const char *src)
{
    static const char pat[] = "asm volatile(", rep[] = "ST_EMU_ASM(";
    size_t n = strlen(src), hits = 0;
    for (const char *p = strstr(src, pat); p; p = strstr(p + 1, pat))
        hits++;
    static const char tail[] = "\n/* cudaemu */\nST_CUDAEMU_ENTRY\n";
    char *out = malloc(n + hits * sizeof rep + sizeof tail + 1);
    if (!out)
        return NULL;
    char *o = out;
    const char *p = src;
    for (const char *q = strstr(p, pat); q; q = strstr(p, pat)) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, rep, sizeof rep - 1);
        o += sizeof rep - 1;
        p = q + sizeof pat - 1;
    }
    size_t rest = strlen(p);
    memcpy(o, p, rest);
    o += rest;
    memcpy(o, tail, sizeof tail);
    return out;
}

static bool lookup(void *so, const char *name, kfn *out)
{
    *(void **)out = dlsym(so, name);
    if (!*out) {
        st_err(ST_ERR_RUNTIME, "cudaemu: the compiled object has no kernel %s", name);
        return false;
    }
    return true;
}

static void *compile(st_backend *be, const st_kernel *ks, int n)
{
    compiled *c = calloc(1, sizeof *c);
    if (!c) {
        st_err(ST_ERR_MEMORY, "cudaemu: out of memory");
        return NULL;
    }
    c->n = n;
    c->ks = ks;
    c->fn = calloc((size_t)n + 1, sizeof *c->fn);
    c->fn_epi = calloc((size_t)n + 1, sizeof *c->fn_epi);
    c->fn_col = calloc((size_t)n + 1, sizeof *c->fn_col);
    if (!c->fn || !c->fn_epi || !c->fn_col) {
        st_err(ST_ERR_MEMORY, "cudaemu: out of memory");
        release(be, c);
        return NULL;
    }
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= ks[i].kind != ST_K_VIEW;
    if (!any)
        return c;
    char *src = st_nvrtc_render(ks, n);
    char *full = src ? emu_source(src) : NULL;
    free(src);
    if (!full) {
        if (st_err_kind() == ST_OK)
            st_err(ST_ERR_MEMORY, "cudaemu: out of memory");
        release(be, c);
        return NULL;
    }
    void *so = NULL;
    st_status s = st_cudaemu_load(full, &so, &c->entry);
    free(full);
    for (int i = 0; s == ST_OK && i < n; i++) {
        const st_kernel *k = &ks[i];
        if (k->kind == ST_K_VIEW)
            continue;
        char name[128], vn[160];
        st_nvrtc_kernel_name(k, i, name, sizeof name);
        if (!lookup(so, name, &c->fn[i]))
            s = st_err_kind();
        if (s == ST_OK && k->kind == ST_K_MATMUL && st_nvrtc_has_epi(k)) {
            snprintf(vn, sizeof vn, "%s_epi", name);
            if (!lookup(so, vn, &c->fn_epi[i]))
                s = st_err_kind();
        }
        st_nvrtc_col col;
        st_nvrtc_col_plan(k, &col);
        if (s == ST_OK && col.ok) {
            snprintf(vn, sizeof vn, "%s_col", name);
            if (!lookup(so, vn, &c->fn_col[i]))
                s = st_err_kind();
        }
    }
    if (s != ST_OK) {
        release(be, c);
        return NULL;
    }
    return c;
}

/* ---- the emulated device: one stream (launches serialized), its error
 * record, the fiber stacks, the column scratch and the gemm product ---- */
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static st_nvrtc_kerr kerr;
static char *stacks;              /* MAX_THREADS stacks, a guard page under each */
static char *col_buf;
static size_t col_len;
static void *prod_buf;
static size_t prod_len;

static st_status stacks_get(void)
{
    if (stacks)
        return ST_OK;
    size_t len = (size_t)MAX_THREADS * STACK_SIZE;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return st_err(ST_ERR_MEMORY, "cudaemu: cannot map %zu bytes of fiber stacks", len);
    long pg = sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < MAX_THREADS && pg > 0; i++)
        mprotect((char *)p + (size_t)i * STACK_SIZE, (size_t)pg, PROT_NONE);
    stacks = p;
    return ST_OK;
}

/* The zeroed scratch of a NAME_col launch (kept zeroed by the kernels) */
static st_status col_scratch(size_t n, void **out)
{
    if (!col_buf || col_len < n) {
        size_t len = (n + 0xffff) & ~(size_t)0xffff;
        char *p = calloc(1, len);
        if (!p)
            return st_err(ST_ERR_MEMORY, "cudaemu: out of memory (column scratch)");
        free(col_buf);
        col_buf = p;
        col_len = len;
    }
    *out = col_buf;
    return ST_OK;
}

/* Runs kernel function f of compiled c (the device lock held) and reads
 * the error record. */
static st_status run(compiled *c, const st_kernel *k, kfn f, int sig, const st_nvrtc_launch *L,
                     const st_kargs *args, void *extra)
{
    st_status s = stacks_get();
    if (s != ST_OK)
        return s;
    st_cudaemu_launch E;
    memset(&E, 0, sizeof E);
    for (int i = 0; i < 3; i++) {
        E.grid[i] = L->grid[i];
        E.block[i] = L->block[i];
    }
    E.fn = f;
    E.sig = sig;
    E.args = args;
    E.flags = L->flags;
    E.err = &kerr;
    E.extra = extra;
    E.name = k->name;
    E.reverse = env_is("SYMTRACE_CUDAEMU_REVERSE", '1');
    E.stacks = stacks;
    E.stack_size = STACK_SIZE;
    E.nstacks = MAX_THREADS;
    memset(&kerr, 0, sizeof kerr);
    if (c->entry(&E) != 0)
        return st_err(ST_ERR_RUNTIME, "cudaemu: %s", E.msg);
    st_nvrtc_kerr e = kerr;
    memset(&kerr, 0, sizeof kerr);
    return st_nvrtc_kerr_status(&e, k->name);
}

static int64_t prod_dims(const st_kargs *a, int lo, int hi)
{
    int64_t p = 1;
    for (int d = lo; d < hi; d++)
        p *= a->shape[d];
    return p;
}

/* A MATMUL by its cuBLAS plan: the product on the host, then NAME_epi
 * over it unless direct (backend.c gemm_launch). */
static st_status gemm_launch(compiled *c, int index, const st_kargs *args,
                             const st_nvrtc_gemm *plan, int sms)
{
    const st_kernel *k = &c->ks[index];
    st_cudaemu_gemm_io io;
    memset(&io, 0, sizeof io);
    io.a = args->bufs[0].data;
    io.b = args->bufs[1].data;
    io.ab_dtype = plan->ab_dtype;
    io.c_dtype = plan->c_dtype;
    if (plan->direct) {
        io.c = args->bufs[plan->out_buf].data;
        st_cudaemu_gemm(plan, &io);
        return ST_OK;
    }
    size_t need = (size_t)plan->scratch_bytes;
    if (!prod_buf || prod_len < need) {
        void *p = malloc(need ? need : 1);
        if (!p)
            return st_err(ST_ERR_MEMORY, "cudaemu: out of memory (%zu bytes of product)", need);
        free(prod_buf);
        prod_buf = p;
        prod_len = need;
    }
    io.c = prod_buf;
    st_cudaemu_gemm(plan, &io);
    st_nvrtc_launch L = st_nvrtc_epi_launch_config(k, args, sms);
    if (L.empty)
        return ST_OK;
    return run(c, k, c->fn_epi[index], plan->f64 ? ST_CUDAEMU_SIG_DOUBLEP : ST_CUDAEMU_SIG_FLOATP,
               &L, args, prod_buf);
}

/* the launch (the device lock held) */
static st_status launch_locked(compiled *c, int index, const st_kargs *args)
{
    const st_kernel *k = &c->ks[index];
    int sms = emu_sms();
    if (k->kind == ST_K_MATMUL && c->fn_epi[index] && !env_is("SYMTRACE_CUBLAS", '0')) {
        st_nvrtc_gemm plan;
        st_nvrtc_gemm_plan(k, args, &plan);
        if (plan.empty)
            return ST_OK;
        if (env_is("SYMTRACE_CUBLAS_LOG", '1'))
            fprintf(stderr, "symtrace cudaemu gemm: %s: %s%s (m %d n %d k %d, batch %d, %lld "
                    "call%s)\n", k->name, plan.ok ? "cuBLAS plan " : "NVRTC kernel: ",
                    plan.ok ? (plan.direct ? "into the output" : "into scratch + _epi")
                            : plan.why, plan.m, plan.n, plan.k, plan.batch,
                    (long long)plan.calls, plan.calls == 1 ? "" : "s");
        if (plan.ok)
            return gemm_launch(c, index, args, &plan, sms);
    }
    st_nvrtc_launch L = {.col = false};
    if (k->kind == ST_K_REDUCE && c->fn_col[index] && !env_is("SYMTRACE_CUDA_COLREDUCE", '0')) {
        L = st_nvrtc_col_config(k, args, sms);
        if (L.col && env_is("SYMTRACE_CUDA_COLREDUCE_LOG", '1'))
            fprintf(stderr, "symtrace colreduce: %s: NAME_col (grid %ux%u, block %ux%u)\n",
                    k->name, L.grid[0], L.grid[1], L.block[0], L.block[1]);
    }
    if (!L.col)
        L = st_nvrtc_launch_config(k, args, sms, EMU_CC);
    if (L.empty)
        return ST_OK;
    if (!L.col) /* NAME_mma (inline PTX) never runs here */
        return run(c, k, c->fn[index], ST_CUDAEMU_SIG3, &L, args, NULL);
    void *scr = NULL;
    st_status s = ST_OK;
    if (L.col_scratch > 0 && (s = col_scratch((size_t)L.col_scratch, &scr)) != ST_OK)
        return s;
    s = run(c, k, c->fn_col[index], ST_CUDAEMU_SIG_VOIDP, &L, args, scr);
    if (s == ST_OK && scr) {
        /* the last block of each tile resets its counter for the next launch */
        int64_t ntiles = (prod_dims(args, 0, k->rank - k->nred) + 31) / 32;
        const unsigned *cnt = scr;
        for (int64_t t = 0; t < ntiles; t++)
            if (cnt[t] != 0)
                return st_err(ST_ERR_RUNTIME, "cudaemu: kernel %s_col left the counter of tile "
                              "%lld at %u (the scratch must stay zeroed between launches)",
                              k->name, (long long)t, cnt[t]);
    }
    return s;
}

static st_status launch(st_backend *be, void *h, int index, const st_kargs *args)
{
    (void)be;
    compiled *c = h;
    if (!c || index < 0 || index >= c->n)
        return st_err(ST_ERR_INDEX, "cudaemu: kernel index %d out of range (%d kernels)", index,
                      c ? c->n : 0);
    if (c->ks[index].kind == ST_K_VIEW)
        return ST_OK;
    pthread_mutex_lock(&dev_mu);
    st_status s = launch_locked(c, index, args);
    pthread_mutex_unlock(&dev_mu);
    return s;
}

static const char *cache_tag(st_backend *be)
{
    (void)be;
    static char tag[96];
    const char *cx = st_cudaemu_compiler();
    snprintf(tag, sizeof tag, "cudaemu-%.80s", cx ? cx : "none");
    return tag;
}

static st_backend emu_be = {
    .name = "cudaemu",
    .device = ST_DEV_CPU,
    .compile = compile,
    .launch = launch,
    .release = release,
    .cache_tag = cache_tag,
};

st_backend *st_cudaemu_backend(void)
{
    return &emu_be;
}

st_status st_cudaemu_register(void)
{
    if (st_backend_get("cudaemu"))
        return ST_OK;
    if (!st_cudaemu_available())
        return st_err_kind();
    st_status s = st_backend_register(&emu_be);
    if (s != ST_OK && st_backend_get("cudaemu")) { /* registered meanwhile */
        st_err_clear();
        return ST_OK;
    }
    return s;
}
