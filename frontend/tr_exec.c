/* frontend/tr_exec.c - the translator's stack machine: decodes CPython
 * 3.11/3.12 bytecode (opcode numbers and inline caches read from the
 * opcode module) and runs one frame's instructions on real values; a
 * generator's frame runs up to its next yield (yield from included). */
#include "tr_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- opcodes (numbers read from the opcode module) -------- */
#define TR_OPS(X) \
    X(NOP) X(RESUME) X(CACHE) X(POP_TOP) X(PUSH_NULL) X(END_FOR) X(COPY) X(SWAP) \
    X(UNARY_NEGATIVE) X(UNARY_NOT) X(UNARY_INVERT) X(UNARY_POSITIVE) \
    X(BINARY_OP) X(BINARY_SUBSCR) X(STORE_SUBSCR) X(DELETE_SUBSCR) \
    X(BINARY_SLICE) X(STORE_SLICE) X(COMPARE_OP) X(IS_OP) X(CONTAINS_OP) \
    X(LOAD_CONST) X(RETURN_VALUE) X(RETURN_CONST) X(LOAD_FAST) X(LOAD_FAST_CHECK) \
    X(LOAD_FAST_AND_CLEAR) X(STORE_FAST) X(DELETE_FAST) X(LOAD_GLOBAL) \
    X(STORE_GLOBAL) X(DELETE_GLOBAL) X(LOAD_ATTR) X(LOAD_METHOD) X(LOAD_SUPER_ATTR) \
    X(STORE_ATTR) X(DELETE_ATTR) X(LOAD_DEREF) X(STORE_DEREF) X(DELETE_DEREF) \
    X(LOAD_CLOSURE) X(MAKE_CELL) X(COPY_FREE_VARS) X(BUILD_TUPLE) X(BUILD_LIST) \
    X(BUILD_SET) X(BUILD_MAP) X(BUILD_CONST_KEY_MAP) X(BUILD_STRING) X(BUILD_SLICE) \
    X(LIST_APPEND) X(SET_ADD) X(MAP_ADD) X(LIST_EXTEND) X(SET_UPDATE) X(DICT_UPDATE) \
    X(DICT_MERGE) X(LIST_TO_TUPLE) X(UNPACK_SEQUENCE) X(UNPACK_EX) X(GET_ITER) \
    X(FOR_ITER) X(JUMP_FORWARD) X(JUMP_BACKWARD) X(JUMP_BACKWARD_NO_INTERRUPT) \
    X(POP_JUMP_IF_FALSE) X(POP_JUMP_IF_TRUE) X(POP_JUMP_IF_NONE) X(POP_JUMP_IF_NOT_NONE) \
    X(POP_JUMP_FORWARD_IF_FALSE) X(POP_JUMP_FORWARD_IF_TRUE) X(POP_JUMP_FORWARD_IF_NONE) \
    X(POP_JUMP_FORWARD_IF_NOT_NONE) X(POP_JUMP_BACKWARD_IF_FALSE) X(POP_JUMP_BACKWARD_IF_TRUE) \
    X(POP_JUMP_BACKWARD_IF_NONE) X(POP_JUMP_BACKWARD_IF_NOT_NONE) X(JUMP_IF_FALSE_OR_POP) \
    X(JUMP_IF_TRUE_OR_POP) X(PRECALL) X(KW_NAMES) X(CALL) X(CALL_FUNCTION_EX) \
    X(MAKE_FUNCTION) X(FORMAT_VALUE) X(BEFORE_WITH) X(IMPORT_NAME) X(IMPORT_FROM) \
    X(CALL_INTRINSIC_1) X(EXTENDED_ARG) X(GET_LEN) X(RETURN_GENERATOR) X(YIELD_VALUE) \
    X(LOAD_ASSERTION_ERROR) X(RAISE_VARARGS) X(RERAISE) X(LOAD_BUILD_CLASS) \
    X(GET_YIELD_FROM_ITER) X(SEND) X(END_SEND) X(CLEANUP_THROW) \
    X(PUSH_EXC_INFO) X(POP_EXCEPT) X(CHECK_EXC_MATCH) X(WITH_EXCEPT_START) \
    X(MATCH_SEQUENCE) X(MATCH_MAPPING) X(MATCH_CLASS) X(MATCH_KEYS)

enum {
#define X(n) OP_##n,
    TR_OPS(X)
#undef X
    OP__COUNT
};
static const char *op_names[] = {
#define X(n) #n,
    TR_OPS(X)
#undef X
};
static int op_of[256];          /* real opcode -> OP_* or -1 */
static int cache_of[256];       /* inline cache code units */
static PyObject *real_opname;   /* opcode.opname list */
static int nb_of[64];           /* BINARY_OP arg -> 0..12 (base op), +100 inplace */
static int n_nb;
static int intr_list_to_tuple = -1, intr_unary_positive = -1, intr_stopiteration_error = -1;

static int tr_init_done;

int tr_exec_init(void)
{
    if (tr_init_done)
        return 0;
    PyObject *m = PyImport_ImportModule("opcode");
    if (!m)
        return -1;
    PyObject *opmap = PyObject_GetAttrString(m, "opmap");
    PyObject *caches = PyObject_GetAttrString(m, "_inline_cache_entries");
    PyObject *nbops = PyObject_GetAttrString(m, "_nb_ops");
    real_opname = PyObject_GetAttrString(m, "opname");
    int rc = -1;
    if (!opmap || !caches || !nbops || !real_opname)
        goto out;
    for (int i = 0; i < 256; i++) {
        op_of[i] = -1;
        cache_of[i] = 0;
    }
    for (int k = 0; k < OP__COUNT; k++) {
        PyObject *v = PyDict_GetItemString(opmap, op_names[k]);
        if (v) {
            long n = PyLong_AsLong(v);
            if (n >= 0 && n < 256)
                op_of[n] = k;
        }
    }
    for (int i = 0; i < 256 && i < PyObject_Length(caches); i++) {
        PyObject *v = PySequence_GetItem(caches, i);
        if (!v)
            goto out;
        cache_of[i] = (int)PyLong_AsLong(v);
        Py_DECREF(v);
    }
    static const char *base[] = {"NB_ADD", "NB_AND", "NB_FLOOR_DIVIDE",
        "NB_LSHIFT", "NB_MATRIX_MULTIPLY", "NB_MULTIPLY", "NB_REMAINDER",
        "NB_OR", "NB_POWER", "NB_RSHIFT", "NB_SUBTRACT", "NB_TRUE_DIVIDE",
        "NB_XOR"};
    n_nb = (int)PyObject_Length(nbops);
    for (int i = 0; i < n_nb && i < 64; i++) {
        PyObject *t = PySequence_GetItem(nbops, i);
        if (!t)
            goto out;
        const char *nm = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0));
        nb_of[i] = -1;
        for (int b = 0; b < 13 && nm; b++) {
            if (!strcmp(nm, base[b]))
                nb_of[i] = b;
            else if (!strncmp(nm, "NB_INPLACE_", 11) && !strcmp(nm + 11, base[b] + 3))
                nb_of[i] = 100 + b;
        }
        Py_DECREF(t);
    }
    PyObject *intr = PyObject_GetAttrString(m, "_intrinsic_1_descs");
    if (intr) {
        Py_ssize_t n = PyObject_Length(intr);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *t = PySequence_GetItem(intr, i);
            const char *nm = t ? PyUnicode_AsUTF8(t) : NULL;
            if (nm && !strcmp(nm, "INTRINSIC_LIST_TO_TUPLE"))
                intr_list_to_tuple = (int)i;
            if (nm && !strcmp(nm, "INTRINSIC_UNARY_POSITIVE"))
                intr_unary_positive = (int)i;
            if (nm && !strcmp(nm, "INTRINSIC_STOPITERATION_ERROR"))
                intr_stopiteration_error = (int)i;
            Py_XDECREF(t);
        }
        Py_DECREF(intr);
    }
    PyErr_Clear();
    if (tr_calls_init())
        goto out;
    tr_init_done = 1;
    rc = 0;
out:
    Py_XDECREF(opmap);
    Py_XDECREF(caches);
    Py_XDECREF(nbops);
    Py_DECREF(m);
    return rc;
}

/* For resume.c: the real opcode of a name (-1: not in this version) and
 * the inline cache units that follow an opcode. */
int tr_opnum(const char *name)
{
    if (tr_exec_init() < 0)
        return -1;
    static PyObject *opmap;
    if (!opmap) {
        PyObject *m = PyImport_ImportModule("opcode");
        opmap = m ? PyObject_GetAttrString(m, "opmap") : NULL;
        Py_XDECREF(m);
        if (!opmap)
            return -1;
    }
    PyObject *v = PyDict_GetItemString(opmap, name);   /* any opcode of this version */
    return v ? (int)PyLong_AsLong(v) : -1;
}

int tr_op_caches(int raw)
{
    return cache_of[raw & 255];
}

/* ---------------- the stack ---------------- */
#define PUSHV(fr, var) ((fr)->stack[(fr)->sp++] = (var))
#define TOP(fr, k) (&(fr)->stack[(fr)->sp - (k)])   /* k = 1: top */

static int push(tr_state *s, tr_frame *fr, tr_var *v)
{
    if (fr->sp >= fr->cap) {
        tr_var_clear(v);
        return tr_break(s, "stack overflow in the translator");
    }
    fr->stack[fr->sp++] = *v;
    return 0;
}

static int push_value(tr_state *s, tr_frame *fr, PyObject *v)
{
    if (!v)
        return tr_break_exc(s, "an operation");
    tr_var var;
    tr_make_value(s, &var, v);
    return push(s, fr, &var);
}

static void pop_n(tr_frame *fr, int n)
{
    for (int i = 0; i < n; i++)
        tr_var_clear(&fr->stack[--fr->sp]);
}

static tr_var pop(tr_frame *fr)
{
    return fr->stack[--fr->sp];
}

/* ---------------- helpers for opcodes ---------------- */
/* bool(o) of an object whose class defines __bool__ (or else __len__) in
 * Python (enum.Flag, a user container): the dunder inlined; its result
 * must be a bool (an int for __len__). */
