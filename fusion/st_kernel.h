/* st_kernel.h - the kernel IR (one structure rendered by every backend) and
 * the lowering of a StatementIR graph into kernels: decomposition of
 * composite ops into primitives, then (for now, unfused) one kernel per
 * primitive statement. Prefix: st_fuse_ / st_kernel_. */
#ifndef ST_KERNEL_H
#define ST_KERNEL_H

#include "st_ir.h"

#define ST_K_MAX_BUFS 12
#define ST_K_MAX_PARAMS 8
#define ST_K_MAX_STORES 8
#define ST_K_MAX_REDUCE 4

/* Kernels are specialized on dtype, rank and layout, never on sizes: sizes
 * and strides arrive at launch in st_kargs. */
typedef enum {
    ST_K_ELEMENTWISE, /* for every point of the iteration space: nodes, stores */
    ST_K_REDUCE,      /* row kernel: the trailing nred dims (the row) are
                         reduced, once or several times in sequence; see
                         st_kernel.reduce */
    ST_K_MATMUL,      /* iteration [batch..., M, N, K]; bufs 0=A 1=B; the
                         result goes to bufs[2] when the kernel has no
                         stores, else through an epilogue (see below) */
    ST_K_VIEW,        /* no code: the runtime applies graph statement `stmt`
                         (a view op) to tensors */
} st_kernel_kind;

typedef enum {
    ST_KN_LOAD,   /* value of buf at the current point (optionally indexed) */
    ST_KN_PARAM,  /* scalar launch parameter number `buf` */
    ST_KN_CONST,  /* immediate: f (float dtypes) or i (int/bool dtypes) */
    ST_KN_UNARY,  /* op(a): op is an elementwise unary st_op_id */
    ST_KN_BINARY, /* op(a, b): op is an elementwise binary st_op_id */
    ST_KN_WHERE,  /* a ? b : c */
    ST_KN_CAST,   /* a converted to dtype */
    ST_KN_INDEX,  /* int64 coordinate along iteration dim `i` (-1: the linear
                     index of the point in the row-major iteration space) */
    ST_KN_RAND,   /* i == 0: uniform [0,1), i == 1: standard normal; from the
                     counter-based generator at (seed, offset + linear index) */
    ST_KN_REDUCED,/* the result of reduction i of a REDUCE kernel, or of the
                     matmul product (i = 0) of a MATMUL epilogue; usable in
                     phases after that reduction (per outer point) */
} st_knode_kind;

typedef struct {
    st_knode_kind kind;
    st_dtype dtype;   /* result dtype of the node */
    int a, b, c;      /* operand node indices (earlier nodes), -1 unused */
    int op;           /* st_op_id for UNARY/BINARY */
    int buf;          /* LOAD: buffer index; PARAM: parameter index */
    int idx_dim;      /* LOAD: tensor dim of buf indexed by node a (gather);
                         -1 for a plain strided load */
    int phase;        /* REDUCE: the pass the node belongs to (0 .. nreduce);
                         MATMUL: 1 for epilogue nodes; else 0 */
    double f;
    int64_t i;
} st_knode;

typedef struct {
    int value;        /* graph value bound to this buffer */
    st_dtype dtype;
    bool is_out;
    /* dimmap[d]: the tensor dim read/written along iteration dim d, or -1
     * (stride 0). A tensor dim of size 1 mapped against a larger iteration
     * size broadcasts (the runtime gives it stride 0). */
    int dimmap[ST_MAX_DIMS];
    bool contiguous;  /* layout the kernel was specialized for */
    /* unravel > 0: an unravel load (a reshape of a strided view read
     * without a copy). The buffer is bound to `value`, the reshape's
     * source (a strided tensor of rank unravel); the kernel reads the
     * reshape's result, graph value view_value, which has no tensor of
     * its own. dimmap maps iteration dims to dims of view_value, and the
     * launch strides[] are view_value's contiguous strides (so the offset
     * of a point is its linear index in view_value, broadcast dims 0);
     * the load address is that linear index unraveled with div/mod over
     * ushape[] (innermost dim last) and dotted with ustrides[], the
     * source's sizes and strides (st_kernel_unravel_args). Loads only:
     * never an output, never indexed (gather/scatter), never operand A or
     * B of a matmul. 0: a plain strided buffer (view_value unused). */
    int unravel;
    int view_value;
    /* slab (an output only): the buffer is the slice of `value` that
     * SLICE_SCATTER statement slab_stmt of the program graph replaces:
     * the runtime moves the data to the slice's start and multiplies the
     * stride of its dim by the step (st_kernel_slab_args); dimmap maps
     * iteration dims to dims of `value` as for any buffer; a size taken
     * from it is the slice's (the shape of slab_stmt's source, in[1]: a
     * kernel that stores only slabs). Launch arguments only: the code is that of any
     * strided store (not in st_kernel_hash), so the n stores of a cat
     * are one compiled kernel. */
    bool slab;
    int slab_stmt;
} st_kbuf;

