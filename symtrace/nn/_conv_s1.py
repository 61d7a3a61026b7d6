"""Stride-1 convolution with its input gradient as a convolution (_ConvS1), for conv1d/2d/3d
(nn/_conv.py's _conv) with groups 1, every stride 1, 2..._VIEWS_MAX_K kernel points,
padding at most dilation * (kernel - 1) on each side and at least half as many input
channels as output channels, when the input needs a gradient and no dynamic-shape
translation is running (a Function's traced backward keeps the traced sizes).

The forward is _conv's: y = weight [OC, C*K] @ im2col(x) [N, C*K, L]. Differentiated as
those ops, the input gradient is col2im(weight^T @ g): a [N, C*K, L] product (K times the
input's size) and K adds of it into a padded buffer, then a crop. Here it is the stride-1
identity grad_x = conv(g, weight with in/out channels swapped and every spatial dim
flipped, dilation d, padding (d*(k-1) - left, d*(k-1) - right)): an im2col of g and a
product that writes [N, C, L] directly (bench/micro/resnet_step.py compiled, one thread:
about 2 ms less CPU time a step of 25). The weight gradient is the same as before: the sum
over the batch of g [OC, L] @ im2col(x)^T.

Batch chunks: when the whole batch's im2col would pass _CHUNK_MIN bytes, the forward (and so
also the input gradient, a _ConvS1 itself) builds im2col and runs the product per chunk of
samples whose im2col fits in _CHUNK_BYTES (about L2's size), the chunks' outputs
concatenated: the product then reads columns just written, still in cache, not a buffer of
several MB streamed back from memory (ResNet's 32x32 layers: a 9.4 MB buffer, 4 chunks of
2.4 MB: about 0.8 ms less CPU a layer and step). Each sample's product is the same, and
the weight gradient sums the per-sample products over the batch in one sum as before, so
the values are the unchunked ones bit for bit.

Both gradients are made of differentiable ops (the input gradient through _ConvS1 again),
so a backward with create_graph=True is differentiable; there the im2col of x is taken
again from the saved input (the forward's copy is kept only for a plain backward).
"""
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from .. import _ops
from ._conv import _VIEWS_MAX_K, _im2col, _prod

# calls of the stride-1 path and of its batch-chunked forward (tests check that they ran)
STATS = {"forward": 0, "backward": 0, "chunked": 0}

# batch chunks (see the module docstring): im2col bytes of the whole batch past which the
# forward is chunked, and the most im2col bytes of one chunk
_CHUNK_MIN = 6 << 20
_CHUNK_BYTES = 5 << 19


def s1_ok(k, groups, stride, dilation, ksize, pads):
    """Whether _ConvS1 applies (see the module docstring)."""
    if groups != 1 or any(s != 1 for s in stride):
        return False
    if not 1 < _prod(ksize) <= _VIEWS_MAX_K:
        return False
    return all(0 <= pads[i][0] <= dilation[i] * (ksize[i] - 1) and 0 <= pads[i][1] <= dilation[i] * (ksize[i] - 1)
               for i in range(k))


def _product(weight, cols, blocks):
    """weight [OC, C, *ksize] @ cols [N, C, K, L] -> [N, OC, *blocks]."""
    n, c, K, L = cols.shape
    oc = weight.shape[0]
    return weight.reshape(oc, c * K).matmul(cols.reshape(n, c * K, L)).reshape((n, oc) + tuple(blocks))


def _chunks(x, ksize, blocks):
    """[(start, stop)] of the batch chunks of x [N, C, *S] (one when not chunked)."""
    n, c = x.shape[0], x.shape[1]
    per = c * _prod(ksize) * _prod(blocks) * x.element_size()
    if n < 2 or n * per <= _CHUNK_MIN:
        return [(0, n)]
    step = max(1, _CHUNK_BYTES // per)
    return [(i, min(i + step, n)) for i in range(0, n, step)]


class _ConvS1(Function):
    """(x [N, C, *S], weight [OC, C, *ksize]) -> [N, OC, *blocks], stride 1, groups 1."""
    @staticmethod
    def forward(ctx, x, weight, dilation, pads, blocks):
        k = len(blocks)
        ksize = tuple(weight.shape[2:])
        ctx.geom = (dilation, pads, blocks)
        STATS["forward"] += 1
        parts = _chunks(x, ksize, blocks)
        if len(parts) == 1:
            cols = _im2col(x, ksize, (1,) * k, dilation, pads, blocks)
            ctx.save_for_backward(x, weight, cols)
            return _product(weight, cols, blocks)
        STATS["chunked"] += 1
        cols, ys = [], []
        for a, b in parts:
            cols.append(_im2col(x[a:b], ksize, (1,) * k, dilation, pads, blocks))
            ys.append(_product(weight, cols[-1], blocks))
        ctx.save_for_backward(x, weight, *cols)
        return _ops.cat(ys, 0)

    @staticmethod
    def backward(ctx, g):
        x, weight, *cols = ctx.saved_tensors
        dilation, pads, blocks = ctx.geom
        k = len(blocks)
        ksize = tuple(weight.shape[2:])
        n, oc = g.shape[0], g.shape[1]
        STATS["backward"] += 1
        gx = gw = None
        if ctx.needs_input_grad[0]:
            wt = weight.transpose(0, 1).flip(tuple(range(2, 2 + k)))
            q = []   # (no generator: a traced backward breaks the graph on one)
            for i in range(k):
                q.append((dilation[i] * (ksize[i] - 1) - pads[i][0], dilation[i] * (ksize[i] - 1) - pads[i][1]))
            gx = conv_s1(g, wt, dilation, q, tuple(x.shape[2:]))
        if ctx.needs_input_grad[1]:
            if is_grad_enabled():   # create_graph: cols again, differentiable in x
                cols = [_im2col(x, ksize, (1,) * k, dilation, pads, blocks)]
            c, K, L = cols[0].shape[1], cols[0].shape[2], cols[0].shape[3]
            if len(cols) == 1:
                gw = g.reshape(n, oc, L).matmul(cols[0].reshape(n, c * K, L).transpose(1, 2))
            else:   # per chunk, the per-sample products concatenated: one sum over the batch
                parts, a = [], 0
                for cc in cols:
                    b = a + cc.shape[0]
                    parts.append(g[a:b].reshape(b - a, oc, L).matmul(cc.reshape(b - a, c * K, L).transpose(1, 2)))
                    a = b
                gw = _ops.cat(parts, 0)
            gw = gw.sum(0).reshape(weight.shape)
        return gx, gw, None, None, None


def conv_s1(x, weight, dilation, pads, blocks):
    """The stride-1 convolution of x [N, C, *S] by weight [OC, C, *ksize] (dilation and
    (left, right) pads per spatial dim) -> [N, OC, *blocks]."""
    pp = []
    for p in pads:
        pp.append((p[0], p[1]))
    return _ConvS1.apply(x, weight, tuple(dilation), tuple(pp), tuple(blocks))

