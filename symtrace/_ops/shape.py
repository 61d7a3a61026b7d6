"""Movement and shape ops: reshape, flatten, permute, transpose, squeeze/unsqueeze,
cat/stack/split/chunk, broadcast_to, tile and repeat (_repeat), repeat_interleave,
unbind, narrow, flip, roll, movedim, swapaxes, unflatten, atleast_1d/2d/3d, the
hstack/vstack/dstack/column_stack family, rot90, meshgrid and cartesian_prod."""
import builtins
import math
import warnings

from .. import _C
from .._dtype import bool_, int64
from ._core import _attrs, _check_tensor, _is_tensor, _op, _wrap, _wrap_dims
from .creation import arange
from .indexing import index_select
from .._symint import dyn_inline


# ---------------- movement ----------------
def reshape(input, shape):
    _check_tensor(input, "reshape")
    return input.reshape(shape)


@dyn_inline
def flatten(input, start_dim=0, end_dim=-1):
    """flatten(input, start_dim=0, end_dim=-1)."""
    _check_tensor(input, "flatten")
    nd = input.dim()
    if nd == 0:
        return input.reshape(1)
    s = start_dim + nd if start_dim < 0 else start_dim
    e = end_dim + nd if end_dim < 0 else end_dim
    if not (0 <= s < nd and 0 <= e < nd):
        raise IndexError(f"flatten: dimension out of range for a tensor of shape {list(input.shape)} "
                         f"(start_dim={start_dim}, end_dim={end_dim})")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input  # torch's: the tensor itself, no view (x.flatten(-1).detach_() works)
    shape = input.shape
    n = 1
    for v in shape[s:e + 1]:     # not math.prod: a product of sizes that stays symbolic
        n = n * v
    return input.reshape(shape[:s] + (n,) + shape[e + 1:])


def permute(input, dims):
    _check_tensor(input, "permute")
    return input.permute(*dims)


def transpose(input, dim0, dim1):
    _check_tensor(input, "transpose")
    return input.transpose(dim0, dim1)


def squeeze(input, dim=None):
    _check_tensor(input, "squeeze")
    return input.squeeze(dim)


def unsqueeze(input, dim):
    _check_tensor(input, "unsqueeze")
    return input.unsqueeze(dim)


def cat(tensors, dim=0):
    """cat(tensors, dim=0): joins along an existing dim (type promotion as torch)."""
    if _is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not _is_tensor(t):
            raise TypeError(f"cat(): expected a sequence of Tensors, but element {i} is "
                            f"{type(t).__name__}")
    # torch skips 1-D empty tensors in cat's shape checks (legacy behaviour); they still take
    # part in the dtype promotion and in autograd (an empty gradient)
    parts = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)] or tensors[:1]
    skipped = [t for t in tensors if t.dim() == 1 and t.shape[0] == 0 and t is not parts[0]]
    ref = parts[0]
    nd = ref.dim()
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap(dim, nd, "cat")
    rs = ref.shape
    pre, post = rs[:d], rs[d + 1:]
    for i, t in enumerate(parts):
        ts = t.shape
        if len(ts) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{t.dim()} (shapes {list(rs)} and {list(ts)})")
        if ts[:d] != pre or ts[d + 1:] != post:
            k = next(k for k in range(nd) if k != d and ts[k] != rs[k])
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                               f"Expected size {rs[k]} but got size {ts[k]} for "
                               f"tensor number {i} in the list (shapes {list(rs)} "
                               f"and {list(ts)}).")
    return _cat_checked(parts, d, skipped)


