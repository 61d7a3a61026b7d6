# What the third nn hunt (scripts/hunt_nn.py: every torch.nn class, optimizer and
# lr_scheduler against torch 2.13) found and fixed: Embedding's max_norm,
# norm_type and scale_grad_by_freq, zero-width Linear layers' backward,
# AdaptiveLogSoftmaxWithLoss (zero-width tails, no gradient for a cluster no
# target falls in), load_state_dict(assign=True). Each is compared with torch,
# or with the values torch gives written out.
import numpy as np
import pytest

import symtrace as st


def _np(t):
    return None if t is None else np.array(t.detach().numpy())


def _close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(got), want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- Embedding
W = np.array([[3.0, 4.0], [0.3, 0.4], [-1.0, 2.0], [0.0, 0.0]], dtype=np.float32)


def _embedding_run(L, **kw):
    m = L.nn.Embedding(4, 2, **kw)
    m.load_state_dict({"weight": L.tensor(W.copy())})
    idx = L.tensor(np.array([[0, 1, 1], [2, 0, 0]]))
    out = m(idx)
    (out * L.tensor(np.arange(12, dtype=np.float32).reshape(2, 3, 2))).sum().backward()
    return out, m.weight, m.weight.grad


def test_embedding_max_norm_renorms_the_rows_read_in_place():
    out, weight, grad = _embedding_run(st, max_norm=1.0)
    # rows 0 (norm 5) and 2 (norm sqrt 5) read and longer than 1: scaled to norm 1 (minus torch's 1e-7)
    want_w = W.copy()
    want_w[0] = W[0] / (5.0 + 1e-7)
    want_w[2] = W[2] / (np.sqrt(5.0) + 1e-7)
    _close(weight, want_w)
    _close(out, want_w[[[0, 1, 1], [2, 0, 0]]])
    _close(grad, [[0 + 8 + 10, 1 + 9 + 11], [2 + 4, 3 + 5], [6, 7], [0, 0]])


def test_embedding_scale_grad_by_freq_and_norm_type():
    out, weight, grad = _embedding_run(st, scale_grad_by_freq=True, max_norm=2.0, norm_type=1.0)
    want_w = W.copy()
    want_w[0] = W[0] * 2.0 / (7.0 + 1e-7)     # l1 norm 7 > 2; row 2's l1 norm 3 > 2
    want_w[2] = W[2] * 2.0 / (3.0 + 1e-7)
    _close(weight, want_w)
    # row 0 read 3 times, row 1 twice: their gradients divided by that
    _close(grad, [[18 / 3, 21 / 3], [6 / 2, 8 / 2], [6, 7], [0, 0]])


@pytest.mark.parametrize("kw", [dict(max_norm=1.0), dict(scale_grad_by_freq=True, padding_idx=1),
                                dict(max_norm=0.5, norm_type=3.0, scale_grad_by_freq=True)])
def test_embedding_options_match_torch(kw):
    torch = pytest.importorskip("torch")
    want = _embedding_run(torch, **kw)
    got = _embedding_run(st, **kw)
    for g, w in zip(got, want):
        _close(g, _np(w))
    assert repr(st.nn.Embedding(4, 2, **kw)) == repr(torch.nn.Embedding(4, 2, **kw))


def test_embedding_sparse_names_what_is_missing():
    with pytest.raises(NotImplementedError, match="sparse"):
        st.nn.Embedding(4, 2, sparse=True)


# ---------------------------------------------------------------- zero-width Linear
@pytest.mark.parametrize("n_in,n_out,bias", [(0, 3, True), (6, 0, False), (0, 0, True), (6, 0, True)])
def test_linear_zero_width_backward(n_in, n_out, bias):
    rng = np.random.default_rng(0)
    x = st.tensor(rng.normal(size=(5, n_in)).astype(np.float32), requires_grad=True)
    w = st.tensor(rng.normal(size=(n_out, n_in)).astype(np.float32), requires_grad=True)
    b = st.tensor(np.arange(n_out, dtype=np.float32), requires_grad=True) if bias else None
    y = st.nn.functional.linear(x, w, b)
    assert tuple(y.shape) == (5, n_out)
    (y * 2).sum().backward()          # raised "cannot reshape tensor of 0 elements into shape [-1, 0]"
    _close(y, np.broadcast_to(np.arange(n_out, dtype=np.float32), (5, n_out)) if bias else np.zeros((5, n_out)))
    _close(x.grad, np.zeros((5, n_in)))
    _close(w.grad, np.zeros((n_out, n_in)))
    if bias:
        _close(b.grad, np.full(n_out, 10.0))


