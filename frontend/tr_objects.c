/* frontend/tr_objects.c - instances of plain user classes made in the
 * frame (HuggingFace's ModelOutput: a @dataclass that subclasses dict or
 * OrderedDict): which classes the translator builds itself, their Python
 * dunders (__setattr__, __setitem__, __getitem__) inlined, their C dict
 * methods run for real, and how the entry rebuilds one on every call (the
 * ST_T_OBJECT template: entry.c). Also exceptions made in the frame that
 * are returned, stored or live at a break: rebuilt the same way, with
 * their args, __cause__, __context__ and __suppress_context__. */
#include "tr_internal.h"

#include <string.h>

/* A class whose instances the translator may make and the entry may
 * rebuild: a heap type of metaclass type, with object's or dict's
 * tp_new (no Python __new__), instances with a __dict__ and no slots of
 * their own, and no C base other than object, dict and OrderedDict. */
bool tr_plain_user_type(PyTypeObject *t)
{
    if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || Py_TYPE(t) != &PyType_Type || t->tp_itemsize)
        return false;
    if (t->tp_new != PyBaseObject_Type.tp_new && t->tp_new != PyDict_Type.tp_new)
        return false;
    if (!t->tp_dictoffset && !(t->tp_flags & Py_TPFLAGS_MANAGED_DICT))
        return false;
    PyObject *mro = t->tp_mro;
    if (!mro)
        return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (b->tp_flags & Py_TPFLAGS_HEAPTYPE) {
            if (b->tp_dict && PyDict_GetItemString(b->tp_dict, "__slots__"))
                return false;
            if (Py_TYPE(b) != &PyType_Type)
                return false;
            continue;
        }
        if (b != &PyBaseObject_Type && b != &PyDict_Type && strcmp(b->tp_name, "collections.OrderedDict"))
            return false;
    }
    return true;
}

/* o is an instance of a plain user class made in this frame. */
bool tr_fresh_user_obj(tr_state *s, PyObject *o)
{
    return o && !PyType_Check(o) && !st_fe_is_tensor(o) && tr_plain_user_type(Py_TYPE(o)) &&
           !tr_is_symtrace_module(o) && tr_is_fresh(s, o);
}

/* type(o).name when it is a Python function (borrowed), else NULL. */
PyObject *tr_py_dunder(PyObject *o, const char *name)
{
    PyTypeObject *t = Py_TYPE(o);
    if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE))
        return NULL;
    PyObject *n = PyUnicode_InternFromString(name);
    PyObject *f = n ? tr_mro_lookup(t, n, NULL) : NULL;
    Py_XDECREF(n);
    PyErr_Clear();
    return f && PyFunction_Check(f) ? f : NULL;
}

/* Calls the Python function fn(o, args...), inlined; the result in out. */
int tr_call_dunder(tr_state *s, PyObject *fn, tr_var *o, tr_var *args, int nargs, tr_var *out)
{
    tr_var all[4] = {{0}};
    if (nargs > 3)
        return tr_break(s, "too many arguments");
    tr_var_copy(&all[0], o);
    for (int i = 0; i < nargs; i++)
        tr_var_copy(&all[i + 1], &args[i]);
    tr_var fv = {0};
    fv.v = Py_NewRef(fn);
    int rc = tr_call(s, &fv, all, nargs + 1, NULL, out);
    tr_var_clear(&fv);
    for (int i = 0; i <= nargs; i++)
        tr_var_clear(&all[i]);
    return rc;
}

/* A user dict subclass's items as its C base (dict or OrderedDict: its
 * own order) lists them, whatever items() the class defines: new list. */
static PyObject *c_items(PyObject *v)
{
    PyObject *mro = Py_TYPE(v)->tp_mro;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (b->tp_flags & Py_TPFLAGS_HEAPTYPE)
            continue;
        /* dict's or OrderedDict's (3.12 keeps a static type's dict off tp_dict) */
        PyObject *m = PyObject_GetAttrString((PyObject *)b, "items");
        PyObject *view = m ? PyObject_CallOneArg(m, v) : NULL;
        Py_XDECREF(m);
        PyObject *l = view ? PySequence_List(view) : NULL;
        Py_XDECREF(view);
        if (!l && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "no C items()");
        return l;
    }
    PyErr_SetString(PyExc_TypeError, "not a dict subclass");
    return NULL;
}

