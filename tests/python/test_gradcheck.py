# Gradients of every differentiable op against central finite differences in
# float64 (symtrace.autograd.gradcheck), on small random inputs with some
# broadcasting and some non-contiguous inputs. Each case also runs through
# torch.autograd.gradcheck (the [torch-...] ids) to show that the case itself is
# sound (inputs away from kinks, distinct values for max/min, ...). Dropout with
# p > 0 and embedding's padding_idx are checked directly (finite differences do
# not apply). Also: gradcheck itself detects a wrong backward.
import importlib
import math

import numpy as np
import pytest

import symtrace as st
from conftest import rng_for

def _gradcheck_module():
    return importlib.import_module("symtrace.autograd.gradcheck")


# ---------------------------------------------------------------- inputs
class In:
    """Spec of one input: float values in [low, high] (|x| >= away when away is
    set), laid out contiguously or as a non-contiguous view; or a constant
    (int/bool) tensor from `values`."""

    def __init__(self, shape=(), low=-2.0, high=2.0, away=None, layout="contig", values=None,
                 dtype=None, grad=True, distinct=False):
        self.shape, self.low, self.high, self.away = tuple(shape), low, high, away
        self.layout, self.values, self.dtype, self.grad = layout, values, dtype, grad
        self.distinct = distinct

    def array(self, rng):
        if self.values is not None:
            return np.asarray(self.values)
        n = int(np.prod(self.shape)) if self.shape else 1
        if self.distinct:  # values at least 0.1 apart (max/min/sort-like ops)
            v = self.low + (self.high - self.low) * (rng.permutation(n) + 0.5) / n
            return v.reshape(self.shape)
        if self.away is not None:
            mag = rng.uniform(self.away, self.high, size=self.shape)
            return np.where(rng.random(self.shape) < 0.5, -mag, mag) if self.low < 0 else mag
        return rng.uniform(self.low, self.high, size=self.shape)

    def make(self, L, rng):
        a = self.array(rng)
        if self.values is not None and a.dtype.kind in "iub":  # constant index / mask
            dt = getattr(L, self.dtype or ("int64" if a.dtype.kind in "iu" else "bool"))
            return L.tensor(np.array(a, order="C"), dtype=dt)
        dt = getattr(L, self.dtype or "float64")
        if self.layout == "transposed":  # the input is the transpose of a contiguous base
            perm = tuple(range(a.ndim))[::-1]
            base = L.tensor(np.array(a.transpose(perm), order="C"), dtype=dt)
            t = base.permute(*perm)
        elif self.layout == "strided":  # every other element of the last dim
            wide = np.repeat(a, 2, axis=-1)
            base = L.tensor(np.ascontiguousarray(wide), dtype=dt)
            t = base[..., ::2]
        else:
            t = L.tensor(np.array(a, order="C"), dtype=dt)
        if self.layout != "contig":
            assert not t.is_contiguous()
        assert tuple(t.shape) == self.shape
        return t.requires_grad_() if self.grad else t


def P(*shape, **kw):
    return In(shape, **kw)


POS = dict(low=0.3, high=2.0)
AWAY = dict(low=-2.0, high=2.0, away=0.2)
T, S = "transposed", "strided"

# ---------------------------------------------------------------- cases
# (id, fn(L, F, *inputs), [In...], gradcheck kwargs)
CASES = []


def case(name, fn, ins, **kw):
    CASES.append((name, fn, ins, kw))


