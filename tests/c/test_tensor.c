/* tests/c/test_tensor.c - tests of storage and tensors (runtime/tensor.c)
 * and of the view functions (runtime/view.c): shapes, strides, offsets and
 * values of every view, reshape's view-vs-copy decision (the copy goes
 * through the eager COPY op), reference counting visible in the CPU
 * allocator's statistics, and the error kind and message of bad input. */
#include "st_runtime.h"
#include "st_test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A(...) ((const int64_t[]){__VA_ARGS__})

static bool eq(const int64_t *x, const int64_t *y, int n)
{
    for (int i = 0; i < n; i++)
        if (x[i] != y[i])
            return false;
    return true;
}

static const char *s_(const int64_t *v, int n, char *buf)
{
    return st_shape_str(v, n, buf, 160);
}

/* Checks ndim, shape, strides and offset of a view. */
static void expect_view(int line, const st_tensor *t, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset)
{
    char b1[160], b2[160], b3[160], b4[160];
    if (!t) {
        st_test_fail_at(__FILE__, line, "NULL tensor (%s)", st_err_msg());
        return;
    }
    if (t->ndim != ndim || !eq(t->shape, shape, ndim) || !eq(t->strides, strides, ndim) ||
        t->offset != offset) {
        st_test_fail_at(__FILE__, line,
                        "got shape %s strides %s offset %" PRId64
                        ", want shape %s strides %s offset %" PRId64,
                        s_(t->shape, t->ndim, b1), s_(t->strides, t->ndim, b2), t->offset,
                        s_(shape, ndim, b3), s_(strides, ndim, b4), offset);
    }
}
#define EXPECT_VIEW(t, nd, shape, strides, off) expect_view(__LINE__, t, nd, shape, strides, off)

/* Checks that f returned NULL with the given error kind and a message
 * containing every needle. */
static void expect_err(int line, st_tensor *r, st_status kind, const char *n1, const char *n2)
{
    if (r) {
        st_test_fail_at(__FILE__, line, "expected an error, got a tensor");
        st_tensor_decref(r);
        return;
    }
    const char *m = st_err_msg();
    if (st_err_kind() != kind || (n1 && !strstr(m, n1)) || (n2 && !strstr(m, n2))) {
        st_test_fail_at(__FILE__, line,
                        "error kind %d (want %d), message \"%s\" (want \"%s\"%s%s%s)",
                        (int)st_err_kind(), (int)kind, m, n1 ? n1 : "", n2 ? ", \"" : "",
                        n2 ? n2 : "", n2 ? "\"" : "");
    }
    st_err_clear();
}
#define EXPECT_ERR(expr, kind, n1, n2) do { st_err_clear(); expect_err(__LINE__, (expr), kind, n1, n2); } while (0)

/* A float32 tensor holding 0, 1, 2, ... */
static st_tensor *arange(int ndim, const int64_t *shape)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, ndim, shape);
    CHECK_FATAL(t, "st_tensor_empty: %s", st_err_msg());
    float *p = st_tensor_data(t);
    for (int64_t i = 0; i < st_tensor_numel(t); i++)
        p[i] = (float)i;
    return t;
}

/* Element at a multi-index through strides and offset. */
static float at(const st_tensor *t, const int64_t *idx)
{
    const float *p = (const float *)t->storage->data + t->offset;
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++)
        off += idx[d] * t->strides[d];
    return p[off];
}

static st_alloc_stats cpu_stats(void)
{
    st_alloc_stats s;
    st_alloc_stats_get(st_alloc_for(st_rt_cpu()), &s);
    return s;
}

