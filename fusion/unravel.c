/* fusion/unravel.c - reshapes of non-contiguous views as index arithmetic.
 * A reshape of a strided view (x.T.reshape(n), a.permute(0,2,1,3)
 * .reshape(b, s, h*d)) cannot be a view: the runtime would copy it. Here
 * every kernel load of such a reshape's result instead reads the source
 * view through an unravel index map (st_kbuf.unravel): the point's linear
 * index in the reshaped shape, unraveled over the source's sizes and
 * dotted with its strides. Which reshape results keep a tensor of their
 * own is decided first (needs_tensor: a graph output, a matmul operand,
 * a view's source): each becomes an elementwise kernel that writes it
 * from its source (generated code, not a copy in the runtime) and its
 * readers read it; only the readers of the others are rebound, and their
 * reshape steps, unread, are dropped.
 * A chain of reshapes unravels to its first source (a reshape keeps the
 * row-major order of elements). Matmul kernels keep their operands (the
 * product reads A and B by strides).
 * Owns: st_fuse_unravel_reshapes, st_kernel_unravel_args. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_kernel.h"

static const st_stmt *producer(const st_graph *g, int v)
{
    const st_value *val = &g->values[v];
    return val->kind == ST_VAL_STMT ? &g->stmts[val->producer] : NULL;
}

/* Whether view statement s leaves its result non-contiguous (for
 * contiguous input): a permute that moves a dim, an expand, a slice. */
static bool strided_view(const st_stmt *s)
{
    switch (s->op) {
    case ST_OP_PERMUTE:
        for (int d = 0; d < s->attrs.ndims; d++)
            if (s->attrs.dims[d] != d)
                return true;
        return false;
    case ST_OP_EXPAND:
    case ST_OP_SLICE:
        return true;
    default:
        return false;
    }
}

/* The source a reshape result r unravels from, or -1: the input of the
 * first of a chain of reshapes, a view that (through squeezes and
 * unsqueezes) is strided. */
static int unravel_source(const st_graph *g, int r)
{
    const st_stmt *s = producer(g, r);
    if (!s || s->op != ST_OP_RESHAPE || s->nout != 1)
        return -1;
    int src = s->in[0];
    const st_stmt *p;
    while ((p = producer(g, src)) && p->op == ST_OP_RESHAPE && p->nout == 1)
        src = p->in[0];
    for (int v = src; (p = producer(g, v));) {
        if (st_op(p->op)->kind != ST_OPK_VIEW || p->nout != 1)
            return -1;
        if (strided_view(p))
            return g->values[src].meta.ndim >= 1 ? src : -1;
        if (p->op != ST_OP_SQUEEZE && p->op != ST_OP_UNSQUEEZE)
            return -1;
        v = p->in[0];
    }
    return -1;
}

/* Whether buffer b of k may read through an unravel map. */
static bool rebindable(const st_kernel *k, int b)
{
    if ((k->kind != ST_K_ELEMENTWISE && k->kind != ST_K_REDUCE) ||
        k->bufs[b].is_out || k->bufs[b].unravel > 0)
        return false;
    for (int n = 0; n < k->nnodes; n++)
        if (k->nodes[n].kind == ST_KN_LOAD && k->nodes[n].buf == b &&
            k->nodes[n].idx_dim >= 0)
            return false;
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].buf == b)
            return false;
    return true;
}

/* Which reshape results that unravel must still have a tensor of their
 * own (keep[r]): a graph output, the input of a view step (other than a
 * later reshape of the same chain, which unravels from the same source),
 * or read by a buffer that cannot take an unravel map (a matmul operand,
 * an indexed load). Every other reader is rebound, so the others end up
 * unread. Decided before anything is rebound: one pass, no rebinding to
 * take back. */
static void needs_tensor(const st_kprog *p, bool *keep)
{
    const st_graph *g = p->graph;
    for (int i = 0; i < g->noutputs; i++)
        keep[g->outputs[i]] |= unravel_source(g, g->outputs[i]) >= 0;
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW) {
            const st_stmt *s = &g->stmts[k->stmt];
            bool chain = s->op == ST_OP_RESHAPE && s->nout == 1;
            for (int j = 0; j < s->nin; j++) {
                int src = unravel_source(g, s->in[j]);
                if (src >= 0 && !(chain && unravel_source(g, s->out[0]) == src))
                    keep[s->in[j]] = true;
            }
            continue;
        }
        for (int b = 0; b < k->nbufs; b++) {
            int v = k->bufs[b].value;
            if (!k->bufs[b].is_out && v >= 0 && v < g->nvalues &&
                unravel_source(g, v) >= 0 && !rebindable(k, b))
                keep[v] = true;
        }
    }
}

/* View step k of reshape statement si, whose result is still needed (a
 * graph output, a matmul operand, a view's source), becomes an
 * elementwise kernel that writes it: one unravel load and a store, so
 * the copy is generated code like any other kernel's. */
