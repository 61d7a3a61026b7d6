# symtrace.nn.functional and symtrace.nn modules built by composing existing ops:
# activations (silu, mish, softplus, logsigmoid, leaky_relu, elu, selu, celu,
# hardtanh, relu6, hardsigmoid, hardswish, glu, softmin, softsign, tanhshrink,
# threshold), losses (nll_loss, l1, smooth_l1, huber, binary_cross_entropy[_with_logits],
# kl_div, cosine_embedding_loss), normalize, cosine_similarity, pairwise_distance,
# pad, one_hot, rms_norm, group_norm; the matching modules, Flatten/Unflatten,
# RMSNorm/GroupNorm and ParameterList/ParameterDict; values and gradients against
# torch, torch's errors, and a compiled training loop against eager.
import copy
from collections import OrderedDict

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F
from conftest import ERRORS, assert_close, check_torch, make, rng_for

# torch's own deprecation warnings (kl_div 'mean', Softmin's implicit dim)
pytestmark = [pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning"),
              pytest.mark.filterwarnings("ignore:Implicit dimension choice:UserWarning"),
              pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated:UserWarning")]

GRAD_TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _np(shape, rng, low=-3.0, high=3.0, dtype="float32"):
    return rng.uniform(low, high, size=shape).astype(dtype)


def _both(a, torch, grad=True):
    """A symtrace leaf and a torch leaf holding the numpy array a."""
    a = np.ascontiguousarray(a)
    s = st.tensor(a)
    t = torch.from_numpy(a.copy())
    if grad and a.dtype.kind == "f":
        s.requires_grad_(True)
        t.requires_grad_(True)
    return s, t


class Const:
    """An input that takes no gradient (torch refuses one for loss weights)."""

    def __init__(self, a):
        self.a = a


def run_both(torch, st_fn, th_fn, arrays, dtype="float32", grad=True, rtol=None, atol=None, grad_tol=None):
    """st_fn / th_fn on the arrays (numpy; floats become leaves requiring grad when
    grad): same output (shape, dtype, values); then the gradients of
    (out * w).sum() with respect to every float input, w random."""
    pairs = [_both(a, torch, grad) if isinstance(a, np.ndarray)
             else _both(a.a, torch, False) if isinstance(a, Const) else (a, a) for a in arrays]
    got = st_fn(*[p[0] for p in pairs])
    exp = th_fn(*[p[1] for p in pairs])
    assert_close(got.detach(), exp.detach(), rtol=rtol, atol=atol)
    if not grad:
        return got
    w = rng_for("w", tuple(exp.shape)).uniform(0.5, 1.5, size=tuple(exp.shape)).astype(
        np.float64 if dtype == "float64" else np.float32)
    (got * st.tensor(w)).sum().backward()
    (exp * torch.from_numpy(w)).sum().backward()
    n = 0
    for (s, t) in pairs:
        if isinstance(s, st.Tensor) and t.requires_grad:
            assert s.grad is not None
            assert_close(s.grad, t.grad, **(grad_tol or GRAD_TOL[dtype]))
            n += 1
    assert n > 0
    return got


# ---------------------------------------------------------------- activations
# values at the kinks (0, +-3, 6, +-1) are in every input: the gradients there
# follow torch's conventions
KINKS = np.array([-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 20.0, -20.0, 25.0])

ACTS = [
    ("silu", {}), ("mish", {}), ("softplus", {}), ("softplus", dict(beta=2.0, threshold=4.0)),
    ("softplus", dict(beta=0.5)), ("logsigmoid", {}), ("leaky_relu", {}),
    ("leaky_relu", dict(negative_slope=0.2)), ("elu", {}), ("elu", dict(alpha=0.5)), ("selu", {}),
    ("celu", {}), ("celu", dict(alpha=2.0)), ("hardtanh", {}), ("hardtanh", dict(min_val=-0.5, max_val=3.0)),
    ("relu6", {}), ("hardsigmoid", {}), ("hardswish", {}), ("softsign", {}), ("tanhshrink", {}),
    ("threshold", dict(threshold=0.5, value=-2.0)),
]


@pytest.mark.parametrize("name,kw", ACTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ACTS)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation(torch, name, kw, dtype):
    rng = rng_for(name, dtype)
    # torch's float64 hardsigmoid/hardswish gradients use 1.0f / 6.0f (float32)
    grad_tol = dict(rtol=1e-7, atol=1e-10) if dtype == "float64" and name.startswith("hards") else None
    for shape in [(12,), (3, 12), (2, 3, 12)]:
        a = _np(shape, rng, -8, 8, dtype)
        a[..., :12] = KINKS  # the kinks in every row
        run_both(torch, lambda x: getattr(F, name)(x, **kw),
                 lambda x: getattr(torch.nn.functional, name)(x, **kw), [a], dtype, grad_tol=grad_tol)


def test_softplus_logsigmoid_tails(torch):
    """Far in the tails the results keep their relative precision (log1p, not log(1 + .))."""
    a = np.array([-80.0, -30.0, -20.0, -15.0, -10.0, -1e-3, 1e-4, 10.0, 15.0, 19.0, 30.0], np.float32)
    for name in ["softplus", "logsigmoid", "mish"]:
        got = getattr(F, name)(st.tensor(a)).numpy()
        exp = getattr(torch.nn.functional, name)(torch.tensor(a)).numpy()
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-30, err_msg=name)
        s = st.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        getattr(F, name)(s).sum().backward()
        getattr(torch.nn.functional, name)(t).sum().backward()
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-30, err_msg=name)
    # no overflow: softplus(1000) = 1000, logsigmoid(-1000) = -1000
    assert F.softplus(st.tensor([1000.0])).item() == 1000.0
    assert F.logsigmoid(st.tensor([-1000.0])).item() == -1000.0
    assert F.softplus(st.tensor([1000.0]), threshold=2000.0).item() == 1000.0


@pytest.mark.parametrize("shape,dim", [((4, 6), -1), ((4, 6), 0), ((2, 4, 3), 1), ((8,), 0)])
def test_glu(torch, shape, dim):
    a = _np(shape, rng_for("glu", shape, dim))
    run_both(torch, lambda x: F.glu(x, dim), lambda x: torch.nn.functional.glu(x, dim), [a])


@pytest.mark.parametrize("shape,dim", [((4, 6), 1), ((4, 6), 0), ((2, 4, 3), -1), ((2, 4, 3), None)])
def test_softmin(torch, shape, dim):
    a = _np(shape, rng_for("softmin", shape, dim))
    run_both(torch, lambda x: F.softmin(x, dim), lambda x: torch.nn.functional.softmin(x, dim), [a])
    x = make(shape, "float32")
    check_torch(lambda v: F.softmin(v, dim, dtype=st.float64),
                lambda v: torch.nn.functional.softmin(v, dim, dtype=torch.float64), x)


