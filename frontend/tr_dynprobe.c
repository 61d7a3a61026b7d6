/* frontend/tr_dynprobe.c - probing a dynamic-shape translation's graph at
 * other sizes (tr_dynamic.c): the trace graph so far is re-inferred
 * (st_ir_reinfer) with the symbols set to the probe points, two sets of
 * distinct primes (m * a prime for a symbol guarded divisible by m). Owns
 * tr_dyp_*: putting the graph back after a probe, the dims of a computed
 * tensor matched to expressions over the symbols (recover: c * s_i * s_j...,
 * s_i + c, (s + a) // b + c), and the repair of a graph that does not hold
 * at the probes: the fewest equal-size aliases, divisibility guards and
 * pins that make it hold, each guarded. */
#include "tr_dyn_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tr_dyp_save_graph(tr_state *s, const st_graph *g, tr_dyp_saved *sv)
{
    if (tr_dyn_sync_scatters(s, g) < 0)
        return -1;
    sv->metas = malloc(sizeof *sv->metas * (size_t)(g->nvalues + 1));
    sv->attrs = malloc(sizeof *sv->attrs * (size_t)(s->dyn->nattr + 1));
    if (!sv->metas || !sv->attrs) {
        free(sv->metas);
        free(sv->attrs);
        return -1;
    }
    for (int i = 0; i < g->nvalues; i++)
        sv->metas[i] = g->values[i].meta;
    for (int i = 0; i < s->dyn->nattr; i++)
        sv->attrs[i] = g->stmts[s->dyn->attr[i].stmt].attrs;
    return 0;
}

void tr_dyp_restore_graph(tr_state *s, st_graph *g, const tr_dyp_saved *sv)
{
    for (int i = 0; i < g->nvalues; i++)
        g->values[i].meta = sv->metas[i];
    for (int i = 0; i < s->dyn->nattr; i++)
        g->stmts[s->dyn->attr[i].stmt].attrs = sv->attrs[i];
}

void tr_dyp_saved_free(tr_dyp_saved *sv)
{
    free(sv->metas);
    free(sv->attrs);
}

/* Input metas at symbol values sym (exprs of the tensors the trace bound
 * to g's inputs) and the recorded attributes substituted; reinfer. The
 * caller restores (save_graph / restore_graph). */

int tr_dyp_apply_at(tr_state *s, st_graph *g, st_tensor *const *ins, int nin,
                    const int64_t *sym)
{
    st_fe_symtab *tb = tab(s);
    for (int k = 0; k < nin && k < g->ninputs; k++) {
        PyObject *key = tr_id_key(ins[k]);
        PyObject *ex = key ? PyDict_GetItem(s->dyn->tsyms, key) : NULL;
        Py_XDECREF(key);
        if (!ex)
            continue;
        st_meta *m = &g->values[g->inputs[k]].meta;
        for (int d = 0; d < m->ndim && d < PyTuple_GET_SIZE(ex); d++)
            if (st_fe_sx_eval(tb, (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d)), sym, &m->shape[d]) < 0)
                return -1;
    }
    for (int i = 0; i < s->dyn->nattr; i++) {
        symattr *a = &s->dyn->attr[i];
        int64_t v;
        if (a->stmt >= g->nstmts || st_fe_sx_eval(tb, a->expr, sym, &v) < 0)
            return -1;
        st_attrs *at = &g->stmts[a->stmt].attrs;
        if (a->slot < 100) at->dims[a->slot] = v;
        else if (a->slot < 200) at->i[a->slot - 100] = v;
        else at->f[a->slot - 200] = (double)v;
    }
    return st_ir_reinfer(g) == ST_OK ? 0 : -1;
}

/* Symbol values at probe point p: primes, or the value of a pinned one. */
void tr_dyp_probe_vals(tr_state *s, int p, int64_t *out)
{
    st_fe_symtab *tb = tab(s);
    for (int k = 0; k < tb->nsym; k++) {
        int r = s->dyn->alias[k] ? s->dyn->alias[k] - 1 : k;
        out[k] = s->dyn->pinned[k] || s->dyn->pinned[r] ? tb->val[k]
               : tr_dyn_primes[p][r] * (s->dyn->mod[r] ? s->dyn->mod[r] : 1) +
                 (s->dyn->alias[k] ? s->dyn->aoff[k] : 0);
    }
}

/* The factor of free symbol k's probe values besides its prime. */
static int64_t mod_of(tr_state *s, int k)
{
    return s->dyn->mod[k] ? s->dyn->mod[k] : 1;
}

/* k's probe value is not its own prime (pinned, or an alias). */
static bool not_free(tr_state *s, int k)
{
    return s->dyn->pinned[k] || s->dyn->alias[k];
}

/* t's dims are known to the translation with at least one not a constant
 * (a tensor whose dims were only read, a buffer's, has constants there). */
static bool sym_dims(tr_state *s, st_tensor *t)
{
    PyObject *key = tr_id_key(t);
    PyObject *ex = key ? PyDict_GetItem(s->dyn->tsyms, key) : NULL;
    Py_XDECREF(key);
    PyErr_Clear();
    for (Py_ssize_t d = 0; ex && PyTuple_Check(ex) && d < PyTuple_GET_SIZE(ex); d++) {
        int e = (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d));
        if (e < 0 || !sx_is_const(tab(s), e))
            return true;
    }
    return false;
}

