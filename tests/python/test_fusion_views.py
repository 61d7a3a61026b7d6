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


# ---- reshapes of non-contiguous views (fusion/unravel.c): no copy step;
#      every load of the reshape reads its source through an unravel map ----

def T_reshape_add(dt):
    # x.T.reshape(48) + y
    g = _C.Graph()
    x = g.input((8, 6), dt)
    y = g.input((48,), dt)
    t = op(g, _C.OP_PERMUTE, [x], A(dims=(1, 0)))
    r = op(g, _C.OP_RESHAPE, [t], A(dims=(48,)))
    g.output(op(g, _C.OP_ADD, [r, y]))
    return g


def ref_T_reshape_add(x, y):
    return x.T.reshape(48) + y


def attn_out(dt):
    # (a.permute(0, 2, 1, 3).reshape(2, 4, 15) * w + res).relu(): attention's
    # heads merged before the output projection
    g = _C.Graph()
    a = g.input((2, 3, 4, 5), dt)
    w = g.input((15,), dt)
    res = g.input((2, 4, 15), dt)
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(0, 2, 1, 3)))
    r = op(g, _C.OP_RESHAPE, [t], A(dims=(2, 4, 15)))
    m = op(g, _C.OP_ADD, [op(g, _C.OP_MUL, [r, w]), res])
    g.output(op(g, _C.OP_RELU, [m]))
    return g


def ref_attn_out(a, w, res):
    return np.maximum(a.transpose(0, 2, 1, 3).reshape(2, 4, 15) * w + res, 0)


def T_reshape_output(dt):
    # x.T.reshape(6, 8) is the result: written by one generated kernel
    g = _C.Graph()
    x = g.input((8, 6), dt)
    t = op(g, _C.OP_PERMUTE, [x], A(dims=(1, 0)))
    g.output(op(g, _C.OP_RESHAPE, [t], A(dims=(6, 8))))
    return g


def ref_T_reshape_output(x):
    return x.T.reshape(6, 8)


def slice_reshape_softmax(dt):
    # softmax(x[:, 1:8:2].reshape(4, 6)): a row kernel reads through the map
    g = _C.Graph()
    x = g.input((6, 10), dt)
    s = op(g, _C.OP_SLICE, [x], A(ints=(1, 1, 8, 2)))
    r = op(g, _C.OP_RESHAPE, [s], A(dims=(4, 6)))
    g.output(op(g, _C.OP_SOFTMAX, [r], A(ints=(-1,))))
    return g


def ref_slice_reshape_softmax(x):
    return np_softmax(x[:, 1:8:2].reshape(4, 6))


def expand_reshape_chain(dt):
    # b.expand(4, 6).reshape(24).reshape(3, 8) * 2 - y: a chain of reshapes
    # unravels to its first source
    g = _C.Graph()
    b = g.input((1, 6), dt)
    y = g.input((3, 8), dt)
    e = op(g, _C.OP_EXPAND, [b], A(dims=(4, 6)))
    r1 = op(g, _C.OP_RESHAPE, [e], A(dims=(24,)))
    r2 = op(g, _C.OP_RESHAPE, [r1], A(dims=(3, 8)))
    g.output(op(g, _C.OP_SUB, [op(g, _C.OP_MUL, [r2, g.const(2.0)]), y]))
    return g


def ref_expand_reshape_chain(b, y):
    return np.broadcast_to(b, (4, 6)).reshape(3, 8) * 2 - y


def T_reshape_column(dt):
    # x.T.reshape(24, 1) * y with y [24, 5]: the unravel load is broadcast
    # along the row (its index moves by 0 there)
    g = _C.Graph()
    x = g.input((4, 6), dt)
    y = g.input((24, 5), dt)
    t = op(g, _C.OP_PERMUTE, [x], A(dims=(1, 0)))
    r = op(g, _C.OP_RESHAPE, [t], A(dims=(24, 1)))
    g.output(op(g, _C.OP_MUL, [r, y]))
    return g


def ref_T_reshape_column(x, y):
    return x.T.reshape(24, 1) * y


