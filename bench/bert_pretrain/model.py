"""BERT for pretraining written against symtrace.nn, in the PaddleNLP / original
layout: embeddings (word + position + token type, LayerNorm, dropout), post-LN
encoder layers (multi-head attention written out with an additive mask built
from the input mask, GELU feed-forward), pooler (tanh on the first token),
masked-LM head on the gathered masked positions (decoder tied to the word
embeddings plus a bias), next-sentence head. Loss = MLM CE + NSP CE.

The forward is plain straight-line tensor code (no Python branches on tensor
values) so that symtrace.compile captures it as one graph."""
import math

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F

__all__ = ["CONFIGS", "BertConfig", "BertForPretraining", "build_model"]

# name: (layers, hidden, heads, intermediate, vocab, max_position)
CONFIGS = {
    "base": (12, 768, 12, 3072, 30522, 512),
    "small": (4, 512, 8, 2048, 30522, 512),     # Google's BERT-Small (L4/H512)
    "mini": (4, 256, 4, 1024, 30522, 512),      # Google's BERT-Mini (L4/H256)
    "tiny": (2, 64, 2, 256, 1024, 128),         # for tests: small vocabulary too
}


class BertConfig:
    def __init__(self, name="mini", dropout=0.1, **override):
        if name not in CONFIGS:
            raise ValueError(f"unknown config {name!r} (choices: {', '.join(CONFIGS)})")
        L, H, A, I, V, P = CONFIGS[name]
        self.name = name
        self.num_hidden_layers = L
        self.hidden_size = H
        self.num_attention_heads = A
        self.intermediate_size = I
        self.vocab_size = V
        self.max_position_embeddings = P
        self.type_vocab_size = 2
        self.hidden_dropout_prob = dropout
        self.attention_probs_dropout_prob = dropout
        self.layer_norm_eps = 1e-12
        self.initializer_range = 0.02
        for k, v in override.items():
            if not hasattr(self, k):
                raise ValueError(f"unknown config field {k!r}")
            setattr(self, k, v)

    def as_dict(self):
        return {k: v for k, v in vars(self).items()}


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.layer_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids, position_ids):
        e = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
             + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.layer_norm(e))


class BertSelfAttention(nn.Module):
    """q/k/v projections, scores / sqrt(d) + additive mask, softmax, dropout,
    context, output projection (the output dropout and LayerNorm are in the layer)."""

    def __init__(self, c):
        super().__init__()
        self.num_heads = c.num_attention_heads
        self.head_dim = c.hidden_size // c.num_attention_heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.q = nn.Linear(c.hidden_size, c.hidden_size)
        self.k = nn.Linear(c.hidden_size, c.hidden_size)
        self.v = nn.Linear(c.hidden_size, c.hidden_size)
        self.out = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def forward(self, x, mask):
        B, S, H = x.shape
        q = self.q(x).reshape(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k(x).reshape(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).reshape(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) * self.scale + mask
        probs = self.dropout(F.softmax(scores, -1))
        ctx = (probs @ v).transpose(1, 2).reshape(B, S, H)
        return self.out(ctx)


class BertLayer(nn.Module):
    """Post-LN: x = LN(x + drop(attn(x))); x = LN(x + drop(W2 gelu(W1 x)))."""

    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attn_dropout = nn.Dropout(c.hidden_dropout_prob)
        self.norm1 = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.linear1 = nn.Linear(c.hidden_size, c.intermediate_size)
        self.linear2 = nn.Linear(c.intermediate_size, c.hidden_size)
        self.ffn_dropout = nn.Dropout(c.hidden_dropout_prob)
        self.norm2 = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn_dropout(self.attention(x, mask)))
        h = self.linear2(F.gelu(self.linear1(x)))
        return self.norm2(x + self.ffn_dropout(h))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layers = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])
        self.pooler = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, input_ids, token_type_ids, position_ids, input_mask):
        B, S = input_ids.shape
        # additive mask [B, 1, 1, S]: 0 where attended, -1e4 on padding
        mask = ((1.0 - input_mask.to(st.float32)) * -1e4).reshape(B, 1, 1, S)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        for layer in self.layers:
            x = layer(x, mask)
        pooled = st.tanh(self.pooler(x[:, 0]))
        return x, pooled


class BertPretrainingHeads(nn.Module):
    """MLM transform (Linear, GELU, LayerNorm), decoder tied to the word
    embeddings (+ bias); NSP classifier on the pooled output."""

    def __init__(self, c):
        super().__init__()
        self.transform = nn.Linear(c.hidden_size, c.hidden_size)
        self.layer_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.decoder_bias = nn.Parameter(st.zeros(c.vocab_size))
        self.seq_relationship = nn.Linear(c.hidden_size, 2)

    def forward(self, sequence_output, pooled, masked_positions, word_weight):
        H = sequence_output.shape[-1]
        h = sequence_output.reshape(-1, H).index_select(0, masked_positions)
        h = self.layer_norm(F.gelu(self.transform(h)))
        mlm = F.linear(h, word_weight, self.decoder_bias)
        return mlm, self.seq_relationship(pooled)


class BertForPretraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPretrainingHeads(config)
        self._init_weights()

    def _init_weights(self):
        std = self.config.initializer_range
        with st.no_grad():
            for name, p in self.named_parameters():
                if "norm" in name:
                    p.fill_(1.0 if name.endswith("weight") else 0.0)
                elif name.endswith("bias"):
                    p.fill_(0.0)
                else:
                    nn.init.normal_(p, 0.0, std)

    def forward(self, input_ids, token_type_ids, position_ids, input_mask, masked_positions,
                masked_labels, nsp_labels):
        seq, pooled = self.bert(input_ids, token_type_ids, position_ids, input_mask)
        mlm, nsp = self.cls(seq, pooled, masked_positions,
                            self.bert.embeddings.word_embeddings.weight)
        # mean over the real masked tokens (padding labels are -100) + mean NSP
        mlm_loss = F.cross_entropy(mlm, masked_labels, ignore_index=-100)
        nsp_loss = F.cross_entropy(nsp, nsp_labels)
        return mlm_loss + nsp_loss


def no_decay(name):
    """AdamW groups: no weight decay on biases and LayerNorm weights."""
    return name.endswith("bias") or "norm" in name


def build_model(config="mini", dropout=0.1, seed=0, **override):
    st.manual_seed(seed)
    return BertForPretraining(BertConfig(config, dropout=dropout, **override))
