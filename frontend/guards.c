/* frontend/guards.c - sources (where a frame's value was read: interned per
 * table, printed TorchDynamo-style, evaluated on a frame with a memo) and
 * guards (the checks on those sources that decide whether a compiled entry
 * may run: default guard per value, the fast check, the description, and
 * which sources are static - read from an identity-guarded Module through
 * what only changes with a module epoch bump - so that their guards are
 * skipped while the epochs hold). */
#include "st_fe_hook.h"
#include "pyinternals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t st_fe_module_epoch, st_fe_meta_epoch;
PyObject *st_fe_module_class, *st_fe_device_class;

int st_fe_is_module(PyObject *o)
{
    if (!st_fe_module_class) return 0;
    return PyObject_TypeCheck(o, (PyTypeObject *)st_fe_module_class);
}

/* ---------------- source tables ---------------- */
void st_fe_srctab_init(st_fe_srctab *t) { t->v = NULL; t->n = t->cap = 0; }

void st_fe_srctab_clear(st_fe_srctab *t)
{
    for (int i = 0; i < t->n; i++) {
        Py_XDECREF(t->v[i]->name);
        Py_XDECREF(t->v[i]->key);
        free(t->v[i]);
    }
    free(t->v);
    st_fe_srctab_init(t);
}

/* Keys compare by type and value (1 equal, 0 not, -1 error). */
static int same_obj(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    if (!a || !b || Py_TYPE(a) != Py_TYPE(b)) return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static st_fe_src *intern(st_fe_srctab *t, st_fe_src_kind kind, int index,
                         PyObject *name, PyObject *key, st_fe_src *base)
{
    for (int i = 0; i < t->n; i++) {
        st_fe_src *s = t->v[i];
        if (s->kind != kind || s->index != index || s->base != base) continue;
        int r = same_obj(s->name, name);
        if (r < 0) return NULL;
        if (!r) continue;
        r = same_obj(s->key, key);
        if (r < 0) return NULL;
        if (r) return s;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        st_fe_src **v = realloc(t->v, (size_t)cap * sizeof *v);
        if (!v) { PyErr_NoMemory(); return NULL; }
        t->v = v;
        t->cap = cap;
    }
    st_fe_src *s = calloc(1, sizeof *s);
    if (!s) { PyErr_NoMemory(); return NULL; }
    s->kind = kind;
    s->index = index;
    s->name = Py_XNewRef(name);
    s->key = Py_XNewRef(key);
    s->base = base;
    s->id = t->n;
    /* A first guess (what the guards say is decided by
     * st_fe_guards_partition once the entry's guards are known): a
     * registered child of a Module (the Module holds an ID guard, the
     * default for Modules) changes only through Module.__setattr__,
     * __delattr__ and register_* (module epoch); so do the attributes of a
     * child Module. */
    if (kind == ST_SRC_MODPART)
        s->is_static = true;
    else if (kind == ST_SRC_ATTR && base->is_static && base->kind == ST_SRC_MODPART &&
             PyUnicode_Check(base->key) &&
             PyUnicode_CompareWithASCIIString(base->key, "_modules") == 0)
        s->is_static = true;
    t->v[t->n++] = s;
    return s;
}

st_fe_src *st_fe_src_local(st_fe_srctab *t, int index, PyObject *name)
{ return intern(t, ST_SRC_LOCAL, index, name, NULL, NULL); }
st_fe_src *st_fe_src_global(st_fe_srctab *t, PyObject *name)
{ return intern(t, ST_SRC_GLOBAL, 0, name, NULL, NULL); }
st_fe_src *st_fe_src_builtin(st_fe_srctab *t, PyObject *name)
{ return intern(t, ST_SRC_BUILTIN, 0, name, NULL, NULL); }
st_fe_src *st_fe_src_closure(st_fe_srctab *t, int index, PyObject *name)
{ return intern(t, ST_SRC_CLOSURE, index, name, NULL, NULL); }
st_fe_src *st_fe_src_attr(st_fe_srctab *t, st_fe_src *base, PyObject *name)
{ return intern(t, ST_SRC_ATTR, 0, name, NULL, base); }
st_fe_src *st_fe_src_modpart(st_fe_srctab *t, st_fe_src *base, PyObject *part,
                             PyObject *name)
{ return intern(t, ST_SRC_MODPART, 0, name, part, base); }
st_fe_src *st_fe_src_item(st_fe_srctab *t, st_fe_src *base, PyObject *key)
{ return intern(t, ST_SRC_ITEM, 0, NULL, key, base); }
st_fe_src *st_fe_src_viewdict(st_fe_srctab *t, st_fe_src *base)
{ return intern(t, ST_SRC_VIEWDICT, 0, NULL, NULL, base); }

int st_fe_is_dict_view(PyObject *v)
{
    return v && (PyDictKeys_Check(v) || PyDictValues_Check(v) || PyDictItems_Check(v));
}

PyObject *st_fe_src_repr(const st_fe_src *s)
{
    PyObject *b = NULL, *r = NULL;
    if (s->base && !(b = st_fe_src_repr(s->base))) return NULL;
    switch (s->kind) {
    case ST_SRC_LOCAL:   r = PyUnicode_FromFormat("L[%R]", s->name); break;
    case ST_SRC_GLOBAL:  r = PyUnicode_FromFormat("G[%R]", s->name); break;
    case ST_SRC_BUILTIN: r = PyUnicode_FromFormat("G['__builtins__'][%R]", s->name); break;
    case ST_SRC_CLOSURE: r = PyUnicode_FromFormat("L[%R].cell_contents", s->name); break;
    case ST_SRC_ATTR:    r = PyUnicode_FromFormat("%U.%U", b, s->name); break;
    case ST_SRC_MODPART: r = PyUnicode_FromFormat("%U.%U[%R]", b, s->key, s->name); break;
    case ST_SRC_ITEM:    r = PyUnicode_FromFormat("%U[%R]", b, s->key); break;
    case ST_SRC_VIEWDICT: r = PyUnicode_FromFormat("%U.mapping", b); break;
    default: PyErr_SetString(PyExc_SystemError, "bad source kind");
    }
    Py_XDECREF(b);
    return r;
}

/* ---------------- evaluation ---------------- */
/* A missing lookup: clear the lookup error, return NULL with none set. */
static PyObject *missing(void)
{
    if (PyErr_ExceptionMatches(PyExc_AttributeError) ||
        PyErr_ExceptionMatches(PyExc_KeyError) ||
        PyErr_ExceptionMatches(PyExc_IndexError))
        PyErr_Clear();
    return NULL;
}

static PyObject *dict_get(PyObject *d, PyObject *k)
{
    if (!d || !PyDict_Check(d)) return NULL;
    return Py_XNewRef(PyDict_GetItemWithError(d, k));
}

static PyObject *modpart_get(PyObject *o, PyObject *part, PyObject *name)
{
    PyObject **dp = _PyObject_GetDictPtr(o);
    if (!dp || !*dp) return NULL;
    PyObject *pd = PyDict_GetItemWithError(*dp, part);
    if (!pd) return NULL;
    return dict_get(pd, name);
}

static PyObject *attr_get(PyObject *o, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(o);
    PyObject *v;
    if (tp->tp_getattro == PyObject_GenericGetAttr || st_fe_is_module(o))
        v = PyObject_GenericGetAttr(o, name);   /* no user __getattr__ */
    else
        v = PyObject_GetAttr(o, name);
    if (!v && st_fe_is_module(o) && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        /* Module.__getattr__'s lookups: a parameter, buffer or submodule
         * registered since (an ABSENT guard must see it) */
        static PyObject *parts[3];
        static const char *const pn[3] = {"_parameters", "_buffers", "_modules"};
        PyErr_Clear();
        for (int k = 0; k < 3; k++) {
            if (!parts[k] && !(parts[k] = PyUnicode_InternFromString(pn[k])))
                return NULL;
            if ((v = modpart_get(o, parts[k], name)) || PyErr_Occurred())
                return v;
        }
        return NULL;
    }
    return v ? v : missing();
}

static PyObject *item_get(PyObject *o, PyObject *key)
{
    if ((st_fe_tuple_like(o) || PyList_CheckExact(o)) && PyLong_CheckExact(key)) {
        Py_ssize_t i = PyLong_AsSsize_t(key), n = Py_SIZE(o);
        if (i == -1 && PyErr_Occurred()) return NULL;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return NULL;
        return Py_NewRef(PyList_CheckExact(o) ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i));
    }
    if (PyDict_Check(o)) return dict_get(o, key);
    PyObject *v = PyObject_GetItem(o, key);
    return v ? v : missing();
}

