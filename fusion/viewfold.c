/* fusion/viewfold.c - views between elementwise statements fold into index
 * arithmetic, so that fusion's groups go on through them (no kernel ends,
 * and none exists, only to move data). A rewrite of the decomposed graph,
 * run before grouping when fusion is on; the result computes the same
 * values with the same ops (bit for bit; a swapped product multiplies the
 * same pairs, which a gemm may sum in another blocking), only where views
 * sit changes:
 *
 *  - push: a view V (permute, expand, slice, unsqueeze, squeeze, and a
 *    reshape that is not pulled, see below) of
 *    u = ew(a, b, ...), u read by V only,
 *    becomes ew(V'(a), V'(b), ...): the view moves onto the operands
 *    (each first unsqueezed to u's rank, and V adapted to a broadcast
 *    operand: a slice skips a dim it broadcasts along), recursively into
 *    operands that are themselves elementwise results read once. The
 *    views must end on inputs or views' results, where they are strides
 *    of the kernel's loads (never on a result fusion would keep in a
 *    register: the push would then split a group, not join one).
 *    A reshape moves only onto operands of u's very shape, and only
 *    through statements with one operand that is not 0-d (so it holds
 *    at any sizes); a reshape that then lands on a strided view is an
 *    unravel load (unravel.c), one on an input a free view.
 *  - pull: a reshape of an elementwise result that an elementwise
 *    statement reads with scalar other operands, y = ew(reshape(u), s),
 *    becomes reshape(ew(u, s)): computed in u's space (joining u's group),
 *    the reshape applied to the stored result (free: a fresh result is
 *    contiguous), pulled on through further such statements.
 *  - swap: a transpose of the last two dims of a product read only there,
 *    T(a @ b), becomes T(b) @ T(a): the same sums, written in the layout
 *    the transpose gives (a contiguous result instead of a strided view,
 *    which a later reshape, such as attention's heads merge, would copy
 *    element by element). Operands of the product's rank only (no vector
 *    operand). The backward of q @ k^T hands k this form (the gradient
 *    of k^T is q^T G, transposed back).
 *  - perm: a permute of a product read only there that keeps the last
 *    dim last and moves the rows among the batch dims, its result read
 *    only by reshapes and copies, P(a @ b), becomes one matmul statement
 *    written in P's layout (attrs dims = P's; the kernel's output strides
 *    do it): attention's heads merge, [b, h, s, d] -> [b, s, h, d] ->
 *    [b, s, h*d], then reshapes a contiguous result (a view) instead of
 *    copying a strided one, and a copy that only made P contiguous (the
 *    frontend's reshape of a strided tensor) is P itself. Forward (the
 *    context) and backward (dq, dv; dk through the swap: P(T(a @ b)) is
 *    T(b) @ T(a) written in P's layout).
 *
 * Each rewritten statement must infer the dtype and shape the original
 * had; if anything does not (or fails), the graph is left as it was.
 * Inputs and constants keep their order (runtime/eager.c binds by it).
 * Owns: st_fuse_fold_views. */
#include <stdlib.h>
#include <string.h>

#include "fuse_internal.h"

#define MAXCH 24 /* views in one pushed chain */

typedef struct {
    st_op_id op;
    st_attrs a;
} view_t;

typedef struct {
    int n;
    view_t v[MAXCH];
} chain_t;

typedef struct {
    const st_graph *g;
    st_graph *ng;
    int *map;          /* original value -> new value (-1: not yet) */
    int *nusers;       /* original value -> operand slots reading it */
    bool *is_out;
    bool *deferred;    /* original ew value computed only through a push */
    bool *hoisted;     /* original view of an input, emitted first */
    bool *swapped;     /* original product emitted as its transpose's swap,
                          or written permuted (see foldable) */
    bool *reshaped;    /* original value read by reshapes and copies only */
    bool *permfold;    /* original permute result the perm rule computes */
    int *pend;         /* original value -> new value a pending reshape
                          (of attrs pend_attrs) applies to, or -1 */
    st_attrs *pend_attrs;
    /* push_top's queue of leaf views */
    bool leaves;
    int *leafq, nleaf, nq, capq;
    bool failed;
} vctx;

