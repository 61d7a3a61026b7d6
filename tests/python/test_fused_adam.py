# The fused Adam / AdamW update (symtrace/optim/_fused.py) and the
# CompiledGraph.run(out=, consts=) it runs through (frontend/graph_bind.c):
# fused against the op-by-op path (fused=False) and against torch.optim over
# 20 steps (Adam/AdamW, weight decay, amsgrad, maximize, small and large
# lerp weights, float32 and float64), one kernel per update (two under
# amsgrad) serving every parameter size, float16/bfloat16 close to a float32
# reference, the step counter (state_dict round trip, a step tensor changed
# from outside), version counters, out= checks (shape, dtype, device,
# aliasing an input that another point or a later kernel reads), consts=
# for one run only, a run inside a trace failing the trace (and an aborted
# trace putting the written tensor back), and a compiled training step equal
# to the eager one.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim
from symtrace import _C
from symtrace.optim import _fused

try:
    import torch
except ImportError:      # the Python 3.12 venv: the torch comparisons are skipped
    torch = None

SHAPES = [(7, 5), (13,), (3, 4, 6), (1,), ()]
NP = {st.float32: np.float32, st.float64: np.float64}


def npy(t):
    return np.array(t.detach().numpy())


def make(dtype, seed=0):
    """Two lists of symtrace parameters and one of torch's (None without
    torch), equal."""
    rng = np.random.default_rng(seed)
    vals = [rng.standard_normal(s).astype(NP[dtype]) for s in SHAPES]
    th = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in vals] if torch else None
    return [[nn.Parameter(st.tensor(v.copy())) for v in vals] for _ in range(2)] + [th]


def run3(name, kw, dtype, steps=20, seed=0):
    """fused, op by op and torch (when present) over `steps` steps; returns
    the three parameter lists and optimizers."""
    a, b, t = make(dtype, seed)
    oa = getattr(optim, name)(a, fused=None, **kw)
    ob = getattr(optim, name)(b, fused=False, **kw)
    ot = getattr(torch.optim, name)(t, **kw) if torch else None
    rng = np.random.default_rng(seed + 1)
    for k in range(steps):
        for i, (x, y) in enumerate(zip(a, b)):
            z = t[i] if t else None
            if k == 5 and i == 1:       # a parameter without a gradient this step
                x.grad = y.grad = None
                if z is not None:
                    z.grad = None
                continue
            g = rng.standard_normal(tuple(x.shape)).astype(NP[dtype])
            x.grad, y.grad = st.tensor(g), st.tensor(g.copy())
            if z is not None:
                z.grad = torch.from_numpy(g.copy())
        oa.step()
        ob.step()
        if ot:
            ot.step()
    return (a, b, t), (oa, ob, ot)


VARIANTS = [
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, betas=(0.85, 0.95))),
    ("AdamW", dict(lr=0.01, weight_decay=0.0)),
    ("AdamW", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, eps=1e-3, weight_decay=0.05, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.01, maximize=True)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.9))),          # lerp weight 0.7: torch's other form
    ("AdamW", dict(lr=0.05, betas=(0.5, 0.9), weight_decay=0.2)),   # weight exactly 0.5
]
# max abs difference after 20 steps, parameter and state (float32: a few
# ulp of values of order 1; float64 far below)
TOL = {st.float32: 2e-6, st.float64: 1e-13}


