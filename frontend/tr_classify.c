/* frontend/tr_classify.c - what the translator knows about objects:
 * symtrace's own classes and folders (looked up once), which values
 * operators may run on for real, MRO lookups, and CPython's argument
 * binding of a call to a Python function. */
#include "tr_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tr_refs tr_refs;
/* symtrace.layout and symtrace.memory_format: singletons compared by identity */
static PyObject *layout_cls, *memfmt_cls;

static PyObject *import_attr(const char *mod, const char *attr)
{
    PyObject *m = PyImport_ImportModule(mod);
    if (!m)
        return NULL;
    if (!attr)
        return m;
    PyObject *a = PyObject_GetAttrString(m, attr);
    Py_DECREF(m);
    return a;
}

int tr_calls_init(void)
{
    PyObject *st = PyImport_ImportModule("symtrace");
    if (!st)
        return -1;
    PyObject *file = PyObject_GetAttrString(st, "__file__");
    Py_DECREF(st);
    if (!file)
        return -1;
    PyObject *os_path = import_attr("os.path", "dirname");
    PyObject *dir = os_path ? PyObject_CallOneArg(os_path, file) : NULL;
    Py_XDECREF(os_path);
    Py_DECREF(file);
    if (!dir)
        return -1;
    tr_refs.pkg_dir = PyUnicode_FromFormat("%U/", dir);
    tr_refs.mod_dir = PyUnicode_FromFormat("%U/nn/modules/", dir);
    tr_refs.nn_utils = PyUnicode_FromFormat("%U/nn/utils", dir);
    Py_DECREF(dir);
    tr_refs.c_module = import_attr("symtrace._C", NULL);
    tr_refs.builtins_mod = import_attr("builtins", NULL);
    tr_refs.math_mod = import_attr("math", NULL);
    tr_refs.operator_mod = import_attr("operator", NULL);
    tr_refs.op_mod2 = import_attr("_operator", NULL);
    tr_refs.nn_module_cls = import_attr("symtrace.nn", "Module");
    tr_refs.function_cls = import_attr("symtrace.autograd.function", "Function");
    tr_refs.gradmode_cls = import_attr("symtrace.autograd.grad_mode", "_GradMode");
    tr_refs.autocast_cls = import_attr("symtrace.amp.autocast_mode", "autocast");
    tr_refs.recfn_cls = import_attr("symtrace.profiler", "record_function");
    tr_refs.mode_snapshot = import_attr("symtrace.autograd.grad_mode", "_mode_snapshot");
    tr_refs.mode_restore = import_attr("symtrace.autograd.grad_mode", "_mode_restore");
    tr_refs.dtype_cls = import_attr("symtrace", "dtype");
    tr_refs.device_cls = import_attr("symtrace", "device");
    layout_cls = import_attr("symtrace._layout", "layout");
    memfmt_cls = import_attr("symtrace._memory_format", "memory_format");
    tr_refs.modlist_cls = import_attr("symtrace.nn", "ModuleList");
    tr_refs.seq_cls = import_attr("symtrace.nn", "Sequential");
    tr_refs.moddict_cls = import_attr("symtrace.nn", "ModuleDict");
    tr_refs.is_compiling_fn = import_attr("symtrace.compiler", "is_compiling");
    if (!tr_refs.pkg_dir || !tr_refs.mod_dir || !tr_refs.nn_utils || !tr_refs.c_module || !tr_refs.builtins_mod || !tr_refs.math_mod ||
        !tr_refs.operator_mod || !tr_refs.op_mod2 || !tr_refs.nn_module_cls || !tr_refs.function_cls ||
        !tr_refs.gradmode_cls || !tr_refs.autocast_cls || !tr_refs.recfn_cls || !tr_refs.mode_snapshot || !tr_refs.mode_restore || !tr_refs.dtype_cls || !tr_refs.device_cls || !layout_cls || !memfmt_cls || !tr_refs.modlist_cls || !tr_refs.seq_cls ||
        !tr_refs.moddict_cls || !tr_refs.is_compiling_fn)
        return -1;
    return 0;
}

/* ---------------- classification ---------------- */
static bool is_format_obj(PyObject *o)
{
    return (PyObject *)Py_TYPE(o) == layout_cls || (PyObject *)Py_TYPE(o) == memfmt_cls;
}

