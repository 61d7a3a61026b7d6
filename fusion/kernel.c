/* fusion/kernel.c - kernel IR helpers: initialization, node and buffer
 * construction, the readable dump (st_kernel_print) and the structural hash
 * (st_kernel_hash) that keys compiled kernels. Owns: st_kernel_init,
 * st_kernel_clear, st_kernel_node, st_kernel_add_buf, st_kernel_print,
 * st_kernel_slab_args, st_kernel_hash, st_kernel_row_frames,
 * st_kernel_outer_stores. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "st_kernel.h"

void st_kernel_init(st_kernel *k, st_kernel_kind kind, int rank)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->rank = rank;
    for (int r = 0; r < ST_K_MAX_REDUCE; r++)
        k->reduce[r].src = -1;
    k->nreduce = kind == ST_K_REDUCE ? 1 : 0; /* one reduction unless set */
    k->src_stmt = -1;
    k->stmt = -1;
    for (int b = 0; b < ST_K_MAX_BUFS; b++)
        for (int d = 0; d < ST_MAX_DIMS; d++)
            k->bufs[b].dimmap[d] = -1;
}

void st_kernel_clear(st_kernel *k)
{
    free(k->nodes);
    k->nodes = NULL;
    k->nnodes = 0;
    k->cap_nodes = 0;
}

int st_kernel_node(st_kernel *k, const st_knode *n)
{
    if (k->nnodes == k->cap_nodes) {
        int cap = k->cap_nodes ? 2 * k->cap_nodes : 16;
        st_knode *nn = realloc(k->nodes, (size_t)cap * sizeof *nn);
        if (!nn) {
            st_err(ST_ERR_MEMORY, "out of memory growing kernel nodes");
            return -1;
        }
        k->nodes = nn;
        k->cap_nodes = cap;
    }
    k->nodes[k->nnodes] = *n;
    return k->nnodes++;
}

int st_kernel_add_buf(st_kernel *k, int value, st_dtype dt, bool is_out,
                      const int *dimmap)
{
    if (k->nbufs >= ST_K_MAX_BUFS) {
        st_err(ST_ERR_RUNTIME, "kernel %s: more than %d buffers", k->name,
               ST_K_MAX_BUFS);
        return -1;
    }
    st_kbuf *b = &k->bufs[k->nbufs];
    memset(b, 0, sizeof *b);
    b->value = value;
    b->dtype = dt;
    b->is_out = is_out;
    for (int d = 0; d < ST_MAX_DIMS; d++)
        b->dimmap[d] = (dimmap && d < k->rank) ? dimmap[d] : -1;
    return k->nbufs++;
}

/* ---- printing ---- */

/* Names of the elementwise ops (UNARY/BINARY nodes); kept here so the dump
 * does not depend on the op registry. */
static const char *elt_name(int op)
{
    static const char *names[] = {
        [ST_OP_NEG] = "neg", [ST_OP_EXP] = "exp", [ST_OP_LOG] = "log",
        [ST_OP_SQRT] = "sqrt", [ST_OP_RSQRT] = "rsqrt", [ST_OP_TANH] = "tanh",
        [ST_OP_SIGMOID] = "sigmoid", [ST_OP_RELU] = "relu",
        [ST_OP_ERF] = "erf", [ST_OP_ABS] = "abs",
        [ST_OP_LOGICAL_NOT] = "logical_not", [ST_OP_SIN] = "sin",
        [ST_OP_COS] = "cos", [ST_OP_RECIPROCAL] = "reciprocal",
        [ST_OP_FLOOR] = "floor", [ST_OP_CEIL] = "ceil",
        [ST_OP_ROUND] = "round", [ST_OP_SIGN] = "sign", [ST_OP_CAST] = "cast",
        [ST_OP_ADD] = "add", [ST_OP_SUB] = "sub", [ST_OP_MUL] = "mul",
        [ST_OP_DIV] = "div", [ST_OP_POW] = "pow", [ST_OP_MAXIMUM] = "maximum",
        [ST_OP_MINIMUM] = "minimum", [ST_OP_EQ] = "eq", [ST_OP_NE] = "ne",
        [ST_OP_LT] = "lt", [ST_OP_LE] = "le", [ST_OP_GT] = "gt",
        [ST_OP_GE] = "ge", [ST_OP_LOGICAL_AND] = "logical_and",
        [ST_OP_LOGICAL_OR] = "logical_or",
        [ST_OP_FLOOR_DIVIDE] = "floor_divide",
        [ST_OP_REMAINDER] = "remainder",
    };
    if (op >= 0 && op < (int)(sizeof names / sizeof names[0]) && names[op])
        return names[op];
    return NULL;
}