enum {
    ST_KPARAM_ATTR_F0 = -1, ST_KPARAM_ATTR_F1 = -2,
    ST_KPARAM_ATTR_I0 = -3, ST_KPARAM_ATTR_I1 = -4,
};

typedef enum {
    ST_RED_SUM, ST_RED_MEAN, ST_RED_MAX, ST_RED_MIN, ST_RED_ARGMAX,
    ST_RED_ARGMIN, ST_RED_PROD,
} st_reduce_op;

typedef struct {
    st_kernel_kind kind;
    char name[48];           /* e.g. "k3_add" (for dumps and profiles) */
    int rank;                /* iteration space rank */
    int nred;                /* REDUCE: trailing dims reduced (0 only for
                                a 0-d input: one point, reduced to itself) */
    /* iteration size d = shape of tensor bound to bufs[size_buf[d]] at dim
     * size_dim[d] */
    int size_buf[ST_MAX_DIMS], size_dim[ST_MAX_DIMS];
    st_kbuf bufs[ST_K_MAX_BUFS];
    int nbufs;
    st_knode *nodes;         /* owned; topologically ordered */
    int nnodes, cap_nodes;
    /* REDUCE: for every point of the outer space (dims 0..rank-nred), the
     * reductions run in order, each a pass over the row (the trailing nred
     * dims): reduction r reduces node reduce[r].src, a node of phase r.
     * A node of phase p < nreduce is evaluated per point of the row in pass
     * p and may use REDUCED nodes of reductions < p (constant over the
     * row). Nodes of phase nreduce are the epilogue: evaluated per point of
     * the row once more when final_per_point (softmax's output), else once
     * per outer point, where LOADs use the outer dims only (a sum's
     * result). Stores name epilogue nodes only. A node used by two passes
     * is duplicated, one copy per phase (loads are re-read: a row is in
     * cache). Softmax is one kernel: max (phase 0), sum of exp(x - max)
     * (phase 1), exp(x - max) / sum per point (phase 2); a backend may
     * compute a duplicated node once (llvm stores exp(x - max) into the
     * output in phase 1 and reads it back in phase 2) and may sum floats
     * in another order (within float tolerance of the interpreter).
     * MATMUL: phase-1 nodes form an epilogue evaluated per output point
     * [batch..., m, n] with REDUCED = the product (accumulated in float
     * for float16/bfloat16/float32, double for float64); LOADs there map
     * the K dim to -1. */
    int nreduce;
    struct { st_reduce_op op; int src; } reduce[ST_K_MAX_REDUCE];
    bool final_per_point;
    struct {
        int buf, node;
        /* indexed store (scatter): tensor dim idx_dim of buf is addressed
         * by node idx_node (bounds-checked) instead of the iteration */
        bool indexed;
        int idx_dim, idx_node;
        bool accumulate;     /* += instead of = (scatter_add) */
    } stores[ST_K_MAX_STORES];
    int nstores;             /* a store converts the node to the buf dtype */
    int nparams;
    /* A param of a float dtype arrives as st_kparam.f, otherwise as .i. */
    st_dtype param_dtype[ST_K_MAX_PARAMS];
    /* Where param p comes from: >= 0, a graph value of kind ST_VAL_CONST
     * (its fconst/iconst unless the caller binds another value per call,
     * as eager does for Python scalars); or ST_KPARAM_ATTR_*, a field of
     * the attrs of statement param_stmt[p] (FULL value, ARANGE start/step,
     * RAND, RANDN and RANDINT bounds: a creation statement that joined a
     * group after its first member reads its own attrs). */
    int param_value[ST_K_MAX_PARAMS];
    int param_stmt[ST_K_MAX_PARAMS];
    int src_stmt;            /* statement of program graph lowered from */
    bool uses_rng;
    /* rng_replay: the draw replays the forward run's (ST_ATTR_RNG_REPLAY of
     * statement rng_stmt): launched at the replay base plus its attrs.i[2],
     * reserving nothing (runtime/exec.c) */
    bool rng_replay;
    int rng_stmt;
    int stmt;                /* VIEW: statement index in the program graph */
} st_kernel;

/* Launch arguments, computed by the runtime from the bound tensors. */
typedef struct {
    char *data;                     /* first element (storage offset applied) */
    int64_t strides[ST_MAX_DIMS];   /* per iteration dim, in elements */
    int64_t idx_size, idx_stride;   /* indexed LOAD: size/stride of idx_dim */
    /* unravel load: the source's sizes and strides (st_kbuf.unravel) */
    int64_t ushape[ST_MAX_DIMS], ustrides[ST_MAX_DIMS];
} st_karg_buf;

