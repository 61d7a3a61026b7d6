# Regressions of the bugs scripts/fuzz_compile.py (the differential fuzzer of compiled
# graphs against torch) found, each with expected values, eager and compiled; and a
# small fixed-seed smoke run of the fuzzer itself (needs torch, its reference).

import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, load_fuzzer, maybe_compiled  # noqa: F401


@pytest.mark.parametrize("mode", MODES)
def test_clamp_inplace_under_autograd(mode):
    # clamp_ on a tensor that requires grad: its backward needs the values before the
    # write (torch saves the original); symtrace raised 'modified by an inplace operation'
    def f(a):
        x = a * 1
        x.clamp_(min=-1, max=0.5)
        return x

    a = st.tensor([1.0, 0.25, -3.0, -0.5], requires_grad=True)
    out = maybe_compiled(f, mode)(a)
    (out * st.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), [0.5, 0.25, -1.0, -0.5])
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 2.0, 0.0, 4.0])


@pytest.mark.parametrize("mode", MODES)
def test_softmax_methods_take_dtype(mode):
    # Tensor.softmax / Tensor.log_softmax(dim, dtype=None) as torch's: the method forms
    # raised TypeError on dtype
    def f(x):
        return x.softmax(1, dtype=st.float32), x.log_softmax(0, dtype=st.float32)

    x = st.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=st.float16)
    s, ls = maybe_compiled(f, mode)(x)
    assert s.dtype == st.float32 and ls.dtype == st.float32
    e = np.exp([0.0, 1.0])
    np.testing.assert_allclose(s.numpy(), np.tile(e / e.sum(), (2, 1)), rtol=1e-6)
    lse = np.log1p(np.exp(2.0))  # over dim 0: columns [0, 2] and [1, 3]
    np.testing.assert_allclose(ls.numpy(), [[-lse, -lse], [2 - lse, 2 - lse]], rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_exp2_gradient_reads_its_result(mode):
    # exp2(x) is pow(2, x): its exponent's gradient g * y * log(2) reads the result, as
    # torch's, so writing into x afterwards is fine (it raised 'modified by an inplace
    # operation ... PowBackward0')
    def f(x):
        y = st.exp2(x)
        x.add_(1)
        return y

    a = st.tensor([0.5, -1.0, 2.0], requires_grad=True)
    maybe_compiled(f, mode)(a * 1).backward(st.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(a.grad.numpy(), np.array([1.0, 2.0, 3.0]) * np.exp2([0.5, -1.0, 2.0])
                               * np.log(2.0), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_pow_exponent_gradient_at_zero_base(mode):
    # the exponent's gradient from the result keeps torch's values at a zero base: 0 for
    # exponents >= 0, -inf for negative ones, NaN for NaN
    def f(e, b):
        return st.pow(b, e) + 0.0 ** e + 3.0 ** e

    e = st.tensor([1.0, 0.0, -2.0, 0.5, float("nan")], requires_grad=True)
    b = st.tensor([0.0, 0.0, 0.0, 2.0, 0.0])
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    maybe_compiled(f, mode)(e, b).backward(st.tensor(g.astype(np.float32)))
    ev = np.array([1.0, 0.0, -2.0, 0.5, np.nan])
    want = g * 3.0 ** ev * np.log(3.0)
    want[2] = -np.inf
    want[3] += 4.0 * 2.0 ** 0.5 * np.log(2.0)
    np.testing.assert_allclose(e.grad.numpy(), want, rtol=1e-6)


# ------------------------------------------------------------- the fuzzer itself

def _fuzzer():
    return load_fuzzer("fuzz_compile")


@pytest.mark.parametrize("mode", MODES)
def test_fmod_of_small_ints_by_a_number_wraps_it_to_their_dtype(mode):
    # torch converts the number to the tensor's dtype first: uint8 -2 is 254, int8 200 is -56
    f = maybe_compiled(lambda u, i: (u.fmod(-2), i.fmod(200), i.fmod(-3)), mode)
    u = st.tensor([9, 6, 3, 250], dtype=st.uint8)
    a, b, c = f(u, u.to(st.int8))
    assert a.tolist() == [9, 6, 3, 250] and a.dtype is st.uint8
    assert b.tolist() == [9, 6, 3, -6] and b.dtype is st.int8
    assert c.tolist() == [0, 0, 0, -0]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        u.fmod(256)          # 256 is 0 in uint8


@pytest.mark.parametrize("mode", MODES)
def test_bool_add_takes_alpha_as_a_bool(mode):
    f = maybe_compiled(lambda b: (b.add(True, alpha=2), st.add(True, b, alpha=3),
                                   b.add(False, alpha=2), b.clone().add_(True, alpha=0)), mode)
    b = st.tensor([True, False])
    for r, want in zip(f(b), ([True, True], [True, True], [True, False], [True, False])):
        assert r.dtype is st.bool and r.tolist() == want
    assert st.tensor([1, 2]).add(True, alpha=3).tolist() == [4, 5]


def test_in_place_on_an_empty_expanded_tensor():
    # no element, so none shared: torch writes nothing and raises nothing
    for t in (st.ones(1, 0).expand(5, 0), st.ones(0, 1).expand(0, 3)):
        assert tuple(t.add_(1).shape) == tuple(t.shape)
        assert tuple(t.mul_(st.ones(tuple(t.shape))).shape) == tuple(t.shape)
    with pytest.raises(RuntimeError, match="single memory location"):
        st.ones(1, 2).expand(5, 2).add_(1)


def test_fuzzer_smoke_fixed_seeds():
    # a few seeds through every run (eager, compiled twice, gradients) on the CPU
    # backends: no mismatch with torch
    fz = _fuzzer()
    nstmts = 0
    for seed in (3, 7, 8, 12, 25, 40):
        prog = fz.generate(seed)
        nstmts += len(prog.stmts)
        found = fz.check(prog, backends=BACKENDS)
        assert not found, "seed %d: %s\n%s" % (seed, found, fz.reproducer(prog, found[0][0]))
    assert nstmts >= 18  # the programs are not trivial


def test_fuzzer_reports_a_difference():
    # the comparison is not vacuous: a changed value, dtype or raise is reported
    fz = _fuzzer()
    x = [(np.zeros(2), "float32")]
    ref = fz.Outcome(outs=[(np.array([1.0, 2.0]), "float32", (2,), False)], inputs=x)
    off = fz.Outcome(outs=[(np.array([1.0, 2.1]), "float32", (2,), False)], inputs=x)
    dt = fz.Outcome(outs=[(np.array([1.0, 2.0]), "float16", (2,), False)], inputs=x)
    side = fz.Outcome(outs=ref.outs, inputs=[(np.ones(2), "float32")])
    assert [k for k, _ in fz.compare(ref, off)] == ["value"]
    assert [k for k, _ in fz.compare(ref, dt)] == ["dtype"]
    assert [k for k, _ in fz.compare(ref, side)] == ["side-effect"]
    assert [k for k, _ in fz.compare(ref, fz.Outcome(exc=RuntimeError("x"), where="call"))] == \
        ["raise-call"]
    assert [k for k, _ in fz.compare(fz.Outcome(exc=RuntimeError("x"), where="call"), ref)] == \
        ["no-raise"]
    assert fz.compare(ref, ref) == []