/* ---------------- tensors ---------------- */
static void test_empty(void)
{
    st_tensor *t = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 3, A(2, 3, 4));
    EXPECT_VIEW(t, 3, A(2, 3, 4), A(12, 4, 1), 0);
    CHECK(t->refcount == 1 && t->storage->refcount == 1, "refcounts");
    CHECK(st_tensor_numel(t) == 24 && st_tensor_is_contiguous(t), "numel/contiguous");
    CHECK(t->storage->nbytes >= 96 && st_tensor_data(t) == t->storage->data, "data");
    CHECK((uintptr_t)st_tensor_data(t) % 64 == 0, "alignment");
    CHECK(st_tensor_device(t) == st_rt_cpu(), "device");
    st_meta m;
    st_tensor_meta(t, &m);
    CHECK(m.dtype == ST_FLOAT32 && m.ndim == 3 && eq(m.shape, A(2, 3, 4), 3) &&
              m.kind == ST_META_TENSOR, "meta");
    st_tensor_decref(t);

    st_tensor *z = st_tensor_empty(st_rt_cpu(), ST_INT64, 0, NULL);
    CHECK_FATAL(z, "0-dim: %s", st_err_msg());
    CHECK(z->ndim == 0 && st_tensor_numel(z) == 1 && st_tensor_is_contiguous(z), "0-dim");
    st_tensor_decref(z);

    st_tensor *e = st_tensor_empty(st_rt_cpu(), ST_FLOAT64, 3, A(2, 0, 3));
    EXPECT_VIEW(e, 3, A(2, 0, 3), A(3, 3, 1), 0);
    CHECK(e && st_tensor_numel(e) == 0 && st_tensor_is_contiguous(e), "empty tensor");
    st_tensor_decref(e);

    int64_t st[4];
    st_contiguous_strides(4, A(2, 1, 3, 5), st);
    CHECK(eq(st, A(15, 15, 5, 1), 4), "contiguous strides");

    /* is_contiguous ignores the strides of size-1 dims (PyTorch's rule) */
    st_tensor *b = arange(2, A(4, 6));
    st_tensor *v = st_tensor_view_of(b, 3, A(1, 4, 1), A(99, 6, 7), 0);
    CHECK_FATAL(v, "view_of: %s", st_err_msg());
    st_tensor *w = st_tensor_view_of(b, 2, A(4, 6), NULL, 0);
    EXPECT_VIEW(w, 2, A(4, 6), A(6, 1), 0);
    st_tensor *u = st_tensor_view_of(b, 2, A(2, 3), A(3, 1), 5);
    CHECK(u && st_tensor_is_contiguous(u) && st_tensor_data(u) == (float *)b->storage->data + 5,
          "offset data");
    CHECK(v && !st_tensor_is_contiguous(v), "[1, 4, 1] strides [99, 6, 7]");
    st_tensor *nc = st_tensor_view_of(b, 2, A(4, 2), A(6, 1), 0);
    CHECK(nc && !st_tensor_is_contiguous(nc), "[4,2] strides [6,1] is not contiguous");
    st_tensor *c1 = st_tensor_view_of(b, 2, A(4, 6), A(7, 1), 0);
    CHECK(c1 == NULL, "view_of past the storage must fail");
    st_err_clear();
    st_tensor *c2 = st_tensor_view_of(b, 3, A(4, 1, 6), A(6, 3, 1), 0);
    CHECK(c2 && st_tensor_is_contiguous(c2), "size-1 dim stride ignored");
    st_tensor_decref(c2);
    st_tensor_decref(nc);
    st_tensor_decref(u);
    st_tensor_decref(w);
    st_tensor_decref(v);
    st_tensor_decref(b);
}

/* ---------------- views ---------------- */
static void test_permute_transpose(void)
{
    st_tensor *x = arange(3, A(2, 3, 4));
    st_tensor *t = st_tensor_transpose(x, 0, 2);
    EXPECT_VIEW(t, 3, A(4, 3, 2), A(1, 4, 12), 0);
    CHECK(t && !st_tensor_is_contiguous(t) && t->storage == x->storage, "transpose shares");
    CHECK(t && at(t, A(3, 1, 1)) == 12 + 4 + 3, "transpose value");
    st_tensor *t2 = st_tensor_transpose(x, -1, -3);
    EXPECT_VIEW(t2, 3, A(4, 3, 2), A(1, 4, 12), 0);
    st_tensor *p = st_tensor_permute(x, A(2, 0, 1));
    EXPECT_VIEW(p, 3, A(4, 2, 3), A(1, 12, 4), 0);
    st_tensor *p2 = st_tensor_permute(x, A(-1, 0, -2));
    EXPECT_VIEW(p2, 3, A(4, 2, 3), A(1, 12, 4), 0);
    CHECK(x->storage->refcount == 5, "storage refcount %" PRId64, x->storage->refcount);
    st_tensor_decref(t);
    st_tensor_decref(t2);
    st_tensor_decref(p);
    st_tensor_decref(p2);
    CHECK(x->storage->refcount == 1, "storage refcount %" PRId64, x->storage->refcount);
    st_tensor_decref(x);
}