def mid_T_reshape_add(dt):
    # exp((x * 2).T.reshape(48) + y): the permute and the reshape move onto
    # x (an unravel load); y, a tensor operand, keeps the group going
    g = _C.Graph()
    x = g.input((8, 6), dt)
    y = g.input((48,), dt)
    a = op(g, _C.OP_MUL, [x, g.const(2.0)])
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(1, 0)))
    r = op(g, _C.OP_RESHAPE, [t], A(dims=(48,)))
    g.output(op(g, _C.OP_EXP, [op(g, _C.OP_ADD, [r, y])]))
    return g


def ref_mid_T_reshape_add(x, y):
    return np.exp((x * 2).T.reshape(48) + y)


def mid_reshape_add(dt):
    # ((x * 2).reshape(48) + y).relu(): the reshape moves onto x (a view)
    g = _C.Graph()
    x = g.input((8, 6), dt)
    y = g.input((48,), dt)
    a = op(g, _C.OP_MUL, [x, g.const(2.0)])
    r = op(g, _C.OP_RESHAPE, [a], A(dims=(48,)))
    g.output(op(g, _C.OP_RELU, [op(g, _C.OP_ADD, [r, y])]))
    return g


def ref_mid_reshape_add(x, y):
    return np.maximum((x * 2).reshape(48) + y, 0)


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
    (mid_reshape_add, [(8, 6), (48,)], ref_mid_reshape_add, 1),
]
UNRAVEL_CASES = [
    (T_reshape_add, [(8, 6), (48,)], ref_T_reshape_add, 1),
    (attn_out, [(2, 3, 4, 5), (15,), (2, 4, 15)], ref_attn_out, 1),
    (T_reshape_output, [(8, 6)], ref_T_reshape_output, 1),
    (slice_reshape_softmax, [(6, 10)], ref_slice_reshape_softmax, 1),
    (expand_reshape_chain, [(1, 6), (3, 8)], ref_expand_reshape_chain, 1),
    (mid_T_reshape_add, [(8, 6), (48,)], ref_mid_T_reshape_add, 1),
    (T_reshape_column, [(4, 6), (24, 5)], ref_T_reshape_column, 1),
]
CASES = CASES + UNRAVEL_CASES
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


@pytest.mark.parametrize("case", CASES[:5] + UNRAVEL_CASES, ids=IDS[:5] + [c[0].__name__ for c in UNRAVEL_CASES])
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


def view_steps(cg):
    """Names of the program's view steps (runtime steps that run no code)."""
    names = []
    for line in cg.kernel_ir().splitlines():
        if line.startswith("kernel ") and ": view " in line:
            names.append(line.split()[1].rstrip(":"))
    return names


@pytest.mark.parametrize("case", UNRAVEL_CASES, ids=[c[0].__name__ for c in UNRAVEL_CASES])
@pytest.mark.parametrize("opts", SETTINGS, ids=[str(o) for o in SETTINGS])
def test_reshape_of_strided_view_never_copies(case, opts):
    # under every setting: no reshape is left as a view step (which would
    # copy the strided value in the runtime), the kernels load through an
    # unravel map, and the values are numpy's on llvm and interp
    builder, shapes, ref, want = case
    arrs, ins = inputs(shapes, seed=3)
    exp = ref(*arrs)
    for backend in ("llvm", "interp"):
        with st.config.options(**opts):
            cg = builder(F32).compile(backend=backend)
            (o,) = cg.run(*ins)
        assert not [n for n in view_steps(cg) if "reshape" in n], cg.kernel_ir()
        assert "unravel" in cg.kernel_ir()
        assert set(cg.kernel_kinds) <= {"view", "elementwise", "reduce"}
        if opts == dict(fusion=1):
            assert cg.num_kernels == want, cg.kernel_ir()
        np.testing.assert_allclose(o.numpy(), exp, rtol=1e-5, atol=1e-6)


