# symtrace.utils.data.DataLoader with worker processes (num_workers > 0): batches
# against torch's DataLoader with workers on the same datasets (sequential order,
# values, dtypes, shapes; shuffled epochs are permutations; IterableDataset
# sharding), the same shuffled batches and the same main-generator consumption for
# any num_workers / persistent_workers (the sampler runs in the main process; one
# base seed drawn per epoch), tensors of every dtype crossing the process boundary, in_order,
# worker_init_fn / get_worker_info, per-worker seeding (distinct per worker,
# reproducible under st.manual_seed), persistent_workers (same pids across epochs,
# an abandoned epoch's batches dropped), errors in workers (type, worker id and
# traceback text), a SIGKILLed worker, timeout, clean shutdown (no child processes
# left), and the 'spawn' start method with the module-level datasets below.
# Every loader has a timeout so that a bug fails a test instead of hanging it.
import gc
import multiprocessing
import os
import random
import signal
import time

import numpy as np
import pytest

import symtrace as st
from symtrace.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

T = 20  # seconds: the timeout= of every loader (a batch normally takes milliseconds)

# symtrace starts threads at import (its kernel thread pool), so Python >= 3.12 warns
# at every fork; the workers here only run small single-threaded kernels.
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")


# ---------------------------------------------------------------- datasets (module level: 'spawn' pickles them)
class Items(Dataset):
    """Numpy / Python samples: collated to symtrace tensors by symtrace, to torch
    tensors by torch."""

    def __init__(self, n=11):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.arange(3, dtype=np.float32) + i, "i": i, "f": i / 4, "pair": (np.int64(i), [i, -i])}


class WhoAmI(Dataset):
    """Sample i: (i, worker id, num_workers, seed, pid, what worker_init_fn left)."""

    def __init__(self, n=8, delay=0.0, gate=None, gate_wait=0.0):
        self.n, self.delay, self.gate, self.gate_wait = n, delay, gate, gate_wait
        self.tag = "main"

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        if self.gate is not None and i == 0:      # worker 0 holds sample 0 until the gate opens
            self.gate.wait(self.gate_wait)
        if self.delay:
            time.sleep(self.delay)
        return i, info.id, info.num_workers, info.seed, os.getpid(), info.dataset.tag


def tag_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    info.dataset.tag = f"init{worker_id}"


