# Regressions of the bugs the aliasing fuzzer (scripts/fuzz_views.py: chains of views,
# in-place writes through them, detach / .data, advanced indexing, inputs that are views
# of bigger tensors, error types) found in its first run, each with expected values,
# eager and compiled (the compiled functions called three times with fresh values: the
# capture and the cached entry); and a fixed-seed smoke run of that fuzzer (needs torch).

import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, load_fuzzer, maybe_compiled  # noqa: F401


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ret", ["squeeze_dim", "squeeze_dims", "both"])
def test_squeeze_of_written_input_view_gradient(mode, ret):
    # a compiled function writing rows of an input that is a view, then returning
    # x.squeeze(-1) (a no-op squeeze): the cached call remade the output from the input
    # without refreshing its history, so the overwritten rows got gradient (fuzz seed 150)
    def f(x):
        x[1:3] = 1
        if ret == "squeeze_dim":
            return x.squeeze(-1)
        if ret == "squeeze_dims":
            return x.squeeze((-1, 0))
        return x.squeeze(-1), x

    g = maybe_compiled(f, mode)
    for k in range(3):
        b = (st.arange(12.0).reshape(4, 3) * (k + 1)).requires_grad_()
        out = g(b.clone()[:, 1:])
        y = out[0] if ret == "both" else out
        np.testing.assert_array_equal(
            y.detach().numpy(), [[1 * (k + 1), 2 * (k + 1)], [1, 1], [1, 1], [10 * (k + 1), 11 * (k + 1)]])
        y.backward(st.ones(4, 2))
        np.testing.assert_array_equal(b.grad.numpy(), [[0, 1, 1], [0, 0, 0], [0, 0, 0], [0, 1, 1]])


@pytest.mark.parametrize("mode", MODES)
def test_index_put_of_input_view_then_squeeze_gradient(mode):
    def f(x):
        x[st.tensor([1, -2])] = 1
        return x.squeeze(-1)

    g = maybe_compiled(f, mode)
    for k in range(3):
        b = (st.arange(12.0).reshape(4, 3) - k).requires_grad_()
        y = g(b.clone()[:, 1:])
        (y * st.tensor([2.0, 3.0])).sum().backward()
        np.testing.assert_array_equal(b.grad.numpy(), [[0, 2, 3], [0, 0, 0], [0, 0, 0], [0, 2, 3]])


@pytest.mark.parametrize("grad", [False, True])
def test_detach_inplace_of_copying_reshape(grad):
    # x.permute(...).reshape(...) copies (the permuted x is not viewable): the result is
    # no view (torch's _unsafe_view of a clone), so detach_() on it is allowed; it raised
    # "Can't detach views in-place" when x required grad (fuzz seeds 385, 478)
    b = st.arange(12.0).reshape(2, 3, 2).requires_grad_(grad)
    v = (b * 1).permute(0, 2, 1).reshape(1, -1)
    assert v._base is None
    v.detach_()
    assert not v.requires_grad and v.grad_fn is None
    np.testing.assert_array_equal(v.numpy(), [[0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]])


def test_copying_reshape_written_in_place_keeps_gradient():
    # (the result of a copying reshape is no view: writes into it still reach b's grad)
    b = st.arange(6.0).reshape(2, 3).requires_grad_()
    v = b.t().reshape(-1)
    v.mul_(2)
    v[1:3] = 0
    np.testing.assert_array_equal(v.detach().numpy(), [0, 0, 0, 8, 4, 10])
    (v * st.arange(6.0)).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [[0, 0, 8], [0, 6, 10]])


@pytest.mark.parametrize("mode", BACKENDS)
def test_detach_inplace_of_copying_reshape_compiled(mode):
    def f(x):
        v = x.permute(0, 2, 1).reshape(1, -1)
        v.detach_()
        return v

    g = maybe_compiled(f, mode, fullgraph=False)
    for k in range(3):
        v = g(st.arange(12.0).reshape(2, 3, 2) + k)
        np.testing.assert_array_equal(v.numpy(), np.array([[0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]]) + k)


def _fuzzer():
    return load_fuzzer("fuzz_views")


def test_view_fuzzer_smoke_fixed_seeds():
    # a few seeds through every run (eager, compiled three times, gradients): no mismatch
    fz = _fuzzer()
    nstmts = nwrites = 0
    for seed in (4, 7, 10, 21, 26, 150):
        prog = fz.generate(seed)
        nstmts += len(prog.stmts)
        nwrites += sum(1 for s in prog.stmts if "_(" in s or "] =" in s or "+=" in s)
        found = fz.check(prog, backends=BACKENDS)
        assert not found, "seed %d: %s\n%s" % (seed, found, fz.fc.reproducer(prog, found[0][0]))
    assert nstmts >= 40 and nwrites >= 15  # the programs are not trivial


def test_view_fuzzer_compares_exception_types():
    fz = _fuzzer()
    ref = fz.fc.Outcome(exc=RuntimeError("x"), where="call")
    assert [k for k, _ in fz.compare(ref, fz.fc.Outcome(exc=IndexError("x"), where="call"))] == \
        ["exc-type"]
    assert fz.compare(ref, fz.fc.Outcome(exc=RuntimeError("y"), where="call")) == []