static bool weight_dim(tr_state *s, st_tensor *const *ins, int nin, int64_t v)
{
    for (int i = 0; i < nin; i++) {
        bool symbolic = sym_dims(s, ins[i]);
        for (int d = 0; !symbolic && d < ins[i]->ndim; d++)
            if (ins[i]->shape[d] == v)
                return true;
    }
    return false;
}

/* A repair of a graph that does not hold at the probes: pin symbol k to
 * its value (cls false), or make it a member of the class of the free
 * symbols of its value (cls: duck sizing, each member guarded equal to the
 * class's first). */
typedef struct {
    int k;
    bool cls, on;
} fix;

static int fix_push(fix *f, int n, int k, bool cls)
{
    for (int i = 0; i < n; i++)
        if (f[i].k == k && f[i].cls == cls)
            return n;
    if (n < 3 * MAXSYM)
        f[n++] = (fix){k, cls, true};
    return n;
}

/* No single symbol is a weight's size: the symbols of a run of a symbolic
 * input's dims whose product is one (flatten then linear: C*H*W equal to
 * the weight's in-features, TorchDynamo's s1*s2*s3 == 192). */
static int product_pins(tr_state *s, st_tensor *const *ins, int nin, fix *f, int n)
{
    st_fe_symtab *tb = tab(s);
    for (int i = 0; i < nin; i++) {
        PyObject *key = tr_id_key(ins[i]);
        PyObject *ex = key ? PyDict_GetItem(s->dyn->tsyms, key) : NULL;
        Py_XDECREF(key);
        if (!ex || !PyTuple_Check(ex))
            continue;
        int nd = (int)PyTuple_GET_SIZE(ex);
        for (int a = 0; a < nd; a++) {
            int64_t prod = 1;
            for (int b = a; b < nd; b++) {
                prod *= ins[i]->ndim > b ? ins[i]->shape[b] : 1;
                if (b == a || prod < 2 || !weight_dim(s, ins, nin, prod))
                    continue;
                for (int d = a; d <= b; d++) {
                    int e = (int)PyLong_AsLong(PyTuple_GET_ITEM(ex, d));
                    if (e < 0 || e >= tb->nx || tb->x[e].op != ST_SX_SYM ||
                        s->dyn->pinned[tb->x[e].c])
                        continue;
                    n = fix_push(f, n, (int)tb->x[e].c, false);
                }
            }
        }
    }
    PyErr_Clear();
    return n;
}

/* The repairs to try: every free dim symbol a member of its value's class
 * where another dim symbol has its value (pinned where that one is), and
 * pinned where its value is a size of a tensor without symbols (a
 * weight's: x @ w with x's last dim a symbol), as TorchDynamo's shape
 * checks would; none of those: the product runs. */
static int fix_candidates(tr_state *s, st_tensor *const *ins, int nin, fix *f)
{
    st_fe_symtab *tb = tab(s);
    int n = 0, npin = 0;
    for (int k = 0; k < tb->nsym; k++) {
        if (tb->dim[k] < 0 || not_free(s, k))
            continue;
        for (int j = 0; j < tb->nsym; j++) {
            if (j == k || tb->dim[j] < 0 || tb->val[j] != tb->val[k])
                continue;
            int r = s->dyn->alias[j] ? s->dyn->alias[j] - 1 : j;
            if (s->dyn->pinned[j] || s->dyn->pinned[r]) {
                n = fix_push(f, n, k, false);
                npin++;
            } else {
                n = fix_push(f, n, k, true);
            }
        }
    }
    for (int k = 0; k < tb->nsym; k++) {
        if (s->dyn->pinned[k])
            continue;
        bool hit = false;
        for (int i = 0; i < nin && !hit; i++) {
            if (sym_dims(s, ins[i]))
                continue;
            for (int d = 0; d < ins[i]->ndim && !hit; d++)
                hit = ins[i]->shape[d] == tb->val[k];
        }
        if (hit) {
            n = fix_push(f, n, k, false);
            npin++;
        }
    }
    if (npin == 0)
        n = product_pins(s, ins, nin, f, n);
    return n;
}

/* The graph re-infers at both probe points (restored after each). */
bool tr_dyp_holds(tr_state *s, st_graph *g, st_tensor *const *ins, int nin, const tr_dyp_saved *sv)
{
    bool ok = true;
    for (int p = 0; p < NPROBE && ok; p++) {
        int64_t pv[MAXSYM];
        tr_dyp_probe_vals(s, p, pv);
        ok = tr_dyp_apply_at(s, g, ins, nin, pv) == 0;
        if (!ok)
            st_err_clear();
        tr_dyp_restore_graph(s, g, sv);
    }
    return ok;
}

/* Classes of equal sizes: by value (by_dim false: duck sizing), or by
 * value and dim index (the batch dims of several inputs, apart from their
 * feature dims of the same value). */
static bool same_class(tr_state *s, int a, int b, bool by_dim)
{
    st_fe_symtab *tb = tab(s);
    return tb->val[a] == tb->val[b] && (!by_dim || tb->dim[a] == tb->dim[b]);
}

