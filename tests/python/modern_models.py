# tests/python/modern_models.py - tiny models written in the idioms of today's model
# code, for test_compile_modern_models.py: a Llama decoder (RMSNorm, rotary embeddings
# with cos/sin buffers and rotate_half, SwiGLU, grouped-query attention, causal SDPA,
# a preallocated KV cache for greedy decoding, sliced by an int position or written at
# tensor positions as a static cache), a T5 encoder layer (bucketed relative
# position bias, unscaled attention), a ViT (Conv2d patches, cls token, learned
# positions, pre-norm) and a top-2 mixture of experts (index_select / nonzero /
# index_add_). Each is written once against a library argument L (torch or symtrace).
import math


def build_llama(L, vocab=64, dim=32, n_heads=4, n_kv_heads=2, hidden=48, n_layers=2, max_pos=32,
                theta=10000.0, eps=1e-6):
    nn = L.nn
    F = nn.functional
    head_dim = dim // n_heads

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(L.ones(d))
            self.eps = eps

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return x * L.rsqrt(var + self.eps) * self.weight

    class Rotary(nn.Module):
        def __init__(self):
            super().__init__()
            inv_freq = 1.0 / (theta ** (L.arange(0, head_dim, 2).float() / head_dim))
            t = L.arange(max_pos).float()
            freqs = L.outer(t, inv_freq)
            emb = L.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos_cached", emb.cos(), persistent=False)
            self.register_buffer("sin_cached", emb.sin(), persistent=False)

        def forward(self, position_ids):
            return self.cos_cached[position_ids].unsqueeze(1), self.sin_cached[position_ids].unsqueeze(1)

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return L.cat((-x2, x1), dim=-1)

    def apply_rotary(q, k, cos, sin):
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    def repeat_kv(x, n_rep):
        b, h, s, d = x.shape
        if n_rep == 1:
            return x
        return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)

    class Attention(nn.Module):
        def __init__(self, use_interleave):
            super().__init__()
            self.q_proj = nn.Linear(dim, n_heads * head_dim, bias=False)
            self.k_proj = nn.Linear(dim, n_kv_heads * head_dim, bias=False)
            self.v_proj = nn.Linear(dim, n_kv_heads * head_dim, bias=False)
            self.o_proj = nn.Linear(n_heads * head_dim, dim, bias=False)
            self.use_interleave = use_interleave

        def forward(self, x, cos, sin, cache=None, pos=0, cache_position=None):
            b, s, _ = x.size()
            q = self.q_proj(x).view(b, s, n_heads, head_dim).transpose(1, 2)
            k = self.k_proj(x).view(b, s, n_kv_heads, head_dim).transpose(1, 2)
            v = self.v_proj(x).view(b, s, n_kv_heads, head_dim).transpose(1, 2)
            q, k = apply_rotary(q, k, cos, sin)
            mask = None
            if cache is not None and cache_position is not None:
                # a static cache (HF's StaticCache): written at tensor positions, read whole,
                # with a mask of the positions filled so far: no Python int changes per step
                k_cache, v_cache = cache
                k_cache.index_copy_(2, cache_position, k)
                v_cache.index_copy_(2, cache_position, v)
                k, v = k_cache, v_cache
                mask = (L.arange(k.shape[2], device=x.device)[None, :] <= cache_position[:, None])[None, None]
            elif cache is not None:
                k_cache, v_cache = cache
                k_cache[:, :, pos:pos + s] = k
                v_cache[:, :, pos:pos + s] = v
                k = k_cache[:, :, :pos + s]
                v = v_cache[:, :, :pos + s]
            n_rep = n_heads // n_kv_heads
            if self.use_interleave:
                k = k.repeat_interleave(n_rep, dim=1)
                v = v.repeat_interleave(n_rep, dim=1)
            else:
                k = repeat_kv(k, n_rep)
                v = repeat_kv(v, n_rep)
            if mask is not None:
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            elif cache is None:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            elif s == 1:
                o = F.scaled_dot_product_attention(q, k, v)
            else:
                mask = L.ones(s, pos + s, dtype=L.bool).tril(diagonal=pos)
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            o = o.transpose(1, 2).contiguous().view(b, s, -1)
            return self.o_proj(o)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(dim, hidden, bias=False)
            self.up_proj = nn.Linear(dim, hidden, bias=False)
            self.down_proj = nn.Linear(hidden, dim, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Block(nn.Module):
        def __init__(self, i):
            super().__init__()
            self.input_layernorm = RMSNorm(dim)
            self.self_attn = Attention(use_interleave=(i % 2 == 1))
            self.post_attention_layernorm = RMSNorm(dim)
            self.mlp = MLP()

        def forward(self, x, cos, sin, cache=None, pos=0, cache_position=None):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, pos, cache_position)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList([Block(i) for i in range(n_layers)])
            self.norm = RMSNorm(dim)
            self.rotary = Rotary()
            self.lm_head = nn.Linear(dim, vocab, bias=False)

        def forward(self, input_ids, labels=None, position_ids=None, caches=None, pos=0, cache_position=None):
            b, s = input_ids.shape
            if position_ids is None and cache_position is not None:
                position_ids = cache_position.unsqueeze(0).expand(b, -1)
            elif position_ids is None:
                position_ids = L.arange(pos, pos + s, device=input_ids.device).unsqueeze(0).expand(b, -1)
            cos, sin = self.rotary(position_ids)
            h = self.embed_tokens(input_ids)
            for i, layer in enumerate(self.layers):
                h = layer(h, cos, sin, None if caches is None else caches[i], pos, cache_position)
            logits = self.lm_head(self.norm(h))
            if labels is None:
                return logits
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            return F.cross_entropy(shift_logits.view(-1, vocab), shift_labels.view(-1))

        def new_caches(self, b, max_len):
            return [(L.zeros(b, n_kv_heads, max_len, head_dim), L.zeros(b, n_kv_heads, max_len, head_dim))
                    for _ in range(n_layers)]

    return Llama()


