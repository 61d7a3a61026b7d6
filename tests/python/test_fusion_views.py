# Views between elementwise ops fold into index arithmetic (fusion/viewfold.c):
# chains through permute / expand / slice / unsqueeze / squeeze / reshape
# compile to one kernel, with the same values as numpy and as the
# interpreter, under every fusion setting; float16 bit for bit.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

F32 = st.float32

SETTINGS = [
    dict(fusion=1),
    dict(fusion=0),
    dict(fusion=1, fuse_reductions=0),
    dict(fusion=1, max_fused_ops=2),
]


def A(ints=None, floats=None, dims=None, flags=0, dtype=None):
    return (ints, floats, dims, flags, dtype)


def op(g, o, ins, attrs=None):
    (v,) = g.op(o, tuple(ins), attrs) if attrs is not None else g.op(o, tuple(ins))
    return v


# ---- cases: (builder(dtype) -> graph, input shapes, numpy reference,
#      kernels under default fusion) ----

def chain_T_reshape(dt):
    # (x.T * 2 + 1).reshape(3, 16).relu()
    g = _C.Graph()
    x = g.input((8, 6), dt)
    t = op(g, _C.OP_PERMUTE, [x], A(dims=(1, 0)))
    a = op(g, _C.OP_MUL, [t, g.const(2.0)])
    b = op(g, _C.OP_ADD, [a, g.const(1.0)])
    r = op(g, _C.OP_RESHAPE, [b], A(dims=(3, 16)))
    g.output(op(g, _C.OP_RELU, [r]))
    return g


def ref_chain_T_reshape(x):
    return np.maximum((x.T * 2 + 1).reshape(3, 16), 0)


def mid_permute(dt):
    # ((x * 2 + 1).T) * w: the permute moves onto x
    g = _C.Graph()
    x = g.input((5, 7), dt)
    w = g.input((7, 5), dt)
    a = op(g, _C.OP_ADD, [op(g, _C.OP_MUL, [x, g.const(2.0)]), g.const(1.0)])
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(1, 0)))
    g.output(op(g, _C.OP_MUL, [t, w]))
    return g


def ref_mid_permute(x, w):
    return (x * 2 + 1).T * w


def mid_expand(dt):
    # exp(x * b).expand(6, 9) + w with x [1, 9] and b [9] (broadcast operand)
    g = _C.Graph()
    x = g.input((1, 9), dt)
    b = g.input((9,), dt)
    w = g.input((6, 9), dt)
    a = op(g, _C.OP_EXP, [op(g, _C.OP_MUL, [x, b])])
    e = op(g, _C.OP_EXPAND, [a], A(dims=(6, -1)))
    g.output(op(g, _C.OP_ADD, [e, w]))
    return g


def ref_mid_expand(x, b, w):
    return np.exp(x * b) + w


def mid_slice(dt):
    # tanh((x * 3 + c)[:, 1:8:2]) with c [4, 1] broadcast along the sliced dim
    g = _C.Graph()
    x = g.input((4, 10), dt)
    c = g.input((4, 1), dt)
    a = op(g, _C.OP_ADD, [op(g, _C.OP_MUL, [x, g.const(3.0)]), c])
    s = op(g, _C.OP_SLICE, [a], A(ints=(1, 1, 8, 2)))
    g.output(op(g, _C.OP_TANH, [s]))
    return g


def ref_mid_slice(x, c):
    return np.tanh((x * 3 + c)[:, 1:8:2])


def mid_unsqueeze_squeeze(dt):
    # ((x + b).unsqueeze(1) * z).squeeze(1) - x  : x [4, 6], b [6], z [4, 1, 6]
    g = _C.Graph()
    x = g.input((4, 6), dt)
    b = g.input((6,), dt)
    z = g.input((4, 1, 6), dt)
    a = op(g, _C.OP_ADD, [x, b])
    u = op(g, _C.OP_UNSQUEEZE, [a], A(ints=(1,)))
    m = op(g, _C.OP_MUL, [u, z])
    s = op(g, _C.OP_SQUEEZE, [m], A(dims=(1,)))
    g.output(op(g, _C.OP_SUB, [s, x]))
    return g


def ref_mid_unsqueeze_squeeze(x, b, z):
    return ((x + b)[:, None, :] * z)[:, 0, :] - x


def softmax_T_input(dt):
    g = _C.Graph()
    x = g.input((8, 6), dt)
    t = op(g, _C.OP_PERMUTE, [x], A(dims=(1, 0)))
    g.output(op(g, _C.OP_SOFTMAX, [t], A(ints=(-1,))))
    return g


def np_softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_softmax_T_input(x):
    return np_softmax(x.T)


def softmax_T_intermediate(dt):
    # softmax((x * 0.5).T): the permute moves onto x, one row kernel
    g = _C.Graph()
    x = g.input((9, 5), dt)
    a = op(g, _C.OP_MUL, [x, g.const(0.5)])
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(1, 0)))
    g.output(op(g, _C.OP_SOFTMAX, [t], A(ints=(-1,))))
    return g


def ref_softmax_T_intermediate(x):
    return np_softmax((x * 0.5).T)


def reshape_pull_chain(dt):
    # sigmoid(((x * 2).reshape(6, 4).reshape(24) - 1)): two pulled reshapes
    g = _C.Graph()
    x = g.input((2, 12), dt)
    a = op(g, _C.OP_MUL, [x, g.const(2.0)])
    r1 = op(g, _C.OP_RESHAPE, [a], A(dims=(6, 4)))
    r2 = op(g, _C.OP_RESHAPE, [r1], A(dims=(-1,)))
    b = op(g, _C.OP_SUB, [r2, g.const(1.0)])
    g.output(op(g, _C.OP_SIGMOID, [b]))
    return g


