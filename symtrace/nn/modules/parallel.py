"""DistributedDataParallel and DataParallel (exported as symtrace.nn.parallel's, as torch's) as
wrappers that call the module they hold (symtrace.distributed runs one process, so there are no
gradients to all-reduce and no replicas to scatter to). As torch's, the wrapped module is .module,
so state_dict keys carry the "module." prefix, and no_sync() / join() are context managers. They
live in nn/modules so that symtrace.compile inlines their forward as it inlines other layers'."""
import contextlib

from .module import Module

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]


class DistributedDataParallel(Module):
    """DistributedDataParallel(module, device_ids=None, output_device=None, dim=0, ...): calls module;
    needs init_process_group (world size 1) and a parameter that requires a gradient, as torch's.
    Gradients are not communicated (one rank: the average over ranks is the local gradient)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        from ... import distributed as dist
        if device_mesh is not None and process_group is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        self.process_group = dist._check_group(process_group)
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        if device_ids is not None or output_device is not None:
            if all(d.type == "cpu" for d in devices):
                raise ValueError(f"DistributedDataParallel device_ids and output_device arguments only work with "
                                 f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                                 f"{device_ids}, output_device {output_device}, and module parameters "
                                 f"{devices}.")
        self.module = module
        self.device_ids = None if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """no_sync(): a context manager under which gradients are not synchronized (here: never are)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @contextlib.contextmanager
    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """join(...): for uneven inputs across ranks; one rank has nothing to wait for."""
        yield

    def register_comm_hook(self, state, hook):
        """register_comm_hook(state, hook): not supported: symtrace communicates no gradient buckets."""
        raise NotImplementedError("symtrace's DistributedDataParallel runs one process and has no gradient "
                                  "buckets to pass to a communication hook")

    def _set_static_graph(self):
        self.static_graph = True


class DataParallel(Module):
    """DataParallel(module, device_ids=None, output_device=None, dim=0): calls module on its own device
    (no replication or scattering over several GPUs)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        from ... import cuda
        self.module = module
        if not cuda.is_available():
            self.device_ids = []
            self.output_device = None
        else:
            self.device_ids = list(range(cuda.device_count())) if device_ids is None else \
                [d if isinstance(d, int) else cuda._index(d) for d in device_ids]
            out = self.device_ids[0] if output_device is None else output_device
            self.output_device = out if isinstance(out, int) else cuda._index(out)
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """data_parallel(module, inputs, ...) -> module(*inputs, **module_kwargs) (no replication)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
