/* tests/c/test_cfn.c - tests of runtime/cfn.c (compiled functions) and
 * ir/backward.c's st_ir_backward_multi and regions: graphs built with the
 * IR builder are compiled by interp (and llvm when built) and run; values
 * are checked against plain C; the backward of a two-output graph (run
 * through the tape node a run attaches, st_ad_grad) is checked against
 * central finite differences of sum(out0*g0) + sum(out1*g1); a
 * stop-gradient region cuts a path; a custom-gradient region's backward
 * graph replaces its statements' VJPs; writeback copies an output into an
 * input; bad inputs give errors naming the input; the "eager" backend
 * matches. Trace capture from C: an aborted trace restores an input
 * written in place, st_rt_trace_end2 reports it and the compiled function
 * writes it back, a region captured through the region API gives its
 * traced backward's gradient. Exits non-zero naming each failing case. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_runtime.h"
#ifdef ST_HAVE_LLVM
#include "st_llvm.h"
#include "st_test.h"
#endif

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static st_meta meta2(st_dtype dt, int64_t a, int64_t b)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = 2;
    m.shape[0] = a;
    m.shape[1] = b;
    return m;
}

static st_tensor *rand_t(const st_meta *m)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), m->dtype, m->ndim, m->shape);
    double *d = st_tensor_data(t);
    for (int64_t i = 0; i < st_tensor_numel(t); i++)
        d[i] = urand();
    return t;
}

static double *f64(st_tensor *t) { return (double *)st_tensor_data(t); }

/* f(x, w, b) = (tanh(x @ w + b), sum(softmax(x @ w, dim=1) * x @ w))
 * plus an int output (argmax) that has no gradient; x [3,4], w [4,5],
 * b [1,5], float64. */
static st_graph *two_out_graph(void)
{
    st_graph *g = st_ir_graph_new();
    st_meta mx = meta2(ST_FLOAT64, 3, 4), mw = meta2(ST_FLOAT64, 4, 5),
            mb = meta2(ST_FLOAT64, 1, 5);
    int x = st_ir_add_input(g, &mx, false);
    int w = st_ir_add_input(g, &mw, true);
    int b = st_ir_add_input(g, &mb, true);
    st_ir_builder B = {g, false};
    int mm[2] = {x, w};
    int h = st_ir_emit(&B, ST_OP_MATMUL, mm, 2, NULL);
    int hb[2] = {h, b};
    int a = st_ir_emit(&B, ST_OP_ADD, hb, 2, NULL);
    int t = st_ir_emit(&B, ST_OP_TANH, &a, 1, NULL);
    st_attrs sa;
    memset(&sa, 0, sizeof sa);
    sa.i[0] = 1;
    int sm = st_ir_emit(&B, ST_OP_SOFTMAX, &h, 1, &sa);
    int p2[2] = {sm, h};
    int pr = st_ir_emit(&B, ST_OP_MUL, p2, 2, NULL);
    int s = st_ir_emit(&B, ST_OP_SUM, &pr, 1, NULL);
    st_attrs am;
    memset(&am, 0, sizeof am);
    am.dims[0] = 1;
    am.ndims = 1;
    int arg = st_ir_emit(&B, ST_OP_ARGMAX, &t, 1, &am);
    if (B.failed) {
        st_ir_graph_free(g);
        return NULL;
    }
    st_ir_mark_output(g, t);
    st_ir_mark_output(g, s);
    st_ir_mark_output(g, arg);
    return g;
}

/* The same function in plain C: out0[3,5], out1 scalar. */
static void two_out_ref(const double *x, const double *w, const double *b,
                        double *o0, double *o1)
{
    double h[15];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += x[i * 4 + k] * w[k * 5 + j];
            h[i * 5 + j] = acc;
            o0[i * 5 + j] = tanh(acc + b[j]);
        }
    double s = 0;
    for (int i = 0; i < 3; i++) {
        double mx = -1e300, z = 0;
        for (int j = 0; j < 5; j++)
            mx = fmax(mx, h[i * 5 + j]);
        for (int j = 0; j < 5; j++)
            z += exp(h[i * 5 + j] - mx);
        for (int j = 0; j < 5; j++)
            s += exp(h[i * 5 + j] - mx) / z * h[i * 5 + j];
    }
    *o1 = s;
}

