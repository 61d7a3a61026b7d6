"""Anomaly mode (torch.autograd.anomaly_mode): detect_anomaly / set_detect_anomaly
and the global switch behind them. While it is on, every autograd node keeps
the traceback of the forward call that made it; in backward, a node whose
gradients hold NaN (check_nan) raises RuntimeError("Function 'XBackward0'
returned nan values in its kth output."), and any error of a node is preceded
by a UserWarning showing that traceback. The tape (runtime/autograd.c) calls
the three functions below; off, it costs one flag test per node."""
import functools
import os
import traceback
import warnings

from .. import _C

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _capture():
    """The stack of the forward call making a node, less symtrace's own innermost frames."""
    stack = traceback.extract_stack()
    n = len(stack)
    while n and os.path.abspath(stack[n - 1].filename).startswith(_PKG):
        n -= 1
    return traceback.StackSummary.from_list(stack[:n]) if n else stack


def _check(name, grads):
    from .. import _ops
    for k, g in enumerate(grads):
        if g is None or not (g.dtype.is_floating_point or g.dtype.is_complex):
            continue
        if bool(_ops.isnan(g).any()):
            raise RuntimeError(f"Function '{name}' returned nan values in its {k}th output.")


def _report(name, tb):
    if tb is None:
        msg = (f"Error detected in {name}. No forward pass information available. Enable detect anomaly "
               "during forward pass for more information.")
    else:
        msg = (f"Error detected in {name}. Traceback of forward call that caused the error:\n"
               + "".join(traceback.format_list(tb)))
    warnings.warn(msg, UserWarning, stacklevel=2)


_C._set_anomaly_hooks(_capture, _check, _report)


def is_anomaly_enabled():
    """is_anomaly_enabled() -> bool: anomaly mode is on."""
    return _C._is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    """is_anomaly_check_nan_enabled() -> bool: anomaly mode checks gradients for NaN."""
    return _C._is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    """set_anomaly_enabled(enabled, check_nan=True) -> None: turns anomaly mode on or off (global)."""
    _C._set_anomaly_enabled(bool(enabled), bool(check_nan))


class detect_anomaly:
    """detect_anomaly(check_nan=True): context manager (or decorator) turning anomaly mode on
    inside; warns that it is on, as torch."""

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): sets anomaly mode now; as a context manager,
    the previous mode comes back on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
