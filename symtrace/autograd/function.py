"""Custom autograd functions: Function (alias PyLayer, as in Paddle) with a
user forward and backward. Eagerly, apply() runs forward without recording
and attaches one tape node whose backward calls the user's backward. Under
saved-tensor hooks (autograd.graph), what ctx.save_for_backward kept is packed
once the node is recorded, and ctx.saved_tensors unpacks it."""
from .. import _C
from .grad_mode import no_grad, is_grad_enabled


class FunctionCtx:
    """The ctx passed to forward and backward (alias PyLayerContext)."""

    def __init__(self):
        self.needs_input_grad = ()
        self._saved = None
        self._non_differentiable = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keeps tensors (or None) for backward; read them as ctx.saved_tensors."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save tensors, but argument {i} "
                                f"was {type(t).__name__}")
        # detached aliases: no reference cycle through an output's grad_fn
        self._saved = tuple(None if t is None else (t.detach(), t._version) for t in tensors)
        self._saved_ids = tuple(id(t) for t in tensors)   # which were inputs (pack hooks)

    def _pack_saved(self, inputs, hooks):
        """The node is recorded under saved-tensor hooks (pack, unpack): each saved
        tensor is packed, an input as itself, anything else as its detached alias
        (see autograd.graph)."""
        if self._saved is None:
            return
        pack, unpack = hooks
        by_id = {id(a): a for a in inputs}
        out = []
        with no_grad():
            for entry, i in zip(self._saved, self._saved_ids):
                if entry is None:
                    out.append(None)
                    continue
                t = entry[0]
                given = by_id.get(i, t)
                ver = given._version
                obj = pack(given)
                if given._version != ver:
                    raise RuntimeError(
                        "A saved tensor pack hook is modifying its input in place. Tensors "
                        "provided as input to pack hook cannot be modified by in-place "
                        "operations as this can lead to unexpected side-effects.")
                out.append(_Packed(unpack, obj, tuple(t.shape), t.dtype))
        self._saved = tuple(out)

    def _keep_inputs(self, inputs):
        """A saved input is kept as the input itself, with its history, so a
        backward run with create_graph=True is differentiable through it (as
        torch unpacks a saved input); outputs stay detached aliases (an
        output's history is this node: a reference cycle)."""
        if self._saved is None:
            return
        by_id = {id(a): a for a in inputs}
        self._saved = tuple(entry if entry is None or i not in by_id else (by_id[i], entry[1])
                            for entry, i in zip(self._saved, self._saved_ids))

    @property
    def saved_tensors(self):
        if self._saved is None:
            return ()
        out = []
        for entry in self._saved:
            if entry is None:
                out.append(None)
                continue
            if isinstance(entry, _Packed):
                out.append(entry.unpack())
                continue
            t, ver = entry
            if t._version != ver:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.dtype} {list(t.shape)}] is at version "
                    f"{t._version}; expected version {ver} instead.")
            out.append(t)
        return tuple(out)

    def saved_tensor(self):
        """Paddle's spelling of saved_tensors."""
        return self.saved_tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


PyLayerContext = FunctionCtx


class _Packed:
    """A tensor saved by ctx.save_for_backward under saved-tensor hooks."""
    __slots__ = ("unpack_hook", "obj", "shape", "dtype")

    def __init__(self, unpack_hook, obj, shape, dtype):
        self.unpack_hook, self.obj, self.shape, self.dtype = unpack_hook, obj, shape, dtype

    def unpack(self):
        t = self.unpack_hook(self.obj)
        if not isinstance(t, _C.TensorBase):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        if tuple(t.shape) != self.shape or t.dtype != self.dtype:
            raise RuntimeError(
                f"saved tensor unpack hook returned a tensor of shape {list(t.shape)} and "
                f"dtype {t.dtype} for a tensor saved by ctx.save_for_backward with shape "
                f"{list(self.shape)} and dtype {self.dtype}")
        return t


class Function:
    """Subclass with static forward(ctx, *args) and backward(ctx, *grads);
    call Cls.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args):
        if _C._trace_active() and is_grad_enabled():
            # being traced: captured as a region whose gradient is this
            # backward (frontend/pylayer_trace.c)
            return _C._trace_pylayer(cls, *args)
        ctx = FunctionCtx()
        is_t = [isinstance(a, _C.TensorBase) for a in args]
        ctx.needs_input_grad = tuple(t and a.requires_grad for t, a in zip(is_t, args))
        with no_grad():
            outs = cls.forward(ctx, *args)
        single = not isinstance(outs, tuple)
        outs_t = (outs,) if single else outs
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return outs
        hooks = _C._saved_tensors_hooks_top()
        if hooks is not None:
            ctx._pack_saved([a for a, t in zip(args, is_t) if t], hooks)
        else:
            ctx._keep_inputs([a for a, t in zip(args, is_t) if t])
        # an input returned as-is becomes a fresh alias, so its own history stays
        ids = {id(a) for a, t in zip(args, is_t) if t}
        outs_t = tuple(o.detach() if isinstance(o, _C.TensorBase) and id(o) in ids else o for o in outs_t)
        nd = ctx._non_differentiable
        diff = tuple(o if isinstance(o, _C.TensorBase) and id(o) not in nd and o.dtype.is_floating_point
                     else None for o in outs_t)
        metas = [(tuple(o.shape), o.dtype) if o is not None else None for o in diff]
        in_metas = [(tuple(a.shape), a.dtype) if t else None for a, t in zip(args, is_t)]
        name = cls.__name__ + "Backward"

        def backward(*grads):
            if ctx.materialize_grads:
                from .._ops import zeros
                grads = tuple(zeros(m[0], dtype=m[1]) if g is None and m is not None else g
                              for g, m in zip(grads, metas))
            res = cls.backward(ctx, *grads)
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) != len(args):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(res)})")
            out = []
            for i, (g, m) in enumerate(zip(res, in_metas)):
                if m is None:
                    if g is not None:
                        raise RuntimeError(f"function {name} returned a gradient different than "
                                           f"None at position {i + 1}, but the corresponding "
                                           f"forward input was not a Tensor")
                    out.append(None)
                    continue
                if g is None:
                    out.append(None)
                    continue
                if not isinstance(g, _C.TensorBase):
                    raise TypeError(f"function {name} returned a {type(g).__name__} as gradient "
                                    f"{i}; expected a Tensor or None")
                if tuple(g.shape) != m[0]:
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} "
                                       f"- got {list(g.shape)} but expected shape compatible with "
                                       f"{list(m[0])}")
                if g.dtype is not m[1]:
                    g = g.to(m[1])
                out.append(g)
            return tuple(out)

        _C._custom_node(name, backward, tuple(a if t else None for a, t in zip(args, is_t)), diff)
        return outs_t[0] if single else outs_t


PyLayer = Function


def once_differentiable(fn):
    """once_differentiable(backward): marks a custom Function's backward as not
    differentiable itself (it runs under no_grad; a gradient of its gradient is then
    not recorded), as torch.autograd.function.once_differentiable."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)
    return wrapper
