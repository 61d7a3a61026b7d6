# Backward through compiled graphs (issue 6): compiled functions and modules
# whose inputs or parameters require grad give the same .grad as eager
# (MLP, layer_norm, softmax, cross_entropy, a 2-layer TransformerEncoder),
# over several calls (cache hits accumulate like eager), under no_grad no
# tape; a PyLayer (symtrace.autograd.Function) inside a compiled function
# gives eager's gradients; autograd edges (in-place, detach, no_grad inside,
# views, shape changes, retain_graph); a small BERT pretraining step; and
# every corpus case whose result is differentiable, with its float tensor
# arguments requiring grad (test_corpus_grads). No torch here (3.12 too).
import contextlib
import copy
import io
import sys

import numpy as np
import pytest

import symtrace
import symtrace.nn as nn
import symtrace.nn.functional as F
import compile_corpus as C
from compile_corpus import assert_same

pytestmark = pytest.mark.skipif(not hasattr(symtrace, "compile"), reason="symtrace.compile is not built")

BACKENDS = ["interp", "llvm"]


def T(rng, *shape, grad=False, dtype=np.float32):
    t = symtrace.tensor(rng.standard_normal(shape).astype(dtype))
    return t.requires_grad_() if grad else t


def N(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def close(a, b, what, rtol=1e-4, atol=1e-5):
    assert a is not None and b is not None, f"{what}: grad missing ({a is None}, {b is None})"
    np.testing.assert_allclose(N(a), N(b), rtol=rtol, atol=atol, err_msg=what)


@pytest.fixture(autouse=True)
def _fresh():
    symtrace.reset()
    yield
    symtrace.reset()


def _assert_captured(fn):
    """fn's own frame (a Module's forward) has a compiled entry: the
    gradients compared came through a compiled graph, not a fallback."""
    code = (type(fn).forward if isinstance(fn, nn.Module) else fn).__code__
    name = getattr(code, "co_qualname", code.co_name)
    key = f"{name} ({code.co_filename}:{code.co_firstlineno})"
    info = symtrace._C._fe_stats()["codes"].get(key)
    assert info is not None and info["entries"] >= 1 and not info["plain"], (key, info)


def _twin_leaves(*ts):
    """Pairs of equal leaves requiring grad: one for eager, one for compiled."""
    a = tuple(t.detach().clone().requires_grad_() for t in ts)
    b = tuple(t.detach().clone().requires_grad_() for t in ts)
    return a, b


def _check_fn(fn, backend, inputs, consts=(), calls=2):
    """fn(*inputs, *consts) -> scalar loss; gradients of inputs must match eager's
    after `calls` accumulated backward passes."""
    ea, ca = _twin_leaves(*inputs)
    cf = symtrace.compile(fn, backend=backend)
    for _ in range(calls):
        le = fn(*ea, *consts)
        lc = cf(*ca, *consts)
        assert_same(lc, le)
        le.backward()
        lc.backward()
    for i, (e, c) in enumerate(zip(ea, ca)):
        close(c.grad, e.grad, f"input {i}")
    _assert_captured(fn)


def _check_module(m, backend, args, loss=lambda y: (y * y).mean(), calls=2, input_grad=True):
    me = m
    mc = copy.deepcopy(m)
    cm = symtrace.compile(mc, backend=backend)
    ea, ca = _twin_leaves(*args) if input_grad else (args, args)
    for _ in range(calls):
        le = loss(me(*ea))
        lc = loss(cm(*ca))
        assert_same(lc, le)
        le.backward()
        lc.backward()
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        close(pc.grad, pe.grad, n)
    if input_grad:
        for i, (e, c) in enumerate(zip(ea, ca)):
            close(c.grad, e.grad, f"input {i}")
    _assert_captured(m)


# ---------------------------------------------------------------- functions
def _mlp_fn(x, w1, b1, w2, b2):
    h = F.gelu(x @ w1 + b1)
    return ((h @ w2 + b2) ** 2).mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_function_grads(backend):
    rng = np.random.default_rng(0)
    _check_fn(_mlp_fn, backend, (T(rng, 4, 8), T(rng, 8, 16), T(rng, 16), T(rng, 16, 3), T(rng, 3)))


def _ln_fn(x, w, b):
    return (F.layer_norm(x, (x.shape[-1],), w, b) * x).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_norm_grads(backend):
    rng = np.random.default_rng(1)
    _check_fn(_ln_fn, backend, (T(rng, 3, 8), T(rng, 8), T(rng, 8)))


def _softmax_fn(x, w):
    return (x.softmax(-1) * w).sum() + F.log_softmax(x, dim=0).mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_softmax_grads(backend):
    rng = np.random.default_rng(2)
    _check_fn(_softmax_fn, backend, (T(rng, 4, 6), T(rng, 4, 6)))


def _ce_fn(x, w, target):
    return F.cross_entropy(x @ w, target)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_entropy_grads(backend):
    rng = np.random.default_rng(3)
    target = symtrace.tensor(rng.integers(0, 5, size=6).astype(np.int64))
    _check_fn(_ce_fn, backend, (T(rng, 6, 4), T(rng, 4, 5)), consts=(target,))


def _partial_grad_fn(x, w):
    return ((x * w).sum(0) ** 2).sum()


def test_only_some_inputs_require_grad():
    rng = np.random.default_rng(4)
    x = T(rng, 3, 4)
    we, wc = _twin_leaves(T(rng, 3, 4))
    cf = symtrace.compile(_partial_grad_fn, backend="interp")
    le, lc = _partial_grad_fn(x, *we), cf(x, *wc)
    assert_same(lc, le)
    le.backward()
    lc.backward()
    close(wc[0].grad, we[0].grad, "w")
    assert x.grad is None


def test_no_grad_call_records_nothing():
    rng = np.random.default_rng(5)
    (w,) = _twin_leaves(T(rng, 3, 4))[0]
    cf = symtrace.compile(_partial_grad_fn, backend="interp")
    with symtrace.no_grad():
        y = cf(T(rng, 3, 4), w)
    assert not y.requires_grad and y.grad_fn is None
    y2 = cf(T(rng, 3, 4), w)
    assert y2.requires_grad
    y2.backward()
    assert w.grad is not None


def _multi_out(x, w):
    y = x @ w
    return y.relu(), y.tanh(), y.shape


def test_several_outputs_grads():
    rng = np.random.default_rng(6)
    ea, ca = _twin_leaves(T(rng, 3, 4), T(rng, 4, 5))
    cf = symtrace.compile(_multi_out, backend="interp")
    oe, oc = _multi_out(*ea), cf(*ca)
    assert_same(oc, oe)
    (oe[0].sum() + (oe[1] * 2).sum()).backward()
    (oc[0].sum() + (oc[1] * 2).sum()).backward()
    for i in range(2):
        close(ca[i].grad, ea[i].grad, f"input {i}")


# ---------------------------------------------------------------- modules
class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)
        self.ln = nn.LayerNorm(16)

    def forward(self, x):
        return self.fc2(self.ln(F.relu(self.fc1(x))))


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_module_grads(backend):
    symtrace.manual_seed(0)
    rng = np.random.default_rng(7)
    _check_module(_MLP(), backend, (T(rng, 5, 8),))


