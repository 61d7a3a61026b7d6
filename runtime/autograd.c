/* autograd.c - the autograd tape and the backward engine.
 *
 * Recording: an eager op run in grad mode with an input that requires grad
 * becomes one node: the op, its attrs, the operands' metas, scalar operand
 * values, detached aliases of exactly the tensors its VJP rule reads for
 * the gradients that will be wanted (st_ir_vjp_saves_for: x * mask with a
 * mask that takes no gradient keeps the mask, not x) with their storage
 * versions, and edges to the inputs' nodes or leaves. Custom nodes
 * (PyLayer) carry a callback instead.
 *
 * Backward: the nodes reachable from the roots are counted for
 * dependencies and run when all their output gradients have arrived. An
 * op node runs its VJP rule (IR statements from ir/autodiff.c) as a small
 * graph lowered by fusion/ and compiled by the eager backend; those
 * programs are cached by (op, attrs, operand metas with sizes). Saved
 * tensors are released as soon as a node has run unless the graph is
 * retained.
 *
 * Saved-tensor hooks (autograd.graph.saved_tensors_hooks): while the
 * thread's stack of hook pairs is not empty, a recorded op node hands each
 * tensor it saves to the top pair's pack and keeps what that returns
 * instead of the tensor; every backward through the node unpacks it again
 * (saved_get), checked against the saved meta.
 *
 * Anomaly mode (autograd.detect_anomaly): while it is on, every new node
 * asks the anomaly owner for the traceback of the forward call that made
 * it (kept until the node goes); after a node ran in backward the owner
 * checks its gradients for NaN (check_nan), and when the node failed it
 * reports the error with that traceback. Off, it costs one flag test per
 * node made and per node run. */
#include "st_runtime.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <xxhash.h>

struct st_ad_node {
    int64_t refcount;
    char name[48];
    bool custom, freed;
    bool saves;               /* a backward after freed needs what was released */
    bool once;                /* a custom backward that is not differentiable */
    bool keep_ctx;            /* st_ad_node_keep_ctx: ctx stays until the node goes */
    unsigned kept;            /* saved_in slots a freeing backward keeps (ST_AD_KEEP_INDEX) */
    void (*ctx_release)(void *ctx);
    /* op nodes */
    st_op_id op;
    st_attrs attrs;
    int nin, nout;
    bool is_scalar[ST_MAX_IN];
    st_operand scalar[ST_MAX_IN];
    st_meta in_meta[ST_MAX_IN];
    st_meta out_meta;
    st_tensor *saved_in[ST_MAX_IN];
    uint32_t saved_in_ver[ST_MAX_IN];
    st_tensor *saved_out;
    uint32_t saved_out_ver;
    /* saved-tensor hooks: the packed objects (owned) that replace
     * saved_in[k] (k < ST_MAX_IN) and saved_out (ST_MAX_IN); NULL when no
     * hooks were active at record time */
    void **packed;
    /* edges, one per input: a node (with its output number) or a leaf */
    st_ad_node **next_node;
    int *next_nr;
    st_tensor **next_leaf;
    /* custom nodes */
    st_ad_custom_fn fn;
    void *ctx;
    void (*ctx_free)(void *);
    st_meta *cout_meta;       /* metas of a custom node's outputs */
    /* gradient hooks and retain_grad per output (lazily; see st_ad_hooks) */
    struct ad_slot *slots;
    void *pyobj;              /* the owner's wrapper while it lives (not owned) */
    uint64_t seq;             /* creation order on its thread (torch's sequence_nr) */
    /* engine state, valid during one backward */
    int deps;
    bool seen;
    bool skip;                /* grad(): leads to none of the inputs asked for */
    int order_deps;           /* scratch for prune_for_grad's ordering */
    st_tensor **gbuf;         /* accumulated gradient per output */
    void *anomaly_tb;         /* anomaly mode: the forward's traceback (owned) */
};

/* An output slot's hooks object (owned) and the tensor that retains its
 * gradient (not owned: the tensor clears it when it goes). */
struct ad_slot {
    void *hooks;
    st_tensor *retain;
};

static _Thread_local bool grad_disabled;
/* create_graph=True on the backward running on this thread: its ops are
 * recorded (grad mode stays on), op nodes run their VJP as eager ops */
static _Thread_local bool engine_creates;
static int64_t nodes_alive;
static _Thread_local uint64_t next_seq;

bool st_ad_grad_enabled(void) { return !grad_disabled; }
void st_ad_set_grad_enabled(bool on) { grad_disabled = !on; }
static _Thread_local bool inference_on;
bool st_ad_inference_mode(void) { return inference_on; }
void st_ad_set_inference_mode(bool on) { inference_on = on; }

/* ---------------- anomaly mode ---------------- */

static bool anomaly_on, anomaly_nan = true;
static void *(*anomaly_capture)(void);
static void (*anomaly_release)(void *);
static st_ad_anomaly_check_fn anomaly_check;
static void (*anomaly_report)(const char *, void *);

void st_ad_set_anomaly_owner(void *(*capture)(void), void (*release)(void *tb),
                             st_ad_anomaly_check_fn check,
                             void (*report)(const char *node, void *tb)) {
    anomaly_capture = capture;
    anomaly_release = release;
    anomaly_check = check;
    anomaly_report = report;
}

/* Global, as PyTorch's AnomalyMode. */
void st_ad_set_anomaly(bool on, bool check_nan) {
    anomaly_on = on;
    anomaly_nan = check_nan;
}

bool st_ad_anomaly_enabled(bool *check_nan) {
    if (check_nan) *check_nan = anomaly_nan;
    return anomaly_on;
}

/* After node n ran in backward with status s: its gradients' NaN check,
 * then the report of any error with the forward's traceback. */
static st_status anomaly_after(st_ad_node *n, st_tensor **gin, st_status s) {
    if (s == ST_OK && anomaly_nan && anomaly_check) s = anomaly_check(n->name, n->nin, gin);
    if (s != ST_OK && anomaly_report) anomaly_report(n->name, n->anomaly_tb);
    return s;
}

/* ---------------- node lifetime ---------------- */
static st_ad_node *node_new(int nin, int nout) {
    st_ad_node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->refcount = 1;
    n->seq = next_seq++;
    n->nin = nin;
    n->nout = nout;
    int m = nin > 0 ? nin : 1;
    n->next_node = calloc((size_t)m, sizeof *n->next_node);
    n->next_nr = calloc((size_t)m, sizeof *n->next_nr);
    n->next_leaf = calloc((size_t)m, sizeof *n->next_leaf);
    if (!n->next_node || !n->next_nr || !n->next_leaf) {
        free(n->next_node);
        free(n->next_nr);
        free(n->next_leaf);
        free(n);
        return NULL;
    }
    if (anomaly_on && anomaly_capture) n->anomaly_tb = anomaly_capture();
    __atomic_add_fetch(&nodes_alive, 1, __ATOMIC_RELAXED);
    return n;
}

static st_ad_saved_owner saved_owner;

/* What n saved goes: after a backward that does not retain the graph, or
 * (dying) with the node. A kept ctx only drops its saved tensors then. */
static void release_saved(st_ad_node *n, bool dying) {
    for (int k = 0; k < ST_MAX_IN; k++) {
        if (!dying && (n->kept >> k & 1u)) continue;
        st_tensor_decref(n->saved_in[k]);
        n->saved_in[k] = NULL;
    }
    st_tensor_decref(n->saved_out);
    n->saved_out = NULL;
    if (n->packed) {
        void **p = n->packed;
        n->packed = NULL;
        for (int k = 0; k <= ST_MAX_IN; k++)
            if (p[k] && saved_owner.release) saved_owner.release(p[k]);
        free(p);
    }
    if (!n->custom || !n->ctx) return;
    if (n->keep_ctx && !dying) {
        if (n->ctx_release) n->ctx_release(n->ctx);
        return;
    }
    if (n->ctx_free) n->ctx_free(n->ctx);
    n->ctx = NULL;
}

/* ---------------- gradient hooks and retain_grad ---------------- */
static st_ad_hook_call hook_call;
static void (*hook_release)(void *);

void st_ad_set_hook_owner(st_ad_hook_call call, void (*release)(void *)) {
    hook_call = call;
    hook_release = release;
}

void st_ad_hooks_release(void *hooks) {
    if (hooks && hook_release) hook_release(hooks);
}

static void slots_free(st_ad_node *n) {
    if (!n->slots) return;
    for (int k = 0; k < n->nout; k++) {
        st_ad_hooks_release(n->slots[k].hooks);
        /* a retaining tensor outliving its node cannot be: it holds it */
    }
    free(n->slots);
    n->slots = NULL;
}



/* The nodes t owns form a tree: its grad_fn when t is its only holder,
 * and below a node each next node that node alone holds (refcount 1: no
 * tensor or other edge holds it), with the hooks of the leaves only it
 * holds. Walked with an explicit stack (graphs
 * may be thousands of nodes deep); out of memory ends the walk early,
 * which only hides references. */
static int visit_node(const st_ad_node *n,
                      int (*visit)(void *obj, void (*release)(void *), void *arg),
                      void *arg) {
    for (int k = 0; n->slots && k < (n->nout > 0 ? n->nout : 1); k++)
        if (n->slots[k].hooks) {
            int r = visit(n->slots[k].hooks, hook_release, arg);
            if (r) return r;
        }
    for (int k = 0; n->packed && k <= ST_MAX_IN; k++)
        if (n->packed[k]) {
            int r = visit(n->packed[k], saved_owner.release, arg);
            if (r) return r;
        }
    return n->custom && n->ctx ? visit(n->ctx, n->ctx_free, arg) : 0;
}

static bool owned_node(const st_ad_node *n) {
    return n && __atomic_load_n(&n->refcount, __ATOMIC_RELAXED) == 1;
}

int st_ad_visit_owned(const st_tensor *t,
                      int (*visit)(void *obj, void (*release)(void *), void *arg),
                      void *arg) {
    if (!t->grad_fn) return t->hooks ? visit(t->hooks, hook_release, arg) : 0;
    if (!owned_node(t->grad_fn)) return 0;
    size_t cap = 16, top = 0;
    const st_ad_node **stack = malloc(cap * sizeof *stack);
    if (!stack) return visit_node(t->grad_fn, visit, arg);
    stack[top++] = t->grad_fn;
    int r = 0;
    while (top && !r) {
        const st_ad_node *n = stack[--top];
        r = visit_node(n, visit, arg);
        for (int k = 0; !r && k < n->nin; k++) {
            const st_tensor *leaf = n->next_leaf[k];
            if (leaf && leaf->hooks && __atomic_load_n(&leaf->refcount, __ATOMIC_RELAXED) == 1)
                r = visit(leaf->hooks, hook_release, arg);   /* a leaf only n holds */
            if (r || !owned_node(n->next_node[k])) continue;
            if (top == cap) {
                const st_ad_node **g = realloc(stack, 2 * cap * sizeof *stack);
                if (!g) break;
                stack = g;
                cap *= 2;
            }
            stack[top++] = n->next_node[k];
        }
    }
    free(stack);
    return r;
}

