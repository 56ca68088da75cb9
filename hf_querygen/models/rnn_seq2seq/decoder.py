"""The RNN seq2seq decoder: one configurable unidirectional RNN with optional attention (Bahdanau; Luong
global or local-p), input feeding and CopyNet, run over all steps at once (teacher forcing) or step by step
from its recurrent state. Shapes as in :mod:`.modeling_rnn_seq2seq`.
"""

from __future__ import annotations

import torch
from torch import nn

from ...nn.attention import AdditiveAttention, build_attention
from ...nn.copy import CopyNet, extended_to_input_ids
from ...nn.encoder import RecurrentEncoderOutput, WordEmbeddings, build_rnn
from .configuration_rnn_seq2seq import RNNSeq2SeqConfig


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
        # what every decoding step reads, as plain attributes (a transformers 5 config attribute read costs
        # about a microsecond)
        self.cell_type: str = config.cell
        self.output_vocab_size: int = config.output_vocab_size
        self.unk_token_id: int = config.unk_token_id
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
        #: the :data:`STATIC_STATES` this decoder keeps in its state (fixed by the configuration)
        self.kept_static_states = tuple(name for name in self.STATIC_STATES if self._needs_static(name))

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
        if rnn.num_layers != 1 or self.cell_type not in ("lstm", "gru"):
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
        if all(name in state for name in self.kept_static_states):
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
        labels: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """rnn_output (B, [T,] H), context (B, [T,] H_out) -> (scores (B, [T,] C), attentional vector h~
        or None, copy probabilities (B, [T,] S) or None); ``attentional`` when the step loop computed it
        already (input feeding), ``statics`` from :meth:`_per_source`. With ``labels`` (B, T) (CopyNet
        only) the first item is log p(labels) (B, T) instead of the scores: what training reads."""
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
        # outside training the dropout is the identity: skip its module call (once per generated token)
        scores = self.output_projection(self.feature_dropout(features) if self.training else features)
        if self.copynet is None:
            return scores, attentional, None
        targets = statics.get("copy_targets")
        if labels is not None:
            label_log_probs, copy_probs = self.copynet.label_log_probs(
                scores,
                rnn_output,
                encoder_outputs.last_hidden_state,
                encoder_outputs.attention_mask,
                labels,
                projected_keys=statics.get("copy_keys"),
                targets=None if targets is None else (targets, statics["copy_dead"]),
                source_input_ids=encoder_outputs.source_input_ids,
                first_positions=encoder_outputs.first_positions,
            )
            return label_log_probs, attentional, copy_probs
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
        labels: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """decoder_input_ids (B, T) in the extended space (ids >= V copy a source position), state from
        :meth:`initial_state` or the cache -> (scores (B, T, C), state after the last step; it carries the
        per-source tensors of :meth:`_per_source` too). With ``labels`` (B, T) (CopyNet) the first item is
        log p(labels) (B, T) read without the (B, T, V + S) rows.

        The step loop runs only what feeds the next step's RNN input (attention read with s_{t-1}, the
        input-feeding vector, the selective read); the output layer, CopyNet's joint softmax and its
        scatter into the extended space run once over all T steps after it."""
        keys = encoder_outputs.last_hidden_state
        mask = encoder_outputs.attention_mask.bool()
        token_ids = extended_to_input_ids(
            decoder_input_ids, encoder_outputs.source_input_ids, self.output_vocab_size, self.unk_token_id
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
            scores, _, _ = self._scores(outputs, context, encoder_outputs, statics, labels=labels)
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
            if not steps or steps[0] is None:
                return None
            # generation feeds one token per call: a view, not a stack's copy
            return steps[0].unsqueeze(1) if len(steps) == 1 else torch.stack(steps, dim=1)

        scores, _, copy_probs = self._scores(
            stacked(outputs), stacked(contexts), encoder_outputs, statics, stacked(attentionals), labels
        )
        if self.selective_read:
            state["copy_probs"] = copy_probs[:, -1]
        return scores, dict(state, **statics)