def greedy_decode(L, model, prompt, n_new, step_fn=None):
    """Prefill the prompt into a fresh KV cache, then n_new greedy steps of one token."""
    b, s = prompt.shape
    caches = model.new_caches(b, s + n_new)
    step_fn = step_fn or model
    with L.no_grad():
        logits = step_fn(prompt, caches=caches, pos=0)
        tok = logits[:, -1].argmax(-1, keepdim=True)
        out = [tok]
        pos = s
        for _ in range(n_new - 1):
            logits = step_fn(tok, caches=caches, pos=pos)
            tok = logits[:, -1].argmax(-1, keepdim=True)
            out.append(tok)
            pos += 1
    return L.cat(out, dim=1)


def greedy_decode_static(L, model, prompt, n_new, step_fn=None):
    """greedy_decode with a static cache: positions passed as a tensor (cache_position)."""
    b, s = prompt.shape
    caches = model.new_caches(b, s + n_new)
    step_fn = step_fn or model
    with L.no_grad():
        logits = step_fn(prompt, caches=caches, cache_position=L.arange(s))
        tok = logits[:, -1].argmax(-1, keepdim=True)
        out = [tok]
        for p in range(s, s + n_new - 1):
            logits = step_fn(tok, caches=caches, cache_position=L.tensor([p]))
            tok = logits[:, -1].argmax(-1, keepdim=True)
            out.append(tok)
    return L.cat(out, dim=1)


