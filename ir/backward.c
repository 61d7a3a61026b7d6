/* ir/backward.c - AOTAutograd-style backward graphs: from a forward graph
 * and the VJP rules of ir/autodiff.c, build the graph that computes the
 * gradients of the forward's output 0 (the loss) with respect to chosen
 * forward values, and decide which forward values it needs at run time
 * (the "saved" values). Owns st_ir_backward, st_ir_forward_saving and
 * st_ir_bwd_info_clear; st_ir_backward_multi differentiates several
 * outputs at once (one gradient input per output).
 *
 * How: every forward value a rule touches gets a placeholder in a working
 * graph (an input carrying the forward meta; forward constants are copied as
 * constants). The statements on a path from wrt to the loss are visited in
 * reverse order and their rules appended, gradients of values used several
 * times summed. The working graph is then compacted: only statements the
 * gradients depend on are kept, and only placeholders that a kept statement
 * reads as data become inputs of the backward graph (the saved values). A
 * placeholder used solely as the shape operand of FULL/RAND* (whose data is
 * never read) is not saved: that statement gets the static dims instead
 * (backward graphs are built for the forward's sizes anyway, as the rules'
 * size-carrying attrs are).
 *
 * Rematerialization (as AOTAutograd's partitioner, in its simplest form):
 * a saved value that only pointwise backward statements read, made by a
 * pointwise forward statement (unary/binary/ternary, not random) from
 * values that are saved anyway or again recomputable so (constants too; a
 * chain of at most REMAT_DEPTH statements, none reading a larger tensor
 * than it makes), is not saved: its forward statements are replayed in
 * the backward graph just before its first reader, and fusion folds them
 * into the pointwise kernels that read them. GELU's erf term
 * (1 + erf(x / sqrt 2), read by its VJP beside x, which the VJP saves
 * anyway) is the case in point: the forward no longer stores a second
 * tensor the size of x.
 * Values a product or a reduction reads stay saved (recomputing them would
 * cost a kernel of their own).
 *
 * Activation checkpointing (the graph's checkpoint ranges, st_ir_add_checkpoint:
 * a checkpoint(fn, ...) call traced inline): a value a range (the outermost
 * holding its statement) makes, that the backward would save and that no
 * statement outside the range reads (a graph output included), is not saved but
 * recomputed in the backward graph, whatever its statement (products,
 * reductions, softmax...), by replaying the range's statements it depends
 * on, just before its first reader; what those read from outside the range
 * is saved instead (its inputs: torch's checkpoint keeps them). A random
 * draw of a range is recomputed too, with the forward's numbers: the
 * compiled forward reserves the generator's counters statement by statement
 * (a draw of n points n counters, runtime/exec.c), so a draw's offset from
 * the run's starting state is known here (draw_offsets); the replayed
 * statement carries it (ST_ATTR_RNG_REPLAY, attrs.i[2]) and the runtime
 * launches it at the state the forward run started from (runtime/cfn.c
 * keeps it per tape node) plus that offset, reserving nothing. A draw whose
 * offset is not known (a size not static, an earlier draw that may run out
 * of order or not at all) is never drawn again: it, or the same-size value
 * pointwise statements make from draws nothing else reads (a dropout's bool
 * keep mask ge(rand, p)), is saved, so the backward uses the forward's
 * numbers.
 *
 * Backward graph inputs: saved forward values (ascending forward value id),
 * then the loss gradient, an input of the loss's meta (callers feed ones for
 * a scalar loss). Outputs: one gradient per wrt entry, of that value's shape
 * and dtype; zeros (a FULL) where no path reaches the loss.
 *
 * Regions (st_ir_region, the graph's custom-gradient table): statements of
 * a region get no VJP of their own. A stop-gradient region (no bwd) cuts
 * every path through it; when the reverse sweep reaches a PyLayer region,
 * its traced backward graph is inlined, fed the gradients of the region's
 * outputs (zeros where none arrived) and placeholders of the forward
 * values it reads (saved like any other), and its outputs are added to the
 * gradients of the region's inputs. Owns the region table functions. */
#include <stdlib.h>
#include <string.h>

#include "st_ir.h"

/* Copies g's statements whose `keep` flag is set (NULL: all) into a new
 * graph with the same inputs, constants and outputs; map[v] receives the
 * new id of every value copied (-1 otherwise). */
static st_graph *replay(const st_graph *g, const bool *keep, int *map)
{
    st_graph *ng = st_ir_graph_new();
    if (!ng)
        return NULL;
    for (int v = 0; v < g->nvalues; v++)
        map[v] = -1;
    bool ok = true;
    for (int k = 0; k < g->ninputs && ok; k++) {
        const st_value *val = &g->values[g->inputs[k]];
        map[g->inputs[k]] =
            st_ir_add_input(ng, &val->meta, val->kind == ST_VAL_PARAM);
        ok = map[g->inputs[k]] >= 0;
    }
    for (int v = 0; v < g->nvalues && ok; v++) {
        const st_value *val = &g->values[v];
        if (val->kind != ST_VAL_CONST)
            continue;
        map[v] = st_ir_add_const(ng, val->meta.dtype, val->fconst,
                                 val->iconst);
        ok = map[v] >= 0;
    }
    for (int si = 0; si < g->nstmts && ok; si++) {
        if (keep && !keep[si])
            continue;
        const st_stmt *s = &g->stmts[si];
        int in[ST_MAX_IN], out[ST_MAX_OUT];
        for (int k = 0; k < s->nin; k++) {
            in[k] = map[s->in[k]];
            if (in[k] < 0) {
                st_err(ST_ERR_RUNTIME, "graph copy: statement %d reads an "
                       "undefined value", si);
                ok = false;
            }
        }
        ok = ok && st_ir_add_stmt(ng, s->op, in, s->nin, &s->attrs, out) >= 0;
        for (int k = 0; ok && k < s->nout; k++)
            map[s->out[k]] = out[k];
    }
    for (int k = 0; k < g->noutputs && ok; k++) {
        ok = map[g->outputs[k]] >= 0;
        if (ok)
            st_ir_mark_output(ng, map[g->outputs[k]]);
        else
            st_err(ST_ERR_RUNTIME, "graph copy: output %d is undefined", k);
    }
    if (!ok) {
        st_ir_graph_free(ng);
        return NULL;
    }
    return ng;
}

void st_ir_bwd_info_clear(st_ir_bwd_info *info)
{
    if (!info)
        return;
    free(info->saved);
    memset(info, 0, sizeof *info);
    info->grad_input = -1;
    info->loss = -1;
}

/* Working state of one st_ir_backward call. */
typedef struct {
    const st_graph *f;   /* forward */
    st_graph *w;         /* working graph */
    int *ph;             /* forward value -> placeholder in w, -1 */
    int *grad;           /* forward value -> its gradient in w, -1 */
} bctx;

