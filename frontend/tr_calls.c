/* frontend/tr_calls.c - what the translator does for a call: inline
 * (user code, symtrace.nn modules), a real call (symtrace API, Tensor
 * methods, pure builtins), a builtin it models (getattr, iter, zip,
 * enumerate, map, min/max/sorted with key=, super), or a graph break. */
#include "tr_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- calls ---------------- */
int tr_check_trace(tr_state *s)
{
    const char *why = NULL;
    if (st_rt_trace_failed(&why))
        return tr_break(s, "%s", why ? why : "trace failed");
    return 0;
}

/* A real call runs on real values while the trace records its ops; a
 * tensor it reads that the trace has not seen becomes a graph input. One
 * the call was given has a source (guarded, read again on every call);
 * one it found on its own (a parameter's .grad, a tensor an object holds)
 * has none, and the graph would keep this call's tensor as a constant:
 * stale on the next call, and in-place writes would miss the new one.
 * Such a call breaks the graph and runs as Python. Tensors the frame made
 * itself (fresh: st.tensor(data)) stay constants of the graph. */
static int unsourced_reads(tr_state *s, PyObject *fn, int nin0)
{
    int nin = 0;
    st_tensor *const *ins = st_rt_trace_inputs(&nin);
    for (int k = nin0; k < nin; k++) {
        if (st_rt_trace_is_constant(ins[k]))   /* made from shapes (indexing.c) */
            continue;
        PyObject *key = tr_id_key(ins[k]);
        if (!key)
            return tr_break_exc(s, "source");
        /* made in this frame (st.tensor(...), a real call's result made
         * outside the trace): a constant of the frame, captured as before */
        int has = PyDict_Contains(s->srcmap, key);
        if (has == 0)
            has = PyDict_Contains(s->fresh, key);
        Py_DECREF(key);
        if (has < 0)
            return tr_break_exc(s, "source");
        if (!has) {
            char buf[200];
            return tr_break(s, "call to %s reads a tensor it was not passed (input %d of the "
                            "graph has no source to guard and read again)",
                            tr_qualname(fn, buf, sizeof buf), k);
        }
    }
    return 0;
}

/* A real call on real values; the result keeps an argument's var when it
 * is that argument (in-place methods return self). */
static int real_call(tr_state *s, PyObject *fn, tr_var *args, int nargs,
                     PyObject *kwnames, tr_var *out)
{
    char buf[200];
    PyObject *small[16], **vals = small;
    if (nargs > 16) {
        vals = malloc(sizeof(PyObject *) * (size_t)nargs);
        if (!vals)
            return tr_break(s, "out of memory");
    }
    int rc = 0;
    for (int i = 0; i < nargs; i++) {
        /* an iterator (a generator: model.parameters()) is consumed by the
         * call, which a break after it (unsourced_reads) could not undo */
        if (args[i].aux == TR_AUX_ITER || args[i].aux == TR_AUX_SUPER ||
            (args[i].v && PyIter_Check(args[i].v) && !st_fe_is_tensor(args[i].v))) {
            rc = tr_break(s, "an iterator passed to %s", tr_qualname(fn, buf, sizeof buf));
            break;
        }
        vals[i] = args[i].v;
    }
    PyObject *r = NULL;
    tr_dyncall dc = {0};
    if (!rc && s->dyn) {
        /* symbolic and lazy numbers passed on are guarded, except, with
         * dynamic shapes, shape arguments of view/reshape/expand and
         * creation functions */
        rc = tr_dyn_before_call(s, fn, args, nargs, kwnames, &dc);
        for (int i = 0; !rc && i < nargs; i++)
            vals[i] = args[i].v;
    }
    int nin0 = 0;
    st_rt_trace_inputs(&nin0);
    if (!rc) {
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        r = PyObject_Vectorcall(fn, vals, (size_t)(nargs - nkw), kwnames);
        if (s->dyn && r && !(r = tr_dyn_after_call(s, &dc, r)))
            rc = tr_break_exc(s, "dynamic shapes");
        Py_CLEAR(dc.shape);
        if (rc) {
            /* after_call failed */
        } else if (!r) {
            char what[240];
            snprintf(what, sizeof what, "call to %s", tr_qualname(fn, buf, sizeof buf));
            rc = tr_break_exc(s, what);
        } else if (tr_check_trace(s) < 0 || unsourced_reads(s, fn, nin0) < 0) {
            Py_DECREF(r);
            rc = -1;
        }
    }
    if (vals != small)
        free(vals);
    if (rc < 0)
        return -1;
    for (int i = 0; i < nargs; i++)
        if (args[i].v == r && !PyLong_Check(r) && r != Py_None && !PyBool_Check(r)) {
            Py_DECREF(r);
            tr_var_copy(out, &args[i]);
            return 0;
        }
    tr_make_value(s, out, r);
    return 0;
}

static int unsupported(tr_state *s, PyObject *fn)
{
    char buf[200];
    return tr_break(s, "call to %s is not supported", tr_qualname(fn, buf, sizeof buf));
}

bool tr_name_in(const char *nm, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(nm, *list))
            return true;
    return false;
}

static const char *const tensor_deny[] = {"backward", "register_hook", "retain_grad",
                                           "register_post_accumulate_grad_hook",
                                           "item", "tolist", "numpy", NULL};

/* change a tensor's autograd state or metadata: only on fresh tensors */
static const char *const tensor_meta_mut[] = {"requires_grad_", "detach_", "resize_",
                                               "resize_as_", "set_", "share_memory_", NULL};

/* Host data a guard cannot see into: a numpy array or scalar, a buffer
 * (array.array, memoryview, bytes...), also inside a list or tuple. */
static bool is_host_data(PyObject *o, int depth)
{
    if (!o || st_fe_is_tensor(o) || PyUnicode_Check(o))
        return false;
    PyTypeObject *t = Py_TYPE(o);
    if (!strncmp(t->tp_name, "numpy.", 6) || PyObject_CheckBuffer(o))
        return true;
    if ((PyList_Check(o) || PyTuple_Check(o)) && depth < 2) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n && i < 64; i++)
            if (is_host_data(PySequence_Fast_GET_ITEM(o, i), depth + 1))
                return true;
    }
    return false;
}

static int check_symtrace_fn(tr_state *s, PyObject *fn, tr_var *args, int nargs)
{
    char buf[200];
    const char *q = tr_qualname(fn, buf, sizeof buf);
    /* tensor(ndarray), from_numpy, full(shape, np.float32(v)), ...: the data
     * would become a constant of the graph, guarded by its type only */
    for (int i = 0; i < nargs; i++)
        if (is_host_data(args[i].v, 0))
            return tr_break(s, "call to %s with host data (%s): its values would be a "
                            "constant of the graph", q, Py_TYPE(args[i].v)->tp_name);
    const char *last = strrchr(q, '.');
    last = last ? last + 1 : q;
    /* state machines that sync or step (GradScaler keeps its scale in a
     * tensor it replaces: a traced call would bake the old one in) */
    if (tr_module_starts(fn, "symtrace.optim") || tr_module_starts(fn, "symtrace.memory") ||
        tr_module_starts(fn, "symtrace.cuda") || tr_module_starts(fn, "symtrace.amp.grad_scaler") ||
        !strcmp(last, "manual_seed") || !strcmp(last, "seed") ||
        !strcmp(last, "initial_seed"))
        return tr_break(s, "call to %s is not supported", q);
    if (tr_module_starts(fn, "symtrace.autograd") &&
        (!strcmp(q, "backward") || !strcmp(q, "grad")))
        return tr_break(s, "call to symtrace.autograd.%s is not supported", q);
    /* gradient hooks attach to the run's tensors, which a graph replays
     * without them: every way of registering one runs as Python */
    if (tr_module_starts(fn, "symtrace.autograd.hooks"))
        return tr_break(s, "call to %s is not supported (gradient hooks)", q);
    /* a hook handle's remove() changes its owner's hook table: run for real
     * here it would happen once, at translation, and no call after it */
    if (tr_module_starts(fn, "symtrace.utils.hooks"))
        return tr_break(s, "call to %s is not supported (hook handles)", q);
    if (!strncmp(q, "Tensor.", 7) && tr_name_in(last, tensor_deny))
        return tr_break(s, "call to Tensor.%s is not supported", last);
    /* a graph's outputs are made anew by each run, which sets no flags: a
     * tensor made to require grad here (x.detach().requires_grad_()) must
     * leave the graph first, and what reads it starts the next one */
    if (!strncmp(q, "Tensor.", 7) && !strcmp(last, "requires_grad_"))
        return tr_break(s, "call to Tensor.requires_grad_ (a graph cannot replay it)");
    if (!strncmp(q, "Tensor.", 7) && tr_name_in(last, tensor_meta_mut) && nargs > 0 &&
        !tr_is_fresh(s, args[0].v))
        return tr_break(s, "side effect: %s on a tensor from outside the "
                        "frame (not supported yet)", last);
    return 0;
}

