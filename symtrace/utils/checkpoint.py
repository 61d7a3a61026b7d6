"""symtrace.utils.checkpoint: activation checkpointing, as torch.utils.checkpoint.

Owns checkpoint, checkpoint_sequential, CheckpointFunction and torch's small helpers
(detach_variable, check_backward_validity, noop_context_fn, CheckpointError,
set_checkpoint_debug_enabled).

    y = checkpoint(block, x, use_reentrant=False)     # block's activations are not kept
    y = checkpoint_sequential(model, 4, x, use_reentrant=False)

use_reentrant=True, torch's reentrant strategy, on symtrace.autograd.Function: the forward
runs `function` under no_grad, so none of its intermediates is kept; only its tensor
inputs are saved, with the generator's state (symtrace.random, when
preserve_rng_state) and the autocast state. Backward detaches the inputs, re-runs
`function` on them with grad enabled, the autocast state of the forward and the
forward's RNG state (inside fork_rng, so the generator is left as it was: dropout draws
the same mask, and the run goes on with the same random numbers as without
checkpointing), and backpropagates the incoming gradients through the recomputed graph
with symtrace.autograd.backward: the inputs' gradients are returned to the outer
backward, and every leaf the recomputation reaches (module parameters) accumulates its
gradient into .grad there, exactly once.

use_reentrant=False, torch's non-reentrant strategy, on saved-tensor hooks
(symtrace.autograd.graph): the forward runs `function` recording as usual, under a pack
hook that keeps, instead of each tensor autograd saves, only a handle (its position in
the order of saves, and its shape/dtype/device). The graph is the ordinary one, so
gradients reach the inputs, the parameters used inside (also when no input requires
grad) and tensors inside containers, and autograd.grad works across it without
touching .grad. The first unpack in a backward re-runs `function` once on detached
aliases of the arguments, with grad enabled, the forward's RNG state (inside fork_rng)
and autocast state, and context_fn's recompute context, under a pack hook that
collects the recomputed saved tensors in the same order (stopping early once all are
collected when early_stop); each unpack then hands over its tensor and drops it. A
second backward (retain_graph=True) recomputes again. determinism_check="default"
compares the recomputed saved tensors' metadata with the forward's (CheckpointError
otherwise). debug is accepted and changes nothing.

use_reentrant (as torch 2.13): not passing it warns (UserWarning) and means True.
  True:  torch's CheckpointFunction: keyword arguments, context_fn and debug are
         refused (ValueError); when no tensor input requires grad it warns "None of the
         inputs have requires_grad=True" and nothing gets a gradient (parameters used
         inside included), as torch. Only tensors given directly as arguments are
         inputs; gradients of the parameters used inside are accumulated into their
         .grad during the outer backward, so symtrace.autograd.grad(...) across a
         reentrant checkpoint still writes the parameters' .grad (torch raises there).
  False: the saved-tensor-hooks variant above; keyword arguments allowed.

Under symtrace.compile, checkpoint is a higher-order op, as in torch.compile: the
translator inlines `function` into the graph (frontend/tr_checkpoint.c) and marks what
it records as a checkpoint range, whose values the backward graph recomputes from the
range's inputs instead of saving them (ir/backward.c; random draws, a dropout's, are
kept, so the masks are the forward's). Not passing use_reentrant warns when the call is
translated. A call eager checkpoint would refuse or treat apart (context_fn, keyword
arguments or debug with use_reentrant=True, a reentrant call with no input requiring
grad) and a function the translator cannot inline are graph breaks: checkpoint then runs
as plain Python, with nothing inside compiled. checkpoint_sequential's body is translated
as user code (its checkpoint calls as above). While some
other trace is recording (symtrace.compile's translator real-calling a symtrace
function that calls checkpoint), `function` simply runs in that trace: results and
gradients are right, no memory is saved.
"""
import contextlib
import warnings
import weakref

from .. import _C
from .. import random as _random
from ..autograd import Function, backward as _autograd_backward
from ..autograd.function import _version_error
from ..autograd.graph import saved_tensors_hooks
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..compiler import disable as _compiler_disable

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "CheckpointError",
           "detach_variable", "check_backward_validity", "noop_context_fn",
           "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_allowed_determinism_checks = ("default", "none")
