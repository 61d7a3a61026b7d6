/* st_runtime.h - devices, the caching allocator, storage and tensors
 * (reference-counted, views share storage), the executor of lowered
 * programs, the eager op dispatch with its kernel cache, and the global
 * random generator. Prefix: st_rt_ (and st_tensor_/st_alloc_ for the two
 * most used types). */
#ifndef ST_RUNTIME_H
#define ST_RUNTIME_H

#include "st_backend.h"

/* ---------------- devices ---------------- */
typedef struct st_device st_device;
struct st_device {
    st_device_type type;
    int index;
    const char *name;          /* "cpu", "cuda:0" */
    /* System allocation of a segment (what the caching allocator pools). */
    void *(*raw_alloc)(st_device *d, size_t nbytes);
    void (*raw_free)(st_device *d, void *p, size_t nbytes);
    /* Copies between this device and the host or itself. */
    st_status (*copy)(st_device *d, void *dst, const void *src, size_t n);
    void (*synchronize)(st_device *d);
    void *impl;
};

st_device *st_rt_cpu(void);
/* A device by type and index; NULL with ST_ERR_RUNTIME if not available. */
st_device *st_rt_device(st_device_type t, int index);

/* ---------------- caching allocator ----------------
 * Blocks are pooled by size class: small requests (<= 1 MiB) are served
 * from 2 MiB segments, large ones from segments of their own rounded size;
 * a block larger than the request is split and the remainder stays cached;
 * freed neighbours within a segment merge back. Steady state makes no
 * system allocations. */
typedef struct st_block st_block;
struct st_block {
    void *ptr;
    size_t size;               /* bytes of the block (rounded) */
    size_t requested;          /* bytes the caller asked for */
    /* allocator-private links follow */
    st_block *prev, *next;     /* neighbours within the segment */
    st_block *fnext, *fprev;   /* free-list links */
    void *segment;
    bool allocated;
};

typedef struct {
    int64_t allocated_bytes;       /* bytes in live blocks (rounded sizes) */
    int64_t requested_bytes;       /* bytes callers asked for, live */
    int64_t reserved_bytes;        /* bytes held in segments from the system */
    int64_t peak_allocated_bytes;  /* since the last reset_peak_stats */
    int64_t peak_reserved_bytes;
    int64_t peak_requested_bytes;  /* since the last reset: sizes as asked for,
                                    * so it does not depend on the cache's history */
    int64_t num_allocs;            /* st_alloc_block calls that succeeded */
    int64_t num_frees;
    int64_t cache_hits;            /* served without a system allocation */
    int64_t num_system_allocs;     /* segments taken from the system */
    int64_t num_system_frees;
    int64_t active_blocks;
    int64_t num_segments;
} st_alloc_stats;

typedef struct st_allocator st_allocator;

/* The allocator of a device (created on first use). */
st_allocator *st_alloc_for(st_device *dev);
/* A block of at least nbytes (0 allowed), aligned to 64 bytes; NULL with
 * ST_ERR_MEMORY after releasing the cache and retrying once. */
st_block *st_alloc_block(st_allocator *a, size_t nbytes);
void st_alloc_free(st_allocator *a, st_block *b);
void st_alloc_stats_get(st_allocator *a, st_alloc_stats *out);
void st_alloc_reset_peak(st_allocator *a);
/* Returns every fully free segment to the system. */
void st_alloc_empty_cache(st_allocator *a);
/* Debug: checks the allocator's invariants (no overlap, stats consistent,
 * free lists sane). Returns ST_OK or an error describing the violation. */
st_status st_alloc_check(st_allocator *a);

/* ---------------- storage and tensors ---------------- */
typedef struct st_storage {
    int64_t refcount;
    st_device *device;
    st_block *block;           /* NULL when external */
    char *data;
    size_t nbytes;
    /* external memory (DLPack import, numpy): called on last release */
    void (*ext_free)(void *ctx);
    void *ext_ctx;
    /* bumped by every write into the storage (kernels' outputs, in-place
     * ops): shared by all views, so autograd can tell when a tensor it
     * saved was modified afterwards */
    uint32_t version;
    /* the trace whose recorded node saved it (runtime/autograd.c: an
     * in-place write into it breaks that trace's graph); 0: none */
    uint64_t traced_save;
    /* the name of the last history autograd gave a tensor of this storage
     * and the version it had then (runtime/autograd.c): a version error
     * names a saved input's history as it is now, as torch */
    char ad_name[48];
    uint32_t ad_ver;
} st_storage;

typedef struct st_tensor {
    int64_t refcount;
    st_storage *storage;
    int64_t offset;            /* in elements */
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t strides[ST_MAX_DIMS];  /* in elements */
    /* autograd: a leaf has grad_fn NULL; a computed tensor that requires
     * grad has grad_fn (owned reference) and is output output_nr of it */
    bool requires_grad;
    struct st_tensor *grad;    /* owned; accumulated by backward */
    struct st_ad_node *grad_fn;
    int output_nr;
    bool is_view;              /* made by st_tensor_view_of (shares a base) */
    bool retains_grad;         /* retain_grad(): backward fills .grad of this non-leaf */
    void *hooks;               /* a leaf's gradient hooks (autograd.c), owned */
    bool traced;               /* mapped by an active trace (runtime/trace.c) */
    /* back pointer to the Python wrapper (not owned), for identity */
    void *pyobj;
    /* views and history (runtime/viewhist.c): hist counts the changes of
     * this tensor's history (attach); a view made by the view functions
     * holds its root base (owned; torch's _base), whether it was made in
     * grad mode, and the base's hist its grad_fn was made against */
    uint32_t hist;
    uint32_t base_hist;
    bool view_grad;
    struct st_tensor *view_base;
    /* an output of a function that returns several views (split, chunk,
     * unbind; ST_VIEW_MULTI_*, 0: none) or a view of one (view_multi_nr
     * -1, else the output's number): torch refuses in-place writes into
     * it under autograd, and its use after its base's history changed */
    uint8_t view_multi;
    int32_t view_multi_nr;
    /* a .data alias or a view of one: writes through it do not move the
     * storage's version (torch's .data has a version counter of its own:
     * autograd does not see them) */
    bool own_version;
    /* torch's CreationMeta of a view taken while grad mode was off
     * (ST_VIEW_NOGRAD) or in inference mode (ST_VIEW_INFERENCE) of a base
     * that requires grad, kept by the views taken of it (0: none). Such a
     * view requires grad as a leaf that gets no gradient; an in-place write
     * into it (or its views) in grad mode is refused (viewhist.c) */
    uint8_t view_nograd;
} st_tensor;
enum { ST_VIEW_GRADMODE, ST_VIEW_NOGRAD, ST_VIEW_INFERENCE };
enum { ST_VIEW_MULTI_NONE, ST_VIEW_MULTI_SPLIT, ST_VIEW_MULTI_SPLIT_SIZES,
       ST_VIEW_MULTI_UNBIND };
