# The recurrent layers (symtrace.nn.RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell) and
# symtrace.nn.utils.rnn against torch: with torch's weights loaded (state_dict
# through numpy), the outputs, final states and the gradients of the inputs,
# initial states and every parameter, for layers 1-2, bidirectional,
# batch_first, bias=False, proj_size, unbatched inputs, given/omitted initial
# states and packed sequences of unsorted lengths; dropout (eval equals torch,
# training drops); torch's errors and warnings; parameter names, shapes,
# initialisation and state_dict both ways; a compiled LSTM and GRU step
# (forward + backward) against eager; pad/pack/unpack round trips.
import copy
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from conftest import assert_close, rng_for
from symtrace.nn.utils import rnn as srnn

TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-11)}
GTOL = {"float32": dict(rtol=1e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-10)}
NP = {"float32": np.float32, "float64": np.float64}


# ---------------------------------------------------------------- helpers
def _pair(torch, cls, args, kw, dtype="float64", seed=0):
    """A torch module and a symtrace one holding its weights (same names and shapes)."""
    torch.manual_seed(seed)
    tm = getattr(torch.nn, cls)(*args, dtype=getattr(torch, dtype), **kw)
    sm = getattr(nn, cls)(*args, dtype=getattr(st, dtype), **kw)
    assert [(n, tuple(p.shape)) for n, p in sm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    res = sm.load_state_dict(OrderedDict((k, st.tensor(v.detach().numpy().copy()))
                                         for k, v in tm.state_dict().items()))
    assert not res.missing_keys and not res.unexpected_keys
    return tm, sm


def _leaves(a, torch):
    return st.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _flat(out):
    """The tensors of a module's result, in order (a PackedSequence gives its data)."""
    if isinstance(out, (tuple, list)) and not hasattr(out, "batch_sizes"):
        return [t for o in out for t in _flat(o)]
    if hasattr(out, "batch_sizes"):
        return [out.data]
    return [out]


def _check_packed(sp, tp):
    assert list(sp.batch_sizes.tolist()) == tp.batch_sizes.tolist()
    assert str(sp.batch_sizes.dtype) == "symtrace.int64"
    for a, b in ((sp.sorted_indices, tp.sorted_indices), (sp.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tolist() == b.tolist()


def _compare(torch, sm, tm, s_in, t_in, dtype, s_leaves, t_leaves, key):
    """Forward both (s_in/t_in are the call arguments), compare every result
    tensor, then the gradients of a random-weighted sum of them for the leaves
    and every parameter."""
    s_out, t_out = sm(*s_in), tm(*t_in)
    if hasattr(t_out[0], "batch_sizes"):
        _check_packed(s_out[0], t_out[0])
    ss, ts = _flat(s_out), _flat(t_out)
    assert len(ss) == len(ts)
    for a, b in zip(ss, ts):
        assert_close(a.detach(), b.detach(), **TOL[dtype])
    rng = rng_for(key)
    ws = [rng.uniform(0.5, 1.5, tuple(b.shape)).astype(NP[dtype]) for b in ts]
    sum((a * st.tensor(w)).sum() for a, w in zip(ss, ws)).backward()
    sum((b * torch.tensor(w)).sum() for b, w in zip(ts, ws)).backward()
    for a, b in zip(s_leaves, t_leaves):
        assert a.grad is not None
        assert_close(a.grad, b.grad, **GTOL[dtype])
    tp = dict(tm.named_parameters())
    for n, p in sm.named_parameters():
        assert p.grad is not None, n
        assert_close(p.grad, tp[n].grad, msg=n, **GTOL[dtype])
    return s_out, t_out


def _states(torch, cls, shape_h, shape_c, rng, dtype):
    """Initial states (symtrace arg, torch arg, leaves)."""
    h = rng.standard_normal(shape_h).astype(NP[dtype])
    sh, th = _leaves(h, torch)
    if cls != "LSTM":
        return sh, th, [sh], [th]
    c = rng.standard_normal(shape_c).astype(NP[dtype])
    sc, tc = _leaves(c, torch)
    return (sh, sc), (th, tc), [sh, sc], [th, tc]


# ---------------------------------------------------------------- RNN, LSTM, GRU
H, IN, T, B = 5, 4, 4, 3
LAYER_CASES = [
    # (module, extra kwargs, input form, initial state given, dtype)
    ("RNN", {}, "batched", False, "float32"),
    ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True), "batched", True, "float64"),
    ("RNN", dict(nonlinearity="relu", batch_first=True, bias=False), "batched", True, "float64"),
    ("RNN", dict(num_layers=2), "unbatched", True, "float64"),
    ("RNN", dict(bidirectional=True), "packed", True, "float64"),
    ("LSTM", {}, "batched", False, "float32"),
    ("LSTM", dict(num_layers=2, bidirectional=True), "batched", True, "float64"),
    ("LSTM", dict(batch_first=True, bias=False), "batched", True, "float64"),
    ("LSTM", dict(proj_size=3, num_layers=2, bidirectional=True), "batched", True, "float64"),
    ("LSTM", dict(proj_size=2, batch_first=True), "unbatched", False, "float64"),
    ("LSTM", dict(num_layers=2), "unbatched", True, "float64"),
    ("LSTM", dict(num_layers=2, bidirectional=True), "packed", True, "float64"),
    ("LSTM", dict(proj_size=3, bidirectional=True, batch_first=True), "packed", False, "float64"),
    ("GRU", {}, "batched", False, "float32"),
    ("GRU", dict(num_layers=2, bidirectional=True), "batched", True, "float64"),
    ("GRU", dict(batch_first=True, bias=False, num_layers=2), "batched", True, "float64"),
    ("GRU", dict(bidirectional=True), "unbatched", True, "float64"),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True), "packed", True, "float64"),
    ("GRU", dict(), "packed_sorted", False, "float32"),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("cls,kw,form,given,dtype", LAYER_CASES,
                         ids=[f"{c[0]}-{i}-{c[2]}" for i, c in enumerate(LAYER_CASES)])
