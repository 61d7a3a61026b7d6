# symtrace.nn.utils beyond clipping, against torch.nn.utils with identical
# weights: the submodules and their names (clip_grad, convert_parameters,
# parametrize, parametrizations, stateless, fusion, init, memory_format), the
# hook-based weight_norm / spectral_norm and their removal, parametrize with
# custom parametrizations (right_inverse, chaining, cached, removal both ways,
# state_dict keys, the class swap), the parametrizations weight_norm,
# spectral_norm (torch's u / v copied in, so the power iterations agree) and
# orthogonal ('householder'), BatchNorm fusion, functional_call, skip_init,
# torch's errors, Module state_dict hooks, and a compiled training step of
# a model with all of them against eager.
import copy
import inspect
import pickle
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F
from conftest import assert_close

P = nn.utils.parametrize
NP = nn.utils.parametrizations

pytestmark = [pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")]


def _s(t):
    """The symtrace copy of a torch tensor."""
    return st.tensor(t.detach().numpy().copy())


def _load_from_torch(sm, tm):
    sm.load_state_dict({k: _s(v) for k, v in tm.state_dict().items()})


def _pair(torch, make_t, make_s, dtype="float64", seed=0):
    """A torch module and a symtrace module with the same weights."""
    torch.manual_seed(seed)
    tm = make_t()
    sm = make_s()
    if dtype == "float64":
        tm, sm = tm.double(), sm.double()
    _load_from_torch(sm, tm)
    return tm, sm


def _inputs(torch, shape, seed=1, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(a, requires_grad=True), st.tensor(a, requires_grad=True)


def _same_error(torch_fn, st_fn, exact=True):
    """torch_fn and st_fn raise the same exception type (and message)."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(type(te.value)) as se:
        st_fn()
    msg = str(se.value).replace("symtrace.", "torch.")   # torch.Size, torch.float64 in torch's
    if exact:
        assert msg == str(te.value)
    return msg


# ---------------------------------------------------------------- names
SUBMODULES = ["clip_grad", "convert_parameters", "parametrize", "parametrizations", "stateless", "fusion",
              "memory_format", "init", "rnn"]


def test_package_names_match_torch(torch):
    import importlib
    import torch.nn.utils as TU
    assert sorted(nn.utils.__all__) == sorted(TU.__all__)
    for name in TU.__all__:
        assert hasattr(nn.utils, name), name
    for sub in SUBMODULES + ["weight_norm", "spectral_norm"]:
        tm = importlib.import_module("torch.nn.utils." + sub)
        sm = importlib.import_module("symtrace.nn.utils." + sub)
        names = getattr(tm, "__all__", None)
        if names is None:   # torch's convert_parameters, init: its public functions
            names = [n for n, f in vars(tm).items() if inspect.isfunction(f) and not n.startswith("_")
                     and f.__module__ == tm.__name__]
        else:
            assert sorted(sm.__all__) == sorted(names), sub
        assert names, sub
        for name in names:
            tf, sf = getattr(tm, name), getattr(sm, name)
            if inspect.isclass(tf):   # constructors (ParametrizationList, SpectralNorm, ...)
                tf, sf = tf.__init__, sf.__init__
            if inspect.isfunction(tf):
                tp = [(p.name, p.kind, p.default) for p in inspect.signature(tf).parameters.values()]
                sp = [(p.name, p.kind, p.default) for p in inspect.signature(sf).parameters.values()]
                assert sp == tp, (sub, name)


def test_clip_grad_submodule_and_old_names():
    import symtrace.nn.utils.clip_grad as cg
    import symtrace.nn.utils.convert_parameters as cp
    assert cg.clip_grad_norm_ is nn.utils.clip_grad_norm_
    assert cg._get_total_norm is nn.utils.get_total_norm
    assert cg._clip_grads_with_norm_ is nn.utils.clip_grads_with_norm_
    assert cp.parameters_to_vector is nn.utils.parameters_to_vector
    p = nn.Parameter(st.tensor([3.0, 4.0]))
    p.grad = st.tensor([3.0, 4.0])
    total = cg.clip_grad_norm_([p], 1.0)
    np.testing.assert_allclose(total.item(), 5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    cg.clip_grad_value_([p], 0.7)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.7], rtol=1e-6)


# ---------------------------------------------------------------- hook-based weight_norm
@pytest.mark.parametrize("kind,dim", [("linear", 0), ("linear", 1), ("linear", None), ("conv", 0),
                                      ("conv", 2), ("conv", -1)])
def test_weight_norm_legacy(torch, kind, dim):
    if kind == "linear":
        tm, sm = _pair(torch, lambda: torch.nn.Linear(5, 4), lambda: nn.Linear(5, 4))
        shape = (3, 5)
    else:
        tm, sm = _pair(torch, lambda: torch.nn.Conv2d(2, 3, 3), lambda: nn.Conv2d(2, 3, 3))
        shape = (2, 2, 5, 5)
    with pytest.warns(FutureWarning):
        assert nn.utils.weight_norm(sm, dim=dim) is sm
    torch.nn.utils.weight_norm(tm, dim=dim)
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert_close(sm.weight_g.detach(), tm.weight_g)
    assert isinstance(sm.weight_g, nn.Parameter) and isinstance(sm.weight_v, nn.Parameter)
    for _ in range(2):   # the pre-hook recomputes the weight from g and v on each call
        tx, sx = _inputs(torch, shape)
        yt, ys = tm(tx), sm(sx)
        assert_close(ys.detach(), yt)
        w = np.random.default_rng(2).standard_normal(tuple(yt.shape))
        (yt * torch.tensor(w)).sum().backward()
        (ys * st.tensor(w)).sum().backward()
        assert_close(sm.weight_g.grad, tm.weight_g.grad)
        assert_close(sm.weight_v.grad, tm.weight_v.grad)
        assert_close(sx.grad, tx.grad)
        with torch.no_grad():
            tm.weight_g.mul_(1.5)
        with st.no_grad():
            sm.weight_g.mul_(1.5)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        nn.utils.weight_norm(sm, dim=dim)
    assert nn.utils.remove_weight_norm(sm) is sm
    torch.nn.utils.remove_weight_norm(tm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert isinstance(sm.weight, nn.Parameter) and sm.weight.requires_grad
    assert_close(sm.weight.detach(), tm.weight)
    assert not sm._forward_pre_hooks and not sm._has_hooks
    _same_error(lambda: torch.nn.utils.remove_weight_norm(tm), lambda: nn.utils.remove_weight_norm(sm),
                exact=False)


def test_norm_except_dim_matches_torch(torch):
    from symtrace.nn.utils.weight_norm import _weight_norm, norm_except_dim
    a = np.random.default_rng(3).standard_normal((3, 4, 5))
    for dim in (-1, 0, 1, 2, -2):
        assert_close(norm_except_dim(st.tensor(a), 2, dim), torch.norm_except_dim(torch.tensor(a), 2, dim))
    g = np.random.default_rng(4).standard_normal((1, 4, 1))
    assert_close(_weight_norm(st.tensor(a), st.tensor(g), 1), torch._weight_norm(torch.tensor(a), torch.tensor(g), 1))


# ---------------------------------------------------------------- hook-based spectral_norm
@pytest.mark.parametrize("kind", ["linear", "convT"])
def test_spectral_norm_legacy(torch, kind):
    if kind == "linear":
        tm, sm = _pair(torch, lambda: torch.nn.Linear(5, 4), lambda: nn.Linear(5, 4))
        shape = (3, 5)
    else:   # dim defaults to 1 for ConvTranspose
        tm, sm = _pair(torch, lambda: torch.nn.ConvTranspose2d(3, 2, 2), lambda: nn.ConvTranspose2d(3, 2, 2))
        shape = (2, 3, 3, 3)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=2)
    assert nn.utils.spectral_norm(sm, n_power_iterations=2) is sm
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert tuple(sm.weight_u.shape) == tuple(tm.weight_u.shape)
    assert tuple(sm.weight_v.shape) == tuple(tm.weight_v.shape)
    assert_close(sm.weight.detach(), tm.weight)    # before the first call: the weight itself
    # torch's state_dict (with its random u, v) loads, metadata and all
    tsd = tm.state_dict()
    ssd = sm.state_dict()
    assert ssd._metadata[""] == tsd._metadata[""] == {"version": 1, "spectral_norm": {"weight.version": 1}}
    sm.load_state_dict({k: _s(v) for k, v in tsd.items()})
    for mode in ("train", "train", "eval", "eval"):
        tm.train(mode == "train")
        sm.train(mode == "train")
        tx, sx = _inputs(torch, shape)
        yt, ys = tm(tx), sm(sx)
        assert_close(ys.detach(), yt, msg=mode)
        assert_close(sm.weight_u, tm.weight_u, msg=mode)
        assert_close(sm.weight_v, tm.weight_v, msg=mode)
        # sigma, the estimate of the largest singular value
        sigma_t = (tm.weight_orig / tm.weight).flatten()[0]
        sigma_s = (sm.weight_orig / sm.weight).flatten()[0]
        np.testing.assert_allclose(sigma_s.item(), sigma_t.item(), rtol=1e-10)
        yt.pow(2).sum().backward()
        ys.pow(2).sum().backward()
        assert_close(sm.weight_orig.grad, tm.weight_orig.grad, msg=mode)
        assert_close(sx.grad, tx.grad, msg=mode)
        tm.zero_grad()
        sm.zero_grad()
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(sm)
    torch.nn.utils.remove_spectral_norm(tm)
    assert nn.utils.remove_spectral_norm(sm) is sm
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    assert_close(sm.weight.detach(), tm.weight)
    assert isinstance(sm.weight, nn.Parameter)
    # the state_dict hooks went with it (torch 2.13 keeps its load pre-hook, and
    # then refuses this load)
    assert not sm._state_dict_hooks and not sm._load_state_dict_pre_hooks
    sm.load_state_dict(sm.state_dict())
    _same_error(lambda: torch.nn.utils.remove_spectral_norm(tm), lambda: nn.utils.remove_spectral_norm(sm),
                exact=False)


def test_spectral_norm_legacy_old_checkpoint(torch):
    """A checkpoint from before spectral_norm's version 1 (weight saved,
    weight_v not) is converted on load: v solved with a pseudo-inverse."""
    tm, sm = _pair(torch, lambda: torch.nn.Linear(4, 3), lambda: nn.Linear(4, 3))
    torch.nn.utils.spectral_norm(tm)
    nn.utils.spectral_norm(sm)
    tm(torch.zeros(1, 4, dtype=torch.float64))
    old = {k: v for k, v in tm.state_dict().items() if k != "weight_v"}
    old["weight"] = tm.weight.detach()
    t2 = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3).double())
    t2.load_state_dict(old)
    if NP._linalg_fn("pinv") is None and not hasattr(st, "pinverse"):
        with pytest.raises(NotImplementedError, match="needs a pseudo-inverse"):
            sm.load_state_dict({k: _s(v) for k, v in old.items()})
        return
    sm.load_state_dict({k: _s(v) for k, v in old.items()})
    assert_close(sm.weight_v, t2.weight_v, rtol=1e-8, atol=1e-10)


def test_spectral_norm_errors(torch):
    _same_error(lambda: torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2), n_power_iterations=0),
                lambda: nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0))
    _same_error(lambda: torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2, bias=False), name="bias"),
                lambda: nn.utils.spectral_norm(nn.Linear(2, 2, bias=False), name="bias"))
    _same_error(lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2), dim=2),
                lambda: NP.spectral_norm(nn.Linear(2, 2), dim=2))
    _same_error(lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2), name="nope"),
                lambda: NP.spectral_norm(nn.Linear(2, 2), name="nope"))


# ---------------------------------------------------------------- parametrizations.weight_norm
def test_parametrized_weight_norm(torch):
    tm, sm = _pair(torch, lambda: torch.nn.Linear(5, 4), lambda: nn.Linear(5, 4))
    torch.nn.utils.parametrizations.weight_norm(tm)
    assert NP.weight_norm(sm) is sm
    assert type(sm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert isinstance(sm, nn.Linear)
    assert list(sm.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert isinstance(sm.parametrizations, nn.ModuleDict)
    assert isinstance(sm.parametrizations.weight, P.ParametrizationList)
    assert not hasattr(sm.parametrizations.weight, "original")
    assert_close(sm.parametrizations.weight.original0.detach(), tm.parametrizations.weight.original0)
    assert_close(sm.weight.detach(), tm.weight)
    tx, sx = _inputs(torch, (3, 5))
    yt, ys = tm(tx), sm(sx)
    assert_close(ys.detach(), yt)
    yt.pow(2).sum().backward()
    ys.pow(2).sum().backward()
    for n in ("original0", "original1"):
        assert_close(getattr(sm.parametrizations.weight, n).grad, getattr(tm.parametrizations.weight, n).grad)
    assert_close(sx.grad, tx.grad)
    # a state_dict of the hook-based weight_norm loads into it (weight_g -> original0, weight_v -> original1)
    torch.manual_seed(5)
    old = torch.nn.utils.weight_norm(torch.nn.Linear(5, 4).double())
    sm.load_state_dict({k: _s(v) for k, v in old.state_dict().items()})
    assert_close(sm.weight.detach(), old.weight)
    # leaving it unparametrized is refused for several originals; parametrized is the weight
    _same_error(lambda: torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", False),
                lambda: P.remove_parametrizations(sm, "weight", leave_parametrized=False))
    tm.load_state_dict(old.state_dict())
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    P.remove_parametrizations(sm, "weight")
    assert type(sm) is nn.Linear and not hasattr(sm, "parametrizations")
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    assert_close(sm.weight.detach(), tm.weight)
    assert isinstance(sm.weight, nn.Parameter)


# ---------------------------------------------------------------- parametrizations.spectral_norm
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_parametrized_spectral_norm(torch, kind):
    make = {"linear": (lambda: torch.nn.Linear(6, 4), lambda: nn.Linear(6, 4), (3, 6)),
            "conv": (lambda: torch.nn.Conv2d(3, 4, 3), lambda: nn.Conv2d(3, 4, 3), (2, 3, 5, 5)),
            "convT": (lambda: torch.nn.ConvTranspose2d(3, 2, 2), lambda: nn.ConvTranspose2d(3, 2, 2),
                      (2, 3, 3, 3))}[kind]
    tm, sm = _pair(torch, make[0], make[1])
    torch.nn.utils.parametrizations.spectral_norm(tm)
    NP.spectral_norm(sm)
    assert list(sm.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
        "parametrizations.weight.0._v"]
    tsn, ssn = tm.parametrizations.weight[0], sm.parametrizations.weight[0]
    assert ssn.dim == tsn.dim
    # the same starting point of the power iteration as torch's (its random u, v):
    # torch's state_dict loads into the buffers in place
    u_buf, v_buf = ssn._u, ssn._v
    _load_from_torch(sm, tm)
    assert_close(ssn._u, tsn._u)
    for mode in ("train", "train", "eval", "eval"):
        tm.train(mode == "train")
        sm.train(mode == "train")
        tx, sx = _inputs(torch, make[2])
        yt, ys = tm(tx), sm(sx)
        assert_close(ys.detach(), yt, msg=mode)
        assert_close(ssn._u, tsn._u, msg=mode)
        assert_close(ssn._v, tsn._v, msg=mode)
        wt = tm.parametrizations.weight.original
        ws = sm.parametrizations.weight.original
        sig_t = (wt / tm.weight).flatten()[0].item()
        sig_s = (ws / sm.weight).flatten()[0].item()
        np.testing.assert_allclose(sig_s, sig_t, rtol=1e-10)
        yt.pow(2).sum().backward()
        ys.pow(2).sum().backward()
        assert_close(ws.grad, wt.grad, msg=mode)
        assert_close(sx.grad, tx.grad, msg=mode)
        tm.zero_grad()
        sm.zero_grad()
    assert ssn._u is u_buf and ssn._v is v_buf   # updated in place
    # the estimate is the largest singular value after enough iterations
    sm.train()
    for _ in range(30):
        sm.weight
    W = sm.parametrizations.weight.original.detach().numpy()
    if kind == "convT":
        W = np.moveaxis(W, 1, 0)
    W = W.reshape(W.shape[0], -1)
    sig = (sm.parametrizations.weight.original / sm.weight).flatten()[0].item()
    np.testing.assert_allclose(sig, np.linalg.svd(W, compute_uv=False)[0], rtol=1e-6)


# ---------------------------------------------------------------- parametrize
def _custom(base):
    class Symmetric(base):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    class Positive(base):
        def forward(self, X):
            return X.exp()

        def right_inverse(self, Y):
            return Y.log()

    class Scale(base):   # no right_inverse: taken as the identity at registration
        def forward(self, X):
            return X * 2.0

    class Diag(base):    # the original has another shape than the tensor
        def forward(self, d):
            return d.diag_embed()

        def right_inverse(self, X):
            return X.diagonal().clone()

    return Symmetric, Positive, Scale, Diag


def test_parametrize_custom(torch):
    TSym, TPos, TScale, TDiag = _custom(torch.nn.Module)
    SSym, SPos, SScale, SDiag = _custom(nn.Module)
    tm, sm = _pair(torch, lambda: torch.nn.Linear(3, 3), lambda: nn.Linear(3, 3))
    with torch.no_grad():
        tm.bias.abs_()
    _load_from_torch(sm, tm)
    for m, R, Sym, Pos in ((tm, torch.nn.utils.parametrize, TSym, TPos), (sm, P, SSym, SPos)):
        assert not R.is_parametrized(m)
        assert R.register_parametrization(m, "weight", Sym()) is m
        R.register_parametrization(m, "bias", Pos())
        assert R.is_parametrized(m) and R.is_parametrized(m, "weight") and not R.is_parametrized(m, "foo")
    assert type(sm).__name__ == "ParametrizedLinear"
    assert repr(sm) == repr(tm)
    assert P.type_before_parametrizations(sm) is nn.Linear
    assert list(sm.state_dict()) == list(tm.state_dict()) == [
        "parametrizations.weight.original", "parametrizations.bias.original"]
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert_close(sm.parametrizations.weight.original.detach(), tm.parametrizations.weight.original)
    assert_close(sm.parametrizations.bias.original.detach(), tm.parametrizations.bias.original)
    assert_close(sm.weight.detach(), tm.weight)
    tx, sx = _inputs(torch, (4, 3))
    yt, ys = tm(tx), sm(sx)
    assert_close(ys.detach(), yt)
    yt.pow(2).sum().backward()
    ys.pow(2).sum().backward()
    for n in ("weight", "bias"):
        assert_close(getattr(sm.parametrizations, n).original.grad, getattr(tm.parametrizations, n).original.grad)
    # assigning goes through right_inverse into the original, which keeps its identity
    orig = sm.parametrizations.weight.original
    A = np.random.default_rng(7).standard_normal((3, 3))
    tm.weight = torch.tensor(A)
    sm.weight = st.tensor(A)
    assert sm.parametrizations.weight.original is orig
    assert_close(orig.detach(), tm.parametrizations.weight.original)
    # cached(): one evaluation per block
    assert sm.weight is not sm.weight
    with P.cached():
        w1 = sm.weight
        assert sm.weight is w1
        with P.cached():
            assert sm.weight is w1
        assert sm.weight is w1
    assert sm.weight is not w1
    # chaining: a second parametrization of the same tensor applies after the first
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TScale())
    P.register_parametrization(sm, "weight", SScale())
    assert len(sm.parametrizations.weight) == 2
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert_close(sm.weight.detach(), tm.weight)
    with pytest.raises(RuntimeError, match="parametrization Scale does not implement right_inverse."):
        sm.weight = st.tensor(A)
    # removal, keeping the parametrized value and keeping the original
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=True)
    P.remove_parametrizations(sm, "weight", leave_parametrized=True)
    assert type(sm).__name__ == "ParametrizedLinear"
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["weight", "parametrizations.bias.original"]
    assert_close(sm.weight.detach(), tm.weight)
    assert isinstance(sm.weight, nn.Parameter)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "bias", leave_parametrized=False)
    P.remove_parametrizations(sm, "bias", leave_parametrized=False)
    assert type(sm) is nn.Linear and type(tm) is torch.nn.Linear
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["weight", "bias"]
    assert_close(sm.bias.detach(), tm.bias)
    assert not hasattr(sm, "parametrizations")
    # an original of another shape than the tensor it gives
    tm, sm = _pair(torch, lambda: torch.nn.Linear(3, 3), lambda: nn.Linear(3, 3))
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TDiag())
    P.register_parametrization(sm, "weight", SDiag())
    assert tuple(sm.parametrizations.weight.original.shape) == (3,)
    assert isinstance(sm.parametrizations.weight.original, nn.Parameter)
    assert_close(sm.weight.detach(), tm.weight)
    tm.weight = torch.tensor(A)
    sm.weight = st.tensor(A)
    assert_close(sm.parametrizations.weight.original.detach(), tm.parametrizations.weight.original)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=False)
    P.remove_parametrizations(sm, "weight", leave_parametrized=False)
    assert_close(sm.weight.detach(), tm.weight)


def test_parametrize_buffers_copy_and_transfer(torch):
    TSym, TPos, _, _ = _custom(torch.nn.Module)
    SSym, SPos, _, _ = _custom(nn.Module)
    tb, sb = torch.nn.BatchNorm1d(3).double(), nn.BatchNorm1d(3).double()
    with torch.no_grad():
        tb.running_var.uniform_(0.5, 2.0)
    _load_from_torch(sb, tb)
    torch.nn.utils.parametrize.register_parametrization(tb, "running_var", TPos())
    P.register_parametrization(sb, "running_var", SPos())
    assert list(sb.state_dict()) == list(tb.state_dict())
    assert "parametrizations.running_var.original" in dict(sb.named_buffers())
    assert_close(sb.running_var, tb.running_var)
    # deepcopy keeps the parametrization; pickling is refused, as torch's
    c = copy.deepcopy(sb)
    assert type(c).__name__ == "ParametrizedBatchNorm1d"
    assert_close(c.running_var, tb.running_var)
    assert c.parametrizations.running_var.original is not sb.parametrizations.running_var.original
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through"):
        pickle.dumps(sb)
    # transfer_parametrizations_and_params
    tm, sm = _pair(torch, lambda: torch.nn.Linear(3, 3), lambda: nn.Linear(3, 3))
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSym())
    P.register_parametrization(sm, "weight", SSym())
    t2, s2 = _pair(torch, lambda: torch.nn.Linear(3, 3), lambda: nn.Linear(3, 3), seed=3)
    torch.nn.utils.parametrize.transfer_parametrizations_and_params(tm, t2)
    assert P.transfer_parametrizations_and_params(sm, s2) is s2
    assert list(s2.state_dict()) == list(t2.state_dict())
    assert_close(s2.weight.detach(), t2.weight)


def test_parametrize_errors(torch):
    TSym, _, _, _ = _custom(torch.nn.Module)
    SSym, _, _, _ = _custom(nn.Module)

    class TBad(torch.nn.Module):
        def forward(self, X):
            return X[:2]

    class SBad(nn.Module):
        def forward(self, X):
            return X[:2]

    class TDtype(torch.nn.Module):
        def forward(self, X):
            return X.double()

    class SDtype(nn.Module):
        def forward(self, X):
            return X.double()

    class TInv(torch.nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    class SInv(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    R = torch.nn.utils.parametrize
    for tp, sp in ((TBad, SBad), (TDtype, SDtype), (TInv, SInv)):
        _same_error(lambda: R.register_parametrization(torch.nn.Linear(3, 3), "weight", tp()),
                    lambda: P.register_parametrization(nn.Linear(3, 3), "weight", sp()))
    # unsafe=True lets the shape change
    sm = P.register_parametrization(nn.Linear(3, 3), "weight", SBad(), unsafe=True)
    assert tuple(sm.weight.shape) == (2, 3)
    assert sm.parametrizations.weight.unsafe
    # a chained parametrization that changes the shape
    tm = R.register_parametrization(torch.nn.Linear(3, 3), "weight", TSym())
    sm = P.register_parametrization(nn.Linear(3, 3), "weight", SSym())
    _same_error(lambda: R.register_parametrization(tm, "weight", TBad()),
                lambda: P.register_parametrization(sm, "weight", SBad()))
    msg = _same_error(lambda: R.register_parametrization(tm, "nope", TSym()),
                      lambda: P.register_parametrization(sm, "nope", SSym()), exact=False)
    assert "does not have a parameter, a buffer, or a parametrized element with name 'nope'" in msg
    msg = _same_error(lambda: R.remove_parametrizations(tm, "bias"), lambda: P.remove_parametrizations(sm, "bias"),
                      exact=False)
    assert msg.endswith("does not have a parametrization on bias")
    with pytest.raises(ValueError, match="ParametrizationList requires one or more modules."):
        P.ParametrizationList([], nn.Parameter(st.zeros(2)))


# ---------------------------------------------------------------- parametrizations.orthogonal
def test_orthogonal_householder(torch):
    rng = np.random.default_rng(11)
    W = rng.standard_normal((4, 4))
    tm, sm = _pair(torch, lambda: torch.nn.Linear(4, 4), lambda: nn.Linear(4, 4))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(W))
    _load_from_torch(sm, tm)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map="householder")
    assert NP.orthogonal(sm, orthogonal_map="householder") is sm
    assert list(sm.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    # right_inverse: base = Q of W's QR (R's diagonal positive), original = -I
    assert_close(sm.parametrizations.weight[0].base, tm.parametrizations.weight[0].base, rtol=1e-9, atol=1e-12)
    assert_close(sm.parametrizations.weight.original.detach(), tm.parametrizations.weight.original)
    assert_close(sm.weight.detach(), tm.weight, rtol=1e-9, atol=1e-12)
    # a trained original: reflectors below the diagonal
    X = -np.eye(4) + 0.4 * np.tril(rng.standard_normal((4, 4)), -1)
    with torch.no_grad():
        tm.parametrizations.weight.original.copy_(torch.tensor(X))
    with st.no_grad():
        sm.parametrizations.weight.original.copy_(st.tensor(X))
    assert_close(sm.weight.detach(), tm.weight, rtol=1e-9, atol=1e-12)
    w = sm.weight.detach().numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-12)
    tx, sx = _inputs(torch, (3, 4))
    yt, ys = tm(tx), sm(sx)
    yt.pow(3).sum().backward()
    ys.pow(3).sum().backward()
    assert_close(sm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
                 rtol=1e-9, atol=1e-12)
    assert_close(sx.grad, tx.grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_orthogonal_householder_no_trivialization(torch, shape):
    W = np.random.default_rng(12).standard_normal(shape)

    def mod(lib):
        m = lib.Module()
        m.weight = lib.Parameter((torch if lib is torch.nn else st).tensor(W.copy()))
        return m

    tm, sm = mod(torch.nn), mod(nn)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map="householder", use_trivialization=False)
    NP.orthogonal(sm, orthogonal_map="householder", use_trivialization=False)
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["parametrizations.weight.original"]
    assert_close(sm.parametrizations.weight.original.detach(), tm.parametrizations.weight.original,
                 rtol=1e-9, atol=1e-12)
    assert_close(sm.weight.detach(), tm.weight, rtol=1e-9, atol=1e-12)
    tm.weight.pow(3).sum().backward()
    sm.weight.pow(3).sum().backward()
    assert_close(sm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
                 rtol=1e-9, atol=1e-12)


def test_orthogonal_other_maps_and_errors(torch):
    rng = np.random.default_rng(13)
    W = rng.standard_normal((4, 4))
    has = {"matrix_exp": NP._linalg_fn("matrix_exp") is not None, "cayley": NP._linalg_fn("solve") is not None}
    for m in ("matrix_exp", "cayley", None):
        tm, sm = _pair(torch, lambda: torch.nn.Linear(4, 4), lambda: nn.Linear(4, 4))
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(W))
        _load_from_torch(sm, tm)
        torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=m)
        if not has[m or "matrix_exp"]:   # this build lacks the op: a clear refusal
            with pytest.raises(NotImplementedError, match=f"orthogonal_map='{m or 'matrix_exp'}' needs"):
                NP.orthogonal(sm, orthogonal_map=m)
            assert type(sm) is nn.Linear
            continue
        NP.orthogonal(sm, orthogonal_map=m)
        assert_close(sm.weight.detach(), tm.weight, rtol=1e-9, atol=1e-12)
        X = 0.3 * rng.standard_normal((4, 4))
        with torch.no_grad():
            tm.parametrizations.weight.original.copy_(torch.tensor(X))
        with st.no_grad():
            sm.parametrizations.weight.original.copy_(st.tensor(X))
        assert_close(sm.weight.detach(), tm.weight, rtol=1e-9, atol=1e-12)
        tm.weight.pow(3).sum().backward()
        sm.weight.pow(3).sum().backward()
        assert_close(sm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
                     rtol=1e-9, atol=1e-12)
    R = torch.nn.utils.parametrizations
    _same_error(lambda: R.orthogonal(torch.nn.Linear(3, 3), orthogonal_map="qr"),
                lambda: NP.orthogonal(nn.Linear(3, 3), orthogonal_map="qr"))
    _same_error(lambda: R.orthogonal(torch.nn.Linear(3, 3), name="bias"),
                lambda: NP.orthogonal(nn.Linear(3, 3), name="bias"))
    _same_error(lambda: R.orthogonal(torch.nn.Linear(3, 3), name="nope"),
                lambda: NP.orthogonal(nn.Linear(3, 3), name="nope"), exact=False)
    tm = R.orthogonal(torch.nn.Linear(3, 4), orthogonal_map="householder")
    sm = NP.orthogonal(nn.Linear(3, 4), orthogonal_map="householder")
    _same_error(lambda: setattr(tm, "weight", torch.zeros(3, 3)), lambda: setattr(sm, "weight", st.zeros(3, 3)))
    # semi-orthogonal (a random completion of the base, as torch's)
    w = sm.weight.detach().numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(3), atol=1e-5)


# ---------------------------------------------------------------- fusion
def _bn_stats(torch, bn):
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn(torch, transpose):
    if transpose:
        tc, sc = _pair(torch, lambda: torch.nn.ConvTranspose2d(3, 4, 2), lambda: nn.ConvTranspose2d(3, 4, 2))
    else:
        tc, sc = _pair(torch, lambda: torch.nn.Conv2d(3, 4, 3, bias=False), lambda: nn.Conv2d(3, 4, 3, bias=False))
    tb, sb = torch.nn.BatchNorm2d(4).double(), nn.BatchNorm2d(4).double()
    _bn_stats(torch, tb)
    _load_from_torch(sb, tb)
    tc.eval(), sc.eval(), tb.eval(), sb.eval()
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tb, transpose=transpose)
    sf = nn.utils.fuse_conv_bn_eval(sc, sb, transpose=transpose)
    assert type(sf) is type(sc) and sf is not sc
    assert isinstance(sf.weight, nn.Parameter) and isinstance(sf.bias, nn.Parameter)
    assert_close(sf.weight.detach(), tf.weight)
    assert_close(sf.bias.detach(), tf.bias)
    _, sx = _inputs(torch, (2, 3, 5, 5))
    assert_close(sf(sx).detach(), sb(sc(sx)).detach().numpy(), rtol=1e-10, atol=1e-12)
    w, b = nn.utils.fuse_conv_bn_weights(sc.weight, sc.bias, sb.running_mean, sb.running_var, sb.eps, None, None,
                                         transpose)
    tw, tb_ = torch.nn.utils.fuse_conv_bn_weights(tc.weight, tc.bias, tb.running_mean, tb.running_var, tb.eps,
                                                  None, None, transpose)
    assert_close(w.detach(), tw)
    assert_close(b.detach(), tb_)
    assert w.requires_grad == tw.requires_grad and b.requires_grad == tb_.requires_grad
    sc.train()
    _same_error(lambda: torch.nn.utils.fuse_conv_bn_eval(tc.train(), tb), lambda: nn.utils.fuse_conv_bn_eval(sc, sb))


def test_fuse_linear_bn(torch):
    tl, sl = _pair(torch, lambda: torch.nn.Linear(5, 4), lambda: nn.Linear(5, 4))
    tb, sb = torch.nn.BatchNorm1d(4).double(), nn.BatchNorm1d(4).double()
    _bn_stats(torch, tb)
    _load_from_torch(sb, tb)
    for m in (tl, sl, tb, sb):
        m.eval()
    tf = torch.nn.utils.fuse_linear_bn_eval(tl, tb)
    sf = nn.utils.fuse_linear_bn_eval(sl, sb)
    assert_close(sf.weight.detach(), tf.weight)
    assert_close(sf.bias.detach(), tf.bias)
    _, sx = _inputs(torch, (3, 5))
    assert_close(sf(sx).detach(), sb(sl(sx)).detach().numpy(), rtol=1e-10, atol=1e-12)
    _same_error(lambda: torch.nn.utils.fuse_linear_bn_eval(tl, torch.nn.BatchNorm1d(3).eval()),
                lambda: nn.utils.fuse_linear_bn_eval(sl, nn.BatchNorm1d(3).eval()))
    _same_error(lambda: torch.nn.utils.fuse_linear_bn_eval(tl.train(), tb),
                lambda: nn.utils.fuse_linear_bn_eval(sl.train(), sb))


# ---------------------------------------------------------------- stateless.functional_call
class _WithBuffer:
    @staticmethod
    def make(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(3, 3)
                self.register_buffer("scale", lib.ones(3))

            def forward(self, x, shift=0.0):
                self.scale = self.scale * 2     # a buffer replaced during the call
                return self.fc(x) * self.scale + shift
        return M()


def test_functional_call(torch):
    tm, sm = _WithBuffer.make(torch).double(), _WithBuffer.make(st).double()
    _load_from_torch(sm, tm)
    rng = np.random.default_rng(14)
    W, b = rng.standard_normal((3, 3)), rng.standard_normal(3)
    tW, sW = torch.tensor(W, requires_grad=True), st.tensor(W, requires_grad=True)
    tx, sx = _inputs(torch, (2, 3))
    tsb, ssb = {"fc.weight": tW, "scale": torch.ones(3)}, {"fc.weight": sW, "scale": st.ones(3)}
    with pytest.warns(FutureWarning, match="functional_call` is deprecated"):
        ys = nn.utils.stateless.functional_call(sm, ssb, (sx,), {"shift": 1.0})
    yt = torch.nn.utils.stateless.functional_call(tm, tsb, (tx,), {"shift": 1.0})
    assert_close(ys.detach(), yt)
    yt.pow(2).sum().backward()
    ys.pow(2).sum().backward()
    assert_close(sW.grad, tW.grad)
    assert_close(sx.grad, tx.grad)
    assert sm.fc.weight.grad is None
    # the module is as it was; the buffer set during the call comes back in the dict
    assert_close(sm.fc.weight.detach(), tm.fc.weight)
    assert_close(sm.scale, tm.scale)
    assert_close(ssb["scale"], tsb["scale"])
    # args as one tensor, strict and its errors
    y1 = nn.utils.stateless.functional_call(sm, {"fc.bias": st.tensor(b)}, sx.detach())
    t1 = torch.nn.utils.stateless.functional_call(tm, {"fc.bias": torch.tensor(b)}, tx.detach())
    assert_close(y1.detach(), t1)
    _same_error(lambda: torch.nn.utils.stateless.functional_call(tm, {"fc.weight": tW}, (tx,), strict=True),
                lambda: nn.utils.stateless.functional_call(sm, {"fc.weight": sW}, (sx,), strict=True))
    _same_error(lambda: torch.nn.utils.stateless.functional_call(tm, {"fc.nope": tW, "a..b": tW}, (tx,)),
                lambda: nn.utils.stateless.functional_call(sm, {"fc.nope": sW, "a..b": sW}, (sx,)), exact=False)
    # a raising call puts the tensors back too
    with pytest.raises(Exception):
        nn.utils.stateless.functional_call(sm, {"fc.weight": st.zeros(3, 5, dtype=st.float64)}, (sx,))
    assert_close(sm.fc.weight.detach(), tm.fc.weight)


def test_functional_call_tied_weights(torch):
    def make(lib):
        m = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False))
        m[1].weight = m[0].weight
        return m
    tm, sm = make(torch).double(), make(st).double()
    _load_from_torch(sm, tm)
    W = np.random.default_rng(15).standard_normal((3, 3))
    tx, sx = _inputs(torch, (2, 3))
    for tie in (True, False):
        yt = torch.nn.utils.stateless.functional_call(tm, {"0.weight": torch.tensor(W)}, tx, tie_weights=tie)
        ys = nn.utils.stateless.functional_call(sm, {"0.weight": st.tensor(W)}, sx, tie_weights=tie)
        assert_close(ys.detach(), yt, msg=str(tie))
    assert sm[1].weight is sm[0].weight
    _same_error(lambda: torch.nn.utils.stateless.functional_call(
        tm, {"0.weight": torch.tensor(W), "1.weight": torch.tensor(W)}, tx),
        lambda: nn.utils.stateless.functional_call(sm, {"0.weight": st.tensor(W), "1.weight": st.tensor(W)}, sx))


# ---------------------------------------------------------------- skip_init, memory_format
def test_skip_init_and_memory_format(torch):
    m = nn.utils.skip_init(nn.Linear, 5, out_features=2, bias=False)
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (2, 5) and m.bias is None
    assert isinstance(m.weight, nn.Parameter)
    _same_error(lambda: torch.nn.utils.skip_init(torch.nn.ReLU), lambda: nn.utils.skip_init(nn.ReLU))
    _same_error(lambda: torch.nn.utils.skip_init(int), lambda: nn.utils.skip_init(int), exact=False)
    c = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Conv3d(2, 2, 1))
    w = c[0].weight
    assert nn.utils.convert_conv2d_weight_memory_format(c, None) is c
    assert nn.utils.convert_conv3d_weight_memory_format(c, None) is c
    assert c[0].weight is w


# ---------------------------------------------------------------- Module state_dict hooks
def test_state_dict_hooks(torch):
    def run(lib):
        log = []
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))

        def post(mod, sd, prefix, meta):
            log.append(("post", prefix, sorted(meta)))
            sd[prefix + "extra"] = lib.zeros(1)
        h = m[0].register_state_dict_post_hook(post)
        sd = m.state_dict()
        log.append(sorted(sd))
        h.remove()
        m[0]._register_state_dict_hook(lambda mod, sd, prefix, meta: {"replaced": 1})
        log.append(sorted(m[0].state_dict()))

        def load_pre(mod, sd, prefix, meta, strict, missing, unexpected, errors):
            log.append(("load_pre", prefix, meta.get("version")))
            sd.pop(prefix + "extra", None)

        def load_post(mod, keys):
            log.append(("load_post", list(keys.missing_keys), list(keys.unexpected_keys)))
        m[0].register_load_state_dict_pre_hook(load_pre)
        m.register_load_state_dict_post_hook(load_post)
        m.load_state_dict(sd)
        m[0].register_load_state_dict_post_hook(lambda mod, keys: 1)
        with pytest.raises(AssertionError, match="are not expected to return new values"):
            m.load_state_dict(sd)
        return log
    assert run(st) == run(torch)


# ---------------------------------------------------------------- numpy references (no torch)
def test_weight_norm_numpy_and_gradcheck():
    from symtrace.nn.utils.weight_norm import _weight_norm
    rng = np.random.default_rng(20)
    V = rng.standard_normal((4, 3))
    m = nn.Linear(3, 4).double()
    with st.no_grad():
        m.weight.copy_(st.tensor(V))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(m, dim=1)
    np.testing.assert_allclose(m.weight_g.detach().numpy(), np.linalg.norm(V, axis=0, keepdims=True))
    with st.no_grad():
        m.weight_g.mul_(2.0)
    x = rng.standard_normal((2, 3))
    y = m(st.tensor(x)).detach().numpy()
    np.testing.assert_allclose(y, x @ (2 * V).T + m.bias.detach().numpy(), rtol=1e-12)
    g = st.tensor(rng.standard_normal((1, 3)), requires_grad=True)
    v = st.tensor(V, requires_grad=True)
    assert st.autograd.gradcheck(lambda g, v: _weight_norm(v, g, 1), (g, v))
    g0 = st.tensor(1.3, dtype=st.float64, requires_grad=True)   # dim=None: one norm of the whole tensor
    assert st.autograd.gradcheck(lambda g, v: _weight_norm(v, g, -1), (g0, v))
    nn.utils.remove_weight_norm(m)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * V, rtol=1e-12)


def test_spectral_norm_numpy_power_iteration():
    rng = np.random.default_rng(21)
    m = NP.spectral_norm(nn.Linear(5, 4).double())
    sn = m.parametrizations.weight[0]
    W = m.parametrizations.weight.original.detach().numpy()
    u, v = sn._u.numpy().copy(), sn._v.numpy().copy()
    for _ in range(3):   # one step per training-mode evaluation, u first (torch's order)
        w = m.weight.detach().numpy()
        u = W @ v
        u /= np.linalg.norm(u)
        v = W.T @ u
        v /= np.linalg.norm(v)
        np.testing.assert_allclose(w, W / (u @ W @ v), rtol=1e-12)
        np.testing.assert_allclose(sn._u.numpy(), u, rtol=1e-12)
    m.eval()
    w1, w2 = m.weight.detach().numpy(), m.weight.detach().numpy()
    np.testing.assert_allclose(w1, w2)
    np.testing.assert_allclose(sn._u.numpy(), u, rtol=1e-12)
    # the hook-based one: v first, then u
    m = nn.utils.spectral_norm(nn.Linear(5, 4).double(), n_power_iterations=3)
    W = m.weight_orig.detach().numpy()
    u, v = m.weight_u.numpy().copy(), m.weight_v.numpy().copy()
    for _ in range(3):
        v = W.T @ u
        v /= np.linalg.norm(v)
        u = W @ v
        u /= np.linalg.norm(u)
    m(st.tensor(rng.standard_normal((2, 5))))
    np.testing.assert_allclose(m.weight.detach().numpy(), W / (u @ W @ v), rtol=1e-12)


def test_parametrize_and_orthogonal_numpy():
    Sym, Pos, Scale, _ = _custom(nn.Module)
    rng = np.random.default_rng(22)
    m = nn.Linear(3, 3).double()
    W = m.weight.detach().numpy().copy()
    P.register_parametrization(m, "weight", Sym())
    P.register_parametrization(m, "weight", Scale())
    assert type(m).__name__ == "ParametrizedLinear"
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    S = np.triu(W) + np.triu(W, 1).T
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * S)
    with P.cached():
        assert m.weight is m.weight
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear
    np.testing.assert_allclose(m.weight.detach().numpy(), np.triu(W))
    # householder: base is Q of W's QR with R's diagonal positive
    A = rng.standard_normal((4, 4))
    q, r = np.linalg.qr(A)
    q = q * np.sign(np.diag(r))
    m = nn.Linear(4, 4).double()
    with st.no_grad():
        m.weight.copy_(st.tensor(A))
    NP.orthogonal(m, orthogonal_map="householder")
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-12)
    m.parametrizations.weight.original.sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    m = NP.orthogonal(nn.Linear(3, 5).double(), use_trivialization=False)
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(3), atol=1e-12)


def test_fusion_and_functional_call_numpy():
    st.manual_seed(1)
    conv, bn = nn.Conv2d(2, 3, 3).double().eval(), nn.BatchNorm2d(3).double().eval()
    with st.no_grad():
        bn.running_mean.copy_(st.tensor([0.5, -1.0, 0.25], dtype=st.float64))
        bn.running_var.copy_(st.tensor([2.0, 0.5, 1.5], dtype=st.float64))
        bn.weight.copy_(st.tensor([1.5, 0.75, -1.0], dtype=st.float64))
    x = st.tensor(np.random.default_rng(23).standard_normal((1, 2, 5, 5)))
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-10, atol=1e-12)
    lin = nn.Linear(3, 2).double()
    W = st.tensor(np.ones((2, 3)), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        y = nn.utils.stateless.functional_call(lin, {"weight": W}, (st.ones(1, 3, dtype=st.float64),))
    np.testing.assert_allclose(y.detach().numpy(), 3.0 + lin.bias.detach().numpy()[None])
    y.sum().backward()
    np.testing.assert_allclose(W.grad.numpy(), np.ones((2, 3)))
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.grad is None


# ---------------------------------------------------------------- compiled
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.utils.weight_norm(nn.Linear(4, 8))
        self.fc2 = NP.spectral_norm(nn.Linear(8, 8))
        self.fc3 = NP.weight_norm(nn.Linear(8, 3))
        self.fc4 = nn.utils.spectral_norm(nn.Linear(3, 3))
        P.register_parametrization(self.fc4, "bias", _Softplus())
        P.register_parametrization(self.fc3, "bias", _Softplus())

    def forward(self, x):
        h = F.relu(self.fc2(F.relu(self.fc1(x))))
        return self.fc4(F.tanh(self.fc3(h))).pow(2).mean()


class _Softplus(nn.Module):
    def forward(self, X):
        return F.softplus(X)


def test_compiled_training_step_matches_eager():
    st.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        me, mc = _Net(), _Net()
    mc.load_state_dict(me.state_dict())
    st.reset()
    cm = st.compile(mc)
    oe = st.optim.SGD(me.parameters(), lr=0.1)
    oc = st.optim.SGD(mc.parameters(), lr=0.1)
    rng = np.random.default_rng(16)
    for step in range(3):
        x = st.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        losses = []
        for m, o in ((me, oe), (cm, oc)):
            o.zero_grad()
            loss = m(x)
            loss.backward()
            o.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, err_msg=f"step {step}")
    se, sc = me.state_dict(), mc.state_dict()
    assert list(se) == list(sc)
    for k in se:   # parameters after the steps, and the power iterations' u, v
        np.testing.assert_allclose(sc[k].numpy(), se[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    stats = st._C._fe_stats()
    assert stats["translations"] == 1 and stats["graphs"] == 1 and stats["hits"] == 2, stats
    assert stats["breaks"] == 0 and stats["fallbacks"] == 0, stats