/* A traced view statement that made a multi-view output carries it in its
 * attrs' flags (no view op reads them otherwise): st_tensor_apply_view
 * marks what it makes again (a compiled function's outputs, runtime/cfn.c) */
#define ST_VIEW_MULTI_ATTR (1 << 30)
#define ST_VIEW_MULTI_FLAGS(kind, nr) (ST_VIEW_MULTI_ATTR | ((kind) << 20) | ((nr) & 0xfffff))
/* ... and it was used after its base's history changed (torch's second
 * rule refused it while traced): made again stale */
#define ST_VIEW_MULTI_STALE (1 << 29)
/* A traced output that was no view although a view statement made it (a
 * reshape that copied: torch's _unsafe_view of the copy): the compiled
 * function's run returns it as no view either (runtime/cfn.c) */
#define ST_VIEW_OWN (1 << 28)
/* A traced detach that made a .data alias (st_tensor.own_version): the
 * compiled function's run marks what it makes again the same way */
#define ST_VIEW_DATA (1 << 27)
/* The stop_gradient(new) reshape of a write through a detached alias
 * (runtime/trace.c, detached_write: stop_gradient(new) + (old -
 * stop_gradient(old)), new's data with old's gradient): a compiled run
 * returns such a value in the storage new is a view of, with its own
 * gradient, as eager's detached alias (runtime/cfn.c, find_aliases) */
#define ST_VIEW_DETACHED (1 << 26)

st_storage *st_storage_new(st_device *dev, size_t nbytes);
/* Wraps external memory; ext_free(ctx) is called on last release. */
st_storage *st_storage_external(st_device *dev, void *data, size_t nbytes,
                                void (*ext_free)(void *), void *ctx);
void st_storage_incref(st_storage *s);
void st_storage_decref(st_storage *s);

/* New contiguous tensor (uninitialized). shape may be NULL when ndim == 0. */
st_tensor *st_tensor_empty(st_device *dev, st_dtype dt, int ndim,
                           const int64_t *shape);
st_tensor *st_tensor_view_of(st_tensor *base, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset);
/* A contiguous tensor of dtype dt placed in storage s at byte offset
 * byte_off (a multiple of the dtype's size); shares s. */
st_tensor *st_tensor_in_storage(st_storage *s, st_dtype dt, int ndim,
                                const int64_t *shape, int64_t byte_off);
void st_tensor_incref(st_tensor *t);
void st_tensor_decref(st_tensor *t);
int64_t st_tensor_numel(const st_tensor *t);
bool st_tensor_is_contiguous(const st_tensor *t);
/* Whether two indices of t may reach one element (conservative: unfold's
 * windows, as_strided); dims of stride 0 (expanded) count when
 * zero_strides, else they are left out. */
bool st_tensor_may_overlap(const st_tensor *t, bool zero_strides);
/* Whether t's elements fill a block of its storage, each once, in some
 * order of its dims (torch's is_non_overlapping_and_dense). */
bool st_tensor_is_dense(const st_tensor *t);
void *st_tensor_data(const st_tensor *t); /* first element */
st_device *st_tensor_device(const st_tensor *t);
void st_tensor_meta(const st_tensor *t, st_meta *m);
void st_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);

/* Views (share storage; errors name the tensor's shape). */
st_tensor *st_tensor_reshape(st_tensor *t, int ndim, const int64_t *shape,
                             bool view_only); /* view_only: error if copy needed */
st_tensor *st_tensor_permute(st_tensor *t, const int64_t *perm);
st_tensor *st_tensor_transpose(st_tensor *t, int64_t d0, int64_t d1);
st_tensor *st_tensor_expand(st_tensor *t, int ndim, const int64_t *shape);
st_tensor *st_tensor_slice(st_tensor *t, int64_t dim, int64_t start,
                           int64_t stop, int64_t step);
st_tensor *st_tensor_select(st_tensor *t, int64_t dim, int64_t index);
st_tensor *st_tensor_squeeze(st_tensor *t, int64_t dim); /* dim<0x..: all */
#define ST_SQUEEZE_ALL INT64_MIN
st_tensor *st_tensor_unsqueeze(st_tensor *t, int64_t dim);
/* Applies a view statement (ST_OPK_VIEW op with attrs) to t. */
st_tensor *st_tensor_apply_view(st_tensor *t, st_op_id op,
                                const st_attrs *attrs);
st_tensor *st_tensor_contiguous(st_tensor *t); /* new ref (t itself if so) */

/* ---------------- eager dispatch ----------------
 * An operand is a tensor or a wrapped Python scalar. */
typedef struct {
    st_tensor *t;              /* NULL for a scalar */
    st_dtype sdtype;           /* scalar: ST_BOOL, ST_INT64 or ST_FLOAT64 */
    double f;
    int64_t i;
} st_operand;

