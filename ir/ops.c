/* ir/ops.c - owns the op registry: one st_op_def per st_op_id (PyTorch's
 * name, kind, operand count range, shape/dtype inference, attribute
 * printing, the VJP slot). Inference follows PyTorch's semantics and error
 * wording; every error names the op and each operand's dtype and shape.
 * Inference never trusts its input: operand metas and attrs are validated
 * before use. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "st_ir.h"

/* Shared with print.c (defined there): Python-repr formatting of a double. */
char *st_ir_fmt_double(double v, char *buf, size_t n);

/* ------------------------------------------------------------------ */
/* helpers                                                              */

typedef struct {
    st_op_id op;
    const char *name;
    const st_meta *in;
    int nin;
    const st_attrs *a;
} ictx;

/* PyTorch ScalarType names ("Float") and C++ TypeMeta names ("float"). */
static const char *tname(st_dtype t)
{
    static const char *n[ST_NDTYPES] = {
        [ST_BOOL] = "Bool", [ST_UINT8] = "Byte", [ST_INT8] = "Char",
        [ST_INT16] = "Short", [ST_INT32] = "Int", [ST_INT64] = "Long",
        [ST_FLOAT16] = "Half", [ST_BFLOAT16] = "BFloat16",
        [ST_FLOAT32] = "Float", [ST_FLOAT64] = "Double"};
    return (unsigned)t < ST_NDTYPES ? n[t] : "Undefined";
}

static const char *cname(st_dtype t)
{
    static const char *n[ST_NDTYPES] = {
        [ST_BOOL] = "bool", [ST_UINT8] = "unsigned char",
        [ST_INT8] = "signed char", [ST_INT16] = "short int",
        [ST_INT32] = "int", [ST_INT64] = "long int",
        [ST_FLOAT16] = "c10::Half", [ST_BFLOAT16] = "c10::BFloat16",
        [ST_FLOAT32] = "float", [ST_FLOAT64] = "double"};
    return (unsigned)t < ST_NDTYPES ? n[t] : "undefined";
}

static char *shp(const st_meta *m, char *buf, size_t n)
{
    return st_shape_str(m->shape, m->ndim, buf, n);
}

static void describe_operands(const ictx *c, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < c->nin && len < n; k++) {
        const st_meta *m = &c->in[k];
        char s[96];
        int w;
        if (m->ndim < 0 || m->ndim > ST_MAX_DIMS)
            w = snprintf(buf + len, n - len, "%s%s<rank %d>", k ? ", " : "",
                         st_dtype_name(m->dtype), m->ndim);
        else if (m->kind == ST_META_SCALAR)
            w = snprintf(buf + len, n - len, "%s%s scalar", k ? ", " : "",
                         st_dtype_name(m->dtype));
        else
            w = snprintf(buf + len, n - len, "%s%s%s", k ? ", " : "",
                         st_dtype_name(m->dtype), shp(m, s, sizeof s));
        if (w > 0)
            len += (size_t)w;
    }
}

/* Appends the operand list to the error already set (by st_broadcast,
 * st_wrap_dim or fail) and returns its kind. */
static st_status annotate(const ictx *c)
{
    char ops[512], msg[1024];
    st_status k = st_err_kind();
    if (k == ST_OK)
        k = ST_ERR_RUNTIME;
    snprintf(msg, sizeof msg, "%s", st_err_msg());
    describe_operands(c, ops, sizeof ops);
    return st_err(k, "%s (operands: %s)", msg, ops);
}

