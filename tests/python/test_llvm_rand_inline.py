# The LLVM backend's inline Philox4x32-10 (llvm_backend/codegen_expr.c,
# emit_rand): rand, rand_like and dropout through "llvm" equal "interp" bit
# for bit (compiled, and eager in a subprocess with
# SYMTRACE_EAGER_BACKEND=interp), in float32, float64, float16 and bfloat16,
# for small and 64-bit seeds and consecutive draws (advancing offsets); a
# numpy Philox as an independent reference for float64 (a block per point)
# and float32 (four points per block, 24 bits each); and the
# dropout kernel's loop is vectorized (SYMTRACE_DUMP_DIR .ll: vector
# multiplies by the Philox constant, no call to st_rand_uniform). Offsets
# whose low 32 bits wrap are covered in C (tests/c/test_llvm_random.c,
# test_rand_kernels: the generator's offset cannot be set from Python).
import glob
import os
import platform
import re
import subprocess
import sys

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F

DTYPES = ["float32", "float64", "float16", "bfloat16"]
SEEDS = [0, 1, 1234, 2**32 - 1, 2**32 + 7, 2**63 + 12345, 2**64 - 1]


def bits(t):
    """Exact bit patterns: float64 as uint64; the others widen to float32
    exactly (float16 and bfloat16 included) and compare as uint32."""
    if t.dtype == st.float64:
        return t.numpy().view(np.uint64)
    return np.ascontiguousarray(t.float().numpy()).view(np.uint32)


# ---- an independent Philox4x32-10 in numpy (runtime/random.c) ----
M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)


def philox_words(seed, ctr):
    """The four 32-bit words of Philox4x32-10 blocks at counters ctr (uint64)."""
    n = len(ctr)
    c0, c1 = ctr & MASK, ctr >> np.uint64(32)
    c2 = np.zeros(n, np.uint64)
    c3 = np.zeros(n, np.uint64)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & MASK)
    return c0, c1, c2, c3


def philox_u53(seed, offset, n):
    """float64: block offset + i, 53 bits of its first two words."""
    c0, c1, _, _ = philox_words(seed, np.arange(n, dtype=np.uint64) + np.uint64(offset % 2**64))
    b = ((c1 << np.uint64(32)) | c0) >> np.uint64(11)
    return b.astype(np.float64) * 2.0**-53


def philox_u24(seed, offset, n):
    """float32 and narrower: word i % 4 of block offset + i // 4, its top 24
    bits (four points per block; runtime/random.c st_rand_uniform_f)."""
    i = np.arange(n, dtype=np.uint64)
    words = np.stack(philox_words(seed, (i >> np.uint64(2)) + np.uint64(offset % 2**64)))
    w = words[(i & np.uint64(3)).astype(np.int64), np.arange(n)]
    return ((w >> np.uint64(8)).astype(np.float64) * 2.0**-24).astype(np.float32)


@pytest.mark.parametrize("seed", SEEDS)
def test_eager_rand_matches_numpy_philox(seed):
    n = 4099
    st.manual_seed(seed)
    a = st.rand(n, dtype=st.float64).numpy()
    b = st.rand(n, dtype=st.float64).numpy()   # the next n counters
    np.testing.assert_array_equal(a.view(np.uint64), philox_u53(seed, 0, n).view(np.uint64))
    np.testing.assert_array_equal(b.view(np.uint64), philox_u53(seed, n, n).view(np.uint64))
    st.manual_seed(seed)
    f = st.rand(n).numpy()
    g = st.rand(n).numpy()   # the next launch starts n blocks on
    np.testing.assert_array_equal(f.view(np.uint32), philox_u24(seed, 0, n).view(np.uint32))
    np.testing.assert_array_equal(g.view(np.uint32), philox_u24(seed, n, n).view(np.uint32))
    assert f.max() < 1


def _rand_fn(x):
    r = st.rand_like(x)
    return r, x * st.rand_like(x) + r