static struct ad_slot *slot_of(const st_tensor *t, bool make) {
    st_ad_node *n = t->grad_fn;
    if (!n || t->output_nr < 0 || t->output_nr >= (n->nout > 0 ? n->nout : 1)) return NULL;
    if (!n->slots && make)
        n->slots = calloc((size_t)(n->nout > 0 ? n->nout : 1), sizeof *n->slots);
    return n->slots ? &n->slots[t->output_nr] : NULL;
}

void *st_ad_hooks(const st_tensor *t) {
    if (!t->grad_fn) return t->hooks;
    struct ad_slot *sl = slot_of(t, false);
    return sl ? sl->hooks : NULL;
}

st_status st_ad_set_hooks(st_tensor *t, void *hooks) {
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK) {
        st_ad_hooks_release(hooks);
        return st_err_kind();
    }
    if (!t->requires_grad) {
        st_ad_hooks_release(hooks);
        return st_err(ST_ERR_RUNTIME, "cannot register a hook on a tensor that "
                      "doesn't require gradient");
    }
    void **where;
    if (!t->grad_fn) {
        where = &t->hooks;
    } else {
        struct ad_slot *sl = slot_of(t, true);
        if (!sl) {
            st_ad_hooks_release(hooks);
            return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        }
        where = &sl->hooks;
    }
    void *old = *where;
    *where = hooks;
    st_ad_hooks_release(old);
    return ST_OK;
}

st_status st_ad_retain_grad(st_tensor *t) {
    if (st_ad_view_stale(t) && st_ad_view_refresh(t) != ST_OK) return st_err_kind();
    if (!t->requires_grad)
        return st_err(ST_ERR_RUNTIME, "can't retain_grad on Tensor that has "
                      "requires_grad=False");
    if (!t->grad_fn || t->retains_grad) return ST_OK;
    struct ad_slot *sl = slot_of(t, true);
    if (!sl) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    sl->retain = t;
    t->retains_grad = true;
    return ST_OK;
}

/* The tensor goes, or its history is about to be replaced (an in-place
 * write): its slot no longer retains into it; a leaf's hooks go with it. */
void st_ad_tensor_gone(st_tensor *t) {
    if (t->retains_grad) {
        struct ad_slot *sl = slot_of(t, false);
        if (sl && sl->retain == t) sl->retain = NULL;
    }
    if (t->refcount == 0 && t->hooks) {
        void *h = t->hooks;
        t->hooks = NULL;
        st_ad_hooks_release(h);
    }
}

void st_ad_node_incref(st_ad_node *n) {
    if (n) __atomic_add_fetch(&n->refcount, 1, __ATOMIC_RELAXED);
}

/* Iterative, so a chain of a million nodes does not recurse a million
 * frames deep when its last reference goes. */
void st_ad_node_decref(st_ad_node *n) {
    st_ad_node *stack_buf[64];
    st_ad_node **stack = stack_buf;
    int sp = 0, cap = 64;
    while (n) {
        if (__atomic_sub_fetch(&n->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
            release_saved(n, true);
            for (int k = 0; k < n->nin; k++) {
                st_tensor_decref(n->next_leaf[k]);
                st_ad_node *nx = n->next_node[k];
                if (!nx) continue;
                if (sp == cap) {
                    st_ad_node **ns = malloc(sizeof *ns * (size_t)cap * 2);
                    if (!ns) { /* cannot grow: leak rather than crash */
                        continue;
                    }
                    memcpy(ns, stack, sizeof *ns * (size_t)sp);
                    if (stack != stack_buf) free(stack);
                    stack = ns;
                    cap *= 2;
                }
                stack[sp++] = nx;
            }
            if (n->gbuf)
                for (int k = 0; k < n->nout; k++) st_tensor_decref(n->gbuf[k]);
            free(n->gbuf);
            slots_free(n);
            if (n->anomaly_tb && anomaly_release) anomaly_release(n->anomaly_tb);
            free(n->cout_meta);
            free(n->next_node);
            free(n->next_nr);
            free(n->next_leaf);
            free(n);
            __atomic_sub_fetch(&nodes_alive, 1, __ATOMIC_RELAXED);
        }
        n = sp ? stack[--sp] : NULL;
    }
    if (stack != stack_buf) free(stack);
}

void *st_ad_node_pyobj(const st_ad_node *n) { return n->pyobj; }
void st_ad_node_set_pyobj(st_ad_node *n, void *obj) { n->pyobj = obj; }

const char *st_ad_node_name(const st_ad_node *n) { return n->name; }
bool st_ad_node_is_view(const st_ad_node *n) {
    return !n->custom && st_op(n->op)->kind == ST_OPK_VIEW;
}
int st_ad_node_num_inputs(const st_ad_node *n) { return n->nin; }
void st_ad_node_next(const st_ad_node *n, int k, st_ad_node **node,
                     st_tensor **leaf) {
    *node = (k >= 0 && k < n->nin) ? n->next_node[k] : NULL;
    *leaf = (k >= 0 && k < n->nin) ? n->next_leaf[k] : NULL;
}

/* A detached alias: same storage and geometry, no autograd history, so a
 * node saving its own output makes no reference cycle. */
static st_tensor *alias(st_tensor *t) {
    return st_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset);
}

/* Edge k of n to tensor t's history. */
static void set_edge(st_ad_node *n, int k, st_tensor *t) {
    if (!t || !t->requires_grad || !st_dtype_is_float(t->dtype)) return;
    /* a view taken in no_grad mode has no gradient accumulator (torch's) */
    if (!t->grad_fn && t->view_nograd) return;
    if (t->grad_fn) {
        st_ad_node_incref(t->grad_fn);
        n->next_node[k] = t->grad_fn;
        n->next_nr[k] = t->output_nr;
    } else {
        st_tensor_incref(t);
        n->next_leaf[k] = t;
    }
}

static void name_node(st_ad_node *n, const char *op) {
    char *p = n->name, *end = n->name + sizeof n->name - 12;
    bool up = true;
    for (; *op && p < end; op++) {
        if (*op == '_') {
            up = true;
            continue;
        }
        *p++ = up && *op >= 'a' && *op <= 'z' ? (char)(*op - 32) : *op;
        up = false;
    }
    strcpy(p, "Backward0");
}

/* A retained tensor's retain moves with it to its new history (hooks
 * stay on the old one), as PyTorch does for in-place writes. */
static void attach(st_tensor *out, st_ad_node *n, int nr) {
    st_ad_node *old = out->grad_fn;
    bool retain = out->retains_grad;
    if (retain) st_ad_tensor_gone(out);
    st_ad_node_incref(n);
    out->grad_fn = n;
    out->output_nr = nr;
    out->requires_grad = true;
    out->hist++; /* its views' histories are stale now (viewhist.c) */
    if (out->storage) {
        snprintf(out->storage->ad_name, sizeof out->storage->ad_name, "%s", n->name);
        out->storage->ad_ver = out->storage->version;
    }
    if (retain) {
        out->retains_grad = false;
        if (st_ad_retain_grad(out) != ST_OK) st_err_clear();
    }
    if (old) st_ad_node_decref(old);
}

/* ---------------- saved-tensor hooks ---------------- */
static _Thread_local struct {
    void **pairs;     /* owned references, the top last */
    int n, cap;
} shooks;

void st_ad_set_saved_hooks_owner(const st_ad_saved_owner *o) {
    if (o) saved_owner = *o;
    else memset(&saved_owner, 0, sizeof saved_owner);
}

st_status st_ad_saved_hooks_push(void *pair) {
    if (!saved_owner.pack || !saved_owner.unpack) {
        if (pair && saved_owner.release) saved_owner.release(pair);
        return st_err(ST_ERR_RUNTIME, "saved tensor hooks: no owner is set");
    }
    if (shooks.n == shooks.cap) {
        int nc = shooks.cap ? shooks.cap * 2 : 8;
        void **np = realloc(shooks.pairs, sizeof *np * (size_t)nc);
        if (!np) {
            if (saved_owner.release) saved_owner.release(pair);
            return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        }
        shooks.pairs = np;
        shooks.cap = nc;
    }
    shooks.pairs[shooks.n++] = pair;
    return ST_OK;
}

st_status st_ad_saved_hooks_pop(void) {
    if (!shooks.n)
        return st_err(ST_ERR_RUNTIME, "saved tensor hooks: pop without a push");
    void *pair = shooks.pairs[--shooks.n];
    if (!shooks.n) { /* the common case leaves nothing allocated behind */
        free(shooks.pairs);
        shooks.pairs = NULL;
        shooks.cap = 0;
    }
    if (saved_owner.release) saved_owner.release(pair);
    return ST_OK;
}

void *st_ad_saved_hooks_top(void) { return shooks.n ? shooks.pairs[shooks.n - 1] : NULL; }
int st_ad_saved_hooks_depth(void) { return shooks.n; }

/* Packs t (borrowed) into n->packed[k] with the top pair, in no-grad mode
 * and outside any trace, as PyTorch runs pack hooks. */
static st_status saved_pack(st_ad_node *n, int k, st_tensor *t) {
    if (!n->packed) {
        n->packed = calloc(ST_MAX_IN + 1, sizeof *n->packed);
        if (!n->packed) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    }
    uint32_t ver = t->storage->version;
    bool was_disabled = grad_disabled;
    grad_disabled = true;
    st_rt_trace_suspend();
    void *p = NULL;
    st_status s = saved_owner.pack(shooks.pairs[shooks.n - 1], t, &p);
    st_rt_trace_resume();
    grad_disabled = was_disabled;
    if (s == ST_OK && !p) s = st_err(ST_ERR_RUNTIME, "saved tensor pack hook returned nothing");
    if (s != ST_OK) {
        if (p && saved_owner.release) saved_owner.release(p);
        return s;
    }
    n->packed[k] = p;
    if (t->storage->version != ver)
        return st_err(ST_ERR_RUNTIME, "A saved tensor pack hook is modifying its input in "
                      "place. Tensors provided as input to pack hook cannot be modified by "
                      "in-place operations as this can lead to unexpected side-effects.");
    return ST_OK;
}

/* With hooks active: each tensor n saved goes through pack. A saved input
 * is handed over as the input itself (as PyTorch, so pack sees its
 * requires_grad), except in an in-place op (its target's history becomes
 * n); a saved output as its detached alias (PyTorch hands the output
 * itself, whose grad_fn is n: an identity pack hook then makes a cycle
 * that leaks). */
