/* pyinternals.h - the one file that mirrors CPython internals the frame
 * hook needs (DESIGN.md "Conventions"): the interpreter frame layout, the
 * code-extra API names, and, for 3.12, clearing and popping a thread-owned
 * frame that the hook returned from without evaluating it. Each piece names
 * the CPython source it mirrors; versions not checked stop the build (only
 * when ST_FE_SUPPORTED: other versions build with the hook off). Checked
 * against CPython 3.11.7 and 3.12.1. */
#ifndef ST_PYINTERNALS_H
#define ST_PYINTERNALS_H

#include "pyversion.h"

#if ST_FE_SUPPORTED
#include <stdbool.h>
#include <stdint.h>

#if ST_PY311
/* Include/internal/pycore_frame.h (3.11): struct _PyInterpreterFrame and
 * enum _frameowner. */
typedef struct st_py_iframe {
    PyFunctionObject *f_func;     /* strong */
    PyObject *f_globals;          /* borrowed */
    PyObject *f_builtins;         /* borrowed */
    PyObject *f_locals;           /* strong, may be NULL */
    PyCodeObject *f_code;         /* strong */
    PyFrameObject *frame_obj;     /* strong, may be NULL */
    struct st_py_iframe *previous;
    _Py_CODEUNIT *prev_instr;
    int stacktop;
    bool is_entry;
    char owner;
    PyObject *localsplus[1];
} st_py_iframe;
#define ST_IFRAME_FUNC(fr) ((PyObject *)(fr)->f_func)
/* Include/cpython/code.h (3.11): the code-extra API under its old names. */
#define ST_REQUEST_CODE_EXTRA_INDEX _PyEval_RequestCodeExtraIndex
#define ST_CODE_GET_EXTRA _PyCode_GetExtra
#define ST_CODE_SET_EXTRA _PyCode_SetExtra
/* Python/ceval.c (3.11), _PyEval_Vector: every call of a Python function
 * made while a custom eval function is installed goes through
 * _PyEval_Vector (CALL's inlined path and CALL_PY_EXACT_ARGS /
 * CALL_PY_WITH_DEFAULTS / BINARY_SUBSCR_GETITEM deopt when
 * interp->eval_frame is set), which calls _PyEvalFrameClearAndPop after the
 * eval function returns, whatever it returned. So a hook that returns
 * without evaluating leaves the frame to its caller. */
#define ST_HOOK_MUST_POP_FRAME 0

#elif ST_PY312
/* Include/internal/pycore_frame.h (3.12): struct _PyInterpreterFrame. */
typedef struct st_py_iframe {
    PyCodeObject *f_code;         /* strong */
    struct st_py_iframe *previous;
    PyObject *f_funcobj;          /* strong */
    PyObject *f_globals;          /* borrowed */
    PyObject *f_builtins;         /* borrowed */
    PyObject *f_locals;           /* strong, may be NULL */
    PyFrameObject *frame_obj;     /* strong, may be NULL */
    _Py_CODEUNIT *prev_instr;
    int stacktop;
    uint16_t return_offset;
    char owner;
    PyObject *localsplus[1];
} st_py_iframe;
#define ST_IFRAME_FUNC(fr) ((fr)->f_funcobj)
/* Include/cpython/code.h (3.12): PyUnstable_ names of the code-extra API. */
#define ST_REQUEST_CODE_EXTRA_INDEX PyUnstable_Eval_RequestCodeExtraIndex
#define ST_CODE_GET_EXTRA PyUnstable_Code_GetExtra
#define ST_CODE_SET_EXTRA PyUnstable_Code_SetExtra
/* Python/ceval.c (3.12): _PyEval_Vector returns _PyEval_EvalFrame(...)
 * directly; the default evaluator clears and pops its frame itself
 * (RETURN_VALUE and exit_unwind call _PyEvalFrameClearAndPop). A hook that
 * returns without evaluating must do the same. */
#define ST_HOOK_MUST_POP_FRAME 1

/* Python/ceval.c (3.12) clear_thread_frame + Python/frame.c
 * _PyFrame_ClearExceptCode, for the only case the hook meets: a
 * thread-owned frame that never ran, so it has no frame object
 * (frame_obj == NULL; the caller checks) and its stack is empty
 * (stacktop == co_nlocalsplus). Then Python/pystate.c
 * _PyThreadState_PopFrame: the frame is the top of the thread's data stack;
 * when it starts its chunk, the chunk is released (Objects/obmalloc.c
 * _PyObject_VirtualFree frees through the object arena allocator, which
 * PyObject_GetArenaAllocator exposes) and the previous chunk becomes
 * current. */
static inline void st_py_frame_clear_and_pop(PyThreadState *ts, st_py_iframe *fr)
{
    for (int i = 0; i < fr->stacktop; i++) Py_XDECREF(fr->localsplus[i]);
    Py_XDECREF(fr->f_locals);
    Py_DECREF(fr->f_funcobj);
    Py_DECREF(fr->f_code);
    PyObject **base = (PyObject **)fr;
    _PyStackChunk *chunk = ts->datastack_chunk;
    if (base == &chunk->data[0]) {
        _PyStackChunk *prev = chunk->previous;
        PyObjectArenaAllocator a;
        ts->datastack_top = &prev->data[prev->top];
        ts->datastack_chunk = prev;
        PyObject_GetArenaAllocator(&a);
        a.free(a.ctx, chunk, chunk->size);
        ts->datastack_limit = (PyObject **)(((char *)prev) + prev->size);
    } else {
        ts->datastack_top = base;
    }
}
#else
#error "pyinternals.h: this CPython version has not been checked"
#endif

/* Include/internal/pycore_frame.h (3.11, 3.12): enum _frameowner. */
#define ST_FRAME_OWNED_BY_THREAD 0

/* Include/cpython/pystate.h (_PyFrameEvalFunction) and
 * Include/cpython/ceval.h (_PyEval_EvalFrameDefault) take the opaque
 * struct _PyInterpreterFrame, which is the struct above. */
static inline st_py_iframe *st_py_iframe_of(struct _PyInterpreterFrame *f)
{ return (st_py_iframe *)(void *)f; }
static inline PyObject *ST_DEFAULT_EVAL(PyThreadState *ts, st_py_iframe *fr, int throwflag)
{ return _PyEval_EvalFrameDefault(ts, (struct _PyInterpreterFrame *)(void *)fr, throwflag); }


/* Include/cpython/dictobject.h (3.11, 3.12): PyDictObject.ma_version_tag,
 * a globally increasing stamp written on every mutation of the dict
 * (Objects/dictobject.c: insertdict, delitem_common, ... set it from
 * DICT_NEXT_VERSION / _PyDict_NotifyEvent). 3.12 marks the field
 * deprecated (its low bits hold watcher flags; the stamp still changes on
 * every mutation), hence the pragma. */
static inline uint64_t st_py_dict_version(PyObject *d)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return ((PyDictObject *)d)->ma_version_tag;
#pragma GCC diagnostic pop
}

#endif /* ST_FE_SUPPORTED */
#if !ST_FE_SUPPORTED
/* The hook is off on other versions; guards are never checked there. */
static inline uint64_t st_py_dict_version(PyObject *d) { (void)d; return 0; }
#endif
#endif