# ---------------------------------------------------------------- AdaptiveLogSoftmaxWithLoss
def _asm_run(L, state, x, target):
    m = L.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4, 8])     # div_value 4: the last tail is 6 -> 0 -> 2
    m.load_state_dict({k: L.tensor(v) for k, v in state.items()})
    xt = L.tensor(x, requires_grad=True)
    out = m(xt, L.tensor(target))
    (out.output.sum() + out.loss).backward()
    return [out.output, out.loss, xt.grad] + [p.grad for _, p in m.named_parameters()], \
        [k for k, _ in m.named_parameters()]


@pytest.mark.parametrize("target", [[4, 5, 2, 1, 4], [0, 9, 8, 5, 3]])
def test_adaptive_log_softmax_zero_width_tail_and_unused_cluster_grads(target):
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # "Initializing zero-element tensors is a no-op"
        torch.manual_seed(0)
        state = {k: v.numpy().copy() for k, v in torch.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4, 8]).state_dict()
                 .items()}
        x = np.random.default_rng(1).uniform(-1, 1, (5, 6)).astype(np.float32)
        target = np.array(target)
        want, names = _asm_run(torch, state, x, target)
        got, st_names = _asm_run(st, state, x, target)
    assert st_names == names
    for name, g, w in zip(["output", "loss", "x.grad"] + names, got, want):
        # a cluster no target falls in is not run: its weights' grad is None, as torch's
        assert (g is None) == (w is None), name
        if w is not None:
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-5, atol=1e-6, err_msg=name)


# ---------------------------------------------------------------- load_state_dict(assign=True)
def _assign_run(L):
    m = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.BatchNorm1d(2))
    m[0].weight.requires_grad_(False)
    sd = {"0.weight": L.tensor(np.ones((2, 3))),                       # float64: kept, as the tensor itself
          "0.bias": L.nn.Parameter(L.tensor(np.full(2, 2.0, np.float32))),
          "1.weight": L.tensor(np.full(2, 3.0, np.float32)),
          "1.bias": L.tensor(np.zeros(2, np.float32), requires_grad=True),
          "1.running_mean": L.tensor(np.full(2, 0.5, np.float32)),
          "1.running_var": L.tensor(np.full(2, 4.0, np.float32)),
          "1.num_batches_tracked": L.tensor(7)}
    r = m.load_state_dict(sd, assign=True)
    return m, sd, r


def test_load_state_dict_assign_puts_the_tensors_themselves():
    m, sd, r = _assign_run(st)
    assert r.missing_keys == [] and r.unexpected_keys == []
    w, b = m[0].weight, m[0].bias
    assert isinstance(w, st.nn.Parameter) and w.dtype == st.float64 and not w.requires_grad
    assert b is sd["0.bias"] and b.requires_grad
    assert isinstance(m[1].weight, st.nn.Parameter) and m[1].weight.requires_grad
    assert m[1].running_var is sd["1.running_var"] and int(m[1].num_batches_tracked) == 7
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    m.eval()
    _close(m[1](st.ones(1, 2)), np.full((1, 2), (1 - 0.5) / np.sqrt(4 + 1e-5) * 3))
    sd["1.running_var"].fill_(1.0)      # the module holds the very tensor
    _close(m[1].running_var, [1.0, 1.0])


def test_load_state_dict_assign_matches_torch():
    torch = pytest.importorskip("torch")
    (tm, tsd, tr), (sm, ssd, sr) = _assign_run(torch), _assign_run(st)
    for (tn, tp), (sn, sp) in zip(tm.state_dict(keep_vars=True).items(), sm.state_dict(keep_vars=True).items()):
        assert tn == sn
        assert str(tp.dtype).split(".")[1] == str(sp.dtype).split(".")[1], tn
        assert type(tp).__name__ == type(sp).__name__ and tp.requires_grad == sp.requires_grad, tn
        assert (tp is tsd[tn]) == (sp is ssd[sn]), tn
        _close(sp, _np(tp))
    with pytest.raises(RuntimeError, match="size mismatch"):
        st.nn.Linear(3, 2).load_state_dict({"weight": st.zeros(2, 4), "bias": st.zeros(2)}, assign=True)


