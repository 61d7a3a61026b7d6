# tests/python/hf_bert_model.py - a BERT written in HuggingFace's idioms, for the
# compile tests of test_compile_hf_style.py (copied from the lead's repro, hf_bert.py).
# A BERT written the way HuggingFace's modeling code writes it (its idioms, not its
# code): ModelOutput dataclasses that are also OrderedDicts, a config object read
# with getattr defaults, buffers of position and token-type ids sliced per call,
# finfo(dtype).min additive masks, x.size()[:-1] + (h, d) shapes, an ACT2FN
# table, tuples of hidden states grown in the layer loop, chunked feed-forward,
# optional gradient checkpointing, warnings and a warn-once logger, return_dict.
# Written once against a library argument L (torch or symtrace).
import collections
import dataclasses
import functools
import math
import warnings
from typing import Optional, Tuple


class Config:
    def __init__(self, **kw):
        self.vocab_size = 100
        self.hidden_size = 32
        self.num_hidden_layers = 2
        self.num_attention_heads = 4
        self.intermediate_size = 64
        self.hidden_act = "gelu"
        self.hidden_dropout_prob = 0.0
        self.attention_probs_dropout_prob = 0.0
        self.max_position_embeddings = 64
        self.type_vocab_size = 2
        self.layer_norm_eps = 1e-12
        self.initializer_range = 0.02
        self.chunk_size_feed_forward = 0
        self.use_return_dict = True
        self.output_hidden_states = False
        self.output_attentions = False
        self.__dict__.update(kw)


