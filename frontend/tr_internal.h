/* tr_internal.h - private to the bytecode translator: variables,
 * translator frames, the translation state, and what each of its files
 * offers the others (translator.c: frames, inlining, entries; tr_vars.c:
 * variables, sources, fresh objects, breaks; tr_exec.c: the stack machine;
 * tr_classify.c: symtrace's objects, MRO lookup, argument binding;
 * tr_iter.c: iteration and subscripts; tr_attrs.c: attributes; tr_calls.c:
 * calls; tr_debug.c: test bindings). See st_fe_tr.h's top comment for how
 * translation works. */
#ifndef ST_TR_INTERNAL_H
#define ST_TR_INTERNAL_H

#include "st_fe_tr.h"
#include "pyversion.h"

#include <stdbool.h>

/* A stack or local slot: the real value (owned; NULL for the PUSH_NULL
 * marker / an unbound local) and where it was read from (NULL: computed).
 * it: an unrolled iterator (owned). */
typedef struct tr_iter tr_iter;
typedef struct {
    PyObject *v;
    st_fe_src *src;
    tr_iter *it;
    int aux;             /* TR_AUX_*: what a special value stands for */
} tr_var;

enum {
    TR_AUX_NONE,
    TR_AUX_KEYS, TR_AUX_VALUES, TR_AUX_ITEMS,   /* a sourced dict's view; src = the dict's */
    TR_AUX_SUPER,        /* v = (cls, self) tuple of a zero/two-arg super() */
    TR_AUX_ITER,         /* it != NULL: an unrolled iterator */
    TR_AUX_GRADCTX,      /* v = a grad-mode context manager entered by BEFORE_WITH */
};

/* An iterator var: the items it will produce, computed when it was made
 * (over a container, or map/zip/enumerate/...), and how many were consumed;
 * or a generator's suspended frame (gen), resumed for each item, so that
 * its code runs interleaved with its consumer's as in Python. Shared by
 * every var holding it (iter(it) is it). It has no real object, so it may
 * not escape the translation (stored, returned, live at a graph break,
 * passed to a real call: those break). */
struct tr_iter {
    int refs;
    int n, pos;
    tr_var *items;
    struct tr_frame *gen;   /* owned: a generator's frame, until it returns */
    PyObject *type;      /* owned: the type the real iterator has (generator,
                            list_iterator, enumerate, ...), for isinstance() and
                            type(); NULL when not known (those break) */
    tr_var ret;          /* a generator's return value (yield from's result) */
    /* An eager consumer (map/filter/zip/enumerate) took the rest of it at
     * once: in Python it would be consumed item by item, interleaved with
     * other uses, so any other use breaks. */
    bool taken;
    /* Owned list of (container, snapshot tuple, offset) or NULL: the
     * mutable containers (list, dict, set, dict view) whose items these
     * are, item i being the container's item i + offset when the iterator
     * was made. Python iterates them live, so a change to one while the
     * iterator is in use (lst.append in a for over lst) breaks. */
    PyObject *watch;
};

/* One frame being executed (the root, or an inlined call). */
typedef struct tr_frame {
    struct tr_frame *parent;
    PyCodeObject *code;      /* owned */
    PyObject *codebytes;     /* owned bytes (PyCode_GetCode) */
    const uint8_t *bc;       /* 2-byte code units */
    int ncode;               /* code units */
    PyObject *func;          /* owned or NULL */
    PyObject *globals, *builtins;   /* owned */
    bool same_globals;       /* globals is the root frame's: GLOBAL sources apply */
    st_fe_src *globals_src;  /* else: a source of the globals dict (fn.__globals__), or NULL */
    tr_var *locals;          /* co_nlocalsplus */
    int nlocals;
    tr_var *stack;
    int sp, cap;
    int pc, lasti;           /* code unit index of next / current instruction */
    PyObject *kwnames;       /* 3.11 KW_NAMES (borrowed from co_consts) */
    int depth;
    bool is_genexpr;         /* a generator's frame (function or expression),
                                run by tr_gen_resume up to each yield */
    bool running;            /* ... and running now */
    /* the live generator frames (tr_state.gens), suspended or running */
    struct tr_frame *gnext, **gprev;
    /* a generator's frame suspended at a yield inside a try or with block:
     * closing it runs Python code (finally, __exit__), so when the frame is
     * dropped unfinished *closed is set (tr_state.gen_closed) */
    bool yield_in_try;
    bool *closed;
    int exc_nest;            /* handlers entered (PUSH_EXC_INFO) and not left (tr_except.c) */
    PyObject *gen_exc;       /* a generator suspended in a handler: the exception it
                                handles (owned; tr_state.exc_cur while it runs) */
} tr_frame;

