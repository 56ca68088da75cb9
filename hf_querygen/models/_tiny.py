"""Tiny random inputs for the model test contract (:class:`hf_querygen.models.ModelSpec.tiny_inputs`)."""

from __future__ import annotations

import torch

from ..nn.copy import first_occurrence_positions
from ..nn.labels import IGNORE_INDEX

#: source lengths of the tiny batch: different, so that padding is exercised on every row but the first
TINY_LENGTHS = (6, 4, 2)


def tiny_source(
    vocab_size: int, seed: int, pad_token_id: int, eos_token_id: int, first_word_id: int = 4
) -> tuple[torch.LongTensor, torch.LongTensor]:
    """(input_ids (B, S), attention_mask (B, S)): random words in [first_word_id, vocab_size), each row
    closed by [EOS] (the dual decoder's pointer sentinel), right-padded, with one word repeated in row 0."""
    generator = torch.Generator().manual_seed(seed)
    batch, length = len(TINY_LENGTHS), max(TINY_LENGTHS)
    input_ids = torch.randint(first_word_id, vocab_size, (batch, length), generator=generator)
    mask = torch.zeros(batch, length, dtype=torch.long)
    for row, real in enumerate(TINY_LENGTHS):
        mask[row, :real] = 1
        input_ids[row, real - 1] = eos_token_id
    input_ids[0, 3] = input_ids[0, 1]  # a repeated source word (Liu'18 Eq. 4: one copy slot)
    return input_ids.masked_fill(mask == 0, pad_token_id), mask


def tiny_labels(
    rows: list[list[int]],
) -> torch.LongTensor:
    """Ragged label rows -> (B, T) padded with -100."""
    width = max(len(row) for row in rows)
    return torch.tensor([row + [IGNORE_INDEX] * (width - len(row)) for row in rows])


def copyable_positions(
    input_ids: torch.LongTensor, attention_mask: torch.LongTensor, output_vocab_size: int, eos_token_id: int
) -> list[list[int]]:
    """Per row, the source positions a copy / pointer label may name: real, first occurrences, not [EOS],
    holding a word outside the output vocabulary (so its mass is not folded into a vocabulary id)."""
    first = first_occurrence_positions(input_ids, attention_mask.bool())
    rows = []
    for row in range(input_ids.shape[0]):
        rows.append(
            [
                j
                for j in range(int(attention_mask[row].sum()))
                if int(first[row, j]) == j
                and int(input_ids[row, j]) != eos_token_id
                and int(input_ids[row, j]) >= output_vocab_size
            ]
        )
    return rows