# ---------------------------------------------------------------- optimizers
P0 = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
G0 = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)


def _opt_steps(L, name, lr, sched=False, **kw):
    p = L.nn.Parameter(L.tensor(P0.copy()))
    o = getattr(L.optim, name)([p], lr=lr, **kw)
    s = L.optim.lr_scheduler.StepLR(o, 1, 0.5) if sched else None
    for i in range(3):
        p.grad = L.tensor(G0 * (i + 1))
        o.step()
        if s is not None:
            s.step()
    return p, o.param_groups[0]["lr"]


@pytest.mark.parametrize("name,kw", [("Adam", {}), ("AdamW", dict(fused=True)),
                                     ("Adam", dict(amsgrad=True, weight_decay=0.1, foreach=False))])
def test_adam_tensor_lr(name, kw):
    # a Tensor lr raised "run: consts: constant 5 takes a Python number" in the fused update
    torch = pytest.importorskip("torch")
    for sched in (False, True):
        lr = st.tensor(0.01)
        p, lr_after = _opt_steps(st, name, lr, sched, **kw)
        tp, tlr = _opt_steps(torch, name, torch.tensor(0.01), sched, **kw)
        _close(p, _np(tp), rtol=1e-5, atol=1e-7)
        assert lr_after is lr and float(lr_after) == pytest.approx(float(tlr))


def _hooks_run(L):
    import pickle
    from importlib import import_module
    optmod = import_module(L.__name__ + ".optim.optimizer")
    log = []
    p = L.nn.Parameter(L.tensor(P0.copy()))
    q = L.nn.Parameter(L.ones(2))
    o = L.optim.Adam([p], lr=0.1)
    o.register_step_pre_hook(lambda opt, a, k: log.append(("pre", type(opt).__name__, len(a), a[0] is opt, sorted(k))))
    h = o.register_step_post_hook(lambda opt, a, k: log.append(("post", len(a), sorted(k))))
    g1 = optmod.register_optimizer_step_pre_hook(lambda opt, a, k: log.append("gpre"))
    g2 = optmod.register_optimizer_step_post_hook(lambda opt, a, k: log.append("gpost"))
    # a pre hook's (args, kwargs) replace step's (args hold the optimizer): here a closure is passed in
    o.register_step_pre_hook(lambda opt, a, k: ((opt,), {"closure": lambda: log.append("closure") or 1.5}))
    try:
        p.grad = L.tensor(G0)
        loss = o.step()
        h.remove()
        p.grad = L.tensor(G0)
        o.step()
    finally:
        g1.remove()
        g2.remove()
    log.append(("loss", loss))
    o.add_param_group({"params": [q], "lr": 0.5})
    o.register_state_dict_pre_hook(lambda opt: log.append("sd_pre"))
    o.register_state_dict_post_hook(lambda opt, sd: dict(sd, extra=len(sd["param_groups"])))
    o.register_state_dict_post_hook(lambda opt, sd: log.append(("sd_post", sd.get("extra"))), prepend=True)
    sd = o.state_dict()
    log.append(("extra", sd["extra"], sd["param_groups"][1]["lr"]))

    def lpre(opt, sd):
        sd = dict(sd)
        sd["param_groups"] = [dict(g, lr=g["lr"] * 2) for g in sd["param_groups"]]
        return sd
    o3 = L.optim.Adam([{"params": [p]}, {"params": [q]}], lr=0.1)
    o3.register_load_state_dict_pre_hook(lpre)
    o3.register_load_state_dict_post_hook(lambda opt: log.append(("loaded", [g["lr"] for g in opt.param_groups])))
    o3.load_state_dict({k: v for k, v in sd.items() if k != "extra"})
    o4 = pickle.loads(pickle.dumps(o3))        # an unpickled optimizer takes hooks too
    o4.register_step_post_hook(lambda opt, a, k: log.append("o4 post"))
    o4.step()
    return log, p


def test_optimizer_hooks_match_torch():
    torch = pytest.importorskip("torch")
    want, tp = _hooks_run(torch)
    got, sp = _hooks_run(st)
    assert got == want
    _close(sp, _np(tp))