bool tr_safe_type(PyObject *o)
{
    if (!o)
        return false;
    if (st_fe_is_tensor(o) || o == Py_None || o == Py_Ellipsis || o == Py_NotImplemented)
        return true;
    if (tr_is_symint(o) || tr_is_lazy(o))
        return true;
    PyTypeObject *t = Py_TYPE(o);
    if (PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) ||
        PyComplex_CheckExact(o) || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) ||
        PyList_CheckExact(o) || PyDict_CheckExact(o) || PyAnySet_CheckExact(o) ||
        PySlice_Check(o) || PyRange_Check(o) || PyType_Check(o))
        return true;
    if (PyTuple_Check(o))     /* tuples, Sizes and namedtuples (no own dunders) */
        return st_fe_tuple_like(o) || PyObject_HasAttrString((PyObject *)t, "_fields");
    if (PyDict_Check(o))      /* OrderedDict */
        return !strcmp(t->tp_name, "collections.OrderedDict");
    if ((PyObject *)t == tr_refs.dtype_cls || (PyObject *)t == tr_refs.device_cls ||
        is_format_obj(o))
        return true;
    if (!strcmp(t->tp_name, "dict_keys") || !strcmp(t->tp_name, "dict_values") ||
        !strcmp(t->tp_name, "dict_items") || !strcmp(t->tp_name, "odict_keys") ||
        !strcmp(t->tp_name, "odict_values") || !strcmp(t->tp_name, "odict_items"))
        return true;
    return false;
}

bool tr_is_const_value(PyObject *o)
{
    return o == Py_None || o == Py_Ellipsis || PyLong_CheckExact(o) || PyBool_Check(o) ||
           PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) ||
           PyComplex_CheckExact(o) || PySlice_Check(o) || PyRange_Check(o) || PyType_Check(o) ||
           (PyObject *)Py_TYPE(o) == tr_refs.dtype_cls || (PyObject *)Py_TYPE(o) == tr_refs.device_cls ||
           is_format_obj(o) || PyFrozenSet_CheckExact(o);
}

bool tr_is_symtrace_module(PyObject *o)
{
    return o && PyObject_TypeCheck(o, (PyTypeObject *)tr_refs.nn_module_cls);
}

/* the context managers a with statement may enter inside a graph: they
 * set a global mode (grad, autocast) that the guards check */
/* context managers a graph may span: grad and autocast modes (entered and
 * left while tracing, their state a guard), and profiler labels
 * (record_function: its range is recorded when the graph is traced, not
 * on its replays) */
bool tr_is_mode_ctx(PyObject *o)
{
    return o && (PyObject_TypeCheck(o, (PyTypeObject *)tr_refs.gradmode_cls) ||
                 PyObject_TypeCheck(o, (PyTypeObject *)tr_refs.autocast_cls) ||
                 PyObject_TypeCheck(o, (PyTypeObject *)tr_refs.recfn_cls));
}

static bool str_startswith(PyObject *s, PyObject *prefix)
{
    return s && PyUnicode_Check(s) &&
           PyUnicode_Tailmatch(s, prefix, 0, PY_SSIZE_T_MAX, -1) == 1;
}

/* 0 user code, 1 symtrace (real), 2 symtrace/nn/modules and nn/utils
 * (inline: layers, and gradient clipping, which reads each parameter's
 * .grad, a read that must have a source so that it is a graph input) */
int tr_fn_origin(PyObject *fn)
{
    PyObject *file = ((PyCodeObject *)PyFunction_GET_CODE(fn))->co_filename;
    if (str_startswith(file, tr_refs.mod_dir) || str_startswith(file, tr_refs.nn_utils))
        return 2;
    if (str_startswith(file, tr_refs.pkg_dir))
        return 1;
    return 0;
}

const char *tr_qualname(PyObject *o, char *buf, size_t n)
{
    PyObject *et, *ev, *etb;     /* a pending exception is kept */
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *q = PyObject_GetAttrString(o, "__qualname__");
    if (!q) {
        PyErr_Clear();
        q = PyObject_GetAttrString(o, "__name__");
    }
    const char *s = q && PyUnicode_Check(q) ? PyUnicode_AsUTF8(q) : NULL;
    snprintf(buf, n, "%s", s ? s : Py_TYPE(o)->tp_name);
    Py_XDECREF(q);
    PyErr_Clear();
    PyErr_Restore(et, ev, etb);
    return buf;
}