static void test_two_outputs(const char *backend)
{
    static char name[64];
    snprintf(name, sizeof name, "two_outputs/%s", backend);
    st_test_name = name;
    st_graph *g = two_out_graph();
    CHECK(g != NULL);
    if (!g)
        return;
    bool rg[3] = {false, true, true};
    st_rt_cfn_opts o = {.backend = backend, .input_requires_grad = rg,
                        .nvisible = 3};
    st_rt_cfn *f = st_rt_cfn_new(g, &o);
    CHECK(f != NULL);
    if (!f)
        return;
    bool compiled = strcmp(backend, "eager") != 0;
    CHECK(st_rt_cfn_num_inputs(f) == 3);
    CHECK(st_rt_cfn_num_outputs(f) == 3);
    CHECK(st_rt_cfn_has_backward(f) == compiled);
    CHECK(st_rt_cfn_num_kernels(f, false) > 0);
    CHECK(!compiled || st_rt_cfn_num_kernels(f, true) > 0);
    st_meta mx = meta2(ST_FLOAT64, 3, 4), mw = meta2(ST_FLOAT64, 4, 5),
            mb = meta2(ST_FLOAT64, 1, 5), m0 = meta2(ST_FLOAT64, 3, 5);
    st_tensor *x = rand_t(&mx), *w = rand_t(&mw), *b = rand_t(&mb);
    w->requires_grad = b->requires_grad = true;
    st_tensor *in[3] = {x, w, b}, *out[3] = {NULL, NULL, NULL};
    CHECK(st_rt_cfn_run(f, in, out) == ST_OK);
    if (!out[0]) {
        st_rt_cfn_free(f);
        return;
    }
    double r0[15], r1;
    two_out_ref(f64(x), f64(w), f64(b), r0, &r1);
    double err = 0;
    for (int i = 0; i < 15; i++)
        err = fmax(err, fabs(f64(out[0])[i] - r0[i]));
    err = fmax(err, fabs(f64(out[1])[0] - r1));
    CHECK(err < 1e-10);
    CHECK(out[2]->dtype == ST_INT64 && !out[2]->requires_grad);
    CHECK(out[0]->requires_grad && out[1]->requires_grad);
    if (compiled)
        CHECK(out[0]->grad_fn && !strcmp(st_ad_node_name(out[0]->grad_fn),
                                         "CompiledFunctionBackward"));
    /* gradients of sum(out0 * g0) + out1 * g1 */
    st_tensor *g0 = rand_t(&m0);
    st_meta ms;
    memset(&ms, 0, sizeof ms);
    ms.dtype = ST_FLOAT64;
    st_tensor *g1 = st_tensor_empty(st_rt_cpu(), ST_FLOAT64, 0, NULL);
    f64(g1)[0] = 0.7;
    st_tensor *roots[2] = {out[0], out[1]}, *gr[2] = {g0, g1};
    st_tensor *wrt[2] = {w, b}, *res[2] = {NULL, NULL};
    /* retained, the saved tensors serve twice (the same gradients); then
     * a backward that does not retain hands them over to its program
     * (node_backward), and one more is refused */
    st_tensor *keep[2] = {NULL, NULL};
    CHECK(st_ad_grad(roots, gr, 2, wrt, 2, true, false, keep) == ST_OK);
    CHECK(st_ad_grad(roots, gr, 2, wrt, 2, false, false, res) == ST_OK);
    for (int which = 0; which < 2 && keep[which] && res[which]; which++)
        for (int64_t i = 0; i < st_tensor_numel(res[which]); i++)
            CHECK(f64(keep[which])[i] == f64(res[which])[i]);
    st_tensor *again[2] = {NULL, NULL};
    if (compiled) {
        CHECK(st_ad_grad(roots, gr, 2, wrt, 2, false, false, again) != ST_OK);
        CHECK(strstr(st_err_msg(), "second time") != NULL);
        st_err_clear();
    }
    for (int k = 0; k < 2; k++)
        st_tensor_decref(keep[k]);
    double gerr = 0;
    for (int which = 0; which < 2 && res[0] && res[1]; which++) {
        st_tensor *p = wrt[which];
        for (int64_t i = 0; i < st_tensor_numel(p); i++) {
            double save = f64(p)[i], fp, fm, o0[15], o1;
            double eps = 1e-6;
            f64(p)[i] = save + eps;
            two_out_ref(f64(x), f64(w), f64(b), o0, &o1);
            fp = o1 * 0.7;
            for (int j = 0; j < 15; j++)
                fp += o0[j] * f64(g0)[j];
            f64(p)[i] = save - eps;
            two_out_ref(f64(x), f64(w), f64(b), o0, &o1);
            fm = o1 * 0.7;
            for (int j = 0; j < 15; j++)
                fm += o0[j] * f64(g0)[j];
            f64(p)[i] = save;
            gerr = fmax(gerr, fabs((fp - fm) / (2 * eps) - f64(res[which])[i]));
        }
    }
    CHECK(gerr < 1e-6);
    /* only out1 gets a gradient: out0's slot is zeros */
    st_tensor *res2[2] = {NULL, NULL};
    for (int k = 0; k < 3; k++)
        st_tensor_decref(out[k]);
    CHECK(st_rt_cfn_run(f, in, out) == ST_OK);
    st_tensor *r1o[1] = {out[1]}, *g1o[1] = {g1};
    CHECK(st_ad_grad(r1o, g1o, 1, wrt, 2, false, true, res2) == ST_OK);
    for (int k = 0; k < 2; k++) {
        st_tensor_decref(res[k]);
        st_tensor_decref(res2[k]);
    }
    /* grad mode off: no node */
    for (int k = 0; k < 3; k++)
        st_tensor_decref(out[k]);
    st_ad_set_grad_enabled(false);
    CHECK(st_rt_cfn_run(f, in, out) == ST_OK);
    st_ad_set_grad_enabled(true);
    CHECK(out[0] && !out[0]->requires_grad && !out[0]->grad_fn);
    for (int k = 0; k < 3; k++)
        st_tensor_decref(out[k]);
    /* a wrong input names it */
    st_tensor *bad = rand_t(&m0);
    st_tensor *in_bad[3] = {x, bad, b};
    CHECK(st_rt_cfn_run(f, in_bad, out) != ST_OK);
    CHECK(strstr(st_err_msg(), "input 1") != NULL);
    st_err_clear();
    st_tensor_decref(bad);
    st_tensor_decref(g0);
    st_tensor_decref(g1);
    st_tensor_decref(x);
    st_tensor_decref(w);
    st_tensor_decref(b);
    st_rt_cfn_free(f);
}

