/* codegen_kernels.c - the loop structure of each kernel kind as one LLVM
 * function `i32 f(const st_kargs *a, i64 lo, i64 hi, st_llvm_err *err,
 * const void *extra)` (see llvm_internal.h):
 * - ELEMENTWISE (and the epilogue of a MATMUL, over [batch, M, N] with the
 *   product read from `extra`): linear points [lo, hi) walked row by row;
 *   the inner loop has a fast path, chosen at run time, where every buffer
 *   moves with stride 1 (or statically 0) so the loop vectorizer can work.
 *   With unravel loads (st_kbuf.unravel) a row is cut into segments that
 *   stay within a run of each source's innermost dim (emit_segments):
 *   one div/mod walk per segment, not per point, and inside a segment a
 *   unit-stride loop (chosen at run time) when every offset moves by one.
 * - REDUCE: a SUM/MEAN whose rows run along large strides may take the
 *   column path (codegen_colreduce.c), chosen at run time. Otherwise:
 *   outer points [lo, hi); per point each reduction is a pass over
 *   the row (trailing nred dims) accumulating in double (float64 sources;
 *   sums of float32/float16/bfloat16 in float vector lanes per chunk of
 *   the row, the chunks in double, see chunked; max/min in the source's
 *   float or double, see fmm) or int64, then the epilogue, per row point
 *   or once per outer point. A softmax-like kernel stashes its costly
 *   per-point value (exp(x - max)) in the output during the last pass and
 *   the epilogue reads it back instead of computing it again (find_stash).
 * Specialized on dtypes, rank and layout flags, never on sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"
#include <llvm-c/DebugInfo.h>

#define I64(v) st_llvm_i64c(cg, (v))
/* Points of an elementwise row whose random words are made at once: the
 * words (16 KB) stay in L1 until the row's loop reads them. */
#define RAND_RUN 4096

LLVMValueRef st_llvm_entry_alloca(st_llvm_cg *cg, LLVMTypeRef t)
{
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(cg->C);
    LLVMPositionBuilderAtEnd(ab, cg->entry);
    LLVMValueRef v = LLVMBuildAlloca(ab, t, "");
    LLVMDisposeBuilder(ab);
    return v;
}

LLVMBasicBlockRef st_llvm_bb(st_llvm_cg *cg, const char *name)
{
    return LLVMAppendBasicBlockInContext(cg->C, cg->fn, name);
}

/* for (i = start; i < end; i++): returns i, builder in the body */
LLVMValueRef st_llvm_loop_begin(st_llvm_cg *cg, st_llvm_loop *L,
                                LLVMValueRef start, LLVMValueRef end)
{
    L->var = st_llvm_entry_alloca(cg, cg->i64);
    LLVMBuildStore(cg->B, start, L->var);
    L->cond = st_llvm_bb(cg, "loop");
    LLVMBasicBlockRef body = st_llvm_bb(cg, "body");
    L->exit = st_llvm_bb(cg, "done");
    LLVMBuildBr(cg->B, L->cond);
    LLVMPositionBuilderAtEnd(cg->B, L->cond);
    L->i = LLVMBuildLoad2(cg->B, cg->i64, L->var, "i");
    LLVMBuildCondBr(cg->B, LLVMBuildICmp(cg->B, LLVMIntSLT, L->i, end, ""),
                    body, L->exit);
    LLVMPositionBuilderAtEnd(cg->B, body);
    return L->i;
}

/* closes the body with i = next (a loop of computed steps) */
void st_llvm_loop_next(st_llvm_cg *cg, st_llvm_loop *L, LLVMValueRef next)
{
    LLVMBuildStore(cg->B, next, L->var);
    LLVMBuildBr(cg->B, L->cond);
    LLVMPositionBuilderAtEnd(cg->B, L->exit);
}

void st_llvm_loop_end(st_llvm_cg *cg, st_llvm_loop *L)
{
    st_llvm_loop_next(cg, L, LLVMBuildNSWAdd(cg->B, L->i, I64(1), ""));
}

void st_llvm_reset_memo(st_llvm_cg *cg)
{
    memset(cg->vals, 0, sizeof(LLVMValueRef) * (size_t)(cg->k->nnodes + 1));
    if (cg->pre)
        for (int i = 0; i < cg->k->nnodes; i++)
            if (cg->pre[i])
                cg->vals[i] = cg->pre[i];
}

/* An index the row's points share: a plain load, from a buffer that does
 * not move along the row (dim in), used as the index of a gather or a
 * scatter (embedding lookups and their gradients: one token id per row of
 * the hidden dim). Loaded once before the row's loop: in the loop, LLVM
 * cannot move it out (a store of the loop might alias it), and its
 * per-point reload and bounds check keep the loop scalar. */
static bool used_as_index(const st_kernel *k, int i)
{
    for (int j = 0; j < k->nnodes; j++)
        if (k->nodes[j].kind == ST_KN_LOAD && k->nodes[j].idx_dim >= 0 && k->nodes[j].a == i)
            return true;
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].indexed && k->stores[s].idx_node == i)
            return true;
    return false;
}

/* Buffer b only supplies indices: an input read by plain loads whose
 * values index gathers or scatters and nothing else. In the elementwise
 * fast path it must not move along the row (stride 0: an index expanded
 * over the hidden dim), not move by 1 as the other buffers do: a varying
 * index keeps the loop scalar anyway (a bounds check per point). */
static bool index_only(const st_kernel *k, int b)
{
    if (k->bufs[b].is_out || k->bufs[b].unravel > 0 || k->kind != ST_K_ELEMENTWISE)
        return false;
    bool read = false;
    for (int i = 0; i < k->nnodes; i++) {
        const st_knode *n = &k->nodes[i];
        if (n->kind != ST_KN_LOAD || n->buf != b)
            continue;
        if (n->idx_dim >= 0 || !used_as_index(k, i))
            return false;
        for (int j = 0; j < k->nnodes; j++) { /* the index value only */
            const st_knode *u = &k->nodes[j];
            bool as_idx = u->kind == ST_KN_LOAD && u->idx_dim >= 0 && u->a == i;
            if (!as_idx && (u->a == i || u->b == i || u->c == i))
                return false;
        }
        for (int s = 0; s < k->nstores; s++)
            if (k->stores[s].node == i)
                return false;
        read = true;
    }
    return read;
}

static bool row_index(const st_kernel *k, int i, int in, bool fast)
{
    const st_knode *n = &k->nodes[i];
    if (n->kind != ST_KN_LOAD || n->idx_dim >= 0 || k->bufs[n->buf].unravel > 0 ||
        k->bufs[n->buf].is_out || !used_as_index(k, i))
        return false;
    return k->bufs[n->buf].dimmap[in] < 0 || (fast && index_only(k, n->buf));
}

/* Loads sizes, data pointers and strides of dims [0, rank). */
void st_llvm_hoist(st_llvm_cg *cg, int rank)
{
    const st_kernel *k = cg->k;
    for (int d = 0; d < rank; d++)
        cg->shape[d] = st_llvm_arg_field(cg, offsetof(st_kargs, shape) +
                                         8 * (size_t)d, cg->i64);
    for (int b = 0; b < k->nbufs; b++) {
        size_t bo = offsetof(st_kargs, bufs) + sizeof(st_karg_buf) * (size_t)b;
        cg->data[b] = st_llvm_arg_field(cg, bo + offsetof(st_karg_buf, data), cg->ptr);
        for (int d = 0; d < rank; d++)
            cg->stride[b][d] = st_llvm_arg_field(cg, bo + offsetof(st_karg_buf, strides) +
                                                 8 * (size_t)d, cg->i64);
        cg->idx_size[b] = st_llvm_arg_field(cg, bo + offsetof(st_karg_buf, idx_size), cg->i64);
        cg->idx_stride[b] = st_llvm_arg_field(cg, bo + offsetof(st_karg_buf, idx_stride), cg->i64);
        for (int j = 0; j < k->bufs[b].unravel && j < ST_MAX_DIMS; j++) {
            cg->ushape[b][j] = st_llvm_arg_field(cg, bo + offsetof(st_karg_buf, ushape) +
                                                 8 * (size_t)j, cg->i64);
            cg->ustride[b][j] = st_llvm_arg_field(cg, bo + offsetof(st_karg_buf, ustrides) +
                                                  8 * (size_t)j, cg->i64);
        }
    }
}

