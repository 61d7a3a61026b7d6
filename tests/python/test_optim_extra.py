# symtrace.optim's Rprop, ASGD, Adafactor, Muon, LBFGS and SparseAdam against
# torch.optim: constructor signatures, defaults and argument errors (torch's
# messages); several steps training a small MLP from torch's initial weights
# (parameters after every step within 1e-9 relative in float64, each side's
# own autograd, and 1e-5 in float32, torch's gradients given to both sides);
# state and param_groups in torch's layout; state_dict round trips through
# symtrace.save / symtrace.load continuing identically, and torch's own state
# loaded continuing like torch; LBFGS with and without strong_wolfe on least
# squares and Rosenbrock step by step. The tests without the `torch` fixture
# (compiled steps against eager, hand-computed updates, __all__) run without
# torch.
import inspect
import math
import os
import re

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim

NEW = ["Rprop", "ASGD", "Adafactor", "Muon", "LBFGS", "SparseAdam"]


def np_of(t):
    t = t.detach()
    return np.array(t.numpy()) if isinstance(t, st.Tensor) else t.cpu().numpy()


def make_models(torch, seed=0, dtype="float64"):
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    sm = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    if dtype == "float64":
        tm, sm = tm.double(), sm.double()
    with st.no_grad():
        for sp, tp in zip(sm.parameters(), tm.parameters()):
            sp.copy_(st.tensor(tp.detach().numpy().copy()))
    return sm, tm


def make_data(seed=1, n=16):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    y = np.tanh(x[:, :3] - x[:, 1:]) + 0.1 * rng.standard_normal((n, 3))
    return x, y


def backward_both(sm, tm, torch, x, y, sign=1.0, skip=None):
    """MSE loss (times sign) backward on both models: float64 with each side's
    own autograd, float32 with torch's gradients copied to symtrace (so that
    the comparison is of the optimizers' arithmetic). skip: index of a
    parameter whose gradient is then None on both sides."""
    for p in sm.parameters():
        p.grad = None
    tm.zero_grad(set_to_none=True)
    f64 = next(iter(tm.parameters())).dtype == torch.float64
    npdt = np.float64 if f64 else np.float32
    x, y = x.astype(npdt), y.astype(npdt)
    lt = ((tm(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
    (lt * sign).backward()
    if f64:
        ls = ((sm(st.tensor(x)) - st.tensor(y)) ** 2).mean()
        (ls * sign).backward()
    else:
        for a, b in zip(sm.parameters(), tm.parameters()):
            a.grad = st.tensor(b.grad.numpy().copy())
    if skip is not None:
        list(sm.parameters())[skip].grad = None
        list(tm.parameters())[skip].grad = None
    return lt.item()


def tol(dtype):
    return (1e-9, 1e-12) if dtype in ("float64", st.float64) else (1e-5, 1e-6)


def assert_params_close(sps, tps, msg=""):
    for i, (a, b) in enumerate(zip(sps, tps)):
        rtol, atol = tol(a.dtype)
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=rtol, atol=atol, err_msg=f"param {i} {msg}")


def assert_tree_close(s, t, rtol, atol, path="state"):
    """A symtrace state value against torch's: the same structure and types
    (tensor / list / number / None), tensors of the same shape and dtype
    with close values, numbers close."""
    import torch
    if isinstance(t, torch.Tensor):
        assert isinstance(s, st.Tensor), path
        assert tuple(s.shape) == tuple(t.shape), path
        assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], path
        np.testing.assert_allclose(np_of(s), np_of(t), rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(t, dict):
        assert isinstance(s, dict) and list(s.keys()) == list(t.keys()), path
        for k in t:
            assert_tree_close(s[k], t[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(t, (list, tuple)):
        assert type(s) is type(t) and len(s) == len(t), path
        for i, (a, b) in enumerate(zip(s, t)):
            assert_tree_close(a, b, rtol, atol, f"{path}[{i}]")
    elif t is None:
        assert s is None, path
    else:
        assert type(s) is type(t), (path, type(s), type(t))
        assert s == pytest.approx(t, rel=rtol, abs=atol), path


def assert_state_like(so, to, sps, tps, rtol=1e-4, atol=1e-6):
    """Per parameter the same state keys (in order) and close values; 0-d
    float32 counters (step, eta, mu) equal; the same param_groups."""
    assert len(so.state) == len(to.state)
    for a, b in zip(sps, tps):
        ss, ts = so.state[a], to.state[b]
        assert list(ss.keys()) == list(ts.keys())
        for k, v in ts.items():
            if k in ("step", "eta", "mu"):
                assert ss[k].dim() == 0 and ss[k].dtype == st.float32, k
                assert ss[k].item() == v.item(), k
            else:
                assert_tree_close(ss[k], v, rtol, atol, k)
    for g, tg in zip(so.param_groups, to.param_groups):
        assert {k: v for k, v in g.items() if k != "params"} == {k: v for k, v in tg.items() if k != "params"}


# ---------------- signatures, defaults, argument errors ----------------
@pytest.mark.parametrize("name", NEW)
def test_signature_and_defaults_match_torch(torch, name):
    ss = inspect.signature(getattr(optim, name).__init__)
    ts = inspect.signature(getattr(torch.optim, name).__init__)
    assert [(p.name, p.kind, p.default) for p in ss.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in ts.parameters.values()]
    shape = (3, 2)                 # Muon takes 2-d parameters only
    so = getattr(optim, name)([nn.Parameter(st.ones(*shape))])
    to = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(*shape))])
    assert so.defaults == to.defaults
    assert so.state_dict()["param_groups"] == to.state_dict()["param_groups"]
    with pytest.raises(ValueError, match="empty parameter list"):
        getattr(optim, name)([])


def test_all_in_torch_order(torch):
    assert optim.__all__ == [n for n in torch.optim.__all__ if hasattr(optim, n)]
    assert set(torch.optim.__all__) - set(optim.__all__) == {"swap_in_optimizer_params_and_state"}


BAD = [
    ("Rprop", dict(lr=-1)), ("Rprop", dict(etas=(1.0, 1.2))), ("Rprop", dict(etas=(0.5, 0.9))),
    ("Rprop", dict(etas=(0.0, 1.2))),
    ("ASGD", dict(lr=-0.1)), ("ASGD", dict(weight_decay=-1)),
    ("Adafactor", dict(lr=-1)), ("Adafactor", dict(beta2_decay=0.1)), ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Adafactor", dict(eps=(None, -1e-3))), ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-0.1)),
    ("Muon", dict(lr=-1)), ("Muon", dict(momentum=-0.5)), ("Muon", dict(weight_decay=-1)),
    ("Muon", dict(adjust_lr_fn="spectral")),
    ("LBFGS", dict(lr=-1)),
    ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)), ("SparseAdam", dict(betas=(1.0, 0.9))),
    ("SparseAdam", dict(betas=(0.9, -0.1))),
]


