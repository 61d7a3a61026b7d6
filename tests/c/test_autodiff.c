/* tests/c/test_autodiff.c - tests of ir/autodiff.c: for every
 * differentiable op, the forward statement on float64 inputs of small
 * random shapes (broadcasting where the op broadcasts) and its VJP graph
 * both run through fusion + the interp backend + the executor; the VJP's
 * gradients are compared with central finite differences of
 * sum(og * forward) for a random og. Also checked: gradients have their
 * operand's exact shape and dtype (float64, float32, float16, bfloat16 and
 * mixed dtypes), each rule reads at run time only what its vjp_saves names
 * (statically, and by binding NaN to everything else), tie-splitting of
 * maximum/amax, non-differentiable ops, and st_ir_sum_to's shapes.
 * Exits non-zero naming each failing op. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_runtime.h"
#include "st_test.h"

static long ncases, nchecked;

/* ---- random numbers ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* ---- tensors ---- */

static double tget(const st_tensor *t, int64_t lin) /* strided, row-major */
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d] > 0 ? t->shape[d] : 1;
        off += (lin % n) * t->strides[d];
        lin /= n;
    }
    const char *p = (const char *)st_tensor_data(t);
    switch (t->dtype) {
    case ST_FLOAT64: return ((const double *)p)[off];
    case ST_FLOAT32: return ((const float *)p)[off];
    case ST_FLOAT16: return st_half_to_float(((const uint16_t *)p)[off]);
    case ST_BFLOAT16: return st_bf16_to_float(((const uint16_t *)p)[off]);
    case ST_INT64: return (double)((const int64_t *)p)[off];
    case ST_INT32: return ((const int32_t *)p)[off];
    case ST_BOOL: return ((const uint8_t *)p)[off];
    default: return NAN;
    }
}

static void tset(st_tensor *t, int64_t i, double v) /* contiguous t */
{
    char *p = st_tensor_data(t);
    switch (t->dtype) {
    case ST_FLOAT64: ((double *)p)[i] = v; break;
    case ST_FLOAT32: ((float *)p)[i] = (float)v; break;
    case ST_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case ST_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case ST_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

static st_tensor *tnew(const st_meta *m)
{
    return st_tensor_empty(st_rt_cpu(), m->dtype, m->ndim, m->shape);
}

/* ---- running a graph: lowered and compiled once, executed many times ---- */

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

/* Runs with inputs bound; fills outs[0..noutputs) (new references). */
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
        if (vals[v])
            st_tensor_decref(vals[v]);
    free(vals);
    return ok;
}

/* ---- test cases ---- */

enum { G_ANY, G_POS, G_AWAY, G_DATA };
enum { A_TENSOR, A_CONST };

#define MAXA 4

typedef struct {
    int kind;           /* A_TENSOR, A_CONST */
    st_meta m;
    int gen;
    double cval;        /* A_CONST value */
    const double *data; /* G_DATA */
    bool want;          /* expects a gradient */
} arg;

typedef struct {
    const char *name;
    st_op_id op;
    st_attrs at;
    int nargs;
    arg a[MAXA];
    double eps;
    const double *og_data; /* NULL: random */
    const double *expect[MAXA]; /* non-NULL: exact gradient instead of FD */
} tcase;

static tcase C;

static void begin(const char *name, st_op_id op)
{
    memset(&C, 0, sizeof C);
    C.name = name;
    C.op = op;
    C.eps = 1e-6;
    st_test_name = name;
}

static st_meta meta(st_dtype dt, int ndim, const int64_t *shape)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = ndim;
    for (int d = 0; d < ndim; d++)
        m.shape[d] = shape[d];
    return m;
}

static arg *push(int kind, st_dtype dt, int ndim, const int64_t *shape)
{
    arg *a = &C.a[C.nargs++];
    a->kind = kind;
    a->m = meta(dt, ndim, shape);
    a->gen = G_ANY;
    a->want = kind == A_TENSOR && st_dtype_is_float(dt);
    return a;
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define NSH(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / 8))
/* a float64 tensor argument with generator gen */
#define TF(gen_, ...) (push(A_TENSOR, ST_FLOAT64, NSH(__VA_ARGS__), \
                            SH(__VA_ARGS__))->gen = (gen_))
#define TF0(gen_) (push(A_TENSOR, ST_FLOAT64, 0, NULL)->gen = (gen_))

static void targ_data(st_dtype dt, const double *data, int ndim,
                      const int64_t *shape)
{
    arg *a = push(A_TENSOR, dt, ndim, shape);
    a->gen = G_DATA;
    a->data = data;
}

static void const_arg(double v)
{
    arg *a = push(A_CONST, ST_FLOAT64, 0, NULL);
    a->m.kind = ST_META_SCALAR;
    a->cval = v;
    a->want = false;
}

static double gen_value(int gen)
{
    double u = urand();
    switch (gen) {
    case G_POS: return 0.5 + 1.5 * u;
    case G_AWAY: {
        double v = 0.2 + 1.8 * urand();
        return u < 0.5 ? -v : v;
    }
    default: return 4.0 * u - 2.0;
    }
}

static void fill(st_tensor *t, const arg *a)
{
    int64_t n = st_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        tset(t, i, a->gen == G_DATA ? a->data[i] : gen_value(a->gen));
}