static const char *dt_name(st_dtype t)
{
    if ((int)t >= 0 && t < ST_NDTYPES)
        return st_dtype_name(t);
    return "?";
}

static const char *red_name(st_reduce_op r)
{
    static const char *names[] = {"sum", "mean", "max", "min", "argmax",
                                  "argmin", "prod"};
    if ((int)r >= 0 && r <= ST_RED_PROD)
        return names[r];
    return "?";
}

static const char *kind_name(st_kernel_kind k)
{
    switch (k) {
    case ST_K_ELEMENTWISE: return "elementwise";
    case ST_K_REDUCE: return "reduce";
    case ST_K_MATMUL: return "matmul";
    case ST_K_VIEW: return "view";
    }
    return "?";
}

typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt,
                          ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = true;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
}

static void print_node(sbuf *b, const st_kernel *k, int i)
{
    const st_knode *n = &k->nodes[i];
    sb_printf(b, "  n%d = ", i);
    switch (n->kind) {
    case ST_KN_LOAD:
        if (n->idx_dim >= 0)
            sb_printf(b, "load(buf%d, dim%d=n%d)", n->buf, n->idx_dim, n->a);
        else
            sb_printf(b, "load(buf%d)", n->buf);
        break;
    case ST_KN_PARAM:
        sb_printf(b, "param(p%d)", n->buf);
        break;
    case ST_KN_CONST:
        if (st_dtype_is_float(n->dtype))
            sb_printf(b, "const(%.17g)", n->f);
        else
            sb_printf(b, "const(%lld)", (long long)n->i);
        break;
    case ST_KN_UNARY: {
        const char *nm = elt_name(n->op);
        if (nm)
            sb_printf(b, "%s(n%d)", nm, n->a);
        else
            sb_printf(b, "op%d(n%d)", n->op, n->a);
        break;
    }
    case ST_KN_BINARY: {
        const char *nm = elt_name(n->op);
        if (nm)
            sb_printf(b, "%s(n%d, n%d)", nm, n->a, n->b);
        else
            sb_printf(b, "op%d(n%d, n%d)", n->op, n->a, n->b);
        break;
    }
    case ST_KN_WHERE:
        sb_printf(b, "where(n%d, n%d, n%d)", n->a, n->b, n->c);
        break;
    case ST_KN_CAST:
        sb_printf(b, "cast(n%d)", n->a);
        break;
    case ST_KN_INDEX:
        if (n->i < 0)
            sb_printf(b, "index(linear)");
        else
            sb_printf(b, "index(d%lld)", (long long)n->i);
        break;
    case ST_KN_RAND:
        sb_printf(b, "%s()", n->i == 1 ? "randn" : "rand");
        break;
    case ST_KN_REDUCED:
        if (k->kind == ST_K_MATMUL)
            sb_printf(b, "reduced(product)");
        else if (n->i >= 0 && n->i < ST_K_MAX_REDUCE)
            sb_printf(b, "reduced%lld(%s)", (long long)n->i,
                      red_name(k->reduce[n->i].op));
        else
            sb_printf(b, "reduced%lld(?)", (long long)n->i);
        break;
    default:
        sb_printf(b, "?kind%d", (int)n->kind);
        break;
    }
    if (n->phase != 0)
        sb_printf(b, " : %s  [phase %d]\n", dt_name(n->dtype), n->phase);
    else
        sb_printf(b, " : %s\n", dt_name(n->dtype));
}

