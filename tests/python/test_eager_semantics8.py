"""Eager parity, round 8: linspace's values (torch's kernel arithmetic), in-place ops
whose operands overlap the written tensor, and checkpoints readable both ways between
symtrace.save / load and torch.save / load."""
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