PyObject *st_fe_src_eval(const st_fe_src *s, const st_fe_frame *f, PyObject **memo)
{
    if (memo && memo[s->id]) return Py_NewRef(memo[s->id]);
    PyObject *v = NULL, *b = NULL;
    if (s->base && !(b = st_fe_src_eval(s->base, f, memo))) return NULL;
    switch (s->kind) {
    case ST_SRC_LOCAL:
        if (s->index >= 0 && s->index < f->nlocals) v = Py_XNewRef(f->locals[s->index]);
        break;
    case ST_SRC_GLOBAL:  v = dict_get(f->globals, s->name); break;
    case ST_SRC_BUILTIN: v = dict_get(f->builtins, s->name); break;
    case ST_SRC_CLOSURE:
        if (f->closure && PyTuple_Check(f->closure) && s->index >= 0 &&
            s->index < PyTuple_GET_SIZE(f->closure)) {
            PyObject *c = PyTuple_GET_ITEM(f->closure, s->index);
            if (PyCell_Check(c)) v = Py_XNewRef(PyCell_GET(c));
        }
        break;
    case ST_SRC_ATTR:    v = attr_get(b, s->name); break;
    case ST_SRC_MODPART: v = modpart_get(b, s->key, s->name); break;
    case ST_SRC_ITEM:    v = item_get(b, s->key); break;
    case ST_SRC_VIEWDICT:
        v = st_fe_is_dict_view(b) ? Py_XNewRef((PyObject *)((_PyDictViewObject *)b)->dv_dict) : NULL;
        break;
    default: PyErr_SetString(PyExc_SystemError, "bad source kind");
    }
    Py_XDECREF(b);
    if (v && memo) memo[s->id] = Py_NewRef(v);
    return v;
}

void st_fe_memo_clear(PyObject **memo, int n)
{
    for (int i = 0; i < n; i++) Py_CLEAR(memo[i]);
}

/* ---------------- guard sets ---------------- */
void st_fe_guardset_init(st_fe_guardset *gs)
{
    memset(gs, 0, sizeof *gs);
    gs->grad_mode = st_ad_grad_enabled();
    gs->autocast = st_rt_autocast_state();
    gs->module_epoch = st_fe_module_epoch;
    gs->meta_epoch = st_fe_meta_epoch;
}

/* ---------------- watched dicts (see st_fe_guardset.wd) ---------------- */
static void unwatch(st_fe_guardset *gs)
{
    for (int i = 0; i < gs->nwd; i++)
        Py_DECREF(gs->wd[i]);
    free(gs->wd);
    free(gs->wver);
    gs->wd = NULL;
    gs->wver = NULL;
    gs->nwd = 0;
    gs->wd_valid = false;
}

