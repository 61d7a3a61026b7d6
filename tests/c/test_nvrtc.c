/* test_nvrtc - compile checks of the NVRTC renderer (nvrtc_backend/), run
 * without a GPU: every primitive op (and the composites) lowered through
 * st_fuse_lower, unfused and fused, plus fused row kernels (softmax,
 * log_softmax, layer_norm, cross_entropy), matmul + bias + gelu with the
 * epilogue fused, scatter_add and hand-built multi-reduction kernels are
 * rendered to CUDA C and compiled with NVRTC for sm_80 and sm_90; all
 * must compile; column reductions (bias and LayerNorm weight gradients,
 * a GELU-backward prologue stored per point) must get the column variant
 * NAME_col, present in the source exactly when st_nvrtc_col_plan says so.
 * Also the host-side launch decisions (vector-path flags, grid/block
 * shapes, when NAME_col suits a launch) and the compile-error path (the error names the
 * file the source was written to). Exits 77 (skipped) when NVRTC cannot
 * be loaded, naming what was tried. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "st_nvrtc.h"
#include "st_test.h"

#ifdef __SANITIZE_ADDRESS__
/* libnvrtc keeps allocations of its own until exit */
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libnvrtc\n";
}
#endif

/* ---- a group of programs rendered into one translation unit ---- */

#define MAXP 1024
typedef struct {
    const char *name;
    st_kprog *progs[MAXP];
    char labels[MAXP][96];
    int nprogs;
    int nkernels;
    /* features seen (to be sure the group exercises them) */
    int multi_reduce, per_row_epi, per_point_epi, mm_epi, mma, rand,
        indexed_load, indexed_store, accumulate, vec, unravel, epi_kernels;
} group;

static void note_features(group *gr, const st_kernel *k)
{
    if (k->kind == ST_K_REDUCE) {
        if (k->nreduce > 1)
            gr->multi_reduce++;
        if (k->final_per_point)
            gr->per_point_epi++;
        else
            gr->per_row_epi++;
    }
    if (k->kind == ST_K_MATMUL && k->nstores > 0)
        gr->mm_epi++;
    if (k->kind == ST_K_MATMUL && st_nvrtc_has_epi(k)) {
        gr->epi_kernels++;
        /* NAME_epi is in the rendered source exactly when has_epi */
        char *src = st_nvrtc_render(k, 1), name[128];
        st_nvrtc_kernel_name(k, 0, name, sizeof name);
        strcat(name, "_epi(");
        const char *epi = src ? strstr(src, name) : NULL;
        CHECK(epi, "%s rendered", name);
        /* its walk along N reads the product of a trip's points ahead */
        CHECK(epi && strstr(epi, "P_[j] = prod_[r_ * N + nn_];") &&
                  strstr(epi, "accv = P_[j];"), "%s: the product loaded ahead", name);
        free(src);
    }
    if (st_nvrtc_has_mma(k))
        gr->mma++;
    if (st_nvrtc_vec_width(k) > 1)
        gr->vec++;
    for (int i = 0; i < k->nnodes; i++) {
        if (k->nodes[i].kind == ST_KN_RAND)
            gr->rand++;
        if (k->nodes[i].kind == ST_KN_LOAD && k->nodes[i].idx_dim >= 0)
            gr->indexed_load++;
    }
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].unravel > 0)
            gr->unravel++;
    for (int s = 0; s < k->nstores; s++) {
        if (k->stores[s].indexed)
            gr->indexed_store++;
        if (k->stores[s].accumulate)
            gr->accumulate++;
    }
}

static void add_prog(group *gr, const st_graph *g, bool fused, const char *label)
{
    st_fuse_options o = *st_fuse_config();
    o.fusion = fused;
    o.fuse_reductions = fused;
    o.fuse_matmul_epilogue = fused;
    o.max_fused_ops = 0;
    st_kprog *p = st_fuse_lower(g, &o);
    CHECK(p != NULL, "lower %s (%s)", label, fused ? "fused" : "unfused");
    if (!p)
        return;
    if (gr->nprogs >= MAXP) {
        st_kprog_free(p);
        return;
    }
    /* each program must render on its own too */
    char *src = st_nvrtc_render(p->kernels, p->nkernels);
    CHECK(src != NULL, "render %s", label);
    free(src);
    for (int i = 0; i < p->nkernels; i++)
        note_features(gr, &p->kernels[i]);
    snprintf(gr->labels[gr->nprogs], sizeof gr->labels[0], "%s%s", label,
             fused ? " [fused]" : "");
    gr->progs[gr->nprogs++] = p;
    gr->nkernels += p->nkernels;
}

/* Lowers g fused; returns its kernels other than views (-1: lowering
 * failed) and counts their RAND nodes and bool outputs. */
static int fused_kernels(const st_graph *g, int *nrand, int *nbool)
{
    st_fuse_options o = {1, 1, 1, 0};
    st_kprog *p = st_fuse_lower(g, &o);
    if (!p)
        return -1;
    int nk = 0;
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW)
            continue;
        nk++;
        for (int n = 0; n < k->nnodes; n++)
            *nrand += k->nodes[n].kind == ST_KN_RAND;
        for (int b = 0; b < k->nbufs; b++)
            *nbool += k->bufs[b].is_out && k->bufs[b].dtype == ST_BOOL;
    }
    st_kprog_free(p);
    return nk;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* kernels already compiled (by structure hash): fused and unfused one-op
 * programs often lower to the same kernel */
static uint64_t *seen;
static int nseen, capseen;

static bool first_time(const st_kernel *k)
{
    uint64_t h = st_kernel_hash(k);
    for (int i = 0; i < nseen; i++)
        if (seen[i] == h)
            return false;
    if (nseen == capseen) {
        capseen = capseen ? 2 * capseen : 1024;
        seen = realloc(seen, (size_t)capseen * sizeof *seen);
    }
    seen[nseen++] = h;
    return true;
}

typedef struct {
    const char *src, *name, *arch;
    st_status status;
    char err[2048];
    size_t size;
    double secs;
} job;

static void *compile_job(void *p)
{
    job *j = p;
    double t0 = now_s();
    st_nvrtc_output out;
    j->status = st_nvrtc_compile(j->src, j->name, j->arch, false, &out);
    if (j->status != ST_OK)
        snprintf(j->err, sizeof j->err, "%s", st_err_msg());
    j->size = out.size;
    st_nvrtc_output_free(&out);
    j->secs = now_s() - t0;
    return NULL;
}

/* Renders the group's new kernels as one TU (kernel names are unique by
 * position) and compiles it for sm_80 and sm_90 at once (two threads). On
 * failure, compiles each program alone to name the culprit. */
static void compile_group(group *gr)
{
    st_kernel *all = calloc((size_t)gr->nkernels + 1, sizeof *all);
    int n = 0;
    for (int p = 0; p < gr->nprogs; p++)
        for (int i = 0; i < gr->progs[p]->nkernels; i++)
            if (gr->progs[p]->kernels[i].kind != ST_K_VIEW &&
                first_time(&gr->progs[p]->kernels[i]))
                all[n++] = gr->progs[p]->kernels[i]; /* shallow: nodes shared */
    char *src = st_nvrtc_render(all, n);
    CHECK(src != NULL, "render group %s", gr->name);
    const char *dump = getenv("ST_TEST_NVRTC_DUMP"); /* debugging: write, skip compiling */
    if (src && dump) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.cu", dump, gr->name);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(src, f);
            fclose(f);
        }
        free(src);
        src = NULL;
    }
    job jobs[2] = {{src, gr->name, "sm_80", ST_OK, "", 0, 0},
                   {src, gr->name, "sm_90", ST_OK, "", 0, 0}};
    if (src) {
        pthread_t th;
        bool threaded = pthread_create(&th, NULL, compile_job, &jobs[1]) == 0;
        compile_job(&jobs[0]);
        if (threaded)
            pthread_join(th, NULL);
        else
            compile_job(&jobs[1]);
    }
    for (int a = 0; src && a < 2; a++) {
        job *j = &jobs[a];
        printf("  %-13s %-6s %4d programs %4d new kernels %8zu bytes of source: %s (%.1fs, cubin %zu bytes)\n",
               gr->name, j->arch, gr->nprogs, n, strlen(src), j->status == ST_OK ? "ok" : "FAILED",
               j->secs, j->size);
        CHECK(j->status == ST_OK && j->size > 0, "compile group %s for %s: %.1500s", gr->name,
              j->arch, j->err);
        if (j->status != ST_OK) { /* find the programs that fail */
            st_nvrtc_output out;
            int shown = 0;
            for (int p = 0; p < gr->nprogs && shown < 5; p++) {
                char *ps = st_nvrtc_render(gr->progs[p]->kernels, gr->progs[p]->nkernels);
                if (!ps)
                    continue;
                if (st_nvrtc_compile(ps, "one", j->arch, false, &out) != ST_OK) {
                    printf("    failing program: %s: %s\n", gr->labels[p], st_err_msg());
                    shown++;
                }
                st_nvrtc_output_free(&out);
                free(ps);
            }
            break;
        }
    }
    free(src);
    free(all);
}

