/* runtime/trace.c - trace capture: while a trace is active on a thread,
 * every eager op (st_rt_eager) and every view function (runtime/view.c)
 * that runs at the outermost level appends its statement to a trace graph,
 * as a by-product of running normally. Owns st_rt_trace_* (begin, end,
 * end2, abort, note, fail, failed, will_write, suspend/resume, and the
 * PyLayer region capture).
 *
 * Mapping: a hash map from st_tensor* to the value id that tensor holds now
 * (holding a reference, so no pointer is reused while tracing). A tensor
 * first seen as an operand becomes a graph input (a param when it is a leaf
 * that requires grad); Python scalars become constants. An in-place result
 * (a given tensor) is a new value the tensor maps to from then on (SSA).
 * An in-place write into a view (or into a base that has views) is written
 * through: the base's new value is stated with primitives (see "writes
 * through views") and the other views are derived again; an alias the
 * trace did not make (detach, two inputs sharing storage) fails the trace,
 * as do custom autograd nodes made outside a PyLayer capture; a failed
 * trace keeps running eagerly and st_rt_trace_end reports the first
 * reason. Tensors allocated uninitialized while tracing (_C.empty) are
 * zeros made by the graph (st_rt_trace_fresh). Nested runs (ops
 * inside an eager op, programs run by the autograd engine) are not traced:
 * callers bracket them with st_rt_trace_suspend/resume.
 *
 * In-place writes into tensors the trace did not create (st_rt_eager calls
 * st_rt_trace_will_write before writing into a given tensor): the storage
 * is copied first (once), so st_rt_trace_abort, or an end that fails, can
 * put it back; the tensor becomes an input if it was not one, and
 * st_rt_trace_end2 reports the inputs whose value changed.
 *
 * Ops run under no_grad are marked as stop-gradient regions of the graph
 * (st_ir_region without bwd): the backward graph sends no gradient through
 * them, as eager autograd records nothing for them. A PyLayer inside a
 * translation (frontend/pylayer_trace.c) is a region with a backward:
 * st_rt_trace_region_begin, the forward runs (traced into the graph),
 * st_rt_trace_region_backward switches to a sub-trace whose inputs are the
 * output gradients and then the values the backward reads, the backward
 * runs, st_rt_trace_region_end registers the region. The final dead-code
 * pass keeps regions (remapped) and the values their backward reads.
 *
 * A dropout the tape records is traced through the ops it is recorded as
 * (runtime/eager.c runs them unsuspended: rand, ge, mul, where), so the
 * backward graph sees differentiable statements and saves the bool keep
 * mask; one it does not record stays the composite. */
#include "st_runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    st_tensor *t;   /* owned reference; NULL = empty slot */
    int value;
    bool created;   /* a fresh result of a traced op (its storage is ours) */
    /* a traced view: t = vop(vsrc) (vsrc is in the map, so alive) */
    st_tensor *vsrc;
    st_op_id vop;
    st_attrs vattrs;
    bool vdetach;   /* the view is a detach: no gradient crosses it */
    int64_t seq;    /* insertion order */
    bool konst;     /* an input made from shapes and code constants
                       (st_rt_trace_constant): safe to keep as it is */
} tslot;

typedef struct {
    st_storage *orig, *copy;   /* owned references */
    bool loud;                 /* written through a tensor that is no .data
                                  alias (st_tensor.own_version): the
                                  writeback moves the version */
} backup;

/* A tensor's geometry and history before an in-place view op. */
typedef struct {
    st_tensor *t;              /* owned reference */
    int ndim, output_nr;
    int64_t offset, shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    struct st_ad_node *grad_fn;   /* owned reference */
    bool requires_grad;
    uint32_t hist, base_hist;
} geo_backup;

typedef struct trace_state {
    st_graph *g;
    tslot *slots;
    size_t cap, n;
    st_tensor **inputs;   /* owned, in graph input order */
    bool *in_rg;          /* inputs[k]->requires_grad when first read (an
                             in-place write with w may set it later) */
    int ninputs, cap_inputs;
    bool failed;
    char reason[256];
    backup *bk;           /* storages copied before an in-place write */
    int nbk, cap_bk;
    geo_backup *geo;      /* geometries before an in-place view op */
    int ngeo, cap_geo;
    bool symbolic;        /* sizes are symbolic (st_rt_trace_symbolic) */
    int *replay;          /* replay[i]: the view statement that statement i
                             remakes after a write (view_of_input), or -1 */
    int cap_replay;
    bool grad_seen;       /* an op was noted while grad mode was on */
    /* PyLayer capture: in_region while its forward or backward runs (no
     * stop-gradient marking then); rg_* describe the region being built */
    bool in_region;
    int rg_first, rg_end, rg_nin, rg_nout;
    int *rg_in, *rg_out;
    struct trace_state *parent;   /* a sub-trace (a PyLayer backward) */
    struct trace_state *sub;
    int64_t nseq;
    size_t sweep_at;      /* slots in use when the next sweep runs */
    size_t cand, cand_bytes;   /* tensors released to the trace alone */
} trace_state;

static _Thread_local trace_state *cur;

static trace_state *root_of(trace_state *s);
static _Thread_local int suspended;

static size_t hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static tslot *find(trace_state *s, const st_tensor *t)
{
    if (!s->cap)
        return NULL;
    for (size_t i = hash_ptr(t) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slots[i].t)
            return NULL;
        if (s->slots[i].t == t)
            return &s->slots[i];
    }
}

