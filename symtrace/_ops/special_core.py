"""What the special-function files (special_erf, special_gamma, special_bessel,
special_poly, numeric) share: _with_grad, which computes a value without history and,
under autograd, wraps it in an autograd.Function whose backward is torch's derivative (or
raises torch's "derivative ... is not implemented"); _nondiff for the functions torch gives
no gradient at all; the float64 work tensors and the result dtype of torch's unary and
binary float functions (integers and bools give float32), and torch's refusal of float16 by
its Cephes kernels; out=; and the evaluation of polynomials (Cephes' polevl) and Chebyshev
series (Cephes' chbevl)."""
from .. import _C
from .._dtype import float32, float64
from ._core import _bshape, _is_tensor, _tname
from .elementwise import add, mul, result_type, sub, to_dtype
from .creation import full
from .dtypes import _can_cast
from .float_math import _back

_FUNCS = {}


def _function(name, value, derivs):
    """The autograd.Function class of name (made once): forward = value(*args), backward =
    grad * derivs[i](*args, result) for each tensor argument i that needs a gradient; a str
    derivs[i] raises torch's NotImplementedError naming it."""
    cls = _FUNCS.get(name)
    if cls is not None:
        return cls
    from ..autograd.function import Function

    def forward(ctx, *args):
        r = value(*args)
        ctx.tensor_pos = tuple(i for i, a in enumerate(args) if _is_tensor(a))
        ctx.consts = args
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_pos], r)
        return r

    def backward(ctx, grad):
        saved = ctx.saved_tensors
        args = list(ctx.consts)
        for k, i in enumerate(ctx.tensor_pos):
            args[i] = saved[k]
        r = saved[-1]
        if _C._is_grad_enabled() and any(_is_tensor(a) and a.requires_grad for a in args):
            # create_graph: the saved result has no history, so recompute it with its own
            # (this Function again), for the derivative of the derivative
            r = cls.apply(*args)
        out = []
        for i, d in enumerate(derivs):
            if i >= len(ctx.needs_input_grad) or not ctx.needs_input_grad[i]:
                out.append(None)
            elif isinstance(d, str):
                raise NotImplementedError(f"the derivative for '{d}' is not implemented.")
            else:
                out.append(mul(grad, d(*args, r)))
        return out[0] if len(out) == 1 else tuple(out)

    cls = type(name.title().replace("_", ""), (Function,),
               {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    _FUNCS[name] = cls
    return cls


def _with_grad(name, value, derivs, *args):
    """value(*args) (tensors of one shape, and constants); where grad mode is on and a tensor
    argument requires grad, through the autograd.Function of name (see _function): derivs
    holds, per argument, deriv(*args, result) -> d result / d arg, a str for torch's
    "the derivative for '<str>' is not implemented.", or None for a constant."""
    if _C._is_grad_enabled() and any(_is_tensor(a) and a.requires_grad for a in args):
        return _function(name, value, derivs).apply(*args)
    return value(*args)


def _nondiff(value, *args):
    """value(*args) on detached tensors: the result has no history, as torch's functions
    without a derivative formula (the Bessel and polynomial functions of torch.special)."""
    return value(*[a.detach() if _is_tensor(a) else a for a in args])


# ---- dtypes ----
def _float_dtype(dt):
    """The result dtype of a float function of an input of dtype dt (integers and bools:
    float32, as torch's default dtype)."""
    return dt if dt.is_floating_point else float32


def _w64(x):
    """x in float64, the precision the formulas here run in (a float32 result is rounded
    from it, so it is within an ulp or so of the exact value)."""
    return x if x.dtype is float64 else to_dtype(x, float64)


def _unary64(core):
    """value(x) = core(x in float64) rounded to x's float result dtype."""
    def value(x):
        return _back(core(_w64(x)), _float_dtype(x.dtype))
    return value


def _pair(fn, input, other, name="other", numbers=False):
    """input and other promoted to their common dtype (a float one: integers and bools give
    float32) and broadcast to one shape; numbers=True also takes a Python number for either
    (as torch's Scalar overloads). Returns (a, b, result dtype)."""
    for pos, (nm, v) in enumerate((("input", input), (name, other)), 1):
        if not _is_tensor(v) and not (numbers and isinstance(v, (int, float)) and not isinstance(v, bool)):
            raise TypeError(f"{fn}(): argument '{nm}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError(f"{fn}(): expected at least one Tensor argument")
    dt = _float_dtype(result_type(input, other))
    ref = input if _is_tensor(input) else other

    def conv(v):
        return to_dtype(v, dt) if _is_tensor(v) else full((), v, dtype=dt, device=ref.device)
    a, b = conv(input), conv(other)
    shape = _bshape(tuple(a.shape), tuple(b.shape))
    if tuple(a.shape) != shape:
        a = a.expand(shape)
    if tuple(b.shape) != shape:
        b = b.expand(shape)
    return a, b, dt


# ---- out= ----
def _out(r, out, fn):
    """r written into out (as torch's out= variants: same shape here, a dtype r can be cast
    to, no autograd), or r itself when out is None."""
    if out is None:
        return r
    if not _is_tensor(out):
        raise TypeError(f"{fn}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _C._is_grad_enabled() and (r.requires_grad or out.requires_grad):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if not _can_cast(r.dtype, out.dtype):
        raise RuntimeError(f"result type {_tname(r.dtype)} can't be cast to the desired output "
                           f"type {_tname(out.dtype)}")
    if tuple(out.shape) != tuple(r.shape):
        raise RuntimeError(f"{fn}(): out= tensor of shape {list(out.shape)} does not match the "
                           f"result's shape {list(r.shape)} (symtrace cannot resize it)")
    out.copy_(r)
    return out


# ---- polynomials and Chebyshev series (coefficients highest degree first) ----
def _polevl(x, coefs):
    """coefs[0] x^n + ... + coefs[n] (Horner; Cephes' polevl)."""
    r = add(mul(x, coefs[0]), coefs[1])
    for c in coefs[2:]:
        r = add(mul(r, x), c)
    return r


def _chbevl(x, coefs):
    """sum' coefs[i] T_i(x / 2), the zeroth coefficient last (Cephes' chbevl)."""
    b0, b1, b2 = coefs[0], 0.0, 0.0
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = add(sub(mul(x, b1), b2), c)
    return mul(sub(b0, b2), 0.5)


def _no_half(input, kernel):
    """torch's kernels ported from Cephes take float32 and float64 (and integers, as float32),
    not float16 or bfloat16: its NotImplementedError."""
    if input.dtype.is_floating_point and input.dtype not in (float32, float64):
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for '{_tname(input.dtype)}'")
