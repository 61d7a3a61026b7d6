# symtrace.distributions' later families (Cauchy ... Wishart), transforms (Cat, Stack,
# StickBreaking, LowerCholesky, PositiveDefinite, CorrCholesky, CumulativeDistribution),
# biject_to/transform_to and their KL pairs against torch.distributions: shapes,
# mean/variance/stddev/mode, entropy, log_prob, cdf/icdf and expand in float64; gradients
# of log_prob and entropy; rsample gradients against torch's icdf at the same uniform
# draws (recovered by cdf); sampling statistics over 20000 draws (fixed seeds); KL values
# and gradients; torch's validation errors; and log_prob of several families under
# symtrace.compile against eager.
import math

import numpy as np
import pytest

import symtrace as st
from conftest import assert_close, rng_for

SD = st.distributions
N_DRAWS = 20000


@pytest.fixture(autouse=True)
def _torch_gpd_float64(request):
    """torch's GeneralizedPareto.log_prob compares with torch.tensor(0.0) of the default
    dtype and fails on float64 parameters: torch's side of those tests runs with a float64
    default dtype."""
    if "GeneralizedPareto" not in request.node.name:
        yield
        return
    torch = pytest.importorskip("torch")
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _tensors(mod, arrays):
    return [mod.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]


def _cont(lo, hi):
    return lambda rng, b, e: rng.uniform(lo, hi, size=(2,) + b + e)


def _ints(hi):
    return lambda rng, b, e: rng.integers(0, hi, size=(2,) + b + e).astype(np.float64)


def _simplex(rng, b, e):
    return rng.dirichlet(np.ones(e[-1]), size=(2,) + b)


def _counts(n):
    def value(rng, b, e):
        return rng.multinomial(n, np.ones(e[-1]) / e[-1], size=(2,) + b).astype(np.float64)
    return value


def _corr_chol(rng, b, e):
    d = e[-1]
    x = rng.normal(size=(2,) + b + (d, d + 2))
    c = x @ np.swapaxes(x, -1, -2)
    s = 1 / np.sqrt(np.diagonal(c, axis1=-2, axis2=-1))
    return np.linalg.cholesky(c * s[..., :, None] * s[..., None, :])


def _spd(rng, b, e):
    d = e[-1]
    x = rng.normal(size=(2,) + b + (d, d + 3))
    return x @ np.swapaxes(x, -1, -2) + 0.5 * np.eye(d)


def _spd_params(rng, shape, d):
    x = rng.normal(size=shape + (d, d + 2))
    return x @ np.swapaxes(x, -1, -2) + np.eye(d)


def _circle(rng, b, e):
    return rng.uniform(-math.pi, math.pi, size=(2,) + b + e)


def _wishart(kind):
    def params(rng):
        cov = _spd_params(rng, (2, 1), 3)
        m = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
             "scale_tril": np.linalg.cholesky(cov)}[kind]
        return [rng.uniform(3.5, 7, (4,)), m]
    return params


def _mix(M, p):
    return M.MixtureSameFamily(M.Categorical(logits=p[0]), M.Normal(p[1], p[2]))