def test_unravel_load_rerun_with_other_sizes():
    # the unravel map's sizes and strides arrive at launch: one compiled
    # graph (reshape to -1) serves other sizes
    g = _C.Graph()
    a = g.input((2, 3, 4, 5), F32)
    y = g.input((2, 4, 15), F32)
    t = op(g, _C.OP_PERMUTE, [a], A(dims=(0, 2, 1, 3)))
    r = op(g, _C.OP_RESHAPE, [t], A(dims=(2, 4, -1)))
    g.output(op(g, _C.OP_MUL, [r, y]))
    for backend in ("llvm", "interp"):
        cg = g.compile(backend=backend)
        assert cg.num_kernels == 1
        for h, d in ((3, 5), (2, 7), (5, 3)):
            (xa, xy), ins = inputs([(2, h, 4, d), (2, 4, h * d)], seed=h * d)
            (o,) = cg.run(*ins)
            np.testing.assert_allclose(o.numpy(),
                                       xa.transpose(0, 2, 1, 3).reshape(2, 4, -1) * xy,
                                       rtol=1e-6)


def test_unravel_load_of_non_contiguous_input_view():
    # the source view of a non-contiguous input: strides compose
    g = _C.Graph()
    x = g.input((6, 8), F32)
    t = op(g, _C.OP_PERMUTE, [x], A(dims=(1, 0)))
    r = op(g, _C.OP_RESHAPE, [t], A(dims=(48,)))
    g.output(op(g, _C.OP_EXP, [r]))
    base = np.random.default_rng(7).uniform(-1, 1, (8, 6)).astype(np.float32)
    xt = st.tensor(base).permute(1, 0)  # [6, 8], strided
    for backend in ("llvm", "interp"):
        (o,) = g.compile(backend=backend).run(xt)
        np.testing.assert_allclose(o.numpy(), np.exp(base.T.T.reshape(48)), rtol=1e-6)


def test_reshape_not_moved_through_two_tensor_operands():
    # (x * z).reshape(16) + y: the reshape stays (z may broadcast in a
    # later call, where reshape(z) would not hold): the compiled graph runs
    # with z [4, 4] and then z [4, 1]
    g = _C.Graph()
    x = g.input((4, 4), F32)
    z = g.input((4, 4), F32)
    y = g.input((16,), F32)
    r = op(g, _C.OP_RESHAPE, [op(g, _C.OP_MUL, [x, z])], A(dims=(16,)))
    g.output(op(g, _C.OP_ADD, [r, y]))
    for backend in ("llvm", "interp"):
        cg = g.compile(backend=backend)
        for zs in ((4, 4), (4, 1)):
            arrs, ins = inputs([(4, 4), zs, (16,)], seed=11)
            (o,) = cg.run(*ins)
            np.testing.assert_allclose(o.numpy(), (arrs[0] * arrs[1]).reshape(16) + arrs[2],
                                       rtol=1e-6)


def test_moved_reshape_rerun_with_other_sizes():
    # ((x * 2).reshape(-1) + y) keeps holding when x's sizes change
    g = _C.Graph()
    x = g.input((8, 6), F32)
    y = g.input((48,), F32)
    r = op(g, _C.OP_RESHAPE, [op(g, _C.OP_MUL, [x, g.const(2.0)])], A(dims=(-1,)))
    g.output(op(g, _C.OP_ADD, [r, y]))
    for backend in ("llvm", "interp"):
        cg = g.compile(backend=backend)
        assert cg.num_kernels == 1
        for m, n in ((8, 6), (3, 5), (6, 8)):
            arrs, ins = inputs([(m, n), (m * n,)], seed=m)
            (o,) = cg.run(*ins)
            np.testing.assert_allclose(o.numpy(), (arrs[0] * 2).reshape(-1) + arrs[1],
                                       rtol=1e-6)


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_traced_heads_merge_is_one_kernel(backend):
    # what eager tracing records for attention's heads merge: a reshape of
    # a non-contiguous view as copy + reshape; the copy moves past the
    # reshape, which reads the permuted input through an unravel map
    def merge(a, r):
        b, h, s, d = a.shape
        return (a.permute(0, 2, 1, 3).reshape(b, s, h * d) + r).relu()

    a, r = st.randn(2, 3, 4, 5), st.randn(2, 4, 15)
    g, _ = st.memory.trace_graph(merge, a, r)
    for opts in SETTINGS:
        with st.config.options(**opts):
            cg = g.compile(backend=backend)
            (o,) = cg.run(a, r)
        if opts == dict(fusion=1):
            assert cg.num_kernels == 1, cg.kernel_ir()
            assert "unravel" in cg.kernel_ir()
        ref = np.maximum(a.numpy().transpose(0, 2, 1, 3).reshape(2, 4, 15) + r.numpy(), 0)
        np.testing.assert_allclose(o.numpy(), ref, rtol=1e-6)
    g, _ = st.memory.trace_graph(lambda a: a.permute(0, 2, 1, 3).reshape(2, 4, 15), a)
    cg = g.compile(backend=backend)
    (o,) = cg.run(a)
    assert cg.num_kernels == 1 and not [n for n in view_steps(cg) if "reshape" in n]
    np.testing.assert_array_equal(o.numpy(), a.numpy().transpose(0, 2, 1, 3).reshape(2, 4, 15))


