"""The scatter (assign) IR primitive (ST_OP_SCATTER) and the writes by index built on
it: torch.scatter / index_copy / index_put / put, their in-place forms, and
t[key] = v through index tensors, lists and masks. Against torch: values, gradients
of the input and of the written values, versions. Without autograd an in-place write
costs O(index), as torch's: checked by the allocator's peak (no copy of the target, no
arange over it) and by the written tensor keeping its storage. Compiled functions:
one graph holding the scatter, eager's values and gradients on interp and llvm.
_C._index_positions against the positions an arange read with the same key gives."""
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from symtrace._ops.indexing import _scatter
from tensor_data import run_code

RNG = np.random.default_rng(7)


def distinct_index(shape, high, dim):
    """An int64 index of shape (2-D) whose values along dim are distinct, in [0, high)."""
    idx = np.empty(shape, dtype=np.int64)
    lines = shape[1 - dim]
    for m in range(lines):
        vals = RNG.permutation(high)[:shape[dim]]
        if dim == 0:
            idx[:, m] = vals
        else:
            idx[m, :] = vals
    return idx


# ---- the primitive: values and gradients against torch ----
@pytest.mark.parametrize("backend", ["eager", "interp", "llvm"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_values_and_gradients_match_torch(backend, dim):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 7))
    d = dim % 2
    ishape = (3, 7) if d == 0 else (5, 4)
    src = RNG.standard_normal((4, 7) if d == 0 else (5, 6))     # larger than index
    idx = distinct_index(ishape, 5 if d == 0 else 7, d)
    w = RNG.standard_normal((5, 7))

    def f(a, b, i, wt):
        return (_scatter(a * 1, dim, i, b) * wt).sum()

    fn = f if backend == "eager" else st.compile(f, backend=backend)
    got = []
    for _ in range(2):                        # second call: the cached graph
        a, b = st.tensor(x, requires_grad=True), st.tensor(src, requires_grad=True)
        r = fn(a, b, st.tensor(idx), st.tensor(w))
        r.backward()
        got.append((r.item(), a.grad.numpy(), b.grad.numpy()))
    # torch's backward fails for a src larger than index (ScatterBackward0 returns
    # index's shape): it gets the part index reads; the rest of src's gradient is 0
    crop = src[:ishape[0], :ishape[1]]
    at, bt = torch.tensor(x, requires_grad=True), torch.tensor(crop, requires_grad=True)
    rt = (torch.scatter(at * 1, dim, torch.tensor(idx), bt) * torch.tensor(w)).sum()
    rt.backward()
    for r, ga, gb in got:
        assert r == pytest.approx(rt.item(), rel=1e-12)
        np.testing.assert_array_equal(ga, at.grad.numpy())       # written positions get 0
        np.testing.assert_array_equal(gb[:ishape[0], :ishape[1]], bt.grad.numpy())
        assert not gb[ishape[0]:].any() and not gb[:, ishape[1]:].any()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool", "float16",
                                   "bfloat16"])
def test_scatter_every_dtype(dtype):
    torch = pytest.importorskip("torch")
    idx = distinct_index((4, 6), 6, 0)
    if dtype == "bool":
        xs, ss = RNG.random((6, 6)) > 0.5, RNG.random((4, 6)) > 0.5
    else:
        xs, ss = RNG.integers(-50, 50, (6, 6)), RNG.integers(-50, 50, (4, 6))
    for backend in ("eager", "llvm"):
        f = (lambda a, i, b: _scatter(a, 0, i, b))
        fn = f if backend == "eager" else st.compile(f, backend=backend)
        r = fn(st.tensor(xs, dtype=getattr(st, dtype)), st.tensor(idx),
               st.tensor(ss, dtype=getattr(st, dtype)))
        want = torch.scatter(torch.tensor(xs, dtype=getattr(torch, dtype)), 0, torch.tensor(idx),
                             torch.tensor(ss, dtype=getattr(torch, dtype)))
        assert r.dtype == getattr(st, dtype)
        np.testing.assert_array_equal(r.float().numpy(), want.float().numpy())


