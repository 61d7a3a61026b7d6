# symtrace.distributions against torch.distributions: for every distribution, shapes,
# mean/variance/stddev/mode, entropy, log_prob, cdf/icdf, enumerate_support and expand in
# float64 over broadcast batch shapes; gradients of log_prob and entropy w.r.t. the
# parameters; kl_divergence for every registered pair torch also has (values and
# gradients); torch's validation errors; sampling checked statistically (shapes, support,
# moments within a few standard errors over 20000 draws, fixed seeds); reparameterized
# gradients (exact for location-scale families, the implicit Gamma gradient against
# torch's and the finite difference of the incomplete gamma function); and a VAE-style
# loss under symtrace.compile against eager. The statistical tests need no torch.
import math

import numpy as np
import pytest

import symtrace as st
from conftest import assert_close, rng_for

SD = st.distributions
N_DRAWS = 20000


def _tensors(mod, arrays):
    return [mod.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]


# name -> (build(M, params), params(rng) -> list of numpy arrays/numbers,
#          value(rng, batch_shape, event_shape) -> numpy array in the support)
def _cont(lo, hi):
    return lambda rng, b, e: rng.uniform(lo, hi, size=(2,) + b + e)


def _ints(hi):
    return lambda rng, b, e: rng.integers(0, hi, size=(2,) + b + e).astype(np.float64)


def _simplex(rng, b, e):
    return rng.dirichlet(np.ones(e[-1]), size=(2,) + b)


def _onehot(rng, b, e):
    return np.eye(e[-1])[rng.integers(0, e[-1], size=(2,) + b)]


def _mvn_params(kind):
    def params(rng):
        x = rng.normal(size=(2, 1, 3, 3))
        cov = x @ np.swapaxes(x, -1, -2) + np.eye(3)
        m = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
             "scale_tril": np.linalg.cholesky(cov)}[kind]
        return [rng.normal(size=(4, 3)), m]
    return params


CASES = {
    "Normal": (lambda M, p: M.Normal(*p), lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,))],
               _cont(-3, 3)),
    "Normal-scalar": (lambda M, p: M.Normal(*p), lambda r: [0.5, 2.0], _cont(-3, 3)),
    "Laplace": (lambda M, p: M.Laplace(*p), lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,))],
                _cont(-3, 3)),
    "Uniform": (lambda M, p: M.Uniform(*p), lambda r: [r.uniform(-2, -1, (3, 1)), r.uniform(1, 2, (4,))],
                _cont(-0.9, 0.9)),
    "Exponential": (lambda M, p: M.Exponential(*p), lambda r: [r.uniform(0.5, 2, (3, 4))], _cont(0, 4)),
    "Gamma": (lambda M, p: M.Gamma(*p), lambda r: [r.uniform(0.2, 4, (3, 1)), r.uniform(0.5, 2, (4,))],
              _cont(0.05, 5)),
    "Beta": (lambda M, p: M.Beta(*p), lambda r: [r.uniform(0.3, 3, (3, 1)), r.uniform(0.3, 3, (4,))],
             _cont(0.02, 0.98)),
    "Dirichlet": (lambda M, p: M.Dirichlet(*p), lambda r: [r.uniform(0.3, 3, (3, 4))], _simplex),
    "Poisson": (lambda M, p: M.Poisson(*p), lambda r: [r.uniform(0.5, 12, (3, 4))], _ints(15)),
    "Bernoulli-probs": (lambda M, p: M.Bernoulli(probs=p[0]), lambda r: [r.uniform(0.05, 0.95, (3, 4))],
                        _ints(2)),
    "Bernoulli-logits": (lambda M, p: M.Bernoulli(logits=p[0]), lambda r: [r.normal(size=(3, 4))], _ints(2)),
    "Binomial-probs": (lambda M, p: M.Binomial(8, probs=p[0]), lambda r: [r.uniform(0.05, 0.95, (3, 4))],
                       _ints(9)),
    "Binomial-logits": (lambda M, p: M.Binomial(p[1], logits=p[0]),
                        lambda r: [r.normal(size=(3, 4)), np.full((3, 1), 7.0)], _ints(8)),
    "Categorical-probs": (lambda M, p: M.Categorical(probs=p[0]), lambda r: [r.uniform(0.1, 1, (3, 5))],
                          lambda r, b, e: r.integers(0, 5, size=(2,) + b).astype(np.int64)),
    "Categorical-logits": (lambda M, p: M.Categorical(logits=p[0]), lambda r: [r.normal(size=(3, 5))],
                           lambda r, b, e: r.integers(0, 5, size=(2,) + b).astype(np.int64)),
    "OneHotCategorical": (lambda M, p: M.OneHotCategorical(logits=p[0]), lambda r: [r.normal(size=(3, 5))],
                          _onehot),
    "LogNormal": (lambda M, p: M.LogNormal(*p), lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,))],
                  _cont(0.05, 6)),
    "Independent": (lambda M, p: M.Independent(M.Normal(*p), 1),
                    lambda r: [r.normal(size=(3, 4)), r.uniform(0.5, 2, (3, 4))], _cont(-3, 3)),
    "MVN-cov": (lambda M, p: M.MultivariateNormal(p[0], covariance_matrix=p[1]), _mvn_params("covariance_matrix"),
                _cont(-3, 3)),
    "MVN-prec": (lambda M, p: M.MultivariateNormal(p[0], precision_matrix=p[1]), _mvn_params("precision_matrix"),
                 _cont(-3, 3)),
    "MVN-tril": (lambda M, p: M.MultivariateNormal(p[0], scale_tril=p[1]), _mvn_params("scale_tril"),
                 _cont(-3, 3)),
    "Transformed": (lambda M, p: M.TransformedDistribution(
        M.Normal(*p), [M.AffineTransform(0.5, -2.0), M.SigmoidTransform()]),
        lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,))], _cont(0.05, 0.95)),
}


