/* eager.c - eager op dispatch and its kernel cache. An eager op is a
 * one-node StatementIR graph lowered by fusion/ and compiled by the eager
 * backend, like any graph (DESIGN.md: one path from graph to kernels). The
 * compiled program is cached under a key of (op, attrs, operand dtypes,
 * ranks and layouts); sizes and Python scalar values are not in the key:
 * sizes are re-inferred per call, scalars arrive as kernel parameters. */
#include "st_runtime.h"
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
    if (!cache.be) cache.be = st_backend_get("interp");
    return cache.be;
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
    st_fuse_options fo = {0};
    st_kprog *p = st_fuse_lower(g, &fo);
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

int st_rt_eager(st_op_id op, const st_operand *in, int nin,
                const st_attrs *attrs, st_tensor **given, st_tensor **out) {
    if ((unsigned)op >= ST_NOPS)
        return st_err(ST_ERR_VALUE, "eager: unknown op %d", (int)op), -1;
    if (nin < 0 || nin > ST_MAX_IN)
        return st_err(ST_ERR_VALUE, "%s: too many operands (%d)",
                      st_op(op)->name, nin), -1;
    st_backend *be = eager_backend();
    if (!be) return -1;
    for (int k = 0; k < nin; k++)
        if (in[k].t && st_tensor_device(in[k].t)->type != be->device)
            return st_err(ST_ERR_RUNTIME,
                          "%s: operand %d is on %s but the eager backend '%s' "
                          "runs on another device", st_op(op)->name, k,
                          st_tensor_device(in[k].t)->name, be->name), -1;

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
            return -1;
        }
    }
    pthread_mutex_unlock(&cache.mu);

    st_kprog *p = e->prog;
    st_graph *pg = p->graph;
    int nout = pg->noutputs;
    st_tensor *stackv[64];
    st_tensor **vals = pg->nvalues <= 64 ? stackv : calloc((size_t)pg->nvalues, sizeof *vals);
    if (!vals) return st_err(ST_ERR_MEMORY, "eager: out of host memory"), -1;
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
    if (st_rt_exec(p, e->be, e->compiled, vals) != ST_OK) goto fail;
    for (int k = 0; k < nout; k++) {
        int v = pg->outputs[k];
        out[k] = vals[v];
        vals[v] = NULL;
    }
    for (int v = 0; v < pg->nvalues; v++)
        if (vals[v]) st_tensor_decref(vals[v]);
    if (vals != stackv) free(vals);
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
    return -1;
}
