"""Eager parity, round 9: what a backward that fails part-way leaves in .grad (a leaf
takes its gradient only once every edge into it has delivered, and nodes run in torch's
order, latest created first), and scalar/type-promotion, integer division and sorting
edge cases found by a random sweep against torch."""
import random

import pytest

import symtrace as st


# ---- a backward that fails part-way

def _raising_fn(m):
    class Boom(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("boom")
    return Boom


def _grads(ts):
    return [None if t.grad is None else t.grad.tolist() for t in ts]


def test_failed_backward_leaves_incomplete_leaf_grad_untouched():
    # c's gradient comes from two edges; the one through Boom never arrives, so torch's
    # AccumulateGrad for c never runs: c.grad stays None (b's is complete and is kept)
    m = st
    Boom = _raising_fn(m)
    a = m.tensor([1., 2., 3.], requires_grad=True)
    b = m.tensor([4., 5., 6.], requires_grad=True)
    c = m.tensor([1., 1., 1.], requires_grad=True)
    loss = (Boom.apply(a * c) * b).sum() + (c * 5).sum()
    with pytest.raises(RuntimeError, match="boom"):
        loss.backward()
    assert _grads([a, b, c]) == [None, [2., 4., 6.], None]


def test_failed_backward_keeps_existing_grad_of_incomplete_leaf():
    Boom = _raising_fn(st)
    a = st.tensor([1., 2.], requires_grad=True)
    c = st.tensor([1., 1.], requires_grad=True)
    c.grad = st.tensor([10., 10.])
    loss = (Boom.apply(a * c)).sum() + (c * 5).sum()
    with pytest.raises(RuntimeError, match="boom"):
        loss.backward()
    assert _grads([a, c]) == [None, [10., 10.]]


def test_failed_backward_runs_latest_created_node_first():
    # torch runs (b * b).sum()'s branch last here (it was created first): Boom fails
    # before it, and b.grad stays None
    Boom = _raising_fn(st)
    a = st.tensor([1., 2.], requires_grad=True)
    b = st.tensor([3., 4.], requires_grad=True)
    loss = (b * b).sum() + Boom.apply(a).sum()
    with pytest.raises(RuntimeError, match="boom"):
        loss.backward()
    assert _grads([a, b]) == [None, None]
    a.grad = b.grad = None
    loss = Boom.apply(a).sum() + (b * b).sum()
    with pytest.raises(RuntimeError, match="boom"):
        loss.backward()
    assert _grads([a, b]) == [None, [6., 8.]]


def test_failed_backward_hook_on_one_branch():
    a = st.tensor([1., 2., 3.], requires_grad=True)
    b = st.tensor([4., 5., 6.], requires_grad=True)
    y = a * 2
    w = y * b

    def hook(g):
        raise ValueError("hook failed")
    y.register_hook(hook)
    with pytest.raises(ValueError, match="hook failed"):
        (w.sum() + b.sum()).backward()
    assert _grads([a, b]) == [None, [3., 5., 7.]]



def test_leaf_grad_summed_before_accumulating():
    # .grad += (g1 + g2), as torch's AccumulateGrad, not (.grad + g1) + g2: in float32
    # 1e8 + 3 + 3 stays 1e8, 1e8 + 6 rounds to 100000008
    x = st.tensor([1.0], requires_grad=True)
    x.grad = st.tensor([1e8])
    (x * 3.0 + x * 3.0).sum().backward()
    assert x.grad.tolist() == [100000008.0]


def _random_graph(m, seed):
    rng = random.Random(seed)
    Boom = _raising_fn(m)
    leaves = [m.tensor([1., 2.], requires_grad=True) for _ in range(4)]
    vals = list(leaves)
    used = False
    for _ in range(rng.randint(2, 7)):
        op = rng.choice(["mul", "add", "boom", "exp"])
        a, b = rng.choice(vals), rng.choice(vals)
        if op == "mul":
            v = a * b
        elif op == "add":
            v = a + b
        elif op == "exp":
            v = (a * 0.1).exp()
        elif used:
            v = a * 3
        else:
            v, used = Boom.apply(a), True
        vals.append(v)
    if not used:
        vals.append(Boom.apply(rng.choice(vals)))
    picks = rng.sample(vals, min(rng.randint(1, len(vals)), 3))
    return sum(p.sum() for p in picks), leaves


def test_failed_backward_random_graphs_match_torch():
    torch = pytest.importorskip("torch")
    for seed in range(200):
        out = []
        for m in (torch, st):
            loss, leaves = _random_graph(m, seed)
            try:
                loss.backward()
            except RuntimeError:
                pass
            out.append([None if t.grad is None else [round(v, 4) for v in t.grad.tolist()]
                        for t in leaves])
        assert out[0] == out[1], seed


# ---- in-place ops whose operand overlaps the written tensor as torch cannot tell
# (TOO_HARD): torch's vectorized loop reads one vector (64 bytes with AVX-512) at a
# time, each read before it is written, then the rest of the row element by element

_OVERLAP_OPS = {
    "add_": lambda o, a: o.add_(a),
    "sub_": lambda o, a: o.sub_(a),
    "mul_": lambda o, a: o.mul_(a),
    "copy_": lambda o, a: o.copy_(a),
    "add_alpha": lambda o, a: o.add_(a, alpha=2),
    "addcmul_": lambda o, a: o.addcmul_(a, a),
    "lerp_": lambda o, a: o.lerp_(a, 0.5),
    "clamp_min": lambda o, a: o.clamp_(min=a),
}


def _shifted(m, dtype, rows, n, shift=1):
    x = (m.arange(rows * (n + shift)) % 5 + 1).to(getattr(m, dtype)).reshape(rows, n + shift)
    return x, x[:, shift:], x[:, :-shift]


@pytest.mark.parametrize("op,dtype", [
    (op, dt) for op in sorted(_OVERLAP_OPS)
    for dt in ("float32", "float64", "int64", "int32", "int16", "int8")
    if op != "lerp_" or dt.startswith("float")])
def test_overlap_shifted_rows_match_torch(op, dtype):
    torch = pytest.importorskip("torch")
    for n in (7, 16, 24, 33, 64, 100, 130):
        got = []
        for m in (torch, st):
            x, o, a = _shifted(m, dtype, 3, n)
            _OVERLAP_OPS[op](o, a)
            got.append(x.tolist())
        assert got[0] == got[1], n


def _vector_model(rows, n, vec):
    """x[:, 1:].add_(x[:, :-1]) as torch's vectorized loop writes it: whole vectors of
    `vec` elements from each row's start, each read before written, then one by one."""
    out = []
    for r in range(rows):
        x = [(r * (n + 1) + i) % 5 + 1 for i in range(n + 1)]
        i = 0
        while i + vec <= n:
            new = [x[i + 1 + j] + x[i + j] for j in range(vec)]
            x[i + 1:i + 1 + vec] = new
            i += vec
        for j in range(i, n):
            x[j + 1] += x[j]
        out.append(x)
    return out


def test_overlap_shifted_rows_vector_blocks():
    vec = st._C._overlap_vec_bytes() // 4
    for n in (7, 16, 33, 100):
        x, o, a = _shifted(st, "float32", 2, n)
        o.add_(a)
        assert x.tolist() == _vector_model(2, n, vec), n


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
def test_overlap_broadcast_operand_read_once_per_row(dtype):
    # x.add_(x[:, c:c + 1]): the broadcast operand is read at the row's start for all
    # of torch's vectors, then again for each element of the rest
    torch = pytest.importorskip("torch")
    for n in (8, 20, 31, 40, 70, 100):
        for c in (0, 3, 17):
            if c >= n:
                continue
            got = []
            for m in (torch, st):
                x = (m.arange(2 * n) % 7 + 1).to(getattr(m, dtype)).reshape(2, n)
                x.add_(x[:, c:c + 1])
                got.append(x.tolist())
            assert got[0] == got[1], (n, c)


def test_overlap_rows_coalesced_as_torch():
    # rows of 3 x n elements in a row of memory: torch's kernel loop gets them as one
    torch = pytest.importorskip("torch")
    for n in (5, 11, 40):
        got = []
        for m in (torch, st):
            base = (m.arange(2 * (3 * n + 5)) % 9).to(m.float32).reshape(2, 3 * n + 5)
            base[:, 1:3 * n + 1].view(2, 3, n).add_(base[:, 0:3 * n].view(2, 3, n))
            got.append(base.tolist())
        assert got[0] == got[1], n


# ---- under autograd: torch saves such an operand as it is, and the write moves its
# version: the backward that reads it raises (the written tensor's own old value is
# saved as a copy: x.mul_(y) of two storages is fine)

@pytest.mark.parametrize("write", [
    lambda x: x[:, :3].mul_(x[:, 3:]),
    lambda x: x.mul_(x),
    lambda x: x[:, :3].div_(x[:, 3:]),
])
def test_inplace_saved_operand_of_written_storage_raises_at_backward(write):
    b = st.arange(1., 13.).reshape(2, 6).requires_grad_()
    x = b * 1
    write(x)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: .* is at "
                                           r"version 1; expected version 0 instead"):
        x.sum().backward()