def _pair(torch, name, seed=0):
    build, params, value = CASES[name]
    rng = rng_for("dist", name, seed)
    p = params(rng)
    sd = build(SD, _tensors(st, p))
    td = build(torch.distributions, _tensors(torch, p))
    v = value(rng, tuple(td.batch_shape), tuple(td.event_shape))
    return sd, td, v, p


def _close(got, exp, rtol=1e-10, atol=1e-10, msg=""):
    assert_close(got.detach() if isinstance(got, st.Tensor) else got, exp.detach(), rtol=rtol, atol=atol,
                 msg=msg)


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(torch, name):
    sd, td, v, _ = _pair(torch, name)
    assert tuple(sd.batch_shape) == tuple(td.batch_shape)
    assert tuple(sd.event_shape) == tuple(td.event_shape)
    assert isinstance(sd.batch_shape, st.Size) and isinstance(sd.event_shape, st.Size)
    assert sd.has_rsample == td.has_rsample
    assert sd.has_enumerate_support == td.has_enumerate_support
    for attr in ["mean", "variance", "stddev", "mode"]:
        try:
            exp = getattr(td, attr)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(sd, attr)
            continue
        _close(getattr(sd, attr), exp, msg=attr)
    try:
        exp = td.entropy()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            sd.entropy()
    else:
        _close(sd.entropy(), exp, msg="entropy")
        _close(sd.perplexity(), td.perplexity(), msg="perplexity")
    sv, tv = st.tensor(v), torch.tensor(v)
    _close(sd.log_prob(sv), td.log_prob(tv), msg="log_prob")
    # the value broadcast against the batch: one sample, no leading dims
    _close(sd.log_prob(sv[0]), td.log_prob(tv[0]), msg="log_prob (batch shape)")
    try:
        exp = td.cdf(tv)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            sd.cdf(sv)
    else:
        # torch's igamma (Cephes) is good to ~1e-9 relative; ours sums the series in float64
        _close(sd.cdf(sv), exp, rtol=1e-8 if name == "Gamma" else 1e-10, msg="cdf")
    u = rng_for("u", name).uniform(0.02, 0.98, size=v.shape[:v.ndim - len(td.event_shape)])
    try:
        exp = td.icdf(torch.tensor(u))
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            sd.icdf(st.tensor(u))
    else:
        _close(sd.icdf(st.tensor(u)), exp, rtol=1e-9, atol=1e-9, msg="icdf")
    if td.has_enumerate_support:
        for expand in (True, False):
            _close(sd.enumerate_support(expand), td.enumerate_support(expand), msg="enumerate_support")
    # expand to the value's batch shape: same log_prob, new batch shape
    shape = tuple(np.broadcast_shapes(v.shape[:v.ndim - len(td.event_shape)], tuple(td.batch_shape)))
    se, te = sd.expand(shape), td.expand(shape)
    assert tuple(se.batch_shape) == tuple(te.batch_shape) == shape
    _close(se.log_prob(sv), te.log_prob(tv), msg="expand")
    if name != "Transformed":   # no mean
        _close(se.mean, te.mean, msg="expand mean")
    # argument constraints and support as torch's
    assert sorted(sd.arg_constraints) == sorted(td.arg_constraints)
    for k in sd.arg_constraints:
        assert repr(sd.arg_constraints[k]).split("(")[0] == repr(td.arg_constraints[k]).split("(")[0]


def _leaves(torch, p):
    out_s, out_t = [], []
    for a in p:
        if isinstance(a, np.ndarray) and a.dtype == np.float64:
            out_s.append(st.tensor(a, requires_grad=True))
            out_t.append(torch.tensor(a, requires_grad=True))
        else:
            out_s.append(st.tensor(a) if isinstance(a, np.ndarray) else a)
            out_t.append(torch.tensor(a) if isinstance(a, np.ndarray) else a)
    return out_s, out_t