typedef union { double f; int64_t i; } st_kparam;

typedef struct {
    int64_t shape[ST_MAX_DIMS];     /* iteration sizes */
    st_karg_buf bufs[ST_K_MAX_BUFS];
    st_kparam params[ST_K_MAX_PARAMS];
    uint64_t rng_seed, rng_offset;
} st_kargs;

/* A lowered graph: the primitive (decomposed) graph it runs and its kernels
 * in execution order. Values of `graph` are what buffers bind to. */
typedef struct st_kprog {
    st_graph *graph;          /* owned */
    st_kernel *kernels;       /* owned */
    int nkernels, cap_kernels;
    struct st_plan_cache *plans;   /* st_fuse_plan_cached's (owned) */
} st_kprog;

/* Fusion knobs (DESIGN.md "Knobs"): defaults from the environment
 * (SYMTRACE_FUSION, SYMTRACE_FUSE_REDUCTIONS, SYMTRACE_FUSE_MATMUL_EPILOGUE,
 * SYMTRACE_MAX_FUSED_OPS), overridable at run time (symtrace.config). */
typedef struct {
    int fusion;               /* 0: one kernel per primitive statement */
    int fuse_reductions;      /* elementwise prologues/epilogues into row
                                 reductions (softmax, layer_norm, ...) */
    int fuse_matmul_epilogue; /* bias, activation, residual into matmul */
    int max_fused_ops;        /* statements per kernel at most; 0: no limit */
} st_fuse_options;

/* The process-wide options: read from the environment on first use; the
 * returned struct may be changed (symtrace.config does). */
st_fuse_options *st_fuse_config(void);

/* Decomposes composites into primitives (a new graph with the same inputs
 * and outputs, owned by the caller). */
st_graph *st_fuse_decompose(const st_graph *g);
/* Decomposes and lowers g into a program (g is not modified). */
st_kprog *st_fuse_lower(const st_graph *g, const st_fuse_options *opt);
void st_kprog_free(st_kprog *p);
/* Process-wide counts of fused lowering (fusion/fuse.c): programs lowered,
 * groups lowered as one fused kernel, groups that fell back to one kernel
 * per member (a kernel that does not fit the kernel IR), and the last
 * fallback's group kernel name and reason. */
typedef struct {
    int64_t programs, fused, fallbacks;
    char last_fallback[256];
} st_fuse_stats;
void st_fuse_stats_get(st_fuse_stats *s, bool reset);
/* Whether s lowers to a copy of its first operand (the kernel in its own
 * slot) and a second kernel that writes part of that copy: scatter_add,
 * scatter, slice_scatter (fusion/lower.c). */
bool st_fuse_is_scatter(const st_stmt *s);

/* ---- the memory plan of a scheduled program (fusion/plan.c) ----
 * A liveness pass over the kernels in order: graph inputs persist, each
 * value a kernel stores lives from that kernel to its last use (graph
 * outputs, and values a graph output views, to the end), a value made by a
 * VIEW step shares its source's storage. Intermediates are packed into one
 * arena (first fit by decreasing size among buffers whose lifetimes
 * overlap). Its figures are the memory estimate. */
typedef struct {
    int64_t bytes;   /* storage the value needs (0: a view, a const) */
    int64_t offset;  /* byte offset in the arena, -1 when not in it */
    int def, last;   /* first and last kernel touching it; -1 for inputs */
    bool arena;      /* an intermediate packed into the arena */
    bool input, output;
    bool copy;       /* a reshape of a non-contiguous view: the runtime
                        copies it into a buffer of its own */
} st_plan_value;

typedef struct {
    int nvalues, nkernels;
    st_plan_value *values;
    int64_t *live;          /* per kernel: bytes live while it runs (ideal:
                               each buffer from its birth to its last use) */
    int64_t *resident;      /* per kernel: bytes this runtime holds while it
                               runs: inputs + the arena (held for the whole
                               run) + the outputs made so far */
    int64_t input_bytes;    /* graph inputs: persist across the run */
    int64_t output_bytes;   /* results handed back (allocated on their own) */
    int64_t arena_bytes;    /* the packed intermediates */
    int64_t peak_live;      /* max of live[] */
    int64_t peak_resident;  /* max of resident[]: the estimated peak */
    bool *inplace;          /* per kernel: a scatter_add's copy of a base no
                               later kernel reads, skipped (the result takes
                               the base's storage; plan.c scatter_in_place) */
    bool *inview;           /* per kernel: a slice_scatter's copy of a base that
                               is the window of a buffer which the enclosing
                               slice_scatter (writing the result back into the
                               same window) updates in place, skipped: the
                               result is that window (plan.c nested_in_place) */
    int *into;              /* per value: 1 + the slice_scatter statement whose
                               source it is, when it is computed straight into
                               that statement's slice of its base (an inview
                               window: plan.c computed_in_window); else 0 */
} st_mem_plan;

