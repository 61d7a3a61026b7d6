/* frontend/tr_attrs.c - attribute loads in the translator: tensors (real),
 * Python modules and symtrace Modules (ATTR/MODPART sources), user
 * objects (instance dict, then the MRO, data descriptors first; a
 * property's Python getter is inlined), super(), and hasattr. */
#include "tr_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- attributes ---------------- */
static int attr_sourced(tr_state *s, tr_var *obj, PyObject *name, PyObject *v,
                        tr_var *out)
{
    st_fe_src *base = obj->src ? obj->src : tr_lookup_src(s, obj->v);
    if (!base || PyMethod_Check(v)) {
        tr_make_value(s, out, v);
        return 0;
    }
    st_fe_src *as = st_fe_src_attr(&s->srcs, base, name);
    if (!as) {
        Py_DECREF(v);
        return tr_break_exc(s, "source");
    }
    return tr_make_sourced(s, out, v, as);
}

/* name in obj's instance dict: *found and the sourced (guarded) value in
 * out; 0 with *found false when it is not there; -1 on a break. */
static int instance_attr(tr_state *s, tr_var *obj, PyObject *name, tr_var *out, bool *found)
{
    PyObject **dp = _PyObject_GetDictPtr(obj->v);
    PyObject *v = dp && *dp ? PyDict_GetItemWithError(*dp, name) : NULL;
    *found = v != NULL;
    if (v)
        return attr_sourced(s, obj, name, Py_NewRef(v), out);
    return PyErr_Occurred() ? tr_break_exc(s, "attribute") : 0;
}

static int call_fget(tr_state *s, PyObject *descr, tr_var *obj, tr_var *out)
{
    PyObject *fget = PyObject_GetAttrString(descr, "fget");
    if (!fget)
        return tr_break_exc(s, "property");
    int rc;
    if (PyFunction_Check(fget)) {
        rc = tr_inline(s, fget, obj, 1, NULL, out);
    } else {
        PyObject *r = PyObject_CallOneArg(fget, obj->v);
        rc = r ? 0 : tr_break_exc(s, "property");
        if (r)
            tr_make_value(s, out, r);
    }
    Py_DECREF(fget);
    return rc;
}

static int super_attr(tr_state *s, tr_var *obj, PyObject *name, tr_var *out)
{
    PyObject *cls = PyTuple_GET_ITEM(obj->v, 0), *self = PyTuple_GET_ITEM(obj->v, 1);
    PyTypeObject *t = PyType_Check(self) ? (PyTypeObject *)self : Py_TYPE(self);
    PyObject *d = tr_mro_lookup(t, name, cls);
    if (!d)
        return tr_break(s, "super() has no attribute '%s'", PyUnicode_AsUTF8(name));
    PyObject *r;
    if (PyFunction_Check(d))
        r = PyMethod_New(d, self);
    else if (Py_TYPE(d)->tp_descr_get)
        r = Py_TYPE(d)->tp_descr_get(d, self, (PyObject *)t);
    else
        r = Py_NewRef(d);
    if (!r)
        return tr_break_exc(s, "super attribute");
    tr_make_value(s, out, r);
    return 0;
}

static int module_attr(tr_state *s, tr_var *obj, PyObject *name, tr_var *out, bool *found)
{
    PyObject *d = PyObject_GenericGetDict(obj->v, NULL);
    *found = false;
    if (!d)
        return tr_break_exc(s, "module attribute");
    PyObject *v = PyDict_GetItemWithError(d, name);
    int rc = 0;
    if (v) {
        *found = true;
        rc = attr_sourced(s, obj, name, Py_NewRef(v), out);
    } else {
        static const char *parts[] = {"_parameters", "_buffers", "_modules"};
        for (int i = 0; i < 3 && !*found; i++) {
            PyObject *pd = PyDict_GetItemString(d, parts[i]);
            PyObject *pv = pd && PyDict_Check(pd) ? PyDict_GetItemWithError(pd, name) : NULL;
            if (pv) {
                *found = true;
                st_fe_src *base = obj->src ? obj->src : tr_lookup_src(s, obj->v);
                rc = tr_modpart_var(s, base, parts[i], name, pv, out);
            }
        }
    }
    Py_DECREF(d);
    return rc;
}

