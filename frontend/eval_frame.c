/* frontend/eval_frame.c - the PEP 523 frame hook: installed while at least
 * one thread is inside a compiled call, active per thread; skip rules
 * (generators, module-level code, symtrace's own and the standard library's
 * files, codes marked plain); the per-code cache of compiled entries on the
 * code object's extra slot (guards checked in C, a hit run from C without
 * evaluating the frame, a miss translated, a break or the cache limit marks
 * the code plain); automatic dynamic shapes (a miss on tensor sizes alone
 * is translated with dynamic shapes); statistics, logging and explain
 * records. */
#include "st_fe_hook.h"
#include "pyinternals.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------- configuration and statistics ---------------- */
static int cache_limit = 64;
static struct {
    uint64_t translations, hits, misses, breaks, fallbacks, frames;
    uint64_t resumes;          /* partial graphs made (entries that resume after a break) */
    uint64_t graphs;           /* entries with a compiled graph */
} stats;
/* which files' code always runs as plain Python: a list of (path prefix,
 * skip) tuples (symtrace's own files and the standard library; symtrace.nn's
 * layers excepted), set by symtrace/_compile.py */
static PyObject *skip_rules;

bool st_fe_timing;
uint64_t st_fe_timing_ns[3];

uint64_t st_fe_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void st_fe_hook_set_cache_limit(int n) { cache_limit = n < 0 ? 0 : n; }
int st_fe_hook_get_cache_limit(void) { return cache_limit; }

#if ST_FE_SUPPORTED
/* ---------------- per-code extra ---------------- */
/* One cached entry. smemo keeps the values of the entry's static sources
 * (registered Module children, see guards.c) from the last hit, valid while
 * the module and meta epochs equal s_mod/s_meta: the same condition under
 * which their guards are skipped, so a hit reads them without a lookup. */
typedef struct cnode {
    struct cnode *next;
    st_fe_entry *e;
    const char *backend;
    bool dynamic;
    PyObject **smemo;         /* owned references, e->srcs.n slots, or NULL */
    int *dyn_ids, ndyn;       /* ids of the entry's non-static sources */
    int *hole_ids, nholes;    /* static sources smemo lacks (after a full store) */
    int nfront;               /* guards on non-static sources (first in e->guards) */
    st_tensor **sins;         /* per graph input: the tensor of a static source
                                 (its Python object held by smemo), or NULL */
    st_fe_src **asrc;         /* the tensor sources whose aliasing is checked */
    int nasrc;
    const void **sstor;       /* per asrc: the storage of a static one, or NULL */
    int *grp;                 /* aliasing at translation (see alias_ok), or NULL */
    int *dyn_in, ndyn_in;     /* indices into asrc of the non-static sources */
    bool py_ret;              /* building the return value runs Python (namedtuples):
                                 then no borrowed values (Python may drop smemo's) */
    uint64_t s_mod, s_meta;
    bool s_valid;
    int busy;                 /* calls using the node now */
    bool dead;                /* dropped (reset) while busy: the last user frees it */
} cnode;

/* Does building t call Python (a namedtuple's constructor)? */
static bool tmpl_runs_python(const st_fe_tmpl *t)
{
    if (!t) return false;
    if (t->kind == ST_T_TUPLE && t->obj && t->obj != (PyObject *)&PyTuple_Type &&
        t->obj != (PyObject *)&st_fe_size_type) return true;   /* a Size is built in C */
    if (t->kind == ST_T_METHOD) return true;   /* getattr may run a descriptor */
    if (t->kind == ST_T_OBJECT) return true;   /* a user object (its __del__ may run) */
    for (int i = 0; i < t->n; i++)
        if (tmpl_runs_python(t->items[i])) return true;
    return false;
}

static void smemo_drop(cnode *n)
{
    if (n->smemo) st_fe_memo_clear(n->smemo, n->e->srcs.n);
    n->s_valid = false;
}

typedef struct code_extra {
    struct code_extra *prev, *next;   /* registry, for reset and stats */
    PyCodeObject *code;               /* borrowed: the extra dies with it */
    cnode *entries;
    int n;
    bool skip;                        /* by file: never translated */
    bool plain;                       /* by a break or the cache limit */
    bool auto_static;                 /* automatic dynamic shapes could not express
                                         the frame: later size misses stay static */
    PyObject *reason;                 /* why plain (str) */
} code_extra;

