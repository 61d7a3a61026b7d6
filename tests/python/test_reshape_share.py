# Two reshapes of one strided view that both stay materialized (matmul
# operands, as the backward graph's head-permuted gradient reshaped to
# [B, S, H] and to [B * S, H]): the first is written by a kernel, the second
# is a view of it (fusion/unravel.c). Values against numpy; the profile
# shows one reshape kernel where there were two.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

F32 = st.float32


@pytest.fixture(params=["llvm", "interp"])
def backend(request):
    if request.param == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    return request.param


def op(g, o, ins, attrs=None):
    (v,) = g.op(o, tuple(ins), attrs) if attrs is not None else g.op(o, tuple(ins))
    return v


def A(ints=None, floats=None, dims=None, flags=0, dtype=None):
    return (ints, floats, dims, flags, dtype)


def graph():
    g = _C.Graph()
    x = g.input((2, 4, 16, 8), F32)     # [B, H, S, D]
    w3 = g.input((32, 8), F32)
    w2 = g.input((5, 32), F32)
    h = op(g, _C.OP_PERMUTE, [x], A(dims=(0, 2, 1, 3)))     # [B, S, H, D], strided
    r3 = op(g, _C.OP_RESHAPE, [h], A(dims=(2, 16, 32)))
    r2 = op(g, _C.OP_RESHAPE, [h], A(dims=(32, 32)))
    g.output(op(g, _C.OP_MATMUL, [r3, w3]))                 # [B, S, H*D] @ [H*D, 8]
    g.output(op(g, _C.OP_MATMUL, [w2, r2]))                 # [5, B*S] @ [B*S, H*D]
    return g


def test_second_reshape_is_a_view(backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 16, 8)).astype(np.float32)
    w3 = rng.standard_normal((32, 8)).astype(np.float32)
    w2 = rng.standard_normal((5, 32)).astype(np.float32)
    cg = graph().compile(backend=backend)
    ins = [st.tensor(v) for v in (x, w3, w2)]
    cg.run(*ins)
    with st.profiler.profile() as prof:
        a, b = cg.run(*ins)
    h = x.transpose(0, 2, 1, 3)
    np.testing.assert_allclose(a.numpy(), h.reshape(2, 16, 32) @ w3, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b.numpy(), w2 @ h.reshape(32, 32), rtol=1e-4, atol=1e-4)
    copies = [r.name for r in prof.rows if r.name.endswith("_reshape")]
    assert len(copies) == 1, [r.name for r in prof.rows]
    # the estimate still matches what the allocator holds
    est = st.memory.estimate(cg, *ins, measured=True)
    assert est.peak_measured > 0 and abs(est.peak_measured - est.peak_estimated) <= 0.02 * est.peak_estimated


def test_other_readers_read_the_copy(backend):
    # the reshape is written for its matmul; the sum over tokens (and an
    # elementwise reader) then load that copy, not the strided source
    # through the unravel map
    g = _C.Graph()
    x = g.input((2, 4, 16, 8), F32)
    w = g.input((32, 8), F32)
    h = op(g, _C.OP_PERMUTE, [x], A(dims=(0, 2, 1, 3)))
    r = op(g, _C.OP_RESHAPE, [h], A(dims=(2, 16, 32)))
    g.output(op(g, _C.OP_MATMUL, [r, w]))
    g.output(op(g, _C.OP_SUM, [r], A(dims=(0, 1))))
    g.output(op(g, _C.OP_MUL, [r, r]))
    cg = g.compile(backend=backend)
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((2, 4, 16, 8)).astype(np.float32)
    wv = rng.standard_normal((32, 8)).astype(np.float32)
    mm, s, sq = cg.run(st.tensor(xv), st.tensor(wv))
    rv = xv.transpose(0, 2, 1, 3).reshape(2, 16, 32)
    np.testing.assert_allclose(mm.numpy(), rv @ wv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(s.numpy(), rv.sum((0, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sq.numpy(), rv * rv, rtol=1e-6)
    ir = cg.kernel_ir()
    assert ir.count("unravel") == 1, ir   # the copy kernel's own load only
