"""Functional ops: argument normalization in PyTorch's conventions, then one
call into symtrace._C (the logic lives in C: shape/dtype inference, errors,
kernels). Every public name mirrors torch's.

One file a concern, each saying at its top what it owns: _core (shared helpers),
dtypes, elementwise, creation, float_math, indexing, shape, reductions, linalg, scans,
random, scatter_ops, rank_select (topk by counted ranks, for graphs), sorting (sort,
topk, median, unique, ...), aliases (small torch
functions and aliases over the others), extras (more of those: addmv, addr, vander,
trapezoid, index_reduce, the top-level in-place functions, ...) and statistics (bincount,
histc, histogram, histogramdd, cov, corrcoef), bitshift (bitwise_left/right_shift) and
view_copies (torch's *_copy functions). This file imports them and re-exports every name
each one defines, public and private, so that symtrace._ops.X, symtrace.X and the X the
other files call are one object."""

# Decomposed ops: PyTorch APIs written over the ops that have kernels (no kernels of
# their own): autograd comes from theirs, and symtrace.compile traces their primitive ops
# into the graph. They branch on shapes and dtypes only, never on tensor values (the value
# queries allclose/equal and one_hot's class count excepted). Only functions whose result
# *shape* depends on tensor values (nonzero, masked_select, unique, ...) read values, as
# torch also must, and so do the orderings of sorting.py (sort, topk, median, ...: found on
# the host, then the values gathered from the input, differentiably).

# In dependency order: each file imports only files before it, except elementwise, which
# imports nonzero (scatter_ops) at its end for where(condition); so elementwise comes
# before every file that imports it.
from . import (_core, dtypes, elementwise, creation, float_math, indexing, shape, reductions,
               linalg, scans, random, scatter_ops, rank_select, sorting, aliases, special_core,
               special_erf, special_bessel, special_gamma, special_poly, numeric, extras, statistics, bitshift, view_copies)

for _m in (_core, dtypes, elementwise, creation, float_math, indexing, shape, reductions, linalg,
           scans, random, scatter_ops, rank_select, sorting, aliases, special_core, special_erf,
           special_bessel, special_gamma, special_poly, numeric, extras, statistics, bitshift, view_copies):
    globals().update((_n, _v) for _n, _v in vars(_m).items() if not _n.startswith("__"))
del _m

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v)
           and (getattr(_v, "__module__", None) or "").startswith(__name__ + ".")]
