# tests/python/hf_gpt2_model.py - a GPT-2 written in HuggingFace's idioms, for the
# compile tests of test_compile_gpt2_style.py. The idioms, not HF's code: Conv1D
# (weight [in, out], addmm), a fused c_attn split(hidden, dim=2), _split_heads /
# _merge_heads with view/permute/contiguous, the causal mask as a registered bool
# buffer sliced [:, :, k-q:k, :k], where(mask, w, finfo.min), a (batch, seq)
# attention_mask turned into (1 - mask) * finfo.min, layer_past / present tuples
# threaded through the layers (use_cache), position ids from the past length, a
# ModelOutput (OrderedDict) dataclass, lm_head tied to wte, and a shifted
# CrossEntropyLoss(ignore_index=-100). Written once against a library argument L.
import dataclasses
from typing import Optional, Tuple

from hf_bert_model import ModelOutput


class Config:
    def __init__(self, **kw):
        self.vocab_size = 64
        self.n_positions = 32
        self.n_embd = 32
        self.n_layer = 2
        self.n_head = 4
        self.n_inner = None
        self.activation_function = "gelu_new"
        self.resid_pdrop = 0.0
        self.embd_pdrop = 0.0
        self.attn_pdrop = 0.0
        self.layer_norm_epsilon = 1e-5
        self.initializer_range = 0.02
        self.scale_attn_weights = True
        self.use_cache = True
        self.use_return_dict = True
        self.output_hidden_states = False
        self.__dict__.update(kw)


@dataclasses.dataclass
class BaseModelOutputWithPast(ModelOutput):
    last_hidden_state: object = None
    past_key_values: Optional[Tuple] = None
    hidden_states: Optional[Tuple] = None


@dataclasses.dataclass
class CausalLMOutputWithPast(ModelOutput):
    loss: object = None
    logits: object = None
    past_key_values: Optional[Tuple] = None
    hidden_states: Optional[Tuple] = None


