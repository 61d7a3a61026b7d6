"""symtrace.func: function transforms, as torch.func: grad, grad_and_value, vjp,
jvp, jacrev, jacfwd, hessian, vmap, functional_call and stack_module_state (in _stack.py).

The transforms are functional: grad(f)(x) needs no x.requires_grad and leaves no
.grad behind. Each application is a level: its differentiable inputs are fresh
leaves (x.detach().requires_grad_()), or, when x already requires grad and grad
mode is on, a differentiable alias (x.view_as(x)) so that an enclosing transform
or the user's own autograd still sees through it. The gradients come from
symtrace.autograd.grad, with create_graph=True whenever the outputs' history
reaches a leaf that is not the level's own (so grad(grad(f)), jacrev(jacrev(f))
and hessian compose, and gradients with respect to captured tensors that
require grad keep their history, as torch's levels do); every result whose
history reaches only the level's own leaves is returned detached.

symtrace has no forward-mode AD: jvp uses the double-vjp trick, and jacfwd
computes the same Jacobian as jacrev (reverse mode), so hessian is jacrev of
jacrev. vmap is a loop over the batch dimension that stacks the per-sample
results: correct (also under autograd and the other transforms) but not
vectorised, one call of func per sample; chunk_size changes nothing but is
checked. randomness='error' raises torch's error when func draws from the
global generator (its state moved), 'same' replays the generator's state for
every sample, 'different' lets the samples draw in turn. With out_dims None, a
tensor output must be the same for every sample (else torch's "can not return a
BatchedTensor" error); a batch of size 0 calls func once on zeros of a sample's
shape, to learn the outputs' shapes."""
import functools
import threading

from .. import _C, _ops
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..utils._pytree import tree_flatten, tree_unflatten, _broadcast_to_and_flatten, treespec_pprint
from ..nn.utils.stateless import _functional_call

from ._stack import stack_module_state  # noqa: E402,F401

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state"]


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _ad_grad(*args, **kwargs):
    from ..autograd import grad as g  # late: symtrace.autograd may still be loading
    return g(*args, **kwargs)


# ---------------- levels ----------------
_tls = threading.local()


def _levels():
    s = getattr(_tls, "levels", None)
    if s is None:
        s = _tls.levels = []
    return s


class _Level:
    """One application of a gradient transform: the leaves it made (by id, kept
    alive so that the ids stay theirs), including those of transforms that ran
    nested inside it, and whether grad mode was on when it was entered."""

    def __init__(self):
        self.grad_enabled = is_grad_enabled()
        self.mine = {}

    def __enter__(self):
        _levels().append(self)
        return self

    def __exit__(self, *exc):
        _levels().pop()
        self.hand_up()
        return False

    def hand_up(self):
        """An enclosing level owns this level's leaves too."""
        s = _levels()
        if s:
            s[-1].mine.update(self.mine)

    def own(self, t):
        self.mine[id(t)] = t
        return t

    def make_differentiable(self, x):
        if not _is_tensor(x):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if self.grad_enabled and x.requires_grad:
            return x.view_as(x)
        return self.own(x.detach().requires_grad_())

    def _reaches(self, t, clean):
        if not (_is_tensor(t) and t.requires_grad):
            return False
        fn = t.grad_fn
        if fn is None:
            return id(t) not in self.mine
        seen, held, stack = set(), [], [fn]
        while stack:
            n = stack.pop()
            if id(n) in seen or id(n) in clean:
                continue
            seen.add(id(n))
            held.append(n)  # keeps the wrapper (and so its id) alive
            for nx, _ in n.next_functions:
                if nx is None:
                    continue
                if nx.name() == "AccumulateGrad":
                    if id(nx.variable) not in self.mine:
                        return True
                else:
                    stack.append(nx)
        clean.update((id(n), n) for n in held)
        return False

    def reaches_outside(self, tensors):
        """True when some tensor's history reaches a leaf that requires grad and is
        not this level's: a user's leaf or an enclosing transform's."""
        clean = {}
        return any(self._reaches(t, clean) for t in tensors)

    def unwrap(self, tree, keep=None):
        """tree with each tensor detached unless its history reaches outside this
        level (and keep, by default grad mode at entry, allows history)."""
        keep = self.grad_enabled if keep is None else keep
        leaves, spec = tree_flatten(tree)
        clean = {}
        out = [x.detach() if _is_tensor(x) and x.requires_grad and not (keep and self._reaches(x, clean))
               else x for x in leaves]
        return tree_unflatten(out, spec)