_checkpoint_debug_enabled = None


class CheckpointError(RuntimeError):
    """The recomputation did not match the forward (torch.utils.checkpoint.CheckpointError)."""


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Context manager overriding checkpoint's debug flag (accepted as torch's; symtrace's
    checkpoint has no debug output)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


def noop_context_fn():
    """The default context_fn: no context for the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def detach_variable(inputs):
    """A tuple with each tensor of the tuple inputs detached, keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not _is_tensor(inp):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad_(inp.requires_grad)
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if _is_tensor(inp)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _autocast_state():
    return tuple((dev,) + tuple(_C._get_autocast(dev)) for dev in ("cpu", "cuda"))


@contextlib.contextmanager
def _autocast_as(state):
    """The autocast state of the forward (backward otherwise runs with autocast off)."""
    prev = [_C._set_autocast(dev, on, dt) for dev, on, dt in state]
    try:
        yield
    finally:
        for (dev, _, _), (on, dt) in zip(state, prev):
            _C._set_autocast(dev, on, dt)


def _meta(o):
    return (tuple(o.shape), o.dtype) if _is_tensor(o) else None


class CheckpointFunction(Function):
    """apply(run_function, opts, *args): the checkpointed region as one tape node.
    opts: (preserve_rng_state, reentrant, check_determinism, forward_context,
    recompute_context); run_function's tensor arguments are the node's inputs."""

    @staticmethod
    def forward(ctx, run_function, opts, *args):
        preserve_rng_state, reentrant, check, fwd_context = opts[:4]
        if reentrant:
            check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.reentrant = reentrant
        ctx.recompute_context = opts[4]
        ctx.autocast = _autocast_state()
        if preserve_rng_state:
            ctx.fwd_rng_state = _random._raw_state()
        # non-tensor inputs kept as they are; tensors through save_for_backward (an
        # in-place change before backward is then caught)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if _is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        # saved_tensors come back detached: their requires_grad is kept here
        ctx.tensor_requires_grad = [t.requires_grad for t in tensor_inputs]
        with no_grad(), fwd_context:
            outputs = run_function(*args)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        ctx.out_metas = [_meta(o) for o in outs] if check else None
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _random.fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                _random._set_raw_state(*ctx.fwd_rng_state)
            detached_inputs = list(detach_variable(tuple(inputs)))
            for i, rg in zip(ctx.tensor_indices, ctx.tensor_requires_grad):
                detached_inputs[i].requires_grad_(rg)
            # as the forward, the recomputation runs plain (no frame of it compiled, even
            # when backward is called from a compiled function): the same kernels, the
            # same values, the same random numbers
            _C._fe_suspend(1)
            try:
                with enable_grad(), _autocast_as(ctx.autocast), ctx.recompute_context:
                    outputs = ctx.run_function(*detached_inputs)
            finally:
                _C._fe_suspend(-1)
        if _is_tensor(outputs):
            outputs = (outputs,)
        elif not isinstance(outputs, tuple):
            outputs = (outputs,)
        if ctx.out_metas is not None:
            metas = [_meta(o) for o in outputs]
            if metas != ctx.out_metas:
                raise CheckpointError(
                    "symtrace.utils.checkpoint: Recomputed values have different metadata than "
                    "during the forward pass: the forward returned "
                    f"{ctx.out_metas} (shape, dtype per output) but the recomputation "
                    f"returned {metas}")
        # backward through the outputs that require grad only
        outputs_with_grad, args_with_grad = [], []
        for o, g in zip(outputs, grads):
            if _is_tensor(o) and o.requires_grad:
                outputs_with_grad.append(o)
                args_with_grad.append(g)
        if outputs_with_grad:
            _autograd_backward(outputs_with_grad, args_with_grad)
        elif ctx.reentrant:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        in_grads = tuple(inp.grad if _is_tensor(inp) else None for inp in detached_inputs)
        return (None, None) + in_grads


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once every saved tensor is back."""


def _detached(x):
    if not _is_tensor(x):
        return x
    d = x.detach()
    d.requires_grad_(x.requires_grad)
    return d


def _tensor_meta(t):
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


class _Handle:
    """What the forward's pack hook keeps for one saved tensor: its frame and position."""
    __slots__ = ("frame", "idx")

    def __init__(self, frame, idx):
        self.frame, self.idx = frame, idx


