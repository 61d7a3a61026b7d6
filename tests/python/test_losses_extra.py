# The losses, activations and small layers of torch.nn that symtrace composes from its
# ops: hardshrink/softshrink/prelu (and Hardshrink, Softshrink, PReLU), the margin,
# multi-label, Gaussian/Poisson NLL and triplet losses (functions and modules), bilinear
# (and Bilinear), pdist, gumbel_softmax, embedding_bag (and EmbeddingBag). Values and
# gradients (of inputs, weights and parameters) against torch for each reduction and
# several shapes, torch's errors, and a compiled training step against eager.
import copy
import math
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F
from conftest import assert_close, rng_for

pytestmark = [pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated:UserWarning")]

REDUCTIONS = ["none", "mean", "sum"]
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


class Const:
    """An input passed to both libraries without requires_grad."""

    def __init__(self, a):
        self.a = a


def _pair(a, torch, grad):
    if isinstance(a, Const):
        return st.tensor(a.a), torch.from_numpy(np.array(a.a))
    if isinstance(a, np.ndarray):
        g = grad and a.dtype.kind == "f"
        return st.tensor(a, requires_grad=g), torch.tensor(a, requires_grad=g)
    return a, a


def both(torch, st_fn, th_fn, arrays, grad=True, tol=None):
    """st_fn / th_fn on the arrays (float arrays become leaves requiring grad unless
    wrapped in Const): the same output (shape, dtype, values), then the same gradients of
    (out * w).sum() for every float input, w random. Returns the symtrace output."""
    pairs = [_pair(a, torch, grad) for a in arrays]
    got = st_fn(*[p[0] for p in pairs])
    exp = th_fn(*[p[1] for p in pairs])
    name = str(exp.dtype).split(".")[-1]
    t = tol or TOL.get(name, TOL["float32"])
    assert_close(got.detach(), exp.detach(), **t)
    if not grad or not exp.requires_grad:
        return got
    w = rng_for("w", tuple(exp.shape)).uniform(0.5, 1.5, size=tuple(exp.shape))
    (got * st.tensor(w.astype(np.float64 if name == "float64" else np.float32))).sum().backward()
    (exp * torch.from_numpy(w.astype(np.float64 if name == "float64" else np.float32))).sum().backward()
    n = 0
    for s, th in pairs:
        if isinstance(th, torch.Tensor) and th.requires_grad:
            assert th.grad is not None and s.grad is not None
            assert_close(s.grad, th.grad, **t)
            n += 1
    assert n == sum(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in arrays)
    return got


def raises_as_torch(torch, st_call, th_call, match=None):
    """Both raise the same exception type (symtrace's message matching torch's words)."""
    with pytest.raises(Exception) as te:
        th_call()
    with pytest.raises(Exception) as se:
        st_call()
    assert type(se.value) is type(te.value), (se.value, te.value)
    if match is not None:
        assert match in str(te.value) and match in str(se.value), (str(se.value), str(te.value))
    return str(se.value)


# ---------------------------------------------------------------- activations
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,lambd", [("hardshrink", 0.5), ("hardshrink", 1.25), ("softshrink", 0.5),
                                        ("softshrink", 0.0), ("softshrink", 2.0)])
def test_shrink(torch, name, lambd, dtype):
    rng = rng_for(name, lambd, dtype)
    for shape in [(9,), (3, 9), (2, 3, 9)]:
        a = rng.uniform(-3, 3, shape).astype(dtype)
        a[..., :7] = [-lambd, lambd, 0.0, -2 * lambd - 0.5, 2 * lambd + 0.5, lambd / 2, -lambd / 2]   # the kinks
        both(torch, lambda x: getattr(F, name)(x, lambd), lambda x: getattr(torch.nn.functional, name)(x, lambd),
             [a])
    m, tm = getattr(nn, name.capitalize())(lambd), getattr(torch.nn, name.capitalize())(lambd)
    assert repr(m) == repr(tm)
    both(torch, m, tm, [rng.uniform(-3, 3, (4, 5)).astype(dtype)])


def test_shrink_defaults_and_errors(torch):
    a = np.linspace(-2, 2, 17)
    both(torch, F.hardshrink, torch.nn.functional.hardshrink, [a])
    both(torch, F.softshrink, torch.nn.functional.softshrink, [a])
    assert repr(nn.Hardshrink()) == "Hardshrink(0.5)" and repr(nn.Softshrink()) == "Softshrink(0.5)"
    tf = torch.nn.functional
    x, xi = np.ones((2, 3), np.float32), np.ones((2, 3), np.int64)
    m = raises_as_torch(torch, lambda: F.softshrink(st.tensor(x), -1.0), lambda: tf.softshrink(torch.tensor(x), -1.0))
    assert m == "lambda must be in range [0, 3.40282e+38] for input dtype Float, but found -1"
    raises_as_torch(torch, lambda: F.softshrink(st.tensor(x.astype(np.float64)), -0.5),
                    lambda: tf.softshrink(torch.tensor(x.astype(np.float64)), -0.5), "1.79769e+308")
    raises_as_torch(torch, lambda: F.hardshrink(st.tensor(xi)), lambda: tf.hardshrink(torch.tensor(xi)),
                    "\"hardshrink_cpu\" not implemented for 'Long'")
    raises_as_torch(torch, lambda: F.softshrink(st.tensor(xi)), lambda: tf.softshrink(torch.tensor(xi)),
                    "not implemented for 'Long'")
    # a negative lambd is accepted by hardshrink: the identity
    both(torch, lambda v: F.hardshrink(v, -1.0), lambda v: tf.hardshrink(v, -1.0), [a])


PRELU_CASES = [((2, 3, 4), (3,)), ((4, 3), (3,)), ((2, 3, 2, 2), (3,)), ((2, 3, 4), (1,)), ((5,), (1,)),
               ((5,), ()), ((), (1,)), ((), ())]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xshape,wshape", PRELU_CASES)
def test_prelu(torch, xshape, wshape, dtype):
    rng = rng_for("prelu", xshape, wshape, dtype)
    x = rng.uniform(-2, 2, xshape).astype(dtype)
    if x.ndim:
        x.reshape(-1)[0] = 0.0      # the kink
    w = rng.uniform(-0.5, 0.8, wshape).astype(dtype)
    both(torch, F.prelu, torch.nn.functional.prelu, [x, w])


