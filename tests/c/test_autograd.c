/* test_autograd.c - the tape and the backward engine from C: recording,
 * accumulation into leaves, broadcasting gradients, retain_graph and the
 * second-backward error, in-place checks, custom nodes, grad(), gradient
 * hooks and retain_grad, saved-tensor hooks (pack at record time, unpack
 * per backward, meta checks, release with the graph), and that nodes and
 * saved tensors are released. */
#include "st_runtime.h"
#include "st_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static st_tensor *vec(int n, const float *v, bool rg) {
    int64_t s[1] = {n};
    st_tensor *t = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 1, s);
    memcpy(st_tensor_data(t), v, sizeof(float) * (size_t)n);
    t->requires_grad = rg;
    return t;
}

static st_tensor *op2(st_op_id op, st_tensor *a, st_tensor *b) {
    st_operand in[2] = {{.t = a}, {.t = b}};
    st_tensor *o = NULL;
    return st_rt_eager(op, in, 2, NULL, NULL, &o) == 1 ? o : NULL;
}

static st_tensor *sum_all(st_tensor *a) {
    st_operand in = {.t = a};
    st_attrs at;
    memset(&at, 0, sizeof at);
    st_tensor *o = NULL;
    return st_rt_eager(ST_OP_SUM, &in, 1, &at, NULL, &o) == 1 ? o : NULL;
}

static float at(const st_tensor *t, int i) { return ((const float *)st_tensor_data(t))[i]; }

static void test_basic(void) {
    float av[3] = {1, 2, 3}, bv[3] = {4, 5, 6};
    st_tensor *a = vec(3, av, true), *b = vec(3, bv, true);
    st_tensor *ab = op2(ST_OP_MUL, a, b);
    st_tensor *y = op2(ST_OP_ADD, ab, a);
    st_tensor *l = sum_all(y);
    CHECK(l && l->grad_fn && l->requires_grad, "recorded");
    CHECK(l && !strcmp(st_ad_node_name(l->grad_fn), "SumBackward0"), "node name %s",
          l && l->grad_fn ? st_ad_node_name(l->grad_fn) : "-");
    CHECK(st_ad_backward(&l, NULL, 1, true) == ST_OK, "backward");
    for (int i = 0; i < 3 && a->grad && b->grad; i++) {
        CHECK(at(a->grad, i) == bv[i] + 1, "a.grad[%d] = %g", i, at(a->grad, i));
        CHECK(at(b->grad, i) == av[i], "b.grad[%d] = %g", i, at(b->grad, i));
    }
    /* retained: a second backward accumulates */
    CHECK(st_ad_backward(&l, NULL, 1, false) == ST_OK, "second backward (retained)");
    CHECK(a->grad && at(a->grad, 0) == 2 * (bv[0] + 1), "accumulated %g",
          a->grad ? at(a->grad, 0) : -1);
    /* freed now */
    st_err_clear();
    CHECK(st_ad_backward(&l, NULL, 1, false) != ST_OK &&
          strstr(st_err_msg(), "second time"), "third backward refused");
    st_tensor_decref(l);
    st_tensor_decref(y);
    st_tensor_decref(ab);
    st_tensor_decref(a);
    st_tensor_decref(b);
}

static void test_broadcast_and_grad(void) {
    float av[1] = {2}, bv[3] = {1, 2, 3};
    st_tensor *a = vec(1, av, true), *b = vec(3, bv, true);
    st_tensor *y = op2(ST_OP_MUL, a, b);
    st_tensor *l = sum_all(y);
    st_tensor *res[2] = {NULL, NULL};
    st_tensor *ins[2] = {a, b};
    CHECK(st_ad_grad(&l, NULL, 1, ins, 2, false, false, res) == ST_OK, "grad()");
    CHECK(res[0] && res[0]->ndim == 1 && res[0]->shape[0] == 1 && at(res[0], 0) == 6,
          "broadcast grad reduced to [1]: %g", res[0] ? at(res[0], 0) : -1);
    CHECK(res[1] && at(res[1], 2) == 2, "grad of b");
    CHECK(!a->grad && !b->grad, "grad() leaves .grad alone");
    st_tensor_decref(res[0]);
    st_tensor_decref(res[1]);
    st_tensor_decref(l);
    st_tensor_decref(y);
    st_tensor_decref(a);
    st_tensor_decref(b);
}

