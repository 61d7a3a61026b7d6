/* eager.c - eager op dispatch and its kernel cache. An eager op is a
 * one-node StatementIR graph lowered by fusion/ and compiled by the
 * backend of its operands' device (the eager backend for the CPU, nvrtc
 * for CUDA; a factory op's device is set by the frontend), like any graph
 * (DESIGN.md: one path from graph to kernels). The compiled program is
 * cached under a key of (op, attrs, operand dtypes, ranks and layouts,
 * backend); sizes and Python scalar values are not in the key: sizes are
 * re-inferred per call, scalars arrive as kernel parameters. Also owns
 * the copy between devices (st_rt_to_device). */
#include "st_runtime.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <xxhash.h>

/* The cache key: a fixed-size record compared byte for byte. */
typedef struct {
    int32_t op, nin, ngiven;
    struct {
        int8_t scalar, dtype, ndim, contiguous;
    } in[ST_MAX_IN], given[ST_MAX_OUT];
    int32_t backend;
    st_attrs attrs;
} ekey;

typedef struct {
    ekey key;
    uint64_t hash;
    st_kprog *prog;
    void *compiled;
    st_backend *be;
    int in_value[ST_MAX_IN]; /* program value of each operand */
    bool out_via_view[ST_MAX_OUT]; /* the result is produced by a view step */
} eentry;

