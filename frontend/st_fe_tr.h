/* st_fe_tr.h - the bytecode frontend's shared internal contract (frontend/
 * only; see DESIGN.md "Frontend"): the frame view, sources (where a value
 * was read), guards (checks on sources), translator variables, return
 * templates and compiled entries.
 *
 * How translation works (the "concrete" symbolic executor). The translator
 * runs the frame's bytecode itself, instruction by instruction, on the
 * frame's real arguments. Every stack slot is a Variable: the real Python
 * value plus where it came from (its Source, or none when it was computed).
 * Tensor ops (symtrace API functions, Tensor methods and operators) are
 * really executed, eagerly, while the runtime's trace capture
 * (runtime/trace.c) records them into a StatementIR graph; a real tensor
 * maps to its IR value through the tracer. Python-level computation on
 * guarded values is really executed too (its result is a constant of the
 * guards). User functions and Module.__call__/forward are inlined (a new
 * translator frame) so that every read they make gets a Source and a guard.
 * What may not be executed for real (calls of unknown C functions, jumps
 * on tensor values, data reads such as .item()) stops the translation with
 * a reason: a graph break. Stores into objects that existed before the
 * frame (attributes, globals, outside lists and dicts) are not performed
 * either: they are recorded (tr_effects.c), later reads in the frame see
 * them, and the entry replays them after its graph on every call (see
 * "side effects" below); the translation applies them once at its end.
 * The value returned by the frame during translation is the first call's
 * result.
 *
 * Owners: sources and guards - guards.c; the translator - translator.c and
 * tr_*.c (side effects: tr_effects.c); entries, templates, the hook and the per-code cache -
 * eval_frame.c and entry.c; CPython internals - pyinternals.h. */
#ifndef ST_FE_TR_H
#define ST_FE_TR_H

#include "st_fe.h"

#include <stdbool.h>
#include <stdint.h>

/* ---------------- the frame view ----------------
 * What a frame holds before its first instruction runs, independent of
 * CPython's frame layout (eval_frame.c fills it from _PyInterpreterFrame;
 * tests fill it from a function and its arguments). */
typedef struct {
    PyCodeObject *code;          /* borrowed */
    PyObject *func;              /* the function object (borrowed, may be NULL) */
    PyObject *const *locals;     /* co_nlocalsplus slots: arguments filled, rest NULL */
    int nlocals;
    PyObject *globals, *builtins;/* borrowed dicts */
    PyObject *closure;           /* the function's closure tuple (borrowed) or NULL */
} st_fe_frame;

/* ---------------- sources ----------------
 * Interned per source table: structurally equal sources are one object, so
 * guards and input lookups dedupe by pointer. A source table belongs to one
 * translation and then to the entry made from it. */
typedef enum {
    ST_SRC_LOCAL,     /* frame->locals[index] (an argument); name = the local's name */
    ST_SRC_GLOBAL,    /* frame->globals[name] */
    ST_SRC_BUILTIN,   /* frame->builtins[name] */
    ST_SRC_CLOSURE,   /* cell contents of frame->closure[index]; name = the free var */
    ST_SRC_ATTR,      /* base.name, read as the translator read it: instance
                         __dict__ first, then the type (no user __getattr__) */
    ST_SRC_MODPART,   /* a symtrace Module's registered child:
                         base.__dict__[part][name], part "_parameters",
                         "_buffers" or "_modules" (key holds the part str) */
    ST_SRC_ITEM,      /* base[key]: key a constant (int index, str, or other
                         hashable constant) of a tuple, list or dict */
    ST_SRC_VIEWDICT,  /* the dict a dict view (keys(), values(), items())
                         reads: its items then have ITEM sources */
    ST_SRC__COUNT
} st_fe_src_kind;