static int watch_one(st_fe_guardset *gs, PyObject *d, int *cap)
{
    if (!d || !PyDict_Check(d))
        return 0;
    for (int i = 0; i < gs->nwd; i++)
        if (gs->wd[i] == d)
            return 0;
    if (gs->nwd == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        PyObject **nd = realloc(gs->wd, (size_t)nc * sizeof *nd);
        if (!nd) return -1;
        gs->wd = nd;
        uint64_t *nv = realloc(gs->wver, (size_t)nc * sizeof *nv);
        if (!nv) return -1;
        gs->wver = nv;
        *cap = nc;
    }
    gs->wd[gs->nwd] = Py_NewRef(d);
    gs->wver[gs->nwd++] = st_py_dict_version(d);
    return 0;
}

/* After a full check passed: the dicts every static source was read from
 * (memo holds the sources' values), with their stamps. On failure nothing
 * is recorded (wd_valid false: the next check is a full one again). */
static bool is_part_name(PyObject *name);

static void watch(st_fe_guardset *gs, PyObject **memo)
{
    unwatch(gs);
    int cap = 0;
    for (int i = 0; i < gs->n; i++) {
        const st_fe_src *s = gs->v[i].src;
        for (; s && s->is_static; s = s->base) {
            if (!s->base)
                continue;
            PyObject *b = memo[s->base->id];
            if (!b) { unwatch(gs); return; }
            if (s->kind == ST_SRC_ITEM) {          /* an item of a part dict */
                if (watch_one(gs, b, &cap) < 0) { unwatch(gs); return; }
                continue;
            }
            PyObject **dp = _PyObject_GetDictPtr(b);
            PyObject *d = dp ? *dp : NULL;
            if (watch_one(gs, d, &cap) < 0) { unwatch(gs); return; }
            if (s->kind == ST_SRC_ATTR && d && is_part_name(s->name)) {
                /* a part dict read as an attribute (a hook table's
                 * emptiness): mutated in place, its own version moves */
                PyObject *part = PyDict_GetItemWithError(d, s->name);
                if (!part && PyErr_Occurred()) { PyErr_Clear(); unwatch(gs); return; }
                if (watch_one(gs, part, &cap) < 0) { unwatch(gs); return; }
            }
            if (s->kind == ST_SRC_MODPART && d) {
                PyObject *part = PyDict_GetItemWithError(d, s->key);
                if (!part && PyErr_Occurred()) { PyErr_Clear(); unwatch(gs); return; }
                if (watch_one(gs, part, &cap) < 0) { unwatch(gs); return; }
            }
        }
    }
    gs->wd_valid = true;
}

/* The dicts static sources were read from are unchanged since the last
 * full check (none recorded yet: false). */
static bool static_held(const st_fe_guardset *gs)
{
    if (!gs->wd_valid)
        return false;
    for (int i = 0; i < gs->nwd; i++)
        if (st_py_dict_version(gs->wd[i]) != gs->wver[i])
            return false;
    return true;
}

void st_fe_guardset_clear(st_fe_guardset *gs)
{
    for (int i = 0; i < gs->n; i++) {
        Py_XDECREF(gs->v[i].obj);
        Py_XDECREF(gs->v[i].keys);
        Py_XDECREF(gs->v[i].keys2);
    }
    free(gs->v);
    gs->v = NULL;
    gs->n = gs->cap = 0;
    unwatch(gs);
    st_fe_symtab_free(gs->sym);
    gs->sym = NULL;
}

static st_fe_guard *push(st_fe_guardset *gs, st_fe_guard_kind kind, st_fe_src *s)
{
    if (gs->n == gs->cap) {
        int cap = gs->cap ? 2 * gs->cap : 16;
        st_fe_guard *v = realloc(gs->v, (size_t)cap * sizeof *v);
        if (!v) { PyErr_NoMemory(); return NULL; }
        gs->v = v;
        gs->cap = cap;
    }
    st_fe_guard *g = &gs->v[gs->n++];
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->src = s;
    return g;
}

static const st_fe_guard *find(const st_fe_guardset *gs, const st_fe_src *s, int kind)
{
    for (int i = 0; i < gs->n; i++)
        if (gs->v[i].src == s && (kind < 0 ? gs->v[i].kind != ST_G_SYM && gs->v[i].kind != ST_G_ALIAS
                                           : (int)gs->v[i].kind == kind)) return &gs->v[i];
    return NULL;
}

int st_fe_guard_add(st_fe_guardset *gs, st_fe_guard_kind kind, st_fe_src *s, PyObject *obj)
{
    if (kind != ST_G_TYPE && kind != ST_G_ID && kind != ST_G_EQ && kind != ST_G_ABSENT) {
        PyErr_SetString(PyExc_SystemError, "st_fe_guard_add: TYPE, ID, EQ or ABSENT only");
        return -1;
    }
    if (find(gs, s, (int)kind)) return 0;
    st_fe_guard *g = push(gs, kind, s);
    if (!g) return -1;
    g->obj = Py_XNewRef(obj);
    return 0;
}

/* A predicate on the value: pred(v) must be true (every one is kept: two
 * warnings read through one source each have their own). */
int st_fe_guard_pred(st_fe_guardset *gs, st_fe_src *s, PyObject *pred)
{
    st_fe_guard *g = push(gs, ST_G_PRED, s);
    if (!g) return -1;
    g->obj = Py_NewRef(pred);
    return 0;
}

/* Constants compared by value: immutable scalars and tuples of them. */
/* symtrace.layout and symtrace.memory_format values (st.strided,
 * st.channels_last, ...): module-level singletons compared by identity,
 * guarded as constants like dtypes and devices. */
static int is_format_obj(PyObject *v)
{
    static PyObject *cls[2];
    static const char *where[2][2] = {{"symtrace._layout", "layout"},
                                      {"symtrace._memory_format", "memory_format"}};
    for (int i = 0; i < 2; i++) {
        if (!cls[i]) {
            PyObject *m = PyImport_ImportModule(where[i][0]);
            cls[i] = m ? PyObject_GetAttrString(m, where[i][1]) : NULL;
            Py_XDECREF(m);
            if (!cls[i]) {
                PyErr_Clear();
                continue;
            }
        }
        if ((PyObject *)Py_TYPE(v) == cls[i]) return 1;
    }
    return 0;
}