static Py_ssize_t extra_index = -1;
static code_extra *registry;

static void free_node(cnode *n)
{
    smemo_drop(n);
    free(n->smemo);
    free(n->dyn_ids);
    free(n->hole_ids);
    free(n->sins);
    free(n->sstor);
    free(n->asrc);
    free(n->grp);
    free(n->dyn_in);
    st_fe_entry_free(n->e);
    free(n);
}

static void free_nodes(cnode *n)
{
    while (n) {
        cnode *next = n->next;
        n->next = NULL;
        if (n->busy) n->dead = true;   /* try_entries frees it when done */
        else free_node(n);
        n = next;
    }
}

static void extra_clear(code_extra *x)
{
    cnode *n = x->entries;
    x->entries = NULL;
    x->n = 0;
    x->plain = false;
    x->auto_static = false;
    Py_CLEAR(x->reason);
    free_nodes(n);
}

static void extra_free(void *p)
{
    code_extra *x = p;
    if (!x) return;
    if (x->prev) x->prev->next = x->next;
    else registry = x->next;
    if (x->next) x->next->prev = x->prev;
    extra_clear(x);
    free(x);
}

/* Skip rules: (prefix, skip) pairs; the longest prefix of the file wins. */
static bool skipped_file(PyObject *file)
{
    Py_ssize_t best = -1;
    bool skip = false;
    for (Py_ssize_t i = 0; skip_rules && i < PyList_GET_SIZE(skip_rules); i++) {
        PyObject *rule = PyList_GET_ITEM(skip_rules, i);
        PyObject *pre = PyTuple_GET_ITEM(rule, 0);
        Py_ssize_t r = PyUnicode_Tailmatch(file, pre, 0, PY_SSIZE_T_MAX, -1);
        if (r < 0) { PyErr_Clear(); continue; }
        if (r > 0 && PyUnicode_GET_LENGTH(pre) > best) {
            best = PyUnicode_GET_LENGTH(pre);
            skip = PyObject_IsTrue(PyTuple_GET_ITEM(rule, 1)) == 1;
        }
    }
    return skip;
}

/* The code's extra, made on first sight; NULL (no exception) if it cannot. */
static code_extra *get_extra(PyCodeObject *co)
{
    void *p = NULL;
    if (ST_CODE_GET_EXTRA((PyObject *)co, extra_index, &p) < 0) { PyErr_Clear(); return NULL; }
    if (p) return p;
    code_extra *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->code = co;
    PyObject *file = co->co_filename;
    x->skip = PyUnicode_Check(file) && skipped_file(file);
    if (ST_CODE_SET_EXTRA((PyObject *)co, extra_index, x) < 0) {
        PyErr_Clear();
        free(x);
        return NULL;
    }
    x->next = registry;
    if (registry) registry->prev = x;
    registry = x;
    return x;
}

/* ---------------- per-thread state ---------------- */
#define MAX_NEST 64
typedef struct {
    int depth;                /* compiled calls entered on this thread */
    int suspended;            /* translating: frames run plain */
    st_fe_options opts[MAX_NEST];
    PyObject *explain;        /* list of records, or NULL */
} hook_tls;
static _Thread_local hook_tls tls;
static int threads_in;        /* threads with depth > 0 (under the GIL) */

static const st_fe_options *cur_opts(void)
{
    return &tls.opts[(tls.depth > MAX_NEST ? MAX_NEST : tls.depth) - 1];
}

static PyObject *hook(PyThreadState *ts, struct _PyInterpreterFrame *pf, int throwflag);

int st_fe_hook_supported(void) { return 1; }

/* the eval function installed before ours (put back when the last thread
 * leaves its compiled call) */
static _PyFrameEvalFunction prev_eval;

int st_fe_hook_enter(const st_fe_options *o)
{
    if (tls.depth < MAX_NEST) tls.opts[tls.depth] = *o;
    if (tls.depth++ == 0 && threads_in++ == 0) {
        PyInterpreterState *is = PyInterpreterState_Get();
        prev_eval = _PyInterpreterState_GetEvalFrameFunc(is);
        if (prev_eval == hook) prev_eval = _PyEval_EvalFrameDefault;
        _PyInterpreterState_SetEvalFrameFunc(is, hook);
    }
    return 0;
}

