/* frontend/tr_iter.c - iteration and subscripts in the translator:
 * unrolled iterators over tuples, lists, dicts and their views, ranges,
 * symtrace module containers (items keep ITEM/MODPART sources) and
 * generators (their frames resumed item by item), consumed item by item
 * (next, for, yield from) or at once (list(), unpacking), and what x[k]
 * does (tensor: traced; sourced container: ITEM source). */
#include "tr_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- iterators ---------------- */
void tr_iter_decref(tr_iter *it)
{
    if (!it || --it->refs > 0)
        return;
    for (int i = 0; i < it->n; i++)
        tr_var_clear(&it->items[i]);
    free(it->items);
    tr_frame_free(it->gen);
    Py_XDECREF(it->type);
    tr_var_clear(&it->ret);
    Py_XDECREF(it->watch);
    free(it);
}

/* ---------------- containers changed while iterated ---------------- */
static bool watched_kind(PyObject *o)
{
    return o && (PyList_CheckExact(o) || PyDict_CheckExact(o) || PySet_CheckExact(o) ||
                 PyDictKeys_Check(o) || PyDictValues_Check(o) || PyDictItems_Check(o));
}

int tr_iter_watch(tr_state *s, tr_var *obj, PyObject **watch)
{
    if (obj->it && !obj->it->watch)
        return 0;
    if (!obj->it && (obj->aux != TR_AUX_NONE && obj->aux != TR_AUX_KEYS &&
                     obj->aux != TR_AUX_VALUES && obj->aux != TR_AUX_ITEMS))
        return 0;
    if (!obj->it && !watched_kind(obj->v))
        return 0;
    if (!*watch && !(*watch = PyList_New(0)))
        return tr_break_exc(s, "iterator");
    if (obj->it) {
        tr_iter *it = obj->it;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(it->watch); i++) {
            PyObject *e = PyList_GET_ITEM(it->watch, i);
            long off = PyLong_AsLong(PyTuple_GET_ITEM(e, 2)) + it->pos;
            PyObject *ne = Py_BuildValue("(OOl)", PyTuple_GET_ITEM(e, 0),
                                         PyTuple_GET_ITEM(e, 1), off);
            if (!ne || PyList_Append(*watch, ne) < 0) {
                Py_XDECREF(ne);
                return tr_break_exc(s, "iterator");
            }
            Py_DECREF(ne);
        }
        return 0;
    }
    PyObject *snap = PySequence_Tuple(obj->v);
    PyObject *e = snap ? Py_BuildValue("(ONi)", obj->v, snap, 0) : NULL;
    if (!e || PyList_Append(*watch, e) < 0) {
        Py_XDECREF(e);
        return tr_break_exc(s, "iterator");
    }
    Py_DECREF(e);
    return 0;
}

/* one item of a container against its snapshot: the same objects (an item
 * pair of a dict's items() compared by key and value); only the key where
 * value is false (an item already produced: changing its value is fine) */
static bool same_item(PyObject *a, PyObject *b, bool value)
{
    if (a == b)
        return true;
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(a) != 2 ||
        PyTuple_GET_SIZE(b) != 2)
        return false;
    return PyTuple_GET_ITEM(a, 0) == PyTuple_GET_ITEM(b, 0) &&
           (!value || PyTuple_GET_ITEM(a, 1) == PyTuple_GET_ITEM(b, 1));
}

/* 1: the container of watch entry e no longer gives what its snapshot
 * holds from item pos on (nor the same number of items), 0: unchanged */
