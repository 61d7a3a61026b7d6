/* frontend/compile_bind.c - the _C functions behind symtrace.compile,
 * explain and reset: the compiled-callable type (enter the hook, call the
 * function, leave; a descriptor, so decorated methods bind), reset, epochs,
 * statistics, explain recording, the frontend knobs (log, strict,
 * cache_limit), and _fe_GuardProbe, which lets tests drive sources and
 * guards on a function's arguments. */
#include "st_fe_hook.h"
#include "pyversion.h"
#include "st_backend.h"
#include "st_cuda.h"
#include "st_cudaemu.h"
#include "st_nvrtc.h"

#include <stdlib.h>
#include <string.h>
#include <structmember.h>

static int log_level, strict, partial = 1;

/* ---------------- the compiled callable ---------------- */
typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *dict;
    vectorcallfunc vc;
    const char *backend;      /* static string */
    bool fullgraph, dynamic;
    bool auto_dynamic;        /* dynamic=None: static first, sizes that change become symbols */
} compiled_obj;

static PyObject *compiled_vc(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    compiled_obj *c = (compiled_obj *)self;
    st_fe_options o = {.backend = c->backend, .fullgraph = c->fullgraph || strict,
                       .dynamic = c->dynamic, .auto_dynamic = c->auto_dynamic,
                       .log_level = log_level,
                       .no_partial = !partial};
    st_fe_hook_enter(&o);
    PyObject *r = PyObject_Vectorcall(c->fn, args, nargsf, kwnames);
    st_fe_hook_exit();
    return r;
}

static PyObject *compiled_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int compiled_traverse(PyObject *self, visitproc visit, void *arg)
{
    compiled_obj *c = (compiled_obj *)self;
    Py_VISIT(c->fn);
    Py_VISIT(c->dict);
    return 0;
}

static int compiled_clear(PyObject *self)
{
    compiled_obj *c = (compiled_obj *)self;
    Py_CLEAR(c->fn);
    Py_CLEAR(c->dict);
    return 0;
}

static void compiled_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    compiled_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *compiled_repr(PyObject *self)
{
    compiled_obj *c = (compiled_obj *)self;
    return PyUnicode_FromFormat("<symtrace compiled %R backend=%s>", c->fn, c->backend);
}

static PyObject *compiled_backend(PyObject *self, void *p)
{
    (void)p;
    return PyUnicode_FromString(((compiled_obj *)self)->backend);
}

static PyMemberDef compiled_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(compiled_obj, fn), READONLY, "the original callable"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef compiled_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"backend", compiled_backend, NULL, "the backend name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject compiled_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C.CompiledFunction",
    .tp_basicsize = sizeof(compiled_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A function run under symtrace's frame hook (symtrace.compile).",
    .tp_vectorcall_offset = offsetof(compiled_obj, vc),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = compiled_get,
    .tp_dictoffset = offsetof(compiled_obj, dict),
    .tp_traverse = compiled_traverse,
    .tp_clear = compiled_clear,
    .tp_dealloc = compiled_dealloc,
    .tp_repr = compiled_repr,
    .tp_members = compiled_members,
    .tp_getset = compiled_getset,
};

static const char *const backends[] = {"llvm", "nvrtc", "interp", "eager", "cudaemu", NULL};

/* _fe_compiled(fn, backend, fullgraph, dynamic, automatic): automatic (with
 * dynamic false) is torch's dynamic=None: a frame translated again because
 * only tensor sizes changed is translated with dynamic shapes */
