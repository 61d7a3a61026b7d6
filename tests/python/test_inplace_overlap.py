"""In-place ops whose result shares memory with an operand other than as the
very same view raise PyTorch's error (kernels read and write in any order, so
the result would depend on the vector width); the same view, or disjoint
parts of one storage, are fine. Checked case by case against PyTorch."""
import pytest

import symtrace as st

torch = pytest.importorskip("torch")

CASES = [
    ("shifted", lambda m: m.arange(10.0), lambda y: y[1:].add_(y[:-1])),
    ("row_of_self", lambda m: m.ones(3, 3), lambda x: x.add_(x[0])),
    ("transpose_of_self", lambda m: m.arange(9.0).reshape(3, 3), lambda x: x.add_(x.t())),
    ("same_view", lambda m: m.arange(6.0), lambda y: y.add_(y)),
    ("disjoint_halves", lambda m: m.arange(10.0), lambda y: y[:5].add_(y[5:])),
    ("mul_same", lambda m: m.arange(6.0).reshape(2, 3), lambda y: y.mul_(y)),
    ("copy_shifted", lambda m: m.arange(8.0), lambda y: y[2:].copy_(y[:-2])),
]


@pytest.mark.parametrize("name,make,op", CASES, ids=[c[0] for c in CASES])
def test_overlap_like_torch(name, make, op):
    tt = make(torch)
    try:
        op(tt)
        torch_err = None
    except RuntimeError as e:
        torch_err = str(e)
    ts = make(st)
    if torch_err is not None:
        assert "single memory location" in torch_err
        with pytest.raises(RuntimeError, match="single memory location"):
            op(ts)
    else:
        op(ts)
        assert ts.tolist() == tt.tolist()