static int is_eq_const(PyObject *v, int depth)
{
    if (v == Py_None || v == Py_Ellipsis || PyBool_Check(v) || PyLong_CheckExact(v) ||
        PyFloat_CheckExact(v) || PyUnicode_CheckExact(v) || PyBytes_CheckExact(v) ||
        PyComplex_CheckExact(v) || PySlice_Check(v))
        return 1;
    if (Py_TYPE(v) == Py_TYPE(st_fe_dtype_obj(ST_FLOAT32))) return 1;
    if (st_fe_device_class && Py_TYPE(v) == (PyTypeObject *)st_fe_device_class) return 1;
    if (is_format_obj(v)) return 1;
    if (st_fe_tuple_like(v) && depth < 4) {   /* a Size too */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
            if (!is_eq_const(PyTuple_GET_ITEM(v, i), depth + 1)) return 0;
        return 1;
    }
    return 0;
}

static int is_enum_member(PyObject *v)
{
    static PyObject *enum_cls;
    if (!enum_cls) {
        PyObject *m = PyImport_ImportModule("enum");
        enum_cls = m ? PyObject_GetAttrString(m, "Enum") : NULL;
        Py_XDECREF(m);
        if (!enum_cls) {
            PyErr_Clear();
            return 0;
        }
    }
    return PyObject_TypeCheck(v, (PyTypeObject *)enum_cls);
}

static int is_id_value(PyObject *v)
{
    if (PyCFunction_Check(v)) {          /* a module's function, not a bound builtin method */
        PyObject *self = PyCFunction_GET_SELF(v);
        return !self || PyModule_Check(self);
    }
    /* enum members are singletons: what == and dict lookups answer
     * depends on which one (a TYPE guard would let Mode.B replay Mode.A) */
    if (is_enum_member(v))
        return 1;
    return st_fe_is_module(v) || PyFunction_Check(v) || PyType_Check(v) || PyModule_Check(v) ||
           PyCode_Check(v) || Py_IS_TYPE(v, &PyMethodDescr_Type) ||
           Py_IS_TYPE(v, &PyWrapperDescr_Type);
}

/* Bound methods are made on each read: equal when they bind the same
 * object to the same function (method.__eq__). */
static int is_bound_method(PyObject *v)
{
    return PyMethod_Check(v) || (PyCFunction_Check(v) && !is_id_value(v));
}

int st_fe_guard_alias(st_fe_guardset *gs, st_fe_src *s, st_fe_src *s2)
{
    for (int i = 0; i < gs->n; i++)
        if (gs->v[i].kind == ST_G_ALIAS && gs->v[i].src == s && gs->v[i].src2 == s2) return 0;
    st_fe_guard *g = push(gs, ST_G_ALIAS, s);
    if (!g) return -1;
    g->src2 = s2;
    return 0;
}

/* ---------------- CONTENTS: sets and dict views ---------------- */
static int const_eq(PyObject *a, PyObject *b);

/* One item of a set's CONTENTS snapshot: a constant itself; any other
 * object a weak reference to it, or, when it takes none, a 1-list holding
 * it (identity either way; a set's items are hashable, so no lists). New
 * reference. */
static PyObject *snap_item(PyObject *x)
{
    if (is_eq_const(x, 0))
        return Py_NewRef(x);
    PyObject *w = PyWeakref_NewRef(x, NULL);
    if (w) return w;
    PyErr_Clear();
    PyObject *box = PyList_New(1);
    if (box) PyList_SET_ITEM(box, 0, Py_NewRef(x));
    return box;
}

static int snap_match(PyObject *want, PyObject *x)
{
    if (PyWeakref_CheckRef(want)) return PyWeakref_GetObject(want) == x;
    if (PyList_CheckExact(want)) return PyList_GET_ITEM(want, 0) == x;
    return const_eq(x, want);
}

/* An iterator over v's items as its C type keeps them, never a subclass's
 * Python __iter__ (a guard must not run user code): an OrderedDict's keys
 * in its own order, a set's items. */
static PyObject *raw_iter(PyObject *v)
{
    if (PyODict_Check(v)) return PyODict_Type.tp_iter(v);
    if (PyAnySet_Check(v)) return PySet_Type.tp_iter(v);
    return PyObject_GetIter(v);
}

static Py_ssize_t raw_len(PyObject *v)
{
    if (PyDict_Check(v)) return PyDict_GET_SIZE(v);
    if (PyAnySet_Check(v)) return PySet_GET_SIZE(v);
    return PyObject_Length(v);
}

static PyObject *raw_tuple(PyObject *v)
{
    PyObject *it = raw_iter(v);
    if (!it) return NULL;
    PyObject *l = PySequence_List(it);
    Py_DECREF(it);
    PyObject *t = l ? PyList_AsTuple(l) : NULL;
    Py_XDECREF(l);
    return t;
}

static int guard_contents(st_fe_guardset *gs, st_fe_src *s, PyObject *v)
{
    PyObject *items = raw_tuple(v);
    if (!items) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *snap = PyTuple_New(n);
    for (Py_ssize_t i = 0; snap && i < n; i++) {
        PyObject *e = snap_item(PyTuple_GET_ITEM(items, i));
        if (!e) Py_CLEAR(snap);
        else PyTuple_SET_ITEM(snap, i, e);
    }
    Py_DECREF(items);
    if (!snap) return -1;
    st_fe_guard *g = push(gs, ST_G_CONTENTS, s);
    if (!g) { Py_DECREF(snap); return -1; }
    g->obj = Py_NewRef((PyObject *)Py_TYPE(v));
    g->keys = snap;
    return 0;
}