class RandomSamples(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return st.rand(2), random.random(), np.random.rand(), get_worker_info().id


class Rows(Dataset):
    """Sample i: (i, a float vector): values that depend on i only."""

    def __init__(self, n=22):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, np.arange(3, dtype=np.float32) * i + 0.5


class Noisy(Dataset):
    """Sample i: i plus random augmentation from symtrace's, Python's and numpy's
    generators in the process that fetches it."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return i, st.rand(2), random.random(), np.random.rand()


class Shards(IterableDataset):
    """range(n), split between workers (each worker iterates its own copy, so the
    dataset shards itself); get_info: symtrace's or torch's get_worker_info."""

    def __init__(self, n, get_info=get_worker_info, shard=True):
        self.n, self.get_info, self.shard = n, get_info, shard

    def __iter__(self):
        info = self.get_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class Failing(Dataset):
    def __init__(self, exc, bad=3):
        self.exc, self.bad = exc, bad

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc
        return i


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")


class Typed(Dataset):
    """Symtrace tensors of every dtype, a 0-d one and a non-contiguous one."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        x = st.arange(6, dtype=st.float32).reshape(2, 3) + i
        return {"f32": x.t(), "f64": x.double(), "f16": x.half(), "bf16": x.to(st.bfloat16),
                "i32": x.int(), "i64": st.tensor(i), "b": x > 2.5}


def _batches(dl):
    return [b for b in dl]


_before = set()     # child processes that existed before the current test (not ours)


def _children():
    """The child processes started (and not yet joined) since the test began."""
    return [p for p in multiprocessing.active_children() if p not in _before]


@pytest.fixture(autouse=True)
def no_children_left():
    """Every test leaves no worker process behind."""
    _before.clear()
    _before.update(multiprocessing.active_children())
    yield
    gc.collect()
    deadline = time.monotonic() + 5
    while _children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _children() == []


def _same(ours, theirs, torch):
    """ours (symtrace) has the structure, types, shapes, dtypes and values of theirs (torch)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, st.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in theirs:
            _same(ours[k], theirs[k], torch)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b, torch)
    else:
        assert type(ours) is type(theirs) and ours == theirs


# ---------------------------------------------------------------- against torch
@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (4, True), (None, False)])
def test_batches_match_torch(torch, batch_size, drop_last):
    ds = Items(11)
    ours = DataLoader(ds, batch_size=batch_size, drop_last=drop_last, num_workers=2, timeout=T)
    theirs = torch.utils.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last, num_workers=2,
                                         timeout=T)
    a, b = _batches(ours), _batches(theirs)
    assert len(a) == len(b) == len(ours) == len(theirs)
    for x, y in zip(a, b):
        _same(x, y, torch)
    single = _batches(DataLoader(ds, batch_size=batch_size, drop_last=drop_last))
    for x, y in zip(single, b):
        _same(x, y, torch)


def test_shuffled_epochs_are_permutations(torch):
    ds = Items(23)
    ours = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, timeout=T)
    theirs = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, timeout=T)

    def order(dl):
        return [i for b in dl for i in b["i"].tolist()]
    st.manual_seed(3)
    e1, e2 = order(ours), order(ours)
    t1 = order(theirs)
    assert sorted(e1) == sorted(e2) == sorted(t1) == list(range(23))
    assert e1 != list(range(23)) and e1 != e2
    st.manual_seed(3)
    assert order(ours) == e1                     # the same seed in the main process: the same order


def test_iterable_dataset_sharding_matches_torch(torch):
    class TorchShards(Shards, torch.utils.data.IterableDataset):      # torch needs its own base class
        pass
    ours = _batches(DataLoader(Shards(17), batch_size=3, num_workers=2, timeout=T))
    theirs = _batches(torch.utils.data.DataLoader(TorchShards(17, torch.utils.data.get_worker_info),
                                                  batch_size=3, num_workers=2, timeout=T))
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert sorted(i for b in ours for i in b.tolist()) == list(range(17))     # each sample once
    # batches come from the workers in turn: worker 0 has the even numbers
    assert ours[0].tolist() == [0, 2, 4] and ours[1].tolist() == [1, 3, 5]
    # not sharded: every worker iterates its whole copy, so each sample comes twice (as torch)
    dup = [i for b in DataLoader(Shards(5, shard=False), batch_size=2, num_workers=2, timeout=T)
           for i in b.tolist()]
    assert sorted(dup) == sorted(list(range(5)) * 2)
    nobatch = [int(x) for x in DataLoader(Shards(5), batch_size=None, num_workers=2, timeout=T)]
    assert nobatch == [0, 1, 2, 3, 4]
    dropped = [b.tolist() for b in DataLoader(Shards(10), batch_size=3, drop_last=True, num_workers=2,
                                              timeout=T)]
    assert dropped == [[0, 2, 4], [1, 3, 5]]     # each worker's short last batch dropped


# ---------------------------------------------------------------- tensors across processes
def test_tensors_cross_processes():
    ref = _batches(DataLoader(Typed(), batch_size=4))
    got = _batches(DataLoader(Typed(), batch_size=4, num_workers=2, timeout=T, pin_memory=True))
    assert len(got) == len(ref) == 2
    for b, r in zip(got, ref):
        assert list(b) == list(r)
        for k in r:
            assert type(b[k]) is st.Tensor and b[k].dtype is r[k].dtype and tuple(b[k].shape) == tuple(r[k].shape)
            assert b[k].float().tolist() == r[k].float().tolist(), k
    assert got[0]["f32"].is_contiguous() and tuple(got[0]["f32"].shape) == (4, 3, 2)
    # a TensorDataset: samples come from tensors in the worker's copy of the dataset
    x, y = st.randn(10, 3), st.arange(10)
    for (xb, yb), (xr, yr) in zip(DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2, timeout=T),
                                  DataLoader(TensorDataset(x, y), batch_size=4)):
        np.testing.assert_array_equal(xb.numpy(), xr.numpy())
        assert yb.tolist() == yr.tolist() and yb.dtype is st.int64


# ---------------------------------------------------------------- order, workers, seeds
def test_in_order():
    # worker 0 holds batch 0 for 0.3 s: worker 1's batches are ready first
    ds = WhoAmI(8, gate=multiprocessing.Event(), gate_wait=0.3)
    got = [b[0].tolist() for b in DataLoader(ds, batch_size=2, num_workers=2, timeout=T)]
    assert got == [[0, 1], [2, 3], [4, 5], [6, 7]]
    # in_order=False: worker 0 holds batch 0 until the main process has received one from worker 1
    gate = multiprocessing.Event()
    it = iter(DataLoader(WhoAmI(8, gate=gate, gate_wait=T), batch_size=2, num_workers=2, timeout=T,
                         in_order=False))
    first = next(it)
    gate.set()
    loose = [first[0].tolist()] + [b[0].tolist() for b in it]
    assert first[1].tolist() == [1, 1] and loose[0] == [2, 3]     # did not wait for worker 0
    assert sorted(loose) == got and loose != got


def test_worker_init_fn_and_get_worker_info():
    ds = WhoAmI(8)
    assert get_worker_info() is None
    st.manual_seed(11)
    rows = [r for b in DataLoader(ds, batch_size=None, num_workers=2, worker_init_fn=tag_worker, timeout=T,
                                  multiprocessing_context=multiprocessing.get_context("fork"))
            for r in [b]]
    assert [r[0] for r in rows] == list(range(8))
    ids = {r[1] for r in rows}
    assert ids == {0, 1} and {r[2] for r in rows} == {2}
    by_worker = {r[1]: r for r in rows}
    assert by_worker[1][3] == by_worker[0][3] + 1                    # seed = base_seed + id
    assert len({r[4] for r in rows}) == 2 and os.getpid() not in {r[4] for r in rows}
    assert all(r[5] == f"init{r[1]}" for r in rows)                  # worker_init_fn ran in each worker
    assert ds.tag == "main" and get_worker_info() is None            # the main process's copy is untouched
    st.manual_seed(11)
    again = list(DataLoader(ds, batch_size=None, num_workers=2, timeout=T))
    assert {r[3] for r in again} == {r[3] for r in rows}             # base seed reproducible


def test_worker_rng_distinct_and_reproducible():
    def run(seed):
        st.manual_seed(seed)
        out = {}
        for t, r, n, w in DataLoader(RandomSamples(), batch_size=None, num_workers=2, timeout=T):
            out.setdefault(int(w), []).append((tuple(t.tolist()), r, float(n)))
        return out
    a, b, c = run(5), run(5), run(6)
    assert set(a) == {0, 1} and all(len(v) == 4 for v in a.values())
    assert a == b                                                     # reproducible given st.manual_seed
    assert a != c
    for k in range(3):                                                # st.rand, random, numpy all differ
        assert [v[k] for v in a[0]] != [v[k] for v in a[1]]
    assert len({v[0] for w in a.values() for v in w}) == 8           # no repeated draws inside a worker


# ---------------------------------------------------------------- the same batches for any num_workers
# (num_workers, persistent_workers): the sampler runs in the main process and every
# epoch draws one base seed from the loader's generator before the sampler's draws
_CONFIGS = [(0, False), (1, False), (2, False), (3, False), (1, True), (3, True)]


def _rows(b):
    return b[0].tolist(), b[1].tolist()


def _shuffled_epochs(num_workers, persistent, generator, seed, epochs=3):
    """The batches of `epochs` shuffled epochs of a loader built right after
    st.manual_seed(seed), then the global generator's state and the loader's
    generator's state."""
    st.manual_seed(seed)
    gen = generator(seed) if generator is not None else None
    dl = DataLoader(Rows(), batch_size=4, shuffle=True, num_workers=num_workers,
                    persistent_workers=persistent, generator=gen, timeout=T if num_workers else 0)
    out = [[_rows(b) for b in dl] for _ in range(epochs)]
    return out, st.get_rng_state().tolist(), dl.generator.getstate() if dl.generator is not None else None


@pytest.mark.parametrize("generator", [None, lambda s: s, lambda s: random.Random(s + 1)],
                         ids=["global", "int", "random.Random"])
def test_shuffled_batches_independent_of_num_workers(generator):
    runs = {cfg: _shuffled_epochs(*cfg, generator, seed=7) for cfg in _CONFIGS}
    ref_epochs, ref_global, ref_gen = runs[(0, False)]
    assert len(ref_epochs) == 3 and all(len(e) == 6 for e in ref_epochs)
    for e in ref_epochs:
        order = [i for b in e for i in b[0]]
        assert sorted(order) == list(range(22)) and order != list(range(22))
        assert all(b[1] == [[0.5, i + 0.5, 2 * i + 0.5] for i in b[0]] for b in e)
    assert ref_epochs[0] != ref_epochs[1] != ref_epochs[2]
    for cfg, (epochs, global_state, gen_state) in runs.items():
        assert epochs == ref_epochs, cfg                     # the same batches, in the same order
        assert global_state == ref_global, cfg               # the generators advanced the same way
        assert gen_state == ref_gen, cfg
    if generator is not None:                                # the global generator is left alone
        st.manual_seed(7)
        assert ref_global == st.get_rng_state().tolist()
    # run to run: a new loader after the same seed gives the same epochs; another seed does not
    assert _shuffled_epochs(2, False, generator, seed=7) == runs[(0, False)]
    assert _shuffled_epochs(0, False, generator, seed=8)[0] != ref_epochs


def test_main_generator_consumption_per_epoch():
    # one base seed, then the sampler's seed: two draws per epoch, whatever the workers
    from symtrace.utils.data.sampler import _draw_seed
    st.manual_seed(3)
    for _ in range(2 * 2):
        _draw_seed()
    expected = st.get_rng_state().tolist()
    for nw, persistent in [(0, False), (2, False), (2, True)]:
        st.manual_seed(3)
        dl = DataLoader(Rows(8), batch_size=3, shuffle=True, num_workers=nw, persistent_workers=persistent,
                        timeout=T if nw else 0)
        for _ in range(2):
            _batches(dl)
        assert st.get_rng_state().tolist() == expected, (nw, persistent)
        del dl
    # without shuffle only the base seed is drawn
    st.manual_seed(3)
    _draw_seed()
    expected = st.get_rng_state().tolist()
    for nw in (0, 2):
        st.manual_seed(3)
        _batches(DataLoader(Rows(8), batch_size=3, num_workers=nw, timeout=T if nw else 0))
        assert st.get_rng_state().tolist() == expected, nw


def test_draws_between_iter_and_next_and_abandoned_epochs():
    # the sampler draws at iter(loader) for any num_workers, so what the training loop
    # draws after it (and an epoch left half way) changes nothing between worker counts
    def run(nw, persistent):
        st.manual_seed(21)
        dl = DataLoader(Rows(), batch_size=5, shuffle=True, num_workers=nw, persistent_workers=persistent,
                        timeout=T if nw else 0)
        it = iter(dl)
        noise = st.rand(3).tolist()
        first = _rows(next(it))
        del it                                               # abandoned after one batch
        rest = [[_rows(b) for b in dl] for _ in range(2)]
        return noise, first, rest, st.rand(2).tolist()
    ref = run(0, False)
    assert run(2, False) == ref and run(3, True) == ref


def test_worker_seed_is_base_seed_plus_id():
    from symtrace.utils.data.dataloader import _base_seed
    st.manual_seed(5)
    base = _base_seed(None)                                  # the first draw after the seed
    st.manual_seed(5)
    dl = DataLoader(WhoAmI(6), batch_size=None, shuffle=True, num_workers=3, persistent_workers=True,
                    timeout=T)
    e1, e2 = list(dl), list(dl)
    assert {(r[1], r[3]) for r in e1} == {(w, base + w) for w in range(3)}
    # persistent workers keep the generators (and seed) they started with, as torch
    assert {(r[1], r[3]) for r in e2} == {(w, base + w) for w in range(3)}
    assert sorted(r[0] for r in e1) == sorted(r[0] for r in e2) == list(range(6))
    assert [r[0] for r in e1] != [r[0] for r in e2]
    g = random.Random(9)
    base = _base_seed(g)
    rows = list(DataLoader(WhoAmI(4), batch_size=None, num_workers=2, generator=random.Random(9), timeout=T))
    assert {(r[1], r[3]) for r in rows} == {(0, base), (1, base + 1)}


@pytest.mark.parametrize("persistent", [False, True])
def test_augmentation_in_workers_reproducible(persistent):
    def run(seed):
        st.manual_seed(seed)
        dl = DataLoader(Noisy(), batch_size=3, shuffle=True, num_workers=2, persistent_workers=persistent,
                        timeout=T)
        return [[(b[0].tolist(), b[1].tolist(), b[2].tolist(), b[3].tolist()) for b in dl] for _ in range(2)]
    a, b = run(4), run(4)
    assert a == b                                            # run to run, epoch after epoch
    assert a[0] != a[1] and run(5) != a
    # the first epoch has the same samples in the same batches as with num_workers=0;
    # the next ones do not: there the augmentation draws from the main process's
    # global generator, which the next epoch's sampler seed comes from (torch alike)
    st.manual_seed(4)
    dl = DataLoader(Noisy(), batch_size=3, shuffle=True)
    single = [[b[0].tolist() for b in dl] for _ in range(2)]
    assert [x[0] for x in a[0]] == single[0] and [x[0] for x in a[1]] != single[1]
    # with a generator= the orders stay apart from the augmentation's draws
    orders = []
    for nw in (0, 2):
        st.manual_seed(4)
        dl = DataLoader(Noisy(), batch_size=3, shuffle=True, num_workers=nw, generator=random.Random(4),
                        persistent_workers=persistent and nw > 0, timeout=T if nw else 0)
        orders.append([[b[0].tolist() for b in dl] for _ in range(2)])
    assert orders[0] == orders[1]


def test_worker_count_parity_like_torch(torch):
    # torch: the sampler runs in the main process, so the shuffled batches do not
    # depend on num_workers; its permutations are not ours (other generators), the
    # structure is the same: per epoch a base seed, then the sampler's seed
    def ours(nw):
        st.manual_seed(2)
        dl = DataLoader(Rows(10), batch_size=4, shuffle=True, num_workers=nw, timeout=T if nw else 0)
        return [[b[0].tolist() for b in dl] for _ in range(2)]

    def theirs(nw):
        torch.manual_seed(2)
        dl = torch.utils.data.DataLoader(Rows(10), batch_size=4, shuffle=True, num_workers=nw,
                                         timeout=T if nw else 0)
        return [[b[0].tolist() for b in dl] for _ in range(2)], torch.rand(1).item()
    a, (b, after) = ours(0), theirs(0)
    assert ours(2) == a and theirs(2) == (b, after)
    for x, y in zip(a, b):
        assert [len(t) for t in x] == [len(t) for t in y] == [4, 4, 2]
        assert sorted(i for t in x for i in t) == sorted(i for t in y for i in t) == list(range(10))
    torch.manual_seed(2)
    for _ in range(2 * 2):                                   # two int64 draws per epoch
        torch.empty((), dtype=torch.int64).random_()
    assert torch.rand(1).item() == after


# ---------------------------------------------------------------- persistent workers
def test_persistent_workers():
    ds = WhoAmI(8)
    dl = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True, timeout=T)
    e1, e2 = _batches(dl), _batches(dl)
    assert [b[0].tolist() for b in e1] == [b[0].tolist() for b in e2] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    pids1, pids2 = {p for b in e1 for p in b[4].tolist()}, {p for b in e2 for p in b[4].tolist()}
    assert len(pids1) == 2 and pids1 == pids2                         # the same two processes
    assert len(_children()) == 2
    # an epoch abandoned half way: the next one starts afresh (stale batches dropped)
    it = iter(dl)
    assert next(it)[0].tolist() == [0, 1]
    assert [b[0].tolist() for b in dl] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    # without persistent_workers every epoch has new processes
    plain = DataLoader(ds, batch_size=4, num_workers=2, timeout=T)
    p1 = {p for b in plain for p in b[4].tolist()}
    p2 = {p for b in plain for p in b[4].tolist()}
    assert len(p1) == len(p2) == 2 and not p1 & p2
    # IterableDataset: every epoch gives all the data again
    it_dl = DataLoader(Shards(7), batch_size=2, num_workers=2, persistent_workers=True, timeout=T)
    for _ in range(3):
        assert sorted(i for b in it_dl for i in b.tolist()) == list(range(7))
    del dl, it, it_dl
    gc.collect()
    assert _children() == []