def test_activation_errors(torch):
    tf = torch.nn.functional
    i = make((2, 3), "int64")
    for name in ["silu", "mish", "softplus", "logsigmoid", "leaky_relu", "elu", "selu", "celu",
                 "hardsigmoid", "hardswish", "glu"]:
        assert check_torch(getattr(F, name), getattr(tf, name), make((2, 4), "int64")) is not None, name
    # integer inputs that torch accepts
    for name in ["hardtanh", "relu6", "softsign"]:
        assert check_torch(getattr(F, name), getattr(tf, name), i) is None, name
    x = make((3, 5), "float32")
    assert check_torch(F.glu, tf.glu, x) is RuntimeError           # odd halving dim
    assert check_torch(F.glu, tf.glu, make((), "float32")) is RuntimeError
    assert check_torch(lambda v: F.glu(v, 2), lambda v: tf.glu(v, 2), x) is IndexError
    assert check_torch(lambda v: F.hardtanh(v, 2.0, 1.0), lambda v: tf.hardtanh(v, 2.0, 1.0), x) is ValueError
    assert check_torch(lambda v: F.celu(v, 0.0), lambda v: tf.celu(v, 0.0), x) is RuntimeError
    with pytest.raises(TypeError, match="silu"):
        F.silu([1.0, 2.0])


# ---------------------------------------------------------------- nll_loss
NLL_SHAPES = [(5, 4), (4,), (3, 4, 5), (2, 3, 2, 4)]


def _nll_inputs(shape, rng, ignore=False):
    logp = np.log(rng.dirichlet(np.ones(shape[1] if len(shape) > 1 else shape[0]),
                                size=(shape[0],) + shape[2:] if len(shape) > 1 else ()))
    if len(shape) > 1:  # class dim to position 1
        logp = np.moveaxis(logp, -1, 1)
    logp = np.ascontiguousarray(logp.astype(np.float32))
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    tgt = rng.integers(0, c, size=tshape).astype(np.int64)
    if ignore and tgt.ndim:
        tgt.reshape(-1)[::3] = -100
    return logp, tgt, c


@pytest.mark.parametrize("shape", NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
def test_nll_loss(torch, shape, reduction, weighted, ignore):
    rng = rng_for("nll", shape, reduction, weighted, ignore)
    logp, tgt, c = _nll_inputs(shape, rng, ignore)
    w = rng.uniform(0.2, 2.0, c).astype(np.float32) if weighted else None
    tf = torch.nn.functional

    def sfn(x, t, *wt):
        return F.nll_loss(x, t, weight=wt[0] if wt else None, reduction=reduction)

    def tfn(x, t, *wt):
        return tf.nll_loss(x, t, weight=wt[0] if wt else None, reduction=reduction)
    arrays = [logp, st.tensor(tgt)] + ([Const(w)] if weighted else [])
    got = run_both(torch, sfn, lambda x, t, *wt: tfn(x, torch.from_numpy(tgt), *wt), arrays)
    if ignore and reduction == "none" and tgt.ndim:
        assert (got.detach().numpy()[tgt == -100] == 0).all()


def test_nll_loss_ignore_index_edge_cases(torch):
    tf = torch.nn.functional
    rng = rng_for("nll-edge")
    logp, tgt, c = _nll_inputs((6, 4), rng)
    # an ignore_index that is a real class
    for ii in [1, 3]:
        for red in ["mean", "sum", "none"]:
            run_both(torch, lambda x: F.nll_loss(x, st.tensor(tgt), ignore_index=ii, reduction=red),
                     lambda x: tf.nll_loss(x, torch.from_numpy(tgt), ignore_index=ii, reduction=red), [logp])
    # every target ignored: 'mean' is 0/0 = nan, as torch; 'sum' is 0
    allign = np.full(6, -100, np.int64)
    assert np.isnan(F.nll_loss(st.tensor(logp), st.tensor(allign)).item())
    assert np.isnan(tf.nll_loss(torch.from_numpy(logp), torch.from_numpy(allign)).item())
    assert F.nll_loss(st.tensor(logp), st.tensor(allign), reduction="sum").item() == 0.0
    # no classes at all, every target ignored
    for kw in [dict(reduction="sum"), {}, dict(reduction="none")]:
        check_torch(lambda p, q: F.nll_loss(p, q, ignore_index=0, **kw),
                    lambda p, q: tf.nll_loss(p, q, ignore_index=0, **kw),
                    make((2, 0), "float32"), make((2,), "int64", low=0, high=0))
    # -inf log-probabilities at ignored positions do not leak nan
    lp = logp.copy()
    lp[0, :] = -np.inf
    t2 = tgt.copy()
    t2[0] = -100
    run_both(torch, lambda x: F.nll_loss(x, st.tensor(t2)),
             lambda x: tf.nll_loss(x, torch.from_numpy(t2)), [lp])
    # deprecated size_average / reduce
    for sa, rd in [(False, None), (None, False), (True, True)]:
        check_torch(lambda x, t: F.nll_loss(x, t, size_average=sa, reduce=rd),
                    lambda x, t: tf.nll_loss(x, t, size_average=sa, reduce=rd),
                    make((6, 4), "float32"), make((6,), "int64", low=0, high=3))


def test_nll_loss_float64(torch):
    rng = rng_for("nll64")
    logp, tgt, c = _nll_inputs((3, 5, 4), rng)
    w = rng.uniform(0.5, 1.5, 5)
    run_both(torch, lambda x, w: F.nll_loss(x, st.tensor(tgt), w),
             lambda x, w: torch.nn.functional.nll_loss(x, torch.from_numpy(tgt), w),
             [logp.astype(np.float64), Const(w)], "float64")


def test_nll_loss_errors(torch):
    tf = torch.nn.functional
    x = make((3, 4), "float32")
    t = make((3,), "int64", low=0, high=3)
    cases = [
        (x, make((3,), "int32", low=0, high=3), {}),           # target dtype
        (x, make((3,), "float32"), {}),
        (x, make((4,), "int64", low=0, high=3), {}),           # batch mismatch
        (x, make((3, 1), "int64", low=0, high=3), {}),         # multi-target
        (make((2, 3, 4), "float32"), make((2, 5), "int64", low=0, high=2), {}),
        (make((2, 3, 4), "float32"), make((2,), "int64", low=0, high=2), {}),
        (make((2, 3, 4), "float32"), make((3, 4), "int64", low=0, high=2), {}),
        (make((), "float32"), make((), "int64", low=0, high=0), {}),
        (make((4,), "float32"), make((2,), "int64", low=0, high=3), {}),
        (x, t, dict(weight=make((3,), "float32").th)),         # weight size
        (x, t, dict(weight=make((2, 2), "float32").th)),
        (x, t, dict(weight=make((4,), "float64").th)),         # weight dtype
        (x, t, dict(reduction="avg")),
    ]
    for a, b, kw in cases:
        skw = {k: (st.tensor(v.numpy()) if k == "weight" else v) for k, v in kw.items()}
        e = check_torch(lambda p, q: F.nll_loss(p, q, **skw), lambda p, q: tf.nll_loss(p, q, **kw), a, b)
        assert e is not None, (a.st.shape, b.st.shape, kw)
    with pytest.raises(ValueError, match="batch_size"):
        F.nll_loss(x.st, make((4,), "int64", low=0, high=3).st)
    with pytest.raises(RuntimeError, match=r"\[2, 4\].*\[2, 5\]"):
        F.nll_loss(make((2, 3, 4), "float32").st, make((2, 5), "int64", low=0, high=2).st)


# ---------------------------------------------------------------- regression losses
PAIR_SHAPES = [(7,), (3, 5), (2, 3, 4)]


@pytest.mark.parametrize("shape", PAIR_SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_smooth_huber(torch, shape, reduction):
    rng = rng_for("reg", shape, reduction)
    a, b = _np(shape, rng), _np(shape, rng)
    a.reshape(-1)[0] = b.reshape(-1)[0]  # a zero difference
    tf = torch.nn.functional
    run_both(torch, lambda x, y: F.l1_loss(x, y, reduction=reduction),
             lambda x, y: tf.l1_loss(x, y, reduction=reduction), [a, b])
    for beta in [1.0, 0.5, 0.0, 2.5]:
        run_both(torch, lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=beta),
                 lambda x, y: tf.smooth_l1_loss(x, y, reduction=reduction, beta=beta), [a, b])
    for delta in [1.0, 0.3, 2.0]:
        run_both(torch, lambda x, y: F.huber_loss(x, y, reduction=reduction, delta=delta),
                 lambda x, y: tf.huber_loss(x, y, reduction=reduction, delta=delta), [a, b])
    w = rng.uniform(0.1, 2.0, shape).astype(np.float32)
    run_both(torch, lambda x, y, w: F.l1_loss(x, y, reduction=reduction, weight=w),
             lambda x, y, w: tf.l1_loss(x, y, reduction=reduction, weight=w), [a, b, w])
    run_both(torch, lambda x, y, w: F.huber_loss(x, y, reduction=reduction, weight=w),
             lambda x, y, w: tf.huber_loss(x, y, reduction=reduction, weight=w), [a, b, w])


def test_regression_losses_float64_and_broadcast(torch):
    rng = rng_for("reg64")
    a, b = _np((4, 3), rng, dtype="float64"), _np((4, 3), rng, dtype="float64")
    tf = torch.nn.functional
    for sname in ["l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss"]:
        run_both(torch, getattr(F, sname), getattr(tf, sname), [a, b], "float64")
    # different but broadcastable shapes: torch warns and broadcasts; so do we
    b1 = _np((4, 1), rng)
    for sname in ["l1_loss", "smooth_l1_loss", "huber_loss"]:
        with pytest.warns(UserWarning, match="different to the input size"):
            got = getattr(F, sname)(st.tensor(a.astype(np.float32)), st.tensor(b1), reduction="none")
        with pytest.warns(UserWarning):
            exp = getattr(tf, sname)(torch.from_numpy(a.astype(np.float32)), torch.from_numpy(b1),
                                     reduction="none")
        assert_close(got, exp)


def test_regression_loss_errors(torch):
    tf = torch.nn.functional
    x, y = make((3, 4), "float32"), make((3, 5), "float32")
    for sname in ["l1_loss", "smooth_l1_loss", "huber_loss"]:
        with pytest.warns(UserWarning):
            assert check_torch(getattr(F, sname), getattr(tf, sname), x, y) is RuntimeError
        assert check_torch(lambda p, q: getattr(F, sname)(p, q, reduction="bad"),
                           lambda p, q: getattr(tf, sname)(p, q, reduction="bad"), x, x) is ValueError
    assert check_torch(lambda p, q: F.smooth_l1_loss(p, q, beta=-1.0),
                       lambda p, q: tf.smooth_l1_loss(p, q, beta=-1.0), x, x) is RuntimeError
    for d in [0.0, -1.0]:
        assert check_torch(lambda p, q: F.huber_loss(p, q, delta=d),
                           lambda p, q: tf.huber_loss(p, q, delta=d), x, x) is RuntimeError
    w = make((3,), "float32")
    assert check_torch(lambda p, q, w: F.l1_loss(p, q, weight=w),
                       lambda p, q, w: tf.l1_loss(p, q, weight=w), x, x, w) is ValueError
    assert check_torch(lambda p, q, w: F.huber_loss(p, q, weight=w),
                       lambda p, q, w: tf.huber_loss(p, q, weight=w), x, x, w) is ValueError


# ---------------------------------------------------------------- binary cross entropy
@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 2)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(torch, shape, reduction):
    rng = rng_for("bce", shape, reduction)
    p = rng.uniform(0.02, 0.98, shape).astype(np.float32)
    t = rng.uniform(0, 1, shape).astype(np.float32)
    tf = torch.nn.functional
    run_both(torch, lambda x, y: F.binary_cross_entropy(x, y, reduction=reduction),
             lambda x, y: tf.binary_cross_entropy(x, y, reduction=reduction), [p, t])
    for wshape in [shape, shape[-1:]]:
        w = rng.uniform(0.5, 2.0, wshape).astype(np.float32)
        run_both(torch, lambda x, y, w: F.binary_cross_entropy(x, y, w, reduction=reduction),
                 lambda x, y, w: tf.binary_cross_entropy(x, y, w, reduction=reduction), [p, t, Const(w)])


