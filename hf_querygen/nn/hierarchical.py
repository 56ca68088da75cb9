"""Hierarchical (word -> sentence) encoding of nested document batches.

A batch of document sets arrives as ids (B, D, S, L): B examples, D documents, S sentences per document,
L words per sentence, with a mask of the same shape (True at real words). Documents, sentences and words
are right-padded at every level, and an example may have no documents at all (a query without irrelevant
documents, Zhang et al. CIKM'20 Sec. 3.1 "N >= 0").

- :func:`compact_rows` moves the valid entries of a padded axis to its front (keeping their order), which
  turns D documents of S sentences into one "mega-document" of U = sum_m T_m sentences (Zhang'20 Sec. 4.3)
  without padding sentences in between.
- :class:`HierarchicalEncoder` runs a word-level (bi)RNN over every real sentence (the last forward and
  backward states give the sentence embedding e_u) and a sentence-level (bi)RNN over sentence sequences.
  Padding never enters a recurrence: only real sentences / non-empty sequences are packed and encoded.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .encoder import RNNEncoder


def compact_rows(
    values: torch.Tensor, mask: torch.Tensor, min_length: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Move the valid entries of axis 1 to the front, in their original order.

    values (B, N, *F), mask (B, N) bool -> (values (B, N', *F), mask (B, N')) with
    N' = max(min_length, max number of valid entries per row); the tail is zero / False.
    ``min_length`` keeps the axis non-empty so that an all-empty batch still has well-formed tensors.
    """
    if mask.shape != values.shape[:2]:
        raise ValueError(
            f"compact_rows: mask {tuple(mask.shape)} does not match values {tuple(values.shape)}"
        )
    mask = mask.bool()
    counts = mask.sum(dim=1)
    width = max(min_length, int(counts.max()) if counts.numel() else 0)
    # a stable sort on "is padding" keeps the valid entries first and in order
    order = torch.sort((~mask).to(torch.int8), dim=1, stable=True).indices[:, :width]
    if order.shape[1] < width:  # N < min_length: pad the index, the mask below hides it
        order = torch.cat([order, order.new_zeros(order.shape[0], width - order.shape[1])], dim=1)
    new_mask = torch.arange(width, device=mask.device).unsqueeze(0) < counts.unsqueeze(1)
    if values.shape[1] == 0:
        return values.new_zeros(values.shape[0], width, *values.shape[2:]), new_mask
    index = order.view(*order.shape, *([1] * (values.dim() - 2))).expand(-1, -1, *values.shape[2:])
    gathered = values.gather(1, index)
    return gathered.masked_fill(~new_mask.view(*new_mask.shape, *([1] * (values.dim() - 2))), 0), new_mask


@dataclass
class WordLevelOutput:
    """word_states: (B, D, S, L, H_out) per-word states h_{u,l}, zero at padding (None when not asked for);
    sentence_embeddings: (B, D, S, H_out) e_u = [last forward; last backward] word state, zero at padding;
    sentence_mask: (B, D, S) True at real (non-empty) sentences."""

    word_states: torch.Tensor | None
    sentence_embeddings: torch.Tensor
    sentence_mask: torch.Tensor


class HierarchicalEncoder(nn.Module):
    """Word-level and sentence-level (bi)RNN encoders (Zhang'20 Sec. 4.3-4.4; the HRED-style encoder).

    H_out = hidden_size * directions for both levels; the sentence encoder reads the word encoder's
    sentence embeddings (size H_out)."""

    def __init__(self, embedding_size: int, hidden_size: int, cell: str = "gru", bidirectional: bool = True):
        super().__init__()
        self.word_encoder = RNNEncoder(embedding_size, hidden_size, 1, cell, bidirectional)
        self.output_size = self.word_encoder.output_size
        self.sentence_encoder = RNNEncoder(self.output_size, hidden_size, 1, cell, bidirectional)

    def encode_words(
        self, embeddings: torch.Tensor, mask: torch.Tensor, word_states: bool = True
    ) -> WordLevelOutput:
        """embeddings (B, D, S, L, E), mask (B, D, S, L) -> :class:`WordLevelOutput`. ``word_states=False``
        skips building the per-word states (a model that reads only the sentence embeddings)."""
        if embeddings.dim() != 5 or mask.shape != embeddings.shape[:4]:
            raise ValueError(
                f"encode_words expects embeddings (B, D, S, L, E) and mask (B, D, S, L); got "
                f"{tuple(embeddings.shape)} and {tuple(mask.shape)}"
            )
        batch, docs, sents, words, _ = embeddings.shape
        flat_mask = mask.reshape(-1, words).bool()
        sentence_mask = flat_mask.any(dim=1)
        states = embeddings.new_zeros(batch * docs * sents, words, self.output_size) if word_states else None
        sentence_embeddings = embeddings.new_zeros(batch * docs * sents, self.output_size)
        if bool(sentence_mask.any()):
            # only real sentences go through the RNN: padded document / sentence slots cost nothing
            real = sentence_mask.nonzero().flatten()
            encoded = self.word_encoder(
                embeddings.reshape(-1, words, embeddings.shape[-1])[real], flat_mask[real], word_states
            )
            if word_states:
                states = states.index_copy(0, real, encoded.outputs)
            sentence_embeddings = sentence_embeddings.index_copy(0, real, encoded.final_hidden[:, -1])
        return WordLevelOutput(
            states.view(batch, docs, sents, words, self.output_size) if word_states else None,
            sentence_embeddings.view(batch, docs, sents, self.output_size),
            sentence_mask.view(batch, docs, sents),
        )

    def encode_sentences(self, sentence_embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """sentence_embeddings (R, U, H_out) left-aligned sequences, mask (R, U) -> sentence states h_u
        (R, U, H_out), zero at padding and for rows without any sentence."""
        mask = mask.bool()
        states = sentence_embeddings.new_zeros(*mask.shape, self.output_size)
        non_empty = mask.any(dim=1)
        if bool(non_empty.any()):
            rows = non_empty.nonzero().flatten()
            encoded = self.sentence_encoder(sentence_embeddings[rows], mask[rows])
            states = states.index_copy(0, rows, encoded.outputs)
        return states


__all__ = ["HierarchicalEncoder", "WordLevelOutput", "compact_rows"]
