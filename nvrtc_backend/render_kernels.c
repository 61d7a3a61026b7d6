/* render_kernels.c - the loop structure of each kernel kind in CUDA C, all
 * kernels of a graph in one translation unit after the prelude:
 * - ELEMENTWISE: a grid-stride loop over linear points; when the kernel
 *   allows it, a 16-byte vector path (each thread VEC consecutive points,
 *   vector loads/stores) that runs when the launch's flags say every
 *   buffer is contiguous and aligned or a broadcast scalar (decided on the
 *   host per launch: st_nvrtc_ew_flags), then the scalar path, a few
 *   points a trip with their loads issued first (walk, below).
 * - REDUCE: rows of the outer space spread over blockIdx.x * blockDim.y +
 *   threadIdx.y, the threads of a row over threadIdx.x (one warp per row
 *   for short rows, a whole block for long ones); each reduction a strided
 *   pass (walk: a few points a trip, loads first) accumulating in double
 *   (float sources) or int64, combined with
 *   warp shuffles and one shared-memory step; then the epilogue per row
 *   point or once per row.
 * - MATMUL: a tiled SIMT kernel (64x64 tile, K step 16, shared-memory
 *   tiles, 4x4 per thread, fused epilogue), and for float16/bfloat16
 *   operands NAME_mma, a tensor-core kernel built on mma.sync m16n8k16
 *   (inline PTX). The _mma variant is compile-checked only: it has NOT
 *   been run on a GPU yet, and st_nvrtc_launch_config never picks it
 *   unless SYMTRACE_CUDA_MMA=1. A MATMUL whose operands cuBLAS takes
 *   also gets NAME_epi: its epilogue alone, over the product cuBLAS wrote
 *   into a scratch buffer (st_nvrtc_gemm_plan decides per launch).
 * - REDUCE, NAME_col (st_nvrtc_col_plan says which kernels get it): the
 *   column variant for reductions over dims that are strided in memory
 *   while the kept dims are contiguous (bias/LayerNorm weight gradients);
 *   ran on an H100 (tests/python/test_gpu.py); SYMTRACE_CUDA_COLREDUCE=0
 *   keeps the row kernel.
 * Owns: st_nvrtc_render, st_nvrtc_kernel_name, st_nvrtc_has_mma,
 * st_nvrtc_vec_width, st_nvrtc_unroll(_reload), st_nvrtc_col_plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_internal.h"

#define SB(...) st_nvrtc_sbf(b, __VA_ARGS__)
#define mty st_nvrtc_mty

void st_nvrtc_kernel_name(const st_kernel *k, int i, char *buf, size_t n)
{
    char nm[40];
    size_t j = 0;
    for (const char *p = k->name; *p && j < sizeof nm - 1; p++)
        nm[j++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9')) ? *p : '_';
    nm[j] = 0;
    snprintf(buf, n, "st_k%d_%s", i, nm);
}

int st_nvrtc_vec_width(const st_kernel *k)
{
    if (k->kind != ST_K_ELEMENTWISE || k->rank < 1 || k->nstores < 1)
        return 1;
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].kind == ST_KN_LOAD && k->nodes[i].idx_dim >= 0)
            return 1;
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].indexed || k->stores[s].accumulate)
            return 1;
    for (int bi = 0; bi < k->nbufs; bi++)
        if (k->bufs[bi].unravel > 0) /* gathered element by element */
            return 1;
    size_t mn = 8;
    for (int bi = 0; bi < k->nbufs; bi++) {
        size_t sz = st_dtype_size(k->bufs[bi].dtype);
        if (sz < mn)
            mn = sz;
    }
    int v = (int)(16 / mn);
    return v > 8 ? 8 : v;
}

bool st_nvrtc_has_mma(const st_kernel *k)
{
    if (k->kind != ST_K_MATMUL || k->nbufs < 2 || k->rank < 3)
        return false;
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype;
    if (ta != tb || (ta != ST_FLOAT16 && ta != ST_BFLOAT16))
        return false;
    /* the product accumulates in float unless the output is float64 */
    return !(k->nstores == 0 && k->nbufs > 2 && k->bufs[2].dtype == ST_FLOAT64);
}

/* ---- shared pieces ---- */

static void pc_init(st_nvrtc_pc *pc, st_nvrtc_sb *b, const st_kernel *k,
                    unsigned char *done)
{
    memset(pc, 0, sizeof *pc);
    pc->b = b;
    pc->k = k;
    pc->done = done;
}

/* st_i64 c<lo>..c<hi-1> = coordinates of linear index x (row-major) */
static void coords(st_nvrtc_sb *b, const char *ind, const char *x, int lo,
                   int hi, const char *tag)
{
    if (hi <= lo)
        return;
    SB("%sst_i64 r%s = %s;\n", ind, tag, x);
    for (int d = hi - 1; d > lo; d--)
        SB("%sconst st_i64 c%d = r%s %% a.shape[%d]; r%s /= a.shape[%d];\n",
           ind, d, tag, d, tag, d);
    SB("%sconst st_i64 c%d = r%s;\n", ind, lo, tag);
}

/* off<b> = base<b> + sum of c<d> * strides over dims [lo, hi) */
static void offsets(st_nvrtc_pc *pc, const char *ind, const char *base,
                    int lo, int hi, const char *name)
{
    st_nvrtc_sb *b = pc->b;
    for (int bi = 0; bi < pc->k->nbufs; bi++) {
        SB("%sconst st_i64 %s%d = %s", ind, name, bi, base ? base : "0");
        if (base)
            SB("%d", bi);
        for (int d = lo; d < hi; d++)
            SB(" + c%d * a.bufs[%d].strides[%d]", d, bi, d);
        SB(";\n");
        snprintf(pc->off[bi], sizeof pc->off[bi], "%s%d", name, bi);
    }
}

static void set_coords(st_nvrtc_pc *pc, int lo, int hi)
{
    for (int d = lo; d < hi && d < ST_MAX_DIMS; d++)
        snprintf(pc->coord[d], sizeof pc->coord[d], "c%d", d);
}

static bool uses_index_dims(const st_kernel *k)
{
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].kind == ST_KN_INDEX && k->nodes[i].i >= 0)
            return true;
    return false;
}

static void product(st_nvrtc_sb *b, const char *name, int lo, int hi)
{
    SB("    const st_i64 %s = (st_i64)1", name);
    for (int d = lo; d < hi; d++)
        SB(" * a.shape[%d]", d);
    SB(";\n");
}

static void kernel_head(st_nvrtc_sb *b, const char *name, int bound)
{
    SB("\nextern \"C\" __global__ void __launch_bounds__(%d)\n"
       "%s(const st_kargs a, unsigned flags, st_kerr *err)\n{\n", bound, name);
}