static int check_contents(const st_fe_guard *g, PyObject *v)
{
    if ((PyObject *)Py_TYPE(v) != g->obj) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(g->keys), i = 0;
    if (raw_len(v) != n) {
        if (PyErr_Occurred()) return -1;
        return 0;
    }
    PyObject *it = raw_iter(v), *x;
    if (!it) return -1;
    int r = 1;
    while (r > 0 && (x = PyIter_Next(it))) {
        r = i < n ? snap_match(PyTuple_GET_ITEM(g->keys, i), x) : 0;
        i++;
        Py_DECREF(x);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return -1;
    return r > 0 && i == n;
}

int st_fe_guard_value(st_fe_guardset *gs, st_fe_src *s, PyObject *v)
{
    /* a TYPE guard added on its own (`a is None`, type(a) of a lazy number
     * argument) does not stand for the value's own guard: a number read
     * later still gets its EQ guard */
    for (int i = 0; i < gs->n; i++)
        if (gs->v[i].src == s && gs->v[i].kind != ST_G_SYM && gs->v[i].kind != ST_G_ALIAS &&
            gs->v[i].kind != ST_G_TYPE)
            return 0;
    if (st_fe_is_tensor(v)) {
        st_fe_guard *g = push(gs, ST_G_TENSOR, s);
        if (!g) return -1;
        const st_tensor *t = st_fe_unwrap(v);
        const st_device *d = st_tensor_device(t);
        g->obj = Py_NewRef((PyObject *)Py_TYPE(v));
        g->dtype = (int)t->dtype;
        g->ndim = t->ndim;
        for (int i = 0; i < t->ndim; i++) {
            g->shape[i] = t->shape[i];
            g->strides[i] = t->strides[i];
        }
        g->device_type = (int)d->type;
        g->device_index = d->index;
        g->requires_grad = t->requires_grad;
        return 0;
    }
    if (is_eq_const(v, 0) || is_bound_method(v)) return st_fe_guard_add(gs, ST_G_EQ, s, v);
    if (is_id_value(v)) return st_fe_guard_add(gs, ST_G_ID, s, v);
    if (PyTuple_Check(v) || PyList_Check(v)) {
        Py_ssize_t n = PyObject_Length(v);
        if (n < 0) return -1;
        st_fe_guard *g = push(gs, ST_G_LEN, s);
        if (!g) return -1;
        g->obj = Py_NewRef((PyObject *)Py_TYPE(v));
        g->len = n;
        return 0;
    }
    if (PyDict_Check(v)) {
        /* an OrderedDict's order is its own (move_to_end changes it, not
         * the order of the dict underneath): its keys as it iterates them */
        PyObject *keys = PyDict_Keys(v);     /* the dict's order */
        PyObject *kt = keys ? PyList_AsTuple(keys) : NULL, *own = NULL;
        Py_XDECREF(keys);
        if (kt && PyODict_Check(v)) {
            /* dict.keys(od), dict.values(od) read the dict's order: it
             * is part of the guard when it is not od's own */
            own = raw_tuple(v);
            int same = own ? PyObject_RichCompareBool(own, kt, Py_EQ) : -1;
            if (same < 0) Py_CLEAR(kt);
            else if (same) Py_CLEAR(own);
            else { PyObject *t = own; own = kt; kt = t; }
        }
        if (!kt) { Py_XDECREF(own); return -1; }
        st_fe_guard *g = push(gs, ST_G_DICT_KEYS, s);
        if (!g) { Py_DECREF(kt); Py_XDECREF(own); return -1; }
        g->obj = Py_NewRef((PyObject *)Py_TYPE(v));
        g->keys = kt;
        g->keys2 = own;
        return 0;
    }
    /* sets and frozensets: the translator reads their items (iteration,
     * len, in) as constants, so the items are the guard. (A dict view's
     * items are read through the dict it views: tr_make_sourced.) */
    if (PyAnySet_Check(v)) return guard_contents(gs, s, v);
    if (PyRange_Check(v)) return st_fe_guard_add(gs, ST_G_EQ, s, v);
    return st_fe_guard_add(gs, ST_G_TYPE, s, (PyObject *)Py_TYPE(v));
}

/* ---------------- the check ---------------- */
/* Constant equality for EQ guards: same type, and floats (and complex)
 * bit for bit, so -0.0 is not 0.0 and a NaN matches itself; tuples item
 * by item. 1/0/-1. */
static int const_eq(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    if (Py_TYPE(a) != Py_TYPE(b)) return 0;
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyComplex_CheckExact(a)) {
        Py_complex x = PyComplex_AsCComplex(a), y = PyComplex_AsCComplex(b);
        return memcmp(&x.real, &y.real, sizeof x.real) == 0 &&
               memcmp(&x.imag, &y.imag, sizeof x.imag) == 0;
    }
    if (st_fe_tuple_like(a)) {
        Py_ssize_t n = PyTuple_GET_SIZE(a);
        if (PyTuple_GET_SIZE(b) != n) return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = const_eq(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i));
            if (r <= 0) return r;
        }
        return 1;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* One guard on its value v (NULL: the source found nothing). 1/0/-1.
 * any_size: a TENSOR guard ignores sizes and strides (st_fe_guards_size_miss). */
/* Under dynamic shapes a tensor's guard checks the kind of its layout, not
 * its strides. Walking its dims of size != 1 from the smallest recorded
 * stride up (ties: the later dim first), a dim whose recorded stride was the
 * product of the sizes walked before it (dense) must be so again; any other
 * must keep its recorded stride and still not be that product. And every
 * two neighbouring dims of size != 1 must merge (stride[i] == stride[j] *
 * size[j], what view() and reshape() look at) exactly where the recorded
 * ones did. So a contiguous tensor matches contiguous ones of any size,
 * x.t() matches x.t(), and a slice buf[:, :n] of a fixed buffer matches the
 * same slice at other n: the graph was traced at one layout of that kind and
 * holds for all of them (the runtime plans per layout). Sizes are checked
 * by the caller. */
