/* jit.c - the "llvm" backend object: target machine for the host CPU,
 * compile (kernel IR -> one LLVM module per distinct kernel -> default<O3>
 * with the loop and SLP vectorizers -> object file), the kernel cache, the
 * ORC LLJIT that links objects (our helpers registered as absolute
 * symbols: the build hides them from dlsym), launch (argument checks, the
 * split across the thread pool, error codes -> messages), and with
 * SYMTRACE_DUMP_DIR set the optimized module of each compiled kernel as
 * <dir>/<kernel key>.ll (also on a cache hit).
 *
 * The cache is per kernel, as the nvrtc backend's (modcache.c): a kernel's
 * key is its structure (st_kernel_hash and what that may not cover),
 * never its sizes or the graph values its buffers bind, so the kernels of
 * a list that differ only there (the 2n norms of n gradients, the layers
 * of a model) are one function, and a kernel met again (the next graph,
 * the next eager op) is not compiled again. A compiled kernel is kept for
 * the process (in memory by key; on disk through runtime/kcache.c: a hit
 * loads the object without compiling). The kernels a compile must build
 * are built several at once on the thread pool, each pool thread with a
 * target machine of its own (one is not to be shared between threads; the
 * caller, holding the cache's lock, uses the backend's).
 * Owns: st_llvm_backend, st_llvm_stats, st_llvm_cache_clear_memory. */
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "llvm_internal.h"

#define FORMAT_VERSION "st-llvm-obj-23" /* 23: elementwise rows stepped as an odometer; 22: independent reductions of a row kernel share a pass; the splat paths */

/* one compiled kernel, kept for the process (until
 * st_llvm_cache_clear_memory finds it unused) */
typedef struct centry {
    XXH128_hash_t h;
    char key[48];
    st_llvm_fn fn;
    LLVMOrcResourceTrackerRef rt;
    int refs;                    /* kernels of live handles using it */
    struct centry *next;         /* every entry */
} centry;

typedef struct {
    const st_kernel *ks;
    int n;
    st_llvm_fn *fns;             /* per kernel; NULL for VIEW */
    centry **ents;               /* per kernel; NULL for VIEW */
    bool *colpath;               /* per kernel: st_llvm_has_colreduce */
} handle;

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    bool ok;
    char init_err[512];
    LLVMOrcLLJITRef jit;
    LLVMOrcJITDylibRef dylib;
    LLVMTargetRef target;
    LLVMTargetMachineRef tm;
    char *triple, *cpu, *features;
    char tag[256];
    XXH128_hash_t thash;         /* format, LLVM version, triple, cpu, features */
    centry *entries;
    centry **tab;                /* open addressing over entries; cap a power of 2 */
    size_t cap, used;
    atomic_llong compiles, mem_hits, disk_hits, kernels, launches, parallel, merged;
} J = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static void take_error(LLVMErrorRef e, char *buf, size_t n, const char *what)
{
    char *m = LLVMGetErrorMessage(e);
    snprintf(buf, n, "%s: %s", what, m ? m : "?");
    LLVMDisposeErrorMessage(m);
}

static void hs(XXH3_state_t *st, const char *s)
{
    XXH3_128bits_update(st, s, strlen(s) + 1);
}

static LLVMTargetMachineRef new_tm(void)
{
    return LLVMCreateTargetMachine(J.target, J.triple, J.cpu, J.features,
                                   LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                   LLVMCodeModelSmall);
}

static void jit_init(void)
{
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&J.jit, LLVMOrcCreateLLJITBuilder());
    if (e) {
        take_error(e, J.init_err, sizeof J.init_err, "cannot create LLJIT");
        return;
    }
    J.dylib = LLVMOrcLLJITGetMainJITDylib(J.jit);
    int ns;
    const st_llvm_sym *syms = st_llvm_symbols(&ns);
    LLVMOrcCSymbolMapPair *pairs = calloc((size_t)ns, sizeof *pairs);
    if (!pairs) {
        snprintf(J.init_err, sizeof J.init_err, "out of memory");
        return;
    }
    for (int i = 0; i < ns; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(J.jit, syms[i].name);
        pairs[i].Sym.Address = (LLVMOrcJITTargetAddress)(uintptr_t)syms[i].addr;
        pairs[i].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[i].Sym.Flags.TargetFlags = 0;
    }
    e = LLVMOrcJITDylibDefine(J.dylib, LLVMOrcAbsoluteSymbols(pairs, (size_t)ns));
    free(pairs);
    if (e) {
        take_error(e, J.init_err, sizeof J.init_err, "cannot define symbols");
        return;
    }
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(J.jit), NULL, NULL);
    if (e)
        LLVMConsumeError(e);
    else
        LLVMOrcJITDylibAddGenerator(J.dylib, gen);
    J.triple = strdup(LLVMOrcLLJITGetTripleString(J.jit));
    J.cpu = LLVMGetHostCPUName();
    J.features = LLVMGetHostCPUFeatures();
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(J.triple, &J.target, &msg)) {
        snprintf(J.init_err, sizeof J.init_err, "no target for %s: %s",
                 J.triple, msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return;
    }
    J.tm = new_tm();
    if (!J.tm) {
        snprintf(J.init_err, sizeof J.init_err, "cannot create a target machine");
        return;
    }
    snprintf(J.tag, sizeof J.tag, "llvm-%s-%s", st_llvm_version(), J.cpu);
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    hs(&st, FORMAT_VERSION);
    hs(&st, st_llvm_version());
    hs(&st, J.triple);
    hs(&st, J.cpu);
    hs(&st, J.features);
    J.thash = XXH3_128bits_digest(&st);
    J.ok = true;
}

