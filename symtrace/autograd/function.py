"""Custom autograd functions: Function (alias PyLayer, as in Paddle) with a
user forward and backward. Eagerly, apply() runs forward without recording
and attaches one tape node whose backward calls the user's backward. The ctx
is an instance of the Function's backward class (<Name>Backward, a subclass of
BackwardCFunction and so of _C.Node): once recorded, it is the outputs'
grad_fn, as torch's. A backward that frees the graph frees what the ctx saved
(ctx.saved_tensors raises then) but the node may run again. Under
saved-tensor hooks (autograd.graph), what ctx.save_for_backward kept is packed
once the node is recorded, and ctx.saved_tensors unpacks it."""
from .. import _C
from .grad_mode import no_grad, enable_grad, is_grad_enabled
from ._apply_args import bind_apply_args


class FunctionCtx:
    """The ctx passed to forward and backward (alias PyLayerContext)."""

    def __init__(self):
        self.needs_input_grad = ()
        self._to_save = None
        self._saved = None
        self._non_differentiable = set()
        self._dirty = {}
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keeps tensors (or None) for backward; read them as ctx.saved_tensors."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def _finish_saved(self, inputs, outs, diff):
        """After forward (as torch, versions are taken now): a saved input is kept
        as the input itself, with its history, so a backward run with
        create_graph=True is differentiable through it (as torch unpacks a saved
        input); a saved output (dirty inputs are outputs) as a detached alias
        with its output number (its history is this node: a reference cycle;
        saved_tensors links it back under create_graph)."""
        if self._to_save is None:
            return
        ins = {id(a): a for a in inputs if id(a) not in self._dirty}
        out_nr = {id(o): (k if d is not None else -1)
                  for k, (o, d) in enumerate(zip(outs, diff)) if isinstance(o, _C.TensorBase)}
        saved = []
        for t in self._to_save:
            if t is None:
                saved.append(None)
            elif id(t) in ins:
                saved.append((t, t._version, -1))
            else:
                saved.append((t.detach(), t._version, out_nr.get(id(t), -1)))
        self._saved_ids = tuple(id(t) for t in self._to_save)
        self._saved = tuple(saved)
        self._to_save = None

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

    @property
    def saved_tensors(self):
        if self._to_save is not None:   # read in forward, or a traced backward
            self._finish_saved((), (), ())
        if self._saved is _FREED:
            raise RuntimeError(FREED_MESSAGE)
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
            t, ver, nr = entry
            if t._version != ver:
                raise RuntimeError(_version_error(t, ver, nr, self))
            out.append(t if nr < 0 else _C._saved_output(t, nr))
        return tuple(out)

    def saved_tensor(self):
        """Paddle's spelling of saved_tensors."""
        return self.saved_tensors

    def mark_dirty(self, *tensors):
        """Marks inputs forward modified in place; they must be returned as
        outputs, and take this node as their history (torch's mark_dirty)."""
        for t in tensors:
            if not isinstance(t, _C.TensorBase):
                raise TypeError(f"mark_dirty can only mark tensors, got {type(t).__name__}")
            self._dirty[id(t)] = t

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


def _op_name(name):
    """A node's name as torch 2.13's version error names it ("ExpBackward0" -> "Exp")."""
    i = name.rfind("Backward")
    rest = name[i + 8:]
    return name[:i] if i > 0 and (rest == "" or rest.isdigit()) else name


def _version_error(t, ver, nr, ctx):
    """torch's error for a saved tensor written since it was saved: a saved input names
    its history now (torch saves the input itself), a saved output this node."""
    if nr >= 0:
        which = f", which is output {nr} of {_op_name(type(ctx).__name__)},"
    elif t.grad_fn is not None:
        which = f", which is output {t.output_nr} of {_op_name(t.grad_fn.name())},"
    else:
        which = ""
    from .anomaly_mode import is_anomaly_enabled
    hint = ("the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good "
            "luck!" if is_anomaly_enabled() else
            "enable anomaly detection to find the operation that failed to compute its "
            "gradient, with symtrace.autograd.set_detect_anomaly(True, check_nan=False).")
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{t.type()} {list(t.shape)}]{which} is at version "
            f"{t._version}; expected version {ver} instead. Hint: {hint}")


PyLayerContext = FunctionCtx

_FREED = object()   # ctx._saved after a backward that freed the graph
FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


class BackwardCFunction(_C.Node, FunctionCtx):
    """The ctx of a custom Function and, once recorded, its node (y.grad_fn), as
    torch's: each Function subclass gets a subclass named <Name>Backward."""
    _forward_cls = None

    def apply(self, *grads):
        """Runs the Function's backward with this ctx (torch's ctx.apply)."""
        return self._forward_cls.backward(self, *grads)

    def _st_backward(self, *grads):
        """The tape node's backward: the output gradients (None where none
        flowed, zeros when materialize_grads) -> one checked gradient per input."""
        if self.materialize_grads:
            from .._ops import zeros
            grads = tuple(zeros(m[0], dtype=m[1]) if g is None and m is not None else g
                          for g, m in zip(grads, self._st_out_metas))
        res = self._forward_cls.backward(self, *grads)
        return _check_grads(type(self).__name__, res, self._st_in_metas)

    def _st_free_saved(self):
        """After a backward that freed the graph (symtrace._C calls it)."""
        self._saved = _FREED
        self._saved_ids = ()


