"""Signature parity with torch: every public function of symtrace.nn.functional
that torch.nn.functional also has takes torch's parameters (names, order,
defaults, keyword-only markers), and so do the constructors of the activation,
dropout, convolution, pooling, padding, normalization, resampling, recurrent,
transformer, loss, linear, embedding and parallel (DataParallel, DistributedDataParallel)
modules. Users port torch code verbatim; a missing `inplace=` or a `dim` without its
default is a TypeError in the middle of their model.

Torch's builtins (gelu, softplus, linear, ...) have no inspect signature: theirs
comes from the ATen schema of the op, with `self` renamed `input` as torch's
Python bindings do. Run as a script, this file prints the mismatches (the audit).
"""
import inspect
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import symtrace.nn as snn  # noqa: E402
import symtrace.nn.functional as SF  # noqa: E402
from symtrace.nn.modules import activation as _sact, dropout as _sdrop  # noqa: E402
from symtrace.nn.modules import (conv as _sconv, pooling as _spool, batchnorm as _sbn,  # noqa: E402
                                 pixelshuffle as _sshuf, rnn as _srnn, transformer as _stf,
                                 padding as _spad, normalization as _snorm, loss as _sloss,
                                 linear as _slin, sparse as _ssparse, lazy as _slazy,
                                 adaptive as _sadapt)
from symtrace.nn.modules import parallel as _spar  # noqa: E402

# the files of module classes whose constructors are held to torch's
_MODULE_FILES = (_sact, _sdrop, _sconv, _spool, _sbn, _sshuf, _srnn, _stf, _spad, _snorm, _sloss, _slin,
                 _ssparse, _slazy, _sadapt, _spar)
# classes of those files that torch.nn does not export either (torch's internal ones)
_INTERNAL_CLASSES = {"NonDynamicallyQuantizableLinear"}

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the 3.12 venv has no torch: the parity tests skip
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

# Deliberate differences, each with its reason. Keys are "F.<name>" for functions
# and "nn.<Class>" for module constructors; values say why symtrace differs.
ALLOWLIST = {
    # (none: every shared function and module constructor matches torch 2.13)
}
# Deliberate differences in behaviour (not in signatures), tested below:
# - embedding(padding_idx out of range) raises ValueError with torch's message where
#   torch asserts (AssertionError): symtrace raises no AssertionError on user input
#   (tests/python/test_bad_input.py's fuzz holds it to that).
# - embedding(sparse=True) raises NotImplementedError: symtrace has no sparse tensors.
# - in-place activations where torch refuses the backward of an in-place form with a
#   negative slope (leaky_relu_, elu_ with alpha < 0) differentiate correctly instead.
# - embedding_bag(sparse=True) raises NotImplementedError (no sparse tensors);
#   scale_grad_by_freq divides each row's gradient by how often it is read (torch's
#   documented rule; its CPU kernel looks the count up at the wrong position when the
#   counts differ); with include_last_offset, indices past the last offset are left out
#   (torch's CPU kernels disagree among dtypes and modes there).


# ---------------- how a signature is read ----------------
_EMPTY = inspect.Parameter.empty


def _schema_params(fn):
    """(name, kind, default) of a torch builtin, from the ATen schema of its
    overload without a name ('' overload; or its only overload, as conv_transpose2d's
    'input'), `self` called `input`."""
    name = getattr(fn, "__name__", None)
    schemas = torch._C._jit_get_schemas_for_operator("aten::" + name)
    if len(schemas) != 1:
        schemas = [s for s in schemas if s.overload_name == ""]
    if len(schemas) != 1:
        raise LookupError(f"no unique ATen schema for {name}")
    out = []
    for a in schemas[0].arguments:
        kind = inspect.Parameter.KEYWORD_ONLY if a.kwarg_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = a.default_value if a.has_default_value() else _EMPTY
        out.append(("input" if a.name == "self" else a.name, kind, default))
    return out


