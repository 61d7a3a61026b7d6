"""Random sampling from symtrace's counter-based generator: rand/randn/randint and their
*_like forms, manual_seed/initial_seed, normal, bernoulli, multinomial and randperm."""
import math

from .. import _C
from .._symint import dyn_inline
from .. import _generator
from .._dtype import float32, float64, int64
from ._core import _FMAX, _attrs, _bshape, _check_int, _check_tensor, _is_tensor, _op, _tname
from .elementwise import (add, eq, gt, log, logical_and, logical_not, logical_or, lt, mul, neg,
                          result_type, to_dtype, where)
from .creation import _check_sizes, _dev, _keeps_order, _rg, _scalar0, _shape_args, arange, to_device, zeros
from .float_math import isfinite
from .indexing import scatter_add
from .shape import cat, stack
from .reductions import amin, any, argmax, sum


# ---------------- random ----------------
def _rand_dtype(dtype, fn):
    dtype = dtype or float32
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn}: expected a floating point dtype, got {dtype}")
    return dtype


def rand(*size, dtype=None, device=None, generator=None, requires_grad=False):
    if generator is not None:
        return _generator.run(generator, rand, *size, dtype=dtype, device=device, requires_grad=requires_grad)
    shape = _shape_args(size, "rand")
    _check_sizes(shape, "rand")
    return _rg(_op(_C.OP_RAND, (), _attrs(floats=(0.0, 1.0), dims=shape,
                                          dtype=_rand_dtype(dtype, "rand")), None, _dev(device)),
               requires_grad)


def randn(*size, dtype=None, device=None, generator=None, requires_grad=False):
    if generator is not None:
        return _generator.run(generator, randn, *size, dtype=dtype, device=device, requires_grad=requires_grad)
    shape = _shape_args(size, "randn")
    _check_sizes(shape, "randn")
    return _rg(_op(_C.OP_RANDN, (), _attrs(floats=(0.0, 1.0), dims=shape,
                                          dtype=_rand_dtype(dtype, "randn")), None, _dev(device)),
               requires_grad)


def randint(low, high=None, size=None, *, dtype=None, device=None, generator=None):
    """randint(low=0, high, size, *, generator=None, dtype=int64)."""
    if generator is not None:
        return _generator.run(generator, randint, low, high, size, dtype=dtype, device=device)
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    shape = _shape_args(tuple(size), "randint")
    _check_sizes(shape, "randint")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _op(_C.OP_RANDINT, (), _attrs(ints=(int(low), int(high)), dims=shape, dtype=dtype or int64),
               None, _dev(device))


def _random_like(fn, opid, input, attrs, generator, requires_grad):
    """A random *_like result in input's memory order (_keeps_order): the op with input as
    its shape operand, drawn in memory order as torch's."""
    if generator is not None:
        return _generator.run(generator, _random_like, fn, opid, input, attrs, None, requires_grad)
    return _rg(_op(opid, (input,), attrs), requires_grad)


@dyn_inline
def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    _check_tensor(input, "rand_like")
    if _keeps_order(input, device):
        return _random_like(rand_like, _C.OP_RAND, input, _attrs(
            floats=(0.0, 1.0), dtype=_rand_dtype(dtype or input.dtype, "rand")), generator, requires_grad)
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device, generator=generator,
                requires_grad=requires_grad)


@dyn_inline
def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    _check_tensor(input, "randn_like")
    if _keeps_order(input, device):
        return _random_like(randn_like, _C.OP_RANDN, input, _attrs(
            floats=(0.0, 1.0), dtype=_rand_dtype(dtype or input.dtype, "randn")), generator, requires_grad)
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device, generator=generator,
                 requires_grad=requires_grad)


@dyn_inline   # as rand_like: its shape is input's symbolic one under dynamic=True
def randint_like(input, low, high=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    _check_tensor(input, "randint_like")
    if _keeps_order(input, device):
        lo, hi = (0, low) if high is None else (low, high)
        if hi <= lo:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
        return _random_like(randint_like, _C.OP_RANDINT, input, _attrs(
            ints=(int(lo), int(hi)), dtype=dtype or input.dtype), generator, requires_grad)
    return _rg(randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device,
                       generator=generator), requires_grad)


def manual_seed(seed):
    """Seeds the counter-based generator used by rand/randn/randint/dropout; returns
    symtrace.default_generator (as torch)."""
    _C.manual_seed(_generator._seed_value(seed))
    return _generator.default_generator


def initial_seed():
    return _C.initial_seed()