/* Runs op eagerly: a one-node graph lowered through fusion and run by the
 * backend of its operands' device (st_rt_backend_for: all tensor operands
 * on one device, a 0-d CPU tensor may join a GPU op; without tensor
 * operands the factory device), with compiled kernels cached by (op, attrs, dtypes, rank,
 * layout). Results go to out[0..return); given is NULL or an array of
 * ST_MAX_OUT entries, and when given[k] is non-NULL the k-th
 * result is written into that tensor instead (shape must match, the value
 * is cast to its dtype). Returns the result count, or -1 with the error set. */
int st_rt_eager(st_op_id op, const st_operand *in, int nin,
                const st_attrs *attrs, st_tensor **given, st_tensor **out);
/* st_rt_eager without the choice of the result's memory order: a
 * row-major result (runtime/layout.c runs the op through it). */
int st_rt_eager_in_order(st_op_id op, const st_operand *in, int nin,
                         const st_attrs *attrs, st_tensor **given, st_tensor **out);
/* ---------------- result layout (runtime/layout.c) ----------------
 * Elementwise ops (st_layout_op) give their result the memory order of
 * their operands, as PyTorch's TensorIterator. st_layout_perm: the order
 * (perm[0] the outermost dim of the nd-dim result) when it is not the
 * row-major one, from the operands' strides (broadcast dims tell nothing,
 * the first operand that tells two dims apart decides, equal strides put
 * the smaller dim inside); false when every operand is row-major or the
 * strides tell no other order. st_layout_run: op run on the operands
 * permuted into that order, its result permuted back (one result), or
 * written into into (given) permuted likewise. */
bool st_layout_op(st_op_id op);
/* op: the elementwise op (st_layout_op), -1 for a copy (clone, *_like) */
bool st_layout_perm(int op, const st_operand *in, int nin, int *ndim, int64_t *perm);
int st_layout_run(st_op_id op, const st_operand *in, int nin, const st_attrs *attrs,
                  int nd, const int64_t *perm, st_tensor *into, st_tensor **out);
/* With into (a result written into it, while tracing): the order that
 * makes into row-major, when it is not and no operand has more dims. */
bool st_layout_into_perm(const st_operand *in, int nin, st_tensor *into, int *ndim,
                         int64_t *perm);
/* r (its reference taken) permuted from that order back to the logical
 * one: a tensor of its own (no view) when nothing else holds r. */
st_tensor *st_layout_back(st_tensor *r, int nd, const int64_t *perm);
/* ---------------- order-dependent in-place ops (runtime/overlap_seq.c) ----------------
 * An elementwise op written into o whose operand shares o's elements in a
 * way torch cannot tell (TOO_HARD): run in torch's TensorIterator order
 * through run (one call per row or element, written into a view of o).
 * Returns 1 with out[0] = o (a new reference), 0 when no element reads
 * what another writes (the caller runs the op as usual), -1 on error. */
typedef int (*st_overlap_run)(void *ctx, st_op_id op, const st_operand *in, int nin,
                              const st_attrs *attrs, st_tensor **given, st_tensor **out);
int st_overlap_seq(st_op_id op, const st_operand *in, int nin, const st_attrs *attrs,
                   st_tensor *o, st_tensor **out, st_overlap_run run, void *ctx);
/* The bytes of one of torch's CPU vectors, the block st_overlap_seq reads
 * before it writes: 64 where torch dispatches to AVX-512, else 32
 * (symtrace/_mem_overlap.py takes it as _C._overlap_vec_bytes()). */
int st_overlap_vec_bytes(void);
/* Zeros of dtype dt and the given shape on t's device: a FULL whose
 * like-operand is a zero-stride view of t (its data is not read); an
 * empty t gives them on the factory device. New reference or NULL. */
st_tensor *st_rt_zeros_on(st_tensor *t, int ndim, const int64_t *shape, st_dtype dt);
/* ---------------- autocast (runtime/autocast.c) ----------------
 * Mixed precision after PyTorch's autocast: per thread and device type,
 * enabled or not and a 16-bit dtype (bfloat16 or float16). st_rt_eager
 * casts a listed op's operands (matmul and linear to the 16-bit dtype;
 * on CUDA exp, log, pow, softmax, layer_norm, sum, cross_entropy ... to
 * float32) before it runs; the casts are ops of their own (taped,
 * traced). */
st_status st_rt_autocast_set(st_device_type d, bool enabled, st_dtype dtype);
bool st_rt_autocast_enabled(st_device_type d, st_dtype *dtype);
/* The whole state as one word (a guard compares it); swap sets it and
 * returns the previous one (0: autocast off everywhere). */
uint32_t st_rt_autocast_state(void);
uint32_t st_rt_autocast_swap(uint32_t s);
/* Is device type d on in state word s (and its dtype)? For guards'
 * printing of a word they saved. */
bool st_rt_autocast_in(uint32_t s, st_device_type d, st_dtype *dtype);
/* "none", "lower", "fp32" or "promote": what autocast does to op on d. */
const char *st_rt_autocast_policy_name(st_device_type d, st_op_id op);
/* Called by st_rt_eager: 0 when autocast leaves the call as it is, else
 * the op's result count after running it on cast operands (-1: error). */
int st_rt_autocast_apply(st_op_id op, const st_operand *in, int nin,
                         const st_attrs *attrs, st_tensor **out);

/* Backend used by eager ops (SYMTRACE_EAGER_BACKEND; default "llvm" when
 * registered, else "interp"), and by the tape's backward programs. */
st_status st_rt_set_eager_backend(const char *name);
st_backend *st_rt_eager_backend(void);
/* The backend that runs eager ops and backward programs on tensors of
 * device type t: the eager backend for the CPU, "nvrtc" for CUDA; NULL
 * with the error set when none is registered for t. */
st_backend *st_rt_backend_for(st_device_type t);
/* The device of the results of an op without tensor operands (full,
 * arange, rand, ...): the frontend sets it around such a call (NULL: the
 * CPU); thread-local. Returns the previous one. */
st_device *st_rt_set_factory_device(st_device *d);
/* A contiguous copy of t on dev (t itself, with a new reference, when it
 * is already there and contiguous); NULL with the error set. */