def build(L, config=None):
    nn = L.nn
    config = config or Config()

    class NewGELUActivation(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + L.tanh(0.7978845608028654 * (x + 0.044715 * L.pow(x, 3.0))))

    ACT2FN = {"gelu_new": NewGELUActivation(), "gelu": nn.GELU(), "relu": nn.ReLU()}

    class Conv1D(nn.Module):
        def __init__(self, nf, nx):
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(L.empty(nx, nf))
            self.bias = nn.Parameter(L.zeros(nf))
            nn.init.normal_(self.weight, std=0.02)

        def forward(self, x):
            size_out = x.size()[:-1] + (self.nf,)
            x = L.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
            return x.view(size_out)

    class GPT2Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            max_positions = config.n_positions
            self.register_buffer(
                "bias",
                L.tril(L.ones((max_positions, max_positions), dtype=L.bool)).view(
                    1, 1, max_positions, max_positions),
                persistent=False)
            self.embed_dim = config.n_embd
            self.num_heads = config.n_head
            self.head_dim = self.embed_dim // self.num_heads
            self.split_size = self.embed_dim
            if self.head_dim * self.num_heads != self.embed_dim:
                raise ValueError("embed_dim must be divisible by num_heads")
            self.scale_attn_weights = config.scale_attn_weights
            self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
            self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
            self.attn_dropout = nn.Dropout(config.attn_pdrop)
            self.resid_dropout = nn.Dropout(config.resid_pdrop)

        def _attn(self, query, key, value, attention_mask=None):
            attn_weights = L.matmul(query, key.transpose(-1, -2))
            if self.scale_attn_weights:
                attn_weights = attn_weights / L.full(
                    [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
            mask_value = L.finfo(attn_weights.dtype).min
            mask_value = L.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
            attn_weights = L.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            attn_weights = attn_weights.type(value.dtype)
            attn_weights = self.attn_dropout(attn_weights)
            return L.matmul(attn_weights, value), attn_weights

        def _split_heads(self, tensor, num_heads, attn_head_size):
            new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
            tensor = tensor.view(new_shape)
            return tensor.permute(0, 2, 1, 3)

        def _merge_heads(self, tensor, num_heads, attn_head_size):
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
            new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
            return tensor.view(new_shape)

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
            query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
            query = self._split_heads(query, self.num_heads, self.head_dim)
            key = self._split_heads(key, self.num_heads, self.head_dim)
            value = self._split_heads(value, self.num_heads, self.head_dim)
            if layer_past is not None:
                past_key, past_value = layer_past
                key = L.cat((past_key, key), dim=-2)
                value = L.cat((past_value, value), dim=-2)
            present = (key, value) if use_cache is True else None
            attn_output, attn_weights = self._attn(query, key, value, attention_mask)
            attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
            attn_output = self.resid_dropout(self.c_proj(attn_output))
            return (attn_output, present)

    class GPT2MLP(nn.Module):
        def __init__(self, intermediate_size, config):
            super().__init__()
            embed_dim = config.n_embd
            self.c_fc = Conv1D(intermediate_size, embed_dim)
            self.c_proj = Conv1D(embed_dim, intermediate_size)
            self.act = ACT2FN[config.activation_function]
            self.dropout = nn.Dropout(config.resid_pdrop)

        def forward(self, hidden_states):
            hidden_states = self.act(self.c_fc(hidden_states))
            return self.dropout(self.c_proj(hidden_states))

    class GPT2Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            hidden_size = config.n_embd
            inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size
            self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
            self.attn = GPT2Attention(config)
            self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
            self.mlp = GPT2MLP(inner_dim, config)

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
            residual = hidden_states
            hidden_states = self.ln_1(hidden_states)
            attn_outputs = self.attn(hidden_states, layer_past=layer_past,
                                     attention_mask=attention_mask, use_cache=use_cache)
            attn_output = attn_outputs[0]
            outputs = attn_outputs[1:]
            hidden_states = attn_output + residual
            residual = hidden_states
            hidden_states = self.ln_2(hidden_states)
            feed_forward_hidden_states = self.mlp(hidden_states)
            hidden_states = residual + feed_forward_hidden_states
            if use_cache:
                outputs = (hidden_states,) + outputs
            else:
                outputs = (hidden_states,) + outputs[1:]
            return outputs

    class GPT2PreTrainedModel(nn.Module):
        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, Conv1D)):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def post_init(self):
            self.apply(self._init_weights)

        @property
        def dtype(self):
            return next(self.parameters()).dtype

    class GPT2Model(GPT2PreTrainedModel):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.embed_dim = config.n_embd
            self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
            self.wpe = nn.Embedding(config.n_positions, self.embed_dim)
            self.drop = nn.Dropout(config.embd_pdrop)
            self.h = nn.ModuleList([GPT2Block(config) for _ in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
            self.post_init()

        def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None,
                    use_cache=None, output_hidden_states=None, return_dict=None):
            output_hidden_states = (output_hidden_states if output_hidden_states is not None
                                    else self.config.output_hidden_states)
            use_cache = use_cache if use_cache is not None else self.config.use_cache
            return_dict = return_dict if return_dict is not None else self.config.use_return_dict
            input_shape = input_ids.size()
            input_ids = input_ids.view(-1, input_shape[-1])
            batch_size = input_ids.shape[0]
            device = input_ids.device
            if past_key_values is None:
                past_length = 0
                past_key_values = tuple([None] * len(self.h))
            else:
                past_length = past_key_values[0][0].size(-2)
            if position_ids is None:
                position_ids = L.arange(past_length, input_shape[-1] + past_length, dtype=L.long,
                                        device=device)
                position_ids = position_ids.unsqueeze(0)
            if attention_mask is not None:
                if batch_size <= 0:
                    raise ValueError("batch_size has to be defined and > 0")
                attention_mask = attention_mask.view(batch_size, -1)
                attention_mask = attention_mask[:, None, None, :]
                attention_mask = attention_mask.to(dtype=self.dtype)
                attention_mask = (1.0 - attention_mask) * L.finfo(self.dtype).min
            inputs_embeds = self.wte(input_ids)
            position_embeds = self.wpe(position_ids)
            hidden_states = inputs_embeds + position_embeds
            hidden_states = self.drop(hidden_states)
            output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
            presents = () if use_cache else None
            all_hidden_states = () if output_hidden_states else None
            for i, (block, layer_past) in enumerate(zip(self.h, past_key_values)):
                if output_hidden_states:
                    all_hidden_states = all_hidden_states + (hidden_states,)
                outputs = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                use_cache=use_cache)
                hidden_states = outputs[0]
                if use_cache is True:
                    presents = presents + (outputs[1],)
            hidden_states = self.ln_f(hidden_states)
            hidden_states = hidden_states.view(output_shape)
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            if not return_dict:
                return tuple(v for v in [hidden_states, presents, all_hidden_states] if v is not None)
            return BaseModelOutputWithPast(last_hidden_state=hidden_states, past_key_values=presents,
                                           hidden_states=all_hidden_states)

    class GPT2LMHeadModel(GPT2PreTrainedModel):
        _tied_weights_keys = ["lm_head.weight"]

        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = GPT2Model(config)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.post_init()
            self.lm_head.weight = self.transformer.wte.weight

        def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None,
                    labels=None, use_cache=None, output_hidden_states=None, return_dict=None):
            return_dict = return_dict if return_dict is not None else self.config.use_return_dict
            transformer_outputs = self.transformer(
                input_ids, past_key_values=past_key_values, attention_mask=attention_mask,
                position_ids=position_ids, use_cache=use_cache,
                output_hidden_states=output_hidden_states, return_dict=return_dict)
            hidden_states = transformer_outputs[0]
            lm_logits = self.lm_head(hidden_states)
            loss = None
            if labels is not None:
                labels = labels.to(lm_logits.device)
                shift_logits = lm_logits[..., :-1, :].contiguous()
                shift_labels = labels[..., 1:].contiguous()
                loss_fct = nn.CrossEntropyLoss(ignore_index=-100)
                loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
            if not return_dict:
                output = (lm_logits,) + transformer_outputs[1:]
                return ((loss,) + output) if loss is not None else output
            return CausalLMOutputWithPast(loss=loss, logits=lm_logits,
                                          past_key_values=transformer_outputs.past_key_values,
                                          hidden_states=transformer_outputs.hidden_states)

    return GPT2LMHeadModel(config)


def greedy_generate(L, model, input_ids, new_tokens, attention_mask=None, forward=None):
    """HF's greedy loop with use_cache: the prompt once, then one token at a time, the
    past_key_values tuple growing; the attention mask (when given) grows with it."""
    forward = forward or model
    past = None
    ids = input_ids
    cur = input_ids
    for _ in range(new_tokens):
        with L.no_grad():
            out = forward(cur, past_key_values=past, attention_mask=attention_mask, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1, :].argmax(dim=-1)
        ids = L.cat([ids, nxt[:, None]], dim=-1)
        cur = nxt[:, None]
        if attention_mask is not None:
            attention_mask = L.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))],
                                   dim=-1)
    return ids