def _params(fn):
    """(name, kind, default) of each parameter of fn; positional-only and
    positional-or-keyword are kept apart (a positional-only name cannot be
    passed by keyword). torch's boolean_dispatch wrappers (max_pool2d, adaptive_max_pool2d,
    ...: (*args, **kwargs)) are read as the functions they dispatch to."""
    dispatched = getattr(getattr(torch, "_jit_internal", None), "boolean_dispatched", {}) if torch else {}
    if fn in dispatched:
        fn = dispatched[fn]["if_true"]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _schema_params(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def _same_default(a, b):
    if a is _EMPTY or b is _EMPTY:
        return a is b
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if _is_functional(a) and _is_functional(b):  # activation=F.relu: each library's own F.relu
        return a.__name__ == b.__name__
    return a == b


def _is_functional(f):
    return callable(f) and getattr(f, "__module__", None) in ("symtrace.nn.functional", "torch.nn.functional")


def _fmt(ps):
    star = False
    out = []
    for name, kind, default in ps:
        if kind is inspect.Parameter.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        if kind is inspect.Parameter.VAR_POSITIONAL:
            name, star = "*" + name, True
        elif kind is inspect.Parameter.VAR_KEYWORD:
            name = "**" + name
        out.append(name if default is _EMPTY else f"{name}={default!r}")
    return "(" + ", ".join(out) + ")"


def _diff(sp, tp):
    """What differs between symtrace's parameters sp and torch's tp, or None."""
    if len(sp) == len(tp) and all(a[0] == b[0] and a[1] == b[1] and _same_default(a[2], b[2])
                                  for a, b in zip(sp, tp)):
        return None
    missing = [p[0] for p in tp if p[0] not in {q[0] for q in sp}]
    extra = [p[0] for p in sp if p[0] not in {q[0] for q in tp}]
    what = []
    if missing:
        what.append(f"missing {missing}")
    if extra:
        what.append(f"extra {extra}")
    if not what:
        what.append("order, kind or defaults differ")
    return f"{'; '.join(what)}\n    symtrace {_fmt(sp)}\n    torch    {_fmt(tp)}"


def _public_functions():
    return sorted(n for n in dir(SF) if not n.startswith("_") and callable(getattr(SF, n))
                  and not inspect.isclass(getattr(SF, n)) and not inspect.ismodule(getattr(SF, n)))


def _shared_functions():
    return [n for n in _public_functions() if hasattr(TF, n)]


def _module_classes():
    """The activation, dropout, convolution, pooling, padding, normalization, resampling,
    recurrent, transformer, loss, linear and embedding modules symtrace defines, by name."""
    out = []
    for mod in _MODULE_FILES:
        for n, c in vars(mod).items():
            if (inspect.isclass(c) and c.__module__ == mod.__name__ and not n.startswith("_")
                    and n not in _INTERNAL_CLASSES):
                out.append(n)
    return sorted(set(out))


def _module_class(name):
    return next(getattr(m, name) for m in _MODULE_FILES if hasattr(m, name))


def _torch_module_class(name):
    """torch.nn.<name>, else torch.nn.parallel.<name> (DistributedDataParallel), else None."""
    return getattr(torch.nn, name, None) or getattr(torch.nn.parallel, name, None)


def mismatches():
    """{key: description} of every difference not in the allowlist (and of the
    allowlisted ones, under their key, when include_allowed)."""
    found = {}
    for n in _shared_functions():
        d = _diff(_params(getattr(SF, n)), _params(getattr(TF, n)))
        if d:
            found["F." + n] = d
    for n in _module_classes():
        tc = _torch_module_class(n)
        if tc is None:
            continue
        d = _diff(_params(_module_class(n)), _params(tc))
        if d:
            found["nn." + n] = d
    return found


# ---------------- the tests ----------------
def test_functional_has_no_private_leaks_in_public_names():
    # constants re-exported for the ops (KEEPDIM, ...) are not callables; every
    # public callable is a function torch.nn.functional also has or symtrace's own
    for n in _public_functions():
        assert callable(getattr(SF, n))


@needs_torch
@pytest.mark.parametrize("name", _shared_functions() if TF is not None else [])
def test_function_signature_matches_torch(name):
    key = "F." + name
    d = _diff(_params(getattr(SF, name)), _params(getattr(TF, name)))
    if key in ALLOWLIST:
        assert d, f"{key} is allowlisted but matches torch now: drop it from ALLOWLIST"
        return
    assert d is None, f"{key}: {d}"


@needs_torch
@pytest.mark.parametrize("name", [n for n in _module_classes() if _torch_module_class(n) is not None]
                         if torch else [])
def test_module_constructor_signature_matches_torch(name):
    key = "nn." + name
    cls = _module_class(name)
    d = _diff(_params(cls), _params(_torch_module_class(name)))
    if key in ALLOWLIST:
        assert d, f"{key} is allowlisted but matches torch now: drop it from ALLOWLIST"
        return
    assert d is None, f"{key}: {d}"


@needs_torch
def test_torch_inplace_functions_symtrace_has_in_place_forms():
    # where symtrace has an activation torch also has as `name_` (relu_, elu_, ...),
    # symtrace has the `name_` form too
    for n in _shared_functions():
        if hasattr(TF, n + "_") and callable(getattr(TF, n + "_")):
            assert hasattr(SF, n + "_"), f"symtrace.nn.functional.{n}_ is missing"


def test_modules_are_exported():
    # from symtrace.nn, or from symtrace.nn.parallel (DistributedDataParallel, as torch's)
    for n in _module_classes():
        assert (getattr(snn, n, None) or getattr(snn.parallel, n, None)) is not None, \
            f"symtrace.nn.{n} is not exported"


if __name__ == "__main__":  # the audit: print every mismatch
    if torch is None:
        sys.exit("torch is not installed")
    found = mismatches()
    print(f"{len(_shared_functions())} shared functions, {len(_module_classes())} module classes checked")
    for k, v in sorted(found.items()):
        print(f"{k}{' (allowlisted: ' + ALLOWLIST[k] + ')' if k in ALLOWLIST else ''}: {v}")
    print(f"{len(found)} mismatches ({sum(k in ALLOWLIST for k in found)} allowlisted)")


# ---------------- the parameters do what torch's do ----------------
# (a parameter symtrace accepts changes the result as torch's does; none is
# silently ignored)
import re  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import symtrace as st  # noqa: E402


def _no_size(msg):
    """torch.Size([6, 5]) printed as the tuple (6, 5) (symtrace's sizes are tuples)."""
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)",
                  lambda m: repr(tuple(int(v) for v in m.group(1).split(",") if v.strip())), msg)


