# Eager semantics compared with torch 2.13 (seventh round): the grad flags of
# views taken under no_grad / inference_mode of a base that requires grad
# (torch's CreationMeta: the view requires grad as a leaf that gets no
# gradient; an in-place write into it in grad mode is refused), eager and
# compiled. Each case states torch's answer; where torch is installed it is
# checked against it as well.
import pytest

import symtrace as st

needs_compile = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")

# view op name -> fn(lib, b) on a (2, 3) base
VIEWS = {
    "slice": lambda L, b: b[1:],
    "select": lambda L, b: b[0],
    "view": lambda L, b: b.view(6),
    "reshape": lambda L, b: b.reshape(6),
    "flatten": lambda L, b: b.flatten(),
    "t": lambda L, b: b.t(),
    "transpose": lambda L, b: b.transpose(0, 1),
    "permute": lambda L, b: b.permute(1, 0),
    "expand": lambda L, b: b.unsqueeze(0).expand(2, 2, 3),
    "unsqueeze": lambda L, b: b.unsqueeze(0),
    "squeeze": lambda L, b: b.unsqueeze(0).squeeze(0),
    "diagonal": lambda L, b: b.diagonal(),
    "as_strided": lambda L, b: b.as_strided((2,), (1,)),
    "narrow": lambda L, b: b.narrow(0, 0, 1),
    "unbind": lambda L, b: b.unbind(0)[0],
    "split": lambda L, b: b.split(1)[0],
    "chunk": lambda L, b: b.chunk(2)[0],
}
NOT_VIEWS = {
    "detach": lambda L, b: b.detach(),
    "clone": lambda L, b: b.clone(),
    "add": lambda L, b: b + 1,
}
MODES = ["no_grad", "inference_mode"]
MODE_MSG = {"no_grad": "A view was created in no_grad mode and is being modified inplace "
                       "with grad mode enabled",
            "inference_mode": "A view was created in inference mode and is being modified "
                              "inplace in normal mode"}


def libs():
    out = [st]
    try:
        import torch
        out.append(torch)
    except ImportError:
        pass
    return out


def take(L, mode, fn):
    b = L.ones(2, 3, requires_grad=True)
    with getattr(L, mode)():
        v = fn(L, b)
    return b, v


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_nograd_view_requires_grad(mode, name):
    for L in libs():
        b, v = take(L, mode, VIEWS[name])
        assert v.requires_grad is True, (L.__name__, name)
        assert v.grad_fn is None and v.is_leaf
        assert v._base is b
        # an op on it in grad mode is recorded; its backward reaches no gradient
        y = v * 2
        assert y.requires_grad and y.grad_fn is not None
        y.sum().backward()
        assert b.grad is None and v.grad is None
        # requires_grad_(False) leaves it answering from its base
        v.requires_grad_(False)
        assert v.requires_grad is True


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(NOT_VIEWS))
def test_nograd_nonview_does_not_require_grad(mode, name):
    for L in libs():
        b, v = take(L, mode, NOT_VIEWS[name])
        assert v.requires_grad is False, (L.__name__, name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_nograd_view_inplace_in_grad_mode_refused(mode, name):
    for L in libs():
        b, v = take(L, mode, VIEWS[name])
        with pytest.raises(RuntimeError, match=MODE_MSG[mode]):
            v.mul_(2)
        assert b.detach().tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("mode", MODES)
def test_nograd_view_inplace_inside_mode_allowed(mode):
    for L in libs():
        b = L.ones(2, 3, requires_grad=True)
        with getattr(L, mode)():
            v = b[1:]
            v.mul_(2)
        assert b.detach().tolist() == [[1.0] * 3, [2.0] * 3]
        assert v.requires_grad is True


@pytest.mark.parametrize("mode", MODES)
def test_view_of_nograd_view(mode):
    for L in libs():
        b, v = take(L, mode, lambda L, b: b[1:])
        w = v.unsqueeze(0)      # in grad mode: a recorded view, of b
        assert w.requires_grad and w.grad_fn is not None and w._base is b
        msg = "Output 0 of Unsqueeze is a view of a view which was created in " + \
            ("no_grad mode" if mode == "no_grad" else "inference mode")
        with pytest.raises(RuntimeError, match=msg):
            w.mul_(2)
        w.sum().backward()
        assert b.grad is None and v.grad is None
        with getattr(L, mode)():
            z = v[1:]               # a view of it in the mode: as v
        assert z.requires_grad and z.grad_fn is None and z._base is b
        with pytest.raises(RuntimeError, match=MODE_MSG[mode]):
            z.add_(1)


def test_nograd_view_of_base_without_grad():
    for L in libs():
        b = L.ones(2, 3)
        with L.no_grad():
            v = b[1:]
        assert v.requires_grad is False
        v.mul_(2)
        assert b.tolist() == [[1.0] * 3, [2.0] * 3]


def test_nograd_view_of_nonleaf():
    for L in libs():
        a = L.ones(2, 3, requires_grad=True)
        b = a * 3
        with L.no_grad():
            v = b.t()
        assert v.requires_grad and v.grad_fn is None
        (b.sum() + (v * 2).sum()).backward()
        assert a.grad.tolist() == [[3.0] * 3] * 2


@needs_compile
def test_compiled_nograd_view_matches_eager():
    def f(b):
        with st.no_grad():
            v = b[1:]
        return v

    def g(b):
        with st.no_grad():
            v = b.t()
        return v * 2, v

    def h(b):
        with st.no_grad():
            v = b[1:]
            v.mul_(2)
        return v.unsqueeze(0), v

    def desc(b, outs):
        outs = outs if isinstance(outs, tuple) else (outs,)
        return [(o.requires_grad, o.grad_fn is None, o._base is b, o.tolist()) for o in outs]

    for fn in (f, g, h):
        cf = st.compile(fn)
        for _ in range(3):
            b1 = st.ones(3, 3, requires_grad=True)
            b2 = st.ones(3, 3, requires_grad=True)
            want = desc(b1, fn(b1))
            assert desc(b2, cf(b2)) == want, fn.__name__
            assert b1.tolist() == b2.tolist()
            assert all(r for r, *_ in want)


@needs_compile
def test_compiled_nograd_view_inplace_refused():
    def g(b):
        with st.no_grad():
            v = b[1:]
        v.mul_(2)
        return v

    cg = st.compile(g)
    for _ in range(2):
        b = st.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match=MODE_MSG["no_grad"]):
            cg(b)
        assert b.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- integer op layouts