static int user_truth(tr_state *s, tr_var *v, int *out)
{
    PyObject *o = v->v, *fn = tr_py_dunder(o, "__bool__");
    bool len = false;
    if (!fn && !(fn = tr_py_dunder(o, "__len__"), len = true, fn))
        return tr_break(s, "truth value of a %s (user-defined C __bool__/__len__)",
                        tr_type_name(o));
    tr_var r;
    if (tr_call_dunder(s, fn, v, NULL, 0, &r) < 0)
        return -1;
    int rc = 0;
    if (!r.v || r.it || (len ? !PyLong_Check(r.v) || PyBool_Check(r.v) || tr_is_symint(r.v)
                             : !PyBool_Check(r.v)))
        rc = tr_break(s, "%s.%s returned a %s", tr_type_name(o), len ? "__len__" : "__bool__",
                      r.v ? tr_type_name(r.v) : "NULL");
    else
        *out = len ? PyObject_IsTrue(r.v) : r.v == Py_True;
    tr_var_clear(&r);
    return rc;
}

static int truth(tr_state *s, tr_var *v, int *out)
{
    PyObject *o = v->v;
    if (!o)
        return tr_break(s, "truth value of NULL");
    if (st_fe_is_tensor(o))
        return tr_break(s, "data-dependent jump on a tensor");
    if (!tr_safe_type(o)) {
        PyTypeObject *t = Py_TYPE(o);
        bool has = (t->tp_as_number && t->tp_as_number->nb_bool) ||
                   (t->tp_as_mapping && t->tp_as_mapping->mp_length) ||
                   (t->tp_as_sequence && t->tp_as_sequence->sq_length);
        if (has)
            return user_truth(s, v, out);
        *out = 1;
        return 0;
    }
    int r = PyObject_IsTrue(o);
    if (r < 0)
        return tr_break_exc(s, "bool()");
    *out = r;
    return 0;
}

int tr_truth(tr_state *s, tr_var *v, int *out)
{
    return truth(s, v, out);
}

static int check_operands(tr_state *s, tr_var *a, tr_var *b, const char *what)
{
    /* a lazy number argument used: its value is guarded */
    if (tr_is_lazy(a->v) && tr_lazy_plain_var(s, a) < 0)
        return -1;
    if (!b && st_fe_is_tensor(a->v) && !strcmp(what, "formatting"))
        return tr_break(s, "formatting a tensor reads its data");
    if (b && tr_is_lazy(b->v) && tr_lazy_plain_var(s, b) < 0)
        return -1;
    if (s->dyn) {
        /* a size meets something else than an int: its value is guarded */
        bool fmt = !b && !strcmp(what, "formatting");
        bool ia = a->v && PyLong_Check(a->v) && !PyBool_Check(a->v);
        bool ib = b && b->v && PyLong_Check(b->v) && !PyBool_Check(b->v);
        if (tr_is_symint(a->v) && (fmt || (b && !ib)) && tr_dyn_plain_var(s, a) < 0)
            return -1;
        if (b && tr_is_symint(b->v) && !ia && tr_dyn_plain_var(s, b) < 0)
            return -1;
    }
    if (!tr_safe_type(a->v) || (b && !tr_safe_type(b->v)))
        return tr_break(s, "%s on %s%s%s is not supported", what,
                        tr_type_name(a->v), b ? " and " : "",
                        b ? tr_type_name(b->v) : "");
    return 0;
}

/* `v is other` (or `is None` as a jump) decided while tracing: the answer
 * depends on identity, so a sourced v (not a tensor: its own guards and
 * aliasing checks cover it) is guarded: by its type against a singleton
 * (x is None: type(x) decides; a number argument not yet guarded too), by
 * value if a bool, number or string, else by identity (o is DEFAULT, a
 * sentinel object). -1 with the break recorded. */
static int guard_identity(tr_state *s, tr_var *v, PyObject *other)
{
    if (!v->v || st_fe_is_tensor(v->v) || v->it || v->aux != TR_AUX_NONE)
        return 0;
    bool lazy = tr_is_lazy(v->v);
    st_fe_src *vs = lazy ? tr_lazy_src(s, v->v) : tr_var_src(s, v);
    if (!vs)
        return 0;
    PyObject *gobj;
    st_fe_guard_kind gk;
    if (lazy) {
        gk = ST_G_TYPE;
        gobj = (PyObject *)(PyFloat_Check(v->v) ? &PyFloat_Type : &PyLong_Type);
    } else if (other == Py_None || other == Py_Ellipsis || other == Py_NotImplemented ||
               v->v == Py_None || v->v == Py_Ellipsis || v->v == Py_NotImplemented) {
        gk = ST_G_TYPE;
        gobj = (PyObject *)Py_TYPE(v->v);
    } else {
        gk = (PyBool_Check(v->v) || PyLong_CheckExact(v->v) || PyFloat_CheckExact(v->v) ||
              PyUnicode_CheckExact(v->v)) ? ST_G_EQ : ST_G_ID;
        gobj = v->v;
    }
    if (st_fe_guard_add(&s->guards, gk, vs, gobj) < 0)
        return tr_break_exc(s, "guard");
    return 0;
}

static const char *const nb_dunder[] = {"__add__", "__and__", "__floordiv__", "__lshift__",
    "__matmul__", "__mul__", "__mod__", "__or__", "__pow__", "__rshift__", "__sub__",
    "__truediv__", "__xor__"};

/* a OP b where a's class defines the operator in Python (enum.Flag's
 * __and__/__or__, a user vector type) and b is no tensor (whose reflected
 * operator would have its say): that function (borrowed), else NULL. An
 * in-place operator uses it when the class has no __i<op>__. */
static PyObject *user_binop(tr_var *a, tr_var *b, int k)
{
    if (!a->v || !b->v || a->it || b->it || a->aux != TR_AUX_NONE || b->aux != TR_AUX_NONE ||
        st_fe_is_tensor(a->v) || st_fe_is_tensor(b->v) || tr_safe_type(a->v) ||
        PyType_Check(a->v))
        return NULL;
    if (k >= 100) {
        char in[24];
        snprintf(in, sizeof in, "__i%s", nb_dunder[k % 100] + 2);
        if (tr_py_dunder(a->v, in))
            return NULL;   /* left to the generic path (a break) */
    }
    return tr_py_dunder(a->v, nb_dunder[k % 100]);
}

/* o compares by identity (object's tp_richcompare: exceptions, plain
 * objects) and is no tensor, type or modelled value */
static bool identity_eq(tr_var *v)
{
    return v->v && !v->it && v->aux == TR_AUX_NONE && !st_fe_is_tensor(v->v) &&
           !PyType_Check(v->v) && !tr_is_lazy(v->v) && !tr_is_symint(v->v) &&
           Py_TYPE(v->v)->tp_richcompare == PyBaseObject_Type.tp_richcompare;
}

/* `a == b` / `a != b` / `a in seq` where a was made in the frame and
 * compares by identity (a caught exception), and the other side does too
 * or is a plain value (whose __eq__ answers NotImplemented): the answer
 * is a constant of the trace, since nothing from outside is a. */
static bool fresh_identity_cmp(tr_state *s, tr_var *a, tr_var *b)
{
    if (!identity_eq(a) || !tr_is_fresh(s, a->v) || !b->v || b->it || b->aux != TR_AUX_NONE)
        return false;
    return identity_eq(b) || (tr_safe_type(b->v) && !st_fe_is_tensor(b->v) &&
                              !PyList_Check(b->v) && !PyTuple_Check(b->v) &&
                              !PyDict_Check(b->v) && !PyAnySet_Check(b->v));
}

/* `a in seq`, a list or tuple, with a as above and each item one that
 * compares by identity or a plain value */
static bool fresh_identity_in(tr_state *s, tr_var *a, PyObject *seq)
{
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq))
        return false;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        tr_var it = {0};
        it.v = PySequence_Fast_GET_ITEM(seq, i);
        if (!fresh_identity_cmp(s, a, &it))
            return false;
    }
    return fresh_identity_cmp(s, a, a);
}

/* ---------------- match statements ---------------- */
/* The subject's type decides MATCH_SEQUENCE/MAPPING/CLASS: guarded when
 * it has a source (a tensor's own guards cover its type). */
static int guard_subject_type(tr_state *s, tr_var *v)
{
    if (!v->v || v->it || v->aux != TR_AUX_NONE)
        return tr_break(s, "match on an iterator");
    /* a lazy or symbolic number: its value (of type int or float) */
    if (tr_is_lazy(v->v) && tr_lazy_plain_var(s, v) < 0)
        return -1;
    if (tr_is_symint(v->v) && tr_dyn_plain_var(s, v) < 0)
        return -1;
    st_fe_src *vs = st_fe_is_tensor(v->v) ? NULL : tr_var_src(s, v);
    if (vs && st_fe_guard_add(&s->guards, ST_G_TYPE, vs, (PyObject *)Py_TYPE(v->v)) < 0)
        return tr_break_exc(s, "guard");
    return 0;
}

/* MATCH_CLASS: `case C(p1, ..., k=p)` on subj: a tuple of the values the
 * sub-patterns match (attributes read as the code would read them), or
 * None when subj is no C. Classes with a metaclass (__instancecheck__)
 * break; __match_args__ is read through C's source, guarded. */