static void test_inplace_checks(void) {
    float av[2] = {1, 2};
    st_tensor *a = vec(2, av, true);
    st_operand in[2] = {{.t = a}, {.sdtype = ST_FLOAT64, .f = 1}};
    st_tensor *given[ST_MAX_OUT] = {a}, *out = NULL;
    st_err_clear();
    CHECK(st_rt_eager(ST_OP_ADD, in, 2, NULL, given, &out) < 0 &&
          strstr(st_err_msg(), "leaf Variable"), "in-place on a leaf refused");
    /* modifying a saved tensor is caught at backward */
    st_tensor *e = NULL;
    st_operand ea = {.t = a};
    st_rt_eager(ST_OP_EXP, &ea, 1, NULL, NULL, &e); /* saves its output */
    st_tensor *l = sum_all(e);
    st_ad_set_grad_enabled(false);
    st_operand ei[2] = {{.t = e}, {.sdtype = ST_FLOAT64, .f = 1}};
    st_tensor *ge[ST_MAX_OUT] = {e};
    CHECK(st_rt_eager(ST_OP_ADD, ei, 2, NULL, ge, &out) == 1, "no-grad in-place");
    st_tensor_decref(out);
    st_ad_set_grad_enabled(true);
    st_err_clear();
    CHECK(st_ad_backward(&l, NULL, 1, false) != ST_OK &&
          strstr(st_err_msg(), "modified by an inplace operation"),
          "saved tensor modified");
    st_tensor_decref(l);
    st_tensor_decref(e);
    st_tensor_decref(a);
}

static int custom_calls;
static st_status twice(void *ctx, int nout, st_tensor *const *gout, int nin,
                       st_tensor **gin) {
    custom_calls++;
    gin[0] = op2(ST_OP_ADD, gout[0], gout[0]);
    return gin[0] ? ST_OK : st_err_kind();
}

static void test_custom(void) {
    float av[2] = {1, 2};
    st_tensor *a = vec(2, av, true);
    st_tensor *y = NULL;
    st_operand ya = {.t = a};
    st_ad_set_grad_enabled(false);
    st_rt_eager(ST_OP_COPY, &ya, 1, NULL, NULL, &y);
    st_ad_set_grad_enabled(true);
    st_ad_node *n = st_ad_custom_node("TwiceBackward", twice, NULL, NULL, 1, &a, 1, &y);
    st_ad_node_decref(n);
    CHECK(y->grad_fn && y->requires_grad, "custom node attached");
    st_tensor *l = sum_all(y);
    CHECK(st_ad_backward(&l, NULL, 1, false) == ST_OK, "backward through custom");
    CHECK(custom_calls == 1 && a->grad && at(a->grad, 1) == 2, "custom grad");
    st_tensor_decref(l);
    st_tensor_decref(y);
    st_tensor_decref(a);
}

static void test_release(void) {
    st_ad_stats s0, s1;
    st_ad_stats_get(&s0);
    st_allocator *al = st_alloc_for(st_rt_cpu());
    st_alloc_stats m0, m1;
    float v[4] = {1, 2, 3, 4};
    st_tensor *w = vec(4, v, true);
    st_alloc_stats_get(al, &m0);
    for (int step = 0; step < 3; step++) {
        st_tensor *h = w;
        st_tensor_incref(h);
        for (int i = 0; i < 200; i++) { /* a long chain */
            st_operand in[2] = {{.t = h}, {.sdtype = ST_FLOAT64, .f = 1.001}};
            st_tensor *o = NULL;
            st_rt_eager(ST_OP_MUL, in, 2, NULL, NULL, &o);
            st_tensor_decref(h);
            h = o;
        }
        st_tensor *l = sum_all(h);
        st_tensor_decref(h);
        CHECK(st_ad_backward(&l, NULL, 1, false) == ST_OK, "chain backward");
        st_tensor_decref(l);
        st_tensor_decref(w->grad);
        w->grad = NULL;
    }
    st_ad_stats_get(&s1);
    st_alloc_stats_get(al, &m1);
    CHECK(s1.nodes_alive == s0.nodes_alive, "nodes released (%lld -> %lld)",
          (long long)s0.nodes_alive, (long long)s1.nodes_alive);
    CHECK(m1.allocated_bytes == m0.allocated_bytes, "memory back to start (%lld -> %lld)",
          (long long)m0.allocated_bytes, (long long)m1.allocated_bytes);
    st_tensor_decref(w);
}

/* Gradient hooks from C: a hooks object here is a struct the callback
 * reads; released ones are counted. */
