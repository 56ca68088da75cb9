"""The dual-decoder keyword-query generator of Liu et al. (CIKM'18), Sec. 3, as a transformers model.

A BiLSTM encoder reads the natural-language query (Sec. 3.2). A **pointer decoder** extracts words
from the query by attention over source positions (Eq. 1-4) until it points at the end sentinel
(the ``[EOS]`` our tokenizers append to every source). A **generator decoder** then produces words
of a fixed output vocabulary while attending to both the encoder states and the pointer decoder's
hidden states (Eq. 5-12). Training minimises ``lambda * pointer NLL + (1 - lambda) * generator NLL``
(Eq. 13-14).

Both decoders share ONE output space, the project's extended output space
``[output vocabulary (V) | source positions (S)]`` (:mod:`hf_querygen.nn.copy`): a step in the
pointer phase puts all its probability on position ids ``V + j`` (the vocabulary part is masked),
a step in the generator phase on vocabulary ids (the position part is masked). The phase of each
step is determined by the ids fed so far: the pointer phase ends once the sentinel's id
``V + sentinel_position`` has been emitted. So one sequence ``[BOS] e_1 .. e_m <sentinel> g_1 .. g_k
[EOS]`` carries both decoders' outputs, and the stock ``generate()`` (greedy, beam search,
sampling) runs the three inference phases of Sec. 3.5: the recurrent state in the cache holds both
decoders' states, the phase flag and the pointer decoder's hidden states for Eq. (9)-(11), and is
reordered by beam search. The third phase (union without duplicates) is postprocessing:
:func:`hf_querygen.tasks.nl2kw.decode_dual_decoder_ids`.

``pointer_only=True`` removes the generator: the paper's Pointer Network baseline (Table 2, row 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from hf_querygen.nn.attention import AdditiveAttention
from hf_querygen.nn.cache import CACHE_NAME, RecurrentStateCache, pick_cache, with_cache
from hf_querygen.nn.copy import extended_to_input_ids
from hf_querygen.nn.encoder import (
    RecurrentEncoderOutput,
    RecurrentSourceEncoder,
    RNNEncoder,
    WordEmbeddings,
    build_rnn,
)
from hf_querygen.nn.initialization import init_uniform_weights
from hf_querygen.nn.labels import IGNORE_INDEX, floored_log, shift_labels_right

from .._generation import ExtendedSpaceLMOutput, RecurrentGenerationMixin
from .configuration_dual_decoder import DualDecoderConfig


class DualDecoderEncoder(RecurrentSourceEncoder):
    """Embedding + single-layer BiLSTM over the natural-language query (Sec. 3.2): the shared
    :class:`~hf_querygen.nn.encoder.RecurrentSourceEncoder`. Its output: last_hidden_state (B, S, 2H)
    h_i = [fw h_i ; bw h_i]; final_hidden / final_cell (B, 1, 2H) [fw h_n ; bw h_1] (and the cells), the input
    of Eq. (1)/(5); first_positions (B, S) first position holding the same source word (Eq. 4)."""

    def __init__(self, config: DualDecoderConfig, embeddings: WordEmbeddings):
        # no pad id: a missing attention_mask means "every position is real" (sources end in the sentinel)
        super().__init__(
            embeddings,
            RNNEncoder(
                config.embedding_size, config.hidden_size, num_layers=1, cell="lstm", bidirectional=True
            ),
        )


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
        names = cls.FIELDS + cls.STATIC_FIELDS
        return cls(**{name: cache.get(name) for name in names}, length=cache.get_seq_length())

    def to_cache(self, cache: RecurrentStateCache) -> None:
        states = {name: getattr(self, name) for name in self.FIELDS + self.STATIC_FIELDS}
        cache.update(**{name: tensor for name, tensor in states.items() if tensor is not None})
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
            bigger[:, : self.length] = buffer[:, : self.length]
            return bigger

        self.pointer_states = grown(self.pointer_states)
        self.pointer_states_mask = grown(self.pointer_states_mask)
        self.pointer_state_keys = grown(self.pointer_state_keys)


class DualDecoderPreTrainedModel(PreTrainedModel):
    config_class = DualDecoderConfig
    base_model_prefix = "dual_decoder"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)


class DualDecoderForKeywordGeneration(DualDecoderPreTrainedModel, RecurrentGenerationMixin):
    """Liu et al. (2018) dual decoder: BiLSTM encoder, pointer decoder, generator decoder.

    Output space: logits (B, T, V + S) are log-probabilities (each step's row is normalised over its
    phase's part, the other part is -inf), V = ``config.output_vocab_size``.
    """

    plain_greedy_loop = True  # RecurrentGenerationMixin: plain greedy search skips generate()'s setup

    def __init__(self, config: DualDecoderConfig):
        super().__init__(config)
        hidden, encoder_size = config.hidden_size, 2 * config.hidden_size
        # one table for encoder and both decoders (Sec. 5.1: "shared the same word embeddings"); it is
        # registered once, under the encoder, and reached by the decoders through ``self.embeddings``
        self.encoder = DualDecoderEncoder(
            config,
            WordEmbeddings(config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout),
        )
        # pointer decoder, Eq. (1)-(4)
        self.pointer_init_hidden = nn.Linear(encoder_size, hidden)  # W_s^p, Eq. (1)
        self.pointer_init_cell = nn.Linear(encoder_size, hidden)
        self.pointer_rnn = build_rnn("lstm", config.embedding_size, hidden)
        self.pointer_attention = AdditiveAttention(hidden, encoder_size, config.attention_size)  # Eq. (2)-(3)
        if not config.pointer_only:
            # generator decoder, Eq. (5)-(12)
            self.generator_init_hidden = nn.Linear(encoder_size, hidden)  # W_s^g, Eq. (5)
            self.generator_init_cell = nn.Linear(encoder_size, hidden)
            self.generator_rnn = build_rnn("lstm", config.embedding_size, hidden)
            self.source_attention = AdditiveAttention(
                hidden, encoder_size, config.attention_size
            )  # Eq. (6)-(8)
            self.pointer_state_attention = AdditiveAttention(
                hidden, hidden, config.attention_size
            )  # Eq. (9)-(11)
            self.output_dropout = nn.Dropout(config.dropout)
            self.output_projection = nn.Linear(
                hidden + encoder_size + hidden, config.output_vocab_size
            )  # Eq. (12)
        self.post_init()

    # ------------------------------------------------------------------ HF plumbing
    @property
    def embeddings(self) -> WordEmbeddings:
        return self.encoder.embed_tokens

    def get_encoder(self) -> DualDecoderEncoder:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.embedding = value

    @property
    def logits_are_log_probs(self) -> bool:
        """Always: both decoders' rows are log-probabilities over V + S (see the class docstring)."""
        return True

    # ------------------------------------------------------------------ decoding
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
        config = self.config
        # outside training the embedding dropout is the identity: skip the two module calls
        embed = self.embeddings if self.training else self.embeddings.embedding
        return embed(
            extended_to_input_ids(
                decoder_input_ids,
                encoder_outputs.source_input_ids,
                config.output_vocab_size,
                config.unk_token_id,
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
        state.sentinel_ids = self.config.output_vocab_size + source_mask.long().sum(dim=1, keepdim=True) - 1
        if self.config.pointer_only:
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
        config = self.config
        vocab, eos_token_id = config.output_vocab_size, config.eos_token_id
        has_generator = not config.pointer_only
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
            never = torch.tensor(
                [config.pad_token_id, config.decoder_start_token_id], device=encoder_states.device
            )
        for t in range(n_steps):
            phase = generator_phase[:, t]
            keep = phase.unsqueeze(1)  # (B, 1): the pointer has finished
            n_generating = int(phase.sum())
            slot = state.length
            if n_generating < batch_size:  # some row still points (Eq. 1-4)
                pointer_hidden, pointer_cell = self._lstm_step(
                    self.pointer_rnn, embedded[:, t], state.pointer_hidden, state.pointer_cell
                )
                _, weights = self.pointer_attention.step(
                    pointer_hidden, encoder_states, source_mask, state.pointer_keys
                )  # Eq. (2)-(3)
                probs = torch.zeros_like(weights).scatter_add_(-1, first_positions, weights)  # Eq. (4)
                pointer_log_probs = floored_log(probs).masked_fill_(state.pointer_dead, float("-inf"))
                out[:, t, vocab:] = pointer_log_probs.masked_fill_(keep, float("-inf"))
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
                    self.generator_rnn, embedded[:, t], state.generator_hidden, state.generator_cell
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
                out[:, t, eos_token_id] = torch.where(phase, 0.0, float("-inf"))
            state.in_generator = phase
        return out, generator_phase, state

    # ------------------------------------------------------------------ loss, Eq. (13)-(14)
    def dual_loss(
        self,
        log_probs: torch.Tensor,
        labels: torch.LongTensor,
        generator_phase: torch.Tensor,
        num_items_in_batch: int | torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Eq. (13)-(14): lambda * pointer NLL + (1 - lambda) * generator NLL.

        Both sums run over their label tokens and are divided by the number of ALL label tokens
        (``num_items_in_batch`` when the Trainer passes it, so gradient accumulation matches one
        large batch). Eq. (13) divides by the number of examples instead: a constant factor (the
        mean target length) that Adam is invariant to.

        log_probs (B, T, V + S), labels (B, T) with -100 padding, generator_phase (B, T) bool.
        """
        if num_items_in_batch is None:
            num_items_in_batch = (labels != IGNORE_INDEX).sum().clamp_min(1)
        if labels.shape != log_probs.shape[:-1]:
            raise ValueError(f"labels {tuple(labels.shape)} do not match the rows {tuple(log_probs.shape)}")
        if labels.numel() and int(labels.max()) >= log_probs.shape[-1]:
            raise ValueError(f"label id {int(labels.max())} is outside the {log_probs.shape[-1]} outputs")
        # the rows are log-probabilities already: one gather over the (B, T, V + S) rows, each token weighted
        # by its decoder's lambda, instead of two cross-entropies that each re-normalise every row
        lambda_ = self.config.loss_lambda
        counted = labels != IGNORE_INDEX
        if self.config.pointer_only:
            counted = counted & ~generator_phase
        label_log_probs = log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1).float()
        weights = torch.where(generator_phase, 1.0 - lambda_, lambda_)
        total = -torch.where(counted, label_log_probs * weights, 0.0).sum()
        if isinstance(num_items_in_batch, torch.Tensor):
            num_items_in_batch = num_items_in_batch.to(total.device)
        return total / num_items_in_batch

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.LongTensor | None = None,
        encoder_outputs: RecurrentEncoderOutput | None = None,
        past_key_values: RecurrentStateCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        source_word_ids: torch.LongTensor | None = None,
        cache: RecurrentStateCache | None = None,
        **kwargs,
    ) -> ExtendedSpaceLMOutput:
        """Teacher-forced or incremental decoding.

        Args:
            input_ids: (B, S) source ids ending in [EOS] (the pointer's end sentinel), right-padded.
            attention_mask: (B, S) 1 at real tokens.
            decoder_input_ids: (B, T) extended-space ids fed to the decoders (default: ``labels``
                shifted right behind ``decoder_start_token_id``); with a non-empty cache only the
                new ids.
            encoder_outputs: a :class:`RecurrentEncoderOutput` (generate() passes it).
            past_key_values: a :class:`RecurrentStateCache` holding both decoders' state (transformers
                <= 5.23; ``cache`` is the same under its >= 5.24 name).
            labels: (B, T) extended-space targets ``[V+pos(e_1) .. V+pos(sentinel), g_1 .. g_k, EOS]``,
                -100 at padding (see :func:`hf_querygen.tasks.nl2kw.dual_decoder_labels`).
            source_word_ids: (B, S) optional word ids telling distinct OOV words apart (Eq. 4).

        Returns:
            ExtendedSpaceLMOutput with ``logits`` (B, T, V + S) normalised log-probabilities, ``loss``
            (Eq. 13) when labels are given, the cache when caching (field ``cache`` >= 5.24,
            ``past_key_values`` before), ``encoder_last_hidden_state`` (B, S, 2H).
        """
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("DualDecoderForKeywordGeneration.forward needs input_ids or encoder_outputs")
            encoder_outputs = self.encoder(input_ids, attention_mask, source_word_ids=source_word_ids)
        source_ids = encoder_outputs.source_input_ids
        source_mask = (attention_mask if attention_mask is not None else torch.ones_like(source_ids)).bool()
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("forward needs decoder_input_ids or labels")
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)

        past_key_values = pick_cache(past_key_values, cache)
        use_cache = (
            use_cache
            if use_cache is not None
            else (labels is None and getattr(self.config, "use_cache", True))
        )
        if use_cache:  # generation: step by step, carrying the state in the cache
            log_probs, generator_phase, past_key_values = self._cached_decode(
                decoder_input_ids, encoder_outputs, source_mask, past_key_values
            )
        else:  # teacher forcing (training) or generation without cache: all steps at once
            log_probs, generator_phase = self._decode_parallel(
                decoder_input_ids, encoder_outputs, source_mask
            )
        loss = None
        if labels is not None:
            loss = self.dual_loss(log_probs, labels, generator_phase, kwargs.get("num_items_in_batch"))
        return ExtendedSpaceLMOutput(
            loss=loss,
            logits=log_probs,
            **with_cache(past_key_values if use_cache else None),
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
        )

    def _cached_decode(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        source_mask: torch.Tensor,
        cache: RecurrentStateCache | None,
    ) -> tuple[torch.Tensor, torch.Tensor, RecurrentStateCache]:
        """Decode ``decoder_input_ids`` (B, T) from the state in ``cache`` (None or empty: the start) ->
        (log-probs (B, T, V + S), generator phase (B, T), the cache holding the new state)."""
        if cache is not None and cache.get_seq_length() > 0:
            state = _DecoderState.from_cache(cache)
        else:
            state = self._step_state(encoder_outputs, source_mask)
        log_probs, generator_phase, state = self._decode_steps(
            decoder_input_ids, encoder_outputs, source_mask, state
        )
        if cache is None:
            cache = RecurrentStateCache()
        state.to_cache(cache)
        cache.advance(decoder_input_ids.shape[1])
        return log_probs, generator_phase, cache

    def _generation_step(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        attention_mask: torch.Tensor,
        cache: RecurrentStateCache | None,
    ) -> tuple[torch.Tensor, RecurrentStateCache]:
        """What ``forward(..., use_cache=True)`` computes for the plain greedy loop, without the output
        object: (log-probs (B, T, V + S), cache)."""
        log_probs, _, cache = self._cached_decode(
            decoder_input_ids, encoder_outputs, attention_mask.bool(), cache
        )
        return log_probs, cache

    def prepare_decoder_input_ids_from_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        """labels (B, T) -> decoder inputs (B, T): [decoder_start, y_1 .. y_{T-1}], -100 -> [PAD]
        (:func:`hf_querygen.nn.labels.shift_labels_right`; the transformers name, which
        DataCollatorForSeq2Seq calls)."""
        return shift_labels_right(labels, self.config.decoder_start_token_id, self.config.pad_token_id)

    def prepare_inputs_for_generation(
        self,
        decoder_input_ids: torch.LongTensor,
        past_key_values: RecurrentStateCache | None = None,
        attention_mask: torch.LongTensor | None = None,
        encoder_outputs: RecurrentEncoderOutput | None = None,
        use_cache: bool | None = None,
        cache: RecurrentStateCache | None = None,
        **kwargs,
    ) -> dict:
        """Feed only the ids the cached state has not consumed yet; the cache goes back under the name the
        installed generate() uses (``cache`` >= 5.24, ``past_key_values`` before)."""
        past_key_values = pick_cache(past_key_values, cache)
        if past_key_values is not None and past_key_values.get_seq_length() > 0:
            decoder_input_ids = decoder_input_ids[:, past_key_values.get_seq_length() :]
        return {
            "decoder_input_ids": decoder_input_ids,
            CACHE_NAME: past_key_values,
            "attention_mask": attention_mask,
            "encoder_outputs": encoder_outputs,
            "use_cache": use_cache,
        }
