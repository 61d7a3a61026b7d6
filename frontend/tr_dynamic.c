/* frontend/tr_dynamic.c - dynamic shapes (symtrace.compile(dynamic=True),
 * SYMTRACE_DYNAMIC=1): one translated graph for every size of the frame's
 * tensor arguments.
 *
 * Symbols. A tensor read from the frame's arguments (a source chain of
 * locals and container items, not a Module's attribute) gets a symbol per
 * dim of size >= 2 (sizes 0 and 1 stay constants, as TorchDynamo's 0/1
 * specialization); its guard then checks rank, dtype, device, the constant
 * dims, sizes >= 2 and the kind of its layout (guards.c: contiguous, or a
 * transpose, or a slice of a fixed buffer, ... at any size) instead of the
 * exact shape and strides.
 * Sizes read in Python. x.shape, x.size(), x.size(d), x.numel() and len(x)
 * give SymInts (symtrace/_symint.py): ints with the real value whose
 * expression over the symbols the translator keeps. The dims of a tensor
 * computed by the graph are found by probing: the graph so far is
 * re-inferred (st_ir_reinfer) with the symbols set to two sets of distinct
 * primes, and each dim is matched to c * s_i * s_j ... or s_i + c.
 * Arithmetic (+ - * // % unary -) keeps expressions; a comparison adds a
 * guard on the relation (ST_G_SYM); any other use, and every call the
 * translator does not follow, specializes: the value becomes a guarded
 * constant.
 * Reshape targets and creation sizes. A SymInt passed to view, reshape,
 * expand, zeros/ones/full/empty/rand/randn or as a slice bound of a tensor
 * subscript makes that attribute of the recorded statement an expression
 * (the statement is found among those the call recorded by op and values);
 * so do the parts' sizes for the buffer and slice bounds of a cat.
 * The entry keeps the graph as a template with those expressions; a call
 * with other sizes instantiates it (clone, substitute, re-infer) and
 * compiles that instance, whose kernels come from the kernel cache
 * (kernels are specialized on dtype, rank and layout, never on sizes).
 * Before an entry is made the template is instantiated at both probe
 * points: a size-dependent attribute the translator could not explain
 * (a slice bound on a symbolic dim, a reshape target computed inside a
 * library function) fails there, and the frame is translated again
 * without dynamic shapes. */
#include "tr_dyn_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PyObject *st_fe_symint_cls;
PyObject *st_fe_lazy_cls[2];      /* LazyInt, LazyFloat */
uint64_t st_fe_dyn_instances;
static _Thread_local tr_state *cur;   /* the translation SymInts report to */
int64_t tr_dyn_primes[NPROBE][MAXSYM];

/* A size attribute of a statement of region r's backward graph (a
 * PyLayer's traced backward), as an expression (region_attrs). */
typedef struct {
    int region, stmt, slot, expr;
} rattr;

struct st_fe_dyn {
    st_graph *tmpl;              /* at the translation's sizes */
    symattr *attr;               /* statement indices of tmpl */
    int nattr;
    rattr *rattr;                /* tmpl's regions' backward graphs */
    int nrattr;
    int nin;
    int *in_expr;                /* per graph input, per dim: expr or -1 */
    /* compile options (owned copies) */
    const char *backend;
    bool *rg;
    int *wb_out, *wb_in, nwb, nvisible;
    bool *wb_quiet;
    /* instances by symbol values */
    int nsym, n;
    struct { int64_t *key; void *cfn; uint64_t used; } inst[16];
    uint64_t clock;
};

/* ---------------- expressions ---------------- */
int sx_new(st_fe_symtab *t, int op, int a, int b, int64_t c)
{
    if (t->nx == t->capx) {
        int nc = t->capx ? 2 * t->capx : 64;
        st_fe_sx *n = realloc(t->x, sizeof *n * (size_t)nc);
        if (!n)
            return -1;
        t->x = n;
        t->capx = nc;
    }
    t->x[t->nx] = (st_fe_sx){op, a, b, c};
    return t->nx++;
}

bool sx_is_const(const st_fe_symtab *t, int e)
{
    return e >= 0 && t->x[e].op == ST_SX_CONST;
}

int st_fe_sx_eval(const st_fe_symtab *t, int e, const int64_t *sym, int64_t *out)
{
    const st_fe_sx *x = &t->x[e];
    int64_t a = 0, b = 0;
    switch (x->op) {
    case ST_SX_CONST: *out = x->c; return 0;
    case ST_SX_SYM: *out = sym[x->c]; return 0;
    default: break;
    }
    if (st_fe_sx_eval(t, x->a, sym, &a) < 0)
        return -1;
    if (x->op != ST_SX_NEG && st_fe_sx_eval(t, x->b, sym, &b) < 0)
        return -1;
    switch (x->op) {
    case ST_SX_ADD: *out = a + b; return 0;
    case ST_SX_SUB: *out = a - b; return 0;
    case ST_SX_MUL: *out = a * b; return 0;
    case ST_SX_NEG: *out = -a; return 0;
    case ST_SX_FLOORDIV:
        if (!b) return -1;
        *out = floordiv(a, b);
        return 0;
    case ST_SX_MOD:
        if (!b) return -1;
        *out = a - floordiv(a, b) * b;
        return 0;
    }
    return -1;
}

static int sx_first_sym(const st_fe_symtab *t, int e)
{
    if (e < 0)
        return -1;
    const st_fe_sx *x = &t->x[e];
    if (x->op == ST_SX_SYM)
        return (int)x->c;
    if (x->op == ST_SX_CONST)
        return -1;
    int k = sx_first_sym(t, x->a);
    return k >= 0 || x->op == ST_SX_NEG ? k : sx_first_sym(t, x->b);
}

static bool sx_mentions(const st_fe_symtab *t, int e, int k)
{
    if (e < 0)
        return false;
    const st_fe_sx *x = &t->x[e];
    if (x->op == ST_SX_SYM)
        return x->c == k;
    if (x->op == ST_SX_CONST)
        return false;
    return sx_mentions(t, x->a, k) || (x->op != ST_SX_NEG && sx_mentions(t, x->b, k));
}

static void sx_str(const st_fe_symtab *t, int e, char *buf, size_t n)
{
    const st_fe_sx *x = &t->x[e];
    static const char *const ops[] = {"", "", "+", "-", "*", "//", "%", "-"};
    char a[100], b[100];
    switch (x->op) {
    case ST_SX_CONST: snprintf(buf, n, "%lld", (long long)x->c); return;
    case ST_SX_SYM: snprintf(buf, n, "s%lld", (long long)x->c); return;
    case ST_SX_NEG: sx_str(t, x->a, a, sizeof a); snprintf(buf, n, "-(%s)", a); return;
    }
    sx_str(t, x->a, a, sizeof a);
    sx_str(t, x->b, b, sizeof b);
    snprintf(buf, n, "(%s%s%s)", a, ops[x->op], b);
}

void st_fe_symtab_free(st_fe_symtab *t)
{
    if (!t)
        return;
    free(t->x);
    free(t->src);
    free(t->dim);
    free(t->val);
    free(t);
}

int st_fe_sym_values(const st_fe_symtab *t, const st_fe_frame *f, PyObject **memo,
                     int64_t *vals)
{
    for (int k = 0; k < t->nsym; k++) {
        PyObject *v = st_fe_src_eval(t->src[k], f, memo);
        if (!v)
            return PyErr_Occurred() ? -1 : 0;
        int ok;
        if (t->dim[k] < 0) {
            int ov = 0;
            ok = PyLong_CheckExact(v) && !PyBool_Check(v);
            if (ok)
                vals[k] = PyLong_AsLongLongAndOverflow(v, &ov);
            ok = ok && !ov;
        } else {
            ok = st_fe_is_tensor(v) && st_fe_unwrap(v)->ndim > t->dim[k];
            if (ok)
                vals[k] = st_fe_unwrap(v)->shape[t->dim[k]];
        }
        Py_DECREF(v);
        if (!ok)
            return 0;
    }
    return 1;
}

bool tr_dyn_rel_holds(int op, int64_t a, int64_t b)
{
    switch (op) {
    case ST_SXC_LT: return a < b;
    case ST_SXC_LE: return a <= b;
    case ST_SXC_EQ: return a == b;
    case ST_SXC_NE: return a != b;
    case ST_SXC_GT: return a > b;
    default: return a >= b;
    }
}

int st_fe_sym_guard_check(const st_fe_guardset *gs, const st_fe_guard *g,
                          const st_fe_frame *f, PyObject **memo)
{
    const st_fe_symtab *t = gs->sym;
    if (!t)
        return 0;
    int64_t small[MAXSYM], a, b;
    int r = st_fe_sym_values(t, f, memo, small);
    if (r <= 0)
        return r;
    if (st_fe_sx_eval(t, g->sx_a, small, &a) < 0 || st_fe_sx_eval(t, g->sx_b, small, &b) < 0)
        return 0;
    return tr_dyn_rel_holds(g->sx_op, a, b) == g->want;
}

/* The expression text e names the symbol pat ("s1"): as a whole name, not
 * the start of s10..s19. */
static bool names_symbol(const char *e, const char *pat)
{
    size_t n = strlen(pat);
    for (const char *p = strstr(e, pat); p; p = strstr(p + 1, pat)) {
        bool start = p == e || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if (start && !isdigit((unsigned char)p[n]))
            return true;
    }
    return false;
}

PyObject *st_fe_sym_guard_describe(const st_fe_guardset *gs, const st_fe_guard *g)
{
    static const char *const ops[] = {"<", "<=", "==", "!=", ">", ">="};
    char a[256], b[256];
    sx_str(gs->sym, g->sx_a, a, sizeof a);
    sx_str(gs->sym, g->sx_b, b, sizeof b);
    PyObject *names = PyUnicode_FromString("");
    for (int k = 0; names && k < gs->sym->nsym; k++) {
        char pat[16];
        snprintf(pat, sizeof pat, "s%d", k);
        if (!names_symbol(a, pat) && !names_symbol(b, pat))
            continue;
        PyObject *r = st_fe_src_repr(gs->sym->src[k]);
        PyObject *n = !r ? NULL : gs->sym->dim[k] < 0
            ? PyUnicode_FromFormat("%U%s%s=%U", names, PyUnicode_GET_LENGTH(names) ? ", " : "", pat, r)
            : PyUnicode_FromFormat("%U%s%s=%U.size(%d)", names,
                                   PyUnicode_GET_LENGTH(names) ? ", " : "", pat, r, gs->sym->dim[k]);
        Py_XDECREF(r);
        Py_SETREF(names, n);
    }
    if (!names)
        return NULL;
    PyObject *s = PyUnicode_FromFormat("SYMBOLIC_SHAPE: (%s %s %s) is %s  [%U]", a, ops[g->sx_op], b,
                                       g->want ? "True" : "False", names);
    Py_DECREF(names);
    return s;
}

/* ---------------- translation state ---------------- */
/* Probe values: primes from 1009 and 2003 for sizes; from 101 and 211 for
 * int arguments (indices and lengths into tensors of a few hundred: a
 * slice bound probed past its tensor's size would not hold). new_symbol
 * sets tr_dyn_primes[.][k] from the one its kind uses. */
static int64_t size_primes[NPROBE][MAXSYM], int_primes[NPROBE][MAXSYM];

static void fill_primes(int64_t out[NPROBE][MAXSYM], int64_t c0, int64_t c1)
{
    for (int p = 0; p < NPROBE; p++) {
        int64_t c = p ? c1 : c0;
        for (int k = 0; k < MAXSYM; c++) {
            bool pr = true;
            for (int64_t d = 2; d * d <= c && pr; d++)
                pr = c % d != 0;
            if (pr)
                out[p][k++] = c;
        }
    }
}

int tr_dyn_begin(tr_state *s, bool shapes)
{
    if (!size_primes[0][0]) {
        fill_primes(size_primes, 1009, 2003);
        fill_primes(int_primes, 101, 211);
        memcpy(tr_dyn_primes, size_primes, sizeof tr_dyn_primes);
    }
    s->dyn = calloc(1, sizeof *s->dyn);
    s->guards.sym = calloc(1, sizeof(st_fe_symtab));
    if (!s->dyn || !s->guards.sym)
        return -1;
    s->dyn->tsyms = PyDict_New();
    s->dyn->tkeep = PyList_New(0);
    s->dyn->symints = PyDict_New();
    s->dyn->srcmask = PyDict_New();
    if (!s->dyn->tsyms || !s->dyn->tkeep || !s->dyn->symints || !s->dyn->srcmask)
        return -1;
    s->dyn->shapes = shapes;
    s->dyn->rv = -1;
    return 0;
}

bool tr_dyn_shapes(tr_state *s)
{
    return s->dyn && s->dyn->shapes;
}

void tr_dyn_enter(tr_state *s, tr_state **prev)
{
    *prev = cur;
    cur = s;
}

void tr_dyn_leave(tr_state *prev)
{
    cur = prev;
}

void tr_dyn_end(tr_state *s)
{
    Py_CLEAR(s->lazies);
    if (!s->dyn)
        return;
    Py_XDECREF(s->dyn->tsyms);
    Py_XDECREF(s->dyn->tkeep);
    Py_XDECREF(s->dyn->symints);
    Py_XDECREF(s->dyn->srcmask);
    free(s->dyn->attr);
    free(s->dyn);
    s->dyn = NULL;
}

void dyn_fail(tr_state *s, const char *fmt, const char *arg)
{
    if (s->dyn->failed)
        return;
    s->dyn->failed = true;
    snprintf(s->dyn->why, sizeof s->dyn->why, fmt, arg ? arg : "");
}

static int expr_of(tr_state *s, PyObject *o)
{
    if (!s || !s->dyn || !o)
        return -1;
    if (st_fe_symint_cls && Py_TYPE(o) == (PyTypeObject *)st_fe_symint_cls) {
        PyObject *k = tr_id_key(o);
        PyObject *e = k ? PyDict_GetItem(s->dyn->symints, k) : NULL;
        Py_XDECREF(k);
        if (e)
            return (int)PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        int ov = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &ov);
        if (ov)
            return -1;
        return sx_new(tab(s), ST_SX_CONST, -1, -1, v);
    }
    return -1;
}

int tr_dyn_expr(tr_state *s, PyObject *o)
{
    return tr_is_symint(o) ? expr_of(s, o) : -1;
}

/* A SymInt of value v standing for e (a plain int for a constant). */
static PyObject *make_symint(tr_state *s, int64_t v, int e)
{
    if (e < 0 || sx_is_const(tab(s), e) || !st_fe_symint_cls)
        return PyLong_FromLongLong(v);
    PyObject *pv = PyLong_FromLongLong(v);
    PyObject *o = pv ? PyObject_CallOneArg(st_fe_symint_cls, pv) : NULL;
    Py_XDECREF(pv);
    if (!o)
        return NULL;
    PyObject *k = tr_id_key(o);
    PyObject *val = Py_BuildValue("(Oi)", o, e);
    if (!k || !val || PyDict_SetItem(s->dyn->symints, k, val) < 0) {
        Py_XDECREF(k);
        Py_XDECREF(val);
        Py_DECREF(o);
        return NULL;
    }
    Py_DECREF(k);
    Py_DECREF(val);
    return o;
}

int add_rel(tr_state *s, int a, int b, int op, bool want)
{
    st_fe_symtab *t = tab(s);
    int k = sx_first_sym(t, a);
    if (k < 0)
        k = sx_first_sym(t, b);
    if (k < 0)
        return 0;              /* constants: nothing to guard */
    for (int i = 0; i < s->guards.n; i++) {
        const st_fe_guard *g = &s->guards.v[i];
        if (g->kind == ST_G_SYM && g->sx_a == a && g->sx_b == b && g->sx_op == op)
            return 0;
    }
    if (s->guards.n == s->guards.cap) {
        int nc = s->guards.cap ? 2 * s->guards.cap : 16;
        st_fe_guard *n = realloc(s->guards.v, sizeof *n * (size_t)nc);
        if (!n) {
            PyErr_NoMemory();
            return -1;
        }
        s->guards.v = n;
        s->guards.cap = nc;
    }
    st_fe_guard *g = &s->guards.v[s->guards.n++];
    memset(g, 0, sizeof *g);
    g->kind = ST_G_SYM;
    g->src = t->src[k];
    g->sx_a = a;
    g->sx_b = b;
    g->sx_op = op;
    g->want = want;
    /* a bound (s + 1 <= 32): the probe values of its symbols within it */
    if (s->dyn && op != ST_SXC_EQ && op != ST_SXC_NE)
        for (int j = 0; j < t->nsym; j++)
            if (sx_mentions(t, a, j) || sx_mentions(t, b, j))
                tr_dyp_fit_probes(s, j);
    return 0;
}