static int match_class(tr_state *s, tr_var *subj, tr_var *cls, PyObject *kw, int npos,
                       PyObject **res)
{
    *res = NULL;
    if (guard_subject_type(s, subj) < 0)
        return -1;
    if (!cls->v || !PyType_Check(cls->v) || Py_TYPE(cls->v) != &PyType_Type || !PyTuple_Check(kw))
        return tr_break(s, "match against a %s (not a class of metaclass type)",
                        tr_type_name(cls->v));
    PyTypeObject *t = (PyTypeObject *)cls->v;
    if (!PyType_IsSubtype(Py_TYPE(subj->v), t)) {
        *res = Py_NewRef(Py_None);
        return 0;
    }
    PyObject *names = PyList_New(0), *margs = NULL;
    int rc = names ? 0 : tr_break_exc(s, "match");
    bool self_match = false;
    if (!rc && npos > 0) {
        PyObject *mn = PyUnicode_InternFromString("__match_args__");
        margs = mn ? PyObject_GetAttr(cls->v, mn) : NULL;
        if (!margs && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            self_match = (t->tp_flags & _Py_TPFLAGS_MATCH_SELF) && npos == 1;
            if (!self_match)
                rc = tr_break(s, "%s() accepts no positional sub-patterns", t->tp_name);
        } else if (!margs || !PyTuple_Check(margs) || PyTuple_GET_SIZE(margs) < npos) {
            rc = margs ? tr_break(s, "%s.__match_args__ too short or not a tuple", t->tp_name)
                       : tr_break_exc(s, "__match_args__");
        } else {
            st_fe_src *cs = tr_var_src(s, cls);
            st_fe_src *ms = cs ? st_fe_src_attr(&s->srcs, cs, mn) : NULL;
            if (cs && (!ms || st_fe_guard_value(&s->guards, ms, margs) < 0))
                rc = tr_break_exc(s, "guard");
            for (int i = 0; !rc && i < npos; i++)
                rc = PyList_Append(names, PyTuple_GET_ITEM(margs, i));
        }
        Py_XDECREF(mn);
    }
    for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(kw); i++)
        rc = PyList_Append(names, PyTuple_GET_ITEM(kw, i));
    Py_ssize_t n = rc ? 0 : PyList_GET_SIZE(names) + (self_match ? 1 : 0);
    PyObject *tup = rc ? NULL : PyTuple_New(n);
    if (!rc && !tup)
        rc = tr_break_exc(s, "match");
    Py_ssize_t j = 0;
    if (!rc && self_match)
        PyTuple_SET_ITEM(tup, j++, Py_NewRef(subj->v));
    for (Py_ssize_t i = 0; !rc && i < PyList_GET_SIZE(names); i++) {
        PyObject *nm = PyList_GET_ITEM(names, i);
        if (!PyUnicode_Check(nm)) {
            rc = tr_break(s, "__match_args__ item not a str");
            break;
        }
        if (tr_hasattr(s, subj, nm) <= 0) {
            /* a missing attribute: no match (a break when it cannot tell) */
            rc = PyErr_Occurred() || s->broke ? -1 : 0;
            if (!rc) {
                Py_CLEAR(tup);
                *res = Py_NewRef(Py_None);
            }
            break;
        }
        tr_var v;
        if (tr_getattr(s, subj, nm, &v) < 0) {
            rc = -1;
            break;
        }
        PyTuple_SET_ITEM(tup, j++, Py_NewRef(v.v));
        tr_var_clear(&v);
    }
    Py_XDECREF(names);
    Py_XDECREF(margs);
    if (rc < 0) {
        Py_XDECREF(tup);
        if (!s->broke)
            tr_break_exc(s, "match");
        return -1;
    }
    if (!*res)
        *res = tup;
    return 0;
}

/* MATCH_KEYS: `case {k1: p1, ...}` on a dict (exactly): a tuple of the
 * values under the keys (plain constants), or None when one is missing. */
static int match_keys(tr_state *s, tr_var *subj, PyObject *keys, PyObject **res)
{
    *res = NULL;
    if (!subj->v || !PyDict_CheckExact(subj->v) || !PyTuple_Check(keys))
        return tr_break(s, "a mapping pattern on a %s", tr_type_name(subj->v));
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(keys, i);
        if (!tr_const_key(k))
            return tr_break(s, "a mapping pattern with a %s key", tr_type_name(k));
        int has = PyDict_Contains(subj->v, k);
        if (has < 0)
            return tr_break_exc(s, "match");
        if (!has) {
            *res = Py_NewRef(Py_None);
            return 0;
        }
    }
    PyObject *tup = PyTuple_New(n);
    if (!tup)
        return tr_break_exc(s, "match");
    for (Py_ssize_t i = 0; i < n; i++) {
        tr_var kv = {0}, v;
        tr_make_value(s, &kv, Py_NewRef(PyTuple_GET_ITEM(keys, i)));
        int rc = tr_subscr(s, subj, &kv, &v);
        tr_var_clear(&kv);
        if (rc < 0) {
            Py_DECREF(tup);
            return -1;
        }
        PyTuple_SET_ITEM(tup, i, Py_NewRef(v.v));
        tr_var_clear(&v);
    }
    *res = tup;
    return 0;
}

static PyObject *binop(int b, PyObject *x, PyObject *y, bool inplace)
{
    switch (b) {
    case 0: return inplace ? PyNumber_InPlaceAdd(x, y) : PyNumber_Add(x, y);
    case 1: return inplace ? PyNumber_InPlaceAnd(x, y) : PyNumber_And(x, y);
    case 2: return inplace ? PyNumber_InPlaceFloorDivide(x, y) : PyNumber_FloorDivide(x, y);
    case 3: return inplace ? PyNumber_InPlaceLshift(x, y) : PyNumber_Lshift(x, y);
    case 4: return inplace ? PyNumber_InPlaceMatrixMultiply(x, y) : PyNumber_MatrixMultiply(x, y);
    case 5: return inplace ? PyNumber_InPlaceMultiply(x, y) : PyNumber_Multiply(x, y);
    case 6: return inplace ? PyNumber_InPlaceRemainder(x, y) : PyNumber_Remainder(x, y);
    case 7: return inplace ? PyNumber_InPlaceOr(x, y) : PyNumber_Or(x, y);
    case 8: return inplace ? PyNumber_InPlacePower(x, y, Py_None) : PyNumber_Power(x, y, Py_None);
    case 9: return inplace ? PyNumber_InPlaceRshift(x, y) : PyNumber_Rshift(x, y);
    case 10: return inplace ? PyNumber_InPlaceSubtract(x, y) : PyNumber_Subtract(x, y);
    case 11: return inplace ? PyNumber_InPlaceTrueDivide(x, y) : PyNumber_TrueDivide(x, y);
    case 12: return inplace ? PyNumber_InPlaceXor(x, y) : PyNumber_Xor(x, y);
    }
    PyErr_SetString(PyExc_SystemError, "bad binary op");
    return NULL;
}

static bool is_mutable_container(PyObject *o)
{
    return PyList_Check(o) || PyDict_Check(o) || PyAnySet_CheckExact(o) ||
           PyByteArray_Check(o);
}

/* Mutations of objects from outside the frame: tr_fx_redirect
 * (tr_effects.c) lets tensors and fresh objects be, shadows lists and
 * dicts, and breaks on the rest. */

static void log_stack(tr_state *s, tr_frame *fr, int op, int arg)
{
    PyObject *nm = PySequence_GetItem(real_opname, op);
    fprintf(stderr, "[symtrace] %*s%s:%d %s %d  stack:", fr->depth * 2, "",
            PyUnicode_AsUTF8(fr->code->co_name),
            PyCode_Addr2Line(fr->code, fr->lasti * 2),
            nm ? PyUnicode_AsUTF8(nm) : "?", arg);
    Py_XDECREF(nm);
    for (int i = 0; i < fr->sp; i++) {
        tr_var *v = &fr->stack[i];
        PyObject *r = NULL;
        /* never run user __repr__ or read tensor data while tracing */
        if (v->it)
            r = PyUnicode_FromFormat("iterator %d/%d", v->it->pos, v->it->n);
        else if (v->v && st_fe_is_tensor(v->v)) {
            st_tensor *t = st_fe_unwrap(v->v);
            PyObject *shape = st_fe_shape_tuple(t->shape, t->ndim);
            r = shape ? PyUnicode_FromFormat("%s%R", st_dtype_name(t->dtype), shape) : NULL;
            Py_XDECREF(shape);
        } else if (v->v && (v->v == Py_None || PyLong_CheckExact(v->v) || PyFloat_CheckExact(v->v) ||
                            PyBool_Check(v->v) || PyUnicode_CheckExact(v->v)))
            r = PyObject_Repr(v->v);
        else if (v->v)
            r = PyUnicode_FromFormat("%p", (void *)v->v);
        const char *rs = r ? PyUnicode_AsUTF8(r) : "NULL";
        if (!rs)
            rs = "?";
        PyObject *sr = v->src ? st_fe_src_repr(v->src) : NULL;
        fprintf(stderr, " [%s %.40s%s%s]", tr_type_name(v->v), rs,
                sr ? " @" : "", sr ? PyUnicode_AsUTF8(sr) : "");
        Py_XDECREF(r);
        Py_XDECREF(sr);
    }
    PyErr_Clear();
    fprintf(stderr, "\n");
    (void)s;
}

/* ---------------- the interpreter loop ---------------- */
static int do_call(tr_state *s, tr_frame *fr, int nargs, PyObject *kwnames)
{
    /* [NULL|meth, callable|self, args...] */
    tr_var *base = TOP(fr, nargs + 2);
    tr_var out;
    int rc;
    if (base[0].v)
        rc = tr_call(s, &base[0], &base[1], nargs + 1, kwnames, &out);
    else
        rc = tr_call(s, &base[1], &base[2], nargs, kwnames, &out);
    pop_n(fr, nargs + 2);
    if (rc < 0)
        return -1;
    return push(s, fr, &out);
}

static int do_call_ex(tr_state *s, tr_frame *fr, int has_kw)
{
    tr_var kw = {0};
    if (has_kw)
        kw = pop(fr);
    tr_var args = pop(fr);
    tr_var fn = pop(fr);
    pop_n(fr, 1);                   /* the NULL below */
    int rc = -1;
    tr_var *items = NULL;
    int n = 0;
    PyObject *kwnames = NULL;
    tr_var out = {0};
    if (tr_unroll(s, &args, &items, &n) < 0)
        goto done;
    if (kw.v) {
        if (!PyDict_Check(kw.v)) {
            tr_break(s, "**kwargs of type %s", tr_type_name(kw.v));
            goto done;
        }
        Py_ssize_t nk = PyDict_GET_SIZE(kw.v);
        kwnames = PyTuple_New(nk);
        tr_var *all = realloc(items, sizeof(tr_var) * (size_t)(n + nk + 1));
        if (!kwnames || !all) {
            tr_break(s, "out of memory");
            goto done;
        }
        items = all;
        Py_ssize_t pos = 0, k = 0;
        PyObject *key, *val;
        while (PyDict_Next(kw.v, &pos, &key, &val)) {
            if (!PyUnicode_Check(key)) {
                tr_break(s, "keywords must be strings");
                goto done;
            }
            PyTuple_SET_ITEM(kwnames, k, Py_NewRef(key));
            if (kw.src) {
                st_fe_src *is = st_fe_src_item(&s->srcs, kw.src, key);
                if (!is || tr_make_sourced(s, &items[n + k], Py_NewRef(val), is) < 0) {
                    n += (int)k;
                    goto done;
                }
            } else {
                tr_make_value(s, &items[n + k], Py_NewRef(val));
            }
            k++;
        }
        n += (int)nk;
    }
    rc = tr_call(s, &fn, items, n, kwnames && PyTuple_GET_SIZE(kwnames) ? kwnames : NULL, &out);
done:
    for (int i = 0; i < n; i++)
        tr_var_clear(&items[i]);
    free(items);
    Py_XDECREF(kwnames);
    tr_var_clear(&kw);
    tr_var_clear(&args);
    tr_var_clear(&fn);
    if (rc < 0)
        return -1;
    return push(s, fr, &out);
}

