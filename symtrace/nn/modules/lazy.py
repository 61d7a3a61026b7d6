"""Lazy modules (torch.nn's): LazyModuleMixin, the protocol of modules whose
parameter shapes come from their first input, and LazyLinear,
LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d and
LazyInstanceNorm1d/2d/3d. Until the first call they hold
UninitializedParameter / UninitializedBuffer placeholders; a forward pre-hook
then infers the shapes (initialize_parameters), materializes the parameters,
initializes them as the eager module's reset_parameters does, and turns the
module into its cls_to_become (LazyLinear -> Linear). Under symtrace.compile
that hook is a graph break: materialization runs as Python once, the calls
after it are compiled against the plain module."""
import itertools

from ...compiler import disable as _compiler_disable
from ..parameter import UninitializedParameter, UninitializedBuffer, is_lazy, _no_grad
from ... import _ops
from ..._dtype import int64
from ...utils.hooks import RemovableHandle
from .module import _bump_epoch
from .linear import Linear
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mixin of modules whose parameters get their shapes from the first input
    (torch.nn.modules.lazy.LazyModuleMixin): initialize_parameters(*args) runs
    before the first forward, then the module becomes cls_to_become."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """load_state_dict pre-hook: an uninitialized parameter or buffer takes the shape of
        the initialized tensor that state_dict holds for it (which load_state_dict then copies)."""
        self._claim_lazy()
        for name, param in itertools.chain(list(self._parameters.items()), list(self._buffers.items())):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    with _no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs):
        """initialize_parameters(*args, **kwargs): infers the shapes from the inputs of
        the first forward and materializes and initializes the parameters."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """has_uninitialized_params() -> bool: a parameter or buffer is still uninitialized."""
        self._claim_lazy()
        return any(is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _claim_lazy(self):
        """Makes this module an owner of its uninitialized tensors (a deep copy or an
        unpickled module holds new ones that know no module yet)."""
        for table in ("_parameters", "_buffers"):
            for name, t in self.__dict__[table].items():
                if is_lazy(t) and not any(r() is self and tb == table and n == name
                                          for r, tb, n in t.__dict__.get("_owners", ())):
                    t._add_owner(self, table, name)

    @_compiler_disable(reason="lazy module materialization")
    def _infer_parameters(self, module, args, kwargs=None):
        """The forward pre-hook: initialize_parameters(*args, **kwargs), then the hooks go and
        the module becomes cls_to_become (a graph break under symtrace.compile)."""
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        # by id in the module's own tables (a deep copy's handles still point at the original's)
        module._forward_pre_hooks.pop(module._initialize_hook.id, None)
        module._load_state_dict_pre_hooks.pop(module._load_hook.id, None)
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        module._refresh_has_hooks()
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
        _bump_epoch()

    # pickling: the hook handles go as their ids (a handle holds its table weakly) and are
    # made again over the unpickled tables
    _HANDLES = (("_initialize_hook", "_forward_pre_hooks"), ("_load_hook", "_load_state_dict_pre_hooks"))

    def __getstate__(self):
        state = super().__getstate__()
        for attr, _ in self._HANDLES:
            if attr in state:
                state[attr] = state[attr].id
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        for attr, table in self._HANDLES:
            hid = self.__dict__.get(attr)
            if isinstance(hid, int):
                h = RemovableHandle(self.__dict__[table])
                h.id = hid
                object.__setattr__(self, attr, h)

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a "
                           "dummy forward pass to correctly initialize the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is inferred from input.shape[-1] on the first call."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with _no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise ValueError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                 f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels from the input's channel dimension on the first call."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with _no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                             *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                             *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        n = self._get_num_spatial_dims()
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == n + 2 else input.shape[0]

    def _get_num_spatial_dims(self):
        return self._n

    def _lazy_conv_init(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """Conv1d whose in_channels is inferred from input.shape[1] (or [0] unbatched)."""

    cls_to_become = Conv1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device=device, dtype=dtype)
        self._lazy_conv_init(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """Conv2d whose in_channels is inferred from input.shape[1] (or [0] unbatched)."""

    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device=device, dtype=dtype)
        self._lazy_conv_init(out_channels, bias, device, dtype)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """Conv3d whose in_channels is inferred from input.shape[1] (or [0] unbatched)."""

    cls_to_become = Conv3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device=device, dtype=dtype)
        self._lazy_conv_init(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """ConvTranspose1d whose in_channels is inferred from input.shape[1] (or [0] unbatched)."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_conv_init(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """ConvTranspose2d whose in_channels is inferred from input.shape[1] (or [0] unbatched)."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_conv_init(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """ConvTranspose3d whose in_channels is inferred from input.shape[1] (or [0] unbatched)."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_conv_init(out_channels, bias, device, dtype)


class _LazyNormBase(LazyModuleMixin):
    """num_features from input.shape[1] on the first call (batch and instance norm)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _ops.zeros((), dtype=int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with _no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """BatchNorm1d whose num_features is inferred from input.shape[1]."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """BatchNorm2d whose num_features is inferred from input.shape[1]."""
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """BatchNorm3d whose num_features is inferred from input.shape[1]."""
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """InstanceNorm1d whose num_features is inferred from input.shape[1] (affine and
    track_running_stats default to True, as torch's)."""
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """InstanceNorm2d whose num_features is inferred from input.shape[1] (affine and
    track_running_stats default to True, as torch's)."""
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """InstanceNorm3d whose num_features is inferred from input.shape[1] (affine and
    track_running_stats default to True, as torch's)."""
    cls_to_become = InstanceNorm3d