static bool ready(void)
{
    pthread_once(&J.once, jit_init);
    if (!J.ok)
        st_err(ST_ERR_RUNTIME, "llvm backend unavailable: %s", J.init_err);
    return J.ok;
}

/* ---- validation (a bad hand-built kernel is an error, not a crash) ---- */

static st_status validate(const st_kernel *k, int idx)
{
    return st_kernel_verify(k, idx, "llvm");
}

/* ---- keys ---- */

static void hw(XXH3_state_t *st, int64_t v)
{
    XXH3_128bits_update(st, &v, sizeof v);
}

/* The key of kernel k (not a VIEW): the target's and what the code depends
 * on, never the kernel's name, sizes or bound values. */
static XXH128_hash_t kernel_key(const st_kernel *k)
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, &J.thash, sizeof J.thash);
    hw(&st, k->kind);
    hw(&st, (int64_t)st_kernel_hash(k));
    /* what st_kernel_hash may not cover: several reductions, the epilogue
     * form, which reduction a REDUCED node reads */
    hw(&st, k->nreduce);
    for (int r = 0; r < ST_K_MAX_REDUCE && r < k->nreduce; r++) {
        hw(&st, k->reduce[r].op);
        hw(&st, k->reduce[r].src);
    }
    hw(&st, k->final_per_point);
    for (int j = 0; j < k->nnodes; j++)
        if (k->nodes[j].kind == ST_KN_REDUCED)
            hw(&st, k->nodes[j].i);
    hw(&st, k->nstores);
    for (int s = 0; s < k->nstores; s++) {
        hw(&st, k->stores[s].indexed);
        hw(&st, k->stores[s].accumulate);
        hw(&st, k->stores[s].idx_dim);
        hw(&st, k->stores[s].idx_node);
    }
    for (int b = 0; b < k->nbufs; b++)
        hw(&st, k->bufs[b].dimmap[k->rank > 0 ? k->rank - 1 : 0]);
    return XXH3_128bits_digest(&st);
}

