"""symtrace.Generator and symtrace.default_generator, as torch.Generator.

symtrace draws every random number from one counter-based generator
(Philox4x32-10, runtime/random.c) whose whole state is a 64-bit seed and a 64-bit
counter offset (symtrace.random). A Generator object is such a state of its own:
an op given generator=g runs with the global state swapped for g's (the op
reserves its counters from it, exactly as from the global one), then g keeps the
advanced offset and the global state is put back. So

    g = symtrace.Generator().manual_seed(0)
    a = symtrace.randn(3, generator=g)      # the global generator is untouched

draws the same numbers as symtrace.manual_seed(0); symtrace.randn(3), and a given
generator makes results independent of everything else that draws. The numbers
differ from torch's for the same seed (another algorithm).

Under symtrace.compile a call given a generator other than the default one is a
graph break: the translator calls symtrace's functions for real to record their
ops, and `run` refuses to swap states then (its error breaks the graph; the call
runs again as plain Python between graphs, drawing from the generator).

default_generator is the global generator itself: its methods read and write the
global state (symtrace.manual_seed returns it, as torch's). Generators are not
tied to a device (one generator serves every device); device= is kept for
torch's API only.
"""
import os as _os

from . import _C

__all__ = ["Generator", "default_generator"]

_U64 = 1 << 64
_DEFAULT_SEED = 67280421310721   # torch's and symtrace's seed of a fresh generator


def _seed_value(seed, fn="manual_seed"):
    if isinstance(seed, bool) or not isinstance(seed, int):
        if hasattr(seed, "__index__") and not isinstance(seed, bool):
            seed = seed.__index__()
        else:
            raise RuntimeError(f"{fn} expected a long, but got {type(seed).__name__}")
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """Generator(device='cpu'): a random number generator state of its own (see the
    module): manual_seed(seed) -> self, seed(), initial_seed(), get_state() /
    set_state(state) (an int64 Tensor [seed, offset], as symtrace.get_rng_state),
    get_offset() / set_offset(offset), clone_state(); pass it as generator= to the
    random functions, Tensor.uniform_ and friends, nn.init and the data samplers."""

    __slots__ = ("_seed", "_offset", "_device", "_global")

    def __init__(self, device="cpu"):
        self._device = _as_device(device)
        self._global = False
        self._seed = _DEFAULT_SEED
        self._offset = 0

    @property
    def device(self):
        if isinstance(self._device, str):   # default_generator, made before symtrace.device
            self._device = _as_device(self._device)
        return self._device

    # ---- the state: the object's own, or the global one for default_generator
    def _get(self):
        return _C._rng_get_state() if self._global else (self._seed, self._offset)

    def _set(self, seed, offset):
        if self._global:
            _C._rng_set_state(seed % _U64, offset % _U64)
        else:
            self._seed, self._offset = seed % _U64, offset % _U64

    def manual_seed(self, seed):
        """Seeds the generator (and rewinds it); returns self."""
        self._set(_seed_value(seed), 0)
        return self

    def seed(self):
        """Seeds the generator with a non-deterministic number and returns it."""
        s = int.from_bytes(_os.urandom(8), "little") >> 1
        self._set(s, 0)
        return s

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._get()[0]

    def get_offset(self):
        """How many counters the generator has handed out since it was seeded."""
        return self._get()[1]

    def set_offset(self, offset):
        """Moves the generator to a counter offset (0: just after seeding)."""
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"set_offset: expected an int offset, got {type(offset).__name__}")
        self._set(self._get()[0], offset)
        return self

    def get_state(self):
        """The state as an int64 Tensor [seed, offset] (torch returns a ByteTensor)."""
        s, o = self._get()
        signed = [v - _U64 if v >= 1 << 63 else v for v in (s, o)]
        from ._dtype import int64
        return _C.tensor(signed, int64)

    def set_state(self, new_state):
        """Restores a state from get_state() (or symtrace.get_rng_state()); returns self."""
        from .random import _unpack_state
        self._set(*_unpack_state(new_state, "set_state"))
        return self

    def clone_state(self):
        """A new Generator at the same state."""
        g = Generator(self.device)
        g._seed, g._offset = self._get()
        return g

    def graphsafe_get_state(self):
        return self.clone_state()

    def graphsafe_set_state(self, state):
        if not isinstance(state, Generator):
            raise TypeError(f"graphsafe_set_state: expected a Generator, got {type(state).__name__}")
        self._set(*state._get())
        return self

    def __getstate__(self):
        return {"device": str(self._device), "state": self._get()}

    def __setstate__(self, d):
        self._device = _as_device(d["device"])
        self._global = False
        self._seed, self._offset = d["state"]

    def __repr__(self):
        return f"<symtrace.Generator object at {id(self):#x}>"


def _as_device(device):
    from . import _tensor
    cls = getattr(_tensor, "device", None)
    if cls is None:           # symtrace._tensor is still importing
        return str(device)
    return device if isinstance(device, cls) else cls(device)


def _make_default():
    g = Generator()
    g._global = True
    return g


default_generator = _make_default()


def run(generator, fn, *args, **kwargs):
    """fn(*args, **kwargs) drawing from generator: the global state swapped for the
    generator's around the call, the generator left advanced (see the module). The
    random functions call this when given generator=; fn gets no generator."""
    if not isinstance(generator, Generator):
        raise TypeError(f"{getattr(fn, '__name__', 'random function')}(): argument 'generator' must be "
                        f"symtrace.Generator, not {type(generator).__name__}")
    if generator._global:
        return fn(*args, **kwargs)
    if _C._trace_active():
        # symtrace.compile calls symtrace's functions for real to record their ops: a
        # swap now would happen once, at translation. Raising breaks the graph here,
        # and the call runs again as plain Python, drawing from the generator.
        raise RuntimeError("a draw from a symtrace.Generator runs outside compiled graphs")
    saved = _C._rng_get_state()
    _C._rng_set_state(generator._seed, generator._offset)
    try:
        return fn(*args, **kwargs)
    finally:
        generator._seed, generator._offset = _C._rng_get_state()
        _C._rng_set_state(*saved)

