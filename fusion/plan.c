/* plan.c - the memory plan of a lowered program: which values need storage,
 * when each is born and dies (liveness over the kernel order), the bytes
 * live while each kernel runs, and an arena layout packing the
 * intermediates (first fit by decreasing size, as a graph allocator does:
 * ggml-alloc plans the same way). The plan's figures are the static memory
 * estimate that the caching allocator's own statistics confirm. */
#include <stdlib.h>
#include <string.h>
#include "st_kernel.h"

static int64_t round_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

/* The strides a view step gives its result (what runtime/view.c does),
 * from the source's strides; false when a reshape must copy. */
static bool view_strides(const st_stmt *s, const st_meta *in, const int64_t *is,
                         const st_meta *out, int64_t *os)
{
    const st_attrs *a = &s->attrs;
    switch (s->op) {
    case ST_OP_RESHAPE:
        return st_view_strides(in->ndim, in->shape, is, out->ndim, out->shape, os);
    case ST_OP_PERMUTE:
        for (int k = 0; k < out->ndim; k++) {
            int64_t d = a->dims[k] < 0 ? a->dims[k] + in->ndim : a->dims[k];
            os[k] = d >= 0 && d < in->ndim ? is[d] : 0;
        }
        return true;
    case ST_OP_EXPAND:
        for (int k = 0; k < out->ndim; k++) {
            int d = k - (out->ndim - in->ndim);
            os[k] = (d >= 0 && in->shape[d] == out->shape[k]) ? is[d] : 0;
        }
        return true;
    case ST_OP_SLICE: {
        int64_t dim = a->i[0] < 0 ? a->i[0] + in->ndim : a->i[0];
        for (int k = 0; k < out->ndim; k++)
            os[k] = k == dim ? is[k] * a->i[3] : is[k];
        return true;
    }
    case ST_OP_SQUEEZE: {
        bool drop[ST_MAX_DIMS] = {false};
        for (int d = 0; d < in->ndim; d++)
            drop[d] = a->ndims == 0 && in->shape[d] == 1;
        for (int k = 0; k < a->ndims; k++) {
            int64_t d = a->dims[k] < 0 ? a->dims[k] + in->ndim : a->dims[k];
            if (d >= 0 && d < in->ndim && in->shape[d] == 1)
                drop[d] = true;
        }
        int j = 0;
        for (int d = 0; d < in->ndim; d++)
            if (!drop[d] && j < out->ndim)
                os[j++] = is[d];
        return true;
    }
    case ST_OP_UNSQUEEZE: {
        int64_t dim = a->i[0] < 0 ? a->i[0] + in->ndim + 1 : a->i[0];
        int j = 0;
        for (int d = 0; d <= in->ndim && j < out->ndim; d++) {
            if (d == dim)
                os[j++] = d < in->ndim ? in->shape[d] * is[d] : 1;
            if (d < in->ndim && j < out->ndim)
                os[j++] = is[d];
        }
        return true;
    }
    default:
        return true;
    }
}

static void st_contiguous_strides_of(const st_meta *m, int64_t *st)
{
    int64_t acc = 1;
    for (int d = m->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= m->shape[d] > 1 ? m->shape[d] : 1;
    }
}

static int64_t value_bytes(const st_value *v)
{
    return st_meta_numel(&v->meta) * (int64_t)st_dtype_size(v->meta.dtype);
}

typedef struct {
    int v;
    int64_t bytes;
} item;

static int by_size_desc(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->v - y->v;
}

/* Births, uses and storage aliases of every value, in kernel order: a
 * VIEW step's result shares its source's storage (src[v] = the value whose
 * storage v uses), and so does the result of a kernel marked in place. */