# ---------------------------------------------------------------- errors
def test_exception_in_worker_names_worker_and_traceback():
    it = iter(DataLoader(Failing(ValueError("bad sample 3")), batch_size=2, num_workers=2, timeout=T))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError) as ei:
        next(it)                                  # batch [2, 3]: worker 1
    msg = str(ei.value)
    assert "Caught ValueError in DataLoader worker process 1." in msg
    assert "Original Traceback" in msg and "bad sample 3" in msg and "__getitem__" in msg
    assert next(it).tolist() == [4, 5]            # later batches still come
    del it

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(Failing(KeyError("k"), bad=0), batch_size=2, num_workers=2, timeout=T))
    with pytest.raises(RuntimeError, match="Caught NeedsTwoArgs in DataLoader worker process"):
        list(DataLoader(Failing(NeedsTwoArgs(1, 2)), batch_size=2, num_workers=2, timeout=T))

    class Local(Exception):                       # does not pickle: arrives as a RuntimeError
        pass
    with pytest.raises(RuntimeError, match="Caught Local in DataLoader worker process 1"):
        list(DataLoader(Failing(Local("x")), batch_size=2, num_workers=2, timeout=T))


def test_worker_init_fn_and_collate_errors():
    def bad_init(worker_id):
        if worker_id == 1:
            raise ZeroDivisionError("init failed")
    with pytest.raises(ZeroDivisionError, match=r"worker process 1\.(.|\n)*init failed"):
        list(DataLoader(Items(8), batch_size=2, num_workers=2, worker_init_fn=bad_init, timeout=T))
    # a batch that does not pickle is an error in the main process, not a hang
    with pytest.raises(Exception, match="DataLoader worker process 0"):
        next(iter(DataLoader(Items(4), batch_size=2, num_workers=1, timeout=T,
                             collate_fn=lambda b: (lambda: b))))


