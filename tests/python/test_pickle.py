# pickle / copy.copy / multiprocessing of tensors, Parameters, Modules and optimizer
# state (Tensor.__reduce_ex__ in symtrace/_tensor.py, Module.__getstate__ /
# __setstate__): every dtype, 0-d, empty and non-contiguous tensors bit-exact with
# their strides, pickle protocols 0-5 and out-of-band buffers, views of one storage
# sharing it after unpickling, requires_grad and leafness (as torch), Parameters and
# subclasses, models with buffers and hooks (equal forward and backward after the
# round trip), optimizer state, spawn queues and pools, and clear Python errors for
# what does not pickle (compiled functions, lambdas, corrupt data); compiled modules
# pickle as their module and options.
# CUDA tensors take a host copy; there is no GPU here, only the CPU path and the
# error of unpickling a CUDA storage without a GPU are tested. The `torch` fixture
# (skipped without torch, e.g. in .venv312) adds checks against torch's behaviour.
import copy
import multiprocessing
import operator
import pickle
import time
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from symtrace._tensor import Tensor
from symtrace.utils.hooks import RemovableHandle
from tensor_data import raw, make as _make

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"]
SHAPES = [(), (0,), (3, 0, 2), (7,), (2, 3, 4)]
PROTOCOLS = list(range(pickle.HIGHEST_PROTOCOL + 1))


def make(dtype, shape, seed=0):
    return _make(dtype, shape, seed, int_high=1000)


def roundtrip(obj, protocol=pickle.DEFAULT_PROTOCOL):
    return pickle.loads(pickle.dumps(obj, protocol=protocol))


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert raw(a) == raw(b)


# ---------------------------------------------------------------- tensors
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_dtype_and_shape_round_trips_bit_exact(dtype, shape):
    t = make(dtype, shape)
    r = roundtrip(t)
    same(r, t)
    assert r.stride() == t.stride() and r.storage_offset() == 0
    assert r.is_leaf and not r.requires_grad and r.device == "cpu"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol(protocol):
    t = make("float32", (3, 4))
    views = (t, t.T, t[1:, ::2], t[2], t[0, 0])
    got = roundtrip(views, protocol)
    for g, v in zip(got, views):
        same(g, v)
        assert g.stride() == v.stride() and g.storage_offset() == v.storage_offset()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_views_keep_strides_and_offset(dtype):
    t = make(dtype, (4, 6))
    for v in (t.T, t[1:, 2:], t[:, ::3], t[3], t.permute(1, 0)[2:], t[1:2, 1:5].T,
              make(dtype, (3, 1)).expand(3, 5), make(dtype, (5,))[4]):
        r = roundtrip(v)
        same(r, v)
        assert r.stride() == v.stride(), (v.stride(), r.stride())
        assert r.storage_offset() == v.storage_offset()


def test_views_of_one_storage_share_it_after_unpickling():
    t = st.arange(10.0)
    a, b = t[1:], t[:2]
    for protocol in PROTOCOLS:
        T, A, B = roundtrip((t, a, b), protocol)
        T[1] = 50.0
        assert A[0].item() == 50.0 and B[1].item() == 50.0, protocol
        A[-1] = 7.0
        assert T[9].item() == 7.0
        assert T._storage_id() == A._storage_id() == B._storage_id()
        assert t.tolist() == list(range(10))          # the original is untouched
    # the storage is written once: three views cost about one tensor
    assert len(pickle.dumps((t, a, b))) < len(pickle.dumps(t)) + 200


def test_views_without_their_base_still_share():
    t = st.arange(12.0).reshape(3, 4)
    rows, col = roundtrip((t[1], t[:, 2]))
    rows[2] = -1.0                        # t[1, 2] is in both
    assert col[1].item() == -1.0
    d = roundtrip({"a": t[0], "b": [t[2], t.T]})
    d["b"][1][3, 0] = 99.0                # t[0, 3]
    assert d["a"][3].item() == 99.0


def test_one_tensor_twice_is_one_object_and_separate_pickles_do_not_share():
    t = st.randn(5)
    x, y = roundtrip((t, t))
    assert x is y
    u, v = roundtrip(t), roundtrip(t)
    u[0] = 1234.0
    assert v[0].item() != 1234.0


def test_unpickled_tensor_is_its_own_tensor_and_usable():
    t = st.randn(4, 3)
    r = roundtrip(t)
    r.add_(1.0)                           # in place on a fresh, non-view tensor
    assert np.allclose(r.numpy(), t.numpy() + 1.0)
    r.requires_grad_(True)
    (r * r).sum().backward()
    assert np.allclose(r.grad.numpy(), 2 * r.detach().numpy())