/* The plain constants a custom Function's methods, and the helpers they
 * call, read from their modules' globals (ALPHA in `return -ALPHA * g`) are
 * baked into the capture: each is guarded by value through its path from
 * cls.<method> (("g", name): .__globals__[name]; ("a", name): .name), a
 * tensor or a helper by identity (when cls has a source; one made in the
 * frame is made anew). */
static st_fe_src *pylayer_global_src(tr_state *s, st_fe_src *ms, PyObject *path,
                                     PyObject *gn)
{
    if (!PyTuple_Check(path))
        return NULL;
    for (Py_ssize_t k = 0; ms && k < PyTuple_GET_SIZE(path); k++) {
        PyObject *step = PyTuple_GET_ITEM(path, k);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) != 2)
            return NULL;
        const char *kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(step, 0));
        PyObject *name = PyTuple_GET_ITEM(step, 1);
        if (!kind)
            return NULL;
        if (kind[0] == 'g') {
            ms = st_fe_src_attr(&s->srcs, ms, gn);
            ms = ms ? st_fe_src_item(&s->srcs, ms, name) : NULL;
        } else {
            ms = st_fe_src_attr(&s->srcs, ms, name);
        }
    }
    return ms;
}

static int guard_pylayer_globals(tr_state *s, PyObject *cls)
{
    st_fe_src *cs = tr_lookup_src(s, cls);
    if (!cs)
        return 0;
    PyObject *l = st_fe_pylayer_globals_read(cls);
    if (!l)
        return tr_break_exc(s, "PyLayer globals");
    PyObject *gn = PyUnicode_InternFromString("__globals__");
    int rc = gn ? 0 : tr_break_exc(s, "PyLayer globals");
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(l); i++) {
        PyObject *e = PyList_GET_ITEM(l, i);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3)
            continue;
        st_fe_src *ms = st_fe_src_attr(&s->srcs, cs, PyTuple_GET_ITEM(e, 0));
        st_fe_src *vs = ms ? pylayer_global_src(s, ms, PyTuple_GET_ITEM(e, 1), gn) : NULL;
        PyObject *v = PyTuple_GET_ITEM(e, 2);
        /* a tensor: the capture read that tensor (its identity) */
        if (!vs || (st_fe_is_tensor(v) ? st_fe_guard_add(&s->guards, ST_G_ID, vs, v)
                                       : st_fe_guard_value(&s->guards, vs, v)) < 0)
            rc = tr_break_exc(s, "guard");
    }
    Py_XDECREF(gn);
    Py_DECREF(l);
    return rc;
}

static int call_pylayer(tr_state *s, PyObject *cls, tr_var *args, int nargs,
                        PyObject *kwnames, tr_var *out)
{
    /* forward and backward run for real on these values while traced: what
     * they read of the arguments that are not tensors (a scale, a flag) is
     * guarded by value, and so are the plain constants they read from
     * their module's globals (guard_pylayer_globals) */
    PyObject *why = st_fe_pylayer_side_effect(cls);
    if (!why)
        return tr_break_exc(s, "PyLayer");
    if (why != Py_None) {
        /* performed by the capture only: a break before the call, which
         * then runs eagerly on every call */
        int rc = tr_break(s, "PyLayer %s: Python side effect: %s",
                          ((PyTypeObject *)cls)->tp_name, PyUnicode_AsUTF8(why));
        Py_DECREF(why);
        return rc;
    }
    Py_DECREF(why);
    if (guard_pylayer_globals(s, cls) < 0)
        return -1;
    for (int i = 0; i < nargs; i++) {
        tr_var *v = &args[i];
        if (!v->v || st_fe_is_tensor(v->v) || v->it || v->aux != TR_AUX_NONE)
            continue;
        if (tr_is_lazy(v->v)) {
            if (tr_lazy_plain_var(s, v) < 0)
                return -1;
            continue;
        }
        st_fe_src *vs = tr_var_src(s, v);
        if (vs && st_fe_guard_value(&s->guards, vs, v->v) < 0)
            return tr_break_exc(s, "guard");
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *a = PyTuple_New(nargs - nkw), *kw = nkw ? PyDict_New() : NULL;
    if (!a || (nkw && !kw)) {
        Py_XDECREF(a);
        Py_XDECREF(kw);
        return tr_break_exc(s, "PyLayer");
    }
    for (int i = 0; i < nargs - nkw; i++)
        PyTuple_SET_ITEM(a, i, Py_NewRef(args[i].v));
    for (Py_ssize_t j = 0; j < nkw; j++)
        PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, j), args[nargs - nkw + j].v);
    PyObject *r = st_fe_trace_pylayer(cls, a, kw);
    Py_DECREF(a);
    Py_XDECREF(kw);
    if (!r)
        return tr_break_exc(s, "PyLayer");
    if (tr_check_trace(s) < 0) {
        Py_DECREF(r);
        return -1;
    }
    tr_make_value(s, out, r);
    return 0;
}

/* Calls with self prepended. */
static int call_with_self(tr_state *s, PyObject *fn, PyObject *self, tr_var *args,
                          int nargs, PyObject *kwnames, tr_var *out)
{
    tr_var *all = calloc((size_t)nargs + 1, sizeof(tr_var));
    if (!all)
        return tr_break(s, "out of memory");
    tr_make_value(s, &all[0], Py_NewRef(self));
    for (int i = 0; i < nargs; i++)
        tr_var_copy(&all[i + 1], &args[i]);
    tr_var fv = {0};
    fv.v = Py_NewRef(fn);
    int rc = tr_call(s, &fv, all, nargs + 1, kwnames, out);
    tr_var_clear(&fv);
    for (int i = 0; i <= nargs; i++)
        tr_var_clear(&all[i]);
    free(all);
    return rc;
}

static int build_from_items(tr_state *s, tr_var *arg, int kind, tr_var *out)
{
    tr_var *items;
    int n;
    if (tr_unroll(s, arg, &items, &n) < 0)
        return -1;
    PyObject *r = kind == 0 ? PyList_New(0) : kind == 1 ? PyList_New(0) :
                  kind == 2 ? PySet_New(NULL) : PyDict_New();
    int rc = r ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (kind <= 1)
            rc = PyList_Append(r, items[i].v);
        else if (kind == 2)
            rc = PySet_Add(r, items[i].v);
        else if (PyTuple_Check(items[i].v) && PyTuple_GET_SIZE(items[i].v) == 2)
            rc = PyDict_SetItem(r, PyTuple_GET_ITEM(items[i].v, 0), PyTuple_GET_ITEM(items[i].v, 1));
        else {
            PyErr_SetString(PyExc_TypeError, "dict() of non-pairs");
            rc = -1;
        }
    }
    for (int i = 0; i < n; i++)
        tr_var_clear(&items[i]);
    free(items);
    if (rc < 0) {
        Py_XDECREF(r);
        return tr_break_exc(s, "container construction");
    }
    if (kind == 1) {
        PyObject *t = PyList_AsTuple(r);
        Py_DECREF(r);
        if (!t)
            return tr_break_exc(s, "tuple()");
        tr_make_value(s, out, t);
        return 0;
    }
    tr_mark_fresh(s, r);
    memset(out, 0, sizeof *out);
    out->v = r;
    return 0;
}

/* Frees the unrolled sequences lists[0..nseq) (lens[i] items each) and
 * makes the iterator over l (of the given type), or, when rc < 0, frees l
 * too. */
static int finish_unrolled(tr_state *s, tr_var **lists, int *lens, int nseq,
                           tr_vlist *l, int rc, PyObject *type, tr_var *out)
{
    for (int i = 0; lists && i < nseq; i++) {
        for (int j = 0; j < lens[i]; j++)
            tr_var_clear(&lists[i][j]);
        free(lists[i]);
    }
    free(lists);
    free(lens);
    if (rc < 0) {
        tr_vl_free(l);
        return -1;
    }
    return tr_iter_from(s, l->v, l->n, type, out);
}

/* type(reversed(o)) for a builtin sequence (list_reverseiterator,
 * reversed, ...), else NULL: new reference, no exception. */
static PyObject *reversed_type(PyObject *o)
{
    if (!o || !tr_safe_type(o) || st_fe_is_tensor(o) || PyType_Check(o))
        return NULL;
    PyObject *r = PyObject_CallOneArg((PyObject *)&PyReversed_Type, o);
    PyObject *t = r ? Py_NewRef((PyObject *)Py_TYPE(r)) : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
    return t;
}