class ModelOutput(collections.OrderedDict):
    """A dataclass whose set fields are also its dict items and tuple entries."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class BaseModelOutputWithPooling(ModelOutput):
    last_hidden_state: object = None
    pooler_output: object = None
    hidden_states: Optional[Tuple] = None
    attentions: Optional[Tuple] = None


@dataclasses.dataclass
class PreTrainingOutput(ModelOutput):
    loss: object = None
    prediction_logits: object = None
    seq_relationship_logits: object = None
    hidden_states: Optional[Tuple] = None


@functools.lru_cache(None)
def warning_once(msg):
    warnings.warn(msg)


def build(L, config=None):
    nn = L.nn
    config = config or Config()
    ACT2FN = {"gelu": nn.GELU(), "relu": nn.ReLU(), "tanh": nn.Tanh()}

    def apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim, *inputs):
        if chunk_size > 0:
            num_chunks = inputs[0].shape[chunk_dim] // chunk_size
            chunks = tuple(t.chunk(num_chunks, dim=chunk_dim) for t in inputs)
            return L.cat(tuple(forward_fn(*c) for c in zip(*chunks)), dim=chunk_dim)
        return forward_fn(*inputs)

    class Embeddings(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=0)
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.dropout = nn.Dropout(config.hidden_dropout_prob)
            self.position_embedding_type = getattr(config, "position_embedding_type", "absolute")
            self.register_buffer("position_ids", L.arange(config.max_position_embeddings).expand((1, -1)),
                                 persistent=False)
            self.register_buffer("token_type_ids", L.zeros(self.position_ids.size(), dtype=L.long),
                                 persistent=False)

        def forward(self, input_ids=None, token_type_ids=None, position_ids=None, inputs_embeds=None,
                    past_key_values_length=0):
            if input_ids is not None:
                input_shape = input_ids.size()
            else:
                input_shape = inputs_embeds.size()[:-1]
            seq_length = input_shape[1]
            if position_ids is None:
                position_ids = self.position_ids[:, past_key_values_length: seq_length + past_key_values_length]
            if token_type_ids is None:
                if hasattr(self, "token_type_ids"):
                    buffered = self.token_type_ids[:, :seq_length]
                    token_type_ids = buffered.expand(input_shape[0], seq_length)
                else:
                    token_type_ids = L.zeros(input_shape, dtype=L.long, device=self.position_ids.device)
            if inputs_embeds is None:
                inputs_embeds = self.word_embeddings(input_ids)
            embeddings = inputs_embeds + self.token_type_embeddings(token_type_ids)
            if self.position_embedding_type == "absolute":
                embeddings += self.position_embeddings(position_ids)
            embeddings = self.LayerNorm(embeddings)
            return self.dropout(embeddings)

    class SelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            if config.hidden_size % config.num_attention_heads != 0 and not hasattr(config, "embedding_size"):
                raise ValueError("hidden size is not a multiple of the number of attention heads")
            self.num_attention_heads = config.num_attention_heads
            self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
            self.all_head_size = self.num_attention_heads * self.attention_head_size
            self.query = nn.Linear(config.hidden_size, self.all_head_size)
            self.key = nn.Linear(config.hidden_size, self.all_head_size)
            self.value = nn.Linear(config.hidden_size, self.all_head_size)
            self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

        def transpose_for_scores(self, x):
            new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
            x = x.view(new_x_shape)
            return x.permute(0, 2, 1, 3)

        def forward(self, hidden_states, attention_mask=None, head_mask=None, output_attentions=False):
            query_layer = self.transpose_for_scores(self.query(hidden_states))
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
            attention_scores = L.matmul(query_layer, key_layer.transpose(-1, -2))
            attention_scores = attention_scores / math.sqrt(self.attention_head_size)
            if attention_mask is not None:
                attention_scores = attention_scores + attention_mask
            attention_probs = nn.functional.softmax(attention_scores, dim=-1)
            attention_probs = self.dropout(attention_probs)
            if head_mask is not None:
                attention_probs = attention_probs * head_mask
            context_layer = L.matmul(attention_probs, value_layer)
            context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
            new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
            context_layer = context_layer.view(new_context_layer_shape)
            outputs = (context_layer, attention_probs) if output_attentions else (context_layer,)
            return outputs

    class SelfOutput(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, config.hidden_size)
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.dropout = nn.Dropout(config.hidden_dropout_prob)

        def forward(self, hidden_states, input_tensor):
            hidden_states = self.dropout(self.dense(hidden_states))
            return self.LayerNorm(hidden_states + input_tensor)

    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.self = SelfAttention(config)
            self.output = SelfOutput(config)
            self.pruned_heads = set()

        def forward(self, hidden_states, attention_mask=None, head_mask=None, output_attentions=False):
            self_outputs = self.self(hidden_states, attention_mask, head_mask, output_attentions)
            attention_output = self.output(self_outputs[0], hidden_states)
            return (attention_output,) + self_outputs[1:]

    class Intermediate(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
            if isinstance(config.hidden_act, str):
                self.intermediate_act_fn = ACT2FN[config.hidden_act]
            else:
                self.intermediate_act_fn = config.hidden_act

        def forward(self, hidden_states):
            return self.intermediate_act_fn(self.dense(hidden_states))

    class Output(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.dropout = nn.Dropout(config.hidden_dropout_prob)

        def forward(self, hidden_states, input_tensor):
            hidden_states = self.dropout(self.dense(hidden_states))
            return self.LayerNorm(hidden_states + input_tensor)

    class Layer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.chunk_size_feed_forward = config.chunk_size_feed_forward
            self.seq_len_dim = 1
            self.attention = Attention(config)
            self.intermediate = Intermediate(config)
            self.output = Output(config)

        def forward(self, hidden_states, attention_mask=None, head_mask=None, output_attentions=False):
            self_attention_outputs = self.attention(hidden_states, attention_mask, head_mask,
                                                    output_attentions=output_attentions)
            attention_output = self_attention_outputs[0]
            outputs = self_attention_outputs[1:]
            layer_output = apply_chunking_to_forward(self.feed_forward_chunk, self.chunk_size_feed_forward,
                                                     self.seq_len_dim, attention_output)
            return (layer_output,) + outputs

        def feed_forward_chunk(self, attention_output):
            intermediate_output = self.intermediate(attention_output)
            return self.output(intermediate_output, attention_output)

    class Encoder(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.layer = nn.ModuleList([Layer(config) for _ in range(config.num_hidden_layers)])
            self.gradient_checkpointing = False

        def forward(self, hidden_states, attention_mask=None, head_mask=None, output_attentions=False,
                    output_hidden_states=False, return_dict=True):
            all_hidden_states = () if output_hidden_states else None
            all_self_attentions = () if output_attentions else None
            for i, layer_module in enumerate(self.layer):
                if output_hidden_states:
                    all_hidden_states = all_hidden_states + (hidden_states,)
                layer_head_mask = head_mask[i] if head_mask is not None else None
                if self.gradient_checkpointing and self.training:
                    layer_outputs = L.utils.checkpoint.checkpoint(
                        layer_module.__call__, hidden_states, attention_mask, layer_head_mask,
                        output_attentions, use_reentrant=False)
                else:
                    layer_outputs = layer_module(hidden_states, attention_mask, layer_head_mask, output_attentions)
                hidden_states = layer_outputs[0]
                if output_attentions:
                    all_self_attentions = all_self_attentions + (layer_outputs[1],)
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            if not return_dict:
                return tuple(v for v in [hidden_states, all_hidden_states, all_self_attentions] if v is not None)
            return BaseModelOutputWithPooling(last_hidden_state=hidden_states, hidden_states=all_hidden_states,
                                              attentions=all_self_attentions)

    class Pooler(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, config.hidden_size)
            self.activation = nn.Tanh()

        def forward(self, hidden_states):
            return self.activation(self.dense(hidden_states[:, 0]))

    class PreTrainedModel(nn.Module):
        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.padding_idx is not None:
                    module.weight.data[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def post_init(self):
            self.apply(self._init_weights)

        @property
        def dtype(self):
            return next(self.parameters()).dtype

        def get_extended_attention_mask(self, attention_mask, input_shape):
            if attention_mask.dim() == 3:
                extended = attention_mask[:, None, :, :]
            elif attention_mask.dim() == 2:
                extended = attention_mask[:, None, None, :]
            else:
                raise ValueError(f"Wrong shape for input_ids (shape {input_shape}) or attention_mask "
                                 f"(shape {attention_mask.shape})")
            extended = extended.to(dtype=self.dtype)
            return (1.0 - extended) * L.finfo(self.dtype).min

        def gradient_checkpointing_enable(self):
            for m in self.modules():
                if hasattr(m, "gradient_checkpointing"):
                    m.gradient_checkpointing = True

    class BertModel(PreTrainedModel):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.embeddings = Embeddings(config)
            self.encoder = Encoder(config)
            self.pooler = Pooler(config)
            self.post_init()

        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                    head_mask=None, inputs_embeds=None, output_attentions=None, output_hidden_states=None,
                    return_dict=None):
            output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
            output_hidden_states = (output_hidden_states if output_hidden_states is not None
                                    else self.config.output_hidden_states)
            return_dict = return_dict if return_dict is not None else self.config.use_return_dict
            if input_ids is not None and inputs_embeds is not None:
                raise ValueError("You cannot specify both input_ids and inputs_embeds at the same time")
            elif input_ids is not None:
                input_shape = input_ids.size()
            elif inputs_embeds is not None:
                input_shape = inputs_embeds.size()[:-1]
            else:
                raise ValueError("You have to specify either input_ids or inputs_embeds")
            batch_size, seq_length = input_shape
            device = input_ids.device if input_ids is not None else inputs_embeds.device
            if attention_mask is None:
                attention_mask = L.ones((batch_size, seq_length), device=device)
            if attention_mask is not None and (attention_mask == 0).all():
                warning_once("all tokens are masked")
            extended_attention_mask = self.get_extended_attention_mask(attention_mask, input_shape)
            head_mask = [None] * self.config.num_hidden_layers if head_mask is None else head_mask
            embedding_output = self.embeddings(input_ids=input_ids, position_ids=position_ids,
                                               token_type_ids=token_type_ids, inputs_embeds=inputs_embeds)
            encoder_outputs = self.encoder(embedding_output, attention_mask=extended_attention_mask,
                                           head_mask=head_mask, output_attentions=output_attentions,
                                           output_hidden_states=output_hidden_states, return_dict=return_dict)
            sequence_output = encoder_outputs[0]
            pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
            if not return_dict:
                return (sequence_output, pooled_output) + encoder_outputs[1:]
            return BaseModelOutputWithPooling(last_hidden_state=sequence_output, pooler_output=pooled_output,
                                              hidden_states=encoder_outputs.hidden_states,
                                              attentions=encoder_outputs.attentions)

    class PredictionHeadTransform(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, config.hidden_size)
            self.transform_act_fn = ACT2FN[config.hidden_act]
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

        def forward(self, hidden_states):
            return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))

    class LMPredictionHead(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.transform = PredictionHeadTransform(config)
            self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            self.bias = nn.Parameter(L.zeros(config.vocab_size))
            self.decoder.bias = self.bias

        def forward(self, hidden_states):
            return self.decoder(self.transform(hidden_states))

    class PreTrainingHeads(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.predictions = LMPredictionHead(config)
            self.seq_relationship = nn.Linear(config.hidden_size, 2)

        def forward(self, sequence_output, pooled_output):
            return self.predictions(sequence_output), self.seq_relationship(pooled_output)

    class BertForPreTraining(PreTrainedModel):
        _tied_weights_keys = ["predictions.decoder.bias", "cls.predictions.decoder.weight"]

        def __init__(self, config):
            super().__init__()
            self.config = config
            self.bert = BertModel(config)
            self.cls = PreTrainingHeads(config)
            self.post_init()
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                    next_sentence_label=None, return_dict=None, **kwargs):
            return_dict = return_dict if return_dict is not None else self.config.use_return_dict
            outputs = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                                return_dict=return_dict, **kwargs)
            sequence_output, pooled_output = outputs[:2]
            prediction_scores, seq_relationship_score = self.cls(sequence_output, pooled_output)
            total_loss = None
            if labels is not None and next_sentence_label is not None:
                loss_fct = nn.CrossEntropyLoss()
                masked_lm_loss = loss_fct(prediction_scores.view(-1, self.config.vocab_size), labels.view(-1))
                next_sentence_loss = loss_fct(seq_relationship_score.view(-1, 2), next_sentence_label.view(-1))
                total_loss = masked_lm_loss + next_sentence_loss
            if not return_dict:
                output = (prediction_scores, seq_relationship_score) + outputs[2:]
                return ((total_loss,) + output) if total_loss is not None else output
            return PreTrainingOutput(loss=total_loss, prediction_logits=prediction_scores,
                                     seq_relationship_logits=seq_relationship_score,
                                     hidden_states=outputs.hidden_states)

    return BertForPreTraining(config)