/* ---- a thread's points, st_nvrtc_unroll() a trip, loads first ----
 * A thread walks points first, first + stride, ... below limit. One point
 * a trip waits a full memory latency per point: every load feeds the next
 * statement. So the walk takes st_nvrtc_unroll() points a trip and first
 * loads, for each of them, every buffer its statements read at the point
 * (into L<b>[j]), then runs the statements per point in order: the loads
 * of a trip are in flight together, and each point's statements (and a
 * reduction's order of accumulation) stay as they were. Loads through an
 * index (gathers) stay in place: they need the index first. */

typedef struct st_walk st_walk;
/* a point's addressing at ind; mode 0: a point a trip, 1: the loads-ahead
 * pass of a trip, 2: the statements pass */
typedef void (*st_walk_point)(st_nvrtc_pc *pc, const st_walk *w, const char *ind, int mode);
struct st_walk {
    const char *var;     /* the point's name: "lin", "pos", "nn_" */
    const char *first, *stride, *limit;
    st_walk_point point;
    int lo, hi;          /* walk_point: coordinate dims of var */
    const char *base;    /* walk_point: offsets from "ob<b>" (row walks), else NULL */
    bool row_lin;        /* walk_point: lin = o * R + pos */
    const char *ahead;   /* extra per-trip array the point fills (NAME_epi's product) */
    int acc, nb;         /* NAME_epi: product type (mm_acc), batch dims */
};

typedef void (*st_walk_body)(st_nvrtc_pc *pc, int r, bool accf);

static _Atomic int unroll_v; /* 0: not read yet */
static _Atomic int row_bound_v;

int st_nvrtc_unroll_reload(void)
{
    const char *e = getenv("SYMTRACE_CUDA_UNROLL");
    int v = e && *e ? atoi(e) : 4;
    v = v < 1 ? 1 : v > 8 ? 8 : v;
    const char *b = getenv("SYMTRACE_CUDA_ROW_BOUND");
    int rb = b && *b ? atoi(b) : 256;
    row_bound_v = rb <= 256 ? 256 : rb <= 512 ? 512 : 1024;
    unroll_v = v;
    return v;
}

int st_nvrtc_unroll(void)
{
    int v = unroll_v;
    return v ? v : st_nvrtc_unroll_reload();
}

int st_nvrtc_row_threads(void)
{
    return st_nvrtc_unroll() > 1 ? row_bound_v : 1024;
}

/* n spaces (n <= 40), a static string */
static const char *spaces(int n)
{
    static const char sp[] = "                                        ";
    int len = (int)sizeof sp - 1;
    return sp + len - (n < 0 ? 0 : n > len ? len : n);
}

static void walk_point(st_nvrtc_pc *pc, const st_walk *w, const char *ind, int mode)
{
    (void)mode;
    st_nvrtc_sb *b = pc->b;
    if (w->row_lin)
        SB("%sconst st_i64 lin = o * R + pos;\n", ind);
    snprintf(pc->lin, sizeof pc->lin, "lin");
    coords(b, ind, w->var, w->lo, w->hi, "q");
    set_coords(pc, w->lo, w->hi);
    offsets(pc, ind, w->base, w->lo, w->hi, "o");
}

/* the buffers body's point loads read (rendered once into a scratch
 * builder and dropped) */
static unsigned walk_loads(st_nvrtc_pc *pc, const st_walk *w, st_walk_body body, int r,
                           bool accf)
{
    st_nvrtc_sb scratch = {0}, *keep = pc->b;
    pc->b = &scratch;
    pc->ind = pc->ind2 = "";
    w->point(pc, w, "", 0);
    st_nvrtc_pt_reset(pc);
    pc->loaded = 0;
    body(pc, r, accf);
    pc->b = keep;
    free(scratch.s);
    return pc->loaded;
}

/* the walk w at indent n; body emits a point's statements (reduction r or
 * the stores) at pc->ind */
static void walk(st_nvrtc_pc *pc, const st_walk *w, int n, st_walk_body body, int r,
                 bool accf)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    const char *ind = spaces(n), *in1 = spaces(n + 4), *in2 = spaces(n + 8);
    unsigned pre = walk_loads(pc, w, body, r, accf);
    int U = st_nvrtc_unroll();
    if ((!pre && !w->ahead) || U == 1) { /* nothing to load ahead: a point a trip */
        SB("%sfor (st_i64 %s = %s; %s < %s; %s += %s) {\n", ind, w->var, w->first, w->var,
           w->limit, w->var, w->stride);
        pc->ind = in1;
        pc->ind2 = in2;
        w->point(pc, w, in1, 0);
        st_nvrtc_pt_reset(pc);
        body(pc, r, accf);
        SB("%s}\n", ind);
        return;
    }
    SB("%sfor (st_i64 %s0 = %s; %s0 < %s; %s0 += %d * (%s)) {\n", ind, w->var, w->first,
       w->var, w->limit, w->var, U, w->stride);
    for (int bi = 0; bi < k->nbufs; bi++)
        if (pre & (1u << bi))
            SB("%s%s L%d[%d];\n", in1, mty(k->bufs[bi].dtype), bi, U);
    if (w->ahead)
        SB("%s%s[%d];\n", in1, w->ahead, U);
    for (int phase = 0; phase < 2; phase++) {
        SB("#pragma unroll\n"
           "%sfor (int j = 0; j < %d; j++) {\n"
           "%sconst st_i64 %s = %s0 + j * (%s);\n"
           "%sif (%s < %s) {\n", in1, U, in2, w->var, w->var, w->stride, in2,
           w->var, w->limit);
        pc->ind = spaces(n + 12);
        pc->ind2 = spaces(n + 16);
        w->point(pc, w, pc->ind, phase + 1);
        if (phase == 0) {
            for (int bi = 0; bi < k->nbufs; bi++)
                if (pre & (1u << bi))
                    st_nvrtc_pt_preload(pc, bi);
        } else {
            st_nvrtc_pt_reset(pc);
            pc->pre = pre;
            body(pc, r, accf);
            pc->pre = 0;
        }
        SB("%s}\n%s}\n", in2, in1);
    }
    SB("%s}\n", ind);
}

/* ---- ELEMENTWISE ---- */

/* a walk's body for the kernel's stores at the point (r < 0), or the
 * update of reduction r's accumulator (acc_update, REDUCE) */
static void acc_update(st_nvrtc_pc *pc, int r, bool accf);
static void point_body(st_nvrtc_pc *pc, int r, bool accf)
{
    if (r >= 0) {
        acc_update(pc, r, accf);
        return;
    }
    for (int s = 0; s < pc->k->nstores; s++)
        st_nvrtc_pt_store(pc, s);
}

