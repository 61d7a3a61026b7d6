"""The fused Adam / AdamW update: one elementwise kernel per parameter.

The update of torch's single-tensor Adam (torch/optim/adam.py,
_single_tensor_adam), in its arithmetic order, is built once per variant
(dtype, device, Adam/AdamW, weight decay zero or not, amsgrad, maximize,
lerp form) as a StatementIR graph over flat (1-D) tensors and compiled
through the one path from graph to kernels (fusion -> backend -> kernel
cache). Kernels are not specialized on sizes, so one compiled graph serves
every parameter: a run with another size re-infers the graph's sizes.

The per-step scalars are graph constants (kernel parameters) given per run
(CompiledGraph.run(consts=...)): as 0-d tensor inputs they would take 7 of a
kernel's 8 buffers (fusion/st_kernel.h ST_K_MAX_BUFS) beside p, g, m, v and
the three results, and the graph would not fuse. The results are written
into the parameter and the state tensors themselves
(CompiledGraph.run(out=...)): every point of p, m, v is read by the one
kernel at the point it writes (the llvm backend vectorizes such a loop: its
elementwise loops are annotated parallel). amsgrad needs 5 inputs and 4
results, more than a kernel's 8 buffers: two graphs, the moments
(m, v, max_v) and then the parameter.

float16 / bfloat16 tensors are updated in float32 (loaded, computed and
rounded once on store, as torch's fused Adam does), not rounded after
every op as the op-by-op path is.
"""

from .. import _C
from .._ops._core import f32 as _f32

__all__ = ["supported", "adam_update", "Scalars"]

_CACHE = {}
# the dtype each parameter dtype is updated in
_COMPUTE = {_C.float32: _C.float32, _C.float64: _C.float64,
            _C.float16: _C.float32, _C.bfloat16: _C.float32}




def _backend(device_type):
    if device_type == "cuda":
        return "nvrtc"
    return "llvm" if _C._fe_backend_available("llvm") else "interp"


def _device_type(dev_str):
    return "cuda" if dev_str.startswith("cuda") else dev_str


_AVAILABLE = {}   # device string -> a backend for it is in this build


def supported(tensors):
    """True when the fused update can run on these tensors (p, grad, exp_avg,
    exp_avg_sq[, max_exp_avg_sq]): dense, one floating dtype, one device,
    contiguous."""
    p = tensors[0]
    dt, dev = p.dtype, p._device_str
    if dt not in _COMPUTE:
        return False
    for t in tensors:
        if t.dtype != dt or t._device_str != dev or not t.is_contiguous():
            return False
    ok = _AVAILABLE.get(dev)
    if ok is None:
        ok = _AVAILABLE[dev] = bool(_C._fe_backend_available(_backend(_device_type(dev))))
    return ok


class _Part:
    """One compiled graph of the update: `consts` maps the names of the
    per-step scalars it reads to its constant ids."""

    def __init__(self, g, consts, device_type):
        self.graph = g
        self.consts = consts
        self.compiled = g.compile(backend=_backend(device_type))


def _build(part, dtype, device_type, decoupled, has_wd, amsgrad, maximize, small_w):
    """The update graph over flat tensors, in _single_tensor_adam's order.
    part "all": (p, g, m, v) -> (p, m, v). Under amsgrad, whose five inputs
    and four results exceed a kernel's 8 buffers, two graphs:
    "moments" ([p,] g, m, v, mx) -> (m, v, mx) (p only for the coupled
    weight decay) and "param" (p, m, mx) -> p."""
    ct = _COMPUTE[dtype]
    g = _C.Graph()

    def op(o, *ins):
        return g.op(o, ins)[0]

    def cast(v, to):
        return v if ct == dtype else g.op(_C.OP_CAST, (v,), (None, None, None, 0, to))[0]

    names = {"all": ["w", "b2", "omb2", "bc2s", "eps", "nss"],
             "moments": ["w", "b2", "omb2"], "param": ["bc2s", "eps", "nss"]}[part]
    if has_wd and (part == "all" or (part == "moments") != decoupled):
        names.insert(0, "decay" if decoupled else "wd")
    c = {n: g.const(0.0, ct) for n in names}

    def inputs(n):
        # a placeholder size (not 1: fusion unifies equal sizes > 1, so the
        # operands are known to be of one shape); runs re-infer the sizes
        return [cast(g.input((16,), dtype), ct) for _ in range(n)]

    def param_update(p, m, s):
        if has_wd and decoupled:
            p = op(_C.OP_MUL, p, c["decay"])                          # p.mul_(1 - lr * wd)
        den = op(_C.OP_ADD, op(_C.OP_DIV, op(_C.OP_SQRT, s), c["bc2s"]), c["eps"])
        # p.addcdiv_(m, den, value=-step_size)
        return op(_C.OP_ADD, p, op(_C.OP_DIV, op(_C.OP_MUL, c["nss"], m), den))

    if part == "param":
        p, m, s = inputs(3)
        outs = [param_update(p, m, s)]
    else:
        coupled = has_wd and not decoupled
        if part == "all" or coupled:
            p, gr, m, v = inputs(4)
        else:
            p = None
            gr, m, v = inputs(3)
        mx = inputs(1)[0] if part == "moments" else None
        if maximize:
            gr = op(_C.OP_NEG, gr)
        if coupled:
            gr = op(_C.OP_ADD, gr, op(_C.OP_MUL, c["wd"], p))        # grad.add(p, alpha=wd)
        d = op(_C.OP_SUB, gr, m)                                      # m.lerp_(g, 1 - b1)
        if small_w:
            m = op(_C.OP_ADD, m, op(_C.OP_MUL, c["w"], d))
        else:
            m = op(_C.OP_SUB, gr, op(_C.OP_MUL, d, c["w"]))
        v = op(_C.OP_MUL, v, c["b2"])                                 # v.mul_(b2)
        v = op(_C.OP_ADD, v, op(_C.OP_MUL, op(_C.OP_MUL, c["omb2"], gr), gr))  # .addcmul_(g, g, 1 - b2)
        if part == "all":
            outs = [param_update(p, m, v), m, v]
        else:
            outs = [m, v, op(_C.OP_MAXIMUM, mx, v)]                   # torch.maximum(mx, v, out=mx)
    g.output(*(cast(x, dtype) for x in outs))
    return _Part(g, c, device_type)


