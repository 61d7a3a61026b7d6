/* frontend/pylayer_trace.c - a PyLayer (symtrace.autograd.Function) applied
 * inside a translation (st_fe_trace_pylayer): its forward is captured into
 * the trace and its backward, traced on placeholder gradients, becomes the
 * custom VJP of that region of the graph (runtime/trace.c region capture,
 * st_ir_region).
 *
 * Steps: a real ctx (the Function's <Name>Backward, which becomes the
 * eager node below) is made; Cls.forward(ctx, *args) runs
 * for real under no_grad while the trace records its ops as the region's
 * forward; then Cls.backward(ctx, *ones_like(outputs)) runs for real under
 * no_grad while a sub-trace records it as the region's backward graph
 * (whose inputs are the output gradients, then the forward values it reads,
 * e.g. ctx.saved_tensors); None gradients become zeros. The forward's real
 * outputs are returned, with an eager tape node attached (as apply does),
 * so the result computed during translation has gradients too. What cannot
 * be captured (non-tensor outputs, an input returned as is, a forward that
 * marks an input dirty, a failing backward, data reads) fails the trace
 * with a reason and the forward's result is still returned (or NULL with
 * the forward's exception). Keyword arguments are bound to forward's
 * positions first, as Function.apply does. */
#include "st_fe_tr.h"

#include <stdlib.h>
#include <string.h>

static PyObject *fn_module(void)
{
    return PyImport_ImportModule("symtrace.autograd.function");
}

/* ---------------- the eager node of the translation's result ----------
 * self = (cls, ctx, nargs, out_metas): called with the output gradients
 * (None where none flowed), returns one gradient per argument. */
static PyObject *pl_eager_backward(PyObject *self, PyObject *grads)
{
    PyObject *cls = PyTuple_GET_ITEM(self, 0), *ctx = PyTuple_GET_ITEM(self, 1);
    PyObject *metas = PyTuple_GET_ITEM(self, 3);
    Py_ssize_t n = PyTuple_GET_SIZE(grads);
    PyObject *args = PyTuple_New(n + 1), *zeros = NULL, *r = NULL;
    if (!args)
        return NULL;
    Py_INCREF(ctx);
    PyTuple_SET_ITEM(args, 0, ctx);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *g = PyTuple_GET_ITEM(grads, k);
        PyObject *m = k < PyTuple_GET_SIZE(metas) ? PyTuple_GET_ITEM(metas, k)
                                                  : Py_None;
        if (g == Py_None && m != Py_None) { /* materialize_grads */
            if (!zeros) {
                PyObject *st = PyImport_ImportModule("symtrace");
                zeros = st ? PyObject_GetAttrString(st, "zeros") : NULL;
                Py_XDECREF(st);
                if (!zeros)
                    goto done;
            }
            PyObject *kw = Py_BuildValue("{sO}", "dtype", PyTuple_GET_ITEM(m, 1));
            PyObject *a = PyTuple_Pack(1, PyTuple_GET_ITEM(m, 0));
            g = kw && a ? PyObject_Call(zeros, a, kw) : NULL;
            Py_XDECREF(kw);
            Py_XDECREF(a);
            if (!g)
                goto done;
        } else {
            Py_INCREF(g);
        }
        PyTuple_SET_ITEM(args, k + 1, g);
    }
    PyObject *bw = PyObject_GetAttrString(cls, "backward");
    r = bw ? PyObject_CallObject(bw, args) : NULL;
    Py_XDECREF(bw);
    if (r && !PyTuple_Check(r)) {
        PyObject *t = PyTuple_Pack(1, r);
        Py_DECREF(r);
        r = t;
    }
done:
    Py_XDECREF(zeros);
    Py_DECREF(args);
    return r;
}

static PyMethodDef pl_eager_def = {"pylayer_backward", pl_eager_backward,
                                   METH_VARARGS, NULL};

