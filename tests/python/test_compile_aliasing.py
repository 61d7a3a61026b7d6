"""Compiled code keeps eager's aliasing and autograd on every call, not only
on the first (which runs eagerly while it is traced): outputs that are views
of inputs stay views (also of inputs written in place, across graph breaks),
in-place writes into inputs that require grad take histories, in-place view
ops (t_, unsqueeze_) run once, and tensors made inside the setitem and
tensor() paths are not captured as constants of the graph.

Each case runs the function eagerly and compiled three times on fresh inputs
and compares values, shapes and (where asked) gradients and aliasing."""
import pytest

import symtrace as st

BACKENDS = ["llvm", "interp"]


def _runs(fn, make, backend, n=3):
    st.reset()
    cf = st.compile(fn, backend=backend)
    return [(make(), cf) for _ in range(n)]


def _vals(r):
    if isinstance(r, tuple):
        return [_vals(x) for x in r]
    if isinstance(r, st.Tensor):
        return (tuple(r.shape), r.tolist())
    return r


# (name, fn, make inputs, what to compare after the call)
def _after_fill(fn):
    """Calls fn(x), then writes 7 into x: a returned view must show it."""
    def g(x):
        v = fn(x)
        return v
    return g


CASES = {}


def case(f):
    CASES[f.__name__] = f
    return f


@case
def view_of_written_input(x):
    v = x[1:]
    x.add_(1)
    return v


@case
def written_view_then_break(x):
    v = x[0].mul_(2)
    s = float(x.max())
    x.clamp_(-0.5, 0.5)
    return v + 0 * s, v


@case
def detach_then_write(x):
    x.add_(1)
    d = x.detach()
    x.mul_(3)
    return d


@case
def select_detach_write(x):
    x.select(1, 0).mul_(3)
    d = x.select(1, 0).detach()
    d.mul_(2)
    return x


@case
def expand_write_after_tril(x):
    x.tril_()
    x.expand(2, *x.shape)[1] = 5.0
    return x


@case
def flatten_write_across_break(x):
    x[[0, 1]] = 0
    v = x.flatten()
    s = int(v.argmax())
    v.unflatten(0, (1, -1))[::2] = -2
    return s


@case
def view_of_view(x):
    return x[:, 1].view_as(x[:, 1])


