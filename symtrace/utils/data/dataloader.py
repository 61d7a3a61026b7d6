"""DataLoader (torch.utils.data.DataLoader).

num_workers=0 (the default) builds batches in the calling process.

num_workers=N > 0 starts N worker processes per iterator (per epoch, or once with
persistent_workers=True), with the platform's default start method or the one
multiprocessing_context names ('fork', 'spawn', 'forkserver', or a context
object). Each worker holds its own copy of the dataset, collate_fn and
worker_init_fn (inherited under 'fork'; pickled under 'spawn' / 'forkserver', so
they must then be importable: defined at module level, no lambdas). As in torch:

- the main process sends each worker the indices of a batch through the worker's
  own queue (at most prefetch_factor batches, default 2, outstanding per worker,
  handed out round robin); the worker collates the batch and sends it back through
  one result queue shared by all workers. Tensors cross as their raw bytes
  (_transport.py: symtrace tensors do not pickle) and come back as new contiguous
  symtrace tensors with the same values, dtype, shape and class. There is no shared
  memory: each batch is copied through a pipe.
- in_order=True (the default) yields batches in sampler order whichever worker
  finishes first (early ones wait in a buffer); in_order=False yields them as
  they arrive.
- the sampler and the batch sampler run in the main process, whatever num_workers:
  workers only fetch the index batches they are sent. So the batches, and their
  order (in_order=True), depend on the sampler's generator and never on
  num_workers or persistent_workers (see "Randomness" below).
- seeding: each iterator draws base_seed from the loader's generator (generator=None:
  symtrace's global generator, so st.manual_seed(s) in the main process makes it
  reproducible); worker i seeds Python's random, symtrace's generator and numpy's
  global generator from seed = base_seed + i (get_worker_info().seed). Persistent
  workers keep their seeded generators across epochs.
- get_worker_info() is None in the main process and a WorkerInfo (id, num_workers,
  seed, dataset) in a worker; worker_init_fn(worker_id) runs in each worker after
  seeding, before its first batch.
- IterableDataset: every worker iterates its own copy of the whole dataset, so
  without sharding (in __iter__ or worker_init_fn, via get_worker_info()) each
  sample comes num_workers times. Batches come from the workers in turn; the epoch
  ends when every worker's iterator is exhausted.
- errors: an exception in a worker (dataset, collate_fn, worker_init_fn) is raised in
  the main process by the __next__ that would have returned that batch, as the same
  exception type (RuntimeError where that type cannot be rebuilt from a message)
  with "Caught ValueError in DataLoader worker process 0." and the worker's
  traceback text; the iterator stays usable for the next batches. A worker that
  dies (killed by a signal, os._exit) makes __next__ raise RuntimeError naming the
  worker, its pid and the signal or exit code, and shuts the other workers down:
  the main process waits on the result queue in short polls and checks the
  workers' liveness between them. timeout > 0: RuntimeError when a batch takes
  longer than timeout seconds.
- shutdown: the workers exit, and are joined (no zombies), when the iterator is
  exhausted (without persistent_workers), garbage collected (also out of a
  reference cycle, e.g. an exception's traceback: it is a weakref.finalize, which
  also runs at interpreter exit), or one of its workers died; with
  persistent_workers, when the DataLoader holding it is garbage collected. A worker
  still alive 5 seconds after being told to exit is terminated. Workers are
  daemonic (they may not start processes) and also exit by themselves within a
  second of finding their parent process gone.
- 'fork' copies a process that already runs threads (symtrace's kernel thread pool
  starts at import; Python >= 3.12 warns about it), and a forked worker must not
  use CUDA: use multiprocessing_context='spawn' for workers that need a GPU.

pin_memory / pin_memory_device are accepted and do nothing: batches are ordinary CPU
tensors (symtrace has no pinned host memory).

Randomness. Every epoch (every iter(loader)) draws, in this order, from the
loader's generator (generator=None: symtrace's global generator):
  1. base_seed: one draw, for num_workers=0 too (unused there), and for every epoch
     of persistent workers too (unused after the first: the workers keep the
     generators seeded at their start);
  2. the sampler's own draws (RandomSampler and the other built-in samplers: one
     seed, or a use of the generator passed to them, at their first index), made
     when the iterator is created: num_workers=0 takes the first index batch from
     the sampler at iter() as the workers' prefetching does.
So the main generator advances the same way per epoch for any num_workers and
persistent_workers, and st.manual_seed(s) (or the same generator=) before building
the loader gives the same sequence of epochs: the same index batches, hence the
same batches for a map-style dataset whose __getitem__ is deterministic, for
num_workers = 0, 1, 2, ... with or without persistent_workers. in_order=False
yields the same batches in arrival order, which varies. (A __getitem__ that draws
from the global generator breaks this after the first epoch: with num_workers=0
its draws advance the main process's generator, which the next epoch's seeds come
from; in workers they do not. Give the loader a generator= to keep the epochs'
orders apart from it.)
Random ops inside a dataset's __getitem__ (or collate_fn) run on the generators of
the process fetching the sample: in the main process for num_workers=0 (its global
generators, which the training loop also draws from), in worker i on generators
seeded from base_seed + i. They are reproducible run to run for a given seed,
num_workers and persistent_workers (with in_order=True batches go to the workers
round robin, so each worker sees the same samples in the same order), and are
not equal to the values of a run with another num_workers (torch promises no
more: its docs only state the per-worker seeding).
A custom sampler that draws from the global generator lazily, index by index,
sees the prefetching of workers (up to prefetch_factor * num_workers batches
ahead) interleave with the training loop's draws differently than num_workers=0
does: give such a sampler its own generator.
Compared with torch: the same structure (a base seed drawn per iterator before the
sampler's draws, worker seed base_seed + id, numpy seeded from a hash of
(worker id, base seed)); the values differ (other generators). torch's persistent
workers draw no base seed after their first epoch, so in torch the epochs after
the first differ between persistent_workers=True and False or num_workers=0; here
they are the same. torch's num_workers=0 iterator takes its first index at the
first next(), not at iter().
IterableDataset: there is no sampler; each worker iterates its own copy of the
dataset (shard it with get_worker_info()), so the batches and their order depend
on num_workers, as in torch. The base seed is drawn all the same.
"""
import itertools
import multiprocessing
import queue
import signal
import time
import weakref

