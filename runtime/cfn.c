/* runtime/cfn.c - compiled functions (st_rt_cfn_*): what a compiled frame
 * runs. A forward graph lowered by fusion/ and compiled once by a backend,
 * run with its memory plan; with inputs that require grad, also the
 * AOTAutograd pair (a forward that outputs the saved values, and the
 * backward graph of every differentiable output, st_ir_backward_multi)
 * (both compiled on first use) and, per run in grad mode, one custom
 * tape node, "CompiledFunctionBackward", whose backward runs the compiled
 * backward graph on the saved tensors. Backend "eager" runs the graph's statements one by one through
 * st_rt_eager instead (the tape then records them as usual). After each
 * run the inputs the traced code mutated get their new values copied in
 * (recorded by autograd as eager's in-place copy when grad mode is on and
 * the value has a history), and outputs that are views (of an input, of
 * an input written in place, or of a computed value) are made again as
 * views of it, so they alias and have strides as in eager (find_aliases). */
#include "st_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* backward variants cached per compiled function (variant_of), and the
 * most independent parts that get a tape node each (find_parts): the rest
 * of the slots serve backwards from some of a part's outputs */
#define ST_CFN_NVAR 8
#define ST_CFN_NPART 6

/* One lowered and compiled program with the plan for contiguous inputs. */
typedef struct {
    st_kprog *p;
    void *compiled;
    st_mem_plan *plan;   /* for contiguous inputs; NULL until first used */
} prog;

struct st_rt_cfn {
    int64_t refcount;          /* the owner's, plus one per live tape node */
    st_graph *g;               /* the forward graph (owned) */
    st_backend *be;            /* NULL for "eager" */
    prog fwd;                  /* plain forward */
    int nvisible;
    bool grad_inside;          /* st_rt_cfn_opts' */
    int nwb, *wb_out, *wb_in;
    bool *wb_grad;             /* per writeback: written in grad mode */
    bool *wb_quiet;            /* per writeback: only .data aliases wrote it
                                  (the copy moves no version) */
    bool *wb_own;              /* per writeback: the old value is read only
                                  by the ops that write it (x.mul_(w)) */
    /* per visible output: the input it is a view of after the run (-1:
     * none), or the output it is a view of (alias_out), through view
     * statements alias_stmt[alias_at[k]..alias_at[k+1]) */
    int *alias_in, *alias_out, *alias_at, *alias_stmt;
    /* per visible output: a detached alias with a history of its own
     * (ST_VIEW_DETACHED): computed with its gradient, then its data is
     * moved into the storage of the view remade (make_aliases) */
    bool *alias_grad;
    /* autograd */
    bool has_bwd;
    /* the forward can run again eagerly from its inputs, for a backward
     * with create_graph=True: no saved value reads an input the run writes
     * back into, nor is a written value differentiable (the inputs hold the
     * new values afterwards: BatchNorm's running statistics qualify); random
     * ops draw again from the generator's state the run started from (eager
     * ops and kernels draw the same numbers) */
    bool recompute, random;
    int nwrt, *wrt;            /* input indices differentiated to */
    int ndiff, *diff;          /* visible output indices with gradients */
    st_ir_bwd_info info;
    st_graph *bwd_g, *fsave_g;   /* lowered and compiled on first use */
    prog fsave, bwd;
    /* backward graphs for the subsets of outputs that got gradients
     * (node_backward): a zero fed for an output that got none made NaN
     * where its derivative is infinite (sqrt(x).sum().item() at x = 0) */
    struct {
        uint64_t mask;       /* the outputs (bit k: diff[k]) with gradients */
        st_graph *g;
        prog p;
        int nsaved, *map;    /* its saved value k is info.saved[map[k]] */
        bool *reads;         /* per info.saved entry: this variant reads it */
        bool *reach;         /* per wrt input: these outputs depend on it */
    } var[ST_CFN_NVAR];
    int nvar;
    /* the independent parts of the gradient flow (find_parts): ncomp 0
     * until the first run that records, 1: one tape node for all; else
     * one node per part, with the outputs in comp_mask[c], the inputs
     * whose comp_of_wrt is c, running the variant comp_var[c] */
    int ncomp;
    uint64_t comp_mask[ST_CFN_NPART];
    int comp_var[ST_CFN_NPART];
    int *comp_of_wrt;
};

/* out[k] = a new reference to graph output k (all or none). */
static st_status take_outputs(const st_graph *g, st_tensor **vals,
                              st_tensor **out)
{
    for (int k = 0; k < g->noutputs; k++) {
        out[k] = vals[g->outputs[k]];
        if (!out[k]) {
            for (int j = 0; j < k; j++)
                st_tensor_decref(out[j]);
            return st_err(ST_ERR_RUNTIME, "cfn: output %d was not computed", k);
        }
        st_tensor_incref(out[k]);
    }
    return ST_OK;
}

/* Drops the run's references to every value, then the array. */
static void release_values(const st_graph *g, st_tensor **vals)
{
    for (int v = 0; v < g->nvalues; v++)
        st_tensor_decref(vals[v]);
    free(vals);
}

static void prog_clear(st_backend *be, prog *p)
{
    if (p->compiled && be)
        be->release(be, p->compiled);
    st_kprog_free(p->p);
    st_mem_plan_free(p->plan);
    memset(p, 0, sizeof *p);
}

static st_status prog_build(st_backend *be, const st_graph *g, prog *p);

/* The saving forward and the backward are compiled when first needed (a
 * compiled function that only ever runs under no_grad compiles neither). */
static st_status ensure(st_backend *be, const st_graph *g, prog *p)
{
    return p->compiled ? ST_OK : prog_build(be, g, p);
}

static st_status prog_build(st_backend *be, const st_graph *g, prog *p)
{
    memset(p, 0, sizeof *p);
    p->p = st_fuse_lower(g, NULL);
    if (!p->p)
        return st_err_kind() ? st_err_kind()
                             : st_err(ST_ERR_RUNTIME, "cfn: lowering failed");
    p->compiled = be->compile(be, p->p->kernels, p->p->nkernels);
    if (!p->compiled) {
        st_status s = st_err_kind() ? st_err_kind()
                                    : st_err(ST_ERR_RUNTIME,
                                             "cfn: compiling failed");
        prog_clear(be, p);
        return s;
    }
    return ST_OK;
}

/* Runs p on in[0..ninputs) (metas already checked); out[k] receives output
 * k of the program's graph (new references, n = its noutputs). With
 * `donate` the run takes over the caller's references in[k] (set to NULL,
 * whatever happens): the executor drops each input after its last reader,
 * so what nobody else holds is freed mid-run (see node_backward). */
static st_status prog_run(st_backend *be, prog *p, st_tensor **in,
                          st_tensor **out, bool donate)
{
    const st_graph *g = p->p->graph;
    st_tensor **vals = calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1),
                              sizeof *vals);
    if (!vals) {
        for (int k = 0; donate && k < g->ninputs; k++) {
            st_tensor_decref(in[k]);
            in[k] = NULL;
        }
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    }
    bool contig = true;
    for (int k = 0; k < g->ninputs; k++) {
        st_tensor *t = in[k];
        st_device *d = st_tensor_device(t);
        if (d->type != be->device) {
            /* a 0-d CPU tensor joins a GPU graph (as in eager); other
             * inputs must be where the backend's kernels run */
            st_device *bd = st_rt_device(be->device, 0);
            t = bd && d->type == ST_DEV_CPU && t->ndim == 0 ? st_rt_to_device(t, bd)
                                                            : NULL;
            if (donate) {
                st_tensor_decref(in[k]);
                in[k] = NULL;
            }
            if (!t) {
                for (int j = 0; j < k; j++)
                    st_tensor_decref(vals[g->inputs[j]]);
                for (int j = k + 1; donate && j < g->ninputs; j++) {
                    st_tensor_decref(in[j]);
                    in[j] = NULL;
                }
                free(vals);
                return st_err_kind() ? st_err_kind()
                     : st_err(ST_ERR_RUNTIME, "compiled graph (backend %s): input %d "
                              "is on %s; expected all tensors to be on the "
                              "backend's device", be->name, k, d->name);
            }
        } else if (donate) {
            in[k] = NULL;   /* the reference moves into vals */
        } else {
            st_tensor_incref(t);
        }
        vals[g->inputs[k]] = t;
        contig &= st_tensor_is_contiguous(t);
    }
    const st_mem_plan *plan = NULL, *acquired = NULL;
    if (contig) {
        if (!p->plan)
            p->plan = st_fuse_plan(p->p, NULL);
        plan = p->plan;
    } else {
        /* a plan per input layout and sizes, kept by the program (planning
         * a large backward graph costs more than running it); made after
         * the sizes are bound, so that it is for this run's sizes */
        const int64_t **strides = malloc(sizeof *strides *
                                         (size_t)(g->ninputs ? g->ninputs : 1));
        if (strides && st_rt_exec_bind(p->p, vals) != ST_OK) {
            free(strides);
            release_values(g, vals);
            return st_err_kind();
        }
        if (strides) {
            for (int k = 0; k < g->ninputs; k++)
                strides[k] = vals[g->inputs[k]]->strides;
            plan = acquired = st_fuse_plan_acquire(p->p, strides);
            free(strides);
        }
    }
    st_status s = plan ? st_rt_exec_planned(p->p, be, p->compiled, vals, plan,
                                            NULL)
                       : (st_err_kind() ? st_err_kind()
                                        : st_err(ST_ERR_MEMORY,
                                                 "cfn: no memory plan"));
    if (s == ST_OK)
        s = take_outputs(g, vals, out);
    release_values(g, vals);
    st_fuse_plan_release(p->p, acquired);
    return s;
}

/* ---------------- the "eager" backend ----------------
 * Statements run one by one through st_rt_eager, recorded on the tape as
 * usual; statements of a stop-gradient region run with grad mode off; a
 * PyLayer region's statements run with grad mode off too and its outputs
 * get a custom node running the region's backward graph (eagerly). */
typedef struct {
    st_rt_cfn *f;               /* a reference: keeps the region alive */
    const st_ir_region *rg;
    st_tensor **read;           /* nread detached aliases */
    st_meta *out_meta;          /* nout */
} rctx;

static st_status eager_run_graph(const st_graph *g, st_tensor *const *in,
                                 st_tensor **out, st_rt_cfn *owner);

static void rctx_free(void *p)
{
    rctx *c = p;
    for (int k = 0; c->read && k < c->rg->nread; k++)
        st_tensor_decref(c->read[k]);
    free(c->read);
    free(c->out_meta);
    st_rt_cfn_free(c->f);
    free(c);
}

static st_tensor *zeros_of(const st_meta *m);

