/* frontend/size_type.c - the Python type symtrace.Size: what Tensor.shape
 * and Tensor.size() return, a tuple subclass as torch.Size (equal to and
 * hashing as the plain tuple, usable wherever one is). Owns its
 * constructor (an iterable of ints, or of anything with __index__, as
 * torch; a SymInt is kept), numel(), repr "symtrace.Size([2, 3])", slicing, + and * (that
 * stay Sizes, from either side), pickling, and st_fe_size_new /
 * st_fe_size_from_tuple for the C side (the translator builds Sizes of
 * SymInts with the latter, without the constructor's checks). */
#include "st_fe.h"

PyTypeObject st_fe_size_type;

/* A Size holding the items of the tuple t (new reference). */
PyObject *st_fe_size_from_tuple(PyObject *t)
{
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    PyObject *r = st_fe_size_type.tp_alloc(&st_fe_size_type, n);
    if (!r)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(r, i, Py_NewRef(PyTuple_GET_ITEM(t, i)));
    return r;
}

PyObject *st_fe_size_new(const int64_t *shape, int ndim)
{
    PyObject *r = st_fe_size_type.tp_alloc(&st_fe_size_type, ndim);
    if (!r)
        return NULL;
    for (int d = 0; d < ndim; d++) {
        PyObject *v = PyLong_FromLongLong(shape[d]);
        if (!v) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, d, v);
    }
    return r;
}

/* Size(iterable=()): each item an int, or anything with __index__ (a
 * one-element integer tensor, a numpy integer), stored as an int. */
static PyObject *size_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *src = NULL;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "symtrace.Size() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "Size", 0, 1, &src))
        return NULL;
    PyObject *items = src ? PySequence_Tuple(src) : PyTuple_New(0);
    if (!items)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *r = type->tp_alloc(type, n);
    for (Py_ssize_t i = 0; r && i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i), *v = NULL;
        if (PyLong_CheckExact(it) || (PyLong_Check(it) && !PyBool_Check(it)))
            v = Py_NewRef(it);   /* an int, or an int subclass: a SymInt stays one */
        else if (!PyFloat_Check(it) && Py_TYPE(it)->tp_as_number &&
                 Py_TYPE(it)->tp_as_number->nb_index)
            v = PyNumber_Index(it);   /* a bool, an int subclass, a 1-element tensor */
        if (!v) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError) ||
                PyErr_ExceptionMatches(PyExc_RuntimeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "symtrace.Size() takes an iterable of 'int' "
                             "(item %zd is '%s')", i, Py_TYPE(it)->tp_name);
            }
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, v);
    }
    Py_DECREF(items);
    return r;
}

static PyObject *size_repr(PyObject *self)
{
    Py_ssize_t n = PyTuple_GET_SIZE(self);
    PyObject *list = PyList_New(n);
    if (!list)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        PyList_SET_ITEM(list, i, Py_NewRef(PyTuple_GET_ITEM(self, i)));
    PyObject *r = PyUnicode_FromFormat("symtrace.Size(%R)", list);
    Py_DECREF(list);
    return r;
}

/* numel(): the product of the sizes (1 for Size([])) */
static PyObject *size_numel(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *p = PyLong_FromLong(1);
    for (Py_ssize_t i = 0; p && i < PyTuple_GET_SIZE(self); i++)
        Py_SETREF(p, PyNumber_Multiply(p, PyTuple_GET_ITEM(self, i)));
    return p;
}

/* pickled as Size(tuple(self)) */
static PyObject *size_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *t = PyTuple_GetSlice(self, 0, PyTuple_GET_SIZE(self));
    if (!t)
        return NULL;
    PyObject *r = Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(self), t);
    return r;
}

/* A tuple result of a tuple operation, made a Size (steals r). */
static PyObject *as_size(PyObject *r)
{
    if (!r || !PyTuple_CheckExact(r))
        return r;
    PyObject *s = st_fe_size_from_tuple(r);
    Py_DECREF(r);
    return s;
}

static PyObject *size_subscript(PyObject *self, PyObject *key)
{
    PyObject *r = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
    return PySlice_Check(key) ? as_size(r) : r;
}

/* Size + tuple, tuple + Size: a Size (as torch); anything else is
 * NotImplemented, so tuple's own error follows */
static PyObject *size_add(PyObject *a, PyObject *b)
{
    if (!PyTuple_Check(a) || !PyTuple_Check(b))
        Py_RETURN_NOTIMPLEMENTED;
    return as_size(PyTuple_Type.tp_as_sequence->sq_concat(a, b));
}

static PyObject *size_mul(PyObject *a, PyObject *b)
{
    PyObject *seq = PyTuple_Check(a) ? a : b, *num = seq == a ? b : a;
    if (!PyTuple_Check(seq) || !PyIndex_Check(num))
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t k = PyNumber_AsSsize_t(num, PyExc_OverflowError);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    return as_size(PyTuple_Type.tp_as_sequence->sq_repeat(seq, k));
}

static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS,
     "numel() -> int: the number of elements of a tensor of this size"},
    {"__reduce__", size_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyMappingMethods size_as_mapping = {0, size_subscript, 0};
static PyNumberMethods size_as_number = {.nb_add = size_add, .nb_multiply = size_mul};

int st_fe_init_size(PyObject *m)
{
    st_fe_size_type = (PyTypeObject){
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "symtrace.Size",
        .tp_doc = "Size(iterable=()): the sizes of a tensor (Tensor.shape, Tensor.size()); "
                  "a tuple of ints, as torch.Size",
        .tp_flags = Py_TPFLAGS_DEFAULT,
        .tp_base = &PyTuple_Type,
        .tp_new = size_new,
        .tp_repr = size_repr,
        .tp_methods = size_methods,
        .tp_as_mapping = &size_as_mapping,
        .tp_as_number = &size_as_number,
    };
    if (PyType_Ready(&st_fe_size_type) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Size", (PyObject *)&st_fe_size_type);
}
