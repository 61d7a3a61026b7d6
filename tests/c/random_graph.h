/* random_graph.h - the random StatementIR DAG generator the C tests share
 * (test_fuse.c: fused vs unfused through interp; test_llvm_random.c: llvm
 * vs interp under every fusion setting): an xorshift generator, graph
 * building shorthands, and random_dag(), which draws 2..4 inputs with
 * broadcastable shapes over rg_sizes and 3..rg_max_stmts (12) elementwise,
 * reduction, matmul and view statements on them, and marks the last value
 * and up to two random ones as outputs. rg_extended widens the op set (more unary,
 * binary and reduction ops); off, the draws are the original generator's.
 * Header-only: every function is static (unused ones are allowed). */
#ifndef ST_TEST_RANDOM_GRAPH_H
#define ST_TEST_RANDOM_GRAPH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "st_runtime.h"

#define RG_UNUSED __attribute__((unused))

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static RG_UNUSED uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static RG_UNUSED int irand(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

/* uniform in [-1, 1) */
static RG_UNUSED double frand(void)
{
    return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

static RG_UNUSED st_attrs attrs0(void)
{
    st_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

static RG_UNUSED int input(st_graph *g, st_dtype dt, int ndim,
                           const int64_t *shape)
{
    st_meta m;
    memset(&m, 0, sizeof m);
    m.dtype = dt;
    m.ndim = ndim;
    for (int d = 0; d < ndim; d++)
        m.shape[d] = shape[d];
    return st_ir_add_input(g, &m, false);
}

static RG_UNUSED int stmt(st_graph *g, st_op_id op, const int *in, int nin,
                          const st_attrs *a)
{
    int outs[ST_MAX_OUT] = {-1, -1, -1};
    st_attrs z = attrs0();
    if (st_ir_add_stmt(g, op, in, nin, a ? a : &z, outs) < 0)
        return -1;
    return outs[0];
}

static RG_UNUSED int un(st_graph *g, st_op_id op, int x)
{
    return stmt(g, op, &x, 1, NULL);
}

static RG_UNUSED int bin(st_graph *g, st_op_id op, int x, int y)
{
    int in[2] = {x, y};
    return stmt(g, op, in, 2, NULL);
}

/* ---- the generator ---- */

/* The full sizes of the (at most 3) dims; shapes are suffixes of it. */
static int64_t rg_sizes[3] = {3, 4, 5};
static bool rg_extended = false;
/* random_dag draws 3 .. rg_max_stmts statements */
static int rg_max_stmts = 12;

/* A random shape over rg_sizes with some dims 1 (broadcast partners). */
static RG_UNUSED int rand_shape(int64_t *sh)
{
    int n = 1 + irand(3);
    int start = 3 - n;
    for (int d = 0; d < n; d++)
        sh[d] = irand(4) == 0 ? 1 : rg_sizes[start + d];
    return n;
}

static RG_UNUSED int pick(const int *pool, int n)
{
    return pool[irand(n)];
}

/* Adds one random statement; returns its value or -1 (nothing added). */
static RG_UNUSED int random_stmt(st_graph *g, const int *pool, int np)
{
    static const st_op_id unary[] = {ST_OP_TANH, ST_OP_NEG, ST_OP_ABS,
                                     ST_OP_SIN, ST_OP_SIGMOID, ST_OP_RELU,
                                     ST_OP_EXP,
                                     /* extended */
                                     ST_OP_COS, ST_OP_ERF, ST_OP_SQRT,
                                     ST_OP_LOG, ST_OP_FLOOR, ST_OP_RSQRT};
    static const st_op_id binary[] = {ST_OP_ADD, ST_OP_SUB, ST_OP_MUL,
                                      ST_OP_MAXIMUM,
                                      /* extended */
                                      ST_OP_MINIMUM, ST_OP_DIV};
    static const st_op_id reds[] = {ST_OP_SUM, ST_OP_MEAN, ST_OP_AMAX,
                                    /* extended */
                                    ST_OP_AMIN, ST_OP_PROD};
    int nun = rg_extended ? 13 : 7, nbin = rg_extended ? 6 : 4,
        nred = rg_extended ? 5 : 3;
    int x = pick(pool, np);
    const st_meta *m = &g->values[x].meta;
    int kind = irand(10);
    st_attrs a = attrs0();
    int r = -1;
    if (kind < 3) {
        r = un(g, unary[irand(nun)], x);
    } else if (kind < 6) {
        r = bin(g, binary[irand(nbin)], x, pick(pool, np));
    } else if (kind < 8) {
        if (m->ndim == 0)
            return -1;
        a.dims[0] = irand(m->ndim);
        a.ndims = irand(5) == 0 ? 0 : 1;
        if (a.ndims && m->ndim > 1 && irand(3) == 0) {
            a.dims[1] = (a.dims[0] + 1) % m->ndim;
            a.ndims = 2;
        }
        a.flags = irand(2) ? ST_ATTR_KEEPDIM : 0;
        a.dims[0] -= irand(2) ? m->ndim : 0; /* negative dims too */
        r = stmt(g, reds[irand(nred)], &x, 1, &a);
    } else if (kind < 9) {
        int y = pick(pool, np);
        if (m->ndim < 2 || g->values[y].meta.ndim < 2)
            return -1;
        r = bin(g, ST_OP_MATMUL, x, y);
        if (r < 0) { /* make the shapes fit: x @ x^T */
            st_err_clear();
            st_attrs pa = attrs0();
            pa.ndims = m->ndim;
            for (int d = 0; d < m->ndim; d++)
                pa.dims[d] = d;
            pa.dims[m->ndim - 1] = m->ndim - 2;
            pa.dims[m->ndim - 2] = m->ndim - 1;
            int t = stmt(g, ST_OP_PERMUTE, &x, 1, &pa);
            r = t >= 0 ? bin(g, ST_OP_MATMUL, x, t) : -1;
        }
    } else {
        int w = irand(4);
        if (w == 0 && m->ndim >= 2) {
            a.ndims = m->ndim;
            for (int d = 0; d < m->ndim; d++)
                a.dims[d] = m->ndim - 1 - d;
            r = stmt(g, ST_OP_PERMUTE, &x, 1, &a);
        } else if (w == 1 && m->ndim < 3) {
            a.i[0] = irand(m->ndim + 1);
            r = stmt(g, ST_OP_UNSQUEEZE, &x, 1, &a);
        } else if (w == 2) {
            for (int d = 0; d < m->ndim; d++)
                if (m->shape[d] == 1) {
                    a.dims[0] = d;
                    a.ndims = 1;
                    r = stmt(g, ST_OP_SQUEEZE, &x, 1, &a);
                    break;
                }
        } else if (m->ndim >= 1) {
            for (int d = 0; d < m->ndim; d++)
                a.dims[d] = m->shape[d] == 1 ? rg_sizes[3 - m->ndim + d] : -1;
            a.ndims = m->ndim;
            r = stmt(g, ST_OP_EXPAND, &x, 1, &a);
        }
    }
    if (r < 0)
        st_err_clear();
    return r;
}

/* Makes input tensor i of a drawn shape (may draw from the generator). */
typedef st_tensor *(*rg_tensor_fn)(st_dtype dt, int ndim, const int64_t *shape);

/* Builds a random DAG on the empty graph g: 2..4 inputs (dtype dts[i], or
 * float64 when dts is NULL; ins[i] = mk(...) in the order drawn),
 * 3..rg_max_stmts statements, the outputs. Returns the number of inputs. */
static RG_UNUSED int random_dag(st_graph *g, const st_dtype *dts,
                                rg_tensor_fn mk, st_tensor **ins)
{
    int pool[64], np = 0;
    int nin = 2 + irand(3);
    for (int i = 0; i < nin; i++) {
        int64_t sh[3];
        int n = rand_shape(sh);
        st_dtype dt = dts ? dts[i] : ST_FLOAT64;
        pool[np++] = input(g, dt, n, sh);
        ins[i] = mk(dt, n, sh);
    }
    int want = 3 + irand(rg_max_stmts - 2), made = 0, tries = 0;
    while (made < want && tries++ < 200 && np < 64) {
        int v = random_stmt(g, pool, np);
        if (v >= 0) {
            pool[np++] = v;
            made++;
        }
    }
    /* outputs: the last value and a few random ones (forced stores) */
    st_ir_mark_output(g, pool[np - 1]);
    for (int k = 0; k < 2; k++)
        if (irand(2) && np > nin)
            st_ir_mark_output(g, pool[nin + irand(np - nin)]);
    return nin;
}

#endif
