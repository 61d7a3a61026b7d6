# Graphs built from Python (symtrace._C.Graph), compiled by a backend, run
# with their memory plan; the plan's estimate against the allocator.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

F32 = st.float32
KEEP = 1


def A(ints=None, floats=None, dims=None, flags=0, dtype=None):
    return (ints, floats, dims, flags, dtype)


def mlp_graph(batch, d_in, d_hidden, d_out):
    g = _C.Graph()
    x = g.input((batch, d_in), F32)
    w1 = g.input((d_hidden, d_in), F32, param=True)
    b1 = g.input((d_hidden,), F32, param=True)
    w2 = g.input((d_out, d_hidden), F32, param=True)
    (h,) = g.op(_C.OP_LINEAR, (x, w1, b1), A(flags=4))
    (h,) = g.op(_C.OP_GELU, (h,))
    (y,) = g.op(_C.OP_LINEAR, (h, w2), A())
    (p,) = g.op(_C.OP_SOFTMAX, (y,), A(ints=(-1,)))
    (s,) = g.op(_C.OP_SUM, (p,), A(dims=(0,)))
    g.output(p, s)
    return g


def eager_mlp(x, w1, b1, w2):
    F = st.nn.functional
    p = F.softmax(F.linear(F.gelu(F.linear(x, w1, b1)), w2), -1)
    return p, p.sum(0)


def test_graph_prints_and_hashes():
    g = mlp_graph(4, 8, 16, 3)
    text = str(g)
    assert text.startswith("StatementIR: SIR_")
    for op in ("linear", "gelu", "softmax", "sum"):
        assert op in text
    assert "param_0" in text and "var_0" in text
    assert g.hash() == mlp_graph(4, 8, 16, 3).hash()
    assert g.hash() == mlp_graph(5, 8, 16, 3).hash()          # sizes not hashed
    assert g.hash(True) != mlp_graph(5, 8, 16, 3).hash(True)  # unless asked


@pytest.mark.parametrize("fusion", [0, 1])
def test_compiled_graph_matches_eager(fusion):
    st.manual_seed(0)
    args = [st.randn(6, 8), st.randn(16, 8) * 0.3, st.randn(16) * 0.1, st.randn(3, 16) * 0.3]
    with st.config.options(fusion=fusion):
        cg = mlp_graph(6, 8, 16, 3).compile(backend="interp")
        p, s = cg.run(*args)
    ep, es = eager_mlp(*args)
    np.testing.assert_allclose(p.numpy(), ep.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.numpy(), es.numpy(), rtol=1e-5, atol=1e-6)
    assert cg.num_kernels >= 1
    # other sizes, same compiled graph: sizes are re-inferred
    args2 = [st.randn(9, 8)] + args[1:]
    p2, _ = cg.run(*args2)
    np.testing.assert_allclose(p2.numpy(), eager_mlp(*args2)[0].numpy(), rtol=1e-5, atol=1e-6)


def test_bad_inputs_are_errors():
    cg = mlp_graph(4, 8, 16, 3).compile()
    with pytest.raises(TypeError, match="takes 4 inputs"):
        cg.run(st.randn(4, 8))
    with pytest.raises(TypeError, match="expects float32"):
        cg.run(st.randn(4, 8, dtype=st.float64), st.randn(16, 8), st.randn(16), st.randn(3, 16))
    with pytest.raises(RuntimeError):
        cg.run(st.randn(4, 7), st.randn(16, 8), st.randn(16), st.randn(3, 16))
    with pytest.raises(ValueError, match="no backend"):
        mlp_graph(4, 8, 16, 3).compile(backend="nope")
    g = _C.Graph()
    with pytest.raises(IndexError):
        g.op(_C.OP_EXP, (5,))


def test_memory_plan_estimate_matches_allocator():
    """The plan's per-kernel live bytes (liveness) against the caching
    allocator's real bytes before each kernel, intermediates in one arena."""
    st.manual_seed(1)
    args = [st.randn(256, 128), st.randn(512, 128) * 0.1, st.randn(512) * 0.1, st.randn(64, 512) * 0.1]
    cg = mlp_graph(256, 128, 512, 64).compile()
    est = st.memory.estimate(cg, *args, measured=True)
    print()
    print(est)
    plan = est.plan
    assert plan["input_bytes"] == sum(a.numel() * 4 for a in args)
    # the arena is never below the liveness peak of the intermediates, and
    # first fit packs this graph without a gap
    assert plan["arena_bytes"] >= est.peak_live - plan["output_bytes"] > 0
    peak_est, peak_meas = est.peak_estimated, est.peak_measured
    assert abs(peak_meas - peak_est) <= 0.02 * peak_est, (peak_est, peak_meas)
    for name, live, e, a in est.rows:  # every kernel, not only the peak
        assert abs(a - e) <= 0.02 * peak_est + 1024, (name, e, a)


def test_config_knobs():
    cfg = st.config.as_dict()
    assert set(cfg) == {"fusion", "fuse_reductions", "fuse_matmul_epilogue", "max_fused_ops"}
    with st.config.options(max_fused_ops=2):
        assert st.config.max_fused_ops == 2
    assert st.config.max_fused_ops == cfg["max_fused_ops"]
    with pytest.raises(AttributeError):
        st.config.no_such_knob
    with pytest.raises(ValueError):
        st.config.fusion = -1
