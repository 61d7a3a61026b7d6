/* test_llvm_random - random fused chains through the LLVM backend against
 * the interp oracle: 1000 random DAGs (random_graph.h: elementwise,
 * reduction, matmul and view statements with broadcasting, on float32,
 * float64 and mixed inputs, over a few size sets) lowered under every
 * fusion setting (fusion x fuse_reductions x fuse_matmul_epilogue x
 * max_fused_ops 0/2: 16 settings, two per graph in turn, so every setting
 * runs 125 graphs), compiled by "llvm" and "interp", run through
 * st_rt_exec and compared (float64 1e-9, float32 2e-5 relative, plus an
 * absolute part scaled by the output's magnitude: BLAS sums in another
 * order). A mismatch prints the seed, the graph (st_ir_print) and its
 * kernels. Also SYMTRACE_DUMP_DIR: lowering writes the StatementIR and the
 * kernel IR, the LLVM backend the generated module (.ll), on a compile and
 * on a cache hit. And hand-built RAND kernels (uniform in every float
 * dtype, the dropout pattern) at chosen generator states (large seeds,
 * offsets wrapping 32 and 64 bits): llvm's inline Philox bit for bit
 * against interp and st_rand_uniform (test_rand_kernels).
 * The kernel cache is a fresh temporary directory (unless
 * SYMTRACE_CACHE_DIR is set): every run exercises the code generator, not
 * objects a previous build left, and ~/.cache is not filled.
 * Env: TEST_LLVM_RANDOM_SEED (base seed), TEST_LLVM_RANDOM_N (graphs),
 * TEST_LLVM_RANDOM_GRAPH (run that graph only), SYMTRACE_TEST_QUICK (200
 * graphs; also the default in a sanitizer build). Exits non-zero naming
 * each failure. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuse_internal.h" /* st_fuse_node0: a fresh kernel node */
#include "random_graph.h"
#include "st_llvm.h"
#include "st_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static st_backend *LB, *IB;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* ---- tensors ---- */

static st_tensor *tensor_rand(st_dtype dt, int ndim, const int64_t *shape)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), dt, ndim, shape);
    if (!t)
        return NULL;
    int64_t n = st_tensor_numel(t);
    char *d = st_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        double v = frand() * 2;
        if (dt == ST_FLOAT32)
            ((float *)d)[i] = (float)v;
        else
            ((double *)d)[i] = v;
    }
    return t;
}

/* Element i (row-major over the shape) of t, through its strides. */
static double tval(const st_tensor *t, int64_t i)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t c = i % t->shape[d];
        i /= t->shape[d];
        off += c * t->strides[d];
    }
    const char *p = (const char *)st_tensor_data(t);
    switch (t->dtype) {
    case ST_FLOAT64: return ((const double *)p)[off];
    case ST_FLOAT32: return ((const float *)p)[off];
    case ST_INT64: return (double)((const int64_t *)p)[off];
    case ST_BOOL: return ((const uint8_t *)p)[off];
    default: return NAN;
    }
}

typedef struct {
    int n;
    double *v[8];
    int64_t len[8];
    st_dtype dt[8];
} results;

static void results_free(results *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->v[i]);
    r->n = 0;
}

/* Runs p, compiled by be into h, on ins (the generator seeded the same
 * way) and copies every output into r. */
static st_status exec_prog(st_kprog *p, st_backend *be, void *h,
                           st_tensor **ins, results *r)
{
    memset(r, 0, sizeof *r);
    st_tensor **vals = calloc((size_t)p->graph->nvalues, sizeof *vals);
    for (int i = 0; i < p->graph->ninputs; i++) {
        vals[p->graph->inputs[i]] = ins[i];
        st_tensor_incref(ins[i]);
    }
    st_rt_manual_seed(1234);
    st_status s = st_rt_exec(p, be, h, vals);
    if (s == ST_OK)
        for (int k = 0; k < p->graph->noutputs && k < 8; k++) {
            st_tensor *t = vals[p->graph->outputs[k]];
            int64_t n = t ? st_tensor_numel(t) : 0;
            r->v[k] = malloc(sizeof(double) * (size_t)(n + 1));
            r->len[k] = n;
            r->dt[k] = t ? t->dtype : ST_FLOAT64;
            for (int64_t i = 0; i < n; i++)
                r->v[k][i] = tval(t, i);
            r->n = k + 1;
        }
    for (int v = 0; v < p->graph->nvalues; v++)
        if (vals[v])
            st_tensor_decref(vals[v]);
    free(vals);
    return s;
}

