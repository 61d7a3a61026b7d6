/* runtime/trace.c - trace capture: while a trace is active on a thread,
 * every eager op (st_rt_eager) and every view function (runtime/view.c)
 * that runs at the outermost level appends its statement to a trace graph,
 * as a by-product of running normally. Owns st_rt_trace_* (begin, end,
 * abort, note, fail, suspend/resume).
 *
 * Mapping: a hash map from st_tensor* to the value id that tensor holds now
 * (holding a reference, so no pointer is reused while tracing). A tensor
 * first seen as an operand becomes a graph input (a param when it is a leaf
 * that requires grad); Python scalars become constants. An in-place result
 * (a given tensor) is a new value the tensor maps to from then on (SSA).
 * In-place writes into a tensor whose storage other traced tensors share
 * (views, bases) cannot be expressed and fail the trace, as do custom
 * autograd nodes (PyLayer) and ops run under no_grad on tensors that
 * require grad (a stop-gradient the IR cannot state); a failed trace
 * keeps running eagerly and st_rt_trace_end reports the first reason. Nested runs (ops inside an
 * eager op, programs run by the autograd engine) are not traced: callers
 * bracket them with st_rt_trace_suspend/resume.
 *
 * Eager dropout is traced as mul(x, dropout(full(1, like x))), as the tape
 * records it, so the backward graph sees a differentiable statement. */
#include "st_runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    st_tensor *t;   /* owned reference; NULL = empty slot */
    int value;
} tslot;

typedef struct {
    st_graph *g;
    tslot *slots;
    size_t cap, n;
    st_tensor **inputs;   /* owned, in graph input order */
    int ninputs, cap_inputs;
    bool failed;
    char reason[256];
} trace_state;

static _Thread_local trace_state *cur;
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

/* Maps t to value v (inserting t with a reference, or updating it). */
static bool map_set(trace_state *s, st_tensor *t, int v)
{
    tslot *e = find(s, t);
    if (e) {
        e->value = v;
        return true;
    }
    if ((s->n + 1) * 2 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        tslot *ns = calloc(nc, sizeof *ns);
        if (!ns) {
            failf(s, "out of host memory");
            return false;
        }
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i].t)
                continue;
            size_t j = hash_ptr(s->slots[i].t) & (nc - 1);
            while (ns[j].t)
                j = (j + 1) & (nc - 1);
            ns[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = ns;
        s->cap = nc;
    }
    size_t j = hash_ptr(t) & (s->cap - 1);
    while (s->slots[j].t)
        j = (j + 1) & (s->cap - 1);
    st_tensor_incref(t);
    s->slots[j].t = t;
    s->slots[j].value = v;
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
        if (!ni) {
            failf(s, "out of host memory");
            return -1;
        }
        s->inputs = ni;
        s->cap_inputs = nc;
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
    if (!map_set(s, t, v))
        return -1;
    st_tensor_incref(t);
    s->inputs[s->ninputs++] = t;
    return v;
}

static void state_free(trace_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++)
        st_tensor_decref(s->slots[i].t);
    free(s->slots);
    for (int k = 0; k < s->ninputs; k++)
        st_tensor_decref(s->inputs[k]);
    free(s->inputs);
    st_ir_graph_free(s->g);
    free(s);
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
    cur = s;
    suspended = 0;
    return ST_OK;
}

bool st_rt_trace_active(void)
{
    return cur != NULL && suspended == 0;
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

void st_rt_trace_fail(const char *reason)
{
    if (cur)
        failf(cur, "%s", reason ? reason : "unknown reason");
}

void st_rt_trace_abort(void)
{
    state_free(cur);
    cur = NULL;
    suspended = 0;
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

void st_rt_trace_note(st_op_id op, const st_operand *in, int nin,
                      const st_attrs *attrs, st_tensor *const *out, int nout)
{
    trace_state *s = cur;
    if (!s || suspended || s->failed)
        return;
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
    /* under no_grad an op cuts the gradient of an operand that requires
     * it; the graph has no stop-gradient statement to say so */
    if (!st_ad_grad_enabled() && st_op(op)->vjp)
        for (int k = 0; k < nin; k++)
            if (in[k].t && in[k].t->requires_grad &&
                st_dtype_is_float(in[k].t->dtype)) {
                failf(s, "%s: an op under no_grad on a tensor that requires "
                      "grad (a stop-gradient) cannot be traced",
                      st_op(op)->name);
                goto restore;
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
    for (int k = 0; k < nout; k++) {
        if (!out[k]) {
            failf(s, "%s: a result is missing", st_op(op)->name);
            goto restore;
        }
        if (find(s, out[k]) && aliased(s, out[k])) {
            failf(s, "%s: an in-place write into a tensor that shares its "
                  "storage with other traced tensors (a view or its base) "
                  "cannot be traced", st_op(op)->name);
            goto restore;
        }
    }
    int r;
    if (op == ST_OP_DROPOUT && nin == 1 && in[0].t) {
        st_attrs fa;
        memset(&fa, 0, sizeof fa);
        fa.f[0] = 1.0;
        fa.dtype = in[0].t->dtype;
        int ones = emit(s, ST_OP_FULL, ids, 1, &fa, outs);
        int mask = ones < 0 ? -1 : emit(s, ST_OP_DROPOUT, &ones, 1, attrs,
                                        outs);
        int mi[2] = {ids[0], mask};
        r = mask < 0 ? -1 : emit(s, ST_OP_MUL, mi, 2, NULL, outs);
    } else {
        r = emit(s, op, ids, nin, attrs, outs);
    }
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
        if (!map_set(s, t, v))
            goto restore;
    }
restore:
    if (saved_kind != ST_OK)
        st_err(saved_kind, "%s", saved_msg);
    else
        st_err_clear();
}

st_graph *st_rt_trace_end(st_tensor *const *outputs, int nout,
                          st_tensor ***inputs, int *ninputs)
{
    if (inputs)
        *inputs = NULL;
    if (ninputs)
        *ninputs = 0;
    trace_state *s = cur;
    if (!s) {
        st_err(ST_ERR_RUNTIME, "trace_end: no trace is active");
        return NULL;
    }
    cur = NULL;
    suspended = 0;
    if (!inputs || !ninputs || nout < 0 || (nout > 0 && !outputs)) {
        state_free(s);
        st_err(ST_ERR_VALUE, "trace_end: null argument");
        return NULL;
    }
    int *ids = malloc(sizeof(int) * (size_t)(nout > 0 ? nout : 1));
    if (!ids)
        failf(s, "out of host memory");
    for (int k = 0; k < nout && !s->failed; k++) {
        if (!outputs[k]) {
            failf(s, "output %d is not a tensor", k);
            break;
        }
        ids[k] = value_of(s, outputs[k]);
    }
    if (s->failed) {
        st_err(ST_ERR_RUNTIME, "trace failed: %s", s->reason);
        free(ids);
        state_free(s);
        return NULL;
    }
    for (int k = 0; k < nout; k++)
        st_ir_mark_output(s->g, ids[k]);
    free(ids);
    st_graph *g = st_ir_dce(s->g);
    if (!g) {
        state_free(s);
        return NULL;
    }
    *inputs = s->inputs;
    *ninputs = s->ninputs;
    s->inputs = NULL;
    s->ninputs = 0;
    state_free(s);
    return g;
}