static int placeholder(bctx *c, int v)
{
    if (c->ph[v] >= 0)
        return c->ph[v];
    const st_value *val = &c->f->values[v];
    if (val->kind == ST_VAL_CONST)
        c->ph[v] = st_ir_add_const(c->w, val->meta.dtype, val->fconst,
                                   val->iconst);
    else
        c->ph[v] = st_ir_add_input(c->w, &val->meta, false);
    return c->ph[v];
}

static bool is_like_create(st_op_id op)
{
    return op == ST_OP_FULL || op == ST_OP_RAND || op == ST_OP_RANDN ||
           op == ST_OP_RANDINT;
}

#define REMAT_DEPTH 6

static bool pointwise(st_op_id op)
{
    st_op_kind k = st_op(op)->kind;
    return k == ST_OPK_UNARY || k == ST_OPK_BINARY || k == ST_OPK_TERNARY;
}

/* Whether forward value v can be computed in the backward graph from
 * values it has (avail: saved anyway) by pointwise statements only. */
static bool recomputable(const st_graph *f, int v, const bool *avail, int depth)
{
    const st_value *val = &f->values[v];
    if (val->kind == ST_VAL_CONST)
        return true;
    if (avail[v])
        return true;
    if (val->kind != ST_VAL_STMT || depth >= REMAT_DEPTH)
        return false;
    const st_stmt *s = &f->stmts[val->producer];
    if (!pointwise(s->op) || s->nout != 1)
        return false;
    for (int k = 0; k < s->nin; k++) {
        const st_value *u = &f->values[s->in[k]];
        if (u->kind != ST_VAL_CONST && st_meta_numel(&u->meta) > st_meta_numel(&val->meta))
            return false;
        if (!recomputable(f, s->in[k], avail, depth + 1))
            return false;
    }
    return true;
}

/* a's dims: m's shape (a creation statement made with fixed dims instead
 * of its shape operand) */
static void dims_of(st_attrs *a, const st_meta *m)
{
    memset(a->dims, 0, sizeof a->dims);
    for (int d = 0; d < m->ndim; d++)
        a->dims[d] = m->shape[d];
    a->ndims = m->ndim;
}

static bool random_op(st_op_id op)
{
    return st_op(op)->kind == ST_OPK_RANDOM || op == ST_OP_DROPOUT;
}

/* A random statement whose operand gives only its shape (RAND, RANDN,
 * RANDINT: the *_like form), not DROPOUT, whose operand is data. */
static bool shape_operand(const st_stmt *s)
{
    return st_op(s->op)->kind == ST_OPK_RANDOM && s->nin == 1;
}

/* The backward value of forward value v (saved: its input; else replayed
 * from its forward statement), memoized in fmap; -1 with the error set.
 * A random statement is replayed as the forward's draw (rel: the draws'
 * offsets, draw_offsets), with static dims in place of a shape operand. */
static int replay_value(const st_graph *f, st_graph *b, int v, int *fmap,
                        const int64_t *rel)
{
    if (fmap[v] >= 0)
        return fmap[v];
    const st_value *val = &f->values[v];
    if (val->kind == ST_VAL_CONST)
        return fmap[v] = st_ir_add_const(b, val->meta.dtype, val->fconst, val->iconst);
    if (val->kind != ST_VAL_STMT) {
        st_err(ST_ERR_RUNTIME, "backward: value %d is neither saved nor recomputable", v);
        return -1;
    }
    const st_stmt *s = &f->stmts[val->producer];
    int in[ST_MAX_IN], out[ST_MAX_OUT], nin = s->nin;
    st_attrs a = s->attrs;
    if (random_op(s->op)) {
        if (!rel || rel[val->producer] < 0) {
            st_err(ST_ERR_RUNTIME, "backward: draw %d would be drawn again", v);
            return -1;
        }
        a.flags |= ST_ATTR_RNG_REPLAY;
        a.i[2] = rel[val->producer];
        if (shape_operand(s)) {
            dims_of(&a, &f->values[s->out[0]].meta);
            nin = 0;
        }
    }
    for (int k = 0; k < nin; k++)
        if ((in[k] = replay_value(f, b, s->in[k], fmap, rel)) < 0)
            return -1;
    if (st_ir_add_stmt(b, s->op, in, nin, &a, out) < 0)
        return -1;
    for (int k = 0; k < s->nout; k++)
        if (fmap[s->out[k]] < 0)
            fmap[s->out[k]] = out[k];
    return fmap[v];
}

/* ---------------- activation checkpointing ----------------
 * ck[si]: the outermost checkpoint range holding forward statement si, or
 * -1 (NULL when the graph has none; *oom on failure). */
static int *ckpt_map(const st_graph *f, bool *oom)
{
    *oom = false;
    if (!f->nckpt)
        return NULL;
    int *m = malloc(sizeof(int) * (size_t)(f->nstmts > 0 ? f->nstmts : 1));
    if (!m) {
        *oom = true;
        return NULL;
    }
    for (int si = 0; si < f->nstmts; si++)
        m[si] = -1;
    for (int r = 0; r < f->nckpt; r++) {
        int a = f->ckpt[2 * r], e = f->ckpt[2 * r + 1];
        for (int si = a < 0 ? 0 : a; si < e && si < f->nstmts; si++) {
            int o = m[si];
            /* the outermost: the range that starts first, then ends last */
            if (o < 0 || a < f->ckpt[2 * o] ||
                (a == f->ckpt[2 * o] && e > f->ckpt[2 * o + 1]))
                m[si] = r;
        }
    }
    return m;
}

/* The counters a random statement reserves in the compiled forward (its
 * kernel's points: the draw's; a dropout of p 0 or 1 draws nothing); -1
 * when not static. */
static int64_t draw_size(const st_graph *f, const st_stmt *s)
{
    if (s->op == ST_OP_DROPOUT && (s->attrs.f[0] == 0.0 || s->attrs.f[0] == 1.0))
        return 0;
    const st_meta *m = &f->values[s->op == ST_OP_DROPOUT ? s->in[0] : s->out[0]].meta;
    int64_t n = 1;
    for (int d = 0; d < m->ndim; d++) {
        if (m->shape[d] < 0)
            return -1;
        n *= m->shape[d];
    }
    return n;
}

/* rel[si]: random statement si's generator offset from the state the
 * compiled forward run starts from (the sum of the earlier draws' sizes),
 * or -1 where not known: from the first draw whose size is not static,
 * that no statement reads (it may not run), or that shares the kernel of
 * the creation or draw it is shaped like (fusion runs that kernel where
 * the creation is: perhaps before an earlier draw). NULL on failure. */