st_tensor *st_rt_to_device(st_tensor *t, st_device *dev);
typedef struct {
    int64_t hits, misses, compiles, entries;
} st_kcache_stats;
void st_rt_kcache_stats(st_kcache_stats *out);
void st_rt_kcache_clear(void);

/* ---------------- kernel cache on disk (runtime/kcache.c) ----------------
 * Compiled kernels (a backend's object code) under a key string (letters,
 * digits, '-', '_': the hex xxHash of the kernel IR, the target and the
 * compiler version) in $SYMTRACE_CACHE_DIR (default ~/.cache/symtrace),
 * file kernels/<key>.bin: a header (magic, format version, payload length,
 * XXH3-64 of the payload) then the payload, written to a temp file and
 * renamed. A file failing a check (truncated, corrupted, other version) is
 * counted in `corrupt`, removed and treated as a miss: never loaded. */
typedef struct {
    int64_t hits, misses, stores, corrupt, store_errors;
} st_kcache_file_stats_t;
/* On a hit: true, *bytes (malloc'd, caller frees) and *n. A miss sets no
 * error. */
bool st_kcache_load(const char *key, void **bytes, size_t *n);
st_status st_kcache_store(const char *key, const void *bytes, size_t n);
/* The file of key into buf; false if no cache directory can be named. */
bool st_kcache_path(const char *key, char *buf, size_t n);
/* The cache directory in use (thread-local buffer), NULL if none. */
const char *st_kcache_dir(void);
/* Overrides SYMTRACE_CACHE_DIR for this process (NULL or "": back to the
 * environment). */
void st_kcache_set_dir(const char *dir);
void st_kcache_file_stats(st_kcache_file_stats_t *out);

/* ---------------- executor ----------------
 * Runs a lowered program: vals[v] holds the tensor of graph value v (inputs
 * set by the caller, and optional preallocated outputs); the rest are
 * allocated, views applied, kernels launched in order. compiled comes from
 * be->compile(p->kernels, p->nkernels). Intermediates are released after
 * their last use. On return vals[] holds owned references to every
 * surviving value (the caller decrefs). */
st_status st_rt_exec(st_kprog *p, st_backend *be, void *compiled,
                     st_tensor **vals);
/* The same with a memory plan (made for the graph's current sizes by
 * st_fuse_plan): intermediates live in one arena allocated for the run.
 * trace, when not NULL, receives the allocator's live requested bytes (of
 * the backend's device) before each kernel: the measured column beside the
 * plan's estimate (block rounding is the allocator's own overhead, in its
 * allocated_bytes). */
st_status st_rt_exec_planned(st_kprog *p, st_backend *be, void *compiled,
                             st_tensor **vals, const st_mem_plan *plan,
                             int64_t *trace);
/* Binds the inputs' sizes into p's graph (re-inferring its metas when they
 * differ), as a run does first: a plan made after it is for this run's
 * sizes. */
st_status st_rt_exec_bind(st_kprog *p, st_tensor **vals);

/* ---------------- autograd (runtime/autograd.c) ----------------
 * The tape: every eager op run with grad mode on and an input that requires
 * grad records one node (op, attrs, the saved tensors its VJP rule reads,
 * edges to its inputs' nodes or leaves). Backward runs each node's VJP rule
 * (ir/ autodiff, IR statements) as a small graph through fusion and the
 * eager backend, cached like forward kernels; custom nodes (PyLayer) call
 * back into their owner. Saved tensors are freed as soon as backward has
 * used them unless the graph is retained; saved-tensor hooks may stand in
 * for them (st_ad_saved_hooks_push). */
typedef struct st_ad_node st_ad_node;

bool st_ad_grad_enabled(void);            /* thread-local, default on */
void st_ad_set_grad_enabled(bool on);
bool st_ad_inference_mode(void);          /* thread-local: inference_mode() is on */
void st_ad_set_inference_mode(bool on);
/* Anomaly mode (autograd.detect_anomaly; global, as PyTorch's AnomalyMode):
 * its owner (the Python binding) captures a node's forward traceback when
 * the node is made, checks a node's gradients for NaN after it ran in
 * backward, and reports a failed node with its traceback. */
typedef st_status (*st_ad_anomaly_check_fn)(const char *node, int n, st_tensor *const *g);
void st_ad_set_anomaly_owner(void *(*capture)(void), void (*release)(void *tb),
                             st_ad_anomaly_check_fn check,
                             void (*report)(const char *node, void *tb));
void st_ad_set_anomaly(bool on, bool check_nan);
bool st_ad_anomaly_enabled(bool *check_nan);

/* Starts a new tag for the storages that nodes recorded in a trace save (a
 * write into one breaks the graph), forgetting the earlier ones:
 * st_rt_trace_begin calls it for each new trace. */
void st_ad_traced_saves_clear(void);

/* attrs.flags bit of an index_select whose index is a constant made for it
 * (flip, roll): its node keeps the index through a backward that frees the
 * graph (torch's FlipBackward saves nothing), so a second backward runs.
 * Above the ST_ATTR_* bits; the op itself ignores it. */
#define ST_AD_KEEP_INDEX (1 << 20)

/* Records an eager op (called by st_rt_eager after it ran). */
st_status st_ad_record(st_op_id op, const st_operand *in, int nin,
                       const st_attrs *attrs, st_tensor **out, int nout,
                       bool inplace);

/* t (a computed tensor that requires grad) was overwritten in place by op
 * from operands that need no gradient (y.copy_(c), y.fill_(0), y.zero_()):
 * its history becomes a node with no edges, so its old history gets no
 * gradient from it and it still requires grad, as torch's. */
st_status st_ad_record_overwrite(st_op_id op, st_tensor *t);

/* A traced in-place write into t, a tensor the trace made, is about to
 * happen (st_rt_trace_will_write, in any grad mode): when a node recorded
 * in this trace saved t's storage,
 * the trace fails there (a graph break), so the write runs after the graph
 * whose node saved the value, and backward checks its version as eager's. */
