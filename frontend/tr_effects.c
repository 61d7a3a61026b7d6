/* frontend/tr_effects.c - side effects on objects that existed before the
 * frame: attribute stores, global stores, and mutations of outside lists
 * and dicts. The translation never performs them: attribute and global
 * stores go to overlays that later reads consult; a list or dict is
 * replaced on its first mutation by a shadow (a fresh copy, mutated for
 * real). Each becomes a record in a log, in program order, which the
 * entry replays after its graph (a list/dict record writes the shadow's
 * final contents into the original). The translation's own call applies
 * the log once at its end (tr_fx_apply). */
#include "tr_internal.h"
#include "st_ir.h"

#include <stdlib.h>
#include <string.h>

static bool in_generator(tr_state *s)
{
    for (tr_frame *fr = s->top; fr; fr = fr->parent)
        if (fr->is_genexpr)
            return true;
    return false;
}

static int fx_push(tr_state *s, st_fe_fx_kind kind, st_fe_src *target, PyObject *obj,
                   PyObject *name, PyObject *val)
{
    if (s->nfx == s->capfx) {
        int nc = s->capfx ? 2 * s->capfx : 8;
        tr_fx *n = realloc(s->fx, sizeof(tr_fx) * (size_t)nc);
        if (!n)
            return tr_break(s, "out of memory");
        s->fx = n;
        s->capfx = nc;
    }
    tr_fx *r = &s->fx[s->nfx++];
    r->kind = kind;
    r->target = target;
    r->obj = Py_XNewRef(obj);
    r->name = Py_XNewRef(name);
    r->val = Py_XNewRef(val);
    return 0;
}

static int ensure(tr_state *s, PyObject **d)
{
    if (!*d && !(*d = PyDict_New()))
        return tr_break_exc(s, "side effect");
    return 0;
}

static int check_value(tr_state *s, tr_var *val, const char *what)
{
    if (!val->v || val->it || val->aux != TR_AUX_NONE)
        return tr_break(s, "side effect: %s stores an iterator or special value "
                        "(not supported)", what);
    return 0;
}

/* ---------------- attributes ---------------- */
static PyObject *attr_key(PyObject *obj, PyObject *name)
{
    PyObject *id = tr_id_key(obj);
    PyObject *k = id ? PyTuple_Pack(2, id, name) : NULL;
    Py_XDECREF(id);
    return k;
}

/* Globals are keyed by their dict: a store to a Python module's attribute
 * and a global store in that module's functions are one overlay. */
static int glob_set(tr_state *s, PyObject *dict, PyObject *name, PyObject *v)
{
    if (ensure(s, &s->fx_glob) < 0)
        return -1;
    PyObject *k = attr_key(dict, name);
    int rc = k ? PyDict_SetItem(s->fx_glob, k, v) : -1;
    Py_XDECREF(k);
    return rc < 0 ? tr_break_exc(s, "side effect") : 0;
}

static int glob_get(tr_state *s, PyObject *dict, PyObject *name, tr_var *out)
{
    if (!s->fx_glob)
        return 0;
    PyObject *k = attr_key(dict, name);
    if (!k)
        return tr_break_exc(s, "side effect");
    PyObject *v = PyDict_GetItem(s->fx_glob, k);
    Py_DECREF(k);
    if (!v)
        return 0;
    tr_make_value(s, out, Py_NewRef(v));
    return 1;
}

int tr_fx_store_attr(tr_state *s, tr_var *obj, PyObject *name, tr_var *val)
{
    PyObject *o = obj->v;
    const char *nm = PyUnicode_AsUTF8(name);
    if (in_generator(s))
        return tr_break(s, "side effect: attribute store inside a generator (not supported)");
    if (check_value(s, val, "attribute store") < 0)
        return -1;
    st_fe_src *src = tr_lookup_src(s, o);
    if (!src)
        src = obj->src;
    if (!src)
        return tr_break(s, "side effect: attribute store '%s' on a %s from outside the "
                        "frame that has no source (cannot be replayed)", nm, tr_type_name(o));
    PyTypeObject *t = Py_TYPE(o);
    bool is_mod = tr_is_symtrace_module(o);
    if (!is_mod && !PyModule_Check(o) && t->tp_setattro != PyObject_GenericSetAttr)
        return tr_break(s, "side effect: attribute store on a %s with __setattr__ "
                        "(not supported)", t->tp_name);
    PyObject *descr = PyModule_Check(o) ? NULL : tr_mro_lookup(t, name, NULL);
    if (descr && Py_TYPE(descr)->tp_descr_set)
        return tr_break(s, "side effect: attribute store '%s' through a descriptor of %s "
                        "(not supported)", nm, t->tp_name);
    if (!is_mod && !PyModule_Check(o) && !descr && t->tp_dictoffset == 0)
        /* no instance dict (a dict, a list, __slots__ without the name):
         * the store raises, which a replay after the graph would do too
         * late, after the graph's own effects */
        return tr_break(s, "side effect: attribute store '%s' on a %s, which has no "
                        "__dict__", nm, t->tp_name);
    if (is_mod && (nm[0] == '_' && (!strcmp(nm, "_parameters") || !strcmp(nm, "_buffers") ||
                                    !strcmp(nm, "_modules") || !strcmp(nm, "training"))))
        return tr_break(s, "side effect: store to Module.%s (not supported)", nm);
    if (PyModule_Check(o)) {
        PyObject *d = PyModule_GetDict(o);
        if (!d || glob_set(s, d, name, val->v) < 0)
            return d ? -1 : tr_break_exc(s, "side effect");
        return fx_push(s, ST_FX_SETATTR, src, o, name, val->v);
    }
    if (ensure(s, &s->fx_attr) < 0)
        return -1;
    PyObject *k = attr_key(o, name);
    PyObject *e = k ? PyTuple_Pack(2, o, val->v) : NULL;
    int rc = e ? PyDict_SetItem(s->fx_attr, k, e) : -1;
    Py_XDECREF(k);
    Py_XDECREF(e);
    if (rc < 0)
        return tr_break_exc(s, "side effect");
    return fx_push(s, ST_FX_SETATTR, src, o, name, val->v);
}