static int call_builtin_type(tr_state *s, PyObject *fn, tr_var *args, int nargs,
                             PyObject *kwnames, tr_var *out, bool *handled)
{
    *handled = true;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - (int)nkw;
    PyTypeObject *t = (PyTypeObject *)fn;
    if (t == &PySuper_Type) {
        tr_var sv = {0};
        if (npos == 2) {
            sv.v = PyTuple_Pack(2, args[0].v, args[1].v);
        } else if (npos == 0) {
            tr_frame *fr = s->top;
            PyCodeObject *co = fr->code;
            PyObject *self = NULL, *cls = NULL;
            if (co->co_argcount > 0 && fr->locals[0].v) {
                self = fr->locals[0].v;
                if (PyCell_Check(self))
                    self = PyCell_GET(self);
            }
            for (int i = 0; i < fr->nlocals; i++)
                if (!PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(co->co_localsplusnames, i),
                                                      "__class__") &&
                    fr->locals[i].v && PyCell_Check(fr->locals[i].v))
                    cls = PyCell_GET(fr->locals[i].v);
            if (!self || !cls)
                return tr_break(s, "super(): no arguments");
            sv.v = PyTuple_Pack(2, cls, self);
        } else {
            return tr_break(s, "super() with %d arguments", npos);
        }
        if (!sv.v)
            return tr_break_exc(s, "super");
        sv.aux = TR_AUX_SUPER;
        *out = sv;
        return 0;
    }
    if (nkw == 0 && npos == 1 && (t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
                                  t == &PyComplex_Type) && st_fe_is_tensor(args[0].v))
        return tr_break(s, "data-dependent: %s() of a tensor", t->tp_name);
    if (nkw == 0 && npos == 1 && (t == &PyList_Type || t == &PyTuple_Type || t == &PySet_Type ||
                                  t == &PyDict_Type) &&
        (args[0].it || args[0].aux != TR_AUX_NONE || !tr_safe_type(args[0].v) ||
         args[0].src)) {
        int kind = t == &PyList_Type ? 0 : t == &PyTuple_Type ? 1 : t == &PySet_Type ? 2 : 3;
        if (kind == 3 && PyDict_Check(args[0].v) && !args[0].it) {
            /* dict(d): copy, items stay as read */
        } else
            return build_from_items(s, &args[0], kind, out);
    }
    if ((t == &PyMap_Type || t == &PyFilter_Type) && nkw == 0 && npos >= 2 &&
        (t == &PyMap_Type || npos == 2)) {
        /* map(fn, *its) / filter(fn, it): fn is called (inlined or real)
         * per element, eagerly */
        int nseq = npos - 1, m = -1, rc = 0;
        tr_var **lists = calloc((size_t)nseq, sizeof(tr_var *));
        int *lens = calloc((size_t)nseq, sizeof(int));
        if (!lists || !lens)
            rc = tr_break(s, "out of memory");
        for (int i = 0; rc == 0 && i < nseq; i++) {
            rc = tr_unroll(s, &args[i + 1], &lists[i], &lens[i]);
            tr_iter_take(&args[i + 1]);
            if (rc == 0 && (m < 0 || lens[i] < m))
                m = lens[i];
        }
        tr_vlist l = {0};
        tr_var *cargs = calloc((size_t)nseq + 1, sizeof(tr_var));
        if (!cargs && rc == 0)
            rc = tr_break(s, "out of memory");
        for (int j = 0; rc == 0 && j < m; j++) {
            for (int i = 0; i < nseq; i++)
                cargs[i] = lists[i][j];
            tr_var r;
            if (t == &PyFilter_Type && args[0].v == Py_None)
                tr_var_copy(&r, &cargs[0]);
            else if ((rc = tr_call(s, &args[0], cargs, nseq, NULL, &r)) < 0)
                break;
            if (t == &PyMap_Type) {
                rc = tr_vl_push(s, &l, &r);
                continue;
            }
            int keep = 0;
            if (st_fe_is_tensor(r.v))
                rc = tr_break(s, "data-dependent: filter() on a tensor");
            else if (!tr_safe_type(r.v))
                rc = tr_break(s, "filter() predicate returned a %s", tr_type_name(r.v));
            else if ((keep = PyObject_IsTrue(r.v)) < 0)
                rc = tr_break_exc(s, "filter()");
            tr_var_clear(&r);
            if (rc == 0 && keep) {
                tr_var c;
                tr_var_copy(&c, &cargs[0]);
                rc = tr_vl_push(s, &l, &c);
            }
        }
        free(cargs);
        return finish_unrolled(s, lists, lens, nseq, &l, rc, fn, out);
    }
    if (t == &PyEnum_Type || t == &PyZip_Type || t == &PyReversed_Type) {
        if (nkw && t != &PyEnum_Type)
            return tr_break(s, "%s() with keywords", t->tp_name);
        int nseq = t == &PyZip_Type ? npos : 1;
        if (npos < 1 && t != &PyZip_Type)
            return tr_break(s, "%s() without arguments", t->tp_name);
        if (t == &PyReversed_Type && args[0].it)
            return tr_break(s, "reversed() of an iterator");   /* a TypeError */
        long start = 0;
        if (t == &PyEnum_Type && nargs > 1) {
            start = PyLong_AsLong(args[1].v);
            if (start == -1 && PyErr_Occurred())
                return tr_break_exc(s, "enumerate");
        }
        tr_var **lists = calloc((size_t)nseq + 1, sizeof(tr_var *));
        int *lens = calloc((size_t)nseq + 1, sizeof(int));
        int rc = lists && lens ? 0 : tr_break(s, "out of memory"), m = -1;
        PyObject *watch = NULL;    /* enumerate, zip: item j is item j of each */
        for (int i = 0; rc == 0 && i < nseq; i++) {
            if (t != &PyReversed_Type && (rc = tr_iter_watch(s, &args[i], &watch)) < 0)
                break;
            rc = tr_unroll(s, &args[i], &lists[i], &lens[i]);
            tr_iter_take(&args[i]);
            if (m < 0 || lens[i] < m)
                m = lens[i];
        }
        if (m < 0)
            m = 0;
        tr_vlist l = {0};
        for (int j = 0; rc == 0 && j < m; j++) {
            tr_var v;
            if (t == &PyReversed_Type) {
                tr_var_copy(&v, &lists[0][lens[0] - 1 - j]);
            } else if (t == &PyEnum_Type) {
                PyObject *i = PyLong_FromLong(start + j);
                PyObject *tp = i ? PyTuple_Pack(2, i, lists[0][j].v) : NULL;
                Py_XDECREF(i);
                if (!tp) {
                    rc = tr_break_exc(s, "enumerate");
                    break;
                }
                tr_make_value(s, &v, tp);
            } else {
                PyObject *tp = PyTuple_New(nseq);
                if (!tp) {
                    rc = tr_break_exc(s, "zip");
                    break;
                }
                for (int i = 0; i < nseq; i++)
                    PyTuple_SET_ITEM(tp, i, Py_NewRef(lists[i][j].v));
                tr_make_value(s, &v, tp);
            }
            rc = tr_vl_push(s, &l, &v);
        }
        PyObject *rt = t == &PyReversed_Type ? reversed_type(args[0].v) : Py_NewRef(fn);
        rc = finish_unrolled(s, lists, lens, nseq, &l, rc, rt, out);
        Py_XDECREF(rt);
        if (rc == 0 && out->it)
            out->it->watch = watch;
        else
            Py_XDECREF(watch);
        return rc;
    }
    if (t == &PyBool_Type && nargs == 1 && !kwnames && args[0].v && !args[0].it &&
        args[0].aux == TR_AUX_NONE && !tr_safe_type(args[0].v) && !PyType_Check(args[0].v) &&
        (tr_py_dunder(args[0].v, "__bool__") || tr_py_dunder(args[0].v, "__len__"))) {
        /* bool(o) of a class with a Python __bool__ (enum.Flag): inlined */
        int r = 0;
        if (tr_truth(s, &args[0], &r) < 0)
            return -1;
        tr_make_value(s, out, PyBool_FromLong(r));
        return 0;
    }
    static PyTypeObject *pure[] = {&PyLong_Type, &PyFloat_Type, &PyBool_Type, &PyUnicode_Type,
        &PyTuple_Type, &PyList_Type, &PyDict_Type, &PySet_Type, &PyFrozenSet_Type,
        &PySlice_Type, &PyRange_Type, &PyComplex_Type, &PyBytes_Type, NULL};
    /* OrderedDict too (Module.__init__'s tables, for a Module made in the frame) */
    bool od = !strcmp(t->tp_name, "collections.OrderedDict");
    for (int i = 0; pure[i]; i++)
        if (t == pure[i] || od) {
            for (int k = 0; k < nargs; k++)
                if (!tr_safe_type(args[k].v) || args[k].it)
                    return tr_break(s, "%s() of a %s", t->tp_name, tr_type_name(args[k].v));
            return real_call(s, fn, args, nargs, kwnames, out);
        }
    if (t == &PyType_Type && nargs == 1) {
        PyObject *a = args[0].v;
        PyTypeObject *ty = Py_TYPE(a);
        if (args[0].aux == TR_AUX_ITER || args[0].aux == TR_AUX_SUPER) {
            if (!args[0].it || !args[0].it->type)
                return tr_break(s, "type() of an iterator of unknown type");
            ty = (PyTypeObject *)args[0].it->type;
        }
        bool num = tr_is_symint(a) || tr_is_lazy(a);
        if (num)   /* as the number they stand for */
            ty = PyFloat_Check(a) ? &PyFloat_Type : &PyLong_Type;
        if (a && args[0].aux == TR_AUX_NONE && !args[0].it && !st_fe_is_tensor(a)) {
            /* the answer is a constant of the graph: the type of a sourced
             * argument is guarded (type(o) is int, with o = 1 then 1.5) */
            st_fe_src *as = args[0].src ? args[0].src : num ? NULL : tr_var_src(s, &args[0]);
            if (as && st_fe_guard_add(&s->guards, ST_G_TYPE, as, (PyObject *)ty) < 0)
                return tr_break_exc(s, "guard");
        }
        tr_make_value(s, out, Py_NewRef((PyObject *)ty));
        return 0;
    }
    *handled = false;
    return 0;
}

