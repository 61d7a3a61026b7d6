"""symtrace.nn.utils.rnn: PackedSequence and the functions that pack, pad and
unpad variable-length sequences (torch.nn.utils.rnn).

The sequence lengths and batch_sizes are host values (an int64 cpu tensor, as
torch's): packing and padding read them on the host and move the data with one
index_select each (its gradient flows back to the padded or packed input)."""
from collections import namedtuple
from collections.abc import Iterable

from ... import _C, _ops

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

PackedSequence_ = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def bind(optional, fn):
    """fn(optional), or None for None."""
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """PackedSequence(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    the packed time steps of a batch of sequences (torch.nn.utils.rnn.PackedSequence).
    data is [sum(batch_sizes), *], time-major; batch_sizes[t] (an int64 cpu
    tensor) is the number of sequences longer than t; sorted_indices orders the
    batch by decreasing length and unsorted_indices is its inverse. Made by
    pack_padded_sequence and pack_sequence, not by hand. torch's pin_memory,
    is_pinned, short, char and byte are missing: symtrace tensors have no
    pinned memory and no int16/int8/uint8 dtypes."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices,
                                                                unsorted_indices))

    def _with_data(self, data):
        if data is self.data:
            return self
        move = lambda t: t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, move), bind(self.unsorted_indices, move))

    def to(self, *args, **kwargs):
        """The sequence with data.to(*args, **kwargs); the indices follow data's
        device, batch_sizes stays on the cpu; self when data is unchanged."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs):
        """The sequence with data.cuda(*args, **kwargs)."""
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        """The sequence with data.cpu(*args, **kwargs)."""
        return self._with_data(self.data.cpu(*args, **kwargs))

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def long(self):
        return self.to(dtype=_C.int64)

    def int(self):
        return self.to(dtype=_C.int32)

    @property
    def is_cuda(self):
        """Whether data is on a cuda device."""
        return self.data.is_cuda


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise TypeError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def _packed_sequence_init(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    return PackedSequence(*_packed_sequence_init_args(data, batch_sizes, sorted_indices, unsorted_indices))


def invert_permutation(permutation):
    """invert_permutation(permutation) -> the inverse permutation (out[p[i]] = i), or None."""
    if permutation is None:
        return None
    output = _ops.empty_like(permutation)
    output.scatter_(0, permutation, _ops.arange(0, permutation.numel(), device=permutation.device))
    return output


def _long(values, device=None):
    """An int64 tensor of the Python ints values (on device, the cpu by default)."""
    t = _C.tensor(list(values), _C.int64)
    if device is not None and str(device) != "cpu":
        t = _ops.to_device(t, device)
    return t


def _host_lengths(lengths):
    """lengths (a tensor or a sequence of ints) as an int64 cpu tensor."""
    if isinstance(lengths, _C.TensorBase):
        lengths = lengths.to(dtype=_C.int64)
        if lengths.device.type != "cpu":
            lengths = lengths.to("cpu")
        return lengths
    return _long(int(v) for v in lengths)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True) ->
    PackedSequence of the padded batch input ([T, B, *], or [B, T, *] with batch_first):
    sequence b's first lengths[b] steps. enforce_sorted=False sorts the batch by
    decreasing length first (recorded in sorted_indices)."""
    lengths = _host_lengths(lengths)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = _ops.sort(lengths, descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return _packed_sequence_init(data, batch_sizes, sorted_indices, None)


def _pack_padded(input, lengths, batch_first):
    """(data, batch_sizes) of the sorted padded input (ATen's _pack_padded_sequence)."""
    if lengths.dim() != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                           f"{lengths.device.type} {lengths.dtype} tensor")
    if input.dim() < 2:
        raise RuntimeError(f"Expected the input to have at least 2 dimensions, but got {input.dim()}")
    lens = [int(v) for v in lengths.tolist()]
    batch = input.shape[0] if batch_first else input.shape[1]
    steps = input.shape[1] if batch_first else input.shape[0]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    for a, b in zip(lens, lens[1:]):
        if b > a:
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
    if lens[0] > steps:
        raise RuntimeError(f"Expected the longest length {lens[0]} to be at most the padded length {steps}")
    batch_sizes, index = [], []
    for t in range(lens[0]):
        n = sum(1 for v in lens if v > t)
        batch_sizes.append(n)
        index.extend((b * steps + t) if batch_first else (t * batch + b) for b in range(n))
    flat = input.reshape((batch * steps,) + tuple(input.shape[2:]))
    data = flat.index_select(0, _long(index, input.device))
    return data, _long(batch_sizes)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None) ->
    (padded, lengths): the inverse of pack_padded_sequence; padded is [T, B, *]
    ([B, T, *] with batch_first), T the longest length or total_length, the
    rest filled with padding_value; lengths an int64 cpu tensor, in the
    original batch order."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded_output, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first, padding_value,
                                         max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return padded_output.index_select(batch_dim, unsorted_indices), lengths[unsorted_indices.cpu()]
    return padded_output, lengths