static void test_reshape(void)
{
    st_tensor *x = arange(3, A(2, 3, 4));
    st_tensor *r = st_tensor_reshape(x, 2, A(6, 4), true);
    EXPECT_VIEW(r, 2, A(6, 4), A(4, 1), 0);
    CHECK(r && r->storage == x->storage, "reshape of contiguous is a view");
    st_tensor *r2 = st_tensor_reshape(x, 2, A(-1, 2), false);
    EXPECT_VIEW(r2, 2, A(12, 2), A(2, 1), 0);
    st_tensor *r3 = st_tensor_reshape(x, 0, NULL, false);
    CHECK(r3 == NULL && st_err_kind() == ST_ERR_RUNTIME, "24 elements into a scalar");
    st_err_clear();
    st_tensor *one = arange(3, A(1, 1, 1));
    st_tensor *r4 = st_tensor_reshape(one, 0, NULL, true);
    EXPECT_VIEW(r4, 0, A(0), A(0), 0);
    st_tensor *r5 = r4 ? st_tensor_reshape(r4, 2, A(1, -1), true) : NULL;
    EXPECT_VIEW(r5, 2, A(1, 1), A(1, 1), 0);
    st_tensor_decref(r5);
    st_tensor_decref(r4);
    st_tensor_decref(one);

    /* a transposed tensor that can still be viewed: [3, 2, 4] strides
     * [4, 12, 1] -> [3, 2, 2, 2] */
    st_tensor *tx = st_tensor_transpose(x, 0, 1);
    st_tensor *v = st_tensor_reshape(tx, 4, A(3, 2, 2, 2), true);
    EXPECT_VIEW(v, 4, A(3, 2, 2, 2), A(4, 12, 2, 1), 0);
    /* merging dims 0 and 1 of it is not a view */
    EXPECT_ERR(st_tensor_reshape(tx, 2, A(6, 4), true), ST_ERR_RUNTIME,
               "view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
               "[3, 2, 4]");
    /* ... reshape copies instead (through the eager COPY op) */
    st_alloc_stats s0 = cpu_stats();
    st_tensor *c = st_tensor_reshape(tx, 2, A(6, 4), false);
    if (!c) {
        FAIL("reshape with copy: %s (is runtime/eager.c written yet?)", st_err_msg());
    } else {
        EXPECT_VIEW(c, 2, A(6, 4), A(4, 1), 0);
        CHECK(c->storage != x->storage, "the copy has its own storage");
        CHECK(c->storage->refcount == 1 && c->refcount == 1, "copy refcounts");
        CHECK(cpu_stats().active_blocks == s0.active_blocks + 1, "one new block for the copy");
        const float *cp = st_tensor_data(c);
        bool ok = true;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++)
                for (int k = 0; k < 4; k++)
                    ok &= cp[(i * 2 + j) * 4 + k] == (float)(j * 12 + i * 4 + k);
        CHECK(ok, "copied values");
        st_tensor_decref(c);
        CHECK(cpu_stats().active_blocks == s0.active_blocks, "copy's block released");
    }
    /* contiguous(): itself when contiguous, else a copy */
    int64_t rc0 = x->refcount; /* x's views hold it too (their _base) */
    st_tensor *same = st_tensor_contiguous(x);
    CHECK(same == x && x->refcount == rc0 + 1, "contiguous of contiguous returns t increfed");
    st_tensor_decref(same);
    st_tensor *cc = st_tensor_contiguous(tx);
    if (cc) {
        EXPECT_VIEW(cc, 3, A(3, 2, 4), A(8, 4, 1), 0);
        CHECK(at(cc, A(2, 1, 3)) == 12 + 8 + 3, "contiguous value");
        st_tensor_decref(cc);
    } else {
        FAIL("contiguous copy: %s", st_err_msg());
    }

    /* computeStride on a sliced tensor: [4, 3] strides [6, 1] */
    st_tensor *y = arange(2, A(4, 6));
    st_tensor *sl = st_tensor_slice(y, 1, 0, 3, 1);
    EXPECT_VIEW(sl, 2, A(4, 3), A(6, 1), 0);
    st_tensor *sv = st_tensor_reshape(sl, 3, A(2, 2, 3), true);
    EXPECT_VIEW(sv, 3, A(2, 2, 3), A(12, 6, 1), 0);
    st_tensor *sv2 = st_tensor_reshape(sl, 3, A(4, 1, 3), true);
    EXPECT_VIEW(sv2, 3, A(4, 1, 3), A(6, 3, 1), 0);
    EXPECT_ERR(st_tensor_reshape(sl, 1, A(12), true), ST_ERR_RUNTIME, "view size", "[4, 3]");
    /* expanded dims (stride 0) stay views when not merged */
    st_tensor *ex = st_tensor_expand(sl, 3, A(5, 4, 3));
    st_tensor *exv = st_tensor_reshape(ex, 4, A(5, 2, 2, 3), true);
    EXPECT_VIEW(exv, 4, A(5, 2, 2, 3), A(0, 12, 6, 1), 0);
    st_tensor_decref(exv);
    st_tensor_decref(ex);
    st_tensor_decref(sv2);
    st_tensor_decref(sv);
    st_tensor_decref(sl);
    st_tensor_decref(y);

    /* zero-element reshape */
    st_tensor *z = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 2, A(0, 4));
    st_tensor *zr = st_tensor_reshape(z, 3, A(2, 0, 2), true);
    EXPECT_VIEW(zr, 3, A(2, 0, 2), A(2, 2, 1), 0);
    EXPECT_ERR(st_tensor_reshape(z, 2, A(-1, 0), false), ST_ERR_RUNTIME, "ambiguous", "[-1, 0]");
    st_tensor_decref(zr);
    st_tensor_decref(z);

    st_tensor_decref(v);
    st_tensor_decref(tx);
    st_tensor_decref(r2);
    st_tensor_decref(r);
    st_tensor_decref(x);
}