static void render_elementwise(st_nvrtc_pc *pc, const char *name)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    int rank = k->rank, vec = st_nvrtc_vec_width(k);
    kernel_head(b, name, 256);
    product(b, "total", 0, rank);
    SB("    const st_i64 step = (st_i64)gridDim.x * blockDim.x;\n"
       "    st_i64 start = (st_i64)blockIdx.x * blockDim.x + threadIdx.x;\n");
    if (vec > 1) {
        bool loaded[ST_K_MAX_BUFS] = {0}, stored[ST_K_MAX_BUFS] = {0};
        for (int i = 0; i < k->nnodes; i++)
            if (k->nodes[i].kind == ST_KN_LOAD)
                loaded[k->nodes[i].buf] = true;
        for (int s = 0; s < k->nstores; s++)
            stored[k->stores[s].buf] = true;
        SB("    if (flags & 1u) { /* every buffer contiguous and aligned, or a scalar */\n"
           "        const st_i64 nv = total / %d;\n"
           "        for (st_i64 t = start; t < nv; t += step) {\n"
           "            const st_i64 p0 = t * %d;\n", vec, vec);
        for (int bi = 0; bi < k->nbufs; bi++) {
            if (loaded[bi]) {
                const char *T = mty(k->bufs[bi].dtype);
                SB("            %s L%d[%d];\n"
                   "            if (flags & %uu) {\n"
                   "#pragma unroll\n"
                   "                for (int j = 0; j < %d; j++) L%d[j] = ((const %s *)a.bufs[%d].data)[0];\n"
                   "            } else {\n"
                   "                st_vload<%s, %d>(L%d, (const %s *)a.bufs[%d].data + p0);\n"
                   "            }\n",
                   T, bi, vec, 2u << bi, vec, bi, T, bi, T, vec, bi, T, bi);
            }
            if (stored[bi])
                SB("            %s S%d[%d];\n", mty(k->bufs[bi].dtype), bi, vec);
        }
        SB("#pragma unroll\n"
           "            for (int j = 0; j < %d; j++) {\n"
           "                const st_i64 lin = p0 + j;\n", vec);
        pc->vec = true;
        pc->ind = "                ";
        pc->ind2 = "                    ";
        snprintf(pc->lin, sizeof pc->lin, "lin");
        memset(pc->coord, 0, sizeof pc->coord);
        if (uses_index_dims(k)) {
            coords(b, pc->ind, "lin", 0, rank, "v");
            set_coords(pc, 0, rank);
        }
        st_nvrtc_pt_reset(pc);
        point_body(pc, -1, false);
        pc->vec = false;
        SB("            }\n");
        for (int bi = 0; bi < k->nbufs; bi++)
            if (stored[bi])
                SB("            st_vstore<%s, %d>((%s *)a.bufs[%d].data + p0, S%d);\n",
                   mty(k->bufs[bi].dtype), vec, mty(k->bufs[bi].dtype), bi, bi);
        SB("        }\n"
           "        start += nv * %d;\n"
           "    }\n", vec);
    }
    memset(pc->coord, 0, sizeof pc->coord);
    const st_walk w = {.var = "lin", .first = "start", .stride = "step", .limit = "total",
                       .point = walk_point, .lo = 0, .hi = rank};
    walk(pc, &w, 4, point_body, -1, false);
    SB("}\n");
}

/* ---- REDUCE ---- */

static void acc_decl(st_nvrtc_sb *b, const st_kernel *k, int r, bool accf)
{
    st_reduce_op op = k->reduce[r].op;
    bool mx = op == ST_RED_MAX || op == ST_RED_ARGMAX;
    bool mn = op == ST_RED_MIN || op == ST_RED_ARGMIN;
    bool arg = op == ST_RED_ARGMAX || op == ST_RED_ARGMIN;
    const char *init;
    if (accf)
        init = op == ST_RED_PROD ? "1.0" : mx ? "__longlong_as_double(0xfff0000000000000ll)"
               : mn ? "__longlong_as_double(0x7ff0000000000000ll)" : "0.0";
    else
        init = op == ST_RED_PROD ? "1ll" : mx ? "(st_i64)0x8000000000000000ull"
               : mn ? "(st_i64)0x7fffffffffffffffull" : "0ll";
    if (arg)
        SB("        %s acc%d; acc%d.v = %s; acc%d.i = 0;\n", accf ? "st_argd" : "st_argi",
           r, r, init, r);
    else
        SB("        %s acc%d = %s;\n", accf ? "double" : "st_i64", r, init);
}

static void acc_update(st_nvrtc_pc *pc, int r, bool accf)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    st_reduce_op op = k->reduce[r].op;
    int src = k->reduce[r].src;
    st_nvrtc_pt_node(pc, src);
    char v[24], x[256];
    snprintf(v, sizeof v, "v%d", src);
    if (accf)
        st_nvrtc_conv(x, v, k->nodes[src].dtype, ST_FLOAT64, false);
    else
        st_nvrtc_as_i(x, v, k->nodes[src].dtype);
    const char *I = pc->ind;
    SB("%sconst %s x_ = %s;\n", I, accf ? "double" : "st_i64", x);
    switch (op) {
    case ST_RED_SUM:
    case ST_RED_MEAN:
        SB(accf ? "%sacc%d += x_;\n" : "%sacc%d = st_iadd(acc%d, x_);\n", I, r, r);
        break;
    case ST_RED_PROD:
        SB(accf ? "%sacc%d *= x_;\n" : "%sacc%d = st_imul(acc%d, x_);\n", I, r, r);
        break;
    case ST_RED_MAX:
    case ST_RED_MIN: {
        const char *c = op == ST_RED_MAX ? ">" : "<";
        if (accf)
            SB("%sif (x_ != x_ || x_ %s acc%d) acc%d = x_;\n", I, c, r, r);
        else
            SB("%sif (x_ %s acc%d) acc%d = x_;\n", I, c, r, r);
        break;
    }
    case ST_RED_ARGMAX:
    case ST_RED_ARGMIN: {
        const char *c = op == ST_RED_ARGMAX ? ">" : "<";
        if (accf)
            SB("%sif (acc%d.v == acc%d.v && (x_ != x_ || x_ %s acc%d.v)) { acc%d.v = x_; acc%d.i = pos; }\n",
               I, r, r, c, r, r, r);
        else
            SB("%sif (x_ %s acc%d.v) { acc%d.v = x_; acc%d.i = pos; }\n", I, c, r, r, r);
        break;
    }
    }
}

static const char *combiner(st_reduce_op op, bool accf)
{
    switch (op) {
    case ST_RED_SUM:
    case ST_RED_MEAN: return accf ? "st_r_sum_d()" : "st_r_sum_i()";
    case ST_RED_PROD: return accf ? "st_r_prod_d()" : "st_r_prod_i()";
    case ST_RED_MAX: return accf ? "st_r_max_d()" : "st_r_max_i()";
    case ST_RED_MIN: return accf ? "st_r_min_d()" : "st_r_min_i()";
    case ST_RED_ARGMAX: return accf ? "st_r_arg_d<true>()" : "st_r_arg_i<true>()";
    default: return accf ? "st_r_arg_d<false>()" : "st_r_arg_i<false>()";
    }
}