typedef struct {
    float scale;     /* GRAD: the gradient times scale (1: keep it) */
    int grad_calls, post_calls, released;
    float seen0;     /* element 0 of the last gradient seen */
} hk;

static st_status hk_call(void *h, int when, st_tensor *t, st_tensor *g, st_tensor **out) {
    hk *k = h;
    if (when == ST_AD_HOOK_POST) {
        k->post_calls++;
        CHECK(t && t->grad, "post hook sees the accumulated grad");
        return ST_OK;
    }
    k->grad_calls++;
    k->seen0 = at(g, 0);
    if (k->scale != 1) {
        st_operand in[2] = {{.t = g}, {.sdtype = ST_FLOAT64, .f = k->scale}};
        if (st_rt_eager(ST_OP_MUL, in, 2, NULL, NULL, out) != 1) return st_err_kind();
    }
    return ST_OK;
}

static void hk_release(void *h) { ((hk *)h)->released++; }

static void test_hooks(void) {
    st_ad_set_hook_owner(hk_call, hk_release);
    float av[2] = {1, 2}, bv[2] = {3, 4};
    hk ha = {.scale = 10}, hy = {.scale = 2}, hz = {.scale = 1};
    st_tensor *a = vec(2, av, true), *b = vec(2, bv, false);
    CHECK(st_ad_set_hooks(b, &hz) != ST_OK && hz.released == 1,
          "a hook on a tensor without grad is refused and released");
    CHECK(st_ad_set_hooks(a, &ha) == ST_OK && st_ad_hooks(a) == &ha, "leaf hooks set");
    /* a used twice: its hook sees the summed gradient once */
    st_tensor *y = op2(ST_OP_MUL, a, b);             /* dy/da = b */
    st_tensor *z = op2(ST_OP_ADD, y, a);             /* dz/da = b + 1 */
    CHECK(st_ad_set_hooks(y, &hy) == ST_OK && st_ad_hooks(y) == &hy, "output slot hooks set");
    CHECK(st_ad_retain_grad(y) == ST_OK && y->retains_grad, "retain_grad");
    st_tensor *l = sum_all(z);
    CHECK(st_ad_backward(&l, NULL, 1, true) == ST_OK, "backward with hooks");
    /* y's grad 1 -> hooked to 2, retained as 2; a gets (2*b + 1) * 10 */
    CHECK(hy.grad_calls == 1 && hy.seen0 == 1, "y hook once (%d, %g)", hy.grad_calls, hy.seen0);
    CHECK(y->grad && at(y->grad, 0) == 2 && at(y->grad, 1) == 2, "retained after the hook");
    CHECK(ha.grad_calls == 1 && ha.seen0 == 2 * bv[0] + 1, "a hook once with the sum "
          "(%d, %g)", ha.grad_calls, ha.seen0);
    CHECK(ha.post_calls == 1, "post-accumulate call");
    CHECK(a->grad && at(a->grad, 1) == 10 * (2 * bv[1] + 1), "a.grad %g",
          a->grad ? at(a->grad, 1) : -1);
    /* grad(): hooks run on the asked-for leaf, retain accumulates, no post */
    st_tensor *r = NULL;
    CHECK(st_ad_grad(&l, NULL, 1, &a, 1, true, false, &r) == ST_OK && r &&
          at(r, 0) == 10 * (2 * bv[0] + 1), "grad() through hooks");
    CHECK(ha.grad_calls == 2 && ha.post_calls == 1 && y->grad && at(y->grad, 0) == 4,
          "grad(): hooks %d post %d", ha.grad_calls, ha.post_calls);
    st_tensor_decref(r);
    /* in-place: retain moves to the new history, the hook stays behind */
    st_operand in[2] = {{.t = y}, {.sdtype = ST_FLOAT64, .f = 3}};
    st_tensor *given[ST_MAX_OUT] = {y}, *out = NULL;
    CHECK(st_rt_eager(ST_OP_MUL, in, 2, NULL, given, &out) == 1, "in-place mul");
    st_tensor_decref(out);
    CHECK(y->retains_grad && st_ad_hooks(y) == NULL, "retain moved, hooks stayed");
    st_tensor_decref(y->grad);
    y->grad = NULL;
    st_tensor *l2 = sum_all(y);
    CHECK(st_ad_backward(&l2, NULL, 1, false) == ST_OK, "backward after in-place");
    CHECK(y->grad && at(y->grad, 0) == 1, "retained w.r.t. the new value");
    CHECK(hy.grad_calls == 3 && hy.seen0 == 3, "old hook sees the old value's grad (%d, %g)",
          hy.grad_calls, hy.seen0);
    /* the slots go with their owners */
    st_tensor_decref(l2);
    st_tensor_decref(l);
    st_tensor_decref(z);
    st_tensor_decref(y);
    CHECK(hy.released == 1, "node's hooks released (%d)", hy.released);
    st_tensor_decref(a);
    CHECK(ha.released == 1, "leaf's hooks released (%d)", ha.released);
    st_tensor_decref(b);
    /* a hook's error stops backward and leaves the engine clean */
    hk bad = {.scale = 1};
    st_tensor *c = vec(2, av, true);
    st_tensor *lc = sum_all(c);
    CHECK(st_ad_set_hooks(lc, &bad) == ST_OK, "hooks on the root");
    st_ad_set_hook_owner(NULL, hk_release);   /* no owner: hooks are not called */
    CHECK(st_ad_backward(&lc, NULL, 1, false) == ST_OK && bad.grad_calls == 0 && c->grad,
          "ownerless hooks ignored");
    st_tensor_decref(lc);
    st_tensor_decref(c);
    CHECK(bad.released == 1, "root node's hooks released");
    st_ad_set_hook_owner(NULL, NULL);
}

