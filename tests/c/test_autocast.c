/* test_autocast.c - runtime/autocast.c from C (so that ASan and UBSan see
 * it): the state word and its swap, the policy tables, a listed op run on
 * cast operands through st_rt_eager (values, dtypes, every intermediate
 * released), what is left alone (float64, ints, given results), the
 * tape's backward running with autocast off, and bad calls. */
#include "st_runtime.h"
#include "st_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static st_tensor *filled(st_dtype dt, int64_t r, int64_t c, float base, float step) {
    int64_t s[2] = {r, c};
    st_tensor *t = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 2, s);
    float *p = st_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++) p[i] = base + step * (float)i;
    if (dt == ST_FLOAT32) return t;
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    st_operand in = {.t = t};
    st_tensor *o = NULL;
    int n = st_rt_eager(ST_OP_CAST, &in, 1, &a, NULL, &o);
    st_tensor_decref(t);
    return n == 1 ? o : NULL;
}

static st_tensor *run2(st_op_id op, st_tensor *a, st_tensor *b) {
    st_operand in[2] = {{.t = a}, {.t = b}};
    st_tensor *o = NULL;
    return st_rt_eager(op, in, 2, NULL, NULL, &o) == 1 ? o : NULL;
}

static double value(const st_tensor *t, int64_t i) {
    if (t->dtype == ST_BFLOAT16) return st_bf16_to_float(((const uint16_t *)st_tensor_data((st_tensor *)t))[i]);
    if (t->dtype == ST_FLOAT64) return ((const double *)st_tensor_data((st_tensor *)t))[i];
    return ((const float *)st_tensor_data((st_tensor *)t))[i];
}

static void test_state(void) {
    st_dtype d;
    CHECK(st_rt_autocast_state() == 0 && !st_rt_autocast_enabled(ST_DEV_CPU, &d) &&
              d == ST_BFLOAT16, "off at start, CPU default bfloat16");
    CHECK(!st_rt_autocast_enabled(ST_DEV_CUDA, &d) && d == ST_FLOAT16, "CUDA default float16");
    CHECK(st_rt_autocast_set(ST_DEV_CPU, true, ST_BFLOAT16) == ST_OK, "set");
    uint32_t on = st_rt_autocast_state();
    CHECK(on != 0 && st_rt_autocast_enabled(ST_DEV_CPU, &d) && d == ST_BFLOAT16, "on");
    CHECK(!st_rt_autocast_enabled(ST_DEV_CUDA, NULL), "the other device type stays off");
    uint32_t prev = st_rt_autocast_swap(0);
    CHECK(prev == on && !st_rt_autocast_enabled(ST_DEV_CPU, NULL), "swap off");
    st_rt_autocast_swap(prev);
    CHECK(st_rt_autocast_state() == on, "swap back");
    /* disabled again: the word is 0 (graphs traced before and after share
     * their guard), the dtype is kept for the getter */
    CHECK(st_rt_autocast_set(ST_DEV_CPU, false, ST_FLOAT16) == ST_OK, "set off");
    CHECK(st_rt_autocast_state() == 0 && !st_rt_autocast_enabled(ST_DEV_CPU, &d) &&
              d == ST_FLOAT16, "off: word 0, dtype kept");
    st_err_clear();
    CHECK(st_rt_autocast_set(ST_DEV_CPU, true, ST_FLOAT32) != ST_OK &&
              strstr(st_err_msg(), "float32"), "float32 is refused, by name");
    CHECK(st_rt_autocast_set((st_device_type)7, true, ST_BFLOAT16) != ST_OK,
          "an unknown device type is refused");
    CHECK(st_rt_autocast_state() == 0, "a refused set changes nothing");
    st_rt_autocast_set(ST_DEV_CPU, false, ST_BFLOAT16);
}

static void test_policy(void) {
    CHECK(!strcmp(st_rt_autocast_policy_name(ST_DEV_CPU, ST_OP_MATMUL), "lower") &&
              !strcmp(st_rt_autocast_policy_name(ST_DEV_CUDA, ST_OP_LINEAR), "lower"), "products");
    CHECK(!strcmp(st_rt_autocast_policy_name(ST_DEV_CUDA, ST_OP_LAYER_NORM), "fp32") &&
              !strcmp(st_rt_autocast_policy_name(ST_DEV_CPU, ST_OP_LAYER_NORM), "none"),
          "layer_norm: float32 on CUDA only, as PyTorch's lists");
    CHECK(!strcmp(st_rt_autocast_policy_name(ST_DEV_CPU, ST_OP_CROSS_ENTROPY), "fp32"), "ce");
    CHECK(!strcmp(st_rt_autocast_policy_name(ST_DEV_CUDA, ST_OP_SCATTER_ADD), "promote"), "promote");
    CHECK(!strcmp(st_rt_autocast_policy_name(ST_DEV_CPU, ST_OP_ADD), "none"), "add untouched");
}