def test_killed_worker_raises():
    dl = DataLoader(WhoAmI(40, delay=0.02), batch_size=2, num_workers=2, timeout=T)
    it = iter(dl)
    first = next(it)
    pid = first[4].tolist()[0]                    # worker 0's pid
    assert pid in [w.pid for w in _children()]
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"worker 0 \(pid {pid}, killed by signal SIGKILL\)"):
        for _ in it:
            pass
    assert time.monotonic() - t0 < 5
    assert _children() == []                      # the other worker was shut down and joined
    with pytest.raises(StopIteration):
        next(it)


def test_timeout():
    it = iter(DataLoader(WhoAmI(1, delay=0.6), batch_size=1, num_workers=1, timeout=0.2))
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        next(it)                                  # the sample takes 0.6 s
    assert time.monotonic() - t0 < 0.58
    del it                                        # the worker finishes its sample, then exits


# ---------------------------------------------------------------- shutdown
def test_no_children_left_after_delete():
    dl = DataLoader(WhoAmI(40), batch_size=2, num_workers=2, timeout=T)
    it = iter(dl)
    next(it)
    procs = _children()
    assert len(procs) == 2 and all(p.is_alive() for p in procs)
    del it                                        # abandoned mid-epoch
    assert _children() == [] and all(p.exitcode is not None for p in procs)
    it = iter(DataLoader(WhoAmI(5), batch_size=2, num_workers=2, timeout=T))  # the loader is gone
    assert len(it) == 3 and len(list(it)) == 3
    assert _children() == []                      # exhausted: the workers exit at StopIteration
    for _ in dl:
        pass
    assert _children() == []
    for b in dl:                                  # left by break, then collected
        break
    del b
    gc.collect()
    assert _children() == []