static st_status materialize(st_graph *g, int si, st_kernel *k)
{
    st_stmt *s = &g->stmts[si];
    int r = s->out[0], src = unravel_source(g, r);
    const st_meta *m = &g->values[r].meta;
    if (m->ndim < 1) {
        /* a 0-d result: the view step reshapes the chain's source (one
         * element: always a view), whose other reshape steps are dropped
         * (reading its own input left it unbound) */
        s->in[0] = src;
        return ST_OK;
    }
    st_kernel nk;
    st_kernel_init(&nk, ST_K_ELEMENTWISE, m->ndim);
    snprintf(nk.name, sizeof nk.name, "k%d_reshape", si);
    nk.src_stmt = si;
    int dm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = d < m->ndim ? d : -1;
    if (st_kernel_add_buf(&nk, src, m->dtype, false, dm) != 0 ||
        st_kernel_add_buf(&nk, r, m->dtype, true, dm) != 1)
        return st_err_kind();
    nk.bufs[0].unravel = g->values[src].meta.ndim;
    nk.bufs[0].view_value = r;
    for (int d = 0; d < m->ndim; d++) {
        nk.size_buf[d] = 1;
        nk.size_dim[d] = d;
    }
    st_knode ld;
    memset(&ld, 0, sizeof ld);
    ld.kind = ST_KN_LOAD;
    ld.dtype = m->dtype;
    ld.a = ld.b = ld.c = -1;
    ld.idx_dim = -1;
    ld.buf = 0;
    int n = st_kernel_node(&nk, &ld);
    if (n < 0) {
        st_kernel_clear(&nk);
        return st_err_kind();
    }
    nk.stores[0].buf = 1;
    nk.stores[0].node = n;
    nk.stores[0].idx_dim = nk.stores[0].idx_node = -1;
    nk.nstores = 1;
    st_kernel_clear(k);
    *k = nk;
    return ST_OK;
}

st_status st_fuse_unravel_reshapes(st_kprog *p)
{
    const st_graph *g = p->graph;
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    bool *keep = calloc((size_t)nv, sizeof *keep);
    bool *shared = calloc((size_t)(p->nkernels > 0 ? p->nkernels : 1), sizeof *shared);
    int *first = malloc(sizeof(int) * (size_t)nv);
    if (!keep || !shared || !first) {
        free(keep);
        free(shared);
        free(first);
        return st_err(ST_ERR_MEMORY, "unravel: out of memory");
    }
    needs_tensor(p, keep);
    /* loads of a reshape result without a tensor read its source through
     * the unravel map; those of one with a tensor read the tensor (plain
     * loads of contiguous memory: the backward's head merge, a [B, S, H]
     * gradient written for its matmul and summed over tokens for the
     * bias, took 170 us a step through the map instead of 30) */
    for (int i = 0; i < p->nkernels; i++) {
        st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW)
            continue;
        for (int b = 0; b < k->nbufs; b++) {
            int r = k->bufs[b].value;
            int src = r >= 0 && r < g->nvalues ? unravel_source(g, r) : -1;
            if (src < 0 || keep[r] || !rebindable(k, b))
                continue;
            k->bufs[b].value = src;
            k->bufs[b].view_value = r;
            k->bufs[b].unravel = g->values[src].meta.ndim;
            k->bufs[b].contiguous = false;
        }
    }
    /* two reshapes of one source that keep a tensor (the backward graph
     * reshapes a head-permuted gradient to [B, S, H] and to [B * S, H],
     * both matmul operands): the first is written by a kernel, the later
     * one becomes a view of that contiguous result (a reshape of a reshape
     * keeps the row-major order): one copy, not two */
    for (int v = 0; v < g->nvalues; v++)
        first[v] = -1;
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind != ST_K_VIEW || g->stmts[k->stmt].op != ST_OP_RESHAPE)
            continue;
        st_stmt *s = &p->graph->stmts[k->stmt];
        int r = s->out[0], src = unravel_source(g, r);
        if (src < 0 || g->values[r].meta.ndim < 1 || !keep[r])
            continue;
        int r1 = first[src];
        if (r1 < 0) {
            first[src] = r;
        } else if (g->values[r1].meta.dtype == g->values[r].meta.dtype &&
                   st_meta_numel(&g->values[r1].meta) == st_meta_numel(&g->values[r].meta)) {
            s->in[0] = r1;
            shared[i] = true;
        }
    }
    /* the other reshape steps that unravel: written by a kernel when kept,
     * else dropped (nothing reads them now) */
    st_status st = ST_OK;
    int n = 0;
    for (int i = 0; i < p->nkernels; i++) {
        st_kernel *k = &p->kernels[i];
        int r = k->kind == ST_K_VIEW ? g->stmts[k->stmt].out[0] : -1;
        bool unravels = r >= 0 && !shared[i] && g->stmts[k->stmt].op == ST_OP_RESHAPE &&
                        unravel_source(g, r) >= 0;
        if (unravels && !keep[r]) {
            st_kernel_clear(k);
            continue;
        }
        if (unravels && st == ST_OK)
            st = materialize(p->graph, k->stmt, k);
        if (n != i)
            p->kernels[n] = *k;
        n++;
    }
    p->nkernels = n;
    free(keep);
    free(shared);
    free(first);
    return st;
}

void st_kernel_unravel_args(const st_kbuf *kb, int rank, const st_meta *view,
                            const int64_t *src_shape, const int64_t *src_strides,
                            st_karg_buf *ab)
{
    int64_t cs[ST_MAX_DIMS];
    int64_t acc = 1;
    for (int d = view->ndim - 1; d >= 0; d--) {
        cs[d] = acc;
        acc *= view->shape[d] > 0 ? view->shape[d] : 1;
    }
    for (int d = 0; d < rank; d++) {
        int td = kb->dimmap[d];
        ab->strides[d] = (td < 0 || td >= view->ndim || view->shape[td] == 1)
                             ? 0 : cs[td];
    }
    for (int j = 0; j < ST_MAX_DIMS; j++) {
        bool in = j < kb->unravel && src_shape;
        ab->ushape[j] = in && src_shape[j] > 0 ? src_shape[j] : 1;
        ab->ustrides[j] = in ? src_strides[j] : 0;
    }
}