/* Would setattr(obj, name, v), replayed, put v into one of a Module's
 * _parameters, _buffers or _modules (Module.__setattr__)? Yes for a tensor
 * or a Module, and for a name one of them holds; a plain value (a bool, a
 * number, a string) goes to the instance dict. Anything but a Module: yes. */
static bool module_store_registers(PyObject *obj, PyObject *name, PyObject *v)
{
    if (!tr_is_symtrace_module(obj) || st_fe_is_tensor(v) || tr_is_symtrace_module(v))
        return true;
    if (!(PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
          PyUnicode_CheckExact(v)))
        return true;
    PyObject **dp = _PyObject_GetDictPtr(obj);
    PyObject *d = dp ? *dp : NULL;
    if (!d)
        return true;
    static const char *const regs[] = {"_parameters", "_buffers", "_modules"};
    for (int i = 0; i < 3; i++) {
        PyObject *r = PyDict_GetItemString(d, regs[i]);
        if (!r || !PyDict_Check(r))
            return true;
        int has = PyDict_Contains(r, name);
        if (has != 0) {
            PyErr_Clear();
            return true;
        }
    }
    return false;
}

int tr_fx_load_attr(tr_state *s, PyObject *obj, PyObject *name, tr_var *out)
{
    if (obj && PyModule_Check(obj)) {
        PyObject *d = PyModule_GetDict(obj);
        return d ? glob_get(s, d, name, out) : 0;
    }
    if (!s->fx_attr || !obj)
        return 0;
    PyObject *k = attr_key(obj, name);
    if (!k)
        return tr_break_exc(s, "side effect");
    PyObject *e = PyDict_GetItem(s->fx_attr, k);
    Py_DECREF(k);
    if (!e) {
        /* the dicts the stores would have gone to are stale while the
         * stores are pending: __dict__ always; a Module's _parameters,
         * _buffers and _modules only when a pending store would register
         * into one of them at its replay (module.train()'s store of
         * `training` does not, and its loop over children() reads _modules) */
        const char *nm = PyUnicode_AsUTF8(name);
        bool whole = nm && !strcmp(nm, "__dict__");
        if (nm && (whole || !strcmp(nm, "_parameters") || !strcmp(nm, "_buffers") ||
                   !strcmp(nm, "_modules"))) {
            PyObject *key, *val;
            Py_ssize_t pos = 0;
            while (PyDict_Next(s->fx_attr, &pos, &key, &val))
                if (PyTuple_GET_ITEM(val, 0) == obj &&
                    (whole || module_store_registers(obj, PyTuple_GET_ITEM(key, 1),
                                                     PyTuple_GET_ITEM(val, 1))))
                    return tr_break(s, "side effect: reads %s of a %s after an attribute "
                                    "store in the frame (not supported)", nm, tr_type_name(obj));
        }
        return 0;
    }
    tr_make_value(s, out, Py_NewRef(PyTuple_GET_ITEM(e, 1)));
    return 1;
}

/* ---------------- globals ---------------- */
int tr_fx_store_global(tr_state *s, tr_frame *fr, PyObject *name, tr_var *val)
{
    if (fr->globals != s->f->globals)
        return tr_break(s, "side effect: store to global '%s' of another module "
                        "(not supported)", PyUnicode_AsUTF8(name));
    if (in_generator(s))
        return tr_break(s, "side effect: global store inside a generator (not supported)");
    if (check_value(s, val, "global store") < 0 || glob_set(s, fr->globals, name, val->v) < 0)
        return -1;
    return fx_push(s, ST_FX_GLOBAL, NULL, NULL, name, val->v);
}

int tr_fx_load_global(tr_state *s, tr_frame *fr, PyObject *name, tr_var *out)
{
    return glob_get(s, fr->globals, name, out);
}

/* ---------------- shadows of lists and dicts ---------------- */
PyObject *tr_fx_substitute(tr_state *s, PyObject *o)
{
    if (!s->fx_shadow || !o || tr_is_plain_const(o) || st_fe_is_tensor(o))
        return NULL;
    PyObject *k = tr_id_key(o);
    PyObject *e = k ? PyDict_GetItem(s->fx_shadow, k) : NULL;
    Py_XDECREF(k);
    PyErr_Clear();
    return e ? PyTuple_GET_ITEM(e, 1) : NULL;
}