static struct {
    pthread_mutex_t mu;
    eentry **slots; /* open addressing */
    size_t cap, n;
    st_backend *be;
    st_kcache_stats stats;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static st_backend *eager_backend(void) {
    if (!cache.be) {
        st_ir_autodiff_init();
        /* SYMTRACE_EAGER_BACKEND=interp|llvm; default "llvm" when a
         * frontend registered it, else the reference "interp" */
        const char *env = getenv("SYMTRACE_EAGER_BACKEND");
        if (env && env[0])
            cache.be = st_backend_get(env);
        if (!cache.be)
            cache.be = st_backend_get("llvm");
        if (!cache.be)
            cache.be = st_backend_get("interp");
    }
    return cache.be;
}

/* Will this call be recorded on the autograd tape? */
static bool records(st_op_id op, const st_operand *in, int nin) {
    if (!st_ad_grad_enabled() || (!st_op(op)->vjp && op != ST_OP_DROPOUT))
        return false;
    for (int k = 0; k < nin; k++)
        if (in[k].t && in[k].t->requires_grad && st_dtype_is_float(in[k].t->dtype))
            return true;
    return false;
}

/* Dropout under autograd, as torch's native_dropout keeps it: the keep
 * mask is drawn once as bool (rand(like x) >= p, the draws of the
 * unrecorded op's decomposition) and the op is recorded as
 * where(keep, x * 1/(1-p), 0), so backward reuses the very same mask and
 * the tape holds one byte a point (where's rule reads only the condition;
 * a scalar product's, nothing). Under a trace these ops are traced as
 * they run (st_rt_eager). */
static int dropout_recorded(const st_operand *in, const st_attrs *attrs,
                            st_tensor **given, st_tensor **out) {
    double p = attrs ? attrs->f[0] : 0.5;
    st_operand like = {.t = in[0].t};
    st_attrs ra;
    memset(&ra, 0, sizeof ra);
    ra.dtype = ST_FLOAT32;
    ra.f[1] = 1.0;
    st_tensor *u = NULL, *keep = NULL, *xs = NULL;
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    int n = st_rt_eager(ST_OP_RAND, &like, 1, &ra, NULL, &u);
    if (n == 1) {
        st_operand gi[2] = {{.t = u}, {.sdtype = ST_FLOAT64, .f = p}};
        n = st_rt_eager(ST_OP_GE, gi, 2, NULL, NULL, &keep);
    }
    st_ad_set_grad_enabled(was);
    st_tensor_decref(u);
    if (n == 1) {
        /* p = 1 keeps nothing: a zero scale, not an infinite one (whose
         * product with where's zero gradient would be nan) */
        st_operand mi[2] = {in[0], {.sdtype = ST_FLOAT64, .f = p < 1.0 ? 1.0 / (1.0 - p) : 0.0}};
        n = st_rt_eager(ST_OP_MUL, mi, 2, NULL, NULL, &xs);
    }
    if (n == 1) {
        st_operand wi[3] = {{.t = keep}, {.t = xs}, {.sdtype = ST_FLOAT64, .f = 0.0}};
        n = st_rt_eager(ST_OP_WHERE, wi, 3, NULL, given, out);
    }
    st_tensor_decref(keep);
    st_tensor_decref(xs);
    return n == 1 ? 1 : -1;
}

st_backend *st_rt_eager_backend(void) { return eager_backend(); }

st_backend *st_rt_backend_for(st_device_type t) {
    if (t == ST_DEV_CPU) {
        st_backend *be = eager_backend();
        if (!be) st_err(ST_ERR_RUNTIME, "no CPU backend is registered");
        return be;
    }
    st_backend *be = st_backend_get("nvrtc");
    if (!be || be->device != t)
        st_err(ST_ERR_RUNTIME, "CUDA tensors need the nvrtc backend, which is not "
               "registered (NVRTC or the CUDA driver could not be loaded)");
    return be && be->device == t ? be : NULL;
}

static _Thread_local st_device *factory_dev;

st_device *st_rt_set_factory_device(st_device *d) {
    st_device *old = factory_dev;
    factory_dev = d;
    return old;
}

st_tensor *st_rt_to_device(st_tensor *t, st_device *dev) {
    st_device *src = st_tensor_device(t);
    if (src == dev && st_tensor_is_contiguous(t)) {
        st_tensor_incref(t);
        return t;
    }
    st_tensor *c = st_tensor_contiguous(t);  /* on t's device */
    if (!c || src == dev) return c;
    st_tensor *o = st_tensor_empty(dev, t->dtype, t->ndim, t->shape);
    if (!o) {
        st_tensor_decref(c);
        return NULL;
    }
    size_t n = (size_t)st_tensor_numel(t) * st_dtype_size(t->dtype);
    /* a non-CPU side does the copy (the driver reaches host memory) */
    st_device *by = dev->type != ST_DEV_CPU ? dev : src;
    st_status s = n ? by->copy(by, st_tensor_data(o), st_tensor_data(c), n) : ST_OK;
    st_tensor_decref(c);
    if (s != ST_OK) {
        st_tensor_decref(o);
        return NULL;
    }
    return o;
}

st_status st_rt_set_eager_backend(const char *name) {
    st_backend *be = st_backend_get(name);
    if (!be) return st_err(ST_ERR_VALUE, "no backend named '%s'", name);
    cache.be = be;
    return ST_OK;
}

void st_rt_kcache_stats(st_kcache_stats *out) {
    *out = cache.stats;
    out->entries = (int64_t)cache.n;
}

static void entry_free(eentry *e) {
    if (!e) return;
    if (e->compiled) e->be->release(e->be, e->compiled);
    st_kprog_free(e->prog);
    free(e);
}

void st_rt_kcache_clear(void) {
    pthread_mutex_lock(&cache.mu);
    for (size_t k = 0; k < cache.cap; k++) entry_free(cache.slots[k]);
    free(cache.slots);
    cache.slots = NULL;
    cache.cap = cache.n = 0;
    pthread_mutex_unlock(&cache.mu);
}

static eentry *lookup(const ekey *key, uint64_t h) {
    if (!cache.cap) return NULL;
    for (size_t k = h & (cache.cap - 1);; k = (k + 1) & (cache.cap - 1)) {
        eentry *e = cache.slots[k];
        if (!e) return NULL;
        if (e->hash == h && !memcmp(&e->key, key, sizeof *key)) return e;
    }
}

static st_status insert(eentry *e) {
    if ((cache.n + 1) * 2 > cache.cap) {
        size_t ncap = cache.cap ? cache.cap * 2 : 256;
        eentry **ns = calloc(ncap, sizeof *ns);
        if (!ns) return st_err(ST_ERR_MEMORY, "kernel cache: out of memory");
        for (size_t k = 0; k < cache.cap; k++) {
            eentry *o = cache.slots[k];
            if (!o) continue;
            size_t j = o->hash & (ncap - 1);
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = o;
        }
        free(cache.slots);
        cache.slots = ns;
        cache.cap = ncap;
    }
    size_t j = e->hash & (cache.cap - 1);
    while (cache.slots[j]) j = (j + 1) & (cache.cap - 1);
    cache.slots[j] = e;
    cache.n++;
    return ST_OK;
}

/* Builds the one-node graph, lowers and compiles it. */
static eentry *build(const ekey *key, uint64_t h, st_op_id op,
                     const st_operand *in, int nin, const st_attrs *attrs,
                     st_tensor **given, st_backend *be) {
    st_graph *g = st_ir_graph_new();
    if (!g) return NULL;
    int ids[ST_MAX_IN], outs[ST_MAX_OUT];
    for (int k = 0; k < nin; k++) {
        if (in[k].t) {
            st_meta m;
            st_tensor_meta(in[k].t, &m);
            ids[k] = st_ir_add_input(g, &m, false);
        }
    }
    for (int k = 0; k < nin; k++)
        if (!in[k].t) ids[k] = st_ir_add_const(g, in[k].sdtype, in[k].f, in[k].i);
    for (int k = 0; k < nin; k++)
        if (ids[k] < 0) goto fail_graph;
    int si = st_ir_add_stmt(g, op, ids, nin, attrs, outs);
    if (si < 0) goto fail_graph;
    int nout = g->stmts[si].nout;
    for (int k = 0; k < nout; k++) st_ir_mark_output(g, outs[k]);
    /* the process-wide fusion options (SYMTRACE_FUSION, symtrace.config) */
    st_kprog *p = st_fuse_lower(g, NULL);
    st_ir_graph_free(g);
    if (!p) return NULL;

    eentry *e = calloc(1, sizeof *e);
    if (!e) {
        st_kprog_free(p);
        st_err(ST_ERR_MEMORY, "kernel cache: out of memory");
        return NULL;
    }
    e->key = *key;
    e->hash = h;
    e->prog = p;
    e->be = be;
    /* operands -> program values: inputs keep their order, then the
     * original constants come first among the constants (fusion/'s
     * decomposition contract) */
    const st_graph *pg = p->graph;
    int ti = 0, ci = 0;
    for (int k = 0; k < nin; k++) {
        if (in[k].t) {
            e->in_value[k] = pg->inputs[ti++];
        } else {
            int seen = 0, v;
            for (v = 0; v < pg->nvalues; v++)
                if (pg->values[v].kind == ST_VAL_CONST && seen++ == ci) break;
            ci++;
            e->in_value[k] = v;
        }
    }
    for (int k = 0; k < pg->noutputs && k < ST_MAX_OUT; k++) {
        int v = pg->outputs[k];
        int prod = pg->values[v].producer;
        e->out_via_view[k] = prod < 0 || st_op(pg->stmts[prod].op)->kind == ST_OPK_VIEW;
    }
    /* A result written into a given tensor is stored in that tensor's
     * dtype (the store converts); the dtype is part of the cache key. */
    for (int k = 0; given && k < pg->noutputs && k < ST_MAX_OUT; k++) {
        if (!given[k]) continue;
        for (int i = 0; i < p->nkernels; i++)
            for (int b = 0; b < p->kernels[i].nbufs; b++) {
                st_kbuf *kb = &p->kernels[i].bufs[b];
                if (kb->is_out && kb->value == pg->outputs[k])
                    kb->dtype = given[k]->dtype;
            }
    }
    e->compiled = be->compile(be, p->kernels, p->nkernels);
    if (!e->compiled) {
        entry_free(e);
        return NULL;
    }
    cache.stats.compiles++;
    return e;
fail_graph:
    st_ir_graph_free(g);
    return NULL;
}

/* PyTorch's canCast for results written into an existing tensor. */
static bool can_cast(st_dtype from, st_dtype to) {
    if (st_dtype_is_float(from) && !st_dtype_is_float(to)) return false;
    if (from != ST_BOOL && to == ST_BOOL) return false;
    return true;
}

static const char *dname(st_dtype t) { return st_dtype_name(t); }

static int eager_run(st_op_id op, const st_operand *in, int nin,
                     const st_attrs *attrs, st_tensor **given, st_tensor **out);
static int eager_on(st_op_id op, const st_operand *in, int nin,
                    const st_attrs *attrs, st_tensor **given, st_tensor **out,
                    st_backend *be);
static bool order_dependent(const st_tensor *o, const st_tensor *x, bool same_too);

/* The public entry: runs the op (ops it runs inside are not traced;
 * under autocast, on its operands cast first) and
 * notes it on the active trace (runtime/trace.c) once it succeeded. A
 * dropout the tape records is the exception: the ops it is recorded as
 * are traced themselves, so the trace and the tape agree by construction. */
/* t is a multi-view output (split, unbind) that this op writes into under
 * autograd: refused as a write (st_view_inplace), so it is not refreshed
 * first (that would refuse it as a use after its base changed). */
static bool multi_written(const st_tensor *t, st_tensor *const *given)
{
    if (!t || !given || !t->view_multi || !t->view_grad || !st_ad_grad_enabled() ||
        !t->view_base->requires_grad)
        return false;
    for (int k = 0; k < ST_MAX_OUT; k++)
        if (given[k] == t)
            return true;
    return false;
}

static int eager_traced(st_op_id op, const st_operand *in, int nin,
                        const st_attrs *attrs, st_tensor **given, st_tensor **out);

int st_rt_eager(st_op_id op, const st_operand *in, int nin,
                const st_attrs *attrs, st_tensor **given, st_tensor **out) {
    if (!given && st_rt_autocast_state()) { /* runtime/autocast.c */
        int n = st_rt_autocast_apply(op, in, nin, attrs, out);
        if (n != 0) return n;
    }
    /* an elementwise result in its operands' memory order (runtime/layout.c) */
    int64_t perm[ST_MAX_DIMS];
    int nd;
    if (!given && st_layout_op(op) && st_layout_perm((int)op, in, nin, &nd, perm))
        return st_layout_run(op, in, nin, attrs, nd, perm, NULL, out);
    /* written into a tensor in another order while tracing: the graph's
     * new value of it is in its order too (a compiled result keeps eager's
     * strides); eager writes in place as it is */
    if (given && given[0] && st_rt_trace_active() && (st_layout_op(op) || op == ST_OP_COPY) &&
        st_layout_into_perm(in, nin, given[0], &nd, perm)) {
        bool one = true;
        for (int k = 1; k < ST_MAX_OUT; k++)
            one = one && !given[k];
        if (one)
            return st_layout_run(op, in, nin, attrs, nd, perm, given[0], out);
    }
    return eager_traced(op, in, nin, attrs, given, out);
}

int st_rt_eager_in_order(st_op_id op, const st_operand *in, int nin,
                         const st_attrs *attrs, st_tensor **given, st_tensor **out) {
    return eager_traced(op, in, nin, attrs, given, out);
}

static int eager_traced(st_op_id op, const st_operand *in, int nin,
                        const st_attrs *attrs, st_tensor **given, st_tensor **out) {
    if (!st_rt_trace_active()) return eager_run(op, in, nin, attrs, given, out);
    if (op == ST_OP_DROPOUT && nin == 1 && in[0].t && records(op, in, nin))
        return dropout_recorded(in, attrs, given, out);
    for (int k = 0; given && k < ST_MAX_OUT; k++) /* runtime/trace.c */
        if (given[k]) {
            st_rt_trace_will_write(given[k]);
            /* a write through a view whose elements may overlap (unfold's
             * windows): eager applies it once per index, in loop order; a
             * graph states one value per element, so it does not trace */
            bool fill = op == ST_OP_FULL || (op == ST_OP_COPY && nin == 1 && !in[0].t);
            if (!fill && st_tensor_may_overlap(given[k], false))
                st_rt_trace_fail("an in-place write into a view whose elements overlap "
                                 "(unfold's windows): its result depends on the order of "
                                 "the writes");
            /* an operand in the written memory, other than as the same
             * view (x.mul_(x[0]) for a transposed x, which torch runs):
             * eager's kernel order decides, a graph's would differ */
            bool scat = op == ST_OP_SCATTER || op == ST_OP_SCATTER_ADD;
            for (int j = 0; j < nin; j++)
                if (order_dependent(given[k], in[j].t, scat && j > 0))
                    st_rt_trace_fail("an in-place op reads memory it writes (an operand "
                                     "overlaps the written tensor): its result depends on "
                                     "the order of the writes");
        }
    st_rt_trace_suspend();
    int n = eager_run(op, in, nin, attrs, given, out);
    st_rt_trace_resume();
    if (n > 0) st_rt_trace_note(op, in, nin, attrs, out, n);
    return n;
}

/* The op's own inference on this call's operands, run when a cached
 * program failed: it may be decomposed (linear -> transpose + matmul), and
 * its re-inference would report a bad call in the words of the decomposed
 * op. Sets the op's own error when the operands are bad. */
static st_status check_operands(st_op_id op, const st_operand *in, int nin,
                                const st_attrs *attrs) {
    st_meta m[ST_MAX_IN], out[ST_MAX_OUT];
    int nout = 0;
    for (int k = 0; k < nin; k++) {
        if (in[k].t) {
            st_tensor_meta(in[k].t, &m[k]);
        } else {
            memset(&m[k], 0, sizeof m[k]);
            m[k].kind = ST_META_SCALAR;
            m[k].dtype = in[k].sdtype;
        }
    }
    st_attrs zero;
    memset(&zero, 0, sizeof zero);
    return st_infer(op, m, nin, attrs ? attrs : &zero, out, &nout);
}

/* Elements [lo, hi] a tensor's view reaches in its storage. */
static void elem_range(const st_tensor *t, int64_t *lo, int64_t *hi) {
    *lo = *hi = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] <= 0) { *hi = *lo - 1; return; }
        int64_t e = t->strides[d] * (t->shape[d] - 1);
        if (e < 0) *lo += e; else *hi += e;
    }
}

