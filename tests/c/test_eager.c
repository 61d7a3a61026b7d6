/* test_eager.c - eager ops end to end from C: one-node graphs lowered by
 * fusion/, run by the interp backend through the executor, with the kernel
 * cache keyed on (op, attrs, dtypes, rank, layout) and not on sizes. */
#include "st_runtime.h"
#include "st_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static st_tensor *filled(int ndim, const int64_t *shape, float base) {
    st_tensor *t = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, ndim, shape);
    float *p = st_tensor_data(t);
    for (int64_t i = 0; i < st_tensor_numel(t); i++) p[i] = base + (float)i;
    return t;
}

static st_tensor *run1(st_op_id op, st_operand *in, int nin, st_attrs *a) {
    st_tensor *out[ST_MAX_OUT] = {NULL};
    int n = st_rt_eager(op, in, nin, a, NULL, out);
    return n == 1 ? out[0] : NULL;
}

static void test_add_and_cache(void) {
    st_rt_kcache_clear();
    int64_t s23[] = {2, 3}, s3[] = {3};
    st_tensor *a = filled(2, s23, 0), *b = filled(1, s3, 10);
    st_operand in[2] = {{.t = a}, {.t = b}};
    st_tensor *c = run1(ST_OP_ADD, in, 2, NULL);
    CHECK(c && c->ndim == 2 && c->shape[0] == 2 && c->shape[1] == 3, "add shape");
    if (c) {
        float *p = st_tensor_data(c);
        for (int i = 0; i < 6; i++)
            CHECK(p[i] == (float)i + 10 + (float)(i % 3), "add value %d: %g", i, p[i]);
        st_tensor_decref(c);
    }
    st_kcache_stats s0;
    st_rt_kcache_stats(&s0);
    /* other sizes, same ranks/dtypes/layout: no new compilation */
    int64_t s45[] = {4, 5}, s5[] = {5};
    st_tensor *a2 = filled(2, s45, 1), *b2 = filled(1, s5, 2);
    st_operand in2[2] = {{.t = a2}, {.t = b2}};
    c = run1(ST_OP_ADD, in2, 2, NULL);
    CHECK(c && c->shape[0] == 4 && c->shape[1] == 5, "add resized");
    if (c) {
        float *p = st_tensor_data(c);
        CHECK(p[19] == 20.0f + 6.0f, "add resized value %g", p[19]);
        st_tensor_decref(c);
    }
    st_kcache_stats s1;
    st_rt_kcache_stats(&s1);
    CHECK(s1.compiles == s0.compiles && s1.hits == s0.hits + 1,
          "a new size reuses the kernel (compiles %lld -> %lld)",
          (long long)s0.compiles, (long long)s1.compiles);
    /* a Python scalar: the value is a kernel parameter, not a cache key */
    st_operand sc[2] = {{.t = a}, {.sdtype = ST_FLOAT64, .f = 0.5}};
    c = run1(ST_OP_MUL, sc, 2, NULL);
    st_tensor_decref(c);
    st_rt_kcache_stats(&s0);
    sc[1].f = 3.0;
    c = run1(ST_OP_MUL, sc, 2, NULL);
    st_rt_kcache_stats(&s1);
    CHECK(c && ((float *)st_tensor_data(c))[5] == 15.0f, "scalar param value");
    CHECK(c && c->dtype == ST_FLOAT32, "float32 * python float stays float32");
    CHECK(s1.compiles == s0.compiles, "scalar value change does not recompile");
    st_tensor_decref(c);
    st_tensor_decref(a);
    st_tensor_decref(b);
    st_tensor_decref(a2);
    st_tensor_decref(b2);
}

