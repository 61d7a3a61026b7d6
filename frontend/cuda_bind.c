/* cuda_bind.c - module functions behind symtrace.cuda: whether a CUDA
 * driver and GPU are there, how many, synchronize, and where to find NVRTC
 * (the Python layer passes the pip wheel's lib directory). */
#include "st_fe.h"
#include "st_cuda.h"
#include "st_nvrtc.h"

static PyObject *c_is_available(PyObject *self, PyObject *noargs) {
    return PyBool_FromLong(st_cuda_is_available());
}

static PyObject *c_device_count(PyObject *self, PyObject *noargs) {
    return PyLong_FromLong(st_cuda_device_count());
}

static PyObject *c_synchronize(PyObject *self, PyObject *args) {
    int index = -1;
    if (!PyArg_ParseTuple(args, "|i", &index)) return NULL;
    st_status s;
    Py_BEGIN_ALLOW_THREADS
    s = st_cuda_synchronize(index);
    Py_END_ALLOW_THREADS
    if (s != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

static PyObject *c_device_name(PyObject *self, PyObject *args) {
    int index = 0;
    if (!PyArg_ParseTuple(args, "|i", &index)) return NULL;
    st_device *d = st_cuda_device(index);
    if (!d) return st_fe_raise();
    return PyUnicode_FromString(st_cuda_dev_of(d)->name);
}

static PyObject *c_nvrtc_set_path(PyObject *self, PyObject *args) {
    const char *p = NULL;
    if (!PyArg_ParseTuple(args, "z", &p)) return NULL;
    st_nvrtc_set_search_path(p);
    Py_RETURN_NONE;
}

/* (True, "13.0 from /path") or (False, "why not") */
static PyObject *c_nvrtc_status(PyObject *self, PyObject *noargs) {
    if (!st_nvrtc_available()) {
        PyObject *r = Py_BuildValue("(Os)", Py_False, st_err_msg());
        st_err_clear();
        return r;
    }
    return Py_BuildValue("(Oss)", Py_True, st_nvrtc_version(), st_nvrtc_library());
}

static PyObject *c_cublas_set_path(PyObject *self, PyObject *args) {
    const char *p = NULL;
    if (!PyArg_ParseTuple(args, "z", &p)) return NULL;
    st_nvrtc_set_cublas_search_path(p);
    Py_RETURN_NONE;
}

/* (True, "/path/libcublas.so.13") or (False, "why not") */
static PyObject *c_cublas_status(PyObject *self, PyObject *noargs) {
    if (!st_nvrtc_cublas_available()) {
        PyObject *r = Py_BuildValue("(Os)", Py_False, st_err_msg());
        st_err_clear();
        return r;
    }
    return Py_BuildValue("(Os)", Py_True, st_nvrtc_cublas_library());
}

static PyObject *c_nvrtc_register(PyObject *self, PyObject *noargs) {
    if (st_nvrtc_register() != ST_OK) return st_fe_raise();
    Py_RETURN_NONE;
}

PyMethodDef st_fe_cuda_methods[] = {
    {"_cuda_is_available", c_is_available, METH_NOARGS, "a CUDA driver and GPU are there"},
    {"_cuda_device_count", c_device_count, METH_NOARGS, "GPUs the driver sees"},
    {"_cuda_synchronize", c_synchronize, METH_VARARGS, "wait for a GPU (-1: all)"},
    {"_cuda_device_name", c_device_name, METH_VARARGS, "the name of a GPU"},
    {"_nvrtc_set_search_path", c_nvrtc_set_path, METH_VARARGS, "directories holding libnvrtc"},
    {"_nvrtc_status", c_nvrtc_status, METH_NOARGS, "whether NVRTC loads"},
    {"_cublas_set_search_path", c_cublas_set_path, METH_VARARGS, "directories holding libcublas"},
    {"_cublas_status", c_cublas_status, METH_NOARGS, "whether cuBLAS loads"},
    {"_nvrtc_register", c_nvrtc_register, METH_NOARGS, "register the nvrtc backend"},
    {NULL, NULL, 0, NULL},
};
