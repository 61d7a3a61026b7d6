"""DataLoader (torch.utils.data.DataLoader), single-process.

Batches are built in the calling process: num_workers > 0 is accepted for
compatibility but loads in the main process as well (a UserWarning says so;
worker_init_fn is not called, get_worker_info() stays None, and
prefetch_factor / persistent_workers / timeout / multiprocessing_context have
no effect). pin_memory is accepted and does nothing (no pinned host memory).
"""
import warnings

from .dataset import IterableDataset
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      _as_generator)
from ._collate import default_collate, default_convert

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """None: symtrace loads data in the main process (there are no worker processes)."""
    return None


class DataLoader:
    """Iterates over dataset in batches: DataLoader(dataset, batch_size=1, shuffle=False,
    sampler=None, batch_sampler=None, num_workers=0, collate_fn=None, drop_last=False,
    generator=None, ...). Each iter() is one epoch (shuffle draws a new order per
    epoch; see symtrace.utils.data.sampler for reproducibility)."""

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
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0:
            warnings.warn(f"symtrace.utils.data.DataLoader: num_workers={num_workers} is not supported; "
                          "batches are loaded in the main process (no worker processes are started)",
                          UserWarning, stacklevel=2)
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
        return _SingleProcessDataLoaderIter(self)

    def check_worker_number_rationality(self):
        pass


class _SingleProcessDataLoaderIter:
    """One pass over a DataLoader."""

    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._collate_fn = loader.collate_fn
        self._num_yielded = 0
        if loader._iterable:
            self._it = self._iterable_batches(loader)
        else:
            self._it = self._map_batches(loader)

    def _iterable_batches(self, loader):
        it = iter(self._dataset)
        if loader.batch_size is None:
            for x in it:
                yield self._collate_fn(x)
            return
        while True:
            batch = []
            for x in it:
                batch.append(x)
                if len(batch) == loader.batch_size:
                    break
            if not batch or (loader.drop_last and len(batch) < loader.batch_size):
                return
            yield self._collate_fn(batch)
            if len(batch) < loader.batch_size:
                return

    def _map_batches(self, loader):
        ds = self._dataset
        if loader._auto_collation:
            getitems = getattr(ds, "__getitems__", None)
            for indices in loader.batch_sampler:
                data = getitems(indices) if callable(getitems) else [ds[i] for i in indices]
                yield self._collate_fn(data)
        else:
            for i in loader.sampler:
                yield self._collate_fn(ds[i])

    def __iter__(self):
        return self

    def __next__(self):
        r = next(self._it)
        self._num_yielded += 1
        return r

    def __len__(self):
        return len(self._loader)
