# Creation and random statements shaped like an operand join that
# operand's group when it already holds a creation (fusion/fuse.c), so a
# mask drawn as a dropout of ones, x * where(rand(ones) >= p, ones *
# 1/(1-p), 0), is one kernel instead of one writing the ones and their
# scaled copy full size and another reading them; a traced dropout,
# where(rand(like x) >= p, x * 1/(1-p), 0), is one kernel too. Each joined statement reads its own attrs (the
# kernel's param_stmt: a FULL's value, RAND's bounds), and the random
# stream is the unfused program's: same values under every fusion
# setting, on llvm and interp.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from symtrace import _C

SETTINGS = [dict(fusion=1), dict(fusion=0), dict(fusion=1, max_fused_ops=2)]


@pytest.fixture(params=["llvm", "interp"])
def backend(request):
    if request.param == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    return request.param


def run(g, ins, backend, opts, seed=7):
    with st.config.options(**opts):
        cg = g.compile(backend=backend)
        st.manual_seed(seed)
        outs = cg.run(*ins)
    return [o.numpy() for o in outs], cg


@pytest.mark.parametrize("form", ["dropout", "mask_of_ones"])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_traced_dropout_is_one_kernel(backend, p, form):
    x = st.randn(4, 33, 17)

    def f(x):
        if form == "mask_of_ones":
            return x * F.dropout(st.ones_like(x), p) * 2.0
        return F.dropout(x, p) * 2.0

    g, ins = st.memory.trace_graph(f, x)
    ref, _ = run(g, ins, backend, dict(fusion=0))
    y = ref[0]
    kept = y != 0
    # the unfused program's values: kept points scaled by 2/(1-p), the
    # share kept near 1 - p
    np.testing.assert_allclose(y[kept], (x.numpy() * 2.0 / (1 - p))[kept], rtol=1e-6)
    assert abs(kept.mean() - (1 - p)) < 0.05
    for opts in SETTINGS[1:] + SETTINGS[:1]:
        got, cg = run(g, ins, backend, opts)
        np.testing.assert_array_equal(got[0], y, err_msg=str(opts))
    rand_kernels = [k for k in cg.kernel_ir().split("kernel ")[1:] if "rand()" in k]
    assert len(rand_kernels) == 1, cg.kernel_ir()
    # no kernel of its own writes the ones (a full-only or full_mul kernel)
    names = [k.split(":")[0] for k in cg.kernel_ir().split("kernel ")[1:]]
    assert not any(n.endswith("_full") or n.endswith("_full_mul") for n in names), names


def test_two_fulls_in_one_group_read_their_own_value(backend):
    # ones, then zeros shaped like them: one group, two params from two
    # statements' attrs (1.0 and 0.0 as written, not 1.0 twice)
    x = st.randn(5, 6)

    def f(x):
        ones = st.ones_like(x)
        zeros = st.zeros_like(ones)
        return ones * 3.0 + zeros + x

    g, ins = st.memory.trace_graph(f, x)
    for opts in SETTINGS:
        got, cg = run(g, ins, backend, opts)
        np.testing.assert_allclose(got[0], x.numpy() + 3.0, rtol=1e-6, err_msg=str(opts))


def test_two_dropouts_keep_two_streams(backend):
    # two random statements never share a kernel (one generator offset a
    # kernel): the two masks differ
    x = st.randn(64, 64)

    def f(x):
        return F.dropout(x, 0.5), F.dropout(x, 0.5)

    g, ins = st.memory.trace_graph(f, x)
    ref, _ = run(g, ins, backend, dict(fusion=0))
    got, cg = run(g, ins, backend, dict(fusion=1))
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    assert ((got[0] != 0) != (got[1] != 0)).mean() > 0.3
    assert sum("rand()" in k for k in cg.kernel_ir().split("kernel ")[1:]) == 2