static void free_group(group *gr)
{
    for (int p = 0; p < gr->nprogs; p++)
        st_kprog_free(gr->progs[p]);
    gr->nprogs = 0;
}

/* ---- graphs ---- */

static st_attrs A0(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

static int in_of(st_graph *g, st_dtype dt, int nd, const int64_t *sh)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = nd;
    for (int i = 0; i < nd; i++)
        m.shape[i] = sh[i];
    return st_ir_add_input(g, &m, false);
}

static int op_of(st_graph *g, st_op_id op, const int *in, int nin, const st_attrs *a)
{
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = A0();
    if (st_ir_add_stmt(g, op, in, nin, a ? a : &z, outs) < 0)
        return -1;
    return outs[0];
}

static const st_dtype all_dt[] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16,
                                  ST_BFLOAT16, ST_INT32, ST_INT64, ST_BOOL,
                                  ST_UINT8, ST_INT8, ST_INT16};
#define NDT 10

/* a one-op graph, added unfused and fused */
static void one_op(group *gr, const char *name, st_op_id op, int nin,
                   const st_dtype *dts, const int *nds, const int64_t (*shs)[4],
                   const st_attrs *a)
{
    st_graph *g = st_ir_graph_new();
    int ins[ST_MAX_IN];
    for (int i = 0; i < nin; i++)
        ins[i] = in_of(g, dts[i], nds[i], shs[i]);
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = A0();
    int si = st_ir_add_stmt(g, op, ins, nin, a ? a : &z, outs);
    if (si < 0) { /* not a valid combination */
        st_err_clear();
    } else {
        for (int o = 0; o < g->stmts[si].nout; o++)
            st_ir_mark_output(g, outs[o]);
        char nm[96];
        snprintf(nm, sizeof nm, "%s(%s%s%s)", name, st_dtype_name(dts[0]),
                 nin > 1 ? "," : "", nin > 1 ? st_dtype_name(dts[1]) : "");
        add_prog(gr, g, false, nm);
        add_prog(gr, g, true, nm);
    }
    st_ir_graph_free(g);
}

static void elementwise_ops(group *gr)
{
    static const int64_t sh[3][4] = {{4, 37}, {4, 37}, {4, 37}};
    int nds[3] = {2, 2, 2};
    for (int op = ST_OP_NEG; op <= ST_OP_SIGN; op++)
        for (int d = 0; d < NDT; d++)
            one_op(gr, st_op(op)->name, op, 1, &all_dt[d], nds, sh, NULL);
    for (int d = 0; d < NDT; d++)
        for (int e = 0; e < NDT; e++) {
            st_attrs a = A0();
            a.dtype = all_dt[e];
            one_op(gr, "cast", ST_OP_CAST, 1, &all_dt[d], nds, sh, &a);
        }
    static const int64_t bsh[2][4] = {{3, 1, 33}, {4, 33}};
    int bnd[2] = {3, 2};
    for (int op = ST_OP_ADD; op <= ST_OP_REMAINDER; op++) {
        for (int d = 0; d < NDT; d++) {
            st_dtype dts[2] = {all_dt[d], all_dt[d]};
            one_op(gr, st_op(op)->name, op, 2, dts, bnd, bsh, NULL);
        }
        st_dtype mix[5][2] = {{ST_FLOAT32, ST_INT64}, {ST_FLOAT16, ST_FLOAT64},
                              {ST_INT32, ST_INT64}, {ST_UINT8, ST_INT8},
                              {ST_INT16, ST_FLOAT32}};
        for (int m = 0; m < 5; m++)
            one_op(gr, st_op(op)->name, op, 2, mix[m], bnd, bsh, NULL);
    }
    for (int d = 0; d < NDT; d++) {
        st_dtype dts[3] = {ST_BOOL, all_dt[d], all_dt[d]};
        one_op(gr, "where", ST_OP_WHERE, 3, dts, nds, sh, NULL);
    }
}

static void reductions(group *gr)
{
    static const int64_t sh[1][4] = {{5, 6, 7}};
    static const int64_t s0[1][4] = {{0}};
    int nd[1] = {3}, n0[1] = {0};
    st_op_id ops[] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN,
                      ST_OP_ARGMAX, ST_OP_ARGMIN, ST_OP_PROD};
    for (unsigned o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int d = 0; d < NDT; d++) {
            for (int v = 0; v < 4; v++) {
                st_attrs a = A0();
                bool arg = ops[o] == ST_OP_ARGMAX || ops[o] == ST_OP_ARGMIN;
                if (v == 1) { a.ndims = 1; a.dims[0] = 2; }
                if (v == 2) { a.ndims = 1; a.dims[0] = 0; a.flags = ST_ATTR_KEEPDIM; }
                if (v == 3) {
                    if (arg)
                        continue;
                    a.ndims = 2; a.dims[0] = 0; a.dims[1] = 2;
                }
                one_op(gr, st_op(ops[o])->name, ops[o], 1, &all_dt[d], nd, sh, &a);
            }
            /* a 0-d input: one point reduced to itself */
            one_op(gr, st_op(ops[o])->name, ops[o], 1, &all_dt[d], n0, s0, NULL);
        }
}

static void matmuls(group *gr)
{
    static const int64_t s1[2][4] = {{5, 7}, {7, 3}};
    static const int64_t s2[2][4] = {{2, 5, 7}, {7, 3}};
    static const int64_t s3[2][4] = {{2, 1, 64, 48}, {3, 48, 40}};
    int n1[2] = {2, 2}, n2[2] = {3, 2}, n3[2] = {4, 3};
    st_dtype dts[7][2] = {{ST_FLOAT32, ST_FLOAT32}, {ST_FLOAT64, ST_FLOAT64},
                          {ST_FLOAT16, ST_FLOAT16}, {ST_INT64, ST_INT64},
                          {ST_BFLOAT16, ST_BFLOAT16}, {ST_INT32, ST_INT32},
                          {ST_FLOAT16, ST_FLOAT32}};
    for (int d = 0; d < 7; d++) {
        one_op(gr, "matmul", ST_OP_MATMUL, 2, dts[d], n1, s1, NULL);
        one_op(gr, "matmul batched", ST_OP_MATMUL, 2, dts[d], n2, s2, NULL);
        one_op(gr, "matmul bcast", ST_OP_MATMUL, 2, dts[d], n3, s3, NULL);
    }
    /* matmul + bias + gelu (and relu, residual): the epilogue fused */
    st_dtype fd[4] = {ST_FLOAT32, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT64};
    for (int d = 0; d < 4; d++)
        for (int v = 0; v < 3; v++) {
            st_graph *g = st_ir_graph_new();
            int64_t sx[2] = {33, 20}, sw[2] = {20, 17}, sb[1] = {17}, sr[2] = {33, 17};
            int x = in_of(g, fd[d], 2, sx), w = in_of(g, fd[d], 2, sw);
            int bi = in_of(g, fd[d], 1, sb);
            int xw[2] = {x, w};
            int y = op_of(g, ST_OP_MATMUL, xw, 2, NULL);
            int yb[2] = {y, bi};
            y = op_of(g, ST_OP_ADD, yb, 2, NULL);
            st_attrs ga = A0();
            if (v == 1)
                ga.flags = ST_ATTR_TANH;
            if (v < 2) {
                y = op_of(g, ST_OP_GELU, &y, 1, &ga);
            } else {
                y = op_of(g, ST_OP_RELU, &y, 1, NULL);
                int r = in_of(g, fd[d], 2, sr);
                int yr[2] = {y, r};
                y = op_of(g, ST_OP_ADD, yr, 2, NULL);
            }
            CHECK(y >= 0, "build matmul epilogue graph");
            st_ir_mark_output(g, y);
            char nm[64];
            snprintf(nm, sizeof nm, "matmul+bias+%s(%s)", v == 0 ? "gelu" : v == 1 ? "gelu_tanh" : "relu+res",
                     st_dtype_name(fd[d]));
            add_prog(gr, g, true, nm);
            add_prog(gr, g, false, nm);
            st_ir_graph_free(g);
        }
    /* attention scores: batched q @ k^T, scaled, plus a broadcast mask
     * (the epilogue fused; NAME_epi renders it over a scratch product) */
    for (int d = 0; d < 3; d++) {
        st_graph *g = st_ir_graph_new();
        int64_t sq[4] = {2, 4, 8, 16}, ss[1] = {1}, sm[4] = {2, 1, 1, 8};
        int q = in_of(g, fd[d], 4, sq), kk = in_of(g, fd[d], 4, sq);
        int sc = in_of(g, fd[d], 1, ss), mask = in_of(g, fd[d], 4, sm);
        st_attrs p = A0();
        p.ndims = 4;
        p.dims[0] = 0;
        p.dims[1] = 1;
        p.dims[2] = 3;
        p.dims[3] = 2;
        int kt = op_of(g, ST_OP_PERMUTE, &kk, 1, &p);
        int qk[2] = {q, kt};
        int y = op_of(g, ST_OP_MATMUL, qk, 2, NULL);
        int ys[2] = {y, sc};
        y = op_of(g, ST_OP_MUL, ys, 2, NULL);
        int ym[2] = {y, mask};
        y = op_of(g, ST_OP_ADD, ym, 2, NULL);
        CHECK(y >= 0, "build attention graph");
        st_ir_mark_output(g, y);
        char nm[64];
        snprintf(nm, sizeof nm, "attention scores(%s)", st_dtype_name(fd[d]));
        add_prog(gr, g, true, nm);
        st_ir_graph_free(g);
    }
    /* transposed operands (views inside the graph) */
    for (int d = 0; d < 3; d++) {
        st_graph *g = st_ir_graph_new();
        int64_t sa[2] = {33, 20}, sb[2] = {17, 33};
        int x = in_of(g, fd[d], 2, sa), y = in_of(g, fd[d], 2, sb);
        st_attrs p = A0();
        p.ndims = 2;
        p.dims[0] = 1;
        p.dims[1] = 0;
        int xt = op_of(g, ST_OP_PERMUTE, &x, 1, &p);
        int yt = op_of(g, ST_OP_PERMUTE, &y, 1, &p);
        int ab[2] = {xt, yt};
        int r = op_of(g, ST_OP_MATMUL, ab, 2, NULL);
        st_ir_mark_output(g, r);
        add_prog(gr, g, true, "matmul transposed");
        st_ir_graph_free(g);
    }
}