static st_status fail(const ictx *c, st_status kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static st_status fail(const ictx *c, st_status kind, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    st_err(kind, "%s: %s", c->name, msg);
    return annotate(c);
}

static st_status not_impl(const ictx *c, const char *kernel, st_dtype t)
{
    return fail(c, ST_ERR_NOTIMPL, "\"%s\" not implemented for '%s'", kernel,
                tname(t));
}

static st_status wrap(const ictx *c, int64_t *dim, int ndim)
{
    if (st_wrap_dim(c->name, dim, ndim) != ST_OK)
        return annotate(c);
    return ST_OK;
}

static void set_out(st_meta *o, st_dtype dt, int ndim, const int64_t *shape)
{
    memset(o, 0, sizeof *o);
    o->dtype = dt;
    o->ndim = ndim;
    o->kind = ST_META_TENSOR;
    for (int d = 0; d < ndim; d++)
        o->shape[d] = shape[d];
}

static bool is_fl(st_dtype t)
{
    return st_dtype_is_float(t);
}

static bool is_intlike(st_dtype t) /* bool or integer */
{
    return t == ST_BOOL || st_dtype_is_int(t);
}

static st_status check_ndims(const ictx *c)
{
    if (c->a->ndims < 0 || c->a->ndims > ST_MAX_DIMS)
        return fail(c, ST_ERR_VALUE, "attrs.ndims %d out of range [0, %d]",
                    c->a->ndims, ST_MAX_DIMS);
    return ST_OK;
}

/* Wraps attrs.dims against ndim into a mask; duplicates are an error. */
static st_status dims_mask(const ictx *c, int ndim, bool *mask)
{
    for (int d = 0; d < ST_MAX_DIMS; d++)
        mask[d] = false;
    for (int k = 0; k < c->a->ndims; k++) {
        int64_t d = c->a->dims[k];
        if (wrap(c, &d, ndim) != ST_OK)
            return st_err_kind();
        if (ndim == 0)
            d = 0;
        if (mask[d])
            return fail(c, ST_ERR_RUNTIME,
                        "dim %lld appears multiple times in the list of dims",
                        (long long)d);
        mask[d] = true;
    }
    return ST_OK;
}

static int64_t prod_range(const int64_t *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        if (__builtin_mul_overflow(p, s[d], &p))
            return INT64_MAX;
    return p;
}

/* ------------------------------------------------------------------ */
/* elementwise                                                          */

static st_status infer_unary(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    st_dtype dt = x->dtype;
    switch (c->op) {
    case ST_OP_NEG:
        if (dt == ST_BOOL)
            return fail(c, ST_ERR_RUNTIME,
                        "Negation, the `-` operator, on a bool tensor is not "
                        "supported. If you are trying to invert a mask, use "
                        "the `~` or `logical_not()` operator instead.");
        break;
    case ST_OP_EXP: case ST_OP_LOG: case ST_OP_SQRT: case ST_OP_RSQRT:
    case ST_OP_TANH: case ST_OP_SIGMOID: case ST_OP_ERF: case ST_OP_SIN:
    case ST_OP_COS: case ST_OP_RECIPROCAL:
        if (is_intlike(dt))
            dt = ST_FLOAT32; /* torch's default dtype */
        break;
    case ST_OP_RELU:
        if (dt == ST_BOOL)
            return fail(c, ST_ERR_RUNTIME,
                        "Boolean inputs not supported for relu");
        break;
    case ST_OP_ABS:
        if (dt == ST_BOOL)
            return not_impl(c, "abs_cpu", dt);
        break;
    case ST_OP_FLOOR:
        if (dt == ST_BOOL)
            return not_impl(c, "floor_vml_cpu", dt);
        break;
    case ST_OP_CEIL:
        if (dt == ST_BOOL)
            return not_impl(c, "ceil_vml_cpu", dt);
        break;
    case ST_OP_ROUND:
        if (dt == ST_BOOL)
            return not_impl(c, "round_vml_cpu", dt);
        break;
    case ST_OP_SIGN:
        break;
    case ST_OP_LOGICAL_NOT:
        dt = ST_BOOL;
        break;
    case ST_OP_CAST:
        if ((unsigned)c->a->dtype >= ST_NDTYPES)
            return fail(c, ST_ERR_TYPE, "invalid target dtype %d",
                        (int)c->a->dtype);
        dt = c->a->dtype;
        break;
    default:
        break;
    }
    set_out(out, dt, x->ndim, x->shape);
    return ST_OK;
}

static st_status infer_binary(const ictx *c, st_meta *out)
{
    int nd;
    int64_t shape[ST_MAX_DIMS] = {0};
    if (st_broadcast(c->name, c->in, 2, &nd, shape) != ST_OK)
        return annotate(c);
    st_dtype a = c->in[0].dtype, b = c->in[1].dtype;
    st_dtype dt = st_result_type(c->in, 2);
    bool both_tensors = c->in[0].kind == ST_META_TENSOR &&
                        c->in[1].kind == ST_META_TENSOR;
    switch (c->op) {
    case ST_OP_SUB:
        if (a == ST_BOOL && b == ST_BOOL)
            return fail(c, ST_ERR_RUNTIME,
                        "Subtraction, the `-` operator, with two bool tensors "
                        "is not supported. Use the `^` or `logical_xor()` "
                        "operator instead.");
        if (a == ST_BOOL || b == ST_BOOL)
            return fail(c, ST_ERR_RUNTIME,
                        "Subtraction, the `-` operator, with a bool tensor is "
                        "not supported. If you are trying to invert a mask, "
                        "use the `~` or `logical_not()` operator instead.");
        break;
    case ST_OP_DIV:
        if (is_intlike(dt))
            dt = ST_FLOAT32;
        break;
    case ST_OP_FLOOR_DIVIDE:
        if (dt == ST_BOOL)
            return not_impl(c, "div_floor_cpu", dt);
        break;
    case ST_OP_REMAINDER:
        if (dt == ST_BOOL)
            return not_impl(c, "remainder_cpu", dt);
        break;
    case ST_OP_POW:
        if (dt == ST_BOOL && both_tensors)
            return not_impl(c, "pow", dt);
        break;
    case ST_OP_EQ: case ST_OP_NE: case ST_OP_LT: case ST_OP_LE:
    case ST_OP_GT: case ST_OP_GE: case ST_OP_LOGICAL_AND:
    case ST_OP_LOGICAL_OR:
        dt = ST_BOOL;
        break;
    default:
        break;
    }
    set_out(out, dt, nd, shape);
    return ST_OK;
}

static st_status infer_where(const ictx *c, st_meta *out)
{
    if (c->in[0].dtype != ST_BOOL)
        return fail(c, ST_ERR_RUNTIME,
                    "where expected condition to be a boolean tensor, but got "
                    "a tensor with dtype %s", tname(c->in[0].dtype));
    int nd;
    int64_t shape[ST_MAX_DIMS] = {0};
    if (st_broadcast(c->name, c->in, 3, &nd, shape) != ST_OK)
        return annotate(c);
    set_out(out, st_result_type(c->in + 1, 2), nd, shape);
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* reductions                                                           */

static st_status infer_reduce(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    bool keep = (c->a->flags & ST_ATTR_KEEPDIM) != 0;
    bool is_arg = c->op == ST_OP_ARGMAX || c->op == ST_OP_ARGMIN;
    bool is_minmax = c->op == ST_OP_AMAX || c->op == ST_OP_AMIN || is_arg;
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    if (is_arg && c->a->ndims > 1)
        return fail(c, ST_ERR_TYPE,
                    "%s(): argument 'dim' (position 1) must be int, not tuple",
                    c->name);
    bool mask[ST_MAX_DIMS];
    if (dims_mask(c, x->ndim, mask) != ST_OK)
        return st_err_kind();
    bool all = c->a->ndims == 0;
    st_dtype dt = x->dtype;
    switch (c->op) {
    case ST_OP_SUM: case ST_OP_PROD:
        if (is_intlike(dt))
            dt = ST_INT64;
        break;
    case ST_OP_MEAN:
        if (!is_fl(dt))
            return fail(c, ST_ERR_RUNTIME,
                        "mean(): could not infer output dtype. Input dtype "
                        "must be either a floating point or complex dtype. "
                        "Got: %s", tname(dt));
        break;
    case ST_OP_ARGMAX: case ST_OP_ARGMIN:
        if (dt == ST_BOOL)
            return fail(c, ST_ERR_RUNTIME, "%s(): does not support bool input",
                        c->name);
        dt = ST_INT64;
        break;
    default:
        break;
    }
    if (is_minmax) {
        if (all && st_meta_numel(x) == 0) {
            if (is_arg)
                return fail(c, ST_ERR_INDEX,
                            "%s(): Expected reduction dim to be specified for "
                            "input.numel() == 0.", c->name);
            return fail(c, ST_ERR_RUNTIME,
                        "%s(): Expected reduction dim to be specified for "
                        "input.numel() == 0. Specify the reduction dim with "
                        "the 'dim' argument.", c->name);
        }
        for (int d = 0; !all && d < x->ndim; d++)
            if (mask[d] && x->shape[d] == 0)
                return fail(c, ST_ERR_INDEX,
                            "%s(): Expected reduction dim %d to have non-zero "
                            "size.", c->name, d);
    }
    int64_t shape[ST_MAX_DIMS] = {0};
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (all || mask[d]) {
            if (keep)
                shape[nd++] = 1;
        } else {
            shape[nd++] = x->shape[d];
        }
    }
    set_out(out, dt, nd, shape);
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* matmul                                                               */

static st_status infer_matmul(const ictx *c, st_meta *out)
{
    const st_meta *a = &c->in[0], *b = &c->in[1];
    int da = a->ndim, db = b->ndim;
    if (da == 0 || db == 0)
        return fail(c, ST_ERR_RUNTIME,
                    "both arguments to matmul need to be at least 1D, but "
                    "they are %dD and %dD", da, db);
    if (a->dtype != b->dtype) {
        if (da == 1 && db == 1)
            return fail(c, ST_ERR_RUNTIME,
                        "dot : expected both vectors to have same dtype, but "
                        "found %s and %s", tname(a->dtype), tname(b->dtype));
        if (db == 1)
            return fail(c, ST_ERR_RUNTIME,
                        "addmv input tensors must have the same dtype, but got "
                        "%s, %s, and %s", tname(b->dtype), tname(a->dtype),
                        tname(b->dtype));
        if (da >= 3 && db >= 3)
            return fail(c, ST_ERR_RUNTIME,
                        "expected scalar type %s but found %s", tname(a->dtype),
                        tname(b->dtype));
        return fail(c, ST_ERR_RUNTIME,
                    "expected m1 and m2 to have the same dtype, but got: "
                    "%s != %s", cname(a->dtype), cname(b->dtype));
    }
    if (a->dtype == ST_BOOL)
        return not_impl(c, da == 1 && db == 1 ? "dot" : "addmm_impl_cpu_",
                        a->dtype);
    /* ST_ATTR_ACC_OUT: half operands' product in float32 */
    st_dtype odt = c->a && (c->a->flags & ST_ATTR_ACC_OUT) &&
                   (a->dtype == ST_FLOAT16 || a->dtype == ST_BFLOAT16) ? ST_FLOAT32 : a->dtype;
    int64_t k_a = a->shape[da - 1];
    int64_t k_b = db == 1 ? b->shape[0] : b->shape[db - 2];
    int64_t shape[ST_MAX_DIMS] = {0};
    if (da == 1 && db == 1) {
        if (k_a != k_b)
            return fail(c, ST_ERR_RUNTIME,
                        "inconsistent tensor size, expected tensor [%lld] and "
                        "src [%lld] to have the same number of elements, but "
                        "got %lld and %lld elements respectively",
                        (long long)k_a, (long long)k_b, (long long)k_a,
                        (long long)k_b);
        set_out(out, odt, 0, shape);
        return ST_OK;
    }
    if (db == 1) { /* [..., n, k] @ [k]: folded into mv */
        int64_t rows = prod_range(a->shape, 0, da - 1);
        if (k_a != k_b)
            return fail(c, ST_ERR_RUNTIME,
                        "size mismatch, got input (%lld), mat (%lldx%lld), "
                        "vec (%lld)", (long long)rows, (long long)rows,
                        (long long)k_a, (long long)k_b);
        set_out(out, odt, da - 1, a->shape);
        return ST_OK;
    }
    int64_t m = b->shape[db - 1];
    if (db == 2 && da <= 2) { /* [k] @ [k, m] or [n, k] @ [k, m] */
        int64_t rows = da == 1 ? 1 : a->shape[0];
        if (k_a != k_b)
            return fail(c, ST_ERR_RUNTIME,
                        "mat1 and mat2 shapes cannot be multiplied "
                        "(%lldx%lld and %lldx%lld)", (long long)rows,
                        (long long)k_a, (long long)k_b, (long long)m);
        if (da == 1) {
            shape[0] = m;
            set_out(out, odt, 1, shape);
        } else {
            shape[0] = rows;
            shape[1] = m;
            set_out(out, odt, 2, shape);
        }
        return ST_OK;
    }
    if (db == 2) { /* [..., n, k] @ [k, m]: folded into mm */
        int64_t rows = prod_range(a->shape, 0, da - 1);
        if (k_a != k_b)
            return fail(c, ST_ERR_RUNTIME,
                        "mat1 and mat2 shapes cannot be multiplied "
                        "(%lldx%lld and %lldx%lld)", (long long)rows,
                        (long long)k_a, (long long)k_b, (long long)m);
        for (int d = 0; d < da - 1; d++)
            shape[d] = a->shape[d];
        shape[da - 1] = m;
        set_out(out, odt, da, shape);
        return ST_OK;
    }
    /* batched: broadcast the batch dims */
    st_meta ba, bb;
    memset(&ba, 0, sizeof ba);
    memset(&bb, 0, sizeof bb);
    ba.ndim = da > 2 ? da - 2 : 0;
    for (int d = 0; d < ba.ndim; d++)
        ba.shape[d] = a->shape[d];
    bb.ndim = db - 2;
    for (int d = 0; d < bb.ndim; d++)
        bb.shape[d] = b->shape[d];
    st_meta bm[2] = {ba, bb};
    int nb;
    int64_t batch[ST_MAX_DIMS] = {0};
    if (st_broadcast(c->name, bm, 2, &nb, batch) != ST_OK)
        return annotate(c);
    if (k_a != k_b) {
        int64_t bsz = prod_range(batch, 0, nb);
        return fail(c, ST_ERR_RUNTIME,
                    "Expected size for first two dimensions of batch2 tensor "
                    "to be: [%lld, %lld] but got: [%lld, %lld].",
                    (long long)bsz, (long long)k_a, (long long)bsz,
                    (long long)k_b);
    }
    int nd = nb;
    for (int d = 0; d < nb; d++)
        shape[d] = batch[d];
    if (da >= 2)
        shape[nd++] = a->shape[da - 2];
    shape[nd++] = m;
    if (nd > ST_MAX_DIMS)
        return fail(c, ST_ERR_VALUE, "result has more than %d dims",
                    ST_MAX_DIMS);
    /* attrs dims (internal, fusion/viewfold.c): the product written
     * permuted, result dim i = product dim dims[i] */
    if (c->a && c->a->ndims > 0) {
        const st_attrs *pa = c->a;
        bool seen[ST_MAX_DIMS] = {false};
        int64_t ps[ST_MAX_DIMS];
        if (pa->ndims != nd)
            return fail(c, ST_ERR_VALUE, "matmul: output permutation of %d dims for a "
                        "result of %d", pa->ndims, nd);
        for (int i = 0; i < nd; i++) {
            int64_t d = pa->dims[i];
            if (d < 0 || d >= nd || seen[d])
                return fail(c, ST_ERR_VALUE, "matmul: output permutation is not a "
                            "permutation of %d dims", nd);
            seen[d] = true;
            ps[i] = shape[d];
        }
        memcpy(shape, ps, sizeof(int64_t) * (size_t)nd);
    }
    set_out(out, odt, nd, shape);
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* indexing                                                             */

static st_status infer_gather(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0], *ix = &c->in[1];
    int64_t dim = c->a->i[0];
    if (wrap(c, &dim, x->ndim) != ST_OK)
        return st_err_kind();
    if (ix->dtype != ST_INT64 && ix->dtype != ST_INT32)
        return fail(c, ST_ERR_RUNTIME,
                    "gather(): Expected dtype int32/int64 for index");
    int nx = x->ndim ? x->ndim : 1, ni = ix->ndim ? ix->ndim : 1;
    if (nx != ni)
        return fail(c, ST_ERR_RUNTIME,
                    "Index tensor must have the same number of dimensions as "
                    "input tensor");
    for (int d = 0; d < x->ndim && d < ix->ndim; d++) {
        if (d != dim && ix->shape[d] > x->shape[d]) {
            char s1[96], s2[96];
            return fail(c, ST_ERR_RUNTIME,
                        "Size does not match at dimension %d expected index %s "
                        "to be no larger than self %s apart from dimension "
                        "%lld", d, shp(ix, s1, sizeof s1), shp(x, s2, sizeof s2),
                        (long long)dim);
        }
    }
    set_out(out, x->dtype, ix->ndim, ix->shape);
    return ST_OK;
}

static st_status infer_index_select(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0], *ix = &c->in[1];
    int64_t dim = c->a->i[0];
    if (wrap(c, &dim, x->ndim) != ST_OK)
        return st_err_kind();
    if (ix->ndim > 1)
        return fail(c, ST_ERR_INDEX,
                    "index_select(): Index is supposed to be a vector");
    if (ix->dtype != ST_INT64 && ix->dtype != ST_INT32)
        return fail(c, ST_ERR_RUNTIME,
                    "index_select(): Expected dtype int32 or int64 for index");
    int64_t n = st_meta_numel(ix);
    if (x->ndim == 0) {
        if (n != 1)
            return fail(c, ST_ERR_RUNTIME,
                        "index_select(): Index to scalar can have only 1 "
                        "value, got %lld value(s)", (long long)n);
        set_out(out, x->dtype, 0, x->shape);
        return ST_OK;
    }
    set_out(out, x->dtype, x->ndim, x->shape);
    out->shape[dim] = n;
    return ST_OK;
}

/* torch.scatter_add's checks (ScatterGatherChecks.h), in its order; also
 * scatter's. */
static st_status infer_scatter_add(const ictx *c, st_meta *out)
{
    const char *fn = c->op == ST_OP_SCATTER ? "scatter" : "scatter_add";
    const st_meta *x = &c->in[0], *ix = &c->in[1], *src = &c->in[2];
    int64_t dim = c->a->i[0];
    if (wrap(c, &dim, x->ndim) != ST_OK)
        return st_err_kind();
    if (ix->dtype != ST_INT64)
        return fail(c, ST_ERR_RUNTIME,
                    "%s(): Expected dtype int64 for index", fn);
    if (x->dtype != src->dtype)
        return fail(c, ST_ERR_RUNTIME,
                    "%s(): Expected self.dtype to be equal to src.dtype",
                    fn);
    int nx = x->ndim ? x->ndim : 1, ni = ix->ndim ? ix->ndim : 1;
    int ns = src->ndim ? src->ndim : 1;
    if (nx != ni)
        return fail(c, ST_ERR_RUNTIME,
                    "Index tensor must have the same number of dimensions as "
                    "self tensor");
    if (ns != ni)
        return fail(c, ST_ERR_RUNTIME,
                    "Index tensor must have the same number of dimensions as "
                    "src tensor");
    if (st_meta_numel(ix) > 0) {
        bool bad = false;
        for (int d = 0; d < ix->ndim; d++) {
            int64_t xs = d < x->ndim ? x->shape[d] : 1;
            int64_t ss = d < src->ndim ? src->shape[d] : 1;
            if (ix->shape[d] > ss || (d != dim && ix->shape[d] > xs))
                bad = true;
        }
        if (bad) {
            char s1[96], s2[96], s3[96];
            return fail(c, ST_ERR_RUNTIME,
                        "Expected index %s to be smaller than self %s apart "
                        "from dimension %lld and to be smaller size than src "
                        "%s", shp(ix, s1, sizeof s1), shp(x, s2, sizeof s2),
                        (long long)dim, shp(src, s3, sizeof s3));
        }
    }
    set_out(out, x->dtype, x->ndim, x->shape);
    return ST_OK;
}

static const char *tensor_type_name(st_dtype t)
{
    static const char *n[ST_NDTYPES] = {
        [ST_BOOL] = "torch.BoolTensor", [ST_UINT8] = "torch.ByteTensor",
        [ST_INT8] = "torch.CharTensor", [ST_INT16] = "torch.ShortTensor",
        [ST_INT32] = "torch.IntTensor", [ST_INT64] = "torch.LongTensor",
        [ST_FLOAT16] = "torch.HalfTensor", [ST_BFLOAT16] = "torch.BFloat16Tensor",
        [ST_FLOAT32] = "torch.FloatTensor", [ST_FLOAT64] = "torch.DoubleTensor"};
    return (unsigned)t < ST_NDTYPES ? n[t] : "torch.Tensor";
}

static st_status infer_embedding(const ictx *c, st_meta *out)
{
    const st_meta *w = &c->in[0], *ix = &c->in[1];
    if (ix->dtype != ST_INT64 && ix->dtype != ST_INT32)
        return fail(c, ST_ERR_RUNTIME,
                    "Expected tensor for argument #1 'indices' to have one of "
                    "the following scalar types: Long, Int; but got %s "
                    "instead (while checking arguments for embedding)",
                    tensor_type_name(ix->dtype));
    if (w->ndim != 2)
        return fail(c, ST_ERR_RUNTIME, "'weight' must be 2-D");
    if (ix->ndim + 1 > ST_MAX_DIMS)
        return fail(c, ST_ERR_VALUE, "result has more than %d dims",
                    ST_MAX_DIMS);
    set_out(out, w->dtype, ix->ndim + 1, ix->shape);
    out->shape[ix->ndim] = w->shape[1];
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* creation, copy                                                       */

static st_status infer_create(const ictx *c, st_meta *out)
{
    st_dtype dt = c->a->dtype;
    if ((unsigned)dt >= ST_NDTYPES)
        return fail(c, ST_ERR_TYPE, "invalid dtype %d", (int)dt);
    if (c->op == ST_OP_RAND && !is_fl(dt))
        return not_impl(c, "check_uniform_bounds", dt);
    if (c->op == ST_OP_RANDN && !is_fl(dt))
        return not_impl(c, "normal_kernel_cpu", dt);
    if (c->nin == 1) {
        set_out(out, dt, c->in[0].ndim, c->in[0].shape);
        return ST_OK;
    }
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    if (c->op == ST_OP_ARANGE && c->a->ndims != 1)
        return fail(c, ST_ERR_VALUE,
                    "expected a 1-D shape (the element count), got %d dims",
                    c->a->ndims);
    for (int d = 0; d < c->a->ndims; d++) {
        if (c->a->dims[d] < 0) {
            char s[128];
            return fail(c, ST_ERR_RUNTIME,
                        "Trying to create tensor with negative dimension "
                        "%lld: %s", (long long)c->a->dims[d],
                        st_shape_str(c->a->dims, c->a->ndims, s, sizeof s));
        }
    }
    set_out(out, dt, c->a->ndims, c->a->dims);
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* views                                                                */

static st_status infer_reshape(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    const st_attrs *a = c->a;
    char s[128];
    st_shape_str(a->dims, a->ndims, s, sizeof s);
    int infer_at = -1;
    int64_t known = 1;
    for (int d = 0; d < a->ndims; d++) {
        if (a->dims[d] == -1) {
            if (infer_at >= 0)
                return fail(c, ST_ERR_RUNTIME,
                            "only one dimension can be inferred");
            infer_at = d;
        } else if (a->dims[d] < 0) {
            return fail(c, ST_ERR_RUNTIME,
                        "invalid shape dimension %lld at index %d of shape %s",
                        (long long)a->dims[d], d, s);
        } else if (__builtin_mul_overflow(known, a->dims[d], &known)) {
            return fail(c, ST_ERR_RUNTIME,
                        "shape '%s' is invalid for input of size %lld", s,
                        (long long)st_meta_numel(x));
        }
    }
    int64_t numel = st_meta_numel(x);
    int64_t shape[ST_MAX_DIMS] = {0};
    for (int d = 0; d < a->ndims; d++)
        shape[d] = a->dims[d];
    if (infer_at >= 0) {
        if (known == 0) {
            if (numel == 0)
                return fail(c, ST_ERR_RUNTIME,
                            "cannot reshape tensor of 0 elements into shape %s "
                            "because the unspecified dimension size -1 can be "
                            "any value and is ambiguous", s);
            return fail(c, ST_ERR_RUNTIME,
                        "shape '%s' is invalid for input of size %lld", s,
                        (long long)numel);
        }
        if (numel % known != 0)
            return fail(c, ST_ERR_RUNTIME,
                        "shape '%s' is invalid for input of size %lld", s,
                        (long long)numel);
        shape[infer_at] = numel / known;
    } else if (known != numel) {
        return fail(c, ST_ERR_RUNTIME,
                    "shape '%s' is invalid for input of size %lld", s,
                    (long long)numel);
    }
    set_out(out, x->dtype, a->ndims, shape);
    return ST_OK;
}

static st_status infer_permute(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    if (c->a->ndims != x->ndim)
        return fail(c, ST_ERR_RUNTIME,
                    "permute(): number of dimensions in the tensor input does "
                    "not match the length of the desired ordering of "
                    "dimensions i.e. input.dim() = %d is not equal to "
                    "len(dims) = %d", x->ndim, c->a->ndims);
    bool seen[ST_MAX_DIMS] = {false};
    int64_t shape[ST_MAX_DIMS] = {0};
    for (int k = 0; k < x->ndim; k++) {
        int64_t d = c->a->dims[k];
        if (wrap(c, &d, x->ndim) != ST_OK)
            return st_err_kind();
        if (seen[d])
            return fail(c, ST_ERR_RUNTIME,
                        "permute(): duplicate dims are not allowed.");
        seen[d] = true;
        shape[k] = x->shape[d];
    }
    set_out(out, x->dtype, x->ndim, shape);
    return ST_OK;
}

static st_status infer_expand(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    const st_attrs *a = c->a;
    char st[128], sx[128];
    st_shape_str(a->dims, a->ndims, st, sizeof st);
    shp(x, sx, sizeof sx);
    if (a->ndims < x->ndim)
        return fail(c, ST_ERR_RUNTIME,
                    "expand(%s{%s}, size=%s): the number of sizes provided "
                    "(%d) must be greater or equal to the number of "
                    "dimensions in the tensor (%d)",
                    tensor_type_name(x->dtype), sx, st, a->ndims, x->ndim);
    int off = a->ndims - x->ndim;
    int64_t shape[ST_MAX_DIMS] = {0};
    for (int d = 0; d < a->ndims; d++) {
        int64_t t = a->dims[d];
        if (d < off) {
            if (t < 0)
                return fail(c, ST_ERR_RUNTIME,
                            "The expanded size of the tensor (%lld) isn't "
                            "allowed in a leading, non-existing dimension %d",
                            (long long)t, d);
            shape[d] = t;
            continue;
        }
        int64_t s = x->shape[d - off];
        if (t == -1)
            shape[d] = s;
        else if (t == s || (s == 1 && t >= 0))
            shape[d] = t;
        else
            return fail(c, ST_ERR_RUNTIME,
                        "The expanded size of the tensor (%lld) must match the "
                        "existing size (%lld) at non-singleton dimension %d.  "
                        "Target sizes: %s.  Tensor sizes: %s",
                        (long long)t, (long long)s, d, st, sx);
    }
    set_out(out, x->dtype, a->ndims, shape);
    return ST_OK;
}

/* slice's and slice_scatter's attrs (dim, start, stop, step) over x: the
 * wrapped dim and the slice's length along it. */
static st_status slice_dim_len(const ictx *c, const st_meta *x, const char *what,
                               int64_t *dim, int64_t *len)
{
    if (x->ndim == 0)
        return fail(c, ST_ERR_INDEX, "%s() cannot be applied to a 0-dim tensor.", what);
    *dim = c->a->i[0];
    if (wrap(c, dim, x->ndim) != ST_OK)
        return st_err_kind();
    int64_t start = c->a->i[1], stop = c->a->i[2], step = c->a->i[3];
    if (step <= 0)
        return fail(c, ST_ERR_RUNTIME, "slice step must be positive");
    *len = st_slice_bounds(x->shape[*dim], &start, &stop, step);
    return ST_OK;
}

static st_status infer_slice(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    int64_t dim, len;
    if (slice_dim_len(c, x, "slice", &dim, &len) != ST_OK)
        return st_err_kind();
    set_out(out, x->dtype, x->ndim, x->shape);
    out->shape[dim] = len;
    return ST_OK;
}

static st_status infer_slice_scatter(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0], *src = &c->in[1];
    int64_t dim, len;
    if (slice_dim_len(c, x, "slice_scatter", &dim, &len) != ST_OK)
        return st_err_kind();
    if (src->dtype != x->dtype)
        return fail(c, ST_ERR_RUNTIME,
                    "expected src of dtype %s (self's), got %s",
                    st_dtype_name(x->dtype), st_dtype_name(src->dtype));
    bool same = src->ndim == x->ndim;
    for (int d = 0; same && d < x->ndim; d++)
        same = src->shape[d] == (d == dim ? len : x->shape[d]);
    if (!same) {
        st_meta sl = *x;
        sl.shape[dim] = len;
        char s1[96], s2[96];
        return fail(c, ST_ERR_RUNTIME,
                    "expected src to have a size equal to the "
                    "slice of self. src size = %s, slice size = %s",
                    shp(src, s1, sizeof s1), shp(&sl, s2, sizeof s2));
    }
    set_out(out, x->dtype, x->ndim, x->shape);
    return ST_OK;
}

static st_status infer_squeeze(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    bool mask[ST_MAX_DIMS];
    if (dims_mask(c, x->ndim, mask) != ST_OK)
        return st_err_kind();
    bool all = c->a->ndims == 0;
    int64_t shape[ST_MAX_DIMS] = {0};
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!((all || mask[d]) && x->shape[d] == 1))
            shape[nd++] = x->shape[d];
    set_out(out, x->dtype, nd, shape);
    return ST_OK;
}

static st_status infer_unsqueeze(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    int64_t dim = c->a->i[0];
    if (wrap(c, &dim, x->ndim + 1) != ST_OK)
        return st_err_kind();
    if (x->ndim + 1 > ST_MAX_DIMS)
        return fail(c, ST_ERR_VALUE, "result has more than %d dims",
                    ST_MAX_DIMS);
    int64_t shape[ST_MAX_DIMS] = {0};
    int nd = 0;
    for (int d = 0; d <= x->ndim; d++) {
        if (d == dim)
            shape[nd++] = 1;
        if (d < x->ndim)
            shape[nd++] = x->shape[d];
    }
    set_out(out, x->dtype, nd, shape);
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* composites                                                           */

static st_status infer_softmax(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    int64_t dim = c->a->i[0];
    if (wrap(c, &dim, x->ndim) != ST_OK)
        return st_err_kind();
    if (!is_fl(x->dtype))
        return not_impl(c, c->op == ST_OP_SOFTMAX ? "softmax_lastdim_kernel_impl"
                                                  : "log_softmax_lastdim_kernel_impl",
                        x->dtype);
    set_out(out, x->dtype, x->ndim, x->shape);
    return ST_OK;
}

static st_status infer_layer_norm(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    bool hw = (c->a->flags & ST_ATTR_HAS_WEIGHT) != 0;
    bool hb = (c->a->flags & ST_ATTR_HAS_BIAS) != 0;
    if (c->nin != 1 + hw + hb)
        return fail(c, ST_ERR_TYPE,
                    "expected %d operands (x%s%s) per the flags, got %d",
                    1 + hw + hb, hw ? ", weight" : "", hb ? ", bias" : "",
                    c->nin);
    int nn = c->a->ndims;
    if (nn < 1)
        return fail(c, ST_ERR_RUNTIME,
                    "Expected normalized_shape to be at least 1-dimensional, "
                    "i.e., containing at least one element, but got "
                    "normalized_shape = []");
    if (check_ndims(c) != ST_OK)
        return st_err_kind();
    char sx[128];
    shp(x, sx, sizeof sx);
    if (nn > x->ndim)
        return fail(c, ST_ERR_RUNTIME,
                    "Given normalized_shape of %d dims, expected input with "
                    "at least %d dims, but got input of size%s", nn, nn, sx);
    if (!is_fl(x->dtype))
        return not_impl(c, "LayerNormKernelImpl", x->dtype);
    const int64_t *ns = x->shape + (x->ndim - nn);
    char sn[128];
    st_shape_str(ns, nn, sn, sizeof sn);
    for (int k = 1; k < c->nin; k++) {
        const st_meta *p = &c->in[k];
        const char *what = (k == 1 && hw) ? "weight" : "bias";
        bool same = p->ndim == nn;
        for (int d = 0; same && d < nn; d++)
            same = p->shape[d] == ns[d];
        if (!same) {
            char sp[128];
            return fail(c, ST_ERR_RUNTIME,
                        "Expected %s to be of same shape as normalized_shape, "
                        "but got %s of shape %s and normalized_shape = %s",
                        what, what, shp(p, sp, sizeof sp), sn);
        }
        /* PyTorch's mixed type: a 16-bit input with float32 parameters
         * (autocast's case); the result keeps the input's dtype */
        bool mixed = (x->dtype == ST_FLOAT16 || x->dtype == ST_BFLOAT16) &&
                     p->dtype == ST_FLOAT32;
        if (p->dtype != x->dtype && !mixed)
            return fail(c, ST_ERR_RUNTIME,
                        "mixed dtype (CPU): expect parameter to have scalar "
                        "type of %s", tname(x->dtype == ST_FLOAT16 || x->dtype == ST_BFLOAT16
                                            ? ST_FLOAT32 : x->dtype));
    }
    set_out(out, x->dtype, x->ndim, x->shape);
    return ST_OK;
}

/* An optional operand a composite's caller computes (gelu's erf term,
 * cross_entropy's log-sum-exp) that does not fit: "<what>, got <dtype>
 * <shape> for <input shape>". */
static st_status bad_operand(const ictx *c, const char *what, const st_meta *got,
                             const st_meta *x)
{
    char s1[128], s2[128];
    return fail(c, ST_ERR_RUNTIME, "%s, got %s %s for %s", what, tname(got->dtype),
                shp(got, s1, sizeof s1), shp(x, s2, sizeof s2));
}

static st_status infer_gelu(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    if (!is_fl(x->dtype))
        return not_impl(c, "GeluKernelImpl", x->dtype);
    if (c->nin == 2) { /* erf(x / sqrt(2)) + 1, computed by the caller */
        const st_meta *e = &c->in[1];
        if ((c->a->flags & ST_ATTR_TANH) || e->dtype != x->dtype ||
            e->ndim != x->ndim ||
            memcmp(e->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)) {
            return bad_operand(c, "gelu: the erf operand must be erf(input / "
                               "sqrt(2)) + 1 of the input's shape and dtype "
                               "(exact form only)", e, x);
        }
    }
    set_out(out, x->dtype, x->ndim, x->shape);
    return ST_OK;
}

static st_status infer_cross_entropy(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0], *t = &c->in[1];
    int64_t red = c->a->i[1];
    if (red < 0 || red > 2)
        return fail(c, ST_ERR_VALUE,
                    "%lld is not a valid value for reduction (0 none, 1 mean, "
                    "2 sum)", (long long)red);
    if (x->ndim == 0 || t->ndim == x->ndim) {
        if (!is_fl(t->dtype))
            return fail(c, ST_ERR_RUNTIME,
                        "Expected floating point type for target with class "
                        "probabilities, got %s", tname(t->dtype));
        return fail(c, ST_ERR_RUNTIME,
                    "class-probability targets are not supported");
    }
    if (!is_fl(x->dtype))
        return not_impl(c, "log_softmax_lastdim_kernel_impl", x->dtype);
    if (t->dtype != ST_INT64)
        return fail(c, ST_ERR_RUNTIME,
                    "expected target dtype to be Long or Byte, but got %s",
                    tname(t->dtype));
    /* expected target shape: logits without the class dim (dim 1, or dim
     * 0 for unbatched [C] logits) */
    int64_t es[ST_MAX_DIMS] = {0};
    int ne = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != (x->ndim == 1 ? 0 : 1))
            es[ne++] = x->shape[d];
    if (t->ndim != ne)
        goto bad_shape;
    if (ne >= 1 && t->shape[0] != es[0])
        return fail(c, ST_ERR_VALUE,
                    "Expected input batch_size (%lld) to match target "
                    "batch_size (%lld).", (long long)es[0],
                    (long long)t->shape[0]);
    for (int d = 0; d < ne; d++)
        if (t->shape[d] != es[d])
            goto bad_shape;
    if (c->nin == 3) { /* the rows' log-sum-exp, computed by the caller */
        const st_meta *l = &c->in[2];
        if (x->ndim != 2 || l->dtype != x->dtype || l->ndim != 2 ||
            l->shape[0] != x->shape[0] || l->shape[1] != 1) {
            return bad_operand(c, "cross_entropy: the log-sum-exp operand must "
                               "be [N, 1] of the logits' dtype for logits [N, C]",
                               l, x);
        }
    }
    if (red == 0)
        set_out(out, x->dtype, ne, es);
    else
        set_out(out, x->dtype, 0, es);
    return ST_OK;
bad_shape:;
    char s1[128], s2[128];
    return fail(c, ST_ERR_RUNTIME, "Expected target size %s, got %s",
                st_shape_str(es, ne, s1, sizeof s1), shp(t, s2, sizeof s2));
}

