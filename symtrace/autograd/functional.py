"""symtrace.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a
function of tensors, as torch.autograd.functional (same arguments, nesting of
results, strict-mode and argument errors).

Everything is built on symtrace.autograd.grad (create_graph=True where the
result must be differentiable). symtrace has no forward-mode AD: jvp, hvp and
jacobian(strategy="forward-mode") use the double-vjp trick (the vjp is linear
in its cotangent u, so the derivative of u -> J^T u along v gives J v). The
values are those of forward mode; the cost is that of two backward passes.
vectorize=True computes the same Jacobian with the row-by-row loop (there is
no batched autograd.grad); its argument checks are torch's."""
from .. import _C, _ops
from .grad_mode import enable_grad, set_grad_enabled, is_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _autograd():
    from .. import autograd  # late: this module is loaded while symtrace.autograd initializes
    return autograd


# ---------------- utilities (torch.autograd.functional's, same names) ----------------
def _as_tuple_nocheck(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _as_tuple(inp, arg_name=None, fn_name=None):
    """(whether inp was a tuple, inp as a tuple of tensors); TypeError naming the
    argument for anything else."""
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)
    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False
    for i, el in enumerate(inp):
        if not _is_tensor(el):
            if is_inp_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                                f"Tensors but the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but the given {arg_name} has type {type(el)}.")
    return is_inp_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undoes _as_tuple on res (to_unpack: one flag, or (outer, inner) flags for a
    tuple of tuples)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """New tensor objects for the inputs: differentiable views when create_graph
    and the input requires grad (gradients flow back to it), else detached leaves
    (requiring grad when need_graph)."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    """Detaches the results unless create_graph (nested tuples too)."""
    if _is_tensor(inputs[0]):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    """strict mode: the errors for an output (or gradient, jacobian, hessian) that
    does not depend on the inputs."""
    if not strict:
        return
    if input_type not in ["outputs", "grad_inputs", "jacobian", "hessian"]:
        raise RuntimeError("Invalid input_type to _check_requires_grad")
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}."
                               " This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i}"
                    " is independent of the input. This is not allowed in strict mode."
                    " You should ensure that your function is thrice differentiable and that"
                    " the hessian depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided"
                    f" function with respect to input {i} is independent of the input. This is not"
                    " allowed in strict mode. You should ensure that your function is twice"
                    " differentiable and that the jacobian depends on the inputs (this would be"
                    " violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of the"
                    " user-provided function. This is not allowed in strict mode.")
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients."
                " The outputs must be computed in a differentiable manner from the input"
                " when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad that skips outputs that are None or do not require grad
    (allow_unused=True); all None when no output is differentiable."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = (), ()
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (grad_out,)
    if len(new_outputs) == 0:
        return (None,) * len(inputs)
    return _autograd().grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                            create_graph=create_graph, retain_graph=retain_graph)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None gradients become zeros like refs (or strict-mode errors naming the stage)."""
    if stage not in ["back", "back_trick", "double_back", "double_back_trick"]:
        raise RuntimeError(f"Invalid stage argument '{stage}' to _fill_in_zeros")
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                if stage == "back":
                    raise RuntimeError("The output of the user-provided function is independent of "
                                       f"input {i}. This is not allowed in strict mode.")
                if stage == "back_trick":
                    raise RuntimeError(f"The gradient with respect to the input is independent of entry {i}"
                                       " in the grad_outputs when using the double backward trick to compute"
                                       " forward mode gradients. This is not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError("The jacobian of the user-provided function is independent of "
                                       f"input {i}. This is not allowed in strict mode.")
                raise RuntimeError("The hessian of the user-provided function is independent of "
                                   f"entry {i} in the grad_jacobian. This is not allowed in strict "
                                   "mode as it prevents from using the double backward trick to "
                                   "replace forward mode AD.")
            grads_i = _ops.zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            if "double" not in stage:
                raise RuntimeError("The jacobian of the user-provided function is independent of "
                                   f"input {i}. This is not allowed in strict mode when create_graph=True.")
            raise RuntimeError("The hessian of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when create_graph=True.")
        res += (grads_i,)
    return res


def _zeros_requiring_grad(t):
    return _ops.zeros_like(t).requires_grad_(True)


# ---------------- public API ----------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """vjp(func, inputs, v=None, create_graph=False, strict=False) -> (func_output, vjp):
    the vector-Jacobian product v^T J of func at inputs, shaped like the inputs."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns "
                               "a single Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """jvp(func, inputs, v=None, create_graph=False, strict=False) -> (func_output, jvp):
    the Jacobian-vector product J v, shaped like the outputs (double-vjp trick)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function "
                               "is a single Tensor with a single element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the backward is linear in grad_outputs: its value does not matter
        grad_outputs = tuple(_zeros_requiring_grad(out) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_outputs_tuple)