@pytest.mark.parametrize("dtype", [st.float32, st.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kw", VARIANTS)
def test_fused_matches_op_by_op_and_torch(name, kw, dtype):
    (a, b, t), (oa, ob, ot) = run3(name, kw, dtype)
    tol = TOL[dtype]
    # the op-by-op path computes the lerp as m + w * (g - m) always; torch
    # (and the fused update) as g - (g - m) * (1 - w) when w >= 0.5
    same_order = kw.get("betas", (0.9,))[0] > 0.5
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.dtype == dtype
        if same_order:
            np.testing.assert_array_equal(npy(x), npy(y))
        np.testing.assert_allclose(npy(x), npy(y), rtol=0, atol=tol)
        sa, sb = oa.state[x], ob.state[y]
        assert list(sa.keys()) == list(sb.keys())
        assert sa["step"].item() == sb["step"].item() == 20 - (i == 1)
        assert sa["step"].dtype == st.float32 and sa["step"].shape == ()
        for key in sa:
            if key != "step":
                np.testing.assert_allclose(npy(sa[key]), npy(sb[key]), rtol=0, atol=tol)
        if ot is None:
            continue
        z = t[i]
        sz = ot.state[z]
        np.testing.assert_allclose(npy(x), npy(z), rtol=0, atol=tol)
        assert list(sa.keys()) == list(sz.keys())
        assert sa["step"].item() == sz["step"].item()
        for key in sz:
            if key != "step":
                np.testing.assert_allclose(npy(sa[key]), npy(sz[key]), rtol=0, atol=tol)
    # the parameters moved
    assert not np.allclose(npy(a[0]), npy(make(dtype)[0][0]))


def test_one_kernel_serves_every_size():
    (a, _, _), _ = run3("AdamW", dict(lr=0.01, weight_decay=0.1), st.float32, steps=2)
    key = (st.float32, "cpu", True, True, False, False, True)
    u = _fused._CACHE[key]
    assert len(u.parts) == 1 and u.parts[0].compiled.num_kernels == 1
    assert u.parts[0].compiled.kernel_kinds == ["elementwise"]
    # amsgrad: 5 inputs + 4 results exceed a kernel's 8 buffers: two kernels
    run3("Adam", dict(lr=0.01, amsgrad=True), st.float32, steps=1)
    ua = _fused._CACHE[(st.float32, "cpu", False, False, True, False, True)]
    assert [p.compiled.num_kernels for p in ua.parts] == [1, 1]
    # every variant fuses
    for dt in (st.float32, st.float64, st.float16, st.bfloat16):
        for dec, wd in ((True, True), (False, True), (False, False)):
            for ams in (False, True):
                for mx in (False, True):
                    u = _fused.get_update(dt, "cpu", dec, wd, ams, mx, True)
                    assert [p.compiled.num_kernels for p in u.parts] == ([1, 1] if ams else [1])


@pytest.mark.parametrize("dtype", [st.float16, st.bfloat16], ids=["f16", "bf16"])
def test_half_types_close_to_float32(dtype):
    rng = np.random.default_rng(3)
    vals = [rng.standard_normal(s).astype(np.float32) for s in SHAPES[:3]]
    ph = [nn.Parameter(st.tensor(v).to(dtype)) for v in vals]
    pf = [nn.Parameter(st.tensor(v).to(dtype).to(st.float32)) for v in vals]
    oh = optim.AdamW(ph, lr=0.01, weight_decay=0.1)
    of = optim.AdamW(pf, lr=0.01, weight_decay=0.1)
    for _ in range(5):
        for x, y in zip(ph, pf):
            g = st.tensor(rng.standard_normal(x.shape).astype(np.float32))
            x.grad, y.grad = g.to(dtype), g.to(dtype).to(st.float32)
        oh.step()
        of.step()
    tol = 1e-2 if dtype == st.float16 else 4e-2
    for x, y in zip(ph, pf):
        assert x.dtype == dtype and oh.state[x]["exp_avg"].dtype == dtype
        np.testing.assert_allclose(npy(x.to(st.float32)), npy(y), rtol=tol, atol=tol)
    assert len([k for k in _fused._CACHE if k[0] == dtype]) >= 1


def test_non_contiguous_or_mixed_falls_back():
    base = st.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    p = nn.Parameter(base.clone())
    q = nn.Parameter(base.clone())
    o1 = optim.AdamW([p], lr=0.1)
    o2 = optim.AdamW([q], lr=0.1, fused=False)
    g = st.tensor(np.ones((4, 3), dtype=np.float32)).t()     # a non-contiguous gradient
    assert not g.is_contiguous()
    assert not _fused.supported((p, g, st.zeros(3, 4), st.zeros(3, 4)))
    p.grad, q.grad = g, g.clone()
    o1.step()
    o2.step()
    np.testing.assert_array_equal(npy(p), npy(q))
    p.grad = g
    with pytest.raises(RuntimeError, match="fused=True"):
        optim.AdamW([p], lr=0.1, fused=True).step()
    assert not _fused.supported((p, st.zeros(3, 4, dtype=st.float64), st.zeros(3, 4), st.zeros(3, 4)))


def test_versions_bumped():
    p = nn.Parameter(st.randn(4, 3))
    o = optim.AdamW([p], lr=0.1)
    p.grad = st.randn(4, 3)
    o.step()
    v0 = p._version
    m0 = o.state[p]["exp_avg"]._version
    s0 = o.state[p]["step"]._version
    o.step()
    assert p._version > v0 and o.state[p]["exp_avg"]._version > m0
    assert o.state[p]["step"]._version == s0 + 1


def test_state_dict_round_trip_and_outside_step_changes():
    rng = np.random.default_rng(11)
    (a, b, _), (oa, ob, _) = run3("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True), st.float32, steps=4)
    sd = oa.state_dict()
    assert sorted(sd["state"]) == list(range(len(SHAPES)))
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert sd["state"][0]["step"].item() == 4.0
    c = [nn.Parameter(x.detach().clone()) for x in a]
    oc = optim.AdamW(c, lr=5.0, fused=None)
    oc.load_state_dict(sd)
    assert oc.param_groups[0]["lr"] == 0.01 and oc.param_groups[0]["amsgrad"]

    def steps(n):
        for _ in range(n):
            for x, y, z in zip(a, b, c):
                g = rng.standard_normal(tuple(x.shape)).astype(np.float32)
                x.grad, y.grad, z.grad = st.tensor(g), st.tensor(g.copy()), st.tensor(g.copy())
            oa.step()
            ob.step()
            oc.step()
    steps(3)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(npy(z), npy(x))     # the loaded optimizer continues exactly
        np.testing.assert_allclose(npy(x), npy(y), rtol=0, atol=2e-6)
        assert oc.state[z]["step"].item() == oa.state[x]["step"].item() == 7.0
    # a step counter written from outside is read back (not the mirror)
    for o, ps in ((oa, a), (ob, b), (oc, c)):
        for x in ps:
            o.state[x]["step"].fill_(100.0)
    steps(2)
    for x, y, z in zip(a, b, c):
        assert oa.state[x]["step"].item() == 102.0
        np.testing.assert_array_equal(npy(z), npy(x))
        np.testing.assert_allclose(npy(x), npy(y), rtol=0, atol=2e-6)
    # a step tensor replaced by another object
    for o, ps in ((oa, a), (ob, b)):
        for x in ps:
            o.state[x]["step"] = st.tensor(50.0)
    steps(1)
    for x, y in zip(a, b):
        assert oa.state[x]["step"].item() == 51.0
        np.testing.assert_allclose(npy(x), npy(y), rtol=0, atol=2e-6)


# ---------------- CompiledGraph.run(out=, consts=) ----------------

def op(g, o, *ins):
    return g.op(o, ins)[0]


def axpb():
    """y = x * a + b, a and b constants."""
    g = _C.Graph()
    x = g.input((8,), st.float32)
    a, b = g.const(2.0, st.float32), g.const(1.0, st.float32)
    g.output(op(g, _C.OP_ADD, op(g, _C.OP_MUL, x, a), b))
    return g, a, b


def test_out_writes_in_place_and_consts_for_one_run():
    g, a, b = axpb()
    cg = g.compile()
    x = st.tensor(np.arange(8, dtype=np.float32))
    v0 = x._version
    (r,) = cg.run(x, out=(x,))
    assert r is x and x._version > v0
    np.testing.assert_array_equal(npy(x), np.arange(8) * 2 + 1)
    (r,) = cg.run(x, out=(x,), consts={a: 0.5, b: -1.0})
    np.testing.assert_array_equal(npy(x), (np.arange(8) * 2 + 1) * 0.5 - 1)
    # consts= holds for that run only
    y = st.ones(8)
    np.testing.assert_array_equal(npy(cg.run(y)[0]), np.full(8, 3.0))
    # another size, another tensor: the same compiled graph
    z = st.zeros(5)
    out = st.empty(5)
    (r,) = cg.run(z, out=(out,), consts={b: 7.0})
    assert r is out
    np.testing.assert_array_equal(npy(out), np.full(5, 7.0))
    np.testing.assert_array_equal(npy(z), np.zeros(5))
    # a view of a bigger tensor, written through
    big = st.zeros(4, 2)
    flat = big.view(-1)
    cg.run(st.ones(8), out=(flat,))
    np.testing.assert_array_equal(npy(big), np.full((4, 2), 3.0))
    # None allocates as before
    (r,) = cg.run(st.ones(8), out=(None,))
    np.testing.assert_array_equal(npy(r), np.full(8, 3.0))


def test_in_place_update_equals_out_of_place():
    # the fused update written into its inputs (the vectorized loop, llvm:
    # annotated parallel) against fresh results, on sizes around the vector
    # width and a large one
    rng = np.random.default_rng(5)
    sc = _fused.Scalars(0.01, 0.9, 0.999, 1e-8, 0.1, True, 3.0)
    u = _fused.get_update(st.float32, "cpu", True, True, False, False, True)
    cg, consts = u.parts[0].compiled, sc.for_update(u)[0]
    for n in (1, 7, 33, 1000, 100003):
        p, g, m = (st.tensor(rng.standard_normal(n).astype(np.float32)) for _ in range(3))
        v = st.tensor(rng.random(n).astype(np.float32))
        ref = [npy(t) for t in cg.run(p, g, m, v, consts=consts)]
        r = cg.run(p, g, m, v, out=(p, m, v), consts=consts)
        assert r[0] is p and r[1] is m and r[2] is v
        for a, b in zip((p, m, v), ref):
            np.testing.assert_array_equal(npy(a), b)


def test_out_errors():
    g, a, b = axpb()
    cg = g.compile()
    x = st.ones(8)
    with pytest.raises(ValueError, match=r"out\[0\] has shape \[4\]"):
        cg.run(x, out=(st.ones(4),))
    with pytest.raises(TypeError, match=r"out\[0\] is float64"):
        cg.run(x, out=(st.ones(8, dtype=st.float64),))
    with pytest.raises(ValueError, match="1 outputs"):
        cg.run(x, out=(x, x))
    with pytest.raises(TypeError, match=r"out\[0\] must be a Tensor"):
        cg.run(x, out=(3,))
    with pytest.raises(ValueError, match="not a constant"):
        cg.run(x, consts={0: 1.0})            # value 0 is the input
    with pytest.raises(TypeError, match="keywords"):
        cg.run(x, outs=(x,))
    # a leaf that requires grad, with grad enabled
    p = nn.Parameter(st.ones(8))
    with pytest.raises(RuntimeError, match="requires grad"):
        cg.run(x, out=(p,))
    with st.no_grad():
        cg.run(x, out=(p,))
    np.testing.assert_array_equal(npy(p), np.full(8, 3.0))
    # an out on another storage offset than the input it shares storage with
    big = st.ones(16)
    with pytest.raises(ValueError, match=r"out\[0\] shares storage with input 0 but is not the same"):
        cg.run(big[:8], out=(big[8:],))
    np.testing.assert_array_equal(npy(big), np.ones(16))


@pytest.mark.skipif(not st.cuda.is_available(), reason="needs a GPU")
def test_out_on_another_device():
    g, a, b = axpb()
    cg = g.compile()
    with pytest.raises(ValueError, match=r"out\[0\] is on cuda"):
        cg.run(st.ones(8), out=(st.ones(8).to("cuda"),))


def test_out_alias_read_by_a_later_kernel():
    # out 0 = x + 1 (kernel 0); out 1 = sum(x) (a later reduce kernel reads x)
    g = _C.Graph()
    x = g.input((8,), st.float32)
    y = op(g, _C.OP_ADD, x, g.const(1.0, st.float32))
    s = g.op(_C.OP_SUM, (x,), (None, None, (0,), 0, None))[0]
    g.output(y, s)
    cg = g.compile()
    assert cg.num_kernels == 2
    t = st.ones(8)
    with pytest.raises(ValueError, match=r"out\[0\] aliases input 0, which kernel .* reads after"):
        cg.run(t, out=(t, None))
    np.testing.assert_array_equal(npy(t), np.ones(8))     # nothing written
    r = st.empty(8)
    y1, s1 = cg.run(t, out=(r, None))
    assert y1 is r and float(s1) == 8.0


def test_out_alias_read_at_another_point():
    # y = x.T + x: the writer reads x at the transposed point too
    g = _C.Graph()
    x = g.input((4, 4), st.float32)
    xt = g.op(_C.OP_PERMUTE, (x,), (None, None, (1, 0), 0, None))[0]
    g.output(op(g, _C.OP_ADD, xt, x))
    cg = g.compile()
    t = st.tensor(np.arange(16, dtype=np.float32).reshape(4, 4))
    with pytest.raises(ValueError, match=r"out\[0\] aliases input 0, which kernel .* reads at other"):
        cg.run(t, out=(t,))
    np.testing.assert_array_equal(npy(t), np.arange(16).reshape(4, 4))
    (r,) = cg.run(t)
    np.testing.assert_array_equal(npy(r), np.arange(16).reshape(4, 4).T + np.arange(16).reshape(4, 4))


def test_out_of_an_input_or_two_outs_on_one_storage():
    g = _C.Graph()
    x = g.input((8,), st.float32)
    y = op(g, _C.OP_MUL, x, g.const(2.0, st.float32))
    g.output(x, y, y)
    cg = g.compile()
    t = st.ones(8)
    with pytest.raises(ValueError, match="not computed by a kernel"):
        cg.run(t, out=(st.ones(8), None, None))
    with pytest.raises(ValueError, match="same graph output"):
        cg.run(t, out=(None, st.ones(8), st.ones(8)))


def test_run_inside_a_trace_fails_it_and_abort_restores():
    # the written tensor is backed up first: a failed end or an abort puts
    # it back (a translation that fails runs the frame again as Python)
    g, a, b = axpb()
    cg = g.compile()
    x = st.ones(8)
    _C._trace_begin()
    try:
        cg.run(x, out=(x,))
        np.testing.assert_array_equal(npy(x), np.full(8, 3.0))   # it ran
        with pytest.raises(Exception, match="CompiledGraph ran inside a trace"):
            _C._trace_end((x,))
    finally:
        if _C._trace_active():
            _C._trace_abort()
    np.testing.assert_array_equal(npy(x), np.ones(8))
    _C._trace_begin()
    cg.run(x, out=(x,))
    np.testing.assert_array_equal(npy(x), np.full(8, 3.0))
    _C._trace_abort()
    np.testing.assert_array_equal(npy(x), np.ones(8))


def test_run_in_a_compiled_function_breaks():
    g, a, b = axpb()
    cg = g.compile()

    def f(x, y):
        y = y * 3
        cg.run(x, out=(x,), consts={a: 3.0})
        return x + y

    cf = st.compile(f, backend="llvm" if _C._fe_backend_available("llvm") else "interp")
    for _ in range(3):
        x = st.ones(8)
        r = cf(x, st.ones(8))
        np.testing.assert_array_equal(npy(x), np.full(8, 4.0))
        np.testing.assert_array_equal(npy(r), np.full(8, 7.0))


@pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")
def test_compiled_training_step_matches_eager():
    from bench.bert_pretrain import data as D
    from bench.bert_pretrain import model as M

    def train(backend, fused, steps=4, B=4, S=32):
        m = M.build_model("tiny", dropout=0.0, seed=0)
        opt = optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01, fused=fused)

        def step(*batch):
            loss = m(*batch)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        fn = step if backend is None else st.compile(step, backend=backend)
        rec = D.synthetic_records(B * steps, S, m.config.vocab_size, seed=2)
        losses = [float(fn(*D.to_symtrace(b))) for _, _, b in D.batches(rec, B, steps)]
        return losses, [npy(p) for p in m.parameters()]

    be = "llvm" if _C._fe_backend_available("llvm") else "interp"
    eager, pe = train(None, False)
    fused, pf = train(None, None)
    comp, pc = train(be, None)
    comp_ref, pcr = train(be, False)
    assert fused == eager                       # the fused update is the op-by-op one
    assert comp == comp_ref                     # under compile too
    np.testing.assert_allclose(comp, eager, rtol=1e-4)   # the compiled forward (as test_bert_pretrain)
    assert eager[0] != eager[-1]
    for x, y in zip(pf, pe):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(pc, pcr):
        np.testing.assert_array_equal(x, y)
