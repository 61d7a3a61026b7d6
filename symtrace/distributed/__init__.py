"""symtrace.distributed: torch.distributed's API with single-process semantics. symtrace has no
network backend: init_process_group accepts world_size 1 (rank 0) only and raises RuntimeError
otherwise; every collective then runs over one rank, so all_reduce / reduce / broadcast leave
their tensor as it is (in place, as torch: the sum, min, max, product or average of one value is
that value), all_gather / gather / scatter / all_gather_into_tensor / reduce_scatter_tensor copy
into the output tensors, and the object collectives copy through pickle, as torch's do. This lets
a DDP training script run unchanged in one process (with nn.parallel.DistributedDataParallel
and utils.data.DistributedSampler). Before init_process_group, the calls that need a process
group raise torch's ValueError."""
import datetime
import enum
import os
import pickle

from .. import _C

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group", "get_rank",
           "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter_tensor", "reduce", "gather", "scatter",
           "all_gather_object", "broadcast_object_list", "new_group", "ReduceOp", "Backend", "ProcessGroup",
           "Work", "group", "GroupMember", "is_gloo_available", "is_nccl_available", "is_mpi_available",
           "is_torchelastic_launched"]

_NOT_INIT = "Default process group has not been initialized, please make sure to call init_process_group."


def is_available():
    """is_available() -> bool: True (single-process semantics; see the module's notes)."""
    return True


def is_gloo_available():
    """is_gloo_available() -> bool: True: the "gloo" backend name is accepted (one process)."""
    return True


def is_nccl_available():
    """is_nccl_available() -> bool: False (symtrace has no NCCL)."""
    return False


def is_mpi_available():
    """is_mpi_available() -> bool: False."""
    return False


def is_torchelastic_launched():
    """is_torchelastic_launched() -> bool: whether torchrun's TORCHELASTIC_RUN_ID is set."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


class Backend(str):
    """A backend name, lower-cased (Backend("GLOO") == "gloo"), with torch's constants."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got {type(name)}")
        return super().__new__(cls, name.lower())