def test_prelu_module(torch):
    for args in [(), (3,), (3, 0.1)]:
        m, tm = nn.PReLU(*args), torch.nn.PReLU(*args)
        assert repr(m) == repr(tm)
        assert list(m.state_dict()) == list(tm.state_dict()) == ["weight"]
        assert tuple(m.weight.shape) == tuple(tm.weight.shape)
        np.testing.assert_array_equal(m.weight.detach().numpy(), tm.weight.detach().numpy())
        x = rng_for("prelumod", args).uniform(-2, 2, (2, 3, 4)).astype(np.float32)
        xs, xt = st.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ys, yt = m(xs), tm(xt)
        assert_close(ys.detach(), yt.detach())
        (ys * ys).sum().backward()
        (yt * yt).sum().backward()
        assert_close(xs.grad, xt.grad)
        assert_close(m.weight.grad, tm.weight.grad, rtol=1e-5, atol=1e-5)
    m = nn.PReLU(2, dtype=st.float64)
    assert m.weight.dtype is st.float64 and m.num_parameters == 2 and m.init == 0.25


def test_prelu_errors(torch):
    tf = torch.nn.functional
    cases = [((4, 5), np.float32, (4,), np.float32, "Mismatch of parameter numbers and input channel size. Found "
                                                     "parameter numbers = 4 and channel size = 5."),
             ((5,), np.float32, (5,), np.float32, "channel size = 1"),
             ((), np.float32, (4,), np.float32, "Not allow zero-dim input tensor."),
             ((4, 5), np.float32, (5, 1), np.float32, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                                                        "ndim = 2"),
             ((4, 5), np.float32, (1,), np.float64, "prelu: Type promoting not supported. Got Float and Double"),
             ((4, 5), np.int64, (1,), np.int64, "\"prelu_cpu\" not implemented for 'Long'")]
    for xs, xd, ws, wd, msg in cases:
        x, w = np.ones(xs, xd), np.ones(ws, wd)
        raises_as_torch(torch, lambda: F.prelu(st.tensor(x), st.tensor(w)),
                        lambda: tf.prelu(torch.tensor(x), torch.tensor(w)), msg)


# ---------------------------------------------------------------- losses
def _sign(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def _ml_target(rng, n, c):
    """multilabel_margin_loss targets: classes (duplicates allowed) up to a -1, then anything in [-1, C)."""
    t = rng.integers(-1, c, (n, c))
    for i in range(n):
        k = rng.integers(0, c + 1)
        t[i, :k] = rng.integers(0, c, k)
        if k < c:
            t[i, k] = -1
    return t


def _loss_cases(rng):
    """(name, function name, kwargs, arrays) for each loss; floats take gradients unless Const."""
    x45, y45, s45 = rng.standard_normal((4, 5)), rng.standard_normal((4, 5)), _sign(rng, (4, 5))
    cases = [
        ("margin_ranking", "margin_ranking_loss", {}, [rng.standard_normal(6), rng.standard_normal(6), _sign(rng, 6)]),
        ("margin_ranking_m", "margin_ranking_loss", dict(margin=0.4), [x45, y45, s45]),
        ("margin_ranking_bcast", "margin_ranking_loss", dict(margin=0.2),
         [rng.standard_normal((4, 1)), rng.standard_normal((1, 3)), _sign(rng, (4, 3))]),
        ("margin_ranking_0d", "margin_ranking_loss", dict(margin=0.5),
         [np.array(0.3), np.array(-0.1), np.array(1.0)]),
        ("hinge", "hinge_embedding_loss", {}, [x45, Const(s45)]),
        ("hinge_m_bcast", "hinge_embedding_loss", dict(margin=0.3),
         [rng.standard_normal((3, 5)), Const(_sign(rng, 5))]),
        ("hinge_other_targets", "hinge_embedding_loss", dict(margin=0.7),
         [rng.standard_normal(8), Const(np.array([1.0, -1.0, 0.0, 2.0, 1.0, -1.0, 0.5, -1.0]))]),
        ("soft_margin", "soft_margin_loss", {}, [x45 * 3, Const(s45)]),
        ("soft_margin_bcast", "soft_margin_loss", {}, [rng.standard_normal((2, 3, 5)), Const(_sign(rng, (3, 5)))]),
        ("multilabel_soft_margin", "multilabel_soft_margin_loss", {},
         [x45, (rng.random((4, 5)) < 0.5).astype(np.float64)]),
        ("multilabel_soft_margin_w", "multilabel_soft_margin_loss", {},
         [x45, rng.random((4, 5)), rng.uniform(0.5, 2, 5)]),
        ("multilabel_soft_margin_3d", "multilabel_soft_margin_loss", {},
         [rng.standard_normal((2, 3, 5)), Const((rng.random((2, 3, 5)) < 0.5) * 1.0), rng.uniform(0.5, 2, 5)]),
        ("multilabel_soft_margin_1d", "multilabel_soft_margin_loss", {}, [rng.standard_normal(5), rng.random(5)]),
        ("multilabel_margin", "multilabel_margin_loss", {}, [rng.standard_normal((6, 5)), _ml_target(rng, 6, 5)]),
        ("multilabel_margin_1d", "multilabel_margin_loss", {}, [rng.standard_normal(5), np.array([3, 3, 0, -1, 4])]),
        ("multilabel_margin_0d", "multilabel_margin_loss", {}, [np.array(0.7), np.array(0)]),
        ("multi_margin", "multi_margin_loss", {}, [rng.standard_normal((6, 5)), rng.integers(0, 5, 6)]),
        ("multi_margin_p2_w", "multi_margin_loss", dict(p=2, margin=0.6, weight=Const(rng.uniform(0.5, 2, 5))),
         [rng.standard_normal((6, 5)), rng.integers(0, 5, 6)]),
        ("multi_margin_1d", "multi_margin_loss", dict(margin=1.5), [rng.standard_normal(5), np.array([2])]),
        ("multi_margin_1d_0d_target", "multi_margin_loss", {}, [rng.standard_normal(5), np.array(4)]),
        ("gaussian", "gaussian_nll_loss", {}, [x45, y45, rng.uniform(0.1, 2, (4, 5))]),
        ("gaussian_full_eps", "gaussian_nll_loss", dict(full=True, eps=1e-2),
         [x45, y45, np.concatenate([rng.uniform(0.1, 2, (4, 3)), np.full((4, 2), 1e-3)], 1)]),
        ("gaussian_var_row", "gaussian_nll_loss", {}, [x45, y45, rng.uniform(0.1, 2, 4)]),
        ("gaussian_var_col1", "gaussian_nll_loss", dict(full=True), [x45, y45, rng.uniform(0.1, 2, (4, 1))]),
        ("gaussian_var_3d", "gaussian_nll_loss", {},
         [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4)), rng.uniform(0.1, 2, (2, 1, 4))]),
        ("gaussian_target_bcast", "gaussian_nll_loss", {}, [x45, rng.standard_normal(5), rng.uniform(0.1, 2, (4, 5))]),
        ("poisson", "poisson_nll_loss", {}, [x45, rng.uniform(0, 4, (4, 5))]),
        ("poisson_full", "poisson_nll_loss", dict(full=True),
         [x45, np.concatenate([rng.uniform(1.5, 5, (4, 3)), np.array([[0.5, 1.0]] * 4)], 1)]),
        ("poisson_nolog", "poisson_nll_loss", dict(log_input=False, eps=1e-3),
         [np.abs(x45) + 0.1, rng.uniform(0, 4, (4, 5))]),
        ("poisson_nolog_full", "poisson_nll_loss", dict(log_input=False, full=True),
         [np.abs(x45) + 0.1, rng.uniform(0.2, 4, (4, 5))]),
        ("poisson_bcast", "poisson_nll_loss", {}, [rng.standard_normal(5), Const(rng.uniform(0, 4, (3, 5)))]),
    ]
    a, p, n = rng.standard_normal((4, 6)), rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    for k, kw in enumerate([{}, dict(margin=0.5, p=1), dict(p=3, swap=True), dict(swap=True, eps=1e-3, margin=2.0),
                            dict(p=1.5)]):
        cases.append((f"triplet_{k}", "triplet_margin_loss", kw, [a, p, n]))
    cases += [
        ("triplet_1d", "triplet_margin_loss", {}, [a[0], p[0], n[0]]),
        ("triplet_3d", "triplet_margin_loss", dict(swap=True),
         [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))]),
        ("triplet_bcast", "triplet_margin_loss", {}, [a, p[:1], n]),
        ("triplet_dist", "triplet_margin_with_distance_loss", {}, [a, p, n]),
        ("triplet_dist_swap", "triplet_margin_with_distance_loss", dict(swap=True, margin=0.3), [a, p, n]),
    ]
    return cases