/* symtrace.compiler.disable: frames run plain on this thread while > 0 */
int st_fe_hook_suspend(int delta)
{
    tls.suspended += delta;
    if (tls.suspended < 0) tls.suspended = 0;
    return tls.suspended;
}

void st_fe_hook_exit(void)
{
    if (tls.depth <= 0) return;
    if (--tls.depth == 0 && --threads_in == 0)
        _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(),
                                             prev_eval ? prev_eval : _PyEval_EvalFrameDefault);
}

void st_fe_hook_reset(void)
{
    /* detach every entry first: freeing one may free a code object, whose
     * extra then leaves the registry we walk */
    cnode *all = NULL, **tail = &all;
    for (code_extra *x = registry; x; x = x->next) {
        *tail = x->entries;
        while (*tail) tail = &(*tail)->next;
        x->entries = NULL;
        x->n = 0;
        x->plain = false;
        x->auto_static = false;
        Py_CLEAR(x->reason);
    }
    free_nodes(all);
    st_fe_resume_reset();
    st_fe_dyn_instances = 0;
    memset(&stats, 0, sizeof stats);
    memset(st_fe_timing_ns, 0, sizeof st_fe_timing_ns);
}

void st_fe_hook_mark_skip(PyCodeObject *co)
{
    code_extra *x = get_extra(co);
    if (x) x->skip = true;
}

/* ---------------- logging and explain ---------------- */
static PyObject *code_where(PyCodeObject *co)
{
    return PyUnicode_FromFormat("%U (%U:%d)", co->co_qualname, co->co_filename,
                                co->co_firstlineno);
}

static void log_line(const char *what, PyCodeObject *co, const char *reason)
{
    st_py_exc exc;
    st_py_err_save(&exc);
    PyObject *w = code_where(co);
    if (w) PySys_FormatStderr("[symtrace] %s in %U: %s\n", what, w, reason);
    else PyErr_Clear();
    Py_XDECREF(w);
    st_py_err_restore(&exc);
}

static void record(const char *kind, PyCodeObject *co, const char *reason,
                   PyObject *file, int line, st_fe_entry *e)
{
    if (!tls.explain) return;
    st_py_exc exc;
    st_py_err_save(&exc);
    PyObject *guards = e ? st_fe_guards_describe(&e->guards) : PyList_New(0);
    PyObject *r = Py_BuildValue(
        "{s:s,s:z,s:O,s:i,s:O,s:i,s:O,s:O,s:i}", "kind", kind, "reason", reason,
        "filename", file ? file : co->co_filename, "lineno", file ? line : co->co_firstlineno,
        "code", co->co_qualname, "nops", e ? e->nops : 0, "guards", guards ? guards : Py_None,
        "graph", e && e->graph_str ? e->graph_str : Py_None, "ninputs", e ? e->ninputs : 0);
    if (!r || PyList_Append(tls.explain, r) < 0) PyErr_Clear();
    Py_XDECREF(r);
    Py_XDECREF(guards);
    st_py_err_restore(&exc);
}

void st_fe_hook_explain_begin(void)
{
    Py_XSETREF(tls.explain, PyList_New(0));
}

PyObject *st_fe_hook_explain_end(void)
{
    PyObject *l = tls.explain;
    tls.explain = NULL;
    return l ? l : PyList_New(0);
}

static void mark_plain(code_extra *x, const char *why)
{
    x->plain = true;
    Py_XSETREF(x->reason, PyUnicode_FromString(why));
    if (!x->reason) PyErr_Clear();
}

/* ---------------- the hook ---------------- */
/* The frame's result when the hook did not evaluate it: clears and pops
 * the frame where CPython leaves that to the evaluator (3.12). */
static PyObject *done(PyThreadState *ts, st_py_iframe *fr, PyObject *res)
{
#if ST_HOOK_MUST_POP_FRAME
    st_py_frame_clear_and_pop(ts, fr);
#else
    (void)ts; (void)fr;
#endif
    return res;
}

#define MEMO_SMALL 1024

/* After a check (and run), releases memo. warm: its static slots were
 * borrowed from smemo (not owned, except holes newly read). Otherwise memo
 * owns every slot; when store (a check that passed, with the epochs
 * (mod, meta) still current and no other call borrowing from smemo), its
 * static values become the node's smemo. */
