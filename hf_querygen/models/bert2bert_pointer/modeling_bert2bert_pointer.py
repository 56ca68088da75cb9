"""BERT2BERT with a pointer over the source word pieces (See, Liu, Manning, ACL 2017, on Rothe et al.'s
warm-started encoder-decoder).

transformers' :class:`~transformers.EncoderDecoderModel` gives the decoder state ``h_t`` (the last layer's,
(B, T, H)) and the vocabulary distribution ``P_vocab`` (its LM head, (B, T, V)). The pointer adds one
attention over the encoder states ``e_s`` (B, S, H) and a switch:

* copy attention, See Eq. (1)-(2) with a scaled dot product: ``a_t = softmax_s((W_q h_t) . e_s / sqrt(H))``,
  over the copyable source positions only (not [PAD], [CLS], [SEP]);
* context, Eq. (3): ``c_t = sum_s a_ts e_s``;
* switch, Eq. (8): ``p_gen = sigmoid(w_h . h_t + w_c . c_t + b)`` (See et al. also read the decoder input;
  in a transformer decoder ``h_t`` already holds it);
* output, Eq. (9): ``P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{s: x_s = w} a_ts``.

The source and the output share the backbone's word pieces, so a copied piece is its own vocabulary id: the
output space is the vocabulary (no extended copy slots), and ``logits`` are ``log P`` (normalised
log-probabilities, the library's copy-model contract, :mod:`hf_querygen.models._generation`). The loss is the
mean negative log-likelihood of the labels under ``P``, Eq. (6)-(7).

The pointer needs the source ids at every decoding step, while ``generate()`` runs the encoder once and
then passes only its outputs: :meth:`Bert2BertPointerModel.get_encoder` returns the encoder wrapped so that
its output also holds the ids (:class:`PointerEncoderOutput`), which beam search expands with the states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from transformers import EncoderDecoderModel
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput
from transformers.models.encoder_decoder.modeling_encoder_decoder import shift_tokens_right

from ...errors import InvalidInputError
from ...nn.cache import CACHE_NAME
from ...nn.loss import token_nll
from .._generation import LogitsContractMixin
from .configuration_bert2bert_pointer import Bert2BertPointerConfig

#: the smallest probability whose log is taken: an output the mixture gives no mass (a vocabulary
#: probability that underflowed and no copy) scores a finite, very low log-probability
_MIN_PROBABILITY = 1e-30


@dataclass
class PointerEncoderOutput(BaseModelOutput):
    """The encoder's output with the source ids it read: ``source_ids`` (B, S)."""

    source_ids: torch.LongTensor | None = None