/* The forward graph of the case with args converted by dt_of. */
static st_graph *forward_graph(st_dtype fdt, int *ids, int *y)
{
    st_graph *g = st_ir_graph_new();
    if (!g)
        return NULL;
    for (int k = 0; k < C.nargs; k++) {
        const arg *a = &C.a[k];
        if (a->kind == A_CONST) {
            ids[k] = st_ir_add_const(g, ST_FLOAT64, a->cval,
                                     (int64_t)a->cval);
        } else {
            st_meta m = a->m;
            if (st_dtype_is_float(m.dtype) && fdt != ST_FLOAT64 &&
                a->m.dtype == ST_FLOAT64)
                m.dtype = fdt;
            ids[k] = st_ir_add_input(g, &m, false);
        }
    }
    int outs[ST_MAX_OUT];
    if (st_ir_add_stmt(g, C.op, ids, C.nargs, &C.at, outs) < 0) {
        st_ir_graph_free(g);
        return NULL;
    }
    *y = outs[0];
    st_ir_mark_output(g, *y);
    return g;
}

/* The VJP graph: inputs are the forward's tensor operands, then y, then og
 * (constants are constants); grads marked as outputs in operand order.
 * xin/yin/ogin give the input positions; gi the rule's in_grads. */
typedef struct {
    st_graph *g;
    int ids[MAXA], y, og;
    int gi[ST_MAX_IN];
} vjp_graph;

static bool build_vjp(vjp_graph *vg, st_dtype fdt, const st_meta *ym)
{
    memset(vg, 0, sizeof *vg);
    vg->g = st_ir_graph_new();
    st_graph *g = vg->g;
    for (int k = 0; k < C.nargs; k++) {
        const arg *a = &C.a[k];
        if (a->kind == A_CONST) {
            vg->ids[k] = st_ir_add_const(g, ST_FLOAT64, a->cval,
                                         (int64_t)a->cval);
        } else {
            st_meta m = a->m;
            if (st_dtype_is_float(m.dtype) && a->m.dtype == ST_FLOAT64)
                m.dtype = fdt;
            vg->ids[k] = st_ir_add_input(g, &m, false);
        }
    }
    vg->y = st_ir_add_input(g, ym, false);
    vg->og = st_ir_add_input(g, ym, false);
    st_stmt s;
    memset(&s, 0, sizeof s);
    s.op = C.op;
    s.nin = C.nargs;
    for (int k = 0; k < C.nargs; k++)
        s.in[k] = vg->ids[k];
    s.nout = 1;
    s.out[0] = vg->y;
    s.attrs = C.at;
    const st_op_def *def = st_op(C.op);
    if (!def->vjp) {
        FAIL("no VJP rule");
        return false;
    }
    int og = vg->og;
    st_status st = def->vjp(g, &s, &og, vg->gi);
    CHECK(st == ST_OK);
    if (st != ST_OK)
        return false;
    CHECK(st_ir_verify(g) == ST_OK);
    bool ok = true;
    for (int k = 0; k < C.nargs; k++) {
        int v = vg->gi[k];
        if ((v >= 0) != C.a[k].want) {
            FAIL("operand %d: gradient %s (%s)", k, v >= 0 ? "given" : "missing",
                 st_dtype_name(fdt));
            ok = false;
            continue;
        }
        if (v < 0)
            continue;
        const st_meta *gm = &g->values[v].meta;
        const st_meta *xm = &g->values[vg->ids[k]].meta;
        bool same = gm->dtype == xm->dtype && gm->ndim == xm->ndim;
        for (int d = 0; same && d < xm->ndim; d++)
            same = gm->shape[d] == xm->shape[d];
        if (!same) {
            char a[96], b[96];
            FAIL("operand %d: gradient %s%s for an operand %s%s", k,
                 st_dtype_name(gm->dtype), st_shape_str(gm->shape, gm->ndim, a, sizeof a),
                 st_dtype_name(xm->dtype), st_shape_str(xm->shape, xm->ndim, b, sizeof b));
            ok = false;
        }
        st_ir_mark_output(g, v);
    }
    return ok;
}

/* Statically: every forward value the VJP graph reads at run time (any
 * use other than as the shape operand of FULL/RAND/RANDN/RANDINT, through
 * views) is named by vjp_saves. */
static void check_saves(const vjp_graph *vg)
{
    const st_graph *g = vg->g;
    unsigned saves = st_op(C.op)->vjp_saves;
    bool *need = calloc((size_t)g->nvalues + 1, sizeof *need);
    if (!need)
        return;
    for (int k = 0; k < g->noutputs; k++)
        need[g->outputs[k]] = true;
    for (int si = g->nstmts - 1; si >= 0; si--) {
        const st_stmt *s = &g->stmts[si];
        if (!need[s->out[0]])
            continue;
        if (s->op == ST_OP_FULL || s->op == ST_OP_RAND ||
            s->op == ST_OP_RANDN || s->op == ST_OP_RANDINT)
            continue;
        for (int k = 0; k < s->nin; k++)
            need[s->in[k]] = true;
    }
    for (int k = 0; k < C.nargs; k++)
        if (C.a[k].kind == A_TENSOR && need[vg->ids[k]] &&
            !(saves & (1u << k))) {
            FAIL("reads operand %d, not in vjp_saves 0x%x", k, saves);
        }
    if (need[vg->y] && !(saves & ST_VJP_SAVES_OUT)) {
        FAIL("reads the result, not in vjp_saves");
    }
    free(need);
}

static double loss(const st_tensor *y, const st_tensor *og)
{
    double s = 0;
    int64_t n = st_tensor_numel(y);
    for (int64_t i = 0; i < n; i++)
        s += tget(y, i) * tget(og, i);
    return s;
}

/* Metas-only pass in another float dtype: shapes/dtypes of the grads,
 * and the VJP graph lowers. */
