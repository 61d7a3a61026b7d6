# The caching allocator's statistics through symtrace.memory: the keys exist and
# are consistent, allocation reaches a steady state (num_allocs grows, system
# allocations stop growing), empty_cache returns cached memory, reset_peak_stats.
import gc

import symtrace as st

KEYS = ("allocated_bytes", "reserved_bytes", "peak_allocated_bytes", "num_allocs", "cache_hits",
        "num_system_allocs")
MB = 1 << 20


def stats():
    gc.collect()
    return st.memory.stats()


def test_stats_keys_and_consistency():
    s = stats()
    assert isinstance(s, dict)
    for k in KEYS:
        assert k in s, "missing key %s in %s" % (k, sorted(s))
        assert isinstance(s[k], int) and s[k] >= 0, (k, s[k])
    assert s["allocated_bytes"] <= s["reserved_bytes"]
    assert s["peak_allocated_bytes"] >= s["allocated_bytes"]
    assert s["num_system_allocs"] <= s["num_allocs"]
    assert st.memory.memory_allocated() == st.memory.stats()["allocated_bytes"]
    assert st.memory.max_memory_allocated() == st.memory.stats()["peak_allocated_bytes"]


def test_allocation_is_counted_and_freed():
    before = stats()
    x = st.empty(MB // 4)  # 1 MiB of float32
    mid = stats()
    assert mid["allocated_bytes"] - before["allocated_bytes"] >= MB
    assert mid["reserved_bytes"] >= mid["allocated_bytes"]
    assert mid["num_allocs"] > before["num_allocs"]
    assert mid["peak_allocated_bytes"] >= mid["allocated_bytes"]
    y = x.view(-1)  # a view does not allocate data
    assert stats()["allocated_bytes"] - mid["allocated_bytes"] < 4096
    del x
    assert stats()["allocated_bytes"] - mid["allocated_bytes"] < 4096  # still alive through y
    del y
    after = stats()
    assert after["allocated_bytes"] <= before["allocated_bytes"] + 4096
    assert after["reserved_bytes"] >= after["allocated_bytes"]


def test_steady_state_reuses_cached_blocks():
    def step():
        a = st.ones(64, 256)
        b = st.zeros(1000)
        c = a * 2 + 1
        d = c.sum(1)
        del a, b, c, d

    for _ in range(20):  # warm up: the cache fills
        step()
    s1 = stats()
    for _ in range(200):
        step()
    s2 = stats()
    assert s2["num_allocs"] >= s1["num_allocs"] + 200 * 4, (s1, s2)
    assert s2["num_system_allocs"] == s1["num_system_allocs"], \
        "system allocations keep growing in a steady loop: %s -> %s" % (s1, s2)
    assert s2["cache_hits"] >= s1["cache_hits"] + 200 * 4
    assert abs(s2["allocated_bytes"] - s1["allocated_bytes"]) < 64 * 1024, "memory leak in the loop"
    assert s2["reserved_bytes"] <= s1["reserved_bytes"] + MB


def test_empty_cache_lowers_reserved():
    x = [st.empty(2 * MB) for _ in range(4)]  # 32 MiB
    del x
    s1 = stats()
    assert s1["reserved_bytes"] - s1["allocated_bytes"] >= 8 * MB, "freed blocks should stay cached"
    st.memory.empty_cache()
    s2 = stats()
    assert s2["reserved_bytes"] < s1["reserved_bytes"]
    assert s2["reserved_bytes"] - s2["allocated_bytes"] < 8 * MB
    assert s2["allocated_bytes"] == s1["allocated_bytes"]
    # allocating again works after the cache was emptied, and counts a system allocation
    y = st.ones(2 * MB)
    s3 = stats()
    assert s3["num_system_allocs"] > s2["num_system_allocs"]
    assert y[-1].item() == 1.0


def test_reset_peak_stats():
    x = st.empty(4 * MB)  # 16 MiB
    del x
    s1 = stats()
    assert s1["peak_allocated_bytes"] >= s1["allocated_bytes"] + 16 * MB
    st.memory.reset_peak_stats()
    s2 = stats()
    assert s2["peak_allocated_bytes"] == s2["allocated_bytes"]
    keep = st.empty(MB)
    s3 = stats()
    assert s3["peak_allocated_bytes"] >= s2["allocated_bytes"] + 4 * MB
    assert st.memory.max_memory_allocated() == s3["peak_allocated_bytes"]
    del keep


def test_peak_requested_does_not_depend_on_the_cache():
    """A 1.25 MiB request that opens a segment of its own is counted at the segment's
    2 MiB (nothing worth splitting off); carved from a larger cached segment it is
    counted at its size. max_memory_requested counts what was asked for either way
    (torch's requested_bytes.all.peak), so a peak measured with it does not depend
    on what ran before."""
    n = 5 * MB // 16                      # float32 elements: 1.25 MiB
    peaks = []
    for warm in (False, True):
        st.memory.empty_cache()
        if warm:
            st.empty(8 * MB)              # leaves a 32 MiB cached segment
        base_a, base_r = st.memory.memory_allocated(), stats()["requested_bytes"]
        st.memory.reset_peak_stats()
        x = st.empty(n)
        del x
        peaks.append((st.memory.max_memory_allocated() - base_a,
                      st.memory.max_memory_requested() - base_r))
        assert stats()["peak_requested_bytes"] == st.memory.max_memory_requested()
    (cold_a, cold_r), (warm_a, warm_r) = peaks
    assert cold_a == 2 * MB and warm_a == n * 4, peaks
    assert cold_r == warm_r == n * 4, peaks
    st.memory.reset_peak_stats()
    s = stats()
    assert s["peak_requested_bytes"] == s["requested_bytes"]


def test_training_steps_reach_steady_state():
    """An MLP training step (forward, softmax cross-entropy, hand-written
    backward, SGD in place) makes no system allocation once warm, and every
    step returns the allocator to the same live bytes."""
    st.manual_seed(0)
    x = st.randn(64, 16)
    y = st.randint(0, 4, (64,))
    w1, w2 = st.randn(16, 32) * 0.1, st.randn(32, 4) * 0.1
    onehot = (y.unsqueeze(1) == st.arange(4).unsqueeze(0)).float()

    def step():
        h = (x @ w1).relu()
        logits = h @ w2
        loss = st.nn.functional.cross_entropy(logits, y)
        g = (st.softmax(logits, -1) - onehot) / 64
        gw2 = h.T @ g
        gh = (g @ w2.T) * (h > 0).float()
        w1.sub_(x.T @ gh, alpha=0.1)
        w2.sub_(gw2, alpha=0.1)
        return loss.item()

    losses = [step() for _ in range(3)]
    s1 = st.memory.stats()
    for _ in range(10):
        losses.append(step())
    s2 = st.memory.stats()
    assert s2["num_system_allocs"] == s1["num_system_allocs"], (s1, s2)
    assert s2["allocated_bytes"] == s1["allocated_bytes"], (s1, s2)
    assert s2["num_allocs"] > s1["num_allocs"]
    assert losses[-1] < losses[0]
    st.memory._check()