/* The class member that the others of k's class alias: the first one on. */
static int fix_rep(tr_state *s, const fix *f, int n, int k, bool by_dim)
{
    int r = -1;
    for (int i = 0; i < n; i++)
        if (f[i].on && f[i].cls && same_class(s, f[i].k, k, by_dim) && (r < 0 || f[i].k < r))
            r = f[i].k;
    return r;
}

static void fixes_set(tr_state *s, const fix *f, int n, bool by_dim, const bool *was_pinned,
                      const int *was_alias)
{
    memcpy(s->dyn->pinned, was_pinned, sizeof s->dyn->pinned);
    memcpy(s->dyn->alias, was_alias, sizeof s->dyn->alias);
    for (int i = 0; i < n; i++) {
        if (!f[i].on)
            continue;
        if (!f[i].cls) {
            s->dyn->pinned[f[i].k] = true;
            continue;
        }
        int r = fix_rep(s, f, n, f[i].k, by_dim);
        if (r != f[i].k)
            s->dyn->alias[f[i].k] = r + 1;
    }
}

/* k is an on member of a class (of by_dim) */
static bool fix_member(tr_state *s, const fix *f, int n, int k)
{
    for (int i = 0; i < n; i++)
        if (f[i].on && f[i].cls && f[i].k == k)
            return true;
    return false;
}

/* The fewest of fixes f (all on, known to hold) under which the graph
 * holds, dropped one by one, outer dims first. by_dim false: class
 * members first, then pins; true: pins first, a class's members' pins
 * dropped together (its members then share one probe value), then class
 * members. Returns how many symbols it pins. */
static int minimize(tr_state *s, st_graph *g, st_tensor *const *ins, int nin, const tr_dyp_saved *sv,
                    fix *f, int n, bool by_dim, const bool *was_pinned, const int *was_alias)
{
    st_fe_symtab *tb = tab(s);
    for (int pass = 0; pass < 2; pass++) {
        bool cls = by_dim ? pass == 1 : pass == 0;
        for (int dim = 0; dim < ST_MAX_DIMS; dim++)
            for (int i = 0; i < n; i++) {
                if (f[i].cls != cls || !f[i].on || tb->dim[f[i].k] != dim)
                    continue;
                bool off[3 * MAXSYM] = {false};
                off[i] = true;
                if (by_dim && !cls && fix_member(s, f, n, f[i].k))
                    for (int j = 0; j < n; j++)
                        if (!f[j].cls && f[j].on && fix_member(s, f, n, f[j].k) &&
                            same_class(s, f[j].k, f[i].k, true))
                            off[j] = true;
                for (int j = 0; j < n; j++)
                    if (off[j])
                        f[j].on = false;
                fixes_set(s, f, n, by_dim, was_pinned, was_alias);
                if (!tr_dyp_holds(s, g, ins, nin, sv))
                    for (int j = 0; j < n; j++)
                        if (off[j])
                            f[j].on = true;
            }
    }
    int np = 0;
    for (int i = 0; i < n; i++)
        np += f[i].on && !f[i].cls;
    return np;
}

int tr_dyp_sym_expr_of(tr_state *s, int k)
{
    st_fe_symtab *tb = tab(s);
    for (int i = 0; i < tb->nx; i++)
        if (tb->x[i].op == ST_SX_SYM && tb->x[i].c == k)
            return i;
    return sx_new(tb, ST_SX_SYM, -1, -1, k);
}

/* The free dim symbols guarded divisible by their value, then each
 * reduced to none or the smallest divisor under which the graph still
 * holds (x.reshape(b // 2, -1), x.chunk(2): b even, as TorchDynamo's
 * Mod(s0, 2) == 0). Returns how many it keeps; 0: mods as they were. */
static int try_mods(tr_state *s, st_graph *g, st_tensor *const *ins, int nin, const tr_dyp_saved *sv)
{
    st_fe_symtab *tb = tab(s);
    int64_t was[MAXSYM];
    memcpy(was, s->dyn->mod, sizeof was);
    int cand[MAXSYM], n = 0;
    for (int k = 0; k < tb->nsym; k++)
        if (tb->dim[k] >= 0 && !not_free(s, k) && !s->dyn->mod[k] && tb->val[k] >= 2) {
            s->dyn->mod[k] = tb->val[k];
            cand[n++] = k;
        }
    if (!n || !tr_dyp_holds(s, g, ins, nin, sv)) {
        memcpy(s->dyn->mod, was, sizeof was);
        return 0;
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        int k = cand[i];
        int64_t full = s->dyn->mod[k];
        s->dyn->mod[k] = 0;
        if (tr_dyp_holds(s, g, ins, nin, sv))
            continue;
        int64_t m = 2;
        for (; m < full; m++) {
            if (full % m)
                continue;
            s->dyn->mod[k] = m;
            if (tr_dyp_holds(s, g, ins, nin, sv))
                break;
        }
        s->dyn->mod[k] = m;
        kept++;
    }
    return kept;
}

/* Two sizes a few apart that the graph needs in step (an attention mask
 * of the past length + 1 added to the scores over the keys: s18 == s3 + 1,
 * TorchDynamo's unification of the broadcast dims): with the candidate
 * fixes f on, the first single free dim symbol k made a member of a free
 * class j at offset c = val[k] - val[j] (1..8, the smallest first) under
 * which the graph holds is kept, guarded s_k == s_j + c, and stays in
 * was_alias. Returns 1 when one is kept. */