def test_mlp_module_cross_entropy_params_only():
    symtrace.manual_seed(1)
    rng = np.random.default_rng(8)
    target = symtrace.tensor(rng.integers(0, 4, size=5).astype(np.int64))
    _check_module(_MLP(), "interp", (T(rng, 5, 8),), loss=lambda y: F.cross_entropy(y, target),
                  input_grad=False, calls=3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformer_encoder_grads(backend):
    symtrace.manual_seed(2)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).eval()
    rng = np.random.default_rng(9)
    _check_module(enc, backend, (T(rng, 2, 4, 8),))


def test_training_loop_matches_eager():
    """Compiled forward + backward + SGD step, 3 steps: the same parameters."""
    symtrace.manual_seed(3)
    me = _MLP()
    mc = copy.deepcopy(me)
    cm = symtrace.compile(mc, backend="interp")
    oe = symtrace.optim.SGD(me.parameters(), lr=0.1)
    oc = symtrace.optim.SGD(mc.parameters(), lr=0.1)
    rng = np.random.default_rng(10)
    for _ in range(3):
        x = T(rng, 5, 8)
        for m, o in ((me, oe), (cm, oc)):
            o.zero_grad()
            (m(x) ** 2).mean().backward()
            o.step()
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        close(pc, pe, n)