def test_binary_cross_entropy_saturated(torch):
    """Probabilities of exactly 0 and 1 (a saturated sigmoid): the logs clamp at
    -100 as torch, and the gradient stays finite."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.0, 1.0], np.float32)
    got = F.binary_cross_entropy(st.tensor(p), st.tensor(t), reduction="none")
    exp = torch.nn.functional.binary_cross_entropy(torch.from_numpy(p), torch.from_numpy(t), reduction="none")
    assert_close(got, exp)
    x = st.tensor(p, requires_grad=True)
    F.binary_cross_entropy(x, st.tensor(t)).backward()
    assert np.isfinite(x.grad.numpy()).all()
    z = st.tensor([30.0, -30.0, 0.0], requires_grad=True)   # sigmoid(30) == 1.0 in float32
    F.binary_cross_entropy(z.sigmoid(), st.tensor([1.0, 0.0, 1.0])).backward()
    assert np.isfinite(z.grad.numpy()).all()


@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(torch, shape, reduction):
    rng = rng_for("bcel", shape, reduction)
    x = _np(shape, rng, -6, 6)
    x.reshape(-1)[:3] = [0.0, 40.0, -40.0]
    t = rng.uniform(0, 1, shape).astype(np.float32)
    tf = torch.nn.functional
    run_both(torch, lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
             lambda x, y: tf.binary_cross_entropy_with_logits(x, y, reduction=reduction), [x, t])
    w = rng.uniform(0.5, 2.0, shape).astype(np.float32)
    pw = rng.uniform(0.5, 3.0, shape[-1:]).astype(np.float32)
    run_both(torch, lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, reduction=reduction,
                                                                          pos_weight=pw),
             lambda x, y, w, pw: tf.binary_cross_entropy_with_logits(x, y, w, reduction=reduction,
                                                                     pos_weight=pw), [x, t, Const(w), Const(pw)])
    run_both(torch, lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw,
                                                                       reduction=reduction),
             lambda x, y, pw: tf.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction=reduction),
             [x.astype(np.float64), t.astype(np.float64), Const(pw.astype(np.float64))], "float64")


def test_bce_errors(torch):
    tf = torch.nn.functional
    p, q = make((3,), "float32", low=0.1, high=0.9), make((3, 1), "float32", low=0.1, high=0.9)
    assert check_torch(F.binary_cross_entropy, tf.binary_cross_entropy, p, q) is ValueError
    assert check_torch(F.binary_cross_entropy_with_logits, tf.binary_cross_entropy_with_logits, p, q) is ValueError
    assert check_torch(F.binary_cross_entropy, tf.binary_cross_entropy, p,
                       make((3,), "float64", low=0.1, high=0.9)) is RuntimeError
    p2 = make((3, 2), "float32", low=0.1, high=0.9)
    assert check_torch(lambda a, b, w: F.binary_cross_entropy(a, b, w),
                       lambda a, b, w: tf.binary_cross_entropy(a, b, w), p2, p2, make((3,), "float32")) is not None
    assert check_torch(lambda a, b, w: F.binary_cross_entropy_with_logits(a, b, pos_weight=w),
                       lambda a, b, w: tf.binary_cross_entropy_with_logits(a, b, pos_weight=w), p2, p2,
                       make((3,), "float32")) is RuntimeError
    for fn in ["binary_cross_entropy", "binary_cross_entropy_with_logits"]:
        assert check_torch(lambda a, b: getattr(F, fn)(a, b, reduction="x"),
                           lambda a, b: getattr(tf, fn)(a, b, reduction="x"), p2, p2) is ValueError


# ---------------------------------------------------------------- kl_div
@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(torch, reduction, log_target):
    rng = rng_for("kl", reduction, log_target)
    tf = torch.nn.functional
    for shape in [(4, 5), (3, 2, 4)]:
        x = np.log(rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])).astype(np.float32)
        t = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1]).astype(np.float32)
        if log_target:
            t = np.log(t).astype(np.float32)
        run_both(torch, lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                 lambda a, b: tf.kl_div(a, b, reduction=reduction, log_target=log_target), [x, t])
        if not log_target:  # zero targets: xlogy(0, 0) = 0 (the target's gradient there is nan in torch)
            t.reshape(-1)[::4] = 0.0
            run_both(torch, lambda a, b: F.kl_div(a, b, reduction=reduction),
                     lambda a, b: tf.kl_div(a, b, reduction=reduction), [x, Const(t)])
    # broadcast target, float64
    x = np.log(rng.dirichlet(np.ones(3), size=2))
    t = rng.dirichlet(np.ones(3))
    run_both(torch, lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
             lambda a, b: tf.kl_div(a, b, reduction=reduction, log_target=log_target), [x, t], "float64")


def test_kl_div_errors(torch):
    tf = torch.nn.functional
    x = make((3, 4), "float32")
    assert check_torch(lambda a, b: F.kl_div(a, b, reduction="avg"),
                       lambda a, b: tf.kl_div(a, b, reduction="avg"), x, x) is ValueError
    with pytest.warns(UserWarning):  # torch's warning about 'mean'
        assert check_torch(F.kl_div, tf.kl_div, x, make((3, 4), "int32")) is RuntimeError
    assert check_torch(lambda a, b: F.kl_div(a, b, reduction="batchmean"),
                       lambda a, b: tf.kl_div(a, b, reduction="batchmean"), x, make((2, 4), "float32")) \
        is RuntimeError


def test_cosine_embedding_loss(torch):
    rng = rng_for("cel")
    tf = torch.nn.functional
    a, b = _np((5, 4), rng), _np((5, 4), rng)
    y = np.array([1, -1, 1, -1, -1])
    for red in ["mean", "sum", "none"]:
        for margin in [0.0, 0.3]:
            run_both(torch, lambda p, q: F.cosine_embedding_loss(p, q, st.tensor(y), margin, reduction=red),
                     lambda p, q: tf.cosine_embedding_loss(p, q, torch.from_numpy(y), margin, reduction=red),
                     [a, b])
    run_both(torch, lambda p, q: F.cosine_embedding_loss(p, q, st.tensor(1)),
             lambda p, q: tf.cosine_embedding_loss(p, q, torch.tensor(1)), [a[0], b[0]])


# ---------------------------------------------------------------- normalize, distances
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [1, 0, -1])
def test_normalize(torch, p, dim):
    rng = rng_for("normalize", p, dim)
    a = _np((4, 5), rng)
    a[1, :] = 0.0 if dim in (1, -1) else a[1, :]   # a zero row: 0 out, a finite gradient
    a[:, 2] = 0.0 if dim == 0 else a[:, 2]
    run_both(torch, lambda x: F.normalize(x, p, dim), lambda x: torch.nn.functional.normalize(x, p, dim), [a])
    run_both(torch, lambda x: F.normalize(x, p, dim, eps=0.5),
             lambda x: torch.nn.functional.normalize(x, p, dim, eps=0.5), [a.astype(np.float64)], "float64")


@pytest.mark.parametrize("s1,s2,dim", [((4, 6), (4, 6), 1), ((4, 6), (4, 6), 0), ((3, 4, 5), (3, 4, 5), -1),
                                       ((3, 6), (6,), 1), ((2, 1, 5), (3, 5), 2), ((6,), (6,), 0)])
def test_cosine_similarity(torch, s1, s2, dim):
    rng = rng_for("cos", s1, s2, dim)
    a, b = _np(s1, rng), _np(s2, rng)
    if len(s1) == 2 and s1 == s2 and dim == 1:
        a[0] = 0.0          # a zero vector: the eps clamp, gradient as torch
        a[1] = 1e-10
    run_both(torch, lambda x, y: F.cosine_similarity(x, y, dim),
             lambda x, y: torch.nn.functional.cosine_similarity(x, y, dim), [a, b])
    run_both(torch, lambda x, y: F.cosine_similarity(x, y, dim, eps=1e-3),
             lambda x, y: torch.nn.functional.cosine_similarity(x, y, dim, eps=1e-3),
             [a.astype(np.float64), b.astype(np.float64)], "float64")


def test_cosine_similarity_dtypes_and_errors(torch):
    tf = torch.nn.functional
    a, b = make((3, 4), "float32"), make((3, 4), "float64")
    # promotes to float64 (torch takes the float32 norm in float32)
    assert check_torch(F.cosine_similarity, tf.cosine_similarity, a, b, rtol=1e-6) is None
    assert F.cosine_similarity(a.st, b.st).dtype == st.float64
    assert check_torch(F.cosine_similarity, tf.cosine_similarity, make((3, 4), "int32"),
                       make((3, 4), "int32")) is RuntimeError
    assert check_torch(F.cosine_similarity, tf.cosine_similarity, a, make((2, 4), "float32")) is RuntimeError
    assert check_torch(lambda x, y: F.cosine_similarity(x, y, 2), lambda x, y: tf.cosine_similarity(x, y, 2),
                       a, a) is IndexError
    assert check_torch(lambda x: F.normalize(x, dim=2), lambda x: tf.normalize(x, dim=2), a) is IndexError


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(torch, p, keepdim):
    rng = rng_for("pdist", p, keepdim)
    for s1, s2 in [((4, 5), (4, 5)), ((3, 5), (5,)), ((6,), (6,))]:
        a, b = _np(s1, rng), _np(s2, rng)
        run_both(torch, lambda x, y: F.pairwise_distance(x, y, p, keepdim=keepdim),
                 lambda x, y: torch.nn.functional.pairwise_distance(x, y, p, keepdim=keepdim), [a, b])


# ---------------------------------------------------------------- pad
CONST_PADS = [((3, 4), (1, 2)), ((3, 4), (1, 2, 3, 0)), ((3, 4), (-1, 2)), ((3, 4), (1, -2, -1, 2)),
              ((2, 3, 4), (0, 0, 2, 1, 1, 1)), ((2, 3, 4), (-2, -2)), ((5,), (3, -1)), ((2, 3, 4, 2), (1, 1, 0, 2)),
              ((3, 4), ())]


@pytest.mark.parametrize("shape,pads", CONST_PADS)
def test_pad_constant(torch, shape, pads):
    rng = rng_for("pad", shape, pads)
    a = _np(shape, rng)
    tf = torch.nn.functional
    run_both(torch, lambda x: F.pad(x, pads), lambda x: tf.pad(x, pads), [a])
    run_both(torch, lambda x: F.pad(x, list(pads), value=-1.5), lambda x: tf.pad(x, list(pads), value=-1.5), [a])
    run_both(torch, lambda x: F.pad(x, pads, "constant", 2.0), lambda x: tf.pad(x, pads, "constant", 2.0),
             [a.astype(np.float64)], "float64")
    i = make(shape, "int64")
    for v in [7, -1.5, 2.0]:   # float values truncate on integer tensors
        check_torch(lambda x: F.pad(x, pads, value=v), lambda x: tf.pad(x, pads, value=v), i)
    check_torch(lambda x: F.pad(x, pads, value=0.5), lambda x: tf.pad(x, pads, value=0.5), make(shape, "bool"))
    # a new tensor even when nothing is padded, as torch
    s = st.tensor(a)
    assert F.pad(s, pads) is not s


NONCONST_PADS = [((2, 5), (1, 2)), ((2, 3, 5), (4, 0)), ((2, 3, 5), (-1, 2)), ((2, 3, 5), (2, -3)),
                 ((3, 4, 5), (1, 2, 3, 0)), ((2, 3, 4, 5), (2, 1, 0, 3)), ((2, 3, 4, 5), (1, 1, 1, 1, 1, 1)),
                 ((1, 2, 3, 4, 5), (2, 2, 1, 0, 0, 1)), ((2, 3, 5), (1, -2))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pads", NONCONST_PADS)
def test_pad_modes(torch, mode, shape, pads):
    rng = rng_for("padm", shape, pads, mode)
    a = _np(shape, rng)
    tf = torch.nn.functional
    try:
        tf.pad(torch.from_numpy(a), pads, mode)
    except Exception:
        with pytest.raises(ERRORS):
            F.pad(st.tensor(a), pads, mode)
        return
    run_both(torch, lambda x: F.pad(x, pads, mode), lambda x: tf.pad(x, pads, mode), [a])


def test_pad_errors(torch):
    tf = torch.nn.functional
    x = make((2, 3, 4), "float32")
    bad = [((1,), "constant", None), ((1, 1) * 4, "constant", None), ((-3, -2), "constant", None),
           ((1, 1), "foo", None), ((1, 1), "reflect", 1.0), ((4, 1), "reflect", None),
           ((1, 1), "reflect", None, (2, 0, 5)), ((5, 1), "circular", None), ((-3, -3), "circular", None),
           ((-6, 1), "replicate", None), ((1, 1) * 3, "reflect", None), ((1, 1), "replicate", None, (5,))]
    for case in bad:
        pads, mode, value = case[:3]
        t = make(case[3], "float32") if len(case) > 3 else x
        e = check_torch(lambda v: F.pad(v, pads, mode, value), lambda v: tf.pad(v, pads, mode, value), t)
        assert e is not None, case
    with pytest.raises(NotImplementedError, match="foo"):
        F.pad(x.st, (1, 1), "foo")
    # value=0 is accepted by the non-constant modes
    assert_close(F.pad(x.st, (1, 1), "reflect", 0.0), tf.pad(x.th, (1, 1), "reflect", 0.0))


# ---------------------------------------------------------------- one_hot
def test_one_hot(torch):
    tf = torch.nn.functional
    for shape, n in [((6,), -1), ((6,), 9), ((2, 3), 5), ((), 4), ((0,), 3)]:
        t = make(shape, "int64", low=0, high=3)
        check_torch(lambda v: F.one_hot(v, n), lambda v: tf.one_hot(v, n), t)
        assert F.one_hot(t.st, n).dtype == st.int64
    assert check_torch(F.one_hot, tf.one_hot, make((3,), "int32", low=0, high=2)) is RuntimeError
    assert check_torch(F.one_hot, tf.one_hot, make((0,), "int64")) is RuntimeError
    assert check_torch(lambda v: F.one_hot(v, 2), lambda v: tf.one_hot(v, 2),
                       make((3,), "int64", values=[0, 5, 1])) is RuntimeError
    assert check_torch(F.one_hot, tf.one_hot, make((3,), "int64", values=[0, -1, 1])) is RuntimeError


# ---------------------------------------------------------------- rms_norm, group_norm
@pytest.mark.parametrize("shape,ns", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), 4), ((5,), (5,))])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(torch, shape, ns, affine, eps):
    rng = rng_for("rms", shape, ns, affine, eps)
    a = _np(shape, rng)
    nst = (ns,) if isinstance(ns, int) else ns
    tf = torch.nn.functional
    ths = list(nst)
    if affine:
        w = rng.uniform(0.5, 1.5, nst).astype(np.float32)
        run_both(torch, lambda x, w: F.rms_norm(x, ns, w, eps), lambda x, w: tf.rms_norm(x, ths, w, eps), [a, w])
        run_both(torch, lambda x, w: F.rms_norm(x, ns, w, eps), lambda x, w: tf.rms_norm(x, ths, w, eps),
                 [a.astype(np.float64), w.astype(np.float64)], "float64")
    else:
        run_both(torch, lambda x: F.rms_norm(x, ns, eps=eps), lambda x: tf.rms_norm(x, ths, eps=eps), [a])
        run_both(torch, lambda x: F.rms_norm(x, ns, eps=eps), lambda x: tf.rms_norm(x, ths, eps=eps),
                 [a.astype(np.float64)], "float64")


def test_rms_norm_eps_default_and_low_precision(torch):
    tf = torch.nn.functional
    tiny = np.full((2, 4), 1e-5, np.float32)  # mean(x^2) ~ 1e-10: eps matters
    assert_close(F.rms_norm(st.tensor(tiny), (4,)), tf.rms_norm(torch.from_numpy(tiny), [4]))
    assert_close(F.rms_norm(st.tensor(tiny.astype(np.float64)), (4,)),
                 tf.rms_norm(torch.from_numpy(tiny.astype(np.float64)), [4]))
    x = make((3, 8), "bfloat16")
    w = make((8,), "bfloat16")
    check_torch(lambda a, b: F.rms_norm(a, (8,), b), lambda a, b: tf.rms_norm(a, [8], b), x, w)
    check_torch(lambda a: F.rms_norm(a, (8,)), lambda a: tf.rms_norm(a, [8]), make((3, 8), "float16"))


def test_rms_norm_errors(torch):
    tf = torch.nn.functional
    x = make((3, 4), "float32")
    assert check_torch(lambda a: F.rms_norm(a, (5,)), lambda a: tf.rms_norm(a, [5]), x) is RuntimeError
    assert check_torch(lambda a: F.rms_norm(a, ()), lambda a: tf.rms_norm(a, []), x) is RuntimeError
    assert check_torch(lambda a, w: F.rms_norm(a, (4,), w), lambda a, w: tf.rms_norm(a, [4], w), x,
                       make((3,), "float32")) is RuntimeError
    with pytest.raises(RuntimeError, match=r"\[3, 4\]"):
        F.rms_norm(x.st, (5,))


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 4, 3, 2), 2), ((3, 8), 2), ((2, 6, 5), 1)])
def test_group_norm(torch, shape, groups):
    rng = rng_for("gn", shape, groups)
    a = _np(shape, rng)
    w, b = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32), _np(shape[1:2], rng)
    tf = torch.nn.functional
    run_both(torch, lambda x: F.group_norm(x, groups), lambda x: tf.group_norm(x, groups), [a])
    run_both(torch, lambda x, w, b: F.group_norm(x, groups, w, b, 1e-3),
             lambda x, w, b: tf.group_norm(x, groups, w, b, 1e-3), [a, w, b])
    assert check_torch(lambda x: F.group_norm(x, 5), lambda x: tf.group_norm(x, 5), make(shape, "float32")) \
        is RuntimeError


# ---------------------------------------------------------------- modules
def _same_module(torch, sm, tm, *arrays):
    """A symtrace module and a torch module with the same parameters give the same
    outputs and gradients (values only for torch's in-place ones); their reprs
    agree (torch's names swapped for ours)."""
    run_both(torch, sm, tm, list(arrays), grad=not getattr(tm, "inplace", False))
    assert repr(sm) == repr(tm).replace("torch.", "symtrace."), (repr(sm), repr(tm))


ACT_MODULES = [("SiLU", ()), ("SiLU", (True,)), ("Mish", ()), ("Softplus", ()), ("Softplus", (2.0, 5.0)),
               ("LeakyReLU", ()), ("LeakyReLU", (0.2, True)), ("ELU", ()), ("ELU", (0.5,)), ("CELU", (2.0,)),
               ("SELU", ()), ("Hardtanh", ()), ("Hardtanh", (-2.0, 0.5)), ("ReLU6", ()), ("ReLU6", (True,)),
               ("Hardsigmoid", ()), ("Hardswish", ()), ("GLU", ()), ("GLU", (0,)), ("LogSigmoid", ()),
               ("Softmin", (1,)), ("Softmin", ()), ("Softsign", ()), ("Tanhshrink", ()),
               ("Threshold", (0.1, 20.0))]


@pytest.mark.parametrize("name,args", ACT_MODULES, ids=[f"{n}{a}" for n, a in ACT_MODULES])
def test_activation_modules(torch, name, args):
    a = _np((4, 6), rng_for("actmod", name, args), -7, 7)
    a[0] = KINKS[:6]
    _same_module(torch, getattr(nn, name)(*args), getattr(torch.nn, name)(*args), a)


def test_hardtanh_module_checks(torch):
    with pytest.raises(AssertionError):
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(AssertionError):
        torch.nn.Hardtanh(1.0, 1.0)


LOSS_MODULES = [
    ("L1Loss", {}), ("L1Loss", dict(reduction="sum")), ("SmoothL1Loss", dict(beta=0.5)),
    ("HuberLoss", dict(delta=0.7, reduction="none")), ("KLDivLoss", dict(reduction="batchmean")),
    ("KLDivLoss", dict(log_target=True, reduction="sum")), ("L1Loss", dict(size_average=False)),
]


@pytest.mark.parametrize("name,kw", LOSS_MODULES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(LOSS_MODULES)])
def test_loss_modules(torch, name, kw):
    rng = rng_for("lossmod", name, str(kw))
    a, b = _np((4, 5), rng), _np((4, 5), rng, -1, 0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings
        tm = getattr(torch.nn, name)(**kw)
    _same_module(torch, getattr(nn, name)(**kw), tm, a, b)


def test_nll_bce_modules(torch):
    rng = rng_for("nllmod")
    logp, tgt, c = _nll_inputs((6, 4), rng, ignore=True)
    tgt[1] = 2
    tgt2 = np.where(tgt == -100, 1, tgt)
    w = rng.uniform(0.5, 2.0, c).astype(np.float32)
    for kw in [{}, dict(ignore_index=2), dict(reduction="sum")]:
        sm = nn.NLLLoss(weight=st.tensor(w), **kw)
        tm = torch.nn.NLLLoss(weight=torch.from_numpy(w), **kw)
        assert list(sm.state_dict()) == list(tm.state_dict()) == ["weight"]
        tg = tgt2 if "ignore_index" in kw else tgt
        run_both(torch, lambda x: sm(x, st.tensor(tg)), lambda x: tm(x, torch.from_numpy(tg)), [logp])
    assert list(nn.NLLLoss().state_dict()) == list(torch.nn.NLLLoss().state_dict()) == []
    p = rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
    t = rng.uniform(0, 1, (3, 4)).astype(np.float32)
    bw = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    sm, tm = nn.BCELoss(weight=st.tensor(bw)), torch.nn.BCELoss(weight=torch.from_numpy(bw))
    assert list(sm.state_dict()) == list(tm.state_dict())
    run_both(torch, sm, tm, [p, t])
    for kw in [{}, dict(pos_weight=bw), dict(weight=bw, pos_weight=bw), dict(weight=bw, reduction="none")]:
        sm = nn.BCEWithLogitsLoss(**{k: (st.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()})
        tm = torch.nn.BCEWithLogitsLoss(**{k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v)
                                           for k, v in kw.items()})
        assert list(sm.state_dict()) == list(tm.state_dict()), kw
        assert [n for n, _ in sm.named_buffers()] == [n for n, _ in tm.named_buffers()]
        assert list(sm.parameters()) == []
        run_both(torch, sm, tm, [p * 6 - 3, t])
    m = nn.BCEWithLogitsLoss(pos_weight=st.tensor(bw))
    assert "pos_weight" in m._buffers and m.pos_weight is m._buffers["pos_weight"]
    assert m.weight is None


def test_cosine_pairwise_modules(torch):
    rng = rng_for("distmod")
    a, b = _np((4, 6), rng), _np((4, 6), rng)
    for args in [(), (0,), (1, 1e-3)]:
        _same_module(torch, nn.CosineSimilarity(*args), torch.nn.CosineSimilarity(*args), a, b)
    for args in [(), (1.0,), (3.0, 1e-3, True)]:
        _same_module(torch, nn.PairwiseDistance(*args), torch.nn.PairwiseDistance(*args), a, b)
    m = nn.CosineEmbeddingLoss(0.2)
    y = np.array([1, -1, -1, 1])
    run_both(torch, lambda p, q: m(p, q, st.tensor(y)),
             lambda p, q: torch.nn.CosineEmbeddingLoss(0.2)(p, q, torch.from_numpy(y)), [a, b])


def test_flatten_unflatten(torch):
    a = _np((2, 3, 4, 5), rng_for("flat"))
    for args in [(), (0,), (1, 2), (-3, -2), (0, -1)]:
        _same_module(torch, nn.Flatten(*args), torch.nn.Flatten(*args), a)
    for dim, sizes in [(1, (3, 1)), (-1, (5, 1)), (2, (2, 2)), (2, (-1, 2)), (0, [1, 2]), (3, (1, 5, 1))]:
        _same_module(torch, nn.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes), a)
    x = make((2, 3, 4), "float32")
    for dim, sizes in [(1, (2, 2)), (1, (-1, -1)), (5, (3,))]:
        assert check_torch(nn.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes), x) is not None
    for bad in [3, (2.0, 3)]:
        with pytest.raises(TypeError):
            torch.nn.Unflatten(1, bad)
        with pytest.raises(TypeError):
            nn.Unflatten(1, bad)