static st_status pack_saved(st_ad_node *n, const st_operand *in, int nin, bool inplace) {
    for (int k = 0; k < nin; k++) {
        if (!n->saved_in[k]) continue;
        st_tensor *t = inplace ? n->saved_in[k] : in[k].t;
        st_status s = saved_pack(n, k, t);
        st_tensor_decref(n->saved_in[k]);
        n->saved_in[k] = NULL;
        if (s != ST_OK) return s;
    }
    if (n->saved_out) {
        st_status s = saved_pack(n, ST_MAX_IN, n->saved_out);
        st_tensor_decref(n->saved_out);
        n->saved_out = NULL;
        if (s != ST_OK) return s;
    }
    return ST_OK;
}

/* ---------------- traced in-place writes into saved values ----------------
 * While a trace records (symtrace.compile translating a frame), the
 * storages that recorded nodes saved carry the trace's tag. An
 * in-place op recorded on one of them fails the trace (a graph break at
 * the op): the compiled graph would read the value from before the write
 * and give the functional gradient where eager's backward raises "modified
 * by an inplace operation"; split there, the write runs after the graph
 * whose node saved the value, whose backward then checks its version as
 * eager's does. Every traced in-place write into a value the trace made is
 * seen (st_ad_trace_will_write, before the op runs, so an in-place op's
 * own saves do not count), in grad mode or not, into values that require
 * grad or not: c.mul_(2) under no_grad after c = a.sigmoid() raises at
 * backward eagerly. (A graph input written in place is written back by the
 * compiled node, which checks its version itself: runtime/cfn.c.) A node gone
 * since (nothing would raise) only costs the break; a backward that frees
 * the graph draws a new tag.
 * The tag: a number per trace (st_ad_traced_saves_clear draws a fresh one,
 * unique across threads), written into each storage a recorded node saves;
 * a write finds its storage tagged with the current number. A storage freed
 * and reused by a later trace carries an old number: no stale match. */
static uint64_t trace_tags;                    /* the last number drawn */
static _Thread_local uint64_t traced_tag;      /* this thread's trace's; 0: none */

void st_ad_traced_saves_clear(void) {
    traced_tag = __atomic_add_fetch(&trace_tags, 1, __ATOMIC_RELAXED);
}

static void traced_save(const st_tensor *t) {
    if (t && t->storage && traced_tag) t->storage->traced_save = traced_tag;
}

static void traced_write(const st_tensor *t) {
    if (!t || !t->storage || !traced_tag || t->storage->traced_save != traced_tag ||
        !st_rt_trace_graph())
        return;
    /* recorded inside st_rt_eager's suspension of the trace: lifted for the
     * failure, which a suspended trace ignores */
    bool suspended = !st_rt_trace_active();
    if (suspended) st_rt_trace_resume();
    st_rt_trace_fail("an in-place write into a value saved for backward (eager's "
                     "backward raises 'modified by an inplace operation')");
    if (suspended) st_rt_trace_suspend();
}

void st_ad_trace_will_write(const st_tensor *t) {
    traced_write(t);
}

static st_ad_node *wrap_overwrite(st_ad_node *n, st_tensor *t);
static bool reaches(const st_ad_node *n, const st_ad_node *target);

st_status st_ad_record(st_op_id op, const st_operand *in, int nin,
                       const st_attrs *attrs, st_tensor **out, int nout,
                       bool inplace) {
    if (grad_disabled || nout != 1) return ST_OK;
    const st_graph *tg = st_rt_trace_graph(); /* st_rt_eager suspends it around the op */
    if (inplace && tg) traced_write(out[0]);
    st_ir_autodiff_init(); /* idempotent: the VJP slots, whatever ran first */
    /* the gradients the backward will want: those of the operands that
     * get an edge (set_edge's test); only what their rule reads is kept */
    unsigned needs = 0;
    for (int k = 0; k < nin; k++)
        if (in[k].t && in[k].t->requires_grad && st_dtype_is_float(in[k].t->dtype))
            needs |= 1u << k;
    const st_op_def *def = st_op(op);
    if (!needs || !def->vjp || !st_dtype_is_float(out[0]->dtype)) return ST_OK;
    unsigned saves = st_ir_vjp_saves_for(op, needs);
    st_ad_node *n = node_new(nin, 1);
    if (!n) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    n->op = op;
    if (attrs) n->attrs = *attrs;
    name_node(n, def->name);
    for (int k = 0; k < nin; k++) {
        if (!in[k].t) {
            n->is_scalar[k] = true;
            n->scalar[k] = in[k];
            continue;
        }
        st_tensor_meta(in[k].t, &n->in_meta[k]);
        if (saves & (1u << k)) {
            n->saved_in[k] = alias(in[k].t);
            n->saved_in_ver[k] = in[k].t->storage->version;
            if (!n->saved_in[k]) goto oom;
        }
        set_edge(n, k, in[k].t);
    }
    st_tensor_meta(out[0], &n->out_meta);
    if (saves & ST_VJP_SAVES_OUT) {
        n->saved_out = alias(out[0]);
        n->saved_out_ver = out[0]->storage->version;
        if (!n->saved_out) goto oom;
    }
    /* a constant index made for the op (flip, roll) stays: not counted */
    if (op == ST_OP_INDEX_SELECT && attrs && (attrs->flags & ST_AD_KEEP_INDEX) && !shooks.n &&
        n->saved_in[1]) {
        n->kept = 1u << 1;
        saves &= ~n->kept;
    }
    /* a scalar operand its rule reads counts, as torch saves it (a * 2) */
    n->saves = (saves & (ST_VJP_SAVES_OUT | ((1u << nin) - 1))) != 0;
    if (shooks.n && pack_saved(n, in, nin, inplace) != ST_OK) goto oom;
    for (int k = 0; tg && k < nin; k++) traced_save(n->saved_in[k]);
    if (tg) traced_save(n->saved_out);
    if (inplace && op == ST_OP_COPY && out[0]->grad_fn && !reaches(n, out[0]->grad_fn)) {
        /* copy_ over a history the source does not lead to */
        st_ad_node *w = wrap_overwrite(n, out[0]);
        if (!w) goto oom;
        st_ad_node_decref(n);
        n = w;
    }
    attach(out[0], n, 0);
    st_ad_node_decref(n); /* the output holds it now */
    return ST_OK;
oom:
    st_ad_node_decref(n);
    return st_err_kind() ? st_err_kind() : st_err(ST_ERR_MEMORY, "autograd: out of memory");
}

/* The overwritten history's gradient: zeros (torch's CopyBackwards). */
static st_status zero_grads(void *ctx, int nout, st_tensor *const *gout, int nin,
                            st_tensor **gin) {
    (void)ctx;
    if (nin < 1) return ST_OK;
    gin[0] = NULL;
    if (nout < 1 || !gout[0]) return ST_OK;
    st_operand src = {.t = gout[0]};
    st_tensor *z = NULL, *done = NULL;
    if (st_rt_eager(ST_OP_COPY, &src, 1, NULL, NULL, &z) != 1) return st_err_kind();
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = z->dtype;
    st_operand like = {.t = z};
    st_tensor *g[ST_MAX_OUT] = {z};
    if (st_rt_eager(ST_OP_FULL, &like, 1, &a, g, &done) != 1) {
        st_tensor_decref(z);
        return st_err_kind();
    }
    st_tensor_decref(done);
    gin[0] = z;
    return ST_OK;
}

/* copy_ over a history: torch's CopyBackwards sends zeros into the
 * overwritten history and the gradient into the source's. Here a node
 * with two edges: the old history (zeros) and the copy's own node n. */
static st_status overwrite_grads(void *ctx, int nout, st_tensor *const *gout, int nin,
                                 st_tensor **gin) {
    st_status s = zero_grads(ctx, nout, gout, 1, gin);
    if (s != ST_OK || nin < 2) return s;
    gin[1] = nout > 0 ? gout[0] : NULL;
    st_tensor_incref(gin[1]);
    return ST_OK;
}

/* Does the history below n reach node target within a few nodes? (the
 * in-place forms written as self.copy_(f(self)) reach it at once; not
 * found, the wrap is only an extra node) */
static bool reaches(const st_ad_node *n, const st_ad_node *target) {
    const st_ad_node *seen[32];
    int ns = 0;
    seen[ns++] = n;
    for (int i = 0; i < ns; i++)
        for (int k = 0; k < seen[i]->nin; k++) {
            const st_ad_node *nx = seen[i]->next_node[k];
            if (!nx) continue;
            if (nx == target) return true;
            bool dup = false;
            for (int j = 0; j < ns && !dup; j++) dup = seen[j] == nx;
            if (!dup && ns < 32) seen[ns++] = nx;
        }
    return false;
}

static st_ad_node *wrap_overwrite(st_ad_node *n, st_tensor *t) {
    st_ad_node *w = node_new(2, 1);
    if (!w) return NULL;
    w->custom = true;
    w->fn = overwrite_grads;
    snprintf(w->name, sizeof w->name, "CopyBackwards");
    st_tensor_meta(t, &w->in_meta[0]);
    set_edge(w, 0, t);              /* t's history before the write */
    w->in_meta[1] = n->out_meta;
    st_ad_node_incref(n);
    w->next_node[1] = n;
    w->next_nr[1] = 0;
    w->cout_meta = calloc(1, sizeof *w->cout_meta);
    if (!w->cout_meta) {
        st_ad_node_decref(w);
        return NULL;
    }
    w->cout_meta[0] = n->out_meta;
    return w;
}

st_status st_ad_record_overwrite(st_op_id op, st_tensor *t) {
    if (grad_disabled || !t || !t->requires_grad || !t->grad_fn) return ST_OK;
    traced_write(t);
    st_ad_node *n = node_new(1, 1);
    if (!n) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    n->custom = true;
    n->fn = zero_grads;
    st_tensor_meta(t, &n->in_meta[0]);
    set_edge(n, 0, t);     /* t's history before the write */
    name_node(n, st_op(op)->name);
    n->cout_meta = calloc(1, sizeof *n->cout_meta);
    if (!n->cout_meta) {
        st_ad_node_decref(n);
        return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    }
    st_tensor_meta(t, &n->cout_meta[0]);
    attach(t, n, 0);
    st_ad_node_decref(n);
    return ST_OK;
}

