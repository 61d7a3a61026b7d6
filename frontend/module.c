/* module.c - the extension module symtrace._C: creates the module and calls
 * each binding file's init (dtypes, Tensor type, ops, conversions). */
#include "st_fe.h"
#include "st_fe_hook.h"
#ifdef ST_HAVE_LLVM
#include "st_llvm.h"
#endif

static struct PyModuleDef st_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "symtrace._C",
    .m_doc = "symtrace's C core: tensors, eager ops, memory, compilation.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__C(void);
int st_fe_init_tr_debug(PyObject *m);   /* tr_debug.c */
int st_fe_init_dynamic(PyObject *m);    /* tr_dynamic.c */
int st_fe_init_cfn(PyObject *m); /* frontend/cfn_bind.c */

__attribute__((visibility("default"))) PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&st_module);
    if (!m) return NULL;
#ifdef ST_HAVE_LLVM
    /* registers "llvm": the default eager backend (SYMTRACE_EAGER_BACKEND) */
    st_llvm_backend();
#endif
    if (st_fe_init_dtypes(m) || st_fe_init_size(m) || st_fe_init_tensor(m) || st_fe_init_ops(m) ||
        st_fe_init_convert(m) || st_fe_init_autograd(m) ||
        st_fe_init_graph(m) || st_fe_init_trace(m) || st_fe_init_tr_debug(m) || st_fe_init_dynamic(m) || st_fe_init_compile(m) || st_fe_init_cfn(m) ||
        PyModule_AddFunctions(m, st_fe_convert_methods) ||
        PyModule_AddFunctions(m, st_fe_cuda_methods)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