static st_status region_backward(void *ctx, int nout, st_tensor *const *gout,
                                 int nin, st_tensor **gin)
{
    rctx *c = ctx;
    const st_ir_region *rg = c->rg;
    int n = rg->nout + rg->nread;
    st_tensor **in = calloc((size_t)(n ? n : 1), sizeof *in);
    st_status s = in ? ST_OK : st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    for (int k = 0; k < nin; k++)
        gin[k] = NULL;
    for (int k = 0; s == ST_OK && k < rg->nout && k < nout; k++) {
        in[k] = gout[k];
        if (in[k])
            st_tensor_incref(in[k]);
        else if (!(in[k] = zeros_of(&c->out_meta[k])))
            s = st_err_kind();
    }
    for (int k = 0; s == ST_OK && k < rg->nread; k++) {
        in[rg->nout + k] = c->read[k];
        st_tensor_incref(in[rg->nout + k]);
    }
    if (s == ST_OK)
        s = eager_run_graph(rg->bwd, in, gin, NULL);
    for (int k = 0; in && k < n; k++)
        st_tensor_decref(in[k]);
    free(in);
    return s;
}

/* After a PyLayer region's statements ran: its custom node. */
static st_status region_node(st_rt_cfn *owner, const st_graph *g,
                             const st_ir_region *rg, st_tensor **vals)
{
    bool any = false;
    for (int k = 0; k < rg->nin; k++)
        any |= vals[rg->in[k]] && vals[rg->in[k]]->requires_grad;
    if (!any || !st_ad_grad_enabled() || !owner)
        return ST_OK;
    rctx *c = calloc(1, sizeof *c);
    st_tensor **ins = calloc((size_t)(rg->nin ? rg->nin : 1), sizeof *ins);
    st_tensor **outs = calloc((size_t)(rg->nout ? rg->nout : 1), sizeof *outs);
    if (c) {
        c->rg = rg;
        c->read = calloc((size_t)(rg->nread ? rg->nread : 1), sizeof *c->read);
        c->out_meta = calloc((size_t)(rg->nout ? rg->nout : 1),
                             sizeof *c->out_meta);
    }
    st_status s = ST_OK;
    if (!c || !ins || !outs || !c->read || !c->out_meta) {
        s = st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        goto fail;
    }
    for (int k = 0; k < rg->nread; k++) {
        st_tensor *t = vals[rg->read[k]];
        if (!t || !(c->read[k] = st_tensor_view_of(t, t->ndim, t->shape,
                                                   t->strides, t->offset))) {
            s = t ? st_err_kind() : st_err(ST_ERR_RUNTIME, "cfn: a value the "
                                           "PyLayer backward reads is gone");
            goto fail;
        }
    }
    for (int k = 0; k < rg->nin; k++)
        ins[k] = vals[rg->in[k]];
    for (int k = 0; k < rg->nout; k++) {
        int v = rg->out[k];
        c->out_meta[k] = g->values[v >= 0 ? v : 0].meta;
        outs[k] = v >= 0 && st_dtype_is_float(g->values[v].meta.dtype)
                      ? vals[v] : NULL;
    }
    __atomic_add_fetch(&owner->refcount, 1, __ATOMIC_RELAXED);
    c->f = owner;
    st_ad_node *n = st_ad_custom_node("PyLayerRegionBackward", region_backward,
                                      c, rctx_free, rg->nin, ins, rg->nout,
                                      outs);
    free(ins);
    free(outs);
    if (!n) {
        rctx_free(c);
        return st_err_kind();
    }
    /* the region's backward graph reads detached values */
    st_ad_node_set_once_differentiable(n);
    st_ad_node_decref(n);
    return ST_OK;
fail:
    if (c) {
        c->f = NULL;
        for (int k = 0; c->read && k < rg->nread; k++)
            st_tensor_decref(c->read[k]);
        free(c->read);
        free(c->out_meta);
        free(c);
    }
    free(ins);
    free(outs);
    return s;
}

/* owner NULL: no tape nodes for regions (a region's own backward graph). */
static st_status eager_run_graph(const st_graph *g, st_tensor *const *in,
                                 st_tensor **out, st_rt_cfn *owner)
{
    st_tensor **vals = calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1),
                              sizeof *vals);
    int *rmap = g->nregions ? malloc(sizeof(int) * (size_t)(g->nstmts ? g->nstmts : 1))
                            : NULL;
    if (!vals || (g->nregions && !rmap)) {
        free(vals);
        free(rmap);
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    }
    for (int si = 0; rmap && si < g->nstmts; si++)
        rmap[si] = -1;
    for (int r = 0; r < g->nregions; r++)
        for (int si = g->regions[r].first; si < g->regions[r].end && si < g->nstmts; si++)
            rmap[si] = r;
    bool grad = st_ad_grad_enabled();
    /* the graph holds the casts autocast made when it was traced: its
     * statements run as recorded */
    uint32_t autocast = st_rt_autocast_swap(0);
    st_status s = ST_OK;
    for (int k = 0; k < g->ninputs; k++) {
        st_tensor_incref(in[k]);
        vals[g->inputs[k]] = in[k];
    }
    for (int si = 0; si < g->nstmts && s == ST_OK; si++) {
        const st_stmt *st = &g->stmts[si];
        int r = rmap ? rmap[si] : -1;
        st_ad_set_grad_enabled(grad && r < 0);
        st_tensor *res[ST_MAX_OUT] = {NULL, NULL, NULL};
        if (st_op(st->op)->kind == ST_OPK_VIEW) {
            res[0] = st_tensor_apply_view(vals[st->in[0]], st->op, &st->attrs);
            if (!res[0])
                s = st_err_kind();
        } else {
            st_operand ops[ST_MAX_IN];
            memset(ops, 0, sizeof ops);
            for (int k = 0; k < st->nin; k++) {
                const st_value *v = &g->values[st->in[k]];
                if (v->kind == ST_VAL_CONST) {
                    ops[k].sdtype = v->meta.dtype;
                    ops[k].f = v->fconst;
                    ops[k].i = v->iconst;
                } else {
                    ops[k].t = vals[st->in[k]];
                }
            }
            int n = st_rt_eager(st->op, ops, st->nin, &st->attrs, NULL, res);
            if (n < 0)
                s = st_err_kind();
            else if (n != st->nout) {
                for (int k = 0; k < n; k++)
                    st_tensor_decref(res[k]);
                s = st_err(ST_ERR_RUNTIME, "cfn: %s gave %d results, the "
                           "graph expects %d", st_op(st->op)->name, n,
                           st->nout);
            }
        }
        if (s == ST_OK)
            for (int k = 0; k < st->nout; k++)
                vals[st->out[k]] = res[k];
        st_ad_set_grad_enabled(grad);
        if (s == ST_OK && r >= 0 && g->regions[r].bwd &&
            si == g->regions[r].end - 1)
            s = region_node(owner, g, &g->regions[r], vals);
    }
    st_ad_set_grad_enabled(grad);
    st_rt_autocast_swap(autocast);
    if (s == ST_OK)
        s = take_outputs(g, vals, out);
    release_values(g, vals);
    free(rmap);
    return s;
}

st_status st_rt_graph_run_eager(const st_graph *g, st_tensor *const *in, st_tensor **out)
{
    return eager_run_graph(g, in, out, NULL);
}

/* ---------------- construction ---------------- */

/* SYMTRACE_SAVED_LOG=1: the values the forward saves for the backward
 * (stderr) in forward order, with producer, dtype, shape and bytes: what a
 * compiled training step keeps alive between its forward and backward. */
static void log_saved(const st_graph *g, const st_ir_bwd_info *info)
{
    const char *e = getenv("SYMTRACE_SAVED_LOG");
    if (!e || e[0] != '1')
        return;
    int64_t total = 0;
    fprintf(stderr, "symtrace saved for backward: %d values\n", info->nsaved);
    for (int k = 0; k < info->nsaved; k++) {
        const st_value *v = &g->values[info->saved[k]];
        if (v->meta.kind == ST_META_SCALAR)
            continue;
        int64_t n = st_meta_numel(&v->meta) * (int64_t)st_dtype_size(v->meta.dtype);
        total += n;
        char sh[128], nm[64];
        const char *op = v->producer >= 0 ? st_op(g->stmts[v->producer].op)->name
                         : v->kind == ST_VAL_PARAM ? "param" : "input";
        char args[160] = "";
        if (v->producer >= 0) {
            const st_stmt *st = &g->stmts[v->producer];
            size_t used = 0;
            for (int i = 0; i < st->nin && used + 1 < sizeof args; i++) {
                char a[64];
                int w = snprintf(args + used, sizeof args - used, "%s%s", i ? ", " : "",
                                 st_ir_value_name(g, st->in[i], a, sizeof a));
                if (w > 0)
                    used += (size_t)w;
            }
        }
        fprintf(stderr, "  %-10s %-9s %-20s %8.2f MB = %s(%s)\n",
                st_ir_value_name(g, info->saved[k], nm, sizeof nm), st_dtype_name(v->meta.dtype),
                st_shape_str(v->meta.shape, v->meta.ndim, sh, sizeof sh), n / 1e6, op, args);
    }
    fprintf(stderr, "symtrace saved for backward: %.2f MB in all\n", total / 1e6);
}

/* Is statement si inside a stop-gradient region (traced under no_grad)? */
static bool in_nograd(const st_graph *g, int si)
{
    return st_ir_stmt_in_region(g, si, false);
}

/* wb_own[m]: every statement that reads input wb_in[m]'s old value and
 * may save it leads to the value written back into it (x.mul_(w);
 * x.add_(1)): the in-place ops themselves read it, and eager saves what
 * such an op overwrites, so a run saves a copy of it. Otherwise another op
 * read and saved it as it was (y = x * w, then x.mul_(2)), and backward
 * fails as eager's does. An op saves an operand only when a gradient flows
 * through it (from: the values reached from inputs that need one): with
 * neither that operand nor another one reached (v = x * 2 with x needing
 * none, then x.div_(w)) it saves nothing. */