static void index_ops(group *gr)
{
    st_dtype vals[3] = {ST_FLOAT32, ST_FLOAT16, ST_INT64};
    st_dtype idx[2] = {ST_INT64, ST_INT32};
    for (int v = 0; v < 3; v++)
        for (int x = 0; x < 2; x++) {
            static const int64_t s[2][4] = {{6, 9}, {4}};
            int nd[2] = {2, 1};
            st_dtype dts[2] = {vals[v], idx[x]};
            st_attrs a = A0();
            a.i[0] = 0;
            one_op(gr, "index_select", ST_OP_INDEX_SELECT, 2, dts, nd, s, &a);
            static const int64_t e[2][4] = {{10, 8}, {3, 5}};
            int ne[2] = {2, 2};
            a.i[0] = -1;
            one_op(gr, "embedding", ST_OP_EMBEDDING, 2, dts, ne, e, &a);
            a.i[0] = 2;
            one_op(gr, "embedding pad", ST_OP_EMBEDDING, 2, dts, ne, e, &a);
            static const int64_t gs[2][4] = {{5, 7}, {5, 4}};
            int ng[2] = {2, 2};
            a.i[0] = 1;
            one_op(gr, "gather", ST_OP_GATHER, 2, dts, ng, gs, &a);
            static const int64_t ss[3][4] = {{5, 7}, {5, 4}, {5, 4}};
            int ns[3] = {2, 2, 2};
            st_dtype sd[3] = {vals[v], idx[x], vals[v]};
            one_op(gr, "scatter_add", ST_OP_SCATTER_ADD, 3, sd, ns, ss, &a);
            one_op(gr, "scatter", ST_OP_SCATTER, 3, sd, ns, ss, &a);
        }
    /* scatter_add into every dtype (the emulated atomics) */
    for (int d = 0; d < NDT; d++) {
        static const int64_t ss[3][4] = {{5, 7}, {5, 4}, {5, 4}};
        int ns[3] = {2, 2, 2};
        st_dtype sd[3] = {all_dt[d], ST_INT64, all_dt[d]};
        st_attrs a = A0();
        a.i[0] = 0;
        one_op(gr, "scatter_add", ST_OP_SCATTER_ADD, 3, sd, ns, ss, &a);
        one_op(gr, "scatter", ST_OP_SCATTER, 3, sd, ns, ss, &a);
    }
}

static void composites(group *gr)
{
    static const int64_t s[3][4] = {{6, 50}, {50}, {50}};
    static const int64_t s3[3][4] = {{2, 6, 50}, {50}, {50}};
    int nd[3] = {2, 1, 1}, nd3[3] = {3, 1, 1};
    st_dtype dl[4] = {ST_FLOAT32, ST_FLOAT64, ST_FLOAT16, ST_BFLOAT16};
    for (int v = 0; v < 4; v++) {
        st_dtype d3[3] = {dl[v], dl[v], dl[v]};
        st_attrs a = A0();
        a.i[0] = 1;
        one_op(gr, "softmax", ST_OP_SOFTMAX, 1, d3, nd, s, &a);
        one_op(gr, "log_softmax", ST_OP_LOG_SOFTMAX, 1, d3, nd, s, &a);
        a.i[0] = 0;
        one_op(gr, "softmax dim0", ST_OP_SOFTMAX, 1, d3, nd, s, &a);
        a = A0();
        a.ndims = 1;
        a.f[0] = 1e-5;
        a.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
        one_op(gr, "layer_norm", ST_OP_LAYER_NORM, 3, d3, nd, s, &a);
        one_op(gr, "layer_norm 3d", ST_OP_LAYER_NORM, 3, d3, nd3, s3, &a);
        a.flags = 0;
        one_op(gr, "layer_norm plain", ST_OP_LAYER_NORM, 1, d3, nd, s, &a);
        a = A0();
        one_op(gr, "gelu", ST_OP_GELU, 1, d3, nd, s, &a);
        a.flags = ST_ATTR_TANH;
        one_op(gr, "gelu tanh", ST_OP_GELU, 1, d3, nd, s, &a);
        a = A0();
        a.f[0] = -0.5;
        a.f[1] = 0.7;
        a.flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX;
        one_op(gr, "clamp", ST_OP_CLAMP, 1, d3, nd, s, &a);
        a = A0();
        a.f[0] = 0.3;
        one_op(gr, "dropout", ST_OP_DROPOUT, 1, d3, nd, s, &a);
        static const int64_t ms[2][4] = {{6, 50}, {6, 50}};
        st_dtype md[2] = {dl[v], ST_BOOL};
        a.f[0] = -1e9;
        one_op(gr, "masked_fill", ST_OP_MASKED_FILL, 2, md, nd, ms, &a);
        static const int64_t ls[3][4] = {{6, 50}, {20, 50}, {20}};
        int ln[3] = {2, 2, 1};
        a = A0();
        a.flags = ST_ATTR_HAS_BIAS;
        one_op(gr, "linear", ST_OP_LINEAR, 3, d3, ln, ls, &a);
        static const int64_t cs[2][4] = {{6, 50}, {6}};
        int cn[2] = {2, 1};
        st_dtype cd[2] = {dl[v], ST_INT64};
        for (int red = 0; red < 3; red++) {
            a = A0();
            a.i[0] = -100;
            a.i[1] = red;
            one_op(gr, "cross_entropy", ST_OP_CROSS_ENTROPY, 2, cd, cn, cs, &a);
        }
    }
}

static void creation(group *gr)
{
    st_op_id cr[] = {ST_OP_FULL, ST_OP_ARANGE, ST_OP_RAND, ST_OP_RANDN, ST_OP_RANDINT};
    for (unsigned c = 0; c < 5; c++)
        for (int d = 0; d < NDT; d++) {
            st_attrs a = A0();
            a.ndims = cr[c] == ST_OP_ARANGE ? 1 : 2;
            a.dims[0] = 40;
            a.dims[1] = 3;
            a.dtype = all_dt[d];
            a.f[0] = cr[c] == ST_OP_RANDN ? 0.5 : 1.5;
            a.f[1] = 2.0;
            a.i[0] = 2;
            a.i[1] = 9;
            st_graph *g = st_ir_graph_new();
            int outs[ST_MAX_OUT];
            if (st_ir_add_stmt(g, cr[c], NULL, 0, &a, outs) >= 0) {
                st_ir_mark_output(g, outs[0]);
                char nm[64];
                snprintf(nm, sizeof nm, "%s(%s)", st_op(cr[c])->name, st_dtype_name(all_dt[d]));
                add_prog(gr, g, false, nm);
                add_prog(gr, g, true, nm);
            }
            st_err_clear();
            st_ir_graph_free(g);
        }
    /* movement ops feeding elementwise: permute + copy, expand, slice */
    st_graph *g = st_ir_graph_new();
    int64_t sx[3] = {4, 5, 6};
    int x = in_of(g, ST_FLOAT32, 3, sx);
    st_attrs p = A0();
    p.ndims = 3;
    p.dims[0] = 2;
    p.dims[1] = 0;
    p.dims[2] = 1;
    int xt = op_of(g, ST_OP_PERMUTE, &x, 1, &p);
    int y = op_of(g, ST_OP_EXP, &xt, 1, NULL);
    int c = op_of(g, ST_OP_COPY, &y, 1, NULL);
    st_ir_mark_output(g, c >= 0 ? c : y);
    st_err_clear();
    add_prog(gr, g, false, "permute exp copy");
    add_prog(gr, g, true, "permute exp copy");
    st_ir_graph_free(g);
    /* reshapes of a permuted view (unravel loads): into an add, into a
     * softmax (a row kernel), and as the result itself */
    for (int use = 0; use < 3; use++) {
        g = st_ir_graph_new();
        x = in_of(g, ST_FLOAT32, 3, sx);
        xt = op_of(g, ST_OP_PERMUTE, &x, 1, &p);
        st_attrs r = A0();
        r.ndims = 2;
        r.dims[0] = 12;
        r.dims[1] = 10;
        int xr = op_of(g, ST_OP_RESHAPE, &xt, 1, &r);
        int64_t sy[2] = {12, 10};
        int out = xr;
        if (use == 0) {
            int ab[2] = {xr, in_of(g, ST_FLOAT32, 2, sy)};
            out = op_of(g, ST_OP_ADD, ab, 2, NULL);
        } else if (use == 1) {
            st_attrs sm = A0();
            sm.i[0] = 1;
            out = op_of(g, ST_OP_SOFTMAX, &xr, 1, &sm);
        }
        st_ir_mark_output(g, out >= 0 ? out : xr);
        st_err_clear();
        static const char *nm[3] = {"permute reshape add", "permute reshape softmax",
                                    "permute reshape"};
        add_prog(gr, g, false, nm[use]);
        add_prog(gr, g, true, nm[use]);
        st_ir_graph_free(g);
    }
}

