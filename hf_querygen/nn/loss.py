"""Token-level negative log-likelihood shared by every model, normalised the way Trainer expects."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .labels import IGNORE_INDEX


def token_nll(
    scores: torch.Tensor, labels: torch.LongTensor, num_items_in_batch: int | torch.Tensor | None = None
) -> torch.Tensor:
    """Cross-entropy of ``labels`` (B, T) under ``scores`` (B, T, C) summed over the tokens whose label is
    not IGNORE_INDEX (-100), divided by their number, or by ``num_items_in_batch`` when Trainer passes it
    (it counts the label tokens of all gradient-accumulation micro-batches, so 2 x 8 examples give the
    loss of 16)."""
    if labels.shape != scores.shape[:-1]:
        raise ValueError(f"labels {tuple(labels.shape)} do not match the scores {tuple(scores.shape)}")
    if labels.numel() and int(labels.max()) >= scores.shape[-1]:
        raise ValueError(f"label id {int(labels.max())} is outside the {scores.shape[-1]} output classes")
    total = F.cross_entropy(
        scores.flatten(0, -2).float(), labels.flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
    )
    return _per_label_token(total, labels, num_items_in_batch)


def label_token_nll(
    label_log_probs: torch.Tensor,
    labels: torch.LongTensor,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """The NLL of :func:`token_nll` from log p(label) already read at each label: label_log_probs and labels
    of one shape (any), labels IGNORE_INDEX where no loss is taken (their log-probabilities are ignored,
    whatever they hold). For the copy models, whose training reads their mixture at the labels only."""
    if label_log_probs.shape != labels.shape:
        raise ValueError(
            f"label log-probabilities {tuple(label_log_probs.shape)} do not match labels "
            f"{tuple(labels.shape)}"
        )
    total = -torch.where(labels != IGNORE_INDEX, label_log_probs.float(), 0.0).sum()
    return _per_label_token(total, labels, num_items_in_batch)


def _per_label_token(
    total: torch.Tensor, labels: torch.LongTensor, num_items_in_batch: int | torch.Tensor | None
) -> torch.Tensor:
    if num_items_in_batch is None:
        num_items_in_batch = (labels != IGNORE_INDEX).sum()
    if isinstance(num_items_in_batch, torch.Tensor):
        num_items_in_batch = num_items_in_batch.to(total.device)
    return total / num_items_in_batch


__all__ = ["label_token_nll", "token_nll"]
