# Outputs of functions that return several views (split, chunk, split_with_sizes, unbind)
# and views of them: torch refuses in-place writes into them while grad mode is on and
# the base (or an operand) requires grad, and their use after their base's history
# changed ("... This view is the output of a function that returns multiple views");
# unsafe_split / unsafe_chunk, no_grad and bases that need no gradient allow it. Eager
# and compiled (each compiled function called three times: the capture and the cached
# entry), with torch's messages compared where torch is installed.
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401

MULTI = "This view is the output of a function that returns multiple views."
WRITE = "is a view and is being modified inplace."
USE = "is a view and its base or another view of its base has been modified inplace."


def _base(m, rg=True):
    return (m.arange(12.0).reshape(4, 3) + 1).requires_grad_(rg)


# programs writing into a multi-view output: (name, fn(x, m) where m is st or torch)
def _split_mul(x, m):
    b = x * 1
    b.split(1)[0].mul_(2)
    return b


def _chunk_copy(x, m):
    b = x * 1
    b.chunk(2)[1].copy_(m.zeros(2, 3))
    return b


def _unbind_zero(x, m):
    b = x * 1
    b.unbind(1)[2].zero_()
    return b


def _split_sizes_view_add(x, m):
    b = x * 1
    b.split([1, 3])[1].view(-1).add_(1)
    return b


def _unbind_setitem(x, m):
    b = x * 1
    v = b.unbind()[1]
    v[0] = 5.0
    return b


def _split_of_view_slice(x, m):
    b = x * 1
    b[1:].split(2)[0][:, 1:].mul_(3)
    return b


WRITES = {"split_mul": (_split_mul, "Output 0 of Split "),
          "chunk_copy": (_chunk_copy, "Output 1 of Split "),
          "unbind_zero": (_unbind_zero, "Output 2 of Unbind "),
          "split_sizes_view_add": (_split_sizes_view_add, "Output 0 of View "),
          "unbind_setitem": (_unbind_setitem, None),
          "split_of_view_slice": (_split_of_view_slice, "Output 0 of Slice ")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(WRITES))
def test_write_into_multi_output_refused(mode, case):
    fn, head = WRITES[case]
    g = maybe_compiled(lambda x: fn(x, st), mode, fullgraph=False)
    for _ in range(3):
        with pytest.raises(RuntimeError) as ei:
            g(_base(st))
        msg = str(ei.value)
        assert WRITE in msg and MULTI in msg, msg
        if head:
            assert msg.startswith(head), msg


@pytest.mark.parametrize("case", sorted(WRITES))
def test_write_into_multi_output_message_as_torch(case):
    torch = pytest.importorskip("torch")
    fn, head = WRITES[case]
    with pytest.raises(RuntimeError) as te:
        fn(_base(torch), torch)
    with pytest.raises(RuntimeError) as se:
        fn(_base(st), st)
    if head:
        assert str(se.value) == str(te.value)
    else:  # unbind + setitem: torch names its select "Select", symtrace's a squeeze
        assert str(se.value).split(" is a view", 1)[1] == str(te.value).split(" is a view", 1)[1]


def _no_grad_write(x, m):
    b = x * 1
    with m.no_grad():
        b.split(1)[0].mul_(2)
    return b


def _unsafe_split(x, m):
    b = x * 1
    m.unsafe_split(b, 1)[0].mul_(2)
    m.unsafe_chunk(b, 2)[1].add_(1)
    return b


def _tensor_split(x, m):
    b = x * 1
    b.tensor_split(2)[1].mul_(2)
    return b


ALLOWED = {"no_grad_write": (_no_grad_write, True),
           "unsafe": (_unsafe_split, True),
           "tensor_split": (_tensor_split, True),
           "base_needs_no_grad": (_split_mul, False),
           "unbind_base_needs_no_grad": (_unbind_setitem, False)}
def _expected(case, k):
    b = (np.arange(12.0).reshape(4, 3) + 1) * (k + 1)
    if case == "tensor_split":
        b[2:] *= 2
    elif case == "unbind_base_needs_no_grad":
        b[1, 0] = 5
    else:
        b[0] *= 2
        if case == "unsafe":
            b[2:] += 1
    return b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_write_into_multi_output_allowed(mode, case):
    fn, rg = ALLOWED[case]
    g = maybe_compiled(lambda x: fn(x, st), mode)
    for k in range(3):
        out = g(_base(st, rg) * (k + 1))
        np.testing.assert_array_equal(out.detach().numpy(), _expected(case, k))


@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_write_into_multi_output_allowed_as_torch(case):
    torch = pytest.importorskip("torch")
    fn, rg = ALLOWED[case]
    t = fn(_base(torch, rg), torch)
    s = fn(_base(st, rg), st)
    np.testing.assert_array_equal(s.detach().numpy(), t.detach().numpy())
    np.testing.assert_array_equal(s.detach().numpy(), _expected(case, 0))


