# Tensor identity kept while its data changes, and attributes users set on
# tensors: `t.data = other` (storage, dtype and shape swapped, autograd state
# kept), set_(), resize_() growing past the storage, lazy modules
# materializing in place (references taken before see the parameter), and
# `t.foo = value` on tensors and parameters (kept by deepcopy, guarded by
# symtrace.compile: a changed attribute is seen on the next call). Against
# torch where it is installed; the compiled cases need no torch (3.12 too).
import copy

import numpy as np
import pytest

import symtrace as st


def test_data_setter_as_torch(torch):
    for L in (st, torch):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).sum()
        y.backward()
        g = x.grad
        x.data = L.zeros(5, dtype=L.float64)
        assert x.requires_grad and x.is_leaf and x.dtype == L.float64 and tuple(x.shape) == (5,)
        assert x.grad is g                          # autograd state kept
        w = L.ones(2)
        v = w.view(2)
        w.data = L.zeros(4)
        assert v.tolist() == [1.0, 1.0] and w.tolist() == [0.0] * 4   # views keep the old storage
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            w.data = [1, 2]
    p = st.nn.Parameter(st.ones(2))
    q = p
    p.data = st.arange(3.0)
    assert q is p and isinstance(p, st.nn.Parameter) and p.tolist() == [0.0, 1.0, 2.0]


def _data_write_then_backward(L, how):
    w = L.ones(3, requires_grad=True)
    x = L.arange(3.0) + 1
    z = (w * x).exp()                   # exp saves its output z
    ver = z._version
    if how == "data":
        z.data.mul_(2)                  # autograd does not see it: the backward reads 2z
    elif how == "data_view":
        z.data[1:].mul_(2)
    elif how == "detach":
        z.detach().mul_(2)              # shares z's version: the backward refuses
    try:
        z.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return "raise", z._version - ver
    return [round(v, 4) for v in w.grad.tolist()], z._version - ver


@pytest.mark.parametrize("how", ["data", "data_view", "detach"])
def test_writes_through_data_move_no_version(how):
    got = _data_write_then_backward(st, how)
    e = np.exp(np.arange(3.0) + 1)
    want = {"data": ([round(v, 4) for v in 2 * e * (np.arange(3.0) + 1)], 0),
            "data_view": ([round(v, 4) for v in e * (np.arange(3.0) + 1) * [1, 2, 2]], 0),
            "detach": ("raise", 1)}[how]
    assert got[0] == pytest.approx(want[0], rel=1e-5) if how != "detach" else got[0] == "raise"
    assert got[1] == want[1]


@pytest.mark.parametrize("how", ["data", "data_view", "detach"])
def test_writes_through_data_as_torch(torch, how):
    a, b = _data_write_then_backward(st, how), _data_write_then_backward(torch, how)
    assert a[1] == b[1]
    assert a[0] == b[0] if how == "detach" else a[0] == pytest.approx(b[0], rel=1e-5)


