/* runtime/overlap_seq.c - an in-place elementwise op whose operand shares
 * elements with the written tensor in a way torch cannot tell apart
 * (get_overlap_status's TOO_HARD: one of them is not dense, as
 * x[..., 1::2].T.mul_(x[:2]) or x.mul_(x[:, :1])). torch runs it: its
 * TensorIterator visits the elements one after the other in its own order
 * (dims sorted by the written tensor's strides, then the operands'), so an
 * element reads what an earlier one wrote. symtrace's kernels read in no
 * set order, so st_overlap_seq runs such an op in torch's order:
 *
 * - when no element reads what another element writes, nothing depends
 *   on the order: the caller runs the op as usual (the check costs one
 *   pass over the indices, a bitmap of the written span);
 * - else row by row (the innermost dim of torch's order), one call per row
 *   whose elements read nothing another element of the row writes, and
 *   element by element in a row where one does.
 *
 * Dims are coalesced as TensorIterator's coalesce_dimensions does, so a
 * row is what torch's kernel loop gets in one call. In a row where torch's
 * vectorized loop runs (the written tensor and the operands all of one
 * dtype, contiguous along the row, one of them possibly broadcast along it:
 * is_contiguous / is_contiguous_scalar) torch reads and writes one vector
 * (64 bytes with AVX-512, 32 otherwise) at a time: whole vectors from the
 * row's start, each read before it is written, the broadcast operand read
 * once at the row's start for all of them; then the rest of the row element
 * by element. Those rows run so here.
 *
 * torch splits ranges over 32768 elements between threads: those it
 * computes in no fixed order. eager.c calls it (eager_on) for one written
 * tensor, no gradient involved. */
#include "st_runtime.h"

#include <stdlib.h>
#include <string.h>

/* The bytes of one of torch's CPU vectors (at::vec::Vectorized): 64 where
 * its kernels dispatch to AVX-512 (ATEN_CPU_CAPABILITY can lower that),
 * else 32 (AVX2 and the generic build alike). */
int st_overlap_vec_bytes(void)
{
    static int bytes;
    if (bytes)
        return bytes;
    int b = 32;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        b = 64;
#endif
    const char *cap = getenv("ATEN_CPU_CAPABILITY");
    if (cap && *cap && strcmp(cap, "avx512") != 0)
        b = 32;
    bytes = b;
    return b;
}

/* Operand t's element stride along dim d of the nd-dim iteration shape:
 * 0 where t is broadcast (a missing leading dim, a size-1 dim, a 0-d t). */
static int64_t bstride(const st_tensor *t, int nd, const int64_t *shape, int d)
{
    int k = d - (nd - t->ndim);
    if (k < 0 || (t->shape[k] == 1 && shape[d] != 1))
        return 0;
    return t->strides[k];
}

/* TensorIterator's reorder_dimensions (should_swap over the written tensor,
 * then each operand): order[0] is the innermost dim. */
