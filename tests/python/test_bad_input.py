# Bad input raises a Python exception of torch's type whose message names the
# operands' shapes, never a crash; and a fuzz test of >= 10,000 random calls in a
# subprocess (a segfault shows as a failing test with its return code).
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from conftest import names_shape


def raises(exc, fn, *shapes):
    with pytest.raises(exc) as ei:
        fn()
    msg = str(ei.value)
    assert msg, "empty error message"
    for s in shapes:
        assert names_shape(msg, s), "message %r does not name shape %s" % (msg, s)
    return msg


def test_add_shape_mismatch():
    a, b = st.zeros(2, 3), st.zeros(4, 5)
    raises(RuntimeError, lambda: a + b, (2, 3), (4, 5))
    raises(RuntimeError, lambda: st.add(a, b), (2, 3), (4, 5))
    raises(RuntimeError, lambda: st.mul(st.zeros(3), st.zeros(4)), (3,), (4,))
    raises(RuntimeError, lambda: st.where(st.zeros(2, dtype=st.bool), st.zeros(3), st.zeros(3)), (2,), (3,))


def test_matmul_shape_mismatch():
    raises(RuntimeError, lambda: st.zeros(2, 3) @ st.zeros(4, 5), (2, 3), (4, 5))
    raises(RuntimeError, lambda: st.matmul(st.zeros(2, 2, 3), st.zeros(2, 4, 5)), (2, 2, 3), (2, 4, 5))
    raises(RuntimeError, lambda: st.matmul(st.zeros(3), st.zeros(4)), (3,), (4,))
    raises(RuntimeError, lambda: st.matmul(st.zeros(2, 3, 4), st.zeros(3, 4, 5)), (2, 3, 4), (3, 4, 5))
    raises(RuntimeError, lambda: F.linear(st.zeros(2, 3), st.zeros(5, 4)), (2, 3), (5, 4))


def test_matmul_0d():
    raises(RuntimeError, lambda: st.matmul(st.tensor(1.0), st.zeros(3)))


def test_cat_shape_mismatch():
    raises(RuntimeError, lambda: st.cat([st.zeros(2, 3), st.zeros(2, 4)], 0), (2, 3), (2, 4))
    raises(RuntimeError, lambda: st.cat([st.zeros(2, 3), st.zeros(2, 3, 1)]), (2, 3), (2, 3, 1))
    raises(RuntimeError, lambda: st.stack([st.zeros(2, 3), st.zeros(3, 2)]), (2, 3), (3, 2))
    raises((RuntimeError, ValueError), lambda: st.cat([]))


def test_gather_index_dtype():
    raises(RuntimeError, lambda: st.gather(st.zeros(3, 4), 1, st.zeros(3, 2)))
    raises(RuntimeError, lambda: st.gather(st.zeros(3, 4), 1, st.zeros(3, 2, dtype=st.bool)))
    raises(RuntimeError, lambda: st.index_select(st.zeros(3, 4), 0, st.zeros(2)))


def test_where_condition_dtype():
    raises(RuntimeError, lambda: st.where(st.zeros(3), st.zeros(3), st.ones(3)))
    raises(RuntimeError, lambda: st.zeros(3).masked_fill(st.zeros(3), 1.0))


def test_mean_of_ints():
    raises(RuntimeError, lambda: st.mean(st.zeros(3, dtype=st.int64)))
    raises(RuntimeError, lambda: st.zeros(2, 3, dtype=st.int32).mean(1))


def test_dim_out_of_range():
    x = st.zeros(2, 3)
    for fn in (lambda: x.sum(2), lambda: x.sum(-3), lambda: st.softmax(x, 2), lambda: x.transpose(0, 2),
               lambda: x.unsqueeze(4), lambda: st.cat([x, x], 2), lambda: x.amax(5), lambda: x.argmax(2),
               lambda: x.permute(0, 2), lambda: st.index_select(x, 3, st.tensor([0])),
               lambda: x.split(1, 2), lambda: x.size(2), lambda: st.max(x, 2), lambda: x.flatten(0, 3)):
        msg = raises(IndexError, fn)
        assert "range" in msg or "dim" in msg, msg