static int64_t *draw_offsets(const st_graph *f, const int *nread)
{
    int64_t *rel = malloc(sizeof(int64_t) * (size_t)(f->nstmts > 0 ? f->nstmts : 1));
    if (!rel) {
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        return NULL;
    }
    int64_t acc = 0;
    for (int si = 0; si < f->nstmts; si++) {
        const st_stmt *s = &f->stmts[si];
        rel[si] = -1;
        if (!random_op(s->op) || acc < 0)
            continue;
        int64_t n = draw_size(f, s);
        bool ok = n >= 0 && s->nout == 1 && nread[s->out[0]] > 0;
        if (ok && shape_operand(s) && f->values[s->in[0]].kind == ST_VAL_STMT) {
            st_op_kind pk = st_op(f->stmts[f->values[s->in[0]].producer].op)->kind;
            ok = pk != ST_OPK_CREATE && pk != ST_OPK_RANDOM;
        }
        if (!ok) {
            acc = -1;
            continue;
        }
        rel[si] = acc;
        acc += n;
    }
    return rel;
}

/* The range of forward value v's producer (-1: none, or a value kept from
 * the forward: a random draw, whose numbers are not drawn again). */
static int ckpt_of(const st_graph *f, const int *ck, const bool *drawn, int v)
{
    const st_value *val = &f->values[v];
    if (val->kind != ST_VAL_STMT || drawn[v])
        return -1;
    return ck[val->producer];
}

/* drawn[v]: v is a random draw kept from the forward (not one of a range
 * at a known offset, rel), or a value of the same size that pointwise
 * statements make from draws no other statement reads, and constants (a
 * dropout's keep mask, ge(rand, p): the bool mask is kept, not the float
 * draw). The last of such a chain is what the backward is handed. */
static void ckpt_drawn(const st_graph *f, const int *ck, const int64_t *rel,
                       const int *nread, bool *drawn)
{
    for (int si = 0; si < f->nstmts; si++) {
        const st_stmt *s = &f->stmts[si];
        if (random_op(s->op)) {
            /* a draw of a range at a known offset is drawn again */
            bool again = ck[si] >= 0 && rel[si] >= 0;
            for (int k = 0; k < s->nout; k++)
                drawn[s->out[k]] = !again;
            continue;
        }
        if (!pointwise(s->op) || s->nout != 1)
            continue;
        int64_t n = st_meta_numel(&f->values[s->out[0]].meta);
        bool any = false, ok = true;
        for (int k = 0; ok && k < s->nin; k++) {
            int u = s->in[k];
            if (f->values[u].kind == ST_VAL_CONST)
                continue;
            ok = drawn[u] && nread[u] == 1 && st_meta_numel(&f->values[u].meta) == n;
            any = true;
        }
        drawn[s->out[0]] = ok && any;
    }
}

/* Makes forward value v (read while recomputing range r) available to the
 * backward graph: recomputed itself when range r made it, saved otherwise
 * (a region input, a random draw). ckr marks the recomputed values. */
static void ckpt_need(const st_graph *f, const int *ck, const bool *drawn, int r, int v,
                      bool *avail, bool *ckr)
{
    const st_value *val = &f->values[v];
    if (val->kind == ST_VAL_CONST || avail[v] || ckr[v])
        return;
    if (ckpt_of(f, ck, drawn, v) != r) {
        avail[v] = true;
        return;
    }
    ckr[v] = true;
    const st_stmt *s = &f->stmts[val->producer];
    if (random_op(s->op) && shape_operand(s))
        return; /* replayed with static dims */
    for (int k = 0; k < s->nin; k++)
        ckpt_need(f, ck, drawn, r, s->in[k], avail, ckr);
}

/* Checkpointing (see the top): the saved values (avail) that a range
 * makes and that only statements of that range read are recomputed
 * instead (ckr), from the values the range reads from outside, saved. */
static bool ckpt_plan(const st_graph *f, bool *avail, bool *remat, bool *ckr,
                      int64_t **rel_out)
{
    bool oom;
    int *ck = ckpt_map(f, &oom);
    if (oom) {
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        return false;
    }
    if (!ck)
        return true;
    int nf = f->nvalues > 0 ? f->nvalues : 1;
    bool *outside = calloc((size_t)nf, sizeof *outside);
    bool *drawn = calloc((size_t)nf, sizeof *drawn);
    int *nread = calloc((size_t)nf, sizeof *nread);
    if (!outside || !drawn || !nread) {
        free(ck);
        free(outside);
        free(drawn);
        free(nread);
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        return false;
    }
    /* a graph output the range made is recomputed too, as torch's checkpoint
     * does: saved, a later in-place write into it (y = checkpoint(fn, x);
     * y.mul_(2)) would fail the backward's version check where torch's
     * (and eager's) backward runs */
    for (int si = 0; si < f->nstmts; si++) {
        const st_stmt *s = &f->stmts[si];
        for (int k = 0; k < s->nin; k++) {
            int u = s->in[k];
            nread[u]++;
            if (f->values[u].kind == ST_VAL_STMT && ck[f->values[u].producer] != ck[si])
                outside[u] = true;
        }
    }
    for (int k = 0; k < f->noutputs; k++)
        nread[f->outputs[k]]++;
    int64_t *rel = draw_offsets(f, nread);
    if (!rel) {
        free(ck);
        free(outside);
        free(drawn);
        free(nread);
        return false;
    }
    *rel_out = rel;
    ckpt_drawn(f, ck, rel, nread, drawn);
    /* the candidates first, so that none of them counts as saved */
    for (int v = 0; v < f->nvalues; v++)
        if (avail[v] && !outside[v] && ckpt_of(f, ck, drawn, v) >= 0) {
            avail[v] = false;
            ckr[v] = true;
        }
    for (int v = 0; v < f->nvalues; v++) {
        if (!ckr[v] || f->values[v].kind != ST_VAL_STMT)
            continue;
        int r = ckpt_of(f, ck, drawn, v);
        const st_stmt *s = &f->stmts[f->values[v].producer];
        for (int k = 0; k < s->nin && !(random_op(s->op) && shape_operand(s)); k++)
            ckpt_need(f, ck, drawn, r, s->in[k], avail, ckr);
    }
    free(drawn);
    free(nread);
    /* a pointwise rematerialization reading a value now recomputed or
     * saved: replay_value follows either */
    for (int v = 0; v < f->nvalues; v++)
        if (avail[v])
            remat[v] = ckr[v] = false;
    free(outside);
    free(ck);
    return true;
}