/* How a written tensor o and an operand x share memory, in torch's terms
 * (get_overlap_status): the same tensor or the same elements in the same
 * order (FULL), some elements (PARTIAL), or TOO_HARD to tell (either is not
 * a dense permutation of its elements: a strided slice, an expansion),
 * which torch lets run, the result depending on the kernel's order. */
enum { OV_NO, OV_FULL, OV_PARTIAL, OV_TOO_HARD };

/* o and x view the same elements in the same order (strides of size-1
 * dims do not count) */
static bool same_view(const st_tensor *o, const st_tensor *x) {
    if (o->offset != x->offset || o->ndim != x->ndim) return false;
    for (int d = 0; d < o->ndim; d++)
        if (o->shape[d] != x->shape[d] || (o->strides[d] != x->strides[d] && o->shape[d] != 1))
            return false;
    return true;
}

static int overlap_status(const st_tensor *o, const st_tensor *x) {
    if (!o || !x) return OV_NO;
    if (o == x) return OV_FULL;
    if (st_tensor_numel(o) == 0 || st_tensor_numel(x) == 0 || o->storage != x->storage)
        return OV_NO;
    if (!st_tensor_is_dense(o) || !st_tensor_is_dense(x)) return OV_TOO_HARD;
    int64_t olo, ohi, xlo, xhi;
    elem_range(o, &olo, &ohi);
    elem_range(x, &xlo, &xhi);
    /* FULL as torch's: the same strides, size-1 dims' too (x[1:2] and
     * x[1::2] of a 3-row x are PARTIAL there) */
    if (olo == xlo && ohi == xhi)
        return o->ndim == x->ndim && !memcmp(o->strides, x->strides,
                                             sizeof(int64_t) * (size_t)o->ndim)
                   ? OV_FULL : OV_PARTIAL;
    return olo <= xhi && xlo <= ohi ? OV_PARTIAL : OV_NO;
}