# name -> (build(M, params), params(rng) -> list of numpy arrays/numbers,
#          value(rng, batch_shape, event_shape) -> numpy array in the support)
CASES = {
    "Cauchy": (lambda M, p: M.Cauchy(*p), lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,))],
               _cont(-3, 3)),
    "Cauchy-scalar": (lambda M, p: M.Cauchy(*p), lambda r: [0.5, 2.0], _cont(-3, 3)),
    "HalfCauchy": (lambda M, p: M.HalfCauchy(*p), lambda r: [r.uniform(0.5, 2, (3, 4))], _cont(0.01, 4)),
    "HalfNormal": (lambda M, p: M.HalfNormal(*p), lambda r: [r.uniform(0.5, 2, (3, 4))], _cont(0.01, 4)),
    "Chi2": (lambda M, p: M.Chi2(*p), lambda r: [r.uniform(0.5, 6, (3, 4))], _cont(0.05, 6)),
    "StudentT": (lambda M, p: M.StudentT(*p), lambda r: [np.array([[0.7], [1.5], [4.0]]), r.normal(size=(4,)),
                                                          r.uniform(0.5, 2, (4,))], _cont(-3, 3)),
    "StudentT-default": (lambda M, p: M.StudentT(p[0]), lambda r: [r.uniform(2.5, 6, (3,))], _cont(-3, 3)),
    "FisherSnedecor": (lambda M, p: M.FisherSnedecor(*p),
                       lambda r: [np.array([[1.5], [3.0], [7.0]]), np.array([1.5, 3.0, 4.5, 9.0])],
                       _cont(0.05, 5)),
    "InverseGamma": (lambda M, p: M.InverseGamma(*p),
                     lambda r: [np.array([[0.7], [1.5], [3.0]]), r.uniform(0.5, 2, (4,))], _cont(0.05, 5)),
    "Gumbel": (lambda M, p: M.Gumbel(*p), lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,))],
               _cont(-3, 3)),
    "Gumbel-scalar": (lambda M, p: M.Gumbel(*p), lambda r: [0.5, 2.0], _cont(-3, 3)),
    "Pareto": (lambda M, p: M.Pareto(*p), lambda r: [r.uniform(0.5, 2, (3, 1)), np.array([0.7, 1.5, 2.5, 4.0])],
               _cont(2.05, 6)),
    "GeneralizedPareto": (lambda M, p: M.GeneralizedPareto(*p),
                          lambda r: [r.normal(size=(3, 1)), r.uniform(0.5, 2, (4,)),
                                     np.array([0.0, 0.2, 0.6, 1.2])], _cont(1.6, 4)),
    "GeneralizedPareto-neg": (lambda M, p: M.GeneralizedPareto(*p),
                              lambda r: [np.zeros(3), np.ones(3), np.array([-0.4, -0.2, 0.3])], _cont(0.05, 2.4)),
    "Weibull": (lambda M, p: M.Weibull(*p), lambda r: [r.uniform(0.5, 2, (3, 1)), r.uniform(0.5, 3, (4,))],
                _cont(0.05, 4)),
    "Kumaraswamy": (lambda M, p: M.Kumaraswamy(*p), lambda r: [r.uniform(0.5, 3, (3, 1)), r.uniform(0.5, 3, (4,))],
                    _cont(0.02, 0.98)),
    "ContinuousBernoulli-probs": (lambda M, p: M.ContinuousBernoulli(probs=p[0]),
                                  lambda r: [np.array([[0.1, 0.4995, 0.5004, 0.8], [0.3, 0.45, 0.55, 0.97]])],
                                  _cont(0.02, 0.98)),
    "ContinuousBernoulli-logits": (lambda M, p: M.ContinuousBernoulli(logits=p[0]),
                                   lambda r: [np.array([-2.0, -0.001, 0.0015, 1.0, 3.0])], _cont(0.02, 0.98)),
    "Geometric-probs": (lambda M, p: M.Geometric(probs=p[0]), lambda r: [r.uniform(0.1, 0.9, (3, 4))], _ints(8)),
    "Geometric-logits": (lambda M, p: M.Geometric(logits=p[0]), lambda r: [r.normal(size=(3, 4))], _ints(8)),
    "NegativeBinomial-probs": (lambda M, p: M.NegativeBinomial(p[0], probs=p[1]),
                               lambda r: [r.uniform(0.5, 6, (3, 1)), r.uniform(0.1, 0.9, (4,))], _ints(12)),
    "NegativeBinomial-logits": (lambda M, p: M.NegativeBinomial(p[0], logits=p[1]),
                                lambda r: [r.uniform(0.5, 6, (3, 4)), r.normal(size=(3, 4))], _ints(12)),
    "Multinomial": (lambda M, p: M.Multinomial(6, probs=p[0]), lambda r: [r.uniform(0.1, 1, (3, 4))], _counts(6)),
    "Multinomial-logits": (lambda M, p: M.Multinomial(5, logits=p[0]), lambda r: [r.normal(size=(2, 3))],
                           _counts(5)),
    "RelaxedBernoulli": (lambda M, p: M.RelaxedBernoulli(p[0], probs=p[1]),
                         lambda r: [np.array(0.7), r.uniform(0.1, 0.9, (3, 4))], _cont(0.02, 0.98)),
    "RelaxedBernoulli-logits": (lambda M, p: M.RelaxedBernoulli(p[0], logits=p[1]),
                                lambda r: [np.array([1.3]), r.normal(size=(3, 4))], _cont(0.02, 0.98)),
    "RelaxedOneHotCategorical": (lambda M, p: M.RelaxedOneHotCategorical(p[0], logits=p[1]),
                                 lambda r: [np.array(0.8), r.normal(size=(3, 4))], _simplex),
    "LogisticNormal": (lambda M, p: M.LogisticNormal(*p), lambda r: [r.normal(size=(3, 4)), r.uniform(0.5, 2, (4,))],
                       _simplex),
    "LowRankMVN": (lambda M, p: M.LowRankMultivariateNormal(*p),
                   lambda r: [r.normal(size=(2, 3)), r.normal(size=(1, 3, 2)), r.uniform(0.5, 2, (2, 3))],
                   _cont(-3, 3)),
    "MixtureSameFamily": (_mix, lambda r: [r.normal(size=(3, 2)), r.normal(size=(3, 2)), r.uniform(0.5, 2, (3, 2))],
                          _cont(-3, 3)),
    "MixtureSameFamily-MVN": (lambda M, p: M.MixtureSameFamily(M.Categorical(probs=p[0]),
                                                               M.MultivariateNormal(p[1], scale_tril=p[2])),
                              lambda r: [r.uniform(0.2, 1, (2,)), r.normal(size=(2, 2, 3)),
                                         np.linalg.cholesky(_spd_params(r, (2,), 3))], _cont(-3, 3)),
    "VonMises": (lambda M, p: M.VonMises(*p), lambda r: [r.normal(size=(3, 1)), np.array([0.3, 1.0, 3.0, 6.0])],
                 _circle),
    "LKJCholesky": (lambda M, p: M.LKJCholesky(3, p[0]), lambda r: [r.uniform(0.5, 3, (2,))], _corr_chol),
    "Wishart-cov": (lambda M, p: M.Wishart(p[0], covariance_matrix=p[1]), _wishart("covariance_matrix"), _spd),
    "Wishart-prec": (lambda M, p: M.Wishart(p[0], precision_matrix=p[1]), _wishart("precision_matrix"), _spd),
    "Wishart-tril": (lambda M, p: M.Wishart(p[0], scale_tril=p[1]), _wishart("scale_tril"), _spd),
}


def _pair(torch, name, seed=0):
    build, params, value = CASES[name]
    rng = rng_for("dist-more", name, seed)
    p = params(rng)
    sd = build(SD, _tensors(st, p))
    td = build(torch.distributions, _tensors(torch, p))
    v = value(rng, tuple(td.batch_shape), tuple(td.event_shape))
    return sd, td, v, p


def _close(got, exp, rtol=1e-10, atol=1e-10, msg=""):
    assert_close(got.detach() if isinstance(got, st.Tensor) else got, exp.detach(), rtol=rtol, atol=atol,
                 msg=msg)


