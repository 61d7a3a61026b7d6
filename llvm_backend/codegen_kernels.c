/* codegen_kernels.c - the loop structure of each kernel kind as one LLVM
 * function `i32 f(const st_kargs *a, i64 lo, i64 hi, st_llvm_err *err,
 * const void *extra)` (see llvm_internal.h):
 * - ELEMENTWISE (and the epilogue of a MATMUL, over [batch, M, N] with the
 *   product read from `extra`): linear points [lo, hi) walked row by row;
 *   the inner loop has a fast path, chosen at run time, where every buffer
 *   moves with stride 1 (or statically 0) so the loop vectorizer can work.
 * - REDUCE: outer points [lo, hi); per point each reduction is a pass over
 *   the row (trailing nred dims) accumulating in double (float sources;
 *   max/min in the source's float or double, see fmm) or int64, then the
 *   epilogue, per row point or once per outer point.
 * Specialized on dtypes, rank and layout flags, never on sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

#define I64(v) st_llvm_i64c(cg, (v))

typedef struct {
    LLVMValueRef var, i;
    LLVMBasicBlockRef cond, exit;
} loop_t;

static LLVMValueRef entry_alloca(st_llvm_cg *cg, LLVMTypeRef t)
{
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(cg->C);
    LLVMPositionBuilderAtEnd(ab, cg->entry);
    LLVMValueRef v = LLVMBuildAlloca(ab, t, "");
    LLVMDisposeBuilder(ab);
    return v;
}

static LLVMBasicBlockRef bb(st_llvm_cg *cg, const char *name)
{
    return LLVMAppendBasicBlockInContext(cg->C, cg->fn, name);
}

/* for (i = start; i < end; i++): returns i, builder in the body */
static LLVMValueRef loop_begin(st_llvm_cg *cg, loop_t *L, LLVMValueRef start,
                               LLVMValueRef end)
{
    L->var = entry_alloca(cg, cg->i64);
    LLVMBuildStore(cg->B, start, L->var);
    L->cond = bb(cg, "loop");
    LLVMBasicBlockRef body = bb(cg, "body");
    L->exit = bb(cg, "done");
    LLVMBuildBr(cg->B, L->cond);
    LLVMPositionBuilderAtEnd(cg->B, L->cond);
    L->i = LLVMBuildLoad2(cg->B, cg->i64, L->var, "i");
    LLVMBuildCondBr(cg->B, LLVMBuildICmp(cg->B, LLVMIntSLT, L->i, end, ""),
                    body, L->exit);
    LLVMPositionBuilderAtEnd(cg->B, body);
    return L->i;
}

static void loop_end(st_llvm_cg *cg, loop_t *L)
{
    LLVMBuildStore(cg->B, LLVMBuildNSWAdd(cg->B, L->i, I64(1), ""), L->var);
    LLVMBuildBr(cg->B, L->cond);
    LLVMPositionBuilderAtEnd(cg->B, L->exit);
}

static void reset_memo(st_llvm_cg *cg)
{
    memset(cg->vals, 0, sizeof(LLVMValueRef) * (size_t)(cg->k->nnodes + 1));
}

/* Loads sizes, data pointers and strides of dims [0, rank). */
static void hoist(st_llvm_cg *cg, int rank)
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
    }
}

/* Coordinates of dims [lo, hi) from linear index x (row-major). */
static void coords_of(st_llvm_cg *cg, LLVMValueRef x, int lo, int hi)
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
                             cg->stride[b][d], I64(1), ""), "");
    return t;
}

/* ---- ELEMENTWISE and MATMUL epilogue ---- */