static void key_str(XXH128_hash_t h, char *key, size_t kn)
{
    snprintf(key, kn, "llvm_%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

static void fn_name(char *buf, size_t n, const char *key)
{
    snprintf(buf, n, "stk_%s", key + 5);
}

/* ---- the table of compiled kernels (under J.mu) ---- */

static size_t slot_of(XXH128_hash_t h)
{
    size_t m = J.cap - 1, j = (size_t)h.low64 & m;
    while (J.tab[j] && !XXH128_isEqual(J.tab[j]->h, h))
        j = (j + 1) & m;
    return j;
}

static centry *tab_find(XXH128_hash_t h)
{
    return J.cap ? J.tab[slot_of(h)] : NULL;
}

/* Indexes every entry of J.entries in a table of at least ncap slots. */
static st_status tab_rebuild(size_t ncap)
{
    size_t n = 0;
    for (centry *e = J.entries; e; e = e->next)
        n++;
    if (ncap < 256)
        ncap = 256;
    while (2 * n > ncap)
        ncap *= 2;
    centry **t = calloc(ncap, sizeof *t);
    if (!t)
        return st_err(ST_ERR_MEMORY, "llvm: out of memory (kernel table)");
    free(J.tab);
    J.tab = t;
    J.cap = ncap;
    J.used = n;
    for (centry *e = J.entries; e; e = e->next)
        J.tab[slot_of(e->h)] = e;
    return ST_OK;
}

/* Indexes J.entries again in the table as it is (after entries were
 * dropped: they fit). */
static void tab_reindex(void)
{
    if (!J.cap)
        return;
    memset(J.tab, 0, J.cap * sizeof *J.tab);
    J.used = 0;
    for (centry *e = J.entries; e; e = e->next) {
        J.tab[slot_of(e->h)] = e;
        J.used++;
    }
}

/* Adds e (not in the table yet) to J.entries and the table. */
static st_status tab_put(centry *e)
{
    if (2 * (J.used + 1) > J.cap) {
        e->next = J.entries;       /* counted and indexed by the rebuild */
        J.entries = e;
        st_status s = tab_rebuild(J.cap ? 2 * J.cap : 256);
        if (s != ST_OK)
            J.entries = e->next;
        return s;
    }
    e->next = J.entries;
    J.entries = e;
    J.tab[slot_of(e->h)] = e;
    J.used++;
    return ST_OK;
}

/* ---- building an object ---- */

/* SYMTRACE_DUMP_DIR, or NULL when unset or empty (read at every call). */
static const char *dump_dir(void)
{
    const char *d = getenv("SYMTRACE_DUMP_DIR");
    return d && *d ? d : NULL;
}

static void dump_path(char *buf, size_t n, const char *dir, const char *key)
{
    snprintf(buf, n, "%s/%s.ll", dir, key);
}

/* The kernels of a compile call that one module serves: ks[i] for every i
 * with which[i] == self (for the names in a dump). */
typedef struct {
    const st_kernel *ks;
    const int *which;
    int n, self;
} users;

/* Writes the optimized module M of kernel k to $SYMTRACE_DUMP_DIR/<key>.ll,
 * headed by a comment naming the kernels of the list it serves and its
 * function. Best effort. */
static void dump_module(LLVMModuleRef M, const st_kernel *k, const users *u,
                        const char *key)
{
    const char *dir = dump_dir();
    if (!dir)
        return;
    char path[4200];
    dump_path(path, sizeof path, dir, key);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    char name[96];
    fn_name(name, sizeof name, key);
    fprintf(f, "; symtrace llvm kernel %s (LLVM %s, %s, %s) -> @%s\n",
            key, st_llvm_version(), J.triple, J.cpu, name);
    int named = 0;
    for (int i = 0; u && i < u->n; i++)
        if (u->which[i] == u->self) {
            fprintf(f, "; kernel %d: %s\n", i, u->ks[i].name);
            named++;
        }
    if (!named)
        fprintf(f, "; kernel: %s\n", k->name);
    char *text = LLVMPrintModuleToString(M);
    if (text)
        fputs(text, f);
    LLVMDisposeMessage(text);
    fclose(f);
}

/* Generates the module of kernel k (not a VIEW) and optimizes it (-O3
 * with the vectorizers) for tm. On failure the error is set and nothing is
 * left to dispose. */
static st_status gen_module(const st_kernel *k, const char *key,
                            LLVMTargetMachineRef tm, LLVMContextRef *Cp,
                            LLVMModuleRef *Mp)
{
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef M = LLVMModuleCreateWithNameInContext(key, C);
    LLVMSetTarget(M, J.triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(M, dl);
    LLVMDisposeTargetData(dl);
    st_llvm_cg cg;
    memset(&cg, 0, sizeof cg);
    cg.C = C;
    cg.M = M;
    cg.B = LLVMCreateBuilderInContext(C);
    cg.f16c = J.features && strstr(J.features, "+f16c") != NULL;
    st_llvm_cg_types(&cg);
    char name[96];
    fn_name(name, sizeof name, key);
    st_status s = st_llvm_emit_kernel(&cg, k, name);
    if (s == ST_OK) {
        LLVMAddTargetDependentFunctionAttr(cg.fn, "target-cpu", J.cpu);
        LLVMAddTargetDependentFunctionAttr(cg.fn, "target-features", J.features);
    }
    LLVMDisposeBuilder(cg.B);
    char *msg = NULL;
    if (s == ST_OK && LLVMVerifyModule(M, LLVMReturnStatusAction, &msg)) {
        s = st_err(ST_ERR_RUNTIME, "llvm: generated module is invalid: %.400s",
                   msg ? msg : "?");
    }
    LLVMDisposeMessage(msg);
    if (s == ST_OK) {
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
        LLVMErrorRef e = LLVMRunPasses(M, "default<O3>", tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e) {
            char b[300];
            take_error(e, b, sizeof b, "optimization failed");
            s = st_err(ST_ERR_RUNTIME, "llvm: %s", b);
        }
    }
    if (s != ST_OK) {
        LLVMDisposeModule(M);
        LLVMContextDispose(C);
        return s;
    }
    *Cp = C;
    *Mp = M;
    return ST_OK;
}

/* A kernel answered from a cache writes no module: with a dump directory
 * set, the module is generated again for the dump when its file is not
 * there yet (each compiled kernel has its code in the directory). On the
 * caller's thread (J.tm). */
static void dump_cached(const st_kernel *k, const users *u, const char *key)
{
    const char *dir = dump_dir();
    if (!dir)
        return;
    char path[4200];
    dump_path(path, sizeof path, dir, key);
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return;
    }
    LLVMContextRef C;
    LLVMModuleRef M;
    if (gen_module(k, key, J.tm, &C, &M) != ST_OK) {
        st_err_clear();
        return;
    }
    dump_module(M, k, u, key);
    LLVMDisposeModule(M);
    LLVMContextDispose(C);
}

/* The object of kernel k, built with tm (any thread). */
static st_status build_object(const st_kernel *k, const users *u,
                              const char *key, LLVMTargetMachineRef tm,
                              char **bytes, size_t *len)
{
    LLVMContextRef C;
    LLVMModuleRef M;
    st_status s = gen_module(k, key, tm, &C, &M);
    if (s != ST_OK)
        return s;
    if (getenv("SYMTRACE_LLVM_DUMP"))
        LLVMDumpModule(M);
    dump_module(M, k, u, key);
    char *msg = NULL;
    LLVMMemoryBufferRef mb = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, M, LLVMObjectFile, &msg, &mb)) {
        s = st_err(ST_ERR_RUNTIME, "llvm: code generation failed: %.400s",
                   msg ? msg : "?");
        LLVMDisposeMessage(msg);
        mb = NULL;
    }
    if (s == ST_OK) {
        *len = LLVMGetBufferSize(mb);
        *bytes = malloc(*len ? *len : 1);
        if (!*bytes)
            s = st_err(ST_ERR_MEMORY, "llvm: out of memory");
        else
            memcpy(*bytes, LLVMGetBufferStart(mb), *len);
        atomic_fetch_add(&J.compiles, 1);
        atomic_fetch_add(&J.kernels, 1);
    }
    if (mb)
        LLVMDisposeMemoryBuffer(mb);
    LLVMDisposeModule(M);
    LLVMContextDispose(C);
    return s;
}