def test_inplace_unsaved_or_other_storage_operand_keeps_gradients():
    b = st.arange(1., 13.).reshape(2, 6).requires_grad_()
    x = b * 1
    x[:, :3].add_(x[:, 3:])                  # add saves nothing
    x.sum().backward()
    assert b.grad.tolist() == [[1., 1., 1., 2., 2., 2.]] * 2
    b.grad = None
    x = b * 1
    x[:, :3].mul_(x[:, 3:].clone())          # another storage
    x.sum().backward()
    assert b.grad.tolist()[0] == [4., 5., 6., 2., 3., 4.]


# ---- the same overlapping writes with a gradient involved: torch's kernel writes the
# values it writes without one; its autograd records the op as of the operands' old values

_GRAD_OVERLAP = {
    "add_": lambda x: x[:, 1:].add_(x[:, :-1]),
    "add_alpha": lambda x: x[:, 1:].add_(x[:, :-1], alpha=2),
    "lerp_": lambda x: x[:, 1:].lerp_(x[:, :-1], 0.3),
    "copy_": lambda x: x[:, 1:].copy_(x[:, :-1]),
    "broadcast": lambda x: x.add_(x[:, :1]),
    "setitem": lambda x: x[:, 1:].__setitem__(slice(None), x[:, :-1]),
}