/* y = exp(x) * 2 inside a stop-gradient region, z = y * x: dz/dx = y. */
static void test_stop_gradient(void)
{
    st_test_name = "stop_gradient";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta2(ST_FLOAT64, 2, 3);
    int x = st_ir_add_input(g, &m, true);
    st_ir_builder B = {g, false};
    int e = st_ir_emit(&B, ST_OP_EXP, &x, 1, NULL);
    int two = st_ir_emit_fconst(&B, 2.0);
    int y2[2] = {e, two};
    int y = st_ir_emit(&B, ST_OP_MUL, y2, 2, NULL);
    int zz[2] = {y, x};
    int z = st_ir_emit(&B, ST_OP_MUL, zz, 2, NULL);
    CHECK(!B.failed);
    st_ir_mark_output(g, z);
    st_ir_region r;
    memset(&r, 0, sizeof r);
    r.first = 0;
    r.end = 2;
    CHECK(st_ir_add_region(g, &r) == 0);
    st_graph *bwd = NULL;
    st_ir_bwd_info info;
    int wrt = x;
    CHECK(st_ir_backward(g, &wrt, 1, &bwd, &info) == ST_OK);
    bool rg[1] = {true};
    st_rt_cfn_opts o = {.backend = "interp", .input_requires_grad = rg};
    st_rt_cfn *f = st_rt_cfn_new(g, &o);
    CHECK(f != NULL);
    st_tensor *xt = rand_t(&m);
    xt->requires_grad = true;
    st_tensor *out = NULL, *res = NULL;
    CHECK(f && st_rt_cfn_run(f, &xt, &out) == ST_OK);
    st_tensor *ones = rand_t(&m);
    for (int i = 0; i < 6; i++)
        f64(ones)[i] = 1;
    if (out)
        CHECK(st_ad_grad(&out, &ones, 1, &xt, 1, false, false, &res) == ST_OK);
    double err = 0;
    for (int i = 0; res && i < 6; i++)
        err = fmax(err, fabs(f64(res)[i] - 2 * exp(f64(xt)[i])));
    CHECK(res && err < 1e-12);
    st_tensor_decref(res);
    st_tensor_decref(out);
    st_tensor_decref(ones);
    st_tensor_decref(xt);
    st_ir_graph_free(bwd);
    st_ir_bwd_info_clear(&info);
    st_rt_cfn_free(f);
}