# ---------------- argnums ----------------
def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    """(wrapped argnums, the selected args): one arg (int argnums, as_tuple=False) or a tuple."""
    if not isinstance(argnums, int) and not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        argnums = _validate_and_wrap_argnum(argnums, len(args))
        return argnums, ((args[argnums],) if as_tuple else args[argnums])
    argnums = tuple(_validate_and_wrap_argnum(a, len(args)) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return argnums, tuple(args[i] for i in argnums)


def _replace_args(args, new, argnums):
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    return tuple(new[argnums.index(i)] if i in argnums else a for i, a in enumerate(args))


def _differentiable_args(level, args, argnums):
    """(args with the selected ones made differentiable, flat list of those, their spec)."""
    argnums, diff = _slice_argnums(args, argnums, as_tuple=False)
    flat, spec = tree_flatten(diff)
    flat = [level.make_differentiable(t) for t in flat]
    return _replace_args(args, tree_unflatten(flat, spec), argnums), flat, spec


def _grads(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False):
    """autograd.grad over the outputs that require grad; zeros for unused inputs. The
    graph is retained when create_graph (a transform around this one differentiates
    through it)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(_ops.zeros_like(i) for i in inputs)
    with enable_grad():
        got = _ad_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs], retain_graph=retain_graph,
                       create_graph=create_graph, allow_unused=True)
    return tuple(_ops.zeros_like(i) if g is None else g for g, i in zip(got, inputs))


def _check_aux(output, api):
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return output


def _aux(level, aux):
    """aux unwrapped as the outputs are; like torch, it may hold only tensors."""
    for x in tree_flatten(aux)[0]:
        if not _is_tensor(x):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return level.unwrap(aux)


def _assert_non_empty_tensor_output(output, api):
    if (len(output) == 1 and output[0] is None) or len(output) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {output})")
    for o in output:
        if not _is_tensor(o):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors"
                               f", got unsupported type {type(o)}")


def _assert_non_empty_list_of_tensors(output, api, argname):
    if len(output) == 0:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for out in output:
        if not _is_tensor(out):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(out)}")


def _error_if_complex(func_name, args, is_input):
    for idx, arg in enumerate(tree_flatten(args)[0]):
        if _is_tensor(arg) and getattr(arg.dtype, "is_complex", False):
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{func_name}: Expected all {kind} to be real but received complex tensor "
                               f"at flattened input idx: {idx}")


# ---------------- grad, grad_and_value ----------------
def _grad_and_value(func, argnums, has_aux, args, kwargs):
    with _Level() as level, enable_grad():
        args, flat_diff, spec = _differentiable_args(level, args, argnums)
        output = func(*args, **kwargs)
        aux = None
        if has_aux:
            output, aux = _check_aux(output, "grad_and_value(f)(*args)")
        if not _is_tensor(output):
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) "
                               f"to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) "
                               "to return a scalar Tensor, got tensor with "
                               f"{output.dim()} dims. Maybe you wanted to "
                               "use the vjp or jacrev APIs instead?")
        cg = level.grad_enabled and level.reaches_outside([output])
        grad_input = tree_unflatten(_grads((output,), flat_diff, create_graph=cg), spec)
        grad_input = level.unwrap(grad_input)
        output = level.unwrap(output)
        aux = _aux(level, aux) if has_aux else None
    if has_aux:
        return grad_input, (output, aux)
    return grad_input, output


def grad_and_value(func, argnums=0, has_aux=False):
    """grad_and_value(func, argnums=0, has_aux=False) -> a function returning
    (gradient of func's scalar output with respect to the argnums arguments, the
    output), or (gradient, (output, aux)) with has_aux."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """grad(func, argnums=0, has_aux=False) -> a function returning the gradient of
    func's scalar output with respect to the argnums arguments (pytrees of
    tensors), or (gradient, aux) with has_aux."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