# elementwise unary
case("neg", lambda L, F, x: L.neg(x), [P(3, 4)])
case("neg_op", lambda L, F, x: -x, [P(3, 4, layout=T)])
case("exp", lambda L, F, x: L.exp(x), [P(3, 4)])
case("exp_noncontig", lambda L, F, x: x.exp(), [P(3, 4, layout=S)])
case("log", lambda L, F, x: L.log(x), [P(3, 4, **POS)])
case("sqrt", lambda L, F, x: L.sqrt(x), [P(3, 4, **POS)])
case("rsqrt", lambda L, F, x: L.rsqrt(x), [P(3, 4, **POS)])
case("tanh", lambda L, F, x: L.tanh(x), [P(3, 4)])
case("sigmoid", lambda L, F, x: L.sigmoid(x), [P(3, 4, layout=T)])
case("relu", lambda L, F, x: L.relu(x), [P(3, 4, **AWAY)])
case("relu_F", lambda L, F, x: F.relu(x), [P(2, 5, **AWAY)])
case("erf", lambda L, F, x: L.erf(x), [P(3, 4)])
case("abs", lambda L, F, x: L.abs(x), [P(3, 4, **AWAY)])
case("sin", lambda L, F, x: L.sin(x), [P(3, 4)])
case("cos", lambda L, F, x: L.cos(x), [P(3, 4)])
case("reciprocal", lambda L, F, x: L.reciprocal(x), [P(3, 4, low=-2, high=2, away=0.5)])
# pow
case("pow_tensor_scalar", lambda L, F, x: x ** 2.5, [P(3, 4, **POS)])
case("pow_tensor_int", lambda L, F, x: L.pow(x, 3), [P(3, 4)])
case("pow_tensor_neg", lambda L, F, x: x ** -1.5, [P(3, 4, **POS)])
case("pow_scalar_tensor", lambda L, F, x: 2.0 ** x, [P(3, 4)])
case("pow_scalar_tensor_fn", lambda L, F, x: L.pow(1.7, x), [P(3, 4)])
case("pow_tensor_tensor", lambda L, F, a, b: a ** b, [P(3, 4, **POS), P(3, 4)])
case("pow_tensor_tensor_bcast", lambda L, F, a, b: L.pow(a, b), [P(3, 1, **POS), P(4)])
# binary with broadcasting both ways
for _nm, _f in (("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
                ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b)):
    _away = dict(away=0.5, low=-2, high=2) if _nm == "div" else {}
    case(_nm, (lambda f: lambda L, F, a, b: f(a, b))(_f), [P(3, 4), P(3, 4, **_away)])
    case(_nm + "_bcast_right", (lambda f: lambda L, F, a, b: f(a, b))(_f), [P(2, 3, 4), P(4, **_away)])
    case(_nm + "_bcast_left", (lambda f: lambda L, F, a, b: f(a, b))(_f), [P(4), P(2, 3, 4, **_away)])
    case(_nm + "_bcast_both", (lambda f: lambda L, F, a, b: f(a, b))(_f), [P(3, 1), P(1, 4, **_away)])
    case(_nm + "_noncontig", (lambda f: lambda L, F, a, b: f(a, b))(_f),
         [P(3, 4, layout=T), P(3, 4, layout=S, **_away)])
case("add_scalar", lambda L, F, a: 2.5 + a, [P(3, 4)])
case("sub_rscalar", lambda L, F, a: 1.5 - a, [P(3, 4)])
case("mul_scalar", lambda L, F, a: a * -3.0, [P(3, 4)])
case("div_rscalar", lambda L, F, a: 3.0 / a, [P(3, 4, **AWAY)])
case("add_alpha", lambda L, F, a, b: L.add(a, b, alpha=2.5), [P(3, 4), P(4)])
case("sub_alpha", lambda L, F, a, b: L.sub(a, b, alpha=0.5), [P(3, 4), P(3, 1)])
case("same_input_twice", lambda L, F, a: a * a + a, [P(3, 4)])


def _pair_distinct(shape, rng=None):
    """Two arrays whose elements differ by >= 0.2 everywhere."""
    rng = rng or np.random.default_rng(7)
    a = rng.uniform(-2, 2, size=shape)
    b = a + np.where(rng.random(shape) < 0.5, -1, 1) * rng.uniform(0.2, 1.0, size=shape)
    return a, b


_ma, _mb = _pair_distinct((3, 4))
_FV = dict(dtype="float64")
case("maximum", lambda L, F, a, b: L.maximum(a, b), [In((3, 4), values=_ma, **_FV), In((3, 4), values=_mb, **_FV)])
case("minimum", lambda L, F, a, b: L.minimum(a, b), [In((3, 4), values=_ma, **_FV), In((3, 4), values=_mb, **_FV)])
case("maximum_method_noncontig", lambda L, F, a, b: a.maximum(b),
     [In((3, 4), values=_ma, layout=T, **_FV), In((3, 4), values=_mb, layout=S, **_FV)])
case("maximum_bcast", lambda L, F, a, b: L.maximum(a, b), [P(3, 4, distinct=True), P(4, low=-2.05, high=2.05,
                                                                                  distinct=True)])

