# Dynamic shapes and in-place writes into frame arguments (frontend/tr_dynamic.c
# tr_dyn_validate, runtime/trace.c note_replay): a write through a view of an
# argument (x.view(b, -1).mul_(2)), and a view of an argument alive across a
# write into it, used to make a graph per size: the view remade after the write
# and the argument's new value (the written view viewed back) kept the traced
# sizes. And scalar arithmetic whose number equals a size (x.mul_(2) next to a
# dim of 2 or 3, x.div_(4) next to a dim of 4) pinned that size or made the frame
# static: the number is the op's argument, not a size read inside. All checked
# against torch, with the graph counts.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F

torch = pytest.importorskip("torch")


def graphs():
    return st._C._fe_stats()["graphs"]


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_write_through_a_view_of_the_argument():
    rng = np.random.default_rng(0)

    def f(x):
        flat = x.view(x.shape[0], -1)
        flat.mul_(2)
        return flat.sum(1)

    g = st.compile(f, dynamic=True)
    for n in (5, 6, 9, 13):
        a = rng.standard_normal((3, n, 4)).astype(np.float32)
        xs, xt = st.tensor(a), torch.tensor(a)
        close(g(xs), f(xt))
        close(xs, xt)
    assert graphs() == 1


def test_write_through_a_view_of_a_sliced_argument():
    rng = np.random.default_rng(1)
    buf = rng.standard_normal((3, 30, 4)).astype(np.float32)
    bs, bt = st.tensor(buf), torch.tensor(buf)

    def f(x):
        flat = x.view(x.shape[0], -1)           # dims 1, 2 of buf[:, :n] merge
        flat.add_(1)
        return flat.amax(1)

    g = st.compile(f, dynamic=True)
    for n in (5, 7, 12):
        close(g(bs[:, :n]), f(bt[:, :n]))
        close(bs, bt)
    assert graphs() == 1


def test_view_alive_across_a_write_into_the_argument():
    rng = np.random.default_rng(2)

    def f(x):
        flat = x.view(x.shape[0], -1)
        before = flat.sum(1)
        x.mul_(3)
        return before, flat.sum(1)          # flat sees the write

    g = st.compile(f, dynamic=True)
    for n in (5, 6, 9):
        a = rng.standard_normal((3, n, 4)).astype(np.float32)
        xs, xt = st.tensor(a), torch.tensor(a)
        for p, q in zip(g(xs), f(xt)):
            close(p, q)
        close(xs, xt)
    assert graphs() == 1


def test_scalar_equal_to_a_small_size_does_not_pin_it():
    """x.mul_(2) with a dim of 3 used to guard that dim to 3 (a 2 might have been
    a size folded inside the call)."""
    rng = np.random.default_rng(3)

    def f(x):
        x.mul_(2)
        x.sub_(0.5)
        return x.sum(0)

    g = st.compile(f, dynamic=True)
    for shape in ((3, 5), (3, 8), (4, 7), (2, 9)):
        a = rng.standard_normal(shape).astype(np.float32)
        xs, xt = st.tensor(a), torch.tensor(a)
        close(g(xs), f(xt))
        close(xs, xt)
    assert graphs() == 1


def test_scalar_equal_to_a_size_keeps_the_frame_dynamic():
    """x.div_(4) next to a dim of 4 made the frame static (a 4 folded from a size),
    one graph per size."""
    rng = np.random.default_rng(4)

    def f(x):
        x.div_(4)
        return x.clamp(0, 4) + x.mul(8)

    g = st.compile(f, dynamic=True)
    for shape in ((5, 4), (6, 4), (9, 8), (7, 5)):
        a = rng.standard_normal(shape).astype(np.float32) * 10
        xs, xt = st.tensor(a), torch.tensor(a)
        close(g(xs), f(xt))
        close(xs, xt)
    assert graphs() == 1


@pytest.mark.parametrize("batch", [(2, 3, 5), (3, 4, 2)])
def test_sizes_folded_inside_library_calls_stay_correct(batch):
    """What the pins are for: a library call that folds a size into a constant of
    the graph (kl_div's batchmean, var's n - 1) must be right at every size."""
    rng = np.random.default_rng(5)

    def f(L, Fn, a, b):
        return Fn.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean") + a.var(0).sum()

    g = st.compile(lambda a, b: f(st, F, a, b), dynamic=True)
    for n in batch:
        a = rng.standard_normal((n, 6)).astype(np.float32)
        b = rng.standard_normal((n, 6)).astype(np.float32)
        got = g(st.tensor(a), st.tensor(b))
        want = f(torch, torch.nn.functional, torch.tensor(a), torch.tensor(b))
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