_CASES = _loss_cases(rng_for("losscases"))


def _kw(kw, lib, f32=False):
    """kw with each Const a tensor of lib (float32 when f32)."""
    def conv(v):
        a = v.a.astype(np.float32) if f32 and v.a.dtype.kind == "f" else v.a
        return st.tensor(a) if lib is st else lib.from_numpy(np.array(a))
    return {k: conv(v) if isinstance(v, Const) else v for k, v in kw.items()}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_loss_float64(torch, case, reduction):
    _, fname, kw, arrays = case
    both(torch, lambda *a: getattr(F, fname)(*a, reduction=reduction, **_kw(kw, st)),
         lambda *a: getattr(torch.nn.functional, fname)(*a, reduction=reduction, **_kw(kw, torch)), arrays)


def _f32(a):
    if isinstance(a, Const):
        return Const(_f32(a.a))
    return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


@pytest.mark.parametrize("case", _CASES[::3], ids=[c[0] for c in _CASES[::3]])
def test_loss_float32(torch, case):
    _, fname, kw, arrays = case
    for r in REDUCTIONS:
        both(torch, lambda *a: getattr(F, fname)(*a, reduction=r, **_kw(kw, st, True)),
             lambda *a: getattr(torch.nn.functional, fname)(*a, reduction=r, **_kw(kw, torch, True)),
             [_f32(a) for a in arrays],
             tol=dict(rtol=1e-4, atol=1e-5))


def test_triplet_custom_distance(torch):
    rng = rng_for("tripletdist")
    a, p, n = (rng.standard_normal((5, 4)) for _ in range(3))

    def dist(F_):
        return lambda u, v: 1.0 - F_.cosine_similarity(u, v)
    for kw in [dict(), dict(swap=True, margin=0.1)]:
        for r in REDUCTIONS:
            both(torch, lambda *x: F.triplet_margin_with_distance_loss(*x, distance_function=dist(F), reduction=r,
                                                                       **kw),
                 lambda *x: torch.nn.functional.triplet_margin_with_distance_loss(
                     *x, distance_function=dist(torch.nn.functional), reduction=r, **kw), [a, p, n])
    sm = nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(p=1.0), margin=0.5, swap=True)
    tm = torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.PairwiseDistance(p=1.0), margin=0.5,
                                                swap=True)
    both(torch, sm, tm, [a, p, n])
    assert repr(nn.TripletMarginWithDistanceLoss()) == repr(torch.nn.TripletMarginWithDistanceLoss())


LEGACY = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
          "multilabel_margin_loss", "multi_margin_loss", "poisson_nll_loss", "triplet_margin_loss"]


@pytest.mark.parametrize("fname", LEGACY)
def test_legacy_size_average_reduce(torch, fname):
    """The deprecated size_average/reduce pick the reduction (over the reduction argument)
    and warn in torch's words."""
    rng = rng_for("legacy", fname)
    arrays = {"margin_ranking_loss": [rng.standard_normal(5), rng.standard_normal(5), _sign(rng, 5)],
              "hinge_embedding_loss": [rng.standard_normal((3, 4)), Const(_sign(rng, (3, 4)))],
              "soft_margin_loss": [rng.standard_normal((3, 4)), Const(_sign(rng, (3, 4)))],
              "multilabel_soft_margin_loss": [rng.standard_normal((3, 4)), rng.random((3, 4))],
              "multilabel_margin_loss": [rng.standard_normal((3, 4)), _ml_target(rng, 3, 4)],
              "multi_margin_loss": [rng.standard_normal((3, 4)), rng.integers(0, 4, 3)],
              "poisson_nll_loss": [rng.standard_normal((3, 4)), rng.uniform(0, 3, (3, 4))],
              "triplet_margin_loss": [rng.standard_normal((3, 4)) for _ in range(3)]}[fname]
    for kw, expect in [(dict(size_average=False), "sum"), (dict(reduce=False), "none"),
                       (dict(size_average=True, reduce=True), "mean"),
                       (dict(size_average=False, reduction="none"), "sum")]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            both(torch, lambda *a: getattr(F, fname)(*a, **kw),
                 lambda *a: getattr(torch.nn.functional, fname)(*a, **kw), arrays)
        msgs = [str(x.message) for x in w if "size_average" in str(x.message)]
        assert len(msgs) == 2 and msgs[0] == msgs[1], msgs     # symtrace's warning, then torch's
        assert msgs[0] == (f"size_average and reduce args will be deprecated, please use reduction='{expect}' "
                           "instead.")