static bool is_ew(const st_stmt *s)
{
    st_op_kind k = st_op(s->op)->kind;
    return (k == ST_OPK_UNARY || k == ST_OPK_BINARY || k == ST_OPK_TERNARY ||
            k == ST_OPK_COPY) &&
           s->nout == 1;
}

static const st_stmt *producer(const st_graph *g, int v)
{
    const st_value *val = &g->values[v];
    return val->kind == ST_VAL_STMT ? &g->stmts[val->producer] : NULL;
}

static bool meta_eq(const st_meta *x, const st_meta *y)
{
    if (x->dtype != y->dtype || x->ndim != y->ndim)
        return false;
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] != y->shape[d])
            return false;
    return true;
}

static bool infer1(st_op_id op, const st_meta *in, const st_attrs *a,
                   st_meta *out)
{
    st_meta o[ST_MAX_OUT];
    int nout = 0;
    if (st_infer(op, in, 1, a, o, &nout) != ST_OK || nout != 1) {
        st_err_clear();
        return false;
    }
    *out = o[0];
    return true;
}

/* Whether permute s transposes the last two dims (and only those). */
static bool last_two_swapped(const st_attrs *a, int n)
{
    if (n < 2 || a->ndims != n || a->dims[n - 2] != n - 1 || a->dims[n - 1] != n - 2)
        return false;
    for (int d = 0; d < n - 2; d++)
        if (a->dims[d] != d)
            return false;
    return true;
}

/* Whether permute s folds into the product that only it reads, both
 * operands of the product's rank: the swap rule (a transpose of the last
 * two dims), or the product written permuted (the "perm" rule: the last
 * dim stays last, the rows move among the batch dims, and only reshapes
 * read the result, which would otherwise copy it: attention's heads
 * merge, [b, h, s, d] -> [b, s, h, d] -> [b, s, h*d]). */
/* A product that only value u's reader reads: u = a @ b itself, read
 * once, operands of u's rank, no output permutation yet. */
static const st_stmt *sole_product(const vctx *c, int u)
{
    const st_graph *g = c->g;
    const st_stmt *p = producer(g, u);
    int n = g->values[u].meta.ndim;
    return p && p->op == ST_OP_MATMUL && p->nin == 2 && p->nout == 1 && p->attrs.ndims == 0 &&
           c->nusers[u] == 1 && !c->is_out[u] && g->values[p->in[0]].meta.ndim == n &&
           g->values[p->in[1]].meta.ndim == n ? p : NULL;
}

/* 0: permute s does not fold; 1: into the product u = s->in[0] (swap, or
 * perm); 2: perm into the swap of the product a transpose u reads
 * (P(T(a @ b)) = (T(b) @ T(a)) written in P's layout: a backward's dk). */
static int foldable(const vctx *c, const st_stmt *s)
{
    const st_graph *g = c->g;
    if (s->op != ST_OP_PERMUTE || s->nout != 1 || s->nin != 1)
        return 0;
    int u = s->in[0], n = g->values[u].meta.ndim;
    const st_attrs *a = &s->attrs;
    bool perm = n >= 3 && a->ndims == n && a->dims[n - 1] == n - 1 && a->dims[n - 2] != n - 2 &&
                c->reshaped[s->out[0]] && !c->is_out[s->out[0]];
    for (int d = 0; perm && d < n; d++)
        perm = a->dims[d] >= 0 && a->dims[d] < n;
    if (sole_product(c, u))
        return last_two_swapped(a, n) || perm ? 1 : 0;
    const st_stmt *t = producer(g, u);
    return perm && t && t->op == ST_OP_PERMUTE && t->nin == 1 && c->nusers[u] == 1 &&
           !c->is_out[u] && last_two_swapped(&t->attrs, n) && sole_product(c, t->in[0]) ? 2 : 0;
}