static void test_expand(void)
{
    st_tensor *x = arange(2, A(3, 1));
    st_tensor *e = st_tensor_expand(x, 3, A(2, 3, 4));
    EXPECT_VIEW(e, 3, A(2, 3, 4), A(0, 1, 0), 0);
    CHECK(e && at(e, A(1, 2, 3)) == 2.0f, "expand value");
    st_tensor *e2 = st_tensor_expand(x, 2, A(-1, 5));
    EXPECT_VIEW(e2, 2, A(3, 5), A(1, 0), 0);
    st_tensor *e3 = st_tensor_expand(x, 3, A(1, 3, 1));
    EXPECT_VIEW(e3, 3, A(1, 3, 1), A(3, 1, 1), 0);
    st_tensor *e4 = st_tensor_expand(x, 2, A(3, 0));
    EXPECT_VIEW(e4, 2, A(3, 0), A(1, 0), 0);
    st_tensor *s = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 0, NULL);
    st_tensor *e5 = st_tensor_expand(s, 2, A(2, 3));
    EXPECT_VIEW(e5, 2, A(2, 3), A(0, 0), 0);
    EXPECT_ERR(st_tensor_expand(x, 2, A(3, -2)), ST_ERR_RUNTIME, "[3, 1]", NULL);
    st_tensor_decref(e5);
    st_tensor_decref(s);
    st_tensor_decref(e4);
    st_tensor_decref(e3);
    st_tensor_decref(e2);
    st_tensor_decref(e);
    st_tensor_decref(x);
}

static void test_slice_select(void)
{
    st_tensor *x = arange(1, A(10));
    st_tensor *s = st_tensor_slice(x, 0, 2, 8, 3);
    EXPECT_VIEW(s, 1, A(2), A(3), 2);
    CHECK(s && at(s, A(1)) == 5.0f, "slice value");
    st_tensor *s2 = st_tensor_slice(x, -1, -3, INT64_MAX, 1);
    EXPECT_VIEW(s2, 1, A(3), A(1), 7);
    st_tensor *s3 = st_tensor_slice(x, 0, 12, 20, 1);
    EXPECT_VIEW(s3, 1, A(0), A(1), 10);
    st_tensor *s4 = st_tensor_slice(x, 0, -100, -8, 1);
    EXPECT_VIEW(s4, 1, A(2), A(1), 0);
    st_tensor *s5 = st_tensor_slice(x, 0, 6, 3, 1);
    EXPECT_VIEW(s5, 1, A(0), A(1), 6);
    st_tensor *s6 = s ? st_tensor_slice(s, 0, 1, 2, 1) : NULL;
    EXPECT_VIEW(s6, 1, A(1), A(3), 5);

    st_tensor *m = arange(2, A(3, 4));
    st_tensor *r = st_tensor_select(m, 1, -1);
    EXPECT_VIEW(r, 1, A(3), A(4), 3);
    CHECK(r && at(r, A(2)) == 11.0f, "select value");
    st_tensor *r2 = st_tensor_select(m, 0, 2);
    EXPECT_VIEW(r2, 1, A(4), A(1), 8);
    st_tensor *r3 = r2 ? st_tensor_select(r2, 0, 1) : NULL;
    EXPECT_VIEW(r3, 0, A(0), A(0), 9);
    CHECK(r3 && *(float *)st_tensor_data(r3) == 9.0f, "0-dim select value");
    st_tensor *ms = st_tensor_slice(m, 1, 1, 4, 2);
    EXPECT_VIEW(ms, 2, A(3, 2), A(4, 2), 1);
    CHECK(ms && at(ms, A(2, 1)) == 11.0f, "2-D slice value");
    st_tensor_decref(ms);
    st_tensor_decref(r3);
    st_tensor_decref(r2);
    st_tensor_decref(r);
    st_tensor_decref(m);
    st_tensor_decref(s6);
    st_tensor_decref(s5);
    st_tensor_decref(s4);
    st_tensor_decref(s3);
    st_tensor_decref(s2);
    st_tensor_decref(s);
    st_tensor_decref(x);
}

