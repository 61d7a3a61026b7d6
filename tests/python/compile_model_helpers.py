# tests/python/compile_model_helpers.py - what the compiled-model tests share
# (test_compile_hf_style.py, test_compile_gpt2_style.py, test_compile_modern_models.py):
# a clean frontend per test and the frontend's counts. (Their training loops stay in
# each file: a shared helper calling the model would be one more frame in the break
# counts they bound.)
import pytest

import symtrace as st


@pytest.fixture(autouse=True)
def fresh_frontend():
    """Autouse in the modules that import it."""
    st.reset()
    yield
    st.reset()


def fe_counts():
    """(graphs, breaks, fallbacks) so far."""
    s = st._C._fe_stats()
    return s["graphs"], s["breaks"], s["fallbacks"]

