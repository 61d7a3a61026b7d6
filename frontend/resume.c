/* frontend/resume.c - partial graphs: the bytecode that continues a frame
 * after a graph break (TorchDynamo's resume functions).
 *
 * A frame that breaks at a top-level instruction keeps the graph of what
 * came before (translator.c). What runs after it is generated here:
 *  - the break function: takes the values on the stack and the live
 *    locals, performs the breaking instruction in Python (a call, a jump
 *    on a tensor's truth, any other instruction of a small set), and calls
 *    the resume function of the exit taken, returning its result. Its
 *    lines are the breaking statement's, so tracebacks name the user's
 *    line; the hook never translates it.
 *  - a resume function per exit: the original code with a prologue that
 *    rebuilds the stack from its arguments, unbinds locals that were
 *    unbound, and jumps to the exit's instruction. Its locals keep the
 *    original's slots (the original's locals are its first arguments, the
 *    stack items follow), so the original bytecode runs unchanged; its
 *    exception table is shifted past the prologue and its line table is
 *    the original's behind "no location" entries for the prologue, so
 *    tracebacks point at the user's lines. It is an ordinary function that
 *    the hook translates when it first runs.
 * Liveness: a backward data-flow over the instructions (exception handlers
 * are successors) decides which locals are passed; the rest are None.
 * Bytecode layout, CPython 3.11/3.12: 2-byte units, EXTENDED_ARG prefixes,
 * inline caches (counts from the opcode module, via tr_exec.c), relative
 * jumps, the exception table's 6-bit big-endian varints (Objects/
 * exception_handling_notes.txt) and the location table's entries
 * (Objects/locations.md). */
#include "tr_internal.h"
#include "st_fe_hook.h"

#include <stdlib.h>
#include <string.h>

/* ---------------- opcodes used here ---------------- */
#define RS_OPS(X) \
    X(RESUME) X(LOAD_FAST) X(LOAD_FAST_CHECK) X(LOAD_FAST_AND_CLEAR) X(STORE_FAST) \
    X(DELETE_FAST) X(LOAD_CONST) X(PUSH_NULL) X(JUMP_FORWARD) X(BUILD_TUPLE) X(SWAP) \
    X(BINARY_OP) X(CALL_FUNCTION_EX) X(RETURN_VALUE) X(RETURN_CONST) X(EXTENDED_ARG) \
    X(CALL) X(PRECALL) X(KW_NAMES) X(JUMP_BACKWARD) X(JUMP_BACKWARD_NO_INTERRUPT) \
    X(POP_JUMP_IF_FALSE) X(POP_JUMP_IF_TRUE) X(POP_JUMP_FORWARD_IF_FALSE) \
    X(POP_JUMP_FORWARD_IF_TRUE) X(POP_JUMP_BACKWARD_IF_FALSE) X(POP_JUMP_BACKWARD_IF_TRUE) \
    X(POP_JUMP_IF_NONE) X(POP_JUMP_IF_NOT_NONE) X(POP_JUMP_FORWARD_IF_NONE) \
    X(POP_JUMP_FORWARD_IF_NOT_NONE) X(POP_JUMP_BACKWARD_IF_NONE) \
    X(POP_JUMP_BACKWARD_IF_NOT_NONE) X(JUMP_IF_FALSE_OR_POP) X(JUMP_IF_TRUE_OR_POP) \
    X(FOR_ITER) X(SEND) X(RAISE_VARARGS) X(RERAISE) X(BINARY_SUBSCR) X(BINARY_SLICE) \
    X(STORE_SUBSCR) X(STORE_SLICE) X(DELETE_SUBSCR) X(COMPARE_OP) X(CONTAINS_OP) \
    X(IS_OP) X(UNARY_NEGATIVE) X(UNARY_NOT) X(UNARY_INVERT) X(UNARY_POSITIVE) \
    X(FORMAT_VALUE) X(BUILD_STRING) X(BUILD_LIST) X(BUILD_SET) X(BUILD_MAP) \
    X(STORE_ATTR) X(DELETE_ATTR) X(LOAD_ATTR) X(STORE_GLOBAL) X(DELETE_GLOBAL) \
    X(IMPORT_NAME) X(LOAD_BUILD_CLASS) X(GET_LEN) X(UNPACK_SEQUENCE) X(UNPACK_EX) \
    X(CALL_INTRINSIC_1) X(LOAD_ASSERTION_ERROR) X(MAKE_CELL) X(COPY_FREE_VARS) \
    X(MATCH_MAPPING) X(MATCH_SEQUENCE) X(MATCH_KEYS) X(MATCH_CLASS) X(MAKE_FUNCTION) \
    X(STORE_DEREF) X(DELETE_DEREF) X(NOP)

enum {
#define X(n) R_##n,
    RS_OPS(X)
#undef X
    R__COUNT
};
static const char *rs_names[] = {
#define X(n) #n,
    RS_OPS(X)
#undef X
};
static int rop[R__COUNT];       /* real opcode or -1 */
static bool hasfree[256];       /* opcode.hasfree: the argument indexes cells/free vars */
static int rs_inited;
static PyObject *fn_cache;      /* key tuple -> break function */

static int rs_init(void)
{
    if (rs_inited)
        return 0;
    for (int k = 0; k < R__COUNT; k++)
        rop[k] = tr_opnum(rs_names[k]);
    if (PyErr_Occurred())
        return -1;
    PyObject *om = PyImport_ImportModule("opcode");
    PyObject *hf = om ? PyObject_GetAttrString(om, "hasfree") : NULL;
    Py_XDECREF(om);
    if (!hf)
        return -1;
    for (Py_ssize_t i = 0; i < PyObject_Length(hf); i++) {
        PyObject *v = PySequence_GetItem(hf, i);
        long n = v ? PyLong_AsLong(v) : -1;
        Py_XDECREF(v);
        if (n >= 0 && n < 256)
            hasfree[n] = true;
    }
    Py_DECREF(hf);
    if (PyErr_Occurred())
        return -1;
    if (rop[R_LOAD_FAST] < 0 || rop[R_BUILD_TUPLE] < 0 || rop[R_EXTENDED_ARG] < 0) {
        PyErr_SetString(PyExc_SystemError, "resume: opcode table not available");
        return -1;
    }
    rs_inited = 1;
    return 0;
}

static bool is(int raw, int k) { return rop[k] >= 0 && raw == rop[k]; }

#ifndef CO_FAST_CELL
#define CO_FAST_CELL 0x40
#endif

/* See st_fe_tr.h: the slots of co's cell variables, ascending (the
 * arguments that are cells first, then the others). */