/* the loop over the row of outer point o; body: reduction r or stores */
static void row_walk(st_nvrtc_pc *pc, int ro, int r, bool accf)
{
    const st_walk w = {.var = "pos", .first = "threadIdx.x", .stride = "(st_i64)blockDim.x",
                       .limit = "R", .point = walk_point, .lo = ro, .hi = pc->k->rank,
                       .base = "ob", .row_lin = true};
    walk(pc, &w, 8, point_body, r, accf);
}

/* const redR = the reduced value of accR, at indent I (ARGMAX/ARGMIN: the
 * index; MEAN: over R; else the accumulator) */
static void reduced_value(st_nvrtc_pc *pc, int r, st_reduce_op op, bool accf, const char *I)
{
    st_nvrtc_sb *b = pc->b;
    if (op == ST_RED_ARGMAX || op == ST_RED_ARGMIN) {
        SB("%sconst st_i64 red%d = acc%d.i;\n", I, r, r);
        pc->reduced_dt[r] = ST_INT64;
    } else if (op == ST_RED_MEAN) {
        SB("%sconst double red%d = (double)acc%d / (double)R;\n", I, r, r);
        pc->reduced_dt[r] = ST_FLOAT64;
    } else {
        SB("%sconst %s red%d = acc%d;\n", I, accf ? "double" : "st_i64", r, r);
        pc->reduced_dt[r] = accf ? ST_FLOAT64 : ST_INT64;
    }
    snprintf(pc->reduced[r], sizeof pc->reduced[r], "red%d", r);
}

/* The stores made once per outer point (row coordinates 0, offsets ob<b>,
 * linear index o), at indents ind/ind2; skip[s]: a store made elsewhere */
static void outer_stores(st_nvrtc_pc *pc, int ro, const char *ind, const char *ind2,
                         const bool *skip)
{
    const st_kernel *k = pc->k;
    pc->ind = ind;
    pc->ind2 = ind2;
    for (int d = ro; d < ST_MAX_DIMS; d++)
        pc->coord[d][0] = 0;
    for (int bi = 0; bi < k->nbufs; bi++)
        snprintf(pc->off[bi], sizeof pc->off[bi], "ob%d", bi);
    snprintf(pc->lin, sizeof pc->lin, "o");
    st_nvrtc_pt_reset(pc);
    for (int s = 0; s < k->nstores; s++)
        if (!skip || !skip[s])
            st_nvrtc_pt_store(pc, s);
}

static void render_reduce(st_nvrtc_pc *pc, const char *name)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    int rank = k->rank, ro = k->rank - k->nred;
    if (ro < 0 || k->nreduce > ST_K_MAX_REDUCE) {
        snprintf(pc->err, sizeof pc->err, "bad reduction shape (rank %d, nred %d)",
                 rank, k->nred);
        return;
    }
    kernel_head(b, name, st_nvrtc_row_threads());
    SB("    __shared__ __align__(16) unsigned char st_smem[32 * 16];\n");
    product(b, "nouter", 0, ro);
    product(b, "R", ro, rank);
    SB("    for (st_i64 ob_ = (st_i64)blockIdx.x * blockDim.y; ob_ < nouter;\n"
       "         ob_ += (st_i64)gridDim.x * blockDim.y) {\n"
       "        const st_i64 o = ob_ + threadIdx.y;\n"
       "        if (o >= nouter) continue; /* uniform: per warp (warp rows) or block */\n");
    memset(pc->coord, 0, sizeof pc->coord);
    coords(b, "        ", "o", 0, ro, "o");
    set_coords(pc, 0, ro);
    offsets(pc, "        ", NULL, 0, ro, "ob");
    int nreduce = k->nreduce < 1 ? 1 : k->nreduce;
    for (int r = 0; r < nreduce; r++) {
        st_reduce_op op = k->reduce[r].op;
        int src = k->reduce[r].src;
        if (src < 0 || src >= k->nnodes) {
            snprintf(pc->err, sizeof pc->err, "reduction %d: bad source node %d", r, src);
            return;
        }
        bool accf = st_dtype_is_float(k->nodes[src].dtype);
        acc_decl(b, k, r, accf);
        row_walk(pc, ro, r, accf);
        SB("        acc%d = st_row_reduce(acc%d, %s, st_smem);\n", r, r, combiner(op, accf));
        reduced_value(pc, r, op, accf, "        ");
    }
    bool os[ST_K_MAX_STORES];
    if (k->final_per_point) {
        row_walk(pc, ro, -1, false);
        if (st_kernel_outer_stores(k, os)) {
            /* an empty row visits no point: its row-constant stores (a sum
             * beside a per-point output) are made per outer point */
            bool skip[ST_K_MAX_STORES];
            for (int s = 0; s < k->nstores; s++)
                skip[s] = !os[s];
            SB("        if (R == 0 && threadIdx.x == 0) {\n");
            outer_stores(pc, ro, "            ", "                ", skip);
            SB("        }\n");
        }
    } else {
        SB("        if (threadIdx.x == 0) {\n");
        outer_stores(pc, ro, "            ", "                ", NULL);
        SB("        }\n");
    }
    SB("    }\n}\n");
}

/* ---- REDUCE, the column variant NAME_col (see st_nvrtc_col_plan) ---- */

void st_nvrtc_col_plan(const st_kernel *k, st_nvrtc_col *c)
{
    memset(c, 0, sizeof *c);
    int ro = k->rank - k->nred;
    if (k->kind != ST_K_REDUCE || k->nreduce != 1 || k->nred < 1 || ro < 1 ||
        k->rank > ST_MAX_DIMS || k->nbufs > ST_K_MAX_BUFS ||
        k->nstores > ST_K_MAX_STORES)
        return;
    st_reduce_op op = k->reduce[0].op;
    int src = k->reduce[0].src;
    if ((op != ST_RED_SUM && op != ST_RED_MEAN && op != ST_RED_MAX &&
         op != ST_RED_MIN) || src < 0 || src >= k->nnodes)
        return;
    /* red[i]: node i depends on the reduction; outer[i]: its value is
     * constant over the row (no load, coordinate or random number that
     * moves along a row dim) */
    char *red = calloc((size_t)k->nnodes + 1, 1), *outer = calloc((size_t)k->nnodes + 1, 1);
    char *mark = calloc((size_t)k->nnodes + 1, 1);
    if (!red || !outer || !mark)
        goto done;
    st_kernel_row_frames(k, red, outer);
    mark[src] = 1;
    for (int s = 0; s < k->nstores; s++) {
        int bi = k->stores[s].buf, ni = k->stores[s].node;
        if (k->stores[s].indexed || k->stores[s].accumulate || bi < 0 ||
            bi >= k->nbufs || ni < 0 || ni >= k->nnodes)
            goto done;
        if (!k->final_per_point)
            continue;
        bool full = true, rowfree = true;
        for (int d = 0; d < k->rank; d++) {
            full &= k->bufs[bi].dimmap[d] >= 0;
            if (d >= ro)
                rowfree &= k->bufs[bi].dimmap[d] < 0;
        }
        if (full && !red[ni]) {
            c->point[s] = true;
            c->touch[bi] = true;
            mark[ni] = 1;
        } else if (!rowfree || !outer[ni]) {
            goto done;
        }
    }
    for (int i = k->nnodes - 1; i >= 0; i--) {
        const st_knode *n = &k->nodes[i];
        if (!mark[i])
            continue;
        if (n->kind == ST_KN_LOAD && n->buf >= 0 && n->buf < k->nbufs)
            c->touch[n->buf] = true;
        int ops[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3; j++)
            if (ops[j] >= 0 && ops[j] < i)
                mark[ops[j]] = 1;
    }
    /* an iteration space in the buffers' own order (a reduction over their
     * trailing dims) reads rows contiguously: the row path suits it */
    int in = k->rank - 1;
    for (int b = 0; b < k->nbufs; b++)
        for (int d = 0; d < ro && c->touch[b] && k->bufs[b].dimmap[in] >= 0; d++)
            c->ok |= k->bufs[b].dimmap[d] > k->bufs[b].dimmap[in];
done:
    if (!c->ok)
        memset(c, 0, sizeof *c);
    free(red);
    free(outer);
    free(mark);
}