/* a chain of elementwise ops over broadcast inputs: one fused kernel */
static void fused_chains(group *gr)
{
    st_dtype dl[3] = {ST_FLOAT32, ST_FLOAT16, ST_BFLOAT16};
    for (int d = 0; d < 3; d++) {
        st_graph *g = st_ir_graph_new();
        int64_t sa[2] = {64, 128}, sb[1] = {128};
        int x = in_of(g, dl[d], 2, sa), b = in_of(g, dl[d], 1, sb);
        int xb[2] = {x, b};
        int y = op_of(g, ST_OP_MUL, xb, 2, NULL);
        y = op_of(g, ST_OP_TANH, &y, 1, NULL);
        int yx[2] = {y, x};
        y = op_of(g, ST_OP_SUB, yx, 2, NULL);
        st_attrs a = A0();
        a.i[0] = 1;
        int s = op_of(g, ST_OP_SOFTMAX, &y, 1, &a);
        st_ir_mark_output(g, s);
        st_ir_mark_output(g, y);
        add_prog(gr, g, true, "chain+softmax");
        st_ir_graph_free(g);
    }
    /* a traced dropout, x * where(rand(ones) >= p, ones * s, 0): fused,
     * the fill, the draw and both products are one kernel whose params
     * come from two statements' attrs (fusion/fuse.c) */
    for (int d = 0; d < 2; d++) {
        st_graph *g = st_ir_graph_new();
        int64_t sx[3] = {4, 33, 17};
        int x = in_of(g, dl[d], 3, sx);
        st_attrs fa = A0();
        fa.f[0] = 1.0;
        fa.dtype = dl[d];
        int ones = op_of(g, ST_OP_FULL, &x, 1, &fa);
        st_attrs ra = A0();
        ra.f[0] = 0.0;
        ra.f[1] = 1.0;
        ra.dtype = ST_FLOAT32;
        int r = op_of(g, ST_OP_RAND, &ones, 1, &ra);
        int rp[2] = {r, st_ir_add_const(g, ST_FLOAT32, 0.1, 0)};
        int keep = op_of(g, ST_OP_GE, rp, 2, NULL);
        int os[2] = {ones, st_ir_add_const(g, ST_FLOAT32, 1.0 / 0.9, 0)};
        int scaled = op_of(g, ST_OP_MUL, os, 2, NULL);
        int w3[3] = {keep, scaled, st_ir_add_const(g, ST_FLOAT32, 0.0, 0)};
        int mask = op_of(g, ST_OP_WHERE, w3, 3, NULL);
        int xm[2] = {x, mask};
        st_ir_mark_output(g, op_of(g, ST_OP_MUL, xm, 2, NULL));
        st_ir_mark_output(g, mask);
        int nrand = 0, nbool = 0, nk = fused_kernels(g, &nrand, &nbool);
        CHECK(nk == 1 && nrand == 1, "dropout(%s): %d kernels, %d RAND nodes",
              st_dtype_name(dl[d]), nk, nrand);
        add_prog(gr, g, true, "dropout");
        st_ir_graph_free(g);
    }
    /* dropout as traced (runtime/trace.c emit_dropout): the bool keep
     * mask is an output beside where(keep, x * s, 0), one kernel */
    for (int d = 0; d < 2; d++) {
        st_graph *g = st_ir_graph_new();
        int64_t sx[3] = {4, 33, 17};
        int x = in_of(g, dl[d], 3, sx);
        st_attrs ra = A0();
        ra.f[1] = 1.0;
        ra.dtype = ST_FLOAT32;
        int r = op_of(g, ST_OP_RAND, &x, 1, &ra);
        int rp[2] = {r, st_ir_add_const(g, ST_FLOAT64, 0.1, 0)};
        int keep = op_of(g, ST_OP_GE, rp, 2, NULL);
        int xs_in[2] = {x, st_ir_add_const(g, ST_FLOAT64, 1.0 / 0.9, 0)};
        int xs = op_of(g, ST_OP_MUL, xs_in, 2, NULL);
        int w3[3] = {keep, xs, st_ir_add_const(g, ST_FLOAT64, 0.0, 0)};
        st_ir_mark_output(g, op_of(g, ST_OP_WHERE, w3, 3, NULL));
        st_ir_mark_output(g, keep);
        int nrand = 0, nbool = 0, nk = fused_kernels(g, &nrand, &nbool);
        CHECK(nk == 1 && nbool == 1, "traced dropout(%s): %d kernels, %d bool outputs",
              st_dtype_name(dl[d]), nk, nbool);
        add_prog(gr, g, true, "traced dropout");
        st_ir_graph_free(g);
    }
}

/* ---- the column variant NAME_col of reductions (st_nvrtc_col_plan) ---- */

static int col_kernels; /* REDUCE kernels rendered with NAME_col */

/* Lowers g fused and checks every REDUCE kernel: NAME_col is in its
 * rendered source exactly when st_nvrtc_col_plan says so; expect: whether
 * some kernel of the program must get it (and none when false). */
static void col_prog(group *gr, st_graph *g, const char *label, bool expect)
{
    st_fuse_options o = *st_fuse_config();
    o.fusion = o.fuse_reductions = o.fuse_matmul_epilogue = 1;
    o.max_fused_ops = 0;
    st_kprog *p = st_fuse_lower(g, &o);
    CHECK(p != NULL, "lower %s", label);
    if (!p)
        return;
    int got = 0, points = 0;
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind != ST_K_REDUCE)
            continue;
        st_nvrtc_col c;
        st_nvrtc_col_plan(k, &c);
        char *src = st_nvrtc_render(k, 1), name[128];
        st_nvrtc_kernel_name(k, 0, name, sizeof name);
        strcat(name, "_col(");
        bool has = src && strstr(src, name);
        CHECK(src && has == c.ok, "%s: %s rendered %d, planned %d", label, name, has, c.ok);
        free(src);
        got += c.ok;
        for (int s = 0; s < k->nstores; s++)
            points += c.point[s];
    }
    CHECK(expect ? got > 0 : got == 0, "%s: %d kernels with NAME_col (expected %s)", label,
          got, expect ? "some" : "none");
    if (strstr(label, "per-point"))
        CHECK(points > 0, "%s: a store made in the accumulation pass", label);
    col_kernels += got;
    st_kprog_free(p);
    add_prog(gr, g, true, label);
}

static int red_of(st_graph *g, st_op_id op, int x, int nd, const int *dims)
{
    st_attrs a = A0();
    a.ndims = nd;
    for (int i = 0; i < nd; i++)
        a.dims[i] = dims[i];
    return op_of(g, op, &x, 1, &a);
}