static void dtype_pass(st_dtype fdt)
{
    int ids[MAXA], y;
    st_graph *fg = forward_graph(fdt, ids, &y);
    CHECK(fg != NULL);
    if (!fg)
        return;
    st_meta ym = fg->values[y].meta;
    vjp_graph vg;
    if (build_vjp(&vg, fdt, &ym) && vg.g->noutputs > 0) {
        st_kprog *p = st_fuse_lower(vg.g, NULL);
        CHECK(p != NULL);
        st_kprog_free(p);
    }
    st_ir_graph_free(vg.g);
    st_ir_graph_free(fg);
}

static void run_case(void)
{
    ncases++;
    st_err_clear();
    int ids[MAXA], y = -1;
    st_graph *fg = forward_graph(ST_FLOAT64, ids, &y);
    prog fp = {0}, bp = {0};
    vjp_graph vg = {0};
    st_tensor *xin[MAXA] = {0}, *nanin[MAXA] = {0}, *yt = NULL, *og = NULL;
    st_tensor *grads[ST_MAX_IN] = {0};
    st_tensor *bin[MAXA + 2];
    int nfin = 0;
    if (!fg || !prog_make(&fp, fg)) {
        FAIL("forward: %s", st_err_msg());
        goto out;
    }
    for (int k = 0; k < C.nargs; k++) {
        if (C.a[k].kind != A_TENSOR)
            continue;
        xin[nfin] = tnew(&C.a[k].m);
        fill(xin[nfin], &C.a[k]);
        nfin++;
    }
    if (!prog_run(&fp, xin, &yt)) {
        FAIL("forward run: %s", st_err_msg());
        goto out;
    }
    st_meta ym = fg->values[y].meta;
    og = tnew(&ym);
    for (int64_t i = 0; i < st_tensor_numel(og); i++)
        tset(og, i, C.og_data ? C.og_data[i] : 2.0 * urand() - 1.0);
    if (!build_vjp(&vg, ST_FLOAT64, &ym))
        goto out;
    check_saves(&vg);
    if (vg.g->noutputs == 0)
        goto out;
    if (!prog_make(&bp, vg.g)) {
        FAIL("vjp lowering: %s", st_err_msg());
        goto out;
    }
    /* bind NaN to what the rule must not read */
    unsigned saves = st_op(C.op)->vjp_saves;
    int nb = 0;
    for (int k = 0, t = 0; k < C.nargs; k++) {
        if (C.a[k].kind != A_TENSOR)
            continue;
        st_tensor *x = xin[t++];
        if (!(saves & (1u << k)) && st_dtype_is_float(x->dtype)) {
            nanin[k] = tnew(&C.a[k].m);
            for (int64_t i = 0; i < st_tensor_numel(x); i++)
                tset(nanin[k], i, NAN);
            x = nanin[k];
        }
        bin[nb++] = x;
    }
    st_tensor *ynan = NULL;
    if (!(saves & ST_VJP_SAVES_OUT)) {
        ynan = tnew(&ym);
        for (int64_t i = 0; i < st_tensor_numel(ynan); i++)
            tset(ynan, i, NAN);
    }
    bin[nb++] = ynan ? ynan : yt;
    bin[nb++] = og;
    bool ran = prog_run(&bp, bin, grads);
    if (ynan)
        st_tensor_decref(ynan);
    if (!ran) {
        FAIL("vjp run: %s", st_err_msg());
        goto out;
    }
    /* finite differences (or the exact expectation) per operand */
    int outk = 0;
    for (int k = 0, t = 0; k < C.nargs; k++) {
        if (C.a[k].kind != A_TENSOR)
            continue;
        st_tensor *x = xin[t++];
        if (!C.a[k].want)
            continue;
        st_tensor *gt = grads[outk++];
        nchecked += st_tensor_numel(x);
        int64_t n = st_tensor_numel(x);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            double an = tget(gt, i), ref;
            if (C.expect[k]) {
                ref = C.expect[k][i];
            } else {
                double x0 = tget(x, i), lp = NAN, lm = NAN;
                st_tensor *yy = NULL;
                tset(x, i, x0 + C.eps);
                if (prog_run(&fp, xin, &yy)) {
                    lp = loss(yy, og);
                    st_tensor_decref(yy);
                }
                tset(x, i, x0 - C.eps);
                if (prog_run(&fp, xin, &yy)) {
                    lm = loss(yy, og);
                    st_tensor_decref(yy);
                }
                tset(x, i, x0);
                ref = (lp - lm) / (2 * C.eps);
            }
            double tol = 1e-6 * (1.0 + fmax(fabs(an), fabs(ref)));
            if (!(fabs(an - ref) <= tol)) {
                if (bad < 3)
                    fprintf(stderr, "FAIL [%s] operand %d element %lld: "
                            "vjp %.10g, %s %.10g\n", C.name, k, (long long)i,
                            an, C.expect[k] ? "expected" : "finite diff",
                            ref);
                bad++;
            }
        }
        if (bad)
            st_test_failures++;
    }
    /* the same rule on float32/float16/bfloat16 operands: metas */
    dtype_pass(ST_FLOAT32);
    dtype_pass(ST_FLOAT16);
    dtype_pass(ST_BFLOAT16);
out:
    for (int k = 0; k < MAXA; k++) {
        if (xin[k])
            st_tensor_decref(xin[k]);
        if (nanin[k])
            st_tensor_decref(nanin[k]);
    }
    for (int k = 0; k < ST_MAX_IN; k++)
        if (grads[k])
            st_tensor_decref(grads[k]);
    if (yt)
        st_tensor_decref(yt);
    if (og)
        st_tensor_decref(og);
    prog_free(&fp);
    prog_free(&bp);
    st_ir_graph_free(vg.g);
    if (fg)
        st_ir_graph_free(fg);
    st_err_clear();
}