static int try_offset(tr_state *s, st_graph *g, st_tensor *const *ins, int nin,
                      const tr_dyp_saved *sv, const fix *f, int n, const bool *was_pinned,
                      int *was_alias)
{
    st_fe_symtab *tb = tab(s);
    fixes_set(s, f, n, false, was_pinned, was_alias);
    int cur[MAXSYM];
    memcpy(cur, s->dyn->alias, sizeof cur);
    for (int64_t c = 1; c <= 8; c++)
        for (int k = 0; k < tb->nsym; k++) {
            if (tb->dim[k] < 0 || not_free(s, k))
                continue;
            for (int j = 0; j < tb->nsym; j++) {
                if (j == k || tb->dim[j] < 0 || not_free(s, j) || tb->val[k] - tb->val[j] != c)
                    continue;
                s->dyn->alias[k] = j + 1;
                s->dyn->aoff[k] = c;
                bool ok = tr_dyp_holds(s, g, ins, nin, sv);
                if (ok) {
                    int sk = tr_dyp_sym_expr_of(s, k), sj = tr_dyp_sym_expr_of(s, j);
                    int cc = sx_new(tb, ST_SX_CONST, -1, -1, c);
                    int sum = sj < 0 || cc < 0 ? -1 : sx_new(tb, ST_SX_ADD, sj, cc, 0);
                    if (sk >= 0 && sum >= 0 && add_rel(s, sk, sum, ST_SXC_EQ, true) == 0) {
                        was_alias[k] = j + 1;
                        return 1;
                    }
                    PyErr_Clear();
                }
                memcpy(s->dyn->alias, cur, sizeof cur);
                s->dyn->aoff[k] = 0;
            }
        }
    return 0;
}

/* The graph (g, restored from sv first) did not hold at the probes: the
 * fewest pins and class members (minimize, with classes by value and by
 * value and dim: the one that pins fewer) under which it holds, each
 * guarded. Returns how many it made (0: none helps). */
int tr_dyp_repair(tr_state *s, st_graph *g, st_tensor *const *ins, int nin, const tr_dyp_saved *sv)
{
    tr_dyp_restore_graph(s, g, sv);
    fix f[3 * MAXSYM], f2[3 * MAXSYM];
    int n = fix_candidates(s, ins, nin, f);
    bool was_pinned[MAXSYM];
    int was_alias[MAXSYM];
    memcpy(was_pinned, s->dyn->pinned, sizeof was_pinned);
    memcpy(was_alias, s->dyn->alias, sizeof was_alias);
    st_fe_symtab *tb = tab(s);
    fixes_set(s, f, n, false, was_pinned, was_alias);
    int64_t was_mod[MAXSYM];
    memcpy(was_mod, s->dyn->mod, sizeof was_mod);
    bool ok = tr_dyp_holds(s, g, ins, nin, sv);
    if (!ok) {
        /* divisibility first with the candidates off (an alias of two sizes
         * that must both be even is not needed), then with them on */
        fixes_set(s, f, 0, false, was_pinned, was_alias);
        ok = try_mods(s, g, ins, nin, sv) > 0;
        fixes_set(s, f, n, false, was_pinned, was_alias);
        ok = ok && tr_dyp_holds(s, g, ins, nin, sv);
        if (!ok) {
            memcpy(s->dyn->mod, was_mod, sizeof was_mod);
            ok = try_mods(s, g, ins, nin, sv) > 0;
        }
    }
    int offs = 0;
    if (!ok) {
        memcpy(s->dyn->mod, was_mod, sizeof was_mod);
        offs = try_offset(s, g, ins, nin, sv, f, n, was_pinned, was_alias);
        ok = offs > 0;
    }
    if (!ok) {
        /* last: every free dim symbol pinned, then freed one by one as
         * the others (x.view(b, 2, -1): the product of the other dims
         * must stay even, their symbols are pinned and b stays free) */
        for (int k = 0; k < tb->nsym; k++)
            if (tb->dim[k] >= 0 && !not_free(s, k))
                n = fix_push(f, n, k, false);
        fixes_set(s, f, n, false, was_pinned, was_alias);
        if (!tr_dyp_holds(s, g, ins, nin, sv)) {
            fixes_set(s, f, 0, false, was_pinned, was_alias);
            return 0;
        }
    }
    memcpy(f2, f, sizeof(fix) * (size_t)n);
    int pa = minimize(s, g, ins, nin, sv, f, n, false, was_pinned, was_alias);
    int pb = -1;
    fixes_set(s, f2, n, true, was_pinned, was_alias);
    if (tr_dyp_holds(s, g, ins, nin, sv))
        pb = minimize(s, g, ins, nin, sv, f2, n, true, was_pinned, was_alias);
    bool by_dim = pb >= 0 && pb < pa;
    if (by_dim)
        memcpy(f, f2, sizeof(fix) * (size_t)n);
    fixes_set(s, f, 0, by_dim, was_pinned, was_alias);
    int made = offs;
    for (int k = 0; k < tb->nsym; k++) {
        if (s->dyn->mod[k] == was_mod[k])
            continue;
        int sk = tr_dyp_sym_expr_of(s, k);
        int m = sk < 0 ? -1 : sx_new(tb, ST_SX_MOD, sk, sx_new(tb, ST_SX_CONST, -1, -1, s->dyn->mod[k]), 0);
        int z = sx_new(tb, ST_SX_CONST, -1, -1, 0);
        if (m < 0 || z < 0 || add_rel(s, m, z, ST_SXC_EQ, true) < 0) {
            PyErr_Clear();
            s->dyn->mod[k] = was_mod[k];
            continue;
        }
        made++;
    }
    for (int i = 0; i < n; i++) {
        if (!f[i].on)
            continue;
        int r = f[i].cls ? fix_rep(s, f, n, f[i].k, by_dim) : -1;
        if (f[i].cls && r == f[i].k)
            continue;            /* the class's first: the others are guarded equal to it */
        int sk = tr_dyp_sym_expr_of(s, f[i].k);
        int o = f[i].cls ? tr_dyp_sym_expr_of(s, r) : sx_new(tb, ST_SX_CONST, -1, -1, tb->val[f[i].k]);
        if (sk < 0 || o < 0 || add_rel(s, sk, o, ST_SXC_EQ, true) < 0) {
            PyErr_Clear();
            continue;
        }
        if (f[i].cls)
            s->dyn->alias[f[i].k] = r + 1;
        else
            s->dyn->pinned[f[i].k] = true;
        made++;
    }
    return made;
}