/* A custom-gradient region: y = x * x with a backward graph that says
 * dy/dx = 3 * g * x (deliberately not 2x), then z = sum(y * w). */
static void test_custom_region(void)
{
    st_test_name = "custom_region";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta2(ST_FLOAT64, 2, 3);
    int x = st_ir_add_input(g, &m, true);
    int w = st_ir_add_input(g, &m, true);
    st_ir_builder B = {g, false};
    int xx[2] = {x, x};
    int y = st_ir_emit(&B, ST_OP_MUL, xx, 2, NULL);
    int yw[2] = {y, w};
    int p = st_ir_emit(&B, ST_OP_MUL, yw, 2, NULL);
    int z = st_ir_emit(&B, ST_OP_SUM, &p, 1, NULL);
    CHECK(!B.failed);
    st_ir_mark_output(g, z);
    st_graph *rb = st_ir_graph_new();
    int gy = st_ir_add_input(rb, &m, false);
    int rx = st_ir_add_input(rb, &m, false);
    st_ir_builder RB = {rb, false};
    int three = st_ir_emit_fconst(&RB, 3.0);
    int a1[2] = {gy, rx};
    int t = st_ir_emit(&RB, ST_OP_MUL, a1, 2, NULL);
    int a2[2] = {t, three};
    int gx = st_ir_emit(&RB, ST_OP_MUL, a2, 2, NULL);
    CHECK(!RB.failed);
    st_ir_mark_output(rb, gx);
    st_ir_region r = {.first = 0, .end = 1, .nin = 1, .nout = 1, .nread = 1,
                      .in = &x, .out = &y, .read = &x, .bwd = rb};
    CHECK(st_ir_add_region(g, &r) == 0);
    bool rg[2] = {true, true};
    st_rt_cfn_opts o = {.backend = "interp", .input_requires_grad = rg};
    st_rt_cfn *f = st_rt_cfn_new(g, &o);
    CHECK(f != NULL);
    st_tensor *xt = rand_t(&m), *wt = rand_t(&m);
    xt->requires_grad = wt->requires_grad = true;
    st_tensor *in[2] = {xt, wt}, *out = NULL, *res[2] = {NULL, NULL};
    CHECK(f && st_rt_cfn_run(f, in, &out) == ST_OK);
    if (out)
        CHECK(st_ad_grad(&out, NULL, 1, in, 2, false, false, res) == ST_OK);
    double e1 = 0, e2 = 0;
    for (int i = 0; res[0] && res[1] && i < 6; i++) {
        e1 = fmax(e1, fabs(f64(res[0])[i] - 3 * f64(wt)[i] * f64(xt)[i]));
        e2 = fmax(e2, fabs(f64(res[1])[i] - f64(xt)[i] * f64(xt)[i]));
    }
    CHECK(res[0] && e1 < 1e-12 && e2 < 1e-12);
    for (int k = 0; k < 2; k++)
        st_tensor_decref(res[k]);
    st_tensor_decref(out);
    st_tensor_decref(xt);
    st_tensor_decref(wt);
    st_rt_cfn_free(f);
}