struct tr_dyn;
typedef struct {
    const st_fe_frame *f;
    const st_fe_options *opts;
    st_fe_srctab srcs;
    st_fe_guardset guards;
    PyObject *srcmap;        /* id(st_tensor* or object) -> (obj, src id) */
    PyObject *fresh;         /* id -> obj: objects made during translation */
    PyObject *cellmap;       /* id(cell) -> (cell, src id of its contents) */
    tr_frame *top;           /* innermost frame */
    long steps;
    bool broke;
    bool fatal;              /* KeyboardInterrupt/MemoryError: an error, not a break */
    st_fe_break *brk;
    PyObject *retval;        /* root frame's return value (owned) */
    int exposed, expose_depth;   /* items of sourced containers read at once */
    /* side effects on outside objects (tr_effects.c) */
    PyObject *fx_attr;       /* (id(obj), name) -> (obj, value): attribute overlay */
    PyObject *fx_glob;       /* (id(globals dict), name) -> value: globals and
                                Python module attributes overlay */
    PyObject *fx_shadow;     /* id(original) -> (original, shadow) */
    PyObject *fx_orig;       /* id(shadow) -> (original, src id) */
    struct tr_fx *fx;        /* the log, in program order */
    int nfx, capfx;
    bool fx_barrier;         /* a call that changes state the frame could read next
                                (opt.step()) is in the log: what follows may only
                                make more such calls and return (tr_fx_barrier_op) */
    int fx_barrier_at;       /* 1 + the root frame's instruction that made the first
                                one (0: none): where a partial graph can end instead */
    bool fx_barrier_call;    /* what broke that barrier is a call (model(x)): better
                                end the graph before the barrier's call, so that the
                                resumed frame inlines it, than run it as its own frame */
    bool fx_grad_barrier;    /* opt.zero_grad() is in the log: a later read of a
                                tensor's .grad breaks (tr_attrs.c) */
    int fx_weak_at;          /* 1 + the root instruction of that zero_grad() (0: none) */
    const char *tmpl_what;   /* templating context for break messages */
    /* partial graphs */
    int stop_at;             /* root frame: stop before this code unit (-1: run to the end) */
    bool stopped;            /* ... and did */
    int root_at;             /* root frame's instruction when the break happened (-1) */
    int brk_depth;           /* inlining depth of the frame that broke */
    bool no_resume;          /* the break leaves state a partial graph cannot replay */
    bool tmpl_live;          /* templating the live values at a break */
    PyObject *live_seen;     /* objects the templates made (translator.c, share_node) */
    int nshare;              /* shared template objects (st_fe_tmpl.share) */
    struct tr_dyn *dyn;      /* dynamic shapes (tr_dynamic.c), or NULL */
    tr_frame *gens;          /* generator frames alive (their iterators own them) */
    bool gen_closed;         /* one suspended in a try/with block was dropped: a break */
    PyObject *lazies;        /* id(LazyInt/LazyFloat) -> (obj, src id) (tr_dynamic.c) */
    int lib_inline;          /* symtrace library functions being inlined under dynamic
                                shapes (marked _symtrace_dyn_inline): a break inside
                                one is a dynamic-shapes failure (a static retry) */
    int *ckpt;               /* checkpoint(fn, ...) calls inlined: pairs [first, end)
                                of trace statements (tr_checkpoint.c); malloc'd */
    int nckpt, capckpt;
    /* exceptions inside the translated code (tr_except.c) */
    PyObject *exc_pending;   /* raised, being unwound to a handler (owned) */
    PyObject *exc_cur;       /* being handled (PUSH_EXC_INFO .. POP_EXCEPT; owned) */
    PyObject *exc_file;      /* where exc_pending was raised: a break there when */
    int exc_line, exc_root_at, exc_depth;   /* no handler catches it */
} tr_state;