def test_getitem_index_out_of_range():
    x = st.zeros(3, 4)
    raises(IndexError, lambda: x[3])
    raises(IndexError, lambda: x[-4])
    raises(IndexError, lambda: x[0, 4])
    raises(IndexError, lambda: x[0, 0, 0])
    raises(IndexError, lambda: x[st.tensor([0, 5])])
    raises(IndexError, lambda: x[st.zeros(2, 2, dtype=st.bool)], (2, 2), (3, 4))
    raises(IndexError, lambda: st.tensor(1.0)[0])

    def setitem():
        x[5] = 1.0
    raises(IndexError, setitem)


def test_gather_index_out_of_range():
    x = st.zeros(3, 4)
    raises(RuntimeError, lambda: st.gather(x, 1, st.tensor([[0, 4]])))
    raises(RuntimeError, lambda: st.gather(x, 1, st.tensor([[-1]])))
    raises(IndexError, lambda: st.index_select(x, 0, st.tensor([3])))
    raises(IndexError, lambda: F.embedding(st.tensor([10]), st.zeros(10, 2)))
    raises(IndexError, lambda: F.cross_entropy(st.zeros(2, 3), st.tensor([0, 3])))


def test_bad_reshape():
    x = st.zeros(2, 3)
    msg = raises(RuntimeError, lambda: x.reshape(4, 4), (4, 4))
    assert "6" in msg, msg
    raises(RuntimeError, lambda: x.view(5), (5,))
    raises(RuntimeError, lambda: x.reshape(-1, -1))
    raises(RuntimeError, lambda: x.view(-1, 4), (-1, 4))
    raises(RuntimeError, lambda: x.expand(3, 3), (3, 3))
    raises(RuntimeError, lambda: x.T.view(6))
    raises(RuntimeError, lambda: x.reshape(-2, 3))


def test_negative_sizes():
    for fn in (lambda: st.zeros(-1), lambda: st.ones(2, -3), lambda: st.empty((-1, 2)),
               lambda: st.full((-2,), 1.0), lambda: st.rand(-1), lambda: st.randn(3, -1),
               lambda: st.randint(0, 5, (-1,))):
        raises(RuntimeError, fn)
    raises(RuntimeError, lambda: st.arange(0, 5, 0))
    raises(RuntimeError, lambda: st.arange(5, 0, 1))
    raises(RuntimeError, lambda: st.randint(5, 5, (2,)))


def test_wrong_argument_kinds():
    x = st.zeros(2, 3)
    raises(TypeError, lambda: st.add(x, "a"))
    raises(TypeError, lambda: st.zeros("a"))
    raises(TypeError, lambda: x.reshape("a"))
    raises(TypeError, lambda: st.tensor([1, "a"]))
    raises(ValueError, lambda: st.tensor([[1, 2], [3]]))
    raises(TypeError, lambda: x.sum(1.5))
    raises((TypeError, RuntimeError, ValueError), lambda: x.to("float32x"))
    raises(IndexError, lambda: x[1.5])
    raises(RuntimeError, lambda: x.item())
    raises(RuntimeError, lambda: F.gelu(x, approximate="bogus"))
    raises(ValueError, lambda: F.cross_entropy(x, st.tensor([0, 1]), reduction="bogus"))
    raises(TypeError, lambda: st.cat(x))  # a tensor is not a sequence of tensors, as torch


def test_error_types_match_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda m: m.zeros(2, 3) + m.zeros(4, 5),
        lambda m: m.zeros(2, 3) @ m.zeros(4, 5),
        lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 4)]),
        lambda m: m.gather(m.zeros(3, 4), 1, m.zeros(3, 2)),
        lambda m: m.where(m.zeros(3), m.zeros(3), m.ones(3)),
        lambda m: m.mean(m.zeros(3, dtype=m.int64)),
        lambda m: m.zeros(2, 3).sum(2),
        lambda m: m.zeros(3)[3],
        lambda m: m.zeros(2, 3).reshape(4, 4),
        lambda m: m.zeros(-1),
        lambda m: m.zeros(2, 3).view(-1, -1),
        lambda m: m.zeros(3, dtype=m.bool) - m.zeros(3, dtype=m.bool),
        lambda m: -m.zeros(3, dtype=m.bool),
        lambda m: m.zeros(3, dtype=m.int64).add_(m.ones(3)),
        lambda m: m.zeros(3).add_(m.zeros(2, 3)),
        lambda m: m.zeros(2, 3).split(0),
        lambda m: m.zeros(2, 3).chunk(0),
        lambda m: m.zeros(2, 3).expand(3),
        lambda m: m.stack([]),
        lambda m: m.zeros(2).item(),
        lambda m: m.nn.functional.layer_norm(m.zeros(2, 3), (4,)),
        lambda m: m.nn.functional.softmax(m.zeros(2, 3), 5),
        lambda m: m.zeros(2, 3).permute(0, 0),
        lambda m: m.zeros(2, 3).squeeze(3),
    ]
    for i, c in enumerate(cases):
        try:
            c(torch)
        except Exception as e:
            texc = type(e)
        else:
            texc = None
        try:
            c(st)
        except (ValueError, TypeError, IndexError, RuntimeError, NotImplementedError) as e:
            sexc = e
        else:
            sexc = None
        if texc is None:
            assert sexc is None, "case %d: torch accepts, symtrace raised %r" % (i, sexc)
        else:
            assert sexc is not None, "case %d: torch raised %s, symtrace did not" % (i, texc.__name__)
            assert isinstance(sexc, texc), "case %d: torch raises %s, symtrace %r" % (i, texc.__name__, sexc)