# ---------------- vjp, jvp ----------------
def vjp(func, *primals, has_aux=False):
    """vjp(func, *primals, has_aux=False) -> (func(*primals), vjp_fn[, aux]);
    vjp_fn(cotangents, retain_graph=True, create_graph=None) returns the
    vector-Jacobian products, a tuple shaped like primals."""
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


def _vjp_with_argnums(func, *primals, argnums=None, has_aux=False):
    level = _Level()
    with level, enable_grad():
        if argnums is None:
            flat_diff, primals_spec = tree_flatten(primals)
            flat_diff = [level.make_differentiable(t) for t in flat_diff]
            primals = tree_unflatten(flat_diff, primals_spec)
        else:
            primals, flat_diff, primals_spec = _differentiable_args(level, primals, argnums)
        primals_out = func(*primals)
        aux = None
        if has_aux:
            primals_out, aux = _check_aux(primals_out, "vjp(f, *primals)")
            aux = _aux(level, aux)
        flat_out, out_spec = tree_flatten(primals_out)
        _assert_non_empty_tensor_output(flat_out, "vjp(f, *primals)")
        results = level.unwrap(primals_out)
        for o in flat_out:
            if not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError("vjp(f, ...): All outputs of f must be "
                                   "floating-point or complex Tensors, got Tensor "
                                   f"with dtype {o.dtype}")

    def wrapper(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_ct, ct_spec = tree_flatten(cotangents)
        if out_spec != ct_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same "
                               "as pytree structure of outputs to the function. "
                               f"cotangents: {treespec_pprint(ct_spec)}, "
                               f"primal output: {treespec_pprint(out_spec)}")
        cg = bool(create_graph) and level.reaches_outside(list(flat_out) + list(flat_ct))
        res = _grads(flat_out, flat_diff, flat_ct, retain_graph=retain_graph, create_graph=cg)
        res = level.unwrap(tree_unflatten(list(res), primals_spec), keep=bool(create_graph))
        level.hand_up()  # inside another transform: its results hold our leaves
        return res

    if has_aux:
        return results, wrapper, aux
    return results, wrapper