/* One recorded side effect: obj is the target (SETATTR) or the original
 * container (LIST/DICT); val the value or the shadow (all owned). */
typedef struct tr_fx {
    st_fe_fx_kind kind;
    st_fe_src *target;
    PyObject *obj, *name, *val;
} tr_fx;

#define TR_MAX_STEPS 200000
#define TR_MAX_DEPTH 48
#define TR_MAX_EXPOSED 4096

/* ---- tr_checkpoint.c: a call to symtrace.utils.checkpoint.checkpoint (fn is
 * it): function inlined, its statements recorded as a checkpoint range. */
int tr_checkpoint(tr_state *s, PyObject *fn, tr_var *args, int nargs, PyObject *kwnames,
                  tr_var *out);
/* Adds the ranges to the final graph g; smap: the trace's statement ->
 * g's statement (-1: dropped), nsmap of them. 0, or -1 with the error set. */
int tr_checkpoint_apply(tr_state *s, st_graph *g, const int *smap, int nsmap);

/* ---- tr_vars.c, translator.c */
/* Records a break (first one wins) with the innermost frame's file and
 * line; clears any pending Python exception. Returns -1. */
int tr_break(tr_state *s, const char *fmt, ...);
/* Break with the pending exception's text as the reason. */
int tr_break_exc(tr_state *s, const char *what);
/* A value read from src: guards it once and remembers src for tensors and
 * identity objects. Steals v. */
int tr_make_sourced(tr_state *s, tr_var *out, PyObject *v, st_fe_src *src);
/* A computed value (steals v): recovers the source of a known object. */
void tr_make_value(tr_state *s, tr_var *out, PyObject *v);
void tr_var_clear(tr_var *v);
void tr_var_copy(tr_var *dst, const tr_var *src);
st_fe_src *tr_lookup_src(tr_state *s, PyObject *o);
/* v's source: its own, else (not made in the frame) the one its object was
 * read through; NULL: none. */
st_fe_src *tr_var_src(tr_state *s, const tr_var *v);
bool tr_is_fresh(tr_state *s, PyObject *o);
int tr_mark_fresh(tr_state *s, PyObject *o);
/* Runs code in a new frame (inlined call): binds fn's arguments, runs to
 * its return. out receives the return value; a generator function's is
 * an iterator var over its frame, run when items are asked for. */
int tr_inline(tr_state *s, PyObject *fn, tr_var *args, int nargs,
              PyObject *kwnames, tr_var *out);
/* Runs a generator's frame to its next yield: 1 (out: the value), 0 it
 * returned (it->ret set, the frame freed), -1 break. */
int tr_gen_resume(tr_state *s, tr_iter *it, tr_var *out);
void tr_frame_free(tr_frame *fr);
const char *tr_type_name(PyObject *o);

static inline PyObject *tr_local_name(PyCodeObject *co, int i)   /* borrowed */
{
    return PyTuple_GET_ITEM(co->co_localsplusnames, i);
}

/* ---- tr_vars.c (also: tr_break.., tr_make_*, tr_var_*, fresh, sources) */
PyObject *tr_id_key(const void *p);          /* PyLong of an address */
const void *tr_map_key(PyObject *o);         /* st_tensor* for tensors, else o */
bool tr_is_plain_const(PyObject *o);         /* never keyed by identity */