/* o and x reach one storage range, other than as the very same view (for
 * a scatter's source and index, same_too: also as the same view): the
 * result may depend on the kernel's order (the trace refuses it) */
static bool order_dependent(const st_tensor *o, const st_tensor *x, bool same_too) {
    if (!o || !x || o->storage != x->storage || (o == x && !same_too)) return false;
    int64_t olo, ohi, xlo, xhi;
    elem_range(o, &olo, &ohi);
    elem_range(x, &xlo, &xhi);
    if (olo > ohi || xlo > xhi || ohi < xlo || xhi < olo) return false;
    return same_too || !same_view(o, x);
}

/* st_overlap_seq's calls (not run again through it) */
static _Thread_local int seq_depth;

static int seq_run(void *be, st_op_id op, const st_operand *in, int nin,
                   const st_attrs *attrs, st_tensor **given, st_tensor **out) {
    return eager_on(op, in, nin, attrs, given, out, be);
}

/* The same op with a gradient involved: torch's kernel writes the same
 * values as without (its autograd records the op as of the operands' old
 * values, as symtrace's does). The values in torch's order are computed
 * first, with grad mode off, on views of a copy of the storage's span
 * (*shadow: the written tensor's view there); the caller runs the op as
 * usual (recorded), then writes them over the result without moving the
 * version (seq_quiet_copy). *shadow stays NULL when nothing depends on
 * the order. */
static int seq_shadow(st_op_id op, const st_operand *in, int nin, const st_attrs *attrs,
                      st_tensor *o, st_backend *be, st_tensor **shadow) {
    *shadow = NULL;
    int64_t lo, hi, l2, h2;
    elem_range(o, &lo, &hi);
    for (int j = 0; j < nin; j++)
        if (in[j].t && in[j].t->storage == o->storage) {
            elem_range(in[j].t, &l2, &h2);
            if (l2 < lo) lo = l2;
            if (h2 > hi) hi = h2;
        }
    if (hi < lo) return 0;
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    int rc = -1;
    int64_t span[1] = {hi - lo + 1}, one[1] = {1};
    st_tensor *flat = st_tensor_view_of(o, 1, span, one, lo), *copy = NULL, *ov = NULL;
    st_tensor *held[ST_MAX_IN] = {NULL}, *res[ST_MAX_OUT] = {NULL};
    st_operand sin[ST_MAX_IN];
    memcpy(sin, in, sizeof *in * (size_t)nin);
    if (!flat) goto done;
    st_operand src = {.t = flat};
    if (st_rt_eager(ST_OP_COPY, &src, 1, NULL, NULL, &copy) != 1) goto done;
    ov = st_tensor_view_of(copy, o->ndim, o->shape, o->strides, copy->offset + o->offset - lo);
    if (!ov) goto done;
    for (int j = 0; j < nin; j++) {
        const st_tensor *t = in[j].t;
        if (!t || t->storage != o->storage) continue;
        held[j] = st_tensor_view_of(copy, t->ndim, t->shape, t->strides,
                                    copy->offset + t->offset - lo);
        if (!held[j]) goto done;
        sin[j].t = held[j];
    }
    seq_depth++;
    int n = st_overlap_seq(op, sin, nin, attrs, ov, res, seq_run, be);
    seq_depth--;
    for (int k = 0; k < n; k++) st_tensor_decref(res[k]);
    if (n < 0) goto done;
    if (n > 0) {
        *shadow = ov;
        ov = NULL;
    }
    rc = 0;
done:
    st_ad_set_grad_enabled(was);
    for (int j = 0; j < nin; j++) st_tensor_decref(held[j]);
    st_tensor_decref(ov);
    st_tensor_decref(copy);
    st_tensor_decref(flat);
    return rc;
}

