"""In-place ops through views under autograd, as PyTorch: the base's history records
the write (CopySlices), other views of a base written in place get a new history
(runtime/viewhist.c), Tensor._base, torch's version counter, diagonal(), unfold()
and as_strided() as views, and the in-place view ops (t_, transpose_, squeeze_, ...). Each case runs the same code on symtrace and torch and compares
values, gradients, or the error."""
import numpy as np
import pytest

import symtrace as st
from tensor_data import run_code

torch = pytest.importorskip("torch")


run = run_code


def norm(v):
    """Values comparable across libraries: dtypes by name, floats rounded."""
    if isinstance(v, (list, tuple)):
        return type(v)(norm(x) for x in v)
    if isinstance(v, float):
        return round(v, 4)
    if isinstance(v, (st.Tensor, torch.Tensor)):
        return norm(v.tolist())
    if isinstance(v, (st.dtype, torch.dtype)):
        return str(v).split(".")[-1]
    return v


GRADS = [
    # a computed tensor overwritten from operands that need no gradient: its old history
    # gets zeros (torch's CopyBackwards), it still requires grad
    "x=t.ones(3,requires_grad=True); y=x*2; y.copy_(t.zeros(3)); (y.sum()+x.sum()).backward(); out=x.grad",
    "x=t.ones(3,requires_grad=True); y=(x*2).clone().fill_(0.); z=x*3; z.zero_(); (y.sum()+z.sum()).backward(); "
    "out=(x.grad, y.requires_grad, z.requires_grad)",
    "x=t.ones(3,requires_grad=True); y=x*2; y.fill_(1.); y.sum().backward(); out=x.grad",
    "x=t.ones(3,requires_grad=True); y=x*2; y.copy_(x*5); y.sum().backward(); out=x.grad",
    # a view of a computed tensor written in place: the base's gradient
    "x=t.ones(3,4,requires_grad=True); y=x*2; y[:,1].mul_(3); y.sum().backward(); out=x.grad",
    "x=t.ones(3,4,requires_grad=True); y=x*2; y[0].zero_(); y.sum().backward(); out=x.grad",
    "x=t.ones(3,4,requires_grad=True); y=x*2; v=y.view(12); v.add_(1); (y*y).sum().backward(); out=x.grad",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y.t().mul_(2); y.sum().backward(); out=x.grad",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); w=t.arange(3.).requires_grad_(); y=x*2; y[1].mul_(w); "
    "(y*y).sum().backward(); out=(x.grad, w.grad, y)",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y[:, :2].copy_(t.zeros(2,2)); y.sum().backward(); out=x.grad",
    "x=t.ones(4,requires_grad=True); y=x*2; y.narrow(0,1,2).mul_(5); y.sum().backward(); out=x.grad",
    "x=t.ones(4,requires_grad=True); y=x*2; y[::2].mul_(3); y.sum().backward(); out=x.grad",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y.unsqueeze(0).mul_(2); y.sum().backward(); out=x.grad",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x*2; y[1].mul_(2.5); y[0].div_(t.tensor(2.)); "
    "(y*y).sum().backward(); out=x.grad",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x*2; y[1:, 1:].add_(1); y[:, 0].sub_(x[:, 1]); "
    "(y*y).sum().backward(); out=(x.grad, y)",
    "x=t.arange(24.).reshape(2,3,4).requires_grad_(); y=x*1; y.permute(2,0,1)[1, :, 1:].mul_(3); "
    "(y*y).sum().backward(); out=x.grad",
    "x=t.ones(3,requires_grad=True); y=x*2; y[1:].copy_(x[:2]*5); y.sum().backward(); out=x.grad",
    "x=t.zeros(3,2,requires_grad=True); y=x+1; y.view(2,3)[1].exp_(); y.sum().backward(); out=x.grad",
    "x=t.ones(3,3,requires_grad=True); y=x*1; y[1].relu_(); y[2].clamp_(0,0.5); y.sum().backward(); out=x.grad",
    "x=t.ones(2,3,requires_grad=True); y=x.sigmoid(); y[0].sigmoid_(); y.sum().backward(); out=x.grad",
    "x=t.ones(2,2,requires_grad=True); y=x*2; y[0,0].mul_(5); out=(y, t.autograd.grad(y.sum(), x)[0])",
    # a float64 operand: the result is cast into the float32 view
    "x=t.arange(6.).reshape(2,3).requires_grad_(); w=t.arange(3.,dtype=t.float64).requires_grad_(); "
    "y=x*2; y[1].mul_(w); (y*y).sum().backward(); out=(x.grad, w.grad, y.dtype)",
    # a view of a view, and a view written twice
    "x=t.ones(2,3,requires_grad=True); y=x*2; a=y[0]; b=a[1:]; b.mul_(3); (y*y).sum().backward(); "
    "out=(x.grad, b._base is y, a._base is y)",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x*2; v=y[0]; v.mul_(2); v.mul_(3); "
    "(y*y).sum().backward(); out=(x.grad, v.grad_fn is not None)",
    "x=t.ones(2,3,requires_grad=True); y=(x*2).t(); z=y[1]; z.add_(1); (y*y).sum().backward(); out=x.grad",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y[0].mul_(2); y[1].add_(y[0]); y.sum().backward(); out=x.grad",
    # the base written in place: an older view's history follows it
    "x=t.ones(2,3,requires_grad=True); y=x*2; z=y[0]; y.mul_(2); z.sum().backward(); out=x.grad",
    "x=t.ones(2,3,requires_grad=True); y=x*3; a=y[1]; y.mul_(2); out=(a, t.autograd.grad((a*a).sum(), x)[0])",
    # an untracked base takes the history of a tracked value written into its view
    "x=t.ones(2,3); w=t.ones(3,requires_grad=True); x[0].mul_(w); x.sum().backward(); "
    "out=(w.grad, x.requires_grad)",
    "x=t.ones(2,3); w=t.ones(3,requires_grad=True); v=x[1]; x[0].mul_(w); out=(v.requires_grad, x[0].requires_grad)",
    # a detached tensor is a base of its own
    "x=t.arange(6.).reshape(2,3).requires_grad_(); w=t.arange(2.).requires_grad_(); d=(x*1).t().detach(); "
    "d[1].mul_(w); (d*d).sum().backward(); out=(w.grad, d, x.grad)",
    # retain_grad on a view written in place: its new history is not on the loss's path
    "x=t.ones(2,3,requires_grad=True); y=x*2; v=y[0]; v.relu_(); v.retain_grad(); (y*y).sum().backward(); "
    "out=(x.grad, v.grad)",
    # diagonal and as_strided are views
    "x=t.arange(12.).reshape(3,4).requires_grad_(); y=x*2; d=y.diagonal(1); d.add_(10); "
    "(y*y).sum().backward(); out=(y, x.grad, d._base is y)",
    "e=t.arange(24.).reshape(2,3,4).requires_grad_(); g=e.diagonal(-1,1,2); (g*g).sum().backward(); out=(g, e.grad)",
    "x=t.zeros(3,3); x.diagonal().fill_(1); out=x",
    "x=t.zeros(2,3,4); x.diagonal(0, 0, 2).add_(t.tensor([[1.,2.],[3.,4.],[5.,6.]])); out=x",
    "w=t.arange(20.).reshape(4,5).requires_grad_(); v=w.as_strided((2,2),(1,5),1); "
    "(v*t.tensor([[1.,2.],[3.,4.]])).sum().backward(); out=(v, w.grad)",
    # Tensor.unfold is a view (as_strided)
    "x=t.arange(10.); out=x.unfold(0,3,2)",
    "x=t.arange(24.).reshape(2,3,4); out=(x.unfold(2,2,1), list(x.unfold(-2,2,1).shape), x.unfold(1,3,3).stride())",
    "x=t.arange(12.).reshape(3,4).requires_grad_(); u=x.unfold(1,2,1); (u*u).sum().backward(); out=x.grad",
    "x=t.arange(12.).reshape(3,4); y=x*1; y.unfold(1,2,2).mul_(10); out=y",
    "x=t.arange(12.).reshape(3,4).requires_grad_(); y=x*1; y.unfold(1,2,2)[..., 0].mul_(10); "
    "(y*y).sum().backward(); out=(y, x.grad)",
    "x=t.tensor(3.); out=x.unfold(0,1,1)",
    "x=t.arange(5.); out=list(x.unfold(0,0,1).shape)",
    # in-place view ops: the tensor takes the view's geometry and history
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x*2; v0=y._version; y.t_(); "
    "(y*t.arange(6.).reshape(3,2)).sum().backward(); out=(list(y.shape), list(y.stride()), x.grad, y._version-v0)",
    "a=t.zeros(2,1,3); a.squeeze_(); s1=list(a.shape); a.unsqueeze_(0); out=(s1, list(a.shape), a.is_contiguous()); "
    "a.transpose_(0,2); out=out+(list(a.shape), list(a.stride()))",
    "b=t.zeros(4); v=b.view(2,2); b.unsqueeze_(0); out=(list(v.shape), list(b.shape))",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x*1; y.squeeze_(); y.unsqueeze_(1); y.swapdims_(0,1); "
    "(y*y).sum().backward(); out=(list(y.shape), x.grad)",
    "x=t.arange(6.).requires_grad_(); y=x*1; y.as_strided_((2,2),(1,2),1); (y*y).sum().backward(); out=(y, x.grad)",
    "x=t.arange(6.).reshape(2,3); x.t_(); x[0].fill_(9); out=x",
    "x=t.arange(6.).reshape(2,3).requires_grad_(); y=x*2; z=y[0]; y.t_(); y.mul_(2); (z*z).sum().backward(); "
    "out=x.grad",
]