@pytest.mark.parametrize("op", sorted(_GRAD_OVERLAP))
def test_overlap_with_grad_values_and_gradients_match_torch(op):
    torch = pytest.importorskip("torch")
    for n in (7, 33):
        got = []
        for m in (torch, st):
            b = (m.arange(3 * (n + 1)).to(m.float32).reshape(3, n + 1) / 3).requires_grad_()
            x = b.clone()
            _GRAD_OVERLAP[op](x)
            (x * m.arange(x.numel()).reshape(x.shape).float()).sum().backward()
            got.append((x.detach().reshape(-1).tolist(), b.grad.reshape(-1).tolist()))
        assert got[0][0] == pytest.approx(got[1][0], rel=1e-6), n
        assert got[0][1] == pytest.approx(got[1][1], rel=1e-6), n


# ---- addr_: torch runs it as an elementwise op over (self, vec1 as a column, vec2)

_ADDR_CASES = {
    "row_of_self": lambda a: a.addr_(a[0], a[1]),                 # dense, some shared: error
    "col_and_row": lambda a: a.addr_(a[:, 0], a[1]),
    "two_columns": lambda a: a.addr_(a[:, 0], a[:, 1]),           # TOO_HARD: torch's order
    "diagonal": lambda a: a.addr_(a.diagonal(), a.diagonal()),
    "beta_alpha": lambda a: a.addr_(a[:, 0], a[:, 1], beta=2, alpha=3),
    "disjoint": lambda a: a[:3].addr_(a[3, :3], a[4]),
}