@pytest.mark.parametrize("mode", BACKENDS)
@pytest.mark.parametrize("how", ["view_of_input", "view_of_computed", "unbind_tuple"])
def test_returned_multi_output_write_refused(mode, how):
    # the compiled function's outputs are made again as views after each run: they keep
    # the mark (the cached calls refused nothing)
    def f(x):
        if how == "view_of_input":
            return x.split(1)[0]
        if how == "view_of_computed":
            b = x * 1
            return b, b.chunk(2)[1]
        return x.unbind(1)

    g = maybe_compiled(f, mode)
    for _ in range(3):
        out = g(_base(st).clone())
        v = out[1] if how == "view_of_computed" else out[2] if how == "unbind_tuple" else out
        with pytest.raises(RuntimeError, match="returns multiple views"):
            v.mul_(2)
    # without gradients the same outputs can be written
    g2 = maybe_compiled(f, mode)
    for k in range(3):
        out = g2(_base(st, False) + k)
        v = out[1] if how == "view_of_computed" else out[2] if how == "unbind_tuple" else out
        v.mul_(2)


def _use_after_base_write(x, m):
    b = x * 1
    v = b.chunk(2)[1]
    b.add_(1)
    return v * 2


def _use_after_other_view_write(x, m):
    b = x * 1
    v = b.unbind()[0]
    b[1:].mul_(2)
    return v.sum()


USES = {"base_write": (_use_after_base_write, "Output 1 of Split "),
        "other_view_write": (_use_after_other_view_write, "Output 0 of Unbind ")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(USES))
def test_use_of_multi_output_after_base_write_refused(mode, case):
    fn, head = USES[case]
    g = maybe_compiled(lambda x: fn(x, st), mode, fullgraph=False)
    for _ in range(3):
        with pytest.raises(RuntimeError) as ei:
            g(_base(st))
        assert str(ei.value).startswith(head) and USE in str(ei.value) and MULTI in str(ei.value)
    # a base that needs no gradient: allowed, the view sees the write
    g2 = maybe_compiled(lambda x: fn(x, st), mode)
    for _ in range(3):
        g2(_base(st, False))


@pytest.mark.parametrize("mode", BACKENDS)
def test_returned_stale_multi_output_use_refused(mode):
    def f(x):
        b = x * 1
        v = b.chunk(2)[1]
        b.add_(1)
        return v

    g = maybe_compiled(f, mode)
    for _ in range(3):
        v = g(_base(st))
        np.testing.assert_array_equal(v.detach().numpy(), [[8, 9, 10], [11, 12, 13]])
        with pytest.raises(RuntimeError, match="its base or another view of its base"):
            v * 2


@pytest.mark.parametrize("case", sorted(USES))
def test_use_of_multi_output_message_as_torch(case):
    torch = pytest.importorskip("torch")
    fn, _ = USES[case]
    with pytest.raises(RuntimeError) as te:
        fn(_base(torch), torch)
    with pytest.raises(RuntimeError) as se:
        fn(_base(st), st)
    assert str(se.value) == str(te.value)


# ---- compiled-only failures the view fuzzer found next to these


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("copy", ["mul", "contiguous"])
def test_index_put_of_as_strided_element_after_break(mode, copy):
    # as_strided breaks the graph; the resume graph reshapes a [1, 1] slice of the strided
    # view to [] for the expand of the value: the unravel pass dropped the first reshape
    # of that chain and kept the 0-d one reading it ("kN_reshape: input is unbound")
    def f(x0):
        v1 = x0 * 1 if copy == "mul" else x0.contiguous()
        v1[st.tensor([5, 4])] = x0.as_strided((6, 1), (5, 2), 2)[1:2]
        return v1

    g = maybe_compiled(f, mode, fullgraph=False)
    for k in range(3):
        x = (st.arange(40.0) + 10 * k).reshape(8, 5)[:, 1:3]
        want = x.numpy().copy()
        want[[5, 4]] = 7 + 10 * k   # storage element 2 + 5 (absolute offsets)
        np.testing.assert_array_equal(g(x).numpy(), want)


def test_index_put_of_as_strided_element_as_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(40.0).reshape(8, 5)[:, 1:3]
    v = x * 1
    v[torch.tensor([5, 4])] = x.as_strided((6, 1), (5, 2), 2)[1:2]
    g = maybe_compiled(lambda x0: _put(x0), "llvm" if "llvm" in BACKENDS else "eager",
                       fullgraph=False)
    for _ in range(2):
        np.testing.assert_array_equal(g(st.arange(40.0).reshape(8, 5)[:, 1:3]).numpy(), v.numpy())


def _put(x0):
    v1 = x0 * 1
    v1[st.tensor([5, 4])] = x0.as_strided((6, 1), (5, 2), 2)[1:2]
    return v1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["copying_reshape", "contiguous_view"])
def test_compiled_output_is_view_as_eager(mode, how):
    # a reshape that copies is no view (detach_() allowed); a view of contiguous()'s
    # copy is one (detach_() refused), as torch's; the cached calls returned the first
    # as a view of the program's copy
    def f(x):
        p = x.permute(0, 2, 1)
        return p.reshape(1, -1) if how == "copying_reshape" else p.contiguous().view(1, -1)

    g = maybe_compiled(f, mode)
    for k in range(3):
        v = g(st.arange(12.0).reshape(2, 3, 2) + k)
        np.testing.assert_array_equal(v.numpy(), np.array([[0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]]) + k)
        if how == "copying_reshape":
            assert v._base is None
            v.detach_()
        else:
            assert v._base is not None
            with pytest.raises(RuntimeError, match="Can't detach views in-place"):
                v.detach_()


def test_compiled_output_is_view_as_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(12.0).reshape(2, 3, 2).permute(0, 2, 1)
    assert x.reshape(1, -1)._base is None and x.contiguous().view(1, -1)._base is not None


@pytest.mark.parametrize("mode", MODES)
def test_as_strided_of_multi_output_allowed(mode):
    # unfold / as_strided of a split output makes its history on first use: that is no
    # change of its base, so no "modified inplace" refusal (fuzz_views seed 5)
    def f(x):
        v = x.split(2)[0].unfold(-1, 1, 2)
        return v * 2

    g = maybe_compiled(f, mode, fullgraph=False)
    for k in range(3):
        x = (st.arange(5.0) + k).requires_grad_()
        out = g(x * 1)
        np.testing.assert_array_equal(out.detach().numpy(), [[2.0 * k]])
        out.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2, 0, 0, 0, 0])


def test_as_strided_of_multi_output_as_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(5.0).requires_grad_()
    (x * 1).split(2)[0].unfold(-1, 1, 2).mul(2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 0, 0, 0, 0])


def _chunk_view_read_then_base_write(x1):
    v5 = x1.chunk(2, -1)[0].reshape(4, -1)
    v7 = v5[v5 > 0]            # a data-dependent read: the graph breaks here
    v8 = x1.movedim(-2, 0)
    v8.masked_fill_(v8 < v5, 0)   # v5 read before the write, not after
    return x1, v7


@pytest.mark.parametrize("mode", MODES)
def test_multi_output_read_before_base_write_after_break(mode):
    # the resume's first translation aborts at the write and put the base's history
    # back, but counted that as a change: the retranslation's read of the chunk's view
    # refused it as used after its base was modified (fuzz_views seed 990)
    g = maybe_compiled(_chunk_view_read_then_base_write, mode, fullgraph=False)
    for k in range(3):
        x = (3.0 - st.arange(8.0) + k).reshape(4, 2).requires_grad_()
        out, v7 = g(x * 1)
        col0 = 3.0 - 2 * np.arange(4) + k
        np.testing.assert_array_equal(out.detach().numpy(), np.stack([col0, 0 * col0], 1))
        np.testing.assert_array_equal(v7.detach().numpy(), col0[col0 > 0])
        (out.sum() + v7.sum()).backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.stack([1 + (col0 > 0), 0 * col0], 1))


def test_multi_output_read_before_base_write_as_torch():
    torch = pytest.importorskip("torch")
    x = (3.0 - torch.arange(8.0)).reshape(4, 2).requires_grad_()
    out, v7 = _chunk_view_read_then_base_write(x * 1)
    (out.sum() + v7.sum()).backward()
    xs = (3.0 - st.arange(8.0)).reshape(4, 2).requires_grad_()
    so, s7 = _chunk_view_read_then_base_write(xs * 1)
    (so.sum() + s7.sum()).backward()
    np.testing.assert_array_equal(so.detach().numpy(), out.detach().numpy())
    np.testing.assert_array_equal(xs.grad.numpy(), x.grad.numpy())


@pytest.mark.parametrize("rg", [True, False])
def test_stale_multi_output_answers_requires_grad(rg):
    # a split output whose base was written: torch answers requires_grad (the view's
    # flag, or its base's) while grad_fn, is_leaf and any use raise; symtrace's getter
    # made the view's history first and raised
    x = _base(st, rg).clone()
    a, _ = x.split(2)
    x.mul_(2)
    assert a.requires_grad is rg
    assert a.shape == (2, 3)
    if rg:
        with pytest.raises(RuntimeError, match="returns multiple views"):
            a.grad_fn
        with pytest.raises(RuntimeError, match="returns multiple views"):
            (a * 1).sum()
    # a base that needs no gradient until it is written with one that does
    w = st.ones(4, 3, requires_grad=True)
    y = _base(st, False) * 1
    a, _ = y.split(2)
    with st.no_grad():
        c, _ = y.split(2)
    y.add_(w)
    assert a.requires_grad and not c.requires_grad


def test_stale_multi_output_requires_grad_as_torch():
    # (a view taken under no_grad of a base that requires grad answers True in torch,
    # though nothing flows back through it; symtrace answers False, stale or not: a
    # known difference, not checked here)
    torch = pytest.importorskip("torch")
    for m in (st, torch):
        w = m.ones(4, 3, requires_grad=True)
        y = _base(m, False) * 1
        a, _ = y.split(2)
        y.add_(w)
        assert a.requires_grad, m.__name__
        x = _base(m, True).clone()
        a, _ = x.split(2)
        x.mul_(2)
        assert a.requires_grad, m.__name__
        with pytest.raises(RuntimeError, match="returns multiple views"):
            a.is_leaf