/* Compacts the working graph into the backward graph (see the top). */
static st_graph *compact(bctx *c, const int *seeds, int nseeds,
                         st_ir_bwd_info *info)
{
    const st_graph *w = c->w;
    int nv = w->nvalues > 0 ? w->nvalues : 1;
    int ns = w->nstmts > 0 ? w->nstmts : 1;
    bool *live = calloc((size_t)nv, sizeof *live);
    bool *keep = calloc((size_t)ns, sizeof *keep);
    bool *shape_only = calloc((size_t)ns, sizeof *shape_only);
    int *map = malloc(sizeof(int) * (size_t)nv);
    /* which working input is the placeholder of which forward value */
    int *fwd_of = malloc(sizeof(int) * (size_t)nv);
    bool *avail = NULL, *remat = NULL, *ckr = NULL;
    int *fmap = NULL;
    int64_t *rel = NULL; /* the draws' offsets, when checkpointed */
    st_graph *b = st_ir_graph_new();
    bool ok = live && keep && shape_only && map && fwd_of && b;
    if (!ok) {
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        goto done;
    }
    for (int v = 0; v < w->nvalues; v++) {
        map[v] = -1;
        fwd_of[v] = -1;
    }
    for (int v = 0; v < c->f->nvalues; v++)
        if (c->ph[v] >= 0 && w->values[c->ph[v]].kind == ST_VAL_INPUT)
            fwd_of[c->ph[v]] = v;
    for (int k = 0; k < w->noutputs; k++)
        live[w->outputs[k]] = true;
    for (int si = w->nstmts - 1; si >= 0; si--) {
        const st_stmt *s = &w->stmts[si];
        for (int k = 0; k < s->nout; k++)
            keep[si] |= live[s->out[k]];
        if (!keep[si])
            continue;
        if (is_like_create(s->op) && s->nin == 1 && fwd_of[s->in[0]] >= 0 &&
            w->values[s->in[0]].meta.ndim <= ST_MAX_DIMS) {
            shape_only[si] = true; /* its data is never read */
            continue;
        }
        for (int k = 0; k < s->nin; k++)
            live[s->in[k]] = true;
    }
    /* rematerialized values (see the top): saved ones that only pointwise
     * statements read and that pointwise statements make from saved ones */
    int nf = c->f->nvalues > 0 ? c->f->nvalues : 1;
    avail = calloc((size_t)nf, sizeof *avail);
    remat = calloc((size_t)nf, sizeof *remat);
    ckr = calloc((size_t)nf, sizeof *ckr);
    fmap = malloc(sizeof(int) * (size_t)nf);
    bool *only_pw = calloc((size_t)nv, sizeof *only_pw);
    if (!avail || !remat || !ckr || !fmap || !only_pw) {
        free(only_pw);
        ok = false;
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        goto done;
    }
    for (int v = 0; v < w->nvalues; v++)
        only_pw[v] = true;
    for (int k = 0; k < w->noutputs; k++)
        only_pw[w->outputs[k]] = false;
    for (int si = 0; si < w->nstmts; si++) {
        const st_stmt *s = &w->stmts[si];
        if (!keep[si] || shape_only[si] || pointwise(s->op))
            continue;
        for (int k = 0; k < s->nin; k++)
            only_pw[s->in[k]] = false;
    }
    for (int v = 0; v < c->f->nvalues; v++) {
        int p = c->ph[v];
        avail[v] = p >= 0 && fwd_of[p] == v && live[p];
        fmap[v] = -1;
    }
    /* a forward output is not rematerialized: it exists anyway (saving it
     * costs no memory while the caller holds it, as eager's saved tensors),
     * and an in-place write into it after the run must fail the backward
     * that reads it, as eager's version check does (w = y * z; y.mul_(2)) */
    bool *fout = calloc((size_t)nf, sizeof *fout);
    if (!fout) {
        ok = false;
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        free(only_pw);
        goto done;
    }
    for (int k = 0; k < c->f->noutputs; k++)
        fout[c->f->outputs[k]] = true;
    for (int v = 0; v < c->f->nvalues; v++) {
        if (!avail[v] || !only_pw[c->ph[v]] || c->f->values[v].kind != ST_VAL_STMT ||
            fout[v])
            continue;
        /* recomputable from the others: v itself not counted as available */
        avail[v] = false;
        remat[v] = recomputable(c->f, v, avail, 0);
        avail[v] = !remat[v];
    }
    free(only_pw);
    free(fout);
    if (!ckpt_plan(c->f, avail, remat, ckr, &rel)) {
        ok = false;
        goto done;
    }
    /* inputs: the saved forward values in forward order, then the seed */
    int nsaved = 0;
    for (int v = 0; v < c->f->nvalues; v++)
        nsaved += avail[v];
    info->saved = malloc(sizeof(int) * (size_t)(nsaved > 0 ? nsaved : 1));
    if (!info->saved) {
        ok = false;
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        goto done;
    }
    for (int v = 0; v < c->f->nvalues && ok; v++) {
        if (!avail[v])
            continue;
        int p = c->ph[v];
        /* a value a checkpoint's recomputation reads has no placeholder
         * when no rule reads it */
        fmap[v] = st_ir_add_input(b, &c->f->values[v].meta, false);
        ok = fmap[v] >= 0;
        if (p >= 0 && fwd_of[p] == v)
            map[p] = fmap[v];
        info->saved[info->nsaved++] = v;
    }
    info->grad_input = info->nsaved;
    for (int k = 0; k < nseeds && ok; k++) {
        int sd = seeds[k];
        map[sd] = st_ir_add_input(b, &w->values[sd].meta, false);
        ok = map[sd] >= 0;
    }

    for (int si = 0; si < w->nstmts && ok; si++) {
        if (!keep[si])
            continue;
        const st_stmt *s = &w->stmts[si];
        st_attrs a = s->attrs;
        int in[ST_MAX_IN], out[ST_MAX_OUT], nin = s->nin;
        if (shape_only[si]) {
            dims_of(&a, &w->values[s->in[0]].meta);
            nin = 0;
        }
        for (int k = 0; k < nin && ok; k++) {
            int v = s->in[k];
            /* a rematerialized value: replayed just before its first
             * reader, so that fusion can fold it into that kernel */
            if (map[v] < 0 && fwd_of[v] >= 0 && (remat[fwd_of[v]] || ckr[fwd_of[v]]))
                map[v] = replay_value(c->f, b, fwd_of[v], fmap, rel);
            if (map[v] < 0 && w->values[v].kind == ST_VAL_CONST)
                map[v] = st_ir_add_const(b, w->values[v].meta.dtype,
                                         w->values[v].fconst,
                                         w->values[v].iconst);
            in[k] = map[v];
            if (in[k] < 0) {
                if (st_err_kind() == ST_OK)
                    st_err(ST_ERR_RUNTIME, "backward: statement %d reads an "
                           "undefined value", si);
                ok = false;
            }
        }
        ok = ok && st_ir_add_stmt(b, s->op, in, nin, &a, out) >= 0;
        for (int k = 0; ok && k < s->nout; k++)
            map[s->out[k]] = out[k];
    }
    for (int k = 0; k < w->noutputs && ok; k++) {
        int v = map[w->outputs[k]];
        ok = v >= 0;
        if (ok)
            st_ir_mark_output(b, v);
        else
            st_err(ST_ERR_RUNTIME, "backward: gradient %d is undefined", k);
    }
done:
    free(live);
    free(keep);
    free(shape_only);
    free(map);
    free(fwd_of);
    free(avail);
    free(remat);
    free(ckr);
    free(fmap);
    free(rel);
    if (!ok) {
        st_ir_graph_free(b);
        return NULL;
    }
    return b;
}