# ---------------------------------------------------------------- PyLayer
class _ScaledTanh(symtrace.autograd.Function):
    """y = tanh(x) * k; a deliberately unusual backward (3x the true grad)
    so that using autodiff instead of this backward shows."""

    @staticmethod
    def forward(ctx, x, k):
        y = x.tanh()
        ctx.save_for_backward(y)
        ctx.k = k
        return y * k

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 3.0 * g * ctx.k * (1 - y * y), None


def _with_pylayer(x, w):
    h = x @ w
    return (_ScaledTanh.apply(h, 2.0) * h).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_pylayer_inside_compiled_function(backend):
    rng = np.random.default_rng(11)
    _check_fn(_with_pylayer, backend, (T(rng, 3, 4), T(rng, 4, 5)))


class _MulAdd(symtrace.autograd.PyLayer):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, ga, gs):
        a, b = ctx.saved_tensor()
        return ga * b + gs, ga * a + gs * 0.5


def _with_two_output_pylayer(a, b):
    p, s = _MulAdd.apply(a.exp(), b)
    return (p * s).sum() + s.mean()


def test_pylayer_two_outputs_inside_compiled_function():
    rng = np.random.default_rng(12)
    _check_fn(_with_two_output_pylayer, "interp", (T(rng, 3, 4), T(rng, 3, 4)))


class _PyLayerModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return _ScaledTanh.apply(self.lin(x), 0.5)


def test_pylayer_inside_compiled_module():
    symtrace.manual_seed(4)
    rng = np.random.default_rng(13)
    _check_module(_PyLayerModule(), "interp", (T(rng, 3, 4),))


# ---------------------------------------------------------------- more autograd edges
def _inplace_mid(x, w):
    y = x * w
    y.add_(1.0)
    y.mul_(w)          # not y.mul_(y): torch eager refuses its backward (y saved, then written)
    return y.sum()


def _detach_inside(x, w):
    return (x.detach() * x * w).sum()


def _no_grad_inside(x, w):
    with symtrace.no_grad():
        s = (x * w).sum()
    return (x * w * s).sum()


def _view_out(x, w):
    return ((x * w)[1:].T ** 2).sum()


def _input_twice(x, w):
    return (x * x * w + x).mean()


EDGE_FNS = [_inplace_mid, _detach_inside, _no_grad_inside, _view_out, _input_twice]


@pytest.mark.parametrize("fn", EDGE_FNS, ids=[f.__name__ for f in EDGE_FNS])
def test_autograd_edges(fn):
    rng = np.random.default_rng(20)
    _check_fn(fn, "interp", (T(rng, 3, 4), T(rng, 3, 4)))


def _mm_tanh(x, w):
    return (x @ w).tanh()


def _mm_sq(x, w):
    return ((x @ w) ** 2).sum()


def test_compiled_inside_bigger_eager_graph():
    rng = np.random.default_rng(21)
    (xe, we, ve), (xc, wc, vc) = _twin_leaves(T(rng, 3, 4), T(rng, 4, 5), T(rng, 5))
    cf = symtrace.compile(_mm_tanh, backend="interp")
    le = (_mm_tanh(xe.exp(), we) * ve).sum()
    lc = (cf(xc.exp(), wc) * vc).sum()
    assert_same(lc, le)
    le.backward()
    lc.backward()
    for n, e, c in (("x", xe, xc), ("w", we, wc), ("v", ve, vc)):
        close(c.grad, e.grad, n)