/* o's elements take shadow's values, no version moved, nothing recorded. */
static int seq_quiet_copy(st_tensor *o, st_tensor *shadow) {
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    uint32_t ver = o->storage->version;
    st_operand src = {.t = shadow};
    st_tensor *g[ST_MAX_OUT] = {o}, *r = NULL;
    int n = st_rt_eager(ST_OP_COPY, &src, 1, NULL, g, &r);
    st_tensor_decref(r);
    o->storage->version = ver;
    st_ad_set_grad_enabled(was);
    return n < 0 ? -1 : 0;
}

/* An elementwise op written into one CPU tensor, with an operand that
 * shares its elements as torch cannot tell (hard: TOO_HARD other than as
 * the same view, found by eager_on's overlap check): its result depends on
 * the write order. No gradient involved, unless grad_ok. */
static bool seq_wanted(st_op_id op, const st_operand *in, int nin, st_tensor **given,
                       bool hard, bool grad_ok) {
    st_tensor *o = given[0];
    if (!hard) return false;
    if (!o || o->ndim == 0 || st_tensor_numel(o) < 2 ||
        st_tensor_device(o)->type != ST_DEV_CPU)
        return false;
    for (int k = 1; k < ST_MAX_OUT; k++)
        if (given[k]) return false;
    st_op_kind kind = st_op(op)->kind;
    if (!(kind == ST_OPK_UNARY || kind == ST_OPK_BINARY || kind == ST_OPK_TERNARY ||
          op == ST_OP_COPY || op == ST_OP_CLAMP))
        return false;
    bool grad = st_ad_grad_enabled() && !grad_ok;
    if (grad && (o->requires_grad || (o->view_base && o->view_base->requires_grad)))
        return false;
    for (int j = 0; j < nin; j++)
        if (grad && in[j].t && in[j].t->requires_grad) return false;
    return true;
}

static int eager_run(st_op_id op, const st_operand *in, int nin,
                     const st_attrs *attrs, st_tensor **given, st_tensor **out) {
    if ((unsigned)op >= ST_NOPS)
        return st_err(ST_ERR_VALUE, "eager: unknown op %d", (int)op), -1;
    if (nin < 0 || nin > ST_MAX_IN)
        return st_err(ST_ERR_VALUE, "%s: too many operands (%d)",
                      st_op(op)->name, nin), -1;
    /* an integer tensor to a negative integer scalar power: torch's error,
     * checked up front (a tensor of exponents computes: 1, -1 or 0) */
    if (op == ST_OP_POW && nin == 2 && in[0].t && !in[1].t && in[1].sdtype == ST_INT64 &&
        in[1].i < 0 && !st_dtype_is_float(in[0].t->dtype))
        return st_err(ST_ERR_RUNTIME, "Integers to negative integer powers are not "
                      "allowed."), -1;
    /* views whose base's history changed get theirs first (viewhist.c);
     * an op with no gradient (a comparison) records nothing and reads no
     * history: its operands stay stale for a later use, as in torch, where
     * `v != v` on a split output whose base was written runs */
    bool records = st_op(op)->vjp != NULL;
    for (int k = 0; records && k < nin; k++)
        if (!multi_written(in[k].t, given) && st_ad_view_stale(in[k].t) &&
            st_ad_view_refresh(in[k].t) != ST_OK) return -1;
    for (int k = 0; given && k < ST_MAX_OUT; k++)
        if (!multi_written(given[k], given) && st_ad_view_stale(given[k]) &&
            st_ad_view_refresh(given[k]) != ST_OK) return -1;
    /* the device: the tensor operands' (all on one; a 0-d CPU tensor
     * joins a GPU op as PyTorch allows, copied over), else the given
     * result's, else the factory device */
    st_device *dev = NULL;
    for (int k = 0; k < nin; k++) {
        if (!in[k].t) continue;
        st_device *d = st_tensor_device(in[k].t);
        if (!dev || (dev->type == ST_DEV_CPU && d->type != ST_DEV_CPU)) dev = d;
    }
    st_operand moved[ST_MAX_IN];
    st_tensor *movedt[ST_MAX_IN] = {NULL};
    for (int k = 0; dev && k < nin; k++) {
        if (!in[k].t) continue;
        st_device *d = st_tensor_device(in[k].t);
        if (d == dev) continue;
        if (d->type != ST_DEV_CPU || in[k].t->ndim != 0) {
            for (int j = 0; j < nin; j++) st_tensor_decref(movedt[j]);
            return st_err(ST_ERR_RUNTIME,
                          "%s: Expected all tensors to be on the same device, but "
                          "found at least two devices, %s and %s! (operand %d is on %s)",
                          st_op(op)->name, dev->name, d->name, k, d->name), -1;
        }
        if (in[k].t->requires_grad && st_ad_grad_enabled()) {
            for (int j = 0; j < nin; j++) st_tensor_decref(movedt[j]);
            return st_err(ST_ERR_RUNTIME,
                          "%s: operand %d is a 0-d CPU tensor that requires grad "
                          "and the op runs on %s: its gradient would be lost; "
                          "move it with .to('%s') first", st_op(op)->name, k,
                          dev->name, dev->name), -1;
        }
        if (in != moved) memcpy(moved, in, sizeof *in * (size_t)nin);
        movedt[k] = st_rt_to_device(in[k].t, dev);
        if (!movedt[k]) {
            for (int j = 0; j < nin; j++) st_tensor_decref(movedt[j]);
            return -1;
        }
        moved[k].t = movedt[k];
        in = moved;
    }
    if (!dev && given)
        for (int k = 0; k < ST_MAX_OUT && !dev; k++)
            if (given[k]) dev = st_tensor_device(given[k]);
    if (!dev) dev = factory_dev ? factory_dev : st_rt_cpu();
    for (int k = 0; given && k < ST_MAX_OUT; k++)
        if (given[k] && st_tensor_device(given[k]) != dev) {
            for (int j = 0; j < nin; j++) st_tensor_decref(movedt[j]);
            return st_err(ST_ERR_RUNTIME,
                          "%s: Expected all tensors to be on the same device, but "
                          "found at least two devices, %s and %s! (the result "
                          "tensor is on %s)", st_op(op)->name, dev->name,
                          st_tensor_device(given[k])->name,
                          st_tensor_device(given[k])->name), -1;
        }
    int n = eager_on(op, in, nin, attrs, given, out, st_rt_backend_for(dev->type));
    for (int j = 0; j < nin; j++) st_tensor_decref(movedt[j]);
    /* an embedding index out of range: torch's text first, then the index and size */
    if (n < 0 && op == ST_OP_EMBEDDING && st_err_kind() == ST_ERR_INDEX &&
        strstr(st_err_msg(), "out of bounds for dimension")) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", st_err_msg());
        st_err(ST_ERR_INDEX, "index out of range in self: %s", msg);
    }
    return n;
}

