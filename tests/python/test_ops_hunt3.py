# Tensor-op hunt against torch 2.13 (third round): the bit shifts << >> and
# bitwise_left/right_shift (wrap, sign fill, shifts < 0 or >= the bit width),
# torch's exception types for out-of-range indices (eager and compiled), and the
# ops a walk over torch.Tensor's methods found missing or different.
#
# Where torch is installed the expectations are torch's results; the expected
# values written out here are torch's too, so the tests run without it.
import pytest

import symtrace as st

INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]


def _torch():
    return pytest.importorskip("torch")


def _grid(name):
    """(values, shifts) covering the dtype's ends, signs and every shift from -3 to bits + 3."""
    import numpy as np
    info = np.iinfo(name)
    bits = info.bits
    vals = [int(info.min), int(info.max), 0, 1, -1, 5, -7, 100, -128, 12345, -99999, 2**40 + 3]
    vals = [v for v in vals if info.min <= v <= info.max]
    shifts = list(range(-3 if info.min < 0 else 0, bits + 4))
    return [v for v in vals for _ in shifts], [s for _ in vals for s in shifts]


# ---------------- bit shifts ----------------
@pytest.mark.parametrize("name", INT_DTYPES)
def test_shifts_match_torch_every_shift(name):
    torch = _torch()
    a, s = _grid(name)
    ta, ts = torch.tensor(a).to(getattr(torch, name)), torch.tensor(s).to(getattr(torch, name))
    sa, ss = st.tensor(a, dtype=st.int64).to(getattr(st, name)), st.tensor(s, dtype=st.int64).to(getattr(st, name))
    for got, want in ((sa << ss, ta << ts), (sa >> ss, ta >> ts),
                      (st.bitwise_left_shift(sa, ss), torch.bitwise_left_shift(ta, ts)),
                      (sa.bitwise_right_shift(ss), ta.bitwise_right_shift(ts))):
        assert got.dtype is getattr(st, name)
        assert got.tolist() == want.tolist()


def test_shift_expected_values():
    # torch 2.13: wrap in the dtype; shift < 0 or >= bits: 0 (left), the sign fill (right)
    a = st.tensor([1, -3, 100, -128, 5, 7], dtype=st.int8)
    s = st.tensor([0, 1, 3, 7, 8, -1], dtype=st.int8)
    assert (a << s).tolist() == [1, -6, 32, 0, 0, 0]
    assert (a >> s).tolist() == [1, -2, 12, -1, 0, 0]
    u = a.to(st.uint8)
    assert (u >> s).tolist() == [1, 126, 12, 1, 0, 0]
    big = st.tensor([2**62, -2**62, 2**63 - 1, 1, -1])
    assert (big << st.tensor([1, 1, 1, 63, 64])).tolist() == [-2**63, -2**63, -2, -2**63, 0]
    assert (big >> st.tensor([62, 62, 64, 0, 64])).tolist() == [1, -1, 0, 1, -1]


def test_shift_numbers_dtypes_and_inplace():
    assert (st.tensor([1, 2]) << 2).tolist() == [4, 8]
    assert (2 << st.tensor([1, 2])).tolist() == [4, 8]
    assert st.bitwise_left_shift(3, st.tensor([1, 2])).tolist() == [6, 12]
    assert (st.tensor([-8, 8]) >> 2).tolist() == [-2, 2]
    r = st.tensor([1, 2], dtype=st.uint8) << 3
    assert r.dtype is st.uint8 and r.tolist() == [8, 16]
    r = st.tensor([1, 2], dtype=st.uint8) << st.tensor([1, 2])
    assert r.dtype is st.int64 and r.tolist() == [2, 8]
    r = st.tensor([True, False]) << 1
    assert r.dtype is st.int64 and r.tolist() == [2, 0]
    r = 2**40 << st.tensor([1, 2], dtype=st.int32)      # the number wraps to int32 first: 0
    assert r.dtype is st.int32 and r.tolist() == [0, 0]
    x = st.tensor([1, 2], dtype=st.int8)
    y = x
    x <<= 7
    assert y is x and x.dtype is st.int8 and x.tolist() == [-128, 0]
    x >>= 1
    assert x.tolist() == [-64, 0]
    z = st.tensor([5, 6])
    assert z.bitwise_left_shift_(1) is z and z.tolist() == [10, 12]


def test_shift_errors_as_torch():
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        st.tensor([1.0, 2.0]) << 1
    with pytest.raises(NotImplementedError, match="\"rshift_cpu\" not implemented for 'Float'"):
        st.tensor([1, 2]) >> 1.5
    with pytest.raises(NotImplementedError, match="'Bool'"):
        st.tensor([True]) << st.tensor([True])
    with pytest.raises(TypeError):
        st.tensor([1, 2]) << "a"
    with pytest.raises(TypeError):
        st.bitwise_left_shift(1, 2)
    with pytest.raises(RuntimeError, match="must match the size"):
        st.tensor([1, 2]) << st.tensor([1, 2, 3])


@pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")
@pytest.mark.parametrize("name", ["int8", "uint8", "int64"])
def test_shifts_compiled_equal_eager(name):
    a, s = _grid(name)
    sa, ss = st.tensor(a, dtype=st.int64).to(getattr(st, name)), st.tensor(s, dtype=st.int64).to(getattr(st, name))
    f = st.compile(lambda a, s: (a << s, a >> s, 3 << s))
    want = [t.tolist() for t in (sa << ss, sa >> ss, 3 << ss)]
    for _ in range(2):
        assert [t.tolist() for t in f(sa, ss)] == want


