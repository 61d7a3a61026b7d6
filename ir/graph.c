/* ir/graph.c - owns StatementIR graphs in SSA form: creation and freeing,
 * inputs, constants and statements (inferred through the op registry),
 * outputs, verification and re-inference after input sizes change. */
#include <stdlib.h>
#include <string.h>

#include "st_ir.h"

static int next_graph_id = 0;

st_graph *st_ir_graph_new(void)
{
    st_graph *g = calloc(1, sizeof *g);
    if (!g) {
        st_err(ST_ERR_MEMORY, "graph_new: out of memory");
        return NULL;
    }
    g->id = __atomic_fetch_add(&next_graph_id, 1, __ATOMIC_RELAXED);
    return g;
}

void st_ir_graph_free(st_graph *g)
{
    if (!g)
        return;
    st_ir_regions_clear(g); /* ir/backward.c */
    free(g->values);
    free(g->stmts);
    free(g->inputs);
    free(g->outputs);
    free(g);
}

/* Ensures room for `need` elements in *arr; false (error set) on failure. */
static bool grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > (1 << 28)) {
            st_err(ST_ERR_MEMORY, "graph: too many elements");
            return false;
        }
        nc *= 2;
    }
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) {
        st_err(ST_ERR_MEMORY, "graph: out of memory");
        return false;
    }
    *arr = p;
    *cap = nc;
    return true;
}

#define GROW(g, field, cap, need) \
    grow((void **)&(g)->field, &(g)->cap, (need), sizeof *(g)->field)

static st_status check_meta(const char *who, const st_meta *m)
{
    if (!m)
        return st_err(ST_ERR_VALUE, "%s: null meta", who);
    if ((unsigned)m->dtype >= ST_NDTYPES)
        return st_err(ST_ERR_TYPE, "%s: invalid dtype %d", who, (int)m->dtype);
    if (m->ndim < 0 || m->ndim > ST_MAX_DIMS)
        return st_err(ST_ERR_VALUE, "%s: rank %d out of range [0, %d]", who,
                      m->ndim, ST_MAX_DIMS);
    if (m->kind != ST_META_TENSOR && m->kind != ST_META_SCALAR)
        return st_err(ST_ERR_VALUE, "%s: invalid meta kind %d", who,
                      (int)m->kind);
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] < 0)
            return st_err(ST_ERR_VALUE, "%s: negative size %lld at dim %d",
                          who, (long long)m->shape[d], d);
    return ST_OK;
}

/* A copy of m with the unused tail of shape zeroed (stable compare/hash). */
static st_meta clean_meta(const st_meta *m)
{
    st_meta c;
    memset(&c, 0, sizeof c);
    c.dtype = m->dtype;
    c.ndim = m->ndim;
    c.kind = m->kind;
    for (int d = 0; d < m->ndim && d < ST_MAX_DIMS; d++)
        c.shape[d] = m->shape[d];
    return c;
}

int st_ir_add_input(st_graph *g, const st_meta *m, bool is_param)
{
    if (!g) {
        st_err(ST_ERR_VALUE, "add_input: null graph");
        return -1;
    }
    if (check_meta("add_input", m) != ST_OK)
        return -1;
    if (!GROW(g, values, cap_values, g->nvalues + 1) ||
        !GROW(g, inputs, cap_inputs, g->ninputs + 1))
        return -1;
    int v = g->nvalues++;
    st_value *val = &g->values[v];
    memset(val, 0, sizeof *val);
    val->meta = clean_meta(m);
    val->kind = is_param ? ST_VAL_PARAM : ST_VAL_INPUT;
    val->producer = -1;
    val->name_index = is_param ? g->next_param++ : g->next_var++;
    g->inputs[g->ninputs++] = v;
    return v;
}

int st_ir_add_const(st_graph *g, st_dtype dtype, double f, int64_t i)
{
    if (!g) {
        st_err(ST_ERR_VALUE, "add_const: null graph");
        return -1;
    }
    if ((unsigned)dtype >= ST_NDTYPES) {
        st_err(ST_ERR_TYPE, "add_const: invalid dtype %d", (int)dtype);
        return -1;
    }
    if (!GROW(g, values, cap_values, g->nvalues + 1))
        return -1;
    int v = g->nvalues++;
    st_value *val = &g->values[v];
    memset(val, 0, sizeof *val);
    val->meta.dtype = dtype;
    val->meta.ndim = 0;
    val->meta.kind = ST_META_SCALAR;
    val->kind = ST_VAL_CONST;
    val->producer = -1;
    val->name_index = -1;
    val->fconst = f;
    val->iconst = i;
    return v;
}