ERRORS = [
    "x=t.ones(2,3,requires_grad=True); y=x[0]; y.mul_(2)",
    "x=t.ones(2,3,requires_grad=True); y=x*2\nwith t.no_grad(): v=y[0]\nv.mul_(2)",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y.expand(2,2,3).mul_(2)",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y[0].mul_(t.ones(2,3))",
    "x=t.ones(2,3,requires_grad=True); y=x.exp(); y[0].mul_(2); y.sum().backward()",
    "x=t.ones(3,requires_grad=True); y=x*2; y[1:].add_(t.ones(3))",
    "x=t.ones(3,requires_grad=True); y=(x*2).long(); y[1:].mul_(1.5)",
    "x=t.arange(5.); x.unfold(0,6,1)",
    "x=t.arange(5.); x.unfold(0,2,0)",
    "x=t.arange(5.); x.unfold(1,2,1)",
    "x=t.ones(2,3,requires_grad=True); x.t_()",
]

VERSIONS = [
    "x=t.ones(3,requires_grad=True); y=x*1; out=[y._version]; y.add_(1); out.append(y._version)",
    "a=t.zeros(3); out=[a._version]; a.add_(1); out.append(a._version); a[0:2].mul_(2); out.append(a._version)",
    "x=t.ones(2,3); y=x[0]; y.mul_(2); out=(x, x._version, y._version)",
    "x=t.ones(2,3,requires_grad=True); y=x*2; y[0].mul_(1.5); out=y._version",
    "x=t.ones(2,3,requires_grad=True); y=x*2; z=y[0]; y.mul_(2); out=(z.grad_fn is not None, z._version, y._version)",
    "x=t.zeros(3,requires_grad=True); out=(x[0]._base is x, x._base, x.detach()._base, x[0]._is_view(), x._is_view())",
]