_COND = np.random.default_rng(3).random((3, 4)) < 0.5
_MASK = np.random.default_rng(4).random((3, 4)) < 0.5
case("where", lambda L, F, c, a, b: L.where(c, a, b), [P(3, 4, values=_COND), P(3, 4), P(3, 4)])
case("where_bcast", lambda L, F, c, a, b: L.where(c, a, b), [P(3, 4, values=_COND), P(4), P(3, 1)])
case("where_method", lambda L, F, c, a, b: a.where(c, b), [P(3, 4, values=_COND), P(3, 4, layout=T), P(3, 4)])
case("masked_fill", lambda L, F, x, m: x.masked_fill(m, -1.5), [P(3, 4), P(3, 4, values=_MASK)])
case("masked_fill_bcast", lambda L, F, x, m: L.masked_fill(x, m, 0.0),
     [P(2, 3, 4), P(3, 4, values=_MASK)])


def _clamp_vals(shape, lo, hi, seed=5):
    """Values in [-2, 2] at least 0.1 away from lo and hi."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(-2, 2, size=shape)
    for b in (lo, hi):
        if b is not None:
            near = np.abs(v - b) < 0.1
            v = np.where(near, v + 0.25, v)
    return v


case("clamp_both", lambda L, F, x: L.clamp(x, -0.5, 0.7),
     [In((3, 4), values=_clamp_vals((3, 4), -0.5, 0.7), dtype="float64")])
case("clamp_min", lambda L, F, x: x.clamp(min=0.3),
     [In((3, 4), values=_clamp_vals((3, 4), 0.3, None), dtype="float64")])
case("clamp_max", lambda L, F, x: x.clamp(max=-0.2),
     [In((3, 4), values=_clamp_vals((3, 4), None, -0.2), dtype="float64")])
case("clamp_tensor_bounds", lambda L, F, x, lo: L.clamp(x, min=lo),
     [In((3, 4), values=_clamp_vals((3, 4), 0.0, None), dtype="float64"), P(4, low=-0.05, high=0.05)])
# casts
case("cast_identity", lambda L, F, x: x.to(L.float64), [P(3, 4)])
case("cast_double_op", lambda L, F, x: x.double() * 1.0, [P(3, 4)])
case("cast_float32_roundtrip", lambda L, F, x: x.float().double(), [P(3, 4)], eps=1e-3, atol=1e-3, rtol=1e-2)
case("cast_float32_out", lambda L, F, x: (x.float() * 2).exp(), [P(3, 4, low=-1, high=1)],
     eps=1e-3, atol=1e-2, rtol=1e-2)
# reductions
for _nm in ("sum", "mean"):
    case(_nm + "_all", (lambda n: lambda L, F, x: getattr(L, n)(x))(_nm), [P(3, 4)])
    case(_nm + "_dim0", (lambda n: lambda L, F, x: getattr(x, n)(0))(_nm), [P(3, 4)])
    case(_nm + "_dim_neg_keepdim", (lambda n: lambda L, F, x: getattr(x, n)(-1, keepdim=True))(_nm),
         [P(2, 3, 4, layout=T)])
    case(_nm + "_dims", (lambda n: lambda L, F, x: getattr(L, n)(x, (0, 2)))(_nm), [P(2, 3, 4)])
    case(_nm + "_dims_keepdim", (lambda n: lambda L, F, x: getattr(x, n)(dim=(0, 2), keepdim=True))(_nm),
         [P(2, 3, 4, layout=S)])
for _nm in ("amax", "amin"):
    case(_nm + "_all", (lambda n: lambda L, F, x: getattr(L, n)(x))(_nm), [P(3, 4, distinct=True)])
    case(_nm + "_dim1", (lambda n: lambda L, F, x: getattr(x, n)(1))(_nm), [P(3, 4, distinct=True)])
    case(_nm + "_dims_keepdim", (lambda n: lambda L, F, x: getattr(L, n)(x, (0, 2), keepdim=True))(_nm),
         [P(2, 3, 4, distinct=True, low=-4, high=4)])
case("max_dim_values", lambda L, F, x: L.max(x, 1)[0], [P(3, 4, distinct=True)])
case("min_dim_values_keepdim", lambda L, F, x: L.min(x, 0, keepdim=True).values, [P(3, 4, distinct=True)])
case("max_all", lambda L, F, x: x.max(), [P(3, 4, distinct=True)])
_PRODV = dict(low=-1.5, high=1.5, away=0.5)
case("prod_all", lambda L, F, x: L.prod(x), [P(2, 3, **_PRODV)])
case("prod_dim", lambda L, F, x: x.prod(1), [P(3, 4, **_PRODV)])
case("prod_dim_keepdim", lambda L, F, x: L.prod(x, -1, keepdim=True), [P(2, 3, 2, **_PRODV)])
# matmul
case("matmul_1d_1d", lambda L, F, a, b: L.matmul(a, b), [P(5), P(5)])
case("matmul_2d_1d", lambda L, F, a, b: a @ b, [P(3, 5), P(5)])
case("matmul_1d_2d", lambda L, F, a, b: a @ b, [P(3), P(3, 4)])
case("matmul_2d_2d", lambda L, F, a, b: a @ b, [P(3, 5), P(5, 4)])
case("matmul_2d_noncontig", lambda L, F, a, b: L.matmul(a, b), [P(3, 5, layout=T), P(5, 4, layout=S)])
case("matmul_batched", lambda L, F, a, b: a @ b, [P(2, 3, 4), P(2, 4, 2)])
case("matmul_batched_bcast", lambda L, F, a, b: a @ b, [P(2, 1, 3, 4), P(3, 4, 2)])
case("matmul_batched_2d", lambda L, F, a, b: a @ b, [P(2, 3, 4), P(4, 2)])
case("matmul_1d_batched", lambda L, F, a, b: a @ b, [P(3), P(2, 3, 2)])
case("linear_bias", lambda L, F, x, w, b: F.linear(x, w, b), [P(3, 4), P(5, 4), P(5)])
case("linear_nobias", lambda L, F, x, w: F.linear(x, w), [P(2, 3, 4), P(5, 4)])
case("linear_noncontig", lambda L, F, x, w, b: F.linear(x, w, b), [P(3, 4, layout=S), P(5, 4, layout=T), P(5)])
# softmax family
for _d in (0, 1, 2, -1):
    case(f"softmax_dim{_d}", (lambda d: lambda L, F, x: F.softmax(x, d))(_d), [P(2, 3, 4)])
    case(f"log_softmax_dim{_d}", (lambda d: lambda L, F, x: F.log_softmax(x, d))(_d), [P(2, 3, 4)])
case("softmax_method_noncontig", lambda L, F, x: x.softmax(-1), [P(3, 4, layout=T)])
case("log_softmax_method", lambda L, F, x: x.log_softmax(1), [P(3, 4, layout=S)])
case("layer_norm_1d", lambda L, F, x, w, b: F.layer_norm(x, (5,), w, b), [P(3, 5), P(5), P(5)])
case("layer_norm_2d", lambda L, F, x, w, b: F.layer_norm(x, (3, 4), w, b), [P(2, 3, 4), P(3, 4), P(3, 4)])
case("layer_norm_noaffine", lambda L, F, x: F.layer_norm(x, [4]), [P(2, 3, 4)])
case("layer_norm_weight_only", lambda L, F, x, w: F.layer_norm(x, (4,), w), [P(3, 4, layout=T), P(4)])
case("gelu", lambda L, F, x: F.gelu(x), [P(3, 4, low=-3, high=3)])
case("gelu_tanh", lambda L, F, x: F.gelu(x, approximate="tanh"), [P(3, 4, low=-3, high=3)])
_TGT = np.array([1, 0, 4, 2])
_TGT_IGN = np.array([1, -100, 4, 2])
_TGT_IGN3 = np.array([1, 3, 3, 0])
for _red in ("mean", "sum", "none"):
    case(f"cross_entropy_{_red}", (lambda r: lambda L, F, x, t: F.cross_entropy(x, t, reduction=r))(_red),
         [P(4, 5), P(4, values=_TGT)])
    case(f"cross_entropy_{_red}_ignore", (lambda r: lambda L, F, x, t: F.cross_entropy(x, t, reduction=r))(_red),
         [P(4, 5), P(4, values=_TGT_IGN)])
    case(f"cross_entropy_{_red}_ignore3",
         (lambda r: lambda L, F, x, t: F.cross_entropy(x, t, ignore_index=3, reduction=r))(_red),
         [P(4, 5, layout=T), P(4, values=_TGT_IGN3)])
case("cross_entropy_1d", lambda L, F, x, t: F.cross_entropy(x, t), [P(5), In((), values=np.array(3))])
case("cross_entropy_spatial", lambda L, F, x, t: F.cross_entropy(x, t, reduction="none"),
     [P(2, 3, 2), P(2, 2, values=np.array([[0, 2], [1, 1]]))])
_IDX = np.array([[0, 3, 3], [1, 0, 2]])
case("embedding", lambda L, F, i, w: F.embedding(i, w), [P(2, 3, values=_IDX), P(5, 4)])
case("embedding_noncontig_weight", lambda L, F, i, w: F.embedding(i, w), [P(2, 3, values=_IDX), P(5, 4, layout=S)])
case("index_select_dim0", lambda L, F, x, i: L.index_select(x, 0, i), [P(4, 3), P(5, values=np.array([3, 0, 3, 1, 3]))])
case("index_select_dim1", lambda L, F, x, i: x.index_select(1, i), [P(2, 4, layout=T), P(3, values=np.array([2, 2, 0]))])
case("gather_dim0", lambda L, F, x, i: L.gather(x, 0, i), [P(3, 4), P(2, 4, values=np.array([[0, 2, 2, 1], [0, 0, 1, 2]]))])
case("gather_dim1", lambda L, F, x, i: x.gather(1, i), [P(3, 4), P(3, 2, values=np.array([[3, 3], [0, 1], [2, 0]]))])
# movement / views
case("reshape", lambda L, F, x: x.reshape(4, 3) * 1.5, [P(3, 4)])
case("reshape_noncontig", lambda L, F, x: L.reshape(x, (2, -1)), [P(3, 4, layout=T)])
case("view", lambda L, F, x: x.view(2, 6), [P(3, 4)])
case("view_minus1", lambda L, F, x: x.view(-1), [P(2, 3, 2)])
case("permute", lambda L, F, x: x.permute(2, 0, 1), [P(2, 3, 4)])
case("permute_fn", lambda L, F, x: L.permute(x, (1, 0, 2)).exp(), [P(2, 3, 4)])
case("transpose", lambda L, F, x: x.transpose(0, 2), [P(2, 3, 4)])
case("T", lambda L, F, x: x.T * 2, [P(3, 4)])
case("expand", lambda L, F, x: x.expand(2, 3, 4), [P(3, 1)])
case("expand_minus1", lambda L, F, x: x.expand(3, -1) * x.expand(3, -1), [P(1, 4)])
case("squeeze", lambda L, F, x: x.squeeze(), [P(3, 1, 4, 1)])
case("squeeze_dim", lambda L, F, x: L.squeeze(x, 1), [P(3, 1, 4)])
case("unsqueeze", lambda L, F, x: x.unsqueeze(1), [P(3, 4)])
case("unsqueeze_neg", lambda L, F, x: L.unsqueeze(x, -1) * 2, [P(3, 4)])
case("flatten", lambda L, F, x: x.flatten(), [P(2, 3, 2)])
case("flatten_range", lambda L, F, x: L.flatten(x, 1, 2), [P(2, 3, 2, 2)])
case("slice_2d", lambda L, F, x: x[1:3, ::2], [P(4, 5)])
case("slice_noncontig", lambda L, F, x: x[1:3, ::2] * 3, [P(4, 5, layout=T)])
case("index_int", lambda L, F, x: x[0], [P(3, 4)])
case("index_int_col", lambda L, F, x: x[:, 1], [P(3, 4)])
case("index_neg_ellipsis", lambda L, F, x: x[..., -1], [P(2, 3, 4)])
case("select", lambda L, F, x: x.select(1, 2), [P(3, 4)])
case("slice_then_reduce", lambda L, F, x: x[:, 1:].sum(0) + x[0, :2], [P(3, 3)])
case("cat_dim0", lambda L, F, a, b: L.cat([a, b]), [P(2, 3), P(1, 3)])
case("cat_dim1_three", lambda L, F, a, b, c: L.cat((a, b, c), dim=1), [P(2, 3), P(2, 1), P(2, 2, layout=T)])
case("cat_neg_dim", lambda L, F, a, b: L.cat([a, b], -1), [P(2, 2, 3), P(2, 2, 1)])
case("stack", lambda L, F, a, b: L.stack([a, b]), [P(2, 3), P(2, 3)])
case("stack_dim_last", lambda L, F, a, b: L.stack((a, b), dim=-1), [P(2, 3), P(2, 3, layout=T)])
case("split_size", lambda L, F, x: L.split(x, 2, dim=1), [P(3, 5)])
case("split_sections", lambda L, F, x: x.split([1, 3], 0), [P(4, 2)])
case("split_partial_use", lambda L, F, x: x.split(2)[1] * 2, [P(5, 2)])
case("chunk", lambda L, F, x: L.chunk(x, 3, 1), [P(2, 7)])
case("chunk_method", lambda L, F, x: x.chunk(2), [P(4, 3)])
case("clone", lambda L, F, x: x.clone(), [P(3, 4)])
case("clone_noncontig", lambda L, F, x: x.clone() * 2, [P(3, 4, layout=T)])
case("contiguous", lambda L, F, x: x.contiguous(), [P(3, 4, layout=T)])
case("contiguous_strided", lambda L, F, x: x.contiguous().exp(), [P(3, 4, layout=S)])
case("dropout_p0", lambda L, F, x: F.dropout(x, 0.0), [P(3, 4)])
case("dropout_eval", lambda L, F, x: F.dropout(x, 0.5, training=False) * 2, [P(3, 4)])
# composites
case("mlp", lambda L, F, x, w1, b1, w2: (F.gelu(F.linear(x, w1, b1)) @ w2).softmax(-1),
     [P(2, 3), P(4, 3), P(4), P(4, 2)])
case("attention", lambda L, F, q, k, v: (q @ k.transpose(-1, -2) / math.sqrt(4)).softmax(-1) @ v,
     [P(2, 3, 4), P(2, 3, 4), P(2, 3, 4)])

_IDS = [c[0] for c in CASES]
assert len(set(_IDS)) == len(_IDS), [n for n in _IDS if _IDS.count(n) > 1]


def _inputs(L, ins, name):
    rng = rng_for("gradcheck", name)
    return tuple(i.make(L, rng) for i in ins)


@pytest.mark.parametrize("name,fn,ins,kw", CASES, ids=_IDS)
def test_gradcheck(name, fn, ins, kw):
    gc = _gradcheck_module()
    import symtrace.nn.functional as F
    inputs = _inputs(st, ins, name)
    assert gc.gradcheck(lambda *a: fn(st, F, *a), inputs, **kw)


@pytest.mark.parametrize("name,fn,ins,kw", CASES, ids=["torch-" + n for n in _IDS])
def test_case_is_sound_in_torch(torch, name, fn, ins, kw):
    inputs = _inputs(torch, ins, name)
    kw = {k: v for k, v in kw.items() if k in ("eps", "atol", "rtol")}
    # check_undefined_grad is torch-internal (and trips on 1-D cross_entropy in torch 2.13)
    assert torch.autograd.gradcheck(lambda *a: fn(torch, torch.nn.functional, *a), inputs,
                                    check_undefined_grad=False, **kw)


def test_embedding_padding_idx(torch):
    """padding_idx: the padding row gets no gradient (finite differences would
    disagree there by design, so the gradients are compared with torch's)."""
    import symtrace.nn.functional as F
    idx = np.array([[0, 2, 1], [2, 2, 3]])
    w = np.random.default_rng(0).standard_normal((4, 3))
    g = np.random.default_rng(1).standard_normal((2, 3, 3))
    grads = []
    for L, FF in ((st, F), (torch, torch.nn.functional)):
        wt = L.tensor(w, dtype=L.float64).requires_grad_()
        out = FF.embedding(L.tensor(idx), wt, padding_idx=2)
        out.backward(L.tensor(g, dtype=L.float64))
        grads.append(wt.grad.detach().numpy().copy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)
    assert np.all(grads[0][2] == 0)
    gc = _gradcheck_module()
    # rows other than the padding row still pass finite differences when the padding index is absent
    wt = st.tensor(w, dtype=st.float64).requires_grad_()
    assert gc.gradcheck(lambda ww: F.embedding(st.tensor([[0, 1], [3, 1]]), ww, padding_idx=2), (wt,))


@pytest.mark.parametrize("p", [0.25, 0.5, 0.8])
def test_dropout_grad_is_mask_over_keep(p):
    """dropout with p > 0: the gradient is grad_output * mask / (1 - p), the mask read off the output."""
    import symtrace.nn.functional as F
    st.manual_seed(1234)
    rng = np.random.default_rng(0)
    xv = rng.uniform(0.5, 2.0, size=(6, 7))  # nonzero, so a zero output means dropped
    gv = rng.standard_normal((6, 7))
    x = st.tensor(xv, dtype=st.float64).requires_grad_()
    y = F.dropout(x, p)
    yv = y.detach().numpy()
    mask = yv != 0
    assert 0 < mask.sum() < mask.size
    np.testing.assert_allclose(yv, np.where(mask, xv / (1 - p), 0.0), rtol=1e-12)
    y.backward(st.tensor(gv, dtype=st.float64))
    np.testing.assert_allclose(x.grad.numpy(), gv * mask / (1 - p), rtol=1e-12, atol=0)


def test_dropout_p0_gradient_is_identity():
    import symtrace.nn.functional as F
    x = st.tensor(np.arange(6.0).reshape(2, 3), dtype=st.float64).requires_grad_()
    (F.dropout(x, 0.0) * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 3.0))