# torch's TensorIterator gives an elementwise result its operands' memory order;
# the integer bitwise ops (a byte table gather in symtrace) gave row-major results.
def _int_operand(L, kind, dt):
    x = L.tensor([[[(i * 7 + j * 3 + k * 5) % 23 - 11 for k in range(5)] for j in range(4)]
                  for i in range(3)], dtype=getattr(L, dt))
    if dt == "uint8":
        x = L.tensor([[[(i * 7 + j * 3 + k * 5) % 23 for k in range(5)] for j in range(4)]
                      for i in range(3)], dtype=L.uint8)
    return {"t": x.transpose(0, 2), "perm": x.permute(1, 2, 0).transpose(0, 1),
            "slice": x[:, ::2].transpose(1, 2), "c": x.transpose(0, 2).contiguous()}[kind]


BITWISE = {
    "and": lambda L, a, b: a & b, "or": lambda L, a, b: a | b, "xor": lambda L, a, b: a ^ b,
    "and_scalar": lambda L, a, b: a & 3, "ror_scalar": lambda L, a, b: 6 | a,
    "xor_fn": lambda L, a, b: L.bitwise_xor(a, -3),
}


def _bitwise_case(L, op, ka, kb, dt):
    return BITWISE[op](L, _int_operand(L, ka, dt), _int_operand(L, kb, dt))


@pytest.mark.parametrize("dt", ["int64", "int32", "int16", "uint8"])
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_keeps_operand_order(op, dt):
    a = st.arange(12).reshape(3, 4).t()
    assert (a & 3).stride() == (1, 4)           # torch's answer
    for ka, kb in [("t", "t"), ("t", "c"), ("perm", "t"), ("slice", "slice"), ("c", "perm")]:
        r = _bitwise_case(st, op, ka, kb, dt)
        torch = pytest.importorskip("torch")
        want = _bitwise_case(torch, op, ka, kb, dt)
        assert r.stride() == want.stride(), (ka, kb)
        assert r.tolist() == want.tolist() and str(r.dtype)[9:] == str(want.dtype)[6:]


@needs_compile
def test_bitwise_compiled_keeps_operand_order():
    def f(a, b):
        return a & 3, a | b, (a ^ b) + 1

    cf = st.compile(f)
    for n in (3, 3, 5):
        a = st.arange(4 * n).reshape(n, 4).t()
        b = st.arange(4 * n).reshape(4, n) * 7
        want = f(a, b)
        got = cf(a, b)
        assert [x.stride() for x in want] == [(1, 4)] * 3
        assert [x.stride() for x in got] == [(1, 4)] * 3
        assert [x.tolist() for x in got] == [x.tolist() for x in want]