/* Coordinates of dims [lo, hi) from linear index x (row-major). */
void st_llvm_coords_of(st_llvm_cg *cg, LLVMValueRef x, int lo, int hi)
{
    LLVMValueRef r = x;
    for (int d = hi - 1; d > lo; d--) {
        cg->coord[d] = LLVMBuildURem(cg->B, r, cg->shape[d], "");
        r = LLVMBuildUDiv(cg->B, r, cg->shape[d], "");
    }
    if (hi > lo)
        cg->coord[lo] = r;
}

/* base[b] += sum of coord[d] * stride[b][d] over dims [lo, hi). */
static void add_offsets(st_llvm_cg *cg, LLVMValueRef *base, int lo, int hi)
{
    for (int b = 0; b < cg->k->nbufs; b++)
        for (int d = lo; d < hi; d++)
            base[b] = LLVMBuildAdd(cg->B, base[b],
                                   LLVMBuildMul(cg->B, cg->coord[d], cg->stride[b][d], ""), "");
}

/* run-time test: every buffer moves with stride 1 along dim d unless it is
 * statically broadcast there (dimmap -1: stride 0) */
static LLVMValueRef fast_test(st_llvm_cg *cg, int d)
{
    LLVMValueRef t = LLVMConstInt(cg->i1, 1, 0);
    for (int b = 0; b < cg->k->nbufs; b++)
        if (cg->k->bufs[b].dimmap[d] >= 0)
            t = LLVMBuildAnd(cg->B, t, LLVMBuildICmp(cg->B, LLVMIntEQ,
                             cg->stride[b][d], I64(index_only(cg->k, b) ? 0 : 1), ""), "");
    return t;
}

/* ---- ELEMENTWISE and MATMUL epilogue ---- */

static bool has_unravel(const st_kernel *k)
{
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].unravel > 0)
            return true;
    return false;
}

/* Source offset of linear index q of unravel buffer b (the full div/mod
 * walk over its source's dims). */
LLVMValueRef st_llvm_unravel_at(st_llvm_cg *cg, int b, LLVMValueRef q)
{
    LLVMValueRef o = I64(0);
    for (int j = cg->k->bufs[b].unravel - 1; j >= 0; j--) {
        LLVMValueRef c = j > 0 ? LLVMBuildURem(cg->B, q, cg->ushape[b][j], "") : q;
        o = LLVMBuildAdd(cg->B, o, LLVMBuildMul(cg->B, c, cg->ustride[b][j], ""), "");
        if (j > 0)
            q = LLVMBuildUDiv(cg->B, q, cg->ushape[b][j], "");
    }
    return o;
}

/* Run-time test of the segmented path: along the row, every unravel
 * buffer's linear index moves by 1 or stays (stride 0). */
static LLVMValueRef segment_test(st_llvm_cg *cg, int in)
{
    LLVMValueRef t = LLVMConstInt(cg->i1, 1, 0);
    for (int b = 0; b < cg->k->nbufs; b++) {
        if (cg->k->bufs[b].unravel <= 0)
            continue;
        LLVMValueRef s = cg->stride[b][in];
        t = LLVMBuildAnd(cg->B, t, LLVMBuildOr(cg->B,
                LLVMBuildICmp(cg->B, LLVMIntEQ, s, I64(0), ""),
                LLVMBuildICmp(cg->B, LLVMIntEQ, s, I64(1), ""), ""), "");
    }
    return t;
}

/* A row [j0, j0 + cnt) of a kernel with unravel loads (segment_test
 * true), cut into segments inside which each unravel buffer of stride 1
 * stays within one run of its source's innermost dim: its offset is then
 * the segment start's, unraveled once, plus the position times the
 * innermost source stride (a plain strided access the loop vectorizer
 * can work on); one of stride 0 is unraveled once per segment. */
static void point_body(st_llvm_cg *cg, bool mm);
static bool index_only(const st_kernel *k, int b);
static bool parallel_loop_ok(const st_kernel *k);

/* Run-time test of a segment's unit path: every buffer moving along the
 * row moves by one element (an unravel buffer along its source's
 * innermost dim, of stride 1), an index-only one not at all. */
static LLVMValueRef segment_unit(st_llvm_cg *cg, int in)
{
    const st_kernel *k = cg->k;
    LLVMValueRef t = LLVMConstInt(cg->i1, 1, 0);
    for (int b = 0; b < k->nbufs; b++) {
        if (k->bufs[b].dimmap[in] < 0)
            continue;
        int n = k->bufs[b].unravel;
        LLVMValueRef st = cg->stride[b][in];
        if (n > 0)
            st = LLVMBuildMul(cg->B, st, cg->ustride[b][n - 1], "");
        t = LLVMBuildAnd(cg->B, t, LLVMBuildICmp(cg->B, LLVMIntEQ, st,
                         I64(n <= 0 && index_only(k, b) ? 0 : 1), ""), "");
    }
    return t;
}

static void emit_segments(st_llvm_cg *cg, int rank, const LLVMValueRef *base,
                          LLVMValueRef j0, LLVMValueRef cnt, LLVMValueRef pv,
                          const LLVMValueRef *outer_coord, bool mm,
                          LLVMValueRef *unit_latch)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int in = rank - 1;
    st_llvm_loop S; /* for (s0 = 0; s0 < cnt; s0 += seg) */
    LLVMValueRef s0 = st_llvm_loop_begin(cg, &S, I64(0), cnt);
    LLVMValueRef seg = LLVMBuildSub(B, cnt, s0, "");
    LLVMValueRef segoff[ST_K_MAX_BUFS] = {0};
    for (int b = 0; b < k->nbufs; b++) {
        int n = k->bufs[b].unravel;
        if (n <= 0)
            continue;
        LLVMValueRef st = cg->stride[b][in];
        LLVMValueRef L = LLVMBuildAdd(B, base[b], LLVMBuildMul(B, s0, st, ""), "");
        LLVMValueRef last = cg->ushape[b][n - 1];
        LLVMValueRef rem = LLVMBuildSub(B, last, LLVMBuildURem(B, L, last, ""), "");
        LLVMValueRef lim = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, st, I64(1), ""),
                                        LLVMBuildICmp(B, LLVMIntSLT, rem, seg, ""), "");
        seg = LLVMBuildSelect(B, lim, rem, seg, "");
        segoff[b] = st_llvm_unravel_at(cg, b, L);
    }
    /* pass 0: every offset moves by one (the unit test: a reshape copy of
     * a head-permuted value, its 64-float runs), constant steps the loop
     * vectorizer widens; pass 1: the run-time strides (a load whose
     * stride is a variable becomes eight scalar loads a vector) */
    LLVMBasicBlockRef ub = st_llvm_bb(cg, "seg_unit"), gb = st_llvm_bb(cg, "seg_strided"),
                      done = st_llvm_bb(cg, "seg_done");
    LLVMBuildCondBr(B, segment_unit(cg, in), ub, gb);
    for (int pass = 0; pass < 2; pass++) {
        LLVMPositionBuilderAtEnd(B, pass == 0 ? ub : gb);
        st_llvm_loop Lp;
        LLVMValueRef jj = st_llvm_loop_begin(cg, &Lp, I64(0), seg);
        LLVMValueRef j = LLVMBuildNSWAdd(B, s0, jj, "");
        memcpy(cg->coord, outer_coord, sizeof(LLVMValueRef) * ST_MAX_DIMS);
        for (int b = 0; b < k->nbufs; b++) {
            int n = k->bufs[b].unravel;
            bool moves = k->bufs[b].dimmap[in] >= 0 && (n > 0 || !index_only(k, b));
            if (pass == 0 && n > 0)
                cg->off[b] = moves ? LLVMBuildNSWAdd(B, segoff[b], jj, "") : segoff[b];
            else if (pass == 0)
                cg->off[b] = moves ? LLVMBuildNSWAdd(B, base[b], j, "") : base[b];
            else if (n > 0) /* stride 1: along the innermost source dim; 0: fixed */
                cg->off[b] = LLVMBuildAdd(B, segoff[b], LLVMBuildMul(B,
                    LLVMBuildMul(B, jj, cg->stride[b][in], ""), cg->ustride[b][n - 1], ""), "");
            else
                cg->off[b] = LLVMBuildAdd(B, base[b], LLVMBuildMul(B, j, cg->stride[b][in], ""), "");
        }
        cg->coord[in] = LLVMBuildNSWAdd(B, j0, j, "");
        cg->lin = LLVMBuildNSWAdd(B, pv, j, "");
        cg->uplain = true;
        point_body(cg, mm);
        cg->uplain = false;
        LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
        st_llvm_loop_end(cg, &Lp);
        if (pass == 0 && unit_latch && !mm && parallel_loop_ok(k))
            *unit_latch = LLVMGetBasicBlockTerminator(latch);
        LLVMBuildBr(B, done);
    }
    LLVMPositionBuilderAtEnd(B, done);
    st_llvm_loop_next(cg, &S, LLVMBuildNSWAdd(B, s0, seg, ""));
}