static void point_body(st_llvm_cg *cg, bool mm)
{
    const st_kernel *k = cg->k;
    reset_memo(cg);
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

static void emit_pointwise(st_llvm_cg *cg, int rank, bool mm)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    LLVMValueRef lo = LLVMGetParam(cg->fn, 1), hi = LLVMGetParam(cg->fn, 2);
    hoist(cg, rank);
    int in = rank - 1;
    LLVMValueRef inner = rank > 0 ? cg->shape[in] : I64(1);
    LLVMValueRef fast = rank > 0 ? fast_test(cg, in) : LLVMConstInt(cg->i1, 1, 0);
    loop_t rows;
    /* the row loop steps by cnt: a manual loop on p */
    LLVMValueRef pvar = entry_alloca(cg, cg->i64);
    LLVMBuildStore(B, lo, pvar);
    rows.cond = bb(cg, "rows");
    LLVMBasicBlockRef rbody = bb(cg, "row");
    rows.exit = bb(cg, "end");
    LLVMBuildBr(B, rows.cond);
    LLVMPositionBuilderAtEnd(B, rows.cond);
    LLVMValueRef pv = LLVMBuildLoad2(B, cg->i64, pvar, "p");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, pv, hi, ""), rbody, rows.exit);
    LLVMPositionBuilderAtEnd(B, rbody);
    LLVMValueRef row, j0;
    if (rank <= 1) {
        row = I64(0);
        j0 = pv;
    } else {
        row = LLVMBuildUDiv(B, pv, inner, "");
        j0 = LLVMBuildSub(B, pv, LLVMBuildMul(B, row, inner, ""), "");
    }
    LLVMValueRef left = LLVMBuildSub(B, inner, j0, ""), rest = LLVMBuildSub(B, hi, pv, "");
    LLVMValueRef cnt = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, rest, ""),
                                       left, rest, "cnt");
    for (int d = 0; d < ST_MAX_DIMS; d++)
        cg->coord[d] = NULL;
    coords_of(cg, row, 0, rank - 1);
    LLVMValueRef base[ST_K_MAX_BUFS];
    for (int b = 0; b < k->nbufs; b++)
        base[b] = rank > 0 ? LLVMBuildMul(B, j0, cg->stride[b][in], "") : I64(0);
    add_offsets(cg, base, 0, rank - 1);
    LLVMValueRef outer_coord[ST_MAX_DIMS];
    memcpy(outer_coord, cg->coord, sizeof outer_coord);
    LLVMBasicBlockRef fb = bb(cg, "fast"), sb = bb(cg, "strided"), join = bb(cg, "join");
    LLVMBuildCondBr(B, fast, fb, sb);
    for (int pass = 0; pass < 2; pass++) {
        LLVMPositionBuilderAtEnd(B, pass == 0 ? fb : sb);
        loop_t L;
        LLVMValueRef j = loop_begin(cg, &L, I64(0), cnt);
        memcpy(cg->coord, outer_coord, sizeof outer_coord);
        for (int b = 0; b < k->nbufs; b++) {
            if (rank == 0)
                cg->off[b] = base[b];
            else if (pass == 0)
                cg->off[b] = k->bufs[b].dimmap[in] >= 0
                                 ? LLVMBuildNSWAdd(B, base[b], j, "") : base[b];
            else
                cg->off[b] = LLVMBuildAdd(B, base[b],
                                          LLVMBuildMul(B, j, cg->stride[b][in], ""), "");
        }
        if (rank > 0)
            cg->coord[in] = LLVMBuildNSWAdd(B, j0, j, "");
        cg->lin = LLVMBuildNSWAdd(B, pv, j, "");
        point_body(cg, mm);
        loop_end(cg, &L);
        LLVMBuildBr(B, join);
    }
    LLVMPositionBuilderAtEnd(B, join);
    LLVMBuildStore(B, LLVMBuildNSWAdd(B, pv, cnt, ""), pvar);
    LLVMBuildBr(B, rows.cond);
    LLVMPositionBuilderAtEnd(B, rows.exit);
    LLVMBuildRet(B, LLVMConstInt(cg->i32, 0, 0));
}

/* ---- REDUCE ---- */

typedef struct {
    int rank, ro;
    LLVMValueRef o, R, rinner, nq, fast;
    LLVMValueRef obase[ST_K_MAX_BUFS];
    LLVMValueRef outer_coord[ST_MAX_DIMS];
    /* accumulation of reduction r (mode >= 0) or the stores (mode -1) */
    int mode;
    LLVMValueRef acc, arg;
    bool accf;
    LLVMTypeRef at;   /* type of acc: i64, double, or float (see fmm) */
} rctx;

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