/* st_ad_visit_owned: what a tensor reaches through references of its own.
 * Visits are counted per object; ctx_free tells a custom node's context. */
typedef struct {
    int n;
    void *seen[8];
    void (*release[8])(void *);
} vis;

static int vis_add(void *obj, void (*release)(void *), void *arg) {
    vis *v = arg;
    if (v->n < 8) {
        v->seen[v->n] = obj;
        v->release[v->n] = release;
    }
    v->n++;
    return 0;
}

static int vis_stop(void *obj, void (*release)(void *), void *arg) {
    (void)obj, (void)release;
    ++*(int *)arg;
    return 7;
}

static void ctx_noop(void *c) { (void)c; }

static void test_visit_owned(void) {
    st_ad_set_hook_owner(hk_call, hk_release);
    float av[2] = {1, 2};
    hk ha = {.scale = 1}, hy = {.scale = 1};
    int ctx_obj = 0;
    st_tensor *a = vec(2, av, true);
    CHECK(st_ad_set_hooks(a, &ha) == ST_OK, "leaf hooks");
    vis v = {0};
    CHECK(st_ad_visit_owned(a, vis_add, &v) == 0 && v.n == 1 && v.seen[0] == &ha &&
          v.release[0] == hk_release, "a leaf visits its hooks (%d)", v.n);
    /* y = custom(a) * 2: y owns MulBackward, which alone owns the custom
     * node (its context) and the edge to a */
    st_tensor *c = NULL;
    st_operand ca = {.t = a};
    st_ad_set_grad_enabled(false);
    st_rt_eager(ST_OP_COPY, &ca, 1, NULL, NULL, &c);
    st_ad_set_grad_enabled(true);
    st_ad_node *n = st_ad_custom_node("CtxBackward", twice, &ctx_obj, ctx_noop, 1, &a, 1, &c);
    st_ad_node_decref(n);
    st_operand in[2] = {{.t = c}, {.sdtype = ST_FLOAT64, .f = 2}};
    st_tensor *y = NULL;
    CHECK(st_rt_eager(ST_OP_MUL, in, 2, NULL, NULL, &y) == 1, "mul");
    CHECK(st_ad_set_hooks(y, &hy) == ST_OK, "output slot hooks");
    memset(&v, 0, sizeof v);
    st_ad_visit_owned(y, vis_add, &v);
    CHECK(v.n == 1 && v.seen[0] == &hy, "c still holds the custom node: y reaches only "
          "its own slot (%d)", v.n);
    st_tensor_decref(c);     /* now MulBackward alone holds the custom node */
    memset(&v, 0, sizeof v);
    st_ad_visit_owned(y, vis_add, &v);
    CHECK(v.n == 2 && v.seen[0] == &hy && v.seen[1] == &ctx_obj && v.release[1] == ctx_noop,
          "y reaches the custom node's context through a node it alone holds (%d)", v.n);
    /* a's hooks: a is held by its own reference and the custom node's edge */
    st_tensor_decref(a);     /* now only the edge holds a */
    memset(&v, 0, sizeof v);
    st_ad_visit_owned(y, vis_add, &v);
    CHECK(v.n == 3 && v.seen[2] == &ha, "and the hooks of a leaf only the graph holds (%d)",
          v.n);
    int calls = 0;
    CHECK(st_ad_visit_owned(y, vis_stop, &calls) == 7 && calls == 1,
          "a non-zero visit stops the walk");
    /* a second holder of the grad_fn hides the whole tree */
    st_tensor *y2 = op2(ST_OP_ADD, y, y);
    memset(&v, 0, sizeof v);
    st_ad_visit_owned(y2, vis_add, &v);
    CHECK(v.n == 0, "y2's node edges to MulBackward, which y also holds (%d)", v.n);
    st_tensor_decref(y2);
    st_tensor_decref(y);
    CHECK(ha.released == 1 && hy.released == 1, "hooks released with the graph");
    st_ad_set_hook_owner(NULL, NULL);
}

