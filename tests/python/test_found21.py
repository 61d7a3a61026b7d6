# Findings of the twenty-first session's fuzzing (h-fuzz8's leftovers),
# fixed by the lead: an instance attribute of an OrderedDict read in
# compiled code is guarded (fuzz_guards 831438: it was baked, so deleting it
# later kept the old value); an op with no gradient runs on a split output
# whose base was written in place, as torch's does (fuzz_views 810070: it
# raised the multi-output view error); indices into an empty indexed dim
# raise IndexError even when the result is empty (fuzz_views 802076).
import collections

import pytest

import symtrace as st


def test_ordereddict_instance_attribute_is_guarded():
    g0 = collections.OrderedDict(a=3.0)
    f = st.compile(lambda x: x + getattr(g0, "z", 0.5))
    x = st.zeros(1)
    got = [f(x).item()]
    g0.z = 1.0
    got += [f(x).item(), f(x).item()]
    g0.z = 2.0
    got.append(f(x).item())
    del g0.z
    got += [f(x).item(), f(x).item()]
    assert got == [0.5, 1.0, 1.0, 2.0, 0.5, 0.5]


def test_ordereddict_instance_attribute_read_directly():
    g1 = collections.OrderedDict(a=3.0)
    g1.k = 2.0
    h = st.compile(lambda x: x * g1.k + g1["a"])
    x = st.ones(1)
    got = [h(x).item()]
    g1.k = 5.0
    got.append(h(x).item())
    g1["a"] = 1.0
    got.append(h(x).item())
    assert got == [5.0, 8.0, 6.0]


def _stale_split():
    b = st.ones(3, 3, requires_grad=True)
    x = b.clone()
    v = x.chunk(3, 1)[0]
    x.add_(1)
    return v


def test_ops_without_gradient_run_on_a_stale_split_output():
    v = _stale_split()
    assert (v != v).sum().item() == 0
    assert (v > 0).all().item() is True
    assert st.isnan(v).any().item() is False
    # a differentiable use still refuses, as torch
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view"):
        (v * 2).sum()


def test_ops_without_gradient_on_a_stale_split_output_match_torch():
    torch = pytest.importorskip("torch")
    b = torch.ones(3, 3, requires_grad=True)
    x = b.clone()
    v = x.chunk(3, 1)[0]
    x.add_(1)
    sv = _stale_split()
    assert (v != v).sum().item() == (sv != sv).sum().item()
    assert (v == v).sum().item() == (sv == sv).sum().item()


@pytest.mark.parametrize("shape,key,want", [
    ((0, 0), lambda L: (L.tensor([0, 0]),), IndexError),
    ((0, 3), lambda L: (L.tensor([0]),), IndexError),
    ((3, 0), lambda L: (slice(None), L.tensor([0])), IndexError),
    ((0, 3), lambda L: (L.tensor([], dtype=L.int64),), (0, 3)),
    ((2, 0), lambda L: (L.tensor([5]),), (1, 0)),
    ((0, 3), lambda L: (slice(None), L.tensor([5])), (0, 1)),
])
def test_index_into_an_empty_dim(shape, key, want):
    z = st.zeros(*shape)
    if want is IndexError:
        with pytest.raises(IndexError, match="out of bounds for dimension with size 0"):
            z[key(st)]
        with pytest.raises(IndexError):
            z[key(st)] = 1.0
    else:
        assert tuple(z[key(st)].shape) == want
    torch = pytest.importorskip("torch")
    tz = torch.zeros(*shape)
    if want is IndexError:
        with pytest.raises(IndexError):
            tz[key(torch)]
    else:
        assert tuple(tz[key(torch)].shape) == want


def test_setitem_of_a_tensor_onto_itself():
    """x[...] = x (fuzz_compile 890069): torch's copy_ returns at once when the
    source is the very elements of the destination, also for an expanded x
    (a stride-0 destination it otherwise refuses); symtrace copied the source
    out first, then refused to write the copy into the expanded tensor."""
    import numpy as np
    x = st.tensor(np.arange(3, dtype=np.float32).reshape(3, 1)).expand(3, 2)
    x[...] = x
    assert x.tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    y = st.arange(6.0).reshape(2, 3)
    y[...] = y
    y[:, :] = y
    assert y.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    z = st.ones(3, requires_grad=True)
    w = z.clone()
    w[...] = w
    w.sum().backward()
    assert z.grad.tolist() == [1.0, 1.0, 1.0]
    # a different expanded source into an expanded destination is still refused
    with pytest.raises(RuntimeError, match="single memory location"):
        x[...] = st.ones(3, 2)
    f = st.compile(lambda t: t.__setitem__(Ellipsis, t) or t * 2)
    for _ in range(3):
        a = st.tensor(np.arange(3, dtype=np.float32).reshape(3, 1)).expand(3, 2)
        assert f(a).tolist() == [[0.0, 0.0], [2.0, 2.0], [4.0, 4.0]]