/* The template of a fresh user object: obj = (type, item keys, attribute
 * names), items = the item values then the attribute values. */
int tr_obj_tmpl_parts(PyObject *v, PyObject **spec, PyObject **vals)
{
    *spec = *vals = NULL;
    PyObject *d = PyObject_GenericGetDict(v, NULL);
    if (!d)
        return -1;
    Py_ssize_t ni = PyDict_Check(v) ? PyDict_Size(v) : 0, na = PyDict_GET_SIZE(d);
    PyObject *keys = PyTuple_New(ni), *names = PyTuple_New(na), *vs = PyTuple_New(ni + na);
    PyObject *items = ni ? c_items(v) : NULL;
    int rc = keys && names && vs && (!ni || (items && PyList_GET_SIZE(items) == ni)) ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < ni; i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        PyTuple_SET_ITEM(keys, i, Py_NewRef(PyTuple_GET_ITEM(kv, 0)));
        PyTuple_SET_ITEM(vs, i, Py_NewRef(PyTuple_GET_ITEM(kv, 1)));
    }
    Py_ssize_t pos = 0, j = 0;
    PyObject *k, *val;
    while (rc == 0 && PyDict_Next(d, &pos, &k, &val)) {
        PyTuple_SET_ITEM(names, j, Py_NewRef(k));
        PyTuple_SET_ITEM(vs, ni + j, Py_NewRef(val));
        j++;
    }
    Py_XDECREF(items);
    Py_DECREF(d);
    if (rc == 0 && !(*spec = PyTuple_Pack(3, (PyObject *)Py_TYPE(v), keys, names)))
        rc = -1;
    Py_XDECREF(keys);
    Py_XDECREF(names);
    if (rc == 0)
        *vals = vs;
    else
        Py_XDECREF(vs);
    return rc;
}

/* An exception instance made in the frame that the entry can rebuild:
 * BaseException's tp_new and instance layout (no C fields of OSError,
 * StopIteration, AttributeError...), no slots, metaclass type and no hook
 * (__setattr__, __del__, ...) in the Python classes of its MRO. */
bool tr_exc_rebuildable(tr_state *s, PyObject *v)
{
    return v && PyExceptionInstance_Check(v) && tr_is_fresh(s, v) &&
           tr_exc_class_rebuildable(Py_TYPE(v));
}

/* The C fields of StopIteration and OSError (and their subclasses), which
 * the entry sets on the rebuilt exception after its args: a tuple of
 * names (borrowed), or NULL for a class without such fields. */
PyObject *tr_exc_cfields(PyTypeObject *t)
{
    static PyObject *stop, *os;
    if (!stop) {
        stop = Py_BuildValue("(s)", "value");
        os = Py_BuildValue("(ssss)", "errno", "strerror", "filename", "filename2");
        if (!stop || !os) {
            PyErr_Clear();
            Py_CLEAR(stop);
            return NULL;
        }
    }
    if (PyType_IsSubtype(t, (PyTypeObject *)PyExc_StopIteration))
        return stop;
    if (PyType_IsSubtype(t, (PyTypeObject *)PyExc_OSError))
        return os;
    return NULL;
}

bool tr_exc_class_rebuildable(PyTypeObject *t)
{
    PyTypeObject *base = (PyTypeObject *)PyExc_BaseException;
    if (!PyExceptionClass_Check((PyObject *)t) || !t->tp_mro)
        return false;
    /* StopIteration's and OSError's own layouts: their fields are rebuilt */
    PyTypeObject *cbase = PyType_IsSubtype(t, (PyTypeObject *)PyExc_StopIteration)
                              ? (PyTypeObject *)PyExc_StopIteration
                          : PyType_IsSubtype(t, (PyTypeObject *)PyExc_OSError)
                              ? (PyTypeObject *)PyExc_OSError : base;
    if (t->tp_new != cbase->tp_new || t->tp_dictoffset != cbase->tp_dictoffset)
        return false;
    static const char *const hooks[] = {"__slots__", "__setattr__", "__getattr__",
                                        "__getattribute__", "__delattr__", "__del__", NULL};
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t->tp_mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(t->tp_mro, i);
        if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE) && PyExceptionClass_Check((PyObject *)b) &&
            b->tp_basicsize != base->tp_basicsize && b->tp_basicsize != cbase->tp_basicsize)
            return false;
    }
    return tr_heap_mro_plain(t, hooks);
}