/* ---- the cases ---- */

static void unary_cases(void)
{
    static const struct { st_op_id op; const char *name; int gen; } u[] = {
        {ST_OP_NEG, "neg", G_ANY}, {ST_OP_EXP, "exp", G_ANY},
        {ST_OP_LOG, "log", G_POS}, {ST_OP_SQRT, "sqrt", G_POS},
        {ST_OP_RSQRT, "rsqrt", G_POS}, {ST_OP_TANH, "tanh", G_ANY},
        {ST_OP_SIGMOID, "sigmoid", G_ANY}, {ST_OP_RELU, "relu", G_AWAY},
        {ST_OP_ERF, "erf", G_ANY}, {ST_OP_ABS, "abs", G_AWAY},
        {ST_OP_SIN, "sin", G_ANY}, {ST_OP_COS, "cos", G_ANY},
        {ST_OP_RECIPROCAL, "reciprocal", G_AWAY},
        {ST_OP_FLOOR, "floor", G_ANY}, {ST_OP_CEIL, "ceil", G_ANY},
        {ST_OP_ROUND, "round", G_ANY}, {ST_OP_SIGN, "sign", G_AWAY},
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        begin(u[i].name, u[i].op);
        TF(u[i].gen, 3, 4);
        run_case();
    }
    begin("exp 0-d", ST_OP_EXP);
    TF0(G_ANY);
    run_case();
    /* cast: float32 -> float64 and back; steps exact in float32 */
    begin("cast f32->f64", ST_OP_CAST);
    push(A_TENSOR, ST_FLOAT32, 2, SH(2, 3));
    C.at.dtype = ST_FLOAT64;
    C.eps = 1.0 / 1024;
    run_case();
    begin("cast f64->f64", ST_OP_CAST);
    TF(G_ANY, 4);
    C.at.dtype = ST_FLOAT64;
    run_case();
    static const double ints[4] = {1, -2, 3, 0};
    begin("cast int->f64 (no grad)", ST_OP_CAST);
    targ_data(ST_INT64, ints, 1, SH(4));
    C.at.dtype = ST_FLOAT64;
    run_case();
    begin("exp of int (no grad)", ST_OP_EXP);
    targ_data(ST_INT64, ints, 1, SH(4));
    run_case();
}

static void binary_cases(void)
{
    static const struct { st_op_id op; const char *name; int ga, gb; } b[] = {
        {ST_OP_ADD, "add", G_ANY, G_ANY}, {ST_OP_SUB, "sub", G_ANY, G_ANY},
        {ST_OP_MUL, "mul", G_ANY, G_ANY}, {ST_OP_DIV, "div", G_ANY, G_AWAY},
        {ST_OP_POW, "pow", G_POS, G_ANY},
        {ST_OP_MAXIMUM, "maximum", G_ANY, G_ANY},
        {ST_OP_MINIMUM, "minimum", G_ANY, G_ANY},
        {ST_OP_REMAINDER, "remainder", G_ANY, G_POS},
    };
    char name[4][64];
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        snprintf(name[0], 64, "%s same shape", b[i].name);
        begin(name[0], b[i].op);
        TF(b[i].ga, 2, 3);
        TF(b[i].gb, 2, 3);
        run_case();
        snprintf(name[1], 64, "%s broadcast", b[i].name);
        begin(name[1], b[i].op);
        TF(b[i].ga, 2, 3, 4);
        TF(b[i].gb, 3, 1);
        run_case();
        snprintf(name[2], 64, "%s broadcast both", b[i].name);
        begin(name[2], b[i].op);
        TF(b[i].ga, 3, 1);
        TF(b[i].gb, 2, 1, 4);
        run_case();
        snprintf(name[3], 64, "%s const", b[i].name);
        begin(name[3], b[i].op);
        TF(b[i].ga, 4, 2);
        const_arg(b[i].op == ST_OP_POW ? 3.0 : 1.75);
        run_case();
    }
    begin("rsub const-tensor", ST_OP_SUB);
    const_arg(2.5);
    TF(G_ANY, 3);
    run_case();
    begin("div const/tensor", ST_OP_DIV);
    const_arg(2.5);
    TF(G_AWAY, 3);
    run_case();
    begin("pow const^tensor", ST_OP_POW);
    const_arg(1.5);
    TF(G_ANY, 3);
    run_case();
    begin("add 0-d + [3]", ST_OP_ADD);
    TF0(G_ANY);
    TF(G_ANY, 3);
    run_case();
    static const double ints[3] = {1, -2, 3};
    begin("mul by int tensor", ST_OP_MUL);
    TF(G_ANY, 3);
    targ_data(ST_INT64, ints, 1, SH(3));
    run_case();
    /* ties split half-half */
    static const double ta[3] = {1, 2, 3}, tb[3] = {1, 3, 2},
                        og3[3] = {1, 1, 1}, eqa[3] = {0.5, 0, 1},
                        eqb[3] = {0.5, 1, 0}, mina[3] = {0.5, 1, 0},
                        minb[3] = {0.5, 0, 1};
    begin("maximum ties", ST_OP_MAXIMUM);
    targ_data(ST_FLOAT64, ta, 1, SH(3));
    targ_data(ST_FLOAT64, tb, 1, SH(3));
    C.og_data = og3;
    C.expect[0] = eqa;
    C.expect[1] = eqb;
    run_case();
    begin("minimum ties", ST_OP_MINIMUM);
    targ_data(ST_FLOAT64, ta, 1, SH(3));
    targ_data(ST_FLOAT64, tb, 1, SH(3));
    C.og_data = og3;
    C.expect[0] = mina;
    C.expect[1] = minb;
    run_case();
    /* where */
    static const double cond[6] = {1, 0, 0, 1, 1, 0};
    begin("where broadcast", ST_OP_WHERE);
    targ_data(ST_BOOL, cond, 2, SH(2, 3));
    TF(G_ANY, 2, 3);
    TF(G_ANY, 3);
    run_case();
    begin("where const", ST_OP_WHERE);
    targ_data(ST_BOOL, cond, 2, SH(2, 3));
    const_arg(0.5);
    TF(G_ANY, 2, 1);
    run_case();
}

