# Activation checkpointing inside compiled graphs (frontend/tr_checkpoint.c, the
# checkpoint ranges of ir/backward.c): symtrace.compile inlines checkpoint's function
# into the graph, without a break, and the backward graph recomputes the values the
# function made instead of saving them. Compared with eager checkpoint, plain eager
# and torch (skipped without torch): graph and break counts, gradients for both
# use_reentrant values, dropout masks equal to eager's with the same seed, lower peak
# memory of a compiled deep MLP, a second backward with retain_graph, nested
# checkpoints, keyword and non-tensor arguments, the warning, checkpoint_sequential,
# the HF-style BERT with gradient checkpointing, and the fallback to a break when the
# function itself breaks.
import warnings

import numpy as np
import pytest

import symtrace as st
from symtrace.utils.checkpoint import checkpoint, checkpoint_sequential

from compile_model_helpers import hf_bert_checkpoint_steps

D = 16


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def build_block(L, p=0.0):
    nn = L.nn
    return nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Dropout(p), nn.Linear(2 * D, D),
                         nn.Softmax(-1), nn.Dropout(p), nn.Linear(D, D))


class Net(st.nn.Module):
    """Two checkpointed blocks around a plain layer; how = None: no checkpointing."""

    def __init__(self, p=0.0, how=False):
        super().__init__()
        self.b1, self.mid, self.b2 = build_block(st, p), st.nn.Linear(D, D), build_block(st, p)
        self.how = how

    def forward(self, x):
        if self.how is None:
            h = self.b1(x)
            return self.b2(self.mid(h).tanh() + h)
        h = checkpoint(self.b1, x, use_reentrant=self.how)
        return checkpoint(self.b2, self.mid(h).tanh() + h, use_reentrant=self.how)


def loss_fn(net):
    def f(x):
        y = net(x)
        return (y * y).sum()
    return f


def grads_of(net, f, xn, seed=3):
    for p in net.parameters():
        p.grad = None
    x = st.tensor(xn).requires_grad_(True)
    st.manual_seed(seed)
    loss = f(x)
    loss.backward()
    return (loss.item(), [x.grad.numpy().copy()] + [p.grad.numpy().copy()
                                                    for p in net.parameters()],
            st.get_rng_state().tolist())


def stats():
    s = st._C._fe_stats()
    return s["graphs"], s["breaks"]


def assert_close(a, b, tol=1e-5):
    assert len(a) == len(b)
    for i, (p, q) in enumerate(zip(a, b)):
        np.testing.assert_allclose(p, q, rtol=tol, atol=tol, err_msg=str(i))


@pytest.mark.parametrize("how", [False, True])
def test_one_graph_no_break_and_gradients_equal_eager(how):
    st.reset()
    st.manual_seed(0)
    net = Net(how=how)
    xn = _x((4, D))
    eager = grads_of(net, loss_fn(net), xn)
    st.reset()
    comp = grads_of(net, st.compile(loss_fn(net)), xn)
    assert stats() == (1, 0)
    assert comp[0] == pytest.approx(eager[0], rel=1e-6)
    assert_close(comp[1], eager[1])
    net.how = None
    assert_close(grads_of(net, loss_fn(net), xn)[1], eager[1])


@pytest.mark.parametrize("how", [False, True])
def test_gradients_equal_torch(how):
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as tck
    torch.manual_seed(0)
    tb = build_block(torch)
    sb = build_block(st)
    sb.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tb.state_dict().items()})
    xn = _x((5, D), 1)
    xt = torch.tensor(xn, requires_grad=True)
    yt = tck(tb, xt, use_reentrant=how)
    (yt * yt).sum().backward()

    def f(x):
        y = checkpoint(sb, x, use_reentrant=how)
        return (y * y).sum()
    st.reset()
    xs = st.tensor(xn).requires_grad_(True)
    st.compile(f)(xs).backward()
    assert stats() == (1, 0)
    assert_close([xs.grad.numpy()] + [p.grad.numpy() for p in sb.parameters()],
                 [xt.grad.numpy()] + [p.grad.numpy() for p in tb.parameters()], 1e-4)


def test_dropout_masks_equal_eager_with_the_same_seed():
    st.manual_seed(0)
    net = Net(p=0.3, how=False)
    xn = _x((6, D), 2)
    st.reset()
    eager = grads_of(net, loss_fn(net), xn, seed=11)
    comp = grads_of(net, st.compile(loss_fn(net)), xn, seed=11)
    assert stats() == (1, 0)
    assert comp[0] == pytest.approx(eager[0], rel=1e-6)
    assert_close(comp[1], eager[1])
    assert comp[2] == eager[2]        # the generator went on as in eager
    # a second run draws new masks, still the eager ones
    again = grads_of(net, st.compile(loss_fn(net)), xn, seed=12)
    ref = grads_of(net, loss_fn(net), xn, seed=12)
    assert again[0] != comp[0]
    assert_close(again[1], ref[1])


