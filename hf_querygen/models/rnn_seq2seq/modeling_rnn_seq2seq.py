"""One configurable RNN encoder-decoder, trained by the stock (Seq2Seq)Trainer and decoded by generate().

Depending on :class:`RNNSeq2SeqConfig` it is the vanilla and attentional seq2seq baselines of Liu et al.
(CIKM'18), Song et al.'s (SIGIR'17) model with Luong local attention, EDNet / AttNet / CopyNet of Ding &
Balog (ICTIR'18) and the RNN segmenter of Lin et al. (eCOM'17).

Shapes: B batch, S source length, T decoder steps, E embedding size, H_out encoder output size,
H decoder hidden size, L decoder layers, V output vocabulary, C = V (copy none) or V + S (copynet,
extended output space, see :mod:`hf_querygen.nn.copy`).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput

from ...nn.cache import RecurrentStateCache, pick_cache, with_cache
from ...nn.copy import live_copy_slots
from ...nn.encoder import RecurrentEncoderOutput, RecurrentSourceEncoder, RNNEncoder, WordEmbeddings
from ...nn.initialization import init_uniform_weights
from ...nn.labels import IGNORE_INDEX, mask_labels, shift_labels_right
from ...nn.loss import label_token_nll, token_nll
from .._generation import ExtendedSpaceLMOutput, RecurrentGenerationMixin
from .configuration_rnn_seq2seq import RNNSeq2SeqConfig
from .decoder import RNNSeq2SeqDecoder

#: historical name of this model's encoder output (the class is shared with the dual decoder)
RNNSeq2SeqEncoderOutput = RecurrentEncoderOutput


class RNNSeq2SeqEncoder(RecurrentSourceEncoder):
    """Embedding + (bi)RNN encoder built from an :class:`RNNSeq2SeqConfig`: the shared
    :class:`~hf_querygen.nn.encoder.RecurrentSourceEncoder`; what ``generate()`` runs once per batch."""

    def __init__(self, config: RNNSeq2SeqConfig):
        super().__init__(
            WordEmbeddings(config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout),
            RNNEncoder(
                config.embedding_size,
                config.hidden_size,
                config.num_encoder_layers,
                config.cell,
                config.bidirectional_encoder,
                config.dropout,
            ),
            pad_token_id=config.pad_token_id,
        )


class RNNSeq2SeqPreTrainedModel(PreTrainedModel):
    config_class = RNNSeq2SeqConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)


class RNNSeq2SeqForConditionalGeneration(RNNSeq2SeqPreTrainedModel, RecurrentGenerationMixin):
    """Configurable RNN encoder-decoder with a language-modelling head, for ``generate()`` and Trainer.

    Labels live in the extended output space when ``config.copy == "copynet"`` (V + j = copy source
    position j); pad them with -100 (``DataCollatorForSeq2Seq`` does).
    """

    _tied_weights_keys = {"decoder.embed_tokens.embedding.weight": "encoder.embed_tokens.embedding.weight"}

    plain_greedy_loop = True  # RecurrentGenerationMixin: plain greedy search skips generate()'s setup

    def __init__(self, config: RNNSeq2SeqConfig):
        super().__init__(config)
        self.encoder = RNNSeq2SeqEncoder(config)
        self.decoder = RNNSeq2SeqDecoder(config)
        self.post_init()
        if self.generation_config is not None:
            self.generation_config.max_length = config.max_decoding_length

    @property
    def logits_are_log_probs(self) -> bool:
        """CopyNet returns log-probabilities over V + S in ``logits``; otherwise raw scores over V."""
        return self.config.copy == "copynet"

    def get_encoder(self) -> RNNSeq2SeqEncoder:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens.embedding = value

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        """transformers resizes the input (encoder) table; an untied decoder table must follow, else the
        config's new vocab_size no longer matches the decoder and the saved model cannot be loaded."""
        decoder_table = self.decoder.embed_tokens.embedding
        tied = decoder_table.weight is self.get_input_embeddings().weight
        resized = super()._resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        if not tied:
            self.decoder.embed_tokens.embedding = self._get_resized_embeddings(
                decoder_table, resized.num_embeddings, mean_resizing=mean_resizing
            )
        return resized

    def get_output_embeddings(self) -> None:
        return None  # the output projection spans output_vocab_size, not the embedding table

    def prepare_decoder_input_ids_from_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        """Teacher forcing input (B, T): labels (B, T) shifted right behind ``decoder_start_token_id``,
        ignored (-100) -> pad (:func:`hf_querygen.nn.labels.shift_labels_right`; DataCollatorForSeq2Seq
        calls this too)."""
        return shift_labels_right(labels, self.config.decoder_start_token_id, self.config.pad_token_id)

    def _cached_decode(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        cache: RecurrentStateCache | None,
        use_cache: bool = True,
        labels: torch.LongTensor | None = None,
    ) -> tuple[torch.Tensor, RecurrentStateCache | None]:
        """Decode ``decoder_input_ids`` (B, T) from the state in ``cache`` (None or empty: the start) ->
        (scores (B, T, C), the cache holding the new state, or None without ``use_cache``); with ``labels``
        (CopyNet) log p(labels) (B, T) instead of the scores."""
        resuming = cache is not None and cache.get_seq_length() > 0
        state = dict(cache.items()) if resuming else self.decoder.initial_state(encoder_outputs)
        scores, state = self.decoder(decoder_input_ids, encoder_outputs, state, labels)
        if not use_cache:
            return scores, None
        cache = cache if cache is not None else RecurrentStateCache()
        statics = self.decoder.kept_static_states
        if resuming:  # the per-source tensors are in the cache already, unchanged
            cache.update(**{name: tensor for name, tensor in state.items() if name not in statics})
        else:
            cache.update(**state)
            cache.mark_static(*statics)
        cache.advance(decoder_input_ids.shape[1])
        return scores, cache

    def _generation_step(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        attention_mask: torch.Tensor,
        cache: RecurrentStateCache | None,
    ) -> tuple[torch.Tensor, RecurrentStateCache]:
        """What ``forward(..., use_cache=True)`` computes for the plain greedy loop, without the output
        object: (scores (B, T, C), cache)."""
        return self._cached_decode(decoder_input_ids, encoder_outputs, cache)

    def compute_loss_from_scores(
        self,
        scores: torch.Tensor,
        labels: torch.LongTensor,
        num_items_in_batch: int | torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token-level NLL of ``labels`` (B, T) under ``scores`` (B, T, C): summed over the non-padding label
        tokens (-100 or pad) and divided by their number, or by ``num_items_in_batch`` when Trainer passes it
        (so 2 accumulation steps of 8 examples give the loss of one batch of 16)."""
        if labels.shape != scores.shape[:2]:
            raise ValueError(
                f"labels {tuple(labels.shape)} do not match the decoder steps {tuple(scores.shape[:2])}"
            )
        labels = mask_labels(labels, self.config.pad_token_id)
        if self.config.copy == "none" and bool((labels >= self.config.output_vocab_size).any()):
            raise ValueError(
                f"label id {int(labels.max())} is outside the output vocabulary "
                f"({self.config.output_vocab_size}) "
                "and the model has no copy mechanism: map such words to [UNK]"
            )
        if self.config.copy == "copynet":
            _check_copy_label_range(labels, scores.shape[-1])
            label_scores = scores.gather(-1, labels.clamp(0, scores.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
            _check_copy_labels_alive(labels, torch.isneginf(label_scores))
            # the rows are log-probabilities already: the NLL is the gathered label score (a cross-entropy
            # would re-normalise every (B, T, V + S) row for nothing)
            return label_token_nll(label_scores, labels, num_items_in_batch)
        return token_nll(scores, labels, num_items_in_batch)

    def _checked_copy_labels(
        self, labels: torch.LongTensor, encoder_outputs: RecurrentEncoderOutput
    ) -> torch.LongTensor:
        """labels (B, T) masked and checked as :meth:`compute_loss_from_scores` checks them, from the source
        alone (training never builds the rows whose -inf marks a dead slot)."""
        labels = mask_labels(labels, self.config.pad_token_id)
        vocab_size = self.config.output_vocab_size
        source_ids = encoder_outputs.source_input_ids
        _check_copy_label_range(labels, vocab_size + source_ids.shape[1])
        live = live_copy_slots(
            source_ids,
            encoder_outputs.first_positions,
            encoder_outputs.attention_mask,
            vocab_size,
            self.config.unk_token_id,
        )  # (B, S)
        slot_alive = live.gather(1, (labels - vocab_size).clamp_min(0))
        _check_copy_labels_alive(labels, (labels >= vocab_size) & ~slot_alive)
        return labels

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: RecurrentEncoderOutput | tuple | None = None,
        past_key_values: RecurrentStateCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        source_word_ids: torch.LongTensor | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        cache: RecurrentStateCache | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput | tuple:
        """Encode (unless ``encoder_outputs`` is given) and decode with teacher forcing or one cached step.

        Args:
            input_ids: (B, S) source token ids, right-padded.
            attention_mask: (B, S) 1 at real source tokens.
            decoder_input_ids: (B, T) decoder inputs in the output (or extended) space; with a non-empty
                ``past_key_values`` only the tokens not yet consumed. Default: labels shifted right.
            decoder_attention_mask: (B, T) accepted for API compatibility; a unidirectional decoder over
                right-padded targets never looks at later (padded) steps, so it is not needed.
            encoder_outputs: :class:`RecurrentEncoderOutput` computed before (generate() does).
            past_key_values: :class:`RecurrentStateCache` from the previous step (transformers <= 5.23).
            labels: (B, T) target ids, -100 (or pad) where no loss is taken.
            use_cache: return the decoder state (default: True unless labels are given), in the output
                field the installed generate() reads (``cache`` >= 5.24, ``past_key_values`` before).
            source_word_ids: (B, S) ids telling distinct out-of-vocabulary source words apart (copy).
            num_items_in_batch: number of label tokens in the whole (accumulated) batch, from Trainer.
            cache: the same state under its transformers >= 5.24 name (generate() passes one of the two).

        Returns:
            Seq2SeqLMOutput with ``logits`` (B, T, V) raw scores (copy none), or
            :class:`~hf_querygen.models._generation.ExtendedSpaceLMOutput` with ``logits`` (B, T, V + S)
            normalised log-probabilities over the extended output space (copynet); ``loss`` when labels are
            given.
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask, source_word_ids)
        elif not isinstance(encoder_outputs, RecurrentEncoderOutput):
            encoder_outputs = RecurrentEncoderOutput(*encoder_outputs)
        if encoder_outputs.attention_mask is None:
            raise ValueError("encoder_outputs lacks attention_mask; build them with model.encoder(...)")

        if decoder_input_ids is None:
            if labels is None:
                raise ValueError(
                    "RNNSeq2SeqForConditionalGeneration.forward needs decoder_input_ids or labels"
                )
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        if use_cache is None:
            use_cache = labels is None

        past_key_values = pick_cache(past_key_values, cache)
        if labels is not None and self.config.copy == "copynet":
            if labels.shape != decoder_input_ids.shape:
                raise ValueError(
                    f"labels {tuple(labels.shape)} do not match the decoder steps "
                    f"{tuple(decoder_input_ids.shape)}"
                )
            labels = self._checked_copy_labels(labels, encoder_outputs)  # before they are decoder inputs
        # CopyNet in training reads log p(label) only (the (B, T, V + S) rows were ~30% of a step); eval
        # mode and generation get the rows
        if self.training and labels is not None and self.config.copy == "copynet":
            label_log_probs, new_cache = self._cached_decode(
                decoder_input_ids, encoder_outputs, past_key_values, use_cache, labels
            )
            scores, loss = None, label_token_nll(label_log_probs, labels, num_items_in_batch)
        else:
            scores, new_cache = self._cached_decode(
                decoder_input_ids, encoder_outputs, past_key_values, use_cache
            )
            loss = None
            if labels is not None:
                loss = self.compute_loss_from_scores(scores, labels, num_items_in_batch)

        if not return_dict:
            return tuple(value for value in (loss, scores, new_cache) if value is not None)
        output_class = ExtendedSpaceLMOutput if self.logits_are_log_probs else Seq2SeqLMOutput
        return output_class(loss=loss, logits=scores, **with_cache(new_cache))


def _check_copy_label_range(labels: torch.Tensor, n_classes: int) -> None:
    if labels.numel() and int(labels.max()) >= n_classes:
        raise ValueError(f"label id {int(labels.max())} is outside the {n_classes} output classes")


def _check_copy_labels_alive(labels: torch.Tensor, dead: torch.Tensor) -> None:
    """dead (B, T) True where a label points at a slot that cannot hold probability."""
    dead = dead & (labels != IGNORE_INDEX)
    if bool(dead.any()):
        row, step = dead.nonzero()[0].tolist()
        raise ValueError(
            f"label {int(labels[row, step])} at batch row {row}, step {step} is a copy slot that cannot hold "
            "probability (a padded, repeated or in-vocabulary source position); labels must use the first "
            "occurrence of an out-of-vocabulary word and the vocabulary id of an in-vocabulary one"
        )


__all__ = [
    "RNNSeq2SeqDecoder",
    "RNNSeq2SeqEncoder",
    "RNNSeq2SeqEncoderOutput",
    "RNNSeq2SeqForConditionalGeneration",
    "RNNSeq2SeqPreTrainedModel",
]
