"""Tensor printing, as PyTorch prints (torch/_tensor_str.py is the reference for the
rules, not the code). Owns the print options (set_printoptions, get_printoptions,
printoptions), the element formatter (int / fixed / scientific mode, column width),
summarization (edge items only are read: never the whole tensor), the row layout
(line wrapping, nested brackets) and the suffixes (device, size, dtype, grad_fn).
Tensor.__repr__ calls tensor_repr()."""
import contextlib
import dataclasses
import math


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: object = None


PRINT_OPTS = _PrintOptions()

# profile -> (precision, threshold, edgeitems, linewidth)
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Sets how tensors print (torch.set_printoptions). profile is one of 'default',
    'short', 'full' (an unknown name is ignored, as torch does); the other options
    override it. sci_mode True/False forces scientific notation on/off; None (also
    what every call without sci_mode sets) lets the values decide."""
    if profile in _PROFILES:
        (PRINT_OPTS.precision, PRINT_OPTS.threshold,
         PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options, as a dict that set_printoptions(**d) accepts."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """with printoptions(precision=2): ... sets options for the block, then restores them."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ---------------------------------------------------------------- reading the values
class _Cut:
    """Marks the elided middle of a summarized dimension."""
    __slots__ = ()


_CUT = _Cut()


def _is_cut(shape, edge):
    return any(s > 2 * edge for s in shape)


def _gather(t, edge):
    """t's values as nested lists, where every dim longer than 2*edge keeps its
    first and last `edge` entries around _CUT. Only those slices are converted."""
    n = t.shape[0]
    if not _is_cut(t.shape, edge):
        return t.tolist()
    if n > 2 * edge:
        return _gather_rows(t[:edge], edge) + [_CUT] + _gather_rows(t[n - edge:], edge)
    return _gather_rows(t, edge)


def _gather_rows(t, edge):
    """A list over t's first dim (no cut there), each row gathered."""
    if t.dim() == 1 or not _is_cut(t.shape[1:], edge):
        return t.tolist()
    return [_gather(t[i], edge) for i in range(t.shape[0])]


def _leaves(data, out):
    """Appends the scalars of a nested list (skipping _CUT) to out."""
    for v in data:
        if isinstance(v, list):
            _leaves(v, out)
        elif v is not _CUT:
            out.append(v)
    return out


# ---------------------------------------------------------------- formatting elements
class _Formatter:
    """One width and one notation for every element of a tensor, as torch chooses:
    integers and bools as str(); floats in int mode ('1.'), fixed ('1.2500') or
    scientific ('1.2500e+08') chosen over the finite nonzero values."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        self.precision = PRINT_OPTS.precision
        if not floating:
            self.width = max([1] + [len(str(v)) for v in values])
            return
        vals = [v for v in values if v != 0 and math.isfinite(v)]
        if vals:
            self._choose(vals)

    def _choose(self, vals):
        self.int_mode = all(v == math.ceil(v) for v in vals)
        mags = [abs(v) for v in vals]
        lo, hi = min(mags), max(mags)
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        extra = 1 if self.int_mode and not self.sci_mode else 0   # the '.' of '1.'
        self.width = max([1] + [len(self._text(v)) + extra for v in vals])

    def _text(self, v):
        """v in the chosen notation, unpadded (int mode without its '.')."""
        p = self.precision
        if self.sci_mode:
            return f"{v:.{p}e}"
        if self.int_mode:
            return f"{v:.0f}"
        return f"{v:.{p}f}"

    def format(self, v):
        if not self.floating:
            s = str(v)
        else:
            s = self._text(v)
            if self.int_mode and not self.sci_mode and math.isfinite(v):
                s += "."
        return s.rjust(self.width)


# ---------------------------------------------------------------- layout
def _vector_str(data, indent, fmt):
    """'[a, b, c]' wrapped at linewidth, continuation lines under the first element."""
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width + 2)))
    cut = " ..." if PRINT_OPTS.edgeitems else "..."
    items = [cut if v is _CUT else fmt.format(v) for v in data]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(data, dim, indent, fmt):
    """A dim-d block: its (dim-1)-d rows separated by dim-1 newlines."""
    if dim == 1:
        return _vector_str(data, indent, fmt)
    rows = ["..." if r is _CUT else _nested_str(r, dim - 1, indent + 1, fmt) for r in data]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(rows) + "]"


def _body_str(t, indent):
    """The bracketed values of a non-empty tensor."""
    summarize = t.numel() > PRINT_OPTS.threshold
    if t.dim() == 0:
        v = t.item()
        return _Formatter([v], t.dtype.is_floating_point).format(v)
    data = _gather(t, PRINT_OPTS.edgeitems) if summarize else t.tolist()
    fmt = _Formatter(_leaves(data, []), t.dtype.is_floating_point)
    return _nested_str(data, t.dim(), indent, fmt)


def _add_suffixes(text, suffixes, indent):
    """Appends ', suffix' items and ')', going to a new indented line when one
    would pass linewidth (measured as torch measures the last line)."""
    out = [text]
    last_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_len + len(s) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last_len = indent + len(s)
        else:
            out.append(", " + s)
            last_len += len(s) + 2
    out.append(")")
    return "".join(out)


# ---------------------------------------------------------------- the whole repr
def _is_plain(t):
    from . import _C
    from ._tensor import Tensor
    from .nn.parameter import Parameter, Buffer
    return type(t) in (Tensor, Parameter, Buffer, _C.TensorBase)


def _meta_suffixes(t, device):
    """device=, size= and dtype= suffixes, by torch's rules (the default device is cpu)."""
    from ._ops.dtypes import get_default_dtype
    from ._dtype import int64, bool_
    out = []
    if device != "cpu":
        out.append(f"device='{device}'")
    default = get_default_dtype()
    if t.numel() == 0:
        if t.dim() != 1:
            out.append(f"size={tuple(t.shape)}")
        if t.dtype != default:
            out.append(f"dtype={t.dtype}")
        return out
    if not PRINT_OPTS.edgeitems:
        out.append(f"size={tuple(t.shape)}")
    if t.dtype not in (default, int64, bool_):
        out.append(f"dtype={t.dtype}")
    return out


def _grad_suffix(t):
    fn = t.grad_fn
    if fn is not None:
        name = fn.name() if hasattr(fn, "name") else type(fn).__name__
        return [f"grad_fn=<{name}>"]
    return ["requires_grad=True"] if t.requires_grad else []


def tensor_repr(t):
    """repr(t) / str(t), as torch prints it."""
    plain = _is_plain(t)
    prefix = "tensor(" if plain else f"{type(t).__name__}("
    indent = len(prefix)
    d = t.detach()
    body = "[]" if d.numel() == 0 else _body_str(d, indent)
    text = _add_suffixes(prefix + body, _meta_suffixes(d, t._device_str) + _grad_suffix(t), indent)
    from .nn.parameter import Parameter
    if isinstance(t, Parameter) and not plain:
        text = f"Parameter({text})"
    return text