def test_layer_matches_torch(torch, cls, kw, form, given, dtype):
    tm, sm = _pair(torch, cls, (IN, H), kw, dtype)
    rng = rng_for(cls, form, tuple(sorted(kw.items())))
    bf = kw.get("batch_first", False)
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    hs = kw.get("proj_size", 0) or H
    shape = (B, T, IN) if bf else (T, B, IN)
    if form == "unbatched":
        shape = (T, IN)
    x = rng.standard_normal(shape).astype(NP[dtype])
    sx, tx = _leaves(x, torch)
    s_leaves, t_leaves = [sx], [tx]
    if form.startswith("packed"):
        lengths = [T, T - 1, 2] if form == "packed_sorted" else [2, T, 1]
        enforce = form == "packed_sorted"
        s_in0 = srnn.pack_padded_sequence(sx, lengths, batch_first=bf, enforce_sorted=enforce)
        t_in0 = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=bf, enforce_sorted=enforce)
        _check_packed(s_in0, t_in0)
    else:
        s_in0, t_in0 = sx, tx
    s_in, t_in = [s_in0], [t_in0]
    if given:
        lead = (L * D,) if form == "unbatched" else (L * D, B)
        sh, th, sl, tl = _states(torch, cls, lead + (hs,), lead + (H,), rng, dtype)
        s_in.append(sh)
        t_in.append(th)
        s_leaves += sl
        t_leaves += tl
    s_out, t_out = _compare(torch, sm, tm, s_in, t_in, dtype, s_leaves, t_leaves, (cls, form))
    if form.startswith("packed"):
        # the packed output pads back to torch's
        sp, sl_ = srnn.pad_packed_sequence(s_out[0], batch_first=bf)
        tp, tl_ = torch.nn.utils.rnn.pad_packed_sequence(t_out[0], batch_first=bf)
        assert_close(sp.detach(), tp.detach(), **TOL[dtype])
        assert sl_.tolist() == tl_.tolist()


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_layer_float32_long_sequence_and_eval_dropout(torch, cls):
    """dropout > 0 is inactive in eval mode: equal to torch's eval output."""
    tm, sm = _pair(torch, cls, (IN, H), dict(num_layers=3, dropout=0.5, bidirectional=True), "float32")
    tm.eval()
    sm.eval()
    x = rng_for(cls, "long").standard_normal((9, 2, IN)).astype(np.float32)
    sx, tx = _leaves(x, torch)
    _compare(torch, sm, tm, [sx], [tx], "float32", [sx], [tx], (cls, "eval"))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_training_dropout(cls):
    """In training, dropout acts between layers: the output has its shape,
    differs from eval's and takes a gradient; a module without dropout
    trains as it evaluates; eval is deterministic."""
    st.manual_seed(1)
    m = getattr(nn, cls)(IN, H, num_layers=2, dropout=0.6)
    x = st.tensor(rng_for(cls, "drop").standard_normal((T, B, IN)).astype(np.float32), requires_grad=True)
    out, _ = m(x)
    assert tuple(out.shape) == (T, B, H)
    m.eval()
    ev, _ = m(x)
    ev2, _ = m(x)
    np.testing.assert_array_equal(ev.detach().numpy(), ev2.detach().numpy())
    assert np.abs(out.detach().numpy() - ev.detach().numpy()).max() > 1e-3
    out.sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    m2 = copy.deepcopy(m)
    m2.dropout = 0.0
    m2.train()
    np.testing.assert_allclose(m2(x)[0].detach().numpy(), ev.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_dropout_reaches_only_the_layers_between():
    # with one layer the dropout never applies (torch warns about it)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        m = nn.GRU(IN, H, dropout=0.9)
    x = st.tensor(rng_for("drop1").standard_normal((T, B, IN)).astype(np.float32))
    a = m(x)[0].detach().numpy()
    m.eval()
    np.testing.assert_allclose(m(x)[0].detach().numpy(), a, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- cells
CELL_CASES = [
    ("RNNCell", {}, True, True, "float64"),
    ("RNNCell", dict(nonlinearity="relu"), True, False, "float32"),
    ("RNNCell", dict(bias=False), False, True, "float64"),
    ("LSTMCell", {}, True, True, "float64"),
    ("LSTMCell", {}, True, False, "float32"),
    ("LSTMCell", dict(bias=False), False, True, "float64"),
    ("GRUCell", {}, True, True, "float64"),
    ("GRUCell", {}, False, False, "float32"),
    ("GRUCell", dict(bias=False), True, True, "float64"),
]


@pytest.mark.parametrize("cls,kw,batched,given,dtype", CELL_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CELL_CASES)])
def test_cell_matches_torch(torch, cls, kw, batched, given, dtype):
    tm, sm = _pair(torch, cls, (IN, H), kw, dtype)
    rng = rng_for(cls, batched, given, tuple(kw.items()))
    lead = (B,) if batched else ()
    sx, tx = _leaves(rng.standard_normal(lead + (IN,)).astype(NP[dtype]), torch)
    s_in, t_in, s_leaves, t_leaves = [sx], [tx], [sx], [tx]
    if given:
        sh, th, sl, tl = _states(torch, "LSTM" if cls == "LSTMCell" else cls, lead + (H,), lead + (H,), rng, dtype)
        s_in.append(sh)
        t_in.append(th)
        s_leaves += sl
        t_leaves += tl
    _compare(torch, sm, tm, s_in, t_in, dtype, s_leaves, t_leaves, (cls, "cell"))
    # a cell stepped over a sequence equals the layer with the same weights
    if cls == "LSTMCell" and batched and given and kw.get("bias", True):
        tl_, sl_ = _pair(torch, "LSTM", (IN, H), {}, dtype)
        with torch.no_grad():
            for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(tl_, n + "_l0").copy_(getattr(tm, n))
        sl_.load_state_dict({k: st.tensor(v.detach().numpy().copy()) for k, v in tl_.state_dict().items()})
        xs = st.tensor(rng.standard_normal((3, B, IN)).astype(NP[dtype]))
        h0, c0 = s_in[1][0].detach(), s_in[1][1].detach()
        h, outs = (h0, c0), []
        for t in range(3):
            h = sm(xs[t], h)
            outs.append(h[0].detach())
        y, (hn, cn) = sl_(xs, (h0.unsqueeze(0), c0.unsqueeze(0)))
        assert_close(y.detach(), st.stack(outs).numpy(), **TOL[dtype])
        assert_close(cn[0].detach(), h[1].detach().numpy(), **TOL[dtype])