def _id(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", BAD, ids=[_id(c) for c in BAD])
def test_bad_arguments_raise_like_torch(torch, case):
    name, kw = case
    with pytest.raises(Exception) as te:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2, 2))], **kw)
    with pytest.raises(te.type, match="^" + re.escape(str(te.value)) + "$"):
        getattr(optim, name)([nn.Parameter(st.ones(2, 2))], **kw)


def test_muon_and_lbfgs_structural_errors_like_torch(torch):
    def both(fs, ft):
        with pytest.raises(Exception) as te:
            ft()
        # (a size is named as each library prints it: symtrace.Size for torch.Size)
        msg = str(te.value).replace("torch.Size", "symtrace.Size")
        with pytest.raises(te.type, match="^" + re.escape(msg) + "$"):
            fs()
    # Muon: 2-d parameters only (a bias is rejected at construction)
    both(lambda: optim.Muon([nn.Parameter(st.ones(2, 2)), nn.Parameter(st.ones(3))]),
         lambda: torch.optim.Muon([torch.nn.Parameter(torch.ones(2, 2)), torch.nn.Parameter(torch.ones(3))]))
    # Muon: too many Newton-Schulz steps (raised at the step)
    sp, tp = nn.Parameter(st.ones(2, 3)), torch.nn.Parameter(torch.ones(2, 3))
    sp.grad, tp.grad = st.ones(2, 3), torch.ones(2, 3)
    both(lambda: optim.Muon([sp], ns_steps=100).step(), lambda: torch.optim.Muon([tp], ns_steps=100).step())
    # LBFGS: one parameter group; strong_wolfe is the only line search
    both(lambda: optim.LBFGS([{"params": [sp]}, {"params": [nn.Parameter(st.ones(2))]}]),
         lambda: torch.optim.LBFGS([{"params": [tp]}, {"params": [torch.nn.Parameter(torch.ones(2))]}]))
    both(lambda: optim.LBFGS([sp], line_search_fn="armijo").step(lambda: (sp * sp).sum()),
         lambda: torch.optim.LBFGS([tp], line_search_fn="armijo").step(lambda: (tp * tp).sum()))


