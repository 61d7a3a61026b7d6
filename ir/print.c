/* ir/print.c - owns the textual form of a graph: st_ir_print (SOT's
 * StatementIR layout), st_ir_value_name, and the Python-repr formatting of
 * doubles shared with the attribute printers in ops.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_ir.h"

char *st_ir_fmt_double(double v, char *buf, size_t n);

/* Formats v as Python's repr(float) does: the shortest digits that round
 * trip, positional notation for exponents in [-4, 16), else "1e-05". */
char *st_ir_fmt_double(double v, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (isnan(v)) {
        snprintf(buf, n, "nan");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, n, v < 0 ? "-inf" : "inf");
        return buf;
    }
    char tmp[40];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    bool neg = tmp[0] == '-';
    const char *s = tmp + neg;
    char digits[24];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && nd < 20)
            digits[nd++] = *s;
    int exp = *s == 'e' ? atoi(s + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    char out[64];
    size_t len = 0;
    if (neg)
        out[len++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out[len++] = '0';
            out[len++] = '.';
            for (int k = 0; k < -exp - 1; k++)
                out[len++] = '0';
            for (int k = 0; k < nd; k++)
                out[len++] = digits[k];
        } else {
            for (int k = 0; k <= exp; k++)
                out[len++] = k < nd ? digits[k] : '0';
            out[len++] = '.';
            if (nd > exp + 1)
                for (int k = exp + 1; k < nd; k++)
                    out[len++] = digits[k];
            else
                out[len++] = '0';
        }
        out[len] = '\0';
    } else {
        out[len++] = digits[0];
        if (nd > 1) {
            out[len++] = '.';
            for (int k = 1; k < nd; k++)
                out[len++] = digits[k];
        }
        snprintf(out + len, sizeof out - len, "e%c%02d", exp < 0 ? '-' : '+',
                 exp < 0 ? -exp : exp);
    }
    snprintf(buf, n, "%s", out);
    return buf;
}

const char *st_ir_value_name(const st_graph *g, int v, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (!g || v < 0 || v >= g->nvalues) {
        snprintf(buf, n, "<undefined %d>", v);
        return buf;
    }
    const st_value *val = &g->values[v];
    switch (val->kind) {
    case ST_VAL_PARAM:
        snprintf(buf, n, "param_%d", val->name_index);
        break;
    case ST_VAL_CONST:
        if (val->meta.dtype == ST_BOOL)
            snprintf(buf, n, "%s", val->iconst ? "True" : "False");
        else if (st_dtype_is_float(val->meta.dtype))
            st_ir_fmt_double(val->fconst, buf, n);
        else
            snprintf(buf, n, "%lld", (long long)val->iconst);
        break;
    default:
        snprintf(buf, n, "var_%d", val->name_index);
        break;
    }
    return buf;
}

/* ---- a growable string ---- */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (w < 0)
            return;
        if ((size_t)w < b->cap - b->len) {
            b->len += (size_t)w;
            return;
        }
        size_t nc = b->cap * 2 + (size_t)w + 1;
        char *p = realloc(b->s, nc);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = nc;
    }
}

static void put_list(sbuf *b, const st_graph *g, const int *ids, int n)
{
    char name[64];
    put(b, "[");
    for (int k = 0; k < n; k++)
        put(b, "%s%s", k ? ", " : "",
            st_ir_value_name(g, ids[k], name, sizeof name));
    put(b, "]");
}

char *st_ir_print(const st_graph *g)
{
    sbuf b = {malloc(256), 0, 256, false};
    if (!b.s) {
        st_err(ST_ERR_MEMORY, "print: out of memory");
        return NULL;
    }
    b.s[0] = '\0';
    if (!g) {
        put(&b, "StatementIR: <null>\n");
        return b.s;
    }
    put(&b, "StatementIR: SIR_%d\n", g->id);
    put(&b, "  inputs: ");
    put_list(&b, g, g->inputs, g->ninputs);
    put(&b, "\n  outputs: ");
    put_list(&b, g, g->outputs, g->noutputs);
    put(&b, "\n  statements:\n");
    for (int si = 0; si < g->nstmts; si++) {
        const st_stmt *s = &g->stmts[si];
        const st_op_def *def = st_op(s->op);
        int nout = s->nout < 0 ? 0 : s->nout > ST_MAX_OUT ? ST_MAX_OUT : s->nout;
        int nin = s->nin < 0 ? 0 : s->nin > ST_MAX_IN ? ST_MAX_IN : s->nin;
        put(&b, "    ");
        char name[64];
        for (int k = 0; k < nout; k++)
            put(&b, "%s%s", k ? ", " : "",
                st_ir_value_name(g, s->out[k], name, sizeof name));
        put(&b, " = %s(", def ? def->name : "<unknown op>");
        for (int k = 0; k < nin; k++)
            put(&b, "%s%s", k ? ", " : "",
                st_ir_value_name(g, s->in[k], name, sizeof name));
        if (def && def->print_attrs) {
            char attrs[512];
            attrs[0] = '\0';
            def->print_attrs(&s->attrs, attrs, sizeof attrs);
            if (attrs[0])
                put(&b, "%s%s", nin ? ", " : "", attrs);
        }
        put(&b, ")\n");
    }
    if (b.oom) {
        free(b.s);
        st_err(ST_ERR_MEMORY, "print: out of memory");
        return NULL;
    }
    return b.s;
}