@pytest.mark.parametrize("layout", ["heads", "heads_bcast", "transposed_src"])
def test_unravel_segments_unit_path(monkeypatch, tmp_path, layout):
    # a row of an unravel kernel goes in segments along the source's
    # innermost runs; where every offset moves by one along them (the
    # heads merge) the segment loop is the unit-stride one the vectorizer
    # widens (vector loads in the dumped IR; chosen at run time), else the
    # strided one. Values against numpy, runs of 64 and of 7.
    import glob
    rng = np.random.default_rng(11)
    for d in (64, 7):
        g = _C.Graph()
        src = (2, 3, d, 10) if layout == "transposed_src" else (2, 3, 10, d)
        x = g.input(src, F32)
        perm = (0, 3, 1, 2) if layout == "transposed_src" else (0, 2, 1, 3)
        v = op(g, _C.OP_RESHAPE, [op(g, _C.OP_PERMUTE, [x], A(dims=perm))], A(dims=(2, 10, 3 * d)))
        xv = rng.standard_normal(src).astype(np.float32)
        ref = xv.transpose(*perm).reshape(2, 10, 3 * d)
        ins = [st.tensor(xv)]
        if layout == "heads_bcast":
            r = g.input((2, 1, 3 * d), F32)
            rv = rng.standard_normal((2, 1, 3 * d)).astype(np.float32)
            g.output(op(g, _C.OP_ADD, [v, r]))
            ins.append(st.tensor(rv))
            ref = ref + rv
        else:
            g.output(op(g, _C.OP_MUL, [v, v]))
            ref = ref * ref
        path = tmp_path / f"{layout}{d}"
        path.mkdir()
        monkeypatch.setenv("SYMTRACE_DUMP_DIR", str(path))
        cg = g.compile(backend="llvm")
        (o,) = cg.run(*ins)
        monkeypatch.delenv("SYMTRACE_DUMP_DIR")
        np.testing.assert_allclose(o.numpy(), ref, rtol=1e-6)
        assert "unravel" in cg.kernel_ir(), cg.kernel_ir()
        lls = "".join(open(p).read() for p in glob.glob(str(path / "*.ll")))
        assert "load <8 x float>" in lls


# ---- the swap rule: T(a @ b) = T(b) @ T(a) (fusion/viewfold.c) ----