/* ---------------- saved-tensor hooks ---------------- */
typedef struct {
    int pushed_released, packs, unpacks, packed_released;
    int bad_shape;            /* unpack returns a tensor of another shape */
    int fail_pack;            /* pack fails */
    int grad_on_in_pack;      /* grad mode seen inside pack (must be off) */
} sh_state;
static sh_state sh;

typedef struct {
    bool is_pair;
    st_tensor *copy;          /* packed: a copy of the saved tensor */
} sh_obj;

static st_status sh_pack(void *pair, st_tensor *t, void **packed) {
    CHECK(((sh_obj *)pair)->is_pair, "pack gets the top pair");
    if (sh.fail_pack) return st_err(ST_ERR_VALUE, "pack refused");
    sh.grad_on_in_pack += st_ad_grad_enabled();
    st_operand src = {.t = t};
    sh_obj *o = calloc(1, sizeof *o);
    if (!o || st_rt_eager(ST_OP_COPY, &src, 1, NULL, NULL, &o->copy) != 1) {
        free(o);
        return st_err(ST_ERR_MEMORY, "sh_pack");
    }
    sh.packs++;
    *packed = o;
    return ST_OK;
}

static st_status sh_unpack(void *packed, st_tensor **out) {
    sh_obj *o = packed;
    sh.unpacks++;
    if (sh.bad_shape) {
        int64_t s[1] = {7};
        *out = st_tensor_empty(st_rt_cpu(), ST_FLOAT32, 1, s);
        return ST_OK;
    }
    st_tensor_incref(o->copy);
    *out = o->copy;
    return ST_OK;
}

static void sh_release(void *obj) {
    sh_obj *o = obj;
    if (o->is_pair) {
        sh.pushed_released++;
    } else {
        sh.packed_released++;
        st_tensor_decref(o->copy);
    }
    free(o);
}

static st_status sh_push(void) {
    sh_obj *pair = calloc(1, sizeof *pair);
    pair->is_pair = true;
    return st_ad_saved_hooks_push(pair);
}