static int watch_changed(tr_state *s, PyObject *e, int pos)
{
    PyObject *c = PyTuple_GET_ITEM(e, 0), *snap = PyTuple_GET_ITEM(e, 1);
    PyObject *sh = tr_fx_substitute(s, c);   /* a list/dict from outside, mutated: its shadow */
    if (sh)
        c = sh;
    Py_ssize_t n = PyTuple_GET_SIZE(snap);
    long first = PyLong_AsLong(PyTuple_GET_ITEM(e, 2)) + pos;
    if (PyObject_Size(c) != n) {
        PyErr_Clear();
        return 1;
    }
    /* items already produced: a list's or a dict's values may change, keys not */
    bool keyed = !PyList_CheckExact(c) && !PyDictValues_Check(c);
    if (PyList_CheckExact(c)) {
        for (Py_ssize_t i = first < 0 ? 0 : first; i < n; i++)
            if (PyList_GET_ITEM(c, i) != PyTuple_GET_ITEM(snap, i))
                return 1;
        return 0;
    }
    PyObject *it = PyObject_GetIter(c), *v;
    if (!it) {
        PyErr_Clear();
        return 1;
    }
    Py_ssize_t i = 0;
    int changed = 0;
    while (!changed && (v = PyIter_Next(it))) {
        if (i >= n || ((i >= first || keyed) &&
                       !same_item(v, PyTuple_GET_ITEM(snap, i), i >= first)))
            changed = 1;
        Py_DECREF(v);
        i++;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        changed = 1;
    }
    return changed || i != n;
}

static int taken_break(tr_state *s)
{
    return tr_break(s, "an iterator used after map, filter, zip or enumerate took it "
                    "(they consume it lazily in Python; not supported)");
}

int tr_iter_next(tr_state *s, tr_var *itv, tr_var *out)
{
    tr_iter *it = itv->it;
    memset(out, 0, sizeof *out);
    if (!it)
        return tr_break(s, "next() of a %s", tr_type_name(itv->v));
    if (it->taken)
        return taken_break(s);
    for (Py_ssize_t i = 0; it->watch && i < PyList_GET_SIZE(it->watch); i++) {
        PyObject *c = PyTuple_GET_ITEM(PyList_GET_ITEM(it->watch, i), 0);
        if (watch_changed(s, PyList_GET_ITEM(it->watch, i), it->pos))
            return tr_break(s, "a %s changed while an iterator over it was in use "
                            "(Python iterates it live)", tr_type_name(c));
    }
    if (it->pos < it->n) {
        tr_var_copy(out, &it->items[it->pos++]);
        return 1;
    }
    return it->gen ? tr_gen_resume(s, it, out) : 0;
}

void tr_iter_take(tr_var *v)
{
    if (v->it)
        v->it->taken = true;
}

int tr_vl_push(tr_state *s, tr_vlist *l, tr_var *v)
{
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 8;
        tr_var *n = realloc(l->v, sizeof(tr_var) * (size_t)nc);
        if (!n) {
            tr_var_clear(v);
            return tr_break(s, "out of memory");
        }
        l->v = n;
        l->cap = nc;
    }
    l->v[l->n++] = *v;
    return 0;
}

