"""A compiled autograd.Function whose forward computes its output from a
detached copy (reads no input that requires grad) still gets the Function's
backward: the output requires grad on every call, as eagerly and in torch.
runtime/cfn.c's needed() gives every input of a PyLayer region a gradient
when an output of the region is needed."""
import numpy as np
import pytest

import symtrace as st
from symtrace.autograd import Function


class FromDetached(Function):
    @staticmethod
    def forward(ctx, x, out):
        return out.clone()

    @staticmethod
    def backward(ctx, g):
        return g * 3, None


class TwoOuts(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        return y * 2, y + 1

    @staticmethod
    def backward(ctx, ga, gb):
        (y,) = ctx.saved_tensors
        return ga * y + gb, None


@pytest.mark.parametrize("backend", ["llvm", "interp", "eager"])
def test_output_from_detached_copy_keeps_its_gradient(backend):
    f = st.compile(lambda x: FromDetached.apply(x, x.detach() + 1), backend=backend)
    x = st.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    for _ in range(3):
        x.grad = None
        out = f(x)
        assert out.requires_grad
        np.testing.assert_array_equal(out.detach().numpy(), [1, 2, 3])
        out.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [3, 3, 3])


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_two_outputs_from_a_detached_input(backend):
    def fn(x):
        a, b = TwoOuts.apply(x, (x * 0 + 2).detach())
        return (a * b).sum()

    f = st.compile(fn, backend=backend)
    x = st.tensor(np.ones(4, dtype=np.float32), requires_grad=True)
    for _ in range(3):
        x.grad = None
        loss = f(x)
        assert loss.requires_grad
        loss.backward()
        # d(a*b)/da = b = 3, d/db = a = 4: grad = 3 * y + 4 = 10
        np.testing.assert_array_equal(x.grad.numpy(), [10] * 4)


def test_matches_torch_over_calls():
    torch = pytest.importorskip("torch")

    class T(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, out):
            return out.clone()

        @staticmethod
        def backward(ctx, g):
            return g * 3, None

    xt = torch.arange(3.0, requires_grad=True)
    ot = T.apply(xt, xt.detach() + 1)
    ot.sum().backward()
    f = st.compile(lambda x: FromDetached.apply(x, x.detach() + 1))
    x = st.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    for _ in range(3):
        x.grad = None
        o = f(x)
        assert o.requires_grad == ot.requires_grad
        o.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