char *st_kernel_print(const st_kernel *k)
{
    sbuf b = {0};
    sb_printf(&b, "kernel %s: %s rank %d", k->name[0] ? k->name : "?",
              kind_name(k->kind), k->rank);
    if (k->kind == ST_K_REDUCE)
        sb_printf(&b, " nred %d nreduce %d%s", k->nred, k->nreduce,
                  k->final_per_point ? " per-point epilogue"
                                     : " per-outer epilogue");
    if (k->kind == ST_K_VIEW)
        sb_printf(&b, " stmt %d", k->stmt);
    if (k->src_stmt >= 0)
        sb_printf(&b, " (stmt %d)", k->src_stmt);
    sb_printf(&b, "\n  sizes: [");
    for (int d = 0; d < k->rank && d < ST_MAX_DIMS; d++)
        sb_printf(&b, "%sbuf%d.dim%d", d ? ", " : "", k->size_buf[d],
                  k->size_dim[d]);
    sb_printf(&b, "]\n");
    for (int i = 0; i < k->nbufs && i < ST_K_MAX_BUFS; i++) {
        const st_kbuf *kb = &k->bufs[i];
        sb_printf(&b, "  buf%d: %s %s value %d dimmap [", i,
                  kb->is_out ? "out" : "in", dt_name(kb->dtype), kb->value);
        for (int d = 0; d < k->rank && d < ST_MAX_DIMS; d++)
            sb_printf(&b, "%s%d", d ? ", " : "", kb->dimmap[d]);
        sb_printf(&b, "]%s", kb->contiguous ? " contiguous" : " strided");
        if (kb->unravel > 0)
            sb_printf(&b, " unravel %d (as value %d)", kb->unravel, kb->view_value);
        if (kb->slab)
            sb_printf(&b, " slab of stmt %d", kb->slab_stmt);
        sb_printf(&b, "\n");
    }
    for (int i = 0; i < k->nnodes; i++)
        print_node(&b, k, i);
    if (k->kind == ST_K_REDUCE)
        for (int r = 0; r < (k->nreduce < 1 ? 1 : k->nreduce) &&
                        r < ST_K_MAX_REDUCE; r++)
            sb_printf(&b, "  reduce%d: %s(n%d) over last %d dims\n", r,
                      red_name(k->reduce[r].op), k->reduce[r].src, k->nred);
    for (int s = 0; s < k->nstores && s < ST_K_MAX_STORES; s++) {
        if (k->stores[s].indexed)
            sb_printf(&b, "  store buf%d[dim %d = n%d] %s n%d\n",
                      k->stores[s].buf, k->stores[s].idx_dim,
                      k->stores[s].idx_node,
                      k->stores[s].accumulate ? "+=" : "<-", k->stores[s].node);
        else
            sb_printf(&b, "  store buf%d %s n%d\n", k->stores[s].buf,
                      k->stores[s].accumulate ? "+=" : "<-",
                      k->stores[s].node);
    }
    for (int p = 0; p < k->nparams && p < ST_K_MAX_PARAMS; p++) {
        int src = k->param_value[p];
        sb_printf(&b, "  param p%d: %s from ", p, dt_name(k->param_dtype[p]));
        switch (src) {
        case ST_KPARAM_ATTR_F0: sb_printf(&b, "attrs.f[0]"); break;
        case ST_KPARAM_ATTR_F1: sb_printf(&b, "attrs.f[1]"); break;
        case ST_KPARAM_ATTR_I0: sb_printf(&b, "attrs.i[0]"); break;
        case ST_KPARAM_ATTR_I1: sb_printf(&b, "attrs.i[1]"); break;
        default: sb_printf(&b, "value %d", src); break;
        }
        if (src < 0 && k->param_stmt[p] != k->src_stmt)
            sb_printf(&b, " of stmt %d", k->param_stmt[p]);
        sb_printf(&b, "\n");
    }
    if (k->uses_rng)
        sb_printf(&b, k->rng_replay ? "  uses rng (replays stmt %d's draw)\n"
                                    : "  uses rng\n", k->rng_stmt);
    if (b.oom) {
        free(b.s);
        st_err(ST_ERR_MEMORY, "out of memory printing a kernel");
        return NULL;
    }
    if (!b.s) {
        b.s = malloc(1);
        if (!b.s) {
            st_err(ST_ERR_MEMORY, "out of memory printing a kernel");
            return NULL;
        }
        b.s[0] = 0;
    }
    return b.s;
}