void tr_vl_free(tr_vlist *l)
{
    for (int i = 0; i < l->n; i++)
        tr_var_clear(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* An item read from a sourced container: ITEM(src, key). */
int tr_item_var(tr_state *s, st_fe_src *src, PyObject *key, PyObject *val,
                    tr_var *out)
{
    if (!src) {
        tr_make_value(s, out, Py_NewRef(val));
        return 0;
    }
    st_fe_src *is = st_fe_src_item(&s->srcs, src, key);
    if (!is)
        return tr_break_exc(s, "source");
    return tr_make_sourced(s, out, Py_NewRef(val), is);
}

int tr_modpart_var(tr_state *s, st_fe_src *src, const char *part,
                       PyObject *key, PyObject *val, tr_var *out)
{
    if (!src) {
        tr_make_value(s, out, Py_NewRef(val));
        return 0;
    }
    PyObject *p = PyUnicode_FromString(part);
    st_fe_src *ms = p ? st_fe_src_modpart(&s->srcs, src, p, key) : NULL;
    Py_XDECREF(p);
    if (!ms)
        return tr_break_exc(s, "source");
    return tr_make_sourced(s, out, Py_NewRef(val), ms);
}

static PyObject *modules_dict(PyObject *m)
{
    PyObject *d = PyObject_GenericGetDict(m, NULL);
    if (!d)
        return NULL;
    PyObject *md = PyDict_GetItemString(d, "_modules");
    Py_XINCREF(md);
    Py_DECREF(d);
    if (!md && !PyErr_Occurred())
        PyErr_SetString(PyExc_AttributeError, "_modules");
    return md;
}

PyObject *tr_guarded_modules(tr_state *s, tr_var *obj)
{
    PyObject *md = modules_dict(obj->v);
    if (!md) {
        tr_break_exc(s, "module container");
        return NULL;
    }
    st_fe_src *base = obj->src ? obj->src : tr_lookup_src(s, obj->v);
    if (base) {
        PyObject *nm = PyUnicode_FromString("_modules");
        st_fe_src *ms = nm ? st_fe_src_attr(&s->srcs, base, nm) : NULL;
        Py_XDECREF(nm);
        tr_var tmp;
        if (!ms) {
            Py_DECREF(md);
            tr_break_exc(s, "source");
            return NULL;
        }
        if (tr_make_sourced(s, &tmp, Py_NewRef(md), ms) < 0) {
            Py_DECREF(md);
            return NULL;
        }
        tr_var_clear(&tmp);
    }
    return md;
}

int tr_is_kind(PyObject *o, PyObject *cls)
{
    return PyObject_TypeCheck(o, (PyTypeObject *)cls);
}

/* The (key, value) pairs a dict view o walks, in its order, read at the C
 * level: an OrderedDict's views (od.values()) in the OrderedDict's order,
 * a plain dict view (dict.values(od) too) in the dict's. New list. */
static PyObject *view_pairs(PyObject *o)
{
    if (!st_fe_is_dict_view(o)) {
        PyObject *mp = PyObject_GetAttrString(o, "mapping");
        PyObject *its = mp ? PyObject_CallMethod(mp, "items", NULL) : NULL;
        PyObject *seq = its ? PySequence_List(its) : NULL;
        Py_XDECREF(mp);
        Py_XDECREF(its);
        return seq;
    }
    PyObject *d = (PyObject *)((_PyDictViewObject *)o)->dv_dict;
    PyObject *seq = PyList_New(0);
    if (!seq || !d)
        return seq;
    if (!strncmp(Py_TYPE(o)->tp_name, "odict_", 6) && PyODict_Check(d)) {
        PyObject *it = PyODict_Type.tp_iter(d), *k;
        if (!it) {
            Py_DECREF(seq);
            return NULL;
        }
        while ((k = PyIter_Next(it))) {
            PyObject *v = PyDict_GetItemWithError(d, k);
            PyObject *kv = v ? PyTuple_Pack(2, k, v) : NULL;
            Py_DECREF(k);
            if (!kv || PyList_Append(seq, kv) < 0) {
                Py_XDECREF(kv);
                Py_DECREF(it);
                Py_DECREF(seq);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_RuntimeError, "OrderedDict changed while read");
                return NULL;
            }
            Py_DECREF(kv);
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        return seq;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        PyObject *kv = PyTuple_Pack(2, k, v);
        if (!kv || PyList_Append(seq, kv) < 0) {
            Py_XDECREF(kv);
            Py_DECREF(seq);
            return NULL;
        }
        Py_DECREF(kv);
    }
    return seq;
}

int tr_unroll(tr_state *s, tr_var *obj, tr_var **items, int *n)
{
    tr_vlist l = {0};
    PyObject *o = obj->v;
    *items = NULL;
    *n = 0;
    if (obj->it) {
        tr_var v;
        int got;
        while ((got = tr_iter_next(s, obj, &v)) > 0)
            if (tr_vl_push(s, &l, &v) < 0)
                goto fail;
        if (got < 0)
            goto fail;
    } else if (obj->aux == TR_AUX_KEYS || obj->aux == TR_AUX_VALUES || obj->aux == TR_AUX_ITEMS) {
        PyObject *seq = view_pairs(o);
        if (!seq) {
            tr_break_exc(s, "dict view");
            goto fail;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); i++) {
            PyObject *kv = PyList_GET_ITEM(seq, i);
            PyObject *k = PyTuple_GET_ITEM(kv, 0), *v = PyTuple_GET_ITEM(kv, 1);
            tr_var var;
            if (obj->aux == TR_AUX_KEYS) {
                tr_make_value(s, &var, Py_NewRef(k));
            } else {
                if (tr_item_var(s, obj->src, k, v, &var) < 0) {
                    Py_DECREF(seq);
                    goto fail;
                }
                if (obj->aux == TR_AUX_ITEMS) {
                    PyObject *t = PyTuple_Pack(2, k, v);
                    tr_var_clear(&var);
                    if (!t) {
                        Py_DECREF(seq);
                        tr_break_exc(s, "items");
                        goto fail;
                    }
                    tr_make_value(s, &var, t);
                }
            }
            if (tr_vl_push(s, &l, &var) < 0) {
                Py_DECREF(seq);
                goto fail;
            }
        }
        Py_DECREF(seq);
    } else if (o && (PyTuple_Check(o) || PyList_Check(o)) && tr_safe_type(o)) {
        PyObject *t = PySequence_Tuple(o);
        if (!t) {
            tr_break_exc(s, "iteration");
            goto fail;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
            tr_var var;
            PyObject *k = PyLong_FromSsize_t(i);
            int rc = k ? tr_item_var(s, obj->src, k, PyTuple_GET_ITEM(t, i), &var)
                       : tr_break_exc(s, "iteration");
            Py_XDECREF(k);
            if (rc < 0 || tr_vl_push(s, &l, &var) < 0) {
                Py_DECREF(t);
                goto fail;
            }
        }
        Py_DECREF(t);
    } else if (o && (tr_is_kind(o, tr_refs.modlist_cls) || tr_is_kind(o, tr_refs.seq_cls) || tr_is_kind(o, tr_refs.moddict_cls))) {
        PyObject *md = tr_guarded_modules(s, obj);
        if (!md)
            goto fail;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        bool keys = tr_is_kind(o, tr_refs.moddict_cls);
        while (PyDict_Next(md, &pos, &k, &v)) {
            tr_var var;
            int rc = 0;
            if (keys)
                tr_make_value(s, &var, Py_NewRef(k));
            else
                rc = tr_modpart_var(s, obj->src, "_modules", k, v, &var);
            if (rc < 0 || tr_vl_push(s, &l, &var) < 0) {
                Py_DECREF(md);
                goto fail;
            }
        }
        Py_DECREF(md);
    } else if (o && st_fe_is_tensor(o)) {
        tr_break(s, "iteration over a tensor is not supported");
        goto fail;
    } else if (o && tr_safe_type(o) && !PyType_Check(o)) {
        /* dicts (keys, guarded by DICT_KEYS), sets, ranges, strings, views */
        PyObject *it = PyObject_GetIter(o), *v;
        if (!it) {
            tr_break_exc(s, "iteration");
            goto fail;
        }
        while ((v = PyIter_Next(it))) {
            tr_var var;
            tr_make_value(s, &var, v);
            if (tr_vl_push(s, &l, &var) < 0) {
                Py_DECREF(it);
                goto fail;
            }
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) {
            tr_break_exc(s, "iteration");
            goto fail;
        }
    } else {
        tr_break(s, "iteration over a %s is not supported", tr_type_name(o));
        goto fail;
    }
    *items = l.v;
    *n = l.n;
    return 0;
fail:
    tr_vl_free(&l);
    return -1;
}

int tr_iter_from(tr_state *s, tr_var *items, int n, PyObject *type, tr_var *out)
{
    tr_iter *it = calloc(1, sizeof *it);
    if (!it) {
        for (int i = 0; i < n; i++)
            tr_var_clear(&items[i]);
        free(items);
        return tr_break(s, "out of memory");
    }
    it->refs = 1;
    it->items = items;
    it->n = n;
    it->type = Py_XNewRef(type);
    static PyObject *marker;   /* what an unrolled iterator's v holds */
    if (!marker)
        marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    memset(out, 0, sizeof *out);
    out->v = Py_NewRef(marker ? marker : Py_None);
    out->it = it;
    out->aux = TR_AUX_ITER;
    return 0;
}

/* type(iter(o)) for a builtin container or view (its iter() runs no user
 * code), else NULL: new reference, no exception. */
static PyObject *real_iter_type(PyObject *o)
{
    if (!o || !tr_safe_type(o) || st_fe_is_tensor(o) || PyType_Check(o) ||
        tr_is_symint(o) || tr_is_lazy(o))
        return NULL;
    PyObject *it = PyObject_GetIter(o);
    if (!it) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *t = Py_NewRef((PyObject *)Py_TYPE(it));
    Py_DECREF(it);
    return t;
}

int tr_iter_of(tr_state *s, tr_var *obj, tr_var *out)
{
    if (obj->it) {
        tr_var_copy(out, obj);
        return 0;
    }
    tr_var *items;
    int n;
    PyObject *watch = NULL;
    if (tr_iter_watch(s, obj, &watch) < 0 || tr_unroll(s, obj, &items, &n) < 0) {
        Py_XDECREF(watch);
        return -1;
    }
    PyObject *t = real_iter_type(obj->v);
    int rc = tr_iter_from(s, items, n, t, out);
    Py_XDECREF(t);
    if (rc == 0)
        out->it->watch = watch;
    else
        Py_XDECREF(watch);
    return rc;
}

/* ---------------- subscripts ---------------- */
static bool has_tensor(PyObject *k, int depth)
{
    if (st_fe_is_tensor(k))
        return true;
    if (depth > 16)    /* deeper (or self-containing) keys: treated as data */
        return true;
    if (PyTuple_Check(k) || PyList_Check(k))
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(k); i++)
            if (has_tensor(PySequence_Fast_GET_ITEM(k, i), depth + 1))
                return true;
    return false;
}

