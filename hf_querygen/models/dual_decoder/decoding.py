"""The dual decoder's decoding (Liu et al., CIKM'18, Sec. 3.3-3.4): the two decoders' pieces (pointer Eq. 1-4,
generator Eq. 5-12), the extended-space rows they fill, and teacher forcing over all steps at once.

A mixin of :class:`~.modeling_dual_decoder.DualDecoderForKeywordGeneration`: it reads the modules the model
builds (``pointer_rnn``, ``pointer_attention``, ``generator_rnn``, ``source_attention``,
``pointer_state_attention``, ``output_projection``, ``embeddings``) and holds no parameters itself, so the
saved weights' names are the model's. Shapes: B batch, S source positions, T decoder steps, H hidden size,
A attention size, V output vocabulary; the extended output space is V + S (:mod:`hf_querygen.nn.copy`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hf_querygen.nn.cache import RecurrentStateCache
from hf_querygen.nn.copy import extended_to_input_ids
from hf_querygen.nn.encoder import RecurrentEncoderOutput
from hf_querygen.nn.labels import floored_log


@dataclass
class _DecoderState:
    """Recurrent state of both decoders between steps (batch-first).

    pointer_hidden / pointer_cell, generator_hidden / generator_cell: (B, H);
    in_generator: (B,) bool, True once the pointer emitted its end sentinel;
    pointer_states: (B, P', H) step buffer whose first ``length`` slots hold the pointer hidden states
    s^p_j so far (P' >= length is its capacity, grown by doubling), pointer_states_mask (B, P') bool.

    Generation also keeps what is fixed per source, computed once instead of at every step:
    pointer_keys / source_keys (B, S, A) the projected encoder states of Eq. (3) / (8);
    pointer_state_keys (B, P', A) the projected pointer states of Eq. (10), one slot written per step;
    pointer_dead (B, S) the source slots that never receive pointer mass (padding, repeats; Eq. 4);
    sentinel_ids (B, 1) the extended id of each source's end sentinel.
    """

    pointer_hidden: torch.Tensor
    pointer_cell: torch.Tensor
    generator_hidden: torch.Tensor
    generator_cell: torch.Tensor
    in_generator: torch.Tensor
    pointer_states: torch.Tensor
    pointer_states_mask: torch.Tensor
    pointer_keys: torch.Tensor | None = None
    source_keys: torch.Tensor | None = None
    pointer_state_keys: torch.Tensor | None = None
    pointer_dead: torch.Tensor | None = None
    sentinel_ids: torch.Tensor | None = None
    length: int = 0

    FIELDS = (
        "pointer_hidden",
        "pointer_cell",
        "generator_hidden",
        "generator_cell",
        "in_generator",
        "pointer_states",
        "pointer_states_mask",
        "pointer_state_keys",
    )
    #: the same in every beam of a source: beam search need not reorder them
    STATIC_FIELDS = ("pointer_keys", "source_keys", "pointer_dead", "sentinel_ids")

    @classmethod
    def from_cache(cls, cache: RecurrentStateCache) -> _DecoderState:
        states = dict(cache.items())  # one copy, then plain dict look-ups
        names = cls.FIELDS + cls.STATIC_FIELDS
        return cls(**{name: states.get(name) for name in names}, length=cache.get_seq_length())

    def to_cache(self, cache: RecurrentStateCache, static: bool = True) -> None:
        """Write the state into ``cache``; ``static=False`` leaves out the per-source fields (a step resumed
        from ``cache`` has not changed them)."""
        names = self.FIELDS + self.STATIC_FIELDS if static else self.FIELDS
        states = {name: getattr(self, name) for name in names}
        cache.update(**{name: tensor for name, tensor in states.items() if tensor is not None})
        if static:
            cache.mark_static(*(name for name in self.STATIC_FIELDS if states[name] is not None))

    def reserve(self, steps: int) -> None:
        """Make room for ``steps`` more pointer states in the step buffers (capacity doubles, so the
        buffers are copied O(log T) times over a generation instead of growing by ``cat`` every step)."""
        capacity, needed = self.pointer_states.shape[1], self.length + steps
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity, 8)

        def grown(buffer: torch.Tensor) -> torch.Tensor:
            bigger = buffer.new_zeros(buffer.shape[0], capacity, *buffer.shape[2:])
            if self.length:  # nothing to copy into the first buffer of a generation
                bigger[:, : self.length] = buffer[:, : self.length]
            return bigger

        self.pointer_states = grown(self.pointer_states)
        self.pointer_states_mask = grown(self.pointer_states_mask)
        self.pointer_state_keys = grown(self.pointer_state_keys)


class DualDecoderDecoding:
    """Both decoders' steps as pieces, and :meth:`_decode_parallel` (teacher forcing; generation
    without a cache)."""

    def _initial_state(self, encoder_outputs: RecurrentEncoderOutput) -> _DecoderState:
        # (B, 2H) [fw h_n ; bw h_1] of the (single-layer) BiLSTM and its cell
        summary_hidden, summary_cell = encoder_outputs.final_hidden[:, -1], encoder_outputs.final_cell[:, -1]
        batch_size = summary_hidden.shape[0]
        pointer_hidden = self.pointer_init_hidden(summary_hidden)  # Eq. (1)
        pointer_cell = self.pointer_init_cell(summary_cell)
        if self.config.pointer_only:
            generator_hidden, generator_cell = (
                torch.zeros_like(pointer_hidden),
                torch.zeros_like(pointer_cell),
            )
        else:
            generator_hidden = self.generator_init_hidden(summary_hidden)  # Eq. (5)
            generator_cell = self.generator_init_cell(summary_cell)
        return _DecoderState(
            pointer_hidden=pointer_hidden,
            pointer_cell=pointer_cell,
            generator_hidden=generator_hidden,
            generator_cell=generator_cell,
            in_generator=torch.zeros(batch_size, dtype=torch.bool, device=summary_hidden.device),
            pointer_states=pointer_hidden.new_zeros(batch_size, 0, self.config.hidden_size),
            pointer_states_mask=torch.zeros(batch_size, 0, dtype=torch.bool, device=summary_hidden.device),
        )

    def _pointer_log_probs(
        self, weights: torch.Tensor, first_occurrence: torch.Tensor, source_mask: torch.Tensor
    ) -> torch.Tensor:
        """Eq. (4): attention weights (B, [T,] S) summed over the positions holding the same word into
        the slot of its first occurrence -> log-probabilities (B, [T,] S), -inf at padding and repeats."""
        index = first_occurrence if weights.dim() == 2 else first_occurrence.unsqueeze(1).expand_as(weights)
        probs = torch.zeros_like(weights).scatter_add(-1, index, weights)
        own_index = torch.arange(weights.shape[-1], device=weights.device)
        live = source_mask & (first_occurrence == own_index)
        if weights.dim() == 3:
            live = live.unsqueeze(1)
        return floored_log(probs).masked_fill(~live, float("-inf"))

    def _generator_log_probs(
        self,
        generator_hidden: torch.Tensor,
        encoder_states: torch.Tensor,
        source_mask: torch.Tensor,
        pointer_states: torch.Tensor,
        pointer_states_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Eq. (6)-(12): generator hidden (B, [T,] H), encoder states (B, S, 2H), pointer hidden states
        (B, P, H) with mask (B, P) -> log-probabilities over the output vocabulary (B, [T,] V)."""
        source_context = self.source_attention(
            generator_hidden, encoder_states, source_mask
        ).context  # Eq. (6)-(8)
        pointer_context = self.pointer_state_attention(
            generator_hidden, pointer_states, pointer_states_mask
        ).context  # Eq. (9)-(11)
        features = self.output_dropout(torch.cat([generator_hidden, source_context, pointer_context], dim=-1))
        scores = self.output_projection(features)  # Eq. (12), before the softmax
        # [PAD] and [BOS] are never targets; masking them keeps them out of beams
        never = [self.config.pad_token_id, self.config.decoder_start_token_id]
        scores[..., never] = float("-inf")
        return torch.log_softmax(scores, dim=-1)

    def _phase_rows(
        self,
        pointer_log_probs: torch.Tensor,
        generator_log_probs: torch.Tensor | None,
        generator_phase: torch.Tensor,
    ) -> torch.Tensor:
        """Assemble extended-space rows (B, [T,] V + S): the pointer's over positions, the generator's
        over the vocabulary, each step taking its phase's row (pointer-only: [EOS] after the sentinel)."""
        vocab = self.config.output_vocab_size
        no_vocab = pointer_log_probs.new_full((*pointer_log_probs.shape[:-1], vocab), float("-inf"))
        pointer_rows = torch.cat([no_vocab, pointer_log_probs], dim=-1)
        if generator_log_probs is None:  # pointer-only: after the sentinel only [EOS] (probability 1)
            generator_log_probs = no_vocab.clone()
            generator_log_probs[..., self.config.eos_token_id] = 0.0
        generator_rows = torch.cat(
            [generator_log_probs, torch.full_like(pointer_log_probs, float("-inf"))], dim=-1
        )
        return torch.where(generator_phase.unsqueeze(-1), generator_rows, pointer_rows)

    def _embed_decoder_inputs(
        self, decoder_input_ids: torch.LongTensor, encoder_outputs: RecurrentEncoderOutput
    ) -> torch.Tensor:
        """(B, T) extended ids -> (B, T, E): a pointed-at position is embedded as its source word."""
        # outside training the embedding dropout is the identity: skip the two module calls
        embed = self.embeddings if self.training else self.embeddings.embedding
        return embed(
            extended_to_input_ids(
                decoder_input_ids,
                encoder_outputs.source_input_ids,
                self.output_vocab_size,
                self.unk_token_id,
            )
        )

    def _generator_phase(
        self,
        decoder_input_ids: torch.LongTensor,
        source_mask: torch.Tensor,
        already: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(B, T) True from the step whose input is the pointer's end sentinel (the [EOS] closing the
        source, id ``V + source_length - 1``) onwards; ``already`` (B,) = the phase before these steps."""
        sentinel_id = self.config.output_vocab_size + source_mask.long().sum(dim=1, keepdim=True) - 1
        phase = (decoder_input_ids == sentinel_id).long().cumsum(dim=1) > 0
        return phase if already is None else phase | already.unsqueeze(1)

    def _decode_parallel(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        source_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher forcing over all T steps at once (both decoders are fed their previous output only,
        so each LSTM runs over its whole input sequence in one call).

        decoder_input_ids (B, T) -> (log-probs (B, T, V + S), generator phase (B, T))."""
        config = self.config
        encoder_states = encoder_outputs.last_hidden_state
        state = self._initial_state(encoder_outputs)
        generator_phase = self._generator_phase(decoder_input_ids, source_mask)
        embedded = self._embed_decoder_inputs(decoder_input_ids, encoder_outputs)
        # pointer decoder over every step; its outputs past the sentinel are masked out below
        pointer_outputs, _ = self.pointer_rnn(
            embedded,
            (state.pointer_hidden.unsqueeze(0).contiguous(), state.pointer_cell.unsqueeze(0).contiguous()),
        )
        weights = self.pointer_attention(pointer_outputs, encoder_states, source_mask).weights  # Eq. (2)-(3)
        pointer_log_probs = self._pointer_log_probs(weights, encoder_outputs.first_positions, source_mask)
        generator_log_probs = None
        n_generator_steps = int(generator_phase.sum(dim=1).max()) if decoder_input_ids.numel() else 0
        if not config.pointer_only and n_generator_steps > 0:
            # left-align each row's generator steps: they start at a different step in every row
            batch_size, n_steps = decoder_input_ids.shape
            first_step = (~generator_phase).sum(dim=1, keepdim=True)  # (B, 1)
            steps = first_step + torch.arange(n_generator_steps, device=first_step.device)  # (B, Tg)
            valid = steps < n_steps
            gathered = embedded.gather(
                1, steps.clamp(max=n_steps - 1).unsqueeze(-1).expand(-1, -1, embedded.shape[-1])
            )
            generator_outputs, _ = self.generator_rnn(
                gathered,
                (
                    state.generator_hidden.unsqueeze(0).contiguous(),
                    state.generator_cell.unsqueeze(0).contiguous(),
                ),
            )
            aligned = self._generator_log_probs(
                generator_outputs, encoder_states, source_mask, pointer_outputs, ~generator_phase
            )  # (B, Tg, V)
            # scatter back to the original steps; invalid slots go to a dump column n_steps
            target = torch.where(valid, steps, torch.full_like(steps, n_steps))
            generator_log_probs = aligned.new_full(
                (batch_size, n_steps + 1, aligned.shape[-1]), float("-inf")
            )
            generator_log_probs = generator_log_probs.scatter(
                1, target.unsqueeze(-1).expand_as(aligned), aligned
            )[:, :n_steps]
        elif not config.pointer_only:
            generator_log_probs = pointer_log_probs.new_full(
                (*pointer_log_probs.shape[:-1], config.output_vocab_size), float("-inf")
            )
        return self._phase_rows(pointer_log_probs, generator_log_probs, generator_phase), generator_phase