# ---------------------------------------------------------------- half addmm / linear
# torch's bfloat16 addmm (and linear with a bias) adds the bias to the float32
# accumulator and rounds once; symtrace rounded the product to bfloat16 first and
# the sum again. Shapes small enough that torch's and symtrace's float32
# accumulation orders agree, so the results must agree to the bit.
HALF_SHAPES = [(4, 8, 5), (16, 64, 32), (3, 300, 7), (33, 17, 65), (1, 1024, 3)]


def _half_data(m, k, n, seed):
    import numpy as np
    rs = np.random.RandomState(seed)
    return (rs.randn(m, k).astype(np.float32), rs.randn(n, k).astype(np.float32),
            (rs.randn(n) * 10).astype(np.float32), rs.randn(2, m, k).astype(np.float32))


def _bits(t):
    return t.float().tolist()


@pytest.mark.parametrize("shape", HALF_SHAPES)
def test_bf16_addmm_rounds_once(shape):
    torch = pytest.importorskip("torch")
    import symtrace.nn.functional as SF
    A, W, B, X = _half_data(*shape, seed=sum(shape))
    sa, sw, sb, sx = [st.tensor(v).to(st.bfloat16) for v in (A, W, B, X)]
    ta, tw, tb, tx = [torch.tensor(v).bfloat16() for v in (A, W, B, X)]
    assert _bits(st.addmm(sb, sa, sw.t())) == _bits(torch.addmm(tb, ta, tw.t()))
    assert _bits(st.addmm(sb, sa, sw.t().contiguous())) == _bits(torch.addmm(tb, ta, tw.t()))
    assert _bits(SF.linear(sa, sw, sb)) == _bits(torch.nn.functional.linear(ta, tw, tb))
    assert _bits(SF.linear(sx, sw, sb)) == _bits(torch.nn.functional.linear(tx, tw, tb))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.nn.functional.linear(torch.tensor(A), torch.tensor(W), torch.tensor(B))
        want2 = torch.addmm(torch.tensor(B), torch.tensor(A), torch.tensor(W).t())
    with st.autocast("cpu", dtype=st.bfloat16):
        got = SF.linear(st.tensor(A), st.tensor(W), st.tensor(B))
        got2 = st.addmm(st.tensor(B), st.tensor(A), st.tensor(W).t())
    assert got.dtype is st.bfloat16 and _bits(got) == _bits(want)
    assert _bits(got2) == _bits(want2)


def test_bf16_addmm_known_case():
    # 1 * 1 + 1 * 1.0078125 = 2.0078125 lies halfway between the bfloat16 neighbours
    # 2 and 2.015625 (ties to even: 2); adding the bias 1.0078125 to that gives 3.0078125,
    # again a tie (3). torch adds the bias in float32 first: 3.015625, exact in bfloat16
    a = st.tensor([[1.0, 1.0]], dtype=st.bfloat16)
    w = st.tensor([[1.0], [1.0078125]], dtype=st.bfloat16)
    b = st.tensor([1.0078125], dtype=st.bfloat16)
    assert (st.mm(a, w) + b).item() == 3.0                  # rounded twice
    assert st.addmm(b, a, w).item() == 3.015625             # torch's answer
    import symtrace.nn.functional as SF
    assert SF.linear(a, w.t(), b).item() == 3.015625
    with st.autocast("cpu", dtype=st.bfloat16):
        assert SF.linear(a.float(), w.t().float(), b.float()).item() == 3.015625


@pytest.mark.parametrize("beta,alpha", [(1, 1), (2, 1), (1, 0.5), (0, 1)])
@pytest.mark.parametrize("bshape", ["row", "full", "col", "scalar"])
def test_bf16_addmm_bias_shapes(bshape, beta, alpha):
    torch = pytest.importorskip("torch")
    A, W, _, _ = _half_data(16, 64, 32, seed=5)
    import numpy as np
    B = np.asarray(np.random.RandomState(6).randn(*{"row": (32,), "full": (16, 32), "col": (16, 1),
                                                     "scalar": ()}[bshape]) * 10, dtype=np.float32)
    got = st.addmm(st.tensor(B).to(st.bfloat16), st.tensor(A).to(st.bfloat16),
                   st.tensor(W).to(st.bfloat16).t(), beta=beta, alpha=alpha)
    want = torch.addmm(torch.tensor(B).bfloat16(), torch.tensor(A).bfloat16(),
                       torch.tensor(W).bfloat16().t(), beta=beta, alpha=alpha)
    assert got.dtype is st.bfloat16 and got.shape == want.shape
    assert _bits(got) == _bits(want)


