/* tests/c/test_backward.c - tests of ir/backward.c (st_ir_backward,
 * st_ir_forward_saving): forward graphs built with the IR builder (an MLP
 * with a cross-entropy loss, an MLP with log_softmax + gather NLL, a
 * layer_norm + softmax attention block, a path cut by non-differentiable
 * ops, an unused parameter), their backward graphs built and run through
 * fusion + the interp backend + the executor (forward-with-saves, then
 * backward fed the saved values and a ones seed), and every gradient
 * compared with central finite differences of the forward in float64. Also
 * checked: the saved set is minimal on small cases, the structure of the
 * backward graph (inputs, outputs, metas), and bad arguments give errors.
 * Exits non-zero naming each failing case. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_runtime.h"
#include "st_test.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static st_meta meta(st_dtype dt, int nd, int64_t a, int64_t b, int64_t c)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = nd;
    int64_t s[3] = {a, b, c};
    for (int d = 0; d < nd; d++)
        m.shape[d] = s[d];
    return m;
}

static st_tensor *tnew(const st_meta *m)
{
    return st_tensor_empty(st_rt_cpu(), m->dtype, m->ndim, m->shape);
}

static double *f64(st_tensor *t) { return (double *)st_tensor_data(t); }

/* ---- running graphs ---- */

typedef struct {
    st_kprog *p;
    st_backend *be;
    void *h;
} prog;

static bool prog_make(prog *pr, const st_graph *g)
{
    memset(pr, 0, sizeof *pr);
    pr->p = st_fuse_lower(g, NULL);
    if (!pr->p)
        return false;
    pr->be = st_interp_backend();
    pr->h = pr->be->compile(pr->be, pr->p->kernels, pr->p->nkernels);
    return pr->h != NULL;
}

static void prog_free(prog *pr)
{
    if (pr->h)
        pr->be->release(pr->be, pr->h);
    st_kprog_free(pr->p);
    memset(pr, 0, sizeof *pr);
}

/* Runs with inputs bound; outs[0..noutputs) new references. */
static bool prog_run(prog *pr, st_tensor **inputs, st_tensor **outs)
{
    const st_graph *g = pr->p->graph;
    st_tensor **vals = calloc((size_t)g->nvalues, sizeof *vals);
    if (!vals)
        return false;
    for (int i = 0; i < g->ninputs; i++) {
        vals[g->inputs[i]] = inputs[i];
        st_tensor_incref(inputs[i]);
    }
    bool ok = st_rt_exec(pr->p, pr->be, pr->h, vals) == ST_OK;
    for (int k = 0; k < g->noutputs; k++) {
        outs[k] = ok ? vals[g->outputs[k]] : NULL;
        if (outs[k])
            st_tensor_incref(outs[k]);
        else
            ok = false;
    }
    for (int v = 0; v < g->nvalues; v++)
        st_tensor_decref(vals[v]);
    free(vals);
    return ok;
}

static double tget(const st_tensor *t, int64_t lin)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d] > 0 ? t->shape[d] : 1;
        off += (lin % n) * t->strides[d];
        lin /= n;
    }
    return f64((st_tensor *)t)[off];
}

/* ---- the check: backward graph vs finite differences ----
 * g: forward graph (output 0 the loss), inputs in graph order with data,
 * wrt: input indices (graph input positions) to differentiate. */
