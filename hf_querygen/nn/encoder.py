"""Recurrent building blocks: word embeddings, a (bi)directional LSTM/GRU/tanh-RNN encoder over
padded batches, run with packed sequences so padding never enters the recurrence, and the encoder output
that the RNN encoder-decoder models hand to their decoders (and ``generate()`` expands for beams)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence
from transformers.utils import ModelOutput

from .copy import first_occurrence_positions

RNN_CELLS: dict[str, type[nn.RNNBase]] = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}
#: sequences at least this long run unpacked (:meth:`RNNEncoder._run_unpacked`): below it the packed path is
#: faster (a 25-word BiGRU step: packed 9 ms, unpacked 15 ms), above it packing costs O(S^2) in backward
UNPACKED_FROM_LENGTH = 64


def check_rnn_hyper_parameters(owner: str, cell: str, dropout: float, **sizes: int) -> None:
    """Raise a ValueError naming ``owner`` when the cell is unknown, a size is below 1 or the dropout
    rate is outside [0, 1)."""
    if cell not in RNN_CELLS:
        raise ValueError(f"{owner}: cell={cell!r} is not one of {tuple(RNN_CELLS)}")
    too_small = {name: value for name, value in sizes.items() if value < 1}
    if too_small:
        raise ValueError(f"{owner}: sizes must be >= 1; got {too_small}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{owner}: dropout must be in [0, 1); got {dropout}")


def build_rnn(
    cell: str,
    input_size: int,
    hidden_size: int,
    num_layers: int = 1,
    bidirectional: bool = False,
    dropout: float = 0.0,
) -> nn.RNNBase:
    """A batch-first ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (tanh) chosen by name.

    ``dropout`` is applied between stacked layers only (torch warns when it is set on one layer, so
    it is dropped there)."""
    if cell not in RNN_CELLS:
        raise ValueError(f"unknown RNN cell {cell!r}; expected one of {sorted(RNN_CELLS)}")
    return RNN_CELLS[cell](
        input_size,
        hidden_size,
        num_layers=num_layers,
        batch_first=True,
        bidirectional=bidirectional,
        dropout=dropout if num_layers > 1 else 0.0,
    )


class WordEmbeddings(nn.Module):
    """Token embedding followed by dropout (the papers regularise the embedded input)."""

    def __init__(
        self, vocab_size: int, embedding_size: int, padding_idx: int | None = None, dropout: float = 0.0
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=padding_idx)
        self.dropout = nn.Dropout(dropout)

    @property
    def weight(self) -> nn.Parameter:
        return self.embedding.weight

    def forward(self, input_ids: torch.LongTensor) -> torch.Tensor:
        """input_ids (B, T) -> embeddings (B, T, E)."""
        if input_ids.numel() and (
            int(input_ids.min()) < 0 or int(input_ids.max()) >= self.embedding.num_embeddings
        ):
            raise ValueError(
                f"token ids must lie in [0, {self.embedding.num_embeddings}); got range "
                f"[{int(input_ids.min())}, {int(input_ids.max())}] (extended copy ids must be mapped "
                "back with "
                "hf_querygen.nn.copy.extended_to_input_ids first)"
            )
        return self.dropout(self.embedding(input_ids))


def pad_packed_outputs(packed: PackedSequence, lengths: torch.Tensor, total_length: int) -> torch.Tensor:
    """``pad_packed_sequence(packed, batch_first=True, total_length=...)[0]`` as one row gather: packed
    (sum(lengths), H) data, lengths (B,) of the original (unsorted) batch -> (B, total_length, H), zero at
    padding; the same values and gradients. torch's version copies every time step into the padded tensor
    in place, and the backward of each copy clones the whole gradient: O(S^2) per batch (a quarter of a
    copy CtrsGen step's backward, whose word states are read); an index_select's backward is one index_add."""
    data = packed.data
    device = data.device
    batch_sizes = packed.batch_sizes.to(device)
    first_rows = torch.cumsum(batch_sizes, 0) - batch_sizes  # packed row of each time step's first entry
    steps = torch.arange(total_length, device=device)
    # where each original row sits in the length-sorted batch that packing made
    sorted_position = (
        packed.unsorted_indices.to(device)
        if packed.unsorted_indices is not None
        else torch.arange(lengths.shape[0], device=device)
    )
    rows = first_rows[steps.clamp_max(batch_sizes.shape[0] - 1)].unsqueeze(0) + sorted_position.unsqueeze(1)
    valid = steps.unsqueeze(0) < lengths.to(device).unsqueeze(1)
    rows = torch.where(valid, rows, data.shape[0])  # padding reads the zero row appended below
    padded = torch.cat([data, data.new_zeros(1, *data.shape[1:])]).index_select(0, rows.flatten())
    return padded.view(*rows.shape, *data.shape[1:])


@dataclass
class RNNEncoderOutput:
    """What :class:`RNNEncoder` returns; every tensor is batch-first.

    outputs: (B, S, H_out) per-position states, zero at padded positions (None when not asked for).
    final_hidden: (B, num_layers, H_out); for a bidirectional encoder the last dim is
        [forward h_n ; backward h_1] (the source summary of Liu et al. 2018, Eq. 1).
    final_cell: same shape as ``final_hidden`` for an LSTM, else None.
    """

    outputs: torch.Tensor | None
    final_hidden: torch.Tensor
    final_cell: torch.Tensor | None = None


class RNNEncoder(nn.Module):
    """A stacked (bi)directional LSTM / GRU / tanh-RNN over a padded batch.

    H_out = hidden_size * (2 if bidirectional else 1) is exposed as ``output_size``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        cell: str = "lstm",
        bidirectional: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.cell = cell
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.num_directions = 2 if bidirectional else 1
        self.output_size = hidden_size * self.num_directions
        self.rnn = build_rnn(cell, input_size, hidden_size, num_layers, bidirectional, dropout)

    def _batch_first_summary(self, state: torch.Tensor) -> torch.Tensor:
        # torch: (layers * directions, B, H), direction fastest -> (B, layers, directions * H)
        batch_size = state.shape[1]
        state = state.view(self.num_layers, self.num_directions, batch_size, self.hidden_size)
        return state.permute(2, 0, 1, 3).reshape(batch_size, self.num_layers, self.output_size)

    def forward(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, return_outputs: bool = True
    ) -> RNNEncoderOutput:
        """inputs_embeds (B, S, E), attention_mask (B, S) with 1 at real tokens (left-aligned, i.e.
        right padding) -> :class:`RNNEncoderOutput`. ``return_outputs=False``: ``outputs`` is None (a caller
        that reads only the final states skips unpacking the per-position states)."""
        if inputs_embeds.dim() != 3 or attention_mask.shape != inputs_embeds.shape[:2]:
            raise ValueError(
                f"RNNEncoder expects inputs_embeds (B, S, E) and attention_mask (B, S); got "
                f"{tuple(inputs_embeds.shape)} and {tuple(attention_mask.shape)}"
            )
        lengths = attention_mask.long().sum(dim=1)
        if bool((lengths == 0).any()):
            empty = (lengths == 0).nonzero().flatten().tolist()
            raise ValueError(f"RNNEncoder got empty source sequences (all padding) at batch rows {empty}")
        if self.cell != "lstm" and inputs_embeds.shape[1] >= UNPACKED_FROM_LENGTH:
            outputs, hidden = self._run_unpacked(inputs_embeds, lengths)
            return RNNEncoderOutput(outputs, hidden, None)
        packed = pack_padded_sequence(inputs_embeds, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_outputs, state = self.rnn(packed)
        outputs = None
        if return_outputs:
            outputs = pad_packed_outputs(packed_outputs, lengths, inputs_embeds.shape[1])
        # with enforce_sorted=False torch returns h_n already in the original batch order
        if isinstance(state, tuple):
            hidden, cell = state
            return RNNEncoderOutput(
                outputs, self._batch_first_summary(hidden), self._batch_first_summary(cell)
            )
        return RNNEncoderOutput(outputs, self._batch_first_summary(state), None)

    def _run_unpacked(self, inputs: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The packed computation without packing, for long sequences: torch's packed CPU RNN narrows
        its input once per time step, and each narrow's backward fills a zero tensor of the whole packed
        input, i.e. O(S^2) per sequence (measured: a 400-word BiGRU step 2.5x slower than unpacked). Each
        direction runs on a right-padded batch; the backward direction reads every row reversed within its
        length, so padding never enters a real position's state. inputs (B, S, E), lengths (B,) ->
        outputs (B, S, H_out) (zero at padding), final_hidden (B, num_layers, H_out). GRU / tanh-RNN only:
        an LSTM's final cell state is not in the outputs."""
        batch, steps = inputs.shape[:2]
        positions = torch.arange(steps, device=inputs.device)
        valid = positions.unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
        # the position each row reads in reverse; padding positions stay where they are
        reverse = torch.where(valid, lengths.unsqueeze(1) - 1 - positions, positions)  # (B, S)
        last = (lengths - 1).view(batch, 1, 1)
        layer_input, finals = inputs, []
        for layer in range(self.num_layers):
            directions, layer_finals = [], []
            for direction in range(self.num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                weights = {
                    f"{name}_l0": getattr(self.rnn, f"{name}{suffix}")
                    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
                }
                source = layer_input
                if direction:
                    source = layer_input.gather(1, reverse.unsqueeze(-1).expand_as(layer_input))
                out, _ = torch.func.functional_call(
                    self._one_direction(layer_input.shape[-1]), weights, (source,)
                )
                # the state after the row's last real word (later steps read padding)
                layer_finals.append(out.gather(1, last.expand(batch, 1, out.shape[-1])).squeeze(1))
                if direction:
                    out = out.gather(1, reverse.unsqueeze(-1).expand_as(out))
                directions.append(out)
            layer_output = torch.cat(directions, dim=-1) * valid.unsqueeze(-1).to(inputs.dtype)
            finals.append(torch.cat(layer_finals, dim=-1))
            layer_input = layer_output
            if layer < self.num_layers - 1 and self.rnn.dropout and self.training:
                layer_input = nn.functional.dropout(layer_input, self.rnn.dropout)
        return layer_output, torch.stack(finals, dim=1)

    def _one_direction(self, input_size: int) -> nn.RNNBase:
        """A one-layer, one-direction RNN of this encoder's cell whose parameters ``_run_unpacked`` swaps for
        one direction's own (``torch.func.functional_call``); built once per input size, never trained."""
        cache = self.__dict__.setdefault("_one_direction_rnns", {})  # not a submodule: not in state_dict
        if input_size not in cache:
            cache[input_size] = build_rnn(self.cell, input_size, self.hidden_size).to(
                self.rnn.weight_ih_l0.device
            )
        return cache[input_size]


@dataclass
class RecurrentEncoderOutput(ModelOutput):
    """Batch-first encoder results of the RNN encoder-decoder models (generate() expands every tensor
    along dim 0 for beams).

    last_hidden_state: (B, S, H_out) encoder states, zero at padding; for a BiLSTM h_i = [fw h_i ; bw h_i].
    final_hidden: (B, num_encoder_layers, H_out) source summary [h_n fwd; h_1 bwd] per layer (Liu'18 Eq. 1);
        ``final_hidden[:, -1]`` is the top layer's.
    final_cell: (B, num_encoder_layers, H_out) for LSTM, else None.
    attention_mask: (B, S) 1 at real source tokens.
    source_input_ids: (B, S) the source token ids (copy / pointer targets).
    first_positions: (B, S) first position of each source word (:func:`first_occurrence_positions`,
        Liu'18 Eq. 4).
    """

    last_hidden_state: torch.FloatTensor | None = None
    final_hidden: torch.FloatTensor | None = None
    final_cell: torch.FloatTensor | None = None
    attention_mask: torch.LongTensor | None = None
    source_input_ids: torch.LongTensor | None = None
    first_positions: torch.LongTensor | None = None


def recurrent_encoder_output(
    encoded: RNNEncoderOutput,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor,
    source_word_ids: torch.LongTensor | None = None,
) -> RecurrentEncoderOutput:
    """Wrap what :class:`RNNEncoder` returned for ``input_ids`` (B, S) / ``attention_mask`` (B, S) into a
    :class:`RecurrentEncoderOutput`.

    ``source_word_ids`` (B, S) optionally tells distinct out-of-vocabulary words apart for copying /
    pointing (default: ``input_ids``); it decides ``first_positions``."""
    word_ids = input_ids if source_word_ids is None else source_word_ids
    if word_ids.shape != input_ids.shape:
        raise ValueError(
            f"source_word_ids {tuple(word_ids.shape)} must have the shape of input_ids "
            f"{tuple(input_ids.shape)}"
        )
    return RecurrentEncoderOutput(
        last_hidden_state=encoded.outputs,
        final_hidden=encoded.final_hidden,
        final_cell=encoded.final_cell,
        attention_mask=attention_mask,
        source_input_ids=input_ids,
        first_positions=first_occurrence_positions(word_ids, attention_mask.bool()),
    )


class RecurrentSourceEncoder(nn.Module):
    """THE source encoder of every RNN model: word embeddings + packed (bi)RNN (:class:`RNNEncoder`) ->
    :class:`RecurrentEncoderOutput` (what ``generate()`` runs once per batch and expands for beams).

    Used by the RNN encoder-decoder, the dual decoder (Liu'18 Sec. 3.2: a single-layer BiLSTM), the joint
    model (through the encoder-decoder) and the tagger. ``embed_tokens`` may be shared with a decoder
    (tied embeddings) by passing the same :class:`WordEmbeddings`.
    """

    main_input_name = "input_ids"

    def __init__(self, embed_tokens: WordEmbeddings, rnn: RNNEncoder, pad_token_id: int | None = None):
        super().__init__()
        self.pad_token_id = pad_token_id
        self.embed_tokens = embed_tokens
        self.rnn = rnn

    @property
    def output_size(self) -> int:
        """H_out: per-position state size (hidden_size x directions)."""
        return self.rnn.output_size

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        source_word_ids: torch.LongTensor | None = None,
        **kwargs,
    ) -> RecurrentEncoderOutput:
        """input_ids (B, S) right-padded; attention_mask (B, S) 1 at real tokens (default: input_ids != pad,
        or all ones without a pad id); source_word_ids (B, S) optional ids telling distinct out-of-vocabulary
        words apart for copying / pointing (default: input_ids) -> :class:`RecurrentEncoderOutput`:
        last_hidden_state (B, S, H_out), final_hidden / final_cell (B, layers, H_out), first_positions (B, S).
        """
        if input_ids is None:
            raise ValueError(f"{type(self).__name__} needs input_ids (B, S)")
        if attention_mask is None:
            attention_mask = (
                torch.ones_like(input_ids)
                if self.pad_token_id is None
                else (input_ids != self.pad_token_id).long()
            )
        encoded = self.rnn(self.embed_tokens(input_ids), attention_mask)
        return recurrent_encoder_output(encoded, input_ids, attention_mask, source_word_ids)