void st_ad_trace_will_write(const st_tensor *t);

/* A custom node's backward: grads of its outputs in gout[0..nout) (NULL:
 * no gradient flowed into that output), fills gin[0..nin) with new
 * references or NULL. */
typedef st_status (*st_ad_custom_fn)(void *ctx, int nout, st_tensor *const *gout,
                                     int nin, st_tensor **gin);
/* Inside a custom node's backward: whether the running backward retains
 * the graph (retain_graph=True). When it does not, the node runs once and
 * may release what it saved as it goes. */
bool st_ad_retaining(void);
/* Inside a backward: whether it runs with create_graph=True (its ops are
 * recorded, so the gradients it makes have histories). */
bool st_ad_creating(void);
/* Inside a custom node's backward run with create_graph=True: a new alias
 * of t (what the node saved of its output nr) whose history is that
 * output of the running node, so a gradient of the gradient flows through
 * the node again (torch's unpacked saved output). Otherwise t itself (a
 * new reference). NULL when out of memory. */
st_tensor *st_ad_saved_output(st_tensor *t, int nr);
/* n's backward is not itself differentiable (it runs compiled kernels, or
 * ops on detached values): under create_graph its gradients get a node
 * that raises if a second backward reaches it, as torch's
 * once_differentiable. */
void st_ad_node_set_once_differentiable(st_ad_node *n);
/* n's ctx holds no saved tensor that a backward frees: it stays until the
 * node goes (ctx_free then), and n may run again after a backward that did
 * not retain the graph, as torch's nodes that saved nothing. Such a
 * backward calls release_saved(ctx) (when not NULL) instead of freeing the
 * ctx: the ctx drops what it saved, and raises itself if it is needed
 * again (a custom Function's ctx.saved_tensors). */
void st_ad_node_keep_ctx(st_ad_node *n, void (*release_saved)(void *ctx));
/* Attaches a custom node as grad_fn of outputs[k] (each gets requires_grad,
 * output_nr k; NULL entries are non-differentiable). inputs are the
 * tensors the node differentiates to (NULL for non-tensor arguments);
 * ctx_free(ctx) runs when the node is destroyed. */
st_ad_node *st_ad_custom_node(const char *name, st_ad_custom_fn fn, void *ctx,
                              void (*ctx_free)(void *), int nin,
                              st_tensor *const *inputs, int nout,
                              st_tensor *const *outputs);
void st_ad_node_incref(st_ad_node *n);
void st_ad_node_decref(st_ad_node *n);
const char *st_ad_node_name(const st_ad_node *n);   /* "MulBackward0" */
/* The owner's wrapper object of n while it lives (not owned; the owner
 * sets it and clears it when the wrapper goes), for identity. */
void *st_ad_node_pyobj(const st_ad_node *n);
void st_ad_node_set_pyobj(st_ad_node *n, void *obj);
bool st_ad_node_is_view(const st_ad_node *n);       /* recorded a view op */

/* ---------------- views and history (runtime/viewhist.c) ----------------
 * PyTorch's rules for views and in-place ops. The view functions
 * (runtime/view.c) call st_view_mark(src, r): r holds the root base (src's
 * base, or src). An in-place op whose result goes into a view (given) while
 * the base requires grad or an operand does runs as st_view_inplace: the
 * op (on the copies eager made of operands its VJP saves from the written
 * storage) writes into the view's elements in place and a CopySlices node
 * is made the base's history (a non-contiguous base: the op out of place,
 * base = where(view's positions, result, base) copied into it); the base's history
 * changes (its hist moves on). A view whose base's history changed since
 * its grad_fn was made is stale: st_ad_view_refresh gives it a new grad_fn
 * (a gather of its positions out of the base) before anything reads its
 * history (eager ops, custom nodes, backward roots, compiled calls, the
 * frontend's getters). */
void st_view_mark(st_tensor *src, st_tensor *r);
/* A view whose base nobody else holds (an op's temporary it was reshaped
 * from) becomes a tensor of its own (no _base, not a view). */
void st_view_unbase(st_tensor *t);
/* Marks r as output nr of a multi-view function (kind ST_VIEW_MULTI_*; 0
 * clears: unsafe_split). An in-place write into such a view (or a view of
 * it) while grad mode is on and the base or an operand needs gradients
 * fails (st_view_inplace), and so does its use in grad mode after its base's
 * history changed (st_ad_view_refresh), with torch's messages. */
void st_view_multi_mark(st_tensor *r, int kind, int nr);
/* The error of writing into (indirect: using after its base changed) the
 * multi-view output v; returns the status set. */
st_status st_view_multi_error(const st_tensor *v, bool indirect);
/* The error of writing in grad mode into v, a view taken in no_grad or
 * inference mode (v->view_nograd) or a view of one; returns the status set. */
st_status st_view_nograd_error(const st_tensor *v);
static inline bool st_ad_view_stale(const st_tensor *t) {
    return t && t->view_base && t->base_hist != t->view_base->hist;
}
st_status st_ad_view_refresh(st_tensor *t);
/* The in-place op op(in) -> v (a view with a base), as above. Returns 1
 * with out[0] = v (a new reference), or -1 with the error set. */
int st_view_inplace(st_op_id op, const st_operand *in, int nin,
                    const st_attrs *attrs, st_tensor *v, st_tensor **out);
int st_ad_node_num_inputs(const st_ad_node *n);
/* Edge k: the next node (borrowed) or the leaf tensor (borrowed) it feeds,
 * both NULL when input k needs no gradient. */
void st_ad_node_next(const st_ad_node *n, int k, st_ad_node **node,
                     st_tensor **leaf);

