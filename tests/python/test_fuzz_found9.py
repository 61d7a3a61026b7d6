# Regressions of the bugs found by the ninth fuzzing round (scripts/fuzz_views.py,
# fuzz_compile.py and the known parity leftovers), each against torch where torch is
# installed and against expected values otherwise, eager and compiled (the compiled
# functions called several times: the capture and the cached entries).
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401

X34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.6


def _torch():
    return pytest.importorskip("torch")


# ---- 1. a view refreshed in the aborted first translation --------------------------

def _break_then_write(x0, v1):
    # v1 is a view of x0 made outside: reading it after the write through v6 breaks
    # the graph ("shares storage ... through no traced view"); the write v1.sub_ then
    # runs in Python after the partial graph
    v6 = x0[0:1]
    v6.fill_(1)
    v1.sub_(1)
    return v6


@pytest.mark.parametrize("mode", MODES)
def test_view_written_after_partial_graph_has_fresh_history(mode):
    # the capture translates twice (once into the break, once stopping before it);
    # the first pass refreshed v1's grad_fn against x0's history and the abort put
    # both back, but not the count v1 was refreshed at: the second pass's write made
    # the counts equal again, so v1.sub_ used v1's stale grad_fn (x0 before the
    # fill) and the first call's x.grad was 2 where v6 was filled (torch: 0)
    g = maybe_compiled(_break_then_write, mode, fullgraph=False)
    for k in range(3):
        x = st.tensor(X34).requires_grad_()
        c = x.clone()
        o = g(c, c[:])
        assert o.tolist() == [[0.0] * 4], k
        (o * 2).sum().backward()
        assert x.grad.tolist() == [[0.0] * 4] * 3, k


def test_view_written_after_partial_graph_matches_torch():
    torch = _torch()
    xt = torch.tensor(X34).requires_grad_()
    ct = xt.clone()
    (_break_then_write(ct, ct[:]) * 2).sum().backward()
    for mode in BACKENDS:
        g = st.compile(_break_then_write, backend=mode)
        for k in range(3):
            x = st.tensor(X34).requires_grad_()
            c = x.clone()
            (g(c, c[:]) * 2).sum().backward()
            np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy(), err_msg="%s %d" % (mode, k))