int st_fe_cell_slots(PyCodeObject *co, int *slots)
{
    if (!co->co_ncellvars)
        return 0;
    const char *kinds = PyBytes_AS_STRING(co->co_localspluskinds);
    int n = 0;
    for (int i = 0; i < co->co_nlocalsplus; i++)
        if (kinds[i] & CO_FAST_CELL) {
            if (slots)
                slots[n] = i;
            n++;
        }
    return n;
}

/* ---------------- decoding ---------------- */
typedef struct {
    int start;      /* first code unit (its EXTENDED_ARG prefixes included) */
    int at;         /* the opcode's unit */
    int next;       /* unit after its caches */
    int op, arg;
} rs_ins;

typedef struct {
    int start, end, target, depth;   /* code units; [start, end) */
} rs_exc;

typedef struct {
    PyObject *bytes;                 /* owned co_code */
    const uint8_t *bc;
    int nunits;
    rs_ins *ins;
    int n;
    int *at_unit;                    /* unit -> instruction index (its start), -1 */
    rs_exc *exc;
    int nexc;
} rs_code;

static void code_free(rs_code *c)
{
    Py_XDECREF(c->bytes);
    free(c->ins);
    free(c->at_unit);
    free(c->exc);
    memset(c, 0, sizeof *c);
}

static int read_exc_varint(const uint8_t *p, int n, int *pos)
{
    if (*pos >= n)
        return -1;
    int b = p[(*pos)++], v = b & 63;
    while (b & 64) {
        if (*pos >= n)
            return -1;
        b = p[(*pos)++];
        v = (v << 6) | (b & 63);
    }
    return v;
}

/* One entry of a 3.11+ exception table at *pos (start, length, target,
 * depth and lasti, in code units); false when the table is malformed. */
static bool read_exc_entry(const uint8_t *p, int n, int *pos, int *s, int *len,
                           int *t, int *dl)
{
    *s = read_exc_varint(p, n, pos);
    *len = read_exc_varint(p, n, pos);
    *t = read_exc_varint(p, n, pos);
    *dl = read_exc_varint(p, n, pos);
    return *s >= 0 && *len >= 0 && *t >= 0 && *dl >= 0;
}

bool st_fe_exc_entry(PyCodeObject *co, int unit, int *target, int *depth, bool *lasti)
{
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(co->co_exceptiontable);
    int n = (int)PyBytes_GET_SIZE(co->co_exceptiontable), pos = 0;
    while (pos < n) {
        int s, len, t, dl;
        if (!read_exc_entry(p, n, &pos, &s, &len, &t, &dl))
            return false;
        if (s <= unit && unit < s + len) {
            *target = t;
            *depth = dl >> 1;
            *lasti = dl & 1;
            return true;
        }
    }
    return false;
}

int st_fe_exc_handler(PyCodeObject *co, int unit)
{
    int t, depth;
    bool lasti;
    return st_fe_exc_entry(co, unit, &t, &depth, &lasti) ? t : -1;
}

static int code_decode(PyCodeObject *co, rs_code *c)
{
    memset(c, 0, sizeof *c);
    c->bytes = PyCode_GetCode(co);
    if (!c->bytes)
        return -1;
    c->bc = (const uint8_t *)PyBytes_AS_STRING(c->bytes);
    c->nunits = (int)(PyBytes_GET_SIZE(c->bytes) / 2);
    c->ins = calloc((size_t)c->nunits + 1, sizeof *c->ins);
    c->at_unit = malloc(((size_t)c->nunits + 1) * sizeof(int));
    if (!c->ins || !c->at_unit) {
        PyErr_NoMemory();
        return -1;
    }
    for (int u = 0; u <= c->nunits; u++)
        c->at_unit[u] = -1;
    int u = 0;
    while (u < c->nunits) {
        rs_ins *in = &c->ins[c->n];
        in->start = u;
        int arg = 0;
        while (u < c->nunits && c->bc[2 * u] == rop[R_EXTENDED_ARG]) {
            arg = (arg | c->bc[2 * u + 1]) << 8;
            u++;
        }
        if (u >= c->nunits)
            break;
        in->at = u;
        in->op = c->bc[2 * u];
        in->arg = arg | c->bc[2 * u + 1];
        in->next = u + 1 + tr_op_caches(in->op);
        for (int k = in->start; k < in->next && k < c->nunits; k++)
            c->at_unit[k] = c->n;
        u = in->next;
        c->n++;
    }
    PyObject *et = co->co_exceptiontable;
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(et);
    int n = (int)PyBytes_GET_SIZE(et), pos = 0, cap = 0;
    while (pos < n) {
        int s, len, t, dl;
        if (!read_exc_entry(p, n, &pos, &s, &len, &t, &dl)) {
            PyErr_SetString(PyExc_SystemError, "resume: malformed exception table");
            return -1;
        }
        if (c->nexc == cap) {
            cap = cap ? 2 * cap : 8;
            rs_exc *ne = realloc(c->exc, (size_t)cap * sizeof *ne);
            if (!ne) {
                PyErr_NoMemory();
                return -1;
            }
            c->exc = ne;
        }
        c->exc[c->nexc++] = (rs_exc){s, s + len, t, dl};
    }
    return 0;
}

static bool is_cond_jump(int op)
{
    return is(op, R_POP_JUMP_IF_FALSE) || is(op, R_POP_JUMP_IF_TRUE) ||
           is(op, R_POP_JUMP_FORWARD_IF_FALSE) || is(op, R_POP_JUMP_FORWARD_IF_TRUE) ||
           is(op, R_POP_JUMP_BACKWARD_IF_FALSE) || is(op, R_POP_JUMP_BACKWARD_IF_TRUE) ||
           is(op, R_POP_JUMP_IF_NONE) || is(op, R_POP_JUMP_IF_NOT_NONE) ||
           is(op, R_POP_JUMP_FORWARD_IF_NONE) || is(op, R_POP_JUMP_FORWARD_IF_NOT_NONE) ||
           is(op, R_POP_JUMP_BACKWARD_IF_NONE) || is(op, R_POP_JUMP_BACKWARD_IF_NOT_NONE) ||
           is(op, R_JUMP_IF_FALSE_OR_POP) || is(op, R_JUMP_IF_TRUE_OR_POP);
}

static bool is_back(int op)
{
    return is(op, R_JUMP_BACKWARD) || is(op, R_JUMP_BACKWARD_NO_INTERRUPT) ||
           is(op, R_POP_JUMP_BACKWARD_IF_FALSE) || is(op, R_POP_JUMP_BACKWARD_IF_TRUE) ||
           is(op, R_POP_JUMP_BACKWARD_IF_NONE) || is(op, R_POP_JUMP_BACKWARD_IF_NOT_NONE);
}