/* Symbol k pinned (guarded to its value by the caller), with the symbols
 * aliased to the same one (duck sizing: guarded equal to it). */
void pin_class(tr_state *s, int k)
{
    st_fe_symtab *tb = tab(s);
    int r = s->dyn->alias[k] ? s->dyn->alias[k] - 1 : k;
    for (int j = 0; j < tb->nsym; j++)
        if (j == k || j == r || s->dyn->alias[j] == r + 1)
            s->dyn->pinned[j] = true;
}

/* Symbol k guarded to its value and pinned with its class. 0, -1 error. */
int pin_symbol(tr_state *s, int k)
{
    st_fe_symtab *tb = tab(s);
    int sy = tr_dyp_sym_expr_of(s, k), c = sx_new(tb, ST_SX_CONST, -1, -1, tb->val[k]);
    if (sy < 0 || c < 0 || add_rel(s, sy, c, ST_SXC_EQ, true) < 0)
        return -1;
    pin_class(s, k);
    return 0;
}

/* The plain int of a SymInt, its value guarded. New reference. */
static PyObject *specialize(tr_state *s, PyObject *o)
{
    int e = expr_of(s, o);
    int ov = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &ov);
    if (e >= 0 && !sx_is_const(tab(s), e)) {
        int c = sx_new(tab(s), ST_SX_CONST, -1, -1, v);
        if (c < 0 || add_rel(s, e, c, ST_SXC_EQ, true) < 0)
            return NULL;
        /* a size symbol guarded to its value is a constant for the probes
         * too (int(x.shape[2]) in library code keeping a dim static) */
        if (s->dyn && tab(s)->x[e].op == ST_SX_SYM)
            pin_class(s, (int)tab(s)->x[e].c);
    }
    return PyLong_FromLongLong(v);
}

/* ---------------- lazy number arguments ---------------- */
bool tr_is_lazy(PyObject *o)
{
    return o && ((st_fe_lazy_cls[0] && Py_TYPE(o) == (PyTypeObject *)st_fe_lazy_cls[0]) ||
                 (st_fe_lazy_cls[1] && Py_TYPE(o) == (PyTypeObject *)st_fe_lazy_cls[1]));
}

static PyObject *lazy_value(PyObject *o)
{
    return PyFloat_Check(o) ? PyFloat_FromDouble(PyFloat_AS_DOUBLE(o))
                            : PyLong_FromLongLong(PyLong_AsLongLong(o));
}

static int new_symbol(tr_state *s, st_fe_src *src, int dim, int64_t val);

/* An int frame argument under dynamic shapes (not 0 or 1, as sizes): a
 * free symbol, guarded to be an int >= 2; its uses the translator follows
 * (arithmetic, comparisons, slice bounds, shape arguments, a tensor
 * operand) keep its expression, every other use specializes it. NULL:
 * not one (the caller makes a lazy number), or an error set. */
static PyObject *int_arg_symbol(tr_state *s, PyObject *v, st_fe_src *src)
{
    if (!s->dyn || !s->dyn->shapes || !st_fe_symint_cls || !PyLong_CheckExact(v) ||
        src->kind != ST_SRC_LOCAL || src->base)
        return NULL;
    int ov = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &ov);
    if (ov || x < 2 || x > ((long long)1 << 40))
        return NULL;
    if (st_fe_guard_add(&s->guards, ST_G_TYPE, src, (PyObject *)&PyLong_Type) < 0)
        return NULL;
    int k = new_symbol(s, src, -1, x);
    if (k < 0)
        return NULL;
    s->dyn->intarg[k] = true;
    int e = sx_new(tab(s), ST_SX_SYM, -1, -1, k), two = sx_new(tab(s), ST_SX_CONST, -1, -1, 2);
    if (e < 0 || two < 0 || add_rel(s, e, two, ST_SXC_GE, true) < 0)
        return NULL;
    return make_symint(s, x, e);
}

PyObject *tr_lazy_make(tr_state *s, PyObject *v, st_fe_src *src)
{
    PyObject *si = int_arg_symbol(s, v, src);
    if (si || PyErr_Occurred()) {
        PyErr_Clear();
        if (si)
            return si;
    }
    bool fl = PyFloat_CheckExact(v);
    PyObject *cls = st_fe_lazy_cls[fl ? 1 : 0];
    if (!cls || !(fl || (PyLong_CheckExact(v) && !PyBool_Check(v))))
        return NULL;
    if (!fl) {
        int ov = 0;
        (void)PyLong_AsLongLongAndOverflow(v, &ov);
        if (ov)
            return NULL;
    }
    if (!s->lazies && !(s->lazies = PyDict_New()))
        return NULL;
    PyObject *o = PyObject_CallOneArg(cls, v);
    PyObject *k = o ? tr_id_key(o) : NULL;
    PyObject *e = k ? Py_BuildValue("(Oi)", o, src->id) : NULL;
    if (!e || PyDict_SetItem(s->lazies, k, e) < 0) {
        Py_XDECREF(o);
        o = NULL;
    }
    Py_XDECREF(k);
    Py_XDECREF(e);
    if (!o)
        PyErr_Clear();
    return o;
}

st_fe_src *tr_lazy_src(tr_state *s, PyObject *o)
{
    if (!s->lazies || !tr_is_lazy(o))
        return NULL;
    PyObject *k = tr_id_key(o);
    PyObject *e = k ? PyDict_GetItem(s->lazies, k) : NULL;
    Py_XDECREF(k);
    if (!e)
        return NULL;
    long id = PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
    return id >= 0 && id < s->srcs.n ? s->srcs.v[id] : NULL;
}

/* Its value, guarded on its source from now on. New reference. */
static PyObject *lazy_spec(tr_state *s, PyObject *o)
{
    PyObject *v = lazy_value(o);
    st_fe_src *src = s ? tr_lazy_src(s, o) : NULL;
    if (v && src && st_fe_guard_value(&s->guards, src, v) < 0)
        Py_CLEAR(v);
    return v;
}

static PyObject *py_lazy_spec(PyObject *m, PyObject *o)
{
    (void)m;
    if (!PyLong_Check(o) && !PyFloat_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "_lazy_spec takes a number");
        return NULL;
    }
    return lazy_spec(cur, o);
}

/* The values of lazy arguments and SymInts in o, no guard: what the
 * first call hands back to Python. New reference. */
PyObject *tr_plain_values(PyObject *o, int depth)
{
    if (tr_is_lazy(o) || tr_is_symint(o))
        return lazy_value(o);
    if (depth > 8 || !o)
        return Py_XNewRef(o);
    if (st_fe_tuple_like(o)) {   /* a Size stays one */
        Py_ssize_t n = PyTuple_GET_SIZE(o);
        PyObject *t = st_fe_is_size(o) ? st_fe_size_type.tp_alloc(&st_fe_size_type, n) : PyTuple_New(n);
        for (Py_ssize_t i = 0; t && i < n; i++) {
            PyObject *it = tr_plain_values(PyTuple_GET_ITEM(o, i), depth + 1);
            if (!it)
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i, it);
        }
        return t;
    }
    if (PyList_CheckExact(o)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++) {
            PyObject *it = PyList_GET_ITEM(o, i);
            if (tr_is_lazy(it) || tr_is_symint(it) || st_fe_tuple_like(it) || PyList_CheckExact(it)) {
                PyObject *p = tr_plain_values(it, depth + 1);
                if (!p)
                    return NULL;
                PyList_SetItem(o, i, p);
            }
        }
        return Py_NewRef(o);
    }
    if (PyDict_CheckExact(o)) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(o, &pos, &k, &v))
            if (tr_is_lazy(v) || tr_is_symint(v)) {
                PyObject *p = lazy_value(v);
                if (!p || PyDict_SetItem(o, k, p) < 0) {
                    Py_XDECREF(p);
                    return NULL;
                }
                Py_DECREF(p);
            }
        return Py_NewRef(o);
    }
    return Py_NewRef(o);
}

/* ---------------- SymInt's operations (_C._sym_*) ---------------- */
static int two_ints(PyObject *a, PyObject *b, long long *x, long long *y)
{
    int ov = 0;
    *x = PyLong_AsLongLongAndOverflow(a, &ov);
    *y = ov ? 0 : PyLong_AsLongLongAndOverflow(b, &ov);
    if (ov) {
        PyErr_SetString(PyExc_OverflowError, "symbolic size out of range");
        return -1;
    }
    return 0;
}

static PyObject *sym_op(PyObject *m, PyObject *args)
{
    (void)m;
    int op;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "iOO", &op, &a, &b))
        return NULL;
    tr_state *s = cur;
    if (!PyLong_Check(a) || !PyLong_Check(b) || PyBool_Check(a) || PyBool_Check(b)) {
        /* an int op with a float or another type: as the int's value */
        PyObject *pa = PyLong_Check(a) ? (s ? specialize(s, a) : PyNumber_Long(a)) : Py_NewRef(a);
        PyObject *pb = PyLong_Check(b) ? (s ? specialize(s, b) : PyNumber_Long(b)) : Py_NewRef(b);
        PyObject *r = NULL;
        if (pa && pb) {
            switch (op) {
            case 0: r = PyNumber_Add(pa, pb); break;
            case 1: r = PyNumber_Subtract(pa, pb); break;
            case 2: r = PyNumber_Multiply(pa, pb); break;
            case 3: r = PyNumber_FloorDivide(pa, pb); break;
            case 4: r = PyNumber_Remainder(pa, pb); break;
            default: r = PyNumber_Negative(pa); break;
            }
        }
        Py_XDECREF(pa);
        Py_XDECREF(pb);
        return r;
    }
    long long x, y;
    if (two_ints(a, b, &x, &y) < 0)
        return NULL;
    static const int sxop[] = {ST_SX_ADD, ST_SX_SUB, ST_SX_MUL, ST_SX_FLOORDIV, ST_SX_MOD, ST_SX_NEG};
    if (op < 0 || op > 5) {
        PyErr_SetString(PyExc_ValueError, "bad symbolic op");
        return NULL;
    }
    if ((op == 3 || op == 4) && y == 0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "integer division or modulo by zero");
        return NULL;
    }
    int64_t v = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y :
                op == 3 ? floordiv(x, y) : op == 4 ? x - floordiv(x, y) * y : -x;
    if (!s || !s->dyn)
        return PyLong_FromLongLong(v);
    int ea = expr_of(s, a), eb = op == 5 ? -1 : expr_of(s, b);
    if (ea < 0 || (op != 5 && eb < 0))
        return PyLong_FromLongLong(v);
    if (sx_is_const(tab(s), ea) && (op == 5 || sx_is_const(tab(s), eb)))
        return PyLong_FromLongLong(v);
    int e = sx_new(tab(s), sxop[op], ea, eb, 0);
    if (e < 0)
        return PyErr_NoMemory();
    return make_symint(s, v, e);
}

static PyObject *sym_cmp(PyObject *m, PyObject *args)
{
    (void)m;
    int op;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "iOO", &op, &a, &b))
        return NULL;
    tr_state *s = cur;
    static const int pyop[] = {Py_LT, Py_LE, Py_EQ, Py_NE, Py_GT, Py_GE};
    if (op < 0 || op > 5) {
        PyErr_SetString(PyExc_ValueError, "bad symbolic comparison");
        return NULL;
    }
    if (!PyLong_Check(b) || PyBool_Check(b)) {
        PyObject *pa = s ? specialize(s, a) : PyNumber_Long(a);
        PyObject *r = pa ? PyObject_RichCompare(pa, b, pyop[op]) : NULL;
        Py_XDECREF(pa);
        return r;
    }
    long long x, y;
    if (two_ints(a, b, &x, &y) < 0)
        return NULL;
    bool r = tr_dyn_rel_holds(op, x, y);
    if (s && s->dyn) {
        int ea = expr_of(s, a), eb = expr_of(s, b);
        if (ea >= 0 && eb >= 0 && add_rel(s, ea, eb, op, r) < 0)
            return NULL;
    }
    return PyBool_FromLong(r);
}

static PyObject *sym_spec(PyObject *m, PyObject *o)
{
    (void)m;
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "_sym_spec takes an int");
        return NULL;
    }
    if (cur && cur->dyn)
        return specialize(cur, o);
    int ov = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &ov);
    return PyLong_FromLongLong(v);
}

static PyObject *set_symint(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *cls, *li, *lf;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &cls, &PyType_Type, &li, &PyType_Type, &lf))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)cls, &PyLong_Type) ||
        !PyType_IsSubtype((PyTypeObject *)li, &PyLong_Type) ||
        !PyType_IsSubtype((PyTypeObject *)lf, &PyFloat_Type)) {
        PyErr_SetString(PyExc_TypeError, "_fe_set_symint(SymInt, LazyInt, LazyFloat)");
        return NULL;
    }
    Py_XSETREF(st_fe_symint_cls, Py_NewRef(cls));
    Py_XSETREF(st_fe_lazy_cls[0], Py_NewRef(li));
    Py_XSETREF(st_fe_lazy_cls[1], Py_NewRef(lf));
    Py_RETURN_NONE;
}

/* Every SymInt in o (tuples, lists, dicts, slices, deep) specialized: a
 * new reference (o itself when it holds none). */
static PyObject *plain_impl(tr_state *s, PyObject *o, int depth, bool syms);

PyObject *tr_dyn_plain(tr_state *s, PyObject *o, int depth)
{
    return plain_impl(s, o, depth, true);
}

int tr_lazy_plain_var(tr_state *s, tr_var *v)
{
    if (!s->lazies || !v->v)
        return 0;
    PyObject *p = plain_impl(s, v->v, 0, false);
    if (!p)
        return tr_break_exc(s, "lazy argument");
    Py_SETREF(v->v, p);
    return 0;
}

static PyObject *plain_impl(tr_state *s, PyObject *o, int depth, bool syms)
{
    if ((!s->dyn && !s->lazies) || !o)
        return Py_XNewRef(o);
    if (tr_is_lazy(o))
        return lazy_spec(s, o);
    if (tr_is_symint(o))
        return !syms ? Py_NewRef(o) : s->dyn ? specialize(s, o) : lazy_value(o);
    if (depth > 8)
        return Py_NewRef(o);
    if (PySlice_Check(o)) {
        PySliceObject *sl = (PySliceObject *)o;
        PyObject *a = plain_impl(s, sl->start, depth + 1, syms), *b = plain_impl(s, sl->stop, depth + 1, syms),
                 *c = plain_impl(s, sl->step, depth + 1, syms);
        PyObject *r = a && b && c ? PySlice_New(a, b, c) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return r;
    }
    if (st_fe_tuple_like(o) || PyList_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        bool any = false;
        PyObject *items = PyList_New(n);
        if (!items)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(o, i);
            PyObject *p = plain_impl(s, it, depth + 1, syms);
            if (!p) {
                Py_DECREF(items);
                return NULL;
            }
            any |= p != it;
            PyList_SET_ITEM(items, i, p);
        }
        if (!any || PyList_CheckExact(o)) {
            /* a list keeps its identity; its items are replaced in place */
            if (any)
                for (Py_ssize_t i = 0; i < n; i++)
                    PyList_SetItem(o, i, Py_NewRef(PyList_GET_ITEM(items, i)));
            Py_DECREF(items);
            return Py_NewRef(o);
        }
        PyObject *t = PyList_AsTuple(items);
        Py_DECREF(items);
        if (t && st_fe_is_size(o))   /* a Size stays one */
            Py_SETREF(t, st_fe_size_from_tuple(t));
        return t;
    }
    if (PyDict_CheckExact(o)) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {
            if (!tr_is_symint(v) && !tr_is_lazy(v) && !PyTuple_Check(v) && !PyList_Check(v))
                continue;
            PyObject *p = plain_impl(s, v, depth + 1, syms);
            if (!p)
                return NULL;
            /* a new value for a key it has: no resize, the walk goes on (a
             * restart here looped forever on a list value, which comes back
             * as itself: d.setdefault("k", []).append(x)) */
            int rc = p != v ? PyDict_SetItem(o, k, p) : 0;
            Py_DECREF(p);
            if (rc < 0)
                return NULL;
        }
        return Py_NewRef(o);
    }
    return Py_NewRef(o);
}