static st_status infer_linear(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0], *w = &c->in[1];
    bool hb = (c->a->flags & ST_ATTR_HAS_BIAS) != 0;
    if (c->nin != 2 + hb)
        return fail(c, ST_ERR_TYPE,
                    "expected %d operands (x, w%s) per the flags, got %d",
                    2 + hb, hb ? ", b" : "", c->nin);
    if (x->ndim == 0 || w->ndim == 0)
        return fail(c, ST_ERR_RUNTIME,
                    "both arguments to linear need to be at least 1D, but they "
                    "are %dD and %dD", x->ndim, w->ndim);
    if (w->ndim > 2)
        return fail(c, ST_ERR_RUNTIME,
                    "t() expects a tensor with <= 2 dimensions, but self is "
                    "%dD", w->ndim);
    if (x->dtype != w->dtype)
        return fail(c, ST_ERR_RUNTIME,
                    "expected m1 and m2 to have the same dtype, but got: "
                    "%s != %s", cname(x->dtype), cname(w->dtype));
    if (x->dtype == ST_BOOL)
        return not_impl(c, "addmm_impl_cpu_", x->dtype);
    int64_t in_f = x->shape[x->ndim - 1];
    int64_t w_in = w->shape[w->ndim - 1];
    int64_t rows = prod_range(x->shape, 0, x->ndim - 1);
    int64_t shape[ST_MAX_DIMS] = {0};
    int nd = x->ndim - 1;
    for (int d = 0; d < nd; d++)
        shape[d] = x->shape[d];
    if (w->ndim == 1) {
        if (in_f != w_in) {
            if (x->ndim == 1)
                return fail(c, ST_ERR_RUNTIME,
                            "inconsistent tensor size, expected tensor [%lld] "
                            "and src [%lld] to have the same number of "
                            "elements, but got %lld and %lld elements "
                            "respectively", (long long)in_f, (long long)w_in,
                            (long long)in_f, (long long)w_in);
            return fail(c, ST_ERR_RUNTIME,
                        "size mismatch, got input (%lld), mat (%lldx%lld), "
                        "vec (%lld)", (long long)rows, (long long)rows,
                        (long long)in_f, (long long)w_in);
        }
    } else {
        if (in_f != w_in)
            return fail(c, ST_ERR_RUNTIME,
                        "mat1 and mat2 shapes cannot be multiplied "
                        "(%lldx%lld and %lldx%lld)", (long long)rows,
                        (long long)in_f, (long long)w_in,
                        (long long)w->shape[0]);
        shape[nd++] = w->shape[0];
    }
    if (hb) {
        const st_meta *b = &c->in[2];
        if (b->dtype != x->dtype)
            return fail(c, ST_ERR_RUNTIME,
                        "self and mat2 must have the same dtype, but got %s "
                        "and %s", tname(b->dtype), tname(x->dtype));
        /* the bias must expand to the result's shape */
        bool ok = b->ndim <= nd;
        for (int d = 0; ok && d < b->ndim; d++) {
            int64_t bs = b->shape[b->ndim - 1 - d];
            ok = bs == 1 || bs == shape[nd - 1 - d];
        }
        if (!ok) {
            char sr[128], sb[128];
            st_shape_str(shape, nd, sr, sizeof sr);
            shp(b, sb, sizeof sb);
            int64_t t = nd ? shape[nd - 1] : 0;
            int64_t s = b->ndim ? b->shape[b->ndim - 1] : 0;
            return fail(c, ST_ERR_RUNTIME,
                        "The expanded size of the tensor (%lld) must match "
                        "the existing size (%lld) at non-singleton dimension "
                        "%d.  Target sizes: %s.  Tensor sizes: %s",
                        (long long)t, (long long)s, nd - 1, sr, sb);
        }
    }
    set_out(out, x->dtype, nd, shape);
    return ST_OK;
}