def test_loss_errors(torch):
    tf = torch.nn.functional
    rng = rng_for("losserrors")
    T, S = torch.tensor, st.tensor
    x = rng.standard_normal((4, 5))

    def chk(fname, arrays, match, **kw):
        raises_as_torch(torch, lambda: getattr(F, fname)(*[S(a) for a in arrays], **kw),
                        lambda: getattr(tf, fname)(*[T(a) for a in arrays], **kw), match)
    chk("margin_ranking_loss", [x[0], x[0], np.ones((1, 5))], "All input tensors should have same dimension")
    chk("margin_ranking_loss", [x[0], x[0, :3], np.ones(5)], "must match the size of tensor b")
    chk("margin_ranking_loss", [x[0], x[0], np.ones(5)], "foo is not a valid value for reduction", reduction="foo")
    chk("hinge_embedding_loss", [x, np.ones(3)], "must match the size of tensor b")
    chk("soft_margin_loss", [x[0], np.ones((4, 5))], "output with shape [5] doesn't match the broadcast shape [4, 5]")
    chk("soft_margin_loss", [np.ones(3, np.int64), np.ones(3, np.int64)],
        "result type Float can't be cast to the desired output type Long")
    xs, ts = S(x, requires_grad=True), S(np.ones((4, 5)), requires_grad=True)
    raises_as_torch(torch, lambda: F.soft_margin_loss(xs, ts),
                    lambda: tf.soft_margin_loss(T(x, requires_grad=True), T(np.ones((4, 5)), requires_grad=True)),
                    "not differentiable with respect to argument 'target'")
    chk("multilabel_soft_margin_loss", [np.array(0.5), np.array(1.0)], "Dimension specified as -1")
    chk("multilabel_soft_margin_loss", [x, np.ones((4, 5))], "foo is not valid", reduction="foo")
    chk("multilabel_soft_margin_loss", [x, np.ones((4, 5)), np.ones(4)], "must match the size of tensor b")
    # multilabel_margin_loss
    t = _ml_target(rng, 4, 5)
    chk("multilabel_margin_loss", [x, t[:, :3]], "inconsistent target size: [4, 3] for input of size: [4, 5]")
    chk("multilabel_margin_loss", [x[0], t[:1]], "inconsistent target size: [1, 5] for input of size: [5]")
    chk("multilabel_margin_loss", [x.reshape(2, 2, 5), t.reshape(2, 2, 5)],
        "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 2, 5]")
    chk("multilabel_margin_loss", [np.ones((4, 0)), np.ones((4, 0), np.int64)], "but got: [4, 0]")
    chk("multilabel_margin_loss", [x, np.where(t == 0, 5, t)], "argument #2 'target' is out of range")
    chk("multilabel_margin_loss", [x, np.full((4, 5), -2)], "argument #2 'target' is out of range")
    chk("multilabel_margin_loss", [x, t.astype(np.int32)], "expected scalar type Long but found Int")
    chk("multilabel_margin_loss", [x.astype(np.int64), t],
        "\"multilabel_margin_loss_forward_out_frame\" not implemented for 'Long'")
    # multi_margin_loss
    tm = rng.integers(0, 5, 4)
    chk("multi_margin_loss", [x, tm], "only p == 1 and p == 2 supported", p=3)
    chk("multi_margin_loss", [x, tm[:3]], "Expected target size [4], but got [3]. Input has shape [4, 5].")
    chk("multi_margin_loss", [x[0], tm[:2]], "Expected target size [1], but got [2]. Input has shape [5].")
    chk("multi_margin_loss", [x, tm + 5], "target out of range")
    chk("multi_margin_loss", [x, tm - 5], "target out of range")
    chk("multi_margin_loss", [x, tm.astype(np.float64)], "expected scalar type Long but found Double")
    chk("multi_margin_loss", [x.astype(np.float16), tm], "not implemented for 'Half'")
    raises_as_torch(torch, lambda: F.multi_margin_loss(S(x), S(tm), weight=S(np.ones((1, 5)))),
                    lambda: tf.multi_margin_loss(T(x), T(tm), weight=T(np.ones((1, 5)))),
                    "weight must be one-dimensional")
    raises_as_torch(torch, lambda: F.multi_margin_loss(S(x), S(tm), weight=S(np.ones(4))),
                    lambda: tf.multi_margin_loss(T(x), T(tm), weight=T(np.ones(4))),
                    "inconsistent weight size, expected 5 but got [4]")
    raises_as_torch(torch, lambda: F.multi_margin_loss(S(x), S(tm), weight=S(np.ones(5, np.float32))),
                    lambda: tf.multi_margin_loss(T(x), T(tm), weight=T(np.ones(5, np.float32))),
                    "expected scalar type Double but found Float")
    raises_as_torch(torch, lambda: F.multi_margin_loss(S(x), S(tm), weight=S(np.ones(5), requires_grad=True)),
                    lambda: tf.multi_margin_loss(T(x), T(tm), weight=T(np.ones(5), requires_grad=True)),
                    "not differentiable with respect to argument 'weight'")
    # gaussian_nll_loss
    v = rng.uniform(0.1, 1, (4, 5))
    for bad in [np.ones(5), np.ones((1, 1)), np.ones(()), np.ones((4, 5, 1)), np.ones((2, 5))]:
        chk("gaussian_nll_loss", [x, x, bad], "var is of incorrect size")
    chk("gaussian_nll_loss", [x, x, -v], "var has negative entry/entries")
    raises_as_torch(torch, lambda: F.gaussian_nll_loss(S(x), S(x), -0.5),
                    lambda: tf.gaussian_nll_loss(T(x), T(x), -0.5),
                    "var has negative entry/entries")
    chk("gaussian_nll_loss", [x, x, v], "foo is not valid", reduction="foo")
    chk("gaussian_nll_loss", [x, x[:, :3], v], "must match the size of tensor b")
    # poisson_nll_loss
    chk("poisson_nll_loss", [x, v], "elementwise_mean is not a valid value for reduction", reduction="elementwise_mean")
    chk("poisson_nll_loss", [x, v[:, :2]], "must match the size of tensor b")
    # triplets
    chk("triplet_margin_loss", [x, x[0], x], "anchor 2D, positive 1D, and negative 2D inputs")
    chk("triplet_margin_loss", [x, x, x], "margin must be greater than 0, got 0", margin=0)
    chk("triplet_margin_with_distance_loss", [x, x, x[0]], "anchor 2D, positive 2D, and negative 1D inputs")
    chk("triplet_margin_with_distance_loss", [x, x, x], "margin must be greater than 0, got -1", margin=-1)
    chk("triplet_margin_with_distance_loss", [x, x, x], "x is not a valid value for reduction", reduction="x")