/* min/max/sorted with key=: the key function is called (inlined) per
 * item; the real builtin then orders the indices by the keys. */
static int call_with_key(tr_state *s, PyObject *fn, const char *nm, tr_var *args,
                         int nargs, PyObject *kwnames, tr_var *out)
{
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    int npos = nargs - (int)nkw;
    tr_var *key = NULL, *dflt = NULL, *rev = NULL;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j));
        tr_var *v = &args[npos + j];
        if (k && !strcmp(k, "key"))
            key = v;
        else if (k && !strcmp(k, "default") && strcmp(nm, "sorted"))
            dflt = v;
        else if (k && !strcmp(k, "reverse") && !strcmp(nm, "sorted"))
            rev = v;
        else
            return tr_break(s, "%s() with keyword '%s'", nm, k ? k : "?");
    }
    if (npos < 1 || (npos > 1 && !strcmp(nm, "sorted")) || (npos > 1 && dflt))
        return tr_break(s, "%s() with %d arguments", nm, npos);
    if (rev && !tr_safe_type(rev->v))
        return tr_break(s, "sorted(reverse=%s)", tr_type_name(rev->v));
    tr_var *items = NULL;
    int n = 0, rc = 0;
    bool own = npos == 1;
    if (own) {
        if (tr_unroll(s, &args[0], &items, &n) < 0)
            return -1;
    } else {
        items = args;
        n = npos;
    }
    PyObject *keys = PyList_New(0), *idx = NULL;
    for (int i = 0; rc == 0 && keys && i < n; i++) {
        tr_var k;
        if (!key || key->v == Py_None) {
            tr_var_copy(&k, &items[i]);
        } else if (tr_call(s, key, &items[i], 1, NULL, &k) < 0) {
            rc = -1;
            break;
        }
        if (st_fe_is_tensor(k.v) || !tr_safe_type(k.v))
            rc = tr_break(s, "%s() key of type %s (data-dependent or user-defined order)",
                          nm, tr_type_name(k.v));
        else if (PyList_Append(keys, k.v) < 0)
            rc = tr_break_exc(s, nm);
        tr_var_clear(&k);
    }
    if (!keys && rc == 0)
        rc = tr_break_exc(s, nm);
    if (rc == 0 && n == 0 && strcmp(nm, "sorted")) {
        if (dflt)
            tr_var_copy(out, dflt);
        else
            rc = tr_break(s, "%s() of an empty sequence", nm);
    } else if (rc == 0) {
        PyObject *getter = PyObject_GetAttrString(keys, "__getitem__");
        PyObject *rng = PyObject_CallFunction((PyObject *)&PyRange_Type, "i", n);
        PyObject *kw = getter ? Py_BuildValue("{sO}", "key", getter) : NULL;
        if (kw && rev && PyDict_SetItemString(kw, "reverse", rev->v) < 0)
            Py_CLEAR(kw);
        PyObject *a = rng ? PyTuple_Pack(1, rng) : NULL;
        idx = a && kw ? PyObject_Call(fn, a, kw) : NULL;
        Py_XDECREF(getter);
        Py_XDECREF(rng);
        Py_XDECREF(kw);
        Py_XDECREF(a);
        if (!idx) {
            rc = tr_break_exc(s, nm);
        } else if (!strcmp(nm, "sorted")) {
            PyObject *l = PyList_New(n);
            for (int i = 0; l && i < n; i++)
                PyList_SET_ITEM(l, i, Py_NewRef(items[PyLong_AsLong(PyList_GET_ITEM(idx, i))].v));
            if (!l || tr_mark_fresh(s, l) < 0) {
                Py_XDECREF(l);
                rc = tr_break_exc(s, nm);
            } else {
                memset(out, 0, sizeof *out);
                out->v = l;
            }
        } else {
            tr_var_copy(out, &items[PyLong_AsLong(idx)]);
        }
    }
    Py_XDECREF(idx);
    Py_XDECREF(keys);
    if (own) {
        for (int i = 0; i < n; i++)
            tr_var_clear(&items[i]);
        free(items);
    }
    return rc;
}

/* isinstance/issubclass/callable: they look at the type only */
static bool type_only(const char *nm)
{
    return !strcmp(nm, "isinstance") || !strcmp(nm, "issubclass") || !strcmp(nm, "callable");
}

/* any()/all() of an iterator var: consumed up to the item that decides,
 * as Python's stop there (the rest stays for later uses). */
static int any_all(tr_state *s, bool any, tr_var *itv, tr_var *out)
{
    tr_var v;
    int got, t = 0;
    while ((got = tr_iter_next(s, itv, &v)) > 0) {
        if (st_fe_is_tensor(v.v) || !tr_safe_type(v.v))
            got = tr_break(s, "%s() of a %s item", any ? "any" : "all", tr_type_name(v.v));
        else if ((t = PyObject_IsTrue(v.v)) < 0)
            got = tr_break_exc(s, any ? "any()" : "all()");
        tr_var_clear(&v);
        if (got < 0)
            return -1;
        if ((t != 0) == any)
            break;
    }
    if (got < 0)
        return -1;
    tr_make_value(s, out, PyBool_FromLong(got ? any : !any));
    return 0;
}

/* Builtins given an iterator: an unrolled one (no real object) or a real
 * one from outside the frame (a generator argument), which only the
 * type-only builtins may see. 1 done (out set), 0 not handled here, -1
 * break. */
static int iter_builtin(tr_state *s, const char *nm, tr_var *args, int nargs, Py_ssize_t nkw,
                        tr_var *out)
{
    if (nargs < 1 || nkw)
        return 0;
    tr_var *a = &args[0];
    bool unrolled = a->aux == TR_AUX_ITER && a->it;
    bool real = !unrolled && a->aux == TR_AUX_NONE && a->v && PyIter_Check(a->v) &&
                !st_fe_is_tensor(a->v);
    if (!unrolled && !real)
        return 0;
    if (type_only(nm)) {
        PyObject *t = unrolled ? a->it->type : (PyObject *)Py_TYPE(a->v);
        int r;
        if (!t)
            return tr_break(s, "%s() of an iterator of unknown type", nm);
        if (!strcmp(nm, "callable") && nargs == 1)
            r = ((PyTypeObject *)t)->tp_call != NULL;
        else if (!strcmp(nm, "isinstance") && nargs == 2 && tr_safe_type(args[1].v) && !args[1].it)
            r = real ? PyObject_IsInstance(a->v, args[1].v)
                     : PyObject_IsSubclass(t, args[1].v);   /* what isinstance asks of type(x) */
        else
            return tr_break(s, "%s() of an iterator", nm);
        if (r < 0)
            return tr_break_exc(s, nm);
        tr_make_value(s, out, PyBool_FromLong(r));
        return 1;
    }
    if (real)
        return 0;               /* real_call breaks: it would consume it */
    if ((!strcmp(nm, "any") || !strcmp(nm, "all")) && nargs == 1)
        return any_all(s, nm[1] == 'n', a, out) < 0 ? -1 : 1;
    if (!strcmp(nm, "sum") || !strcmp(nm, "min") || !strcmp(nm, "max") || !strcmp(nm, "sorted"))
        return 0;               /* they consume it whole: made a list below */
    return tr_break(s, "%s() of an iterator", nm);   /* len() raises, id() differs */
}