def _backward_cls(cls):
    """cls's <Name>Backward class (made once per Function subclass)."""
    bc = cls.__dict__.get("_backward_cls")
    if bc is None:
        bc = type(cls.__name__ + "Backward", (BackwardCFunction,),
                  {"_forward_cls": cls, "__module__": cls.__module__})
        cls._backward_cls = bc
    return bc


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
    """Subclass with static forward(ctx, *args) and backward(ctx, *grads), or
    forward(*args) with setup_context(ctx, inputs, output) and backward (torch's
    two styles); call Cls.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup = cls.setup_context is not Function.setup_context
        if kwargs or setup:
            args = bind_apply_args(cls.forward, args, kwargs, setup)
        if _C._trace_active() and is_grad_enabled():
            # being traced: captured as a region whose gradient is this
            # backward (frontend/pylayer_trace.c)
            return _C._trace_pylayer(cls, *args)
        ctx = _backward_cls(cls)()
        is_t = [isinstance(a, _C.TensorBase) for a in args]
        ctx.needs_input_grad = tuple(t and a.requires_grad for t, a in zip(is_t, args))
        with no_grad():
            outs = _plain(cls._forward_with_ctx, ctx, *args)
        single = not isinstance(outs, tuple)
        outs_t = (outs,) if single else outs
        record = is_grad_enabled() and any(ctx.needs_input_grad)
        dirty_views = _check_dirty(ctx, outs_t, record)
        inputs = [a for a, t in zip(args, is_t) if t]
        if not record:
            return outs
        # an input returned as-is (not dirty) becomes a fresh alias, so its own history stays
        ids = {id(a) for a in inputs if id(a) not in ctx._dirty}
        outs_t = tuple(o.detach() if isinstance(o, _C.TensorBase) and id(o) in ids else o for o in outs_t)
        nd = ctx._non_differentiable
        diff = tuple(o if isinstance(o, _C.TensorBase) and id(o) not in nd and o.dtype.is_floating_point
                     else None for o in outs_t)
        ctx._finish_saved(inputs, outs_t, diff)
        hooks = _C._saved_tensors_hooks_top()
        if hooks is not None:
            ctx._pack_saved(inputs, hooks)
        ctx._st_out_metas = [(tuple(o.shape), o.dtype) if o is not None else None for o in diff]
        ctx._st_in_metas = [(tuple(a.shape), a.dtype) if t else None for a, t in zip(args, is_t)]
        name = type(ctx).__name__

        # a dirty view gets the node through a copy into it (its base's history
        # records the write, as torch's CopySlices)
        node_outs = tuple(o.detach().clone() if o is not None and id(o) in dirty_views else o
                          for o in diff)
        _C._custom_node(name, ctx, tuple(a if t else None for a, t in zip(args, is_t)), node_outs)
        if dirty_views:
            with enable_grad():
                for o, n in zip(diff, node_outs):
                    if o is not n:
                        o.copy_(n)
        return outs_t[0] if single else outs_t


    @classmethod
    def _forward_with_ctx(cls, ctx, *args):
        """forward(ctx, *args), or forward(*args) then setup_context(ctx, args, output)."""
        if cls.setup_context is Function.setup_context:
            return cls.forward(ctx, *args)
        outs = cls.forward(*args)
        cls.setup_context(ctx, args, outs)
        return outs


def _bind_for_trace(cls, args, kwargs):
    """apply's keyword arguments bound to positions, for frontend/pylayer_trace.c."""
    return bind_apply_args(cls.forward, args, kwargs,
                           cls.setup_context is not Function.setup_context)


def _plain(fn, *args):
    """fn(*args) as plain Python, never compiled on its own (symtrace.compile):
    a forward frame captured apart from apply (after a graph break in it) would
    lose what it does to ctx (save_for_backward, mark_dirty)."""
    suspend = getattr(_C, "_fe_suspend", None)
    if suspend is None:
        return fn(*args)
    suspend(1)
    try:
        return fn(*args)
    finally:
        suspend(-1)


def _check_dirty(ctx, outs_t, record):
    """Dirty inputs must be returned; their version is bumped (as torch's). Returns
    the ids of the dirty views whose history goes through their base."""
    if not ctx._dirty:
        return set()
    returned = {id(o) for o in outs_t}
    if any(i not in returned for i in ctx._dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all be "
                           "outputs of the Function.")
    views = set()
    for i, t in ctx._dirty.items():
        if record and t.requires_grad and t.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                               "operation.")
        t._bump_version()
        base = t._base
        if record and base is not None and (base.requires_grad or t.requires_grad):
            views.add(i)
    return views


def _check_grads(name, res, in_metas):
    """The gradients a custom backward returned, checked against the inputs as
    torch does: one per input (extra trailing Nones allowed), None for a non-tensor,
    a tensor of the input's shape, cast to the input's dtype."""
    if not isinstance(res, tuple):
        res = (res,)
    n = len(in_metas)
    if len(res) > n and all(g is None for g in res[n:]):
        res = res[:n]
    if len(res) != n:
        raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                           f"(expected {n}, got {len(res)})")
    out = []
    for i, (g, m) in enumerate(zip(res, in_metas)):
        if m is None:
            if g is not None:
                raise RuntimeError(f"function {name} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding "
                                   f"forward input was not a Variable")
            out.append(None)
            continue
        if g is None:
            out.append(None)
            continue
        if not isinstance(g, _C.TensorBase):   # torch's text
            raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        if tuple(g.shape) != m[0]:
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} "
                               f"- got {list(g.shape)} but expected shape compatible with "
                               f"{list(m[0])}")
        if g.dtype is not m[1]:
            g = g.to(m[1])
        out.append(g)
    return tuple(out)


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