class _Update:
    """The compiled update of one variant: one graph (one kernel), or two
    under amsgrad."""

    def __init__(self, dtype, device_type, decoupled, has_wd, amsgrad, maximize, small_w):
        args = (dtype, device_type, decoupled, has_wd, amsgrad, maximize, small_w)
        self.amsgrad = amsgrad
        self.coupled = has_wd and not decoupled
        self.parts = [_build(n, *args) for n in (("moments", "param") if amsgrad else ("all",))]
        self.f64 = _COMPUTE[dtype].itemsize == 8   # computes in float64

    def run(self, tensors, consts):
        flat = [t.view(-1) for t in tensors]
        if not self.amsgrad:
            p, gr, m, v = flat
            self.parts[0].compiled.run(p, gr, m, v, out=(p, m, v), consts=consts[0])
            return
        p, gr, m, v, mx = flat
        ins = (p, gr, m, v, mx) if self.coupled else (gr, m, v, mx)
        self.parts[0].compiled.run(*ins, out=(m, v, mx), consts=consts[0])
        self.parts[1].compiled.run(p, m, mx, out=(p,), consts=consts[1])


def get_update(dtype, device_type, decoupled, has_wd, amsgrad, maximize, small_w):
    key = (dtype, device_type, bool(decoupled) and bool(has_wd), bool(has_wd), bool(amsgrad),
           bool(maximize), bool(small_w))
    u = _CACHE.get(key)
    if u is None:
        u = _CACHE[key] = _Update(dtype, device_type, *key[2:])
    return u


class Scalars:
    """The per-step constants of one parameter group at one step value,
    computed as torch's single-tensor Adam computes them (Python floats),
    keyed by the ids of an update graph's constants."""

    def __init__(self, lr, beta1, beta2, eps, weight_decay, decoupled, step):
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        self.small_w = abs(1 - beta1) < 0.5
        w = 1 - beta1
        # torch's lerp: self + w * (end - self) for |w| < 0.5, else
        # end - (end - self) * (1 - w), 1 - w in the compute dtype
        self.values = {
            "w": w, "wl32": 1 - _f32(w), "wl64": 1 - w,
            "b2": beta2, "omb2": 1 - beta2,
            "bc2s": bias_correction2 ** 0.5, "eps": eps, "nss": -step_size,
            "decay": 1 - lr * weight_decay, "wd": weight_decay,
        }
        self.has_wd = weight_decay != 0
        self.decoupled = decoupled
        self._by_graph = {}

    def for_update(self, u):
        d = self._by_graph.get(id(u))
        if d is None:
            vals = dict(self.values)
            if not self.small_w:
                vals["w"] = vals["wl64"] if u.f64 else vals["wl32"]
            d = self._by_graph[id(u)] = [{cid: vals[n] for n, cid in part.consts.items()}
                                         for part in u.parts]
        return d


def adam_update(tensors, scalars, amsgrad, maximize):
    """tensors: (p, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq]), updated in
    place by one fused kernel, two under amsgrad (checked with supported())."""
    p = tensors[0]
    u = get_update(p.dtype, _device_type(p._device_str), scalars.decoupled, scalars.has_wd,
                   amsgrad, maximize, scalars.small_w)
    u.run(tensors, scalars.for_update(u))