/* Gradient hooks (Tensor.register_hook, register_post_accumulate_grad_hook)
 * and retain_grad. The owner (the frontend) attaches an opaque hooks object
 * to a tensor's gradient slot: a leaf's own, or output output_nr of a
 * computed tensor's grad_fn, so hooks registered on a tensor outlive it
 * and an in-place write (a new grad_fn) leaves them on the value they were
 * registered on, as in PyTorch. The engine calls
 *   call(hooks, ST_AD_HOOK_GRAD, t, g, &out)  on the gradient of a slot,
 *     once it is complete (a leaf's summed gradient before it accumulates,
 *     an output's before its node runs); out: a new reference to use
 *     instead, or NULL to keep g;
 *   call(hooks, ST_AD_HOOK_POST, leaf, NULL, NULL)  after backward()
 *     accumulated into leaf->grad.
 * release(hooks) runs when the slot goes. A retained non-leaf's .grad
 * accumulates its gradient after the hooks (backward() and grad()). */
enum { ST_AD_HOOK_GRAD, ST_AD_HOOK_POST };
typedef st_status (*st_ad_hook_call)(void *hooks, int when, st_tensor *t,
                                     st_tensor *g, st_tensor **out);
void st_ad_set_hook_owner(st_ad_hook_call call, void (*release)(void *hooks));
void *st_ad_hooks(const st_tensor *t);          /* borrowed; NULL if none */
/* Takes over the reference to hooks (NULL clears); releases the old. */
st_status st_ad_set_hooks(st_tensor *t, void *hooks);
/* t must require grad; a no-op on leaves. */
st_status st_ad_retain_grad(st_tensor *t);
/* Called by st_tensor_decref and attach() (internal to the runtime). */
void st_ad_tensor_gone(st_tensor *t);
void st_ad_hooks_release(void *hooks);
/* For the owner's garbage collector: calls visit(obj, release, arg) on
 * each opaque object t reaches through references of its own: a leaf's
 * hooks, or the slot hooks, packed saved tensors and custom contexts of
 * the nodes t alone holds (its grad_fn when t is its only holder, and
 * below each such node the next nodes and leaves only it holds); release
 * is the function that frees obj (the hook owner's, the saved-tensor
 * hooks owner's, or the node's ctx_free), which tells whose
 * object it is. A non-zero return of visit stops the walk and is
 * returned. Meaningful only when the caller holds t's only reference. */
int st_ad_visit_owned(const st_tensor *t,
                      int (*visit)(void *obj, void (*release)(void *), void *arg),
                      void *arg);

/* Saved-tensor hooks (autograd.graph.saved_tensors_hooks). The owner (the
 * frontend) pushes opaque hook pairs on a thread-local stack. While it is
 * not empty, each tensor an op node saves for backward is handed to
 *   pack(pair, t, &packed)   pair: the top one; t borrowed: the saved input
 *     itself (a detached alias in an in-place op), or a detached alias of
 *     the saved output; runs with grad mode off; *packed: a new object
 * and the node keeps packed instead of the tensor. Each backward through
 * the node calls
 *   unpack(packed, &out)     *out: a new reference, which must have the
 *     saved tensor's dtype, shape and the gradients' device (else a clear
 *     error); no version check then (the hooks own the value, as PyTorch)
 * and drops out after use. release(obj) frees a pair popped and the packed
 * objects when the node releases its saved tensors (after backward without
 * retain_graph, or when the node goes). Custom nodes (PyLayer) pack in
 * their owner, which reads the top pair. Without hooks, recording costs
 * one thread-local test. */
typedef struct {
    st_status (*pack)(void *pair, st_tensor *t, void **packed);
    st_status (*unpack)(void *packed, st_tensor **out);
    void (*release)(void *obj);
} st_ad_saved_owner;
void st_ad_set_saved_hooks_owner(const st_ad_saved_owner *o);   /* NULL: none */
st_status st_ad_saved_hooks_push(void *pair);    /* takes over the reference */
st_status st_ad_saved_hooks_pop(void);           /* releases the top pair */
void *st_ad_saved_hooks_top(void);               /* borrowed; NULL when none */
int st_ad_saved_hooks_depth(void);

/* tensor.backward(): accumulates d(sum roots*grads)/d(leaf) into leaves'
 * .grad. grads[k] may be NULL for a one-element root (implied 1). */
st_status st_ad_backward(st_tensor *const *roots, st_tensor *const *grads,
                         int n, bool retain_graph);
/* create_graph: the backward's own ops are recorded (higher-order
 * gradients); the graph is freed unless retain_graph (torch's callers pass
 * retain_graph=create_graph by default). */
st_status st_ad_backward_create(st_tensor *const *roots, st_tensor *const *grads,
                                int n, bool retain_graph, bool create_graph);
/* autograd.grad(): results[k] = d(sum outs*gouts)/d(inputs[k]) as new
 * references (NULL when unused and allow_unused). Leaves' .grad untouched. */
st_status st_ad_grad(st_tensor *const *outs, st_tensor *const *gouts, int n,
                     st_tensor *const *inputs, int ninputs, bool retain_graph,
                     bool allow_unused, st_tensor **results);
st_status st_ad_grad_create(st_tensor *const *outs, st_tensor *const *gouts, int n,
                            st_tensor *const *inputs, int ninputs, bool retain_graph,
                            bool create_graph, bool allow_unused, st_tensor **results);
typedef struct {
    int64_t nodes_alive, programs, program_hits, program_compiles;
} st_ad_stats;
void st_ad_stats_get(st_ad_stats *out);

/* ---------------- trace capture (runtime/trace.c) ----------------
 * While a trace is active on a thread, every st_rt_eager call and every
 * view function run at the outermost level (not inside another op, nor
 * while suspended) also appends its statement to a trace graph: a tensor
 * first seen as an operand becomes an input (ST_VAL_PARAM for a leaf that
 * requires grad), Python scalars become constants, an in-place result is a
 * new value its tensor maps to from then on. Ops run eagerly as usual.
 * What cannot be expressed (custom autograd nodes, in-place writes into
 * storage aliased outside the trace's views, data reads into Python) fails
 * the trace: st_rt_trace_end
 * then returns NULL with the reason as the error (and restores inputs as
 * st_rt_trace_abort does). Ops under no_grad become stop-gradient regions
 * of the graph. One trace per thread; no nesting. */