/* Attaches the eager node to outs (apply's tail), trace suspended. */
static int attach_eager(PyObject *cls, PyObject *ctx, PyObject *args,
                        PyObject *outs_t)
{
    Py_ssize_t na = PyTuple_GET_SIZE(args), no = PyTuple_GET_SIZE(outs_t);
    bool need = false;
    for (Py_ssize_t k = 0; k < na; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        need |= st_fe_is_tensor(a) && st_fe_unwrap(a)->requires_grad;
    }
    if (!need || !st_ad_grad_enabled())
        return 0;
    PyObject *ins = PyTuple_New(na), *diff = PyTuple_New(no),
             *metas = PyTuple_New(no);
    PyObject *self = NULL, *fn = NULL, *cm = NULL, *r = NULL;
    int rc = -1;
    if (!ins || !diff || !metas)
        goto done;
    for (Py_ssize_t k = 0; k < na; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        PyObject *v = st_fe_is_tensor(a) ? a : Py_None;
        Py_INCREF(v);
        PyTuple_SET_ITEM(ins, k, v);
    }
    for (Py_ssize_t k = 0; k < no; k++) {
        PyObject *o = PyTuple_GET_ITEM(outs_t, k);
        st_tensor *t = st_fe_unwrap(o);
        bool d = st_dtype_is_float(t->dtype);
        PyObject *v = d ? o : Py_None;
        Py_INCREF(v);
        PyTuple_SET_ITEM(diff, k, v);
        PyObject *shape = st_fe_shape_tuple(t->shape, t->ndim);
        PyObject *m = shape ? PyTuple_Pack(2, shape, st_fe_dtype_obj(t->dtype))
                            : NULL;
        Py_XDECREF(shape);
        if (!m)
            goto done;
        PyTuple_SET_ITEM(metas, k, m);
    }
    self = Py_BuildValue("(OOnO)", cls, ctx, na, metas);
    if (!self)
        goto done;
    fn = PyCFunction_New(&pl_eager_def, self);
    cm = PyImport_ImportModule("symtrace._C");
    PyObject *name = PyObject_GetAttrString(cls, "__name__");
    PyObject *nm = name ? PyUnicode_FromFormat("%UBackward", name) : NULL;
    Py_XDECREF(name);
    /* the ctx becomes the node (grad_fn), its backward this one */
    if (fn && cm && nm && PyObject_SetAttrString(ctx, "_st_backward", fn) == 0) {
        st_rt_trace_suspend();
        r = PyObject_CallMethod(cm, "_custom_node", "OOOO", nm, ctx, ins, diff);
        st_rt_trace_resume();
    }
    Py_XDECREF(nm);
    rc = r ? 0 : -1;
done:
    Py_XDECREF(r);
    Py_XDECREF(cm);
    Py_XDECREF(fn);
    Py_XDECREF(self);
    Py_XDECREF(ins);
    Py_XDECREF(diff);
    Py_XDECREF(metas);
    return rc;
}

/* Calls cls.<meth>(ctx, *args) with grad mode off; a backward also with
 * autocast off, as the tape's engine runs it eagerly. */
static PyObject *call_nograd(PyObject *cls, const char *meth, PyObject *ctx,
                             PyObject *args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *a = PyTuple_New(n + 1);
    if (!a)
        return NULL;
    Py_INCREF(ctx);
    PyTuple_SET_ITEM(a, 0, ctx);
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_INCREF(PyTuple_GET_ITEM(args, k));
        PyTuple_SET_ITEM(a, k + 1, PyTuple_GET_ITEM(args, k));
    }
    PyObject *f = PyObject_GetAttrString(cls, meth);
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    uint32_t ac = strcmp(meth, "backward") ? st_rt_autocast_state() : st_rt_autocast_swap(0);
    PyObject *r = f ? PyObject_CallObject(f, a) : NULL;
    st_rt_autocast_swap(ac);
    st_ad_set_grad_enabled(was);
    Py_XDECREF(f);
    Py_DECREF(a);
    return r;
}