static int call_builtin_fn(tr_state *s, PyObject *fn, const char *nm, tr_var *args,
                           int nargs, PyObject *kwnames, tr_var *out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - (int)nkw;
    if (!strcmp(nm, "getattr") && nkw == 0 && (npos == 2 || npos == 3) &&
        PyUnicode_Check(args[1].v)) {
        if (npos == 3) {
            int h = tr_hasattr(s, &args[0], args[1].v);
            if (h < 0)
                return -1;
            if (!h) {
                tr_var_copy(out, &args[2]);
                return 0;
            }
        }
        return tr_getattr(s, &args[0], args[1].v, out);
    }
    if (!strcmp(nm, "hasattr") && nargs == 2 && nkw == 0 && PyUnicode_Check(args[1].v)) {
        int h = tr_hasattr(s, &args[0], args[1].v);
        if (h < 0)
            return -1;
        tr_make_value(s, out, PyBool_FromLong(h));
        return 0;
    }
    if (!strcmp(nm, "iter") && nargs == 1)
        return tr_iter_of(s, &args[0], out);
    if (!strcmp(nm, "next") && nkw == 0 && (npos == 1 || npos == 2)) {
        int got = tr_iter_next(s, &args[0], out);
        if (got != 0)
            return got < 0 ? -1 : 0;
        if (npos == 2) {
            tr_var_copy(out, &args[1]);
            return 0;
        }
        return tr_break(s, "StopIteration from next()");
    }
    if (!strcmp(nm, "len") && nargs == 1 &&
        (tr_is_kind(args[0].v, tr_refs.modlist_cls) || tr_is_kind(args[0].v, tr_refs.seq_cls) ||
         tr_is_kind(args[0].v, tr_refs.moddict_cls))) {
        PyObject *md = tr_guarded_modules(s, &args[0]);
        if (!md)
            return -1;
        tr_make_value(s, out, PyLong_FromSsize_t(PyDict_GET_SIZE(md)));
        Py_DECREF(md);
        return 0;
    }
    if ((!strcmp(nm, "min") || !strcmp(nm, "max") || !strcmp(nm, "sorted")) && nkw > 0)
        return call_with_key(s, fn, nm, args, nargs, kwnames, out);
    int r = iter_builtin(s, nm, args, nargs, nkw, out);
    if (r != 0)
        return r < 0 ? -1 : 0;
    if (!strcmp(nm, "isinstance") && nargs == 2 && nkw == 0 && args[0].v && !args[0].it &&
        args[0].aux == TR_AUX_NONE && tr_safe_type(args[1].v) && !args[1].it &&
        (tr_is_symint(args[0].v) || st_fe_tuple_like(args[0].v))) {
        /* the type alone answers: a SymInt, or a tuple / Size of them
         * (x.shape with dynamic shapes), is not made a constant */
        int t = PyObject_IsInstance(args[0].v, args[1].v);
        if (t < 0)
            return tr_break_exc(s, nm);
        tr_make_value(s, out, PyBool_FromLong(t));
        return 0;
    }
    static const char *const pure[] = {"len", "isinstance", "issubclass", "callable", "min",
        "max", "abs", "sum", "any", "all", "round", "divmod", "pow", "sorted", "repr",
        "format", "hash", "id", "chr", "ord", NULL};
    if (!tr_name_in(nm, pure))
        return unsupported(s, fn);
    /* iterators and views become lists; other arguments must be safe */
    tr_var *conv = calloc((size_t)nargs + 1, sizeof(tr_var));
    if (!conv)
        return tr_break(s, "out of memory");
    int rc = 0;
    for (int i = 0; i < nargs && rc == 0; i++) {
        if (args[i].it || (args[i].aux >= TR_AUX_KEYS && args[i].aux <= TR_AUX_ITEMS &&
                           !type_only(nm)))
            rc = build_from_items(s, &args[i], 0, &conv[i]);
        else if (!tr_safe_type(args[i].v) && !(i == 0 && (!strcmp(nm, "isinstance") ||
                                                          !strcmp(nm, "callable") ||
                                                          !strcmp(nm, "id"))))
            rc = tr_break(s, "%s() of a %s is not supported", nm, tr_type_name(args[i].v));
        else if (!strcmp(nm, "len") && tr_is_symtrace_module(args[i].v))
            rc = tr_break(s, "len() of a module");
        else
            tr_var_copy(&conv[i], &args[i]);
    }
    if (rc == 0)
        rc = real_call(s, fn, conv, nargs, kwnames, out);
    for (int i = 0; i < nargs; i++)
        tr_var_clear(&conv[i]);
    free(conv);
    return rc;
}

static const char *const ro_methods[] = {"copy", "index", "count", "get", "keys", "values",
    "items", "__contains__", "__getitem__", "__len__", "issubset", "issuperset",
    "union", "intersection", "difference", "symmetric_difference", "isdisjoint", NULL};

/* sys._getframe(k): a break. When the frame it returns is the frame being
 * translated (inspect.currentframe() there, sys._getframe(1) in a helper
 * it calls), a break function would stand in for it, with other locals
 * (f_locals) and a line that moves on: the frame runs as plain Python. */
static int getframe_break(tr_state *s, tr_var *args, int nargs)
{
    long k = 0;
    bool known = nargs == 0 || (args[0].v && PyLong_CheckExact(args[0].v));
    if (nargs >= 1 && known)
        k = PyLong_AsLong(args[0].v);
    PyErr_Clear();
    if (!known || !s->top || s->top->depth - k == 0)
        s->no_resume = true;
    return tr_break(s, "call to sys._getframe is not supported");
}

static int call_cmethod(tr_state *s, PyObject *fn, tr_var *args, int nargs,
                        PyObject *kwnames, tr_var *out)
{
    PyObject *self = PyCFunction_GET_SELF(fn);
    const char *nm = ((PyCFunctionObject *)fn)->m_ml->ml_name;
    if (!self || PyModule_Check(self)) {
        if (self == tr_refs.c_module) {
            /* _C's private functions drive the runtime (trace, autograd,
             * caches): only these few are plain reads or scoped modes */
            static const char *const private_ok[] = {"_is_grad_enabled",
                "_set_grad_enabled", "_get_autocast", "_set_autocast", "_cuda_is_available",
                "_cuda_device_count", "_cuda_device_name", NULL};
            if (!strcmp(nm, "_fe_bump_module_epoch") && nargs == 0 && s->top &&
                s->top->code->co_argcount > 0 && s->top->locals[0].v &&
                tr_is_symtrace_module(s->top->locals[0].v) && tr_is_fresh(s, s->top->locals[0].v)) {
                /* a Module method registering on a Module made in the
                 * frame (a loss built in forward): no entry guards that
                 * module, nothing to mark stale. On any other module the
                 * call breaks, so that the change runs as Python with it */
                tr_make_value(s, out, Py_NewRef(Py_None));
                return 0;
            }
            /* _make_subclass (Parameter.__new__) is not listed: its result,
             * a new tensor made outside the trace, would be a constant of
             * the graph, and a second call would get the first call's
             * Parameter; the call breaks and runs as Python */
            if (!strcmp(nm, "manual_seed") || (nm[0] == '_' && !tr_name_in(nm, private_ok)))
                return unsupported(s, fn);
            return real_call(s, fn, args, nargs, kwnames, out);
        }
        if (self == tr_refs.builtins_mod)
            return call_builtin_fn(s, fn, nm, args, nargs, kwnames, out);
        if (self == tr_refs.math_mod || self == tr_refs.operator_mod || self == tr_refs.op_mod2) {
            for (int i = 0; i < nargs; i++)
                if (!tr_safe_type(args[i].v))
                    return tr_break(s, "%s() of a %s", nm, tr_type_name(args[i].v));
            return real_call(s, fn, args, nargs, kwnames, out);
        }
        const char *mn = self ? PyModule_GetName(self) : NULL;
        PyErr_Clear();
        if (mn && !strcmp(mn, "sys") && !strcmp(nm, "_getframe"))
            return getframe_break(s, args, nargs);
        return unsupported(s, fn);
    }
    if (st_fe_is_tensor(self)) {
        if (tr_name_in(nm, tensor_deny))
            return tr_break(s, "call to Tensor.%s is not supported", nm);
        if (tr_name_in(nm, tensor_meta_mut) && !tr_is_fresh(s, self))
            return tr_break(s, "side effect: %s on a tensor from outside "
                            "the frame (not supported yet)", nm);
        return real_call(s, fn, args, nargs, kwnames, out);
    }
    if (PyList_Check(self) || PyDict_Check(self) || PyAnySet_CheckExact(self)) {
        /* a user dict subclass (ModelOutput): any of dict's methods on one
         * made in the frame; the read-only ones on one read from a source
         * (guarded by its keys like a dict) */
        if (!tr_safe_type(self) && !tr_fresh_user_obj(s, self) &&
            !(PyDict_Check(self) && tr_plain_user_type(Py_TYPE(self)) &&
              tr_name_in(nm, ro_methods) && tr_lookup_src(s, self)))
            return unsupported(s, fn);
        if (!tr_name_in(nm, ro_methods) && !tr_is_fresh(s, self)) {
            /* a list/dict from outside: the call goes to its shadow */
            char what[128];
            snprintf(what, sizeof what, "%s.%s", Py_TYPE(self)->tp_name, nm);
            tr_var sv = {0};
            sv.v = Py_NewRef(self);
            if (tr_fx_redirect(s, &sv, what) < 0) {
                tr_var_clear(&sv);
                return -1;
            }
            PyObject *m = PyObject_GetAttrString(sv.v, nm);
            tr_var_clear(&sv);
            if (!m)
                return tr_break_exc(s, what);
            int rc = PyCFunction_Check(m) && tr_is_fresh(s, PyCFunction_GET_SELF(m))
                     ? call_cmethod(s, m, args, nargs, kwnames, out)
                     : tr_break(s, "side effect: %s (not supported)", what);
            Py_DECREF(m);
            return rc;
        }
        st_fe_src *src = tr_lookup_src(s, self);
        if (PyDict_Check(self) && nargs == 0 &&
            (!strcmp(nm, "keys") || !strcmp(nm, "values") || !strcmp(nm, "items"))) {
            int rc = real_call(s, fn, args, nargs, kwnames, out);
            if (rc == 0 && out->v) {
                out->aux = !strcmp(nm, "keys") ? TR_AUX_KEYS :
                           !strcmp(nm, "values") ? TR_AUX_VALUES : TR_AUX_ITEMS;
                out->src = src;
            }
            return rc;
        }
        if (PyDict_Check(self) && !strcmp(nm, "get") && src && nargs >= 1 &&
            tr_const_key(args[0].v)) {
            PyObject *v = PyDict_GetItemWithError(self, args[0].v);
            if (v)
                return tr_item_var(s, src, args[0].v, v, out);
        }
        /* a lookup in a dict from outside by a key no source can hold (a
         * tensor, hashed by identity): what it finds would be a constant */
        if (PyDict_Check(self) && nargs >= 1 && !tr_is_fresh(s, self) && !tr_const_key(args[0].v) &&
            (!strcmp(nm, "get") || !strcmp(nm, "__getitem__") || !strcmp(nm, "__contains__") ||
             !strcmp(nm, "setdefault") || !strcmp(nm, "pop")))
            return tr_break(s, "dict.%s keyed by a %s (its value would be a constant)", nm,
                            tr_type_name(args[0].v));
        for (int i = 0; i < nargs; i++)
            if (args[i].it)
                return tr_break(s, "an iterator passed to %s", nm);
        return real_call(s, fn, args, nargs, kwnames, out);
    }
    if (self == (PyObject *)&PyTuple_Type && !strcmp(nm, "__new__") && nargs == 2 && !kwnames &&
        args[0].v && PyType_Check(args[0].v) && args[0].v != self &&
        PyType_IsSubtype((PyTypeObject *)args[0].v, &PyTuple_Type) &&
        PyObject_HasAttrString(args[0].v, "_fields")) {
        /* tuple.__new__(cls, iterable) of a namedtuple class (its _make,
         * hence _replace): the iterable unrolled, the tuple made of it */
        tr_var *items, lv = {0};
        int n;
        if (tr_unroll(s, &args[1], &items, &n) < 0)
            return -1;
        PyObject *l = PyList_New(n);
        for (int i = 0; l && i < n; i++)
            PyList_SET_ITEM(l, i, Py_NewRef(items[i].v));
        for (int i = 0; i < n; i++)
            tr_var_clear(&items[i]);
        free(items);
        if (!l)
            return tr_break_exc(s, "tuple.__new__");
        lv.v = l;
        tr_var a2[2] = {{0}};
        tr_var_copy(&a2[0], &args[0]);
        a2[1] = lv;
        int rc = real_call(s, fn, a2, 2, NULL, out);
        tr_var_clear(&a2[0]);
        tr_var_clear(&a2[1]);
        return rc;
    }
    if (PyUnicode_Check(self) || PyBytes_Check(self) || PyTuple_Check(self) ||
        PyLong_Check(self) || PyFloat_Check(self) || PyFrozenSet_CheckExact(self) ||
        PyType_Check(self) || (PyObject *)Py_TYPE(self) == tr_refs.dtype_cls) {
        if (PyType_Check(self) && !tr_safe_type(self))
            return unsupported(s, fn);
        for (int i = 0; i < nargs; i++)   /* str.format etc. may call dunders */
            if (!tr_safe_type(args[i].v) || args[i].it)
                return tr_break(s, "%s.%s() of a %s is not supported",
                                Py_TYPE(self)->tp_name, nm, tr_type_name(args[i].v));
        if (PyType_Check(self) && strcmp(nm, "fromkeys") && strcmp(nm, "__new__")) {
            /* classmethods of builtin types other than these are not known */
            if (!(self == (PyObject *)&PyDict_Type || self == (PyObject *)&PyUnicode_Type ||
                  self == (PyObject *)&PyFloat_Type || self == (PyObject *)&PyLong_Type ||
                  self == (PyObject *)&PyBytes_Type))
                return unsupported(s, fn);
        }
        return real_call(s, fn, args, nargs, kwnames, out);
    }
    return unsupported(s, fn);
}