static st_status own_writes(st_rt_cfn *f, const bool *from)
{
    const st_graph *g = f->g;
    f->wb_own = calloc((size_t)f->nwb, sizeof(bool));
    bool *dep = malloc((size_t)(g->nvalues ? g->nvalues : 1));
    if (!f->wb_own || !dep) {
        free(dep);
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    }
    for (int m = 0; m < f->nwb; m++) {
        memset(dep, 0, (size_t)g->nvalues);
        dep[g->outputs[f->wb_out[m]]] = true;
        for (int si = g->nstmts - 1; si >= 0; si--) {
            const st_stmt *st = &g->stmts[si];
            bool any = false;
            for (int o = 0; o < st->nout; o++)
                any |= dep[st->out[o]];
            for (int i = 0; any && i < st->nin; i++)
                dep[st->in[i]] = true;
        }
        int old = g->inputs[f->wb_in[m]];
        bool own = true;
        for (int si = 0; si < g->nstmts && own; si++) {
            const st_stmt *st = &g->stmts[si];
            bool reads = false, leads = false, grads = false;
            for (int i = 0; i < st->nin; i++) {
                reads |= st->in[i] == old && st_ir_vjp_reads(g, si, i, from);
                grads |= from[st->in[i]];
            }
            for (int o = 0; o < st->nout; o++)
                leads |= dep[st->out[o]];
            own = !reads || leads || !grads;
        }
        f->wb_own[m] = own;
    }
    free(dep);
    return ST_OK;
}

/* ---- outputs that are views of inputs ----
 * In eager code a view of an input (x[1:], x.t(), x.detach()) shares x's
 * storage, and so does a view of an input written in place (v = x[0];
 * x.mul_(2)): later writes to either show in the other. The compiled
 * program computes such an output into its own buffer, so after each run
 * (and the writebacks) the output is made again as a view of the input
 * itself, by the same view statements. Its root is the input's value when
 * the input is not written back, or the value written back into it. */
static st_status find_aliases(st_rt_cfn *f)
{
    st_graph *g = f->g;
    int n = f->nvisible;
    f->alias_in = malloc(sizeof(int) * (size_t)(n + 1));
    f->alias_out = malloc(sizeof(int) * (size_t)(n + 1));
    f->alias_at = malloc(sizeof(int) * (size_t)(n + 1));
    int cap = 16, used = 0;
    f->alias_stmt = malloc(sizeof(int) * (size_t)cap);
    f->alias_grad = calloc((size_t)(n + 1), sizeof(bool));
    if (!f->alias_in || !f->alias_out || !f->alias_at || !f->alias_stmt || !f->alias_grad)
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    for (int k = 0; k < n; k++) {
        f->alias_in[k] = f->alias_out[k] = -1;
        f->alias_at[k] = used;
        int v = g->outputs[k], chain[64], nc = 0, j = -1;
        /* stop_gradient(new) + zero_keeping_grad(old) (trace.c,
         * detached_write): new's data, from the marked reshape down */
        int p0 = g->values[v].producer;
        if (p0 >= 0 && g->stmts[p0].op == ST_OP_ADD && g->stmts[p0].nin == 2) {
            int ps = g->values[g->stmts[p0].in[0]].producer;
            if (ps >= 0 && g->stmts[ps].op == ST_OP_RESHAPE &&
                (g->stmts[ps].attrs.flags & ST_VIEW_DETACHED)) {
                f->alias_grad[k] = true;
                v = g->stmts[p0].in[0];
            }
        }
        bool old_input = false, region = false;
        int vis = -1;   /* a visible output up the chain that was no view */
        for (;;) {
            /* the first value up the chain that an input holds after the run */
            for (int m = 0; m < f->nwb && j < 0; m++)
                if (g->outputs[f->wb_out[m]] == v)
                    j = f->wb_in[m];
            for (int i = 0; i < g->ninputs && j < 0 && !old_input; i++) {
                if (g->inputs[i] != v)
                    continue;
                bool written = false;
                for (int m = 0; m < f->nwb; m++)
                    written |= f->wb_in[m] == i;
                if (!written)
                    j = i;
                else   /* the old value of a written input: no alias */
                    old_input = true;
            }
            int p = g->values[v].producer;
            /* a view of an output that was no view when traced (y =
             * x * 2; y[i] += 1; a copying reshape): eager's view of y is
             * one of that output, not of the buffer the program made it
             * from, so a write into it reaches y's history */
            for (int q = 0; q < n && nc > 0 && j < 0 && !old_input && vis < 0; q++)
                if (q != k && g->outputs[q] == v && p >= 0 &&
                    (g->stmts[p].attrs.flags & ST_VIEW_OWN))
                    vis = q;
            if (j >= 0 || old_input || vis >= 0 || p < 0 || nc == 64)
                break;
            const st_stmt *st = &g->stmts[p];
            if (st_op(st->op)->kind != ST_OPK_VIEW || st->nout != 1)
                break;
            region |= st_ir_stmt_in_region(g, p, true);
            chain[nc++] = p;
            v = st->in[0];
        }
        if (nc == 0 || nc == 64 || old_input) {   /* an input returned as is: the frontend's */
            f->alias_grad[k] = false;
            continue;
        }
        /* a view a custom Function's forward returned is that Function's
         * output: its gradient comes from the region's backward (made as a
         * view of its root, it had none, or the view's, from the second
         * call). The price: a view of an input is not remade as one (a
         * write into it does not reach the input, as it does in eager). */
        if (region || (j < 0 && g->values[v].producer < 0)) {
            f->alias_grad[k] = false;
            continue;
        }
        if (vis >= 0) {
            f->alias_out[k] = vis;   /* made after it (make_aliases) */
        } else if (j < 0) {
            /* a view of a computed value (y.expand(...), y[::2], y.t()):
             * made as a view of it (an output, or one added, not visible),
             * with eager's strides and aliasing */
            int o = -1;
            for (int q = 0; q < g->noutputs && o < 0; q++)
                if (g->outputs[q] == v && (q < n || q >= n + f->nwb))
                    o = q;
            if (o < 0) {
                int before = g->noutputs;
                st_ir_mark_output(g, v);
                if (g->noutputs != before + 1)
                    return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
                o = before;
            }
            f->alias_out[k] = o;
        } else {
            f->alias_in[k] = j;
        }
        if (used + nc > cap) {
            cap = 2 * (used + nc);
            int *ns = realloc(f->alias_stmt, sizeof(int) * (size_t)cap);
            if (!ns)
                return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
            f->alias_stmt = ns;
        }
        for (int q = nc - 1; q >= 0; q--)
            f->alias_stmt[used++] = chain[q];
    }
    f->alias_at[n] = used;
    return ST_OK;
}

/* Remakes the aliasing outputs as views of their inputs (after the
 * writebacks; in grad mode they get view histories, as in eager). Pass 0
 * makes those of inputs and of computed values, pass 1 those of visible
 * outputs (find_aliases' vis: made after no_view_of_buffer). */
static st_status make_aliases(st_rt_cfn *f, st_tensor *const *inputs,
                              st_tensor **outs, int pass)
{
    const st_graph *g = f->g;
    bool grad = st_ad_grad_enabled();
    st_status s = ST_OK;
    /* a root added as an output (not visible) that the program made as a
     * view of its own buffer (a scatter that took its base's buffer): no
     * view to autograd, or views of it would have that dead buffer, which
     * needs no gradient, as their base (a write into one then fails) */
    for (int q = f->nvisible + f->nwb; pass == 0 && q < g->noutputs; q++) {
        st_tensor *t = outs[q], *b = t ? t->view_base : NULL;
        bool seen = !b;
        for (int j = 0; !seen && j < g->ninputs; j++)
            seen = inputs[j] == b;
        if (!seen) {
            t->view_base = NULL;
            t->is_view = false;
            st_tensor_decref(b);
        }
    }
    for (int k = 0; k < f->nvisible && s == ST_OK; k++) {
        if (f->alias_in[k] < 0 && f->alias_out[k] < 0)
            continue;
        if ((f->alias_in[k] < 0 && f->alias_out[k] < f->nvisible) != (pass == 1))
            continue;
        st_tensor *t = f->alias_in[k] >= 0 ? inputs[f->alias_in[k]] : outs[f->alias_out[k]];
        st_tensor_incref(t);
        bool own = f->alias_grad[k];
        for (int q = f->alias_at[k]; q < f->alias_at[k + 1] && t; q++) {
            const st_stmt *st = &g->stmts[f->alias_stmt[q]];
            bool nograd = in_nograd(g, f->alias_stmt[q]) || own;
            bool ident = st->op == ST_OP_PERMUTE && st->attrs.ndims == t->ndim;
            for (int d = 0; ident && d < t->ndim; d++)
                ident = st->attrs.dims[d] == d;
            st_ad_set_grad_enabled(grad && !nograd);
            /* detach() is traced as an identity permute under a stop-
             * gradient: a plain alias, not an autograd view */
            st_tensor *r = nograd && ident
                ? st_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset)
                : st_tensor_apply_view(t, st->op, &st->attrs);
            st_tensor_decref(t);
            t = r;
        }
        st_ad_set_grad_enabled(grad);
        if (!t) {
            s = st_err_kind();
            break;
        }
        if (own) {
            /* a detached alias with its own history: the computed output
             * (its gradient) in the storage of the view remade (eager's
             * v = x.t().detach(); v.add_(x.sum())) */
            st_tensor *o = outs[k];
            st_storage_incref(t->storage);
            st_storage_decref(o->storage);
            o->storage = t->storage;
            o->offset = t->offset;
            memcpy(o->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
            st_tensor_decref(t);
            continue;
        }
        st_tensor_decref(outs[k]);
        outs[k] = t;
    }
    return s;
}

/* The values outs[0..n) depend on through differentiable statements (the
 * reverse of st_ir_grad_reach): malloc'd flags per value, NULL on OOM. */
static bool *needed(const st_graph *g, const int *outs, int n)
{
    bool *need = calloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof *need);
    if (!need)
        return NULL;
    for (int k = 0; k < n; k++)
        need[outs[k]] = true;
    /* the PyLayer region (with a backward) starting at each statement */
    int *rstart = NULL;
    for (int r = 0; r < g->nregions; r++) {
        const st_ir_region *rg = &g->regions[r];
        if (!rg->bwd || rg->first < 0 || rg->first >= g->nstmts)
            continue;
        if (!rstart) {
            rstart = malloc(sizeof(int) * (size_t)g->nstmts);
            if (!rstart) {
                free(need);
                return NULL;
            }
            for (int si = 0; si < g->nstmts; si++)
                rstart[si] = -1;
        }
        rstart[rg->first] = r;
    }
    for (int si = g->nstmts - 1; si >= 0; si--) {
        const st_stmt *st = &g->stmts[si];
        const st_op_def *def = st_op(st->op);
        /* a PyLayer region's backward gives every input of the region a
         * gradient, whichever of them its forward's statements read (an
         * output computed from a detached copy still needs the input) */
        if (rstart && rstart[si] >= 0) {
            const st_ir_region *rg = &g->regions[rstart[si]];
            bool hit = false;
            for (int o = 0; o < rg->nout && !hit; o++)
                hit = rg->out[o] >= 0 && need[rg->out[o]] &&
                      st_dtype_is_float(g->values[rg->out[o]].meta.dtype);
            for (int i = 0; hit && i < rg->nin; i++)
                if (rg->in[i] >= 0)
                    need[rg->in[i]] = true;
        }
        if (in_nograd(g, si))
            continue;
        if (!st_ir_stmt_in_region(g, si, true) && (!def || !def->vjp))
            continue;
        /* as st_ir_grad_reach: only float values carry a gradient (an
         * input read only through .int() gets none) */
        bool any = false;
        for (int o = 0; o < st->nout; o++)
            any |= need[st->out[o]] && st_dtype_is_float(g->values[st->out[o]].meta.dtype);
        for (int i = 0; any && i < st->nin; i++)
            need[st->in[i]] = true;
    }
    free(rstart);
    return need;
}