def _both(fn_s, fn_t, msg, **tol):
    """Compare fn_s() with fn_t(); when torch raises NotImplementedError, so must we."""
    try:
        exp = fn_t()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fn_s()
        return
    _close(fn_s(), exp, msg=msg, **tol)


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(torch, name):
    sd, td, v, _ = _pair(torch, name)
    assert type(sd).__name__ == type(td).__name__
    assert tuple(sd.batch_shape) == tuple(td.batch_shape)
    assert tuple(sd.event_shape) == tuple(td.event_shape)
    assert sd.has_rsample == td.has_rsample
    assert sd.has_enumerate_support == td.has_enumerate_support
    tol = dict(rtol=1e-9, atol=1e-9) if name.startswith("Wishart") else {}
    for attr in ["mean", "variance", "stddev", "mode"]:
        if name == "Kumaraswamy" and attr == "mode":   # torch's is nan everywhere: test_kumaraswamy_mode
            continue
        _both(lambda: getattr(sd, attr), lambda: getattr(td, attr), attr, **tol)
    _both(sd.entropy, td.entropy, "entropy", **tol)
    for attr in ["covariance_matrix", "precision_matrix", "scale_tril", "df", "probs", "logits", "temperature"]:
        if hasattr(td, attr) and attr in dir(type(td)) + list(vars(td)):
            _close(getattr(sd, attr), getattr(td, attr), rtol=1e-9, atol=1e-9, msg=attr)
    sv, tv = st.tensor(v), torch.tensor(v)
    _close(sd.log_prob(sv), td.log_prob(tv), msg="log_prob", **tol)
    _close(sd.log_prob(sv[0]), td.log_prob(tv[0]), msg="log_prob (batch shape)", **tol)
    _both(lambda: sd.cdf(sv), lambda: td.cdf(tv), "cdf")
    u = rng_for("u", name).uniform(0.02, 0.98, size=v.shape[:v.ndim - len(td.event_shape)])
    _both(lambda: sd.icdf(st.tensor(u)), lambda: td.icdf(torch.tensor(u)), "icdf", rtol=1e-9, atol=1e-9)
    # expand to the value's batch shape: same log_prob and mean, new batch shape
    shape = tuple(np.broadcast_shapes(v.shape[:v.ndim - len(td.event_shape)], tuple(td.batch_shape)))
    se, te = sd.expand(shape), td.expand(shape)
    assert type(se) is type(sd)
    assert tuple(se.batch_shape) == tuple(te.batch_shape) == shape
    _close(se.log_prob(sv), te.log_prob(tv), msg="expand", **tol)
    _both(lambda: se.mean, lambda: te.mean, "expand mean", **tol)
    # argument constraints and support as torch's
    assert sorted(sd.arg_constraints) == sorted(td.arg_constraints)
    for k in sd.arg_constraints:
        assert repr(sd.arg_constraints[k]).split("(")[0] == repr(td.arg_constraints[k]).split("(")[0]
    assert type(sd.support).__name__ == type(td.support).__name__
    assert sd.support.event_dim == td.support.event_dim
    assert sd.support.is_discrete == td.support.is_discrete


def test_kumaraswamy_mode():
    """The mode maximizes the density (a grid search of log_prob), nan where a or b < 1."""
    a = st.tensor([2.0, 3.0, 1.5, 0.5, 2.0], dtype=st.float64)
    b = st.tensor([2.0, 1.5, 5.0, 3.0, 0.7], dtype=st.float64)
    d = SD.Kumaraswamy(a, b)
    grid = np.linspace(1e-4, 1 - 1e-4, 200001)
    lp = d.log_prob(st.tensor(grid).unsqueeze(-1)).numpy()
    mode = d.mode.numpy()
    np.testing.assert_allclose(mode[:3], grid[lp[:, :3].argmax(0)], atol=1e-4)
    assert np.all(np.isnan(mode[3:]))


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


GRAD_CASES = [n for n in CASES if not n.endswith("-scalar")]


@pytest.mark.parametrize("name", GRAD_CASES)
def test_log_prob_entropy_gradients(torch, name):
    build, params, value = CASES[name]
    rng = rng_for("grad-more", name)
    p = params(rng)
    ps, pt = _leaves(torch, p)
    sd, td = build(SD, ps), build(torch.distributions, pt)
    v = value(rng, tuple(td.batch_shape), tuple(td.event_shape))
    lt = td.log_prob(torch.tensor(v))
    w = rng.uniform(0.5, 1.5, size=tuple(lt.shape))
    loss_t = (lt * torch.tensor(w)).sum()
    loss_s = (sd.log_prob(st.tensor(v)) * st.tensor(w)).sum()
    try:
        ent_t = td.entropy()
    except NotImplementedError:
        pass
    else:
        loss_t = loss_t + ent_t.sum()
        loss_s = loss_s + sd.entropy().sum()
    loss_t.backward()
    loss_s.backward()
    _close(loss_s, loss_t, rtol=1e-9, atol=1e-9)
    for a, b in zip(ps, pt):
        if isinstance(a, st.Tensor) and a.requires_grad:
            ga, gb = a.grad, b.grad
            if name == "Wishart-tril" and a.dim() > 2:
                # torch's cholesky_solve also sends gradient to the (unread) upper triangle
                assert np.all(np.triu(ga.numpy(), 1) == 0)
                ga, gb = ga.tril(), gb.tril()
            _close(ga, gb, rtol=1e-8, atol=1e-8, msg="grad")


# rsample = icdf(U) families: our draws' gradients against torch's icdf at the same U
ICDF_RSAMPLE = ["Cauchy", "HalfCauchy", "HalfNormal", "Gumbel", "Pareto", "GeneralizedPareto", "Weibull",
                "Kumaraswamy", "ContinuousBernoulli-probs"]


@pytest.mark.parametrize("name", ICDF_RSAMPLE)
def test_rsample_gradient_matches_icdf(torch, name):
    build, params, _ = CASES[name]
    rng = rng_for("rs-more", name)
    p = params(rng)
    ps, pt = _leaves(torch, p)
    sd, td = build(SD, ps), build(torch.distributions, pt)
    st.manual_seed(3)
    x = sd.rsample((5,))
    assert tuple(x.shape) == (5,) + tuple(td.batch_shape)
    u = sd.cdf(x.detach()).detach().numpy()
    w = rng.uniform(0.5, 1.5, size=x.shape)
    (x * st.tensor(w)).sum().backward()
    xt = td.icdf(torch.tensor(u))
    (xt * torch.tensor(w)).sum().backward()
    _close(x, xt, rtol=1e-7, atol=1e-7, msg="draw")
    for a, b in zip(ps, pt):
        if isinstance(a, st.Tensor) and a.requires_grad:
            _close(a.grad, b.grad, rtol=1e-6, atol=1e-6, msg="rsample grad")