@pytest.mark.parametrize("case", sorted(_ADDR_CASES))
@pytest.mark.parametrize("n", [6, 20, 40])
def test_addr_inplace_overlap_matches_torch(case, n):
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, st):
        a = (m.arange(n * n) % 7 + 1).to(m.float32).reshape(n, n)
        try:
            _ADDR_CASES[case](a)
            got.append(a.tolist())
        except RuntimeError as e:
            assert "refer to a single memory location" in str(e)
            got.append("overlap error")
    assert got[0] == got[1]


# ---- found by scripts/sweep_scalars.py: integer division by zero, scalar overflow

_INT_ZERO_DIV = {
    "floor_divide": lambda m, x: m.floor_divide(x, 0),
    "floor_divide_tensor": lambda m, x: m.floor_divide(x, m.tensor([1, 0, 2], dtype=x.dtype)),
    "div_trunc": lambda m, x: m.div(x, 0, rounding_mode="trunc"),
    "div_floor_0d": lambda m, x: m.div(x, m.tensor(0), rounding_mode="floor"),
    "remainder": lambda m, x: m.remainder(x, 0),
    "fmod_tensor": lambda m, x: m.fmod(x, m.tensor([1, 0, 1], dtype=x.dtype)),
    "floordiv_op": lambda m, x: x // 0,
    "mod_op": lambda m, x: x % m.zeros(3, dtype=x.dtype),
    "rfloordiv": lambda m, x: 5 // x,
    "rmod": lambda m, x: 5 % x,
    "inplace": lambda m, x: x.floor_divide_(m.tensor(0)),
    "wraps_to_zero": lambda m, x: x.to(m.int8) // 256,          # 256 as int8 is 0
    "0d_wraps_to_zero": lambda m, x: x.to(m.int8) // m.tensor(256),
    "uint8_by_false": lambda m, x: x.to(m.uint8) // False,
}