class _Frame:
    """One non-reentrant checkpoint call: the metadata of what its forward saved, and
    what it takes to recompute it (the function, detached arguments, RNG and autocast
    state). Held by the handles, so it goes with the graph."""

    def __init__(self, function, args, kwargs, preserve, rec_ctx, check, early_stop):
        self.function = function
        self.args = tuple(_detached(a) for a in args)
        # the tensor arguments' versions: as torch's (which saves them for backward), one
        # written in place since is refused when the recomputation needs it
        self.versions = [(k, a._version, weakref.ref(a)) for k, a in enumerate(args)
                         if _is_tensor(a)]
        self.kwargs = {k: _detached(v) for k, v in kwargs.items()}
        self.preserve = preserve
        self.rec_ctx = rec_ctx
        self.check = check
        self.early_stop = early_stop
        self.autocast = _autocast_state()
        self.rng = _random._raw_state() if preserve else None
        self.metas = []       # per saved tensor, in the order of saves
        self.store = {}       # recomputed, not yet unpacked: position -> tensor

    def pack(self, t):
        self.metas.append(_tensor_meta(t))
        return _Handle(self, len(self.metas) - 1)

    @staticmethod
    def unpack(h):
        frame = h.frame
        if h.idx not in frame.store:
            frame.recompute()
        t = frame.store.pop(h.idx, None)
        if t is None:
            raise CheckpointError(
                "symtrace.utils.checkpoint: the recomputation did not save the tensor at "
                f"position {h.idx} (the forward saved {len(frame.metas)})")
        return t

    def _check_versions(self):
        for k, ver, ref in self.versions:
            if self.args[k]._version != ver:
                orig = ref()
                raise RuntimeError(_version_error(orig if orig is not None else self.args[k],
                                                  ver, -1, None))

    def recompute(self):
        n = len(self.metas)
        got = {}
        count = [0]
        # whether a recomputed saved tensor may hold the arguments' values: a float one or
        # one that needs grad (not an index: symtrace's flip saves an arange where torch's
        # saves nothing, and torch checks the versions only when it recomputes)
        valued = [False]

        def pack_rec(t):
            i = count[0]
            count[0] += 1
            valued[0] = valued[0] or t.requires_grad or t.is_floating_point()
            if i < n:
                got[i] = t.detach()
            if self.early_stop and count[0] >= n:
                raise _StopRecomputation()
            return None

        def unpack_rec(_):
            raise RuntimeError("symtrace.utils.checkpoint: the recomputation's graph is not "
                               "differentiable")

        # as the forward, the recomputation runs plain (saved_tensors_hooks suspends
        # compiled frames): the same kernels, values and random numbers
        with _random.fork_rng(enabled=self.preserve):
            if self.preserve:
                _random._set_raw_state(*self.rng)
            try:
                with saved_tensors_hooks(pack_rec, unpack_rec), enable_grad(), \
                        _autocast_as(self.autocast), self.rec_ctx:
                    self.function(*self.args, **self.kwargs)
            except _StopRecomputation:
                pass
        if valued[0]:
            self._check_versions()
        if self.check:
            if count[0] > n:
                raise CheckpointError(
                    "symtrace.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass "
                    f"({count[0]} > {n}).")
            if count[0] < n:
                raise CheckpointError(
                    "symtrace.utils.checkpoint: A different number of tensors was saved "
                    "during the original forward and recomputation.\nNumber of tensors "
                    f"saved during forward: {n}\nNumber of tensors saved during "
                    f"recomputation: {count[0]}")
            bad = [f"tensor at position {i}:\nsaved metadata: {self.metas[i]}\n"
                   f"recomputed metadata: {_tensor_meta(t)}"
                   for i, t in sorted(got.items()) if _tensor_meta(t) != self.metas[i]]
            if bad:
                raise CheckpointError(
                    "symtrace.utils.checkpoint: Recomputed values for the following tensors "
                    "have different metadata than during the forward pass.\n" + "\n".join(bad))
        self.store.update(got)