# ---------------------------------------------------------------- gradcheck itself
def _bad_exp_function(scale):
    class BadExp(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y * scale

    return BadExp


def test_gradcheck_accepts_correct_function():
    gc = _gradcheck_module()
    x = st.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=st.float64).requires_grad_()
    assert gc.gradcheck(_bad_exp_function(1.0).apply, (x,)) is True
    assert gc.gradcheck(_bad_exp_function(1.0).apply, x, fast_mode=True) is True


def test_gradcheck_detects_wrong_backward():
    gc = _gradcheck_module()
    assert issubclass(gc.GradcheckError, RuntimeError)
    x = st.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=st.float64).requires_grad_()
    y = st.tensor(np.ones((2, 3)), dtype=st.float64)
    f = lambda a, b: _bad_exp_function(1.01).apply(a) * b  # noqa: E731
    with pytest.raises(gc.GradcheckError) as ei:
        gc.gradcheck(f, (x, y))
    msg = str(ei.value)
    assert "input 0" in msg and "(0, 0)" in msg, msg
    # both values are named: numerical exp(-1) and analytical 1.01 * exp(-1)
    assert "%.6f" % math.exp(-1) in msg and "%.6f" % (1.01 * math.exp(-1)) in msg, msg
    assert gc.gradcheck(f, (x, y), raise_exception=False) is False
    with pytest.raises(RuntimeError):
        gc.gradcheck(f, (x, y), fast_mode=True)
    # a looser tolerance accepts the 1% error
    assert gc.gradcheck(f, (x, y), rtol=0.05, atol=1e-3)


