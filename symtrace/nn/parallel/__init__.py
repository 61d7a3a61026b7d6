"""symtrace.nn.parallel: DistributedDataParallel and DataParallel (defined in nn/modules/parallel.py)."""
from ..modules.parallel import DataParallel, DistributedDataParallel, data_parallel  # noqa: F401

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