static void walk(const st_kprog *p, st_mem_plan *m, int *src,
                 int64_t (*strides)[ST_MAX_DIMS],
                 const int64_t *const *input_strides)
{
    const st_graph *g = p->graph;
    memset(m->values, 0, sizeof *m->values * (size_t)g->nvalues);
    m->input_bytes = m->output_bytes = 0;
    for (int v = 0; v < g->nvalues; v++) {
        m->values[v].def = m->values[v].last = -1;
        m->values[v].offset = -1;
        src[v] = v;
        st_contiguous_strides_of(&g->values[v].meta, strides[v]);
    }
    /* strides of every value as the runtime will see them: inputs as
     * bound, kernel results contiguous, views derived */
    for (int k = 0; input_strides && k < g->ninputs; k++)
        if (input_strides[k])
            memcpy(strides[g->inputs[k]], input_strides[k],
                   sizeof(int64_t) * (size_t)g->values[g->inputs[k]].meta.ndim);
    for (int k = 0; k < g->ninputs; k++) {
        st_plan_value *pv = &m->values[g->inputs[k]];
        pv->input = true;
        pv->bytes = value_bytes(&g->values[g->inputs[k]]);
        m->input_bytes += pv->bytes;
    }
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW || m->inplace[i] || m->inview[i]) {
            const st_stmt *s = &g->stmts[k->kind == ST_K_VIEW ? k->stmt : k->src_stmt];
            int in = s->in[0], out = s->out[0], root = src[in];
            if (m->values[root].last < i)
                m->values[root].last = i;
            if (m->inplace[i] || m->inview[i]) {
                src[out] = root;
                memcpy(strides[out], strides[in], sizeof strides[out]);
                continue;
            }
            if (!view_strides(s, &g->values[in].meta, strides[in], &g->values[out].meta,
                              strides[out])) {
                /* st_tensor_reshape copies: a buffer of its own from here */
                st_plan_value *pv = &m->values[out];
                pv->copy = true;
                pv->def = pv->last = i;
                pv->bytes = value_bytes(&g->values[out]);
                st_contiguous_strides_of(&g->values[out].meta, strides[out]);
                continue;
            }
            src[out] = root;
            continue;
        }
        for (int b = 0; b < k->nbufs; b++) {
            int v = k->bufs[b].value;
            if (k->bufs[b].is_out && m->into[v] && src[v] == v) /* the window's storage */
                src[v] = src[g->stmts[m->into[v] - 1].in[0]];
            int root = src[v];
            st_plan_value *pv = &m->values[root];
            if (k->bufs[b].is_out && pv->def < 0 && !pv->input) {
                pv->def = i;
                pv->bytes = value_bytes(&g->values[root]);
            }
            if (pv->last < i)
                pv->last = i;
        }
    }
    /* graph outputs (and the storage they view) live to the end, apart */
    for (int k = 0; k < g->noutputs; k++) {
        st_plan_value *pv = &m->values[src[g->outputs[k]]];
        if (pv->output || pv->input)
            continue;
        pv->output = true;
        pv->last = p->nkernels;
        m->output_bytes += pv->bytes;
    }
}

static bool contiguous_strides(const st_meta *mt, const int64_t *st)
{
    int64_t c[ST_MAX_DIMS];
    st_contiguous_strides_of(mt, c);
    for (int d = 0; d < mt->ndim; d++)
        if (mt->shape[d] > 1 && st[d] != c[d])
            return false;
    return true;
}

/* scatter_add (scatter) lowers to a copy of self, then the indexed
 * accumulation (store) into the copy (fusion/lower.c), slice_scatter to a copy of base, then the
 * store into the slice. When self (base) is an intermediate whose storage
 * no kernel reads after the copy, whole, dense and of the result's dtype,
 * the copy is skipped and the result takes self's storage: the tied word
 * embedding's gradient (the decoder's [30522, 256] product plus the
 * embedding's scatter) is then written once instead of copied. */