typedef struct st_fe_src {
    st_fe_src_kind kind;
    int index;               /* LOCAL, CLOSURE */
    PyObject *name;          /* owned str: LOCAL/CLOSURE (for messages), GLOBAL, BUILTIN, ATTR, MODPART */
    PyObject *key;           /* owned: ITEM's key; MODPART's part name */
    struct st_fe_src *base;  /* ATTR, MODPART, ITEM */
    int id;                  /* dense index in its table (memo slot) */
    /* Static: a chain of MODPART/ATTR reads below an identity-guarded
     * symtrace Module. Its value cannot change unless a Module attribute is
     * set or deleted or a tensor's metadata changes, which bump the epochs
     * (st_fe_module_epoch, st_fe_meta_epoch); guards on static sources are
     * checked only when an epoch moved. */
    bool is_static;
} st_fe_src;

typedef struct {
    st_fe_src **v;           /* owned sources, v[k]->id == k */
    int n, cap;
} st_fe_srctab;

void st_fe_srctab_init(st_fe_srctab *t);
void st_fe_srctab_clear(st_fe_srctab *t);     /* frees every source */
/* Interning constructors: return the table's source (NULL + MemoryError). */
st_fe_src *st_fe_src_local(st_fe_srctab *t, int index, PyObject *name);
st_fe_src *st_fe_src_global(st_fe_srctab *t, PyObject *name);
st_fe_src *st_fe_src_builtin(st_fe_srctab *t, PyObject *name);
st_fe_src *st_fe_src_closure(st_fe_srctab *t, int index, PyObject *name);
st_fe_src *st_fe_src_attr(st_fe_srctab *t, st_fe_src *base, PyObject *name);
st_fe_src *st_fe_src_modpart(st_fe_srctab *t, st_fe_src *base,
                             PyObject *part, PyObject *name);
st_fe_src *st_fe_src_item(st_fe_srctab *t, st_fe_src *base, PyObject *key);
st_fe_src *st_fe_src_viewdict(st_fe_srctab *t, st_fe_src *base);
int st_fe_is_dict_view(PyObject *v);   /* dict_keys/values/items and OrderedDict's */
/* "L['x']", "G['F'].linear", "L['self']._modules['layers']._modules['0']",
 * TorchDynamo's spelling; returns a new str. */
PyObject *st_fe_src_repr(const st_fe_src *s);
/* Evaluates s on a frame: new reference, or NULL. memo[s->id] caches
 * (borrowed from the memo's own reference; the caller decrefs memo slots
 * with st_fe_memo_clear). A missing name/attr/key returns NULL with no
 * exception set (a guard then fails); other errors set one. */
PyObject *st_fe_src_eval(const st_fe_src *s, const st_fe_frame *f, PyObject **memo);
void st_fe_memo_clear(PyObject **memo, int n);

/* ---------------- guards ---------------- */
typedef enum {
    ST_G_TYPE,        /* type(v) is obj */
    ST_G_ID,          /* v is obj (obj held strongly, so its id stays unique) */
    ST_G_EQ,          /* type(v) is type(obj) and v == obj (int, float, str,
                         bool, None, bytes, dtype, device, tuples of those) */
    ST_G_TENSOR,      /* a Tensor with this dtype, device, shape, strides,
                         requires_grad (and is_leaf-ness not needed) */
    ST_G_LEN,         /* type(v) is obj and len(v) == len (tuple, list, dict) */
    ST_G_DICT_KEYS,   /* type(v) is obj (dict/OrderedDict) and tuple(v.keys()) == keys;
                         an OrderedDict's dict order too (dict.keys(v),
                         dict.values(v) read it): == keys2, or keys if NULL */
    ST_G_CONTENTS,    /* type(v) is obj (set, frozenset) and tuple(v) matches
                         keys item by item: constants by value, other objects
                         by identity (a weak reference where they take one):
                         the translator reads a set's items as constants,
                         with no source of their own */
    ST_G_ABSENT,      /* evaluating the source finds nothing (an attribute
                         that hasattr() found missing, a global not yet set) */
    ST_G_ALIAS,       /* v is the value of src2 (one object read through two
                         sources: f(x, x), tied weights) */
    ST_G_SYM,         /* dynamic shapes: (sx_a OP sx_b) == want, expressions
                         over tensor sizes (src: a tensor they read) */
    ST_G_PRED,        /* obj(v) is true: state no source reaches (the warnings
                         filters that would turn a replayed warning into an error) */
} st_fe_guard_kind;