def _checkpoint_non_reentrant(function, args, kwargs, preserve, fwd_ctx, rec_ctx, check,
                              early_stop):
    if not is_grad_enabled():
        with fwd_ctx:
            return function(*args, **kwargs)
    # an argument that is a view whose base was written in place takes its new history
    # (a gather out of the base, which saves its positions) before the hooks count the
    # saves: the recomputation, on detached aliases, saves no such thing
    for a in list(args) + list(kwargs.values()):
        if _is_tensor(a) and a.requires_grad:
            try:
                a.grad_fn  # noqa: B018  (the view's history, made on first use)
            except RuntimeError:
                pass       # (a stale split output: its use in function raises as eager's)
    frame = _Frame(function, args, kwargs, preserve, rec_ctx, check, early_stop)
    with saved_tensors_hooks(frame.pack, _Frame.unpack), fwd_ctx:
        return function(*args, **kwargs)


@_compiler_disable
def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True,
               context_fn=noop_context_fn, determinism_check=_DEFAULT_DETERMINISM_MODE,
               debug=False, early_stop=True, **kwargs):
    """checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True,
    context_fn=noop_context_fn, determinism_check="default", debug=False, **kwargs):
    function(*args, **kwargs), its activations recomputed in backward instead of kept
    (see the module for the two variants and the differences from torch)."""
    if use_reentrant is None:
        warnings.warn(
            "symtrace.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly (torch.utils.checkpoint announces an exception for "
            "calls without it). use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=3)  # past compiler.disable's wrapper
        use_reentrant = True
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    preserve = bool(preserve_rng_state)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
    elif determinism_check not in _allowed_determinism_checks:
        raise ValueError("determinism_check should be one of "
                         f"{list(_allowed_determinism_checks)}, but got {determinism_check}")
    if _C._trace_active():
        # being recorded by a trace: the trace's own autograd covers function
        return function(*args, **kwargs)
    if use_reentrant:
        return CheckpointFunction.apply(function, (preserve, True, False, contextlib.nullcontext(),
                                                   contextlib.nullcontext()), *args)
    fwd_ctx, rec_ctx = context_fn()
    return _checkpoint_non_reentrant(function, args, kwargs, preserve, fwd_ctx, rec_ctx,
                                     determinism_check == "default", bool(early_stop))


# symtrace.compile's translator inlines `function` in place of the call (frontend/
# tr_checkpoint.c) and marks what it records as a checkpoint range of the graph
checkpoint._symtrace_checkpoint = True


def _warn_sequential_use_reentrant():
    # a function of its own: compile calls it for real (no break), eager warns the same
    warnings.warn(
        "symtrace.utils.checkpoint.checkpoint_sequential: the use_reentrant "
        "parameter should be passed explicitly (torch.utils.checkpoint announces "
        "an exception for calls without it). use_reentrant=False is "
        "recommended, but if you need to preserve the current default "
        "behavior, you can pass use_reentrant=True. Refer to docs for more "
        "details on the differences between the two variants.", stacklevel=4)


@_compiler_disable
def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """checkpoint_sequential(functions, segments, input, use_reentrant=None,
    preserve_rng_state=True): runs functions (an nn.Sequential or a list of modules or
    functions) in order on input, in `segments` chunks of which all but the last are
    checkpointed, as torch.utils.checkpoint.checkpoint_sequential."""
    if use_reentrant is None:
        _warn_sequential_use_reentrant()
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, got {segments!r}")

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    # an nn.Sequential is indexed as it is (its children in order), so that compile
    # reads each module through it
    if not hasattr(functions, "__getitem__"):
        functions = list(functions)
    segment_size = len(functions) // segments
    # the last chunk is not checkpointed (its output's graph is needed right away)
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    for j in range(end + 1, len(functions)):
        input = functions[j](input)
    return input


# the translator runs its body (checkpoint_sequential.__wrapped__) as user code
checkpoint_sequential._symtrace_checkpoint_sequential = True
