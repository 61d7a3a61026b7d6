# Fused groups that fall back to one kernel per member (fusion/fuse.c
# emit_group; counted by _C._fusion_stats). A group that computed only the
# constant parts of a cat (the zeros of a conv's padding, stored straight into
# their slices) had no buffer to size its kernel from ("no size for dim 0"):
# every padded conv of a compiled CNN step paid a kernel per zero block and a
# copy kernel per slab. The compiled programs here must lower with 0 fallbacks
# and agree with eager symtrace and with torch over several calls.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

F = st.nn.functional


def _stats_reset():
    _C._fusion_stats(True)


def _fallbacks():
    s = _C._fusion_stats()
    return s["fallbacks"], s["last_fallback"]


def test_fusion_stats_shape():
    s = _C._fusion_stats()
    assert set(s) == {"programs", "fused", "fallbacks", "last_fallback"}
    assert all(isinstance(s[k], int) and s[k] >= 0 for k in ("programs", "fused", "fallbacks"))
    _C._fusion_stats(True)
    assert _C._fusion_stats()["programs"] == 0


def test_pad_zero_parts_fuse():
    # F.pad's zeros are parts of a cat: each zero block's group stores only its slab
    def f(x):
        return F.pad(x, (1, 2, 1, 1)) * 2 + 1

    cf = st.compile(f)
    _stats_reset()
    rng = np.random.default_rng(0)
    for _ in range(3):
        xn = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
        out = cf(st.tensor(xn)).numpy()
        want = np.pad(xn, ((0, 0), (0, 0), (1, 1), (1, 2))) * 2 + 1
        np.testing.assert_allclose(out, want, rtol=1e-6)
    s = _C._fusion_stats()
    assert s["programs"] >= 1 and s["fused"] >= 1
    assert _fallbacks() == (0, "")


def test_cat_of_constants_and_values_fuse():
    def g(x):
        z = st.zeros(x.shape[0], 1, 2)
        o = st.full((x.shape[0], 2, 2), 3.0)
        return st.cat([z, x.sin(), o, z], 1)

    cg = st.compile(g)
    _stats_reset()
    rng = np.random.default_rng(1)
    for n in (2, 2, 2):
        xn = rng.standard_normal((n, 3, 2)).astype(np.float32)
        out = cg(st.tensor(xn)).numpy()
        z = np.zeros((n, 1, 2), np.float32)
        want = np.concatenate([z, np.sin(xn), np.full((n, 2, 2), 3.0, np.float32), z], 1)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(out, g(st.tensor(xn)).numpy(), rtol=1e-6, atol=1e-7)
    assert _fallbacks() == (0, "")
