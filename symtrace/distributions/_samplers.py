"""Samplers and special functions that symtrace has no kernel for, composed of existing
ops and drawing from the global generator (symtrace.rand / symtrace.randn, so
symtrace.manual_seed makes them reproducible):

- Gamma(alpha, 1) draws by Marsaglia and Tsang's method (2000), vectorised: a fixed
  number of proposal rounds over the whole tensor with an acceptance mask, then one more
  round at a time until every element has accepted (this last check reads a value, so it
  runs eagerly); alpha < 1 is boosted as Gamma(alpha + 1) * U^(1/alpha). Draws are kept
  as logarithms so that tiny ones do not underflow before a Dirichlet normalizes them.
- the implicit reparameterization gradient of those draws (Figurnov et al., 2018):
  dx/dalpha = -(dF(x; alpha)/dalpha) / p(x; alpha), F the Gamma cdf, from its power series.
- Poisson draws: inversion by sequential search for rate < 10, Hormann's transformed
  rejection with squeeze (PTRS, 1993) above, vectorised the same way.
- Binomial draws: inversion for n * min(p, 1 - p) < 10, Hormann's BTRS (1993) above, with
  the exact log-pmf ratio (lgamma) in the acceptance test.

Everything is computed in float64 and cast back by the callers."""
import math

from .. import _C
from .._dtype import bool_, float64
from .._ops import (abs, digamma, exp, floor, lgamma, log, log1p, logical_not, ones,
                    rand, randn, sqrt, where, zeros)
from ..autograd import is_grad_enabled

_ROUNDS = 4     # proposal rounds drawn before the first check that all have accepted


def _host(t):
    return t.item()


def _any(b):
    return b.numel() > 0 and bool(b.any().item())


def _all(b):
    return b.numel() == 0 or bool(b.all().item())


def standard_gamma_log(alpha):
    """standard_gamma_log(alpha) -> float64 Tensor: log of one Gamma(alpha, 1) draw per
    element of alpha (float64, > 0, no gradient)."""
    shape = tuple(alpha.shape)
    boost = alpha < 1
    a = where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = (9 * d).rsqrt()
    logd = log(d)
    logx = zeros(shape, dtype=float64, device=alpha.device)
    done = zeros(shape, dtype=bool_, device=alpha.device)
    rounds = _ROUNDS
    while True:
        for _ in range(rounds):
            z = randn(shape, dtype=float64, device=alpha.device)
            u = rand(shape, dtype=float64, device=alpha.device)
            v = 1 + c * z
            pos = v > 0
            logv3 = 3 * log(where(pos, v, 1.0))
            ok = pos & (log(u) < 0.5 * z * z + d - d * exp(logv3) + d * logv3)
            logx = where(ok & logical_not(done), logd + logv3, logx)
            done = done | ok
        if _all(done):
            break
        rounds = 1
    if _any(boost):
        u = rand(shape, dtype=float64, device=alpha.device)
        logx = where(boost, logx + log(u) / alpha, logx)
    return logx


def standard_gamma_log_grad(alpha, logx):
    """standard_gamma_log_grad(alpha, logx) -> d log(x) / d alpha for Gamma(alpha, 1) draws
    x = exp(logx) held at their cdf value (float64, no gradient). With
    P(a, x) = x^a e^-x / Gamma(a + 1) * S, S = sum_n t_n, t_n = x^n / ((a+1)...(a+n)):
    d log x / d a = -((log x - digamma(a + 1)) S - sum_n t_n h_n) / a, h_n = sum_k<=n 1/(a+k).
    The series is summed until its terms are below float64 rounding (a count of terms read
    from the values)."""
    x = exp(logx)
    if x.numel() == 0:
        return zeros(tuple(alpha.shape), dtype=float64, device=alpha.device)
    gap = max(_host((x - alpha).amax()), 0.0)
    n_terms = int(math.ceil(gap + 9 * math.sqrt(max(_host(x.amax()), 0.0)) + 20))
    t = ones(tuple(x.shape), dtype=float64, device=x.device)
    s = t
    h = zeros(tuple(x.shape), dtype=float64, device=x.device)
    tt = h
    for n in range(1, n_terms + 1):
        an = alpha + n
        t = t * x / an
        h = h + an.reciprocal()
        s = s + t
        tt = tt + t * h
    return -((logx - digamma(alpha + 1)) * s - tt) / alpha


def gamma_log_rsample(alpha):
    """gamma_log_rsample(alpha) -> log of Gamma(alpha, 1) draws in alpha's shape (float64),
    differentiable in alpha through the implicit reparameterization gradient (the value is
    the draw; its gradient dlog x/dalpha is attached as (alpha - alpha.detach()) * g)."""
    a = alpha.detach().to(float64)
    logx = standard_gamma_log(a)
    if alpha.requires_grad and is_grad_enabled():
        g = standard_gamma_log_grad(a, logx)
        logx = logx + (alpha.to(float64) - a) * g
    return logx


