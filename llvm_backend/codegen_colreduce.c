/* codegen_colreduce.c - the column path of a REDUCE kernel: a SUM or MEAN
 * (nreduce 1, float source) whose row (the trailing nred dims) runs along
 * large strides while the innermost outer dim is unit-stride, as in the
 * bias and LayerNorm gradients (a sum over the token dims of [B, S, H]).
 * The outer range [lo, hi) goes in blocks of up to BLOCK consecutive outer
 * points inside one run of the innermost outer dim. Per block, each row
 * point j adds the block's values into per-point accumulators (an inner
 * loop over the block: unit-stride, which the loop vectorizer widens, or a
 * strided fallback): float for float32/float16/bfloat16 over chunks of
 * CCHUNK row points, each chunk added into double (as the row path's
 * float lanes and double chunks), double for float64; then the epilogue
 * per outer point of the block. With a per-point epilogue each store is
 * either independent of the sum and made at every point of the buffer
 * (computed and stored in the accumulation pass, sharing its nodes with
 * the summed value: no second pass, no recomputation) or constant over the
 * row (stored once per outer point); any other kernel keeps the row path.
 * Taken at run time when the innermost outer dim has MIN_RUN points or
 * more, the buffers the accumulation touches do not all move with stride 1
 * along the innermost row dim (or it has size 1), and along the innermost
 * outer dim they do (or their strides add up to less than along the row).
 * Inputs broadcast along the innermost outer dim at run time (stride 0, a
 * size-1 dim) are read from a splat per row (see col_t.bcast); unravel
 * loads are walked in segments (see segments). Owns:
 * st_llvm_emit_colreduce, st_llvm_has_colreduce. */
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

#define I64(v) st_llvm_i64c(cg, (v))
/* Outer points per block: long enough that each row's segment is a few
 * pages of contiguous memory (the hardware prefetcher's streams), while
 * the accumulators (48 KB of stack) stay near L1 and L2. */
#define BLOCK 4096
/* Bytes of scratch arrays (see col_t.bcast) at most: the block shrinks
 * (to their length) when one of them is in use. */
#define SCRATCH_BYTES 65536
/* Row points summed in float per accumulator before the chunk goes into
 * double: a sequential float sum per outer point, so shorter than the row
 * path's CHUNK (whose float sum runs over vector lanes and partial sums):
 * a comparable count of float roundings per value. */
#define CCHUNK 32
/* The innermost outer dim's size at least: on shorter runs the per-row
 * work of a block outweighs the row path's strided walk. */
#define MIN_RUN 4

typedef struct {
    int rank, ro;
    bool chunk;                      /* float accumulators, chunked */
    bool point[ST_K_MAX_STORES];     /* stored in the accumulation pass */
    bool touch[ST_K_MAX_BUFS];       /* read or written by that pass */
    /* input the pass reads with plain loads that may come broadcast along
     * the innermost outer dim (stride 0 at run time): the unit-stride
     * loop then reads a splat of its value per row from scratch[b] */
    bool bcast[ST_K_MAX_BUFS];
    bool unravel;                    /* the pass reads an unravel buffer */
    LLVMValueRef scratch[ST_K_MAX_BUFS], zero[ST_K_MAX_BUFS];
    int *cls;                        /* st_llvm_classes */
    LLVMValueRef facc, dacc;         /* [BLOCK x float], [BLOCK x double] */
    LLVMTypeRef fat, dat;
} col_t;

/* Whether kernel k can take the column path; fills c. red[i]: node i
 * depends on a REDUCED node; outer[i]: its value is constant over the row
 * (params, constants, the sum, loads broadcast along every row dim,
 * coordinates of outer dims). */
