/* fuse_internal.h - what fusion/'s files share and nothing outside uses:
 * the one-kernel-per-statement lowering (lower.c), kept as the unfused
 * path (SYMTRACE_FUSION=0) and as the lowering of statements fusion does
 * not group, and the node builders fuse.c reuses. Prefix: st_fuse_. */
#ifndef ST_FUSE_INTERNAL_H
#define ST_FUSE_INTERNAL_H

#include "st_kernel.h"

/* Lowers the decomposed graph dg one kernel per statement (two for
 * the scatters, st_fuse_is_scatter); takes ownership of dg. NULL with the error set. */
st_kprog *st_fuse_lower_unfused(st_graph *dg);

/* Lowers statement si of g into k (initialized by the caller); part 1 is
 * the second kernel of a scatter (st_fuse_is_scatter). */
st_status st_fuse_lower_stmt(st_kernel *k, const st_graph *g, int si,
                             int part);
/* Kernels statement s lowers to alone: 2 for a scatter, else 1. */
int st_fuse_stmt_parts(const st_stmt *s);
/* k (initialized by the caller) = value src stored into the slice of
 * value dst that SLICE_SCATTER statement slab_si replaces: elementwise
 * over src's shape, src's dim j written along dst's dim dst_dim[j] (dims
 * of dst no src dim maps to are of size 1 in the slice). On a kernel that
 * already holds such stores, adds one more (src of the same shape). */
st_status st_fuse_lower_slab(st_kernel *k, const st_graph *g, int src,
                             const int *dst_dim, int dst, int slab_si);

/* The result node of elementwise statement s (unary, binary, where, cast,
 * copy) from its operands' nodes ld[0..s->nin) (each of its operand
 * value's dtype), of the statement's result dtype; -1 on error. */
int st_fuse_ew_node(st_kernel *k, const st_graph *g, const st_stmt *s,
                    const int *ld);

/* The result node of creation statement s (FULL, ARANGE, RAND, RANDN,
 * RANDINT) over k's iteration space (its ATTR params name k->src_stmt). */
int st_fuse_create_node(st_kernel *k, const st_graph *g, const st_stmt *s);

/* Node and parameter helpers. */
st_knode st_fuse_node0(st_knode_kind kind, st_dtype dt);
int st_fuse_cast(st_kernel *k, int a, st_dtype dt); /* a if already dt */
int st_fuse_add_param(st_kernel *k, int value, st_dtype dt);

/* Reduction op, source and result dtypes of reduction statement s. */
st_status st_fuse_reduce_types(const st_graph *g, const st_stmt *s,
                               st_reduce_op *op, st_dtype *src_dt,
                               st_dtype *res_dt);

/* The decomposed graph g with views between elementwise statements
 * folded (viewfold.c): a new graph, or NULL when nothing changes (g is
 * then to be used as it is). Never fails. */
st_graph *st_fuse_fold_views(const st_graph *g);

/* SYMTRACE_DUMP_DIR, or NULL when unset or empty (read at every call). */
const char *st_fuse_dump_dir(void);

#endif