_JVP_STR = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """jvp(func, primals, tangents, *, strict=False, has_aux=False) ->
    (func(*primals), the Jacobian-vector product along tangents[, aux]), by the
    double-vjp trick (no forward-mode AD)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP_STR}: Expected primals to be a tuple. "
                           "E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP_STR}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {primals_spec} "
                           f"and tangents with structure {tangents_spec}")
    _assert_non_empty_list_of_tensors(flat_primals, _JVP_STR, "primals")
    _assert_non_empty_list_of_tensors(flat_tangents, _JVP_STR, "tangents")
    for idx, (p, t) in enumerate(zip(flat_primals, flat_tangents)):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{_JVP_STR}: Expected primals and tangents to have the same shape, "
                               f"got primal {idx} of shape {p.size()} and tangent of shape {t.size()}")
    with _Level() as level, enable_grad():
        flat_p = [level.make_differentiable(p) for p in flat_primals]
        result = func(*tree_unflatten(flat_p, primals_spec))
        aux = None
        if has_aux:
            result, aux = _check_aux(result, _JVP_STR)
            aux = _aux(level, aux)
        flat_res, spec = tree_flatten(result)
        _assert_non_empty_tensor_output(flat_res, _JVP_STR)
        diff = [k for k, r in enumerate(flat_res) if r.requires_grad]
        us = {k: level.own(_ops.zeros_like(flat_res[k]).requires_grad_()) for k in diff}
        tangents_out = [None] * len(flat_res)
        if diff:
            g = _ad_grad([flat_res[k] for k in diff], flat_p, [us[k] for k in diff], create_graph=True,
                         allow_unused=True)
            pairs = [(gi, ti) for gi, ti in zip(g, flat_tangents) if gi is not None and gi.requires_grad]
            if pairs:
                cg = level.grad_enabled and level.reaches_outside(flat_res + flat_tangents)
                got = _ad_grad([p[0] for p in pairs], [us[k] for k in diff], [p[1] for p in pairs],
                               create_graph=cg, allow_unused=True)
                for k, t in zip(diff, got):
                    tangents_out[k] = t
        for k, t in enumerate(tangents_out):
            if t is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): "
                                       "The output of f is independent of "
                                       "the inputs. This is not allowed with strict=True.")
                tangents_out[k] = _ops.zeros_like(flat_res[k])
        primals_out = level.unwrap(tree_unflatten(flat_res, spec))
        tangents_out = level.unwrap(tree_unflatten(tangents_out, spec))
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


# ---------------- jacrev, jacfwd, hessian ----------------
_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the "
                 "'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _jacobian(func, args, argnums, has_aux, api, randomness=None):
    """The Jacobian of func's outputs with respect to the argnums arguments by
    reverse mode, one autograd.grad per output element: an output tree of input
    trees of tensors out.shape + in.shape."""
    _error_if_complex(api, args, is_input=True)
    with _Level() as level, enable_grad():
        if argnums is None:
            flat_diff, diff_spec = tree_flatten(args)
            flat_diff = [level.make_differentiable(t) for t in flat_diff]
            args = tree_unflatten(flat_diff, diff_spec)
        else:
            args, flat_diff, diff_spec = _differentiable_args(level, args, argnums)
        state = _C._rng_get_state() if randomness == "error" else None
        output = func(*args)
        if state is not None and _C._rng_get_state() != state:
            raise RuntimeError(_RANDOM_ERROR)
        aux = None
        if has_aux:
            output, aux = _check_aux(output, "vjp(f, *primals)" if api == "jacrev" else _JVP_STR)
            aux = _aux(level, aux)
        flat_out, out_spec = tree_flatten(output)
        _assert_non_empty_tensor_output(flat_out, "vjp(f, *primals)" if api == "jacrev" else _JVP_STR)
        _error_if_complex(api, flat_out, is_input=False)
        for o in flat_out:
            if not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError(f"{'vjp(f, ...)' if api == 'jacrev' else _JVP_STR}: All outputs of f "
                                   "must be floating-point or complex Tensors, got Tensor "
                                   f"with dtype {o.dtype}")
        cg = level.grad_enabled and level.reaches_outside(flat_out)
        per_out = []
        for o in flat_out:
            rows = [[] for _ in flat_diff]
            flat_o = o.reshape(-1)
            for j in range(o.numel()):
                g = _grads((flat_o[j],), flat_diff, retain_graph=True, create_graph=cg)
                for i, gi in enumerate(g):
                    rows[i].append(gi)
            jac = []
            for i, x in enumerate(flat_diff):
                shape = tuple(o.shape) + tuple(x.shape)
                if rows[i]:
                    jac.append(_ops.stack(rows[i]).reshape(shape))
                else:
                    jac.append(_ops.zeros(shape, dtype=x.dtype, device=x.device))
            per_out.append(tree_unflatten(jac, diff_spec))
        result = level.unwrap(tree_unflatten(per_out, out_spec))
    if has_aux:
        return result, aux
    return result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """jacrev(func, argnums=0, *, has_aux=False, chunk_size=None) -> a function
    returning the Jacobian of func with respect to the argnums arguments, by
    reverse mode (out.shape + in.shape per output and input, nested as the output
    and argument structures), and aux with has_aux. chunk_size is checked; the
    rows are computed one at a time whatever its value."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper_fn(*args):
        return _jacobian(func, args, argnums, has_aux, "jacrev")
    return wrapper_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """jacfwd(func, argnums=0, has_aux=False, *, randomness="error") -> a function
    returning the Jacobian of func with respect to the argnums arguments, as
    torch.func.jacfwd; computed by reverse mode (symtrace has no forward-mode AD),
    so the values are jacrev's. randomness='error' raises torch's error when func
    draws random numbers."""
    @functools.wraps(func)
    def wrapper_fn(*args):
        _check_randomness_arg(randomness)
        return _jacobian(func, args, argnums, has_aux, "jacfwd", randomness)
    return wrapper_fn