/* Links an object into the JIT and finds its kernel's function (under
 * J.mu). On failure nothing is left linked. */
static st_status load_object(centry *e, const char *bytes, size_t len)
{
    LLVMMemoryBufferRef mb =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(bytes, len, e->key);
    e->rt = LLVMOrcJITDylibCreateResourceTracker(J.dylib);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(J.jit, e->rt, mb);
    char b[400];
    st_status s = ST_OK;
    if (err) {
        take_error(err, b, sizeof b, "cannot add object");
        s = st_err(ST_ERR_RUNTIME, "llvm: %s", b);
    } else {
        char name[96];
        fn_name(name, sizeof name, e->key);
        LLVMOrcJITTargetAddress addr = 0;
        err = LLVMOrcLLJITLookup(J.jit, &addr, name);
        if (err) {
            take_error(err, b, sizeof b, "cannot link kernel");
            s = st_err(ST_ERR_RUNTIME, "llvm: %s %s", name, b);
        } else {
            e->fn = (st_llvm_fn)(uintptr_t)addr;
        }
    }
    if (s != ST_OK) {
        err = LLVMOrcResourceTrackerRemove(e->rt);
        if (err)
            LLVMConsumeError(err);
        LLVMOrcReleaseResourceTracker(e->rt);
        e->rt = NULL;
    }
    return s;
}

static void entry_free(centry *e)
{
    if (!e)
        return;
    if (e->rt) {
        LLVMErrorRef err = LLVMOrcResourceTrackerRemove(e->rt);
        if (err)
            LLVMConsumeError(err);
        LLVMOrcReleaseResourceTracker(e->rt);
    }
    free(e);
}

/* ---- compiling a kernel list ---- */

/* one distinct kernel not in memory */
typedef struct {
    const st_kernel *k;          /* the first kernel of the list with it */
    users u;
    centry *e;                   /* allocated; linked when e->fn is set */
    char *bytes;                 /* the object built (NULL: from_disk) */
    size_t len;
    bool from_disk;
    char err[512];               /* a worker's error */
} job;

typedef struct {
    job *jobs;
    int n;
    atomic_int next;
    pthread_t caller;            /* holds J.mu: J.tm is its to use */
} build_ctx;

/* A worker of the build: takes the next job without an object until none
 * is left (so the jobs spread over the workers however long each takes);
 * a pool thread makes a target machine of its own, the caller uses J.tm
 * (an eager op's one kernel keeps the machine's cached subtarget). */
static int32_t build_task(void *ctx, int64_t lo, int64_t hi)
{
    (void)lo;
    (void)hi;
    build_ctx *b = ctx;
    bool own = !pthread_equal(pthread_self(), b->caller);
    LLVMTargetMachineRef tm = own ? NULL : J.tm;
    for (int i; (i = atomic_fetch_add(&b->next, 1)) < b->n;) {
        job *j = &b->jobs[i];
        if (j->from_disk)
            continue;
        if (!tm && !(tm = new_tm())) {
            snprintf(j->err, sizeof j->err, "llvm: cannot create a target machine");
            continue;
        }
        if (build_object(j->k, &j->u, j->e->key, tm, &j->bytes, &j->len) != ST_OK) {
            snprintf(j->err, sizeof j->err, "%s", st_err_msg());
            st_err_clear();
        }
    }
    if (own && tm)
        LLVMDisposeTargetMachine(tm);
    return 0;
}

/* Under J.mu: every non-VIEW kernel of ks gets its entry in ents[] (from
 * the table, the disk cache or built now); no reference is taken. */
