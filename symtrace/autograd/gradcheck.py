"""gradcheck: compares the gradients that symtrace's autograd computes with
central finite differences, as torch.autograd.gradcheck does.

    from symtrace.autograd import gradcheck
    x = symtrace.randn(3, 4, dtype=symtrace.float64).requires_grad_()
    assert gradcheck(lambda t: (t * t).sum(1), (x,))

The numerical Jacobian perturbs each element of each input that requires grad
in place (under no_grad) by +-eps and evaluates func; the analytical Jacobian
comes from symtrace.autograd.grad with a one-hot grad_output per output
element (or, with fast_mode=True, from vector-Jacobian products with random
vectors, which is cheaper). A mismatch raises GradcheckError naming the input,
the output, the position and both values (or returns False when
raise_exception=False)."""
import warnings

import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError", "get_numerical_jacobian", "get_analytical_jacobian"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ."""


def _st():
    import symtrace  # late: this module is imported while symtrace.autograd initializes
    return symtrace


def _is_tensor(x):
    st = _st()
    return isinstance(x, st._C.TensorBase)


def _as_tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _to_np(t):
    """float64 numpy copy of a tensor's values (detached)."""
    st = _st()
    t = t.detach()
    if t.dtype is not st.float64:
        t = t.double()
    return np.array(t.contiguous().numpy(), dtype=np.float64)


def _diff_outputs(outputs):
    """Indices of the outputs that are floating-point tensors."""
    return [k for k, o in enumerate(outputs) if _is_tensor(o) and o.dtype.is_floating_point]


def _eval(func, inputs):
    st = _st()
    with st.no_grad():
        out = _as_tuple(func(*inputs))
    return [(_to_np(o) if _is_tensor(o) and o.dtype.is_floating_point else None) for o in out]


def get_numerical_jacobian(func, inputs, eps=1e-6):
    """Per (input i requiring grad, output k): a float64 array [out.numel(), in.numel()]
    of central differences. Returns {(i, k): array}."""
    st = _st()
    inputs = _as_tuple(inputs)
    base = _eval(func, inputs)
    jac = {}
    for i, x in enumerate(inputs):
        if not (_is_tensor(x) and x.requires_grad):
            continue
        shape = tuple(x.shape)
        n = int(np.prod(shape)) if shape else 1
        for k, b in enumerate(base):
            if b is not None:
                jac[(i, k)] = np.zeros((b.size, n))
        for j in range(n):
            idx = np.unravel_index(j, shape) if shape else ()
            idx = tuple(int(v) for v in idx)
            with st.no_grad():
                elem = x[idx] if idx else x
                orig = elem.item()
                elem.fill_(orig + eps)
            plus = _eval(func, inputs)
            with st.no_grad():
                elem.fill_(orig - eps)
            minus = _eval(func, inputs)
            with st.no_grad():
                elem.fill_(orig)
            for k, (p, m) in enumerate(zip(plus, minus)):
                if p is not None and (i, k) in jac:
                    jac[(i, k)][:, j] = ((p - m) / (2.0 * eps)).reshape(-1)
    return jac


def _grad(out, diff_inputs, gout):
    st = _st()
    return st.autograd.grad([out], diff_inputs, grad_outputs=[gout], retain_graph=True,
                            allow_unused=True)


def _check_grad_meta(g, x, i):
    if g is None:
        return
    if tuple(g.shape) != tuple(x.shape):
        raise GradcheckError(f"Gradient for input {i} has shape {tuple(g.shape)}, "
                             f"expected the input's shape {tuple(x.shape)}")
    if g.dtype is not x.dtype:
        raise GradcheckError(f"Gradient for input {i} has dtype {g.dtype}, expected the "
                             f"input's dtype {x.dtype}")