def test_set_and_resize_as_torch(torch):
    for L in (st, torch):
        y = L.arange(6.0)
        x = L.ones(3)
        assert x.set_(y) is x and x.tolist() == list(range(6)) and x.data_ptr() == y.data_ptr()
        assert x._version == 1
        x = L.ones(3)
        assert x.set_(y, 1, (2, 2), (2, 1)).tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert tuple(L.ones(3).set_().shape) == (0,)
        with pytest.raises(RuntimeError, match="Could not set tensor of type long int to a tensor of type float"):
            L.ones(3).set_(L.arange(3))
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            L.ones(3, requires_grad=True).set_(y)
        x = L.arange(4.0)
        x.resize_(6)
        assert tuple(x.shape) == (6,) and x[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
        x = L.arange(4.0)[1:]
        x.resize_(2, 3)
        assert x.storage_offset() == 1 and x.reshape(-1)[:3].tolist() == [1.0, 2.0, 3.0]


def test_lazy_modules_materialize_in_place():
    m = st.nn.LazyLinear(4)
    w = m.weight
    opt = st.optim.SGD(m.parameters(), lr=0.1)   # built before the first call, as users do
    y = m(st.randn(2, 3))
    assert type(m) is st.nn.Linear and w is m.weight and type(w) is st.nn.Parameter
    assert tuple(w.shape) == (4, 3) and tuple(y.shape) == (2, 4)
    before = w.detach().clone()
    y.sum().backward()
    opt.step()                                   # the optimizer's reference is the parameter
    assert not np.allclose(w.detach().numpy(), before.numpy())
    b = st.nn.LazyBatchNorm1d()
    rm = b.running_mean
    b(st.randn(4, 5))
    assert rm is b.running_mean and tuple(rm.shape) == (5,) and type(rm) is st.Tensor


def test_attributes_on_tensors_and_parameters(torch):
    for L in (st, torch):
        t = L.ones(2)
        t.foo = [7]
        p = L.nn.Parameter(L.ones(2))
        p._no_weight_decay = True
        c = copy.deepcopy(t)
        assert c.foo == [7] and c.foo is not t.foo      # a tensor's attributes are deep-copied
        assert p._no_weight_decay is True
        assert not hasattr(copy.deepcopy(p), "_no_weight_decay")   # torch's Parameter drops them


def test_compiled_code_sees_tensor_attributes_change():
    def f(x):
        return x * x.scale

    cf = st.compile(f, backend="interp")
    x = st.ones(3)
    for s in (2.0, 5.0, 5.0, -1.0):
        x.scale = s
        assert cf(x).tolist() == [s] * 3

    def g(x):
        if hasattr(x, "tag"):
            return x + 1
        return x - 1

    cg = st.compile(g, backend="interp")
    y = st.ones(2)
    assert cg(y).tolist() == [0.0, 0.0]
    y.tag = 1
    assert cg(y).tolist() == [2.0, 2.0]
    del y.tag
    assert cg(y).tolist() == [0.0, 0.0]

    def h(m, x):   # a flag on a module's parameter, as optimizers' param-group code reads it
        return m(x) * (2 if getattr(m.weight, "_special", False) else 1)

    m = st.nn.Linear(3, 3)
    ch = st.compile(h, backend="interp")
    x = st.randn(2, 3)
    a = ch(m, x)
    m.weight._special = True
    np.testing.assert_allclose(ch(m, x).detach().numpy(), 2 * a.detach().numpy(), rtol=1e-6)

    def k(x):      # an attribute set inside the compiled function sticks, as eager
        x.seen = True
        return x * 2

    z = st.ones(2)
    assert st.compile(k, backend="interp")(z).tolist() == [2.0, 2.0] and z.seen is True

    def d(x):      # .data swapped between calls: the new shape and values are used
        return x.sum()

    cd = st.compile(d, backend="interp")
    w = st.ones(3)
    assert cd(w).item() == 3.0
    w.data = st.ones(5, dtype=st.float64)
    assert cd(w).item() == 5.0 and cd(w).dtype == st.float64


def test_save_load_keeps_tensor_attributes(tmp_path):
    t = st.ones(2)
    t.foo = [7, st.zeros(1)]
    p = st.nn.Parameter(st.ones(3))
    p._no_weight_decay = True
    st.save({"t": t, "p": p, "again": t}, tmp_path / "a.pt")
    r = st.load(tmp_path / "a.pt")
    assert r["t"].foo[0] == 7 and r["t"].foo[1].tolist() == [0.0]
    assert r["p"]._no_weight_decay is True and isinstance(r["p"], st.nn.Parameter)
    assert r["again"] is r["t"]


def test_detach_inplace_as_torch(torch):
    for L in (st, torch):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        assert y.detach_() is y and not y.requires_grad and y.grad_fn is None and y.is_leaf
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            (x * 2)[0:1].detach_()
        x.detach_()
        assert not x.requires_grad
        h = (L.ones(3, requires_grad=True) * 3).sum()
        L.detach_(h)                          # truncated BPTT's hidden.detach_()
        assert h.grad_fn is None