static void check_case(const char *name, st_graph *g, st_tensor **inputs,
                       const int *wrt_pos, int nwrt, int expect_nsaved)
{
    st_test_name = name;
    st_err_clear();
    int wrt[16];
    for (int k = 0; k < nwrt; k++)
        wrt[k] = g->inputs[wrt_pos[k]];
    st_graph *bwd = NULL;
    st_ir_bwd_info info;
    memset(&info, 0, sizeof info);
    CHECK(st_ir_backward(g, wrt, nwrt, &bwd, &info) == ST_OK);
    if (!bwd)
        return;
    CHECK(st_ir_verify(bwd) == ST_OK);
    CHECK(bwd->ninputs == info.nsaved + 1);
    CHECK(info.grad_input == info.nsaved);
    CHECK(bwd->noutputs == nwrt);
    if (expect_nsaved >= 0 && info.nsaved != expect_nsaved) {
        FAIL("%d saved values, expected %d", info.nsaved, expect_nsaved);
    }
    for (int k = 0; k < info.nsaved; k++)
        CHECK(info.saved[k] != info.loss ||
              g->values[info.loss].producer >= 0);
    for (int k = 0; k < nwrt && k < bwd->noutputs; k++) {
        const st_meta *a = &bwd->values[bwd->outputs[k]].meta;
        const st_meta *b = &g->values[wrt[k]].meta;
        CHECK(a->dtype == b->dtype && a->ndim == b->ndim &&
              !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim));
    }
    if (getenv("ST_TEST_VERBOSE")) {
        char *s = st_ir_print(bwd);
        fprintf(stderr, "%s\n", s ? s : "?");
        free(s);
    }
    st_graph *fs = st_ir_forward_saving(g, &info);
    CHECK(fs != NULL);
    prog pf = {0}, pfs = {0}, pb = {0};
    st_tensor *fouts[64] = {0}, *bin[64] = {0}, *bouts[16] = {0};
    if (!fs || fs->noutputs > 64 || info.nsaved + 1 > 64)
        goto out;
    CHECK(fs->noutputs == g->noutputs + info.nsaved);
    if (!prog_make(&pf, g) || !prog_make(&pfs, fs) || !prog_make(&pb, bwd)) {
        FAIL("lowering: %s", st_err_msg());
        goto out;
    }
    if (!prog_run(&pfs, inputs, fouts)) {
        FAIL("forward: %s", st_err_msg());
        goto out;
    }
    for (int k = 0; k < info.nsaved; k++) {
        bin[k] = fouts[g->noutputs + k];
        st_tensor_incref(bin[k]);
    }
    st_meta lm = g->values[info.loss].meta;
    bin[info.nsaved] = tnew(&lm);
    for (int64_t i = 0; i < st_tensor_numel(bin[info.nsaved]); i++)
        f64(bin[info.nsaved])[i] = 1.0;
    if (!prog_run(&pb, bin, bouts)) {
        FAIL("backward: %s", st_err_msg());
        goto out;
    }
    /* finite differences of sum(loss) */
    double worst = 0;
    for (int k = 0; k < nwrt; k++) {
        st_tensor *x = inputs[wrt_pos[k]];
        for (int64_t i = 0; i < st_tensor_numel(x); i++) {
            double orig = f64(x)[i], h = 1e-6, lp = 0, lmn = 0;
            for (int sgn = 0; sgn < 2; sgn++) {
                f64(x)[i] = orig + (sgn ? -h : h);
                st_tensor *o[8] = {0};
                if (!prog_run(&pf, inputs, o)) {
                    CHECK(!"finite-difference run");
                    f64(x)[i] = orig;
                    goto out;
                }
                double sum = 0;
                for (int64_t j = 0; j < st_tensor_numel(o[0]); j++)
                    sum += tget(o[0], j);
                if (sgn)
                    lmn = sum;
                else
                    lp = sum;
                for (int j = 0; j < g->noutputs; j++)
                    st_tensor_decref(o[j]);
            }
            f64(x)[i] = orig;
            double fd = (lp - lmn) / (2 * h), an = tget(bouts[k], i);
            double err = fabs(fd - an) / (1e-4 + fabs(fd));
            if (err > worst)
                worst = err;
            if (err > 1e-4) {
                FAIL("d/d(input %d)[%lld]: backward %.9g, finite differences %.9g",
                     wrt_pos[k], (long long)i, an, fd);
                goto out;
            }
        }
    }
    printf("ok %-28s saved %2d  bwd stmts %3d  worst rel err %.2e\n", name,
           info.nsaved, bwd->nstmts, worst);
out:
    for (int k = 0; k < 64; k++) {
        st_tensor_decref(fouts[k]);
        st_tensor_decref(bin[k]);
    }
    for (int k = 0; k < 16; k++)
        st_tensor_decref(bouts[k]);
    prog_free(&pf);
    prog_free(&pfs);
    prog_free(&pb);
    st_ir_graph_free(fs);
    st_ir_graph_free(bwd);
    st_ir_bwd_info_clear(&info);
}

/* ---- graph building helpers ---- */