static PyObject *orig_entry(tr_state *s, PyObject *o)
{
    if (!s->fx_orig || !o || !(PyList_CheckExact(o) || PyDict_CheckExact(o)))
        return NULL;
    PyObject *k = tr_id_key(o);
    PyObject *e = k ? PyDict_GetItem(s->fx_orig, k) : NULL;
    Py_XDECREF(k);
    PyErr_Clear();
    return e;
}

st_fe_src *tr_fx_shadow_src(tr_state *s, PyObject *o)
{
    PyObject *e = orig_entry(s, o);
    if (!e)
        return NULL;
    long id = PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
    return (id >= 0 && id < s->srcs.n) ? s->srcs.v[id] : NULL;
}

PyObject *tr_fx_dict_view(PyObject *d, int aux)
{
    return PyObject_CallMethod(d, aux == TR_AUX_KEYS ? "keys" : aux == TR_AUX_VALUES ? "values"
                                                                                   : "items", NULL);
}

/* A view of sh of the kind of slot v's view when it views o; NULL otherwise
 * (or on error, cleared: the slot keeps the stale view) */
static PyObject *view_of_shadow(const tr_var *v, PyObject *o, PyObject *sh)
{
    if (!st_fe_is_dict_view(v->v) || (PyObject *)((_PyDictViewObject *)v->v)->dv_dict != o)
        return NULL;
    PyObject *r = tr_fx_dict_view(sh, v->aux);
    if (!r)
        PyErr_Clear();
    return r;
}

/* every slot (and unrolled iterator's item) holding o now holds sh; a
 * view of o passed in (d.keys() given as an argument) becomes that view
 * of sh, so that it shows what the frame writes into o (as a view does) */
static void replace_in(tr_var *v, int n, PyObject *o, PyObject *sh, int depth)
{
    for (int i = 0; i < n; i++) {
        if (v[i].it && depth < 8)
            replace_in(v[i].it->items, v[i].it->n, o, sh, depth + 1);
        if (v[i].v == o && !v[i].it && v[i].aux == TR_AUX_NONE) {
            Py_SETREF(v[i].v, Py_NewRef(sh));
            v[i].src = NULL;
        }
        PyObject *nv = !v[i].it && v[i].aux >= TR_AUX_KEYS && v[i].aux <= TR_AUX_ITEMS
                       ? view_of_shadow(&v[i], o, sh) : NULL;
        if (nv) {
            Py_SETREF(v[i].v, nv);
            v[i].src = NULL;
        }
    }
}

static bool is_attr_dict_src(const st_fe_src *src)
{
    if (src->kind == ST_SRC_MODPART)
        return true;
    if (src->kind != ST_SRC_ATTR)
        return false;
    const char *nm = PyUnicode_AsUTF8(src->name);
    return nm && (!strcmp(nm, "__dict__") || !strcmp(nm, "_parameters") ||
                  !strcmp(nm, "_buffers") || !strcmp(nm, "_modules") ||
                  !strcmp(nm, "__globals__"));
}

int tr_fx_redirect(tr_state *s, tr_var *v, const char *what)
{
    PyObject *o = v->v;
    if (!o || st_fe_is_tensor(o) || tr_is_fresh(s, o))
        return 0;
    if (!PyList_CheckExact(o) && !PyDict_CheckExact(o))
        return tr_break(s, "side effect: %s on a %s from outside the frame "
                        "(not supported)", what, tr_type_name(o));
    if (in_generator(s))
        return tr_break(s, "side effect: %s inside a generator (not supported)", what);
    PyObject *sh = tr_fx_substitute(s, o);
    if (!sh) {
        st_fe_src *src = tr_lookup_src(s, o);
        if (!src)
            return tr_break(s, "side effect: %s on a %s from outside the frame that has "
                            "no source (cannot be replayed)", what, tr_type_name(o));
        if (is_attr_dict_src(src))
            return tr_break(s, "side effect: %s on an attribute dict (not supported)", what);
        if (ensure(s, &s->fx_shadow) < 0 || ensure(s, &s->fx_orig) < 0)
            return -1;
        sh = PyList_CheckExact(o) ? PyList_GetSlice(o, 0, PY_SSIZE_T_MAX) : PyDict_Copy(o);
        PyObject *ko = tr_id_key(o), *ks = tr_id_key(sh);
        PyObject *eo = sh ? PyTuple_Pack(2, o, sh) : NULL;
        PyObject *es = sh ? Py_BuildValue("(Oi)", o, src->id) : NULL;
        int rc = (ko && ks && eo && es && PyDict_SetItem(s->fx_shadow, ko, eo) == 0 &&
                  PyDict_SetItem(s->fx_orig, ks, es) == 0 && tr_mark_fresh(s, sh) == 0) ? 0 : -1;
        Py_XDECREF(ko);
        Py_XDECREF(ks);
        Py_XDECREF(eo);
        Py_XDECREF(es);
        if (rc == 0)
            rc = fx_push(s, PyList_CheckExact(o) ? ST_FX_LIST : ST_FX_DICT, src, o, NULL, sh);
        else
            rc = tr_break_exc(s, "side effect");
        Py_XDECREF(sh);   /* the maps hold it */
        if (rc < 0)
            return -1;
        sh = tr_fx_substitute(s, o);
        for (tr_frame *fr = s->top; fr; fr = fr->parent) {
            replace_in(fr->locals, fr->nlocals, o, sh, 0);
            replace_in(fr->stack, fr->sp, o, sh, 0);
        }
        for (tr_frame *fr = s->gens; fr; fr = fr->gnext) {   /* suspended generators */
            replace_in(fr->locals, fr->nlocals, o, sh, 0);
            replace_in(fr->stack, fr->sp, o, sh, 0);
        }
    }
    Py_SETREF(v->v, Py_NewRef(sh));
    v->src = NULL;
    return 0;
}