class SourceKeepingEncoder(nn.Module):
    """The model's encoder, returning :class:`PointerEncoderOutput`: its states and the ids it read. It owns
    no parameter of its own (it is built on each :meth:`Bert2BertPointerModel.get_encoder` call, not kept)."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(
        self, input_ids: torch.LongTensor | None = None, attention_mask: torch.Tensor | None = None, **kwargs
    ) -> PointerEncoderOutput:
        kwargs["return_dict"] = True
        output = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        return PointerEncoderOutput(
            last_hidden_state=output.last_hidden_state,
            hidden_states=output.hidden_states,
            attentions=output.attentions,
            source_ids=input_ids,
        )


def _copy_mass_by_piece(
    attention: torch.Tensor, source_ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. (9)'s copy term at each source position, ``sum_{s': x_s' = x_s} a_ts'`` (B, T, S), from the copy
    attention (B, T, S) and the source ids (B, S); and (B, S) bool, True where the piece at s was already at
    an earlier position of its row. The positions of a row are sorted by piece (stably: a piece's first
    position first), so each piece's positions form one run, summed in (B, T, S) space."""
    steps = attention.shape[1]
    ordered, order = source_ids.sort(dim=-1, stable=True)
    repeated_in_order = torch.zeros_like(ordered, dtype=torch.bool)
    repeated_in_order[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    run = (~repeated_in_order).long().cumsum(-1) - 1  # (B, S): the run of each sorted position
    run = run[:, None, :].expand(-1, steps, -1)
    by_order = order[:, None, :].expand(-1, steps, -1)
    run_mass = torch.zeros_like(attention).scatter_add_(-1, run, attention.gather(-1, by_order))
    mass = torch.zeros_like(attention).scatter_(-1, by_order, run_mass.gather(-1, run))
    repeated = torch.zeros_like(repeated_in_order).scatter_(-1, order, repeated_in_order)
    return mass, repeated


class Bert2BertPointerModel(EncoderDecoderModel, LogitsContractMixin):
    """An encoder-decoder with a copy switch over the source pieces (module docstring).

    Shapes: ``input_ids`` / ``attention_mask`` (B, S); ``decoder_input_ids`` (B, T); ``labels`` (B, T) with
    -100 at padding; ``logits`` (B, T, V) are ``log P(y_t | y_<t, x)``. With precomputed
    ``encoder_outputs`` the source ids come from them (:meth:`get_encoder`'s output), else from
    ``source_ids`` or ``input_ids``."""

    config_class = Bert2BertPointerConfig

    def __init__(
        self,
        config: Bert2BertPointerConfig | None = None,
        encoder: nn.Module | None = None,
        decoder: nn.Module | None = None,
    ) -> None:
        if config is not None and not isinstance(config, self.config_class):
            # transformers' remote-code loader can import the configuration module twice (one copy per code
            # hash), and EncoderDecoderModel checks the class itself: a config of our type is re-made as ours
            if getattr(config, "model_type", None) != self.config_class.model_type:
                raise InvalidInputError(
                    f"Bert2BertPointerModel takes a {self.config_class.model_type} config, got "
                    f"{type(config).__name__} ({getattr(config, 'model_type', None)})"
                )
            config = self.config_class.from_dict(config.to_dict())
        super().__init__(config=config, encoder=encoder, decoder=decoder)
        encoder_size = self.encoder.config.hidden_size
        decoder_size = self.decoder.config.hidden_size
        self.copy_query = nn.Linear(decoder_size, encoder_size)
        self.copy_switch = nn.Linear(decoder_size + encoder_size, 1)
        for layer in (self.copy_query, self.copy_switch):
            self._init_pointer_layer(layer)

    def _init_pointer_layer(self, layer: nn.Linear) -> None:
        nn.init.normal_(layer.weight, mean=0.0, std=getattr(self.decoder.config, "initializer_range", 0.02))
        nn.init.zeros_(layer.bias)

    def _init_weights(self, module: nn.Module) -> None:
        # the pointer's layers start as at construction when from_pretrained finds them missing
        if module is getattr(self, "copy_query", None) or module is getattr(self, "copy_switch", None):
            self._init_pointer_layer(module)
            return
        super()._init_weights(module)

    @property
    def logits_are_log_probs(self) -> bool:
        return True

    def get_encoder(self) -> SourceKeepingEncoder:
        return SourceKeepingEncoder(self.encoder)

    def resize_token_embeddings(self, *args, **kwargs):
        raise InvalidInputError(
            "Bert2BertPointerModel: resize the encoder's and the decoder's embeddings separately "
            "(model.encoder.resize_token_embeddings, model.decoder.resize_token_embeddings) and set "
            "config.vocab_size, as for transformers' EncoderDecoderModel"
        )

    def copyable_positions(
        self, source_ids: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """(B, S) bool: the source positions the pointer may copy (real pieces; not [PAD], [CLS], [SEP])."""
        allowed = torch.ones_like(source_ids, dtype=torch.bool)
        if attention_mask is not None:
            allowed &= attention_mask.bool()
        for name in ("pad_token_id", "decoder_start_token_id", "eos_token_id"):
            special = getattr(self.config, name, None)
            if special is not None:
                allowed &= source_ids != special
        return allowed

    def pointer_log_probs(
        self,
        vocab_logits: torch.Tensor,
        decoder_states: torch.Tensor,
        encoder_states: torch.Tensor,
        source_ids: torch.Tensor,
        copyable: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``log P`` (B, T, V) of Eq. (9) and ``p_gen`` (B, T, 1) of Eq. (8), from the LM head's logits
        (B, T, V), the decoder states (B, T, H), the encoder states (B, S, H), the source ids (B, S) and the
        copyable positions (B, S). A row with nothing to copy generates (``p_gen = 1``).

        Eq. (9) is computed in log space. A piece absent from the source gets no copy mass, so its
        ``log P`` is ``log p_gen + log P_vocab``: one log-softmax over the vocabulary. Only the source's own
        pieces (at most S per row) need the mixture, and it is written over them: a few passes over the
        (B, T, V) rows instead of a dozen. On 2 CPU cores, interleaved training steps on the same batches: a
        q2id warm-start step (16 sources of 512 pieces, 64 target pieces) ~11% faster, a K2Q-sized one (32
        pairs of ~14 pieces) ~15% (benchmarks/frozen_encoder_pointer_mixture.json for the q2id shapes)."""
        scale = 1.0 / math.sqrt(encoder_states.shape[-1])
        scores = torch.einsum("bth,bsh->bts", self.copy_query(decoder_states), encoder_states) * scale
        scores = scores.float().masked_fill(~copyable[:, None, :], float("-inf"))
        has_copy = copyable.any(-1)[:, None, None]  # (B, 1, 1)
        attention = torch.softmax(scores.masked_fill(~has_copy, 0.0), dim=-1) * has_copy  # Eq. (2)
        context = torch.einsum("bts,bsh->bth", attention.to(encoder_states.dtype), encoder_states)  # Eq. (3)
        switch = self.copy_switch(torch.cat([decoder_states, context], dim=-1)).float()  # Eq. (8)
        log_gen = torch.where(has_copy, nn.functional.logsigmoid(switch), 0.0)  # log p_gen, (B, T, 1)
        vocab = vocab_logits.float().log_softmax(-1)  # log P_vocab, (B, T, V)
        index = source_ids[:, None, :].expand(-1, attention.shape[1], -1)  # (B, T, S)
        copied, repeated = _copy_mass_by_piece(attention, source_ids)
        vocab_at_source = vocab.gather(-1, index)
        p_gen = log_gen.exp()
        mixed = p_gen * vocab_at_source.exp() + (1.0 - p_gen) * copied  # Eq. (9) at the source's pieces
        mixed = mixed.clamp_min(_MIN_PROBABILITY).log()
        mixed = torch.where(has_copy, mixed, vocab_at_source)
        if mixed.requires_grad:
            # a piece the source holds twice is written twice with the same value; the gradient must reach
            # it once, through its first position
            mixed = torch.where(repeated[:, None, :], mixed.detach(), mixed)
        log_probs = (vocab + log_gen).scatter(-1, index, mixed)
        return log_probs, p_gen

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        labels: torch.LongTensor | None = None,
        source_ids: torch.LongTensor | None = None,
        num_items_in_batch: torch.Tensor | int | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput:
        if encoder_outputs is None:
            encoder_outputs = self.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
        elif isinstance(encoder_outputs, tuple):
            encoder_outputs = BaseModelOutput(*encoder_outputs)
        for candidate in (source_ids, getattr(encoder_outputs, "source_ids", None), input_ids):
            if candidate is not None:
                source_ids = candidate
                break
        else:
            raise InvalidInputError(
                "Bert2BertPointerModel needs the source ids to copy from: input_ids, or encoder_outputs "
                "of its get_encoder(), or source_ids beside precomputed encoder states"
            )
        if labels is not None and decoder_input_ids is None:
            decoder_input_ids = shift_tokens_right(
                labels, self.config.pad_token_id, self.config.decoder_start_token_id
            )
        hidden_states_asked = bool(
            kwargs.pop("decoder_output_hidden_states", None) or kwargs.get("output_hidden_states")
        )
        outputs = super().forward(
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            decoder_output_hidden_states=True,
            **kwargs,
        )
        encoder_states = encoder_outputs[0]
        copyable = self.copyable_positions(source_ids, attention_mask)
        log_probs, _ = self.pointer_log_probs(
            outputs.logits, outputs.decoder_hidden_states[-1], encoder_states, source_ids, copyable
        )
        # Eq. (6)-(7): the labels' negative log-likelihood under the mixture
        loss = token_nll(log_probs, labels, num_items_in_batch) if labels is not None else None
        return Seq2SeqLMOutput(
            loss=loss,
            logits=log_probs,
            **{CACHE_NAME: getattr(outputs, CACHE_NAME)},
            decoder_hidden_states=outputs.decoder_hidden_states if hidden_states_asked else None,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=encoder_states,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
        )


__all__ = ["Bert2BertPointerModel", "PointerEncoderOutput", "SourceKeepingEncoder"]