/* ---- hashing: a canonical stream of int64 words into XXH3_64bits ---- */

typedef struct {
    XXH3_state_t st;
} hbuf;

static void hw(hbuf *h, int64_t v)
{
    XXH3_64bits_update(&h->st, &v, sizeof v);
}

static void hwf(hbuf *h, double f)
{
    int64_t v;
    memcpy(&v, &f, sizeof v);
    hw(h, v);
}

st_status st_kernel_slab_args(const st_kbuf *kb, int rank, const st_graph *g,
                              int ndim, const int64_t *shape,
                              const int64_t *strides, st_karg_buf *ab)
{
    if (!g || kb->slab_stmt < 0 || kb->slab_stmt >= g->nstmts ||
        g->stmts[kb->slab_stmt].op != ST_OP_SLICE_SCATTER)
        return st_err(ST_ERR_RUNTIME, "kernel buffer: slab of statement %d, "
                      "which is no slice_scatter", kb->slab_stmt);
    const st_attrs *a = &g->stmts[kb->slab_stmt].attrs;
    int64_t d = a->i[0] < 0 ? a->i[0] + ndim : a->i[0];
    int64_t start = a->i[1], stop = a->i[2], step = a->i[3];
    if (d < 0 || d >= ndim || step <= 0)
        return st_err(ST_ERR_RUNTIME, "kernel buffer: slab dim %lld step %lld "
                      "of a rank-%d tensor", (long long)a->i[0],
                      (long long)step, ndim);
    st_slice_bounds(shape[d], &start, &stop, step);
    ab->data += (ptrdiff_t)(start * strides[d]) *
                (ptrdiff_t)st_dtype_size(kb->dtype);
    for (int it = 0; it < rank; it++)
        if (kb->dimmap[it] == d)
            ab->strides[it] = strides[d] * step;
    return ST_OK;
}