/* NAME_col: 32 consecutive outer points per block tile (threadIdx.x), the
 * row points split over threadIdx.y (stride blockDim.y), accumulators
 * combined through shared memory in threadIdx.y order, then the epilogue
 * by the threadIdx.y == 0 threads. With gridDim.y > 1 the rows are cut
 * into gridDim.y slices, one per blockIdx.y: each block writes its
 * partials into the scratch scr_ (see st_nvrtc_launch.col_scratch), and
 * the last block of a tile to finish (a counter per tile, reset by it)
 * adds the slices in blockIdx.y order (deterministic) and runs the
 * epilogue. Launched unless SYMTRACE_CUDA_COLREDUCE=0. */
static void render_reduce_col(st_nvrtc_pc *pc, const char *name, const st_nvrtc_col *c)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    int rank = k->rank, ro = rank - k->nred, src = k->reduce[0].src;
    st_reduce_op op = k->reduce[0].op;
    bool accf = st_dtype_is_float(k->nodes[src].dtype);
    const char *A = accf ? "double" : "st_i64";
    char cname[128];
    snprintf(cname, sizeof cname, "%s_col", name);
    SB("\nextern \"C\" __global__ void __launch_bounds__(1024)\n"
       "%s(const st_kargs a, unsigned flags, st_kerr *err, void *scr_)\n{\n", cname);
    SB("    /* column reduction */\n"
       "    __shared__ %s st_csm[32][33];\n"
       "    __shared__ bool st_clast;\n", A);
    product(b, "nouter", 0, ro);
    product(b, "R", ro, rank);
    SB("    /* the row slice of this block; the scratch: a counter per tile,\n"
       "     * then the partials [gridDim.y][nouter] */\n"
       "    const st_i64 rchunk_ = (R + gridDim.y - 1) / gridDim.y;\n"
       "    const st_i64 r0_ = (st_i64)blockIdx.y * rchunk_;\n"
       "    const st_i64 r1_ = R < r0_ + rchunk_ ? R : r0_ + rchunk_;\n"
       "    const st_i64 ntiles_ = (nouter + 31) / 32;\n"
       "    unsigned *cnt_ = (unsigned *)scr_;\n"
       "    %s *part_ = (%s *)((char *)scr_ + ((ntiles_ * 4 + 255) & ~255ll));\n"
       "    for (st_i64 ob_ = (st_i64)blockIdx.x * 32; ob_ < nouter; ob_ += (st_i64)gridDim.x * 32) {\n"
       "        const bool live_ = ob_ + threadIdx.x < nouter;\n"
       "        const st_i64 o = live_ ? ob_ + threadIdx.x : nouter - 1;\n", A, A);
    memset(pc->coord, 0, sizeof pc->coord);
    coords(b, "        ", "o", 0, ro, "o");
    set_coords(pc, 0, ro);
    offsets(pc, "        ", NULL, 0, ro, "ob");
    acc_decl(b, k, 0, accf);
    SB("        if (live_ && r0_ < r1_) {\n");
    int in = rank - 1;
    const char *I = "            ";   /* the indent of the point loop's head */
    if (k->nred > 1) {
        /* runs along the innermost row dim: the other row coordinates and
         * the buffers' offsets once per run (one division), then a loop
         * over the run whose loads do not wait on index arithmetic */
        SB("            const st_i64 nin_ = a.shape[%d];\n"
           "            for (st_i64 pos = r0_ + threadIdx.y; pos < r1_;) {\n"
           "                st_i64 rw_ = pos / nin_;\n"
           "                const st_i64 base_ = rw_ * nin_;\n"
           "                const st_i64 end_ = r1_ < base_ + nin_ ? r1_ : base_ + nin_;\n", in);
        for (int d = in - 1; d > ro; d--)
            SB("                const st_i64 w%d = rw_ %% a.shape[%d]; rw_ /= a.shape[%d];\n", d, d, d);
        SB("                const st_i64 w%d = rw_;\n", ro);
        for (int bi = 0; bi < k->nbufs; bi++) {
            SB("                const st_i64 q%d = ob%d", bi, bi);
            for (int d = ro; d < in; d++)
                SB(" + w%d * a.bufs[%d].strides[%d]", d, bi, d);
            SB(";\n");
        }
        I = "                ";
    }
    SB("#pragma unroll 4\n");
    if (k->nred > 1)
        SB("%sfor (; pos < end_; pos += blockDim.y) {\n"
           "%s    const st_i64 w%d = pos - base_;\n", I, I, in);
    else
        SB("%sfor (st_i64 pos = r0_ + threadIdx.y; pos < r1_; pos += blockDim.y) {\n", I);
    char ind[40], ind2[40];
    snprintf(ind, sizeof ind, "%s    ", I);
    snprintf(ind2, sizeof ind2, "%s        ", I);
    pc->ind = ind;
    pc->ind2 = ind2;
    SB("%sconst st_i64 lin = o * R + pos;\n", ind);
    snprintf(pc->lin, sizeof pc->lin, "lin");
    for (int d = ro; d < rank; d++) {
        if (k->nred > 1)
            snprintf(pc->coord[d], sizeof pc->coord[d], "w%d", d);
        else
            snprintf(pc->coord[d], sizeof pc->coord[d], "pos");
    }
    for (int bi = 0; bi < k->nbufs; bi++) {
        if (k->nred > 1)
            SB("%sconst st_i64 o%d = q%d + w%d * a.bufs[%d].strides[%d];\n", ind, bi, bi, in, bi,
               in);
        else
            SB("%sconst st_i64 o%d = ob%d + pos * a.bufs[%d].strides[%d];\n", ind, bi, bi, bi,
               in);
        snprintf(pc->off[bi], sizeof pc->off[bi], "o%d", bi);
    }
    st_nvrtc_pt_reset(pc);
    acc_update(pc, 0, accf);
    for (int s = 0; s < k->nstores; s++)
        if (c->point[s])
            st_nvrtc_pt_store(pc, s);
    SB("%s}\n", I);
    if (k->nred > 1)
        SB("            }\n");
    SB("        }\n"
       "        st_csm[threadIdx.y][threadIdx.x] = acc0;\n"
       "        __syncthreads();\n"
       "        if (threadIdx.y == 0 && live_)\n"
       "            for (unsigned y_ = 1; y_ < blockDim.y; y_++)\n"
       "                acc0 = %s(acc0, st_csm[y_][threadIdx.x]);\n"
       "        bool fin_ = true;\n"
       "        if (gridDim.y > 1) { /* uniform */\n"
       "            if (threadIdx.y == 0 && live_)\n"
       "                part_[(st_i64)blockIdx.y * nouter + o] = acc0;\n"
       "            __threadfence();\n"
       "            __syncthreads();\n"
       "            if (threadIdx.x == 0 && threadIdx.y == 0)\n"
       "                st_clast = atomicAdd(cnt_ + ob_ / 32, 1u) == gridDim.y - 1;\n"
       "            __syncthreads();\n"
       "            fin_ = st_clast;\n"
       "            if (fin_) {\n"
       "                __threadfence();\n"
       "                if (threadIdx.y == 0 && live_) {\n"
       "                    acc0 = __ldcg(part_ + o);\n"
       "                    for (unsigned y_ = 1; y_ < gridDim.y; y_++)\n"
       "                        acc0 = %s(acc0, __ldcg(part_ + (st_i64)y_ * nouter + o));\n"
       "                }\n"
       "                if (threadIdx.x == 0 && threadIdx.y == 0)\n"
       "                    cnt_[ob_ / 32] = 0; /* for the next launch */\n"
       "            }\n"
       "        }\n"
       "        if (fin_ && threadIdx.y == 0 && live_) {\n", combiner(op, accf), combiner(op, accf));
    reduced_value(pc, 0, op, accf, "            ");   /* no ARG ops here */
    outer_stores(pc, ro, "            ", "                ", c->point);
    SB("        }\n"
       "        __syncthreads(); /* st_csm is reused by the next tile */\n"
       "    }\n}\n");
}