static bool pushable_op(st_op_id op)
{
    return op == ST_OP_PERMUTE || op == ST_OP_EXPAND || op == ST_OP_SLICE ||
           op == ST_OP_UNSQUEEZE || op == ST_OP_SQUEEZE || op == ST_OP_RESHAPE;
}

static bool has_reshape(const chain_t *ch)
{
    for (int i = 0; i < ch->n; i++)
        if (ch->v[i].op == ST_OP_RESHAPE)
            return true;
    return false;
}

/* The chain to apply to operand of meta am so that, broadcast, it gives
 * chain ch applied to u (meta um): false when there is none. A 0-d
 * operand needs no views (out->n = 0). */
static bool adapt(const chain_t *ch, const st_meta *am, const st_meta *um,
                  chain_t *out)
{
    out->n = 0;
    if (am->ndim == 0)
        return true;
    st_meta ca = *am, cu = *um;
    for (int k = am->ndim; k < um->ndim; k++) {
        if (out->n >= MAXCH)
            return false;
        view_t *w = &out->v[out->n++];
        memset(w, 0, sizeof *w);
        w->op = ST_OP_UNSQUEEZE;
        if (!infer1(ST_OP_UNSQUEEZE, &ca, &w->a, &ca))
            return false;
    }
    for (int i = 0; i < ch->n; i++) {
        view_t w = ch->v[i];
        bool skip = false;
        switch (w.op) {
        case ST_OP_PERMUTE:
        case ST_OP_UNSQUEEZE:
        case ST_OP_EXPAND:
            break;
        case ST_OP_RESHAPE:
            /* only an operand of u's very shape reshapes as u does */
            if (ca.ndim != cu.ndim ||
                memcmp(ca.shape, cu.shape, sizeof(int64_t) * (size_t)cu.ndim))
                return false;
            break;
        case ST_OP_SLICE: {
            int64_t d = w.a.i[0];
            if (d < 0)
                d += cu.ndim;
            if (d < 0 || d >= cu.ndim)
                return false;
            skip = ca.shape[d] != cu.shape[d]; /* broadcast along d */
            break;
        }
        case ST_OP_SQUEEZE: {
            /* squeeze exactly the dims u loses; the operand must not
             * lose another one (a broadcast size-1 dim) */
            bool named[ST_MAX_DIMS] = {false};
            for (int d = 0; d < cu.ndim; d++)
                named[d] = w.a.ndims == 0;
            for (int j = 0; j < w.a.ndims; j++) {
                int64_t d = w.a.dims[j];
                if (d < 0)
                    d += cu.ndim;
                if (d < 0 || d >= cu.ndim)
                    return false;
                named[d] = true;
            }
            st_attrs na;
            memset(&na, 0, sizeof na);
            for (int d = 0; d < cu.ndim; d++) {
                if (!named[d])
                    continue;
                if (cu.shape[d] == 1)
                    na.dims[na.ndims++] = d;
                else if (ca.shape[d] == 1)
                    return false;
            }
            skip = na.ndims == 0;
            w.a = na;
            break;
        }
        default:
            return false;
        }
        if (!infer1(ch->v[i].op, &cu, &ch->v[i].a, &cu))
            return false;
        if (skip)
            continue;
        if (out->n >= MAXCH || !infer1(w.op, &ca, &w.a, &ca))
            return false;
        out->v[out->n++] = w;
    }
    return true;
}

/* A leaf of a push (an operand the views end on): an input, a constant,
 * or a view's result. Never an elementwise or reduction result: it would
 * then be stored for the views to read, where fusion keeps it in a
 * register (the push would split a group instead of joining one). */
static bool leaf_ok(const st_graph *g, int a)
{
    const st_stmt *p = producer(g, a);
    return !p || st_op(p->op)->kind == ST_OPK_VIEW;
}

