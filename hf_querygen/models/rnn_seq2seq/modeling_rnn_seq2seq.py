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

from ...nn.attention import AdditiveAttention, build_attention
from ...nn.cache import RecurrentStateCache, pick_cache, with_cache
from ...nn.copy import CopyNet, extended_to_input_ids
from ...nn.encoder import (
    RecurrentEncoderOutput,
    RecurrentSourceEncoder,
    RNNEncoder,
    WordEmbeddings,
    build_rnn,
)
from ...nn.initialization import init_uniform_weights
from ...nn.labels import IGNORE_INDEX, mask_labels, shift_labels_right
from ...nn.loss import token_nll
from .._generation import ExtendedSpaceLMOutput, RecurrentGenerationMixin
from .configuration_rnn_seq2seq import RNNSeq2SeqConfig

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


class RNNSeq2SeqDecoder(nn.Module):
    """Unidirectional RNN decoder with optional attention, input feeding and CopyNet.

    One step t, with y_{t-1} the previous token, s the top-layer RNN state and h the encoder states:
      attention_query="previous" (Bahdanau; Liu'18 Eq. 6-8 and 12; Song'17):
          c_t = attn(s_{t-1}, h);  s_t = RNN([e(y_{t-1}); c_t], s_{t-1});  scores = W_o [s_t; c_t] + b_o
      attention_query="current" (Luong 2015):
          s_t = RNN([e(y_{t-1}); h~_{t-1}], s_{t-1});  c_t = attn(s_t, h);
          h~_t = tanh(W_c [c_t; s_t]) (Luong Eq. 5);  scores = W_s h~_t (Luong Eq. 6)
      copy="copynet": scores are the generate-mode scores of CopyNet (Gu Eq. 7) and the RNN input also
          gets the selective read zeta(y_{t-1}) (Gu Eq. 9).
    """

    def __init__(self, config: RNNSeq2SeqConfig):
        super().__init__()
        self.config = config
        key_size = config.encoder_output_size
        hidden = config.decoder_hidden_size
        self.is_lstm = config.cell == "lstm"
        self.uses_attention = config.attention != "none"
        self.attend_before_rnn = self.uses_attention and config.attention_query == "previous"
        self.input_feeding = config.input_feeding
        self.selective_read = config.copy == "copynet" and config.copy_selective_read
        self.embed_tokens = WordEmbeddings(
            config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout
        )
        if config.bridge != "zeros":
            self.bridge_hidden = nn.Linear(key_size, hidden)  # W_s of Liu'18 Eq. (1)
            if self.is_lstm:
                self.bridge_cell = nn.Linear(key_size, hidden)
        if self.uses_attention:
            self.attention = build_attention(
                config.attention,
                hidden,
                key_size,
                config.attention_size,
                window=config.local_attention_window,
                score=config.local_attention_score,
            )
        rnn_input_size = config.embedding_size
        rnn_input_size += key_size if self.attend_before_rnn else 0
        rnn_input_size += hidden if self.input_feeding else 0
        rnn_input_size += key_size if self.selective_read else 0
        self.rnn = build_rnn(
            config.cell, rnn_input_size, hidden, config.num_decoder_layers, False, config.dropout
        )
        if self.uses_attention and not self.attend_before_rnn:
            self.attentional_projection = nn.Linear(
                key_size + hidden, hidden, bias=False
            )  # W_c, Luong Eq. (5)
            feature_size = hidden
        else:
            feature_size = hidden + (key_size if self.uses_attention else 0)
        self.feature_dropout = nn.Dropout(config.dropout)
        self.output_projection = nn.Linear(feature_size, config.output_vocab_size)  # W_o / W_s
        self.copynet = (
            CopyNet(hidden, key_size, config.output_vocab_size, config.unk_token_id)
            if config.copy == "copynet"
            else None
        )

    # -- state ------------------------------------------------------------------------------
    def initial_state(self, encoder_outputs: RecurrentEncoderOutput) -> dict[str, torch.Tensor]:
        """Batch-first decoder state before the first step: hidden/cell (B, L, H), feed (B, H),
        copy_probs (B, S)."""
        config = self.config
        summary = encoder_outputs.final_hidden  # (B, L_enc, H_out)
        layers = config.num_decoder_layers
        batch_size = summary.shape[0]

        def bridged(source: torch.Tensor | None, projection_name: str) -> torch.Tensor:
            if config.bridge == "zeros" or source is None:
                return summary.new_zeros(batch_size, layers, config.decoder_hidden_size)
            if (
                source.shape[1] != layers
            ):  # layer counts differ: every decoder layer starts from the top layer
                source = source[:, -1:].expand(batch_size, layers, source.shape[-1])
            projected = getattr(self, projection_name)(source)
            return torch.tanh(projected) if config.bridge == "tanh" else projected

        state = {"hidden": bridged(summary, "bridge_hidden")}
        if self.is_lstm:
            state["cell"] = bridged(encoder_outputs.final_cell, "bridge_cell")
        if self.input_feeding:
            state["feed"] = summary.new_zeros(batch_size, config.decoder_hidden_size)
        if self.selective_read:
            state["copy_probs"] = summary.new_zeros(batch_size, encoder_outputs.last_hidden_state.shape[1])
        return state

    def _run_rnn(self, rnn_input: torch.Tensor, state: dict[str, torch.Tensor]):
        """rnn_input (B, T, I) -> outputs (B, T, H) and the new batch-first hidden/cell."""
        hidden = state["hidden"].transpose(0, 1).contiguous()  # torch wants (L, B, H)
        if self.is_lstm:
            outputs, (hidden, cell) = self.rnn(
                rnn_input, (hidden, state["cell"].transpose(0, 1).contiguous())
            )
            return outputs, {"hidden": hidden.transpose(0, 1), "cell": cell.transpose(0, 1)}
        outputs, hidden = self.rnn(rnn_input, hidden)
        return outputs, {"hidden": hidden.transpose(0, 1)}

    def _rnn_step(self, rnn_input: torch.Tensor, state: dict[str, torch.Tensor]):
        """One step: rnn_input (B, I) -> output (B, H) and the new batch-first hidden/cell. A single-layer
        LSTM / GRU runs the fused cell kernel (a third of the module call's cost at batch 1; the same gates,
        float rounding may differ in the last bit), deeper stacks the module."""
        rnn = self.rnn
        if rnn.num_layers != 1 or self.config.cell not in ("lstm", "gru"):
            output, rnn_state = self._run_rnn(rnn_input.unsqueeze(1), state)
            return output.squeeze(1), rnn_state
        weights = (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
        if self.is_lstm:
            hidden, cell = torch._VF.lstm_cell(
                rnn_input, (state["hidden"][:, 0], state["cell"][:, 0]), *weights
            )
            return hidden, {"hidden": hidden.unsqueeze(1), "cell": cell.unsqueeze(1)}
        hidden = torch._VF.gru_cell(rnn_input, state["hidden"][:, 0], *weights)
        return hidden, {"hidden": hidden.unsqueeze(1)}

    #: per-source tensors a step-by-step decoder computes once and keeps in the state (the cache does not
    #: reorder them for beams: every beam of a source has the same)
    STATIC_STATES = ("projected_keys", "copy_keys", "copy_targets", "copy_dead")

    def _per_source(
        self, encoder_outputs: RecurrentEncoderOutput, state: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """The projected attention keys (the key half of the score), CopyNet's tanh(W_c h_j) (Gu Eq. 8)
        and scatter plan, from ``state`` when a cached step computed them already, else computed now."""
        if all(name in state for name in self.STATIC_STATES if self._needs_static(name)):
            return {name: state[name] for name in self.STATIC_STATES if name in state}
        keys = encoder_outputs.last_hidden_state
        statics = {}
        if self.uses_attention:
            statics["projected_keys"] = self.attention.project_keys(keys)
        if self.copynet is not None:
            statics["copy_keys"] = self.copynet.project_keys(keys)
            statics["copy_targets"], statics["copy_dead"] = self.copynet.copy_targets(
                encoder_outputs.source_input_ids,
                encoder_outputs.first_positions,
                encoder_outputs.attention_mask.bool(),
            )
        return statics

    def _needs_static(self, name: str) -> bool:
        return self.uses_attention if name == "projected_keys" else self.copynet is not None

    # -- scoring ----------------------------------------------------------------------------
    def _scores(
        self,
        rnn_output: torch.Tensor,
        context: torch.Tensor | None,
        encoder_outputs: RecurrentEncoderOutput,
        statics: dict[str, torch.Tensor] | None = None,
        attentional: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """rnn_output (B, [T,] H), context (B, [T,] H_out) -> (scores (B, [T,] C), attentional vector h~
        or None, copy probabilities (B, [T,] S) or None); ``attentional`` when the step loop computed it
        already (input feeding), ``statics`` from :meth:`_per_source`."""
        statics = statics or {}
        if context is None:
            features = rnn_output
        elif self.attend_before_rnn:
            features = torch.cat([rnn_output, context], dim=-1)  # [s_t; c_t], Liu'18 Eq. (12)
        else:
            if attentional is None:
                attentional = torch.tanh(
                    self.attentional_projection(torch.cat([context, rnn_output], dim=-1))
                )
            features = attentional  # Luong Eq. (5)
        scores = self.output_projection(self.feature_dropout(features))
        if self.copynet is None:
            return scores, attentional, None
        targets = statics.get("copy_targets")
        copied = self.copynet(
            scores,
            rnn_output,
            encoder_outputs.last_hidden_state,
            encoder_outputs.attention_mask.bool(),
            encoder_outputs.source_input_ids,
            encoder_outputs.first_positions,
            projected_keys=statics.get("copy_keys"),
            targets=None if targets is None else (targets, statics["copy_dead"]),
        )
        return copied.log_probs, attentional, copied.copy_probs

    def _can_run_in_parallel(self) -> bool:
        # nothing computed after step t-1's RNN feeds step t's RNN input: run the whole sequence at once
        return not (self.attend_before_rnn or self.input_feeding or self.selective_read)

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        state: dict[str, torch.Tensor],
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """decoder_input_ids (B, T) in the extended space (ids >= V copy a source position), state from
        :meth:`initial_state` or the cache -> (scores (B, T, C), state after the last step; it carries the
        per-source tensors of :meth:`_per_source` too).

        The step loop runs only what feeds the next step's RNN input (attention read with s_{t-1}, the
        input-feeding vector, the selective read); the output layer, CopyNet's joint softmax and its
        scatter into the extended space run once over all T steps after it."""
        keys = encoder_outputs.last_hidden_state
        mask = encoder_outputs.attention_mask.bool()
        token_ids = extended_to_input_ids(
            decoder_input_ids,
            encoder_outputs.source_input_ids,
            self.config.output_vocab_size,
            self.config.unk_token_id,
        )
        # outside training the embedding dropout is the identity and the mapped ids are valid: skip the
        # module's checks (a host sync per generated token)
        embedded = (self.embed_tokens if self.training else self.embed_tokens.embedding)(
            token_ids
        )  # (B, T, E)
        statics = self._per_source(encoder_outputs, state)
        projected_keys = statics.get("projected_keys")

        if self._can_run_in_parallel():
            outputs, new_state = self._run_rnn(embedded, state)
            context = (
                self.attention(outputs, keys, mask, projected_keys).context if self.uses_attention else None
            )
            scores, _, _ = self._scores(outputs, context, encoder_outputs, statics)
            return scores, dict(new_state, **statics)

        additive = isinstance(self.attention, AdditiveAttention)
        state = dict(state)
        n_steps = embedded.shape[1]
        outputs, contexts, attentionals = [], [], []
        copy_scores = None  # psi_c of the previous step of this call (the selective read of the next)
        for t in range(n_steps):
            pieces, context = [embedded[:, t]], None
            if self.attend_before_rnn:
                # Bahdanau / Liu'18 Eq. (6)-(8): attend with the previous top-layer state s_{t-1}
                query = state["hidden"][:, -1]
                if additive:
                    context, _ = self.attention.step(query, keys, mask, projected_keys)
                else:
                    context = self.attention(query, keys, mask, projected_keys).context
                pieces.append(context)
            if self.input_feeding:
                pieces.append(state["feed"])
            if self.selective_read:
                if copy_scores is None:  # first step of the call: the cached copy probabilities
                    zeta = self.copynet.selective_read(
                        decoder_input_ids[:, t],
                        state["copy_probs"],
                        keys,
                        mask,
                        encoder_outputs.source_input_ids,
                        encoder_outputs.first_positions,
                    )
                else:
                    zeta = self.copynet.selective_read_from_scores(
                        decoder_input_ids[:, t], copy_scores, keys, mask, statics["copy_targets"]
                    )
                pieces.append(zeta)
            output, rnn_state = self._rnn_step(torch.cat(pieces, dim=-1), state)
            state.update(rnn_state)
            if self.uses_attention and not self.attend_before_rnn:
                context = self.attention(output, keys, mask, projected_keys).context  # Luong: attend with s_t
            if self.input_feeding:
                state["feed"] = torch.tanh(self.attentional_projection(torch.cat([context, output], dim=-1)))
                attentionals.append(state["feed"])
            if self.selective_read and t + 1 < n_steps:
                copy_scores = torch.bmm(output.unsqueeze(1), statics["copy_keys"].transpose(1, 2)).squeeze(1)
            outputs.append(output)
            contexts.append(context)

        def stacked(steps: list) -> torch.Tensor | None:
            return None if not steps or steps[0] is None else torch.stack(steps, dim=1)

        scores, _, copy_probs = self._scores(
            stacked(outputs), stacked(contexts), encoder_outputs, statics, stacked(attentionals)
        )
        if self.selective_read:
            state["copy_probs"] = copy_probs[:, -1]
        return scores, dict(state, **statics)


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
    ) -> tuple[torch.Tensor, RecurrentStateCache | None]:
        """Decode ``decoder_input_ids`` (B, T) from the state in ``cache`` (None or empty: the start) ->
        (scores (B, T, C), the cache holding the new state, or None without ``use_cache``)."""
        resuming = cache is not None and cache.get_seq_length() > 0
        state = dict(cache.items()) if resuming else self.decoder.initial_state(encoder_outputs)
        scores, state = self.decoder(decoder_input_ids, encoder_outputs, state)
        if not use_cache:
            return scores, None
        cache = cache if cache is not None else RecurrentStateCache()
        cache.update(**state)
        cache.mark_static(*(name for name in self.decoder.STATIC_STATES if name in state))
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
            if labels.numel() and int(labels.max()) >= scores.shape[-1]:
                raise ValueError(
                    f"label id {int(labels.max())} is outside the {scores.shape[-1]} output classes"
                )
            label_scores = scores.gather(-1, labels.clamp(0, scores.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
            dead = torch.isneginf(label_scores) & (labels != IGNORE_INDEX)
            if bool(dead.any()):
                row, step = dead.nonzero()[0].tolist()
                raise ValueError(
                    f"label {int(labels[row, step])} at batch row {row}, step {step} is a copy slot "
                    "that cannot hold "
                    "probability (a padded, repeated or in-vocabulary source position); labels must use "
                    "the first "
                    "occurrence of an out-of-vocabulary word and the vocabulary id of an in-vocabulary one"
                )
            # the rows are log-probabilities already: the NLL is the gathered label score (a cross-entropy
            # would re-normalise every (B, T, V + S) row for nothing)
            if num_items_in_batch is None:
                num_items_in_batch = (labels != IGNORE_INDEX).sum()
            total = -torch.where(labels != IGNORE_INDEX, label_scores.float(), 0.0).sum()
            if isinstance(num_items_in_batch, torch.Tensor):
                num_items_in_batch = num_items_in_batch.to(total.device)
            return total / num_items_in_batch
        return token_nll(scores, labels, num_items_in_batch)

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


__all__ = [
    "RNNSeq2SeqDecoder",
    "RNNSeq2SeqEncoder",
    "RNNSeq2SeqEncoderOutput",
    "RNNSeq2SeqForConditionalGeneration",
    "RNNSeq2SeqPreTrainedModel",
]