/* ---- MATMUL ---- */

/* accumulation type: 0 float, 1 double, 2 int64 (as in llvm_backend) */
static int mm_acc(const st_kernel *k)
{
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype,
             tc = k->nbufs > 2 ? k->bufs[2].dtype : ST_FLOAT32;
    if (!st_dtype_is_float(ta) && !st_dtype_is_float(tb))
        return 2;
    if (ta == ST_FLOAT64 || tb == ST_FLOAT64 || tc == ST_FLOAT64)
        return 1;
    return 0;
}

static const char *acc_ty[3] = {"float", "double", "st_u64"};

/* memory element m of dtype t -> the accumulation type */
static void mm_read(char *d, size_t n, const char *m, st_dtype t, int acc)
{
    const char *A = acc_ty[acc];
    if (acc == 2) {
        if (t == ST_BOOL)
            snprintf(d, n, "(st_u64)(%s != 0)", m);
        else
            snprintf(d, n, "(st_u64)(st_i64)(%s)", m);
        return;
    }
    switch (t) {
    case ST_FLOAT16: snprintf(d, n, "(%s)st_h2f(%s)", A, m); break;
    case ST_BFLOAT16: snprintf(d, n, "(%s)st_b2f(%s)", A, m); break;
    case ST_BOOL: snprintf(d, n, "(%s)(%s != 0)", A, m); break;
    case ST_INT64: snprintf(d, n, "(%s)(double)(%s)", A, m); break;
    default: snprintf(d, n, "(%s)(%s)", A, m); break;
    }
}

/* the epilogue at (batch z, mm_, nn_) with the product in variable accv */
/* the addressing of product point (mm_, nn_) of batch z: offsets o<b>,
 * lin, coordinates, the product accv as REDUCED 0 (acc: mm_acc; accv
 * NULL: addressing only) */
static void mm_point(st_nvrtc_pc *pc, int nb, const char *accv, int acc, const char *ind)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    for (int bi = 0; bi < k->nbufs; bi++) {
        SB("%sconst st_i64 o%d = bb%d + mm_ * a.bufs[%d].strides[%d] + nn_ * a.bufs[%d].strides[%d];\n",
           ind, bi, bi, bi, nb, bi, nb + 1);
        snprintf(pc->off[bi], sizeof pc->off[bi], "o%d", bi);
    }
    SB("%sconst st_i64 lin = (z * M + mm_) * N + nn_;\n", ind);
    snprintf(pc->lin, sizeof pc->lin, "lin");
    memset(pc->coord, 0, sizeof pc->coord);
    set_coords(pc, 0, nb);
    snprintf(pc->coord[nb], sizeof pc->coord[nb], "mm_");
    snprintf(pc->coord[nb + 1], sizeof pc->coord[nb + 1], "nn_");
    if (!accv)
        return;
    if (acc == 2) {
        SB("%sconst st_i64 prod_ = (st_i64)(%s);\n", ind, accv);
        snprintf(pc->reduced[0], sizeof pc->reduced[0], "prod_");
        pc->reduced_dt[0] = ST_INT64;
    } else {
        snprintf(pc->reduced[0], sizeof pc->reduced[0], "%s", accv);
        pc->reduced_dt[0] = acc == 1 ? ST_FLOAT64 : ST_FLOAT32;
    }
}

/* the epilogue's stores at the current product point */
static void mm_stores(st_nvrtc_pc *pc, int r, bool accf)
{
    (void)r;
    (void)accf;
    const st_kernel *k = pc->k;
    if (k->nstores == 0) {
        if (k->nbufs < 3) {
            snprintf(pc->err, sizeof pc->err, "matmul without stores needs bufs[2]");
            return;
        }
        st_nvrtc_pt_store_value(pc, 2, pc->reduced[0], pc->reduced_dt[0]);
    } else {
        for (int s = 0; s < k->nstores; s++)
            st_nvrtc_pt_store(pc, s);
    }
}

static void mm_epilogue(st_nvrtc_pc *pc, int nb, const char *accv, int acc,
                        const char *ind, const char *ind2)
{
    pc->ind = ind;
    pc->ind2 = ind2;
    mm_point(pc, nb, accv, acc, ind);
    st_nvrtc_pt_reset(pc);
    mm_stores(pc, -1, false);
}