# ---------------- out-of-range indices: torch's exception types (eager) ----------------
def _x():
    return st.zeros(2, 2)


BAD_INDEX = [
    # (call, torch's type, a text torch's message has, a text naming index and size)
    (lambda: st.gather(_x(), 1, st.tensor([[0, 2], [1, 0]])), RuntimeError, "index 2", "size 2"),
    (lambda: _x().scatter_(1, st.tensor([[0, 2], [1, 0]]), 1.0), RuntimeError, "index 2", "size 2"),
    (lambda: _x().scatter(1, st.tensor([[0, 2], [1, 0]]), st.ones(2, 2)), RuntimeError, "index 2", "size 2"),
    (lambda: _x().scatter_add(1, st.tensor([[0, 2], [1, 0]]), st.ones(2, 2)), RuntimeError, "index 2", "size 2"),
    (lambda: _x().scatter_add_(1, st.tensor([[0, 2], [1, 0]]), st.ones(2, 2)), RuntimeError, "index 2", "size 2"),
    (lambda: _x().scatter_reduce(1, st.tensor([[0, 2], [1, 0]]), st.ones(2, 2), "sum"), RuntimeError,
     "index 2", "size 2"),
    (lambda: _x().scatter_reduce(1, st.tensor([[0, 2], [1, 0]]), st.ones(2, 2), "amax"), RuntimeError,
     "index 2", "size 2"),
    (lambda: st.zeros(3).index_add_(0, st.tensor([0, 5]), st.ones(2)), IndexError,
     "index out of range in self", "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: st.zeros(3).index_add(0, st.tensor([0, -4]), st.ones(2)), IndexError,
     "index out of range in self", "index -4"),
    (lambda: st.index_select(st.zeros(3), 0, st.tensor([0, 5])), IndexError,
     "index out of range in self", "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: st.nn.functional.embedding(st.tensor([0, 5]), st.zeros(3, 2)), IndexError,
     "index out of range in self", "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: st.zeros(3).index_copy_(0, st.tensor([0, 5]), st.ones(2)), IndexError,
     "index_copy_(): index 5 is out of bounds for dimension 0 with size 3", "size 3"),
    (lambda: st.zeros(3).index_copy(0, st.tensor([0, 5]), st.ones(2)), IndexError,
     "index_copy_(): index 5 is out of bounds", "size 3"),
    (lambda: st.zeros(3).index_fill_(0, st.tensor([0, 5]), 1.0), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3", "size 3"),
    (lambda: st.zeros(3).index_fill(0, st.tensor([0, -5]), 1.0), IndexError, "out of bounds", "size 3"),
    (lambda: st.take(st.zeros(3), st.tensor([0, 5])), IndexError,
     "out of range: tried to access index 5 on a tensor of 3 elements.", "5"),
    (lambda: st.take(st.zeros(2, 3), st.tensor([[1, -9]])), IndexError,
     "out of range: tried to access index -9 on a tensor of 6 elements.", "-9"),
    (lambda: st.zeros(3).put_(st.tensor([5]), st.tensor([1.0])), IndexError,
     "out of range: tried to access index 5 on a tensor of 3 elements.", "5"),
    (lambda: st.zeros(3).put(st.tensor([-5]), st.tensor([1.0]), accumulate=True), IndexError,
     "out of range: tried to access index -5 on a tensor of 3 elements.", "-5"),
    (lambda: st.take_along_dim(st.zeros(3), st.tensor([5])), RuntimeError, "index 5", "size 3"),
]


@pytest.mark.parametrize("k", range(len(BAD_INDEX)))
def test_out_of_range_index_raises_torchs_type(k):
    call, kind, torch_text, ours = BAD_INDEX[k]
    with pytest.raises(Exception) as info:
        call()
    assert type(info.value) is kind, (type(info.value), str(info.value))
    assert torch_text in str(info.value) and ours in str(info.value)


def test_out_of_range_index_types_are_torchs():
    torch = _torch()
    pairs = [
        (lambda m: m.zeros(2, 2).scatter_(1, m.tensor([[0, 2], [1, 0]]), 1.0)),
        (lambda m: m.zeros(2, 2).scatter_add(1, m.tensor([[0, 2], [1, 0]]), m.ones(2, 2))),
        (lambda m: m.gather(m.zeros(2, 2), 1, m.tensor([[0, 2], [1, 0]]))),
        (lambda m: m.zeros(3).index_add_(0, m.tensor([0, 5]), m.ones(2))),
        (lambda m: m.index_select(m.zeros(3), 0, m.tensor([-1]))),
        (lambda m: m.take(m.zeros(3), m.tensor([-4]))),
        (lambda m: m.zeros(3).index_copy_(0, m.tensor([3]), m.ones(1))),
    ]
    for f in pairs:
        got = []
        for m in (torch, st):
            with pytest.raises(Exception) as info:
                f(m)
            got.append(type(info.value))
        assert got[0] is got[1]


def test_in_range_indices_still_work():
    assert st.take(st.tensor([1.0, 2.0, 3.0]), st.tensor([-1, 0])).tolist() == [3.0, 1.0]
    x = st.zeros(3)
    x.put_(st.tensor([-1]), st.tensor([4.0]))
    assert x.tolist() == [0.0, 0.0, 4.0]
    assert st.zeros(3).index_add(0, st.tensor([2, 2]), st.ones(2)).tolist() == [0.0, 0.0, 2.0]
    assert st.zeros(2, 2).scatter(1, st.tensor([[1], [0]]), 5.0).tolist() == [[0.0, 5.0], [5.0, 0.0]]