/* A method found on the class of a sourced object: the function gets the
 * source type(obj).name (ID-guarded), so that the globals it reads have
 * sources too (fn.__globals__[...]). */
/* The source base.__class__.name (a class attribute read through an
 * instance), or NULL with the exception of the break recorded. */
static st_fe_src *class_attr_src(tr_state *s, st_fe_src *base, PyObject *name)
{
    PyObject *cn = PyUnicode_InternFromString("__class__");
    st_fe_src *cs = cn ? st_fe_src_attr(&s->srcs, base, cn) : NULL;
    st_fe_src *fs = cs ? st_fe_src_attr(&s->srcs, cs, name) : NULL;
    Py_XDECREF(cn);
    if (!fs)
        tr_break_exc(s, "source");
    return fs;
}

static int method_source(tr_state *s, tr_var *obj, PyObject *name, PyObject *fn)
{
    st_fe_src *base = obj->src ? obj->src : tr_lookup_src(s, obj->v);
    if (!base || tr_fn_origin(fn) != 0)
        return 0;
    /* the class attribute found, unless an instance attribute shadows it
     * later (o.apply = ...; guarded absent: on a Module a static guard,
     * checked again when a Module attribute is set) or the class's is
     * replaced (Cls.apply = ...; the ID guard below) */
    bool is_mod = tr_is_symtrace_module(obj->v);
    PyObject **dp = _PyObject_GetDictPtr(obj->v);
    if (dp) {
        PyObject *dn = PyUnicode_InternFromString("__dict__");
        st_fe_src *ds = dn ? st_fe_src_attr(&s->srcs, base, dn) : NULL;
        st_fe_src *is = ds ? st_fe_src_item(&s->srcs, ds, name) : NULL;
        Py_XDECREF(dn);
        if (!is || st_fe_guard_add(&s->guards, ST_G_ABSENT, is, NULL) < 0)
            return tr_break_exc(s, "guard");
    }
    /* a Module's methods: no class-attribute guard when they read the
     * frame's globals (class attributes are not static sources: an ID
     * guard on one, and the closure cells it reaches, would be checked on
     * every call, 3-4x the hook's time on an encoder; replacing a method
     * on a Module class after compiling is not seen) */
    if (is_mod && PyFunction_GET_GLOBALS(fn) == s->f->globals)
        return 0;
    st_fe_src *fs = class_attr_src(s, base, name);
    if (!fs)
        return -1;
    if (tr_lookup_src(s, fn)) {
        /* already sourced elsewhere: the class's attribute still gets its
         * own ID guard */
        if (st_fe_guard_add(&s->guards, ST_G_ID, fs, fn) < 0)
            return tr_break_exc(s, "guard");
        return 0;
    }
    tr_var tmp;
    if (tr_make_sourced(s, &tmp, Py_NewRef(fn), fs) < 0)
        return -1;
    tr_var_clear(&tmp);
    return 0;
}

