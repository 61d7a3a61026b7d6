# tests/python/fuzz_found_helpers.py - what the fuzzer regression files share
# (test_fuzz_found.py, test_fuzz_found2.py, test_fuzz_found3.py): the modes each
# regression runs in (eager and every compiled backend here), a clean frontend per
# test, and the function compiled for a mode.
import pytest

import symtrace as st

BACKENDS = [b for b in ("llvm", "interp") if st._C._fe_backend_available(b)]
MODES = ["eager"] + BACKENDS


@pytest.fixture(autouse=True)
def fresh_frontend():
    """Autouse in the modules that import it."""
    st.reset()
    yield
    st.reset()


def maybe_compiled(fn, mode, fullgraph=True):
    return fn if mode == "eager" else st.compile(fn, backend=mode, fullgraph=fullgraph)
