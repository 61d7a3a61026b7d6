# Regressions of the bugs found by the thirteenth fuzzing round (fuzz_compile --extra:
# scans, pointwise ops, reductions and indexing the earlier rounds never drew), each
# against torch where torch is installed and against expected values otherwise, eager
# and compiled (the compiled functions called several times: the capture and the
# cached entries).
import math

import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


# ---- 1. torch's float constants: st.nan / inf / pi / e ----------------------------

def test_float_constants_are_torchs():
    # fuzz_compile --extra seed 1176041: st.where(v < -1, st.nan, v) raised
    # AttributeError: symtrace had no nan / inf / pi / e
    assert math.isnan(st.nan) and isinstance(st.nan, float)
    assert st.inf == math.inf and st.pi == math.pi and st.e == math.e
    torch = pytest.importorskip("torch")
    for n in ("nan", "inf", "pi", "e"):
        a, b = getattr(st, n), getattr(torch, n)
        assert type(a) is type(b) and (a == b or (math.isnan(a) and math.isnan(b)))


@pytest.mark.parametrize("mode", MODES)
def test_nan_constant_in_a_compiled_where(mode):
    def fn(v):
        return st.nanmean(st.where(v < -1, st.nan, v), -1, keepdim=True), \
            st.where(v > 0, st.inf, -st.inf) * st.pi
    f = maybe_compiled(fn, mode)
    xv = [[-2.0, 0.5, 3.0], [1.0, -3.0, -4.0]]
    for _ in range(3):
        m, w = f(st.tensor(xv))
        np.testing.assert_allclose(m.numpy(), [[1.75], [1.0]], rtol=1e-6)
        np.testing.assert_array_equal(w.numpy(), np.where(np.asarray(xv) > 0, np.inf, -np.inf))
