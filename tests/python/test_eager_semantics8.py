"""Eager parity, round 8: linspace's values (torch's kernel arithmetic), in-place ops
whose operands overlap the written tensor, and checkpoints readable both ways between
symtrace.save / load and torch.save / load."""
import math
import random

import pytest

import symtrace as st


# ---- linspace: torch's kernel, value for value

def _as_list(t):
    if t.dtype in (st.float16, st.bfloat16):
        t = t.float()
    return t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16",
                                   "int64", "int32", "int16", "int8", "uint8"])
def test_linspace_matches_torch_bitwise(dtype):
    torch = pytest.importorskip("torch")
    rng = random.Random(dtype)
    for _ in range(60):
        if dtype.startswith(("int", "uint")):
            lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-3000, 3000)}.get(
                dtype, (-10 ** 6, 10 ** 6))
            s, e = rng.randint(lo, hi), rng.randint(lo, hi)
        else:
            mag = 10 ** rng.uniform(-4, 4)
            s, e = rng.uniform(-mag, mag), rng.uniform(-mag, mag)
        n = rng.choice([2, 3, 7, 8, 16, 17, 33, 50, 100, 257, 4097])
        want = torch.linspace(s, e, n, dtype=getattr(torch, dtype))
        got = st.linspace(s, e, n, dtype=getattr(st, dtype))
        want = want.float().tolist() if dtype in ("float16", "bfloat16") else want.tolist()
        assert _as_list(got) == want, (s, e, n)


def test_linspace_known_values():
    # torch.linspace(2.3673799335066334, -4.989873172751189, 8, dtype=float64): one fused
    # multiply-add per element (start + step * 3 rounded once)
    r = st.linspace(2.3673799335066334, -4.989873172751189, 8, dtype=st.float64).tolist()
    assert r[3] == -0.7857285406038617 and r[4] == -1.8367646986406936
    assert st.linspace(-766, 574, 31, dtype=st.int64).tolist()[15] == -95
    assert st.linspace(6, 1, 50).tolist()[34] == 2.5306122303009033


# ---- checkpoints: symtrace.save's default is torch's layout; torch.save's files load

_DTS = ["float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool"]


def _st_obj():
    base = st.arange(12.0).reshape(3, 4)
    obj = {name: st.tensor([1, 0, 3], dtype=getattr(st, name)) for name in _DTS}
    obj.update({"T": base.T, "row": base[1], "base": base, "solo_T": st.arange(6.0).reshape(2, 3).T,
                "nested": [st.zeros(2), {"k": (1, st.ones(1, dtype=st.bfloat16)), "s": {1, 2}}],
                "dt": st.int8, "dev": st.device("cpu"), "p": st.nn.Parameter(st.ones(2))})
    return obj


def test_symtrace_default_save_loads_in_torch_weights_only():
    torch = pytest.importorskip("torch")
    import io
    buf = io.BytesIO()
    st.save(_st_obj(), buf)                       # no format argument
    buf.seek(0)
    r = torch.load(buf, weights_only=True)
    for name in _DTS:
        want = [True, False, True] if name == "bool" else [1, 0, 3]
        assert r[name].dtype == getattr(torch, name) and r[name].tolist() == want, name
    assert r["T"].stride() == (1, 4) and r["solo_T"].stride() == (1, 3)
    assert r["solo_T"].tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    r["T"][1, 1] = 100.0                          # views of one storage still share it
    assert r["row"][1].item() == 100.0 and r["base"][1, 1].item() == 100.0
    assert r["nested"][1]["k"][1].dtype == torch.bfloat16 and r["nested"][1]["s"] == {1, 2}
    assert r["dt"] is torch.int8 and r["dev"] == torch.device("cpu")
    assert type(r["p"]) is torch.nn.Parameter and r["p"].requires_grad