static void colreduce(group *gr)
{
    st_dtype dl[5] = {ST_FLOAT32, ST_FLOAT16, ST_BFLOAT16, ST_FLOAT64, ST_INT32};
    int d0[1] = {0}, d1[1] = {1}, d01[2] = {0, 1};
    for (int d = 0; d < 5; d++) {
        char nm[96];
        /* bias gradient: sum over dim 0 of [64, 96]; and over the token
         * dims of [2, 6, 50]; mean, amax, amin over dim 0 */
        st_op_id ops[4] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN};
        for (int o = 0; o < 4; o++) {
            if (ops[o] == ST_OP_MEAN && dl[d] == ST_INT32)
                continue;
            st_graph *g = st_ir_graph_new();
            int64_t sh[2] = {64, 96};
            int x = in_of(g, dl[d], 2, sh);
            st_ir_mark_output(g, red_of(g, ops[o], x, 1, d0));
            snprintf(nm, sizeof nm, "col %s dim0 2d(%s)", st_op(ops[o])->name,
                     st_dtype_name(dl[d]));
            col_prog(gr, g, nm, true);
            st_ir_graph_free(g);
        }
        st_graph *g = st_ir_graph_new();
        int64_t s3[3] = {2, 6, 50};
        int x = in_of(g, dl[d], 3, s3);
        st_ir_mark_output(g, red_of(g, ST_OP_SUM, x, 2, d01));
        snprintf(nm, sizeof nm, "col sum dims01 3d(%s)", st_dtype_name(dl[d]));
        col_prog(gr, g, nm, true);
        st_ir_graph_free(g);
        /* the row path's case: a sum over the contiguous dim, no NAME_col */
        g = st_ir_graph_new();
        int64_t sh[2] = {64, 96};
        x = in_of(g, dl[d], 2, sh);
        st_ir_mark_output(g, red_of(g, ST_OP_SUM, x, 1, d1));
        snprintf(nm, sizeof nm, "col sum dim1 (row path)(%s)", st_dtype_name(dl[d]));
        col_prog(gr, g, nm, false);
        st_ir_graph_free(g);
        if (dl[d] == ST_INT32)
            continue;
        /* LayerNorm weight and bias gradients: sum over (0, 1) of dy * xhat
         * and of dy, [2, 6, 50] */
        g = st_ir_graph_new();
        int dy = in_of(g, dl[d], 3, s3), xh = in_of(g, dl[d], 3, s3);
        int pr[2] = {dy, xh};
        int m = op_of(g, ST_OP_MUL, pr, 2, NULL);
        st_ir_mark_output(g, red_of(g, ST_OP_SUM, m, 2, d01));
        st_ir_mark_output(g, red_of(g, ST_OP_SUM, dy, 2, d01));
        snprintf(nm, sizeof nm, "col layer_norm weight/bias grads(%s)", st_dtype_name(dl[d]));
        col_prog(gr, g, nm, true);
        st_ir_graph_free(g);
        /* a GELU-backward-like prologue, its value stored per point (the
         * gradient the next matmul reads) and summed over dim 0 (the bias
         * gradient): g = dy * (erf(x) + x * exp(-(x * x))) */
        for (int v = 0; v < 2; v++) {
            g = st_ir_graph_new();
            int64_t sg[3] = {3, 33, 40};
            int nd = v ? 3 : 2;
            int64_t *shp = v ? sg : sh;
            dy = in_of(g, dl[d], nd, shp);
            x = in_of(g, dl[d], nd, shp);
            int e = op_of(g, ST_OP_ERF, &x, 1, NULL);
            int xx[2] = {x, x};
            int q = op_of(g, ST_OP_MUL, xx, 2, NULL);
            q = op_of(g, ST_OP_NEG, &q, 1, NULL);
            q = op_of(g, ST_OP_EXP, &q, 1, NULL);
            int xq[2] = {x, q};
            q = op_of(g, ST_OP_MUL, xq, 2, NULL);
            int eq[2] = {e, q};
            q = op_of(g, ST_OP_ADD, eq, 2, NULL);
            int dq[2] = {dy, q};
            int gr_ = op_of(g, ST_OP_MUL, dq, 2, NULL);
            st_ir_mark_output(g, gr_);
            st_ir_mark_output(g, red_of(g, ST_OP_SUM, gr_, v ? 2 : 1, v ? d01 : d0));
            snprintf(nm, sizeof nm, "col gelu-backward per-point store + sum %dd(%s)", nd,
                     st_dtype_name(dl[d]));
            col_prog(gr, g, nm, true);
            st_ir_graph_free(g);
        }
        /* no NAME_col: softmax over dim 0 (several reductions), argmax */
        g = st_ir_graph_new();
        x = in_of(g, dl[d], 2, sh);
        st_attrs a = A0();
        a.i[0] = 0;
        st_ir_mark_output(g, op_of(g, ST_OP_SOFTMAX, &x, 1, &a));
        snprintf(nm, sizeof nm, "col softmax dim0 (none)(%s)", st_dtype_name(dl[d]));
        col_prog(gr, g, nm, false);
        st_ir_graph_free(g);
        g = st_ir_graph_new();
        x = in_of(g, dl[d], 2, sh);
        st_ir_mark_output(g, red_of(g, ST_OP_ARGMAX, x, 1, d0));
        snprintf(nm, sizeof nm, "col argmax dim0 (none)(%s)", st_dtype_name(dl[d]));
        col_prog(gr, g, nm, false);
        st_ir_graph_free(g);
    }
}

/* ---- hand-built kernels: several reductions in one row kernel ---- */

static st_knode mk(st_knode_kind kind, st_dtype dt, int phase)
{
    st_knode n;
    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.dtype = dt;
    n.a = n.b = n.c = -1;
    n.idx_dim = -1;
    n.phase = phase;
    return n;
}

static void hand_kernels(group *gr)
{
    /* four reductions: max, sum of exp, argmin, mean of squares; a per-row
     * epilogue storing a mix of them (int64 output too) */
    static st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 2);
    snprintf(k.name, sizeof k.name, "hand_multi");
    k.nred = 1;
    int dm_in[ST_MAX_DIMS] = {0, 1}, dm_out[ST_MAX_DIMS] = {0, -1};
    st_kernel_add_buf(&k, 0, ST_FLOAT16, false, dm_in);
    st_kernel_add_buf(&k, 1, ST_FLOAT32, true, dm_out);
    st_kernel_add_buf(&k, 2, ST_INT64, true, dm_out);
    st_knode n;
    int x[4];
    for (int p = 0; p < 4; p++) {
        n = mk(ST_KN_LOAD, ST_FLOAT32, p);
        n.buf = 0;
        x[p] = st_kernel_node(&k, &n);
    }
    k.reduce[0].op = ST_RED_MAX;
    k.reduce[0].src = x[0];
    n = mk(ST_KN_REDUCED, ST_FLOAT32, 1);
    n.i = 0;
    int m1 = st_kernel_node(&k, &n);
    n = mk(ST_KN_BINARY, ST_FLOAT32, 1);
    n.op = ST_OP_SUB;
    n.a = x[1];
    n.b = m1;
    int d1 = st_kernel_node(&k, &n);
    n = mk(ST_KN_UNARY, ST_FLOAT32, 1);
    n.op = ST_OP_EXP;
    n.a = d1;
    int e1 = st_kernel_node(&k, &n);
    k.reduce[1].op = ST_RED_SUM;
    k.reduce[1].src = e1;
    k.reduce[2].op = ST_RED_ARGMIN;
    k.reduce[2].src = x[2];
    n = mk(ST_KN_BINARY, ST_FLOAT32, 3);
    n.op = ST_OP_MUL;
    n.a = x[3];
    n.b = x[3];
    k.reduce[3].op = ST_RED_MEAN;
    k.reduce[3].src = st_kernel_node(&k, &n);
    k.nreduce = 4;
    int r[4];
    for (int i = 0; i < 4; i++) {
        n = mk(ST_KN_REDUCED, i == 2 ? ST_INT64 : ST_FLOAT32, 4);
        n.i = i;
        r[i] = st_kernel_node(&k, &n);
    }
    n = mk(ST_KN_UNARY, ST_FLOAT32, 4);
    n.op = ST_OP_LOG;
    n.a = r[1];
    int l = st_kernel_node(&k, &n);
    n = mk(ST_KN_BINARY, ST_FLOAT32, 4);
    n.op = ST_OP_ADD;
    n.a = l;
    n.b = r[3];
    int s = st_kernel_node(&k, &n);
    k.stores[0].buf = 1;
    k.stores[0].node = s;
    k.stores[1].buf = 2;
    k.stores[1].node = r[2];
    k.nstores = 2;
    k.final_per_point = false;
    char *src = st_nvrtc_render(&k, 1);
    CHECK(src != NULL, "render hand_multi");
    free(src);
    note_features(gr, &k);
    /* kept outside the group's owned programs: compiled alone */
    st_nvrtc_output out;
    src = st_nvrtc_render(&k, 1);
    if (src) {
        CHECK(st_nvrtc_compile(src, "hand_multi", "sm_80", false, &out) == ST_OK,
              "compile hand_multi");
        st_nvrtc_output_free(&out);
        CHECK(st_nvrtc_compile(src, "hand_multi", "sm_90", true, &out) == ST_OK &&
                  out.size > 0 && strstr(out.image, ".entry") != NULL,
              "compile hand_multi to PTX");
        st_nvrtc_output_free(&out);
        free(src);
    }
    st_kernel_clear(&k);
}

/* ---- a thread's points a trip, loads first (render_kernels.c walk) ---- */

static int count_of(const char *s, const char *pat)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, pat)) != NULL; p += strlen(pat))
        n++;
    return n;
}

