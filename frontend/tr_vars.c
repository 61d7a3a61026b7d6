/* frontend/tr_vars.c - translator variables: where values came from (the
 * object -> source map, guarding a value when it is first read), which
 * objects the translation made (fresh: mutable), and graph breaks. */
#include "tr_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- variables ---------------- */
void tr_var_clear(tr_var *v)
{
    Py_CLEAR(v->v);
    v->src = NULL;
    if (v->it)
        tr_iter_decref(v->it);
    v->it = NULL;
    v->aux = TR_AUX_NONE;
}

void tr_var_copy(tr_var *dst, const tr_var *src)
{
    *dst = *src;
    Py_XINCREF(dst->v);
    if (dst->it)
        dst->it->refs++;
}

const char *tr_type_name(PyObject *o)
{
    return o ? Py_TYPE(o)->tp_name : "NULL";
}

PyObject *tr_id_key(const void *p)
{
    return PyLong_FromVoidPtr((void *)p);
}

const void *tr_map_key(PyObject *o)
{
    return st_fe_is_tensor(o) ? (const void *)st_fe_unwrap(o) : (const void *)o;
}

/* Immutable constants are never keyed by identity. */
bool tr_is_plain_const(PyObject *o)
{
    return o == Py_None || PyLong_Check(o) || PyFloat_Check(o) ||
           PyUnicode_Check(o) || PyBytes_Check(o) || PyBool_Check(o) ||
           PyTuple_Check(o) || PyComplex_Check(o) || PySlice_Check(o) ||
           o == Py_Ellipsis;
}

st_fe_src *tr_var_src(tr_state *s, const tr_var *v)
{
    if (v->src)
        return v->src;
    return tr_is_fresh(s, v->v) ? NULL : tr_lookup_src(s, v->v);
}

st_fe_src *tr_lookup_src(tr_state *s, PyObject *o)
{
    if (!o || tr_is_plain_const(o))
        return NULL;
    PyObject *k = tr_id_key(tr_map_key(o));
    if (!k) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *e = PyDict_GetItem(s->srcmap, k);
    Py_DECREF(k);
    if (!e)
        return NULL;
    long id = PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
    return (id >= 0 && id < s->srcs.n) ? s->srcs.v[id] : NULL;
}

/* Fresh tensors are keyed by their st_tensor and not kept alive (holding
 * every intermediate would keep all activations until the end): a tensor
 * allocated during the translation can only reuse the address of another
 * one allocated during it. Other fresh objects are held. */
bool tr_is_fresh(tr_state *s, PyObject *o)
{
    PyObject *k = tr_id_key(tr_map_key(o));
    if (!k) {
        PyErr_Clear();
        return false;
    }
    bool r = PyDict_GetItem(s->fresh, k) != NULL;
    Py_DECREF(k);
    return r;
}

int tr_mark_fresh(tr_state *s, PyObject *o)
{
    bool t = st_fe_is_tensor(o);
    PyObject *k = tr_id_key(tr_map_key(o));
    if (!k)
        return -1;
    int rc = PyDict_SetItem(s->fresh, k, t ? Py_None : o);
    Py_DECREF(k);
    return rc;
}

static bool key_is_const(PyObject *k)
{
    return PyLong_CheckExact(k) || PyUnicode_CheckExact(k) || PyBool_Check(k) ||
           k == Py_None || PyFloat_CheckExact(k);
}

/* Items of a sourced tuple/list/dict are read through ITEM sources at
 * once (guarded, tensors remembered): a real call or operator may consume
 * the container whole, and its items must be inputs, not constants. */