static void memo_release(cnode *n, PyObject **memo, bool warm, bool store, uint64_t mod,
                         uint64_t meta)
{
    st_fe_srctab *t = &n->e->srcs;
    bool current = mod == st_fe_module_epoch && meta == st_fe_meta_epoch;
    if (warm) {
        for (int k = 0; k < n->ndyn; k++) Py_XDECREF(memo[n->dyn_ids[k]]);
        for (int k = 0; k < n->nholes; k++) {
            int i = n->hole_ids[k];
            PyObject *v = memo[i];
            if (!v || v == n->smemo[i]) continue;
            if (!n->smemo[i] && current && !n->busy && !n->dead) n->smemo[i] = v;  /* fill */
            else Py_DECREF(v);
        }
        return;
    }
    store = store && current && n->smemo && !n->busy && !n->dead;
    if (store) smemo_drop(n);
    for (int i = 0; i < t->n; i++) {
        PyObject *v = memo[i];
        if (!v) continue;
        if (store && t->v[i]->is_static) n->smemo[i] = v;   /* the node takes it */
        else Py_DECREF(v);
    }
    if (!store) return;
    if (!n->dyn_ids) {
        n->dyn_ids = malloc((size_t)(t->n + 1) * sizeof *n->dyn_ids);
        n->hole_ids = malloc((size_t)(t->n + 1) * sizeof *n->hole_ids);
        if (!n->dyn_ids || !n->hole_ids) {
            free(n->dyn_ids);
            free(n->hole_ids);
            n->dyn_ids = n->hole_ids = NULL;
            return;                                   /* s_valid stays false */
        }
    }
    n->ndyn = n->nholes = 0;
    for (int i = 0; i < t->n; i++) {
        if (!t->v[i]->is_static) n->dyn_ids[n->ndyn++] = i;
        else if (!n->smemo[i]) n->hole_ids[n->nholes++] = i;
    }
    st_fe_entry *e = n->e;
    if (!n->sins && e->ninputs > 0) n->sins = calloc((size_t)e->ninputs, sizeof *n->sins);
    for (int k = 0; n->sins && k < e->ninputs; k++) {
        st_fe_src *src = e->input_src[k];
        PyObject *v = src && src->is_static ? n->smemo[src->id] : NULL;
        n->sins[k] = v && st_fe_is_tensor(v) ? st_fe_unwrap(v) : NULL;
    }
    if (!n->sstor && n->nasrc > 0) n->sstor = calloc((size_t)n->nasrc, sizeof *n->sstor);
    for (int k = 0; n->sstor && k < n->nasrc; k++) {
        PyObject *v = n->asrc[k]->is_static ? n->smemo[n->asrc[k]->id] : NULL;
        n->sstor[k] = v && st_fe_is_tensor(v) ? (const void *)st_fe_unwrap(v)->storage : NULL;
    }
    n->s_valid = true;
    n->s_mod = mod;
    n->s_meta = meta;
}

static void move_to_front(code_extra *x, cnode *n)
{
    for (cnode **p = &x->entries; *p; p = &(*p)->next) {
        if (*p != n) continue;
        if (p != &x->entries) {
            *p = n->next;
            n->next = x->entries;
            x->entries = n;
        }
        return;
    }
}

/* ---------------- aliasing of tensor inputs ----------------
 * An entry is made for the aliasing its tensor inputs had when it was
 * translated (which of them share storage): in-place writes in the graph
 * depend on it (f(x, y) and f(z, z) differ when f writes x). The tensors
 * are those read from the sources of graph inputs and of TENSOR guards
 * (asrc); grp[k] is the first of them that shared asrc[k]'s storage then
 * (k itself when none). A hit needs the same grouping. */
static const void *src_storage(const st_fe_src *s, const st_fe_frame *f, PyObject **memo)
{
    PyObject *v = memo[s->id];
    if (!v) {
        v = st_fe_src_eval(s, f, memo);     /* the memo keeps a reference */
        if (!v) { PyErr_Clear(); return NULL; }
        Py_DECREF(v);
    }
    return st_fe_is_tensor(v) ? (const void *)st_fe_unwrap(v)->storage : NULL;
}