/* Compiles p with be on its own and runs it. */
static st_status run_prog(st_kprog *p, st_backend *be, st_tensor **ins,
                          results *r)
{
    memset(r, 0, sizeof *r);
    void *h = be->compile(be, p->kernels, p->nkernels);
    if (!h)
        return st_err_kind();
    st_status s = exec_prog(p, be, h, ins, r);
    be->release(be, h);
    return s;
}

#define MAX_BATCH 64

/* ---- compiling each distinct kernel once ----
 * LLVM's -O3 and code generation cost ~20 ms per kernel function (the
 * module around it hardly matters), and random graphs repeat kernels (the
 * same op on the same dtypes, rank and broadcast pattern; the kernels two
 * fusion settings share). A kernel's code depends on its structure only
 * (never on its name, graph values or statement numbers), so the test keeps
 * a table of the distinct kernels seen (deep copies), compiles the new ones
 * of a batch of graphs as one kernel list, and launches each program's
 * kernels through a shim backend that maps kernel i of the program to its
 * compiled copy. */
typedef struct {
    st_kernel *ks;  /* owned copies (nodes too) */
    int n;
    void *h;
    char err[300];  /* when h is NULL */
} ubatch;

typedef struct {
    uint64_t hash;
    int batch, index;
} ukernel;

static ubatch *ubatches;
static int nubatches, cap_ubatches;
static ukernel *ukernels;
static int nukernels, cap_ukernels;
static bool dedup = true;

static bool node_eq(const st_knode *a, const st_knode *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->a == b->a &&
           a->b == b->b && a->c == b->c && a->op == b->op && a->buf == b->buf &&
           a->idx_dim == b->idx_dim && a->phase == b->phase &&
           memcmp(&a->f, &b->f, sizeof a->f) == 0 && a->i == b->i;
}

/* Same code: every field but the name, graph values and statements. */
static bool kernel_eq(const st_kernel *a, const st_kernel *b)
{
    if (a->kind != b->kind || a->rank != b->rank || a->nred != b->nred ||
        a->nbufs != b->nbufs || a->nnodes != b->nnodes ||
        a->nreduce != b->nreduce || a->final_per_point != b->final_per_point ||
        a->nstores != b->nstores || a->nparams != b->nparams ||
        a->uses_rng != b->uses_rng)
        return false;
    for (int d = 0; d < ST_MAX_DIMS; d++)
        if (a->size_buf[d] != b->size_buf[d] || a->size_dim[d] != b->size_dim[d])
            return false;
    for (int i = 0; i < a->nbufs; i++) {
        const st_kbuf *x = &a->bufs[i], *y = &b->bufs[i];
        if (x->dtype != y->dtype || x->is_out != y->is_out ||
            x->contiguous != y->contiguous ||
            memcmp(x->dimmap, y->dimmap, sizeof x->dimmap) != 0)
            return false;
    }
    for (int i = 0; i < a->nnodes; i++)
        if (!node_eq(&a->nodes[i], &b->nodes[i]))
            return false;
    for (int r = 0; r < a->nreduce && r < ST_K_MAX_REDUCE; r++)
        if (a->reduce[r].op != b->reduce[r].op ||
            a->reduce[r].src != b->reduce[r].src)
            return false;
    for (int i = 0; i < a->nstores; i++)
        if (a->stores[i].buf != b->stores[i].buf ||
            a->stores[i].node != b->stores[i].node ||
            a->stores[i].indexed != b->stores[i].indexed ||
            a->stores[i].idx_dim != b->stores[i].idx_dim ||
            a->stores[i].idx_node != b->stores[i].idx_node ||
            a->stores[i].accumulate != b->stores[i].accumulate)
            return false;
    for (int i = 0; i < a->nparams; i++)
        if (a->param_dtype[i] != b->param_dtype[i])
            return false;
    return true;
}

static const st_kernel *ukernel_at(const ukernel *u)
{
    return &ubatches[u->batch].ks[u->index];
}

/* The table entry of k, added to the pending list (*pend, *npend) when new
 * (it joins batch nubatches, compiled by flush_pending). */
static int intern(const st_kernel *k, st_kernel **pend, int *npend, int *cap)
{
    uint64_t h = st_kernel_hash(k);
    for (int i = 0; i < nukernels; i++)
        if (ukernels[i].hash == h && kernel_eq(ukernel_at(&ukernels[i]), k))
            return i;
    for (int i = 0; i < *npend; i++)
        if (kernel_eq(&(*pend)[i], k)) /* pending: not in the table yet */
            return -2 - i;
    if (*npend == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *pend = realloc(*pend, sizeof **pend * (size_t)*cap);
    }
    st_kernel *c = &(*pend)[(*npend)++];
    *c = *k;
    c->nodes = malloc(sizeof *c->nodes * (size_t)(k->nnodes + 1));
    if (k->nnodes > 0)
        memcpy(c->nodes, k->nodes, sizeof *c->nodes * (size_t)k->nnodes);
    c->cap_nodes = k->nnodes;
    return -2 - (*npend - 1);
}

