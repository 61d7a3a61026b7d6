/* frontend/tr_checkpoint.c - symtrace.utils.checkpoint.checkpoint met by the
 * translator (a higher-order op, as TorchDynamo's): `function` is called
 * (inlined, as any user function) on the other arguments, and the trace
 * statements it records become an activation-checkpoint range of the graph
 * (tr_state.ckpt, st_ir_add_checkpoint at the end of the translation): the
 * backward graph recomputes what they made from the range's inputs instead
 * of keeping it (ir/backward.c). Random draws inside are kept, so a
 * dropout's mask in the backward is the forward's.
 *
 * The call is a graph break (checkpoint runs eagerly, as before) when eager
 * checkpoint would raise or behave differently from plain autograd: a
 * context_fn other than the default, a bad determinism_check, keyword
 * arguments or debug with use_reentrant=True, a reentrant call none of whose
 * tensor arguments requires grad (eager gives no parameter a gradient), a
 * function that is not callable, option values that are not plain
 * constants. A break inside `function` breaks at the call as well. Not
 * passing use_reentrant warns (UserWarning) as eager does, when the call is
 * translated. */
#include "tr_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const opt_names[] = {"use_reentrant", "preserve_rng_state", "context_fn",
                                        "determinism_check", "debug", "early_stop", NULL};

static const char warn_msg[] =
    "symtrace.utils.checkpoint: the use_reentrant parameter should be passed explicitly "
    "(torch.utils.checkpoint announces an exception for calls without it). "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.";

static int push_range(tr_state *s, int first, int end)
{
    if (s->nckpt == s->capckpt) {
        int nc = s->capckpt ? s->capckpt * 2 : 8;
        int *n = realloc(s->ckpt, sizeof(int) * 2 * (size_t)nc);
        if (!n)
            return tr_break(s, "out of memory");
        s->ckpt = n;
        s->capckpt = nc;
    }
    s->ckpt[2 * s->nckpt] = first;
    s->ckpt[2 * s->nckpt + 1] = end;
    s->nckpt++;
    return 0;
}

/* An option's value, guarded when it was read through a source. */
static int guard_opt(tr_state *s, tr_var *v)
{
    if (tr_is_lazy(v->v))
        return tr_lazy_plain_var(s, v);
    st_fe_src *vs = tr_var_src(s, v);
    if (vs && st_fe_guard_value(&s->guards, vs, v->v) < 0)
        return tr_break_exc(s, "guard");
    return 0;
}

static bool is_bool_or_none(PyObject *o)
{
    return o == Py_None || o == Py_True || o == Py_False;
}