@pytest.mark.parametrize("name", ["Rprop", "ASGD"])
def test_capturable_on_cpu_raises_like_torch(torch, name):
    """capturable=True with cpu parameters: torch's AssertionError at the step
    (its list of capturable devices names torch's other backends too)."""
    sp, tp = nn.Parameter(st.ones(3)), torch.nn.Parameter(torch.ones(3))
    sp.grad, tp.grad = st.ones(3), torch.ones(3)
    with pytest.raises(AssertionError) as te:
        getattr(torch.optim, name)([tp], capturable=True).step()
    head = str(te.value).split("[")[0]
    with pytest.raises(AssertionError, match="^" + re.escape(head) + re.escape("['cuda'].") + "$"):
        getattr(optim, name)([sp], capturable=True).step()
    assert np_of(sp).tolist() == np_of(tp).tolist() == [1.0, 1.0, 1.0]


def test_sparse_adam_rejects_dense_gradients_like_torch(torch):
    sp, tp = nn.Parameter(st.ones(4, 2)), torch.nn.Parameter(torch.ones(4, 2))
    so, to = optim.SparseAdam([sp], lr=0.1, maximize=True), torch.optim.SparseAdam([tp], lr=0.1, maximize=True)
    assert so.defaults == to.defaults
    # no gradient: nothing to do, the closure's loss comes back
    assert so.step(lambda: st.tensor(3.0)).item() == to.step(lambda: torch.tensor(3.0)).item() == 3.0
    sp.grad, tp.grad = st.ones(4, 2), torch.ones(4, 2)
    with pytest.raises(RuntimeError) as te:
        to.step()
    with pytest.raises(RuntimeError, match="^" + re.escape(str(te.value)) + "$"):
        so.step()
    assert len(so.state) == len(to.state) == 0
    assert np_of(sp).tolist() == np_of(tp).tolist()


