/* exec.c - the executor: runs a lowered program (st_kprog) on tensors.
 * Binds graph values to tensors, re-infers sizes when the inputs' sizes
 * changed (kernels are not specialized on sizes), allocates results,
 * applies view steps, computes each kernel's launch arguments (sizes,
 * strides, params, random counters: reserved from the generator, or a
 * forward draw's again, st_kernel.rng_replay), launches, and releases intermediates
 * after their last use. */
#include "st_runtime.h"
#include <stdlib.h>
#include <string.h>

/* Launch arguments of kernel k from the tensors bound in vals. */
static st_status kargs_of(const st_kprog *p, const st_kernel *k,
                          st_tensor **vals, st_kargs *a) {
    const st_graph *g = p->graph;
    memset(a, 0, sizeof *a);
    for (int d = 0; d < k->rank; d++) {
        const st_kbuf *sb = &k->bufs[k->size_buf[d]];
        if (sb->unravel > 0) { /* sized as the reshape it reads */
            const st_meta *vm = &g->values[sb->view_value].meta;
            a->shape[d] = vm->ndim ? vm->shape[k->size_dim[d]] : 1;
            continue;
        }
        if (sb->slab) { /* sized as its slice: its slice_scatter's source */
            const st_meta *vm = &g->values[g->stmts[sb->slab_stmt].in[1]].meta;
            a->shape[d] = vm->ndim ? vm->shape[k->size_dim[d]] : 1;
            continue;
        }
        const st_tensor *t = vals[sb->value];
        a->shape[d] = t->ndim ? t->shape[k->size_dim[d]] : 1;
    }
    for (int b = 0; b < k->nbufs; b++) {
        const st_kbuf *kb = &k->bufs[b];
        const st_tensor *t = vals[kb->value];
        if (!t) return st_err(ST_ERR_RUNTIME, "%s: buffer %d is unbound",
                              k->name, b);
        st_karg_buf *ab = &a->bufs[b];
        ab->data = (char *)st_tensor_data(t);
        if (kb->unravel > 0) {
            if (t->ndim != kb->unravel)
                return st_err(ST_ERR_RUNTIME, "%s: buffer %d has rank %d, "
                              "not %d", k->name, b, t->ndim, kb->unravel);
            st_kernel_unravel_args(kb, k->rank, &g->values[kb->view_value].meta,
                                   t->shape, t->strides, ab);
            continue;
        }
        for (int d = 0; d < k->rank; d++) {
            int td = kb->dimmap[d];
            ab->strides[d] =
                (td < 0 || td >= t->ndim || t->shape[td] == 1) ? 0
                                                              : t->strides[td];
        }
        /* a store into the slice a slice_scatter replaces */
        if (kb->slab && st_kernel_slab_args(kb, k->rank, g, t->ndim, t->shape,
                                            t->strides, ab) != ST_OK)
            return st_err_kind();
    }
    for (int n = 0; n < k->nnodes; n++) {
        const st_knode *nd = &k->nodes[n];
        if (nd->kind == ST_KN_LOAD && nd->idx_dim >= 0) {
            const st_tensor *t = vals[k->bufs[nd->buf].value];
            if (nd->idx_dim < t->ndim) {
                a->bufs[nd->buf].idx_size = t->shape[nd->idx_dim];
                a->bufs[nd->buf].idx_stride = t->strides[nd->idx_dim];
            } else { /* a 0-d source indexed as a single element */
                a->bufs[nd->buf].idx_size = 1;
                a->bufs[nd->buf].idx_stride = 0;
            }
        }
    }
    for (int q = 0; q < k->nstores; q++) { /* indexed stores (scatter) */
        if (!k->stores[q].indexed) continue;
        int b = k->stores[q].buf, d = k->stores[q].idx_dim;
        const st_tensor *t = vals[k->bufs[b].value];
        if (d >= 0 && d < t->ndim) {
            a->bufs[b].idx_size = t->shape[d];
            a->bufs[b].idx_stride = t->strides[d];
        } else { /* a 0-d destination indexed as a single element */
            a->bufs[b].idx_size = 1;
            a->bufs[b].idx_stride = 0;
        }
    }
    for (int q = 0; q < k->nparams; q++) {
        int src = k->param_value[q];
        double f = 0;
        int64_t i = 0;
        if (src >= 0) {
            f = g->values[src].fconst;
            i = g->values[src].iconst;
        } else {
            const st_attrs *at = &g->stmts[k->param_stmt[q]].attrs;
            switch (src) {
            case ST_KPARAM_ATTR_F0: f = at->f[0]; i = (int64_t)f; break;
            case ST_KPARAM_ATTR_F1: f = at->f[1]; i = (int64_t)f; break;
            case ST_KPARAM_ATTR_I0: i = at->i[0]; f = (double)i; break;
            default: i = at->i[1]; f = (double)i; break;
            }
        }
        if (st_dtype_is_float(k->param_dtype[q])) a->params[q].f = f;
        else a->params[q].i = i;
    }
    if (k->rng_replay) { /* a checkpoint's recomputation: the forward's draw */
        uint64_t seed, off;
        if (!st_rt_rng_replay_base(&seed, &off))
            return st_err(ST_ERR_RUNTIME, "%s: replays a forward draw outside "
                          "the backward of a compiled forward run", k->name);
        a->rng_seed = seed;
        a->rng_offset = off + (uint64_t)g->stmts[k->rng_stmt].attrs.i[2];
    } else if (k->uses_rng) {
        uint64_t n = 1;
        for (int d = 0; d < k->rank; d++) n *= (uint64_t)a->shape[d];
        st_rt_rng_reserve(n, &a->rng_seed, &a->rng_offset);
    }
    return ST_OK;
}

