"""CtrsGen: contrastive generation of a query's intent description (Zhang et al., CIKM'20, Sec. 4).

Inputs (all right-padded at every level; see :mod:`hf_querygen.tasks.q2id` for the collator):
  input_ids (B, C) query words, attention_mask (B, C);
  relevant_input_ids (B, M, T, L) relevant documents x sentences x words, relevant_attention_mask same;
  irrelevant_input_ids (B, N, K, L') irrelevant documents x sentences x words (N may be 0 or all-masked).

Shapes here and in :mod:`.encoder` / :mod:`.decoder`: H_e = 2 * hidden_size (BiGRU states), H_d decoder
size, U relevant sentences of the mega-document (Sec. 4.3, after dropping padding), V irrelevant sentences,
C query words, L words per sentence, Z decoder steps, A attention size, W output vocabulary.

The encoder (Sec. 4.2-4.4, Eq. 3, 8, 11; run once) lives in :mod:`.encoder`, the decoder step (Sec. 4.5,
Eq. 2, 4-12) and the optional copy mixture (See et al. 2017, Eq. 8-9) in :mod:`.decoder`; this module holds
the model that joins them (loss, cache, generation).
The ablations of Table 3 are config switches (see :class:`CtrsGenConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput

from ...errors import InvalidInputError
from ...nn.cache import RecurrentStateCache, pick_cache, with_cache
from ...nn.coverage import copyable_labels
from ...nn.encoder import WordEmbeddings
from ...nn.initialization import init_uniform_weights
from ...nn.labels import mask_labels, shift_labels_right
from ...nn.loss import token_nll
from .._generation import RecurrentGenerationMixin
from .configuration_ctrsgen import CtrsGenConfig
from .decoder import CopyInputs, CtrsGenDecoder
from .encoder import CtrsGenEncoder, CtrsGenEncoderOutput


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

    def _encode(
        self,
        input_ids: torch.LongTensor | None,
        attention_mask: torch.Tensor | None,
        relevant_input_ids: torch.LongTensor | None,
        relevant_attention_mask: torch.Tensor | None,
        irrelevant_input_ids: torch.LongTensor | None,
        irrelevant_attention_mask: torch.Tensor | None,
        decoder_input_ids: torch.LongTensor | None,
    ) -> CtrsGenEncoderOutput:
        """The encoder's outputs; with tied embeddings also the decoder inputs' embeddings."""
        # with tied embeddings the decoder inputs share the encoder's lookup (one dense gradient of the
        # table per step, not one per use: CtrsGenEncoder.embed)
        tied = self.config.tie_word_embeddings
        return self.encoder(
            input_ids,
            attention_mask,
            relevant_input_ids,
            relevant_attention_mask,
            irrelevant_input_ids,
            irrelevant_attention_mask,
            decoder_input_ids=decoder_input_ids if tied else None,
        )

    def _loss(
        self,
        labels: torch.LongTensor,
        scores: torch.Tensor | None,
        encoder_outputs: CtrsGenEncoderOutput,
        copy_inputs: CopyInputs | None,
        num_items_in_batch: int | torch.Tensor | None,
    ) -> torch.Tensor:
        """Token NLL of the labels; with ``copy``, from the mixture at the label ids only."""
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
            flat = labels.reshape(-1)
            loss = self.decoder.copy_mixture.label_nll(
                copy_inputs.vocab_scores,
                copy_inputs.attention,
                copy_inputs.source_ids,
                copy_inputs.features,
                flat,
                num_items_in_batch,
            )
        else:
            loss = token_nll(scores, labels, num_items_in_batch)
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
        if decoder_input_ids is None and labels is not None:
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        embedded = None
        if encoder_outputs is None:
            encoder_outputs = self._encode(
                input_ids,
                attention_mask,
                relevant_input_ids,
                relevant_attention_mask,
                irrelevant_input_ids,
                irrelevant_attention_mask,
                decoder_input_ids,
            )
            embedded = encoder_outputs.decoder_inputs_embeds
        elif not isinstance(encoder_outputs, CtrsGenEncoderOutput):
            encoder_outputs = CtrsGenEncoderOutput(*encoder_outputs)
        if decoder_input_ids is None:
            raise InvalidInputError("CtrsGenForIntentDescription.forward needs decoder_input_ids or labels")
        if use_cache is None:
            use_cache = labels is None

        past_key_values = pick_cache(past_key_values, cache)  # <= 5.23 / >= 5.24 name of the state
        resuming = past_key_values is not None and past_key_values.get_seq_length() > 0
        hidden = past_key_values["hidden"] if resuming else encoder_outputs.initial_state
        if embedded is None:
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
            loss = self._loss(labels, scores, encoder_outputs, copy_inputs, num_items_in_batch)
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


__all__ = [
    "CtrsGenDecoder",
    "CtrsGenEncoder",
    "CtrsGenEncoderOutput",
    "CtrsGenForIntentDescription",
    "CtrsGenOutput",
    "CtrsGenPreTrainedModel",
]