# ---------------- training against torch ----------------
CASES = [
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.7), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.02, maximize=True, foreach=False)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True, foreach=False)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, d=1.5, eps=(1e-4, 1e-2))),
    ("Adafactor", dict(lr=0.02, beta2_decay=-0.5, maximize=True, foreach=False)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_trains_like_torch(torch, case, dtype):
    name, kw = case
    sm, tm = make_models(torch, dtype=dtype)
    so, to = getattr(optim, name)(sm.parameters(), **kw), getattr(torch.optim, name)(tm.parameters(), **kw)
    x, y = make_data()
    sign = -1.0 if kw.get("maximize") else 1.0
    losses = []
    for k in range(8):
        losses.append(backward_both(sm, tm, torch, x, y, sign=sign, skip=1 if k == 3 else None))
        so.step()
        to.step()
        assert_params_close(list(sm.parameters()), list(tm.parameters()), f"after step {k + 1}")
    assert_state_like(so, to, list(sm.parameters()), list(tm.parameters()))
    assert losses[-1] < losses[0]
    assert all(p.grad_fn is None and p.is_leaf for p in sm.parameters())


def test_adafactor_factors_a_3d_parameter_like_torch(torch):
    """A 3-d parameter: row / column variances per leading index (batched
    outer product); float64, fixed gradients."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((2, 4, 3))
    sp, tp = nn.Parameter(st.tensor(w)), torch.nn.Parameter(torch.tensor(w))
    so, to = optim.Adafactor([sp], lr=0.05, weight_decay=0.01), torch.optim.Adafactor([tp], lr=0.05, weight_decay=0.01)
    for _ in range(4):
        g = rng.standard_normal(w.shape)
        sp.grad, tp.grad = st.tensor(g), torch.tensor(g)
        so.step()
        to.step()
        assert_params_close([sp], [tp])
    assert tuple(so.state[sp]["row_var"].shape) == (2, 4, 1) and tuple(so.state[sp]["col_var"].shape) == (2, 1, 3)
    assert_state_like(so, to, [sp], [tp], rtol=1e-12, atol=1e-14)


MUON = [dict(lr=0.02), dict(lr=0.05, nesterov=False, weight_decay=0.0, adjust_lr_fn="match_rms_adamw"),
        dict(lr=0.02, momentum=0.5, ns_steps=3, ns_coefficients=(3.0, -3.2, 1.2), adjust_lr_fn="original")]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", MUON, ids=["default", "no-nesterov-adamw-rms", "coeffs"])
def test_muon_like_torch(torch, kw, dtype):
    """A tall and a wide matrix, the same gradients on both sides; the update
    is orthogonalized in bfloat16 on both."""
    rng = np.random.default_rng(7)
    npdt = np.float64 if dtype == "float64" else np.float32
    ws = [rng.standard_normal((6, 4)).astype(npdt), rng.standard_normal((3, 5)).astype(npdt)]
    sps = [nn.Parameter(st.tensor(w)) for w in ws]
    tps = [torch.nn.Parameter(torch.tensor(w)) for w in ws]
    so, to = optim.Muon(sps, **kw), torch.optim.Muon(tps, **kw)
    for _ in range(5):
        for sp, tp in zip(sps, tps):
            g = rng.standard_normal(sp.shape).astype(npdt)
            sp.grad, tp.grad = st.tensor(g), torch.tensor(g)
        so.step()
        to.step()
        assert_params_close(sps, tps)
    assert max(np.abs(np_of(p) - w).max() for p, w in zip(sps, ws)) > 1e-2
    assert_state_like(so, to, sps, tps)


# ---------------- state_dict round trip ----------------
ROUND_TRIP = [
    ("Rprop", dict(lr=0.05, etas=(0.4, 1.3))),
    ("ASGD", dict(lr=0.05, t0=3, lambd=0.01, weight_decay=0.01)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.01)),
]


def _groups(model):
    ps = list(model.parameters())
    return [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}]


def _to_st(v):
    """A torch state_dict's values as symtrace's (tensors through numpy)."""
    import torch
    if isinstance(v, torch.Tensor):
        return st.tensor(v.detach().numpy().copy())
    if isinstance(v, dict):
        return {k: _to_st(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_st(x) for x in v]
    return v


def _save_load(sd, tmp_path):
    path = os.path.join(str(tmp_path), "optim.pt")
    st.save(sd, path)
    return st.load(path)


@pytest.mark.parametrize("case", ROUND_TRIP, ids=[c[0] for c in ROUND_TRIP])
def test_state_dict_round_trip(torch, case, tmp_path):
    name, kw = case
    sm, tm = make_models(torch, seed=3, dtype="float32")
    so = getattr(optim, name)(_groups(sm), **kw)
    to = getattr(torch.optim, name)(_groups(tm), **kw)
    x, y = make_data(seed=4)
    for _ in range(5):
        backward_both(sm, tm, torch, x, y)
        so.step()
        to.step()
    sd, tsd = so.state_dict(), to.state_dict()
    assert list(sd["state"].keys()) == list(tsd["state"].keys()) == [0, 1, 2, 3]
    assert sd["param_groups"] == tsd["param_groups"]
    assert_tree_close(sd["state"], tsd["state"], 1e-5, 1e-6)

    def clone_model(src):
        m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
        with st.no_grad():
            for a, b in zip(m.parameters(), src.parameters()):
                a.copy_(b.detach())
        return m

    sm2, sm3 = clone_model(sm), clone_model(sm)
    so2 = getattr(optim, name)(_groups(sm2), lr=123.0)
    so2.load_state_dict(_save_load(sd, tmp_path))
    so3 = getattr(optim, name)(_groups(sm3), lr=123.0)
    so3.load_state_dict(_to_st(tsd))
    assert [g["lr"] for g in so2.param_groups] == [g["lr"] for g in to.param_groups]
    for _ in range(4):
        backward_both(sm, tm, torch, x, y)
        for m in (sm2, sm3):
            for a, b in zip(m.parameters(), sm.parameters()):
                a.grad = b.grad.clone()
        so.step()
        so2.step()
        so3.step()
        to.step()
        for a, b, c in zip(sm2.parameters(), sm.parameters(), sm3.parameters()):
            np.testing.assert_array_equal(np_of(a), np_of(b))
            np.testing.assert_allclose(np_of(c), np_of(b), rtol=1e-5, atol=1e-6)
        assert_params_close(list(sm.parameters()), list(tm.parameters()))
    assert_state_like(so2, to, list(sm2.parameters()), list(tm.parameters()))
    p0 = next(iter(sm2.parameters()))
    k0 = list(so2.state[p0])[-1]
    assert so2.state[p0][k0] is not so.state[next(iter(sm.parameters()))][k0]


def test_muon_state_dict_round_trip(torch, tmp_path):
    rng = np.random.default_rng(8)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    sp, sp2, tp = nn.Parameter(st.tensor(w)), nn.Parameter(st.tensor(w)), torch.nn.Parameter(torch.tensor(w))
    so, to = optim.Muon([sp], lr=0.03), torch.optim.Muon([tp], lr=0.03)
    grads = [rng.standard_normal(w.shape).astype(np.float32) for _ in range(5)]
    for g in grads[:3]:
        sp.grad, tp.grad = st.tensor(g), torch.tensor(g)
        so.step()
        to.step()
    assert_tree_close(so.state_dict()["state"], to.state_dict()["state"], 1e-5, 1e-6)
    so2 = optim.Muon([sp2], lr=1.0)
    with st.no_grad():
        sp2.copy_(sp)
    so2.load_state_dict(_save_load(so.state_dict(), tmp_path))
    for g in grads[3:]:
        sp.grad, sp2.grad, tp.grad = st.tensor(g), st.tensor(g), torch.tensor(g)
        so.step()
        so2.step()
        to.step()
        np.testing.assert_array_equal(np_of(sp2), np_of(sp))
        assert_params_close([sp], [tp])


# ---------------- LBFGS ----------------
def _lstsq(torch, dtype, seed=11):
    rng = np.random.default_rng(seed)
    npdt = np.float64 if dtype == "float64" else np.float32
    A = rng.standard_normal((12, 5)).astype(npdt)
    b = rng.standard_normal((12, 1)).astype(npdt)
    w0 = (0.1 * rng.standard_normal((5, 1))).astype(npdt)
    b0 = np.zeros((1,), npdt)
    sps = [nn.Parameter(st.tensor(w0)), nn.Parameter(st.tensor(b0))]
    tps = [torch.nn.Parameter(torch.tensor(w0)), torch.nn.Parameter(torch.tensor(b0))]
    sA, sb, tA, tb = st.tensor(A), st.tensor(b), torch.tensor(A), torch.tensor(b)
    return sps, tps, (lambda p: ((sA @ p[0] + p[1] - sb) ** 2).mean()), (lambda p: ((tA @ p[0] + p[1] - tb) ** 2).mean())


def _rosenbrock(torch, dtype):
    npdt = np.float64 if dtype == "float64" else np.float32
    x0 = np.array([-1.5, 2.0], npdt)
    sps, tps = [nn.Parameter(st.tensor(x0))], [torch.nn.Parameter(torch.tensor(x0))]

    def f(p):
        x = p[0]
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    return sps, tps, f, f


LBFGS_CASES = [
    # problem, dtype, options, relative tolerance per step
    ("lstsq", "float64", dict(lr=0.5, max_iter=4, history_size=3), 1e-9),
    ("lstsq", "float64", dict(max_iter=5, line_search_fn="strong_wolfe"), 1e-9),
    # float32: few iterations, away from the minimum, where the float32 noise of the gradient
    # (both libraries' own roundings) would steer the two runs apart
    ("lstsq", "float32", dict(lr=0.5, max_iter=2, history_size=3), 1e-5),
    ("lstsq", "float32", dict(max_iter=2, line_search_fn="strong_wolfe"), 1e-5),
    ("rosenbrock", "float64", dict(lr=0.01, max_iter=10, history_size=5), 1e-9),
    # the ill-conditioned valley magnifies last-bit differences of dot / add(alpha) (torch fuses them)
    ("rosenbrock", "float64", dict(max_iter=10, history_size=5, line_search_fn="strong_wolfe"), 1e-7),
]


@pytest.mark.parametrize("case", LBFGS_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2].get('line_search_fn')}" for c in LBFGS_CASES])
def test_lbfgs_like_torch(torch, case, tmp_path):
    problem, dtype, kw, rtol = case
    sps, tps, sf, tf = (_lstsq if problem == "lstsq" else _rosenbrock)(torch, dtype)
    so, to = optim.LBFGS(sps, **kw), torch.optim.LBFGS(tps, **kw)

    def sclosure():
        so.zero_grad()
        loss = sf(sps)
        loss.backward()
        return loss

    def tclosure():
        to.zero_grad()
        loss = tf(tps)
        loss.backward()
        return loss

    first = None
    for k in range(5):
        ls, lt = so.step(sclosure), to.step(tclosure)
        assert isinstance(ls, st.Tensor)
        assert ls.item() == pytest.approx(lt.item(), rel=rtol, abs=1e-12)
        for a, b in zip(sps, tps):
            np.testing.assert_allclose(np_of(a), np_of(b), rtol=rtol, atol=rtol * 1e-2, err_msg=f"step {k + 1}")
        first = ls.item() if first is None else first
        s, t = so.state[sps[0]], to.state[tps[0]]
        assert (s["func_evals"], s["n_iter"]) == (t["func_evals"], t["n_iter"])
    assert sf(sps).item() < 0.9 * first
    # (old_dirs are differences of gradients: float32 cancellation, hence the absolute floor)
    assert_tree_close(so.state[sps[0]], to.state[tps[0]], max(rtol, 1e-6) * 10,
                      1e-9 if dtype == "float64" else 1e-6)
    sd, tsd = so.state_dict(), to.state_dict()
    assert sd["param_groups"] == tsd["param_groups"] and list(sd["state"]) == list(tsd["state"]) == [0]
    # a fresh LBFGS loaded from the saved state continues exactly like this one
    sps2 = [nn.Parameter(p.detach().clone()) for p in sps]
    so2 = optim.LBFGS(sps2, lr=123.0)
    so2.load_state_dict(_save_load(sd, tmp_path))

    def sclosure2():
        so2.zero_grad()
        loss = sf(sps2)
        loss.backward()
        return loss

    for _ in range(2):
        so.step(sclosure)
        so2.step(sclosure2)
        to.step(tclosure)
        for a, b, c in zip(sps2, sps, tps):
            np.testing.assert_array_equal(np_of(a), np_of(b))
            np.testing.assert_allclose(np_of(b), np_of(c), rtol=rtol, atol=rtol * 1e-2)
    assert so2.state[sps2[0]]["n_iter"] == to.state[tps[0]]["n_iter"]


def test_lbfgs_stops_at_a_minimum_and_counts_evaluations(torch):
    """At a point with zero gradient the step returns after one evaluation
    (tolerance_grad), as torch."""
    sp, tp = nn.Parameter(st.zeros(3)), torch.nn.Parameter(torch.zeros(3))
    so, to = optim.LBFGS([sp]), torch.optim.LBFGS([tp])

    def sc():
        so.zero_grad()
        loss = (sp * sp).sum()
        loss.backward()
        return loss

    def tc():
        to.zero_grad()
        loss = (tp * tp).sum()
        loss.backward()
        return loss

    assert so.step(sc).item() == to.step(tc).item() == 0.0
    assert dict(so.state[sp]) == dict(to.state[tp]) == {"func_evals": 1, "n_iter": 0}


# ---------------- without torch: compiled steps, hand-computed updates ----------------
def _train(name, kw, compiled, steps=4):
    st.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
    opt = getattr(optim, name)(m.parameters(), **kw)
    rng = np.random.default_rng(0)
    data = [(st.tensor(rng.standard_normal((6, 4)).astype(np.float32)),
             st.tensor(rng.standard_normal((6, 2)).astype(np.float32))) for _ in range(3)]
    if name == "LBFGS":
        def step(x, y):
            def closure():
                opt.zero_grad()
                loss = ((m(x) - y) ** 2).mean()
                loss.backward()
                return loss
            return opt.step(closure)
    else:
        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
    f = st.compile(step) if compiled else step
    losses = [f(*data[i % 3]).item() for i in range(steps)]
    return losses, [np_of(p) for p in m.parameters()], opt


@pytest.mark.parametrize("name,kw", [("Rprop", dict(lr=0.02)), ("ASGD", dict(lr=0.05, t0=2)),
                                     ("Adafactor", dict(lr=0.05)), ("LBFGS", dict(max_iter=3))],
                         ids=["Rprop", "ASGD", "Adafactor", "LBFGS"])
def test_compiled_training_step_matches_eager(name, kw):
    le, pe, oe = _train(name, kw, compiled=False)
    lc, pc, oc = _train(name, kw, compiled=True)
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert le[-1] < le[0]
    for p, q in zip(oe.state, oc.state):
        for k, v in oe.state[p].items():
            w = oc.state[q][k]
            if isinstance(v, st.Tensor):
                np.testing.assert_allclose(np_of(w), np_of(v), rtol=1e-6, atol=1e-7, err_msg=k)


def test_rprop_by_hand():
    """Two steps on one parameter: the step sizes grow where the gradient
    keeps its sign, shrink (and the move is skipped) where it flips, stay
    where it was zero; clamped to step_sizes."""
    p = nn.Parameter(st.tensor([1.0, 1.0, 1.0, 1.0]))
    o = optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.06, 0.15))
    p.grad = st.tensor([1.0, -1.0, 1.0, 0.0])
    o.step()
    np.testing.assert_allclose(np_of(p), [0.9, 1.1, 0.9, 1.0], rtol=1e-6)
    p.grad = st.tensor([2.0, -3.0, -1.0, 5.0])
    o.step()
    # step sizes: 0.1*2 -> 0.15 (clamp), 0.15, 0.1*0.5 -> 0.06 (clamp), 0.1 (prev grad was 0)
    np.testing.assert_allclose(np_of(o.state[p]["step_size"]), [0.15, 0.15, 0.06, 0.1], rtol=1e-6)
    np.testing.assert_allclose(np_of(p), [0.75, 1.25, 0.9, 0.9], rtol=1e-6)
    np.testing.assert_allclose(np_of(o.state[p]["prev"]), [2.0, -3.0, 0.0, 5.0])
    assert o.state[p]["step"].item() == 2.0


def test_asgd_by_hand():
    """lambd = 0: plain SGD with eta = lr / (1 + 0)^alpha = lr; ax is p until
    t0 and then the running mean of the iterates after it."""
    p = nn.Parameter(st.tensor([0.0], dtype=st.float64))
    o = optim.ASGD([p], lr=0.5, lambd=0.0, t0=1)
    xs = []
    for g in (1.0, -2.0, 4.0):
        p.grad = st.tensor([g], dtype=st.float64)
        o.step()
        xs.append(p.item())
    assert xs == [-0.5, 0.5, -1.5]
    s = o.state[p]
    assert s["eta"].item() == 0.5 and s["step"].item() == 3.0
    assert s["mu"].item() == 0.5                          # 1 / max(1, 3 - 1)
    # ax: p at step 1 (mu = 1), then ax += mu (p - ax) with mu = 1, 1
    assert s["ax"].item() == pytest.approx(-1.5)


def test_adafactor_by_hand():
    """First step on a vector: v = g^2, u = g / |g| = sign(g), rms(u) = 1,
    alpha = max(eps2, rms(p)) * min(lr, 1); p -= alpha * sign(g)."""
    p = nn.Parameter(st.tensor([3.0, -4.0], dtype=st.float64))
    o = optim.Adafactor([p], lr=0.1)
    p.grad = st.tensor([0.5, -2.0], dtype=st.float64)
    o.step()
    alpha = math.sqrt((9 + 16) / 2) * 0.1
    np.testing.assert_allclose(np_of(p), [3.0 - alpha, -4.0 + alpha], rtol=1e-12)
    np.testing.assert_allclose(np_of(o.state[p]["variance"]), [0.25, 4.0], rtol=1e-12)


def test_lbfgs_quadratic_by_hand():
    """On f(x) = 0.5 |x|^2 the first iteration steps t = min(1, 1/|g|_1) lr
    along -g; with strong_wolfe it reaches the minimum."""
    x = nn.Parameter(st.tensor([3.0, -1.0], dtype=st.float64))
    o = optim.LBFGS([x], max_iter=1)

    def closure():
        o.zero_grad()
        loss = 0.5 * (x * x).sum()
        loss.backward()
        return loss

    assert o.step(closure).item() == 5.0
    np.testing.assert_allclose(np_of(x), [3.0 - 3.0 / 4, -1.0 + 1.0 / 4], rtol=1e-14)
    o2 = optim.LBFGS([x], line_search_fn="strong_wolfe")
    o = o2
    o2.step(closure)
    np.testing.assert_allclose(np_of(x), [0.0, 0.0], atol=1e-8)


def test_sparse_adam_without_torch():
    p = nn.Parameter(st.ones(3))
    o = optim.SparseAdam([p])
    p.grad = st.ones(3)
    with pytest.raises(RuntimeError, match="does not support dense gradients"):
        o.step()
    with pytest.raises(ValueError, match="Invalid learning rate: 0"):
        optim.SparseAdam([p], lr=0)
