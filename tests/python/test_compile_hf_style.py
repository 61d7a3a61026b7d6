# HuggingFace-style model code in one graph: ModelOutput (a @dataclass that
# subclasses OrderedDict, with __post_init__ and __setitem__/__setattr__/
# __getitem__ overrides that go through super()), plain user objects made and
# returned by the compiled frame, and nn.Module construction inside forward
# (nn.CrossEntropyLoss() per call). Each test checks the graph/break counts
# and the values against eager, over several calls with different inputs.
import dataclasses
from typing import Optional

import numpy as np
import pytest

import hf_bert_model
import symtrace as st
from compile_model_helpers import fresh_frontend, fe_counts  # noqa: F401


ModelOutput = hf_bert_model.ModelOutput     # HF's pattern, as the model file writes it


@dataclasses.dataclass
class Out(ModelOutput):
    loss: object = None
    logits: object = None
    extra: Optional[tuple] = None


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif hasattr(a, "tolist"):
        np.testing.assert_allclose(np.asarray(b.tolist()), np.asarray(a.tolist()), rtol=1e-6, atol=1e-6)
    else:
        assert a == b


def _same_output(e, g):
    """g is a real object of e's class with the same items (in order) and attributes."""
    assert type(g) is type(e)
    assert list(g.keys()) == list(e.keys())
    assert list(vars(g)) == list(vars(e))
    for k in e.keys():
        _same(e[k], g[k])
        assert getattr(g, k) is dict.__getitem__(g, k)    # one object as item and attribute
    for k, v in vars(e).items():
        _same(v, vars(g)[k])


def test_model_output_made_and_returned_in_one_graph():
    def f(x, y):
        o = Out(loss=(x * y).sum(), logits=x + 1)
        o.extra = (x - 1,)          # a field left None: an attribute only
        o["scale"] = 2.0            # an item store through the Python __setitem__
        o.logits = o.logits * 3     # an attribute store that updates the item
        return o

    c = st.compile(f)
    for i in range(3):
        x, y = st.randn(3), st.randn(3)
        _same_output(f(x, y), c(x, y))
    assert fe_counts() == (1, 0, 0)


def test_model_output_read_by_int_str_and_slice():
    def f(x):
        o = Out(loss=x.sum(), logits=x * 2)
        a, b = o[:2]
        return o[0] + o["logits"].sum() + a * b.mean() + len(o.to_tuple()) + len(list(o.values()))

    c = st.compile(f)
    for i in range(3):
        x = st.randn(4)
        _same(f(x), c(x))
    assert fe_counts() == (1, 0, 0)


def test_model_output_argument_mutated_between_calls():
    def f(o, x):
        return o[0] * x + o["logits"].sum() + len(o.to_tuple())

    c = st.compile(f)
    o = Out(loss=st.ones(()), logits=st.ones(2))
    for i in range(4):
        x = st.randn(2)
        _same(f(o, x), c(o, x))
        o["loss"] = st.full((), float(i + 2))       # a new value: a graph input
        if i == 1:
            o["more"] = st.ones(())                   # a new key: to_tuple is longer
    graphs, breaks, fallbacks = fe_counts()
    assert breaks == 0 and fallbacks == 0 and graphs == 2


def test_plain_user_object_made_and_returned():
    class P:
        def __init__(self, a, b):
            self.a = a
            self.b = b

    def f(x):
        return P(x + 1, 3), x * 2

    c = st.compile(f)
    for i in range(3):
        x = st.randn(2)
        g, t = c(x)
        assert type(g) is P and list(vars(g)) == ["a", "b"] and g.b == 3
        _same(x + 1, g.a)
        _same(x * 2, t)
    assert fe_counts() == (1, 0, 0)


def test_user_object_stored_outside_is_replayed():
    class P:
        def __init__(self, a):
            self.a = a

    class Holder:
        pass

    h = Holder()

    def f(x):
        h.last = P(x + 1)
        return x * 2

    c = st.compile(f)
    for i in range(3):
        x = st.randn(2)
        _same(x * 2, c(x))
        assert type(h.last) is P
        _same(x + 1, h.last.a)
    assert fe_counts() == (1, 0, 0)