/* ---------------- applying the log (the translation's call) ---------------- */
/* The originals in place of the shadows inside v. A list or dict made in
 * the frame (and a fresh user object's __dict__) is fixed in place: it is
 * the object the frame stored and returns, one object however often the
 * log and the result reach it. Anything else holding a shadow (a tuple) is
 * copied, once: memo maps id(v) to what v became. */
static PyObject *unshadow(tr_state *s, PyObject *v, PyObject *memo, int depth);

static int unshadow_items_in_place(tr_state *s, PyObject *v, PyObject *memo, int depth)
{
    if (PyDict_CheckExact(v)) {
        PyObject *keys = PyDict_Keys(v);
        for (Py_ssize_t i = 0; keys && i < PyList_GET_SIZE(keys); i++) {
            PyObject *key = PyList_GET_ITEM(keys, i);
            PyObject *val = PyDict_GetItemWithError(v, key);
            if (!val)
                continue;
            Py_INCREF(val);
            PyObject *u = unshadow(s, val, memo, depth + 1);
            int rc = u ? (u == val ? 0 : PyDict_SetItem(v, key, u)) : -1;
            Py_DECREF(val);
            Py_XDECREF(u);
            if (rc < 0)
                Py_CLEAR(keys);
        }
        if (!keys)
            return -1;
        Py_DECREF(keys);
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *it = Py_NewRef(PyList_GET_ITEM(v, i));
        PyObject *u = unshadow(s, it, memo, depth + 1);
        Py_DECREF(it);
        if (!u)
            return -1;
        if (i < PyList_GET_SIZE(v) && u != PyList_GET_ITEM(v, i))
            PyList_SetItem(v, i, u);   /* steals u */
        else
            Py_DECREF(u);
    }
    return 0;
}

static PyObject *unshadow(tr_state *s, PyObject *v, PyObject *memo, int depth)
{
    PyObject *e = orig_entry(s, v);
    if (e)
        return Py_NewRef(PyTuple_GET_ITEM(e, 0));
    if (PyMethod_Check(v) || PyCFunction_Check(v)) {
        /* a method of a shadow live at a break (lst.append while
         * lst.append(t.item()) broke): bound to the original again */
        bool py = PyMethod_Check(v);
        PyObject *self = py ? PyMethod_GET_SELF(v) : PyCFunction_GET_SELF(v);
        PyObject *o = self ? orig_entry(s, self) : NULL;
        if (!o)
            return Py_NewRef(v);
        o = PyTuple_GET_ITEM(o, 0);
        return py ? PyMethod_New(PyMethod_GET_FUNCTION(v), o)
                  : PyObject_GetAttrString(o, ((PyCFunctionObject *)v)->m_ml->ml_name);
    }
    bool inplace = (PyList_CheckExact(v) || PyDict_CheckExact(v)) && tr_is_fresh(s, v);
    bool user = !inplace && tr_fresh_user_obj(s, v);
    if (depth > 32 || !(inplace || user || PyTuple_CheckExact(v) || PyList_CheckExact(v) ||
                        PyDict_CheckExact(v)))
        return Py_NewRef(v);
    PyObject *k = tr_id_key(v);
    if (!k)
        return NULL;
    /* memo: id(v) -> (v, what it became); holding v keeps its id unused */
    PyObject *done = PyDict_GetItemWithError(memo, k);
    if (done || PyErr_Occurred()) {
        Py_DECREF(k);
        return done ? Py_NewRef(PyTuple_GET_ITEM(done, 1)) : NULL;
    }
    if (inplace || user) {
        PyObject *d = user ? PyObject_GenericGetDict(v, NULL) : Py_NewRef(v);
        if (!d && user) {   /* no __dict__ (slots): nothing to fix */
            PyErr_Clear();
            d = Py_NewRef(Py_None);
        }
        PyObject *pair = PyTuple_Pack(2, v, v);
        int rc = d && pair && PyDict_SetItem(memo, k, pair) == 0 &&
                 (d == Py_None || unshadow_items_in_place(s, d, memo, depth) == 0)
                 ? 0 : -1;
        Py_XDECREF(pair);
        Py_XDECREF(d);
        Py_DECREF(k);
        return rc == 0 ? Py_NewRef(v) : NULL;
    }
    PyObject *c = NULL;
    bool changed = false;
    if (PyDict_CheckExact(v)) {
        PyObject *key, *val;
        Py_ssize_t pos = 0;
        c = PyDict_New();
        while (c && PyDict_Next(v, &pos, &key, &val)) {
            PyObject *u = unshadow(s, val, memo, depth + 1);
            changed |= (u != val);
            if (!u || PyDict_SetItem(c, key, u) < 0)
                Py_CLEAR(c);
            Py_XDECREF(u);
        }
    } else {
        PyObject *items = PySequence_Tuple(v);
        Py_ssize_t n = items ? PyTuple_GET_SIZE(items) : 0;
        c = !items ? NULL : PyList_CheckExact(v) ? PyList_New(n) : PyTuple_New(n);
        for (Py_ssize_t i = 0; c && i < n; i++) {
            PyObject *it = PyTuple_GET_ITEM(items, i), *u = unshadow(s, it, memo, depth + 1);
            if (!u) {
                Py_CLEAR(c);
                break;
            }
            changed |= (u != it);
            if (PyList_CheckExact(v)) PyList_SET_ITEM(c, i, u);
            else PyTuple_SET_ITEM(c, i, u);
        }
        Py_XDECREF(items);
    }
    if (c && !changed)
        Py_SETREF(c, Py_NewRef(v));
    PyObject *pair = c ? PyTuple_Pack(2, v, c) : NULL;
    if (c && (!pair || PyDict_SetItem(memo, k, pair) < 0))
        Py_CLEAR(c);
    Py_XDECREF(pair);
    Py_DECREF(k);
    return c;
}