@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_transposed_product_is_the_swapped_product(backend):
    """A transpose of a product read only there is computed as the swapped
    product, in the transpose's layout: the reshape after it is then free
    (one matmul kernel with the * 2 as its epilogue), not a strided copy."""
    if backend == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    rng = np.random.default_rng(3)
    an = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    bn = rng.standard_normal((1, 3, 4, 6)).astype(np.float32)   # batch broadcast

    def f(a, b):
        return (a @ b).transpose(-1, -2).reshape(2, 90) * 2.0

    g, ins = st.memory.trace_graph(f, st.tensor(an), st.tensor(bn))
    ref = np.swapaxes(an.astype(np.float64) @ bn, -1, -2).reshape(2, 90) * 2
    for opts in SETTINGS:
        with st.config.options(**opts):
            cg = g.compile(backend=backend)
            out = cg.run(*ins)[0].numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5, err_msg=str(opts))
        if opts == dict(fusion=1):
            kinds = [k.split(":")[1].split()[0] for k in cg.kernel_ir().split("kernel ")[1:]]
            assert [k for k in kinds if k != "view"] == ["matmul"], cg.kernel_ir()


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_product_read_twice_is_not_swapped(backend):
    """The product is also read as it is: no swap (it would be computed
    twice); both readers get their values."""
    if backend == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    rng = np.random.default_rng(4)
    an = rng.standard_normal((3, 5, 4)).astype(np.float32)
    bn = rng.standard_normal((3, 4, 6)).astype(np.float32)

    def f(a, b):
        p = a @ b
        return p.transpose(-1, -2).reshape(3, 30) + 1.0, p * 3.0

    g, ins = st.memory.trace_graph(f, st.tensor(an), st.tensor(bn))
    cg = g.compile(backend=backend)
    o1, o2 = (t.numpy() for t in cg.run(*ins))
    p = an.astype(np.float64) @ bn
    np.testing.assert_allclose(o1, np.swapaxes(p, -1, -2).reshape(3, 30) + 1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o2, p * 3, rtol=1e-5, atol=1e-5)
    kinds = [k.split(":")[1].split()[0] for k in cg.kernel_ir().split("kernel ")[1:]]
    assert kinds.count("matmul") == 1, cg.kernel_ir()


# ---- the perm rule: P(a @ b) written in P's layout (fusion/viewfold.c) ----

def _kinds(cg):
    return [k.split(":")[1].split()[0] for k in cg.kernel_ir().split("kernel ")[1:]]


BACKENDS = ["interp", "llvm", "cudaemu"]


def _need(backend):
    if not _C._fe_backend_available(backend):
        pytest.skip(f"{backend} backend not available")


@pytest.mark.parametrize("backend", BACKENDS)
def test_heads_merge_of_a_product_is_written_merged(backend):
    """Attention's context, (p @ v).permute(0, 2, 1, 3).reshape(b, s, h*d),
    as eager tracing records it (permute, copy, reshape): the product is
    written in the merged layout, so neither the copy nor a reshape kernel
    is left (one matmul kernel, views), under every fusion setting the same
    values; the output projection reads it as it is."""
    _need(backend)
    rng = np.random.default_rng(5)
    pn = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    vn = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    wn = rng.standard_normal((15, 6)).astype(np.float32)

    def f(p, v, w):
        ctx = (p @ v).permute(0, 2, 1, 3).reshape(2, 4, 15)
        return ctx @ w, ctx

    g, ins = st.memory.trace_graph(f, st.tensor(pn), st.tensor(vn), st.tensor(wn))
    assert "= copy(" in str(g), str(g)   # the frontend's reshape of a strided view
    ctx = (pn.astype(np.float64) @ vn).transpose(0, 2, 1, 3).reshape(2, 4, 15)
    for opts in SETTINGS:
        with st.config.options(**opts):
            cg = g.compile(backend=backend)
            o, c = (t.numpy() for t in cg.run(*ins))
        np.testing.assert_allclose(c, ctx, rtol=1e-5, atol=1e-5, err_msg=str(opts))
        np.testing.assert_allclose(o, ctx @ wn, rtol=1e-5, atol=1e-5, err_msg=str(opts))
        if opts == dict(fusion=1):
            assert [k for k in _kinds(cg) if k != "view"] == ["matmul", "matmul"], cg.kernel_ir()
            # the first product's output: iteration (b, h, s, d) -> [b, s, h, d]
            assert "out float32 value 3 dimmap [0, 2, 1, 3, -1]" in cg.kernel_ir(), cg.kernel_ir()