/* The dims of traced value v at the probe points: out[p][d]. 0 ok, -1 the
 * graph does not re-infer there (reason in s->dyn). */
int tr_dyp_probe(tr_state *s, int v, int64_t out[NPROBE][ST_MAX_DIMS], int *ndim)
{
    st_graph *g = st_rt_trace_graph();
    if (!g || v < 0 || v >= g->nvalues)
        return -1;
    int nin = 0;
    st_tensor *const *ins = st_rt_trace_inputs(&nin);
    tr_dyp_saved sv;
    if (tr_dyp_save_graph(s, g, &sv) < 0)
        return -1;
    int rc = 0;
    bool retried = false;
    for (int p = 0; p < NPROBE && rc == 0; p++) {
        int64_t pv[MAXSYM];
        tr_dyp_probe_vals(s, p, pv);
        if (tr_dyp_apply_at(s, g, ins, nin, pv) < 0) {
            char why[200];
            snprintf(why, sizeof why, " (%s)", st_err_msg());
            st_err_clear();
            if (!retried && tr_dyp_repair(s, g, ins, nin, &sv) > 0) {
                retried = true;
                p = -1;          /* again, from the first probe */
            } else {
                dyn_fail(s, "the graph does not hold at other sizes%s", why);
                rc = -1;
            }
        } else {
            *ndim = g->values[v].meta.ndim;
            memcpy(out[p], g->values[v].meta.shape, sizeof(int64_t) * ST_MAX_DIMS);
        }
        tr_dyp_restore_graph(s, g, &sv);
    }
    tr_dyp_saved_free(&sv);
    return rc;
}

/* Dim d of traced value v with the symbols at probe point 0 but symbol k
 * (and its aliases) at x: 0 (*out), -1 it does not re-infer there. */
static int dim_at(tr_state *s, int v, int d, int k, int64_t x, int64_t *out)
{
    st_graph *g = st_rt_trace_graph();
    int nin = 0;
    st_tensor *const *ins = st_rt_trace_inputs(&nin);
    tr_dyp_saved sv;
    if (!g || v < 0 || tr_dyp_save_graph(s, g, &sv) < 0)
        return -1;
    int64_t pv[MAXSYM];
    tr_dyp_probe_vals(s, 0, pv);
    for (int j = 0; j < tab(s)->nsym; j++)
        if (j == k || s->dyn->alias[j] == k + 1)
            pv[j] = x + (j == k ? 0 : s->dyn->aoff[j]);
    int rc = tr_dyp_apply_at(s, g, ins, nin, pv);
    if (rc < 0)
        st_err_clear();
    else if (g->values[v].meta.ndim > d)
        *out = g->values[v].meta.shape[d];
    else
        rc = -1;
    tr_dyp_restore_graph(s, g, &sv);
    tr_dyp_saved_free(&sv);
    return rc;
}

/* An expression with value r0 at the translation's sizes and r[p] at the
 * probe points: c * s_i * s_j * ..., s_i + c, or (s_i + a) // b + c. -1
 * when none. */
static bool has_mod(const st_fe_symtab *tb)
{
    for (int i = 0; i < tb->nx; i++)
        if (tb->x[i].op == ST_SX_MOD || tb->x[i].op == ST_SX_FLOORDIV)
            return true;
    return false;
}

/* Expression e, recovered from the translation's size and the two probes,
 * holds with each free symbol moved one step on from probe 0: with a % or
 * a // among the expressions, the points can agree with the wrong one
 * (n % 5 is 2 at n = 12 and at the probes 107 and 227: a constant; the
 * odd probes and an odd n: 2 * (n + 1 - n // 2) looks like n + 3). Without
 * them, true. */
static bool moved_agree(tr_state *s, int e);

static bool confirmed(tr_state *s, int e)
{
    if (e < 0 || s->dyn->rv < 0 || !has_mod(tab(s)))
        return true;
    return moved_agree(s, e);
}

/* e agrees with the dim recover explains at the points with each free
 * symbol moved one step on from probe 0. */