/* A FULL of zeros of meta m (static dims, no operand). */
static int zeros(st_graph *w, const st_meta *m)
{
    st_attrs a;
    st_ir_zeros_attrs(m, &a);
    int out[ST_MAX_OUT];
    return st_ir_add_stmt(w, ST_OP_FULL, NULL, 0, &a, out) < 0 ? -1 : out[0];
}

static st_status check_args(const st_graph *fwd, const int *wrt, int nwrt,
                            st_graph **bwd_out, st_ir_bwd_info *info)
{
    if (!fwd || !bwd_out || !info || nwrt < 0 || (nwrt > 0 && !wrt))
        return st_err(ST_ERR_VALUE, "backward: null argument");
    for (int k = 0; k < nwrt; k++) {
        if (wrt[k] < 0 || wrt[k] >= fwd->nvalues)
            return st_err(ST_ERR_INDEX, "backward: wrt[%d] = %d is not a "
                          "value of the graph (%d values)", k, wrt[k],
                          fwd->nvalues);
        if (fwd->values[wrt[k]].kind == ST_VAL_CONST)
            return st_err(ST_ERR_VALUE, "backward: wrt[%d] is a constant", k);
    }
    for (int si = 0; si < fwd->nstmts; si++) {
        const st_stmt *s = &fwd->stmts[si];
        if (s->nin < 0 || s->nin > ST_MAX_IN || s->nout < 1 ||
            s->nout > ST_MAX_OUT)
            return st_err(ST_ERR_VALUE, "backward: statement %d is malformed",
                          si);
        for (int k = 0; k < s->nin; k++)
            if (s->in[k] < 0 || s->in[k] >= fwd->nvalues)
                return st_err(ST_ERR_VALUE, "backward: statement %d reads "
                              "value %d", si, s->in[k]);
        for (int k = 0; k < s->nout; k++)
            if (s->out[k] < 0 || s->out[k] >= fwd->nvalues)
                return st_err(ST_ERR_VALUE, "backward: statement %d writes "
                              "value %d", si, s->out[k]);
    }
    return ST_OK;
}

/* ---------------- regions ---------------- */
static void region_free(st_ir_region *r)
{
    free(r->in);
    free(r->out);
    free(r->read);
    st_ir_graph_free(r->bwd);
    memset(r, 0, sizeof *r);
}

void st_ir_regions_clear(st_graph *g)
{
    if (!g)
        return;
    for (int k = 0; k < g->nregions; k++)
        region_free(&g->regions[k]);
    free(g->regions);
    g->regions = NULL;
    g->nregions = g->cap_regions = 0;
    free(g->ckpt);
    g->ckpt = NULL;
    g->nckpt = g->cap_ckpt = 0;
}

int st_ir_add_checkpoint(st_graph *g, int first, int end)
{
    if (!g || first < 0 || end < first || end > g->nstmts) {
        st_err(ST_ERR_VALUE, "add_checkpoint: bad range");
        return -1;
    }
    if (end == first)
        return 0;
    if (g->nckpt == g->cap_ckpt) {
        int nc = g->cap_ckpt ? g->cap_ckpt * 2 : 8;
        int *n = realloc(g->ckpt, sizeof(int) * 2 * (size_t)nc);
        if (!n) {
            st_err(ST_ERR_MEMORY, "add_checkpoint: out of memory");
            return -1;
        }
        g->ckpt = n;
        g->cap_ckpt = nc;
    }
    g->ckpt[2 * g->nckpt] = first;
    g->ckpt[2 * g->nckpt + 1] = end;
    g->nckpt++;
    return 0;
}

static int *dup_ints(const int *a, int n, bool *ok)
{
    if (n <= 0)
        return NULL;
    int *r = malloc(sizeof(int) * (size_t)n);
    if (!r)
        *ok = false;
    else
        memcpy(r, a, sizeof(int) * (size_t)n);
    return r;
}

bool st_ir_stmt_in_region(const st_graph *g, int si, bool custom)
{
    for (int r = 0; si >= 0 && r < g->nregions; r++)
        if ((g->regions[r].bwd != NULL) == custom && si >= g->regions[r].first &&
            si < g->regions[r].end)
            return true;
    return false;
}

bool st_ir_vjp_reads(const st_graph *g, int si, int i, const bool *from)
{
    const st_stmt *st = &g->stmts[si];
    const st_op_def *def = st_op(st->op);
    if (!def || st_ir_stmt_in_region(g, si, true))
        return true;
    if (!(def->vjp_saves & (1u << i)))
        return false;   /* x[idx] saves only the indices */
    if (st->op == ST_OP_MUL && st->nin == 2)
        return from[st->in[1 - i]];   /* x * 2 saves only the 2 */
    return true;
}

int st_ir_add_region(st_graph *g, const st_ir_region *r)
{
    if (!g || !r || r->first < 0 || r->end < r->first || r->nin < 0 ||
        r->nout < 0 || r->nread < 0) {
        if (r)
            st_ir_graph_free(r->bwd);
        st_err(ST_ERR_VALUE, "add_region: bad region");
        return -1;
    }
    if (r->bwd && (r->bwd->ninputs != r->nout + r->nread ||
                   r->bwd->noutputs != r->nin)) {
        st_ir_graph_free(r->bwd);
        st_err(ST_ERR_VALUE, "add_region: the backward graph takes %d inputs "
               "and gives %d outputs, the region needs %d and %d",
               r->bwd->ninputs, r->bwd->noutputs, r->nout + r->nread, r->nin);
        return -1;
    }
    if (g->nregions == g->cap_regions) {
        int nc = g->cap_regions ? g->cap_regions * 2 : 8;
        st_ir_region *nr = realloc(g->regions, sizeof *nr * (size_t)nc);
        if (!nr) {
            st_ir_graph_free(r->bwd);
            st_err(ST_ERR_MEMORY, "add_region: out of memory");
            return -1;
        }
        g->regions = nr;
        g->cap_regions = nc;
    }
    st_ir_region c = *r;
    bool ok = true;
    c.in = dup_ints(r->in, r->nin, &ok);
    c.out = dup_ints(r->out, r->nout, &ok);
    c.read = dup_ints(r->read, r->nread, &ok);
    if (!ok) {
        region_free(&c);
        st_err(ST_ERR_MEMORY, "add_region: out of memory");
        return -1;
    }
    g->regions[g->nregions] = c;
    return g->nregions++;
}

/* region_of[si]: the region statement si belongs to, or -1 (NULL when the
 * graph has none; *oom on failure). */