bool tr_module_starts(PyObject *o, const char *prefix)
{
    PyObject *m = PyObject_GetAttrString(o, "__module__");
    if (!m) {
        PyErr_Clear();
        return false;
    }
    const char *s = PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
    bool r = s && !strncmp(s, prefix, strlen(prefix));
    Py_DECREF(m);
    return r;
}

/* Looks name up along type t's MRO (borrowed; NULL if absent). */
PyObject *tr_mro_lookup(PyTypeObject *t, PyObject *name, PyObject *after)
{
    PyObject *mro = t->tp_mro;
    if (!mro)
        return NULL;
    Py_ssize_t i = 0, n = PyTuple_GET_SIZE(mro);
    if (after) {
        for (; i < n; i++)
            if (PyTuple_GET_ITEM(mro, i) == after) {
                i++;
                break;
            }
    }
    for (; i < n; i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
#if ST_PY312
        /* static builtin types keep their dict in the interpreter */
        PyObject *d = PyType_GetDict(b);
#else
        PyObject *d = Py_XNewRef(b->tp_dict);
#endif
        PyObject *v = d ? PyDict_GetItemWithError(d, name) : NULL;
        Py_XDECREF(d);   /* the type's dict keeps v alive */
        if (v)
            return v;
        PyErr_Clear();
    }
    return NULL;
}

/* ---------------- argument binding ---------------- */
int tr_bind_args(PyObject *fn, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames, PyObject **locals, int nlocals)
{
    (void)nlocals;
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    int argc = co->co_argcount, kwonly = co->co_kwonlyargcount;
    int posonly = co->co_posonlyargcount, total = argc + kwonly;
    bool has_va = co->co_flags & CO_VARARGS, has_kw = co->co_flags & CO_VARKEYWORDS;
    int va_slot = total, kw_slot = total + (has_va ? 1 : 0);
    PyObject *names = co->co_localsplusnames;
    const char *fname = PyUnicode_AsUTF8(co->co_qualname);
    PyObject *kwd = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (has_kw) {
        kwd = PyDict_New();
        if (!kwd)
            return -1;
        locals[kw_slot] = kwd;
    }
    Py_ssize_t np = nargs < argc ? nargs : argc;
    for (Py_ssize_t i = 0; i < np; i++)
        locals[i] = Py_NewRef(args[i]);
    if (has_va) {
        PyObject *t = PyTuple_New(nargs > argc ? nargs - argc : 0);
        if (!t)
            return -1;
        for (Py_ssize_t i = argc; i < nargs; i++)
            PyTuple_SET_ITEM(t, i - argc, Py_NewRef(args[i]));
        locals[va_slot] = t;
    } else if (nargs > argc) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments but %zd were given",
                     fname, argc, nargs);
        return -1;
    }
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j), *val = args[nargs + j];
        int slot = -1;
        for (int i = posonly; i < total; i++) {
            int eq = PyUnicode_Compare(PyTuple_GET_ITEM(names, i), key) == 0;
            if (eq) {
                slot = i;
                break;
            }
        }
        if (slot >= 0) {
            if (locals[slot]) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'",
                             fname, key);
                return -1;
            }
            locals[slot] = Py_NewRef(val);
        } else if (kwd) {
            if (PyDict_SetItem(kwd, key, val) < 0)
                return -1;
        } else {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         fname, key);
            return -1;
        }
    }
    PyObject *defs = PyFunction_GetDefaults(fn);
    Py_ssize_t ndef = defs ? PyTuple_GET_SIZE(defs) : 0;
    for (int i = 0; i < argc; i++) {
        if (locals[i])
            continue;
        Py_ssize_t d = i - (argc - ndef);
        if (d < 0) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%U'",
                         fname, PyTuple_GET_ITEM(names, i));
            return -1;
        }
        locals[i] = Py_NewRef(PyTuple_GET_ITEM(defs, d));
    }
    PyObject *kwdefs = PyFunction_GetKwDefaults(fn);
    for (int i = argc; i < total; i++) {
        if (locals[i])
            continue;
        PyObject *v = kwdefs ? PyDict_GetItemWithError(kwdefs, PyTuple_GET_ITEM(names, i)) : NULL;
        if (!v) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s() missing required keyword-only argument '%U'",
                             fname, PyTuple_GET_ITEM(names, i));
            return -1;
        }
        locals[i] = Py_NewRef(v);
    }
    return 0;
}