def _both(fn, *arrays, grad=(0,), tol=1e-10):
    """fn(F, *tensors) in symtrace and torch (float64): the values, the gradients of
    sum(r^2) for the inputs in grad, and the warnings (text) agree."""
    res = []
    for lib, F in ((st, SF), (torch, TF)):
        ts = [lib.tensor(a, requires_grad=(i in grad and a.dtype.kind == "f")) for i, a in enumerate(arrays)]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(F, *ts)
        grads = []
        if r.requires_grad:
            (r * r).sum().backward()
            grads = [t.grad.numpy().copy() for i, t in enumerate(ts) if i in grad and t.grad is not None]
        res.append((r.detach().numpy(), grads, [_no_size(str(x.message)) for x in w]))
    (a, ga, wa), (b, gb, wb) = res
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    assert len(ga) == len(gb)
    for x, y in zip(ga, gb):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)
    assert wa == wb
    return wa


_RS = np.random.RandomState(0)
_X = _RS.randn(6, 5)
_T = _RS.randint(0, 5, 6)
_T[2] = -100
_W = _RS.rand(5) + 0.5
_X3 = _RS.randn(4, 5, 3)
_T3 = _RS.randint(0, 5, (4, 3))
_P = _RS.rand(6, 5)
_P /= _P.sum(1, keepdims=True)


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", ["weight", "smoothing", "weight+smoothing", "spatial+ignore", "probs",
                                  "probs+weight+smoothing"])
