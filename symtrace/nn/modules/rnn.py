"""The recurrent layers (torch.nn.RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell,
LSTMCell, GRUCell), composed of linear, sigmoid, tanh, relu, cat and slicing.

A layer projects the input of all its time steps at once (one linear over
[T*B, in]); each step adds only the recurrent product W_hh h. Padded and packed
inputs take one path: a padded batch is a packed one whose batch sizes are all
B. Under symtrace.compile the time loop unrolls (the batch sizes of a padded
input are sizes; those of a PackedSequence are host values that the trace reads,
which breaks the graph). Gate order and formulas are torch's: LSTM (i, f, g, o),
c' = f*c + i*g, h' = o*tanh(c') (then W_hr h' with proj_size); GRU (r, z, n),
n = tanh(W_in x + b_in + r*(W_hn h + b_hn)), h' = n + z*(h - n)."""
import math
import numbers
import warnings

from ... import _C, _ops
from ..._dtype import float64
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


def _host_sizes(batch_sizes):
    """The batch sizes of a PackedSequence as a list of ints (read once: under
    symtrace.compile, the one graph break of a packed input)."""
    return batch_sizes.tolist()


def _autocast_on():
    return _C._get_autocast("cpu")[0] or _C._get_autocast("cuda")[0]


def _autocast_lstm(input, hx):
    """LSTM is in autocast's lower list (torch): under autocast its input and states
    run in the low dtype (its products are lowered anyway), so its outputs are too."""
    dev = str(input.device).split(":")[0]
    on, low = _C._get_autocast(dev) if dev in ("cpu", "cuda") else (False, None)
    if not on or not input.dtype.is_floating_point or input.dtype is float64:
        return input, hx
    return input.to(low), tuple(h.to(low) if h.dtype.is_floating_point and h.dtype is not float64 else h
                                for h in hx)


def _step(mode, gi, state, w_hh, b_hh, w_hr):
    """One time step of a cell: gi = W_ih x + b_ih of the step ([b, G]); state
    (h,) or (h, c); returns the new state."""
    h = state[0]
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = f.sigmoid() * state[1] + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        if w_hr is not None:
            h = F.linear(h, w_hr)
        return (h, c)
    if mode == "GRU":
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return (n + z * (h - n),)
    if mode == "RNN_TANH":
        return ((gi + gh).tanh(),)
    return ((gi + gh).relu(),)


def _run_direction(mode, gi, state, batch_sizes, reverse, w_hh, b_hh, w_hr):
    """One direction of one layer over packed steps: gi [N, G] (time-major,
    batch_sizes[t] rows for step t), state the initial (h,) or (h, c) of the
    batch_sizes[0] sequences. Returns (outputs [N, H_out], final state); a
    sequence that ends early keeps the state of its last step."""
    steps = len(batch_sizes)
    offsets = [0] * steps
    for t in range(1, steps):
        offsets[t] = offsets[t - 1] + batch_sizes[t - 1]
    outs = []
    if not reverse:
        last = batch_sizes[0]
        done = []  # states of the sequences that ended, latest first
        for t in range(steps):
            b = batch_sizes[t]
            if b < last:
                done.append(tuple(s[b:last] for s in state))
                state = tuple(s[:b] for s in state)
                last = b
            state = _step(mode, gi[offsets[t]:offsets[t] + b], state, w_hh, b_hh, w_hr)
            outs.append(state[0])
        if done:
            done.append(state)
            state = tuple(_ops.cat([d[k] for d in reversed(done)], 0) for k in range(len(state)))
    else:
        full = state
        last = batch_sizes[steps - 1]
        if last != full[0].shape[0]:
            state = tuple(s[:last] for s in full)
        for t in range(steps - 1, -1, -1):
            b = batch_sizes[t]
            if b > last:
                state = tuple(_ops.cat([s, f[last:b]], 0) for s, f in zip(state, full))
                last = b
            state = _step(mode, gi[offsets[t]:offsets[t] + b], state, w_hh, b_hh, w_hr)
            outs.append(state[0])
        outs.reverse()
    return (outs[0] if steps == 1 else _ops.cat(outs, 0)), state