static st_status resolve(const st_kernel *ks, int n, centry **ents)
{
    job *jobs = calloc((size_t)n + 1, sizeof *jobs);
    int *which = malloc(sizeof(int) * ((size_t)n + 1)); /* kernel -> job, -1 */
    XXH128_hash_t *hk = malloc(sizeof *hk * ((size_t)n + 1));
    if (!jobs || !which || !hk) {
        free(jobs);
        free(which);
        free(hk);
        return st_err(ST_ERR_MEMORY, "llvm: out of memory");
    }
    st_status s = ST_OK;
    int nj = 0;
    for (int i = 0; i < n && s == ST_OK; i++) {
        which[i] = -1;
        ents[i] = NULL;
        if (ks[i].kind == ST_K_VIEW)
            continue;
        XXH128_hash_t h = kernel_key(&ks[i]);
        hk[i] = h;
        if ((ents[i] = tab_find(h))) {
            atomic_fetch_add(&J.mem_hits, 1);
            continue;
        }
        for (int j = 0; j < nj && which[i] < 0; j++)
            if (XXH128_isEqual(jobs[j].e->h, h))
                which[i] = j;
        if (which[i] >= 0)
            continue;
        job *jb = &jobs[nj];
        if (!(jb->e = calloc(1, sizeof *jb->e))) {
            s = st_err(ST_ERR_MEMORY, "llvm: out of memory");
            break;
        }
        jb->e->h = h;
        key_str(h, jb->e->key, sizeof jb->e->key);
        jb->k = &ks[i];
        jb->u = (users){.ks = ks, .which = which, .n = n, .self = nj};
        which[i] = nj++;
    }
    /* the disk cache; an object that does not load is rebuilt */
    int todo = 0;
    for (int j = 0; j < nj && s == ST_OK; j++) {
        job *jb = &jobs[j];
        void *vb = NULL;
        if (st_kcache_load(jb->e->key, &vb, &jb->len)) {
            if (load_object(jb->e, vb, jb->len) == ST_OK) {
                jb->from_disk = true;
                atomic_fetch_add(&J.disk_hits, 1);
            } else {
                st_err_clear();
            }
            free(vb);
        }
        todo += !jb->from_disk;
    }
    if (s == ST_OK && todo > 0) {
        build_ctx b = {.jobs = jobs, .n = nj, .caller = pthread_self()};
        atomic_init(&b.next, 0);
        int nt = st_llvm_pool_threads();
        (void)st_llvm_pool_run(build_task, &b, todo < nt ? todo : nt, 1, NULL);
        for (int j = 0; j < nj && s == ST_OK; j++)
            if (jobs[j].err[0])
                s = st_err(ST_ERR_RUNTIME, "%s", jobs[j].err);
    }
    for (int j = 0; j < nj && s == ST_OK; j++) {
        job *jb = &jobs[j];
        if (!jb->from_disk) {
            if (st_kcache_store(jb->e->key, jb->bytes, jb->len) != ST_OK)
                st_err_clear(); /* the disk cache is best effort */
            s = load_object(jb->e, jb->bytes, jb->len);
        } else {
            dump_cached(jb->k, &jb->u, jb->e->key);
        }
        if (s == ST_OK && (s = tab_put(jb->e)) == ST_OK)
            jb->e = NULL;        /* the table's now */
    }
    for (int i = 0; s == ST_OK && i < n; i++) {
        if (ks[i].kind == ST_K_VIEW)
            continue;
        if (!ents[i])
            ents[i] = tab_find(hk[i]);
        else if (dump_dir())   /* a memory hit */
            dump_cached(&ks[i], NULL, ents[i]->key);
    }
    for (int j = 0; j < nj; j++) {
        free(jobs[j].bytes);
        entry_free(jobs[j].e);   /* not linked in the table: error paths */
    }
    free(jobs);
    free(which);
    free(hk);
    return s;
}

/* ---- the backend ---- */

static void handle_free(handle *h)
{
    free(h->fns);
    free(h->ents);
    free(h->colpath);
    free(h);
}

static void *llvm_compile(st_backend *be, const st_kernel *ks, int n)
{
    (void)be;
    if (n < 0 || (n > 0 && !ks)) {
        st_err(ST_ERR_VALUE, "llvm: bad kernel list");
        return NULL;
    }
    if (!ready())
        return NULL;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (ks[i].kind == ST_K_VIEW)
            continue;
        any = true;
        if (validate(&ks[i], i) != ST_OK)
            return NULL;
    }
    handle *h = calloc(1, sizeof *h);
    if (!h) {
        st_err(ST_ERR_MEMORY, "llvm: out of memory");
        return NULL;
    }
    h->ks = ks;
    h->n = n;
    if (!any)
        return h;
    h->colpath = calloc((size_t)n, sizeof *h->colpath);
    h->fns = calloc((size_t)n, sizeof *h->fns);
    h->ents = calloc((size_t)n, sizeof *h->ents);
    if (!h->colpath || !h->fns || !h->ents) {
        handle_free(h);
        st_err(ST_ERR_MEMORY, "llvm: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        h->colpath[i] = st_llvm_has_colreduce(&ks[i]);
    pthread_mutex_lock(&J.mu);
    st_status s = resolve(ks, n, h->ents);
    for (int i = 0; s == ST_OK && i < n; i++)
        if (h->ents[i]) {
            h->ents[i]->refs++;
            h->fns[i] = h->ents[i]->fn;
        }
    pthread_mutex_unlock(&J.mu);
    if (s != ST_OK) {
        free(h->ents);           /* no reference was taken */
        h->ents = NULL;
        handle_free(h);
        return NULL;
    }
    return h;
}

static void llvm_release(st_backend *be, void *compiled)
{
    (void)be;
    handle *h = compiled;
    if (!h)
        return;
    if (h->ents) {
        pthread_mutex_lock(&J.mu);
        for (int i = 0; i < h->n; i++)
            if (h->ents[i])
                h->ents[i]->refs--;
        pthread_mutex_unlock(&J.mu);
    }
    handle_free(h);
}

void st_llvm_cache_clear_memory(void)
{
    if (!ready()) {
        st_err_clear();
        return;
    }
    pthread_mutex_lock(&J.mu);
    centry **pp = &J.entries;
    bool dropped = false;
    while (*pp) {
        centry *e = *pp;
        if (e->refs <= 0) {
            *pp = e->next;
            entry_free(e);
            dropped = true;
        } else {
            pp = &e->next;
        }
    }
    if (dropped)
        tab_reindex();
    pthread_mutex_unlock(&J.mu);
}

typedef struct {
    st_llvm_fn fn;
    const st_kargs *a;
    pthread_mutex_t mu;
    st_llvm_err err;
} task_ctx;

static int32_t run_task(void *ctx, int64_t lo, int64_t hi)
{
    task_ctx *t = ctx;
    st_llvm_err e = {0};
    int32_t r = t->fn(t->a, lo, hi, &e, NULL);
    if (r) {
        pthread_mutex_lock(&t->mu);
        if (!t->err.code)
            t->err = e;
        t->err.code = r;
        pthread_mutex_unlock(&t->mu);
    }
    return r;
}

static bool has_scatter(const st_kernel *k)
{
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].indexed || k->stores[s].accumulate)
            return true;
    return false;
}