static void alias_groups(cnode *n, const st_fe_frame *f)
{
    st_fe_entry *e = n->e;
    int cap = e->ninputs + e->guards.n, na = 0;
    if (cap < 2) return;
    st_fe_src **asrc = malloc((size_t)cap * sizeof *asrc);
    char *seen = calloc((size_t)e->srcs.n + 1, 1);
    if (!asrc || !seen) { free(asrc); free(seen); return; }
    for (int k = 0; k < e->ninputs; k++) {
        st_fe_src *s = e->input_src[k];
        if (s && !seen[s->id]) { seen[s->id] = 1; asrc[na++] = s; }
    }
    for (int k = 0; k < e->guards.n; k++) {
        st_fe_src *s = e->guards.v[k].src;
        if (e->guards.v[k].kind == ST_G_TENSOR && !seen[s->id]) { seen[s->id] = 1; asrc[na++] = s; }
    }
    free(seen);
    const void **st = malloc((size_t)(na + 1) * sizeof *st);
    PyObject **memo = calloc((size_t)e->srcs.n + 1, sizeof *memo);
    n->grp = malloc((size_t)(na + 1) * sizeof *n->grp);
    n->dyn_in = malloc((size_t)(na + 1) * sizeof *n->dyn_in);
    if (na >= 2 && st && memo && n->grp && n->dyn_in) {
        for (int k = 0; k < na; k++) st[k] = src_storage(asrc[k], f, memo);
        n->ndyn_in = 0;
        for (int k = 0; k < na; k++) {
            n->grp[k] = k;
            for (int j = 0; j < k && st[k]; j++)
                if (st[j] == st[k]) { n->grp[k] = n->grp[j]; break; }
            if (!asrc[k]->is_static) n->dyn_in[n->ndyn_in++] = k;
        }
        n->asrc = asrc;
        n->nasrc = na;
        asrc = NULL;
    } else {
        free(n->grp);
        free(n->dyn_in);
        n->grp = n->dyn_in = NULL;
    }
    if (memo) st_fe_memo_clear(memo, e->srcs.n);
    free(memo);
    free(st);
    free(asrc);
}

/* Do the tensors group as they did at translation? When warm, the tensors
 * of static sources are the same as last time (their storages are kept in
 * sstor): only pairs with a tensor from a non-static source are compared. */
static bool alias_ok(cnode *n, const st_fe_frame *f, PyObject **memo, bool warm)
{
    int na = n->nasrc;
    if (!n->grp) return true;
    const void *st_s[256], **st = na <= 256 ? st_s : malloc((size_t)na * sizeof *st);
    if (!st) return false;
    for (int k = 0; k < na; k++)
        st[k] = warm && n->sstor && n->sstor[k] ? n->sstor[k] : src_storage(n->asrc[k], f, memo);
    bool ok = true;
    for (int a = 0; ok && a < (warm ? n->ndyn_in : na); a++) {
        int k = warm ? n->dyn_in[a] : a;
        for (int j = 0; j < na; j++) {
            if (j == k) continue;
            bool same = st[k] && st[j] == st[k];
            if (same != (n->grp[j] == n->grp[k])) { ok = false; break; }
        }
    }
    if (st != st_s) free(st);
    return ok;
}

/* Checks the entries in order (most recently hit first); runs the first
 * that passes. 1 hit (*res set, NULL on error), 0 miss, -1 error. A node
 * is marked busy while in use: Python code that runs meanwhile (a property
 * read by a guard, another thread, symtrace.reset) may neither free it nor
 * replace the smemo values it borrows. */
