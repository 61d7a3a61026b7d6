"""Int arguments that stayed specialized under dynamic=True (fuzz_dynints "graphs"):
a relation guard between two int symbols (n0 - n2 >= 0, from n0 - n2 used as a tensor
operand) now fits the probe values (frontend/tr_dynprobe.c tr_dyp_fit_probes), so the
graph holds at the probes instead of pinning both ints. Values against eager (and
torch where it is installed) over several distinct values, and a bounded graph count."""
import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import close, fresh_dynamic, graphs  # noqa: F401

X = np.random.default_rng(7).standard_normal((3, 7)).astype(np.float32)


def _run(fn, calls, grad=False):
    """fn(x, *ints) compiled (dynamic=True) against eager per call: the graphs made."""
    c = st.compile(fn, dynamic=True)
    g0 = graphs()
    for ints in calls:
        res = []
        for f in (c, fn):
            x = st.tensor(X, requires_grad=grad)
            y = f(x, *ints)
            gx = None
            if grad:
                (y * y).sum().backward()
                gx = x.grad.tolist()
            res.append((y, gx))
        (got, ggot), (want, gwant) = res
        assert got.shape == want.shape and got.dtype == want.dtype, ints
        close(got.tolist(), want.tolist())
        if grad:
            close(ggot, gwant)
    return graphs() - g0


# distinct tuples of ints >= 2 with n0 >= n2 (fuzz_dynints seed 1148212)
CALLS = [(5, 2), (5, 3), (4, 2), (7, 3), (8, 3), (9, 4), (6, 6)]


def test_difference_of_two_ints_one_graph():
    assert _run(lambda x, a, b: x + (a - b), CALLS, grad=True) == 1


def test_seed_1148212_one_graph():
    def f(x, n0, n2):
        return x * (n0 % 3) + (n0 - n2)
    assert _run(f, CALLS, grad=True) == 1


def test_difference_of_two_ints_matches_torch():
    torch = pytest.importorskip("torch")
    c = st.compile(lambda x, a, b: x * (a % 3) + (a - b), dynamic=True)
    for a, b in CALLS:
        want = (torch.tensor(X) * (a % 3) + (a - b)).numpy()
        close(c(st.tensor(X), a, b).numpy(), want)


# both signs of n0 - n2: one graph per sign (the size operand is -(ones(-n).sum())
# below 0), not one per negative value
SIGNED = [(2, 5), (2, 6), (3, 7), (2, 8), (5, 2), (6, 3), (9, 4), (4, 4)]


def test_negative_difference_one_graph_per_sign():
    assert _run(lambda x, a, b: x * (a - b) + (a - b), SIGNED, grad=True) <= 2


def test_negative_difference_int_tensor():
    c = st.compile(lambda x, a, b: x + (a - b), dynamic=True)
    xi = np.arange(6, dtype=np.int64).reshape(2, 3)
    g0 = graphs()
    for a, b in SIGNED:
        got = c(st.tensor(xi), a, b)
        assert got.dtype == st.int64
        assert got.tolist() == (xi + (a - b)).tolist(), (a, b)
    assert graphs() - g0 <= 2


def test_negative_difference_matches_torch():
    torch = pytest.importorskip("torch")
    c = st.compile(lambda x, a, b: (x * (a - b) + (a - b)).sum(1), dynamic=True)
    for a, b in SIGNED:
        want = (torch.tensor(X) * (a - b) + (a - b)).sum(1).numpy()
        close(c(st.tensor(X), a, b).numpy(), want)