/* Does a saved value (fsave_g's outputs past the forward's) depend on an
 * input the run writes back into, or does a written value carry a gradient
 * (a float reached from the inputs differentiated to: from)? Then the
 * forward cannot run again from the inputs after the run (their new
 * values): create_graph has no recompute. */
static bool saved_read_written(const st_rt_cfn *f, const bool *from)
{
    if (!f->nwb)
        return false;
    const st_graph *fs = f->fsave_g, *g = f->g;
    if (fs->ninputs != g->ninputs)
        return true;
    for (int m = 0; m < f->nwb; m++) {
        int v = g->outputs[f->wb_out[m]];
        if (f->wb_grad[m] && from[v] && st_dtype_is_float(g->values[v].meta.dtype))
            return true;
    }
    bool *need = calloc((size_t)fs->nvalues + 1, sizeof *need);
    if (!need)
        return true;
    for (int q = f->g->noutputs; q < fs->noutputs; q++)
        need[fs->outputs[q]] = true;
    for (int si = fs->nstmts - 1; si >= 0; si--) {
        const st_stmt *st = &fs->stmts[si];
        bool any = false;
        for (int o = 0; o < st->nout && !any; o++)
            any = st->out[o] >= 0 && need[st->out[o]];
        for (int a = 0; any && a < st->nin; a++)
            if (st->in[a] >= 0)
                need[st->in[a]] = true;
    }
    bool hit = false;
    for (int m = 0; m < f->nwb && !hit; m++)
        hit = need[fs->inputs[f->wb_in[m]]];
    free(need);
    return hit;
}

static st_status build_backward(st_rt_cfn *f, const bool *rg)
{
    const st_graph *g = f->g;
    f->wrt = malloc(sizeof(int) * (size_t)(g->ninputs ? g->ninputs : 1));
    f->diff = malloc(sizeof(int) * (size_t)(g->noutputs ? g->noutputs : 1));
    int *wrt_v = malloc(sizeof(int) * (size_t)(g->ninputs ? g->ninputs : 1));
    int *outs_v = malloc(sizeof(int) * (size_t)(g->noutputs ? g->noutputs : 1));
    bool *from = NULL;
    st_status s = ST_OK;
    if (!f->wrt || !f->diff || !wrt_v || !outs_v) {
        s = st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        goto done;
    }
    for (int k = 0; k < g->ninputs; k++)
        if (rg[k] && st_dtype_is_float(g->values[g->inputs[k]].meta.dtype)) {
            wrt_v[f->nwrt] = g->inputs[k];
            f->wrt[f->nwrt++] = k;
        }
    if (!f->nwrt)
        goto done;
    from = st_ir_grad_reach(g, wrt_v, f->nwrt);
    if (!from) {
        s = st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        goto done;
    }
    /* the visible outputs (but those remade as views, whose gradients
     * flow through their roots' histories), the values written back (the
     * inputs take their histories, as an in-place op) and the roots of
     * views added as outputs (find_aliases) */
    for (int k = 0; k < g->noutputs; k++) {
        int v = g->outputs[k];
        if ((k < f->nvisible && !f->alias_grad[k] &&
             (f->alias_in[k] >= 0 || f->alias_out[k] >= 0)) || !from[v] ||
            !st_dtype_is_float(g->values[v].meta.dtype))
            continue;
        outs_v[f->ndiff] = v;
        f->diff[f->ndiff++] = k;
    }
    if (!f->ndiff)
        goto done;
    /* an input no differentiable output depends on gets no gradient (None,
     * as in eager), not zeros: a zero sent into a history that holds NaN
     * (pow(x, 0.5) of a negative x, read by no output) made NaN */
    bool *need = needed(g, outs_v, f->ndiff);
    if (!need) {
        s = st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        goto done;
    }
    int kept = 0;
    for (int k = 0; k < f->nwrt; k++)
        if (need[wrt_v[k]]) {
            wrt_v[kept] = wrt_v[k];
            f->wrt[kept++] = f->wrt[k];
        }
    f->nwrt = kept;
    free(need);
    if (!f->nwrt)
        goto done;
    s = st_ir_backward_multi(g, wrt_v, f->nwrt, outs_v, f->ndiff, &f->bwd_g,
                             &f->info);
    if (s != ST_OK)
        goto done;
    st_graph *fs = st_ir_forward_saving(g, &f->info);
    if (!fs) {
        s = st_err_kind();
        goto done;
    }
    log_saved(g, &f->info);
    f->fsave_g = fs;
    f->has_bwd = true;
    f->recompute = !saved_read_written(f, from);
    for (int si = 0; si < g->nstmts; si++)
        f->random |= st_op(g->stmts[si].op)->kind == ST_OPK_RANDOM ||
                     g->stmts[si].op == ST_OP_DROPOUT;
    /* read only by runs that save for backward (an optimizer's graph,
     * with many writebacks, has none) */
    s = f->nwb ? own_writes(f, from) : ST_OK;
done:
    free(wrt_v);
    free(outs_v);
    free(from);
    return s;
}

st_rt_cfn *st_rt_cfn_new(st_graph *g, const st_rt_cfn_opts *o)
{
    if (!g) {
        st_err(ST_ERR_VALUE, "cfn: no graph");
        return NULL;
    }
    st_rt_cfn *f = calloc(1, sizeof *f);
    if (!f) {
        st_ir_graph_free(g);
        st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        return NULL;
    }
    f->g = g;
    st_ir_bwd_info_clear(&f->info);
    const char *bname = o && o->backend ? o->backend : "interp";
    f->refcount = 1;
    /* nvisible 0 without writebacks: every output is visible */
    f->nvisible = o && (o->nvisible > 0 || o->nwriteback > 0) ? o->nvisible
                                                              : g->noutputs;
    if (f->nvisible < 0 || f->nvisible > g->noutputs) {
        st_err(ST_ERR_VALUE, "cfn: %d visible outputs, the graph has %d",
               f->nvisible, g->noutputs);
        goto fail;
    }
    if (strcmp(bname, "eager") != 0) {
        f->be = st_backend_get(bname);
        if (!f->be) {
            st_err(ST_ERR_VALUE, "cfn: no backend named '%s' in this build",
                   bname);
            goto fail;
        }
    }
    if (st_ir_verify(g) != ST_OK)
        goto fail;
    if (o && o->nwriteback > 0) {
        f->nwb = o->nwriteback;
        f->wb_out = malloc(sizeof(int) * (size_t)f->nwb);
        f->wb_in = malloc(sizeof(int) * (size_t)f->nwb);
        if (!f->wb_out || !f->wb_in) {
            st_err(ST_ERR_MEMORY, "cfn: out of host memory");
            goto fail;
        }
        for (int k = 0; k < f->nwb; k++) {
            int a = o->writeback_out[k], b = o->writeback_in[k];
            if (a < 0 || a >= g->noutputs || b < 0 || b >= g->ninputs) {
                st_err(ST_ERR_INDEX, "cfn: writeback pair %d (output %d -> "
                       "input %d) is out of range", k, a, b);
                goto fail;
            }
            f->wb_out[k] = a;
            f->wb_in[k] = b;
        }
        f->wb_grad = calloc((size_t)f->nwb, sizeof(bool));
        f->wb_quiet = calloc((size_t)f->nwb, sizeof(bool));
        if (!f->wb_grad || !f->wb_quiet) {
            st_err(ST_ERR_MEMORY, "cfn: out of host memory");
            goto fail;
        }
        for (int k = 0; k < f->nwb; k++) {
            int p = g->values[g->outputs[f->wb_out[k]]].producer;
            f->wb_grad[k] = p >= 0 && !in_nograd(g, p);
            f->wb_quiet[k] = o->writeback_quiet && o->writeback_quiet[k];
        }
    }
    if (find_aliases(f) != ST_OK)
        goto fail;
    f->grad_inside = o && o->grad_inside;
    if (f->be && prog_build(f->be, g, &f->fwd) != ST_OK)
        goto fail;
    if (o && o->input_requires_grad && f->be &&
        build_backward(f, o->input_requires_grad) != ST_OK)
        goto fail;
    return f;
fail:
    st_rt_cfn_free(f);
    return NULL;
}