def test_rsample_location_scale_exact(torch):
    """StudentT, LowRankMultivariateNormal and the relaxed families are affine / softmax in
    their parameters given the base noise: the gradient of a weighted sum of draws equals
    the one computed from the noise recovered from the draws."""
    # StudentT: x = loc + scale * y, so d sum(w x)/d loc = sum w, d/d scale = sum w y
    df = st.tensor([3.0, 5.0], dtype=st.float64, requires_grad=True)
    loc = st.tensor([0.5, -1.0], dtype=st.float64, requires_grad=True)
    scale = st.tensor([2.0, 0.7], dtype=st.float64, requires_grad=True)
    st.manual_seed(1)
    x = SD.StudentT(df, loc, scale).rsample((4,))
    x.sum().backward()
    y = (x.detach() - loc.detach()) / scale.detach()
    _close(loc.grad, torch.tensor([4.0, 4.0], dtype=torch.float64))
    _close(scale.grad, torch.tensor(y.sum(0).numpy()))
    assert np.all(np.isfinite(df.grad.numpy())) and np.any(df.grad.numpy() != 0)
    # RelaxedOneHotCategorical: x = softmax((logits + g) / T); with g recovered from x,
    # torch's softmax gives the same values and gradients
    rng = rng_for("relaxed-exact")
    lg = rng.normal(size=(3, 4))
    ls, lt = st.tensor(lg, requires_grad=True), torch.tensor(lg, requires_grad=True)
    T = 0.6
    st.manual_seed(2)
    xs = SD.RelaxedOneHotCategorical(st.tensor(T), logits=ls).rsample()
    w = rng.uniform(0.5, 1.5, size=(3, 4))
    (xs * st.tensor(w)).sum().backward()
    logits_n = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    g = T * np.log(xs.detach().numpy()) - logits_n   # up to a per-row constant
    xt = torch.softmax((lt - lt.logsumexp(-1, keepdim=True) + torch.tensor(g)) / T, -1)
    (xt * torch.tensor(w)).sum().backward()
    _close(xs, xt, rtol=1e-9, atol=1e-9)
    _close(ls.grad, lt.grad, rtol=1e-8, atol=1e-8)


# name -> (build, params) for the sampling statistics: mean and variance of N_DRAWS draws
SAMPLE_CASES = {
    "Cauchy": None, "HalfNormal": None, "Chi2": None, "Gumbel": None, "Weibull": None,
    "Kumaraswamy": None, "ContinuousBernoulli-probs": None, "Geometric-probs": None,
    "NegativeBinomial-logits": None, "Multinomial": None, "LogisticNormal": None,
    "LowRankMVN": None, "MixtureSameFamily": None, "VonMises": None,
}
def _f64(v):
    return st.tensor(v, dtype=st.float64)


STAT_CASES = {
    "StudentT": lambda: SD.StudentT(_f64([3.0, 6.0]), _f64([0.5, -1.0]), _f64([1.0, 2.0])),
    "FisherSnedecor": lambda: SD.FisherSnedecor(_f64([4.0, 8.0]), _f64([10.0, 12.0])),
    "InverseGamma": lambda: SD.InverseGamma(_f64([3.5, 5.0]), _f64([1.0, 2.0])),
    "Pareto": lambda: SD.Pareto(_f64([1.0, 0.5]), _f64([5.0, 6.0])),
    "GeneralizedPareto": lambda: SD.GeneralizedPareto(_f64([0.0, 1.0]), _f64([1.0, 2.0]), _f64([0.0, -0.3])),
    "HalfCauchy": lambda: SD.HalfCauchy(_f64([1.0, 2.5])),
    "RelaxedBernoulli": lambda: SD.RelaxedBernoulli(_f64(1.0), probs=_f64([0.2, 0.7])),
}


@pytest.mark.parametrize("name", list(SAMPLE_CASES) + list(STAT_CASES))
def test_sampling_statistics(name):
    """Shapes, support and moments of N_DRAWS draws (needs no torch): the sample mean within
    5 standard errors of the mean (VonMises: the circular mean direction), and the sample
    variance within 15% where the fourth moment is finite."""
    if name in STAT_CASES:
        d = STAT_CASES[name]()
    else:
        build, params, _ = CASES[name]
        d = build(SD, _tensors(st, params(rng_for("stat-more", name))))
    st.manual_seed(11)
    x = d.sample((N_DRAWS,))
    assert tuple(x.shape) == (N_DRAWS,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert x.dtype == st.float64
    assert bool(d.support.check(x).all().item())
    xs = x.numpy()
    if name in ("Cauchy", "HalfCauchy"):   # median and quartiles: loc and loc +- scale
        if name == "HalfCauchy":   # |X|: median scale, 3rd quartile scale * tan(3 pi / 8)
            q = np.quantile(xs, [0.5, 0.75], axis=0)
            np.testing.assert_allclose(q, [d.scale.numpy(), d.scale.numpy() * math.tan(3 * math.pi / 8)],
                                       rtol=0.05)
            return
        q = np.quantile(xs, [0.25, 0.5, 0.75], axis=0)
        np.testing.assert_allclose(q[1], np.broadcast_to(d.loc.numpy(), q[1].shape), atol=0.1 * 2)
        np.testing.assert_allclose(q[2] - q[1], np.broadcast_to(d.scale.numpy(), q[1].shape), rtol=0.1)
        return
    if name == "VonMises":
        c = np.cos(xs - d.loc.numpy()).mean(0)
        s = np.sin(xs - d.loc.numpy()).mean(0)
        np.testing.assert_allclose(s, 0, atol=0.03)
        np.testing.assert_allclose(c, 1 - d.variance.numpy(), atol=0.03)
        return
    if name == "LogisticNormal":   # the stick-breaking inverse of the draws is Normal(loc, scale)
        z = SD.StickBreakingTransform().inv(x).numpy()
        np.testing.assert_allclose(z.mean(0), np.broadcast_to(d.loc.numpy(), z.shape[1:]), atol=0.1)
        np.testing.assert_allclose(z.std(0), np.broadcast_to(d.scale.numpy(), z.shape[1:]), rtol=0.05)
        return
    if name == "RelaxedBernoulli":   # P(X > 1/2) = probs at any temperature
        np.testing.assert_allclose((xs > 0.5).mean(0), d.probs.numpy(), atol=0.02)
        return
    mean = d.mean.numpy()
    var = d.variance.numpy()
    se = np.sqrt(var / N_DRAWS)
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * se + 1e-12), (xs.mean(0), mean)
    if name not in ("FisherSnedecor", "Pareto", "InverseGamma", "StudentT"):
        np.testing.assert_allclose(xs.var(0), var, rtol=0.15, atol=1e-6)