/* Whether operand a of a pushed statement is computed through the push
 * too: an elementwise result read only there. */
static bool deferrable(const vctx *c, int a)
{
    const st_stmt *p = producer(c->g, a);
    return p && is_ew(p) && c->nusers[a] == 1 && !c->is_out[a];
}

/* Whether operand a is a view (read only there) that the pushed chain
 * composes with: its view then applies before the chain, to its input. */
static bool foldable_view(const vctx *c, int a)
{
    const st_stmt *p = producer(c->g, a);
    return p && st_op(p->op)->kind == ST_OPK_VIEW && pushable_op(p->op) &&
           p->nout == 1 && c->nusers[a] == 1 && !c->is_out[a];
}

/* ch preceded by the view producing a (foldable_view). */
static bool compose(const vctx *c, int a, const chain_t *ch, chain_t *out)
{
    const st_stmt *p = producer(c->g, a);
    if (ch->n + 1 > MAXCH)
        return false;
    out->n = ch->n + 1;
    out->v[0].op = p->op;
    out->v[0].a = p->attrs;
    memcpy(&out->v[1], ch->v, sizeof(view_t) * (size_t)ch->n);
    return true;
}

static bool plan_operand(vctx *c, const chain_t *sub, int a, bool mark);
static bool pullable(vctx *c, int v);

/* Whether chain ch pushes into elementwise statement s: every operand has
 * an adapted chain and ends on leaves (recursively through deferrable
 * operands and views). With mark, records the deferred values. */
static bool plan_push(vctx *c, const chain_t *ch, const st_stmt *s, bool mark)
{
    const st_graph *g = c->g;
    const st_meta *um = &g->values[s->out[0]].meta;
    if (has_reshape(ch)) {
        /* a reshape moves only through a statement with one operand that
         * is not 0-d: u then has that operand's shape at any sizes (with
         * two, one could broadcast in a later call, and its reshape would
         * no longer hold) */
        int n = 0;
        for (int i = 0; i < s->nin; i++)
            n += g->values[s->in[i]].meta.ndim != 0;
        if (n > 1)
            return false;
    }
    for (int i = 0; i < s->nin; i++) {
        int a = s->in[i];
        chain_t sub;
        if (!adapt(ch, &g->values[a].meta, um, &sub))
            return false;
        if (sub.n > 0 && !plan_operand(c, &sub, a, mark))
            return false;
    }
    return true;
}

/* Operand a seen through chain sub: pushed into, composed, or a leaf. */
static bool plan_operand(vctx *c, const chain_t *sub, int a, bool mark)
{
    const st_graph *g = c->g;
    if (deferrable(c, a)) {
        if (!plan_push(c, sub, producer(g, a), mark))
            return false;
    } else if (foldable_view(c, a)) {
        chain_t ch2;
        if (!compose(c, a, sub, &ch2) ||
            !plan_operand(c, &ch2, producer(g, a)->in[0], mark))
            return false;
    } else {
        return leaf_ok(g, a);
    }
    if (mark)
        c->deferred[a] = true;
    return true;
}

/* Whether a, through views read once, is an elementwise result read
 * once (a push from a view of a goes somewhere). */
static bool reaches_ew(const vctx *c, int a)
{
    while (foldable_view(c, a))
        a = producer(c->g, a)->in[0];
    return deferrable(c, a);
}

static int emit_chain(vctx *c, int nv, const chain_t *ch)
{
    for (int i = 0; i < ch->n && nv >= 0; i++) {
        int out[ST_MAX_OUT];
        if (st_ir_add_stmt(c->ng, ch->v[i].op, &nv, 1, &ch->v[i].a, out) < 0)
            return -1;
        nv = out[0];
    }
    return nv;
}

static int materialize(vctx *c, int v);
static int push(vctx *c, const chain_t *ch, const st_stmt *s);