static bool plan(const st_kernel *k, col_t *c, char *red, char *outer, char *mark)
{
    if (k->kind != ST_K_REDUCE || k->nreduce != 1 || k->nred < 1 ||
        k->rank - k->nred < 1)
        return false;
    st_reduce_op op = k->reduce[0].op;
    st_dtype sdt = k->nodes[k->reduce[0].src].dtype;
    if ((op != ST_RED_SUM && op != ST_RED_MEAN) || !st_dtype_is_float(sdt))
        return false;
    c->rank = k->rank;
    c->ro = k->rank - k->nred;
    c->chunk = sdt != ST_FLOAT64;
    st_kernel_row_frames(k, red, outer);
    bool indexed[ST_K_MAX_BUFS] = {0};
    memset(mark, 0, (size_t)k->nnodes);
    mark[k->reduce[0].src] = 1;
    for (int s = 0; s < k->nstores; s++) {
        const st_kbuf *kb = &k->bufs[k->stores[s].buf];
        int ni = k->stores[s].node;
        if (k->stores[s].indexed || k->stores[s].accumulate)
            return false;
        c->point[s] = false;
        if (!k->final_per_point)
            continue;
        bool full = true, rowfree = true;
        for (int d = 0; d < c->rank; d++) {
            full &= kb->dimmap[d] >= 0;
            if (d >= c->ro)
                rowfree &= kb->dimmap[d] < 0;
        }
        if (full && !red[ni]) {
            c->point[s] = true;
            c->touch[k->stores[s].buf] = true;
            mark[ni] = 1;
        } else if (!rowfree || !outer[ni]) {
            return false;
        }
    }
    for (int i = k->nnodes - 1; i >= 0; i--) {
        const st_knode *n = &k->nodes[i];
        if (!mark[i])
            continue;
        if (n->kind == ST_KN_LOAD) {
            c->touch[n->buf] = true;
            indexed[n->buf] |= n->idx_dim >= 0;
        }
        if (n->a >= 0) mark[n->a] = 1;
        if (n->b >= 0) mark[n->b] = 1;
        if (n->c >= 0) mark[n->c] = 1;
    }
    bool permuted = false;
    for (int b = 0; b < k->nbufs; b++) {
        const st_kbuf *kb = &k->bufs[b];
        c->bcast[b] = c->touch[b] && !indexed[b] && !kb->is_out &&
                      kb->unravel <= 0 && kb->dimmap[c->ro - 1] >= 0;
        c->unravel |= c->touch[b] && kb->unravel > 0;
        for (int d = 0; d < c->ro && c->touch[b] && kb->dimmap[c->rank - 1] >= 0; d++)
            permuted |= kb->dimmap[d] > kb->dimmap[c->rank - 1];
    }
    /* an iteration space in the buffers' own order (a reduction over
     * their trailing dims) reads rows contiguously unless its inputs come
     * transposed: not worth the code (and compile time) of both paths */
    return permuted;
}

/* Run-time test: every touched buffer moves with stride 1 along dim d
 * unless statically broadcast there (or, with zeros, a bcast buffer with
 * stride 0). */
static LLVMValueRef unit_along(st_llvm_cg *cg, const col_t *c, int d, bool zeros)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef t = LLVMConstInt(cg->i1, 1, 0);
    for (int b = 0; b < cg->k->nbufs; b++) {
        if (!c->touch[b] || cg->k->bufs[b].dimmap[d] < 0)
            continue;
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntEQ, cg->stride[b][d], I64(1), "");
        if (zeros && c->bcast[b])
            ok = LLVMBuildOr(B, ok, c->zero[b], "");
        t = LLVMBuildAnd(B, t, ok, "");
    }
    return t;
}

/* Sum over the touched buffers of |stride| along dim d (run time). */
static LLVMValueRef stride_sum(st_llvm_cg *cg, const col_t *c, int d)
{
    LLVMBuilderRef B = cg->B;
    LLVMValueRef t = I64(0);
    for (int b = 0; b < cg->k->nbufs; b++) {
        if (!c->touch[b] || cg->k->bufs[b].dimmap[d] < 0)
            continue;
        LLVMValueRef s = cg->stride[b][d];
        LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, s, I64(0), "");
        t = LLVMBuildAdd(B, t, LLVMBuildSelect(B, neg, LLVMBuildNeg(B, s, ""), s, ""), "");
    }
    return t;
}