static void acc_update(st_llvm_cg *cg, rctx *rc, LLVMValueRef pos)
{
    const st_kernel *k = cg->k;
    LLVMBuilderRef B = cg->B;
    int r = rc->mode;
    st_reduce_op op = k->reduce[r].op;
    int src = k->reduce[r].src;
    LLVMValueRef v = st_llvm_node(cg, src);
    st_dtype sdt = k->nodes[src].dtype;
    LLVMTypeRef at = rc->at;
    LLVMValueRef x = fmm(op, rc->accf) ? v
                     : rc->accf ? st_llvm_as_f(cg, v, sdt) : st_llvm_as_i(cg, v, sdt);
    LLVMValueRef acc = LLVMBuildLoad2(B, at, rc->acc, ""), nacc = acc;
    switch (op) {
    case ST_RED_SUM:
    case ST_RED_MEAN:
        if (rc->accf) {
            nacc = LLVMBuildFAdd(B, acc, x, "");
            LLVMSetFastMathFlags(nacc, LLVMFastMathAllowReassoc);
        } else {
            nacc = LLVMBuildAdd(B, acc, x, "");
        }
        break;
    case ST_RED_PROD:
        if (rc->accf) {
            nacc = LLVMBuildFMul(B, acc, x, "");
            LLVMSetFastMathFlags(nacc, LLVMFastMathAllowReassoc);
        } else {
            nacc = LLVMBuildMul(B, acc, x, "");
        }
        break;
    case ST_RED_MAX:
    case ST_RED_MIN: {
        if (rc->accf) {
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
        if (rc->accf)
            c = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealORD, acc, acc, ""),
                    LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""),
                                LLVMBuildFCmp(B, mx ? LLVMRealOGT : LLVMRealOLT, x, acc, ""), ""), "");
        else
            c = LLVMBuildICmp(B, mx ? LLVMIntSGT : LLVMIntSLT, x, acc, "");
        nacc = LLVMBuildSelect(B, c, x, acc, "");
        LLVMValueRef arg = LLVMBuildLoad2(B, cg->i64, rc->arg, "");
        LLVMBuildStore(B, LLVMBuildSelect(B, c, pos, arg, ""), rc->arg);
        break;
    }
    }
    LLVMBuildStore(B, nacc, rc->acc);
}