/* out[i] = w[idx[i]] * x[i] over [N]: idx and x are point loads (loaded
 * ahead), w is gathered through idx (stays after the index) */
static void gather_kernel(st_kernel *k)
{
    st_kernel_init(k, ST_K_ELEMENTWISE, 1);
    snprintf(k->name, sizeof k->name, "gather_mul");
    int d0[ST_MAX_DIMS] = {0}, dw[ST_MAX_DIMS] = {-1};
    st_kernel_add_buf(k, 0, ST_INT64, false, d0);
    st_kernel_add_buf(k, 1, ST_FLOAT32, false, dw);
    st_kernel_add_buf(k, 2, ST_FLOAT32, false, d0);
    st_kernel_add_buf(k, 3, ST_FLOAT32, true, d0);
    k->bufs[0].unravel = 0;
    st_knode n = mk(ST_KN_LOAD, ST_INT64, 0);
    n.buf = 0;
    int ix = st_kernel_node(k, &n);
    n = mk(ST_KN_LOAD, ST_FLOAT32, 0);
    n.buf = 1;
    n.a = ix;
    n.idx_dim = 0;
    int w = st_kernel_node(k, &n);
    n = mk(ST_KN_LOAD, ST_FLOAT32, 0);
    n.buf = 2;
    int x = st_kernel_node(k, &n);
    n = mk(ST_KN_BINARY, ST_FLOAT32, 0);
    n.op = ST_OP_MUL;
    n.a = w;
    n.b = x;
    k->stores[0].buf = 3;
    k->stores[0].node = st_kernel_node(k, &n);
    k->nstores = 1;
}

static void walk_checks(void)
{
    /* the LayerNorm-shaped row kernel of hand_multi's kind: each of the
     * four reductions walks the row loading buffer 0 ahead */
    static st_kernel k;
    st_kernel_init(&k, ST_K_REDUCE, 2);
    snprintf(k.name, sizeof k.name, "walk_rows");
    k.nred = 1;
    int dm_in[ST_MAX_DIMS] = {0, 1}, dm_out[ST_MAX_DIMS] = {0, 1};
    st_kernel_add_buf(&k, 0, ST_FLOAT32, false, dm_in);
    st_kernel_add_buf(&k, 1, ST_FLOAT32, false, dm_in);
    st_kernel_add_buf(&k, 2, ST_FLOAT32, true, dm_out);
    st_knode n = mk(ST_KN_LOAD, ST_FLOAT32, 0);
    n.buf = 0;
    int x = st_kernel_node(&k, &n);
    k.reduce[0].op = ST_RED_MEAN;
    k.reduce[0].src = x;
    k.nreduce = 1;
    n = mk(ST_KN_REDUCED, ST_FLOAT32, 1);
    n.i = 0;
    int m = st_kernel_node(&k, &n);
    n = mk(ST_KN_LOAD, ST_FLOAT32, 1);
    n.buf = 1;
    int g = st_kernel_node(&k, &n);
    n = mk(ST_KN_BINARY, ST_FLOAT32, 1);
    n.op = ST_OP_SUB;
    n.a = x;
    n.b = m;
    int d = st_kernel_node(&k, &n);
    n = mk(ST_KN_BINARY, ST_FLOAT32, 1);
    n.op = ST_OP_MUL;
    n.a = d;
    n.b = g;
    k.stores[0].buf = 2;
    k.stores[0].node = st_kernel_node(&k, &n);
    k.nstores = 1;
    k.final_per_point = true;
    unsetenv("SYMTRACE_CUDA_UNROLL");
    st_nvrtc_unroll_reload();
    char *src = st_nvrtc_render(&k, 1);
    CHECK(src != NULL, "render walk_rows");
    if (src) {
        /* two walks (the mean, the per-point stores), 4 points a trip */
        CHECK(count_of(src, "pos0 += 4 * ((st_i64)blockDim.x)") == 2, "walk_rows: two 4-point walks");
        /* x loaded ahead in both walks, the weight only in the store walk */
        CHECK(count_of(src, "L0[j] = ") == 2 && count_of(src, "L1[j] = ") == 1,
              "walk_rows: loads ahead (%d, %d)", count_of(src, "L0[j] = "),
              count_of(src, "L1[j] = "));
        /* the loads of a trip come before the first statement that uses one */
        const char *pre = strstr(src, "L0[j] = "), *use = strstr(src, "= L0[j];");
        CHECK(pre && use && pre < use, "walk_rows: preload before use");
        /* a row block's bound is the launch's cap, 256: room for the
         * trip's registers */
        CHECK(strstr(src, "__launch_bounds__(256)") != NULL && st_nvrtc_row_threads() == 256,
              "walk_rows: __launch_bounds__(256)");
        st_nvrtc_output out;
        CHECK(st_nvrtc_compile(src, "walk_rows", "sm_90", false, &out) == ST_OK,
              "compile walk_rows: %s", st_err_msg());
        st_nvrtc_output_free(&out);
        free(src);
    }
    setenv("SYMTRACE_CUDA_UNROLL", "1", 1);
    st_nvrtc_unroll_reload();
    src = st_nvrtc_render(&k, 1);
    CHECK(src && !strstr(src, "pos0") && !strstr(src, "L0[j]"),
          "SYMTRACE_CUDA_UNROLL=1: a point a trip");
    CHECK(src && strstr(src, "__launch_bounds__(1024)") && st_nvrtc_row_threads() == 1024,
          "SYMTRACE_CUDA_UNROLL=1: the earlier bound, 1024");
    free(src);
    unsetenv("SYMTRACE_CUDA_UNROLL");
    setenv("SYMTRACE_CUDA_ROW_BOUND", "1024", 1);
    st_nvrtc_unroll_reload();
    src = st_nvrtc_render(&k, 1);
    CHECK(src && strstr(src, "__launch_bounds__(1024)") && strstr(src, "L0[j]"),
          "SYMTRACE_CUDA_ROW_BOUND=1024: 4-point walks under the earlier bound");
    unsetenv("SYMTRACE_CUDA_ROW_BOUND");
    free(src);
    unsetenv("SYMTRACE_CUDA_UNROLL");
    st_nvrtc_unroll_reload();
    st_kernel_clear(&k);

    gather_kernel(&k);
    src = st_nvrtc_render(&k, 1);
    CHECK(src != NULL, "render gather_mul");
    if (src) {
        /* the index and x ahead; w through the index, after it */
        CHECK(count_of(src, "L0[j] = ") == 1 && count_of(src, "L2[j] = ") == 1 &&
                  count_of(src, "L1[j]") == 0 && strstr(src, "idx_stride]") != NULL,
              "gather_mul: point loads ahead, the gather in place");
        CHECK(strstr(src, "lin0 += 4 * (step)") != NULL, "gather_mul: a 4-point walk");
        st_nvrtc_output out;
        CHECK(st_nvrtc_compile(src, "gather_mul", "sm_90", false, &out) == ST_OK,
              "compile gather_mul: %s", st_err_msg());
        st_nvrtc_output_free(&out);
        free(src);
    }
    /* the scalar path's launch gives each thread 4 points (1 with
     * SYMTRACE_CUDA_UNROLL=1) */
    static float mem[4][64];
    st_kargs ka;
    memset(&ka, 0, sizeof ka);
    ka.shape[0] = 1 << 21;
    for (int i = 0; i < 4; i++) {
        ka.bufs[i].data = (char *)mem[i];
        ka.bufs[i].strides[0] = 1;
    }
    st_nvrtc_launch L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 256 && L.grid[0] == (1 << 21) / 4 / 256, "scalar walk launch: grid %u",
          L.grid[0]);
    setenv("SYMTRACE_CUDA_UNROLL", "1", 1);
    st_nvrtc_unroll_reload();
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.grid[0] == 132 * 32, "unroll 1: grid capped at %u", L.grid[0]);
    unsetenv("SYMTRACE_CUDA_UNROLL");
    st_nvrtc_unroll_reload();
    st_kernel_clear(&k);
}

/* ---- host-side launch decisions ---- */

/* sum over dim 0 of x [M, N] as the fusion lowers it: iteration [N, M]
 * (dimmap {1, 0}), out[n] = sum; op the reduction; with gstore, also a
 * per-point store of 2 * x into buffer 2 (final_per_point) */
