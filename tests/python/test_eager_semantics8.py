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