@pytest.mark.parametrize("backend", BACKENDS)
def test_heads_merge_backward_has_no_copies(backend, monkeypatch, tmp_path):
    """A compiled self-attention step, forward and backward: q, k, v split
    from linear outputs and the context merged back. Every heads merge of a
    product (the context; dq, dv; dk through the swap rule) is written
    merged: no elementwise kernel is a copy or a reshape. Gradients as
    eager's."""
    _need(backend)
    import symtrace.nn as nn
    B, h, S, d = 2, 3, 5, 4
    H = h * d

    class Att(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(H, H) for _ in range(4))

        def forward(self, x):
            q, k, v = (m(x).reshape(B, S, h, d).permute(0, 2, 1, 3) for m in (self.q, self.k, self.v))
            p = (q @ k.transpose(-2, -1)).softmax(-1)
            return self.o((p @ v).permute(0, 2, 1, 3).reshape(B, S, H))

    st.manual_seed(1)
    m = Att()
    x = st.tensor(np.random.default_rng(6).standard_normal((B, S, H)).astype(np.float32))
    x.requires_grad_()
    y0 = m(x)
    y0.sum().backward()
    g0 = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    gx = x.grad.numpy().copy()
    f = st.compile(m, backend=backend)
    before = _C._fe_stats()["translations"]
    monkeypatch.setenv("SYMTRACE_DUMP_DIR", str(tmp_path))
    for _ in range(2):   # the first call is traced eagerly; the second runs the kernels
        m.zero_grad()
        x.grad = None
        y = f(x)
        y.sum().backward()
    monkeypatch.delenv("SYMTRACE_DUMP_DIR")
    assert _C._fe_stats()["translations"] > before
    # the compiled graphs (eager ops of the traced first call lower one
    # kernel each): no elementwise copy or reshape, four products written
    # merged (the context; dq, dk, dv)
    import glob
    progs = [open(p).read() for p in glob.glob(str(tmp_path / "*.kernels.txt"))]
    progs = [t for t in progs if t.count("matmul rank") >= 3]
    assert len(progs) >= 2, [t[:80] for t in progs]
    text = "".join(progs)
    bad = [l for l in text.splitlines() if "elementwise" in l and ("copy" in l or "reshape" in l)]
    assert not bad, bad
    assert text.count("dimmap [0, 2, 1, 3, -1]") >= 4, text
    np.testing.assert_allclose(y.detach().numpy(), y0.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-4, atol=1e-6)
    for n, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), g0[n], rtol=1e-4, atol=1e-6, err_msg=n)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_permuted_product_read_elsewhere_is_not_folded(backend):
    """The permuted product is also read by an elementwise op: no fold
    (its readers would see the layout change); values as numpy."""
    _need(backend)
    rng = np.random.default_rng(7)
    an = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    bn = rng.standard_normal((2, 3, 5, 2)).astype(np.float32)

    def f(a, b):
        t = (a @ b).permute(0, 2, 1, 3)
        return t.reshape(2, 4, 6), t * 2.0

    g, ins = st.memory.trace_graph(f, st.tensor(an), st.tensor(bn))
    cg = g.compile(backend=backend)
    o1, o2 = (t.numpy() for t in cg.run(*ins))
    t = (an.astype(np.float64) @ bn).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(o1, t.reshape(2, 4, 6), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o2, t * 2, rtol=1e-5, atol=1e-5)
    assert "dimmap [0, 2, 1, 3, -1]" not in cg.kernel_ir(), cg.kernel_ir()


@pytest.mark.parametrize("backend", BACKENDS)
def test_permuted_product_takes_no_epilogue(backend):
    """(a @ b).permute(0, 2, 1, 3).contiguous() + x: the copy is the
    product written permuted, and the add that reads it is not fused into
    the product's kernel as an epilogue (the result's dims are not the
    kernel's iteration order: fused, it read x at the wrong points)."""
    _need(backend)
    rng = np.random.default_rng(9)
    an = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    bn = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    xn = rng.standard_normal((2, 4, 3, 6)).astype(np.float32)

    def f(a, b, x):
        return ((a @ b).permute(0, 2, 1, 3).contiguous() + x).relu()

    g, ins = st.memory.trace_graph(f, st.tensor(an), st.tensor(bn), st.tensor(xn))
    cg = g.compile(backend=backend)
    (o,) = cg.run(*ins)
    ref = np.maximum((an.astype(np.float64) @ bn).transpose(0, 2, 1, 3) + xn, 0)
    np.testing.assert_allclose(o.numpy(), ref, rtol=1e-5, atol=1e-5)
    assert "dimmap [0, 2, 1, 3, -1]" in cg.kernel_ir(), cg.kernel_ir()
    assert [k for k in _kinds(cg) if k != "view"] == ["matmul", "elementwise"], cg.kernel_ir()