def test_one_object_returned_twice_keeps_its_identity():
    def f(x):
        o = Out(loss=x.sum())
        return o, o

    c = st.compile(f)
    for i in range(3):
        x = st.randn(2)
        a, b = c(x)
        assert a is b
        _same(x.sum(), a.loss)


def test_loss_module_built_in_forward():
    nn = st.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x, y):
            loss_fct = nn.CrossEntropyLoss()
            return loss_fct(self.lin(x), y)

    m = M()
    c = st.compile(m)
    for i in range(3):
        x = st.randn(5, 4)
        y = st.tensor(np.random.default_rng(i).integers(0, 3, 5))
        _same(m(x, y), c(x, y))
    assert fe_counts() == (1, 0, 0)


def _batches(n, b=2, s=16, V=100, seed=0):
    r = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = r.integers(1, V, (b, s))
        mask = np.ones((b, s), np.int64)
        mask[0, s - 4:] = 0
        tt = np.zeros((b, s), np.int64)
        tt[:, s // 2:] = 1
        labels = np.full((b, s), -100)
        labels[:, 3] = r.integers(1, V, b)
        labels[:, 7] = r.integers(1, V, b)
        out.append((ids, mask, tt, labels, r.integers(0, 2, b)))
    return out


def _train(L, model, batches, mode=None):
    opt = L.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def step(ids, mask, tt, labels, nsl):
        out = model(ids, attention_mask=mask, token_type_ids=tt, labels=labels, next_sentence_label=nsl)
        loss = out.loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    if mode == "step":
        step = st.compile(step)
    elif mode == "model":
        model = st.compile(model)
    return [step(*[L.tensor(a) for a in b]).item() for b in batches]


def _hf_pair():
    cfg = hf_bert_model.Config()
    ref = hf_bert_model.build(st, cfg)
    sd = {k: v.clone() for k, v in ref.state_dict().items()}
    m = hf_bert_model.build(st, hf_bert_model.Config())
    m.load_state_dict(sd)
    return ref, m, sd


@pytest.mark.parametrize("mode", ["step", "model"])
def test_hf_bert_trains_compiled_as_eager(mode):
    ref, m, _ = _hf_pair()
    bs = _batches(3)
    want = _train(st, ref, bs)
    st.reset()
    got = _train(st, m, bs, mode)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for (k, a), (_, b) in zip(ref.state_dict().items(), m.state_dict().items()):
        np.testing.assert_allclose(np.asarray(b.tolist()), np.asarray(a.tolist()), rtol=1e-4, atol=1e-6,
                                   err_msg=k)
    graphs, breaks, fallbacks = fe_counts()
    # the one break left in the model is (attention_mask == 0).all() (data-dependent,
    # as in TorchDynamo); compiling the step adds backward/step/zero_grad. Before
    # ModelOutput and in-forward modules were supported: 9 graphs, ~60 breaks.
    assert fallbacks == 0
    if mode == "model":
        assert graphs <= 3 and breaks <= 2, (graphs, breaks)
    else:
        assert graphs <= 3 and breaks <= 6, (graphs, breaks)


def test_hf_bert_compiled_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = hf_bert_model.build(torch, hf_bert_model.Config())
    sd = {k: v.detach().clone() for k, v in tm.state_dict().items()}
    bs = _batches(3, seed=1)
    want = _train(torch, tm, bs)
    m = hf_bert_model.build(st, hf_bert_model.Config())
    m.load_state_dict({k: st.tensor(v.numpy()) for k, v in sd.items()})
    got = _train(st, m, bs, "model")
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert fe_counts()[1] <= 2


def test_parameters_made_in_the_frame_are_new_on_every_call():
    # _C._make_subclass's result (Parameter.__new__) was a constant of the graph:
    # the second Parameter made was the first call's, sharing its storage
    P = st.nn.Parameter

    def f(d):
        return P(d)

    c = st.compile(f)
    for v in (1.0, 0.0, 3.0):
        p = c(st.full((2,), v))
        assert type(p) is P and p.tolist() == [v, v]

    def g(x):
        ln = st.nn.LayerNorm(4)
        ln.weight.data.fill_(2.0)     # must not reach ln.bias
        return ln(x)

    x = st.tensor([[1.0, 2.0, 3.0, 4.0]])
    c = st.compile(g)
    for _ in range(2):
        _same(g(x), c(x))