/* A scatter's points collide only along the indexed dims: when every
 * indexed store indexes a dim before the last and no buffer is read
 * through an index or an unravel, the last dim's columns split among the
 * threads (each task: the kernel over all rows of its column range, the
 * buffers' data moved to the range's first column), where otherwise the
 * kernel runs serially. */
typedef struct {
    task_ctx *t;       /* the launch's: kernel, arguments, first error */
    const st_kernel *k;
    int parts;
} cols_ctx;

static int32_t cols_task(void *ctx, int64_t lo, int64_t hi)
{
    cols_ctx *c = ctx;
    const st_kernel *k = c->k;
    int last = k->rank - 1;
    int64_t C = c->t->a->shape[last];
    for (int64_t part = lo; part < hi; part++) {
        int64_t c0 = C * part / c->parts, c1 = C * (part + 1) / c->parts;
        if (c1 <= c0)
            continue;
        st_kargs a = *c->t->a;
        a.shape[last] = c1 - c0;
        for (int b = 0; b < k->nbufs; b++)
            a.bufs[b].data += (ptrdiff_t)(c0 * a.bufs[b].strides[last]) *
                              (ptrdiff_t)st_dtype_size(k->bufs[b].dtype);
        int64_t total = 1;
        for (int d = 0; d < k->rank; d++)
            total *= a.shape[d];
        task_ctx t = {.fn = c->t->fn, .a = &a, .mu = PTHREAD_MUTEX_INITIALIZER};
        int32_t r = run_task(&t, 0, total);
        if (r) {
            pthread_mutex_lock(&c->t->mu);
            if (!c->t->err.code)
                c->t->err = t.err;
            pthread_mutex_unlock(&c->t->mu);
            return r;
        }
    }
    return 0;
}

static bool scatter_cols_ok(const st_kernel *k, const st_kargs *a, int nt)
{
    if (k->kind != ST_K_ELEMENTWISE || k->rank < 2 || k->uses_rng || nt < 2 ||
        a->shape[k->rank - 1] < 16 * nt)
        return false;
    int last = k->rank - 1;
    for (int s = 0; s < k->nstores; s++) {
        int b = k->stores[s].buf;
        /* a store's column must be its own: the last dim maps to a tensor
         * dim of the destination that is not indexed and not broadcast */
        if ((k->stores[s].accumulate && !k->stores[s].indexed) ||
            k->bufs[b].dimmap[last] < 0 ||
            (k->stores[s].indexed && k->bufs[b].dimmap[last] == k->stores[s].idx_dim) ||
            a->bufs[b].strides[last] == 0)
            return false;
    }
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].unravel > 0)
            return false;
    for (int n = 0; n < k->nnodes; n++)
        if (k->nodes[n].kind == ST_KN_LOAD && k->nodes[n].idx_dim >= 0)
            return false;
    return true;
}

/* An elementwise kernel walks its iteration space row by row (the
 * innermost dim), with div/mod per row to place it: over a [16, 16, 16, 16]
 * contiguous tensor, rows of 16 points cost 4x what one row of 65536 does.
 * So adjacent dims that every buffer walks as one (stride[d] ==
 * stride[d + 1] * shape[d + 1], a broadcast buffer's 0 == 0 included) are
 * merged for the launch, and dims of size 1 dropped: every point keeps
 * its linear index and each buffer's offset of it, only the rows get
 * longer. The merged dims are right-aligned (leading dims of size 1), so
 * the same compiled code runs. Not for kernels whose code sees the
 * coordinates themselves (an INDEX node along a dim), reads through an
 * index or an unravel, or stores through an index (coords_unseen). */
