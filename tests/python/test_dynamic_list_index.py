# A list index with negative values (x[[-5, 3]]) under dynamic shapes: the
# negative entry wraps by the indexed dim's size, which a dynamic graph holds as a
# symbol. It was wrapped on the host at the translation's size and baked into the
# graph, so later sizes read the wrong element (found by scripts/fuzz_compile.py
# --dynamic, seed 630082). Now such an index is wrapped in the graph
# (frontend/indexing.c, adv_groups).
import pytest

import symtrace as st


@pytest.mark.parametrize("dynamic", [True, None])
def test_negative_list_index_follows_the_size(dynamic):
    st.reset()
    g = st.compile(lambda x: x[[-5, 3]] * 1, backend="llvm", dynamic=dynamic)
    for n in (6, 7, 9, 7):
        assert g(st.arange(float(n))).tolist() == [float(n - 5), 3.0]


def test_negative_list_index_in_two_dims_and_writes():
    st.reset()

    def f(x):
        y = x[[-1, 0], [1, -2]] * 2
        z = x.clone()
        z[[-1]] = 0.0
        return y, z

    g = st.compile(f, dynamic=True)
    for n in (4, 5, 7):
        x = st.arange(float(n * n)).reshape(n, n)
        want = f(x)
        got = g(x)
        assert got[0].tolist() == want[0].tolist()
        assert got[1].tolist() == want[1].tolist()


def test_out_of_range_negative_list_index_raises():
    st.reset()
    g = st.compile(lambda x: x[[-5]] * 1, dynamic=True)
    g(st.arange(6.0))
    with pytest.raises(IndexError):
        g(st.arange(4.0))