def test_lkj_wishart_sampling():
    """LKJCholesky draws are Cholesky factors of correlation matrices whose off-diagonal
    correlations have variance 1 / (2 eta + d - 1); Wishart draws are positive definite with
    mean df * Sigma."""
    st.manual_seed(4)
    d = SD.LKJCholesky(3, st.tensor([0.7, 3.0], dtype=st.float64))
    L = d.sample((4000,))
    assert tuple(L.shape) == (4000, 2, 3, 3)
    assert bool(SD.constraints.corr_cholesky.check(L).all().item())
    C = (L @ L.mT).numpy()
    var = C[..., 1, 0].var(0)
    np.testing.assert_allclose(var, 1 / (2 * np.array([0.7, 3.0]) + 2), rtol=0.12)
    cov = _spd_params(rng_for("wish-stat"), (), 3)
    w = SD.Wishart(st.tensor([4.0, 7.0], dtype=st.float64), covariance_matrix=st.tensor(cov))
    X = w.sample((4000,))
    assert tuple(X.shape) == (4000, 2, 3, 3)
    assert bool(SD.constraints.positive_definite.check(X).all().item())
    se = np.sqrt(w.variance.numpy() / 4000)
    assert np.all(np.abs(X.numpy().mean(0) - w.mean.numpy()) < 5 * se)


def test_rsample_gradients_gamma_based(torch):
    """Chi2 / InverseGamma / FisherSnedecor / Wishart rsample are differentiable (the Gamma
    sampler's implicit gradients): the gradient of the sample mean matches the gradient of
    the closed-form mean within sampling error."""
    st.manual_seed(7)
    conc = st.tensor([4.0], dtype=st.float64, requires_grad=True)
    rate = st.tensor([2.0], dtype=st.float64, requires_grad=True)
    SD.InverseGamma(conc, rate).rsample((N_DRAWS,)).mean().backward()
    # E = rate / (conc - 1): d/dconc = -rate / (conc-1)^2 = -2/9, d/drate = 1/3
    np.testing.assert_allclose([conc.grad.item(), rate.grad.item()], [-2 / 9, 1 / 3], rtol=0.05)
    df = st.tensor([5.0], dtype=st.float64, requires_grad=True)
    SD.Chi2(df).rsample((N_DRAWS,)).mean().backward()
    np.testing.assert_allclose(df.grad.item(), 1.0, rtol=0.05)
    dfw = st.tensor(6.0, dtype=st.float64, requires_grad=True)
    cov = st.tensor(_spd_params(rng_for("wish-grad"), (), 2))
    SD.Wishart(dfw, covariance_matrix=cov).rsample((4000,)).mean(0).sum().backward()
    np.testing.assert_allclose(dfw.grad.item(), cov.sum().item(), rtol=0.1)


# ------------------------------------------------------------------ KL divergence
def _kl_builders():
    def pos(r, lo=0.5, hi=2.0):
        return r.uniform(lo, hi, (3,))
    return {
        "Cauchy": lambda M, r: M.Cauchy(r.normal(size=3), pos(r)),
        "ContinuousBernoulli": lambda M, r: M.ContinuousBernoulli(probs=r.uniform(0.1, 0.9, (3,))),
        "Geometric": lambda M, r: M.Geometric(probs=r.uniform(0.1, 0.9, (3,))),
        "Gumbel": lambda M, r: M.Gumbel(r.normal(size=3), pos(r)),
        "HalfNormal": lambda M, r: M.HalfNormal(pos(r)),
        "Pareto": lambda M, r: M.Pareto(pos(r), r.uniform(2.5, 4, (3,))),
        "Beta": lambda M, r: M.Beta(pos(r), pos(r)),
        "Exponential": lambda M, r: M.Exponential(pos(r)),
        "Gamma": lambda M, r: M.Gamma(pos(r), pos(r)),
        "Laplace": lambda M, r: M.Laplace(r.normal(size=3), pos(r)),
        "Normal": lambda M, r: M.Normal(r.normal(size=3), pos(r)),
        "Uniform": lambda M, r: M.Uniform(r.uniform(-0.5, 0.2, (3,)), r.uniform(0.8, 3, (3,))),
        "Uniform01": lambda M, r: M.Uniform(r.uniform(0.05, 0.3, (3,)), r.uniform(0.6, 0.95, (3,))),
        "UniformPos": lambda M, r: M.Uniform(r.uniform(2.1, 2.5, (3,)), r.uniform(3, 4, (3,))),
        "LowRankMultivariateNormal": lambda M, r: M.LowRankMultivariateNormal(
            r.normal(size=(3, 3)), r.normal(size=(3, 3, 2)), pos(r, 0.5, 2) * np.ones((3, 1))),
        "MultivariateNormal": lambda M, r: M.MultivariateNormal(
            r.normal(size=(3, 3)), covariance_matrix=_spd_params(r, (3,), 3)),
    }


KL_PAIRS = [("Cauchy", "Cauchy"), ("ContinuousBernoulli", "ContinuousBernoulli"), ("Geometric", "Geometric"),
            ("Gumbel", "Gumbel"), ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"),
            ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
            ("LowRankMultivariateNormal", "MultivariateNormal"), ("MultivariateNormal", "LowRankMultivariateNormal"),
            ("Beta", "ContinuousBernoulli"), ("ContinuousBernoulli", "Exponential"),
            ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
            ("Exponential", "Gumbel"), ("Gamma", "Gumbel"), ("Gumbel", "Normal"), ("Normal", "Gumbel"),
            ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
            ("Uniform01", "ContinuousBernoulli"), ("Uniform", "Gumbel"), ("UniformPos", "Pareto"),
            ("Uniform", "Pareto"),
            # the pairs torch defines as infinite
            ("Beta", "Pareto"), ("ContinuousBernoulli", "Pareto"), ("Exponential", "ContinuousBernoulli"),
            ("Exponential", "Pareto"), ("Gamma", "ContinuousBernoulli"), ("Gamma", "Pareto"),
            ("Gumbel", "Beta"), ("Gumbel", "ContinuousBernoulli"), ("Gumbel", "Exponential"),
            ("Gumbel", "Gamma"), ("Gumbel", "Pareto"), ("Gumbel", "Uniform"), ("Laplace", "ContinuousBernoulli"),
            ("Laplace", "Pareto"), ("Normal", "ContinuousBernoulli"), ("Normal", "Pareto"),
            ("Pareto", "Beta"), ("Pareto", "ContinuousBernoulli"), ("Pareto", "Uniform")]