static bool moved_agree(tr_state *s, int e)
{
    st_fe_symtab *tb = tab(s);
    for (int k = 0; k < tb->nsym; k++) {
        if (not_free(s, k) || !tr_dyn_varsym(s, k))
            continue;
        int64_t x = (tr_dyn_primes[0][k] + 1) * mod_of(s, k), y, want;
        int64_t pv[MAXSYM];
        tr_dyp_probe_vals(s, 0, pv);
        for (int j = 0; j < tb->nsym; j++)
            if (j == k || s->dyn->alias[j] == k + 1)
                pv[j] = x + (j == k ? 0 : s->dyn->aoff[j]);
        if (dim_at(s, s->dyn->rv, s->dyn->rd, k, x, &y) < 0 ||
            st_fe_sx_eval(tb, e, pv, &want) < 0 || y != want)
            return false;
    }
    return true;
}

static int recover(tr_state *s, int64_t r0, const int64_t *r);

/* An expression the translation already has (a dim of a cat's result,
 * s0 + s2, then carried through an elementwise op; a SymInt's n % 5)
 * with value r0 at the translation's sizes, r[p] at the probe points and
 * the dim's values with each free symbol moved: that one. -1 when none. */
static bool has_symbol(const st_fe_symtab *tb, int e)
{
    const st_fe_sx *x = &tb->x[e];
    if (x->op == ST_SX_SYM)
        return true;
    if (x->op == ST_SX_CONST)
        return false;
    return has_symbol(tb, x->a) || (x->op != ST_SX_NEG && has_symbol(tb, x->b));
}

static int known_expr(tr_state *s, int64_t r0, const int64_t *r)
{
    st_fe_symtab *tb = tab(s);
    if (s->dyn->rv < 0)
        return -1;
    int64_t pv[NPROBE][MAXSYM];
    for (int p = 0; p < NPROBE; p++)
        tr_dyp_probe_vals(s, p, pv[p]);
    int nx = tb->nx;
    for (int e = 0; e < nx; e++) {
        int64_t v;
        if (tb->x[e].op == ST_SX_CONST || !has_symbol(tb, e) ||
            st_fe_sx_eval(tb, e, tb->val, &v) < 0 || v != r0)
            continue;
        bool ok = true;
        for (int p = 0; ok && p < NPROBE; p++)
            ok = st_fe_sx_eval(tb, e, pv[p], &v) == 0 && v == r[p];
        if (ok && moved_agree(s, e))
            return e;
    }
    return -1;
}

int tr_dyp_recover(tr_state *s, int64_t r0, const int64_t *r)
{
    int e = recover(s, r0, r);
    if (e >= 0 && confirmed(s, e))
        return e;
    return known_expr(s, r0, r);
}