/* Compiles each pending kernel as a list of its own (one module each:
 * the module's fixed cost is small, and a one-kernel list has a cache key
 * of its own, which the worker processes of warm_cache fill); they enter
 * the table. A kernel that does not compile keeps its error, reported by
 * the launches of the programs that use it. Frees pend. */
static void flush_pending(st_kernel *pend, int npend)
{
    for (int i = 0; i < npend; i++) {
        if (nubatches == cap_ubatches) {
            cap_ubatches = cap_ubatches ? cap_ubatches * 2 : 256;
            ubatches = realloc(ubatches, sizeof *ubatches * (size_t)cap_ubatches);
        }
        ubatch *b = &ubatches[nubatches];
        b->ks = malloc(sizeof *b->ks);
        *b->ks = pend[i]; /* takes the nodes */
        b->n = 1;
        b->h = LB->compile(LB, b->ks, 1);
        snprintf(b->err, sizeof b->err, "%s", b->h ? "" : st_err_msg());
        st_err_clear();
        if (nukernels == cap_ukernels) {
            cap_ukernels = cap_ukernels ? cap_ukernels * 2 : 256;
            ukernels = realloc(ukernels, sizeof *ukernels * (size_t)cap_ukernels);
        }
        ukernels[nukernels].hash = st_kernel_hash(b->ks);
        ukernels[nukernels].batch = nubatches;
        ukernels[nukernels].index = 0;
        nukernels++;
        nubatches++;
    }
    free(pend);
}

static void free_kernel_copies(st_kernel *ks, int n)
{
    for (int i = 0; i < n; i++)
        free(ks[i].nodes);
    free(ks);
}

static void free_table(void)
{
    for (int b = 0; b < nubatches; b++) {
        if (ubatches[b].h)
            LB->release(LB, ubatches[b].h);
        free_kernel_copies(ubatches[b].ks, ubatches[b].n);
    }
    free(ubatches);
    free(ukernels);
    ubatches = NULL;
    ukernels = NULL;
    nubatches = nukernels = cap_ubatches = cap_ukernels = 0;
}

/* A program's kernels -> table entries (-1: a VIEW). */
typedef struct {
    const int *map;
    int n;
} slice;

static st_status shim_launch(st_backend *be, void *compiled, int index,
                             const st_kargs *args)
{
    slice *sl = compiled;
    if (index < 0 || index >= sl->n)
        return st_err(ST_ERR_INDEX, "shim: kernel index %d out of range", index);
    if (sl->map[index] < 0)
        return ST_OK;
    const ukernel *u = &ukernels[sl->map[index]];
    if (!ubatches[u->batch].h)
        return st_err(ST_ERR_RUNTIME, "llvm compile failed: %s",
                      ubatches[u->batch].err);
    return LB->launch(LB, ubatches[u->batch].h, u->index, args);
}

static st_backend shim_be = {.name = "llvm", .device = ST_DEV_CPU,
                             .launch = shim_launch};

/* Compares llvm's results a with interp's b; describes the first
 * difference into msg. With any_f32 (the graph computes something in
 * float32) float64 outputs get float32's tolerance: a float32 matmul summed
 * in another order, cast to float64, differs by float32 roundings. */
static bool same(const results *a, const results *b, bool any_f32,
                 char *msg, size_t mn)
{
    if (a->n != b->n) {
        snprintf(msg, mn, "%d outputs vs %d", a->n, b->n);
        return false;
    }
    for (int k = 0; k < a->n; k++) {
        if (a->len[k] != b->len[k] || a->dt[k] != b->dt[k]) {
            snprintf(msg, mn, "output %d: %lld %s elements vs %lld %s", k,
                     (long long)a->len[k], st_dtype_name(a->dt[k]),
                     (long long)b->len[k], st_dtype_name(b->dt[k]));
            return false;
        }
        bool f32 = b->dt[k] == ST_FLOAT32 || any_f32;
        double rtol = f32 ? 2e-5 : 1e-9, scale = 1;
        for (int64_t i = 0; i < b->len[k]; i++)
            if (isfinite(b->v[k][i]) && fabs(b->v[k][i]) > scale)
                scale = fabs(b->v[k][i]);
        double atol = rtol * scale; /* sums in another order cancel */
        for (int64_t i = 0; i < b->len[k]; i++) {
            double x = a->v[k][i], y = b->v[k][i];
            bool ok;
            if (isnan(x) || isnan(y))
                ok = isnan(x) && isnan(y);
            else if (isinf(x) || isinf(y))
                ok = x == y;
            else
                ok = fabs(x - y) <= rtol * fabs(y) + atol;
            if (!ok) {
                snprintf(msg, mn, "output %d (%s) element %lld: llvm %.17g "
                         "interp %.17g", k, st_dtype_name(b->dt[k]),
                         (long long)i, x, y);
                return false;
            }
        }
    }
    return true;
}