def _cat_checked(parts, d, skipped=()):
    """cat of parts checked already (one rank, the same sizes but along d); skipped: 1-D
    empty tensors left out of the result that still promote its dtype and get gradients."""
    ref = parts[0]
    dt = ref.dtype
    total = 0
    grad = False
    for t in list(parts) + list(skipped):
        total += t.shape[d] if len(t.shape) == len(ref.shape) else 0
        grad = grad or t.requires_grad
        if t.dtype != dt:   # promotion (torch's result_type over the parts)
            dt = _C.result_type(_C.empty((1,), dt), t)
    shape = list(ref.shape)
    shape[d] = total
    if grad and _C._is_grad_enabled() and not _C._dyn_shapes():
        # (translated with dynamic shapes: the writes below are traced, and the compiled
        # graph derives their gradient for every size)
        return _cat_function().apply(d, tuple(shape), dt, len(parts), *parts, *skipped)
    return _cat_into(parts, d, shape, dt, skipped)


_CAT = None


def _cat_function():
    """The autograd.Function of cat, made once (a class made per call would leave a
    reference cycle holding the inputs for the garbage collector at every cat)."""
    global _CAT
    if _CAT is None:
        from ..autograd.function import Function

        class _Cat(Function):
            """cat's backward hands each input its slice of the gradient."""
            @staticmethod
            def forward(ctx, d, shape, dt, nparts, *ts):
                ctx.d, ctx.sizes = d, [t.shape[d] for t in ts[:nparts]]
                ctx.nskip = len(ts) - nparts
                return _cat_into(ts[:nparts], d, list(shape), dt, ts[nparts:])

            @staticmethod
            def backward(ctx, g):
                # the skipped 1-D empty tensors get empty gradients
                return (None, None, None, None, *split(g, ctx.sizes, ctx.d),
                        *(g.new_zeros((0,)) for _ in range(ctx.nskip)))
        _CAT = _Cat
    return _CAT


def _cat_into(parts, d, shape, dt, skipped=()):
    """Each part copied into its slice of a fresh tensor (traced: a chain of
    slice_scatters that fusion turns into one store per part). Empty parts that require
    grad (skipped: the 1-D empty ones) move nothing, but the result must read them, as
    eager's autograd does (a compiled graph's output requires grad only where it reads
    an input that does, and an empty write records nothing): the result times 1 + their
    sums (each exactly 0, so each value, -0.0, inf and nan included, is kept)."""
    out = _C.empty(tuple(shape), dt)
    off = 0
    copy, sl = _C.OP_COPY, out._slice
    one = None
    for t in parts:
        n = t.shape[d]
        if n:
            _op(copy, (t,), None, sl(d, off, off + n, 1))
        elif t.requires_grad:
            one = t.sum() if one is None else one + t.sum()
        off += n
    for t in skipped:
        if t.requires_grad:
            one = t.sum() if one is None else one + t.sum()
    return out if one is None else out * (one + 1)


concat = concatenate = cat


@dyn_inline
def stack(tensors, dim=0):
    if _is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"stack(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0].shape if _is_tensor(tensors[0]) else None
    for i, t in enumerate(tensors):
        if not _is_tensor(t):
            raise TypeError(f"stack(): expected a sequence of Tensors, but element {i} is "
                            f"{type(t).__name__}")
        if t.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(s0)} at entry 0 and {list(t.shape)} at entry {i}")
    d = _wrap(dim, len(s0) + 1, "stack")
    # through cat: under dynamic shapes the translator knows its buffer and bounds
    parts = []
    for t in tensors:        # a loop, not a comprehension: the translator unrolls it
        parts.append(t.unsqueeze(d))
    return cat(parts, d)


@dyn_inline
def _piece(tensor, d, start, end):
    """The view tensor[..., start:end, ...] along d, as a subscript: a translation under
    dynamic shapes keeps its bounds symbolic."""
    return tensor[(slice(None),) * d + (slice(start, end),)]


def _multi(v, kind, nr):
    """v, marked as output nr of a multi-view function: torch refuses in-place writes
    into such outputs under autograd (kind 1: Split for an int size, 2: SplitWithSizes
    for a list; unsafe_split clears it)"""
    v._multi_view(kind, nr)
    return v