static LLVMValueRef min64(st_llvm_cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(cg->B, LLVMBuildICmp(cg->B, LLVMIntSLT, a, b, ""),
                           a, b, "");
}

/* Pointer to element i of accumulator array acc (type at). */
static LLVMValueRef slot(st_llvm_cg *cg, LLVMTypeRef at, LLVMValueRef acc,
                         LLVMValueRef i)
{
    LLVMValueRef idx[2] = {I64(0), i};
    return LLVMBuildInBoundsGEP2(cg->B, at, acc, idx, 2, "");
}

/* for i in [0, n): acc[i] = 0 (f32 or f64) */
static void zero(st_llvm_cg *cg, LLVMTypeRef at, LLVMTypeRef et,
                 LLVMValueRef acc, LLVMValueRef n)
{
    st_llvm_loop L;
    LLVMValueRef i = st_llvm_loop_begin(cg, &L, I64(0), n);
    LLVMBuildStore(cg->B, LLVMConstReal(et, 0.0), slot(cg, at, acc, i));
    st_llvm_loop_end(cg, &L);
}

/* One point of the accumulation pass (offsets, coordinates, lin set):
 * the summed value into slot i, then the per-point stores, whose nodes
 * reuse the values the sum computed (structurally equal nodes). */
static void accumulate(st_llvm_cg *cg, const col_t *c, LLVMValueRef i)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    st_llvm_reset_memo(cg);
    LLVMValueRef v = st_llvm_node(cg, k->reduce[0].src);
    LLVMValueRef p = c->chunk ? slot(cg, c->fat, c->facc, i)
                              : slot(cg, c->dat, c->dacc, i);
    LLVMTypeRef et = c->chunk ? cg->f32 : cg->f64;
    LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, et, p, ""), v, ""), p);
    for (int j = 0; j < k->nnodes; j++)
        if (!cg->vals[j] && c->cls[j] != j && cg->vals[c->cls[j]])
            cg->vals[j] = cg->vals[c->cls[j]];
    for (int s = 0; s < k->nstores; s++)
        if (c->point[s])
            st_llvm_store(cg, s);
}

/* Before the unit-stride loop of a row: each bcast buffer is read from
 * cg->data[b] at offsets 0, 1, ...: the start of its row, or when it has
 * stride 0 (zero[b]) its scratch array filled with the value there. */
static void splats(st_llvm_cg *cg, const col_t *c, const LLVMValueRef *rbase,
                   LLVMValueRef nb)
{
    LLVMBuilderRef B = cg->B;
    for (int b = 0; b < cg->k->nbufs; b++) {
        if (!c->bcast[b])
            continue;
        LLVMTypeRef mt = st_llvm_mty(cg, cg->k->bufs[b].dtype);
        LLVMValueRef at = rbase[b];
        LLVMValueRef row = LLVMBuildGEP2(B, mt, cg->data[b], &at, 1, "");
        LLVMBasicBlockRef fill = st_llvm_bb(cg, "csplat"), go = st_llvm_bb(cg, "csplat_done");
        LLVMBuildCondBr(B, c->zero[b], fill, go);
        LLVMPositionBuilderAtEnd(B, fill);
        LLVMValueRef v = LLVMBuildLoad2(B, mt, row, "");
        st_llvm_loop L;
        LLVMValueRef i = st_llvm_loop_begin(cg, &L, I64(0), nb);
        LLVMBuildStore(B, v, LLVMBuildGEP2(B, mt, c->scratch[b], &i, 1, ""));
        st_llvm_loop_end(cg, &L);
        LLVMBuildBr(B, go);
        LLVMPositionBuilderAtEnd(B, go);
        cg->data[b] = LLVMBuildSelect(B, c->zero[b], c->scratch[b], row, "");
    }
}