bool tr_has_tensor(PyObject *k)
{
    return has_tensor(k, 0);
}

/* An index tensor the trace can take: int, at least 1-D (its values are
 * read by recorded ops, frontend/indexing.c); a bool mask (its count sets
 * the result's shape), a 0-d tensor (an int) or one inside a list (read
 * into the list's tensor) reads its values on the host. */
static bool traced_index(PyObject *o)
{
    if (!st_fe_is_tensor(o))
        return false;
    st_tensor *t = st_fe_unwrap(o);
    return t->ndim > 0 && (t->dtype == ST_INT64 || t->dtype == ST_INT32);
}

/* x[idx] under dynamic shapes with x at least 1-D and idx one int index
 * tensor (the rotary cache read cos[position_ids]): taken by translating
 * symtrace._ops.indexing._index_rows, whose reshape target the translator
 * follows (__getitem__ run for real computes it out of its sight). */
static bool rows_key(tr_state *s, PyObject *o, PyObject *k)
{
    return tr_dyn_shapes(s) && st_fe_is_tensor(o) && st_fe_unwrap(o)->ndim > 0 && traced_index(k);
}

static int index_rows(tr_state *s, tr_var *obj, tr_var *key, tr_var *out)
{
    static PyObject *fn;
    if (!fn) {
        PyObject *m = PyImport_ImportModule("symtrace._ops.indexing");
        fn = m ? PyObject_GetAttrString(m, "_index_rows") : NULL;
        Py_XDECREF(m);
        if (!fn)
            return tr_break_exc(s, "tensor indexing");
    }
    tr_var a[2] = {{0}};
    tr_var_copy(&a[0], obj);
    tr_var_copy(&a[1], key);
    s->lib_inline++;
    int rc = tr_inline(s, fn, a, 2, NULL, out);
    s->lib_inline--;
    tr_var_clear(&a[0]);
    tr_var_clear(&a[1]);
    return rc;
}

