# tests/python/fuzz_found_helpers.py - what the fuzzer regression files share
# (test_fuzz_found.py .. test_fuzz_found5.py): the modes each regression runs in
# (eager and every compiled backend here), a clean frontend per test, the function
# compiled for a mode, and a fuzzer script of scripts/ imported as a module.
import importlib
import os
import sys

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


def load_fuzzer(name):
    """scripts/<name>.py as a module (its generators need torch: skipped without it)."""
    pytest.importorskip("torch")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "scripts"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)