def test_loss_empty_and_edge_shapes(torch):
    """Empty batches ('none' as torch; 'sum' of nothing is 0 and 'mean' NaN, where torch's
    kernels leave the output uninitialised: its 'sum' returned 0.495 once, 2e98 another
    time), unbatched inputs."""
    e = np.zeros((0, 5))
    for fname, t in [("multilabel_margin_loss", np.zeros((0, 5), np.int64)),
                     ("multi_margin_loss", np.zeros(0, np.int64))]:
        both(torch, lambda a, b: getattr(F, fname)(a, b, reduction="none"),
             lambda a, b: getattr(torch.nn.functional, fname)(a, b, reduction="none"), [e, t], grad=False)
        total = getattr(F, fname)(st.tensor(e), st.tensor(t), reduction="sum")
        assert total.shape == () and total.dtype is st.float64 and total.item() == 0.0
        assert math.isnan(getattr(F, fname)(st.tensor(e), st.tensor(t)).item())
    both(torch, lambda a, b: F.multi_margin_loss(a, b, reduction="none"),
         lambda a, b: torch.nn.functional.multi_margin_loss(a, b, reduction="none"),
         [np.array(0.5), np.array(0)])
    both(torch, lambda a, b: F.multi_margin_loss(a, b, reduction="none"),
         lambda a, b: torch.nn.functional.multi_margin_loss(a, b, reduction="none"),
         [np.random.default_rng(1).standard_normal((1, 4)), np.array(2)])


LOSS_MODULES = [
    ("MarginRankingLoss", dict(margin=0.3), 3), ("HingeEmbeddingLoss", dict(margin=0.5, reduction="sum"), 2),
    ("SoftMarginLoss", dict(reduction="none"), 2), ("MultiLabelSoftMarginLoss", {}, 2),
    ("MultiLabelMarginLoss", {}, 2), ("MultiMarginLoss", dict(p=2, margin=0.5), 2),
    ("GaussianNLLLoss", dict(full=True, eps=1e-3), 3), ("PoissonNLLLoss", dict(log_input=False, full=True), 2),
    ("TripletMarginLoss", dict(margin=0.7, p=1.0, swap=True), 3), ("TripletMarginWithDistanceLoss", {}, 3),
    ("MarginRankingLoss", dict(size_average=False), 3), ("PoissonNLLLoss", dict(reduce=False), 2),
]


@pytest.mark.parametrize("name,kw,nargs", LOSS_MODULES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LOSS_MODULES)])
def test_loss_modules(torch, name, kw, nargs):
    rng = rng_for("lossmodule", name, str(kw))
    x, y = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    arrays = {"MarginRankingLoss": [x[0], y[0], _sign(rng, 5)], "HingeEmbeddingLoss": [x, Const(_sign(rng, (4, 5)))],
              "SoftMarginLoss": [x, Const(_sign(rng, (4, 5)))], "MultiLabelSoftMarginLoss": [x, rng.random((4, 5))],
              "MultiLabelMarginLoss": [x, _ml_target(rng, 4, 5)], "MultiMarginLoss": [x, rng.integers(0, 5, 4)],
              "GaussianNLLLoss": [x, y, rng.uniform(0.1, 1, (4, 1))],
              "PoissonNLLLoss": [np.abs(x) + 0.1, rng.uniform(0, 4, (4, 5))],
              "TripletMarginLoss": [x, y, rng.standard_normal((4, 5))],
              "TripletMarginWithDistanceLoss": [x, y, rng.standard_normal((4, 5))]}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(torch.nn, name)(**kw)
    sm = getattr(nn, name)(**kw)
    assert sm.reduction == tm.reduction
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert repr(sm) == repr(tm)
    both(torch, sm, tm, arrays)


def test_weighted_loss_modules(torch):
    rng = rng_for("weightedmod")
    x, w = rng.standard_normal((4, 5)), rng.uniform(0.5, 2, 5)
    t = rng.integers(0, 5, 4)
    sm, tm = nn.MultiMarginLoss(weight=st.tensor(w)), torch.nn.MultiMarginLoss(weight=torch.tensor(w))
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["weight"]
    both(torch, lambda a: sm(a, st.tensor(t)), lambda a: tm(a, torch.tensor(t)), [x])
    sm = nn.MultiLabelSoftMarginLoss(weight=st.tensor(w), reduction="sum")
    tm = torch.nn.MultiLabelSoftMarginLoss(weight=torch.tensor(w), reduction="sum")
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["weight"]
    both(torch, sm, tm, [x, rng.random((4, 5))])
    for cls, kw, msg in [("MultiMarginLoss", dict(p=3), "only p == 1 and p == 2 supported"),
                         ("MultiMarginLoss", dict(weight=np.ones((2, 5))),
                          "expected weight to be None or 1D tensor, got 2D"),
                         ("TripletMarginLoss", dict(margin=0.0),
                          "TripletMarginLoss: expected margin to be greater than 0"),
                         ("TripletMarginWithDistanceLoss", dict(margin=-1.0), "expected margin to be greater than 0")]:
        raises_as_torch(torch, lambda: getattr(nn, cls)(**{k: st.tensor(v) if isinstance(v, np.ndarray) else v
                                                           for k, v in kw.items()}),
                        lambda: getattr(torch.nn, cls)(**{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                                          for k, v in kw.items()}), msg)
    with pytest.raises(TypeError):
        nn.GaussianNLLLoss(True)   # keyword-only, as torch


# ---------------------------------------------------------------- bilinear
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("s1,s2,bias", [((4, 5), (4, 6), True), ((5,), (6,), True), ((2, 3, 5), (2, 3, 6), False),
                                        ((0, 5), (0, 6), True)])
def test_bilinear(torch, s1, s2, bias, dtype):
    rng = rng_for("bilinear", s1, bias, dtype)
    arrays = [rng.standard_normal(s1).astype(dtype), rng.standard_normal(s2).astype(dtype),
              rng.standard_normal((3, 5, 6)).astype(dtype)]
    if bias:
        arrays.append(rng.standard_normal(3).astype(dtype))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else None
    both(torch, F.bilinear, torch.nn.functional.bilinear, arrays, grad=s1[0] != 0, tol=tol)


def test_bilinear_module(torch):
    st.manual_seed(0)
    m, tm = nn.Bilinear(20, 6, 30), torch.nn.Bilinear(20, 6, 30)
    assert repr(m) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    bound = 1 / math.sqrt(20)
    for p in (m.weight, m.bias):    # U(-1/sqrt(in1), 1/sqrt(in1))
        a = p.detach().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.8 * bound
    a = m.weight.detach().numpy()
    assert abs(a.std() - bound / math.sqrt(3)) < 0.1 * bound and abs(a.mean()) < 0.05 * bound
    assert nn.Bilinear(2, 3, 4, bias=False).bias is None
    with pytest.raises(ValueError, match=r"in1_features must be > 0, but got \(in1_features=0\)"):
        nn.Bilinear(0, 3, 4)
    m.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = rng_for("bilmod")
    x1, x2 = rng.standard_normal((7, 20)).astype(np.float32), rng.standard_normal((7, 6)).astype(np.float32)
    both(torch, m, tm, [x1, x2], tol=dict(rtol=1e-4, atol=1e-5))
    assert_close(m.weight.grad, tm.weight.grad, rtol=1e-4, atol=1e-5)
    assert_close(m.bias.grad, tm.bias.grad, rtol=1e-4, atol=1e-5)
    m64 = nn.Bilinear(2, 3, 4, dtype=st.float64)
    assert m64.weight.dtype is st.float64