static int do_make_function(tr_state *s, tr_frame *fr, int flags)
{
    tr_var code = pop(fr);
    tr_var closure = {0}, annot = {0}, kwdefs = {0}, defs = {0};
    if (flags & 0x08) closure = pop(fr);
    if (flags & 0x04) annot = pop(fr);
    if (flags & 0x02) kwdefs = pop(fr);
    if (flags & 0x01) defs = pop(fr);
    int rc = -1;
    PyObject *fn = NULL;
    if (!code.v || !PyCode_Check(code.v)) {
        tr_break(s, "MAKE_FUNCTION without a code object");
        goto done;
    }
    fn = PyFunction_NewWithQualName(code.v, fr->globals,
                                    ((PyCodeObject *)code.v)->co_qualname);
    if (!fn)
        goto err;
    if (closure.v && PyFunction_SetClosure(fn, closure.v) < 0)
        goto err;
    if (defs.v && PyFunction_SetDefaults(fn, defs.v) < 0)
        goto err;
    if (kwdefs.v && PyFunction_SetKwDefaults(fn, kwdefs.v) < 0)
        goto err;
    if (annot.v && PyFunction_SetAnnotations(fn, annot.v) < 0)
        goto err;
    if (tr_mark_fresh(s, fn) < 0)
        goto err;
    tr_var out = {0};
    out.v = fn;
    fn = NULL;
    rc = push(s, fr, &out);
    goto done;
err:
    tr_break_exc(s, "MAKE_FUNCTION");
done:
    Py_XDECREF(fn);
    tr_var_clear(&code);
    tr_var_clear(&closure);
    tr_var_clear(&annot);
    tr_var_clear(&kwdefs);
    tr_var_clear(&defs);
    return rc;
}

static int load_global(tr_state *s, tr_frame *fr, PyObject *name, tr_var *out)
{
    int w = tr_fx_load_global(s, fr, name, out);   /* written in this frame */
    if (w != 0)
        return w < 0 ? -1 : 0;
    PyObject *v = PyDict_GetItemWithError(fr->globals, name);
    st_fe_src *src = NULL;
    if (v) {
        if (fr->same_globals)
            src = st_fe_src_global(&s->srcs, name);
        else if (fr->globals_src && !(src = st_fe_src_item(&s->srcs, fr->globals_src, name)))
            return tr_break_exc(s, "source");
    } else {
        if (PyErr_Occurred())
            return tr_break_exc(s, "LOAD_GLOBAL");
        v = PyDict_GetItemWithError(fr->builtins, name);
        if (!v) {
            if (PyErr_Occurred())
                return tr_break_exc(s, "LOAD_GLOBAL");
            return tr_break(s, "name '%s' is not defined", PyUnicode_AsUTF8(name));
        }
        if (fr->same_globals) {
            /* the global must stay absent for the builtin to be found */
            st_fe_src *g = st_fe_src_global(&s->srcs, name);
            if (!g || st_fe_guard_add(&s->guards, ST_G_ABSENT, g, NULL) < 0)
                return tr_break_exc(s, "guard");
            src = st_fe_src_builtin(&s->srcs, name);
        } else if (fr->globals_src) {
            st_fe_src *g = st_fe_src_item(&s->srcs, fr->globals_src, name);
            if (!g || st_fe_guard_add(&s->guards, ST_G_ABSENT, g, NULL) < 0)
                return tr_break_exc(s, "guard");
        }
    }
    if (fr->same_globals && !src)
        return tr_break_exc(s, "source");
    if (src)
        return tr_make_sourced(s, out, Py_NewRef(v), src);
    tr_make_value(s, out, Py_NewRef(v));
    return 0;
}

static int unpack(tr_state *s, tr_frame *fr, int before, int after, bool ex)
{
    tr_var seq = pop(fr);
    tr_var *items = NULL;
    int n = 0, rc = -1;
    if (tr_unroll(s, &seq, &items, &n) < 0)
        goto done;
    if ((!ex && n != before) || (ex && n < before + after)) {
        tr_break(s, "cannot unpack %d values into %d", n, before + after);
        goto done;
    }
    if (fr->sp + before + after + 1 > fr->cap) {
        tr_break(s, "stack overflow in the translator");
        goto done;
    }
    /* push in reverse: the first item ends on top */
    for (int i = n - 1; i >= n - after; i--) {
        PUSHV(fr, items[i]);
        items[i].v = NULL;
        items[i].it = NULL;
    }
    if (ex) {
        PyObject *l = PyList_New(0);
        if (!l || tr_mark_fresh(s, l) < 0) {
            Py_XDECREF(l);
            tr_break_exc(s, "UNPACK_EX");
            goto done;
        }
        for (int i = before; i < n - after; i++)
            if (PyList_Append(l, items[i].v) < 0) {
                Py_DECREF(l);
                tr_break_exc(s, "UNPACK_EX");
                goto done;
            }
        tr_var lv = {0};
        lv.v = l;
        PUSHV(fr, lv);
    }
    for (int i = before - 1; i >= 0; i--) {
        PUSHV(fr, items[i]);
        items[i].v = NULL;
        items[i].it = NULL;
    }
    rc = 0;
done:
    for (int i = 0; i < n; i++)
        tr_var_clear(&items[i]);
    free(items);
    tr_var_clear(&seq);
    return rc;
}