@pytest.mark.parametrize("pq", KL_PAIRS, ids=lambda pq: f"{pq[0]}-{pq[1]}")
def test_kl_against_torch(torch, pq):
    b = _kl_builders()
    leaves = {"s": [], "t": []}

    def make(M, key):
        class _M:
            def __getattr__(self, n):
                cls = getattr(M.distributions, n)

                def ctor(*args, **kw):
                    conv = []
                    for a in args:
                        if isinstance(a, np.ndarray):
                            t = M.tensor(a, requires_grad=True)
                            leaves[key].append(t)
                            a = t
                        conv.append(a)
                    for k, v in list(kw.items()):
                        if isinstance(v, np.ndarray):
                            kw[k] = M.tensor(v, requires_grad=k != "covariance_matrix")
                            if k != "covariance_matrix":
                                leaves[key].append(kw[k])
                    return cls(*conv, **kw)
                return ctor
        return _M()
    out = {}
    for key, M in (("s", st), ("t", torch)):
        rng = rng_for("kl-more", *pq)
        p = b[pq[0]](make(M, key), rng)
        q = b[pq[1]](make(M, key), rng)
        kl = (M.distributions.kl_divergence(p, q))
        out[key] = kl
        finite = np.isfinite(kl.detach().numpy())
        if finite.any():
            (kl * M.tensor(finite.astype(np.float64))).nan_to_num(0.0, 0.0, 0.0).sum().backward()
    _close(out["s"], out["t"], rtol=1e-9, atol=1e-9, msg="kl")
    for a, t in zip(leaves["s"], leaves["t"]):
        if t.grad is None:
            assert a.grad is None or np.all(a.grad.numpy() == 0)
        else:
            _close(a.grad, t.grad, rtol=1e-8, atol=1e-8, msg="kl grad")


def test_kl_inherited_and_bregman_pairs(torch):
    """Pairs found through the registry's subclass dispatch: Chi2 (a Gamma), HalfCauchy and
    InverseGamma (TransformedDistributions with equal transforms), Wishart (the exponential
    family Bregman divergence by autograd), and ExponentialFamily.entropy of the new
    exponential families; values and gradients as torch's."""
    rng = rng_for("kl-inherit")
    df1, df2 = rng.uniform(1, 5, (3,)), rng.uniform(1, 5, (3,))
    c1, c2 = _spd_params(rng, (), 3), _spd_params(rng, (), 3)
    s1, s2 = rng.uniform(0.5, 2, (3,)), rng.uniform(0.5, 2, (3,))
    pr = rng.uniform(0.1, 0.9, (3,))
    res = {}
    for M in (st, torch):
        D = M.distributions
        leaves = [M.tensor(a, requires_grad=True) for a in (df1, df2, s1, s2, pr)]
        a, b, x, y, q = leaves
        out = [D.kl_divergence(D.Chi2(a), D.Chi2(b)),
               D.kl_divergence(D.HalfCauchy(x), D.HalfCauchy(y)),
               D.kl_divergence(D.InverseGamma(a, x), D.InverseGamma(b, y)),
               D.kl_divergence(D.Wishart(a + 2, covariance_matrix=M.tensor(c1)),
                               D.Wishart(b + 2, covariance_matrix=M.tensor(c2))),
               D.ExponentialFamily.entropy(D.ContinuousBernoulli(probs=q)),
               D.ExponentialFamily.entropy(D.Wishart(a + 2, covariance_matrix=M.tensor(c1)))]
        sum(o.sum() for o in out).backward()
        res[M] = out + [t.grad for t in leaves]
    for g, e in zip(res[st], res[torch]):
        if e is None:   # torch's Bregman KL detaches p's natural parameters
            assert g is None or np.all(g.numpy() == 0)
            continue
        _close(g, e, rtol=1e-8, atol=1e-8)


def test_kl_registry_covers_torch(torch):
    from torch.distributions.kl import _KL_REGISTRY as T
    from symtrace.distributions.kl import _KL_REGISTRY as S
    ours = {(a.__name__, b.__name__) for a, b in S}
    assert {(a.__name__, b.__name__) for a, b in T} <= ours


# ------------------------------------------------------------------ transforms
def _transform_cases(M):
    D = M.distributions
    T = D.transforms
    return {
        "StickBreaking": (T.StickBreakingTransform(), (3, 4)),
        "LowerCholesky": (T.LowerCholeskyTransform(), (2, 3, 3)),
        "PositiveDefinite": (T.PositiveDefiniteTransform(), (2, 3, 3)),
        "CorrCholesky": (T.CorrCholeskyTransform(), (2, 6)),
        "Cat": (T.CatTransform([T.ExpTransform(), T.SigmoidTransform(), T.AffineTransform(1.0, 2.0)],
                               dim=-1, lengths=[2, 1, 2]), (3, 5)),
        "Cat-dim0": (T.CatTransform([T.ExpTransform(), T.TanhTransform()], dim=0, lengths=[1, 2]), (3, 4)),
        "Stack": (T.StackTransform([T.ExpTransform(), T.SoftplusTransform(), T.AffineTransform(0.5, -3.0)],
                                   dim=1), (2, 3)),
        "CDF": (T.CumulativeDistributionTransform(D.Normal(M.tensor([0.3, -1.0], dtype=M.float64),
                                                           M.tensor([1.5, 0.7], dtype=M.float64))), (3, 2)),
    }


@pytest.mark.parametrize("name", ["StickBreaking", "LowerCholesky", "PositiveDefinite", "CorrCholesky", "Cat",
                                  "Cat-dim0", "Stack", "CDF"])