/* Operand a seen through chain sub, as planned by plan_operand. In the
 * leaves phase (c->leaves set) only the leaves' views are emitted (and
 * queued); then the statements, taking the leaves from the queue in the
 * same order. So a push's views all come before its statements, which
 * then follow one another: fusion groups statements whose operands come
 * from earlier groups. */
static int push_operand(vctx *c, const chain_t *sub, int a)
{
    const st_stmt *p = producer(c->g, a);
    if (!c->deferred[a]) {
        if (!c->leaves)
            return c->nq < c->nleaf ? c->leafq[c->nq++] : -1;
        int v = emit_chain(c, materialize(c, a), sub);
        if (v < 0 || c->nleaf >= c->capq)
            return -1;
        c->leafq[c->nleaf++] = v;
        return v;
    }
    if (st_op(p->op)->kind != ST_OPK_VIEW)
        return push(c, sub, p);
    chain_t ch2;
    if (!compose(c, a, sub, &ch2))
        return -1;
    return push_operand(c, &ch2, p->in[0]);
}

/* The push of chain ch into operand a: leaves first, then the
 * statements. */
static int push_top(vctx *c, const chain_t *ch, int a)
{
    c->leaves = true;
    c->nleaf = c->nq = 0;
    if (push_operand(c, ch, a) < 0)
        return -1;
    c->leaves = false;
    return push_operand(c, ch, a);
}

/* Emits chain ch pushed into s (planned by plan_push): its new value (in
 * the leaves phase, any value >= 0 when all went well). */
static int push(vctx *c, const chain_t *ch, const st_stmt *s)
{
    const st_graph *g = c->g;
    const st_meta *um = &g->values[s->out[0]].meta;
    int in[ST_MAX_IN];
    for (int i = 0; i < s->nin; i++) {
        int a = s->in[i];
        chain_t sub;
        if (!adapt(ch, &g->values[a].meta, um, &sub))
            return -1;
        in[i] = sub.n == 0 ? materialize(c, a) : push_operand(c, &sub, a);
        if (in[i] < 0)
            return -1;
    }
    if (c->leaves)
        return 0; /* (a value id, not used) */
    int out[ST_MAX_OUT];
    if (st_ir_add_stmt(c->ng, s->op, in, s->nin, &s->attrs, out) < 0)
        return -1;
    /* what the pushed statement must give: u's dtype, ch's shape */
    st_meta want = *um;
    for (int i = 0; i < ch->n; i++)
        if (!infer1(ch->v[i].op, &want, &ch->v[i].a, &want))
            return -1;
    if (!meta_eq(&c->ng->values[out[0]].meta, &want))
        return -1;
    return out[0];
}

/* The new value of original value v, emitting a pending reshape. */
static int materialize(vctx *c, int v)
{
    if (c->map[v] >= 0 || c->pend[v] < 0)
        return c->map[v];
    int out[ST_MAX_OUT];
    if (st_ir_add_stmt(c->ng, ST_OP_RESHAPE, &c->pend[v], 1, &c->pend_attrs[v],
                       out) < 0)
        return -1;
    c->map[v] = out[0];
    return out[0];
}

/* A reshape whose result is read only by elementwise statements with
 * scalar (0-d) other operands, or by reshapes such as it: pulled. */
static bool pullable(vctx *c, int v)
{
    const st_graph *g = c->g;
    if (c->is_out[v] || c->nusers[v] == 0)
        return false;
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        bool reads = false, others_scalar = true;
        for (int i = 0; i < s->nin; i++) {
            if (s->in[i] == v)
                reads = true;
            else if (g->values[s->in[i]].meta.ndim != 0)
                others_scalar = false;
        }
        if (!reads)
            continue;
        if (s->op == ST_OP_RESHAPE ? !pullable(c, s->out[0])
                                   : !is_ew(s) || !others_scalar)
            return false;
    }
    return true;
}