static void point_body(st_llvm_cg *cg, bool mm)
{
    const st_kernel *k = cg->k;
    st_llvm_reset_memo(cg);
    if (mm) {
        st_dtype adt = (st_dtype)cg->mm_acc;
        LLVMTypeRef t = st_llvm_vty(cg, adt);
        LLVMValueRef p = LLVMBuildGEP2(cg->B, t, cg->extra, &cg->lin, 1, "");
        cg->reduced[0] = LLVMBuildLoad2(cg->B, t, p, "");
        cg->reduced_dt[0] = adt;
        if (k->nstores == 0)
            st_llvm_store_value(cg, 2, cg->reduced[0], adt);
    }
    for (int s = 0; s < k->nstores; s++)
        st_llvm_store(cg, s);
}

/* The unit-stride loop of an elementwise kernel is annotated parallel
 * (llvm.loop.parallel_accesses over an access group holding every load
 * and store of a buffer): each iteration reads and writes its own point,
 * so the vectorizer needs no runtime overlap checks between buffers, which
 * fail (and run the scalar loop) when an output is an input written in
 * place at the same point (an optimizer update, eager x.add_(y)). Not
 * for scatter (indexed) or accumulating stores. */
static bool parallel_loop_ok(const st_kernel *k)
{
    if (k->kind != ST_K_ELEMENTWISE)
        return false;
    for (int s = 0; s < k->nstores; s++)
        if (k->stores[s].indexed || k->stores[s].accumulate)
            return false;
    return true;
}

static bool is_buffer_access(st_llvm_cg *cg, LLVMValueRef ins)
{
    LLVMOpcode op = LLVMGetInstructionOpcode(ins);
    if (op != LLVMLoad && op != LLVMStore)
        return false;
    LLVMValueRef ptr = LLVMGetOperand(ins, op == LLVMLoad ? 0 : 1);
    if (!LLVMIsAGetElementPtrInst(ptr))
        return false;
    LLVMValueRef base = LLVMGetOperand(ptr, 0);
    for (int b = 0; b < cg->k->nbufs; b++)
        if (cg->data[b] == base || (cg->splat_ptr[b] && cg->splat_ptr[b] == base))
            return true;
    return cg->rwords && base == cg->rwords; /* the row's random words */
}