def hessian(func, argnums=0):
    """hessian(func, argnums=0) -> a function returning the Hessian of func with
    respect to the argnums arguments: jacfwd(jacrev(func, argnums), argnums)."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------- vmap ----------------
def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_randomness_arg(randomness):
    if randomness not in ["error", "different", "same"]:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")


def _check_out_dims_is_int_or_int_pytree(out_dims, func):
    if isinstance(out_dims, int):
        return
    for x in tree_flatten(out_dims)[0]:
        if not (isinstance(x, int) or x is None):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be "
                             "an int, None or a python collection of ints representing where in the outputs the "
                             "vmapped dimension should appear.")


def _process_batched_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, int) and not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
                         "expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
                         "in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {tree_flatten(in_dims)[1]} but inputs "
                         f"has structure {args_spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
                             f"Got in_dim={in_dim} for an input but in_dim must be either "
                             "an integer dimension or None.")
        if isinstance(in_dim, int) and not _is_tensor(arg):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
                             f"Got in_dim={in_dim} for an input but the input is of type "
                             f"{type(arg)}. We cannot vmap over non-Tensor arguments, "
                             "please use None as the respective in_dim")
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
                             f"Got in_dim={in_dim} for some input, but that input is a Tensor "
                             f"of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    batch_sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if len(batch_sizes) == 0:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(b != batch_sizes[0] for b in batch_sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {batch_sizes} for the mapped dimension")
    return batch_sizes[0], flat_in_dims, flat_args, args_spec


def _same_value(a, b):
    if a is b:
        return True
    if not (_is_tensor(a) and _is_tensor(b)):
        return a == b
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    return a.numel() == 0 or bool((a.detach() == b.detach()).all())


def _unwrap_outputs(outs, out_dims, func, batch_size):
    """Stacks the per-sample outputs along out_dims (torch's structure checks)."""
    name = _get_name(func)
    flats = [tree_flatten(o) for o in outs]
    flat0, spec = flats[0]
    for f, s in flats[1:]:
        if s != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structures "
                             f"for different samples: {spec} and {s}")

    def incompatible():
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): "
                         "out_dims is not compatible with the structure of `outputs`. "
                         f"out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {spec}.")
    if _is_tensor(outs[0]):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            incompatible()
    else:
        flat_out_dims = _broadcast_to_and_flatten(out_dims, spec)
        if flat_out_dims is None:
            incompatible()
    result = []
    for p, d in enumerate(flat_out_dims):
        leaves = [f[0][p] for f in flats]
        if d is None:
            if _is_tensor(leaves[0]) and not all(_same_value(leaves[0], x) for x in leaves[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a "
                                 "BatchedTensor when out_dim is None")
            result.append(leaves[0])
            continue
        if not _is_tensor(leaves[0]):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return "
                             f"Tensors, got type {type(leaves[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        n = leaves[0].dim() + 1
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        if batch_size == 0:
            shape = list(leaves[0].shape)
            shape.insert(d % n, 0)
            result.append(_ops.zeros(tuple(shape), dtype=leaves[0].dtype, device=leaves[0].device))
        else:
            result.append(_ops.stack(leaves, dim=d))
    return tree_unflatten(result, spec)


def _loop_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs):
    outs = []
    start = _C._rng_get_state()
    for b in range(max(batch_size, 1)):
        if batch_size == 0:  # one call on zeros of a sample's shape, for the outputs' shapes
            sample = [a if d is None else
                      _ops.zeros(tuple(a.shape[:d]) + tuple(a.shape[d + 1:]), dtype=a.dtype, device=a.device)
                      for a, d in zip(flat_args, flat_in_dims)]
        else:
            sample = [a if d is None else a.select(d, b) for a, d in zip(flat_args, flat_in_dims)]
        if randomness == "same" and b > 0:
            _C._rng_set_state(*start)
        before = _C._rng_get_state()
        out = func(*tree_unflatten(sample, args_spec), **kwargs)
        if randomness == "error" and _C._rng_get_state() != before:
            raise RuntimeError(_RANDOM_ERROR)
        outs.append(out)
    return _unwrap_outputs(outs, out_dims, func, batch_size)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None) ->
    a function mapping func over the in_dims dimension of its inputs and stacking
    the results along out_dims (nested structures, None for unmapped inputs and
    outputs). A loop over the samples, not vectorised (see the module docstring)."""
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims_is_int_or_int_pytree(out_dims, func)
        batch_size, flat_in_dims, flat_args, args_spec = _process_batched_inputs(in_dims, args, func)
        return _loop_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs)
    return wrapped


# ---------------- functional_call ----------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
    tie_weights=True, strict=False) -> module(*args, **kwargs) run with the given
    tensors (a dict, or a sequence of dicts with distinct keys) in place of its
    named parameters and buffers."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                            strict=strict)