/* ---- the settings ---- */

#define NSETTINGS 16

static st_fuse_options setting(int s)
{
    st_fuse_options o;
    o.fusion = s & 1;
    o.fuse_reductions = (s >> 1) & 1;
    o.fuse_matmul_epilogue = (s >> 2) & 1;
    o.max_fused_ops = (s >> 3) & 1 ? 2 : 0;
    return o;
}

static const int64_t size_sets[][3] = {
    {3, 4, 5}, {3, 4, 5}, {2, 3, 17}, {4, 2, 9}, {2, 5, 33},
};

static uint64_t base_seed = 20240611;
static int kernels_fused, kernels_unfused;

static bool quiet; /* warm_cache: lowering only */

static void report(int it, uint64_t seed, const st_graph *g, int si,
                   const st_kprog *p, const char *what)
{
    st_fuse_options o = setting(si);
    printf("FAIL graph %d (TEST_LLVM_RANDOM_SEED=%llu TEST_LLVM_RANDOM_GRAPH=%d,"
           " graph seed %llu) fusion=%d fuse_reductions=%d "
           "fuse_matmul_epilogue=%d max_fused_ops=%d: %s (err: %s)\n",
           it, (unsigned long long)base_seed, it, (unsigned long long)seed,
           o.fusion, o.fuse_reductions, o.fuse_matmul_epilogue,
           o.max_fused_ops, what, st_err_msg());
    char *s = st_ir_print(g);
    printf("%s\n", s ? s : "");
    free(s);
    for (int i = 0; p && i < p->nkernels; i++) {
        char *ks = st_kernel_print(&p->kernels[i]);
        printf("%s", ks ? ks : "");
        free(ks);
    }
    st_test_failures++;
}

/* One graph of a batch: its inputs and its programs under two settings. */
typedef struct {
    int it;
    uint64_t seed;
    st_graph *g;
    st_tensor *ins[4];
    int nin;
    bool any_f32;
    int si[2];
    st_kprog *p[2];
} gcase;

static void make_case(gcase *c, int it)
{
    memset(c, 0, sizeof *c);
    c->it = it;
    c->seed = splitmix(base_seed * 1000003ull + (uint64_t)it);
    rng_state = c->seed | 1;
    int ss = irand((int)(sizeof size_sets / sizeof size_sets[0]));
    memcpy(rg_sizes, size_sets[ss], sizeof rg_sizes);
    rg_extended = true;
    rg_max_stmts = 8; /* LLVM compiles cost ~25 ms a distinct kernel */
    st_dtype dts[4];
    int mode = irand(3); /* float32, float64, mixed */
    for (int i = 0; i < 4; i++)
        dts[i] = mode == 0 ? ST_FLOAT32 : mode == 1 ? ST_FLOAT64
                 : irand(2) ? ST_FLOAT32 : ST_FLOAT64;
    c->g = st_ir_graph_new();
    c->nin = random_dag(c->g, dts, tensor_rand, c->ins);
    for (int v = 0; v < c->g->nvalues; v++)
        c->any_f32 |= c->g->values[v].meta.dtype == ST_FLOAT32;
    for (int j = 0; j < 2; j++) {
        c->si[j] = (2 * it + j) % NSETTINGS;
        st_fuse_options o = setting(c->si[j]);
        c->p[j] = st_fuse_lower(c->g, &o);
        if (!c->p[j]) {
            if (!quiet)
                report(it, c->seed, c->g, c->si[j], NULL, "lowering failed");
            st_err_clear();
            continue;
        }
        for (int i = 0; i < c->p[j]->nkernels; i++)
            if (c->p[j]->kernels[i].kind != ST_K_VIEW)
                *(o.fusion ? &kernels_fused : &kernels_unfused) += 1;
    }
}

static void free_case(gcase *c)
{
    for (int j = 0; j < 2; j++)
        st_kprog_free(c->p[j]);
    for (int i = 0; i < c->nin; i++)
        if (c->ins[i])
            st_tensor_decref(c->ins[i]);
    st_ir_graph_free(c->g);
}

/* Runs program j of c with interp and with llvm (through the kernel
 * table when map is given, else compiled on its own). */