def test_shape_change_between_calls_grads():
    rng = np.random.default_rng(22)
    (we,), (wc,) = _twin_leaves(T(rng, 4, 2))
    cf = symtrace.compile(_mm_sq, backend="interp")
    for rows in (3, 5, 3):
        x = T(rng, rows, 4)
        le, lc = _mm_sq(x, we), cf(x, wc)
        assert_same(lc, le)
        le.backward()
        lc.backward()
        close(wc.grad, we.grad, f"w after rows={rows}")


def test_backward_with_gradient_argument_and_retain():
    rng = np.random.default_rng(23)
    (xe, we), (xc, wc) = _twin_leaves(T(rng, 3, 4), T(rng, 3, 4))
    cf = symtrace.compile(_multi_out, backend="interp")
    g = T(rng, 3, 3)
    ye, yc = _multi_out(xe, we.T)[1], cf(xc, wc.T)[1]
    ye.backward(g, retain_graph=True)
    yc.backward(g, retain_graph=True)
    ye.backward(g)
    yc.backward(g)
    close(xc.grad, xe.grad, "x")
    close(wc.grad, we.grad, "w")


# ---------------------------------------------------------------- a small BERT pretraining step
class _MiniBert(nn.Module):
    """Embeddings (word, position, token type) + LayerNorm, two BERT-style
    layers with the mask conversion (compile_corpus._BertLayer), an MLM head
    tied to the word embeddings, and a next-sentence head; returns the loss."""

    def __init__(self, vocab=30, d=8, h=2, layers=2, max_pos=16):
        super().__init__()
        from compile_corpus import _BertLayer
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.tok = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([_BertLayer(d, h) for _ in range(layers)])
        self.transform = nn.Linear(d, d)
        self.mlm_bias = nn.Parameter(symtrace.zeros(vocab))
        self.nsp = nn.Linear(d, 2)

    def forward(self, ids, token_type, attention_mask, mlm_labels, nsp_labels):
        b, s = ids.shape
        pos = symtrace.arange(s).unsqueeze(0).expand(b, s)
        x = self.ln(self.word(ids) + self.pos(pos) + self.tok(token_type))
        mask = attention_mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        h = F.gelu(self.transform(x))
        logits = h @ self.word.weight.T + self.mlm_bias
        mlm = F.cross_entropy(logits.reshape(b * s, -1), mlm_labels.reshape(-1), ignore_index=-100)
        nsp = F.cross_entropy(self.nsp(x[:, 0]), nsp_labels)
        return mlm + nsp


