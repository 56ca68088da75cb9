"""Joint ATS2S+SL (Liu et al., CIKM'18, Sec. 5.3 and Table 2 row 8): ONE BiLSTM encoder shared by a
sequence-labeling head (is this source word a keyword?) and an attentional decoder (generate the
keyword query), trained jointly; the prediction is the union of both outputs.

It reuses :class:`RNNSeq2SeqForConditionalGeneration` whole (encoder, attentional decoder, cache,
``generate()``) and adds a linear tag classifier over the encoder states.

Tag labels: pass ``tag_labels`` (B, S) explicitly, or let the model derive them from ``labels`` in
the extended output space (:mod:`hf_querygen.nn.copy`): a source position is a keyword when the
target contains its word, as a vocabulary id or as the copy id ``V + first position``. Encoding the
targets with copying (``encode_seq2seq(copy=True)``) thus carries the tags without an extra column,
so the stock seq2seq collator and ``Seq2SeqTrainer`` train the model unchanged. The decoder itself
cannot copy: its labels at copy ids become [UNK], exactly the targets of the plain ATS2S baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.modeling_outputs import Seq2SeqLMOutput

from ...nn.cache import RecurrentStateCache, cache_of, pick_cache, with_cache
from ...nn.encoder import RecurrentEncoderOutput
from ...nn.labels import IGNORE_INDEX, mask_labels
from ...nn.loss import token_nll
from ..rnn_seq2seq.modeling_rnn_seq2seq import RNNSeq2SeqForConditionalGeneration
from .configuration_joint_seq2seq_tagger import JointSeq2SeqTaggerConfig


@dataclass
class JointSeq2SeqTaggerOutput(Seq2SeqLMOutput):
    """Seq2SeqLMOutput plus ``tag_logits`` (B, S, num_tag_labels), ``decoder_loss`` and ``tag_loss``."""

    tag_logits: torch.FloatTensor | None = None
    decoder_loss: torch.FloatTensor | None = None
    tag_loss: torch.FloatTensor | None = None


class JointSeq2SeqTaggerForConditionalGeneration(RNNSeq2SeqForConditionalGeneration):
    """Attentional seq2seq + token tagger on one shared encoder (joint ATS2S+SL)."""

    config_class = JointSeq2SeqTaggerConfig

    def __init__(self, config: JointSeq2SeqTaggerConfig):
        super().__init__(config)
        self.tag_dropout = nn.Dropout(config.dropout)
        self.tag_classifier = nn.Linear(config.encoder_output_size, config.num_tag_labels)
        self.post_init()

    def tag_labels_from_labels(
        self, labels: torch.LongTensor, encoder_outputs: RecurrentEncoderOutput
    ) -> torch.LongTensor:
        """labels (B, T) in the extended space -> tag labels (B, S): 1 where the source word is in the
        target, 0 elsewhere, -100 at padding and at the final [EOS] of the source."""
        config = self.config
        source_ids = encoder_outputs.source_input_ids
        mask = encoder_outputs.attention_mask.bool()
        copy_ids = config.output_vocab_size + encoder_outputs.first_positions  # (B, S)
        specials = torch.tensor(
            [config.pad_token_id, config.unk_token_id, config.bos_token_id, config.eos_token_id],
            device=labels.device,
        )
        target = labels.masked_fill(torch.isin(labels, specials), IGNORE_INDEX).unsqueeze(1)  # (B, 1, T)
        in_target = ((source_ids.unsqueeze(2) == target) | (copy_ids.unsqueeze(2) == target)).any(dim=2)
        tags = in_target.long().masked_fill(~mask, IGNORE_INDEX)
        last = mask.long().sum(dim=1) - 1  # the [EOS] closing each source is not a word
        return tags.scatter(1, last.unsqueeze(1), IGNORE_INDEX)

    def decoder_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        """labels (B, T) in the extended space -> the decoder's targets (B, T): copy ids (>= V) become [UNK]
        (the decoder has no copy mechanism: the plain ATS2S targets)."""
        return labels.masked_fill(labels >= self.config.output_vocab_size, self.config.unk_token_id)

    def prepare_decoder_input_ids_from_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        """Teacher-forcing inputs (B, T) from the decoder's targets, so that a collator that calls this
        (DataCollatorForSeq2Seq(model=...)) feeds the decoder what ``forward(labels=...)`` feeds it."""
        return super().prepare_decoder_input_ids_from_labels(self.decoder_labels(labels))

    def tag(self, encoder_outputs: RecurrentEncoderOutput) -> torch.Tensor:
        """Tag scores (B, S, num_tag_labels) from the shared encoder states (B, S, H_out)."""
        return self.tag_classifier(self.tag_dropout(encoder_outputs.last_hidden_state))

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
        tag_labels: torch.LongTensor | None = None,
        cache: RecurrentStateCache | None = None,
        **kwargs,
    ) -> JointSeq2SeqTaggerOutput:
        """As :meth:`RNNSeq2SeqForConditionalGeneration.forward`, plus the tagging head.

        Args:
            labels: (B, T) decoder targets; ids >= V (copy ids) count for the tags and are [UNK] for the
                decoder, which has no copy mechanism.
            tag_labels: (B, S) optional explicit tags (-100 = no loss); default derived from ``labels``.

        Returns:
            JointSeq2SeqTaggerOutput: ``logits`` (B, T, V) decoder scores, ``tag_logits`` (B, S, K),
            ``loss`` =
            decoder NLL + tag_loss_weight * tag NLL (each a per-token mean) when labels are given.
        """
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask, source_word_ids)
        elif not isinstance(encoder_outputs, RecurrentEncoderOutput):
            encoder_outputs = RecurrentEncoderOutput(*encoder_outputs)
        decoder_labels = None
        if labels is not None:
            if tag_labels is None:
                tag_labels = self.tag_labels_from_labels(labels, encoder_outputs)
            decoder_labels = self.decoder_labels(labels)
        seq2seq = super().forward(
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            encoder_outputs=encoder_outputs,
            past_key_values=pick_cache(past_key_values, cache),
            labels=decoder_labels,
            use_cache=use_cache,
            return_dict=True,
            num_items_in_batch=num_items_in_batch,
        )
        tag_logits = self.tag(encoder_outputs)
        loss = tag_loss = None
        if labels is not None:
            # the tag loss is its own per-token mean (num_items_in_batch counts decoder label tokens only)
            tag_loss = token_nll(tag_logits, tag_labels)
            share = 1.0
            if num_items_in_batch is not None:
                # Trainer adds up the losses of accumulated micro-batches without dividing by their number
                # (forward takes num_items_in_batch): weigh this micro-batch's tag mean by its share of the
                # decoder label tokens so that the micro-batches sum to one mean, not to k means. Exact
                # without accumulation (share 1); with it, a token-weighted mean of the micro-batch means.
                decoder_tokens = (mask_labels(decoder_labels, self.config.pad_token_id) != IGNORE_INDEX).sum()
                share = decoder_tokens / num_items_in_batch
            loss = seq2seq.loss + self.config.tag_loss_weight * tag_loss * share
        return JointSeq2SeqTaggerOutput(
            loss=loss,
            logits=seq2seq.logits,
            **with_cache(cache_of(seq2seq)),
            tag_logits=tag_logits,
            decoder_loss=seq2seq.loss,
            tag_loss=tag_loss,
        )
