"""The DataLoader worker process (torch.utils.data._utils.worker): its loop,
get_worker_info(), and how its exceptions reach the main process.

A worker reads (task index, sampler index) messages from its own index queue,
builds the batch (dataset[i] for each index, then collate_fn, or the next
batch_size samples of its own iterator over an IterableDataset), and puts
(task index, bytes) on the result queue shared by all workers: the bytes are the
batch pickled by _transport.dumps (tensors included), or an ExceptionWrapper
pickled the same way. Pickling happens in the worker's own thread, so a batch
that does not pickle becomes an error the main process raises rather than an
item multiprocessing's feeder thread silently drops.

Messages on the index queue besides tasks: None (exit), _ResumeIteration (a new
epoch of persistent workers: restart the IterableDataset iterator and answer
with the marker). A worker exits on None, or when, idle for _PARENT_CHECK_S
seconds, it finds its parent process gone or the shutdown event set.
"""
import itertools
import os
import queue
import random
import sys
import traceback

from . import _transport

__all__ = ["WorkerInfo", "get_worker_info"]

_PARENT_CHECK_S = 1.0

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id (0 .. num_workers - 1),
    num_workers, seed (this worker's seed: the loader's base seed + id) and dataset
    (this process's copy of the dataset). Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """In a DataLoader worker process: its WorkerInfo (id, num_workers, seed,
    dataset). In the main process: None. Use it in an IterableDataset's __iter__ to
    give each worker its own share of the data (each worker iterates its own copy
    of the dataset, so without that every sample comes once per worker), or in a
    worker_init_fn to configure the worker's copy of the dataset."""
    return _worker_info


class _KeyErrorMessage(str):
    """A KeyError's message shown as is (KeyError repr()s its argument)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as its type
    and its formatted traceback; reraise() raises it there."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            exc = None
        if exc is None:
            raise RuntimeError(msg) from None
        try:
            raise exc
        finally:
            del exc                          # no frame <-> traceback cycle keeping the iterator alive


class _IterableDatasetStopIteration:
    """A worker's IterableDataset iterator is exhausted (for this epoch)."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Start of a new epoch for persistent workers (sent, then echoed back)."""


def _seed_worker(seed, base_seed, worker_id):
    """Python's random, symtrace's generator and numpy's legacy global generator."""
    random.seed(seed)
    from ... import _ops
    _ops.manual_seed(seed)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return
    state = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]).generate_state(4)
    np.random.seed(state)


class _Fetcher:
    """Builds one batch per task from the worker's copy of the dataset."""

    def __init__(self, dataset, iterable, auto_collation, collate_fn, batch_size, drop_last):
        self.dataset = dataset
        self.iterable = iterable
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.it = iter(dataset) if iterable else None

    def fetch(self, index):
        if self.iterable:
            if not self.auto_collation:
                return self.collate_fn(next(self.it))
            batch = list(itertools.islice(self.it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                raise StopIteration
            return self.collate_fn(batch)
        ds = self.dataset
        if self.auto_collation:
            getitems = getattr(ds, "__getitems__", None)
            return self.collate_fn(getitems(index) if callable(getitems) else [ds[i] for i in index])
        return self.collate_fn(ds[index])


def _picklable_error(worker_id):
    """The current exception as bytes; its type becomes RuntimeError where the type
    itself does not pickle (a class defined inside a function, say)."""
    w = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    try:
        return _transport.dumps(w)
    except Exception:
        w.exc_type = RuntimeError          # the message still names the original type
        return _transport.dumps(w)


def _worker_loop(worker_id, num_workers, seed, base_seed, payload, pickled, index_queue, result_queue,
                 done_event):
    global _worker_info
    parent = os.getppid()
    interrupted = False
    try:
        fetcher = None
        init_error = None
        try:
            if pickled:
                payload = _transport.loads(payload)
            dataset, iterable, auto_collation, collate_fn, batch_size, drop_last, worker_init_fn = payload
            _seed_worker(seed, base_seed, worker_id)
            _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
            if worker_init_fn is not None:
                worker_init_fn(worker_id)
            fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn, batch_size, drop_last)
        except Exception:
            init_error = _picklable_error(worker_id)    # the answer to every task

        pending_error = None
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=_PARENT_CHECK_S)
            except queue.Empty:
                if os.getppid() != parent or done_event.is_set():
                    break                    # the main process is gone, or shut down without a word
                continue
            if r is None:
                break
            if isinstance(r, _ResumeIteration):
                if fetcher is not None and fetcher.iterable:
                    try:
                        fetcher.it = iter(fetcher.dataset)
                    except Exception:
                        pending_error = _picklable_error(worker_id)
                iteration_end = False
                result_queue.put((r, None))
                continue
            if done_event.is_set() or iteration_end:
                continue                     # shutting down, or nothing left to give this epoch
            idx, index = r
            if fetcher is None:              # worker_init_fn (or unpickling the dataset) failed
                data = init_error
            elif pending_error is not None:
                data, pending_error = pending_error, None
            else:
                try:
                    data = _transport.dumps(fetcher.fetch(index))
                except StopIteration:
                    if not fetcher.iterable:
                        data = _picklable_error(worker_id)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = _picklable_error(worker_id)
            result_queue.put((idx, data))
            del data, r
    except KeyboardInterrupt:
        interrupted = True                   # the main process handles Ctrl-C
    if interrupted or done_event.is_set() or os.getppid() != parent:
        # shutting down: results nobody will read must not keep this process alive
        result_queue.cancel_join_thread()
    # Otherwise (an exhausted IterableDataset worker told to exit while the others go
    # on) let the feeder thread finish: exiting in the middle of its write would leave
    # the result queue's write lock, shared by all workers, held forever.
    result_queue.close()