def test_symtrace_module_state_dict_into_torch_module():
    torch = pytest.importorskip("torch")
    import io
    st.manual_seed(0)
    sm = st.nn.Sequential(st.nn.Linear(3, 4), st.nn.BatchNorm1d(4))
    sm(st.randn(5, 3))
    buf = io.BytesIO()
    st.save(sm.state_dict(), buf)
    buf.seek(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    tm.load_state_dict(torch.load(buf, weights_only=True))
    for k, v in sm.state_dict().items():
        assert tm.state_dict()[k].tolist() == v.tolist(), k


def test_torch_save_loads_in_symtrace_with_sharing():
    torch = pytest.importorskip("torch")
    import io
    base = torch.arange(12.0).reshape(3, 4)
    obj = {name: torch.tensor([1, 0, 3]).to(getattr(torch, name)) for name in _DTS}
    obj.update({"T": base.T, "row": base[1], "nested": [torch.zeros(2), {"k": (1, torch.ones(1))}],
                "p": torch.nn.Parameter(torch.ones(2)), "s": {1, 2}})
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    r = st.load(buf)
    for name in _DTS:
        assert r[name].dtype == getattr(st, name) and r[name].tolist() == obj[name].tolist(), name
    assert r["T"].stride() == (1, 4) and r["s"] == {1, 2}
    r["T"][1, 1] = 100.0
    assert r["row"][1].item() == 100.0
    assert type(r["p"]) is st.nn.Parameter and r["p"].requires_grad


class _Sub(st.Tensor):
    __slots__ = ()


def test_default_save_keeps_subclass_and_protocol_2():
    import io
    import pickle
    t = st._C._make_subclass(_Sub, st.arange(3.0), False)
    buf = io.BytesIO()
    st.save({"t": t, "s": {1, 2}, "fs": frozenset({3})}, buf)
    assert st.serialization.DEFAULT_PROTOCOL == 2
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="_Sub"):
        st.load(buf)                              # weights_only: the class must be allowlisted
    buf.seek(0)
    r = st.load(buf, weights_only=False)
    assert type(r["t"]) is _Sub and r["t"].tolist() == [0.0, 1.0, 2.0]
    assert r["s"] == {1, 2} and r["fs"] == frozenset({3})


# ---- in-place ops whose operand overlaps the written tensor

_MSG = "single memory location"


def _x(lib=st):
    return lib.arange(16.0).reshape(4, 4)


# written tensor or operand not dense (torch's TOO_HARD): torch runs it, each element
# reading what the ones before it in TensorIterator's order wrote
_ORDERED = {
    "strided_T_mul_rows": (lambda x: x[..., 1::2].T.mul_(x[:2]),
                           [[0, 0, 2, 12], [4, 0, 6, 0], [8, 18, 10, 66], [12, 156, 14, 0]]),
    "strided_T_add_rows": (lambda x: x[..., 1::2].T.add_(x[:2]),
                           [[0, 1, 2, 7], [4, 6, 6, 13], [8, 11, 10, 17], [12, 20, 14, 28]]),
    "mul_by_own_column": (lambda x: x.mul_(x[:, 0:1]),
                          [[0, 0, 0, 0], [16, 80, 96, 112], [64, 576, 640, 704],
                           [144, 1872, 2016, 2160]]),
    "setitem_T_from_row": (lambda x: x.T[1:].__setitem__(Ellipsis, x[:1]),
                           [[0, 0, 0, 0], [4, 0, 0, 0], [8, 0, 0, 0], [12, 0, 0, 0]]),
    "setitem_T_slice_from_row": (lambda x: x.T.__setitem__(slice(1, None), x[:1]),
                                 [[0, 0, 0, 0], [4, 0, 0, 0], [8, 0, 0, 0], [12, 0, 0, 0]]),
    # computed in Python (Tensor._via, add_ with an alpha): the same order
    "addcmul_own_column": (lambda x: x.addcmul_(x[:, :1], x[:, :1], value=0.5),
                           [[0, 1, 2, 3], [12, 77, 78, 79], [40, 809, 810, 811],
                            [84, 3541, 3542, 3543]]),
    "add_alpha_own_column": (lambda x: x.add_(x[:, :1], alpha=2),
                             [[0, 1, 2, 3], [12, 29, 30, 31], [24, 57, 58, 59], [36, 85, 86, 87]]),
    "lerp_interleaved": (lambda x: x[:, ::2].lerp_(x[:, 1::2], 0.5),
                         [[0.5, 1, 2.5, 3], [4.5, 5, 6.5, 7], [8.5, 9, 10.5, 11], [12.5, 13, 14.5, 15]]),
}


@pytest.mark.parametrize("case", sorted(_ORDERED))
def test_too_hard_overlap_is_written_in_torch_order(case):
    fn, want = _ORDERED[case]
    x = _x()
    fn(x)
    assert x.tolist() == want