@dyn_inline
def split(tensor, split_size_or_sections, dim=0):
    """split(tensor, split_size_or_sections, dim=0) -> tuple of views.
    dyn_inline: under dynamic shapes the pieces are subscripts, whose bounds the translator
    keeps symbolic, counted by comparisons (guards on relations, not values), so a split
    (GPT-2's fused c_attn) no longer specializes the tensor's other sizes."""
    _check_tensor(tensor, "split", "tensor")
    nd = tensor.dim()
    d = _wrap(dim, nd, "split")
    n = tensor.shape[d]
    out = []
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0 and not (s == 0 and n == 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
                               if s == 0 else f"split expects split_size be non-negative, but got split_size={s}")
        if s == 0:
            return (_multi(_piece(tensor, d, 0, 0), 1, 0),)
        # at least one piece (an empty one for an empty dim), as torch's; the last one
        # is what is left (a loop, not a comprehension: the translator unrolls it)
        off = 0
        while True:
            end = off + s
            if end >= n:
                out.append(_multi(_piece(tensor, d, off, None), 1, len(out)))
                return tuple(out)
            out.append(_multi(_piece(tensor, d, off, end), 1, len(out)))
            off = end
    sizes = list(split_size_or_sections)
    if builtins.sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                           f"(input tensor's size at dimension {d}), but got split_sizes={sizes}")
    off = 0
    for s in sizes:
        out.append(_multi(_piece(tensor, d, off, off + s), 2, len(out)))
        off += s
    return tuple(out)


@dyn_inline
def chunk(input, chunks, dim=0):
    _check_tensor(input, "chunk")
    if not isinstance(chunks, int) or isinstance(chunks, bool):
        raise TypeError(f"chunk(): argument 'chunks' must be int, not {type(chunks).__name__}")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap(dim, input.dim(), "chunk")
    n = input.shape[d]
    size = (n + chunks - 1) // chunks if n else 0
    if size == 0:
        return tuple(input._slice(d, 0, 0, 1) for _ in range(builtins.min(chunks, 1) if n else chunks))
    return split(input, size, d)


# ---- movement, decomposed ----
def broadcast_to(input, size):
    """broadcast_to(input, size): input expanded to size (a view; -1 keeps a size); as
    torch.broadcast_to."""
    _check_tensor(input, "broadcast_to")
    return input.expand(tuple(size))


def _repeat(input, sizes):
    """Tensor.repeat(*sizes): input tiled sizes[i] times along dim i (new leading dims
    for extra sizes), a new tensor; an expand of interleaved unit dims, then a reshape."""
    sizes = tuple(int(s) for s in sizes)
    nd = input.dim()
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = (1,) * (len(sizes) - nd) + tuple(input.shape)
    out = [r * s for r, s in zip(sizes, shape)]
    for r in sizes:
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r}: {out}")
    inter, big = [], []
    for r, s in zip(sizes, shape):   # a unit dim only where something repeats
        inter += [s] if r == 1 else [1, s]
        big += [s] if r == 1 else [r, s]
    if len(big) > 8:
        # over symtrace's 8 dims: one repeated dim at a time, r copies joined by cat
        e = input.reshape(shape)
        for k, r in enumerate(sizes):
            if r != 1:
                e = cat([e] * r, k) if r else e._slice(k, 0, 0, 1).clone()
        return e
    e = input.reshape(tuple(inter)).expand(tuple(big))
    # a copy always (an expand of unit sizes can reshape into a stride-0 view)
    e = e.clone() if e.is_contiguous() else e.contiguous()
    return e.reshape(tuple(out))


def tile(input, dims):
    """tile(input, dims): repeat with dims padded by leading 1s to input's rank; as torch.tile."""
    _check_tensor(input, "tile")
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    dims = tuple(dims)
    return _repeat(input, (1,) * (input.dim() - len(dims)) + dims)


