# Regressions of the bugs the aliasing fuzzer (scripts/fuzz_views.py: chains of views,
# in-place writes through them, detach / .data, advanced indexing, inputs that are views
# of bigger tensors, error types) found in its first run, each with expected values,
# eager and compiled (the compiled functions called three times with fresh values: the
# capture and the cached entry).
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


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