st_ad_node *st_ad_custom_node(const char *name, st_ad_custom_fn fn, void *ctx,
                              void (*ctx_free)(void *), int nin,
                              st_tensor *const *inputs, int nout,
                              st_tensor *const *outputs) {
    /* a custom backward cannot be expressed as statements of a trace */
    st_rt_trace_fail("a custom autograd node (autograd.Function / PyLayer) "
                     "cannot be traced");
    for (int k = 0; k < nin; k++)
        if (st_ad_view_stale(inputs[k]) && st_ad_view_refresh(inputs[k]) != ST_OK)
            return NULL;
    st_ad_node *n = node_new(nin, nout);
    if (!n) {
        st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        return NULL;
    }
    n->custom = true;
    n->fn = fn;
    n->ctx = ctx;
    n->ctx_free = ctx_free;
    n->saves = ctx != NULL;   /* freed with it, unless st_ad_node_keep_ctx */
    snprintf(n->name, sizeof n->name, "%s", name ? name : "CustomBackward");
    n->cout_meta = calloc((size_t)(nout > 0 ? nout : 1), sizeof *n->cout_meta);
    if (!n->cout_meta) {
        st_ad_node_decref(n);
        st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        return NULL;
    }
    for (int k = 0; k < nin; k++) {
        if (inputs[k] && k < ST_MAX_IN) st_tensor_meta(inputs[k], &n->in_meta[k]);
        set_edge(n, k, inputs[k]);
    }
    for (int k = 0; k < nout; k++) {
        if (!outputs[k]) continue;
        st_tensor_meta(outputs[k], &n->cout_meta[k]);
        attach(outputs[k], n, k);
    }
    return n; /* the caller's reference */
}

/* ---------------- VJP programs (cached) ---------------- */
typedef struct {
    int32_t op, nin, needs;
    struct {
        int8_t scalar, dtype, ndim, saved;
        int64_t shape[ST_MAX_DIMS];
    } in[ST_MAX_IN];
    int8_t out_dtype, out_ndim, out_saved, gout_dtype, device;
    int64_t out_shape[ST_MAX_DIMS];
    st_attrs attrs;
} vkey;

typedef struct {
    vkey key;
    uint64_t hash;
    st_kprog *prog;
    st_backend *be;
    void *compiled;
    int in_value[ST_MAX_IN];  /* program value of each operand */
    int out_value, gout_value;
    int grad_output[ST_MAX_IN]; /* graph output index of operand k's grad, -1 */
} ventry;

static struct {
    pthread_mutex_t mu;
    ventry **slots;
    size_t cap, n;
    st_ad_stats stats;
} vcache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void ventry_free(ventry *e) {
    if (!e) return;
    if (e->compiled) e->be->release(e->be, e->compiled);
    st_kprog_free(e->prog);
    free(e);
}

static ventry *vlookup(const vkey *k, uint64_t h) {
    if (!vcache.cap) return NULL;
    for (size_t i = h & (vcache.cap - 1);; i = (i + 1) & (vcache.cap - 1)) {
        ventry *e = vcache.slots[i];
        if (!e) return NULL;
        if (e->hash == h && !memcmp(&e->key, k, sizeof *k)) return e;
    }
}

static st_status vinsert(ventry *e) {
    if ((vcache.n + 1) * 2 > vcache.cap) {
        size_t ncap = vcache.cap ? vcache.cap * 2 : 256;
        ventry **ns = calloc(ncap, sizeof *ns);
        if (!ns) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        for (size_t i = 0; i < vcache.cap; i++) {
            ventry *o = vcache.slots[i];
            if (!o) continue;
            size_t j = o->hash & (ncap - 1);
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = o;
        }
        free(vcache.slots);
        vcache.slots = ns;
        vcache.cap = ncap;
    }
    size_t j = e->hash & (vcache.cap - 1);
    while (vcache.slots[j]) j = (j + 1) & (vcache.cap - 1);
    vcache.slots[j] = e;
    vcache.n++;
    vcache.stats.programs = (int64_t)vcache.n;
    return ST_OK;
}

/* The VJP graph of op node n (DCE'd): its inputs are n's tensor
 * operands in order, then n's output, then the output's gradient (dtype
 * gdt); n's scalar operands are constants of their values. grad_output[k]
 * is the graph output index of operand k's gradient, or -1 (not in needs,
 * or none). */
static st_graph *vjp_graph(const st_ad_node *n, st_dtype gdt, unsigned needs,
                           bool create, int *grad_output) {
    const st_op_def *def = st_op(n->op);
    st_graph *g = st_ir_graph_new();
    if (!g) return NULL;
    int ids[ST_MAX_IN];
    for (int k = 0; k < n->nin; k++)
        if (!n->is_scalar[k]) ids[k] = st_ir_add_input(g, &n->in_meta[k], false);
    int out_id = st_ir_add_input(g, &n->out_meta, false);
    st_meta gm = n->out_meta;
    gm.dtype = gdt;
    int gout_id = st_ir_add_input(g, &gm, false);
    for (int k = 0; k < n->nin; k++)
        if (n->is_scalar[k])
            ids[k] = st_ir_add_const(g, n->scalar[k].sdtype, n->scalar[k].f,
                                     n->scalar[k].i);
    st_stmt s;
    memset(&s, 0, sizeof s);
    s.op = n->op;
    s.nin = n->nin;
    /* helper values the forward handed the rule have no history: a
     * gradient that is differentiated again computes them from their
     * operand (they stay unread inputs) */
    if (create && s.nin > st_ir_vjp_helpers_from(n->op)) s.nin = st_ir_vjp_helpers_from(n->op);
    s.nout = 1;
    for (int k = 0; k < n->nin; k++) s.in[k] = ids[k];
    s.out[0] = out_id;
    s.attrs = n->attrs;
    int in_grads[ST_MAX_IN];
    for (int k = 0; k < ST_MAX_IN; k++) in_grads[k] = -1;
    int og[ST_MAX_OUT] = {gout_id, -1, -1};
    if (def->vjp(g, &s, og, in_grads) != ST_OK) {
        st_ir_graph_free(g);
        return NULL;
    }
    int nouts = 0;
    for (int k = 0; k < n->nin; k++) {
        grad_output[k] = -1;
        if (in_grads[k] < 0 || !(needs & (1u << k))) continue;
        st_ir_mark_output(g, in_grads[k]);
        grad_output[k] = nouts++;
    }
    st_graph *live = st_ir_dce(g);
    st_ir_graph_free(g);
    return live;
}

static ventry *vbuild(const vkey *key, uint64_t h, const st_ad_node *n,
                      st_dtype gdt) {
    ventry *e = calloc(1, sizeof *e);
    if (!e) {
        st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        return NULL;
    }
    e->key = *key;
    e->hash = h;
    st_graph *live = vjp_graph(n, gdt, (unsigned)key->needs, false, e->grad_output);
    if (!live) {
        free(e);
        return NULL;
    }
    /* the process-wide fusion options (SYMTRACE_FUSION, symtrace.config) */
    e->prog = st_fuse_lower(live, NULL);
    st_ir_graph_free(live);
    if (!e->prog) {
        free(e);
        return NULL;
    }
    /* inputs keep their order; the operands' scalars are the first consts */
    const st_graph *pg = e->prog->graph;
    int ti = 0, ci = 0;
    for (int k = 0; k < n->nin; k++) {
        if (!n->is_scalar[k]) {
            e->in_value[k] = pg->inputs[ti++];
            continue;
        }
        int seen = 0, v;
        for (v = 0; v < pg->nvalues; v++)
            if (pg->values[v].kind == ST_VAL_CONST && seen++ == ci) break;
        ci++;
        e->in_value[k] = v;
    }
    e->out_value = pg->inputs[ti++];
    e->gout_value = pg->inputs[ti++];
    e->be = st_rt_backend_for((st_device_type)key->device); /* as eager ops */
    if (!e->be) {
        ventry_free(e);
        return NULL;
    }
    e->compiled = e->be->compile(e->be, e->prog->kernels, e->prog->nkernels);
    if (!e->compiled) {
        ventry_free(e);
        return NULL;
    }
    vcache.stats.program_compiles++;
    return e;
}

/* torch's legacy type name of t ("symtrace.FloatTensor", as Tensor.type()) */
static void type_name(const st_tensor *t, char *buf, size_t cap) {
    static const char *n[ST_NDTYPES] = {
        [ST_BOOL] = "Bool", [ST_UINT8] = "Byte", [ST_INT8] = "Char",
        [ST_INT16] = "Short", [ST_INT32] = "Int", [ST_INT64] = "Long",
        [ST_FLOAT16] = "Half", [ST_BFLOAT16] = "BFloat16",
        [ST_FLOAT32] = "Float", [ST_FLOAT64] = "Double"};
    const char *d = (unsigned)t->dtype < ST_NDTYPES && n[t->dtype] ? n[t->dtype] : "";
    bool cuda = st_tensor_device(t)->type == ST_DEV_CUDA;
    snprintf(buf, cap, "symtrace.%s%sTensor", cuda ? "cuda." : "", d);
}

/* A node's name as torch 2.13's version error names it: without its
 * "Backward<N>" ("SigmoidBackward0" -> "Sigmoid"). */
static void op_name(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", name);
    char *b = NULL;
    for (char *p = strstr(buf, "Backward"); p; p = strstr(p + 1, "Backward")) b = p;
    if (!b || b == buf) return;
    const char *q = b + 8;
    while (*q >= '0' && *q <= '9') q++;
    if (!*q) *b = '\0';
}

/* Saved slot k of n (ST_MAX_IN: its output) was written since it was
 * saved: torch's error, naming the history the value has (a saved output:
 * n itself; an input: the history a write in grad mode gave it since it
 * was saved, else its history when saved). */
static st_status check_version(const st_ad_node *n, int k, const st_tensor *t,
                               uint32_t ver) {
    if (!t || t->storage->version == ver) return ST_OK;
    char sb[128], tn[48], which[96] = "", on[48];
    const st_ad_node *h = k < ST_MAX_IN && k < n->nin ? n->next_node[k] : n;
    bool rewritten = k < ST_MAX_IN && t->storage->ad_name[0] &&
                     (int32_t)(t->storage->ad_ver - ver) > 0;
    if (h || rewritten) {
        op_name(rewritten ? t->storage->ad_name : h->name, on, sizeof on);
        snprintf(which, sizeof which, ", which is output %d of %s,",
                 k < ST_MAX_IN ? n->next_nr[k] : 0, on);
    }
    type_name(t, tn, sizeof tn);
    return st_err(ST_ERR_RUNTIME,
                  "one of the variables needed for gradient computation has "
                  "been modified by an inplace operation: [%s %s]%s is at version %u; "
                  "expected version %u instead. Hint: %s", tn,
                  st_shape_str(t->shape, t->ndim, sb, sizeof sb), which,
                  (unsigned)t->storage->version, (unsigned)ver,
                  anomaly_on ? "the backtrace further above shows the operation that failed "
                               "to compute its gradient. The variable in question was changed "
                               "in there or anywhere later. Good luck!"
                             : "enable anomaly detection to find the operation that failed to "
                               "compute its gradient, with "
                               "symtrace.autograd.set_detect_anomaly(True, check_nan=False).");
}