class RNNBase(Module):
    """RNNBase(mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None): the
    parameters and the forward shared by RNN, LSTM and GRU (torch.nn.RNNBase).
    Parameters weight_ih_l{k}[_reverse] [G*H, in], weight_hh_l{k} [G*H, H or
    proj_size], bias_ih_l{k}, bias_hh_l{k} [G*H], weight_hr_l{k} [proj_size, H],
    all ~ U(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                params = [("weight_ih_l{}{}", (gate_size, layer_input_size)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden_size))]
                if bias:
                    params += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for fmt, shape in params:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(_ops.empty(shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        if device is not None and str(device) != "cpu":
            self.to(device)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters, one list per layer and direction."""
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    def flatten_parameters(self):
        """A no-op: the parameters need no flat cuDNN buffer here."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes):
        w = getattr(self, self._flat_weights_names[0])
        if input.dtype != w.dtype and not _autocast_on():
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                             f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError("input.size(-1) must be equal to input_size. "
                               f"Expected {self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def _zeros(self, input, batch, size):
        num_directions = 2 if self.bidirectional else 1
        return _ops.zeros((self.num_layers * num_directions, batch, size), dtype=input.dtype,
                          device=input.device)

    def _run(self, input, hx, batch_sizes):
        """The layers over input: a padded [T, B, in] ([B, T, in] with batch_first)
        when batch_sizes is None, else packed data [N, in] with batch_sizes (a list
        of ints, or the host int64 tensor); hx a tuple (h0,) or (h0, c0) of [L*D, B, *]. Returns
        (output, (h_n,) or (h_n, c_n))."""
        if batch_sizes is None:
            if self.batch_first:
                input = input.transpose(0, 1)
            steps, batch = input.shape[0], input.shape[1]
            if steps == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            sizes = [batch] * steps
            x = input.reshape(steps * batch, input.shape[2])
        else:
            sizes = batch_sizes if isinstance(batch_sizes, list) else _host_sizes(batch_sizes)
            x = input
        num_directions = 2 if self.bidirectional else 1
        finals = [[] for _ in hx]
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                names = self._all_weights[k]
                w_ih = getattr(self, names[0])
                w_hh = getattr(self, names[1])
                b_ih = getattr(self, names[2]) if self.bias else None
                b_hh = getattr(self, names[3]) if self.bias else None
                w_hr = getattr(self, names[-1]) if self.proj_size > 0 else None
                gi = F.linear(x, w_ih, b_ih)
                state0 = (hx[0][k],) if len(hx) == 1 else (hx[0][k], hx[1][k])
                out, state = _run_direction(self.mode, gi, state0, sizes, direction == 1, w_hh, b_hh, w_hr)
                outs.append(out)
                for i, s in enumerate(state):
                    finals[i].append(s)
            x = outs[0] if num_directions == 1 else _ops.cat(outs, 1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        hidden = tuple(_ops.stack(f, 0) for f in finals)
        if batch_sizes is None:
            x = x.reshape(steps, batch, x.shape[1])
            if self.batch_first:
                x = x.transpose(0, 1)
        return x, hidden

    def _forward_single(self, input, hx):
        """RNN's and GRU's forward (one state tensor)."""
        orig_input = input
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = _host_sizes(batch_sizes)
            if hx is None:
                hx = self._zeros(input, sizes[0], self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                extra = " tensor" if name == "RNN" else ""
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{extra} instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                           f"{hx.dim()}-D tensor")
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            max_batch_size = input.shape[0] if self.batch_first else input.shape[1]
            sorted_indices = None
            unsorted_indices = None
            sizes = None
            if hx is None:
                hx = self._zeros(input, max_batch_size, self.hidden_size)
        self.check_forward_args(input, hx, sizes)
        output, (hidden,) = self._run(input, (hx,), sizes)
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
    h_t = tanh (or relu)(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh); forward(input, hx=None)
    -> (output, h_n) (torch.nn.RNN)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """forward(input, hx=None) -> (output, h_n)."""
        return self._forward_single(input, hx)


class LSTM(RNNBase):
    """LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None): forward(input, hx=None)
    -> (output, (h_n, c_n)) (torch.nn.LSTM)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        """forward(input, hx=None) -> (output, (h_n, c_n)); hx is (h_0, c_0)."""
        orig_input = input
        batch_sizes = None
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        sizes = None
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = _host_sizes(batch_sizes)
            if hx is None:
                hx = (self._zeros(input, sizes[0], real_hidden_size),
                      self._zeros(input, sizes[0], self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, sizes)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch_size = input.shape[0] if self.batch_first else input.shape[1]
            sorted_indices = None
            unsorted_indices = None
            if hx is None:
                hx = (self._zeros(input, max_batch_size, real_hidden_size),
                      self._zeros(input, max_batch_size, self.hidden_size))
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            self.check_forward_args(input, hx, None)
        input, hx = _autocast_lstm(input, hx)
        output, hidden = self._run(input, (hx[0], hx[1]), sizes)
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


class GRU(RNNBase):
    """GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None): forward(input, hx=None) -> (output, h_n)
    (torch.nn.GRU)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        """forward(input, hx=None) -> (output, h_n)."""
        return self._forward_single(input, hx)


# ---------------------------------------------------------------- cells
def _check_cell(input, hx, input_size, hidden_size):
    """ATen's checks of a cell's input [B, in] and states [B, H] (hidden0, hidden1)."""
    if input.shape[1] != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {input_size}")
    for k, h in enumerate(hx):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                               f"{h.shape[0]}")
        if h.shape[1] != hidden_size:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {hidden_size}")


class RNNCellBase(Module):
    """RNNCellBase(input_size, hidden_size, bias, num_chunks, device=None, dtype=None): the
    parameters of a cell: weight_ih [num_chunks*H, in], weight_hh [num_chunks*H, H],
    bias_ih, bias_hh [num_chunks*H], all ~ U(-1/sqrt(H), 1/sqrt(H)) (torch.nn.RNNCellBase)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_ops.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(_ops.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_ops.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(_ops.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        if device is not None and str(device) != "cpu":
            self.to(device)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _cell(self, mode, input, hx):
        _check_cell(input, hx, self.input_size, self.hidden_size)
        gi = F.linear(input, self.weight_ih, self.bias_ih)
        return _step(mode, gi, hx, self.weight_hh, self.bias_hh, None)


class RNNCell(RNNCellBase):
    """RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh', device=None, dtype=None):
    forward(input, hx=None) -> h' = tanh (or relu)(W_ih x + b_ih + W_hh h + b_hh)
    (torch.nn.RNNCell)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """forward(input, hx=None) -> h' ([B, H], or [H] for a 1-D input)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _ops.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        if self.nonlinearity == "tanh":
            ret = self._cell("RNN_TANH", input, (hx,))[0]
        elif self.nonlinearity == "relu":
            ret = self._cell("RNN_RELU", input, (hx,))[0]
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        if not is_batched:
            ret = ret.squeeze(0)
        return ret


class LSTMCell(RNNCellBase):
    """LSTMCell(input_size, hidden_size, bias=True, device=None, dtype=None):
    forward(input, hx=None) -> (h', c') (torch.nn.LSTMCell)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """forward(input, hx=None) -> (h', c'); hx is (h, c)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _ops.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        else:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else (hx[0], hx[1])
        ret = self._cell("LSTM", input, hx)
        if not is_batched:
            ret = (ret[0].squeeze(0), ret[1].squeeze(0))
        return ret


class GRUCell(RNNCellBase):
    """GRUCell(input_size, hidden_size, bias=True, device=None, dtype=None):
    forward(input, hx=None) -> h' (torch.nn.GRUCell)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """forward(input, hx=None) -> h' ([B, H], or [H] for a 1-D input)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _ops.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        ret = self._cell("GRU", input, (hx,))[0]
        if not is_batched:
            ret = ret.squeeze(0)
        return ret