/* ---- tr_effects.c: side effects on objects from outside the frame */
/* STORE_ATTR on a non-fresh object: recorded, seen by later reads. */
int tr_fx_store_attr(tr_state *s, tr_var *obj, PyObject *name, tr_var *val);
/* 1: obj.name was written in this frame (out = the value), 0: not. */
int tr_fx_load_attr(tr_state *s, PyObject *obj, PyObject *name, tr_var *out);
int tr_fx_store_global(tr_state *s, tr_frame *fr, PyObject *name, tr_var *val);
int tr_fx_load_global(tr_state *s, tr_frame *fr, PyObject *name, tr_var *out);
/* Before mutating v->v: tensors and fresh objects stay; a list or dict
 * from outside is replaced (in v and in every frame) by its shadow, a
 * fresh copy whose final contents are replayed; anything else breaks. */
int tr_fx_redirect(tr_state *s, tr_var *v, const char *what);
PyObject *tr_fx_substitute(tr_state *s, PyObject *o);   /* borrowed shadow or NULL */
st_fe_src *tr_fx_shadow_src(tr_state *s, PyObject *o);  /* o a shadow: its original's source */
/* d.keys() / d.values() / d.items() for a view kind (TR_AUX_KEYS..ITEMS); new reference */
PyObject *tr_fx_dict_view(PyObject *d, int aux);
/* Performs the log for real (the translation's own call); 0 or -1 + exception. */
int tr_fx_apply(tr_state *s);
/* v with plain numbers for the translation's lazy ones and SymInts, like
 * tr_plain_values, but a tuple holding none stays itself and one object
 * stays one however often it is met (memo: a dict, or NULL for a fresh
 * one); new reference. */
PyObject *tr_fx_plain(PyObject *v, PyObject *memo);
void tr_fx_clear(tr_state *s);
/* A call performed after the graph instead of translated (opt.step(),
 * sched.step(), opt.zero_grad() with the result dropped; warnings.warn):
 * 1 recorded (out: None), 0 not one of these, -1 break. */
int tr_fx_defer_call(tr_state *s, tr_var *fnv, tr_var *args, int nargs, PyObject *kwnames,
                     tr_var *out);
/* After a deferred call that changed state (fx_barrier): -1 (a break) when
 * the instruction op (after: its pushed value top, or NULL before it runs)
 * could read that state stale. */
int tr_fx_barrier_op(tr_state *s, const char *opname, int kind, const tr_var *top);
enum { TR_FXB_OK, TR_FXB_LOAD, TR_FXB_OTHER };

/* ---- tr_exec.c */
bool tr_next_is_pop(const tr_frame *fr);   /* the next instruction is POP_TOP */
int tr_exec_init(void);                      /* opcode tables; also tr_calls_init */
/* Runs fr until it returns (0, *ret), yields (1, *ret: the value; a
 * generator's frame), stops for a partial graph (-2) or breaks (-1). */
int tr_run_frame(tr_state *s, tr_frame *fr, tr_var *ret);
int tr_opnum(const char *name);              /* real opcode, -1 if absent */
int tr_op_caches(int raw);                   /* inline cache units after it */

/* ---- tr_except.c: exceptions raised and handled in the translated code.
 * The raising hooks return -1 with tr_state.exc_pending set (or a break);
 * tr_run_frame then calls tr_exc_unwind: 1 the frame goes on at its handler,
 * 0 not (the exception goes on to the caller, or a break was recorded). */
bool tr_exc_catchable(tr_state *s, tr_frame *fr);   /* a handler covers fr's instruction */
int tr_exc_raise(tr_state *s, tr_frame *fr, int nargs);          /* RAISE_VARARGS */
int tr_exc_reraise(tr_state *s, tr_frame *fr);                   /* RERAISE */
int tr_exc_assertion(tr_state *s, tr_frame *fr, tr_var *out);    /* LOAD_ASSERTION_ERROR */
int tr_exc_unwind(tr_state *s, tr_frame *fr);
int tr_exc_push_info(tr_state *s, tr_frame *fr);
int tr_exc_pop_except(tr_state *s, tr_frame *fr);
int tr_exc_match(tr_state *s, tr_frame *fr);                     /* CHECK_EXC_MATCH */
int tr_exc_with_start(tr_state *s, tr_frame *fr);                /* WITH_EXCEPT_START */
/* Before CALL: an exception class built from plain values (1: done, the
 * instance pushed), int()/float() of a computed string raising ValueError
 * under a handler (-1), else 0 (the normal path). */
