"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode (context
managers and decorators, thread-local as in PyTorch)."""
import functools
import threading

from .. import _C


def is_grad_enabled():
    return _C._is_grad_enabled()


class _GradMode:
    _mode = None

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside are not recorded on the tape (results don't require grad)."""
    _mode = False


class enable_grad(_GradMode):
    """Re-enables recording inside a no_grad region."""
    _mode = True


class set_grad_enabled(_GradMode):
    """set_grad_enabled(mode): as a function call it sets the mode at once;
    as a context manager it restores the previous mode on exit."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = _C._set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


_inference = threading.local()


def _mode_snapshot():
    """The Python side of the modes (inference_mode's depth), for the translator: a
    translation that stops inside a `with inference_mode()` block puts it back."""
    return getattr(_inference, "depth", 0)


def _mode_restore(depth):
    _inference.depth = depth


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
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        if self.mode:
            _inference.depth -= 1
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper
