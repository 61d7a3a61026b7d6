"""The torch functions and Tensor methods added in symtrace/_nn_top.py and
symtrace/_torch_more.py against torch: the top-level aliases of functional ops (torch's
positional signatures, int reductions, embedding_bag's four outputs), the window functions,
asarray, frombuffer, gradient, range, the top-level in-place functions, the unsafe splits,
nonzero_static, cond, vmap, the settings (warn-always, flush-denormal, the legacy autocast
setters as symtrace.autocast sees them), sym_*, and the methods new, resize_, resize_as_,
pin_memory, is_pinned, share_memory_, is_shared, hardshrink, prelu and slice_inverse. A table
of cases compares values, dtypes, shapes and the gradients of every float input; a table of
bad calls compares exception types and messages; a compiled function using windows,
gradient and the aliases is compared with eager. The tests at the end run without torch."""
import math
import warnings

import numpy as np
import pytest

import symtrace as st
from conftest import dtype_name
from tensor_data import cycle_weights, raises_as_torch, to_numpy

RS = np.random.RandomState(11)
X = RS.uniform(-2, 2, (3, 4))
X4 = RS.uniform(-2, 2, (2, 3, 4, 5))
V = RS.uniform(-2, 2, 6)
POS = RS.uniform(0.2, 2, (3, 4))
PROB = RS.uniform(0.05, 0.95, (3, 4))
SIGN = np.array([1., -1., 1.])


class Case:
    """inputs: (array, dtype name) pairs, made into tensors of both libraries; fn(L, *xs);
    grad: every float input requires grad and the gradients are compared too."""
    def __init__(self, inputs, fn, grad=False, tol=None):
        self.inputs, self.fn, self.grad, self.tol = inputs, fn, grad, tol


def f32(*arrays):
    return [(a, "float32") for a in arrays]


def f64(*arrays):
    return [(a, "float64") for a in arrays]


def i64(*arrays):
    return [(np.asarray(a), "int64") for a in arrays]


def flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in flat(x)]
    return [out]


def _clone_ip(L, x, name, *args):
    return getattr(L, name)(x.detach().clone(), *args)