static bool dyn_layout_match(const st_fe_guard *g, const st_tensor *t)
{
    int n = g->ndim, order[ST_MAX_DIMS], k = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (g->shape[i] == 1)
            continue;
        int j = k++;
        for (; j > 0 && g->strides[order[j - 1]] > g->strides[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    int64_t rr = 1, rn = 1;
    for (int j = 0; j < k; j++) {
        int d = order[j];
        bool dense = g->strides[d] == rr;
        if (dense ? t->strides[d] != rn
                  : t->strides[d] != g->strides[d] || t->strides[d] == rn)
            return false;
        rr *= g->shape[d];
        rn *= t->shape[d];
    }
    int prev = -1;
    for (int i = 0; i < n; i++) {
        if (g->shape[i] == 1)
            continue;
        if (prev >= 0 &&
            (g->strides[prev] == g->strides[i] * g->shape[i]) !=
            (t->strides[prev] == t->strides[i] * t->shape[i]))
            return false;
        prev = i;
    }
    return true;
}

static int check_one(const st_fe_guard *g, PyObject *v, bool any_size)
{
    if (g->kind == ST_G_ABSENT) return v == NULL;
    if (!v) return 0;
    switch (g->kind) {
    case ST_G_TYPE: return (PyObject *)Py_TYPE(v) == g->obj;
    case ST_G_ID:   return v == g->obj;
    case ST_G_EQ:
        /* any_size: an int frame argument's value is left out too (it is
         * a symbol under dynamic shapes: automatic dynamic for ints) */
        if (any_size && g->src->kind == ST_SRC_LOCAL && !g->src->base &&
            PyLong_CheckExact(v) && PyLong_CheckExact(g->obj))
            return 1;
        return const_eq(v, g->obj);
    case ST_G_TENSOR: {
        if ((PyObject *)Py_TYPE(v) != g->obj) return 0;
        st_tensor *vt = st_fe_unwrap(v);
        /* a stale view's requires_grad is its base's (viewhist.c); a
         * failure shows again where the history is used */
        if (st_ad_view_stale(vt) && st_ad_view_refresh(vt) != ST_OK) st_err_clear();
        const st_tensor *t = vt;
        if ((int)t->dtype != g->dtype || t->ndim != g->ndim ||
            t->requires_grad != g->requires_grad)
            return 0;
        if (any_size) {
            /* sizes and strides left out */
        } else if (g->dyn) {
            /* symbolic dims: any size >= 2, a layout of the same kind */
            for (int i = 0; i < t->ndim; i++) {
                if ((g->dyn >> i) & 1u) {
                    if (t->shape[i] < 2) return 0;
                } else if (t->shape[i] != g->shape[i]) {
                    return 0;
                }
            }
            if (!dyn_layout_match(g, t)) return 0;
        } else {
            for (int i = 0; i < t->ndim; i++)
                if (t->shape[i] != g->shape[i] || t->strides[i] != g->strides[i]) return 0;
        }
        const st_device *d = st_tensor_device(t);
        return (int)d->type == g->device_type && d->index == g->device_index;
    }
    case ST_G_LEN:
        if ((PyObject *)Py_TYPE(v) != g->obj) return 0;
        return Py_SIZE(v) == g->len;
    case ST_G_DICT_KEYS: {
        if ((PyObject *)Py_TYPE(v) != g->obj) return 0;
        Py_ssize_t n = PyTuple_GET_SIZE(g->keys), pos = 0, i = 0;
        if (PyDict_GET_SIZE(v) != n) return 0;
        PyObject *k, *val, *order = g->keys2 ? g->keys2 : g->keys;
        if (PyODict_Check(v)) {
            int r = check_contents(g, v);    /* its own order */
            if (r <= 0) return r;
        }
        while (PyDict_Next(v, &pos, &k, &val)) {
            PyObject *want = PyTuple_GET_ITEM(order, i++);
            if (k == want) continue;
            int r = same_obj(k, want);
            if (r <= 0) return r;
        }
        return 1;
    }
    case ST_G_CONTENTS: return check_contents(g, v);
    case ST_G_PRED: {
        PyObject *r = PyObject_CallOneArg(g->obj, v);
        int ok = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        return ok;
    }
    default: return 0;
    }
}

/* Guards [0, hi) are checked; static ones only when check_static.
 * any_size: tensor sizes and int arguments' values are not checked, and the epochs are not recorded
 * (a pass says nothing about the sizes the entry was made for). */
static int check_range_(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo,
                        const st_fe_guard **failed, int hi, bool check_static, bool any_size)
{
    if (st_ad_grad_enabled() != gs->grad_mode || st_rt_autocast_state() != gs->autocast) {
        if (failed) *failed = NULL;
        return 0;
    }
    for (int i = 0; i < hi; i++) {
        const st_fe_guard *g = &gs->v[i];
        if (!check_static && g->src->is_static &&
            !(g->kind == ST_G_ALIAS && !g->src2->is_static)) continue;
        if (g->kind == ST_G_ALIAS) {
            PyObject *a = st_fe_src_eval(g->src, f, memo);
            if (!a && PyErr_Occurred()) return -1;
            PyObject *b = st_fe_src_eval(g->src2, f, memo);
            if (!b && PyErr_Occurred()) { Py_XDECREF(a); return -1; }
            int same = a && a == b;
            Py_XDECREF(a);
            Py_XDECREF(b);
            if (!same) {
                if (failed) *failed = g;
                return 0;
            }
            continue;
        }
        if (g->kind == ST_G_SYM) {
            int r = st_fe_sym_guard_check(gs, g, f, memo);
            if (r <= 0) {
                if (failed) *failed = g;
                return r;
            }
            continue;
        }
        PyObject *v = st_fe_src_eval(g->src, f, memo);
        if (!v && PyErr_Occurred()) return -1;
        int r = check_one(g, v, any_size);
        Py_XDECREF(v);
        if (r <= 0) {
            if (failed) *failed = g;
            return r;
        }
    }
    if (check_static && !any_size) {
        gs->module_epoch = st_fe_module_epoch;
        gs->meta_epoch = st_fe_meta_epoch;
        watch(gs, memo);
    }
    return 1;
}

static int check_range(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo,
                       const st_fe_guard **failed, int hi, bool check_static)
{
    return check_range_(gs, f, memo, failed, hi, check_static, false);
}

int st_fe_guards_size_miss(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo)
{
    return check_range_(gs, f, memo, NULL, gs->n, true, true);
}

static bool epochs_held(const st_fe_guardset *gs)
{
    return gs->module_epoch == st_fe_module_epoch && gs->meta_epoch == st_fe_meta_epoch &&
           static_held(gs);
}

int st_fe_guards_check(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo,
                       const st_fe_guard **failed)
{
    bool full = !epochs_held(gs);
    return check_range(gs, f, memo, failed, gs->n, full);
}

static bool is_part_name(PyObject *name)
{
    return name && PyUnicode_Check(name) &&
           (PyUnicode_CompareWithASCIIString(name, "_modules") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "_parameters") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "_buffers") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "_forward_hooks") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "_forward_pre_hooks") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "_backward_hooks") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "_backward_pre_hooks") == 0);
}