@case
def transpose_returned(x):
    return x.t()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_views_of_inputs_alias_on_every_call(name, backend):
    fn = CASES[name]
    st.reset()
    cf = st.compile(fn, backend=backend)

    def make():
        return st.tensor([[2.0, -3.0], [1.0, 0.0]])

    for call in range(3):
        xe, xc = make(), make()
        re, rc = fn(xe), cf(xc)
        assert _vals(rc) == _vals(re), (name, call)
        assert xc.tolist() == xe.tolist(), (name, call)
        # writes after the call show through every returned view, as eager's
        outs_e = re if isinstance(re, tuple) else (re,)
        outs_c = rc if isinstance(rc, tuple) else (rc,)
        xe.fill_(7.0)
        xc.fill_(7.0)
        for a, b in zip(outs_e, outs_c):
            if isinstance(a, st.Tensor):
                assert b.tolist() == a.tolist(), (name, call, "after x.fill_(7)")


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_view_is_a_view_of_the_input(backend):
    def f(x, y):
        y.add_(1)
        return x[:, 1], y.t()
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x, y = st.zeros(2, 2), st.zeros(2, 2)
        a, b = cf(x, y)
        assert a._base is x and a.data_ptr() == x.data_ptr() + 4
        assert b._base is y and b.data_ptr() == y.data_ptr()
        assert b.stride() == (1, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inplace_view_ops_on_inputs_run_once(backend):
    def f(x):
        x.unsqueeze_(0)
        return x + 1

    def g(x):
        x.t_()
        return x.sum()
    for fn, shape in ((f, (1, 2, 3)), (g, (3, 2))):
        st.reset()
        cf = st.compile(fn, backend=backend)
        for _ in range(3):
            a = st.zeros(2, 3)
            cf(a)
            assert tuple(a.shape) == shape


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_into_input_that_requires_grad_keeps_its_history(backend):
    # y is an input of the graph after the break; addcmul_ writes into it
    def f(x):
        y = x.square()
        x.median()
        y.addcmul_(x, x)
        return y
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x = st.tensor([1.0, 2.0], requires_grad=True)
        cf(x).sum().backward()
        assert x.grad.tolist() == [4.0, 8.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_augmented_setitem_on_an_intermediate_backward_every_call(backend):
    def f(x):
        y = x * 2
        y[0] += 1
        return y
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x = st.ones(2, 3, requires_grad=True)
        y = cf(x)
        assert y.tolist() == [[3.0] * 3, [2.0] * 3]
        y.sum().backward()
        assert x.grad.tolist() == [[2.0] * 3] * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_into_plain_input_from_a_param_gives_it_history(backend):
    def f(x, w):
        x.mul_(w)
        return x
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x, w = st.full((3,), 2.0), st.tensor([1.0, 2.0, 3.0], requires_grad=True)
        r = cf(x, w)
        assert r is x and x.requires_grad and x.grad_fn is not None
        x.sum().backward()
        assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_tensor_of_a_tensor_is_a_detached_copy_and_as_tensor_keeps_it():
    x = st.ones(2, requires_grad=True) * 2
    for t in (st.tensor(x), st.tensor(x, dtype=st.float64)):
        assert not t.requires_grad and t.grad_fn is None
        assert t.data_ptr() != x.data_ptr() and t._base is None
    assert st.as_tensor(x) is x
    c = st.as_tensor(x, dtype=st.float64)
    assert c.dtype == st.float64 and c.grad_fn is not None
    assert st.as_tensor([1, 2]).dtype == st.int64

    def f(x):
        return st.tensor(x) + 1
    st.reset()
    cf = st.compile(f, backend="llvm")
    for k in range(3):
        y = cf(st.full((2,), float(k)))
        assert y.tolist() == [k + 1.0, k + 1.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_no_output_depends_on_gets_no_gradient(backend):
    # r is an input of the graph after the break that no output reads: it
    # gets no gradient (None), so pow's NaN derivative at x < 0 stays unused
    def f(x):
        r = x.pow(0.5)
        r.median()
        st.cummax(r, 0)
        return x.relu()

    def g(x, y):
        y.floor()
        return x * 2
    st.reset()
    cf, cg = st.compile(f, backend=backend), st.compile(g, backend=backend)
    for _ in range(3):
        x = st.tensor([[-1.0, 4.0], [1.0, -2.0]], requires_grad=True)
        cf(x).sum().backward()
        assert x.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]
        x, y = st.ones(2, requires_grad=True), st.ones(2, requires_grad=True)
        cg(x, y).sum().backward()
        assert y.grad is None and x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_detached_alias_of_a_param_can_be_written(backend):
    def f(x):
        d = x.detach()
        d.mul_(2)
        return d
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x = st.ones(2, requires_grad=True)
        d = cf(x)
        assert x.tolist() == [2.0, 2.0] and not d.requires_grad
        d.add_(1)        # a plain alias: no autograd error, x sees it
        assert x.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_of_a_dead_intermediate_can_be_written_after_a_break(backend):
    def f(x):
        y = st.atan2(x, x)
        y[:][st.tensor(0)] = 5.0      # 0-d tensor index: a graph break
        return x * 1
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x = st.ones(3, requires_grad=True)
        assert cf(x).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_that_are_views_of_computed_values_keep_eager_strides(backend):
    def f(x):
        y = x * 2
        return (x + 1).expand(2, 3), y[::2], y.unsqueeze(0).t(), y
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        xe, xc = st.ones(3, requires_grad=True), st.ones(3, requires_grad=True)
        re, rc = f(xe), cf(xc)
        for a, b in zip(re, rc):
            assert b.tolist() == a.tolist() and b.stride() == a.stride()
        assert rc[1]._base is rc[3] and rc[2]._base is rc[3]     # views of the returned y
        sum(t.sum() for t in re).backward()
        sum(t.sum() for t in rc).backward()
        assert xc.grad.tolist() == xe.grad.tolist()
        rc[3].fill_(5.0)
        assert rc[1].tolist() == [5.0, 5.0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rg", [False, True])
def test_inplace_on_an_expanded_output_as_eager_on_every_call(backend, rg):
    # the compiled output is an expanded view (stride 0), as eager's: zero_()
    # fills it (torch allows a fill), add_() raises, on every call
    def f(x):
        n = len(x.tolist())                              # graph break
        return (x + n).expand(2, *x.shape).zero_()

    def g(x):
        n = len(x.tolist())
        return (x + n).expand(2, *x.shape).add_(1)
    st.reset()
    cf, cg = st.compile(f, backend=backend), st.compile(g, backend=backend)
    for shape in ((3,), (3,), (4,), (3,)):
        r = cf(st.ones(*shape, requires_grad=rg))
        assert r.stride() == (0, 1) and r.tolist() == [[0.0] * shape[0]] * 2
        with pytest.raises(RuntimeError, match="single memory location"):
            cg(st.ones(*shape, requires_grad=rg))
    torch = pytest.importorskip("torch")
    assert torch.ones(3).expand(2, 3).zero_().stride() == (0, 1)
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.ones(3).expand(2, 3).add_(1)


def test_cumsum_along_an_inner_dim_is_contiguous_as_torch():
    torch = pytest.importorskip("torch")
    import numpy as np
    rng = np.random.default_rng(0)
    for shape, d in [((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), 2), ((3, 300, 2), 1), ((2, 0, 3), 1)]:
        a = rng.standard_normal(shape).astype("float32")
        w = rng.standard_normal(shape).astype("float32")
        x, t = st.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        r, q = x.cumsum(d), t.cumsum(d)
        assert r.stride() == q.stride()
        np.testing.assert_allclose(r.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-4)
        (r * st.tensor(w)).sum().backward()
        (q * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert st.tensor([[1, 2], [3, 4]]).cumsum(0).view(-1).tolist() == [1, 2, 4, 6]


def test_linear_with_a_1d_weight_contracts_the_last_dim():
    F = st.nn.functional
    x = st.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = st.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = F.linear(x, w)
    assert y.shape == () and y.item() == 14.0
    y.backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0] and w.grad.tolist() == [1.0, 2.0, 3.0]
    assert F.linear(st.ones(4, 3), w, st.tensor(1.0)).tolist() == [7.0] * 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_that_get_no_gradient_send_none_not_zeros(backend):
    # sqrt(x).sum() is an output of the first graph only for .item(): its
    # backward must not run (a zero times sqrt's infinite derivative at 0 was NaN)
    def f(x):
        out = x * 2
        st.sqrt(x).sum().item()
        return out

    def g(x, y):
        out = y * 2
        st.sqrt(x).sum().item()
        return out
    st.reset()
    cf, cg = st.compile(f, backend=backend), st.compile(g, backend=backend)
    for _ in range(3):
        x = st.tensor([4.0, -1.0, 0.0], requires_grad=True)
        cf(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
        x, y = st.tensor([4.0, -1.0, 0.0], requires_grad=True), st.tensor([1.0, 2.0], requires_grad=True)
        cg(x, y).sum().backward()
        assert x.grad is None and y.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_inplace_into_plain_input_then_break_counts_the_gradient_once(backend):
    # the traced (aborted) eager run's history on t is put back with its data,
    # so the compiled run's writeback does not stack on it
    def f(t, w, y):
        t.add_(w)
        y.sum().item()
        return t

    def g(t, w, y):
        t.mul_(w)
        y.sum().item()
        return t
    for fn, want in ((f, [1.0, 1.0, 1.0]), (g, [1.0, 2.0, 3.0])):
        st.reset()
        cf = st.compile(fn, backend=backend)
        for _ in range(3):
            t, w = st.tensor([1.0, 2.0, 3.0]), st.tensor([1.0, 2.0, 3.0], requires_grad=True)
            cf(t, w, st.zeros(2)).sum().backward()
            assert w.grad.tolist() == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_node_whose_outputs_got_no_gradient_checks_nothing(backend):
    # graph 2 writes m (saved by graph 1's exp); backward reads only x * 2
    def f(x, y):
        m = y.exp()
        x.sum().item()
        m.add_(1)
        return x * 2
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x, y = st.tensor([1.0, 2.0, 3.0], requires_grad=True), st.tensor([1.5, -1.0], requires_grad=True)
        cf(x, y).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0] and y.grad is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_fill_beside_an_empty_result_is_written(backend):
    # the scalar 0 of zero_() joined the kernel of -x[3:], which iterates over
    # no element: x got whatever the buffer held (5.5, an earlier mean)
    def f(x, y):
        y.mean()
        v = -x[3:]
        x.zero_()
        return v
    for dt in (st.float32, st.int64):
        st.reset()
        cf = st.compile(f, backend=backend)
        for _ in range(3):
            x = st.tensor([1, 2, 3], dtype=dt)
            v = cf(x, st.arange(12, dtype=st.float32).reshape(3, 4))
            assert x.tolist() == [0, 0, 0] and tuple(v.shape) == (0,)


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_read_only_through_an_int_cast_gets_no_gradient(backend):
    def f(x, y):
        return (y.int() + x).sum()
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x, y = st.tensor([1.0, 2.0], requires_grad=True), st.tensor([1.5, 2.5], requires_grad=True)
        cf(x, y).backward()
        assert y.grad is None and x.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_from_an_input_before_a_write_with_grad_needs_none(backend):
    # x needs no gradient until x.div_(w) gives it w's history: v, computed
    # before, needs none (compiled took x's flag from after the write), and
    # u's backward does not trip over the old x the division saved
    def f(x, w):
        v = x * 2
        x.div_(w)
        return v, x * 3
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x, w = st.tensor([1.0, -2.0]), st.tensor([2.0, 4.0], requires_grad=True)
        v, u = cf(x, w)
        assert not v.requires_grad and u.requires_grad and x.requires_grad
        assert v.tolist() == [2.0, -4.0] and x.tolist() == [0.5, -0.5]
        (u.sum() + x.sum()).backward()
        assert w.grad.tolist() == [-1.0, 0.5]


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_saved_before_an_inplace_write_still_fails_backward(backend):
    # y = x * w saves x (w needs a gradient); x.mul_(2) then changes it:
    # backward fails as eager's does
    def f(x, w):
        y = x * w
        x.mul_(2)
        return y
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(2):
        x, w = st.tensor([1.0, 2.0]), st.tensor([3.0, 4.0], requires_grad=True)
        y = cf(x, w)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    x, w = st.tensor([1.0, 2.0]), st.tensor([3.0, 4.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(x, w).sum().backward()


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_through_part_of_an_expanded_input_runs_eagerly(backend):
    # after the break v (x expanded) is an input of the next graph; one
    # element written through v[:1] is x's only element, and a writeback of
    # v's whole new value could not be stored: that graph runs eagerly
    def f(x):
        v = x.expand(3)
        x.sum().item()
        v[:1].mul_(2)
        return x
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        assert cf(st.tensor(5.0)).tolist() == 10.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensors_made_to_require_grad_inside_keep_it(backend):
    # a run makes its outputs anew and sets no flags: requires_grad_() breaks
    # the graph, and a leaf made with requires_grad=True (or the attribute)
    # keeps its graph from compiling
    def f(x):
        y = (x * 2).detach().requires_grad_()
        v = x[1:].requires_grad_()
        w = st.ones(2, requires_grad=True)
        q = x.detach()
        q.requires_grad = True
        return y, v, y * 3, w, q, w * 2
    st.reset()
    cf = st.compile(f, backend=backend)
    want = [(t.requires_grad, t.is_leaf) for t in f(st.tensor([1.0, 2.0, 3.0]))]
    assert want == [(True, True), (True, True), (True, False), (True, True), (True, True),
                    (True, False)]
    for _ in range(3):
        r = cf(st.tensor([1.0, 2.0, 3.0]))
        assert [(t.requires_grad, t.is_leaf) for t in r] == want
        r[2].sum().backward()
        assert r[0].grad.tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_requires_grad_on_a_view_of_an_input_then_a_write_into_it(backend):
    def f(x):
        v = x.select(0, 4).view(1).requires_grad_()
        x.sum().item()
        x[0] = v[0] + 0
        return x * 1
    st.reset()
    cf = st.compile(f, backend=backend)
    for _ in range(3):
        x = st.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        o = cf(x)
        assert x.requires_grad and o.requires_grad and x.tolist() == [5.0, 2.0, 3.0, 4.0, 5.0]
