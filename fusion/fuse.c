/* fusion/fuse.c - fusion: groups the statements of a decomposed graph into
 * kernels and builds their kernel IR; owns st_fuse_lower.
 *
 * Shapes are compared structurally, never by size (kernels are reused when
 * sizes change): every dim of every value gets a symbol (inputs' dims
 * fresh ones, size-1 dims made by keepdim/unsqueeze the symbol ONE,
 * broadcasting/matmul/reductions/views propagate them). Two values have
 * "the same shape" when their symbols agree.
 *
 * Grouping is one greedy pass over the statements, in order. A group is:
 *  - EW: elementwise statements (unary, binary, where, cast, copy, and a
 *    creation statement that starts it) whose results all have the group's
 *    shape; operands broadcast through dimmaps.
 *  - RED: a row kernel over a space SS with reduced dims D: elementwise
 *    prologue members (row values, of shape SS), up to ST_K_MAX_REDUCE
 *    reductions over D, epilogue members of shape SS (then the epilogue
 *    runs per point) or of the outer shape (keepdim or not). Each member
 *    value has a frame (the SS dim of each of its dims, -1 for a size-1
 *    dim) and a phase (the reductions it needs).
 *  - MM: a matmul and elementwise statements of its output's shape that
 *    consume it (the epilogue: bias, activation, residual).
 *  - VIEW: a view statement (a runtime step; its input is materialized).
 *  - OPAQUE: lowered alone by lower.c (gather, index_select, embedding,
 *    scatter_add, slice_scatter, reductions fusion cannot frame).
 *  - SLAB: the result of a slab chain (a traced cat or stack, see "slab
 *    chains"): its parts are stored straight into their slices by the
 *    kernels that compute them; the group holds the stores no other
 *    group could take.
 * A statement joins the group of an operand (latest group first), or the
 * latest group as a sibling, when its other operands come from earlier
 * groups (so the order of creation is an order of execution), the knobs
 * allow it and the shapes fit; else it starts a group. A member value is
 * stored when a statement outside the group reads it, or it is a graph
 * output (or unused). A random or creation statement starts a group,
 * or joins its operand's group when that one already holds a creation
 * and, for a random statement, no other random one (one a kernel: the
 * kernel draws one generator offset for its points, as the unfused
 * statement did; each member reads its own attrs, st_kernel.param_stmt).
 * Such a group never becomes a row kernel (the linear index would
 * change). Intermediate float16/bfloat16 results are
 * rounded to their dtype exactly where the unfused program would store
 * them, so fused and unfused results agree bit for bit.
 * A group whose kernel does not fit the kernel IR's limits (buffers,
 * params, stores, a size source) is cut: the statement after the longest
 * prefix of its members that fits (by a count of buffers and stores)
 * starts a group of its own, and the whole graph is grouped again (two
 * sibling batch norms' backward reductions read by one ReLU backward
 * overflowed the 12 buffers: as a kernel per member they were 14
 * kernels, cut they are 2). Past MAX_CUTS cuts, or for a group of one
 * statement, it falls back to one kernel per member (counted:
 * st_fuse_stats_get). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_internal.h"

#define ONE 0 /* symbol of a dim that is always of size 1 */

typedef enum { G_EW, G_RED, G_MM, G_VIEW, G_OPAQUE, G_SLAB } gkind;

typedef struct {
    gkind kind;
    int n;                   /* rank of the space */
    int ss[ST_MAX_DIMS];     /* symbols of the space */
    bool red[ST_MAX_DIMS];   /* RED: reduced dims of the space */
    int nred_dims;
    int nreduce;
    int red_stmt[ST_K_MAX_REDUCE];
    bool no_red;             /* holds a creation/random statement */
    bool has_rand;           /* holds a random statement (one a kernel:
                                the kernel draws one generator offset) */
    int *members;            /* statement indices, in order */
    int nmembers, cap;
    int next[ST_K_MAX_BUFS]; /* distinct external operand values */
    int nnext;
} group;

/* A store of a slab chain (see "slab chains" below): value src into the
 * slice of value target that SLICE_SCATTER statement link replaces. */
typedef struct {
    int src;
    int dst_dim[ST_MAX_DIMS]; /* target's dim of each dim of src */
    int link, target;
    int chain;               /* the chain's last link (its G_SLAB group) */
    int host;                /* group whose kernel stores it; -1: a kernel
                                of its own, in the chain's G_SLAB group */
} slab_store;

typedef struct {
    const st_graph *g;
    const st_fuse_options *opt;
    int *sym;                /* nvalues * ST_MAX_DIMS */
    int nsym;
    int *parent;             /* union-find over symbols */
    int cap_parent;
    int64_t csize[64];       /* symbols of constant sizes */
    int csym[64], nconst;
    int *gid;                /* value -> producing group (-1: none) */
    int *fr;                 /* value -> frame (nvalues * ST_MAX_DIMS) */
    int *phase;              /* value -> phase (RED members) */
    int *nusers;             /* value -> statements reading it */
    bool *is_out;            /* value -> graph output */
    group *groups;
    int ngroups, capg;
    bool *elided;            /* stmt -> no kernel of its own (slab chains) */
    slab_store *slabs;       /* the stores of the slab chains */
    int nslabs;
    bool *cut;               /* stmt -> starts a group (joins none) */
    int ncuts;
    bool regroup;            /* a group was cut: group and emit again */
    int nfused, nfallbacks;  /* of this grouping (st_fuse_stats) */
    char last_fallback[256];
} fctx;

#define MAX_CUTS 64

/* ---------------- symbols ---------------- */

static int *SYM(fctx *c, int v)
{
    return c->sym + (size_t)v * ST_MAX_DIMS;
}

static int fresh(fctx *c)
{
    int s = ++c->nsym;
    if (s >= c->cap_parent) {
        int cap = c->cap_parent ? 2 * c->cap_parent : 256;
        int *np = realloc(c->parent, sizeof(int) * (size_t)cap);
        if (!np)
            return s; /* an unknown symbol: compares equal to nothing */
        c->parent = np;
        c->cap_parent = cap;
    }
    c->parent[s] = s;
    return s;
}

static int find(fctx *c, int s)
{
    if (s <= 0 || s >= c->cap_parent || s > c->nsym)
        return s;
    while (c->parent[s] != s) {
        c->parent[s] = c->parent[c->parent[s]];
        s = c->parent[s];
    }
    return s;
}

static int const_sym(fctx *c, int64_t size)
{
    if (size == 1)
        return ONE;
    for (int i = 0; i < c->nconst; i++)
        if (c->csize[i] == size)
            return c->csym[i];
    int s = fresh(c);
    if (c->nconst < 64) {
        c->csize[c->nconst] = size;
        c->csym[c->nconst++] = s;
    }
    return s;
}

/* Reduced dims of reduction statement s over its input's rank n. */
static int reduced_dims(const st_graph *g, const st_stmt *s, bool *red)
{
    int n = g->values[s->in[0]].meta.ndim, cnt = 0;
    for (int d = 0; d < ST_MAX_DIMS; d++)
        red[d] = false;
    if (s->attrs.ndims == 0) {
        for (int d = 0; d < n; d++)
            red[d] = true;
        return n;
    }
    for (int i = 0; i < s->attrs.ndims; i++) {
        int64_t d = s->attrs.dims[i];
        if (d < 0)
            d += n;
        if (d >= 0 && d < n && !red[d]) {
            red[d] = true;
            cnt++;
        }
    }
    return cnt;
}

/* Symbols of the results of statement si (written into SYM(out)); n is the
 * result's rank per its meta; returns false when the rule did not give
 * n dims (the caller then gives fresh symbols). */