static void col_kernel(st_kernel *k, st_reduce_op op, bool permuted, bool gstore)
{
    st_kernel_init(k, ST_K_REDUCE, 2);
    snprintf(k->name, sizeof k->name, "colsum");
    k->nred = 1;
    int dx[ST_MAX_DIMS] = {1, 0}, dp[ST_MAX_DIMS] = {0, 1}, dout[ST_MAX_DIMS] = {0, -1};
    st_kernel_add_buf(k, 0, ST_FLOAT32, false, permuted ? dx : dp);
    st_kernel_add_buf(k, 1, ST_FLOAT32, true, dout);
    st_knode n = mk(ST_KN_LOAD, ST_FLOAT32, 0);
    n.buf = 0;
    int x = st_kernel_node(k, &n);
    k->nreduce = 1;
    k->reduce[0].op = op;
    k->reduce[0].src = x;
    n = mk(ST_KN_REDUCED, op == ST_RED_ARGMAX ? ST_INT64 : ST_FLOAT32, 1);
    n.i = 0;
    int r = st_kernel_node(k, &n);
    k->stores[0].buf = 1;
    k->stores[0].node = r;
    k->nstores = 1;
    if (gstore) {
        st_kernel_add_buf(k, 2, ST_FLOAT32, true, permuted ? dx : dp);
        n = mk(ST_KN_LOAD, ST_FLOAT32, 1);
        n.buf = 0;
        int x1 = st_kernel_node(k, &n);
        n = mk(ST_KN_BINARY, ST_FLOAT32, 1);
        n.op = ST_OP_ADD;
        n.a = n.b = x1;
        k->stores[1].buf = 2;
        k->stores[1].node = st_kernel_node(k, &n);
        k->nstores = 2;
        k->final_per_point = true;
    }
}

/* the column variant's plan and launch decision (st_nvrtc_col_config) */
static void col_launch_checks(void)
{
    st_kernel k;
    st_nvrtc_col c;
    st_kargs ka;
    col_kernel(&k, ST_RED_SUM, true, false);
    st_nvrtc_col_plan(&k, &c);
    CHECK(c.ok && c.touch[0] && !c.touch[1] && !c.point[0], "col plan of a column sum");
    memset(&ka, 0, sizeof ka);
    /* x [4096, 3072] contiguous: iteration [3072, 4096] */
    ka.shape[0] = 3072;
    ka.shape[1] = 4096;
    ka.bufs[0].strides[0] = 1;
    ka.bufs[0].strides[1] = 3072;
    ka.bufs[1].strides[0] = 1;
    st_nvrtc_launch L = st_nvrtc_col_config(&k, &ka, 132);
    /* 96 tiles of 32 kept points: the rows sliced over 3 blocks (about two
     * blocks per SM), partials through the scratch */
    CHECK(L.col && L.block[0] == 32 && L.block[1] == 32 && L.block[2] == 1 && L.grid[0] == 96 &&
          L.grid[1] == 3 && L.grid[2] == 1 && !L.empty && L.col_scratch == 512 + 3 * 3072 * 8,
          "col [4096, 3072]: %d %u x %u grid %u x %u scratch %lld", L.col, L.block[0],
          L.block[1], L.grid[0], L.grid[1], (long long)L.col_scratch);
    /* [1024, 768]: 24 tiles; slices of 256 rows at least: 4 */
    ka.shape[0] = 768;
    ka.shape[1] = 1024;
    ka.bufs[0].strides[1] = 768;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(L.col && L.grid[0] == 24 && L.grid[1] == 4 && L.col_scratch == 256 + 4 * 768 * 8,
          "col [1024, 768]: grid %u x %u scratch %lld", L.grid[0], L.grid[1],
          (long long)L.col_scratch);
    /* [4096, 64]: 2 tiles, 16 slices */
    ka.shape[0] = 64;
    ka.shape[1] = 4096;
    ka.bufs[0].strides[1] = 64;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(L.col && L.grid[0] == 2 && L.grid[1] == 16, "col [4096, 64]: grid %u x %u",
          L.grid[0], L.grid[1]);
    ka.shape[0] = 3072;
    ka.shape[1] = 4096;
    ka.bufs[0].strides[1] = 3072;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(!L.col && L.block[0] == 256, "the row path's config stays (%u)", L.block[0]);
    /* a grid-stride loop over tiles past 32 blocks per SM */
    ka.shape[0] = 200000;
    ka.bufs[0].strides[1] = 200000;
    L = st_nvrtc_col_config(&k, &ka, 4);
    CHECK(L.col && L.grid[0] == 128 && L.grid[1] == 1 && L.col_scratch == 0,
          "col grid capped: %u x %u", L.grid[0], L.grid[1]);
    /* the input transposed in memory: its rows are contiguous, row path */
    ka.shape[0] = 3072;
    ka.bufs[0].strides[0] = 4096;
    ka.bufs[0].strides[1] = 1;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(!L.col, "contiguous rows: no col");
    /* strided along the kept dim but closer than along the row: col */
    ka.bufs[0].strides[0] = 2;
    ka.bufs[0].strides[1] = 6144;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(L.col, "kept dim stride 2 < row stride: col");
    ka.bufs[0].strides[0] = 8192;
    ka.bufs[0].strides[1] = 2;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(!L.col, "kept dim stride 8192 > row stride 2: no col");
    /* [33, 7]: 7 kept points, 33 rows: 8 row groups of about 4 */
    ka.shape[0] = 7;
    ka.shape[1] = 33;
    ka.bufs[0].strides[0] = 1;
    ka.bufs[0].strides[1] = 7;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(L.col && L.block[1] == 8 && L.grid[0] == 1 && L.grid[1] == 1 && L.col_scratch == 0,
          "col [33, 7]: %d %u %u %u", L.col, L.block[1], L.grid[0], L.grid[1]);
    /* [1, 5]: one row point per kept point */
    ka.shape[0] = 5;
    ka.shape[1] = 1;
    ka.bufs[0].strides[1] = 5;
    L = st_nvrtc_col_config(&k, &ka, 132);
    CHECK(L.col && L.block[1] == 1, "col [1, 5]: %d %u", L.col, L.block[1]);
    /* [5000, 1] and [33, 3]: too few kept points */
    ka.shape[0] = 1;
    ka.shape[1] = 5000;
    ka.bufs[0].strides[0] = 1;
    ka.bufs[0].strides[1] = 1;
    CHECK(!st_nvrtc_col_config(&k, &ka, 132).col, "col [5000, 1]: row path");
    ka.shape[0] = 3;
    ka.shape[1] = 33;
    ka.bufs[0].strides[1] = 3;
    CHECK(!st_nvrtc_col_config(&k, &ka, 132).col, "col [33, 3]: row path");
    /* empty: no col (the row path's config says empty or runs the
     * epilogue over zero-length rows) */
    ka.shape[0] = 64;
    ka.shape[1] = 0;
    CHECK(!st_nvrtc_col_config(&k, &ka, 132).col, "col with empty rows: row path");
    ka.shape[0] = 0;
    ka.shape[1] = 64;
    CHECK(!st_nvrtc_col_config(&k, &ka, 132).col, "col with no kept points: row path");
    st_kernel_clear(&k);

    /* the reductions that qualify */
    st_reduce_op ops[5] = {ST_RED_MEAN, ST_RED_MAX, ST_RED_MIN, ST_RED_ARGMAX, ST_RED_PROD};
    for (int o = 0; o < 5; o++) {
        col_kernel(&k, ops[o], true, false);
        st_nvrtc_col_plan(&k, &c);
        CHECK(c.ok == (o < 3), "col plan of reduction op %d: %d", (int)ops[o], c.ok);
        st_kernel_clear(&k);
    }
    /* not permuted: the row path reads rows contiguously, no NAME_col */
    col_kernel(&k, ST_RED_SUM, false, false);
    st_nvrtc_col_plan(&k, &c);
    CHECK(!c.ok, "no col plan for a reduction over the buffer's trailing dim");
    ka.shape[0] = 3072;
    ka.shape[1] = 4096;
    ka.bufs[0].strides[0] = 1;
    ka.bufs[0].strides[1] = 3072;
    CHECK(!st_nvrtc_col_config(&k, &ka, 132).col, "no col config without the plan");
    st_kernel_clear(&k);
    /* a per-point store (the GELU backward's gradient) made in the
     * accumulation pass: its buffer counts for the decision */
    col_kernel(&k, ST_RED_SUM, true, true);
    st_nvrtc_col_plan(&k, &c);
    CHECK(c.ok && c.point[1] && !c.point[0] && c.touch[2] && c.touch[0] && !c.touch[1],
          "col plan with a per-point store");
    ka.bufs[2].strides[0] = 1;
    ka.bufs[2].strides[1] = 3072;
    CHECK(st_nvrtc_col_config(&k, &ka, 132).col, "col with a per-point store");
    ka.bufs[2].strides[0] = 4096; /* the stored tensor transposed */
    ka.bufs[2].strides[1] = 1;
    CHECK(!st_nvrtc_col_config(&k, &ka, 132).col, "per-point store with contiguous rows");
    /* a per-point store depending on the sum (softmax-like): no col */
    k.stores[1].node = 1; /* the REDUCED node */
    st_nvrtc_col_plan(&k, &c);
    CHECK(!c.ok, "no col plan when a per-point store needs the sum");
    st_kernel_clear(&k);
}