static int try_entries(code_extra *x, const st_fe_frame *f, const st_fe_options *o,
                       PyObject **res, PyObject **brk)
{
    PyObject *memo_s[MEMO_SMALL];
    for (cnode *n = x->entries; n; n = n->next) {
        st_fe_entry *e = n->e;
        /* dynamic=None uses static and dynamic entries alike */
        if ((n->dynamic != o->dynamic && !o->auto_dynamic) || strcmp(n->backend, o->backend) != 0)
            continue;
        int ns = e->srcs.n;
        PyObject **memo = ns <= MEMO_SMALL ? memo_s : calloc((size_t)ns, sizeof *memo);
        if (!memo) { PyErr_NoMemory(); return -1; }
        if (!n->smemo && ns > 0) n->smemo = calloc((size_t)ns, sizeof *n->smemo);
        bool held = st_fe_guards_held(&e->guards);
        bool warm = held && !n->py_ret && n->s_valid && n->dyn_ids &&
                    n->s_mod == st_fe_module_epoch && n->s_meta == st_fe_meta_epoch;
        if (warm) memcpy(memo, n->smemo, (size_t)ns * sizeof *memo);   /* borrowed */
        else if (memo == memo_s) memset(memo, 0, (size_t)ns * sizeof *memo);
        n->busy++;
        int r = st_fe_guards_check_front(&e->guards, f, memo, NULL, n->nfront, held);
        if (r == 1 && !alias_ok(n, f, memo, warm)) r = 0;
        uint64_t mod = st_fe_module_epoch, meta = st_fe_meta_epoch;
        if (r == 1) {
            *res = st_fe_entry_run_pre(e, f, memo, warm ? n->sins : NULL);
            *brk = Py_XNewRef(e->brk_fn);
        }
        n->busy--;
        memo_release(n, memo, warm, r == 1, mod, meta);
        if (memo != memo_s) free(memo);
        if (n->dead) {             /* dropped while in use: ours to free now */
            if (!n->busy) free_node(n);
            return r < 0 ? -1 : r;
        }
        if (r < 0) return -1;
        if (r == 1) {
            move_to_front(x, n);
            return 1;
        }
    }
    return 0;
}

/* Automatic dynamic shapes (torch's dynamic=None): did the frame miss only
 * because tensor sizes changed? Yes when a static entry's guards would all
 * pass with sizes left out. */
static bool size_miss(code_extra *x, const st_fe_frame *f, const st_fe_options *o)
{
    for (cnode *n = x->entries; n; n = n->next) {
        st_fe_entry *e = n->e;
        if (n->dynamic || n->dead || strcmp(n->backend, o->backend) != 0) continue;
        int ns = e->srcs.n;
        PyObject **memo = calloc((size_t)ns + 1, sizeof *memo);
        if (!memo) { PyErr_Clear(); return false; }
        n->busy++;
        int r = st_fe_guards_size_miss(&e->guards, f, memo);
        n->busy--;
        st_fe_memo_clear(memo, ns);
        free(memo);
        if (r < 0) PyErr_Clear();
        if (n->dead) {
            if (!n->busy) free_node(n);
            return false;
        }
        if (r == 1) return true;
    }
    return false;
}

static PyObject *translate(PyThreadState *ts, st_py_iframe *fr, code_extra *x,
                           const st_fe_frame *f, const st_fe_options *o)
{
    PyCodeObject *co = fr->f_code;
    st_fe_break brk = {.reason = "", .filename = NULL, .lineno = 0};
    PyObject *result = NULL;
    tls.suspended++;
    st_fe_entry *e = st_fe_translate(f, o, &result, &brk);
    tls.suspended--;
    if (e && !result) {
        st_fe_entry_free(e);
        e = NULL;
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_SystemError, "symtrace: the translator made an entry for %U "
                         "but returned no result", co->co_qualname);
    }
    if (e) {
        cnode *n = calloc(1, sizeof *n);
        if (!n) {
            st_fe_entry_free(e);
            Py_XDECREF(result);
            st_fe_break_clear(&brk);
            return done(ts, fr, PyErr_NoMemory());
        }
        n->e = e;
        n->nfront = st_fe_guards_partition(&e->guards, &e->srcs);
        n->py_ret = tmpl_runs_python(e->ret);
        alias_groups(n, f);
        if (n->nfront < 0) n->nfront = e->guards.n;
        n->backend = o->backend;
        n->dynamic = o->dynamic;
        /* an automatic dynamic translation that came back static (the
         * static retry): later size misses are translated static at once */
        if (o->auto_dynamic && o->dynamic && e->cfn && !e->dyn) x->auto_static = true;
        n->next = x->entries;
        x->entries = n;
        x->n++;
        stats.translations++;
        if (e->cfn) stats.graphs++;
        /* "entry": guards without a graph (nothing computed) */
        record(e->cfn ? "graph" : "entry", co, NULL, NULL, 0, e);
        /* the translator logs the graph and its guards (SYMTRACE_LOG >= 2) */
        if (!e->brk_fn) {
            st_fe_break_clear(&brk);
            return done(ts, fr, result);
        }
        /* a partial graph: the break function performs the breaking
         * instruction and continues in a resume function (translated in
         * turn when it runs); result holds its arguments */
        stats.breaks++;
        stats.resumes++;
        record("break", co, brk.reason, brk.filename, brk.lineno, NULL);
        st_fe_break_clear(&brk);
        PyObject *fn = Py_NewRef(e->brk_fn);
        done(ts, fr, NULL);
        PyObject *r = st_fe_call_break(fn, result, co, f->closure);
        Py_DECREF(fn);
        Py_DECREF(result);
        return r;
    }
    Py_CLEAR(result);
    if (PyErr_Occurred()) {
        /* a fullgraph break raised, or the user's code raised */
        if (brk.reason[0]) {
            stats.breaks++;
            record("break", co, brk.reason, brk.filename, brk.lineno, NULL);
        }
        st_fe_break_clear(&brk);
        return done(ts, fr, NULL);
    }
    if (!brk.reason[0]) snprintf(brk.reason, sizeof brk.reason, "translation failed");
    stats.breaks++;
    record("break", co, brk.reason, brk.filename, brk.lineno, NULL);
    if (o->fullgraph) {
        PyErr_Format(PyExc_RuntimeError, "symtrace.compile(fullgraph=True): graph break in %U at %S:%d: %s",
                     co->co_qualname, brk.filename ? brk.filename : co->co_filename,
                     brk.filename ? brk.lineno : co->co_firstlineno, brk.reason);
        st_fe_break_clear(&brk);
        return done(ts, fr, NULL);
    }
    mark_plain(x, brk.reason);   /* the translator logged the break (SYMTRACE_LOG >= 1) */
    st_fe_break_clear(&brk);
    return ST_DEFAULT_EVAL(ts, fr, 0);
}

