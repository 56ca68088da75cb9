"""CtrsGen's encoder (Zhang et al., CIKM'20, Sec. 4.2-4.4), run once per input; generate() expands its
batch-first outputs for beams. Shapes as in :mod:`.modeling_ctrsgen`.

  query BiGRU -> h^q_c (B, C, H_e), x^q = [last fwd; last bwd] (B, H_e)                         Sec. 4.2
  word BiGRU per sentence -> h_{u,l}, e_u; sentence BiGRU over the mega-document -> h^r_u       Sec. 4.3
  gamma_u = softmax_u(x^q Q h^r_u), x^r = sum_u gamma_u h^r_u                           query-aware enc. attn
  irrelevant documents: the same hierarchy per document -> h^i_{n,t}                             Sec. 4.4
  h^s_0 = W_q x^q + W_r x^r                                                                      Eq. (3)
  m_u = max_{n,t} Sim(s^r_u, s^i_{n,t}), Sim = softmax(tanh(h^r_u W_6 h^i_{n,t}))   Eq. (8) 2nd term, (11)
    (m does not depend on the decoder step, so it is computed once here; 0 without irrelevant docs)
With ``copy``, the copy sources' word states (query words, then the relevant words) too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.utils import ModelOutput

from ...errors import InvalidInputError
from ...nn.attention import masked_softmax
from ...nn.encoder import RNNEncoder, WordEmbeddings
from ...nn.hierarchical import HierarchicalEncoder, WordLevelOutput, compact_rows
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
    decoder_inputs_embeds: (B, Z, E) e(y_{z-1}) of the ``decoder_input_ids`` the encoder was given (the
        model's forward passes them with tied embeddings: see :meth:`CtrsGenEncoder.embed`), else None.
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
    decoder_inputs_embeds: torch.FloatTensor | None = None


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


def _pad_nested(tensor: torch.Tensor, sentences: int, words: int) -> torch.Tensor:
    """(B, D, S, L, ...) -> (B, D, sentences, words, ...) with zeros (False) appended on the two axes."""
    missing_sentences, missing_words = sentences - tensor.shape[2], words - tensor.shape[3]
    if missing_sentences == 0 and missing_words == 0:
        return tensor
    pad = [0, 0] * (tensor.dim() - 4) + [0, missing_words, 0, missing_sentences]
    return nn.functional.pad(tensor, pad)


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

    def embed(self, *input_ids: torch.Tensor | None) -> list[torch.Tensor | None]:
        """Embeddings of several id tensors (any shapes; None passes through) from ONE lookup: the backward
        of every lookup zero-fills and then adds a dense (vocab_size, E) gradient of the whole table, and a
        batch touches ~1K of its ~37K rows, so one lookup for the query, the documents and the decoder
        inputs saves three such passes per training step (same values; dropout draws one mask for all)."""
        given = [ids for ids in input_ids if ids is not None]
        if not given:
            return [None] * len(input_ids)
        flat = self.embed_tokens(torch.cat([ids.reshape(-1) for ids in given]))
        pieces = iter(flat.split([ids.numel() for ids in given]))
        return [None if ids is None else next(pieces).view(*ids.shape, flat.shape[-1]) for ids in input_ids]

    def _encode_words(self, jobs: list[tuple[HierarchicalEncoder, torch.Tensor, torch.Tensor, bool]]):
        """jobs: (hierarchy, embeddings (B, D, S, L, E), mask (B, D, S, L), word states wanted) -> one
        :class:`WordLevelOutput` per job. The document sets that one hierarchy reads (the relevant and the
        irrelevant documents with the shared encoder) go through ONE word-level RNN call, padded to common
        sentence / word counts (padding slots never enter the RNN): a packed RNN's per-word-step work is
        then paid once per training step, not once per set. Word states are built only where wanted."""
        levels: list[WordLevelOutput | None] = [None] * len(jobs)
        for hierarchy in dict.fromkeys(job[0] for job in jobs):  # each hierarchy once, in order
            mine = [i for i, job in enumerate(jobs) if job[0] is hierarchy]
            word_states = any(jobs[i][3] for i in mine)
            if len(mine) == 1:
                _, embedded, mask, _ = jobs[mine[0]]
                levels[mine[0]] = hierarchy.encode_words(embedded, mask, word_states)
                continue
            sents = max(jobs[i][1].shape[2] for i in mine)
            words = max(jobs[i][1].shape[3] for i in mine)
            embedded = torch.cat([_pad_nested(jobs[i][1], sents, words) for i in mine], dim=1)
            mask = torch.cat([_pad_nested(jobs[i][2], sents, words) for i in mine], dim=1)
            level = hierarchy.encode_words(embedded, mask, word_states)
            start = 0
            for i in mine:
                docs, own_sents, own_words = jobs[i][2].shape[1:4]
                span = slice(start, start + docs)
                start += docs
                levels[i] = WordLevelOutput(
                    level.word_states[:, span, :own_sents, :own_words] if jobs[i][3] else None,
                    level.sentence_embeddings[:, span, :own_sents],
                    level.sentence_mask[:, span, :own_sents],
                )
        return levels

    def _relevant_sentences(self, document_sets, with_words: bool):
        """document_sets: (ids (B, M, T, L), mask, :class:`WordLevelOutput`) of the relevant documents (and
        for ReIrCon the irrelevant ones, appended) -> word states (B, U, L, H_e), word mask (B, U, L), word
        ids (B, U, L), sentence embeddings (B, U, H_e), mask (B, U): the relevant mega-document (Sec. 4.3).
        The three word-level tensors are None unless ``with_words`` (only copy and the word context read
        them)."""
        words, word_masks, word_ids, sentences, sentence_masks = [], [], [], [], []
        for ids, mask, level in document_sets:
            if with_words:
                words.append(level.word_states.flatten(1, 2))
                word_masks.append(mask.bool().flatten(1, 2))
                word_ids.append(ids.flatten(1, 2))
            sentences.append(level.sentence_embeddings.flatten(1, 2))
            sentence_masks.append(level.sentence_mask.flatten(1, 2))
        sentences, sentence_masks = torch.cat(sentences, dim=1), torch.cat(sentence_masks, dim=1)
        empty = (~sentence_masks.any(dim=1)).nonzero().flatten().tolist()
        if empty:
            raise InvalidInputError(
                f"CtrsGen: batch rows {empty} have no relevant sentence; every query needs at least one "
                "relevant document with a word in it (Zhang'20 Sec. 3.1, M >= 1)"
            )
        compact_sentences, compact_mask = compact_rows(sentences, sentence_masks)
        if not with_words:
            return None, None, None, compact_sentences, compact_mask
        length = max(w.shape[2] for w in words)
        words = torch.cat([_pad_words(w, length) for w in words], dim=1)
        word_masks = torch.cat([_pad_words(m, length) for m in word_masks], dim=1)
        word_ids = torch.cat([_pad_words(i, length) for i in word_ids], dim=1)
        compact_words, _ = compact_rows(words, sentence_masks)
        compact_word_mask, _ = compact_rows(word_masks, sentence_masks)
        compact_word_ids, _ = compact_rows(word_ids, sentence_masks)
        return compact_words, compact_word_mask, compact_word_ids, compact_sentences, compact_mask

    def _irrelevant_states(
        self, ids: torch.Tensor, mask: torch.Tensor, level: WordLevelOutput | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids/mask (B, N, K, L) -> irrelevant sentence states h^i (B, V, H_e) and mask (B, V) (Sec. 4.4).
        ``level``: their word level when the forward has encoded it already (:meth:`_encode_words`)."""
        hierarchy = self._irrelevant_hierarchy()
        batch = ids.shape[0]
        if ids.numel() == 0 or not bool(mask.any()):
            return ids.new_zeros(batch, 1, self.config.encoder_output_size, dtype=torch.float), ids.new_zeros(
                batch, 1, dtype=torch.bool
            )
        if level is None:
            (embedded,) = self.embed(ids)
            level = hierarchy.encode_words(embedded, mask.bool(), word_states=False)
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

    def _checked_masks(
        self,
        input_ids: torch.LongTensor | None,
        relevant_input_ids: torch.LongTensor | None,
        relevant_attention_mask: torch.Tensor | None,
        irrelevant_input_ids: torch.LongTensor | None,
        irrelevant_attention_mask: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The relevant and irrelevant documents' masks (default ``ids != pad_token_id``), after refusing
        inputs of the wrong shape, batches that disagree, or a missing query a ``use_query`` model reads."""
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
        if config.use_query and input_ids is None:
            raise InvalidInputError("CtrsGen with use_query=True needs input_ids (the query words)")
        return relevant_attention_mask, irrelevant_attention_mask

    def _query_and_initial_state(
        self,
        relevant: torch.Tensor,
        relevant_mask: torch.Tensor,
        query_embeds: torch.Tensor | None,
        input_ids: torch.LongTensor | None,
        attention_mask: torch.Tensor | None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """The query's states and mask (None without ``use_query``), the sentence salience gamma (B, 1, U)
        (by the query, or by the sentences alone) and the decoder's initial state (Eq. 3)."""
        config = self.config
        query_states = query_mask = None
        if config.use_query:
            if attention_mask is None:
                attention_mask = (input_ids != config.pad_token_id).long()
            encoded = self.query_encoder(query_embeds, attention_mask)
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
        return query_states, query_mask, gamma, initial_state

    def _copy_sources(
        self,
        words: torch.Tensor,
        word_mask: torch.Tensor,
        word_ids: torch.LongTensor,
        query_states: torch.Tensor | None,
        query_mask: torch.Tensor | None,
        input_ids: torch.LongTensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.LongTensor]:
        """The copy sources' states, mask and ids: query words (with their [EOS]) then the relevant words,
        in reading order."""
        # padding is masked (zero attention), so the batch does not change a row's distribution
        copy_states = words.flatten(1, 2)
        copy_mask, copy_ids = word_mask.flatten(1, 2), word_ids.flatten(1, 2)
        if self.config.use_query:
            copy_states = torch.cat([query_states, copy_states], dim=1)
            copy_mask = torch.cat([query_mask.bool(), copy_mask], dim=1)
            copy_ids = torch.cat([input_ids, copy_ids], dim=1)
        return copy_states, copy_mask, copy_ids

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        relevant_input_ids: torch.LongTensor | None = None,
        relevant_attention_mask: torch.Tensor | None = None,
        irrelevant_input_ids: torch.LongTensor | None = None,
        irrelevant_attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        **kwargs,
    ) -> CtrsGenEncoderOutput:
        """See the module docstring for shapes. Masks default to ``ids != pad_token_id``. With
        ``decoder_input_ids`` (B, Z) their embeddings come back as ``decoder_inputs_embeds``, from the same
        lookup as the encoder's inputs (:meth:`embed`)."""
        config = self.config
        relevant_attention_mask, irrelevant_attention_mask = self._checked_masks(
            input_ids,
            relevant_input_ids,
            relevant_attention_mask,
            irrelevant_input_ids,
            irrelevant_attention_mask,
        )
        reads_irrelevant = irrelevant_input_ids is not None and (
            config.irrelevant_as_relevant or config.encodes_irrelevant
        )
        query_embeds, relevant_embeds, irrelevant_embeds, decoder_inputs_embeds = self.embed(
            input_ids if config.use_query else None,
            relevant_input_ids,
            irrelevant_input_ids if reads_irrelevant else None,
            decoder_input_ids,
        )
        keep_words = config.document_context == "word" and config.decoder_attention == "contrast"
        with_words = keep_words or config.copy
        document_sets = [(relevant_input_ids, relevant_embeds, relevant_attention_mask)]
        if config.irrelevant_as_relevant and irrelevant_input_ids is not None:
            document_sets.append((irrelevant_input_ids, irrelevant_embeds, irrelevant_attention_mask))
        document_sets = [(ids, embedded, mask.bool()) for ids, embedded, mask in document_sets if ids.numel()]
        jobs = [(self.relevant_encoder, embedded, mask, with_words) for _, embedded, mask in document_sets]
        contrast = (
            config.encodes_irrelevant
            and irrelevant_input_ids is not None
            and irrelevant_input_ids.numel() > 0
            and bool(irrelevant_attention_mask.any())
        )
        if contrast:
            jobs.append(
                (self._irrelevant_hierarchy(), irrelevant_embeds, irrelevant_attention_mask.bool(), False)
            )
        levels = self._encode_words(jobs)
        words, word_mask, word_ids, sentences, relevant_mask = self._relevant_sentences(
            [
                (ids, mask, level)
                for (ids, _, mask), level in zip(document_sets, levels[: len(document_sets)], strict=True)
            ],
            with_words,
        )
        relevant = self.relevant_encoder.encode_sentences(sentences, relevant_mask)  # h^r_u (B, U, H_e)

        query_states, query_mask, gamma, initial_state = self._query_and_initial_state(
            relevant, relevant_mask, query_embeds, input_ids, attention_mask
        )

        if config.encodes_irrelevant and irrelevant_input_ids is not None:
            irrelevant, irrelevant_mask = self._irrelevant_states(
                irrelevant_input_ids, irrelevant_attention_mask, levels[-1] if contrast else None
            )
            penalty = self.contrast_penalty(relevant, relevant_mask, irrelevant, irrelevant_mask)
        else:
            penalty = relevant.new_zeros(relevant_mask.shape)

        copy_states = copy_mask = copy_ids = None
        if config.copy:
            copy_states, copy_mask, copy_ids = self._copy_sources(
                words, word_mask, word_ids, query_states, query_mask, input_ids
            )
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
            decoder_inputs_embeds=decoder_inputs_embeds,
        )