static int expose_items(tr_state *s, PyObject *v, st_fe_src *src)
{
    if (!(PyTuple_CheckExact(v) || PyList_CheckExact(v) || PyDict_CheckExact(v) ||
          (PyTuple_Check(v) && tr_safe_type(v)) || (PyDict_Check(v) && tr_safe_type(v))))
        return 0;
    if (s->exposed > TR_MAX_EXPOSED)
        return 0;
    PyObject *items = NULL, *keys = NULL;
    if (PyDict_Check(v)) {
        keys = PyDict_Keys(v);
        items = PyDict_Values(v);
    } else {
        items = PySequence_Tuple(v);
    }
    if (!items || (PyDict_Check(v) && !keys)) {
        Py_XDECREF(items);
        Py_XDECREF(keys);
        return tr_break_exc(s, "container");
    }
    Py_ssize_t n = PySequence_Length(items);
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *k = keys ? Py_NewRef(PyList_GET_ITEM(keys, i)) : PyLong_FromSsize_t(i);
        PyObject *it = PySequence_GetItem(items, i);
        if (!k || !it) {
            rc = tr_break_exc(s, "container");
        } else if (key_is_const(k)) {
            s->exposed++;
            st_fe_src *is = st_fe_src_item(&s->srcs, src, k);
            tr_var tmp;
            if (!is)
                rc = tr_break_exc(s, "source");
            else if ((rc = tr_make_sourced(s, &tmp, Py_NewRef(it), is)) == 0)
                tr_var_clear(&tmp);
        }
        Py_XDECREF(k);
        Py_XDECREF(it);
    }
    Py_DECREF(items);
    Py_XDECREF(keys);
    return rc;
}

/* A dict view from outside the frame (an argument; the view a resume
 * function gets after a break at d.items()): read as the view of a
 * sourced dict (aux), through the dict it views, so that its keys are
 * guarded and its values are graph inputs, not constants of this call. */
static int sourced_view(tr_state *s, tr_var *out, PyObject *v, st_fe_src *src)
{
    st_fe_src *ds = st_fe_src_viewdict(&s->srcs, src);
    if (!ds)
        return tr_break_exc(s, "source");
    tr_var d;
    if (tr_make_sourced(s, &d, Py_NewRef((PyObject *)((_PyDictViewObject *)v)->dv_dict), ds) < 0)
        return -1;
    out->aux = PyDictKeys_Check(v) ? TR_AUX_KEYS : PyDictValues_Check(v) ? TR_AUX_VALUES : TR_AUX_ITEMS;
    out->src = ds;
    if (!d.src) {
        /* the dict was written in this frame: d is its shadow, and the
         * view shows the shadow (as the in-frame d.keys() does) */
        PyObject *sv = tr_fx_dict_view(d.v, out->aux);
        tr_var_clear(&d);
        if (!sv)
            return tr_break_exc(s, "dict view");
        Py_SETREF(out->v, sv);
        out->src = NULL;
        return 0;
    }
    tr_var_clear(&d);
    return 0;
}

int tr_make_sourced(tr_state *s, tr_var *out, PyObject *v, st_fe_src *src)
{
    memset(out, 0, sizeof *out);
    if (src && s->dyn) {
        int vs = tr_value_symbol(s, out, v, src);
        if (vs)
            return vs < 0 ? -1 : 0;
    }
    out->v = v;
    out->src = src;
    if (!src)
        return 0;
    if (st_fe_guard_value(&s->guards, src, v) < 0)
        return tr_break_exc(s, "guard");
    if (st_fe_is_dict_view(v))
        return sourced_view(s, out, v, src);
    if (s->dyn && st_fe_is_tensor(v) && tr_dyn_source(s, v, src) < 0)
        return -1;
    if (!tr_is_plain_const(v)) {
        PyObject *k = tr_id_key(tr_map_key(v));
        if (!k)
            return tr_break_exc(s, "map");
        PyObject *known = PyDict_GetItem(s->srcmap, k);
        if (known && PyLong_AsLong(PyTuple_GET_ITEM(known, 1)) != src->id &&
            !PyType_Check(v) && !PyModule_Check(v) && !PyFunction_Check(v) &&
            !PyCFunction_Check(v)) {
            /* one tensor through two sources (f(x, x), tied weights): the
             * graph reads it once, so both sources must stay this object;
             * likewise a list/dict (its mutations are replayed once) and
             * any other object (o.child is o: its reads, and a result
             * naming it, go through the first source). Classes, modules
             * and functions are guarded on their identity already */
            st_fe_src *old = s->srcs.v[PyLong_AsLong(PyTuple_GET_ITEM(known, 1))];
            if (st_fe_guard_alias(&s->guards, src, old) < 0) {
                Py_DECREF(k);
                return tr_break_exc(s, "guard");
            }
        }
        if (!known) {
            PyObject *e = Py_BuildValue("(Oi)", v, src->id);
            if (!e || PyDict_SetItem(s->srcmap, k, e) < 0) {
                Py_XDECREF(e);
                Py_DECREF(k);
                return tr_break_exc(s, "map");
            }
            Py_DECREF(e);
        }
        Py_DECREF(k);
    }
    PyObject *sh = tr_fx_substitute(s, v);
    if (sh) {
        /* a list/dict mutated in this frame: its shadow stands for it */
        Py_SETREF(out->v, Py_NewRef(sh));
        out->src = NULL;
        return 0;
    }
    if (++s->expose_depth <= 8 && expose_items(s, v, src) < 0) {
        s->expose_depth--;
        return -1;
    }
    s->expose_depth--;
    return 0;
}