static bool scatter_in_place(const st_kprog *p, const st_mem_plan *m,
                             const int *src, int64_t (*strides)[ST_MAX_DIMS], int i)
{
    const st_graph *g = p->graph;
    const st_kernel *k = &p->kernels[i];
    if (k->kind != ST_K_ELEMENTWISE || k->src_stmt < 0 || k->nstores != 1 ||
        k->stores[0].indexed)
        return false;
    const st_stmt *s = &g->stmts[k->src_stmt];
    if (!st_fuse_is_scatter(s) || s->nin != st_op(s->op)->max_in ||
        k->bufs[k->stores[0].buf].slab)   /* slice_scatter's store, not its copy */
        return false;
    int b = s->in[0], o = s->out[0], r = src[b];
    const st_plan_value *rv = &m->values[r];
    const st_meta *bm = &g->values[b].meta, *om = &g->values[o].meta;
    if (rv->input || rv->copy || rv->def < 0 || rv->last != i ||
        g->values[r].kind != ST_VAL_STMT)
        return false;
    /* when the storage is handed back (the result is a graph output), it
     * must not be the base's alone: an output root lives to the end */
    if (rv->output)
        return false;
    return bm->dtype == om->dtype && g->values[r].meta.dtype == bm->dtype &&
           bm->ndim == om->ndim &&
           !memcmp(bm->shape, om->shape, sizeof(int64_t) * (size_t)bm->ndim) &&
           st_meta_numel(bm) == st_meta_numel(&g->values[r].meta) &&
           contiguous_strides(bm, strides[b]);
}

/* (dim, start, length, step) of slice or slice_scatter statement s over a
 * value of meta m, bounds clamped; false for a 0-d value. */
static bool slice_key(const st_stmt *s, const st_meta *m, int64_t key[4])
{
    int64_t d = s->attrs.i[0] < 0 ? s->attrs.i[0] + m->ndim : s->attrs.i[0];
    if (m->ndim == 0 || d < 0 || d >= m->ndim || s->attrs.i[3] <= 0)
        return false;
    int64_t start = s->attrs.i[1], stop = s->attrs.i[2];
    key[2] = st_slice_bounds(m->shape[d], &start, &stop, s->attrs.i[3]);
    key[0] = d;
    key[1] = start;
    key[3] = s->attrs.i[3];
    return true;
}

/* The kernel of scatter statement si: its copy of the base (store false)
 * or its store of the source into the slice (store true); -1: none. */
static int scatter_kernel(const st_kprog *p, int si, bool store)
{
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind != ST_K_VIEW && k->src_stmt == si && k->nstores == 1 &&
            !k->stores[0].indexed && k->bufs[k->stores[0].buf].slab == store)
            return i;
    }
    return -1;
}

/* A write into a window of a window, functionalized (what tracing
 * `x[w1][w2] += y` records, and col2im's K adds into the window views of
 * one buffer):
 *     a = slice(B, w1); d = slice_scatter(a, c, w2); B2 = slice_scatter(B, d, w1)
 * When B2 is computed in place (B's storage, scatter_in_place) and d is read
 * by B2 alone, d is B's window w1 itself: d's copy of a (kernel i) is
 * skipped and d's store of c writes into B's storage; B2's store of d is
 * then a copy onto itself, which the executor skips. Nothing may read B
 * between d's store and B2's copy (the store changed B's storage early). */