static PyObject *hook(PyThreadState *ts, struct _PyInterpreterFrame *pf, int throwflag)
{
    st_py_iframe *fr = st_py_iframe_of(pf);
    if (!tls.depth || tls.suspended || throwflag) return ST_DEFAULT_EVAL(ts, fr, throwflag);
    PyCodeObject *co = fr->f_code;
    PyObject *func = ST_IFRAME_FUNC(fr);
    if ((co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) ||
        !(co->co_flags & CO_OPTIMIZED) || fr->f_locals || !func || !PyFunction_Check(func) ||
        fr->owner != ST_FRAME_OWNED_BY_THREAD || fr->frame_obj)
        return ST_DEFAULT_EVAL(ts, fr, 0);
    code_extra *x = get_extra(co);
    if (!x || x->skip) return ST_DEFAULT_EVAL(ts, fr, 0);
    if (x->plain) {
        stats.fallbacks++;
        return ST_DEFAULT_EVAL(ts, fr, 0);
    }
    stats.frames++;
    const st_fe_options *o = cur_opts();
    st_fe_frame f = {
        .code = co, .func = func, .locals = fr->localsplus,
        .nlocals = co->co_nlocalsplus, .globals = fr->f_globals,
        .builtins = fr->f_builtins, .closure = PyFunction_GET_CLOSURE(func),
    };
    PyObject *res = NULL, *brk = NULL;
    uint64_t t0 = st_fe_timing ? st_fe_now_ns() : 0;
    tls.suspended++;              /* Python run by guards (properties, __eq__) runs plain */
    int r = try_entries(x, &f, o, &res, &brk);
    tls.suspended--;
    if (r < 0) return done(ts, fr, NULL);
    if (r == 1) {
        stats.hits++;
        res = done(ts, fr, res);
        if (brk) {
            /* a partial graph: continue after the break (res: the arguments) */
            PyObject *r2 = res ? st_fe_call_break(brk, res, co, f.closure) : NULL;
            Py_XDECREF(res);
            Py_DECREF(brk);
            res = r2;
        }
        if (st_fe_timing) {
            st_fe_timing_ns[0] += st_fe_now_ns() - t0;
            st_fe_timing_ns[2]++;
        }
        return res;
    }
    stats.misses++;
    if (x->n >= cache_limit) {
        char why[128];
        snprintf(why, sizeof why, "cache limit reached (%d compiled entries; "
                 "SYMTRACE_CACHE_LIMIT / symtrace.config.cache_limit)", cache_limit);
        mark_plain(x, why);
        stats.fallbacks++;
        log_line("running as plain Python", co, why);   /* always: compilation stops here */
        record("break", co, why, NULL, 0, NULL);
        return ST_DEFAULT_EVAL(ts, fr, 0);
    }
    st_fe_options oa;
    if (o->auto_dynamic && !o->dynamic && !x->auto_static && x->n > 0) {
        tls.suspended++;          /* Python run by guards runs plain */
        bool sized = size_miss(x, &f, o);
        tls.suspended--;
        if (sized) {
            if (o->log_level >= 1)
                log_line("translating with dynamic shapes", co, "tensor sizes changed");
            oa = *o;
            oa.dynamic = true;
            o = &oa;
        }
    }
    return translate(ts, fr, x, &f, o);
}

