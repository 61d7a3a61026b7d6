/* fusion/lower.c - the unfused lowering of a decomposed graph: one kernel
 * per primitive statement in statement order (views become ST_K_VIEW steps;
 * scatter_add takes two: a copy of self, then an indexed accumulating store
 * of src; scatter the same, the store not accumulating; slice_scatter two: a copy of base, then src stored into the
 * slice). It is the SYMTRACE_FUSION=0 path, the lowering of statements
 * fusion (fuse.c) leaves alone, and the source of the node builders fuse.c
 * reuses. Buffers name values of the program's graph; the executor binds
 * tensors and computes st_kargs.
 * Owns: st_fuse_lower_unfused, st_fuse_lower_stmt, st_fuse_lower_slab,
 * st_fuse_stmt_parts, st_fuse_is_scatter, st_kprog_free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_internal.h"

/* ---- node construction ---- */

st_knode st_fuse_node0(st_knode_kind kind, st_dtype dt)
{
    st_knode n;
    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.dtype = dt;
    n.a = n.b = n.c = -1;
    n.buf = -1;
    n.idx_dim = -1;
    return n;
}

static st_knode node0(st_knode_kind kind, st_dtype dt)
{
    return st_fuse_node0(kind, dt);
}

/* Appends n; -1 (error set) on failure. */
static int add_node(st_kernel *k, st_knode n)
{
    return st_kernel_node(k, &n);
}

static int n_load(st_kernel *k, int buf, int idx_dim, int idx_node)
{
    st_knode n = node0(ST_KN_LOAD, k->bufs[buf].dtype);
    n.buf = buf;
    n.idx_dim = idx_dim;
    n.a = idx_node;
    return add_node(k, n);
}

static int n_param(st_kernel *k, int param)
{
    st_knode n = node0(ST_KN_PARAM, k->param_dtype[param]);
    n.buf = param;
    return add_node(k, n);
}

static int n_unary(st_kernel *k, int op, int a, st_dtype dt)
{
    if (a < 0)
        return -1;
    st_knode n = node0(ST_KN_UNARY, dt);
    n.op = op;
    n.a = a;
    return add_node(k, n);
}

static int n_binary(st_kernel *k, int op, int a, int b, st_dtype dt)
{
    if (a < 0 || b < 0)
        return -1;
    st_knode n = node0(ST_KN_BINARY, dt);
    n.op = op;
    n.a = a;
    n.b = b;
    return add_node(k, n);
}

/* a cast to dt (a itself when already of dt). */
static int n_cast(st_kernel *k, int a, st_dtype dt)
{
    if (a < 0)
        return -1;
    if (k->nodes[a].dtype == dt)
        return a;
    st_knode n = node0(ST_KN_CAST, dt);
    n.a = a;
    n.phase = k->nodes[a].phase;
    return add_node(k, n);
}

int st_fuse_add_param(st_kernel *k, int value, st_dtype dt)
{
    if (k->nparams >= ST_K_MAX_PARAMS) {
        st_err(ST_ERR_RUNTIME, "lower: kernel %s has more than %d params",
               k->name, ST_K_MAX_PARAMS);
        return -1;
    }
    int p = k->nparams++;
    k->param_value[p] = value;
    k->param_dtype[p] = dt;
    k->param_stmt[p] = k->src_stmt;
    return p;
}

static int add_param(st_kernel *k, int value, st_dtype dt)
{
    return st_fuse_add_param(k, value, dt);
}

/* A param read from field `which` (ST_KPARAM_ATTR_*) of statement s's
 * attrs at launch. */
static int attr_param(st_kernel *k, const st_graph *g, const st_stmt *s,
                      int which, st_dtype dt)
{
    int p = st_fuse_add_param(k, which, dt);
    if (p >= 0)
        k->param_stmt[p] = (int)(s - g->stmts);
    return p;
}

static int add_buf(st_kernel *k, int value, st_dtype dt, bool is_out,
                   const int *dimmap)
{
    if (k->nbufs >= ST_K_MAX_BUFS) {
        st_err(ST_ERR_RUNTIME, "lower: kernel %s has more than %d buffers",
               k->name, ST_K_MAX_BUFS);
        return -1;
    }
    int dm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = d < k->rank ? dimmap[d] : -1;
    int b = st_kernel_add_buf(k, value, dt, is_out, dm);
    if (b >= 0) {
        for (int d = 0; d < ST_MAX_DIMS; d++)
            k->bufs[b].dimmap[d] = dm[d];
        k->bufs[b].contiguous = false;
    }
    return b;
}