@pytest.mark.parametrize("name", [n for n in CASES if n not in ("Normal-scalar", "Binomial-logits")])
def test_log_prob_entropy_gradients(torch, name):
    build, params, value = CASES[name]
    rng = rng_for("grad", name)
    p = params(rng)
    ps, pt = _leaves(torch, p)
    sd, td = build(SD, ps), build(torch.distributions, pt)
    v = value(rng, tuple(td.batch_shape), tuple(td.event_shape))
    lt = td.log_prob(torch.tensor(v))
    w = rng.uniform(0.5, 1.5, size=tuple(lt.shape))
    loss_t = (lt * torch.tensor(w)).sum()
    loss_s = (sd.log_prob(st.tensor(v)) * st.tensor(w)).sum()
    try:
        loss_t = loss_t + td.entropy().sum()
        loss_s = loss_s + sd.entropy().sum()
    except NotImplementedError:
        pass
    _close(loss_s, loss_t, rtol=1e-10)
    loss_s.backward()
    loss_t.backward()
    n = 0
    for s, t in zip(ps, pt):
        if isinstance(s, st.Tensor) and s.requires_grad:
            # trigamma (the gradient of digamma in the entropies) is good to ~1e-9 relative
            _close(s.grad, t.grad, rtol=1e-8, atol=1e-9, msg=name)
            n += 1
    assert n > 0


def test_float32_dtypes_and_numbers(torch):
    """float32 parameters give float32 results; numbers give the default dtype and an
    empty batch shape, as torch."""
    rng = rng_for("f32")
    loc = rng.normal(size=(3,)).astype(np.float32)
    scale = rng.uniform(0.5, 2, (3,)).astype(np.float32)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    for name in ["Normal", "Laplace", "LogNormal"]:
        xv = np.abs(x) + 0.1 if name == "LogNormal" else x
        sd = getattr(SD, name)(st.tensor(loc), st.tensor(scale))
        td = getattr(torch.distributions, name)(torch.tensor(loc), torch.tensor(scale))
        assert_close(sd.log_prob(st.tensor(xv)), td.log_prob(torch.tensor(xv)), rtol=1e-5, atol=1e-5)
        assert sd.sample((4,)).dtype == st.float32
        assert sd.rsample().dtype == st.float32
    g = SD.Gamma(st.tensor(scale), st.tensor(scale))
    assert g.sample((7,)).dtype == st.float32 and tuple(g.sample((7,)).shape) == (7, 3)
    assert SD.Dirichlet(st.tensor(scale)).sample().dtype == st.float32
    for name, args in [("Normal", (0.0, 1.0)), ("Gamma", (2, 3)), ("Beta", (2.0, 3.0)), ("Poisson", (3.0,)),
                       ("Exponential", (2.0,)), ("Uniform", (0, 2)), ("Bernoulli", (0.3,))]:
        sd, td = getattr(SD, name)(*args), getattr(torch.distributions, name)(*args)
        assert tuple(sd.batch_shape) == tuple(td.batch_shape) == ()
        assert sd.mean.dtype == st.float32
        assert_close(sd.mean, td.mean, rtol=1e-6, atol=1e-6)
        assert tuple(sd.sample((6,)).shape) == (6,)


def test_binomial_entropy_enumerate(torch):
    p = rng_for("binent").uniform(0.1, 0.9, (2, 3))
    sd, td = SD.Binomial(6, st.tensor(p)), torch.distributions.Binomial(6, torch.tensor(p))
    _close(sd.entropy(), td.entropy())
    _close(sd.enumerate_support(), td.enumerate_support())
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        SD.Binomial(st.tensor([3.0, 4.0]), st.tensor([0.5, 0.5])).entropy()


def test_gamma_cdf_grad(torch):
    rng = rng_for("gcdf")
    a, r = rng.uniform(0.3, 20, (6,)), rng.uniform(0.5, 2, (6,))
    x = rng.uniform(0.01, 30, (6,))
    xs, xt = st.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    SD.Gamma(st.tensor(a), st.tensor(r)).cdf(xs).sum().backward()
    torch.distributions.Gamma(torch.tensor(a), torch.tensor(r)).cdf(xt).sum().backward()
    _close(xs.grad, xt.grad, rtol=1e-8)


# ---------------------------------------------------------------- KL divergences
def _kl_params(rng):
    return [rng.uniform(0.3, 2, (3, 4)), rng.uniform(0.3, 2, (4,)), rng.uniform(0.3, 2, (3, 4))]