# ---------------------------------------------------------------- errors
def _same_error(torch, s_fn, t_fn):
    """Both raise the same exception type with the same message (torch's dtype
    and Size spellings read as symtrace's)."""
    with pytest.raises(Exception) as te:
        t_fn()
    with pytest.raises(Exception) as se:
        s_fn()
    assert type(se.value) is type(te.value), (se.value, te.value)
    tmsg = str(te.value).replace("torch.", "symtrace.")
    assert str(se.value) == tmsg


def _error_cases():
    x3 = np.zeros((3, 2, IN), np.float32)
    return [
        # (module, ctor kwargs, input, state, what)
        ("LSTM", dict(num_layers=2), np.zeros((3, 2, 6), np.float32), None),
        ("LSTM", dict(num_layers=2), x3, ((2, 3, H), (2, 2, H))),
        ("LSTM", dict(num_layers=2), x3, ((2, 2, H), (2, 3, H))),
        ("LSTM", dict(num_layers=2), x3, ((2, H), (2, 2, H))),
        ("LSTM", dict(num_layers=2), np.zeros((3, IN), np.float32), ((2, 2, H), (2, 2, H))),
        ("LSTM", dict(proj_size=2), x3, ((1, 2, H), (1, 2, H))),
        ("LSTM", {}, np.zeros((3, 2, 2, IN), np.float32), None),
        ("LSTM", {}, np.zeros((3, 2, IN), np.float64), None),
        ("LSTM", {}, np.zeros((0, 2, IN), np.float32), None),
        ("GRU", dict(batch_first=True), np.zeros((2, 0, IN), np.float32), None),
        ("GRU", {}, x3, (1, 3, H)),
        ("GRU", {}, x3, (3, H)),
        ("GRU", {}, np.zeros((3, IN), np.float32), (1, 1, H)),
        ("GRU", {}, np.zeros((3, 2, 2, IN), np.float32), None),
        ("GRU", dict(bidirectional=True), x3, (1, 2, H)),
        ("RNN", {}, x3, (2, 2, H)),
        ("RNN", {}, np.zeros((3, 2, 2, IN), np.float32), None),
        ("RNN", {}, np.zeros((3, 2, 5), np.float32), None),
        ("RNNCell", {}, np.zeros((2, 6), np.float32), None),
        ("RNNCell", {}, np.zeros((2, IN), np.float32), (3, H)),
        ("RNNCell", {}, np.zeros((2, IN, 1), np.float32), None),
        ("RNNCell", {}, np.zeros((2, IN), np.float32), (2, H, 1)),
        ("LSTMCell", {}, np.zeros((2, IN), np.float32), ((3, H), (3, H))),
        ("LSTMCell", {}, np.zeros((2, IN), np.float32), ((2, 6), (2, H))),
        ("LSTMCell", {}, np.zeros((2, IN), np.float32), ((2, H), (2, 6))),
        ("LSTMCell", {}, np.zeros((2, IN), np.float32), ((2, H, 1), (2, H))),
        ("LSTMCell", {}, np.zeros((IN,), np.float32), ((2, H), (2, H))),
        ("GRUCell", {}, np.zeros((2, 6), np.float32), None),
        ("GRUCell", {}, np.zeros((2, IN), np.float32), (2, 6)),
        ("GRUCell", {}, np.zeros((2, IN), np.float32), (H,)),
        ("GRUCell", {}, np.zeros((2, 2, IN), np.float32), None),
    ]