def test_scatter_checks_name_scatter():
    x = st.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected dtype int64 for index"):
        _scatter(x, 0, st.tensor([[0]], dtype=st.int32), st.ones(1, 1))
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal"):
        _scatter(x, 0, st.tensor([[0]]), st.ones(1, 1, dtype=st.float64))
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        _scatter(x, 0, st.tensor([[3]]), st.ones(1, 1))


def test_repeated_positions_keep_the_last_value_on_the_cpu():
    """torch: unspecified; symtrace's CPU backends store in point order, as torch's CPU."""
    for backend in ("eager", "interp", "llvm"):
        f = (lambda a, i, b: _scatter(a, 0, i, b))
        fn = f if backend == "eager" else st.compile(f, backend=backend)
        r = fn(st.zeros(4), st.tensor([1, 3, 1, 1]), st.tensor([5., 6., 7., 8.]))
        assert r.tolist() == [0.0, 8.0, 0.0, 6.0], backend


def test_compiled_write_through_indices_is_one_graph_holding_scatter():
    """A write through constant index lists inside a compiled function: one graph, the
    scatter primitive in it (no arange over the target), eager's values and gradients."""
    def f(x, v):
        y = x * 2
        y[[0, 2], [1, 3]] = v
        y[1, [0, 2]] += v
        return (y * y).sum()

    cf = st.compile(f)
    for _ in range(2):
        xa, va = st.tensor(RNG.standard_normal((3, 4)), requires_grad=True), \
            st.tensor(RNG.standard_normal(2), requires_grad=True)
        xb, vb = (t.detach().clone().requires_grad_() for t in (xa, va))
        ra, rb = cf(xa, va), f(xb, vb)
        ra.backward()
        rb.backward()
        assert ra.item() == pytest.approx(rb.item(), rel=1e-12)
        np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(va.grad.numpy(), vb.grad.numpy(), rtol=1e-12)
    ex = st.explain(f, xa, va)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    text = "\n".join(str(g) for g in ex.graphs)
    assert "scatter(" in text and "arange" not in text


# ---- in-place writes: torch's values and versions, O(index) without autograd ----
INPLACE = [
    "x=t.zeros(4,5); r=x.scatter_(1, t.tensor([[0,4],[1,2]]), t.tensor([[1.,2.],[3.,4.]])); out=(x, r is x)",
    "x=t.zeros(4,5); x.scatter_(0, t.tensor([[3,0,1]]), 2.5); out=x",
    "x=t.ones(4,5); x.scatter_(0, t.tensor([[3,3,1]]), t.full((1,3), 2.), reduce='add'); out=x",
    "x=t.ones(3,4); x.scatter_add_(1, t.tensor([[0,0,3]]), t.tensor([[1.,2.,3.]])); out=x",
    "x=t.zeros(5,3); x.index_add_(0, t.tensor([4,0,4]), t.ones(3,3), alpha=2); out=x",
    "x=t.zeros(5,3); x.index_copy_(0, t.tensor([4,1]), t.tensor([[1.,2.,3.],[4.,5.,6.]])); out=x",
    "x=t.zeros(3,4); x.index_put_((t.tensor([0,2]), t.tensor([1,-1])), t.tensor([7.,8.])); out=x",
    "x=t.zeros(3,4); x.index_put_((t.tensor([0,0]),), t.ones(4), accumulate=True); out=x",
    "x=t.zeros(2,3,dtype=t.int64); x.put_(t.tensor([5,-6]), t.tensor([3,4])); out=x",
    "x=t.zeros(()); x.index_copy_(0, t.tensor([0]), t.tensor([2.])); out=x",
    "x=t.zeros(3,4); x.index_fill_(1, t.tensor([1,1,-1]), 5.); x.index_fill_(0, t.tensor([2]), t.tensor(-1.)); out=x",
    "x=t.zeros(()); x.scatter_(0, t.tensor(0), t.tensor(3.)); out=x",
    "x=t.zeros(4,6).t(); x[[0,5],[1,2]]=t.tensor([1.,2.]); out=(x, x.is_contiguous())",
    "b=t.zeros(4,6); x=b[1:3]; x.index_fill_(1, t.tensor([0]), 1.); x[[1],[5]]=9.; out=b",
    "x=t.zeros(3,4); x[t.tensor([[True,False,True,False]]*3)]=t.arange(6.); out=x",
    "x=t.zeros(3,4); x[[0,1],:]=t.tensor([1.,2.,3.,4.]); x[:, [3]]+=1; out=x",
    "x=t.arange(12.).reshape(3,4); x[[1,2],[0]]=x[[0,0],[3]]; out=x",
    "x=t.zeros(3,4); v=x._version; x[[0,1],[1,1]]=1.; x.index_put_((t.tensor([2]),), t.tensor(1.)); "
    "x.scatter_(0, t.tensor([[0]]), 3.); out=(x, x._version - v)",
]