static st_status infer_dropout(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    if (!is_fl(x->dtype))
        return fail(c, ST_ERR_RUNTIME,
                    "result type Float can't be cast to the desired output "
                    "type %s", tname(x->dtype));
    set_out(out, x->dtype, x->ndim, x->shape);
    return ST_OK;
}

static st_status infer_clamp(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0];
    int f = c->a->flags;
    if (!(f & (ST_ATTR_HAS_MIN | ST_ATTR_HAS_MAX)))
        return fail(c, ST_ERR_RUNTIME,
                    "torch.clamp: At least one of 'min' or 'max' must not be "
                    "None");
    st_meta ops[3];
    int n = 0;
    ops[n++] = *x;
    st_meta s;
    memset(&s, 0, sizeof s);
    s.kind = ST_META_SCALAR;
    s.dtype = (f & ST_ATTR_INT_VALUE) ? ST_INT64 : ST_FLOAT64;
    if (f & ST_ATTR_HAS_MIN)
        ops[n++] = s;
    if (f & ST_ATTR_HAS_MAX)
        ops[n++] = s;
    st_dtype dt = st_result_type(ops, n);
    if (dt == ST_BOOL)
        return not_impl(c, (f & ST_ATTR_HAS_MIN) ? "clamp_min_scalar_cpu"
                                                 : "clamp_max_scalar_cpu", dt);
    set_out(out, dt, x->ndim, x->shape);
    return ST_OK;
}

