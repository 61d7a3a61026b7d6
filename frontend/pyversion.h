/* pyversion.h - the one place that names CPython versions (DESIGN.md
 * "Conventions"): predicates for the interpreters the frontend supports.
 * Anything else builds, but the frame hook and the translator are off and
 * symtrace.compile runs functions eagerly (ST_FE_SUPPORTED == 0). */
#ifndef ST_PYVERSION_H
#define ST_PYVERSION_H

#include <Python.h>

#define ST_PY311 (PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000)
#define ST_PY312 (PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000)
#define ST_FE_SUPPORTED (ST_PY311 || ST_PY312)

/* Saving the current exception around logging: PyErr_Fetch/PyErr_Restore
 * (Python/errors.c) in 3.11; deprecated in 3.12, which has
 * PyErr_GetRaisedException/PyErr_SetRaisedException (both forms before and
 * after, so that unsupported versions still build). */
typedef struct { PyObject *t, *v, *tb; } st_py_exc;
#if PY_VERSION_HEX < 0x030C0000
static inline void st_py_err_save(st_py_exc *e) { PyErr_Fetch(&e->t, &e->v, &e->tb); }
static inline void st_py_err_restore(st_py_exc *e) { PyErr_Restore(e->t, e->v, e->tb); }
#else
static inline void st_py_err_save(st_py_exc *e)
{ e->t = e->tb = NULL; e->v = PyErr_GetRaisedException(); }
static inline void st_py_err_restore(st_py_exc *e) { PyErr_SetRaisedException(e->v); }
#endif

#endif