def test_bf16_addmm_grads_match_torch():
    torch = pytest.importorskip("torch")
    import numpy as np
    rs = np.random.RandomState(3)
    A, W, B, G = (rs.randn(8, 16), rs.randn(12, 16), rs.randn(12), rs.randn(8, 12))
    res = []
    for L in (torch, st):
        a, w, b = [L.tensor(v, dtype=L.float32).to(L.bfloat16).requires_grad_() for v in (A, W, B)]
        y = L.addmm(b, a, w.t())
        y.backward(L.tensor(G, dtype=L.float32).to(L.bfloat16))
        res.append([_bits(y.detach()), _bits(a.grad), _bits(w.grad), _bits(b.grad)])
    assert res[0] == res[1]


@needs_compile
def test_bf16_linear_compiled_rounds_once():
    torch = pytest.importorskip("torch")
    import symtrace.nn.functional as SF

    def f(b, a, w, x):
        return st.addmm(b, a, w.t()), SF.linear(x, w, b).relu(), SF.linear(a, w, b) * 2

    cf = st.compile(f)
    for shape in [(16, 64, 32), (33, 17, 65), (16, 64, 32)]:
        A, W, B, X = _half_data(*shape, seed=7)
        sv = [st.tensor(v).to(st.bfloat16) for v in (B, A, W, X)]
        tb, ta, tw, tx = [torch.tensor(v).bfloat16() for v in (B, A, W, X)]
        want = (torch.addmm(tb, ta, tw.t()), torch.nn.functional.linear(tx, tw, tb).relu(),
                torch.nn.functional.linear(ta, tw, tb) * 2)
        assert [_bits(x) for x in cf(*sv)] == [_bits(x) for x in want]


# ---------------------------------------------------------------- result strides (sweep)
# torch's flip family keeps the input's memory order (TensorIterator); its tril/triu
# results are row-major. torch's strides below, for a (3, 4, 5) arange.
STRIDE_CASES = [
    ("flip0_perm", lambda L, x: x.permute(2, 0, 1).flip(0), (1, 20, 5)),
    ("flip12_perm", lambda L, x: x.permute(2, 0, 1).flip((1, 2)), (1, 20, 5)),
    ("flip_t", lambda L, x: x[0].t().flip(0), (1, 5)),
    ("flip_expand", lambda L, x: x[:, :1].expand(3, 4, 5).flip(1), (20, 5, 1)),
    ("flip_slice", lambda L, x: x[:, ::2].flip(2), (10, 5, 1)),
    ("fliplr_perm", lambda L, x: L.fliplr(x.permute(2, 0, 1)), (1, 20, 5)),
    ("flipud_tr", lambda L, x: L.flipud(x.transpose(0, 1)), (5, 20, 1)),
    ("rot90_tr", lambda L, x: L.rot90(x.transpose(0, 1)), (20, 5, 1)),
    ("flip_0d", lambda L, x: x[0, 0, 0].flip(0), ()),
    ("tril_perm", lambda L, x: x.permute(2, 0, 1).tril(), (12, 4, 1)),
    ("triu_perm", lambda L, x: L.triu(x.permute(2, 0, 1), 1), (12, 4, 1)),
    ("tril_t", lambda L, x: x[0].t().tril(), (4, 1)),
]


@pytest.mark.parametrize("name,fn,want", STRIDE_CASES, ids=[c[0] for c in STRIDE_CASES])
def test_result_strides_as_torch(name, fn, want):
    r = fn(st, st.arange(60.0).reshape(3, 4, 5))
    assert r.stride() == want
    torch = pytest.importorskip("torch")
    t = fn(torch, torch.arange(60.0).reshape(3, 4, 5))
    assert t.stride() == want and r.tolist() == t.tolist()


@needs_compile
@pytest.mark.parametrize("dynamic", [False, True])
def test_flip_strides_compiled(dynamic):
    def f(x):
        return x.flip(0) * 2, st.fliplr(x), x.tril()

    cf = st.compile(f, dynamic=dynamic)
    for n in (3, 5, 7):
        x = st.arange(n * 20.0).reshape(n, 4, 5).permute(2, 0, 1)
        want, got = f(x), cf(x)
        assert [t.stride() for t in got] == [t.stride() for t in want]
        assert [t.stride() for t in want][:2] == [(1, 20, 5)] * 2
        assert [t.tolist() for t in got] == [t.tolist() for t in want]