static st_status infer_masked_fill(const ictx *c, st_meta *out)
{
    const st_meta *x = &c->in[0], *m = &c->in[1];
    if (m->dtype != ST_BOOL)
        return fail(c, ST_ERR_RUNTIME,
                    "masked_fill_ only supports boolean masks, but got mask "
                    "with dtype %s", cname(m->dtype));
    int nd;
    int64_t shape[ST_MAX_DIMS] = {0};
    if (st_broadcast(c->name, c->in, 2, &nd, shape) != ST_OK)
        return annotate(c);
    set_out(out, x->dtype, nd, shape);
    return ST_OK;
}

/* ------------------------------------------------------------------ */
/* dispatch                                                             */

static st_op_def op_table[ST_NOPS];

static st_status check_operands(const ictx *c)
{
    for (int k = 0; k < c->nin; k++) {
        const st_meta *m = &c->in[k];
        if ((unsigned)m->dtype >= ST_NDTYPES)
            return fail(c, ST_ERR_TYPE, "operand %d has an invalid dtype (%d)",
                        k, (int)m->dtype);
        if (m->ndim < 0 || m->ndim > ST_MAX_DIMS)
            return fail(c, ST_ERR_VALUE, "operand %d has invalid rank %d", k,
                        m->ndim);
        if (m->kind != ST_META_TENSOR && m->kind != ST_META_SCALAR)
            return fail(c, ST_ERR_VALUE, "operand %d has an invalid kind %d",
                        k, (int)m->kind);
        for (int d = 0; d < m->ndim; d++)
            if (m->shape[d] < 0)
                return fail(c, ST_ERR_VALUE,
                            "operand %d has a negative size at dim %d", k, d);
    }
    return ST_OK;
}