# ---------------------------------------------------------------- fuzz
FUZZ = r'''
import os, random, sys, time
import numpy as np
import symtrace as st
import symtrace.nn.functional as F

N = int(os.environ.get("FUZZ_N", "10000"))
VERBOSE = os.environ.get("FUZZ_VERBOSE") == "1"
rng = random.Random(20240601)
nrng = np.random.default_rng(7)
DT = [st.float32, st.float64, st.float16, st.bfloat16, st.int32, st.int64, st.bool]
ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, NotImplementedError, OverflowError)
HUGE = [2**62, 2**63 - 1, 2**63, 2**64, 10**20, -2**63, -1, -2, -7]


def rand_shape():
    r = rng.choice([0, 1, 1, 2, 2, 3, 4])
    return tuple(rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(r))


def rand_tensor():
    shape = rand_shape()
    dt = rng.choice(DT)
    a = nrng.uniform(-3, 3, size=shape)
    t = st.tensor(a.astype(np.float32)).to(dt)
    k = rng.random()
    if k < 0.15 and t.dim() >= 2:
        t = t.transpose(0, 1)
    elif k < 0.25 and t.dim() >= 1 and t.shape[-1] > 1:
        t = t[..., ::2]
    elif k < 0.3 and t.dim() >= 1 and t.shape[0] == 1:
        t = t.expand(3, *t.shape[1:])
    return t


def rand_arg(depth=0):
    k = rng.random()
    if k < 0.40:
        return rand_tensor()
    if k < 0.55:
        return rng.choice([0, 1, 2, -1, 3, 5])
    if k < 0.62:
        return rng.choice([0.0, 0.5, -1.5, float("nan"), float("inf"), 1e30])
    if k < 0.66:
        return rng.choice([True, False])
    if k < 0.70:
        return None
    if k < 0.74:
        return rng.choice(["", "a", "mean", "sum", "none", "tanh", "float32"])
    if k < 0.82 and depth < 2:
        return tuple(rand_arg(depth + 1) if rng.random() < 0.2 else rng.choice([0, 1, 2, -1, 3])
                     for _ in range(rng.choice([0, 1, 2, 3])))
    if k < 0.86 and depth < 2:
        return [rand_tensor() for _ in range(rng.choice([0, 1, 2, 3]))]
    if k < 0.92:
        return rng.choice(HUGE)
    if k < 0.96:
        return rng.choice(DT)
    return rng.choice([object(), slice(None, None, 2), Ellipsis, [1, 2], {"a": 1}])


FUNCS = [st.add, st.sub, st.mul, st.div, st.pow, st.neg, st.exp, st.log, st.sqrt, st.rsqrt,
         st.tanh, st.sigmoid, st.relu, st.erf, st.abs, st.maximum, st.minimum, st.clamp,
         st.eq, st.lt, st.ge, st.logical_not, st.logical_and, st.where, st.sum, st.mean,
         st.amax, st.argmax, st.max, st.min, st.prod, st.matmul, st.cat, st.stack, st.split,
         st.chunk, st.index_select, st.gather, st.softmax, st.log_softmax, st.tensor,
         st.zeros, st.ones, st.full, st.arange, st.randint, st.from_dlpack,
         F.gelu, F.layer_norm, F.cross_entropy, F.linear, F.embedding, F.dropout]
METHODS = ["reshape", "view", "permute", "transpose", "expand", "squeeze", "unsqueeze",
           "flatten", "__getitem__", "__setitem__", "masked_fill", "to", "sum", "add_",
           "mul_", "copy_", "clamp_", "fill_", "split", "size", "stride", "__add__", "__rsub__",
           "__truediv__", "__rpow__", "__matmul__", "__and__", "__invert__", "item", "tolist",
           "contiguous", "numpy", "float", "long", "bool", "amax", "argmin", "softmax"]

counts = {}
bad = {}
t0 = time.time()
for i in range(N):
    if rng.random() < 0.55:
        target = rng.choice(FUNCS)
        args = [rand_arg() for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4]))]
        if args and rng.random() < 0.8:
            args[0] = rand_tensor()
        if len(args) > 1 and rng.random() < 0.5:
            args[1] = rand_tensor() if rng.random() < 0.6 else rng.choice([0, 1, -1, 2])
        name = getattr(target, "__name__", "?")
    else:
        self_t = rand_tensor()
        name = rng.choice(METHODS)
        args = [rand_arg() if rng.random() < 0.5 else rng.choice([0, 1, 2, -1, -2, 3])
                for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        target = getattr(self_t, name)
    kw = {}
    if rng.random() < 0.1:
        kw = {rng.choice(["dim", "keepdim", "dtype", "alpha", "out", "bogus"]): rand_arg()}
    if VERBOSE:
        sys.stderr.write("%d %s %s %s\n" % (i, name, kw, [(tuple(a.shape), str(a.dtype)) if isinstance(a, st.Tensor) else repr(a)[:40] for a in args]))
        sys.stderr.flush()
    try:
        target(*args, **kw)
        counts["ok"] = counts.get("ok", 0) + 1
    except ALLOWED as e:
        counts[type(e).__name__] = counts.get(type(e).__name__, 0) + 1
    except Exception as e:  # a wrong exception type: note it and go on (crashes are looked for too)
        key = (name, type(e).__name__)
        counts["BAD"] = counts.get("BAD", 0) + 1
        if key not in bad:
            bad[key] = "call %d: %s(%s, **%r) -> %s: %s" % (
                i, name, [(tuple(a.shape), str(a.dtype)) if isinstance(a, st.Tensor) else repr(a)[:60] for a in args],
                list(kw), type(e).__name__, str(e)[:200])
print("FUZZ DONE", N, "calls in %.1fs" % (time.time() - t0), counts)
if bad:
    print("BAD EXCEPTIONS (%d distinct):" % len(bad))
    for v in bad.values():
        print("  " + v)
    sys.exit(3)
print("FUZZ OK")
'''