def test_slice_pickles_its_whole_storage_as_torch():
    big = st.randn(10000)
    s = pickle.dumps(big[:2])
    assert len(s) > 10000 * 4                 # torch: the whole storage too
    same(roundtrip(big[:2]), big[:2])
    assert len(pickle.dumps(big[:2].clone())) < 1000


def test_a_view_after_its_storage_was_pickled_elsewhere_in_time():
    """The storage is read when first pickled in a dump, later writes belong to later dumps."""
    t = st.zeros(3)
    s1 = pickle.dumps(t)
    t[0] = 5.0
    s2 = pickle.dumps(t[:2])
    assert pickle.loads(s1).tolist() == [0.0, 0.0, 0.0]
    assert pickle.loads(s2).tolist() == [5.0, 0.0]


def test_protocol_5_out_of_band_buffers():
    t = st.randn(1000)
    bufs = []
    s = pickle.dumps((t, t[10:]), protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1 and len(s) < 1000
    a, b = pickle.loads(s, buffers=bufs)
    same(a, t)
    a[10] = 3.0
    assert b[0].item() == 3.0
    a[0] = 1e6                              # a copy: the original is not aliased
    assert t[0].item() != 1e6


def test_requires_grad_leaf_non_leaf_and_grad():
    x = st.randn(3, requires_grad=True)
    x.grad = st.ones(3)
    r = roundtrip(x)
    assert r.requires_grad and r.is_leaf and r.grad is None and r.grad_fn is None
    y = x * 2                               # a non-leaf: its data, as a leaf that requires grad
    r = roundtrip(y)
    assert r.requires_grad and r.is_leaf and r.grad_fn is None
    assert np.allclose(r.detach().numpy(), y.detach().numpy())
    with pytest.raises(RuntimeError, match="leaves"):
        copy.deepcopy(y)                    # as torch: deepcopy refuses non-leaves
    z = roundtrip(x.detach())
    assert not z.requires_grad


def test_gradient_hooks_are_not_pickled_and_warn():
    x = st.randn(3, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    with pytest.warns(UserWarning, match="will not be serialized"):
        r = roundtrip(x)
    r.sum().backward()
    assert r.grad.tolist() == [1.0, 1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        roundtrip(st.randn(3, requires_grad=True))   # no hooks: no warning


def test_copy_copy_shares_memory_as_torch():
    t = st.arange(6.0)
    c = copy.copy(t)
    assert c is not t and c.tolist() == t.tolist()
    c[0] = 100.0
    assert t[0].item() == 100.0
    v = copy.copy(t[2:])
    v[0] = -1.0
    assert t[2].item() == -1.0
    d = copy.deepcopy(t)
    d[1] = 42.0
    assert t[1].item() == 1.0


class TaggedTensor(Tensor):
    pass


class SlotTensor(Tensor):
    __slots__ = ("tag",)


def test_subclasses_and_their_attributes():
    t = st._C._make_subclass(TaggedTensor, st.randn(3), False)
    t.note = {"k": 1}
    r = roundtrip(t)
    assert type(r) is TaggedTensor and r.note == {"k": 1}
    same(r, t)
    s = st._C._make_subclass(SlotTensor, st.randn(2), True)
    s.tag = "w"
    r = roundtrip(s)
    assert type(r) is SlotTensor and r.tag == "w" and r.requires_grad


def test_large_tensor_is_fast_and_raw():
    a = np.arange(16 * 1024 * 1024, dtype=np.float32)
    big = st.tensor(a)                        # 64 MiB
    for protocol in (4, 5):
        t0 = time.perf_counter()
        s = pickle.dumps(big, protocol=protocol)
        t1 = time.perf_counter()
        r = pickle.loads(s)
        t2 = time.perf_counter()
        assert len(s) < big.numel() * 4 + 1000    # raw bytes, no per-element objects
        assert np.array_equal(r.numpy(), a)
        assert t1 - t0 < 2.0 and t2 - t1 < 2.0, (protocol, t1 - t0, t2 - t1)
        del s, r


# ---------------------------------------------------------------- errors
def test_corrupt_data_raises_unpickling_error():
    t = st.randn(4)
    fn, (storage, *rest) = t.__reduce_ex__(4)
    sfn, (dt, n, dev, data, order) = storage.__reduce_ex__(4)
    with pytest.raises(pickle.UnpicklingError, match="holds 15 bytes, expected 16"):
        sfn(dt, n, dev, data[:-1], order)
    with pytest.raises(pickle.UnpicklingError, match="bad storage"):
        sfn("float32", n, dev, data, order)
    with pytest.raises(pickle.UnpicklingError, match="corrupt"):
        fn("not a storage", *rest)
    good = sfn(dt, n, dev, data, order)
    with pytest.raises(RuntimeError, match="outside the storage"):
        fn(good, 2, (4,), (1,), False, Tensor, None)


def test_cuda_storage_without_a_gpu_is_a_clear_error():
    if st.cuda.is_available():
        pytest.skip("a GPU is usable here")
    t = st.randn(4)
    _, (storage, *rest) = t.__reduce_ex__(4)
    sfn, (dt, n, _, data, order) = storage.__reduce_ex__(4)
    with pytest.raises(RuntimeError, match="CUDA.*is_available"):
        sfn(dt, n, "cuda:0", data, order)


@pytest.mark.skipif(not st.cuda.is_available(), reason="needs a GPU")
def test_cuda_tensor_round_trips_on_its_device():  # pragma: no cover (no GPU in CI)
    t = st.randn(3, 4).cuda()
    T, v = roundtrip((t, t[1:].T))
    assert T.device == t.device and v.device == t.device
    assert T.cpu().equal(t.cpu()) and v.cpu().equal(t[1:].T.cpu())
    T[1, 0] = 5.0
    assert v[0, 0].item() == 5.0


def test_compiled_function_raises_type_error():
    f = st.compile(lambda x: x + 1)
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(f)


def test_optimized_module_pickles_as_its_module_and_options():
    """As torch's OptimizedModule: the module and the compile options travel,
    the compiled code does not; the copy compiles on its first call."""
    m = st.compile(nn.Linear(2, 2), backend="interp")
    x = st.randn(3, 2)
    want = m(x).detach()
    r = roundtrip(m)
    assert type(r) is type(m) and isinstance(r._orig_mod, nn.Linear)
    assert r._st_opts == m._st_opts
    assert r._orig_mod is not m._orig_mod
    np.testing.assert_array_equal(r(x).detach().numpy(), want.numpy())
    assert isinstance(roundtrip(m._orig_mod), nn.Linear)


def test_unpicklable_hook_is_a_python_error():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, a, o: o)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(m)


# ---------------------------------------------------------------- Parameters and modules
def test_parameter_round_trips():
    p = nn.Parameter(st.randn(3, 2))
    q = roundtrip(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.is_leaf
    same(q, p)
    f = nn.Parameter(st.ones(2, dtype=st.int64), requires_grad=False)
    g = roundtrip(f)
    assert type(g) is nn.Parameter and not g.requires_grad
    c = copy.copy(p)
    assert type(c) is nn.Parameter and c.requires_grad
    c.data.fill_(0.0)
    assert p.abs().sum().item() == 0.0            # copy.copy shares memory, as torch
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and d._storage_id() != p._storage_id()


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = nn.LayerNorm(8)
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("running", st.zeros(8))
        self.register_buffer("scratch", st.ones(3), persistent=False)
        self.scale = 0.5

    def forward(self, x):
        h = self.norm(self.fc1(x)).relu()
        if self.training:
            self.running.mul_(0.9).add_(h.detach().mean(0) * 0.1)
        return self.fc2(h) * self.scale + self.scratch


def _double_output(module, args, output):
    return output * 2


_pre_calls = []


def _count_pre(module, args):
    _pre_calls.append(type(module).__name__)


def _grads(m):
    return {n: p.grad.numpy().copy() for n, p in m.named_parameters()}


def test_model_round_trips_with_buffers_and_runs_equal():
    st.manual_seed(0)
    m = _Net()
    x = st.randn(5, 4)
    m(x)                                          # buffers moved off their init
    m2 = roundtrip(m)
    assert type(m2) is _Net and m2.scale == 0.5 and m2.training
    assert set(m2.state_dict()) == set(m.state_dict())
    assert "scratch" in m2._non_persistent_buffers_set
    for (n, a), (_, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        same(a, b)
    for n, p in m2.named_parameters():
        assert type(p) is nn.Parameter and p.requires_grad, n
    m.eval(), m2.eval()
    y, y2 = m(x), m2(x)
    assert raw(y) == raw(y2)
    y.sum().backward()
    y2.sum().backward()
    g, g2 = _grads(m), _grads(m2)
    assert g.keys() == g2.keys() and all(np.array_equal(g[k], g2[k]) for k in g)
    assert m.fc1.weight._storage_id() != m2.fc1.weight._storage_id()


def test_model_with_hooks_round_trips_and_hook_ids_stay_unique(monkeypatch):
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m.register_forward_hook(_double_output)
    m[0].register_forward_pre_hook(_count_pre)
    x = st.randn(2, 3)
    s = pickle.dumps(m)
    # a fresh process counts handle ids from 0 again: the next id may be one in the pickle
    monkeypatch.setattr(RemovableHandle, "_next_id", min(m._forward_hooks))
    m2 = pickle.loads(s)
    assert m2._has_hooks and m2[0]._has_hooks and not m2[1]._has_hooks
    _pre_calls.clear()
    assert raw(m2(x)) == raw(m(x))
    assert _pre_calls == ["Linear", "Linear"]
    seen = []
    h = m2.register_forward_hook(lambda mod, a, o: seen.append(1))   # must not replace _double_output
    assert len(m2._forward_hooks) == 2
    assert raw(m2(x)) == raw(m(x)) and seen == [1]
    h.remove()
    assert list(m2._forward_hooks.values())[0][0] is _double_output


def test_tied_weights_stay_tied():
    emb = nn.Embedding(10, 4)
    head = nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    m = nn.ModuleList([emb, head])
    m2 = roundtrip(m)
    assert m2[0].weight is m2[1].weight
    shared = nn.Linear(3, 3)
    m3 = roundtrip(nn.Sequential(shared, nn.ReLU(), shared))
    assert m3[0] is m3[2]
    w = nn.Parameter(st.randn(4, 4))             # a Parameter and a view of it
    a, b = roundtrip((w, w[1]))
    with st.no_grad():
        a[1, 0] = 9.0
    assert b[0].item() == 9.0


def test_deepcopy_model_still_works():
    st.manual_seed(1)
    m = _Net()
    m.register_forward_hook(_double_output)
    m2 = copy.deepcopy(m)
    x = st.randn(3, 4)
    m.eval(), m2.eval()
    assert raw(m(x)) == raw(m2(x))
    assert m2.fc1.weight._storage_id() != m.fc1.weight._storage_id()
    with st.no_grad():
        m2.fc1.weight.fill_(0.0)
    assert m.fc1.weight.abs().sum().item() > 0


def test_copy_copy_module_shares_parameters_as_torch():
    m = nn.Linear(2, 2)
    c = copy.copy(m)
    assert c is not m and c.weight is m.weight


# ---------------------------------------------------------------- optimizers
def _train(m, opt, x, steps):
    for _ in range(steps):
        opt.zero_grad()
        m(x).square().mean().backward()
        opt.step()


@pytest.mark.parametrize("make_opt", [lambda p: st.optim.Adam(p, lr=1e-2),
                                      lambda p: st.optim.SGD(p, lr=0.1, momentum=0.9)],
                         ids=["Adam", "SGD"])
def test_optimizer_state_dict_pickles_and_deepcopies(make_opt):
    st.manual_seed(2)
    m = _Net()
    opt = make_opt(m.parameters())
    x = st.randn(6, 4)
    _train(m, opt, x, 2)
    sd = opt.state_dict()
    for sd2 in (roundtrip(sd), copy.deepcopy(sd)):
        assert sd2["param_groups"] == sd["param_groups"]
        assert sd2["state"].keys() == sd["state"].keys()
        for k, st_ in sd["state"].items():
            for name, v in st_.items():
                if isinstance(v, st.Tensor):
                    same(sd2["state"][k][name], v)
                else:
                    assert sd2["state"][k][name] == v
    # model and optimizer pickled together resume as the original
    m2, opt2 = roundtrip((m, opt))
    assert opt2.param_groups[0]["params"][0] is m2.fc1.weight
    assert all(p in opt2.state for p in m2.parameters() if p in opt2.state)
    _train(m, opt, x, 2)
    _train(m2, opt2, x, 2)
    for (n, a), (_, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert np.allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7), n
    # a fresh optimizer loads the unpickled state dict
    m3 = copy.deepcopy(m)
    opt3 = make_opt(m3.parameters())
    opt3.load_state_dict(roundtrip(opt.state_dict()))
    _train(m, opt, x, 1)
    _train(m3, opt3, x, 1)
    for (n, a), (_, b) in zip(m.state_dict().items(), m3.state_dict().items()):
        assert np.allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7), n


# ---------------------------------------------------------------- save / load unchanged
def test_symtrace_save_load_unaffected(tmp_path):
    t = st.arange(6.0)
    obj = {"t": t, "v": t[2:], "p": nn.Parameter(st.randn(2))}
    st.save(obj, tmp_path / "a.pt")
    r = st.load(tmp_path / "a.pt")
    r["t"][3] = 30.0
    assert r["v"][1].item() == 30.0 and type(r["p"]) is nn.Parameter
    m = _Net()
    st.save(m, tmp_path / "m.pt")                  # a whole module (weights_only=False to load)
    m2 = st.load(tmp_path / "m.pt", weights_only=False)
    assert type(m2) is _Net and m2.fc1.weight.equal(m.fc1.weight)


# ---------------------------------------------------------------- multiprocessing
def _forking_roundtrip(obj):
    from multiprocessing.reduction import ForkingPickler
    return pickle.loads(ForkingPickler.dumps(obj))


def test_multiprocessing_pickler_refuses_non_leaf_that_requires_grad_as_torch():
    x = st.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        _forking_roundtrip(x * 2)
    with pytest.raises(RuntimeError, match="detach"):
        _forking_roundtrip({"a": [x[1:]]})
    r = _forking_roundtrip((x, (x * 2).detach(), nn.Parameter(st.ones(2))))
    assert r[0].requires_grad and r[0].is_leaf and not r[1].requires_grad
    assert type(r[2]) is nn.Parameter
    t = st.arange(5.0)
    a, b = _forking_roundtrip((t, t[2:]))
    a[3] = -3.0                          # views still share their storage
    assert b[1].item() == -3.0


def test_spawn_queue_and_pool():
    ctx = multiprocessing.get_context("spawn")
    t = st.randn(4, 5)
    p = nn.Parameter(st.randn(3))
    q = ctx.Queue()
    proc = ctx.Process(target=q.put, args=((t[1:].T, p, st.tensor(True)),))   # the child puts it back
    proc.start()
    try:
        v, p2, b = q.get(timeout=60)
    finally:
        proc.join(timeout=60)
    assert proc.exitcode == 0
    same(v, t[1:].T)
    assert v.stride() == t[1:].T.stride()
    assert type(p2) is nn.Parameter and p2.requires_grad and p2.equal(p)
    assert b.item() is True
    with ctx.Pool(1) as pool:
        r = pool.apply(operator.neg, (t[::2],))
    assert np.array_equal(r.numpy(), -t[::2].numpy())


# ---------------------------------------------------------------- torch parity
def test_torch_parity_leafness_copy_and_strides(torch):
    for lib in (torch, st):
        x = lib.ones(3, requires_grad=True)
        r = roundtrip(x * 2)
        assert r.requires_grad and r.is_leaf and r.grad_fn is None, lib.__name__
        x.grad = lib.ones(3)
        assert roundtrip(x).grad is None, lib.__name__
        t = lib.arange(6.0)
        c = copy.copy(t)
        c[0] = 100.0
        assert t[0].item() == 100.0, lib.__name__
    tt, ts = torch.randn(4, 3), st.randn(4, 3)
    for a, b in ((tt.t(), ts.T), (tt[1:, ::2], ts[1:, ::2]), (tt[:, :1].expand(4, 5), ts[:, :1].expand(4, 5))):
        ra, rb = roundtrip(a), roundtrip(b)
        assert tuple(ra.stride()) == tuple(rb.stride()) and ra.storage_offset() == rb.storage_offset()
    # both pickle a slice's whole storage
    assert len(pickle.dumps(torch.zeros(10000)[:2])) > 40000
    assert len(pickle.dumps(st.zeros(10000)[:2])) > 40000
    for lib in (torch, st):                      # multiprocessing refuses non-leaves, pickle does not
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Cowardly"):
            _forking_roundtrip(x * 2)
        assert roundtrip(x * 2).requires_grad
    tp, sp = roundtrip(torch.nn.Parameter(torch.randn(2))), roundtrip(nn.Parameter(st.randn(2)))
    assert type(tp).__name__ == type(sp).__name__ == "Parameter" and tp.requires_grad and sp.requires_grad


def test_torch_values_round_trip_through_both(torch):
    """A symtrace tensor built from a torch tensor's bytes, pickled, equals torch's own pickle round trip."""
    a = torch.randn(3, 4, dtype=torch.float64)
    b = st.tensor(a.numpy().tolist(), dtype=st.float64)
    assert np.array_equal(roundtrip(a).numpy(), roundtrip(b).numpy())