# under autograd: self a computed tensor (or a view of one), the written values require grad;
# the values, gradients, grad_fn chain and version moves are torch's
_G = "x=t.arange(20.).reshape(4,5).requires_grad_(); s=t.arange(1.,7.).reshape(2,3).requires_grad_(); y=x*2; "
_B = "; (y*y).sum().backward(); out=(y, x.grad, s.grad)"
INPLACE_GRAD = [
    _G + "y.scatter_(1, t.tensor([[0,4,2],[1,2,3]]), s)" + _B,
    _G + "y.scatter_(0, t.tensor([[3,0,1],[2,2,2]]), 2.5); s=s*1" + _B.replace(", s.grad", ""),
    _G + "y.scatter_add_(1, t.tensor([[0,0,3],[4,4,4]]), s)" + _B,
    _G + "y.index_add_(0, t.tensor([3,0]), s.repeat(1,2)[:, :5], alpha=2)" + _B,
    _G + "y.index_copy_(0, t.tensor([3,1]), s.repeat(1,2)[:, :5])" + _B,
    _G + "y.index_put_((t.tensor([0,2]), t.tensor([1,-1])), s[0,:2])" + _B,
    _G + "y.index_put_((t.tensor([0,0,3]),), s[1], accumulate=True) if False else "
         "y.index_put_((t.tensor([0,0,3]), t.tensor([1,1,2])), s[1], accumulate=True)" + _B,
    _G + "y.put_(t.tensor([5,-6,19]), s[0])" + _B,
    _G + "y.index_fill_(1, t.tensor([1,1,-1]), 5.)" + _B.replace(", s.grad", ""),
    _G + "y.index_fill_(1, t.tensor([1,4,1]), s[0,0])" + _B,
    _G + "y[[0,3],[4,1]] = s[1,:2]" + _B,
    _G + "y[1:3].index_add_(1, t.tensor([4,0,4]), s)" + _B,
    _G + "y.t()[[1,2]] = s[:, :1].expand(2,4)" + _B,
    _G + "v=y._version; y.scatter_(1, t.tensor([[1]]), s[:1,:1]); y[[0],[0]] = s[0,0]; "
         "(y*y).sum().backward(); out=(y, x.grad, s.grad, y._version - v)",
]


@pytest.mark.parametrize("code", INPLACE_GRAD)
def test_inplace_writes_under_autograd_match_torch(code):
    torch = pytest.importorskip("torch")

    def norm(v):
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v.tolist() if hasattr(v, "tolist") else v

    assert norm(run_code(st, code)) == norm(run_code(torch, code)), code