def _run_fuzz(env_extra, timeout):
    env = dict(os.environ)
    env.update(env_extra)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pp = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = pp + os.pathsep + root if pp else root
    return subprocess.run([sys.executable, "-c", FUZZ], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=os.path.dirname(os.path.abspath(__file__)))


def test_fuzz_random_calls():
    try:
        r = _run_fuzz({"FUZZ_N": "20000"}, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("fuzz run did not finish within 240 s (a hang or a very slow op)")
    if r.returncode != 0 and r.returncode != 3:
        # find the crashing call: rerun with a call log
        try:
            rv = _run_fuzz({"FUZZ_N": "20000", "FUZZ_VERBOSE": "1"}, timeout=400)
            tail = "\n".join(rv.stderr.strip().splitlines()[-6:])
        except subprocess.TimeoutExpired as e:
            tail = "(rerun timed out)"
        pytest.fail("fuzz process died with return code %d (signal %s)\nlast calls:\n%s\nstdout:%s" % (
            r.returncode, -r.returncode if r.returncode < 0 else "-", tail, r.stdout[-2000:]))
    assert r.returncode == 0, "fuzz: exceptions of a type other than the allowed ones\n" + r.stdout[-6000:]
    assert "FUZZ OK" in r.stdout, r.stdout[-2000:]


def test_repeated_bad_call_raises_every_time():
    """A failed shape check must not leave the cached program trusting the bad
    shapes: the same bad call raises again (it once ran the kernel instead)."""
    assert tuple((st.zeros(2, 3) @ st.zeros(3, 5)).shape) == (2, 5)
    for _ in range(3):
        with pytest.raises(RuntimeError, match=r"2x3 and 4x5"):
            st.zeros(2, 3) @ st.zeros(4, 5)
    assert tuple((st.zeros(2, 3) @ st.zeros(3, 5)).shape) == (2, 5)