/* Integer floor division / remainder by zero: torch's CPU kernels raise
 * (TORCH_CHECK in the element loop). The divisor (in[1]) as the result's
 * integer dtype takes it (int8 // 256 divides by 0). CPU only, not while
 * tracing (a graph has no data-dependent error; torch's CUDA and compiled
 * kernels raise none either). Checked before anything is written (torch's
 * serial loop has written the elements before the first zero). */
static bool int_div_by_zero(st_op_id op, const st_operand *in, int nin, st_dtype rdt) {
    if ((op != ST_OP_FLOOR_DIVIDE && op != ST_OP_REMAINDER) || nin != 2 ||
        !st_dtype_is_int(rdt) || st_rt_trace_active())
        return false;
    for (int j = 0; j < nin; j++)      /* no element: the kernel divides nothing */
        if (in[j].t && st_tensor_numel(in[j].t) == 0)
            return false;
    int bits = (int)st_dtype_size(rdt) * 8;
    uint64_t mask = bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    const st_tensor *t = in[1].t;
    if (!t)
        return in[1].sdtype != ST_FLOAT64 && ((uint64_t)in[1].i & mask) == 0;
    if (st_tensor_device(t)->type != ST_DEV_CPU || st_dtype_is_float(t->dtype))
        return false;
    int64_t n = st_tensor_numel(t), idx[ST_MAX_DIMS] = {0};
    if (n == 0)
        return false;
    size_t es = st_dtype_size(t->dtype);
    const char *base = st_tensor_data(t);
    int64_t off = 0;
    for (int64_t e = 0; e < n; e++) {
        const char *p = base + off * (int64_t)es;
        uint64_t v = 0;
        switch (t->dtype) {
        case ST_BOOL: case ST_UINT8: v = *(const uint8_t *)p; break;
        case ST_INT8: v = (uint64_t)(int64_t)*(const int8_t *)p; break;
        case ST_INT16: v = (uint64_t)(int64_t)*(const int16_t *)p; break;
        case ST_INT32: v = (uint64_t)(int64_t)*(const int32_t *)p; break;
        default: v = (uint64_t)*(const int64_t *)p; break;
        }
        if ((v & mask) == 0)
            return true;
        for (int d = t->ndim - 1; d >= 0; d--) {
            off += t->strides[d];
            if (++idx[d] < t->shape[d])
                break;
            off -= t->strides[d] * idx[d];
            idx[d] = 0;
        }
    }
    return false;
}

/* The written operands' copies a node saved: their version moves, as the
 * write moved the operand's (a backward reading them raises torch's
 * error). */
static void stale_clones(st_tensor *const *clones, const bool *stale) {
    for (int k = 0; k < ST_MAX_IN; k++)
        if (clones[k] && stale[k]) clones[k]->storage->version++;
}