KL_FAMILIES = {
    "Normal": lambda M, p: M.Normal(p[0], p[1]),
    "Laplace": lambda M, p: M.Laplace(p[0], p[1]),
    "Uniform": lambda M, p: M.Uniform(p[0] * 0.2, p[0] * 0.2 + p[1] * 0.3),
    "Exponential": lambda M, p: M.Exponential(p[1]),
    "Gamma": lambda M, p: M.Gamma(p[0], p[1]),
    "Beta": lambda M, p: M.Beta(p[0], p[1]),
    "Poisson": lambda M, p: M.Poisson(p[0]),
    "Bernoulli": lambda M, p: M.Bernoulli(probs=p[0] / 2.5),
    "Binomial": lambda M, p: M.Binomial(5, probs=p[1] / 2.5),
    "Categorical": lambda M, p: M.Categorical(probs=p[2]),
    "OneHotCategorical": lambda M, p: M.OneHotCategorical(logits=p[2]),
    "Dirichlet": lambda M, p: M.Dirichlet(p[2]),
    "LogNormal": lambda M, p: M.LogNormal(p[0], p[1]),
    "Independent": lambda M, p: M.Independent(M.Normal(p[0], p[1]), 1),
    "MVN": lambda M, p: M.MultivariateNormal(p[2][..., :3], scale_tril=(p[2][:, :3] * 0.3).tril(-1)
                                             + p[0][0, :3].diag_embed()),
}


@pytest.mark.parametrize("p_name", list(KL_FAMILIES))
def test_kl_divergence(torch, p_name):
    """Every pair (p_name, q) that torch computes: the same values and gradients w.r.t.
    both parameter sets; the pairs torch refuses, symtrace refuses too."""
    n_ok = 0
    for q_name in KL_FAMILIES:
        rng = rng_for("kl", p_name, q_name)
        pp, pq = _kl_params(rng), _kl_params(rng)
        (sp, tp), (sq, tq) = _leaves(torch, pp), _leaves(torch, pq)
        td_p, td_q = KL_FAMILIES[p_name](torch.distributions, tp), KL_FAMILIES[q_name](torch.distributions, tq)
        sd_p, sd_q = KL_FAMILIES[p_name](SD, sp), KL_FAMILIES[q_name](SD, sq)
        try:
            exp = torch.distributions.kl_divergence(td_p, td_q)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                SD.kl_divergence(sd_p, sd_q)
            continue
        got = SD.kl_divergence(sd_p, sd_q)
        _close(got, exp, rtol=1e-9, atol=1e-9, msg=f"KL({p_name} || {q_name})")
        finite = torch.isfinite(exp)
        if finite.any() and exp.requires_grad:
            w = rng.uniform(0.5, 1.5, size=tuple(exp.shape))
            (torch.where(finite, exp, 0.0) * torch.tensor(w)).sum().backward()
            (st.where(st.isfinite(got), got, 0.0) * st.tensor(w)).sum().backward()
            for s, t in zip(sp + sq, tp + tq):
                if t.grad is not None:
                    _close(s.grad, t.grad, rtol=1e-8, atol=1e-9, msg=f"grad KL({p_name} || {q_name})")
                else:
                    assert s.grad is None or float(s.grad.abs().max().item()) == 0.0
        n_ok += 1
    assert n_ok >= 1


def test_kl_registry():
    class MyNormal(SD.Normal):
        pass

    calls = []

    @SD.register_kl(MyNormal, SD.Normal)
    def _kl_mine(p, q):
        calls.append(1)
        return p.loc * 0

    p, q = MyNormal(st.zeros(2), st.ones(2)), SD.Normal(st.zeros(2), st.ones(2))
    assert SD.kl_divergence(p, q).tolist() == [0.0, 0.0] and calls == [1]
    # the base pair still dispatches for the base types
    assert SD.kl_divergence(q, q).tolist() == [0.0, 0.0]
    with pytest.raises(NotImplementedError, match="No KL"):
        SD.kl_divergence(SD.Categorical(st.ones(3)), SD.Normal(0.0, 1.0))