static void test_squeeze_unsqueeze(void)
{
    st_tensor *x = arange(4, A(1, 3, 1, 4));
    st_tensor *a = st_tensor_squeeze(x, ST_SQUEEZE_ALL);
    EXPECT_VIEW(a, 2, A(3, 4), A(4, 1), 0);
    st_tensor *b = st_tensor_squeeze(x, 2);
    EXPECT_VIEW(b, 3, A(1, 3, 4), A(12, 4, 1), 0);
    st_tensor *c = st_tensor_squeeze(x, 1);
    EXPECT_VIEW(c, 4, A(1, 3, 1, 4), A(12, 4, 4, 1), 0);
    st_tensor *d = st_tensor_squeeze(x, -4);
    EXPECT_VIEW(d, 3, A(3, 1, 4), A(4, 4, 1), 0);

    st_tensor *m = arange(2, A(3, 4));
    st_tensor *u0 = st_tensor_unsqueeze(m, 0);
    EXPECT_VIEW(u0, 3, A(1, 3, 4), A(12, 4, 1), 0);
    st_tensor *u1 = st_tensor_unsqueeze(m, 1);
    EXPECT_VIEW(u1, 3, A(3, 1, 4), A(4, 4, 1), 0);
    st_tensor *u2 = st_tensor_unsqueeze(m, -1);
    EXPECT_VIEW(u2, 3, A(3, 4, 1), A(4, 1, 1), 0);
    st_tensor *u3 = st_tensor_unsqueeze(m, -3);
    EXPECT_VIEW(u3, 3, A(1, 3, 4), A(12, 4, 1), 0);
    st_tensor *z = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 0, NULL);
    st_tensor *zu = st_tensor_unsqueeze(z, -1);
    EXPECT_VIEW(zu, 1, A(1), A(1), 0);
    st_tensor *zs = st_tensor_squeeze(z, 0);
    EXPECT_VIEW(zs, 0, A(0), A(0), 0);
    st_tensor *list[] = {a, b, c, d, m, u0, u1, u2, u3, z, zu, zs, x};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++)
        st_tensor_decref(list[i]);
}