static void check_prog(gcase *c, int j, const int *map)
{
    st_kprog *p = c->p[j];
    results ri, rl;
    st_status s1 = run_prog(p, IB, c->ins, &ri);
    char imsg[300];
    snprintf(imsg, sizeof imsg, "%s", st_err_msg());
    st_err_clear();
    st_status s2;
    if (map) {
        slice sl = {map, p->nkernels};
        s2 = exec_prog(p, &shim_be, &sl, c->ins, &rl);
    } else {
        s2 = run_prog(p, LB, c->ins, &rl);
    }
    char msg[400];
    if (s1 != ST_OK || s2 != ST_OK) {
        snprintf(msg, sizeof msg, "status interp %d (%s), llvm %d", s1, imsg,
                 s2);
        report(c->it, c->seed, c->g, c->si[j], p, msg);
    } else if (!same(&rl, &ri, c->any_f32, msg, sizeof msg)) {
        report(c->it, c->seed, c->g, c->si[j], p, msg);
    }
    st_err_clear();
    results_free(&ri);
    results_free(&rl);
}


/* Graphs [first, last) (only `only` when >= 0) as one batch. */
static void run_batch(int first, int last, int only)
{
    gcase cs[MAX_BATCH];
    int nc = 0;
    for (int it = first; it < last && nc < MAX_BATCH; it++)
        if (only < 0 || it == only)
            make_case(&cs[nc++], it);
    int *maps[MAX_BATCH][2] = {{NULL}};
    bool table = dedup;
    st_kernel *pend = NULL;
    int npend = 0, cap = 0;
    for (int c = 0; c < nc && table; c++)
        for (int j = 0; j < 2; j++) {
            st_kprog *p = cs[c].p[j];
            if (!p)
                continue;
            maps[c][j] = malloc(sizeof(int) * (size_t)(p->nkernels + 1));
            for (int i = 0; i < p->nkernels; i++)
                maps[c][j][i] = p->kernels[i].kind == ST_K_VIEW
                                ? -1 : intern(&p->kernels[i], &pend, &npend, &cap);
        }
    int base = nukernels;
    if (table)
        flush_pending(pend, npend);
    for (int c = 0; c < nc; c++)
        for (int j = 0; j < 2; j++) {
            if (!cs[c].p[j])
                continue;
            if (table) /* pending entries now have table indices */
                for (int i = 0; i < cs[c].p[j]->nkernels; i++)
                    if (maps[c][j][i] <= -2)
                        maps[c][j][i] = base + (-2 - maps[c][j][i]);
            check_prog(&cs[c], j, table ? maps[c][j] : NULL);
            free(maps[c][j]);
        }
    for (int c = 0; c < nc; c++)
        free_case(&cs[c]);
}

/* Worker `worker` of `jobs` processes: lowers every graph (cheap), finds
 * the distinct kernels (the same list in every process) and compiles its
 * share of them as one-kernel lists into the disk cache, so that the run
 * proper (in the parent) loads each from disk. */
static void warm_cache(int n, int jobs, int worker)
{
    st_kernel *pend = NULL;
    int npend = 0, cap = 0;
    quiet = true;
    for (int it = 0; it < n; it++) {
        gcase c;
        make_case(&c, it);
        for (int j = 0; j < 2; j++)
            for (int i = 0; c.p[j] && i < c.p[j]->nkernels; i++)
                if (c.p[j]->kernels[i].kind != ST_K_VIEW)
                    intern(&c.p[j]->kernels[i], &pend, &npend, &cap);
        free_case(&c);
    }
    quiet = false;
    kernels_fused = kernels_unfused = 0;
    for (int i = worker; i < npend; i += jobs) {
        void *h = LB->compile(LB, &pend[i], 1);
        if (h)
            LB->release(LB, h);
        st_err_clear(); /* the run proper reports it */
    }
    free_kernel_copies(pend, npend);
    st_llvm_cache_clear_memory();
}

/* ---- SYMTRACE_DUMP_DIR ---- */

static bool file_has(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = 0;
    fclose(f);
    bool r = strstr(b, what) != NULL;
    free(b);
    return r;
}

/* The .ll files in dir (one name into ll). */
static int count_ll(const char *dir, char *ll, size_t n)
{
    DIR *d = opendir(dir);
    int c = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 3 && strcmp(e->d_name + l - 3, ".ll") == 0) {
            snprintf(ll, n, "%s/%s", dir, e->d_name);
            c++;
        }
    }
    closedir(d);
    return c;
}

static void rm_rf(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("warning: could not remove %s\n", dir);
}