/* SymInts in o (tuples and lists, one level) as their values, without a
 * guard: for shape arguments whose expressions are attached afterwards
 * (or guarded then). New reference. */
static PyObject *values_of(tr_state *s, PyObject *o)
{
    if (tr_is_lazy(o))
        return lazy_spec(s, o);
    if (tr_is_symint(o))
        return PyLong_FromLongLong(PyLong_AsLongLong(o));
    if (PyTuple_Check(o) || PyList_Check(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject *r = PyTuple_Check(o) ? PyTuple_New(n) : PyList_New(n);
        for (Py_ssize_t i = 0; r && i < n; i++) {
            PyObject *it = values_of(s, PySequence_Fast_GET_ITEM(o, i));
            if (!it) {
                Py_CLEAR(r);
                break;
            }
            if (PyTuple_Check(r)) PyTuple_SET_ITEM(r, i, it);
            else PyList_SET_ITEM(r, i, it);
        }
        return r;
    }
    return Py_NewRef(o);
}

int tr_dyn_plain_var(tr_state *s, tr_var *v)
{
    if ((!s->dyn && !s->lazies) || !v->v)
        return 0;
    PyObject *p = tr_dyn_plain(s, v->v, 0);
    if (!p)
        return tr_break_exc(s, "dynamic shapes");
    Py_SETREF(v->v, p);
    return 0;
}

/* ---------------- symbols ---------------- */
static int new_symbol(tr_state *s, st_fe_src *src, int dim, int64_t val)
{
    st_fe_symtab *tb = tab(s);
    if (tb->nsym >= MAXSYM)
        return -1;
    if (tb->nsym == tb->capsym) {
        int nc = tb->capsym ? 2 * tb->capsym : 16;
        st_fe_src **ns = realloc(tb->src, sizeof *ns * (size_t)nc);
        if (ns) tb->src = ns;
        int *nd = realloc(tb->dim, sizeof *nd * (size_t)nc);
        if (nd) tb->dim = nd;
        int64_t *nv = realloc(tb->val, sizeof *nv * (size_t)nc);
        if (nv) tb->val = nv;
        if (!ns || !nd || !nv)
            return -1;
        tb->capsym = nc;
    }
    for (int p = 0; p < NPROBE; p++)
        tr_dyn_primes[p][tb->nsym] = dim < 0 ? int_primes[p][tb->nsym] : size_primes[p][tb->nsym];
    tb->src[tb->nsym] = src;
    tb->dim[tb->nsym] = dim;
    tb->val[tb->nsym] = val;
    return tb->nsym++;
}

/* An int read from an attribute or a global: a symbol of its value, so
 * that arithmetic on it (self.step += 1) and storing or returning the
 * result stay expressions read on every call, and only uses of the value
 * guard it. 1 made (out set, v stolen), 0 not (v untouched), -1 break. */
int tr_value_symbol(tr_state *s, tr_var *out, PyObject *v, st_fe_src *src)
{
    if (!s->dyn || !st_fe_symint_cls || !PyLong_CheckExact(v) || PyBool_Check(v) ||
        !(src->kind == ST_SRC_ATTR || src->kind == ST_SRC_GLOBAL))
        return 0;
    int ov = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &ov);
    if (ov)
        return 0;
    /* the symbol is read as an int on every call (a live value at a
     * break, a returned one): its type is guarded even where no relation
     * on its value is (G['n'] = Mode.B after n = 1) */
    if (st_fe_guard_add(&s->guards, ST_G_TYPE, src, (PyObject *)&PyLong_Type) < 0)
        return tr_break_exc(s, "guard");
    int k = new_symbol(s, src, -1, x);
    if (k < 0)
        return 0;
    s->dyn->pinned[k] = true;     /* a constant for probing sizes */
    int e = sx_new(tab(s), ST_SX_SYM, -1, -1, k);
    PyObject *o = e >= 0 ? make_symint(s, x, e) : NULL;
    if (!o)
        return tr_break_exc(s, "symbolic int");
    memset(out, 0, sizeof *out);
    out->v = o;
    out->src = src;
    Py_DECREF(v);
    return 1;
}

/* e with its value symbols replaced by their values, each guarded: what a
 * size expression may hold (a statement attribute is a function of sizes
 * only). */
static int fold_values(tr_state *s, int e)
{
    st_fe_symtab *tb = tab(s);
    if (e < 0)
        return e;
    st_fe_sx x = tb->x[e];
    if (x.op == ST_SX_CONST)
        return e;
    if (x.op == ST_SX_SYM) {
        if (tb->dim[x.c] >= 0 || (s->dyn->intarg[x.c] && !s->dyn->pinned[x.c]))
            return e;
        int c = sx_new(tb, ST_SX_CONST, -1, -1, tb->val[x.c]);
        if (c < 0 || add_rel(s, e, c, ST_SXC_EQ, true) < 0)
            return -1;
        return c;
    }
    int a = fold_values(s, x.a), b = x.op == ST_SX_NEG ? -1 : fold_values(s, x.b);
    if (a < 0 || (x.op != ST_SX_NEG && b < 0))
        return -1;
    if (a == x.a && b == x.b)
        return e;
    return sx_new(tb, x.op, a, b, 0);
}

/* ---------------- symbols of tensors ---------------- */
static bool dyn_source(const st_fe_src *src)
{
    for (; src; src = src->base)
        if (src->kind == ST_SRC_LOCAL)
            return true;
        else if (src->kind != ST_SRC_ITEM)
            return false;
    return false;
}

int tr_dyn_source(tr_state *s, PyObject *v, st_fe_src *src)
{
    if (!s->dyn || !s->dyn->shapes || !st_fe_is_tensor(v) || !dyn_source(src))
        return 0;
    st_tensor *t = st_fe_unwrap(v);
    PyObject *k = tr_id_key(t);
    if (!k)
        return tr_break_exc(s, "dynamic shapes");
    if (PyDict_Contains(s->dyn->tsyms, k)) {
        Py_DECREF(k);
        return 0;
    }
    st_fe_symtab *tb = tab(s);
    PyObject *ex = PyTuple_New(t->ndim);
    uint32_t mask = 0;
    for (int d = 0; ex && d < t->ndim; d++) {
        int e;
        if (t->shape[d] >= 2 && tb->nsym < MAXSYM) {
            /* a symbol of its own, also where the size equals another's:
             * duck sizing (TorchDynamo's default: one symbol, guarded
             * equal) only where the graph needs it (repair), so that a
             * batch of 16 next to a hidden size of 16 stays symbolic */
            int kk = new_symbol(s, src, d, t->shape[d]);
            if (kk < 0) {
                Py_DECREF(ex);
                Py_DECREF(k);
                return tr_break(s, "out of memory");
            }
            e = sx_new(tb, ST_SX_SYM, -1, -1, kk);
            if (e < 0) {
                Py_DECREF(ex);
                Py_DECREF(k);
                return tr_break(s, "out of memory");
            }
            mask |= 1u << d;
        } else {
            e = sx_new(tb, ST_SX_CONST, -1, -1, t->shape[d]);
        }
        PyTuple_SET_ITEM(ex, d, PyLong_FromLong(e));
    }
    PyObject *sk = PyLong_FromLong(src->id), *mk = PyLong_FromUnsignedLong(mask);
    int rc = ex && sk && mk && PyDict_SetItem(s->dyn->tsyms, k, ex) == 0 &&
             (!mask || PyDict_SetItem(s->dyn->srcmask, sk, mk) == 0) ? 0 : -1;
    Py_XDECREF(ex);
    Py_XDECREF(sk);
    Py_XDECREF(mk);
    Py_DECREF(k);
    return rc < 0 ? tr_break_exc(s, "dynamic shapes") : 0;
}

static void tkeep_release(PyObject *cap)
{
    st_tensor_decref(PyCapsule_GetPointer(cap, "symtrace.tkeep"));
}

static PyObject *dims_of(tr_state *s, st_tensor *t)
{
    PyObject *k = tr_id_key(t);
    if (!k)
        return NULL;
    PyObject *ex = PyDict_GetItem(s->dyn->tsyms, k);
    if (ex) {
        Py_DECREF(k);
        return ex;
    }
    int v = st_rt_trace_find(t);
    int64_t pr[NPROBE][ST_MAX_DIMS];
    int nd = 0;
    bool probed = v >= 0 && tab(s)->nsym > 0 && tr_dyp_probe(s, v, pr, &nd) == 0 && nd == t->ndim;
    for (int d = 0, tries = 0; probed && d < t->ndim && tries < 4; d++) {
        int64_t r[NPROBE] = {pr[0][d], pr[1][d]};
        s->dyn->rv = v;
        s->dyn->rd = d;
        int e = tr_dyp_recover(s, t->shape[d], r);
        s->dyn->rv = -1;
        if (e >= 0 || tr_dyp_pin_involved(s, v, d, t->shape[d]) == 0)
            continue;
        /* pinned what it depends on: probed again */
        tries++;
        d = -1;
        probed = tr_dyp_probe(s, v, pr, &nd) == 0 && nd == t->ndim;
    }
    ex = PyTuple_New(t->ndim);
    for (int d = 0; ex && d < t->ndim; d++) {
        int e = -1;
        if (probed) {
            int64_t r[NPROBE] = {pr[0][d], pr[1][d]};
            s->dyn->rv = v;
            s->dyn->rd = d;
            e = tr_dyp_recover(s, t->shape[d], r);
            s->dyn->rv = -1;
            if (e < 0) {
                char b[64];
                snprintf(b, sizeof b, "%lld", (long long)t->shape[d]);
                dyn_fail(s, "a size (%s) that is not a product of input sizes", b);
            }
        }
        if (e < 0)
            e = sx_new(tab(s), ST_SX_CONST, -1, -1, t->shape[d]);
        PyTuple_SET_ITEM(ex, d, PyLong_FromLong(e));
    }
    if (!ex || PyDict_SetItem(s->dyn->tsyms, k, ex) < 0) {
        Py_XDECREF(ex);
        Py_DECREF(k);
        return NULL;
    }
    Py_DECREF(k);
    Py_DECREF(ex);
    /* the entry is keyed by t's address: t stays alive while it is there */
    PyObject *cap = PyCapsule_New(t, "symtrace.tkeep", tkeep_release);
    if (cap)
        st_tensor_incref(t);
    if (!cap || PyList_Append(s->dyn->tkeep, cap) < 0) {
        /* (the entry goes: nothing holds t for it) */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        Py_XDECREF(cap);
        PyObject *k2 = tr_id_key(t);
        if (!k2 || PyDict_DelItem(s->dyn->tsyms, k2) < 0)
            PyErr_Clear();
        Py_XDECREF(k2);
        PyErr_Restore(et, ev, tb);
        return NULL;
    }
    Py_DECREF(cap);
    return ex;
}

/* t's dims are the expressions ex (a tuple of expression ids), known
 * without probing: recorded, t kept alive while its address keys them.
 * 0, -1 (a Python error set). */
static int set_dims(tr_state *s, st_tensor *t, PyObject *ex)
{
    PyObject *k = tr_id_key(t);
    PyObject *cap = k ? PyCapsule_New(t, "symtrace.tkeep", tkeep_release) : NULL;
    if (cap)
        st_tensor_incref(t);
    int rc = cap && PyDict_SetItem(s->dyn->tsyms, k, ex) == 0 &&
             PyList_Append(s->dyn->tkeep, cap) == 0 ? 0 : -1;
    if (rc < 0 && k && PyDict_Contains(s->dyn->tsyms, k) == 1) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (PyDict_DelItem(s->dyn->tsyms, k) < 0)
            PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    Py_XDECREF(cap);
    Py_XDECREF(k);
    return rc;
}

static int dim_expr(tr_state *s, st_tensor *t, int d)
{
    PyObject *ex = dims_of(s, t);
    if (!ex || d < 0 || d >= PyTuple_GET_SIZE(ex))
        return -1;
    return (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d));
}

/* ---------------- sizes read in Python ---------------- */
/* what: 0 a shape tuple, 1 size(dim) (dim given), 2 numel. Steals r. */
PyObject *tr_dyn_wrap_size(tr_state *s, PyObject *tensor, PyObject *r, int what, int dim)
{
    if (!s->dyn || !s->dyn->shapes || !r || !st_fe_is_tensor(tensor))
        return r;
    st_tensor *t = st_fe_unwrap(tensor);
    if (what == 0 && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == t->ndim) {
        PyObject *ex = dims_of(s, t);
        if (!ex)
            goto fail;
        PyObject *n = st_fe_is_size(r) ? st_fe_size_type.tp_alloc(&st_fe_size_type, t->ndim)
                                       : PyTuple_New(t->ndim);   /* a Size of SymInts */
        for (int d = 0; n && d < t->ndim; d++) {
            PyObject *it = make_symint(s, t->shape[d], (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d)));
            if (!it)
                Py_CLEAR(n);
            else
                PyTuple_SET_ITEM(n, d, it);
        }
        if (!n)
            goto fail;
        Py_DECREF(r);
        return n;
    }
    if (what == 1 && PyLong_Check(r)) {
        if (dim < 0)
            dim += t->ndim;
        int e = dim_expr(s, t, dim);
        if (e < 0)
            return r;
        PyObject *n = make_symint(s, PyLong_AsLongLong(r), e);
        if (!n)
            goto fail;
        Py_DECREF(r);
        return n;
    }
    if (what == 2 && PyLong_Check(r)) {
        PyObject *ex = dims_of(s, t);
        if (!ex)
            goto fail;
        int e = -1;
        for (int d = 0; d < t->ndim; d++) {
            int x = (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d));
            e = e < 0 ? x : sx_new(tab(s), ST_SX_MUL, e, x, 0);
        }
        PyObject *n = e >= 0 ? make_symint(s, PyLong_AsLongLong(r), e) : Py_NewRef(r);
        if (!n)
            goto fail;
        Py_DECREF(r);
        return n;
    }
    return r;
fail:
    Py_DECREF(r);
    return NULL;
}

/* ---------------- sizes as tensor operands ---------------- */
/* A tensor op with a size (x * x.shape[0], x.sum() / x.numel(), x < n;
 * op: the binary op's base index, tr_exec.c binop, or -1 for a
 * comparison): the SymInt operand becomes a
 * 0-d tensor of the graph whose value follows the sizes (ones of that
 * many, summed: symtrace/_ops/creation.py _size_tensor), so that the op
 * does not make the size a guarded constant. 1 replaced, 0 left as it is
 * (check_operands specializes it), -1 break. */