static void launch_checks(void)
{
    st_kernel k;
    st_kernel_init(&k, ST_K_ELEMENTWISE, 2);
    snprintf(k.name, sizeof k.name, "ew");
    int dm[ST_MAX_DIMS] = {0, 1}, dmb[ST_MAX_DIMS] = {-1, 1};
    st_kernel_add_buf(&k, 0, ST_FLOAT32, false, dm);
    st_kernel_add_buf(&k, 1, ST_FLOAT32, false, dmb);
    st_kernel_add_buf(&k, 2, ST_FLOAT16, true, dm);
    st_knode n = mk(ST_KN_LOAD, ST_FLOAT32, 0);
    n.buf = 0;
    int a = st_kernel_node(&k, &n);
    n.buf = 1;
    int b = st_kernel_node(&k, &n);
    n = mk(ST_KN_BINARY, ST_FLOAT32, 0);
    n.op = ST_OP_ADD;
    n.a = a;
    n.b = b;
    int c = st_kernel_node(&k, &n);
    k.stores[0].buf = 2;
    k.stores[0].node = c;
    k.nstores = 1;
    CHECK(st_nvrtc_vec_width(&k) == 8, "vec width of f32/f16 kernel: %d", st_nvrtc_vec_width(&k));
    static _Alignas(16) char mem[3][4096];
    st_kargs ka;
    memset(&ka, 0, sizeof ka);
    ka.shape[0] = 8;
    ka.shape[1] = 32;
    for (int i = 0; i < 3; i++)
        ka.bufs[i].data = mem[i];
    ka.bufs[0].strides[0] = 32;
    ka.bufs[0].strides[1] = 1;
    ka.bufs[1].strides[0] = 0;   /* a row broadcast: not contiguous */
    ka.bufs[1].strides[1] = 1;
    ka.bufs[2].strides[0] = 32;
    ka.bufs[2].strides[1] = 1;
    CHECK(st_nvrtc_ew_flags(&k, &ka) == 0, "row broadcast: no vector path");
    ka.bufs[1].strides[1] = 0;   /* a scalar */
    unsigned f = st_nvrtc_ew_flags(&k, &ka);
    CHECK(f == (ST_NVRTC_F_VEC | (ST_NVRTC_F_BCAST0 << 1)), "scalar broadcast flags %u", f);
    ka.bufs[0].data = mem[0] + 4; /* misaligned */
    CHECK(st_nvrtc_ew_flags(&k, &ka) == 0, "misaligned: no vector path");
    ka.bufs[0].data = mem[0];
    ka.bufs[0].strides[0] = 64;   /* padded rows */
    CHECK(st_nvrtc_ew_flags(&k, &ka) == 0, "padded rows: no vector path");
    ka.bufs[0].strides[0] = 32;
    st_nvrtc_launch L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(!L.empty && L.block[0] == 256 && L.grid[0] == 1 && (L.flags & ST_NVRTC_F_VEC),
          "elementwise launch %u x %u flags %u", L.grid[0], L.block[0], L.flags);
    ka.shape[0] = 0;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.empty, "empty elementwise launch");
    st_kernel_clear(&k);

    /* reductions: warp rows for short rows, a block per row for long ones */
    st_kernel_init(&k, ST_K_REDUCE, 2);
    k.nred = 1;
    memset(&ka, 0, sizeof ka);
    ka.shape[0] = 1000;
    ka.shape[1] = 100;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 32 && L.block[1] == 8 && L.grid[0] == 125, "short rows %u %u %u",
          L.block[0], L.block[1], L.grid[0]);
    ka.shape[1] = 50000;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 256 && L.block[1] == 1 && L.grid[0] == 1000, "long rows: the cap, %u %u",
          L.block[0], L.grid[0]);
    /* a LayerNorm row of 768: 192 threads, the row one trip of 4 points */
    ka.shape[1] = 768;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 192 && L.block[1] == 1, "row of 768: %u threads", L.block[0]);
    ka.shape[1] = 300;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 96, "row of 300: %u threads", L.block[0]);
    setenv("SYMTRACE_CUDA_UNROLL", "1", 1);
    st_nvrtc_unroll_reload();
    ka.shape[1] = 768;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 128, "unroll 1, row of 768: the earlier 128 threads (%u)", L.block[0]);
    ka.shape[1] = 50000;
    L = st_nvrtc_launch_config(&k, &ka, 132, 90);
    CHECK(L.block[0] == 1024, "unroll 1, long rows: the earlier 1024 threads (%u)", L.block[0]);
    unsetenv("SYMTRACE_CUDA_UNROLL");
    st_nvrtc_unroll_reload();
    CHECK(!L.col, "launch_config never picks NAME_col");
    st_kernel_clear(&k);
    col_launch_checks();
}

/* ---- the compile-error path ---- */

static void error_path(void)
{
    char dir[] = "/tmp/st_nvrtc_test_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    setenv("SYMTRACE_DUMP_DIR", dir, 1);
    st_nvrtc_output out;
    st_status s = st_nvrtc_compile("extern \"C\" __global__ void f() { this is not C; }",
                                   "broken", "sm_80", false, &out);
    const char *msg = st_err_msg();
    CHECK(s != ST_OK && strstr(msg, dir) != NULL && strstr(msg, ".cu") != NULL,
          "a compile error names the dumped source");
    if (s != ST_OK) {
        const char *p = strstr(msg, dir);
        char path[512];
        size_t n = 0;
        while (p[n] && p[n] != ';' && p[n] != ' ' && n < sizeof path - 1)
            n++;
        memcpy(path, p, n);
        path[n] = 0;
        CHECK(access(path, R_OK) == 0, "dumped source %s exists", path);
        unlink(path);
    }
    st_nvrtc_output_free(&out);
    rmdir(dir);
    unsetenv("SYMTRACE_DUMP_DIR");
    st_err_clear();
    CHECK(st_nvrtc_compile("", "x", "gfx90", false, &out) == ST_ERR_VALUE, "bad arch refused");
    st_err_clear();
}

int main(void)
{
    /* meson passes the pip wheel's lib dir it found at configure time */
    st_nvrtc_set_search_path(getenv("SYMTRACE_NVRTC_WHEEL_DIR"));
    if (!st_nvrtc_available()) {
        printf("SKIP: %s\n", st_err_msg());
        return 77;
    }
    printf("NVRTC %s from %s\n", st_nvrtc_version(), st_nvrtc_library());
    /* a compile check: the fastest optimization level NVRTC offers */
    setenv("SYMTRACE_NVRTC_FAST_COMPILE", "1", 0);
    RUN_TEST(launch_checks());
    RUN_TEST(walk_checks());
    RUN_TEST(error_path());

    static group gr;
    void (*builders[])(group *) = {elementwise_ops, reductions, matmuls, index_ops,
                                   composites, creation, fused_chains, colreduce};
    const char *names[] = {"elementwise", "reductions", "matmul", "index",
                           "composites", "creation", "fused_chains", "colreduce"};
    group total;
    memset(&total, 0, sizeof total);
    for (unsigned i = 0; i < sizeof builders / sizeof builders[0]; i++) {
        memset(&gr, 0, sizeof gr);
        gr.name = names[i];
        builders[i](&gr);
        compile_group(&gr);
        total.multi_reduce += gr.multi_reduce;
        total.per_row_epi += gr.per_row_epi;
        total.per_point_epi += gr.per_point_epi;
        total.mm_epi += gr.mm_epi;
        total.epi_kernels += gr.epi_kernels;
        total.mma += gr.mma;
        total.rand += gr.rand;
        total.indexed_load += gr.indexed_load;
        total.unravel += gr.unravel;
        total.indexed_store += gr.indexed_store;
        total.accumulate += gr.accumulate;
        total.vec += gr.vec;
        free_group(&gr);
    }
    memset(&gr, 0, sizeof gr);
    hand_kernels(&gr);
    total.multi_reduce += gr.multi_reduce;
    /* the IR features the groups must have exercised */
    CHECK(total.multi_reduce > 0, "a kernel with several reductions");
    CHECK(total.per_row_epi > 0 && total.per_point_epi > 0, "both epilogue forms (%d, %d)",
          total.per_row_epi, total.per_point_epi);
    CHECK(total.mm_epi > 0, "a matmul with a fused epilogue");
    CHECK(total.epi_kernels > 0, "matmuls with the epilogue kernel NAME_epi (%d)",
          total.epi_kernels);
    CHECK(total.mma > 0, "a float16/bfloat16 matmul with the tensor-core variant");
    CHECK(total.rand > 0, "RAND nodes");
    CHECK(total.unravel >= 6, "unravel loads rendered (%d)", total.unravel);
    CHECK(total.indexed_load > 0 && total.indexed_store > 0 && total.accumulate > 0,
          "indexed loads/stores and accumulation (%d, %d, %d)", total.indexed_load,
          total.indexed_store, total.accumulate);
    CHECK(total.vec > 0, "kernels with the vector path");
    CHECK(col_kernels >= 40, "reductions with the column variant NAME_col (%d)", col_kernels);
    free(seen);
    return st_test_exit_code("test_nvrtc");
}
