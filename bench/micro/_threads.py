"""bench/micro/_threads.py - one thread count for symtrace and torch in a benchmark
(--threads N of resnet_step and bn_step): SYMTRACE_NUM_THREADS is read when
symtrace's pool starts, so call this before the first kernel runs."""
import os


def set_threads(n):
    """n > 0: both libraries use n threads; 0: their defaults."""
    if not n:
        return
    os.environ["SYMTRACE_NUM_THREADS"] = str(n)
    try:
        import torch
        torch.set_num_threads(n)
    except ImportError:
        pass