static void test_apply_view(void)
{
    st_tensor *x = arange(3, A(2, 3, 4));
    st_attrs at_;
    memset(&at_, 0, sizeof at_);
    at_.ndims = 2;
    at_.dims[0] = 4;
    at_.dims[1] = -1;
    st_tensor *r = st_tensor_apply_view(x, ST_OP_RESHAPE, &at_);
    EXPECT_VIEW(r, 2, A(4, 6), A(6, 1), 0);

    memset(&at_, 0, sizeof at_);
    at_.ndims = 3;
    at_.dims[0] = 1;
    at_.dims[1] = 2;
    at_.dims[2] = 0;
    st_tensor *p = st_tensor_apply_view(x, ST_OP_PERMUTE, &at_);
    EXPECT_VIEW(p, 3, A(3, 4, 2), A(4, 1, 12), 0);

    memset(&at_, 0, sizeof at_);
    at_.i[0] = 2;
    at_.i[1] = 1;
    at_.i[2] = 3;
    at_.i[3] = 1;
    st_tensor *s = st_tensor_apply_view(x, ST_OP_SLICE, &at_);
    EXPECT_VIEW(s, 3, A(2, 3, 2), A(12, 4, 1), 1);

    memset(&at_, 0, sizeof at_);
    at_.i[0] = 1;
    st_tensor *u = st_tensor_apply_view(x, ST_OP_UNSQUEEZE, &at_);
    EXPECT_VIEW(u, 4, A(2, 1, 3, 4), A(12, 12, 4, 1), 0);

    memset(&at_, 0, sizeof at_);
    at_.ndims = 4;
    at_.dims[0] = 2;
    at_.dims[1] = -1;
    at_.dims[2] = 3;
    at_.dims[3] = 4;
    st_tensor *e = u ? st_tensor_apply_view(u, ST_OP_EXPAND, &at_) : NULL;
    EXPECT_VIEW(e, 4, A(2, 1, 3, 4), A(12, 12, 4, 1), 0);
    at_.dims[1] = 5;
    st_tensor *e2 = u ? st_tensor_apply_view(u, ST_OP_EXPAND, &at_) : NULL;
    EXPECT_VIEW(e2, 4, A(2, 5, 3, 4), A(12, 0, 4, 1), 0);

    st_tensor *y = arange(4, A(1, 3, 1, 1));
    memset(&at_, 0, sizeof at_);
    st_tensor *q = st_tensor_apply_view(y, ST_OP_SQUEEZE, &at_);
    EXPECT_VIEW(q, 1, A(3), A(1), 0);
    at_.ndims = 3;
    at_.dims[0] = 0;
    at_.dims[1] = -1;
    at_.dims[2] = 1; /* size 3: kept */
    st_tensor *q2 = st_tensor_apply_view(y, ST_OP_SQUEEZE, &at_);
    EXPECT_VIEW(q2, 2, A(3, 1), A(1, 1), 0);
    at_.dims[2] = 3; /* the same dim as -1 */
    EXPECT_ERR(st_tensor_apply_view(y, ST_OP_SQUEEZE, &at_), ST_ERR_RUNTIME, "multiple",
               "[1, 3, 1, 1]");
    at_.dims[2] = 4;
    EXPECT_ERR(st_tensor_apply_view(y, ST_OP_SQUEEZE, &at_), ST_ERR_INDEX, "[1, 3, 1, 1]", NULL);

    memset(&at_, 0, sizeof at_);
    at_.ndims = 2;
    EXPECT_ERR(st_tensor_apply_view(x, ST_OP_PERMUTE, &at_), ST_ERR_RUNTIME, "[2, 3, 4]", NULL);
    EXPECT_ERR(st_tensor_apply_view(x, ST_OP_ADD, &at_), ST_ERR_RUNTIME, "not a view op",
               "[2, 3, 4]");
    st_tensor *list[] = {r, p, s, u, e, e2, y, q, q2, x};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++)
        st_tensor_decref(list[i]);
}

/* ---------------- reference counting ---------------- */
static int ext_freed = 0;
static void ext_free_fn(void *ctx)
{
    ext_freed++;
    free(ctx);
}