@pytest.mark.parametrize("code", GRADS + VERSIONS)
def test_values_and_gradients_match_torch(code):
    want = run(torch, code)
    got = run(st, code)
    assert norm(got) == norm(want), f"{code}\nsymtrace: {got}\ntorch:    {want}"


@pytest.mark.parametrize("code", ERRORS)
def test_errors_match_torch(code):
    want = run(torch, code)
    assert isinstance(want, tuple) and want[0] == "error", f"torch did not raise: {code}"
    assert run(st, code) == want, code


def test_error_messages_name_the_case():
    x = st.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    y = x * 2
    with st.no_grad():
        v = y[0]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        y.expand(2, 2, 3).mul_(2)


def test_grad_fn_names_follow_torch():
    x = st.ones(2, 3, requires_grad=True)
    y = x * 2
    z = y[0]
    z.mul_(3)
    assert y.grad_fn.name() == "CopySlices"          # torch: torch::autograd::CopySlices
    assert z.requires_grad and z.grad_fn is not None  # a gather from y (torch: AsStridedBackward0)
    assert z.grad_fn.next_functions[0][0] is not None


def test_large_base_small_view_is_cheap():
    """The write through a view of a contiguous base costs O(view) in the forward: a
    [4096, 4096] base with a one-column view, 50 times, well under a full copy each."""
    import time
    x = st.ones(4096, 4096, requires_grad=True)
    y = x * 2
    for _ in range(3):
        y[:, 0].mul_(1.0)
    t0 = time.perf_counter()
    for _ in range(50):
        y[:, 0].mul_(1.0)
    per = (time.perf_counter() - t0) / 50
    t0 = time.perf_counter()
    for _ in range(5):
        y.clone()
    full = (time.perf_counter() - t0) / 5
    assert per < full, (per, full)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[:2, :2], [[2, 2], [2, 2]])