/* Jump target unit of in, or -1. */
static int jump_target(const rs_ins *in)
{
    int op = in->op;
    if (is_back(op))
        return in->next - in->arg;
    if (is_cond_jump(op) || is(op, R_JUMP_FORWARD) || is(op, R_FOR_ITER) || is(op, R_SEND))
        return in->next + in->arg;
    return -1;
}

static bool no_fallthrough(int op)
{
    return is(op, R_RETURN_VALUE) || is(op, R_RETURN_CONST) || is(op, R_RAISE_VARARGS) ||
           is(op, R_RERAISE) || is(op, R_JUMP_FORWARD) || is(op, R_JUMP_BACKWARD) ||
           is(op, R_JUMP_BACKWARD_NO_INTERRUPT);
}

/* The normal-flow successors of instruction i (fall-through, jump
 * target; exception edges not included) into succ[0..return). */
static int successors(const rs_code *c, int i, int succ[2])
{
    const rs_ins *in = &c->ins[i];
    int ns = 0;
    if (!no_fallthrough(in->op) && i + 1 < c->n)
        succ[ns++] = i + 1;
    int t = jump_target(in);
    if (t >= 0 && t < c->nunits && c->at_unit[t] >= 0)
        succ[ns++] = c->at_unit[t];
    return ns;
}

/* reach[i]: instruction i runs on some path from the entry without an
 * exception (exception handlers' code is not reached). NULL: no memory. */
static bool *normal_reach(const rs_code *c)
{
    bool *reach = calloc((size_t)c->n + 1, sizeof *reach);
    int *work = malloc(sizeof(int) * ((size_t)c->n + 1));
    if (!reach || !work) {
        free(reach);
        free(work);
        return NULL;
    }
    int nw = 0;
    if (c->n > 0) {
        reach[0] = true;
        work[nw++] = 0;
    }
    while (nw > 0) {
        int succ[2], ns = successors(c, work[--nw], succ);
        for (int k = 0; k < ns; k++)
            if (!reach[succ[k]]) {
                reach[succ[k]] = true;
                work[nw++] = succ[k];
            }
    }
    free(work);
    return reach;
}

/* ---------------- liveness ---------------- */
/* live[i * words ..] = locals live before instruction i (bitsets over
 * co_nlocals). Uses: LOAD_FAST*, DELETE_FAST; definitions: STORE_FAST. */
static uint64_t *liveness(const rs_code *c, int nloc, int *words_out)
{
    int W = (nloc + 63) / 64;
    if (W == 0)
        W = 1;
    *words_out = W;
    uint64_t *live = calloc((size_t)(c->n + 1) * (size_t)W, sizeof(uint64_t));
    uint64_t *tmp = calloc((size_t)W, sizeof(uint64_t));
    if (!live || !tmp) {
        free(live);
        free(tmp);
        PyErr_NoMemory();
        return NULL;
    }
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = c->n - 1; i >= 0; i--) {
            const rs_ins *in = &c->ins[i];
            memset(tmp, 0, (size_t)W * sizeof(uint64_t));
            int succ[2], ns = successors(c, i, succ);
            for (int e = 0; e < c->nexc; e++)
                if (in->at >= c->exc[e].start && in->at < c->exc[e].end &&
                    c->exc[e].target < c->nunits && c->at_unit[c->exc[e].target] >= 0) {
                    int h = c->at_unit[c->exc[e].target];
                    for (int w = 0; w < W; w++)
                        tmp[w] |= live[(size_t)h * W + w];
                }
            for (int k = 0; k < ns; k++)
                for (int w = 0; w < W; w++)
                    tmp[w] |= live[(size_t)succ[k] * W + w];
            int a = in->arg;
            if (is(in->op, R_STORE_FAST) && a < nloc)
                tmp[a / 64] &= ~(1ull << (a % 64));
            if ((is(in->op, R_LOAD_FAST) || is(in->op, R_LOAD_FAST_CHECK) ||
                 is(in->op, R_LOAD_FAST_AND_CLEAR) || is(in->op, R_DELETE_FAST)) && a < nloc)
                tmp[a / 64] |= 1ull << (a % 64);
            uint64_t *cur = &live[(size_t)i * W];
            if (memcmp(cur, tmp, (size_t)W * sizeof(uint64_t))) {
                memcpy(cur, tmp, (size_t)W * sizeof(uint64_t));
                changed = true;
            }
        }
    }
    free(tmp);
    return live;
}

/* ---------------- planning a break ---------------- */
/* Stack effect of the instructions that may be performed by a break
 * function: items consumed and left. -1: not one of them. */
static int simple_effect(const rs_ins *in, int *npop, int *npush)
{
    int op = in->op, a = in->arg;
#define E(k, p, q) if (is(op, R_##k)) { *npop = (p); *npush = (q); return 0; }
    E(BINARY_SUBSCR, 2, 1) E(BINARY_SLICE, 3, 1) E(STORE_SUBSCR, 3, 0)
    E(STORE_SLICE, 4, 0) E(DELETE_SUBSCR, 2, 0) E(BINARY_OP, 2, 1) E(COMPARE_OP, 2, 1)
    E(CONTAINS_OP, 2, 1) E(IS_OP, 2, 1) E(UNARY_NEGATIVE, 1, 1) E(UNARY_NOT, 1, 1)
    E(UNARY_INVERT, 1, 1) E(UNARY_POSITIVE, 1, 1) E(FORMAT_VALUE, 1 + ((a & 4) ? 1 : 0), 1)
    E(BUILD_STRING, a, 1) E(BUILD_TUPLE, a, 1) E(BUILD_LIST, a, 1) E(BUILD_SET, a, 1)
    E(BUILD_MAP, 2 * a, 1) E(STORE_ATTR, 2, 0) E(DELETE_ATTR, 1, 0) E(STORE_GLOBAL, 1, 0)
    E(DELETE_GLOBAL, 0, 0) E(IMPORT_NAME, 2, 1) E(LOAD_BUILD_CLASS, 0, 1) E(GET_LEN, 1, 2)
    E(UNPACK_SEQUENCE, 1, a) E(UNPACK_EX, 1, (a & 0xff) + (a >> 8) + 1)
    E(CALL_INTRINSIC_1, 1, 1) E(LOAD_ASSERTION_ERROR, 0, 1)
    E(CALL_FUNCTION_EX, 3 + (a & 1), 1)
    E(NOP, 0, 0)                    /* a `try:`: an uncaught raise inside breaks there (tr_except.c) */
    E(MATCH_MAPPING, 1, 2) E(MATCH_SEQUENCE, 1, 2) E(MATCH_KEYS, 2, 3) E(MATCH_CLASS, 3, 1)
#undef E
    if (is(op, R_LOAD_ATTR)) {
#if ST_PY312
        if (a & 1)
            return -1;              /* method form: may leave a NULL */
#endif
        *npop = 1;
        *npush = 1;
        return 0;
    }
    return -1;
}