uint64_t st_kernel_hash(const st_kernel *k)
{
    hbuf h;
    XXH3_64bits_reset(&h.st);
    int rank = k->rank < 0 ? 0 : (k->rank > ST_MAX_DIMS ? ST_MAX_DIMS
                                                         : k->rank);
    hw(&h, 0x53544b31); /* "STK1": format version */
    hw(&h, k->kind);
    hw(&h, k->rank);
    hw(&h, k->kind == ST_K_REDUCE ? k->nred : 0);
    for (int d = 0; d < rank; d++) {
        hw(&h, k->size_buf[d]);
        hw(&h, k->size_dim[d]);
    }
    hw(&h, k->nbufs);
    for (int i = 0; i < k->nbufs && i < ST_K_MAX_BUFS; i++) {
        const st_kbuf *b = &k->bufs[i];
        hw(&h, b->dtype);
        hw(&h, b->is_out);
        for (int d = 0; d < rank; d++)
            hw(&h, b->dimmap[d]);
        hw(&h, b->contiguous);
        hw(&h, b->unravel);
    }
    hw(&h, k->nnodes);
    for (int i = 0; i < k->nnodes; i++) {
        const st_knode *n = &k->nodes[i];
        hw(&h, n->kind);
        hw(&h, n->dtype);
        hw(&h, n->phase);
        switch (n->kind) {
        case ST_KN_LOAD:
            hw(&h, n->buf);
            hw(&h, n->idx_dim);
            hw(&h, n->idx_dim >= 0 ? n->a : -1);
            break;
        case ST_KN_PARAM:
            hw(&h, n->buf);
            break;
        case ST_KN_CONST:
            if (st_dtype_is_float(n->dtype))
                hwf(&h, n->f);
            else
                hw(&h, n->i);
            break;
        case ST_KN_UNARY:
            hw(&h, n->op);
            hw(&h, n->a);
            break;
        case ST_KN_BINARY:
            hw(&h, n->op);
            hw(&h, n->a);
            hw(&h, n->b);
            break;
        case ST_KN_WHERE:
            hw(&h, n->a);
            hw(&h, n->b);
            hw(&h, n->c);
            break;
        case ST_KN_CAST:
            hw(&h, n->a);
            break;
        case ST_KN_INDEX:
        case ST_KN_RAND:
            hw(&h, n->i);
            break;
        case ST_KN_REDUCED:
            hw(&h, n->i);
            break;
        default:
            hw(&h, n->a);
            hw(&h, n->b);
            hw(&h, n->c);
            hw(&h, n->op);
            hw(&h, n->buf);
            hw(&h, n->idx_dim);
            hwf(&h, n->f);
            hw(&h, n->i);
            break;
        }
    }
    if (k->kind == ST_K_REDUCE) {
        int nr = k->nreduce < 1 ? 1 : k->nreduce;
        if (nr > ST_K_MAX_REDUCE)
            nr = ST_K_MAX_REDUCE;
        hw(&h, nr);
        for (int r = 0; r < nr; r++) {
            hw(&h, k->reduce[r].op);
            hw(&h, k->reduce[r].src);
        }
        hw(&h, k->final_per_point);
    }
    hw(&h, k->nstores);
    for (int s = 0; s < k->nstores && s < ST_K_MAX_STORES; s++) {
        hw(&h, k->stores[s].buf);
        hw(&h, k->stores[s].node);
        if (k->stores[s].indexed || k->stores[s].accumulate) {
            hw(&h, 1000 + k->stores[s].indexed + 2 * k->stores[s].accumulate);
            hw(&h, k->stores[s].indexed ? k->stores[s].idx_dim : -1);
            hw(&h, k->stores[s].indexed ? k->stores[s].idx_node : -1);
        }
    }
    hw(&h, k->nparams);
    for (int p = 0; p < k->nparams && p < ST_K_MAX_PARAMS; p++)
        hw(&h, k->param_dtype[p]);
    hw(&h, k->uses_rng);
    return XXH3_64bits_digest(&h.st);
}

/* ---- structural verification (shared by every backend's compile) ---- */

static bool dtype_ok(st_dtype t)
{
    return (int)t >= 0 && t < ST_NDTYPES;
}