CASES = {
    # dropout: the deterministic cases (train False, p 0 or 1)
    "dropout_eval": Case(f32(X), lambda L, x: (L.dropout(x, 0.3, False), L.feature_dropout(x, 0.3, False),
                                               L.alpha_dropout(x, 0.2, False),
                                               L.feature_alpha_dropout(x, 0.2, False)), grad=True),
    "dropout_p1": Case(f32(X), lambda L, x: (L.dropout(x, 1., True), L.feature_dropout(x, 1., True),
                                             L.alpha_dropout(x, 1., True), L.feature_alpha_dropout(x, 1., True)),
                       grad=True),
    "dropout_p0": Case(f64(X), lambda L, x: (L.dropout(x, 0., True), L.feature_dropout(x, 0., True)), grad=True),
    "dropout_inplace": Case(f32(X), lambda L, x: (_clone_ip(L, x, "dropout_", 1., True),
                                                  _clone_ip(L, x, "feature_dropout_", 0.5, False),
                                                  _clone_ip(L, x, "alpha_dropout_", 1., True),
                                                  _clone_ip(L, x, "feature_alpha_dropout_", 0.5, False))),
    # activations
    "celu_selu": Case(f32(X), lambda L, x: (L.celu(x), L.celu(x, 0.7), L.selu(x)), grad=True),
    "rrelu_eval": Case(f64(X), lambda L, x: (L.rrelu(x), L.rrelu(x, 0.1, 0.3)), grad=True),
    "threshold": Case(f32(X), lambda L, x: L.threshold(x, 0.1, 20.), grad=True),
    "prelu": Case(f32(X4, np.array([0.1, -0.2, 0.3])), lambda L, x, w: (L.prelu(x, w), x.prelu(w)), grad=True),
    "hardshrink": Case(f64(X), lambda L, x: (L.hardshrink(x), L.hardshrink(x, 1.0), x.hardshrink(0.3)), grad=True),
    "act_inplace": Case(f32(X), lambda L, x: (_clone_ip(L, x, "celu_", 0.5), _clone_ip(L, x, "selu_"),
                                              _clone_ip(L, x, "rrelu_", 0.2, 0.4),
                                              _clone_ip(L, x, "threshold_", 0.5, -3.))),
    # padding, convolution
    "constant_pad_nd": Case(f32(X), lambda L, x: (L.constant_pad_nd(x, [1, 2, -1, 1], 1.5),
                                                  L.constant_pad_nd(x, (2, 0))), grad=True),
    "conv3d": Case(f32(RS.uniform(-1, 1, (2, 2, 4, 4, 3)), RS.uniform(-1, 1, (3, 2, 2, 2, 2)), RS.uniform(-1, 1, 3)),
                   lambda L, x, w, b: (L.conv3d(x, w, b, 1, 1), L.conv3d(x, w, None, (2, 1, 1), "valid")),
                   grad=True, tol=1e-5),
    "conv_transpose3d": Case(f32(RS.uniform(-1, 1, (1, 2, 3, 2, 3)), RS.uniform(-1, 1, (2, 3, 2, 2, 2)),
                                 RS.uniform(-1, 1, 3)),
                             lambda L, x, w, b: L.conv_transpose3d(x, w, b, 2, 1, 1), grad=True, tol=1e-5),
    "convolution_1d_2d": Case(f32(RS.uniform(-1, 1, (2, 4, 7)), RS.uniform(-1, 1, (2, 2, 3)), RS.uniform(-1, 1, 2)),
                              lambda L, x, w, b: L.convolution(x, w, b, [2], [1], [1], False, [0], 2),
                              grad=True, tol=1e-5),
    "convolution_transposed": Case(f32(RS.uniform(-1, 1, (1, 2, 3, 4)), RS.uniform(-1, 1, (2, 3, 2, 2)), V[:3]),
                                   lambda L, x, w, b: L.convolution(x, w, b, [2, 2], [1, 0], [1, 1], True, [1, 1], 1),
                                   grad=True, tol=1e-5),
    # distances
    "distances": Case(f32(X, POS), lambda L, a, b: (L.cosine_similarity(a, b), L.cosine_similarity(a, b, 0, 1e-6),
                                                    L.pairwise_distance(a, b), L.pairwise_distance(a, b, 1.5, 1e-5, True),
                                                    L.pdist(a), L.pdist(a, 1.5)), grad=True, tol=1e-5),
    "bilinear": Case(f64(X[:, :3], POS, RS.uniform(-1, 1, (2, 3, 4)), V[:2]),
                     lambda L, a, b, w, bias: (L.bilinear(a, b, w, bias), L.bilinear(a, b, w)), grad=True),
    # embeddings
    "embedding": Case([(RS.uniform(-1, 1, (6, 3)), "float32"), (np.array([[1, 4], [4, 0]]), "int64")],
                      lambda L, w, i: (L.embedding(w, i), L.embedding(w, i, 4), L.embedding(w, i, -1, True)), grad=True),
    "embedding_bag_modes": Case([(RS.uniform(-1, 1, (10, 3)), "float32"), (np.array([1, 2, 4, 5, 4, 3, 2, 9]), "int64"),
                                 (np.array([0, 4]), "int64")],
                                lambda L, w, i, o: (L.embedding_bag(w, i, o), L.embedding_bag(w, i, o, False, 1),
                                                    L.embedding_bag(w, i, o, False, 2)), grad=True),
    "embedding_bag_options": Case([(RS.uniform(-1, 1, (10, 3)), "float64"),
                                   (np.array([1, 2, 4, 5, 4, 3, 2, 9]), "int64"), (np.array([0, 3, 8]), "int64"),
                                   (RS.uniform(0, 1, 8), "float64")],
                                  lambda L, w, i, o, p: (L.embedding_bag(w, i, o, False, 0, False, p, True),
                                                         L.embedding_bag(w, i, o[:2], False, 1, False, None, False, 2),
                                                         L.embedding_bag(w, i, o[:2], False, 0, False, None, False, 4),
                                                         L.embedding_bag(w, i, o, False, 2, False, None, True, -1)),
                                  grad=True),
    "embedding_bag_no_grad": Case([(RS.uniform(-1, 1, (10, 3)), "float32"), (np.array([1, 2, 4, 5, 4, 3, 2, 9]), "int64"),
                                   (np.array([0, 3, 8]), "int64")],
                                  lambda L, w, i, o: [L.embedding_bag(w, i, o, False, m, False, None, ilo, pad)
                                                      for m in (0, 1, 2) for ilo in (False, True) for pad in (None, 2)]),
    # normalization
    "norms": Case(f32(X4, V[:3], V[3:]),
                  lambda L, x, w, b: (L.group_norm(x, 3, w, b, 1e-4), L.group_norm(x, 1),
                                      L.layer_norm(x, [5], w.repeat(2)[:5], b.repeat(2)[:5]),
                                      L.layer_norm(x, (4, 5)), L.rms_norm(x, [5], w.repeat(2)[:5], 1e-6),
                                      L.rms_norm(x, [4, 5])), grad=True, tol=2e-5),
    # losses, the three reductions
    "bce_logits": Case(f32(X, PROB, POS, POS[0]),
                       lambda L, x, t, w, pw: [L.binary_cross_entropy_with_logits(x, t, w.detach(), pw.detach(), r) for r in (0, 1, 2)]
                       + [L.binary_cross_entropy_with_logits(x, t)], grad=True, tol=1e-5),
    "cosine_embedding_loss": Case(f32(X, POS, SIGN),
                                  lambda L, a, b, y: [L.cosine_embedding_loss(a, b, y.detach(), 0.1, r) for r in (0, 1, 2)]
                                  + [L.cosine_embedding_loss(a, b, y.detach())], grad=True, tol=1e-5),
    "hinge_embedding_loss": Case(f64(X, np.sign(X)),
                                 lambda L, x, y: [L.hinge_embedding_loss(x, y.detach(), 0.5, r) for r in (0, 1, 2)]
                                 + [L.hinge_embedding_loss(x, y.detach())], grad=True),
    "kl_div": Case(f64(X, PROB),
                   lambda L, x, t: [L.kl_div(x, t, r) for r in (0, 1, 2)]
                   + [L.kl_div(x, t.log(), 2, log_target=True), L.kl_div(x, t)], grad=True),
    "margin_ranking_loss": Case(f32(V[:3], POS[:, 0], SIGN),
                                lambda L, a, b, y: [L.margin_ranking_loss(a, b, y.detach(), 0.3, r) for r in (0, 1, 2)]
                                + [L.margin_ranking_loss(a, b, y.detach())], grad=True),
    "poisson_nll_loss": Case(f64(X, POS),
                             lambda L, x, t: (L.poisson_nll_loss(x, t, True, False, 1e-8, 0),
                                              L.poisson_nll_loss(x.abs(), t, False, True, 1e-6, 1),
                                              L.poisson_nll_loss(x, t, True, True, 1e-8, 2)), grad=True),
    "triplet_margin_loss": Case(f32(X, POS, X[::-1].copy()),
                                lambda L, a, p, n: [L.triplet_margin_loss(a, p, n, 0.5, 1.5, 1e-6, s, r)
                                                    for r in (0, 1, 2) for s in (False, True)]
                                + [L.triplet_margin_loss(a, p, n)], grad=True, tol=1e-5),
    # deprecated norms
    "norm_except_dim": Case(f64(RS.uniform(-1, 1, (2, 3, 4))),
                            lambda L, v: (L.norm_except_dim(v), L.norm_except_dim(v, 2, 1), L.norm_except_dim(v, 3, 2),
                                          L.norm_except_dim(v, 2, -1), L.norm_except_dim(v, 1, -2)), grad=True),
    "frobenius_norm": Case(f32(RS.uniform(-1, 1, (2, 3, 4))),
                           lambda L, x: (L.frobenius_norm(x, 1), L.frobenius_norm(x, (0, 2), True),
                                         L.frobenius_norm(x, [-1])), grad=True, tol=1e-5),
    "nuclear_norm": Case(f64(RS.uniform(-1, 1, (2, 3, 4))),
                         lambda L, x: (L.nuclear_norm(x[0]), L.nuclear_norm(x[1], True), L.nuclear_norm(x, (1, 2)),
                                       L.nuclear_norm(x, [0, 2], True)), grad=True, tol=1e-9),
    # gradient
    "gradient_uniform": Case(f32(X), lambda L, x: (L.gradient(x), L.gradient(x, spacing=2.), L.gradient(x, spacing=[2., 3.]),
                                                   L.gradient(x, dim=1), L.gradient(x, dim=[-1, 0], spacing=[0.5, 4])),
                             grad=True, tol=1e-5),
    "gradient_edge2": Case(f64(X4[0]), lambda L, x: (L.gradient(x, edge_order=2),
                                                     L.gradient(x, spacing=1.5, dim=(0, 2), edge_order=2)), grad=True),
    "gradient_coords": Case(f64(X4[0], np.array([0., 1., 3.]), np.array([0., .5, 2., 2.5])),
                            lambda L, x, c0, c1: (L.gradient(x, spacing=[c0], dim=0),
                                                  L.gradient(x, spacing=[c0, c1], dim=[0, 1], edge_order=2),
                                                  L.gradient(x, spacing=(c1,), dim=-2)), grad=True),
    "gradient_int": Case(i64([1, 4, 9, 16, 25]), lambda L, x: (L.gradient(x), L.gradient(x, spacing=2, edge_order=2))),
    "gradient_short_coords": Case(f32(X, np.array([0., 1.])), lambda L, x, c: L.gradient(x, spacing=[c], dim=0)),
    # in place, splits, nonzero_static
    "inplace_top": Case(f32(X, POS),
                        lambda L, x, y: (L.ldexp_(x.detach().clone(), y.detach().round()),
                                         L.erfc_(x.detach().clone()), L.i0_(x.detach().clone()),
                                         L.detach_(x.detach().clone()), L.detach_(x.detach().requires_grad_()))),
    "gcd_lcm_": Case(i64([[12, 18, -4], [7, 0, 9]], [[8, 27, 6], [3, 5, 0]]),
                     lambda L, a, b: (L.gcd_(a.clone(), b), L.lcm_(a.clone(), b))),
    "unsafe_splits": Case(f32(X), lambda L, x: (L.unsafe_split(x, 3, 1), x.unsafe_split(2), L.unsafe_chunk(x, 2, -1),
                                                x.unsafe_chunk(3), L.unsafe_split_with_sizes(x, [1, 3], 1),
                                                x.unsafe_split_with_sizes([2, 1])), grad=True),
    "nonzero_static": Case(i64([[0, 1, 0], [2, 0, 3]]),
                           lambda L, x: (L.nonzero_static(x, size=2), L.nonzero_static(x, size=5),
                                         x.nonzero_static(size=4, fill_value=7), L.nonzero_static(x, size=0),
                                         L.nonzero_static(x[0, 0], size=2))),
    # methods
    "slice_inverse": Case(f32(V), lambda L, b: b[1:4].slice_inverse(b, 0, 1, 4) * 1),
    "resize_shrink": Case(f32(V), lambda L, b: (b.clone().resize_(2, 2), b.clone().resize_((5,)),
                                                b.clone()[1:].resize_(2, 2), b.clone().reshape(2, 3).t().resize_(2, 2),
                                                b.clone().resize_as_(L.ones(1, 3)), b.clone().resize_(2, 3),
                                                b.clone().resize_(0))),
    "new_data": Case(f32(X), lambda L, x: (x.new([1, 2]), x.new([[1.5], [2]]), x.new(np.arange(3)), x.new(),
                                           x.new(x) * 1)),
    "cond": Case(f32(X, POS), lambda L, x, y: (L.cond(True, lambda a, b: a + b, lambda a, b: a - b, (x, y)),
                                               L.cond(L.tensor(0), lambda a, b: a + b, lambda a, b: a * b, [x, y]),
                                               L.cond(x.sum() > 100, lambda a: a.sin(), lambda a: a.cos(), (x,))),
                 grad=True),
}