int tr_dyn_size_operand(tr_state *s, int op, tr_var *a, tr_var *b)
{
    if (!tr_dyn_shapes(s) || !a->v || !b->v ||
        !(op == -1 || op == 0 || op == 2 || op == 5 || op == 6 || op == 10 || op == 11))
        return 0;
    tr_var *v = tr_is_symint(a->v) && st_fe_is_tensor(b->v) ? a
              : tr_is_symint(b->v) && st_fe_is_tensor(a->v) ? b : NULL;
    if (!v)
        return 0;
    int e = expr_of(s, v->v);
    if (e < 0 || sx_is_const(tab(s), e))
        return 0;
    /* n ones need 0 <= n and n <= 2 ** 24 (exact in float32, and not a
     * huge buffer): guarded. An int argument's expression can be negative
     * (n0 - n2 at n0 < n2): then -(-n ones, summed), guarded -2 ** 24 <=
     * n < 0, so that each sign is one graph. Outside, the value is a
     * guarded constant. */
    const int64_t lim = (int64_t)1 << 24;
    int64_t val = PyLong_AsLongLong(v->v);
    if (val < -lim || val > lim)
        return 0;
    bool neg = val < 0;
    st_fe_symtab *tb = tab(s);
    int ng = s->guards.n;
    if (add_rel(s, e, sx_new(tb, ST_SX_CONST, -1, -1, neg ? -1 : 0),
                neg ? ST_SXC_LE : ST_SXC_GE, true) < 0 ||
        add_rel(s, e, sx_new(tb, ST_SX_CONST, -1, -1, neg ? -lim : lim),
                neg ? ST_SXC_GE : ST_SXC_LE, true) < 0)
        return tr_break_exc(s, "dynamic shapes");
    /* below 0 the guard bounds the symbols from above (n1 - 3 < 0): where
     * no probe values fit it (n1 < 3: the probes are primes from 3) the
     * graph could not be probed, and the value stays a guarded constant */
    for (int p = 0; neg && p < NPROBE; p++) {
        int64_t pv[MAXSYM], x;
        tr_dyp_probe_vals(s, p, pv);
        if (st_fe_sx_eval(tb, e, pv, &x) < 0 || x > -1 || x < -lim) {
            s->guards.n = ng;    /* (symbolic guards own nothing) */
            return 0;
        }
    }
    static PyObject *fn, *negfn;
    if (!fn) {
        PyObject *m = PyImport_ImportModule("symtrace._ops.creation");
        fn = m ? PyObject_GetAttrString(m, "_size_tensor") : NULL;
        Py_XDECREF(m);
        if (!fn)
            return tr_break_exc(s, "dynamic shapes");
    }
    if (neg && !negfn) {
        PyObject *m = PyImport_ImportModule("symtrace");
        negfn = m ? PyObject_GetAttrString(m, "neg") : NULL;
        Py_XDECREF(m);
        if (!negfn)
            return tr_break_exc(s, "dynamic shapes");
    }
    tr_var args[2] = {{0}}, out = {0};
    if (neg) {
        int ne = sx_new(tb, ST_SX_NEG, e, -1, 0);
        args[0].v = ne < 0 ? NULL : make_symint(s, -val, ne);
        if (!args[0].v)
            return ne < 0 ? tr_break(s, "out of memory") : -1;
    } else {
        tr_var_copy(&args[0], v);
    }
    tr_var_copy(&args[1], v == a ? b : a);
    s->lib_inline++;
    int rc = tr_inline(s, fn, args, 2, NULL, &out);
    if (rc >= 0 && neg && out.v && st_fe_is_tensor(out.v)) {
        tr_var pos = out;
        out = (tr_var){0};
        rc = tr_inline(s, negfn, &pos, 1, NULL, &out);
        tr_var_clear(&pos);
    }
    s->lib_inline--;
    tr_var_clear(&args[0]);
    tr_var_clear(&args[1]);
    if (rc < 0)
        return -1;
    if (!out.v || !st_fe_is_tensor(out.v)) {
        tr_var_clear(&out);
        return 0;
    }
    tr_var_clear(v);
    *v = out;
    return 1;
}

/* ---------------- calls ---------------- */
static PyObject *symtrace_fn(const char *name)
{
    PyObject *m = PyImport_AddModule("symtrace");   /* borrowed */
    PyObject *f = m ? PyObject_GetAttrString(m, name) : NULL;
    if (!f)
        PyErr_Clear();
    Py_XDECREF(f);                                   /* the module keeps it */
    return f;
}

static bool has_attr(const symattr *a, int n, int stmt, int slot);

static int push_attr(tr_state *s, int stmt, int slot, int expr)
{
    struct tr_dyn *d = s->dyn;
    if (d->nattr == d->capattr) {
        int nc = d->capattr ? 2 * d->capattr : 32;
        symattr *n = realloc(d->attr, sizeof *n * (size_t)nc);
        if (!n)
            return -1;
        d->attr = n;
        d->capattr = nc;
    }
    d->attr[d->nattr++] = (symattr){stmt, slot, expr};
    return 0;
}

/* Which call this is: 1 a shape-taking one (items: its shape arguments),
 * 2 size(), 3 numel(), 4 len(tensor), 6 arange, 7 cat (shape: the
 * tensors), 0 any other. */
static int classify(PyObject *fn, tr_var *args, int nargs, PyObject *kwnames,
                    PyObject **tensor, PyObject **shape, int *keep_lo, int *keep_hi)
{
    *tensor = NULL;
    *shape = NULL;
    *keep_lo = *keep_hi = 0;
    int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
    if ((fn == (PyObject *)&PyTuple_Type || fn == (PyObject *)&PyList_Type) && nargs == 1 &&
        (PyTuple_Check(args[0].v) || PyList_Check(args[0].v))) {
        *keep_hi = 1;            /* tuple(x.shape): the sizes stay symbolic */
        return 5;
    }
    if (fn == (PyObject *)&PySlice_Type && !kwnames && nargs >= 1 && nargs <= 3)
        return 5;                /* slice(a, b): its bounds stay symbolic (a subscript's) */
    if (PyCFunction_Check(fn)) {
        PyObject *self = PyCFunction_GET_SELF(fn);
        const char *nm = ((PyCFunctionObject *)fn)->m_ml->ml_name;
        if (self && st_fe_is_tensor(self)) {
            *tensor = self;
            if (!strcmp(nm, "size") && npos <= 1 && !kwnames) return 2;
            if (!strcmp(nm, "numel") && npos == 0) return 3;
            if (!strcmp(nm, "_slice") && !kwnames && (npos == 3 || npos == 4) &&
                (npos == 3 || (PyLong_Check(args[3].v) && !PyBool_Check(args[3].v) &&
                               PyLong_AsLongLong(args[3].v) >= 1)))
                return 8;        /* split's pieces, conv's windows: the bounds stay
                                    symbolic (slice_after); the step a constant */
            if ((!strcmp(nm, "view") || !strcmp(nm, "reshape") || !strcmp(nm, "expand")) &&
                !kwnames && npos >= 1) {
                *keep_hi = npos;
                *shape = npos == 1 && (PyTuple_Check(args[0].v) || PyList_Check(args[0].v))
                         ? Py_NewRef(args[0].v) : NULL;
                if (!*shape) {
                    *shape = PyTuple_New(npos);
                    for (int i = 0; *shape && i < npos; i++)
                        PyTuple_SET_ITEM(*shape, i, Py_NewRef(args[i].v));
                }
                return 1;
            }
        }
        if (!self || PyModule_Check(self)) {
            if (!strcmp(nm, "len") && npos == 1 && st_fe_is_tensor(args[0].v)) {
                *tensor = args[0].v;
                return 4;
            }
            if (!strcmp(nm, "len") && npos == 1 && !kwnames &&
                (PyTuple_Check(args[0].v) || PyList_Check(args[0].v)))
                return 5;        /* len(x.shape): the items' values are not read */
        }
        return 0;
    }
    if (PyFunction_Check(fn)) {
        static const char *const creators[] = {"zeros", "ones", "empty", "rand", "randn", NULL};
        for (int i = 0; creators[i]; i++)
            if (fn == symtrace_fn(creators[i])) {
                *shape = npos == 1 && (PyTuple_Check(args[0].v) || PyList_Check(args[0].v))
                         ? Py_NewRef(args[0].v) : NULL;
                if (!*shape) {
                    *shape = PyTuple_New(npos);
                    for (int k = 0; *shape && k < npos; k++)
                        PyTuple_SET_ITEM(*shape, k, Py_NewRef(args[k].v));
                }
                *keep_hi = npos;
                return 1;
            }
        if (fn == symtrace_fn("cat")) {
            /* cat(tensors, dim): its buffer and slice bounds are sums of
             * the parts' sizes (cat_after) */
            PyObject *ts = npos >= 1 ? args[0].v : NULL;
            for (int k = 0; !ts && kwnames && k < (int)PyTuple_GET_SIZE(kwnames); k++)
                if (!PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "tensors"))
                    ts = args[npos + k].v;
            if (!ts || !(PyTuple_Check(ts) || PyList_Check(ts)))
                return 0;
            *shape = Py_NewRef(ts);
            return 7;
        }
        if (fn == symtrace_fn("full") && npos >= 1) {
            *shape = Py_NewRef(args[0].v);
            *keep_hi = 1;
            return 1;
        }
        if (fn == symtrace_fn("reshape") && npos == 2) {
            *shape = Py_NewRef(args[1].v);
            *keep_lo = 1;
            *keep_hi = 2;
            return 1;
        }
        if (fn == symtrace_fn("arange") && npos >= 1 && npos <= 3) {
            /* arange(end) / arange(start, end[, 1]): n = end - start */
            PyObject *st0 = npos == 1 ? NULL : args[0].v, *en = npos == 1 ? args[0].v : args[1].v;
            PyObject *sp = npos == 3 ? args[2].v : NULL;
            bool ok = PyLong_Check(en) && (!st0 || PyLong_Check(st0)) &&
                      (!sp || (PyLong_Check(sp) && !tr_is_symint(sp) && PyLong_AsLongLong(sp) == 1));
            if (!ok)
                return 0;
            *shape = PyTuple_Pack(2, st0 ? st0 : Py_False, en);   /* False: start 0 */
            *keep_hi = npos;
            return 6;
        }
    }
    return 0;
}

/* t._slice(d, start, stop) (split's pieces, symtrace/_ops/shape.py): the
 * bounds' expressions, guarded 0 <= start <= stop <= size as the values
 * are (else specialized: _slice does not clamp), in dc->shape as
 * (start expr, stop expr, start, stop). 0, or -1 with an exception. */
static int slice_before(tr_state *s, tr_dyncall *dc, tr_var *args, int nargs)
{
    PyObject *sym = dc->shape;            /* (start, stop) as given */
    dc->shape = NULL;
    st_tensor *t = st_fe_unwrap(dc->tensor);
    int ov = 0;
    long d = PyLong_Check(args[0].v) ? PyLong_AsLongAndOverflow(args[0].v, &ov) : -1;
    if (d < 0 && !ov && PyLong_Check(args[0].v))
        d += t->ndim;
    PyObject *a = sym ? PyTuple_GET_ITEM(sym, 0) : NULL, *b = sym ? PyTuple_GET_ITEM(sym, 1) : NULL;
    bool any = a && (tr_is_symint(a) || tr_is_symint(b));
    if (!any || ov || d < 0 || d >= t->ndim || !PyLong_Check(a) || !PyLong_Check(b)) {
        /* plain bounds, or a bad call (_slice raises): specialized */
        for (int i = 0; any && i < 2; i++) {
            PyObject *p = tr_is_symint(PyTuple_GET_ITEM(sym, i)) ? specialize(s, PyTuple_GET_ITEM(sym, i)) : NULL;
            if (tr_is_symint(PyTuple_GET_ITEM(sym, i)) && !p) {
                Py_DECREF(sym);
                return -1;
            }
            Py_XDECREF(p);
        }
        Py_XDECREF(sym);
        dc->kind = 0;
        return 0;
    }
    st_fe_symtab *tb = tab(s);
    int size = dim_expr(s, t, (int)d);
    int ea = fold_values(s, expr_of(s, a)), eb = fold_values(s, expr_of(s, b));
    int64_t va = PyLong_AsLongLong(a), vb = PyLong_AsLongLong(b);
    if (size < 0 || ea < 0 || eb < 0) {
        Py_DECREF(sym);
        return PyErr_Occurred() ? -1 : tr_break(s, "dynamic shapes: a slice bound");
    }
    int zero = sx_new(tb, ST_SX_CONST, -1, -1, 0);
    if (va < 0 || vb < va || vb > t->shape[d]) {
        dc->kind = 0;
        PyObject *p = tr_is_symint(a) ? specialize(s, a) : NULL;
        PyObject *q = tr_is_symint(b) ? specialize(s, b) : NULL;
        int bad = (tr_is_symint(a) && !p) || (tr_is_symint(b) && !q);
        Py_XDECREF(p);
        Py_XDECREF(q);
        Py_DECREF(sym);          /* (a and b are its items) */
        return bad ? -1 : 0;
    }
    Py_DECREF(sym);
    if (add_rel(s, ea, zero, ST_SXC_GE, true) < 0 || add_rel(s, eb, ea, ST_SXC_GE, true) < 0 ||
        add_rel(s, eb, size, ST_SXC_LE, true) < 0)
        return -1;
    dc->dim = (int)d;
    dc->step = nargs >= 4 ? PyLong_AsLongLong(args[3].v) : 1;   /* (plain by now) */
    dc->shape = Py_BuildValue("(iiLL)", ea, eb, (long long)va, (long long)vb);
    return dc->shape ? 0 : -1;
}

/* After t._slice: its SLICE statement gets the bounds' expressions; none
 * recorded (the whole dim: a view of t) needs none, the guards keep it
 * the whole dim. 0, -1 no memory. */
static int slice_after(tr_state *s, tr_dyncall *dc, PyObject *r)
{
    int ea = (int)PyLong_AsLong(PyTuple_GET_ITEM(dc->shape, 0));
    int eb = (int)PyLong_AsLong(PyTuple_GET_ITEM(dc->shape, 1));
    int64_t va = PyLong_AsLongLong(PyTuple_GET_ITEM(dc->shape, 2));
    int64_t vb = PyLong_AsLongLong(PyTuple_GET_ITEM(dc->shape, 3));
    /* the result's dims: the input's, dim d ceil((stop - start) / step), so
     * that no probe has to explain them (a crop to whole windows,
     * 2 * ((s - 2) // 2 + 1), is no form recover knows) */
    PyObject *in = dims_of(s, st_fe_unwrap(dc->tensor));
    st_tensor *rt = r && st_fe_is_tensor(r) ? st_fe_unwrap(r) : NULL;
    if (!in)
        PyErr_Clear();
    else if (rt && PyTuple_GET_SIZE(in) == rt->ndim && dc->dim < rt->ndim) {
        st_fe_symtab *tb = tab(s);
        int len = sx_new(tb, ST_SX_SUB, eb, ea, 0);
        if (len >= 0 && dc->step > 1)
            len = sx_new(tb, ST_SX_FLOORDIV,
                         sx_new(tb, ST_SX_ADD, len, sx_new(tb, ST_SX_CONST, -1, -1, dc->step - 1), 0),
                         sx_new(tb, ST_SX_CONST, -1, -1, dc->step), 0);
        PyObject *ex = len >= 0 ? PyTuple_New(rt->ndim) : NULL;
        for (int d = 0; ex && d < rt->ndim; d++)
            PyTuple_SET_ITEM(ex, d, d == dc->dim ? PyLong_FromLong(len)
                                                 : Py_NewRef(PyTuple_GET_ITEM(in, d)));
        if (!ex || set_dims(s, rt, ex) < 0)
            PyErr_Clear();
        Py_XDECREF(ex);
    }
    st_graph *g = st_rt_trace_graph();
    for (int si = dc->n0; g && si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        if (st->op == ST_OP_SLICE && st->attrs.i[0] == dc->dim && st->attrs.i[1] == va &&
            st->attrs.i[2] == vb && st->attrs.i[3] == dc->step)
            return push_attr(s, si, 101, ea) < 0 || push_attr(s, si, 102, eb) < 0 ? -1 : 0;
    }
    st_tensor *t = st_fe_unwrap(dc->tensor);
    int size = dim_expr(s, t, dc->dim);
    int zero = sx_new(tab(s), ST_SX_CONST, -1, -1, 0);
    if (va == 0 && vb == t->shape[dc->dim] && size >= 0 && zero >= 0) {
        if (add_rel(s, ea, zero, ST_SXC_EQ, true) < 0 || add_rel(s, eb, size, ST_SXC_EQ, true) < 0)
            return -1;
        return 0;
    }
    return add_rel(s, ea, sx_new(tab(s), ST_SX_CONST, -1, -1, va), ST_SXC_EQ, true) < 0 ||
           add_rel(s, eb, sx_new(tab(s), ST_SX_CONST, -1, -1, vb), ST_SXC_EQ, true) < 0 ? -1 : 0;
}

/* x.stride() / x.stride(d) read in Python: ints made of x's sizes that the
 * translator does not keep as expressions (an instance would keep the
 * traced strides): the free symbols of x's dims are pinned, each guarded
 * to its value (in the frame's own code). 0, -1 break. */
static int stride_pins(tr_state *s, PyObject *fn)
{
    /* symtrace's own code reads strides for layout only (fill_ of a
     * tensor value): its results do not hold sizes */
    if (s->lib_inline > 0 || !PyCFunction_Check(fn))
        return 0;
    PyObject *self = PyCFunction_GET_SELF(fn);
    if (!self || !st_fe_is_tensor(self) ||
        strcmp(((PyCFunctionObject *)fn)->m_ml->ml_name, "stride"))
        return 0;
    return tr_dyn_pin_tensor(s, self);
}

/* The free symbols of tensor t's dims pinned, each guarded to its value
 * (a partial graph that stops before a call that raised with t:
 * translator.c's pin_consumed). 0, -1 break. */