st_status st_kernel_verify(const st_kernel *k, int idx, const char *who)
{
#define BAD(...)                                                            \
    do {                                                                    \
        char m_[200];                                                       \
        snprintf(m_, sizeof m_, __VA_ARGS__);                               \
        return st_err(ST_ERR_RUNTIME, "%s: kernel %d (%s): %s", who, idx,    \
                      k->name, m_);                                         \
    } while (0)
    if (k->rank < 0 || k->rank > ST_MAX_DIMS)
        BAD("rank %d out of range", k->rank);
    if (k->nbufs < 0 || k->nbufs > ST_K_MAX_BUFS)
        BAD("%d buffers", k->nbufs);
    if (k->nparams < 0 || k->nparams > ST_K_MAX_PARAMS)
        BAD("%d params", k->nparams);
    if (k->nstores < 0 || k->nstores > ST_K_MAX_STORES)
        BAD("%d stores", k->nstores);
    if (k->nnodes < 0 || (k->nnodes > 0 && !k->nodes))
        BAD("no nodes");
    for (int i = 0; i < k->nbufs; i++) {
        if (!dtype_ok(k->bufs[i].dtype))
            BAD("buffer %d has a bad dtype", i);
        int u = k->bufs[i].unravel;
        if (u < 0 || u > ST_MAX_DIMS)
            BAD("buffer %d unravels %d dims", i, u);
        if (u > 0 && (k->bufs[i].is_out ||
                      (k->kind != ST_K_ELEMENTWISE && k->kind != ST_K_REDUCE)))
            BAD("buffer %d: an unravel load must be an input of an "
                "elementwise or reduce kernel", i);
        for (int n = 0; u > 0 && n < k->nnodes; n++)
            if (k->nodes[n].kind == ST_KN_LOAD && k->nodes[n].buf == i &&
                k->nodes[n].idx_dim >= 0)
                BAD("buffer %d: an unravel load cannot be indexed", i);
        for (int q = 0; u > 0 && q < k->nstores && q < ST_K_MAX_STORES; q++)
            if (k->stores[q].buf == i)
                BAD("buffer %d: an unravel buffer cannot be stored to", i);
        if (k->bufs[i].slab && (!k->bufs[i].is_out || u > 0 ||
                                k->kind == ST_K_MATMUL))
            BAD("buffer %d: a slab is the output of an elementwise or "
                "reduce kernel", i);
        for (int n = 0; k->bufs[i].slab && n < k->nnodes; n++)
            if (k->nodes[n].kind == ST_KN_LOAD && k->nodes[n].buf == i)
                BAD("buffer %d: a slab cannot be loaded", i);
    }
    for (int i = 0; i < k->nparams; i++)
        if (!dtype_ok(k->param_dtype[i]))
            BAD("param %d has a bad dtype", i);
    if (k->kind == ST_K_MATMUL) {
        if (k->rank < 3)
            BAD("matmul rank %d < 3", k->rank);
        if (k->nbufs < 3 && k->nstores == 0)
            BAD("matmul needs 3 buffers");
        if (k->nbufs < 2)
            BAD("matmul needs 2 operands");
    } else if (k->kind == ST_K_REDUCE) {
        if (k->nred < 0 || k->nred > k->rank)
            BAD("nred %d with rank %d", k->nred, k->rank);
        int nr = k->nreduce < 1 ? 1 : k->nreduce;
        if (k->nreduce < 0 || nr > ST_K_MAX_REDUCE)
            BAD("%d reductions", k->nreduce);
        for (int r = 0; r < nr; r++) {
            if ((int)k->reduce[r].op < 0 || k->reduce[r].op > ST_RED_PROD)
                BAD("bad reduce op %d", (int)k->reduce[r].op);
            if (k->reduce[r].src < 0 || k->reduce[r].src >= k->nnodes)
                BAD("bad reduce[%d].src %d", r, k->reduce[r].src);
        }
    } else if (k->kind != ST_K_ELEMENTWISE) {
        BAD("bad kind %d", (int)k->kind);
    }
    for (int i = 0; i < k->nnodes; i++) {
        const st_knode *n = &k->nodes[i];
        if (!dtype_ok(n->dtype))
            BAD("node %d has a bad dtype", i);
        int ops[3], no = 0;
        switch (n->kind) {
        case ST_KN_LOAD:
            if (n->buf < 0 || n->buf >= k->nbufs)
                BAD("node %d loads buffer %d", i, n->buf);
            if (n->idx_dim >= 0)
                ops[no++] = n->a;
            break;
        case ST_KN_PARAM:
            if (n->buf < 0 || n->buf >= k->nparams)
                BAD("node %d reads param %d", i, n->buf);
            break;
        case ST_KN_UNARY:
            if (!(n->op >= ST_OP_NEG && n->op <= ST_OP_CAST))
                BAD("node %d: op %d is not unary", i, n->op);
            ops[no++] = n->a;
            break;
        case ST_KN_CAST:
            ops[no++] = n->a;
            break;
        case ST_KN_BINARY:
            if (!(n->op >= ST_OP_ADD && n->op <= ST_OP_REMAINDER))
                BAD("node %d: op %d is not binary", i, n->op);
            ops[no++] = n->a;
            ops[no++] = n->b;
            break;
        case ST_KN_WHERE:
            ops[no++] = n->a;
            ops[no++] = n->b;
            ops[no++] = n->c;
            break;
        case ST_KN_INDEX:
            if (n->i < -1 || n->i >= k->rank)
                BAD("node %d: index dim %lld", i, (long long)n->i);
            break;
        case ST_KN_RAND:
            if (n->i != 0 && n->i != 1)
                BAD("node %d: rand kind %lld", i, (long long)n->i);
            break;
        case ST_KN_REDUCED:
            if (k->kind == ST_K_ELEMENTWISE)
                BAD("node %d: reduced outside a reduce/matmul kernel", i);
            if (k->kind == ST_K_REDUCE &&
                (n->i < 0 || n->i >= (k->nreduce < 1 ? 1 : k->nreduce)))
                BAD("node %d: reduced(%lld) of %d reductions", i, (long long)n->i,
                    k->nreduce);
            if (k->kind == ST_K_MATMUL && n->i != 0)
                BAD("node %d: matmul reduced(%lld)", i, (long long)n->i);
            break;
        case ST_KN_CONST:
            break;
        default:
            BAD("node %d: bad kind %d", i, (int)n->kind);
        }
        for (int o = 0; o < no; o++)
            if (ops[o] < 0 || ops[o] >= i)
                BAD("node %d: operand %d is not an earlier node", i, ops[o]);
    }
    for (int s = 0; s < k->nstores; s++) {
        if (k->stores[s].buf < 0 || k->stores[s].buf >= k->nbufs)
            BAD("store %d to buffer %d", s, k->stores[s].buf);
        if (k->stores[s].node < 0 || k->stores[s].node >= k->nnodes)
            BAD("store %d of node %d", s, k->stores[s].node);
        if (k->stores[s].indexed &&
            (k->stores[s].idx_node < 0 || k->stores[s].idx_node >= k->nnodes))
            BAD("store %d indexed by node %d", s, k->stores[s].idx_node);
    }
    return ST_OK;
#undef BAD
}