static void torch_order(const st_tensor *const *ops, int nops, int nd, const int64_t *shape,
                        int *order)
{
    for (int i = 0; i < nd; i++)
        order[i] = nd - 1 - i;
    for (int i = 1; i < nd; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int a = order[d0], b = order[d1], c = 0;
            for (int k = 0; k < nops && c == 0; k++) {
                int64_t sa = bstride(ops[k], nd, shape, a), sb = bstride(ops[k], nd, shape, b);
                if (sa == 0 || sb == 0)
                    continue;
                if (sa != sb)
                    c = sa < sb ? -1 : 1;
                else if (shape[a] > shape[b])
                    c = 1;
            }
            if (c > 0) {
                order[d0] = b;
                order[d1] = a;
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    }
}

typedef struct {
    int nd, nops;            /* ops[0]: the written tensor, then the tensor operands */
    const st_tensor *ops[ST_MAX_IN + 1];
    int64_t shape[ST_MAX_DIMS];
    int order[ST_MAX_DIMS];
    int64_t stride[ST_MAX_IN + 1][ST_MAX_DIMS];   /* per operand, per dim of the order */
    int64_t size[ST_MAX_DIMS];                    /* per dim of the order */
} iter;

/* TensorIterator's coalesce_dimensions over the ordered dims: a dim merges
 * into the one inside it where every operand steps over both as one. */
static void coalesce(iter *it)
{
    int prev = 0;
    for (int d = 1; d < it->nd; d++) {
        bool can = true;
        if (it->size[prev] != 1 && it->size[d] != 1)
            for (int k = 0; k < it->nops && can; k++)
                can = it->size[prev] * it->stride[k][prev] == it->stride[k][d];
        if (can) {
            if (it->size[prev] == 1)
                for (int k = 0; k < it->nops; k++)
                    it->stride[k][prev] = it->stride[k][d];
            it->size[prev] *= it->size[d];
        } else if (++prev != d) {
            for (int k = 0; k < it->nops; k++)
                it->stride[k][prev] = it->stride[k][d];
            it->size[prev] = it->size[d];
        }
    }
    if (it->nd > 0)
        it->nd = prev + 1;
}

/* Whether some element reads (an operand in out's storage) what another
 * element writes, over the whole op; -1 when the written span is too wide
 * for a bitmap (the caller assumes it does). */
static int any_hazard(const iter *it, const bool *shares)
{
    const st_tensor *o = it->ops[0];
    int64_t lo = o->offset, hi = o->offset;
    for (int d = 0; d < o->ndim; d++)
        hi += o->strides[d] * (o->shape[d] - 1);
    int64_t span = hi - lo + 1;
    if (span > ((int64_t)1 << 30))
        return -1;
    uint8_t *bits = calloc((size_t)(span + 7) / 8, 1);
    if (!bits)
        return -1;
    int64_t idx[ST_MAX_DIMS] = {0}, addr[ST_MAX_IN + 1];
    int64_t n = st_tensor_numel(o);
    for (int pass = 0, hazard = 0; pass < 2; pass++) {
        memset(idx, 0, sizeof idx);
        for (int k = 0; k < it->nops; k++)
            addr[k] = it->ops[k]->offset;
        for (int64_t e = 0; e < n; e++) {
            int64_t a = addr[0] - lo;
            if (pass == 0) {
                bits[a >> 3] |= (uint8_t)(1u << (a & 7));
            } else {
                for (int k = 1; k < it->nops && !hazard; k++) {
                    int64_t r = addr[k] - lo;
                    if (shares[k] && r != a && r >= 0 && r < span && (bits[r >> 3] >> (r & 7) & 1))
                        hazard = 1;
                }
                if (hazard) {
                    free(bits);
                    return 1;
                }
            }
            for (int d = 0; d < it->nd; d++) {      /* the next index, innermost first */
                for (int k = 0; k < it->nops; k++)
                    addr[k] += it->stride[k][d];
                if (++idx[d] < it->size[d])
                    break;
                for (int k = 0; k < it->nops; k++)
                    addr[k] -= it->stride[k][d] * idx[d];
                idx[d] = 0;
            }
        }
    }
    free(bits);
    return 0;
}

/* Whether an element of the row at these start addresses reads what
 * another element of the row writes. */
static bool row_hazard(const iter *it, const bool *shares, const int64_t *addr, int64_t n)
{
    int64_t so = it->stride[0][0];
    for (int k = 1; k < it->nops; k++) {
        if (!shares[k])
            continue;
        int64_t sk = it->stride[k][0];
        for (int64_t i = 0; i < n; i++) {
            int64_t r = addr[k] + i * sk - addr[0];
            if (so == 0) {
                if (r == 0 && n > 1)
                    return true;
                continue;
            }
            if (r % so == 0 && r / so >= 0 && r / so < n && r / so != i)
                return true;
        }
    }
    return false;
}

/* A new tensor holding t's values (NULL on failure). */
static st_tensor *copy_of(st_tensor *t, st_overlap_run run, void *ctx)
{
    st_operand src = {.t = t};
    st_tensor *cp[ST_MAX_OUT] = {NULL};
    int got = run(ctx, ST_OP_COPY, &src, 1, NULL, NULL, cp);
    for (int k = 1; k < got; k++)
        st_tensor_decref(cp[k]);
    if (got < 1)
        return NULL;
    return cp[0];
}

/* One call of the op on n elements from these addresses (stride per operand
 * from the innermost dim); 0-d and number operands go as they are. subst
 * (or NULL): per operand, a tensor to read broadcast instead. shares (or
 * NULL: the elements' order decides): the operands in o's storage, read
 * whole before the block is written, as one vector of torch's. */
static int run_block(st_op_id op, const st_operand *in, int nin, const st_attrs *attrs,
                     const iter *it, const int *opk, const int64_t *addr, int64_t n,
                     st_tensor *const *subst, const bool *shares, st_overlap_run run, void *ctx)
{
    st_operand vin[ST_MAX_IN];
    st_tensor *held[ST_MAX_IN + 1] = {NULL};
    int rc = -1;
    memcpy(vin, in, sizeof *in * (size_t)nin);
    /* one element: stride 1 for all (the same element under two strides
     * would be a partial overlap, as torch's get_overlap_status tells it) */
    int64_t shape[1] = {n};
    int64_t s0[1] = {n == 1 ? 1 : it->stride[0][0]};
    held[nin] = st_tensor_view_of((st_tensor *)it->ops[0], 1, shape, s0, addr[0]);
    if (!held[nin])
        goto done;
    for (int j = 0; j < nin; j++) {
        int k = opk[j];
        if (k < 0)
            continue;
        int64_t sj[1] = {n == 1 ? 1 : it->stride[k][0]};
        st_tensor *src = subst && subst[j] ? subst[j] : in[j].t;
        if (!(held[j] = st_tensor_view_of(src, 1, shape, sj,
                                          subst && subst[j] ? src->offset : addr[k])))
            goto done;
        if (shares && shares[k] && !(subst && subst[j]) &&
            (addr[k] != addr[0] || sj[0] != s0[0])) {
            st_tensor *cp = copy_of(held[j], run, ctx);
            st_tensor_decref(held[j]);
            if (!(held[j] = cp))
                goto done;
        }
        vin[j].t = held[j];
    }
    st_tensor *given[ST_MAX_OUT] = {held[nin]}, *out[ST_MAX_OUT] = {NULL};
    int r = run(ctx, op, vin, nin, attrs, given, out);
    for (int k = 0; k < r; k++)
        st_tensor_decref(out[k]);
    rc = r < 0 ? -1 : 0;
done:
    for (int j = 0; j <= nin; j++)
        st_tensor_decref(held[j]);
    return rc;
}

int st_overlap_seq(st_op_id op, const st_operand *in, int nin, const st_attrs *attrs,
                   st_tensor *o, st_tensor **out, st_overlap_run run, void *ctx)
{
    iter it;
    memset(&it, 0, sizeof it);
    it.nd = o->ndim;
    memcpy(it.shape, o->shape, sizeof(int64_t) * (size_t)o->ndim);
    it.ops[it.nops++] = o;
    int opk[ST_MAX_IN];
    bool shares[ST_MAX_IN + 1] = {false};
    for (int j = 0; j < nin; j++) {
        const st_tensor *t = in[j].t;
        opk[j] = -1;
        if (!t)
            continue;
        if (t->ndim > o->ndim)
            return 0;              /* the op reports the bad broadcast */
        if (t->storage == o->storage) {
            if (st_dtype_size(t->dtype) != st_dtype_size(o->dtype))
                return 0;          /* one storage seen as two dtypes: left as it runs */
            shares[it.nops] = true;
        }
        if (t->ndim > 0)
            opk[j] = it.nops;
        it.ops[it.nops++] = t;
    }
    torch_order(it.ops, it.nops, it.nd, it.shape, it.order);
    for (int d = 0; d < it.nd; d++) {
        it.size[d] = it.shape[it.order[d]];
        for (int k = 0; k < it.nops; k++)
            it.stride[k][d] = bstride(it.ops[k], it.nd, it.shape, it.order[d]);
    }
    coalesce(&it);
    if (any_hazard(&it, shares) == 0)
        return 0;                  /* no order dependence: the usual run */
    /* torch's vectorized loop: every operand of o's dtype, contiguous along
     * the row but for at most one broadcast along it (vs: its in[] index) */
    int64_t vec = 0;
    int vs = -1;
    if (it.stride[0][0] == 1) {
        bool ok = true;
        for (int j = 0; j < nin && ok; j++) {
            int k = opk[j];
            if (!in[j].t)
                continue;
            if (in[j].t->dtype != o->dtype && k >= 0)
                ok = false;
            else if (k < 0 || it.stride[k][0] == 0)
                ok = vs < 0 ? (vs = j, true) : false;
            else if (it.stride[k][0] != 1)
                ok = false;
        }
        if (ok)
            vec = st_overlap_vec_bytes() / (int64_t)st_dtype_size(o->dtype);
    }
    /* rows of the innermost (coalesced) dim, outer dims in torch's order */
    int64_t n = it.size[0], rows = st_tensor_numel(o) / n;
    int64_t idx[ST_MAX_DIMS] = {0}, addr[ST_MAX_IN + 1];
    for (int k = 0; k < it.nops; k++)
        addr[k] = it.ops[k]->offset;
    int rc = 0;
    for (int64_t r = 0; r < rows && rc == 0; r++) {
        int64_t i = 0, a[ST_MAX_IN + 1];
        st_tensor *subst[ST_MAX_IN] = {NULL};
        if (row_hazard(&it, shares, addr, n)) {
            if (vec > 1 && n >= vec) {
                /* the broadcast operand, when o's writes reach it: its value
                 * at the row's start, for every vector */
                if (vs >= 0 && opk[vs] >= 0 && shares[opk[vs]]) {
                    int64_t one[1] = {1};
                    st_tensor *at = st_tensor_view_of(in[vs].t, 1, one, one, addr[opk[vs]]);
                    subst[vs] = at ? copy_of(at, run, ctx) : NULL;
                    st_tensor_decref(at);
                    if (!subst[vs])
                        return -1;
                }
                for (; rc == 0 && i + vec <= n; i += vec) {
                    for (int k = 0; k < it.nops; k++)
                        a[k] = addr[k] + i * it.stride[k][0];
                    rc = run_block(op, in, nin, attrs, &it, opk, a, vec, subst, shares, run, ctx);
                }
                st_tensor_decref(subst[vs >= 0 ? vs : 0]);
            }
            for (; rc == 0 && i < n; i++) {
                for (int k = 0; k < it.nops; k++)
                    a[k] = addr[k] + i * it.stride[k][0];
                rc = run_block(op, in, nin, attrs, &it, opk, a, 1, NULL, NULL, run, ctx);
            }
        } else {
            rc = run_block(op, in, nin, attrs, &it, opk, addr, n, NULL, NULL, run, ctx);
        }
        for (int d = 1; d < it.nd; d++) {
            for (int k = 0; k < it.nops; k++)
                addr[k] += it.stride[k][d];
            if (++idx[d] < it.size[d])
                break;
            for (int k = 0; k < it.nops; k++)
                addr[k] -= it.stride[k][d] * idx[d];
            idx[d] = 0;
        }
    }
    if (rc < 0)
        return -1;
    st_tensor_incref(o);
    out[0] = o;
    return 1;
}