/* Plans p for the sizes its graph holds now (after re-inference).
 * input_strides[k] are the strides of graph input k as it will be bound
 * (a reshape of a non-contiguous input copies); NULL: all contiguous. */
st_mem_plan *st_fuse_plan(const st_kprog *p, const int64_t *const *input_strides);
void st_mem_plan_free(st_mem_plan *m);
/* st_fuse_plan for the graph's current sizes and these input strides, made
 * once per distinct layout and kept by p (fusion/plancache.c); NULL on
 * error. Every plan acquired is handed back with st_fuse_plan_release
 * (a kept plan is not replaced while it is acquired). */
const st_mem_plan *st_fuse_plan_acquire(st_kprog *p, const int64_t *const *input_strides);
void st_fuse_plan_release(st_kprog *p, const st_mem_plan *m);
void st_fuse_plan_cache_clear(st_kprog *p);
void st_fuse_plan_cache_stats(int64_t *hits, int64_t *made);
#define ST_PLAN_ALIGN 64

/* Kernel construction helpers (used by lowering and by tests). */
void st_kernel_init(st_kernel *k, st_kernel_kind kind, int rank);
void st_kernel_clear(st_kernel *k);        /* frees nodes */
int st_kernel_node(st_kernel *k, const st_knode *n); /* appends; returns index */
int st_kernel_add_buf(st_kernel *k, int value, st_dtype dt, bool is_out,
                      const int *dimmap);
/* Launch arguments of unravel buffer kb (kb->unravel > 0) of a kernel of
 * rank `rank`: strides[] from view (the meta of kb->view_value, as it is
 * for this call), ushape/ustrides from the source tensor (src_ndim ==
 * kb->unravel dims). */
void st_kernel_unravel_args(const st_kbuf *kb, int rank, const st_meta *view,
                            const int64_t *src_shape, const int64_t *src_strides,
                            st_karg_buf *ab);
/* Launch arguments of slab buffer kb (kb->slab) of a kernel of rank
 * `rank`, bound to a tensor of ndim dims, shape and strides, already in
 * ab (data at the tensor's first element, strides per iteration dim):
 * the data moves to the slice's start, the strides along its dim scale by
 * the step. Not OK (error set) when the statement is no slice of it. */
st_status st_kernel_slab_args(const st_kbuf *kb, int rank, const st_graph *g,
                              int ndim, const int64_t *shape,
                              const int64_t *strides, st_karg_buf *ab);
/* Offset of linear index lin of an unravel buffer (ndim source dims). */
static inline int64_t st_kernel_unravel_off(int64_t lin, int ndim,
                                            const int64_t *ushape,
                                            const int64_t *ustrides)
{
    int64_t off = 0;
    for (int j = ndim - 1; j >= 0; j--) {
        int64_t s = ushape[j] > 0 ? ushape[j] : 1;
        off += (lin % s) * ustrides[j];
        lin /= s;
    }
    return off;
}
/* Reshapes of non-contiguous views become unravel loads (unravel.c): in
 * every kernel but views, a load of the result of such a reshape reads
 * its source directly; a view step left with no reader is dropped. Runs
 * on every lowered program (fused or not). */
st_status st_fuse_unravel_reshapes(st_kprog *p);
/* Checks a kernel's structure (counts, dtypes, node operands defined
 * before use, reductions and phases consistent), so a malformed kernel
 * is an error at compile time, never a crash; `who` prefixes the message
 * ("interp", "llvm"). Every backend's compile calls it. */
st_status st_kernel_verify(const st_kernel *k, int idx, const char *who);
/* Readable dump of a kernel (malloc'd; caller frees). */
char *st_kernel_print(const st_kernel *k);
/* xxHash of the kernel's structure (what a compiled kernel depends on). */
uint64_t st_kernel_hash(const st_kernel *k);
/* Per node of a REDUCE kernel: red[i], whether it depends on a REDUCED
 * node; outer[i], whether its value is constant along the row (params,
 * constants, reduced results, loads broadcast along every row dim,
 * coordinates of outer dims). Both arrays hold k->nnodes entries. */
void st_kernel_row_frames(const st_kernel *k, char *red, char *outer);
/* A REDUCE kernel with a per-point epilogue: marks in outer[s] the plain
 * stores made once per outer point (a buffer that spans no row dim, a
 * value constant along the row: a row sum stored beside a per-point
 * output). With an empty row (R == 0) the per-point epilogue visits no
 * point, so a backend makes these stores per outer point instead: the
 * sum of an empty row is 0, not what the buffer held. Returns how many
 * (0 for any other kernel). */
int st_kernel_outer_stores(const st_kernel *k, bool outer[ST_K_MAX_STORES]);

#endif