/* See st_fe_tr.h. */
int st_fe_resume_plan(PyCodeObject *co, int at, st_fe_brkpt *bp, char *why, size_t nwhy)
{
    memset(bp, 0, sizeof *bp);
    why[0] = 0;
    if (rs_init() < 0)
        return -1;
    rs_code c;
    if (code_decode(co, &c) < 0)
        return -1;
    int rc = 1;
    int i = at >= 0 && at < c.nunits ? c.at_unit[at] : -1;
    if (i < 0) {
        snprintf(why, nwhy, "no instruction at the break");
        goto out;
    }
    /* the breaking group: [KW_NAMES] [PRECALL] CALL, or one instruction */
    int first = i, last = i;
    const rs_ins *in = &c.ins[i];
    if (is(in->op, R_KW_NAMES) || is(in->op, R_PRECALL)) {
        while (last + 1 < c.n && !is(c.ins[last].op, R_CALL))
            last++;
        in = &c.ins[last];
    }
    if (is(in->op, R_CALL)) {
        while (first > 0 && (is(c.ins[first - 1].op, R_PRECALL) || is(c.ins[first - 1].op, R_KW_NAMES)))
            first--;
        bp->npop = in->arg + 2;
        bp->kind = ST_BRK_SIMPLE;
        bp->nres[0] = 1;
        bp->exit[0] = in->next;
    } else if (is_cond_jump(in->op)) {
        if (is_back(in->op)) {
            snprintf(why, nwhy, "the break is inside a loop");
            goto out;
        }
        bp->npop = 1;
        bp->kind = ST_BRK_JUMP;
        bp->exit[0] = in->next;
        bp->exit[1] = in->next + in->arg;
        bool keep = is(in->op, R_JUMP_IF_FALSE_OR_POP) || is(in->op, R_JUMP_IF_TRUE_OR_POP);
        bp->nres[0] = 0;
        bp->nres[1] = keep ? 1 : 0;
    } else if (is(in->op, R_RETURN_VALUE) || is(in->op, R_RAISE_VARARGS)) {
        bp->npop = is(in->op, R_RETURN_VALUE) ? 1 : in->arg;
        bp->kind = ST_BRK_END;
    } else if ((is(in->op, R_STORE_DEREF) || is(in->op, R_DELETE_DEREF)) && !co->co_nfreevars &&
               !co->co_ncellvars) {
        snprintf(why, nwhy, "a cell instruction in a function without cells");
        goto out;
    } else if (is(in->op, R_STORE_DEREF) || is(in->op, R_DELETE_DEREF)) {
        /* a store into (or del of) a cell handed to the frame: the break
         * function does it through the cell's cell_contents */
        int ncell = st_fe_cell_slots(co, NULL), *cells = calloc((size_t)ncell + 1, sizeof(int));
        if (!cells) {
            PyErr_NoMemory();
            rc = -1;
            goto out;
        }
        st_fe_cell_slots(co, cells);
        int free0 = co->co_nlocalsplus - co->co_nfreevars, k = -1;
        for (int p = 0; p < ncell; p++)
            if (cells[p] == in->arg)
                k = p;
        free(cells);
        if (k < 0 && in->arg >= free0)
            k = ncell + in->arg - free0;
        if (k < 0) {
            snprintf(why, nwhy, "a cell instruction names no cell");
            goto out;
        }
        bp->deref = k + 1;
        bp->npop = is(in->op, R_STORE_DEREF) ? 1 : 0;
        bp->kind = ST_BRK_SIMPLE;
        bp->nres[0] = 0;
        bp->exit[0] = in->next;
    } else if (simple_effect(in, &bp->npop, &bp->nres[0]) == 0) {
        bp->kind = ST_BRK_SIMPLE;
        bp->exit[0] = in->next;
    } else {
        PyObject *om = PyImport_ImportModule("opcode");
        PyObject *names = om ? PyObject_GetAttrString(om, "opname") : NULL;
        PyObject *nm = names ? PySequence_GetItem(names, in->op) : NULL;
        snprintf(why, nwhy, "no resuming after instruction %s",
                 nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8(nm) : "?");
        Py_XDECREF(nm);
        Py_XDECREF(names);
        Py_XDECREF(om);
        PyErr_Clear();
        goto out;
    }
    bp->start = c.ins[first].start;
    bp->end = c.ins[last].next;
    bp->line = PyCode_Addr2Line(co, in->at * 2);
    /* inside a loop: a back edge spans it. Only edges of the normal flow
     * count: 3.12 ends a with block's handler with a jump back to the
     * statement after the block, which is no loop */
    bool *reach = normal_reach(&c);
    if (!reach) {
        PyErr_NoMemory();
        rc = -1;
        goto out;
    }
    for (int k = 0; k < c.n; k++)
        if (is_back(c.ins[k].op) && reach[k]) {
            int t = c.ins[k].next - c.ins[k].arg;
            if (t <= bp->start && bp->start < c.ins[k].at) {
                snprintf(why, nwhy, "the break is inside a loop (the frame runs as plain Python)");
                free(reach);
                goto out;
            }
        }
    free(reach);
    for (int e = 0; e < c.nexc; e++)
        if (bp->start < c.exc[e].end && c.exc[e].start < bp->end) {
            snprintf(why, nwhy, "the break is inside a try or with block");
            goto out;
        }
    /* live locals at the exits */
    int W = 0, nloc = co->co_nlocals;
    uint64_t *live = liveness(&c, nloc, &W);
    if (!live) {
        rc = -1;
        goto out;
    }
    bp->nlocals = nloc;
    bp->live = calloc((size_t)nloc + 1, 1);
    if (!bp->live) {
        free(live);
        PyErr_NoMemory();
        rc = -1;
        goto out;
    }
    for (int x = 0; x < (bp->kind == ST_BRK_JUMP ? 2 : bp->kind == ST_BRK_SIMPLE ? 1 : 0); x++) {
        int ti = bp->exit[x] < c.nunits ? c.at_unit[bp->exit[x]] : -1;
        if (ti < 0)
            continue;
        for (int l = 0; l < nloc; l++)
            if (live[(size_t)ti * W + l / 64] & (1ull << (l % 64)))
                bp->live[l] = 1;
    }
    free(live);
    /* zero-argument super() reads the first argument without a LOAD_FAST */
    if (co->co_nfreevars && nloc > 0) {
        PyObject *fv = PyObject_GetAttrString((PyObject *)co, "co_freevars");
        if (!fv) {
            rc = -1;
            goto out;
        }
        bool cls = false;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fv); k++)
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(fv, k), "__class__") == 0)
                cls = true;
        Py_DECREF(fv);
        if (cls && (PyBytes_AS_STRING(co->co_localspluskinds)[0] & CO_FAST_CELL)) {
            /* the first argument is a cell: the resume code's slot 0 is a
             * dead local, where zero-argument super() would look */
            snprintf(why, nwhy, "zero-argument super() with the first argument captured by "
                     "a closure");
            goto out;
        }
        if (cls)
            bp->live[0] = 1;
    }
    rc = 0;