st_status st_rt_trace_begin(void);
bool st_rt_trace_active(void);       /* active and not suspended */
/* Some op was noted while grad mode was on (an enable_grad block inside a
 * frame entered under no_grad counts: its inputs need their gradients). */
bool st_rt_trace_grad_seen(void);
/* Ends the trace: marks outputs[0..nout) as the graph's outputs and
 * returns the graph (dead statements removed; caller frees) and, through
 * *inputs (malloc'd array of new references; caller decrefs each and
 * frees it) and *ninputs, the tensors bound to its inputs, in order. */
st_graph *st_rt_trace_end(st_tensor *const *outputs, int nout,
                          st_tensor ***inputs, int *ninputs);
void st_rt_trace_abort(void);        /* discards an active trace */
/* Like st_rt_trace_end, and also reports the graph inputs that traced ops
 * mutated in place: for each, one extra graph output (after the nout
 * requested ones, in order) holds its final value, and (*wb_in)[k] is the
 * input index it belongs to (malloc'd; caller frees; *nwb the count). */
st_graph *st_rt_trace_end2(st_tensor *const *outputs, int nout,
                           st_tensor ***inputs, int *ninputs,
                           int **wb_in, int *nwb);
/* Like st_rt_trace_end2, and also gives the final dead-code pass's map
 * of statements: (*stmt_map)[k] (k < *nstmt_map, the statements traced)
 * is statement k's index in the returned graph, -1 if it was dropped
 * (malloc'd; caller frees; stmt_map and nstmt_map both NULL: not asked),
 * and (input_rg not NULL) each input's requires_grad when the trace first
 * read it (malloc'd, *ninputs of them; caller frees): an in-place write
 * with an operand that requires grad sets an input's flag after the
 * values computed from its old value; and (wb_quiet not NULL) per
 * written-back input whether only .data aliases wrote it (malloc'd, *nwb
 * of them; caller frees): its writeback moves no version. */
st_graph *st_rt_trace_end3(st_tensor *const *outputs, int nout,
                           st_tensor ***inputs, int *ninputs,
                           int **wb_in, int *nwb, int **stmt_map, int *nstmt_map,
                           bool **input_rg, bool **wb_quiet);
/* Dynamic shapes (frontend/tr_dynamic.c) look at the trace while it runs:
 * its graph so far (borrowed; NULL when none is active or a PyLayer's
 * backward is being traced), the value a tensor maps to (-1: none), and
 * the tensors bound to the graph's inputs so far (borrowed, *n of them). */
st_graph *st_rt_trace_graph(void);
int st_rt_trace_find(const st_tensor *t);
st_tensor *const *st_rt_trace_inputs(int *n);
/* The view statement that statement stmt of the active trace remakes with
 * the same op and attrs (a view of an input written in place, made again
 * from its new value), or -1. */
int st_rt_trace_replay_of(int stmt);
/* Has the active trace failed? Then *reason (if not NULL) points at the
 * first reason (valid until the trace ends). */
bool st_rt_trace_failed(const char **reason);
/* st_rt_trace_abort also restores inputs that traced ops mutated in place
 * (a copy is taken before the first in-place write into a tensor the trace
 * did not create), so an aborted translation leaves no trace of itself. */
/* Called by st_rt_eager before it writes into a given tensor while a
 * trace is active: copies the tensor's storage (once) when the trace did
 * not create it, for st_rt_trace_abort to restore, and makes the tensor
 * an input (so end2 reports its new value). */
void st_rt_trace_will_write(st_tensor *t);
/* Before an in-place view op changes t's geometry and history (t_,
 * unsqueeze_, ...): they are kept, and put back when the trace aborts. */
void st_rt_trace_will_reshape(st_tensor *t);
/* The trace's sizes are symbolic (a dynamic-shape translation): the end
 * adds no statements of concrete sizes (outputs that are views of inputs
 * stay as computed). */
void st_rt_trace_symbolic(void);
/* A tensor allocated uninitialized while tracing (_C.empty): traced as
 * zeros made by the graph (any content is a valid value of empty), so
 * code that fills it (cat) does not make it a graph input. */
void st_rt_trace_fresh(st_tensor *t);
/* A tensor the library made on the host from shapes and the call's
 * constants (positions, offsets; never from tensor values: such reads fail
 * the trace): an input of the graph kept as it is, which a caller need not
 * pass in (st_rt_trace_is_constant; the translator's source check). */
void st_rt_trace_constant(st_tensor *t);
bool st_rt_trace_is_constant(const st_tensor *t);
/* Tensor.detach() while tracing: out (an alias of src) is traced as an
 * identity (a same-shape reshape) in a stop-gradient region. */
void st_rt_trace_detach(st_tensor *src, st_tensor *out);
/* st_tensor_decref calls this when a traced tensor is left with one
 * reference (the trace's): the trace may drop it at its next sweep. */
void st_rt_trace_released(st_tensor *t);
/* PyLayer inside a trace (frontend/pylayer_trace.c): a custom-gradient
 * region (st_ir_region). region_begin: the statements traced from now on
 * are the PyLayer's forward. region_backward: the forward ran; ins (its
 * tensor arguments) and outs (its results, computed by traced ops) are the
 * region's inputs and outputs; from now on traced ops build the region's
 * backward graph instead, whose first inputs are gouts[0..nout) (fresh
 * tensors standing for the outputs' gradients); tensors it reads that the
 * forward trace knows become its further inputs. region_end: the backward
 * ran; gins[k] is the gradient of ins[k] (NULL: zeros); registers the
 * region and resumes the main trace. Errors fail the trace too; after an
 * error, region_cancel(reason) closes whatever is open. */
st_status st_rt_trace_region_begin(void);
st_status st_rt_trace_region_backward(st_tensor *const *ins, int nin,
                                      st_tensor *const *outs, int nout,
                                      st_tensor *const *gouts);
