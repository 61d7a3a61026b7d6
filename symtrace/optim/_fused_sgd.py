"""The fused SGD update: one elementwise kernel per parameter.

The update of torch's single-tensor SGD (torch/optim/sgd.py,
_single_tensor_sgd) is built once per variant (dtype, device, maximize,
weight decay zero or not, momentum zero or not, first step, Nesterov) as a
StatementIR graph over flat tensors and run through the graph path as
symtrace/optim/_fused.py runs Adam's (CompiledGraph.run(out=, consts=): the
results are written into the parameter and its momentum buffer, the
per-step scalars are kernel constants).

torch's CPU add(x, y, alpha=a) is one fused multiply-add, x + a * y rounded
once (a rounded to the tensor's dtype first). A float32 parameter is updated
in float64: a * y is exact there (24 + 24 bits), so x + a * y rounded to
float32 is torch's fma (a second rounding differs only when the float64 sum
lands on a float32 tie, which random data essentially never does), and
every result torch stores in float32 is rounded to float32 where torch
rounds it. float16 / bfloat16 are loaded, updated in float32 and rounded
once on store (as torch's fused SGD); float64 is updated in float64 with
the multiply and the add rounded apart.
"""
from .. import _C
from ._fused import _Part, _device_type, _f32, supported

__all__ = ["supported", "sgd_update"]

_CACHE = {}
# parameter dtype -> (the dtype the update is computed in, the dtype its
# intermediate results are rounded to (None: not rounded))
_COMPUTE = {_C.float32: (_C.float64, _C.float32), _C.float64: (_C.float64, None),
            _C.float16: (_C.float32, None), _C.bfloat16: (_C.float32, None)}


def _build(dtype, device_type, maximize, has_wd, has_mom, first, nesterov):
    """(p, g[, buf]) -> (p[, buf]) in _single_tensor_sgd's order; buf is an
    input only after the first step (it is the gradient's clone at the first)."""
    ct, rt = _COMPUTE[dtype]
    g = _C.Graph()

    def op(o, *ins):
        return g.op(o, ins)[0]

    def cast(v, frm, to):
        return v if frm == to else g.op(_C.OP_CAST, (v,), (None, None, None, 0, to))[0]

    def rnd(v):           # a result torch stores in the parameter's dtype
        return v if rt is None else cast(cast(v, ct, rt), rt, ct)

    def axpy(y, a, x):    # torch's y.add(x, alpha=a): fma(x, a, y)
        return rnd(op(_C.OP_ADD, y, op(_C.OP_MUL, x, a)))

    names = ["nlr"] + (["wd"] if has_wd else []) + \
        (["mom"] if has_mom else []) + (["omd"] if has_mom and not first else [])
    c = {n: g.const(0.0, ct) for n in names}
    n_in = 3 if has_mom and not first else 2
    # a placeholder size; runs re-infer the sizes (see _fused.py)
    ins = [cast(g.input((16,), dtype), dtype, ct) for _ in range(n_in)]
    p, gr = ins[0], ins[1]
    if maximize:
        gr = op(_C.OP_NEG, gr)
    if has_wd:
        gr = axpy(gr, c["wd"], p)                                   # grad.add(p, alpha=wd)
    outs_extra = []
    clone = False   # the first buffer is the gradient itself: cloned by the caller
    if has_mom:
        if first:
            buf = gr                                                # clone(grad)
            clone = rt is None and not (maximize or has_wd)
        else:
            buf = rnd(op(_C.OP_MUL, ins[2], c["mom"]))              # buf.mul_(momentum)
            buf = axpy(buf, c["omd"], gr)                           # .add_(grad, alpha=1 - dampening)
        gr = axpy(gr, c["mom"], buf) if nesterov else buf           # grad.add(buf, alpha=momentum)
        outs_extra = [] if clone else [buf]
    p = axpy(p, c["nlr"], gr)                                       # p.add_(grad, alpha=-lr)
    g.output(*(cast(x, ct, dtype) for x in [p] + outs_extra))
    part = _Part(g, c, device_type)
    part.clone = clone
    return part


def _get(dtype, device_type, *flags):
    key = (dtype, device_type) + tuple(bool(f) for f in flags)
    u = _CACHE.get(key)
    if u is None:
        u = _CACHE[key] = _build(dtype, device_type, *key[2:])
    return u


def sgd_update(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """Updates p (and buf, the momentum buffer, when momentum != 0) in place
    by one fused kernel; buf is None at the first step and the new buffer
    is returned (supported() checked by the caller on p, grad[, buf])."""
    first = momentum != 0 and buf is None
    part = _get(p.dtype, _device_type(p._device_str), maximize, weight_decay != 0,
                momentum != 0, first, nesterov and momentum != 0)
    r32 = _COMPUTE[p.dtype][1] is not None      # the scalars as torch rounds them
    vals = {"nlr": -lr, "wd": weight_decay, "mom": momentum, "omd": 1 - dampening}
    consts = {cid: (_f32(vals[n]) if r32 else vals[n]) for n, cid in part.consts.items()}
    fp, fg = p.view(-1), grad.view(-1)
    if momentum == 0:
        part.compiled.run(fp, fg, out=(fp,), consts=consts)
        return None
    if first and part.clone:
        buf = grad.clone()
        part.compiled.run(fp, fg, out=(fp,), consts=consts)
        return buf
    if first:
        buf = grad.new_empty(grad.shape)
        fb = buf.view(-1)
        part.compiled.run(fp, fg, out=(fp, fb), consts=consts)
        return buf
    fb = buf.view(-1)
    part.compiled.run(fp, fg, fb, out=(fp, fb), consts=consts)
    return buf