static st_status add_store(st_kernel *k, int buf, int node)
{
    if (node < 0 || buf < 0)
        return st_err_kind() != ST_OK ? st_err_kind() : ST_ERR_RUNTIME;
    if (k->nstores >= ST_K_MAX_STORES)
        return st_err(ST_ERR_RUNTIME, "lower: too many stores in %s", k->name);
    k->stores[k->nstores].buf = buf;
    k->stores[k->nstores].node = node;
    k->nstores++;
    return ST_OK;
}

static void identity_map(int *dm, int rank)
{
    for (int d = 0; d < ST_MAX_DIMS; d++)
        dm[d] = d < rank ? d : -1;
}

static void sizes_from(st_kernel *k, int buf)
{
    for (int d = 0; d < k->rank; d++) {
        k->size_buf[d] = buf;
        k->size_dim[d] = d;
    }
}

static const st_meta *vmeta(const st_graph *g, int v)
{
    return &g->values[v].meta;
}

/* Output buffer of the statement: identity dimmap over the kernel rank. */
static int out_buf(st_kernel *k, const st_graph *g, const st_stmt *s)
{
    int dm[ST_MAX_DIMS];
    identity_map(dm, k->rank);
    return add_buf(k, s->out[0], vmeta(g, s->out[0])->dtype, true, dm);
}

int st_fuse_cast(st_kernel *k, int a, st_dtype dt)
{
    return n_cast(k, a, dt);
}

/* ---- elementwise: unary, binary, where, cast, copy ---- */

static bool is_compare(int op)
{
    return op == ST_OP_EQ || op == ST_OP_NE || op == ST_OP_LT ||
           op == ST_OP_LE || op == ST_OP_GT || op == ST_OP_GE;
}

static bool is_logical(int op)
{
    return op == ST_OP_LOGICAL_AND || op == ST_OP_LOGICAL_OR;
}

/* Loads operand v: a PARAM for a constant value, else a LOAD of a buffer
 * (one buffer per distinct value, dimmap right-aligned). */
static int ew_operand(st_kernel *k, const st_graph *g, int v)
{
    const st_value *val = &g->values[v];
    if (val->kind == ST_VAL_CONST) {
        int p = add_param(k, v, val->meta.dtype);
        return p < 0 ? -1 : n_param(k, p);
    }
    int b = -1;
    for (int i = 0; i < k->nbufs; i++)
        if (!k->bufs[i].is_out && k->bufs[i].value == v)
            b = i;
    if (b < 0) {
        int dm[ST_MAX_DIMS];
        int off = k->rank - val->meta.ndim;
        for (int d = 0; d < ST_MAX_DIMS; d++)
            dm[d] = (d < k->rank && d - off >= 0) ? d - off : -1;
        b = add_buf(k, v, val->meta.dtype, false, dm);
        if (b < 0)
            return -1;
    }
    return n_load(k, b, -1, -1);
}