static void test_saved_hooks(void) {
    st_ad_stats s0, s1;
    st_ad_stats_get(&s0);
    st_ad_set_saved_hooks_owner(NULL);
    sh_obj *lone = calloc(1, sizeof *lone);
    CHECK(st_ad_saved_hooks_push(lone) != ST_OK && strstr(st_err_msg(), "no owner"),
          "no owner: refused");
    free(lone);   /* no owner released it */
    st_err_clear();
    static const st_ad_saved_owner owner = {sh_pack, sh_unpack, sh_release};
    st_ad_set_saved_hooks_owner(&owner);
    memset(&sh, 0, sizeof sh);
    CHECK(st_ad_saved_hooks_pop() != ST_OK, "pop of an empty stack is an error");
    st_err_clear();
    CHECK(st_ad_saved_hooks_depth() == 0 && !st_ad_saved_hooks_top(), "empty");

    float av[3] = {1, 2, 3}, bv[3] = {4, 5, 6};
    st_tensor *a = vec(3, av, true), *b = vec(3, bv, true);
    CHECK_OK(sh_push(), "push");
    CHECK_OK(sh_push(), "push a second (inner) pair");
    CHECK(st_ad_saved_hooks_depth() == 2, "depth 2");
    st_tensor *ab = op2(ST_OP_MUL, a, b);      /* saves a and b: two packs */
    CHECK_OK(st_ad_saved_hooks_pop(), "pop the inner pair");
    CHECK(sh.pushed_released == 1, "the popped pair is released");
    st_tensor *l = sum_all(ab);                /* sum saves nothing */
    CHECK_OK(st_ad_saved_hooks_pop(), "pop");
    CHECK(st_ad_saved_hooks_depth() == 0 && sh.pushed_released == 2, "all popped");
    CHECK_EQ_INT(sh.packs, 2, "mul packs its two operands");
    CHECK_EQ_INT(sh.grad_on_in_pack, 0, "pack runs with grad mode off");
    CHECK(!ab->grad_fn || strcmp(st_ad_node_name(ab->grad_fn), "MulBackward0") == 0,
          "recorded");

    /* with hooks, an in-place change of a saved tensor is the hooks' business */
    st_storage *sa = a->storage;
    sa->version++;
    CHECK_OK(st_ad_backward(&l, NULL, 1, true), "backward (retained)");
    CHECK_EQ_INT(sh.unpacks, 2, "unpacked once per saved tensor");
    for (int i = 0; i < 3 && a->grad && b->grad; i++) {
        CHECK(at(a->grad, i) == bv[i], "a.grad[%d] = %g", i, at(a->grad, i));
        CHECK(at(b->grad, i) == av[i], "b.grad[%d] = %g", i, at(b->grad, i));
    }
    CHECK_EQ_INT(sh.packed_released, 0, "retained: the packed objects stay");
    CHECK_OK(st_ad_backward(&l, NULL, 1, false), "second backward");
    CHECK_EQ_INT(sh.unpacks, 4, "unpacked again");
    CHECK_EQ_INT(sh.packed_released, 2, "not retained: released after use");
    CHECK(a->grad && at(a->grad, 0) == 2 * bv[0], "accumulated");
    st_err_clear();
    CHECK(st_ad_backward(&l, NULL, 1, false) != ST_OK && strstr(st_err_msg(), "second time"),
          "a third backward is refused");
    st_err_clear();
    st_tensor_decref(l);
    st_tensor_decref(ab);

    /* an unpack of the wrong shape: a clear error, then the graph goes */
    CHECK_OK(sh_push(), "push");
    ab = op2(ST_OP_MUL, a, b);
    st_ad_saved_hooks_pop();
    l = sum_all(ab);
    sh.bad_shape = 1;
    CHECK(st_ad_backward(&l, NULL, 1, false) != ST_OK &&
          strstr(st_err_msg(), "shape [7]") && strstr(st_err_msg(), "MulBackward0"),
          "wrong shape named: %s", st_err_msg());
    st_err_clear();
    sh.bad_shape = 0;
    int rel = sh.packed_released;
    st_tensor_decref(l);
    st_tensor_decref(ab);
    CHECK_EQ_INT(sh.packed_released, rel + 2, "the packed objects go with the graph");

    /* a failing pack fails the op, leaves nothing behind */
    CHECK_OK(sh_push(), "push");
    sh.fail_pack = 1;
    st_operand in[2] = {{.t = a}, {.t = b}};
    st_tensor *o = NULL;
    CHECK(st_rt_eager(ST_OP_MUL, in, 2, NULL, NULL, &o) < 0 && strstr(st_err_msg(), "pack refused"),
          "pack error surfaces");
    st_err_clear();
    sh.fail_pack = 0;
    st_ad_saved_hooks_pop();

    /* no hooks: saved as before, the version check is back */
    int packs = sh.packs;
    ab = op2(ST_OP_MUL, a, b);
    l = sum_all(ab);
    CHECK_EQ_INT(sh.packs, packs, "no hooks, no packs");
    a->storage->version++;
    CHECK(st_ad_backward(&l, NULL, 1, false) != ST_OK && strstr(st_err_msg(), "inplace"),
          "version checked without hooks");
    st_err_clear();
    st_tensor_decref(l);
    st_tensor_decref(ab);
    st_tensor_decref(a);
    st_tensor_decref(b);
    CHECK_EQ_INT(sh.packs, sh.packed_released, "every packed object released");
    st_ad_stats_get(&s1);
    CHECK(s1.nodes_alive == s0.nodes_alive, "nodes released (%lld -> %lld)",
          (long long)s0.nodes_alive, (long long)s1.nodes_alive);
    st_ad_set_saved_hooks_owner(NULL);
}

int main(void) {
    RUN_TEST(test_basic());
    RUN_TEST(test_broadcast_and_grad());
    RUN_TEST(test_inplace_checks());
    RUN_TEST(test_custom());
    RUN_TEST(test_release());
    RUN_TEST(test_hooks());
    RUN_TEST(test_visit_owned());
    RUN_TEST(test_saved_hooks());
    return st_test_exit_code("test_autograd");
}