@dyn_inline
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """repeat_interleave(input, repeats, dim=None): each element repeated `repeats` times along
    dim (input flattened when dim is None); as torch.repeat_interleave. An int (or one-element)
    repeats is a view expanded then reshaped; per-element repeats (a tensor or a list) need the
    counts' values (under compile a graph break) and gather by an index built from them.
    dyn_inline: an int repeats' expand/reshape sizes stay symbolic (GQA's k/v repeat)."""
    _check_tensor(input, "repeat_interleave")
    if repeats is None:
        raise NotImplementedError("repeat_interleave(repeats): the one-argument form is not supported")
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _wrap(dim, builtins.max(input.dim(), 1), "repeat_interleave")
    if input.dim() == 0:
        input = input.reshape(1)
    if _is_tensor(repeats):
        if repeats.dim() > 1:
            raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
        if repeats.dtype.is_floating_point or repeats.dtype is bool_:
            raise RuntimeError(f"repeat_interleave: repeats has to be Long or Int tensor, "
                               f"got {repeats.dtype}")
        repeats = repeats.tolist()
    if isinstance(repeats, (list, tuple)):
        if len(repeats) == 1:
            repeats = repeats[0]
        else:
            n = input.shape[d]
            if len(repeats) != n:
                raise RuntimeError(f"repeat_interleave: repeats must have the same size as input "
                                   f"along dim, but got repeats.size(0) = {len(repeats)} and "
                                   f"input.size({dim}) = {n}")
            if builtins.any(r < 0 for r in repeats):
                raise RuntimeError("repeat_interleave: repeats can not be negative")
            idx = [i for i, r in enumerate(repeats) for _ in range(int(r))]
            return index_select(input, d, _C.tensor(idx, int64).to(input.device)
                                if input.device.type != "cpu" else _C.tensor(idx, int64))
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    shape = tuple(input.shape)
    big = shape[:d + 1] + (r,) + shape[d + 1:]
    out = shape[:d] + (shape[d] * r,) + shape[d + 1:]
    # reshape of the expanded view copies, except where it is a view itself (r == 1, or
    # a size-1 input dim; or an expanded input, stride 0 along dim: then an overlapping
    # view): torch's result is always a fresh tensor that can be written to
    res = input.unsqueeze(d + 1).expand(big).reshape(out)
    return res.clone() if r == 1 or shape[d] == 1 else res.contiguous()


def unbind(input, dim=0):
    """unbind(input, dim=0) -> tuple of the slices along dim (views); as torch.unbind."""
    _check_tensor(input, "unbind")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap(dim, input.dim(), "unbind")
    out = []
    for i in range(input.shape[d]):   # outputs of a multi-view function, as split's
        v = input.select(d, i)
        v._multi_view(3, i)
        out.append(v)
    return tuple(out)


def narrow(input, dim, start, length):
    """narrow(input, dim, start, length): the view input[..., start:start+length, ...] along dim
    (start may be negative or a 0-d tensor); as torch.narrow."""
    _check_tensor(input, "narrow")
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, input.dim(), "narrow")
    if _is_tensor(start):
        start = start.item()
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return input._slice(d, start, start + length, 1)


@dyn_inline
def flip(input, dims):
    """flip(input, dims): a copy with the order of elements reversed along dims (an
    index_select with a reversed arange); as torch.flip."""
    _check_tensor(input, "flip")
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    nd = input.dim()
    fl = _wrap_dims(dims, nd, "flip")
    # the gathers run in input's memory order, so that the result keeps it (torch's
    # TensorIterator); an input with broadcast (stride 0) dims keeps the dims' order
    st, sh = input.stride(), input.shape
    perm = list(range(nd))
    if not builtins.any(st[d] == 0 and sh[d] > 1 for d in range(nd)):
        perm = sorted(range(nd), key=lambda d: (-st[d], sh[d] == 1))
    r = x = input.permute(perm) if perm != list(range(nd)) else input
    for d in fl:
        d = perm.index(d) if nd else d
        n = r.shape[d] if nd else 1
        if n > 1:
            # (n - 1) - arange(n): under dynamic shapes (dyn_inline) both follow n
            r = _reindex(r, d, (n - 1) - arange(n, device=input.device))
    if r is x:
        return input.clone()
    return r if x is input else r.permute([perm.index(d) for d in range(nd)])