def poisson(rate):
    """poisson(rate) -> float64 Tensor of Poisson(rate) draws (rate float64 >= 0, no grad)."""
    shape = tuple(rate.shape)
    dev = rate.device
    out = zeros(shape, dtype=float64, device=dev)
    small = rate < 10
    if _any(small):
        lam = where(small, rate, 0.0)
        lmax = _host(lam.amax())
        n_terms = int(math.ceil(lmax + 10 * math.sqrt(lmax) + 20))
        u = rand(shape, dtype=float64, device=dev)
        p = exp(-lam)
        cum = p
        k = zeros(shape, dtype=float64, device=dev)
        for i in range(1, n_terms + 1):
            k = k + (u > cum).to(float64)
            p = p * lam / i
            cum = cum + p
        out = where(small, k, out)
    big = logical_not(small)
    if _any(big):
        lam = where(big, rate, 10.0)
        slam, loglam = sqrt(lam), log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        log_invalpha = log(1.1239 + 1.1328 / (b - 3.4))
        vr = 0.9277 - 3.6224 / (b - 2)
        done = small
        kout = zeros(shape, dtype=float64, device=dev)
        rounds = _ROUNDS
        while True:
            for _ in range(rounds):
                uu = rand(shape, dtype=float64, device=dev) - 0.5
                v = rand(shape, dtype=float64, device=dev)
                us = 0.5 - abs(uu)
                k = floor((2 * a / us + b) * uu + lam + 0.43)
                k = where(k == k, k, -1.0)
                quick = (us >= 0.07) & (v <= vr)
                reject = (k < 0) | ((us < 0.013) & (v > us))
                kk = k.clamp(min=0)
                slow = (log(v) + log_invalpha - log(a / (us * us) + b)
                        <= -lam + kk * loglam - lgamma(kk + 1))
                ok = quick | (logical_not(reject) & slow)
                kout = where(ok & logical_not(done), k, kout)
                done = done | ok
            if _all(done):
                break
            rounds = 1
        out = where(big, kout, out)
    return out


def binomial(count, prob):
    """binomial(count, prob) -> float64 Tensor of Binomial(count, prob) draws (float64
    tensors of one shape, count a nonnegative integer value, prob in [0, 1], no grad)."""
    shape = tuple(count.shape)
    dev = count.device
    flip = prob > 0.5
    q = where(flip, 1 - prob, prob)
    out = zeros(shape, dtype=float64, device=dev)
    inv = count * q < 10
    if _any(inv):
        n = where(inv, count, 0.0)
        qq = where(inv, q, 0.0)
        r = qq / (1 - qq)
        mean = n * qq
        bound = _host((mean + 10 * sqrt(mean * (1 - qq)) + 20).amax())
        n_terms = int(math.ceil(min(bound, _host(n.amax()))))
        u = rand(shape, dtype=float64, device=dev)
        pk = exp(n * log1p(-qq))
        cum = pk
        k = zeros(shape, dtype=float64, device=dev)
        for i in range(1, n_terms + 1):
            k = k + (u > cum).to(float64)
            pk = pk * (n - i + 1).clamp(min=0) / i * r
            cum = cum + pk
        out = where(inv, k.clamp(max=n), out)
    big = logical_not(inv)
    if _any(big):
        n = where(big, count, 100.0)
        p = where(big, q, 0.5)
        spq = sqrt(n * p * (1 - p))
        b = 1.15 + 2.53 * spq
        a = -0.0873 + 0.0248 * b + 0.01 * p
        c = n * p + 0.5
        vr = 0.92 - 4.2 / b
        alpha = (2.83 + 5.1 / b) * spq
        lr = log(p / (1 - p))
        m = floor((n + 1) * p)
        hm = lgamma(m + 1) + lgamma(n - m + 1)
        done = inv
        kout = zeros(shape, dtype=float64, device=dev)
        rounds = _ROUNDS
        while True:
            for _ in range(rounds):
                uu = rand(shape, dtype=float64, device=dev) - 0.5
                v = rand(shape, dtype=float64, device=dev)
                us = 0.5 - abs(uu)
                k = floor((2 * a / us + b) * uu + c)
                inrange = (k >= 0) & (k <= n)
                quick = inrange & (us >= 0.07) & (v <= vr)
                kk = where(inrange, k, 0.0)
                lhs = log(v * alpha / (a / (us * us) + b))
                rhs = (kk - m) * lr + hm - lgamma(kk + 1) - lgamma(n - kk + 1)
                ok = quick | (inrange & (lhs <= rhs))
                kout = where(ok & logical_not(done), k, kout)
                done = done | ok
            if _all(done):
                break
            rounds = 1
        out = where(big, kout, out)
    return where(flip, count - out, out)