def build_t5(L, vocab=64, dim=32, n_heads=4, d_ff=64, num_buckets=16, max_distance=32, n_classes=5):
    nn = L.nn
    F = nn.functional
    head_dim = dim // n_heads

    def relative_position_bucket(rel, bidirectional=True):
        ret = 0
        n = num_buckets
        if bidirectional:
            n //= 2
            ret = ret + (rel > 0).to(L.long) * n
            rel = L.abs(rel)
        else:
            rel = -L.min(rel, L.zeros_like(rel))
        max_exact = n // 2
        is_small = rel < max_exact
        large = max_exact + (
            L.log(rel.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
        ).to(L.long)
        large = L.min(large, L.full_like(large, n - 1))
        return ret + L.where(is_small, rel, large)

    class T5LayerNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(L.ones(dim))

        def forward(self, x):
            var = x.to(L.float32).pow(2).mean(-1, keepdim=True)
            return self.weight * (x * L.rsqrt(var + 1e-6))

    class T5Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(dim, dim, bias=False)
            self.k = nn.Linear(dim, dim, bias=False)
            self.v = nn.Linear(dim, dim, bias=False)
            self.o = nn.Linear(dim, dim, bias=False)
            self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

        def compute_bias(self, q_len, k_len, device):
            ctx = L.arange(q_len, dtype=L.long, device=device)[:, None]
            mem = L.arange(k_len, dtype=L.long, device=device)[None, :]
            buckets = relative_position_bucket(mem - ctx)
            values = self.relative_attention_bias(buckets)
            return values.permute([2, 0, 1]).unsqueeze(0)

        def forward(self, x, mask=None):
            b, s, _ = x.shape

            def shape(t):
                return t.view(b, -1, n_heads, head_dim).transpose(1, 2)

            q, k, v = shape(self.q(x)), shape(self.k(x)), shape(self.v(x))
            scores = L.matmul(q, k.transpose(3, 2))       # T5: no 1/sqrt(d) scaling
            bias = self.compute_bias(s, s, x.device)
            if mask is not None:
                bias = bias + mask
            scores = scores + bias
            w = F.softmax(scores.float(), dim=-1).type_as(scores)
            o = L.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, dim)
            return self.o(o)

    class T5Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.ln1 = T5LayerNorm()
            self.attn = T5Attention()
            self.ln2 = T5LayerNorm()
            self.wi = nn.Linear(dim, d_ff, bias=False)
            self.wo = nn.Linear(d_ff, dim, bias=False)
            self.final = T5LayerNorm()
            self.head = nn.Linear(dim, n_classes)

        def forward(self, ids, attention_mask, labels):
            mask = (1.0 - attention_mask[:, None, None, :].to(L.float32)) * L.finfo(L.float32).min
            h = self.embed(ids)
            h = h + self.attn(self.ln1(h), mask)
            h = h + self.wo(F.relu(self.wi(self.ln2(h))))
            h = self.final(h)
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1)
            return F.cross_entropy(self.head(pooled), labels)

    return T5Encoder()


def build_vit(L, image=16, patch=4, chans=3, dim=32, n_heads=4, n_layers=2, n_classes=10):
    nn = L.nn
    n_patches = (image // patch) ** 2

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.qkv = nn.Linear(dim, dim * 3)
            self.proj = nn.Linear(dim, dim)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))

        def attn(self, x):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, n_heads, c // n_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            a = (q @ k.transpose(-2, -1)) * (c // n_heads) ** -0.5
            a = a.softmax(dim=-1)
            return self.proj((a @ v).transpose(1, 2).reshape(b, n, c))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Conv2d(chans, dim, kernel_size=patch, stride=patch)
            self.cls_token = nn.Parameter(L.randn(1, 1, dim) * 0.02)
            self.pos_embed = nn.Parameter(L.randn(1, n_patches + 1, dim) * 0.02)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layers)])
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, n_classes)

        def forward(self, pixels, labels):
            x = self.patch_embed(pixels).flatten(2).transpose(1, 2)
            cls = self.cls_token.expand(x.shape[0], -1, -1)
            x = L.cat((cls, x), dim=1) + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            x = self.norm(x)
            return nn.functional.cross_entropy(self.head(x[:, 0]), labels)

    return ViT()


def build_moe(L, dim=16, hidden=32, n_experts=4, top_k=2, n_classes=5):
    nn = L.nn
    F = nn.functional

    class Expert(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)))

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(dim, n_experts, bias=False)
            self.experts = nn.ModuleList([Expert() for _ in range(n_experts)])

        def forward(self, x):
            b, s, d = x.shape
            flat = x.view(-1, d)
            probs = F.softmax(self.gate(flat), dim=-1, dtype=L.float)
            weights, chosen = L.topk(probs, top_k, dim=-1)
            weights = weights / weights.sum(dim=-1, keepdim=True)
            weights = weights.to(flat.dtype)
            out = L.zeros_like(flat)
            for e, expert in enumerate(self.experts):
                token_idx, slot = (chosen == e).nonzero(as_tuple=True)
                if token_idx.numel() == 0:
                    continue
                inp = flat.index_select(0, token_idx)
                y = expert(inp) * weights[token_idx, slot].unsqueeze(-1)
                out.index_add_(0, token_idx, y)
            return out.view(b, s, d)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(dim, dim)
            self.moe = MoE()
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, n_classes)

        def forward(self, x, labels):
            h = self.inp(x)
            h = h + self.moe(self.norm(h))
            return F.cross_entropy(self.head(h.mean(1)), labels)

    return Net()