class RedOpType(enum.IntEnum):
    """The reduction operations (torch's ReduceOp.RedOpType)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class ReduceOp:
    """ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR (RedOpType members, as torch's)."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class ProcessGroup:
    """A group of ranks: here always rank 0 of 1."""

    def __init__(self, backend, name=""):
        self._backend = backend
        self._name = name

    def rank(self):
        return 0

    def size(self):
        return 1

    def name(self):
        return self._backend

    @property
    def group_name(self):
        return self._name


class Work:
    """The handle async_op=True returns: the operation has already completed."""

    def __init__(self, result=None):
        self._result = result if result is not None else []

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def result(self):
        return self._result

    def get_future(self):
        from ..jit import Future
        return Future(self._result)


_world = {"pg": None, "groups": []}


class _GroupMember:
    """group.WORLD: the default process group (None before init_process_group)."""
    NON_GROUP_MEMBER = -100

    @property
    def WORLD(self):   # noqa: N802  (torch's name)
        return _world["pg"]


group = GroupMember = _GroupMember()


def is_initialized():
    """is_initialized() -> bool: whether init_process_group ran (and destroy_process_group did not)."""
    return _world["pg"] is not None


def _check_group(g):
    if _world["pg"] is None:
        raise ValueError(_NOT_INIT)
    if g is None:
        return _world["pg"]
    if not isinstance(g, ProcessGroup) or (g is not _world["pg"] and g not in _world["groups"]):
        raise ValueError("Invalid process group specified")
    return g


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, ...):
    starts the default process group of one process. world_size / rank -1 read WORLD_SIZE / RANK from
    the environment (1 / 0 when unset); any world size but 1 or rank but 0 raises RuntimeError."""
    if _world["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")
    if world_size == -1:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if rank == -1:
        rank = int(os.environ.get("RANK", "0"))
    if world_size != 1:
        raise RuntimeError(f"symtrace.distributed runs in a single process: init_process_group got world_size="
                           f"{world_size}, but symtrace has no communication backend to connect "
                           f"{world_size} processes; use world_size=1")
    if rank != 0:
        raise RuntimeError(f"Invalid rank {rank}: with world_size 1, the only rank is 0")
    name = Backend(backend) if backend is not None else Backend(Backend.GLOO)
    _world["pg"] = ProcessGroup(name, group_name or "0")
    _world["groups"] = []


def destroy_process_group(group=None):
    """destroy_process_group(group=None): ends the default process group (and its subgroups), or one group."""
    if _world["pg"] is None:
        raise ValueError("Process group cannot be None (the default process group has not been initialized)")
    if group is None or group is _world["pg"]:
        _world["pg"] = None
        _world["groups"] = []
    elif group in _world["groups"]:
        _world["groups"].remove(group)
    else:
        raise ValueError("Invalid process group specified")


def get_rank(group=None):
    """get_rank(group=None) -> int: 0."""
    return _check_group(group).rank()


def get_world_size(group=None):
    """get_world_size(group=None) -> int: 1."""
    return _check_group(group).size()


def get_backend(group=None):
    """get_backend(group=None) -> Backend: the backend name given to init_process_group ("gloo" when None)."""
    return Backend(_check_group(group).name())


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """new_group(ranks=None, ...) -> ProcessGroup: a group of the ranks given (only [0] exists)."""
    pg = _check_group(None)
    ranks = [0] if ranks is None else list(ranks)
    if len(ranks) > 1:
        raise ValueError("the new group's world size should be less or equal to the world size set by "
                         "init_process_group")
    for r in ranks:
        if r != 0:
            raise ValueError(f"Invalid rank {r}: the world has only rank 0")
    g = ProcessGroup(Backend(backend) if backend is not None else pg.name(), str(len(_world["groups"]) + 1))
    _world["groups"].append(g)
    return g


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """barrier(group=None, async_op=False): returns at once (one rank)."""
    _check_group(group)
    return Work() if async_op else None


def _check_tensor(t, name):
    if not isinstance(t, _C.TensorBase):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type symtrace.Tensor\n"
                        f"             but got {type(t)} instead.")


def _check_tensor_list(ts, name):
    if not isinstance(ts, list) or not all(isinstance(t, _C.TensorBase) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[symtrace.Tensor]\n"
                        f"             but got {type(ts)} with elements of type "
                        f"{[type(t) for t in ts] if isinstance(ts, (list, tuple)) else type(ts)} instead.")


def _check_op(op):
    if not isinstance(op, RedOpType):
        raise TypeError(f"op must be a symtrace.distributed.ReduceOp, got {type(op).__name__}")


def _check_root(r, what, name):
    r = 0 if r is None else r
    if r != 0:
        raise RuntimeError(f"{what}: invalid root rank: {r} ({name} must be 0: the group has one rank)")


def _same_shape(out, inp, what, index=0):
    if tuple(out.shape) != tuple(inp.shape):
        exp = "(" + ", ".join(str(s) for s in inp.shape) + ")"
        got = "(" + ", ".join(str(s) for s in out.shape) + ")"
        raise RuntimeError(f"{what}: invalid tensor size at index {index} (expected {exp}, got {got})")


def _done(async_op, result):
    return Work(result) if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False): reduces tensor over the ranks in
    place: with one rank, tensor is left as it is."""
    _check_tensor(tensor, "tensor")
    _check_op(op)
    _check_group(group)
    return _done(async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """reduce(tensor, dst=None, op=ReduceOp.SUM, ...): reduces onto rank dst (0) in place: tensor is kept."""
    _check_tensor(tensor, "tensor")
    _check_op(op)
    _check_group(group)
    _check_root(dst if group_dst is None else group_dst, "reduce", "dst")
    return _done(async_op, [tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """broadcast(tensor, src=None, ...): copies rank src's tensor to every rank: src is this rank (0)."""
    _check_tensor(tensor, "tensor")
    _check_group(group)
    _check_root(src if group_src is None else group_src, "broadcast", "src")
    return _done(async_op, [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """all_gather(tensor_list, tensor, ...): tensor_list[r] receives rank r's tensor (copied in place;
    one entry, of tensor's shape)."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    g = _check_group(group)
    if len(tensor_list) != g.size():
        raise RuntimeError(f"all_gather: invalid output tensor list at index 0 (expected length {g.size()}, "
                           f"got {len(tensor_list)})")
    _same_shape(tensor_list[0], tensor, "all_gather")
    with _C_no_grad():
        tensor_list[0].copy_(tensor)
    return _done(async_op, tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """all_gather_into_tensor(output_tensor, input_tensor, ...): output_tensor (world_size times
    input's size, concatenated or stacked) receives every rank's input, in place."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    g = _check_group(group)
    if output_tensor.numel() != g.size() * input_tensor.numel():
        raise RuntimeError("Tensor input and output of all_gather_into_tensor must be the same size times "
                           "world_size: output_tensor has " f"{output_tensor.numel()} elements, input_tensor "
                           f"{input_tensor.numel()} and world_size is {g.size()}")
    with _C_no_grad():
        output_tensor.copy_(input_tensor.reshape(output_tensor.shape))
    return _done(async_op, [output_tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """reduce_scatter_tensor(output, input, op=ReduceOp.SUM, ...): output receives this rank's share of
    input reduced over the ranks: with one rank, input itself (input has world_size times output's size)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    _check_op(op)
    g = _check_group(group)
    if input.numel() != g.size() * output.numel():
        raise RuntimeError(f"Tensor input and output of reduce_scatter_tensor must be the same size times "
                           f"world_size: input has {input.numel()} elements, output {output.numel()} and "
                           f"world_size is {g.size()}")
    with _C_no_grad():
        output.copy_(input.reshape(output.shape))
    return _done(async_op, [output])


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """gather(tensor, gather_list=None, dst=None, ...): on rank dst (0), gather_list[r] receives rank r's
    tensor (copied in place)."""
    _check_tensor(tensor, "tensor")
    g = _check_group(group)
    _check_root(dst if group_dst is None else group_dst, "gather", "dst")
    if not gather_list:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    _check_tensor_list(gather_list, "gather_list")
    if len(gather_list) != g.size():
        raise RuntimeError(f"gather: requires a gather_list of {g.size()} tensors, got {len(gather_list)}")
    _same_shape(gather_list[0], tensor, "gather")
    with _C_no_grad():
        gather_list[0].copy_(tensor)
    return _done(async_op, gather_list)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """scatter(tensor, scatter_list=None, src=None, ...): rank r's tensor receives scatter_list[r] from
    rank src (0), in place."""
    _check_tensor(tensor, "tensor")
    g = _check_group(group)
    _check_root(src if group_src is None else group_src, "scatter", "src")
    if not scatter_list:
        raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
    _check_tensor_list(scatter_list, "scatter_list")
    if len(scatter_list) != g.size():
        raise RuntimeError(f"scatter: requires a scatter_list of {g.size()} tensors, got {len(scatter_list)}")
    _same_shape(tensor, scatter_list[0], "scatter")
    with _C_no_grad():
        tensor.copy_(scatter_list[0])
    return _done(async_op, [tensor])


def all_gather_object(object_list, obj, group=None):
    """all_gather_object(object_list, obj, group=None): object_list[r] becomes rank r's obj (a copy made
    through pickle, as torch's)."""
    g = _check_group(group)
    if len(object_list) != g.size():
        raise RuntimeError(f"all_gather_object: object_list must have world_size ({g.size()}) entries, got "
                           f"{len(object_list)}")
    object_list[0] = pickle.loads(pickle.dumps(obj))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """broadcast_object_list(object_list, src=None, ...): every rank's object_list becomes rank src's:
    src is this rank (0), so object_list is kept."""
    _check_group(group)
    _check_root(src if group_src is None else group_src, "broadcast_object_list", "src")


def _C_no_grad():   # noqa: N802
    from ..autograd import no_grad
    return no_grad()