int tr_exc_call(tr_state *s, tr_frame *fr, int nargs, PyObject *kwnames);
/* Before BINARY_SUBSCR: an int index out of a tensor's static bounds under
 * a handler raises IndexError (-1), else 0. */
int tr_exc_subscr(tr_state *s, tr_frame *fr);
/* A user exception class with a Python __init__ the translation inlines. */
bool tr_exc_user_init(PyObject *c);
/* Calling such a class t under a handler: 1 with *obj its new instance
 * (BaseException's new run on the plain positional arguments; the caller
 * inlines __init__), 0 not this case, -1 break. */
int tr_exc_new(tr_state *s, PyTypeObject *t, tr_var *args, int nargs, PyObject *kwnames,
               PyObject **obj);
/* fn (a bound C __init__ of a built-in exception class, from super()) on
 * self, an exception made in the frame, with plain arguments: runs no
 * Python code, so it may run for real (1), else 0, -1 break. */
int tr_exc_c_init(tr_state *s, PyObject *fn, PyObject *self, tr_var *args, int nargs);
/* YIELD_VALUE of a generator's frame: a break inside one of its handlers. */
int tr_exc_yield(tr_state *s, tr_frame *fr);
void tr_exc_clear(tr_state *s);

/* ---- tr_classify.c: symtrace's objects, looked up once */
struct tr_refs {
    PyObject *pkg_dir, *mod_dir;             /* ".../symtrace/", ".../symtrace/nn/modules/" */
    PyObject *nn_utils;                      /* ".../symtrace/nn/utils" (a file or a package) */
    PyObject *c_module, *builtins_mod, *math_mod, *operator_mod, *op_mod2;
    PyObject *nn_module_cls, *function_cls, *gradmode_cls, *autocast_cls, *dtype_cls, *device_cls;
    PyObject *recfn_cls;   /* symtrace.profiler.record_function */
    PyObject *mode_snapshot, *mode_restore;   /* autograd.grad_mode's Python-side modes */
    PyObject *is_compiling_fn;               /* symtrace.compiler.is_compiling: True in a graph */
    PyObject *modlist_cls, *seq_cls, *moddict_cls;
};
extern struct tr_refs tr_refs;
int tr_calls_init(void);
int tr_fn_origin(PyObject *fn);              /* 0 user, 1 symtrace (real), 2 nn/modules, nn/utils (inline) */
const char *tr_qualname(PyObject *o, char *buf, size_t n);
bool tr_module_starts(PyObject *o, const char *prefix);   /* o.__module__ */
PyObject *tr_mro_lookup(PyTypeObject *t, PyObject *name, PyObject *after);  /* borrowed */
bool tr_heap_mro_plain(PyTypeObject *t, const char *const *hooks);
int tr_is_kind(PyObject *o, PyObject *cls);

/* ---- tr_iter.c */
typedef struct {
    tr_var *v;
    int n, cap;
} tr_vlist;
int tr_vl_push(tr_state *s, tr_vlist *l, tr_var *v);       /* steals v */
void tr_vl_free(tr_vlist *l);
int tr_item_var(tr_state *s, st_fe_src *src, PyObject *key, PyObject *val, tr_var *out);
int tr_modpart_var(tr_state *s, st_fe_src *src, const char *part, PyObject *key,
                   PyObject *val, tr_var *out);
PyObject *tr_guarded_modules(tr_state *s, tr_var *obj);   /* a container's _modules */
bool tr_const_key(PyObject *k);