static PyObject *f_compiled(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *fn;
    const char *backend;
    int fullgraph = 0, dynamic = 0, automatic = 0;
    if (!PyArg_ParseTuple(args, "Os|ppp:_fe_compiled", &fn, &backend, &fullgraph, &dynamic,
                          &automatic))
        return NULL;
    if (!PyCallable_Check(fn)) return PyErr_Format(PyExc_TypeError, "symtrace.compile: %R is not callable", fn);
    const char *b = NULL;
    for (int i = 0; backends[i]; i++)
        if (!strcmp(backends[i], backend)) b = backends[i];
    if (!b)
        return PyErr_Format(PyExc_ValueError,
                            "unknown backend '%s' (choices: llvm, nvrtc, interp, eager, cudaemu)",
                            backend);
    compiled_obj *c = PyObject_GC_New(compiled_obj, &compiled_type);
    if (!c) return NULL;
    c->fn = Py_NewRef(fn);
    c->dict = PyDict_New();
    c->vc = compiled_vc;
    c->backend = b;
    c->fullgraph = fullgraph;
    c->dynamic = dynamic;
    c->auto_dynamic = automatic && !dynamic;
    PyObject_GC_Track((PyObject *)c);
    if (!c->dict) { Py_DECREF(c); return NULL; }
    static const char *const fwd[] = {"__name__", "__qualname__", "__doc__", "__module__", NULL};
    for (int i = 0; fwd[i]; i++) {
        PyObject *v = PyObject_GetAttrString(fn, fwd[i]);
        if (!v) { PyErr_Clear(); continue; }
        int r = PyDict_SetItemString(c->dict, fwd[i], v);
        Py_DECREF(v);
        if (r < 0) { Py_DECREF(c); return NULL; }
    }
    return (PyObject *)c;
}

static PyObject *f_reset(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    st_fe_hook_reset();
    Py_RETURN_NONE;
}

static PyObject *f_bump_module(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    st_fe_module_epoch++;
    Py_RETURN_NONE;
}

static PyObject *f_bump_meta(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    st_fe_meta_epoch++;
    Py_RETURN_NONE;
}

static PyObject *f_epochs(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    return Py_BuildValue("(KK)", (unsigned long long)st_fe_module_epoch,
                         (unsigned long long)st_fe_meta_epoch);
}

static PyObject *f_supported(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    return PyBool_FromLong(st_fe_hook_supported());
}

static PyObject *f_backend_available(PyObject *m, PyObject *name)
{
    (void)m;
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return NULL;
    if (!strcmp(s, "eager")) Py_RETURN_TRUE;
    /* nvrtc registers itself on first use, where a GPU and NVRTC are there */
    if (!strcmp(s, "nvrtc") && !st_backend_get(s) && st_cuda_is_available() &&
        st_nvrtc_register() != ST_OK)
        st_err_clear();
    /* cudaemu (testing: CUDA C run on the CPU) where a C++ compiler runs */
    if (!strcmp(s, "cudaemu") && !st_backend_get(s) && st_cudaemu_register() != ST_OK)
        st_err_clear();
    return PyBool_FromLong(st_backend_get(s) != NULL);
}

/* _cudaemu_register(): registers "cudaemu", or raises naming what is missing */
static PyObject *f_cudaemu_register(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    if (st_cudaemu_register() != ST_OK)
        return st_fe_raise();
    Py_RETURN_NONE;
}

static PyObject *f_stats(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    return st_fe_hook_stats();
}

static PyObject *f_explain_begin(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    st_fe_hook_explain_begin();
    Py_RETURN_NONE;
}

static PyObject *f_explain_end(PyObject *m, PyObject *a)
{
    (void)m; (void)a;
    return st_fe_hook_explain_end();
}

static PyObject *f_set_classes(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *mod, *dev;
    if (!PyArg_ParseTuple(args, "O!O!:_fe_set_classes", &PyType_Type, &mod, &PyType_Type, &dev))
        return NULL;
    Py_XSETREF(st_fe_module_class, Py_NewRef(mod));
    Py_XSETREF(st_fe_device_class, Py_NewRef(dev));
    Py_RETURN_NONE;
}

static PyObject *f_set_skip_rules(PyObject *m, PyObject *rules)
{
    (void)m;
    if (st_fe_hook_init(rules) < 0) return NULL;
    Py_RETURN_NONE;
}