static int *region_map(const st_graph *g, bool *oom)
{
    *oom = false;
    if (!g->nregions)
        return NULL;
    int *m = malloc(sizeof(int) * (size_t)(g->nstmts > 0 ? g->nstmts : 1));
    if (!m) {
        *oom = true;
        return NULL;
    }
    for (int si = 0; si < g->nstmts; si++)
        m[si] = -1;
    for (int k = 0; k < g->nregions; k++)
        for (int si = g->regions[k].first;
             si < g->regions[k].end && si < g->nstmts; si++)
            m[si] = k;
    return m;
}

/* Forward reachability from the flags already set in from[] (see
 * st_ir_grad_reach). */
static void reach(const st_graph *g, const int *rmap, bool *from)
{
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        int r = rmap ? rmap[si] : -1;
        if (r >= 0) {
            const st_ir_region *rg = &g->regions[r];
            if (si != rg->first || !rg->bwd)
                continue;
            bool any = false;
            for (int k = 0; k < rg->nin; k++)
                any |= from[rg->in[k]];
            for (int k = 0; any && k < rg->nout; k++)
                if (rg->out[k] >= 0 &&
                    st_dtype_is_float(g->values[rg->out[k]].meta.dtype))
                    from[rg->out[k]] = true;
            continue;
        }
        const st_op_def *def = st_op(s->op);
        if (!def || !def->vjp)
            continue; /* not differentiable: the path stops here */
        bool any = false;
        for (int k = 0; k < s->nin; k++)
            any |= from[s->in[k]];
        if (!any)
            continue;
        for (int k = 0; k < s->nout; k++)
            if (st_dtype_is_float(g->values[s->out[k]].meta.dtype))
                from[s->out[k]] = true;
    }
}

bool *st_ir_grad_reach(const st_graph *g, const int *wrt, int nwrt)
{
    bool oom;
    int *rmap = region_map(g, &oom);
    bool *from = oom ? NULL : calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1),
                                     sizeof *from);
    if (from) {
        st_ir_autodiff_init();
        for (int k = 0; k < nwrt; k++)
            if (wrt[k] >= 0 && wrt[k] < g->nvalues)
                from[wrt[k]] = st_dtype_is_float(g->values[wrt[k]].meta.dtype);
        reach(g, rmap, from);
    }
    free(rmap);
    return from;
}

/* [*lo, *hi) along *dim: what slice_scatter statement s of g writes
 * (step-1 slices only); false otherwise. */
static bool ss_range(const st_graph *g, const st_stmt *s, int *dim, int64_t *lo,
                     int64_t *hi)
{
    if (s->op != ST_OP_SLICE_SCATTER || s->nin != 2 || s->attrs.i[3] != 1)
        return false;
    const st_meta *bm = &g->values[s->in[0]].meta;
    int64_t d = s->attrs.i[0];
    if (bm->ndim < 1 || d < -bm->ndim || d >= bm->ndim)
        return false;
    *dim = (int)(d < 0 ? d + bm->ndim : d);
    int64_t start = s->attrs.i[1], stop = s->attrs.i[2];
    int64_t n = st_slice_bounds(bm->shape[*dim], &start, &stop, 1);
    *lo = start;
    *hi = start + n;
    return true;
}

/* Is statement s (a slice_scatter) a link of a chain of slice_scatters
 * along one dim, step 1, whose links below s write nothing of s's slice,
 * rooted at a fill (a traced cat / stack: full, then a slice_scatter per
 * part)? Then s's base can take s's output gradient as is, without its
 * slice zeroed: that region of the base's gradient is read by nobody
 * (each link's src reads its own slice, the fill takes no gradient, other
 * readers of a link only add to its gradient). Zeroing made a chain of n
 * parts cost n full-size passes (a stacked im2col under dynamic shapes). */
static bool disjoint_chain(const st_graph *g, const st_stmt *s)
{
    int dim, d;
    int64_t lo, hi, a, b;
    if (!ss_range(g, s, &dim, &lo, &hi))
        return false;
    for (int v = s->in[0];;) {
        const st_value *val = &g->values[v];
        if (val->kind != ST_VAL_STMT || val->producer < 0)
            return false;
        const st_stmt *p = &g->stmts[val->producer];
        if (p->op == ST_OP_FULL)
            return true;
        if (!ss_range(g, p, &d, &a, &b) || d != dim || (a < hi && lo < b))
            return false;
        v = p->in[0];
    }
}

/* If value x is scatter_add(zeros, idx, src) (as the VJPs of embedding,
 * gather and index_select make it), its statement; else NULL. */
static const st_stmt *zero_scatter(const st_graph *w, int x)
{
    const st_value *xv = &w->values[x];
    if (xv->kind != ST_VAL_STMT || xv->producer < 0)
        return NULL;
    const st_stmt *s = &w->stmts[xv->producer];
    if (s->op != ST_OP_SCATTER_ADD || s->nin != 3)
        return NULL;
    const st_value *zv = &w->values[s->in[0]];
    if (zv->kind != ST_VAL_STMT || zv->producer < 0)
        return NULL;
    const st_stmt *z = &w->stmts[zv->producer];
    if (z->op != ST_OP_FULL || z->attrs.f[0] != 0.0 ||
        (z->attrs.flags & ST_ATTR_INT_VALUE))
        return NULL;
    return s;
}

/* Adds gradient ig to value v's (summing uses). A sum with a scatter into
 * zeros (a tied embedding's two gradients) scatters into the other term
 * instead: no zero fill, no dense add (the zeros and the first scatter
 * become dead and compact() drops them). */
static bool add_grad(bctx *c, int v, int ig)
{
    if (c->grad[v] < 0) {
        c->grad[v] = ig;
        return true;
    }
    int dense = c->grad[v], sv = ig;
    const st_stmt *sc = zero_scatter(c->w, sv);
    if (!sc) {
        dense = ig;
        sv = c->grad[v];
        sc = zero_scatter(c->w, sv);
    }
    if (sc && st_meta_eq(&c->w->values[dense].meta, &c->w->values[sv].meta)) {
        int in[3] = {dense, sc->in[1], sc->in[2]}, out[ST_MAX_OUT];
        st_attrs a = sc->attrs;
        if (st_ir_add_stmt(c->w, ST_OP_SCATTER_ADD, in, 3, &a, out) < 0)
            return false;
        c->grad[v] = out[0];
        return true;
    }
    int in[2] = {c->grad[v], ig}, out[ST_MAX_OUT];
    if (st_ir_add_stmt(c->w, ST_OP_ADD, in, 2, NULL, out) < 0)
        return false;
    c->grad[v] = out[0];
    return true;
}

/* Inlines region rg's backward graph: gradients of its outputs (zeros
 * where none) and placeholders of the values it reads in, gradients of
 * its inputs out. */