static bool nested_in_place(const st_kprog *p, const st_mem_plan *m, const int *src, int i)
{
    const st_graph *g = p->graph;
    const st_kernel *k = &p->kernels[i];
    if (m->inplace[i] || k->kind != ST_K_ELEMENTWISE || k->src_stmt < 0 || k->nstores != 1 ||
        k->stores[0].indexed || k->bufs[k->stores[0].buf].slab)
        return false;
    int I = k->src_stmt;
    const st_stmt *si = &g->stmts[I];
    if (si->op != ST_OP_SLICE_SCATTER || si->nin != 2)
        return false;
    int a = si->in[0], d = si->out[0];
    if (g->values[a].kind != ST_VAL_STMT || m->values[d].output)
        return false;
    const st_stmt *sa = &g->stmts[g->values[a].producer];
    if (sa->op != ST_OP_SLICE)
        return false;
    int B = sa->in[0], O = -1;
    for (int s = 0; s < g->nstmts; s++)
        for (int j = 0; j < g->stmts[s].nin; j++)
            if (g->stmts[s].in[j] == d) {
                if (O >= 0 || j != 1)
                    return false;
                O = s;
            }
    for (int q = 0; q < g->noutputs; q++)
        if (g->outputs[q] == d)
            return false;
    if (O < 0 || g->stmts[O].op != ST_OP_SLICE_SCATTER || g->stmts[O].nin != 2 ||
        g->stmts[O].in[0] != B)
        return false;
    int64_t ka[4], ko[4];
    const st_meta *bm = &g->values[B].meta;
    if (!slice_key(sa, bm, ka) || !slice_key(&g->stmts[O], bm, ko) || memcmp(ka, ko, sizeof ka))
        return false;
    int is = scatter_kernel(p, I, true), io = scatter_kernel(p, O, false);
    if (is <= i || io <= is || !m->inplace[io])
        return false;
    int root = src[B];
    for (int q = is + 1; q < io; q++) {
        const st_kernel *kq = &p->kernels[q];
        if (kq->kind == ST_K_VIEW) {
            const st_stmt *vs = &g->stmts[kq->stmt];
            if (src[vs->in[0]] == root && m->values[vs->out[0]].copy)
                return false; /* a reshape that copies reads B */
            continue;
        }
        for (int b = 0; b < kq->nbufs; b++)
            if (src[kq->bufs[b].value] == root)
                return false;
    }
    return true;
}

/* The kernel computing value v (a non-view kernel storing it), or -1. */
static int kernel_writing(const st_kprog *p, int v)
{
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW)
            continue;
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b].is_out && k->bufs[b].value == v)
                return i;
    }
    return -1;
}

/* After nested_in_place: d = slice_scatter(a, c, w) with d a's window of
 * B's storage (kernel i, inview). When c is read by that statement alone
 * and an elementwise kernel computes it whose only reads of B's storage
 * are b = slice(a, w) at the very points it writes (c = b + src: col2im's
 * adds), c is computed straight into a's slice w: d's store of c becomes a
 * copy onto itself (skipped by the executor). Nothing may read B between
 * that kernel and d's store. */