st_status st_rt_trace_region_end(st_tensor *const *gins, int nin);
void st_rt_trace_region_cancel(const char *reason);
/* The hook: records op(in) -> out[0..nout) (called by st_rt_eager after a
 * successful op and by runtime/view.c for every view). Never fails: a
 * problem marks the trace failed; the thread's error state is kept. */
void st_rt_trace_note(st_op_id op, const st_operand *in, int nin,
                      const st_attrs *attrs, st_tensor *const *out, int nout);
void st_rt_trace_fail(const char *reason);
/* Nested work (an op's own steps, the autograd engine, graph runs) is not
 * traced: bracket it (counts nest). */
void st_rt_trace_suspend(void);
void st_rt_trace_resume(void);

/* ---------------- the kernel profiler (profile.c): SYMTRACE_PROFILE=1 ---------------- */
typedef struct {
    char name[48];
    int kind;          /* st_kernel_kind */
    int64_t points;    /* iteration size of the launch */
    int64_t calls, ns;
    int64_t par_calls; /* calls that also ran on pool workers */
} st_rt_profile_row;
bool st_rt_profile_on(void);
void st_rt_profile_enable(bool on);
/* SYMTRACE_PROFILE_CLOCK=cpu: launches timed in CPU time (the calling
 * thread's plus the pool workers' chunks) instead of wall time */
bool st_rt_profile_cpu_clock(void);
/* the pool: its workers spent ns of CPU in a job this thread submitted */
void st_rt_profile_worker_cpu(int64_t ns);
typedef struct { int64_t t, jobs; } st_rt_profile_mark;
st_rt_profile_mark st_rt_profile_start(void);
void st_rt_profile_stop(const st_rt_profile_mark *m, const void *prog,
                        int kernel, const char *name, int kind, int64_t points);
void st_rt_profile_add(const void *prog, int kernel, const char *name,
                       int kind, int64_t points, int64_t ns, bool par);
/* rows, most time first, up to cap; returns how many there are */
int st_rt_profile_get(st_rt_profile_row *out, int cap);
void st_rt_profile_reset(void);

/* ---------------- random ---------------- */
void st_rt_manual_seed(uint64_t seed);
uint64_t st_rt_initial_seed(void);
/* Reserves n counters of the global generator: returns (seed, offset). */
void st_rt_rng_reserve(uint64_t n, uint64_t *seed, uint64_t *offset);
/* The global generator's state, to put back after a discarded translation. */
void st_rt_rng_get_state(uint64_t *seed, uint64_t *offset);
void st_rt_rng_set_state(uint64_t seed, uint64_t offset);
/* The replay base (random.c): while a compiled backward runs, the generator
 * state its forward run started from; kernels replaying a forward draw
 * (st_kernel.rng_replay) launch at it plus their draw's offset. Nests:
 * begin saves the enclosing base into *saved, end restores it. */
typedef struct { bool on; uint64_t seed, offset; } st_rng_replay;
void st_rt_rng_replay_begin(uint64_t seed, uint64_t offset, st_rng_replay *saved);
void st_rt_rng_replay_end(const st_rng_replay *saved);
/* false when no backward of a compiled forward is running */
bool st_rt_rng_replay_base(uint64_t *seed, uint64_t *offset);


/* ---------------- compiled functions (runtime/cfn.c) ----------------
 * What a compiled frame runs: a forward graph lowered and compiled once by
 * a backend ("llvm", "interp", "nvrtc", or "eager": the graph's statements
 * run one by one through st_rt_eager, for debugging the frontend), plus,
 * when some inputs require grad, the backward graph of every differentiable
 * output (AOTAutograd-style: st_ir_backward, only what backward reads is
 * saved), compiled by the same backend. Each run with grad mode on and an
 * input that requires grad attaches one custom tape node to the outputs;
 * its backward runs the compiled backward graph. Inputs that the traced
 * code mutated in place get their new value copied back after each run
 * (the trace reports them, see st_rt_trace_end2). */
typedef struct st_rt_cfn st_rt_cfn;
/* Runs graph g's statements one by one through st_rt_eager (recorded on
 * the tape as any eager op when grad mode is on): in[] are its inputs in
 * order (NULL for one no statement reads), out[] gets a new reference per
 * graph output. */
st_status st_rt_graph_run_eager(const st_graph *g, st_tensor *const *in, st_tensor **out);
typedef struct {
    const char *backend;
    /* per input: build gradients for it (it required grad at trace time) */
    const bool *input_requires_grad;
    /* pairs (graph output index -> input index) to copy back after a run;
     * those outputs are internal (not among the user-visible outputs,
     * which are the first nvisible ones) */
    const int *writeback_out, *writeback_in;
    /* per writeback (NULL: none): the trace wrote that input only through
     * .data aliases, so the copy back moves no version (as eager's) */
    const bool *writeback_quiet;
    int nwriteback;
    int nvisible;
    /* some op of the graph ran with grad on when it was traced although
     * the caller's mode was off (enable_grad() inside): runs record the
     * graph's autograd node as that trace did */
    bool grad_inside;
} st_rt_cfn_opts;
/* Takes ownership of g (freed on failure too). NULL + error on failure. */
st_rt_cfn *st_rt_cfn_new(st_graph *g, const st_rt_cfn_opts *o);
/* inputs[0..ninputs) -> outputs[0..nvisible) as new references. */
st_status st_rt_cfn_run(st_rt_cfn *f, st_tensor *const *inputs,
                        st_tensor **outputs);
void st_rt_cfn_free(st_rt_cfn *f);
int st_rt_cfn_num_inputs(const st_rt_cfn *f);
int st_rt_cfn_num_outputs(const st_rt_cfn *f);   /* visible ones */
int st_rt_cfn_num_kernels(const st_rt_cfn *f, bool backward);
bool st_rt_cfn_has_backward(const st_rt_cfn *f);
const st_graph *st_rt_cfn_graph(const st_rt_cfn *f, bool backward);

#endif
