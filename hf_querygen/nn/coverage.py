"""Coverage attention and the pointer-generator mixture (See et al., ACL 2017, "Get To The Point").

- :class:`CoverageAttention`: additive attention whose score also reads the coverage vector
  c^t = sum_{t' < t} a^{t'} (See Eq. 11: e_i = v^T tanh(W_h h_i + W_s s_t + w_c c_i^t + b_attn)), plus an
  optional extra query term (a query-based summariser adds W_q x^q, Hasselqvist et al. 2017).
- :func:`coverage_loss`: sum_i min(a_i^t, c_i^t) per decoder step (See Eq. 12).
- :class:`PointerGeneratorMixture`: p_gen = sigmoid(w^T [features]) (See Eq. 8) and
  P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a_i (See Eq. 9), in the space of *token ids*:
  a source word that has an id in the (input) vocabulary but lies outside the decoder's output
  vocabulary can still be produced by copying, and ``[UNK]`` source positions copy into ``[UNK]``. This is
  the simpler sibling of the per-batch extended space of :mod:`hf_querygen.nn.copy` (CopyNet), chosen
  because the generated ids then decode with the tokenizer alone.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import AttentionOutput, masked_softmax
from .labels import floored_log
from .loss import label_token_nll


class CoverageAttention(nn.Module):
    """e_i = v^T tanh(W_h h_i + W_s s + w_c c_i [+ extra]); a = softmax(e) over the valid positions."""

    def __init__(self, query_size: int, key_size: int, attention_size: int, use_coverage: bool = True):
        super().__init__()
        self.key_projection = nn.Linear(key_size, attention_size, bias=False)  # W_h
        self.query_projection = nn.Linear(query_size, attention_size, bias=True)  # W_s, b_attn
        self.use_coverage = use_coverage
        if use_coverage:
            self.coverage_projection = nn.Linear(1, attention_size, bias=False)  # w_c
        self.energy = nn.Linear(attention_size, 1, bias=False)  # v

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """keys (B, S, Hk) -> W_h h_i (B, S, A), computed once per sequence."""
        return self.key_projection(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        coverage: torch.Tensor | None = None,
        projected_keys: torch.Tensor | None = None,
        extra: torch.Tensor | None = None,
        scale: torch.Tensor | None = None,
    ) -> AttentionOutput:
        """query (B, Hq), keys (B, S, Hk), mask (B, S), coverage (B, S), extra (B, A) added to every score's
        argument, scale (B, S) >= 0 multiplied into the weights before renormalising (relevance-scaled
        attention) -> AttentionOutput with context (B, Hk), weights (B, S), scores (B, S)."""
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        # the per-step terms are summed at (B, A) before broadcasting over the S positions: one (B, S, A)
        # addition fewer per step; w_c c_i as a broadcast product, not a (B*S, 1) x (1, A) matmul
        step_term = self.query_projection(query)
        if extra is not None:
            step_term = step_term + extra
        hidden = projected_keys + step_term.unsqueeze(1)
        if self.use_coverage:
            if coverage is None:
                raise ValueError("CoverageAttention(use_coverage=True) needs the coverage vector (B, S)")
            hidden = hidden + coverage.unsqueeze(-1) * self.coverage_projection.weight.view(1, 1, -1)
        scores = self.energy(torch.tanh(hidden)).squeeze(-1)
        weights, scores = masked_softmax(scores, mask.bool())
        if scale is not None:
            weights = weights * scale
            weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
        return AttentionOutput(context, weights, scores)


def coverage_loss(weights: torch.Tensor, coverages: torch.Tensor, step_mask: torch.Tensor) -> torch.Tensor:
    """See Eq. (12): sum_i min(a_i^t, c_i^t), summed over the steps where ``step_mask`` (B, T) is True;
    weights / coverages (B, T, S). Returns the sum (the caller normalises like the token loss)."""
    per_step = torch.minimum(weights, coverages).sum(dim=-1)  # (B, T)
    return (per_step * step_mask.to(per_step.dtype)).sum()


class PointerGeneratorMixture(nn.Module):
    """p_gen and the final distribution over token ids (See Eq. 8-9)."""

    def __init__(self, feature_size: int):
        super().__init__()
        self.gate = nn.Linear(feature_size, 1)  # w_h*, w_s, w_x, b_ptr

    def forward(
        self,
        vocab_logits: torch.Tensor,
        attention: torch.Tensor,
        source_ids: torch.Tensor,
        features: torch.Tensor,
        total_size: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """vocab_logits (B, V), attention (B, S), source_ids (B, S) token ids < total_size, features (B, F)
        -> (log P over total_size ids (B, total_size), p_gen (B,))."""
        p_gen = torch.sigmoid(self.gate(features)).squeeze(-1)
        vocab_probs = torch.softmax(vocab_logits.float(), dim=-1) * p_gen.unsqueeze(-1)
        probs = vocab_probs.new_zeros(vocab_probs.shape[0], total_size)
        probs[:, : vocab_probs.shape[1]] = vocab_probs
        probs = probs.scatter_add(1, source_ids, attention.float() * (1.0 - p_gen).unsqueeze(-1))
        return floored_log(probs), p_gen

    def label_log_probs(
        self,
        vocab_logits: torch.Tensor,
        attention: torch.Tensor,
        source_ids: torch.Tensor,
        features: torch.Tensor,
        labels: torch.Tensor,
    ) -> torch.Tensor:
        """log P(labels) of :meth:`forward` without the (B, total_size) distribution: vocab_logits (N, V),
        attention (N, S), source_ids (N, S), features (N, F), labels (N,) token ids (negative = ignored,
        scored as id 0) -> (N,). For training, where only the target's probability is needed and the
        full distribution over every token id would cost most of the step."""
        p_gen = torch.sigmoid(self.gate(features)).squeeze(-1)
        labels = labels.clamp_min(0)
        vocab_size = vocab_logits.shape[-1]
        in_vocab = labels < vocab_size
        vocab_probs = torch.softmax(vocab_logits.float(), dim=-1)
        generated = vocab_probs.gather(1, labels.clamp_max(vocab_size - 1).unsqueeze(1)).squeeze(1) * in_vocab
        copied = (attention.float() * (source_ids == labels.unsqueeze(1))).sum(dim=-1)
        return floored_log(p_gen * generated + (1.0 - p_gen) * copied)

    def label_nll(
        self,
        vocab_logits: torch.Tensor,
        attention: torch.Tensor,
        source_ids: torch.Tensor,
        features: torch.Tensor,
        labels: torch.Tensor,
        num_items_in_batch: int | torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token NLL of ``labels`` (N,) (IGNORE_INDEX where no loss is taken) under the mixture, from the
        inputs of :meth:`label_log_probs`; normalised like :func:`~hf_querygen.nn.loss.token_nll` (by the
        label tokens, or ``num_items_in_batch`` that the Trainer passes)."""
        log_probs = self.label_log_probs(vocab_logits, attention, source_ids, features, labels)
        return label_token_nll(log_probs, labels, num_items_in_batch)


def copyable_labels(
    labels: torch.Tensor,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    output_vocab_size: int,
    unk_token_id: int,
) -> torch.Tensor:
    """labels (B, T) token ids (IGNORE_INDEX allowed), source_ids / source_mask (B, S) -> labels where a
    token id >= ``output_vocab_size`` that no real source position of its example holds becomes
    ``unk_token_id``: under :class:`PointerGeneratorMixture` only copying can produce such an id."""
    outside = labels >= output_vocab_size
    if not bool(outside.any()):
        return labels
    in_source = ((labels.unsqueeze(-1) == source_ids.unsqueeze(1)) & source_mask.bool().unsqueeze(1)).any(-1)
    return torch.where(outside & ~in_source, torch.full_like(labels, unk_token_id), labels)


__all__ = ["CoverageAttention", "PointerGeneratorMixture", "copyable_labels", "coverage_loss"]