def test_transforms_against_torch(torch, name):
    ts, shape = _transform_cases(st)[name]
    tt, _ = _transform_cases(torch)[name]
    x = rng_for("tr-more", name).normal(size=shape) * 0.7
    xs, xt = st.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys, yt = ts(xs), tt(xt)
    _close(ys, yt, msg="forward")
    assert ts.bijective == tt.bijective
    assert ts.domain.event_dim == tt.domain.event_dim and ts.codomain.event_dim == tt.codomain.event_dim
    assert bool(ts.codomain.check(ys.detach()).all().item())
    _close(ts.inv(ys.detach()), tt.inv(yt.detach()), rtol=1e-8, atol=1e-8, msg="inverse")
    if name != "PositiveDefinite" and name != "LowerCholesky":   # torch has no Jacobian for these
        ls, lt = ts.log_abs_det_jacobian(xs, ys), tt.log_abs_det_jacobian(xt, yt)
        _close(ls, lt, msg="log_abs_det_jacobian")
        (ys.sum() + ls.sum()).backward()
        (yt.sum() + lt.sum()).backward()
        _close(xs.grad, xt.grad, rtol=1e-9, atol=1e-9, msg="grad")
    else:
        with pytest.raises(NotImplementedError):
            ts.log_abs_det_jacobian(xs, ys)
    if hasattr(tt, "forward_shape"):
        assert tuple(ts.forward_shape(st.Size(shape))) == tuple(tt.forward_shape(torch.Size(shape)))
        assert tuple(ts.inverse_shape(ts.forward_shape(st.Size(shape)))) == shape


def test_stick_breaking_jacobian_is_the_density_change(torch):
    """LogisticNormal's log_prob is the Normal's minus the stick-breaking log-det: check
    the log-det against the log-volume of the Jacobian (K-1 first coordinates) by autograd."""
    x = st.tensor(rng_for("sb-jac").normal(size=3), requires_grad=True)
    t = SD.StickBreakingTransform()
    y = t(x)
    rows = []
    for i in range(3):
        (g,) = st.autograd.grad(y[i], x, retain_graph=True)
        rows.append(g.numpy())
    ld = np.linalg.slogdet(np.array(rows))[1]
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).item(), ld, rtol=1e-10)


def _constraint_list(C):
    return [C.real, C.real_vector, C.positive, C.nonnegative, C.greater_than(1.5), C.greater_than_eq(-2.0),
            C.less_than(0.5), C.interval(-1.0, 3.0), C.half_open_interval(0.0, 1.0), C.unit_interval,
            C.simplex, C.lower_cholesky, C.positive_definite, C.positive_semidefinite, C.corr_cholesky,
            C.independent(C.positive, 1), C.cat([C.positive, C.interval(0.0, 2.0)], dim=-1, lengths=[2, 1]),
            C.stack([C.real, C.less_than(1.0)], dim=-1)]


_INPUT_SHAPES = {10: (2, 3), 11: (3, 3), 12: (3, 3), 13: (3, 3), 14: (3,), 16: (3,), 17: (2,)}


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_biject_to_transform_to(torch, registry):
    cs, ct = _constraint_list(SD.constraints), _constraint_list(torch.distributions.constraints)
    fs, ft = getattr(SD, registry), getattr(torch.distributions, registry)
    for i, (c_s, c_t) in enumerate(zip(cs, ct)):
        try:
            t_t = ft(c_t)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                fs(c_s)
            continue
        t_s = fs(c_s)
        assert type(t_s).__name__ == type(t_t).__name__, (i, t_s, t_t)
        x = rng_for("bij", registry, i).normal(size=_INPUT_SHAPES.get(i, (2, 3)))
        ys, yt = t_s(st.tensor(x)), t_t(torch.tensor(x))
        _close(ys, yt, msg=f"{registry}({c_t})")
        assert bool(c_s.check(ys).all().item()), (i, c_s)
        if t_t.bijective:
            _close(t_s.inv(ys), t_t.inv(yt), rtol=1e-8, atol=1e-8, msg=f"{registry} inverse")
            _close(t_s.log_abs_det_jacobian(st.tensor(x), ys), t_t.log_abs_det_jacobian(torch.tensor(x), yt),
                   msg=f"{registry} log_abs_det_jacobian")
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        fs(SD.constraints.boolean)
    with pytest.raises(TypeError):
        fs.register(int, lambda c: None)


# ------------------------------------------------------------------ validation
def _invalid_cases(M):
    t = lambda v: M.tensor(v, dtype=M.float64)  # noqa: E731
    D = M.distributions
    return [
        lambda: D.Cauchy(t([0.0]), t([-1.0])),
        lambda: D.HalfNormal(t([0.0])),
        lambda: D.StudentT(t([-1.0])),
        lambda: D.Chi2(t([0.0])),
        lambda: D.FisherSnedecor(t([1.0]), t([-2.0])),
        lambda: D.Gumbel(t([0.0]), t([0.0])),
        lambda: D.Pareto(t([1.0]), t([-1.0])),
        lambda: D.Weibull(t([-1.0]), t([1.0])),
        lambda: D.Kumaraswamy(t([1.0]), t([-1.0])),
        lambda: D.Geometric(probs=t([0.0])),
        lambda: D.Geometric(probs=t([1.5])),
        lambda: D.Geometric(),
        lambda: D.NegativeBinomial(t([-1.0]), probs=t([0.5])),
        lambda: D.NegativeBinomial(t([2.0]), probs=t([1.0])),
        lambda: D.ContinuousBernoulli(probs=t([1.5]), validate_args=True),
        lambda: D.ContinuousBernoulli(probs=t([0.5]), logits=t([0.0])),
        lambda: D.Multinomial(t(3.0), probs=t([0.5, 0.5])),
        lambda: D.Multinomial(3, probs=t([0.5, -0.5])),
        lambda: D.LKJCholesky(1),
        lambda: D.LKJCholesky(3, t([-1.0])),
        lambda: D.Wishart(t(1.0), covariance_matrix=M.eye(3, dtype=M.float64)),
        lambda: D.Wishart(t(4.0)),
        lambda: D.VonMises(t([0.0]), t([-1.0])),
        lambda: D.GeneralizedPareto(t([0.0]), t([-1.0]), t([0.1])),
        lambda: D.LowRankMultivariateNormal(t([0.0, 0.0]), M.ones(3, 1, dtype=M.float64), t([1.0, 1.0])),
        lambda: D.LowRankMultivariateNormal(t([0.0, 0.0]), M.ones(2, 1, dtype=M.float64), t([1.0, -1.0])),
        lambda: D.MixtureSameFamily(D.Categorical(logits=M.zeros(3, dtype=M.float64)), D.Normal(t([0.0, 1.0]),
                                                                                                t([1.0, 1.0]))),
        lambda: D.MixtureSameFamily(D.Normal(t([0.0]), t([1.0])), D.Normal(t([0.0]), t([1.0]))),
        lambda: D.HalfNormal(t([1.0])).log_prob(t([-1.0])),
        lambda: D.Pareto(t([2.0]), t([1.0])).log_prob(t([1.0])),
        lambda: D.LKJCholesky(2).log_prob(M.eye(3, dtype=M.float64)),
        lambda: D.Multinomial(3, probs=t([0.5, 0.5])).log_prob(t([4.0, 0.0])),
    ]


