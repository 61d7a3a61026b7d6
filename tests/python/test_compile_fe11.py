"""A training step's opt.step(), sched.step(), opt.zero_grad() and
warnings.warn(...) inside a compiled frame: made after the graph, in order,
instead of breaking the graph (frontend/tr_effects.c, "calls performed after
the graph"). Compiled against eager, over several calls: losses, parameter
values, .grad None, learning rates, scheduler state, the warnings seen; and
the graph and break counts."""
import warnings

import pytest

import symtrace as st
from symtrace import _C


def _model(seed=0):
    st.manual_seed(seed)
    return st.nn.Sequential(st.nn.Linear(4, 8), st.nn.ReLU(), st.nn.Linear(8, 1))


def _setup(seed=0, set_to_none=True, sched_kind="lambda"):
    m = _model(seed)
    opt = st.optim.AdamW(m.parameters(), lr=1e-2)
    if sched_kind == "lambda":
        sched = st.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
    else:
        sched = st.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=4)

    def step(x):
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=set_to_none)
        return loss
    return m, opt, sched, step


def _xs(n=5):
    st.manual_seed(123)
    return [st.randn(6, 4) for _ in range(n)]


def _stats(fn):
    return {k: v for k, v in _C._fe_stats()["codes"].items() if fn.__code__.co_name in k}


def _run_pair(**kw):
    """The same step eager and compiled on identical models; per-call state."""
    out = []
    for compiled in (False, True):
        st.reset()
        m, opt, sched, step = _setup(**kw)
        f = st.compile(step) if compiled else step
        rec = []
        for x in _xs():
            loss = f(x)
            rec.append((loss.item(), [p.detach().clone().tolist() for p in m.parameters()],
                        [p.grad is None for p in m.parameters()],
                        [p.grad.tolist() if p.grad is not None else None for p in m.parameters()],
                        [g["lr"] for g in opt.param_groups], sched.last_epoch, sched._step_count,
                        sched.get_last_lr(), opt.state[next(iter(m.parameters()))]["step"].item()))
        out.append(rec)
    return out


def _same_as_eager(body):
    """body(mode, m, opt, sched, step) on a fresh identical setup, eager then
    compiled (mode wraps a step function: itself, or st.compile of it); the two
    records must be equal. Returns them."""
    res = []
    for compiled in (False, True):
        st.reset()
        m, opt, sched, step = _setup()
        res.append(body(st.compile if compiled else (lambda fn: fn), m, opt, sched, step))
    assert res[0] == res[1]
    return res


@pytest.mark.parametrize("sched_kind", ["lambda", "linear"])
@pytest.mark.parametrize("set_to_none", [True, False])
def test_train_step_matches_eager(set_to_none, sched_kind):
    eager, comp = _run_pair(set_to_none=set_to_none, sched_kind=sched_kind)
    assert len(eager) == len(comp) == 5
    for e, c in zip(eager, comp):
        assert e == c
    # lr moved with the schedule, and the grads were cleared (or zeroed)
    assert len({r[4][0] for r in comp}) > 1
    assert all(all(r[2]) == set_to_none for r in comp)


def test_train_step_one_break_and_no_recompiles():
    st.reset()
    m, opt, sched, step = _setup()
    f = st.compile(step)
    before = _C._fe_stats()
    for x in _xs(3):
        f(x)
    mid = _C._fe_stats()
    for x in _xs(5):
        f(x)
    after = _C._fe_stats()
    # the backward break only: the forward graph, then one entry that runs
    # opt.step(), sched.step() and opt.zero_grad() after its (empty) graph
    assert after["breaks"] - before["breaks"] == 1
    assert after["translations"] == mid["translations"]       # no recompiles per step
    codes = _stats(step)
    assert sum(c.get("entries", 0) for c in codes.values() if not c.get("plain")) == 2
    assert not any(c.get("plain") for c in codes.values())


def test_explain_reports_only_backward():
    m, opt, sched, step = _setup()
    out = st.explain(step, _xs(1)[0])
    assert out.graph_break_count == 1
    assert "backward" in str(out.break_reasons[0].reason)