void tr_make_value(tr_state *s, tr_var *out, PyObject *v)
{
    memset(out, 0, sizeof *out);
    PyObject *sh = tr_fx_substitute(s, v);
    if (sh)
        Py_SETREF(v, Py_NewRef(sh));   /* a list/dict mutated in this frame */
    out->v = v;
    if (!v)
        return;
    out->src = tr_lookup_src(s, v);
    if (!out->src && Py_REFCNT(v) == 1 && !tr_is_plain_const(v)) {
        if (tr_mark_fresh(s, v) < 0)
            PyErr_Clear();
    }
}

/* ---------------- breaks ---------------- */
int tr_break(tr_state *s, const char *fmt, ...)
{
    if (s->fatal)
        return -1;
    if (PyErr_Occurred())
        PyErr_Clear();
    if (s->broke)
        return -1;
    s->broke = true;
    va_list ap;
    va_start(ap, fmt);
    size_t pre = 0;
    if (s->lib_inline > 0 && strncmp(fmt, "dynamic shapes", 14)) {
        /* inside library code followed only for dynamic shapes: the
         * frame is translated again with static shapes (a real call) */
        pre = (size_t)snprintf(s->brk->reason, sizeof s->brk->reason,
                               "dynamic shapes: in library code: ");
    }
    vsnprintf(s->brk->reason + pre, sizeof s->brk->reason - pre, fmt, ap);
    va_end(ap);
    tr_frame *fr = s->top;
    if (fr) {
        Py_XSETREF(s->brk->filename, Py_NewRef(fr->code->co_filename));
        s->brk->lineno = PyCode_Addr2Line(fr->code, fr->lasti * 2);
        s->brk_depth = fr->depth;
        while (fr->parent)
            fr = fr->parent;
        s->root_at = fr->lasti;   /* where the root frame breaks (the call, when inlined) */
    }
    return -1;
}

int tr_break_exc(tr_state *s, const char *what)
{
    if (s->fatal || PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) ||
        PyErr_ExceptionMatches(PyExc_SystemExit) || PyErr_ExceptionMatches(PyExc_MemoryError)) {
        /* not the code's doing: the translation fails with it */
        s->fatal = true;
        return -1;
    }
    if (s->broke) {
        PyErr_Clear();
        return -1;
    }
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    const char *msg = "";
    PyObject *str = val ? PyObject_Str(val) : NULL;
    if (str)
        msg = PyUnicode_AsUTF8(str);
    if (!msg) {
        PyErr_Clear();
        msg = "";
    }
    tr_break(s, "%s raised %s: %s", what,
             type ? ((PyTypeObject *)type)->tp_name : "an error", msg);
    Py_XDECREF(str);
    Py_XDECREF(type);
    Py_XDECREF(val);
    Py_XDECREF(tb);
    return -1;
}