def _bert_batch(rng, b=2, s=6, vocab=30):
    ids = symtrace.tensor(rng.integers(0, vocab, size=(b, s)).astype(np.int64))
    tt = symtrace.tensor((np.arange(s)[None, :] >= s // 2).repeat(b, 0).astype(np.int64))
    am = np.ones((b, s), np.int64)
    am[1, -2:] = 0
    labels = np.full((b, s), -100, np.int64)
    labels[:, 1] = rng.integers(0, vocab, size=b)
    labels[0, 3] = 5
    nsp = symtrace.tensor(rng.integers(0, 2, size=b).astype(np.int64))
    return ids, tt, symtrace.tensor(am), symtrace.tensor(labels), nsp


@pytest.mark.parametrize("backend", BACKENDS)
def test_mini_bert_pretraining_steps(backend):
    symtrace.manual_seed(5)
    me = _MiniBert().eval()
    mc = copy.deepcopy(me)
    cm = symtrace.compile(mc, backend=backend)
    # SGD, not Adam: the key bias has a zero gradient in exact arithmetic
    # (softmax ignores a per-row constant), and Adam would blow its float
    # noise up to lr-sized, run-dependent steps
    oe = symtrace.optim.SGD(me.parameters(), lr=0.1)
    oc = symtrace.optim.SGD(mc.parameters(), lr=0.1)
    rng = np.random.default_rng(30)
    for step in range(3):
        batch = _bert_batch(rng)
        oe.zero_grad()
        oc.zero_grad()
        le, lc = me(*batch), cm(*batch)
        assert_same(lc, le, f"loss at step {step}")
        le.backward()
        lc.backward()
        for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
            close(pc.grad, pe.grad, f"step {step}: grad of {n}")
        oe.step()
        oc.step()
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        close(pc, pe, n)
    _assert_captured(me)


# ---------------------------------------------------------------- the corpus with gradients
# Every full-capture corpus case whose float tensor arguments, made leaves
# requiring grad, give a differentiable result: the loss sum(t * t) over the
# result's differentiable float tensors must give the same leaf gradients
# compiled (interp) as eager.


def _grad_args(case, seed):
    def conv(v):
        if isinstance(v, symtrace.Tensor) and v.dtype.is_floating_point:
            return v.detach().clone().requires_grad_()
        if isinstance(v, list):
            return [conv(t) for t in v]
        if isinstance(v, tuple):
            return tuple(conv(t) for t in v)
        if isinstance(v, dict):
            return {k: conv(t) for k, t in v.items()}
        return v
    a = case.make_args(seed)
    return C.Args(*conv(a.args), **conv(a.kwargs))


def _leaves(v):
    if isinstance(v, symtrace.Tensor):
        if v.requires_grad and v.is_leaf:
            yield v
    elif isinstance(v, (list, tuple)):
        for t in v:
            yield from _leaves(t)
    elif isinstance(v, dict):
        for t in v.values():
            yield from _leaves(t)


def _diff_outputs(v):
    if isinstance(v, symtrace.Tensor):
        if v.requires_grad and v.dtype.is_floating_point:
            yield v
    elif isinstance(v, (list, tuple)):
        for t in v:
            yield from _diff_outputs(t)
    elif isinstance(v, dict):
        for t in v.values():
            yield from _diff_outputs(t)


def _loss(out):
    ts = list(_diff_outputs(out))
    return sum((t.float() * t.float()).sum() for t in ts) if ts else None


def _grad_case_ok(case):
    if not case.full:
        return False
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            a = _grad_args(case, 0)
            loss = _loss(C.call(case, a))
            if loss is None or not list(_leaves((a.args, a.kwargs))):
                return False
            loss.backward()
        return True
    except Exception:
        return False


GRAD_CASES = [c for c in C.CASES if _grad_case_ok(c)]


def test_grad_corpus_is_large():
    assert len(GRAD_CASES) >= 100, len(GRAD_CASES)


def _grad_params():
    """Corpus cases known not to capture (test_compile_corpus.FAILING_KNOWN,
    kinds run or grads) are strict xfails here too."""
    from test_compile_corpus import FAILING_KNOWN as known
    out = []
    for c in GRAD_CASES:
        g, ver = f"grads:{c.name}", f"@{sys.version_info[0]}.{sys.version_info[1]}"
        why = known[g] if g in known else (known.get(f"run:{c.name}") or
                                           known.get(f"run:{c.name}{ver}"))
        out.append(pytest.param(c, id=c.name,
                                marks=[pytest.mark.xfail(strict=True, reason=why)] if why else []))
    return out


@pytest.mark.parametrize("case", _grad_params())
def test_corpus_grads(case):
    cf = symtrace.compile(case.fn, backend="interp")
    for seed in (0, 0, 1):  # the second call hits the cache
        ae, ac = _grad_args(case, seed), _grad_args(case, seed)
        oe = C.call(case, ae)
        oc = cf(*ac.args, **ac.kwargs)
        assert_same(oc, oe)
        _loss(oe).backward()
        _loss(oc).backward()
        for i, (le, lc) in enumerate(zip(_leaves((ae.args, ae.kwargs)), _leaves((ac.args, ac.kwargs)))):
            assert (le.grad is None) == (lc.grad is None), f"leaf {i}: grad presence differs"
            if le.grad is not None:
                close(lc.grad, le.grad, f"seed {seed}: leaf {i}")
    _assert_captured(case.fn)