static bool computed_in_window(const st_kprog *p, const st_mem_plan *m, const int *src, int i,
                               int *cv)
{
    const st_graph *g = p->graph;
    int I = p->kernels[i].src_stmt;
    const st_stmt *si = &g->stmts[I];
    int a = si->in[0], c = si->in[1], d = si->out[0];
    if (g->values[c].kind != ST_VAL_STMT || m->values[c].output || m->values[c].input)
        return false;
    const st_meta *cm = &g->values[c].meta, *dm = &g->values[d].meta;
    int64_t key[4];
    if (cm->dtype != dm->dtype || cm->ndim != dm->ndim || !slice_key(si, &g->values[a].meta, key))
        return false;
    for (int k = 0; k < cm->ndim; k++)
        if (cm->shape[k] != (k == key[0] ? key[2] : dm->shape[k]))
            return false;
    for (int s = 0; s < g->nstmts; s++)
        for (int j = 0; j < g->stmts[s].nin; j++)
            if (g->stmts[s].in[j] == c && (s != I || j != 1))
                return false;
    for (int q = 0; q < g->noutputs; q++)
        if (g->outputs[q] == c)
            return false;
    int kc = kernel_writing(p, c), is = scatter_kernel(p, I, true), ka = -1;
    for (int q = 0; q < p->nkernels && ka < 0; q++)
        if (p->kernels[q].kind == ST_K_VIEW && p->kernels[q].stmt == g->values[a].producer)
            ka = q;
    if (kc < 0 || is <= kc || ka < 0 || ka > kc) /* a's view made before c */
        return false;
    const st_kernel *k = &p->kernels[kc];
    if (k->kind != ST_K_ELEMENTWISE)
        return false;
    int ob = -1;
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].is_out && k->bufs[b].value == c)
            ob = b;
    if (ob < 0 || k->bufs[ob].slab || k->bufs[ob].unravel)
        return false;
    for (int q = 0; q < k->nstores; q++)
        if (k->stores[q].buf == ob && (k->stores[q].indexed || k->stores[q].accumulate))
            return false;
    int root = src[a];
    for (int b = 0; b < k->nbufs; b++) {
        const st_kbuf *kb = &k->bufs[b];
        if (b == ob || src[kb->value] != root)
            continue;
        /* a read of B: only the window itself, point for point */
        int v = kb->value;
        if (kb->is_out || kb->unravel || g->values[v].kind != ST_VAL_STMT)
            return false;
        const st_stmt *sb = &g->stmts[g->values[v].producer];
        int64_t kb_key[4];
        if (sb->op != ST_OP_SLICE || sb->in[0] != a ||
            !slice_key(sb, &g->values[a].meta, kb_key) || memcmp(kb_key, key, sizeof key) ||
            memcmp(kb->dimmap, k->bufs[ob].dimmap, sizeof kb->dimmap))
            return false;
        for (int n = 0; n < k->nnodes; n++)
            if (k->nodes[n].kind == ST_KN_LOAD && k->nodes[n].buf == b && k->nodes[n].idx_dim >= 0)
                return false;
    }
    for (int q = kc + 1; q < is; q++) {
        const st_kernel *kq = &p->kernels[q];
        if (q == i)
            continue; /* d's copy of a, skipped */
        if (kq->kind == ST_K_VIEW) {
            const st_stmt *vs = &g->stmts[kq->stmt];
            if (src[vs->in[0]] == root && m->values[vs->out[0]].copy)
                return false;
            continue;
        }
        for (int b = 0; b < kq->nbufs; b++)
            if (src[kq->bufs[b].value] == root)
                return false;
    }
    *cv = c;
    return true;
}