/* ---- tr_calls.c, tr_attrs.c, tr_iter.c */
/* fn(args..., kw) where kwnames names the trailing kwnames-many args. */
int tr_call(tr_state *s, tr_var *fn, tr_var *args, int nargs,
            PyObject *kwnames, tr_var *out);
int tr_getattr(tr_state *s, tr_var *obj, PyObject *name, tr_var *out);
/* hasattr: 1/0 (with ABSENT guard), -1 break */
int tr_hasattr(tr_state *s, tr_var *obj, PyObject *name);
int tr_subscr(tr_state *s, tr_var *obj, tr_var *key, tr_var *out);
/* GET_ITER: an unrolled iterator var */
int tr_iter_of(tr_state *s, tr_var *obj, tr_var *out);
/* An unrolled iterator over items (takes the malloc'd array); type: what
 * type() of the real iterator would be (borrowed, may be NULL) */
int tr_iter_from(tr_state *s, tr_var *items, int n, PyObject *type, tr_var *out);
/* Items of an iterable as vars (n, *items malloc'd); an iterator is consumed */
int tr_unroll(tr_state *s, tr_var *obj, tr_var **items, int *n);
/* A generator frame suspended now or left unfinished: its cleanup code
 * (finally, __exit__) would run in Python when it is closed. -1: break */
int tr_gen_check_closed(tr_state *s);
/* The next item of an iterator var: 1 (out set), 0 exhausted, -1 break */
int tr_iter_next(tr_state *s, tr_var *itv, tr_var *out);
/* v is an iterator var: map/filter/zip/enumerate took what is left of it */
void tr_iter_take(tr_var *v);
/* Before obj's items are unrolled for an iterator made from it one to one
 * (iter, enumerate, zip): appends to *watch (a new list when NULL) what
 * that iterator must watch (obj itself when a mutable container, or the
 * watch of the iterator obj). -1: break. */
int tr_iter_watch(tr_state *s, tr_var *obj, PyObject **watch);
void tr_iter_decref(tr_iter *it);
bool tr_safe_type(PyObject *o);          /* operators may run for real */
bool tr_is_symtrace_module(PyObject *o); /* a symtrace.nn.Module instance */
bool tr_is_const_value(PyObject *o);     /* returned as an ST_T_CONST */
bool tr_has_tensor(PyObject *key);       /* a tensor in a key */
/* A key whose tensors are read on the host (masks, 0-d, in lists; any in
 * dynamic-shape mode): a graph break; int index tensors are traced. */
bool tr_key_reads_values(tr_state *s, PyObject *key);
bool tr_is_mode_ctx(PyObject *o);
bool tr_is_nullcontext(PyObject *o);
bool tr_is_enum_member(PyObject *o);     /* an enum member (tr_calls.c) */
int tr_truth(tr_state *s, tr_var *v, int *out);   /* bool(v): Python __bool__ inlined (tr_exec.c) */     /* contextlib.nullcontext (tr_calls.c) */
/* Builds a real function's frame locals from args (CPython's binding):
 * locals[co_nlocalsplus] must be zeroed. 0 or -1 with a Python exception. */
int tr_bind_args(PyObject *fn, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames, PyObject **locals, int nlocals);

/* ---- tr_objects.c: instances of plain user classes made in the frame */
bool tr_plain_user_type(PyTypeObject *t);
bool tr_fresh_user_obj(tr_state *s, PyObject *o);
PyObject *tr_py_dunder(PyObject *o, const char *name);   /* borrowed Python function or NULL */
int tr_call_dunder(tr_state *s, PyObject *fn, tr_var *o, tr_var *args, int nargs, tr_var *out);
int tr_obj_tmpl_parts(PyObject *v, PyObject **spec, PyObject **vals);
bool tr_exc_rebuildable(tr_state *s, PyObject *v);   /* an exception made in the frame */
bool tr_exc_class_rebuildable(PyTypeObject *t);
PyObject *tr_exc_cfields(PyTypeObject *t);            /* C fields rebuilt: names or NULL */
int tr_exc_tmpl_parts(PyObject *v, PyObject **spec, PyObject **vals);

