"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode (context
managers and decorators, thread-local as in PyTorch). A decorated generator
function runs each of its steps inside the mode, the caller's code between
them outside it, as torch's."""
import functools
import inspect
import threading

from .. import _C


def is_grad_enabled():
    return _C._is_grad_enabled()


def _decorate(make_mode, fn):
    """fn run inside a fresh make_mode() context on each call; for a generator
    function, each step of the generator (send, throw, close) is."""
    if not inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with make_mode():
                return fn(*args, **kwargs)
        return wrapper

    @functools.wraps(fn)
    def gen_wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        step, value = gen.send, None
        while True:
            try:
                with make_mode():
                    out = step(value)
            except StopIteration as stop:
                return stop.value
            try:
                step, value = gen.send, (yield out)
            except GeneratorExit:
                with make_mode():
                    gen.close()
                raise
            except BaseException as e:  # thrown in by the caller: into fn's generator
                step, value = gen.throw, e
    return gen_wrapper


class _GradMode:
    _mode = None

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        return _decorate(self.__class__, fn)


class _BareDecorator(_GradMode):
    """Usable as @mode as well as @mode() (torch's no_grad and enable_grad)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        pass


class no_grad(_BareDecorator):
    """Ops inside are not recorded on the tape (results don't require grad)."""
    _mode = False


class enable_grad(_BareDecorator):
    """Re-enables recording inside a no_grad region."""
    _mode = True


class set_grad_enabled(_GradMode):
    """set_grad_enabled(mode): as a function call it sets the mode at once;
    as a context manager it restores the previous mode on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self._mode = mode
        self._prev = _C._set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)
        mode = self._mode
        return _decorate(lambda: set_grad_enabled(mode), fn)


_inference = threading.local()


def _mode_snapshot():
    """The Python side of the modes (inference_mode's depth), for the translator: a
    translation that stops inside a `with inference_mode()` block puts it back."""
    return getattr(_inference, "depth", 0)


def _mode_restore(depth):
    _inference.depth = depth
    _C._set_inference_mode(depth > 0)


def is_inference_mode_enabled():
    """True inside an inference_mode(True) region (this thread)."""
    return getattr(_inference, "depth", 0) > 0


class inference_mode(_GradMode):
    """inference_mode(mode=True): as no_grad (symtrace has no separate inference
    tensors, so this is recording switched off); mode=False changes nothing. A context
    manager, and a decorator with or without the call, as torch.inference_mode."""

    def __new__(cls, mode=True):
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)           # @inference_mode without the call

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self._prev = _C._set_grad_enabled(False if self.mode else _C._is_grad_enabled())
        if self.mode:
            _inference.depth = getattr(_inference, "depth", 0) + 1
            _C._set_inference_mode(True)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        if self.mode:
            _inference.depth -= 1
            _C._set_inference_mode(_inference.depth > 0)
        return False

    def __call__(self, fn):
        mode = self.mode
        return _decorate(lambda: inference_mode(mode), fn)