/* ones_like(t), outside the trace and the tape. */
static PyObject *ones_like(st_tensor *t)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    a.dtype = t->dtype;
    if (st_dtype_is_float(t->dtype))
        a.f[0] = 1.0;
    else {
        a.flags = ST_ATTR_INT_VALUE;
        a.i[0] = 1;
    }
    st_operand in = {.t = t};
    st_tensor *r = NULL;
    bool was = st_ad_grad_enabled();
    st_ad_set_grad_enabled(false);
    st_rt_trace_suspend();
    int n = st_rt_eager(ST_OP_FULL, &in, 1, &a, NULL, &r);
    st_rt_trace_resume();
    st_ad_set_grad_enabled(was);
    return n == 1 ? st_fe_wrap(r) : st_fe_raise();
}

/* Fails the trace with "PyLayer <Cls>: what (exception text)". */
static void fail(PyObject *cls, const char *what)
{
    char buf[400];
    const char *name = ((PyTypeObject *)cls)->tp_name;
    PyObject *et = PyErr_Occurred();
    if (et) {
        snprintf(buf, sizeof buf, "%s: %s (%s raised)", name, what,
                 PyExceptionClass_Check(et) ? ((PyTypeObject *)et)->tp_name
                                            : "an exception");
        PyErr_Clear();
    } else {
        snprintf(buf, sizeof buf, "%s: %s", name, what);
    }
    st_rt_trace_region_cancel(buf);
}

static PyObject *trace_positional(PyObject *cls, PyObject *args);

/* symtrace.autograd._effects.<name>(cls) (the functions looked up once). */
static PyObject *effects_call(int which, PyObject *cls)
{
    static const char *const names[2] = {"globals_read", "side_effect"};
    static PyObject *fns[2];
    if (!fns[which]) {
        PyObject *m = PyImport_ImportModule("symtrace.autograd._effects");
        fns[which] = m ? PyObject_GetAttrString(m, names[which]) : NULL;
        Py_XDECREF(m);
        if (!fns[which])
            return NULL;
    }
    return PyObject_CallOneArg(fns[which], cls);
}

PyObject *st_fe_pylayer_globals_read(PyObject *cls)
{
    PyObject *r = effects_call(0, cls);
    if (r && !PyList_Check(r)) {
        Py_DECREF(r);
        return PyList_New(0);
    }
    return r;
}

PyObject *st_fe_pylayer_side_effect(PyObject *cls)
{
    PyObject *r = effects_call(1, cls);
    if (r && r != Py_None && !PyUnicode_Check(r)) {
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    return r;
}

PyObject *st_fe_trace_pylayer(PyObject *cls, PyObject *args, PyObject *kwargs)
{
    if (!st_rt_trace_active()) {
        PyObject *ap = PyObject_GetAttrString(cls, "apply");
        PyObject *r = ap ? PyObject_Call(ap, args, kwargs) : NULL;
        Py_XDECREF(ap);
        return r;
    }
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "st_fe_trace_pylayer: cls must be a class");
        return NULL;
    }
    if (kwargs && PyDict_Size(kwargs) > 0) {
        /* keywords go to forward's positions, as apply binds them */
        PyObject *mod = fn_module();
        PyObject *bind = mod ? PyObject_GetAttrString(mod, "_bind_for_trace") : NULL;
        PyObject *bound = bind ? PyObject_CallFunctionObjArgs(bind, cls, args, kwargs, NULL)
                               : NULL;
        Py_XDECREF(bind);
        Py_XDECREF(mod);
        if (!bound)
            return NULL;
        PyObject *r = trace_positional(cls, bound);
        Py_DECREF(bound);
        return r;
    }
    return trace_positional(cls, args);
}