/* Infers statement outputs from the current operand metas. */
static st_status infer_stmt(const st_graph *g, st_op_id op, const int *in,
                            int nin, const st_attrs *attrs, st_meta *out,
                            int *nout)
{
    st_meta metas[ST_MAX_IN];
    for (int k = 0; k < nin; k++)
        metas[k] = g->values[in[k]].meta;
    st_meta outs[ST_MAX_OUT + 8];
    int n = 0;
    st_status s = st_infer(op, metas, nin, attrs, outs, &n);
    if (s != ST_OK)
        return s;
    if (n < 1 || n > ST_MAX_OUT)
        return st_err(ST_ERR_RUNTIME, "%s: inference gave %d results",
                      st_op(op)->name, n);
    for (int k = 0; k < n; k++)
        out[k] = clean_meta(&outs[k]);
    *nout = n;
    return ST_OK;
}

int st_ir_add_stmt(st_graph *g, st_op_id op, const int *in, int nin,
                   const st_attrs *attrs, int *out_ids)
{
    if (!g) {
        st_err(ST_ERR_VALUE, "add_stmt: null graph");
        return -1;
    }
    const st_op_def *def = st_op(op);
    if (!def) {
        st_err(ST_ERR_VALUE, "add_stmt: unknown op id %d", (int)op);
        return -1;
    }
    if (nin < 0 || nin > ST_MAX_IN || (nin > 0 && !in)) {
        st_err(ST_ERR_VALUE, "%s: invalid operand count %d", def->name, nin);
        return -1;
    }
    for (int k = 0; k < nin; k++) {
        if (in[k] < 0 || in[k] >= g->nvalues) {
            st_err(ST_ERR_VALUE, "%s: operand %d refers to undefined value %d",
                   def->name, k, in[k]);
            return -1;
        }
    }
    st_attrs a;
    memset(&a, 0, sizeof a);
    if (attrs)
        a = *attrs;
    st_meta outs[ST_MAX_OUT];
    int nout = 0;
    if (infer_stmt(g, op, in, nin, &a, outs, &nout) != ST_OK)
        return -1;
    if (!GROW(g, values, cap_values, g->nvalues + nout) ||
        !GROW(g, stmts, cap_stmts, g->nstmts + 1))
        return -1;
    int si = g->nstmts++;
    st_stmt *s = &g->stmts[si];
    memset(s, 0, sizeof *s);
    s->op = op;
    s->nin = nin;
    s->nout = nout;
    for (int k = 0; k < nin; k++)
        s->in[k] = in[k];
    s->attrs = a;
    for (int k = 0; k < nout; k++) {
        int v = g->nvalues++;
        st_value *val = &g->values[v];
        memset(val, 0, sizeof *val);
        val->meta = outs[k];
        val->kind = ST_VAL_STMT;
        val->producer = si;
        val->name_index = g->next_var++;
        s->out[k] = v;
        if (out_ids)
            out_ids[k] = v;
    }
    return si;
}

void st_ir_mark_output(st_graph *g, int value)
{
    if (!g)
        return;
    if (value < 0 || value >= g->nvalues) {
        st_err(ST_ERR_VALUE, "mark_output: undefined value %d", value);
        return;
    }
    if (!GROW(g, outputs, cap_outputs, g->noutputs + 1))
        return;
    g->outputs[g->noutputs++] = value;
}

bool st_meta_eq(const st_meta *a, const st_meta *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->kind != b->kind)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