static bool infer_stmt_syms(fctx *c, const st_stmt *s, int *o, int n)
{
    const st_graph *g = c->g;
    const st_op_def *def = st_op(s->op);
    const int *x = s->nin > 0 ? SYM(c, s->in[0]) : NULL;
    int xn = s->nin > 0 ? g->values[s->in[0]].meta.ndim : 0;
    switch (def->kind) {
    case ST_OPK_UNARY:
    case ST_OPK_COPY:
        if (xn != n)
            return false;
        memcpy(o, x, sizeof(int) * (size_t)n);
        return true;
    case ST_OPK_BINARY:
    case ST_OPK_TERNARY:
        /* Two different symbols of one size now are unified: the op's
         * own checks keep them equal (a composite's operands), or the
         * graph is specialized on sizes (compiled graphs guard them). Of
         * different sizes (one is 1 now), the result is a new symbol. */
        for (int d = 0; d < n; d++) {
            int r = ONE;
            int64_t rsz = 1;
            bool mixed = false;
            for (int i = 0; i < s->nin; i++) {
                const st_meta *m = &g->values[s->in[i]].meta;
                int j = d - (n - m->ndim);
                if (j < 0)
                    continue;
                int y = find(c, SYM(c, s->in[i])[j]);
                if (y == ONE)
                    continue;
                if (r == ONE) {
                    r = y;
                    rsz = m->shape[j];
                } else if (r != y) {
                    if (m->shape[j] == rsz && rsz != 1 && r > 0 && y > 0 &&
                        y < c->cap_parent && r < c->cap_parent)
                        c->parent[y] = r;
                    else
                        mixed = true;
                }
            }
            o[d] = mixed ? fresh(c) : r;
        }
        return true;
    case ST_OPK_REDUCE: {
        bool red[ST_MAX_DIMS];
        reduced_dims(g, s, red);
        bool keep = s->attrs.flags & ST_ATTR_KEEPDIM;
        int k = 0;
        for (int d = 0; d < xn; d++) {
            if (!red[d]) {
                if (k >= n)
                    return false;
                o[k++] = x[d];
            } else if (keep) {
                if (k >= n)
                    return false;
                o[k++] = ONE;
            }
        }
        return k == n;
    }
    case ST_OPK_MATMUL: {
        const int *y = SYM(c, s->in[1]);
        int yn = g->values[s->in[1]].meta.ndim;
        if (xn < 2 || yn < 2 || n < 2)
            return false;
        int nb = n - 2;
        for (int d = 0; d < nb; d++) {
            int ja = d - (nb - (xn - 2)), jb = d - (nb - (yn - 2));
            int a = ja >= 0 ? find(c, x[ja]) : ONE;
            int b = jb >= 0 ? find(c, y[jb]) : ONE;
            o[d] = a == ONE ? b : (b == ONE || a == b) ? a : fresh(c);
        }
        o[nb] = x[xn - 2];
        o[nb + 1] = y[yn - 1];
        return true;
    }
    case ST_OPK_CREATE:
    case ST_OPK_RANDOM:
        if (s->nin >= 1) {
            if (xn != n)
                return false;
            memcpy(o, x, sizeof(int) * (size_t)n);
            return true;
        }
        for (int d = 0; d < n; d++)
            o[d] = const_sym(c, g->values[s->out[0]].meta.shape[d]);
        return true;
    case ST_OPK_VIEW:
        switch (s->op) {
        case ST_OP_PERMUTE:
            if (xn != n)
                return false;
            for (int d = 0; d < n; d++) {
                int64_t p = s->attrs.dims[d];
                if (p < 0)
                    p += n;
                if (p < 0 || p >= n)
                    return false;
                o[d] = x[p];
            }
            return true;
        case ST_OP_EXPAND:
            for (int d = 0; d < n; d++) {
                int j = d - (n - xn);
                int64_t t = s->attrs.dims[d];
                if (j >= 0 &&
                    (t == -1 || g->values[s->in[0]].meta.shape[j] == t))
                    o[d] = x[j];
                else
                    o[d] = const_sym(c, g->values[s->out[0]].meta.shape[d]);
            }
            return true;
        case ST_OP_UNSQUEEZE: {
            int64_t p = s->attrs.i[0];
            if (p < 0)
                p += xn + 1;
            if (p < 0 || p > xn || n != xn + 1)
                return false;
            for (int d = 0, j = 0; d < n; d++)
                o[d] = d == p ? ONE : x[j++];
            return true;
        }
        case ST_OP_SQUEEZE: {
            const st_meta *im = &g->values[s->in[0]].meta;
            int k = 0;
            for (int d = 0; d < xn; d++) {
                bool named = s->attrs.ndims == 0;
                for (int i = 0; i < s->attrs.ndims; i++) {
                    int64_t q = s->attrs.dims[i];
                    if (q < 0)
                        q += xn;
                    named = named || q == d;
                }
                if (named && im->shape[d] == 1)
                    continue;
                if (k >= n)
                    return false;
                o[k++] = x[d];
            }
            return k == n;
        }
        case ST_OP_RESHAPE:
            for (int d = 0; d < n; d++)
                o[d] = (d < s->attrs.ndims && s->attrs.dims[d] >= 0)
                           ? const_sym(c, s->attrs.dims[d])
                           : fresh(c);
            return true;
        default:
            return false;
        }
    case ST_OPK_GATHER:
        if (s->op == ST_OP_GATHER) {
            if (g->values[s->in[1]].meta.ndim != n)
                return false;
            memcpy(o, SYM(c, s->in[1]), sizeof(int) * (size_t)n);
            return true;
        }
        if (st_fuse_is_scatter(s)) {
            if (xn != n)
                return false;
            memcpy(o, x, sizeof(int) * (size_t)n);
            return true;
        }
        return false;
    default:
        return false;
    }
}

static void infer_syms(fctx *c)
{
    const st_graph *g = c->g;
    for (int v = 0; v < g->nvalues; v++) {
        int *o = SYM(c, v);
        for (int d = 0; d < ST_MAX_DIMS; d++)
            o[d] = d < g->values[v].meta.ndim ? fresh(c) : ONE;
    }
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        int v = s->out[0];
        int n = g->values[v].meta.ndim;
        int o[ST_MAX_DIMS];
        if (s->nout == 1 && infer_stmt_syms(c, s, o, n))
            memcpy(SYM(c, v), o, sizeof(int) * (size_t)n);
    }
    for (int v = 0; v < g->nvalues; v++)
        for (int d = 0; d < ST_MAX_DIMS; d++)
            SYM(c, v)[d] = find(c, SYM(c, v)[d]);
}

/* ---------------- grouping ---------------- */

static group *new_group(fctx *c, gkind kind)
{
    if (c->ngroups == c->capg) {
        int cap = c->capg ? 2 * c->capg : 16;
        group *ng = realloc(c->groups, sizeof *ng * (size_t)cap);
        if (!ng)
            return NULL;
        c->groups = ng;
        c->capg = cap;
    }
    group *gr = &c->groups[c->ngroups++];
    memset(gr, 0, sizeof *gr);
    gr->kind = kind;
    return gr;
}

static bool add_member(fctx *c, int gi, int si)
{
    group *gr = &c->groups[gi];
    if (gr->nmembers == gr->cap) {
        int cap = gr->cap ? 2 * gr->cap : 8;
        int *m = realloc(gr->members, sizeof(int) * (size_t)cap);
        if (!m)
            return false;
        gr->members = m;
        gr->cap = cap;
    }
    gr->members[gr->nmembers++] = si;
    const st_stmt *s = &c->g->stmts[si];
    for (int k = 0; k < s->nout; k++)
        c->gid[s->out[k]] = gi;
    for (int i = 0; i < s->nin; i++) {
        int u = s->in[i];
        if (c->gid[u] == gi || c->g->values[u].kind == ST_VAL_CONST)
            continue;
        bool seen = false;
        for (int j = 0; j < gr->nnext; j++)
            seen = seen || gr->next[j] == u;
        if (!seen && gr->nnext < ST_K_MAX_BUFS)
            gr->next[gr->nnext++] = u;
    }
    return true;
}

static int *FR(fctx *c, int v)
{
    return c->fr + (size_t)v * ST_MAX_DIMS;
}

static bool room(const fctx *c, const group *gr)
{
    return c->opt->max_fused_ops <= 0 || gr->nmembers < c->opt->max_fused_ops;
}

/* External operands of s (not produced by group gi) come from earlier
 * groups, and the group keeps room for them in its buffers. */
static bool operands_before(const fctx *c, int gi, const st_stmt *s)
{
    const group *gr = &c->groups[gi];
    int extra = 0;
    for (int i = 0; i < s->nin; i++) {
        int u = s->in[i];
        if (c->gid[u] == gi || c->g->values[u].kind == ST_VAL_CONST)
            continue;
        if (c->gid[u] > gi)
            return false;
        bool seen = false;
        for (int j = 0; j < gr->nnext; j++)
            seen = seen || gr->next[j] == u;
        extra += !seen;
    }
    /* A and B, the external loads, and one store at least */
    int base = gr->kind == G_MM ? 2 : 0;
    return base + gr->nnext + extra + 1 <= ST_K_MAX_BUFS;
}

static bool syms_eq(const int *a, const int *b, int n)
{
    for (int d = 0; d < n; d++)
        if (a[d] != b[d])
            return false;
    return true;
}

/* The frame of a value of symbols o (rank on) in RED group gr: the SS dim
 * of each dim (-1: a size-1 dim); false if it has none. */
static bool red_frame(const group *gr, const int *o, int on, int *fr)
{
    int n = gr->n;
    if (on == n && syms_eq(o, gr->ss, n)) {
        for (int d = 0; d < n; d++)
            fr[d] = d;
        return true;
    }
    if (on == n) {
        for (int d = 0; d < n; d++) {
            if (gr->red[d] ? o[d] != ONE : o[d] != gr->ss[d])
                return false;
            fr[d] = gr->red[d] ? -1 : d;
        }
        return true;
    }
    if (on == n - gr->nred_dims && gr->nred_dims > 0) {
        for (int d = 0, j = 0; d < n; d++) {
            if (gr->red[d])
                continue;
            if (o[j] != gr->ss[d])
                return false;
            fr[j++] = d;
        }
        return true;
    }
    return false;
}

static bool is_row_frame(const int *fr, int m, int n)
{
    if (m != n)
        return false;
    for (int d = 0; d < n; d++)
        if (fr[d] != d)
            return false;
    return true;
}

