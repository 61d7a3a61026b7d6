# scatter_add in compiled graphs: the copy of a base that no later kernel
# reads is skipped (the memory plan gives the result the base's storage,
# fusion/plan.c scatter_in_place), and a scatter whose indexed dim is not
# the last runs on every thread, split by columns (llvm_backend/jit.c).
# Values are checked against numpy's np.add.at; the plan's estimate against
# the caching allocator.
import numpy as np
import pytest

import symtrace as st


def np_scatter_add(base, dim, idx, src):
    out = base.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[dim] = idx[p]
        out[tuple(q)] += src[p]
    return out


def kernels(fn, *args):
    with st.profiler.profile() as prof:
        out = fn(*args)
    return out, [r.name for r in prof.rows]


@pytest.fixture(params=["llvm", "interp"])
def backend(request):
    if request.param == "llvm" and not st._C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    return request.param


def case(rows=64, cols=48, n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    idx = rng.integers(0, rows, size=n)  # repeats: accumulation order matters
    src = rng.standard_normal((n, cols)).astype(np.float32)
    return x, idx, src


def test_dead_base_takes_no_copy(backend):
    x, idx, src = case()

    def f(x, idx, src):
        base = x * 2.0
        return base.scatter_add(0, idx.unsqueeze(1).expand(-1, x.shape[1]), src) + 1.0

    cf = st.compile(f, backend=backend)
    args = (st.tensor(x), st.tensor(idx), st.tensor(src))
    cf(*args)
    out, names = kernels(cf, *args)
    want = np_scatter_add(x * 2.0, 0, np.repeat(idx[:, None], x.shape[1], 1), src) + 1.0
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    scatter = [n for n in names if "scatter_add" in n]
    # only the accumulating part runs: no "kN_scatter_add" copy of the base
    assert scatter and all("b_scatter_add" in n for n in scatter), names


def test_live_base_is_copied_and_kept(backend):
    x, idx, src = case(seed=1)

    def f(x, idx, src):
        base = x * 2.0
        out = base.scatter_add(0, idx.unsqueeze(1).expand(-1, x.shape[1]), src)
        return out, base * 3.0  # base is read after the scatter

    cf = st.compile(f, backend=backend)
    args = (st.tensor(x), st.tensor(idx), st.tensor(src))
    cf(*args)
    (out, after), names = kernels(cf, *args)
    ix = np.repeat(idx[:, None], x.shape[1], 1)
    np.testing.assert_allclose(out.numpy(), np_scatter_add(x * 2.0, 0, ix, src), rtol=1e-5, atol=1e-5)
    # base still holds x * 2 after the scatter: its copy was not skipped
    np.testing.assert_allclose(after.numpy(), x * 6.0, rtol=1e-6)


def test_input_base_is_not_written(backend):
    x, idx, src = case(seed=2)

    def f(x, idx, src):
        return x.scatter_add(0, idx.unsqueeze(1).expand(-1, x.shape[1]), src)

    cf = st.compile(f, backend=backend)
    tx = st.tensor(x)
    out = cf(tx, st.tensor(idx), st.tensor(src))
    np.testing.assert_array_equal(tx.numpy(), x)  # the input is untouched
    ix = np.repeat(idx[:, None], x.shape[1], 1)
    np.testing.assert_allclose(out.numpy(), np_scatter_add(x, 0, ix, src), rtol=1e-5, atol=1e-5)


def test_zeros_base_result_is_output_and_estimate_holds(backend):
    # the embedding-gradient shape: zeros, scatter rows, the result handed back
    x, idx, src = case(rows=512, cols=256, n=1024, seed=3)

    def f(idx, src):
        z = st.zeros(512, 256)
        return z.scatter_add(0, idx.unsqueeze(1).expand(-1, 256), src)

    args = (st.tensor(idx), st.tensor(src))
    est = st.memory.estimate(f, *args, measured=True, backend=backend)
    pe, pm = est.peak_estimated, est.peak_measured
    assert pm > 0 and abs(pm - pe) <= 0.02 * pe, (pe, pm)
    out = st.compile(f, backend=backend)(*args)
    ix = np.repeat(idx[:, None], 256, 1)
    np.testing.assert_allclose(out.numpy(), np_scatter_add(np.zeros((512, 256), np.float32), 0, ix, src),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1])
def test_threaded_scatter_matches_numpy(backend, dim):
    # large enough for the thread split (>= 32768 points); dim 1 indexes the
    # last dim and stays serial; both must equal a serial accumulation
    rng = np.random.default_rng(4 + dim)
    shape = (300, 256)
    base = rng.standard_normal(shape).astype(np.float32)
    src = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(0, shape[dim], size=shape)
    out = st.tensor(base).scatter_add(dim, st.tensor(idx), st.tensor(src))
    np.testing.assert_allclose(out.numpy(), np_scatter_add(base, dim, idx, src), rtol=1e-5, atol=1e-4)

    def f(b, i, s):
        return (b + 0.0).scatter_add(dim, i, s)

    cout = st.compile(f, backend=backend)(st.tensor(base), st.tensor(idx), st.tensor(src))
    np.testing.assert_allclose(cout.numpy(), np_scatter_add(base, dim, idx, src), rtol=1e-5, atol=1e-4)


def test_row_index_out_of_bounds_raises(backend):
    # gathers and scatters whose index is shared by a row (loaded once per
    # row in the llvm backend) still check it: an IndexError, not a crash
    import symtrace.nn.functional as F
    w = st.tensor(np.arange(40, dtype=np.float32).reshape(10, 4))
    ok = st.tensor(np.array([[1, 9], [0, 3]]))
    bad = st.tensor(np.array([[1, 9], [10, 3]]))
    emb = st.compile(lambda i, w: F.embedding(i, w) * 2.0, backend=backend)
    np.testing.assert_array_equal(emb(ok, w).numpy(), w.numpy()[ok.numpy()] * 2)
    with pytest.raises(IndexError):
        emb(bad, w)
    src = st.tensor(np.ones((3, 4), np.float32))
    sc = st.compile(lambda w, i, s: (w + 0.0).scatter_add(0, i.unsqueeze(1).expand(-1, 4), s),
                    backend=backend)
    # RuntimeError where the frame ran eagerly (torch's), IndexError from a graph's kernel
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
        sc(w, st.tensor(np.array([0, 10, 2])), src)
    out = sc(w, st.tensor(np.array([0, 9, 0])), src)
    want = w.numpy().copy()
    want[0] += 2
    want[9] += 1
    np.testing.assert_array_equal(out.numpy(), want)


def test_threaded_scatter_out_of_bounds_raises():
    # the column-split path (>= 32768 points) reports a bad index too
    w = st.zeros(100, 512)
    idx = np.random.default_rng(5).integers(0, 100, 200)
    idx[150] = 100
    with pytest.raises(RuntimeError, match="out of bounds"):   # torch's type for scatter_add
        w.scatter_add(0, st.tensor(idx).unsqueeze(1).expand(-1, 512), st.ones(200, 512))