def _jacfwd(func, inputs, strict=False, vectorize=False, _keep_history=False):
    """The Jacobian column by column: J e_j for each input element e_j, by the
    double-vjp trick (what torch computes with forward-mode AD). As torch's, the
    result keeps the history of the inputs that require grad (and, called from
    hessian, always has one)."""
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` "
                           'and `strategy="forward-mode"` are not supported together (yet). '
                           "Please either set `strict=False` or "
                           '`strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    keep = (_keep_history or any(inp.requires_grad for inp in inputs)) and is_grad_enabled()
    with enable_grad():
        inputs = tuple(inp if inp.requires_grad else inp.detach().requires_grad_(True) for inp in inputs)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs")
        us = tuple(_zeros_requiring_grad(out) for out in outputs)
        g = _autograd_grad(outputs, inputs, us, create_graph=True)
        diff = [k for k, gk in enumerate(g) if gk is not None and gk.requires_grad]
        jac = []   # jac[i][k]: columns of output k for input i
        for i, inp in enumerate(inputs):
            cols = [[] for _ in outputs]
            n = inp.numel()
            for j in range(n):
                e = _ops.zeros(n, dtype=inp.dtype, device=inp.device)
                e[j] = 1
                e = e.view(inp.shape)
                gi, ei = [g[i]] if i in diff else [], [e] if i in diff else []
                col = _autograd_grad(tuple(gi), us, tuple(ei), retain_graph=True, create_graph=keep) \
                    if gi else (None,) * len(us)
                for k, c in enumerate(col):
                    cols[k].append(_ops.zeros_like(outputs[k]) if c is None else c)
            jac.append(cols)
    res = []   # lists, not tuples, as torch's forward-mode result
    for k, out in enumerate(outputs):
        row = []
        for i, inp in enumerate(inputs):
            if inp.numel() == 0:
                row.append(_ops.zeros(tuple(out.shape) + tuple(inp.shape), dtype=out.dtype,
                                      device=out.device))
                continue
            stacked = _ops.stack(jac[i][k], dim=-1) if jac[i][k][0].dim() else _ops.stack(jac[i][k])
            row.append(stacked.reshape(tuple(out.shape) + tuple(inp.shape)))
        res.append(row)
    return _tuple_postprocess(res, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
    strategy="reverse-mode") -> the Jacobian, out.shape + in.shape per (output, input),
    nested as torch's (a tensor, a tuple, or a tuple of tuples; forward-mode nests in
    lists where torch's does). vectorize=True takes
    the same loop as vectorize=False (no batched autograd.grad); forward-mode
    (vectorize=True only, as torch) runs the double-vjp trick column by column."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      'and `strategy="forward-mode"` are not supported together (yet). '
                                      "Please either set `create_graph=False` or "
                                      '`strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` "
                               "and `vectorized=True` are not supported together. "
                               "Please either set `strict=False` or "
                               "`vectorize=False`.")
        jac = ()
        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in range(len(inputs)))
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError("The jacobian of the user-provided function is "
                                               f"independent of input {i}. This is not allowed in "
                                               "strict mode when create_graph=True.")
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {el_idx}. This is not allowed in "
                                               "strict mode.")
                        jac_i_el.append(_ops.zeros_like(inp_el))
            jac += (tuple(
                (_ops.stack(jac_i_el, dim=0) if jac_i_el else
                 _ops.zeros((0,) + tuple(inputs[el_idx].shape), dtype=inputs[el_idx].dtype,
                            device=inputs[el_idx].device)).view(
                    tuple(out.size()) + tuple(inputs[el_idx].size()))
                for el_idx, jac_i_el in enumerate(jac_i)),)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
    outer_jacobian_strategy="reverse-mode") -> the Hessian of a scalar func,
    in.shape + in.shape per pair of inputs (a tuple of tuples for tuple inputs)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not _is_tensor(out):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    if outer_jacobian_strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      'and `strategy="forward-mode"` are not supported together (yet). '
                                      "Please either set `create_graph=False` or "
                                      '`strategy="reverse-mode"`.')
        res = _jacfwd(jac_func, inputs, strict, vectorize, _keep_history=True)
    else:
        res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(outputs, is_outputs_tuple, name):
    if is_outputs_tuple or not _is_tensor(outputs[0]):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")


def _v_for_inputs(v, inputs, is_inputs_tuple, create_graph, name):
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function "
                           "is a single Tensor with a single element.")
    return v


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """vhp(func, inputs, v=None, create_graph=False, strict=False) -> (func_output, vhp):
    the vector-Hessian product v^T H of a scalar func, shaped like the inputs."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_for_inputs(v, inputs, is_inputs_tuple, create_graph, "vhp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vhp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _scalar_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """hvp(func, inputs, v=None, create_graph=False, strict=False) -> (func_output, hvp):
    the Hessian-vector product H v of a scalar func (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_for_inputs(v, inputs, is_inputs_tuple, create_graph, "hvp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "hvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _scalar_output(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(_zeros_requiring_grad(inp) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)