static void test_softmax_strided(void) {
    int64_t s[] = {3, 4};
    st_tensor *a = filled(2, s, -2);
    st_tensor *at = st_tensor_transpose(a, 0, 1); /* [4, 3], strided */
    st_operand in = {.t = at};
    st_attrs attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.i[0] = 1;
    st_tensor *y = run1(ST_OP_SOFTMAX, &in, 1, &attrs);
    CHECK(y && y->shape[0] == 4 && y->shape[1] == 3, "softmax shape");
    if (y) {
        const float *src = st_tensor_data(a), *p = st_tensor_data(y);
        for (int r = 0; r < 4; r++) {
            double mx = -1e30, sum = 0, row[3];
            for (int c = 0; c < 3; c++) row[c] = src[c * 4 + r], mx = fmax(mx, row[c]);
            for (int c = 0; c < 3; c++) sum += exp(row[c] - mx);
            for (int c = 0; c < 3; c++) {
                double ref = exp(row[c] - mx) / sum;
                CHECK(fabs(p[r * 3 + c] - ref) < 1e-6, "softmax[%d,%d] %g vs %g", r,
                      c, p[r * 3 + c], ref);
            }
        }
        st_tensor_decref(y);
    }
    st_tensor_decref(at);
    st_tensor_decref(a);
}

static void test_inplace_and_errors(void) {
    int64_t s[] = {2, 2}, s3[] = {3};
    st_tensor *a = filled(2, s, 1), *b = filled(1, s3, 0);
    st_operand in[2] = {{.t = a}, {.sdtype = ST_INT64, .i = 2, .f = 2}};
    st_tensor *given[ST_MAX_OUT] = {a};
    st_tensor *out[ST_MAX_OUT];
    int n = st_rt_eager(ST_OP_ADD, in, 2, NULL, given, out);
    CHECK(n == 1 && out[0] == a, "in-place result is the given tensor");
    CHECK(((float *)st_tensor_data(a))[3] == 6.0f, "in-place value");
    if (n == 1) st_tensor_decref(out[0]);
    /* shape mismatch: a Python-catchable error, never a crash */
    st_operand bad[2] = {{.t = a}, {.t = b}};
    st_err_clear();
    n = st_rt_eager(ST_OP_ADD, bad, 2, NULL, NULL, out);
    CHECK(n < 0 && st_err_kind() != ST_OK && strstr(st_err_msg(), "[2, 2]"),
          "broadcast error names the shapes: '%s'", st_err_msg());
    /* float result into an int tensor is refused (torch's canCast) */
    st_tensor *ia = st_tensor_empty(st_rt_cpu(), ST_INT64, 1, s3);
    st_operand fi[2] = {{.t = ia}, {.sdtype = ST_FLOAT64, .f = 0.5}};
    st_tensor *g2[ST_MAX_OUT] = {ia};
    st_err_clear();
    n = st_rt_eager(ST_OP_MUL, fi, 2, NULL, g2, out);
    CHECK(n < 0 && strstr(st_err_msg(), "can't be cast"), "canCast error");
    st_tensor_decref(ia);
    st_tensor_decref(a);
    st_tensor_decref(b);
}

static void test_memory_returns(void) {
    st_alloc_stats s0, s1;
    st_allocator *al = st_alloc_for(st_rt_cpu());
    int64_t s[] = {64, 64};
    st_tensor *a = filled(2, s, 0);
    st_alloc_stats_get(al, &s0);
    for (int it = 0; it < 10; it++) {
        st_operand in = {.t = a};
        st_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.i[0] = -1;
        st_tensor *y = run1(ST_OP_LOG_SOFTMAX, &in, 1, &attrs);
        CHECK(y != NULL, "log_softmax");
        st_tensor_decref(y);
    }
    st_alloc_stats_get(al, &s1);
    CHECK(s1.allocated_bytes == s0.allocated_bytes,
          "intermediates are released (%lld -> %lld bytes)",
          (long long)s0.allocated_bytes, (long long)s1.allocated_bytes);
    st_tensor_decref(a);
}

int main(void) {
    RUN_TEST(test_add_and_cache());
    RUN_TEST(test_softmax_strided());
    RUN_TEST(test_inplace_and_errors());
    RUN_TEST(test_memory_returns());
    return st_test_exit_code("test_eager");
}