static st_status apply_vjp(st_ad_node *n, st_tensor *gout, st_tensor **sv, st_tensor **gin);

static bool has_saved(const st_ad_node *n, int k) {
    if (n->packed && n->packed[k]) return true;
    return k < ST_MAX_IN ? n->saved_in[k] != NULL : n->saved_out != NULL;
}

/* *out: a new reference to what n saved in slot k (ST_MAX_IN: its
 * output), unpacked when packed, or NULL when nothing was saved there.
 * Without hooks the storage version is checked; with hooks the value is
 * the hooks' business (as PyTorch), but it must have the saved meta. */
static st_status saved_get(st_ad_node *n, int k, st_device_type dev, st_tensor **out) {
    *out = NULL;
    void *p = n->packed ? n->packed[k] : NULL;
    if (!p) {
        st_tensor *t = k < ST_MAX_IN ? n->saved_in[k] : n->saved_out;
        uint32_t ver = k < ST_MAX_IN ? n->saved_in_ver[k] : n->saved_out_ver;
        if (check_version(n, k, t, ver) != ST_OK) return st_err_kind();
        st_tensor_incref(t);
        *out = t;
        return ST_OK;
    }
    st_tensor *t = NULL;
    st_status s = saved_owner.unpack ? saved_owner.unpack(p, &t)
                                     : st_err(ST_ERR_RUNTIME, "saved tensor hooks: no owner");
    if (s != ST_OK) {
        st_tensor_decref(t);
        return s;
    }
    if (!t)
        return st_err(ST_ERR_RUNTIME, "saved tensor unpack hook returned nothing (%s)", n->name);
    const st_meta *m = k < ST_MAX_IN ? &n->in_meta[k] : &n->out_meta;
    const char *what = k < ST_MAX_IN ? "an input" : "the output";
    char a[128], b[128];
    if (t->dtype != m->dtype)
        s = st_err(ST_ERR_RUNTIME, "saved tensor unpack hook returned a tensor of dtype %s "
                   "for %s of %s saved as %s", st_dtype_name(t->dtype), what, n->name,
                   st_dtype_name(m->dtype));
    else if (t->ndim != m->ndim ||
             memcmp(t->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim))
        s = st_err(ST_ERR_RUNTIME, "saved tensor unpack hook returned a tensor of shape %s "
                   "for %s of %s saved with shape %s",
                   st_shape_str(t->shape, t->ndim, a, sizeof a), what, n->name,
                   st_shape_str(m->shape, m->ndim, b, sizeof b));
    else if (st_tensor_device(t)->type != dev)
        s = st_err(ST_ERR_RUNTIME, "saved tensor unpack hook returned a tensor on another "
                   "device than the gradients of %s (move it back in unpack)", n->name);
    if (s != ST_OK) {
        st_tensor_decref(t);
        return s;
    }
    *out = t;
    return ST_OK;
}

/* Runs an op node's VJP: gin[k] new references or NULL. */
static st_status apply_op(st_ad_node *n, st_tensor *gout, st_tensor **gin) {
    st_tensor *sv[ST_MAX_IN + 1] = {0};   /* the saved tensors, owned */
    st_device_type dev = st_tensor_device(gout)->type;
    for (int k = 0; k <= ST_MAX_IN; k++) {
        if (k < ST_MAX_IN && (k >= n->nin || n->is_scalar[k])) continue;
        if (saved_get(n, k, dev, &sv[k]) != ST_OK) {
            st_status s = st_err_kind();
            for (int j = 0; j < k; j++) st_tensor_decref(sv[j]);
            return s;
        }
    }
    st_status s = apply_vjp(n, gout, sv, gin);
    for (int k = 0; k <= ST_MAX_IN; k++) st_tensor_decref(sv[k]);
    return s;
}

/* The VJP program of n run on gout and the saved tensors sv (their
 * references move into the program's values; sv[k] NULL after). */
static st_status apply_vjp(st_ad_node *n, st_tensor *gout, st_tensor **sv, st_tensor **gin) {
    vkey key;
    memset(&key, 0, sizeof key);
    key.op = n->op;
    key.nin = n->nin;
    for (int k = 0; k < n->nin; k++) {
        if (n->next_node[k] || n->next_leaf[k]) key.needs |= 1 << k;
        key.in[k].scalar = n->is_scalar[k];
        if (n->is_scalar[k]) {
            key.in[k].dtype = (int8_t)n->scalar[k].sdtype;
            continue;
        }
        key.in[k].dtype = (int8_t)n->in_meta[k].dtype;
        key.in[k].ndim = (int8_t)n->in_meta[k].ndim;
        key.in[k].saved = has_saved(n, k);
        memcpy(key.in[k].shape, n->in_meta[k].shape, sizeof key.in[k].shape);
    }
    key.out_dtype = (int8_t)n->out_meta.dtype;
    key.out_ndim = (int8_t)n->out_meta.ndim;
    key.out_saved = has_saved(n, ST_MAX_IN);
    key.gout_dtype = (int8_t)gout->dtype;
    key.device = (int8_t)st_tensor_device(gout)->type;
    memcpy(key.out_shape, n->out_meta.shape, sizeof key.out_shape);
    key.attrs = n->attrs;
    uint64_t h = XXH3_64bits(&key, sizeof key);

    pthread_mutex_lock(&vcache.mu);
    ventry *e = vlookup(&key, h);
    if (e) {
        vcache.stats.program_hits++;
    } else {
        e = vbuild(&key, h, n, gout->dtype);
        if (!e || vinsert(e) != ST_OK) {
            if (e) ventry_free(e);
            pthread_mutex_unlock(&vcache.mu);
            return st_err_kind() ? st_err_kind()
                                 : st_err(ST_ERR_RUNTIME, "%s: no VJP program", n->name);
        }
    }
    pthread_mutex_unlock(&vcache.mu);

    st_kprog *p = e->prog;
    st_graph *pg = p->graph;
    st_tensor **vals = calloc((size_t)pg->nvalues, sizeof *vals);
    if (!vals) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    for (int k = 0; k < n->nin; k++) {
        if (n->is_scalar[k]) {
            pg->values[e->in_value[k]].fconst = n->scalar[k].f;
            pg->values[e->in_value[k]].iconst = n->scalar[k].i;
        } else if (sv[k]) {
            vals[e->in_value[k]] = sv[k];
            sv[k] = NULL;
        }
    }
    if (sv[ST_MAX_IN]) {
        vals[e->out_value] = sv[ST_MAX_IN];
        sv[ST_MAX_IN] = NULL;
    }
    st_tensor_incref(gout);
    vals[e->gout_value] = gout;
    st_status s = st_rt_exec(p, e->be, e->compiled, vals);
    if (s == ST_OK) {
        for (int k = 0; k < n->nin; k++) {
            gin[k] = NULL;
            if (e->grad_output[k] < 0) continue;
            int v = pg->outputs[e->grad_output[k]];
            gin[k] = vals[v];
            st_tensor_incref(gin[k]);
        }
    }
    for (int v = 0; v < pg->nvalues; v++) st_tensor_decref(vals[v]);
    free(vals);
    return s;
}

/* ---------------- create_graph: the VJP run as recorded eager ops ----------------
 * With create_graph=True the backward's own ops go on the tape, so the
 * gradients it makes have a history of their own. An op node's VJP graph
 * then runs statement by statement through st_rt_eager
 * (st_rt_graph_run_eager) instead of as a compiled program, and what the
 * node saved is first linked to the history it had: a saved input to the
 * edge of that input (its node and output number, or the leaf itself), the
 * saved output to this node. A gradient of the gradient then flows into
 * the forward's history as well as into the incoming gradient's. */

/* *t (owned) becomes an alias of itself whose history is (node, nr), or
 * the leaf; unchanged when neither (no gradient wanted there). */
static st_status link_saved(st_tensor **t, st_ad_node *node, int nr, st_tensor *leaf) {
    if (leaf) {
        st_tensor_incref(leaf);
        st_tensor_decref(*t);
        *t = leaf;
        return ST_OK;
    }
    if (!node) return ST_OK;
    st_tensor *a = alias(*t);
    if (!a) return st_err_kind() ? st_err_kind() : st_err(ST_ERR_MEMORY, "autograd: out of memory");
    attach(a, node, nr);
    st_tensor_decref(*t);
    *t = a;
    return ST_OK;
}

/* A stand-in for an operand the VJP rule does not read at run time (it
 * serves as a meta only, e.g. the like-operand of FULL): a zero of m's
 * dtype on dev's device (gout's), broadcast to m's shape. */
static st_tensor *meta_only(const st_meta *m, st_tensor *dev) {
    st_tensor *z = st_rt_zeros_on(dev, 0, NULL, m->dtype);
    int64_t st0[ST_MAX_DIMS] = {0};
    st_tensor *v = z ? st_tensor_view_of(z, m->ndim, m->shape, st0, z->offset) : NULL;
    st_tensor_decref(z);
    return v;
}

static st_status apply_op_create(st_ad_node *n, st_tensor *gout, st_tensor **gin) {
    st_tensor *sv[ST_MAX_IN + 1] = {0};
    st_tensor *in[ST_MAX_IN + 2] = {0}, *outs[ST_MAX_IN] = {0};
    st_graph *g = NULL;
    st_device_type dev = st_tensor_device(gout)->type;
    unsigned needs = 0;
    int grad_output[ST_MAX_IN], nin_t = 0;
    st_status s = ST_OK;
    for (int k = 0; k <= ST_MAX_IN && s == ST_OK; k++) {
        if (k < ST_MAX_IN && (k >= n->nin || n->is_scalar[k])) continue;
        s = saved_get(n, k, dev, &sv[k]);
        if (s == ST_OK && sv[k])
            s = k < ST_MAX_IN ? link_saved(&sv[k], n->next_node[k], n->next_nr[k], n->next_leaf[k])
                              : link_saved(&sv[k], n, 0, NULL);
    }
    for (int k = 0; k < n->nin; k++)
        if (n->next_node[k] || n->next_leaf[k]) needs |= 1u << k;
    if (s == ST_OK && !(g = vjp_graph(n, gout->dtype, needs, true, grad_output)))
        s = st_err_kind() ? st_err_kind() : st_err(ST_ERR_RUNTIME, "%s: no VJP graph", n->name);
    for (int k = 0; k < n->nin && s == ST_OK; k++) {
        if (n->is_scalar[k]) continue;
        in[nin_t] = sv[k] ? sv[k] : meta_only(&n->in_meta[k], gout);
        if (sv[k]) st_tensor_incref(sv[k]);
        if (!in[nin_t++]) s = st_err_kind();
    }
    if (s == ST_OK) {
        in[nin_t] = sv[ST_MAX_IN] ? sv[ST_MAX_IN] : meta_only(&n->out_meta, gout);
        if (sv[ST_MAX_IN]) st_tensor_incref(sv[ST_MAX_IN]);
        if (!in[nin_t++]) s = st_err_kind();
    }
    if (s == ST_OK) {
        st_tensor_incref(gout);
        in[nin_t++] = gout;
        s = st_rt_graph_run_eager(g, in, outs);
    }
    for (int k = 0; k < n->nin; k++) {
        gin[k] = NULL;
        if (s == ST_OK && grad_output[k] >= 0) {
            gin[k] = outs[grad_output[k]];
            outs[grad_output[k]] = NULL;
        }
    }
    for (int k = 0; k < ST_MAX_IN; k++) st_tensor_decref(outs[k]);
    for (int k = 0; k < nin_t; k++) st_tensor_decref(in[k]);
    for (int k = 0; k <= ST_MAX_IN; k++) st_tensor_decref(sv[k]);
    st_ir_graph_free(g);
    return s;
}