def test_gradcheck_detects_wrong_broadcast_reduction():
    """A backward that forgets to scale by grad_output is caught (one-hot grad_outputs)."""
    gc = _gradcheck_module()

    class NoChain(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return st.ones(g.shape, dtype=g.dtype) * 2

    x = st.tensor(np.ones((2, 2)), dtype=st.float64).requires_grad_()
    assert gc.gradcheck(NoChain.apply, (x,), raise_exception=False) is False


def test_gradcheck_needs_an_input_that_requires_grad():
    gc = _gradcheck_module()
    x = st.tensor(np.ones(3), dtype=st.float64)
    with pytest.raises((ValueError, RuntimeError)):
        gc.gradcheck(lambda a: a * 2, (x,))


def test_gradcheck_restores_inputs():
    gc = _gradcheck_module()
    v = np.random.default_rng(0).standard_normal((3, 4))
    x = st.tensor(v, dtype=st.float64).requires_grad_()
    gc.gradcheck(lambda a: (a * a).sum(1), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), v)
    assert x.grad is None  # gradcheck does not accumulate into .grad


@pytest.mark.parametrize("exponent", [1 / 3, 0.1, -2.5, 2.0])
def test_pow_python_float_exponent_gradient_in_float64(torch, exponent):
    # b - 1 of a wrapped scalar exponent is computed in the base's precision
    # (two wrapped scalars alone compute in float32: a 4e-9 error on float64)
    x = np.array([0.7, 1.5, 2.0, 3.25])
    s = st.tensor(x, dtype=st.float64, requires_grad=True)
    s.pow(exponent).sum().backward()
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    t.pow(exponent).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-14)