int tr_dyn_pin_tensor(tr_state *s, PyObject *t)
{
    if (!s->dyn || !s->dyn->shapes || !st_fe_is_tensor(t))
        return 0;
    PyObject *ex = dims_of(s, st_fe_unwrap(t));
    if (!ex)
        return tr_break_exc(s, "dynamic shapes");
    st_fe_symtab *tb = tab(s);
    for (Py_ssize_t d = 0; PyTuple_Check(ex) && d < PyTuple_GET_SIZE(ex); d++) {
        int e = (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d));
        for (int k = 0; e >= 0 && k < tb->nsym; k++)
            if (!s->dyn->pinned[k] && tr_dyn_varsym(s, k) && sx_mentions(tb, e, k) &&
                pin_symbol(s, k) < 0)
                return tr_break_exc(s, "dynamic shapes");
    }
    return 0;
}

/* Is fn's __name__ one of names (NULL-terminated)? */
static bool name_in(PyObject *fn, const char *const *names)
{
    PyObject *nm = PyObject_GetAttrString(fn, "__name__");
    const char *n = nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8(nm) : NULL;
    bool hit = false;
    for (int i = 0; n && !hit && names[i]; i++)
        hit = !strcmp(n, names[i]);
    Py_XDECREF(nm);
    PyErr_Clear();
    return hit;
}

/* symtrace's scalar arithmetic (x.mul_(2), st.div(x, 8), x.clamp_(0, 6)):
 * the numbers it puts into the graph are its arguments, never sizes it
 * read inside, so folded_size leaves them out. */
static bool scalar_op(PyObject *fn)
{
    static const char *const names[] = {
        "add", "add_", "sub", "sub_", "subtract", "subtract_", "rsub", "mul", "mul_",
        "multiply", "multiply_", "div", "div_", "divide", "divide_", "true_divide",
        "true_divide_", "floor_divide", "floor_divide_", "remainder", "remainder_", "fmod",
        "fmod_", "pow", "pow_", "clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_",
        "clamp_max", "clamp_max_", "fill_", "masked_fill", "masked_fill_", "where", "lerp",
        "lerp_", "addcmul", "addcmul_", "addcdiv", "addcdiv_", NULL};
    if (!tr_module_starts(fn, "symtrace"))
        return false;
    return name_in(fn, names);
}

/* symtrace's x.add(n) / x.add_(n) / x.sub(n) / x.mul(n) (methods or
 * functions, in place or not) with x a tensor and n a SymInt, positional:
 * n may be a 0-d tensor instead (alpha= stays a number: not here). */
static bool size_scalar_arg(PyObject *fn, tr_var *args, int nargs, PyObject *kwnames)
{
    static const char *const names[] = {"add", "add_", "sub", "sub_", "subtract",
        "subtract_", "mul", "mul_", "multiply", "multiply_", NULL};
    int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
    if (npos != 2 || !args[0].v || !st_fe_is_tensor(args[0].v) || !args[1].v ||
        !tr_is_symint(args[1].v))
        return false;
    return name_in(fn, names);
}

/* builtins.min / builtins.max of two or more ints, one of them symbolic
 * (max(n, 0), min(n, x.shape[0])), and abs(n): run on the SymInts
 * themselves, so that the builtin's comparisons record guards on the
 * relations (SymInt's __lt__ / __gt__ / __abs__) and the result is returned
 * with its expression, instead of every argument becoming a guarded
 * constant (a graph per value). */
static bool symint_minmax(PyObject *fn, tr_var *args, int nargs, PyObject *kwnames)
{
    static PyObject *bmin, *bmax, *babs;
    if (!bmin) {
        PyObject *b = PyImport_ImportModule("builtins");
        if (!b) {
            PyErr_Clear();
            return false;
        }
        bmin = PyObject_GetAttrString(b, "min");
        bmax = PyObject_GetAttrString(b, "max");
        babs = PyObject_GetAttrString(b, "abs");
        Py_DECREF(b);
        if (!bmin || !bmax || !babs) {
            PyErr_Clear();
            Py_CLEAR(bmin);
            Py_CLEAR(bmax);
            Py_CLEAR(babs);
            return false;
        }
    }
    if (kwnames && PyTuple_GET_SIZE(kwnames))
        return false;
    if (fn == babs ? nargs != 1 : ((fn != bmin && fn != bmax) || nargs < 2))
        return false;
    bool sym = false;
    for (int i = 0; i < nargs; i++) {
        PyObject *o = args[i].v;
        if (!o || args[i].it || args[i].aux != TR_AUX_NONE || !PyLong_Check(o) || tr_is_lazy(o))
            return false;
        sym |= tr_is_symint(o);
    }
    return sym;
}

int tr_dyn_before_call(tr_state *s, PyObject *fn, tr_var *args, int nargs,
                       PyObject *kwnames, tr_dyncall *dc)
{
    memset(dc, 0, sizeof *dc);
    if (!s->dyn)
        return 0;
    if (symint_minmax(fn, args, nargs, kwnames))
        return 0;
    if (!s->dyn->shapes) {
        for (int i = 0; i < nargs; i++)
            if (tr_dyn_plain_var(s, &args[i]) < 0)
                return -1;
        return 0;
    }
    if (stride_pins(s, fn) < 0)
        return -1;
    int lo, hi;
    dc->kind = classify(fn, args, nargs, kwnames, &dc->tensor, &dc->shape, &lo, &hi);
    if (dc->kind == 5) {
        dc->kind = 0;
        return 0;
    }
    if ((dc->kind == 1 || dc->kind == 6) && !dc->shape)
        return tr_break_exc(s, "dynamic shapes");
    st_graph *g = st_rt_trace_graph();
    dc->n0 = g ? g->nstmts : 0;
    bool scalar = dc->kind == 0 && scalar_op(fn);
    for (int i = -1; dc->kind == 0 && i < nargs; i++) {
        PyObject *o = i >= 0 ? args[i].v
                    : PyCFunction_Check(fn) ? PyCFunction_GET_SELF(fn) : NULL;
        bool t = o && st_fe_is_tensor(o);
        dc->targs |= t && i >= 0;
        if (t && dc->nt < 4) {
            st_tensor *tt = st_fe_unwrap(o);
            dc->tnd[dc->nt] = tt->ndim;
            memcpy(dc->tshape[dc->nt++], tt->shape, sizeof(int64_t) * (size_t)tt->ndim);
        }
    }
    /* everything but a shape argument is specialized; shape arguments go
     * in as their values (their expressions are attached afterwards) */
    for (int i = 0; i < nargs; i++) {
        if (dc->kind == 8 && (i == 1 || i == 2)) {
            /* _slice's bounds: their expressions kept (slice_before) */
            if (!dc->shape && !(dc->shape = PyTuple_Pack(2, args[1].v, args[2].v)))
                return -1;
            PyObject *v = values_of(s, args[i].v);
            if (!v)
                return tr_break_exc(s, "dynamic shapes");
            Py_SETREF(args[i].v, v);
            continue;
        }
        if ((dc->kind == 1 || dc->kind == 6) && i >= lo && i < hi) {
            PyObject *v = values_of(s, args[i].v);
            if (!v)
                return tr_break_exc(s, "dynamic shapes");
            Py_SETREF(args[i].v, v);
            continue;
        }
        if (i == 1 && scalar && size_scalar_arg(fn, args, nargs, kwnames)) {
            /* x.add_(n), x.mul(n): n a 0-d tensor of the graph that follows
             * the sizes (as x + n), not a guarded constant */
            int rc = tr_dyn_size_operand(s, 0, &args[0], &args[1]);
            if (rc < 0)
                return -1;
            if (rc == 1)
                continue;
        }
        if (tr_dyn_plain_var(s, &args[i]) < 0)
            return -1;
        PyObject *o = args[i].v;
        if (scalar && dc->nnum < 6 && !PyBool_Check(o) && (PyLong_Check(o) || PyFloat_Check(o))) {
            double x = PyFloat_Check(o) ? PyFloat_AsDouble(o) : PyLong_AsDouble(o);
            if (x == -1.0 && PyErr_Occurred())
                PyErr_Clear();
            else
                dc->nums[dc->nnum++] = x;
        }
    }
    if (dc->kind == 2 && nargs == 1) {
        int ov = 0;
        dc->dim = (int)PyLong_AsLongAndOverflow(args[0].v, &ov);
    }
    if (dc->kind == 8 && slice_before(s, dc, args, nargs) < 0)
        return -1;
    if (dc->kind == 7) {
        /* cat's dim: positional, or the keyword dim= (its value after the
         * positional ones) */
        int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
        PyObject *dv = npos >= 2 ? args[1].v : NULL;
        for (int k = 0; !dv && kwnames && k < (int)PyTuple_GET_SIZE(kwnames); k++)
            if (!PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "dim"))
                dv = args[npos + k].v;
        int ov = 0;
        dc->dim = dv ? (int)PyLong_AsLongAndOverflow(dv, &ov) : 0;
        if (dv && (!PyLong_Check(dv) || ov)) {
            PyErr_Clear();
            dc->kind = 0;           /* cat raises on it itself */
            Py_CLEAR(dc->shape);
        }
        /* the parts' size expressions now: probing after cat ran would
         * re-infer its statements before their sizes are expressions */
        Py_ssize_t np = dc->shape ? PySequence_Size(dc->shape) : 0;
        for (Py_ssize_t i = 0; i < np; i++) {
            PyObject *it = PySequence_GetItem(dc->shape, i);
            if (it && st_fe_is_tensor(it) && !dims_of(s, st_fe_unwrap(it)))
                PyErr_Clear();
            Py_XDECREF(it);
        }
        if (np < 0)
            PyErr_Clear();
    }
    return 0;
}

/* After cat(tensors, dim): it recorded full(shape) and one slice_scatter
 * per non-empty part (symtrace/_ops/shape.py _cat_into); their size and
 * bounds become sums of the parts' size expressions, so that the graph
 * holds at other sizes. Nothing found (cat under autograd, a mixed
 * dtype): validation decides. 0, or -1 (no memory). */
static int cat_after(tr_state *s, tr_dyncall *dc, PyObject *r)
{
    PyObject *seq = PySequence_Fast(dc->shape, "cat");
    if (!seq) {
        PyErr_Clear();
        return 0;
    }
    st_tensor *out = st_fe_is_tensor(r) ? st_fe_unwrap(r) : NULL;
    int np = (int)PySequence_Fast_GET_SIZE(seq), nd = out ? out->ndim : 0;
    int d = dc->dim < 0 ? dc->dim + nd : dc->dim;
    int rc = 0;
    st_tensor *ref = NULL;
    int total = -1, found = -1;
    st_graph *g = st_rt_trace_graph();
    if (!out || d < 0 || d >= nd || !g)
        goto done;
    for (int si = dc->n0; si < g->nstmts && found < 0; si++) {
        const st_stmt *st = &g->stmts[si];
        if (st->op != ST_OP_FULL || st->nin > 0 || st->attrs.ndims != nd)
            continue;
        bool m = true;
        for (int k = 0; k < nd && m; k++)
            m = st->attrs.dims[k] == out->shape[k];
        if (m)
            found = si;
    }
    if (found < 0)
        goto done;
    int64_t off = 0;
    for (int i = 0; i < np; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!st_fe_is_tensor(it))
            goto done;
        st_tensor *t = st_fe_unwrap(it);
        if (t->ndim == 1 && t->shape[0] == 0 && nd != 1)
            continue;            /* torch's legacy skip of 1-D empty parts */
        if (t->ndim != nd)
            goto done;
        int e = dim_expr(s, t, d);
        if (e < 0)
            goto done;
        int stop = total < 0 ? e : sx_new(tab(s), ST_SX_ADD, total, e, 0);
        if (stop < 0)
            goto nomem;
        if (t->shape[d] > 0) {
            /* the part's slice of the buffer (a view, then written: the
             * slice and the slice_scatter it became) */
            int start = total < 0 ? sx_new(tab(s), ST_SX_CONST, -1, -1, 0) : total, hit = 0;
            if (start < 0)
                goto nomem;
            for (int k = found + 1; k < g->nstmts; k++) {
                const st_stmt *st = &g->stmts[k];
                if ((st->op != ST_OP_SLICE && st->op != ST_OP_SLICE_SCATTER) ||
                    st->attrs.i[0] != d || st->attrs.i[1] != off ||
                    st->attrs.i[2] != off + t->shape[d] || has_attr(s->dyn->attr, s->dyn->nattr, k, 101))
                    continue;
                if (push_attr(s, k, 101, start) < 0 || push_attr(s, k, 102, stop) < 0)
                    goto nomem;
                hit += st->op == ST_OP_SLICE_SCATTER;
                if (st->op == ST_OP_SLICE_SCATTER)
                    break;
            }
            if (!hit)
                goto done;
        }
        off += t->shape[d];
        total = stop;
        if (!ref)
            ref = t;
    }
    if (!ref || total < 0)
        goto done;
    for (int k = 0; k < nd; k++) {
        int e = k == d ? total : dim_expr(s, ref, k);
        if (e < 0 || push_attr(s, found, k, e) < 0)
            goto nomem;
    }
    goto done;
nomem:
    rc = -1;
done:
    Py_DECREF(seq);
    return rc;
}

/* A number that a product p of the sizes of the call's tensors would
 * give (p, p - 1, 1 / p, 1 / (p - 1), p / (p - 1)), the product taking at
 * least one dim equal to a symbol's value; sqrt(p) and 1 / sqrt(p) too
 * (attention's scale). 0 and 1 are left out; 2 and 0.5 are too common as
 * plain constants (gelu's 0.5, pow's 2) to translate the frame static for
 * them: 2 says that the call has one, and a free symbol of value 2 or 3 in
 * its tensors (their p, p - 1, 1 / p or 1 / (p - 1)) is then pinned
 * (kl_div's batchmean divided by a batch of 2). 1: a size number. */
static int size_number(tr_state *s, const tr_dyncall *dc, double v)
{
    st_fe_symtab *tb = tab(s);
    double av = v < 0 ? -v : v;
    if (av == 0 || av == 1)
        return 0;
    /* a scalar op's own number (x.mul_(2); x.div_(8) as a product with
     * 1 / 8; x.sub_(3) as a sum with -3): the user's, not a size's */
    for (int i = 0; i < dc->nnum; i++) {
        double a = dc->nums[i], c[3] = {a, -a, a != 0 ? 1 / a : 0};
        for (int j = 0; j < 3; j++) {
            double d = c[j] - v;
            if (c[j] != 0 && (d < 0 ? -d : d) <= 1e-12 * (c[j] < 0 ? -c[j] : c[j]))
                return 0;
        }
    }
    if (av == 2 || av == 0.5)
        return 2;
    for (int t = 0; t < dc->nt; t++) {
        int nd = dc->tnd[t];
        for (unsigned m = 1; m < (1u << nd); m++) {
            double p = 1;
            bool sym = false;
            for (int d = 0; d < nd; d++) {
                if (!(m & (1u << d)))
                    continue;
                int64_t x = dc->tshape[t][d];
                p *= (double)x;
                for (int k = 0; k < tb->nsym && !sym; k++)
                    sym = x >= 2 && tb->dim[k] >= 0 && !s->dyn->pinned[k] && tb->val[k] == x;
            }
            if (!sym || p < 2)
                continue;
            const double c[7] = {p, p - 1, 1 / p, 1 / (p - 1), p / (p - 1), sqrt(p), 1 / sqrt(p)};
            for (int j = 0; j < (p >= 3 ? 7 : 5); j++) {     /* sqrt(2): gelu's, not a size */
                double d = c[j] - v;
                if ((d < 0 ? -d : d) <= 1e-12 * (c[j] < 0 ? -c[j] : c[j]))
                    return 1;
            }
        }
    }
    return 0;
}

/* A real call on tensors whose sizes may be symbolic that put a number
 * made of their sizes into the graph as a constant (var's divisor n - 1,
 * batch_norm's n / (n - 1)): an instance for other sizes would keep it. */
static int folded_size(tr_state *s, const tr_dyncall *dc, const st_graph *g)
{
    int r = 0;
    for (int si = dc->n0; si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        for (int j = 0; j < st->nin; j++) {
            const st_value *v = &g->values[st->in[j]];
            int x = v->kind == ST_VAL_CONST ? size_number(s, dc, v->fconst) : 0;
            if (x == 1)
                return 1;
            r |= x;
        }
        if (st->op == ST_OP_FULL) {
            int x = size_number(s, dc, (st->attrs.flags & ST_ATTR_INT_VALUE) ? (double)st->attrs.i[0]
                                                                             : st->attrs.f[0]);
            if (x == 1)
                return 1;
            r |= x;
        }
    }
    return r;
}