st_status st_ir_verify(const st_graph *g)
{
    if (!g)
        return st_err(ST_ERR_VALUE, "verify: null graph");
    if (g->nvalues < 0 || g->nstmts < 0 || g->ninputs < 0 || g->noutputs < 0 ||
        (g->nvalues && !g->values) || (g->nstmts && !g->stmts) ||
        (g->ninputs && !g->inputs) || (g->noutputs && !g->outputs))
        return st_err(ST_ERR_VALUE, "verify: SIR_%d: corrupt arrays", g->id);
    for (int v = 0; v < g->nvalues; v++) {
        const st_value *val = &g->values[v];
        if (check_meta("verify", &val->meta) != ST_OK)
            return st_err(st_err_kind(), "verify: SIR_%d: value %d: %s", g->id,
                          v, st_err_msg());
        switch (val->kind) {
        case ST_VAL_INPUT: case ST_VAL_PARAM: case ST_VAL_CONST:
            break;
        case ST_VAL_STMT: {
            int p = val->producer;
            bool ok = p >= 0 && p < g->nstmts;
            if (ok) {
                ok = false;
                for (int k = 0; k < g->stmts[p].nout && k < ST_MAX_OUT; k++)
                    ok |= g->stmts[p].out[k] == v;
            }
            if (!ok)
                return st_err(ST_ERR_VALUE,
                              "verify: SIR_%d: value %d has a bad producer %d",
                              g->id, v, p);
            break;
        }
        default:
            return st_err(ST_ERR_VALUE, "verify: SIR_%d: value %d has kind %d",
                          g->id, v, (int)val->kind);
        }
        if (val->kind == ST_VAL_CONST && (val->meta.kind != ST_META_SCALAR ||
                                          val->meta.ndim != 0))
            return st_err(ST_ERR_VALUE,
                          "verify: SIR_%d: const value %d is not a 0-d scalar",
                          g->id, v);
    }
    for (int k = 0; k < g->ninputs; k++) {
        int v = g->inputs[k];
        if (v < 0 || v >= g->nvalues ||
            (g->values[v].kind != ST_VAL_INPUT &&
             g->values[v].kind != ST_VAL_PARAM))
            return st_err(ST_ERR_VALUE, "verify: SIR_%d: input %d is value %d, "
                          "not an input", g->id, k, v);
    }
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        const st_op_def *def = st_op(s->op);
        if (!def)
            return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d has "
                          "unknown op %d", g->id, si, (int)s->op);
        if (s->nin < def->min_in || s->nin > def->max_in || s->nin > ST_MAX_IN ||
            s->nout < 1 || s->nout > ST_MAX_OUT)
            return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d (%s) has "
                          "%d operands, %d results", g->id, si, def->name,
                          s->nin, s->nout);
        for (int k = 0; k < s->nin; k++) {
            int v = s->in[k];
            if (v < 0 || v >= g->nvalues)
                return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d (%s) "
                              "operand %d is undefined value %d", g->id, si,
                              def->name, k, v);
            const st_value *val = &g->values[v];
            if (val->kind == ST_VAL_STMT && val->producer >= si)
                return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d (%s) "
                              "uses value %d before its definition", g->id, si,
                              def->name, v);
        }
        for (int k = 0; k < s->nout; k++) {
            int v = s->out[k];
            if (v < 0 || v >= g->nvalues || g->values[v].kind != ST_VAL_STMT ||
                g->values[v].producer != si)
                return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d (%s) "
                              "result %d is value %d, not produced by it",
                              g->id, si, def->name, k, v);
        }
        st_meta outs[ST_MAX_OUT];
        int nout = 0;
        if (infer_stmt(g, s->op, s->in, s->nin, &s->attrs, outs, &nout) != ST_OK)
            return st_err(st_err_kind(), "verify: SIR_%d: statement %d: %s",
                          g->id, si, st_err_msg());
        if (nout != s->nout)
            return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d (%s) "
                          "infers %d results, has %d", g->id, si, def->name,
                          nout, s->nout);
        for (int k = 0; k < nout; k++) {
            if (!st_meta_eq(&outs[k], &g->values[s->out[k]].meta)) {
                char a[128], b[128];
                const st_meta *m = &g->values[s->out[k]].meta;
                return st_err(ST_ERR_VALUE, "verify: SIR_%d: statement %d (%s) "
                              "result %d is stored as %s%s but infers as %s%s",
                              g->id, si, def->name, k, st_dtype_name(m->dtype),
                              st_shape_str(m->shape, m->ndim, a, sizeof a),
                              st_dtype_name(outs[k].dtype),
                              st_shape_str(outs[k].shape, outs[k].ndim, b,
                                           sizeof b));
            }
        }
    }
    for (int k = 0; k < g->noutputs; k++) {
        int v = g->outputs[k];
        if (v < 0 || v >= g->nvalues)
            return st_err(ST_ERR_VALUE, "verify: SIR_%d: output %d is undefined "
                          "value %d", g->id, k, v);
    }
    return ST_OK;
}

st_status st_ir_reinfer(st_graph *g)
{
    if (!g)
        return st_err(ST_ERR_VALUE, "reinfer: null graph");
    for (int si = 0; si < g->nstmts; si++) {
        st_stmt *s = &g->stmts[si];
        const st_op_def *def = st_op(s->op);
        if (!def || s->nin < 0 || s->nin > ST_MAX_IN || s->nout < 1 ||
            s->nout > ST_MAX_OUT)
            return st_err(ST_ERR_VALUE, "reinfer: SIR_%d: statement %d is "
                          "malformed", g->id, si);
        for (int k = 0; k < s->nin; k++)
            if (s->in[k] < 0 || s->in[k] >= g->nvalues)
                return st_err(ST_ERR_VALUE, "reinfer: SIR_%d: statement %d "
                              "(%s) operand %d is undefined", g->id, si,
                              def->name, k);
        for (int k = 0; k < s->nout; k++)
            if (s->out[k] < 0 || s->out[k] >= g->nvalues)
                return st_err(ST_ERR_VALUE, "reinfer: SIR_%d: statement %d "
                              "(%s) result %d is undefined", g->id, si,
                              def->name, k);
        st_meta outs[ST_MAX_OUT];
        int nout = 0;
        /* the op's own message names the op and its operands: keep it */
        if (infer_stmt(g, s->op, s->in, s->nin, &s->attrs, outs, &nout) != ST_OK)
            return st_err_kind();
        if (nout != s->nout)
            return st_err(ST_ERR_RUNTIME, "reinfer: SIR_%d: statement %d (%s) "
                          "now infers %d results, had %d", g->id, si,
                          def->name, nout, s->nout);
        for (int k = 0; k < nout; k++)
            g->values[s->out[k]].meta = outs[k];
    }
    return ST_OK;
}

