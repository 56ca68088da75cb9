"""The dual decoder's incremental decoding for generation (Liu et al., CIKM'18, Sec. 3.5): one step at a time
from the recurrent state in a :class:`~hf_querygen.nn.cache.RecurrentStateCache`, the same distribution as
:meth:`~.decoding.DualDecoderDecoding._decode_parallel` with only the work a step needs.

A mixin of :class:`~.modeling_dual_decoder.DualDecoderForKeywordGeneration` (no parameters of its own).
Shapes as in :mod:`.decoding`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hf_querygen.nn.cache import RecurrentStateCache
from hf_querygen.nn.encoder import RecurrentEncoderOutput
from hf_querygen.nn.labels import floored_log

from .decoding import DualDecoderDecoding, _DecoderState


class DualDecoderStepDecoding(DualDecoderDecoding):
    """Step-by-step decoding from a cached :class:`~.decoding._DecoderState`."""

    @staticmethod
    def _lstm_step(
        rnn: nn.LSTM, inputs: torch.Tensor, hidden: torch.Tensor, cell: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of a single-layer LSTM: inputs (B, E), hidden/cell (B, H) -> (B, H) x 2. The fused cell
        kernel, not ``rnn(...)``: a third of the cost at batch 1 (same gates; float rounding may differ
        from the sequence kernel in the last bit)."""
        return torch._VF.lstm_cell(
            inputs, (hidden, cell), rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
        )

    def _never_target_ids(self, device: torch.device) -> torch.Tensor:
        """[PAD] and the decoder start, never generator targets, as an index tensor on ``device``: built once
        per device, not at every generated token."""
        never = self.__dict__.get("_never_target_index")  # not a buffer: not in the state dict
        if never is None or never.device != device:
            never = torch.tensor([self.pad_token_id, self.decoder_start_token_id], device=device)
            self.__dict__["_never_target_index"] = never
        return never

    def _step_state(
        self, encoder_outputs: RecurrentEncoderOutput, source_mask: torch.Tensor
    ) -> _DecoderState:
        """The state before the first generation step: :meth:`_initial_state` plus the per-source
        projections (computed once here, not at every step) and empty pointer-state buffers."""
        state = self._initial_state(encoder_outputs)
        encoder_states = encoder_outputs.last_hidden_state
        state.pointer_keys = self.pointer_attention.project_keys(encoder_states)
        own_index = torch.arange(source_mask.shape[1], device=source_mask.device)
        state.pointer_dead = ~(source_mask & (encoder_outputs.first_positions == own_index))
        state.sentinel_ids = self.output_vocab_size + source_mask.long().sum(dim=1, keepdim=True) - 1
        if self.pointer_only:
            state.pointer_state_keys = state.pointer_states[..., :0]
        else:
            state.source_keys = self.source_attention.project_keys(encoder_states)
            state.pointer_state_keys = state.pointer_states.new_zeros(
                state.pointer_states.shape[0], 0, self.config.attention_size
            )
        state.reserve(8)  # room for a typical keyword query before the first doubling
        return state

    def _decode_steps(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        source_mask: torch.Tensor,
        state: _DecoderState,
    ) -> tuple[torch.Tensor, torch.Tensor, _DecoderState]:
        """Incremental decoding from a cached ``state`` (generation): one step at a time, carrying both
        decoders' states, the phase flag and the pointer hidden states (Eq. 9-11 attend to them).

        The same distribution as :meth:`_decode_parallel`, with the work a step needs only: keys projected
        once per source (in the state), pointer states written into a pre-allocated buffer, and a decoder
        whose phase no row is in skipped (its row part would be -inf anyway).

        Returns log-probs (B, T, V + S), the generator phase of each step (B, T) and the new state.
        """
        vocab = self.output_vocab_size
        has_generator = not self.pointer_only
        encoder_states = encoder_outputs.last_hidden_state
        first_positions = encoder_outputs.first_positions
        batch_size, n_steps = decoder_input_ids.shape
        if n_steps == 1 and state.sentinel_ids is not None:  # one generated token: no cumsum needed
            generator_phase = (decoder_input_ids == state.sentinel_ids) | state.in_generator.unsqueeze(1)
        else:
            generator_phase = self._generator_phase(
                decoder_input_ids, source_mask, already=state.in_generator
            )
        embedded = self._embed_decoder_inputs(decoder_input_ids, encoder_outputs)
        state.reserve(n_steps)
        out = encoder_states.new_full((batch_size, n_steps, vocab + source_mask.shape[1]), float("-inf"))
        if has_generator:
            never = self._never_target_ids(encoder_states.device)
        for t in range(n_steps):
            phase = generator_phase[:, t]
            keep = phase.unsqueeze(1)  # (B, 1): the pointer has finished
            n_generating = int(phase.sum())
            slot = state.length
            step_input = embedded[:, t]
            if n_generating < batch_size:  # some row still points (Eq. 1-4)
                pointer_hidden, pointer_cell = self._lstm_step(
                    self.pointer_rnn, step_input, state.pointer_hidden, state.pointer_cell
                )
                _, weights = self.pointer_attention.step(
                    pointer_hidden, encoder_states, source_mask, state.pointer_keys
                )  # Eq. (2)-(3)
                probs = torch.zeros_like(weights).scatter_add_(-1, first_positions, weights)  # Eq. (4)
                pointer_log_probs = floored_log(probs).masked_fill_(state.pointer_dead, float("-inf"))
                if n_generating:  # the rows past the sentinel point nowhere
                    pointer_log_probs.masked_fill_(keep, float("-inf"))
                out[:, t, vocab:] = pointer_log_probs
                state.pointer_states[:, slot] = pointer_hidden
                state.pointer_states_mask[:, slot] = ~phase
                if has_generator:
                    projected = self.pointer_state_attention.project_keys(pointer_hidden)
                    state.pointer_state_keys[:, slot] = projected
                if n_generating:
                    state.pointer_hidden = torch.where(keep, state.pointer_hidden, pointer_hidden)
                    state.pointer_cell = torch.where(keep, state.pointer_cell, pointer_cell)
                else:
                    state.pointer_hidden, state.pointer_cell = pointer_hidden, pointer_cell
            # else: every row generates; the pointer's slot stays masked (zero weight) and its state stays
            state.length = slot + 1
            if n_generating and has_generator:  # Eq. (5)-(12)
                generator_hidden, generator_cell = self._lstm_step(
                    self.generator_rnn, step_input, state.generator_hidden, state.generator_cell
                )
                source_context, _ = self.source_attention.step(
                    generator_hidden, encoder_states, source_mask, state.source_keys
                )  # Eq. (6)-(8)
                pointer_context, _ = self.pointer_state_attention.step(
                    generator_hidden,
                    state.pointer_states[:, : state.length],
                    state.pointer_states_mask[:, : state.length],
                    state.pointer_state_keys[:, : state.length],
                )  # Eq. (9)-(11)
                features = torch.cat([generator_hidden, source_context, pointer_context], dim=-1)
                if self.training:
                    features = self.output_dropout(features)
                scores = F.linear(features, self.output_projection.weight, self.output_projection.bias)
                scores.index_fill_(-1, never, float("-inf"))  # [PAD] / [BOS] are never targets
                generator_log_probs = torch.log_softmax(scores, dim=-1)
                if n_generating < batch_size:
                    generator_log_probs.masked_fill_(~keep, float("-inf"))
                    state.generator_hidden = torch.where(keep, generator_hidden, state.generator_hidden)
                    state.generator_cell = torch.where(keep, generator_cell, state.generator_cell)
                else:
                    state.generator_hidden, state.generator_cell = generator_hidden, generator_cell
                out[:, t, :vocab] = generator_log_probs
            elif n_generating:  # pointer-only: after the sentinel only [EOS] (probability 1)
                out[:, t, self.eos_token_id] = torch.where(phase, 0.0, float("-inf"))
            state.in_generator = phase
        return out, generator_phase, state

    def _cached_decode(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        source_mask: torch.Tensor,
        cache: RecurrentStateCache | None,
    ) -> tuple[torch.Tensor, torch.Tensor, RecurrentStateCache]:
        """Decode ``decoder_input_ids`` (B, T) from the state in ``cache`` (None or empty: the start) ->
        (log-probs (B, T, V + S), generator phase (B, T), the cache holding the new state)."""
        resuming = cache is not None and cache.get_seq_length() > 0
        if resuming:
            state = _DecoderState.from_cache(cache)
        else:
            state = self._step_state(encoder_outputs, source_mask)
        log_probs, generator_phase, state = self._decode_steps(
            decoder_input_ids, encoder_outputs, source_mask, state
        )
        if cache is None:
            cache = RecurrentStateCache()
        state.to_cache(cache, static=not resuming)  # the per-source fields are in the cache already
        cache.advance(decoder_input_ids.shape[1])
        return log_probs, generator_phase, cache
