/* frontend/dtype_type.c - the Python type symtrace._C.dtype: one immutable
 * instance per st_dtype (symtrace.float32, ...), its attributes
 * (is_floating_point, itemsize, is_signed, is_complex), repr, pickling by
 * name, and the parser that turns a user's dtype argument (a symtrace
 * dtype, float/int/bool, a numpy or torch dtype) into an st_dtype. */
#include "st_fe.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    st_dtype dt;
} dtype_obj;

static PyObject *g_dtypes[ST_NDTYPES];

static PyObject *dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat("symtrace.%s",
                                st_dtype_name(((dtype_obj *)self)->dt));
}

/* Pickled as a global name: pickle finds the module holding an attribute
 * of that name that IS this object (symtrace._C, or symtrace when the
 * package re-exports it), exactly as torch.dtype does. */
static PyObject *dtype_reduce(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(st_dtype_name(((dtype_obj *)self)->dt));
}

static PyObject *dtype_get_is_float(PyObject *self, void *c)
{
    return PyBool_FromLong(st_dtype_is_float(((dtype_obj *)self)->dt));
}

static PyObject *dtype_get_itemsize(PyObject *self, void *c)
{
    return PyLong_FromSize_t(st_dtype_size(((dtype_obj *)self)->dt));
}

static PyObject *dtype_get_is_signed(PyObject *self, void *c)
{
    return PyBool_FromLong(!st_dtype_is_unsigned(((dtype_obj *)self)->dt));
}

static PyObject *dtype_get_false(PyObject *self, void *c)
{
    Py_RETURN_FALSE;
}

static PyGetSetDef dtype_getset[] = {
    {"is_floating_point", dtype_get_is_float, NULL,
     "True for float16, bfloat16, float32 and float64", NULL},
    {"itemsize", dtype_get_itemsize, NULL, "bytes per element", NULL},
    {"is_signed", dtype_get_is_signed, NULL, "False for bool and uint8", NULL},
    {"is_complex", dtype_get_false, NULL, "always False", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *dtype_new(PyTypeObject *tp, PyObject *a, PyObject *k)
{
    PyErr_SetString(PyExc_TypeError,
                    "cannot create 'symtrace.dtype' instances; use "
                    "symtrace.float32 and friends");
    return NULL;
}

/* Identity hash and identity comparison are the object defaults. */
static PyTypeObject dtype_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symtrace.dtype",
    .tp_basicsize = sizeof(dtype_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "symtrace.dtype: the element type of a Tensor",
    .tp_repr = dtype_repr,
    .tp_str = dtype_repr,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
    .tp_new = dtype_new,
};

PyObject *st_fe_dtype_obj(st_dtype t)
{
    if ((int)t < 0 || t >= ST_NDTYPES || !g_dtypes[t]) {
        PyErr_Format(PyExc_RuntimeError, "internal: bad dtype %d", (int)t);
        return NULL;
    }
    return g_dtypes[t];
}

/* Names accepted from strings, numpy dtypes (str() "float32") and torch
 * dtypes (str() "torch.float32"). numpy's unsigned types wider than 8 bits
 * have no symtrace counterpart and are rejected here (tensor() widens such
 * buffers itself). */
static int dtype_from_name(const char *s, st_dtype *out)
{
    static const struct { const char *name; st_dtype dt; } names[] = {
        {"float32", ST_FLOAT32}, {"float", ST_FLOAT32},
        {"float64", ST_FLOAT64}, {"double", ST_FLOAT64},
        {"float16", ST_FLOAT16}, {"half", ST_FLOAT16},
        {"bfloat16", ST_BFLOAT16},
        {"uint8", ST_UINT8}, {"int8", ST_INT8},
        {"int16", ST_INT16}, {"short", ST_INT16},
        {"int32", ST_INT32}, {"int", ST_INT32},
        {"int64", ST_INT64}, {"long", ST_INT64},
        {"bool", ST_BOOL}, {"bool_", ST_BOOL},
    };
    if (strncmp(s, "torch.", 6) == 0)
        s += 6;
    else if (strncmp(s, "symtrace.", 9) == 0)
        s += 9;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].dt;
            return 0;
        }
    }
    return -1;
}

static int type_module_is(PyTypeObject *tp, const char *mod)
{
    const char *n = tp->tp_name;
    size_t l = strlen(mod);
    return strncmp(n, mod, l) == 0 && n[l] == '.';
}

int st_fe_parse_dtype(PyObject *o, st_dtype *out, const char *what)
{
    if (Py_IS_TYPE(o, &dtype_type)) {
        *out = ((dtype_obj *)o)->dt;
        return 0;
    }
    if (o == (PyObject *)&PyFloat_Type) { *out = ST_FLOAT32; return 0; }
    if (o == (PyObject *)&PyLong_Type) { *out = ST_INT64; return 0; }
    if (o == (PyObject *)&PyBool_Type) { *out = ST_BOOL; return 0; }

    PyObject *name = NULL;
    if (PyUnicode_Check(o)) {
        name = Py_NewRef(o);
    } else if (PyType_Check(o) &&
               type_module_is((PyTypeObject *)o, "numpy")) {
        /* numpy scalar types: numpy.float32, numpy.bool_, ... */
        name = PyObject_GetAttrString(o, "__name__");
        if (!name)
            PyErr_Clear();
    } else if (type_module_is(Py_TYPE(o), "numpy") ||
               type_module_is(Py_TYPE(o), "torch")) {
        /* numpy.dtype('float64') -> "float64", torch.float32 ->
         * "torch.float32" */
        name = PyObject_Str(o);
        if (!name)
            PyErr_Clear();
    }
    if (name) {
        const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        int ok = s && dtype_from_name(s, out) == 0;
        if (!s)
            PyErr_Clear();
        Py_DECREF(name);
        if (ok)
            return 0;
    }
    PyObject *r = PyObject_Repr(o);
    if (!r) {
        PyErr_Clear();
        r = PyUnicode_FromString("?");
        if (!r)
            return -1;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s must be a symtrace.dtype (float32, float64, float16, "
                 "bfloat16, uint8, int8, int16, int32, int64, bool) or "
                 "float/int/bool, not %s %U",
                 what, Py_TYPE(o)->tp_name, r);
    Py_DECREF(r);
    return -1;
}

int st_fe_init_dtypes(PyObject *m)
{
    if (PyType_Ready(&dtype_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "dtype", (PyObject *)&dtype_type) < 0)
        return -1;
    for (int i = 0; i < ST_NDTYPES; i++) {
        if (!g_dtypes[i]) {
            dtype_obj *d = PyObject_New(dtype_obj, &dtype_type);
            if (!d)
                return -1;
            d->dt = (st_dtype)i;
            g_dtypes[i] = (PyObject *)d;   /* kept for the process' life */
        }
        if (PyModule_AddObjectRef(m, st_dtype_name((st_dtype)i),
                                  g_dtypes[i]) < 0)
            return -1;
    }
    return 0;
}