/* A once-differentiable custom node's gradients under create_graph: each
 * gets a node that raises if a gradient ever reaches it, with the custom
 * node's edges (so grad() does not prune it), as torch's DelayedError. */
static st_status delayed_error(void *ctx, int nout, st_tensor *const *gout, int nin,
                               st_tensor **gin) {
    for (int k = 0; k < nin; k++) gin[k] = NULL;
    for (int k = 0; k < nout; k++)
        if (gout[k])
            return st_err(ST_ERR_RUNTIME, "trying to differentiate twice through %s, whose "
                          "backward is not differentiable (a compiled graph that writes into an "
                          "input its saved values read, or a differentiable value into an input, "
                          "or a PyLayer traced inside a compiled graph): gradients of "
                          "its gradients are not supported; run that part eagerly (outside "
                          "symtrace.compile) for higher-order gradients", (const char *)ctx);
    return ST_OK;
}

static st_status delay_errors(st_ad_node *n, st_tensor **gin) {
    int nout = 0;
    for (int k = 0; k < n->nin; k++) nout += gin[k] != NULL;
    if (!nout) return ST_OK;
    st_ad_node *d = node_new(n->nin, n->nin);
    char *name = d ? strdup(n->name) : NULL;
    if (d) d->cout_meta = calloc((size_t)(n->nin > 0 ? n->nin : 1), sizeof *d->cout_meta);
    if (!d || !name || !d->cout_meta) {
        free(name);
        if (d) st_ad_node_decref(d);
        return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    }
    d->custom = true;
    d->fn = delayed_error;
    d->ctx = name;
    d->ctx_free = free;
    d->keep_ctx = true;       /* its name, for the error of every backward */
    snprintf(d->name, sizeof d->name, "DelayedError");
    for (int k = 0; k < n->nin; k++) {
        if (k < ST_MAX_IN) d->in_meta[k] = n->in_meta[k];
        if (n->next_node[k]) {
            st_ad_node_incref(n->next_node[k]);
            d->next_node[k] = n->next_node[k];
            d->next_nr[k] = n->next_nr[k];
        } else if (n->next_leaf[k]) {
            st_tensor_incref(n->next_leaf[k]);
            d->next_leaf[k] = n->next_leaf[k];
        }
    }
    st_status s = ST_OK;
    for (int k = 0; k < n->nin && s == ST_OK; k++) {
        if (!gin[k]) continue;
        st_tensor *a = alias(gin[k]); /* the node's result may be shared */
        if (!a) {
            s = st_err_kind() ? st_err_kind() : st_err(ST_ERR_MEMORY, "autograd: out of memory");
            break;
        }
        st_tensor_meta(a, &d->cout_meta[k]);
        attach(a, d, k);
        st_tensor_decref(gin[k]);
        gin[k] = a;
    }
    st_ad_node_decref(d);
    return s;
}

void st_ad_node_set_once_differentiable(st_ad_node *n) {
    if (n) n->once = true;
}

void st_ad_node_keep_ctx(st_ad_node *n, void (*release_saved)(void *ctx)) {
    if (!n || !n->custom) return;
    n->keep_ctx = true;
    n->ctx_release = release_saved;
    n->saves = false;
}

void st_ad_stats_get(st_ad_stats *out) {
    pthread_mutex_lock(&vcache.mu);
    *out = vcache.stats;
    pthread_mutex_unlock(&vcache.mu);
    out->nodes_alive = __atomic_load_n(&nodes_alive, __ATOMIC_RELAXED);
}

/* ---------------- the engine ---------------- */
static st_tensor *add_grads(st_tensor *a, st_tensor *b) {
    st_operand in[2] = {{.t = a}, {.t = b}};
    st_tensor *out = NULL;
    return st_rt_eager(ST_OP_ADD, in, 2, NULL, NULL, &out) == 1 ? out : NULL;
}

static st_tensor *ones_like(const st_tensor *t) {
    st_operand like = {.t = (st_tensor *)t};
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.f[0] = 1.0;
    a.dtype = t->dtype;
    st_tensor *out = NULL;
    return st_rt_eager(ST_OP_FULL, &like, 1, &a, NULL, &out) == 1 ? out : NULL;
}

/* Gradient g (new ref, consumed) for a tensor of meta m: checks it. */
static st_status check_grad(const char *who, const st_tensor *g, const st_meta *m) {
    if (g->ndim == m->ndim && !memcmp(g->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim))
        return ST_OK;
    char a[128], b[128];
    return st_err(ST_ERR_RUNTIME, "%s returned a gradient of shape %s for an input "
                  "of shape %s", who, st_shape_str(g->shape, g->ndim, a, sizeof a),
                  st_shape_str(m->shape, m->ndim, b, sizeof b));
}

typedef struct {
    st_ad_node **items;
    int n, cap;
} nodelist;

static st_status push(nodelist *l, st_ad_node *n) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 64;
        st_ad_node **ni = realloc(l->items, sizeof *ni * (size_t)nc);
        if (!ni) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        l->items = ni;
        l->cap = nc;
    }
    l->items[l->n++] = n;
    return ST_OK;
}

/* The ready nodes as a heap, the latest created on top: a backward runs
 * them in torch's order (its ReadyQueue by sequence_nr), which decides what
 * a backward that fails part-way has already accumulated. */
static st_status ready_push(nodelist *l, st_ad_node *n) {
    st_status s = push(l, n);
    if (s != ST_OK) return s;
    for (int i = l->n - 1; i > 0;) {
        int up = (i - 1) / 2;
        if (l->items[up]->seq >= l->items[i]->seq) break;
        st_ad_node *t = l->items[up];
        l->items[up] = l->items[i];
        l->items[i] = t;
        i = up;
    }
    return ST_OK;
}

static st_ad_node *ready_pop(nodelist *l) {
    st_ad_node *top = l->items[0];
    l->items[0] = l->items[--l->n];
    for (int i = 0;;) {
        int a = 2 * i + 1, b = a + 1, m = i;
        if (a < l->n && l->items[a]->seq > l->items[m]->seq) m = a;
        if (b < l->n && l->items[b]->seq > l->items[m]->seq) m = b;
        if (m == i) break;
        st_ad_node *t = l->items[m];
        l->items[m] = l->items[i];
        l->items[i] = t;
        i = m;
    }
    return top;
}

/* What the engine does with gradients reaching leaves and captured
 * non-leaf inputs. */
typedef struct {
    st_tensor *leaf;              /* borrowed (the graph holds it) */
    st_tensor *g;                 /* summed so far, owned */
    int deps;                     /* edges still to deliver */
    int edges;                    /* edges in all */
} hooked_leaf;

typedef struct {
    bool accumulate;              /* backward(): into leaf .grad */
    st_tensor *const *inputs;     /* grad(): the inputs asked for */
    int ninputs;
    st_tensor **results;
    /* leaves with hooks, and in backward() every leaf: the gradient is
     * summed over all edges first, so a hook sees it once, whole, and .grad
     * takes it only once complete, as PyTorch's AccumulateGrad (a backward
     * that fails part-way leaves .grad as it was for a leaf whose gradient
     * was still incomplete) */
    hooked_leaf *hl;
    int nhl, hl_cap;
    int *hl_at;                   /* open-addressing index of hl by leaf: i + 1 */
    int hl_at_cap;                /* a power of 2, over twice nhl */
} sink;

static size_t leaf_hash(const st_tensor *t, int cap) {
    return (size_t)XXH3_64bits(&t, sizeof t) & (size_t)(cap - 1);
}

/* Entry k (of hl) into index at of cap slots, by its leaf. */
static void index_leaf(int *at, int cap, const st_tensor *leaf, int k) {
    size_t i = leaf_hash(leaf, cap);
    while (at[i]) i = (i + 1) & (size_t)(cap - 1);
    at[i] = k + 1;
}

/* The entry tracking leaf, or NULL. */
static hooked_leaf *find_leaf(const sink *sk, const st_tensor *leaf) {
    if (!sk->hl_at_cap) return NULL;
    for (size_t i = leaf_hash(leaf, sk->hl_at_cap);; i = (i + 1) & (size_t)(sk->hl_at_cap - 1)) {
        int at = sk->hl_at[i];
        if (!at) return NULL;
        if (sk->hl[at - 1].leaf == leaf) return &sk->hl[at - 1];
    }
}

static st_status index_leaves(sink *sk, int cap) {
    int *at = calloc((size_t)cap, sizeof *at);
    if (!at) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    for (int k = 0; k < sk->nhl; k++) index_leaf(at, cap, sk->hl[k].leaf, k);
    free(sk->hl_at);
    sk->hl_at = at;
    sk->hl_at_cap = cap;
    return ST_OK;
}

static bool is_input(const sink *sk, const st_tensor *t) {
    for (int k = 0; k < sk->ninputs; k++)
        if (sk->inputs[k] == t) return true;
    return false;
}

/* grad(): is n the history of a non-leaf input (captured at n)? */
static bool captures(const sink *sk, const st_ad_node *n) {
    for (int k = 0; !sk->accumulate && k < sk->ninputs; k++)
        if (sk->inputs[k]->grad_fn == n) return true;
    return false;
}

/* One more edge will bring a gradient to leaf (when its hooks matter, or
 * into .grad). */
static st_status hooked_leaf_expect(sink *sk, st_tensor *leaf) {
    if (sk->accumulate ? false : (!leaf->hooks || !is_input(sk, leaf))) return ST_OK;
    hooked_leaf *h = find_leaf(sk, leaf);
    if (h) {
        h->deps++;
        h->edges++;
        return ST_OK;
    }
    if (2 * (sk->nhl + 1) >= sk->hl_at_cap) {
        st_status s = index_leaves(sk, sk->hl_at_cap ? sk->hl_at_cap * 2 : 64);
        if (s != ST_OK) return s;
    }
    if (sk->nhl == sk->hl_cap) {
        int nc = sk->hl_cap ? sk->hl_cap * 2 : 16;
        hooked_leaf *nh = realloc(sk->hl, sizeof *nh * (size_t)nc);
        if (!nh) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        sk->hl = nh;
        sk->hl_cap = nc;
    }
    index_leaf(sk->hl_at, sk->hl_at_cap, leaf, sk->nhl);
    sk->hl[sk->nhl++] = (hooked_leaf){.leaf = leaf, .deps = 1, .edges = 1};
    return ST_OK;
}