static st_attrs A(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

static int S(st_graph *g, st_op_id op, int a, int b, const st_attrs *at)
{
    int in[2] = {a, b}, out[ST_MAX_OUT];
    st_attrs z = A();
    if (st_ir_add_stmt(g, op, in, b < 0 ? 1 : 2, at ? at : &z, out) < 0) {
        FAIL("building %s: %s", st_op(op)->name, st_err_msg());
        exit(1);
    }
    return out[0];
}

static st_tensor *rand_input(const st_meta *m, int64_t ihi)
{
    st_tensor *t = tnew(m);
    for (int64_t i = 0; i < st_tensor_numel(t); i++) {
        if (m->dtype == ST_INT64)
            ((int64_t *)st_tensor_data(t))[i] = (int64_t)(urand() * ihi);
        else
            f64(t)[i] = 2.0 * urand() - 1.0;
    }
    return t;
}

static void free_inputs(st_tensor **in, int n)
{
    for (int k = 0; k < n; k++)
        st_tensor_decref(in[k]);
}

/* x[4,6] -> linear(W1,b1) -> relu -> linear(W2,b2) -> loss */
static void test_mlp(bool nll)
{
    st_test_name = nll ? "mlp_log_softmax_nll" : "mlp_cross_entropy";
    st_graph *g = st_ir_graph_new();
    st_meta mx = meta(ST_FLOAT64, 2, 4, 6, 0), mw1 = meta(ST_FLOAT64, 2, 6, 8, 0),
            mb1 = meta(ST_FLOAT64, 1, 8, 0, 0), mw2 = meta(ST_FLOAT64, 2, 8, 5, 0),
            mb2 = meta(ST_FLOAT64, 1, 5, 0, 0), mt = meta(ST_INT64, 1, 4, 0, 0);
    int x = st_ir_add_input(g, &mx, false), w1 = st_ir_add_input(g, &mw1, true),
        b1 = st_ir_add_input(g, &mb1, true), w2 = st_ir_add_input(g, &mw2, true),
        b2 = st_ir_add_input(g, &mb2, true), t = st_ir_add_input(g, &mt, false);
    int h = S(g, ST_OP_RELU, S(g, ST_OP_ADD, S(g, ST_OP_MATMUL, x, w1, NULL), b1,
                               NULL), -1, NULL);
    int z = S(g, ST_OP_ADD, S(g, ST_OP_MATMUL, h, w2, NULL), b2, NULL);
    int loss;
    if (!nll) {
        st_attrs a = A();
        a.i[0] = -100;
        a.i[1] = 1;
        int in[2] = {z, t}, out[ST_MAX_OUT];
        CHECK(st_ir_add_stmt(g, ST_OP_CROSS_ENTROPY, in, 2, &a, out) >= 0);
        loss = out[0];
    } else {
        st_attrs a = A();
        a.i[0] = 1;
        int ls = S(g, ST_OP_LOG_SOFTMAX, z, -1, &a);
        st_attrs u = A();
        u.i[0] = 1;
        int ti = S(g, ST_OP_UNSQUEEZE, t, -1, &u);
        st_attrs ga = A();
        ga.i[0] = 1;
        int picked = S(g, ST_OP_GATHER, ls, ti, &ga);
        int m = S(g, ST_OP_MEAN, picked, -1, NULL);
        loss = S(g, ST_OP_MUL, m, st_ir_add_const(g, ST_FLOAT64, -1.0, -1), NULL);
    }
    st_ir_mark_output(g, loss);
    st_tensor *in[6] = {rand_input(&mx, 0), rand_input(&mw1, 0),
                        rand_input(&mb1, 0), rand_input(&mw2, 0),
                        rand_input(&mb2, 0), rand_input(&mt, 5)};
    int wrt[5] = {1, 2, 3, 4, 0};
    check_case(st_test_name, g, in, wrt, 5, -1);
    free_inputs(in, 6);
    st_ir_graph_free(g);
}

/* x[2,4,8] -> layer_norm(w, b) -> q, k, v -> softmax(q k^T / sqrt(8)) v
 * -> residual -> reshape -> mean of squares */
static void test_attention(void)
{
    st_test_name = "layer_norm_attention";
    st_graph *g = st_ir_graph_new();
    st_meta mx = meta(ST_FLOAT64, 3, 2, 4, 8), mv = meta(ST_FLOAT64, 1, 8, 0, 0),
            mw = meta(ST_FLOAT64, 2, 8, 8, 0);
    int x = st_ir_add_input(g, &mx, false), lw = st_ir_add_input(g, &mv, true),
        lb = st_ir_add_input(g, &mv, true), wq = st_ir_add_input(g, &mw, true),
        wk = st_ir_add_input(g, &mw, true), wv = st_ir_add_input(g, &mw, true);
    st_attrs la = A();
    la.ndims = 1;
    la.f[0] = 1e-5;
    la.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    int lin[3] = {x, lw, lb}, lout[ST_MAX_OUT];
    CHECK(st_ir_add_stmt(g, ST_OP_LAYER_NORM, lin, 3, &la, lout) >= 0);
    int ln = lout[0];
    int q = S(g, ST_OP_MATMUL, ln, wq, NULL), k = S(g, ST_OP_MATMUL, ln, wk, NULL),
        v = S(g, ST_OP_MATMUL, ln, wv, NULL);
    st_attrs pa = A();
    pa.ndims = 3;
    pa.dims[0] = 0;
    pa.dims[1] = 2;
    pa.dims[2] = 1;
    int kt = S(g, ST_OP_PERMUTE, k, -1, &pa);
    int s = S(g, ST_OP_MUL, S(g, ST_OP_MATMUL, q, kt, NULL),
              st_ir_add_const(g, ST_FLOAT64, 1.0 / sqrt(8.0), 0), NULL);
    st_attrs sa = A();
    sa.i[0] = -1;
    int p = S(g, ST_OP_SOFTMAX, s, -1, &sa);
    int o = S(g, ST_OP_ADD, S(g, ST_OP_MATMUL, p, v, NULL), x, NULL);
    st_attrs ra = A();
    ra.ndims = 2;
    ra.dims[0] = 8;
    ra.dims[1] = 8;
    int o2 = S(g, ST_OP_RESHAPE, o, -1, &ra);
    int loss = S(g, ST_OP_MEAN, S(g, ST_OP_MUL, o2, o2, NULL), -1, NULL);
    st_ir_mark_output(g, loss);
    st_ir_mark_output(g, p); /* a second output: not differentiated */
    st_tensor *in[6];
    for (int i = 0; i < 6; i++)
        in[i] = rand_input(&g->values[g->inputs[i]].meta, 0);
    int wrt[6] = {0, 1, 2, 3, 4, 5};
    check_case(st_test_name, g, in, wrt, 6, -1);
    free_inputs(in, 6);
    st_ir_graph_free(g);
}

/* q @ k^T (k^T a transpose of the last two dims): k's gradient, T(q^T G)
 * in the backward graph, is lowered as the product G^T q itself (fusion's
 * swap rule), not a strided transpose of q^T G (which a later reshape
 * would copy element by element); fusion off keeps the transpose; the
 * gradient is right (finite differences) */
static void test_transposed_operand(void)
{
    st_test_name = "transposed_operand";
    st_graph *g = st_ir_graph_new();
    st_meta mq = meta(ST_FLOAT64, 3, 2, 5, 3), mk = meta(ST_FLOAT64, 3, 2, 4, 3),
            mw = meta(ST_FLOAT64, 3, 2, 5, 4);
    int q = st_ir_add_input(g, &mq, true), k = st_ir_add_input(g, &mk, true),
        w = st_ir_add_input(g, &mw, false);
    st_attrs pa = A();
    pa.ndims = 3;
    pa.dims[0] = 0;
    pa.dims[1] = 2;
    pa.dims[2] = 1;
    int kt = S(g, ST_OP_PERMUTE, k, -1, &pa);
    int sc = S(g, ST_OP_MUL, S(g, ST_OP_MATMUL, q, kt, NULL), w, NULL);
    st_ir_mark_output(g, S(g, ST_OP_SUM, sc, -1, NULL));
    st_tensor *in[3];
    for (int i = 0; i < 3; i++)
        in[i] = rand_input(&g->values[g->inputs[i]].meta, 0);
    int wrt[2] = {0, 1};
    check_case(st_test_name, g, in, wrt, 2, -1);
    int wv[2] = {q, k};
    st_graph *bwd = NULL;
    st_ir_bwd_info info;
    memset(&info, 0, sizeof info);
    CHECK(st_ir_backward(g, wv, 2, &bwd, &info) == ST_OK);
    for (int fused = 0; bwd && fused < 2; fused++) {
        st_fuse_options o = {fused, fused, fused, 0};
        st_kprog *p = st_fuse_lower(bwd, &o);
        CHECK(p != NULL);
        if (!p)
            continue;
        const st_graph *pg = p->graph;
        const st_value *gk = &pg->values[pg->outputs[1]];
        int op = gk->kind == ST_VAL_STMT ? (int)pg->stmts[gk->producer].op : -1;
        CHECK(op == (int)(fused ? ST_OP_MATMUL : ST_OP_PERMUTE));
        st_kprog_free(p);
    }
    st_ir_graph_free(bwd);
    st_ir_bwd_info_clear(&info);
    free_inputs(in, 3);
    st_ir_graph_free(g);
}

/* loss = sum(x * (x > 0) + exp(w)) with an unused param u: the comparison
 * stops its path, u gets zeros; saved: exp(w) only... and x */
static void test_cut_and_unused(void)
{
    st_test_name = "cut_and_unused";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta(ST_FLOAT64, 2, 3, 4, 0);
    int x = st_ir_add_input(g, &m, true), w = st_ir_add_input(g, &m, true);
    st_ir_add_input(g, &m, true); /* u */
    st_attrs ca = A();
    ca.dtype = ST_FLOAT64;
    int mask = S(g, ST_OP_CAST, S(g, ST_OP_GT, x, st_ir_add_const(g, ST_FLOAT64, 0, 0),
                                  NULL), -1, &ca);
    int y = S(g, ST_OP_ADD, S(g, ST_OP_MUL, x, mask, NULL), S(g, ST_OP_EXP, w, -1, NULL),
              NULL);
    int loss = S(g, ST_OP_SUM, y, -1, NULL);
    st_ir_mark_output(g, loss);
    st_tensor *in[3] = {rand_input(&m, 0), rand_input(&m, 0), rand_input(&m, 0)};
    int wrt[3] = {0, 1, 2};
    /* d/dx = mask (saved), d/dw = exp(w) (saved); x itself is not read */
    check_case(st_test_name, g, in, wrt, 3, 2);
    free_inputs(in, 3);
    st_ir_graph_free(g);
}

/* add + broadcast + sum: nothing needs saving */
static void test_nothing_saved(void)
{
    st_test_name = "nothing_saved";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta(ST_FLOAT64, 2, 3, 4, 0), mb = meta(ST_FLOAT64, 1, 4, 0, 0);
    int x = st_ir_add_input(g, &m, false), b = st_ir_add_input(g, &mb, true);
    int y = S(g, ST_OP_SUB, S(g, ST_OP_ADD, x, b, NULL), b, NULL);
    int loss = S(g, ST_OP_MEAN, S(g, ST_OP_ADD, y, x, NULL), -1, NULL);
    st_ir_mark_output(g, loss);
    st_tensor *in[2] = {rand_input(&m, 0), rand_input(&mb, 0)};
    int wrt[2] = {0, 1};
    check_case(st_test_name, g, in, wrt, 2, 0);
    free_inputs(in, 2);
    st_ir_graph_free(g);
}

static void test_bad_input(void)
{
    st_test_name = "bad_input";
    st_graph *bwd = (st_graph *)1;
    st_ir_bwd_info info;
    memset(&info, 0, sizeof info);
    CHECK(st_ir_backward(NULL, NULL, 0, &bwd, &info) != ST_OK && bwd == NULL);
    st_graph *g = st_ir_graph_new();
    st_meta m = meta(ST_FLOAT64, 1, 3, 0, 0), mi = meta(ST_INT64, 1, 3, 0, 0);
    int x = st_ir_add_input(g, &m, true);
    CHECK(st_ir_backward(g, &x, 1, &bwd, &info) != ST_OK); /* no output */
    int xi = st_ir_add_input(g, &mi, false);
    st_ir_mark_output(g, xi);
    CHECK(st_ir_backward(g, &x, 1, &bwd, &info) != ST_OK); /* int loss */
    st_ir_graph_free(g);
    g = st_ir_graph_new();
    x = st_ir_add_input(g, &m, true);
    int y = S(g, ST_OP_SUM, x, -1, NULL);
    st_ir_mark_output(g, y);
    int bad[2] = {x, 99};
    CHECK(st_ir_backward(g, bad, 2, &bwd, &info) != ST_OK && bwd == NULL);
    int neg = -1;
    CHECK(st_ir_backward(g, &neg, 1, &bwd, &info) != ST_OK);
    CHECK(st_ir_backward(g, NULL, 1, &bwd, &info) != ST_OK);
    CHECK(st_ir_backward(g, &x, 1, NULL, &info) != ST_OK);
    CHECK(st_ir_forward_saving(NULL, &info) == NULL);
    /* the loss itself as wrt: its gradient is the seed */
    CHECK(st_ir_backward(g, &y, 1, &bwd, &info) == ST_OK && bwd &&
          bwd->noutputs == 1 && bwd->outputs[0] == bwd->inputs[info.grad_input]);
    st_ir_graph_free(bwd);
    st_ir_bwd_info_clear(&info);
    /* wrt with no graph in between: x is the loss's only input */
    CHECK(st_ir_backward(g, &x, 1, &bwd, &info) == ST_OK && info.nsaved == 0);
    st_ir_graph_free(bwd);
    st_ir_bwd_info_clear(&info);
    st_ir_graph_free(g);
    st_err_clear();
}

/* ---- trace capture: eager ops and views traced, then the traced graph's
 * backward compared with the eager tape (st_ad_grad) ---- */

static st_tensor *eager(st_op_id op, st_tensor *a, st_tensor *b,
                        const st_attrs *at)
{
    st_operand in[2] = {{.t = a}, {.t = b}};
    st_tensor *out[ST_MAX_OUT] = {0};
    st_attrs z = A();
    int n = st_rt_eager(op, in, b ? 2 : 1, at ? at : &z, NULL, out);
    CHECK(n == 1);
    return n == 1 ? out[0] : NULL;
}

static st_tensor *eager_scalar(st_op_id op, st_tensor *a, double v)
{
    st_operand in[2] = {{.t = a}, {.t = NULL, .sdtype = ST_FLOAT64, .f = v}};
    st_tensor *out[ST_MAX_OUT] = {0};
    st_attrs z = A();
    int n = st_rt_eager(op, in, 2, &z, NULL, out);
    CHECK(n == 1);
    return n == 1 ? out[0] : NULL;
}

static void test_trace_vs_tape(void)
{
    st_test_name = "trace_vs_tape";
    st_meta mx = meta(ST_FLOAT64, 2, 4, 6, 0), mw = meta(ST_FLOAT64, 2, 6, 3, 0),
            mb = meta(ST_FLOAT64, 1, 3, 0, 0);
    st_tensor *x = rand_input(&mx, 0), *w = rand_input(&mw, 0),
              *b = rand_input(&mb, 0);
    w->requires_grad = b->requires_grad = true;
    CHECK(st_rt_trace_begin() == ST_OK);
    CHECK(st_rt_trace_begin() != ST_OK); /* no nesting */
    st_err_clear();
    st_tensor *h = eager(ST_OP_MATMUL, x, w, NULL);
    st_tensor *h2 = eager(ST_OP_ADD, h, b, NULL);
    st_tensor *ht = st_tensor_transpose(h2, 0, 1);       /* a view */
    st_tensor *sl = st_tensor_slice(ht, 1, 1, 4, 1);    /* another */
    st_tensor *th = eager(ST_OP_TANH, sl, NULL, NULL);
    st_tensor *sc = eager_scalar(ST_OP_MUL, th, 3.0);
    /* in-place: sc += b-dependent value; sc maps to a new value */
    st_tensor *e = eager(ST_OP_EXP, sc, NULL, NULL);
    st_operand ai[2] = {{.t = sc}, {.t = e}};
    st_tensor *given[ST_MAX_OUT] = {sc}, *res[ST_MAX_OUT] = {0};
    CHECK(st_rt_eager(ST_OP_ADD, ai, 2, NULL, given, res) == 1);
    st_tensor_decref(res[0]);
    st_tensor *loss = eager(ST_OP_MEAN, sc, NULL, NULL);
    st_tensor **ins = NULL;
    int nins = 0;
    st_graph *g = st_rt_trace_end(&loss, 1, &ins, &nins);
    CHECK(g != NULL && nins == 3);
    CHECK(!st_rt_trace_active());
    if (g && nins == 3) {
        CHECK(ins[0] == x && ins[1] == w && ins[2] == b);
        CHECK(g->values[g->inputs[0]].kind == ST_VAL_INPUT &&
              g->values[g->inputs[1]].kind == ST_VAL_PARAM);
        /* the traced graph re-run gives the eager loss */
        prog pf = {0};
        st_tensor *o[4] = {0};
        CHECK(prog_make(&pf, g) && prog_run(&pf, ins, o));
        if (o[0])
            CHECK(fabs(tget(o[0], 0) - tget(loss, 0)) < 1e-12);
        st_tensor_decref(o[0]);
        prog_free(&pf);
        /* backward graph vs the tape */
        st_tensor *tape[2] = {0};
        st_tensor *wrt_t[2] = {w, b};
        CHECK(st_ad_grad(&loss, NULL, 1, wrt_t, 2, true, false, tape) == ST_OK);
        int wrt[2] = {g->inputs[1], g->inputs[2]};
        st_graph *bwd = NULL;
        st_ir_bwd_info info;
        CHECK(st_ir_backward(g, wrt, 2, &bwd, &info) == ST_OK);
        st_graph *fs = bwd ? st_ir_forward_saving(g, &info) : NULL;
        prog pfs = {0}, pb = {0};
        st_tensor *fo[32] = {0}, *bi[32] = {0}, *bo[2] = {0};
        if (fs && info.nsaved < 31 && prog_make(&pfs, fs) && prog_make(&pb, bwd) &&
            prog_run(&pfs, ins, fo)) {
            for (int k = 0; k < info.nsaved; k++) {
                bi[k] = fo[1 + k];
                st_tensor_incref(bi[k]);
            }
            bi[info.nsaved] = tnew(&g->values[info.loss].meta);
            f64(bi[info.nsaved])[0] = 1.0;
            CHECK(prog_run(&pb, bi, bo));
            for (int k = 0; k < 2 && bo[k] && tape[k]; k++)
                for (int64_t i = 0; i < st_tensor_numel(tape[k]); i++)
                    CHECK(fabs(tget(bo[k], i) - tget(tape[k], i)) <
                          1e-10 * (1 + fabs(tget(tape[k], i))));
        } else {
            CHECK(!"backward of the trace");
        }
        for (int k = 0; k < 32; k++) {
            st_tensor_decref(fo[k]);
            st_tensor_decref(bi[k]);
        }
        st_tensor_decref(bo[0]);
        st_tensor_decref(bo[1]);
        st_tensor_decref(tape[0]);
        st_tensor_decref(tape[1]);
        prog_free(&pfs);
        prog_free(&pb);
        st_ir_graph_free(fs);
        st_ir_graph_free(bwd);
        st_ir_bwd_info_clear(&info);
        printf("ok %-28s %d statements\n", st_test_name, g->nstmts);
    }
    for (int k = 0; k < nins; k++)
        st_tensor_decref(ins[k]);
    free(ins);
    st_ir_graph_free(g);
    /* a failed trace: a custom node; then abort and end without a trace */
    CHECK(st_rt_trace_begin() == ST_OK);
    st_tensor *y = eager(ST_OP_EXP, w, NULL, NULL);
    st_rt_trace_fail("custom node here");
    g = st_rt_trace_end(&y, 1, &ins, &nins);
    CHECK(g == NULL && ins == NULL && strstr(st_err_msg(), "custom node"));
    CHECK(st_rt_trace_end(&y, 1, &ins, &nins) == NULL);
    CHECK(st_rt_trace_begin() == ST_OK);
    st_tensor_decref(eager(ST_OP_EXP, y, NULL, NULL));
    st_rt_trace_abort();
    CHECK(!st_rt_trace_active());
    st_err_clear();
    st_tensor *all[] = {x, w, b, h, h2, ht, sl, th, sc, e, loss, y};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        st_tensor_decref(all[k]);
}

/* A tied embedding (BERT's word embeddings, also the MLM decoder): the
 * weight's two gradients are summed by scattering the embedding's rows into
 * the decoder's dense gradient: no zero fill, no dense add in the graph. */
static void test_tied_embedding(void)
{
    st_test_name = "tied_embedding";
    st_graph *g = st_ir_graph_new();
    st_meta mw = meta(ST_FLOAT64, 2, 6, 4, 0), mi = meta(ST_INT64, 1, 5, 0, 0);
    int w = st_ir_add_input(g, &mw, true), idx = st_ir_add_input(g, &mi, false);
    st_attrs ea = A();
    ea.i[0] = -1;
    int e = S(g, ST_OP_EMBEDDING, w, idx, &ea);
    st_attrs ta = A();
    ta.ndims = 2;
    ta.dims[0] = 1;
    ta.dims[1] = 0;
    int z = S(g, ST_OP_MATMUL, e, S(g, ST_OP_PERMUTE, w, -1, &ta), NULL);
    int loss = S(g, ST_OP_SUM, S(g, ST_OP_MUL, z, z, NULL), -1, NULL);
    st_ir_mark_output(g, loss);
    st_graph *bwd = NULL;
    st_ir_bwd_info info;
    memset(&info, 0, sizeof info);
    CHECK(st_ir_backward(g, &w, 1, &bwd, &info) == ST_OK && bwd);
    if (bwd) {
        int full = 0, scat = 0, adds_w = 0;
        for (int i = 0; i < bwd->nstmts; i++) {
            const st_stmt *s = &bwd->stmts[i];
            full += s->op == ST_OP_FULL;
            scat += s->op == ST_OP_SCATTER_ADD;
            adds_w += s->op == ST_OP_ADD &&
                      bwd->values[s->out[0]].meta.ndim == 2 &&
                      bwd->values[s->out[0]].meta.shape[0] == 6;
        }
        CHECK(full == 0 && scat == 1 && adds_w == 0);
        st_ir_graph_free(bwd);
        st_ir_bwd_info_clear(&info);
    }
    st_tensor *in[2] = {rand_input(&mw, 0), rand_input(&mi, 6)};
    ((int64_t *)st_tensor_data(in[1]))[3] = ((int64_t *)st_tensor_data(in[1]))[1];
    int wrt[1] = {0};
    check_case(st_test_name, g, in, wrt, 1, -1); /* finite differences, repeated row */
    free_inputs(in, 2);
    st_ir_graph_free(g);
}

/* Rematerialization: loss = sum(x * (1 + erf(x * 0.7071))) (GELU's
 * shape): the VJPs read x, the erf term t and erf's input u; t and u are
 * pointwise in x, which is saved anyway, and only pointwise statements
 * read them: only x is saved, the backward replays u and t. Then a value
 * a product reads stays saved even when it is pointwise in a saved one:
 * loss = sum((x * 3) @ W) + sum(x * x) saves x, x * 3 and W. */
static void test_remat(void)
{
    st_test_name = "remat_gelu_shape";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta(ST_FLOAT64, 2, 3, 4, 0);
    int x = st_ir_add_input(g, &m, true);
    int u = S(g, ST_OP_MUL, x, st_ir_add_const(g, ST_FLOAT64, 0.7071067811865476, 0), NULL);
    int t = S(g, ST_OP_ADD, S(g, ST_OP_ERF, u, -1, NULL), st_ir_add_const(g, ST_FLOAT64, 1.0, 1),
              NULL);
    int loss = S(g, ST_OP_SUM, S(g, ST_OP_MUL, x, t, NULL), -1, NULL);
    st_ir_mark_output(g, loss);
    st_tensor *in[1] = {rand_input(&m, 0)};
    int wrt[1] = {0};
    check_case(st_test_name, g, in, wrt, 1, 1);
    free_inputs(in, 1);
    st_ir_graph_free(g);

    st_test_name = "remat_not_into_a_product";
    g = st_ir_graph_new();
    st_meta mw = meta(ST_FLOAT64, 2, 4, 5, 0);
    x = st_ir_add_input(g, &m, true);
    int w = st_ir_add_input(g, &mw, true);
    int a = S(g, ST_OP_MUL, x, st_ir_add_const(g, ST_FLOAT64, 3.0, 3), NULL);
    int z = S(g, ST_OP_SUM, S(g, ST_OP_MATMUL, a, w, NULL), -1, NULL);
    loss = S(g, ST_OP_ADD, z, S(g, ST_OP_SUM, S(g, ST_OP_MUL, x, x, NULL), -1, NULL), NULL);
    st_ir_mark_output(g, loss);
    st_tensor *in2[2] = {rand_input(&m, 0), rand_input(&mw, 0)};
    int wrt2[2] = {0, 1};
    check_case(st_test_name, g, in2, wrt2, 2, 3);
    free_inputs(in2, 2);
    st_ir_graph_free(g);
}

int main(void)
{
    st_ir_autodiff_init();
    RUN_TEST(test_mlp(false));
    RUN_TEST(test_mlp(true));
    RUN_TEST(test_attention());
    RUN_TEST(test_transposed_operand());
    RUN_TEST(test_cut_and_unused());
    RUN_TEST(test_nothing_saved());
    RUN_TEST(test_remat());
    RUN_TEST(test_bad_input());
    RUN_TEST(test_trace_vs_tape());
    RUN_TEST(test_tied_embedding());
    return st_test_exit_code("test_backward");
}