static bool inline_region(bctx *c, const st_ir_region *rg, const bool *from)
{
    const st_graph *b = rg->bwd;
    bool anyg = false;
    for (int k = 0; k < rg->nout; k++)
        anyg |= rg->out[k] >= 0 && c->grad[rg->out[k]] >= 0;
    if (!anyg)
        return true;
    int *map = malloc(sizeof(int) * (size_t)(b->nvalues > 0 ? b->nvalues : 1));
    if (!map) {
        st_err(ST_ERR_MEMORY, "backward: out of memory");
        return false;
    }
    bool ok = true;
    for (int v = 0; v < b->nvalues; v++)
        map[v] = -1;
    for (int k = 0; k < rg->nout && ok; k++) {
        int o = rg->out[k], gv = o >= 0 ? c->grad[o] : -1;
        if (gv < 0)
            gv = zeros(c->w, &b->values[b->inputs[k]].meta);
        map[b->inputs[k]] = gv;
        ok = gv >= 0;
    }
    for (int k = 0; k < rg->nread && ok; k++) {
        map[b->inputs[rg->nout + k]] = placeholder(c, rg->read[k]);
        ok = map[b->inputs[rg->nout + k]] >= 0;
    }
    for (int v = 0; v < b->nvalues && ok; v++)
        if (b->values[v].kind == ST_VAL_CONST) {
            map[v] = st_ir_add_const(c->w, b->values[v].meta.dtype,
                                     b->values[v].fconst, b->values[v].iconst);
            ok = map[v] >= 0;
        }
    for (int si = 0; si < b->nstmts && ok; si++) {
        const st_stmt *s = &b->stmts[si];
        int in[ST_MAX_IN], out[ST_MAX_OUT];
        for (int k = 0; k < s->nin && ok; k++)
            ok = (in[k] = map[s->in[k]]) >= 0;
        ok = ok && st_ir_add_stmt(c->w, s->op, in, s->nin, &s->attrs, out) >= 0;
        for (int k = 0; ok && k < s->nout; k++)
            map[s->out[k]] = out[k];
    }
    for (int k = 0; k < rg->nin && ok; k++) {
        int gv = map[b->outputs[k]], v = rg->in[k];
        ok = gv >= 0;
        if (ok && from[v])
            ok = add_grad(c, v, gv);
    }
    if (!ok && st_err_kind() == ST_OK)
        st_err(ST_ERR_RUNTIME, "backward: inlining a custom-gradient region "
               "failed");
    free(map);
    return ok;
}

/* The common builder: gradients of sum_k <outs[k], seed_k> w.r.t. wrt. */
static st_status build(const st_graph *fwd, const int *wrt, int nwrt,
                       const int *outs, int nouts, st_graph **bwd_out,
                       st_ir_bwd_info *info)
{
    st_ir_autodiff_init();
    st_status st;
    int n = fwd->nvalues > 0 ? fwd->nvalues : 1;
    bctx c = {fwd, st_ir_graph_new(), malloc(sizeof(int) * (size_t)n),
              malloc(sizeof(int) * (size_t)n)};
    bool *from = calloc((size_t)n, sizeof *from); /* reached from wrt */
    bool *to = calloc((size_t)n, sizeof *to);     /* reaches an output */
    int *seeds = malloc(sizeof(int) * (size_t)(nouts > 0 ? nouts : 1));
    bool oom;
    int *rmap = region_map(fwd, &oom);
    st_graph *b = NULL;
    if (!c.w || !c.ph || !c.grad || !from || !to || !seeds || oom) {
        st = st_err(ST_ERR_MEMORY, "backward: out of memory");
        goto done;
    }
    for (int v = 0; v < fwd->nvalues; v++)
        c.ph[v] = c.grad[v] = -1;
    for (int k = 0; k < nwrt; k++)
        from[wrt[k]] = st_dtype_is_float(fwd->values[wrt[k]].meta.dtype);
    reach(fwd, rmap, from);
    for (int k = 0; k < nouts; k++)
        to[outs[k]] = true;
    for (int si = fwd->nstmts - 1; si >= 0; si--) {
        const st_stmt *s = &fwd->stmts[si];
        bool any = false;
        for (int k = 0; k < s->nout; k++)
            any |= to[s->out[k]];
        if (any)
            for (int k = 0; k < s->nin; k++)
                to[s->in[k]] = true;
        const st_ir_region *rg = rmap && rmap[si] >= 0 ? &fwd->regions[rmap[si]]
                                                       : NULL;
        if (!rg || si != rg->first || !rg->bwd)
            continue;
        any = false;
        for (int k = 0; k < rg->nout; k++)
            any |= rg->out[k] >= 0 && to[rg->out[k]];
        for (int k = 0; any && k < rg->nin; k++)
            to[rg->in[k]] = true;
    }
    for (int k = 0; k < nouts; k++) {
        int o = outs[k];
        seeds[k] = st_ir_add_input(c.w, &fwd->values[o].meta, false);
        if (seeds[k] < 0)
            goto fail;
        if (!from[o])
            continue;
        if (c.grad[o] < 0) {
            c.grad[o] = seeds[k];
            continue;
        }
        int in[2] = {c.grad[o], seeds[k]}, out[ST_MAX_OUT];
        if (st_ir_add_stmt(c.w, ST_OP_ADD, in, 2, NULL, out) < 0)
            goto fail;
        c.grad[o] = out[0];
    }
    for (int si = fwd->nstmts - 1; si >= 0; si--) {
        const st_stmt *fs = &fwd->stmts[si];
        const st_op_def *def = st_op(fs->op);
        if (rmap && rmap[si] >= 0) {
            /* a region: its statements have no VJP of their own */
            const st_ir_region *rg = &fwd->regions[rmap[si]];
            if (si == rg->first && rg->bwd && !inline_region(&c, rg, from))
                goto fail;
            continue;
        }
        if (!def || !def->vjp || !from[fs->out[0]] || !to[fs->out[0]])
            continue;
        int og[ST_MAX_OUT] = {-1, -1, -1}, ig[ST_MAX_IN];
        bool anyg = false;
        for (int k = 0; k < fs->nout; k++) {
            og[k] = c.grad[fs->out[k]];
            anyg |= og[k] >= 0;
        }
        if (!anyg)
            continue;
        st_stmt s = *fs;
        for (int k = 0; k < s.nin; k++)
            if ((s.in[k] = placeholder(&c, fs->in[k])) < 0)
                goto fail;
        for (int k = 0; k < s.nout; k++)
            if ((s.out[k] = placeholder(&c, fs->out[k])) < 0)
                goto fail;
        if (def->vjp(c.w, &s, og, ig) != ST_OK)
            goto fail;
        if (ig[0] >= 0 && disjoint_chain(fwd, fs))
            ig[0] = og[0]; /* (the zeroing the rule emitted is dead) */
        for (int k = 0; k < s.nin; k++) {
            int v = fs->in[k];
            if (ig[k] < 0 || !from[v])
                continue;
            if (!add_grad(&c, v, ig[k]))
                goto fail;
        }
    }
    for (int k = 0; k < nwrt; k++) {
        int gv = c.grad[wrt[k]];
        if (gv < 0 && (gv = zeros(c.w, &fwd->values[wrt[k]].meta)) < 0)
            goto fail;
        st_ir_mark_output(c.w, gv);
    }
    info->loss = nouts > 0 ? outs[0] : -1;
    b = compact(&c, seeds, nouts, info);
    if (!b)
        goto fail;
    *bwd_out = b;
    st = ST_OK;
    goto done;
fail:
    st = st_err_kind() != ST_OK
             ? st_err_kind()
             : st_err(ST_ERR_RUNTIME, "backward: building the graph failed");
    st_ir_bwd_info_clear(info);
done:
    st_ir_graph_free(c.w);
    free(c.ph);
    free(c.grad);
    free(from);
    free(to);
    free(seeds);
    free(rmap);
    return st;
}