static int eager_on(st_op_id op, const st_operand *in, int nin,
                    const st_attrs *attrs, st_tensor **given, st_tensor **out,
                    st_backend *be) {
    if (!be) return -1;
    bool rec = records(op, in, nin);
    if (rec && op == ST_OP_DROPOUT) return dropout_recorded(in, attrs, given, out);
    st_operand inb[ST_MAX_IN];
    st_tensor *clones[ST_MAX_IN] = {NULL};
    bool stale[ST_MAX_IN] = {false};
    /* a written-to tensor whose elements overlap (an expanded view): only
     * a fill is defined (every element gets the same value), as torch's;
     * not from a broadcast source that needs a gradient (its gradient
     * would count each overlapping element). The one check of it: the
     * write through a view under autograd (st_view_inplace) comes later.
     * A FULL into a given tensor is setitem's number (x[...] = 1), which
     * torch writes as a copy_ and refuses here; fill_ is a COPY of a
     * broadcast number (bsrc) */
    /* a view taken in no_grad mode written in grad mode: refused first,
     * as torch's check_inplace (st_view_inplace refuses the rest) */
    if (given && given[0] && given[0]->view_nograd && given[0]->view_base &&
        given[0]->view_base->requires_grad && st_ad_grad_enabled())
        return st_view_nograd_error(given[0]), -1;
    for (int k = 0; given && k < ST_MAX_OUT; k++) {
        const st_tensor *t = given[k];
        if (!t || st_tensor_numel(t) == 0) /* no element, none shared */
            continue;
        const st_tensor *src = op == ST_OP_COPY && nin == 1 ? in[0].t : NULL;
        bool fill = op == ST_OP_COPY && nin == 1 && !src;
        bool bsrc = src && src->ndim == t->ndim &&
                    !(src->requires_grad && st_ad_grad_enabled());
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] > 1 && t->strides[d] == 0 && !fill &&
                !(bsrc && src->strides[d] == 0))
                return st_err(ST_ERR_RUNTIME, "%s: unsupported operation: more than one "
                              "element of the written-to tensor refers to a single memory "
                              "location. Please clone() the tensor before performing the "
                              "operation.", st_op(op)->name), -1;
    }
    /* an operand that shares some of the written tensor's elements (y[1:]
     * .add_(y[:-1])), or for a scatter's source and index any of them, even
     * as the very same view (x.index_add_(0, i, x)): which write a read sees
     * depends on the kernel's order, so torch's error where torch can tell
     * (assert_no_partial_overlap / assert_no_overlap) */
    bool scat = op == ST_OP_SCATTER || op == ST_OP_SCATTER_ADD;
    bool hard = false;   /* an operand of given[0] that overlap_seq.c orders */
    for (int k = 0; given && k < ST_MAX_OUT; k++)
        for (int j = 0; given[k] && j < nin; j++) {
            int ov = overlap_status(given[k], in[j].t);
            if (k == 0 && ov == OV_TOO_HARD && order_dependent(given[0], in[j].t, false))
                hard = true;
            if (ov == OV_PARTIAL || (ov == OV_FULL && scat && j > 0))
                return st_err(ST_ERR_RUNTIME, "%s: unsupported operation: some "
                              "elements of the input tensor and the written-to "
                              "tensor refer to a single memory location. Please "
                              "clone() the tensor before performing the operation.",
                              st_op(op)->name), -1;
        }
    /* an operand sharing the written elements as torch cannot tell
     * (TOO_HARD): torch's order of the element writes (overlap_seq.c) */
    if (given && !seq_depth && seq_wanted(op, in, nin, given, hard, false)) {
        seq_depth++;
        int n = st_overlap_seq(op, in, nin, attrs, given[0], out, seq_run, be);
        seq_depth--;
        if (n != 0)
            return n;
    } else if (given && !seq_depth && !st_rt_trace_active() &&
               seq_wanted(op, in, nin, given, hard, true)) {
        st_tensor *shadow = NULL;
        if (seq_shadow(op, in, nin, attrs, given[0], be, &shadow) < 0) return -1;
        if (shadow) {
            seq_depth++;
            int n = eager_on(op, in, nin, attrs, given, out, be);
            seq_depth--;
            if (n >= 0 && seq_quiet_copy(given[0], shadow) < 0) {
                for (int k = 0; k < n; k++) st_tensor_decref(out[k]);
                n = -1;
            }
            st_tensor_decref(shadow);
            return n;
        }
    }
    if (given && st_ad_grad_enabled()) {
        /* written through a view while its base or an operand needs
         * gradients: the base's history records the write (CopySlices) */
        st_tensor *v = given[0];
        /* refused below (a view taken in no_grad mode is refused as one) */
        bool leaf = v && v->requires_grad && !v->grad_fn && !v->view_nograd;
        bool via_view = v && v->view_base && !leaf && (v->view_base->requires_grad || rec);
        for (int k = 0; !via_view && k < ST_MAX_OUT; k++) {
            if (!given[k] || !given[k]->requires_grad) continue;
            if (!given[k]->grad_fn)
                return st_err(ST_ERR_RUNTIME,
                              "%s: a leaf Variable that requires grad is being "
                              "used in an in-place operation.", st_op(op)->name), -1;
            if (st_ad_node_is_view(given[k]->grad_fn) && given[k]->is_view)
                return st_err(ST_ERR_RUNTIME,
                              "%s: in-place modification of a view of a tensor "
                              "that requires grad is not supported (its base's "
                              "gradient would be wrong); clone() it first",
                              st_op(op)->name), -1;
        }
        /* an operand the VJP reads but the in-place result overwrites is
         * computed from (and saved as) a copy (also when the write goes
         * through a view: st_view_inplace runs on the copies). torch saves
         * such an operand as it is (only the written tensor's own old value
         * as a copy): the write moves its version, and the backward that
         * reads it raises torch's error. The copy takes the operand's
         * version, and moves one after the write (stale_clones) */
        if (rec) {
            memcpy(inb, in, sizeof *in * (size_t)nin);
            for (int k = 0; k < nin; k++) {
                if (!in[k].t || !(st_op(op)->vjp_saves & (1u << k))) continue;
                for (int j = 0; j < ST_MAX_OUT; j++) {
                    if (!given[j] || given[j]->storage != in[k].t->storage) continue;
                    st_operand src = {.t = in[k].t};
                    if (st_rt_eager(ST_OP_COPY, &src, 1, NULL, NULL, &clones[k]) != 1)
                        goto fail_clones;
                    /* the copy stands for the operand's value: its own
                     * (recorded) history gives way to the operand's */
                    if (clones[k]->grad_fn) st_ad_node_decref(clones[k]->grad_fn);
                    clones[k]->requires_grad = in[k].t->requires_grad;
                    clones[k]->grad_fn = in[k].t->grad_fn;
                    clones[k]->output_nr = in[k].t->output_nr;
                    if (clones[k]->grad_fn) st_ad_node_incref(clones[k]->grad_fn);
                    clones[k]->storage->version = in[k].t->storage->version;
                    stale[k] = !(k == 0 && in[0].t == given[j]) && !in[k].t->own_version;
                    inb[k].t = clones[k];
                    break;
                }
            }
            in = inb;
        }
        if (via_view) {
            int n = st_view_inplace(op, in, nin, attrs, v, out);
            if (n >= 0) stale_clones(clones, stale);
            for (int k = 0; k < ST_MAX_IN; k++) st_tensor_decref(clones[k]);
            return n;
        }
    }
    /* (eager_run put every operand on be's device) */
    ekey key;
    memset(&key, 0, sizeof key);
    key.op = op;
    key.nin = nin;
    key.backend = (int32_t)(uintptr_t)be & 0x7fffffff;
    for (int k = 0; k < nin; k++) {
        if (in[k].t) {
            key.in[k].dtype = (int8_t)in[k].t->dtype;
            key.in[k].ndim = (int8_t)in[k].t->ndim;
            key.in[k].contiguous = st_tensor_is_contiguous(in[k].t);
        } else {
            key.in[k].scalar = 1;
            key.in[k].dtype = (int8_t)in[k].sdtype;
        }
    }
    if (given)
        for (int k = 0; k < ST_MAX_OUT; k++) {
            if (!given[k]) continue;
            key.ngiven |= 1 << k;
            key.given[k].dtype = (int8_t)given[k]->dtype;
            key.given[k].ndim = (int8_t)given[k]->ndim;
            key.given[k].contiguous = st_tensor_is_contiguous(given[k]);
        }
    if (attrs) key.attrs = *attrs;
    uint64_t h = XXH3_64bits(&key, sizeof key);

    pthread_mutex_lock(&cache.mu);
    eentry *e = lookup(&key, h);
    if (e) {
        cache.stats.hits++;
    } else {
        cache.stats.misses++;
        st_attrs zero;
        memset(&zero, 0, sizeof zero);
        e = build(&key, h, op, in, nin, attrs ? attrs : &zero, given, be);
        if (!e || insert(e) != ST_OK) {
            if (e) entry_free(e);
            pthread_mutex_unlock(&cache.mu);
            goto fail_clones;
        }
    }
    pthread_mutex_unlock(&cache.mu);

    st_kprog *p = e->prog;
    st_graph *pg = p->graph;
    int nout = pg->noutputs;
    st_tensor *stackv[64];
    st_tensor **vals = pg->nvalues <= 64 ? stackv : calloc((size_t)pg->nvalues, sizeof *vals);
    if (!vals) {
        st_err(ST_ERR_MEMORY, "eager: out of host memory");
        goto fail_clones;
    }
    memset(vals, 0, sizeof *vals * (size_t)pg->nvalues);
    for (int k = 0; k < nin; k++) {
        int v = e->in_value[k];
        if (in[k].t) {
            st_tensor_incref(in[k].t);
            vals[v] = in[k].t;
        } else {
            pg->values[v].fconst = in[k].f;
            pg->values[v].iconst = in[k].i;
        }
    }
    bool copy_after[ST_MAX_OUT] = {false};
    if (given) {
        /* re-infer first so the dtype check sees this call's result */
        for (int k = 0; k < nout; k++) {
            if (!given[k]) continue;
            int v = pg->outputs[k];
            if (op != ST_OP_COPY && !can_cast(pg->values[v].meta.dtype, given[k]->dtype)) {
                st_err(ST_ERR_RUNTIME,
                       "%s: result type %s can't be cast to the desired "
                       "output type %s", st_op(op)->name,
                       dname(pg->values[v].meta.dtype), dname(given[k]->dtype));
                goto fail;
            }
            if (e->out_via_view[k] || vals[v]) {
                copy_after[k] = true;
            } else {
                st_tensor_incref(given[k]);
                vals[v] = given[k];
            }
        }
    }
    if (nout == 1 && int_div_by_zero(op, in, nin, pg->values[pg->outputs[0]].meta.dtype)) {
        st_err(ST_ERR_RUNTIME, "ZeroDivisionError");
        goto fail;
    }
    if (st_rt_exec(p, e->be, e->compiled, vals) != ST_OK) {
        /* a cached program is re-inferred in its lowered form; say a bad
         * call in the words of the op itself (only on this error path) */
        check_operands(op, in, nin, attrs);
        goto fail;
    }
    for (int k = 0; k < nout; k++) {
        int v = pg->outputs[k];
        out[k] = vals[v];
        vals[v] = NULL;
    }
    for (int v = 0; v < pg->nvalues; v++)
        if (vals[v]) st_tensor_decref(vals[v]);
    if (vals != stackv) free(vals);
    /* a result made as a view of a buffer only the program held (matmul
     * with a 1-D operand: a squeeze of the product) is no view: torch's is
     * a tensor of its own, which in-place ops may write under autograd */
    for (int k = 0; k < nout; k++)
        if (!given || !given[k])
            st_view_unbase(out[k]);
    if (rec && st_ad_record(op, in, nin, attrs, out, nout, given != NULL) != ST_OK) {
        for (int k = 0; k < nout; k++) st_tensor_decref(out[k]);
        goto fail_clones;
    }
    /* a computed tensor overwritten from operands that need no gradient
     * (y.copy_(c)): its old history must get none (a trace states the new
     * value as a statement of its own instead) */
    for (int k = 0; given && !rec && !st_rt_trace_active() && k < nout; k++)
        if (given[k] && !copy_after[k] && out[k] == given[k] &&
            st_ad_record_overwrite(op, given[k]) != ST_OK) {
            for (int j = 0; j < nout; j++) st_tensor_decref(out[j]);
            goto fail_clones;
        }
    stale_clones(clones, stale);
    for (int k = 0; k < ST_MAX_IN; k++) st_tensor_decref(clones[k]);
    for (int k = 0; k < nout; k++) {
        if (!copy_after[k]) continue;
        /* the result is a view (or an input): copy it into the given one */
        st_operand src = {.t = out[k]};
        st_tensor *g1[ST_MAX_OUT] = {given[k]};
        st_tensor *r = NULL;
        int n = st_rt_eager(ST_OP_COPY, &src, 1, NULL, g1, &r);
        st_tensor_decref(out[k]);
        out[k] = r;
        if (n < 0) {
            for (int j = 0; j < nout; j++)
                if (j != k && out[j]) st_tensor_decref(out[j]);
            return -1;
        }
    }
    return nout;
fail:
    for (int v = 0; v < pg->nvalues; v++)
        if (vals[v]) st_tensor_decref(vals[v]);
    if (vals != stackv) free(vals);
fail_clones:
    for (int k = 0; k < ST_MAX_IN; k++) st_tensor_decref(clones[k]);
    return -1;
}

st_tensor *st_rt_zeros_on(st_tensor *t, int ndim, const int64_t *shape, st_dtype dt)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    if (!st_dtype_is_float(dt))
        a.flags = ST_ATTR_INT_VALUE;
    st_tensor *z = NULL;
    if (st_tensor_numel(t) > 0) {
        int64_t st0[ST_MAX_DIMS] = {0};
        st_tensor *like = st_tensor_view_of(t, ndim, shape, st0, t->offset);
        st_operand ls = {.t = like};
        int n = like ? st_rt_eager(ST_OP_FULL, &ls, 1, &a, NULL, &z) : -1;
        st_tensor_decref(like);
        return n == 1 ? z : NULL;
    }
    for (int d = 0; d < ndim; d++)
        a.dims[d] = shape[d];
    a.ndims = ndim;
    return st_rt_eager(ST_OP_FULL, NULL, 0, &a, NULL, &z) == 1 ? z : NULL;
}
