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

#endif