int tr_checkpoint(tr_state *s, PyObject *fn, tr_var *args, int nargs, PyObject *kwnames,
                  tr_var *out)
{
    char qb[200];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - (int)nkw;
    tr_var *opt[6] = {0};
    int nfw = 0;   /* keyword arguments for function */
    for (Py_ssize_t j = 0; j < nkw; j++) {
        const char *nm = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j));
        if (!nm)
            return tr_break_exc(s, "checkpoint");
        int o = -1;
        for (int k = 0; opt_names[k]; k++)
            if (!strcmp(nm, opt_names[k]))
                o = k;
        if (o >= 0) {
            opt[o] = &args[npos + j];
            if (!opt[o]->v || opt[o]->it || opt[o]->aux != TR_AUX_NONE)
                return tr_break(s, "checkpoint: option %s is not a plain value", nm);
            if (guard_opt(s, opt[o]) < 0)
                return -1;
        } else {
            nfw++;
        }
    }
    if (npos < 1 || !args[0].v || args[0].it || !PyCallable_Check(args[0].v))
        return tr_break(s, "call to %s without a callable function (run eagerly)",
                        tr_qualname(fn, qb, sizeof qb));
    PyObject *ur = opt[0] ? opt[0]->v : Py_None;
    if (!is_bool_or_none(ur) || (opt[4] && !is_bool_or_none(opt[4]->v)))
        return tr_break(s, "checkpoint: use_reentrant/debug not a bool (run eagerly)");
    if (opt[2]) {
        PyObject *mod = PyImport_ImportModule("symtrace.utils.checkpoint");
        PyObject *noop = mod ? PyObject_GetAttrString(mod, "noop_context_fn") : NULL;
        Py_XDECREF(mod);
        Py_XDECREF(noop);
        if (!noop)
            return tr_break_exc(s, "checkpoint");
        if (opt[2]->v != noop)
            return tr_break(s, "checkpoint with a context_fn (run eagerly)");
    }
    if (opt[3]) {
        PyObject *d = opt[3]->v;
        if (!PyUnicode_Check(d) || (PyUnicode_CompareWithASCIIString(d, "default") &&
                                    PyUnicode_CompareWithASCIIString(d, "none")))
            return tr_break(s, "checkpoint: determinism_check not 'default' nor 'none' "
                            "(run eagerly)");
    }
    bool reentrant = ur != Py_False;
    if (reentrant) {
        if (nfw > 0 || (opt[4] && opt[4]->v == Py_True))
            return tr_break(s, "checkpoint(use_reentrant=True) with keyword arguments or "
                            "debug (run eagerly)");
        bool any = false;
        for (int i = 1; i < npos; i++)
            any |= args[i].v && st_fe_is_tensor(args[i].v) &&
                   st_fe_unwrap(args[i].v)->requires_grad;
        if (!any && st_ad_grad_enabled())
            return tr_break(s, "checkpoint(use_reentrant=True) with no input requiring "
                            "grad (run eagerly)");
    }
    if (ur == Py_None && PyErr_WarnEx(PyExc_UserWarning, warn_msg, 1) < 0)
        return tr_break_exc(s, "checkpoint warning");

    /* function(*args[1:npos], **other keywords) */
    tr_var *fa = calloc((size_t)nargs + 1, sizeof(tr_var));
    PyObject *fkw = nfw ? PyTuple_New(nfw) : NULL;
    if (!fa || (nfw && !fkw)) {
        free(fa);
        Py_XDECREF(fkw);
        return tr_break(s, "out of memory");
    }
    int n = 0;
    for (int i = 1; i < npos; i++)
        tr_var_copy(&fa[n++], &args[i]);
    for (Py_ssize_t j = 0, w = 0; j < nkw; j++) {
        if (&args[npos + j] == opt[0] || &args[npos + j] == opt[1] ||
            &args[npos + j] == opt[2] || &args[npos + j] == opt[3] ||
            &args[npos + j] == opt[4] || &args[npos + j] == opt[5])
            continue;
        PyTuple_SET_ITEM(fkw, w++, Py_NewRef(PyTuple_GET_ITEM(kwnames, j)));
        tr_var_copy(&fa[n++], &args[npos + j]);
    }
    st_graph *g = st_rt_trace_graph();
    int first = g ? g->nstmts : -1;
    /* a closure of symtrace's own (checkpoint_sequential's chunk) is
     * inlined too: a real call would read the modules it holds unsourced */
    PyObject *f0 = args[0].v;
    int rc = PyFunction_Check(f0) && ((PyFunctionObject *)f0)->func_closure &&
                     tr_fn_origin(f0) == 1
                 ? tr_inline(s, f0, fa, n, fkw, out)
                 : tr_call(s, &args[0], fa, n, fkw, out);
    for (int i = 0; i < n; i++)
        tr_var_clear(&fa[i]);
    free(fa);
    Py_XDECREF(fkw);
    if (rc < 0)
        return rc;
    g = st_rt_trace_graph();
    if (g && first >= 0 && g->nstmts > first && push_range(s, first, g->nstmts) < 0) {
        tr_var_clear(out);
        return -1;
    }
    return 0;
}

int tr_checkpoint_apply(tr_state *s, st_graph *g, const int *smap, int nsmap)
{
    for (int k = 0; k < s->nckpt; k++) {
        int a = s->ckpt[2 * k], e = s->ckpt[2 * k + 1];
        if (a < 0 || e > nsmap || a >= e)
            continue;
        /* the kept statements of [a, e): the final graph keeps their order */
        int fa = -1, fe = -1;
        for (int si = a; si < e; si++)
            if (smap[si] >= 0) {
                if (fa < 0)
                    fa = smap[si];
                fe = smap[si] + 1;
            }
        if (fa >= 0 && st_ir_add_checkpoint(g, fa, fe) < 0)
            return -1;
    }
    return 0;
}