static void row_point(st_llvm_cg *cg, rctx *rc, LLVMValueRef pos)
{
    reset_memo(cg);
    cg->lin = LLVMBuildAdd(cg->B, LLVMBuildMul(cg->B, rc->o, rc->R, ""), pos, "");
    if (rc->mode >= 0) {
        acc_update(cg, rc, pos);
    } else {
        for (int s = 0; s < cg->k->nstores; s++)
            st_llvm_store(cg, s);
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
        row_point(cg, rc, I64(0));
        return;
    }
    loop_t Q;
    LLVMValueRef q = loop_begin(cg, &Q, I64(0), rc->nq);
    memcpy(cg->coord, rc->outer_coord, sizeof rc->outer_coord);
    coords_of(cg, q, ro, in);
    LLVMValueRef rbase[ST_K_MAX_BUFS];
    memcpy(rbase, rc->obase, sizeof rbase);
    add_offsets(cg, rbase, ro, in);
    LLVMValueRef qbase = LLVMBuildMul(B, q, rc->rinner, "");
    LLVMValueRef rowcoord[ST_MAX_DIMS];
    memcpy(rowcoord, cg->coord, sizeof rowcoord);
    LLVMBasicBlockRef fb = bb(cg, "rfast"), sb = bb(cg, "rstrided"), join = bb(cg, "rjoin");
    LLVMBuildCondBr(B, rc->fast, fb, sb);
    for (int pass = 0; pass < 2; pass++) {
        LLVMPositionBuilderAtEnd(B, pass == 0 ? fb : sb);
        loop_t L;
        LLVMValueRef j = loop_begin(cg, &L, I64(0), rc->rinner);
        memcpy(cg->coord, rowcoord, sizeof rowcoord);
        for (int b = 0; b < k->nbufs; b++) {
            if (pass == 0)
                cg->off[b] = k->bufs[b].dimmap[in] >= 0
                                 ? LLVMBuildNSWAdd(B, rbase[b], j, "") : rbase[b];
            else
                cg->off[b] = LLVMBuildAdd(B, rbase[b],
                                          LLVMBuildMul(B, j, cg->stride[b][in], ""), "");
        }
        cg->coord[in] = j;
        row_point(cg, rc, LLVMBuildNSWAdd(B, qbase, j, ""));
        loop_end(cg, &L);
        LLVMBuildBr(B, join);
    }
    LLVMPositionBuilderAtEnd(B, join);
    loop_end(cg, &Q);
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
    hoist(cg, rc.rank);
    rc.R = I64(1);
    for (int d = rc.ro; d < rc.rank; d++)
        rc.R = LLVMBuildMul(B, rc.R, cg->shape[d], "");
    if (rc.rank > rc.ro) {
        rc.rinner = cg->shape[rc.rank - 1];
        LLVMValueRef z = LLVMBuildICmp(B, LLVMIntEQ, rc.rinner, I64(0), "");
        LLVMValueRef safe = LLVMBuildSelect(B, z, I64(1), rc.rinner, "");
        rc.nq = LLVMBuildSelect(B, z, I64(0), LLVMBuildUDiv(B, rc.R, safe, ""), "");
        rc.fast = fast_test(cg, rc.rank - 1);
    }
    int nreduce = k->nreduce < 1 ? 1 : k->nreduce;
    loop_t O;
    rc.o = loop_begin(cg, &O, lo, hi);
    for (int d = 0; d < ST_MAX_DIMS; d++)
        cg->coord[d] = NULL;
    coords_of(cg, rc.o, 0, rc.ro);
    memcpy(rc.outer_coord, cg->coord, sizeof rc.outer_coord);
    for (int b = 0; b < k->nbufs; b++)
        rc.obase[b] = I64(0);
    add_offsets(cg, rc.obase, 0, rc.ro);
    for (int r = 0; r < ST_K_MAX_REDUCE; r++)
        cg->reduced[r] = NULL;
    for (int r = 0; r < nreduce; r++) {
        st_reduce_op op = k->reduce[r].op;
        rc.mode = r;
        st_dtype sdt = k->nodes[k->reduce[r].src].dtype;
        rc.accf = st_dtype_is_float(sdt);
        LLVMTypeRef at = fmm(op, rc.accf) ? st_llvm_vty(cg, sdt)
                         : rc.accf ? cg->f64 : cg->i64;
        rc.at = at;
        rc.acc = entry_alloca(cg, at);
        rc.arg = entry_alloca(cg, cg->i64);
        LLVMValueRef init;
        bool mx = op == ST_RED_MAX || op == ST_RED_ARGMAX;
        bool mn = op == ST_RED_MIN || op == ST_RED_ARGMIN;
        if (rc.accf)
            init = LLVMConstReal(at, op == ST_RED_PROD ? 1.0 : mx ? -INFINITY
                                 : mn ? INFINITY : 0.0);
        else
            init = I64(op == ST_RED_PROD ? 1 : mx ? INT64_MIN : mn ? INT64_MAX : 0);
        LLVMBuildStore(B, init, rc.acc);
        LLVMBuildStore(B, I64(0), rc.arg);
        row_walk(cg, &rc);
        LLVMValueRef acc = LLVMBuildLoad2(B, at, rc.acc, "");
        if (op == ST_RED_ARGMAX || op == ST_RED_ARGMIN) {
            cg->reduced[r] = LLVMBuildLoad2(B, cg->i64, rc.arg, "");
            cg->reduced_dt[r] = ST_INT64;
        } else if (op == ST_RED_MEAN) {
            LLVMValueRef s = rc.accf ? acc : LLVMBuildSIToFP(B, acc, cg->f64, "");
            cg->reduced[r] = LLVMBuildFDiv(B, s, LLVMBuildSIToFP(B, rc.R, cg->f64, ""), "");
            cg->reduced_dt[r] = ST_FLOAT64;
        } else {
            if (at == cg->f32)
                acc = LLVMBuildFPExt(B, acc, cg->f64, "");
            cg->reduced[r] = acc;
            cg->reduced_dt[r] = rc.accf ? ST_FLOAT64 : ST_INT64;
        }
    }
    rc.mode = -1;
    if (k->final_per_point) {
        row_walk(cg, &rc);
    } else {
        reset_memo(cg);
        memcpy(cg->coord, rc.outer_coord, sizeof rc.outer_coord);
        for (int d = rc.ro; d < ST_MAX_DIMS; d++)
            cg->coord[d] = NULL;
        for (int b = 0; b < k->nbufs; b++)
            cg->off[b] = rc.obase[b];
        cg->lin = rc.o;
        for (int s = 0; s < k->nstores; s++)
            st_llvm_store(cg, s);
    }
    loop_end(cg, &O);
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
    cg->entry = bb(cg, "entry");
    LLVMBasicBlockRef start = bb(cg, "start");
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