/* _fe_config() -> dict; _fe_config(name) -> int; _fe_config(name, int) */
static PyObject *f_config(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name = NULL;
    PyObject *val = NULL;
    if (!PyArg_ParseTuple(args, "|sO:_fe_config", &name, &val)) return NULL;
    if (!name)
        return Py_BuildValue("{s:i,s:i,s:i,s:i}", "log", log_level, "strict", strict,
                             "cache_limit", st_fe_hook_get_cache_limit(), "partial", partial);
    int which = !strcmp(name, "log") ? 0 : !strcmp(name, "strict") ? 1 :
                !strcmp(name, "cache_limit") ? 2 : !strcmp(name, "timing") ? 3 :
                !strcmp(name, "partial") ? 4 : -1;
    if (which < 0) return PyErr_Format(PyExc_AttributeError, "no frontend option '%s'", name);
    if (val) {
        long v = PyLong_AsLong(val);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (v < 0) return PyErr_Format(PyExc_ValueError, "symtrace.config.%s must be >= 0", name);
        if (which == 0) log_level = (int)v;
        else if (which == 1) strict = v != 0;
        else if (which == 2) st_fe_hook_set_cache_limit((int)v);
        else if (which == 4) partial = v != 0;
        else st_fe_timing = v != 0;
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(which == 0 ? log_level : which == 1 ? strict :
                           which == 2 ? st_fe_hook_get_cache_limit() : which == 4 ? partial :
                           st_fe_timing);
}

/* ---------------- _fe_GuardProbe: sources and guards from Python ----------
 * probe = _fe_GuardProbe(); s = probe.local(0, "x"); probe.attr(s, "w");
 * probe.guard(s, fn, args) adds the default guard for the value s has on
 * fn(*args); probe.add(kind, s, obj); probe.check(fn, args) -> bool;
 * probe.eval(s, fn, args); probe.repr(s); probe.describe(). */
typedef struct {
    PyObject_HEAD
    st_fe_srctab srcs;
    st_fe_guardset gs;
} probe_obj;

static PyObject *probe_new(PyTypeObject *tp, PyObject *a, PyObject *k)
{
    (void)a; (void)k;
    probe_obj *p = (probe_obj *)tp->tp_alloc(tp, 0);
    if (!p) return NULL;
    st_fe_srctab_init(&p->srcs);
    st_fe_guardset_init(&p->gs);
    return (PyObject *)p;
}

static void probe_dealloc(PyObject *self)
{
    probe_obj *p = (probe_obj *)self;
    st_fe_guardset_clear(&p->gs);
    st_fe_srctab_clear(&p->srcs);
    Py_TYPE(self)->tp_free(self);
}

static st_fe_src *probe_src(probe_obj *p, PyObject *id)
{
    long i = PyLong_AsLong(id);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= p->srcs.n) { PyErr_SetString(PyExc_IndexError, "no such source"); return NULL; }
    return p->srcs.v[i];
}

static PyObject *src_id(st_fe_src *s) { return s ? PyLong_FromLong(s->id) : NULL; }

static PyObject *probe_make(PyObject *self, PyObject *args)
{
    probe_obj *p = (probe_obj *)self;
    const char *kind;
    PyObject *a = NULL, *b = NULL, *c = NULL;
    if (!PyArg_ParseTuple(args, "s|OOO", &kind, &a, &b, &c)) return NULL;
    if (!strcmp(kind, "local") && b) return src_id(st_fe_src_local(&p->srcs, (int)PyLong_AsLong(a), b));
    if (!strcmp(kind, "closure") && b) return src_id(st_fe_src_closure(&p->srcs, (int)PyLong_AsLong(a), b));
    if (!strcmp(kind, "global") && a) return src_id(st_fe_src_global(&p->srcs, a));
    if (!strcmp(kind, "builtin") && a) return src_id(st_fe_src_builtin(&p->srcs, a));
    st_fe_src *base = a ? probe_src(p, a) : NULL;
    if (!base) return NULL;
    if (!strcmp(kind, "attr") && b) return src_id(st_fe_src_attr(&p->srcs, base, b));
    if (!strcmp(kind, "item") && b) return src_id(st_fe_src_item(&p->srcs, base, b));
    if (!strcmp(kind, "modpart") && c) return src_id(st_fe_src_modpart(&p->srcs, base, b, c));
    return PyErr_Format(PyExc_ValueError, "bad source spec '%s'", kind);
}

/* A frame view of fn called with positional args (no defaults). */
static int probe_frame(PyObject *fn, PyObject *args, st_fe_frame *f, PyObject ***locals)
{
    if (!PyFunction_Check(fn) || !PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "expected a function and a tuple of arguments");
        return -1;
    }
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
#if ST_FE_SUPPORTED
    int n = co->co_nlocalsplus;