def test_optimizer_hooks_expected_order():
    log, _ = _hooks_run(st)
    assert log[:4] == ["gpre", ("pre", "Adam", 1, True, []), "closure", ("post", 1, ["closure"])]
    assert log[4:8] == ["gpost", "gpre", ("pre", "Adam", 1, True, []), "closure"]
    assert log[8:] == ["gpost", ("loss", 1.5), "sd_pre", ("sd_post", None), ("extra", 2, 0.5),
                       ("loaded", [0.2, 1.0]), "o4 post"]
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        o = st.optim.SGD([st.nn.Parameter(st.ones(1))], lr=0.1)
        o.register_step_pre_hook(lambda opt, a, k: 3)
        o.step()


def test_adam_tensor_lr_equals_float_lr():
    for name, kw in [("Adam", {}), ("AdamW", dict(fused=True)), ("Adam", dict(amsgrad=True, foreach=False))]:
        lr = st.tensor(0.01)
        p, _ = _opt_steps(st, name, lr, True, **kw)
        q, _ = _opt_steps(st, name, float(st.tensor(0.01)), True, **kw)
        _close(p, _np(q), rtol=1e-6, atol=1e-7)
        assert float(lr) == pytest.approx(0.01 * 0.5 ** 3)    # StepLR wrote into the tensor


def test_adaptive_log_softmax_unused_cluster_has_no_grad():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = st.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4, 8])     # tail 1: Linear(6, 0), Linear(0, 2)
    x = st.tensor(np.random.default_rng(1).uniform(-1, 1, (5, 6)).astype(np.float32), requires_grad=True)
    out = m(x, st.tensor(np.array([4, 5, 2, 1, 4])))            # no target in [8, 10)
    (out.output.sum() + out.loss).backward()
    assert [n for n, p in m.named_parameters() if p.grad is None] == ["tail.1.0.weight", "tail.1.1.weight"]
    assert x.grad is not None and np.isfinite(_np(x.grad)).all()
    out = m(x, st.tensor(np.array([9, 8, 2, 1, 4])))            # now it is run, through its zero-width layers
    out.loss.backward()
    _close(m.tail[1][0].weight.grad, np.zeros((0, 6)))
    assert np.isclose(float(out.loss), float(-out.output.mean()))


# ---------------------------------------------------------------- empty batches, integer inputs
def _mha_empty_run(L, shape, batch_first, **kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first, **kw)
    m = L.nn.MultiheadAttention(8, 2, batch_first=batch_first, **kw)
    m.load_state_dict({k: L.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = L.tensor(np.ones(shape, np.float32), requires_grad=True)
    out, w = m(x, x, x)
    out.sum().backward()
    return tuple(out.shape), tuple(w.shape), tuple(x.grad.shape)


@pytest.mark.parametrize("shape,batch_first", [((0, 3, 8), True), ((2, 0, 8), True), ((0, 2, 8), False),
                                               ((3, 0, 8), False)])
def test_multihead_attention_empty_batch_or_sequence(shape, batch_first):
    # raised "cannot reshape tensor of 0 elements into shape [3, 0, -1]"
    torch = pytest.importorskip("torch")
    for kw in ({}, dict(bias=False)):
        assert _mha_empty_run(st, shape, batch_first, **kw) == _mha_empty_run(torch, shape, batch_first, **kw)


def test_transformer_encoder_layer_empty_batch():
    m = st.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    assert tuple(m(st.randn(0, 2, 8)).shape) == (0, 2, 8)
    assert tuple(m(st.randn(3, 0, 8)).shape) == (3, 0, 8)


def test_glu_on_an_empty_halving_dim():
    x = st.ones(0, 6, requires_grad=True)        # raised ValueError from split's single piece
    y = st.nn.functional.glu(x, 0)
    assert tuple(y.shape) == (0, 6)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 6)
    a = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    _close(st.nn.GLU(0)(st.tensor(a)), a[:1] / (1 + np.exp(-a[1:])))


def test_rms_norm_integer_input_names_the_dtype():
    with pytest.raises(NotImplementedError, match="\"rms_norm\" not implemented for 'Long'"):
        st.nn.RMSNorm(4)(st.ones(2, 4, dtype=st.int64))


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "RAdam", "NAdam", "SGD", "Adagrad", "RMSprop",
                                  "Adadelta", "Rprop", "ASGD"])
def test_tensor_lr_of_two_elements_is_refused_as_torch(name):
    # Adam, SGD, NAdam, Adagrad, RMSprop, Adadelta raised RuntimeError from comparing the tensor with 0
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(st.optim, name)([st.nn.Parameter(st.ones(1))], lr=st.tensor([0.1, 0.2]))