static bool is_graph_output(const st_graph *g, int v) {
    for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == v) return true;
    return false;
}

/* Re-infers the program graph's metas when the bound inputs differ. */
static st_status bind_inputs(st_kprog *p, st_tensor **vals) {
    st_graph *g = p->graph;
    bool changed = false;
    for (int k = 0; k < g->ninputs; k++) {
        int v = g->inputs[k];
        const st_tensor *t = vals[v];
        /* an unbound input provides only its meta (a VJP graph reads the
         * shape of an operand it did not save); a kernel reading it fails
         * with "unbound" */
        if (!t) continue;
        st_meta *m = &g->values[v].meta;
        if (m->dtype != t->dtype || m->ndim != t->ndim)
            return st_err(ST_ERR_RUNTIME,
                          "input %d: the program was built for %s rank %d, "
                          "got %s rank %d", k, st_dtype_name(m->dtype),
                          m->ndim, st_dtype_name(t->dtype), t->ndim);
        if (memcmp(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim)) {
            memcpy(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
            changed = true;
        }
    }
    if (!changed) return ST_OK;
    st_status s = st_ir_reinfer(g);
    if (s != ST_OK) {
        /* the stored metas are now those of a failed call: poison them so
         * the next call infers again instead of trusting them */
        for (int k = 0; k < g->ninputs; k++) {
            st_meta *m = &g->values[g->inputs[k]].meta;
            for (int d = 0; d < m->ndim; d++) m->shape[d] = -1;
        }
    }
    return s;
}

static st_status exec_impl(st_kprog *p, st_backend *be, void *compiled,
                           st_tensor **vals, const st_mem_plan *plan,
                           int64_t *trace);

st_status st_rt_exec_bind(st_kprog *p, st_tensor **vals) {
    return bind_inputs(p, vals);
}

/* A program's own steps (views, kernels) are never recorded on the tape:
 * the caller records the op as a whole. */
st_status st_rt_exec(st_kprog *p, st_backend *be, void *compiled,
                     st_tensor **vals) {
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_rt_trace_suspend(); /* nor traced: a program's steps are its own */
    st_status s = exec_impl(p, be, compiled, vals, NULL, NULL);
    st_rt_trace_resume();
    st_ad_set_grad_enabled(was);
    return s;
}

st_status st_rt_exec_planned(st_kprog *p, st_backend *be, void *compiled,
                             st_tensor **vals, const st_mem_plan *plan,
                             int64_t *trace) {
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_rt_trace_suspend();
    st_status s = exec_impl(p, be, compiled, vals, plan, trace);
    st_rt_trace_resume();
    st_ad_set_grad_enabled(was);
    return s;
}

/* t has meta m's dtype and shape (a tensor that can stand as that value) */
static bool has_meta(const st_tensor *t, const st_meta *m) {
    return t->dtype == m->dtype && t->ndim == m->ndim &&
           !memcmp(t->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim);
}

/* Whether v is base's window that slice_scatter statement st replaces (a
 * view of base, as slice would make it), holding base as its view base. */
static bool is_window(const st_tensor *v, const st_tensor *base, const st_stmt *st) {
    if (!v || !base || v == base || v->view_base != base || v->storage != base->storage ||
        v->ndim != base->ndim || base->ndim == 0)
        return false;
    int64_t d = st->attrs.i[0] < 0 ? st->attrs.i[0] + base->ndim : st->attrs.i[0];
    int64_t start = st->attrs.i[1], stop = st->attrs.i[2], step = st->attrs.i[3];
    if (d < 0 || d >= base->ndim || step <= 0) return false;
    int64_t n = st_slice_bounds(base->shape[d], &start, &stop, step);
    if (v->offset != base->offset + start * base->strides[d]) return false;
    for (int k = 0; k < base->ndim; k++) {
        int64_t len = k == d ? n : base->shape[k];
        int64_t str = k == d ? base->strides[k] * step : base->strides[k];
        if (v->shape[k] != len || (len > 1 && v->strides[k] != str)) return false;
    }
    return true;
}

/* A slice_scatter's copy of its base that the plan marked as the window
 * of an outer in-place slice_scatter (plan.c nested_in_place): the result
 * is the base, a view, itself; false: run the copy after all. */
static bool alias_base(const st_graph *g, const st_kernel *k, st_tensor **vals) {
    const st_stmt *st = &g->stmts[k->src_stmt];
    int b = st->in[0], o = st->out[0];
    st_tensor *t = vals[b];
    const st_meta *m = &g->values[o].meta;
    if (!t || vals[o] || !has_meta(t, m))
        return false;
    st_tensor_incref(t);
    vals[o] = t;
    return true;
}

/* The slice of its base that slice_scatter statement si replaces, as a
 * view (the plan computes the source there: plan.c computed_in_window),
 * when it has meta m; NULL: allocate as usual. */
static st_tensor *window_of(const st_graph *g, int si, st_tensor **vals, const st_meta *m) {
    const st_stmt *st = &g->stmts[si];
    st_tensor *base = vals[st->in[0]];
    if (!base) return NULL;
    st_tensor *w = st_tensor_apply_view(base, ST_OP_SLICE, &st->attrs);
    if (!w) {
        st_err_clear();
        return NULL;
    }
    if (!has_meta(w, m)) {
        st_tensor_decref(w);
        return NULL;
    }
    return w;
}

/* A slab store (a slice_scatter's source into its slice) whose source
 * already lies there (same address, same strides): a copy onto itself. */
static bool store_onto_itself(const st_kernel *k, const st_kargs *a) {
    if (k->kind != ST_K_ELEMENTWISE || k->nstores != 1 || k->stores[0].indexed ||
        k->stores[0].accumulate)
        return false;
    int ob = k->stores[0].buf, n = k->stores[0].node;
    if (!k->bufs[ob].slab || n < 0 || n >= k->nnodes) return false;
    const st_knode *nd = &k->nodes[n];
    if (nd->kind == ST_KN_CAST && nd->a >= 0 && nd->dtype == k->nodes[nd->a].dtype)
        nd = &k->nodes[nd->a];
    if (nd->kind != ST_KN_LOAD || nd->idx_dim >= 0 || k->bufs[nd->buf].unravel > 0 ||
        k->bufs[nd->buf].dtype != k->bufs[ob].dtype)
        return false;
    const st_karg_buf *x = &a->bufs[nd->buf], *y = &a->bufs[ob];
    if (x->data != y->data) return false;
    for (int d = 0; d < k->rank; d++)
        if (a->shape[d] > 1 && x->strides[d] != y->strides[d]) return false;
    return true;
}

/* A kernel the plan marked in place (a scatter_add's or slice_scatter's
 * copy of a base no
 * later kernel reads): the result takes the base's tensor, when it is
 * whole and dense as the plan expected; false: run the copy after all. */
static bool take_base(const st_graph *g, const st_kernel *k, st_tensor **vals) {
    const st_stmt *st = &g->stmts[k->src_stmt];
    int b = st->in[0], o = st->out[0];
    st_tensor *t = vals[b];
    const st_meta *m = &g->values[o].meta;
    /* the source may hold the base, when it is the very window it replaces
     * (plan.c nested_in_place: it was computed in the base's storage) */
    int64_t refs = 1;
    if (st->op == ST_OP_SLICE_SCATTER && st->nin == 2 && is_window(vals[st->in[1]], t, st))
        refs = 2;
    if (!t || vals[o] || t->refcount != refs || !st_tensor_is_contiguous(t) || !has_meta(t, m))
        return false;
    vals[o] = t;
    vals[b] = NULL;
    return true;
}

/* A scatter's copy of its base into a given result that is the base
 * itself (same storage and layout: an eager in-place scatter, t[idx] = v
 * without autograd): nothing to copy, the second kernel writes in place. */
static bool copy_onto_itself(const st_graph *g, const st_kernel *k,
                             st_tensor **vals) {
    if (k->src_stmt < 0 || k->nstores != 1 || k->stores[0].indexed ||
        k->bufs[k->stores[0].buf].slab || !st_fuse_is_scatter(&g->stmts[k->src_stmt]))
        return false;
    const st_stmt *st = &g->stmts[k->src_stmt];
    const st_tensor *b = vals[st->in[0]], *o = vals[st->out[0]];
    return b && o && b->storage == o->storage && b->offset == o->offset &&
           b->dtype == o->dtype && b->ndim == o->ndim &&
           !memcmp(b->shape, o->shape, sizeof(int64_t) * (size_t)b->ndim) &&
           !memcmp(b->strides, o->strides, sizeof(int64_t) * (size_t)b->ndim);
}

/* The allocator's requested bytes before kernel i (a traced run). */
static void record(int64_t *trace, st_allocator *al, int i) {
    if (!trace) return;
    st_alloc_stats as;
    st_alloc_stats_get(al, &as);
    trace[i] = as.requested_bytes;
}

static st_status exec_impl(st_kprog *p, st_backend *be, void *compiled,
                           st_tensor **vals, const st_mem_plan *plan,
                           int64_t *trace) {
    st_graph *g = p->graph;
    st_status s = bind_inputs(p, vals);
    if (s != ST_OK) return s;
    st_device *dev = st_rt_device(be->device, 0);
    if (!dev) return st_err_kind();
    if (plan && (plan->nvalues != g->nvalues || plan->nkernels != p->nkernels))
        return st_err(ST_ERR_RUNTIME, "exec: the memory plan is for another program");
    st_allocator *al = trace ? st_alloc_for(dev) : NULL;
    /* one arena for the run's intermediates (the plan placed them) */
    st_storage *arena = NULL;
    if (plan && plan->arena_bytes > 0) {
        arena = st_storage_new(dev, (size_t)plan->arena_bytes);
        if (!arena) return st_err_kind();
    }

    /* last kernel using each value (views count as users of their input;
     * a view no kernel reads dies at its own step, as the plan has it: held
     * longer, it would keep a reshape's copy, or its root base's refcount
     * up, so that take_base could not take the base) */
    int lastbuf[256];
    int *last = g->nvalues <= 256 ? lastbuf : malloc(sizeof(int) * (size_t)g->nvalues);
    if (!last) {
        if (arena) st_storage_decref(arena);
        return st_err(ST_ERR_MEMORY, "exec: out of host memory");
    }
    for (int v = 0; v < g->nvalues; v++) last[v] = -1;
    /* versions, as torch's: a write into a tensor the caller gave (an
     * in-place or out= result) moves its storage's version on once a run;
     * memory this run allocated starts at its storage's version */
    uint8_t flagbuf[256];
    uint8_t *flags = g->nvalues <= 256 ? flagbuf : calloc((size_t)g->nvalues, 1);
    if (!flags) {
        if (last != lastbuf) free(last);
        if (arena) st_storage_decref(arena);
        return st_err(ST_ERR_MEMORY, "exec: out of host memory");
    }
    enum { V_FRESH = 1, V_BUMPED = 2 };
    if (flags == flagbuf) memset(flagbuf, 0, sizeof flagbuf);
    for (int i = 0; i < p->nkernels; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW) {
            const st_stmt *st = &g->stmts[k->stmt];
            for (int j = 0; j < st->nin; j++) last[st->in[j]] = i;
            last[st->out[0]] = i; /* later readers move it on */
        } else {
            for (int b = 0; b < k->nbufs; b++) last[k->bufs[b].value] = i;
        }
    }
    /* the values to release after each kernel, as lists (head[i], then
     * nxt[v]; ascending v): one pass over the values per run, not one per
     * kernel (a backward graph of thousands of kernels and values spent
     * more time scanning than in its kernels); graph outputs and constants
     * are never released here */
    int *head = malloc(sizeof(int) * ((size_t)p->nkernels + (size_t)g->nvalues + 1));
    if (!head) {
        if (last != lastbuf) free(last);
        if (flags != flagbuf) free(flags);
        if (arena) st_storage_decref(arena);
        return st_err(ST_ERR_MEMORY, "exec: out of host memory");
    }
    int *nxt = head + p->nkernels;
    for (int i = 0; i < p->nkernels; i++) head[i] = -1;
    for (int k = 0; k < g->noutputs; k++) nxt[g->outputs[k]] = -2;   /* marks */
    for (int v = g->nvalues - 1; v >= 0; v--) {
        bool out = nxt[v] == -2 && is_graph_output(g, v);
        nxt[v] = -1;
        if (last[v] < 0 || out || g->values[v].kind == ST_VAL_CONST) continue;
        nxt[v] = head[last[v]];
        head[last[v]] = v;
    }

    for (int i = 0; i < p->nkernels && s == ST_OK; i++) {
        const st_kernel *k = &p->kernels[i];
        if (k->kind == ST_K_VIEW) {
            const st_stmt *st = &g->stmts[k->stmt];
            st_tensor *src = vals[st->in[0]];
            if (!src) {
                s = st_err(ST_ERR_RUNTIME, "%s: input is unbound", k->name);
                break;
            }
            st_tensor *o = st_tensor_apply_view(src, st->op, &st->attrs);
            if (!o) {
                s = st_err_kind();
                break;
            }
            if (vals[st->out[0]]) st_tensor_decref(vals[st->out[0]]);
            vals[st->out[0]] = o;
            flags[st->out[0]] = flags[st->in[0]] & V_FRESH;
            /* after the view: a reshape that copies holds its copy while
             * this step runs (as a kernel's outputs are counted) */
            record(trace, al, i);
        } else if (copy_onto_itself(g, k, vals)) {
            record(trace, al, i); /* the second kernel writes (and bumps) */
        } else if (plan && plan->inview && plan->inview[i] && alias_base(g, k, vals)) {
            record(trace, al, i); /* a slice_scatter's copy skipped: its result is its base */
            const st_stmt *st = &g->stmts[k->src_stmt];
            flags[st->out[0]] = flags[st->in[0]] & V_FRESH;
        } else if (plan && plan->inplace[i] && take_base(g, k, vals)) {
            record(trace, al, i); /* a scatter's copy skipped: its result took the base */
            const st_stmt *st = &g->stmts[k->src_stmt];
            flags[st->out[0]] = flags[st->in[0]] & V_FRESH;
        } else {
            for (int b = 0; b < k->nbufs && s == ST_OK; b++) {
                const st_kbuf *kb = &k->bufs[b];
                if (!kb->is_out) continue;
                const st_meta *m = &g->values[kb->value].meta;
                st_tensor *t = vals[kb->value];
                if (t) { /* preallocated (an in-place or out= result) */
                    if (t->ndim != m->ndim ||
                        memcmp(t->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim)) {
                        char a[128], c[128];
                        s = st_err(ST_ERR_RUNTIME,
                                   "output with shape %s doesn't match the "
                                   "broadcast shape %s",
                                   st_shape_str(t->shape, t->ndim, a, sizeof a),
                                   st_shape_str(m->shape, m->ndim, c, sizeof c));
                    }
                    continue;
                }
                if (plan && plan->into && plan->into[kb->value] &&
                    (t = window_of(g, plan->into[kb->value] - 1, vals, m))) {
                    /* computed straight into the slice its slice_scatter replaces */
                    vals[kb->value] = t;
                    flags[kb->value] = flags[g->stmts[plan->into[kb->value] - 1].in[0]] & V_FRESH;
                    continue;
                }
                if (arena && plan->values[kb->value].arena)
                    t = st_tensor_in_storage(arena, m->dtype, m->ndim, m->shape,
                                             plan->values[kb->value].offset);
                else
                    t = st_tensor_empty(dev, m->dtype, m->ndim, m->shape);
                if (!t) s = st_err_kind();
                vals[kb->value] = t;
                flags[kb->value] = V_FRESH;
            }
            if (s != ST_OK) break;
            record(trace, al, i);
            st_kargs args;
            s = kargs_of(p, k, vals, &args);
            if (s == ST_OK && store_onto_itself(k, &args)) {
                /* nothing to move (the version still moves on below) */
            } else if (s == ST_OK) {
                bool prof = st_rt_profile_on();
                st_rt_profile_mark t0 = {0, 0};
                if (prof) t0 = st_rt_profile_start();
                s = be->launch(be, compiled, i, &args);
                if (prof) {
                    int64_t pts = 1;
                    for (int d = 0; d < k->rank; d++) pts *= args.shape[d];
                    st_rt_profile_stop(&t0, p, i, k->name, k->kind, pts);
                }
            }
            for (int b = 0; b < k->nbufs; b++) {
                int v = k->bufs[b].value;
                if (k->bufs[b].is_out && vals[v] && !flags[v]) {
                    if (!vals[v]->own_version)
                        vals[v]->storage->version++;
                    flags[v] = V_BUMPED;
                }
            }
        }
        /* release intermediates whose last use was this kernel, and the
         * run's reference to such inputs (freed here when the caller
         * donated its own, as a backward that does not retain does) */
        for (int v = head[i]; v >= 0; v = nxt[v]) {
            if (!vals[v]) continue;
            st_tensor_decref(vals[v]);
            vals[v] = NULL;
        }
    }
    free(head);
    if (last != lastbuf) free(last);
    if (flags != flagbuf) free(flags);
    if (arena) st_storage_decref(arena); /* freed with its last tensor */
    return s;
}