static void failf(trace_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void failf(trace_state *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    s->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
}

/* Sweeps: a slot nothing can name again is dropped. That is a tensor the
 * trace alone holds whose storage only such tensors share (a dead base
 * with its dead views goes as one group; a live view, a saved alias or a
 * backup keeps the whole storage). Holding them kept every intermediate
 * of a traced call alive until the trace ended, so a first call (which
 * runs eagerly while it is traced) peaked far above the compiled runs.
 * Their graph values stay; only the tensors go. st_tensor_decref reports
 * each traced tensor left to the trace alone (st_rt_trace_released);
 * map_set sweeps once 64 MiB or n/64 of them are pending, and every n/2
 * inserts in any case (a group whose last member went without a report).
 * A sweep is O(slots), so O(1) amortized an insert. */
#define SWEEP_BYTES ((size_t)64 << 20)

typedef struct {
    const st_storage *st;
    int64_t n;           /* slots of tensors held by the trace alone */
} stcount;

static stcount *count_of(stcount *tab, size_t cap, const st_storage *st)
{
    size_t i = hash_ptr(st) & (cap - 1);
    while (tab[i].st && tab[i].st != st)
        i = (i + 1) & (cap - 1);
    tab[i].st = st;
    return &tab[i];
}

/* Moves the slots into a new table of nc entries; with tab (a sweep's
 * counts), dead ones are released instead. false: out of memory (s as
 * it was). */
static bool rehash(trace_state *s, size_t nc, stcount *tab)
{
    tslot *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return false;
    for (size_t i = 0; i < s->cap; i++) {
        tslot *e = &s->slots[i];
        if (!e->t)
            continue;
        if (tab && e->t->refcount == 1 && e->t->storage &&
            count_of(tab, s->cap, e->t->storage)->n == e->t->storage->refcount) {
            e->t->traced = false;
            st_tensor_decref(e->t);
            s->n--;
            continue;
        }
        size_t j = hash_ptr(e->t) & (nc - 1);
        while (ns[j].t)
            j = (j + 1) & (nc - 1);
        ns[j] = *e;
    }
    free(s->slots);
    s->slots = ns;
    s->cap = nc;
    return true;
}

static void sweep(trace_state *s)
{
    s->cand = 0;
    s->cand_bytes = 0;
    stcount *tab = s->cap ? calloc(s->cap, sizeof *tab) : NULL;
    if (!tab) /* nothing mapped, or no memory: keep them (only memory is at stake) */
        return;
    for (size_t i = 0; i < s->cap; i++) {
        const st_tensor *t = s->slots[i].t;
        if (t && t->refcount == 1 && t->storage)
            count_of(tab, s->cap, t->storage)->n++;
    }
    rehash(s, s->cap, tab);
    free(tab);
}

void st_rt_trace_released(st_tensor *t)
{
    trace_state *s = cur;
    if (!s || !t->storage)
        return;
    s->cand++;
    s->cand_bytes += t->storage->nbytes;
}

/* Maps t to value v (inserting t with a reference, or updating it). */
static bool map_set(trace_state *s, st_tensor *t, int v, bool created)
{
    tslot *e = find(s, t);
    if (e) {
        e->value = v;
        return true;
    }
    if (s->n >= s->sweep_at ||
        (s->cand && (s->cand_bytes >= SWEEP_BYTES || s->cand * 64 >= s->n))) {
        sweep(s);
        s->sweep_at = s->n + s->n / 2 + 64;
    }
    if ((s->n + 1) * 2 > s->cap && !rehash(s, s->cap ? s->cap * 2 : 256, NULL)) {
        failf(s, "out of host memory");
        return false;
    }
    size_t j = hash_ptr(t) & (s->cap - 1);
    while (s->slots[j].t)
        j = (j + 1) & (s->cap - 1);
    st_tensor_incref(t);
    t->traced = true;
    s->slots[j].t = t;
    s->slots[j].value = v;
    s->slots[j].created = created;
    s->slots[j].vsrc = NULL;
    s->slots[j].vdetach = false;
    s->slots[j].konst = false;
    s->slots[j].seq = s->nseq++;
    s->n++;
    return true;
}

/* The value t holds: its mapped value, or a new graph input. */
static int value_of(trace_state *s, st_tensor *t)
{
    tslot *e = find(s, t);
    if (e)
        return e->value;
    if (s->ninputs == s->cap_inputs) {
        int nc = s->cap_inputs ? s->cap_inputs * 2 : 16;
        st_tensor **ni = realloc(s->inputs, sizeof *ni * (size_t)nc);
        if (ni)
            s->inputs = ni;
        bool *nr = ni ? realloc(s->in_rg, sizeof *nr * (size_t)nc) : NULL;
        if (!nr) {
            failf(s, "out of host memory");
            return -1;
        }
        s->in_rg = nr;
        s->cap_inputs = nc;
    }
    /* a new input whose storage the trace has written into through
     * another tensor (v, a view of x made before the call, read after
     * x.clamp_()): the graph would read its value from before the write */
    trace_state *r = root_of(s);
    for (int k = 0; t->storage && k < r->nbk; k++)
        if (r->bk[k].orig == t->storage) {
            failf(s, "reading a tensor that shares storage with a tensor written "
                  "in place earlier in the graph, through no traced view");
            return -1;
        }
    st_meta m;
    st_tensor_meta(t, &m);
    bool param = t->requires_grad && !t->grad_fn;
    int v = st_ir_add_input(s->g, &m, param);
    if (v < 0) {
        failf(s, "input: %s", st_err_msg());
        st_err_clear();
        return -1;
    }
    if (!map_set(s, t, v, false))
        return -1;
    st_tensor_incref(t);
    s->in_rg[s->ninputs] = t->requires_grad;
    s->inputs[s->ninputs++] = t;
    return v;
}

/* Frees s and its open sub-traces; backups are dropped (see restore). */
static void state_free(trace_state *s)
{
    while (s) {
        trace_state *next = s->sub;
        for (size_t i = 0; i < s->cap; i++) {
            if (s->slots[i].t)
                s->slots[i].t->traced = false;
            st_tensor_decref(s->slots[i].t);
        }
        free(s->slots);
        for (int k = 0; k < s->ninputs; k++)
            st_tensor_decref(s->inputs[k]);
        free(s->inputs);
        free(s->in_rg);
        for (int k = 0; k < s->nbk; k++) {
            st_storage_decref(s->bk[k].orig);
            st_storage_decref(s->bk[k].copy);
        }
        free(s->bk);
        for (int k = 0; k < s->ngeo; k++) {
            st_tensor_decref(s->geo[k].t);
            if (s->geo[k].grad_fn)
                st_ad_node_decref(s->geo[k].grad_fn);
        }
        free(s->geo);
        free(s->replay);
        free(s->rg_in);
        free(s->rg_out);
        st_ir_graph_free(s->g);
        free(s);
        s = next;
    }
}

/* Puts back the storages copied before in-place writes, and (latest
 * first) the geometries changed by in-place view ops. */
static void restore(trace_state *s)
{
    for (int k = s->ngeo - 1; k >= 0; k--) {
        geo_backup *b = &s->geo[k];
        st_tensor *t = b->t;
        t->ndim = b->ndim;
        t->offset = b->offset;
        memcpy(t->shape, b->shape, sizeof t->shape);
        memcpy(t->strides, b->strides, sizeof t->strides);
        if (t->grad_fn != b->grad_fn) {
            if (b->grad_fn)
                st_ad_node_incref(b->grad_fn);
            if (t->grad_fn)
                st_ad_node_decref(t->grad_fn);
            t->grad_fn = b->grad_fn;
            /* the history its views were made against is back (views made
             * while tracing, after the write, see a change): a split output
             * of it is no view of a modified base (viewhist.c) */
            t->hist = b->hist;
        }
        /* a view refreshed while tracing (its grad_fn put back above)
         * must not look fresh against its base's history put back too:
         * a later write of the same count would leave the old grad_fn */
        t->base_hist = b->base_hist;
        t->output_nr = b->output_nr;
        t->requires_grad = b->requires_grad;
        if (!t->own_version)
            t->storage->version++;
    }
    /* a storage written only through .data aliases kept its version, as
     * eager's (the run's writeback is quiet too): a tensor saved for
     * backward before the graph is no stale one */
    for (int k = 0; k < s->nbk; k++) {
        st_storage *o = s->bk[k].orig, *c = s->bk[k].copy;
        if (o->device->copy(o->device, o->data, c->data, o->nbytes) == ST_OK && s->bk[k].loud)
            o->version++;
    }
}

static trace_state *root_of(trace_state *s)
{
    while (s && s->parent)
        s = s->parent;
    return s;
}

st_status st_rt_trace_begin(void)
{
    if (cur)
        return st_err(ST_ERR_RUNTIME, "trace_begin: a trace is already "
                      "active on this thread");
    trace_state *s = calloc(1, sizeof *s);
    if (!s || !(s->g = st_ir_graph_new())) {
        free(s);
        return st_err(ST_ERR_MEMORY, "trace_begin: out of host memory");
    }
    st_ir_autodiff_init();
    st_ad_traced_saves_clear();
    cur = s;
    suspended = 0;
    return ST_OK;
}

bool st_rt_trace_active(void)
{
    return cur != NULL && suspended == 0;
}

bool st_rt_trace_grad_seen(void)
{
    return cur != NULL && cur->grad_seen;
}

void st_rt_trace_suspend(void)
{
    suspended++;
}

void st_rt_trace_resume(void)
{
    if (suspended > 0)
        suspended--;
}

/* Nested work (suspended) is not part of the trace: nothing to fail. */
void st_rt_trace_fail(const char *reason)
{
    trace_state *r = root_of(cur);
    if (r && !suspended)
        failf(r, "%s", reason ? reason : "unknown reason");
}

void st_rt_trace_abort(void)
{
    trace_state *r = root_of(cur);
    if (r) {
        bool was = st_ad_grad_enabled();
        st_ad_set_grad_enabled(false);
        restore(r);
        st_ad_set_grad_enabled(was);
    }
    state_free(r);
    cur = NULL;
    suspended = 0;
}

/* Does a tensor created by a traced op of s own this storage? */
static bool created_storage(trace_state *s, const st_storage *st)
{
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].t && s->slots[i].created &&
            s->slots[i].t->storage == st)
            return true;
    return false;
}

void st_rt_trace_will_write(st_tensor *t)
{
    trace_state *s = cur;
    if (!s || suspended || !t || !t->storage)
        return;
    tslot *e = find(s, t);
    if ((e && e->created) || created_storage(s, t->storage)) {
        /* a value of the graph that a recorded node saved: the graph ends
         * before the write (an input written in place is the compiled
         * node's to check: runtime/cfn.c) */
        st_ad_trace_will_write(t);
        return;
    }
    if (s->parent) {
        failf(s, "a PyLayer backward writes in place into a tensor it did "
              "not create");
        failf(root_of(s), "%s", s->reason);
    }
    /* its history (and its base's: a write through a view) changes with
     * the write: an abort puts them back with the data, or the compiled
     * run that replaces this eager one would stack its history on this
     * one's (t.add_(w) counted twice) */
    st_rt_trace_will_reshape(t);
    if (t->view_base)
        st_rt_trace_will_reshape(t->view_base);
    /* an external tensor written in place is an input of the graph (its
     * value before the write), so end2 reports its new value; made before
     * the backup below, which would make it read as an alias of a written
     * storage. The backup is taken in any case: the write happens. */
    if (!s->failed && !find(s, t))
        value_of(s, t);
    /* an input whose elements overlap (an expanded tensor) written through
     * a view of it (v[:1].mul_(2)): the graph's writeback would copy a
     * whole new value into it, which no copy can store */
    for (int k = 0; !s->failed && k < s->ninputs; k++)
        if (s->inputs[k]->storage == t->storage &&
            st_tensor_may_overlap(s->inputs[k], true))
            failf(s, "an in-place write into an input whose elements overlap "
                  "(an expanded tensor)");
    trace_state *r = root_of(s);
    bool have = false;
    for (int k = 0; k < r->nbk && !have; k++)
        if ((have = r->bk[k].orig == t->storage))
            r->bk[k].loud |= !t->own_version;
    if (!have) {
        st_storage *o = t->storage;
        if (r->nbk == r->cap_bk) {
            int nc = r->cap_bk ? r->cap_bk * 2 : 8;
            backup *nb = realloc(r->bk, sizeof *nb * (size_t)nc);
            if (!nb) {
                failf(r, "out of host memory");
                return;
            }
            r->bk = nb;
            r->cap_bk = nc;
        }
        st_status es = st_err_kind();
        st_storage *c = st_storage_new(o->device, o->nbytes);
        if (!c || o->device->copy(o->device, c->data, o->data, o->nbytes)
                      != ST_OK) {
            failf(r, "cannot copy a tensor before an in-place write, so an "
                  "aborted trace could not restore it");
            st_storage_decref(c);
            if (es == ST_OK)
                st_err_clear();
            return;
        }
        st_storage_incref(o);
        r->bk[r->nbk].orig = o;
        r->bk[r->nbk].loud = !t->own_version;
        r->bk[r->nbk++].copy = c;
    }
}