static void reduce_cases(void)
{
    static const struct { st_op_id op; const char *name; int gen; } r[] = {
        {ST_OP_SUM, "sum", G_ANY}, {ST_OP_MEAN, "mean", G_ANY},
        {ST_OP_AMAX, "amax", G_ANY}, {ST_OP_AMIN, "amin", G_ANY},
        {ST_OP_PROD, "prod", G_AWAY},
    };
    char name[4][64];
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        snprintf(name[0], 64, "%s dim 1", r[i].name);
        begin(name[0], r[i].op);
        TF(r[i].gen, 2, 3, 4);
        C.at.dims[0] = 1;
        C.at.ndims = 1;
        run_case();
        snprintf(name[1], 64, "%s all", r[i].name);
        begin(name[1], r[i].op);
        TF(r[i].gen, 3, 4);
        run_case();
        snprintf(name[2], 64, "%s dims (0, -1) keepdim", r[i].name);
        begin(name[2], r[i].op);
        TF(r[i].gen, 2, 3, 4);
        C.at.dims[0] = 0;
        C.at.dims[1] = -1;
        C.at.ndims = 2;
        C.at.flags = ST_ATTR_KEEPDIM;
        run_case();
        snprintf(name[3], 64, "%s 0-d", r[i].name);
        begin(name[3], r[i].op);
        TF0(r[i].gen);
        run_case();
    }
    static const double tx[4] = {1, 3, 3, 2}, one[1] = {1},
                        tg[4] = {0, 0.5, 0.5, 0};
    begin("amax ties", ST_OP_AMAX);
    targ_data(ST_FLOAT64, tx, 1, SH(4));
    C.og_data = one;
    C.expect[0] = tg;
    run_case();
}

static void matmul_cases(void)
{
    static const struct { const char *name; int na, nb; int64_t a[4], b[4]; }
        m[] = {
            {"matmul 2d", 2, 2, {3, 4}, {4, 5}},
            {"matmul batched", 3, 2, {2, 3, 4}, {4, 5}},
            {"matmul batch broadcast", 4, 3, {2, 1, 3, 4}, {3, 4, 2}},
            {"matmul 1d @ 3d", 1, 3, {4}, {2, 4, 5}},
            {"matmul 2d @ 1d", 2, 1, {3, 4}, {4}},
            {"matmul 3d @ 1d", 3, 1, {2, 3, 4}, {4}},
            {"matmul 1d @ 1d", 1, 1, {4}, {4}},
            {"matmul 1d @ 2d", 1, 2, {4}, {4, 3}},
        };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        begin(m[i].name, ST_OP_MATMUL);
        push(A_TENSOR, ST_FLOAT64, m[i].na, m[i].a);
        push(A_TENSOR, ST_FLOAT64, m[i].nb, m[i].b);
        run_case();
    }
}