static bool coords_unseen(const st_kernel *k)
{
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].unravel > 0)
            return false;
    for (int n = 0; n < k->nnodes; n++) {
        const st_knode *nd = &k->nodes[n];
        if ((nd->kind == ST_KN_LOAD && nd->idx_dim >= 0) ||
            (nd->kind == ST_KN_INDEX && nd->i >= 0))
            return false;
    }
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].indexed)
            return false;
    return true;
}

static bool dims_mergeable(const st_kernel *k)
{
    return k->kind == ST_K_ELEMENTWISE && k->rank >= 2 && coords_unseen(k);
}

/* args with mergeable dims merged into m (see above), or args itself. */
static const st_kargs *merge_dims(const st_kernel *k, const st_kargs *args, st_kargs *m)
{
    if (!dims_mergeable(k))
        return args;
    int r = k->rank, n = 0;   /* entries innermost first */
    int64_t sh[ST_MAX_DIMS], st[ST_K_MAX_BUFS][ST_MAX_DIMS];
    for (int d = r - 1; d >= 0; d--) {
        if (args->shape[d] == 1)
            continue;
        bool join = n > 0;
        for (int b = 0; join && b < k->nbufs; b++)
            join = args->bufs[b].strides[d] == st[b][n - 1] * sh[n - 1];
        if (join) {
            sh[n - 1] *= args->shape[d];
            continue;
        }
        sh[n] = args->shape[d];
        for (int b = 0; b < k->nbufs; b++)
            st[b][n] = args->bufs[b].strides[d];
        n++;
    }
    if (n == r)
        return args;
    /* a buffer the code holds still along the innermost dim (dimmap -1)
     * must stay still along the merged one */
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].dimmap[r - 1] < 0 && n > 0 && st[b][0] != 0)
            return args;
    atomic_fetch_add_explicit(&J.merged, 1, memory_order_relaxed);
    *m = *args;
    for (int i = 0; i < r; i++) {
        int d = r - 1 - i;
        m->shape[d] = i < n ? sh[i] : 1;
        for (int b = 0; b < k->nbufs; b++)
            m->bufs[b].strides[d] = i < n ? st[b][i] : 0;
    }
    return m;
}

/* A reduction walks each row (its trailing nred dims) as segments along
 * the innermost dim, with div/mod per segment to place it: batch norm's
 * [C | N, H, W] rows over a [16, 16, 32, 32] tensor are 512 segments of 32
 * points a channel, each pass. So adjacent reduced dims that every buffer
 * walks as one are merged for the launch, as merge_dims does for
 * elementwise kernels, within the row only (the outer dims and the row's
 * linear index, an argmax's result, stay as they are): the merged dims
 * are right-aligned in the row, size-1 dims before them. A buffer the
 * code holds still along a dim (dimmap -1) counts as stride 0 there and
 * must stay still along the merged dim. */
static const st_kargs *merge_row_dims(const st_kernel *k, const st_kargs *args, st_kargs *m)
{
    int r = k->rank, ro = r - k->nred, n = 0;
    if (k->kind != ST_K_REDUCE || k->nred < 2 || ro < 0 || !coords_unseen(k))
        return args;
    int64_t sh[ST_MAX_DIMS], st[ST_K_MAX_BUFS][ST_MAX_DIMS];
    for (int d = r - 1; d >= ro; d--) {
        if (args->shape[d] == 1)
            continue;
        bool join = n > 0;
        for (int b = 0; join && b < k->nbufs; b++) {
            int64_t sd = k->bufs[b].dimmap[d] >= 0 ? args->bufs[b].strides[d] : 0;
            join = sd == st[b][n - 1] * sh[n - 1];
        }
        if (join) {
            sh[n - 1] *= args->shape[d];
            continue;
        }
        sh[n] = args->shape[d];
        for (int b = 0; b < k->nbufs; b++)
            st[b][n] = k->bufs[b].dimmap[d] >= 0 ? args->bufs[b].strides[d] : 0;
        n++;
    }
    if (n == r - ro)
        return args;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b].dimmap[r - 1 - i] < 0 && st[b][i] != 0)
                return args;
    atomic_fetch_add_explicit(&J.merged, 1, memory_order_relaxed);
    *m = *args;
    for (int i = 0; i < r - ro; i++) {
        int d = r - 1 - i;
        m->shape[d] = i < n ? sh[i] : 1;
        for (int b = 0; b < k->nbufs; b++)
            m->bufs[b].strides[d] = i < n ? st[b][i] : 0;
    }
    return m;
}

static const char *red_opname(st_reduce_op op)
{
    switch (op) {
    case ST_RED_MAX: return "amax";
    case ST_RED_MIN: return "amin";
    case ST_RED_ARGMAX: return "argmax";
    case ST_RED_ARGMIN: return "argmin";
    default: return "reduce";
    }
}