typedef struct {
    st_fe_guard_kind kind;
    st_fe_src *src;
    PyObject *obj;           /* owned: type, identity or constant */
    PyObject *keys;          /* owned tuple: DICT_KEYS */
    PyObject *keys2;         /* owned tuple or NULL: DICT_KEYS of an OrderedDict
                                whose dict order is not its own */
    Py_ssize_t len;          /* LEN */
    /* TENSOR */
    int dtype, ndim;
    int64_t shape[ST_MAX_DIMS], strides[ST_MAX_DIMS];
    int device_type, device_index;
    bool requires_grad;
    st_fe_src *src2;         /* ALIAS */
    uint32_t dyn;            /* TENSOR: dims that are symbols (checked >= 2,
                                strides: a layout of the same kind) */
    /* SYM */
    int sx_a, sx_b, sx_op;   /* expressions in gs->sym; op: ST_SXC_* */
    bool want;
} st_fe_guard;

typedef struct {
    st_fe_guard *v;
    int n, cap;
    bool grad_mode;          /* global: is_grad_enabled() at translation */
    uint32_t autocast;       /* global: st_rt_autocast_state() at translation */
    /* the epochs at translation (or at the last full check that passed) */
    uint64_t module_epoch, meta_epoch;
    /* The dicts static sources were read from (Modules' __dict__ and part
     * dicts), each with its version stamp at the last full check: any
     * write into them, even one that bypasses Module.__setattr__
     * (m.__dict__[k] = v, m._parameters[k] = p), changes a stamp and makes
     * the next check a full one. Owned references. */
    PyObject **wd;
    uint64_t *wver;
    int nwd;
    bool wd_valid;           /* recorded since the last full check */
    struct st_fe_symtab *sym;   /* dynamic shapes: symbols and expressions (owned) */
} st_fe_guardset;

/* Bumped by symtrace.nn.Module.__setattr__/__delattr__ (through
 * _C._fe_bump_module_epoch) and by anything that changes a tensor's
 * metadata in place (requires_grad_, resize, set_). */
extern uint64_t st_fe_module_epoch, st_fe_meta_epoch;

void st_fe_guardset_init(st_fe_guardset *gs);
void st_fe_guardset_clear(st_fe_guardset *gs);
/* The default guard for a value read from s, added once per source:
 * Tensor -> TENSOR; int/float/bool/str/None/bytes/dtype/device/slice and
 * tuples of those -> EQ; symtrace Module, function, builtin, class, Python
 * module, code -> ID; tuple/list/dict -> LEN or DICT_KEYS (their items are
 * guarded when read, through ITEM sources); anything else -> TYPE.
 * 0 or -1 with an exception. */
int st_fe_guard_value(st_fe_guardset *gs, st_fe_src *s, PyObject *value);
int st_fe_guard_pred(st_fe_guardset *gs, st_fe_src *s, PyObject *pred);
int st_fe_guard_add(st_fe_guardset *gs, st_fe_guard_kind kind, st_fe_src *s,
                    PyObject *obj);                  /* TYPE, ID, EQ, ABSENT */
int st_fe_guard_alias(st_fe_guardset *gs, st_fe_src *s, st_fe_src *s2);
/* 1 pass, 0 fail (*failed, if not NULL, gets the failing guard), -1 error. */
int st_fe_guards_check(st_fe_guardset *gs, const st_fe_frame *f,
                       PyObject **memo, const st_fe_guard **failed);