def test_state_read_after_step_breaks_and_is_fresh():
    """A read of what opt.step()/sched.step() changed, after them in the frame,
    sees the new values (the frame breaks before the read)."""
    def body(mode, m, opt, sched, _):
        w = next(iter(m.parameters()))

        def step(x):
            loss = m(x).sum()
            loss.backward()
            opt.step()
            sched.step()
            lr = opt.param_groups[0]["lr"]
            g = w.grad
            opt.zero_grad()
            return loss * lr, w * 1, g is None, w.grad is None
        return [(a.item(), b.tolist(), c, d) for a, b, c, d in map(mode(step), _xs(4))]
    _same_as_eager(body)


def test_step_with_closure_result_used_still_correct():
    def body(mode, m, opt, sched, _):
        def step(x):
            def closure():
                opt.zero_grad()
                loss = m(x).sum()
                loss.backward()
                return loss
            loss = opt.step(closure)
            return loss
        return [loss.item() for loss in map(mode(step), _xs(3))]
    _same_as_eager(body)


def test_step_under_no_grad_block():
    def body(mode, m, opt, sched, _):
        def step(x):
            loss = m(x).sum()
            loss.backward()
            with st.no_grad():
                opt.step()
            opt.zero_grad()
            return loss
        return [loss.item() for loss in map(mode(step), _xs(3))] + [p.tolist() for p in m.parameters()]
    _same_as_eager(body)


# ---------------- warnings.warn ----------------
def _warn_fn():
    def f(x, n):
        y = x + 1
        warnings.warn("careful: %d" % n.shape[0])
        print("between")
        z = y * 2
        warnings.warn("deprecated thing", DeprecationWarning)
        return z
    return f


def _records(fn, calls, action="always"):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter(action)
        outs = [fn(*a).tolist() for a in calls]
    return outs, [(str(r.message), r.category, r.filename, r.lineno) for r in w]


def test_warn_is_replayed_in_one_graph(capsys):
    f = _warn_fn()
    calls = [(st.ones(3), st.ones(2)) for _ in range(3)]
    e_out, e_rec = _records(f, calls)
    e_print = capsys.readouterr().out
    st.reset()
    c = st.compile(f)
    before = _C._fe_stats()
    c_out, c_rec = _records(c, calls)
    after = _C._fe_stats()
    c_print = capsys.readouterr().out
    assert c_out == e_out
    assert c_rec == e_rec and len(c_rec) == 6
    assert c_print == e_print
    assert after["translations"] - before["translations"] == 2   # print still breaks once
    assert after["breaks"] - before["breaks"] == 1


def test_warn_without_print_is_a_single_graph():
    def f(x):
        y = x.sin()
        warnings.warn("a warning", UserWarning, stacklevel=1)
        return y + 1
    calls = [(st.ones(3),)] * 3
    e = _records(f, calls)
    st.reset()
    c = st.compile(f)
    b = _C._fe_stats()
    got = _records(c, calls)
    a = _C._fe_stats()
    assert got == e
    assert a["breaks"] == b["breaks"] and a["translations"] - b["translations"] == 1


@pytest.mark.parametrize("action", ["default", "once", "module", "ignore"])
def test_warn_filters_dedupe_like_eager(action):
    def f(x):
        warnings.warn("same message", RuntimeWarning)
        return x * 3
    calls = [(st.ones(2),)] * 4
    for k in ("__warningregistry__",):
        globals().pop(k, None)
    e = _records(f, calls, action)
    globals().pop("__warningregistry__", None)
    warnings._filters_mutated() if hasattr(warnings, "_filters_mutated") else None
    st.reset()
    got = _records(st.compile(f), calls, action)
    assert got == e


def test_warn_error_filter_raises_like_eager():
    def f(x):
        y = x + 1
        warnings.warn("boom", UserWarning)
        return y
    st.reset()
    c = st.compile(f)
    x = st.ones(2)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert c(x).tolist() == [2.0, 2.0]
    # the same compiled function, now with an error filter: raises like eager
    for fn in (f, c):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(UserWarning, match="boom"):
                fn(x)
    # and compiled first under the error filter
    st.reset()
    c2 = st.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="boom"):
            c2(x)


