"""Helpers of the autograd tests that run each program with symtrace and with
torch (test_autograd_hunt.py, test_autograd_hunt2.py): the `L` fixture (the
library under test, with [torch] ids checking that the expectations are
torch's behaviour), T (a float32 tensor from a list), N (a tensor as float64
numpy, None kept) and close (allclose against expected values)."""
import numpy as np
import pytest

import symtrace as st


@pytest.fixture(params=["symtrace", "torch"])
def L(request):
    if request.param == "torch":
        return pytest.importorskip("torch")
    return st


def T(L, a, grad=True):
    return L.tensor(np.array(a, dtype=np.float32), requires_grad=grad)


def N(t):
    return None if t is None else np.array(t.detach().double().numpy())


def close(a, b):
    np.testing.assert_allclose(N(a), np.array(b, dtype=np.float64), rtol=1e-5, atol=1e-6)