@pytest.mark.parametrize("case", range(len(_error_cases())))
def test_errors_match_torch(torch, case):
    cls, kw, x, state = _error_cases()[case]
    tm, sm = _pair(torch, cls, (IN, H), kw, "float32")

    def call(lib, m):
        args = [lib.tensor(x)]
        if state is not None:
            if isinstance(state[0], tuple):
                args.append(tuple(lib.zeros(s) for s in state))
            else:
                args.append(lib.zeros(state))
        return m(*args)

    _same_error(torch, lambda: call(st, sm), lambda: call(torch, tm))


@pytest.mark.parametrize("ctor", [
    lambda nn_: nn_.RNN(4, 5, nonlinearity="foo"),
    lambda nn_: nn_.RNN(4, 5, 1, "sigmoid"),
    lambda nn_: nn_.GRU(4, 5, proj_size=2),
    lambda nn_: nn_.RNN(4, 5, proj_size=2),
    lambda nn_: nn_.LSTM(4, 5, proj_size=5),
    lambda nn_: nn_.LSTM(4, 5, proj_size=-1),
    lambda nn_: nn_.LSTM(4, 5, dropout=1.5),
    lambda nn_: nn_.LSTM(4, 5, dropout=True),
    lambda nn_: nn_.LSTM(4, 0),
    lambda nn_: nn_.LSTM(0, 4),
    lambda nn_: nn_.LSTM(4, 5, 0),
    lambda nn_: nn_.GRU(4.0, 5),
    lambda nn_: nn_.GRU(4, 5, bias=1),
    lambda nn_: nn_.GRU(4, 5, batch_first=None),
])
def test_constructor_errors_match_torch(torch, ctor):
    _same_error(torch, lambda: ctor(nn), lambda: ctor(torch.nn))