/* Views of inputs (directly or through views) are emitted first: they
 * depend on nothing else, and a view step placed between two elementwise
 * statements would otherwise keep the second from joining the first's
 * group. */
static void hoist_input_views(vctx *c)
{
    const st_graph *g = c->g;
    for (int si = 0; si < g->nstmts && !c->failed; si++) {
        const st_stmt *s = &g->stmts[si];
        if (st_op(s->op)->kind != ST_OPK_VIEW || s->nout != 1 ||
            c->deferred[s->out[0]])
            continue;
        int u = s->in[0];
        const st_stmt *p = producer(g, u);
        if (p && !c->hoisted[u])
            continue;
        int out[ST_MAX_OUT];
        if (st_ir_add_stmt(c->ng, s->op, &c->map[u], 1, &s->attrs, out) < 0) {
            c->failed = true;
            return;
        }
        c->map[s->out[0]] = out[0];
        c->hoisted[s->out[0]] = true;
    }
}

static void rewrite(vctx *c)
{
    const st_graph *g = c->g;
    hoist_input_views(c);
    for (int si = 0; si < g->nstmts && !c->failed; si++) {
        const st_stmt *s = &g->stmts[si];
        int v = s->out[0];
        if (s->nout == 1 && (c->deferred[v] || c->hoisted[v] || c->swapped[v]))
            continue; /* computed where its view is, or hoisted */
        const st_stmt *p = s->nin > 0 ? producer(g, s->in[0]) : NULL;
        if (p && c->swapped[s->in[0]] && !last_two_swapped(&s->attrs, s->attrs.ndims)) {
            /* P(a @ b): the product written in P's layout; P(T(a @ b)):
             * the swapped product T(b) @ T(a) written so */
            int in[2], out[ST_MAX_OUT];
            const st_stmt *mm = p->op == ST_OP_PERMUTE ? producer(g, p->in[0]) : p;
            for (int i = 0; i < 2 && !c->failed; i++) {
                if (mm != p) {
                    int x = materialize(c, mm->in[1 - i]);
                    c->failed = x < 0 ||
                                st_ir_add_stmt(c->ng, ST_OP_PERMUTE, &x, 1, &p->attrs, out) < 0;
                    in[i] = c->failed ? -1 : out[0];
                } else {
                    in[i] = materialize(c, p->in[i]);
                    c->failed = in[i] < 0;
                }
            }
            c->failed = c->failed || st_ir_add_stmt(c->ng, ST_OP_MATMUL, in, 2, &s->attrs, out) < 0 ||
                        !meta_eq(&c->ng->values[out[0]].meta, &g->values[v].meta);
            c->map[v] = c->failed ? -1 : out[0];
            c->permfold[v] = true;
            continue;
        }
        if (s->op == ST_OP_COPY && s->nin == 1 && s->nout == 1 && c->permfold[s->in[0]] &&
            c->nusers[s->in[0]] == 1 && meta_eq(&g->values[s->in[0]].meta, &g->values[v].meta)) {
            /* the copy that made the permuted product contiguous: it is */
            c->map[v] = c->map[s->in[0]];
            continue;
        }
        if (p && c->swapped[s->in[0]]) {
            /* T(a @ b) = T(b) @ T(a), T this very permute */
            int in[2], out[ST_MAX_OUT];
            for (int i = 0; i < 2 && !c->failed; i++) {
                int x = materialize(c, p->in[1 - i]);
                c->failed = x < 0 || st_ir_add_stmt(c->ng, ST_OP_PERMUTE, &x, 1, &s->attrs, out) < 0;
                in[i] = out[0];
            }
            c->failed = c->failed || st_ir_add_stmt(c->ng, ST_OP_MATMUL, in, 2, &p->attrs, out) < 0 ||
                        !meta_eq(&c->ng->values[out[0]].meta, &g->values[v].meta);
            c->map[v] = c->failed ? -1 : out[0];
            continue;
        }
        if (st_op(s->op)->kind == ST_OPK_VIEW && s->nout == 1 && p &&
            c->deferred[s->in[0]]) {
            chain_t ch = {1, {{s->op, s->attrs}}};
            c->map[v] = push_top(c, &ch, s->in[0]);
            c->failed = c->map[v] < 0;
            continue;
        }
        if (s->op == ST_OP_RESHAPE && p && (is_ew(p) || c->pend[s->in[0]] >= 0) &&
            pullable(c, v)) {
            /* pending: reshape(new value of u), or of u's source when u
             * is itself a pending reshape (same element count) */
            int u = s->in[0];
            c->pend[v] = c->pend[u] >= 0 && c->map[u] < 0 ? c->pend[u] : c->map[u];
            c->pend_attrs[v] = s->attrs;
            c->failed = c->pend[v] < 0;
            continue;
        }
        int in[ST_MAX_IN], pulled = -1;
        if (is_ew(s)) {
            for (int i = 0; i < s->nin; i++)
                if (c->pend[s->in[i]] >= 0 && c->map[s->in[i]] < 0)
                    pulled = s->in[i];
            /* pulled on only when the other operands are 0-d, as the
             * first pull (pullable): where(lt(reshape(u), 0), x, y) with
             * x of u's shape broadcasts the reshaped value, in u's space
             * it would not (the pending reshape is emitted instead) */
            for (int i = 0; i < s->nin && pulled >= 0; i++)
                if (s->in[i] != pulled && g->values[s->in[i]].meta.ndim != 0)
                    pulled = -1;
        }
        for (int i = 0; i < s->nin && !c->failed; i++) {
            int a = s->in[i];
            in[i] = a == pulled ? c->pend[a] : materialize(c, a);
            c->failed = in[i] < 0;
        }
        if (c->failed)
            break;
        int out[ST_MAX_OUT];
        if (st_ir_add_stmt(c->ng, s->op, in, s->nin, &s->attrs, out) < 0) {
            c->failed = true;
            break;
        }
        if (pulled >= 0) {
            /* ew(u-space) then the reshape: same dtype, u's shape */
            const st_meta *nm = &c->ng->values[out[0]].meta;
            const st_meta *src = &c->ng->values[c->pend[pulled]].meta;
            st_meta re;
            if (nm->dtype != g->values[v].meta.dtype || nm->ndim != src->ndim ||
                memcmp(nm->shape, src->shape, sizeof(int64_t) * (size_t)nm->ndim) ||
                !infer1(ST_OP_RESHAPE, nm, &c->pend_attrs[pulled], &re) ||
                !meta_eq(&re, &g->values[v].meta)) {
                c->failed = true; /* and the reshape then gives v */
                break;
            }
            c->pend[v] = out[0];
            c->pend_attrs[v] = c->pend_attrs[pulled];
            continue;
        }
        for (int k = 0; k < s->nout; k++) {
            c->map[s->out[k]] = out[k];
            if (!meta_eq(&c->ng->values[out[k]].meta, &g->values[s->out[k]].meta))
                c->failed = true;
        }
    }
}