#else
    int n = 0;
    PyErr_SetString(PyExc_NotImplementedError, "no frame views on this Python");
    return -1;
#endif
    PyObject **l = calloc((size_t)n + 1, sizeof *l);
    if (!l) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args) && i < n; i++) l[i] = PyTuple_GET_ITEM(args, i);
    f->code = co;
    f->func = fn;
    f->locals = l;
    f->nlocals = n;
    f->globals = PyFunction_GET_GLOBALS(fn);
    f->builtins = PyDict_GetItemString(f->globals, "__builtins__");
    if (f->builtins && PyModule_Check(f->builtins)) f->builtins = PyModule_GetDict(f->builtins);
    f->closure = PyFunction_GET_CLOSURE(fn);
    *locals = l;
    return 0;
}

static PyObject *probe_eval(PyObject *self, PyObject *args)
{
    probe_obj *p = (probe_obj *)self;
    PyObject *id, *fn, *fargs, **l;
    st_fe_frame f;
    if (!PyArg_ParseTuple(args, "OOO", &id, &fn, &fargs)) return NULL;
    st_fe_src *s = probe_src(p, id);
    if (!s || probe_frame(fn, fargs, &f, &l) < 0) return NULL;
    PyObject **memo = calloc((size_t)p->srcs.n + 1, sizeof *memo);
    PyObject *v = memo ? st_fe_src_eval(s, &f, memo) : PyErr_NoMemory();
    if (memo) st_fe_memo_clear(memo, p->srcs.n);
    free(memo);
    free(l);
    if (!v && !PyErr_Occurred()) return PyErr_Format(PyExc_LookupError, "source not found");
    return v;
}

static PyObject *probe_guard(PyObject *self, PyObject *args)
{
    probe_obj *p = (probe_obj *)self;
    PyObject *id, *fn, *fargs, **l;
    st_fe_frame f;
    if (!PyArg_ParseTuple(args, "OOO", &id, &fn, &fargs)) return NULL;
    st_fe_src *s = probe_src(p, id);
    if (!s || probe_frame(fn, fargs, &f, &l) < 0) return NULL;
    PyObject *v = st_fe_src_eval(s, &f, NULL);
    free(l);
    if (!v) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_LookupError, "source not found");
    int r = st_fe_guard_value(&p->gs, s, v);
    Py_DECREF(v);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *probe_add(PyObject *self, PyObject *args)
{
    probe_obj *p = (probe_obj *)self;
    const char *kind;
    PyObject *id, *obj = NULL;
    if (!PyArg_ParseTuple(args, "sO|O", &kind, &id, &obj)) return NULL;
    st_fe_src *s = probe_src(p, id);
    if (!s) return NULL;
    st_fe_guard_kind k = !strcmp(kind, "TYPE") ? ST_G_TYPE : !strcmp(kind, "ID") ? ST_G_ID :
                         !strcmp(kind, "EQ") ? ST_G_EQ : ST_G_ABSENT;
    if (st_fe_guard_add(&p->gs, k, s, obj) < 0) return NULL;
    Py_RETURN_NONE;
}

/* The global state a guard set failed on (no guard of its own). */
static PyObject *global_state_failed(const st_fe_guardset *gs)
{
    return PyUnicode_FromString(st_ad_grad_enabled() != gs->grad_mode ? "GRAD_MODE" : "AUTOCAST");
}

static PyObject *probe_check(PyObject *self, PyObject *args)
{
    probe_obj *p = (probe_obj *)self;
    PyObject *fn, *fargs, **l;
    st_fe_frame f;
    if (!PyArg_ParseTuple(args, "OO", &fn, &fargs)) return NULL;
    if (probe_frame(fn, fargs, &f, &l) < 0) return NULL;
    PyObject **memo = calloc((size_t)p->srcs.n + 1, sizeof *memo);
    const st_fe_guard *failed = NULL;
    int r = memo ? st_fe_guards_check(&p->gs, &f, memo, &failed) : (PyErr_NoMemory(), -1);
    if (memo) st_fe_memo_clear(memo, p->srcs.n);
    free(memo);
    free(l);
    if (r < 0) return NULL;
    if (r) Py_RETURN_TRUE;
    if (!failed) return global_state_failed(&p->gs);
    return st_fe_src_repr(failed->src);   /* the failing guard's source */
}