static void index_cases(void)
{
    static const double gi[6] = {3, 0, 3, 1, 1, 2}; /* [3, 2] in [0, 4) */
    begin("gather dim 1", ST_OP_GATHER);
    TF(G_ANY, 3, 4);
    targ_data(ST_INT64, gi, 2, SH(3, 2));
    C.at.i[0] = 1;
    run_case();
    static const double g0[6] = {2, 0, 2, 2, 1, 0}; /* [2, 3] in [0, 3) */
    begin("gather dim 0 int32 index", ST_OP_GATHER);
    TF(G_ANY, 3, 4);
    targ_data(ST_INT32, g0, 2, SH(2, 3));
    C.at.i[0] = 0;
    run_case();
    static const double si[4] = {0, 2, 2, 4};
    begin("index_select dim 1", ST_OP_INDEX_SELECT);
    TF(G_ANY, 3, 5);
    targ_data(ST_INT64, si, 1, SH(4));
    C.at.i[0] = 1;
    run_case();
    begin("index_select dim 0 of 3-d", ST_OP_INDEX_SELECT);
    TF(G_ANY, 5, 2, 3);
    targ_data(ST_INT64, si, 1, SH(4));
    C.at.i[0] = 0;
    run_case();
    static const double s1[1] = {1};
    begin("index_select 0-d index", ST_OP_INDEX_SELECT);
    TF(G_ANY, 3, 4);
    targ_data(ST_INT64, s1, 0, NULL);
    C.at.i[0] = -1;
    run_case();
    static const double ei[6] = {1, 4, 1, 0, 2, 1};
    begin("embedding", ST_OP_EMBEDDING);
    TF(G_ANY, 5, 3);
    targ_data(ST_INT64, ei, 2, SH(2, 3));
    C.at.i[0] = -1;
    run_case();
    /* the padding row gets no gradient (its forward rows are not zero, so
     * finite differences would disagree by design): exact expectation */
    static double eog[18], ew[15];
    for (int i = 0; i < 18; i++)
        eog[i] = 0.25 * i - 2.0;
    memset(ew, 0, sizeof ew);
    for (int p = 0; p < 6; p++)
        for (int h = 0; h < 3; h++)
            if (ei[p] != 1)
                ew[(int)ei[p] * 3 + h] += eog[p * 3 + h];
    begin("embedding padding_idx", ST_OP_EMBEDDING);
    TF(G_ANY, 5, 3);
    targ_data(ST_INT64, ei, 2, SH(2, 3));
    C.at.i[0] = 1;
    C.og_data = eog;
    C.expect[0] = ew;
    run_case();
    begin("embedding 0-d index", ST_OP_EMBEDDING);
    TF(G_ANY, 5, 3);
    targ_data(ST_INT64, s1, 0, NULL);
    C.at.i[0] = -1;
    run_case();
    static const double sc[6] = {3, 0, 3, 3, 1, 3};
    begin("scatter_add", ST_OP_SCATTER_ADD);
    TF(G_ANY, 4, 3);
    targ_data(ST_INT64, sc, 2, SH(2, 3));
    TF(G_ANY, 2, 3);
    run_case();
    begin("scatter_add small index", ST_OP_SCATTER_ADD);
    TF(G_ANY, 4, 3);
    targ_data(ST_INT64, sc, 2, SH(2, 3));
    TF(G_ANY, 3, 4);
    run_case();
    /* scatter: positions distinct along dim 0 (a repeated one has no
     * derivative in src; its rule gives each point g there, as torch's) */
    static const double su[6] = {3, 0, 1, 1, 2, 3};
    begin("scatter", ST_OP_SCATTER);
    TF(G_ANY, 4, 3);
    targ_data(ST_INT64, su, 2, SH(2, 3));
    TF(G_ANY, 2, 3);
    run_case();
    begin("scatter small index", ST_OP_SCATTER);
    TF(G_ANY, 4, 3);
    targ_data(ST_INT64, su, 2, SH(2, 3));
    TF(G_ANY, 3, 4);
    run_case();
}

static void view_cases(void)
{
    begin("copy", ST_OP_COPY);
    TF(G_ANY, 2, 3);
    run_case();
    begin("reshape", ST_OP_RESHAPE);
    TF(G_ANY, 2, 3, 4);
    C.at.dims[0] = 6;
    C.at.dims[1] = -1;
    C.at.ndims = 2;
    run_case();
    begin("permute", ST_OP_PERMUTE);
    TF(G_ANY, 2, 3, 4);
    C.at.dims[0] = 2;
    C.at.dims[1] = 0;
    C.at.dims[2] = -2;
    C.at.ndims = 3;
    run_case();
    begin("expand", ST_OP_EXPAND);
    TF(G_ANY, 3, 1);
    C.at.dims[0] = 2;
    C.at.dims[1] = -1;
    C.at.dims[2] = 4;
    C.at.ndims = 3;
    run_case();
    begin("slice step 2", ST_OP_SLICE);
    TF(G_ANY, 3, 7);
    C.at.i[0] = 1;
    C.at.i[1] = 1;
    C.at.i[2] = 6;
    C.at.i[3] = 2;
    run_case();
    begin("slice negative start, dim 0", ST_OP_SLICE);
    TF(G_ANY, 5, 2);
    C.at.i[0] = 0;
    C.at.i[1] = -3;
    C.at.i[2] = 100;
    C.at.i[3] = 1;
    run_case();
    begin("squeeze all", ST_OP_SQUEEZE);
    TF(G_ANY, 3, 1, 4, 1);
    run_case();
    begin("squeeze dim 1 (and a non-1 dim)", ST_OP_SQUEEZE);
    TF(G_ANY, 3, 1, 4, 1);
    C.at.dims[0] = 1;
    C.at.dims[1] = 2;
    C.at.ndims = 2;
    run_case();
    begin("unsqueeze -1", ST_OP_UNSQUEEZE);
    TF(G_ANY, 3, 4);
    C.at.i[0] = -1;
    run_case();
    begin("unsqueeze 0 of 0-d", ST_OP_UNSQUEEZE);
    TF0(G_ANY);
    run_case();
}