/* batch loop head: z over grid.z, coordinates and per-buffer bases */
static void mm_batch_head(st_nvrtc_pc *pc, int nb)
{
    st_nvrtc_sb *b = pc->b;
    SB("    const st_i64 M = a.shape[%d], N = a.shape[%d], K = a.shape[%d];\n",
       nb, nb + 1, nb + 2);
    product(b, "nbatch", 0, nb);
    SB("    const st_i64 m0 = (st_i64)blockIdx.y * 64, n0 = (st_i64)blockIdx.x * 64;\n"
       "    const st_i64 sAm = a.bufs[0].strides[%d], sAk = a.bufs[0].strides[%d];\n"
       "    const st_i64 sBk = a.bufs[1].strides[%d], sBn = a.bufs[1].strides[%d];\n"
       "    for (st_i64 z = blockIdx.z; z < nbatch; z += gridDim.z) {\n",
       nb, nb + 2, nb + 2, nb + 1);
    coords(b, "        ", "z", 0, nb, "z");
    offsets(pc, "        ", NULL, 0, nb, "bb");
}

static void render_matmul(st_nvrtc_pc *pc, const char *name)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    int nb = k->rank - 3, acc = mm_acc(k);
    if (nb < 0 || k->nbufs < 2) {
        snprintf(pc->err, sizeof pc->err, "matmul of rank %d with %d buffers", k->rank, k->nbufs);
        return;
    }
    const char *A = acc_ty[acc];
    const char *TA = mty(k->bufs[0].dtype), *TB = mty(k->bufs[1].dtype);
    char ra[200], rb[200];
    mm_read(ra, sizeof ra, "pa_[ga]", k->bufs[0].dtype, acc);
    mm_read(rb, sizeof rb, "pb_[gb]", k->bufs[1].dtype, acc);
    kernel_head(b, name, 256);
    SB("    /* SIMT: 64x64 tile, K step 16, 256 threads of 4x4 outputs */\n"
       "    __shared__ %s As[16][65], Bs[16][65];\n"
       "    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n"
       "    const %s *pa_ = (const %s *)a.bufs[0].data;\n"
       "    const %s *pb_ = (const %s *)a.bufs[1].data;\n",
       A, TA, TA, TB, TB);
    mm_batch_head(pc, nb);
    SB("        %s acc[4][4];\n"
       "#pragma unroll\n"
       "        for (int i = 0; i < 4; i++)\n"
       "#pragma unroll\n"
       "            for (int j = 0; j < 4; j++) acc[i][j] = 0;\n"
       "        for (st_i64 k0 = 0; k0 < K; k0 += 16) {\n"
       "            for (int e = threadIdx.x; e < 16 * 64; e += 256) {\n"
       "                const int kk = e >> 6, mn = e & 63;\n"
       "                const st_i64 gm = m0 + mn, gn = n0 + mn, gk = k0 + kk;\n"
       "                const st_i64 ga = bb0 + gm * sAm + gk * sAk, gb = bb1 + gk * sBk + gn * sBn;\n"
       "                As[kk][mn] = (gm < M && gk < K) ? %s : (%s)0;\n"
       "                Bs[kk][mn] = (gn < N && gk < K) ? %s : (%s)0;\n"
       "            }\n"
       "            __syncthreads();\n"
       "#pragma unroll\n"
       "            for (int kk = 0; kk < 16; kk++) {\n"
       "                %s ar[4], br[4];\n"
       "#pragma unroll\n"
       "                for (int i = 0; i < 4; i++) { ar[i] = As[kk][ty + 16 * i]; br[i] = Bs[kk][tx + 16 * i]; }\n"
       "#pragma unroll\n"
       "                for (int i = 0; i < 4; i++)\n"
       "#pragma unroll\n"
       "                    for (int j = 0; j < 4; j++) acc[i][j] += ar[i] * br[j];\n"
       "            }\n"
       "            __syncthreads();\n"
       "        }\n"
       "#pragma unroll\n"
       "        for (int i = 0; i < 4; i++)\n"
       "#pragma unroll\n"
       "            for (int j = 0; j < 4; j++) {\n"
       "                const st_i64 mm_ = m0 + ty + 16 * i, nn_ = n0 + tx + 16 * j;\n"
       "                if (mm_ >= M || nn_ >= N) continue;\n"
       "                const %s accv = acc[i][j];\n",
       A, ra, A, rb, A, A, A);
    mm_epilogue(pc, nb, "accv", acc, "                ", "                    ");
    SB("            }\n    }\n}\n");
}

/* NAME_epi: the epilogue over a scratch product (cuBLAS computed it): a
 * block per output row at a time (grid-stride over the batch x M rows; the
 * row's batch coordinates and bases once per row), its threads along the
 * row's N points, so no point pays a 64-bit division; the product read
 * from prod_ (contiguous [batch..., M, N], float or double) */
/* NAME_epi's point: the product read from prod_ (a point a trip), into
 * P_[j] (loads ahead) or from it (statements) */
static void epi_point(st_nvrtc_pc *pc, const st_walk *w, const char *ind, int mode)
{
    st_nvrtc_sb *b = pc->b;
    const char *A = acc_ty[w->acc];
    if (mode == 1)
        SB("%sP_[j] = prod_[r_ * N + nn_];\n", ind);
    else
        SB("%sconst %s accv = %s;\n", ind, A, mode == 2 ? "P_[j]" : "prod_[r_ * N + nn_]");
    mm_point(pc, w->nb, mode == 1 ? NULL : "accv", w->acc, ind);
}

static void render_matmul_epi(st_nvrtc_pc *pc, const char *name)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    int nb = k->rank - 3, acc = mm_acc(k);
    const char *A = acc_ty[acc];
    SB("\nextern \"C\" __global__ void __launch_bounds__(256)\n"
       "%s_epi(const st_kargs a, unsigned flags, st_kerr *err, const %s *prod_)\n{\n",
       name, A);
    SB("    const st_i64 M = a.shape[%d], N = a.shape[%d];\n", nb, nb + 1);
    product(b, "nbatch", 0, nb);
    SB("    const st_i64 rows = nbatch * M;\n"
       "    for (st_i64 r_ = blockIdx.x; r_ < rows; r_ += gridDim.x) {\n"
       "        const st_i64 mm_ = r_ %% M, z = r_ / M;\n");
    coords(b, "        ", "z", 0, nb, "z");
    offsets(pc, "        ", NULL, 0, nb, "bb");
    char ahead[32];
    snprintf(ahead, sizeof ahead, "%s P_", A);
    const st_walk w = {.var = "nn_", .first = "threadIdx.x", .stride = "(st_i64)blockDim.x",
                       .limit = "N", .point = epi_point, .ahead = ahead, .acc = acc, .nb = nb};
    walk(pc, &w, 8, mm_stores, -1, false);
    SB("    }\n}\n");
}