@pytest.mark.parametrize("case", sorted(_INT_ZERO_DIV))
def test_integer_division_by_zero_raises(case):
    x = st.tensor([5, -7, 0], dtype=st.int32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _INT_ZERO_DIV[case](st, x)


def test_integer_division_by_zero_torch_agrees():
    torch = pytest.importorskip("torch")
    for case, fn in _INT_ZERO_DIV.items():
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(torch, torch.tensor([5, -7, 0], dtype=torch.int32))


def test_division_without_zero_or_in_floats_does_not_raise():
    x = st.tensor([5, -7, 0], dtype=st.int32)
    assert (x // st.tensor([2, 2, 3], dtype=st.int32)).tolist() == [2, -4, 0]
    assert (x % 3).tolist() == [2, 2, 0]
    assert st.div(x, 0).tolist()[:2] == [float("inf"), float("-inf")]
    assert (x // st.tensor([0.0, 1.0, 1.0])).tolist()[0] == float("inf")
    assert (st.zeros(0, dtype=st.int64) // st.zeros(0, dtype=st.int64)).tolist() == []
    assert (st.zeros(0, dtype=st.int64) // 0).tolist() == []        # nothing divided
    assert st.nonzero(st.zeros((2, 0, 3))).shape == (0, 3)


_OVERFLOW = {
    "clamp_int8": lambda m: m.clamp(m.tensor([1], dtype=m.int8), 300),
    "clamp_int8_low": lambda m: m.clamp(m.tensor([1], dtype=m.int8), -129),
    "clamp_uint8": lambda m: m.clamp(m.tensor([1], dtype=m.uint8), None, 256),
    "clamp_int32": lambda m: m.clamp(m.tensor([1], dtype=m.int32), None, 2 ** 40),
    "clamp_f32": lambda m: m.clamp(m.tensor([1.0]), None, 1e300),
    "clamp_f16": lambda m: m.clamp(m.tensor([1.0], dtype=m.float16), 65519.0),
    "clamp_bf16": lambda m: m.clamp(m.tensor([1.0], dtype=m.bfloat16), -1e300),
    "clamp_int_float_bound": lambda m: m.clamp(m.tensor([1]), None, 1e300),   # float32 result
    "clamp_": lambda m: m.tensor([1], dtype=m.int8).clamp_(300),
    "clamp_max": lambda m: m.clamp_max(m.tensor([1.0]), 1e300),
    "masked_fill_f16": lambda m: m.zeros(1, dtype=m.float16).masked_fill(m.tensor([True]), 1e5),
    "fill_f32": lambda m: m.zeros(1).fill_(1e300),
}


@pytest.mark.parametrize("case", sorted(_OVERFLOW))
def test_scalar_overflowing_the_dtype_raises(case):
    with pytest.raises(RuntimeError, match="value cannot be converted to type .* without overflow"):
        _OVERFLOW[case](st)


def test_scalar_overflow_cases_torch_agrees():
    torch = pytest.importorskip("torch")
    for case, fn in _OVERFLOW.items():
        with pytest.raises(RuntimeError, match="without overflow"):
            fn(torch)


def test_scalars_that_fit_or_are_not_checked():
    assert st.clamp(st.tensor([1], dtype=st.uint8), -1).tolist() == [255]      # wraps
    assert st.clamp(st.tensor([1], dtype=st.int8), 300.0).tolist() == [300.0]  # float32
    assert st.clamp(st.tensor([1.0], dtype=st.float16), float("inf")).tolist() == [float("inf")]
    assert st.zeros(1, dtype=st.bfloat16).fill_(1e300).tolist() == [float("inf")]
    assert st.full((1,), 1e5, dtype=st.float16).tolist() == [float("inf")]


def test_clamp_bool():
    # a bool result has no clamp kernel in torch; an int or float bound promotes first
    with pytest.raises(NotImplementedError, match="clamp_min_scalar_cpu"):
        st.clamp(st.tensor([True]), False)
    r = st.clamp(st.tensor([True, False]), 2)
    assert r.dtype is st.int64 and r.tolist() == [2, 2]
    r = st.clamp(st.tensor([True, False]), 0.5, -3)
    assert r.dtype is st.float32 and r.tolist() == [-3.0, -3.0]


# ---- addcmul / addcdiv / lerp: torch's CPU kernels round as they compute (float32 opmath,
# a fused multiply-add for addcmul and lerp), value for value

_ROUNDING = {
    "addcmul": lambda m, x, y, z: m.addcmul(x, y, z, value=0.3),
    "addcmul_1": lambda m, x, y, z: m.addcmul(x, y, z),
    "addcmul_": lambda m, x, y, z: x.clone().addcmul_(y, z, value=-2),
    "addcdiv": lambda m, x, y, z: m.addcdiv(x, y, z, value=0.3),
    "lerp_small": lambda m, x, y, z: m.lerp(x, y, 0.3),
    "lerp_large": lambda m, x, y, z: m.lerp(x, y, 0.7),
    "lerp_tensor": lambda m, x, y, z: m.lerp(x, y, z * 0.2),
    "lerp_": lambda m, x, y, z: x.clone().lerp_(y, 0.1),
}


@pytest.mark.parametrize("op", sorted(_ROUNDING))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fused_rounding_matches_torch(op, dtype):
    torch = pytest.importorskip("torch")
    rng = random.Random(op + dtype)
    cols = [[rng.gauss(0, 1) for _ in range(2000)] for _ in range(3)]
    cols[2] = [v + 3 for v in cols[2]]
    got = []
    for m in (torch, st):
        x, y, z = (m.tensor(c, dtype=m.float32).to(getattr(m, dtype)) for c in cols)
        got.append(_ROUNDING[op](m, x, y, z).float().tolist())
    assert got[0] == got[1]


def test_addcmul_fused_known_value():
    # 150 + 22053 * 22053 = 486334959 exactly: one rounding gives 486334944 (torch's);
    # the product rounded first (486334816), then the sum, gives 486334976
    o, a = st.full((3,), 150.0), st.full((3,), 22053.0)
    assert st.addcmul(o, a, a).tolist() == [486334944.0] * 3