def compiled_cases():
    def f1(x, w):
        y = x * 2
        y[:, 1].mul_(w)
        return (y * y).sum()

    def f2(x):
        y = x.exp()
        z = y * 1
        z[0].zero_()
        z.t()[1].add_(x[0, 1])
        return z.sum()

    def f3(x):
        y = x * 3
        a = y[1]
        y.mul_(2)
        return (a * a).sum() + y.sum()

    return [(f1, [np.arange(6.).reshape(3, 2), np.array([0.5, 1.5, 2.])]),
            (f2, [np.arange(6.).reshape(2, 3) / 5]), (f3, [np.arange(6.).reshape(2, 3)])]


@pytest.mark.parametrize("case", range(3))
def test_compiled_in_place_on_views_matches_torch(case):
    f, args = compiled_cases()[case]
    ts = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in args]
    want = f(*ts)
    want.backward()
    st.reset()
    cf = st.compile(f)
    for _ in range(2):
        ss = [st.tensor(a.astype(np.float32)).requires_grad_() for a in args]
        got = cf(*ss)
        got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        for s, t in zip(ss, ts):
            np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    rep = st.explain(f, *[st.tensor(a.astype(np.float32)).requires_grad_() for a in args])
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)


def test_nothing_is_kept_alive():
    """Views hold their base (torch's _base), CopySlices nodes hold view geometry only:
    after the tensors go, no memory and no autograd node is left behind."""
    import gc
    from symtrace import _C

    def once():
        x = st.ones(64, 64, requires_grad=True)
        w = st.ones(64, requires_grad=True)
        y = x * 2
        z = y[3]
        y[:, 1].mul_(w)
        y[0].zero_()
        zz = z * 2
        d = y.diagonal()
        d.add_(1)
        a = y.as_strided((4,), (65,), 0)
        (y * y).sum().backward(retain_graph=True)
        (a.sum() + zz.sum()).backward()
        q = st.ones(8, 8)
        q[1].mul_(w[:8])
        q.t()[2].add_(1)
        q.sum().backward()

    for _ in range(3):
        once()
    gc.collect()
    m0, n0 = st.memory.memory_allocated(), _C._autograd_stats()["nodes_alive"]
    for _ in range(10):
        once()
    gc.collect()
    assert st.memory.memory_allocated() == m0
    assert _C._autograd_stats()["nodes_alive"] == n0


def test_in_place_view_op_breaks_the_graph_and_stays_correct():
    def f(x):
        y = x * 2
        y.t_()
        return y * st.arange(6.).reshape(3, 2)

    x = st.arange(6.).reshape(2, 3).requires_grad_()
    st.reset()
    cf = st.compile(f)
    for _ in range(2):
        np.testing.assert_allclose(cf(x).detach().numpy(), f(x).detach().numpy())
    rep = st.explain(f, x)
    assert any("in-place view op" in b.reason for b in rep.break_reasons), str(rep)


# diagonal() inside a compiled function is made of views the trace writes back through
# (permute, reshape, a slice with step C + 1): writes into it reach the input, as in eager
# code and torch. (fn, shape, transpose the input first, graph breaks expected)
DIAGONAL_WRITES = [
    (lambda x: x.diagonal().add_(1) * 2, (3, 3), False, 0),
    (lambda x: x.diagonal(1).mul_(3) + 0, (3, 5), False, 0),
    (lambda x: x.diagonal(-2).mul_(3) + 0, (5, 3), False, 0),
    (lambda x: x.diagonal(0, 1, 2).add_(1) + 0, (2, 3, 4), False, 0),
    (lambda x: x.diagonal(-1, -1, -2).sub_(1) + 0, (2, 4, 4), False, 0),   # a plane read transposed
    (lambda x: x.diagonal().add_(1) * 2, (3, 4), True, 0),                 # input stored transposed
    (lambda x: x.diagonal(5).add_(1).sum() + x.sum(), (3, 3), False, 0),   # empty
    (lambda x: x.diagonal().copy_(x[0] * 2) + 0, (3, 3), False, 0),
    (lambda x: x.diagonal(1, 2, 0).add_(1) + 0, (4, 3, 5), False, 1),      # dims do not merge: a break
]


