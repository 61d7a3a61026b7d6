/* st_ir.h - StatementIR: dtypes, errors, tensor metadata, the op registry
 * (shape/dtype inference, VJP slot, printing), graphs in SSA form, hashing.
 * The lowest layer: plain C, no Python, no devices. Prefix: st_ (shared
 * basics) and st_ir_ (graph machinery). */
#ifndef ST_IR_H
#define ST_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define ST_MAX_DIMS 8
#define ST_MAX_IN 6   /* operands per statement */
#define ST_MAX_OUT 3  /* results per statement */

/* ---- errors: a thread-local status, set by the failing function ---- */
typedef enum {
    ST_OK = 0,
    ST_ERR_VALUE,   /* ValueError: bad value / shape */
    ST_ERR_TYPE,    /* TypeError: bad dtype or argument kind */
    ST_ERR_INDEX,   /* IndexError: index or dim out of range */
    ST_ERR_RUNTIME, /* RuntimeError: anything else (PyTorch's usual choice) */
    ST_ERR_MEMORY,  /* out of memory */
    ST_ERR_NOTIMPL, /* NotImplementedError: no kernel for the dtype (torch's
                     * "... not implemented for 'Bool'"; a RuntimeError) */
} st_status;

/* Sets the error and returns kind (so `return st_err(...)` reads well). */
st_status st_err(st_status kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
st_status st_err_kind(void);        /* ST_OK if none */
const char *st_err_msg(void);       /* "" if none */
void st_err_clear(void);

/* ---- dtypes. Order matters: it is the promotion order within a category. */
typedef enum {
    ST_BOOL = 0,
    ST_UINT8,
    ST_INT8,
    ST_INT16,
    ST_INT32,
    ST_INT64,
    ST_FLOAT16,
    ST_BFLOAT16,
    ST_FLOAT32,
    ST_FLOAT64,
    ST_NDTYPES
} st_dtype;

size_t st_dtype_size(st_dtype t);
const char *st_dtype_name(st_dtype t);      /* "float32", ... */
bool st_dtype_is_float(st_dtype t);
bool st_dtype_is_int(st_dtype t);           /* uint8 .. int64 (not bool) */
/* Bits of an integer dtype's value (8/16/32/64; bool 1), 0 for floats. */
int st_dtype_int_bits(st_dtype t);
bool st_dtype_is_unsigned(st_dtype t);      /* bool, uint8 */
/* Promotion of two dtypes of the same priority (PyTorch's promote_types). */
st_dtype st_promote(st_dtype a, st_dtype b);
/* float16/bfloat16 conversion helpers (round to nearest even). */
float st_half_to_float(uint16_t h);
uint16_t st_float_to_half(float f);
float st_bf16_to_float(uint16_t h);
uint16_t st_float_to_bf16(float f);

/* ---- tensor metadata as the IR sees it (no data, no strides). */
typedef enum {
    ST_META_TENSOR = 0, /* an ordinary tensor operand */
    ST_META_SCALAR = 1, /* a wrapped Python number: lowest promotion priority */
} st_meta_kind;

typedef struct {
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    st_meta_kind kind;
} st_meta;

int64_t st_meta_numel(const st_meta *m);
/* same kind, dtype and shape */
bool st_meta_eq(const st_meta *a, const st_meta *b);
/* Formats "[2, 3]" into buf; returns buf. */
char *st_shape_str(const int64_t *shape, int ndim, char *buf, size_t n);
/* Result dtype of operands following PyTorch's result_type: dimensioned
 * tensors > zero-dim tensors > wrapped scalars, categories bool < int < float;
 * a higher category from a lower priority operand lifts the result to that
 * category's default (int64 for ints, float32 for floats). */
st_dtype st_result_type(const st_meta *ops, int n);
/* Broadcast shapes; on failure sets ST_ERR_RUNTIME naming op and operands. */
st_status st_broadcast(const char *op, const st_meta *ops, int n, int *ndim,
                       int64_t *shape);
/* Python slice bounds on a dim of `size` with step > 0: clamps *start and
 * *stop into [0, size] (negative values count from the end, stop >= start)
 * and returns the number of elements selected. */
int64_t st_slice_bounds(int64_t size, int64_t *start, int64_t *stop,
                        int64_t step);
/* PyTorch's computeStride: the strides that view a tensor of oldshape /
 * oldstride as newshape (same element count), or false when its layout
 * needs a copy. Shared by runtime views and the memory plan. */
bool st_view_strides(int od, const int64_t *oldshape, const int64_t *oldstride,
                     int nd, const int64_t *newshape, int64_t *newstride);
/* Normalizes dim into [0, ndim) (ndim 0 accepts -1 and 0); sets IndexError. */
st_status st_wrap_dim(const char *op, int64_t *dim, int ndim);

/* ---- op registry ---- */
typedef enum {
    /* elementwise unary */
    ST_OP_NEG, ST_OP_EXP, ST_OP_LOG, ST_OP_SQRT, ST_OP_RSQRT, ST_OP_TANH,
    ST_OP_SIGMOID, ST_OP_RELU, ST_OP_ERF, ST_OP_ABS, ST_OP_LOGICAL_NOT,
    ST_OP_SIN, ST_OP_COS, ST_OP_RECIPROCAL, ST_OP_FLOOR, ST_OP_CEIL,
    ST_OP_ROUND, ST_OP_SIGN,
    ST_OP_CAST,          /* attrs.dtype = target dtype */
    /* elementwise binary (operands broadcast, result_type promotion) */
    ST_OP_ADD, ST_OP_SUB, ST_OP_MUL, ST_OP_DIV, ST_OP_POW, ST_OP_MAXIMUM,
    ST_OP_MINIMUM, ST_OP_EQ, ST_OP_NE, ST_OP_LT, ST_OP_LE, ST_OP_GT, ST_OP_GE,
    ST_OP_LOGICAL_AND, ST_OP_LOGICAL_OR, ST_OP_FLOOR_DIVIDE, ST_OP_REMAINDER,
    /* elementwise ternary: where(cond, a, b) */
    ST_OP_WHERE,
    /* reductions: attrs.dims/ndims (ndims 0 = all), attrs.flags & ST_ATTR_KEEPDIM;
     * argmax/argmin take exactly one dim or none (flattened) */
    ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX, ST_OP_AMIN, ST_OP_ARGMAX, ST_OP_ARGMIN,
    ST_OP_PROD,
    /* matmul with numpy/PyTorch semantics (1-D, 2-D, batched broadcast) */
    ST_OP_MATMUL,
    /* gather along attrs.i[0]=dim: out[..i..] = x[..index[..i..]..] */
    ST_OP_GATHER,
    /* index_select(x, index) along attrs.i[0]=dim, index 1-D int */
    ST_OP_INDEX_SELECT,
    /* scatter_add(self, index, src) along attrs.i[0]=dim (torch's): out =
     * self, then out[..index[i]..] += src[i] for every i of index's shape;
     * index int64 with index.ndim == src.ndim == self.ndim and
     * index.size(d) <= src.size(d); the backward of gather/index_select/
     * embedding */
    ST_OP_SCATTER_ADD,
    /* creation: attrs.dims/ndims = shape, attrs.dtype; FULL value attrs.f[0]
     * (or attrs.i[0] for ints); ARANGE start f[0], step f[1], n = shape[0];
     * RAND uniform [f[0], f[1]); RANDN normal(f[0], f[1]); RANDINT [i[0], i[1]).
     * FULL, RAND, RANDN and RANDINT take an optional operand whose shape
     * replaces attrs.dims (the *_like form; its data is not read), so that
     * decompositions stay independent of sizes. RAND, RANDN, RANDINT and
     * DROPOUT with flag ST_ATTR_RNG_REPLAY draw again what the forward run
     * drew at generator offset (run start + attrs.i[2]) instead of taking
     * new numbers (a checkpoint's recomputation, ir/backward.c). */
    ST_OP_FULL, ST_OP_ARANGE, ST_OP_RAND, ST_OP_RANDN, ST_OP_RANDINT,
    /* copy (materialize input into a fresh contiguous result) */
    ST_OP_COPY,
    /* views (no data movement; lowered to runtime view steps) */
    ST_OP_RESHAPE,   /* attrs.dims/ndims = target shape (may hold one -1) */
    ST_OP_PERMUTE,   /* attrs.dims = permutation */
    ST_OP_EXPAND,    /* attrs.dims = target shape (-1 keeps) */
    ST_OP_SLICE,     /* attrs.i[0]=dim, i[1]=start, i[2]=stop, i[3]=step (>0) */
    ST_OP_SQUEEZE,   /* attrs.dims/ndims (ndims 0 = all size-1 dims) */
    ST_OP_UNSQUEEZE, /* attrs.i[0] = dim */
    /* composites (decomposed into the primitives above by fusion/) */
    ST_OP_SOFTMAX,     /* attrs.i[0] = dim */
    ST_OP_LOG_SOFTMAX, /* attrs.i[0] = dim */
    ST_OP_LAYER_NORM,  /* x, [weight, bias]; attrs.ndims = normalized dims
                          count, f[0] = eps; flags: ST_ATTR_HAS_WEIGHT/BIAS */
    ST_OP_GELU,        /* x, [e1]; flags ST_ATTR_TANH for the tanh
                          approximation. e1, when given (exact form), is
                          erf(x / sqrt(2)) + 1 computed by the caller: the
                          forward stores it, the rule reads it back instead
                          of another erf (no gradient flows into it) */
    ST_OP_CROSS_ENTROPY, /* logits [N, C], target [N] int, [lse [N, 1]];
                            i[0]=ignore_index, i[1]=reduction (0 none, 1
                            mean, 2 sum). lse, when given, is logsumexp of
                            the logits' rows (the caller's, no gradient
                            flows into it: the rule's is the whole one) */
    ST_OP_LINEAR,      /* x, w, [b]: x @ w.T + b; flags ST_ATTR_HAS_BIAS */
    ST_OP_DROPOUT,     /* f[0] = p */
    ST_OP_CLAMP,       /* f[0]=min, f[1]=max; flags HAS_MIN/HAS_MAX */
    ST_OP_MASKED_FILL, /* x, mask: where(mask, f[0], x) */
    ST_OP_EMBEDDING,   /* weight, index; i[0] = padding_idx (-1 none) */
    ST_OP_LOGSUMEXP,   /* x; attrs as a reduction (dims, none: all;
                          flags KEEPDIM): log(sum(exp(x))), computed as
                          m + log(sum(exp(x - m))), m the max (0 where
                          infinite) */
    /* primitive (after the composites only to keep the ids above) */
    ST_OP_SLICE_SCATTER, /* base, src: base with its slice (attrs as
                            SLICE: i[0]=dim, i[1]=start, i[2]=stop,
                            i[3]=step > 0) replaced by src, of the slice's
                            shape and base's dtype (torch.slice_scatter);
                            an in-place write into a slice view traces to
                            it (cat, stack). Lowered as a copy of base and
                            a store of src into the slice (fusion/) */
    ST_OP_SCATTER,       /* scatter(self, index, src) along attrs.i[0]=dim
                            (torch.scatter with a src tensor): out = self,
                            then out[..index[p]..] = src[p] for every point
                            p of index's shape; operands as scatter_add's.
                            A position named twice gets one of its values
                            (torch: unspecified). What writes through index
                            tensors (t[idx] = v, index_put, index_copy)
                            lower to; lowered as scatter_add, the indexed
                            store not accumulating (fusion/lower.c) */
    ST_NOPS
} st_op_id;

enum {
    ST_ATTR_KEEPDIM = 1 << 0,
    ST_ATTR_HAS_WEIGHT = 1 << 1,
    ST_ATTR_HAS_BIAS = 1 << 2,
    ST_ATTR_TANH = 1 << 3,
    ST_ATTR_HAS_MIN = 1 << 4,
    ST_ATTR_HAS_MAX = 1 << 5,
    ST_ATTR_INT_VALUE = 1 << 6, /* FULL/CLAMP/MASKED_FILL value is attrs.i */
    ST_ATTR_RNG_REPLAY = 1 << 7, /* random: the forward's draw at i[2] (above) */
    /* MATMUL of float16/bfloat16 operands: the product in float32, not
     * rounded (fusion/decompose.c's linear with a bias: torch's addmm adds
     * the bias to the float32 accumulator and rounds once) */
    ST_ATTR_ACC_OUT = 1 << 8,
};

/* One fixed attribute record per statement: each op documents which fields
 * it uses (above). Unused fields must be zero so hashing is stable. */
typedef struct {
    int64_t i[4];
    double f[2];
    int64_t dims[ST_MAX_DIMS];
    int ndims;
    int flags;
    st_dtype dtype;
} st_attrs;

typedef enum {
    ST_OPK_UNARY, ST_OPK_BINARY, ST_OPK_TERNARY, ST_OPK_REDUCE, ST_OPK_MATMUL,
    ST_OPK_GATHER, ST_OPK_CREATE, ST_OPK_RANDOM, ST_OPK_COPY, ST_OPK_VIEW,
    ST_OPK_COMPOSITE,
} st_op_kind;

struct st_graph;
struct st_stmt;

/* Shape/dtype inference: fills out[0..*nout). On bad operands sets an error
 * naming the op, the operands and their shapes, and returns non-OK. */
typedef st_status (*st_infer_fn)(const st_meta *in, int nin,
                                 const st_attrs *attrs, st_meta *out,
                                 int *nout);
/* VJP rule: appends statements to g computing the gradients of the
 * statement's inputs from grads of its outputs (value ids, -1 = none).
 * Filled by the autograd work; NULL means not differentiable (yet). */
typedef st_status (*st_vjp_fn)(struct st_graph *g, const struct st_stmt *s,
                               const int *out_grads, int *in_grads);

typedef struct {
    const char *name;      /* printed name, PyTorch's where one exists */
    st_op_kind kind;
    int min_in, max_in;    /* operand count range */
    st_infer_fn infer;
    st_vjp_fn vjp;         /* slot; may be NULL */
    /* What the VJP rule reads at run time: bit k = operand k, bit
     * ST_VJP_SAVES_OUT = result 0. Other values of the statement may be
     * used for their metas (shapes, dtypes) only. */
    unsigned vjp_saves;
    /* Appends a printable form of attrs ("dim=1, keepdim=True") to buf. */
    void (*print_attrs)(const st_attrs *a, char *buf, size_t n);
} st_op_def;

#define ST_VJP_SAVES_OUT (1u << 7)

const st_op_def *st_op(st_op_id id);
/* Mutable access for later layers to fill the VJP slot. */
void st_op_set_vjp(st_op_id id, st_vjp_fn fn);
void st_op_set_vjp_saves(st_op_id id, unsigned saves);
/* Convenience: validates operand count and calls infer. */
st_status st_infer(st_op_id id, const st_meta *in, int nin,
                   const st_attrs *attrs, st_meta *out, int *nout);

/* ---- graphs (SSA). Values and statements live in arrays owned by the
 * graph; ids are indices. */
typedef enum {
    ST_VAL_INPUT,  /* graph input (var_N) */
    ST_VAL_PARAM,  /* graph input that is a parameter (param_N) */
    ST_VAL_CONST,  /* a scalar constant: meta.kind == ST_META_SCALAR */
    ST_VAL_STMT,   /* produced by a statement */
} st_val_kind;

typedef struct {
    st_meta meta;
    st_val_kind kind;
    int producer;    /* statement index for ST_VAL_STMT, else -1 */
    int name_index;  /* N in var_N / param_N */
    double fconst;   /* value of an ST_VAL_CONST (float view) */
    int64_t iconst;  /* value of an ST_VAL_CONST (integer view) */
} st_value;

typedef struct st_stmt {
    st_op_id op;
    int nin, nout;
    int in[ST_MAX_IN];
    int out[ST_MAX_OUT];
    st_attrs attrs;
} st_stmt;

/* A custom-gradient region (ir/backward.c): forward statements
 * [first, end) whose gradient is not given by their VJP rules. With bwd
 * NULL no gradient flows back through them (a stop-gradient: ops traced
 * under no_grad). Otherwise bwd gives it (a PyLayer's traced backward):
 * bwd's inputs are the gradients of out[0..nout) (their metas), then the
 * forward values read[0..nread); its outputs are the gradients of
 * in[0..nin) (their metas). out[k] may be -1 (dead). Copies of a graph
 * (st_ir_dce, replays, decompositions) drop regions: the trace keeps them
 * through its own dead-code pass, and backward graphs are built from the
 * graph that holds them. */
typedef struct st_ir_region {
    int first, end;
    int nin, nout, nread;
    int *in, *out, *read;         /* malloc'd, owned */
    struct st_graph *bwd;         /* owned; NULL: stop-gradient */
} st_ir_region;

typedef struct st_graph {
    int id;                       /* N in SIR_N */
    st_value *values; int nvalues, cap_values;
    st_stmt *stmts; int nstmts, cap_stmts;
    int *inputs; int ninputs, cap_inputs;
    int *outputs; int noutputs, cap_outputs;
    int next_var, next_param;
    st_ir_region *regions; int nregions, cap_regions; /* owned */
    /* activation-checkpoint ranges (st_ir_add_checkpoint): pairs
     * [ckpt[2k], ckpt[2k+1]) of statements, malloc'd, owned */
    int *ckpt; int nckpt, cap_ckpt;
} st_graph;

st_graph *st_ir_graph_new(void);
void st_ir_graph_free(st_graph *g);
/* A deep copy (regions and their backward graphs included) with a new id. */
st_graph *st_ir_graph_clone(const st_graph *g);
int st_ir_add_input(st_graph *g, const st_meta *m, bool is_param);
int st_ir_add_const(st_graph *g, st_dtype dtype, double f, int64_t i);
/* Appends a statement: infers its outputs, adds their values. Returns the
 * statement index, or -1 with the error set; out ids via out_ids (may be
 * NULL). */
int st_ir_add_stmt(st_graph *g, st_op_id op, const int *in, int nin,
                   const st_attrs *attrs, int *out_ids);
void st_ir_mark_output(st_graph *g, int value);
/* Checks SSA order, operand ids and re-runs inference; returns status. */
st_status st_ir_verify(const st_graph *g);
/* Re-runs inference of every statement after the inputs' metas changed
 * (new sizes, same ranks/dtypes). */
st_status st_ir_reinfer(st_graph *g);
/* A builder with a sticky failure flag, for code that emits many
 * statements (decompositions, VJP rules): after a failure every call
 * returns -1 and adds nothing, so the caller checks once at the end. */
typedef struct {
    st_graph *g;
    bool failed;
} st_ir_builder;
/* Appends op(in...) (attrs NULL: all zero); returns result 0 or -1. */
int st_ir_emit(st_ir_builder *b, st_op_id op, const int *in, int nin,
               const st_attrs *attrs);
int st_ir_emit_fconst(st_ir_builder *b, double v);  /* a float64 scalar */
int st_ir_emit_iconst(st_ir_builder *b, int64_t v); /* an int64 scalar */
/* A copy of g without the statements no output depends on. Inputs keep
 * their order, and every constant is kept, in order (callers bind
 * constants by position). Caller frees. */
st_graph *st_ir_dce(const st_graph *g);
/* Prints in SOT's StatementIR form into a malloc'd string (caller frees). */
char *st_ir_print(const st_graph *g);
/* Name of a value as printed: "var_3", "param_0", "2.0". */
const char *st_ir_value_name(const st_graph *g, int v, char *buf, size_t n);
/* ---- autodiff (ir/autodiff.c): VJP rules as IR statements.
 * A rule is called with s->in / s->out naming values of g that carry the
 * forward statement's metas (the rule may read at run time only those its
 * op's vjp_saves names), out_grads[k] the gradient value of output k (-1:
 * none) and fills in_grads[k] with the gradient value of operand k, of
 * that operand's shape and dtype (-1: no gradient, e.g. an index operand
 * or a non-float one). */
void st_ir_autodiff_init(void);   /* fills every VJP slot; idempotent */
/* What op's rule reads at run time when only the gradients of the operands
 * in `needs` (bit k = operand k) are wanted: vjp_saves narrowed for the
 * products and the quotient (mul's gradient of a reads only b, as
 * PyTorch's saves `other` only when `self` requires grad). The eager tape
 * keeps just these tensors alive. */
unsigned st_ir_vjp_saves_for(st_op_id op, unsigned needs);
/* The index of op's first operand that is a helper value the forward
 * hands its rule (gelu's erf(x / sqrt 2) + 1 from 1, cross_entropy's
 * log-sum-exp from 2): computed from the other operands, with no history
 * of its own, and optional (the rule computes it when absent). A gradient
 * that will be differentiated again leaves these out. ST_MAX_IN: none. */
int st_ir_vjp_helpers_from(st_op_id op);
/* Sums v down to meta's shape (broadcasting undone: leading dims summed
 * away, size-1 dims summed with keepdim); returns the value id or -1. */
int st_ir_sum_to(st_graph *g, int v, const st_meta *target);
/* The attrs of a FULL statement making zeros of meta m (static dims; an
 * integer fill for non-float dtypes). */
void st_ir_zeros_attrs(const st_meta *m, st_attrs *a);

/* ---- backward graphs (ir/backward.c), AOTAutograd-style. From fwd (its
 * output 0 is the loss) build *bwd_out computing d(loss)/d(wrt[k]) for
 * k < nwrt. Inputs of the backward graph: the forward values its rules read
 * at run time, info->saved[0..nsaved) (forward value ids, ascending), then
 * the loss gradient at index info->grad_input (== nsaved; the loss's meta:
 * feed ones for a scalar loss). Outputs: gradient k of wrt[k]'s shape and
 * dtype, summed over every use; zeros where wrt[k] has no path to the loss
 * (non-differentiable ops and int/bool values stop paths). Dead code is
 * removed; a value used only for its shape is not saved. Constants are
 * baked in. info is an output (overwritten, never freed first: clear it
 * after use); on error *bwd_out is NULL and info is cleared. */
typedef struct {
    int nsaved;
    int *saved;       /* malloc'd; freed by st_ir_bwd_info_clear */
    int grad_input;   /* backward input index of the loss gradient */
    int loss;         /* forward value id of the loss */
} st_ir_bwd_info;
st_status st_ir_backward(const st_graph *fwd, const int *wrt, int nwrt,
                         st_graph **bwd_out, st_ir_bwd_info *info);
void st_ir_bwd_info_clear(st_ir_bwd_info *info);
/* The same for several outputs at once: the gradients of
 * sum_k <outs[k], g_k> (outs: forward value ids, float, repeats allowed).
 * Backward inputs: the saved values, then one gradient g_k per outs[k] at
 * index info->grad_input + k (of outs[k]'s meta; feed zeros for an output
 * that got no gradient). info->loss is outs[0]. */
st_status st_ir_backward_multi(const st_graph *fwd, const int *wrt, int nwrt,
                               const int *outs, int nouts,
                               st_graph **bwd_out, st_ir_bwd_info *info);
/* A copy of fwd whose outputs are fwd's, then info->saved[k] for each k
 * (the forward of the pair: run it, keep outputs noutputs.., feed them to
 * the backward graph). Same inputs and constants in the same order. */
st_graph *st_ir_forward_saving(const st_graph *fwd,
                               const st_ir_bwd_info *info);

/* Appends a region (copies the in/out/read arrays, takes bwd; bwd is
 * freed on failure too). Returns its index or -1 with the error set. */
int st_ir_add_region(st_graph *g, const st_ir_region *r);
/* Frees g's regions and checkpoint ranges (st_ir_graph_free calls it). */
void st_ir_regions_clear(st_graph *g);
/* Marks statements [first, end) as an activation-checkpoint region (a
 * checkpoint(fn, ...) call traced inline): the backward graph does not
 * take the values they make from the forward but recomputes them from the
 * region's inputs (see ir/backward.c). Ranges may nest; copies of a graph
 * other than st_ir_graph_clone drop them. Returns 0, or -1 with the error
 * set. */
int st_ir_add_checkpoint(st_graph *g, int first, int end);
/* Is statement si inside a region of g: a custom-gradient (PyLayer) one when
 * custom, else a stop-gradient one (traced under no_grad)? */
bool st_ir_stmt_in_region(const st_graph *g, int si, bool custom);
/* Does the gradient of statement si read its operand i at run time
 * (st_op_def.vjp_saves; a custom-gradient region's: assumed)? from: the
 * values that need a gradient (mul reads an operand only for the other's). */
bool st_ir_vjp_reads(const st_graph *g, int si, int i, const bool *from);
/* Which values of g depend on wrt (value ids) through differentiable
 * statements and regions (what gets a gradient): malloc'd flags per value,
 * NULL on out of memory. */
bool *st_ir_grad_reach(const st_graph *g, const int *wrt, int nwrt);

/* xxHash (XXH3 64) of the graph's structure: ops, attrs, operand wiring,
 * input dtypes and shapes (sizes included when with_sizes). */
uint64_t st_ir_hash(const st_graph *g, bool with_sizes);

#endif
