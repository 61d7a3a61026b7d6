"""symtrace.optim.Optimizer: parameter groups, per-parameter state, zero_grad
and state_dict save/load in torch.optim's layout; the register_*_hook methods
(the hook tables and the step wrapper are optim/_hooks.py's)."""
from collections import defaultdict
from copy import deepcopy
from itertools import chain

from .. import _C
from .._ops._core import f32 as _f32
from ..autograd.grad_mode import enable_grad as _enable_grad  # noqa: F401  (used by the optimizers)
from ..nn.parameter import _no_grad
from . import _hooks
from ._hooks import register_optimizer_step_pre_hook, register_optimizer_step_post_hook  # noqa: F401

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _check_tensor_lr(lr):
    """torch's check of a Tensor lr (before the lr >= 0 comparison would raise on it)."""
    if _is_tensor(lr) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")




def _lerp_(t, end, weight):
    """t.lerp_(end, weight) in torch's arithmetic (from t for |weight| < 0.5,
    else from end), as op-by-op tensor updates of t."""
    if abs(weight) < 0.5:
        return t.add_((end - t).mul_(weight))
    return t.copy_(end - (end - t).mul_(1 - weight))


def _copy_state(v):
    """deepcopy, with tensors cloned (detached)."""
    if _is_tensor(v):
        return v.detach().clone()
    if isinstance(v, dict):
        return type(v)((k, _copy_state(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return type(v)(_copy_state(x) for x in v)
    return deepcopy(v)


class Optimizer:
    """Base class: Optimizer(params, defaults); params is an iterable of tensors
    or of dicts (parameter groups) with per-group options."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        if _is_tensor(params):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            f"dicts, but got {type(params).__name__}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)
        _hooks.patch_step(type(self))

    # ---------------- hooks (torch.optim.Optimizer's) ----------------
    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step()."""
        return _hooks._add(_hooks.table(self, "_optimizer_step_pre_hooks"), hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after step()."""
        return _hooks._add(_hooks.table(self, "_optimizer_step_post_hooks"), hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, at the start of state_dict()."""
        return _hooks._add(_hooks.table(self, "_optimizer_state_dict_pre_hooks"), hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a state_dict state_dict() returns instead."""
        return _hooks._add(_hooks.table(self, "_optimizer_state_dict_post_hooks"), hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or the state_dict to load instead."""
        return _hooks._add(_hooks.table(self, "_optimizer_load_state_dict_pre_hooks"), hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, at the end of load_state_dict()."""
        return _hooks._add(_hooks.table(self, "_optimizer_load_state_dict_post_hooks"), hook, prepend)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    # group options an older pickle may lack, filled in on unpickling (torch's
    # per-class __setstate__ setdefaults, as data)
    _group_defaults = ()

    def __setstate__(self, state):
        self.__dict__.update(state)
        for group in self.param_groups:
            for k, v in self._group_defaults:
                group.setdefault(k, v)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if _is_tensor(params):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not _is_tensor(p):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not getattr(p, "is_leaf", True):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error", stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Resets the .grad of every parameter: to None (default) or zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        with _no_grad():
                            p.grad.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    @staticmethod
    def _closure_loss(closure):
        """The loss of closure() evaluated with grad enabled (None without one)."""
        if closure is None:
            return None
        with _enable_grad():
            return closure()

    # ---------------- 0-d state tensors read on the host ----------------
    def _scalar_update(self, mirror_name, p, t, op, x):
        """Updates the 0-d state tensor t of parameter p in place (op "add":
        t += x, "mul": t *= x) and returns its new value as a Python float.
        The value is computed on the host from the one this optimizer last
        returned (rounded as the tensor rounds it) when t is the tensor it
        last updated and nothing wrote it since (its version counter moved by
        this one update); otherwise (a loaded state, a tensor written from
        outside, an uncommon dtype) it is read back with .item()."""
        mirror = self.__dict__.setdefault(mirror_name, {})
        m = mirror.get(p)
        if op == "add":
            t.add_(x)
        else:
            t.mul_(x)
        dt = t.dtype
        if m is not None and m[0] is t and m[1] + 1 == t._version and dt in (_C.float32, _C.float64):
            if dt == _C.float32:
                value = _f32(m[2] + x) if op == "add" else _f32(m[2] * _f32(x))
            else:
                value = m[2] + x if op == "add" else m[2] * x
        else:
            value = t.item()
        mirror[p] = (t, t._version, value)
        return value

    def _scalar_get(self, mirror_name, p, t):
        """The value of the 0-d state tensor t of parameter p as a Python
        float: the one this optimizer last wrote (_scalar_set) when nothing
        wrote t since (its version counter did not move), else t.item()."""
        m = self.__dict__.setdefault(mirror_name, {}).get(p)
        if m is not None and m[0] is t and m[1] == t._version:
            return m[2]
        value = t.item()
        self.__dict__[mirror_name][p] = (t, t._version, value)
        return value

    def _scalar_set(self, mirror_name, p, t, value):
        """t.fill_(value) for the 0-d state tensor t of parameter p; value
        must be exactly representable in t's dtype (it is what
        _scalar_get then returns without reading t back)."""
        t.fill_(value)
        self.__dict__.setdefault(mirror_name, {})[p] = (t, t._version, value)

    @staticmethod
    def _check_capturable(group, p, what="params and state_steps"):
        """torch's check for capturable=True: the parameters (and the state
        created on their device) must be on a device whose steps can be
        captured (cuda here; torch also lists xpu, hpu, privateuseone, xla)."""
        if group.get("capturable") and not p._device_str.startswith("cuda"):
            raise AssertionError(f"If capturable=True, {what} must be on supported devices: ['cuda'].")

    def _grads(self, group, init_state=None, l2=True):
        """(p, grad, state) for each parameter of group that has a gradient:
        the single-tensor optimizers' common walk. state is filled by
        init_state(p, state, group) while empty (None: state is not touched
        and None is yielded); grad is negated for maximize and, when l2, has
        weight_decay * p added (torch's L2 penalty; decoupled decay is the
        caller's)."""
        maximize = group.get("maximize", False)
        wd = group.get("weight_decay", 0) if l2 else 0
        for p in group["params"]:
            if p.grad is None:
                continue
            state = None
            if init_state is not None:
                state = self.state[p]
                if not state:
                    init_state(p, state, group)
            grad = -p.grad if maximize else p.grad
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            yield p, grad, state

    def _next_step(self, p, step_t):
        """Increments state["step"] (a 0-d float32 tensor, as torch keeps it)
        and returns its new value, read back with .item() only when the
        tensor is not the one this optimizer last wrote (a loaded state) or
        was written since (its version counter moved)."""
        return self._scalar_update("_step_mirror", p, step_t, "add", 1)

    # ---------------- state dict ----------------
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}:
        parameters are named by their position across the groups; state tensors
        are references (as torch)."""
        for hook in list(self.__dict__.get("_optimizer_state_dict_pre_hooks", {}).values()):
            hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                if id(p) not in param_mappings:
                    param_mappings[id(p)] = i
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if _is_tensor(k) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in list(self.__dict__.get("_optimizer_state_dict_post_hooks", {}).values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_state(param, value, key=None):
        if _is_tensor(value):
            if key == "step":
                return value
            if value.dtype.is_floating_point and param.dtype.is_floating_point:
                return value.to(param.dtype)
            return value
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):       # LBFGS's histories (torch casts any iterable)
            return type(value)(Optimizer._cast_state(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict):
        """Loads a state_dict() (copied: the optimizer does not alias it)."""
        state_dict = state_dict.copy()
        for hook in list(self.__dict__.get("_optimizer_load_state_dict_pre_hooks", {}).values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        state_dict = _copy_state(state_dict)
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                             "of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            return new_group

        self.param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.state = state
        for hook in list(self.__dict__.get("_optimizer_load_state_dict_post_hooks", {}).values()):
            hook(self)