static void test_dump_dir(void)
{
    /* a disk cache of its own: "pass 0 compiles" must hold even when the
     * caller's SYMTRACE_CACHE_DIR already holds this kernel */
    char cache[] = "/tmp/st_llvm_dumpcacheXXXXXX";
    CHECK(mkdtemp(cache) != NULL, "mkdtemp");
    st_kcache_set_dir(cache);
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0 compiles; pass 1 is a disk-cache hit */
        char dir[] = "/tmp/st_llvm_dumpXXXXXX";
        CHECK(mkdtemp(dir) != NULL, "mkdtemp");
        setenv("SYMTRACE_DUMP_DIR", dir, 1);
        st_graph *g = st_ir_graph_new();
        int64_t sh[2] = {3, 29}, bsh[1] = {29};
        int x = input(g, ST_FLOAT32, 2, sh), b = input(g, ST_FLOAT32, 1, bsh);
        int v = bin(g, ST_OP_MUL, un(g, ST_OP_EXP, x), b);
        st_attrs a = attrs0();
        a.i[0] = 1;
        v = stmt(g, ST_OP_SOFTMAX, &v, 1, &a);
        st_ir_mark_output(g, v);
        st_fuse_options o = {1, 1, 1, 0};
        st_llvm_cache_clear_memory();
        st_llvm_stats_t s0, s1;
        st_llvm_stats(&s0);
        st_kprog *p = st_fuse_lower(g, &o);
        void *h = p ? LB->compile(LB, p->kernels, p->nkernels) : NULL;
        st_llvm_stats(&s1);
        unsetenv("SYMTRACE_DUMP_DIR");
        CHECK(h != NULL, "dump: compile");
        if (pass == 0)
            CHECK(s1.compiles == s0.compiles + 1, "dump: one compile");
        else
            CHECK(s1.compiles == s0.compiles && s1.disk_hits == s0.disk_hits + 1,
                  "dump: a disk hit");
        char path[1200], ll[1200];
        snprintf(path, sizeof path, "%s/SIR_%d.txt", dir, g->id);
        CHECK(file_has(path, "softmax("), "dump: %s holds the StatementIR", path);
        snprintf(path, sizeof path, "%s/SIR_%d.kernels.txt", dir, g->id);
        CHECK(file_has(path, "nreduce"), "dump: %s holds the kernel IR", path);
        CHECK(count_ll(dir, ll, sizeof ll) == 1, "dump: one .ll in %s", dir);
        CHECK(file_has(ll, "define ") && file_has(ll, "; kernel ") &&
              file_has(ll, "target triple"), "dump: %s holds LLVM IR", ll);
        for (int i = 0; p && i < p->nkernels; i++)
            CHECK(file_has(ll, p->kernels[i].name), "dump: %s names %s", ll,
                  p->kernels[i].name);
        if (h)
            LB->release(LB, h);
        st_kprog_free(p);
        st_ir_graph_free(g);
        rm_rf(dir);
    }
    st_kcache_set_dir(NULL);
    rm_rf(cache);
    /* no directory: nothing written (and no failure) */
    CHECK(getenv("SYMTRACE_DUMP_DIR") == NULL, "dump dir unset");
}

/* ---- RAND kernels: inline Philox vs interp and st_rand_uniform ----
 * Hand-built kernels (rand alone in every float dtype; the dropout
 * pattern where(rand >= p, x * s, 0)) launched straight with chosen
 * generator states: seeds with both halves set, offsets whose low 32 bits
 * wrap inside the launch, the 64-bit wrap; contiguous (vectorized) and
 * transposed (strided path) outputs, sizes with a vector tail, big enough
 * for the thread pool to split. llvm must equal interp bit for bit. */
static int rk_add(st_kernel *k, st_knode n) { return st_kernel_node(k, &n); }

static int rk_bin(st_kernel *k, int op, st_dtype dt, int a, int b)
{
    st_knode n = st_fuse_node0(ST_KN_BINARY, dt);
    n.op = op;
    n.a = a;
    n.b = b;
    return rk_add(k, n);
}

static int rk_const(st_kernel *k, st_dtype dt, double v)
{
    st_knode n = st_fuse_node0(ST_KN_CONST, dt);
    n.f = v;
    return rk_add(k, n);
}

/* kind 0: y = rand (dtype dt); kind 1: y = where(rand >= 0.1, x * 1.25, 0) */
static void rand_kernel(st_kernel *k, int kind, st_dtype dt)
{
    int dm[ST_MAX_DIMS] = {0, 1, -1, -1, -1, -1, -1, -1};
    st_kernel_init(k, ST_K_ELEMENTWISE, 2);
    k->uses_rng = true;
    int yb = st_kernel_add_buf(k, 0, dt, true, dm), y;
    int r = rk_add(k, st_fuse_node0(ST_KN_RAND, dt));
    if (kind == 0) {
        y = r;
    } else {
        int xb = st_kernel_add_buf(k, 1, dt, false, dm);
        st_knode ld = st_fuse_node0(ST_KN_LOAD, dt);
        ld.buf = xb;
        int x = rk_add(k, ld);
        int keep = rk_bin(k, ST_OP_GE, ST_BOOL, r, rk_const(k, dt, 0.1));
        int xs = rk_bin(k, ST_OP_MUL, dt, x, rk_const(k, dt, 1.25));
        st_knode w = st_fuse_node0(ST_KN_WHERE, dt);
        w.a = keep;
        w.b = xs;
        w.c = rk_const(k, dt, 0.0);
        y = rk_add(k, w);
    }
    k->stores[0].buf = yb;
    k->stores[0].node = y;
    k->nstores = 1;
    snprintf(k->name, sizeof k->name, "rand%d_%s", kind, st_dtype_name(dt));
}