from .dataset import IterableDataset
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      _as_generator, _draw_seed, _rng)
from ._collate import default_collate, default_convert
from . import _transport
from ._worker import (ExceptionWrapper, WorkerInfo, _Fetcher, _IterableDatasetStopIteration,  # noqa: F401
                      _ResumeIteration, _worker_loop, get_worker_info)

__all__ = ["DataLoader", "get_worker_info"]


_POLL_S = 0.1          # the main process checks its workers' liveness this often while waiting
_JOIN_TIMEOUT_S = 5.0  # how long a worker told to exit gets before it is terminated


def _mp_context(ctx, num_workers):
    """multiprocessing_context checked: None, a context object, or a start method name."""
    if ctx is None:
        return None
    if num_workers == 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(ctx, str):
        valid = multiprocessing.get_all_start_methods()
        if ctx not in valid:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                             f"{valid!r}, but got multiprocessing_context={ctx!r}")
        return multiprocessing.get_context(ctx)
    if not isinstance(ctx, multiprocessing.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                        f"specifying the start method, but got multiprocessing_context={ctx!r}")
    return ctx




class DataLoader:
    """Iterates over dataset in batches: DataLoader(dataset, batch_size=1, shuffle=False,
    sampler=None, batch_sampler=None, num_workers=0, collate_fn=None, drop_last=False,
    generator=None, timeout=0, worker_init_fn=None, multiprocessing_context=None,
    prefetch_factor=None, persistent_workers=False, pin_memory=False, in_order=True).
    Each iter() is one epoch (shuffle draws a new order per epoch; see
    symtrace.utils.data.sampler for reproducibility); num_workers > 0 loads in worker
    processes (see the module docstring)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"prefetch_factor option should be a positive integer, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        multiprocessing_context = _mp_context(multiprocessing_context, num_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        generator = _as_generator(generator)

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        else:
            self._iterable = False
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")

        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if self._iterable and batch_size is not None:
            if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
                raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None      # the persistent workers' iterator

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        if not self.persistent_workers:
            return _MultiProcessingDataLoaderIter(self)
        it = self._iterator
        if it is None or it._shutdown:
            it = self._iterator = _MultiProcessingDataLoaderIter(self)
        else:
            it._reset(self)
        return it

    def check_worker_number_rationality(self):
        pass


class _SingleProcessDataLoaderIter:
    """One pass over a DataLoader."""

    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._collate_fn = loader.collate_fn
        self._num_yielded = 0
        # drawn (and unused) as by the worker iterator, so that the loader's generator
        # advances the same way for any num_workers (torch draws it too)
        self._base_seed = _base_seed(loader.generator)
        # the same fetcher as a worker's: one batch per index batch (map-style) or per
        # call (iterable)
        self._fetcher = _Fetcher(self._dataset, loader._iterable, loader._auto_collation,
                                 self._collate_fn, loader.batch_size, loader.drop_last)
        if loader._iterable:
            self._it = self._iterable_batches()
        else:
            self._it = map(self._fetcher.fetch, _started(loader._index_sampler))

    def _iterable_batches(self):
        while True:
            try:
                batch = self._fetcher.fetch(None)
            except StopIteration:
                return
            yield batch

    def __iter__(self):
        return self

    def __next__(self):
        r = next(self._it)
        self._num_yielded += 1
        return r

    def __len__(self):
        return len(self._loader)


class _MultiProcessingDataLoaderIter:
    """One pass (or, with persistent_workers, every pass) over a DataLoader with
    worker processes; see the module docstring. With persistent_workers it holds
    only a weak reference to the loader (the loader holds it: deleting the loader
    shuts the workers down)."""

    def __init__(self, loader):
        self._loader = None if loader.persistent_workers else loader     # for len()
        self._loader_ref = weakref.ref(loader)
        self._num_workers = n = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        self._timeout = loader.timeout
        self._iterable = loader._iterable
        self._index_sampler = None if loader._iterable else loader._index_sampler
        self._num_yielded = 0
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        base_seed = _base_seed(loader.generator)
        payload = (loader.dataset, loader._iterable, loader._auto_collation, loader.collate_fn,
                   loader.batch_size, loader.drop_last, loader.worker_init_fn)
        pickled = ctx.get_start_method() != "fork"
        if pickled:
            try:
                payload = _transport.dumps(payload)
            except Exception as e:
                raise type(e)(f"DataLoader with multiprocessing_context '{ctx.get_start_method()}' sends "
                              f"the dataset, collate_fn and worker_init_fn to its workers by pickling: "
                              f"they must be picklable (defined at module level, no lambdas): {e}") from e
        self._workers, self._index_queues = [], []
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._workers_status = [True] * n
        self._told_to_exit = [False] * n
        # Shutdown is a weakref.finalize, not __del__: it runs when this iterator is
        # collected (also from a reference cycle, such as an exception's traceback
        # holding it) or at interpreter exit, and its registry keeps the queues and
        # processes alive until it has run (a garbage-collected multiprocessing.Queue
        # stops its feeder thread, which would lose the exit messages).
        self._finalizer = weakref.finalize(self, _shutdown_workers, self._workers, self._index_queues,
                                           self._result_queue, self._done_event, self._told_to_exit)
        try:
            for i in range(n):
                q = ctx.Queue()
                q.cancel_join_thread()      # never blocks this process's exit on a dead worker's queue
                self._index_queues.append(q)
                w = ctx.Process(target=_worker_loop, daemon=True,
                                args=(i, n, base_seed + i, base_seed, payload, pickled, q,
                                      self._result_queue, self._done_event))
                w.start()
                self._workers.append(w)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    @property
    def _worker_pids(self):
        return [w.pid for w in self._workers]

    def _reset(self, loader, first_iter=False):
        if not first_iter:
            # a new epoch of persistent workers draws its base seed as a new iterator
            # would (torch does not): the loader's generator then advances the same way
            # per epoch for any num_workers. The workers keep their seeded generators.
            _base_seed(loader.generator)
        self._sampler_iter = (itertools.repeat(None) if self._iterable
                              else iter(self._index_sampler))
        self._num_yielded = 0
        self._send_idx = 0           # the next task to send
        self._rcvd_idx = 0           # the next task to yield
        # tasks sent and not yet yielded: idx -> (worker_id,) or, arrived early, (worker_id, data)
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: start a new epoch, dropping what the last one left in flight
            # (each worker answers the marker after everything it sent before it)
            for q in self._index_queues:
                q.put(_ResumeIteration())
            waiting = self._num_workers
            while waiting:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):          # the next active worker with room, if any
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                if self._in_order or self._workers_num_tasks[wid] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._workers_num_tasks[wid] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _check_workers(self):
        """Raises RuntimeError (after shutting the rest down) if a worker that still has
        work died."""
        dead = [(i, w) for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
        if not dead:
            return
        what = []
        for i, w in dead:
            code = w.exitcode
            if code is not None and code < 0:
                try:
                    how = f"killed by signal {signal.Signals(-code).name}"
                except ValueError:
                    how = f"killed by signal {-code}"
            else:
                how = f"exit code {code}"
            what.append(f"worker {i} (pid {w.pid}, {how})")
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker process exited unexpectedly: {', '.join(what)}")

    def _get_data(self):
        """The next (task idx, data) from the result queue, waiting in _POLL_S steps and
        checking the workers between them."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            self._check_workers()
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _next_data(self):
        while True:
            # skip tasks given to workers that ran out of data (IterableDataset) before them
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:                       # arrived earlier
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1], info[0])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._mark_worker_done(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    return self._process_data(data, self._task_info.pop(idx)[0])
                self._task_info[idx] += (data,)
                continue
            wid = self._task_info.pop(idx)[0]
            self._rcvd_idx += 1
            return self._process_data(data, wid)

    def _mark_worker_done(self, wid):
        """A worker's IterableDataset iterator is exhausted: no more tasks for it this
        epoch (and, without persistent workers, it may exit now)."""
        self._workers_status[wid] = False
        self._workers_num_tasks[wid] = 0
        if not self._persistent and not self._told_to_exit[wid]:
            self._told_to_exit[wid] = True
            self._index_queues[wid].put(None)

    def _process_data(self, data, wid):
        self._workers_num_tasks[wid] -= 1
        self._try_put_index()
        obj = _transport.loads(data)
        if isinstance(obj, ExceptionWrapper):
            obj.reraise()
        return obj

    def __iter__(self):
        return self

    def __next__(self):
        if self._shutdown:
            raise StopIteration
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self):
        loader = self._loader if self._loader is not None else self._loader_ref()
        if loader is None:
            raise TypeError("len() of a persistent DataLoader iterator whose DataLoader was deleted")
        return len(loader)

    @property
    def _shutdown(self):
        return not self._finalizer.alive

    def _shutdown_workers(self):
        """Stops the workers now (idempotent)."""
        self._finalizer()


def _shutdown_workers(workers, index_queues, result_queue, done_event, told_to_exit):
    """Tells every worker to exit, joins them (terminating any still alive after
    _JOIN_TIMEOUT_S) and closes the queues. Refers to no iterator (a finalizer)."""
    try:
        done_event.set()                  # workers skip the tasks still queued
        for i, q in enumerate(index_queues):
            if not told_to_exit[i]:
                told_to_exit[i] = True
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + _JOIN_TIMEOUT_S
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
        for w in workers:
            if w.is_alive():
                w.terminate()
                w.join()
    finally:
        for q in index_queues:
            q.close()
        result_queue.cancel_join_thread()
        result_queue.close()


def _started(sampler):
    """iter(sampler) with its first item already taken (and given back first): the
    sampler makes its random draws now, at iter(loader), as the workers' prefetching
    makes them, rather than at the first next()."""
    it = iter(sampler)
    for first in it:
        return itertools.chain((first,), it)
    return it


def _base_seed(generator):
    """The iterator's base seed for its workers, from the loader's generator (None:
    symtrace's global generator), as torch draws it from torch's."""
    if generator is None:
        return _draw_seed()
    return _rng(generator).getrandbits(62)