void st_rt_trace_symbolic(void)
{
    trace_state *r = root_of(cur);
    if (r)
        r->symbolic = true;
}

void st_rt_trace_will_reshape(st_tensor *t)
{
    trace_state *r = root_of(cur);
    if (!r || suspended || !t)
        return;
    for (int k = 0; k < r->ngeo; k++)
        if (r->geo[k].t == t)
            return;   /* the first state is the one an abort puts back */
    if (r->ngeo == r->cap_geo) {
        int nc = r->cap_geo ? r->cap_geo * 2 : 4;
        geo_backup *ng = realloc(r->geo, sizeof *ng * (size_t)nc);
        if (!ng) {
            failf(r, "out of host memory");
            return;
        }
        r->geo = ng;
        r->cap_geo = nc;
    }
    geo_backup *b = &r->geo[r->ngeo++];
    st_tensor_incref(t);
    b->t = t;
    b->ndim = t->ndim;
    b->offset = t->offset;
    memcpy(b->shape, t->shape, sizeof b->shape);
    memcpy(b->strides, t->strides, sizeof b->strides);
    b->grad_fn = t->grad_fn;
    if (b->grad_fn)
        st_ad_node_incref(b->grad_fn);
    b->output_nr = t->output_nr;
    b->requires_grad = t->requires_grad;
    b->hist = t->hist;
    b->base_hist = t->base_hist;
}

/* True when another traced tensor shares t's storage (a view or base). */
static bool aliased(trace_state *s, const st_tensor *t)
{
    if (t->is_view)
        return true;
    for (size_t i = 0; i < s->cap; i++) {
        const st_tensor *o = s->slots[i].t;
        if (o && o != t && o->storage == t->storage)
            return true;
    }
    return false;
}

/* Appends op(in) and returns its result value, or -1 (trace failed). */
static int emit(trace_state *s, st_op_id op, const int *in, int nin,
                const st_attrs *attrs, int *outs)
{
    st_attrs z;
    memset(&z, 0, sizeof z);
    if (st_ir_add_stmt(s->g, op, in, nin, attrs ? attrs : &z, outs) < 0) {
        failf(s, "%s: %s", st_op(op)->name, st_err_msg());
        st_err_clear();
        return -1;
    }
    return outs[0];
}

/* ---- writes through views ----
 * An in-place write into a view changes its base (and every other view of
 * that storage). The base's new value is stated with primitives: for a
 * slice, slice_scatter(base, new_view) (fusion writes a traced cat's parts
 * straight into their slices); for reshape/squeeze/unsqueeze, a reshape
 * back; for permute, the inverse
 * permute. Then every other traced view of the storage is derived again
 * from its source's new value (in creation order). What has no known path
 * to the base (an alias from elsewhere, expand) fails the trace. */
static int emit1(trace_state *s, st_op_id op, int a, int b, int c, int n,
                 const st_attrs *at)
{
    int in[3] = {a, b, c}, outs[ST_MAX_OUT];
    return emit(s, op, in, n, at, outs);
}

/* The new value of src when its view e (e->vop of src) now holds value nv. */
static int inverse_view(trace_state *s, const tslot *e, int nv)
{
    const st_tensor *src = e->vsrc;
    int sv = find(s, src) ? find(s, src)->value : -1;
    if (sv < 0)
        return -1;
    /* copies: emitting statements may move the value array */
    const st_meta smv = s->g->values[sv].meta, *sm = &smv;
    switch (e->vop) {
    case ST_OP_RESHAPE:
    case ST_OP_SQUEEZE:
    case ST_OP_UNSQUEEZE: {
        st_attrs a;
        memset(&a, 0, sizeof a);
        a.ndims = sm->ndim;
        for (int d = 0; d < sm->ndim; d++)
            a.dims[d] = sm->shape[d];
        return emit1(s, ST_OP_RESHAPE, nv, 0, 0, 1, &a);
    }
    case ST_OP_PERMUTE: {
        st_attrs a;
        memset(&a, 0, sizeof a);
        a.ndims = e->vattrs.ndims;
        for (int d = 0; d < a.ndims; d++)
            a.dims[e->vattrs.dims[d]] = d;
        return emit1(s, ST_OP_PERMUTE, nv, 0, 0, 1, &a);
    }
    case ST_OP_SLICE: {
        const st_meta vmv = s->g->values[nv].meta, *vm = &vmv;
        if (vm->ndim != sm->ndim || e->vattrs.i[3] <= 0)
            return -1;
        int64_t d = e->vattrs.i[0] < 0 ? e->vattrs.i[0] + sm->ndim : e->vattrs.i[0];
        if (d < 0 || d >= sm->ndim)
            return -1;
        if (vm->shape[d] == 0)
            return sv; /* an empty slice writes nothing */
        /* the base with the slice replaced: slice_scatter(base, new) */
        return emit1(s, ST_OP_SLICE_SCATTER, sv, nv, 0, 2, &e->vattrs);
    }
    default:
        return -1;
    }
}

