"""Query-based pointer-generator with coverage: the PG baseline of Zhang et al. CIKM'20 (Table 4), i.e.
Hasselqvist et al. (2017) on top of See et al. (2017), with RSA-style relevance-scaled attention (Baumel et
al. 2018) as a switch. It reads the same q2id batches as CtrsGen (:mod:`hf_querygen.tasks.q2id`).

Shapes: B batch, N source words (the relevant mega-document read as one word sequence), C query words,
H_e = 2 * hidden_size, H_d decoder size, T decoder steps, V output vocabulary, W = vocab_size (copy space).

Encoder: BiGRU over the source words -> h_i (B, N, H_e), summary [last fwd; last bwd]; BiGRU over the
query -> x^q (B, H_e); s_0 = tanh(W_0 [summary; x^q]).
Decoder step t (See et al. 2017): s_t = GRU(e(y_{t-1}), s_{t-1});
  e_i = v^T tanh(W_h h_i + W_s s_t + W_q x^q + w_c cov_i^t + b)  (See Eq. 11 + the query term)
  a^t = softmax(e) [x relevance of i's sentence, renormalised: RSA];  c_t = sum_i a_i h_i
  P_vocab = softmax(W_o [s_t; c_t] + b_o);  p_gen = sigmoid(w [c_t; s_t; e(y_{t-1})] + b)  (See Eq. 4, 8)
  P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a_i^t over all W token ids     (See Eq. 9)
  cov^{t+1} = cov^t + a^t;  loss = -log P(y_t) + lambda sum_i min(a_i^t, cov_i^t)        (See Eq. 10-13)
``logits`` are log P over the W token ids (a word outside the output vocabulary is produced by copying).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import ModelOutput

from ...errors import InvalidInputError
from ...nn.cache import RecurrentStateCache, pick_cache, with_cache
from ...nn.coverage import CoverageAttention, PointerGeneratorMixture, copyable_labels, coverage_loss
from ...nn.encoder import RNNEncoder, WordEmbeddings, build_rnn
from ...nn.hierarchical import compact_rows
from ...nn.initialization import init_uniform_weights
from ...nn.labels import IGNORE_INDEX, mask_labels, shift_labels_right
from ...nn.loss import token_nll
from ...tokenization import EOS_ID
from .._generation import RecurrentGenerationMixin
from .configuration_query_pointer_generator import QueryPointerGeneratorConfig


@dataclass
class QueryPointerGeneratorEncoderOutput(ModelOutput):
    """last_hidden_state (B, N, H_e) source word states; source_mask (B, N); source_ids (B, N) token ids;
    query_vector (B, H_e) or None; relevance (B, N) sentence relevance per source word (RSA) or None;
    initial_state (B, H_d)."""

    last_hidden_state: torch.FloatTensor | None = None
    source_mask: torch.LongTensor | None = None
    source_ids: torch.LongTensor | None = None
    query_vector: torch.FloatTensor | None = None
    relevance: torch.FloatTensor | None = None
    initial_state: torch.FloatTensor | None = None


def sentence_query_overlap(
    relevant_input_ids: torch.LongTensor,
    relevant_mask: torch.Tensor,
    query_ids: torch.LongTensor,
    query_mask: torch.Tensor,
    ignore_ids: tuple[int, ...],
) -> torch.Tensor:
    """(B, D, S, L) sentences, (B, C) query -> (B, D, S) share of the distinct query words (ignoring
    ``ignore_ids``) that occur in each sentence."""
    valid_query = query_mask.bool()
    for token in ignore_ids:
        valid_query = valid_query & (query_ids != token)
    # a repeated query word counts once
    first = torch.ones_like(valid_query)
    for c in range(1, query_ids.shape[1]):
        first[:, c] = ~((query_ids[:, :c] == query_ids[:, c : c + 1]) & valid_query[:, :c]).any(dim=1)
    valid_query = valid_query & first
    matches = (
        relevant_input_ids.unsqueeze(-1) == query_ids.view(query_ids.shape[0], 1, 1, 1, -1)
    ) & relevant_mask.bool().unsqueeze(-1)
    present = matches.any(dim=3) & valid_query.view(query_ids.shape[0], 1, 1, -1)  # (B, D, S, C)
    return present.sum(-1).float() / valid_query.sum(-1).clamp_min(1).float().view(-1, 1, 1)


class QueryPointerGeneratorEncoder(nn.Module):
    main_input_name = "input_ids"

    def __init__(self, config: QueryPointerGeneratorConfig):
        super().__init__()
        self.config = config
        states = 2 * config.hidden_size
        self.embed_tokens = WordEmbeddings(
            config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout
        )
        self.source_encoder = RNNEncoder(config.embedding_size, config.hidden_size, 1, "gru", True)
        summary = states
        if config.use_query:
            self.query_encoder = RNNEncoder(config.embedding_size, config.hidden_size, 1, "gru", True)
            summary += states
        self.bridge = nn.Linear(summary, config.decoder_hidden_size)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        relevant_input_ids: torch.LongTensor | None = None,
        relevant_attention_mask: torch.Tensor | None = None,
        **kwargs,
    ) -> QueryPointerGeneratorEncoderOutput:
        """input_ids (B, C) query, relevant_input_ids (B, D, S, L) -> encoder output (irrelevant documents,
        if passed, are ignored: the baseline has no use for them)."""
        config = self.config
        if relevant_input_ids is None or relevant_input_ids.dim() != 4:
            raise InvalidInputError(
                "QueryPointerGenerator needs relevant_input_ids (batch, documents, sentences, words)"
            )
        if relevant_attention_mask is None:
            relevant_attention_mask = relevant_input_ids != config.pad_token_id
        mask = relevant_attention_mask.bool()
        batch = relevant_input_ids.shape[0]
        source_ids, source_mask = compact_rows(relevant_input_ids.reshape(batch, -1), mask.reshape(batch, -1))
        source_ids, source_mask = (
            source_ids[:, : config.max_source_tokens],
            source_mask[:, : config.max_source_tokens],
        )
        empty = (~source_mask.any(dim=1)).nonzero().flatten().tolist()
        if empty:
            raise InvalidInputError(f"QueryPointerGenerator: batch rows {empty} have no relevant word")
        encoded = self.source_encoder(self.embed_tokens(source_ids), source_mask.long())
        summary = [encoded.final_hidden[:, -1]]
        query_vector = relevance = None
        if config.use_query:
            if input_ids is None:
                raise InvalidInputError(
                    "QueryPointerGenerator with use_query=True needs input_ids (the query)"
                )
            if attention_mask is None:
                attention_mask = (input_ids != config.pad_token_id).long()
            query_vector = self.query_encoder(self.embed_tokens(input_ids), attention_mask).final_hidden[
                :, -1
            ]
            summary.append(query_vector)
            if config.relevance_scaled_attention:
                overlap = sentence_query_overlap(
                    relevant_input_ids,
                    mask,
                    input_ids,
                    attention_mask,
                    (config.pad_token_id, config.unk_token_id, EOS_ID),
                )
                per_word = overlap.unsqueeze(-1).expand_as(mask).reshape(batch, -1)
                relevance, _ = compact_rows(per_word, mask.reshape(batch, -1))
                relevance = relevance[:, : config.max_source_tokens] + config.relevance_floor
        return QueryPointerGeneratorEncoderOutput(
            last_hidden_state=encoded.outputs,
            source_mask=source_mask.long(),
            source_ids=source_ids,
            query_vector=query_vector,
            relevance=relevance,
            initial_state=torch.tanh(self.bridge(torch.cat(summary, dim=-1))),
        )


@dataclass
class _TeacherForcedSteps:
    """What the attention loop over the teacher-forced decoder states produced, step by step: the
    mixture's log P over token ids (``full``), else its inputs (vocabulary logits and gate features) for
    the loss at the labels only; each step's attention weights and the coverage before it; and the
    coverage and diversified context after the last step."""

    coverage: torch.Tensor
    diversity: torch.Tensor
    log_probs: list[torch.Tensor] = field(default_factory=list)
    vocab_logits: list[torch.Tensor] = field(default_factory=list)
    gate_features: list[torch.Tensor] = field(default_factory=list)
    weights: list[torch.Tensor] = field(default_factory=list)
    coverages: list[torch.Tensor] = field(default_factory=list)


class QueryPointerGeneratorPreTrainedModel(PreTrainedModel):
    config_class = QueryPointerGeneratorConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)


class QueryPointerGeneratorForIntentDescription(
    QueryPointerGeneratorPreTrainedModel, RecurrentGenerationMixin
):
    """Pointer-generator with coverage over the relevant documents, guided by the query.

    Labels (B, T) are token ids < ``vocab_size``; a label outside the output vocabulary that no source word
    of its example can supply is trained as ``[UNK]``.
    """

    def __init__(self, config: QueryPointerGeneratorConfig):
        super().__init__(config)
        states, hidden = 2 * config.hidden_size, config.decoder_hidden_size
        self.encoder = QueryPointerGeneratorEncoder(config)
        self.rnn = build_rnn("gru", config.embedding_size, hidden)
        self.attention = CoverageAttention(
            hidden, states, config.attention_size, use_coverage=config.coverage
        )
        if config.use_query:
            self.query_attention_term = nn.Linear(states, config.attention_size, bias=False)  # W_q x^q
        if config.diversity_attention:
            self.diversity_gate = nn.Linear(hidden + states, 1)  # g_t of the SD2-style context
        self.output_projection = nn.Linear(hidden + states, config.output_vocab_size)
        self.mixture = PointerGeneratorMixture(states + hidden + config.embedding_size)
        self.feature_dropout = nn.Dropout(config.dropout)
        self.post_init()
        if self.generation_config is not None:
            self.generation_config.max_length = config.max_decoding_length

    @property
    def logits_are_log_probs(self) -> bool:
        """``logits`` are log P of the pointer-generator mixture (See Eq. 9), not raw scores."""
        return True

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False

    def prepare_decoder_input_ids_from_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        """labels (B, T) -> decoder inputs (B, T): shifted right behind the decoder start (what forward and
        the Trainer's label handling use)."""
        return shift_labels_right(labels, self.config.decoder_start_token_id, self.config.pad_token_id)

    def get_encoder(self) -> QueryPointerGeneratorEncoder:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens.embedding = value

    def get_output_embeddings(self) -> None:
        return None

    def _copyable_targets(
        self, labels: torch.LongTensor, encoder_outputs: QueryPointerGeneratorEncoderOutput
    ) -> torch.LongTensor:
        """``labels`` with padding ignored and the out-of-vocabulary ids no source word supplies as [UNK]:
        no probability goes there."""
        config = self.config
        labels = mask_labels(labels, config.pad_token_id)
        return torch.where(
            labels == IGNORE_INDEX,
            labels,
            copyable_labels(
                labels.clamp_min(0),
                encoder_outputs.source_ids,
                encoder_outputs.source_mask,
                config.output_vocab_size,
                config.unk_token_id,
            ),
        )

    def _attend(
        self,
        outputs: torch.Tensor,
        embedded: torch.Tensor,
        encoder_outputs: QueryPointerGeneratorEncoderOutput,
        coverage: torch.Tensor,
        diverse: torch.Tensor,
        full: bool,
    ) -> _TeacherForcedSteps:
        """The coverage (and diversity) attention over the GRU's outputs, one decoder step after the
        other (each step's attention reads the coverage of the steps before it)."""
        config = self.config
        keys, mask = encoder_outputs.last_hidden_state, encoder_outputs.source_mask.bool()
        projected = self.attention.project_keys(keys)
        extra = self.query_attention_term(encoder_outputs.query_vector) if config.use_query else None
        steps = _TeacherForcedSteps(coverage, diverse)
        for t in range(embedded.shape[1]):
            state = outputs[:, t]
            attended = self.attention(
                state, keys, mask, coverage, projected, extra, encoder_outputs.relevance
            )
            context = attended.context
            if config.diversity_attention:
                # remove (gated) the part of c_t that repeats the previous diversified context d_{t-1}
                norm = (diverse * diverse).sum(-1, keepdim=True).clamp_min(1e-12)
                along = (context * diverse).sum(-1, keepdim=True) / norm
                gate = torch.sigmoid(self.diversity_gate(torch.cat([state, context], dim=-1)))
                context = context - gate * along * diverse
                diverse = context
            features = self.feature_dropout(torch.cat([state, context], dim=-1))
            vocab_logits = self.output_projection(features)
            gate_features = torch.cat([context, state, embedded[:, t]], dim=-1)
            if full:
                log_probs, _ = self.mixture(
                    vocab_logits,
                    attended.weights,
                    encoder_outputs.source_ids,
                    gate_features,
                    config.vocab_size,
                )
                steps.log_probs.append(log_probs)
            else:
                steps.vocab_logits.append(vocab_logits)
                steps.gate_features.append(gate_features)
            steps.weights.append(attended.weights)
            steps.coverages.append(coverage)
            coverage = coverage + attended.weights
        steps.coverage, steps.diversity = coverage, diverse
        return steps

    def _loss(
        self,
        scores: torch.Tensor | None,
        labels: torch.LongTensor,
        steps: _TeacherForcedSteps,
        source_ids: torch.LongTensor,
        full: bool,
        num_items_in_batch: int | torch.Tensor | None,
    ) -> torch.Tensor:
        """NLL of the labels (from the full distribution, or the mixture at the labels only) plus lambda
        times the coverage loss."""
        config = self.config
        if full:
            loss = token_nll(scores, labels, num_items_in_batch)
        else:
            length = labels.shape[1]
            loss = self.mixture.label_nll(
                torch.stack(steps.vocab_logits, 1).flatten(0, 1),
                torch.stack(steps.weights, 1).flatten(0, 1),
                source_ids.unsqueeze(1).expand(-1, length, -1).flatten(0, 1),
                torch.stack(steps.gate_features, 1).flatten(0, 1),
                labels.reshape(-1),
                num_items_in_batch,
            )
        if config.coverage and config.coverage_loss_weight > 0:
            counted = labels != IGNORE_INDEX
            total = coverage_loss(torch.stack(steps.weights, 1), torch.stack(steps.coverages, 1), counted)
            denominator = num_items_in_batch if num_items_in_batch is not None else counted.sum().clamp_min(1)
            if isinstance(denominator, torch.Tensor):
                denominator = denominator.to(total.device)
            loss = loss + config.coverage_loss_weight * total / denominator
        return loss

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        relevant_input_ids: torch.LongTensor | None = None,
        relevant_attention_mask: torch.Tensor | None = None,
        irrelevant_input_ids: torch.LongTensor | None = None,
        irrelevant_attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: QueryPointerGeneratorEncoderOutput | tuple | None = None,
        past_key_values: RecurrentStateCache | None = None,
        cache: RecurrentStateCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput | tuple:
        """Same inputs as :class:`CtrsGenForIntentDescription` (irrelevant documents accepted, unused).
        Returns ``logits`` (B, T, vocab_size) = log P over token ids (None for a model in training mode given
        labels: the loss reads the mixture at the labels only); ``loss`` = NLL + lambda coverage."""
        config = self.config
        return_dict = config.return_dict if return_dict is None else return_dict
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids, attention_mask, relevant_input_ids, relevant_attention_mask
            )
        elif not isinstance(encoder_outputs, QueryPointerGeneratorEncoderOutput):
            encoder_outputs = QueryPointerGeneratorEncoderOutput(*encoder_outputs)
        if decoder_input_ids is None:
            if labels is None:
                raise InvalidInputError("QueryPointerGenerator.forward needs decoder_input_ids or labels")
            decoder_input_ids = shift_labels_right(labels, config.decoder_start_token_id, config.pad_token_id)
        if use_cache is None:
            use_cache = labels is None
        keys, mask = encoder_outputs.last_hidden_state, encoder_outputs.source_mask.bool()
        past_key_values = pick_cache(past_key_values, cache)  # <= 5.23 / >= 5.24 name of the state
        resuming = past_key_values is not None and past_key_values.get_seq_length() > 0
        hidden = past_key_values["hidden"] if resuming else encoder_outputs.initial_state
        coverage = past_key_values["coverage"] if resuming else keys.new_zeros(mask.shape)
        diverse = past_key_values["diversity"] if resuming and config.diversity_attention else None
        if diverse is None:
            diverse = keys.new_zeros(keys.shape[0], keys.shape[-1])

        if labels is not None:
            labels = self._copyable_targets(labels, encoder_outputs)
        # in training, only log P(label) is needed: the distribution over all W token ids (most of a step's
        # time on CPU) is built in eval mode and for generation, where logits are read
        full = not (self.training and labels is not None)
        embedded = self.encoder.embed_tokens(decoder_input_ids)  # (B, T, E)
        # no input feeding: the GRU runs over all teacher-forced steps at once; only attention loops
        outputs, last = self.rnn(embedded, hidden.unsqueeze(0).contiguous())
        steps = self._attend(outputs, embedded, encoder_outputs, coverage, diverse, full)
        coverage, diverse = steps.coverage, steps.diversity
        scores = torch.stack(steps.log_probs, dim=1) if full else None  # (B, T, W)

        cache = None
        if use_cache:
            cache = past_key_values if past_key_values is not None else RecurrentStateCache()
            states = {"hidden": last.squeeze(0), "coverage": coverage}
            if config.diversity_attention:
                states["diversity"] = diverse
            cache.update(**states)
            cache.advance(decoder_input_ids.shape[1])
        loss = None
        if labels is not None:
            loss = self._loss(scores, labels, steps, encoder_outputs.source_ids, full, num_items_in_batch)
        if not return_dict:
            return tuple(value for value in (loss, scores, cache) if value is not None)
        return Seq2SeqLMOutput(loss=loss, logits=scores, **with_cache(cache))


__all__ = [
    "QueryPointerGeneratorEncoder",
    "QueryPointerGeneratorEncoderOutput",
    "QueryPointerGeneratorForIntentDescription",
    "QueryPointerGeneratorPreTrainedModel",
    "sentence_query_overlap",
]