out:
    code_free(&c);
    return rc;
}

void st_fe_brkpt_clear(st_fe_brkpt *bp)
{
    free(bp->live);
    bp->live = NULL;
}

/* ---------------- assembling ---------------- */
typedef struct {
    uint8_t *b;
    int n, cap;      /* bytes */
    bool oom;
} rs_buf;

static void put(rs_buf *o, const void *p, int n)
{
    if (o->oom)
        return;
    if (o->n + n > o->cap) {
        int nc = o->cap ? 2 * o->cap : 256;
        while (nc < o->n + n)
            nc *= 2;
        uint8_t *nb = realloc(o->b, (size_t)nc);
        if (!nb) {
            o->oom = true;
            return;
        }
        o->b = nb;
        o->cap = nc;
    }
    memcpy(o->b + o->n, p, (size_t)n);
    o->n += n;
}

static int ext_units(int arg)
{
    return arg >= (1 << 24) ? 3 : arg >= (1 << 16) ? 2 : arg >= (1 << 8) ? 1 : 0;
}

static void emit(rs_buf *o, int op, int arg)
{
    for (int k = ext_units(arg); k > 0; k--) {
        uint8_t u[2] = {(uint8_t)rop[R_EXTENDED_ARG], (uint8_t)((arg >> (8 * k)) & 0xff)};
        put(o, u, 2);
    }
    uint8_t u[2] = {(uint8_t)op, (uint8_t)(arg & 0xff)};
    put(o, u, 2);
    static const uint8_t zero[2] = {0, 0};
    for (int k = tr_op_caches(op); k > 0; k--)
        put(o, zero, 2);
}

static void put_exc_varint(rs_buf *o, unsigned v, bool mark)
{
    int shift = 0;
    while ((v >> shift) >= 64)
        shift += 6;
    for (; shift >= 0; shift -= 6) {
        uint8_t b = (uint8_t)((v >> shift) & 63);
        if (shift)
            b |= 64;
        if (mark) {
            b |= 128;
            mark = false;
        }
        put(o, &b, 1);
    }
}

/* Location entries of kind 15 ("no location") for n units. */
static void put_noloc(rs_buf *o, int n)
{
    while (n > 0) {
        int k = n > 8 ? 8 : n;
        uint8_t b = (uint8_t)(0x80 | (15 << 3) | (k - 1));
        put(o, &b, 1);
        n -= k;
    }
}

/* Location entries of kind 13 (line only) for n units, all on the first
 * line (line delta 0). */
static void put_sameline(rs_buf *o, int n)
{
    while (n > 0) {
        int k = n > 8 ? 8 : n;
        uint8_t b[2] = {(uint8_t)(0x80 | (13 << 3) | (k - 1)), 0};
        put(o, b, 2);
        n -= k;
    }
}

static PyObject *mkcode(PyCodeObject *co, rs_buf *code, PyObject *consts, PyObject *varnames,
                        int argc, int stacksize, int flags, int firstline, PyObject *name,
                        PyObject *qualname, rs_buf *lines, rs_buf *exc, PyObject *freevars,
                        PyObject *names)
{
    if (code->oom || lines->oom || exc->oom)
        return PyErr_NoMemory();
    static uint8_t empty[1];
    const char *eb = exc->b ? (const char *)exc->b : (const char *)empty;
    const char *lb = lines->b ? (const char *)lines->b : (const char *)empty;
    PyObject *kw = Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:y#,s:O,s:O,s:(),s:(),s:O,s:O,s:y#,s:y#}",
        "co_argcount", argc, "co_posonlyargcount", 0, "co_kwonlyargcount", 0,
        "co_nlocals", (int)PyTuple_GET_SIZE(varnames), "co_stacksize", stacksize,
        "co_flags", flags, "co_firstlineno", firstline,
        "co_code", (const char *)code->b, (Py_ssize_t)code->n, "co_consts", consts,
        "co_varnames", varnames, "co_freevars", "co_cellvars", "co_name", name,
        "co_qualname", qualname, "co_linetable", lb, (Py_ssize_t)lines->n,
        "co_exceptiontable", eb, (Py_ssize_t)exc->n);
    if (!kw)
        return NULL;
    if ((freevars && PyDict_SetItemString(kw, "co_freevars", freevars) < 0) ||
        (names && PyDict_SetItemString(kw, "co_names", names) < 0)) {
        Py_DECREF(kw);
        return NULL;
    }
    PyObject *meth = PyObject_GetAttrString((PyObject *)co, "replace");
    PyObject *args = PyTuple_New(0);
    PyObject *r = meth && args ? PyObject_Call(meth, args, kw) : NULL;
    Py_XDECREF(meth);
    Py_XDECREF(args);
    Py_DECREF(kw);
    return r;
}

/* The resume function of one exit: the original code behind a prologue
 * that pushes the stack (null[k]: a NULL marker) from the arguments after
 * the original's locals, unbinds the locals marked 2 in lstate, and jumps
 * to unit `target`. The original's cell variables are free variables of
 * the resume code, before the original's own (its closure: the frame's
 * cells, in st_fe_cell_slots order, then the frame's closure); the
 * operands of the instructions that name cells and free variables are
 * renumbered to match. An argument that is a cell keeps a dead local slot
 * of its own, renamed so that no name is both a local and a free one. */
