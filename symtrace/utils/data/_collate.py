"""default_collate / default_convert (torch.utils.data._utils.collate): a list of
samples -> a batch, recursing into dicts, namedtuples, tuples and lists.

Leaves: tensors are stacked (st.stack); numpy arrays and numpy scalars become
tensors and are stacked; Python floats -> a float64 tensor, ints -> int64, bools ->
bool (as torch); str / bytes stay a list. symtrace has no uint8 / int8 / int16 /
uint16 dtypes: numpy arrays of those become int32 tensors (torch keeps uint8 etc.).
"""
import collections.abc
import copy
import re

from ... import _C

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _np():
    try:
        import numpy
        return numpy
    except ImportError:  # pragma: no cover
        return None


def _as_tensor(x, dtype=None):
    return x if isinstance(x, _C.TensorBase) and dtype is None else _C.tensor(x, dtype)


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ... import _ops
    return _ops.stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    np = _np()
    return _as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    from ..._dtype import float64
    return _C.tensor(list(batch), float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _C.tensor(list(batch))


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def _build_map():
    m = {_C.TensorBase: collate_tensor_fn}
    np = _np()
    if np is not None:
        m[np.ndarray] = collate_numpy_array_fn
        m[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
    m[float] = collate_float_fn
    m[int] = collate_int_fn
    m[str] = collate_str_fn
    m[bytes] = collate_str_fn
    return m


default_collate_fn_map = _build_map()


def collate(batch, *, collate_fn_map=None):
    """The general collate: leaves by collate_fn_map (exact type first, then
    isinstance in the map's order), containers recursed."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
                return clone
            return elem_type({k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
        except TypeError:
            return {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):   # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def default_collate(batch):
    """torch.utils.data.default_collate: a list of samples -> one batch (tensors
    gain a leading batch dimension); see the module docstring."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """What the DataLoader applies to each sample when batching is off
    (batch_size=None): numpy arrays / scalars -> tensors, containers recursed."""
    elem_type = type(data)
    if isinstance(data, _C.TensorBase):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return elem_type({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