def get_analytical_jacobian(func, inputs):
    """Per (input i requiring grad, output k): [out.numel(), in.numel()] from autograd.grad
    with one-hot grad_outputs."""
    st = _st()
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    dins = [inputs[i] for i in diff]
    with st.enable_grad():
        outputs = _as_tuple(func(*inputs))
    jac = {}
    for k in _diff_outputs(outputs):
        o = outputs[k]
        m = o.numel()
        for i in diff:
            jac[(i, k)] = np.zeros((m, inputs[i].numel()))
        if not o.requires_grad:
            continue
        for r in range(m):
            onehot = np.zeros(m)
            onehot[r] = 1.0
            gout = st.tensor(onehot.reshape(tuple(o.shape)), dtype=o.dtype)
            grads = _grad(o, dins, gout)
            for i, g in zip(diff, grads):
                _check_grad_meta(g, inputs[i], i)
                if g is not None:
                    jac[(i, k)][r, :] = _to_np(g).reshape(-1)
    return jac


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _fmt_pos(j, shape):
    return tuple(int(v) for v in np.unravel_index(j, shape)) if shape else ()


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              fast_mode=False, nondet_tol=0.0, seed=0):
    """Checks the gradients of func(*inputs) w.r.t. the inputs that require grad
    against central finite differences. Returns True, or raises GradcheckError
    (returns False when raise_exception=False). fast_mode=True compares
    vector-Jacobian products with random vectors instead of full Jacobians."""
    st = _st()
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype is not st.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point. This check will likely fail if all the inputs are not of double "
                          f"precision floating point.", stacklevel=2)

    with st.enable_grad():
        outputs = _as_tuple(func(*inputs))
    if not _diff_outputs(outputs):
        raise ValueError("gradcheck: func returned no floating-point tensor output")
    # an output that does not require grad must have a zero numerical Jacobian
    num = get_numerical_jacobian(func, inputs, eps)

    if fast_mode:
        return _fast_check(func, inputs, outputs, num, diff, atol, rtol, raise_exception, seed)

    ana = get_analytical_jacobian(func, inputs)
    if nondet_tol >= 0.0:  # reentrancy: a second backward must give the same numbers
        ana2 = get_analytical_jacobian(func, inputs)
        for key in ana:
            if not np.allclose(ana[key], ana2[key], rtol=0, atol=nondet_tol):
                i, k = key
                return _fail(f"Backward is not reentrant for input {i}, output {k}: two backward "
                             f"passes gave different gradients (max difference "
                             f"{np.abs(ana[key] - ana2[key]).max():.3g} > nondet_tol={nondet_tol})",
                             raise_exception)
    for (i, k), n in sorted(num.items()):
        a = ana[(i, k)]
        bad = ~np.isclose(a, n, rtol=rtol, atol=atol)
        if bad.any():
            r, j = (int(v) for v in np.argwhere(bad)[0])
            ishape, oshape = tuple(inputs[i].shape), tuple(outputs[k].shape)
            return _fail(
                f"Jacobian mismatch for output {k} with respect to input {i}: at input position "
                f"{_fmt_pos(j, ishape)} (shape {ishape}), output position {_fmt_pos(r, oshape)} "
                f"(shape {oshape}): numerical {n[r, j]!r} vs analytical {a[r, j]!r} "
                f"({int(bad.sum())} of {bad.size} entries differ; atol={atol}, rtol={rtol}).\n"
                f"numerical:\n{n}\nanalytical:\n{a}", raise_exception)
    return True


def _fast_check(func, inputs, outputs, num, diff, atol, rtol, raise_exception, seed):
    st = _st()
    rng = np.random.default_rng(seed)
    dins = [inputs[i] for i in diff]
    for k in _diff_outputs(outputs):
        o = outputs[k]
        v = rng.standard_normal(int(o.numel()))
        if o.requires_grad:
            gout = st.tensor(v.reshape(tuple(o.shape)), dtype=o.dtype)
            grads = _grad(o, dins, gout)
        else:
            grads = [None] * len(dins)
        for i, g in zip(diff, grads):
            _check_grad_meta(g, inputs[i], i)
            a = _to_np(g).reshape(-1) if g is not None else np.zeros(int(inputs[i].numel()))
            n = v @ num[(i, k)]
            bad = ~np.isclose(a, n, rtol=rtol, atol=atol)
            if bad.any():
                j = int(np.argwhere(bad)[0][0])
                ishape = tuple(inputs[i].shape)
                return _fail(
                    f"Vector-Jacobian product mismatch for output {k} with respect to input {i} "
                    f"at input position {_fmt_pos(j, ishape)} (shape {ishape}): numerical "
                    f"{n[j]!r} vs analytical {a[j]!r} (atol={atol}, rtol={rtol})", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Checks second-order gradients: gradcheck of the function that maps
    (inputs, grad_outputs) to the first-order gradients of func (computed with
    create_graph=True), as torch.autograd.gradgradcheck. Returns True or raises
    GradcheckError. grad_outputs default to random values in [-1, 1) that
    require grad. There is no forward-mode AD: check_fwd_over_rev=True raises
    NotImplementedError; check_undefined_grad, check_batched_grad and masked are
    accepted and check nothing more (gradients are always checked for shape and dtype)."""
    st = _st()
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    if check_fwd_over_rev:
        raise NotImplementedError("gradgradcheck: check_fwd_over_rev=True needs forward-mode AD, which "
                                  "symtrace does not have")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        with st.enable_grad():
            outs = _as_tuple(func(*tupled_inputs))
        rng = np.random.default_rng(0)
        gos = []
        for o in outs:
            if not (_is_tensor(o) and o.requires_grad):
                continue
            dt = o.dtype if o.dtype.is_floating_point else st.float64
            shape = tuple(o.shape)
            if gen_non_contig_grad_outputs and shape:
                base = rng.uniform(-1, 1, size=shape[:-1] + (2 * shape[-1],))
                g = st.tensor(base, dtype=dt)[..., ::2]
            else:
                g = st.tensor(rng.uniform(-1, 1, size=shape), dtype=dt)
            gos.append(g.requires_grad_(True))
        tupled_grad_outputs = tuple(gos)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_in = {i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad}

    def new_func(*args):
        with st.enable_grad():
            input_args = tuple(args[:-num_outputs]) if num_outputs else tuple(args)
            outputs = tuple(o for o in _as_tuple(func(*input_args)) if _is_tensor(o) and o.requires_grad)
            gos_ = tuple(args[-num_outputs:]) if num_outputs else ()
            diff_args = tuple(x for i, x in enumerate(input_args) if i in diff_in)
            grads = st.autograd.grad(outputs, diff_args, gos_, create_graph=True, allow_unused=True)
            return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, fast_mode=fast_mode)