@dyn_inline
def roll(input, shifts, dims=None):
    """roll(input, shifts, dims=None): elements shifted cyclically along dims (the flattened
    input when None), an index_select per dim with the rotated arange (a cat of two slices
    traces into far more ops); as torch.roll."""
    _check_tensor(input, "roll")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(flatten(input), shifts, 0).reshape(input.shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    r = input
    for s, d in zip(shifts, dims):
        d = _wrap(d, input.dim(), "roll")
        n = r.shape[d]
        if n:   # out[i] = r[(i - s) mod n]; also where s % n is 0: a copy there would be
            # right for this size only, in a graph compiled for any size (dynamic=True)
            s = s % n
            idx = (arange(n, device=input.device) + (n - s)) % n   # (follows n: see flip)
            r = _reindex(r, d, idx)
    return input.clone() if r is input else r


def _reindex(input, d, idx):
    """index_select(input, d, idx) for an index made here (flip, roll): its autograd node
    keeps idx through a backward that frees the graph, as torch's FlipBackward saves
    nothing and a second backward runs."""
    return _op(_C.OP_INDEX_SELECT, (input, idx), _attrs(ints=(d,), flags=_C.AD_KEEP_INDEX))


# ---- shape ----
def _dim_list(v, fn, name):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, (list, tuple)) and builtins.all(isinstance(d, int) and not isinstance(d, bool)
                                                      for d in v):
        return list(v)
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def movedim(input, source, destination):
    """movedim(input, source, destination): a view with the dims in source moved to the
    positions in destination (ints or sequences), the others in their order; as torch.movedim."""
    _check_tensor(input, "movedim")
    src = _dim_list(source, "movedim", "source")
    dst = _dim_list(destination, "movedim", "destination")
    nd = input.dim()
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                           f"contain the same number of dims as destination ({dst} dims)")
    src = [_wrap(d, nd, "movedim") for d in src]
    dst = [_wrap(d, nd, "movedim") for d in dst]
    if nd == 0:
        return input.reshape(())
    for name, ds, orig in (("source", src, source), ("destination", dst, destination)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(_dim_list(orig, 'movedim', name))})")
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(k for k in range(nd) if k not in src)
    order = [next(rest) if o is None else o for o in order]
    return input.permute(*order)


moveaxis = movedim


def swapaxes(input, axis0, axis1):
    """swapaxes(input, axis0, axis1) = transpose(input, axis0, axis1); as torch.swapaxes."""
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    """swapdims(input, dim0, dim1) = transpose(input, dim0, dim1); as torch.swapdims."""
    return transpose(input, dim0, dim1)


@dyn_inline
def unflatten(input, dim, sizes):
    """unflatten(input, dim, sizes): dim split into sizes (one may be -1); as torch.unflatten."""
    _check_tensor(input, "unflatten")
    d = _wrap(dim, input.dim(), "unflatten")
    sizes = _dim_list(sizes, "unflatten", "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d] if input.dim() else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:      # a loop: dynamic shapes follow it (symtrace/_symint.py)
        if s != -1:
            known *= s
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of "
                               f"dim {dim} ({n}) in the input tensor")
        sizes[sizes.index(-1)] = n // known
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim "
                           f"{dim} ({n}) in the input tensor")
    shape = tuple(input.shape)
    return input.reshape(shape[:d] + tuple(sizes) + shape[d + 1:])


