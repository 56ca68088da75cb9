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


# ---------------------------------------------------------------- nested (q2id) inputs
#: per example: query length, relevant documents as sentence lengths, irrelevant documents ditto (the
#: second example has none: the contract then covers an all-masked irrelevant row)
TINY_Q2ID_SHAPES = (
    (4, ((5, 2), (4,)), ((3, 6), (2, 2, 3))),
    (2, ((3,),), ()),
    (6, ((2, 7, 1), (3,), (2, 2)), ((4,),)),
)


def _pad_nested(rows: list[list[list[list[int]]]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[example][document][sentence][word] -> ids (B, D, S, L) padded with ``pad_id`` and mask; every axis
    at least 1 long (as the q2id collator pads)."""
    docs = max(1, max(len(r) for r in rows))
    sents = max([1] + [len(d) for r in rows for d in r])
    words = max([1] + [len(s) for r in rows for d in r for s in d])
    ids = torch.full((len(rows), docs, sents, words), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, row in enumerate(rows):
        for d, document in enumerate(row):
            for s, sentence in enumerate(document):
                ids[b, d, s, : len(sentence)] = torch.tensor(sentence, dtype=torch.long)
                mask[b, d, s, : len(sentence)] = 1
    return ids, mask


#: the source tensors of a q2id batch (query, relevant and irrelevant documents), as the contract reads them
Q2ID_SOURCE_KEYS = (
    "input_ids",
    "attention_mask",
    "relevant_input_ids",
    "relevant_attention_mask",
    "irrelevant_input_ids",
    "irrelevant_attention_mask",
)


def tiny_q2id_model_inputs(config, seed: int = 0) -> dict:
    """:func:`tiny_q2id_inputs` sized by a q2id model's config (CtrsGen, the query pointer-generator)."""
    return tiny_q2id_inputs(
        config.vocab_size, config.output_vocab_size, seed, config.pad_token_id, config.eos_token_id
    )


def tiny_q2id_inputs(
    vocab_size: int, output_vocab_size: int, seed: int, pad_token_id: int, eos_token_id: int
):
    """A tiny padded q2id batch: ``input_ids`` / ``attention_mask`` (B, C) (query + [EOS]), relevant and
    irrelevant ``*_input_ids`` / ``*_attention_mask`` (B, D, S, L) and ``labels`` (B, Z) (output-vocabulary
    ids, [EOS] last, -100 padding), of :data:`TINY_Q2ID_SHAPES`."""
    generator = torch.Generator().manual_seed(seed)

    def words(n: int, high: int = vocab_size) -> list[int]:
        return torch.randint(4, high, (n,), generator=generator).tolist()

    queries = [words(q) + [eos_token_id] for q, _, _ in TINY_Q2ID_SHAPES]
    relevant = [[[words(n) for n in doc] for doc in docs] for _, docs, _ in TINY_Q2ID_SHAPES]
    irrelevant = [[[words(n) for n in doc] for doc in docs] for _, _, docs in TINY_Q2ID_SHAPES]
    labels = [words(n, output_vocab_size) + [eos_token_id] for n in (4, 2, 5)]
    width = max(len(q) for q in queries)
    input_ids = torch.tensor([q + [pad_token_id] * (width - len(q)) for q in queries])
    mask = torch.tensor([[1] * len(q) + [0] * (width - len(q)) for q in queries])
    relevant_ids, relevant_mask = _pad_nested(relevant, pad_token_id)
    irrelevant_ids, irrelevant_mask = _pad_nested(irrelevant, pad_token_id)
    return {
        "input_ids": input_ids,
        "attention_mask": mask,
        "relevant_input_ids": relevant_ids,
        "relevant_attention_mask": relevant_mask,
        "irrelevant_input_ids": irrelevant_ids,
        "irrelevant_attention_mask": irrelevant_mask,
        "labels": tiny_labels(labels),
    }


def q2id_row(inputs: dict, row: int) -> dict:
    """One example of a :func:`tiny_q2id_inputs` batch alone, with every padded axis trimmed to its own
    extent (an example without irrelevant documents keeps one all-masked (1, 1, 1, 1) entry)."""
    length = int(inputs["attention_mask"][row].sum())
    alone = {
        "input_ids": inputs["input_ids"][row : row + 1, :length],
        "attention_mask": inputs["attention_mask"][row : row + 1, :length],
    }
    for prefix in ("relevant", "irrelevant"):
        ids = inputs[f"{prefix}_input_ids"][row : row + 1]
        mask = inputs[f"{prefix}_attention_mask"][row : row + 1]
        real = mask[0].bool()
        if real.any():
            d = int(real.any(-1).any(-1).nonzero().max()) + 1
            s = int(real.any(-1).any(0).nonzero().max()) + 1
            w = int(real.any(0).any(0).nonzero().max()) + 1
        else:
            d = s = w = 1
        alone[f"{prefix}_input_ids"] = ids[:, :d, :s, :w]
        alone[f"{prefix}_attention_mask"] = mask[:, :d, :s, :w]
    return alone
