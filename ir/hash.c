/* ir/hash.c - owns st_ir_hash: XXH3-64 over a canonical serialization of a
 * graph's structure (ops, attrs field by field, operand wiring expressed as
 * input positions / statement results / inline constants, input and const
 * dtypes and ranks, sizes only when asked). Value ids and names do not
 * enter, so graphs built in a different value order but with the same
 * structure hash equal. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "st_ir.h"

typedef struct {
    XXH3_state_t *st;
} hasher;

static void h_i64(hasher *h, int64_t v)
{
    XXH3_64bits_update(h->st, &v, sizeof v);
}

static void h_f64(hasher *h, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    XXH3_64bits_update(h->st, &u, sizeof u);
}

static void h_meta(hasher *h, const st_meta *m, bool with_sizes)
{
    h_i64(h, m->dtype);
    h_i64(h, m->kind);
    h_i64(h, m->ndim);
    if (with_sizes)
        for (int d = 0; d < m->ndim && d < ST_MAX_DIMS; d++)
            h_i64(h, m->shape[d]);
}

/* A value as referenced from a statement or the output list. */
static void h_ref(hasher *h, const st_graph *g, const int *input_pos, int v,
                  bool with_sizes)
{
    if (v < 0 || v >= g->nvalues) {
        h_i64(h, -1);
        h_i64(h, v);
        return;
    }
    const st_value *val = &g->values[v];
    switch (val->kind) {
    case ST_VAL_INPUT: case ST_VAL_PARAM:
        h_i64(h, 1);
        h_i64(h, input_pos[v]);
        break;
    case ST_VAL_CONST:
        h_i64(h, 2);
        h_meta(h, &val->meta, with_sizes);
        if (st_dtype_is_float(val->meta.dtype))
            h_f64(h, val->fconst);
        else
            h_i64(h, val->iconst);
        break;
    default: {
        int p = val->producer, k = 0;
        if (p >= 0 && p < g->nstmts)
            for (k = 0; k < g->stmts[p].nout && k < ST_MAX_OUT; k++)
                if (g->stmts[p].out[k] == v)
                    break;
        h_i64(h, 3);
        h_i64(h, p);
        h_i64(h, k);
        break;
    }
    }
}

static void h_attrs(hasher *h, const st_attrs *a)
{
    for (int k = 0; k < 4; k++)
        h_i64(h, a->i[k]);
    for (int k = 0; k < 2; k++)
        h_f64(h, a->f[k]);
    for (int k = 0; k < ST_MAX_DIMS; k++)
        h_i64(h, a->dims[k]);
    h_i64(h, a->ndims);
    h_i64(h, a->flags);
    h_i64(h, a->dtype);
}

uint64_t st_ir_hash(const st_graph *g, bool with_sizes)
{
    if (!g)
        return 0;
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        st_err(ST_ERR_MEMORY, "hash: out of memory");
        return 0;
    }
    int *pos = calloc((size_t)(g->nvalues > 0 ? g->nvalues : 1), sizeof *pos);
    if (!pos) {
        XXH3_freeState(st);
        st_err(ST_ERR_MEMORY, "hash: out of memory");
        return 0;
    }
    for (int v = 0; v < g->nvalues; v++)
        pos[v] = -1;
    for (int k = 0; k < g->ninputs; k++)
        if (g->inputs[k] >= 0 && g->inputs[k] < g->nvalues)
            pos[g->inputs[k]] = k;
    XXH3_64bits_reset(st);
    hasher h = {st};
    h_i64(&h, 0x53495221); /* "SIR!" */
    h_i64(&h, with_sizes);
    h_i64(&h, g->ninputs);
    for (int k = 0; k < g->ninputs; k++) {
        int v = g->inputs[k];
        if (v < 0 || v >= g->nvalues) {
            h_i64(&h, -1);
            continue;
        }
        h_i64(&h, g->values[v].kind);
        h_meta(&h, &g->values[v].meta, with_sizes);
    }
    h_i64(&h, g->nstmts);
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        h_i64(&h, s->op);
        h_i64(&h, s->nin);
        h_i64(&h, s->nout);
        h_attrs(&h, &s->attrs);
        for (int k = 0; k < s->nin && k < ST_MAX_IN; k++)
            h_ref(&h, g, pos, s->in[k], with_sizes);
    }
    h_i64(&h, g->noutputs);
    for (int k = 0; k < g->noutputs; k++)
        h_ref(&h, g, pos, g->outputs[k], with_sizes);
    uint64_t r = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    free(pos);
    return r;
}
