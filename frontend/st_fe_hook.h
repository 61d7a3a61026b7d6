/* st_fe_hook.h - declarations shared by the frame hook's files (guards.c,
 * entry.c, eval_frame.c, compile_bind.c), beyond the contract in
 * st_fe_tr.h: the Python classes the guards recognise, the static-source
 * partition, running a hit with pre-gathered inputs, timers, the hook's
 * enter/exit, reset, statistics and explain. Frontend-internal. */
#ifndef ST_FE_HOOK_H
#define ST_FE_HOOK_H

#include "st_fe_tr.h"

/* symtrace.nn.Module and symtrace.device, registered by symtrace/_compile.py
 * (_C._fe_set_classes); NULL until then (owned references). */
extern PyObject *st_fe_module_class, *st_fe_device_class;
/* Is o an instance of symtrace.nn.Module (a subclass included)? */
int st_fe_is_module(PyObject *o);

/* ---- fast guard checks (guards.c): decides which of t's sources are
 * static from the guards (what is read from a symtrace Module that an ID
 * guard fixes: its attributes, its part dicts and their items), reorders
 * gs so that the guards on non-static sources come first (stable) and
 * returns how many they are (-1: out of memory); st_fe_guards_check_front
 * then checks only those while the epochs hold (st_fe_guards_check's
 * semantics otherwise). */
int st_fe_guards_partition(st_fe_guardset *gs, st_fe_srctab *t);
/* Static guards may be skipped: both epochs and every dict stamp are as at
 * the last full check. */
bool st_fe_guards_held(const st_fe_guardset *gs);
/* held: st_fe_guards_held(gs) when the caller already knows it, -1 to let
 * the check find out (one dict-stamp scan per hit, not two). */
int st_fe_guards_check_front(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo,
                             const st_fe_guard **failed, int nfront, int held);
/* Would every guard pass if tensor sizes (and strides) were not checked?
 * 1/0/-1; leaves the epochs alone (automatic dynamic shapes, eval_frame.c). */
int st_fe_guards_size_miss(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo);

/* ---- running a hit with inputs known in advance (entry.c): pre[k], when
 * not NULL, is graph input k (borrowed; the caller keeps its Python object
 * alive), else it is gathered as st_fe_entry_run does. */
PyObject *st_fe_entry_run_pre(st_fe_entry *e, const st_fe_frame *f, PyObject **memo,
                              st_tensor *const *pre);

/* ---- timing of hits (off by default; _C._fe_config("timing", 1)):
 * [0] ns in the hook for hits, [1] ns of those in the compiled graph
 * (st_rt_cfn_run), [2] hits timed. */
extern bool st_fe_timing;
extern uint64_t st_fe_timing_ns[3];
uint64_t st_fe_now_ns(void);

/* ---- the hook (eval_frame.c) */
int st_fe_hook_supported(void);
/* Enter/leave a compiled call on this thread with these options (copied;
 * backend must be a static string). Nested enters stack. */
int st_fe_hook_enter(const st_fe_options *o);
void st_fe_hook_exit(void);
int st_fe_hook_suspend(int delta);      /* frames run plain while > 0 (compiler.disable) */
/* Never translate frames of co (a generated break function). */
void st_fe_hook_mark_skip(PyCodeObject *co);
/* Drops every cached entry and plain mark (symtrace.reset). */
void st_fe_hook_reset(void);
PyObject *st_fe_hook_stats(void);
/* Explain recording on this thread: begin clears, end returns the list of
 * records (dicts) and stops recording. */
void st_fe_hook_explain_begin(void);
PyObject *st_fe_hook_explain_end(void);
void st_fe_hook_set_cache_limit(int n);
/* Requests the code-extra index (once) and sets the skip rules: a list of
 * (path prefix, skip) tuples, the longest matching prefix decides (NULL:
 * keep). 0 or -1. */
int st_fe_hook_init(PyObject *rules);
int st_fe_hook_get_cache_limit(void);

/* ---- module set-up (compile_bind.c) */
int st_fe_init_compile(PyObject *m);

#endif