static st_status dispatch(st_op_id op, const st_meta *in, int nin,
                          const st_attrs *attrs, st_meta *out, int *nout)
{
    static const st_attrs zero_attrs;
    const st_op_def *def = &op_table[op];
    ictx c = {op, def->name, in, nin, attrs ? attrs : &zero_attrs};
    if (!out || !nout)
        return st_err(ST_ERR_VALUE, "%s: null output arguments", def->name);
    *nout = 0;
    if (nin < 0 || nin > ST_MAX_IN || (nin > 0 && !in))
        return st_err(ST_ERR_VALUE, "%s: invalid operand list (%d)", def->name,
                      nin);
    if (nin < def->min_in || nin > def->max_in) {
        if (def->min_in == def->max_in)
            return fail(&c, ST_ERR_TYPE, "expected %d operand%s, got %d",
                        def->min_in, def->min_in == 1 ? "" : "s", nin);
        return fail(&c, ST_ERR_TYPE, "expected %d to %d operands, got %d",
                    def->min_in, def->max_in, nin);
    }
    if (check_operands(&c) != ST_OK)
        return st_err_kind();
    st_status s;
    switch (def->kind) {
    case ST_OPK_UNARY: s = infer_unary(&c, out); break;
    case ST_OPK_BINARY: s = infer_binary(&c, out); break;
    case ST_OPK_TERNARY: s = infer_where(&c, out); break;
    case ST_OPK_REDUCE: s = infer_reduce(&c, out); break;
    case ST_OPK_MATMUL: s = infer_matmul(&c, out); break;
    case ST_OPK_GATHER:
        s = op == ST_OP_GATHER ? infer_gather(&c, out)
          : op == ST_OP_INDEX_SELECT ? infer_index_select(&c, out)
          : op == ST_OP_SCATTER_ADD || op == ST_OP_SCATTER
              ? infer_scatter_add(&c, out)
          : op == ST_OP_SLICE_SCATTER ? infer_slice_scatter(&c, out)
          : infer_embedding(&c, out);
        break;
    case ST_OPK_CREATE: case ST_OPK_RANDOM: s = infer_create(&c, out); break;
    case ST_OPK_COPY:
        set_out(out, in[0].dtype, in[0].ndim, in[0].shape);
        s = ST_OK;
        break;
    case ST_OPK_VIEW:
        switch (op) {
        case ST_OP_RESHAPE: s = infer_reshape(&c, out); break;
        case ST_OP_PERMUTE: s = infer_permute(&c, out); break;
        case ST_OP_EXPAND: s = infer_expand(&c, out); break;
        case ST_OP_SLICE: s = infer_slice(&c, out); break;
        case ST_OP_SQUEEZE: s = infer_squeeze(&c, out); break;
        default: s = infer_unsqueeze(&c, out); break;
        }
        break;
    default:
        switch (op) {
        case ST_OP_SOFTMAX: case ST_OP_LOG_SOFTMAX:
            s = infer_softmax(&c, out); break;
        case ST_OP_LAYER_NORM: s = infer_layer_norm(&c, out); break;
        case ST_OP_GELU: s = infer_gelu(&c, out); break;
        case ST_OP_CROSS_ENTROPY: s = infer_cross_entropy(&c, out); break;
        case ST_OP_LINEAR: s = infer_linear(&c, out); break;
        case ST_OP_DROPOUT: s = infer_dropout(&c, out); break;
        case ST_OP_CLAMP: s = infer_clamp(&c, out); break;
        case ST_OP_MASKED_FILL: s = infer_masked_fill(&c, out); break;
        case ST_OP_LOGSUMEXP:
            s = is_fl(in[0].dtype) ? infer_reduce(&c, out)
                                   : not_impl(&c, "logsumexp", in[0].dtype);
            break;
        default: s = infer_embedding(&c, out); break;
        }
        break;
    }
    if (s != ST_OK)
        return s;
    int64_t numel = 1;
    for (int d = 0; d < out->ndim; d++)
        if (__builtin_mul_overflow(numel, out->shape[d], &numel))
            return fail(&c, ST_ERR_RUNTIME,
                        "numel: integer multiplication overflow");
    *nout = 1;
    return ST_OK;
}