static bool is_dict_name(PyObject *name)
{
    return name && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__dict__") == 0;
}

/* Is name in the instance __dict__ of o (not a class attribute)? */
static bool in_instance_dict(PyObject *o, PyObject *name)
{
    PyObject **dp = _PyObject_GetDictPtr(o);
    if (!dp || !*dp || !name) return false;
    PyObject *v = PyDict_GetItemWithError(*dp, name);
    if (!v) PyErr_Clear();
    return v != NULL;
}

static bool guard_static(const st_fe_guard *g)
{
    return g->src->is_static && !(g->kind == ST_G_ALIAS && !g->src2->is_static);
}

int st_fe_guards_partition(st_fe_guardset *gs, st_fe_srctab *t)
{
    /* fixed[id]: the symtrace Module an ID guard fixes the source to;
     * eqc[id]: the source has an EQ guard (an immutable constant) */
    PyObject **fixed = calloc((size_t)t->n + 1, sizeof *fixed);
    bool *eqc = calloc((size_t)t->n + 1, sizeof *eqc);
    st_fe_guard *tmp = malloc((size_t)(gs->n ? gs->n : 1) * sizeof *tmp);
    if (!fixed || !eqc || !tmp) { free(fixed); free(eqc); free(tmp); return -1; }
    for (int i = 0; i < gs->n; i++) {
        const st_fe_guard *g = &gs->v[i];
        if (g->kind == ST_G_ID && st_fe_is_module(g->obj)) fixed[g->src->id] = g->obj;
        if (g->kind == ST_G_EQ) eqc[g->src->id] = true;
    }
    /* mut[id]: the value is a mutable container or object (LEN, DICT_KEYS
     * or TYPE guard) whose contents can change without any dict stamp
     * moving (net.lst.append(3)): never static, unless it is a Module's
     * part dict (_parameters/_buffers/_modules), which is watched itself */
    bool *mut = calloc((size_t)t->n + 1, sizeof *mut);
    if (!mut) { free(fixed); free(eqc); free(tmp); return -1; }
    for (int i = 0; i < gs->n; i++) {
        const st_fe_guard *g = &gs->v[i];
        /* (an int's TYPE guard, a value symbol's, is as immutable as an EQ) */
        if (g->kind == ST_G_LEN || g->kind == ST_G_DICT_KEYS || g->kind == ST_G_CONTENTS ||
            g->kind == ST_G_PRED ||
            (g->kind == ST_G_TYPE && g->obj != (PyObject *)&PyLong_Type))
            mut[g->src->id] = !(g->src->kind == ST_SRC_ATTR && is_part_name(g->src->name));
    }
    /* Static: read from a Module fixed by identity, through what only
     * Module.__setattr__/__delattr__/register_* change (module epoch): its
     * instance attributes (not class attributes: setting those bumps no
     * epoch), its part dicts (base.__dict__[part][name], base._modules[name])
     * and the items of static immutable constants. Bases come first (ids). */
    for (int i = 0; i < t->n; i++) {
        st_fe_src *s = t->v[i], *b = s->base;
        bool st = false;
        if (b) {
            PyObject *m = fixed[b->id];
            if (s->kind == ST_SRC_MODPART) st = m != NULL;
            else if (s->kind == ST_SRC_ATTR)
                /* an instance attribute, or the instance __dict__ itself
                 * (Module.__setattr__ moves the epoch when it changes) */
                st = m && (in_instance_dict(m, s->name) || is_dict_name(s->name));
            else if (s->kind == ST_SRC_ITEM)
                st = b->is_static && ((b->kind == ST_SRC_ATTR && (is_part_name(b->name) ||
                                                                 is_dict_name(b->name))) ||
                                      eqc[b->id]);
        }
        s->is_static = st && !mut[s->id];
    }
    free(fixed);
    free(eqc);
    free(mut);
    int k = 0;
    for (int i = 0; i < gs->n; i++)
        if (!guard_static(&gs->v[i])) k++;
    int a = 0, b = k;
    for (int i = 0; i < gs->n; i++)
        tmp[guard_static(&gs->v[i]) ? b++ : a++] = gs->v[i];
    memcpy(gs->v, tmp, (size_t)gs->n * sizeof *tmp);
    free(tmp);
    return k;
}

bool st_fe_guards_held(const st_fe_guardset *gs) { return epochs_held(gs); }