/* Hands *g (an owned reference) to a slot's hooks; *g becomes what they
 * return. */
static st_status run_hooks(void *hooks, st_tensor *t, st_tensor **g) {
    if (!hooks || !hook_call) return ST_OK;
    st_tensor *out = NULL;
    st_status s = hook_call(hooks, ST_AD_HOOK_GRAD, t, *g, &out);
    if (s != ST_OK) return s;
    if (out) {
        st_tensor_decref(*g);
        *g = out;
    }
    return ST_OK;
}

static st_status deliver_leaf(sink *sk, st_tensor *leaf, st_tensor *g);

static st_status flush_leaf(sink *sk, hooked_leaf *h) {
    st_tensor *leaf = h->leaf, *whole = h->g;
    h->g = NULL;
    h->deps = 0;
    if (!whole) return ST_OK;   /* no edge brought a gradient */
    st_status s = run_hooks(leaf->hooks, leaf, &whole);
    if (s == ST_OK) s = deliver_leaf(sk, leaf, whole);
    st_tensor_decref(whole);
    if (s == ST_OK && sk->accumulate && leaf->hooks && hook_call)
        s = hook_call(leaf->hooks, ST_AD_HOOK_POST, leaf, NULL, NULL);
    return s;
}

/* g may be NULL for an edge into a hooked leaf that brought nothing. */
static st_status to_leaf(sink *sk, st_tensor *leaf, st_tensor *g) {
    hooked_leaf *h = find_leaf(sk, leaf);
    if (h && h->deps > 0) {
        if (h->edges == 1 && !leaf->hooks) { /* whole already: no sum to keep */
            h->deps = 0;
            return g ? deliver_leaf(sk, leaf, g) : ST_OK;
        }
        if (g && h->g) {
            st_tensor *sum = add_grads(h->g, g);
            if (!sum) return st_err_kind();
            st_tensor_decref(h->g);
            h->g = sum;
        } else if (g) {
            st_tensor_incref(g);
            h->g = g;
        }
        return --h->deps > 0 ? ST_OK : flush_leaf(sk, h);
    }
    return g ? deliver_leaf(sk, leaf, g) : ST_OK;
}

/* A non-leaf that retains its gradient: .grad = .grad + g (a new tensor,
 * as PyTorch's retains_grad hook does). */
static st_status retain_into(st_tensor *t, st_tensor *g) {
    st_tensor *ng = NULL;
    if (t->grad) {
        ng = add_grads(t->grad, g);
    } else {
        st_operand src = {.t = g};
        if (st_rt_eager(ST_OP_COPY, &src, 1, NULL, NULL, &ng) != 1) ng = NULL;
    }
    if (!ng) return st_err_kind();
    st_tensor *old = t->grad;
    t->grad = ng;
    st_tensor_decref(old);
    return ST_OK;
}

/* The gradients of n's outputs are complete: their hooks run, then the
 * tensors retaining them take a copy. */
static st_status output_hooks(st_ad_node *n) {
    if (!n->slots || !n->gbuf) return ST_OK;
    for (int k = 0; k < n->nout; k++) {
        struct ad_slot *sl = &n->slots[k];
        if (!n->gbuf[k]) continue;
        st_status s = run_hooks(sl->hooks, NULL, &n->gbuf[k]);
        if (s == ST_OK && sl->retain) s = retain_into(sl->retain, n->gbuf[k]);
        if (s != ST_OK) return s;
    }
    return ST_OK;
}

static st_status deliver_leaf(sink *sk, st_tensor *leaf, st_tensor *g) {
    if (sk->accumulate) {
        st_meta m;
        st_tensor_meta(leaf, &m);
        if (check_grad("backward", g, &m) != ST_OK) return st_err_kind();
        if (!leaf->grad) {
            st_tensor *own = g;
            if (g->refcount > 1 || !st_tensor_is_contiguous(g) || g->dtype != leaf->dtype) {
                st_operand src = {.t = g};
                st_attrs a;
                memset(&a, 0, sizeof a);
                a.dtype = leaf->dtype;
                own = NULL;
                if (st_rt_eager(ST_OP_CAST, &src, 1, &a, NULL, &own) != 1) return st_err_kind();
                if (own == g) { /* cast to the same dtype may alias: copy */
                    st_tensor_decref(own);
                    own = NULL;
                    if (st_rt_eager(ST_OP_COPY, &src, 1, NULL, NULL, &own) != 1)
                        return st_err_kind();
                }
            } else {
                st_tensor_incref(g);
            }
            leaf->grad = own;
            return ST_OK;
        }
        if (engine_creates) { /* .grad = .grad + g, keeping both histories */
            st_tensor *sum = add_grads(leaf->grad, g);
            if (!sum) return st_err_kind();
            st_tensor_decref(leaf->grad);
            leaf->grad = sum;
            return ST_OK;
        }
        st_operand in[2] = {{.t = leaf->grad}, {.t = g}};
        st_tensor *given[ST_MAX_OUT] = {leaf->grad};
        st_tensor *out = NULL;
        if (st_rt_eager(ST_OP_ADD, in, 2, NULL, given, &out) != 1) return st_err_kind();
        st_tensor_decref(out);
        return ST_OK;
    }
    for (int k = 0; k < sk->ninputs; k++) {
        if (sk->inputs[k] != leaf) continue;
        if (sk->results[k]) {
            st_tensor *s = add_grads(sk->results[k], g);
            if (!s) return st_err_kind();
            st_tensor_decref(sk->results[k]);
            sk->results[k] = s;
        } else {
            st_tensor_incref(g);
            sk->results[k] = g;
        }
    }
    return ST_OK;
}

static st_status to_node(st_ad_node *n, int nr, st_tensor *g) {
    if (!n->gbuf) {
        n->gbuf = calloc((size_t)(n->nout > 0 ? n->nout : 1), sizeof *n->gbuf);
        if (!n->gbuf) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
    }
    if (!n->gbuf[nr]) {
        st_tensor_incref(g);
        n->gbuf[nr] = g;
        return ST_OK;
    }
    st_tensor *s = add_grads(n->gbuf[nr], g);
    if (!s) return st_err_kind();
    st_tensor_decref(n->gbuf[nr]);
    n->gbuf[nr] = s;
    return ST_OK;
}

/* The custom node whose backward runs on this thread (NULL: none). */
static _Thread_local st_ad_node *running_custom;

st_tensor *st_ad_saved_output(st_tensor *t, int nr) {
    st_ad_node *n = running_custom;
    if (!engine_creates || !n || nr < 0 || nr >= n->nout) {
        st_tensor_incref(t);
        return t;
    }
    st_tensor *a = alias(t);
    if (!a) {
        if (!st_err_kind()) st_err(ST_ERR_MEMORY, "autograd: out of memory");
        return NULL;
    }
    attach(a, n, nr);
    return a;
}

static st_status run_node(st_ad_node *n, st_tensor **gin) {
    if (n->freed && n->saves)
        return st_err(ST_ERR_RUNTIME,
                      "Trying to backward through the graph a second time (or "
                      "directly access saved tensors after they have already "
                      "been freed). Saved intermediate values of the graph "
                      "are freed when you call .backward() or autograd.grad(). "
                      "Specify retain_graph=True if you need to backward "
                      "through the graph a second time or if you need to "
                      "access saved tensors after calling backward.");
    if (n->custom) {
        if (!n->gbuf) { /* no gradient reached any output: all NULL */
            n->gbuf = calloc((size_t)(n->nout > 0 ? n->nout : 1), sizeof *n->gbuf);
            if (!n->gbuf) return st_err(ST_ERR_MEMORY, "autograd: out of host memory");
        }
        st_ad_node *outer = running_custom;
        running_custom = n;
        st_status s = n->fn(n->ctx, n->nout, n->gbuf, n->nin, gin);
        running_custom = outer;
        if (s == ST_OK && engine_creates && n->once) s = delay_errors(n, gin);
        if (s != ST_OK) return s;
        for (int k = 0; k < n->nin; k++)
            if (gin[k] && (n->next_node[k] || n->next_leaf[k]) && k < ST_MAX_IN &&
                check_grad(n->name, gin[k], &n->in_meta[k < ST_MAX_IN ? k : 0]) != ST_OK)
                return st_err_kind();
        return ST_OK;
    }
    if (!n->gbuf || !n->gbuf[0]) { /* nothing flowed in */
        for (int k = 0; k < n->nin; k++) gin[k] = NULL;
        return ST_OK;
    }
    return engine_creates ? apply_op_create(n, n->gbuf[0], gin) : apply_op(n, n->gbuf[0], gin);
}

/* The retain_graph flag of the backward running on this thread (false
 * when none runs): a custom node may then hand its saved tensors over. */
static _Thread_local bool engine_retains;

bool st_ad_retaining(void) { return engine_retains; }
bool st_ad_creating(void) { return engine_creates; }

static st_status engine_run(st_tensor *const *roots, st_tensor *const *grads, int nroots,
                            bool retain, sink *sk);

static st_status engine(st_tensor *const *roots, st_tensor *const *grads, int nroots,
                        bool retain, bool create, sink *sk) {
    bool outer = engine_retains, outer_create = engine_creates;
    engine_retains = retain;
    engine_creates = create;
    st_status s = engine_run(roots, grads, nroots, retain, sk);
    engine_retains = outer;
    engine_creates = outer_create;
    return s;
}

/* grad(): the nodes that lead to none of the inputs are not run (their
 * hooks do not fire, their saved tensors stay), as in PyTorch. A node
 * leads to an input when an edge goes to it as a leaf, or to the node of a
 * non-leaf input, or to a node that leads to one; children are decided
 * first, in reverse of a topological order (Kahn's, over `all`). */
