"""Attention over encoder states: Bahdanau additive, Luong global (dot / general / concat) and Luong
local-p (predictive window with Gaussian weighting, as Song et al. SIGIR'17 use).

Every module shares one call signature::

    forward(query (B, Hq) or (B, T, Hq), keys (B, S, Hk), mask (B, S) bool True=valid) -> AttentionOutput

A 3-D query scores T decoder steps at once (teacher forcing); the outputs then carry the T dim too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class AttentionOutput:
    """context: (B, [T,] Hk) weighted sum of the keys; weights: (B, [T,] S) attention distribution, 0 at
    padding; scores: (B, [T,] S) pre-softmax scores with -inf at padding (and outside a local window)."""

    context: torch.Tensor
    weights: torch.Tensor
    scores: torch.Tensor


def _as_steps(query: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(B, Hq) -> (B, 1, Hq), remembering to squeeze the step dim again."""
    if query.dim() == 2:
        return query.unsqueeze(1), True
    if query.dim() == 3:
        return query, False
    raise ValueError(f"attention query must be (B, Hq) or (B, T, Hq); got shape {tuple(query.shape)}")


def _check_keys(keys: torch.Tensor, mask: torch.Tensor, key_size: int) -> None:
    if keys.dim() != 3 or keys.shape[-1] != key_size or mask.shape != keys.shape[:2]:
        raise ValueError(
            f"attention expects keys (B, S, {key_size}) and mask (B, S); got {tuple(keys.shape)} and "
            f"{tuple(mask.shape)}"
        )


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax of ``scores`` (B, T, S) over the positions where ``mask`` (B, [T,] S) is True.

    Returns (weights, masked scores). A row without any valid position gets all-zero weights
    instead of NaN."""
    if mask.dim() == scores.dim() - 1:
        mask = mask.unsqueeze(1)
    padding = ~mask  # once for both fills (step-by-step decoders call this at every token)
    masked_scores = scores.masked_fill(padding, float("-inf"))
    weights = torch.softmax(masked_scores, dim=-1).masked_fill(padding, 0.0)
    return weights, masked_scores


def _finish(
    weights: torch.Tensor, scores: torch.Tensor, keys: torch.Tensor, squeeze: bool
) -> AttentionOutput:
    context = torch.bmm(weights, keys)  # (B, T, S) x (B, S, Hk) -> (B, T, Hk)
    if squeeze:
        return AttentionOutput(context.squeeze(1), weights.squeeze(1), scores.squeeze(1))
    return AttentionOutput(context, weights, scores)


class AdditiveAttention(nn.Module):
    """Bahdanau et al. (2015) additive attention, also Liu et al. (2018) Eq. (2)-(3) and (6)-(8):
    e_i = v^T tanh(W_h h_i + W_s s), alpha = softmax(e), c = sum_i alpha_i h_i."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.key_size = key_size
        self.key_projection = nn.Linear(key_size, attention_size, bias=False)  # W_h
        self.query_projection = nn.Linear(query_size, attention_size, bias=False)  # W_s
        self.energy = nn.Linear(attention_size, 1, bias=False)  # v

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """keys (B, S, Hk) -> W_h h_i (B, S, A): the query-independent half, computed once per sequence."""
        return self.key_projection(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        **kwargs,
    ) -> AttentionOutput:
        """query (B, [T,] Hq), keys (B, S, Hk), mask (B, S), optional ``project_keys(keys)`` (B, S, A) that a
        step-by-step decoder computes once -> AttentionOutput."""
        _check_keys(keys, mask, self.key_size)
        query, squeeze = _as_steps(query)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        # (B, 1, S, A) + (B, T, 1, A) -> (B, T, S, A) -> (B, T, S)   Eq. (3) / (8)
        hidden = torch.tanh(projected_keys.unsqueeze(1) + self.query_projection(query).unsqueeze(2))
        scores = self.energy(hidden).squeeze(-1)
        weights, scores = masked_softmax(scores, mask)  # Eq. (2) / (7)
        return _finish(weights, scores, keys, squeeze)  # Eq. (6)

    def step(
        self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor, projected_keys: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoding step without the shape checks and the step dim: query (B, Hq), keys (B, S, Hk),
        mask (B, S) bool, ``project_keys(keys)`` (B, S, A) -> (context (B, Hk), weights (B, S)); the
        same operations as :meth:`forward`, for step-by-step decoders that call it at every token."""
        hidden = torch.tanh(projected_keys + self.query_projection(query).unsqueeze(1))  # (B, S, A)
        weights, _ = masked_softmax(self.energy(hidden).squeeze(-1), mask)  # (B, S) scores and mask
        return torch.bmm(weights.unsqueeze(1), keys).squeeze(1), weights


class LuongAttention(nn.Module):
    """Luong et al. (2015) global attention with score(h_t, h_s) one of (their Eq. 8):
    dot: h_t^T h_s;  general: h_t^T W_a h_s;  concat: v_a^T tanh(W_a [h_t; h_s])."""

    SCORES = ("dot", "general", "concat")

    def __init__(
        self, query_size: int, key_size: int, score: str = "general", attention_size: int | None = None
    ):
        super().__init__()
        if score not in self.SCORES:
            raise ValueError(f"unknown Luong score {score!r}; expected one of {self.SCORES}")
        if score == "dot" and query_size != key_size:
            raise ValueError(
                f"Luong 'dot' attention needs query_size == key_size; got {query_size} and {key_size} "
                "(use score='general' to learn a projection)"
            )
        self.score = score
        self.key_size = key_size
        if score == "general":
            self.key_projection = nn.Linear(key_size, query_size, bias=False)  # W_a
        elif score == "concat":
            attention_size = attention_size or query_size
            # W_a [h_t; h_s] split into its query and key halves, so the key half is computed once per source
            self.query_projection = nn.Linear(query_size, attention_size, bias=False)
            self.key_projection = nn.Linear(key_size, attention_size, bias=False)
            self.energy = nn.Linear(attention_size, 1, bias=False)  # v_a

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """keys (B, S, Hk) -> the query-independent part of the score (W_a h_s; h_s itself for dot)."""
        return keys if self.score == "dot" else self.key_projection(keys)

    def compute_scores(
        self, query: torch.Tensor, keys: torch.Tensor, projected_keys: torch.Tensor | None = None
    ) -> torch.Tensor:
        """query (B, T, Hq), keys (B, S, Hk) -> unnormalised scores (B, T, S)."""
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        if self.score in ("dot", "general"):
            return torch.bmm(query, projected_keys.transpose(1, 2))
        hidden = torch.tanh(projected_keys.unsqueeze(1) + self.query_projection(query).unsqueeze(2))
        return self.energy(hidden).squeeze(-1)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        **kwargs,
    ) -> AttentionOutput:
        """query (B, [T,] Hq), keys (B, S, Hk), mask (B, S), optional ``project_keys(keys)`` ->
        AttentionOutput
        (Luong Eq. 7)."""
        _check_keys(keys, mask, self.key_size)
        query, squeeze = _as_steps(query)
        weights, scores = masked_softmax(self.compute_scores(query, keys, projected_keys), mask)
        return _finish(weights, scores, keys, squeeze)

    def step(
        self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor, projected_keys: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoding step without the shape checks: query (B, Hq), keys (B, S, Hk), mask (B, S) bool,
        ``project_keys(keys)`` -> (context (B, Hk), weights (B, S)); the same operations as :meth:`forward`
        (see :meth:`AdditiveAttention.step`)."""
        scores = self.compute_scores(query.unsqueeze(1), keys, projected_keys).squeeze(1)
        weights, _ = masked_softmax(scores, mask)  # (B, S) scores and mask
        return torch.bmm(weights.unsqueeze(1), keys).squeeze(1), weights


class LocalPredictiveAttention(LuongAttention):
    """Luong et al. (2015) local-p attention, the attention of Song et al. (SIGIR'17).

    Aligned position (Luong Eq. 9): p_t = (S_b - 1) * sigmoid(v_p^T tanh(W_p h_t)), where S_b is the real
    length of example b (Luong write S * sigmoid; scaling by S_b - 1 keeps p_t on a real position, so the
    window is never empty). Weights (Luong Eq. 10): a_t(s) = align(h_t, h_s) * exp(-(s - p_t)^2 / (2 sigma^2))
    with sigma = D / 2, where align is the softmax of the score over the window [p_t - D, p_t + D].
    As in the paper the Gaussian factor is not renormalised, so the weights sum to at most 1.
    """

    def __init__(
        self,
        query_size: int,
        key_size: int,
        score: str = "general",
        window: int = 2,
        attention_size: int | None = None,
    ):
        super().__init__(query_size, key_size, score=score, attention_size=attention_size)
        if window < 1:
            raise ValueError(f"local attention window D must be >= 1; got {window}")
        self.window = window
        predictor_size = attention_size or query_size
        self.position_hidden = nn.Linear(query_size, predictor_size, bias=False)  # W_p
        self.position_energy = nn.Linear(predictor_size, 1, bias=False)  # v_p

    def predict_position(self, query: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """query (B, T, Hq), mask (B, S) -> aligned source position p_t (B, T), Luong Eq. (9)."""
        last_position = (mask.sum(dim=1, keepdim=True) - 1).clamp_min(0).to(query.dtype)  # (B, 1)
        return last_position * torch.sigmoid(
            self.position_energy(torch.tanh(self.position_hidden(query)))
        ).squeeze(-1)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        **kwargs,
    ) -> AttentionOutput:
        """query (B, [T,] Hq), keys (B, S, Hk), mask (B, S) -> AttentionOutput whose weights are zero outside
        the window of each step."""
        _check_keys(keys, mask, self.key_size)
        query, squeeze = _as_steps(query)
        mask = mask.bool()
        aligned = self.predict_position(query, mask).unsqueeze(-1)  # (B, T, 1)
        positions = torch.arange(keys.shape[1], device=keys.device, dtype=query.dtype).view(1, 1, -1)
        distance = positions - aligned  # (B, T, S)
        in_window = (distance.abs() <= self.window) & mask.unsqueeze(1)
        align, scores = masked_softmax(self.compute_scores(query, keys, projected_keys), in_window)
        sigma = self.window / 2.0
        gaussian = torch.exp(-distance.pow(2) / (2.0 * sigma * sigma))
        weights = align * gaussian  # Eq. (10)
        return _finish(weights, scores, keys, squeeze)


ATTENTION_KINDS = ("bahdanau", "luong-dot", "luong-general", "luong-concat", "luong-local")


def build_attention(
    kind: str, query_size: int, key_size: int, attention_size: int | None = None, **kwargs
) -> nn.Module:
    """An attention module by name: "bahdanau", "luong-dot", "luong-general", "luong-concat" or
    "luong-local" (kwargs: ``window`` D, ``score`` for the local variant, default "general")."""
    if kind == "bahdanau":
        return AdditiveAttention(query_size, key_size, attention_size or query_size)
    if kind in ("luong-dot", "luong-general", "luong-concat"):
        return LuongAttention(
            query_size, key_size, score=kind.split("-", 1)[1], attention_size=attention_size
        )
    if kind == "luong-local":
        return LocalPredictiveAttention(
            query_size,
            key_size,
            score=kwargs.get("score", "general"),
            window=kwargs.get("window", 2),
            attention_size=attention_size,
        )
    raise ValueError(f"unknown attention kind {kind!r}; expected one of {ATTENTION_KINDS}")


__all__ = [
    "ATTENTION_KINDS",
    "AdditiveAttention",
    "AttentionOutput",
    "LocalPredictiveAttention",
    "LuongAttention",
    "build_attention",
    "masked_softmax",
]