static bool is_ew_stmt(const st_stmt *s)
{
    st_op_kind k = st_op(s->op)->kind;
    return (k == ST_OPK_UNARY || k == ST_OPK_BINARY || k == ST_OPK_TERNARY ||
            k == ST_OPK_COPY) && s->nout == 1;
}

static void set_identity_frame(fctx *c, int v, int n)
{
    for (int d = 0; d < ST_MAX_DIMS; d++)
        FR(c, v)[d] = d < n ? d : -1;
    c->phase[v] = 0;
}

/* Tries to add elementwise statement si to group gi. */
static bool try_join_ew(fctx *c, int gi, int si, bool sibling)
{
    const st_graph *g = c->g;
    const st_stmt *s = &g->stmts[si];
    group *gr = &c->groups[gi];
    int v = s->out[0];
    const int *o = SYM(c, v);
    int on = g->values[v].meta.ndim;
    if (c->cut[si] || !room(c, gr) || !operands_before(c, gi, s))
        return false;
    switch (gr->kind) {
    case G_EW:
        if (on != gr->n || !syms_eq(o, gr->ss, on))
            return false;
        set_identity_frame(c, v, on);
        break;
    case G_MM:
        /* a product written permuted (viewfold's perm rule) has its
         * result's dims in another order than the kernel's iteration: no
         * epilogue (its frame would not be the identity) */
        if (sibling || !c->opt->fuse_matmul_epilogue || on != gr->n ||
            !syms_eq(o, gr->ss, on) || g->stmts[gr->members[0]].attrs.ndims > 0)
            return false;
        set_identity_frame(c, v, on);
        break;
    case G_RED: {
        if (!c->opt->fuse_reductions)
            return false;
        int fr[ST_MAX_DIMS];
        if (!red_frame(gr, o, on, fr))
            return false;
        if (sibling && !is_row_frame(fr, on, gr->n))
            return false;
        int ph = 0;
        for (int i = 0; i < s->nin; i++) {
            int u = s->in[i];
            if (c->gid[u] != gi)
                continue;
            int m = g->values[u].meta.ndim;
            if (m > on)
                return false;
            for (int j = 0; j < m; j++) {
                int f = FR(c, u)[j];
                if (f >= 0 && f != fr[on - m + j])
                    return false;
            }
            if (c->phase[u] > ph)
                ph = c->phase[u];
        }
        memcpy(FR(c, v), fr, sizeof fr);
        c->phase[v] = ph;
        break;
    }
    default:
        return false;
    }
    return add_member(c, gi, si);
}

/* Reduction si into group gi (an EW group becomes a RED group). */
static bool try_join_reduce(fctx *c, int gi, int si)
{
    const st_graph *g = c->g;
    const st_stmt *s = &g->stmts[si];
    group *gr = &c->groups[gi];
    int x = s->in[0], v = s->out[0];
    int n = g->values[x].meta.ndim;
    if (c->cut[si] || !c->opt->fuse_reductions || !room(c, gr) || c->gid[x] != gi)
        return false;
    bool red[ST_MAX_DIMS];
    int nrd = reduced_dims(g, s, red);
    if (gr->kind == G_EW) {
        if (gr->no_red || n != gr->n || !syms_eq(SYM(c, x), gr->ss, n))
            return false;
    } else if (gr->kind == G_RED) {
        if (gr->nreduce >= ST_K_MAX_REDUCE || n != gr->n ||
            !is_row_frame(FR(c, x), n, n))
            return false;
        for (int d = 0; d < n; d++)
            if (red[d] != gr->red[d])
                return false;
    } else {
        return false;
    }
    group t = *gr;
    t.kind = G_RED;
    memcpy(t.red, red, sizeof red);
    t.nred_dims = nrd;
    int fr[ST_MAX_DIMS];
    if (!red_frame(&t, SYM(c, v), g->values[v].meta.ndim, fr))
        return false;
    if (gr->kind == G_EW) { /* its members become row values, phase 0 */
        for (int i = 0; i < gr->nmembers; i++)
            set_identity_frame(c, g->stmts[gr->members[i]].out[0], n);
    }
    t.red_stmt[t.nreduce++] = si;
    *gr = t;
    memcpy(FR(c, v), fr, sizeof fr);
    c->phase[v] = gr->nreduce;
    return add_member(c, gi, si);
}

/* A new RED group for reduction si reading an external input. */
static bool new_reduce_group(fctx *c, int si)
{
    const st_graph *g = c->g;
    const st_stmt *s = &g->stmts[si];
    int x = s->in[0], v = s->out[0];
    group t;
    memset(&t, 0, sizeof t);
    t.kind = G_RED;
    t.n = g->values[x].meta.ndim;
    memcpy(t.ss, SYM(c, x), sizeof t.ss);
    t.nred_dims = reduced_dims(g, s, t.red);
    int fr[ST_MAX_DIMS];
    if (!red_frame(&t, SYM(c, v), g->values[v].meta.ndim, fr))
        return false;
    group *gr = new_group(c, G_RED);
    if (!gr)
        return false;
    *gr = t;
    gr->red_stmt[gr->nreduce++] = si;
    memcpy(FR(c, v), fr, sizeof fr);
    c->phase[v] = 1;
    return add_member(c, c->ngroups - 1, si);
}

static st_status start_group(fctx *c, gkind kind, int si)
{
    const st_graph *g = c->g;
    const st_stmt *s = &g->stmts[si];
    group *gr = new_group(c, kind);
    if (!gr)
        return st_err(ST_ERR_MEMORY, "fuse: out of memory");
    int v = s->out[0];
    gr->n = g->values[v].meta.ndim;
    memcpy(gr->ss, SYM(c, v), sizeof gr->ss);
    st_op_kind ok = st_op(s->op)->kind;
    gr->no_red = ok == ST_OPK_CREATE || ok == ST_OPK_RANDOM;
    gr->has_rand = ok == ST_OPK_RANDOM;
    set_identity_frame(c, v, gr->n);
    if (!add_member(c, c->ngroups - 1, si))
        return st_err(ST_ERR_MEMORY, "fuse: out of memory");
    return ST_OK;
}

/* ---------------- slab chains (cat, stack) ----------------
 * cat and stack write each part into a slice of a fresh tensor; traced,
 * that is a chain Z = full(...), v1 = slice_scatter(Z, c0, slice 0), ...,
 * R = slice_scatter(v_{n-1}, c_{n-1}, slice n-1), each c_j usually a copy
 * of an unsqueeze of the part. When Z and every v_j are read by the next
 * link only (and are no graph outputs), the slices (one dim, step 1) do
 * not overlap and together cover Z, nothing reads Z's fill or a partial
 * v_j: R is n stores, each part written once into its slice of R. The
 * chain's statements get no kernels (elided); a store goes into the
 * kernel of the group that computes its part (copies and unsqueezes
 * looked through: a norm's reduction writes its result straight into its
 * element of the stacked vector), else into a kernel of its own (a part
 * that is a graph input, a view, a product). R is bound when its first
 * store runs (the executor allocates an unbound output); a G_SLAB group
 * in the last link's place gives R to its readers, which therefore come
 * after every store. */

typedef struct {
    int link;
    int64_t start, len;
} slab_part;