/* One line per guard, e.g. "TENSOR_MATCH: L['x'] float32 [4, 8] cpu
 * requires_grad=False", as a list of str. */
PyObject *st_fe_guards_describe(const st_fe_guardset *gs);

/* ---------------- dynamic shapes (tr_dynamic.c) ----------------
 * With symtrace.compile(dynamic=True) the sizes of tensors read from the
 * frame's arguments are symbols: sym k is size dim[k] of the tensor at
 * src[k]. Expressions over them (sizes read in Python, arithmetic on them,
 * reshape targets) live in a table of nodes. */
enum { ST_SX_CONST, ST_SX_SYM, ST_SX_ADD, ST_SX_SUB, ST_SX_MUL, ST_SX_FLOORDIV,
       ST_SX_MOD, ST_SX_NEG };
enum { ST_SXC_LT, ST_SXC_LE, ST_SXC_EQ, ST_SXC_NE, ST_SXC_GT, ST_SXC_GE };
typedef struct {
    int op, a, b;
    int64_t c;               /* CONST: the value; SYM: the symbol */
} st_fe_sx;
typedef struct st_fe_symtab {
    st_fe_sx *x;
    int nx, capx;
    st_fe_src **src;         /* borrowed from the entry's source table */
    int *dim;                /* the size dim; -1: the int value at src (an
                                attribute or global read as a number) */
    int64_t *val;            /* at translation */
    int nsym, capsym;
} st_fe_symtab;
void st_fe_symtab_free(st_fe_symtab *t);
/* Python semantics (floor division); -1 when it divides by zero. */
int st_fe_sx_eval(const st_fe_symtab *t, int e, const int64_t *sym, int64_t *out);
/* The symbols' values on a frame (sources through memo): 1, 0 (a source
 * is not a tensor of enough dims), -1 error. */
int st_fe_sym_values(const st_fe_symtab *t, const st_fe_frame *f, PyObject **memo,
                     int64_t *vals);
int st_fe_sym_guard_check(const st_fe_guardset *gs, const st_fe_guard *g,
                          const st_fe_frame *f, PyObject **memo);
PyObject *st_fe_sym_guard_describe(const st_fe_guardset *gs, const st_fe_guard *g);
/* The symbolic int type (symtrace/_symint.py's SymInt), set at import. */
extern PyObject *st_fe_symint_cls;
extern PyObject *st_fe_lazy_cls[2];      /* LazyInt, LazyFloat */
extern uint64_t st_fe_dyn_instances;     /* instances compiled for new sizes */

/* ---------------- return templates ----------------
 * How an entry builds its return value on a hit. */
typedef enum {
    ST_T_CONST,       /* obj (immutable constant) */
    ST_T_OUTPUT,      /* graph output index */
    ST_T_SOURCE,      /* the value of src (an input returned as is) */
    ST_T_TUPLE, ST_T_LIST, ST_T_DICT,   /* fresh container of items (DICT: keys) */
    ST_T_METHOD,      /* a bound method of items[0]: obj is the function
                         (a Python method) or the name (a builtin's) */
    ST_T_SYM,         /* an int: expression index over sym's symbols (sizes
                         and int attributes read on the frame) */
    ST_T_OBJECT,      /* a user object made in the frame (tr_objects.c): obj =
                         (type, item keys, attribute names), items = the item
                         values then the attribute values; built with the
                         type's C tp_new, C item stores and __dict__ stores */
    ST_T_REF,         /* the object ref builds (a list, dict, tuple or user object
                         made in the frame, met again): the same object */
    ST_T_CELL,        /* a cell made in the frame: a new cell holding items[0]
                         (n = 0: empty) */
    ST_T_FREECELL,    /* cell index of the frame's closure (itself) */
    ST_T_FUNCTION,    /* a function made in the frame: obj = (code, globals,
                         qualname, annotations or None), items = defaults,
                         kwdefaults, closure (None constants when absent); a
                         new function object on every build */
} st_fe_tmpl_kind;