static void test_apply(void) {
    st_allocator *al = st_alloc_for(st_rt_cpu());
    st_tensor *a = filled(ST_FLOAT32, 4, 3, 0.25f, 0.5f), *b = filled(ST_FLOAT32, 3, 5, -1.0f, 0.125f);
    st_tensor *want = run2(ST_OP_MATMUL, a, b);       /* float32, autocast off */
    st_alloc_stats s0, s1;
    st_alloc_stats_get(al, &s0);
    st_rt_autocast_set(ST_DEV_CPU, true, ST_BFLOAT16);
    st_tensor *p = run2(ST_OP_MATMUL, a, b);
    CHECK(p && p->dtype == ST_BFLOAT16 && p->shape[0] == 4 && p->shape[1] == 5, "bfloat16 product");
    for (int i = 0; p && want && i < 20; i++)
        CHECK(fabs(value(p, i) - value(want, i)) <= 0.02 * fabs(value(want, i)) + 0.02,
              "product %d: %g vs %g", i, value(p, i), value(want, i));
    st_tensor_decref(p);
    /* an add of the float32 operands is not listed: float32 */
    st_tensor *s = run2(ST_OP_ADD, a, a);
    CHECK(s && s->dtype == ST_FLOAT32, "add stays float32");
    st_tensor_decref(s);
    st_alloc_stats_get(al, &s1);
    CHECK(s1.allocated_bytes == s0.allocated_bytes, "the casts are released (%lld -> %lld bytes)",
          (long long)s0.allocated_bytes, (long long)s1.allocated_bytes);
    /* float64 is never cast: a float64 product stays float64 */
    st_tensor *a64 = filled(ST_FLOAT64, 4, 3, 0.25f, 0.5f), *b64 = filled(ST_FLOAT64, 3, 5, 1, 1);
    p = run2(ST_OP_MATMUL, a64, b64);
    CHECK(p && p->dtype == ST_FLOAT64, "float64 product stays float64");
    st_tensor_decref(p);
    /* a given result: not cast (PyTorch's out= under autocast) */
    int64_t s45[2] = {4, 5};
    st_tensor *o = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 2, s45);
    st_tensor *given[ST_MAX_OUT] = {o}, *res[ST_MAX_OUT] = {NULL};
    st_operand in[2] = {{.t = a}, {.t = b}};
    int n = st_rt_eager(ST_OP_MATMUL, in, 2, NULL, given, res);
    CHECK(n == 1 && res[0] == o && fabs(value(o, 7) - value(want, 7)) < 1e-5,
          "out= runs in float32: %g vs %g", value(o, 7), value(want, 7));
    if (n == 1) st_tensor_decref(res[0]);
    /* a bad product reports the op's own error, nothing leaks */
    st_tensor *bad = filled(ST_FLOAT32, 4, 4, 0, 1);
    st_err_clear();
    CHECK(run2(ST_OP_MATMUL, a, bad) == NULL && strstr(st_err_msg(), "4x3"),
          "a bad product under autocast: '%s'", st_err_msg());
    st_rt_autocast_set(ST_DEV_CPU, false, ST_BFLOAT16);
    st_tensor_decref(bad);
    st_tensor_decref(o);
    st_tensor_decref(a64);
    st_tensor_decref(b64);
    st_tensor_decref(want);
    st_tensor_decref(a);
    st_tensor_decref(b);
}

/* the tape records the casts; backward runs with autocast off, so a
 * float32 gradient product stays float32, and the state comes back */
static void test_backward(void) {
    st_tensor *a = filled(ST_FLOAT32, 4, 3, 0.5f, 0.25f), *b = filled(ST_FLOAT32, 3, 2, -0.5f, 0.5f);
    a->requires_grad = b->requires_grad = true;
    st_rt_autocast_set(ST_DEV_CPU, true, ST_BFLOAT16);
    uint32_t on = st_rt_autocast_state();
    st_tensor *p = run2(ST_OP_MATMUL, a, b);
    st_attrs ca;
    memset(&ca, 0, sizeof ca);
    ca.dtype = ST_FLOAT32;
    st_operand pin = {.t = p};
    st_tensor *pf = NULL, *l = NULL;
    CHECK(p && st_rt_eager(ST_OP_CAST, &pin, 1, &ca, NULL, &pf) == 1, "cast up");
    st_operand sin_ = {.t = pf};
    st_attrs sa;
    memset(&sa, 0, sizeof sa);
    CHECK(pf && st_rt_eager(ST_OP_SUM, &sin_, 1, &sa, NULL, &l) == 1, "sum");
    CHECK(l && l->grad_fn, "recorded");
    CHECK(l && st_ad_backward(&l, NULL, 1, false) == ST_OK, "backward under autocast");
    CHECK(st_rt_autocast_state() == on, "the state is back after backward");
    CHECK(a->grad && a->grad->dtype == ST_FLOAT32 && b->grad && b->grad->dtype == ST_FLOAT32,
          "float32 gradients of float32 leaves");
    /* d sum(a @ b) / da = rows of b summed: b's bfloat16 values */
    for (int i = 0; a->grad && i < 12; i++) {
        int k = i % 3;
        double w = st_bf16_to_float(st_float_to_bf16(-0.5f + 0.5f * (float)(2 * k))) +
                   st_bf16_to_float(st_float_to_bf16(-0.5f + 0.5f * (float)(2 * k + 1)));
        CHECK(fabs(value(a->grad, i) - w) < 1e-2, "a.grad[%d] %g vs %g", i, value(a->grad, i), w);
    }
    st_rt_autocast_set(ST_DEV_CPU, false, ST_BFLOAT16);
    st_tensor_decref(l);
    st_tensor_decref(pf);
    st_tensor_decref(p);
    st_tensor_decref(a);
    st_tensor_decref(b);
}

int main(void) {
    RUN_TEST(test_state());
    RUN_TEST(test_policy());
    RUN_TEST(test_apply());
    RUN_TEST(test_backward());
    return st_test_exit_code("test_autocast");
}