# ---- random, decomposed ----
def _check_std_values(std, fn):
    """torch refuses a negative std; for a tensor that is a read of its values, done in
    eager mode only (skipped while symtrace.compile traces)."""
    if _is_tensor(std):
        if std.numel() and not _C._trace_active() and amin(std).item() < 0:
            raise RuntimeError(f"{fn} expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"{fn} expects std >= 0.0, but found std {std}")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """normal(mean, std=1.0, size=None): samples of N(mean, std^2): randn * std + mean, for
    tensor means and/or stds (broadcast; the result is differentiable in both) or numbers
    with a size; as torch.normal."""
    if generator is not None:
        return _generator.run(generator, normal, mean, std, size, dtype=dtype, device=device,
                              requires_grad=requires_grad)
    if not _is_tensor(mean) and not _is_tensor(std):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, "
                            "float), but expected (float mean, float std, tuple of ints size)")
        _check_std_values(std, "normal")
        shape = _shape_args((size,) if isinstance(size, int) else tuple(size), "normal")
        _check_sizes(shape, "normal")
        r = add(mul(randn(shape, dtype=_rand_dtype(dtype, "normal"), device=device), std), mean)
        return _rg(r, requires_grad)
    if size is not None:
        raise TypeError("normal(): size can only be given with a number mean and std")
    _check_std_values(std, "normal")
    ref = mean if _is_tensor(mean) else std
    dt = result_type(mean, std)
    if not dt.is_floating_point:
        raise RuntimeError(f"normal expects floating point mean and std, got {_tname(dt)}")
    shape = _bshape(*(tuple(t.shape) for t in (mean, std) if _is_tensor(t)))
    return add(mul(randn(shape, dtype=dt, device=ref.device), std), mean)


def bernoulli(input, p=None, *, generator=None):
    """bernoulli(input, p=None) -> Tensor of input's dtype: 1 with probability input (or p,
    a number), else 0: rand < p. Probabilities are not checked to lie in [0, 1] (torch does;
    that reads the values). As torch.bernoulli."""
    if generator is not None:
        return _generator.run(generator, bernoulli, input, p)
    _check_tensor(input, "bernoulli")
    if not input.dtype.is_floating_point and p is None:   # input's values as probabilities
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{_tname(input.dtype)}'")
    u = rand(tuple(input.shape), dtype=float64 if input.dtype is float64 else float32,
             device=input.device)
    return to_dtype(lt(u, input if p is None else p), input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """multinomial(input, num_samples, replacement=False) -> int64 Tensor: category indices
    drawn with probabilities proportional to the rows of input (1-D or 2-D). Gumbel-max:
    argmax(log p + Gumbel noise) is an exact draw; with replacement, num_samples independent
    draws; without, one set of noise and num_samples successive argmaxes with the chosen
    categories masked out (the Gumbel-top-k trick: successive draws without replacement,
    as torch; zero-probability categories come last). O(num_samples * categories) work.
    The checks of the values (no negative, inf or nan entries, a positive sum) run in eager
    mode only."""
    if generator is not None:
        return _generator.run(generator, multinomial, input, num_samples, replacement)
    _check_tensor(input, "multinomial")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_tname(input.dtype)}")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    _check_int(num_samples, "multinomial", "num_samples", 2)
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    w = to_dtype(input.detach(), float64)
    if not _C._trace_active() and w.numel():
        bad, low = stack([any(logical_or(logical_not(isfinite(w)), lt(w, 0))).to(float64),
                          amin(sum(w, -1))]).tolist()
        if bad:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if low <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    pos = gt(w, 0)
    logw = where(pos, log(where(pos, w, 1.0)), _scalar0(w, -_FMAX["symtrace.float64"]))
    batch = tuple(w.shape[:-1])

    def gumbel(shape):
        return neg(log(neg(log(rand(shape, dtype=float64, device=input.device)))))
    if replacement or num_samples == 1:
        keys = add(logw.unsqueeze(-2), gumbel(batch + (num_samples, n)))
        return argmax(keys, -1)
    keys = add(logw, gumbel(batch + (n,)))
    cats = arange(n, device=input.device)
    out = []
    for _ in range(num_samples):
        i = argmax(keys, -1, keepdim=True)
        out.append(i)
        keys = where(eq(cats, i), _scalar0(keys, -math.inf), keys)
    return cat(out, -1)


_RANDPERM_DEVICE_MAX = 2048


def randperm(n, *, generator=None, dtype=int64, device=None, requires_grad=False):
    """randperm(n, *, dtype=int64, device=None): a random permutation of 0..n-1, drawn
    from symtrace's generator (reproducible after manual_seed). Up to n = 2048 it is the
    ranks of n float64 uniforms (an n x n comparison, ties broken by position, then a
    scatter: traced by symtrace.compile); above that a host shuffle (Python's random, seeded
    by one int64 drawn from the generator: a value read, so a graph break under compile)."""
    if generator is not None:
        return _generator.run(generator, randperm, n, dtype=dtype, device=device, requires_grad=requires_grad)
    _check_int(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if n <= _RANDPERM_DEVICE_MAX:
        k = rand(n, dtype=float64, device=device)
        i = arange(n, device=device)
        ki, kj = k.unsqueeze(1), k.unsqueeze(0)
        before = logical_or(lt(kj, ki), logical_and(eq(kj, ki), lt(i.unsqueeze(0), i.unsqueeze(1))))
        rank = sum(before, 1)
        perm = scatter_add(zeros(n, dtype=int64, device=device), 0, rank, i)
    else:
        import random as _random
        seed = randint(0, 2 ** 62, (1,)).item()
        vals = list(range(n))
        _random.Random(seed).shuffle(vals)
        perm = _C.tensor(vals, int64)
        if _dev(device) is not None:
            perm = to_device(perm, _dev(device))
    return _rg(to_dtype(perm, dtype), requires_grad)