def _tensor_seq(tensors, fn):
    if _is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not _is_tensor(t):
            raise TypeError(f"{fn}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def _atleast(nd, tensors, fn):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(nd, (t,), fn) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(nd, (t,), fn) for t in tensors)
    t = tensors[0]
    _check_tensor(t, fn, "tensors")
    k = t.dim()
    if k >= nd:
        return t
    if nd == 1:
        return t.reshape(1)
    if nd == 2:
        return t.reshape((1,) * (2 - k) + tuple(t.shape))
    if k == 0:
        return t.reshape(1, 1, 1)
    if k == 1:
        return t.reshape(1, t.shape[0], 1)
    return t.unsqueeze(-1)


def atleast_1d(*tensors):
    """atleast_1d(*tensors): each tensor as a view with at least 1 dim (a tensor for one
    argument, a tuple otherwise); as torch.atleast_1d."""
    return _atleast(1, tensors, "atleast_1d")


def atleast_2d(*tensors):
    """atleast_2d(*tensors): at least 2 dims (leading unit dims); as torch.atleast_2d."""
    return _atleast(2, tensors, "atleast_2d")


def atleast_3d(*tensors):
    """atleast_3d(*tensors): at least 3 dims ((N,) -> (1, N, 1), (M, N) -> (M, N, 1));
    as torch.atleast_3d."""
    return _atleast(3, tensors, "atleast_3d")


def hstack(tensors):
    """hstack(tensors): cat along dim 1 (dim 0 for 1-D inputs); as torch.hstack."""
    ts = [atleast_1d(t) for t in _tensor_seq(tensors, "hstack")]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


def vstack(tensors):
    """vstack(tensors): cat along dim 0 of the inputs made at least 2-D; as torch.vstack."""
    return cat([atleast_2d(t) for t in _tensor_seq(tensors, "vstack")], 0)


row_stack = vstack


def dstack(tensors):
    """dstack(tensors): cat along dim 2 of the inputs made at least 3-D; as torch.dstack."""
    return cat([atleast_3d(t) for t in _tensor_seq(tensors, "dstack")], 2)


def column_stack(tensors):
    """column_stack(tensors): 0-D and 1-D inputs as columns (N, 1), then cat along dim 1;
    as torch.column_stack."""
    ts = _tensor_seq(tensors, "column_stack")
    return cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts], 1)


def rot90(input, k=1, dims=(0, 1)):
    """rot90(input, k=1, dims=(0, 1)): rotated by 90 degrees k times, from dims[0] toward
    dims[1] (flips and a transpose); as torch.rot90."""
    _check_tensor(input, "rot90")
    dims = list(dims)
    nd = input.dim()
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or builtins.abs(dims[0] - dims[1]) == nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    for i, d in enumerate(dims):
        if not -nd <= d < nd:
            raise RuntimeError(f"Rotation dim{i} out of range, dim{i} = {d}")
    d0, d1 = dims[0] % nd, dims[1] % nd
    k = k % 4
    if k == 1:
        return flip(input, [d1]).transpose(d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(input, [d0]).transpose(d0, d1)
    return input.clone()


def meshgrid(*tensors, indexing=None):
    """meshgrid(*tensors, indexing='ij'|'xy'): the coordinate grids of 0-D/1-D tensors (as
    expanded views); indexing None warns and means 'ij', as torch.meshgrid."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        _check_tensor(t, "meshgrid", f"tensors[{i}]")
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                               f"{t.dim()}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the "
                               "same dtype")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: "
                           f"{indexing}")
    sizes = [t.numel() for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for t, ax in zip(tensors, axes):
        shape = [1] * len(tensors)
        shape[ax] = t.numel()
        out.append(t.reshape(tuple(shape)).expand(tuple(sizes)))
    return tuple(out)


def cartesian_prod(*tensors):
    """cartesian_prod(*tensors): the rows of the Cartesian product of 1-D tensors, (N, k)
    (one tensor: itself); as torch.cartesian_prod."""
    for i, t in enumerate(tensors):
        _check_tensor(t, "cartesian_prod", f"tensors[{i}]")
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)