static int by_start(const void *a, const void *b)
{
    const slab_part *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static bool single_use(const fctx *c, int v)
{
    return c->g->values[v].kind == ST_VAL_STMT && c->nusers[v] == 1 &&
           !c->is_out[v];
}

static st_status add_slab(fctx *c, const slab_store *ss)
{
    slab_store *n = realloc(c->slabs, sizeof *n * (size_t)(c->nslabs + 1));
    if (!n)
        return st_err(ST_ERR_MEMORY, "fuse: out of memory");
    c->slabs = n;
    c->slabs[c->nslabs++] = *ss;
    return ST_OK;
}

/* The chain whose last link is statement last, if it is one. */
static st_status slab_chain(fctx *c, int last, bool *claimed)
{
    const st_graph *g = c->g;
    int R = g->stmts[last].out[0];
    const st_meta *rm = &g->values[R].meta;
    int nl = 0, cap = 16;
    slab_part *parts = malloc(sizeof *parts * (size_t)cap);
    if (!parts)
        return st_err(ST_ERR_MEMORY, "fuse: out of memory");
    int64_t dim = -1;
    int si = last, root = -1;
    bool ok = rm->ndim > 0;
    while (ok) {
        const st_stmt *s = &g->stmts[si];
        claimed[si] = true;
        int64_t d = s->attrs.i[0] < 0 ? s->attrs.i[0] + rm->ndim : s->attrs.i[0];
        int64_t start = s->attrs.i[1], stop = s->attrs.i[2];
        if (s->attrs.i[3] != 1 || d < 0 || d >= rm->ndim || (dim >= 0 && d != dim)) {
            ok = false;
            break;
        }
        dim = d;
        int64_t len = st_slice_bounds(rm->shape[d], &start, &stop, 1);
        if (nl == cap) {
            slab_part *np = realloc(parts, sizeof *parts * (size_t)(cap *= 2));
            if (!np) {
                free(parts);
                return st_err(ST_ERR_MEMORY, "fuse: out of memory");
            }
            parts = np;
        }
        parts[nl++] = (slab_part){si, start, len};
        int b = s->in[0];
        if (!single_use(c, b)) {
            ok = false;
            break;
        }
        const st_stmt *p = &g->stmts[g->values[b].producer];
        if (p->op == ST_OP_SLICE_SCATTER && p->nin == 2) {
            si = g->values[b].producer;
            continue;
        }
        if (p->op == ST_OP_FULL)
            root = g->values[b].producer;
        else
            ok = false;
        break;
    }
    /* the slices tile R along dim */
    if (ok) {
        qsort(parts, (size_t)nl, sizeof *parts, by_start);
        int64_t at = 0;
        for (int i = 0; i < nl && ok; i++) {
            if (parts[i].len == 0)
                continue;
            ok = parts[i].start == at;
            at += parts[i].len;
        }
        ok = ok && at == rm->shape[dim] && at > 0;
    }
    st_status st = ST_OK;
    for (int i = 0; ok && i < nl && st == ST_OK; i++) {
        const st_stmt *s = &g->stmts[parts[i].link];
        c->elided[parts[i].link] = true;
        if (parts[i].len == 0)
            continue;
        /* the part: copies and unsqueezes read by this link only are
         * looked through (and elided) */
        slab_store ss = {.link = parts[i].link, .target = R, .chain = last,
                         .host = -1};
        int v = s->in[1];
        for (int d = 0; d < ST_MAX_DIMS; d++)
            ss.dst_dim[d] = d;
        while (single_use(c, v)) {
            int pi = g->values[v].producer;
            const st_stmt *p = &g->stmts[pi];
            int u = p->nin >= 1 ? p->in[0] : -1;
            if (u < 0 || g->values[u].kind == ST_VAL_CONST ||
                g->values[u].meta.dtype != g->values[v].meta.dtype)
                break;
            if (p->op == ST_OP_UNSQUEEZE) {
                int un = g->values[u].meta.ndim;
                int64_t q = p->attrs.i[0] < 0 ? p->attrs.i[0] + un + 1 : p->attrs.i[0];
                if (q < 0 || q > un)
                    break;
                for (int j = 0; j < un; j++)
                    ss.dst_dim[j] = ss.dst_dim[j < q ? j : j + 1];
                for (int j = un; j < ST_MAX_DIMS; j++)
                    ss.dst_dim[j] = -1;
            } else if (p->op != ST_OP_COPY) {
                break;
            }
            c->elided[pi] = true;
            v = u;
        }
        ss.src = v;
        st = add_slab(c, &ss);
    }
    if (ok && st == ST_OK)
        c->elided[root] = true;
    free(parts);
    return st;
}

static st_status find_slab_chains(fctx *c)
{
    const st_graph *g = c->g;
    bool *claimed = calloc((size_t)(g->nstmts > 0 ? g->nstmts : 1), sizeof *claimed);
    if (!claimed)
        return st_err(ST_ERR_MEMORY, "fuse: out of memory");
    st_status st = ST_OK;
    /* from the end: a link not claimed yet is the last of its chain */
    for (int si = g->nstmts - 1; si >= 0 && st == ST_OK; si--)
        if (g->stmts[si].op == ST_OP_SLICE_SCATTER && g->stmts[si].nin == 2 &&
            !claimed[si])
            st = slab_chain(c, si, claimed);
    free(claimed);
    return st;
}

/* Whether slab store ss, hosted by row group gr, would cut the rows of its
 * kernel: its slice is part of a dim that the group reduces together with
 * the dim before it (the two merge into one row of the kernel, as batch
 * norm's H and W), and the slice leaves out some of that dim. The
 * interior of a padding (the next convolution's input, after a batch
 * norm and relu) is such a slice: rows of W in rows of W + 2, which kept
 * the norm's H and W apart: its reduction ran 2-5x slower than the same
 * kernel with the store in a kernel of its own, a plain copy
 * (bench/micro/resnet_step.py). A slice of a dim that is not reduced (a
 * cat along a layer norm's last dim, stacked norms) is hosted as before. */
static bool slab_cuts_rows(fctx *c, const group *gr, const slab_store *ss)
{
    const st_stmt *s = &c->g->stmts[ss->link];
    const st_meta *rm = &c->g->values[ss->target].meta;
    const st_meta *vm = &c->g->values[ss->src].meta;
    int64_t d = s->attrs.i[0] < 0 ? s->attrs.i[0] + rm->ndim : s->attrs.i[0];
    int64_t start = s->attrs.i[1], stop = s->attrs.i[2];
    if (d < 0 || d >= rm->ndim ||
        st_slice_bounds(rm->shape[d], &start, &stop, 1) == rm->shape[d])
        return false;
    const int *fr = FR(c, ss->src);
    for (int j = 1; j < vm->ndim && j < ST_MAX_DIMS; j++) {
        if (ss->dst_dim[j] != d)
            continue;
        int a = fr[j - 1], b = fr[j];
        return a >= 0 && b >= 0 && a < gr->n && b < gr->n && gr->red[a] && gr->red[b];
    }
    return false;
}

/* After grouping: a store goes into the kernel of the group that computes
 * its part when that is an elementwise group, or a row group whose rows it
 * does not cut (slab_cuts_rows). */
static void host_slabs(fctx *c)
{
    for (int i = 0; i < c->nslabs; i++) {
        slab_store *ss = &c->slabs[i];
        int gi = c->gid[ss->src];
        ss->host = -1;
        if (gi >= 0 && c->g->values[ss->src].kind == ST_VAL_STMT &&
            (c->groups[gi].kind == G_EW ||
             (c->groups[gi].kind == G_RED && !slab_cuts_rows(c, &c->groups[gi], ss))))
            ss->host = gi;
    }
}

static bool has_slabs(const fctx *c, int gi)
{
    for (int i = 0; i < c->nslabs; i++)
        if (c->slabs[i].host == gi)
            return true;
    return false;
}

/* A 0-d full() without operand (a scalar a composite made: norm's 0 and
 * 1 in its where()s) joins the latest group when every statement reading
 * it reads otherwise only that group's values and constants: the readers
 * can then join that group too (as a group of its own it split norm's
 * epilogue into three kernels). */
static bool join_scalar_full(fctx *c, int si)
{
    const st_graph *g = c->g;
    const st_stmt *s = &g->stmts[si];
    int v = s->out[0], gi = c->ngroups - 1;
    if (s->op != ST_OP_FULL || s->nin != 0 || s->nout != 1 || c->cut[si] ||
        g->values[v].meta.ndim != 0 || gi < 0 || c->is_out[v] ||
        c->nusers[v] == 0)
        return false;
    const group *gr = &c->groups[gi];
    if ((gr->kind != G_EW && gr->kind != G_RED) || !room(c, gr) || gr->nmembers == 0)
        return false;
    /* a group iterating over no element (-x[3:]) never stores the scalar
     * for readers outside it (expand(full) written into another tensor) */
    const st_meta *gm = &g->values[g->stmts[gr->members[0]].out[0]].meta;
    for (int d = 0; d < gm->ndim; d++)
        if (gm->shape[d] == 0)
            return false;
    for (int ri = si + 1; ri < g->nstmts; ri++) {
        const st_stmt *r = &g->stmts[ri];
        bool reads = false;
        for (int i = 0; i < r->nin; i++)
            reads |= r->in[i] == v;
        if (!reads)
            continue;
        if (c->elided[ri])
            return false;
        for (int i = 0; i < r->nin; i++) {
            int u = r->in[i];
            if (u != v && g->values[u].kind != ST_VAL_CONST && c->gid[u] != gi)
                return false;
        }
    }
    set_identity_frame(c, v, 0);
    return add_member(c, gi, si);
}

static st_status group_stmts(fctx *c)
{
    const st_graph *g = c->g;
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        st_op_kind ok = st_op(s->op)->kind;
        if (c->elided[si]) {
            /* the last link of a slab chain: R's group (no kernel of
             * its own; the chain's stores that no group took) */
            bool last = false;
            for (int i = 0; i < c->nslabs && !last; i++)
                last = c->slabs[i].chain == si;
            if (s->op == ST_OP_SLICE_SCATTER && last &&
                start_group(c, G_SLAB, si) != ST_OK)
                return st_err_kind();
            continue;
        }
        if (ok == ST_OPK_VIEW) {
            if (start_group(c, G_VIEW, si) != ST_OK)
                return st_err_kind();
            continue;
        }
        if (ok == ST_OPK_MATMUL && s->nout == 1 &&
            g->values[s->in[0]].meta.ndim >= 2 &&
            g->values[s->in[1]].meta.ndim >= 2) {
            if (start_group(c, G_MM, si) != ST_OK)
                return st_err_kind();
            continue;
        }
        if (ok == ST_OPK_CREATE || ok == ST_OPK_RANDOM) {
            /* shaped like its operand: it joins the operand's group when
             * that group already holds a creation (takes no reduction
             * anyway) and, for a random one, no other random statement.
             * A dropout of ones, where(rand(ones) >= p, ones * s, 0),
             * is then one kernel; as a group of its own the rand left the
             * ones and their scaled copy behind, written out full size */
            int gx = s->nin >= 1 ? c->gid[s->in[0]] : -1;
            if (gx >= 0 && c->groups[gx].kind == G_EW && c->groups[gx].no_red &&
                !(ok == ST_OPK_RANDOM && c->groups[gx].has_rand) &&
                try_join_ew(c, gx, si, false)) {
                c->groups[gx].has_rand |= ok == ST_OPK_RANDOM;
                continue;
            }
            if (join_scalar_full(c, si))
                continue;
            if (start_group(c, G_EW, si) != ST_OK)
                return st_err_kind();
            continue;
        }
        if (ok == ST_OPK_REDUCE && s->nout == 1) {
            int gx = c->gid[s->in[0]];
            if (gx >= 0 && try_join_reduce(c, gx, si))
                continue;
            if (new_reduce_group(c, si))
                continue;
            if (st_err_kind() == ST_ERR_MEMORY)
                return ST_ERR_MEMORY;
        } else if (is_ew_stmt(s)) {
            /* the operands' groups, latest first, then the latest group */
            int cand[ST_MAX_IN], nc = 0;
            for (int i = 0; i < s->nin; i++) {
                int gx = c->gid[s->in[i]];
                if (gx < 0)
                    continue;
                int at = nc;
                for (int j = 0; j < nc; j++)
                    if (cand[j] == gx)
                        at = -1;
                if (at < 0)
                    continue;
                while (at > 0 && cand[at - 1] < gx) {
                    cand[at] = cand[at - 1];
                    at--;
                }
                cand[at] = gx;
                nc++;
            }
            bool done = false;
            for (int j = 0; j < nc && !done; j++)
                done = try_join_ew(c, cand[j], si, false);
            if (!done && nc == 0 && c->ngroups > 0)
                done = try_join_ew(c, c->ngroups - 1, si, true);
            if (!done && start_group(c, G_EW, si) != ST_OK)
                return st_err_kind();
            continue;
        }
        if (start_group(c, G_OPAQUE, si) != ST_OK)
            return st_err_kind();
    }
    return ST_OK;
}

