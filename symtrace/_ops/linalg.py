"""Matrix products and matrix structure: matmul, mm, bmm, outer, addmm, baddbmm, einsum,
tensordot, kron; tril/triu, diag_embed, diagonal, diag, trace and block_diag."""
import builtins
import collections
import math

from .. import _C
from .._dtype import bfloat16, bool_, float16, float32
from ._core import HAS_BIAS, _attrs, _check_int, _check_tensor, _is_tensor, _op, _tname, _wrap
from .elementwise import add, clamp, eq, ge, le, minimum, mul, sub, to_dtype, where
from .creation import _scalar0, _zero_of, arange, full, zeros
from .indexing import index_select
from .shape import _dim_list, cat, movedim
from .reductions import sum
from ..amp._policy import autocast_op, _cast_all, _device_type


# ---------------- matmul ----------------
def matmul(input, other):
    """matmul(input, other): 1-D, 2-D and batched with broadcasting; a sparse COO operand
    goes to symtrace.sparse."""
    if getattr(type(input), "_st_sparse", False) or getattr(type(other), "_st_sparse", False):
        from ..sparse import mm as sparse_mm
        return input.matmul(other) if getattr(type(input), "_st_sparse", False) else sparse_mm(input, other)
    _check_tensor(input, "matmul")
    _check_tensor(other, "matmul", "other")
    return _op(_C.OP_MATMUL, (input, other))


def mm(input, mat2):
    """mm(input, mat2): the product of two matrices, no broadcasting (as torch.mm); a sparse
    COO operand goes to symtrace.sparse.mm."""
    if getattr(type(input), "_st_sparse", False) or getattr(type(mat2), "_st_sparse", False):
        from ..sparse import mm as sparse_mm
        return sparse_mm(input, mat2)
    _check_tensor(input, "mm")
    _check_tensor(mat2, "mm", "mat2")
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    _mat_check(input, mat2)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_tname(input.dtype).lower()} != {_tname(mat2.dtype).lower()}")
    return matmul(input, mat2)


def _mat_check(a, b):
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} "
                           f"and {b.shape[0]}x{b.shape[1]})")


def bmm(input, mat2):
    """bmm(input, mat2): batched products of 3-D tensors with equal batch sizes, no
    broadcasting (as torch.bmm)."""
    _check_tensor(input, "bmm")
    _check_tensor(mat2, "bmm", "mat2")
    _bmm_check(input, mat2)
    return matmul(input, mat2)


def _bmm_check(b1, b2):
    if b1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b2.shape[0] != b1.shape[0] or b2.shape[1] != b1.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1.shape[0]}, {b1.shape[2]}] but got: [{b2.shape[0]}, {b2.shape[1]}].")
    if b1.dtype is not b2.dtype:
        raise RuntimeError(f"expected scalar type {_tname(b1.dtype)} but found {_tname(b2.dtype)}")


# ---- triangles ----
def _tri(input, diagonal, lower, fn):
    _check_tensor(input, fn)
    _check_int(diagonal, fn, "diagonal", 2)
    if input.dim() < 2:
        raise RuntimeError(f"{fn}: input tensor must have at least 2 dimensions")
    m, n = input.shape[-2:]
    rows = arange(m, device=input.device).unsqueeze(1) + diagonal
    cols = arange(n, device=input.device)
    keep = le(cols, rows) if lower else ge(cols, rows)
    # row-major, as torch's tril/triu (where would keep a batch dim's memory order)
    return where(keep, input, _scalar0(input, False if input.dtype is bool_ else 0)).contiguous()


def tril(input, diagonal=0):
    """tril(input, diagonal=0): the lower triangle (col - row <= diagonal) of the last
    two dims, zeros elsewhere; batched; as torch.tril."""
    return _tri(input, diagonal, True, "tril")


def triu(input, diagonal=0):
    """triu(input, diagonal=0): the upper triangle (col - row >= diagonal) of the last
    two dims, zeros elsewhere; batched; as torch.triu."""
    return _tri(input, diagonal, False, "triu")


# ---- products ----
def outer(input, vec2):
    """outer(input, vec2): the outer product of two 1-D tensors (as torch.outer)."""
    _check_tensor(input, "outer")
    _check_tensor(vec2, "outer", "vec2")
    if input.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.dim()}-D")
    if vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    return mul(input.unsqueeze(1), vec2)


