"""CtrsGen: contrastive generation of a query's intent description (Zhang et al., CIKM'20, Sec. 4).

Inputs (all right-padded at every level; see :mod:`hf_querygen.tasks.q2id` for the collator):
  input_ids (B, C) query words, attention_mask (B, C);
  relevant_input_ids (B, M, T, L) relevant documents x sentences x words, relevant_attention_mask same;
  irrelevant_input_ids (B, N, K, L') irrelevant documents x sentences x words (N may be 0 or all-masked).

Shapes below: H_e = 2 * hidden_size (BiGRU states), H_d decoder size, U relevant sentences of the
mega-document (Sec. 4.3, after dropping padding), V irrelevant sentences, C query words, L words per
sentence, Z decoder steps, A attention size, W output vocabulary.

Encoder (run once; generate() expands its batch-first outputs for beams):
  query BiGRU -> h^q_c (B, C, H_e), x^q = [last fwd; last bwd] (B, H_e)                         Sec. 4.2
  word BiGRU per sentence -> h_{u,l}, e_u; sentence BiGRU over the mega-document -> h^r_u       Sec. 4.3
  gamma_u = softmax_u(x^q Q h^r_u), x^r = sum_u gamma_u h^r_u                           query-aware enc. attn
  irrelevant documents: the same hierarchy per document -> h^i_{n,t}                             Sec. 4.4
  h^s_0 = W_q x^q + W_r x^r                                                                      Eq. (3)
  m_u = max_{n,t} Sim(s^r_u, s^i_{n,t}), Sim = softmax(tanh(h^r_u W_6 h^i_{n,t}))   Eq. (8) 2nd term, (11)
    (m does not depend on the decoder step, so it is computed once here; 0 without irrelevant docs)
Decoder step z (attention reads the previous state h^s_{z-1}):
  alpha^q = softmax_c(h^q_c W_1 h^s_{z-1}), c^q = sum_c alpha^q_c h^q_c                         Eq. (5)-(6)
  alpha^r = softmax_u(v^T tanh(W_2 h^r_u + W_3 c^q + W_4 h^s_{z-1}))                            Eq. (7)
  beta = softmax_u(lambda h^r_u W_5 h^s_{z-1} - (1 - lambda) m_u)                           Eq. (8)-(10)
  c^d = sum_u beta_u alpha^r_u h^r_u                                                              Eq. (12)
  h^s_z = GRU([e(y_{z-1}); c^q; c^d], h^s_{z-1})                                                  Eq. (2)
  p(y_z) = softmax(W_o [e(y_{z-1}); h^s_z; c^q; c^d] + b_o)                                      Eq. (4)
The ablations of Table 3 are config switches (see :class:`CtrsGenConfig`).
Beyond the paper, ``copy=True`` (See et al. 2017, Eq. 8-9, over the S = C + U*L query and relevant words):
  a^copy_z = softmax_j(v^T tanh(W_h h_j + W_s h^s_z)), c^copy_z = sum_j a^copy_{z,j} h_j   (h_j: word states)
  p_gen = sigmoid(w^T [c^copy_z; h^s_z; e(y_{z-1})] + b)
  P(w) = p_gen p(y_z = w) + (1 - p_gen) sum_{j: x_j = w} a^copy_{z,j}     over all vocab_size token ids
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import ModelOutput

from ...errors import InvalidInputError
from ...nn.attention import AdditiveAttention, LuongAttention, masked_softmax
from ...nn.cache import RecurrentStateCache, pick_cache, with_cache
from ...nn.coverage import PointerGeneratorMixture, copyable_labels
from ...nn.encoder import RNNEncoder, WordEmbeddings, build_rnn
from ...nn.hierarchical import HierarchicalEncoder, compact_rows
from ...nn.initialization import init_uniform_weights
from ...nn.labels import IGNORE_INDEX, mask_labels, shift_labels_right
from ...nn.loss import token_nll
from .._generation import RecurrentGenerationMixin
from .configuration_ctrsgen import CtrsGenConfig


@dataclass
class CtrsGenEncoderOutput(ModelOutput):
    """Batch-first encoder results (generate() repeats every tensor along dim 0 for beams).

    last_hidden_state: (B, U, H_e) relevant sentence states h^r_u, zero at padding.
    relevant_mask: (B, U) 1 at real relevant sentences.
    relevant_word_states: (B, U, L, H_e) word states h_{u,l} of the relevant sentences (only with
        ``document_context="word"``).
    relevant_word_mask: (B, U, L) 1 at real words (with ``relevant_word_states``).
    query_states: (B, C, H_e) query word states h^q_c (None without the query).
    attention_mask: (B, C) query mask (None without the query).
    contrast_penalty: (B, U) m_u = max_{n,t} Sim(s^r_u, s^i_{n,t}) (Eq. 8, 11); 0 without irrelevant docs.
    initial_state: (B, H_d) h^s_0 (Eq. 3).
    sentence_salience: (B, U) gamma_u of the query-aware encoder attention.
    copy_states: (B, S, H_e) word states of the copy sources (query words, then the relevant words), only
        with ``copy``; copy_mask (B, S) and copy_ids (B, S) their mask and token ids.
    """

    last_hidden_state: torch.FloatTensor | None = None
    relevant_mask: torch.LongTensor | None = None
    relevant_word_states: torch.FloatTensor | None = None
    relevant_word_mask: torch.LongTensor | None = None
    query_states: torch.FloatTensor | None = None
    attention_mask: torch.LongTensor | None = None
    contrast_penalty: torch.FloatTensor | None = None
    initial_state: torch.FloatTensor | None = None
    sentence_salience: torch.FloatTensor | None = None
    copy_states: torch.FloatTensor | None = None
    copy_mask: torch.LongTensor | None = None
    copy_ids: torch.LongTensor | None = None


def _check_nested(name: str, ids: torch.Tensor | None, mask: torch.Tensor | None) -> None:
    if ids is None:
        return
    if ids.dim() != 4:
        raise InvalidInputError(
            f"CtrsGen: {name}_input_ids must be (batch, documents, sentences, words); got shape "
            f"{tuple(ids.shape)}"
        )
    if mask is not None and mask.shape != ids.shape:
        raise InvalidInputError(
            f"CtrsGen: {name}_attention_mask {tuple(mask.shape)} does not match {name}_input_ids "
            f"{tuple(ids.shape)}"
        )


def _pad_words(tensor: torch.Tensor, length: int) -> torch.Tensor:
    """(B, S, L, ...) -> (B, S, length, ...) with zeros appended on the word axis."""
    missing = length - tensor.shape[2]
    if missing <= 0:
        return tensor
    return torch.cat([tensor, tensor.new_zeros(*tensor.shape[:2], missing, *tensor.shape[3:])], dim=2)


class CtrsGenEncoder(nn.Module):
    """Query, relevant and irrelevant document encoders plus the step-independent parts of attention."""

    main_input_name = "input_ids"

    def __init__(self, config: CtrsGenConfig):
        super().__init__()
        self.config = config
        hidden, states = config.hidden_size, config.encoder_output_size
        self.embed_tokens = WordEmbeddings(
            config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout
        )
        self.relevant_encoder = HierarchicalEncoder(config.embedding_size, hidden, "gru", True)
        if config.use_query:
            self.query_encoder = RNNEncoder(config.embedding_size, hidden, 1, "gru", True)
            self.salience = nn.Linear(states, states, bias=False)  # Q of gamma = softmax(x^q Q h^r_u)
            self.query_to_state = nn.Linear(states, config.decoder_hidden_size, bias=False)  # W_q, Eq. (3)
        else:
            # CtrsGen-Q: no x^q, so gamma scores the sentences with a learned vector (x^q Q -> g)
            self.salience = nn.Linear(states, 1, bias=False)
        self.relevant_to_state = nn.Linear(states, config.decoder_hidden_size, bias=False)  # W_r, Eq. (3)
        if config.encodes_irrelevant:
            if not config.share_document_encoder:
                self.irrelevant_encoder = HierarchicalEncoder(config.embedding_size, hidden, "gru", True)
            self.irrelevant_similarity = nn.Linear(states, states, bias=False)  # W_6, Eq. (11)
        # ReIrCon treats every judged document as relevant: the relevant encoder reads them all

    def _irrelevant_hierarchy(self) -> HierarchicalEncoder:
        return getattr(self, "irrelevant_encoder", self.relevant_encoder)

    def _embed_nested(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed_tokens(ids.flatten(0, 1)).view(*ids.shape, -1)

    def _relevant_sentences(
        self, relevant_input_ids, relevant_attention_mask, irrelevant_input_ids, irrelevant_attention_mask
    ):
        """-> word states (B, U, L, H_e), word mask (B, U, L), word ids (B, U, L), sentence embeddings
        (B, U, H_e), mask (B, U): the relevant mega-document (Sec. 4.3), with the irrelevant documents
        appended for ReIrCon."""
        sets = [(relevant_input_ids, relevant_attention_mask)]
        if self.config.irrelevant_as_relevant and irrelevant_input_ids is not None:
            sets.append((irrelevant_input_ids, irrelevant_attention_mask))
        words, word_masks, word_ids, sentences, sentence_masks = [], [], [], [], []
        for ids, mask in sets:
            if ids.numel() == 0:
                continue
            level = self.relevant_encoder.encode_words(self._embed_nested(ids), mask.bool())
            words.append(level.word_states.flatten(1, 2))
            word_masks.append(mask.bool().flatten(1, 2))
            word_ids.append(ids.flatten(1, 2))
            sentences.append(level.sentence_embeddings.flatten(1, 2))
            sentence_masks.append(level.sentence_mask.flatten(1, 2))
        length = max(w.shape[2] for w in words)
        words = torch.cat([_pad_words(w, length) for w in words], dim=1)
        word_masks = torch.cat([_pad_words(m, length) for m in word_masks], dim=1)
        word_ids = torch.cat([_pad_words(i, length) for i in word_ids], dim=1)
        sentences, sentence_masks = torch.cat(sentences, dim=1), torch.cat(sentence_masks, dim=1)
        empty = (~sentence_masks.any(dim=1)).nonzero().flatten().tolist()
        if empty:
            raise InvalidInputError(
                f"CtrsGen: batch rows {empty} have no relevant sentence; every query needs at least one "
                "relevant document with a word in it (Zhang'20 Sec. 3.1, M >= 1)"
            )
        compact_words, _ = compact_rows(words, sentence_masks)
        compact_word_mask, _ = compact_rows(word_masks, sentence_masks)
        compact_word_ids, _ = compact_rows(word_ids, sentence_masks)
        compact_sentences, compact_mask = compact_rows(sentences, sentence_masks)
        return compact_words, compact_word_mask, compact_word_ids, compact_sentences, compact_mask

    def _irrelevant_states(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ids/mask (B, N, K, L) -> irrelevant sentence states h^i (B, V, H_e) and mask (B, V) (Sec. 4.4)."""
        hierarchy = self._irrelevant_hierarchy()
        batch, docs, sents = ids.shape[:3]
        if ids.numel() == 0 or not bool(mask.any()):
            return ids.new_zeros(batch, 1, self.config.encoder_output_size, dtype=torch.float), ids.new_zeros(
                batch, 1, dtype=torch.bool
            )
        level = hierarchy.encode_words(self._embed_nested(ids), mask.bool())
        if self.config.irrelevant_encoding == "per_document":
            # each irrelevant document is its own sentence sequence: no interaction between documents
            embeddings, sentence_mask = compact_rows(
                level.sentence_embeddings.flatten(0, 1), level.sentence_mask.flatten(0, 1)
            )
            states = hierarchy.encode_sentences(embeddings, sentence_mask)  # (B * N, K', H_e)
            states, sentence_mask = states.view(batch, -1, states.shape[-1]), sentence_mask.view(batch, -1)
        else:  # CtrsGen-IrCon: one irrelevant mega-document
            embeddings, sentence_mask = compact_rows(
                level.sentence_embeddings.flatten(1, 2), level.sentence_mask.flatten(1, 2)
            )
            states = hierarchy.encode_sentences(embeddings, sentence_mask)
        states, sentence_mask = compact_rows(states, sentence_mask)
        return states, sentence_mask

    def contrast_penalty(
        self,
        relevant: torch.Tensor,
        relevant_mask: torch.Tensor,
        irrelevant: torch.Tensor,
        irrelevant_mask: torch.Tensor,
    ) -> torch.Tensor:
        """m_u = max_{n,t} Sim(s^r_u, s^i_{n,t}) with Sim = softmax(tanh(h^r_u W_6 h^i_{n,t})) (Eq. 11);
        relevant (B, U, H_e), irrelevant (B, V, H_e) -> (B, U); 0 where an example has no irrelevant
        sentence. The softmax axis is ``config.contrast_softmax``."""
        similarity = torch.tanh(torch.bmm(self.irrelevant_similarity(relevant), irrelevant.transpose(1, 2)))
        pairs = relevant_mask.unsqueeze(2) & irrelevant_mask.unsqueeze(1)  # (B, U, V)
        axis = self.config.contrast_softmax
        if axis == "irrelevant":
            similarity, _ = masked_softmax(similarity, pairs)
        elif axis == "relevant":
            weights, _ = masked_softmax(similarity.transpose(1, 2), pairs.transpose(1, 2))
            similarity = weights.transpose(1, 2)
        penalty = similarity.masked_fill(~pairs, float("-inf")).max(dim=2).values
        return torch.where(pairs.any(dim=2), penalty, torch.zeros_like(penalty))

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        relevant_input_ids: torch.LongTensor | None = None,
        relevant_attention_mask: torch.Tensor | None = None,
        irrelevant_input_ids: torch.LongTensor | None = None,
        irrelevant_attention_mask: torch.Tensor | None = None,
        **kwargs,
    ) -> CtrsGenEncoderOutput:
        """See the module docstring for shapes. Masks default to ``ids != pad_token_id``."""
        config = self.config
        pad = config.pad_token_id
        if relevant_input_ids is None:
            raise InvalidInputError("CtrsGen needs relevant_input_ids (batch, documents, sentences, words)")
        _check_nested("relevant", relevant_input_ids, relevant_attention_mask)
        _check_nested("irrelevant", irrelevant_input_ids, irrelevant_attention_mask)
        if relevant_attention_mask is None:
            relevant_attention_mask = relevant_input_ids != pad
        if irrelevant_input_ids is not None and irrelevant_attention_mask is None:
            irrelevant_attention_mask = irrelevant_input_ids != pad
        if irrelevant_input_ids is not None and irrelevant_input_ids.shape[0] != relevant_input_ids.shape[0]:
            raise InvalidInputError(
                f"CtrsGen: irrelevant_input_ids has batch {irrelevant_input_ids.shape[0]}, "
                f"relevant_input_ids {relevant_input_ids.shape[0]}"
            )

        words, word_mask, word_ids, sentences, relevant_mask = self._relevant_sentences(
            relevant_input_ids, relevant_attention_mask, irrelevant_input_ids, irrelevant_attention_mask
        )
        relevant = self.relevant_encoder.encode_sentences(sentences, relevant_mask)  # h^r_u (B, U, H_e)

        query_states = query_mask = None
        if config.use_query:
            if input_ids is None:
                raise InvalidInputError("CtrsGen with use_query=True needs input_ids (the query words)")
            if attention_mask is None:
                attention_mask = (input_ids != pad).long()
            encoded = self.query_encoder(self.embed_tokens(input_ids), attention_mask)
            query_states, query_mask = encoded.outputs, attention_mask
            query_vector = encoded.final_hidden[:, -1]  # x^q = [last fwd; last bwd], Sec. 4.2
            salience_scores = torch.bmm(relevant, self.salience(query_vector).unsqueeze(2)).squeeze(2)
        else:
            salience_scores = self.salience(relevant).squeeze(2)
        gamma, _ = masked_softmax(salience_scores.unsqueeze(1), relevant_mask)  # (B, 1, U)
        relevant_vector = torch.bmm(gamma, relevant).squeeze(1)  # x^r = sum_u gamma_u h^r_u
        initial_state = self.relevant_to_state(relevant_vector)  # Eq. (3)
        if config.use_query:
            initial_state = initial_state + self.query_to_state(query_vector)

        if config.encodes_irrelevant and irrelevant_input_ids is not None:
            irrelevant, irrelevant_mask = self._irrelevant_states(
                irrelevant_input_ids, irrelevant_attention_mask
            )
            penalty = self.contrast_penalty(relevant, relevant_mask, irrelevant, irrelevant_mask)
        else:
            penalty = relevant.new_zeros(relevant_mask.shape)

        keep_words = config.document_context == "word" and config.decoder_attention == "contrast"
        copy_states = copy_mask = copy_ids = None
        if config.copy:
            # the copy sources: query words (with their [EOS]) then the relevant words, in reading order;
            # padding is masked (zero attention), so the batch does not change a row's distribution
            copy_states = words.flatten(1, 2)
            copy_mask, copy_ids = word_mask.flatten(1, 2), word_ids.flatten(1, 2)
            if config.use_query:
                copy_states = torch.cat([query_states, copy_states], dim=1)
                copy_mask = torch.cat([query_mask.bool(), copy_mask], dim=1)
                copy_ids = torch.cat([input_ids, copy_ids], dim=1)
        return CtrsGenEncoderOutput(
            last_hidden_state=relevant,
            relevant_mask=relevant_mask.long(),
            relevant_word_states=words if keep_words else None,
            relevant_word_mask=word_mask.long() if keep_words else None,
            query_states=query_states,
            attention_mask=query_mask,
            contrast_penalty=penalty,
            initial_state=initial_state,
            sentence_salience=gamma.squeeze(1),
            copy_states=copy_states,
            copy_mask=copy_mask.long() if copy_mask is not None else None,
            copy_ids=copy_ids,
        )


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
        plus (alpha^r, beta, beta*alpha) each (B, U) for the contrast attention."""
        config = self.config
        relevant = encoder_outputs.last_hidden_state
        relevant_mask = encoder_outputs.relevant_mask.bool()
        if config.decoder_attention == "concat":
            context = self.joint_attention(
                previous, cached["joint_keys"], cached["joint_mask"], cached["joint_projected"]
            )
            return context.context, None
        pieces, attention_query = [], previous
        if config.use_query:
            query = self.query_attention(
                previous,
                encoder_outputs.query_states,
                encoder_outputs.attention_mask.bool(),
                cached["query_projected"],
            )  # Eq. (5)-(6)
            pieces.append(query.context)
            attention_query = torch.cat([query.context, previous], dim=-1)
        alpha = self.relevant_attention(
            attention_query, relevant, relevant_mask, cached["relevant_projected"]
        ).weights
        # Eq. (8)-(10): lambda Sim(s_u, y_<z) - (1 - lambda) m_u, softmax over the relevant sentences
        generated_similarity = torch.bmm(cached["similarity_keys"], previous.unsqueeze(2)).squeeze(2)
        lam = config.contrast_lambda
        contrast_scores = lam * generated_similarity - (1.0 - lam) * encoder_outputs.contrast_penalty
        beta, _ = masked_softmax(contrast_scores.unsqueeze(1), relevant_mask)
        beta = beta.squeeze(1)
        weights = beta * alpha  # Eq. (12)
        if config.contrast_combination == "renormalized":
            weights = weights / weights.sum(dim=1, keepdim=True).clamp_min(1e-12)
        if config.document_context == "word":
            word_states = encoder_outputs.relevant_word_states  # (B, U, L, H_e)
            batch, sentences, words, size = word_states.shape
            word_context = self.word_attention(
                previous.unsqueeze(1).expand(batch, sentences, -1).reshape(batch * sentences, -1),
                word_states.reshape(batch * sentences, words, size),
                encoder_outputs.relevant_word_mask.bool().reshape(batch * sentences, words),
                cached["word_projected"],
            ).context.view(batch, sentences, size)
            document = torch.bmm(weights.unsqueeze(1), word_context).squeeze(1)
        else:
            document = torch.bmm(weights.unsqueeze(1), relevant).squeeze(1)  # c^d, Eq. (12)
        pieces.append(document)
        return torch.cat(pieces, dim=-1), (alpha, beta, weights)

    def precompute(self, encoder_outputs: CtrsGenEncoderOutput) -> dict:
        """Step-independent projections of the encoder states (computed once per forward call)."""
        config = self.config
        if config.decoder_attention == "concat":
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
        cached = {
            "relevant_projected": self.relevant_attention.project_keys(relevant),
            "similarity_keys": self.generation_similarity(relevant),  # h^r_u W_5 (B, U, H_d)
        }
        if config.use_query:
            cached["query_projected"] = self.query_attention.project_keys(encoder_outputs.query_states)
        if config.document_context == "word":
            word_states = encoder_outputs.relevant_word_states
            cached["word_projected"] = self.word_attention.project_keys(word_states.flatten(0, 1))
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
        step_features, recorded, states = [], [], []
        for z in range(embedded.shape[1]):
            context, weights = self._contexts(hidden, encoder_outputs, cached)
            rnn_input = torch.cat([embedded[:, z], context], dim=-1).unsqueeze(1)
            output, state = self.rnn(rnn_input, hidden.unsqueeze(0).contiguous())  # Eq. (2)
            hidden = state.squeeze(0)
            states.append(hidden)
            step_features.append(torch.cat([embedded[:, z], hidden, context], dim=-1))
            if return_weights and weights is not None:
                recorded.append(weights)
        # Eq. (4) for all steps in one matrix product: nothing recurrent depends on the output layer, and
        # one (B * Z, F) x (F, W) product is much cheaper on CPU than Z small ones
        features = torch.stack(step_features, dim=1)
        scores = self.output_projection(self.feature_dropout(features))
        copy_inputs = None
        if self.config.copy:
            copy_inputs = self.copy_inputs(scores, torch.stack(states, dim=1), embedded, encoder_outputs)
        if self.config.copy and not copy_distribution:
            scores = None
        elif self.config.copy:
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


class CtrsGenPreTrainedModel(PreTrainedModel):
    config_class = CtrsGenConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)  # Sec. 5.1: uniform in [-0.1, 0.1]


@dataclass
class CtrsGenOutput(Seq2SeqLMOutput):
    """Seq2SeqLMOutput plus, with ``output_attentions=True``, the contrast attention per decoder step:
    relevant_attention alpha^r, contrast_attention beta and document_attention beta * alpha (B, Z, U)."""

    relevant_attention: torch.FloatTensor | None = None
    contrast_attention: torch.FloatTensor | None = None
    document_attention: torch.FloatTensor | None = None


class CtrsGenForIntentDescription(CtrsGenPreTrainedModel, RecurrentGenerationMixin):
    """CtrsGen encoder-decoder with a language-modelling head for ``generate()`` and Seq2SeqTrainer.

    Labels (B, Z) are output-vocabulary ids (< ``output_vocab_size``), padded with -100 or pad.
    """

    def __init__(self, config: CtrsGenConfig):
        super().__init__(config)
        self.encoder = CtrsGenEncoder(config)
        self.decoder = CtrsGenDecoder(config)
        self.post_init()
        if self.generation_config is not None:
            self.generation_config.max_length = config.max_decoding_length

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the decoder state lives in a RecurrentStateCache

    @property
    def logits_are_log_probs(self) -> bool:
        """With ``copy``, ``logits`` are log P of the pointer-generator mixture (See Eq. 9)."""
        return bool(self.config.copy)

    def get_encoder(self) -> CtrsGenEncoder:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens.embedding = value

    def get_output_embeddings(self) -> None:
        return None  # the output layer reads [e; h; c^q; c^d], not the embedding table

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        """transformers resizes the input (encoder) table; an untied decoder table must follow, else the
        config's new vocab_size no longer matches the decoder and the saved model cannot be loaded (found
        by the shared model contract)."""
        resized = super()._resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        if not self.config.tie_word_embeddings:
            self.decoder.embed_tokens.embedding = self._get_resized_embeddings(
                self.decoder.embed_tokens.embedding, resized.num_embeddings, mean_resizing=mean_resizing
            )
        return resized

    def _decoder_embeddings(self) -> WordEmbeddings:
        return self.encoder.embed_tokens if self.config.tie_word_embeddings else self.decoder.embed_tokens

    def prepare_decoder_input_ids_from_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        return shift_labels_right(labels, self.config.decoder_start_token_id, self.config.pad_token_id)

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
        encoder_outputs: CtrsGenEncoderOutput | tuple | None = None,
        past_key_values: RecurrentStateCache | None = None,
        cache: RecurrentStateCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs,
    ) -> CtrsGenOutput | tuple:
        """Encode (unless ``encoder_outputs`` is given) and decode with teacher forcing or cached steps.

        Args:
            input_ids, attention_mask: (B, C) query.
            relevant_input_ids, relevant_attention_mask: (B, M, T, L) relevant documents.
            irrelevant_input_ids, irrelevant_attention_mask: (B, N, K, L') irrelevant documents (optional;
                N = 0 or an all-zero mask means none).
            decoder_input_ids: (B, Z) decoder inputs; with a non-empty cache only the new tokens.
                Default: labels shifted right behind ``decoder_start_token_id``.
            decoder_attention_mask: accepted for API compatibility (a left-to-right GRU over right-padded
                targets never reads the padding of later steps).
            encoder_outputs: :class:`CtrsGenEncoderOutput` (generate() computes it once).
            past_key_values: :class:`RecurrentStateCache` holding ``hidden`` (B, H_d).
            labels: (B, Z) target ids, -100 (or pad) where no loss is taken.
            use_cache: return the decoder state (default: True unless labels are given).
            output_attentions: also return alpha^r, beta and beta*alpha per step (B, Z, U).
            num_items_in_batch: label tokens of the whole accumulated batch (Trainer passes it).

        Returns:
            :class:`CtrsGenOutput` with ``logits`` (B, Z, W) and ``loss`` when labels are given. With
            ``copy``, ``logits`` are log P over all ``vocab_size`` token ids, and None for a model in
            training mode given labels (the loss reads the mixture at the labels only).
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids,
                attention_mask,
                relevant_input_ids,
                relevant_attention_mask,
                irrelevant_input_ids,
                irrelevant_attention_mask,
            )
        elif not isinstance(encoder_outputs, CtrsGenEncoderOutput):
            encoder_outputs = CtrsGenEncoderOutput(*encoder_outputs)
        if decoder_input_ids is None:
            if labels is None:
                raise InvalidInputError(
                    "CtrsGenForIntentDescription.forward needs decoder_input_ids or labels"
                )
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        if use_cache is None:
            use_cache = labels is None

        past_key_values = pick_cache(past_key_values, cache)  # <= 5.23 / >= 5.24 name of the state
        resuming = past_key_values is not None and past_key_values.get_seq_length() > 0
        hidden = past_key_values["hidden"] if resuming else encoder_outputs.initial_state
        embedded = self._decoder_embeddings()(decoder_input_ids)
        # a copy model in training needs only log P(label): the distribution over every token id (most of
        # the step's time on CPU) is computed in eval mode and for generation, where logits are read
        full = not (self.config.copy and self.training and labels is not None)
        scores, hidden, weights, copy_inputs = self.decoder(
            embedded, encoder_outputs, hidden, bool(output_attentions), copy_distribution=full
        )

        cache = None
        if use_cache:
            cache = past_key_values if past_key_values is not None else RecurrentStateCache()
            cache.update(hidden=hidden)
            cache.advance(decoder_input_ids.shape[1])
        loss = None
        if labels is not None:
            labels = mask_labels(labels, self.config.pad_token_id)
            if self.config.copy:
                # only log P(label) is needed: the mixture at the label ids, not over all token ids
                labels = copyable_labels(
                    labels,
                    encoder_outputs.copy_ids,
                    encoder_outputs.copy_mask,
                    self.config.output_vocab_size,
                    self.config.unk_token_id,
                )
                loss = _copy_nll(self.decoder.copy_mixture, copy_inputs, labels, num_items_in_batch)
            else:
                loss = token_nll(scores, labels, num_items_in_batch)
        if not return_dict:
            return tuple(value for value in (loss, scores, cache) if value is not None)
        return CtrsGenOutput(
            loss=loss,
            logits=scores,
            **with_cache(cache),
            relevant_attention=weights.relevant if weights is not None else None,
            contrast_attention=weights.contrast if weights is not None else None,
            document_attention=weights.combined if weights is not None else None,
        )


def _copy_nll(
    mixture: PointerGeneratorMixture,
    inputs: CopyInputs,
    labels: torch.LongTensor,
    num_items_in_batch: int | torch.Tensor | None,
) -> torch.Tensor:
    """Token NLL of ``labels`` (B, Z) under the pointer-generator mixture, normalised like
    :func:`~hf_querygen.nn.loss.token_nll` (by the label tokens, or ``num_items_in_batch``)."""
    flat = labels.reshape(-1)
    log_probs = mixture.label_log_probs(
        inputs.vocab_scores, inputs.attention, inputs.source_ids, inputs.features, flat
    )
    kept = flat != IGNORE_INDEX
    total = -(log_probs * kept).sum()
    if num_items_in_batch is None:
        num_items_in_batch = kept.sum()
    if isinstance(num_items_in_batch, torch.Tensor):
        num_items_in_batch = num_items_in_batch.to(total.device)
    return total / num_items_in_batch


__all__ = [
    "CtrsGenDecoder",
    "CtrsGenEncoder",
    "CtrsGenEncoderOutput",
    "CtrsGenForIntentDescription",
    "CtrsGenOutput",
    "CtrsGenPreTrainedModel",
]