/* ---------------- kernel building ---------------- */

typedef struct {
    fctx *c;
    int gi;
    st_kernel *k;
    int perm[ST_MAX_DIMS];   /* iteration dim -> SS dim (-1: K of MM) */
    int *memo;               /* (value, phase) -> node, -1 none */
    int nphase;
    int phase;               /* phase being emitted */
} kbuild;

static bool is_stored(const fctx *c, int gi, int v)
{
    if (c->is_out[v] || c->nusers[v] == 0)
        return true;
    /* a slab store in a kernel of its own reads it */
    for (int i = 0; i < c->nslabs; i++)
        if (c->slabs[i].src == v && c->slabs[i].host != gi)
            return true;
    const st_graph *g = c->g;
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        if (c->elided[si])
            continue;
        for (int i = 0; i < s->nin; i++)
            if (s->in[i] == v && c->gid[s->out[0]] != gi)
                return true;
    }
    return false;
}

/* dimmap for a value of rank m read (or written) with frame cfr (rank cm)
 * right-aligned. */
static void frame_dimmap(const kbuild *b, int m, const int *cfr, int cm,
                         int *dm)
{
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = -1;
    for (int it = 0; it < b->k->rank; it++) {
        int sd = b->perm[it];
        if (sd < 0)
            continue;
        for (int i = 0; i < cm; i++)
            if (cfr[i] == sd) {
                int j = i - (cm - m);
                dm[it] = j >= 0 ? j : -1;
            }
    }
}

static int find_buf(st_kernel *k, int v, bool out, const int *dm)
{
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i].value == v && k->bufs[i].is_out == out &&
            !memcmp(k->bufs[i].dimmap, dm, sizeof(int) * ST_MAX_DIMS))
            return i;
    if (k->nbufs >= ST_K_MAX_BUFS) {
        st_err(ST_ERR_RUNTIME, "fuse: kernel %s needs more than %d buffers",
               k->name, ST_K_MAX_BUFS);
        return -1;
    }
    return st_kernel_add_buf(k, v, 0, out, dm);
}

static int add_node(st_kernel *k, st_knode n)
{
    return st_kernel_node(k, &n);
}

/* Rounds a float16/bfloat16 node to its dtype (what a store would do). */
static int round_low(st_kernel *k, int r)
{
    if (r < 0)
        return -1;
    st_dtype dt = k->nodes[r].dtype;
    if (dt != ST_FLOAT16 && dt != ST_BFLOAT16)
        return r;
    st_knode_kind kk = k->nodes[r].kind;
    if (kk == ST_KN_LOAD || kk == ST_KN_CAST)
        return r;
    st_knode n = st_fuse_node0(ST_KN_CAST, dt);
    n.a = r;
    return add_node(k, n);
}

static int emit(kbuild *b, int v, const int *cfr, int cm);

static int emit_load(kbuild *b, int v, const int *cfr, int cm)
{
    const st_graph *g = b->c->g;
    st_kernel *k = b->k;
    const st_value *val = &g->values[v];
    if (val->kind == ST_VAL_CONST) {
        int p = -1;
        for (int i = 0; i < k->nparams; i++)
            if (k->param_value[i] == v)
                p = i;
        if (p < 0 && (p = st_fuse_add_param(k, v, val->meta.dtype)) < 0)
            return -1;
        st_knode n = st_fuse_node0(ST_KN_PARAM, k->param_dtype[p]);
        n.buf = p;
        return add_node(k, n);
    }
    int dm[ST_MAX_DIMS];
    frame_dimmap(b, val->meta.ndim, cfr, cm, dm);
    int bi = find_buf(k, v, false, dm);
    if (bi < 0)
        return -1;
    k->bufs[bi].dtype = val->meta.dtype;
    st_knode n = st_fuse_node0(ST_KN_LOAD, val->meta.dtype);
    n.buf = bi;
    return add_node(k, n);
}

static int reduce_index(const group *gr, int si)
{
    for (int r = 0; r < gr->nreduce; r++)
        if (gr->red_stmt[r] == si)
            return r;
    return -1;
}

static int emit_member(kbuild *b, int v)
{
    fctx *c = b->c;
    const st_graph *g = c->g;
    const group *gr = &c->groups[b->gi];
    st_kernel *k = b->k;
    int si = g->values[v].producer;
    const st_stmt *s = &g->stmts[si];
    st_op_kind ok = st_op(s->op)->kind;
    st_dtype odt = g->values[v].meta.dtype;
    int m = g->values[v].meta.ndim;
    if (ok == ST_OPK_REDUCE || ok == ST_OPK_MATMUL) {
        st_dtype rdt = odt;
        st_knode n = st_fuse_node0(ST_KN_REDUCED, rdt);
        if (ok == ST_OPK_REDUCE) {
            st_reduce_op rop;
            st_dtype sdt;
            if (st_fuse_reduce_types(g, s, &rop, &sdt, &rdt) != ST_OK)
                return -1;
            n.dtype = rdt;
            n.i = reduce_index(gr, si);
            if (n.i < 0 || n.i >= b->phase) {
                st_err(ST_ERR_RUNTIME, "fuse: reduction used before its pass");
                return -1;
            }
        }
        return round_low(k, st_fuse_cast(k, add_node(k, n), odt));
    }
    if (ok == ST_OPK_CREATE || ok == ST_OPK_RANDOM)
        return round_low(k, st_fuse_create_node(k, g, s));
    int ld[ST_MAX_IN];
    for (int i = 0; i < s->nin; i++)
        if ((ld[i] = emit(b, s->in[i], FR(c, v), m)) < 0)
            return -1;
    return round_low(k, st_fuse_ew_node(k, g, s, ld));
}

/* The node of value v in the current phase, read by a member of frame
 * cfr (rank cm). */
static int emit(kbuild *b, int v, const int *cfr, int cm)
{
    fctx *c = b->c;
    bool member = c->gid[v] == b->gi && c->g->values[v].kind == ST_VAL_STMT;
    int *slot = &b->memo[(size_t)v * (size_t)b->nphase + (size_t)b->phase];
    if (member && *slot >= 0)
        return *slot;
    int r = member ? emit_member(b, v) : emit_load(b, v, cfr, cm);
    if (member)
        *slot = r;
    return r;
}

static void set_phase(st_kernel *k, int from, int phase)
{
    for (int i = from; i < k->nnodes; i++)
        k->nodes[i].phase = phase;
}