/* A slot or method of object, dict or OrderedDict (C code) called on a
 * user object made in the frame: bound (method-wrapper, oc its self) or
 * through the class (dict.keys(obj)). */
static bool c_slot_of_fresh(tr_state *s, const char *tn, PyObject *fn, PyObject *oc,
                            tr_var *args, int nargs)
{
    PyObject *self = !strcmp(tn, "method-wrapper") ? oc : nargs >= 1 ? args[0].v : NULL;
    if (!self || !tr_fresh_user_obj(s, self))
        return false;
    for (int i = 0; i < nargs; i++)
        if (args[i].it || args[i].aux == TR_AUX_SUPER)
            return false;
    PyObject *cls = !strcmp(tn, "method-wrapper") ? PyObject_GetAttrString(fn, "__objclass__")
                                                  : Py_XNewRef(oc);
    PyErr_Clear();
    bool ok = cls && PyType_Check(cls) &&
              (cls == (PyObject *)&PyBaseObject_Type || cls == (PyObject *)&PyDict_Type ||
               !strcmp(((PyTypeObject *)cls)->tp_name, "collections.OrderedDict")) &&
              PyObject_TypeCheck(self, (PyTypeObject *)cls);
    Py_XDECREF(cls);
    return ok;
}

/* functools.partial, enum.EnumMeta and contextlib.nullcontext (looked up
 * once; borrowed). */
static PyObject *partial_type, *enum_meta, *nullctx_type;

static int std_types(void)
{
    if (partial_type)
        return 0;
    PyObject *ft = PyImport_ImportModule("functools"), *em = PyImport_ImportModule("enum");
    PyObject *cl = PyImport_ImportModule("contextlib");
    PyObject *p = ft ? PyObject_GetAttrString(ft, "partial") : NULL;
    PyObject *e = em ? PyObject_GetAttrString(em, "EnumMeta") : NULL;
    PyObject *n = cl ? PyObject_GetAttrString(cl, "nullcontext") : NULL;
    Py_XDECREF(ft);
    Py_XDECREF(em);
    Py_XDECREF(cl);
    if (!p || !e || !n || !PyType_Check(p) || !PyType_Check(e) || !PyType_Check(n)) {
        Py_XDECREF(p);
        Py_XDECREF(e);
        Py_XDECREF(n);
        PyErr_Clear();
        return -1;
    }
    partial_type = p;
    enum_meta = e;
    nullctx_type = n;
    return 0;
}

/* o is a member of an enum class (its type's metaclass is EnumMeta) */
bool tr_is_enum_member(PyObject *o)
{
    return o && std_types() == 0 && !PyType_Check(o) &&
           PyObject_TypeCheck((PyObject *)Py_TYPE(o), (PyTypeObject *)enum_meta);
}

/* o is a contextlib.nullcontext (exactly: a subclass may do more) */
bool tr_is_nullcontext(PyObject *o)
{
    return o && std_types() == 0 && Py_TYPE(o) == (PyTypeObject *)nullctx_type;
}

/* A call of a functools.partial object: its func called with its args,
 * then the call's, and its keywords updated by the call's. They are read
 * through the partial's source (p.args[i], p.keywords[k]) when it has one. */
static int call_partial(tr_state *s, tr_var *fnv, tr_var *args, int nargs,
                        PyObject *kwnames, tr_var *out)
{
    PyObject *nf = PyUnicode_InternFromString("func"), *na = PyUnicode_InternFromString("args");
    PyObject *nk = PyUnicode_InternFromString("keywords");
    tr_var f = {0}, pa = {0}, pk = {0}, *items = NULL, *all = NULL;
    int n = 0, rc = nf && na && nk ? 0 : tr_break_exc(s, "partial");
    PyObject *kws = NULL, *keys = NULL;
    if (!rc)
        rc = tr_getattr(s, fnv, nf, &f);
    if (!rc)
        rc = tr_getattr(s, fnv, na, &pa);
    if (!rc)
        rc = tr_getattr(s, fnv, nk, &pk);
    if (!rc && (!PyTuple_CheckExact(pa.v) || !PyDict_CheckExact(pk.v)))
        rc = tr_break(s, "a functools.partial with unusual args/keywords");
    if (!rc)
        rc = tr_unroll(s, &pa, &items, &n);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    /* the partial's keywords the call does not override, then the call's */
    if (!rc && !(keys = PyList_New(0)))
        rc = tr_break_exc(s, "partial");
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (!rc && PyDict_Next(pk.v, &pos, &k, &v)) {
        int dup = kwnames ? PySequence_Contains(kwnames, k) : 0;
        if (dup < 0 || (!dup && PyList_Append(keys, k) < 0))
            rc = tr_break_exc(s, "partial");
    }
    Py_ssize_t npk = keys ? PyList_GET_SIZE(keys) : 0;
    int total = n + (int)npos + (int)npk + (int)nkw;
    if (!rc && !(all = calloc((size_t)total + 1, sizeof(tr_var))))
        rc = tr_break(s, "out of memory");
    int j = 0;
    for (int i = 0; !rc && i < n; i++)
        tr_var_copy(&all[j++], &items[i]);
    for (Py_ssize_t i = 0; !rc && i < npos; i++)
        tr_var_copy(&all[j++], &args[i]);
    for (Py_ssize_t i = 0; !rc && i < npk; i++) {
        tr_var kv = {0};
        tr_make_value(s, &kv, Py_NewRef(PyList_GET_ITEM(keys, i)));
        rc = tr_subscr(s, &pk, &kv, &all[j]);
        tr_var_clear(&kv);
        if (!rc)
            j++;
    }
    for (Py_ssize_t i = 0; !rc && i < nkw; i++) {
        tr_var_copy(&all[j++], &args[npos + i]);
        if (PyList_Append(keys, PyTuple_GET_ITEM(kwnames, i)) < 0)
            rc = tr_break_exc(s, "partial");
    }
    if (!rc && !(kws = PyList_AsTuple(keys)))
        rc = tr_break_exc(s, "partial");
    if (!rc)
        rc = tr_call(s, &f, all, total, PyTuple_GET_SIZE(kws) ? kws : NULL, out);
    for (int i = 0; all && i < j; i++)
        tr_var_clear(&all[i]);
    free(all);
    for (int i = 0; i < n; i++)
        tr_var_clear(&items[i]);
    free(items);
    tr_var_clear(&f);
    tr_var_clear(&pa);
    tr_var_clear(&pk);
    Py_XDECREF(kws);
    Py_XDECREF(keys);
    Py_XDECREF(nf);
    Py_XDECREF(na);
    Py_XDECREF(nk);
    return rc;
}

