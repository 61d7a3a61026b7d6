/* tests/c/test_fusion.c - tests of fusion/decompose.c and fusion/lower.c:
 * the primitive graphs composites decompose into (verified, re-inferable
 * with new sizes), the kernels lowering makes (kinds, buffers, dimmaps,
 * params), and end-to-end runs of lowered graphs through the executor with
 * the interp backend against C references. Exits non-zero naming each
 * failed check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_runtime.h"
#include "st_test.h"

/* ---- graph building helpers ---- */

static st_meta meta(st_dtype dt, int ndim, const int64_t *shape)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        m.shape[i] = shape[i];
    m.kind = ST_META_TENSOR;
    return m;
}

static int input(st_graph *g, st_dtype dt, int ndim, const int64_t *shape)
{
    st_meta m = meta(dt, ndim, shape);
    return st_ir_add_input(g, &m, false);
}

static st_attrs attrs0(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

static int stmt(st_graph *g, st_op_id op, const int *in, int nin,
                const st_attrs *a)
{
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = attrs0();
    if (st_ir_add_stmt(g, op, in, nin, a ? a : &z, outs) < 0)
        return -1;
    return outs[0];
}

/* Decomposed graph must verify, and lowering must succeed. */
static st_kprog *lower_checked(const st_graph *g)
{
    st_graph *dg = st_fuse_decompose(g);
    CHECK(dg != NULL);
    if (dg) {
        CHECK(st_ir_verify(dg) == ST_OK);
        CHECK(dg->ninputs == g->ninputs);
        CHECK(dg->noutputs == g->noutputs);
        for (int i = 0; i < g->ninputs && i < dg->ninputs; i++) {
            const st_meta *a = &g->values[g->inputs[i]].meta;
            const st_meta *b = &dg->values[dg->inputs[i]].meta;
            CHECK(a->dtype == b->dtype && a->ndim == b->ndim);
            CHECK(g->values[g->inputs[i]].kind ==
                  dg->values[dg->inputs[i]].kind);
        }
        for (int i = 0; i < g->noutputs && i < dg->noutputs; i++) {
            const st_meta *a = &g->values[g->outputs[i]].meta;
            const st_meta *b = &dg->values[dg->outputs[i]].meta;
            CHECK(a->dtype == b->dtype && a->ndim == b->ndim);
            for (int d = 0; d < a->ndim && d < b->ndim; d++)
                CHECK(a->shape[d] == b->shape[d]);
        }
        /* only primitives (and embedding) remain */
        for (int s = 0; s < dg->nstmts; s++) {
            st_op_id op = dg->stmts[s].op;
            CHECK(st_op(op)->kind != ST_OPK_COMPOSITE || op == ST_OP_EMBEDDING);
            if (op == ST_OP_MATMUL) {
                CHECK(dg->values[dg->stmts[s].in[0]].meta.ndim >= 2);
                CHECK(dg->values[dg->stmts[s].in[1]].meta.ndim >= 2);
            }
            CHECK(op != ST_OP_RESHAPE);
        }
        st_ir_graph_free(dg);
    }
    /* the structure checked here is the unfused lowering's (fusion's
     * own kernels are tested by test_fuse) */
    st_fuse_options unfused = {0};
    st_kprog *p = st_fuse_lower(g, &unfused);
    CHECK(p != NULL);
    return p;
}

static bool kinds_are(const st_kprog *p, const st_kernel_kind *ks, int n)
{
    if (p->nkernels != n) {
        fprintf(stderr, "  [%s] %d kernels, expected %d\n", st_test_name,
                p->nkernels, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (p->kernels[i].kind != ks[i]) {
            fprintf(stderr, "  [%s] kernel %d kind %d, expected %d\n", st_test_name,
                    i, p->kernels[i].kind, ks[i]);
            return false;
        }
    return true;
}

static bool dimmap_is(const st_kbuf *b, const int *dm, int rank)
{
    for (int d = 0; d < ST_MAX_DIMS; d++)
        if (b->dimmap[d] != (d < rank ? dm[d] : -1))
            return false;
    return true;
}

/* Sets new sizes on the inputs of g (same ranks), re-infers, and checks
 * output 0 gets `want`. */
static void reinfer_check(st_graph *g, const int64_t (*shapes)[ST_MAX_DIMS],
                          int ndim_out, const int64_t *want)
{
    for (int i = 0; i < g->ninputs; i++) {
        st_meta *m = &g->values[g->inputs[i]].meta;
        for (int d = 0; d < m->ndim; d++)
            m->shape[d] = shapes[i][d];
    }
    CHECK(st_ir_reinfer(g) == ST_OK);
    CHECK(st_ir_verify(g) == ST_OK);
    const st_meta *o = &g->values[g->outputs[0]].meta;
    CHECK(o->ndim == ndim_out);
    for (int d = 0; d < ndim_out && d < o->ndim; d++)
        CHECK(o->shape[d] == want[d]);
}

/* ---- structural tests ---- */

static void test_softmax(void)
{
    st_test_name = "softmax";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_graph *dg = NULL;
    int64_t sh[2] = {2, 3};
    int x = input(g, ST_FLOAT32, 2, sh);
    st_attrs a = attrs0();
    a.i[0] = -1;
    int y = stmt(g, ST_OP_SOFTMAX, &x, 1, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    st_kernel_kind ks[5] = {ST_K_REDUCE, ST_K_ELEMENTWISE, ST_K_ELEMENTWISE,
                            ST_K_REDUCE, ST_K_ELEMENTWISE};
    REQUIRE(kinds_are(p, ks, 5));
    CHECK(p->kernels[0].reduce[0].op == ST_RED_MAX);
    CHECK(p->kernels[3].reduce[0].op == ST_RED_SUM);
    CHECK(p->graph->stmts[1].op == ST_OP_SUB);
    CHECK(p->graph->stmts[2].op == ST_OP_EXP);
    CHECK(p->graph->stmts[4].op == ST_OP_DIV);
    for (int i = 0; i < 5; i++) {
        CHECK(p->kernels[i].src_stmt == i);
        char want[48];
        snprintf(want, sizeof want, "k%d_%s", i,
                 st_op(p->graph->stmts[i].op)->name);
        CHECK(strcmp(p->kernels[i].name, want) == 0);
    }
    /* amax over the last dim with keepdim: rank 2, nred 1 */
    const st_kernel *k0 = &p->kernels[0];
    CHECK(k0->rank == 2 && k0->nred == 1);
    CHECK(k0->nbufs == 2 && k0->nstores == 1);
    CHECK(k0->reduce[0].src >= 0 && k0->reduce[0].src < k0->nnodes);
    /* sub(x, m): m [2,1] broadcast against [2,3] */
    const st_kernel *k1 = &p->kernels[1];
    CHECK(k1->rank == 2 && k1->nbufs == 3);
    CHECK(k1->bufs[2].is_out && k1->size_buf[0] == 2 && k1->size_dim[1] == 1);
    CHECK(p->graph->outputs[0] == p->graph->stmts[4].out[0]);

    /* re-infer the decomposed graph with other sizes */
    dg = st_fuse_decompose(g);
    REQUIRE(dg);
    int64_t ns[1][ST_MAX_DIMS] = {{7, 11}};
    int64_t want[2] = {7, 11};
    reinfer_check(dg, (const int64_t (*)[ST_MAX_DIMS])ns, 2, want);
    CHECK(dg->values[dg->stmts[0].out[0]].meta.shape[0] == 7);
    CHECK(dg->values[dg->stmts[0].out[0]].meta.shape[1] == 1);
out:
    st_ir_graph_free(dg);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_log_softmax(void)
{
    st_test_name = "log_softmax";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[3] = {2, 3, 4};
    int x = input(g, ST_FLOAT32, 3, sh);
    st_attrs a = attrs0();
    a.i[0] = 1;
    int y = stmt(g, ST_OP_LOG_SOFTMAX, &x, 1, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    st_kernel_kind ks[6] = {ST_K_REDUCE, ST_K_ELEMENTWISE, ST_K_ELEMENTWISE,
                            ST_K_REDUCE, ST_K_ELEMENTWISE, ST_K_ELEMENTWISE};
    REQUIRE(kinds_are(p, ks, 6));
    CHECK(p->graph->stmts[4].op == ST_OP_LOG);
    CHECK(p->graph->stmts[5].op == ST_OP_SUB);
    /* reduction over the middle dim: iteration [0, 2, 1] */
    int idm[3] = {0, 2, 1}, odm[3] = {0, 2, -1};
    CHECK(dimmap_is(&p->kernels[0].bufs[0], idm, 3));
    CHECK(dimmap_is(&p->kernels[0].bufs[1], odm, 3));
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_layer_norm(st_dtype dt)
{
    st_test_name = dt == ST_FLOAT32 ? "layer_norm f32" : "layer_norm f16";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_graph *dg = NULL;
    int64_t sh[3] = {2, 3, 4}, wsh[1] = {4};
    int in[3];
    in[0] = input(g, dt, 3, sh);
    in[1] = input(g, dt, 1, wsh);
    in[2] = input(g, dt, 1, wsh);
    st_attrs a = attrs0();
    a.ndims = 1;
    a.f[0] = 1e-5;
    a.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    int y = stmt(g, ST_OP_LAYER_NORM, in, 3, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    /* [cast], mean, sub, mul, mean, add eps, rsqrt, mul, mul w, add b, [cast] */
    st_kernel_kind ks32[9] = {ST_K_REDUCE, ST_K_ELEMENTWISE, ST_K_ELEMENTWISE,
                              ST_K_REDUCE, ST_K_ELEMENTWISE, ST_K_ELEMENTWISE,
                              ST_K_ELEMENTWISE, ST_K_ELEMENTWISE,
                              ST_K_ELEMENTWISE};
    if (dt == ST_FLOAT32) {
        REQUIRE(kinds_are(p, ks32, 9));
        CHECK(p->kernels[0].reduce[0].op == ST_RED_MEAN);
        /* add(var, eps): eps is a float64 param cast to float32 */
        const st_kernel *k = &p->kernels[4];
        CHECK(k->nparams == 1 && k->param_dtype[0] == ST_FLOAT64);
        CHECK(k->param_value[0] >= 0 &&
              p->graph->values[k->param_value[0]].kind == ST_VAL_CONST);
        CHECK(fabs(p->graph->values[k->param_value[0]].fconst - 1e-5) < 1e-12);
        /* mul(y, w): w [4] right-aligned against [2, 3, 4] */
        const st_kernel *km = &p->kernels[7];
        int wdm[3] = {-1, -1, 0};
        CHECK(km->nbufs == 3 && dimmap_is(&km->bufs[1], wdm, 3));
    } else {
        REQUIRE(p->nkernels == 11);
        CHECK(p->graph->stmts[0].op == ST_OP_CAST);
        CHECK(p->graph->stmts[0].attrs.dtype == ST_FLOAT32);
        CHECK(p->graph->stmts[10].op == ST_OP_CAST);
        CHECK(p->graph->values[p->graph->outputs[0]].meta.dtype == dt);
        CHECK(p->kernels[1].bufs[0].dtype == ST_FLOAT32);
    }
    dg = st_fuse_decompose(g);
    REQUIRE(dg);
    int64_t ns[3][ST_MAX_DIMS] = {{5, 6, 4}, {4}, {4}};
    int64_t want[3] = {5, 6, 4};
    reinfer_check(dg, (const int64_t (*)[ST_MAX_DIMS])ns, 3, want);
out:
    st_ir_graph_free(dg);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_gelu(bool tanh_form)
{
    st_test_name = tanh_form ? "gelu tanh" : "gelu erf";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[2] = {3, 4};
    int x = input(g, ST_FLOAT32, 2, sh);
    st_attrs a = attrs0();
    a.flags = tanh_form ? ST_ATTR_TANH : 0;
    int y = stmt(g, ST_OP_GELU, &x, 1, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    bool found = false;
    for (int s = 0; s < p->graph->nstmts; s++)
        if (p->graph->stmts[s].op == (tanh_form ? ST_OP_TANH : ST_OP_ERF))
            found = true;
    CHECK(found);
    for (int i = 0; i < p->nkernels; i++)
        CHECK(p->kernels[i].kind == ST_K_ELEMENTWISE);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_cross_entropy(int reduction)
{
    static const char *names[] = {"cross_entropy none", "cross_entropy mean",
                                  "cross_entropy sum"};
    st_test_name = names[reduction];
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_graph *dg = NULL;
    int64_t lsh[2] = {4, 5}, tsh[1] = {4};
    int in[2];
    in[0] = input(g, ST_FLOAT32, 2, lsh);
    in[1] = input(g, ST_INT64, 1, tsh);
    st_attrs a = attrs0();
    a.i[0] = -100;
    a.i[1] = reduction;
    int y = stmt(g, ST_OP_CROSS_ENTROPY, in, 2, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    /* the row's max and log-sum-exp (amax, sub, exp, sum, log), ne,
     * where, unsqueeze, gather (of the logits at the target), squeeze,
     * squeeze, squeeze, sub, sub ((x[t] - max) - lse), neg, where, then
     * sum (sum) or sum, cast, sum, div (mean) */
    int want = reduction == 0 ? 16 : reduction == 2 ? 17 : 20;
    CHECK(p->nkernels == want);
    int gk = -1;
    for (int i = 0; i < p->nkernels; i++)
        if (p->graph->stmts[i].op == ST_OP_GATHER)
            gk = i;
    REQUIRE(gk == 8);
    CHECK(p->kernels[7].kind == ST_K_VIEW && p->kernels[7].stmt == 7);
    CHECK(p->kernels[9].kind == ST_K_VIEW && p->kernels[9].stmt == 9);
    const st_kernel *k = &p->kernels[gk];
    CHECK(k->kind == ST_K_ELEMENTWISE && k->rank == 2 && k->nbufs == 3);
    int xdm[2] = {0, -1}, idm[2] = {0, 1};
    CHECK(dimmap_is(&k->bufs[0], xdm, 2));
    CHECK(dimmap_is(&k->bufs[1], idm, 2));
    CHECK(dimmap_is(&k->bufs[2], idm, 2));
    CHECK(k->nnodes >= 2 && k->nodes[1].kind == ST_KN_LOAD &&
          k->nodes[1].idx_dim == 1 && k->nodes[1].a == 0 &&
          k->nodes[1].buf == 0);
    CHECK(k->nodes[0].kind == ST_KN_LOAD && k->nodes[0].buf == 1);
    /* ne(target, ignore_index): int64 compare -> bool, int param */
    const st_kernel *kn = &p->kernels[5];
    CHECK(kn->nparams == 1 && kn->param_dtype[0] == ST_INT64);
    CHECK(kn->bufs[kn->nbufs - 1].dtype == ST_BOOL);
    const st_meta *om = &p->graph->values[p->graph->outputs[0]].meta;
    CHECK(om->dtype == ST_FLOAT32 && om->ndim == (reduction == 0 ? 1 : 0));
    dg = st_fuse_decompose(g);
    REQUIRE(dg);
    int64_t ns[2][ST_MAX_DIMS] = {{9, 13}, {9}};
    int64_t w[1] = {9};
    reinfer_check(dg, (const int64_t (*)[ST_MAX_DIMS])ns,
                  reduction == 0 ? 1 : 0, w);
out:
    st_ir_graph_free(dg);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_linear(void)
{
    st_test_name = "linear";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_graph *dg = NULL;
    int64_t xs[2] = {3, 4}, ws[2] = {5, 4}, bs[1] = {5};
    int in[3];
    in[0] = input(g, ST_FLOAT32, 2, xs);
    in[1] = input(g, ST_FLOAT32, 2, ws);
    in[2] = input(g, ST_FLOAT32, 1, bs);
    st_attrs a = attrs0();
    a.flags = ST_ATTR_HAS_BIAS;
    int y = stmt(g, ST_OP_LINEAR, in, 3, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    st_kernel_kind ks[3] = {ST_K_VIEW, ST_K_MATMUL, ST_K_ELEMENTWISE};
    REQUIRE(kinds_are(p, ks, 3));
    CHECK(p->graph->stmts[0].op == ST_OP_PERMUTE);
    const st_kernel *k = &p->kernels[1];
    CHECK(k->rank == 3 && k->nbufs == 3);
    int adm[3] = {0, -1, 1}, bdm[3] = {-1, 1, 0}, cdm[3] = {0, 1, -1};
    CHECK(dimmap_is(&k->bufs[0], adm, 3));
    CHECK(dimmap_is(&k->bufs[1], bdm, 3));
    CHECK(dimmap_is(&k->bufs[2], cdm, 3));
    CHECK(k->bufs[2].is_out && !k->bufs[0].is_out);
    CHECK(k->size_buf[0] == 2 && k->size_dim[0] == 0);
    CHECK(k->size_buf[1] == 2 && k->size_dim[1] == 1);
    CHECK(k->size_buf[2] == 0 && k->size_dim[2] == 1);
    dg = st_fuse_decompose(g);
    REQUIRE(dg);
    int64_t ns[3][ST_MAX_DIMS] = {{8, 6}, {2, 6}, {2}};
    int64_t want[2] = {8, 2};
    reinfer_check(dg, (const int64_t (*)[ST_MAX_DIMS])ns, 2, want);
out:
    st_ir_graph_free(dg);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_batched_matmul(void)
{
    st_test_name = "batched matmul";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t as[4] = {2, 3, 4, 5}, bs[2] = {5, 6};
    int in[2];
    in[0] = input(g, ST_FLOAT32, 4, as);
    in[1] = input(g, ST_FLOAT32, 2, bs);
    int y = stmt(g, ST_OP_MATMUL, in, 2, NULL);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    REQUIRE(p->nkernels == 1);
    const st_kernel *k = &p->kernels[0];
    CHECK(k->kind == ST_K_MATMUL && k->rank == 5);
    int adm[5] = {0, 1, 2, -1, 3}, bdm[5] = {-1, -1, -1, 1, 0},
        cdm[5] = {0, 1, 2, 3, -1};
    CHECK(dimmap_is(&k->bufs[0], adm, 5));
    CHECK(dimmap_is(&k->bufs[1], bdm, 5));
    CHECK(dimmap_is(&k->bufs[2], cdm, 5));
    CHECK(k->size_buf[4] == 0 && k->size_dim[4] == 3);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_matmul_1d(int which)
{
    static const char *names[] = {"matmul 1d @ 2d", "matmul 2d @ 1d",
                                  "matmul 1d @ 1d"};
    st_test_name = names[which];
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t v[1] = {4}, m1[2] = {4, 5}, m2[2] = {3, 4};
    int in[2];
    if (which == 0) {
        in[0] = input(g, ST_FLOAT32, 1, v);
        in[1] = input(g, ST_FLOAT32, 2, m1);
    } else if (which == 1) {
        in[0] = input(g, ST_FLOAT32, 2, m2);
        in[1] = input(g, ST_FLOAT32, 1, v);
    } else {
        in[0] = input(g, ST_FLOAT32, 1, v);
        in[1] = input(g, ST_FLOAT32, 1, v);
    }
    int y = stmt(g, ST_OP_MATMUL, in, 2, NULL);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    if (which < 2) {
        st_kernel_kind ks[3] = {ST_K_VIEW, ST_K_MATMUL, ST_K_VIEW};
        REQUIRE(kinds_are(p, ks, 3));
        CHECK(p->graph->stmts[0].op == ST_OP_UNSQUEEZE);
        CHECK(p->graph->stmts[2].op == ST_OP_SQUEEZE);
    } else {
        st_kernel_kind ks[4] = {ST_K_VIEW, ST_K_VIEW, ST_K_MATMUL, ST_K_VIEW};
        REQUIRE(kinds_are(p, ks, 4));
    }
    const st_meta *om = &p->graph->values[p->graph->outputs[0]].meta;
    CHECK(om->ndim == (which == 2 ? 0 : 1));
    if (which == 0)
        CHECK(om->shape[0] == 5);
    if (which == 1)
        CHECK(om->shape[0] == 3);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_broadcast_add(void)
{
    st_test_name = "broadcast add";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t as[3] = {2, 3, 4}, bs[2] = {3, 1};
    int in[2];
    in[0] = input(g, ST_FLOAT32, 3, as);
    in[1] = input(g, ST_FLOAT32, 2, bs);
    int y = stmt(g, ST_OP_ADD, in, 2, NULL);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    REQUIRE(p->nkernels == 1);
    const st_kernel *k = &p->kernels[0];
    CHECK(k->kind == ST_K_ELEMENTWISE && k->rank == 3 && k->nbufs == 3);
    int adm[3] = {0, 1, 2}, bdm[3] = {-1, 0, 1};
    CHECK(dimmap_is(&k->bufs[0], adm, 3) && !k->bufs[0].is_out);
    CHECK(dimmap_is(&k->bufs[1], bdm, 3));
    CHECK(dimmap_is(&k->bufs[2], adm, 3) && k->bufs[2].is_out);
    for (int d = 0; d < 3; d++)
        CHECK(k->size_buf[d] == 2 && k->size_dim[d] == d);
    CHECK(k->nstores == 1 && k->stores[0].buf == 2);
    CHECK(k->nnodes == 3 && k->nodes[2].kind == ST_KN_BINARY &&
          k->nodes[2].op == ST_OP_ADD && k->nodes[2].dtype == ST_FLOAT32);
    CHECK(!k->bufs[0].contiguous && !k->bufs[1].contiguous);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_reduce_middle(bool keepdim)
{
    st_test_name = keepdim ? "sum middle keepdim" : "sum middle";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[3] = {2, 3, 4};
    int x = input(g, ST_INT32, 3, sh);
    st_attrs a = attrs0();
    a.dims[0] = -2;
    a.ndims = 1;
    a.flags = keepdim ? ST_ATTR_KEEPDIM : 0;
    int y = stmt(g, ST_OP_SUM, &x, 1, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    REQUIRE(p->nkernels == 1);
    const st_kernel *k = &p->kernels[0];
    CHECK(k->kind == ST_K_REDUCE && k->rank == 3 && k->nred == 1);
    CHECK(k->reduce[0].op == ST_RED_SUM);
    int idm[3] = {0, 2, 1};
    int odm_keep[3] = {0, 2, -1}, odm[3] = {0, 1, -1};
    CHECK(dimmap_is(&k->bufs[0], idm, 3));
    CHECK(dimmap_is(&k->bufs[1], keepdim ? odm_keep : odm, 3));
    CHECK(k->size_buf[0] == 0 && k->size_dim[0] == 0);
    CHECK(k->size_buf[1] == 0 && k->size_dim[1] == 2);
    CHECK(k->size_buf[2] == 0 && k->size_dim[2] == 1);
    /* int32 sum accumulates in int64 */
    REQUIRE(k->reduce[0].src >= 0);
    CHECK(k->nodes[k->reduce[0].src].dtype == ST_INT64);
    CHECK(k->nodes[k->reduce[0].src].phase == 0);
    REQUIRE(k->nstores == 1);
    CHECK(k->nodes[k->stores[0].node].phase == 1);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_scalar_param(void)
{
    st_test_name = "scalar const param";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[1] = {5};
    int in[2];
    in[0] = input(g, ST_FLOAT32, 1, sh);
    in[1] = st_ir_add_const(g, ST_FLOAT64, 2.5, 2);
    int y = stmt(g, ST_OP_MUL, in, 2, NULL);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    REQUIRE(p->nkernels == 1);
    const st_kernel *k = &p->kernels[0];
    CHECK(k->nbufs == 2 && k->nparams == 1);
    CHECK(k->param_dtype[0] == ST_FLOAT64);
    REQUIRE(k->param_value[0] >= 0);
    CHECK(p->graph->values[k->param_value[0]].kind == ST_VAL_CONST);
    CHECK(p->graph->values[k->param_value[0]].fconst == 2.5);
    bool has_param = false, has_cast = false;
    for (int i = 0; i < k->nnodes; i++) {
        if (k->nodes[i].kind == ST_KN_PARAM && k->nodes[i].buf == 0)
            has_param = true;
        if (k->nodes[i].kind == ST_KN_CAST &&
            k->nodes[i].dtype == ST_FLOAT32 &&
            k->nodes[k->nodes[i].a].kind == ST_KN_PARAM)
            has_cast = true;
    }
    CHECK(has_param && has_cast);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_full(st_dtype dt)
{
    st_test_name = dt == ST_FLOAT32 ? "full float" : "full int";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[2] = {2, 3};
    int x = input(g, ST_FLOAT32, 2, sh);
    st_attrs a = attrs0();
    a.dtype = dt;
    if (dt == ST_FLOAT32) {
        a.f[0] = 3.5;
    } else {
        a.i[0] = 7;
        a.flags = ST_ATTR_INT_VALUE;
    }
    int y = stmt(g, ST_OP_FULL, &x, 1, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    REQUIRE(p->nkernels == 1);
    const st_kernel *k = &p->kernels[0];
    CHECK(k->kind == ST_K_ELEMENTWISE && k->rank == 2);
    CHECK(k->nbufs == 1 && k->bufs[0].is_out && k->bufs[0].dtype == dt);
    CHECK(k->nparams == 1);
    if (dt == ST_FLOAT32) {
        CHECK(k->param_value[0] == ST_KPARAM_ATTR_F0);
        CHECK(k->param_dtype[0] == ST_FLOAT64);
    } else {
        CHECK(k->param_value[0] == ST_KPARAM_ATTR_I0);
        CHECK(k->param_dtype[0] == ST_INT64);
    }
    CHECK(k->src_stmt == 0 && !k->uses_rng);
    REQUIRE(k->nstores == 1);
    CHECK(k->nodes[k->stores[0].node].dtype == dt);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_dropout(double prob)
{
    st_test_name = prob == 0.0 ? "dropout 0" : prob == 1.0 ? "dropout 1"
                                                            : "dropout 0.3";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[2] = {2, 3};
    int x = input(g, ST_FLOAT16, 2, sh);
    st_attrs a = attrs0();
    a.f[0] = prob;
    int y = stmt(g, ST_OP_DROPOUT, &x, 1, &a);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    CHECK(p->graph->values[p->graph->outputs[0]].meta.dtype == ST_FLOAT16);
    if (prob == 0.0) {
        REQUIRE(p->nkernels == 1);
        CHECK(p->graph->stmts[0].op == ST_OP_COPY);
    } else if (prob == 1.0) {
        REQUIRE(p->nkernels == 1);
        CHECK(p->graph->stmts[0].op == ST_OP_FULL);
    } else {
        REQUIRE(p->nkernels >= 4);
        CHECK(p->graph->stmts[0].op == ST_OP_RAND);
        CHECK(p->kernels[0].uses_rng && p->kernels[0].nbufs == 1);
        for (int i = 1; i < p->nkernels; i++)
            CHECK(!p->kernels[i].uses_rng);
    }
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_clamp_masked_fill(void)
{
    st_test_name = "clamp / masked_fill";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t sh[2] = {2, 3};
    int in[2];
    in[0] = input(g, ST_INT64, 2, sh);
    in[1] = input(g, ST_BOOL, 2, sh);
    st_attrs a = attrs0();
    a.i[0] = -1;
    a.i[1] = 4;
    a.flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX | ST_ATTR_INT_VALUE;
    int c = stmt(g, ST_OP_CLAMP, in, 1, &a);
    REQUIRE(c >= 0);
    st_attrs m = attrs0();
    m.f[0] = 9.0;
    int min[2] = {c, in[1]};
    int y = stmt(g, ST_OP_MASKED_FILL, min, 2, &m);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    /* maximum, minimum, where (float32 by promotion), cast back to int64 */
    CHECK(p->graph->stmts[0].op == ST_OP_MAXIMUM);
    CHECK(p->graph->stmts[1].op == ST_OP_MINIMUM);
    CHECK(p->graph->stmts[2].op == ST_OP_WHERE);
    CHECK(p->kernels[0].param_dtype[0] == ST_INT64);
    CHECK(p->graph->values[p->graph->outputs[0]].meta.dtype == ST_INT64);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_embedding_index_select(void)
{
    st_test_name = "embedding / index_select";
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    int64_t ws[2] = {10, 4}, is[2] = {2, 3}, vs[1] = {5};
    int in[3];
    in[0] = input(g, ST_FLOAT32, 2, ws);
    in[1] = input(g, ST_INT64, 2, is);
    in[2] = input(g, ST_INT64, 1, vs);
    st_attrs a = attrs0();
    a.i[0] = -1;
    int e = stmt(g, ST_OP_EMBEDDING, in, 2, &a);
    REQUIRE(e >= 0);
    st_attrs s = attrs0();
    s.i[0] = 0;
    int sin[2] = {in[0], in[2]};
    int y = stmt(g, ST_OP_INDEX_SELECT, sin, 2, &s);
    REQUIRE(y >= 0);
    st_ir_mark_output(g, e);
    st_ir_mark_output(g, y);
    p = lower_checked(g);
    REQUIRE(p);
    REQUIRE(p->nkernels == 2);
    const st_kernel *k = &p->kernels[0];
    CHECK(k->kind == ST_K_ELEMENTWISE && k->rank == 3 && k->nbufs == 3);
    int wdm[3] = {-1, -1, 1}, idm[3] = {0, 1, -1}, odm[3] = {0, 1, 2};
    CHECK(dimmap_is(&k->bufs[0], wdm, 3));
    CHECK(dimmap_is(&k->bufs[1], idm, 3));
    CHECK(dimmap_is(&k->bufs[2], odm, 3));
    CHECK(k->nnodes >= 2 && k->nodes[1].idx_dim == 0 && k->nodes[1].a == 0);
    const st_kernel *k2 = &p->kernels[1];
    int xdm[2] = {-1, 1}, ixdm[2] = {0, -1};
    CHECK(k2->rank == 2 && dimmap_is(&k2->bufs[0], xdm, 2));
    CHECK(dimmap_is(&k2->bufs[1], ixdm, 2));
    CHECK(k2->nnodes >= 2 && k2->nodes[1].idx_dim == 0);
out:
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_copy_through(void)
{
    st_test_name = "copy through";
    st_graph *g = st_ir_graph_new();
    st_graph *dg = NULL;
    int64_t sh[2] = {2, 3};
    int x = input(g, ST_FLOAT32, 2, sh);
    st_meta pm = meta(ST_FLOAT32, 2, sh);
    int w = st_ir_add_input(g, &pm, true);
    int in[2] = {x, w};
    int y = stmt(g, ST_OP_ADD, in, 2, NULL);
    REQUIRE(y >= 0);
    int r = stmt(g, ST_OP_RELU, &y, 1, NULL);
    REQUIRE(r >= 0);
    st_ir_mark_output(g, r);
    st_ir_mark_output(g, x);
    dg = st_fuse_decompose(g);
    REQUIRE(dg);
    CHECK(dg->nstmts == 2 && dg->ninputs == 2 && dg->noutputs == 2);
    CHECK(dg->values[dg->inputs[1]].kind == ST_VAL_PARAM);
    CHECK(dg->outputs[1] == dg->inputs[0]);
    CHECK(st_ir_hash(dg, true) == st_ir_hash(g, true));
out:
    st_ir_graph_free(dg);
    st_ir_graph_free(g);
}

/* ---- end to end through the executor and the interp backend ---- */

static st_tensor *tensor_f32(int ndim, const int64_t *shape, const float *v)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, ndim, shape);
    if (t)
        memcpy(st_tensor_data(t), v, sizeof(float) * st_tensor_numel(t));
    return t;
}

/* Lowers g, runs it with the interp backend on inputs (one per graph
 * input); returns the tensor of output 0 (caller decrefs) or NULL. */
static st_tensor *run_graph(const st_graph *g, st_tensor **inputs)
{
    st_kprog *p = st_fuse_lower(g, NULL);
    if (!p)
        return NULL;
    st_backend *be = st_interp_backend();
    void *h = be ? be->compile(be, p->kernels, p->nkernels) : NULL;
    st_tensor *res = NULL;
    st_tensor **vals = NULL;
    if (!h)
        goto done;
    vals = calloc((size_t)p->graph->nvalues, sizeof *vals);
    if (!vals)
        goto done;
    for (int i = 0; i < p->graph->ninputs; i++) {
        vals[p->graph->inputs[i]] = inputs[i];
        st_tensor_incref(inputs[i]);
    }
    if (st_rt_exec(p, be, h, vals) == ST_OK) {
        res = vals[p->graph->outputs[0]];
        if (res)
            st_tensor_incref(res);
    }
    for (int v = 0; v < p->graph->nvalues; v++)
        if (vals[v])
            st_tensor_decref(vals[v]);
done:
    free(vals);
    if (h)
        be->release(be, h);
    st_kprog_free(p);
    return res;
}

static double tget(const st_tensor *t, int64_t i)
{
    const char *d = st_tensor_data(t);
    switch (t->dtype) {
    case ST_FLOAT32: return ((const float *)d)[i];
    case ST_FLOAT64: return ((const double *)d)[i];
    case ST_INT64: return (double)((const int64_t *)d)[i];
    default: return NAN;
    }
}

static void test_e2e_softmax(void)
{
    st_test_name = "e2e softmax";
    enum { R = 3, C = 5 };
    float x[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)sin(i * 1.7) * 4.0f;
    int64_t sh[2] = {R, C};
    st_graph *g = st_ir_graph_new();
    st_tensor *in = NULL, *y = NULL;
    int xv = input(g, ST_FLOAT32, 2, sh);
    st_attrs a = attrs0();
    a.i[0] = 1;
    int yv = stmt(g, ST_OP_SOFTMAX, &xv, 1, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in = tensor_f32(2, sh, x);
    REQUIRE(in);
    y = run_graph(g, &in);
    REQUIRE(y);
    REQUIRE(y->ndim == 2 && y->shape[0] == R && y->shape[1] == C);
    REQUIRE(st_tensor_is_contiguous(y));
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, x[r * C + c]);
        for (int c = 0; c < C; c++)
            s += exp(x[r * C + c] - m);
        for (int c = 0; c < C; c++) {
            double ref = exp(x[r * C + c] - m) / s;
            CHECK(fabs(tget(y, r * C + c) - ref) < 1e-5);
        }
    }
out:
    if (y)
        st_tensor_decref(y);
    if (in)
        st_tensor_decref(in);
    st_ir_graph_free(g);
}

static void test_e2e_cross_entropy(int reduction, bool all_ignored)
{
    st_test_name = all_ignored ? "e2e cross_entropy all ignored"
                               : "e2e cross_entropy";
    enum { N = 4, C = 6 };
    float x[N * C];
    for (int i = 0; i < N * C; i++)
        x[i] = (float)cos(i * 0.9) * 3.0f;
    int64_t t[N] = {2, -100, 5, 0};
    if (all_ignored)
        for (int i = 0; i < N; i++)
            t[i] = -100;
    int64_t ls[2] = {N, C}, ts[1] = {N};
    st_graph *g = st_ir_graph_new();
    st_tensor *in[2] = {NULL, NULL}, *y = NULL;
    int iv[2];
    iv[0] = input(g, ST_FLOAT32, 2, ls);
    iv[1] = input(g, ST_INT64, 1, ts);
    st_attrs a = attrs0();
    a.i[0] = -100;
    a.i[1] = reduction;
    int yv = stmt(g, ST_OP_CROSS_ENTROPY, iv, 2, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in[0] = tensor_f32(2, ls, x);
    in[1] = st_tensor_empty(st_rt_cpu(), ST_INT64, 1, ts);
    REQUIRE(in[0] && in[1]);
    memcpy(st_tensor_data(in[1]), t, sizeof t);
    y = run_graph(g, in);
    REQUIRE(y);
    double li[N], sum = 0;
    int cnt = 0;
    for (int n = 0; n < N; n++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, x[n * C + c]);
        for (int c = 0; c < C; c++)
            s += exp(x[n * C + c] - m);
        li[n] = t[n] == -100 ? 0.0 : -(x[n * C + t[n]] - m - log(s));
        sum += li[n];
        cnt += t[n] != -100;
    }
    if (reduction == 0) {
        REQUIRE(y->ndim == 1 && y->shape[0] == N);
        for (int n = 0; n < N; n++)
            CHECK(fabs(tget(y, n) - li[n]) < 1e-5);
    } else {
        REQUIRE(y->ndim == 0);
        double ref = reduction == 2 ? sum : sum / cnt;
        double got = tget(y, 0);
        if (all_ignored && reduction == 1)
            CHECK(isnan(got));
        else
            CHECK(fabs(got - ref) < 1e-5);
    }
out:
    if (y)
        st_tensor_decref(y);
    for (int i = 0; i < 2; i++)
        if (in[i])
            st_tensor_decref(in[i]);
    st_ir_graph_free(g);
}

static void test_e2e_linear_1d(void)
{
    st_test_name = "e2e linear / 1-D matmul";
    enum { K = 4, N = 3 };
    float x[K], w[N * K], b[N];
    for (int i = 0; i < K; i++)
        x[i] = (float)(i + 1) * 0.5f;
    for (int i = 0; i < N * K; i++)
        w[i] = (float)((i % 5) - 2);
    for (int i = 0; i < N; i++)
        b[i] = (float)i * 0.25f;
    int64_t xs[1] = {K}, ws[2] = {N, K}, bs[1] = {N};
    st_graph *g = st_ir_graph_new();
    st_tensor *in[3] = {NULL, NULL, NULL}, *y = NULL;
    int iv[3];
    iv[0] = input(g, ST_FLOAT32, 1, xs);
    iv[1] = input(g, ST_FLOAT32, 2, ws);
    iv[2] = input(g, ST_FLOAT32, 1, bs);
    st_attrs a = attrs0();
    a.flags = ST_ATTR_HAS_BIAS;
    int yv = stmt(g, ST_OP_LINEAR, iv, 3, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in[0] = tensor_f32(1, xs, x);
    in[1] = tensor_f32(2, ws, w);
    in[2] = tensor_f32(1, bs, b);
    REQUIRE(in[0] && in[1] && in[2]);
    y = run_graph(g, in);
    REQUIRE(y);
    REQUIRE(y->ndim == 1 && y->shape[0] == N);
    for (int n = 0; n < N; n++) {
        double ref = b[n];
        for (int k = 0; k < K; k++)
            ref += (double)x[k] * w[n * K + k];
        CHECK(fabs(tget(y, n) - ref) < 1e-4);
    }
out:
    if (y)
        st_tensor_decref(y);
    for (int i = 0; i < 3; i++)
        if (in[i])
            st_tensor_decref(in[i]);
    st_ir_graph_free(g);
}

static void test_e2e_layer_norm(void)
{
    st_test_name = "e2e layer_norm";
    enum { R = 3, H = 8 };
    float x[R * H], w[H], b[H];
    for (int i = 0; i < R * H; i++)
        x[i] = (float)sin(i * 0.37) * 2.0f + (float)(i / H);
    for (int i = 0; i < H; i++) {
        w[i] = 1.0f + 0.1f * (float)i;
        b[i] = -0.05f * (float)i;
    }
    int64_t xs[2] = {R, H}, ws[1] = {H};
    st_graph *g = st_ir_graph_new();
    st_tensor *in[3] = {NULL, NULL, NULL}, *y = NULL;
    int iv[3];
    iv[0] = input(g, ST_FLOAT32, 2, xs);
    iv[1] = input(g, ST_FLOAT32, 1, ws);
    iv[2] = input(g, ST_FLOAT32, 1, ws);
    st_attrs a = attrs0();
    a.ndims = 1;
    a.f[0] = 1e-5;
    a.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    int yv = stmt(g, ST_OP_LAYER_NORM, iv, 3, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in[0] = tensor_f32(2, xs, x);
    in[1] = tensor_f32(1, ws, w);
    in[2] = tensor_f32(1, ws, b);
    REQUIRE(in[0] && in[1] && in[2]);
    y = run_graph(g, in);
    REQUIRE(y);
    REQUIRE(y->ndim == 2 && y->shape[1] == H);
    for (int r = 0; r < R; r++) {
        double mu = 0, var = 0;
        for (int h = 0; h < H; h++)
            mu += x[r * H + h];
        mu /= H;
        for (int h = 0; h < H; h++)
            var += (x[r * H + h] - mu) * (x[r * H + h] - mu);
        var /= H;
        for (int h = 0; h < H; h++) {
            double ref = (x[r * H + h] - mu) / sqrt(var + 1e-5) * w[h] + b[h];
            CHECK(fabs(tget(y, r * H + h) - ref) < 1e-4);
        }
    }
out:
    if (y)
        st_tensor_decref(y);
    for (int i = 0; i < 3; i++)
        if (in[i])
            st_tensor_decref(in[i]);
    st_ir_graph_free(g);
}

/* A tensor of dtype dt filled from doubles. */
static st_tensor *tensor_of(st_dtype dt, int ndim, const int64_t *shape,
                            const double *v)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), dt, ndim, shape);
    if (!t)
        return NULL;
    char *d = st_tensor_data(t);
    for (int64_t i = 0; i < st_tensor_numel(t); i++) {
        switch (dt) {
        case ST_FLOAT32: ((float *)d)[i] = (float)v[i]; break;
        case ST_FLOAT64: ((double *)d)[i] = v[i]; break;
        case ST_INT32: ((int32_t *)d)[i] = (int32_t)v[i]; break;
        case ST_INT64: ((int64_t *)d)[i] = (int64_t)v[i]; break;
        case ST_BOOL: ((uint8_t *)d)[i] = v[i] != 0; break;
        case ST_FLOAT16: ((uint16_t *)d)[i] = st_float_to_half((float)v[i]); break;
        default: break;
        }
    }
    return t;
}

static double tgetx(const st_tensor *t, int64_t i)
{
    const char *d = st_tensor_data(t);
    switch (t->dtype) {
    case ST_INT32: return ((const int32_t *)d)[i];
    case ST_BOOL: return ((const uint8_t *)d)[i];
    case ST_FLOAT16: return st_half_to_float(((const uint16_t *)d)[i]);
    default: return tget(t, i);
    }
}

static void decref_all(st_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i])
            st_tensor_decref(ts[i]);
}

static void test_e2e_gelu(bool tanh_form)
{
    st_test_name = tanh_form ? "e2e gelu tanh" : "e2e gelu erf";
    enum { N = 9 };
    double x[N];
    for (int i = 0; i < N; i++)
        x[i] = -3.0 + 0.75 * i;
    int64_t sh[1] = {N};
    st_graph *g = st_ir_graph_new();
    st_tensor *in = NULL, *y = NULL;
    int xv = input(g, ST_FLOAT32, 1, sh);
    st_attrs a = attrs0();
    a.flags = tanh_form ? ST_ATTR_TANH : 0;
    int yv = stmt(g, ST_OP_GELU, &xv, 1, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in = tensor_of(ST_FLOAT32, 1, sh, x);
    REQUIRE(in);
    y = run_graph(g, &in);
    REQUIRE(y && y->ndim == 1 && y->shape[0] == N);
    for (int i = 0; i < N; i++) {
        double v = (float)x[i], ref;
        if (tanh_form)
            ref = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        else
            ref = 0.5 * v * (1 + erf(v * M_SQRT1_2));
        CHECK(fabs(tgetx(y, i) - ref) < 1e-5);
    }
out:
    decref_all(&y, 1);
    decref_all(&in, 1);
    st_ir_graph_free(g);
}

static void test_e2e_dropout(void)
{
    st_test_name = "e2e dropout 0.3";
    enum { N = 2000 };
    static double x[N];
    for (int i = 0; i < N; i++)
        x[i] = 1.0 + (i % 7);
    int64_t sh[2] = {40, 50};
    st_graph *g = st_ir_graph_new();
    st_tensor *in = NULL, *y = NULL;
    int xv = input(g, ST_FLOAT32, 2, sh);
    st_attrs a = attrs0();
    a.f[0] = 0.3;
    int yv = stmt(g, ST_OP_DROPOUT, &xv, 1, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in = tensor_of(ST_FLOAT32, 2, sh, x);
    REQUIRE(in);
    y = run_graph(g, &in);
    REQUIRE(y && y->dtype == ST_FLOAT32 && y->ndim == 2);
    int kept = 0;
    for (int i = 0; i < N; i++) {
        double v = tgetx(y, i);
        if (v != 0.0) {
            kept++;
            CHECK(fabs(v - x[i] / 0.7) < 1e-4);
        }
    }
    CHECK(kept > N * 0.6 && kept < N * 0.8);
out:
    decref_all(&y, 1);
    decref_all(&in, 1);
    st_ir_graph_free(g);
}

static void test_e2e_reduce_middle(bool keepdim)
{
    st_test_name = keepdim ? "e2e sum middle keepdim" : "e2e sum middle";
    enum { A = 2, B = 3, C = 4 };
    double x[A * B * C];
    for (int i = 0; i < A * B * C; i++)
        x[i] = (i * 37) % 11 - 5;
    int64_t sh[3] = {A, B, C};
    st_graph *g = st_ir_graph_new();
    st_tensor *in = NULL, *y = NULL;
    int xv = input(g, ST_INT32, 3, sh);
    st_attrs a = attrs0();
    a.dims[0] = 1;
    a.ndims = 1;
    a.flags = keepdim ? ST_ATTR_KEEPDIM : 0;
    int yv = stmt(g, ST_OP_SUM, &xv, 1, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in = tensor_of(ST_INT32, 3, sh, x);
    REQUIRE(in);
    y = run_graph(g, &in);
    REQUIRE(y && y->dtype == ST_INT64 && y->ndim == (keepdim ? 3 : 2));
    for (int i = 0; i < A; i++)
        for (int k = 0; k < C; k++) {
            double ref = 0;
            for (int j = 0; j < B; j++)
                ref += x[(i * B + j) * C + k];
            CHECK(tgetx(y, i * C + k) == ref);
        }
out:
    decref_all(&y, 1);
    decref_all(&in, 1);
    st_ir_graph_free(g);
}

static void test_e2e_indexing(void)
{
    st_test_name = "e2e embedding / index_select";
    enum { V = 6, H = 3 };
    double w[V * H], idx[4] = {5, 0, 2, 2}, sel[2] = {2, 0};
    for (int i = 0; i < V * H; i++)
        w[i] = i * 0.5;
    int64_t ws[2] = {V, H}, is[2] = {2, 2}, ss[1] = {2};
    st_graph *g = st_ir_graph_new();
    st_tensor *in[3] = {NULL, NULL, NULL}, *e = NULL, *y = NULL;
    int iv[3];
    iv[0] = input(g, ST_FLOAT32, 2, ws);
    iv[1] = input(g, ST_INT64, 2, is);
    iv[2] = input(g, ST_INT64, 1, ss);
    st_attrs a = attrs0();
    a.i[0] = -1;
    int ev = stmt(g, ST_OP_EMBEDDING, iv, 2, &a);
    st_attrs b = attrs0();
    b.i[0] = 1;
    int sin[2] = {iv[0], iv[2]};
    int yv = stmt(g, ST_OP_INDEX_SELECT, sin, 2, &b);
    REQUIRE(ev >= 0 && yv >= 0);
    st_ir_mark_output(g, yv);
    in[0] = tensor_of(ST_FLOAT32, 2, ws, w);
    in[1] = tensor_of(ST_INT64, 2, is, idx);
    in[2] = tensor_of(ST_INT64, 1, ss, sel);
    REQUIRE(in[0] && in[1] && in[2]);
    y = run_graph(g, in);
    REQUIRE(y && y->ndim == 2 && y->shape[0] == V && y->shape[1] == 2);
    for (int r = 0; r < V; r++)
        for (int c = 0; c < 2; c++)
            CHECK(tgetx(y, r * 2 + c) == w[r * H + (int)sel[c]]);
    /* the embedding as output */
    st_ir_graph_free(g);
    g = st_ir_graph_new();
    iv[0] = input(g, ST_FLOAT32, 2, ws);
    iv[1] = input(g, ST_INT64, 2, is);
    ev = stmt(g, ST_OP_EMBEDDING, iv, 2, &a);
    REQUIRE(ev >= 0);
    st_ir_mark_output(g, ev);
    e = run_graph(g, in);
    REQUIRE(e && e->ndim == 3 && e->shape[2] == H);
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < H; h++)
            CHECK(tgetx(e, i * H + h) == w[(int)idx[i] * H + h]);
out:
    decref_all(&e, 1);
    decref_all(&y, 1);
    decref_all(in, 3);
    st_ir_graph_free(g);
}

static void test_e2e_matmul_batched(void)
{
    st_test_name = "e2e batched matmul";
    enum { B = 2, M = 3, K = 4, N = 5 };
    double a[B * M * K], b[K * N];
    for (int i = 0; i < B * M * K; i++)
        a[i] = (i % 5) - 2;
    for (int i = 0; i < K * N; i++)
        b[i] = (i % 3) * 0.5;
    int64_t as[3] = {B, M, K}, bs[2] = {K, N};
    st_graph *g = st_ir_graph_new();
    st_tensor *in[2] = {NULL, NULL}, *y = NULL;
    int iv[2];
    iv[0] = input(g, ST_FLOAT32, 3, as);
    iv[1] = input(g, ST_FLOAT32, 2, bs);
    int yv = stmt(g, ST_OP_MATMUL, iv, 2, NULL);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in[0] = tensor_of(ST_FLOAT32, 3, as, a);
    in[1] = tensor_of(ST_FLOAT32, 2, bs, b);
    REQUIRE(in[0] && in[1]);
    y = run_graph(g, in);
    REQUIRE(y && y->ndim == 3 && y->shape[2] == N);
    for (int q = 0; q < B; q++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double ref = 0;
                for (int k = 0; k < K; k++)
                    ref += a[(q * M + i) * K + k] * b[k * N + j];
                CHECK(fabs(tgetx(y, (q * M + i) * N + j) - ref) < 1e-5);
            }
out:
    decref_all(&y, 1);
    decref_all(in, 2);
    st_ir_graph_free(g);
}

/* One lowered softmax program run with two input sizes: the executor
 * re-infers the decomposed graph, kernels are not specialized on sizes. */
static void test_e2e_resize(void)
{
    st_test_name = "e2e softmax two sizes";
    int64_t sh0[2] = {2, 3};
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_backend *be = st_interp_backend();
    void *h = NULL;
    st_tensor **vals = NULL;
    int xv = input(g, ST_FLOAT32, 2, sh0);
    st_attrs a = attrs0();
    a.i[0] = 0; /* over rows: a reduction over a non-trailing dim */
    int yv = stmt(g, ST_OP_SOFTMAX, &xv, 1, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    p = st_fuse_lower(g, NULL);
    REQUIRE(p && be);
    h = be->compile(be, p->kernels, p->nkernels);
    REQUIRE(h);
    vals = calloc((size_t)p->graph->nvalues, sizeof *vals);
    REQUIRE(vals);
    for (int round = 0; round < 2; round++) {
        int R = round ? 6 : 2, C = round ? 7 : 3;
        int64_t sh[2] = {R, C};
        double x[42];
        for (int i = 0; i < R * C; i++)
            x[i] = sin(i * 0.77 + round) * 3;
        vals[p->graph->inputs[0]] = tensor_of(ST_FLOAT32, 2, sh, x);
        REQUIRE(vals[p->graph->inputs[0]]);
        REQUIRE(st_rt_exec(p, be, h, vals) == ST_OK);
        st_tensor *y = vals[p->graph->outputs[0]];
        REQUIRE(y && y->ndim == 2 && y->shape[0] == R && y->shape[1] == C);
        for (int c = 0; c < C; c++) {
            double m = -INFINITY, s = 0;
            for (int r = 0; r < R; r++)
                m = fmax(m, (float)x[r * C + c]);
            for (int r = 0; r < R; r++)
                s += exp((float)x[r * C + c] - m);
            for (int r = 0; r < R; r++)
                CHECK(fabs(tgetx(y, r * C + c) -
                           exp((float)x[r * C + c] - m) / s) < 1e-5);
        }
        for (int v = 0; v < p->graph->nvalues; v++)
            if (vals[v]) {
                st_tensor_decref(vals[v]);
                vals[v] = NULL;
            }
    }
out:
    if (vals && p)
        for (int v = 0; v < p->graph->nvalues; v++)
            if (vals[v])
                st_tensor_decref(vals[v]);
    free(vals);
    if (h)
        be->release(be, h);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_e2e_creation(void)
{
    st_test_name = "e2e arange / full / clamp / masked_fill";
    int64_t sh[1] = {5};
    st_graph *g = st_ir_graph_new();
    st_tensor *y = NULL, *in[1] = {NULL};
    st_attrs a = attrs0();
    a.dims[0] = 5;
    a.ndims = 1;
    a.f[0] = 1.0;
    a.f[1] = 0.5;
    a.dtype = ST_FLOAT32;
    int r = stmt(g, ST_OP_ARANGE, NULL, 0, &a);
    REQUIRE(r >= 0);
    st_attrs c = attrs0();
    c.f[0] = 1.5;
    c.f[1] = 2.5;
    c.flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX;
    int cl = stmt(g, ST_OP_CLAMP, &r, 1, &c);
    REQUIRE(cl >= 0);
    st_attrs f = attrs0();
    f.dtype = ST_BOOL;
    f.i[0] = 1;
    f.flags = ST_ATTR_INT_VALUE;
    int xv = input(g, ST_FLOAT32, 1, sh);
    int full = stmt(g, ST_OP_FULL, &xv, 1, &f);
    REQUIRE(full >= 0);
    int lt_in[2] = {cl, st_ir_add_const(g, ST_FLOAT64, 2.0, 2)};
    int mask = stmt(g, ST_OP_LT, lt_in, 2, NULL);
    int and_in[2] = {mask, full};
    int m2 = stmt(g, ST_OP_LOGICAL_AND, and_in, 2, NULL);
    st_attrs mf = attrs0();
    mf.f[0] = -7.0;
    int mfin[2] = {cl, m2};
    int y_v = stmt(g, ST_OP_MASKED_FILL, mfin, 2, &mf);
    REQUIRE(mask >= 0 && m2 >= 0 && y_v >= 0);
    st_ir_mark_output(g, y_v);
    double zeros[5] = {0};
    in[0] = tensor_of(ST_FLOAT32, 1, sh, zeros);
    REQUIRE(in[0]);
    y = run_graph(g, in);
    REQUIRE(y && y->ndim == 1 && y->shape[0] == 5 && y->dtype == ST_FLOAT32);
    /* arange: 1, 1.5, 2, 2.5, 3 -> clamp: 1.5 1.5 2 2.5 2.5 -> < 2 filled */
    double want[5] = {-7, -7, 2, 2.5, 2.5};
    for (int i = 0; i < 5; i++)
        CHECK(tgetx(y, i) == want[i]);
out:
    decref_all(&y, 1);
    decref_all(in, 1);
    st_ir_graph_free(g);
}

static void test_e2e_layer_norm_f16(void)
{
    st_test_name = "e2e layer_norm f16";
    enum { R = 2, H = 6 };
    double x[R * H];
    for (int i = 0; i < R * H; i++)
        x[i] = (float)st_half_to_float(st_float_to_half((float)(i * 0.3 - 1)));
    int64_t sh[2] = {R, H};
    st_graph *g = st_ir_graph_new();
    st_tensor *in = NULL, *y = NULL;
    int xv = input(g, ST_FLOAT16, 2, sh);
    st_attrs a = attrs0();
    a.ndims = 1;
    a.f[0] = 1e-5;
    int yv = stmt(g, ST_OP_LAYER_NORM, &xv, 1, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    in = tensor_of(ST_FLOAT16, 2, sh, x);
    REQUIRE(in);
    y = run_graph(g, &in);
    REQUIRE(y && y->dtype == ST_FLOAT16);
    for (int r = 0; r < R; r++) {
        double mu = 0, var = 0;
        for (int h = 0; h < H; h++)
            mu += x[r * H + h];
        mu /= H;
        for (int h = 0; h < H; h++)
            var += (x[r * H + h] - mu) * (x[r * H + h] - mu);
        var /= H;
        for (int h = 0; h < H; h++)
            CHECK(fabs(tgetx(y, r * H + h) -
                       (x[r * H + h] - mu) / sqrt(var + 1e-5)) < 2e-3);
    }
out:
    decref_all(&y, 1);
    decref_all(&in, 1);
    st_ir_graph_free(g);
}

/* scatter_add lowers to two kernels (a copy of self, then an indexed
 * accumulating store over the index's space into the same value) and runs
 * through the executor: duplicates accumulate, self is not modified, an
 * index smaller than src reads src's leading corner, out-of-bounds indices
 * fail with torch's message. */
/* A scatter_add into a dying intermediate, run with its memory plan: the
 * plan marks the copy in place (the result takes the base's storage), the
 * executor skips it, the values are right; a base read after the scatter,
 * or a graph input, keeps its copy. */
static void test_planned_scatter_in_place(bool base_read_after, bool base_is_input)
{
    st_test_name = "planned scatter_add in place";
    enum { R = 5, C = 4, N = 6 };
    int64_t shx[2] = {R, C}, shi[2] = {N, C};
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_mem_plan *m = NULL;
    st_backend *be = st_interp_backend();
    void *h = NULL;
    st_tensor **vals = NULL, *in[3] = {NULL, NULL, NULL};
    REQUIRE(g && be);
    int xv = input(g, ST_FLOAT64, 2, shx);
    int iv = input(g, ST_INT64, 2, shi);
    int sv = input(g, ST_FLOAT64, 2, shi);
    int two = st_ir_add_const(g, ST_FLOAT64, 2.0, 2);
    int one = st_ir_add_const(g, ST_FLOAT64, 1.0, 1);
    int bin[2] = {xv, two};
    int bv = base_is_input ? xv : stmt(g, ST_OP_MUL, bin, 2, NULL);
    st_attrs a = attrs0();
    a.i[0] = 0;
    int ins[3] = {bv, iv, sv};
    int yv = stmt(g, ST_OP_SCATTER_ADD, ins, 3, &a);
    int zin[2] = {yv, one};
    int zv = stmt(g, ST_OP_ADD, zin, 2, NULL);
    REQUIRE(yv >= 0 && zv >= 0);
    st_ir_mark_output(g, zv);
    if (base_read_after) {
        int win[2] = {bv, two};
        st_ir_mark_output(g, stmt(g, ST_OP_MUL, win, 2, NULL));
    }
    st_fuse_options opt = *st_fuse_config();
    opt.fusion = 0; /* the copy stays a kernel of its own */
    p = st_fuse_lower(g, &opt);
    REQUIRE(p);
    m = st_fuse_plan(p, NULL);
    REQUIRE(m);
    int copy = -1;
    for (int i = 0; i < p->nkernels; i++)
        if (p->kernels[i].kind == ST_K_ELEMENTWISE && p->kernels[i].nstores == 1 &&
            !p->kernels[i].stores[0].indexed &&
            p->graph->stmts[p->kernels[i].src_stmt].op == ST_OP_SCATTER_ADD)
            copy = i;
    REQUIRE(copy >= 0);
    CHECK(m->inplace[copy] == (!base_read_after && !base_is_input));
    double x[R * C], src[N * C], idx[N * C];
    for (int i = 0; i < R * C; i++)
        x[i] = 0.5 * i - 3;
    for (int i = 0; i < N * C; i++) {
        src[i] = 1.0 + i;
        idx[i] = (double)((i * 7 + i / C) % R); /* repeats */
    }
    in[0] = tensor_of(ST_FLOAT64, 2, shx, x);
    in[1] = tensor_of(ST_INT64, 2, shi, idx);
    in[2] = tensor_of(ST_FLOAT64, 2, shi, src);
    REQUIRE(in[0] && in[1] && in[2]);
    h = be->compile(be, p->kernels, p->nkernels);
    REQUIRE(h);
    vals = calloc((size_t)p->graph->nvalues, sizeof *vals);
    REQUIRE(vals);
    for (int i = 0; i < 3; i++) {
        vals[p->graph->inputs[i]] = in[i];
        st_tensor_incref(in[i]);
    }
    CHECK(st_rt_exec_planned(p, be, h, vals, m, NULL) == ST_OK);
    const st_tensor *z = vals[p->graph->outputs[0]];
    REQUIRE(z);
    double want[R * C];
    for (int i = 0; i < R * C; i++)
        want[i] = x[i] * (base_is_input ? 1.0 : 2.0);
    for (int i = 0; i < N * C; i++)
        want[(int)idx[i] * C + i % C] += src[i];
    int bad = 0;
    for (int i = 0; i < R * C; i++)
        bad += tget(z, i) != want[i] + 1.0;
    CHECK(bad == 0);
    if (base_read_after) { /* the base still holds x * 2 */
        const st_tensor *w = vals[p->graph->outputs[1]];
        REQUIRE(w);
        for (int i = 0; i < R * C; i++)
            bad += tget(w, i) != x[i] * 4.0;
        CHECK(bad == 0);
    }
    for (int i = 0; i < R * C; i++) /* the input untouched */
        bad += tget(in[0], i) != x[i];
    CHECK(bad == 0);
out:
    if (vals && p)
        for (int v = 0; v < p->graph->nvalues; v++)
            if (vals[v])
                st_tensor_decref(vals[v]);
    free(vals);
    for (int i = 0; i < 3; i++)
        if (in[i])
            st_tensor_decref(in[i]);
    if (h)
        be->release(be, h);
    st_mem_plan_free(m);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

static void test_e2e_scatter_add(void)
{
    st_test_name = "e2e scatter_add";
    enum { R = 4, C = 3, IR = 2, IC = 3, SR = 3, SC = 4 };
    int64_t shs[2] = {R, C}, shi[2] = {IR, IC}, shsrc[2] = {SR, SC};
    st_graph *g = st_ir_graph_new();
    st_kprog *p = NULL;
    st_tensor *in[3] = {NULL, NULL, NULL}, *y = NULL;
    int xv = input(g, ST_FLOAT64, 2, shs);
    int iv = input(g, ST_INT64, 2, shi);
    int sv = input(g, ST_FLOAT64, 2, shsrc);
    st_attrs a = attrs0();
    a.i[0] = 0;
    int ins[3] = {xv, iv, sv};
    int yv = stmt(g, ST_OP_SCATTER_ADD, ins, 3, &a);
    REQUIRE(yv >= 0);
    st_ir_mark_output(g, yv);
    p = lower_checked(g);
    REQUIRE(p);
    st_kernel_kind ks[2] = {ST_K_ELEMENTWISE, ST_K_ELEMENTWISE};
    REQUIRE(kinds_are(p, ks, 2));
    {
        const st_kernel *k0 = &p->kernels[0], *k1 = &p->kernels[1];
        int ob0 = k0->stores[0].buf, ob1 = k1->stores[0].buf;
        CHECK(k0->nstores == 1 && !k0->stores[0].indexed);
        CHECK(k1->nstores == 1 && k1->stores[0].indexed &&
              k1->stores[0].accumulate && k1->stores[0].idx_dim == 0);
        CHECK(k0->bufs[ob0].value == k1->bufs[ob1].value);
        int odm[2] = {-1, 1};
        CHECK(dimmap_is(&k1->bufs[ob1], odm, 2));
        CHECK(k1->nodes[k1->stores[0].idx_node].kind == ST_KN_LOAD);
        CHECK(st_kernel_hash(k1) != st_kernel_hash(k0));
    }
    double x[R * C], src[SR * SC], idx[IR * IC] = {3, 0, 3, 3, 1, 3};
    for (int i = 0; i < R * C; i++)
        x[i] = 0.25 * i;
    for (int i = 0; i < SR * SC; i++)
        src[i] = 1.0 + i;
    in[0] = tensor_of(ST_FLOAT64, 2, shs, x);
    in[1] = tensor_of(ST_INT64, 2, shi, idx);
    in[2] = tensor_of(ST_FLOAT64, 2, shsrc, src);
    REQUIRE(in[0] && in[1] && in[2]);
    y = run_graph(g, in);
    REQUIRE(y);
    REQUIRE(y->ndim == 2 && y->shape[0] == R && y->shape[1] == C);
    {
        double want[R * C];
        memcpy(want, x, sizeof want);
        for (int i = 0; i < IR; i++)
            for (int j = 0; j < IC; j++)
                want[(int)idx[i * IC + j] * C + j] += src[i * SC + j];
        int bad = 0;
        for (int i = 0; i < R * C; i++)
            bad += tget(y, i) != want[i];
        CHECK(bad == 0);
        for (int i = 0; i < R * C; i++) /* self untouched */
            bad += tget(in[0], i) != x[i];
        CHECK(bad == 0);
    }
    st_tensor_decref(y);
    /* out of bounds */
    ((int64_t *)st_tensor_data(in[1]))[4] = 7;
    st_err_clear();
    y = run_graph(g, in);
    CHECK(y == NULL && st_err_kind() == ST_ERR_INDEX);
    CHECK(strcmp(st_err_msg(), "index 7 is out of bounds for dimension 0 "
                 "with size 4") == 0);
    st_err_clear();
    ((int64_t *)st_tensor_data(in[1]))[4] = 1;
    /* eagerly, into self (in-place scatter_add_), twice */
    {
        st_operand ops[3];
        memset(ops, 0, sizeof ops);
        for (int i = 0; i < 3; i++)
            ops[i].t = in[i];
        st_tensor *given[ST_MAX_OUT] = {in[0], NULL, NULL};
        st_tensor *res[ST_MAX_OUT] = {NULL, NULL, NULL};
        for (int rep = 0; rep < 2; rep++) {
            CHECK(st_rt_eager(ST_OP_SCATTER_ADD, ops, 3, &a, given, res) == 1);
            if (res[0])
                st_tensor_decref(res[0]);
            res[0] = NULL;
        }
        double want[R * C];
        memcpy(want, x, sizeof want);
        for (int i = 0; i < IR; i++)
            for (int j = 0; j < IC; j++)
                want[(int)idx[i * IC + j] * C + j] += 2 * src[i * SC + j];
        int bad = 0;
        for (int i = 0; i < R * C; i++)
            bad += tget(in[0], i) != want[i];
        CHECK(bad == 0);
    }
out:
    if (y)
        st_tensor_decref(y);
    for (int i = 0; i < 3; i++)
        if (in[i])
            st_tensor_decref(in[i]);
    st_kprog_free(p);
    st_ir_graph_free(g);
}

int main(void)
{
    RUN_TEST(test_softmax());
    RUN_TEST(test_log_softmax());
    RUN_TEST(test_layer_norm(ST_FLOAT32));
    RUN_TEST(test_layer_norm(ST_FLOAT16));
    RUN_TEST(test_gelu(false));
    RUN_TEST(test_gelu(true));
    for (int r = 0; r < 3; r++)
        RUN_TEST(test_cross_entropy(r));
    RUN_TEST(test_linear());
    RUN_TEST(test_batched_matmul());
    for (int w = 0; w < 3; w++)
        RUN_TEST(test_matmul_1d(w));
    RUN_TEST(test_broadcast_add());
    RUN_TEST(test_reduce_middle(false));
    RUN_TEST(test_reduce_middle(true));
    RUN_TEST(test_scalar_param());
    RUN_TEST(test_full(ST_FLOAT32));
    RUN_TEST(test_full(ST_INT64));
    RUN_TEST(test_dropout(0.0));
    RUN_TEST(test_dropout(1.0));
    RUN_TEST(test_dropout(0.3));
    RUN_TEST(test_clamp_masked_fill());
    RUN_TEST(test_embedding_index_select());
    RUN_TEST(test_copy_through());

    RUN_TEST(test_e2e_softmax());
    for (int r = 0; r < 3; r++)
        RUN_TEST(test_e2e_cross_entropy(r, false));
    RUN_TEST(test_e2e_cross_entropy(1, true));
    RUN_TEST(test_e2e_linear_1d());
    RUN_TEST(test_e2e_layer_norm());
    RUN_TEST(test_e2e_gelu(false));
    RUN_TEST(test_e2e_gelu(true));
    RUN_TEST(test_e2e_dropout());
    RUN_TEST(test_e2e_reduce_middle(false));
    RUN_TEST(test_e2e_reduce_middle(true));
    RUN_TEST(test_e2e_indexing());
    RUN_TEST(test_e2e_matmul_batched());
    RUN_TEST(test_e2e_resize());
    RUN_TEST(test_e2e_creation());
    RUN_TEST(test_e2e_layer_norm_f16());
    RUN_TEST(test_e2e_scatter_add());
    RUN_TEST(test_planned_scatter_in_place(false, false));
    RUN_TEST(test_planned_scatter_in_place(true, false));
    RUN_TEST(test_planned_scatter_in_place(false, true));

    return st_test_exit_code("test_fusion");
}