static void mark_parallel(st_llvm_cg *cg, const LLVMValueRef *latches, int n)
{
    LLVMContextRef C = cg->C;
    LLVMMetadataRef group = LLVMMDNodeInContext2(C, NULL, 0);
    LLVMValueRef gv = LLVMMetadataAsValue(C, group);
    unsigned ag = LLVMGetMDKindIDInContext(C, "llvm.access.group", 17);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(cg->fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
            if (is_buffer_access(cg, i))
                LLVMSetMetadata(i, ag, gv);
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(C, NULL, 0);
    LLVMMetadataRef pa[2] = {LLVMMDStringInContext2(C, "llvm.loop.parallel_accesses", 27), group};
    LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(C, pa, 2)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(C, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, id); /* self-referential: distinct */
    LLVMSetMetadata(latches[0], LLVMGetMDKindIDInContext(C, "llvm.loop", 9),
                    LLVMMetadataAsValue(C, id));
    for (int i = 1; i < n; i++) { /* a loop id of its own, same group */
        LLVMMetadataRef t2 = LLVMTemporaryMDNode(C, NULL, 0);
        LLVMMetadataRef o2[2] = {t2, LLVMMDNodeInContext2(C, pa, 2)};
        LLVMMetadataRef id2 = LLVMMDNodeInContext2(C, o2, 2);
        LLVMMetadataReplaceAllUsesWith(t2, id2);
        LLVMSetMetadata(latches[i], LLVMGetMDKindIDInContext(C, "llvm.loop", 9),
                        LLVMMetadataAsValue(C, id2));
    }
}

/* The splat path of an elementwise kernel: an input broadcast along the
 * innermost dim at run time (stride 0 there, as a per-channel [1, C, 1, 1]
 * operand of a graph, whose size-1 dims the kernel cannot know statically)
 * sends a row to the strided path, whose loads the vectorizer cannot widen
 * (a point's offsets recomputed, scalar loads). On this path each such
 * input's value is copied into a scratch row of SPLAT_N points first, and
 * every buffer is read and written at unit stride from a row pointer, as
 * on the fast path. Up to SPLAT_MAX_BUFS inputs: plain loads of buffers
 * without unravel or indexed loads. */
#define SPLAT_N 1024
#define SPLAT_MAX_BUFS 8

static bool splat_candidate(const st_kernel *k, int b, int in)
{
    const st_kbuf *kb = &k->bufs[b];
    if (kb->is_out || kb->dimmap[in] < 0 || kb->unravel > 0 || index_only(k, b))
        return false;
    bool used = false;
    for (int i = 0; i < k->nnodes; i++) {
        const st_knode *n = &k->nodes[i];
        if (n->kind != ST_KN_LOAD || n->buf != b)
            continue;
        if (n->idx_dim >= 0)
            return false;
        used = true;
    }
    return used;
}

/* A splat path's row pointer for buffer b, whose row starts at offset
 * base: where b's stride along the row (dim in) is 0, its value copied
 * into the n points of scratch first (then the scratch), else b's data at
 * base. Reads cg->data[b]: call before replacing it. */
static LLVMValueRef splat_row(st_llvm_cg *cg, int b, int in, LLVMValueRef scratch,
                              LLVMValueRef base, LLVMValueRef n)
{
    LLVMBuilderRef B = cg->B;
    LLVMTypeRef mt = st_llvm_mty(cg, cg->k->bufs[b].dtype);
    LLVMValueRef is0 = LLVMBuildICmp(B, LLVMIntEQ, cg->stride[b][in], I64(0), "");
    LLVMBasicBlockRef fill = st_llvm_bb(cg, "splat_fill"),
                      filled = st_llvm_bb(cg, "splat_filled");
    LLVMBuildCondBr(B, is0, fill, filled);
    LLVMPositionBuilderAtEnd(B, fill);
    LLVMValueRef v = LLVMBuildLoad2(B, mt, LLVMBuildGEP2(B, mt, cg->data[b], &base, 1, ""), "");
    st_llvm_loop F;
    LLVMValueRef q = st_llvm_loop_begin(cg, &F, I64(0), n);
    LLVMBuildStore(B, v, LLVMBuildGEP2(B, mt, scratch, &q, 1, ""));
    st_llvm_loop_end(cg, &F);
    LLVMBuildBr(B, filled);
    LLVMPositionBuilderAtEnd(B, filled);
    return LLVMBuildSelect(B, is0, scratch,
                           LLVMBuildGEP2(B, mt, cg->data[b], &base, 1, ""), "");
}

static void emit_pointwise(st_llvm_cg *cg, int rank, bool mm)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    LLVMValueRef lo = LLVMGetParam(cg->fn, 1), hi = LLVMGetParam(cg->fn, 2);
    st_llvm_hoist(cg, rank);
    int in = rank - 1;
    LLVMValueRef inner = rank > 0 ? cg->shape[in] : I64(1);
    LLVMValueRef fast = rank > 0 ? fast_test(cg, in) : LLVMConstInt(cg->i1, 1, 0);
    LLVMValueRef rwords = NULL;
    if (!mm && st_llvm_has_rand_f(k))
        rwords = st_llvm_entry_alloca(cg, LLVMArrayType(cg->i32, RAND_RUN + 8));
    /* the coordinates of the row and the point it starts at: divided out
     * of lo once, then stepped row by row (an odometer), not divided out
     * of each row's first point (rows of 8 or 16 points spent more in the
     * div/mod than in their loop) */
    LLVMValueRef cvar[ST_MAX_DIMS] = {0}, j0var = NULL;
    if (rank > 1) {
        LLVMValueRef r0 = LLVMBuildUDiv(B, lo, inner, "");
        j0var = st_llvm_entry_alloca(cg, cg->i64);
        LLVMBuildStore(B, LLVMBuildSub(B, lo, LLVMBuildMul(B, r0, inner, ""), ""), j0var);
        st_llvm_coords_of(cg, r0, 0, rank - 1);
        for (int d = 0; d < rank - 1; d++) {
            cvar[d] = st_llvm_entry_alloca(cg, cg->i64);
            LLVMBuildStore(B, cg->coord[d], cvar[d]);
        }
    }
    st_llvm_loop rows; /* for (pv = lo; pv < hi; pv += cnt) */
    LLVMValueRef pv = st_llvm_loop_begin(cg, &rows, lo, hi);
    LLVMValueRef j0, rowc[ST_MAX_DIMS] = {0};
    if (rank <= 1) {
        j0 = pv;
    } else {
        j0 = LLVMBuildLoad2(B, cg->i64, j0var, "j0");
        for (int d = 0; d < rank - 1; d++)
            rowc[d] = LLVMBuildLoad2(B, cg->i64, cvar[d], "");
    }
    LLVMValueRef left = LLVMBuildSub(B, inner, j0, ""), rest = LLVMBuildSub(B, hi, pv, "");
    LLVMValueRef cnt = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, rest, ""),
                                       left, rest, "cnt");
    bool splat[ST_K_MAX_BUFS] = {false};
    LLVMValueRef scratch[ST_K_MAX_BUFS] = {0};
    int nsplat = 0;
    for (int b = 0; rank > 0 && !mm && b < k->nbufs && nsplat < SPLAT_MAX_BUFS; b++)
        if (splat_candidate(k, b, in)) {
            splat[b] = true;
            nsplat++;
            scratch[b] = st_llvm_entry_alloca(cg, LLVMArrayType(
                st_llvm_mty(cg, k->bufs[b].dtype), SPLAT_N));
        }
    if (nsplat) { /* rows of at most SPLAT_N points (the scratch's length) */
        LLVMValueRef cap = I64(SPLAT_N);
        cnt = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, cnt, cap, ""), cnt, cap, "");
    }
    if (rwords) {
        /* at most RAND_RUN points, whose Philox words come first: a
         * block per four points (st_rand_uniform_f), in a loop of its own
         * that the vectorizer widens */
        LLVMValueRef cap = I64(RAND_RUN);
        cnt = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, cnt, cap, ""), cnt, cap, "");
        LLVMValueRef b0 = LLVMBuildLShr(B, pv, I64(2), "");
        LLVMValueRef b1 = LLVMBuildLShr(B, LLVMBuildSub(B, LLVMBuildAdd(B, pv, cnt, ""),
                                                        I64(1), ""), I64(2), "");
        st_llvm_rand_fill(cg, rwords, b0,
                          LLVMBuildAdd(B, LLVMBuildSub(B, b1, b0, ""), I64(1), ""));
        cg->rwords = rwords;
        cg->rbase = LLVMBuildShl(B, b0, I64(2), "");
    }
    for (int d = 0; d < ST_MAX_DIMS; d++)
        cg->coord[d] = d < rank - 1 ? rowc[d] : NULL;
    LLVMValueRef base[ST_K_MAX_BUFS];
    for (int b = 0; b < k->nbufs; b++)
        base[b] = rank > 0 ? LLVMBuildMul(B, j0, cg->stride[b][in], "") : I64(0);
    add_offsets(cg, base, 0, rank - 1);
    LLVMValueRef outer_coord[ST_MAX_DIMS];
    memcpy(outer_coord, cg->coord, sizeof outer_coord);
    LLVMBasicBlockRef fb = st_llvm_bb(cg, "fast"), sb = st_llvm_bb(cg, "strided"),
                      join = st_llvm_bb(cg, "join");
    LLVMBasicBlockRef spb = nsplat ? st_llvm_bb(cg, "splat") : NULL;
    LLVMValueRef seg_latch = NULL;
    if (rank > 0 && has_unravel(k)) {
        /* unravel loads: segments of the row when their indices move by
         * 0 or 1 along it, else the paths below (unravel per point) */
        LLVMBasicBlockRef segb = st_llvm_bb(cg, "segmented"),
                          other = st_llvm_bb(cg, "per_point");
        LLVMBuildCondBr(B, segment_test(cg, in), segb, other);
        LLVMPositionBuilderAtEnd(B, segb);
        emit_segments(cg, rank, base, j0, cnt, pv, outer_coord, mm, &seg_latch);
        LLVMBuildBr(B, join);
        LLVMPositionBuilderAtEnd(B, other);
    }
    if (nsplat) {
        /* not fast: the splat path when every buffer moving along the row
         * has stride 1 there, but splat candidates, which may have 0 */
        LLVMBasicBlockRef tb = st_llvm_bb(cg, "splat_test");
        LLVMBuildCondBr(B, fast, fb, tb);
        LLVMPositionBuilderAtEnd(B, tb);
        LLVMValueRef t = LLVMConstInt(cg->i1, 1, 0);
        for (int b = 0; b < k->nbufs; b++) {
            if (k->bufs[b].dimmap[in] < 0)
                continue;
            LLVMValueRef s = cg->stride[b][in];
            LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntEQ, s, I64(index_only(k, b) ? 0 : 1), "");
            if (splat[b])
                ok = LLVMBuildOr(B, ok, LLVMBuildICmp(B, LLVMIntEQ, s, I64(0), ""), "");
            t = LLVMBuildAnd(B, t, ok, "");
        }
        LLVMBuildCondBr(B, t, spb, sb);
    } else {
        LLVMBuildCondBr(B, fast, fb, sb);
    }
    LLVMValueRef par_latch = NULL, splat_latch = NULL;
    bool any_pre = false;
    for (int i = 0; rank > 0 && !mm && i < k->nnodes; i++)
        any_pre |= row_index(k, i, in, true);
    LLVMValueRef *pre = any_pre ? calloc((size_t)k->nnodes, sizeof *pre) : NULL;
    for (int pass = 0; pass < (nsplat ? 3 : 2); pass++) {
        LLVMPositionBuilderAtEnd(B, pass == 0 ? fb : pass == 1 ? sb : spb);
        LLVMValueRef saved_data[ST_K_MAX_BUFS];
        memcpy(saved_data, cg->data, sizeof saved_data);
        if (pass == 2) { /* the splat rows and the row pointers */
            for (int b = 0; b < k->nbufs; b++)
                if (splat[b])
                    cg->splat_ptr[b] = splat_row(cg, b, in, scratch[b], base[b], cnt);
            for (int b = 0; b < k->nbufs; b++)
                if (splat[b])
                    cg->data[b] = cg->splat_ptr[b];
        }
        if (pre) { /* the row's shared indices, at its first point */
            cg->pre = NULL;
            memcpy(cg->coord, outer_coord, sizeof outer_coord);
            cg->coord[in] = j0;
            for (int b = 0; b < k->nbufs; b++)
                cg->off[b] = base[b];
            cg->lin = pv;
            st_llvm_reset_memo(cg);
            memset(pre, 0, sizeof *pre * (size_t)k->nnodes);
            for (int i = 0; i < k->nnodes; i++)
                if (row_index(k, i, in, pass == 0))
                    pre[i] = st_llvm_node(cg, i);
            cg->pre = pre;
        }
        st_llvm_loop L;
        LLVMValueRef j = st_llvm_loop_begin(cg, &L, I64(0), cnt);
        memcpy(cg->coord, outer_coord, sizeof outer_coord);
        for (int b = 0; b < k->nbufs; b++) {
            if (rank == 0)
                cg->off[b] = base[b];
            else if (pass == 2 && splat[b])
                cg->off[b] = j;
            else if (pass == 0 || pass == 2)
                cg->off[b] = k->bufs[b].dimmap[in] >= 0 && !index_only(k, b)
                                 ? LLVMBuildNSWAdd(B, base[b], j, "") : base[b];
            else
                cg->off[b] = LLVMBuildAdd(B, base[b],
                                          LLVMBuildMul(B, j, cg->stride[b][in], ""), "");
        }
        if (rank > 0)
            cg->coord[in] = LLVMBuildNSWAdd(B, j0, j, "");
        cg->lin = LLVMBuildNSWAdd(B, pv, j, "");
        point_body(cg, mm);
        LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
        st_llvm_loop_end(cg, &L);
        if (pass == 0 && rank > 0 && !mm && parallel_loop_ok(k))
            par_latch = LLVMGetBasicBlockTerminator(latch);
        if (pass == 2 && parallel_loop_ok(k))
            splat_latch = LLVMGetBasicBlockTerminator(latch);
        LLVMBuildBr(B, join);
        cg->pre = NULL;
        memcpy(cg->data, saved_data, sizeof saved_data);
    }
    free(pre);
    LLVMPositionBuilderAtEnd(B, join);
    if (rank > 1) { /* the next row: j0 + cnt, carried into the coordinates at the row's end */
        LLVMValueRef nj = LLVMBuildNSWAdd(B, j0, cnt, "");
        LLVMValueRef carry = LLVMBuildICmp(B, LLVMIntEQ, nj, inner, "");
        LLVMBuildStore(B, LLVMBuildSelect(B, carry, I64(0), nj, ""), j0var);
        for (int d = rank - 2; d >= 0; d--) {
            LLVMValueRef c1 = LLVMBuildAdd(B, rowc[d], LLVMBuildZExt(B, carry, cg->i64, ""), "");
            LLVMValueRef w = LLVMBuildICmp(B, LLVMIntEQ, c1, cg->shape[d], "");
            LLVMBuildStore(B, LLVMBuildSelect(B, w, I64(0), c1, ""), cvar[d]);
            carry = LLVMBuildAnd(B, carry, w, "");
        }
    }
    st_llvm_loop_next(cg, &rows, LLVMBuildNSWAdd(B, pv, cnt, ""));
    LLVMBuildRet(B, LLVMConstInt(cg->i32, 0, 0));
    LLVMValueRef latches[3];
    int nl = 0;
    if (par_latch)
        latches[nl++] = par_latch;
    if (seg_latch)
        latches[nl++] = seg_latch;
    if (splat_latch)
        latches[nl++] = splat_latch;
    if (nl)
        mark_parallel(cg, latches, nl);
    cg->rwords = cg->rbase = NULL;
    memset(cg->splat_ptr, 0, sizeof cg->splat_ptr);
}