def ref_reshape_pull_chain(x):
    return 1 / (1 + np.exp(-((x * 2).reshape(24) - 1)))


def shared_and_view_outputs(dt):
    # a = x * 2 read by a view and by an add; outputs: the view, a + 1 and
    # (a.T).relu(): nothing may be pushed (a is read twice)
    g = _C.Graph()
    x = g.input((3, 4), dt)
    a = op(g, _C.OP_MUL, [x, g.const(2.0)])
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(1, 0)))
    g.output(t, op(g, _C.OP_ADD, [a, g.const(1.0)]), op(g, _C.OP_RELU, [t]))
    return g


def ref_shared_and_view_outputs(x):
    a = x * 2
    return a.T, a + 1, np.maximum(a.T, 0)


CASES = [
    (chain_T_reshape, [(8, 6)], ref_chain_T_reshape, 1),
    (mid_permute, [(5, 7), (7, 5)], ref_mid_permute, 1),
    (mid_expand, [(1, 9), (9,), (6, 9)], ref_mid_expand, 1),
    # 2 kernels: c's size-1 dim is an input dim (a symbol of its own, so the
    # compiled graph stays right if it is later run with c [4, 10]); folding
    # it as a broadcast would need a run-time check that it is still 1
    (mid_slice, [(4, 10), (4, 1)], ref_mid_slice, 2),
    (mid_unsqueeze_squeeze, [(4, 6), (6,), (4, 1, 6)], ref_mid_unsqueeze_squeeze, 1),
    (softmax_T_input, [(8, 6)], ref_softmax_T_input, 1),
    (softmax_T_intermediate, [(9, 5)], ref_softmax_T_intermediate, 1),
    (reshape_pull_chain, [(2, 12)], ref_reshape_pull_chain, 1),
    (shared_and_view_outputs, [(3, 4)], ref_shared_and_view_outputs, None),
]
IDS = [c[0].__name__ for c in CASES]


def inputs(shapes, dt=F32, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]
    return arrs, [st.tensor(a).to(dt) if dt != F32 else st.tensor(a) for a in arrs]


def run(builder, ins, backend, dt=F32, **opts):
    with st.config.options(**opts):
        cg = builder(dt).compile(backend=backend)
        outs = cg.run(*ins)
    return cg.num_kernels, [o.numpy() for o in outs]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_views_fold_into_one_kernel(case):
    builder, shapes, ref, want = case
    arrs, ins = inputs(shapes)
    n, outs = run(builder, ins, "llvm")
    if want is not None:
        assert n == want, f"{builder.__name__}: {n} kernels"
    exp = ref(*arrs)
    exp = exp if isinstance(exp, tuple) else (exp,)
    assert len(outs) == len(exp)
    for o, e in zip(outs, exp):
        assert o.shape == e.shape
        np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_views_same_under_every_setting(case, backend):
    builder, shapes, _, _ = case
    _, ins = inputs(shapes, seed=1)
    _, base = run(builder, ins, "interp", fusion=0)
    counts = []
    for opts in SETTINGS:
        n, outs = run(builder, ins, backend, **opts)
        counts.append(n)
        for o, b in zip(outs, base):
            np.testing.assert_allclose(o, b, rtol=2e-6, atol=1e-6, err_msg=str(opts))
    # folding never adds kernels: fused counts at most the unfused one
    assert counts[0] <= counts[1]


@pytest.mark.parametrize("case", CASES[:5], ids=IDS[:5])
def test_views_float16_bit_for_bit(case):
    builder, shapes, _, _ = case
    _, ins = inputs(shapes, dt=st.float16, seed=2)
    _, base = run(builder, ins, "interp", dt=st.float16, fusion=0)
    for backend in ("interp", "llvm"):
        for opts in SETTINGS[:2]:
            _, outs = run(builder, ins, backend, dt=st.float16, **opts)
            for o, b in zip(outs, base):
                if backend == "interp":
                    np.testing.assert_array_equal(o, b)
                else:  # llvm's exp/tanh differ from libm's by an ulp of float
                    np.testing.assert_allclose(o.astype(np.float32), b.astype(np.float32),
                                               rtol=2e-3, atol=1e-3)


def test_views_other_sizes_reuse_compiled_graph():
    # the folded graph re-infers with new sizes (no absolute sizes added)
    g = _C.Graph()
    x = g.input((3, 4), F32)
    b = g.input((4,), F32)
    a = op(g, _C.OP_MUL, [op(g, _C.OP_ADD, [x, b]), g.const(2.0)])
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(1, 0)))
    u = op(g, _C.OP_UNSQUEEZE, [t], A(ints=(0,)))
    g.output(op(g, _C.OP_EXP, [u]))
    cg = g.compile(backend="llvm")
    assert cg.num_kernels == 1
    for m in (3, 7):
        xs, ins = inputs([(m, 4), (4,)], seed=m)
        (o,) = cg.run(*ins)
        np.testing.assert_allclose(o.numpy(), np.exp(((xs[0] + xs[1]) * 2).T[None]),
                                   rtol=1e-5, atol=1e-6)


def test_compiled_graph_rerun_with_flipped_broadcast():
    # lowered with y broadcast along dim 1, run with x broadcast instead: the
    # kernels must not keep the first call's loop sizes
    g, _ = st.memory.trace_graph(lambda x, y: ((x * 2 + 1) * y).relu(), st.randn(4, 1), st.randn(4, 4))
    cg = g.compile(backend="llvm")
    x, y = st.randn(4, 4), st.randn(4, 1)
    out, = cg.run(x, y)
    ref = np.maximum((x.numpy() * 2 + 1) * y.numpy(), 0)
    assert out.shape == (4, 4)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