@pytest.mark.parametrize("case", range(len(DIAGONAL_WRITES)))
def test_compiled_writes_into_diagonal_reach_the_input(case):
    fn, shape, transposed, breaks = DIAGONAL_WRITES[case]
    a = np.random.default_rng(case).standard_normal(shape).astype(np.float32)

    def make(lib):
        x = lib.tensor(a.T.copy() if transposed else a)
        return x.t() if transposed else x

    tx = make(torch)
    want = fn(tx)
    st.reset()
    cf = st.compile(fn)
    for _ in range(2):
        x = make(st)
        got = cf(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-6)
        tx = make(torch)
        want = fn(tx)
    rep = st.explain(fn, make(st))
    assert rep.graph_break_count == breaks, str(rep)
    if breaks:
        assert any("do not merge into one dim" in b.reason for b in rep.break_reasons), str(rep)


def test_compiled_diagonal_gradients_and_write_on_a_computed_tensor():
    def f(x, w):
        y = x * 2
        d = y.diagonal(1)
        d.mul_(w)
        return (y * y).sum() + st.trace(x) if isinstance(x, st.Tensor) else \
            (y * y).sum() + torch.trace(x)

    a = np.arange(12.).reshape(3, 4) / 7
    b = np.array([0.5, -1., 2.])
    tx, tw = (torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in (a, b))
    want = f(tx, tw)
    want.backward()
    st.reset()
    cf = st.compile(f)
    for _ in range(2):
        x, w = (st.tensor(v.astype(np.float32)).requires_grad_() for v in (a, b))
        got = cf(x, w)
        got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)
    rep = st.explain(f, *(st.tensor(v.astype(np.float32)).requires_grad_() for v in (a, b)))
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)


def test_diag_of_a_matrix_is_a_copy():
    """torch.diag(matrix) returns a new tensor, unlike diagonal(): writing into it leaves
    the matrix alone, eagerly and compiled."""
    for f in (lambda x: st.diag(x).add_(1), st.compile(lambda x: st.diag(x).add_(1))):
        x = st.arange(9.).reshape(3, 3)
        d = f(x)
        np.testing.assert_array_equal(d.numpy(), [1., 5., 9.])
        np.testing.assert_array_equal(x.numpy(), np.arange(9.).reshape(3, 3))
    assert st.diag(st.ones(2, 2))._base is None


FILL_DIAGONAL = [((3, 3), False, 5.), ((7, 3), True, 2.), ((7, 3), False, 2.), ((3, 7), True, 1.),
                 ((3, 3, 3), False, 4.), ((2, 2, 2, 2), False, 1.), ((8, 1), True, 3.),
                 ((0, 0), False, 1.), ((4, 4), False, True)]


@pytest.mark.parametrize("shape,wrap,value", FILL_DIAGONAL)
def test_fill_diagonal_matches_torch_eager_and_compiled(shape, wrap, value):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = torch.tensor(a).fill_diagonal_(value, wrap=wrap).numpy()
    np.testing.assert_array_equal(st.tensor(a).fill_diagonal_(value, wrap=wrap).numpy(), want)
    x = st.tensor(a)
    st.reset()
    out = st.compile(lambda x: x.fill_diagonal_(value, wrap=wrap) * 1)(x)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(x.numpy(), want)


def test_fill_diagonal_strided_grad_and_errors():
    for make in (lambda t: t.arange(9.).reshape(3, 3).t(),
                 lambda t: t.arange(27.).reshape(3, 3, 3).permute(2, 0, 1)):
        np.testing.assert_array_equal(make(st).fill_diagonal_(-1).numpy(),
                                      make(torch).fill_diagonal_(-1).numpy())
    x, tx = st.ones(3, 3, requires_grad=True), torch.ones(3, 3, requires_grad=True)
    for t, v in ((st, x), (torch, tx)):
        y = v * 2
        y.fill_diagonal_(t.tensor(0.))
        (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    for bad in (lambda t: t.ones(3).fill_diagonal_(1), lambda t: t.ones(2, 3, 3).fill_diagonal_(1),
                lambda t: t.ones(2, 2).fill_diagonal_(t.ones(2)), lambda t: t.ones(2, 2).fill_diagonal_("a")):
        with pytest.raises(Exception) as want:
            bad(torch)
        with pytest.raises(type(want.value), match=str(want.value)[:30].replace("(", r"\(").replace(")", r"\)")):
            bad(st)