int tr_getattr(tr_state *s, tr_var *obj, PyObject *name, tr_var *out)
{
    PyObject *o = obj->v;
    memset(out, 0, sizeof *out);
    const char *nm = PyUnicode_AsUTF8(name);
    if (obj->aux == TR_AUX_SUPER)
        return super_attr(s, obj, name, out);
    if (obj->aux == TR_AUX_ITER)
        return tr_break(s, "attribute '%s' of an iterator", nm);
    if (!o)
        return tr_break(s, "attribute of NULL");
    if (tr_is_lazy(o) || tr_is_symint(o)) {
        /* an attribute of a lazy or symbolic number reads its value */
        if ((tr_is_lazy(o) ? tr_lazy_plain_var(s, obj) : tr_dyn_plain_var(s, obj)) < 0)
            return -1;
        o = obj->v;
    }
    if (!st_fe_is_tensor(o)) {
        int w = tr_fx_load_attr(s, o, name, out);   /* written in this frame */
        if (w != 0)
            return w < 0 ? -1 : 0;
    }
    if (st_fe_is_tensor(o) && s->fx_grad_barrier && nm &&
        (!strcmp(nm, "grad") || !strcmp(nm, "_grad")))
        return tr_break(s, "a tensor's .grad read after opt.zero_grad(), which is made after "
                        "the graph");
    if (st_fe_is_tensor(o)) {
        /* an attribute the user set on the tensor (t.scale = 2.0): its
         * instance __dict__, read through its source, so a guard sees it
         * change; a tensor without a source breaks */
        PyObject **dp = _PyObject_GetDictPtr(o);
        PyObject *dv = dp && *dp ? PyDict_GetItemWithError(*dp, name) : NULL;
        if (dv) {
            if (!obj->src && !tr_lookup_src(s, o))
                return tr_break(s, "attribute '%s' set on a tensor made in the frame", nm);
            return attr_sourced(s, obj, name, Py_NewRef(dv), out);
        }
        if (PyErr_Occurred())
            return tr_break_exc(s, "tensor attribute");
        PyObject *v = PyObject_GetAttr(o, name);
        if (!v)
            return tr_break_exc(s, "tensor attribute");
        if (st_rt_trace_failed(NULL)) {
            const char *why = NULL;
            st_rt_trace_failed(&why);
            Py_DECREF(v);
            return tr_break(s, "%s", why ? why : "trace failed");
        }
        if (!strcmp(nm, "grad") && (st_fe_is_tensor(v) || v == Py_None))
            return attr_sourced(s, obj, name, v, out);   /* None too: guarded */
        if (s->dyn && !strcmp(nm, "shape") && !(v = tr_dyn_wrap_size(s, o, v, 0, 0)))
            return tr_break_exc(s, "dynamic shapes");
        if (st_fe_is_tensor(v)) {
            memset(out, 0, sizeof *out);
            out->v = v;     /* a traced view: no source */
            return 0;
        }
        tr_make_value(s, out, v);
        return 0;
    }
    if (PyModule_Check(o)) {
        PyObject *v = PyObject_GetAttr(o, name);
        if (!v)
            return tr_break_exc(s, "module attribute");
        return attr_sourced(s, obj, name, v, out);
    }
    PyTypeObject *t = Py_TYPE(o);
    bool is_mod = tr_is_symtrace_module(o);
    if (PyType_Check(o) || (tr_safe_type(o) && !is_mod)) {
        if (!PyType_Check(o)) {
            /* an instance attribute of a library type that has an instance
             * dict (an OrderedDict's, a namedtuple subclass's): the user's
             * data, guarded like any object's */
            bool found;
            int rc = instance_attr(s, obj, name, out, &found);
            if (rc < 0 || found)
                return rc;
        }
        PyObject *v = PyObject_GetAttr(o, name);
        if (!v)
            return tr_break_exc(s, "attribute");
        if (PyType_Check(o))
            return attr_sourced(s, obj, name, v, out);
        tr_make_value(s, out, v);
        return 0;
    }
    if (t->tp_getattro != PyObject_GenericGetAttr && !is_mod)
        return tr_break(s, "attribute '%s' of a %s (custom __getattribute__)", nm, t->tp_name);
    PyObject *descr = tr_mro_lookup(t, name, NULL);
    if (descr && Py_TYPE(descr)->tp_descr_set) {
        if (PyObject_TypeCheck(descr, &PyProperty_Type)) {
            /* the property object itself is guarded (Cls.k = property(...)) */
            st_fe_src *base = obj->src ? obj->src : tr_lookup_src(s, o);
            if (base && !is_mod) {
                st_fe_src *ps = class_attr_src(s, base, name);
                if (!ps)
                    return -1;
                if (st_fe_guard_add(&s->guards, ST_G_ID, ps, descr) < 0)
                    return tr_break_exc(s, "guard");
            }
            return call_fget(s, descr, obj, out);
        }
        PyObject *v = PyObject_GetAttr(o, name);
        if (!v)
            return tr_break_exc(s, "attribute");
        return attr_sourced(s, obj, name, v, out);
    }
    if (is_mod) {
        bool found;
        if (module_attr(s, obj, name, out, &found) < 0)
            return -1;
        if (found)
            return 0;
    } else {
        bool found;
        int rc = instance_attr(s, obj, name, out, &found);
        if (rc < 0 || found)
            return rc;
    }
    if (descr) {
        PyObject *v;
        if (PyFunction_Check(descr) && method_source(s, obj, name, descr) < 0)
            return -1;
        if (PyFunction_Check(descr))
            v = PyMethod_New(descr, o);
        else if (Py_TYPE(descr)->tp_descr_get)
            v = Py_TYPE(descr)->tp_descr_get(descr, o, (PyObject *)t);
        else
            v = Py_NewRef(descr);
        if (!v)
            return tr_break_exc(s, "attribute");
        if (PyMethod_Check(v) || PyCFunction_Check(v))
            tr_make_value(s, out, v);
        else
            return attr_sourced(s, obj, name, v, out);
        return 0;
    }
    if (!is_mod) {
        PyObject *ga = PyUnicode_FromString("__getattr__");
        bool has = ga && tr_mro_lookup(t, ga, NULL);
        Py_XDECREF(ga);
        if (has)
            return tr_break(s, "attribute '%s' of a %s (custom __getattr__)", nm, t->tp_name);
    }
    return tr_break(s, "'%s' object has no attribute '%s'", t->tp_name, nm);
}