/* logging.Logger.isEnabledFor(level) on a logger with a source (log.debug
 * in forward): run for real (it fills the logger's level cache, under the
 * logging lock the translation cannot take) and its answer guarded
 * through what logging itself re-checks: logger.disabled and the cache
 * entry logger._cache[level], which setLevel/disable clear (a missing
 * entry fails the guard: translated again). 1 handled, 0 not this, -1. */
static int logger_enabled(tr_state *s, PyObject *fn, tr_var *args, int nargs,
                          PyObject *kwnames, tr_var *out)
{
    PyFunctionObject *f = (PyFunctionObject *)fn;
    if (nargs != 2 || kwnames || !PyUnicode_Check(f->func_qualname) ||
        PyUnicode_CompareWithASCIIString(f->func_qualname, "Logger.isEnabledFor") ||
        !f->func_module || !PyUnicode_Check(f->func_module) ||
        PyUnicode_CompareWithASCIIString(f->func_module, "logging"))
        return 0;
    PyObject *lv = args[1].v;
    st_fe_src *ls = args[0].v && !args[0].it ? tr_var_src(s, &args[0]) : NULL;
    if (!ls || !lv || args[1].it || !PyLong_CheckExact(lv) ||
        (tr_is_lazy(lv) && tr_lazy_plain_var(s, &args[1]) < 0))
        return ls && lv && PyLong_CheckExact(lv) ? -1 : 0;
    PyObject *r = PyObject_CallFunctionObjArgs(fn, args[0].v, lv, NULL);
    if (!r)
        return tr_break_exc(s, "Logger.isEnabledFor");
    PyObject *cn = PyUnicode_InternFromString("_cache"), *dn = PyUnicode_InternFromString("disabled");
    PyObject *cache = cn ? PyObject_GetAttr(args[0].v, cn) : NULL;
    PyObject *dis = dn ? PyObject_GetAttr(args[0].v, dn) : NULL;
    st_fe_src *cs = cache && PyDict_CheckExact(cache) ? st_fe_src_attr(&s->srcs, ls, cn) : NULL;
    st_fe_src *ds = dis ? st_fe_src_attr(&s->srcs, ls, dn) : NULL;
    st_fe_src *es = cs ? st_fe_src_item(&s->srcs, cs, lv) : NULL;
    PyObject *ent = cache && PyDict_CheckExact(cache) ? PyDict_GetItemWithError(cache, lv) : NULL;
    int rc;
    if (!ds || st_fe_guard_value(&s->guards, ds, dis) < 0)
        rc = tr_break_exc(s, "Logger.isEnabledFor (guard)");
    else if (dis != Py_True && (!es || !ent || st_fe_guard_value(&s->guards, es, ent) < 0))
        rc = PyErr_Occurred() ? tr_break_exc(s, "Logger.isEnabledFor (guard)")
                              : tr_break(s, "Logger.isEnabledFor: no cache entry to guard");
    else
        rc = 1;
    Py_XDECREF(cn);
    Py_XDECREF(dn);
    Py_XDECREF(cache);
    Py_XDECREF(dis);
    if (rc == 1)
        tr_make_value(s, out, r);
    else
        Py_DECREF(r);
    return rc;
}

