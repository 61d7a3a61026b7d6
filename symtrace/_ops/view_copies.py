"""torch's *_copy functions: each view op's result as a new contiguous tensor of its own
(alias_copy, t_copy, permute_copy, ..., unbind_copy, split_copy), written as the view
then a contiguous copy; differentiable as the view and the copy are."""
from .._memory_format import contiguous_format
from ._core import _check_tensor


def _copy_of(view):
    """A contiguous copy of view, never sharing its storage, as torch's *_copy results are
    (clone's default, preserve_format, would keep a permuted view's order)."""
    return view.clone(memory_format=contiguous_format)


def _copying(name, method):
    def f(input, *args, **kwargs):
        _check_tensor(input, name)
        r = getattr(input, method)(*args, **kwargs)
        if isinstance(r, (tuple, list)):
            return tuple(_copy_of(v) for v in r)
        return _copy_of(r)
    f.__name__ = name
    f.__doc__ = f"{name}(input, ...): input.{method}(...) as a new contiguous tensor, as torch.{name}."
    return f


t_copy = _copying("t_copy", "t")
permute_copy = _copying("permute_copy", "permute")
transpose_copy = _copying("transpose_copy", "transpose")
squeeze_copy = _copying("squeeze_copy", "squeeze")
unsqueeze_copy = _copying("unsqueeze_copy", "unsqueeze")
expand_copy = _copying("expand_copy", "expand")
view_copy = _copying("view_copy", "view")
select_copy = _copying("select_copy", "select")
diagonal_copy = _copying("diagonal_copy", "diagonal")
detach_copy = _copying("detach_copy", "detach")
unfold_copy = _copying("unfold_copy", "unfold")
as_strided_copy = _copying("as_strided_copy", "as_strided")
unbind_copy = _copying("unbind_copy", "unbind")
split_copy = _copying("split_copy", "split")
split_with_sizes_copy = _copying("split_with_sizes_copy", "split_with_sizes")


def alias_copy(input):
    """alias_copy(input): a new contiguous copy of input, as torch.alias_copy."""
    _check_tensor(input, "alias_copy")
    return _copy_of(input)


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """slice_copy(input, dim=0, start=None, end=None, step=1): input's slice along dim as a
    new contiguous tensor, as torch.slice_copy."""
    _check_tensor(input, "slice_copy")
    idx = [slice(None)] * input.dim()
    idx[dim] = slice(start, end, step)
    return _copy_of(input[tuple(idx)])
