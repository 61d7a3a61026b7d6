/* ir/dtype.c - owns the dtype table (size, name, category), PyTorch's type
 * promotion (st_promote, st_result_type), shape broadcasting, dim wrapping,
 * float16/bfloat16 conversions and the small meta helpers (numel, shape
 * formatting). */
#include <stdio.h>
#include <string.h>

#include "st_ir.h"

static const struct {
    size_t size;
    const char *name;
    bool is_float, is_int;
} dtype_table[ST_NDTYPES] = {
    [ST_BOOL] = {1, "bool", false, false},
    [ST_UINT8] = {1, "uint8", false, true},
    [ST_INT8] = {1, "int8", false, true},
    [ST_INT16] = {2, "int16", false, true},
    [ST_INT32] = {4, "int32", false, true},
    [ST_INT64] = {8, "int64", false, true},
    [ST_FLOAT16] = {2, "float16", true, false},
    [ST_BFLOAT16] = {2, "bfloat16", true, false},
    [ST_FLOAT32] = {4, "float32", true, false},
    [ST_FLOAT64] = {8, "float64", true, false},
};

static bool dtype_ok(st_dtype t)
{
    return (unsigned)t < (unsigned)ST_NDTYPES;
}

size_t st_dtype_size(st_dtype t)
{
    return dtype_ok(t) ? dtype_table[t].size : 0;
}

const char *st_dtype_name(st_dtype t)
{
    return dtype_ok(t) ? dtype_table[t].name : "invalid";
}

bool st_dtype_is_float(st_dtype t)
{
    return dtype_ok(t) && dtype_table[t].is_float;
}

bool st_dtype_is_int(st_dtype t)
{
    return dtype_ok(t) && dtype_table[t].is_int;
}

int st_dtype_int_bits(st_dtype t)
{
    if (t == ST_BOOL)
        return 1;
    return st_dtype_is_int(t) ? (int)dtype_table[t].size * 8 : 0;
}

bool st_dtype_is_unsigned(st_dtype t)
{
    return t == ST_BOOL || t == ST_UINT8;
}

/* The enum order is the promotion order, except that float16 and bfloat16
 * are incomparable (together they give float32) and so are uint8 and int8
 * (together int16, the smallest type holding both ranges). Invalid input gives
 * ST_NDTYPES with a TypeError set. */
st_dtype st_promote(st_dtype a, st_dtype b)
{
    if (!dtype_ok(a) || !dtype_ok(b)) {
        st_err(ST_ERR_TYPE, "promote_types: invalid dtype (%d, %d)", (int)a,
               (int)b);
        return ST_NDTYPES;
    }
    if ((a == ST_FLOAT16 && b == ST_BFLOAT16) ||
        (a == ST_BFLOAT16 && b == ST_FLOAT16))
        return ST_FLOAT32;
    if ((a == ST_UINT8 && b == ST_INT8) || (a == ST_INT8 && b == ST_UINT8))
        return ST_INT16;
    return a > b ? a : b;
}