static PyObject *resume_fn(PyCodeObject *co, PyObject *globals, PyObject *closure, int target,
                           int nstack, const bool *null, const uint8_t *lstate, int serial)
{
    int nloc = co->co_nlocals, nargs = 0;
    int ncell = st_fe_cell_slots(co, NULL), nfree = co->co_nfreevars;
    int *cells = calloc((size_t)ncell + 1, sizeof(int));
    if (!cells)
        return PyErr_NoMemory();
    st_fe_cell_slots(co, cells);
    PyObject *varnames = PyObject_GetAttrString((PyObject *)co, "co_varnames");
    PyObject *ofree = varnames ? PyObject_GetAttrString((PyObject *)co, "co_freevars") : NULL;
    PyObject *fv = ofree ? PyTuple_New(ncell + nfree) : NULL;
    if (!fv) {
        Py_XDECREF(varnames);
        Py_XDECREF(ofree);
        free(cells);
        return NULL;
    }
    for (int p = 0; p < ncell; p++)
        PyTuple_SET_ITEM(fv, p, Py_NewRef(PyTuple_GET_ITEM(co->co_localsplusnames, cells[p])));
    for (int k = 0; k < nfree; k++)
        PyTuple_SET_ITEM(fv, ncell + k, Py_NewRef(PyTuple_GET_ITEM(ofree, k)));
    Py_DECREF(ofree);
    for (int k = 0; k < nstack; k++)
        nargs += !null[k];
    PyObject *vn = PyTuple_New(nloc + nargs);
    if (!vn) {
        Py_DECREF(varnames);
        Py_DECREF(fv);
        free(cells);
        return NULL;
    }
    for (int i = 0; i < nloc; i++) {
        PyObject *nm = PyTuple_GET_ITEM(varnames, i);
        bool cell = false;
        for (int p = 0; p < ncell; p++)
            cell |= cells[p] == i;
        PyTuple_SET_ITEM(vn, i, cell ? PyUnicode_FromFormat("___cellarg_%U", nm) : Py_NewRef(nm));
        if (!PyTuple_GET_ITEM(vn, i)) {
            Py_DECREF(varnames);
            Py_DECREF(vn);
            Py_DECREF(fv);
            free(cells);
            return NULL;
        }
    }
    Py_DECREF(varnames);
    for (int k = 0; k < nargs; k++) {
        PyObject *s = PyUnicode_FromFormat("___stack%d", k);
        if (!s) {
            Py_DECREF(vn);
            Py_DECREF(fv);
            free(cells);
            return NULL;
        }
        PyTuple_SET_ITEM(vn, nloc + k, s);
    }
    rs_buf pro = {0};
    if (ncell + nfree)   /* the original's MAKE_CELLs and COPY_FREE_VARS are jumped over */
        emit(&pro, rop[R_COPY_FREE_VARS], ncell + nfree);
    emit(&pro, rop[R_RESUME], 0);
    for (int k = 0, a = nloc; k < nstack; k++) {
        if (null[k])
            emit(&pro, rop[R_PUSH_NULL], 0);
        else
            emit(&pro, rop[R_LOAD_FAST], a++);
    }
    for (int a = nloc; a < nloc + nargs; a++)
        emit(&pro, rop[R_DELETE_FAST], a);   /* the stack items, not held twice */
    for (int i = 0; i < nloc; i++)
        if (lstate[i] == 2)
            emit(&pro, rop[R_DELETE_FAST], i);
    /* the original follows the jump: its delta is the target itself */
    emit(&pro, rop[R_JUMP_FORWARD], target);
    int P = pro.n / 2;
    rs_buf code = {0};
    put(&code, pro.b, pro.n);
    PyObject *orig = PyCode_GetCode(co);
    if (!orig) {
        free(pro.b);
        free(code.b);
        Py_DECREF(vn);
        Py_DECREF(fv);
        free(cells);
        return NULL;
    }
    put(&code, PyBytes_AS_STRING(orig), (int)PyBytes_GET_SIZE(orig));
    Py_DECREF(orig);
    if (((nfree && nargs > 0) || ncell) && !code.oom) {
        /* free variables follow the locals: the stack arguments move
         * them, and the cells become free variables before them */
        rs_code c;
        int bad = code_decode(co, &c), free0 = co->co_nlocalsplus - nfree;
        for (int i = 0; bad == 0 && i < c.n; i++) {
            rs_ins *in = &c.ins[i];
            if (!hasfree[in->op])
                continue;
            int na = in->arg >= free0 ? in->arg - free0 + ncell + nloc + nargs : -1;
            for (int p = 0; p < ncell && na < 0; p++)
                if (cells[p] == in->arg)
                    na = nloc + nargs + p;
            if (na < 0) {
                PyErr_SetString(PyExc_SystemError, "resume: a cell instruction names no cell");
                bad = -1;
                break;
            }
            int ext = in->at - in->start;
            if (ext_units(na) != ext) {
                PyErr_SetString(PyExc_NotImplementedError, "resume: a free variable's index "
                                "outgrows its instruction");
                bad = -1;
                break;
            }
            for (int k = 0; k <= ext; k++)
                code.b[2 * (P + in->start + k) + 1] = (uint8_t)((na >> (8 * (ext - k))) & 0xff);
        }
        code_free(&c);
        if (bad < 0) {
            free(pro.b);
            free(code.b);
            Py_DECREF(vn);
            Py_DECREF(fv);
            free(cells);
            return NULL;
        }
    }
    free(cells);
    /* the exception table, shifted by the prologue */
    rs_buf exc = {0};
    {
        const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(co->co_exceptiontable);
        int n = (int)PyBytes_GET_SIZE(co->co_exceptiontable), pos = 0;
        while (pos < n) {
            int s, len, t, dl;
            if (!read_exc_entry(p, n, &pos, &s, &len, &t, &dl))
                break;
            put_exc_varint(&exc, (unsigned)(s + P), true);
            put_exc_varint(&exc, (unsigned)len, false);
            put_exc_varint(&exc, (unsigned)(t + P), false);
            put_exc_varint(&exc, (unsigned)dl, false);
        }
    }
    rs_buf lines = {0};
    put_noloc(&lines, P);
    put(&lines, PyBytes_AS_STRING(co->co_linetable), (int)PyBytes_GET_SIZE(co->co_linetable));
    PyObject *name = PyUnicode_FromFormat("__resume_at_%d_%d", target * 2, serial);
    PyObject *qual = name ? PyUnicode_FromFormat("%U.%U", co->co_qualname, name) : NULL;
    int flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
    PyObject *code_obj = qual ? mkcode(co, &code, co->co_consts, vn, nloc + nargs,
                                       co->co_stacksize + nstack + 2, flags,
                                       co->co_firstlineno, name, qual, &lines, &exc, fv, NULL)
                              : NULL;
    Py_DECREF(fv);
    Py_XDECREF(name);
    Py_XDECREF(qual);
    Py_DECREF(vn);
    free(pro.b);
    free(code.b);
    free(exc.b);
    free(lines.b);
    if (!code_obj)
        return NULL;
    PyObject *fn = PyFunction_New(code_obj, globals);
    Py_DECREF(code_obj);
    /* with cells the function is made per call (only its code is used) */
    if (fn && nfree && !ncell && PyFunction_SetClosure(fn, closure) < 0)
        Py_CLEAR(fn);
    return fn;
}

/* One exit block of the break function: the instruction left nres items;
 * the resume function's arguments are (locals..., stack below..., those
 * items); calls it and returns its result. closure_arg >= 0: fn_const is
 * the resume function's code, made into a function with the closure the
 * break function got as its argument closure_arg (the calling frame's
 * cells: a closure made anew per call must not see the first call's). */