/* Offsets of the accumulation pass at block point i: the unit-stride
 * loop (pass 0: with segoff, the source offsets of the unravel buffers at
 * the segment's start, t points before i) or the strided one. */
static void offsets(st_llvm_cg *cg, const col_t *c, const LLVMValueRef *rbase,
                    LLVMValueRef i, int pass, const LLVMValueRef *segoff,
                    LLVMValueRef t)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int w = c->ro - 1;
    for (int b = 0; b < k->nbufs; b++) {
        const st_kbuf *kb = &k->bufs[b];
        if (segoff && kb->unravel > 0 && c->touch[b])
            cg->off[b] = kb->dimmap[w] < 0 ? segoff[b]
                : LLVMBuildAdd(B, segoff[b], LLVMBuildMul(B, t,
                      cg->ustride[b][kb->unravel - 1], ""), "");
        else if (kb->dimmap[w] < 0)
            cg->off[b] = rbase[b];
        else if (pass == 0 && c->bcast[b])
            cg->off[b] = i; /* cg->data[b]: the row's start or the splat */
        else if (pass == 0)
            cg->off[b] = LLVMBuildNSWAdd(B, rbase[b], i, "");
        else
            cg->off[b] = LLVMBuildAdd(B, rbase[b],
                                      LLVMBuildMul(B, i, cg->stride[b][w], ""), "");
    }
}

/* Row point j's values at block points [i0, i0 + n): row coordinates rc,
 * lbase = o * R + j. */
static void points(st_llvm_cg *cg, const col_t *c, const LLVMValueRef *rbase,
                   const LLVMValueRef *rc, LLVMValueRef ow, LLVMValueRef lbase,
                   LLVMValueRef R, LLVMValueRef i0, LLVMValueRef n, int pass,
                   const LLVMValueRef *segoff)
{
    LLVMBuilderRef B = cg->B;
    st_llvm_loop L;
    LLVMValueRef t = st_llvm_loop_begin(cg, &L, I64(0), n);
    LLVMValueRef i = LLVMBuildNSWAdd(B, i0, t, "");
    memcpy(cg->coord, rc, sizeof(LLVMValueRef) * ST_MAX_DIMS);
    cg->coord[c->ro - 1] = LLVMBuildNSWAdd(B, ow, i, "");
    offsets(cg, c, rbase, i, pass, segoff, t);
    cg->lin = LLVMBuildAdd(B, lbase, LLVMBuildMul(B, i, R, ""), "");
    cg->uplain = segoff != NULL;
    accumulate(cg, c, i);
    cg->uplain = false;
    st_llvm_loop_end(cg, &L);
}

/* The unit-stride loop over the block's nb points of a row with unravel
 * loads: cut into segments inside which each unravel buffer stays within
 * a run of its source's innermost dim (one div/mod walk per segment), as
 * the elementwise kernels do (see emit_segments). */
static void segments(st_llvm_cg *cg, const col_t *c, const LLVMValueRef *rbase,
                     const LLVMValueRef *rc, LLVMValueRef ow, LLVMValueRef lbase,
                     LLVMValueRef R, LLVMValueRef nb)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int w = c->ro - 1;
    st_llvm_loop S; /* for (s0 = 0; s0 < nb; s0 += seg) */
    LLVMValueRef s0 = st_llvm_loop_begin(cg, &S, I64(0), nb);
    LLVMValueRef seg = LLVMBuildSub(B, nb, s0, "");
    LLVMValueRef segoff[ST_K_MAX_BUFS] = {0};
    for (int b = 0; b < k->nbufs; b++) {
        int n = k->bufs[b].unravel;
        if (n <= 0 || !c->touch[b])
            continue;
        if (k->bufs[b].dimmap[w] < 0) {
            segoff[b] = st_llvm_unravel_at(cg, b, rbase[b]);
            continue;
        }
        LLVMValueRef L = LLVMBuildAdd(B, rbase[b], s0, "");
        LLVMValueRef last = cg->ushape[b][n - 1];
        seg = min64(cg, seg, LLVMBuildSub(B, last, LLVMBuildURem(B, L, last, ""), ""));
        segoff[b] = st_llvm_unravel_at(cg, b, L);
    }
    points(cg, c, rbase, rc, ow, lbase, R, s0, seg, 0, segoff);
    st_llvm_loop_next(cg, &S, LLVMBuildNSWAdd(B, s0, seg, ""));
}