# ---------------------------------------------------------------- validation errors
ERROR_CASES = [
    lambda M, T: M.Normal(T([0.0, 1.0]), T([1.0, -1.0])),
    lambda M, T: M.Normal(0.0, -1.0),
    lambda M, T: M.Normal(T([0.0, float("nan")]), T([1.0, 1.0])),
    lambda M, T: M.Uniform(T([0.0]), T([0.0])),
    lambda M, T: M.Bernoulli(probs=T([1.5])),
    lambda M, T: M.Bernoulli(probs=T([0.5]), logits=T([0.0])),
    lambda M, T: M.Categorical(probs=T([0.5, -0.1])),
    lambda M, T: M.Categorical(logits=T(0.5)),
    lambda M, T: M.Dirichlet(T(1.0)),
    lambda M, T: M.Dirichlet(T([1.0, 0.0])),
    lambda M, T: M.Gamma(T([1.0]), T([0.0])),
    lambda M, T: M.Beta(T([1.0]), T([-1.0])),
    lambda M, T: M.Poisson(T([-1.0])),
    lambda M, T: M.Binomial(T([2.5]), probs=T([0.5])),
    lambda M, T: M.Exponential(T([0.0])),
    lambda M, T: M.Laplace(T([0.0]), T([0.0])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T([[1.0, 2.0], [2.0, 1.0]])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T([[1.0, 2.0], [0.0, 1.0]])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0]), scale_tril=T([[1.0, 0.0], [2.0, -1.0]])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0])),
    lambda M, T: M.MultivariateNormal(T(0.0), T([[1.0]])),
    lambda M, T: M.Independent(M.Normal(T([0.0]), T([1.0])), 2),
    lambda M, T: M.TransformedDistribution(M.Normal(0.0, 1.0), 3),
    lambda M, T: M.Normal(T([0.0, 1.0]), T([1.0, 1.0])).log_prob(T([1.0, 2.0, 3.0])),
    lambda M, T: M.Normal(T([0.0, 1.0]), T([1.0, 1.0])).log_prob([1.0, 2.0]),
    lambda M, T: M.Exponential(T([1.0, 1.0])).log_prob(T([1.0, -2.0])),
    lambda M, T: M.Bernoulli(T([0.3])).log_prob(T([0.5])),
    lambda M, T: M.Categorical(T([0.3, 0.7])).log_prob(T([2])),
    lambda M, T: M.Dirichlet(T([1.0, 2.0])).log_prob(T([0.3, 0.3])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 0.0], [0.0, 1.0]])).log_prob(T([1.0, 2.0, 3.0])),
    lambda M, T: M.Beta(T([1.0]), T([2.0])).log_prob(T([1.5])),
    lambda M, T: M.Binomial(T([3.0]), T([0.5])).log_prob(T([4.0])),
    lambda M, T: M.Poisson(T([3.0])).log_prob(T([1.5])),
    lambda M, T: M.Uniform(T([0.0]), T([1.0])).log_prob(T([2.0])),
    lambda M, T: M.LogNormal(T([0.0]), T([1.0])).log_prob(T([-2.0])),
    lambda M, T: M.Gamma(T([1.0]), T([1.0])).cdf(T([-1.0])),
    lambda M, T: M.kl_divergence(M.Normal(0.0, 1.0), M.Poisson(T(1.0))),
    lambda M, T: M.Distribution.set_default_validate_args(3),
]


@pytest.mark.parametrize("i", range(len(ERROR_CASES)))
def test_validation_errors(torch, i):
    """The same exception class and message as torch (up to the module name in Size reprs
    and the printed tensor values); torch's LinAlgError is a RuntimeError here."""
    case = ERROR_CASES[i]
    with pytest.raises(Exception) as te:
        case(torch.distributions, lambda x: torch.tensor(x))
    with pytest.raises(Exception) as se:
        case(SD, lambda x: st.tensor(x))
    exp_type = RuntimeError if te.type.__name__ == "_LinAlgError" else te.type
    assert se.type is exp_type, (se.value, te.value)
    exp_msg = str(te.value).replace("torch.", "symtrace.").split(":\n")[0]
    assert str(se.value).split(":\n")[0] == exp_msg


def test_validate_args_switch():
    bad = st.tensor([-1.0])
    with pytest.raises(ValueError, match="constraint GreaterThan"):
        SD.Normal(st.zeros(1), bad)
    d = SD.Normal(st.zeros(1), bad, validate_args=False)   # accepted, no check
    assert math.isnan(d.log_prob(st.zeros(1)).item())
    try:
        SD.Distribution.set_default_validate_args(False)
        SD.Normal(st.zeros(1), bad).log_prob(st.zeros(1))
        SD.Exponential(st.ones(1)).log_prob(st.tensor([-1.0]))   # out of support, unchecked
    finally:
        SD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        SD.Exponential(st.ones(1)).log_prob(st.tensor([-1.0]))


