# Sizes of temporaries read in Python during a dynamic-shape translation
# (frontend/tr_dynamic.c, dims_of): their symbolic dims are cached by the tensor's
# address, so the tensor is now kept alive while its entry exists. Before, a
# temporary freed during the translation could hand its address, and its cached
# dims, to a new tensor of another rank (a read past the cached tuple; h-hf2 saw a
# segfault). The address reuse is up to the allocator, so this checks values over
# several programs that free temporaries whose sizes were read.
import numpy as np
import pytest

import symtrace as st


def freed_then_new_rank(x):
    t = x + 1
    n = t.shape[1]
    del t
    u = (x * 2).unsqueeze(0)
    return u.reshape(u.shape[1] * u.shape[2]) * n


def many_temporaries(x):
    acc = x.sum()
    for k in range(6):
        t = (x * (k + 1)).unsqueeze(k % 2)
        acc = acc + t.shape[0] * t.shape[1] + t.sum()
        del t
    return acc + x.reshape(x.shape[0] * x.shape[1]).sum()


@pytest.mark.parametrize("f", [freed_then_new_rank, many_temporaries], ids=lambda f: f.__name__)
def test_temporaries_freed_during_translation(f):
    st.reset()
    c = st.compile(f, dynamic=True)
    for a, b in ((3, 4), (5, 6), (2, 7), (6, 3)):
        x = st.tensor(np.arange(a * b, dtype=np.float32).reshape(a, b))
        np.testing.assert_allclose(np.asarray(c(x).tolist()), np.asarray(f(x).tolist()), rtol=1e-6)