int tr_call(tr_state *s, tr_var *fnv, tr_var *args, int nargs,
            PyObject *kwnames, tr_var *out)
{
    PyObject *fn = fnv->v;
    memset(out, 0, sizeof *out);
    if (!fn || fnv->it || fnv->aux == TR_AUX_SUPER)
        return tr_break(s, "call of a non-callable value");
    /* opt.step(), sched.step(), warnings.warn(...): made after the graph */
    int dc = tr_fx_defer_call(s, fnv, args, nargs, kwnames, out);
    if (dc != 0)
        return dc < 0 ? -1 : 0;
    if (s->fx_barrier)
        return tr_fx_barrier_op(s, "a call", TR_FXB_OTHER, NULL);
    if (PyMethod_Check(fn)) {
        PyObject *self = PyMethod_GET_SELF(fn), *func = PyMethod_GET_FUNCTION(fn);
        if (PyType_Check(self) && PyType_IsSubtype((PyTypeObject *)self,
                                                   (PyTypeObject *)tr_refs.function_cls) &&
            PyFunction_Check(func) &&
            !PyUnicode_CompareWithASCIIString(((PyFunctionObject *)func)->func_name, "apply"))
            return call_pylayer(s, self, args, nargs, kwnames, out);
        /* a bound method reached through a source: its self is read
         * through method.__self__, so what the method reads of it is
         * guarded (an EQ guard on the method only pins self's identity) */
        st_fe_src *ms = tr_var_src(s, fnv);
        if (ms && !PyType_Check(self) && !tr_lookup_src(s, self) && !tr_is_fresh(s, self)) {
            PyObject *sn = PyUnicode_InternFromString("__self__");
            st_fe_src *ss = sn ? st_fe_src_attr(&s->srcs, ms, sn) : NULL;
            Py_XDECREF(sn);
            tr_var tmp;
            if (!ss)
                return tr_break_exc(s, "source");
            if (tr_make_sourced(s, &tmp, Py_NewRef(self), ss) < 0)
                return -1;
            tr_var_clear(&tmp);
        }
        return call_with_self(s, func, self, args, nargs, kwnames, out);
    }
    if (PyFunction_Check(fn)) {
        if (fn == tr_refs.is_compiling_fn && nargs == 0) {
            /* the graph is what runs when compiled: the compiled branch */
            tr_make_value(s, out, Py_NewRef(Py_True));
            return 0;
        }
        /* compiler.disable's mark, in the function's own __dict__ (a
         * lookup there raises nothing for the functions that lack it) */
        PyObject *fd = ((PyFunctionObject *)fn)->func_dict;
        if (fd && PyDict_GetItemString(fd, "_symtrace_checkpoint"))
            return tr_checkpoint(s, fn, args, nargs, kwnames, out);
        PyObject *seq = fd ? PyDict_GetItemString(fd, "_symtrace_checkpoint_sequential") : NULL;
        PyObject *wrapped = seq ? PyDict_GetItemString(fd, "__wrapped__") : NULL;
        if (wrapped && PyFunction_Check(wrapped))
            /* its Python body, whose checkpoint calls are inlined as above */
            return tr_inline(s, wrapped, args, nargs, kwnames, out);
        PyObject *dis = fd ? PyDict_GetItemString(fd, "_symtrace_disabled") : NULL;
        if (dis && PyObject_IsTrue(dis)) {
            char qb[200];
            return tr_break(s, "call to %s, disabled with symtrace.compiler.disable",
                            tr_qualname(fn, qb, sizeof qb));
        }
        int lg = logger_enabled(s, fn, args, nargs, kwnames, out);
        if (lg != 0)
            return lg < 0 ? -1 : 0;
        int org = tr_fn_origin(fn);
        if (org == 1 && PyObject_HasAttrString(fn, "__wrapped__")) {
            /* a symtrace decorator's wrapper (no_grad()(fn)): inline it so
             * that the user function it wraps is translated too */
            return tr_inline(s, fn, args, nargs, kwnames, out);
        }
        PyObject *cn = ((PyCodeObject *)PyFunction_GET_CODE(fn))->co_name;
        bool nested = s->lib_inline > 0 && PyUnicode_Check(cn) &&
                      PyUnicode_READ_CHAR(cn, 0) == '<';   /* <listcomp>, <genexpr>, <lambda> */
        if (org == 1 && tr_dyn_shapes(s) &&
            (nested || (fd && PyDict_GetItemString(fd, "_symtrace_dyn_inline")))) {
            /* library code whose shape math dynamic shapes can follow
             * (symtrace/_symint.py dyn_inline): its sizes stay symbolic */
            s->lib_inline++;
            int rc = tr_inline(s, fn, args, nargs, kwnames, out);
            s->lib_inline--;
            return rc;
        }
        if (org == 1) {
            if (check_symtrace_fn(s, fn, args, nargs) < 0)
                return -1;
            return real_call(s, fn, args, nargs, kwnames, out);
        }
        return tr_inline(s, fn, args, nargs, kwnames, out);
    }
    if (PyCFunction_Check(fn))
        return call_cmethod(s, fn, args, nargs, kwnames, out);
    const char *tn = Py_TYPE(fn)->tp_name;
    if (!strcmp(tn, "method_descriptor") || !strcmp(tn, "wrapper_descriptor") ||
        !strcmp(tn, "method-wrapper") || !strcmp(tn, "classmethod_descriptor")) {
        PyObject *oc = PyObject_GetAttrString(fn, !strcmp(tn, "method-wrapper") ? "__self__"
                                                                                : "__objclass__");
        PyObject *nmo = PyObject_GetAttrString(fn, "__name__");
        const char *nm = nmo ? PyUnicode_AsUTF8(nmo) : "";
        int rc;
        PyErr_Clear();
        bool tensor = oc && ((PyType_Check(oc) &&
                              PyType_IsSubtype((PyTypeObject *)oc, &st_fe_TensorBase)) ||
                             st_fe_is_tensor(oc));
        if (tensor) {
            if (nm && tr_name_in(nm, tensor_deny))
                rc = tr_break(s, "call to Tensor.%s is not supported", nm);
            else
                rc = real_call(s, fn, args, nargs, kwnames, out);
        } else if (oc == (PyObject *)&PyBaseObject_Type && nm &&
                   !strcmp(nm, "__setattr__") && nargs == 3 && tr_is_fresh(s, args[0].v)) {
            rc = real_call(s, fn, args, nargs, kwnames, out);
        } else if (oc == (PyObject *)&PyBaseObject_Type && nm && !strcmp(nm, "__init__") &&
                   nargs == 1) {
            rc = real_call(s, fn, args, nargs, kwnames, out);
        } else if (c_slot_of_fresh(s, tn, fn, oc, args, nargs)) {
            /* object's, dict's or OrderedDict's own slot on a user object
             * made in the frame (super().__setitem__(k, v) in a subclass) */
            rc = real_call(s, fn, args, nargs, kwnames, out);
        } else if (oc && PyType_Check(oc) && nargs >= 1 && tr_safe_type(args[0].v) &&
                   (oc == (PyObject *)&PyUnicode_Type || oc == (PyObject *)&PyTuple_Type ||
                    oc == (PyObject *)&PyLong_Type || oc == (PyObject *)&PyFloat_Type ||
                    ((oc == (PyObject *)&PyList_Type || oc == (PyObject *)&PyDict_Type) &&
                     nm && (tr_name_in(nm, ro_methods) || tr_is_fresh(s, args[0].v))))) {
            rc = real_call(s, fn, args, nargs, kwnames, out);
        } else if (nm && !strcmp(nm, "__init__") &&
                   (rc = !strcmp(tn, "method-wrapper")
                             ? tr_exc_c_init(s, fn, oc, args, nargs)
                             : nargs >= 1 ? tr_exc_c_init(s, fn, args[0].v, args + 1, nargs - 1)
                                          : 0) != 0) {
            /* super().__init__(msg) in a user exception's __init__ */
            if (rc > 0)
                rc = real_call(s, fn, args, nargs, kwnames, out);
        } else {
            rc = unsupported(s, fn);
        }
        Py_XDECREF(oc);
        Py_XDECREF(nmo);
        return rc;
    }
    if (PyType_Check(fn)) {
        PyTypeObject *t = (PyTypeObject *)fn;
        if (std_types() == 0 && fn == nullctx_type && nargs <= 1) {
            /* contextlib.nullcontext(enter_result): __init__ only stores it */
            if (real_call(s, fn, args, nargs, kwnames, out) < 0)
                return -1;
            if (tr_mark_fresh(s, out->v) < 0)
                return tr_break_exc(s, "nullcontext");
            return 0;
        }
        if (std_types() == 0 && fn == partial_type && nargs >= 1) {
            /* functools.partial(f, *args, **kw) made in the frame: made for
             * real; calling it unpacks it (call_partial) */
            if (real_call(s, fn, args, nargs, kwnames, out) < 0)
                return -1;
            if (tr_mark_fresh(s, out->v) < 0)
                return tr_break_exc(s, "partial");
            return 0;
        }
        if (std_types() == 0 && PyObject_TypeCheck(fn, (PyTypeObject *)enum_meta) &&
            nargs == 1 && !kwnames && args[0].v && !args[0].it && args[0].aux == TR_AUX_NONE &&
            (tr_is_lazy(args[0].v) || tr_is_symint(args[0].v) ||
             PyLong_CheckExact(args[0].v) || PyUnicode_CheckExact(args[0].v) ||
             PyFloat_CheckExact(args[0].v))) {
            /* Color(1), a Flag's self.__class__(value & other): the member of
             * that value (a composite Flag's made once and cached by enum);
             * a lazy or symbolic number's value is guarded */
            if (tr_is_lazy(args[0].v) && tr_lazy_plain_var(s, &args[0]) < 0)
                return -1;
            if (tr_is_symint(args[0].v) && tr_dyn_plain_var(s, &args[0]) < 0)
                return -1;
            return real_call(s, fn, args, nargs, kwnames, out);
        }
        if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
            bool handled;
            int rc = call_builtin_type(s, fn, args, nargs, kwnames, out, &handled);
            if (handled)
                return rc;
            return unsupported(s, fn);
        }
        if (PyType_IsSubtype(t, (PyTypeObject *)tr_refs.function_cls))
            return tr_break(s, "calling an autograd.Function class (use .apply)");
        if (PyTuple_Check(fn) || (PyType_IsSubtype(t, &PyTuple_Type) &&
                                  PyObject_HasAttrString(fn, "_fields")))
            return real_call(s, fn, args, nargs, kwnames, out);
        if (tr_module_starts(fn, "symtrace") && !tr_module_starts(fn, "symtrace.nn") &&
            !tr_module_starts(fn, "symtrace.optim"))
            return real_call(s, fn, args, nargs, kwnames, out);
        PyObject *obj = NULL;
        int made = tr_exc_new(s, t, args, nargs, kwnames, &obj);
        if (made < 0)
            return -1;
        if (!made && (Py_TYPE(fn) != &PyType_Type ||
                      (t->tp_new != PyBaseObject_Type.tp_new && !tr_plain_user_type(t))))
            return tr_break(s, "constructing a %s (custom __new__ or metaclass) is not "
                            "supported", t->tp_name);
        if (!made) {
            PyObject *empty = PyTuple_New(0);
            obj = empty ? t->tp_new(t, empty, NULL) : NULL;
            Py_XDECREF(empty);
            if (!obj || tr_mark_fresh(s, obj) < 0) {
                Py_XDECREF(obj);
                return tr_break_exc(s, "object construction");
            }
        }
        PyObject *initn = PyUnicode_FromString("__init__");
        PyObject *init = initn ? tr_mro_lookup(t, initn, NULL) : NULL;
        Py_XDECREF(initn);
        int rc = 0;
        if (init && PyFunction_Check(init)) {
            tr_var r;
            rc = call_with_self(s, init, obj, args, nargs, kwnames, &r);
            if (rc == 0 && r.v != Py_None)
                rc = tr_break(s, "__init__ returned a %s", tr_type_name(r.v));
            if (rc == 0)
                tr_var_clear(&r);
        } else if (nargs > 0) {
            rc = tr_break(s, "%s() takes no arguments", t->tp_name);
        }
        if (rc < 0) {
            Py_DECREF(obj);
            return -1;
        }
        out->v = obj;
        return 0;
    }
    if (std_types() == 0 && Py_TYPE(fn) == (PyTypeObject *)partial_type)
        return call_partial(s, fnv, args, nargs, kwnames, out);
    /* a callable object: inline type(o).__call__ when it is Python */
    PyObject *calln = PyUnicode_FromString("__call__");
    PyObject *call = calln ? tr_mro_lookup(Py_TYPE(fn), calln, NULL) : NULL;
    Py_XDECREF(calln);
    if (call && PyFunction_Check(call)) {
        tr_var *all = calloc((size_t)nargs + 1, sizeof(tr_var));
        if (!all)
            return tr_break(s, "out of memory");
        tr_var_copy(&all[0], fnv);
        for (int i = 0; i < nargs; i++)
            tr_var_copy(&all[i + 1], &args[i]);
        int rc = tr_inline(s, call, all, nargs + 1, kwnames, out);
        for (int i = 0; i <= nargs; i++)
            tr_var_clear(&all[i]);
        free(all);
        return rc;
    }
    return unsupported(s, fn);
}