PyObject *st_fe_hook_stats(void)
{
    PyObject *per = PyDict_New();
    if (!per) return NULL;
    for (code_extra *x = registry; x; x = x->next) {
        if (!x->n && !x->plain) continue;
        PyObject *k = code_where(x->code);
        /* per entry, most recently hit first: hits, guards, of which always
         * checked (on non-static sources), graph inputs */
        PyObject *l = PyList_New(0);
        for (cnode *n = x->entries; l && n; n = n->next) {
            PyObject *d = Py_BuildValue("{s:K,s:i,s:i,s:i}", "hits", (unsigned long long)n->e->hits,
                                        "guards", n->e->guards.n, "checked_always", n->nfront,
                                        "inputs", n->e->ninputs);
            if (!d || PyList_Append(l, d) < 0) Py_CLEAR(l);
            Py_XDECREF(d);
        }
        PyObject *v = l ? Py_BuildValue("{s:i,s:O,s:O,s:N}", "entries", x->n, "plain",
                                        x->plain ? Py_True : Py_False,
                                        "reason", x->reason ? x->reason : Py_None, "detail", l)
                        : NULL;
        int rc = k && v ? PyDict_SetItem(per, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (rc < 0) { Py_DECREF(per); return NULL; }
    }
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:(KKK),s:N}", "instances",
                         (unsigned long long)st_fe_dyn_instances, "resumes",
                         (unsigned long long)stats.resumes, "graphs",
                         (unsigned long long)stats.graphs, "translations",
                         (unsigned long long)stats.translations, "hits",
                         (unsigned long long)stats.hits, "misses", (unsigned long long)stats.misses,
                         "breaks", (unsigned long long)stats.breaks, "fallbacks",
                         (unsigned long long)stats.fallbacks, "frames",
                         (unsigned long long)stats.frames, "timing_ns",
                         (unsigned long long)st_fe_timing_ns[0], (unsigned long long)st_fe_timing_ns[1],
                         (unsigned long long)st_fe_timing_ns[2], "codes", per);
}

int st_fe_hook_init(PyObject *rules)
{
    if (extra_index < 0) {
        extra_index = ST_REQUEST_CODE_EXTRA_INDEX(extra_free);
        if (extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "no code extra index left for symtrace");
            return -1;
        }
    }
    if (!rules) return 0;
    PyObject *l = PySequence_List(rules);
    if (!l) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(l); i++) {
        PyObject *r = PyList_GET_ITEM(l, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(r, 0))) {
            Py_DECREF(l);
            PyErr_SetString(PyExc_TypeError, "skip rules are (path prefix, bool) tuples");
            return -1;
        }
    }
    Py_XSETREF(skip_rules, l);
    /* codes already seen keep their old classification */
    for (code_extra *x = registry; x; x = x->next)
        x->skip = PyUnicode_Check(x->code->co_filename) && skipped_file(x->code->co_filename);
    return 0;
}

#else /* ---------------- unsupported interpreter: hook off ---------------- */
int st_fe_hook_supported(void) { return 0; }
int st_fe_hook_enter(const st_fe_options *o) { (void)o; return 0; }
void st_fe_hook_exit(void) {}
void st_fe_hook_reset(void) { memset(&stats, 0, sizeof stats); }
void st_fe_hook_mark_skip(PyCodeObject *co) { (void)co; }
void st_fe_hook_explain_begin(void) {}
PyObject *st_fe_hook_explain_end(void) { return PyList_New(0); }
PyObject *st_fe_hook_stats(void)
{
    (void)skip_rules;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:{}}", "instances", 0, "resumes", 0,
                         "graphs", 0,
                         "translations", 0, "hits", 0,
                         "misses", 0, "breaks", 0, "fallbacks", 0, "frames", 0, "codes");
}
int st_fe_hook_init(PyObject *rules) { (void)rules; return 0; }
#endif