static void emit_exit(rs_buf *o, const st_fe_brkpt *bp, int nres, int nstack_below,
                      const bool *null, const uint8_t *lstate, int ncons, int fn_const,
                      int none_const, int closure_arg)
{
    int nbelow_args = 0;
    for (int k = 0; k < nstack_below; k++)
        nbelow_args += !null[k];
    emit(o, rop[R_BUILD_TUPLE], nres);
    int la = ncons + nbelow_args;   /* first live-local argument */
    for (int i = 0; i < bp->nlocals; i++) {
        if (lstate[i] == 1)
            emit(o, rop[R_LOAD_FAST], la++);
        else
            emit(o, rop[R_LOAD_CONST], none_const);
    }
    for (int k = 0; k < nbelow_args; k++)
        emit(o, rop[R_LOAD_FAST], ncons + k);
    emit(o, rop[R_BUILD_TUPLE], bp->nlocals + nbelow_args);
    emit(o, rop[R_SWAP], 2);
    emit(o, rop[R_BINARY_OP], 0);   /* NB_ADD: (locals + below) + results */
    emit(o, rop[R_PUSH_NULL], 0);
    emit(o, rop[R_SWAP], 2);
    if (closure_arg >= 0) {
        emit(o, rop[R_LOAD_FAST], closure_arg);
        emit(o, rop[R_LOAD_CONST], fn_const);
        emit(o, rop[R_MAKE_FUNCTION], 0x08);
    } else {
        emit(o, rop[R_LOAD_CONST], fn_const);
    }
    emit(o, rop[R_SWAP], 2);
    emit(o, rop[R_CALL_FUNCTION_EX], 0);
    emit(o, rop[R_RETURN_VALUE], 0);
}

static int resume_serial;

static PyObject *resume_prefix(void)
{
    static PyObject *p;
    if (!p)
        p = PyUnicode_InternFromString("__resume_at_");
    return p;
}

/* See st_fe_tr.h. */
PyObject *st_fe_break_function(PyCodeObject *co, PyObject *globals, PyObject *closure,
                               const st_fe_brkpt *bp, int nstack, const bool *null,
                               const uint8_t *lstate)
{
    int ncell = st_fe_cell_slots(co, NULL);
    if (co->co_nfreevars && !ncell && (!closure || !PyTuple_Check(closure))) {
        PyErr_SetString(PyExc_SystemError, "resume: a function with free variables needs its closure");
        return NULL;
    }
    if (!co->co_nfreevars)
        closure = Py_None;
    if (rs_init() < 0)
        return NULL;
    if (!fn_cache && !(fn_cache = PyDict_New()))
        return NULL;
    /* with free variables the break function takes the calling frame's
     * closure as its last argument and makes the resume function with it
     * at each call, so one break function serves every closure; with cell
     * variables that argument is the resume closure (the frame's cells made
     * anew by the entry on each call, then the frame's closure) */
    int clo = co->co_nfreevars || ncell ? 1 : 0;
    /* co's and globals' identities: equal code objects (the same source
     * exec'd twice) of functions with other globals get their own */
    PyObject *key = Py_BuildValue("(ONNiiiy#y#)", (PyObject *)co, PyLong_FromVoidPtr(co),
                                  PyLong_FromVoidPtr(globals), clo, bp->start, nstack,
                                  (const char *)null, (Py_ssize_t)nstack,
                                  (const char *)lstate, (Py_ssize_t)bp->nlocals);
    if (!key)
        return NULL;
    PyObject *hit = PyDict_GetItemWithError(fn_cache, key);
    if (hit || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(hit);
    }
    int below = nstack - bp->npop, ncons = 0, nbelow = 0, nlive = 0;
    for (int k = 0; k < nstack; k++) {
        if (k < below) nbelow += !null[k];
        else ncons += !null[k];
    }
    for (int i = 0; i < bp->nlocals; i++)
        nlive += lstate[i] == 1;
    /* resume functions, one per exit */
    int nexit = bp->kind == ST_BRK_JUMP ? 2 : bp->kind == ST_BRK_SIMPLE ? 1 : 0;
    PyObject *fns[2] = {NULL, NULL};
    bool *rnull = calloc((size_t)nstack + 4 + (size_t)bp->nres[0] + (size_t)bp->nres[1], 1);
    if (!rnull) {
        Py_DECREF(key);
        return PyErr_NoMemory();
    }
    for (int x = 0; x < nexit; x++) {
        memcpy(rnull, null, (size_t)below);
        memset(rnull + below, 0, (size_t)bp->nres[x]);
        fns[x] = resume_fn(co, globals, closure, bp->exit[x], below + bp->nres[x], rnull,
                           lstate, ++resume_serial);
        if (!fns[x]) {
            free(rnull);
            Py_XDECREF(fns[0]);
            Py_DECREF(key);
            return NULL;
        }
    }
    free(rnull);
    /* constants: the original's (the instruction's arguments index them),
     * then None and the resume functions */
    Py_ssize_t nc0 = PyTuple_GET_SIZE(co->co_consts);
    PyObject *consts = PyTuple_New(nc0 + 1 + nexit + (bp->deref ? 1 : 0)), *names = NULL;
    int nargs = ncons + nbelow + nlive + clo, clo_arg = clo ? nargs - 1 : -1;
    PyObject *vn = PyTuple_New(nargs);
    PyObject *res = NULL;
    rs_buf code = {0}, lines = {0}, exc = {0};
    if (!consts || !vn)
        goto done;
    for (Py_ssize_t i = 0; i < nc0; i++)
        PyTuple_SET_ITEM(consts, i, Py_NewRef(PyTuple_GET_ITEM(co->co_consts, i)));
    PyTuple_SET_ITEM(consts, nc0, Py_NewRef(Py_None));
    if (bp->deref) {
        /* the closure item's index, and the attribute name it sets */
        PyObject *ix = PyLong_FromLong(bp->deref - 1);
        PyObject *cc = PyUnicode_InternFromString("cell_contents");
        PyObject *one = cc ? PyTuple_Pack(1, cc) : NULL;
        names = one ? PySequence_Concat(co->co_names, one) : NULL;
        Py_XDECREF(cc);
        Py_XDECREF(one);
        if (!ix || !names) {
            Py_XDECREF(ix);
            goto done;
        }
        PyTuple_SET_ITEM(consts, nc0 + 1 + nexit, ix);
    }
    for (int x = 0; x < nexit; x++) {
        if (clo) /* the code: made into a function per call (emit_exit) */
            PyTuple_SET_ITEM(consts, nc0 + 1 + x, Py_NewRef(PyFunction_GET_CODE(fns[x])));
        else {
            PyTuple_SET_ITEM(consts, nc0 + 1 + x, fns[x]);
            fns[x] = NULL;
        }
    }
    for (int k = 0; k < nargs; k++) {
        PyObject *s = clo_arg == k ? PyUnicode_FromString("___closure")
                                   : PyUnicode_FromFormat("___arg%d", k);
        if (!s)
            goto done;
        PyTuple_SET_ITEM(vn, k, s);
    }
    /* prologue: the consumed items (NULL markers as PUSH_NULL) */
    emit(&code, rop[R_RESUME], 0);
    for (int k = below, a = 0; k < nstack; k++) {
        if (null[k]) emit(&code, rop[R_PUSH_NULL], 0);
        else emit(&code, rop[R_LOAD_FAST], a++);
    }
    /* the breaking instruction(s), as in the original */
    PyObject *orig = PyCode_GetCode(co);
    if (!orig)
        goto done;
    if (bp->kind == ST_BRK_JUMP) {
        rs_code c;
        if (code_decode(co, &c) < 0) {
            code_free(&c);
            Py_DECREF(orig);
            goto done;
        }
        const rs_ins *in = &c.ins[c.at_unit[bp->start]];
        rs_buf a = {0};
        emit_exit(&a, bp, bp->nres[0], below, null, lstate, ncons, (int)nc0 + 1, (int)nc0, clo_arg);
        emit(&code, in->op, a.n / 2);     /* forward over exit 0 to exit 1 */
        put(&code, a.b, a.n);
        free(a.b);
        emit_exit(&code, bp, bp->nres[1], below, null, lstate, ncons, (int)nc0 + 2, (int)nc0, clo_arg);
        code_free(&c);
    } else {
        if (bp->deref) {
            /* closure[k].cell_contents = value, or del closure[k].cell_contents */
            emit(&code, rop[R_LOAD_FAST], clo_arg);
            emit(&code, rop[R_LOAD_CONST], (int)nc0 + 1 + nexit);
            emit(&code, rop[R_BINARY_SUBSCR], 0);
            emit(&code, rop[bp->npop ? R_STORE_ATTR : R_DELETE_ATTR],
                 (int)PyTuple_GET_SIZE(co->co_names));
        } else {
            put(&code, PyBytes_AS_STRING(orig) + 2 * bp->start, 2 * (bp->end - bp->start));
        }
        if (bp->kind == ST_BRK_SIMPLE)
            emit_exit(&code, bp, bp->nres[0], below, null, lstate, ncons, (int)nc0 + 1, (int)nc0, clo_arg);
    }
    Py_DECREF(orig);
    put_sameline(&lines, code.n / 2);
    int flags = CO_OPTIMIZED | CO_NEWLOCALS;
    PyObject *cobj = mkcode(co, &code, consts, vn, nargs,
                            nstack + bp->nlocals + 8, flags, bp->line > 0 ? bp->line : co->co_firstlineno,
                            co->co_name, co->co_qualname, &lines, &exc, NULL, names);
    if (!cobj)
        goto done;
    res = PyFunction_New(cobj, globals);
    if (res)
        st_fe_hook_mark_skip((PyCodeObject *)cobj);
    Py_DECREF(cobj);
    if (res && PyDict_SetItem(fn_cache, key, res) < 0)
        Py_CLEAR(res);
done:
    Py_XDECREF(fns[0]);
    Py_XDECREF(fns[1]);
    Py_XDECREF(names);
    Py_XDECREF(consts);
    Py_XDECREF(vn);
    Py_DECREF(key);
    free(code.b);
    free(lines.b);
    free(exc.b);
    return res;
}