# ---------------------------------------------------------------- sampling statistics
def _check_moments(x, mean, var, k=5.0, msg=""):
    """The sample mean within k standard errors of mean, the sample variance within k
    standard errors (from the sample's fourth central moment) of var."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    m = x.mean(0)
    c = x - m
    v = (c ** 2).sum(0) / (n - 1)
    se_m = np.sqrt(np.asarray(var, dtype=np.float64) / n)
    np.testing.assert_array_less(np.abs(m - mean), k * se_m + 1e-12, err_msg=msg + " mean")
    se_v = np.sqrt(np.maximum((c ** 4).mean(0) - v ** 2, 0) / n)
    np.testing.assert_array_less(np.abs(v - var), k * se_v + 1e-12, err_msg=msg + " variance")


def _f64(v):
    return st.tensor(v, dtype=st.float64)


SAMPLED = {
    "Normal": lambda: SD.Normal(_f64([[-1.0], [2.0]]), _f64([0.5, 3.0])),
    "Uniform": lambda: SD.Uniform(_f64([-1.0, 2.0]), _f64([0.0, 7.0])),
    "Laplace": lambda: SD.Laplace(_f64([0.0, 3.0]), _f64([1.0, 0.2])),
    "Exponential": lambda: SD.Exponential(_f64([0.5, 4.0])),
    "Gamma": lambda: SD.Gamma(_f64([0.3, 1.0, 4.5, 60.0]), _f64([1.0, 2.0, 0.5, 3.0])),
    "Beta": lambda: SD.Beta(_f64([0.4, 2.0, 30.0]), _f64([0.6, 5.0, 10.0])),
    "Dirichlet": lambda: SD.Dirichlet(_f64([[0.2, 1.0, 3.0], [5.0, 5.0, 0.7]])),
    "Poisson": lambda: SD.Poisson(_f64([0.0, 0.5, 4.0, 9.9, 25.0, 400.0])),
    "Binomial": lambda: SD.Binomial(_f64([0.0, 5.0, 20.0, 100.0, 1000.0, 1000.0, 7.0]),
                                    _f64([0.3, 0.3, 0.9, 0.5, 0.02, 0.7, 1.0])),
    "Bernoulli": lambda: SD.Bernoulli(_f64([0.0, 0.2, 0.9])),
    "OneHotCategorical": lambda: SD.OneHotCategorical(_f64([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])),
    "LogNormal": lambda: SD.LogNormal(_f64([0.0, 1.0]), _f64([0.25, 0.5])),
    "Independent": lambda: SD.Independent(SD.Laplace(_f64(np.zeros((2, 3))), _f64(np.ones((2, 3)))), 1),
    "MVN": lambda: SD.MultivariateNormal(_f64([1.0, -1.0, 0.5]), covariance_matrix=_f64(
        [[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 0.8]])),
}


@pytest.mark.parametrize("name", list(SAMPLED))
def test_sampling_statistics(name):
    d = SAMPLED[name]()
    st.manual_seed(1234)
    x = d.sample((N_DRAWS,))
    assert tuple(x.shape) == (N_DRAWS,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert x.dtype == st.float64
    assert bool(d.support.check(x).all().item()), name
    _check_moments(x.numpy(), d.mean.numpy(), d.variance.numpy(), msg=name)
    if name == "MVN":
        cov = np.cov(x.numpy().T)
        np.testing.assert_allclose(cov, d.covariance_matrix.numpy(), atol=0.06)
    # deterministic: the same seed gives the same draws
    st.manual_seed(1234)
    assert np.array_equal(d.sample((N_DRAWS,)).numpy(), x.numpy())
    # a sample shape of more than one dim, and the empty one
    assert tuple(d.sample((2, 3)).shape) == (2, 3) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert tuple(d.sample().shape) == tuple(d.batch_shape) + tuple(d.event_shape)


def test_categorical_sampling():
    p = np.array([[0.1, 0.6, 0.3, 0.0], [0.25, 0.25, 0.25, 0.25]])
    d = SD.Categorical(st.tensor(p))
    st.manual_seed(7)
    x = d.sample((N_DRAWS,))
    assert tuple(x.shape) == (N_DRAWS, 2) and x.dtype == st.int64
    freq = np.stack([(x.numpy() == k).mean(0) for k in range(4)], -1)
    se = np.sqrt(p * (1 - p) / N_DRAWS)
    np.testing.assert_array_less(np.abs(freq - p), 5 * se + 1e-12)
    assert tuple(d.sample((3, 5)).shape) == (3, 5, 2)


# ---------------------------------------------------------------- reparameterized gradients
def test_rsample_location_scale_gradients():
    """loc + eps * scale: d/dloc of the mean of the draws is 1, d/dscale is the mean eps."""
    for cls in (SD.Normal, SD.Laplace):
        loc = st.tensor([0.5, -1.0], dtype=st.float64, requires_grad=True)
        scale = st.tensor([2.0, 0.5], dtype=st.float64, requires_grad=True)
        st.manual_seed(3)
        x = cls(loc, scale).rsample((1000,))
        x.mean(0).sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0], rtol=1e-12)
        eps = (x.detach() - loc.detach()) / scale.detach()
        np.testing.assert_allclose(scale.grad.numpy(), eps.mean(0).numpy(), rtol=1e-10, atol=1e-12)
    low = st.tensor([0.0], dtype=st.float64, requires_grad=True)
    high = st.tensor([3.0], dtype=st.float64, requires_grad=True)
    x = SD.Uniform(low, high).rsample((500,))
    x.sum().backward()
    u = (x.detach() / 3.0).numpy()
    np.testing.assert_allclose(high.grad.numpy(), [u.sum()], rtol=1e-10)
    np.testing.assert_allclose(low.grad.numpy(), [(1 - u).sum()], rtol=1e-10)
    rate = st.tensor([2.0], dtype=st.float64, requires_grad=True)
    x = SD.Exponential(rate).rsample((500,))
    x.sum().backward()
    np.testing.assert_allclose(rate.grad.numpy(), [-(x.detach() / 2.0).sum().item()], rtol=1e-10)
    # LogNormal: d/dloc of exp(loc + eps * scale) is the draw itself
    loc = st.tensor([0.1], dtype=st.float64, requires_grad=True)
    x = SD.LogNormal(loc, st.tensor([0.3], dtype=st.float64)).rsample((200,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [x.detach().sum().item()], rtol=1e-10)
    # MultivariateNormal: loc + L eps, d/dloc of the sum is the number of draws
    loc = st.zeros(3, dtype=st.float64, requires_grad=True)
    cov = st.tensor([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 0.8]], dtype=st.float64, requires_grad=True)
    x = SD.MultivariateNormal(loc, covariance_matrix=cov).rsample((100,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [100.0] * 3, rtol=1e-12)
    assert cov.grad is not None and bool(st.isfinite(cov.grad).all().item())


def test_gamma_rsample_implicit_gradient(torch):
    """The gradient of each Gamma draw w.r.t. concentration against torch's
    _standard_gamma_grad (an approximation good to ~1e-3) and against the exact implicit
    gradient -dP(a, x)/da / p(x; a) from a central difference of torch's gammainc."""
    alpha = np.array([0.05, 0.4, 1.0, 2.5, 9.0, 80.0])
    a = st.tensor(np.repeat(alpha[None], 50, 0), requires_grad=True)
    st.manual_seed(11)
    x = SD.Gamma(a, st.ones(6, dtype=st.float64)).rsample()
    x.sum().backward()
    xd = torch.tensor(x.detach().numpy())
    at = torch.tensor(a.detach().numpy())
    assert_close(a.grad, torch._standard_gamma_grad(at, xd), rtol=3e-3, atol=1e-12)
    h = 1e-6 * at
    dp = (torch.special.gammainc(at + h, xd) - torch.special.gammainc(at - h, xd)) / (2 * h)
    pdf = torch.exp((at - 1) * torch.log(xd) - xd - torch.lgamma(at))
    ok = (pdf > 1e-100).numpy()
    np.testing.assert_allclose(a.grad.numpy()[ok], (-dp / pdf).numpy()[ok], rtol=1e-5)