static void info_reset(st_graph **bwd_out, st_ir_bwd_info *info)
{
    if (info) { /* an output: earlier contents are not freed */
        memset(info, 0, sizeof *info);
        info->grad_input = info->loss = -1;
    }
    if (bwd_out)
        *bwd_out = NULL;
}

st_status st_ir_backward(const st_graph *fwd, const int *wrt, int nwrt,
                         st_graph **bwd_out, st_ir_bwd_info *info)
{
    info_reset(bwd_out, info);
    st_status st = check_args(fwd, wrt, nwrt, bwd_out, info);
    if (st != ST_OK)
        return st;
    if (fwd->noutputs < 1)
        return st_err(ST_ERR_VALUE, "backward: the forward graph has no "
                      "output (output 0 is the loss)");
    int loss = fwd->outputs[0];
    if (loss < 0 || loss >= fwd->nvalues)
        return st_err(ST_ERR_VALUE, "backward: output 0 is not a value");
    if (!st_dtype_is_float(fwd->values[loss].meta.dtype))
        return st_err(ST_ERR_TYPE, "backward: the loss (output 0) is %s; "
                      "only floating point outputs have gradients",
                      st_dtype_name(fwd->values[loss].meta.dtype));
    return build(fwd, wrt, nwrt, &loss, 1, bwd_out, info);
}

st_status st_ir_backward_multi(const st_graph *fwd, const int *wrt, int nwrt,
                               const int *outs, int nouts,
                               st_graph **bwd_out, st_ir_bwd_info *info)
{
    info_reset(bwd_out, info);
    if (nouts < 0 || (nouts > 0 && !outs))
        return st_err(ST_ERR_VALUE, "backward: null argument");
    for (int k = 0; k < nouts; k++) {
        if (!fwd || outs[k] < 0 || outs[k] >= fwd->nvalues)
            return st_err(ST_ERR_INDEX, "backward: outs[%d] is not a value "
                          "of the graph", k);
        if (!st_dtype_is_float(fwd->values[outs[k]].meta.dtype))
            return st_err(ST_ERR_TYPE, "backward: outs[%d] is %s; only "
                          "floating point outputs have gradients", k,
                          st_dtype_name(fwd->values[outs[k]].meta.dtype));
    }
    st_status st = check_args(fwd, wrt, nwrt, bwd_out, info);
    if (st != ST_OK)
        return st;
    return build(fwd, wrt, nwrt, outs, nouts, bwd_out, info);
}

st_graph *st_ir_forward_saving(const st_graph *fwd, const st_ir_bwd_info *info)
{
    if (!fwd || !info || info->nsaved < 0 ||
        (info->nsaved > 0 && !info->saved)) {
        st_err(ST_ERR_VALUE, "forward_saving: null argument");
        return NULL;
    }
    for (int k = 0; k < info->nsaved; k++)
        if (info->saved[k] < 0 || info->saved[k] >= fwd->nvalues) {
            st_err(ST_ERR_INDEX, "forward_saving: saved value %d is not a "
                   "value of the graph", info->saved[k]);
            return NULL;
        }
    int *map = malloc(sizeof(int) * (size_t)(fwd->nvalues > 0 ? fwd->nvalues
                                                               : 1));
    if (!map) {
        st_err(ST_ERR_MEMORY, "forward_saving: out of memory");
        return NULL;
    }
    st_graph *g = replay(fwd, NULL, map);
    for (int k = 0; g && k < info->nsaved; k++) {
        int v = map[info->saved[k]];
        if (v < 0) {
            st_err(ST_ERR_RUNTIME, "forward_saving: saved value %d is "
                   "undefined", info->saved[k]);
            st_ir_graph_free(g);
            g = NULL;
            break;
        }
        st_ir_mark_output(g, v);
    }
    free(map);
    return g;
}

/* ---------------- copies ---------------- */
st_graph *st_ir_graph_clone(const st_graph *g)
{
    if (!g) {
        st_err(ST_ERR_VALUE, "graph_clone: null graph");
        return NULL;
    }
    st_graph *c = st_ir_graph_new();
    if (!c)
        return NULL;
    int id = c->id;
    *c = *g;
    c->id = id;
    c->values = NULL;
    c->stmts = NULL;
    c->inputs = NULL;
    c->outputs = NULL;
    c->regions = NULL;
    c->nregions = c->cap_regions = 0;
    c->ckpt = NULL;
    c->nckpt = c->cap_ckpt = 0;
    bool ok = true;
    for (int k = 0; ok && k < g->nckpt; k++)
        ok = st_ir_add_checkpoint(c, g->ckpt[2 * k], g->ckpt[2 * k + 1]) == 0;
#define DUP(field, n, cap)                                                        \
    do {                                                                          \
        c->cap = g->n;                                                            \
        if (ok && g->n > 0) {                                                     \
            c->field = malloc(sizeof *g->field * (size_t)g->n);                   \
            if (c->field)                                                         \
                memcpy(c->field, g->field, sizeof *g->field * (size_t)g->n);      \
            else                                                                  \
                ok = false;                                                       \
        }                                                                         \
    } while (0)
    DUP(values, nvalues, cap_values);
    DUP(stmts, nstmts, cap_stmts);
    DUP(inputs, ninputs, cap_inputs);
    DUP(outputs, noutputs, cap_outputs);
#undef DUP
    for (int k = 0; ok && k < g->nregions; k++) {
        st_ir_region r = g->regions[k];
        r.bwd = NULL;
        if (g->regions[k].bwd && !(r.bwd = st_ir_graph_clone(g->regions[k].bwd))) {
            ok = false;
            break;
        }
        ok = st_ir_add_region(c, &r) >= 0;   /* copies in/out/read */
    }
    if (!ok) {
        st_ir_graph_free(c);
        if (st_err_kind() == ST_OK)
            st_err(ST_ERR_MEMORY, "graph_clone: out of memory");
        return NULL;
    }
    return c;
}
