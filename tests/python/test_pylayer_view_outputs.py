# A custom autograd.Function whose forward returns a view (of a value it computed,
# or of its input) inside a compiled graph: the output is the Function's, with the
# Function's backward, on every call. From the second compiled call on, such an
# output came back without requires_grad (a view of a value it computed: F.unfold
# returned from a compiled frame lost its gradients), or with a plain view's
# gradient instead of the custom one (a view of its input).
import numpy as np
import pytest

import symtrace as st


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def _function(body, scale):
    class F(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return body(x)

        @staticmethod
        def backward(ctx, g):
            return g.reshape(3) * scale
    return F


BODIES = {
    "view_of_computed": lambda x: (x * 1).view(3, 1),
    "view_of_input": lambda x: x.view(3, 1),
    "unsqueeze_of_input": lambda x: x.unsqueeze(1),
    "views_chain_of_input": lambda x: x.view(3, 1)[:, 0].view(3, 1),
    "computed": lambda x: (x * 1).reshape(3, 1).contiguous(),
}


@pytest.mark.parametrize("body", list(BODIES))
@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_the_functions_backward_on_every_compiled_call(body, backend):
    if not st._C._fe_backend_available(backend):
        pytest.skip(backend)
    F = _function(BODIES[body], 2.0)
    f = st.compile(lambda x: F.apply(x), backend=backend)
    for call in range(3):
        x = st.full((3,), float(call + 1), requires_grad=True)
        y = f(x)
        assert y.requires_grad, call
        assert y.tolist() == [[float(call + 1)]] * 3
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0], call


def test_unfold_returned_from_a_compiled_frame_keeps_its_gradients():
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    f = st.compile(lambda x: st.nn.functional.unfold(x, 2))
    for call in range(3):
        x = st.tensor(x0 * (call + 1), requires_grad=True)
        y = f(x)
        assert y.requires_grad, call
        (y * y).sum().backward()
        tx = torch.tensor(x0 * (call + 1), requires_grad=True)
        ty = torch.nn.functional.unfold(tx, 2)
        (ty * ty).sum().backward()
        np.testing.assert_allclose(np.asarray(y.tolist()), ty.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(x.grad.tolist()), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