bool tr_key_reads_values(tr_state *s, PyObject *k)
{
    if (!tr_has_tensor(k))
        return false;
    if (tr_dyn_shapes(s))        /* dynamic shapes: not taken (yet) */
        return true;
    if (traced_index(k))
        return false;
    if (!PyTuple_Check(k))
        return true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k); i++) {
        PyObject *o = PyTuple_GET_ITEM(k, i);
        if (!traced_index(o) && tr_has_tensor(o))
            return true;
    }
    return false;
}

bool tr_const_key(PyObject *k)
{
    return PyLong_CheckExact(k) || PyUnicode_CheckExact(k) || PyBool_Check(k) ||
           k == Py_None || PyFloat_CheckExact(k) ||
           (st_fe_tuple_like(k) && tr_safe_type(k));
}

int tr_subscr(tr_state *s, tr_var *obj, tr_var *key, tr_var *out)
{
    PyObject *o = obj->v, *k = key->v;
    memset(out, 0, sizeof *out);
    if (!o || !k || obj->aux == TR_AUX_ITER || key->aux == TR_AUX_ITER)
        return tr_break(s, "subscript of an iterator");
    if (s->lazies && tr_lazy_plain_var(s, key) < 0)
        return -1;
    if (!tr_dyn_shapes(s) && tr_dyn_plain_var(s, key) < 0)   /* an int attribute as an index */
        return -1;
    k = key->v;
    if (st_fe_is_tensor(o)) {
        if (!st_fe_is_tensor(k) && !tr_safe_type(k))
            return tr_break(s, "tensor index of type %s", tr_type_name(k));
        if (rows_key(s, o, k))
            return index_rows(s, obj, key, out);
        if (tr_key_reads_values(s, k))
            return tr_break(s, "data-dependent: indexing with a bool mask, a 0-d "
                            "tensor or tensors in a list reads their values");
        tr_dynsub ds;
        if (s->dyn && tr_dyn_before_subscr(s, o, k, &ds) < 0)
            return -1;
        PyObject *r = PyObject_GetItem(o, k);
        if (r && s->dyn && tr_dyn_after_subscr(s, &ds, r) < 0) {
            Py_DECREF(r);
            return -1;
        }
        if (!r)
            return tr_break_exc(s, "tensor indexing");
        if (st_rt_trace_failed(NULL)) {
            const char *why = NULL;
            st_rt_trace_failed(&why);
            Py_DECREF(r);
            return tr_break(s, "%s", why ? why : "trace failed");
        }
        out->v = r;
        return 0;
    }
    if (s->dyn && tr_dyn_plain_var(s, key) < 0)   /* a size as an index: its value */
        return -1;
    k = key->v;
    if (tr_is_kind(o, tr_refs.modlist_cls) || tr_is_kind(o, tr_refs.seq_cls) || tr_is_kind(o, tr_refs.moddict_cls)) {
        PyObject *md = tr_guarded_modules(s, obj);
        if (!md)
            return -1;
        PyObject *sk = NULL;
        /* a ModuleDict is indexed by its keys only (md[0] is a KeyError),
         * a ModuleList or Sequential by position only (ml['0'] a TypeError):
         * the rest breaks, and eager answers */
        bool by_key = tr_is_kind(o, tr_refs.moddict_cls);
        if (PyLong_Check(k) && !by_key) {
            Py_ssize_t i = PyLong_AsSsize_t(k), n = PyDict_GET_SIZE(md);
            if (i < 0)
                i += n;
            if (i < 0 || i >= n) {
                Py_DECREF(md);
                return tr_break(s, "index %zd out of range", i);
            }
            Py_ssize_t pos = 0, j = 0;
            PyObject *kk, *vv;
            while (PyDict_Next(md, &pos, &kk, &vv))
                if (j++ == i) {
                    sk = Py_NewRef(kk);
                    break;
                }
        } else if (PyUnicode_CheckExact(k) && by_key) {
            sk = Py_NewRef(k);
        }
        PyObject *v = sk ? PyDict_GetItemWithError(md, sk) : NULL;
        int rc;
        if (!v)
            rc = tr_break(s, "indexing a %s with a %s", tr_type_name(o), tr_type_name(k));
        else
            rc = tr_modpart_var(s, obj->src ? obj->src : tr_lookup_src(s, o), "_modules", sk, v, out);
        Py_XDECREF(sk);
        Py_DECREF(md);
        return rc;
    }
    PyObject *gi = !tr_is_symtrace_module(o) ? tr_py_dunder(o, "__getitem__") : NULL;
    if (gi)   /* a user class's __getitem__ (ModelOutput's out[0], out["loss"]) */
        return tr_call_dunder(s, gi, obj, key, 1, out);
    if (PyDict_Check(o) && tr_fresh_user_obj(s, o)) {
        /* dict's own lookup on a user dict subclass made in the frame */
        PyObject *r = PyObject_GetItem(o, k);
        if (!r)
            return tr_break_exc(s, "subscript");
        tr_make_value(s, out, r);
        return 0;
    }
    if (!tr_safe_type(o) || (!tr_safe_type(k) && !PyDict_Check(o)))
        return tr_break(s, "subscript of a %s with a %s is not supported",
                        tr_type_name(o), tr_type_name(k));
    PyObject *r = PyObject_GetItem(o, k);
    if (!r)
        return tr_break_exc(s, "subscript");
    st_fe_src *base = obj->src;
    if (base && (PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o))) {
        if (tr_const_key(k)) {
            PyObject *kk = k;
            if (PyLong_CheckExact(k) && !PyDict_Check(o)) {
                Py_ssize_t i = PyLong_AsSsize_t(k);
                if (i < 0)
                    i += PyObject_Length(o);
                kk = PyLong_FromSsize_t(i);
            } else
                Py_INCREF(kk);
            int rc = kk ? tr_item_var(s, base, kk, r, out) : tr_break_exc(s, "subscript");
            Py_XDECREF(kk);
            Py_DECREF(r);
            return rc;
        }
        if (PySlice_Check(k) && !PyDict_Check(o)) {
            /* a slice of a sourced sequence: a fresh one of sourced items */
            Py_ssize_t start, stop, step, n = PyObject_Length(o);
            if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
                Py_DECREF(r);
                return tr_break_exc(s, "slice");
            }
            Py_ssize_t cnt = PySlice_AdjustIndices(n, &start, &stop, step);
            for (Py_ssize_t j = 0; j < cnt; j++) {
                Py_ssize_t i = start + j * step;
                PyObject *ki = PyLong_FromSsize_t(i);
                PyObject *item = PySequence_GetItem(o, i);
                tr_var tmp;
                int rc = ki && item ? tr_item_var(s, base, ki, item, &tmp) : tr_break_exc(s, "slice");
                Py_XDECREF(ki);
                Py_XDECREF(item);
                if (rc < 0) {
                    Py_DECREF(r);
                    return -1;
                }
                tr_var_clear(&tmp);
            }
            tr_make_value(s, out, r);
            return 0;
        }
        Py_DECREF(r);
        return tr_break(s, "subscript of a sourced %s with a %s", tr_type_name(o),
                        tr_type_name(k));
    }
    tr_make_value(s, out, r);
    return 0;
}