/* The row points [j0, jend) of the block at outer offsets obase, outer
 * coordinates oc (oc[w] its first point's), nb points, linear outer index
 * o; fast: the unit-stride inner loop. */
static void rows(st_llvm_cg *cg, const col_t *c, const LLVMValueRef *obase,
                 const LLVMValueRef *oc, LLVMValueRef o, LLVMValueRef nb,
                 LLVMValueRef R, LLVMValueRef j0, LLVMValueRef jend,
                 LLVMValueRef fast)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int ro = c->ro, w = ro - 1;
    st_llvm_loop J;
    LLVMValueRef j = st_llvm_loop_begin(cg, &J, j0, jend);
    memcpy(cg->coord, oc, sizeof(LLVMValueRef) * ST_MAX_DIMS);
    st_llvm_coords_of(cg, j, ro, c->rank);
    LLVMValueRef rc[ST_MAX_DIMS], rbase[ST_K_MAX_BUFS];
    memcpy(rc, cg->coord, sizeof rc);
    for (int b = 0; b < k->nbufs; b++) {
        rbase[b] = obase[b];
        for (int d = ro; d < c->rank; d++)
            rbase[b] = LLVMBuildAdd(B, rbase[b],
                                    LLVMBuildMul(B, rc[d], cg->stride[b][d], ""), "");
    }
    LLVMValueRef lbase = LLVMBuildAdd(B, LLVMBuildMul(B, o, R, ""), j, "");
    LLVMBasicBlockRef fb = st_llvm_bb(cg, "cfast"), sb = st_llvm_bb(cg, "cstrided"),
                      join = st_llvm_bb(cg, "cjoin");
    LLVMBuildCondBr(B, fast, fb, sb);
    LLVMValueRef data[ST_K_MAX_BUFS];
    memcpy(data, cg->data, sizeof data);
    for (int pass = 0; pass < 2; pass++) {
        LLVMPositionBuilderAtEnd(B, pass == 0 ? fb : sb);
        if (pass == 0)
            splats(cg, c, rbase, nb);
        if (pass == 0 && c->unravel)
            segments(cg, c, rbase, rc, oc[w], lbase, R, nb);
        else
            points(cg, c, rbase, rc, oc[w], lbase, R, I64(0), nb, pass, NULL);
        memcpy(cg->data, data, sizeof data);
        LLVMBuildBr(B, join);
    }
    LLVMPositionBuilderAtEnd(B, join);
    st_llvm_loop_end(cg, &J);
}

/* The epilogue of the block: per outer point, the sum (MEAN: divided by
 * the row size) and the stores made once per outer point. */