static PyObject *build_seq(tr_frame *fr, int n, bool list)
{
    PyObject *t = list ? PyList_New(n) : PyTuple_New(n);
    if (!t)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = Py_NewRef(TOP(fr, n - i)->v);
        if (list)
            PyList_SET_ITEM(t, i, v);
        else
            PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static int push_fresh(tr_state *s, tr_frame *fr, PyObject *o)
{
    if (!o)
        return tr_break_exc(s, "an operation");
    if (tr_mark_fresh(s, o) < 0) {
        Py_DECREF(o);
        return tr_break_exc(s, "an operation");
    }
    tr_var v = {0};
    v.v = o;
    return push(s, fr, &v);
}

static int cmp_of(int arg)
{
#if ST_PY312
    return arg >> 4;
#else
    return arg;
#endif
}

static int is_import_ok(PyObject *name)
{
    PyObject *mods = PyImport_GetModuleDict();
    return PyDict_GetItemWithError(mods, name) != NULL;
}

/* SEND in a generator's frame (yield from an iterator var): the
 * receiver's next item goes to the YIELD_VALUE that follows; at its end
 * the result of the yield from (a generator's return value, else None)
 * replaces the receiver (3.11) or goes above it for END_SEND (3.12), and
 * the frame jumps to target. What is sent is always None (a resume sends
 * None). */
static int do_send(tr_state *s, tr_frame *fr, int target)
{
    if (!fr->is_genexpr || fr->sp < 2)
        return tr_break(s, "SEND outside a generator run by the translator");
    if (!TOP(fr, 2)->it)
        return tr_break(s, "SEND to a %s is not supported", tr_type_name(TOP(fr, 2)->v));
    if (TOP(fr, 1)->v != Py_None)
        return tr_break(s, "send() of a value into an iterator");
    pop_n(fr, 1);
    tr_var v;
    int got = tr_iter_next(s, TOP(fr, 1), &v);
    if (got < 0)
        return -1;
    if (got)
        return push(s, fr, &v);
    tr_iter *it = TOP(fr, 1)->it;
    if (it->ret.v || it->ret.it)
        tr_var_copy(&v, &it->ret);
    else
        v.v = Py_NewRef(Py_None);
#if ST_PY312
    if (push(s, fr, &v) < 0)
        return -1;
#else
    tr_var_clear(TOP(fr, 1));
    *TOP(fr, 1) = v;
#endif
    fr->pc = target;
    return 0;
}

/* Executes one frame until it returns (*ret) or breaks (-1). */
/* Code unit u of a generator's frame is inside a try or with block of
 * the user's: an exception table entry covers it whose handler is not
 * one the compiler adds to every generator (3.12: StopIteration turned
 * into RuntimeError) or to a yield from (3.12: CLEANUP_THROW, which
 * re-raises to what covers it). */
static bool in_user_try(tr_frame *fr, int u)
{
    for (int hops = 0; hops < 8; hops++) {
        int h = st_fe_exc_handler(fr->code, u);
        if (h < 0 || h >= fr->ncode)
            return false;
        int op = op_of[fr->bc[2 * h]];
        if (op == OP_CALL_INTRINSIC_1 && fr->bc[2 * h + 1] == intr_stopiteration_error)
            return false;
        if (op != OP_CLEANUP_THROW)
            return true;
        u = h;
    }
    return true;
}

static int run_frame(tr_state *s, tr_frame *fr, tr_var *ret)
{
    PyObject *consts = fr->code->co_consts, *names = fr->code->co_names;
    int arg = 0;
    bool ext = false;
    for (;;) {
        if (s->gen_closed && !ext)
            return tr_gen_check_closed(s);
        if (!ext && fr->depth == 0 && fr->pc == s->stop_at) {
            s->stopped = true;       /* a partial graph ends here (translator.c) */
            return -2;
        }
        if (fr->pc < 0 || fr->pc >= fr->ncode)
            return tr_break(s, "ran off the end of the bytecode");
        if (++s->steps > TR_MAX_STEPS)
            return tr_break(s, "too long: more than %d instructions", TR_MAX_STEPS);
        int start = fr->pc;
        int raw = fr->bc[2 * fr->pc];
        int oparg = fr->bc[2 * fr->pc + 1];
        fr->pc++;
        int op = op_of[raw];
        if (op == OP_EXTENDED_ARG) {
            arg = (arg | oparg) << 8;
            ext = true;
            continue;
        }
        ext = false;
        arg |= oparg;
        oparg = arg;
        arg = 0;
        fr->lasti = start;
        fr->pc += cache_of[raw];
        int next = fr->pc;
        if (s->opts->log_level >= 3)
            log_stack(s, fr, raw, oparg);
        /* after a call performed after the graph (tr_effects.c): loads,
         * more such calls and the return only */
        int fxb = TR_FXB_OK;
        if (s->fx_barrier) {
            switch (op) {
            case OP_NOP: case OP_RESUME: case OP_CACHE: case OP_PRECALL: case OP_POP_TOP:
            case OP_PUSH_NULL: case OP_KW_NAMES: case OP_LOAD_FAST: case OP_LOAD_FAST_CHECK:
            case OP_LOAD_CONST: case OP_RETURN_VALUE: case OP_RETURN_CONST: case OP_CALL:
            case OP_LOAD_GLOBAL: case OP_LOAD_DEREF:
            /* what only moves values already loaded */
            case OP_STORE_FAST: case OP_COPY: case OP_SWAP: case OP_BUILD_TUPLE:
            case OP_BUILD_LIST: case OP_BUILD_MAP: case OP_BUILD_CONST_KEY_MAP:
                break;
            case OP_LOAD_ATTR: case OP_LOAD_METHOD:
                fxb = TR_FXB_LOAD;
                break;
            default:
                return tr_fx_barrier_op(s, op_names[op], TR_FXB_OTHER, NULL);
            }
        }
        /* an unrolled iterator has no real object: it may not escape */
        int escapes = 0;
        switch (op) {
        case OP_STORE_ATTR: case OP_MAP_ADD: escapes = 2; break;
        case OP_STORE_DEREF: case OP_LIST_APPEND: case OP_SET_ADD: escapes = 1; break;
        case OP_STORE_SUBSCR: escapes = 3; break;
        case OP_BUILD_TUPLE: case OP_BUILD_LIST: case OP_BUILD_SET: escapes = oparg; break;
        case OP_BUILD_MAP: escapes = 2 * oparg; break;
        case OP_BUILD_CONST_KEY_MAP: escapes = oparg + 1; break;
        }
        for (int k = 1; k <= escapes && k <= fr->sp; k++)
            if (TOP(fr, k)->it)
                return tr_break(s, "an iterator stored in a container or attribute "
                                "(not supported)");
        switch (op) {
        case OP_NOP: case OP_RESUME: case OP_CACHE: case OP_PRECALL:
            break;
        case OP_POP_TOP:
            pop_n(fr, 1);
            break;
        case OP_END_FOR:
            pop_n(fr, 2);
            break;
        case OP_PUSH_NULL: {
            tr_var v = {0};
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_COPY: {
            tr_var v;
            tr_var_copy(&v, TOP(fr, oparg));
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_SWAP: {
            tr_var t = *TOP(fr, 1);
            *TOP(fr, 1) = *TOP(fr, oparg);
            *TOP(fr, oparg) = t;
            break;
        }
        case OP_KW_NAMES:
            fr->kwnames = PyTuple_GET_ITEM(consts, oparg);
            break;
        case OP_LOAD_CONST: {
            tr_var v = {0};
            v.v = Py_NewRef(PyTuple_GET_ITEM(consts, oparg));
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_RETURN_VALUE: case OP_RETURN_CONST: {
            if (op == OP_RETURN_VALUE) {
                *ret = pop(fr);
            } else {
                memset(ret, 0, sizeof *ret);
                ret->v = Py_NewRef(PyTuple_GET_ITEM(consts, oparg));
            }
            return 0;
        }
        case OP_RETURN_GENERATOR: {
            if (!fr->is_genexpr)
                return tr_break(s, "generators are not supported");
            tr_var v = {0};
            v.v = Py_NewRef(Py_None);   /* what the first resume sends */
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_YIELD_VALUE: {
            if (!fr->is_genexpr)
                return tr_break(s, "yield is not supported");
            if (tr_exc_yield(s, fr) < 0) return -1;
            *ret = pop(fr);
            fr->yield_in_try = in_user_try(fr, fr->lasti);
            tr_var v = {0};
            v.v = Py_NewRef(Py_None);   /* what the resume sends (always None) */
            if (push(s, fr, &v)) {
                tr_var_clear(ret);
                return -1;
            }
            return 1;                   /* suspended: resumed at the next unit */
        }
        case OP_LOAD_FAST: case OP_LOAD_FAST_CHECK: {
            tr_var *l = &fr->locals[oparg];
            if (!l->v && l->aux != TR_AUX_ITER)
                return tr_break(s, "local variable '%s' referenced before assignment",
                                PyUnicode_AsUTF8(tr_local_name(fr->code, oparg)));
            tr_var v;
            tr_var_copy(&v, l);
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_LOAD_FAST_AND_CLEAR: {
            tr_var v = fr->locals[oparg];
            memset(&fr->locals[oparg], 0, sizeof(tr_var));
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_STORE_FAST: {
            tr_var_clear(&fr->locals[oparg]);
            fr->locals[oparg] = pop(fr);
            break;
        }
        case OP_DELETE_FAST:
            tr_var_clear(&fr->locals[oparg]);
            break;
        case OP_LOAD_GLOBAL: {
            PyObject *name = PyTuple_GET_ITEM(names, oparg >> 1);
            tr_var v;
            if (oparg & 1) {
                tr_var nul = {0};
                if (push(s, fr, &nul)) return -1;
            }
            if (load_global(s, fr, name, &v) < 0) return -1;
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_STORE_GLOBAL: {
            tr_var val = pop(fr);
            int rc = tr_fx_store_global(s, fr, PyTuple_GET_ITEM(names, oparg), &val);
            tr_var_clear(&val);
            if (rc < 0) return -1;
            break;
        }
        case OP_DELETE_GLOBAL:
            return tr_break(s, "side effect: delete of global '%s' (not supported yet)",
                            PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, oparg)));
        case OP_LOAD_ATTR: case OP_LOAD_METHOD: {
            int ni = oparg, meth = (op == OP_LOAD_METHOD);
#if ST_PY312
            ni = oparg >> 1;
            meth = oparg & 1;
#endif
            tr_var obj = pop(fr), out;
            int rc = tr_getattr(s, &obj, PyTuple_GET_ITEM(names, ni), &out);
            tr_var_clear(&obj);
            if (rc < 0) return -1;
            if (meth) {
                tr_var nul = {0};
                if (push(s, fr, &nul)) { tr_var_clear(&out); return -1; }
            }
            if (push(s, fr, &out)) return -1;
            break;
        }
        case OP_LOAD_SUPER_ATTR: {
            tr_var self = pop(fr), cls = pop(fr), sup = pop(fr);
            int rc = -1;
            tr_var out = {0};
            if (sup.v != (PyObject *)&PySuper_Type) {
                tr_break(s, "super is not the builtin super");
            } else {
                tr_var sv = {0};
                sv.v = PyTuple_Pack(2, cls.v, self.v);
                sv.aux = TR_AUX_SUPER;
                if (sv.v)
                    rc = tr_getattr(s, &sv, PyTuple_GET_ITEM(names, oparg >> 2), &out);
                else
                    tr_break_exc(s, "super");
                tr_var_clear(&sv);
            }
            tr_var_clear(&self);
            tr_var_clear(&cls);
            tr_var_clear(&sup);
            if (rc < 0) return -1;
            if (oparg & 1) {
                tr_var nul = {0};
                if (push(s, fr, &nul)) { tr_var_clear(&out); return -1; }
            }
            if (push(s, fr, &out)) return -1;
            break;
        }
        case OP_STORE_ATTR: {
            tr_var obj = pop(fr), val = pop(fr);
            PyObject *name = PyTuple_GET_ITEM(names, oparg);
            int rc = 0;
            if (st_fe_is_tensor(obj.v) && !tr_is_fresh(s, obj.v))
                rc = tr_break(s, "side effect: store to tensor attribute '%s' "
                              "(not supported yet)", PyUnicode_AsUTF8(name));
            else if (!st_fe_is_tensor(obj.v) && !tr_is_fresh(s, obj.v))
                rc = tr_fx_store_attr(s, &obj, name, &val);
            else if ((tr_fresh_user_obj(s, obj.v) || tr_is_symtrace_module(obj.v)) &&
                     tr_py_dunder(obj.v, "__setattr__")) {
                /* a user object or Module made in the frame (a loss built
                 * in forward): its __setattr__, inlined */
                tr_var a[2] = {{0}}, r;
                a[0].v = Py_NewRef(name);
                tr_var_copy(&a[1], &val);
                rc = tr_call_dunder(s, tr_py_dunder(obj.v, "__setattr__"), &obj, a, 2, &r);
                tr_var_clear(&a[0]);
                tr_var_clear(&a[1]);
                if (rc == 0)
                    tr_var_clear(&r);
            } else if (!st_fe_is_tensor(obj.v) && !tr_safe_type(obj.v) &&
                     Py_TYPE(obj.v)->tp_setattro != PyObject_GenericSetAttr)
                rc = tr_break(s, "attribute store on a %s with __setattr__",
                              tr_type_name(obj.v));
            else if (PyObject_SetAttr(obj.v, name, val.v) < 0)
                rc = tr_break_exc(s, "attribute store");
            tr_var_clear(&obj);
            tr_var_clear(&val);
            if (rc < 0) return -1;
            break;
        }
        case OP_DELETE_ATTR:
            return tr_break(s, "side effect: attribute delete (not supported yet)");
        case OP_MAKE_CELL: {
            tr_var *l = &fr->locals[oparg];
            PyObject *cell = PyCell_New(l->v);
            if (!cell || tr_mark_fresh(s, cell) < 0) {
                Py_XDECREF(cell);
                return tr_break_exc(s, "MAKE_CELL");
            }
            Py_XSETREF(l->v, cell);   /* l->src now names the contents */
            break;
        }
        case OP_COPY_FREE_VARS: {
            PyObject *clo = fr->func ? PyFunction_GetClosure(fr->func) : s->f->closure;
            if (!clo || PyTuple_GET_SIZE(clo) < oparg)
                return tr_break(s, "COPY_FREE_VARS without a closure");
            int off = fr->code->co_nlocalsplus - oparg;
            for (int i = 0; i < oparg; i++) {
                tr_var *l = &fr->locals[off + i];
                tr_var_clear(l);
                l->v = Py_NewRef(PyTuple_GET_ITEM(clo, i));
                PyObject *key = tr_id_key(l->v);
                if (!key) return tr_break_exc(s, "COPY_FREE_VARS");
                if (!fr->parent && fr->func == s->f->func) {
                    l->src = st_fe_src_closure(&s->srcs, i, tr_local_name(fr->code, off + i));
                    PyObject *e = l->src ? Py_BuildValue("(Oi)", l->v, l->src->id) : NULL;
                    if (!e || PyDict_SetItem(s->cellmap, key, e) < 0) {
                        Py_XDECREF(e);
                        Py_DECREF(key);
                        return tr_break_exc(s, "source");
                    }
                    Py_DECREF(e);
                } else {
                    PyObject *e = PyDict_GetItem(s->cellmap, key);
                    st_fe_src *fs = fr->func && !tr_is_fresh(s, fr->func)
                                    ? tr_lookup_src(s, fr->func) : NULL;
                    if (e) {
                        l->src = s->srcs.v[PyLong_AsLong(PyTuple_GET_ITEM(e, 1))];
                    } else if (fs) {
                        /* fn.__closure__[i].cell_contents */
                        PyObject *cn = PyUnicode_FromString("__closure__");
                        PyObject *cc = PyUnicode_FromString("cell_contents");
                        PyObject *ik = PyLong_FromLong(i);
                        st_fe_src *a = cn ? st_fe_src_attr(&s->srcs, fs, cn) : NULL;
                        st_fe_src *it = a && ik ? st_fe_src_item(&s->srcs, a, ik) : NULL;
                        l->src = it && cc ? st_fe_src_attr(&s->srcs, it, cc) : NULL;
                        Py_XDECREF(cn);
                        Py_XDECREF(cc);
                        Py_XDECREF(ik);
                        if (!l->src) {
                            Py_DECREF(key);
                            return tr_break_exc(s, "source");
                        }
                    }
                }
                Py_DECREF(key);
            }
            break;
        }
        case OP_LOAD_CLOSURE: {
            tr_var v = {0};
            v.v = Py_XNewRef(fr->locals[oparg].v);
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_LOAD_DEREF: {
            tr_var *l = &fr->locals[oparg];
            PyObject *c = l->v && PyCell_Check(l->v) ? PyCell_GET(l->v) : NULL;
            if (!c)
                return tr_break(s, "free variable '%s' referenced before assignment",
                                PyUnicode_AsUTF8(tr_local_name(fr->code, oparg)));
            tr_var v;
            if (l->src && !tr_is_fresh(s, l->v)) {
                if (tr_make_sourced(s, &v, Py_NewRef(c), l->src) < 0) return -1;
            } else if (l->src) {
                /* a fresh cell made from an argument: contents unchanged? */
                tr_make_value(s, &v, Py_NewRef(c));
            } else {
                tr_make_value(s, &v, Py_NewRef(c));
            }
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_STORE_DEREF: {
            tr_var *l = &fr->locals[oparg];
            tr_var val = pop(fr);
            if (!l->v || !PyCell_Check(l->v) || !tr_is_fresh(s, l->v)) {
                tr_var_clear(&val);
                return tr_break(s, "side effect: store to a closure variable "
                                "of an outer function (not supported yet)");
            }
            PyCell_Set(l->v, val.v);
            l->src = NULL;
            PyObject *key = tr_id_key(l->v);
            if (key && PyDict_GetItem(s->cellmap, key))
                PyDict_DelItem(s->cellmap, key);
            Py_XDECREF(key);
            tr_var_clear(&val);
            break;
        }
        case OP_DELETE_DEREF:
            return tr_break(s, "unsupported instruction DELETE_DEREF");
        case OP_BUILD_TUPLE: case OP_BUILD_LIST: {
            PyObject *t = build_seq(fr, oparg, op == OP_BUILD_LIST);
            pop_n(fr, t ? oparg : 0);
            if (op == OP_BUILD_LIST) {
                if (push_fresh(s, fr, t)) return -1;
            } else if (push_value(s, fr, t)) return -1;
            break;
        }
        case OP_BUILD_SET: {
            PyObject *st = PySet_New(NULL);
            for (int i = 0; st && i < oparg; i++)
                if (PySet_Add(st, TOP(fr, oparg - i)->v) < 0)
                    Py_CLEAR(st);
            pop_n(fr, oparg);
            if (push_fresh(s, fr, st)) return -1;
            break;
        }
        case OP_BUILD_MAP: {
            PyObject *d = PyDict_New();
            for (int i = 0; d && i < oparg; i++)
                if (PyDict_SetItem(d, TOP(fr, 2 * (oparg - i))->v,
                                   TOP(fr, 2 * (oparg - i) - 1)->v) < 0)
                    Py_CLEAR(d);
            pop_n(fr, 2 * oparg);
            if (push_fresh(s, fr, d)) return -1;
            break;
        }
        case OP_BUILD_CONST_KEY_MAP: {
            PyObject *keys = TOP(fr, 1)->v;
            PyObject *d = PyDict_New();
            for (int i = 0; d && i < oparg; i++)
                if (PyDict_SetItem(d, PyTuple_GET_ITEM(keys, i),
                                   TOP(fr, oparg + 1 - i)->v) < 0)
                    Py_CLEAR(d);
            pop_n(fr, oparg + 1);
            if (push_fresh(s, fr, d)) return -1;
            break;
        }
        case OP_BUILD_STRING: {
            PyObject *t = build_seq(fr, oparg, false), *r = NULL;
            if (t) {
                PyObject *empty = PyUnicode_New(0, 0);
                if (empty)
                    r = PyUnicode_Join(empty, t);
                Py_XDECREF(empty);
                Py_DECREF(t);
            }
            pop_n(fr, oparg);
            if (push_value(s, fr, r)) return -1;
            break;
        }
        case OP_BUILD_SLICE: {
            PyObject *r = oparg == 3 ?
                PySlice_New(TOP(fr, 3)->v, TOP(fr, 2)->v, TOP(fr, 1)->v) :
                PySlice_New(TOP(fr, 2)->v, TOP(fr, 1)->v, NULL);
            pop_n(fr, oparg);
            if (push_value(s, fr, r)) return -1;
            break;
        }
        case OP_FORMAT_VALUE: {
            int have_spec = (oparg & 4) != 0;
            tr_var spec = {0};
            if (have_spec)
                spec = pop(fr);
            tr_var v = pop(fr);
            PyObject *x = NULL, *r = NULL;
            int rc = check_operands(s, &v, NULL, "formatting");
            if (rc == 0) {
                int conv = oparg & 3;
                x = conv == 1 ? PyObject_Str(v.v) : conv == 2 ? PyObject_Repr(v.v) :
                    conv == 3 ? PyObject_ASCII(v.v) : Py_NewRef(v.v);
                if (x)
                    r = PyObject_Format(x, spec.v);
                Py_XDECREF(x);
                rc = push_value(s, fr, r);
            }
            tr_var_clear(&v);
            tr_var_clear(&spec);
            if (rc < 0) return -1;
            break;
        }
        case OP_LIST_APPEND: case OP_SET_ADD: {
            PyObject *c = TOP(fr, oparg + 1)->v;
            tr_var v = pop(fr);
            int r = op == OP_LIST_APPEND ? PyList_Append(c, v.v) : PySet_Add(c, v.v);
            tr_var_clear(&v);
            if (r < 0) return tr_break_exc(s, "append");
            break;
        }
        case OP_MAP_ADD: {
            tr_var val = pop(fr), key = pop(fr);
            int r = PyDict_SetItem(TOP(fr, oparg)->v, key.v, val.v);
            tr_var_clear(&val);
            tr_var_clear(&key);
            if (r < 0) return tr_break_exc(s, "MAP_ADD");
            break;
        }
        case OP_LIST_EXTEND: case OP_SET_UPDATE: {
            tr_var it = pop(fr);
            tr_var *items = NULL;
            int n = 0, r = 0;
            PyObject *c = TOP(fr, oparg)->v;
            if (tr_unroll(s, &it, &items, &n) < 0)
                r = -1;
            for (int i = 0; r == 0 && i < n; i++)
                if ((op == OP_LIST_EXTEND ? PyList_Append(c, items[i].v)
                                          : PySet_Add(c, items[i].v)) < 0)
                    r = tr_break_exc(s, "extend");
            for (int i = 0; i < n; i++)
                tr_var_clear(&items[i]);
            free(items);
            tr_var_clear(&it);
            if (r < 0) return -1;
            break;
        }
        case OP_DICT_UPDATE: case OP_DICT_MERGE: {
            tr_var d = pop(fr);
            int r = 0;
            if (!PyDict_Check(d.v))
                r = tr_break(s, "** of a %s", tr_type_name(d.v));
            else if (PyDict_Update(TOP(fr, oparg)->v, d.v) < 0)
                r = tr_break_exc(s, "dict update");
            tr_var_clear(&d);
            if (r < 0) return -1;
            break;
        }
        case OP_LIST_TO_TUPLE: {
            tr_var l = pop(fr);
            PyObject *t = PyList_AsTuple(l.v);
            tr_var_clear(&l);
            if (push_value(s, fr, t)) return -1;
            break;
        }
        case OP_CALL_INTRINSIC_1: {
            tr_var v = pop(fr);
            PyObject *r = NULL;
            int rc = 0;
            if (oparg == intr_list_to_tuple && v.v && PyList_Check(v.v))
                r = PyList_AsTuple(v.v);
            else if (oparg == intr_unary_positive && !(rc = check_operands(s, &v, NULL, "unary +")))
                r = PyNumber_Positive(v.v);
            else if (!rc)
                rc = tr_break(s, "unsupported intrinsic %d", oparg);
            tr_var_clear(&v);
            if (rc < 0 || push_value(s, fr, r)) return -1;
            break;
        }
        case OP_UNPACK_SEQUENCE:
            if (unpack(s, fr, oparg, 0, false) < 0) return -1;
            break;
        case OP_UNPACK_EX:
            if (unpack(s, fr, oparg & 0xff, oparg >> 8, true) < 0) return -1;
            break;
        case OP_UNARY_NEGATIVE: case OP_UNARY_INVERT: case OP_UNARY_POSITIVE: {
            tr_var v = pop(fr);
            PyObject *r = NULL;
            int rc = check_operands(s, &v, NULL, "a unary operator");
            if (!rc)
                r = op == OP_UNARY_NEGATIVE ? PyNumber_Negative(v.v) :
                    op == OP_UNARY_INVERT ? PyNumber_Invert(v.v) : PyNumber_Positive(v.v);
            tr_var_clear(&v);
            if (rc < 0 || push_value(s, fr, r)) return -1;
            break;
        }
        case OP_UNARY_NOT: {
            tr_var v = pop(fr);
            int t = 0, rc = truth(s, &v, &t);
            tr_var_clear(&v);
            if (rc < 0 || push_value(s, fr, PyBool_FromLong(!t))) return -1;
            break;
        }
        case OP_BINARY_OP: {
            tr_var b = pop(fr), a = pop(fr);
            int k = oparg < n_nb ? nb_of[oparg] : -1, rc = 0;
            PyObject *r = NULL;
            bool inplace = k >= 100;
            PyObject *dn = k >= 0 ? user_binop(&a, &b, k) : NULL;
            if (dn) {
                tr_var r;
                rc = tr_call_dunder(s, dn, &a, &b, 1, &r);
                if (!rc && r.v == Py_NotImplemented) {
                    tr_var_clear(&r);
                    rc = tr_break(s, "%s of %s and %s returned NotImplemented",
                                  nb_dunder[k % 100], tr_type_name(a.v), tr_type_name(b.v));
                }
                tr_var_clear(&a);
                tr_var_clear(&b);
                if (rc < 0 || push(s, fr, &r)) return -1;
                break;
            }
            if (k < 0)
                rc = tr_break(s, "unknown binary op %d", oparg);
            else if ((rc = tr_dyn_size_operand(s, k % 100, &a, &b)) >= 0)
                rc = check_operands(s, &a, &b, "a binary operator");
            if (!rc && k % 100 == 6 && PyUnicode_Check(a.v) &&
                (st_fe_is_tensor(b.v) || (PyTuple_Check(b.v) && tr_has_tensor(b.v)) ||
                 (PyDict_Check(b.v) && PyDict_Size(b.v) > 0)))
                rc = tr_break(s, "formatting a tensor reads its data ('%%' on a str)");
            if (!rc && inplace && is_mutable_container(a.v))
                rc = tr_fx_redirect(s, &a, "in-place operator");
            if (!rc)
                r = binop(k % 100, a.v, b.v, inplace);
            if (!rc) {
                if (!r)
                    rc = tr_break_exc(s, "a binary operator");
                else if (st_rt_trace_failed(NULL)) {
                    const char *why = NULL;
                    st_rt_trace_failed(&why);
                    Py_DECREF(r);
                    rc = tr_break(s, "%s", why ? why : "trace failed");
                } else if (r == a.v) {
                    tr_var o;
                    tr_var_copy(&o, &a);
                    Py_DECREF(r);
                    rc = push(s, fr, &o);
                } else
                    rc = push_value(s, fr, r);
            }
            tr_var_clear(&a);
            tr_var_clear(&b);
            if (rc < 0) return -1;
            break;
        }
        case OP_COMPARE_OP: {
            tr_var b = pop(fr), a = pop(fr);
            int cop = cmp_of(oparg);
            if ((cop == Py_EQ || cop == Py_NE) &&
                (fresh_identity_cmp(s, &a, &b) || fresh_identity_cmp(s, &b, &a))) {
                int r = (a.v == b.v) ^ (cop == Py_NE);
                tr_var_clear(&a);
                tr_var_clear(&b);
                if (push_value(s, fr, PyBool_FromLong(r))) return -1;
                break;
            }
            int rc = tr_dyn_size_operand(s, -1, &a, &b);
            if (rc >= 0)
                rc = check_operands(s, &a, &b, "a comparison");
            PyObject *r = NULL;
            if (!rc)
                r = PyObject_RichCompare(a.v, b.v, cmp_of(oparg));
            tr_var_clear(&a);
            tr_var_clear(&b);
            if (rc < 0 || push_value(s, fr, r)) return -1;
            break;
        }
        case OP_IS_OP: {
            tr_var b = pop(fr), a = pop(fr);
            int r = (a.v == b.v) ^ (oparg & 1);
            if (guard_identity(s, &a, b.v) < 0 || guard_identity(s, &b, a.v) < 0) {
                tr_var_clear(&a);
                tr_var_clear(&b);
                return -1;
            }
            tr_var_clear(&a);
            tr_var_clear(&b);
            if (push_value(s, fr, PyBool_FromLong(r))) return -1;
            break;
        }
        case OP_CONTAINS_OP: {
            tr_var b = pop(fr), a = pop(fr);
            PyObject *cn = b.v && !b.it && b.aux == TR_AUX_NONE && !st_fe_is_tensor(b.v) &&
                           !PyType_Check(b.v) && !tr_safe_type(b.v)
                               ? tr_py_dunder(b.v, "__contains__") : NULL;
            if (cn) {
                /* a class's Python __contains__ (ModuleDict, enum.Flag): inlined */
                tr_var r;
                int t = 0, rc = tr_call_dunder(s, cn, &b, &a, 1, &r);
                if (!rc) {
                    rc = truth(s, &r, &t);
                    tr_var_clear(&r);
                }
                tr_var_clear(&a);
                tr_var_clear(&b);
                if (rc < 0 || push_value(s, fr, PyBool_FromLong(t ^ (oparg & 1)))) return -1;
                break;
            }
            int rc = check_operands(s, &b, NULL, "'in'"), r = 0;
            if (!rc && st_fe_is_tensor(b.v))
                rc = tr_break(s, "'in' on a tensor (data-dependent)");
            if (!rc && !tr_safe_type(a.v) && !PyDict_Check(b.v) && !PyAnySet_Check(b.v) &&
                !fresh_identity_in(s, &a, b.v))
                rc = tr_break(s, "'in' with a %s (its __eq__ may run)", tr_type_name(a.v));
            /* membership by identity (a tensor key) in a dict or set from
             * outside: the answer would be a constant no guard re-checks */
            if (!rc && (PyDict_Check(b.v) || PyAnySet_Check(b.v)) && !tr_const_key(a.v) &&
                !tr_is_fresh(s, b.v))
                rc = tr_break(s, "'in' of a %s key in a %s from outside", tr_type_name(a.v),
                              tr_type_name(b.v));
            if (!rc) {
                r = PySequence_Contains(b.v, a.v);
                const char *why = NULL;
                if (r < 0)
                    rc = tr_break_exc(s, "'in'");
                else if (st_rt_trace_failed(&why))
                    rc = tr_break(s, "%s", why ? why : "trace failed");
            }
            tr_var_clear(&a);
            tr_var_clear(&b);
            if (rc < 0 || push_value(s, fr, PyBool_FromLong(r ^ (oparg & 1)))) return -1;
            break;
        }
        case OP_BINARY_SUBSCR: {
            if (tr_exc_subscr(s, fr) < 0) return -1;   /* an IndexError a handler catches */
            tr_var k = pop(fr), o = pop(fr), out;
            int rc = tr_subscr(s, &o, &k, &out);
            tr_var_clear(&k);
            tr_var_clear(&o);
            if (rc < 0 || push(s, fr, &out)) return -1;
            break;
        }
        case OP_BINARY_SLICE: {
            tr_var e = pop(fr), b = pop(fr), o = pop(fr), out;
            tr_var k = {0};
            k.v = PySlice_New(b.v, e.v, NULL);
            int rc = k.v ? tr_subscr(s, &o, &k, &out) : tr_break_exc(s, "slice");
            tr_var_clear(&k);
            tr_var_clear(&e);
            tr_var_clear(&b);
            tr_var_clear(&o);
            if (rc < 0 || push(s, fr, &out)) return -1;
            break;
        }
        case OP_STORE_SUBSCR: case OP_STORE_SLICE: case OP_DELETE_SUBSCR: {
            tr_var k, o, v = {0};
            if (op == OP_STORE_SLICE) {
                tr_var e = pop(fr), b = pop(fr);
                memset(&k, 0, sizeof k);
                k.v = PySlice_New(b.v, e.v, NULL);
                tr_var_clear(&e);
                tr_var_clear(&b);
                o = pop(fr);
            } else {
                k = pop(fr);
                o = pop(fr);
            }
            if (op != OP_DELETE_SUBSCR)
                v = pop(fr);
            int rc = k.v ? tr_fx_redirect(s, &o, "item store") : tr_break_exc(s, "slice");
            PyObject *dunder = !rc && op != OP_STORE_SLICE && tr_fresh_user_obj(s, o.v)
                ? tr_py_dunder(o.v, op == OP_STORE_SUBSCR ? "__setitem__" : "__delitem__") : NULL;
            if (dunder) {
                /* a user object made in the frame: its Python __setitem__ */
                tr_var a[2] = {{0}}, r;
                tr_var_copy(&a[0], &k);
                tr_var_copy(&a[1], &v);
                rc = tr_call_dunder(s, dunder, &o, a, op == OP_STORE_SUBSCR ? 2 : 1, &r);
                tr_var_clear(&a[0]);
                tr_var_clear(&a[1]);
                if (rc == 0)
                    tr_var_clear(&r);
                tr_var_clear(&k);
                tr_var_clear(&o);
                tr_var_clear(&v);
                if (rc < 0) return -1;
                break;
            }
            if (!rc && !st_fe_is_tensor(o.v) && !tr_safe_type(o.v) &&
                !(PyDict_Check(o.v) && tr_fresh_user_obj(s, o.v)))
                rc = tr_break(s, "item store on a %s", tr_type_name(o.v));
            /* a fill through one mask (x[x < 0] = 0) is a where(): traced */
            if (!rc && st_fe_is_tensor(o.v) && tr_key_reads_values(s, k.v) &&
                !(op == OP_STORE_SUBSCR && !tr_dyn_shapes(s) && st_fe_setitem_is_fill(k.v, v.v)))
                rc = tr_break(s, "data-dependent: indexing with a bool mask, a 0-d "
                              "tensor or tensors in a list reads their values");
            /* number arguments and sizes in the key, as tr_subscr's: a lazy
             * one guarded; under dynamic shapes the slice bounds become
             * expressions, with guards on Python's clamping (a write through
             * an empty slice records nothing, and would hold at every size) */
            tr_dynsub ds = {0};
            if (!rc && s->lazies && tr_lazy_plain_var(s, &k) < 0)
                rc = -1;
            if (!rc && !tr_dyn_shapes(s) && tr_dyn_plain_var(s, &k) < 0)
                rc = -1;
            /* the value stored into a tensor (t[:3] = m) is read by C as the
             * number it stands for: a lazy argument or a SymInt is guarded
             * by value (it was baked in, unguarded: a later m wrote the first) */
            if (!rc && v.v && st_fe_is_tensor(o.v) && s->lazies && tr_lazy_plain_var(s, &v) < 0)
                rc = -1;
            if (!rc && v.v && st_fe_is_tensor(o.v) && tr_is_symint(v.v) && tr_dyn_plain_var(s, &v) < 0)
                rc = -1;
            if (!rc && s->dyn && st_fe_is_tensor(o.v) && tr_dyn_before_subscr(s, o.v, k.v, &ds) < 0)
                rc = -1;
            if (!rc && (op == OP_DELETE_SUBSCR ? PyObject_DelItem(o.v, k.v)
                                               : PyObject_SetItem(o.v, k.v, v.v)) < 0)
                rc = tr_break_exc(s, "item store");
            if (!rc && s->dyn && st_fe_is_tensor(o.v) && tr_dyn_after_subscr(s, &ds, NULL) < 0)
                rc = -1;
            if (!rc && st_rt_trace_failed(NULL)) {
                const char *why = NULL;
                st_rt_trace_failed(&why);
                rc = tr_break(s, "%s", why ? why : "trace failed");
            }
            tr_var_clear(&k);
            tr_var_clear(&o);
            tr_var_clear(&v);
            if (rc < 0) return -1;
            break;
        }
        case OP_GET_ITER: {
            tr_var o = pop(fr), out;
            int rc = tr_iter_of(s, &o, &out);
            tr_var_clear(&o);
            if (rc < 0 || push(s, fr, &out)) return -1;
            break;
        }
        case OP_FOR_ITER: {
            tr_var *itv = TOP(fr, 1);
            tr_var v;
            if (!itv->it)
                return tr_break(s, "FOR_ITER over a %s", tr_type_name(itv->v));
            int got = tr_iter_next(s, itv, &v);
            if (got < 0) return -1;
            if (got) {
                if (push(s, fr, &v)) return -1;
            } else {
#if ST_PY312
                tr_var dummy = {0};
                if (push(s, fr, &dummy)) return -1;
                fr->pc = next + oparg;   /* the END_FOR pops both */
#else
                pop_n(fr, 1);
                fr->pc = next + oparg;
#endif
            }
            break;
        }
        case OP_GET_YIELD_FROM_ITER: {
            /* yield from x (in a generator's frame) */
            tr_var o = pop(fr), out;
            int rc = fr->is_genexpr ? tr_iter_of(s, &o, &out)
                                    : tr_break(s, "yield from is not supported");
            tr_var_clear(&o);
            if (rc < 0 || push(s, fr, &out)) return -1;
            break;
        }
        case OP_SEND:
            if (do_send(s, fr, next + oparg) < 0) return -1;
            break;
        case OP_END_SEND: {
            tr_var v = pop(fr);
            pop_n(fr, 1);               /* the receiver */
            if (push(s, fr, &v)) return -1;
            break;
        }
        case OP_JUMP_FORWARD:
            fr->pc = next + oparg;
            break;
        case OP_JUMP_BACKWARD: case OP_JUMP_BACKWARD_NO_INTERRUPT:
            fr->pc = next - oparg;
            break;
        case OP_POP_JUMP_IF_FALSE: case OP_POP_JUMP_IF_TRUE:
        case OP_POP_JUMP_FORWARD_IF_FALSE: case OP_POP_JUMP_FORWARD_IF_TRUE:
        case OP_POP_JUMP_BACKWARD_IF_FALSE: case OP_POP_JUMP_BACKWARD_IF_TRUE: {
            tr_var v = pop(fr);
            int t = 0, rc = truth(s, &v, &t);
            tr_var_clear(&v);
            if (rc < 0) return -1;
            bool want = op == OP_POP_JUMP_IF_TRUE || op == OP_POP_JUMP_FORWARD_IF_TRUE ||
                        op == OP_POP_JUMP_BACKWARD_IF_TRUE;
            bool back = op == OP_POP_JUMP_BACKWARD_IF_FALSE || op == OP_POP_JUMP_BACKWARD_IF_TRUE;
            if ((t != 0) == want)
                fr->pc = back ? next - oparg : next + oparg;
            break;
        }
        case OP_POP_JUMP_IF_NONE: case OP_POP_JUMP_IF_NOT_NONE:
        case OP_POP_JUMP_FORWARD_IF_NONE: case OP_POP_JUMP_FORWARD_IF_NOT_NONE:
        case OP_POP_JUMP_BACKWARD_IF_NONE: case OP_POP_JUMP_BACKWARD_IF_NOT_NONE: {
            tr_var v = pop(fr);
            bool isnone = v.v == Py_None;
            int gr = guard_identity(s, &v, Py_None);
            tr_var_clear(&v);
            if (gr < 0)
                return -1;
            bool want = op == OP_POP_JUMP_IF_NONE || op == OP_POP_JUMP_FORWARD_IF_NONE ||
                        op == OP_POP_JUMP_BACKWARD_IF_NONE;
            bool back = op == OP_POP_JUMP_BACKWARD_IF_NONE || op == OP_POP_JUMP_BACKWARD_IF_NOT_NONE;
            if (isnone == want)
                fr->pc = back ? next - oparg : next + oparg;
            break;
        }
        case OP_JUMP_IF_FALSE_OR_POP: case OP_JUMP_IF_TRUE_OR_POP: {
            int t = 0;
            if (truth(s, TOP(fr, 1), &t) < 0) return -1;
            if ((t != 0) == (op == OP_JUMP_IF_TRUE_OR_POP))
                fr->pc = next + oparg;
            else
                pop_n(fr, 1);
            break;
        }
        case OP_CALL: {
            PyObject *kw = fr->kwnames;
            fr->kwnames = NULL;
            int xr = tr_exc_call(s, fr, oparg, kw);   /* exception classes (tr_except.c) */
            if (xr < 0) return -1;
            if (xr == 0 && do_call(s, fr, oparg, kw) < 0) return -1;
            break;
        }
        case OP_CALL_FUNCTION_EX:
            if (do_call_ex(s, fr, oparg & 1) < 0) return -1;
            break;
        case OP_MAKE_FUNCTION:
            if (do_make_function(s, fr, oparg) < 0) return -1;
            break;
        case OP_BEFORE_WITH: {
            tr_var m = pop(fr);
            if (tr_is_nullcontext(m.v) && !m.it && m.aux == TR_AUX_NONE) {
                /* its __exit__ (Python, inlined when called) and enter_result */
                PyObject *ex = PyObject_GetAttrString(m.v, "__exit__");
                PyObject *nm = PyUnicode_InternFromString("enter_result");
                tr_var en;
                int rc = ex && nm ? tr_getattr(s, &m, nm, &en) : tr_break_exc(s, "with");
                Py_XDECREF(nm);
                tr_var_clear(&m);
                if (rc < 0) {
                    Py_XDECREF(ex);
                    return -1;
                }
                if (push_value(s, fr, ex) || push(s, fr, &en)) return -1;
                break;
            }
            if (!tr_is_mode_ctx(m.v)) {
                int rc = tr_break(s, "with on a %s is not supported", tr_type_name(m.v));
                tr_var_clear(&m);
                return rc;
            }
            PyObject *ex = PyObject_GetAttrString(m.v, "__exit__");
            PyObject *en = ex ? PyObject_CallMethod(m.v, "__enter__", NULL) : NULL;
            tr_var_clear(&m);
            if (!en) {
                Py_XDECREF(ex);
                return tr_break_exc(s, "with");
            }
            if (push_value(s, fr, ex) || push_value(s, fr, en)) return -1;
            break;
        }
        case OP_IMPORT_NAME: {
            PyObject *name = PyTuple_GET_ITEM(names, oparg);
            tr_var fl = pop(fr), lvl = pop(fr);
            int ok = lvl.v && PyLong_Check(lvl.v) && PyLong_AsLong(lvl.v) == 0 &&
                     is_import_ok(name);
            PyObject *r = NULL;
            if (ok)
                r = PyImport_ImportModuleLevelObject(name, fr->globals, NULL, fl.v, 0);
            tr_var_clear(&fl);
            tr_var_clear(&lvl);
            if (!ok)
                return tr_break(s, "import of '%s' (not already imported)",
                                PyUnicode_AsUTF8(name));
            if (push_value(s, fr, r)) return -1;
            break;
        }
        case OP_IMPORT_FROM: {
            tr_var out;
            if (tr_getattr(s, TOP(fr, 1), PyTuple_GET_ITEM(names, oparg), &out) < 0)
                return -1;
            if (push(s, fr, &out)) return -1;
            break;
        }
        case OP_GET_LEN: {
            Py_ssize_t n = PyObject_Length(TOP(fr, 1)->v);
            if (n < 0) return tr_break_exc(s, "len");
            if (push_value(s, fr, PyLong_FromSsize_t(n))) return -1;
            break;
        }
        case OP_MATCH_CLASS: {
            tr_var kw = pop(fr), cls = pop(fr), subj = pop(fr);
            PyObject *r = NULL;
            int rc = match_class(s, &subj, &cls, kw.v, oparg, &r);
            tr_var_clear(&kw);
            tr_var_clear(&cls);
            tr_var_clear(&subj);
            if (rc < 0 || push_value(s, fr, r)) return -1;
            break;
        }
        case OP_MATCH_KEYS: {
            PyObject *r = NULL;
            if (match_keys(s, TOP(fr, 2), TOP(fr, 1)->v, &r) < 0 || push_value(s, fr, r))
                return -1;
            break;
        }
        case OP_MATCH_SEQUENCE: case OP_MATCH_MAPPING: {
            /* `case (a, b):` / `case {...}:` asks the subject's type */
            tr_var *v = TOP(fr, 1);
            if (guard_subject_type(s, v) < 0)
                return -1;
            unsigned long fl = op == OP_MATCH_SEQUENCE ? Py_TPFLAGS_SEQUENCE : Py_TPFLAGS_MAPPING;
            if (push_value(s, fr, PyBool_FromLong(!!(Py_TYPE(v->v)->tp_flags & fl)))) return -1;
            break;
        }
        case OP_LOAD_ASSERTION_ERROR: {
            tr_var v;
            if (tr_exc_assertion(s, fr, &v) < 0 || push(s, fr, &v)) return -1;
            break;
        }
        case OP_RAISE_VARARGS:
            return tr_exc_raise(s, fr, oparg);
        case OP_RERAISE:
            return tr_exc_reraise(s, fr);
        case OP_PUSH_EXC_INFO:
            if (tr_exc_push_info(s, fr) < 0) return -1;
            break;
        case OP_POP_EXCEPT:
            if (tr_exc_pop_except(s, fr) < 0) return -1;
            break;
        case OP_CHECK_EXC_MATCH:
            if (tr_exc_match(s, fr) < 0) return -1;
            break;
        case OP_WITH_EXCEPT_START:
            if (tr_exc_with_start(s, fr) < 0) return -1;
            break;
        case OP_LOAD_BUILD_CLASS:
            return tr_break(s, "class definition inside a compiled function is not supported");
        default: {
            PyObject *nm = PySequence_GetItem(real_opname, raw);
            tr_break(s, "unsupported instruction %s", nm ? PyUnicode_AsUTF8(nm) : "?");
            Py_XDECREF(nm);
            return -1;
        }
        }
        if (fxb == TR_FXB_LOAD &&
            tr_fx_barrier_op(s, op_names[op], fxb, fr->sp > 0 ? TOP(fr, 1) : NULL) < 0)
            return -1;
    }
}

bool tr_next_is_pop(const tr_frame *fr)
{
    return fr && fr->pc >= 0 && fr->pc < fr->ncode && op_of[fr->bc[2 * fr->pc]] == OP_POP_TOP;
}

/* Runs fr (run_frame); an exception raised in it, or unwound into it from
 * a call, goes on at the handler that covers it (tr_except.c). */
int tr_run_frame(tr_state *s, tr_frame *fr, tr_var *ret)
{
    for (;;) {
        int rc = run_frame(s, fr, ret);
        if (rc != -1 || tr_exc_unwind(s, fr) <= 0)
            return rc;
    }
}