typedef struct st_fe_tmpl {
    st_fe_tmpl_kind kind;
    PyObject *obj;           /* CONST value; DICT: tuple of keys; TUPLE: the
                                tuple type to rebuild (namedtuples) */
    int index;               /* OUTPUT */
    st_fe_src *src;          /* SOURCE */
    struct st_fe_tmpl **items;
    int n;
    const struct st_fe_symtab *sym;   /* SYM: the entry's (borrowed) */
    /* Sharing: an object met in several places of an entry's templates
     * (returned and stored, in two results) is built once. The first
     * node has share = k + 1 (slot k of the build's shared array); the
     * others are REF nodes naming it (borrowed: the same entry owns it). */
    int share;
    const struct st_fe_tmpl *ref;
} st_fe_tmpl;

void st_fe_tmpl_free(st_fe_tmpl *t);
/* Builds the value; outs are the graph outputs (borrowed); shared: the
 * entry's nshare slots, NULL-initialised, holding the shared objects
 * built so far (owned: the caller drops them after the last build). */
PyObject *st_fe_tmpl_build(const st_fe_tmpl *t, PyObject *const *outs,
                           const st_fe_frame *f, PyObject **memo, PyObject **shared);

/* ---------------- side effects ----------------
 * Mutations of objects that existed before the frame, recorded during
 * translation (which does not perform them) and replayed by the entry
 * after its graph ran, in program order. Targets are evaluated on the
 * frame before any effect is applied (the entry-time objects). */
typedef enum {
    ST_FX_SETATTR,    /* setattr(target, name, value) */
    ST_FX_GLOBAL,     /* frame globals[name] = value */
    ST_FX_LIST,       /* target[:] = value: a list's contents at the frame's end */
    ST_FX_DICT,       /* target.clear(); target.update(value): likewise a dict's */
    ST_FX_CALL,       /* value is (fn, args, kwargs or None): fn(*args, **kwargs), its
                         result dropped (opt.step(), sched.step(), warnings.warn) */
} st_fe_fx_kind;

typedef struct {
    st_fe_fx_kind kind;
    st_fe_src *target;       /* NULL for GLOBAL */
    PyObject *name;          /* owned str: SETATTR, GLOBAL */
    st_fe_tmpl *val;
} st_fe_effect;

/* Performs one ST_FX_CALL record's value (fn, args, kwargs or None). 0 or -1. */
int st_fe_fx_call(PyObject *v);
/* Applies fx[0..n) (outs: graph outputs, borrowed). 0, or -1 with an
 * exception (effects before the failing one stay applied, as in eager). */
int st_fe_effects_replay(const st_fe_effect *fx, int n, PyObject *const *outs,
                         const st_fe_frame *f, PyObject **memo, PyObject **shared);

/* ---------------- options and breaks ---------------- */
typedef struct {
    const char *backend;     /* "llvm", "nvrtc", "interp", "eager", "cudaemu" */
    bool fullgraph;          /* a break raises (also SYMTRACE_STRICT=1) */
    bool dynamic;            /* dynamic shapes (tr_dynamic.c) */
    bool auto_dynamic;       /* dynamic=None (with dynamic false): a frame whose entries
                                missed only on tensor sizes is translated with dynamic
                                shapes (eval_frame.c) */
    bool no_partial;         /* a break makes the whole frame plain Python
                                (no partial graph; the translator's own tests) */
    int log_level;           /* SYMTRACE_LOG */
} st_fe_options;

/* Why a translation stopped, and where (the user's file and line). */
typedef struct {
    char reason[512];
    PyObject *filename;      /* owned str or NULL */
    int lineno;
} st_fe_break;

void st_fe_break_clear(st_fe_break *b);

