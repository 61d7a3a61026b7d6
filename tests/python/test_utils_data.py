# symtrace.utils.data (datasets, samplers, default_collate, DataLoader): batches
# against torch's DataLoader on the same data (sequential order, values, shapes,
# dtypes), default_collate against torch's for tensors / numpy / Python numbers /
# strings / dicts / tuples / lists / namedtuples, drop_last and len(), shuffling
# (a permutation, reproducible under st.manual_seed or a generator, new per
# epoch), random_split, Subset / ConcatDataset / IterableDataset, argument
# errors, num_workers=0 running in the main process, and a short training loop
# over a DataLoader with a compiled step. Worker processes (num_workers > 0):
# test_dataloader_workers.py. The torch fixture skips the torch parts.
import random
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.utils.data
from symtrace.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                                 RandomSampler, SequentialSampler, StackDataset, Subset,
                                 SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                                 default_collate, default_convert, get_worker_info, random_split)

Pair = namedtuple("Pair", "a b")


def _xy(n=10):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n).astype(np.int64)


def _name(dt):
    return str(dt).split(".")[-1]


def same(ours, theirs, torch):
    """ours (symtrace) has the structure, types, shapes, dtypes and values of theirs (torch)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, st.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert _name(ours.dtype) == _name(theirs.dtype), (ours.dtype, theirs.dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in theirs:
            same(ours[k], theirs[k], torch)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (type(ours), type(theirs))
        for a, b in zip(ours, theirs):
            same(a, b, torch)
    else:
        assert type(ours) is type(theirs) and ours == theirs


def test_import_paths():
    assert st.utils.data.DataLoader is DataLoader is symtrace.utils.data.dataloader.DataLoader
    assert get_worker_info() is None


# ---------------------------------------------------------------- against torch
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (4, True), (10, False),
                                                  (16, False), (16, True)])
def test_sequential_batches_match_torch(torch, batch_size, drop_last):
    x, y = _xy()
    ours = DataLoader(TensorDataset(st.tensor(x), st.tensor(y)), batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                         batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    a, b = list(ours), list(theirs)
    assert len(a) == len(b) == len(ours)
    for bo, bt in zip(a, b):
        same(bo, bt, torch)


def test_default_collate_matches_torch(torch):
    rng = np.random.default_rng(1)
    samples = []
    for i in range(4):
        arr = rng.standard_normal((2, 3))
        samples.append({
            "t": st.tensor(arr.astype(np.float32)),
            "i64": st.tensor(np.array([i, i + 1], dtype=np.int64)),
            "np32": arr.astype(np.float32), "np64": arr, "npi": np.arange(3) + i, "npb": arr > 0,
            "nps": np.float32(i / 3), "npi64": np.int64(i), "npbool": np.bool_(i % 2),
            "int": i, "float": i / 7, "bool": bool(i % 2), "str": f"s{i}", "bytes": b"b",
            "tuple": (i, float(i), "k"), "list": [i, [i * 2, i * 3]], "pair": Pair(i, np.ones(2) * i),
            "od": OrderedDict([("z", i), ("a", 0.5)]),
        })

    def to_torch(v):
        if isinstance(v, st.Tensor):
            return torch.tensor(v.numpy())
        if isinstance(v, dict):
            return type(v)((k, to_torch(x)) for k, x in v.items())
        if isinstance(v, Pair):
            return Pair(*(to_torch(x) for x in v))
        if isinstance(v, (list, tuple)):
            return type(v)(to_torch(x) for x in v)
        return v

    ours = default_collate(samples)
    theirs = torch.utils.data.default_collate([to_torch(s) for s in samples])
    same(ours, theirs, torch)
    assert ours["float"].dtype is st.float64 and ours["int"].dtype is st.int64 and ours["bool"].dtype is st.bool
    # tuples of tensors (TensorDataset samples) and a flat list of numbers
    pairs = [(st.tensor([float(i)]), st.tensor(i)) for i in range(3)]
    same(default_collate(pairs), torch.utils.data.default_collate(
        [(torch.tensor([float(i)]), torch.tensor(i)) for i in range(3)]), torch)
    same(default_collate([1.5, 2.5]), torch.utils.data.default_collate([1.5, 2.5]), torch)
    same(default_convert({"a": np.ones(2, np.float32), "b": (1, "x")}),
         torch.utils.data.default_convert({"a": np.ones(2, np.float32), "b": (1, "x")}), torch)


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([st.ones(2), st.ones(3)])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_collated_shapes_without_torch():
    batch = default_collate([(np.zeros((2, 3), np.float32), 1, 0.5, "a"),
                             (np.ones((2, 3), np.float32), 2, 1.5, "b")])
    assert isinstance(batch, list) and len(batch) == 4
    assert tuple(batch[0].shape) == (2, 2, 3) and batch[0].dtype is st.float32
    assert batch[1].tolist() == [1, 2] and batch[1].dtype is st.int64
    assert batch[2].tolist() == [0.5, 1.5] and batch[2].dtype is st.float64
    assert batch[3] == ("a", "b")          # strings stay as they are batched (a tuple here, as torch)
    p = default_collate([Pair(1, st.ones(2)), Pair(2, st.zeros(2))])
    assert type(p) is Pair and p.a.tolist() == [1, 2] and tuple(p.b.shape) == (2, 2)


# ---------------------------------------------------------------- len / drop_last / sampling
@pytest.mark.parametrize("n,bs", [(10, 3), (9, 3), (1, 4), (0, 2)])
def test_len_and_drop_last(n, bs):
    ds = TensorDataset(st.arange(n))
    for drop_last in (False, True):
        dl = DataLoader(ds, batch_size=bs, drop_last=drop_last)
        batches = [b[0].tolist() for b in dl]
        assert len(dl) == len(batches) == (n // bs if drop_last else -(-n // bs))
        flat = [i for b in batches for i in b]
        assert flat == list(range(n // bs * bs if drop_last else n))
        assert all(len(b) == bs for b in batches[:-1])
        if drop_last:
            assert all(len(b) == bs for b in batches)


def _order(dl):
    return [i for (b,) in dl for i in b.tolist()]


def test_shuffle_is_a_reproducible_permutation():
    ds = TensorDataset(st.arange(50))
    dl = DataLoader(ds, batch_size=7, shuffle=True)
    st.manual_seed(123)
    e1, e2 = _order(dl), _order(dl)
    assert sorted(e1) == sorted(e2) == list(range(50))
    assert e1 != list(range(50)) and e1 != e2           # shuffled, and anew each epoch
    st.manual_seed(123)
    assert _order(dl) == e1 and _order(dl) == e2      # the same seed replays both epochs
    st.manual_seed(123)
    assert _order(DataLoader(ds, batch_size=5, shuffle=True)) == e1   # batch size does not change the order
    st.manual_seed(124)
    assert _order(dl) != e1
    # an explicit generator: reproducible whatever the global seed
    g1 = _order(DataLoader(ds, batch_size=8, shuffle=True, generator=7))
    st.manual_seed(999)
    assert _order(DataLoader(ds, batch_size=8, shuffle=True, generator=7)) == g1
    r = random.Random(7)
    assert _order(DataLoader(ds, batch_size=8, shuffle=True, generator=r)) == g1
    assert _order(DataLoader(ds, shuffle=True, generator=np.random.default_rng(0))) != list(range(50))

    class Seeded:                          # a Generator-like object (torch.Generator's initial_seed())
        def initial_seed(self):
            return 7
    assert _order(DataLoader(ds, batch_size=8, shuffle=True, generator=Seeded())) == g1


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    rs = RandomSampler(range(5), num_samples=12, generator=0)
    out = list(rs)
    assert len(out) == len(rs) == 12 and sorted(out[:5]) == sorted(out[5:10]) == list(range(5))
    assert len(set(out[10:])) == 2
    rep = list(RandomSampler(range(3), replacement=True, num_samples=200, generator=1))
    assert len(rep) == 200 and set(rep) == {0, 1, 2}
    assert sorted(SubsetRandomSampler([5, 9, 11], generator=2)) == [5, 9, 11]
    w = list(WeightedRandomSampler([0.0, 1.0, 3.0], 300, generator=3))
    assert 0 not in w and w.count(2) > w.count(1) > 0
    wn = list(WeightedRandomSampler(st.tensor([1.0, 0.0, 2.0, 5.0]), 3, replacement=False, generator=4))
    assert sorted(wn) == [0, 2, 3]
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(TypeError, match="generator"):
        RandomSampler(range(3), generator="seed")


def test_random_split():
    ds = TensorDataset(st.arange(20))
    st.manual_seed(5)
    parts = random_split(ds, [5, 15])
    assert [len(p) for p in parts] == [5, 15]
    idx = [set(p.indices) for p in parts]
    assert not (idx[0] & idx[1]) and idx[0] | idx[1] == set(range(20))
    assert [p[i][0].item() for p in parts for i in range(len(p))] == [i for p in parts for i in p.indices]
    st.manual_seed(5)
    assert [p.indices for p in random_split(ds, [5, 15])] == [p.indices for p in parts]
    assert [p.indices for p in random_split(ds, [5, 15], generator=1)] == \
        [p.indices for p in random_split(ds, [5, 15], generator=1)]
    fr = random_split(range(11), [0.3, 0.3, 0.4], generator=0)
    assert [len(p) for p in fr] == [4, 3, 4]           # floor 3, 3, 4; the remainder to the first
    assert sorted(i for p in fr for i in p) == list(range(11))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [5, 5])
    with pytest.warns(UserWarning, match="Length of split at index 0 is 0"):
        random_split(range(2), [0.0, 1.0])


def test_random_split_fraction_lengths_match_torch(torch):
    for n, fr in [(11, [0.3, 0.3, 0.4]), (10, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]), (100, [0.33, 0.33, 0.34])]:
        ours = [len(p) for p in random_split(range(n), fr, generator=0)]
        theirs = [len(p) for p in torch.utils.data.random_split(range(n), fr)]
        assert ours == theirs, (n, fr)


# ---------------------------------------------------------------- datasets
class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.float32(i) * np.ones(2, np.float32), "y": i * i}

    def __len__(self):
        return self.n


class Counter(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_datasets():
    s = Subset(Squares(10), [9, 2, 4])
    assert len(s) == 3 and s[0]["y"] == 81 and [d["y"] for d in s.__getitems__([1, 2])] == [4, 16]
    c = Squares(3) + Squares(2)
    assert isinstance(c, ConcatDataset) and len(c) == 5
    assert [c[i]["y"] for i in range(5)] == [0, 1, 4, 0, 1] and c[-1]["y"] == 1
    with pytest.raises(IndexError):
        c[5]
    with pytest.raises(AssertionError, match="IterableDataset"):
        ConcatDataset([Counter(2)])
    b = next(iter(DataLoader(c, batch_size=5)))
    assert b["y"].tolist() == [0, 1, 4, 0, 1] and tuple(b["x"].shape) == (5, 2) and b["x"].dtype is st.float32
    sd = StackDataset(a=Squares(3), b=TensorDataset(st.arange(3)))
    assert sd[2]["a"]["y"] == 4 and sd[2]["b"][0].item() == 2
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(st.ones(3), st.ones(4))
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_iterable_dataset_and_batching_options():
    dl = DataLoader(Counter(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    dl = DataLoader(Counter(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]] and len(dl) == 2
    assert list(Counter(2) + Counter(3)) == [0, 1, 0, 1, 2] and len(Counter(2) + Counter(3)) == 5
    assert [b.tolist() for b in DataLoader(Counter(2) + Counter(3), batch_size=4)] == [[0, 1, 0, 1], [2]]
    nb = list(DataLoader(Squares(3), batch_size=None))       # no batching: default_convert per sample
    assert len(nb) == 3 and isinstance(nb[1]["x"], st.Tensor) and nb[1]["y"] == 1
    bs = DataLoader(Squares(6), batch_sampler=[[5, 0], [3]])
    assert [b["y"].tolist() for b in bs] == [[25, 0], [9]]
    sm = DataLoader(Squares(6), batch_size=2, sampler=[4, 1, 3])
    assert [b["y"].tolist() for b in sm] == [[16, 1], [9]] and len(sm) == 2
    cf = DataLoader(Squares(4), batch_size=2, collate_fn=lambda batch: [d["y"] for d in batch])
    assert list(cf) == [[0, 1], [4, 9]]
    it = iter(DataLoader(Squares(5), batch_size=2))
    assert len(it) == 3 and next(it)["y"].tolist() == [0, 1]


def test_dataloader_argument_errors():
    ds = Squares(4)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Counter(3), shuffle=True)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)


def test_num_workers_zero_runs_in_main_process():
    seen = []

    def collate(batch):
        seen.append(get_worker_info())
        return default_collate(batch)
    dl = DataLoader(Squares(5), batch_size=2, num_workers=0, collate_fn=collate, pin_memory=True)
    assert [b["y"].tolist() for b in dl] == [[0, 1], [4, 9], [16]]
    assert seen == [None, None, None]                 # called here, in this process
    assert dl.prefetch_factor is None and dl._iterator is None
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Squares(5), persistent_workers=True)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process"):
        DataLoader(Squares(5), multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="valid start method"):
        DataLoader(Squares(5), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="multiprocessing_context option should be"):
        DataLoader(Squares(5), num_workers=1, multiprocessing_context=3)
    with pytest.raises(ValueError, match="prefetch_factor option should be a positive integer"):
        DataLoader(Squares(5), num_workers=1, prefetch_factor=0)
    assert DataLoader(Squares(5), num_workers=1).prefetch_factor == 2    # no workers start before iter()


# ---------------------------------------------------------------- training
def test_training_loop_with_compiled_step():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    w_true = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    y = x @ w_true + 0.1

    def run(compiled):
        st.manual_seed(0)
        model = nn.Linear(4, 1)
        opt = st.optim.SGD(model.parameters(), lr=0.1)

        def step(xb, yb):
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        fn = st.compile(step) if compiled else step
        before = st._C._fe_stats()["translations"]
        dl = DataLoader(TensorDataset(st.tensor(x), st.tensor(y)), batch_size=16, shuffle=True, drop_last=True)
        st.manual_seed(1)
        losses = [float(fn(xb, yb)) for _ in range(5) for xb, yb in dl]
        translated = st._C._fe_stats()["translations"] - before
        assert (translated >= 1) if compiled else (translated == 0)
        return losses, model.weight.detach().numpy().copy()

    st.reset()
    try:
        eager, w_eager = run(False)
        comp, w_comp = run(True)
    finally:
        st.reset()
    assert len(eager) == 20
    assert eager[-1] < 0.05 * eager[0]
    np.testing.assert_allclose(comp, eager, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(w_comp, w_eager, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w_eager.T, w_true, atol=0.2)