def test_rms_norm_module(torch):
    for ns, kw in [(6, {}), ((3, 6), dict(eps=1e-4)), (6, dict(elementwise_affine=False))]:
        sm, tm = nn.RMSNorm(ns, **kw), torch.nn.RMSNorm(ns, **kw)
        assert [(n, tuple(p.shape)) for n, p in sm.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
        assert list(sm.state_dict()) == list(tm.state_dict())
        if sm.weight is not None:
            assert (sm.weight.detach().numpy() == 1).all() and sm.weight.requires_grad
            with st.no_grad():
                sm.weight.copy_(st.tensor(np.linspace(0.5, 1.5, sm.weight.numel(), dtype=np.float32)
                                          .reshape(sm.weight.shape)))
            with torch.no_grad():
                tm.weight.copy_(torch.from_numpy(sm.weight.detach().numpy()))
        a = _np((2, 3, 6), rng_for("rmsmod", str(ns)))
        _same_module(torch, sm, tm, a)
        if sm.weight is not None:
            s = st.tensor(a)
            sm(s).sum().backward()
            t = torch.from_numpy(a)
            tm(t).sum().backward()
            assert_close(sm.weight.grad, tm.weight.grad, rtol=1e-4, atol=1e-5)
    gm, tg = nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4)
    assert list(gm.state_dict()) == list(tg.state_dict()) and repr(gm) == repr(tg)
    _same_module(torch, gm, tg, _np((3, 4, 5), rng_for("gnmod")))
    assert repr(nn.GroupNorm(1, 3, affine=False)) == repr(torch.nn.GroupNorm(1, 3, affine=False))
    gb, tgb = nn.GroupNorm(1, 3, bias=False), torch.nn.GroupNorm(1, 3, bias=False)
    assert repr(gb) == repr(tgb) and list(gb.state_dict()) == list(tgb.state_dict()) == ["weight"]
    with pytest.raises(ValueError):
        nn.GroupNorm(3, 4)