/* The call made a 2 or a 0.5 (folded_size): the free symbols of value 2
 * or 3 among its tensors' sizes guarded to their values; dc NULL (a
 * PyLayer made one: 1 / 2 of a batch of 2 kept by its graph): every free
 * dim symbol of value 2 or 3. 0, -1 error. */
static int pin_small(tr_state *s, const tr_dyncall *dc)
{
    st_fe_symtab *tb = tab(s);
    for (int k = 0; k < tb->nsym; k++) {
        if (tb->dim[k] < 0 || s->dyn->pinned[k] || (tb->val[k] != 2 && tb->val[k] != 3))
            continue;
        bool in = !dc;
        for (int t = 0; dc && t < dc->nt && !in; t++)
            for (int d = 0; d < dc->tnd[t] && !in; d++)
                in = dc->tshape[t][d] == tb->val[k];
        if (in && pin_symbol(s, k) < 0)
            return -1;
    }
    return 0;
}

/* After a shape-taking call: the statement that holds its shape gets the
 * SymInts' expressions; none found: they are specialized. r: the result
 * (steals; returns the value to use). */
PyObject *tr_dyn_after_call(tr_state *s, tr_dyncall *dc, PyObject *r)
{
    if (!s->dyn || !r) {
        Py_CLEAR(dc->shape);
        return r;
    }
    if (dc->kind == 0 && dc->targs && s->dyn->shapes) {
        /* a symtrace function run for real on tensors whose sizes may be
         * symbolic, which made an arange from them inside (flip, roll: an
         * index of the traced size): a constant of the graph that an
         * instance for another size would keep. The frame is translated
         * again with static shapes */
        st_graph *g = st_rt_trace_graph();
        for (int si = dc->n0; g && si < g->nstmts; si++)
            if (g->stmts[si].op == ST_OP_ARANGE) {
                Py_DECREF(r);
                tr_break(s, "dynamic shapes: a call made an index from a size inside");
                return NULL;
            }
    }
    if (dc->kind == 0 && dc->nt > 0 && s->dyn->shapes) {
        st_graph *g = st_rt_trace_graph();
        int fs = g ? folded_size(s, dc, g) : 0;
        if (fs == 1) {
            Py_DECREF(r);
            tr_break(s, "dynamic shapes: a call made a constant of the graph from a size inside");
            return NULL;
        }
        if (fs == 2 && pin_small(s, dc) < 0) {
            Py_DECREF(r);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
    }
    if (dc->kind == 8) {
        int rc = slice_after(s, dc, r);
        Py_CLEAR(dc->shape);
        if (rc < 0) {
            Py_DECREF(r);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
        return r;
    }
    if (dc->kind == 7) {
        int rc = cat_after(s, dc, r);
        Py_CLEAR(dc->shape);
        if (rc < 0) {
            Py_DECREF(r);
            return PyErr_NoMemory();
        }
        return r;
    }
    if (dc->kind == 2)
        return tr_dyn_wrap_size(s, dc->tensor, r, PyTuple_Check(r) ? 0 : 1, dc->dim);
    if (dc->kind == 3)
        return tr_dyn_wrap_size(s, dc->tensor, r, 2, 0);
    if (dc->kind == 4)
        return tr_dyn_wrap_size(s, dc->tensor, r, 1, 0);
    if (dc->kind == 6) {
        /* arange: the ARANGE statement of n = end - start elements */
        PyObject *a = PyTuple_GET_ITEM(dc->shape, 0), *b = PyTuple_GET_ITEM(dc->shape, 1);
        int ea = a == Py_False ? sx_new(tab(s), ST_SX_CONST, -1, -1, 0) : fold_values(s, expr_of(s, a));
        int eb = fold_values(s, expr_of(s, b));
        int64_t va = a == Py_False ? 0 : PyLong_AsLongLong(a), vb = PyLong_AsLongLong(b);
        int found = -1;
        st_graph *g = st_rt_trace_graph();
        for (int si = dc->n0; g && si < g->nstmts && found < 0; si++)
            if (g->stmts[si].op == ST_OP_ARANGE && g->stmts[si].attrs.ndims == 1 &&
                g->stmts[si].attrs.dims[0] == (vb > va ? vb - va : 0))
                found = si;
        bool sym = (ea >= 0 && !sx_is_const(tab(s), ea)) || (eb >= 0 && !sx_is_const(tab(s), eb));
        int rc = 0;
        if (sym && found >= 0 && vb > va && ea >= 0 && eb >= 0) {
            /* n = end - start elements from start (its float attribute, a
             * kernel parameter: arange(past, past + q), GPT-2's positions) */
            int n = sx_new(tab(s), ST_SX_SUB, eb, ea, 0);
            rc = n < 0 || add_rel(s, eb, ea, ST_SXC_GT, true) < 0 || push_attr(s, found, 0, n) < 0 ||
                 (!sx_is_const(tab(s), ea) && push_attr(s, found, 200, ea) < 0);
        } else if (sym) {
            PyObject *p = tr_is_symint(a) ? specialize(s, a) : NULL;
            PyObject *q = tr_is_symint(b) ? specialize(s, b) : NULL;
            rc = (tr_is_symint(a) && !p) || (tr_is_symint(b) && !q);
            Py_XDECREF(p);
            Py_XDECREF(q);
        }
        Py_CLEAR(dc->shape);
        if (rc) {
            Py_DECREF(r);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
        return r;
    }
    if (dc->kind != 1)
        return r;
    PyObject *seq = PySequence_Fast(dc->shape, "shape");
    Py_CLEAR(dc->shape);
    if (!seq) {
        PyErr_Clear();
        return r;
    }
    int n = (int)PySequence_Fast_GET_SIZE(seq);
    int ex[ST_MAX_DIMS];
    int64_t val[ST_MAX_DIMS];
    bool any = false, ok = n <= ST_MAX_DIMS;
    for (int k = 0; ok && k < n; k++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, k);
        ex[k] = -1;
        if (!PyLong_Check(it)) {
            ok = false;
            break;
        }
        val[k] = PyLong_AsLongLong(it);
        if (Py_TYPE(it) == (PyTypeObject *)st_fe_symint_cls) {
            ex[k] = fold_values(s, expr_of(s, it));
            any |= ex[k] >= 0;
        } else {
            /* -1: the runtime records the size it inferred: -1 again, so
             * that an instance infers it for its sizes. A plain int: a
             * constant the translated code gave (or a size it guarded),
             * not one read where the translator could not see it
             * (unexplained_size) */
            ex[k] = sx_new(tab(s), ST_SX_CONST, -1, -1, val[k]);
        }
    }
    (void)any;   /* all plain: the statement's dims are constants given by the code */
    st_graph *g = st_rt_trace_graph();
    int found = -1;
    for (int si = dc->n0; ok && g && si < g->nstmts && found < 0; si++) {
        const st_stmt *st = &g->stmts[si];
        if (!(st->op == ST_OP_RESHAPE || st->op == ST_OP_EXPAND || st->op == ST_OP_FULL ||
              st->op == ST_OP_RAND || st->op == ST_OP_RANDN) || st->attrs.ndims != n ||
            (st->op == ST_OP_FULL && st->nin > 0))
            continue;
        bool m = true;
        for (int k = 0; k < n && m; k++)
            m = st->attrs.dims[k] == val[k] || val[k] == -1;
        if (m)
            found = si;
    }
    for (int k = 0; k < n; k++) {
        if (ex[k] < 0 || (found < 0 && !tr_is_symint(PySequence_Fast_GET_ITEM(seq, k))))
            continue;
        if (found >= 0) {
            if (push_attr(s, found, k, ex[k]) < 0) {
                Py_DECREF(seq);
                Py_DECREF(r);
                return PyErr_NoMemory();
            }
        } else {
            PyObject *p = specialize(s, PySequence_Fast_GET_ITEM(seq, k));
            if (!p) {
                Py_DECREF(seq);
                Py_DECREF(r);
                return NULL;
            }
            Py_DECREF(p);
        }
    }
    Py_DECREF(seq);
    return r;
}

/* ---------------- subscripts ---------------- */
/* The slice bounds a basic index (ints, slices with step 1, None, ...)
 * records on tensor t, as expressions, with guards that pin Python's
 * clamping. Then, after the subscript, the recorded slices get them. */

static int clampex(tr_state *s, PyObject *o, int size, int64_t sv, bool is_start, int64_t *v)
{
    st_fe_symtab *tb = tab(s);
    if (o == Py_None || !o) {
        *v = is_start ? 0 : sv;
        return is_start ? sx_new(tb, ST_SX_CONST, -1, -1, 0) : size;
    }
    int e = fold_values(s, expr_of(s, o));
    if (e < 0)
        return -1;
    int64_t raw = PyLong_AsLongLong(o);
    int zero = sx_new(tb, ST_SX_CONST, -1, -1, 0);
    if (raw < 0) {
        int adj = sx_new(tb, ST_SX_ADD, size, e, 0);
        if (sv + raw < 0) {
            if (add_rel(s, adj, zero, ST_SXC_LT, true) < 0) return -1;
            *v = 0;
            return zero;
        }
        if (add_rel(s, adj, zero, ST_SXC_GE, true) < 0) return -1;
        if (!sx_is_const(tb, e) && add_rel(s, e, zero, ST_SXC_LT, true) < 0) return -1;
        *v = sv + raw;
        return adj;
    }
    if (!sx_is_const(tb, e) && add_rel(s, e, zero, ST_SXC_GE, true) < 0)
        return -1;
    if (raw > sv) {
        if (add_rel(s, e, size, ST_SXC_GT, true) < 0) return -1;
        *v = sv;
        return size;
    }
    if (add_rel(s, e, size, ST_SXC_LE, true) < 0) return -1;
    *v = raw;
    return e;
}

/* The next dim of a subscript's result: expression e (-1: unknown). */
static void res_dim(tr_state *s, tr_dynsub *ds, int e)
{
    (void)s;
    if (e < 0 || ds->nres >= ST_MAX_DIMS)
        ds->exact = false;
    else
        ds->res[ds->nres++] = e;
}

int tr_dyn_before_subscr(tr_state *s, PyObject *tensor, PyObject *key, tr_dynsub *ds)
{
    memset(ds, 0, sizeof *ds);
    if (!s->dyn || !s->dyn->shapes)
        return 0;
    st_graph *g = st_rt_trace_graph();
    ds->n0 = g ? g->nstmts : 0;
    st_tensor *t = st_fe_unwrap(tensor);
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items)
        return tr_break_exc(s, "dynamic shapes");
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int consuming = 0, ell = 0;
    bool basic = true;
    for (Py_ssize_t i = 0; i < n && basic; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        if (it == Py_Ellipsis) ell++;
        else if (it == Py_None) continue;
        else if ((PyLong_Check(it) && !PyBool_Check(it)) || PySlice_Check(it)) consuming++;
        else basic = false;
    }
    if (!basic || ell > 1 || consuming > t->ndim || n > ST_MAX_DIMS * 2) {
        Py_DECREF(items);
        return 0;             /* not analyzed: slices on symbolic dims fail the check */
    }
    int sd = 0, d = 0;
    Py_ssize_t i = 0;
    /* (x[None], x[...]: no dim of x read, none probed for the result) */
    ds->exact = consuming > 0;
    for (; i < n && ds->n < ST_MAX_DIMS; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        if (it == Py_None) {
            res_dim(s, ds, sx_new(tab(s), ST_SX_CONST, -1, -1, 1));
            d++;
            continue;
        }
        if (it == Py_Ellipsis) {
            int skip = t->ndim - consuming;
            for (int j = 0; j < skip && ds->exact; j++)
                res_dim(s, ds, dim_expr(s, t, sd + j));
            sd += skip;
            d += skip;
            continue;
        }
        int size = dim_expr(s, t, sd);
        if (size < 0) {
            Py_DECREF(items);
            return tr_break_exc(s, "dynamic shapes");
        }
        int64_t sv = t->shape[sd];
        tr_want_slice *w = &ds->w[ds->n];
        if (PyLong_Check(it)) {
            int64_t raw = PyLong_AsLongLong(it);
            int e = fold_values(s, expr_of(s, it));
            if (raw < 0) {
                w->start = sx_new(tab(s), ST_SX_ADD, size, e, 0);
                w->vstart = sv + raw;
            } else {
                w->start = e;
                w->vstart = raw;
                if (add_rel(s, size, e, ST_SXC_GT, true) < 0) {
                    Py_DECREF(items);
                    return -1;
                }
            }
            w->stop = sx_new(tab(s), ST_SX_ADD, w->start, sx_new(tab(s), ST_SX_CONST, -1, -1, 1), 0);
            w->vstop = w->vstart + 1;
            w->dim = d;
            ds->n++;
            sd++;
            continue;
        }
        PySliceObject *sl = (PySliceObject *)it;
        if (sl->step != Py_None && !(PyLong_Check(sl->step) && PyLong_AsLongLong(sl->step) == 1)) {
            sd++;
            d++;
            ds->exact = false;
            continue;          /* not analyzed */
        }
        w->start = clampex(s, sl->start, size, sv, true, &w->vstart);
        w->stop = clampex(s, sl->stop, size, sv, false, &w->vstop);
        if (w->start < 0 || w->stop < 0) {
            Py_DECREF(items);
            ds->exact = false;
            return PyErr_Occurred() ? tr_break_exc(s, "dynamic shapes") : 0;
        }
        /* empty (y[:, n:] = 0 at n == size) is guarded to stay empty: a
         * write through it records nothing (an int argument n is not the
         * size at the next call) */
        if (w->vstop < w->vstart) {
            if (add_rel(s, w->stop, w->start, ST_SXC_LT, true) < 0) {
                Py_DECREF(items);
                return -1;
            }
            w->stop = w->start;
            w->vstop = w->vstart;
        } else if (add_rel(s, w->stop, w->start, w->vstop == w->vstart ? ST_SXC_EQ : ST_SXC_GE,
                           true) < 0) {
            Py_DECREF(items);
            return -1;
        }
        w->dim = d;
        res_dim(s, ds, sx_new(tab(s), ST_SX_SUB, w->stop, w->start, 0));
        ds->n++;
        sd++;
        d++;
    }
    Py_DECREF(items);
    if (i < n)
        ds->exact = false;
    for (; sd < t->ndim && ds->exact; sd++)
        res_dim(s, ds, dim_expr(s, t, sd));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        ds->exact = false;
    }
    return 0;
}

int tr_dyn_after_subscr(tr_state *s, tr_dynsub *ds, PyObject *r)
{
    if (!s->dyn)
        return 0;
    if (r && ds->exact && st_fe_is_tensor(r) && st_fe_unwrap(r)->ndim == ds->nres) {
        /* the result's dims, so that reading its shape needs no probe */
        PyObject *ex = PyTuple_New(ds->nres);
        for (int d = 0; ex && d < ds->nres; d++) {
            PyObject *e = PyLong_FromLong(ds->res[d]);
            if (!e)
                Py_CLEAR(ex);
            else
                PyTuple_SET_ITEM(ex, d, e);
        }
        if (!ex || set_dims(s, st_fe_unwrap(r), ex) < 0) {
            Py_XDECREF(ex);
            return tr_break_exc(s, "dynamic shapes");
        }
        Py_DECREF(ex);
    }
    if (ds->n == 0)
        return 0;
    st_graph *g = st_rt_trace_graph();
    int k = 0;
    for (int si = ds->n0; g && si < g->nstmts && k < ds->n; si++) {
        const st_stmt *st = &g->stmts[si];
        if (st->op != ST_OP_SLICE)
            continue;
        while (k < ds->n && !(st->attrs.i[0] == ds->w[k].dim && st->attrs.i[1] == ds->w[k].vstart &&
                              st->attrs.i[2] == ds->w[k].vstop))
            k++;           /* a component with no statement (a full slice) */
        if (k == ds->n)
            break;
        if (push_attr(s, si, 101, ds->w[k].start) < 0 || push_attr(s, si, 102, ds->w[k].stop) < 0)
            return tr_break(s, "out of memory");
        k++;
    }
    /* a write (x[:, a:b] = v): the slice_scatters that put the parts back,
     * innermost first */
    for (int si = ds->n0; g && si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        if (st->op != ST_OP_SLICE_SCATTER || has_attr(s->dyn->attr, s->dyn->nattr, si, 101))
            continue;
        for (int j = 0; j < ds->n; j++)
            if (st->attrs.i[0] == ds->w[j].dim && st->attrs.i[1] == ds->w[j].vstart &&
                st->attrs.i[2] == ds->w[j].vstop) {
                if (push_attr(s, si, 101, ds->w[j].start) < 0 ||
                    push_attr(s, si, 102, ds->w[j].stop) < 0)
                    return tr_break(s, "out of memory");
                break;
            }
    }
    return 0;
}