def test_saved_values_and_peak_memory_are_lower():
    nn = st.nn
    width, batch, depth = 64, 2048, 8

    def make(ck):
        st.manual_seed(0)
        blocks = nn.ModuleList([nn.Sequential(nn.Linear(width, width), nn.ReLU(),
                                              nn.Linear(width, width), nn.GELU(),
                                              nn.Linear(width, width), nn.Tanh())
                                for _ in range(depth)])

        def f(x):
            for b in blocks:
                x = checkpoint(b, x, use_reentrant=False) if ck else b(x)
            return x.sum()
        return blocks, st.compile(f)

    x = st.tensor(_x((batch, width), 3)).requires_grad_(True)

    def peak(ck):
        blocks, f = make(ck)
        f(x).backward()                     # compiles
        for p in blocks.parameters():
            p.grad = None
        x.grad = None
        base = st.memory.memory_allocated()
        st.memory.reset_peak_stats()
        loss = f(x)
        loss.backward()
        del loss
        return st.memory.max_memory_allocated() - base, [x.grad.numpy().copy()] + [
            p.grad.numpy().copy() for p in blocks.parameters()]

    st.reset()
    plain, gp = peak(False)
    assert stats() == (1, 0)
    st.reset()
    ck, gc = peak(True)
    assert stats() == (1, 0)
    act = batch * width * 4
    assert plain >= 3 * depth * act, plain       # three activations a block were kept
    assert ck < 0.6 * plain, (plain, ck)
    assert_close(gc, gp, 1e-4)


def test_second_backward_with_retain_graph():
    st.manual_seed(0)
    net = Net(p=0.2, how=False)
    xn = _x((3, D), 4)
    res = []
    for f in (loss_fn(net), st.compile(loss_fn(net))):
        st.reset()          # the counts below are the compiled run's
        for p in net.parameters():
            p.grad = None
        x = st.tensor(xn).requires_grad_(True)
        st.manual_seed(5)
        loss = f(x)
        loss.backward(retain_graph=True)
        first = [p.grad.numpy().copy() for p in net.parameters()]
        loss.backward()
        res.append((first, [p.grad.numpy().copy() for p in net.parameters()],
                    x.grad.numpy().copy()))
    assert stats() == (1, 0)
    assert_close(res[1][0], res[0][0])
    assert_close(res[1][1], res[0][1])
    assert_close([2 * g for g in res[1][0]], res[1][1])
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-5, atol=1e-5)


def test_nested_checkpoints():
    st.manual_seed(0)
    inner, outer = build_block(st, 0.1), st.nn.Linear(D, D)

    def body(h):
        return outer(checkpoint(inner, h, use_reentrant=False)).relu()

    def f(x):
        y = checkpoint(body, x, use_reentrant=False)
        return (y * y).sum()

    params = list(inner.parameters()) + list(outer.parameters())

    def run(fn):
        for p in params:
            p.grad = None
        x = st.tensor(_x((4, D), 5)).requires_grad_(True)
        st.manual_seed(9)
        l = fn(x)
        l.backward()
        return l.item(), [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in params]

    eager = run(f)
    st.reset()
    comp = run(st.compile(f))
    assert stats() == (1, 0)
    assert comp[0] == pytest.approx(eager[0], rel=1e-6)
    assert_close(comp[1], eager[1])


def test_keyword_and_non_tensor_arguments():
    st.manual_seed(0)
    lin = st.nn.Linear(D, D)

    def block(x, scale, *, bias=None, act="tanh", extra=(1.0, 2.0)):
        h = lin(x) * scale + extra[1]
        if bias is not None:
            h = h + bias
        return getattr(h, act)(), None

    def f(x, b):
        y, none = checkpoint(block, x, 0.5, use_reentrant=False, bias=b, act="sigmoid",
                             preserve_rng_state=False)
        assert none is None
        return (y * y).sum()

    def run(fn):
        lin.weight.grad = lin.bias.grad = None
        x = st.tensor(_x((3, D), 6)).requires_grad_(True)
        b = st.tensor(_x((D,), 7)).requires_grad_(True)
        fn(x, b).backward()
        return [x.grad.numpy().copy(), b.grad.numpy().copy(), lin.weight.grad.numpy().copy()]

    eager = run(f)
    st.reset()
    comp = run(st.compile(f))
    assert stats() == (1, 0)
    assert_close(comp, eager)