/* ---- REDUCE ---- */

/* The stash of a softmax-like row kernel (chosen by find_stash): the last
 * reduction pass stores node `src` (e.g. exp(x - max)) into out buffer
 * `buf` at every row point, and the per-point epilogue reads it back as
 * the value of node `dup` (its duplicate there) instead of computing it
 * again. Exact: dup has the buffer's dtype, so storing rounds nothing. */
typedef struct {
    bool on;
    int src, dup, buf;
} stash_t;

/* The accumulator of one reduction. */
typedef struct {
    LLVMValueRef acc, arg;
    bool accf;
    LLVMTypeRef at;   /* type of acc: i64, double, or float (see fmm) */
    /* chunked float sum (see chunked): facc, a float, sums CHUNK points of
     * the row in vector lanes; each chunk's sum is added to acc (double) */
    bool chunk;
    LLVMValueRef facc;
} racc_t;

/* Passes over the row: reduction r is accumulated in pass level[r], one
 * more than the latest pass of a reduction its nodes read (so independent
 * reductions, as the sums of a batch norm's backward, share one walk of
 * the row: each keeps its own accumulators, in the order of separate
 * passes); the per-point epilogue comes after the last pass. */
typedef struct {
    int rank, ro;
    stash_t stash;
    LLVMValueRef o, R, rinner, nq, fast;
    LLVMValueRef obase[ST_K_MAX_BUFS];
    LLVMValueRef outer_coord[ST_MAX_DIMS];
    /* accumulation of the reductions of pass `mode` (mode >= 0) or the
     * stores (mode -1) */
    int mode;
    int level[ST_K_MAX_REDUCE];
    racc_t ra[ST_K_MAX_REDUCE];
    bool chunk;       /* a reduction of the pass is chunked */
    /* the splat path of rows of at most SPLAT_N points (see emit_pointwise):
     * inputs constant along the row's innermost dim at run time, as a
     * batch norm's per-channel statistics */
    int nsplat;
    bool splat[ST_K_MAX_BUFS];
    LLVMValueRef scratch[ST_K_MAX_BUFS];
    LLVMValueRef splat_ok;
} rctx;

/* Whether reduction r is accumulated in the current pass. */
static bool in_pass(const st_kernel *k, const rctx *rc, int r)
{
    int nreduce = k->nreduce < 1 ? 1 : k->nreduce;
    return rc->mode >= 0 && r < nreduce && rc->level[r] == rc->mode;
}

/* rc->level of every reduction (see rctx); returns the number of passes.
 * A reduction reads another through a REDUCED node of its source's DAG or
 * of the nodes of its phase (the stash's source among them). */
static int reduce_levels(const st_kernel *k, rctx *rc)
{
    int n = k->nnodes, npass = 0;
    int nreduce = k->nreduce < 1 ? 1 : k->nreduce;
    char *live = malloc((size_t)(n > 0 ? n : 1));
    for (int r = 0; r < nreduce; r++) {
        int lv = 0;
        if (!live) {
            lv = r; /* one pass each, as before */
        } else {
            memset(live, 0, (size_t)n);
            if (k->reduce[r].src >= 0 && k->reduce[r].src < n)
                live[k->reduce[r].src] = 1;
            for (int i = n - 1; i >= 0; i--) {
                const st_knode *x = &k->nodes[i];
                if (!live[i] && x->phase != r)
                    continue;
                if (x->a >= 0) live[x->a] = 1;
                if (x->b >= 0) live[x->b] = 1;
                if (x->c >= 0) live[x->c] = 1;
                if (x->kind == ST_KN_REDUCED) {
                    if (x->i < 0 || x->i >= r) { /* not an earlier one: keep order */
                        lv = r > npass ? r : npass;
                        break;
                    }
                    if (rc->level[x->i] + 1 > lv)
                        lv = rc->level[x->i] + 1;
                }
            }
        }
        rc->level[r] = lv;
        if (lv + 1 > npass)
            npass = lv + 1;
    }
    free(live);
    return npass;
}

/* A SUM/MEAN of float16/bfloat16/float32 values accumulates in float
 * (vector lanes, reassociated: a tree of partial sums) over chunks of at
 * most CHUNK points of the row, and the chunks' sums in double: the speed
 * of float lanes, with an error bounded by the chunk length (about
 * CHUNK / lanes + log2(lanes) roundings of float, relative to the sum of
 * magnitudes), whatever the row length. The interpreter sums in double;
 * the two agree to float32 tolerance. */
#define CHUNK 512

static bool chunked(st_reduce_op op, st_dtype sdt)
{
    return (op == ST_RED_SUM || op == ST_RED_MEAN) &&
           (sdt == ST_FLOAT32 || sdt == ST_FLOAT16 || sdt == ST_BFLOAT16);
}

/* A MAX/MIN of floats accumulates in the source's value type (float for
 * float16/bfloat16/float32, double for float64) through llvm.maximum /
 * llvm.minimum, which the loop vectorizer reduces (no fast-math needed):
 * exact, since max/min only pick an element. NaN anywhere in the row gives
 * NaN, as in the interpreter. The one difference from the interpreter's
 * first-wins compare: llvm.maximum orders -0.0 < +0.0, so a row holding
 * both zeros (and nothing larger) gives +0.0 for max and -0.0 for min,
 * where the interpreter keeps whichever zero comes first. */
static bool fmm(st_reduce_op op, bool accf)
{
    return accf && (op == ST_RED_MAX || op == ST_RED_MIN);
}

static LLVMValueRef fminmax(st_llvm_cg *cg, bool mx, LLVMValueRef a,
                            LLVMValueRef b)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    const char *nm = mx ? "llvm.maximum" : "llvm.minimum";
    unsigned id = LLVMLookupIntrinsicID(nm, strlen(nm));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(cg->M, id, &t, 1);
    LLVMTypeRef ft = LLVMIntrinsicGetType(cg->C, id, &t, 1);
    LLVMValueRef args[2] = {a, b};
    return LLVMBuildCall2(cg->B, ft, f, args, 2, "");
}