/* ---- tr_dynamic.c: dynamic shapes (see its top comment) */
typedef struct {
    int kind, n0, dim;
    int64_t step;            /* kind 8 (_slice): its step */
    bool targs;              /* a tensor among the arguments (kind 0) */
    int nt;                  /* the shapes of (up to 4 of) those tensors and a
                                method's self, for folded_size */
    int tnd[4];
    int64_t tshape[4][ST_MAX_DIMS];
    int nnum;                /* a scalar op's number arguments (folded_size) */
    double nums[6];
    PyObject *tensor;        /* borrowed */
    PyObject *shape;         /* owned */
} tr_dyncall;
typedef struct {
    int dim, start, stop;    /* expression ids */
    int64_t vstart, vstop;
} tr_want_slice;
typedef struct {
    int n0, n;
    tr_want_slice w[ST_MAX_DIMS];
    int nres, res[ST_MAX_DIMS];   /* the result's dims as expressions (exact) */
    bool exact;
} tr_dynsub;
int tr_dyn_begin(tr_state *s, bool shapes);
bool tr_dyn_shapes(tr_state *s);                     /* dynamic shapes on */
int tr_dyn_expr(tr_state *s, PyObject *o);           /* a SymInt's expression, -1 */
int tr_value_symbol(tr_state *s, tr_var *out, PyObject *v, st_fe_src *src);
/* The translation SymInts and lazy arguments report to (thread-local). */
void tr_dyn_enter(tr_state *s, tr_state **prev);
void tr_dyn_leave(tr_state *prev);
/* A number argument of the root frame as a lazy one (guarded only when
 * used): new reference, or NULL (no exception) to take it as it is. */
PyObject *tr_lazy_make(tr_state *s, PyObject *v, st_fe_src *src);
bool tr_is_lazy(PyObject *o);
st_fe_src *tr_lazy_src(tr_state *s, PyObject *o);
PyObject *tr_plain_values(PyObject *o, int depth);   /* new ref, no guards */
int tr_lazy_plain_var(tr_state *s, tr_var *v);       /* lazies only, guarded */
void tr_dyn_end(tr_state *s);
PyObject *tr_dyn_plain(tr_state *s, PyObject *o, int depth);   /* new ref */
int tr_dyn_plain_var(tr_state *s, tr_var *v);
int tr_dyn_pin_tensor(tr_state *s, PyObject *t);         /* its dims' symbols guarded */
int tr_dyn_source(tr_state *s, PyObject *v, st_fe_src *src);
PyObject *tr_dyn_wrap_size(tr_state *s, PyObject *tensor, PyObject *r, int what, int dim);
int tr_dyn_before_call(tr_state *s, PyObject *fn, tr_var *args, int nargs,
                       PyObject *kwnames, tr_dyncall *dc);
PyObject *tr_dyn_after_call(tr_state *s, tr_dyncall *dc, PyObject *r);
int tr_dyn_before_subscr(tr_state *s, PyObject *tensor, PyObject *key, tr_dynsub *ds);
/* r: the subscript's result (NULL for a store): its dims are the analyzed
 * index's, kept as expressions (no probe has to explain n % 5) */
int tr_dyn_after_subscr(tr_state *s, tr_dynsub *ds, PyObject *r);
int tr_dyn_validate(tr_state *s);
/* x * x.shape[0], x < n (op -1: a comparison): the size a 0-d tensor of
 * the graph (1), 0 not, -1 break */
int tr_dyn_size_operand(tr_state *s, int op, tr_var *a, tr_var *b);
int tr_dyn_finish(tr_state *s, st_fe_entry *e, const st_graph *g, st_tensor *const *ins, int nin,
                  const int *smap, int nsmap, const st_rt_cfn_opts *o);
void tr_dyn_adopt(st_fe_entry *e, void *cfn);
static inline bool tr_is_symint(PyObject *o)
{
    return o && st_fe_symint_cls && Py_TYPE(o) == (PyTypeObject *)st_fe_symint_cls;
}

#endif
