/* frontend/tr_dyn_internal.h - what the two halves of dynamic shapes share:
 * tr_dynamic.c (symbols, SymInts, sizes read in Python, calls followed,
 * templates and instances) and tr_dynprobe.c (probing the trace graph at
 * other sizes: the dims of computed tensors, and the repair of a graph that
 * does not hold there). Not a public header. */
#ifndef TR_DYN_INTERNAL_H
#define TR_DYN_INTERNAL_H

#include "tr_internal.h"
#include "st_ir.h"

#define NPROBE 2
#define MAXSYM 64
extern int64_t tr_dyn_primes[NPROBE][MAXSYM];   /* probe values per symbol */

typedef struct {
    int stmt, slot, expr;        /* slot < ST_MAX_DIMS: dims[slot]; 100 + j: i[j];
                                    200 + j: f[j] (an arange's start) */
} symattr;

struct tr_dyn {
    bool shapes;                 /* dynamic shapes on (else: int attributes only) */
    bool pinned[MAXSYM];         /* symbols guarded to their value (a graph
                                    that does not hold otherwise) */
    int alias[MAXSYM];           /* j + 1: a dim's symbol guarded equal to
                                    symbol j (duck sizing, where the graph
                                    needs it); 0: its own */
    int64_t aoff[MAXSYM];        /* an alias's size minus its class's first
                                    (an attention mask of past length + 1:
                                    guarded s_k == s_j + aoff); 0: duck sizing */
    int64_t mod[MAXSYM];         /* m >= 2: the symbol guarded divisible by m
                                    (x.reshape(b // 2, -1)): its probe values
                                    are m * a prime; 0: none */
    bool intarg[MAXSYM];         /* an int frame argument's symbol (dim -1,
                                    free: probed like a size, not folded) */
    PyObject *tsyms;             /* id(st_tensor) -> tuple of expr ids per dim */
    PyObject *tkeep;             /* capsules holding the tensors dims_of keyed
                                    by address (freed, another tensor could get
                                    the address and read their entry) */
    PyObject *symints;           /* id(SymInt) -> (SymInt, expr id) */
    PyObject *srcmask;           /* src id -> dyn mask of its TENSOR guard */
    symattr *attr;
    int nattr, capattr;
    int rv, rd;                  /* the traced value and dim recover explains (-1: none) */
    bool failed;
    char why[256];
};

static inline st_fe_symtab *tab(tr_state *s) { return s->guards.sym; }

/* Symbol k varies between instances: a size, or an int frame argument. */
static inline bool tr_dyn_varsym(tr_state *s, int k)
{
    return s->guards.sym->dim[k] >= 0 || s->dyn->intarg[k];
}

static inline int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* tr_dynamic.c's expression table, relation guards and failure report */
int sx_new(st_fe_symtab *t, int op, int a, int b, int64_t c);
bool sx_is_const(const st_fe_symtab *t, int e);
int add_rel(tr_state *s, int a, int b, int op, bool want);
/* a op b for a relation ST_SXC_* (the guards' and the probes' check) */
bool tr_dyn_rel_holds(int op, int64_t a, int64_t b);
void dyn_fail(tr_state *s, const char *fmt, const char *arg);
void pin_class(tr_state *s, int k);
int pin_symbol(tr_state *s, int k);

/* What tr_dyp_apply_at changes in the live trace graph, kept to be put back. */
typedef struct {
    st_meta *metas;
    st_attrs *attrs;             /* per d->attr entry: its statement's attrs */
} tr_dyp_saved;

/* slice_scatters of writes through slice views get their slices' bounds */
int tr_dyn_sync_scatters(tr_state *s, const st_graph *g);
int tr_dyp_save_graph(tr_state *s, const st_graph *g, tr_dyp_saved *sv);
void tr_dyp_restore_graph(tr_state *s, st_graph *g, const tr_dyp_saved *sv);
void tr_dyp_saved_free(tr_dyp_saved *sv);
int tr_dyp_apply_at(tr_state *s, st_graph *g, st_tensor *const *ins, int nin,
                    const int64_t *sym);
void tr_dyp_probe_vals(tr_state *s, int p, int64_t *out);
bool tr_dyp_holds(tr_state *s, st_graph *g, st_tensor *const *ins, int nin,
                  const tr_dyp_saved *sv);
int tr_dyp_sym_expr_of(tr_state *s, int k);
int tr_dyp_repair(tr_state *s, st_graph *g, st_tensor *const *ins, int nin,
                  const tr_dyp_saved *sv);
int tr_dyp_probe(tr_state *s, int v, int64_t out[NPROBE][ST_MAX_DIMS], int *ndim);
int tr_dyp_recover(tr_state *s, int64_t r0, const int64_t *r);
int tr_dyp_pin_involved(tr_state *s, int v, int d, int64_t now);
/* Symbol k's class probed within the relation guards that bound it. */
void tr_dyp_fit_probes(tr_state *s, int k);

#endif