static void test_rand_kernels(void)
{
    static const st_dtype dts[4] = {ST_FLOAT64, ST_FLOAT32, ST_FLOAT16, ST_BFLOAT16};
    static const uint64_t seeds[] = {0, 1, 1234, 0xFFFFFFFFull, 0x100000000ull,
        0x9E3779B97F4A7C15ull, 0xFFFFFFFFFFFFFFFFull, 67280421310721ull};
    static const uint64_t offs[] = {0, 7, 0xFFFFFFFFull - 100, 0x1FFFFFFF0ull,
        0xFFFFFFFFFFFFFFFFull - 50, 0x8000000000000000ull - 3, 123456789012345ull};
    /* rows longer than the llvm backend's run of random words (RAND_RUN),
     * starting off a multiple of four, included */
    static const int64_t sizes[4][2] = {{1, 1}, {3, 67}, {301, 1001}, {3, 9001}};
    int checks = 0, before = st_test_failures;
    size_t cap = 301 * 1001;
    char *xs = malloc(cap * 8), *yl = malloc(cap * 8), *yi = malloc(cap * 8);
    for (int kind = 0; kind < 2; kind++)
        for (int d = 0; d < 4; d++) {
            st_dtype dt = dts[d];
            size_t es = st_dtype_size(dt);
            st_kernel k;
            rand_kernel(&k, kind, dt);
            void *hl = LB->compile(LB, &k, 1), *hi = IB->compile(IB, &k, 1);
            CHECK(hl && hi, "rand kernel %s: compile", k.name);
            for (int sz = 0; hl && hi && sz < 4; sz++)
                for (int tr = 0; tr < 2; tr++)
                    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++)
                        for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
                            if (sz >= 2 && (si % 3 != 0 || oi % 2 != 0))
                                continue; /* the big sizes on a subset */
                            int64_t R = sizes[sz][0], C = sizes[sz][1], n = R * C;
                            for (int64_t i = 0; i < n; i++) { /* finite, |x| < 2 */
                                uint64_t h = splitmix((uint64_t)i);
                                double v = (double)(h >> 11) * 0x1p-51 - 2;
                                if (dt == ST_FLOAT64)
                                    ((double *)xs)[i] = v;
                                else if (dt == ST_FLOAT32)
                                    ((float *)xs)[i] = (float)v;
                                else
                                    ((uint16_t *)xs)[i] = (uint16_t)(h & 0xBFFF);
                            }
                            st_kargs a;
                            memset(&a, 0, sizeof a);
                            a.shape[0] = R;
                            a.shape[1] = C;
                            for (int b = 0; b < 2; b++) {
                                a.bufs[b].strides[0] = tr ? 1 : C;
                                a.bufs[b].strides[1] = tr ? R : 1;
                            }
                            a.bufs[1].data = xs;
                            a.rng_seed = seeds[si];
                            a.rng_offset = offs[oi];
                            memset(yl, 0x5a, (size_t)n * es);
                            memset(yi, 0xa5, (size_t)n * es);
                            a.bufs[0].data = yl;
                            st_status s1 = LB->launch(LB, hl, 0, &a);
                            a.bufs[0].data = yi;
                            st_status s2 = IB->launch(IB, hi, 0, &a);
                            checks++;
                            CHECK(s1 == ST_OK && s2 == ST_OK, "rand launch %s", k.name);
                            if (memcmp(yl, yi, (size_t)n * es) != 0) {
                                int64_t i = 0;
                                while (memcmp(yl + i * es, yi + i * es, es) == 0)
                                    i++;
                                CHECK(false, "%s [%lld,%lld]%s seed %llu offset %llu: "
                                      "element %lld differs from interp", k.name,
                                      (long long)R, (long long)C, tr ? " transposed" : "",
                                      (unsigned long long)seeds[si],
                                      (unsigned long long)offs[oi], (long long)i);
                            }
                            if (kind == 0 && dt == ST_FLOAT64 && !tr)
                                for (int64_t i = 0; i < n; i++) {
                                    double u = st_rand_uniform(seeds[si], offs[oi] + (uint64_t)i);
                                    if (memcmp(&u, yl + i * 8, 8) != 0) {
                                        CHECK(false, "rand float64 seed %llu offset %llu: "
                                              "element %lld is %.17g, st_rand_uniform %.17g",
                                              (unsigned long long)seeds[si],
                                              (unsigned long long)offs[oi], (long long)i,
                                              ((double *)yl)[i], u);
                                        break;
                                    }
                                }
                        }
            if (hl)
                LB->release(LB, hl);
            if (hi)
                IB->release(IB, hi);
            st_kernel_clear(&k);
        }
    free(xs);
    free(yl);
    free(yi);
    printf("rand kernels: %d launches compared, %d failure(s)\n", checks,
           st_test_failures - before);
}

