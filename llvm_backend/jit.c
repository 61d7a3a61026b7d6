/* jit.c - the "llvm" backend object: target machine for the host CPU,
 * compile (kernel IR -> one LLVM module per call -> default<O3> with the
 * loop and SLP vectorizers -> object file), the kernel cache (in memory by
 * key; on disk through runtime/kcache.c: a hit loads the object without
 * compiling), the ORC LLJIT that links objects (our helpers registered as
 * absolute symbols: the build hides them from dlsym), launch (argument
 * checks, the split across the thread pool, error codes -> messages), and
 * with SYMTRACE_DUMP_DIR set the optimized module of each compiled kernel
 * list as <dir>/<cache key>.ll (also on a cache hit).
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

#define FORMAT_VERSION "st-llvm-obj-13"

typedef struct centry {
    char key[48];
    int n;
    st_llvm_fn *fns;             /* per kernel; NULL for VIEW */
    LLVMOrcResourceTrackerRef rt;
    int refs;
    struct centry *next;
} centry;

typedef struct {
    centry *e;
    const st_kernel *ks;
    int n;
    bool *colpath;               /* per kernel: st_llvm_has_colreduce */
} handle;

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    bool ok;
    char init_err[512];
    LLVMOrcLLJITRef jit;
    LLVMOrcJITDylibRef dylib;
    LLVMTargetMachineRef tm;
    char *triple, *cpu, *features;
    char tag[256];
    centry *entries;
    atomic_llong compiles, mem_hits, disk_hits, kernels, launches, parallel;
} J = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static void take_error(LLVMErrorRef e, char *buf, size_t n, const char *what)
{
    char *m = LLVMGetErrorMessage(e);
    snprintf(buf, n, "%s: %s", what, m ? m : "?");
    LLVMDisposeErrorMessage(m);
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
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(J.triple, &target, &msg)) {
        snprintf(J.init_err, sizeof J.init_err, "no target for %s: %s",
                 J.triple, msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return;
    }
    J.tm = LLVMCreateTargetMachine(target, J.triple, J.cpu, J.features,
                                   LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                   LLVMCodeModelSmall);
    if (!J.tm) {
        snprintf(J.init_err, sizeof J.init_err, "cannot create a target machine");
        return;
    }
    snprintf(J.tag, sizeof J.tag, "llvm-%s-%s", st_llvm_version(), J.cpu);
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

static void hs(XXH3_state_t *st, const char *s)
{
    XXH3_128bits_update(st, s, strlen(s) + 1);
}

static void make_key(const st_kernel *ks, int n, char *key, size_t kn)
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    hs(&st, FORMAT_VERSION);
    hs(&st, st_llvm_version());
    hs(&st, J.triple);
    hs(&st, J.cpu);
    hs(&st, J.features);
    hw(&st, n);
    for (int i = 0; i < n; i++) {
        const st_kernel *k = &ks[i];
        hw(&st, k->kind);
        if (k->kind == ST_K_VIEW)
            continue;
        hw(&st, (int64_t)st_kernel_hash(k));
        /* what st_kernel_hash may not cover: several reductions, the
         * epilogue form, which reduction a REDUCED node reads */
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
    }
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    snprintf(key, kn, "llvm_%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

static void fn_name(char *buf, size_t n, const char *key, int i)
{
    snprintf(buf, n, "stk_%s_%d", key + 5, i);
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

/* Writes the optimized module M to $SYMTRACE_DUMP_DIR/<key>.ll, headed by
 * a comment naming each kernel and its function. Best effort. */
static void dump_module(LLVMModuleRef M, const st_kernel *ks, int n,
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
    fprintf(f, "; symtrace llvm module %s (LLVM %s, %s, %s): %d kernels\n",
            key, st_llvm_version(), J.triple, J.cpu, n);
    for (int i = 0; i < n; i++) {
        char name[96];
        fn_name(name, sizeof name, key, i);
        if (ks[i].kind == ST_K_VIEW)
            fprintf(f, "; kernel %d: %s (view: no code)\n", i, ks[i].name);
        else
            fprintf(f, "; kernel %d: %s -> @%s\n", i, ks[i].name, name);
    }
    char *text = LLVMPrintModuleToString(M);
    if (text)
        fputs(text, f);
    LLVMDisposeMessage(text);
    fclose(f);
}

/* Generates the module of kernels ks[0..n) and optimizes it (-O3 with the
 * vectorizers); *nk = kernels generated. On failure the error is set and
 * nothing is left to dispose. */
static st_status gen_module(const st_kernel *ks, int n, const char *key,
                            LLVMContextRef *Cp, LLVMModuleRef *Mp, int *nkp)
{
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef M = LLVMModuleCreateWithNameInContext(key, C);
    LLVMSetTarget(M, J.triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(J.tm);
    LLVMSetModuleDataLayout(M, dl);
    LLVMDisposeTargetData(dl);
    st_llvm_cg cg;
    memset(&cg, 0, sizeof cg);
    cg.C = C;
    cg.M = M;
    cg.B = LLVMCreateBuilderInContext(C);
    cg.f16c = J.features && strstr(J.features, "+f16c") != NULL;
    st_llvm_cg_types(&cg);
    st_status s = ST_OK;
    int nk = 0;
    for (int i = 0; i < n && s == ST_OK; i++) {
        if (ks[i].kind == ST_K_VIEW)
            continue;
        char name[96];
        fn_name(name, sizeof name, key, i);
        s = st_llvm_emit_kernel(&cg, &ks[i], name);
        if (s == ST_OK) {
            LLVMAddTargetDependentFunctionAttr(cg.fn, "target-cpu", J.cpu);
            LLVMAddTargetDependentFunctionAttr(cg.fn, "target-features", J.features);
            nk++;
        }
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
        LLVMErrorRef e = LLVMRunPasses(M, "default<O3>", J.tm, po);
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
    *nkp = nk;
    return ST_OK;
}

/* A compile answered from a cache writes no module: with a dump directory
 * set, the module is generated again for the dump when its file is not
 * there yet (each compiled kernel list has its code in the directory). */
static void dump_cached(const st_kernel *ks, int n, const char *key)
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
    int nk;
    if (gen_module(ks, n, key, &C, &M, &nk) != ST_OK) {
        st_err_clear();
        return;
    }
    dump_module(M, ks, n, key);
    LLVMDisposeModule(M);
    LLVMContextDispose(C);
}

static st_status build_object(const st_kernel *ks, int n, const char *key,
                              char **bytes, size_t *len)
{
    LLVMContextRef C;
    LLVMModuleRef M;
    int nk = 0;
    st_status s = gen_module(ks, n, key, &C, &M, &nk);
    if (s != ST_OK)
        return s;
    if (getenv("SYMTRACE_LLVM_DUMP"))
        LLVMDumpModule(M);
    dump_module(M, ks, n, key);
    char *msg = NULL;
    LLVMMemoryBufferRef mb = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(J.tm, M, LLVMObjectFile, &msg, &mb)) {
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
        atomic_fetch_add(&J.kernels, nk);
    }
    if (mb)
        LLVMDisposeMemoryBuffer(mb);
    LLVMDisposeModule(M);
    LLVMContextDispose(C);
    return s;
}

/* Links an object into the JIT and finds the kernels' functions. */
static st_status load_object(centry *e, const st_kernel *ks, int n,
                             const char *bytes, size_t len)
{
    LLVMMemoryBufferRef mb =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(bytes, len, e->key);
    e->rt = LLVMOrcJITDylibCreateResourceTracker(J.dylib);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(J.jit, e->rt, mb);
    char b[400];
    if (err) {
        take_error(err, b, sizeof b, "cannot add object");
        return st_err(ST_ERR_RUNTIME, "llvm: %s", b);
    }
    for (int i = 0; i < n; i++) {
        if (ks[i].kind == ST_K_VIEW)
            continue;
        char name[96];
        fn_name(name, sizeof name, e->key, i);
        LLVMOrcJITTargetAddress addr = 0;
        err = LLVMOrcLLJITLookup(J.jit, &addr, name);
        if (err) {
            take_error(err, b, sizeof b, "cannot link kernel");
            return st_err(ST_ERR_RUNTIME, "llvm: %s %s", name, b);
        }
        e->fns[i] = (st_llvm_fn)(uintptr_t)addr;
    }
    return ST_OK;
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
    free(e->fns);
    free(e);
}

/* Under J.mu. */
static centry *get_entry(const st_kernel *ks, int n, const char *key)
{
    for (centry *e = J.entries; e; e = e->next)
        if (strcmp(e->key, key) == 0 && e->n == n) {
            e->refs++;
            atomic_fetch_add(&J.mem_hits, 1);
            dump_cached(ks, n, key);
            return e;
        }
    centry *e = calloc(1, sizeof *e);
    if (!e || !(e->fns = calloc((size_t)n + 1, sizeof *e->fns))) {
        free(e);
        st_err(ST_ERR_MEMORY, "llvm: out of memory");
        return NULL;
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    e->n = n;
    char *bytes = NULL;
    size_t len = 0;
    void *vb = NULL;
    st_status s;
    if (st_kcache_load(key, &vb, &len)) {
        bytes = vb;
        s = load_object(e, ks, n, bytes, len);
        if (s == ST_OK) {
            atomic_fetch_add(&J.disk_hits, 1);
            dump_cached(ks, n, key);
        } else { /* unusable: rebuild below */
            free(bytes);
            bytes = NULL;
            LLVMErrorRef err = LLVMOrcResourceTrackerRemove(e->rt);
            if (err)
                LLVMConsumeError(err);
            LLVMOrcReleaseResourceTracker(e->rt);
            e->rt = NULL;
            st_err_clear();
        }
    }
    if (!bytes) {
        s = build_object(ks, n, key, &bytes, &len);
        if (s == ST_OK) {
            if (st_kcache_store(key, bytes, len) != ST_OK)
                st_err_clear(); /* the disk cache is best effort */
            s = load_object(e, ks, n, bytes, len);
        }
    }
    free(bytes);
    if (s != ST_OK) {
        entry_free(e);
        return NULL;
    }
    e->refs = 1;
    e->next = J.entries;
    J.entries = e;
    return e;
}

/* ---- the backend ---- */

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
    if (!(h->colpath = calloc((size_t)n, sizeof *h->colpath))) {
        free(h);
        st_err(ST_ERR_MEMORY, "llvm: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        h->colpath[i] = st_llvm_has_colreduce(&ks[i]);
    char key[48];
    make_key(ks, n, key, sizeof key);
    pthread_mutex_lock(&J.mu);
    h->e = get_entry(ks, n, key);
    pthread_mutex_unlock(&J.mu);
    if (!h->e) {
        free(h->colpath);
        free(h);
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
    if (h->e) {
        pthread_mutex_lock(&J.mu);
        h->e->refs--;
        pthread_mutex_unlock(&J.mu);
    }
    free(h->colpath);
    free(h);
}

void st_llvm_cache_clear_memory(void)
{
    if (!ready()) {
        st_err_clear();
        return;
    }
    pthread_mutex_lock(&J.mu);
    centry **pp = &J.entries;
    while (*pp) {
        centry *e = *pp;
        if (e->refs <= 0) {
            *pp = e->next;
            entry_free(e);
        } else {
            pp = &e->next;
        }
    }
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
    st_llvm_fn fn = h->e ? h->e->fns[index] : NULL;
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
    if (k->kind == ST_K_ELEMENTWISE) {
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
    if (t.err.code == ST_LLVM_EPOW)
        return st_err(ST_ERR_RUNTIME, "Integers to negative integer powers are "
                      "not allowed.");
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
    out->threads = st_llvm_pool_threads();
    out->have_blas = st_llvm_have_blas();
}