/* the shadow's contents with shadows inside replaced: a plain list/dict */
static PyObject *contents_of(tr_state *s, PyObject *sh, PyObject *memo)
{
    PyObject *copy = PyList_CheckExact(sh) ? PyList_GetSlice(sh, 0, PY_SSIZE_T_MAX)
                                           : PyDict_Copy(sh);
    if (!copy)
        return NULL;
    PyObject *u = unshadow(s, copy, memo, 0);
    Py_DECREF(copy);
    return u;
}

/* memo: id(v) -> (v, its plain value); holding v keeps its id unused */
static PyObject *plain_of(PyObject *v, PyObject *memo, int depth)
{
    if (tr_is_lazy(v) || tr_is_symint(v))
        return tr_plain_values(v, 0);
    bool tup = st_fe_tuple_like(v);
    if (depth > 32 || !(tup || PyList_CheckExact(v) || PyDict_CheckExact(v)))
        return Py_NewRef(v);
    PyObject *k = tr_id_key(v);
    PyObject *done = k ? PyDict_GetItemWithError(memo, k) : NULL;
    if (done || !k || PyErr_Occurred()) {
        Py_XDECREF(k);
        return done ? Py_NewRef(PyTuple_GET_ITEM(done, 1)) : NULL;
    }
    PyObject *r = NULL;
    if (!tup) {
        /* a list or dict: its items replaced in place (itself first in the
         * memo: it may contain itself) */
        PyObject *pair = PyTuple_Pack(2, v, v);
        int rc = pair && PyDict_SetItem(memo, k, pair) == 0 ? 0 : -1;
        Py_XDECREF(pair);
        PyObject *items = rc < 0 ? NULL : PyList_CheckExact(v) ? PySequence_Tuple(v)
                                                               : PyDict_Items(v);
        Py_ssize_t n = items ? PySequence_Size(items) : 0;
        for (Py_ssize_t i = 0; items && i < n; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(items, i);
            PyObject *val = PyList_CheckExact(v) ? it : PySequence_Fast_GET_ITEM(it, 1);
            PyObject *u = plain_of(val, memo, depth + 1);
            int ok = u ? 0 : -1;
            if (u && u != val)
                ok = PyList_CheckExact(v)
                     ? (i < PyList_GET_SIZE(v) ? PyList_SetItem(v, i, Py_NewRef(u)) : 0)
                     : PyDict_SetItem(v, PySequence_Fast_GET_ITEM(it, 0), u);
            Py_XDECREF(u);
            if (ok < 0)
                Py_CLEAR(items);
        }
        r = items ? Py_NewRef(v) : NULL;
        Py_XDECREF(items);
        Py_DECREF(k);
        return r;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(v);
    PyObject **its = calloc((size_t)n + 1, sizeof *its);
    bool changed = false, ok = its != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        its[i] = plain_of(PyTuple_GET_ITEM(v, i), memo, depth + 1);
        ok = its[i] != NULL;
        changed |= ok && its[i] != PyTuple_GET_ITEM(v, i);
    }
    if (ok && !changed) {
        r = Py_NewRef(v);
    } else if (ok) {
        r = st_fe_is_size(v) ? st_fe_size_type.tp_alloc(&st_fe_size_type, n) : PyTuple_New(n);
        for (Py_ssize_t i = 0; r && i < n; i++)
            PyTuple_SET_ITEM(r, i, Py_NewRef(its[i]));
    }
    for (Py_ssize_t i = 0; its && i < n; i++)
        Py_XDECREF(its[i]);
    free(its);
    if (!its)
        PyErr_NoMemory();
    PyObject *pair = r ? PyTuple_Pack(2, v, r) : NULL;
    if (r && (!pair || PyDict_SetItem(memo, k, pair) < 0))
        Py_CLEAR(r);
    Py_XDECREF(pair);
    Py_DECREF(k);
    return r;
}

