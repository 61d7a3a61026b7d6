# Regressions of the bugs the fuzzers (scripts/fuzz_compile.py with and without --dynamic,
# fuzz_views.py, fuzz_memplan.py, fuzz_guards.py) found after the checkpointing /
# dynamic-shapes merge, each with expected values, eager and compiled (the compiled
# functions called several times: the capture and the cached entry); and a fixed-seed
# smoke run of fuzz_compile's fourth-round templates (scripts/fuzz_merge_ops.py: needs
# torch, the reference).
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401

OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", ["ellipsis", "step"])
def test_setitem_number_into_an_expanded_tensor_raises(mode, key):
    # torch writes x[...] = 1 as a copy_, which refuses a destination whose elements
    # overlap; symtrace filled it (as fill_ does, which torch allows): the compiled
    # function with other sizes (fuzz --dynamic seed 510084) and eager ran it
    def f(x):
        v = x[...] if key == "ellipsis" else x[0::2]
        v[...] = 1
        return v

    g = maybe_compiled(f, mode)
    for _ in range(2):
        base = st.zeros(1, 3)
        out = g(base.expand(1, 3))   # one row: no element shared
        assert out.tolist() == [[1.0, 1.0, 1.0]] and base.tolist() == [[1.0, 1.0, 1.0]]
    for _ in range(2):
        base = st.zeros(1, 3)
        with pytest.raises(RuntimeError, match=OVERLAP):
            g(base.expand(4, 3))
        assert base.tolist() == [[0.0, 0.0, 0.0]]
    # fill_ / zero_ of the same tensor stay allowed, as torch's
    base = st.zeros(1, 3)
    assert base.expand(4, 3).fill_(2).tolist() == [[2.0] * 3] * 4
    assert base.expand(4, 3).zero_().tolist() == [[0.0] * 3] * 4


@pytest.mark.parametrize("mode", BACKENDS)
def test_setitem_number_into_an_expanded_tensor_dynamic(mode):
    def f(x):
        v = x[0::2]
        v[...] = 1
        return v

    g = st.compile(f, backend=mode, dynamic=True)
    assert g(st.zeros(1, 3).expand(1, 3)).tolist() == [[1.0] * 3]
    for n in (4, 5, 4):
        with pytest.raises(RuntimeError, match=OVERLAP):
            g(st.zeros(1, 3).expand(n, 3))
    assert g(st.zeros(3, 2)).tolist() == [[1.0] * 2] * 2