/* A write through a slice view (x[:n] *= 2, x[:n].add_(1)): the trace
 * puts the view's new value back into its base with a slice_scatter of the
 * view's traced bounds, then derives the view again from the new base
 * with a slice. Each such slice_scatter with no bounds of its own takes
 * the bounds of the slice it undoes (the slice statement of the same base
 * value, dim, step and traced bounds) when those are expressions, and
 * each such slice those of the slice_scatter that made its base. Run before the graph is probed (tr_dyp_save_graph).
 * 0, -1 (no memory). */
static int attr_expr(const struct tr_dyn *d, int stmt, int slot)
{
    for (int i = 0; i < d->nattr; i++)
        if (d->attr[i].stmt == stmt && d->attr[i].slot == slot)
            return d->attr[i].expr;
    return -1;
}

int tr_dyn_sync_scatters(tr_state *s, const st_graph *g)
{
    struct tr_dyn *d = s->dyn;
    if (!d || !d->shapes || !g)
        return 0;
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        if (st->op == ST_OP_SLICE && st->nin >= 1 && !has_attr(d->attr, d->nattr, si, 101)) {
            /* the view derived again from its base's new value (the
             * slice_scatter of the same window) */
            for (int k = si - 1; k >= 0; k--) {
                const st_stmt *sc = &g->stmts[k];
                if (sc->op != ST_OP_SLICE_SCATTER || sc->nout < 1 || sc->out[0] != st->in[0])
                    continue;
                int a = attr_expr(d, k, 101), b = attr_expr(d, k, 102);
                if (a >= 0 && b >= 0 && !memcmp(sc->attrs.i, st->attrs.i, sizeof(int64_t) * 4) &&
                    (push_attr(s, si, 101, a) < 0 || push_attr(s, si, 102, b) < 0))
                    return -1;
                break;
            }
            continue;
        }
        if (st->op != ST_OP_SLICE_SCATTER || st->nin < 2 || has_attr(d->attr, d->nattr, si, 101))
            continue;
        for (int k = si - 1; k >= 0; k--) {
            const st_stmt *sl = &g->stmts[k];
            if (sl->op != ST_OP_SLICE || sl->in[0] != st->in[0])
                continue;
            if (memcmp(sl->attrs.i, st->attrs.i, sizeof(int64_t) * 4))
                continue;
            int a = attr_expr(d, k, 101), b = attr_expr(d, k, 102);
            if (a >= 0 && b >= 0 && (push_attr(s, si, 101, a) < 0 || push_attr(s, si, 102, b) < 0))
                return -1;
            break;
        }
    }
    return 0;
}

/* ---------------- PyLayer backward graphs ----------------
 * A PyLayer (autograd.Function) traced in the frame has its backward
 * traced once, at the traced sizes, into a graph of its own (a region's
 * bwd, frontend/pylayer_trace.c). Its inputs are the forward outputs'
 * gradients and forward values: at other sizes their metas are those of
 * the instance's values. Its size attributes (reshape/expand targets,
 * creation sizes, slice bounds), computed by the backward from plain
 * ints, are matched by value to the batch-like symbols: a value equal to
 * one free symbol's value, or a multiple of exactly one (c * s). The
 * probes check the result: the backward must re-infer at both and give
 * gradients of its inputs' sizes, or the frame is translated static. */
static int rattr_push(rattr **a, int *n, int *cap, rattr x)
{
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        rattr *m = realloc(*a, sizeof *m * (size_t)nc);
        if (!m)
            return -1;
        *a = m;
        *cap = nc;
    }
    (*a)[(*n)++] = x;
    return 0;
}

/* The expression of size v, or -1 (a constant). -2: no memory. */
static int match_size(tr_state *s, int64_t v)
{
    st_fe_symtab *tb = tab(s);
    if (v < 2 || v > ((int64_t)1 << 40))
        return -1;
    int eq = -1, neq = 0, mul = -1, nmul = 0;
    for (int k = 0; k < tb->nsym; k++) {
        if (tb->dim[k] < 0 || s->dyn->pinned[k] || tb->val[k] < 2)
            continue;
        if (tb->val[k] == v) {
            eq = k;
            neq++;
        } else if (v % tb->val[k] == 0) {
            mul = k;
            nmul++;
        }
    }
    if (neq == 0) {
        /* s_i * s_j (a flattened pair of dims), when exactly one pair gives v */
        int pa = -1, pb = -1, np = 0;
        for (int i = 0; i < tb->nsym; i++)
            for (int j = i; j < tb->nsym; j++) {
                if (tb->dim[i] < 0 || tb->dim[j] < 0 || s->dyn->pinned[i] || s->dyn->pinned[j] ||
                    tb->val[i] < 2 || tb->val[j] < 2 || tb->val[i] * tb->val[j] != v)
                    continue;
                pa = i;
                pb = j;
                np++;
            }
        if (np == 1) {
            int a = sx_new(tb, ST_SX_SYM, -1, -1, pa), b = sx_new(tb, ST_SX_SYM, -1, -1, pb);
            int e = a < 0 || b < 0 ? -1 : sx_new(tb, ST_SX_MUL, a, b, 0);
            return e < 0 ? -2 : e;
        }
    }
    int k = neq == 1 ? eq : neq == 0 && nmul == 1 ? mul : -1;
    if (k < 0)
        return -1;
    int e = sx_new(tb, ST_SX_SYM, -1, -1, k);
    if (e >= 0 && tb->val[k] != v) {
        int c = sx_new(tb, ST_SX_CONST, -1, -1, v / tb->val[k]);
        e = c < 0 ? -1 : sx_new(tb, ST_SX_MUL, e, c, 0);
    }
    return e < 0 ? -2 : e;
}

/* A number made of a free size symbol's value p (or of two: p = s_i * s_j):
 * p, p - 1, 1 / p, 1 / (p - 1), p / (p - 1), sqrt(p), 1 / sqrt(p), as
 * size_number: 1; 0 and 1 left out; 2 and 0.5: 2 (pin_small). */
static int sym_number(tr_state *s, double v)
{
    st_fe_symtab *tb = tab(s);
    double av = v < 0 ? -v : v;
    if (av == 0 || av == 1 || v != v)
        return 0;
    if (av == 2 || av == 0.5)
        return 2;
    for (int i = 0; i < tb->nsym; i++)
        for (int j = -1; j < tb->nsym; j++) {
            if (tb->dim[i] < 0 || s->dyn->pinned[i] || tb->val[i] < 2)
                continue;
            if (j >= 0 && (j < i || tb->dim[j] < 0 || s->dyn->pinned[j] || tb->val[j] < 2))
                continue;
            double p = (double)tb->val[i] * (j >= 0 ? (double)tb->val[j] : 1.0);
            const double c[7] = {p, p - 1, 1 / p, 1 / (p - 1), p / (p - 1), sqrt(p), 1 / sqrt(p)};
            for (int q = 0; q < (p >= 3 ? 7 : 5); q++) {
                double d = c[q] - v;
                if ((d < 0 ? -d : d) <= 1e-12 * (c[q] < 0 ? -c[q] : c[q]))
                    return 1;
            }
        }
    return 0;
}

/* Statements [a, b) of g hold a constant made of a size (a PyLayer that
 * divided by x.shape[0] on a plain int): an instance would keep it (1);
 * 2: only a 2 or a 0.5, which a size of 2 or 3 would give (pin_small). */
static int stmts_fold_size(tr_state *s, const st_graph *g, int a, int b)
{
    int r = 0;
    for (int si = a; si < b && si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        for (int j = 0; j < st->nin; j++) {
            const st_value *v = &g->values[st->in[j]];
            int x = v->kind == ST_VAL_CONST ? sym_number(s, v->fconst) : 0;
            if (x == 1)
                return 1;
            r |= x;
        }
        if (st->op == ST_OP_FULL) {
            int x = sym_number(s, (st->attrs.flags & ST_ATTR_INT_VALUE) ? (double)st->attrs.i[0]
                                                                         : st->attrs.f[0]);
            if (x == 1)
                return 1;
            r |= x;
        }
    }
    return r;
}

/* The size attributes of g's regions' backward graphs as expressions
 * (*out malloc'd). -1: no memory. */