PyObject *tr_fx_plain(PyObject *v, PyObject *memo)
{
    if (!v)
        return NULL;
    PyObject *m = memo ? Py_NewRef(memo) : PyDict_New();
    PyObject *r = m ? plain_of(v, m, 0) : NULL;
    Py_XDECREF(m);
    return r;
}

/* The log, in order, then s->retval with the originals in place of the
 * shadows: one memo, so that an object the log stores and the result
 * returns stays one object. */
int tr_fx_apply(tr_state *s)
{
    PyObject *memo = PyDict_New(), *pmemo = PyDict_New();
    if (!memo || !pmemo) {
        Py_XDECREF(memo);
        Py_XDECREF(pmemo);
        return -1;
    }
    for (int i = 0; i < s->nfx; i++) {
        tr_fx *r = &s->fx[i];
        PyObject *v = (r->kind == ST_FX_LIST || r->kind == ST_FX_DICT)
                      ? contents_of(s, r->val, memo) : unshadow(s, r->val, memo, 0);
        int rc = -1;
        if (v)   /* plain numbers, not the translation's lazy ones */
            Py_SETREF(v, tr_fx_plain(v, pmemo));
        if (!v) {
            Py_DECREF(memo);
            Py_DECREF(pmemo);
            return -1;
        }
        switch (r->kind) {
        case ST_FX_SETATTR: rc = PyObject_SetAttr(r->obj, r->name, v); break;
        case ST_FX_GLOBAL: rc = PyDict_SetItem(s->f->globals, r->name, v); break;
        case ST_FX_LIST: rc = PyList_SetSlice(r->obj, 0, PY_SSIZE_T_MAX, v); break;
        case ST_FX_DICT:
            PyDict_Clear(r->obj);
            rc = PyDict_Update(r->obj, v);
            break;
        case ST_FX_CALL:
            rc = st_fe_fx_call(v);
            break;
        }
        Py_DECREF(v);
        if (rc < 0) {
            Py_DECREF(memo);
            Py_DECREF(pmemo);
            return -1;
        }
    }
    PyObject *rv = s->retval ? unshadow(s, s->retval, memo, 0) : NULL;
    if (rv)   /* what the log stored and the result returns: one object */
        Py_SETREF(rv, tr_fx_plain(rv, pmemo));
    Py_DECREF(memo);
    Py_DECREF(pmemo);
    if (s->retval && !rv)
        return -1;
    if (rv)
        Py_SETREF(s->retval, rv);
    return 0;
}

void tr_fx_clear(tr_state *s)
{
    for (int i = 0; i < s->nfx; i++) {
        Py_XDECREF(s->fx[i].obj);
        Py_XDECREF(s->fx[i].name);
        Py_XDECREF(s->fx[i].val);
    }
    free(s->fx);
    s->fx = NULL;
    s->nfx = s->capfx = 0;
    s->fx_barrier = s->fx_barrier_call = s->fx_grad_barrier = false;
    s->fx_barrier_at = s->fx_weak_at = 0;
    Py_CLEAR(s->fx_attr);
    Py_CLEAR(s->fx_glob);
    Py_CLEAR(s->fx_shadow);
    Py_CLEAR(s->fx_orig);
}

/* ---------------- calls performed after the graph ----------------
 * A call the translator does not follow but whose result the frame drops
 * and whose work the graph need not see: recorded (ST_FX_CALL) and made,
 * in order with the other effects, after the graph. Two kinds:
 *  - opt.step(), sched.step(), opt.zero_grad() of symtrace.optim (an
 *    Optimizer or an LRScheduler, methods defined in symtrace.optim): they
 *    update parameters, gradients, learning rates and counters that the
 *    rest of the frame could read. After one (s->fx_barrier) the frame may
 *    only load objects, make more such calls and return (tr_fx_barrier_op);
 *    anything else breaks there, so nothing reads their state stale.
 *    zero_grad() first in the graph changes only .grad: after it only a
 *    read of a tensor's .grad breaks (s->fx_grad_barrier; backward()
 *    breaks anyway).
 *  - warnings.warn(message[, category[, stacklevel]]): replayed with
 *    warnings.warn_explicit at the user's file and line, with the module's
 *    __warningregistry__ (symtrace/_compile.py _replay_warn), so filters
 *    dedupe as in eager. A filter that makes it an error breaks the graph
 *    there (the call raises in Python); a guard re-checks that on each call. */
static PyObject *optim_cls[3];     /* Optimizer, LRScheduler, ReduceLROnPlateau */
static PyObject *warn_fns[2];      /* _warnings.warn, warnings.warn */
static PyObject *warn_plan_fn, *warn_replay_fn;