/* ---------------- row frames of a REDUCE kernel ---------------- */

void st_kernel_row_frames(const st_kernel *k, char *red, char *outer)
{
    int ro = k->rank - k->nred;
    for (int i = 0; i < k->nnodes; i++) {
        const st_knode *n = &k->nodes[i];
        bool r = n->kind == ST_KN_REDUCED, o = true;
        if (n->kind == ST_KN_LOAD && n->buf >= 0 && n->buf < k->nbufs)
            for (int d = ro; d < k->rank; d++)
                o &= k->bufs[n->buf].dimmap[d] < 0;
        else if (n->kind == ST_KN_INDEX)
            o = n->i >= 0 && n->i < ro;
        else if (n->kind == ST_KN_RAND)
            o = false;
        int ops[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3; j++)
            if (ops[j] >= 0 && ops[j] < i) {
                r |= red[ops[j]];
                o &= outer[ops[j]];
            }
        red[i] = r;
        outer[i] = o;
    }
}

int st_kernel_outer_stores(const st_kernel *k, bool outer[ST_K_MAX_STORES])
{
    memset(outer, 0, sizeof(bool) * ST_K_MAX_STORES);
    if (k->kind != ST_K_REDUCE || !k->final_per_point || k->nnodes < 1)
        return 0;
    char *red = calloc((size_t)k->nnodes, 1), *oc = calloc((size_t)k->nnodes, 1);
    int n = 0;
    if (red && oc) {
        st_kernel_row_frames(k, red, oc);
        int ro = k->rank - k->nred;
        for (int s = 0; s < k->nstores; s++) {
            int bi = k->stores[s].buf, ni = k->stores[s].node;
            if (k->stores[s].indexed || k->stores[s].accumulate || bi < 0 ||
                bi >= k->nbufs || ni < 0 || ni >= k->nnodes || !oc[ni])
                continue;
            bool rowfree = true;
            for (int d = ro; d < k->rank; d++)
                rowfree &= k->bufs[bi].dimmap[d] < 0;
            outer[s] = rowfree;
            n += rowfree;
        }
    }
    free(red);
    free(oc);
    return n;
}