static st_status lower_elementwise(st_kernel *k, const st_graph *g,
                                   const st_stmt *s)
{
    const st_meta *om = vmeta(g, s->out[0]);
    k->kind = ST_K_ELEMENTWISE;
    k->rank = om->ndim;
    int ld[ST_MAX_IN];
    for (int i = 0; i < s->nin; i++)
        if ((ld[i] = ew_operand(k, g, s->in[i])) < 0)
            return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    int ob = out_buf(k, g, s);
    if (ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    sizes_from(k, ob);

    return add_store(k, ob, st_fuse_ew_node(k, g, s, ld));
}

int st_fuse_ew_node(st_kernel *k, const st_graph *g, const st_stmt *s,
                    const int *ld)
{
    st_dtype odt = vmeta(g, s->out[0])->dtype;
    for (int i = 0; i < s->nin; i++)
        if (ld[i] < 0)
            return -1;
    const st_op_def *def = st_op(s->op);
    int r = -1;
    if (s->op == ST_OP_COPY) {
        r = ld[0];
    } else if (s->op == ST_OP_CAST) {
        st_knode n = node0(ST_KN_CAST, odt);
        n.a = ld[0];
        r = add_node(k, n);
    } else if (s->op == ST_OP_WHERE) {
        st_knode n = node0(ST_KN_WHERE, odt);
        n.a = n_cast(k, ld[0], ST_BOOL);
        n.b = n_cast(k, ld[1], odt);
        n.c = n_cast(k, ld[2], odt);
        r = (n.a < 0 || n.b < 0 || n.c < 0) ? -1 : add_node(k, n);
    } else if (def && def->kind == ST_OPK_UNARY) {
        if (s->op == ST_OP_LOGICAL_NOT)
            r = n_unary(k, s->op, ld[0], odt);
        else
            r = n_unary(k, s->op, n_cast(k, ld[0], odt), odt);
    } else if (def && def->kind == ST_OPK_BINARY) {
        st_dtype cdt = odt;
        if (is_compare(s->op) || is_logical(s->op)) {
            st_meta ms[2] = {*vmeta(g, s->in[0]), *vmeta(g, s->in[1])};
            cdt = st_result_type(ms, 2);
        }
        /* a half-type op computes in float (PyTorch's opmath): an operand
         * that is not of the half type (a Python number, a 0-d float32 or
         * int tensor: anything else would have promoted the result) is
         * taken to float, not rounded to the half type first (half(0.5) *
         * 1e5 is 49984, not inf) */
        st_dtype c0 = cdt, c1 = cdt;
        if ((cdt == ST_FLOAT16 || cdt == ST_BFLOAT16) && !is_compare(s->op) && !is_logical(s->op)) {
            if (k->nodes[ld[0]].dtype != cdt)
                c0 = ST_FLOAT32;
            if (k->nodes[ld[1]].dtype != cdt)
                c1 = ST_FLOAT32;
        }
        int l0 = n_cast(k, ld[0], c0); /* sequenced: node order */
        int l1 = n_cast(k, ld[1], c1);
        r = n_binary(k, s->op, l0, l1, odt);
    } else {
        st_err(ST_ERR_RUNTIME, "lower: %s is not elementwise",
               def ? def->name : "?");
        return -1;
    }
    return n_cast(k, r, odt);
}

/* ---- creation and random ---- */

static st_status lower_create(st_kernel *k, const st_graph *g,
                              const st_stmt *s)
{
    const st_meta *om = vmeta(g, s->out[0]);
    k->kind = ST_K_ELEMENTWISE;
    k->rank = om->ndim;
    int ob = out_buf(k, g, s);
    if (ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    sizes_from(k, ob);
    return add_store(k, ob, st_fuse_create_node(k, g, s));
}

/* A random statement's kernel: it draws from the generator (reserving its
 * points' counters at launch), or replays a forward draw (see st_kernel). */
static void uses_rng(st_kernel *k, const st_graph *g, const st_stmt *s)
{
    k->uses_rng = true;
    if (s->attrs.flags & ST_ATTR_RNG_REPLAY) {
        k->rng_replay = true;
        k->rng_stmt = (int)(s - g->stmts);
    }
}

int st_fuse_create_node(st_kernel *k, const st_graph *g, const st_stmt *s)
{
    st_dtype odt = vmeta(g, s->out[0])->dtype;
    int r = -1;
    switch (s->op) {
    case ST_OP_FULL: {
        bool iv = (s->attrs.flags & ST_ATTR_INT_VALUE) ||
                  !st_dtype_is_float(odt);
        int p = iv ? attr_param(k, g, s, ST_KPARAM_ATTR_I0, ST_INT64)
                   : attr_param(k, g, s, ST_KPARAM_ATTR_F0, ST_FLOAT64);
        if (p >= 0)
            r = n_cast(k, n_param(k, p), odt);
        break;
    }
    case ST_OP_ARANGE: {
        int ps = attr_param(k, g, s, ST_KPARAM_ATTR_F0, ST_FLOAT64);
        int pt = attr_param(k, g, s, ST_KPARAM_ATTR_F1, ST_FLOAT64);
        if (ps < 0 || pt < 0)
            break;
        int start = n_param(k, ps), step = n_param(k, pt);
        st_knode ix = node0(ST_KN_INDEX, ST_INT64);
        ix.i = -1;
        int i = n_cast(k, add_node(k, ix), ST_FLOAT64);
        r = n_binary(k, ST_OP_ADD, start,
                     n_binary(k, ST_OP_MUL, i, step, ST_FLOAT64), ST_FLOAT64);
        r = n_cast(k, r, odt);
        break;
    }
    case ST_OP_RAND:
    case ST_OP_RANDN: {
        uses_rng(k, g, s);
        st_dtype cdt = odt == ST_FLOAT64 ? ST_FLOAT64 : ST_FLOAT32;
        int p0 = attr_param(k, g, s, ST_KPARAM_ATTR_F0, ST_FLOAT64);
        int p1 = attr_param(k, g, s, ST_KPARAM_ATTR_F1, ST_FLOAT64);
        if (p0 < 0 || p1 < 0)
            break;
        int a = n_cast(k, n_param(k, p0), cdt);
        int b = n_cast(k, n_param(k, p1), cdt);
        /* A uniform draws in the output dtype, so it is below 1 at that
         * precision (a float32 draw cast to float16 can round up to 1.0);
         * [0, 1) then maps exactly. */
        st_knode rn = node0(ST_KN_RAND, s->op == ST_OP_RAND ? odt : cdt);
        rn.i = s->op == ST_OP_RAND ? 0 : 1;
        int x = n_cast(k, add_node(k, rn), cdt);
        if (s->op == ST_OP_RAND) /* low + u * (high - low) */
            r = n_binary(k, ST_OP_ADD, a,
                         n_binary(k, ST_OP_MUL, x,
                                  n_binary(k, ST_OP_SUB, b, a, cdt), cdt),
                         cdt);
        else /* mean + z * std */
            r = n_binary(k, ST_OP_ADD, a, n_binary(k, ST_OP_MUL, x, b, cdt),
                         cdt);
        r = n_cast(k, r, odt);
        break;
    }
    case ST_OP_RANDINT: {
        uses_rng(k, g, s);
        int p0 = attr_param(k, g, s, ST_KPARAM_ATTR_I0, ST_INT64);
        int p1 = attr_param(k, g, s, ST_KPARAM_ATTR_I1, ST_INT64);
        if (p0 < 0 || p1 < 0)
            break;
        int lo = n_param(k, p0), hi = n_param(k, p1);
        int span = n_cast(k, n_binary(k, ST_OP_SUB, hi, lo, ST_INT64),
                          ST_FLOAT64);
        st_knode rn = node0(ST_KN_RAND, ST_FLOAT64);
        rn.i = 0;
        int u = add_node(k, rn);
        int f = n_unary(k, ST_OP_FLOOR,
                        n_binary(k, ST_OP_MUL, u, span, ST_FLOAT64),
                        ST_FLOAT64);
        r = n_binary(k, ST_OP_ADD, lo, n_cast(k, f, ST_INT64), ST_INT64);
        r = n_cast(k, r, odt);
        break;
    }
    default:
        st_err(ST_ERR_RUNTIME, "lower: %s is not a creation op",
               st_op(s->op)->name);
        return -1;
    }
    return r;
}

/* ---- reductions ---- */

static st_status lower_reduce(st_kernel *k, const st_graph *g,
                              const st_stmt *s)
{
    const st_meta *im = vmeta(g, s->in[0]);
    const st_meta *om = vmeta(g, s->out[0]);
    int n = im->ndim;
    bool red[ST_MAX_DIMS] = {false};
    if (s->attrs.ndims == 0) {
        for (int d = 0; d < n; d++)
            red[d] = true;
    } else {
        for (int i = 0; i < s->attrs.ndims; i++) {
            int64_t d = s->attrs.dims[i];
            if (st_wrap_dim(st_op(s->op)->name, &d, n) != ST_OK)
                return st_err_kind();
            if (n > 0)
                red[d] = true;
        }
    }
    int perm[ST_MAX_DIMS], nk = 0, nred = 0;
    for (int d = 0; d < n; d++)
        if (!red[d])
            perm[nk++] = d;
    for (int d = 0; d < n; d++)
        if (red[d])
            perm[nk + nred++] = d;
    bool keep = s->attrs.flags & ST_ATTR_KEEPDIM;
    k->kind = ST_K_REDUCE;
    k->nreduce = 1;
    k->rank = n;
    k->nred = nred;

    int idm[ST_MAX_DIMS], odm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        idm[d] = odm[d] = -1;
    for (int d = 0; d < n; d++)
        idm[d] = perm[d];
    for (int d = 0; d < nk; d++)
        odm[d] = keep ? perm[d] : d;
    if (om->ndim != (keep ? n : nk) && !(s->op == ST_OP_ARGMAX ||
                                           s->op == ST_OP_ARGMIN))
        return st_err(ST_ERR_RUNTIME, "lower: %s output rank %d does not "
                      "match input rank %d with %d reduced dims",
                      st_op(s->op)->name, om->ndim, n, nred);
    int ib = add_buf(k, s->in[0], im->dtype, false, idm);
    int ob = add_buf(k, s->out[0], om->dtype, true, odm);
    if (ib < 0 || ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    for (int d = 0; d < n; d++) {
        k->size_buf[d] = ib;
        k->size_dim[d] = perm[d];
    }

    st_reduce_op rop;
    st_dtype sdt, rdt;
    st_status st = st_fuse_reduce_types(g, s, &rop, &sdt, &rdt);
    if (st != ST_OK)
        return st;
    k->reduce[0].op = rop;
    k->reduce[0].src = n_cast(k, n_load(k, ib, -1, -1), sdt);
    if (k->reduce[0].src < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    st_knode rn = node0(ST_KN_REDUCED, rdt);
    rn.phase = 1;
    int r = add_node(k, rn);
    return add_store(k, ob, n_cast(k, r, om->dtype));
}

st_status st_fuse_reduce_types(const st_graph *g, const st_stmt *s,
                               st_reduce_op *op, st_dtype *src_dt,
                               st_dtype *res_dt)
{
    const st_meta *im = vmeta(g, s->in[0]);
    const st_meta *om = vmeta(g, s->out[0]);
    st_reduce_op rop;
    st_dtype sdt = im->dtype, rdt;
    bool intlike = !st_dtype_is_float(im->dtype);
    switch (s->op) {
    case ST_OP_SUM: rop = ST_RED_SUM; break;
    case ST_OP_PROD: rop = ST_RED_PROD; break;
    case ST_OP_MEAN: rop = ST_RED_MEAN; break;
    case ST_OP_AMAX: rop = ST_RED_MAX; break;
    case ST_OP_AMIN: rop = ST_RED_MIN; break;
    case ST_OP_ARGMAX: rop = ST_RED_ARGMAX; break;
    case ST_OP_ARGMIN: rop = ST_RED_ARGMIN; break;
    default:
        return st_err(ST_ERR_RUNTIME, "lower: %s is not a reduction",
                      st_op(s->op)->name);
    }
    if ((rop == ST_RED_SUM || rop == ST_RED_PROD) && intlike)
        sdt = ST_INT64;
    else if (rop == ST_RED_MEAN && intlike)
        sdt = st_dtype_is_float(om->dtype) ? om->dtype : ST_INT64;
    rdt = (rop == ST_RED_ARGMAX || rop == ST_RED_ARGMIN) ? ST_INT64 : sdt;
    *op = rop;
    *src_dt = sdt;
    *res_dt = rdt;
    return ST_OK;
}

/* ---- matmul ---- */

static st_status lower_matmul(st_kernel *k, const st_graph *g,
                              const st_stmt *s)
{
    const st_meta *am = vmeta(g, s->in[0]), *bm = vmeta(g, s->in[1]);
    const st_meta *cm = vmeta(g, s->out[0]);
    int a = am->ndim, b = bm->ndim, c = cm->ndim;
    if (a < 2 || b < 2 || c < 2)
        return st_err(ST_ERR_RUNTIME, "lower: matmul expects operands of rank "
                      ">= 2 after decomposition, got %d and %d", a, b);
    int nb = c - 2;
    k->kind = ST_K_MATMUL;
    k->rank = nb + 3;
    int adm[ST_MAX_DIMS], bdm[ST_MAX_DIMS], cdm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        adm[d] = bdm[d] = cdm[d] = -1;
    for (int j = 0; j < nb; j++) {
        int ja = j - (nb - (a - 2)), jb = j - (nb - (b - 2));
        adm[j] = ja >= 0 ? ja : -1;
        bdm[j] = jb >= 0 ? jb : -1;
        cdm[j] = j;
    }
    adm[nb] = a - 2;         /* M */
    adm[nb + 2] = a - 1;     /* K */
    bdm[nb + 1] = b - 1;     /* N */
    bdm[nb + 2] = b - 2;     /* K */
    cdm[nb] = c - 2;
    cdm[nb + 1] = c - 1;
    /* written permuted (attrs dims, fusion/viewfold.c's perm rule): the
     * result's dim i holds the product's dim dims[i] */
    int inv[ST_MAX_DIMS];
    for (int d = 0; d < c; d++)
        inv[d] = d;
    if (s->attrs.ndims == c)
        for (int i = 0; i < c; i++)
            inv[s->attrs.dims[i]] = i;
    for (int j = 0; j < nb + 2; j++)
        cdm[j] = inv[cdm[j]];
    if (add_buf(k, s->in[0], am->dtype, false, adm) != 0 ||
        add_buf(k, s->in[1], bm->dtype, false, bdm) != 1 ||
        add_buf(k, s->out[0], cm->dtype, true, cdm) != 2)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    for (int j = 0; j < nb + 2; j++) {
        k->size_buf[j] = 2;
        k->size_dim[j] = cdm[j];
    }
    k->size_buf[nb + 2] = 0;
    k->size_dim[nb + 2] = a - 1;
    return ST_OK;
}

/* ---- gather, index_select, embedding ---- */

static st_status lower_indexed(st_kernel *k, const st_graph *g,
                               const st_stmt *s)
{
    const st_meta *om = vmeta(g, s->out[0]);
    k->kind = ST_K_ELEMENTWISE;
    k->rank = om->ndim;
    int rank = k->rank;
    int src, idx, dim;
    int sdm[ST_MAX_DIMS], idm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        sdm[d] = idm[d] = -1;
    if (s->op == ST_OP_EMBEDDING) {
        src = s->in[0];
        idx = s->in[1];
        dim = 0;
        if (vmeta(g, src)->ndim != 2 || rank != vmeta(g, idx)->ndim + 1)
            return st_err(ST_ERR_RUNTIME, "lower: embedding expects a 2-D "
                          "weight and an output of the index's rank + 1");
        for (int d = 0; d < rank - 1; d++)
            idm[d] = d;
        sdm[rank - 1] = 1;
    } else {
        src = s->in[0];
        idx = s->in[1];
        int64_t d64 = s->attrs.i[0];
        if (st_wrap_dim(st_op(s->op)->name, &d64, vmeta(g, src)->ndim) != ST_OK)
            return st_err_kind();
        dim = (int)d64;
        if (rank != vmeta(g, src)->ndim)
            return st_err(ST_ERR_RUNTIME, "lower: %s output rank %d differs "
                          "from the input's %d", st_op(s->op)->name, rank,
                          vmeta(g, src)->ndim);
        for (int d = 0; d < rank; d++)
            sdm[d] = d == dim ? -1 : d;
        if (s->op == ST_OP_GATHER) {
            for (int d = 0; d < rank; d++)
                idm[d] = d;
        } else if (vmeta(g, idx)->ndim > 0 && rank > 0) {
            idm[dim] = 0;
        }
    }
    int sb = add_buf(k, src, vmeta(g, src)->dtype, false, sdm);
    int ib = add_buf(k, idx, vmeta(g, idx)->dtype, false, idm);
    int ob = out_buf(k, g, s);
    if (sb < 0 || ib < 0 || ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    sizes_from(k, ob);
    int li = n_load(k, ib, -1, -1);
    if (li < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    int lx = n_load(k, sb, dim, li);
    return add_store(k, ob, n_cast(k, lx, om->dtype));
}

/* ---- scatter_add and scatter: two kernels ----
 * First (in the statement's own slot): out = copy of self, elementwise.
 * Second: over index's iteration space, out[.. index[p] ..] += src[p]
 * (scatter: = src[p]), an indexed (accumulating) store into the same graph
 * value (the executor finds it bound by the first kernel and reuses it). */

static st_status lower_scatter_copy(st_kernel *k, const st_graph *g,
                                    const st_stmt *s)
{
    const st_meta *om = vmeta(g, s->out[0]);
    k->kind = ST_K_ELEMENTWISE;
    k->rank = om->ndim;
    int dm[ST_MAX_DIMS];
    identity_map(dm, k->rank);
    int sb = add_buf(k, s->in[0], vmeta(g, s->in[0])->dtype, false, dm);
    int ob = out_buf(k, g, s);
    if (sb < 0 || ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    sizes_from(k, ob);
    return add_store(k, ob, n_cast(k, n_load(k, sb, -1, -1), om->dtype));
}

static st_status lower_scatter_add(st_kernel *k, const st_graph *g,
                                   const st_stmt *s)
{
    const st_meta *om = vmeta(g, s->out[0]), *im = vmeta(g, s->in[1]);
    const st_meta *sm = vmeta(g, s->in[2]);
    const char *fn = st_op(s->op)->name;
    int64_t d64 = s->attrs.i[0];
    if (st_wrap_dim(fn, &d64, om->ndim) != ST_OK)
        return st_err_kind();
    int dim = (int)d64;
    /* one rank, a 0-d tensor counting as 1-d (as in inference) */
    int ro = om->ndim ? om->ndim : 1, ri = im->ndim ? im->ndim : 1;
    int rs = sm->ndim ? sm->ndim : 1;
    if (ri != ro || rs != ro)
        return st_err(ST_ERR_RUNTIME, "lower: %s expects self, index "
                      "and src of one rank, got %d, %d and %d", fn, om->ndim,
                      im->ndim, sm->ndim);
    k->kind = ST_K_ELEMENTWISE;
    k->rank = im->ndim;
    int dm[ST_MAX_DIMS], odm[ST_MAX_DIMS];
    identity_map(dm, k->rank);
    identity_map(odm, k->rank);
    if (k->rank > 0)
        odm[dim] = -1;
    int ib = add_buf(k, s->in[1], im->dtype, false, dm);
    int sb = add_buf(k, s->in[2], sm->dtype, false, dm);
    int ob = add_buf(k, s->out[0], om->dtype, true, odm);
    if (ib < 0 || sb < 0 || ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    sizes_from(k, ib);
    int li = n_load(k, ib, -1, -1);
    int ls = n_cast(k, n_load(k, sb, -1, -1), om->dtype);
    st_status st = add_store(k, ob, ls);
    if (st != ST_OK || li < 0)
        return st != ST_OK ? st : st_err_kind() ? st_err_kind()
                                                : ST_ERR_RUNTIME;
    int q = k->nstores - 1;
    k->stores[q].indexed = true;
    k->stores[q].idx_dim = dim;
    k->stores[q].idx_node = li;
    k->stores[q].accumulate = s->op == ST_OP_SCATTER_ADD;
    return ST_OK;
}

/* ---- slice_scatter: two kernels ----
 * First: out = copy of base (lower_scatter_copy). Second: src stored into
 * out's slice (st_fuse_lower_slab), a plain strided copy whose output
 * buffer the executor binds as the slice (st_kbuf.slab). Called again on
 * the same kernel, it adds another such copy over the same space (the
 * first store's source gives the sizes: the caller ensures the sources
 * are of one shape). */

st_status st_fuse_lower_slab(st_kernel *k, const st_graph *g, int src,
                             const int *dst_dim, int dst, int slab_si)
{
    const st_meta *sm = vmeta(g, src), *om = vmeta(g, dst);
    bool first = k->nstores == 0;
    if (!first && (k->kind != ST_K_ELEMENTWISE || k->rank != sm->ndim))
        return st_err(ST_ERR_RUNTIME, "lower: slab of statement %d is not of "
                      "kernel %s's rank", slab_si, k->name);
    k->kind = ST_K_ELEMENTWISE;
    k->rank = sm->ndim;
    int odm[ST_MAX_DIMS];
    for (int d = 0; d < ST_MAX_DIMS; d++)
        odm[d] = d < k->rank ? dst_dim[d] : -1;
    int ld = ew_operand(k, g, src);
    if (ld < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    int sb = k->nodes[ld].kind == ST_KN_LOAD ? k->nodes[ld].buf : -1;
    int ob = add_buf(k, dst, om->dtype, true, odm);
    if (ob < 0)
        return st_err_kind() ? st_err_kind() : ST_ERR_RUNTIME;
    k->bufs[ob].slab = true;
    k->bufs[ob].slab_stmt = slab_si;
    if (k->rank > 0 && sb < 0)
        return st_err(ST_ERR_RUNTIME, "lower: slab of statement %d stores a "
                      "constant of rank %d", slab_si, k->rank);
    if (sb >= 0 && first)
        sizes_from(k, sb);
    return add_store(k, ob, n_cast(k, ld, om->dtype));
}

bool st_fuse_is_scatter(const st_stmt *s)
{
    return s->op == ST_OP_SCATTER_ADD || s->op == ST_OP_SCATTER ||
           s->op == ST_OP_SLICE_SCATTER;
}

int st_fuse_stmt_parts(const st_stmt *s)
{
    return st_fuse_is_scatter(s) ? 2 : 1;
}

static st_status lower_part1(st_kernel *k, const st_graph *g, int si)
{
    const st_stmt *s = &g->stmts[si];
    if (s->op != ST_OP_SLICE_SCATTER)
        return lower_scatter_add(k, g, s);
    int dm[ST_MAX_DIMS];
    identity_map(dm, ST_MAX_DIMS);
    return st_fuse_lower_slab(k, g, s->in[1], dm, s->out[0], si);
}

/* ---- driver ---- */

static st_status lower_stmt(st_kernel *k, const st_graph *g, int si)
{
    const st_stmt *s = &g->stmts[si];
    const st_op_def *def = st_op(s->op);
    if (!def)
        return st_err(ST_ERR_RUNTIME, "lower: unknown op %d", (int)s->op);
    switch (def->kind) {
    case ST_OPK_VIEW:
        k->kind = ST_K_VIEW;
        k->rank = 0;
        k->stmt = si;
        return ST_OK;
    case ST_OPK_UNARY:
    case ST_OPK_BINARY:
    case ST_OPK_TERNARY:
    case ST_OPK_COPY:
        return lower_elementwise(k, g, s);
    case ST_OPK_CREATE:
    case ST_OPK_RANDOM:
        return lower_create(k, g, s);
    case ST_OPK_REDUCE:
        return lower_reduce(k, g, s);
    case ST_OPK_MATMUL:
        return lower_matmul(k, g, s);
    case ST_OPK_GATHER:
        if (st_fuse_is_scatter(s))
            return lower_scatter_copy(k, g, s);
        return lower_indexed(k, g, s);
    case ST_OPK_COMPOSITE:
        if (s->op == ST_OP_EMBEDDING)
            return lower_indexed(k, g, s);
        return st_err(ST_ERR_RUNTIME, "lower: composite op %s was not "
                      "decomposed", def->name);
    }
    return st_err(ST_ERR_RUNTIME, "lower: op %s has no lowering", def->name);
}

void st_kprog_free(st_kprog *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nkernels; i++)
        st_kernel_clear(&p->kernels[i]);
    free(p->kernels);
    st_fuse_plan_cache_clear(p);
    if (p->graph)
        st_ir_graph_free(p->graph);
    free(p);
}

st_status st_fuse_lower_stmt(st_kernel *k, const st_graph *g, int si,
                             int part)
{
    const st_stmt *s = &g->stmts[si];
    snprintf(k->name, sizeof k->name, "k%d%s_%s", si, part ? "b" : "",
             st_op(s->op)->name);
    k->src_stmt = si;
    k->stmt = -1;
    k->reduce[0].src = -1;
    k->nred = 0;
    st_status st = part ? lower_part1(k, g, si) : lower_stmt(k, g, si);
    if (st != ST_OK && st_err_kind() == ST_OK)
        st = st_err(ST_ERR_RUNTIME, "lower: statement %d (%s) failed", si,
                    st_op(s->op)->name);
    for (int d = k->rank; d < ST_MAX_DIMS; d++) {
        k->size_buf[d] = -1;
        k->size_dim[d] = -1;
    }
    return st;
}

st_kprog *st_fuse_lower_unfused(st_graph *dg)
{
    if (!dg)
        return NULL;
    st_kprog *p = calloc(1, sizeof *p);
    if (!p) {
        st_ir_graph_free(dg);
        st_err(ST_ERR_MEMORY, "lower: out of memory");
        return NULL;
    }
    p->graph = dg;
    /* one kernel per statement, two for the scatters */
    int nk = 0;
    for (int si = 0; si < dg->nstmts; si++)
        nk += st_fuse_stmt_parts(&dg->stmts[si]);
    if (nk > 0) {
        p->kernels = calloc((size_t)nk, sizeof *p->kernels);
        if (!p->kernels) {
            st_kprog_free(p);
            st_err(ST_ERR_MEMORY, "lower: out of memory");
            return NULL;
        }
        p->cap_kernels = nk;
    }
    for (int si = 0; si < dg->nstmts; si++) {
        const st_stmt *s = &dg->stmts[si];
        int parts = st_fuse_stmt_parts(s);
        for (int part = 0; part < parts; part++) {
            st_kernel *k = &p->kernels[p->nkernels];
            st_kernel_init(k, ST_K_ELEMENTWISE, 0);
            p->nkernels++; /* counted now so that free clears it on failure */
            if (st_fuse_lower_stmt(k, dg, si, part) != ST_OK) {
                st_kprog_free(p);
                return NULL;
            }
        }
    }
    return p;
}