static void acc_update(st_llvm_cg *cg, racc_t *ra, int r, LLVMValueRef pos)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    st_reduce_op op = k->reduce[r].op;
    int src = k->reduce[r].src;
    LLVMValueRef v = st_llvm_node(cg, src);
    st_dtype sdt = k->nodes[src].dtype;
    LLVMTypeRef at = ra->at;
    LLVMValueRef x = fmm(op, ra->accf) ? v
                     : ra->accf ? st_llvm_as_f(cg, v, sdt) : st_llvm_as_i(cg, v, sdt);
    LLVMValueRef acc = LLVMBuildLoad2(B, at, ra->acc, ""), nacc = acc;
    switch (op) {
    case ST_RED_SUM:
    case ST_RED_MEAN:
        if (ra->chunk) {
            LLVMValueRef fa = LLVMBuildLoad2(B, cg->f32, ra->facc, "");
            LLVMValueRef fs = LLVMBuildFAdd(B, fa, v, "");
            LLVMSetFastMathFlags(fs, LLVMFastMathAllowReassoc);
            LLVMBuildStore(B, fs, ra->facc);
            return;
        }
        if (ra->accf) {
            nacc = LLVMBuildFAdd(B, acc, x, "");
            LLVMSetFastMathFlags(nacc, LLVMFastMathAllowReassoc);
        } else {
            nacc = LLVMBuildAdd(B, acc, x, "");
        }
        break;
    case ST_RED_PROD:
        if (ra->accf) {
            nacc = LLVMBuildFMul(B, acc, x, "");
            LLVMSetFastMathFlags(nacc, LLVMFastMathAllowReassoc);
        } else {
            nacc = LLVMBuildMul(B, acc, x, "");
        }
        break;
    case ST_RED_MAX:
    case ST_RED_MIN: {
        if (ra->accf) {
            nacc = fminmax(cg, op == ST_RED_MAX, acc, x);
        } else {
            LLVMValueRef c = LLVMBuildICmp(B, op == ST_RED_MAX ? LLVMIntSGT : LLVMIntSLT,
                                           x, acc, "");
            nacc = LLVMBuildSelect(B, c, x, acc, "");
        }
        break;
    }
    case ST_RED_ARGMAX:
    case ST_RED_ARGMIN: {
        bool mx = op == ST_RED_ARGMAX;
        LLVMValueRef c;
        if (ra->accf)
            c = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealORD, acc, acc, ""),
                    LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""),
                                LLVMBuildFCmp(B, mx ? LLVMRealOGT : LLVMRealOLT, x, acc, ""), ""), "");
        else
            c = LLVMBuildICmp(B, mx ? LLVMIntSGT : LLVMIntSLT, x, acc, "");
        nacc = LLVMBuildSelect(B, c, x, acc, "");
        LLVMValueRef arg = LLVMBuildLoad2(B, cg->i64, ra->arg, "");
        LLVMBuildStore(B, LLVMBuildSelect(B, c, pos, arg, ""), ra->arg);
        break;
    }
    }
    LLVMBuildStore(B, nacc, ra->acc);
}

static void row_point(st_llvm_cg *cg, rctx *rc, LLVMValueRef pos)
{
    st_llvm_reset_memo(cg);
    cg->lin = LLVMBuildAdd(cg->B, LLVMBuildMul(cg->B, rc->o, rc->R, ""), pos, "");
    const stash_t *sh = &rc->stash;
    if (rc->mode >= 0) {
        for (int r = 0; r < ST_K_MAX_REDUCE; r++)
            if (in_pass(cg->k, rc, r))
                acc_update(cg, &rc->ra[r], r, pos);
        if (sh->on && in_pass(cg->k, rc, cg->k->nreduce - 1))
            st_llvm_store_value(cg, sh->buf, st_llvm_node(cg, sh->src),
                                cg->k->nodes[sh->src].dtype);
    } else {
        if (sh->on) {
            st_dtype bdt = cg->k->bufs[sh->buf].dtype;
            LLVMTypeRef mt = st_llvm_mty(cg, bdt);
            LLVMValueRef p = LLVMBuildGEP2(cg->B, mt, cg->data[sh->buf],
                                           &cg->off[sh->buf], 1, "");
            cg->vals[sh->dup] = st_llvm_from_mem(cg, LLVMBuildLoad2(cg->B, mt, p, ""), bdt);
        }
        for (int s = 0; s < cg->k->nstores; s++)
            st_llvm_store(cg, s);
    }
}

/* Zeroes the float chunk sums of the pass's chunked reductions. */
static void chunk_reset(st_llvm_cg *cg, rctx *rc)
{
    for (int r = 0; r < ST_K_MAX_REDUCE; r++)
        if (in_pass(cg->k, rc, r) && rc->ra[r].chunk)
            LLVMBuildStore(cg->B, LLVMConstReal(cg->f32, 0.0), rc->ra[r].facc);
}

/* Adds the chunk sums of the pass's chunked reductions into their double
 * accumulators. */
static void chunk_flush(st_llvm_cg *cg, rctx *rc)
{
    LLVMBuilderRef B = cg->B;
    for (int r = 0; r < ST_K_MAX_REDUCE; r++) {
        if (!in_pass(cg->k, rc, r) || !rc->ra[r].chunk)
            continue;
        racc_t *ra = &rc->ra[r];
        LLVMValueRef fa = LLVMBuildLoad2(B, cg->f32, ra->facc, "");
        LLVMValueRef a = LLVMBuildLoad2(B, cg->f64, ra->acc, "");
        LLVMBuildStore(B, LLVMBuildFAdd(B, a, LLVMBuildFPExt(B, fa, cg->f64, ""), ""),
                       ra->acc);
    }
}

/* Walks the row of the current outer point. */
static void row_walk(st_llvm_cg *cg, rctx *rc)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int rank = rc->rank, ro = rc->ro, in = rank - 1;
    memcpy(cg->coord, rc->outer_coord, sizeof rc->outer_coord);
    if (rank == ro) { /* a 0-d row: the single point */
        for (int b = 0; b < k->nbufs; b++)
            cg->off[b] = rc->obase[b];
        chunk_reset(cg, rc);
        row_point(cg, rc, I64(0));
        chunk_flush(cg, rc);
        return;
    }
    st_llvm_loop Q;
    LLVMValueRef q = st_llvm_loop_begin(cg, &Q, I64(0), rc->nq);
    memcpy(cg->coord, rc->outer_coord, sizeof rc->outer_coord);
    st_llvm_coords_of(cg, q, ro, in);
    LLVMValueRef rbase[ST_K_MAX_BUFS];
    memcpy(rbase, rc->obase, sizeof rbase);
    add_offsets(cg, rbase, ro, in);
    LLVMValueRef qbase = LLVMBuildMul(B, q, rc->rinner, "");
    LLVMValueRef rowcoord[ST_MAX_DIMS];
    memcpy(rowcoord, cg->coord, sizeof rowcoord);
    LLVMBasicBlockRef fb = st_llvm_bb(cg, "rfast"), sb = st_llvm_bb(cg, "rstrided"),
                      join = st_llvm_bb(cg, "rjoin");
    LLVMBasicBlockRef spb = rc->nsplat ? st_llvm_bb(cg, "rsplat") : NULL;
    if (rc->nsplat) {
        LLVMBasicBlockRef tb = st_llvm_bb(cg, "rsplat_test");
        LLVMBuildCondBr(B, rc->fast, fb, tb);
        LLVMPositionBuilderAtEnd(B, tb);
        LLVMBuildCondBr(B, rc->splat_ok, spb, sb);
    } else {
        LLVMBuildCondBr(B, rc->fast, fb, sb);
    }
    for (int pass = 0; pass < (rc->nsplat ? 3 : 2); pass++) {
        LLVMPositionBuilderAtEnd(B, pass == 0 ? fb : pass == 1 ? sb : spb);
        LLVMValueRef saved_data[ST_K_MAX_BUFS];
        memcpy(saved_data, cg->data, sizeof saved_data);
        if (pass == 2) { /* the splat rows and the row pointers */
            for (int b = 0; b < k->nbufs; b++)
                if (rc->splat[b])
                    cg->data[b] = splat_row(cg, b, in, rc->scratch[b], rbase[b], rc->rinner);
        }
        st_llvm_loop L, Ch = {0};
        LLVMValueRef j0 = I64(0), jend = rc->rinner;
        if (rc->chunk) { /* for (j0 = 0; j0 < rinner; j0 += CHUNK) */
            j0 = st_llvm_loop_begin(cg, &Ch, I64(0), rc->rinner);
            LLVMValueRef e = LLVMBuildNSWAdd(B, j0, I64(CHUNK), "");
            jend = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, e, rc->rinner, ""),
                                   e, rc->rinner, "");
            chunk_reset(cg, rc);
        }
        LLVMValueRef j = st_llvm_loop_begin(cg, &L, j0, jend);
        memcpy(cg->coord, rowcoord, sizeof rowcoord);
        for (int b = 0; b < k->nbufs; b++) {
            if (pass == 2 && rc->splat[b])
                cg->off[b] = j;
            else if (pass == 0 || pass == 2)
                cg->off[b] = k->bufs[b].dimmap[in] >= 0
                                 ? LLVMBuildNSWAdd(B, rbase[b], j, "") : rbase[b];
            else
                cg->off[b] = LLVMBuildAdd(B, rbase[b],
                                          LLVMBuildMul(B, j, cg->stride[b][in], ""), "");
        }
        cg->coord[in] = j;
        row_point(cg, rc, LLVMBuildNSWAdd(B, qbase, j, ""));
        st_llvm_loop_end(cg, &L);
        if (rc->chunk) {
            chunk_flush(cg, rc);
            st_llvm_loop_next(cg, &Ch, jend);
        }
        LLVMBuildBr(B, join);
        memcpy(cg->data, saved_data, sizeof saved_data);
    }
    LLVMPositionBuilderAtEnd(B, join);
    st_llvm_loop_end(cg, &Q);
}