st_mem_plan *st_fuse_plan(const st_kprog *p, const int64_t *const *input_strides)
{
    const st_graph *g = p->graph;
    st_mem_plan *m = calloc(1, sizeof *m);
    if (!m) {
        st_err(ST_ERR_MEMORY, "plan: out of memory");
        return NULL;
    }
    m->nvalues = g->nvalues;
    m->nkernels = p->nkernels;
    m->values = calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1), sizeof *m->values);
    m->live = calloc((size_t)(p->nkernels > 0 ? p->nkernels : 1), sizeof *m->live);
    m->resident = calloc((size_t)(p->nkernels > 0 ? p->nkernels : 1), sizeof *m->resident);
    m->inplace = calloc((size_t)(p->nkernels > 0 ? p->nkernels : 1), sizeof *m->inplace);
    m->inview = calloc((size_t)(p->nkernels > 0 ? p->nkernels : 1), sizeof *m->inview);
    m->into = calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1), sizeof *m->into);
    int *src = malloc(sizeof(int) * (size_t)(g->nvalues > 0 ? g->nvalues : 1));
    int64_t (*strides)[ST_MAX_DIMS] = calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1),
                                             sizeof *strides);
    if (!m->values || !m->live || !m->resident || !m->inplace || !m->inview || !m->into || !src || !strides) {
        free(src);
        free(strides);
        st_mem_plan_free(m);
        st_err(ST_ERR_MEMORY, "plan: out of memory");
        return NULL;
    }
    walk(p, m, src, strides, input_strides);
    bool any = false;
    for (int i = 0; i < p->nkernels; i++)
        if (scatter_in_place(p, m, src, strides, i))
            any = m->inplace[i] = true;
    /* (decided on the walk without aliases, as scatter_in_place) */
    for (int i = 0; any && i < p->nkernels; i++)
        if (nested_in_place(p, m, src, i))
            m->inview[i] = true;
    for (int i = 0; any && i < p->nkernels; i++) {
        int c;
        if (m->inview[i] && computed_in_window(p, m, src, i, &c))
            m->into[c] = p->kernels[i].src_stmt + 1;
    }
    if (any)
        walk(p, m, src, strides, input_strides);
    /* live bytes while each kernel runs */
    for (int i = 0; i < p->nkernels; i++) {
        int64_t live = m->input_bytes;
        for (int v = 0; v < g->nvalues; v++) {
            const st_plan_value *pv = &m->values[v];
            if (!pv->input && pv->def >= 0 && pv->def <= i && pv->last >= i)
                live += pv->bytes;
        }
        m->live[i] = live;
        if (live > m->peak_live)
            m->peak_live = live;
    }
    if (p->nkernels == 0)
        m->peak_live = m->input_bytes;
    /* arena: intermediates by decreasing size, each at the lowest offset
     * free of every placed buffer whose lifetime overlaps */
    item *items = malloc(sizeof *items * (size_t)(g->nvalues > 0 ? g->nvalues : 1));
    int *placed = malloc(sizeof(int) * (size_t)(g->nvalues > 0 ? g->nvalues : 1));
    int n = 0, np = 0;
    if (!items || !placed) {
        free(items);
        free(placed);
        free(src);
        free(strides);
        st_mem_plan_free(m);
        st_err(ST_ERR_MEMORY, "plan: out of memory");
        return NULL;
    }
    for (int v = 0; v < g->nvalues; v++) {
        st_plan_value *pv = &m->values[v];
        if (pv->def >= 0 && !pv->output && !pv->input && !pv->copy && pv->bytes > 0)
            items[n++] = (item){v, round_up(pv->bytes, ST_PLAN_ALIGN)};
    }
    qsort(items, (size_t)n, sizeof *items, by_size_desc);
    for (int a = 0; a < n; a++) {
        st_plan_value *pv = &m->values[items[a].v];
        int64_t off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int q = 0; q < np; q++) {
                const st_plan_value *o = &m->values[placed[q]];
                if (o->last < pv->def || pv->last < o->def)
                    continue; /* lifetimes do not overlap */
                int64_t oend = o->offset + round_up(o->bytes, ST_PLAN_ALIGN);
                if (off < oend && o->offset < off + items[a].bytes) {
                    off = oend;
                    moved = true;
                }
            }
        }
        pv->offset = off;
        pv->arena = true;
        placed[np++] = items[a].v;
        if (off + items[a].bytes > m->arena_bytes)
            m->arena_bytes = off + items[a].bytes;
    }
    /* what the runtime holds: the arena all along, outputs from birth */
    m->peak_resident = m->input_bytes + m->arena_bytes;
    for (int i = 0; i < p->nkernels; i++) {
        int64_t r = m->input_bytes + m->arena_bytes;
        for (int v = 0; v < g->nvalues; v++) {
            const st_plan_value *pv = &m->values[v];
            if (pv->output && pv->def >= 0 && pv->def <= i)
                r += pv->bytes;
            else if (pv->copy && pv->def <= i && pv->last >= i)
                r += pv->bytes;
        }
        m->resident[i] = r;
        if (r > m->peak_resident)
            m->peak_resident = r;
    }
    free(items);
    free(placed);
    free(src);
    free(strides);
    return m;
}

void st_mem_plan_free(st_mem_plan *m)
{
    if (!m)
        return;
    free(m->values);
    free(m->live);
    free(m->resident);
    free(m->inplace);
    free(m->inview);
    free(m->into);
    free(m);
}