/* out = x + 1 visible; x's new value x * 2 written back. */
static void test_writeback(void)
{
    st_test_name = "writeback";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta2(ST_FLOAT64, 2, 2);
    int x = st_ir_add_input(g, &m, false);
    st_ir_builder B = {g, false};
    int one = st_ir_emit_fconst(&B, 1.0), two = st_ir_emit_fconst(&B, 2.0);
    int a[2] = {x, one}, c[2] = {x, two};
    int y = st_ir_emit(&B, ST_OP_ADD, a, 2, NULL);
    int x2 = st_ir_emit(&B, ST_OP_MUL, c, 2, NULL);
    st_ir_mark_output(g, y);
    st_ir_mark_output(g, x2);
    int wo = 1, wi = 0;
    st_rt_cfn_opts o = {.backend = "interp", .writeback_out = &wo,
                        .writeback_in = &wi, .nwriteback = 1, .nvisible = 1};
    st_rt_cfn *f = st_rt_cfn_new(g, &o);
    CHECK(f != NULL && st_rt_cfn_num_outputs(f) == 1);
    st_tensor *xt = rand_t(&m), *out = NULL;
    double before[4];
    memcpy(before, f64(xt), sizeof before);
    CHECK(f && st_rt_cfn_run(f, &xt, &out) == ST_OK);
    double err = 0;
    for (int i = 0; out && i < 4; i++) {
        err = fmax(err, fabs(f64(out)[i] - (before[i] + 1)));
        err = fmax(err, fabs(f64(xt)[i] - before[i] * 2));
    }
    CHECK(out && err < 1e-15);
    st_tensor_decref(out);
    st_tensor_decref(xt);
    st_rt_cfn_free(f);
}

/* st_ir_backward_multi rejects a non-float output; st_ir_backward keeps
 * working with output 0 as the loss. */
static void test_multi_args(void)
{
    st_test_name = "multi_args";
    st_graph *g = two_out_graph();
    int wrt = g->inputs[1];
    st_graph *b = NULL;
    st_ir_bwd_info info;
    int outs[1] = {g->outputs[2]};
    CHECK(st_ir_backward_multi(g, &wrt, 1, outs, 1, &b, &info) == ST_ERR_TYPE);
    st_err_clear();
    int outs2[3] = {g->outputs[0], g->outputs[1], g->outputs[1]};
    CHECK(st_ir_backward_multi(g, &wrt, 1, outs2, 3, &b, &info) == ST_OK);
    CHECK(b && b->ninputs == info.nsaved + 3 && b->noutputs == 1);
    st_ir_graph_free(b);
    st_ir_bwd_info_clear(&info);
    st_ir_graph_free(g);
}


/* ---- trace capture (runtime/trace.c) from C ---- */
static st_tensor *eager2(st_op_id op, st_tensor *a, st_tensor *b, double sc,
                         st_tensor *given)
{
    st_operand in[2] = {{.t = a}, {.t = b}};
    if (!b) {
        in[1].t = NULL;
        in[1].sdtype = ST_FLOAT64;
        in[1].f = sc;
    }
    st_tensor *g[ST_MAX_OUT] = {given, NULL, NULL}, *r = NULL;
    return st_rt_eager(op, in, 2, NULL, given ? g : NULL, &r) == 1 ? r : NULL;
}

/* in-place writes: abort restores, end2 reports the written input */
static void test_trace_writeback_and_abort(void)
{
    st_test_name = "trace_writeback_abort";
    st_meta m = meta2(ST_FLOAT64, 2, 2);
    st_tensor *x = rand_t(&m), *y = rand_t(&m);
    double before[4];
    memcpy(before, f64(x), sizeof before);
    CHECK(st_rt_trace_begin() == ST_OK);
    st_tensor *r = eager2(ST_OP_MUL, x, NULL, 3.0, x); /* x *= 3 */
    st_tensor_decref(r);
    CHECK(fabs(f64(x)[0] - 3 * before[0]) < 1e-12);
    st_rt_trace_abort();
    CHECK(!memcmp(f64(x), before, sizeof before));

    CHECK(st_rt_trace_begin() == ST_OK);
    st_tensor *s = eager2(ST_OP_ADD, x, y, 0, NULL);
    r = eager2(ST_OP_MUL, x, NULL, 3.0, x);
    st_tensor_decref(r);
    st_tensor **ins = NULL;
    int nins = 0, *wb = NULL, nwb = 0;
    st_graph *g = st_rt_trace_end2(&s, 1, &ins, &nins, &wb, &nwb);
    CHECK(g && nins == 2 && nwb == 1 && wb && wb[0] == 0);
    CHECK(g && g->noutputs == 2);
    int wo = 1;
    st_rt_cfn_opts o = {.backend = "interp", .writeback_out = &wo,
                        .writeback_in = wb, .nwriteback = nwb, .nvisible = 1};
    st_rt_cfn *f = g ? st_rt_cfn_new(g, &o) : NULL;
    CHECK(f != NULL);
    st_tensor *x2 = rand_t(&m), *out = NULL, *in2[2] = {x2, y};
    double b2[4];
    memcpy(b2, f64(x2), sizeof b2);
    CHECK(f && st_rt_cfn_run(f, in2, &out) == ST_OK);
    double err = 0;
    for (int i = 0; out && i < 4; i++) {
        err = fmax(err, fabs(f64(out)[i] - (b2[i] + f64(y)[i])));
        err = fmax(err, fabs(f64(x2)[i] - 3 * b2[i]));
    }
    CHECK(out && err < 1e-12);
    for (int k = 0; k < nins; k++)
        st_tensor_decref(ins[k]);
    free(ins);
    free(wb);
    st_tensor_decref(out);
    st_tensor_decref(s);
    st_tensor_decref(x2);
    st_tensor_decref(x);
    st_tensor_decref(y);
    st_rt_cfn_free(f);
    /* a failed trace reports its reason */
    CHECK(st_rt_trace_begin() == ST_OK);
    st_rt_trace_fail("data-dependent: test");
    const char *why = NULL;
    CHECK(st_rt_trace_failed(&why) && why && strstr(why, "test"));
    st_rt_trace_abort();
    CHECK(!st_rt_trace_failed(NULL));
}

