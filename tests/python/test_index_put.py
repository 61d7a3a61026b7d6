"""index_put / put and torch's select_scatter, diagonal_scatter, as_strided_scatter
(symtrace/_ops/scatter_ops.py), against torch: values, gradients of the input and the
written values, in-place forms and errors."""
import pytest

import symtrace as st
from tensor_data import run_code

torch = pytest.importorskip("torch")

CASES = [
    "x=t.arange(12.).reshape(3,4).requires_grad_(); v=t.tensor([10.,20.]).requires_grad_(); "
    "y=x.index_put((t.tensor([0,2]), t.tensor([1,3])), v); (y*y).sum().backward(); out=(y, x.grad, v.grad)",
    "x=t.arange(12.).reshape(3,4).requires_grad_(); v=t.tensor([10.,20.,30.]).requires_grad_(); "
    "y=t.index_put(x, (t.tensor([0,0,2]), t.tensor([1,1,3])), v, accumulate=True); (y*y).sum().backward(); "
    "out=(y, x.grad, v.grad)",
    "x=t.zeros(3,4); r=x.index_put_((t.tensor([1]),), t.tensor(5.)); out=(x, r is x)",
    "x=t.zeros(2,3); x.put_(t.tensor([0,-1,4]), t.tensor([1.,2.,3.])); out=x",
    "x=t.zeros(2,3); x.put_(t.tensor([0,0]), t.tensor([1.,2.]), accumulate=True); out=x",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x.put(t.tensor([[1],[5]]), t.tensor([[9.],[8.]])); "
    "y.sum().backward(); out=(y, x.grad)",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); s=t.tensor([7.,8.,9.]).requires_grad_(); "
    "y=t.select_scatter(x, s, 0, 1); (y*y).sum().backward(); out=(y, x.grad, s.grad)",
    "x=t.arange(6.).reshape(2,3); out=t.select_scatter(x, t.tensor([7.,8.]), 1, -1)",
    "x=t.arange(9.).reshape(3,3).requires_grad_(); s=t.tensor([1.,2.]).requires_grad_(); "
    "y=t.diagonal_scatter(x, s, 1); (y*y).sum().backward(); out=(y, x.grad, s.grad)",
    "x=t.arange(24.).reshape(2,3,4); out=x.diagonal_scatter(t.ones(4,1), -1, 0, 1)",
    "x=t.arange(6.); out=t.as_strided_scatter(x, t.tensor([[1.,2.],[3.,4.]]), (2,2), (1,2), 1)",
]

ERRORS = [
    "x=t.zeros(3,4); x.index_put_((None, t.tensor([1,2])), t.tensor([1.,2.]))",
    "x=t.zeros(3); x.index_put_((t.tensor([5]),), t.tensor(1.))",
    "x=t.zeros(2,3); x.put_(t.tensor([0,1]), t.tensor([1.]))",
    "x=t.arange(6.).reshape(2,3); t.select_scatter(x, t.tensor([7.,8.]), 0, 1)",
    "x=t.arange(6.).reshape(2,3); t.select_scatter(x, t.tensor([7.,8.,9.]), 0, 2)",
]


run = run_code


def norm(v):
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return v.tolist() if hasattr(v, "tolist") else v


@pytest.mark.parametrize("code", CASES)
def test_matches_torch(code):
    want = run(torch, code)
    assert not (isinstance(want, tuple) and want[0] == "error"), want
    assert norm(run(st, code)) == norm(want), code


@pytest.mark.parametrize("code", ERRORS)
def test_errors_match_torch(code):
    want = run(torch, code)
    assert isinstance(want, tuple) and want[0] == "error", f"torch accepts: {code}"
    assert run(st, code) == want, code