def test_bilinear_errors(torch):
    w, b = np.ones((3, 5, 6)), np.ones(3)
    cases = [((4, 5), (6,), w, b, "bilinear(): input dimensions do not match: got 2 and 1"),
             ((4, 5), (3, 6), w, b, "bilinear(): input batch dimensions do not match at dim 0: got 4 and 3"),
             ((4, 4), (4, 6), w, b, "bilinear(): input1 size does not match weight size: got 4 but expected 5"),
             ((4, 5), (4, 7), w, b, "bilinear(): input2 size does not match weight size: got 7 but expected 6"),
             ((4, 5), (4, 6), w, np.ones(4), "bilinear(): bias size does not match weight size: got 4 but expected 3"),
             ((4, 5), (4, 6), np.ones((5, 6)), None, "input1 size does not match weight size: got 5 but expected 6"),
             ((), (), w, b, "Dimension specified as -1 but tensor has no dimensions")]
    for s1, s2, ww, bb, msg in cases:
        a1, a2 = np.ones(s1), np.ones(s2)
        raises_as_torch(torch, lambda: F.bilinear(st.tensor(a1), st.tensor(a2), st.tensor(ww),
                                                  None if bb is None else st.tensor(bb)),
                        lambda: torch.nn.functional.bilinear(torch.tensor(a1), torch.tensor(a2), torch.tensor(ww),
                                                             None if bb is None else torch.tensor(bb)), msg)
    raises_as_torch(torch, lambda: F.bilinear(st.ones(4, 5, dtype=st.float64), st.ones(4, 6), st.ones(3, 5, 6)),
                    lambda: torch.nn.functional.bilinear(torch.ones(4, 5, dtype=torch.float64), torch.ones(4, 6),
                                                         torch.ones(3, 5, 6)),
                    "All tensors must have the same dtype, got input1: double, input2: float, weight: float")


# ---------------------------------------------------------------- pdist
@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, 1.5, math.inf])
def test_pdist(torch, p):
    rng = rng_for("pdist", p)
    for shape in [(6, 4), (2, 3), (1, 3), (0, 3), (4, 0)]:
        a = rng.standard_normal(shape)
        if shape[0] == 6:
            a[4] = a[1]          # a zero distance
            a[5, 0] = a[2, 0]    # a zero component
        both(torch, lambda x: F.pdist(x, p), lambda x: torch.nn.functional.pdist(x, p), [a],
             grad=shape[0] > 1 and shape[1] > 0)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    both(torch, lambda x: F.pdist(x, p), lambda x: torch.nn.functional.pdist(x, p), [a],
         tol=dict(rtol=1e-4, atol=1e-5))


def test_pdist_errors(torch):
    tf = torch.nn.functional
    for a, p, msg in [(np.ones((2, 3, 4)), 2, "pdist only supports 2D tensors, got: 3D"),
                      (np.ones((3, 4), np.int64), 2, "pdist only supports floating-point dtypes"),
                      (np.ones((3, 4)), -1.0, "pdist only supports non-negative p values"),
                      (np.ones((3, 4), np.float16), 2, "\"pdist\" not implemented for 'Half'")]:
        raises_as_torch(torch, lambda: F.pdist(st.tensor(a), p), lambda: tf.pdist(torch.tensor(a), p), msg)