static void epilogue(st_llvm_cg *cg, const col_t *c, const LLVMValueRef *obase,
                     const LLVMValueRef *oc, LLVMValueRef o, LLVMValueRef nb,
                     LLVMValueRef R)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int w = c->ro - 1;
    st_llvm_loop L;
    LLVMValueRef i = st_llvm_loop_begin(cg, &L, I64(0), nb);
    st_llvm_reset_memo(cg);
    memcpy(cg->coord, oc, sizeof(LLVMValueRef) * ST_MAX_DIMS);
    for (int d = c->ro; d < ST_MAX_DIMS; d++)
        cg->coord[d] = NULL;
    cg->coord[w] = LLVMBuildNSWAdd(B, oc[w], i, "");
    for (int b = 0; b < k->nbufs; b++)
        cg->off[b] = k->bufs[b].dimmap[w] < 0 ? obase[b]
                     : LLVMBuildAdd(B, obase[b], LLVMBuildMul(B, i, cg->stride[b][w], ""), "");
    cg->lin = LLVMBuildNSWAdd(B, o, i, "");
    LLVMValueRef a = LLVMBuildLoad2(B, cg->f64, slot(cg, c->dat, c->dacc, i), "");
    if (k->reduce[0].op == ST_RED_MEAN)
        a = LLVMBuildFDiv(B, a, LLVMBuildSIToFP(B, R, cg->f64, ""), "");
    cg->reduced[0] = a;
    cg->reduced_dt[0] = ST_FLOAT64;
    for (int s = 0; s < k->nstores; s++)
        if (!c->point[s])
            st_llvm_store(cg, s);
    cg->reduced[0] = NULL;
    st_llvm_loop_end(cg, &L);
}

