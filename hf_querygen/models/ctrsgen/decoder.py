"""CtrsGen's decoder (Zhang et al., CIKM'20, Sec. 4.5), one GRU step at a time, and the copy loss.
Shapes as in :mod:`.modeling_ctrsgen`.

Decoder step z (attention reads the previous state h^s_{z-1}):
  alpha^q = softmax_c(h^q_c W_1 h^s_{z-1}), c^q = sum_c alpha^q_c h^q_c                         Eq. (5)-(6)
  alpha^r = softmax_u(v^T tanh(W_2 h^r_u + W_3 c^q + W_4 h^s_{z-1}))                            Eq. (7)
  beta = softmax_u(lambda h^r_u W_5 h^s_{z-1} - (1 - lambda) m_u)                           Eq. (8)-(10)
  c^d = sum_u beta_u alpha^r_u h^r_u                                                              Eq. (12)
  h^s_z = GRU([e(y_{z-1}); c^q; c^d], h^s_{z-1})                                                  Eq. (2)
  p(y_z) = softmax(W_o [e(y_{z-1}); h^s_z; c^q; c^d] + b_o)                                      Eq. (4)
Beyond the paper, ``copy=True`` (See et al. 2017, Eq. 8-9, over the S = C + U*L query and relevant words):
  a^copy_z = softmax_j(v^T tanh(W_h h_j + W_s h^s_z)), c^copy_z = sum_j a^copy_{z,j} h_j   (h_j: word states)
  p_gen = sigmoid(w^T [c^copy_z; h^s_z; e(y_{z-1})] + b)
  P(w) = p_gen p(y_z = w) + (1 - p_gen) sum_{j: x_j = w} a^copy_{z,j}     over all vocab_size token ids
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...nn.attention import AdditiveAttention, LuongAttention, masked_softmax
from ...nn.coverage import PointerGeneratorMixture
from ...nn.encoder import WordEmbeddings, build_rnn
from .configuration_ctrsgen import CtrsGenConfig
from .encoder import CtrsGenEncoderOutput


@dataclass
class DecoderStepWeights:
    """Per-step attention weights for analysis: (B, Z, U) each; beta_alpha = the Eq. (12) weights."""

    relevant: torch.Tensor
    contrast: torch.Tensor
    combined: torch.Tensor


class CtrsGenDecoder(nn.Module):
    """GRU decoder with query-aware and contrast-based attention (Sec. 4.5), one step at a time."""

    def __init__(self, config: CtrsGenConfig):
        super().__init__()
        self.config = config
        # the settings read at every decoder step, as plain attributes: a transformers config attribute read
        # costs ~1-2 us, paid several times per step and per training step
        self.joint = config.decoder_attention == "concat"
        self.use_query = config.use_query
        self.contrast_lambda = config.contrast_lambda
        self.renormalized = config.contrast_combination == "renormalized"
        self.word_context = config.document_context == "word" and not self.joint
        self.copy = config.copy
        states, hidden, attention = (
            config.encoder_output_size,
            config.decoder_hidden_size,
            config.attention_size,
        )
        if not config.tie_word_embeddings:
            self.embed_tokens = WordEmbeddings(
                config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout
            )
        if config.decoder_attention == "concat":
            # CtrsGen-I+Con: one attention over [h^q_1..h^q_C; h^r_1..h^r_U]
            self.joint_attention = AdditiveAttention(hidden, states, attention)
            context_size = states
        else:
            if config.use_query:
                self.query_attention = LuongAttention(hidden, states, score="general")  # W_1, Eq. (6)
            query_context = states if config.use_query else 0
            # W_2 h^r_u + [W_3; W_4] [c^q; h^s_{z-1}], Eq. (7)
            self.relevant_attention = AdditiveAttention(query_context + hidden, states, attention)
            self.generation_similarity = nn.Linear(states, hidden, bias=False)  # W_5, Eq. (10)
            if config.document_context == "word":
                self.word_attention = AdditiveAttention(hidden, states, attention)
            context_size = query_context + states
        self.rnn = build_rnn("gru", config.embedding_size + context_size, hidden)  # f_s, Eq. (2)
        self.feature_dropout = nn.Dropout(config.dropout)
        # f_g of Eq. (4): a linear layer over [e(y_{z-1}); h^s_z; c^q; c^d] and a softmax
        self.output_projection = nn.Linear(
            config.embedding_size + hidden + context_size, config.output_vocab_size
        )
        if config.copy:
            # See et al. (2017) Eq. (1) (attention over the copy sources from h^s_z) and Eq. (8) (p_gen)
            # bilinear (Luong "general") scores: the additive form's tanh over (B, Z, S, A) cost ~25% of a
            # training step on CPU
            self.copy_attention = LuongAttention(hidden, states, score="general")
            self.copy_mixture = PointerGeneratorMixture(states + hidden + config.embedding_size)

    def _contexts(
        self, previous: torch.Tensor, encoder_outputs: CtrsGenEncoderOutput, cached: dict
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """previous h^s_{z-1} (B, H_d) -> the context fed to the GRU and the output layer (B, context_size),
        plus (alpha^r, beta, beta*alpha) each (B, U) for the contrast attention. Runs once per decoder step:
        everything that does not depend on the step (masks, key projections, the contrast penalty term)
        comes from :meth:`precompute`, and the attentions run their ``step`` (no shape checks)."""
        if self.joint:
            context, _ = self.joint_attention.step(
                previous, cached["joint_keys"], cached["joint_mask"], cached["joint_projected"]
            )
            return context, None
        relevant = encoder_outputs.last_hidden_state
        relevant_mask = cached["relevant_mask"]
        pieces, attention_query = [], previous
        if self.use_query:
            query_context, _ = self.query_attention.step(
                previous, encoder_outputs.query_states, cached["query_mask"], cached["query_projected"]
            )  # Eq. (5)-(6)
            pieces.append(query_context)
            attention_query = torch.cat([query_context, previous], dim=-1)
        _, alpha = self.relevant_attention.step(
            attention_query, relevant, relevant_mask, cached["relevant_projected"]
        )
        # Eq. (8)-(10): lambda Sim(s_u, y_<z) - (1 - lambda) m_u, softmax over the relevant sentences
        generated_similarity = torch.bmm(cached["similarity_keys"], previous.unsqueeze(2)).squeeze(2)
        contrast_scores = self.contrast_lambda * generated_similarity - cached["contrast_penalty"]
        beta, _ = masked_softmax(contrast_scores, relevant_mask)
        weights = beta * alpha  # Eq. (12)
        if self.renormalized:
            weights = weights / weights.sum(dim=1, keepdim=True).clamp_min(1e-12)
        if self.word_context:
            word_states = encoder_outputs.relevant_word_states  # (B, U, L, H_e)
            batch, sentences, words, size = word_states.shape
            word_context, _ = self.word_attention.step(
                previous.unsqueeze(1).expand(batch, sentences, -1).reshape(batch * sentences, -1),
                cached["word_keys"],
                cached["word_mask"],
                cached["word_projected"],
            )
            document = torch.bmm(weights.unsqueeze(1), word_context.view(batch, sentences, size)).squeeze(1)
        else:
            document = torch.bmm(weights.unsqueeze(1), relevant).squeeze(1)  # c^d, Eq. (12)
        pieces.append(document)
        return torch.cat(pieces, dim=-1), (alpha, beta, weights)

    def precompute(self, encoder_outputs: CtrsGenEncoderOutput) -> dict:
        """Step-independent parts of every decoder step (computed once per forward call): projections of
        the encoder states, boolean masks and the contrast penalty (1 - lambda) m_u of Eq. (8)."""
        if self.joint:
            keys = torch.cat([encoder_outputs.query_states, encoder_outputs.last_hidden_state], dim=1)
            mask = torch.cat(
                [encoder_outputs.attention_mask.bool(), encoder_outputs.relevant_mask.bool()], dim=1
            )
            return {
                "joint_keys": keys,
                "joint_mask": mask,
                "joint_projected": self.joint_attention.project_keys(keys),
            }
        relevant = encoder_outputs.last_hidden_state
        relevant_mask = encoder_outputs.relevant_mask.bool()
        cached = {
            "relevant_projected": self.relevant_attention.project_keys(relevant),
            "similarity_keys": self.generation_similarity(relevant),  # h^r_u W_5 (B, U, H_d)
            "relevant_mask": relevant_mask,
            "contrast_penalty": (1.0 - self.contrast_lambda) * encoder_outputs.contrast_penalty,
        }
        if self.use_query:
            cached["query_projected"] = self.query_attention.project_keys(encoder_outputs.query_states)
            cached["query_mask"] = encoder_outputs.attention_mask.bool()
        if self.word_context:
            word_keys = encoder_outputs.relevant_word_states.flatten(0, 1)  # (B * U, L, H_e)
            cached["word_keys"] = word_keys
            cached["word_mask"] = encoder_outputs.relevant_word_mask.bool().flatten(0, 1)
            cached["word_projected"] = self.word_attention.project_keys(word_keys)
        return cached

    def forward(
        self,
        embedded: torch.Tensor,
        encoder_outputs: CtrsGenEncoderOutput,
        hidden: torch.Tensor,
        return_weights: bool = False,
        copy_distribution: bool = True,
    ) -> tuple[torch.Tensor | None, torch.Tensor, DecoderStepWeights | None, CopyInputs | None]:
        """embedded (B, Z, E) decoder inputs e(y_{z-1}), hidden (B, H_d) h^s before the first of them ->
        (scores (B, Z, W), hidden after the last step (B, H_d), optional per-step weights, the copy
        mixture's inputs or None). With ``copy`` the scores are log P over all ``vocab_size`` token ids
        (See Eq. 9), or None with ``copy_distribution=False`` (training needs only P(label))."""
        cached = self.precompute(encoder_outputs)
        contexts, recorded, states = [], [], []
        # one GRU step = torch.gru_cell on the nn.GRU's own weights: the same operations as nn.GRU over one
        # step (bit-identical), without the module call and the (1, B, .) reshapes at every step
        rnn = self.rnn
        cell_weights = (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
        # unbind once: one backward node for all steps, not a zero-filled (B, Z, E) gradient per step
        for step_input in embedded.unbind(1):
            context, weights = self._contexts(hidden, encoder_outputs, cached)
            hidden = torch.gru_cell(
                torch.cat([step_input, context], dim=-1), hidden, *cell_weights
            )  # Eq. (2)
            states.append(hidden)
            contexts.append(context)
            if return_weights and weights is not None:
                recorded.append(weights)
        states = torch.stack(states, dim=1)  # (B, Z, H_d)
        # Eq. (4) for all steps in one matrix product: nothing recurrent depends on the output layer, and
        # one (B * Z, F) x (F, W) product is much cheaper on CPU than Z small ones; the features are
        # joined once here, not per step
        features = torch.cat([embedded, states, torch.stack(contexts, dim=1)], dim=-1)
        scores = self.output_projection(self.feature_dropout(features))
        copy_inputs = None
        if self.copy:
            copy_inputs = self.copy_inputs(scores, states, embedded, encoder_outputs)
        if self.copy and not copy_distribution:
            scores = None
        elif self.copy:
            log_probs, _ = self.copy_mixture(
                copy_inputs.vocab_scores,
                copy_inputs.attention,
                copy_inputs.source_ids,
                copy_inputs.features,
                self.config.vocab_size,
            )
            scores = log_probs.view(*scores.shape[:2], -1)
        step_weights = None
        if recorded:
            step_weights = DecoderStepWeights(*(torch.stack(w, dim=1) for w in zip(*recorded, strict=True)))
        return scores, hidden, step_weights, copy_inputs

    def copy_inputs(
        self, scores: torch.Tensor, states: torch.Tensor, embedded: torch.Tensor, encoder_outputs
    ) -> CopyInputs:
        """scores (B, Z, W_out), decoder states h^s_z (B, Z, H_d), inputs e(y_{z-1}) (B, Z, E) -> what the
        pointer-generator mixture reads, flattened to N = B * Z rows. The copy attention reads h^s_z and
        feeds nothing back into the recurrence, so every step is computed at once after the loop."""
        keys, mask = encoder_outputs.copy_states, encoder_outputs.copy_mask.bool()
        attended = self.copy_attention(states, keys, mask)  # weights (B, Z, S), context (B, Z, H_e)
        batch, steps, source = attended.weights.shape
        features = torch.cat([attended.context, states, embedded], dim=-1)
        return CopyInputs(
            scores.reshape(batch * steps, -1),
            attended.weights.reshape(batch * steps, source),
            encoder_outputs.copy_ids.unsqueeze(1).expand(batch, steps, source).reshape(batch * steps, source),
            features.reshape(batch * steps, -1),
        )


@dataclass
class CopyInputs:
    """The pointer-generator mixture's inputs, N = B * Z rows: vocab_scores (N, W_out), attention (N, S),
    source_ids (N, S), features (N, F) = [c^copy; h^s_z; e(y_{z-1})]."""

    vocab_scores: torch.Tensor
    attention: torch.Tensor
    source_ids: torch.Tensor
    features: torch.Tensor