PyObject *st_fe_trace_pylayer_apply(PyObject *cls, PyObject *args)
{
    if (!st_rt_trace_active() || !PyType_Check(cls))
        return st_fe_trace_pylayer(cls, args, NULL);
    /* Python side effects in forward/backward would happen at this capture
     * only: the trace fails (a graph break) and the Function runs eagerly,
     * on every call (symtrace/autograd/_effects.py; the translator checks
     * before its own calls, tr_calls.c: this is apply reached from code it
     * runs for real) */
    PyObject *why = st_fe_pylayer_side_effect(cls);
    if (!why)
        return NULL;
    if (why == Py_None) {
        Py_DECREF(why);
        return st_fe_trace_pylayer(cls, args, NULL);
    }
    char buf[400];
    snprintf(buf, sizeof buf, "PyLayer %s: Python side effect: %s",
             ((PyTypeObject *)cls)->tp_name, PyUnicode_AsUTF8(why));
    Py_DECREF(why);
    st_rt_trace_fail(buf);
    /* (suspended: apply takes its eager path, not this one again) */
    st_rt_trace_suspend();
    PyObject *ap = PyObject_GetAttrString(cls, "apply");
    PyObject *r = ap ? PyObject_CallObject(ap, args) : NULL;
    Py_XDECREF(ap);
    st_rt_trace_resume();
    return r;
}