/* ---------------- compiled entries ---------------- */
typedef struct st_fe_entry {
    struct st_fe_entry *next;
    st_fe_srctab srcs;
    st_fe_guardset guards;
    void *cfn;               /* st_rt_cfn*: the compiled graph (runtime) */
    int ninputs;
    st_fe_src **input_src;   /* per graph input: its source, or NULL when
                                input_const[k] is captured (a tensor made
                                during translation without a source) */
    PyObject **input_const;  /* owned or NULL */
    int noutputs;
    st_fe_tmpl *ret;
    PyObject *graph_str;     /* the StatementIR as SOT prints it (owned str) */
    int nops;                /* statements in the graph */
    uint64_t hits;
    st_fe_effect *effects;   /* replayed after the graph, in order (owned) */
    int neffects;
    int nshare;              /* shared template objects (st_fe_tmpl.share) */
    /* A partial graph (resume.c): ret builds the arguments of brk_fn, the
     * break function that performs the breaking instruction and continues
     * in a resume function; the frame's result is its result. */
    PyObject *brk_fn;        /* owned or NULL */
    /* Dynamic shapes: the graph as a template over symbols; cfn is its
     * instance at the translation's sizes, others are made on demand
     * (tr_dynamic.c). NULL for a static entry. */
    struct st_fe_dyn *dyn;
} st_fe_entry;

void st_fe_entry_free(st_fe_entry *e);

/* ---------------- the translator (translator.c) ----------------
 * Translates one frame with the real arguments of f. On success returns
 * the new entry (guards, graph compiled through the runtime with
 * opts->backend, input sources, return template) and sets *result to the
 * frame's return value computed while translating (new reference). On a
 * graph break returns NULL with brk filled and no exception set; state
 * touched by the translation is rolled back (inputs mutated in place are
 * restored, the random generator is reset), so the caller may run the
 * frame as plain Python. With opts->fullgraph a break is raised instead
 * (RuntimeError naming reason, file and line; returns NULL with the
 * exception set and brk filled). Other errors: NULL with an exception set
 * and brk->reason empty. */
st_fe_entry *st_fe_translate(const st_fe_frame *f, const st_fe_options *opts,
                             PyObject **result, st_fe_break *brk);


/* ---------------- partial graphs (resume.c) ----------------
 * Where a root frame that broke at code unit `at` can resume, and the
 * code that does it (see resume.c's top comment). */
enum { ST_BRK_SIMPLE, ST_BRK_JUMP, ST_BRK_END };
typedef struct {
    int start, end;          /* code units of the breaking group [start, end):
                                [KW_NAMES] [PRECALL] CALL, or one instruction */
    int kind;                /* ST_BRK_*: one exit, two (a conditional jump:
                                [0] falls through, [1] jumps), none (return, raise) */
    int npop;                /* stack items the group consumes */
    int nres[2];             /* items it leaves at exit k */
    int exit[2];             /* code unit where exit k continues */
    int line;                /* the breaking statement's line */
    int nlocals;             /* co_nlocals */
    uint8_t *live;           /* per local: live at an exit (owned) */
    int deref;               /* k + 1: the group is STORE_DEREF/DELETE_DEREF of item
                                k of the resume closure (st_fe_cell_slots), which the
                                break function sets or empties as cell_contents */
} st_fe_brkpt;
/* 0: bp filled; 1: cannot resume there (why says why; no exception);
 * -1: error (exception set). */
int st_fe_resume_plan(PyCodeObject *co, int at, st_fe_brkpt *bp, char *why, size_t nwhy);
/* The handler (code unit) of the exception table entry that covers code
 * unit `unit` of co, or -1 when none does. */
int st_fe_exc_handler(PyCodeObject *co, int unit);
/* The same entry whole: its handler, stack depth and lasti bit; false when
 * no entry covers unit (or the table is malformed). */