/* One registered infer function per op (the signature carries no op id). */
#define INFER_FN(ID)                                                          \
    static st_status infer_##ID(const st_meta *in, int nin,                   \
                                const st_attrs *a, st_meta *out, int *nout)   \
    {                                                                         \
        return dispatch(ST_OP_##ID, in, nin, a, out, nout);                   \
    }
#define OP_LIST(X)                                                            \
    X(NEG) X(EXP) X(LOG) X(SQRT) X(RSQRT) X(TANH) X(SIGMOID) X(RELU) X(ERF)   \
    X(ABS) X(LOGICAL_NOT) X(SIN) X(COS) X(RECIPROCAL) X(FLOOR) X(CEIL)        \
    X(ROUND) X(SIGN) X(CAST) X(ADD) X(SUB) X(MUL) X(DIV) X(POW) X(MAXIMUM)    \
    X(MINIMUM) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(LOGICAL_AND)             \
    X(LOGICAL_OR) X(FLOOR_DIVIDE) X(REMAINDER) X(WHERE) X(SUM) X(MEAN)        \
    X(AMAX) X(AMIN) X(ARGMAX) X(ARGMIN) X(PROD) X(MATMUL) X(GATHER)           \
    X(INDEX_SELECT) X(SCATTER_ADD) X(FULL) X(ARANGE) X(RAND) X(RANDN) X(RANDINT) X(COPY)     \
    X(RESHAPE) X(PERMUTE) X(EXPAND) X(SLICE) X(SQUEEZE) X(UNSQUEEZE)          \
    X(SOFTMAX) X(LOG_SOFTMAX) X(LAYER_NORM) X(GELU) X(CROSS_ENTROPY)          \
    X(LINEAR) X(DROPOUT) X(CLAMP) X(MASKED_FILL) X(EMBEDDING) X(LOGSUMEXP)    \
    X(SLICE_SCATTER) X(SCATTER)
OP_LIST(INFER_FN)

/* ------------------------------------------------------------------ */
/* attribute printing: appends to the NUL-terminated string in buf,
 * fields separated by ", ", only non-default values                    */

static void app(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void app(char *buf, size_t n, const char *fmt, ...)
{
    if (!buf || n == 0)
        return;
    size_t len = strnlen(buf, n);
    if (len >= n - 1)
        return;
    const char *sep = len > 0 ? ", " : "";
    int w = snprintf(buf + len, n - len, "%s", sep);
    if (w < 0)
        return;
    len += (size_t)w;
    if (len >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

static const char *fmtd(double v, char *b, size_t n)
{
    return st_ir_fmt_double(v, b, n);
}

static const char *dims_str(const st_attrs *a, char *b, size_t n)
{
    int nd = a->ndims < 0 ? 0 : a->ndims > ST_MAX_DIMS ? ST_MAX_DIMS : a->ndims;
    return st_shape_str(a->dims, nd, b, n);
}

static void pa_none(const st_attrs *a, char *buf, size_t n)
{
    (void)a; (void)buf; (void)n;
}

static void pa_cast(const st_attrs *a, char *buf, size_t n)
{
    app(buf, n, "dtype=%s", st_dtype_name(a->dtype));
}

static void pa_reduce(const st_attrs *a, char *buf, size_t n)
{
    char b[128];
    if (a->ndims != 0)
        app(buf, n, "dims=%s", dims_str(a, b, sizeof b));
    if (a->flags & ST_ATTR_KEEPDIM)
        app(buf, n, "keepdim=True");
}

static void pa_dim(const st_attrs *a, char *buf, size_t n)
{
    app(buf, n, "dim=%lld", (long long)a->i[0]);
}

static void pa_value(const st_attrs *a, char *buf, size_t n, const char *key,
                     int k)
{
    char b[64];
    if (a->flags & ST_ATTR_INT_VALUE)
        app(buf, n, "%s=%lld", key, (long long)a->i[k]);
    else
        app(buf, n, "%s=%s", key, fmtd(a->f[k], b, sizeof b));
}

static void pa_shape_dtype(const st_attrs *a, char *buf, size_t n)
{
    char b[128];
    app(buf, n, "shape=%s", dims_str(a, b, sizeof b));
    app(buf, n, "dtype=%s", st_dtype_name(a->dtype));
}

static void pa_full(const st_attrs *a, char *buf, size_t n)
{
    pa_shape_dtype(a, buf, n);
    pa_value(a, buf, n, "value", 0);
}

static void pa_arange(const st_attrs *a, char *buf, size_t n)
{
    char b[64];
    pa_shape_dtype(a, buf, n);
    if (a->f[0] != 0.0)
        app(buf, n, "start=%s", fmtd(a->f[0], b, sizeof b));
    if (a->f[1] != 1.0)
        app(buf, n, "step=%s", fmtd(a->f[1], b, sizeof b));
}

/* a checkpoint's replay of a forward draw (ST_ATTR_RNG_REPLAY) */
static void pa_replay(const st_attrs *a, char *buf, size_t n)
{
    if (a->flags & ST_ATTR_RNG_REPLAY)
        app(buf, n, "replay=+%lld", (long long)a->i[2]);
}

static void pa_rand(const st_attrs *a, char *buf, size_t n)
{
    char b[64];
    pa_shape_dtype(a, buf, n);
    if (a->f[0] != 0.0)
        app(buf, n, "low=%s", fmtd(a->f[0], b, sizeof b));
    if (a->f[1] != 1.0)
        app(buf, n, "high=%s", fmtd(a->f[1], b, sizeof b));
    pa_replay(a, buf, n);
}

static void pa_randn(const st_attrs *a, char *buf, size_t n)
{
    char b[64];
    pa_shape_dtype(a, buf, n);
    if (a->f[0] != 0.0)
        app(buf, n, "mean=%s", fmtd(a->f[0], b, sizeof b));
    if (a->f[1] != 1.0)
        app(buf, n, "std=%s", fmtd(a->f[1], b, sizeof b));
    pa_replay(a, buf, n);
}

static void pa_randint(const st_attrs *a, char *buf, size_t n)
{
    pa_shape_dtype(a, buf, n);
    app(buf, n, "low=%lld, high=%lld", (long long)a->i[0],
        (long long)a->i[1]);
    pa_replay(a, buf, n);
}

static void pa_shape(const st_attrs *a, char *buf, size_t n)
{
    char b[128];
    app(buf, n, "shape=%s", dims_str(a, b, sizeof b));
}

static void pa_dims(const st_attrs *a, char *buf, size_t n)
{
    char b[128];
    app(buf, n, "dims=%s", dims_str(a, b, sizeof b));
}

static void pa_matmul(const st_attrs *a, char *buf, size_t n)
{
    if (a->ndims > 0)
        pa_dims(a, buf, n); /* written permuted (fusion's views folded) */
}

static void pa_slice(const st_attrs *a, char *buf, size_t n)
{
    app(buf, n, "dim=%lld, start=%lld, stop=%lld", (long long)a->i[0],
        (long long)a->i[1], (long long)a->i[2]);
    if (a->i[3] != 1)
        app(buf, n, "step=%lld", (long long)a->i[3]);
}

static void pa_squeeze(const st_attrs *a, char *buf, size_t n)
{
    char b[128];
    if (a->ndims != 0)
        app(buf, n, "dims=%s", dims_str(a, b, sizeof b));
}

static void pa_layer_norm(const st_attrs *a, char *buf, size_t n)
{
    char b[64];
    app(buf, n, "normalized_ndim=%d", a->ndims);
    app(buf, n, "eps=%s", fmtd(a->f[0], b, sizeof b));
}

static void pa_gelu(const st_attrs *a, char *buf, size_t n)
{
    if (a->flags & ST_ATTR_TANH)
        app(buf, n, "approximate='tanh'");
}

static void pa_cross_entropy(const st_attrs *a, char *buf, size_t n)
{
    static const char *r[3] = {"none", "mean", "sum"};
    if (a->i[0] != -100)
        app(buf, n, "ignore_index=%lld", (long long)a->i[0]);
    if (a->i[1] != 1) {
        if (a->i[1] >= 0 && a->i[1] <= 2)
            app(buf, n, "reduction='%s'", r[a->i[1]]);
        else
            app(buf, n, "reduction=%lld", (long long)a->i[1]);
    }
}

static void pa_dropout(const st_attrs *a, char *buf, size_t n)
{
    char b[64];
    app(buf, n, "p=%s", fmtd(a->f[0], b, sizeof b));
    pa_replay(a, buf, n);
}

static void pa_clamp(const st_attrs *a, char *buf, size_t n)
{
    if (a->flags & ST_ATTR_HAS_MIN)
        pa_value(a, buf, n, "min", 0);
    if (a->flags & ST_ATTR_HAS_MAX)
        pa_value(a, buf, n, "max", 1);
}

static void pa_masked_fill(const st_attrs *a, char *buf, size_t n)
{
    pa_value(a, buf, n, "value", 0);
}

static void pa_embedding(const st_attrs *a, char *buf, size_t n)
{
    if (a->i[0] != -1)
        app(buf, n, "padding_idx=%lld", (long long)a->i[0]);
}

/* ------------------------------------------------------------------ */
/* the table                                                            */

#define DEF(ID, NAME, KIND, MIN, MAX, PA)                                      \
    [ST_OP_##ID] = {.name = NAME, .kind = KIND, .min_in = MIN,                 \
                    .max_in = MAX, .infer = infer_##ID, .vjp = NULL,           \
                    .vjp_saves = 0, .print_attrs = PA}

static st_op_def op_table[ST_NOPS] = {
    DEF(NEG, "neg", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(EXP, "exp", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(LOG, "log", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(SQRT, "sqrt", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(RSQRT, "rsqrt", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(TANH, "tanh", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(SIGMOID, "sigmoid", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(RELU, "relu", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(ERF, "erf", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(ABS, "abs", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(LOGICAL_NOT, "logical_not", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(SIN, "sin", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(COS, "cos", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(RECIPROCAL, "reciprocal", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(FLOOR, "floor", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(CEIL, "ceil", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(ROUND, "round", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(SIGN, "sign", ST_OPK_UNARY, 1, 1, pa_none),
    DEF(CAST, "cast", ST_OPK_UNARY, 1, 1, pa_cast),
    DEF(ADD, "add", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(SUB, "sub", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(MUL, "mul", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(DIV, "div", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(POW, "pow", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(MAXIMUM, "maximum", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(MINIMUM, "minimum", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(EQ, "eq", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(NE, "ne", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(LT, "lt", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(LE, "le", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(GT, "gt", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(GE, "ge", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(LOGICAL_AND, "logical_and", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(LOGICAL_OR, "logical_or", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(FLOOR_DIVIDE, "floor_divide", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(REMAINDER, "remainder", ST_OPK_BINARY, 2, 2, pa_none),
    DEF(WHERE, "where", ST_OPK_TERNARY, 3, 3, pa_none),
    DEF(SUM, "sum", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(MEAN, "mean", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(AMAX, "amax", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(AMIN, "amin", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(ARGMAX, "argmax", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(ARGMIN, "argmin", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(PROD, "prod", ST_OPK_REDUCE, 1, 1, pa_reduce),
    DEF(MATMUL, "matmul", ST_OPK_MATMUL, 2, 2, pa_matmul),
    DEF(GATHER, "gather", ST_OPK_GATHER, 2, 2, pa_dim),
    DEF(INDEX_SELECT, "index_select", ST_OPK_GATHER, 2, 2, pa_dim),
    DEF(SCATTER_ADD, "scatter_add", ST_OPK_GATHER, 3, 3, pa_dim),
    DEF(FULL, "full", ST_OPK_CREATE, 0, 1, pa_full),
    DEF(ARANGE, "arange", ST_OPK_CREATE, 0, 0, pa_arange),
    DEF(RAND, "rand", ST_OPK_RANDOM, 0, 1, pa_rand),
    DEF(RANDN, "randn", ST_OPK_RANDOM, 0, 1, pa_randn),
    DEF(RANDINT, "randint", ST_OPK_RANDOM, 0, 1, pa_randint),
    DEF(COPY, "copy", ST_OPK_COPY, 1, 1, pa_none),
    DEF(RESHAPE, "reshape", ST_OPK_VIEW, 1, 1, pa_shape),
    DEF(PERMUTE, "permute", ST_OPK_VIEW, 1, 1, pa_dims),
    DEF(EXPAND, "expand", ST_OPK_VIEW, 1, 1, pa_shape),
    DEF(SLICE, "slice", ST_OPK_VIEW, 1, 1, pa_slice),
    DEF(SQUEEZE, "squeeze", ST_OPK_VIEW, 1, 1, pa_squeeze),
    DEF(UNSQUEEZE, "unsqueeze", ST_OPK_VIEW, 1, 1, pa_dim),
    DEF(SOFTMAX, "softmax", ST_OPK_COMPOSITE, 1, 1, pa_dim),
    DEF(LOG_SOFTMAX, "log_softmax", ST_OPK_COMPOSITE, 1, 1, pa_dim),
    DEF(LAYER_NORM, "layer_norm", ST_OPK_COMPOSITE, 1, 3, pa_layer_norm),
    DEF(GELU, "gelu", ST_OPK_COMPOSITE, 1, 2, pa_gelu),
    DEF(CROSS_ENTROPY, "cross_entropy", ST_OPK_COMPOSITE, 2, 3,
        pa_cross_entropy),
    DEF(LINEAR, "linear", ST_OPK_COMPOSITE, 2, 3, pa_none),
    DEF(DROPOUT, "dropout", ST_OPK_COMPOSITE, 1, 1, pa_dropout),
    DEF(CLAMP, "clamp", ST_OPK_COMPOSITE, 1, 1, pa_clamp),
    DEF(MASKED_FILL, "masked_fill", ST_OPK_COMPOSITE, 2, 2, pa_masked_fill),
    DEF(EMBEDDING, "embedding", ST_OPK_COMPOSITE, 2, 2, pa_embedding),
    DEF(LOGSUMEXP, "logsumexp", ST_OPK_COMPOSITE, 1, 1, pa_reduce),
    DEF(SLICE_SCATTER, "slice_scatter", ST_OPK_GATHER, 2, 2, pa_slice),
    DEF(SCATTER, "scatter", ST_OPK_GATHER, 3, 3, pa_dim),
};

const st_op_def *st_op(st_op_id id)
{
    if ((unsigned)id >= ST_NOPS)
        return NULL;
    return &op_table[id];
}

void st_op_set_vjp(st_op_id id, st_vjp_fn fn)
{
    if ((unsigned)id < ST_NOPS)
        op_table[id].vjp = fn;
}

void st_op_set_vjp_saves(st_op_id id, unsigned saves)
{
    if ((unsigned)id < ST_NOPS)
        op_table[id].vjp_saves = saves;
}

st_status st_infer(st_op_id id, const st_meta *in, int nin,
                   const st_attrs *attrs, st_meta *out, int *nout)
{
    if ((unsigned)id >= ST_NOPS) {
        if (nout)
            *nout = 0;
        return st_err(ST_ERR_VALUE, "infer: unknown op id %d", (int)id);
    }
    return op_table[id].infer(in, nin, attrs, out, nout);
}