/* a PyLayer-style region captured through the region API: forward
 * y = x * x, backward traced as g * 10 (deliberately not 2x) */
static void test_trace_region(void)
{
    st_test_name = "trace_region";
    st_meta m = meta2(ST_FLOAT64, 2, 3);
    st_tensor *x = rand_t(&m);
    x->requires_grad = true;
    CHECK(st_rt_trace_begin() == ST_OK);
    st_ad_set_grad_enabled(false);
    CHECK(st_rt_trace_region_begin() == ST_OK);
    st_tensor *y = eager2(ST_OP_MUL, x, x, 0, NULL);
    st_tensor *gy = rand_t(&m);
    CHECK(st_rt_trace_region_backward(&x, 1, &y, 1, &gy) == ST_OK);
    st_tensor *gx = eager2(ST_OP_MUL, gy, NULL, 10.0, NULL);
    CHECK(st_rt_trace_region_end(&gx, 1) == ST_OK);
    st_ad_set_grad_enabled(true);
    st_tensor *z = eager2(ST_OP_ADD, y, NULL, 1.0, NULL);
    st_tensor **ins = NULL;
    int nins = 0, *wb = NULL, nwb = 0;
    st_graph *g = st_rt_trace_end2(&z, 1, &ins, &nins, &wb, &nwb);
    CHECK(g && g->nregions == 1 && g->regions[0].bwd && nins == 1);
    bool rg = true;
    st_rt_cfn_opts o = {.backend = "interp", .input_requires_grad = &rg};
    st_rt_cfn *f = g ? st_rt_cfn_new(g, &o) : NULL;
    CHECK(f && st_rt_cfn_has_backward(f));
    st_tensor *out = NULL, *res = NULL, *ones = rand_t(&m);
    for (int i = 0; i < 6; i++)
        f64(ones)[i] = 1.0;
    CHECK(f && st_rt_cfn_run(f, &x, &out) == ST_OK);
    if (out)
        CHECK(st_ad_grad(&out, &ones, 1, &x, 1, false, false, &res) == ST_OK);
    double err = 0;
    for (int i = 0; res && i < 6; i++)
        err = fmax(err, fabs(f64(res)[i] - 10.0));
    CHECK(res && err < 1e-12);
    for (int k = 0; k < nins; k++)
        st_tensor_decref(ins[k]);
    free(ins);
    free(wb);
    st_tensor *ts[] = {x, y, gy, gx, z, out, res, ones};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        st_tensor_decref(ts[k]);
    st_rt_cfn_free(f);
}

int main(void)
{
    st_ir_autodiff_init();
    RUN_TEST(test_two_outputs("interp"));
    RUN_TEST(test_two_outputs("eager"));
#ifdef ST_HAVE_LLVM
    if (st_llvm_backend())
        RUN_TEST(test_two_outputs("llvm"));
#endif
    RUN_TEST(test_stop_gradient());
    RUN_TEST(test_custom_region());
    RUN_TEST(test_writeback());
    RUN_TEST(test_multi_args());
    RUN_TEST(test_trace_writeback_and_abort());
    RUN_TEST(test_trace_region());
    return st_test_exit_code("test_cfn");
}