static void test_refcount(void)
{
    st_alloc_stats s0 = cpu_stats();
    st_tensor *x = arange(2, A(256, 256)); /* 256 KiB */
    st_alloc_stats s1 = cpu_stats();
    CHECK(s1.active_blocks == s0.active_blocks + 1, "one block for the tensor");
    CHECK(s1.allocated_bytes - s0.allocated_bytes == 256 * 1024, "allocated %" PRId64,
          s1.allocated_bytes - s0.allocated_bytes);
    CHECK(s1.requested_bytes - s0.requested_bytes == 256 * 1024, "requested");
    st_tensor *t = st_tensor_transpose(x, 0, 1);
    st_tensor *s = st_tensor_slice(t, 0, 10, 20, 2);
    st_tensor *v = st_tensor_reshape(x, 1, A(-1), true);
    CHECK(x->storage->refcount == 4, "storage refcount %" PRId64, x->storage->refcount);
    st_tensor_decref(x); /* the base dies first */
    CHECK(cpu_stats().active_blocks == s1.active_blocks, "storage freed while views live");
    CHECK(at(s, A(1, 3)) == (float)(3 * 256 + 12), "view still reads the data");
    st_tensor_decref(t);
    st_tensor_decref(v);
    CHECK(cpu_stats().active_blocks == s1.active_blocks, "storage freed while a view lives");
    st_tensor_incref(s);
    st_tensor_decref(s);
    CHECK(cpu_stats().active_blocks == s1.active_blocks, "incref/decref pair freed");
    st_tensor_decref(s); /* the last view */
    st_alloc_stats s2 = cpu_stats();
    CHECK(s2.active_blocks == s0.active_blocks && s2.allocated_bytes == s0.allocated_bytes,
          "storage not freed with its last view: %" PRId64 " blocks (was %" PRId64 ")",
          s2.active_blocks, s0.active_blocks);
    CHECK(s2.cache_hits >= s1.cache_hits, "hits");

    /* the gradient dies with its tensor */
    st_tensor *p = arange(1, A(1000));
    p->grad = arange(1, A(1000));
    p->requires_grad = true;
    CHECK(cpu_stats().active_blocks == s0.active_blocks + 2, "param and grad");
    st_tensor_decref(p);
    CHECK(cpu_stats().active_blocks == s0.active_blocks, "grad not released");

    /* external storage: ext_free called once, on the last release */
    void *mem = malloc(64 * sizeof(float));
    st_storage *es = st_storage_external(st_rt_cpu(), mem, 64 * sizeof(float), ext_free_fn, mem);
    CHECK_FATAL(es, "external: %s", st_err_msg());
    CHECK(es->refcount == 1 && es->block == NULL && es->data == mem, "external storage");
    st_storage_incref(es);
    st_storage_decref(es);
    CHECK(ext_freed == 0, "ext_free too early");
    st_storage_decref(es);
    CHECK(ext_freed == 1, "ext_free called %d times", ext_freed);

    /* storage_new goes through the device's allocator */
    st_storage *ns = st_storage_new(st_rt_cpu(), 1000);
    CHECK_FATAL(ns, "storage_new: %s", st_err_msg());
    CHECK(ns->block && ns->data == ns->block->ptr && ns->nbytes == 1000 && ns->refcount == 1,
          "storage_new fields");
    CHECK(cpu_stats().active_blocks == s0.active_blocks + 1, "storage block");
    st_storage_decref(ns);
    CHECK(cpu_stats().active_blocks == s0.active_blocks, "storage block released");
    CHECK(st_alloc_check(st_alloc_for(st_rt_cpu())) == ST_OK, "allocator check: %s",
          st_err_msg());
}