static int region_attrs(tr_state *s, const st_graph *g, rattr **out, int *nout)
{
    int cap = 0;
    *out = NULL;
    *nout = 0;
    for (int r = 0; r < g->nregions; r++) {
        const st_graph *b = g->regions[r].bwd;
        for (int si = 0; b && si < b->nstmts; si++) {
            const st_stmt *st = &b->stmts[si];
            int slots[ST_MAX_DIMS + 2], ns = 0;
            switch (st->op) {
            case ST_OP_FULL: case ST_OP_RAND: case ST_OP_RANDN:
                if (st->op == ST_OP_FULL && st->nin > 0)
                    break;
                /* fall through */
            case ST_OP_EXPAND: case ST_OP_RESHAPE:
                for (int j = 0; j < st->attrs.ndims && j < ST_MAX_DIMS; j++)
                    slots[ns++] = j;
                break;
            case ST_OP_SLICE: case ST_OP_SLICE_SCATTER:
                slots[ns++] = 101;
                slots[ns++] = 102;
                break;
            default:
                break;
            }
            for (int j = 0; j < ns; j++) {
                int64_t v = slots[j] < 100 ? st->attrs.dims[slots[j]] : st->attrs.i[slots[j] - 100];
                int e = match_size(s, v);
                if (e == -2 || (e >= 0 && rattr_push(out, nout, &cap,
                                                     (rattr){r, si, slots[j], e}) < 0)) {
                    free(*out);
                    *out = NULL;
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* g's regions' backward graphs at symbol values sym, after g itself was
 * instantiated and re-inferred there: inputs' metas from g's values, the
 * attributes substituted, re-inferred, and the gradients checked against
 * the sizes of the region's inputs. -1: the backward does not hold. */
static int region_sync(const st_fe_symtab *tb, st_graph *g, const rattr *a, int na,
                       const int64_t *sym)
{
    for (int r = 0; r < g->nregions; r++) {
        st_ir_region *rg = &g->regions[r];
        st_graph *b = rg->bwd;
        if (!b)
            continue;
        if (b->ninputs != rg->nout + rg->nread || b->noutputs != rg->nin)
            return -1;
        for (int k = 0; k < b->ninputs; k++) {
            int v = k < rg->nout ? rg->out[k] : rg->read[k - rg->nout];
            st_meta *m = &b->values[b->inputs[k]].meta;
            if (v < 0 || v >= g->nvalues) {
                /* a dead output: its gradient (zeros) keeps the traced
                 * sizes; good only if they are g's constants */
                continue;
            }
            const st_meta *gm = &g->values[v].meta;
            if (gm->ndim != m->ndim)
                return -1;
            memcpy(m->shape, gm->shape, sizeof(int64_t) * (size_t)gm->ndim);
        }
        for (int i = 0; i < na; i++) {
            if (a[i].region != r)
                continue;
            int64_t v;
            if (a[i].stmt >= b->nstmts || st_fe_sx_eval(tb, a[i].expr, sym, &v) < 0)
                return -1;
            st_attrs *at = &b->stmts[a[i].stmt].attrs;
            if (a[i].slot < 100) at->dims[a[i].slot] = v;
            else if (a[i].slot < 200) at->i[a[i].slot - 100] = v;
            else at->f[a[i].slot - 200] = (double)v;
        }
        if (st_ir_reinfer(b) != ST_OK)
            return -1;
        for (int k = 0; k < rg->nin; k++) {
            const st_meta *om = &b->values[b->outputs[k]].meta;
            if (rg->in[k] < 0 || rg->in[k] >= g->nvalues)
                continue;
            const st_meta *im = &g->values[rg->in[k]].meta;
            if (om->ndim != im->ndim ||
                memcmp(om->shape, im->shape, sizeof(int64_t) * (size_t)om->ndim))
                return -1;
        }
    }
    return 0;
}

/* ---------------- validation ---------------- */
/* A creation size, expand or reshape target that the translator did not
 * make an expression but that equals a size symbol's value: a size read
 * where the translator could not follow it (zeros_like(x), expand_as(x),
 * x.clone().fill_(1): library code building a shape from x.shape), which
 * would keep the traced size at every other size. Conservative: a
 * constant that only happens to equal a symbol's value also counts (the
 * frame then runs static, which is always right). */
static bool unexplained_size(tr_state *s, const st_graph *g)
{
    struct tr_dyn *d = s->dyn;
    st_fe_symtab *tb = tab(s);
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *st = &g->stmts[si];
        switch (st->op) {
        case ST_OP_FULL: case ST_OP_RAND: case ST_OP_RANDN: case ST_OP_RANDINT:
        case ST_OP_EXPAND: case ST_OP_RESHAPE:
            break;
        default:
            continue;
        }
        for (int j = 0; j < st->attrs.ndims; j++) {
            int64_t v = st->attrs.dims[j];
            if (v < 2 || has_attr(d->attr, d->nattr, si, j))
                continue;
            for (int k = 0; k < tb->nsym; k++)
                if (tb->dim[k] >= 0 && !d->pinned[k] && tb->val[k] == v)
                    return true;
        }
    }
    return false;
}

/* Before the trace ends (so that a failure still restores inputs written
 * in place): the graph so far must re-infer at both probe points, and a
 * slice of a symbolic dim must have its bounds explained. -1: a break
 * ("dynamic shapes: ...") for a static translation. */
int tr_dyn_validate(tr_state *s)
{
    struct tr_dyn *d = s->dyn;
    if (!d || !d->shapes || tab(s)->nsym == 0)
        return 0;
    if (d->failed)
        return tr_break(s, "dynamic shapes: %s", d->why);
    st_graph *g = st_rt_trace_graph();
    if (!g)
        return tr_break(s, "dynamic shapes: no trace");
    /* a PyLayer's traced backward: its graph at the probes too (the
     * originals kept aside, the probed copies dropped) */
    int nbwd = 0;
    for (int r = 0; r < g->nregions; r++)
        nbwd += g->regions[r].bwd != NULL;
    /* a view of an input remade after a write into it (runtime/trace.c:
     * same op, same attrs) has the size expressions of the one it remakes */
    for (int si = 0; si < g->nstmts; si++) {
        int o = st_rt_trace_replay_of(si);
        for (int i = 0, n = d->nattr; o >= 0 && i < n; i++)
            if (d->attr[i].stmt == o && !has_attr(d->attr, d->nattr, si, d->attr[i].slot) &&
                push_attr(s, si, d->attr[i].slot, d->attr[i].expr) < 0)
                return tr_break(s, "out of memory");
    }
    /* an input written through a view of it gets its new value as the
     * written view viewed back (x.view(b, -1).mul_(2): x's value is a
     * reshape to x's sizes): that target is the input's size expressions */
    int nin0 = 0;
    st_tensor *const *ins0 = st_rt_trace_inputs(&nin0);
    for (int k = 0; k < nin0; k++) {
        int v = st_rt_trace_find(ins0[k]);
        int p = v >= 0 && v < g->nvalues ? g->values[v].producer : -1;
        const st_stmt *st = p >= 0 ? &g->stmts[p] : NULL;
        if (!st || (st->op != ST_OP_RESHAPE && st->op != ST_OP_EXPAND) ||
            st->attrs.ndims != ins0[k]->ndim)
            continue;
        PyObject *key = tr_id_key(ins0[k]);
        PyObject *ex = key ? PyDict_GetItem(d->tsyms, key) : NULL;
        Py_XDECREF(key);
        if (!ex || !PyTuple_Check(ex)) {
            PyErr_Clear();
            continue;
        }
        for (int j = 0; j < st->attrs.ndims && j < (int)PyTuple_GET_SIZE(ex); j++) {
            int e = (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, j));
            if (e >= 0 && st->attrs.dims[j] == ins0[k]->shape[j] &&
                !has_attr(d->attr, d->nattr, p, j) && push_attr(s, p, j, e) < 0)
                return tr_break(s, "out of memory");
        }
    }
    rattr *ra = NULL;
    int nra = 0;
    st_graph **bsave = nbwd ? calloc((size_t)g->nregions, sizeof *bsave) : NULL;
    if (nbwd && (!bsave || region_attrs(s, g, &ra, &nra) < 0)) {
        free(bsave);
        return tr_break(s, "out of memory");
    }
    /* the PyLayers' forwards ran for real too: their size attributes
     * matched the same way (the probes check them with the rest); a
     * number made of a size in a forward or a backward stays static */
    for (int r = 0; nbwd && r < g->nregions; r++) {
        if (!g->regions[r].bwd)
            continue;
        int fa = stmts_fold_size(s, g, g->regions[r].first, g->regions[r].end);
        int fb = fa == 1 ? 1 : stmts_fold_size(s, g->regions[r].bwd, 0, g->regions[r].bwd->nstmts);
        if (fa == 1 || fb == 1) {
            free(bsave);
            free(ra);
            return tr_break(s, "dynamic shapes: a PyLayer made a constant of the graph from a size");
        }
        if ((fa | fb) && pin_small(s, NULL) < 0) {
            free(bsave);
            free(ra);
            return tr_break_exc(s, "dynamic shapes");
        }
        for (int si = g->regions[r].first; si < g->regions[r].end && si < g->nstmts; si++) {
            const st_stmt *st = &g->stmts[si];
            int slots[ST_MAX_DIMS + 2], ns = 0;
            if (st->op == ST_OP_EXPAND || st->op == ST_OP_RESHAPE ||
                ((st->op == ST_OP_FULL || st->op == ST_OP_RAND || st->op == ST_OP_RANDN) &&
                 st->nin == 0)) {
                for (int j = 0; j < st->attrs.ndims && j < ST_MAX_DIMS; j++)
                    slots[ns++] = j;
            } else if (st->op == ST_OP_SLICE || st->op == ST_OP_SLICE_SCATTER) {
                slots[ns++] = 101;
                slots[ns++] = 102;
            }
            for (int j = 0; j < ns; j++) {
                if (has_attr(d->attr, d->nattr, si, slots[j]))
                    continue;
                int64_t v = slots[j] < 100 ? st->attrs.dims[slots[j]] : st->attrs.i[slots[j] - 100];
                int e = match_size(s, v);
                if (e == -2 || (e >= 0 && push_attr(s, si, slots[j], e) < 0)) {
                    free(bsave);
                    free(ra);
                    return tr_break(s, "out of memory");
                }
            }
        }
    }
    int nin = 0;
    st_tensor *const *ins = st_rt_trace_inputs(&nin);
    tr_dyp_saved sv;
    if (tr_dyp_save_graph(s, g, &sv) < 0)
        return tr_break(s, "out of memory");
    char why[300] = "";
    if (unexplained_size(s, g))
        snprintf(why, sizeof why, "a size attribute equal to a symbolic size, computed where "
                 "the translator could not see it");
    int rounds = 0;
    for (int p = 0; p < NPROBE && !why[0]; p++) {
        int64_t pv[MAXSYM];
        tr_dyp_probe_vals(s, p, pv);
        for (int r = 0; nbwd && r < g->nregions; r++) {
            if (!g->regions[r].bwd)
                continue;
            st_graph *c = st_ir_graph_clone(g->regions[r].bwd);
            if (!c) {
                st_err_clear();
                snprintf(why, sizeof why, "out of memory");
                break;
            }
            bsave[r] = g->regions[r].bwd;
            g->regions[r].bwd = c;
        }
        int bad = why[0] ? 0 : tr_dyp_apply_at(s, g, ins, nin, pv);
        if (!why[0] && bad == 0 && nbwd && region_sync(tab(s), g, ra, nra, pv) < 0) {
            st_err_clear();
            snprintf(why, sizeof why, "a PyLayer's traced backward does not hold at other sizes");
        }
        for (int r = 0; nbwd && r < g->nregions; r++)
            if (bsave[r]) {
                st_ir_graph_free(g->regions[r].bwd);
                g->regions[r].bwd = bsave[r];
                bsave[r] = NULL;
            }
        if (!why[0] && bad < 0) {
            snprintf(why, sizeof why, "%s", st_err_msg());
            st_err_clear();
            if (rounds++ < 3 && tr_dyp_repair(s, g, ins, nin, &sv) > 0) {
                why[0] = 0;
                tr_dyp_restore_graph(s, g, &sv);
                p = -1;          /* again, from the first probe */
                continue;
            }
        }
        /* an input written in place keeps its sizes at the probes when it
         * kept them in the trace (x.zero_() records a full of the traced
         * sizes: its write-back would not fit another size) */
        for (int k = 0; !why[0] && k < nin && k < g->ninputs; k++) {
            int v = st_rt_trace_find(ins[k]), vi = g->inputs[k];
            if (v < 0 || v == vi || v >= g->nvalues)
                continue;
            const st_meta *ti = &sv.metas[vi], *tv = &sv.metas[v];
            const st_meta *pi = &g->values[vi].meta, *pv2 = &g->values[v].meta;
            bool kept = ti->ndim == tv->ndim &&
                        !memcmp(ti->shape, tv->shape, sizeof(int64_t) * (size_t)ti->ndim);
            bool keeps = pi->ndim == pv2->ndim &&
                         !memcmp(pi->shape, pv2->shape, sizeof(int64_t) * (size_t)pi->ndim);
            if (kept && !keeps)
                snprintf(why, sizeof why, "an input written in place gets a value of the "
                         "traced sizes");
        }
        for (int si = 0; !why[0] && si < g->nstmts; si++) {
            const st_stmt *st = &g->stmts[si];
            if (st->op != ST_OP_SLICE || (has_attr(d->attr, d->nattr, si, 101) &&
                                          has_attr(d->attr, d->nattr, si, 102)))
                continue;
            int dim = (int)st->attrs.i[0];
            if (g->values[st->in[0]].meta.shape[dim] != sv.metas[st->in[0]].shape[dim])
                snprintf(why, sizeof why, "a slice of a symbolic dim whose bounds were computed "
                         "where the translator could not see them");
        }
        tr_dyp_restore_graph(s, g, &sv);
    }
    tr_dyp_saved_free(&sv);
    free(bsave);
    free(ra);
    if (why[0])
        return tr_break(s, "dynamic shapes: the graph does not hold at other sizes (%s)", why);
    return 0;
}

/* ---------------- the entry's template ---------------- */
static bool has_attr(const symattr *a, int n, int stmt, int slot)
{
    for (int i = 0; i < n; i++)
        if (a[i].stmt == stmt && a[i].slot == slot)
            return true;
    return false;
}

static int inst_apply(const st_fe_symtab *tb, st_graph *g, const symattr *attr, int nattr,
                      const int *in_expr, int nin, const int64_t *sym)
{
    for (int k = 0; k < nin && k < g->ninputs; k++) {
        st_meta *m = &g->values[g->inputs[k]].meta;
        for (int d = 0; d < m->ndim; d++) {
            int e = in_expr[k * ST_MAX_DIMS + d];
            if (e >= 0 && st_fe_sx_eval(tb, e, sym, &m->shape[d]) < 0)
                return -1;
        }
    }
    for (int i = 0; i < nattr; i++) {
        int64_t v;
        if (st_fe_sx_eval(tb, attr[i].expr, sym, &v) < 0)
            return -1;
        st_attrs *at = &g->stmts[attr[i].stmt].attrs;
        if (attr[i].slot < 100) at->dims[attr[i].slot] = v;
        else if (attr[i].slot < 200) at->i[attr[i].slot - 100] = v;
        else at->f[attr[i].slot - 200] = (double)v;
    }
    return 0;
}

int tr_dyn_finish(tr_state *s, st_fe_entry *e, const st_graph *g, st_tensor *const *ins, int nin,
                  const int *smap, int nsmap, const st_rt_cfn_opts *o)
{
    struct tr_dyn *d = s->dyn;
    st_fe_symtab *tb = tab(s);
    bool dims = false;
    for (int k = 0; d && k < tb->nsym; k++)
        dims |= tb->dim[k] >= 0 || (d->intarg[k] && !d->pinned[k]);
    if (!d || !d->shapes || !dims)
        return 0;              /* no symbolic size: a static entry */
    struct st_fe_dyn *dy = calloc(1, sizeof *dy);
    if (!dy)
        return tr_break(s, "out of memory");
    e->dyn = dy;
    dy->nsym = tb->nsym;
    dy->attr = malloc(sizeof *dy->attr * (size_t)(d->nattr + 1));
    dy->in_expr = malloc(sizeof(int) * (size_t)(nin + 1) * ST_MAX_DIMS);
    dy->rg = malloc(sizeof(bool) * (size_t)(nin + 1));
    dy->wb_out = malloc(sizeof(int) * (size_t)(o->nwriteback + 1));
    dy->wb_in = malloc(sizeof(int) * (size_t)(o->nwriteback + 1));
    dy->wb_quiet = calloc((size_t)o->nwriteback + 1, sizeof(bool));
    dy->tmpl = st_ir_graph_clone(g);
    if (!dy->attr || !dy->in_expr || !dy->rg || !dy->wb_out || !dy->wb_in || !dy->wb_quiet || !dy->tmpl)
        return tr_break(s, "out of memory");
    for (int i = 0; i < d->nattr; i++) {
        int ns = d->attr[i].stmt < nsmap ? smap[d->attr[i].stmt] : -1;
        if (ns >= 0)
            dy->attr[dy->nattr++] = (symattr){ns, d->attr[i].slot, d->attr[i].expr};
    }
    if (region_attrs(s, g, &dy->rattr, &dy->nrattr) < 0)
        return tr_break(s, "out of memory");
    dy->nin = nin;
    for (int k = 0; k < nin; k++) {
        PyObject *key = tr_id_key(ins[k]);
        PyObject *ex = key ? PyDict_GetItem(d->tsyms, key) : NULL;
        Py_XDECREF(key);
        for (int dd = 0; dd < ST_MAX_DIMS; dd++)
            dy->in_expr[k * ST_MAX_DIMS + dd] =
                ex && dd < PyTuple_GET_SIZE(ex) ? (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, dd)) : -1;
        dy->rg[k] = o->input_requires_grad ? o->input_requires_grad[k] : false;
    }
    dy->inst[0].key = malloc(sizeof(int64_t) * (size_t)(tb->nsym + 1));
    if (!dy->inst[0].key)
        return tr_break(s, "out of memory");
    for (int k = 0; k < tb->nsym; k++)
        dy->inst[0].key[k] = tb->val[k];
    dy->backend = o->backend;
    dy->nwb = o->nwriteback;
    dy->nvisible = o->nvisible;
    for (int k = 0; k < o->nwriteback; k++) {
        dy->wb_out[k] = o->writeback_out[k];
        dy->wb_in[k] = o->writeback_in[k];
        dy->wb_quiet[k] = o->writeback_quiet && o->writeback_quiet[k];
    }
    /* the guards of the symbols' tensors check ranks, not sizes */
    for (int i = 0; i < s->guards.n; i++) {
        st_fe_guard *gd = &s->guards.v[i];
        if (gd->kind != ST_G_TENSOR)
            continue;
        PyObject *sk = PyLong_FromLong(gd->src->id);
        PyObject *m = sk ? PyDict_GetItem(d->srcmask, sk) : NULL;
        Py_XDECREF(sk);
        if (m)
            gd->dyn = (uint32_t)PyLong_AsUnsignedLong(m);
    }
    return 0;
}

void tr_dyn_adopt(st_fe_entry *e, void *cfn)
{
    struct st_fe_dyn *dy = e->dyn;
    dy->inst[0].cfn = cfn;
    dy->inst[0].used = ++dy->clock;
    dy->n = 1;
}

void st_fe_dyn_free(struct st_fe_dyn *dy)
{
    if (!dy)
        return;
    if (dy->n == 0)
        free(dy->inst[0].key);
    for (int i = 0; i < dy->n; i++) {
        free(dy->inst[i].key);
        if (i > 0 && dy->inst[i].cfn)      /* inst[0] is the entry's own cfn */
            st_rt_cfn_free((st_rt_cfn *)dy->inst[i].cfn);
    }
    st_ir_graph_free(dy->tmpl);
    free(dy->attr);
    free(dy->rattr);
    free(dy->in_expr);
    free(dy->rg);
    free(dy->wb_out);
    free(dy->wb_in);
    free(dy->wb_quiet);
    free(dy);
}

void *st_fe_dyn_cfn(st_fe_entry *e, const st_fe_frame *f, PyObject **memo)
{
    struct st_fe_dyn *dy = e->dyn;
    const st_fe_symtab *tb = e->guards.sym;
    int64_t vals[MAXSYM];
    int r = st_fe_sym_values(tb, f, memo, vals);
    if (r <= 0) {
        if (r == 0)
            PyErr_SetString(PyExc_RuntimeError, "compiled entry: a size symbol's tensor is missing");
        return NULL;
    }
    for (int i = 0; i < dy->n; i++)
        if (!memcmp(dy->inst[i].key, vals, sizeof(int64_t) * (size_t)dy->nsym)) {
            dy->inst[i].used = ++dy->clock;
            return dy->inst[i].cfn;
        }
    /* a new instance: the template at these sizes, compiled (the kernels
     * come from the kernel cache) */
    st_graph *g = st_ir_graph_clone(dy->tmpl);
    if (!g || inst_apply(tb, g, dy->attr, dy->nattr, dy->in_expr, dy->nin, vals) < 0 ||
        st_ir_reinfer(g) != ST_OK ||
        (g->nregions && region_sync(tb, g, dy->rattr, dy->nrattr, vals) < 0)) {
        if (g && st_err_kind() == ST_OK)
            st_err(ST_ERR_VALUE, "dynamic shapes: a PyLayer's backward does not hold at these sizes");
        st_ir_graph_free(g);
        st_fe_raise();
        return NULL;
    }
    st_rt_cfn_opts o = {.backend = dy->backend, .input_requires_grad = dy->rg,
                        .writeback_out = dy->wb_out, .writeback_in = dy->wb_in,
                        .writeback_quiet = dy->wb_quiet,
                        .nwriteback = dy->nwb, .nvisible = dy->nvisible};
    st_rt_cfn *c = st_rt_cfn_new(g, &o);
    if (!c) {
        st_fe_raise();
        return NULL;
    }
    int slot = dy->n;
    if (slot == 16) {            /* evict the least recently used (never inst[0]) */
        slot = 1;
        for (int i = 2; i < dy->n; i++)
            if (dy->inst[i].used < dy->inst[slot].used)
                slot = i;
        st_rt_cfn_free((st_rt_cfn *)dy->inst[slot].cfn);
    } else {
        dy->inst[slot].key = malloc(sizeof(int64_t) * (size_t)(dy->nsym + 1));
        if (!dy->inst[slot].key) {
            st_rt_cfn_free(c);
            PyErr_NoMemory();
            return NULL;
        }
        dy->n++;
    }
    memcpy(dy->inst[slot].key, vals, sizeof(int64_t) * (size_t)dy->nsym);
    dy->inst[slot].cfn = c;
    dy->inst[slot].used = ++dy->clock;
    st_fe_dyn_instances++;
    return c;
}

/* ---------------- module functions ---------------- */
/* _dyn_shapes(): True while a frame is translated with dynamic shapes (library
 * code run for real inside it then avoids autograd Functions, whose traced
 * backward keeps the traced sizes: symtrace/_ops/shape.py cat). */
static PyObject *py_dyn_shapes(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    return PyBool_FromLong(cur && tr_dyn_shapes(cur));
}

static PyMethodDef dyn_methods[] = {
    {"_dyn_shapes", py_dyn_shapes, METH_NOARGS, "True while translating with dynamic shapes"},
    {"_fe_set_symint", set_symint, METH_VARARGS, "registers symtrace._symint's classes"},
    {"_lazy_spec", py_lazy_spec, METH_O, "a lazy argument's value, guarded"},
    {"_sym_op", sym_op, METH_VARARGS, "SymInt arithmetic (op, a, b)"},
    {"_sym_cmp", sym_cmp, METH_VARARGS, "SymInt comparison (op, a, b): a guard"},
    {"_sym_spec", sym_spec, METH_O, "a SymInt's value, guarded"},
    {NULL, NULL, 0, NULL},
};

int st_fe_init_dynamic(PyObject *m);
int st_fe_init_dynamic(PyObject *m)
{
    return PyModule_AddFunctions(m, dyn_methods);
}