static int by_seq(const void *a, const void *b)
{
    const tslot *x = *(tslot *const *)a, *y = *(tslot *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Slot o holds another tensor of storage stg than cur, not on the chain of
 * views a write went through. */
static bool other_view(const tslot *o, const st_tensor *cur, const st_storage *stg,
                       st_tensor *const *chain, int nchain)
{
    if (!o->t || o->t == cur || o->t->storage != stg)
        return false;
    for (int k = 0; k < nchain; k++)
        if (chain[k] == o->t)
            return false;
    return true;
}

static void mark_nograd(trace_state *s, int first, int end);
static void note_replay(trace_state *s, int from, int to, int orig);

/* x - sg (sg: x's value under a stop-gradient reshape) as an exact zero
 * that carries x's gradient: where(z == 0, z, 0) with z = x - sg. x - x
 * alone is NaN where x is NaN or inf, and that NaN would land in the
 * written value; there the gradient into x is 0, not the incoming one. */
static int zero_keeping_grad(trace_state *s, int x, int sg)
{
    int z = emit1(s, ST_OP_SUB, x, sg, 0, 2, NULL);
    if (z < 0)
        return -1;
    st_dtype dt = s->g->values[z].meta.dtype;
    int zc = st_ir_add_const(s->g, dt, 0.0, 0);
    if (zc < 0) {
        failf(s, "constant: %s", st_err_msg());
        st_err_clear();
        return -1;
    }
    int c = emit1(s, ST_OP_EQ, z, zc, 0, 2, NULL);
    return c < 0 ? -1 : emit1(s, ST_OP_WHERE, c, z, zc, 3, NULL);
}

/* A write through a detached alias (x.detach().add_(1)) changes src's data
 * but not its history: eager autograd still sends src's gradient where it
 * went before the write, and nothing into what was written. src's new
 * value becomes stop_gradient(nv) + zero_keeping_grad(old): exactly nv,
 * with old's gradient when src requires grad (none otherwise). */
static int detached_write(trace_state *s, const st_tensor *src, int nv)
{
    tslot *e = find(s, src);
    int old = e ? e->value : -1, first = s->g->nstmts;
    /* copies: emitting statements may move the value array */
    const st_meta m = s->g->values[nv].meta;
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = m.ndim;
    for (int d = 0; d < m.ndim; d++)
        a.dims[d] = m.shape[d];
    bool grad = old >= 0 && src->requires_grad && st_dtype_is_float(src->dtype);
    int sv = emit1(s, ST_OP_RESHAPE, nv, 0, 0, 1, &a);
    int so = grad && sv >= 0 ? emit1(s, ST_OP_RESHAPE, old, 0, 0, 1, &a) : -1;
    if (sv < 0 || (grad && so < 0))
        return -1;
    if (!s->in_region)
        mark_nograd(s, first, s->g->nstmts);
    if (!grad)
        return sv;
    int z = zero_keeping_grad(s, old, so);
    int r = z < 0 ? -1 : emit1(s, ST_OP_ADD, sv, z, 0, 2, NULL);
    /* its data is nv's: a compiled run returns it in nv's storage */
    int p = r >= 0 && !s->in_region ? s->g->values[sv].producer : -1;
    if (p >= 0 && s->g->stmts[p].op == ST_OP_RESHAPE)
        s->g->stmts[p].attrs.flags |= ST_VIEW_DETACHED;
    return r;
}

static bool write_through(trace_state *s, st_tensor *t)
{
    /* up the chain: each source gets its new value */
    st_tensor *cur = t, *chain[64];
    int nchain = 0;
    tslot *e = find(s, cur);
    while (e && e->vsrc) {
        if (nchain == 64) {
            failf(s, "a write through more than 64 nested views");
            return false;
        }
        chain[nchain++] = cur;
        int nv = inverse_view(s, e, e->value);
        if (nv < 0) {
            failf(s, "%s: an in-place write through this view into its base "
                  "cannot be traced", st_op(e->vop)->name);
            return false;
        }
        cur = e->vsrc;
        if (e->vdetach && (nv = detached_write(s, cur, nv)) < 0)
            return false;
        if (!map_set(s, cur, nv, false))
            return false;
        e = find(s, cur);
    }
    /* cur is the base: re-derive every other view of its storage, in
     * creation order, that can still be named: one something outside the
     * trace holds, or the source of such a one. A view only the trace
     * holds (a cat's slice views, written and dropped one by one) keeps
     * its old value, as no op can read it again: re-deriving all of them
     * made n writes into n slices O(n^2) statements. */
    const st_storage *stg = cur->storage;
    size_t nc = 0;
    for (size_t i = 0; i < s->cap; i++) {
        tslot *o = &s->slots[i];
        if (!other_view(o, cur, stg, chain, nchain))
            continue;
        if (!o->vsrc) {
            failf(s, "an in-place write into a tensor whose storage another "
                  "traced tensor shares without a traced view between them "
                  "cannot be traced");
            return false;
        }
        nc++;
    }
    if (nc == 0)
        return true;
    tslot **cand = malloc(sizeof *cand * nc);
    bool *need = calloc(s->cap, sizeof *need);   /* per slot */
    if (!cand || !need) {
        free(cand);
        free(need);
        failf(s, "out of memory tracing a write through a view");
        return false;
    }
    nc = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (other_view(&s->slots[i], cur, stg, chain, nchain))
            cand[nc++] = &s->slots[i];
    qsort(cand, nc, sizeof *cand, by_seq);
    for (size_t i = nc; i-- > 0;) {
        tslot *o = cand[i];
        if (o->t->refcount > 1)
            need[o - s->slots] = true;
        tslot *src = need[o - s->slots] ? find(s, o->vsrc) : NULL;
        if (src)
            need[src - s->slots] = true;
    }
    bool ok = true;
    for (size_t i = 0; i < nc && ok; i++) {
        tslot *next = cand[i];
        if (!need[next - s->slots])
            continue;
        tslot *src = find(s, next->vsrc);
        int in = src ? src->value : -1, outs[ST_MAX_OUT];
        int first = s->g->nstmts;
        int was = next->value >= 0 ? s->g->values[next->value].producer : -1;
        int v = in < 0 ? -1 : emit(s, next->vop, &in, 1, &next->vattrs, outs);
        if (v >= 0 && was >= 0 && s->g->stmts[was].op == next->vop)
            note_replay(s, first, s->g->nstmts, was);
        if (v >= 0 && next->vdetach && !s->in_region)
            mark_nograd(s, first, s->g->nstmts);
        /* a detached alias with a history of its own (written in place
         * with an operand that requires grad: v = x.detach(); v.sub_(x))
         * takes the base's new data and keeps that history, as in eager */
        if (v >= 0 && next->vdetach && next->t->requires_grad)
            v = detached_write(s, next->t, v);
        if (v < 0)
            ok = false;
        else
            next->value = v;
    }
    free(cand);
    free(need);
    if (!ok)
        return false;
    if (cur->is_view && cur != t) {
        /* the base itself is a view from outside the trace: fine only if
         * nothing else shares it, which the loop above checked */
    }
    return true;
}

static void mark_nograd(trace_state *s, int first, int end)
{
    st_graph *g = s->g;
    st_ir_region *last = g->nregions ? &g->regions[g->nregions - 1] : NULL;
    if (last && !last->bwd && last->end == first) {
        last->end = end;
        return;
    }
    st_ir_region r;
    memset(&r, 0, sizeof r);
    r.first = first;
    r.end = end;
    if (st_ir_add_region(g, &r) < 0) {
        failf(s, "%s", st_err_msg());
        st_err_clear();
    }
}

/* A tensor that requires grad, written in place under no_grad, keeps its
 * history (eager: later uses still send gradients there, a leaf's to
 * itself, a computed tensor's to its grad_fn). Its new value v, made in a
 * stop-gradient region, becomes v + zero_keeping_grad(x): exactly v, with
 * the gradient of x, x being a leaf's graph input, else the value it held
 * before the write (old). */
static void keep_grad(trace_state *s, st_tensor *t, int old)
{
    if (!t->requires_grad || !st_dtype_is_float(t->dtype))
        return;
    int x = t->grad_fn ? old : -1;
    for (int k = 0; k < s->ninputs && x < 0; k++)
        if (s->inputs[k] == t)
            x = s->g->inputs[k];
    tslot *e = find(s, t);
    if (x < 0 || !e || e->value == x || e->value == old)
        return;
    int v = e->value, first = s->g->nstmts, outs[ST_MAX_OUT];
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = t->ndim;
    for (int d = 0; d < t->ndim; d++)
        a.dims[d] = t->shape[d];
    int sg = emit(s, ST_OP_RESHAPE, &x, 1, &a, outs);
    if (sg < 0)
        return;
    mark_nograd(s, first, s->g->nstmts);
    int z = zero_keeping_grad(s, x, sg);
    int ai[2] = {v, z};
    int r = z < 0 ? -1 : emit(s, ST_OP_ADD, ai, 2, NULL, outs);
    if (r >= 0)
        e->value = r;
}

/* copy_ (fill_, zero_) in grad mode over a tensor t that requires grad:
 * eager's CopyBackwards sends zeros into the history t had (old) and the
 * result keeps requiring grad even when the source does not. The traced
 * new value v alone depends only on the source: a cached run would return
 * t without a history (or leave old's inputs without a gradient). It
 * becomes where(false, old, v): exactly v, with a dependence on old whose
 * gradient is zero. Returns the value t holds from now on (-1: failed). */
static int overwritten(trace_state *s, st_tensor *t, int old, int v)
{
    if (!t->requires_grad || !st_dtype_is_float(t->dtype) || old == v)
        return v;
    int c = st_ir_add_const(s->g, ST_BOOL, 0, 0);
    if (c < 0) {
        failf(s, "constant: %s", st_err_msg());
        st_err_clear();
        return -1;
    }
    return emit1(s, ST_OP_WHERE, c, old, v, 3, NULL);
}

/* Before a write under no_grad: the traced tensors that require grad and
 * that it changes (the written ones; through a view, every tensor of that
 * storage), with the values they hold now. *n of them in a new array
 * (NULL: none, or out of memory, which only loses their gradients). */
typedef struct {
    st_tensor *t;
    int old;
} kept_val;

static kept_val *kept_before(trace_state *s, st_tensor *const *out, int nout,
                             const bool *found, const bool *through, int *n)
{
    kept_val *kv = NULL;
    int cap = 0;
    *n = 0;
    for (int k = 0; k < nout; k++) {
        if (!found[k])
            continue;
        for (size_t i = 0; i < (through[k] ? s->cap : 1); i++) {
            tslot *e = through[k] ? &s->slots[i] : find(s, out[k]);
            if (!e || !e->t || e->t->storage != out[k]->storage ||
                !e->t->requires_grad || !st_dtype_is_float(e->t->dtype))
                continue;
            bool dup = false;
            for (int j = 0; j < *n && !dup; j++)
                dup = kv[j].t == e->t;
            if (dup)
                continue;
            if (*n == cap) {
                int nc = cap ? cap * 2 : 4;
                kept_val *g = realloc(kv, sizeof *g * (size_t)nc);
                if (!g)
                    return kv;
                kv = g;
                cap = nc;
            }
            kv[(*n)++] = (kept_val){e->t, e->value};
        }
    }
    return kv;
}

void st_rt_trace_note(st_op_id op, const st_operand *in, int nin,
                      const st_attrs *attrs, st_tensor *const *out, int nout)
{
    trace_state *s = cur;
    if (!s || suspended || s->failed)
        return;
    int nkept = 0;
    kept_val *kept = NULL;
    /* the error state of the op that ran is not ours to touch */
    st_status saved_kind = st_err_kind();
    char saved_msg[256] = "";
    if (saved_kind != ST_OK)
        snprintf(saved_msg, sizeof saved_msg, "%s", st_err_msg());
    if ((unsigned)op >= ST_NOPS || nin < 0 || nin > ST_MAX_IN || nout < 0 ||
        nout > ST_MAX_OUT || (nin > 0 && !in) || (nout > 0 && !out)) {
        failf(s, "a malformed op was noted");
        goto restore;
    }
    /* a view taken in no_grad mode of a base that requires grad, used in
     * grad mode: eager's result requires grad with a history that ends at
     * no gradient (viewhist.c); the graph's backward has no such leaf */
    for (int k = 0; k < nin && st_ad_grad_enabled() && !s->in_region; k++) {
        const st_tensor *t = in[k].t;
        if (t && t->view_nograd && t->view_base && t->requires_grad && !t->grad_fn) {
            failf(s, "%s: a view taken in no_grad mode of a tensor that requires grad, "
                  "used in grad mode, is not traced", st_op(op)->name);
            goto restore;
        }
    }
    int ids[ST_MAX_IN], outs[ST_MAX_OUT];
    for (int k = 0; k < nin; k++) {
        if (in[k].t) {
            ids[k] = value_of(s, in[k].t);
        } else {
            ids[k] = st_ir_add_const(s->g, in[k].sdtype, in[k].f, in[k].i);
            if (ids[k] < 0)
                failf(s, "constant: %s", st_err_msg());
        }
        if (ids[k] < 0)
            goto restore;
    }
    bool found[ST_MAX_OUT] = {false, false, false};
    bool through[ST_MAX_OUT] = {false, false, false};
    int first_stmt = s->g->nstmts;
    if (st_ad_grad_enabled())
        s->grad_seen = true;
    for (int k = 0; k < nout; k++) {
        if (!out[k]) {
            failf(s, "%s: a result is missing", st_op(op)->name);
            goto restore;
        }
        found[k] = find(s, out[k]) != NULL;
        /* a write into a view or a base with views: written through */
        through[k] = found[k] && aliased(s, out[k]);
        if (through[k] && st_op(op)->kind == ST_OPK_VIEW) {
            failf(s, "%s: a view op wrote into a traced tensor",
                  st_op(op)->name);
            goto restore;
        }
    }
    /* under no_grad, what the write changes keeps its gradient (below) */
    if (!st_ad_grad_enabled() && !s->in_region)
        kept = kept_before(s, out, nout, found, through, &nkept);
    /* a copy_ in grad mode: the value the target held (below); through a
     * view too, so that the base the write reaches keeps its dependence
     * (v.zero_() on v = y.flatten(): y's new value is a reshape of v's) */
    int olds[ST_MAX_OUT] = {-1, -1, -1};
    for (int k = 0; k < nout && op == ST_OP_COPY; k++)
        if (found[k])
            olds[k] = find(s, out[k])->value;
    int r;
    r = emit(s, op, ids, nin, attrs, outs);
    if (r < 0)
        goto restore;
    int nres = s->g->values[r].producer >= 0
                   ? s->g->stmts[s->g->values[r].producer].nout : 1;
    if (nres != nout) {
        failf(s, "%s: %d results traced, %d produced", st_op(op)->name,
              nres, nout);
        goto restore;
    }
    for (int k = 0; k < nout; k++) {
        int v = outs[k];
        const st_meta *m = &s->g->values[v].meta;
        st_tensor *t = out[k];
        if (m->ndim != t->ndim ||
            memcmp(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim)) {
            char a[96], b[96];
            failf(s, "%s: traced result of shape %s, eager result of shape "
                  "%s", st_op(op)->name,
                  st_shape_str(m->shape, m->ndim, a, sizeof a),
                  st_shape_str(t->shape, t->ndim, b, sizeof b));
            goto restore;
        }
        if (m->dtype != t->dtype) { /* written into a given tensor */
            st_attrs ca;
            memset(&ca, 0, sizeof ca);
            ca.dtype = t->dtype;
            int co[ST_MAX_OUT];
            if ((v = emit(s, ST_OP_CAST, &v, 1, &ca, co)) < 0)
                goto restore;
        }
        if (olds[k] >= 0 && st_ad_grad_enabled() && !s->in_region &&
            (v = overwritten(s, t, olds[k], v)) < 0)
            goto restore;
        if (!map_set(s, t, v, !found[k] && st_op(op)->kind != ST_OPK_VIEW))
            goto restore;
        if (!found[k] && st_op(op)->kind == ST_OPK_VIEW && nin == 1 &&
            in[0].t && attrs) {
            tslot *e = find(s, t);
            e->vsrc = in[0].t;
            e->vop = op;
            e->vattrs = *attrs;
        }
        if (through[k] && !write_through(s, t))
            goto restore;
    }
    /* under no_grad: a stop-gradient region (extending the previous one
     * when it ends here) */
    if (!st_ad_grad_enabled() && !s->in_region && s->g->nstmts > first_stmt) {
        mark_nograd(s, first_stmt, s->g->nstmts);
        for (int k = 0; k < nkept && !s->failed; k++)
            keep_grad(s, kept[k].t, kept[k].old);
    }
restore:
    free(kept);
    if (saved_kind != ST_OK)
        st_err(saved_kind, "%s", saved_msg);
    else
        st_err_clear();
}

/* Dead-code removal that keeps regions: a copy of g without statements no
 * output depends on, a region's inputs and read values kept alive while
 * one of its outputs is; inputs and constants kept in order (as
 * st_ir_dce). Regions are remapped (stop-gradient ranges that lost every
 * statement and PyLayer regions with no live output are dropped). */
static bool checks_indices(const st_graph *g, const st_stmt *st)
{
    (void)g;
    return st->op == ST_OP_GATHER || st->op == ST_OP_INDEX_SELECT || st->op == ST_OP_EMBEDDING;
}

static st_graph *dce(st_graph *g, int *stmt_map)
{
    int n = g->nvalues > 0 ? g->nvalues : 1;
    int ns = g->nstmts > 0 ? g->nstmts : 1;
    bool *live = calloc((size_t)n, sizeof *live);
    bool *keep = calloc((size_t)ns, sizeof *keep);
    bool *rlive = calloc((size_t)(g->nregions > 0 ? g->nregions : 1),
                         sizeof *rlive);
    int *map = malloc(sizeof(int) * (size_t)n);
    int *smap = malloc(sizeof(int) * (size_t)(ns + 1));
    st_graph *ng = st_ir_graph_new();
    bool ok = live && keep && rlive && map && smap && ng;
    if (!ok) {
        st_err(ST_ERR_MEMORY, "trace: out of host memory");
        goto done;
    }
    for (int k = 0; k < g->noutputs; k++)
        live[g->outputs[k]] = true;
    for (int si = g->nstmts - 1; si >= 0; si--) {
        /* a PyLayer region ending here: live if an output is */
        for (int r = 0; r < g->nregions; r++) {
            st_ir_region *rg = &g->regions[r];
            if (!rg->bwd || rg->end - 1 != si)
                continue;
            for (int k = 0; k < rg->nout; k++)
                rlive[r] |= rg->out[k] >= 0 && live[rg->out[k]];
            for (int k = 0; rlive[r] && k < rg->nin; k++)
                live[rg->in[k]] = true;
            for (int k = 0; rlive[r] && k < rg->nread; k++)
                live[rg->read[k]] = true;
        }
        const st_stmt *st = &g->stmts[si];
        for (int k = 0; k < st->nout; k++)
            keep[si] |= live[st->out[k]];
        /* a read by index checks its indices (torch raises for one out of
         * range even where nothing uses the result): kept, so that a later
         * call with other indices or sizes raises too */
        keep[si] |= checks_indices(g, st);
        for (int k = 0; keep[si] && k < st->nin; k++)
            live[st->in[k]] = true;
    }
    for (int v = 0; v < g->nvalues; v++)
        map[v] = -1;
    for (int k = 0; k < g->ninputs && ok; k++) {
        const st_value *val = &g->values[g->inputs[k]];
        map[g->inputs[k]] = st_ir_add_input(ng, &val->meta,
                                            val->kind == ST_VAL_PARAM);
        ok = map[g->inputs[k]] >= 0;
    }
    for (int v = 0; v < g->nvalues && ok; v++) {
        const st_value *val = &g->values[v];
        if (val->kind == ST_VAL_CONST) {
            map[v] = st_ir_add_const(ng, val->meta.dtype, val->fconst,
                                     val->iconst);
            ok = map[v] >= 0;
        }
    }
    for (int si = 0; si < g->nstmts && ok; si++) {
        smap[si] = ng->nstmts;
        if (!keep[si])
            continue;
        const st_stmt *st = &g->stmts[si];
        int in[ST_MAX_IN], out[ST_MAX_OUT];
        for (int k = 0; k < st->nin; k++)
            in[k] = map[st->in[k]];
        ok = st_ir_add_stmt(ng, st->op, in, st->nin, &st->attrs, out) >= 0;
        for (int k = 0; ok && k < st->nout; k++)
            map[st->out[k]] = out[k];
    }
    smap[g->nstmts] = ng->nstmts;
    for (int si = 0; stmt_map && si < g->nstmts; si++)
        stmt_map[si] = keep[si] ? smap[si] : -1;
    for (int k = 0; k < g->noutputs && ok; k++)
        st_ir_mark_output(ng, map[g->outputs[k]]);
    for (int r = 0; r < g->nregions && ok; r++) {
        st_ir_region *rg = &g->regions[r];
        st_ir_region nr = *rg;
        nr.first = smap[rg->first < g->nstmts ? rg->first : g->nstmts];
        nr.end = smap[rg->end < g->nstmts ? rg->end : g->nstmts];
        if (nr.end <= nr.first || (rg->bwd && !rlive[r]))
            continue;
        int buf[3][64];
        int *in = rg->nin <= 64 ? buf[0] : malloc(sizeof(int) * (size_t)rg->nin);
        int *out = rg->nout <= 64 ? buf[1] : malloc(sizeof(int) * (size_t)rg->nout);
        int *rd = rg->nread <= 64 ? buf[2] : malloc(sizeof(int) * (size_t)rg->nread);
        ok = in && out && rd;
        for (int k = 0; ok && k < rg->nin; k++)
            ok = (in[k] = map[rg->in[k]]) >= 0;
        for (int k = 0; ok && k < rg->nout; k++)
            out[k] = rg->out[k] >= 0 ? map[rg->out[k]] : -1;
        for (int k = 0; ok && k < rg->nread; k++)
            ok = (rd[k] = map[rg->read[k]]) >= 0;
        nr.in = in;
        nr.out = out;
        nr.read = rd;
        rg->bwd = NULL; /* moves to the new graph */
        if (ok)
            ok = st_ir_add_region(ng, &nr) >= 0;
        else
            st_ir_graph_free(nr.bwd);
        if (in != buf[0])
            free(in);
        if (out != buf[1])
            free(out);
        if (rd != buf[2])
            free(rd);
        if (!ok && st_err_kind() == ST_OK)
            st_err(ST_ERR_RUNTIME, "trace: a region lost a value it needs");
    }
done:
    free(live);
    free(keep);
    free(rlive);
    free(map);
    free(smap);
    if (!ok) {
        st_ir_graph_free(ng);
        return NULL;
    }
    return ng;
}

/* Ends the trace (see st_rt_trace_end2); wb_in NULL: no writeback report. */
/* An output that is a traced view of a graph input (v = x[0].mul_(2),
 * x[1:] after x.add_(1)) stated again as those views of the input's
 * final value, so the compiled function can return it as a view of the
 * input (runtime/cfn.c, find_aliases) and not as a copy: the same data,
 * now with the aliasing eager code has. So is a view of a computed value
 * whose value is no longer those views of it (y = x + 2; v = y[None];
 * w = v[:, :1]; w.add_(1): v's and w's new values are scatters), so
 * that the run returns them as views of one buffer. -1: not such a view. */
/* Statements [from, to) remake view statement orig (same op, same attrs):
 * dynamic shapes give them orig's size expressions (st_rt_trace_replay_of).
 * Best effort: without memory the mark is simply missing. */
static void note_replay(trace_state *s, int from, int to, int orig)
{
    if (orig < s->cap_replay && s->replay[orig] >= 0)
        orig = s->replay[orig];          /* a remade one remade again */
    if (to > s->cap_replay) {
        int cap = to * 2 + 16;
        int *r = realloc(s->replay, sizeof *r * (size_t)cap);
        if (!r)
            return;
        for (int i = s->cap_replay; i < cap; i++)
            r[i] = -1;
        s->replay = r;
        s->cap_replay = cap;
    }
    for (int i = from; i < to; i++)
        if (s->g->stmts[i].op == s->g->stmts[orig].op)
            s->replay[i] = orig;
}

static int view_of_input(trace_state *s, st_tensor *t)
{
    tslot *chain[64];
    int n = 0;
    tslot *e = find(s, t);
    while (e && e->vsrc && n < 64) {
        /* a view a custom Function's forward returned is its output, with
         * the Function's backward: not remade as a plain view of the input */
        if (e->value >= 0 && st_ir_stmt_in_region(s->g, s->g->values[e->value].producer, true))
            return -1;
        chain[n++] = e;
        e = find(s, e->vsrc);
    }
    if (n == 0 || n == 64 || !e)
        return -1;
    bool input = false, detached = false;
    for (int k = 0; k < s->ninputs && !input; k++)
        input = s->inputs[k] == e->t;
    for (int k = 0; k < n; k++)
        detached |= chain[k]->vdetach;
    /* a view made under no_grad of an input that requires grad requires
     * grad (as a leaf without a gradient, viewhist.c): remade in no_grad
     * mode; one through a detach never does.
     * A stale view (its base, a detached alias, written in place with an
     * operand that requires grad: v = x.detach(); w = v[0]; v.sub_(x))
     * requires grad once refreshed (viewhist.c), with its base's history:
     * left as computed too, not remade through the detach */
    bool rg = t->requires_grad ||
              (st_ad_view_stale(t) && t->view_grad && t->view_base->requires_grad &&
               st_dtype_is_float(t->dtype));
    /* a detached alias with a history of its own (v = x.t().detach();
     * v.add_(x.sum())): the views of the input, with v's gradient
     * (detached_write), returned by the run in the input's storage */
    bool own_hist = detached && t->requires_grad && t->grad_fn && !st_ad_view_stale(t);
    if (!input) {
        /* a computed base: only when a write left the chain's values no
         * longer views of it */
        bool views = true;
        for (int k = 0; k < n && views; k++) {
            int up = k + 1 < n ? chain[k + 1]->value : e->value;
            int p = chain[k]->value >= 0 ? s->g->values[chain[k]->value].producer : -1;
            views = p >= 0 && s->g->stmts[p].nout == 1 && s->g->stmts[p].in[0] == up &&
                    st_op(s->g->stmts[p].op)->kind == ST_OPK_VIEW;
        }
        if (views || e->value < 0 || s->g->values[e->value].producer < 0)
            return -1;
    }
    if (rg != (e->t->requires_grad && !detached) && !own_hist)
        return -1;
    int v = e->value, outs[ST_MAX_OUT];
    for (int k = n - 1; k >= 0 && v >= 0; k--) {
        int first = s->g->nstmts;
        /* a split / unbind output's mark (viewhist.c) goes with it */
        st_attrs a = chain[k]->vattrs;
        int p = chain[k]->value >= 0 ? s->g->values[chain[k]->value].producer : -1;
        if (p >= 0 && (s->g->stmts[p].attrs.flags & ST_VIEW_MULTI_ATTR))
            a.flags = s->g->stmts[p].attrs.flags;
        v = emit(s, chain[k]->vop, &v, 1, &a, outs);
        if (v >= 0 && p >= 0 && s->g->stmts[p].op == chain[k]->vop)
            note_replay(s, first, s->g->nstmts, p);
        /* a view taken in no_grad mode is remade in it (viewhist.c) */
        const st_tensor *ct = chain[k]->t;
        if (v >= 0 && (chain[k]->vdetach || (ct && ct->view_nograd && !ct->view_grad)))
            mark_nograd(s, first, s->g->nstmts);
    }
    return v >= 0 && own_hist ? detached_write(s, t, v) : v;
}

/* The written input at storage stg was written only through .data aliases. */
static bool quiet_write(const trace_state *s, const st_storage *stg)
{
    for (int k = 0; k < s->nbk; k++)
        if (s->bk[k].orig == stg)
            return !s->bk[k].loud;
    return false;
}

static st_graph *end_impl(st_tensor *const *outputs, int nout,
                          st_tensor ***inputs, int *ninputs, int **wb_in,
                          int *nwb, int **stmt_map, int *nstmt_map,
                          bool **input_rg, bool **wb_quiet)
{
    if (input_rg)
        *input_rg = NULL;
    if (wb_quiet)
        *wb_quiet = NULL;
    if (stmt_map)
        *stmt_map = NULL;
    if (nstmt_map)
        *nstmt_map = 0;
    if (inputs)
        *inputs = NULL;
    if (ninputs)
        *ninputs = 0;
    if (wb_in)
        *wb_in = NULL;
    if (nwb)
        *nwb = 0;
    trace_state *s = root_of(cur);
    if (!s) {
        st_err(ST_ERR_RUNTIME, "trace_end: no trace is active");
        return NULL;
    }
    if (s->sub)
        failf(s, "a PyLayer capture was left open");
    if (!inputs || !ninputs || nout < 0 || (nout > 0 && !outputs) ||
        (wb_in && !nwb)) {
        st_rt_trace_abort();
        st_err(ST_ERR_VALUE, "trace_end: null argument");
        return NULL;
    }
    cur = s;
    int *ids = malloc(sizeof(int) * (size_t)(nout > 0 ? nout : 1));
    if (!ids)
        failf(s, "out of host memory");
    for (int k = 0; k < nout && !s->failed; k++) {
        if (!outputs[k]) {
            failf(s, "output %d is not a tensor", k);
            break;
        }
        ids[k] = value_of(s, outputs[k]);
        /* not in a dynamic-shape trace: statements emitted here have no
         * symbolic sizes (frontend/tr_dynamic.c) */
        int rv = s->symbolic ? -1 : view_of_input(s, outputs[k]);
        if (rv >= 0)
            ids[k] = rv;
        /* a split / unbind output (or a view of one) is made again as one
         * by the run (viewhist.c), stale if its base's history changed
         * since (its use then fails as eager's) */
        st_tensor *o = outputs[k];
        int p = ids[k] >= 0 ? s->g->values[ids[k]].producer : -1;
        bool vs = p >= 0 && st_op(s->g->stmts[p].op)->kind == ST_OPK_VIEW &&
                  s->g->stmts[p].nout == 1;
        if (vs && o->view_multi)
            s->g->stmts[p].attrs.flags =
                ST_VIEW_MULTI_FLAGS(o->view_multi, o->view_multi_nr) |
                (st_ad_view_stale(o) ? ST_VIEW_MULTI_STALE : 0);
        /* a view statement's result that was no view (a copying reshape) */
        if (vs && !o->view_base && !o->is_view)
            s->g->stmts[p].attrs.flags |= ST_VIEW_OWN;
    }
    /* a tensor the trace made (or a view it made of an input) that became
     * a leaf requiring grad (st.ones(2, requires_grad=True), x.detach()
     * with .requires_grad = True): a run makes its tensors anew and sets
     * no such flag, and the graph's backward ends at its inputs */
    for (size_t i = 0; i < s->cap && !s->failed; i++) {
        st_tensor *t = s->slots[i].t;
        if (!t || !t->requires_grad || t->grad_fn)
            continue;
        /* a view taken in no_grad mode of a base that requires grad: the
         * run takes it so too (its requires_grad is the base's) */
        if (t->view_nograd && t->view_base)
            continue;
        bool input = false;
        for (int k = 0; k < s->ninputs && !input; k++)
            input = s->inputs[k] == t;
        if (!input)
            failf(s, "a tensor made to require grad inside the graph "
                  "(requires_grad=True, .requires_grad = True): a compiled run "
                  "cannot replay it");
    }
    int *wb = NULL, *wv = NULL, nw = 0;
    bool *wq = NULL;
    if (wb_in && !s->failed) {
        int m = s->ninputs > 0 ? s->ninputs : 1;
        wb = malloc(sizeof(int) * (size_t)m);
        wv = malloc(sizeof(int) * (size_t)m);
        wq = wb_quiet ? malloc(sizeof(bool) * (size_t)m) : NULL;
        if (!wb || !wv || (wb_quiet && !wq))
            failf(s, "out of host memory");
        for (int k = 0; wb && wv && k < s->ninputs; k++) {
            tslot *e = find(s, s->inputs[k]);
            if (e && e->value != s->g->inputs[k]) {
                if (wq)
                    wq[nw] = quiet_write(s, s->inputs[k]->storage);
                wv[nw] = e->value;
                wb[nw++] = k;
            }
        }
    }
    if (s->failed) {
        /* the translation is discarded: put inputs back as on abort */
        char reason[sizeof s->reason];
        snprintf(reason, sizeof reason, "%s", s->reason);
        free(ids);
        free(wb);
        free(wq);
        free(wv);
        st_rt_trace_abort();
        st_err(ST_ERR_RUNTIME, "trace failed: %s", reason);
        return NULL;
    }
    cur = NULL;
    suspended = 0;
    /* the requested outputs first, then the written-back values */
    for (int k = 0; k < nout; k++)
        st_ir_mark_output(s->g, ids[k]);
    for (int k = 0; k < nw; k++)
        st_ir_mark_output(s->g, wv[k]);
    free(ids);
    free(wv);
    int *sm = NULL;
    if (stmt_map && !(sm = malloc(sizeof(int) * (size_t)(s->g->nstmts + 1)))) {
        free(wb);
        free(wq);
        state_free(s);
        st_err(ST_ERR_MEMORY, "trace_end: out of host memory");
        return NULL;
    }
    int nsm = s->g->nstmts;
    st_graph *g = dce(s->g, sm);
    if (!g)
        free(sm);
    else if (stmt_map) {
        *stmt_map = sm;
        *nstmt_map = nsm;
    }
    if (!g) {
        if (st_err_kind() == ST_OK)
            st_err(ST_ERR_MEMORY, "trace_end: out of host memory");
        free(wb);
        free(wq);
        state_free(s);
        return NULL;
    }
    *inputs = s->inputs;
    *ninputs = s->ninputs;
    if (input_rg) {
        *input_rg = s->in_rg;
        s->in_rg = NULL;
    }
    s->inputs = NULL;
    s->ninputs = 0;
    if (wb_in) {
        *wb_in = wb;
        *nwb = nw;
    }
    if (wb_quiet)
        *wb_quiet = wq;
    else
        free(wq);
    state_free(s); /* drops the backups: the writes stand */
    return g;
}

st_graph *st_rt_trace_end(st_tensor *const *outputs, int nout,
                          st_tensor ***inputs, int *ninputs)
{
    return end_impl(outputs, nout, inputs, ninputs, NULL, NULL, NULL, NULL, NULL, NULL);
}

st_graph *st_rt_trace_end2(st_tensor *const *outputs, int nout,
                           st_tensor ***inputs, int *ninputs,
                           int **wb_in, int *nwb)
{
    if (!wb_in || !nwb) {
        st_rt_trace_abort();
        st_err(ST_ERR_VALUE, "trace_end2: null argument");
        return NULL;
    }
    return end_impl(outputs, nout, inputs, ninputs, wb_in, nwb, NULL, NULL, NULL, NULL);
}

st_graph *st_rt_trace_end3(st_tensor *const *outputs, int nout,
                           st_tensor ***inputs, int *ninputs,
                           int **wb_in, int *nwb, int **stmt_map, int *nstmt_map,
                           bool **input_rg, bool **wb_quiet)
{
    if (!wb_in || !nwb || (!stmt_map) != (!nstmt_map)) {
        st_rt_trace_abort();
        st_err(ST_ERR_VALUE, "trace_end3: null argument");
        return NULL;
    }
    return end_impl(outputs, nout, inputs, ninputs, wb_in, nwb, stmt_map, nstmt_map,
                    input_rg, wb_quiet);
}

st_graph *st_rt_trace_graph(void)
{
    trace_state *r = root_of(cur);
    return r && r == cur ? r->g : NULL;
}

int st_rt_trace_replay_of(int stmt)
{
    trace_state *r = root_of(cur);
    if (!r || r != cur || stmt < 0 || stmt >= r->cap_replay)
        return -1;
    return r->replay[stmt];
}

int st_rt_trace_find(const st_tensor *t)
{
    trace_state *r = root_of(cur);
    if (!r || r != cur || !t)
        return -1;
    tslot *e = find(r, t);
    return e ? e->value : -1;
}

st_tensor *const *st_rt_trace_inputs(int *n)
{
    trace_state *r = root_of(cur);
    *n = r ? r->ninputs : 0;
    return r ? r->inputs : NULL;
}

bool st_rt_trace_failed(const char **reason)
{
    trace_state *r = root_of(cur);
    if (!r || !r->failed)
        return false;
    if (reason)
        *reason = r->reason;
    return true;
}

void st_rt_trace_detach(st_tensor *src, st_tensor *out)
{
    trace_state *s = cur;
    if (!s || suspended || s->failed || !src || !out)
        return;
    int v = value_of(s, src);
    if (v < 0)
        return;
    /* an identity permute: a view that names no size, so that a
     * dynamic-shape trace stays general (a reshape to the concrete shape
     * made one translation per shape) */
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = src->ndim;
    for (int d = 0; d < src->ndim; d++)
        a.dims[d] = d;
    if (out->own_version)
        a.flags = ST_VIEW_DATA;
    int first = s->g->nstmts, outs[ST_MAX_OUT];
    int r = emit(s, ST_OP_PERMUTE, &v, 1, &a, outs);
    if (r < 0 || !map_set(s, out, r, false))
        return;
    /* out aliases src: a write into either reaches the other (runtime
     * writes through views), with no gradient across (detached_write) */
    tslot *e = find(s, out);
    e->vsrc = src;
    e->vop = ST_OP_PERMUTE;
    e->vattrs = a;
    e->vdetach = true;
    if (!s->in_region)
        mark_nograd(s, first, s->g->nstmts);
}

void st_rt_trace_fresh(st_tensor *t)
{
    trace_state *s = cur;
    if (!s || suspended || s->failed || !t || find(s, t))
        return;
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = t->ndim;
    for (int d = 0; d < t->ndim; d++)
        a.dims[d] = t->shape[d];
    a.dtype = t->dtype;
    if (!st_dtype_is_float(t->dtype))
        a.flags = ST_ATTR_INT_VALUE;
    int outs[ST_MAX_OUT];
    int v = emit(s, ST_OP_FULL, NULL, 0, &a, outs);
    if (v >= 0)
        map_set(s, t, v, true);
}

void st_rt_trace_constant(st_tensor *t)
{
    trace_state *s = cur;
    if (!s || suspended || s->failed || !t || find(s, t) || value_of(s, t) < 0)
        return;
    tslot *e = find(s, t);
    if (e)
        e->konst = true;
}

bool st_rt_trace_is_constant(const st_tensor *t)
{
    trace_state *r = root_of(cur);
    tslot *e = r && r == cur && t ? find(r, t) : NULL;
    return e && e->konst;
}

/* ---------------- PyLayer regions ---------------- */
static st_status region_fail(trace_state *s, const char *what)
{
    trace_state *r = root_of(s);
    failf(r, "PyLayer: %s", what);
    return st_err(ST_ERR_RUNTIME, "PyLayer: %s", what);
}

st_status st_rt_trace_region_begin(void)
{
    trace_state *s = cur;
    if (!s)
        return st_err(ST_ERR_RUNTIME, "region_begin: no trace is active");
    if (s->in_region || s->parent)
        return region_fail(s, "a PyLayer applied inside a PyLayer being "
                           "captured cannot be traced");
    s->in_region = true;
    s->rg_first = s->g->nstmts;
    return ST_OK;
}

void st_rt_trace_region_cancel(const char *reason)
{
    trace_state *r = root_of(cur);
    if (!r)
        return;
    failf(r, "PyLayer: %s", reason ? reason : "capture cancelled");
    state_free(r->sub);
    r->sub = NULL;
    r->in_region = false;
    cur = r;
}

st_status st_rt_trace_region_backward(st_tensor *const *ins, int nin,
                                      st_tensor *const *outs, int nout,
                                      st_tensor *const *gouts)
{
    trace_state *s = cur;
    if (!s || s->parent || !s->in_region || nin < 0 || nout < 0)
        return st_err(ST_ERR_RUNTIME, "region_backward: no PyLayer forward "
                      "is being captured");
    if (s->failed)
        return st_err(ST_ERR_RUNTIME, "trace failed: %s", s->reason);
    s->rg_end = s->g->nstmts;
    free(s->rg_in);
    free(s->rg_out);
    s->rg_in = malloc(sizeof(int) * (size_t)(nin > 0 ? nin : 1));
    s->rg_out = malloc(sizeof(int) * (size_t)(nout > 0 ? nout : 1));
    trace_state *sub = calloc(1, sizeof *sub);
    if (!s->rg_in || !s->rg_out || !sub || !(sub->g = st_ir_graph_new())) {
        state_free(sub);
        return region_fail(s, "out of host memory");
    }
    s->rg_nin = nin;
    s->rg_nout = nout;
    for (int k = 0; k < nin; k++)
        if ((s->rg_in[k] = value_of(s, ins[k])) < 0) {
            state_free(sub);
            return region_fail(s, "an input is not traceable");
        }
    for (int k = 0; k < nout; k++) {
        tslot *e = find(s, outs[k]);
        int v = e ? e->value : -1;
        int p = v >= 0 ? s->g->values[v].producer : -1;
        if (p < s->rg_first || p >= s->rg_end) {
            state_free(sub);
            return region_fail(s, "forward returned a tensor it did not "
                               "compute (an input as is, or a constant)");
        }
        s->rg_out[k] = v;
    }
    sub->parent = s;
    sub->in_region = true;
    for (int k = 0; k < nout; k++)
        if (value_of(sub, gouts[k]) != sub->g->inputs[k]) {
            state_free(sub);
            return region_fail(s, "the output gradients must be fresh "
                               "tensors");
        }
    s->sub = sub;
    cur = sub;
    return ST_OK;
}

st_status st_rt_trace_region_end(st_tensor *const *gins, int nin)
{
    trace_state *sub = cur;
    trace_state *s = sub ? sub->parent : NULL;
    if (!s || s->sub != sub)
        return st_err(ST_ERR_RUNTIME, "region_end: no PyLayer backward is "
                      "being captured");
    st_status st = ST_OK;
    if (nin != s->rg_nin) {
        st = region_fail(sub, "backward returned the wrong number of "
                         "gradients");
        goto out;
    }
    if (sub->failed) {
        failf(s, "%s", sub->reason);
        st = st_err(ST_ERR_RUNTIME, "trace failed: %s", sub->reason);
        goto out;
    }
    for (int k = 0; k < nin; k++) {
        const st_meta *m = &s->g->values[s->rg_in[k]].meta;
        int v;
        if (!gins[k]) { /* None: zeros */
            st_attrs a;
            st_ir_zeros_attrs(m, &a);
            int o[ST_MAX_OUT];
            v = emit(sub, ST_OP_FULL, NULL, 0, &a, o);
        } else {
            v = value_of(sub, gins[k]);
        }
        if (v < 0 || sub->failed) {
            st = region_fail(sub, sub->failed ? sub->reason
                                              : "a gradient is not traceable");
            goto out;
        }
        const st_meta *gm = &sub->g->values[v].meta;
        if (gm->ndim != m->ndim || gm->dtype != m->dtype ||
            memcmp(gm->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim)) {
            char a[96], b[96], msg[256];
            snprintf(msg, sizeof msg, "backward returned a gradient of %s%s "
                     "for an input of %s%s", st_dtype_name(gm->dtype),
                     st_shape_str(gm->shape, gm->ndim, a, sizeof a),
                     st_dtype_name(m->dtype),
                     st_shape_str(m->shape, m->ndim, b, sizeof b));
            st = region_fail(sub, msg);
            goto out;
        }
        st_ir_mark_output(sub->g, v);
    }
    /* the values the backward reads: its inputs after the gradients */
    int nread = sub->ninputs - s->rg_nout;
    int *rd = malloc(sizeof(int) * (size_t)(nread > 0 ? nread : 1));
    st_graph *bwd = rd ? st_ir_dce(sub->g) : NULL;
    if (!bwd) {
        free(rd);
        st = region_fail(sub, "out of host memory");
        goto out;
    }
    for (int k = 0; k < nread; k++) {
        st_tensor *t = sub->inputs[s->rg_nout + k];
        rd[k] = value_of(s, t);
        if (rd[k] < 0) {
            free(rd);
            st_ir_graph_free(bwd);
            st = region_fail(sub, "backward reads a tensor that cannot be "
                             "traced");
            goto out;
        }
    }
    st_ir_region r = {
        .first = s->rg_first, .end = s->rg_end,
        .nin = s->rg_nin, .nout = s->rg_nout, .nread = nread,
        .in = s->rg_in, .out = s->rg_out, .read = rd, .bwd = bwd,
    };
    if (s->rg_end <= s->rg_first) {
        st_ir_graph_free(bwd);
        st = region_fail(sub, "forward traced no statement");
    } else if (st_ir_add_region(s->g, &r) < 0) {
        st = region_fail(sub, st_err_msg());
    }
    free(rd);
out:
    state_free(sub);
    s->sub = NULL;
    s->in_region = false;
    cur = s;
    return st;
}