/* ---------------- errors ---------------- */
static void test_errors(void)
{
    st_tensor *m = arange(2, A(3, 4));
    EXPECT_ERR(st_tensor_select(m, 0, 5), ST_ERR_INDEX,
               "select(): index 5 out of range for tensor of size [3, 4] at dimension 0", NULL);
    EXPECT_ERR(st_tensor_select(m, 1, -5), ST_ERR_INDEX, "index -5", "[3, 4]");
    EXPECT_ERR(st_tensor_select(m, 2, 0), ST_ERR_INDEX, "Dimension out of range", "[3, 4]");
    EXPECT_ERR(st_tensor_permute(m, A(0, 0)), ST_ERR_RUNTIME, "duplicate", "[3, 4]");
    EXPECT_ERR(st_tensor_permute(m, A(0, 2)), ST_ERR_INDEX, "[-2, 1]", "[3, 4]");
    EXPECT_ERR(st_tensor_transpose(m, 0, -3), ST_ERR_INDEX, "got -3", "[3, 4]");
    EXPECT_ERR(st_tensor_reshape(m, 2, A(2, 5), false), ST_ERR_RUNTIME,
               "shape '[2, 5]' is invalid for input of size 12", NULL);
    EXPECT_ERR(st_tensor_reshape(m, 2, A(5, -1), false), ST_ERR_RUNTIME,
               "shape '[5, -1]' is invalid for input of size 12", NULL);
    EXPECT_ERR(st_tensor_reshape(m, 2, A(-1, -1), false), ST_ERR_RUNTIME, "only one dimension",
               "[3, 4]");
    EXPECT_ERR(st_tensor_reshape(m, 2, A(-2, 6), false), ST_ERR_RUNTIME, "invalid shape dimension",
               "[3, 4]");
    EXPECT_ERR(st_tensor_reshape(m, 9, A(1, 1, 1, 1, 1, 1, 1, 3, 4), false), ST_ERR_RUNTIME,
               "[3, 4]", NULL);
    st_tensor *mt = st_tensor_transpose(m, 0, 1);
    EXPECT_ERR(st_tensor_reshape(mt, 1, A(12), true), ST_ERR_RUNTIME,
               "Use .reshape(...) instead.", "[4, 3]");
    EXPECT_ERR(st_tensor_expand(m, 2, A(3, 5)), ST_ERR_RUNTIME,
               "The expanded size of the tensor (5) must match the existing size (4) at "
               "non-singleton dimension 1", "[3, 4]");
    EXPECT_ERR(st_tensor_expand(m, 1, A(4)), ST_ERR_RUNTIME, "number of sizes provided (1)",
               "[3, 4]");
    EXPECT_ERR(st_tensor_expand(m, 3, A(-1, 3, 4)), ST_ERR_RUNTIME, "leading, non-existing",
               "[3, 4]");
    EXPECT_ERR(st_tensor_slice(m, 0, 0, 2, 0), ST_ERR_VALUE, "step must be greater than zero",
               "[3, 4]");
    EXPECT_ERR(st_tensor_slice(m, 0, 0, 2, -1), ST_ERR_VALUE, "step must be greater than zero",
               NULL);
    EXPECT_ERR(st_tensor_slice(m, 2, 0, 2, 1), ST_ERR_INDEX, "Dimension out of range", "[3, 4]");
    EXPECT_ERR(st_tensor_squeeze(m, 2), ST_ERR_INDEX, "[-2, 1]", "[3, 4]");
    EXPECT_ERR(st_tensor_unsqueeze(m, 3), ST_ERR_INDEX, "[-3, 2]", "[3, 4]");
    EXPECT_ERR(st_tensor_unsqueeze(m, -4), ST_ERR_INDEX, "got -4", "[3, 4]");
    st_tensor *z = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 0, NULL);
    EXPECT_ERR(st_tensor_select(z, 0, 0), ST_ERR_INDEX, "0-dim", NULL);
    EXPECT_ERR(st_tensor_slice(z, 0, 0, 1, 1), ST_ERR_INDEX, "0-dim", NULL);
    st_tensor *big = arange(8, A(1, 1, 1, 1, 1, 1, 1, 2));
    EXPECT_ERR(st_tensor_unsqueeze(big, 0), ST_ERR_RUNTIME, "[1, 1, 1, 1, 1, 1, 1, 2]", NULL);
    EXPECT_ERR(st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 2, A(2, -1)), ST_ERR_RUNTIME,
               "negative dimension -1", "[2, -1]");
    EXPECT_ERR(st_tensor_empty(st_rt_cpu(), (st_dtype)99, 1, A(2)), ST_ERR_TYPE, "dtype", NULL);
    EXPECT_ERR(st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 9, A(1, 1, 1, 1, 1, 1, 1, 1, 1)),
               ST_ERR_RUNTIME, "dimensions", NULL);
    EXPECT_ERR(st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 2, A(INT64_MAX / 2, 4)), ST_ERR_MEMORY,
               "too large", NULL);
    EXPECT_ERR(st_tensor_view_of(m, 2, A(4, 4), A(4, 1), 0), ST_ERR_RUNTIME, "out of bounds",
               "[4, 4]");
    EXPECT_ERR(st_tensor_view_of(m, 1, A(1), A(1), -1), ST_ERR_RUNTIME, "out of bounds", NULL);
    st_err_clear();
    CHECK(st_rt_device(ST_DEV_CUDA, 0) == NULL && st_err_kind() == ST_ERR_RUNTIME &&
              strstr(st_err_msg(), "CUDA is not available"), "cuda device: %s", st_err_msg());
    st_err_clear();
    st_tensor_decref(big);
    st_tensor_decref(z);
    st_tensor_decref(mt);
    st_tensor_decref(m);
}

int main(void)
{
    st_alloc_stats s0 = cpu_stats();
    RUN_TEST(test_empty());
    RUN_TEST(test_permute_transpose());
    RUN_TEST(test_reshape());
    RUN_TEST(test_expand());
    RUN_TEST(test_slice_select());
    RUN_TEST(test_squeeze_unsqueeze());
    RUN_TEST(test_apply_view());
    RUN_TEST(test_refcount());
    RUN_TEST(test_errors());
    st_alloc_stats s1 = cpu_stats();
    CHECK(s1.active_blocks == s0.active_blocks && s1.allocated_bytes == s0.allocated_bytes,
          "leaked %" PRId64 " blocks (%" PRId64 " bytes) over the whole test",
          s1.active_blocks - s0.active_blocks, s1.allocated_bytes - s0.allocated_bytes);
    CHECK(st_alloc_check(st_alloc_for(st_rt_cpu())) == ST_OK, "allocator: %s", st_err_msg());
    return st_test_exit_code("test_tensor");
}