def _names(m):
    return [n for n, _ in m.named_parameters()], list(m.state_dict())


def test_parameter_list(torch):
    rng = rng_for("plist")
    arrs = [rng.standard_normal(s).astype(np.float32) for s in [(3,), (2, 2), (4,)]]
    sl = nn.ParameterList([st.tensor(arrs[0]), nn.Parameter(st.tensor(arrs[1]))])
    tl = torch.nn.ParameterList([torch.from_numpy(arrs[0]), torch.nn.Parameter(torch.from_numpy(arrs[1]))])
    sl.append(st.tensor(arrs[2]))
    tl.append(torch.from_numpy(arrs[2]))
    assert len(sl) == 3 and all(isinstance(p, nn.Parameter) and p.requires_grad for p in sl)
    assert _names(sl) == _names(tl) == (["0", "1", "2"], ["0", "1", "2"])
    assert repr(sl) == repr(tl).replace("torch.", "symtrace.")
    assert sl[-1] is sl[2] and len(sl[1:]) == 2 and sl[1:][0] is sl[1]
    with pytest.raises(IndexError):
        sl[3]
    sl.extend([st.zeros(1)])
    sl += [st.ones(2)]
    assert len(sl) == 5 and _names(sl)[0] == ["0", "1", "2", "3", "4"]
    with pytest.raises(TypeError):
        sl.extend(st.zeros(2))
    sl[0] = st.full((3,), 2.0)
    assert isinstance(sl[0], nn.Parameter) and sl[0].detach().numpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError):
        sl(st.zeros(1))

    # inside a model: named, saved, loaded and optimized like any parameter
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(st.tensor(a)) for a in arrs])
            self.lin = nn.Linear(2, 2)

    class TM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = torch.nn.ParameterList([torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrs])
            self.lin = torch.nn.Linear(2, 2)
    ms, mt = M(), TM()
    assert _names(ms) == _names(mt)
    assert _names(ms)[0] == ["ws.0", "ws.1", "ws.2", "lin.weight", "lin.bias"]
    sd = ms.state_dict()
    m2 = M()
    with st.no_grad():
        for p in m2.ws:
            p.fill_(0.0)
    m2.load_state_dict(sd)
    assert np.array_equal(m2.ws[1].detach().numpy(), arrs[1])
    opt = st.optim.SGD(ms.parameters(), lr=0.5)
    loss = sum((p * p).sum() for p in ms.ws)
    loss.backward()
    opt.step()
    np.testing.assert_allclose(ms.ws[0].detach().numpy(), arrs[0] * 0.0, atol=1e-6)  # p - 0.5 * 2p
    c = copy.deepcopy(ms)
    assert _names(c) == _names(ms) and c.ws[2] is not ms.ws[2]