# ---------------------------------------------------------------- spawn
def test_spawn_context():
    x = st.arange(24, dtype=st.float32).reshape(12, 2)
    ds = TensorDataset(x, st.arange(12))
    ref = _batches(DataLoader(ds, batch_size=5))
    dl = DataLoader(ds, batch_size=5, num_workers=2, multiprocessing_context="spawn", timeout=T)
    got = _batches(dl)
    assert [[b.tolist() for b in g] for g in got] == [[b.tolist() for b in r] for r in ref]
    assert all(type(t) is st.Tensor for g in got for t in g)
    rows = list(DataLoader(WhoAmI(4), batch_size=None, num_workers=2, worker_init_fn=tag_worker, timeout=T,
                           multiprocessing_context="spawn"))
    assert [r[0] for r in rows] == [0, 1, 2, 3] and {r[1] for r in rows} == {0, 1}
    assert all(r[5] == f"init{r[1]}" for r in rows)
    with pytest.raises(Exception, match="must be picklable"):
        iter(DataLoader(Items(4), num_workers=1, multiprocessing_context="spawn", collate_fn=lambda b: b))


def _matmul_in_child(q):
    a = st.ones(512, 512)
    f = st.compile(lambda x: (x @ x).sum(), backend="llvm")
    v = float(f(a))
    q.put((v, len(os.listdir("/proc/self/task"))))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2
                    or os.environ.get("SYMTRACE_NUM_THREADS") == "1",
                    reason="needs /proc and two cores for the kernel thread pool")
def test_forked_child_gets_its_own_kernel_threads():
    # the parent's pool threads do not survive a fork: the child makes fresh
    # locks and starts its own workers (llvm_backend/pool.c after_fork_child)
    f = st.compile(lambda x: (x @ x).sum(), backend="llvm")
    assert float(f(st.ones(512, 512))) == 512.0 ** 3
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_matmul_in_child, args=(q,))
    p.start()
    try:
        v, threads = q.get(timeout=60)
    finally:
        p.join(10)
    assert p.exitcode == 0
    assert v == 512.0 ** 3
    assert threads >= 2