static void composite_cases(void)
{
    begin("softmax dim 1", ST_OP_SOFTMAX);
    TF(G_ANY, 3, 4);
    C.at.i[0] = 1;
    run_case();
    begin("softmax dim 0 of 3-d", ST_OP_SOFTMAX);
    TF(G_ANY, 3, 2, 4);
    run_case();
    begin("log_softmax dim -1", ST_OP_LOG_SOFTMAX);
    TF(G_ANY, 3, 4);
    C.at.i[0] = -1;
    run_case();
    begin("log_softmax dim 0", ST_OP_LOG_SOFTMAX);
    TF(G_ANY, 3, 4);
    run_case();
    begin("layer_norm w b", ST_OP_LAYER_NORM);
    TF(G_ANY, 2, 3, 4);
    TF(G_ANY, 4);
    TF(G_ANY, 4);
    C.at.ndims = 1;
    C.at.f[0] = 1e-5;
    C.at.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    run_case();
    begin("layer_norm 2 dims w b", ST_OP_LAYER_NORM);
    TF(G_ANY, 2, 3, 4);
    TF(G_ANY, 3, 4);
    TF(G_ANY, 3, 4);
    C.at.ndims = 2;
    C.at.f[0] = 1e-5;
    C.at.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    run_case();
    begin("layer_norm plain", ST_OP_LAYER_NORM);
    TF(G_ANY, 3, 5);
    C.at.ndims = 1;
    C.at.f[0] = 1e-5;
    run_case();
    begin("layer_norm bias only", ST_OP_LAYER_NORM);
    TF(G_ANY, 3, 5);
    TF(G_ANY, 5);
    C.at.ndims = 1;
    C.at.f[0] = 1e-5;
    C.at.flags = ST_ATTR_HAS_BIAS;
    run_case();
    begin("gelu", ST_OP_GELU);
    TF(G_ANY, 3, 4);
    run_case();
    begin("gelu tanh", ST_OP_GELU);
    TF(G_ANY, 3, 4);
    C.at.flags = ST_ATTR_TANH;
    run_case();
    static const double tgt[4] = {2, -100, 0, 4};
    static const char *red[3] = {"cross_entropy none", "cross_entropy mean",
                                 "cross_entropy sum"};
    for (int r = 0; r < 3; r++) {
        begin(red[r], ST_OP_CROSS_ENTROPY);
        TF(G_ANY, 4, 5);
        targ_data(ST_INT64, tgt, 1, SH(4));
        C.at.i[0] = -100;
        C.at.i[1] = r;
        run_case();
    }
    static const double tgt2[3] = {1, 1, 0};
    begin("cross_entropy ignore_index 1", ST_OP_CROSS_ENTROPY);
    TF(G_ANY, 3, 2);
    targ_data(ST_INT64, tgt2, 1, SH(3));
    C.at.i[0] = 1;
    C.at.i[1] = 1;
    run_case();
    begin("linear 3-d bias", ST_OP_LINEAR);
    TF(G_ANY, 2, 3, 4);
    TF(G_ANY, 5, 4);
    TF(G_ANY, 5);
    C.at.flags = ST_ATTR_HAS_BIAS;
    run_case();
    begin("linear 1-d", ST_OP_LINEAR);
    TF(G_ANY, 4);
    TF(G_ANY, 3, 4);
    run_case();
    begin("clamp", ST_OP_CLAMP);
    TF(G_ANY, 3, 4);
    C.at.f[0] = -0.5;
    C.at.f[1] = 0.7;
    C.at.flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX;
    run_case();
    begin("clamp min int", ST_OP_CLAMP);
    TF(G_ANY, 3, 4);
    C.at.i[0] = 1;
    C.at.flags = ST_ATTR_HAS_MIN | ST_ATTR_INT_VALUE;
    run_case();
    /* at the bounds the gradient passes (PyTorch) */
    static const double cb[4] = {-1, 0, 1, 2}, og4[4] = {1, 2, 3, 4},
                        cg[4] = {0, 2, 3, 0};
    begin("clamp at bounds", ST_OP_CLAMP);
    targ_data(ST_FLOAT64, cb, 1, SH(4));
    C.at.f[0] = 0;
    C.at.f[1] = 1;
    C.at.flags = ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX;
    C.og_data = og4;
    C.expect[0] = cg;
    run_case();
    static const double mk[4] = {1, 0, 0, 1};
    begin("masked_fill broadcast", ST_OP_MASKED_FILL);
    TF(G_ANY, 3, 4);
    targ_data(ST_BOOL, mk, 1, SH(4));
    C.at.f[0] = -3;
    run_case();
    begin("masked_fill x broadcast", ST_OP_MASKED_FILL);
    TF(G_ANY, 4);
    targ_data(ST_BOOL, mk, 2, SH(1, 4));
    run_case();
}

/* ---- mixed dtypes: metas only ---- */

static void check_grad_meta(st_graph *g, int v, int x)
{
    CHECK(v >= 0);
    if (v < 0)
        return;
    const st_meta *gm = &g->values[v].meta, *xm = &g->values[x].meta;
    CHECK(gm->dtype == xm->dtype && gm->ndim == xm->ndim);
    for (int d = 0; d < xm->ndim && d < gm->ndim; d++)
        CHECK(gm->shape[d] == xm->shape[d]);
}