/* Every Python class in t's MRO has metaclass type and defines none of
 * hooks (NULL-terminated) in its own dict. */
bool tr_heap_mro_plain(PyTypeObject *t, const char *const *hooks)
{
    for (Py_ssize_t i = 0; t->tp_mro && i < PyTuple_GET_SIZE(t->tp_mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(t->tp_mro, i);
        if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE))
            continue;
        if (Py_TYPE(b) != &PyType_Type || !b->tp_dict)
            return false;
        for (int k = 0; hooks[k]; k++)
            if (PyDict_GetItemString(b->tp_dict, hooks[k]))
                return false;
    }
    return true;
}

/* A traceback's entries as (code, globals, tb_lasti, tb_lineno), outermost
 * first (tr_except.c's stand-in frames): a new tuple. */
static PyObject *tb_spec(PyObject *tb)
{
    PyObject *l = PyList_New(0);
    for (; l && tb && PyTraceBack_Check(tb); tb = (PyObject *)((PyTracebackObject *)tb)->tb_next) {
        PyTracebackObject *t = (PyTracebackObject *)tb;
        PyCodeObject *co = PyFrame_GetCode(t->tb_frame);
        PyObject *g = PyObject_GetAttrString((PyObject *)t->tb_frame, "f_globals");
        PyObject *e = co && g ? Py_BuildValue("(OOii)", co, g, t->tb_lasti, t->tb_lineno) : NULL;
        Py_XDECREF(co);
        Py_XDECREF(g);
        if (!e || PyList_Append(l, e) < 0)
            Py_CLEAR(l);
        Py_XDECREF(e);
    }
    PyObject *r = l ? PyList_AsTuple(l) : NULL;
    Py_XDECREF(l);
    return r;
}

/* The template of such an exception: obj = (type, (), attribute names,
 * __suppress_context__, C field names, traceback entries: tb_spec),
 * items = the attribute values, then args, __cause__ and __context__
 * (None when unset), then the C fields' values (tr_exc_cfields). */
int tr_exc_tmpl_parts(PyObject *v, PyObject **spec, PyObject **vals)
{
    PyObject *ospec, *ovals;
    *spec = *vals = NULL;
    if (tr_obj_tmpl_parts(v, &ospec, &ovals) < 0)
        return -1;
    PyBaseExceptionObject *e = (PyBaseExceptionObject *)v;
    Py_ssize_t n = PyTuple_GET_SIZE(ovals);
    PyObject *cf = tr_exc_cfields(Py_TYPE(v)), *empty = PyTuple_New(0);
    Py_ssize_t ncf = cf ? PyTuple_GET_SIZE(cf) : 0;
    PyObject *vs = empty ? PyTuple_New(n + 3 + ncf) : NULL;
    for (Py_ssize_t i = 0; vs && i < ncf; i++) {
        PyObject *fv = PyObject_GetAttr(v, PyTuple_GET_ITEM(cf, i));
        if (!fv)
            Py_CLEAR(vs);
        else
            PyTuple_SET_ITEM(vs, n + 3 + i, fv);
    }
    PyObject *tbs = vs ? tb_spec(e->traceback) : NULL;
    PyObject *sp = tbs ? PyTuple_Pack(6, PyTuple_GET_ITEM(ospec, 0), PyTuple_GET_ITEM(ospec, 1),
                                      PyTuple_GET_ITEM(ospec, 2),
                                      e->suppress_context ? Py_True : Py_False,
                                      cf ? cf : empty, tbs) : NULL;
    Py_XDECREF(tbs);
    Py_XDECREF(empty);
    Py_DECREF(ospec);
    if (!sp) {
        Py_XDECREF(vs);
        Py_DECREF(ovals);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(vs, i, Py_NewRef(PyTuple_GET_ITEM(ovals, i)));
    Py_DECREF(ovals);
    PyObject *args = e->args ? e->args : PyTuple_New(0);
    PyTuple_SET_ITEM(vs, n, e->args ? Py_NewRef(args) : args);
    PyTuple_SET_ITEM(vs, n + 1, Py_NewRef(e->cause ? e->cause : Py_None));
    PyTuple_SET_ITEM(vs, n + 2, Py_NewRef(e->context ? e->context : Py_None));
    if (!args) {
        Py_DECREF(vs);
        Py_DECREF(sp);
        return -1;
    }
    *spec = sp;
    *vals = vs;
    return 0;
}