def test_gamma_beta_dirichlet_rsample_mean_gradients():
    """The averaged reparameterized gradients estimate the gradient of the mean:
    d E[x]/d alpha = 1/rate and d E[x]/d rate = -alpha/rate^2 for Gamma;
    d E[x_i]/d alpha_j = (delta_ij a0 - a_i) / a0^2 for Dirichlet (and Beta)."""
    conc = st.tensor([0.5, 2.0, 7.0], dtype=st.float64, requires_grad=True)
    rate = st.tensor([1.0, 0.5, 2.0], dtype=st.float64, requires_grad=True)
    st.manual_seed(21)
    x = SD.Gamma(conc, rate).rsample((N_DRAWS,))
    x.mean(0).sum().backward()
    c, r = conc.detach().numpy(), rate.detach().numpy()
    # per-draw gradients have spread ~ sd(x)/alpha: five standard errors
    tol = 5 * np.sqrt(c) / r / c / np.sqrt(N_DRAWS) * 3
    np.testing.assert_array_less(np.abs(conc.grad.numpy() - 1 / r), tol)
    np.testing.assert_array_less(np.abs(rate.grad.numpy() + c / r ** 2), 5 * np.sqrt(c) / r ** 2 / np.sqrt(N_DRAWS) * 3)
    alpha = st.tensor([0.7, 2.0, 4.0], dtype=st.float64, requires_grad=True)
    st.manual_seed(22)
    x = SD.Dirichlet(alpha).rsample((N_DRAWS,))
    assert np.allclose(x.detach().numpy().sum(-1), 1.0)
    x.mean(0)[0].backward()
    av = alpha.detach().numpy()
    a0 = av.sum()
    expect = (np.eye(3)[0] * a0 - av[0]) / a0 ** 2
    np.testing.assert_allclose(alpha.grad.numpy(), expect, atol=0.01)
    c1 = st.tensor([2.0], dtype=st.float64, requires_grad=True)
    c0 = st.tensor([3.0], dtype=st.float64, requires_grad=True)
    st.manual_seed(23)
    SD.Beta(c1, c0).rsample((N_DRAWS,)).mean().backward()
    np.testing.assert_allclose([c1.grad.item(), c0.grad.item()], [3 / 25, -2 / 25], atol=0.01)


# ---------------------------------------------------------------- compiled
def _vae_loss(mu, logvar, x, w):
    q = SD.Normal(mu, (0.5 * logvar).exp())
    z = q.rsample()
    recon = SD.Normal(z @ w, 1.0).log_prob(x).sum(-1)
    prior = SD.Normal(st.zeros_like(mu), st.ones_like(mu))
    kl = SD.kl_divergence(q, prior).sum(-1)
    return (kl - recon).mean()


def _mvn_bernoulli(loc, cov, x, lg, b):
    return (SD.MultivariateNormal(loc, covariance_matrix=cov).log_prob(x).sum()
            + SD.Bernoulli(logits=lg).log_prob(b).sum() + SD.Categorical(logits=lg).entropy().sum())