TOL = {"float32": 2e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}


def run(L, case):
    xs = []
    for a, dt in case.inputs:
        a = np.asarray(a)
        x = L.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a, dtype=getattr(L, dt))
        if case.grad and x.dtype.is_floating_point:
            x.requires_grad_(True)
        xs.append(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = flat(case.fn(L, *xs))
    grads = None
    if case.grad:
        loss = None
        for v in outs:
            if isinstance(v, L.Tensor) and v.dtype.is_floating_point and v.requires_grad:
                term = (v * L.tensor(cycle_weights(tuple(v.shape)), dtype=v.dtype)).sum()
                loss = term if loss is None else loss + term
        loss.backward()
        grads = [None if x.grad is None else to_numpy(L.zeros_like(x) + x.grad) for x in xs]
    return outs, grads


def compare(name, so, to, torch, tol=None):
    assert len(so) == len(to), name
    for k, (a, b) in enumerate(zip(so, to)):
        what = f"{name} output {k}"
        if not isinstance(b, torch.Tensor):
            assert a == b, what
            continue
        assert dtype_name(a.dtype) == dtype_name(b.dtype), f"{what}: dtype {a.dtype} vs {b.dtype}"
        assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        if a.dtype.is_floating_point:
            t = tol or TOL[dtype_name(a.dtype)]
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=t, atol=t, equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name, torch):
    case = CASES[name]
    so, sg = run(st, case)
    to, tg = run(torch, case)
    compare(name, so, to, torch, case.tol)
    if case.grad:
        for k, (a, b) in enumerate(zip(sg, tg)):
            assert (a is None) == (b is None), f"{name}: grad of input {k} is {a} vs {b}"
            if a is not None:
                tol = case.tol or TOL[case.inputs[k][1]]
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{name}: grad {k}")