/* ---- the stash ---- */

static bool same_scalar(const st_knode *x, const st_knode *y)
{
    return x->kind == y->kind && x->dtype == y->dtype && x->op == y->op &&
           x->buf == y->buf && x->idx_dim == y->idx_dim && x->i == y->i &&
           memcmp(&x->f, &y->f, sizeof x->f) == 0;
}

/* cls[i]: the first node structurally equal to node i, phases aside
 * (same fields, operands of the same classes). */
void st_llvm_classes(const st_kernel *k, int *cls)
{
    for (int i = 0; i < k->nnodes; i++) {
        const st_knode *x = &k->nodes[i];
        cls[i] = i;
        for (int j = 0; j < i; j++) {
            const st_knode *y = &k->nodes[j];
            if (cls[j] == j && same_scalar(x, y) &&
                (x->a < 0 ? y->a < 0 : y->a >= 0 && cls[x->a] == cls[y->a]) &&
                (x->b < 0 ? y->b < 0 : y->b >= 0 && cls[x->b] == cls[y->b]) &&
                (x->c < 0 ? y->c < 0 : y->c >= 0 && cls[x->c] == cls[y->c])) {
                cls[i] = j;
                break;
            }
        }
    }
}

static bool costly(const st_knode *n)
{
    if (n->kind == ST_KN_BINARY)
        return n->op == ST_OP_POW;
    if (n->kind != ST_KN_UNARY)
        return false;
    switch (n->op) {
    case ST_OP_EXP: case ST_OP_LOG: case ST_OP_TANH: case ST_OP_SIGMOID:
    case ST_OP_ERF: case ST_OP_SIN: case ST_OP_COS:
        return true;
    default:
        return false;
    }
}

/* mark[i] = 1 for the epilogue nodes the stores use, not looking through
 * node `cut` (-1: none); returns whether one of them is a LOAD. */
static bool live_epilogue(const st_kernel *k, int cut, char *mark)
{
    memset(mark, 0, (size_t)k->nnodes);
    for (int s = 0; s < k->nstores; s++) {
        mark[k->stores[s].node] = 1;
        if (k->stores[s].indexed)
            mark[k->stores[s].idx_node] = 1;
    }
    bool load = false;
    for (int i = k->nnodes - 1; i >= 0; i--) {
        if (!mark[i] || i == cut)
            continue;
        const st_knode *n = &k->nodes[i];
        load |= n->kind == ST_KN_LOAD;
        if (n->a >= 0) mark[n->a] = 1;
        if (n->b >= 0) mark[n->b] = 1;
        if (n->c >= 0) mark[n->c] = 1;
    }
    return load;
}

/* Picks the stash of a REDUCE kernel with a per-point epilogue: the latest
 * epilogue node `dup` that repeats a node `src` of the last reduction
 * pass, holds a costly op (exp, log, ...) and has the dtype of an output
 * written once at every point with a plain store. Taken only when the
 * epilogue then loads nothing (so an output sharing memory with an input,
 * as an in-place eager op may bind, is never read after the stash wrote
 * it). */
static stash_t find_stash(const st_kernel *k)
{
    stash_t st = {false, -1, -1, -1};
    if (k->kind != ST_K_REDUCE || !k->final_per_point || k->nreduce < 1 ||
        k->nnodes < 2)
        return st;
    int n = k->nnodes, last = k->nreduce - 1;
    int *cls = malloc(sizeof(int) * (size_t)n);
    char *mark = malloc((size_t)n), *cost = malloc((size_t)n);
    if (!cls || !mark || !cost)
        goto out;
    st_llvm_classes(k, cls);
    live_epilogue(k, -1, mark);
    for (int i = 0; i < n; i++) {
        const st_knode *x = &k->nodes[i];
        cost[i] = costly(x) || (x->a >= 0 && cost[x->a]) ||
                  (x->b >= 0 && cost[x->b]) || (x->c >= 0 && cost[x->c]);
    }
    for (int e = n - 1; e >= 0 && !st.on; e--) {
        const st_knode *x = &k->nodes[e];
        if (x->phase != k->nreduce || !mark[e] || !cost[e] ||
            !st_dtype_is_float(x->dtype))
            continue;
        int src = -1;
        for (int j = 0; j < n && src < 0; j++)
            if (k->nodes[j].phase == last && cls[j] == cls[e])
                src = j;
        if (src < 0)
            continue;
        for (int b = 0; b < k->nbufs && !st.on; b++) {
            const st_kbuf *kb = &k->bufs[b];
            if (!kb->is_out || kb->dtype != x->dtype)
                continue;
            bool ok = true;
            for (int d = 0; d < k->rank; d++)
                ok &= kb->dimmap[d] >= 0;
            int nst = 0;
            for (int s = 0; s < k->nstores; s++)
                if (k->stores[s].buf == b) {
                    nst++;
                    ok &= !k->stores[s].indexed && !k->stores[s].accumulate;
                }
            for (int i = 0; i < n; i++)
                ok &= !(k->nodes[i].kind == ST_KN_LOAD && k->nodes[i].buf == b);
            if (ok && nst == 1) {
                st.on = true;
                st.src = src;
                st.dup = e;
                st.buf = b;
            }
        }
    }
    if (st.on && live_epilogue(k, st.dup, mark))
        st.on = false;
out:
    free(cls);
    free(mark);
    free(cost);
    return st;
}

/* The epilogue's stores once per outer point (row coordinates unset,
 * offsets of the outer point, linear index o); only: those marked, or all */
static void outer_stores(st_llvm_cg *cg, const rctx *rc, const bool *only)
{
    const st_kernel *k = cg->k;
    st_llvm_reset_memo(cg);
    memcpy(cg->coord, rc->outer_coord, sizeof rc->outer_coord);
    for (int d = rc->ro; d < ST_MAX_DIMS; d++)
        cg->coord[d] = NULL;
    for (int b = 0; b < k->nbufs; b++)
        cg->off[b] = rc->obase[b];
    cg->lin = rc->o;
    for (int s = 0; s < k->nstores; s++)
        if (!only || only[s])
            st_llvm_store(cg, s);
}