static void emit(st_llvm_cg *cg, col_t *c)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int ro = c->ro, w = ro - 1, in = c->rank - 1;
    LLVMValueRef lo = LLVMGetParam(cg->fn, 1), hi = LLVMGetParam(cg->fn, 2);
    LLVMValueRef anyzero = LLVMConstInt(cg->i1, 0, 0);
    int64_t bytes = 0, sblock = BLOCK;
    for (int b = 0; b < k->nbufs; b++)
        if (c->bcast[b])
            bytes += st_dtype_size(k->bufs[b].dtype);
    while (sblock > 64 && bytes * sblock > SCRATCH_BYTES)
        sblock /= 2;
    for (int b = 0; b < k->nbufs; b++) {
        if (!c->bcast[b])
            continue;
        c->zero[b] = LLVMBuildICmp(B, LLVMIntEQ, cg->stride[b][w], I64(0), "");
        anyzero = LLVMBuildOr(B, anyzero, c->zero[b], "");
        c->scratch[b] = st_llvm_entry_alloca(cg, LLVMArrayType(
            st_llvm_mty(cg, k->bufs[b].dtype), (unsigned)sblock));
    }
    LLVMValueRef fast = unit_along(cg, c, w, true);
    LLVMValueRef rowfast = LLVMBuildAnd(B, unit_along(cg, c, in, false),
        LLVMBuildICmp(B, LLVMIntNE, cg->shape[in], I64(1), ""), "");
    LLVMBasicBlockRef colb = st_llvm_bb(cg, "column"), rowb = st_llvm_bb(cg, "rowpath");
    LLVMValueRef closer = LLVMBuildICmp(B, LLVMIntSLT, stride_sum(cg, c, w),
                                        stride_sum(cg, c, in), "");
    LLVMValueRef run = LLVMBuildICmp(B, LLVMIntSGE, cg->shape[w], I64(MIN_RUN), "");
    LLVMValueRef use = LLVMBuildAnd(B, LLVMBuildOr(B, fast, closer, ""),
                                    LLVMBuildNot(B, rowfast, ""), "");
    LLVMBuildCondBr(B, LLVMBuildAnd(B, use, run, ""), colb, rowb);
    LLVMPositionBuilderAtEnd(B, colb);
    LLVMValueRef R = I64(1);
    for (int d = ro; d < c->rank; d++)
        R = LLVMBuildMul(B, R, cg->shape[d], "");
    c->fat = LLVMArrayType(cg->f32, BLOCK);
    c->dat = LLVMArrayType(cg->f64, BLOCK);
    c->facc = st_llvm_entry_alloca(cg, c->fat);
    c->dacc = st_llvm_entry_alloca(cg, c->dat);
    /* for (o = lo; o < hi; o += nb): one block */
    st_llvm_loop Ob;
    LLVMValueRef o = st_llvm_loop_begin(cg, &Ob, lo, hi);
    /* named: the dumped IR shows (and tests find) the column path by it */
    LLVMSetValueName2(LLVMBasicBlockAsValue(Ob.cond), "colblocks", 9);
    for (int d = 0; d < ST_MAX_DIMS; d++)
        cg->coord[d] = NULL;
    st_llvm_coords_of(cg, o, 0, ro);
    LLVMValueRef oc[ST_MAX_DIMS], obase[ST_K_MAX_BUFS];
    memcpy(oc, cg->coord, sizeof oc);
    LLVMValueRef nb = min64(cg, LLVMBuildSub(B, cg->shape[w], oc[w], ""),
                            LLVMBuildSub(B, hi, o, ""));
    nb = min64(cg, nb, LLVMBuildSelect(B, anyzero, I64(sblock), I64(BLOCK), ""));
    for (int b = 0; b < k->nbufs; b++) {
        obase[b] = I64(0);
        for (int d = 0; d < ro; d++)
            obase[b] = LLVMBuildAdd(B, obase[b],
                                    LLVMBuildMul(B, oc[d], cg->stride[b][d], ""), "");
    }
    zero(cg, c->dat, cg->f64, c->dacc, nb);
    /* for (j0 = 0; j0 < R; j0 = jend): a chunk of rows */
    st_llvm_loop Jc;
    LLVMValueRef j0 = st_llvm_loop_begin(cg, &Jc, I64(0), R);
    LLVMValueRef jend = R;
    if (c->chunk) {
        jend = min64(cg, LLVMBuildNSWAdd(B, j0, I64(CCHUNK), ""), R);
        zero(cg, c->fat, cg->f32, c->facc, nb);
    }
    rows(cg, c, obase, oc, o, nb, R, j0, jend, fast);
    if (c->chunk) { /* dacc[i] += facc[i] */
        st_llvm_loop L;
        LLVMValueRef i = st_llvm_loop_begin(cg, &L, I64(0), nb);
        LLVMValueRef pd = slot(cg, c->dat, c->dacc, i);
        LLVMValueRef f = LLVMBuildLoad2(B, cg->f32, slot(cg, c->fat, c->facc, i), "");
        LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, cg->f64, pd, ""),
                                        LLVMBuildFPExt(B, f, cg->f64, ""), ""), pd);
        st_llvm_loop_end(cg, &L);
    }
    st_llvm_loop_next(cg, &Jc, jend);
    epilogue(cg, c, obase, oc, o, nb, R);
    st_llvm_loop_next(cg, &Ob, LLVMBuildNSWAdd(B, o, nb, ""));
    LLVMBuildRet(B, LLVMConstInt(cg->i32, 0, 0));
    LLVMPositionBuilderAtEnd(B, rowb);
}

/* plan() with its scratch arrays; emits the path when cg is not NULL */
static bool plan_and_emit(const st_kernel *k, st_llvm_cg *cg)
{
    size_t n = (size_t)k->nnodes + 1;
    col_t c;
    memset(&c, 0, sizeof c);
    char *red = calloc(n, 1), *outer = calloc(n, 1), *mark = calloc(n, 1);
    c.cls = calloc(n, sizeof(int));
    bool ok = red && outer && mark && c.cls && plan(k, &c, red, outer, mark);
    if (ok && cg) {
        st_llvm_classes(k, c.cls);
        emit(cg, &c);
    }
    free(red);
    free(outer);
    free(mark);
    free(c.cls);
    return ok;
}

bool st_llvm_emit_colreduce(st_llvm_cg *cg)
{
    return plan_and_emit(cg->k, cg);
}

bool st_llvm_has_colreduce(const st_kernel *k)
{
    return plan_and_emit(k, NULL);
}