/* st_fe_trace_pylayer with the arguments all positional. */
static PyObject *trace_positional(PyObject *cls, PyObject *args)
{
    PyObject *mod = fn_module();
    PyObject *mk = mod ? PyObject_GetAttrString(mod, "_backward_cls") : NULL;
    PyObject *ctx_cls = mk ? PyObject_CallOneArg(mk, cls) : NULL;
    PyObject *ctx = ctx_cls ? PyObject_CallNoArgs(ctx_cls) : NULL;
    Py_XDECREF(mod);
    Py_XDECREF(mk);
    Py_XDECREF(ctx_cls);
    if (!ctx)
        return NULL;
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    PyObject *nig = PyTuple_New(na);
    int nt = 0;
    for (Py_ssize_t k = 0; nig && k < na; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        bool t = st_fe_is_tensor(a);
        nt += t;
        PyTuple_SET_ITEM(nig, k, PyBool_FromLong(t && st_fe_unwrap(a)->requires_grad));
    }
    if (!nig || PyObject_SetAttrString(ctx, "needs_input_grad", nig) < 0) {
        Py_XDECREF(nig);
        Py_DECREF(ctx);
        return NULL;
    }
    Py_DECREF(nig);

    PyObject *outs = NULL, *outs_t = NULL, *gouts = NULL, *res = NULL;
    PyObject *keep = PyList_New(0);
    st_tensor **ins = NULL, **ots = NULL, **gts = NULL, **gins = NULL;
    int *pos = NULL;
    if (st_rt_trace_region_begin() != ST_OK) {
        st_err_clear();
        Py_XDECREF(keep);
        Py_DECREF(ctx);
        Py_RETURN_NONE; /* the trace is failed */
    }
    /* forward(ctx, *args), or forward(*args) then setup_context */
    outs = call_nograd(cls, "_forward_with_ctx", ctx, args);
    if (!outs) {
        st_rt_trace_region_cancel("forward raised");
        Py_XDECREF(keep);
        Py_DECREF(ctx);
        return NULL;
    }
    /* ctx.mark_dirty: an in-place forward is not captured (the trace fails;
     * the call runs as Python, its inputs put back first) */
    PyObject *dirty = PyObject_GetAttrString(ctx, "_dirty");
    int nd = dirty ? PyObject_IsTrue(dirty) : -1;
    Py_XDECREF(dirty);
    if (nd != 0) {
        fail(cls, "ctx.mark_dirty (a forward writing into its input) is not traced");
        Py_XDECREF(keep);
        Py_DECREF(ctx);
        PyErr_Clear();
        return outs;
    }
    bool single = !PyTuple_Check(outs);
    outs_t = single ? PyTuple_Pack(1, outs) : (Py_INCREF(outs), outs);
    Py_ssize_t no = outs_t ? PyTuple_GET_SIZE(outs_t) : 0;
    ins = calloc((size_t)(nt ? nt : 1), sizeof *ins);
    pos = calloc((size_t)(nt ? nt : 1), sizeof *pos);
    gins = calloc((size_t)(nt ? nt : 1), sizeof *gins);
    ots = calloc((size_t)(no ? no : 1), sizeof *ots);
    gts = calloc((size_t)(no ? no : 1), sizeof *gts);
    gouts = outs_t ? PyTuple_New(no) : NULL;
    if (!ins || !pos || !gins || !ots || !gts || !gouts || !keep) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        fail(cls, "out of memory");
        goto done;
    }
    for (Py_ssize_t k = 0, j = 0; k < na; k++)
        if (st_fe_is_tensor(PyTuple_GET_ITEM(args, k))) {
            pos[j] = (int)k;
            ins[j++] = st_fe_unwrap(PyTuple_GET_ITEM(args, k));
        }
    for (Py_ssize_t k = 0; k < no; k++) {
        PyObject *o = PyTuple_GET_ITEM(outs_t, k);
        if (!st_fe_is_tensor(o)) {
            fail(cls, "forward returned a non-tensor value");
            goto done;
        }
        ots[k] = st_fe_unwrap(o);
        PyObject *g = ones_like(ots[k]);
        if (!g) {
            fail(cls, "cannot make a placeholder gradient");
            goto done;
        }
        PyTuple_SET_ITEM(gouts, k, g);
        gts[k] = st_fe_unwrap(g);
    }
    if (st_rt_trace_region_backward(ins, nt, ots, (int)no, gts) != ST_OK) {
        fail(cls, st_err_msg());
        st_err_clear();
        goto done;
    }
    res = call_nograd(cls, "backward", ctx, gouts);
    if (!res) {
        fail(cls, "backward raised while traced");
        goto done;
    }
    if (!PyTuple_Check(res)) {
        PyObject *t = PyTuple_Pack(1, res);
        Py_SETREF(res, t);
        if (!res) {
            fail(cls, "out of memory");
            goto done;
        }
    }
    if (PyTuple_GET_SIZE(res) != na) {
        fail(cls, "backward returned an incorrect number of gradients");
        goto done;
    }
    for (int j = 0; j < nt; j++) {
        PyObject *g = PyTuple_GET_ITEM(res, pos[j]);
        if (g == Py_None)
            continue;
        if (!st_fe_is_tensor(g)) {
            fail(cls, "backward returned a gradient that is not a Tensor");
            goto done;
        }
        if (st_fe_unwrap(g)->dtype != ins[j]->dtype) {
            /* apply casts to the input's dtype: traced as a cast */
            bool was = st_ad_grad_enabled();
            st_ad_set_grad_enabled(false);
            PyObject *c = PyObject_CallMethod(g, "to", "O",
                                              st_fe_dtype_obj(ins[j]->dtype));
            st_ad_set_grad_enabled(was);
            if (!c || !st_fe_is_tensor(c)) {
                Py_XDECREF(c);
                fail(cls, "cannot cast a gradient");
                goto done;
            }
            int rc = PyList_Append(keep, c); /* alive until the end */
            Py_DECREF(c);
            if (rc < 0) {
                fail(cls, "out of memory");
                goto done;
            }
            g = c;
        }
        gins[j] = st_fe_unwrap(g);
    }
    if (st_rt_trace_region_end(gins, nt) != ST_OK)
        st_err_clear(); /* the trace is failed with the reason */
    else if (attach_eager(cls, ctx, args, outs_t) < 0)
        st_rt_trace_fail("PyLayer: cannot attach the eager tape node");
    PyErr_Clear();
done:
    free(ins);
    free(pos);
    free(gins);
    free(ots);
    free(gts);
    Py_XDECREF(gouts);
    Py_XDECREF(res);
    Py_XDECREF(keep);
    Py_XDECREF(outs_t);
    Py_DECREF(ctx);
    if (PyErr_Occurred())
        PyErr_Clear();
    return outs;
}