def test_parameter_dict(torch):
    rng = rng_for("pdict")
    arrs = {k: rng.standard_normal(s).astype(np.float32) for k, s in [("b", (3,)), ("a", (2, 2)), ("c", (1,))]}
    # a plain dict is taken in sorted key order; an OrderedDict in its order (torch)
    sd = nn.ParameterDict({k: st.tensor(v) for k, v in arrs.items()})
    td = torch.nn.ParameterDict({k: torch.from_numpy(v) for k, v in arrs.items()})
    assert _names(sd) == _names(td) == (["a", "b", "c"], ["a", "b", "c"])
    assert repr(sd) == repr(td).replace("torch.", "symtrace."), (repr(sd), repr(td))
    so = nn.ParameterDict(OrderedDict((k, st.tensor(v)) for k, v in arrs.items()))
    to = torch.nn.ParameterDict(OrderedDict((k, torch.from_numpy(v)) for k, v in arrs.items()))
    assert _names(so) == _names(to) == (["b", "a", "c"], ["b", "a", "c"])
    assert list(so.keys()) == ["b", "a", "c"] and "a" in so and "z" not in so and len(so) == 3
    assert all(isinstance(v, nn.Parameter) for v in so.values())
    so["z"] = st.zeros(2)
    to["z"] = torch.zeros(2)
    assert _names(so) == _names(to)
    p = so.pop("a")
    to.pop("a")
    assert isinstance(p, nn.Parameter) and _names(so) == _names(to)
    so.update([("y", st.ones(1))])
    to.update([("y", torch.ones(1))])
    assert _names(so) == _names(to) and so.get("nope") is None
    with pytest.raises(TypeError):
        so[1] = st.zeros(1)
    with pytest.raises(ValueError):
        so.update([("a", st.ones(1), 3)])
    with pytest.raises(RuntimeError):
        so(st.zeros(1))
    assert list((so | nn.ParameterDict({"q": st.zeros(1)})).keys()) == list(so.keys()) + ["q"]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ParameterDict({"left": st.ones(3), "right": st.ones(3)})

        def forward(self, x):
            return (x * self.heads["left"]).sum() + (x * self.heads["right"] * 2).sum()

    class TM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = torch.nn.ParameterDict({"left": torch.ones(3), "right": torch.ones(3)})
    m = M()
    assert _names(m) == _names(TM()) == (["heads.left", "heads.right"], ["heads.left", "heads.right"])
    m(st.tensor([1.0, 2.0, 3.0])).backward()
    assert m.heads["left"].grad.numpy().tolist() == [1.0, 2.0, 3.0]
    assert m.heads["right"].grad.numpy().tolist() == [2.0, 4.0, 6.0]