static void emit_reduce(st_llvm_cg *cg)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    LLVMValueRef lo = LLVMGetParam(cg->fn, 1), hi = LLVMGetParam(cg->fn, 2);
    rctx rc;
    memset(&rc, 0, sizeof rc);
    rc.rank = k->rank;
    rc.ro = k->rank - k->nred;
    rc.stash = find_stash(k);
    int npass = reduce_levels(k, &rc);
    st_llvm_hoist(cg, rc.rank);
    st_llvm_emit_colreduce(cg); /* when eligible: the column path first */
    rc.R = I64(1);
    for (int d = rc.ro; d < rc.rank; d++)
        rc.R = LLVMBuildMul(B, rc.R, cg->shape[d], "");
    if (rc.rank > rc.ro) {
        rc.rinner = cg->shape[rc.rank - 1];
        LLVMValueRef z = LLVMBuildICmp(B, LLVMIntEQ, rc.rinner, I64(0), "");
        LLVMValueRef safe = LLVMBuildSelect(B, z, I64(1), rc.rinner, "");
        rc.nq = LLVMBuildSelect(B, z, I64(0), LLVMBuildUDiv(B, rc.R, safe, ""), "");
        rc.fast = fast_test(cg, rc.rank - 1);
        int in = rc.rank - 1;
        for (int b = 0; b < k->nbufs && rc.nsplat < SPLAT_MAX_BUFS; b++)
            if (splat_candidate(k, b, in) && !(rc.stash.on && rc.stash.buf == b)) {
                rc.splat[b] = true;
                rc.nsplat++;
                rc.scratch[b] = st_llvm_entry_alloca(cg, LLVMArrayType(
                    st_llvm_mty(cg, k->bufs[b].dtype), SPLAT_N));
            }
        if (rc.nsplat) {
            /* rows of at most SPLAT_N points whose buffers moving along
             * the row have stride 1 there, but splat candidates (0 or 1) */
            LLVMValueRef t = LLVMBuildICmp(B, LLVMIntULE, rc.rinner, I64(SPLAT_N), "");
            for (int b = 0; b < k->nbufs; b++) {
                if (k->bufs[b].dimmap[in] < 0)
                    continue;
                LLVMValueRef st = cg->stride[b][in];
                LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntEQ, st,
                                                I64(index_only(k, b) ? 0 : 1), "");
                if (rc.splat[b])
                    ok = LLVMBuildOr(B, ok, LLVMBuildICmp(B, LLVMIntEQ, st, I64(0), ""), "");
                t = LLVMBuildAnd(B, t, ok, "");
            }
            rc.splat_ok = t;
        }
    }
    int nreduce = k->nreduce < 1 ? 1 : k->nreduce;
    st_llvm_loop O;
    rc.o = st_llvm_loop_begin(cg, &O, lo, hi);
    for (int d = 0; d < ST_MAX_DIMS; d++)
        cg->coord[d] = NULL;
    st_llvm_coords_of(cg, rc.o, 0, rc.ro);
    memcpy(rc.outer_coord, cg->coord, sizeof rc.outer_coord);
    for (int b = 0; b < k->nbufs; b++)
        rc.obase[b] = I64(0);
    add_offsets(cg, rc.obase, 0, rc.ro);
    for (int r = 0; r < ST_K_MAX_REDUCE; r++)
        cg->reduced[r] = NULL;
    for (int pass = 0; pass < npass; pass++) {
        rc.mode = pass;
        rc.chunk = false;
        for (int r = 0; r < nreduce; r++) {
            if (rc.level[r] != pass)
                continue;
            racc_t *ra = &rc.ra[r];
            st_reduce_op op = k->reduce[r].op;
            st_dtype sdt = k->nodes[k->reduce[r].src].dtype;
            ra->accf = st_dtype_is_float(sdt);
            ra->chunk = chunked(op, sdt);
            rc.chunk |= ra->chunk;
            LLVMTypeRef at = fmm(op, ra->accf) ? st_llvm_vty(cg, sdt)
                             : ra->accf ? cg->f64 : cg->i64;
            ra->at = at;
            ra->acc = st_llvm_entry_alloca(cg, at);
            ra->arg = st_llvm_entry_alloca(cg, cg->i64);
            ra->facc = st_llvm_entry_alloca(cg, cg->f32);
            LLVMValueRef init;
            bool mx = op == ST_RED_MAX || op == ST_RED_ARGMAX;
            bool mn = op == ST_RED_MIN || op == ST_RED_ARGMIN;
            if (ra->accf)
                init = LLVMConstReal(at, op == ST_RED_PROD ? 1.0 : mx ? -INFINITY
                                     : mn ? INFINITY : 0.0);
            else
                init = I64(op == ST_RED_PROD ? 1 : mx ? INT64_MIN : mn ? INT64_MAX : 0);
            LLVMBuildStore(B, init, ra->acc);
            LLVMBuildStore(B, I64(0), ra->arg);
        }
        row_walk(cg, &rc);
        for (int r = 0; r < nreduce; r++) {
            if (rc.level[r] != pass)
                continue;
            racc_t *ra = &rc.ra[r];
            st_reduce_op op = k->reduce[r].op;
            LLVMTypeRef at = ra->at;
            LLVMValueRef acc = LLVMBuildLoad2(B, at, ra->acc, "");
            if (op == ST_RED_ARGMAX || op == ST_RED_ARGMIN) {
                cg->reduced[r] = LLVMBuildLoad2(B, cg->i64, ra->arg, "");
                cg->reduced_dt[r] = ST_INT64;
            } else if (op == ST_RED_MEAN) {
                LLVMValueRef s = ra->accf ? acc : LLVMBuildSIToFP(B, acc, cg->f64, "");
                cg->reduced[r] = LLVMBuildFDiv(B, s, LLVMBuildSIToFP(B, rc.R, cg->f64, ""), "");
                cg->reduced_dt[r] = ST_FLOAT64;
            } else {
                if (at == cg->f32)
                    acc = LLVMBuildFPExt(B, acc, cg->f64, "");
                cg->reduced[r] = acc;
                cg->reduced_dt[r] = ra->accf ? ST_FLOAT64 : ST_INT64;
            }
        }
    }
    rc.mode = -1;
    rc.chunk = false;
    bool os[ST_K_MAX_STORES];
    if (!k->final_per_point) {
        outer_stores(cg, &rc, NULL);
    } else {
        row_walk(cg, &rc);
        if (st_kernel_outer_stores(k, os)) {
            /* an empty row visits no point: its row-constant stores (a sum
             * beside a per-point output) are made per outer point */
            LLVMBasicBlockRef eb = st_llvm_bb(cg, "emptyrow"),
                              jb = st_llvm_bb(cg, "emptyrow_done");
            LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, rc.R, I64(0), ""), eb, jb);
            LLVMPositionBuilderAtEnd(B, eb);
            outer_stores(cg, &rc, os);
            LLVMBuildBr(B, jb);
            LLVMPositionBuilderAtEnd(B, jb);
            st_llvm_reset_memo(cg);
        }
    }
    st_llvm_loop_end(cg, &O);
    LLVMBuildRet(B, LLVMConstInt(cg->i32, 0, 0));
}

/* ---- functions ---- */

st_dtype st_llvm_mm_acc(const st_kernel *k)
{
    st_dtype ta = k->bufs[0].dtype, tb = k->bufs[1].dtype,
             tc = k->nbufs > 2 ? k->bufs[2].dtype : ST_FLOAT32;
    if (!st_dtype_is_float(ta) && !st_dtype_is_float(tb))
        return ST_INT64;
    if (ta == ST_FLOAT64 || tb == ST_FLOAT64 || tc == ST_FLOAT64)
        return ST_FLOAT64;
    return ST_FLOAT32;
}

static void add_attr(st_llvm_cg *cg, unsigned idx, const char *name)
{
    unsigned kid = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(cg->fn, idx, LLVMCreateEnumAttribute(cg->C, kid, 0));
}

st_status st_llvm_emit_kernel(st_llvm_cg *cg, const st_kernel *k,
                              const char *name)
{
    cg->k = k;
    cg->errmsg[0] = 0;
    LLVMTypeRef pt[5] = {cg->ptr, cg->i64, cg->i64, cg->ptr, cg->ptr};
    LLVMTypeRef ft = LLVMFunctionType(cg->i32, pt, 5, 0);
    cg->fn = LLVMAddFunction(cg->M, name, ft);
    add_attr(cg, LLVMAttributeFunctionIndex, "nounwind");
    add_attr(cg, 1, "noalias");
    add_attr(cg, 1, "readonly");
    add_attr(cg, 1, "nocapture");
    add_attr(cg, 4, "noalias");
    add_attr(cg, 4, "nocapture");
    add_attr(cg, 5, "noalias");
    add_attr(cg, 5, "readonly");
    add_attr(cg, 5, "nocapture");
    cg->args = LLVMGetParam(cg->fn, 0);
    cg->err = LLVMGetParam(cg->fn, 3);
    cg->extra = LLVMGetParam(cg->fn, 4);
    cg->vals = calloc((size_t)k->nnodes + 1, sizeof *cg->vals);
    if (!cg->vals)
        return st_err(ST_ERR_MEMORY, "llvm: out of memory");
    cg->entry = st_llvm_bb(cg, "entry");
    LLVMBasicBlockRef start = st_llvm_bb(cg, "start");
    LLVMPositionBuilderAtEnd(cg->B, start);
    memset(cg->reduced, 0, sizeof cg->reduced);
    switch (k->kind) {
    case ST_K_ELEMENTWISE:
        emit_pointwise(cg, k->rank, false);
        break;
    case ST_K_MATMUL:
        cg->mm_acc = (int)st_llvm_mm_acc(k);
        emit_pointwise(cg, k->rank - 1, true);
        break;
    case ST_K_REDUCE:
        emit_reduce(cg);
        break;
    default:
        snprintf(cg->errmsg, sizeof cg->errmsg, "bad kernel kind %d", (int)k->kind);
        break;
    }
    LLVMPositionBuilderAtEnd(cg->B, cg->entry);
    LLVMBuildBr(cg->B, start);
    free(cg->vals);
    cg->vals = NULL;
    if (cg->errmsg[0])
        return st_err(ST_ERR_RUNTIME, "llvm: kernel %s: %s", k->name, cg->errmsg);
    return ST_OK;
}