/* ---- half / bfloat16 ---- */
static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float st_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24 is exact in float */
        float v = (float)mant * u2f(0x33800000u); /* 2^-24 */
        return sign ? -v : v;
    }
    if (exp == 31)
        return u2f(sign | 0x7f800000u | (mant << 13));
    return u2f(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t st_float_to_half(float f)
{
    uint32_t x = f2u(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        if (ax > 0x7f800000u) /* NaN: keep it quiet, keep the top payload */
            return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
        return (uint16_t)(sign | 0x7c00u);
    }
    if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        /* below 2^-14: subnormal half. Adding 0.5 puts the half ulp
         * (2^-24) at the float ulp, so the FPU rounds to nearest even. */
        float v = u2f(ax) + 0.5f;
        return (uint16_t)(sign | (f2u(v) - 0x3f000000u));
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd; /* rebias exponent (-112 << 23), round */
    return (uint16_t)(sign | (ax >> 13));
}

float st_bf16_to_float(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

uint16_t st_float_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet it */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* ---- metas ---- */
int64_t st_meta_numel(const st_meta *m)
{
    if (!m || m->ndim < 0 || m->ndim > ST_MAX_DIMS)
        return 0;
    int64_t n = 1;
    for (int d = 0; d < m->ndim; d++) {
        if (m->shape[d] < 0)
            return 0;
        if (__builtin_mul_overflow(n, m->shape[d], &n))
            return INT64_MAX;
    }
    return n;
}

char *st_shape_str(const int64_t *shape, int ndim, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    size_t len = 0;
    buf[0] = '\0';
#define APP(...)                                                        \
    do {                                                                \
        if (len < n) {                                                  \
            int w_ = snprintf(buf + len, n - len, __VA_ARGS__);         \
            if (w_ > 0)                                                 \
                len += (size_t)w_;                                      \
        }                                                               \
    } while (0)
    APP("[");
    if (ndim > ST_MAX_DIMS)
        ndim = ST_MAX_DIMS;
    for (int d = 0; shape && d < ndim; d++)
        APP(d ? ", %lld" : "%lld", (long long)shape[d]);
    APP("]");
#undef APP
    return buf;
}

/* ---- result_type: PyTorch's ResultTypeState / combine_categories ---- */
static int promote_skip(int a, int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return (int)st_promote((st_dtype)a, (st_dtype)b);
}

static int combine_categories(int higher, int lower)
{
    if (higher >= 0 && st_dtype_is_float((st_dtype)higher))
        return higher;
    if (higher == ST_BOOL || (lower >= 0 && st_dtype_is_float((st_dtype)lower)))
        return promote_skip(higher, lower);
    if (higher >= 0)
        return higher;
    return lower;
}

st_dtype st_result_type(const st_meta *ops, int n)
{
    int dim_r = -1, zero_r = -1, wrap_r = -1;
    for (int k = 0; ops && k < n; k++) {
        st_dtype cur = ops[k].dtype;
        if (!dtype_ok(cur))
            continue;
        if (ops[k].kind == ST_META_SCALAR) {
            /* a wrapped Python float takes the default dtype */
            if (st_dtype_is_float(cur))
                cur = ST_FLOAT32;
            wrap_r = promote_skip(wrap_r, (int)cur);
        } else if (ops[k].ndim > 0) {
            dim_r = promote_skip(dim_r, (int)cur);
        } else {
            zero_r = promote_skip(zero_r, (int)cur);
        }
    }
    int r = combine_categories(dim_r, combine_categories(zero_r, wrap_r));
    return r < 0 ? ST_FLOAT32 : (st_dtype)r;
}

/* ---- broadcasting ---- */
st_status st_broadcast(const char *op, const st_meta *ops, int n, int *ndim,
                       int64_t *shape)
{
    if (!op)
        op = "broadcast";
    if (!ops || n < 0 || !ndim || !shape)
        return st_err(ST_ERR_VALUE, "%s: broadcast: invalid arguments", op);
    int nd = 0;
    for (int k = 0; k < n; k++) {
        if (ops[k].ndim < 0 || ops[k].ndim > ST_MAX_DIMS)
            return st_err(ST_ERR_VALUE, "%s: operand %d has invalid rank %d",
                          op, k, ops[k].ndim);
        if (ops[k].ndim > nd)
            nd = ops[k].ndim;
    }
    int64_t out[ST_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int64_t size = 1;
        for (int k = 0; k < n; k++) {
            int kd = d - (nd - ops[k].ndim);
            if (kd < 0)
                continue;
            int64_t s = ops[k].shape[kd];
            if (s == 1)
                continue;
            if (size == 1) {
                size = s;
            } else if (s != size) {
                char shapes[ST_MAX_IN * 96];
                size_t len = 0;
                shapes[0] = '\0';
                for (int j = 0; j < n && len < sizeof shapes; j++) {
                    char b[96];
                    st_shape_str(ops[j].shape, ops[j].ndim, b, sizeof b);
                    const char *sep = j == 0 ? "" : (j == n - 1 ? " and " : ", ");
                    int w = snprintf(shapes + len, sizeof shapes - len, "%s%s",
                                     sep, b);
                    if (w > 0)
                        len += (size_t)w;
                }
                return st_err(ST_ERR_RUNTIME,
                              "%s: the size of tensor a (%lld) must match the "
                              "size of tensor b (%lld) at non-singleton "
                              "dimension %d; shapes %s",
                              op, (long long)size, (long long)s, d, shapes);
            }
        }
        out[d] = size;
    }
    *ndim = nd;
    for (int d = 0; d < nd; d++)
        shape[d] = out[d];
    return ST_OK;
}

st_status st_wrap_dim(const char *op, int64_t *dim, int ndim)
{
    if (!op)
        op = "wrap_dim";
    if (!dim)
        return st_err(ST_ERR_VALUE, "%s: null dim", op);
    int64_t n = ndim <= 0 ? 1 : ndim;
    int64_t lo = -n, hi = n - 1;
    if (*dim < lo || *dim > hi)
        return st_err(ST_ERR_INDEX,
                      "%s: dimension out of range (expected to be in range "
                      "of [%lld, %lld], but got %lld)",
                      op, (long long)lo, (long long)hi, (long long)*dim);
    if (*dim < 0)
        *dim += n;
    return ST_OK;
}

int64_t st_slice_bounds(int64_t size, int64_t *start, int64_t *stop,
                        int64_t step)
{
    int64_t a = *start, b = *stop;
    if (a < 0)
        a = a < -size ? 0 : a + size;
    if (b < 0)
        b = b < -size ? 0 : b + size;
    if (a > size)
        a = size;
    if (b < a)
        b = a;
    else if (b > size)
        b = size;
    *start = a;
    *stop = b;
    return b > a ? (b - a - 1) / step + 1 : 0; /* no overflow near INT64_MAX */
}

/* PyTorch's computeStride: strides that view oldshape/oldstride as newshape,
 * or false when the layout does not allow a view. */
bool st_view_strides(int od, const int64_t *oldshape, const int64_t *oldstride,
                     int nd, const int64_t *newshape, int64_t *newstride)
{
    if (od == 0) {
        for (int d = 0; d < nd; d++)
            newstride[d] = 1;
        return true;
    }
    int64_t numel = 1;
    for (int d = 0; d < od; d++)
        numel *= oldshape[d];
    if (numel == 0) {
        bool same = od == nd;
        for (int d = 0; same && d < nd; d++)
            same = oldshape[d] == newshape[d];
        if (same) {
            memcpy(newstride, oldstride, sizeof(int64_t) * (size_t)nd);
            return true;
        }
        for (int d = nd - 1; d >= 0; d--)
            newstride[d] = d == nd - 1 ? 1
                                       : (newshape[d + 1] > 1 ? newshape[d + 1] : 1) *
                                             newstride[d + 1];
        return true;
    }
    int view_d = nd - 1;
    int64_t chunk_base_stride = oldstride[od - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int tensor_d = od - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= oldshape[tensor_d];
        if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                              oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
                newstride[view_d] = view_numel * chunk_base_stride;
                view_numel *= newshape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (tensor_d > 0) {
                chunk_base_stride = oldstride[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