ger = outer


def _beta_alpha_check(input, psh):
    """input must broadcast to the product's shape psh (never the reverse)."""
    ish = tuple(input.shape)
    if len(ish) > len(psh) or builtins.any(a != 1 and a != b for a, b in zip(ish[::-1], psh[::-1])):
        input.expand(psh)                  # raises expand's error


def _beta_alpha_sum(input, prod, beta, alpha):
    """beta * input + alpha * prod, input broadcast to prod's shape (never the reverse);
    beta == 0 ignores input's values (nan included), as torch does."""
    if not prod.dtype.is_floating_point:   # torch takes beta and alpha as integers here
        beta, alpha = int(beta), int(alpha)
    if input.dtype is not prod.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tname(input.dtype)} "
                           f"and {_tname(prod.dtype)}")
    _beta_alpha_check(input, tuple(prod.shape))
    # a broadcasting add, not an expand to prod's sizes: under dynamic shapes those would
    # be constants of the graph (HF's Conv1D, an addmm over batch * seq rows, specialized)
    if alpha != 1:
        prod = mul(prod, alpha)
    if beta == 0:
        return prod
    return add(input if beta == 1 else mul(input, beta), prod)


@autocast_op("lower")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """addmm(input, mat1, mat2, *, beta=1, alpha=1) = beta * input + alpha * (mat1 @ mat2);
    as torch.addmm."""
    _check_tensor(input, "addmm")
    _check_tensor(mat1, "addmm", "mat1")
    _check_tensor(mat2, "addmm", "mat2")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
    _mat_check(mat1, mat2)
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_tname(mat1.dtype).lower()} != {_tname(mat2.dtype).lower()}")
    if mat1.dtype in _HALF and input.dtype is mat1.dtype:
        return _half_addmm(input, mat1, mat2, beta, alpha)
    return _beta_alpha_sum(input, matmul(mat1, mat2), beta, alpha)


_HALF = (float16, bfloat16)


def _half_addmm(input, mat1, mat2, beta, alpha):
    """addmm of float16 / bfloat16 matrices as torch's: input added to the float32 product
    and the sum rounded once (a product rounded first, then the sum, can differ in the last
    bit). beta = alpha = 1: linear's bias (fusion/decompose.c adds it to the float32
    product); else in float32 (the products of half values are exact there)."""
    ish, psh = tuple(input.shape), (mat1.shape[0], mat2.shape[1])
    if len(ish) > 2 or builtins.any(a != 1 and a != b for a, b in zip(ish[::-1], psh[::-1])):
        input.expand(psh)                  # raises expand's error
    if beta == 1 and alpha == 1:
        return _op(_C.OP_LINEAR, (mat1, mat2.t(), input), _attrs(flags=HAS_BIAS))
    return _half_beta_alpha_sum(input, mat1, mat2, beta, alpha)


def _half_beta_alpha_sum(input, a, b, beta, alpha):
    """beta * input + alpha * (a @ b) of float16 / bfloat16 operands in float32, rounded
    once (torch's addmm / baddbmm / addmv add to the float32 accumulator): the products of
    half values are exact in float32."""
    dt = a.dtype
    # the float32 product stays float32 under autocast (its own caller's policy chose dt)
    prev = [(dev, _C._get_autocast(dev)) for dev in ("cpu", "cuda")]
    for dev, (on, low) in prev:
        if on:
            _C._set_autocast(dev, False, low)
    try:
        prod = matmul(to_dtype(a, float32), to_dtype(b, float32))
    finally:
        for dev, (on, low) in prev:
            if on:
                _C._set_autocast(dev, on, low)
    return to_dtype(_beta_alpha_sum(to_dtype(input, float32), prod, beta, alpha), dt)