def test_cross_entropy_parameters(case, reduction):
    r = reduction
    if case == "weight":
        _both(lambda F, x, t, w: F.cross_entropy(x, t, w, reduction=r), _X, _T, _W)
    elif case == "smoothing":
        _both(lambda F, x, t: F.cross_entropy(x, t, reduction=r, label_smoothing=0.2), _X, _T)
    elif case == "weight+smoothing":
        _both(lambda F, x, t, w: F.cross_entropy(x, t, w, reduction=r, label_smoothing=0.2), _X, _T, _W)
    elif case == "spatial+ignore":
        _both(lambda F, x, t, w: F.cross_entropy(x, t, w, ignore_index=1, reduction=r, label_smoothing=0.3),
              _X3, _T3, _W)
    elif case == "probs":
        _both(lambda F, x, t: F.cross_entropy(x, t, reduction=r), _X, _P)
    else:
        _both(lambda F, x, t, w: F.cross_entropy(x, t, w, reduction=r, label_smoothing=0.1), _X, _P, _W)


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(label_smoothing=0.2), dict(reduction="sum")])
def test_cross_entropy_loss_module_weight(kw):
    """CrossEntropyLoss(weight=...) as torch's: the weight is a buffer and weighs the classes."""
    w = _both(lambda F, x, t, wt: (snn if F is SF else torch.nn).CrossEntropyLoss(weight=wt, **kw)(x, t),
              _X, _T, _W)
    assert w == []
    m = snn.CrossEntropyLoss(weight=st.tensor(_W))
    assert "weight" in m.state_dict()