def test_warn_stacklevel_names_the_callers_line():
    def helper(x):
        warnings.warn("from helper", stacklevel=2)
        return x + 1

    def f(x):
        return helper(x) * 2
    calls = [(st.ones(2),)] * 3
    e = _records(f, calls)
    st.reset()
    assert _records(st.compile(f), calls) == e
    assert e[1][0][3] == f.__code__.co_firstlineno + 1


def test_warn_orders_with_attribute_stores():
    class Box:
        pass
    box = Box()
    box.n = 0
    seen = []

    def show(msg, cat, fn, ln, file=None, line=None):
        seen.append((str(msg), box.n))

    def f(x):
        box.n = 1
        warnings.warn("w")
        box.n = 2
        return x + 1
    for fn in (f, st.compile(f)):
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = show
            box.n = 0
            fn(st.ones(1))
    # replayed after the graph, in order with the stores: both see n == 1
    assert seen == [("w", 1), ("w", 1)]


def test_unresumable_instruction_after_step_is_not_a_plain_frame():
    """After opt.step() the frame reads a tensor's method (loss.detach: 3.11's
    LOAD_METHOD, after which no partial graph resumes): the graph ends before
    opt.step() instead, and no code object of the step becomes plain Python."""
    def body(mode, m, opt, sched, _):
        def step(x):
            loss = m(x).sum()
            loss.backward()
            opt.step()
            k = 3
            return loss.detach() * k
        rec = [y.item() for y in map(mode(step), _xs(3))] + [p.tolist() for p in m.parameters()] + \
            [p.grad is None for p in m.parameters()]
        if mode is st.compile:
            codes = _stats(step)
            assert codes and not any(c.get("plain") for c in codes.values()), codes
        return rec
    _same_as_eager(body)


def test_error_in_a_replayed_step_raises_like_eager():
    def body(mode, m, opt, sched, step):
        calls = []

        def hook(o, args, kwargs):
            calls.append(1)
            if len(calls) >= 2:
                raise RuntimeError("hook says no")
        h = opt.register_step_pre_hook(hook)
        f = mode(step)
        out = []
        for x in _xs(3):
            try:
                out.append(f(x).item())
            except RuntimeError as e:
                out.append(str(e))
            out.append([p.grad is None for p in m.parameters()])
        h.remove()
        return (out, [p.tolist() for p in m.parameters()], sched.last_epoch)
    res = _same_as_eager(body)
    assert res[0][0][2] == "hook says no"


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_first_keeps_forward_in_the_graph(set_to_none):
    """opt.zero_grad() at the top of the step changes only .grad: the forward
    after it stays in the graph (zero_grad runs after it, before backward)."""
    def body(mode, m, opt, sched, _):
        def step(x):
            opt.zero_grad(set_to_none=set_to_none)
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            sched.step()
            return loss
        b = _C._fe_stats()
        rec = [y.item() for y in map(mode(step), _xs(4))] + [p.tolist() for p in m.parameters()] + \
            [p.grad.tolist() for p in m.parameters()] + [opt.param_groups[0]["lr"]]
        a = _C._fe_stats()
        if mode is st.compile:
            assert a["breaks"] - b["breaks"] == 1          # backward only
            assert a["translations"] - b["translations"] == 2
        return rec
    _same_as_eager(body)


def test_grad_read_after_zero_grad_is_fresh():
    def body(mode, m, opt, sched, _):
        w = next(iter(m.parameters()))

        def step(x):
            loss = m(x).sum()
            loss.backward()
            opt.zero_grad()
            y = x * 2
            return y, w.grad is None, loss
        return [(a.tolist(), b, c.item()) for a, b, c in map(mode(step), _xs(3))]
    res = _same_as_eager(body)
    assert all(r[1] for r in res[1])