def test_use_reentrant_not_passed_warns():
    lin = st.nn.Linear(D, D)

    def f(x):
        return checkpoint(lin, x).sum()

    st.reset()
    x = st.tensor(_x((2, D))).requires_grad_(True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        st.compile(f)(x).backward()
    assert stats() == (1, 0)
    ref = lin.weight.grad.numpy().copy()
    lin.weight.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(x).backward()
    np.testing.assert_allclose(ref, lin.weight.grad.numpy(), rtol=1e-6)


def test_a_break_inside_falls_back_to_eager_checkpoint():
    lin = st.nn.Linear(D, D)

    def block(x):
        h = lin(x)
        if h.sum().item() > -1e9:       # a data read: a break inside function
            h = h.tanh()
        return h

    def f(x):
        y = checkpoint(block, x * 2, use_reentrant=False)
        return (y * y).sum()

    x = st.tensor(_x((3, D), 8)).requires_grad_(True)
    f(x).backward()
    ref = [x.grad.numpy().copy(), lin.weight.grad.numpy().copy()]
    x.grad = lin.weight.grad = None
    st.reset()
    st.compile(f)(x).backward()
    assert stats()[1] >= 1
    assert_close([x.grad.numpy(), lin.weight.grad.numpy()], ref)
    reasons = [b.reason for b in st.explain(f, x).break_reasons]
    assert reasons and "disabled" not in reasons[0], reasons   # the break is the data read


def test_bad_options_run_eagerly_with_their_errors():
    lin = st.nn.Linear(D, D)

    def f(x):
        return checkpoint(lin, x, use_reentrant=True, bias=1).sum()

    st.reset()
    x = st.tensor(_x((2, D))).requires_grad_(True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        st.compile(f)(x)
    assert stats()[1] == 1


def test_hf_bert_gradient_checkpointing_compiles_without_extra_breaks():
    eager = hf_bert_checkpoint_steps(True, False)
    plain = hf_bert_checkpoint_steps(False, True)
    comp = hf_bert_checkpoint_steps(True, True)
    assert comp[2] == plain[2]                    # no break of its own
    np.testing.assert_allclose(comp[0], eager[0], rtol=1e-5)
    np.testing.assert_allclose(plain[0], eager[0], rtol=1e-5)
    assert comp[1] < 0.6 * plain[1], (comp[1], plain[1])


@pytest.mark.parametrize("how", [None, False, True])
def test_checkpoint_sequential(how):
    nn = st.nn
    st.manual_seed(0)
    m = nn.Sequential(*[l for _ in range(4) for l in (nn.Linear(D, D), nn.Tanh(), nn.Dropout(0.1))])

    def f(x):
        return (checkpoint_sequential(m, 3, x, use_reentrant=how) ** 2).sum()

    def run(fn):
        for p in m.parameters():
            p.grad = None
        x = st.tensor(_x((4, D), 9)).requires_grad_(True)
        st.manual_seed(3)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            loss = fn(x)
        loss.backward()
        return (loss.item(), [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()],
                [str(x.message) for x in w if "use_reentrant" in str(x.message)])

    eager = run(f)
    st.reset()
    comp = run(st.compile(f))
    assert stats() == (1, 0)
    assert comp[0] == pytest.approx(eager[0], rel=1e-6)
    assert_close(comp[1], eager[1])
    assert len(comp[2]) == len(eager[2]) == (how is None)


CONTEXT_FN = None


def test_context_fn_other_than_the_default_runs_eagerly_and_is_guarded():
    import contextlib
    from symtrace.utils.checkpoint import noop_context_fn
    global CONTEXT_FN
    lin = st.nn.Linear(D, D)
    calls = []

    def my_ctx():
        calls.append(1)
        return contextlib.nullcontext(), contextlib.nullcontext()

    def f(x):
        return checkpoint(lin, x, use_reentrant=False, context_fn=CONTEXT_FN).sum()

    st.reset()
    x = st.tensor(_x((2, D))).requires_grad_(True)
    cf = st.compile(f)
    CONTEXT_FN = noop_context_fn
    cf(x).backward()
    assert stats() == (1, 0)
    CONTEXT_FN = my_ctx
    cf(x).backward()                  # the guard on context_fn fails: translated again
    assert stats()[1] == 1 and calls == [1]      # eager checkpoint called it
    CONTEXT_FN = None