static st_status llvm_launch(st_backend *be, void *compiled, int index,
                             const st_kargs *args)
{
    (void)be;
    handle *h = compiled;
    if (!h || index < 0 || index >= h->n)
        return st_err(ST_ERR_INDEX, "llvm: kernel index %d out of range", index);
    const st_kernel *k = &h->ks[index];
    if (k->kind == ST_K_VIEW)
        return ST_OK;
    if (!args)
        return st_err(ST_ERR_VALUE, "llvm: kernel %s launched without arguments",
                      k->name);
    st_llvm_fn fn = h->fns ? h->fns[index] : NULL;
    if (!fn)
        return st_err(ST_ERR_RUNTIME, "llvm: kernel %d was not compiled", index);
    for (int d = 0; d < k->rank; d++)
        if (args->shape[d] < 0)
            return st_err(ST_ERR_VALUE, "kernel %s: negative size %lld at dim %d",
                          k->name, (long long)args->shape[d], d);
    atomic_fetch_add_explicit(&J.launches, 1, memory_order_relaxed);
    task_ctx t = {.fn = fn, .a = args, .mu = PTHREAD_MUTEX_INITIALIZER};
    int32_t r = 0;
    bool par = false;
    bool serial = has_scatter(k);
    st_kargs merged;
    if (k->kind == ST_K_ELEMENTWISE) {
        t.a = args = merge_dims(k, args, &merged);
        int64_t total = 1;
        for (int d = 0; d < k->rank; d++)
            total *= args->shape[d];
        if (total == 0)
            return ST_OK;
        int nt = st_llvm_pool_threads();
        if (serial && total >= 32768 && scatter_cols_ok(k, args, nt)) {
            cols_ctx c = {.t = &t, .k = k, .parts = nt};
            r = st_llvm_pool_run(cols_task, &c, nt, 1, &par);
        } else {
            r = st_llvm_pool_run(run_task, &t, total, serial ? total : 32768, &par);
        }
    } else if (k->kind == ST_K_REDUCE) {
        t.a = args = merge_row_dims(k, args, &merged);
        int ro = k->rank - k->nred;
        int64_t O = 1, R = 1;
        for (int d = 0; d < ro; d++)
            O *= args->shape[d];
        for (int d = ro; d < k->rank; d++)
            R *= args->shape[d];
        int nr = k->nreduce < 1 ? 1 : k->nreduce;
        for (int i = 0; i < nr && R == 0; i++) {
            st_reduce_op op = k->reduce[i].op;
            if (op != ST_RED_SUM && op != ST_RED_MEAN && op != ST_RED_PROD)
                return st_err(ST_ERR_RUNTIME, "%s(): Expected reduction dim to "
                              "have non-zero size.", red_opname(op));
        }
        if (O == 0)
            return ST_OK;
        int64_t per = R * nr + 1;
        int64_t grain = per >= 32768 ? 1 : 32768 / per;
        /* the column path streams each row's segment of the outer range:
         * one range a thread keeps the segments long (a sum over [1024,
         * 1024] tokens: 8 chunks of 128 columns 267 us, 2 of 512 172 us) */
        int nt = st_llvm_pool_threads();
        if (h->colpath && h->colpath[index] && nt > 1 && grain < O / nt)
            grain = O / nt; /* st_llvm_pool_run: total / grain chunks */
        r = st_llvm_pool_run(run_task, &t, O, serial ? O : grain, &par);
    } else {
        r = st_llvm_matmul(k, args, fn, &t.err, &par);
        if (r > 0)
            t.err.code = r;
    }
    if (par)
        atomic_fetch_add_explicit(&J.parallel, 1, memory_order_relaxed);
    if (r == 0)
        return ST_OK;
    if (r < 0)
        return st_err_kind() != ST_OK ? st_err_kind()
                                      : st_err(ST_ERR_RUNTIME, "llvm: kernel failed");
    if (t.err.code == ST_LLVM_EINDEX)
        return st_err(ST_ERR_INDEX, "index %lld is out of bounds for dimension %d "
                      "with size %lld", (long long)t.err.value, t.err.dim,
                      (long long)t.err.size);
    return st_err(ST_ERR_RUNTIME, "llvm: kernel %s failed with code %d", k->name, r);
}

static const char *llvm_cache_tag(st_backend *be)
{
    (void)be;
    if (!ready()) {
        st_err_clear();
        return "llvm";
    }
    return J.tag;
}

static st_backend llvm_be = {
    .name = "llvm",
    .device = ST_DEV_CPU,
    .compile = llvm_compile,
    .launch = llvm_launch,
    .release = llvm_release,
    .cache_tag = llvm_cache_tag,
    .impl = NULL,
};

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static void do_register(void)
{
    if (!st_backend_get("llvm") && st_backend_register(&llvm_be) != ST_OK)
        st_err_clear();
}

st_backend *st_llvm_backend(void)
{
    pthread_once(&reg_once, do_register);
    return &llvm_be;
}

void st_llvm_stats(st_llvm_stats_t *out)
{
    memset(out, 0, sizeof *out);
    out->compiles = atomic_load(&J.compiles);
    out->mem_hits = atomic_load(&J.mem_hits);
    out->disk_hits = atomic_load(&J.disk_hits);
    out->kernels = atomic_load(&J.kernels);
    out->launches = atomic_load(&J.launches);
    out->parallel_launches = atomic_load(&J.parallel);
    out->merged_launches = atomic_load(&J.merged);
    out->threads = st_llvm_pool_threads();
    out->have_blas = st_llvm_have_blas();
}