def test_exports():
    for name in ["SiLU", "Mish", "Softplus", "LeakyReLU", "ELU", "Hardtanh", "ReLU6", "GLU", "LogSigmoid",
                 "Softmin", "NLLLoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
                 "KLDivLoss", "CosineSimilarity", "Flatten", "Unflatten", "RMSNorm", "ParameterList",
                 "ParameterDict", "GroupNorm", "PairwiseDistance", "CosineEmbeddingLoss"]:
        assert issubclass(getattr(nn, name), nn.Module), name
    for name in ["silu", "mish", "softplus", "logsigmoid", "leaky_relu", "elu", "selu", "celu", "hardtanh",
                 "relu6", "hardsigmoid", "hardswish", "glu", "softmin", "softsign", "tanhshrink", "nll_loss",
                 "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "kl_div", "normalize", "cosine_similarity",
                 "pairwise_distance", "pad", "one_hot", "rms_norm", "group_norm", "cosine_embedding_loss"]:
        assert callable(getattr(F, name)), name


# ---------------------------------------------------------------- compiled
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.norm = nn.RMSNorm(16)
        self.act = nn.SiLU()
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x, target, y):
        out = self.fc2(self.act(self.norm(self.fc1(x))))
        return F.nll_loss(F.log_softmax(out, 1), target) + F.l1_loss(out, y)