/* Stores value v (a member) from the current phase. */
static st_status store_value(kbuild *b, int v)
{
    fctx *c = b->c;
    st_kernel *k = b->k;
    const st_value *val = &c->g->values[v];
    int node = emit(b, v, FR(c, v), val->meta.ndim);
    if (node < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    int dm[ST_MAX_DIMS];
    frame_dimmap(b, val->meta.ndim, FR(c, v), val->meta.ndim, dm);
    /* a stored dim maps to itself (frame_dimmap aligns reads) */
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = -1;
    for (int it = 0; it < k->rank; it++)
        for (int j = 0; j < val->meta.ndim; j++)
            if (b->perm[it] >= 0 && FR(c, v)[j] == b->perm[it])
                dm[it] = j;
    int bi = find_buf(k, v, true, dm);
    if (bi < 0)
        return st_err_kind();
    k->bufs[bi].dtype = val->meta.dtype;
    if (k->nstores >= ST_K_MAX_STORES)
        return st_err(ST_ERR_RUNTIME, "fuse: kernel %s needs more than %d "
                      "stores", k->name, ST_K_MAX_STORES);
    k->stores[k->nstores].buf = bi;
    k->stores[k->nstores].node = node;
    k->nstores++;
    return ST_OK;
}

/* Slab store ss (hosted here): its part, a member, into its slice of the
 * chain's result, from the current phase. */
static st_status store_slab(kbuild *b, const slab_store *ss)
{
    fctx *c = b->c;
    st_kernel *k = b->k;
    int v = ss->src;
    const st_value *val = &c->g->values[v];
    int node = emit(b, v, FR(c, v), val->meta.ndim);
    if (node < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    int dm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = -1;
    for (int it = 0; it < k->rank; it++)
        for (int j = 0; j < val->meta.ndim; j++)
            if (b->perm[it] >= 0 && FR(c, v)[j] == b->perm[it])
                dm[it] = ss->dst_dim[j];
    if (k->nbufs >= ST_K_MAX_BUFS)
        return st_err(ST_ERR_RUNTIME, "fuse: kernel %s needs more than %d "
                      "buffers", k->name, ST_K_MAX_BUFS);
    if (k->nstores >= ST_K_MAX_STORES)
        return st_err(ST_ERR_RUNTIME, "fuse: kernel %s needs more than %d "
                      "stores", k->name, ST_K_MAX_STORES);
    const st_meta *tm = &c->g->values[ss->target].meta;
    int bi = st_kernel_add_buf(k, ss->target, tm->dtype, true, dm);
    if (bi < 0)
        return st_err_kind();
    k->bufs[bi].slab = true;
    k->bufs[bi].slab_stmt = ss->link;
    k->stores[k->nstores].buf = bi;
    k->stores[k->nstores].node = st_fuse_cast(k, node, tm->dtype);
    if (k->stores[k->nstores].node < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    k->nstores++;
    return ST_OK;
}

/* size_buf/size_dim of every iteration dim: a buffer whose mapped dim has
 * the space's symbol there; else a slab whose slice has it (the slice is
 * the shape of its slice_scatter's source: a group that computes only
 * the constant parts of a cat, such as the zeros of a padding, stores
 * nothing but slabs). */
static st_status find_sizes(kbuild *b, const int *want)
{
    fctx *c = b->c;
    st_kernel *k = b->k;
    for (int it = 0; it < k->rank; it++) {
        int found = -1;
        for (int i = 0; i < k->nbufs && found < 0; i++) {
            int td = k->bufs[i].dimmap[it];
            if (td >= 0 && !k->bufs[i].slab &&
                SYM(c, k->bufs[i].value)[td] == want[it])
                found = i;
        }
        for (int i = 0; i < k->nbufs && found < 0; i++) {
            int td = k->bufs[i].dimmap[it];
            if (td >= 0 && k->bufs[i].slab &&
                SYM(c, c->g->stmts[k->bufs[i].slab_stmt].in[1])[td] == want[it])
                found = i;
        }
        if (found < 0)
            return st_err(ST_ERR_RUNTIME, "fuse: kernel %s has no size for "
                          "dim %d", k->name, it);
        k->size_buf[it] = found;
        k->size_dim[it] = k->bufs[found].dimmap[it];
    }
    for (int d = k->rank; d < ST_MAX_DIMS; d++)
        k->size_buf[d] = k->size_dim[d] = -1;
    /* a loaded dim that is always of size 1 (symbol ONE: unsqueeze,
     * keepdim) is a static broadcast unless it sizes the kernel: the
     * backends' unit-stride paths then stay open (the target [N, 1] of a
     * one-hot kept a [N, C] kernel on its scalar loop, its run-time
     * stride 0 failing the stride-1 test) */
    for (int i = 0; i < k->nbufs; i++) {
        if (k->bufs[i].is_out || k->bufs[i].unravel > 0 ||
            (k->kind == ST_K_MATMUL && i < 2))   /* a product's A and B keep theirs */
            continue;
        for (int it = 0; it < k->rank; it++) {
            int td = k->bufs[i].dimmap[it];
            if (td >= 0 && k->size_buf[it] != i &&
                find(c, SYM(c, k->bufs[i].value)[td]) == ONE)
                k->bufs[i].dimmap[it] = -1;
        }
    }
    return ST_OK;
}

static void kernel_name(fctx *c, int gi, st_kernel *k)
{
    const group *gr = &c->groups[gi];
    int n = snprintf(k->name, sizeof k->name, "k%d", gr->members[0]);
    for (int i = 0; i < gr->nmembers && n < (int)sizeof k->name; i++)
        n += snprintf(k->name + n, sizeof k->name - (size_t)n, "_%s",
                      st_op(c->g->stmts[gr->members[i]].op)->name);
}

static st_status build_fused(fctx *c, int gi, st_kernel *k, int *memo)
{
    const st_graph *g = c->g;
    const group *gr = &c->groups[gi];
    kbuild b = {.c = c, .gi = gi, .k = k, .memo = memo,
                .nphase = ST_K_MAX_REDUCE + 1};
    for (int i = 0; i < gr->nmembers; i++)
        for (int p = 0; p < b.nphase; p++)
            memo[(size_t)g->stmts[gr->members[i]].out[0] * (size_t)b.nphase +
                 (size_t)p] = -1;
    kernel_name(c, gi, k);
    k->src_stmt = gr->members[0];
    k->stmt = -1;
    int n = gr->n;
    int want[ST_MAX_DIMS];
    st_status st = ST_OK;
    if (gr->kind == G_EW) {
        k->kind = ST_K_ELEMENTWISE;
        k->rank = n;
        for (int d = 0; d < n; d++) {
            b.perm[d] = d;
            want[d] = gr->ss[d];
        }
        for (int i = 0; i < gr->nmembers && st == ST_OK; i++) {
            int v = g->stmts[gr->members[i]].out[0];
            if (is_stored(c, gi, v))
                st = store_value(&b, v);
        }
        for (int i = 0; i < c->nslabs && st == ST_OK; i++)
            if (c->slabs[i].host == gi)
                st = store_slab(&b, &c->slabs[i]);
    } else if (gr->kind == G_RED) {
        k->kind = ST_K_REDUCE;
        k->rank = n;
        k->nred = gr->nred_dims;
        k->nreduce = gr->nreduce;
        int it = 0;
        for (int d = 0; d < n; d++)
            if (!gr->red[d])
                b.perm[it++] = d;
        for (int d = 0; d < n; d++)
            if (gr->red[d])
                b.perm[it++] = d;
        for (int d = 0; d < n; d++)
            want[d] = gr->ss[b.perm[d]];
        int row[ST_MAX_DIMS];
        for (int d = 0; d < n; d++)
            row[d] = d;
        for (int r = 0; r < gr->nreduce && st == ST_OK; r++) {
            const st_stmt *s = &g->stmts[gr->red_stmt[r]];
            st_reduce_op rop;
            st_dtype sdt, rdt;
            st = st_fuse_reduce_types(g, s, &rop, &sdt, &rdt);
            if (st != ST_OK)
                break;
            int from = k->nnodes;
            b.phase = r;
            int src = st_fuse_cast(k, emit(&b, s->in[0], row, n), sdt);
            if (src < 0) {
                st = st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
                break;
            }
            set_phase(k, from, r);
            k->reduce[r].op = rop;
            k->reduce[r].src = src;
        }
        b.phase = gr->nreduce;
        int from = k->nnodes;
        k->final_per_point = false;
        for (int i = 0; i < gr->nmembers; i++) {
            int v = g->stmts[gr->members[i]].out[0];
            if (is_stored(c, gi, v) &&
                is_row_frame(FR(c, v), g->values[v].meta.ndim, n) &&
                gr->nred_dims > 0)
                k->final_per_point = true;
        }
        for (int i = 0; i < c->nslabs; i++) {
            int v = c->slabs[i].src;
            if (c->slabs[i].host == gi &&
                is_row_frame(FR(c, v), g->values[v].meta.ndim, n) &&
                gr->nred_dims > 0)
                k->final_per_point = true;
        }
        for (int i = 0; i < gr->nmembers && st == ST_OK; i++) {
            int v = g->stmts[gr->members[i]].out[0];
            if (is_stored(c, gi, v))
                st = store_value(&b, v);
        }
        for (int i = 0; i < c->nslabs && st == ST_OK; i++)
            if (c->slabs[i].host == gi)
                st = store_slab(&b, &c->slabs[i]);
        set_phase(k, from, gr->nreduce);
    } else { /* G_MM with an epilogue */
        const st_stmt *s = &g->stmts[gr->members[0]];
        const st_meta *am = &g->values[s->in[0]].meta;
        const st_meta *bm = &g->values[s->in[1]].meta;
        int a = am->ndim, bb = bm->ndim, nb = n - 2;
        k->kind = ST_K_MATMUL;
        k->rank = n + 1;
        int adm[ST_MAX_DIMS], bdm[ST_MAX_DIMS];
        for (int d = 0; d < ST_MAX_DIMS; d++)
            adm[d] = bdm[d] = -1;
        for (int j = 0; j < nb; j++) {
            int ja = j - (nb - (a - 2)), jb = j - (nb - (bb - 2));
            adm[j] = ja >= 0 ? ja : -1;
            bdm[j] = jb >= 0 ? jb : -1;
        }
        adm[nb] = a - 2;
        adm[nb + 2] = a - 1;
        bdm[nb + 1] = bb - 1;
        bdm[nb + 2] = bb - 2;
        if (st_kernel_add_buf(k, s->in[0], am->dtype, false, adm) != 0 ||
            st_kernel_add_buf(k, s->in[1], bm->dtype, false, bdm) != 1)
            return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
        for (int d = 0; d < n; d++) {
            b.perm[d] = d;
            want[d] = gr->ss[d];
        }
        b.perm[n] = -1;
        want[n] = SYM(c, s->in[0])[a - 1];
        b.phase = 1;
        int from = k->nnodes;
        for (int i = 0; i < gr->nmembers && st == ST_OK; i++) {
            int v = g->stmts[gr->members[i]].out[0];
            if (is_stored(c, gi, v))
                st = store_value(&b, v);
        }
        set_phase(k, from, 1);
    }
    if (st == ST_OK)
        st = find_sizes(&b, want);
    return st;
}

/* ---------------- the program ---------------- */

static st_kernel *next_kernel(st_kprog *p)
{
    if (p->nkernels == p->cap_kernels) {
        int cap = p->cap_kernels ? 2 * p->cap_kernels : 16;
        st_kernel *nk = realloc(p->kernels, sizeof *nk * (size_t)cap);
        if (!nk) {
            st_err(ST_ERR_MEMORY, "fuse: out of memory");
            return NULL;
        }
        p->kernels = nk;
        p->cap_kernels = cap;
    }
    st_kernel *k = &p->kernels[p->nkernels++];
    st_kernel_init(k, ST_K_ELEMENTWISE, 0);
    return k;
}

/* Members of group gi one kernel each (the unfused lowering). */
static st_status emit_unfused(fctx *c, int gi, st_kprog *p)
{
    const group *gr = &c->groups[gi];
    for (int i = 0; i < gr->nmembers; i++) {
        int si = gr->members[i];
        int parts = st_fuse_stmt_parts(&c->g->stmts[si]);
        for (int part = 0; part < parts; part++) {
            st_kernel *k = next_kernel(p);
            if (!k)
                return ST_ERR_MEMORY;
            st_status st = st_fuse_lower_stmt(k, c->g, si, part);
            if (st != ST_OK)
                return st;
        }
    }
    return ST_OK;
}

/* The stores of slab chain `chain` that no group took, a kernel each. */
/* Whether unhosted slab store b can share a kernel with a (see
 * emit_slabs): both parts are views (results of view statements: never
 * computed into their slices, so no store is a copy onto itself) of one
 * rank, laid out alike in the result and none along the chain's dim (a
 * stack's parts, as im2col's K window views): then they have the slice's
 * shape less the stacked dim, one shape at any size. */
static bool slabs_share(const fctx *c, const slab_store *a, const slab_store *b)
{
    const st_graph *g = c->g;
    const st_stmt *s = &g->stmts[a->link];
    int rn = g->values[a->target].meta.ndim;
    int64_t d = s->attrs.i[0] < 0 ? s->attrs.i[0] + rn : s->attrs.i[0];
    int n = g->values[a->src].meta.ndim;
    const slab_store *x[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const st_value *v = &g->values[x[i]->src];
        if (v->kind != ST_VAL_STMT || v->producer < 0 || v->meta.ndim != n ||
            st_op(g->stmts[v->producer].op)->kind != ST_OPK_VIEW)
            return false;
    }
    for (int j = 0; j < n && j < ST_MAX_DIMS; j++)
        if (a->dst_dim[j] != b->dst_dim[j] || a->dst_dim[j] == d || a->dst_dim[j] < 0)
            return false;
    return true;
}

/* The stores of chain's G_SLAB group (those no group took): a strided copy
 * each, except that stores which can share a kernel (slabs_share) go
 * into one kernel up to SLAB_SHARE at a time, in kernels of about equal
 * size (a buffer and a store each: im2col's 9 window views of a 3x3
 * convolution were 9 copy kernels, now 2; bench/micro/resnet_step.py). */
#define SLAB_SHARE (ST_K_MAX_BUFS / 2 < ST_K_MAX_STORES ? ST_K_MAX_BUFS / 2 : ST_K_MAX_STORES)

static st_status emit_slabs(fctx *c, int chain, st_kprog *p)
{
    bool *done = calloc((size_t)(c->nslabs > 0 ? c->nslabs : 1), sizeof *done);
    int *cls = malloc(sizeof *cls * (size_t)(c->nslabs > 0 ? c->nslabs : 1));
    if (!done || !cls) {
        free(done);
        free(cls);
        return st_err(ST_ERR_MEMORY, "fuse: out of memory");
    }
    st_status st = ST_OK;
    for (int i = 0; i < c->nslabs && st == ST_OK; i++) {
        const slab_store *ss = &c->slabs[i];
        if (ss->chain != chain || ss->host >= 0 || done[i])
            continue;
        /* i's class: the later stores that can share a kernel with it */
        int n = 0;
        cls[n++] = i;
        for (int j = i + 1; j < c->nslabs; j++)
            if (!done[j] && c->slabs[j].chain == chain && c->slabs[j].host < 0 &&
                slabs_share(c, ss, &c->slabs[j]))
                cls[n++] = j;
        int nk = (n + SLAB_SHARE - 1) / SLAB_SHARE;
        for (int q = 0, at = 0; q < nk && st == ST_OK; q++) {
            int m = (n - at) / (nk - q);   /* about equal kernels */
            st_kernel *k = next_kernel(p);
            if (!k) {
                st = ST_ERR_MEMORY;
                break;
            }
            snprintf(k->name, sizeof k->name, "k%d_slab", c->slabs[cls[at]].link);
            k->src_stmt = c->slabs[cls[at]].link;
            k->stmt = -1;
            for (int e = at; e < at + m && st == ST_OK; e++) {
                const slab_store *se = &c->slabs[cls[e]];
                done[cls[e]] = true;
                st = st_fuse_lower_slab(k, c->g, se->src, se->dst_dim,
                                        se->target, se->link);
            }
            for (int d = k->rank; d < ST_MAX_DIMS; d++)
                k->size_buf[d] = k->size_dim[d] = -1;
            at += m;
        }
    }
    free(done);
    free(cls);
    return st;
}

/* ---------------- statistics ---------------- */

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static st_fuse_stats stats;   /* under stats_lock */

/* Counts a lowered program's fused groups and fallbacks. */
static void count(const fctx *c)
{
    pthread_mutex_lock(&stats_lock);
    stats.programs++;
    stats.fused += c->nfused;
    stats.fallbacks += c->nfallbacks;
    if (c->nfallbacks)
        memcpy(stats.last_fallback, c->last_fallback, sizeof stats.last_fallback);
    pthread_mutex_unlock(&stats_lock);
}

/* Notes a fallback of kernel k (why: the error). */
static void fell_back(fctx *c, const st_kernel *k, const char *why)
{
    c->nfallbacks++;
    snprintf(c->last_fallback, sizeof c->last_fallback, "%s: %s", k->name, why);
}

void st_fuse_stats_get(st_fuse_stats *s, bool reset)
{
    pthread_mutex_lock(&stats_lock);
    *s = stats;
    if (reset)
        memset(&stats, 0, sizeof stats);
    pthread_mutex_unlock(&stats_lock);
}

/* Whether the first L members of group gi (as a group of their own) fit
 * a kernel: a buffer per external operand, a buffer and a store per value
 * read outside them (or a graph output, or unused) and per slab they
 * host; a param per constant operand and per attribute a creation reads.
 * in: scratch, a flag per statement. An estimate (a value read through
 * two dimmaps takes two buffers): a cut that still does not fit is cut
 * again. */
static bool prefix_fits(const fctx *c, int gi, int L, bool *in, bool *mark)
{
    const st_graph *g = c->g;
    const group *gr = &c->groups[gi];
    for (int i = 0; i < L; i++)
        in[gr->members[i]] = true;
    int bufs = 0, stores = 0, params = 0;
    for (int i = 0; i < L; i++) {
        const st_stmt *s = &g->stmts[gr->members[i]];
        if (st_op(s->op)->kind == ST_OPK_CREATE || st_op(s->op)->kind == ST_OPK_RANDOM)
            params += s->op == ST_OP_FULL ? 1 : 2;
        for (int j = 0; j < s->nin; j++) {
            int u = s->in[j], pu = g->values[u].producer;
            if (mark[u] || (g->values[u].kind == ST_VAL_STMT && pu >= 0 && in[pu]))
                continue;
            mark[u] = true;
            if (g->values[u].kind == ST_VAL_CONST)
                params++;
            else
                bufs++;
        }
    }
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        if (in[si] || c->elided[si])
            continue;
        for (int j = 0; j < s->nin; j++) {
            int u = s->in[j], pu = g->values[u].producer;
            if (g->values[u].kind == ST_VAL_STMT && pu >= 0 && in[pu] && !mark[u]) {
                mark[u] = true;
                stores++;
            }
        }
    }
    for (int i = 0; i < L; i++) {
        int v = g->stmts[gr->members[i]].out[0];
        for (int q = 0; q < c->nslabs; q++) {
            if (c->slabs[q].src != v)
                continue;
            if (c->slabs[q].host == gi)
                stores++;          /* into its slice, from here */
            else if (!mark[v]) {   /* read by its own kernel */
                mark[v] = true;
                stores++;
            }
        }
        if (!mark[v] && (c->is_out[v] || c->nusers[v] == 0))
            stores++;
    }
    for (int i = 0; i < L; i++) {
        in[gr->members[i]] = false;
        mark[g->stmts[gr->members[i]].out[0]] = false;
    }
    for (int si = 0; si < g->nstmts; si++)
        for (int j = 0; j < g->stmts[si].nin; j++)
            mark[g->stmts[si].in[j]] = false;
    bufs += stores;
    return bufs <= ST_K_MAX_BUFS && stores <= ST_K_MAX_STORES &&
           params <= ST_K_MAX_PARAMS;
}

/* Cuts group gi (see the top): true when a statement was marked. */
static bool cut_group(fctx *c, int gi)
{
    const group *gr = &c->groups[gi];
    if (gr->nmembers < 2 || c->ncuts >= MAX_CUTS)
        return false;
    size_t ns = (size_t)(c->g->nstmts > 0 ? c->g->nstmts : 1);
    size_t nv = (size_t)(c->g->nvalues > 0 ? c->g->nvalues : 1);
    bool *in = calloc(ns, sizeof *in), *mark = calloc(nv, sizeof *mark);
    if (!in || !mark) {
        free(in);
        free(mark);
        return false;
    }
    int L = gr->nmembers - 1;
    while (L > 1 && !prefix_fits(c, gi, L, in, mark))
        L--;
    free(in);
    free(mark);
    c->cut[gr->members[L]] = true;
    c->ncuts++;
    return true;
}

static st_status emit_group(fctx *c, int gi, st_kprog *p, int *memo)
{
    const group *gr = &c->groups[gi];
    if (gr->kind == G_SLAB)
        return emit_slabs(c, gr->members[0], p);
    bool single = gr->nmembers == 1 && !has_slabs(c, gi);
    if (gr->kind == G_VIEW || gr->kind == G_OPAQUE || single)
        return emit_unfused(c, gi, p);
    st_kernel *k = next_kernel(p);
    if (!k)
        return ST_ERR_MEMORY;
    st_status st = build_fused(c, gi, k, memo);
    c->nfused += st == ST_OK;
    if (st == ST_OK || st == ST_ERR_MEMORY)
        return st;
    /* does not fit the kernel IR's limits: cut it and group again */
    st_kernel_clear(k);
    p->nkernels--;
    if (cut_group(c, gi)) {
        st_err_clear();
        c->regroup = true;
        return ST_OK;
    }
    fell_back(c, k, st_err_msg());
    st_err_clear();
    if (has_slabs(c, gi)) {
        /* again without the slab stores (kernels of their own, later) */
        for (int i = 0; i < c->nslabs; i++)
            if (c->slabs[i].host == gi)
                c->slabs[i].host = -1;
        if (gr->nmembers > 1) {
            k = next_kernel(p);
            if (!k)
                return ST_ERR_MEMORY;
            st = build_fused(c, gi, k, memo);
            if (st == ST_OK || st == ST_ERR_MEMORY)
                return st;
            st_err_clear();
            st_kernel_clear(k);
            p->nkernels--;
        }
    }
    /* else one kernel per member */
    return emit_unfused(c, gi, p);
}

static void fctx_free(fctx *c)
{
    for (int i = 0; i < c->ngroups; i++)
        free(c->groups[i].members);
    free(c->groups);
    free(c->sym);
    free(c->parent);
    free(c->gid);
    free(c->fr);
    free(c->phase);
    free(c->nusers);
    free(c->is_out);
    free(c->elided);
    free(c->cut);
    free(c->slabs);
}

static st_kprog *lower_fused(st_graph *dg, const st_fuse_options *opt)
{
    st_kprog *p = calloc(1, sizeof *p);
    fctx c;
    memset(&c, 0, sizeof c);
    c.g = dg;
    c.opt = opt;
    size_t nv = (size_t)(dg->nvalues > 0 ? dg->nvalues : 1);
    c.sym = calloc(nv * ST_MAX_DIMS, sizeof(int));
    c.fr = calloc(nv * ST_MAX_DIMS, sizeof(int));
    c.gid = malloc(nv * sizeof(int));
    c.phase = calloc(nv, sizeof(int));
    c.nusers = calloc(nv, sizeof(int));
    c.is_out = calloc(nv, sizeof(bool));
    c.elided = calloc((size_t)(dg->nstmts > 0 ? dg->nstmts : 1), sizeof(bool));
    c.cut = calloc((size_t)(dg->nstmts > 0 ? dg->nstmts : 1), sizeof(bool));
    int *memo = malloc(nv * (ST_K_MAX_REDUCE + 1) * sizeof(int));
    if (!p || !c.sym || !c.fr || !c.gid || !c.phase || !c.nusers ||
        !c.is_out || !c.elided || !c.cut || !memo) {
        st_err(ST_ERR_MEMORY, "fuse: out of memory");
        goto fail;
    }
    p->graph = dg;
    dg = NULL;
    for (size_t v = 0; v < nv; v++)
        c.gid[v] = -1;
    for (int si = 0; si < c.g->nstmts; si++)
        for (int i = 0; i < c.g->stmts[si].nin; i++)
            c.nusers[c.g->stmts[si].in[i]]++;
    for (int i = 0; i < c.g->noutputs; i++)
        c.is_out[c.g->outputs[i]] = true;
    infer_syms(&c);
    if (find_slab_chains(&c) != ST_OK)
        goto fail;
    do {
        /* again after a cut: the groups and kernels of the last try go */
        for (int gi = 0; gi < c.ngroups; gi++)
            free(c.groups[gi].members);
        c.ngroups = 0;
        for (int i = 0; i < p->nkernels; i++)
            st_kernel_clear(&p->kernels[i]);
        p->nkernels = 0;
        for (size_t v = 0; v < nv; v++)
            c.gid[v] = -1;
        c.regroup = false;
        c.nfused = c.nfallbacks = 0;
        if (group_stmts(&c) != ST_OK)
            goto fail;
        host_slabs(&c);
        /* every group of the pass, so that one pass cuts all that fail */
        for (int gi = 0; gi < c.ngroups; gi++)
            if (emit_group(&c, gi, p, memo) != ST_OK)
                goto fail;
    } while (c.regroup);
    count(&c);
    free(memo);
    fctx_free(&c);
    return p;
fail:
    if (st_err_kind() == ST_OK)
        st_err(ST_ERR_RUNTIME, "fuse: lowering failed");
    free(memo);
    fctx_free(&c);
    if (p)
        st_kprog_free(p);
    if (dg)
        st_ir_graph_free(dg);
    return NULL;
}

/* ---------------- dumps ---------------- */

static void dump(const st_graph *g, const st_kprog *p)
{
    const char *dir = st_fuse_dump_dir();
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/SIR_%d.txt", dir, g->id);
    FILE *f = fopen(path, "w");
    if (f) {
        char *s = st_ir_print(g);
        fprintf(f, "# StatementIR\n%s\n", s ? s : "");
        free(s);
        s = st_ir_print(p->graph);
        fprintf(f, "# after decomposition\n%s\n", s ? s : "");
        free(s);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/SIR_%d.kernels.txt", dir, g->id);
    f = fopen(path, "w");
    if (f) {
        fprintf(f, "# %d kernels\n", p->nkernels);
        for (int i = 0; i < p->nkernels; i++) {
            char *s = st_kernel_print(&p->kernels[i]);
            fprintf(f, "%s\n", s ? s : "");
            free(s);
        }
        fclose(f);
    }
    st_err_clear();
}

st_kprog *st_fuse_lower(const st_graph *g, const st_fuse_options *opt)
{
    if (!opt)
        opt = st_fuse_config();
    st_graph *dg = st_fuse_decompose(g);
    if (!dg)
        return NULL;
    if (opt->fusion) {
        st_graph *fg = st_fuse_fold_views(dg);
        if (fg) {
            st_ir_graph_free(dg);
            dg = fg;
        }
    }
    st_kprog *p = opt->fusion ? lower_fused(dg, opt)
                              : st_fuse_lower_unfused(dg);
    if (p && st_fuse_unravel_reshapes(p) != ST_OK) {
        st_kprog_free(p);
        return NULL;
    }
    if (p)
        dump(g, p);
    return p;
}