@autocast_op("lower")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(input, batch1, batch2, *, beta=1, alpha=1) = beta * input + alpha * bmm(batch1, batch2);
    as torch.baddbmm."""
    _check_tensor(input, "baddbmm")
    _check_tensor(batch1, "baddbmm", "batch1")
    _check_tensor(batch2, "baddbmm", "batch2")
    _bmm_check(batch1, batch2)
    if batch1.dtype in _HALF and input.dtype is batch1.dtype:
        _beta_alpha_check(input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
        return _half_beta_alpha_sum(input, batch1, batch2, beta, alpha)
    return _beta_alpha_sum(input, matmul(batch1, batch2), beta, alpha)


# ---- einsum ----
def _einsum_term(text, base, what):
    """Labels of one einsum term: letters, and None for an ellipsis."""
    labels, i = [], 0
    while i < len(text):
        c = text[i]
        if c == ".":
            if text[i:i + 3] != "..." or None in labels:
                why = "for which an ellipsis was already found" if None in labels else \
                    "that is not part of any ellipsis (...)"
                raise RuntimeError(f"einsum(): found '.' for {what} {why}")
            labels.append(None)
            i += 3
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            if c != " ":
                raise RuntimeError(f"einsum(): invalid subscript given at index {base + i} in the "
                                   "equation string, subscripts must be in [a-zA-Z]")
        else:
            labels.append(c)
        i += 1
    return labels


def _einsum_sum(t, keys, drop):
    """Sums t over the keys in drop; returns (t, remaining keys)."""
    pos = [i for i, k in enumerate(keys) if k in drop]
    if not pos:
        return t, keys
    return sum(t, tuple(pos)), [k for k in keys if k not in drop]


def _einsum_align(t, keys, order):
    """t permuted to order's sequence of its keys, unit dims for order's keys it lacks."""
    perm = [keys.index(k) for k in order if k in keys]
    if perm != list(range(len(perm))):
        t = t.permute(*perm)
    for i, k in enumerate(order):
        if k not in keys:
            t = t.unsqueeze(i)
    return t


def _einsum_diagonals(t, keys):
    """A label repeated within one operand ('ii->i', 'bii->b'): t's diagonal over those dims
    (torch.diagonal's view, moved last), once per label; returns (t, keys without repeats)."""
    for k in list(dict.fromkeys(keys)):
        while keys.count(k) > 1:
            i = keys.index(k)
            j = keys.index(k, i + 1)
            t = diagonal(t, 0, i, j)
            keys = [x for n, x in enumerate(keys) if n not in (i, j)] + [k]
    return t, keys


def _einsum_pair(a, ak, b, bk, later):
    """Contracts two operands, keeping the keys in later: batch keys (both sides, kept),
    contracted keys (both sides, summed) and each side's free keys; one batched matmul
    (a product with broadcasting when nothing is contracted). Operands of different dtypes:
    the product promotes them (torch's mul); a matmul refuses them, as torch's bmm, after
    autocast's cast (float32 and 16-bit operands to its dtype) when it is on."""
    mixed = (a.dtype, b.dtype) if a.dtype is not b.dtype else None
    a, ak = _einsum_sum(a, ak, {k for k in ak if k not in bk and k not in later})
    b, bk = _einsum_sum(b, bk, {k for k in bk if k not in ak and k not in later})
    batch = [k for k in ak if k in bk and k in later]
    contr = [k for k in ak if k in bk and k not in later]
    afree = [k for k in ak if k not in bk]
    bfree = [k for k in bk if k not in ak]
    order = batch + afree + bfree
    if not contr:
        return mul(_einsum_align(a, ak, order), _einsum_align(b, bk, order)), order
    dev = _device_type([a, b])
    on, low = _C._get_autocast(dev) if dev in ("cpu", "cuda") else (False, None)
    if on:                            # torch's bmm casts under autocast before its check
        a, b = _cast_all(a, dev, low), _cast_all(b, dev, low)
    if mixed and a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_tname(a.dtype)} but found {_tname(b.dtype)}")
    for k in contr:                   # a size-1 side broadcasts: sum the other side first
        sa, sb = a.shape[ak.index(k)], b.shape[bk.index(k)]
        if sa != sb:
            if sa == 1:
                b = sum(b, bk.index(k), True)
            else:
                a = sum(a, ak.index(k), True)
    if a.dtype is not b.dtype:        # an integer side summed first is int64: so is the
        dt = _C.result_type(a, b)     # product (as torch's, where it does not refuse)
        a, b = to_dtype(a, dt), to_dtype(b, dt)
    a = _einsum_align(a, ak, batch + afree + contr)
    b = _einsum_align(b, bk, batch + contr + bfree)
    nb, na = len(batch), len(afree)
    fa, fb = tuple(a.shape[nb:nb + na]), tuple(b.shape[nb + len(contr):])
    kk = math.prod(a.shape[nb + na:])
    a = a.reshape(tuple(a.shape[:nb]) + (math.prod(fa), kk))
    b = b.reshape(tuple(b.shape[:nb]) + (kk, math.prod(fb)))
    # bools have no matmul; contracted dims of size 1 are a product (torch's too)
    r = mul(a, b) if kk == 1 and a.dtype is bool_ else matmul(a, b)
    return r.reshape(tuple(r.shape[:nb]) + fa + fb), order