def _pad_packed(data, batch_sizes, batch_first, padding_value, total_length):
    """(padded, lengths) of packed data (ATen's _pad_packed_sequence)."""
    bs = [int(v) for v in batch_sizes.tolist()]
    if len(bs) == 0:
        raise RuntimeError("batch_sizes can not be empty")
    batch = bs[0]
    n = data.shape[0]
    # the padded position (t, b) reads data row offset[t] + b, or the padding row n
    index = []
    offset = 0
    for t in range(total_length):
        b_t = bs[t] if t < len(bs) else 0
        index.append([offset + b if b < b_t else n for b in range(batch)])
        offset += b_t
    if batch_first:
        index = [[index[t][b] for t in range(total_length)] for b in range(batch)]
    rest = tuple(data.shape[1:])
    pad = _ops.full((1,) + rest, padding_value, dtype=data.dtype, device=data.device)
    src = _ops.cat([data, pad], 0)
    flat = [i for row in index for i in row]
    out = src.index_select(0, _long(flat, data.device))
    out = out.reshape((len(index), len(index[0]) if index else batch) + rest)
    lengths = [sum(1 for v in bs if v > b) for b in range(batch)]
    return out, _long(lengths)


def _broadcast_to(src, dest):
    """dest, after torch's checks that a src-shaped tensor copies into it."""
    n = max(len(src), len(dest))
    for i in range(n - 1, -1, -1):
        a = dest[i - n + len(dest)] if i - n + len(dest) >= 0 else 1
        b = src[i - n + len(src)] if i - n + len(src) >= 0 else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                               f"non-singleton dimension {i}")
    if len(src) > len(dest) or any(a == 1 and b != 1 for a, b in zip(dest[::-1], src[::-1])):
        shape = [max(a, b) for a, b in zip((1,) * (n - len(dest)) + dest, (1,) * (n - len(src)) + src)]
        raise RuntimeError(f"output with shape {list(dest)} doesn't match the broadcast shape {shape}")
    return dest


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side='right') ->
    the sequences ([L_i, *] each) padded with padding_value to the longest and
    stacked: [L, B, *], or [B, L, *] with batch_first; padding_side 'left'
    puts the padding before each sequence."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        dest = (s.shape[0],) + trailing
        if tuple(s.shape) != dest:  # copied into its place as torch's copy_: broadcast
            s = s.expand(_broadcast_to(tuple(s.shape), dest))
        if s.dtype != first.dtype:
            s = s.to(first.dtype)
        k = max_len - s.shape[0]
        if k:
            fill = _ops.full((k,) + trailing, padding_value, dtype=first.dtype, device=first.device)
            s = _ops.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return _ops.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """unpad_sequence(padded_sequences, lengths, batch_first=False) -> list of the
    sequences, sequence b its first lengths[b] steps (the inverse of pad_sequence).
    torch transposes a time-major input in place (padded_sequences.transpose_(0, 1));
    here the input is left as it is."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = lengths.tolist() if isinstance(lengths, _C.TensorBase) else list(lengths)
    if len(lens) != padded_sequences.shape[0]:
        raise ValueError(f"zip() argument 2 is {'shorter' if len(lens) < padded_sequences.shape[0] else 'longer'} "
                         "than argument 1")
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted=True):
    """pack_sequence(sequences, enforce_sorted=True) -> PackedSequence of the list of
    sequences ([L_i, *] each); enforce_sorted=True requires decreasing lengths."""
    lengths = _long(v.size(0) for v in sequences)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """unpack_sequence(packed_sequences) -> the list of sequences a PackedSequence holds,
    in their original order (the inverse of pack_sequence)."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)