bool st_fe_exc_entry(PyCodeObject *co, int unit, int *target, int *depth, bool *lasti);
void st_fe_brkpt_clear(st_fe_brkpt *bp);
/* The break function for bp with nstack items on the stack at bp->start
 * (null[k]: slot k is a NULL marker) and lstate[i] per local: 0 dead
 * (passed on as None), 1 live (an argument), 2 live but unbound. Its
 * arguments: the consumed non-NULL stack items, the non-NULL items below
 * them, the live locals, in order. Cached per (code, start, shapes); new
 * reference or NULL with an exception. closure: the frame's function's
 * (with free variables only: the resume functions are made from it when
 * the cache is filled; at run time from the closure st_fe_call_break
 * passes, so that each call's cells are its own). */
PyObject *st_fe_break_function(PyCodeObject *co, PyObject *globals, PyObject *closure,
                               const st_fe_brkpt *bp, int nstack, const bool *null,
                               const uint8_t *lstate);
void st_fe_resume_reset(void);
/* The localsplus slots of co's cell variables, ascending, into slots
 * (NULL: only counted); returns their number. A frame with cells hands its
 * break function, as the last argument, the resume closure: these cells
 * (made anew by the entry on each call), then the frame's closure. */
int st_fe_cell_slots(PyCodeObject *co, int *slots);
/* co is a resume function's code (named __resume_at_<unit>_<serial>). */
bool st_fe_is_resume_code(PyCodeObject *co);
/* Calls break function brk with args (a tuple), plus, when co has free
 * variables, the calling frame's closure as its last argument. */
PyObject *st_fe_call_break(PyObject *brk, PyObject *args, PyCodeObject *co, PyObject *closure);

/* The compiled graph for the frame's sizes (a dynamic entry's instance,
 * made when new; borrowed), or NULL with an exception. */
void *st_fe_dyn_cfn(st_fe_entry *e, const st_fe_frame *f, PyObject **memo);
void st_fe_dyn_free(struct st_fe_dyn *d);

/* ---------------- running entries (entry.c) ---------------- */
/* Runs a hit: gathers the graph inputs by their sources (memo shared with
 * the guard check that just passed), runs e->cfn (absent when the frame
 * made no graph), replays e->effects, builds the return value from e->ret. New reference, or
 * NULL with an exception. */
PyObject *st_fe_entry_run(st_fe_entry *e, const st_fe_frame *f, PyObject **memo);

/* ---------------- PyLayer inside a translation (pylayer_trace.c) -------
 * Called by the translator for `Cls.apply(*args, **kwargs)` where Cls is a
 * symtrace.autograd.Function subclass, while the trace is active: runs
 * Cls.forward into the trace as a region whose gradient is Cls.backward,
 * itself traced into the region's custom VJP, and returns the forward's
 * result (real tensors, as apply would). NULL with an exception, or with
 * the trace marked failed (st_rt_trace_failed) when it cannot. */
PyObject *st_fe_trace_pylayer(PyObject *cls, PyObject *args, PyObject *kwargs);
/* Function.apply(*args) reached while a trace is active (from code the
 * translator runs for real): st_fe_trace_pylayer, or, for a Function with
 * Python side effects, a failed trace and an eager apply. */
PyObject *st_fe_trace_pylayer_apply(PyObject *cls, PyObject *args);
/* symtrace.autograd._effects.side_effect(cls): a str naming a Python side
 * effect of cls's forward/backward (which a capture would perform once),
 * None, or NULL with an exception */
PyObject *st_fe_pylayer_side_effect(PyObject *cls);
/* symtrace.autograd._effects.globals_read(cls): a list of (method name,
 * path, value), the plain constants and tensors cls's methods and the
 * helpers they call read from their modules' globals, and those helpers
 * (path: (("g", name) | ("a", name), ...) from cls.<method>); NULL with an
 * exception */
PyObject *st_fe_pylayer_globals_read(PyObject *cls);

#endif