def _einsum_sublist_label(k):
    if k is Ellipsis:
        return "..."
    if not 0 <= k < 52:
        raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
    return chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26)


def _einsum_sublist(args):
    """The sublist form einsum(op0, [0, 1], op1, [1, 2], [0, 2]) as (equation, operands):
    subscripts 0-25 are A-Z, 26-51 a-z, Ellipsis is '...' (as torch's)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at "
                         "least one operand and its subscripts list")
    ops, terms = list(args[0:len(args) - 1:2]), list(args[1::2])
    out = args[-1] if len(args) % 2 else None
    if len(args) % 2:
        terms = terms[:len(ops)]
    eq = ",".join("".join(_einsum_sublist_label(k) for k in t) for t in terms)
    if out is not None:
        eq += "->" + "".join(_einsum_sublist_label(k) for k in out)
    return eq, ops


def einsum(equation, *operands):
    """einsum(equation, *operands): Einstein summation ('ij,jk->ik'; an implicit output is
    the labels seen once, sorted; '...' broadcasts), operands also as one list, or in the
    sublist form einsum(op0, [0, 1], op1, [1, 2], [0, 2]). Pairs of operands contract left to
    right, each as one batched matmul. A label repeated within one operand takes that
    operand's diagonal first ('ii->i', 'bii->b'). As torch.einsum."""
    if _is_tensor(equation):
        equation, operands = _einsum_sublist((equation,) + operands)
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, t in enumerate(operands):
        _check_tensor(t, "einsum", f"operands[{i}]")
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    terms, base = [], 0
    for k, text in enumerate(lhs.split(",")):
        terms.append(_einsum_term(text, base, f"operand {k}"))
        base += len(text) + 1
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    nell = 0
    for i, (lab, t) in enumerate(zip(terms, operands)):
        nl = len(lab) - (None in lab)
        if None not in lab and nl != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) does not match "
                               f"the number of dimensions ({t.dim()}) for operand {i} and no ellipsis was given")
        if nl > t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) is more than "
                               f"the number of dimensions ({t.dim()}) for operand {i}")
        if None in lab:
            nell = builtins.max(nell, t.dim() - nl)
    ops, sizes, raw = [], {}, []
    for i, (lab, t) in enumerate(zip(terms, operands)):
        keys = []
        for c in lab:                 # ellipsis dims become keys 0..nell-1, right-aligned
            keys += list(range(nell - (t.dim() - len(lab) + 1), nell)) if c is None else [c]
        raw.append(keys)
        for j, (k, s) in enumerate(zip(keys, t.shape)):
            first = keys.index(k)
            if first != j:
                if t.shape[first] != s:
                    raise RuntimeError(f"einsum(): subscript {k} is repeated for operand {i} but "
                                       f"the sizes don't match, {s} != {t.shape[first]}")
                continue
            seen = sizes.setdefault(k, s)
            if seen != s and seen != 1 and s != 1:
                what = f"subscript {k}" if isinstance(k, str) else "an ellipsis dimension"
                raise RuntimeError(f"einsum(): {what} has size {s} for operand {i} which does not "
                                   f"broadcast with previously seen size {seen}")
            if seen == 1:
                sizes[k] = s
        ops.append(_einsum_diagonals(t, keys))
    if arrow < 0:
        counts = collections.Counter(k for keys in raw for k in keys if isinstance(k, str))
        out = list(range(nell)) + sorted(k for k, c in counts.items() if c == 1)
    else:
        out = []
        for c in _einsum_term(equation[arrow + 2:], arrow + 2, "output"):
            if c is None:
                out += list(range(nell))
                continue
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                                   "for any input operand")
            if c in out:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            out.append(c)
    t, keys = ops[0]
    for i in range(1, len(ops)):
        later = set(out).union(*(set(kk) for _, kk in ops[i + 1:]))
        t, keys = _einsum_pair(t, keys, ops[i][0], ops[i][1], later)
    t, keys = _einsum_sum(t, keys, {k for k in keys if k not in out})
    return _einsum_align(t, keys, out)


