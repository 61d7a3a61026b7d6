/* autocast.c - mixed precision (st_rt_autocast_*): the per-thread
 * autocast state of each device type and the op policy that st_rt_eager
 * applies at its entry, after PyTorch's autocast lists. A listed op has
 * its floating operands cast (through st_rt_eager itself, so the casts
 * are taped and traced like any op) and then runs on the cast operands:
 *   lower  matmul, linear: float32 operands to the autocast dtype;
 *   fp32   ops that lose too much in 16 bits: 16-bit operands to float32
 *          (CUDA: exp, log, pow, reciprocal, rsqrt, layer_norm,
 *          logsumexp, cross_entropy, and softmax, log_softmax, sum, prod
 *          as "fp32_set_opt_dtype"; CPU: prod, cross_entropy);
 *   promote scatter_add: every floating operand to the widest of them.
 * float64 operands are never cast. Other ops run as they are, and type
 * promotion decides their result (bfloat16 + float32 = float32).
 * Ops writing into given tensors (out=, in place) are not cast, as in
 * PyTorch, and backward and compiled graphs' replays run with autocast
 * off (st_rt_autocast_swap): a graph already holds the casts it needs. */
#include "st_runtime.h"

#include <string.h>

enum { POL_NONE, POL_LOWER, POL_FP32, POL_PROMOTE };

/* The word guards compare: byte d is 0 when device type d has autocast
 * off, else its dtype << 1 | 1 (so an exited region leaves 0 behind, and
 * graphs traced before and after it share their guard). The dtype of a
 * disabled device type is kept apart, for st_rt_autocast_enabled. */
static _Thread_local uint32_t state;
static _Thread_local st_dtype kept[ST_NDEVTYPES];

uint32_t st_rt_autocast_state(void) { return state; }

uint32_t st_rt_autocast_swap(uint32_t s) {
    uint32_t prev = state;
    state = s;
    return prev;
}

static st_dtype default_dtype(st_device_type d) {
    return d == ST_DEV_CPU ? ST_BFLOAT16 : ST_FLOAT16; /* PyTorch's */
}

bool st_rt_autocast_in(uint32_t s, st_device_type d, st_dtype *dtype) {
    if ((unsigned)d >= ST_NDEVTYPES) return false;
    uint32_t b = (s >> (8 * d)) & 0xffu;
    if (dtype && b) *dtype = (st_dtype)(b >> 1);
    return b != 0;
}

bool st_rt_autocast_enabled(st_device_type d, st_dtype *dtype) {
    if ((unsigned)d >= ST_NDEVTYPES) return false;
    if (dtype) *dtype = kept[d] ? kept[d] : default_dtype(d);
    return st_rt_autocast_in(state, d, dtype);
}

st_status st_rt_autocast_set(st_device_type d, bool enabled, st_dtype dtype) {
    if ((unsigned)d >= ST_NDEVTYPES)
        return st_err(ST_ERR_VALUE, "autocast: unknown device type %d", (int)d);
    if (dtype != ST_BFLOAT16 && dtype != ST_FLOAT16)
        return st_err(ST_ERR_VALUE, "autocast: the autocast dtype must be "
                      "bfloat16 or float16, got %s", st_dtype_name(dtype));
    uint32_t b = enabled ? (uint32_t)dtype << 1 | 1u : 0u;
    state = (state & ~(0xffu << (8 * d))) | b << (8 * d);
    kept[d] = dtype;
    return ST_OK;
}

static int policy(st_device_type d, st_op_id op) {
    switch (op) {
    case ST_OP_MATMUL: case ST_OP_LINEAR:
        return POL_LOWER;
    case ST_OP_PROD: case ST_OP_CROSS_ENTROPY:
        return POL_FP32;
    case ST_OP_SCATTER_ADD:
        return d == ST_DEV_CUDA ? POL_PROMOTE : POL_NONE;
    case ST_OP_EXP: case ST_OP_LOG: case ST_OP_POW: case ST_OP_RECIPROCAL:
    case ST_OP_RSQRT: case ST_OP_LAYER_NORM: case ST_OP_LOGSUMEXP:
    case ST_OP_SOFTMAX: case ST_OP_LOG_SOFTMAX: case ST_OP_SUM:
        return d == ST_DEV_CUDA ? POL_FP32 : POL_NONE;
    default:
        return POL_NONE;
    }
}

const char *st_rt_autocast_policy_name(st_device_type d, st_op_id op) {
    static const char *const names[] = {"none", "lower", "fp32", "promote"};
    return names[policy(d, op)];
}

/* PyTorch's is_eligible: a floating tensor, not float64 */
static bool eligible(const st_tensor *t, st_device_type d) {
    return t && st_dtype_is_float(t->dtype) && t->dtype != ST_FLOAT64 &&
           st_tensor_device((st_tensor *)t)->type == d;
}

int st_rt_autocast_apply(st_op_id op, const st_operand *in, int nin,
                         const st_attrs *attrs, st_tensor **out) {
    /* CUDA's lists hold the CPU's: an op on neither needs no look at
     * its operands (every eager op under autocast passes here) */
    if (!state || (unsigned)op >= ST_NOPS || nin > ST_MAX_IN ||
        policy(ST_DEV_CUDA, op) == POL_NONE)
        return 0;
    /* the op's device type: CUDA when any operand is there */
    st_device_type d = ST_DEV_CPU;
    bool any = false;
    for (int k = 0; k < nin; k++)
        if (in[k].t) {
            any = true;
            if (st_tensor_device(in[k].t)->type != ST_DEV_CPU) d = st_tensor_device(in[k].t)->type;
        }
    st_dtype low;
    if (!any || !st_rt_autocast_enabled(d, &low)) return 0;
    int pol = policy(d, op);
    if (pol == POL_NONE) return 0;
    st_dtype to = pol == POL_LOWER ? low : ST_FLOAT32;
    if (pol == POL_PROMOTE) {
        bool first = true;
        for (int k = 0; k < nin; k++)
            if (eligible(in[k].t, d)) {
                to = first ? in[k].t->dtype : st_promote(to, in[k].t->dtype);
                first = false;
            }
    }
    bool need = false;
    for (int k = 0; k < nin; k++)
        need |= eligible(in[k].t, d) && in[k].t->dtype != to;
    if (!need) return 0;
    st_operand cast[ST_MAX_IN];
    st_tensor *own[ST_MAX_IN] = {NULL};
    memcpy(cast, in, sizeof *in * (size_t)nin);
    st_attrs ca;
    memset(&ca, 0, sizeof ca);
    ca.dtype = to;
    int n = 0;
    for (int k = 0; k < nin && n >= 0; k++) {
        if (!eligible(in[k].t, d) || in[k].t->dtype == to) continue;
        st_operand src = {.t = in[k].t};
        if (st_rt_eager(ST_OP_CAST, &src, 1, &ca, NULL, &own[k]) != 1)
            n = -1;
        else
            cast[k].t = own[k];
    }
    /* the cast operands need no further cast: this call runs the op */
    if (n >= 0) n = st_rt_eager(op, cast, nin, attrs, NULL, out);
    for (int k = 0; k < nin; k++) st_tensor_decref(own[k]);
    return n < 0 ? -1 : n;
}