static int env_int(const char *name, int def)
{
    const char *e = getenv(name);
    return e && *e ? atoi(e) : def;
}

int main(void)
{
    char cache[] = "/tmp/st_llvm_randomXXXXXX";
    bool own_cache = false;
    if (!getenv("SYMTRACE_CACHE_DIR") && mkdtemp(cache)) {
        setenv("SYMTRACE_CACHE_DIR", cache, 1);
        own_cache = true;
    }
    unsetenv("SYMTRACE_DUMP_DIR");
    const char *q = getenv("SYMTRACE_TEST_QUICK");
    bool quick = SANITIZED || (q && *q && strcmp(q, "0") != 0);
    int n = env_int("TEST_LLVM_RANDOM_N", quick ? 200 : 1000);
    int only = env_int("TEST_LLVM_RANDOM_GRAPH", -1);
    int batch = env_int("TEST_LLVM_RANDOM_BATCH", 25);
    if (batch < 1 || batch > MAX_BATCH)
        batch = 25;
    dedup = env_int("TEST_LLVM_RANDOM_DEDUP", 1) != 0;
    if (getenv("TEST_LLVM_RANDOM_SEED"))
        base_seed = strtoull(getenv("TEST_LLVM_RANDOM_SEED"), NULL, 10);
    /* every setting gets >= 100 of the 1000 graphs (two settings a graph) */
    int runs[NSETTINGS] = {0};
    for (int it = 0; it < n; it++) {
        runs[2 * it % NSETTINGS]++;
        runs[(2 * it + 1) % NSETTINGS]++;
    }
    for (int s = 0; s < NSETTINGS && n >= 1000; s++)
        CHECK(runs[s] >= 100, "setting %d runs %d graphs", s, runs[s]);

    /* LLVM compiles one module at a time per process: worker processes
     * (forked before anything starts) compile shares of the distinct
     * kernels into the disk cache first */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = env_int("TEST_LLVM_RANDOM_JOBS", ncpu < 1 ? 1 : ncpu > 4 ? 4
                                                 : (int)ncpu);
    if (jobs < 1 || only >= 0 || !dedup)
        jobs = 1;
    if (jobs > 8)
        jobs = 8;
    pid_t pids[8] = {0};
    int worker = 0;
    fflush(stdout);
    for (int w = 1; w < jobs; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            worker = w;
            break;
        }
        pids[w] = pid;
        CHECK(pid > 0, "fork");
    }
    LB = st_llvm_backend();
    IB = st_interp_backend();
    double t0 = now_s();
    if (jobs > 1) {
        warm_cache(n, jobs, worker);
        if (worker > 0) {
            fflush(stdout);
            _exit(0);
        }
        for (int w = 1; w < jobs; w++) {
            int status = 0;
            if (pids[w] > 0) {
                waitpid(pids[w], &status, 0);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "worker %d failed (status %d)", w, status);
            }
        }
    }
    double t1 = now_s();
    RUN_TEST(test_dump_dir());
    RUN_TEST(test_rand_kernels());

    st_llvm_stats_t s0, s1;
    st_llvm_stats(&s0);
    for (int it = 0; it < n; it += batch) {
        run_batch(it, it + batch < n ? it + batch : n, only);
        if (st_test_failures > 20) {
            printf("too many failures: stopping after graph %d\n",
                   it + batch - 1);
            break;
        }
    }
    st_llvm_stats(&s1);
    printf("%d graph(s) (seed %llu): %.1f s (%d processes compiling %.1f s): "
           "%d distinct kernels (of %d unfused and %d fused), %lld compiled "
           "here, %lld from the disk cache\n", only >= 0 ? 1 : n,
           (unsigned long long)base_seed, now_s() - t0, jobs, t1 - t0,
           nukernels, kernels_unfused, kernels_fused,
           (long long)(s1.compiles - s0.compiles),
           (long long)(s1.disk_hits - s0.disk_hits));
    free_table();
    st_llvm_cache_clear_memory();
    if (own_cache)
        rm_rf(cache);
    return st_test_exit_code("test_llvm_random");
}