# ---- diagonals ----
def _embed_last(v, offset):
    """(..., n) -> (..., m, m), m = n + |offset|: v on the diagonal col - row == offset."""
    n = v.shape[-1]
    m = n + builtins.abs(offset)
    r = arange(m, device=v.device).unsqueeze(1)
    c = arange(m, device=v.device)
    on = eq(sub(c, r), offset)
    if n == 0:
        z = full(tuple(v.shape[:-1]) + (m, m), 0, dtype=v.dtype, device=v.device)
        if v.requires_grad:  # no element, but the result keeps v's history (as torch's)
            z = add(z, sum(v, -1, keepdim=True).unsqueeze(-1))
        return z
    idx = clamp(minimum(r, c), max=n - 1).reshape(-1)
    vals = index_select(v, v.dim() - 1, idx).reshape(tuple(v.shape[:-1]) + (m, m))
    return where(on, vals, _zero_of(v))


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """diag_embed(input, offset=0, dim1=-2, dim2=-1): a tensor whose diagonals (offset) in the
    planes (dim1, dim2) hold input's last dim, zeros elsewhere; as torch.diag_embed."""
    _check_tensor(input, "diag_embed")
    nd = input.dim() + 1
    d1, d2 = _wrap(dim1, nd, "diag_embed"), _wrap(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    v = input if input.dim() else input.reshape(1)
    return movedim(_embed_last(v, offset), (nd - 2, nd - 1), (d1, d2))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """diagonal(input, offset=0, dim1=0, dim2=1): the diagonal (col - row == offset) of the
    planes (dim1, dim2), appended as the last dim; as torch.diagonal, a view of input (writes
    into it reach input; its gradient flows to input). Inside a compiled function (a trace)
    it is made of views the trace can write back through: the planes moved last, merged
    into one dim, and a slice with step C + 1 of that dim. Where the merge would copy (neither
    dim's stride is the other's size times the other's stride) the trace fails: the graph
    breaks at the call, and the call runs eagerly."""
    _check_tensor(input, "diagonal")
    nd = input.dim()
    d1, d2 = _wrap(dim1, nd, "diagonal"), _wrap(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    sh, sd = tuple(input.shape), input.stride()
    R, C = sh[d1], sh[d2]
    L = builtins.max(0, builtins.min(R, C - offset) if offset >= 0 else builtins.min(R + offset, C))
    keep = [k for k in range(nd) if k not in (d1, d2)]
    if not _C._trace_active():
        start = input.storage_offset() + (offset * sd[d2] if offset >= 0 else -offset * sd[d1]) if L else \
            input.storage_offset()
        return input.as_strided(tuple(sh[k] for k in keep) + (L,),
                                tuple(sd[k] for k in keep) + (sd[d1] + sd[d2],), start)
    # the planes' (row, col) merge into one dim without a copy when row's stride is C times
    # col's; a plane stored transposed has the same diagonal as (dim2, dim1, -offset)
    if R > 1 and C > 1 and sd[d1] != C * sd[d2] and sd[d2] == R * sd[d1]:
        d1, d2, R, C, offset = d2, d1, C, R, -offset
    elif R > 1 and C > 1 and sd[d1] != C * sd[d2]:
        # the merge below would copy, and a write into the diagonal would miss input
        _C._trace_fail(f"diagonal: dims {d1} and {d2} of a tensor with strides {tuple(sd)} do "
                       "not merge into one dim, so the trace cannot state the diagonal as views "
                       "of its input")
    x = input if (d1, d2) == (nd - 2, nd - 1) else input.permute(*(keep + [d1, d2]))
    flat = x.reshape(tuple(x.shape[:-2]) + (R * C,))
    if L == 0:
        return flat[..., 0:0]
    first = builtins.max(0, -offset) * C + builtins.max(0, offset)   # row-major in the plane
    return flat[..., first:first + (L - 1) * (C + 1) + 1:C + 1]


def diag(input, diagonal=0):
    """diag(input, diagonal=0): a 1-D input -> the square matrix with it on that diagonal;
    a 2-D input -> that diagonal as a 1-D tensor (a copy); as torch.diag."""
    _check_tensor(input, "diag")
    _check_int(diagonal, "diag", "diagonal", 2)
    if input.dim() == 1:
        return _embed_last(input, diagonal)
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


@autocast_op("fp32", devices=("cpu",))
def trace(input):
    """trace(input) -> 0-d Tensor: the sum of a matrix's main diagonal (integers give
    int64); as torch.trace."""
    _check_tensor(input, "trace")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return sum(diagonal(input))


# ---- tensordot, kron, block_diag ----
def tensordot(a, b, dims=2, out=None):
    """tensordot(a, b, dims=2): contracts the last `dims` dims of a with the first of b,
    or the dims listed in dims = ([a dims], [b dims]); one matmul of the two operands
    permuted and flattened; as torch.tensordot."""
    _check_tensor(a, "tensordot", "a")
    _check_tensor(b, "tensordot", "b")
    if out is not None:
        raise NotImplementedError("tensordot(out=...) is not supported")
    if _is_tensor(dims):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists or an int")
        da, db = _dim_list(dims[0], "tensordot", "dims"), _dim_list(dims[1], "tensordot", "dims")
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    da = [_wrap(d, a.dim(), "tensordot") for d in da]
    db = [_wrap(d, b.dim(), "tensordot") for d in db]
    for x, y in zip(da, db):
        # a size-1 dim against a larger one broadcasts: the other side is summed over it
        # first, as torch's tensordot does
        if a.shape[x] != b.shape[y] and b.shape[y] == 1:
            a = a.sum(x, keepdim=True)
        elif a.shape[x] != b.shape[y] and a.shape[x] == 1:
            b = b.sum(y, keepdim=True)
        elif a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} "
                               f"in dim {x} and second has size {b.shape[y]} in dim {y}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_tname(a.dtype)} but found {_tname(b.dtype)}")
    fa = [k for k in range(a.dim()) if k not in da]
    fb = [k for k in range(b.dim()) if k not in db]
    sa, sb = [a.shape[k] for k in fa], [b.shape[k] for k in fb]
    K = math.prod(a.shape[k] for k in da)
    am = a.permute(*(fa + da)).reshape(math.prod(sa), K)
    bm = b.permute(*(db + fb)).reshape(K, math.prod(sb))
    return matmul(am, bm).reshape(tuple(sa + sb))


