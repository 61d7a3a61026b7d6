"""GradScaler: dynamic loss scaling for float16 autocast, after
torch.amp.GradScaler.

    scaler = symtrace.amp.GradScaler("cuda")
    with symtrace.autocast("cuda", dtype=symtrace.float16):
        loss = model(x)
    scaler.scale(loss).backward()     # gradients of loss * scale: small ones survive float16
    scaler.step(opt)                  # unscales; skips the step when a gradient is inf or nan
    scaler.update()                   # backs off after an overflow, grows after growth_interval good steps

The scale lives in a 0-d float32 tensor on the loss's device (a compiled
step takes it as an input: a new scale is no new graph). step() reads
whether a gradient overflowed with .item(), a sync (a graph break inside a
compiled step), as PyTorch's does. bfloat16 autocast has float32's range
and needs no scaler."""
import warnings

from .. import _ops
from .._dtype import float32, float16, bfloat16

_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if device not in ("cpu", "cuda"):
            raise ValueError(f"GradScaler: device must be 'cpu' or 'cuda', got {device!r}")
        if not init_scale > 0:
            raise ValueError(f"GradScaler: init_scale must be positive, got {init_scale}")
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor should be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor should be in (0, 1), got {backoff_factor}")
        if not isinstance(growth_interval, int) or isinstance(growth_interval, bool) or growth_interval <= 0:
            raise ValueError(f"GradScaler: growth_interval should be a positive int, got {growth_interval!r}")
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda":
            from .. import cuda
            if not cuda.is_available():     # as torch's: a CUDA scaler on a machine without one is off
                warnings.warn("symtrace.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
                self._enabled = False
        self._scale_value = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._scale = None          # the 0-d tensor scale() multiplies by
        self._opt_states = {}       # id(optimizer) -> {"stage", "found_inf"}

    # ---------------- scaling ----------------
    def _scale_on(self, device):
        if self._scale is None or self._scale.device != device:
            self._scale = _ops.full((), self._scale_value, dtype=float32, device=device)
        return self._scale

    def scale(self, outputs):
        """outputs * scale (a tensor, or tensors in lists and tuples)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if not hasattr(outputs, "device"):
            raise TypeError(f"GradScaler.scale: expected a Tensor, got {type(outputs).__name__}")
        return outputs * self._scale_on(outputs.device)

    def _state(self, optimizer):
        return self._opt_states.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def unscale_(self, optimizer):
        """Divides optimizer's gradients by the scale, in place, and notes
        whether one holds an inf or a nan (the step is then skipped)."""
        if not self._enabled:
            return
        st_ = self._state(optimizer)
        if st_["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if st_["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from ..autograd import no_grad
        found = None
        inv = 1.0 / self._scale_value
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype is float16 or g.dtype is bfloat16:
                        raise ValueError("Attempting to unscale FP16 gradients: keep the parameters "
                                         "in float32 (autocast casts them for the products)")
                    g.mul_(inv)
                    bad = g.isfinite().logical_not().sum()
                    found = bad if found is None else found + bad
        st_["found_inf"] = found
        st_["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) on unscaled gradients, unless one
        of them is inf or nan; returns its value (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        st_ = self._state(optimizer)
        if st_["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st_["stage"] == _READY:
            self.unscale_(optimizer)
        found = st_["found_inf"]
        ret = None
        if found is None or int(found.item()) == 0:
            ret = optimizer.step(*args, **kwargs)
        st_["stage"] = _STEPPED
        return ret

    def update(self, new_scale=None):
        """Backs the scale off after an overflow in any optimizer since the
        last update, grows it after growth_interval steps without one; or
        sets new_scale (a number or a 1-element tensor)."""
        if not self._enabled:
            return
        if new_scale is not None:
            v = float(new_scale.item()) if hasattr(new_scale, "item") else float(new_scale)
            if not v > 0:
                raise ValueError(f"GradScaler.update: new_scale must be positive, got {v}")
            self._scale_value = v
        else:
            founds = [s["found_inf"] for s in self._opt_states.values() if s["found_inf"] is not None]
            if not founds:
                raise RuntimeError("No inf checks were recorded prior to update().")
            if any(int(f.item()) != 0 for f in founds):
                self._scale_value *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale_value *= self._growth_factor
                    self._growth_tracker = 0
        if self._scale is not None:
            self._scale = _ops.full((), self._scale_value, dtype=float32, device=self._scale.device)
        self._opt_states = {}

    # ---------------- state ----------------
    def get_scale(self):
        return self._scale_value if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale_value, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale_value = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
        if self._scale is not None:
            self._scale = _ops.full((), self._scale_value, dtype=float32, device=self._scale.device)
