"""The same BERT-for-pretraining in PyTorch (parameter names and math identical
to model.py), the peer of --compare torch. load_from_symtrace copies
symtrace's initial weights by name through numpy, so both start equal."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["TorchBertForPretraining", "load_from_symtrace", "build_torch_model"]


class Embeddings(nn.Module):
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


class SelfAttention(nn.Module):
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


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = SelfAttention(c)
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


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.layers = nn.ModuleList([Layer(c) for _ in range(c.num_hidden_layers)])
        self.pooler = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, input_ids, token_type_ids, position_ids, input_mask):
        B, S = input_ids.shape
        mask = ((1.0 - input_mask.to(torch.float32)) * -1e4).reshape(B, 1, 1, S)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class Heads(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = nn.Linear(c.hidden_size, c.hidden_size)
        self.layer_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.decoder_bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.seq_relationship = nn.Linear(c.hidden_size, 2)

    def forward(self, sequence_output, pooled, masked_positions, word_weight):
        H = sequence_output.shape[-1]
        h = sequence_output.reshape(-1, H).index_select(0, masked_positions)
        h = self.layer_norm(F.gelu(self.transform(h)))
        return F.linear(h, word_weight, self.decoder_bias), self.seq_relationship(pooled)


class TorchBertForPretraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.bert = Bert(config)
        self.cls = Heads(config)

    def forward(self, input_ids, token_type_ids, position_ids, input_mask, masked_positions,
                masked_labels, nsp_labels):
        seq, pooled = self.bert(input_ids, token_type_ids, position_ids, input_mask)
        mlm, nsp = self.cls(seq, pooled, masked_positions, self.bert.embeddings.word_embeddings.weight)
        return F.cross_entropy(mlm, masked_labels, ignore_index=-100) + F.cross_entropy(nsp, nsp_labels)


def load_from_symtrace(tmodel, st_model):
    """Copies every parameter of st_model into tmodel by name (through numpy);
    the names must match one to one."""
    src = dict(st_model.named_parameters())
    dst = dict(tmodel.named_parameters())
    if set(src) != set(dst):
        raise ValueError(f"parameter names differ: only symtrace {sorted(set(src) - set(dst))}, "
                         f"only torch {sorted(set(dst) - set(src))}")
    with torch.no_grad():
        for name, p in dst.items():
            a = np.asarray(src[name].detach().numpy())
            if tuple(a.shape) != tuple(p.shape):
                raise ValueError(f"{name}: shape {a.shape} vs {tuple(p.shape)}")
            p.copy_(torch.from_numpy(a.copy()))
    return tmodel


def build_torch_model(st_model):
    return load_from_symtrace(TorchBertForPretraining(st_model.config), st_model)