/* See st_fe_tr.h. */
/* An exception leaving the break function through the resume function it
 * called: their two traceback entries become one, the break function's
 * frame (the user's function's stand-in, of its name) at the resume
 * function's line, as the user's frame would show it (no column carets:
 * the line is not that code's). */
static void merge_resume_tb(PyObject *brk)
{
    st_py_exc e;
    st_py_err_save(&e);
#if PY_VERSION_HEX < 0x030C0000
    PyErr_NormalizeException(&e.t, &e.v, &e.tb);
    if (e.v && e.tb)
        PyException_SetTraceback(e.v, e.tb);
#endif
    PyObject *exc = e.v;
    PyObject *tb = exc ? PyException_GetTraceback(exc) : NULL;
    PyTracebackObject *t = tb && PyTraceBack_Check(tb) ? (PyTracebackObject *)tb : NULL;
    PyTracebackObject *nx = t ? t->tb_next : NULL;
    PyObject *bc = PyFunction_Check(brk) ? PyFunction_GET_CODE(brk) : NULL;
    PyCodeObject *c0 = t ? PyFrame_GetCode(t->tb_frame) : NULL;
    PyCodeObject *c1 = nx ? PyFrame_GetCode(nx->tb_frame) : NULL;
    if (c0 && c1 && (PyObject *)c0 == bc && st_fe_is_resume_code(c1)) {
        /* tb_lineno through its getter: the field is computed lazily */
        PyObject *ln = PyObject_GetAttrString((PyObject *)nx, "tb_lineno");
        PyObject *m = ln ? PyObject_CallFunction((PyObject *)&PyTraceBack_Type, "OOiO",
                                                 nx->tb_next ? (PyObject *)nx->tb_next : Py_None,
                                                 (PyObject *)t->tb_frame, -1, ln) : NULL;
        Py_XDECREF(ln);
        if (m)
            PyException_SetTraceback(exc, m);
        else
            PyErr_Clear();
        Py_XDECREF(m);
    }
    Py_XDECREF(c0);
    Py_XDECREF(c1);
    Py_XDECREF(tb);
#if PY_VERSION_HEX < 0x030C0000
    if (e.v)
        Py_XSETREF(e.tb, PyException_GetTraceback(e.v));
#endif
    st_py_err_restore(&e);
}

PyObject *st_fe_call_break(PyObject *brk, PyObject *args, PyCodeObject *co, PyObject *closure)
{
    PyObject *r;
    if (!co->co_nfreevars || co->co_ncellvars) {   /* with cells: among args */
        r = PyObject_Call(brk, args, NULL);
    } else {
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        PyObject *a = PyTuple_New(n + 1);
        if (!a)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(a, i, Py_NewRef(PyTuple_GET_ITEM(args, i)));
        PyTuple_SET_ITEM(a, n, Py_NewRef(closure ? closure : Py_None));
        r = PyObject_Call(brk, a, NULL);
        Py_DECREF(a);
    }
    if (!r && PyErr_Occurred())
        merge_resume_tb(brk);
    return r;
}

bool st_fe_is_resume_code(PyCodeObject *co)
{
    return PyUnicode_Check(co->co_name) &&
           PyUnicode_Tailmatch(co->co_name, resume_prefix(), 0, 12, -1) == 1;
}

void st_fe_resume_reset(void)
{
    if (fn_cache)
        PyDict_Clear(fn_cache);
}