int tr_hasattr(tr_state *s, tr_var *obj, PyObject *name)
{
    PyObject *o = obj->v;
    if (!o || obj->aux == TR_AUX_ITER || obj->aux == TR_AUX_SUPER)
        return tr_break(s, "hasattr on an iterator");
    PyTypeObject *t = Py_TYPE(o);
    bool ok = st_fe_is_tensor(o) || PyModule_Check(o) || tr_safe_type(o) ||
              tr_is_symtrace_module(o) || t->tp_getattro == PyObject_GenericGetAttr;
    if (!ok)
        return tr_break(s, "hasattr on a %s (custom __getattribute__)", t->tp_name);
    tr_var w;
    int wr = tr_fx_load_attr(s, o, name, &w);       /* written in this frame */
    if (wr != 0) {
        if (wr > 0)
            tr_var_clear(&w);
        return wr;
    }
    int r = PyObject_HasAttr(o, name);
    if (r) {
        tr_var tmp;
        if (tr_getattr(s, obj, name, &tmp) < 0)
            return -1;
        /* an attribute set on a tensor can be deleted again: its presence
         * is guarded (the type of its value; a missing one fails) */
        if (st_fe_is_tensor(o) && tmp.src &&
            st_fe_guard_add(&s->guards, ST_G_TYPE, tmp.src, (PyObject *)Py_TYPE(tmp.v)) < 0) {
            tr_var_clear(&tmp);
            return tr_break_exc(s, "guard");
        }
        tr_var_clear(&tmp);
        return 1;
    }
    st_fe_src *base = obj->src ? obj->src : tr_lookup_src(s, o);
    if (base) {
        st_fe_src *as = st_fe_src_attr(&s->srcs, base, name);
        if (!as || st_fe_guard_add(&s->guards, ST_G_ABSENT, as, NULL) < 0)
            return tr_break_exc(s, "guard");
    }
    return 0;
}