/* Freed when the owner and every tape node made by its runs let go. */
void st_rt_cfn_free(st_rt_cfn *f)
{
    if (!f || __atomic_sub_fetch(&f->refcount, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    prog_clear(f->be, &f->fwd);
    prog_clear(f->be, &f->fsave);
    prog_clear(f->be, &f->bwd);
    for (int v = 0; v < f->nvar; v++) {
        prog_clear(f->be, &f->var[v].p);
        st_ir_graph_free(f->var[v].g);
        free(f->var[v].map);
        free(f->var[v].reads);
        free(f->var[v].reach);
    }
    st_ir_graph_free(f->bwd_g);
    st_ir_graph_free(f->fsave_g);
    st_ir_bwd_info_clear(&f->info);
    st_ir_graph_free(f->g);
    free(f->wb_out);
    free(f->wb_in);
    free(f->wb_grad);
    free(f->wb_quiet);
    free(f->wb_own);
    free(f->alias_in);
    free(f->alias_out);
    free(f->alias_at);
    free(f->alias_stmt);
    free(f->alias_grad);
    free(f->wrt);
    free(f->diff);
    free(f->comp_of_wrt);
    free(f);
}

/* ---------------- the tape node ---------------- */
typedef struct {
    st_rt_cfn *f;              /* a reference (st_rt_cfn_free drops it) */
    st_tensor **saved;         /* info.nsaved detached aliases */
    uint32_t *saved_ver;       /* their storage versions after the run */
    st_meta *out_meta;         /* ndiff metas of the differentiable outputs */
    int *grad_slot;            /* per node input: index into f->wrt */
    /* f->recompute: the forward's inputs themselves (with their
     * histories) and their versions, for a backward with create_graph */
    st_tensor **inputs;
    uint32_t *in_ver;
    uint64_t rng_seed, rng_off;  /* the generator before the run (f->random) */
    /* outputs (bit k: diff output k) a backward without retain_graph has
     * gone through: their share of the saved tensors is freed, the other
     * outputs' stays (eager frees only the nodes a backward ran) */
    uint64_t consumed;
    /* the outputs this node has (all: one node for the graph) and its
     * part (-1: the whole graph) */
    uint64_t own;
    int comp;
} bctx;

static void bctx_free(void *p)
{
    bctx *c = p;
    if (!c)
        return;
    for (int k = 0; c->saved && k < c->f->info.nsaved; k++)
        st_tensor_decref(c->saved[k]);
    free(c->saved);
    free(c->saved_ver);
    for (int k = 0; c->inputs && k < c->f->g->ninputs; k++)
        st_tensor_decref(c->inputs[k]);
    free(c->inputs);
    free(c->in_ver);
    free(c->out_meta);
    free(c->grad_slot);
    st_rt_cfn_free(c->f);
    free(c);
}

static st_tensor *zeros_of(const st_meta *m)
{
    st_attrs a;
    st_ir_zeros_attrs(m, &a);
    st_tensor *r = NULL;
    return st_rt_eager(ST_OP_FULL, NULL, 0, &a, NULL, &r) == 1 ? r : NULL;
}

/* The backward graph of the outputs in mask alone, or -1 (then the full
 * one runs with zeros): its saved values must be among the forward's. */
static int variant_of(st_rt_cfn *f, uint64_t mask)
{
    for (int v = 0; v < f->nvar; v++)
        if (f->var[v].mask == mask)
            return v;
    if (f->nvar == ST_CFN_NVAR)
        return -1;
    const st_graph *g = f->g;
    int outs[64], n = 0;
    for (int k = 0; k < f->ndiff; k++)
        if (mask >> k & 1)
            outs[n++] = g->outputs[f->diff[k]];
    int *wv = malloc(sizeof(int) * (size_t)(f->nwrt ? f->nwrt : 1));
    if (!wv)
        return -1;
    for (int k = 0; k < f->nwrt; k++)
        wv[k] = g->inputs[f->wrt[k]];
    st_graph *bg = NULL;
    st_ir_bwd_info info;
    memset(&info, 0, sizeof info);
    st_status es = st_err_kind();
    st_status s = st_ir_backward_multi(g, wv, f->nwrt, outs, n, &bg, &info);
    free(wv);
    int *map = s == ST_OK ? malloc(sizeof(int) * (size_t)(info.nsaved ? info.nsaved : 1)) : NULL;
    bool ok = map != NULL && bg && bg->noutputs == f->bwd_g->noutputs;
    for (int k = 0; ok && k < info.nsaved; k++) {
        map[k] = -1;
        for (int j = 0; j < f->info.nsaved && map[k] < 0; j++)
            if (f->info.saved[j] == info.saved[k])
                map[k] = j;
        ok = map[k] >= 0;
    }
    bool *reads = ok ? calloc((size_t)(f->info.nsaved ? f->info.nsaved : 1), sizeof *reads) : NULL;
    for (int k = 0; reads && k < info.nsaved; k++)
        reads[map[k]] = true;
    bool *need = reads ? needed(g, outs, n) : NULL;
    bool *reach = need ? malloc(sizeof(bool) * (size_t)(f->nwrt ? f->nwrt : 1)) : NULL;
    ok = reach != NULL;
    for (int k = 0; ok && k < f->nwrt; k++)
        reach[k] = need[g->inputs[f->wrt[k]]];
    free(need);
    int v = f->nvar;
    if (ok) {
        f->var[v].reach = reach;
        memset(&f->var[v].p, 0, sizeof f->var[v].p);
        f->var[v].mask = mask;
        f->var[v].g = bg;
        f->var[v].nsaved = info.nsaved;
        f->var[v].map = map;
        f->var[v].reads = reads;
        f->nvar++;
    } else {
        st_ir_graph_free(bg);
        free(map);
        free(reads);
        free(reach);
        v = -1;
        if (es == ST_OK)
            st_err_clear();
    }
    st_ir_bwd_info_clear(&info);
    return v;
}

/* needed() for the differentiable outputs in mask (bit k: diff output k) */
static bool *needed_by(const st_rt_cfn *f, uint64_t mask)
{
    int outs[64], n = 0;
    for (int k = 0; k < f->ndiff && k < 64; k++)
        if (mask >> k & 1)
            outs[n++] = f->g->outputs[f->diff[k]];
    return needed(f->g, outs, n);
}

/* Per wrt input: does an output in mask depend on it? (NULL: out of
 * memory or more than 64 outputs) */
static bool *reach_of(const st_rt_cfn *f, uint64_t mask)
{
    const st_graph *g = f->g;
    bool *need = needed_by(f, mask);
    bool *reach = need ? malloc(sizeof(bool) * (size_t)(f->nwrt ? f->nwrt : 1)) : NULL;
    for (int k = 0; reach && k < f->nwrt; k++)
        reach[k] = need[g->inputs[f->wrt[k]]];
    free(need);
    return reach;
}

/* Per statement: is it an eager node with saved tensors (its rule reads an
 * operand or its result, st_ir_vjp_saves_for; a PyLayer region's: assumed)
 * that a backward from the outputs in mask runs (its result carries a
 * gradient those outputs need)? NULL on out of memory. */
static bool *saving_nodes_run(const st_rt_cfn *f, const bool *from, uint64_t mask)
{
    const st_graph *g = f->g;
    bool *need = needed_by(f, mask);
    bool *run = need ? calloc((size_t)(g->nstmts ? g->nstmts : 1), sizeof *run) : NULL;
    for (int si = 0; run && si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        bool on = false;
        for (int o = 0; o < st->nout && !on; o++)
            on = need[st->out[o]] && from[st->out[o]];
        if (!on || in_nograd(g, si))
            continue;
        unsigned needs = 0;
        for (int i = 0; i < st->nin && i < 32; i++)
            if (from[st->in[i]])
                needs |= 1u << i;
        run[si] = st_ir_stmt_in_region(g, si, true) || st_ir_vjp_saves_for(st->op, needs) != 0;
    }
    free(need);
    return run;
}

/* Would eager refuse a backward from the outputs in want after backwards
 * (without retain_graph) from those in done? It does when both run a node
 * with saved tensors: its saved tensors went with the first (b = h.sum(),
 * c = (h * w).sum() with h = x.sin(): after c.backward(), b.backward()
 * goes through sin's node again). -1 on out of memory. */
static int reruns_saving_node(const st_rt_cfn *f, uint64_t want, uint64_t done)
{
    const st_graph *g = f->g;
    int *wv = malloc(sizeof(int) * (size_t)(f->nwrt ? f->nwrt : 1));
    for (int k = 0; wv && k < f->nwrt; k++)
        wv[k] = g->inputs[f->wrt[k]];
    bool *from = wv ? st_ir_grad_reach(g, wv, f->nwrt) : NULL;
    free(wv);
    bool *a = from ? saving_nodes_run(f, from, want) : NULL;
    bool *b = a ? saving_nodes_run(f, from, done) : NULL;
    int r = b ? 0 : -1;
    for (int si = 0; b && si < g->nstmts && !r; si++)
        r = a[si] && b[si];
    free(from);
    free(a);
    free(b);
    return r;
}

/* Frees the saved tensors but those keep[k] marks (keep NULL: all go). */
static void free_saved_unless(bctx *c, const bool *keep)
{
    for (int k = 0; c->saved && k < c->f->info.nsaved; k++)
        if (!keep || !keep[k]) {
            st_tensor_decref(c->saved[k]);
            c->saved[k] = NULL;
        }
}

static void drop_inputs(bctx *c)
{
    for (int k = 0; c->inputs && k < c->f->g->ninputs; k++)
        st_tensor_decref(c->inputs[k]);
    free(c->inputs);
    free(c->in_ver);
    c->inputs = NULL;
    c->in_ver = NULL;
}

/* st_ad_node_keep_ctx's release after a backward that frees the graph:
 * only the inputs kept for a create_graph backward go */
static void release_inputs(void *ctx)
{
    drop_inputs(ctx);
}

/* Is input k one the run writes back into (not read by the saved values,
 * as f->recompute says: a later write to it does not matter)? */
static bool written_input(const st_rt_cfn *f, int k)
{
    for (int m = 0; m < f->nwb; m++)
        if (f->wb_in[m] == k)
            return true;
    return false;
}

/* create_graph=True: the gradients need histories, which compiled kernels
 * do not record. The forward runs again eagerly from the inputs it was
 * given (recorded, so the saved values it recomputes have histories into
 * the inputs'), then the backward graph runs eagerly on them and on gout:
 * AOTAutograd's pair, run as taped eager ops. */
static st_status node_backward_create(bctx *c, int nout, st_tensor *const *gout,
                                      int nin, st_tensor **gin)
{
    st_rt_cfn *f = c->f;
    const st_graph *fs = f->fsave_g, *bg = f->bwd_g;
    int nsaved = f->info.nsaved, nfo = f->g->noutputs;
    for (int k = 0; k < f->g->ninputs; k++)
        if (c->inputs[k]->storage->version != c->in_ver[k] && !written_input(f, k)) {
            char a[96];
            const st_tensor *t = c->inputs[k];
            return st_err(ST_ERR_RUNTIME, "one of the variables needed for gradient "
                          "computation has been modified by an inplace operation: "
                          "[%s %s] is at version %u; expected version %u instead "
                          "(CompiledFunctionBackward, input %d, create_graph)",
                          st_dtype_name(t->dtype), st_shape_str(t->shape, t->ndim, a, sizeof a),
                          (unsigned)t->storage->version, (unsigned)c->in_ver[k], k);
        }
    if (nout != f->ndiff || bg->ninputs != nsaved + f->ndiff || fs->noutputs != nfo + nsaved)
        return st_err(ST_ERR_RUNTIME, "%s: bad gradient count", "CompiledFunctionBackward");
    st_tensor **fo = calloc((size_t)fs->noutputs + 1, sizeof *fo);
    st_tensor **in = calloc((size_t)bg->ninputs + 1, sizeof *in);
    st_tensor **res = calloc((size_t)bg->noutputs + 1, sizeof *res);
    st_status s = fo && in && res ? ST_OK : st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    uint64_t seed = 0, off = 0;
    if (f->random) { /* the same draws as the run that made the node */
        st_rt_rng_get_state(&seed, &off);
        st_rt_rng_set_state(c->rng_seed, c->rng_off);
    }
    if (s == ST_OK)
        s = eager_run_graph(fs, c->inputs, fo, f);
    if (f->random)
        st_rt_rng_set_state(seed, off);
    for (int k = 0; k < nsaved && s == ST_OK; k++) {
        in[k] = fo[nfo + k];
        st_tensor_incref(in[k]);
    }
    for (int k = 0; k < f->ndiff && s == ST_OK; k++) {
        in[nsaved + k] = gout[k];
        if (gout[k])
            st_tensor_incref(gout[k]);
        else if (!(in[nsaved + k] = zeros_of(&c->out_meta[k])))
            s = st_err_kind();
    }
    st_rng_replay rp;
    if (f->random) /* a checkpoint's draws: the forward run's numbers */
        st_rt_rng_replay_begin(c->rng_seed, c->rng_off, &rp);
    if (s == ST_OK)
        s = eager_run_graph(bg, in, res, f);
    if (f->random)
        st_rt_rng_replay_end(&rp);
    for (int k = 0; k < nin && s == ST_OK; k++) {
        gin[k] = res[c->grad_slot[k]];
        res[c->grad_slot[k]] = NULL;
    }
    for (int k = 0; fo && k < fs->noutputs; k++)
        st_tensor_decref(fo[k]);
    for (int k = 0; in && k < bg->ninputs; k++)
        st_tensor_decref(in[k]);
    for (int k = 0; res && s == ST_OK && k < bg->noutputs; k++)
        st_tensor_decref(res[k]);
    free(fo);
    free(in);
    free(res);
    return s;
}

/* Runs a backward program; draws a checkpoint recomputes (ST_ATTR_RNG_REPLAY)
 * take the numbers of the run that made the node. */
static st_status run_backward(bctx *c, prog *bp, st_tensor **in, st_tensor **res,
                              bool donate)
{
    st_rng_replay rp;
    if (c->f->random)
        st_rt_rng_replay_begin(c->rng_seed, c->rng_off, &rp);
    st_status s = prog_run(c->f->be, bp, in, res, donate);
    if (c->f->random)
        st_rt_rng_replay_end(&rp);
    return s;
}

static st_status node_backward(void *ctx, int nout, st_tensor *const *gout,
                               int nin, st_tensor **gin)
{
    bctx *c = ctx;
    st_rt_cfn *f = c->f;
    if (st_ad_creating() && c->inputs)
        return node_backward_create(c, nout, gout, nin, gin);
    if (!st_ad_retaining())
        drop_inputs(c);   /* this node runs once: no create_graph after */
    for (int k = 0; k < nin; k++)
        gin[k] = NULL;
    /* outputs that got no gradient: the backward of the others alone */
    uint64_t mask = 0;
    bool some_missing = false;
    for (int k = 0; k < nout && k < f->ndiff; k++) {
        if (gout[k] && k < 64)
            mask |= (uint64_t)1 << k;
        some_missing |= !gout[k];
    }
    /* with at most 64 differentiable outputs the node tracks which of them
     * a backward has gone through (c->consumed) */
    bool track = f->ndiff <= 64 && nout == f->ndiff;
    uint64_t full = c->own;   /* this node's outputs */
    uint64_t want = some_missing ? mask : full;
    if (some_missing && !mask && nout == f->ndiff) {
        /* no output got a gradient: none to send on (the saved tensors
         * are not read, so a later in-place write to them is no error) */
        if (!st_ad_retaining()) {
            free_saved_unless(c, NULL);
            c->consumed = full;
        }
        return ST_OK;
    }
    /* eager refuses it when both backwards run a node with saved tensors
     * (the same output again included) */
    int again = !track || !c->consumed ? 0 : reruns_saving_node(f, want, c->consumed);
    if (again < 0)
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    if (again)
        return st_err(ST_ERR_RUNTIME, "Trying to backward through the graph a second time (or "
                      "directly access saved tensors after they have already been freed). "
                      "Saved intermediate values of the graph are freed when you call "
                      ".backward() or autograd.grad(). Specify retain_graph=True if you need "
                      "to backward through the graph a second time or if you need to access "
                      "saved tensors after calling backward. (CompiledFunctionBackward)");
    int vi = some_missing && mask && f->ndiff <= 64 && nout == f->ndiff
                 ? variant_of(f, mask) : -1;
    /* a part's node without a variant for these outputs: its part's, with
     * zeros for its outputs that got none (it holds only the saved
     * tensors that one reads) */
    if (vi < 0 && c->comp >= 0)
        vi = f->comp_var[c->comp];
    if (vi >= 0 && ensure(f->be, f->var[vi].g, &f->var[vi].p) != ST_OK)
        return st_err_kind();
    if (vi < 0 && ensure(f->be, f->bwd_g, &f->bwd) != ST_OK)
        return st_err_kind();
    prog *bp = vi >= 0 ? &f->var[vi].p : &f->bwd;
    const st_graph *bg = bp->p->graph;
    int nsaved = f->info.nsaved;
    int nbsaved = vi >= 0 ? f->var[vi].nsaved : nsaved;
    int ngrads = vi >= 0 ? __builtin_popcountll(f->var[vi].mask) : f->ndiff;
    st_tensor **in = calloc((size_t)(bg->ninputs ? bg->ninputs : 1),
                            sizeof *in);
    st_tensor **res = calloc((size_t)(bg->noutputs ? bg->noutputs : 1),
                             sizeof *res);
    st_status s = ST_OK;
    for (int k = 0; k < nin; k++)
        gin[k] = NULL;
    if (!in || !res || nout != f->ndiff ||
        bg->ninputs != nbsaved + ngrads) {
        s = in && res ? st_err(ST_ERR_RUNTIME, "%s: bad gradient count",
                               "CompiledFunctionBackward")
                      : st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        goto done;
    }
    for (int k = 0; k < nsaved; k++)
        if (vi >= 0 && !f->var[vi].reads[k]) {
            /* a variant reads only what the outputs that got gradients
             * need: a tensor only another output's gradient reads may have
             * been written since (y = z.exp() returned, then y.mul_(2),
             * then a backward from z alone: eager's exp node is never run) */
            continue;
        } else if (!c->saved[k]) {
            s = st_err(ST_ERR_RUNTIME, "CompiledFunctionBackward: the saved "
                       "tensors were handed to an earlier backward and freed; "
                       "use retain_graph=True to backward twice");
            goto done;
        } else if (c->saved[k]->storage->version != c->saved_ver[k]) {
            char a[96];
            const st_tensor *t = c->saved[k];
            s = st_err(ST_ERR_RUNTIME, "one of the variables needed for "
                       "gradient computation has been modified by an inplace "
                       "operation: [%s %s] is at version %u; expected version "
                       "%u instead (CompiledFunctionBackward)",
                       st_dtype_name(t->dtype),
                       st_shape_str(t->shape, t->ndim, a, sizeof a),
                       (unsigned)t->storage->version, (unsigned)c->saved_ver[k]);
            goto done;
        }
    for (int k = 0, slot = 0; k < f->ndiff && s == ST_OK; k++) {
        const st_meta *m = &c->out_meta[k];
        st_tensor *gk = gout[k];
        if (vi >= 0 && !(f->var[vi].mask >> k & 1))
            continue;   /* not an input of this backward */
        if (gk) {
            if (gk->dtype != m->dtype || gk->ndim != m->ndim ||
                memcmp(gk->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim)) {
                char a[96], b[96];
                s = st_err(ST_ERR_RUNTIME, "CompiledFunctionBackward: the "
                           "gradient of output %d is %s%s, expected %s%s",
                           f->diff[k], st_dtype_name(gk->dtype),
                           st_shape_str(gk->shape, gk->ndim, a, sizeof a),
                           st_dtype_name(m->dtype),
                           st_shape_str(m->shape, m->ndim, b, sizeof b));
                break;
            }
            st_tensor_incref(gk);
        } else if (!(gk = zeros_of(m))) {
            s = st_err_kind();
            break;
        }
        in[nbsaved + slot++] = gk;
    }
    /* without retain_graph the saved tensors are this run's alone: handed
     * over (once the gradients are known good), each is freed after the
     * backward graph's last reader of it (as PyTorch frees a node's saved
     * variables when it has run), not all at the end; a second backward
     * is refused by the engine */
    bool donate = !st_ad_retaining();
    if (vi >= 0) {
        /* the variant reads some of the saved tensors: given its own
         * references; without retain_graph the node's go afterwards */
        for (int k = 0; k < nbsaved && s == ST_OK; k++) {
            in[k] = c->saved[f->var[vi].map[k]];
            st_tensor_incref(in[k]);
        }
        if (s == ST_OK)
            s = run_backward(c, bp, in, res, false);
        if (s == ST_OK && donate) {
            /* what the outputs not yet gone through still read stays */
            c->consumed |= want;
            uint64_t rest = track ? full & ~c->consumed : 0;
            int rv = rest ? variant_of(f, rest) : -1;
            if (!rest || rv >= 0)
                free_saved_unless(c, rest ? f->var[rv].reads : NULL);
        }
    } else {
        if (donate && some_missing && track) {
            /* no variant for the outputs that got gradients: the full
             * backward reads every saved tensor, and the other outputs'
             * later backwards still need theirs (kept until all are done) */
            c->consumed |= want;
            donate = c->consumed == full;
        } else if (donate)
            c->consumed |= want;
        for (int k = 0; k < nsaved && s == ST_OK; k++) {
            in[k] = c->saved[k];
            if (donate)
                c->saved[k] = NULL;
            else
                st_tensor_incref(in[k]);
        }
        if (s == ST_OK)
            s = run_backward(c, bp, in, res, donate);
    }
    /* no variant (its saved values are not all the full backward's: the
     * full one may recompute what the variant saves): the full backward
     * ran with zeros for the outputs that got none */
    bool *fb_reach = s == ST_OK && mask && track &&
                             ((vi < 0 && some_missing) || (vi >= 0 && f->var[vi].mask != mask))
                         ? reach_of(f, mask) : NULL;
    if (s == ST_OK)
        for (int k = 0; k < nin; k++) {
            /* an input the outputs that got gradients do not depend on
             * gets none (None, as eager), not zeros */
            if (vi >= 0 && !f->var[vi].reach[c->grad_slot[k]])
                continue;
            if (fb_reach && !fb_reach[c->grad_slot[k]])
                continue;
            gin[k] = res[c->grad_slot[k]];
            res[c->grad_slot[k]] = NULL;
        }
    free(fb_reach);
    if (s == ST_OK)
        for (int k = 0; k < bg->noutputs; k++)
            st_tensor_decref(res[k]);
done:
    for (int k = 0; in && k < bg->ninputs; k++)
        st_tensor_decref(in[k]);
    free(in);
    free(res);
    return s;
}

/* ---------------- running ---------------- */
static st_status check_inputs(const st_rt_cfn *f, st_tensor *const *inputs)
{
    const st_graph *g = f->g;
    for (int k = 0; k < g->ninputs; k++) {
        const st_tensor *t = inputs[k];
        const st_meta *m = &g->values[g->inputs[k]].meta;
        char a[128], b[128], nb[32];
        if (!t)
            return st_err(ST_ERR_VALUE, "compiled function: input %d (%s) is "
                          "missing", k, st_ir_value_name(g, g->inputs[k], nb,
                                                         sizeof nb));
        if (t->dtype != m->dtype || t->ndim != m->ndim ||
            memcmp(t->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim))
            return st_err(ST_ERR_VALUE, "compiled function: input %d (%s) "
                          "must be %s%s, got %s%s", k,
                          st_ir_value_name(g, g->inputs[k], nb, sizeof nb),
                          st_dtype_name(m->dtype),
                          st_shape_str(m->shape, m->ndim, a, sizeof a),
                          st_dtype_name(t->dtype),
                          st_shape_str(t->shape, t->ndim, b, sizeof b));
        if (f->be && st_tensor_device(t)->type != f->be->device)
            return st_err(ST_ERR_VALUE, "compiled function: input %d (%s) is "
                          "on %s, the graph was compiled for another device",
                          k, st_ir_value_name(g, g->inputs[k], nb, sizeof nb),
                          st_tensor_device(t)->name);
    }
    return ST_OK;
}

/* Copies the written values into their inputs. In grad mode the copy is
 * recorded as eager's in-place op would be: an input given a value with
 * history (a differentiable output of this run) or a non-leaf that
 * requires grad written outside no_grad takes a new history (CopyBackward,
 * or CopySlices for a view); otherwise (an optimizer's update of a leaf
 * under no_grad, traced as a value whose gradient goes to the leaf)
 * nothing is recorded. */
/* Is value v the input value `in` written only through a detached alias
 * (trace.c's detached_write: stop_gradient(new) + zero_keeping_grad(in),
 * the zero where(z == 0, z, 0) of z = in - stop_gradient(in))? Eager
 * records no such write: the input keeps its history. */
static bool detached_only(const st_graph *g, int v, int in)
{
    int p = g->values[v].producer;
    if (p < 0 || g->stmts[p].op != ST_OP_ADD || g->stmts[p].nin != 2)
        return false;
    int ps = g->values[g->stmts[p].in[0]].producer;
    int pz = g->values[g->stmts[p].in[1]].producer;
    if (pz >= 0 && g->stmts[pz].op == ST_OP_WHERE && g->stmts[pz].nin == 3)
        pz = g->values[g->stmts[pz].in[1]].producer;
    return ps >= 0 && g->stmts[ps].op == ST_OP_RESHAPE &&
           (g->stmts[ps].attrs.flags & ST_VIEW_DETACHED) && pz >= 0 &&
           g->stmts[pz].op == ST_OP_SUB && g->stmts[pz].in[0] == in;
}

static st_status writeback(st_rt_cfn *f, st_tensor *const *inputs,
                           st_tensor **outs)
{
    bool was = st_ad_grad_enabled();
    st_status s = ST_OK;
    for (int k = 0; k < f->nwb && s == ST_OK; k++) {
        st_tensor *dst = inputs[f->wb_in[k]], *src = outs[f->wb_out[k]];
        if (dst == src)
            continue;
        /* a leaf that requires grad was written under no_grad (eager
         * refuses it otherwise): it stays a leaf */
        bool leaf = dst->requires_grad && !dst->grad_fn;
        /* written only through .data aliases: eager records nothing, and
         * the input keeps its history (a split output written so is no
         * error, as it would be for a recorded in-place copy) */
        bool rec = was && f->wb_grad[k] && !leaf && !f->wb_quiet[k] &&
                   (src->requires_grad || dst->requires_grad) &&
                   !detached_only(f->g, f->g->outputs[f->wb_out[k]],
                                  f->g->inputs[f->wb_in[k]]);
        st_ad_set_grad_enabled(rec);
        st_operand op = {.t = src};
        st_tensor *given[ST_MAX_OUT] = {dst, NULL, NULL}, *r = NULL;
        bool own = dst->own_version;
        dst->own_version |= f->wb_quiet[k];      /* p.data.add_(g) */
        if (st_rt_eager(ST_OP_COPY, &op, 1, NULL, given, &r) < 0)
            s = st_err_kind();
        else
            st_tensor_decref(r);
        dst->own_version = own;
    }
    st_ad_set_grad_enabled(was);
    return s;
}

/* Splits the differentiable outputs and the inputs differentiated to into
 * independent parts (union-find: an output and an input are in one part
 * when the output's gradient reaches the input, needed(); a PyLayer
 * region's outputs depend on all its inputs). Eager records independent
 * parts as separate nodes: a backward from one part never runs the
 * other's (an input edge of a merged node would send it zeros: FX's
 * backward ran, and x0.grad became 0 instead of None).
 * Up to ST_CFN_NPART parts, each with a backward variant of its own,
 * get a node each; otherwise (one part, an output past 64, more parts) one
 * node. */
static void find_parts(st_rt_cfn *f)
{
    f->ncomp = 1;
    int nd = f->ndiff, nw = f->nwrt;
    if (nd < 2 || nd > 64 || nw < 2)
        return;
    int *par = malloc(sizeof(int) * (size_t)(nd + nw));
    int *comp_of = malloc(sizeof(int) * (size_t)(nd + nw));
    int *cw = malloc(sizeof(int) * (size_t)nw);
    bool ok = par && comp_of && cw;
    for (int k = 0; ok && k < nd + nw; k++)
        par[k] = k;
#define ROOT(x) ({ int r_ = (x); while (par[r_] != r_) r_ = par[r_] = par[par[r_]]; r_; })
    for (int k = 0; ok && k < nd; k++) {
        bool *r = reach_of(f, (uint64_t)1 << k);
        ok = r != NULL;
        bool any = false;
        for (int j = 0; ok && j < nw; j++)
            if (r[j]) {
                par[ROOT(k)] = ROOT(nd + j);
                any = true;
            }
        if (ok && !any) /* reaches no input: with the first output */
            par[ROOT(k)] = ROOT(0);
        free(r);
    }
    int n = 0;
    for (int k = 0; ok && k < nd + nw; k++)
        comp_of[k] = -1;
    uint64_t mask[ST_CFN_NPART] = {0};
    for (int k = 0; ok && k < nd; k++) {
        int r = ROOT(k);
        if (comp_of[r] < 0) {
            if (n == ST_CFN_NPART) {
                ok = false;
                break;
            }
            comp_of[r] = n++;
        }
        mask[comp_of[r]] |= (uint64_t)1 << k;
    }
    for (int j = 0; ok && j < nw; j++)
        cw[j] = comp_of[ROOT(nd + j)];   /* -1: reached by no output */
#undef ROOT
    for (int c = 0; ok && n > 1 && c < n; c++) {
        f->comp_var[c] = variant_of(f, mask[c]);
        f->comp_mask[c] = mask[c];
        ok = f->comp_var[c] >= 0;
    }
    if (ok && n > 1) {
        f->ncomp = n;
        f->comp_of_wrt = cw;
        cw = NULL;
    }
    free(par);
    free(comp_of);
    free(cw);
}

/* Attaches a tape node to the differentiable outputs of this run: of part
 * comp (-1: all of them), holding saved (taken over). */
static st_status make_node(st_rt_cfn *f, st_tensor *const *inputs,
                           st_tensor **outs, st_tensor **saved,
                           const uint64_t rng[2], int comp)
{
    bctx *c = calloc(1, sizeof *c);
    if (c) {
        c->rng_seed = rng[0];
        c->rng_off = rng[1];
        c->comp = comp;
        c->own = comp >= 0 ? f->comp_mask[comp]
                 : f->ndiff >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << f->ndiff) - 1;
    }
    int nin = 0;
    st_tensor **nin_t = malloc(sizeof *nin_t * (size_t)f->nwrt);
    st_tensor **nout_t = calloc((size_t)f->ndiff, sizeof *nout_t);
    if (c) {
        __atomic_add_fetch(&f->refcount, 1, __ATOMIC_RELAXED);
        c->f = f;
        c->saved = saved;
        c->saved_ver = malloc(sizeof(uint32_t) *
                              (size_t)(f->info.nsaved ? f->info.nsaved : 1));
        for (int k = 0; c->saved_ver && k < f->info.nsaved; k++)
            c->saved_ver[k] = saved[k] ? saved[k]->storage->version : 0;
        c->out_meta = malloc(sizeof *c->out_meta * (size_t)f->ndiff);
        c->grad_slot = malloc(sizeof(int) * (size_t)f->nwrt);
        int ni = f->g->ninputs;
        if (f->recompute && (c->inputs = calloc((size_t)ni + 1, sizeof *c->inputs)) &&
            (c->in_ver = malloc(sizeof(uint32_t) * ((size_t)ni + 1))))
            for (int k = 0; k < ni; k++) {
                c->inputs[k] = inputs[k];
                st_tensor_incref(inputs[k]);
                c->in_ver[k] = inputs[k]->storage->version;
            }
        else
            drop_inputs(c);
    }
    if (!c || !c->saved_ver || !c->out_meta || !c->grad_slot || !nin_t ||
        !nout_t) {
        if (c)
            bctx_free(c);
        else if (saved) {
            for (int k = 0; k < f->info.nsaved; k++)
                st_tensor_decref(saved[k]);
            free(saved);
        }
        free(nin_t);
        free(nout_t);
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    }
    for (int k = 0; k < f->nwrt; k++) {
        st_tensor *t = inputs[f->wrt[k]];
        if (!t->requires_grad || (comp >= 0 && f->comp_of_wrt[k] != comp))
            continue;
        c->grad_slot[nin] = k;
        nin_t[nin++] = t;
    }
    for (int k = 0; k < f->ndiff; k++) {
        st_tensor *t = outs[f->diff[k]];
        st_tensor_meta(t, &c->out_meta[k]);
        bool is_input = false;
        for (int j = 0; j < f->g->ninputs; j++)
            is_input |= inputs[j] == t;
        /* an input returned as is keeps its own history */
        nout_t[k] = is_input || !(c->own >> (k & 63) & 1) ? NULL : t;
    }
    st_ad_node *n = st_ad_custom_node("CompiledFunctionBackward",
                                      node_backward, c, bctx_free, nin, nin_t,
                                      f->ndiff, nout_t);
    free(nin_t);
    free(nout_t);
    if (!n) {
        bctx_free(c);
        return st_err_kind();
    }
    if (!c->inputs) /* the forward cannot run again: compiled kernels only */
        st_ad_node_set_once_differentiable(n);
    /* the node keeps its context: node_backward frees the saved tensors an
     * output's backward has used, and refuses a second backward through
     * an output whose share is gone; a node that saved nothing runs again,
     * as torch's */
    st_ad_node_keep_ctx(n, release_inputs);
    st_ad_node_decref(n);
    return ST_OK;
}

/* Attaches the tape node(s) (find_parts) to the differentiable outputs of
 * this run; takes over saved. Each part's node holds references to the
 * saved tensors its variant reads: one read by two parts goes when the
 * last of them frees it. */
static st_status attach_node(st_rt_cfn *f, st_tensor *const *inputs,
                             st_tensor **outs, st_tensor **saved,
                             const uint64_t rng[2])
{
    if (!f->ncomp)
        find_parts(f);
    if (f->ncomp <= 1)
        return make_node(f, inputs, outs, saved, rng, -1);
    int ns = f->info.nsaved;
    st_status s = ST_OK;
    for (int c = 0; c < f->ncomp && s == ST_OK; c++) {
        st_tensor **mine = calloc((size_t)(ns ? ns : 1), sizeof *mine);
        if (!mine) {
            s = st_err(ST_ERR_MEMORY, "cfn: out of host memory");
            break;
        }
        bool any = false;   /* a part none of whose inputs requires grad: no node */
        for (int k = 0; k < f->nwrt; k++)
            any |= f->comp_of_wrt[k] == c && inputs[f->wrt[k]]->requires_grad;
        if (!any) {
            free(mine);
            continue;
        }
        const bool *reads = f->var[f->comp_var[c]].reads;
        for (int k = 0; k < ns; k++)
            if (reads[k]) {
                mine[k] = saved[k];
                st_tensor_incref(mine[k]);
            }
        s = make_node(f, inputs, outs, mine, rng, c);
    }
    for (int k = 0; k < ns; k++)
        st_tensor_decref(saved[k]);
    free(saved);
    return s;
}

static st_status cfn_run(st_rt_cfn *f, st_tensor *const *inputs, st_tensor **outputs);
static void no_view_of_buffer(const st_rt_cfn *f, st_tensor *const *inputs, st_tensor **outs);

st_status st_rt_cfn_run(st_rt_cfn *f, st_tensor *const *inputs,
                        st_tensor **outputs)
{
    if (!f || (f->g->ninputs > 0 && !inputs) || (f->nvisible > 0 && !outputs))
        return st_err(ST_ERR_VALUE, "cfn_run: null argument");
    /* a graph whose trace turned grad on inside (enable_grad() in a frame
     * called under no_grad) runs in grad mode, as the trace did: its
     * no_grad parts are stop-gradient regions of the graph */
    if (f->grad_inside && !st_ad_grad_enabled()) {
        st_ad_set_grad_enabled(true);
        st_status s = cfn_run(f, inputs, outputs);
        st_ad_set_grad_enabled(false);
        return s;
    }
    return cfn_run(f, inputs, outputs);
}

/* Does the run neither write input k nor send it a gradient? */
static bool read_only_no_grad(const st_rt_cfn *f, int k)
{
    for (int m = 0; m < f->nwb; m++)
        if (f->wb_in[m] == k)
            return false;
    for (int j = 0; f->has_bwd && st_ad_grad_enabled() && j < f->nwrt; j++)
        if (f->wrt[j] == k)
            return false;
    return true;
}

static st_status cfn_run(st_rt_cfn *f, st_tensor *const *inputs, st_tensor **outputs)
{
    for (int k = 0; k < f->g->ninputs; k++) /* stale views (viewhist.c) */
        if (st_ad_view_stale(inputs[k]) && st_ad_view_refresh(inputs[k]) != ST_OK) {
            /* a split output whose base was written: refused only where
             * eager refuses it, by an op with a gradient (x.split(2)[0]
             * > 0 is fine) or by a write into it */
            if (!inputs[k]->view_multi || !read_only_no_grad(f, k))
                return st_err_kind();
            st_err_clear();
        }
    st_status s = check_inputs(f, inputs);
    if (s != ST_OK)
        return s;
    if (st_rt_trace_active())
        st_rt_trace_fail("a compiled function ran inside a trace");
    bool grad = st_ad_grad_enabled();
    bool want = false;
    for (int k = 0; f->has_bwd && grad && k < f->nwrt; k++)
        want |= inputs[f->wrt[k]]->requires_grad;
    int nall = f->g->noutputs + (want ? f->info.nsaved : 0);
    st_tensor **outs = calloc((size_t)(nall ? nall : 1), sizeof *outs);
    if (!outs)
        return st_err(ST_ERR_MEMORY, "cfn: out of host memory");
    uint64_t rng[2] = {0, 0};
    if (want && f->random)
        st_rt_rng_get_state(&rng[0], &rng[1]);
    st_rt_trace_suspend();
    if (!f->be) {
        s = eager_run_graph(f->g, inputs, outs, f);
    } else {
        /* the programs' own steps are not recorded; the node is */
        st_ad_set_grad_enabled(false);
        s = want ? ensure(f->be, f->fsave_g, &f->fsave) : ST_OK;
        if (s == ST_OK)
            /* not donated: prog_run only reads in[] (it writes NULLs
             * into it only when donating) */
            s = prog_run(f->be, want ? &f->fsave : &f->fwd, (st_tensor **)inputs, outs, false);
        st_ad_set_grad_enabled(grad);
    }
    st_tensor **saved = NULL;
    if (s == ST_OK && want) {
        /* detached aliases: the node must not hold its own outputs (a
         * cycle through grad_fn) */
        int ns = f->info.nsaved, base = f->g->noutputs;
        saved = calloc((size_t)(ns ? ns : 1), sizeof *saved);
        if (!saved)
            s = st_err(ST_ERR_MEMORY, "cfn: out of host memory");
        for (int k = 0; s == ST_OK && k < ns; k++) {
            st_tensor *t = outs[base + k];
            saved[k] = st_tensor_view_of(t, t->ndim, t->shape, t->strides,
                                         t->offset);
            if (!saved[k])
                s = st_err_kind();
        }
        if (s != ST_OK && saved) {
            for (int k = 0; k < ns; k++)
                st_tensor_decref(saved[k]);
            free(saved);
            saved = NULL;
        }
    }
    /* a saved value in the storage of an input this run writes back,
     * read only by the ops that write it (the old x of x.mul_(w)), is
     * saved as a copy, as eager's in-place ops save what they overwrite
     * (see own_writes); then the node records the saved values'
     * versions before the writeback: an input saved for backward and
     * written later (after this run) makes backward fail, as in eager */
    for (int k = 0; s == ST_OK && saved && k < f->info.nsaved; k++) {
        bool hit = false;
        for (int m = 0; m < f->nwb && !hit; m++)
            hit = f->wb_own[m] && saved[k]->storage == inputs[f->wb_in[m]]->storage &&
                  outs[f->wb_out[m]] != inputs[f->wb_in[m]];
        if (!hit)
            continue;
        st_operand op = {.t = saved[k]};
        st_tensor *given[ST_MAX_OUT] = {0}, *c[ST_MAX_OUT] = {0};
        bool was = st_ad_grad_enabled();
        st_ad_set_grad_enabled(false);
        if (st_rt_eager(ST_OP_COPY, &op, 1, NULL, given, c) < 0)
            s = st_err_kind();
        st_ad_set_grad_enabled(was);
        if (s == ST_OK) {
            st_tensor_decref(saved[k]);
            saved[k] = c[0];
        }
    }
    if (s == ST_OK && want)
        s = attach_node(f, inputs, outs, saved, rng);
    if (s == ST_OK)
        s = writeback(f, inputs, outs);
    if (s == ST_OK)
        s = make_aliases(f, inputs, outs, 0);
    if (s == ST_OK)
        no_view_of_buffer(f, inputs, outs);
    if (s == ST_OK)
        s = make_aliases(f, inputs, outs, 1);
    if (s == ST_OK)   /* the .data marks of those made in pass 1 */
        no_view_of_buffer(f, inputs, outs);
    st_rt_trace_resume();
    if (s == ST_OK)
        for (int k = 0; k < f->nvisible; k++) {
            outputs[k] = outs[k];
            outs[k] = NULL;
        }
    for (int k = 0; k < nall; k++)
        st_tensor_decref(outs[k]);
    free(outs);
    return s;
}

/* An output made as a view of a buffer only the program held (y[:]
 * returned, y dead) is no view to autograd: it has its own history, and
 * writes into views of it go through it (eager: through y). */
static void no_view_of_buffer(const st_rt_cfn *f, st_tensor *const *inputs, st_tensor **outs)
{
    for (int k = 0; k < f->nvisible; k++) {
        st_tensor *b = outs[k]->view_base;
        bool seen = !b;
        for (int j = 0; !seen && j < f->g->ninputs; j++)
            seen = inputs[j] == b;
        for (int j = 0; !seen && j < f->nvisible; j++)
            seen = outs[j] == b;
        /* ... and so is one that was no view when traced (a reshape that
         * copied, made again as a view of the program's copy) */
        int last = f->alias_at[k + 1] - 1;
        bool own = last >= f->alias_at[k] &&
                   (f->g->stmts[f->alias_stmt[last]].attrs.flags & ST_VIEW_OWN);
        /* a .data alias (or a view of one) made again as one */
        for (int j = f->alias_at[k]; j <= last; j++)
            outs[k]->own_version |= (f->g->stmts[f->alias_stmt[j]].attrs.flags & ST_VIEW_DATA) != 0;
        if (!seen && ((f->alias_in[k] < 0 && f->alias_out[k] < 0) || own)) {
            outs[k]->view_base = NULL;
            if (own)
                outs[k]->is_view = false;
            st_tensor_decref(b);
        }
    }
}

/* ---------------- queries ---------------- */
int st_rt_cfn_num_inputs(const st_rt_cfn *f)
{
    return f ? f->g->ninputs : 0;
}

int st_rt_cfn_num_outputs(const st_rt_cfn *f)
{
    return f ? f->nvisible : 0;
}

int st_rt_cfn_num_kernels(const st_rt_cfn *f, bool backward)
{
    if (!f)
        return 0;
    if (!f->be)
        return backward ? 0 : f->g->nstmts;
    if (backward)
        /* compiles it if not yet (a cache, hence the cast) */
        return f->has_bwd && ensure(f->be, f->bwd_g, (prog *)&f->bwd) == ST_OK
                   ? f->bwd.p->nkernels : 0;
    return f->fwd.p->nkernels;
}

bool st_rt_cfn_has_backward(const st_rt_cfn *f)
{
    return f && f->has_bwd;
}

const st_graph *st_rt_cfn_graph(const st_rt_cfn *f, bool backward)
{
    if (!f)
        return NULL;
    return backward ? f->bwd_g : f->g;
}