# ---------------------------------------------------------------- windows and range
WINDOWS = [("hann_window", ()), ("hamming_window", ()), ("hamming_window", (True, 0.5)),
           ("hamming_window", (False, 0.5, 0.3)), ("blackman_window", ()), ("bartlett_window", ()),
           ("kaiser_window", ()), ("kaiser_window", (False, 5.0)), ("kaiser_window", (True, 0.5))]


@pytest.mark.parametrize("name,args", WINDOWS)
def test_windows_as_torch(name, args, torch):
    for n in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            a = args if args else (periodic,)
            for dt in ("float32", "float64"):
                s = getattr(st, name)(n, *a, dtype=getattr(st, dt))
                t = getattr(torch, name)(n, *a, dtype=getattr(torch, dt))
                compare(f"{name}{(n,) + a} {dt}", [s], [t], torch, 2e-6 if dt == "float32" else 1e-12)
    s, t = getattr(st, name)(6, requires_grad=True), getattr(torch, name)(6, requires_grad=True)
    assert s.requires_grad and s.is_leaf and t.requires_grad and s.dtype is st.float32
    compare(name, [s], [t], torch, 2e-6)


def test_range_as_torch(torch):
    for args, kw in [((0, 3), {}), ((0, 1, 0.25), {}), ((0, 3), {"dtype": "int64"}), ((5, -1, -2), {}),
                     ((1, 2.5, 0.5), {"dtype": "float64"}), ((-1, 1, 0.3), {})]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = st.range(*args, **{k: getattr(st, v) for k, v in kw.items()})
        assert any("torch.range is deprecated" in str(x.message) for x in w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.range(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        compare(f"range{args}", [s], [t], torch, 1e-7)


# ---------------------------------------------------------------- asarray, frombuffer
def test_asarray_tensor_semantics(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for L in (st, torch):
            t = L.arange(6.)
            assert L.asarray(t) is t
            c = L.asarray(t, copy=True)
            assert c.data_ptr() != t.data_ptr() and c.tolist() == t.tolist()
            d = L.asarray(t, dtype=L.float64)
            assert d.dtype is L.float64 and d.tolist() == t.tolist()
            r = L.ones(2, requires_grad=True)
            assert L.asarray(r) is r and L.asarray(r).requires_grad
            assert not L.asarray(r, requires_grad=False).requires_grad
            assert L.asarray(r, copy=True).grad_fn is None and L.asarray(r, dtype=L.float64).grad_fn is None
            g = L.asarray(t, requires_grad=True)
            assert g.requires_grad and g.is_leaf
    raises_as_torch(lambda L: L.asarray(L.arange(3.), copy=False, dtype=L.float64), torch)
    raises_as_torch(lambda L: L.asarray([1, 2], copy=False), torch)


def test_asarray_numpy_and_sequences(torch):
    for L in (st, torch):
        a = np.arange(3.)
        x = L.asarray(a)
        a[0] = 7.                 # shares numpy's memory
        assert x.dtype is L.float64 and x.tolist() == [7., 1., 2.]
        y = L.asarray(a, copy=True)
        a[1] = 9.
        assert y.tolist() == [7., 1., 2.]
        z = L.asarray(a, dtype=L.float32)
        assert z.dtype is L.float32 and z.tolist() == [7., 9., 2.]
        assert L.asarray([1, 2.5]).dtype is L.float32 and L.asarray([1, 2]).dtype is L.int64
        assert L.asarray(3).shape == () and L.asarray(3.).dtype is L.float32
        assert L.asarray(np.float32(2.5)).item() == 2.5
        assert L.asarray(np.arange(2.), requires_grad=True).requires_grad
        ba = bytearray(np.array([1., 2.], dtype=np.float32).tobytes())
        assert L.asarray(ba).tolist() == [1., 2.]
    raises_as_torch(lambda L: L.asarray(np.arange(3.), copy=False, dtype=L.float32), torch)


def test_frombuffer_as_torch(torch):
    for L in (st, torch):
        ba = bytearray(np.array([1., 2., 3.], dtype=np.float32).tobytes())
        t = L.frombuffer(ba, dtype=L.float32)
        ba[0:4] = np.array([5.], dtype=np.float32).tobytes()      # shares the buffer's memory
        assert t.tolist() == [5., 2., 3.]
        t[1] = 8.
        assert np.frombuffer(bytes(ba), dtype=np.float32).tolist() == [5., 8., 3.]
        assert L.frombuffer(ba, dtype=L.float32, count=1, offset=4).tolist() == [8.]
        assert L.frombuffer(ba, dtype=L.int32, count=-1).tolist() == np.frombuffer(bytes(ba), np.int32).tolist()
        assert L.frombuffer(bytearray(b"\x01\x00\x00\x00\x00\x00\x00\x00"), dtype=L.int64).tolist() == [1]
        assert L.frombuffer(ba, dtype=L.float32, requires_grad=True).requires_grad
    ba = bytearray(8)
    for kw in ({"offset": 9}, {"offset": 1}, {"count": 3}, {"offset": -1}, {"count": 0}):
        raises_as_torch(lambda L: L.frombuffer(ba, dtype=L.float32, **kw), torch)
    raises_as_torch(lambda L: L.frombuffer(b"", dtype=L.float32), torch)
    raises_as_torch(lambda L: L.frombuffer([1, 2], dtype=L.float32), torch)


# ---------------------------------------------------------------- methods
def test_new_as_torch(torch):
    for L in (st, torch):
        x = L.arange(4.)
        assert x.new().shape == (0,) and x.new().dtype is L.float32
        assert x.new(2, 3).shape == (2, 3) and x.new(L.Size([2])).shape == (2,)
        assert x.new((2, 3)).tolist() == [2., 3.]
        assert x.new(3, device="cpu").shape == (3,)
        assert x.new(x).data_ptr() == x.data_ptr()
        assert L.arange(3).new([1.7]).dtype is L.int64
    raises_as_torch(lambda L: L.arange(3.).new(2.5), torch)


def test_resize_as_torch(torch):
    for L in (st, torch):
        y = L.arange(6.)
        assert y.resize_(2, 2) is y and y.tolist() == [[0., 1.], [2., 3.]] and y.stride() == (2, 1)
        assert y.resize_(2, 3).tolist() == [[0., 1., 2.], [3., 4., 5.]]   # back within the storage
        z = L.arange(6.)[2:]
        assert z.resize_(2, 2).tolist() == [[2., 3.], [4., 5.]] and z.storage_offset() == 2
    raises_as_torch(lambda L: L.ones(3, requires_grad=True).resize_(2), torch)


def test_memory_queries(torch):
    x = st.ones(3)
    assert not x.is_pinned() and not torch.ones(3).is_pinned()
    if not st.cuda.is_available():
        raises_as_torch(lambda L: L.ones(3).pin_memory(), torch)
    assert x.share_memory_() is x and not x.is_shared()     # symtrace has no shared storages


# ---------------------------------------------------------------- settings, sym_*, vmap, cond
@pytest.fixture
def restore_autocast():
    saved = [st._C._get_autocast(d) for d in ("cpu", "cuda")], st.is_autocast_cache_enabled()
    yield
    for d, (on, dt) in zip(("cpu", "cuda"), saved[0]):
        st._C._set_autocast(d, on, dt)
    st.set_autocast_cache_enabled(saved[1])


def test_autocast_settings_as_torch(torch, restore_autocast):
    tsaved = (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"), torch.is_autocast_enabled("cuda"),
              torch.get_autocast_dtype("cuda"))
    try:
        for L in (st, torch):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                assert L.is_autocast_cpu_enabled() is False
                assert L.get_autocast_cpu_dtype() is L.bfloat16 and L.get_autocast_gpu_dtype() is L.float16
                L.set_autocast_cpu_dtype(L.float16)
                assert L.get_autocast_dtype("cpu") is L.float16
                L.set_autocast_cpu_enabled(True)
                assert L.is_autocast_enabled("cpu") and L.is_autocast_cpu_enabled()
                L.set_autocast_cpu_enabled(False)
                L.set_autocast_gpu_dtype(L.bfloat16)
                assert L.get_autocast_dtype("cuda") is L.bfloat16
            assert sum(issubclass(x.category, DeprecationWarning) for x in w) == 8
            L.set_autocast_enabled("cpu", True)
            assert L.is_autocast_enabled("cpu")
            L.set_autocast_enabled("cpu", False)
            L.set_autocast_enabled(True)
            assert L.is_autocast_enabled()
            L.set_autocast_enabled(False)
            L.set_autocast_dtype("cpu", L.bfloat16)
            L.set_autocast_dtype("cuda", L.float16)
            assert L.is_autocast_cache_enabled()
            L.set_autocast_cache_enabled(False)
            assert not L.is_autocast_cache_enabled()
            with L.autocast("cpu", cache_enabled=True):
                assert L.is_autocast_cache_enabled()
            assert not L.is_autocast_cache_enabled()
            L.set_autocast_cache_enabled(True)
            L.clear_autocast_cache()
    finally:
        torch.set_autocast_enabled("cpu", tsaved[0])
        torch.set_autocast_dtype("cpu", tsaved[1])
        torch.set_autocast_enabled("cuda", tsaved[2])
        torch.set_autocast_dtype("cuda", tsaved[3])
    raises_as_torch(lambda L: L.set_autocast_cache_enabled(1), torch)
    raises_as_torch(lambda L: L.set_autocast_enabled("cpu", 1), torch)
    raises_as_torch(lambda L: L.set_autocast_enabled(1), torch)


def test_autocast_observes_setters(restore_autocast):
    """symtrace.autocast('cpu') uses the dtype set_autocast_dtype set, and the ops under
    set_autocast_enabled run in it, as torch's."""
    a, b = st.ones(2, 3), st.ones(3, 2)
    st.set_autocast_dtype("cpu", st.float16)
    with st.autocast("cpu"):
        assert st.get_autocast_dtype("cpu") is st.float16 and (a @ b).dtype is st.float16
    st.set_autocast_enabled("cpu", True)
    assert (a @ b).dtype is st.float16
    st.set_autocast_dtype("cpu", st.bfloat16)
    assert (a @ b).dtype is st.bfloat16
    st.set_autocast_enabled("cpu", False)
    assert (a @ b).dtype is st.float32


def test_warn_always_and_flush_denormal(torch):
    saved = torch.is_warn_always_enabled()
    try:
        for L in (st, torch):
            assert L.is_warn_always_enabled() is False
            L.set_warn_always(True)
            assert L.is_warn_always_enabled() is True
            L.set_warn_always(False)
    finally:
        torch.set_warn_always(saved)
    assert st.set_flush_denormal(True) is False and st.set_flush_denormal(False) is False
    raises_as_torch(lambda L: L.set_warn_always(1), torch)
    raises_as_torch(lambda L: L.set_flush_denormal(1), torch)


def test_sym_functions_as_torch(torch):
    calls = [("sym_max", (2, 3)), ("sym_max", (2, 3.5)), ("sym_max", (4.0, 1)), ("sym_min", (2, 3)),
             ("sym_min", (2.5, 3)), ("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_int", (5,)),
             ("sym_float", (3,)), ("sym_not", (True,)), ("sym_not", (0,)), ("sym_ite", (True, 1, 2)),
             ("sym_ite", (False, 1.5, 2.5)), ("sym_sqrt", (2,)), ("sym_sqrt", (6.25,)), ("sym_sum", ([1, 2, 3],)),
             ("sym_sum", (1, 2.5, 3)), ("sym_sum", ((),))]
    for name, args in calls:
        s, t = getattr(st, name)(*args), getattr(torch, name)(*args)
        assert s == t and type(s) is type(t), (name, args, s, t)
    for bad in [lambda L: L.sym_max("a", 1), lambda L: L.sym_ite(1, 2, 3), lambda L: L.sym_ite(True, 2, 3.)]:
        with pytest.raises(AssertionError):
            bad(st)
        with pytest.raises(AssertionError):
            bad(torch)


def test_sym_functions_keep_symint():
    from symtrace._symint import SymInt
    a = SymInt(5)
    assert st.sym_int(a) is a and isinstance(st.sym_max(a, 3), SymInt) and st.sym_max(a, 3) == 5
    assert st.sym_min(a, 3) == 3 and st.sym_float(a) == 5.0 and st.sym_sum([a, 2, 3]) == 10


def test_vmap_is_func_vmap(torch):
    assert st.vmap is st.func.vmap
    x = np.arange(6.).reshape(2, 3)
    s = st.vmap(lambda r: (r * r).sum())(st.tensor(x))
    t = torch.vmap(lambda r: (r * r).sum())(torch.tensor(x))
    compare("vmap", [s], [t], torch)


def test_cond_compiled():
    def f(x, p):
        return st.cond(p, lambda a: a.sin() * 2, lambda a: a.cos() - 1, (x,)) + 1
    x = st.tensor(X, dtype=st.float32)
    assert st.explain(f, x, st.tensor(True)).graph_count >= 1
    cf = st.compile(f)
    for p in (st.tensor(True), st.tensor(False), True, False):
        np.testing.assert_allclose(to_numpy(cf(x, p)), to_numpy(f(x, p)), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- bad input
BAD = {
    "dropout_p": lambda L: L.dropout(L.ones(3), 1.5, True),
    "feature_dropout_1d": lambda L: L.feature_dropout(L.ones(3), 0.5, True),
    "reduction_str": lambda L: L.cosine_embedding_loss(L.ones(3, 4), L.ones(3, 4), L.ones(3), 0.0, "mean"),
    "kl_div_reduction_str": lambda L: L.kl_div(L.ones(3), L.ones(3), "sum"),
    "convolution_2d_weight": lambda L: L.convolution(L.ones(1, 2, 5), L.ones(3, 2), None, [1], [0], [1], False,
                                                     [0], 1),
    "constant_pad_odd": lambda L: L.constant_pad_nd(L.ones(2, 3), (2,)),
    "matrix_rank": lambda L: L.matrix_rank(L.eye(3)),
    "nuclear_norm_int_dim": lambda L: L.nuclear_norm(L.ones(2, 3, 4), 1),
    "hann_negative": lambda L: L.hann_window(-1),
    "kaiser_negative": lambda L: L.kaiser_window(-2, True, 3.),
    "range_step0": lambda L: L.range(1, 4, 0),
    "range_sign": lambda L: L.range(3, 0),
    "gradient_edge3": lambda L: L.gradient(L.ones(3, 4), edge_order=3),
    "gradient_short": lambda L: L.gradient(L.arange(2.), edge_order=2),
    "gradient_spacing_len": lambda L: L.gradient(L.ones(3, 4), spacing=[2.]),
    "gradient_spacing_dim_len": lambda L: L.gradient(L.ones(3, 4), spacing=(1, 2), dim=1),
    "gradient_coords_2d": lambda L: L.gradient(L.ones(3, 4), spacing=[L.ones(1, 3)], dim=0),
    "gradient_dim_twice": lambda L: L.gradient(L.ones(3, 4), dim=(0, 0)),
    "unsafe_split_with_sizes_sum": lambda L: L.unsafe_split_with_sizes(L.arange(6.), [2, 3]),
    "nonzero_static_size": lambda L: L.nonzero_static(L.tensor([0, 1]), size=-1),
    "cond_pred_shape": lambda L: L.cond(L.tensor([True, False]), lambda a: a, lambda a: a, (L.ones(2),)),
    "cond_pred_type": lambda L: L.cond("a", lambda a: a, lambda a: a, (L.ones(2),)),
    "resize_requires_grad": lambda L: L.ones(3, requires_grad=True).resize_(2),
    "hardshrink_method_int": lambda L: L.tensor([1, 2]).hardshrink(),
}
LOOSE = {"dropout_p", "kl_div_reduction_str", "hardshrink_method_int"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_as_torch(name, torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_as_torch(BAD[name], torch, loose=name in LOOSE)


# ---------------------------------------------------------------- compiled
def _model(x, c, w, idx):
    win = st.hann_window(4) + st.kaiser_window(4, False, 3.0) + st.bartlett_window(4)
    g0, g1 = st.gradient(x * win, edge_order=2)
    gc, = st.gradient(x, spacing=[c], dim=0)
    e = st.embedding(w, idx, 0).sum(1)                                       # (3, 4)
    a = st.celu(g0, 0.5) + st.selu(g1) + st.hardshrink(gc, 0.1) + st.threshold(e, 0.2, -1.)
    b = st.layer_norm(a, [4]) + st.constant_pad_nd(a[:, 1:], [1, 0], 0.5)
    return b + st.kl_div(a.log_softmax(-1), b.softmax(-1), 0) + st.cosine_similarity(a, b).unsqueeze(1)


def test_compiled_matches_eager():
    rs = np.random.RandomState(5)
    args = [st.tensor(rs.uniform(-1, 1, (3, 4)).astype(np.float32)), st.tensor([0., 0.5, 2.]),
            st.tensor(rs.uniform(-1, 1, (5, 4)).astype(np.float32))]
    idx = st.tensor([[1, 0], [2, 4], [3, 3]])
    ex = st.explain(_model, *args, idx)
    assert ex.graph_break_count == 0, ex.break_reasons
    results = []
    for fn in (_model, st.compile(_model)):
        xs = [a.detach().requires_grad_() for a in args]
        out = fn(*xs, idx)
        (out * st.tensor(cycle_weights(tuple(out.shape)), dtype=st.float32)).sum().backward()
        results.append([to_numpy(out)] + [to_numpy(x.grad) for x in xs])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


# ---------------------------------------------------------------- without torch
def test_literal_values():
    assert st.hann_window(4, False, dtype=st.float64).tolist() == pytest.approx([0., 0.75, 0.75, 0.])
    assert st.bartlett_window(5, False).tolist() == pytest.approx([0., 0.5, 1., 0.5, 0.])
    assert [t.tolist() for t in st.gradient(st.tensor([1., 4., 9., 16.]))] == [[3., 4., 6., 7.]]
    assert st.nonzero_static(st.tensor([0, 3, 0, 5]), size=3).tolist() == [[1], [3], [-1]]
    assert st.cond(False, lambda a: a + 1, lambda a: a - 1, (st.tensor(1.),)).item() == 0.
    assert st.kl_div(st.zeros(2), st.tensor([0.5, 0.5]), 2).item() == pytest.approx(2 * 0.5 * math.log(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert st.range(0, 2).tolist() == [0., 1., 2.]
    assert st.embedding_bag(st.eye(3), st.tensor([0, 1, 2]), st.tensor([0, 2]), False, 1)[0].tolist() == \
        [[0.5, 0.5, 0.], [0., 0., 1.]]