static PyObject *probe_repr(PyObject *self, PyObject *id)
{
    st_fe_src *s = probe_src((probe_obj *)self, id);
    return s ? st_fe_src_repr(s) : NULL;
}

static PyObject *probe_is_static(PyObject *self, PyObject *id)
{
    st_fe_src *s = probe_src((probe_obj *)self, id);
    return s ? PyBool_FromLong(s->is_static) : NULL;
}

static PyObject *probe_partition(PyObject *self, PyObject *a)
{
    (void)a;
    probe_obj *p = (probe_obj *)self;
    int k = st_fe_guards_partition(&p->gs, &p->srcs);
    return k < 0 ? PyErr_NoMemory() : PyLong_FromLong(k);
}

static PyObject *probe_check_front(PyObject *self, PyObject *args)
{
    probe_obj *p = (probe_obj *)self;
    PyObject *fn, *fargs, **l;
    int nfront;
    st_fe_frame f;
    if (!PyArg_ParseTuple(args, "OOi", &fn, &fargs, &nfront)) return NULL;
    if (probe_frame(fn, fargs, &f, &l) < 0) return NULL;
    PyObject **memo = calloc((size_t)p->srcs.n + 1, sizeof *memo);
    const st_fe_guard *failed = NULL;
    int r = memo ? st_fe_guards_check_front(&p->gs, &f, memo, &failed, nfront, -1) : (PyErr_NoMemory(), -1);
    if (memo) st_fe_memo_clear(memo, p->srcs.n);
    free(memo);
    free(l);
    if (r < 0) return NULL;
    if (r) Py_RETURN_TRUE;
    if (!failed) return global_state_failed(&p->gs);
    return st_fe_src_repr(failed->src);
}

static PyObject *probe_describe(PyObject *self, PyObject *a)
{
    (void)a;
    return st_fe_guards_describe(&((probe_obj *)self)->gs);
}

static PyObject *probe_len(PyObject *self, PyObject *a)
{
    (void)a;
    probe_obj *p = (probe_obj *)self;
    return Py_BuildValue("(ii)", p->srcs.n, p->gs.n);
}