def test_inplace_write_into_a_leaf_that_requires_grad_is_refused():
    for write in (lambda x: x.scatter_(0, st.tensor([[0]]), 1.), lambda x: x.index_add_(0, st.tensor([1]), st.ones(1, 3)),
                  lambda x: x.index_put_((st.tensor([0]),), st.tensor(1.)), lambda x: x.put_(st.tensor([2]), st.ones(1)),
                  lambda x: x.index_fill_(1, st.tensor([0]), 2.), lambda x: x.__setitem__(([0], [1]), 1.)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            write(st.zeros(2, 3, requires_grad=True))


@pytest.mark.parametrize("code", INPLACE)
def test_inplace_writes_match_torch(code):
    torch = pytest.importorskip("torch")
    want = run_code(torch, code)
    assert not (isinstance(want, tuple) and want[0] == "error"), want
    got = run_code(st, code)

    def norm(v):
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v.tolist() if hasattr(v, "tolist") else v

    assert norm(got) == norm(want), code


def _peak_during(fn):
    base = st.memory.memory_allocated()
    st.memory.reset_peak_stats()
    fn()
    return st.memory.max_memory_allocated() - base


@pytest.mark.parametrize("write", [
    "setitem", "setitem_scalar", "index_put_", "put_", "scatter_", "scatter_add_", "index_copy_",
    "index_add_", "index_fill_"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "autograd"])
def test_inplace_writes_cost_the_index(write, grad):
    """A [2048, 4096] float32 target (32 MiB): the write allocates about what its
    positions and values take (~4096 elements), not a copy or an arange of the target;
    the target keeps its storage and its version moves by one. Also under autograd (the
    target computed from a leaf that requires grad, the values requiring grad)."""
    n, c = 2048, 4096
    z = st.zeros(n, c, requires_grad=True) * 1 if grad else st.zeros(n, c)
    ptr, ver = z.data_ptr(), z._version
    rows, cols = st.arange(n), st.tensor(RNG.integers(0, c, n))
    ones = st.ones(n, requires_grad=grad)
    col2 = cols.reshape(n, 1)
    ops = {
        "setitem": lambda: z.__setitem__((rows, cols), ones),
        "setitem_scalar": lambda: z.__setitem__((rows, cols), 1.0),
        "index_put_": lambda: z.index_put_((rows, cols), ones, accumulate=True),
        "put_": lambda: z.put_(rows * c + cols, ones),
        "scatter_": lambda: z.scatter_(1, col2, ones.reshape(n, 1)),
        "scatter_add_": lambda: z.scatter_add_(1, col2, ones.reshape(n, 1)),
        "index_copy_": lambda: z.index_copy_(1, cols[:8], st.ones(n, 8)),
        "index_add_": lambda: z.index_add_(1, cols[:8], st.ones(n, 8)),
        "index_fill_": lambda: z.index_fill_(1, cols[:8], 2.0),
    }
    peak = _peak_during(ops[write])
    assert peak < 1 << 20, f"{write}: {peak} bytes"          # 32 MiB target
    assert z.data_ptr() == ptr and z._version == ver + 1
    assert z.grad_fn is not None if grad else z.grad_fn is None
    if write in ("setitem", "setitem_scalar", "index_put_", "put_", "scatter_", "scatter_add_"):
        assert z.sum().item() == n
        assert z[rows, cols].tolist() == [1.0] * n


def test_index_fill_value_gradient_counts_a_repeated_slice_once():
    torch = pytest.importorskip("torch")
    code = ("x=t.arange(12.).reshape(3,4).requires_grad_(); v=t.tensor(2.).requires_grad_(); "
            "y=t.index_fill(x*1, 1, t.tensor([1,1,3]), v); (y*t.arange(12.).reshape(3,4)).sum().backward(); "
            "out=(y, x.grad, v.grad)")
    got, want = run_code(st, code), run_code(torch, code)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


def test_inplace_write_with_autograd_matches_torch():
    torch = pytest.importorskip("torch")
    code = ("x=t.arange(12.).reshape(3,4).requires_grad_(); v=t.tensor([5.,6.]).requires_grad_(); "
            "y=x*1; y.index_put_((t.tensor([0,2]), t.tensor([1,3])), v); y.scatter_(1, t.tensor([[0],[0],[0]]), "
            "v[:1].expand(3,1)); y[[1],[2]]=v[1]*3; (y*y).sum().backward(); out=(y, x.grad, v.grad)")
    want = run_code(torch, code)
    got = run_code(st, code)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


# ---- positions of a key ----
def _random_key(shape):
    items = []
    for n in shape:
        c = RNG.integers(0, 6)
        if c == 0:
            items.append(slice(None))
        elif c == 1:
            items.append(slice(1, None, 2))
        elif c == 2:
            items.append(int(RNG.integers(-n, n)))
        elif c == 3:
            items.append(st.tensor(RNG.integers(-n, n, size=int(RNG.integers(1, 4)))))
        elif c == 4:
            items.append([int(v) for v in RNG.integers(0, n, size=2)])
        else:
            items.append(st.tensor(RNG.random(n) > 0.5))
    if RNG.random() < 0.3:
        items.insert(int(RNG.integers(0, len(items) + 1)), None)
    return tuple(items)


def test_index_positions_match_an_arange_read():
    """600 random keys (ints, slices with steps, None, index tensors, lists, masks; some
    out of range): the same positions, shapes and errors as arange(numel)[key]."""
    checked = errors = 0
    for trial in range(600):
        shape = [(5,), (4, 6), (3, 4, 5), (2, 3, 4, 5)][trial % 4]
        key = _random_key(shape)
        t = st.zeros(*shape)
        try:
            want = st.arange(t.numel()).reshape(shape)[key]
        except (IndexError, RuntimeError) as e:
            with pytest.raises(type(e)) as got:
                _C._index_positions(t, key)
            assert str(got.value) == str(e)
            errors += 1
            continue
        got = _C._index_positions(t, key)
        assert tuple(got.shape) == tuple(want.shape), key
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got._base is None
        checked += 1
    assert checked > 400 and errors > 10


def test_compiled_library_call_after_an_empty_prefix_graph():
    """st.index_put inside a compiled function breaks the graph before the call (it reads
    a tensor it made itself); the prefix graph holds no statement and hands x through.
    Its entry used to raise SystemError ('compiled entry has outputs but no graph') on
    the second call; now every call gives eager's result."""
    def f(x, i):
        return st.index_put(x, (i,), st.tensor(5.)) * 1

    cf = st.compile(f)
    x = st.zeros(5)
    for k in (1, 3, 0):
        assert cf(x, st.tensor([k])).tolist() == f(x, st.tensor([k])).tolist()


def test_setitem_under_autograd_writes_in_place():
    """y[rows, cols] = w on a [2048, 4096] non-leaf that requires grad: the scatter runs in
    place on a flat view of y (CopySlices takes the view's own elements as the result), so
    it allocates about the positions, not a copy of y; the gradients are torch's."""
    torch = pytest.importorskip("torch")
    n, c = 2048, 4096
    cols_np = RNG.integers(0, c, n)
    x = st.ones(n, c, requires_grad=True)
    w = st.full((n,), 3.0, requires_grad=True)
    y = x * 2
    ptr = y.data_ptr()
    rows, cols = st.arange(n), st.tensor(cols_np)
    peak = _peak_during(lambda: y.__setitem__((rows, cols), w))
    assert peak < 1 << 20, peak
    assert y.data_ptr() == ptr and y.grad_fn.name() == "CopySlices"
    (y * y).sum().backward()
    tx, tw = torch.ones(n, c, requires_grad=True), torch.full((n,), 3.0, requires_grad=True)
    ty = tx * 2
    ty[torch.arange(n), torch.tensor(cols_np)] = tw
    (ty * ty).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