# ---------------------------------------------------------------- gumbel_softmax
def test_gumbel_softmax_samples():
    """Soft samples lie on the simplex along dim; their argmax is distributed as
    softmax(logits) (the Gumbel-max trick); tau sharpens them; the draws come from
    symtrace's generator (manual_seed repeats them)."""
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    n = 4000
    x = st.tensor(np.tile(logits, (n, 1)).astype(np.float32))
    st.manual_seed(3)
    y = F.gumbel_softmax(x)
    a = y.numpy()
    assert y.shape == (n, 4) and y.dtype is st.float32
    assert (a > 0).all() and np.allclose(a.sum(1), 1, atol=1e-5)
    freq = np.bincount(a.argmax(1), minlength=4) / n
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    st.manual_seed(3)
    np.testing.assert_array_equal(F.gumbel_softmax(x).numpy(), a)
    st.manual_seed(3)
    sharp = F.gumbel_softmax(x, tau=0.1).numpy()
    assert sharp.max(1).mean() > a.max(1).mean() + 0.1
    np.testing.assert_array_equal(sharp.argmax(1), a.argmax(1))   # same draws, same winners
    # along another dim, float64
    z = st.tensor(np.random.default_rng(0).standard_normal((3, 5, 2)))
    y = F.gumbel_softmax(z, tau=0.5, dim=1)
    assert y.dtype is st.float64 and np.allclose(y.numpy().sum(1), 1)


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_gumbel_softmax_hard_straight_through(dim):
    """hard=True: exactly one-hot at the soft sample's argmax; the gradient is the soft
    sample's (y_hard - y_soft.detach() + y_soft)."""
    a = np.random.default_rng(dim + 5).standard_normal((4, 6, 3)).astype(np.float32)
    w = st.tensor(np.random.default_rng(9).uniform(0.5, 1.5, (4, 6, 3)).astype(np.float32))
    xs, xh = st.tensor(a, requires_grad=True), st.tensor(a, requires_grad=True)
    st.manual_seed(11)
    soft = F.gumbel_softmax(xs, tau=0.7, dim=dim)
    st.manual_seed(11)
    hard = F.gumbel_softmax(xh, tau=0.7, hard=True, dim=dim)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0}
    np.testing.assert_array_equal(h.sum(dim), np.ones(h.sum(dim).shape))
    np.testing.assert_array_equal(h.argmax(dim), soft.detach().numpy().argmax(dim))
    (soft * w).sum().backward()
    (hard * w).sum().backward()
    np.testing.assert_allclose(xh.grad.numpy(), xs.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert np.abs(xh.grad.numpy()).max() > 1e-3


def test_gumbel_softmax_checks(torch):
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        F.gumbel_softmax(st.randn(2, 3), eps=1e-3)
    raises_as_torch(torch, lambda: F.gumbel_softmax(st.ones(3, dtype=st.int64)),
                    lambda: torch.nn.functional.gumbel_softmax(torch.ones(3, dtype=torch.int64)),
                    "dtype must be a floating point but you specified Long")
    assert F.gumbel_softmax(st.tensor(1.5)).item() == 1.0
    assert F.gumbel_softmax(st.tensor(1.5), hard=True).item() == 1.0


# ---------------------------------------------------------------- embedding_bag
IDX1 = np.array([1, 2, 2, 5, 2, 2, 7, 0, 9, 3, 3])
EB_CASES = [
    ("2d", dict(input=np.array([[1, 2, 2, 5], [2, 2, 2, 2], [0, 9, 3, 3]]))),
    ("1d", dict(input=IDX1, offsets=np.array([0, 3, 3, 5, 6]))),
    ("1d_trailing_empty", dict(input=IDX1, offsets=np.array([0, 4, 11, 11]))),
    ("1d_last", dict(input=IDX1, offsets=np.array([0, 3, 3, 5, 6, 11]), include_last_offset=True)),
    ("1d_int32", dict(input=IDX1.astype(np.int32), offsets=np.array([0, 2, 7], np.int32))),
    ("1d_empty_input", dict(input=np.zeros(0, np.int64), offsets=np.array([0, 0]))),
]


@pytest.mark.parametrize("pad", [None, 2, -1])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", EB_CASES, ids=[c[0] for c in EB_CASES])
def test_embedding_bag(torch, case, mode, pad):
    _, kw = case
    W = rng_for("ebw", mode).standard_normal((10, 3))
    a = [W, kw["input"]] + ([kw["offsets"]] if "offsets" in kw else [])
    extra = dict(mode=mode, padding_idx=pad, include_last_offset=kw.get("include_last_offset", False))
    both(torch, lambda w, i, *o: F.embedding_bag(i, w, *o, **extra),
         lambda w, i, *o: torch.nn.functional.embedding_bag(i, w, *o, **extra), a)


@pytest.mark.parametrize("case", EB_CASES[:4], ids=[c[0] for c in EB_CASES[:4]])
def test_embedding_bag_per_sample_weights(torch, case):
    _, kw = case
    rng = rng_for("psw", case[0])
    W = rng.standard_normal((10, 4)).astype(np.float32)
    psw = rng.uniform(-1, 2, kw["input"].shape).astype(np.float32)
    a = [W, kw["input"]] + ([kw["offsets"]] if "offsets" in kw else [])
    for pad in (None, 3):
        extra = dict(mode="sum", padding_idx=pad, include_last_offset=kw.get("include_last_offset", False))
        both(torch, lambda w, i, *o: F.embedding_bag(i, w, *o[:-1], per_sample_weights=o[-1], **extra),
             lambda w, i, *o: torch.nn.functional.embedding_bag(i, w, *o[:-1], per_sample_weights=o[-1], **extra),
             a + [psw])


def test_embedding_bag_max_norm_and_freq(torch):
    rng = rng_for("ebnorm")
    W = rng.standard_normal((10, 3)) * 2
    offs = np.array([0, 3, 5])
    for mode in ("sum", "max"):
        ws, wt = st.tensor(W), torch.tensor(W)
        rs = F.embedding_bag(st.tensor(IDX1), ws, st.tensor(offs), max_norm=1.5, norm_type=1.0, mode=mode)
        rt = torch.nn.functional.embedding_bag(torch.tensor(IDX1), wt, torch.tensor(offs), max_norm=1.5,
                                               norm_type=1.0, mode=mode)
        assert_close(rs, rt)
        assert_close(ws, wt)          # the rows read were renormalized in place
    # scale_grad_by_freq: each index twice, where torch's CPU kernel agrees with its documented
    # rule (it looks the counts up by the wrong position when they differ)
    idx = np.array([4, 1, 1, 6, 4, 8, 6, 8])
    for mode in ("sum", "mean"):
        both(torch, lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, scale_grad_by_freq=True),
             lambda w, i, o: torch.nn.functional.embedding_bag(i, w, o, mode=mode, scale_grad_by_freq=True),
             [W, idx, np.array([0, 3, 3, 6])])
    # uneven counts: each row's gradient divided by how often it is read (torch's documented rule,
    # as F.embedding's)
    w = st.tensor(W, requires_grad=True)
    F.embedding_bag(st.tensor(IDX1), w, st.tensor(np.array([0, 3, 3, 5, 6])), mode="sum",
                    scale_grad_by_freq=True).sum().backward()
    reads = np.bincount(IDX1, minlength=10)
    np.testing.assert_allclose(w.grad.numpy(), np.repeat((reads > 0) * 1.0, 3).reshape(10, 3))


def test_embedding_bag_module(torch):
    st.manual_seed(0)
    m = nn.EmbeddingBag(10, 3, mode="max", padding_idx=-2)
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=-2)
    assert repr(m) == repr(tm) and m.padding_idx == tm.padding_idx == 8
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight"]
    assert tuple(m.weight.shape) == (10, 3) and np.all(m.weight.detach().numpy()[8] == 0)
    a = nn.EmbeddingBag(400, 50).weight.detach().numpy()          # N(0, 1)
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1) < 0.02
    for kw in [dict(max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum", include_last_offset=True),
               dict(mode="mean")]:
        assert repr(nn.EmbeddingBag(10, 3, **kw)) == repr(torch.nn.EmbeddingBag(10, 3, **kw))
    m.load_state_dict({"weight": st.tensor(tm.weight.detach().numpy())})
    i, o = np.array([1, 8, 3, 3, 9, 0]), np.array([0, 2, 2])
    both(torch, lambda idx, off: m(idx, off), lambda idx, off: tm(idx, off), [i, o])
    assert_close(m.weight.grad, tm.weight.grad)
    # from_pretrained: frozen unless freeze=False
    E = np.random.default_rng(0).standard_normal((6, 4))
    fs = nn.EmbeddingBag.from_pretrained(st.tensor(E), mode="sum", padding_idx=1)
    ft = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(E), mode="sum", padding_idx=1)
    assert not fs.weight.requires_grad and repr(fs) == repr(ft)
    ii = np.array([[0, 1, 5], [2, 2, 4]])
    assert_close(fs(st.tensor(ii)), ft(torch.tensor(ii)))
    fs = nn.EmbeddingBag.from_pretrained(st.tensor(E), freeze=False, include_last_offset=True)
    assert fs.weight.requires_grad and fs.include_last_offset
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.EmbeddingBag.from_pretrained(st.ones(3))
    for bad in (10, -11):
        with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
            nn.EmbeddingBag(10, 3, padding_idx=bad)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.EmbeddingBag(10, 3, _weight=st.zeros(9, 3))