st_graph *st_ir_dce(const st_graph *g)
{
    int n = g->nvalues > 0 ? g->nvalues : 1;
    bool *live = calloc((size_t)n, sizeof *live);
    int *map = malloc(sizeof(int) * (size_t)n);
    st_graph *ng = st_ir_graph_new();
    if (!live || !map || !ng) {
        free(live);
        free(map);
        st_ir_graph_free(ng);
        st_err(ST_ERR_MEMORY, "dce: out of memory");
        return NULL;
    }
    for (int k = 0; k < g->noutputs; k++)
        live[g->outputs[k]] = true;
    for (int si = g->nstmts - 1; si >= 0; si--) {
        const st_stmt *s = &g->stmts[si];
        bool used = false;
        for (int k = 0; k < s->nout; k++)
            used |= live[s->out[k]];
        if (used)
            for (int k = 0; k < s->nin; k++)
                live[s->in[k]] = true;
    }
    bool ok = true;
    for (int v = 0; v < g->nvalues; v++)
        map[v] = -1;
    for (int k = 0; k < g->ninputs && ok; k++) {
        const st_value *val = &g->values[g->inputs[k]];
        map[g->inputs[k]] = st_ir_add_input(ng, &val->meta, val->kind == ST_VAL_PARAM);
        ok = map[g->inputs[k]] >= 0;
    }
    for (int v = 0; v < g->nvalues && ok; v++) {
        const st_value *val = &g->values[v];
        if (val->kind != ST_VAL_CONST)
            continue;
        map[v] = st_ir_add_const(ng, val->meta.dtype, val->fconst, val->iconst);
        ok = map[v] >= 0;
    }
    for (int si = 0; si < g->nstmts && ok; si++) {
        const st_stmt *s = &g->stmts[si];
        bool used = false;
        for (int k = 0; k < s->nout; k++)
            used |= live[s->out[k]];
        if (!used)
            continue;
        int in[ST_MAX_IN], out[ST_MAX_OUT];
        for (int k = 0; k < s->nin; k++)
            in[k] = map[s->in[k]];
        ok = st_ir_add_stmt(ng, s->op, in, s->nin, &s->attrs, out) >= 0;
        for (int k = 0; ok && k < s->nout; k++)
            map[s->out[k]] = out[k];
    }
    for (int k = 0; k < g->noutputs && ok; k++)
        st_ir_mark_output(ng, map[g->outputs[k]]);
    free(live);
    free(map);
    if (!ok) {
        st_ir_graph_free(ng);
        return NULL;
    }
    return ng;
}

int st_ir_emit(st_ir_builder *b, st_op_id op, const int *in, int nin,
               const st_attrs *attrs)
{
    if (b->failed)
        return -1;
    for (int i = 0; i < nin; i++)
        if (in[i] < 0 || in[i] >= b->g->nvalues) {
            if (st_err_kind() == ST_OK)
                st_err(ST_ERR_RUNTIME, "%s: operand %d is undefined", st_op(op)->name, i);
            b->failed = true;
            return -1;
        }
    st_attrs zero;
    if (!attrs) {
        memset(&zero, 0, sizeof zero);
        attrs = &zero;
    }
    int outs[ST_MAX_OUT];
    if (st_ir_add_stmt(b->g, op, in, nin, attrs, outs) < 0) {
        b->failed = true;
        return -1;
    }
    return outs[0];
}

int st_ir_emit_fconst(st_ir_builder *b, double v)
{
    if (b->failed)
        return -1;
    /* the integer view, only where the conversion is defined */
    int64_t iv = (v > -9.2e18 && v < 9.2e18) ? (int64_t)v : 0;
    int id = st_ir_add_const(b->g, ST_FLOAT64, v, iv);
    if (id < 0)
        b->failed = true;
    return id;
}

int st_ir_emit_iconst(st_ir_builder *b, int64_t v)
{
    if (b->failed)
        return -1;
    int id = st_ir_add_const(b->g, ST_INT64, (double)v, v);
    if (id < 0)
        b->failed = true;
    return id;
}