def test_compiled_matches_eager():
    """A VAE-style loss (Normal rsample + kl_divergence) and a MultivariateNormal /
    Bernoulli / Categorical score, each captured as one graph: values and gradients as
    eager (same seed, so the same draws)."""
    rng = rng_for("compile")
    mu = rng.normal(size=(4, 3)).astype(np.float32)
    lv = (rng.normal(size=(4, 3)) * 0.1).astype(np.float32)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    w = rng.normal(size=(3, 5)).astype(np.float32)
    leaves = {}
    results = {}
    compiled = st.compile(_vae_loss)
    for mode, fn in (("eager", _vae_loss), ("compiled", compiled)):
        args = [st.tensor(mu, requires_grad=True), st.tensor(lv, requires_grad=True), st.tensor(x),
                st.tensor(w, requires_grad=True)]
        for step in range(2):
            for a in args:
                a.grad = None
            st.manual_seed(5 + step)
            out = fn(*args)
            out.backward()
            results[mode, step] = (out.detach(), [a.grad for a in args if a.requires_grad])
        leaves[mode] = args
    for step in range(2):
        assert_close(results["compiled", step][0], results["eager", step][0].numpy(), rtol=1e-5, atol=1e-5)
        for g, e in zip(results["compiled", step][1], results["eager", step][1]):
            assert_close(g, e.numpy(), rtol=1e-5, atol=1e-5)
    ex = st.explain(_vae_loss, *leaves["eager"])
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    L = np.tril(rng.normal(size=(3, 3)))
    np.fill_diagonal(L, np.abs(np.diag(L)) + 0.5)
    args = [rng.normal(size=(2, 3)), L @ L.T, rng.normal(size=(4, 2, 3)), rng.normal(size=(4, 3)),
            (rng.random((4, 3)) < 0.5).astype(np.float64)]
    grads = {}
    for mode, fn in (("eager", _mvn_bernoulli), ("compiled", st.compile(_mvn_bernoulli))):
        ts = [st.tensor(a, requires_grad=i in (0, 1, 3)) for i, a in enumerate(args)]
        out = fn(*ts)
        out.backward()
        grads[mode] = [out.detach()] + [ts[i].grad for i in (0, 1, 3)]
    for g, e in zip(grads["compiled"], grads["eager"]):
        assert_close(g, e.numpy(), rtol=1e-10, atol=1e-10)
    ex = st.explain(_mvn_bernoulli, *[st.tensor(a) for a in args])
    assert ex.graph_count == 1 and ex.graph_break_count == 0


def test_exponential_family_bregman():
    """ExponentialFamily's entropy and the Bregman KL between members of one family (through
    autograd.grad(create_graph=True)) equal the closed forms."""
    from symtrace.distributions.kl import _kl_expfamily_expfamily
    f64 = dict(dtype=st.float64)
    for cls, a, b in [(SD.Normal, ([0.3, -1.0], [0.5, 2.0]), ([1.0, 0.0], [1.5, 0.7])),
                      (SD.Gamma, ([0.3, 4.0], [0.5, 2.0]), ([1.0, 2.0], [1.5, 0.7])),
                      (SD.Exponential, ([0.3, 4.0],), ([1.0, 2.0],)),
                      (SD.Bernoulli, ([0.3, 0.8],), ([0.6, 0.2],))]:
        p = cls(*[st.tensor(v, **f64) for v in a])
        q = cls(*[st.tensor(v, **f64) for v in b])
        assert_close(SD.ExponentialFamily.entropy(p).detach(), p.entropy().numpy(), rtol=1e-12, atol=1e-12)
        assert_close(_kl_expfamily_expfamily(p, q).detach(), SD.kl_divergence(p, q).numpy(), rtol=1e-12, atol=1e-12)


def test_utils(torch):
    """broadcast_all, probs/logits conversions and the tril <-> vector helpers as torch's."""
    from symtrace.distributions import utils as su
    from torch.distributions import utils as tu
    m = rng_for("utils").normal(size=(2, 4, 4))
    for diag in (0, -1, 1):
        v = su.tril_matrix_to_vec(st.tensor(m), diag)
        assert_close(v, tu.tril_matrix_to_vec(torch.tensor(m), diag))
        assert_close(su.vec_to_tril_matrix(v, diag), tu.vec_to_tril_matrix(torch.tensor(v.numpy()), diag))
    p = rng_for("utils-p").uniform(0, 1, (3, 4))
    p[0, 0], p[0, 1] = 0.0, 1.0
    for binary in (True, False):
        assert_close(su.probs_to_logits(st.tensor(p), binary), tu.probs_to_logits(torch.tensor(p), binary))
        assert_close(su.logits_to_probs(st.tensor(m), binary), tu.logits_to_probs(torch.tensor(m), binary))
    a, b = su.broadcast_all(st.tensor([1.0, 2.0], dtype=st.float64), 3)
    assert a.dtype == b.dtype == st.float64 and b.tolist() == [3.0, 3.0]
    (c,) = su.broadcast_all(2)
    assert c.dtype == st.get_default_dtype() and tuple(c.shape) == ()
    with pytest.raises(ValueError, match="Input arguments must all be instances of Number"):
        su.broadcast_all("a")