def test_embedding_bag_errors(torch):
    W = np.ones((10, 3))
    i1, o = np.array([1, 2, 3, 4]), np.array([0, 2])
    cases = [
        ((i1, W, np.array([1, 2])), {}, "offsets[0] has to be 0"),
        ((i1, W, np.array([0, 5])), {},
         "offsets[-1] can not be greater than input's length 4 but got offsets[-1] of 5"),
        ((i1, W, np.array([[0, 2]])), {}, "offsets has to be a 1D Tensor"),
        ((np.zeros((3, 0), np.int64), W), {}, "step must be nonzero"),
        ((i1, W), {}, "offsets has to be a 1D Tensor but got None"),
        ((np.array([[1, 2], [3, 4]]), W, o), {}, "if input is 2D, then offsets has to be None"),
        ((np.ones((1, 2, 2), np.int64), W), {}, "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"),
        ((i1, W[0], o), {}, "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
        ((i1, W, o), dict(mode="foo"), "mode has to be one of sum, mean or max"),
        ((i1, W, o), dict(mode="max", scale_grad_by_freq=True), "max mode does not support scaling the gradient"),
        ((i1, W, o), dict(mode="max", sparse=True), "max mode does not support sparse weights"),
        ((i1, W, o), dict(padding_idx=10), "padding_idx must be within the number of embeddings, -10 through 9, "
                                           "but got 10"),
        ((i1, W, o), dict(padding_idx=-11), "but got -11"),
        ((i1, W, np.zeros(0, np.int64)), dict(include_last_offset=True),
         "include_last_offset: number of offset should be at least 1"),
        ((i1.astype(np.float64), W, o), {}, "Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"),
        ((i1, W.astype(np.int32), o), {}, "to have one of the following scalar types: Half, BFloat16, Float, Double"),
        ((i1, W, o), dict(mode="mean", per_sample_weights=np.ones(4)),
         "per_sample_weights is only supported for mode='sum' (got mode='mean')"),
        ((i1, W, o), dict(mode="sum", per_sample_weights=np.ones(3)), "then it must have the same shape as the input"),
        ((i1, W, o), dict(mode="sum", per_sample_weights=np.ones(4, np.float32)),
         "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
         "'per_sample_weights'"),
    ]
    for args, kw, msg in cases:
        raises_as_torch(torch, lambda: F.embedding_bag(*[st.tensor(a) for a in args],
                                                       **{k: st.tensor(v) if isinstance(v, np.ndarray) else v
                                                          for k, v in kw.items()}),
                        lambda: torch.nn.functional.embedding_bag(*[torch.tensor(a) for a in args],
                                                                  **{k: torch.tensor(v) if isinstance(v, np.ndarray)
                                                                     else v for k, v in kw.items()}), msg)
    for bad in ([1, 2, 3, 40], [1, 2, 3, -1]):
        raises_as_torch(torch, lambda: F.embedding_bag(st.tensor(np.array(bad)), st.tensor(W), st.tensor(o)),
                        lambda: torch.nn.functional.embedding_bag(torch.tensor(bad), torch.tensor(W),
                                                                  torch.tensor(o)), "idx")
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding_bag(st.tensor(i1), st.tensor(W), st.tensor(o), sparse=True)
    with pytest.warns(UserWarning, match="Argument order of nn.functional.embedding_bag was changed"):
        r = F.embedding_bag(st.tensor(W), st.tensor(i1), st.tensor(o), mode="sum")
    assert tuple(r.shape) == (2, 3)


# ---------------------------------------------------------------- exports, compiled
def test_exports():
    for name in ["Hardshrink", "Softshrink", "PReLU", "Bilinear", "EmbeddingBag", "MarginRankingLoss",
                 "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss",
                 "MultiMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss", "TripletMarginLoss",
                 "TripletMarginWithDistanceLoss"]:
        assert issubclass(getattr(nn, name), nn.Module), name
    for name in ["hardshrink", "softshrink", "prelu", "margin_ranking_loss", "hinge_embedding_loss",
                 "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
                 "gaussian_nll_loss", "poisson_nll_loss", "triplet_margin_loss",
                 "triplet_margin_with_distance_loss", "bilinear", "pdist", "gumbel_softmax", "embedding_bag"]:
        assert callable(getattr(F, name)), name


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(12, 6, mode="max")
        self.act = nn.PReLU(6)
        self.bil = nn.Bilinear(6, 4, 5)
        self.mm = nn.MultiMarginLoss(p=2, margin=0.5)
        self.trip = nn.TripletMarginLoss(margin=0.5, swap=True)

    def forward(self, idx, offsets, x2, target, pos, neg, var):
        h = self.act(self.bag(idx, offsets))
        out = self.bil(h, x2)
        return (self.mm(out, target) + self.trip(out, pos, neg)
                + F.gaussian_nll_loss(out, pos, var) + F.multilabel_soft_margin_loss(out, neg.sigmoid())
                + F.hardshrink(out, 0.1).abs().mean() + F.pdist(out).mean())


def test_compiled_training_step_matches_eager():
    """A few SGD steps of a model using several of these layers and losses: the compiled
    model captures one graph with no break (the value checks are skipped while tracing)
    and follows eager, its losses and parameters."""
    st.manual_seed(0)
    me = _Net()
    mc = copy.deepcopy(me)
    st.reset()
    cm = st.compile(mc)
    oe, oc = st.optim.SGD(me.parameters(), lr=0.05), st.optim.SGD(mc.parameters(), lr=0.05)
    rng = np.random.default_rng(2)
    batches = []
    for step in range(3):
        b = (st.tensor(rng.integers(0, 12, 14)), st.tensor(np.array([0, 3, 3, 6, 9])),
             st.tensor(rng.standard_normal((5, 4)).astype(np.float32)), st.tensor(rng.integers(0, 5, 5)),
             st.tensor(rng.standard_normal((5, 5)).astype(np.float32)),
             st.tensor(rng.standard_normal((5, 5)).astype(np.float32)),
             st.tensor(rng.uniform(0.5, 1.5, (5, 1)).astype(np.float32)))
        batches.append(b)
        losses = []
        for m, o in ((me, oe), (cm, oc)):
            o.zero_grad()
            loss = m(*b)
            loss.backward()
            o.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, err_msg=f"step {step}")
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    stats = st._C._fe_stats()
    assert stats["breaks"] == 0 and stats["fallbacks"] == 0, stats
    assert stats["graphs"] == 1 and stats["hits"] == 2, stats