def test_compiled_training_matches_eager():
    st.manual_seed(0)
    me = _Net()
    mc = copy.deepcopy(me)
    st.reset()
    cm = st.compile(mc)
    oe = st.optim.SGD(me.parameters(), lr=0.1)
    oc = st.optim.SGD(mc.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    batches = []
    for step in range(3):
        x = st.tensor(rng.standard_normal((6, 8)).astype(np.float32))
        t = st.tensor(rng.integers(0, 5, 6))
        t = st.where(st.arange(6) == 2, -100, t)  # an ignored target
        y = st.tensor(rng.standard_normal((6, 5)).astype(np.float32))
        batches.append((x, t, y))
        losses = []
        for m, o in ((me, oe), (cm, oc)):
            o.zero_grad()
            loss = m(x, t, y)
            loss.backward()
            o.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, err_msg=f"step {step}")
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    # the compiled steps ran one captured graph: translated once, then cache hits
    stats = st._C._fe_stats()
    assert stats["translations"] == 1 and stats["graphs"] == 1 and stats["hits"] == 2, stats
    assert stats["breaks"] == 0 and stats["fallbacks"] == 0, stats
    e = st.explain(mc, *batches[0])
    assert e.graph_break_count == 0 and e.graph_count == 1, str(e)
    assert e.ops_per_graph[0] > 10
    np.testing.assert_allclose(e.out.item(), mc(*batches[0]).item(), rtol=1e-6)


def _fns_for_explain():
    rng = np.random.default_rng(3)
    y = st.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    p = st.tensor(rng.uniform(0.1, 0.9, (4, 6)).astype(np.float32))
    t = st.tensor(rng.integers(0, 6, 4))
    w = st.tensor(rng.uniform(0.5, 1.5, 6).astype(np.float32))
    acts = [F.silu, F.mish, F.softplus, F.logsigmoid, F.leaky_relu, F.elu, F.selu, F.celu, F.hardtanh, F.relu6,
            F.hardsigmoid, F.hardswish, F.glu, F.softsign, F.tanhshrink, lambda z: F.softmin(z, 1)]
    return {
        "activations": lambda x: sum(f(x).sum() for f in acts),
        "nll": lambda x: F.nll_loss(F.log_softmax(x, 1), t, weight=w, ignore_index=2),
        "losses": lambda x: (F.l1_loss(x, y) + F.smooth_l1_loss(x, y, beta=0.5) + F.huber_loss(x, y)
                             + F.binary_cross_entropy(x.sigmoid(), p)
                             + F.binary_cross_entropy_with_logits(x, p, pos_weight=w)
                             + F.kl_div(x, p, reduction="batchmean")),
        "norms": lambda x: (F.normalize(x).sum() + F.cosine_similarity(x, y).sum()
                            + F.pairwise_distance(x, y).sum() + F.rms_norm(x, (6,), w).sum()
                            + F.group_norm(x.reshape(2, 6, 2), 3).sum()),
        "pad": lambda x: (F.pad(x, (1, -2, 2, 1), value=0.5).sum()
                          + F.pad(x.reshape(1, 4, 6), (2, 1), mode="reflect").sum()
                          + F.pad(x.reshape(1, 4, 6), (2, 1), mode="circular").sum()
                          + F.pad(x.reshape(1, 4, 6), (2, 1, 1, 1), mode="replicate").sum()),
        "one_hot": lambda x: (x * F.one_hot(t, 6)).sum(),
    }


@pytest.mark.parametrize("name", list(_fns_for_explain()))
def test_functions_compile_without_breaks(name):
    """Each new function is captured whole (no value-dependent Python) and the
    compiled forward and backward agree with eager."""
    fn = _fns_for_explain()[name]
    a = np.random.default_rng(4).standard_normal((4, 6)).astype(np.float32)
    e = st.explain(fn, st.tensor(a))
    assert e.graph_break_count == 0 and e.graph_count == 1, str(e)
    xe, xc = st.tensor(a, requires_grad=True), st.tensor(a, requires_grad=True)
    le, lc = fn(xe), st.compile(fn)(xc)
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    le.backward()
    lc.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---------------- scaled_dot_product_attention(enable_gqa=True) ----------------
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("hq,hk", [(4, 2), (6, 1), (4, 4)])
def test_sdpa_grouped_query_attention(torch, hq, hk, causal):
    rng = np.random.default_rng(hq * 10 + hk)
    q, k, v = (rng.standard_normal((2, h, 5, 8)).astype(np.float32) for h in (hq, hk, hk))
    sq, sk, sv = (st.tensor(a, requires_grad=True) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    so = F.scaled_dot_product_attention(sq, sk, sv, is_causal=causal, enable_gqa=True)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=True)
    assert_close(so.detach(), to.detach())
    w = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    (so * st.tensor(w)).sum().backward()
    (to * torch.from_numpy(w)).sum().backward()
    for s, t in ((sq, tq), (sk, tk), (sv, tv)):
        assert_close(s.grad, t.grad, atol=1e-5)


def test_sdpa_gqa_bad_heads():
    q, k = st.randn(1, 4, 3, 8), st.randn(1, 3, 3, 8)
    with pytest.raises(RuntimeError, match="multiple"):
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