/* NOT YET RUN ON A GPU: compile-checked only (see the file comment). */
static void render_matmul_mma(st_nvrtc_pc *pc, const char *name)
{
    st_nvrtc_sb *b = pc->b;
    const st_kernel *k = pc->k;
    int nb = k->rank - 3;
    bool bf = k->bufs[0].dtype == ST_BFLOAT16;
    char mname[128];
    snprintf(mname, sizeof mname, "%s_mma", name);
    kernel_head(b, mname, 128);
    SB("    /* tensor cores (NOT YET RUN on a GPU: compile-checked only):\n"
       "     * 64x64 tile, K step 16, 4 warps of 32x32, each 2x4 mma.sync\n"
       "     * m16n8k16 (%s in, float accumulate); A tile row-major\n"
       "     * [m][k], B tile as [n][k] (the col operand) */\n"
       "    __shared__ __align__(16) st_u16 As[64][24], Bs[64][24];\n"
       "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
       "    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;\n"
       "    const int g = lane >> 2, t4 = lane & 3;\n"
       "    const st_u16 *pa_ = (const st_u16 *)a.bufs[0].data;\n"
       "    const st_u16 *pb_ = (const st_u16 *)a.bufs[1].data;\n",
       bf ? "bfloat16" : "float16");
    mm_batch_head(pc, nb);
    SB("        float c[2][4][4];\n"
       "#pragma unroll\n"
       "        for (int i = 0; i < 2; i++)\n"
       "#pragma unroll\n"
       "            for (int j = 0; j < 4; j++)\n"
       "#pragma unroll\n"
       "                for (int e = 0; e < 4; e++) c[i][j][e] = 0.0f;\n"
       "        for (st_i64 k0 = 0; k0 < K; k0 += 16) {\n"
       "            for (int e = threadIdx.x; e < 64 * 16; e += 128) {\n"
       "                const int row = e >> 4, kk = e & 15;\n"
       "                const st_i64 gm = m0 + row, gn = n0 + row, gk = k0 + kk;\n"
       "                As[row][kk] = (gm < M && gk < K) ? pa_[bb0 + gm * sAm + gk * sAk] : (st_u16)0;\n"
       "                Bs[row][kk] = (gn < N && gk < K) ? pb_[bb1 + gk * sBk + gn * sBn] : (st_u16)0;\n"
       "            }\n"
       "            __syncthreads();\n"
       "            st_u32 af[2][4], bfr[4][2];\n"
       "#pragma unroll\n"
       "            for (int i = 0; i < 2; i++) {\n"
       "                const int r0 = wm + 16 * i + g;\n"
       "                af[i][0] = *(const st_u32 *)&As[r0][2 * t4];\n"
       "                af[i][1] = *(const st_u32 *)&As[r0 + 8][2 * t4];\n"
       "                af[i][2] = *(const st_u32 *)&As[r0][2 * t4 + 8];\n"
       "                af[i][3] = *(const st_u32 *)&As[r0 + 8][2 * t4 + 8];\n"
       "            }\n"
       "#pragma unroll\n"
       "            for (int j = 0; j < 4; j++) {\n"
       "                const int n = wn + 8 * j + g;\n"
       "                bfr[j][0] = *(const st_u32 *)&Bs[n][2 * t4];\n"
       "                bfr[j][1] = *(const st_u32 *)&Bs[n][2 * t4 + 8];\n"
       "            }\n"
       "#pragma unroll\n"
       "            for (int i = 0; i < 2; i++)\n"
       "#pragma unroll\n"
       "                for (int j = 0; j < 4; j++) %s(c[i][j], af[i], bfr[j]);\n"
       "            __syncthreads();\n"
       "        }\n"
       "#pragma unroll\n"
       "        for (int i = 0; i < 2; i++)\n"
       "#pragma unroll\n"
       "            for (int j = 0; j < 4; j++)\n"
       "#pragma unroll\n"
       "                for (int e = 0; e < 4; e++) {\n"
       "                    const st_i64 mm_ = m0 + wm + 16 * i + g + (e >= 2 ? 8 : 0);\n"
       "                    const st_i64 nn_ = n0 + wn + 8 * j + 2 * t4 + (e & 1);\n"
       "                    if (mm_ >= M || nn_ >= N) continue;\n"
       "                    const float accv = c[i][j][e];\n",
       bf ? "st_mma_bf16" : "st_mma_f16");
    mm_epilogue(pc, nb, "accv", 0, "                    ", "                        ");
    SB("                }\n    }\n}\n");
}

/* ---- the translation unit ---- */

char *st_nvrtc_render(const st_kernel *ks, int n)
{
    st_nvrtc_sb sb = {0};
    st_nvrtc_sb *b = &sb;
    SB("/* generated by symtrace (nvrtc_backend): %d kernel(s) */\n", n);
    st_nvrtc_prelude(b);
    for (int i = 0; i < n; i++) {
        const st_kernel *k = &ks[i];
        if (k->kind == ST_K_VIEW)
            continue;
        if (k->nbufs > ST_K_MAX_BUFS || k->nstores > ST_K_MAX_STORES ||
            k->rank < 0 || k->rank > ST_MAX_DIMS) {
            free(sb.s);
            st_err(ST_ERR_RUNTIME, "nvrtc: kernel %s: bad shape (rank %d, %d buffers)",
                   k->name, k->rank, k->nbufs);
            return NULL;
        }
        unsigned char *done = calloc((size_t)k->nnodes + 1, 1);
        if (!done) {
            free(sb.s);
            st_err(ST_ERR_MEMORY, "nvrtc: out of memory");
            return NULL;
        }
        st_nvrtc_pc pc;
        pc_init(&pc, b, k, done);
        char name[96];
        st_nvrtc_kernel_name(k, i, name, sizeof name);
        SB("\n/* ---- %s ---- */", k->name);
        switch (k->kind) {
        case ST_K_ELEMENTWISE:
            render_elementwise(&pc, name);
            break;
        case ST_K_REDUCE: {
            render_reduce(&pc, name);
            st_nvrtc_col col;
            st_nvrtc_col_plan(k, &col);
            if (!pc.err[0] && col.ok) {
                st_nvrtc_pt_reset(&pc);
                memset(pc.reduced, 0, sizeof pc.reduced);
                render_reduce_col(&pc, name, &col);
            }
            break;
        }
        case ST_K_MATMUL:
            render_matmul(&pc, name);
            if (!pc.err[0] && st_nvrtc_has_mma(k))
                render_matmul_mma(&pc, name);
            if (!pc.err[0] && st_nvrtc_has_epi(k))
                render_matmul_epi(&pc, name);
            break;
        default:
            snprintf(pc.err, sizeof pc.err, "bad kernel kind %d", (int)k->kind);
            break;
        }
        free(done);
        if (pc.err[0]) {
            free(sb.s);
            st_err(ST_ERR_RUNTIME, "nvrtc: kernel %s: %s", k->name, pc.err);
            return NULL;
        }
    }
    if (sb.oom || !sb.s) {
        free(sb.s);
        st_err(ST_ERR_MEMORY, "nvrtc: out of memory rendering %d kernels", n);
        return NULL;
    }
    return sb.s;
}
