"""symtrace.utils.data: torch.utils.data's Dataset / Sampler / DataLoader API.

    ds = TensorDataset(x, y)
    for xb, yb in DataLoader(ds, batch_size=32, shuffle=True):
        ...

num_workers=0 loads in the main process; num_workers > 0 loads in worker
processes (see dataloader.py), where get_worker_info() describes the worker.
Shuffling draws its permutation from Python's random.Random; see sampler.py
for what makes it reproducible (st.manual_seed(s) before iterating, or a
generator argument); the batches do not depend on num_workers (dataloader.py).
"""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,  # noqa: F401
                      ChainDataset, Subset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler, BatchSampler)
from ._collate import default_collate, default_convert, collate, default_collate_fn_map  # noqa: F401
from .dataloader import DataLoader, get_worker_info  # noqa: F401
from .distributed import DistributedSampler  # noqa: F401

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "default_collate",
           "default_convert", "DataLoader", "get_worker_info", "DistributedSampler"]