static void test_mixed_dtypes(void)
{
    static const st_op_id ops[] = {ST_OP_ADD, ST_OP_SUB, ST_OP_MUL, ST_OP_DIV,
                                   ST_OP_POW, ST_OP_MAXIMUM, ST_OP_MINIMUM,
                                   ST_OP_REMAINDER};
    static const st_dtype pairs[][2] = {{ST_FLOAT32, ST_FLOAT64},
                                        {ST_FLOAT16, ST_FLOAT32},
                                        {ST_BFLOAT16, ST_FLOAT16}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (size_t p = 0; p < 3; p++) {
            st_test_name = st_op(ops[i])->name;
            st_graph *g = st_ir_graph_new();
            st_meta ma = meta(pairs[p][0], 1, SH(3));
            st_meta mb = meta(pairs[p][1], 2, SH(2, 3));
            int a = st_ir_add_input(g, &ma, false);
            int b = st_ir_add_input(g, &mb, false);
            int in[2] = {a, b}, outs[ST_MAX_OUT];
            st_attrs at;
            memset(&at, 0, sizeof at);
            CHECK(st_ir_add_stmt(g, ops[i], in, 2, &at, outs) >= 0);
            int og = outs[0], gi[2];
            /* the rule gets a pointer into g->stmts: it must cope with the
             * array moving as it appends */
            CHECK(st_op(ops[i])->vjp(g, &g->stmts[g->nstmts - 1], &og, gi) ==
                  ST_OK);
            check_grad_meta(g, gi[0], a);
            check_grad_meta(g, gi[1], b);
            CHECK(st_ir_verify(g) == ST_OK);
            st_ir_graph_free(g);
        }
    /* float32 x with float64 layer_norm weight: each grad its own dtype */
    st_test_name = "layer_norm mixed";
    st_graph *g = st_ir_graph_new();
    st_meta mx = meta(ST_FLOAT16, 2, SH(3, 4)), mw = meta(ST_FLOAT16, 1, SH(4));
    int x = st_ir_add_input(g, &mx, false), w = st_ir_add_input(g, &mw, false);
    int bb = st_ir_add_input(g, &mw, false);
    int in[3] = {x, w, bb}, outs[ST_MAX_OUT], gi[3];
    st_attrs at;
    memset(&at, 0, sizeof at);
    at.ndims = 1;
    at.f[0] = 1e-5;
    at.flags = ST_ATTR_HAS_WEIGHT | ST_ATTR_HAS_BIAS;
    CHECK(st_ir_add_stmt(g, ST_OP_LAYER_NORM, in, 3, &at, outs) >= 0);
    int og = outs[0];
    CHECK(st_op(ST_OP_LAYER_NORM)->vjp(g, &g->stmts[0], &og, gi) == ST_OK);
    check_grad_meta(g, gi[0], x);
    check_grad_meta(g, gi[1], w);
    check_grad_meta(g, gi[2], bb);
    /* no gradient in: no gradients out */
    int none = -1;
    gi[0] = gi[1] = gi[2] = 7;
    CHECK(st_op(ST_OP_LAYER_NORM)->vjp(g, &g->stmts[0], &none, gi) == ST_OK);
    CHECK(gi[0] == -1 && gi[1] == -1 && gi[2] == -1);
    st_ir_graph_free(g);
}

static void test_registry(void)
{
    st_test_name = "registry";
    static const st_op_id nd[] = {
        ST_OP_LOGICAL_NOT, ST_OP_EQ, ST_OP_NE, ST_OP_LT, ST_OP_LE, ST_OP_GT,
        ST_OP_GE, ST_OP_LOGICAL_AND, ST_OP_LOGICAL_OR, ST_OP_FLOOR_DIVIDE,
        ST_OP_ARGMAX, ST_OP_ARGMIN, ST_OP_FULL, ST_OP_ARANGE, ST_OP_RAND,
        ST_OP_RANDN, ST_OP_RANDINT, ST_OP_DROPOUT};
    for (size_t i = 0; i < sizeof nd / sizeof nd[0]; i++) {
        if (st_op(nd[i])->vjp != NULL) {
            FAIL("%s has a VJP rule", st_op(nd[i])->name);
        }
    }
    int n = 0;
    for (int op = 0; op < ST_NOPS; op++)
        n += st_op((st_op_id)op)->vjp != NULL;
    CHECK(n == ST_NOPS - (int)(sizeof nd / sizeof nd[0]));
    CHECK(st_op(ST_OP_ADD)->vjp_saves == 0);
    CHECK(st_op(ST_OP_MUL)->vjp_saves == 3);
    CHECK(st_op(ST_OP_EXP)->vjp_saves == ST_VJP_SAVES_OUT);
    CHECK(st_op(ST_OP_GATHER)->vjp_saves == 2);
    /* idempotent */
    st_ir_autodiff_init();
    CHECK(st_op(ST_OP_MUL)->vjp_saves == 3);
}

static void test_sum_to(void)
{
    st_test_name = "sum_to";
    st_graph *g = st_ir_graph_new();
    st_meta m = meta(ST_FLOAT32, 3, SH(2, 3, 4));
    int v = st_ir_add_input(g, &m, false);
    static const struct { int nd; int64_t sh[4]; bool ok; } t[] = {
        {2, {3, 1}, true}, {1, {4}, true}, {0, {0}, true}, {3, {1, 3, 1}, true},
        {3, {2, 3, 4}, true}, {1, {1}, true}, {4, {1, 2, 3, 4}, false},
        {1, {3}, false}, {2, {2, 4}, false}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        st_meta tm = meta(ST_FLOAT32, t[i].nd, t[i].sh);
        st_err_clear();
        int r = st_ir_sum_to(g, v, &tm);
        CHECK((r >= 0) == t[i].ok);
        if (!t[i].ok) {
            CHECK(st_err_kind() != ST_OK);
            continue;
        }
        if (r < 0)
            continue;
        const st_meta *rm = &g->values[r].meta;
        CHECK(rm->ndim == t[i].nd && rm->dtype == ST_FLOAT32);
        for (int d = 0; d < t[i].nd && d < rm->ndim; d++)
            CHECK(rm->shape[d] == t[i].sh[d]);
    }
    st_meta same = meta(ST_FLOAT32, 3, SH(2, 3, 4));
    CHECK(st_ir_sum_to(g, v, &same) == v);
    CHECK(st_ir_sum_to(g, -1, &same) == -1);
    CHECK(st_ir_verify(g) == ST_OK);
    st_ir_graph_free(g);
    st_err_clear();
}

int main(void)
{
    st_ir_autodiff_init();
    st_ir_autodiff_init();
    RUN_TEST(test_registry());
    RUN_TEST(test_sum_to());
    RUN_TEST(test_mixed_dtypes());
    RUN_TEST(unary_cases());
    RUN_TEST(binary_cases());
    RUN_TEST(reduce_cases());
    RUN_TEST(matmul_cases());
    RUN_TEST(index_cases());
    RUN_TEST(view_cases());
    RUN_TEST(composite_cases());
    printf("test_autodiff: %ld cases, %ld gradient elements checked\n", ncases, nchecked);
    return st_test_exit_code("test_autodiff");
}