def kron(input, other):
    """kron(input, other): the Kronecker product (input's dims interleaved with other's, one
    broadcast product); as torch.kron."""
    _check_tensor(input, "kron")
    _check_tensor(other, "kron", "other")
    nd = builtins.max(input.dim(), other.dim())
    sa = (1,) * (nd - input.dim()) + tuple(input.shape)
    sb = (1,) * (nd - other.dim()) + tuple(other.shape)
    ia = builtins.sum(((s, 1) for s in sa), ())
    ib = builtins.sum(((1, s) for s in sb), ())
    return mul(input.reshape(ia), other.reshape(ib)).reshape(tuple(x * y for x, y in zip(sa, sb)))


def block_diag(*tensors):
    """block_diag(*tensors): the tensors (0-D, 1-D as a row, or 2-D) along the diagonal of a
    zero matrix, in their promoted dtype; as torch.block_diag."""
    mats = []
    for i, t in enumerate(tensors):
        _check_tensor(t, "block_diag", f"tensors[{i}]")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else (t.reshape(1, -1) if t.dim() == 1 else t))
    if not mats:
        return zeros(1, 0)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _C.result_type(_C.empty((1,), dt), m)
    ncols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    dev = mats[0].device
    for m in mats:
        r, c = m.shape
        pieces = [zeros(r, left, dtype=dt, device=dev), to_dtype(m, dt),
                  zeros(r, ncols - left - c, dtype=dt, device=dev)]
        rows.append(cat(pieces, 1))
        left += c
    return cat(rows, 0)