st_graph *st_fuse_fold_views(const st_graph *g)
{
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    vctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.map = malloc(sizeof(int) * (size_t)nv);
    c.nusers = calloc((size_t)nv, sizeof(int));
    c.is_out = calloc((size_t)nv, sizeof(bool));
    c.deferred = calloc((size_t)nv, sizeof(bool));
    c.hoisted = calloc((size_t)nv, sizeof(bool));
    c.swapped = calloc((size_t)nv, sizeof(bool));
    c.reshaped = calloc((size_t)nv, sizeof(bool));
    c.permfold = calloc((size_t)nv, sizeof(bool));
    c.pend = malloc(sizeof(int) * (size_t)nv);
    c.pend_attrs = calloc((size_t)nv, sizeof(st_attrs));
    c.capq = 4 * nv + 16;
    c.leafq = malloc(sizeof(int) * (size_t)c.capq);
    c.ng = st_ir_graph_new();
    if (!c.map || !c.nusers || !c.is_out || !c.deferred || !c.hoisted || !c.swapped ||
        !c.reshaped || !c.permfold || !c.pend || !c.pend_attrs || !c.leafq || !c.ng)
        c.failed = true;
    for (int v = 0; v < g->nvalues && !c.failed; v++)
        c.map[v] = c.pend[v] = -1;
    bool any = false;
    bool *other = calloc((size_t)nv, sizeof(bool)); /* read by a non-reshape */
    c.failed |= !other;
    for (int si = 0; si < g->nstmts && !c.failed; si++) {
        const st_stmt *s = &g->stmts[si];
        for (int i = 0; i < s->nin; i++) {
            c.nusers[s->in[i]]++;
            other[s->in[i]] |= s->op != ST_OP_RESHAPE && s->op != ST_OP_COPY;
        }
        any |= st_op(s->op)->kind == ST_OPK_VIEW;
    }
    for (int v = 0; v < g->nvalues && !c.failed; v++)
        c.reshaped[v] = c.nusers[v] > 0 && !other[v];
    free(other);
    for (int i = 0; i < g->noutputs && !c.failed; i++)
        c.is_out[g->outputs[i]] = true;
    /* plan the pushes, latest view first (a view's input is then not yet
     * claimed by an earlier one: each value has one reader) */
    for (int si = g->nstmts - 1; si >= 0 && any && !c.failed; si--) {
        const st_stmt *s = &g->stmts[si];
        int fk = foldable(&c, s);
        if (fk) {
            c.swapped[s->in[0]] = true;
            if (fk == 2) /* the transpose's product too */
                c.swapped[g->stmts[g->values[s->in[0]].producer].in[0]] = true;
            continue;
        }
        if (st_op(s->op)->kind != ST_OPK_VIEW || !pushable_op(s->op) ||
            s->nout != 1 || c.deferred[s->out[0]])
            continue;
        /* a reshape read only with scalars is pulled instead (no index
         * arithmetic at all) */
        if (s->op == ST_OP_RESHAPE && pullable(&c, s->out[0]))
            continue;
        int u = s->in[0];
        chain_t ch = {1, {{s->op, s->attrs}}};
        if (reaches_ew(&c, u) && plan_operand(&c, &ch, u, false))
            plan_operand(&c, &ch, u, true);
    }
    for (int i = 0; i < g->ninputs && !c.failed; i++) {
        const st_value *val = &g->values[g->inputs[i]];
        c.map[g->inputs[i]] = st_ir_add_input(c.ng, &val->meta,
                                              val->kind == ST_VAL_PARAM);
        c.failed = c.map[g->inputs[i]] < 0;
    }
    for (int v = 0; v < g->nvalues && !c.failed; v++) {
        const st_value *val = &g->values[v];
        if (val->kind != ST_VAL_CONST)
            continue;
        c.map[v] = st_ir_add_const(c.ng, val->meta.dtype, val->fconst, val->iconst);
        c.failed = c.map[v] < 0;
    }
    if (any && !c.failed)
        rewrite(&c);
    for (int i = 0; i < g->noutputs && any && !c.failed; i++) {
        int o = materialize(&c, g->outputs[i]);
        if (o < 0)
            c.failed = true;
        else
            st_ir_mark_output(c.ng, o);
    }
    st_graph *res = NULL;
    if (!any || c.failed) {
        /* nothing to fold, or a rewrite that does not hold: g as it is */
        st_err_clear();
        st_ir_graph_free(c.ng);
    } else {
        res = c.ng;
    }
    free(c.map);
    free(c.nusers);
    free(c.is_out);
    free(c.deferred);
    free(c.hoisted);
    free(c.swapped);
    free(c.reshaped);
    free(c.permfold);
    free(c.pend);
    free(c.pend_attrs);
    free(c.leafq);
    return res;
}