static int recover(tr_state *s, int64_t r0, const int64_t *r)
{
    st_fe_symtab *tb = tab(s);
    if (r[0] == r0 && r[1] == r0)
        return sx_new(tb, ST_SX_CONST, -1, -1, r0);
    int e[MAXSYM] = {0};
    int64_t c = r[0];
    for (int k = 0; k < tb->nsym && c != 0; k++)
        while (!not_free(s, k) && c % tr_dyn_primes[0][k] == 0 && e[k] < 4) {
            c /= tr_dyn_primes[0][k];
            e[k]++;
        }
    if (c != 0) {
        /* symbols divisible by m probe at m * p: c holds their m's too;
         * the expression is then (c * s_i * ...) // M, exact under the
         * divisibility guards */
        int64_t v1 = c, v0 = c, mm = 1;
        for (int k = 0; k < tb->nsym; k++)
            for (int j = 0; j < e[k]; j++) {
                v1 *= tr_dyn_primes[1][k];
                v0 *= tb->val[k];
                mm *= mod_of(s, k);
            }
        int64_t gc = c < 0 ? -c : c, gm = mm;
        while (gm) {
            int64_t t = gc % gm;
            gc = gm;
            gm = t;
        }
        c /= gc;
        mm /= gc;
        if (v0 % mm != 0)
            v0 = -1;
        else
            v0 /= mm;
        if (v1 == r[1] && v0 == r0) {
            int x = -1;
            for (int k = 0; k < tb->nsym; k++)
                for (int j = 0; j < e[k]; j++) {
                    int sy = -1;
                    for (int i = 0; i < tb->nx; i++)
                        if (tb->x[i].op == ST_SX_SYM && tb->x[i].c == k) { sy = i; break; }
                    if (sy < 0) sy = sx_new(tb, ST_SX_SYM, -1, -1, k);
                    x = x < 0 ? sy : sx_new(tb, ST_SX_MUL, x, sy, 0);
                }
            if (c != 1 && x >= 0)
                x = sx_new(tb, ST_SX_MUL, sx_new(tb, ST_SX_CONST, -1, -1, c), x, 0);
            if (mm != 1 && x >= 0)
                x = sx_new(tb, ST_SX_FLOORDIV, x, sx_new(tb, ST_SX_CONST, -1, -1, mm), 0);
            if (x >= 0)
                return x;
        }
    }
    for (int k = 0; k < tb->nsym; k++) {
        if (not_free(s, k))
            continue;
        /* s_i + c, or with s_i divisible by m: s_i // m + c */
        for (int64_t m = mod_of(s, k); m >= 1; m = m > 1 ? 1 : 0) {
            int64_t q = mod_of(s, k) / m;
            int64_t cc = r[0] - tr_dyn_primes[0][k] * q;
            if (r[1] - tr_dyn_primes[1][k] * q == cc && r0 - tb->val[k] / m == cc) {
                int sy = sx_new(tb, ST_SX_SYM, -1, -1, k);
                if (m > 1)
                    sy = sx_new(tb, ST_SX_FLOORDIV, sy, sx_new(tb, ST_SX_CONST, -1, -1, m), 0);
                return cc ? sx_new(tb, ST_SX_ADD, sy, sx_new(tb, ST_SX_CONST, -1, -1, cc), 0) : sy;
            }
        }
    }
    /* (s_i + a) // b + c: a conv's or a pool's output size at stride b. a
     * (its residue mod b) must be the only one that fits the three points,
     * else the points do not tell which (odd probes, an odd size: none) */
    for (int k = 0; k < tb->nsym; k++) {
        if (not_free(s, k) || !tr_dyn_varsym(s, k))
            continue;
        int64_t p0 = tr_dyn_primes[0][k] * mod_of(s, k), p1 = tr_dyn_primes[1][k] * mod_of(s, k);
        for (int64_t b = 2; b <= 8; b++) {
            int fits = 0;
            int64_t fa = 0, fc = 0;
            bool fit[8] = {false};
            for (int64_t a = 0; a < b; a++) {
                int64_t c = r[0] - floordiv(p0 + a, b);
                if (r[1] == floordiv(p1 + a, b) + c && r0 == floordiv(tb->val[k] + a, b) + c) {
                    fit[a] = true;
                    fits++;
                    fa = a;
                    fc = c;
                }
            }
            /* more than one fits (the points' residues mod b do not cover
             * them all): the dim re-inferred with s_i at p0 + j * m for the
             * residues missing, until one is left */
            for (int64_t j = 1; fits > 1 && j < b && s->dyn->rv >= 0; j++) {
                int64_t x = p0 + j * mod_of(s, k), y;
                if (dim_at(s, s->dyn->rv, s->dyn->rd, k, x, &y) < 0)
                    return -1;
                fits = 0;
                for (int64_t a = 0; a < b; a++) {
                    int64_t c = r[0] - floordiv(p0 + a, b);
                    fit[a] = fit[a] && y == floordiv(x + a, b) + c;
                    if (fit[a]) {
                        fits++;
                        fa = a;
                        fc = c;
                    }
                }
            }
            if (fits > 1)
                return -1;
            if (fits == 1 && s->dyn->rv >= 0) {
                /* confirmed at one more point, s_i alone moved (no other
                 * symbol's size it would depend on) */
                int64_t x = p0 + mod_of(s, k), y;
                if (dim_at(s, s->dyn->rv, s->dyn->rd, k, x, &y) < 0 ||
                    y != floordiv(x + fa, b) + fc)
                    return -1;
            }
            if (fits == 1) {
                int x = sx_new(tb, ST_SX_SYM, -1, -1, k);
                if (fa)
                    x = sx_new(tb, ST_SX_ADD, x, sx_new(tb, ST_SX_CONST, -1, -1, fa), 0);
                x = sx_new(tb, ST_SX_FLOORDIV, x, sx_new(tb, ST_SX_CONST, -1, -1, b), 0);
                return fc ? sx_new(tb, ST_SX_ADD, x, sx_new(tb, ST_SX_CONST, -1, -1, fc), 0) : x;
            }
        }
    }
    return -1;
}

/* Dim d of traced value v (of size now) has no expression recover finds
 * (a strided window count at an odd size: the odd probes do not tell
 * (s + 1) // 2 from s // 2; ceil_mode's extra padding): the free symbols
 * it depends on (the graph re-inferred with one of them moved) pinned to
 * their values, as the sizes it was traced at. Returns how many. */
int tr_dyp_pin_involved(tr_state *s, int v, int d, int64_t now)
{
    st_graph *g = st_rt_trace_graph();
    st_fe_symtab *tb = tab(s);
    int nin = 0;
    st_tensor *const *ins = st_rt_trace_inputs(&nin);
    tr_dyp_saved sv;
    if (!g || tr_dyp_save_graph(s, g, &sv) < 0)
        return 0;
    bool hit[MAXSYM] = {false};
    for (int k = 0; k < tb->nsym; k++) {
        if (!tr_dyn_varsym(s, k) || not_free(s, k))
            continue;
        int64_t pv[MAXSYM];
        for (int j = 0; j < tb->nsym; j++) {
            int r = s->dyn->alias[j] ? s->dyn->alias[j] - 1 : j;
            pv[j] = r == k ? tr_dyn_primes[0][k] * mod_of(s, k) + (j == k ? 0 : s->dyn->aoff[j])
                           : tb->val[j];
        }
        bool ok = tr_dyp_apply_at(s, g, ins, nin, pv) == 0;
        if (!ok)
            st_err_clear();
        hit[k] = !ok || g->values[v].meta.ndim <= d || g->values[v].meta.shape[d] != now;
        tr_dyp_restore_graph(s, g, &sv);
    }
    tr_dyp_saved_free(&sv);
    int n = 0;
    for (int k = 0; k < tb->nsym; k++) {
        if (!hit[k])
            continue;
        if (pin_symbol(s, k) < 0) {
            PyErr_Clear();
            continue;
        }
        n++;
    }
    return n;
}