static st_status prune_for_grad(const nodelist *all, const sink *sk) {
    nodelist order = {0};
    st_status s = ST_OK;
    for (int i = 0; i < all->n; i++) all->items[i]->order_deps = all->items[i]->deps;
    for (int i = 0; i < all->n && s == ST_OK; i++)
        if (all->items[i]->order_deps == 0) s = push(&order, all->items[i]);
    for (int i = 0; i < order.n && s == ST_OK; i++) {
        st_ad_node *n = order.items[i];
        for (int k = 0; k < n->nin && s == ST_OK; k++)
            if (n->next_node[k] && --n->next_node[k]->order_deps == 0)
                s = push(&order, n->next_node[k]);
    }
    for (int i = order.n - 1; i >= 0 && s == ST_OK; i--) {
        st_ad_node *n = order.items[i];
        bool leads = false;
        for (int k = 0; k < n->nin && !leads; k++) {
            st_ad_node *nx = n->next_node[k];
            if (n->next_leaf[k]) leads = is_input(sk, n->next_leaf[k]);
            else if (nx) leads = !nx->skip;
            if (nx && !leads) leads = captures(sk, nx);
        }
        n->skip = !leads;
    }
    free(order.items);
    return s;
}

static st_status engine_run(st_tensor *const *roots, st_tensor *const *grads, int nroots,
                            bool retain, sink *sk) {
    st_status s = ST_OK;
    if (!retain && traced_tag) st_ad_traced_saves_clear(); /* what was saved is mostly freed now */
    nodelist all = {0}, ready = {0}, stack = {0};
    st_tensor *root_g[64];
    if (nroots > 64) return st_err(ST_ERR_VALUE, "backward: at most 64 roots");
    bool was_disabled = grad_disabled;
    grad_disabled = !engine_creates;
    /* backward runs in the forward's dtypes (PyTorch's engine does not
     * autocast either; custom_bwd re-enters the forward's state) */
    uint32_t was_autocast = st_rt_autocast_swap(0);
    st_rt_trace_suspend(); /* backward's own ops are not part of a trace */
    memset(root_g, 0, sizeof root_g);
    for (int k = 0; k < nroots && s == ST_OK; k++) {
        st_tensor *r = roots[k];
        if (!r->requires_grad) {
            s = st_err(ST_ERR_RUNTIME, "element %d of tensors does not require "
                       "grad and does not have a grad_fn", k);
            break;
        }
        if (grads && grads[k]) {
            if (grads[k]->ndim != r->ndim ||
                memcmp(grads[k]->shape, r->shape, sizeof(int64_t) * (size_t)r->ndim)) {
                char a[128], b[128];
                s = st_err(ST_ERR_RUNTIME, "Mismatch in shape: grad_output[%d] has a shape "
                           "of %s and output[%d] has a shape of %s.", k,
                           st_shape_str(grads[k]->shape, grads[k]->ndim, a, sizeof a), k,
                           st_shape_str(r->shape, r->ndim, b, sizeof b));
                break;
            }
            st_tensor_incref(grads[k]);
            root_g[k] = grads[k];
        } else {
            if (st_tensor_numel(r) != 1) {
                s = st_err(ST_ERR_RUNTIME, "grad can be implicitly created only "
                           "for scalar outputs");
                break;
            }
            root_g[k] = ones_like(r);
            if (!root_g[k]) s = st_err_kind();
        }
    }
    /* discover the graph, counting dependencies */
    for (int k = 0; k < nroots && s == ST_OK; k++) {
        st_ad_node *n = roots[k]->grad_fn;
        if (n && !n->seen) {
            n->seen = true;
            s = push(&stack, n);
            if (s == ST_OK) s = push(&all, n);
        }
    }
    for (int k = 0; k < nroots && s == ST_OK; k++)
        if (!roots[k]->grad_fn) s = hooked_leaf_expect(sk, roots[k]);
    while (stack.n && s == ST_OK) {
        st_ad_node *n = stack.items[--stack.n];
        for (int k = 0; k < n->nin && s == ST_OK; k++) {
            if (n->next_leaf[k]) s = hooked_leaf_expect(sk, n->next_leaf[k]);
            st_ad_node *nx = n->next_node[k];
            if (!nx || s != ST_OK) continue;
            nx->deps++;
            if (!nx->seen) {
                nx->seen = true;
                s = push(&stack, nx);
                if (s == ST_OK) s = push(&all, nx);
            }
        }
    }
    if (s == ST_OK && !sk->accumulate) s = prune_for_grad(&all, sk);
    /* seed */
    for (int k = 0; k < nroots && s == ST_OK; k++) {
        if (roots[k]->grad_fn)
            s = to_node(roots[k]->grad_fn, roots[k]->output_nr, root_g[k]);
        else
            s = to_leaf(sk, roots[k], root_g[k]);
    }
    for (int i = 0; i < all.n && s == ST_OK; i++)
        if (all.items[i]->deps == 0) s = ready_push(&ready, all.items[i]);
    st_tensor **gin = NULL;
    int gin_cap = 0;
    while (ready.n && s == ST_OK) {
        st_ad_node *n = ready_pop(&ready);
        /* a non-leaf input of grad(): its gradient is complete now; taken
         * before its tensor hooks when n runs on (they run as it does), after
         * them when it does not, as torch's engine */
        if (n->skip && captures(sk, n)) s = output_hooks(n);
        for (int k = 0; s == ST_OK && !sk->accumulate && k < sk->ninputs; k++) {
            st_tensor *t = sk->inputs[k];
            if (t->grad_fn == n && n->gbuf && n->gbuf[t->output_nr]) {
                st_tensor_incref(n->gbuf[t->output_nr]);
                st_tensor_decref(sk->results[k]);
                sk->results[k] = n->gbuf[t->output_nr];
            }
        }
        if (s == ST_OK && !n->skip) s = output_hooks(n);
        if (s != ST_OK) break;
        if (n->nin > gin_cap) {
            st_tensor **ng = realloc(gin, sizeof *ng * (size_t)n->nin);
            if (!ng) {
                s = st_err(ST_ERR_MEMORY, "autograd: out of host memory");
                break;
            }
            gin = ng;
            gin_cap = n->nin;
        }
        for (int k = 0; k < n->nin; k++) gin[k] = NULL;
        if (!n->skip) {
            s = run_node(n, gin);
            if (anomaly_on) s = anomaly_after(n, gin, s);
        }
        if (n->gbuf) {
            for (int k = 0; k < n->nout; k++) {
                st_tensor_decref(n->gbuf[k]);
                n->gbuf[k] = NULL;
            }
        }
        if (s == ST_OK && !retain && !n->skip) {
            release_saved(n, false);
            n->freed = true;
        }
        for (int k = 0; k < n->nin; k++) {
            if (s == ST_OK && !gin[k] && n->next_leaf[k])
                s = to_leaf(sk, n->next_leaf[k], NULL);
            if (s == ST_OK && gin[k]) {
                if (n->next_leaf[k]) s = to_leaf(sk, n->next_leaf[k], gin[k]);
                else if (n->next_node[k]) s = to_node(n->next_node[k], n->next_nr[k], gin[k]);
            }
            st_tensor_decref(gin[k]);
            gin[k] = NULL;
            st_ad_node *nx = n->next_node[k];
            if (s == ST_OK && nx && --nx->deps == 0) s = ready_push(&ready, nx);
        }
    }
    /* hooked leaves some edge never reached (a node that got nothing) */
    for (int i = 0; i < sk->nhl && s == ST_OK; i++)
        if (sk->hl[i].deps > 0) s = flush_leaf(sk, &sk->hl[i]);
    /* reset engine state on every node seen, even after an error */
    for (int i = 0; i < all.n; i++) {
        st_ad_node *n = all.items[i];
        n->seen = false;
        n->skip = false;
        n->deps = 0;
        if (n->gbuf) {
            for (int k = 0; k < n->nout; k++) st_tensor_decref(n->gbuf[k]);
            free(n->gbuf);
            n->gbuf = NULL;
        }
    }
    for (int k = 0; k < nroots; k++) st_tensor_decref(root_g[k]);
    for (int i = 0; i < sk->nhl; i++) st_tensor_decref(sk->hl[i].g);
    free(sk->hl);
    free(sk->hl_at);
    sk->hl = NULL;
    sk->hl_at = NULL;
    sk->nhl = sk->hl_cap = sk->hl_at_cap = 0;
    free(gin);
    free(all.items);
    free(ready.items);
    free(stack.items);
    grad_disabled = was_disabled;
    st_rt_autocast_swap(was_autocast);
    st_rt_trace_resume();
    return s;
}

/* Stale views among the roots get their history first (viewhist.c). */
static st_status refresh_all(st_tensor *const *ts, int n) {
    for (int k = 0; k < n; k++)
        if (st_ad_view_stale(ts[k]) && st_ad_view_refresh(ts[k]) != ST_OK)
            return st_err_kind();
    return ST_OK;
}

st_status st_ad_backward(st_tensor *const *roots, st_tensor *const *grads,
                         int n, bool retain_graph) {
    return st_ad_backward_create(roots, grads, n, retain_graph, false);
}

st_status st_ad_backward_create(st_tensor *const *roots, st_tensor *const *grads,
                                int n, bool retain_graph, bool create_graph) {
    if (refresh_all(roots, n) != ST_OK) return st_err_kind();
    sink sk = {.accumulate = true};
    return engine(roots, grads, n, retain_graph, create_graph, &sk);
}

st_status st_ad_grad(st_tensor *const *outs, st_tensor *const *gouts, int n,
                     st_tensor *const *inputs, int ninputs, bool retain_graph,
                     bool allow_unused, st_tensor **results) {
    return st_ad_grad_create(outs, gouts, n, inputs, ninputs, retain_graph, false,
                             allow_unused, results);
}

st_status st_ad_grad_create(st_tensor *const *outs, st_tensor *const *gouts, int n,
                            st_tensor *const *inputs, int ninputs, bool retain_graph,
                            bool create_graph, bool allow_unused, st_tensor **results) {
    for (int k = 0; k < ninputs; k++) results[k] = NULL;
    if (refresh_all(outs, n) != ST_OK || refresh_all(inputs, ninputs) != ST_OK)
        return st_err_kind();
    for (int k = 0; k < n; k++) /* the outputs first, as torch */
        if (!outs[k]->requires_grad)
            return st_err(ST_ERR_RUNTIME, "element %d of tensors does not require grad "
                          "and does not have a grad_fn", k);
    for (int k = 0; k < ninputs; k++) {
        if (!inputs[k]->requires_grad)
            return st_err(ST_ERR_RUNTIME, "One of the differentiated Tensors "
                          "(input %d) does not require grad", k);
    }
    sink sk = {.accumulate = false, .inputs = inputs, .ninputs = ninputs,
               .results = results};
    st_status s = engine(outs, gouts, n, retain_graph, create_graph, &sk);
    for (int k = 0; s == ST_OK && k < ninputs; k++)
        if (!results[k] && !allow_unused)
            s = st_err(ST_ERR_RUNTIME, "The differentiated Tensor at index %d "
                       "appears to not have been used in the graph. Set "
                       "allow_unused=True if this is the desired behavior.", k);
    if (s != ST_OK)
        for (int k = 0; k < ninputs; k++) {
            st_tensor_decref(results[k]);
            results[k] = NULL;
        }
    return s;
}