int st_fe_guards_check_front(st_fe_guardset *gs, const st_fe_frame *f, PyObject **memo,
                             const st_fe_guard **failed, int nfront, int held)
{
    if (held < 0) held = epochs_held(gs);
    if (held) return check_range(gs, f, memo, failed, nfront, false);
    return check_range(gs, f, memo, failed, gs->n, true);
}

/* ---------------- description ---------------- */
static PyObject *describe_one(const st_fe_guard *g)
{
    PyObject *src = st_fe_src_repr(g->src), *r = NULL;
    if (!src) return NULL;
    switch (g->kind) {
    case ST_G_TYPE:
        r = PyUnicode_FromFormat("TYPE_MATCH: type(%U) is %s", src, ((PyTypeObject *)g->obj)->tp_name);
        break;
    case ST_G_ID:
        if (PyType_Check(g->obj))
            r = PyUnicode_FromFormat("ID_MATCH: %U is <class '%s'>", src, ((PyTypeObject *)g->obj)->tp_name);
        else
            r = PyUnicode_FromFormat("ID_MATCH: %U is <%s object at %p>", src, Py_TYPE(g->obj)->tp_name, g->obj);
        break;
    case ST_G_EQ:
        r = PyUnicode_FromFormat("EQUALS_MATCH: %U == %R", src, g->obj);
        break;
    case ST_G_TENSOR: {
        char buf[512];
        int k = snprintf(buf, sizeof buf, "%s [", st_dtype_name((st_dtype)g->dtype));
        for (int i = 0; i < g->ndim && k < 400; i++) {
            if ((g->dyn >> i) & 1u)
                k += snprintf(buf + k, sizeof buf - (size_t)k, "%s*", i ? ", " : "");
            else
                k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? ", " : "", (long long)g->shape[i]);
        }
        if (g->dyn) {
            /* the recorded strides name the layout's kind */
            k += snprintf(buf + k, sizeof buf - (size_t)k, "] (* any size >= 2) layout as stride=[");
            for (int i = 0; i < g->ndim && k < 480; i++)
                k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? ", " : "", (long long)g->strides[i]);
            k += snprintf(buf + k, sizeof buf - (size_t)k, "]");
        } else {
            k += snprintf(buf + k, sizeof buf - (size_t)k, "] stride=[");
            for (int i = 0; i < g->ndim && k < 480; i++)
                k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? ", " : "", (long long)g->strides[i]);
            k += snprintf(buf + k, sizeof buf - (size_t)k, "]");
        }
        const st_device *d = st_rt_device((st_device_type)g->device_type, g->device_index);
        snprintf(buf + k, sizeof buf - (size_t)k, " %s requires_grad=%s",
                 d ? d->name : "?", g->requires_grad ? "True" : "False");
        r = PyUnicode_FromFormat("TENSOR_MATCH: %U %s", src, buf);
        break;
    }
    case ST_G_LEN:
        r = PyUnicode_FromFormat("LENGTH_CHECK: type(%U) is %s and len(%U) == %zd", src,
                                 ((PyTypeObject *)g->obj)->tp_name, src, g->len);
        break;
    case ST_G_DICT_KEYS: {
        PyObject *l = PySequence_List(g->keys);
        PyObject *l2 = l && g->keys2 ? PySequence_List(g->keys2) : NULL;
        if (l && g->keys2 && !l2) Py_CLEAR(l);
        if (l && l2)
            r = PyUnicode_FromFormat("DICT_KEYS: list(%U.keys()) == %R and list(dict.keys(%U)) == %R",
                                     src, l, src, l2);
        else if (l)
            r = PyUnicode_FromFormat("DICT_KEYS: list(%U.keys()) == %R", src, l);
        Py_XDECREF(l);
        Py_XDECREF(l2);
        break;
    }
    case ST_G_CONTENTS:
        r = PyUnicode_FromFormat("CONTENTS: type(%U) is %s and tuple(%U) matches %R (objects by identity)",
                                 src, ((PyTypeObject *)g->obj)->tp_name, src, g->keys);
        break;
    case ST_G_ABSENT:
        r = PyUnicode_FromFormat("ABSENT: %U is not set", src);
        break;
    case ST_G_ALIAS: {
        PyObject *s2 = st_fe_src_repr(g->src2);
        if (s2) r = PyUnicode_FromFormat("ALIAS: %U is %U", src, s2);
        Py_XDECREF(s2);
        break;
    }
    case ST_G_SYM:
        break;
    case ST_G_PRED:
        r = PyUnicode_FromFormat("PREDICATE: %R(%U)", g->obj, src);
        break;
    }
    Py_DECREF(src);
    return r;
}

PyObject *st_fe_guards_describe(const st_fe_guardset *gs)
{
    PyObject *l = PyList_New(0), *s;
    if (!l) return NULL;
    s = PyUnicode_FromFormat("GRAD_MODE: is_grad_enabled() == %s", gs->grad_mode ? "True" : "False");
    if (!s || PyList_Append(l, s) < 0) goto fail;
    Py_DECREF(s);
    if (gs->autocast) {
        st_dtype c, g;
        bool con = st_rt_autocast_in(gs->autocast, ST_DEV_CPU, &c);
        bool gon = st_rt_autocast_in(gs->autocast, ST_DEV_CUDA, &g);
        s = PyUnicode_FromFormat("AUTOCAST: cpu %s, cuda %s", con ? st_dtype_name(c) : "off",
                                 gon ? st_dtype_name(g) : "off");
        if (!s || PyList_Append(l, s) < 0) goto fail;
        Py_DECREF(s);
    }
    for (int i = 0; i < gs->n; i++) {
        s = gs->v[i].kind == ST_G_SYM ? st_fe_sym_guard_describe(gs, &gs->v[i])
                                      : describe_one(&gs->v[i]);
        if (!s || PyList_Append(l, s) < 0) goto fail;
        Py_DECREF(s);
    }
    return l;
fail:
    Py_XDECREF(s);
    Py_DECREF(l);
    return NULL;
}