/* The dims of t as a tuple of expression ids (borrowed from tsyms). */

/* ---------------- probe values within the guards ----------------
 * A relation guard with a constant bound (s + 1 <= 32: a slice of a fixed
 * buffer, the causal mask's bias[:, :, k - q:k, :k], bounded by a symbolic
 * length) does not hold at the default probe primes (from 1009): the graph
 * would not hold there and the repair would pin the symbol. The symbol's
 * class gets probe primes below its default that satisfy every guard
 * naming only it (and constants or pinned symbols), the largest that do,
 * each distinct from the other symbols' probe values. */
static uint64_t sx_syms(const st_fe_symtab *t, int e)
{
    if (e < 0 || e >= t->nx)
        return 0;
    const st_fe_sx *x = &t->x[e];
    if (x->op == ST_SX_SYM)
        return x->c >= 0 && x->c < MAXSYM ? 1ull << x->c : 0;
    if (x->op == ST_SX_CONST)
        return 0;
    return sx_syms(t, x->a) | (x->op == ST_SX_NEG ? 0 : sx_syms(t, x->b));
}

static int root_of(tr_state *s, int k)
{
    return s->dyn->alias[k] ? s->dyn->alias[k] - 1 : k;
}

/* The guards naming class r (and no other free symbol; with `others`, also
 * those naming other free symbols, at their probe values) hold with the
 * class at x and the rest at probe point p. */
static bool class_fits(tr_state *s, int r, int p, int64_t x, bool others)
{
    st_fe_symtab *tb = tab(s);
    int64_t pv[MAXSYM];
    uint64_t cls = 0, fixed = 0;
    tr_dyp_probe_vals(s, p, pv);
    for (int j = 0; j < tb->nsym; j++) {
        if (root_of(s, j) == r) {
            pv[j] = x + (j == r ? 0 : s->dyn->aoff[j]);
            cls |= 1ull << j;
        } else if (s->dyn->pinned[j] || s->dyn->pinned[root_of(s, j)] || !tr_dyn_varsym(s, j)) {
            fixed |= 1ull << j;
        }
    }
    for (int i = 0; i < s->guards.n; i++) {
        const st_fe_guard *g = &s->guards.v[i];
        if (g->kind != ST_G_SYM)
            continue;
        uint64_t m = sx_syms(tb, g->sx_a) | sx_syms(tb, g->sx_b);
        if (!(m & cls) || (!others && (m & ~(cls | fixed))))
            continue;
        int64_t a, b;
        if (st_fe_sx_eval(tb, g->sx_a, pv, &a) < 0 || st_fe_sx_eval(tb, g->sx_b, pv, &b) < 0 ||
            tr_dyn_rel_holds(g->sx_op, a, b) != g->want)
            return false;
    }
    return true;
}

static bool is_prime(int64_t c)
{
    for (int64_t d = 2; d * d <= c; d++)
        if (c % d == 0)
            return false;
    return c >= 2;
}

/* Probe point p's value for class r: the largest prime below `below` (its
 * multiple by the class's divisor) that fits the guards, is no other
 * symbol's value there and not `avoid`; at probe 0 the next step fits
 * too (recover's check moves a symbol on from probe 0 by one). 0: none. */
static int64_t fit_prime(tr_state *s, int r, int p, int64_t below, int64_t avoid, bool others)
{
    st_fe_symtab *tb = tab(s);
    int64_t m = mod_of(s, r), pv[MAXSYM];
    tr_dyp_probe_vals(s, p, pv);
    for (int64_t c = below - 1; c >= 3; c--) {
        if (c == avoid || !is_prime(c))
            continue;
        bool used = false;
        for (int j = 0; j < tb->nsym && !used; j++)
            used = root_of(s, j) != r && pv[j] == c * m;
        if (used || !class_fits(s, r, p, c * m, others))
            continue;
        if (p != 0 || class_fits(s, r, p, (c + 1) * m, others))
            return c;
    }
    return 0;
}

void tr_dyp_fit_probes(tr_state *s, int k)
{
    int r = root_of(s, k);
    if (!s->dyn->shapes || !tr_dyn_varsym(s, r) || s->dyn->pinned[r] || s->dyn->pinned[k])
        return;
    int64_t m = mod_of(s, r);
    /* first with the relations to other free symbols too (n0 - n2 >= 0:
     * n2 moves below n0's probe value), then, when no prime fits those,
     * with the guards on this class alone */
    for (int pass = 0; pass < 2; pass++) {
        bool others = pass == 0;
        if (class_fits(s, r, 0, tr_dyn_primes[0][r] * m, others) &&
            class_fits(s, r, 1, tr_dyn_primes[1][r] * m, others))
            return;
        int64_t p0 = fit_prime(s, r, 0, tr_dyn_primes[0][r], 0, others);
        int64_t p1 = p0 ? fit_prime(s, r, 1, tr_dyn_primes[1][r], p0, others) : 0;
        if (!p0 || !p1)
            continue;            /* none: the repair pins it as before */
        tr_dyn_primes[0][r] = p0;
        tr_dyn_primes[1][r] = p1;
        return;
    }
}
