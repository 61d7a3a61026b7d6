/* st_fe.h - the frontend's internal header: the Python Tensor and dtype
 * types of symtrace._C and the helpers the binding files share. The only
 * layer that includes Python.h. Prefix: st_fe_. */
#ifndef ST_FE_H
#define ST_FE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "st_runtime.h"

/* ---- Tensor: _C.TensorBase wraps one owned st_tensor reference. Python's
 * symtrace.Tensor subclasses it (with __slots__ = ()); results of ops are
 * instances of that subclass once it is registered (_C._set_tensor_class). */
typedef struct {
    PyObject_HEAD
    st_tensor *t;
    PyObject *weakrefs;   /* weakref.ref(tensor), as torch's tensors take */
} st_fe_tensor_obj;

extern PyTypeObject st_fe_TensorBase;
int st_fe_is_tensor(PyObject *o);
st_tensor *st_fe_unwrap(PyObject *o);     /* borrowed; o must be a tensor */
/* The Python Tensor of t, STEALING the reference: t's live wrapper when it
 * has one (one Python object per st_tensor, as torch), else a new one;
 * NULL input (an st_ error) raises it and returns NULL. */
PyObject *st_fe_wrap(st_tensor *t);
/* tp_traverse of a tensor over t (autograd_bind.c) */
int st_fe_visit_owned(st_tensor *t, visitproc visit, void *arg);

/* ---- errors: sets the Python exception matching st_err_kind()
 * (ValueError, TypeError, IndexError, RuntimeError, MemoryError) and
 * returns NULL. */
PyObject *st_fe_raise(void);
int st_fe_raise_int(void);                /* same, returns -1 */

/* ---- dtypes: _C.dtype objects (symtrace.float32, ...), one per st_dtype,
 * with .is_floating_point, .itemsize, repr "symtrace.float32". */
PyObject *st_fe_dtype_obj(st_dtype t);    /* borrowed */
/* Accepts a _C.dtype; also the Python types float (float32... PyTorch maps
 * float to the default float32), int (int64) and bool. Returns 0 or -1
 * with TypeError naming `what`. */
int st_fe_parse_dtype(PyObject *o, st_dtype *out, const char *what);

/* ---- argument helpers */
/* Shape from either varargs of ints or a single sequence of ints
 * (torch.zeros(2, 3) and torch.zeros((2, 3)) both work). */
int st_fe_parse_shape(PyObject *args, int64_t *shape, int *ndim,
                      const char *what);
/* Shape from one sequence object (list/tuple/torch.Size-like). */
int st_fe_parse_shape_seq(PyObject *seq, int64_t *shape, int *ndim,
                          const char *what);
/* A Tensor or a Python number (bool, int, float, or a 0-d-like object
 * with __index__/__float__) into an operand; TypeError names `what`. */
int st_fe_operand(PyObject *o, st_operand *op, const char *what);
/* Runs an eager op whose single result is written into dst (cast to its
 * dtype); 0, or -1 with a Python exception set. */
int st_fe_eager_into(st_op_id op, const st_operand *in, int nin,
                     const st_attrs *attrs, st_tensor *dst);
/* Shape tuple object for a tensor. */
PyObject *st_fe_shape_tuple(const int64_t *shape, int ndim);
/* symtrace.Size (size_type.c): Tensor.shape / size(), a tuple subclass */
extern PyTypeObject st_fe_size_type;
static inline int st_fe_is_size(PyObject *o) { return Py_IS_TYPE(o, &st_fe_size_type); }
/* a plain tuple or a Size: what the translator treats as a tuple of values */
static inline int st_fe_tuple_like(PyObject *o) { return PyTuple_CheckExact(o) || st_fe_is_size(o); }
PyObject *st_fe_size_new(const int64_t *shape, int ndim);
PyObject *st_fe_size_from_tuple(PyObject *t);

/* ---- indexing (frontend/indexing.c): PyTorch's indexing: ints, slices
 * with steps, None, Ellipsis, negative indices, bool scalars (views), and
 * any number of advanced items (int tensors, lists, bool masks) broadcast
 * together, read by index_select and written through _setitem_functional
 * (positions from st_fe_index_positions, one scatter); int index tensors
 * are read by recorded ops under a trace. */
PyObject *st_fe_getitem(PyObject *self, PyObject *key);
int st_fe_setitem(PyObject *self, PyObject *key, PyObject *value);
/* Whether t[key] = value is a fill through one bool mask (at least 1-D,
 * beside basic items) with a number or a one-element tensor: a where()
 * that reads no index values on the host, so a trace can take it. */
bool st_fe_setitem_is_fill(PyObject *key, PyObject *value);
/* _C._index_positions(t, key): the row-major positions in t of t[key]'s
 * elements (int64, of t[key]'s shape), O(result). */
PyObject *st_fe_index_positions(PyObject *self, PyObject *args);

/* ---- conversion (frontend/convert.c) */
/* symtrace.tensor(data, dtype=None, requires_grad=False): nested
 * lists/tuples of numbers, numbers, Tensors (copied), and any object with
 * the buffer protocol (numpy arrays, array.array, memoryview). dtype NULL:
 * inferred as PyTorch does (bool, int64, float32; numpy keeps its dtype). */
st_tensor *st_fe_tensor_from_data(PyObject *data, const st_dtype *dtype);
PyObject *st_fe_tolist(st_tensor *t);
PyObject *st_fe_item(st_tensor *t);       /* one-element tensors only */
/* Module-level and Tensor methods for numpy()/__array__, __dlpack__,
 * __dlpack_device__, from_dlpack, and the buffer protocol on contiguous
 * CPU tensors. */
extern PyMethodDef st_fe_convert_methods[];        /* module functions */
extern PyMethodDef st_fe_cuda_methods[];           /* cuda_bind.c: symtrace.cuda */
extern PyMethodDef st_fe_convert_tensor_methods[]; /* Tensor methods */

/* ---- module set-up pieces (each returns 0 or -1) */
int st_fe_init_dtypes(PyObject *m);
int st_fe_init_size(PyObject *m);
int st_fe_init_tensor(PyObject *m);
int st_fe_init_ops(PyObject *m);
int st_fe_init_convert(PyObject *m);
int st_fe_init_autograd(PyObject *m);
int st_fe_init_graph(PyObject *m);
/* trace capture, backward graphs, graph capsules (trace_bind.c) */
int st_fe_init_trace(PyObject *m);
/* attrs as _C.op takes them: (ints, floats, dims_or_None, flags, dtype) */
int st_fe_parse_attrs(PyObject *o, st_attrs *a);
/* autograd attributes merged into the Tensor type (autograd_bind.c) */
extern PyGetSetDef st_fe_autograd_getset[];

#endif
