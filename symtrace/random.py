"""symtrace.random: the global generator's state, as torch.random.

Owns get_rng_state / set_rng_state (also exported as symtrace.get_rng_state and
symtrace.set_rng_state), seed, fork_rng, and re-exports manual_seed / initial_seed
(symtrace._ops.random). symtrace.cuda's rng functions and
symtrace.utils.checkpoint build on these.

symtrace has one counter-based generator (Philox4x32-10, runtime/random.c) shared by
every backend, CPU and CUDA alike: its whole state is a 64-bit seed and a 64-bit
counter offset that every random kernel launch (eager or in a compiled graph)
reserves a range of. So the state is tiny and exact:

    get_rng_state() -> int64 Tensor of shape (2,): [seed, offset], each the uint64
                       value's bits read as int64 (a seed >= 2**63 shows negative).

torch returns a uint8 ByteTensor (5056 bytes for its CPU Mersenne Twister); symtrace
has no uint8 dtype, and two int64 words hold the state with no packing. A state is
only meaningful to symtrace: set_rng_state refuses anything but an int64 tensor of
shape (2,) (TypeError for a non-tensor or another dtype, RuntimeError for another
shape, as torch). Restoring a state replays the same random numbers exactly as long
as the same kernels run in the same order: eager ops and compiled graphs alike
reserve their counters from the generator when they launch (runtime/exec.c), never
at translation time.

Under symtrace.compile, get_rng_state, set_rng_state, seed and fork_rng are graph
breaks (they are marked like symtrace.compiler.disable; manual_seed already is one by
name, frontend/tr_calls.c): they run as plain Python between graphs, so results match
eager mode.
"""
import contextlib as _contextlib
import os as _os

from . import _C
from ._dtype import int64 as _int64
from ._ops import manual_seed, initial_seed  # noqa: F401  (the same objects as symtrace.X)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]

_U64 = 1 << 64
_STATE_SHAPE = (2,)


def _graph_break(fn):
    """Marks fn as symtrace.compiler.disable does (the translator breaks the graph at a
    call to it), without the wrapper: these functions only touch the generator, so
    nothing below them needs compiling."""
    fn._symtrace_disabled = "reads or writes the global generator's state"
    return fn


def _signed(v):
    return v - _U64 if v >= 1 << 63 else v


def _raw_state():
    """(seed, offset) as unsigned ints."""
    return _C._rng_get_state()


def _set_raw_state(seed, offset):
    _C._rng_set_state(int(seed) % _U64, int(offset) % _U64)


def _unpack_state(new_state, fn="set_rng_state"):
    """(seed, offset) of a state tensor, checked."""
    if not isinstance(new_state, _C.TensorBase):
        raise TypeError(f"{fn}: expected an int64 Tensor from get_rng_state() as new_state, "
                        f"but got {type(new_state).__name__}")
    if new_state.dtype is not _int64:
        raise TypeError(f"{fn}: RNG state must be an int64 Tensor (symtrace.get_rng_state()), "
                        f"but got dtype {new_state.dtype}")
    if tuple(new_state.shape) != _STATE_SHAPE:
        raise RuntimeError(f"{fn}: expected an RNG state of shape (2,) ([seed, offset]) but "
                           f"found the input RNG state shape to be {tuple(new_state.shape)}")
    seed, offset = new_state.detach().tolist()
    return seed % _U64, offset % _U64


@_graph_break
def get_rng_state():
    """Returns the generator's state as an int64 Tensor [seed, offset] (see the module).
    The state is shared by every device; torch returns a CPU ByteTensor."""
    s, o = _raw_state()
    return _C.tensor([_signed(s), _signed(o)], _int64)


@_graph_break
def set_rng_state(new_state):
    """Sets the generator's state to new_state, a Tensor from get_rng_state()."""
    seed_, offset = _unpack_state(new_state)
    _set_raw_state(seed_, offset)


@_graph_break
def seed():
    """Seeds the generator with a non-deterministic random number and returns it."""
    s = int.from_bytes(_os.urandom(8), "little") >> 1  # 63 bits: a plain positive int
    manual_seed(s)
    return s


@_graph_break
@_contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Forks the RNG: on exit (normal or by an exception) the generator is reset to the
    state it had on entry. enabled=False makes it a no-op. devices and device_type are
    accepted as torch's (devices is checked to be iterable) but do not matter: symtrace's
    one generator serves every device, so forking it forks them all."""
    if device_type == "meta" or not enabled:
        yield
        return
    if devices is not None:
        try:
            devices = list(devices)
        except TypeError:
            raise TypeError(f"{_caller}: {_devices_kw} must be an iterable of device ids, "
                            f"got {type(devices).__name__}") from None
    state = _raw_state()
    try:
        yield
    finally:
        _set_raw_state(*state)