def _dropout_fn(x):
    return F.dropout(x, 0.1, True), F.dropout(x * 2, 0.5, training=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [_rand_fn, _dropout_fn], ids=["rand", "dropout"])
def test_compiled_llvm_equals_interp(dtype, fn):
    x = st.randn(8, 4, 33, 29).to(getattr(st, dtype))   # a vector tail per row
    xt = x.transpose(1, 3)                               # strided input
    cl = st.compile(fn, backend="llvm")
    ci = st.compile(fn, backend="interp")
    for seed in SEEDS[::2]:
        for inp in (x, xt):
            st.manual_seed(seed)
            outs_l = [cl(inp) for _ in range(3)]   # offsets advance per call
            st.manual_seed(seed)
            outs_i = [ci(inp) for _ in range(3)]
            for ol, oi in zip(outs_l, outs_i):
                for a, b in zip(ol, oi):
                    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
                    np.testing.assert_array_equal(bits(a), bits(b))
            assert not np.array_equal(bits(outs_l[0][0]), bits(outs_l[1][0]))


EAGER = r"""
import sys, numpy as np
import symtrace as st, symtrace.nn.functional as F
out = {}
x = st.arange(8 * 4 * 33 * 29, dtype=st.float32).reshape(8, 4, 33, 29) * 0.001 - 3
for dt in %r:
    xd = x.to(getattr(st, dt))
    for seed in %r:
        st.manual_seed(seed)
        vals = [st.rand(5003, dtype=getattr(st, dt)), F.dropout(xd, 0.1, True),
                F.dropout(xd.transpose(0, 2), 0.3, True), st.rand_like(xd)]
        for i, v in enumerate(vals):
            out["%%s_%%d_%%d" %% (dt, seed %% 1000, i)] = v.float().numpy() \
                if v.dtype != st.float64 else v.numpy()
np.savez(sys.argv[1], **out)
"""


def _eager_run(backend, path):
    env = dict(os.environ, SYMTRACE_EAGER_BACKEND=backend)
    code = EAGER % (DTYPES, SEEDS)
    r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return np.load(path)


def test_eager_llvm_equals_interp(tmp_path):
    a = _eager_run("llvm", str(tmp_path / "llvm.npz"))
    b = _eager_run("interp", str(tmp_path / "interp.npz"))
    assert sorted(a.files) == sorted(b.files) and len(a.files) == len(DTYPES) * len(SEEDS) * 4
    for k in a.files:
        va, vb = a[k], b[k]
        assert va.dtype == vb.dtype and va.shape == vb.shape, k
        u = np.uint64 if va.dtype == np.float64 else np.uint32
        np.testing.assert_array_equal(va.view(u), vb.view(u), err_msg=k)


DUMP = r"""
import symtrace as st, symtrace.nn.functional as F
x = st.randn(8, 4, 128, 128)
f = st.compile(lambda x: F.dropout(x, 0.1, True), backend="llvm")
y = f(x)
assert 0.08 < float((y == 0).float().mean()) < 0.12
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 vector code")
def test_dropout_kernel_vectorized(tmp_path):
    dump, cache = tmp_path / "dump", tmp_path / "cache"
    dump.mkdir()
    env = dict(os.environ, SYMTRACE_DUMP_DIR=str(dump), SYMTRACE_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, "-c", DUMP], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lls = [p for p in glob.glob(str(dump / "*.ll"))
           if re.search(r"; kernel \d+: k\d+_rand_ge", open(p).read(2000))]
    assert lls, "no .ll of the dropout kernel in the dump"
    for p in lls:
        text = open(p).read()
        assert "st_rand_uniform" not in text
        # the Philox multiplies, widened by the loop vectorizer
        assert re.search(r"mul nuw <\d+ x i(32|64)> [^\n]*3528531795", text), p
        assert re.search(r"<\d+ x float>", text), p
