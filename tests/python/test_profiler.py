"""symtrace.profiler: per-kernel launch times of compiled graphs and eager ops."""
import symtrace as st


def test_profile_counts_compiled_kernels():
    def f(x, w):
        return (x @ w).relu().sum(-1)

    cf = st.compile(f, backend="llvm" if st._C._fe_backend_available("llvm") else "interp")
    x, w = st.randn(64, 32), st.randn(32, 16)
    cf(x, w)
    with st.profiler.profile() as prof:
        for _ in range(3):
            cf(x, w)
    kinds = {r.kind for r in prof.rows}
    assert "matmul" in kinds or len(prof.rows) >= 1
    assert all(r.calls >= 3 and r.calls % 3 == 0 for r in prof.rows)
    assert prof.total_ms() > 0
    text = prof.table()
    assert "kernels" in text and prof.rows[0].name in text
    # rows are sorted, most time first
    ts = [r.total_ms for r in prof.rows]
    assert ts == sorted(ts, reverse=True)


def test_profile_off_outside_the_block():
    x = st.randn(100)
    with st.profiler.profile() as prof:
        (x + 1).exp()
    n = sum(r.calls for r in prof.rows)
    assert n >= 1
    (x * 3).exp()
    assert sum(r[3] for r in st._C._rt_profile(None)) == n  # nothing recorded after exit


def test_record_function_inside_a_compiled_function_keeps_one_graph():
    # a labelled range does not make the frame plain: the graph spans the with block
    # (its label is recorded when the graph is traced, not on replays)
    def f(x):
        with st.profiler.record_function("block"):
            y = x * 2 + 1
        return y.sum()

    st.reset()
    cf = st.compile(f, backend="interp")
    x = st.ones(4)
    with st.profiler.profile() as prof:
        assert cf(x).item() == 12.0
    assert [e.name for e in prof.events() if e.name == "block"] == ["block"]
    for _ in range(2):
        assert cf(x).item() == 12.0
    stats = st._C._fe_stats()
    assert stats["graphs"] == 1 and stats["breaks"] == 0
    st.reset()