def test_validation_errors_like_torch(torch):
    for i, (fs, ft) in enumerate(zip(_invalid_cases(st), _invalid_cases(torch))):
        with pytest.raises(Exception) as et:
            ft()
        with pytest.raises(type(et.value)) as es:
            fs()
        if isinstance(et.value, ValueError) and "Expected parameter" in str(et.value):
            assert str(es.value).split(" (")[0] == str(et.value).split(" (")[0], i
            assert "to satisfy the constraint" in str(es.value) or "to be positive" in str(es.value)
        elif "Expected value argument" in str(et.value):
            assert "to be within the support" in str(es.value)
        else:
            assert str(es.value).split("\n")[0][:40] == str(et.value).split("\n")[0][:40], (i, es.value, et.value)


# ------------------------------------------------------------------ compiled
def _several_log_probs(x, loc, scale, df, lg):
    return (SD.Cauchy(loc, scale).log_prob(x).sum() + SD.StudentT(df, loc, scale).log_prob(x).sum()
            + SD.Gumbel(loc, scale).log_prob(x).sum() + SD.HalfNormal(scale).log_prob(x.abs()).sum()
            + SD.Weibull(scale, df).log_prob(x.abs() + 0.1).sum()
            + SD.Geometric(logits=lg).log_prob((x.abs() * 3).floor()).sum()
            + SD.ContinuousBernoulli(logits=lg).log_prob(x.sigmoid()).sum()
            + SD.LowRankMultivariateNormal(loc, scale.unsqueeze(-1), scale).log_prob(x).sum()
            + SD.kl_divergence(SD.Gumbel(loc, scale), SD.Normal(loc, df)).sum())


def test_compiled_matches_eager():
    """log_prob of several of the new families (and a KL pair) captured as one graph:
    values and gradients as eager."""
    rng = rng_for("compile-more")
    args = [rng.normal(size=(4, 3)), rng.normal(size=(3,)), rng.uniform(0.5, 2, (3,)), rng.uniform(1, 4, (3,)),
            rng.normal(size=(3,))]
    res = {}
    for mode, fn in (("eager", _several_log_probs), ("compiled", st.compile(_several_log_probs))):
        ts = [st.tensor(a, requires_grad=True) for a in args]
        out = fn(*ts)
        out.backward()
        res[mode] = [out.detach()] + [t.grad for t in ts]
    for g, e in zip(res["compiled"], res["eager"]):
        assert_close(g, e.numpy(), rtol=1e-10, atol=1e-10)
    ex = st.explain(_several_log_probs, *[st.tensor(a) for a in args])
    assert ex.graph_count == 1 and ex.graph_break_count == 0


# ---- the probs-or-logits parameter (distributions/_probs_logits.py), family by family
_PL = {
    "Bernoulli": {}, "Geometric": {}, "ContinuousBernoulli": {},
    "Binomial": {"total_count": 5.0}, "NegativeBinomial": {"total_count": 3.0},
    "LogitRelaxedBernoulli": {"temperature": 0.7}, "Categorical": {},
}


@pytest.mark.parametrize("name", sorted(_PL))
@pytest.mark.parametrize("given", ["probs", "logits", "probs-number", "logits-number"])
def test_probs_or_logits_against_torch(name, given):
    torch = pytest.importorskip("torch")
    kw = _PL[name]
    cat = name == "Categorical"
    if given.endswith("number"):
        if cat:
            pytest.skip("Categorical takes a tensor")
        p = 0.3 if given.startswith("probs") else -0.4
    else:
        p = np.random.default_rng(1).uniform(0.1, 0.9, (2, 3))
        if given.startswith("logits"):
            p = np.log(p)
    key = given.split("-")[0]
    sarg = st.tensor(p, dtype=st.float64) if isinstance(p, np.ndarray) else p
    targ = torch.tensor(p, dtype=torch.float64) if isinstance(p, np.ndarray) else p
    def cls(mod):
        return getattr(mod.relaxed_bernoulli if name.startswith("Logit") else mod, name)
    s = cls(SD)(**kw, **{key: sarg})
    t = cls(torch.distributions)(**kw, **{key: targ})
    assert tuple(s.batch_shape) == tuple(t.batch_shape)
    for attr in ("probs", "logits"):
        np.testing.assert_allclose(np.asarray(getattr(s, attr).tolist()), getattr(t, attr).numpy(), rtol=1e-9, atol=1e-12)
    shape = (4,) + tuple(t.batch_shape)
    se, te = s.expand(shape), t.expand(shape)
    assert tuple(se.batch_shape) == tuple(te.batch_shape)
    assert tuple(se.probs.shape) == tuple(te.probs.shape)
    np.testing.assert_allclose(np.asarray(se.logits.tolist()), te.logits.numpy(), rtol=1e-9, atol=1e-12)
    if name not in ("Geometric",):
        assert tuple(s.param_shape) == tuple(t.param_shape)
        assert s._new([1.0]).dtype == s._param.dtype
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        cls(SD)(**kw, probs=sarg, logits=sarg)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        cls(SD)(**kw)