@needs_torch
def test_cross_entropy_unbatched_legacy_and_errors():
    _both(lambda F, x, t: F.cross_entropy(x, t, label_smoothing=0.2), _X[0], np.array(3))
    _both(lambda F, x, t, w: F.cross_entropy(x, t, w), _X[0], np.array(3), _W)
    w = _both(lambda F, x, t: F.cross_entropy(x, t, size_average=False), _X, _T)
    assert w == ["size_average and reduce args will be deprecated, please use reduction='sum' instead."]
    _both(lambda F, x, t: F.cross_entropy(x, t, reduce=False), _X, _T)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        SF.cross_entropy(st.tensor(_X), st.tensor(_T), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        SF.cross_entropy(st.tensor(_X), st.tensor(_P), ignore_index=0)


@needs_torch
def test_mse_loss_weight_and_legacy_reduction():
    w = _RS.rand(6, 5)
    for r in ("mean", "sum", "none"):
        _both(lambda F, a, b, w: F.mse_loss(a, b, reduction=r, weight=w), _X, _P, w)
    assert _both(lambda F, a, b: F.mse_loss(a, b, size_average=False), _X, _P) == [
        "size_average and reduce args will be deprecated, please use reduction='sum' instead."]
    _both(lambda F, a, b: F.mse_loss(a, b, reduce=False), _X, _P)
    assert len(_both(lambda F, a, b: F.mse_loss(a, b), _X, _P[0])) == 1     # broadcasting: torch's warning
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        SF.mse_loss(st.tensor(_X), st.tensor(_P), weight=st.ones(5))


@needs_torch
@pytest.mark.parametrize("fname", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("nd", [1, 2, 3, 4])
def test_softmax_implicit_dim_and_dtype(fname, nd):
    a = _RS.randn(*(3, 4, 2, 5)[:nd])
    w = _both(lambda F, x: getattr(F, fname)(x), a)
    assert w == [f"Implicit dimension choice for {fname} has been deprecated. Change the call to include "
                 "dim=X as an argument."]
    assert _both(lambda F, x: getattr(F, fname)(x, -1), a) == []
    _both(lambda F, x: getattr(F, fname)(x, 0, dtype=st.float32 if F is SF else torch.float32), a, tol=1e-6)


@needs_torch
def test_keyword_only_parameters_as_torch():
    x = st.randn(2, 3)
    with pytest.raises(TypeError):
        SF.gelu(x, "tanh")
    SF.gelu(x, approximate="tanh")
    q = st.randn(1, 2, 4)
    with pytest.raises(TypeError):
        SF.scaled_dot_product_attention(q, q, q, None, 0.0, False, 0.5)
    SF.scaled_dot_product_attention(q, q, q, scale=0.5)
    idx = st.tensor([0, 2])
    np.testing.assert_array_equal(SF.one_hot(input=idx, num_classes=3).numpy(),
                                  TF.one_hot(input=torch.tensor([0, 2]), num_classes=3).numpy())


@needs_torch
def test_embedding_parameters():
    E = _RS.randn(7, 3)
    idx = np.array([[1, 2, 6], [6, 6, 0]])
    _both(lambda F, w, i: F.embedding(i, w, padding_idx=-1), E, idx)
    _both(lambda F, w, i: F.embedding(i, w, scale_grad_by_freq=True), E, idx)
    _both(lambda F, w, i: F.embedding(i, w, padding_idx=0, scale_grad_by_freq=True), E, idx)
    rows = []
    for lib, F in ((st, SF), (torch, TF)):
        W = lib.tensor(E * 3)
        F.embedding(lib.tensor(idx), W, max_norm=1.5, norm_type=1.0)   # renormalizes W's rows in place
        rows.append(W.numpy())
    np.testing.assert_allclose(rows[0], rows[1], rtol=1e-12)
    with pytest.raises(NotImplementedError, match="sparse"):
        SF.embedding(st.tensor(idx), st.tensor(E), sparse=True)
    for bad in (7, -8):
        with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
            SF.embedding(st.tensor(idx), st.tensor(E), padding_idx=bad)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            TF.embedding(torch.tensor(idx), torch.tensor(E), padding_idx=bad)
    with pytest.raises(TypeError):
        SF.embedding(st.tensor(idx), st.tensor(E), padding_idx=1.5)


@needs_torch
def test_normalize_out_and_elu_scales():
    out = st.empty(6, 5, dtype=st.float64)
    r = SF.normalize(st.tensor(_X), out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), TF.normalize(torch.tensor(_X)).numpy(), rtol=1e-12)
    _both(lambda F, a: F.elu_(a * 1.0, 0.5, 2.0, 1.5), _X)
    _both(lambda F, a: F.softplus(a, 2, 1), _X)


@needs_torch
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("kw", [{}, {"kdim": 6, "vdim": 3}, {"add_bias_kv": True}, {"add_zero_attn": True},
                                {"kdim": 6, "vdim": 3, "add_bias_kv": True, "add_zero_attn": True,
                                 "batch_first": True}])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_parameters(kw, need_weights):
    rs = np.random.RandomState(1)
    tm = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64, **kw)
    sm = snn.MultiheadAttention(8, 2, dtype=st.float64, **kw)
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for sp, tp in zip(sm.parameters(), tm.parameters()):
        sp.data.copy_(st.tensor(tp.detach().numpy()))
    bf = kw.get("batch_first", False)
    L, S, N = 4, 5, 3

    def shaped(n, e):
        return rs.randn(*((N, n, e) if bf else (n, N, e)))
    q, k, v = shaped(L, 8), shaped(S, kw.get("kdim", 8)), shaped(S, kw.get("vdim", 8))
    kpm = rs.rand(N, S) < 0.3
    kpm[:, 0] = False
    am = rs.randn(L, S)
    outs = []
    for lib, m in ((st, sm), (torch, tm)):
        o, w = m(lib.tensor(q), lib.tensor(k), lib.tensor(v), key_padding_mask=lib.tensor(kpm),
                 attn_mask=lib.tensor(am), need_weights=need_weights)
        o.square().sum().backward()
        outs.append((o.detach().numpy(), None if w is None else w.detach().numpy(),
                     [p.grad.numpy() for p in m.parameters()]))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-10, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-10, atol=1e-12)
    else:
        assert outs[0][1] is None and outs[1][1] is None
    for a, b in zip(outs[0][2], outs[1][2]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@needs_torch
def test_multi_head_attention_forward_static_kv():
    rs = np.random.RandomState(2)
    tm = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64)
    W, b = tm.in_proj_weight.detach().numpy(), tm.in_proj_bias.detach().numpy()
    ow = tm.out_proj.weight.detach().numpy()
    q, sk, sv = rs.randn(4, 3, 8), rs.randn(6, 7, 4), rs.randn(6, 7, 4)
    res = []
    for lib, F in ((st, SF), (torch, TF)):
        T = lib.tensor
        o, w = F.multi_head_attention_forward(T(q), T(q), T(q), 8, 2, T(W), T(b), None, None, False, 0.0, T(ow),
                                              T(b[:8]), static_k=T(sk), static_v=T(sv))
        res.append((o.detach().numpy(), w.detach().numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax", "Softmin"])
def test_softmax_modules_implicit_dim_warn_as_torch(name):
    a = np.random.RandomState(3).randn(2, 3, 4)
    res = []
    for lib, L in ((st, snn), (torch, torch.nn)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = getattr(L, name)()(lib.tensor(a))
        res.append((r.detach().numpy(), [str(x.message) for x in w]))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12, atol=1e-12)
    assert res[0][1] == res[1][1] and len(res[0][1]) == 1