static int defer_init(void)
{
    if (warn_replay_fn)
        return 0;
    static const char *const where[5][2] = {
        {"symtrace.optim.optimizer", "Optimizer"}, {"symtrace.optim.lr_scheduler", "LRScheduler"},
        {"symtrace.optim.lr_scheduler", "ReduceLROnPlateau"}, {"_warnings", "warn"},
        {"warnings", "warn"}};
    PyObject *got[5] = {NULL};
    for (int i = 0; i < 5; i++) {
        PyObject *m = PyImport_ImportModule(where[i][0]);
        got[i] = m ? PyObject_GetAttrString(m, where[i][1]) : NULL;
        Py_XDECREF(m);
        if (!got[i])
            PyErr_Clear();     /* absent: that kind is never deferred */
    }
    PyObject *cm = PyImport_ImportModule("symtrace._compile");
    PyObject *plan = cm ? PyObject_GetAttrString(cm, "_warn_plan") : NULL;
    PyObject *replay = cm ? PyObject_GetAttrString(cm, "_replay_warn") : NULL;
    Py_XDECREF(cm);
    if (!plan || !replay) {
        Py_XDECREF(plan);
        Py_XDECREF(replay);
        for (int i = 0; i < 5; i++)
            Py_XDECREF(got[i]);
        return -1;
    }
    for (int i = 0; i < 3; i++)
        optim_cls[i] = got[i];
    warn_fns[0] = got[3];
    warn_fns[1] = got[4];
    warn_plan_fn = plan;
    warn_replay_fn = replay;
    return 0;
}

static bool plain_arg(const tr_var *a)
{
    return a->v && !a->it && a->aux == TR_AUX_NONE && tr_is_const_value(a->v) &&
           !tr_is_lazy(a->v) && !tr_is_symint(a->v);
}

static int defer_push(tr_state *s, PyObject *fn, PyObject *args, PyObject *kw, tr_var *out)
{
    PyObject *rec = args ? PyTuple_Pack(3, fn, args, kw ? kw : Py_None) : NULL;
    int rc = rec ? fx_push(s, ST_FX_CALL, NULL, NULL, NULL, rec) : tr_break_exc(s, "side effect");
    Py_XDECREF(rec);
    if (rc < 0)
        return -1;
    tr_make_value(s, out, Py_NewRef(Py_None));
    return 1;
}

/* kwargs of a call as a dict (NULL: none); args[npos..nargs) are their values */
static PyObject *kw_dict(tr_var *args, int npos, PyObject *kwnames)
{
    if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0)
        return NULL;
    PyObject *d = PyDict_New();
    for (Py_ssize_t j = 0; d && j < PyTuple_GET_SIZE(kwnames); j++)
        if (PyDict_SetItem(d, PyTuple_GET_ITEM(kwnames, j), args[npos + j].v) < 0)
            Py_CLEAR(d);
    return d;
}

static int defer_optim(tr_state *s, PyObject *func, PyObject *self, tr_var *args, int nargs,
                       PyObject *kwnames, tr_var *out)
{
    if (!PyFunction_Check(func))
        return 0;
    PyObject *nm = ((PyFunctionObject *)func)->func_name;
    if ((PyUnicode_CompareWithASCIIString(nm, "step") &&
         PyUnicode_CompareWithASCIIString(nm, "zero_grad")) ||
        !tr_module_starts(func, "symtrace.optim"))
        return 0;
    bool known = false;
    for (int i = 0; i < 3 && !known; i++)
        known = optim_cls[i] && PyObject_TypeCheck(self, (PyTypeObject *)optim_cls[i]);
    /* its result dropped, its arguments constants (no closure), called in
     * the mode the frame was entered in (the replay runs in that mode),
     * self an object the entry can find again */
    if (!known || !tr_next_is_pop(s->top) || in_generator(s) || tr_is_fresh(s, self) ||
        !tr_lookup_src(s, self) || st_ad_grad_enabled() != s->guards.grad_mode ||
        st_rt_autocast_state() != s->guards.autocast)
        return 0;
    for (int i = 0; i < nargs; i++)
        if (!plain_arg(&args[i]))
            return 0;
    int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *a = PyTuple_New(npos + 1);
    PyObject *kw = kw_dict(args, npos, kwnames);
    if (!a || (kwnames && PyTuple_GET_SIZE(kwnames) && !kw)) {
        Py_XDECREF(a);
        Py_XDECREF(kw);
        return tr_break_exc(s, "side effect");
    }
    PyTuple_SET_ITEM(a, 0, Py_NewRef(self));
    for (int i = 0; i < npos; i++)
        PyTuple_SET_ITEM(a, i + 1, Py_NewRef(args[i].v));
    int rc = defer_push(s, func, a, kw, out);
    Py_DECREF(a);
    Py_XDECREF(kw);
    tr_frame *root = s->top;
    while (root->parent)
        root = root->parent;
    if (rc > 0 && !PyUnicode_CompareWithASCIIString(nm, "zero_grad")) {
        /* it changes only the parameters' .grad: the forward that follows
         * (opt.zero_grad(); loss = model(x)) stays in the graph, also with
         * ops before it (fake = G(z); d.zero_grad(); ld = D(fake.detach())):
         * a backward from one output of the graph frees only that output's
         * share of its saved tensors (runtime/cfn.c node_backward) */
        s->fx_grad_barrier = true;
        if (!s->fx_weak_at)
            s->fx_weak_at = root->lasti + 1;
    } else if (rc > 0 && !s->fx_barrier) {
        s->fx_barrier = true;
        s->fx_barrier_at = root->lasti + 1;
    }
    return rc;
}