static PyMethodDef probe_methods[] = {
    {"src", probe_make, METH_VARARGS, "src(kind, ...) -> source id"},
    {"eval", probe_eval, METH_VARARGS, "eval(id, fn, args)"},
    {"guard", probe_guard, METH_VARARGS, "guard(id, fn, args): default guard"},
    {"add", probe_add, METH_VARARGS, "add(kind, id[, obj])"},
    {"check", probe_check, METH_VARARGS, "check(fn, args) -> True or the failing source"},
    {"repr", probe_repr, METH_O, NULL},
    {"is_static", probe_is_static, METH_O, NULL},
    {"describe", probe_describe, METH_NOARGS, NULL},
    {"partition", probe_partition, METH_NOARGS, "decide static sources; -> guards checked always"},
    {"check_front", probe_check_front, METH_VARARGS, "check_front(fn, args, nfront)"},
    {"sizes", probe_len, METH_NOARGS, "(sources, guards)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject probe_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace._C._fe_GuardProbe",
    .tp_basicsize = sizeof(probe_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "test access to the frontend's sources and guards",
    .tp_new = probe_new,
    .tp_dealloc = probe_dealloc,
    .tp_methods = probe_methods,
};

/* _rt_profile(enable=None) -> rows [(kernel, kind, points, calls, ns)], most
 * time first; with an argument, also turns the kernel profiler on or off. */
static PyObject *f_rt_profile(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *on = Py_None;
    if (!PyArg_ParseTuple(args, "|O:_rt_profile", &on)) return NULL;
    if (on != Py_None) {
        int v = PyObject_IsTrue(on);
        if (v < 0) return NULL;
        st_rt_profile_enable(v);
    }
    int n = st_rt_profile_get(NULL, 0);
    st_rt_profile_row *rows = n ? PyMem_Malloc(sizeof *rows * (size_t)n) : NULL;
    if (n && !rows) return PyErr_NoMemory();
    n = n ? st_rt_profile_get(rows, n) : 0;
    static const char *kinds[] = {"elementwise", "reduce", "matmul", "view"};
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < n; i++) {
        const char *kd = rows[i].kind >= 0 && rows[i].kind < 4 ? kinds[rows[i].kind] : "other";
        PyObject *r = Py_BuildValue("(ssLLL)", rows[i].name, kd, (long long)rows[i].points,
                                    (long long)rows[i].calls, (long long)rows[i].ns);
        if (!r || PyList_Append(out, r)) Py_CLEAR(out);
        Py_XDECREF(r);
    }
    PyMem_Free(rows);
    return out;
}

static PyObject *f_rt_profile_reset(PyObject *self, PyObject *a)
{
    (void)self;
    (void)a;
    st_rt_profile_reset();
    Py_RETURN_NONE;
}

/* _fe_suspend(delta) -> depth: symtrace.compiler.disable's bracket */
static PyObject *f_suspend(PyObject *m, PyObject *arg)
{
    (void)m;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
#if ST_FE_SUPPORTED
    return PyLong_FromLong(st_fe_hook_suspend((int)d));
#else
    return PyLong_FromLong(0);
#endif
}

static PyMethodDef compile_methods[] = {
    {"_fe_suspend", f_suspend, METH_O, "_fe_suspend(delta): frames run plain on this thread while > 0"},
    {"_fe_compiled", f_compiled, METH_VARARGS, "_fe_compiled(fn, backend, fullgraph, dynamic, automatic)"},
    {"_fe_reset", f_reset, METH_NOARGS, "drop every compiled entry and plain mark"},
    {"_fe_bump_module_epoch", f_bump_module, METH_NOARGS, NULL},
    {"_fe_bump_meta_epoch", f_bump_meta, METH_NOARGS, NULL},
    {"_fe_epochs", f_epochs, METH_NOARGS, "(module_epoch, meta_epoch)"},
    {"_fe_supported", f_supported, METH_NOARGS, "is the frame hook available"},
    {"_fe_backend_available", f_backend_available, METH_O, "is this backend in the build"},
    {"_cudaemu_register", f_cudaemu_register, METH_NOARGS,
     "register the cudaemu testing backend (raises when no C++ compiler runs)"},
    {"_fe_stats", f_stats, METH_NOARGS, NULL},
    {"_rt_profile", f_rt_profile, METH_VARARGS, "_rt_profile(enable=None) -> kernel rows"},
    {"_rt_profile_reset", f_rt_profile_reset, METH_NOARGS, "clear the kernel profile"},
    {"_fe_explain_begin", f_explain_begin, METH_NOARGS, NULL},
    {"_fe_explain_end", f_explain_end, METH_NOARGS, NULL},
    {"_fe_set_classes", f_set_classes, METH_VARARGS, "_fe_set_classes(Module, device)"},
    {"_fe_set_skip_rules", f_set_skip_rules, METH_O, "list of (path prefix, skip)"},
    {"_fe_config", f_config, METH_VARARGS, "_fe_config([name[, value]])"},
    {NULL, NULL, 0, NULL},
};

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 0 ? dflt : (int)v;
}

int st_fe_init_compile(PyObject *m)
{
    log_level = env_int("SYMTRACE_LOG", 0);
    partial = env_int("SYMTRACE_PARTIAL", 1) != 0;
    strict = env_int("SYMTRACE_STRICT", 0) != 0;
    st_fe_hook_set_cache_limit(env_int("SYMTRACE_CACHE_LIMIT", 64));
    if (st_fe_hook_init(NULL) < 0) return -1;
    if (PyType_Ready(&compiled_type) < 0 || PyType_Ready(&probe_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "CompiledFunction", (PyObject *)&compiled_type) < 0 ||
        PyModule_AddObjectRef(m, "_fe_GuardProbe", (PyObject *)&probe_type) < 0)
        return -1;
    return PyModule_AddFunctions(m, compile_methods);
}