def test_cell_unknown_nonlinearity_refused_at_call(torch):
    # as torch's: the constructor takes it, the forward refuses it
    sm, tm = nn.RNNCell(4, 5, nonlinearity="foo"), torch.nn.RNNCell(4, 5, nonlinearity="foo")
    _same_error(torch, lambda: sm(st.zeros(2, 4)), lambda: tm(torch.zeros(2, 4)))


def test_dropout_warning_as_torch(torch):
    got = []
    for lib in (nn, torch.nn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.LSTM(4, 5, dropout=0.5)
        got.append([(x.category, str(x.message)) for x in w])
    assert got[0] == got[1] and len(got[0]) == 1


# ---------------------------------------------------------------- parameters
@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_parameters_names_init_repr_state_dict(torch):
    cases = [("LSTM", (IN, 8), dict(num_layers=2, bidirectional=True, proj_size=3, bias=False)),
             ("GRU", (IN, 8), dict(num_layers=2, batch_first=True, dropout=0.2)),
             ("RNN", (IN, 8, 2, "relu"), dict(bidirectional=True)),
             ("RNNCell", (IN, 8, True, "relu"), {}), ("LSTMCell", (IN, 8), dict(bias=False)),
             ("GRUCell", (IN, 8), {})]
    for cls, args, kw in cases:
        sm, tm = getattr(nn, cls)(*args, **kw), getattr(torch.nn, cls)(*args, **kw)
        assert repr(sm) == repr(tm)
        assert [(n, tuple(p.shape)) for n, p in sm.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
        assert list(sm.state_dict()) == list(tm.state_dict())
        bound = 1 / math.sqrt(8)
        vals = np.concatenate([p.detach().numpy().ravel() for p in sm.parameters()])
        assert vals.min() >= -bound and vals.max() <= bound
        assert abs(vals.std() - bound / math.sqrt(3)) < 0.15 * bound  # U(-b, b)
        if cls in ("LSTM", "GRU", "RNN"):
            assert [[tuple(p.shape) for p in ws] for ws in sm.all_weights] == \
                [[tuple(p.shape) for p in ws] for ws in tm.all_weights]
            assert sm.flatten_parameters() is None
        # symtrace's state_dict loads into torch: the same results
        tm.load_state_dict({k: torch.tensor(v.numpy().copy()) for k, v in sm.state_dict().items()})
        if cls.endswith("Cell"):
            x = np.random.default_rng(0).standard_normal((2, IN)).astype(np.float32)
        else:
            x = np.random.default_rng(0).standard_normal((2, 3, IN)).astype(np.float32)
        sm.eval()
        tm.eval()
        so, to = sm(st.tensor(x)), tm(torch.tensor(x))
        for a, b in zip(_flat(so), _flat(to)):
            assert_close(a.detach(), b.detach(), **TOL["float32"])


def test_parameters_without_torch():
    m = nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    names = [n for n, _ in m.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert names[5] == "weight_ih_l0_reverse" and names[-1] == "weight_hr_l1_reverse"
    assert tuple(m.weight_ih_l1.shape) == (24, 4) and tuple(m.weight_hh_l0.shape) == (24, 2)
    assert tuple(m.weight_hr_l0.shape) == (2, 6)
    assert len(m.all_weights) == 4 and all(len(ws) == 5 for ws in m.all_weights)
    out, (h, c) = m(st.zeros(5, 2, 3))
    assert tuple(out.shape) == (5, 2, 4) and tuple(h.shape) == (4, 2, 2) and tuple(c.shape) == (4, 2, 6)
    m64 = nn.GRU(3, 4, dtype=st.float64)
    assert all(p.dtype == st.float64 for p in m64.parameters())
    assert m64(st.zeros(2, 3, dtype=st.float64))[0].dtype == st.float64


# ---------------------------------------------------------------- compiled
@pytest.mark.parametrize("cls,kw", [("LSTM", dict(num_layers=2, bidirectional=True)),
                                    ("GRU", dict(batch_first=True))])
def test_compiled_step_matches_eager(cls, kw):
    st.manual_seed(0)
    me = getattr(nn, cls)(IN, H, **kw)
    mc = copy.deepcopy(me)
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    rng = rng_for("compiled", cls)
    x = rng.standard_normal((3, 2, IN)).astype(np.float32)
    h = rng.standard_normal((L * D, 3 if kw.get("batch_first") else 2, H)).astype(np.float32)

    def step(m, x, h):
        out, hn = m(x, (h, h * 0.5) if cls == "LSTM" else h)
        hn = hn if isinstance(hn, tuple) else (hn,)
        return (out * out).sum() + sum((s * s).sum() for s in hn)

    xe, xc = st.tensor(x, requires_grad=True), st.tensor(x, requires_grad=True)
    he, hc = st.tensor(h, requires_grad=True), st.tensor(h, requires_grad=True)
    st.reset()
    compiled = st.compile(step)
    le, lc = step(me, xe, he), compiled(mc, xc, hc)
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    le.backward()
    lc.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hc.grad.numpy(), he.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    # the time loop unrolled into one graph, without a break
    stats = st._C._fe_stats()
    assert stats["graphs"] == 1 and stats["breaks"] == 0 and stats["fallbacks"] == 0, stats
    lc2 = compiled(mc, xc, hc)
    np.testing.assert_allclose(lc2.item(), le.item(), rtol=1e-5)
    assert st._C._fe_stats()["hits"] == 1


def test_compiled_packed_matches_eager():
    """A PackedSequence's batch sizes are host values: one graph break where they
    are read, then the layers are captured; values and gradients as eager."""
    st.manual_seed(2)
    me = nn.GRU(IN, H, num_layers=2, bidirectional=True)
    mc = copy.deepcopy(me)
    arrs = [rng_for("cpk", n).standard_normal((n, IN)).astype(np.float32) for n in (2, 4, 1)]

    def step(m, p):
        out, h = m(p)
        return (out.data * out.data).sum() + (h * h).sum()

    se = [st.tensor(a, requires_grad=True) for a in arrs]
    sc = [st.tensor(a, requires_grad=True) for a in arrs]
    st.reset()
    le = step(me, srnn.pack_sequence(se, enforce_sorted=False))
    lc = st.compile(step)(mc, srnn.pack_sequence(sc, enforce_sorted=False))
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    le.backward()
    lc.backward()
    for a, b in zip(sc, se):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    stats = st._C._fe_stats()
    assert stats["graphs"] == 2 and stats["fallbacks"] == 0, stats


# ---------------------------------------------------------------- utils.rnn
def _seqs(rng, lens, trailing=(3,), dtype=np.float64):
    return [rng.standard_normal((n,) + trailing).astype(dtype) for n in lens]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, batch_first, side):
    arrs = _seqs(rng_for("pad", batch_first, side), [2, 5, 3], (3, 2))
    sl = [st.tensor(a, requires_grad=True) for a in arrs]
    tl = [torch.tensor(a, requires_grad=True) for a in arrs]
    sp = srnn.pad_sequence(sl, batch_first, -1.5, side)
    tp = torch.nn.utils.rnn.pad_sequence(tl, batch_first, -1.5, side)
    assert_close(sp.detach(), tp.detach())
    w = rng_for("padw").standard_normal(tuple(tp.shape))
    (sp * st.tensor(w)).sum().backward()
    (tp * torch.tensor(w)).sum().backward()
    for a, b in zip(sl, tl):
        assert_close(a.grad, b.grad)
    # a sequence broadcasts into its place (torch copies it in)
    a, b = rng_for("padb").standard_normal((2, 3)), rng_for("padb2").standard_normal((4, 1))
    assert_close(srnn.pad_sequence([st.tensor(a), st.tensor(b)], batch_first),
                 torch.nn.utils.rnn.pad_sequence([torch.tensor(a), torch.tensor(b)], batch_first))
    # a tensor is a sequence of its rows
    x = rng_for("padt").standard_normal((3, 2, 2))
    assert_close(srnn.pad_sequence(st.tensor(x)), torch.nn.utils.rnn.pad_sequence(torch.tensor(x)))


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_unpack_round_trips_match_torch(torch, enforce_sorted, batch_first):
    lens = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 4]
    arrs = _seqs(rng_for("pack", enforce_sorted, batch_first), lens)
    sl = [st.tensor(a, requires_grad=True) for a in arrs]
    tl = [torch.tensor(a, requires_grad=True) for a in arrs]
    T_ = torch.nn.utils.rnn
    sp, tp = srnn.pack_sequence(sl, enforce_sorted), T_.pack_sequence(tl, enforce_sorted)
    assert isinstance(sp, srnn.PackedSequence) and isinstance(sp, tuple)
    _check_packed(sp, tp)
    assert_close(sp.data.detach(), tp.data.detach())
    # padded back (total_length pads further), lengths in the original order
    spad, slen = srnn.pad_packed_sequence(sp, batch_first, 0.25, total_length=7)
    tpad, tlen = T_.pad_packed_sequence(tp, batch_first, 0.25, total_length=7)
    assert_close(spad.detach(), tpad.detach())
    assert slen.tolist() == tlen.tolist() and str(slen.dtype) == "symtrace.int64"
    # and packed again from the padded batch, with tensor lengths
    sp2 = srnn.pack_padded_sequence(spad, slen, batch_first, enforce_sorted)
    tp2 = T_.pack_padded_sequence(tpad, tlen, batch_first, enforce_sorted)
    _check_packed(sp2, tp2)
    assert_close(sp2.data.detach(), tp2.data.detach())
    # unpack_sequence and unpad_sequence give the sequences back
    for got in (srnn.unpack_sequence(sp2), srnn.unpad_sequence(spad, slen, batch_first)):
        assert len(got) == len(arrs)
        for g, a in zip(got, arrs):
            assert_close(g.detach(), a)
    exp = T_.unpack_sequence(tp2)
    w = [rng_for("packw", i).standard_normal(e.shape) for i, e in enumerate(exp)]
    sum((g * st.tensor(v)).sum() for g, v in zip(srnn.unpack_sequence(sp2), w)).backward()
    sum((e * torch.tensor(v)).sum() for e, v in zip(exp, w)).backward()
    for a, b in zip(sl, tl):
        assert_close(a.grad, b.grad)
    assert_close(srnn.invert_permutation(st.tensor([2, 0, 3, 1])),
                 T_.invert_permutation(torch.tensor([2, 0, 3, 1])))
    assert srnn.invert_permutation(None) is None
    # conversions keep the packing
    sd = sp.double()
    assert sd.data.dtype == st.float64 and sd.batch_sizes is sp.batch_sizes
    assert sp.to(st.float64) is sp and sp.cpu() is sp and sp.float().data.dtype == st.float32
    assert not sp.is_cuda


def test_packing_errors_match_torch(torch):
    T_ = torch.nn.utils.rnn
    x = np.zeros((5, 3, 2), np.float32)
    s, t = st.tensor(x), torch.tensor(x)
    pairs = [
        (lambda R, v: R.pack_padded_sequence(v, [5, 3, 4]), None),
        (lambda R, v: R.pack_padded_sequence(v, [5, 3, 0], enforce_sorted=False), None),
        (lambda R, v: R.pack_padded_sequence(v, [5, 3]), None),
        (lambda R, v: R.pad_packed_sequence(R.pack_padded_sequence(v, [5, 4, 3]), total_length=3), None),
        (lambda R, v: R.pad_sequence([v[:, 0], v[:3, :, 0]]), None),
        (lambda R, v: R.pad_sequence([v[:, 0, :1], v[:3, 0]]), None),
        (lambda R, v: R.pad_sequence([v[0], v[1]], padding_side="middle"), None),
        (lambda R, v: R.pad_sequence([]), None),
        (lambda R, v: R.pad_sequence(5), None),
        (lambda R, v: R.pack_sequence([v[:2, 0], v[:3, 0]]), None),
    ]
    for fn, _ in pairs:
        _same_error(torch, lambda: fn(srnn, s), lambda: fn(T_, t))


def test_packed_sequence_without_torch():
    seqs = [st.tensor([[1.0], [2.0]]), st.tensor([[3.0], [4.0], [5.0]]), st.tensor([[6.0]])]
    p = srnn.pack_sequence(seqs, enforce_sorted=False)
    assert p.batch_sizes.tolist() == [3, 2, 1]
    assert p.sorted_indices.tolist() == [1, 0, 2] and p.unsorted_indices.tolist() == [1, 0, 2]
    assert p.data.numpy().ravel().tolist() == [3.0, 1.0, 6.0, 4.0, 2.0, 5.0]
    padded, lengths = srnn.pad_packed_sequence(p, batch_first=True)
    assert lengths.tolist() == [2, 3, 1]
    assert padded.numpy()[..., 0].tolist() == [[1.0, 2.0, 0.0], [3.0, 4.0, 5.0], [6.0, 0.0, 0.0]]
    data, bs, si, ui = p
    assert data is p.data and bs is p.batch_sizes and si is p.sorted_indices and ui is p.unsorted_indices
    # an LSTM over the packed batch ends each sequence at its own length
    m = nn.LSTM(1, 3)
    out, (h, c) = m(p)
    for b, s in enumerate(seqs):
        o1, (h1, c1) = m(s.unsqueeze(1))
        assert_close(h[:, b].detach(), h1[:, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
        assert_close(c[:, b].detach(), c1[:, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
        assert_close(srnn.unpack_sequence(out)[b].detach(), o1[:, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