/* warnings.warn(message, category=None, stacklevel=1, source=None) */
static int defer_warn(tr_state *s, tr_var *fnv, tr_var *args, int nargs, PyObject *kwnames,
                      tr_var *out)
{
    static const char *const names[] = {"message", "category", "stacklevel", "source"};
    tr_var *slot[4] = {NULL, NULL, NULL, NULL};
    int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
    if (npos > 4)
        return 0;
    for (int i = 0; i < npos; i++)
        slot[i] = &args[i];
    for (int j = npos; j < nargs; j++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j - npos));
        int i = 0;
        while (k && i < 4 && strcmp(k, names[i]))
            i++;
        if (!k || i == 4 || slot[i])    /* skip_file_prefixes (3.12), a bad call */
            return 0;
        slot[i] = &args[j];
    }
    for (int i = 0; i < 4; i++)
        if (slot[i] && !plain_arg(slot[i]))
            return 0;
    PyObject *msg = slot[0] ? slot[0]->v : NULL;
    PyObject *cat = slot[1] ? slot[1]->v : Py_None;
    PyObject *lvl = slot[2] ? slot[2]->v : NULL;
    if (!msg || !PyUnicode_CheckExact(msg) || (slot[3] && slot[3]->v != Py_None))
        return 0;
    if (cat == Py_None)
        cat = PyExc_UserWarning;
    if (!PyType_Check(cat) || !PyType_IsSubtype((PyTypeObject *)cat,
                                                (PyTypeObject *)PyExc_Warning))
        return 0;
    long level = lvl ? PyLong_AsLong(lvl) : 1;
    if (level == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    /* the frame stacklevel names: one the translation follows */
    tr_frame *fr = s->top;
    for (long k = 1; fr && k < level; k++)
        fr = fr->parent;
    st_fe_src *fsrc = tr_var_src(s, fnv);
    if (!fr || level < 1 || in_generator(s) || !fsrc)
        return 0;
    PyObject *mod = PyDict_GetItemString(fr->globals, "__name__");
    if (!mod || !PyUnicode_Check(mod))
        return 0;
    /* its registry is found again through sys.modules */
    PyObject *sysmods = PyImport_GetModuleDict();
    PyObject *m = sysmods ? PyDict_GetItemWithError(sysmods, mod) : NULL;
    PyObject *md = m && PyModule_Check(m) ? PyModule_GetDict(m) : NULL;
    PyErr_Clear();
    if (md != fr->globals)
        return 0;
    int line = PyCode_Addr2Line(fr->code, fr->lasti * 2);
    PyObject *ln = PyLong_FromLong(line);
    PyObject *plan = ln ? PyObject_CallFunctionObjArgs(warn_plan_fn, msg, cat, mod, ln, NULL)
                        : NULL;
    if (!plan) {
        Py_XDECREF(ln);
        return tr_break_exc(s, "warnings.warn");
    }
    if (plan == Py_None) {
        Py_DECREF(plan);
        Py_DECREF(ln);
        return tr_break(s, "warnings.warn: a filter turns this warning into an error");
    }
    int rc = st_fe_guard_pred(&s->guards, fsrc, plan);
    Py_DECREF(plan);
    PyObject *a = rc < 0 ? NULL : PyTuple_Pack(5, msg, cat, fr->code->co_filename, ln, mod);
    Py_DECREF(ln);
    if (!a)
        return tr_break_exc(s, "warnings.warn");
    rc = defer_push(s, warn_replay_fn, a, NULL, out);
    Py_DECREF(a);
    return rc;
}

int tr_fx_defer_call(tr_state *s, tr_var *fnv, tr_var *args, int nargs, PyObject *kwnames,
                     tr_var *out)
{
    PyObject *fn = fnv->v;
    if (!fn || fnv->it || fnv->aux != TR_AUX_NONE)
        return 0;
    if (defer_init() < 0)
        return tr_break_exc(s, "side effect");
    if (fn == warn_fns[0] || fn == warn_fns[1])
        return defer_warn(s, fnv, args, nargs, kwnames, out);
    if (PyMethod_Check(fn))
        return defer_optim(s, PyMethod_GET_FUNCTION(fn), PyMethod_GET_SELF(fn), args, nargs,
                           kwnames, out);
    if (PyFunction_Check(fn) && nargs >= 1 && args[0].v && !args[0].it &&
        (!kwnames || nargs - 1 >= (int)PyTuple_GET_SIZE(kwnames)))
        return defer_optim(s, fn, args[0].v, args + 1, nargs - 1, kwnames, out);
    return 0;
}

int tr_fx_barrier_op(tr_state *s, const char *opname, int kind, const tr_var *top)
{
    if (!s->fx_barrier || kind == TR_FXB_OK)
        return 0;
    if (kind == TR_FXB_LOAD) {
        /* objects keep their identity across the calls; a number, string,
         * tuple or tensor attribute read now would be the value before them
         * (lr, last_epoch, p.grad). Globals and closure cells: what these
         * calls do does not rebind them (a user's step hook that did would
         * not be seen here) */
        PyObject *v = top ? top->v : NULL;
        if (!v || top->it || (!st_fe_is_tensor(v) && !tr_is_const_value(v) && !PyTuple_Check(v) &&
                              !tr_is_lazy(v) && !tr_is_symint(v)))
            return 0;
    } else {
        s->fx_barrier_call = true;
    }
    return tr_break(s, "%s after a call performed after the graph (opt.step(), sched.step(), "
                    "opt.zero_grad()): it could read what that call changes", opname);
}