# both dense and sharing some elements (torch's PARTIAL): torch's error
_REFUSED = {
    "addcmul_T": lambda x: x.addcmul_(x.T, x),
    "clamp_tensor_min": lambda x: x.T.clamp_(min=x[0]),
    "lerp_": lambda x: x.T.lerp_(x, 0.5),
    "atan2_": lambda x: x.atan2_(x.T),
    "add_alpha": lambda x: x.add_(x.T, alpha=2),
    "copy_broadcast_row": lambda x: x.copy_(x[1]),
    "mask_setitem": lambda x: x.__setitem__(x[0] > 1, x[1]),
    "index_setitem_row": lambda x: x.__setitem__(st.tensor([1, 2]), x[0]),
    "index_put_": lambda x: x.index_put_((st.tensor([1, 2]),), x[0]),
    "size1_strides_differ": lambda x: x[1:2].mul_(x[1:3:2]),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_partial_overlap_is_refused(case):
    x = _x()
    with pytest.raises(RuntimeError, match=_MSG):
        _REFUSED[case](x)
    assert x.tolist() == _x().tolist()          # nothing written


def test_overlap_that_torch_allows_still_runs():
    x = _x()
    x[x[0] > 1] = x[0, 0]                        # one element under a mask: masked_fill
    assert x[2:].tolist() == [[0.0] * 4] * 2
    x = _x()
    x[st.tensor([1, 2])] = x[st.tensor([0, 1])]   # the value is a gathered copy
    assert x[1:3].tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    x = _x()
    x.mul_(x)                                    # the same view: no order dependence
    assert x[3].tolist() == [144.0, 169.0, 196.0, 225.0]


def _view(t, steps):
    for s in steps:
        if s[0] == "transpose":
            t = t.transpose(s[1], s[2])
        elif s[0] == "select":
            t = t.select(s[1], s[2])
        elif s[0] == "narrow":
            t = t.narrow(s[1], s[2], s[3])
        elif s[0] == "step":
            idx = [slice(None)] * t.dim()
            idx[s[1]] = slice(s[2], None, s[3])
            t = t[tuple(idx)]
    return t


def _random_view(rng, shape):
    steps, shp = [], list(shape)
    for _ in range(rng.randint(0, 3)):
        k, nd = rng.choice(["T", "select", "narrow", "step"]), len(shp)
        if k == "T" and nd >= 2:
            a, b = rng.sample(range(nd), 2)
            steps.append(("transpose", a, b))
            shp[a], shp[b] = shp[b], shp[a]
        elif k == "select" and nd >= 2:
            d = rng.randrange(nd)
            steps.append(("select", d, rng.randrange(shp[d])))
            shp.pop(d)
        elif k == "narrow" and shp[rng.randrange(nd)] >= 2:
            d = max(range(nd), key=lambda i: shp[i])
            s = rng.randrange(shp[d] - 1)
            n = rng.randint(1, shp[d] - s)
            steps.append(("narrow", d, s, n))
            shp[d] = n
        elif k == "step":
            d, stp = rng.randrange(nd), rng.choice([2, 3])
            o = rng.randrange(min(stp, shp[d]))
            steps.append(("step", d, o, stp))
            shp[d] = len(range(o, shp[d], stp))
    return steps, shp


def test_inplace_overlap_sweep_against_torch():
    torch = pytest.importorskip("torch")
    rng = random.Random(8)
    ops = {
        "add_": lambda o, y: o.add_(y), "add_alpha": lambda o, y: o.add_(y, alpha=2),
        "sub_": lambda o, y: o.sub_(y), "mul_": lambda o, y: o.mul_(y), "div_": lambda o, y: o.div_(y),
        "copy_": lambda o, y: o.copy_(y), "addcmul_": lambda o, y: o.addcmul_(y, y, value=0.5),
        "clamp_": lambda o, y: o.clamp_(min=y), "lerp_": lambda o, y: o.lerp_(y, 0.25),
        "setitem": lambda o, y: o.__setitem__(Ellipsis, y),
    }
    checked = 0
    for _ in range(700):
        base = rng.choice([(4, 4), (3, 5), (2, 3, 4), (6,)])
        osteps, oshape = _random_view(rng, base)
        isteps, ishape = _random_view(rng, base)
        if not oshape or len(ishape) > len(oshape) or not all(
                a == b or a == 1 for a, b in zip(ishape[::-1], oshape[::-1])):
            continue
        name = rng.choice(sorted(ops))
        got = []
        for lib in (torch, st):
            x = lib.arange(float(math.prod(base))).reshape(base) + 1
            try:
                ops[name](_view(x, osteps), _view(x, isteps))
                got.append(x.tolist())
            except RuntimeError as e:
                got.append(("error", _MSG in str(e)))
        assert got[0] == got[1], (name, osteps, isteps)
        checked += 1
    assert checked > 150


# ---- reductions: dtype=, keepdim, dim tuples, empty dims

def test_reduction_edge_cases_as_torch():
    x = st.tensor([[1.5, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="prod\\(\\): argument 'dim' must be int, not tuple"):
        st.prod(x, dim=(0,))
    with pytest.raises(TypeError, match="must be int"):
        x.prod(dim=())
    r = st.nansum(x, dtype=st.int32)
    assert r.dtype == st.int32 and r.item() == 10
    assert st.nansum(st.tensor([True, True, False]), 0, dtype=st.int32).dtype == st.int32
    with pytest.raises(RuntimeError, match="expected input to have floating point"):
        st.nanmean(st.tensor([True, False]), dtype=st.float32)
    with pytest.raises(RuntimeError, match="could not infer output dtype.*Got: Long"):
        st.nanmean(x, dtype=st.int64)
    e = st.zeros(1, 0)
    assert tuple(st.linalg.vector_norm(e, float("inf"), 0).shape) == (0,)
    assert tuple(st.norm(e, p=float("inf"), dim=(-2,), keepdim=True).shape) == (1, 0)
    assert tuple(st.linalg.vector_norm(e, -1.0, 0).shape) == (0,)
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on an empty tensor"):
        st.linalg.vector_norm(e, -1.0)
    with pytest.raises(RuntimeError, match="-inf norm on the dimension 1"):
        st.linalg.vector_norm(e, float("-inf"), 1)


def test_reduction_sweep_against_torch():
    torch = pytest.importorskip("torch")
    rng = random.Random(4)
    dts = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"]
    ops = ["sum", "prod", "mean", "nansum", "nanmean", "cumsum", "cumprod", "logsumexp", "amax", "amin",
           "argmax", "argmin", "std", "var", "norm", "all", "any", "count_nonzero", "std_mean", "var_mean"]

    def run(lib, name, shape, dt, vals, kw):
        x = lib.tensor(vals, dtype=getattr(lib, dt)).reshape(shape)
        kw = {k: getattr(lib, v) if k == "dtype" else v for k, v in kw.items()}
        try:
            r = getattr(lib, name)(x, **kw)
        except Exception as e:
            return ("error", type(e).__name__)
        rs = r if isinstance(r, tuple) else (r,)
        return [(str(t.dtype).split(".")[-1], tuple(t.shape), t.double().tolist()) for t in rs]

    def same(a, b):
        if isinstance(a, tuple) or isinstance(b, tuple):
            return a == b
        if len(a) != len(b):
            return False
        for (da, sa, va), (db, sb, vb) in zip(a, b):
            if da != db or sa != sb:
                return False
            fa = torch.tensor(va, dtype=torch.float64).reshape(-1)
            fb = torch.tensor(vb, dtype=torch.float64).reshape(-1)
            tol = 2e-2 if da in ("float16", "bfloat16") else 1e-5
            if not torch.allclose(fa, fb, rtol=tol, atol=tol, equal_nan=True):
                return False
        return True

    for trial in range(500):
        nd = rng.randint(0, 3)
        shape = tuple(rng.choice([0, 1, 3]) if rng.random() < 0.15 else rng.randint(1, 4) for _ in range(nd))
        dt, name = rng.choice(dts), rng.choice(ops)
        n = math.prod(shape)
        vals = ([rng.random() < 0.5 for _ in range(n)] if dt == "bool" else
                [rng.randint(0, 5) for _ in range(n)] if dt == "uint8" else
                [rng.randint(-4, 5) for _ in range(n)] if dt.startswith("int") else
                [round(rng.uniform(-3, 3), 2) for _ in range(n)])
        kw = {}
        if name in ("cumsum", "cumprod"):
            kw["dim"] = rng.randint(-nd, nd - 1) if nd else 0
        elif name in ("argmax", "argmin", "prod"):
            if rng.random() < 0.6:
                kw["dim"] = rng.randint(-nd, nd - 1) if nd else 0
        elif rng.random() < 0.7 and nd:
            kw["dim"] = rng.randint(-nd, nd - 1) if rng.random() < 0.5 else \
                tuple(rng.sample(range(-nd, 0), rng.randint(1, nd)))
        elif name == "logsumexp":
            kw["dim"] = 0 if nd else ()
            if not nd:
                continue          # torch.logsumexp(x, ()) fails inside torch (a shape error)
        if "dim" in kw and name not in ("cumsum", "cumprod", "count_nonzero") and rng.random() < 0.4:
            kw["keepdim"] = True
        if name in ("sum", "prod", "mean", "nansum", "nanmean", "cumsum", "cumprod") and rng.random() < 0.3:
            kw["dtype"] = rng.choice(["float64", "float32", "int64", "int32"])
        if name in ("std", "var", "std_mean", "var_mean") and rng.random() < 0.5:
            kw["correction"] = rng.choice([0, 1, 2])
        if name == "norm" and rng.random() < 0.5:
            kw["p"] = rng.choice([1, 3, float("inf"), -1.0, 0])
        a, b = run(torch, name, shape, dt, vals, kw), run(st, name, shape, dt, vals, kw)
        assert same(a, b), (name, dt, shape, kw, a, b)
