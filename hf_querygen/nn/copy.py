"""Copy / pointer distributions in the *extended output space* shared by every copy model.

Convention (see the project brief): decoder scores have last dim ``V + S`` where ``V`` is
``output_vocab_size`` and ``S`` the padded source length of the batch. Id ``i < V`` is output-vocabulary
word ``i``; id ``V + j`` means "copy source position j". Copy mass of a source word that is in the output
vocabulary (and is not ``[UNK]``) is folded into its vocabulary id; copy mass of any other source word goes
to the slot of its FIRST occurrence, so a word repeated in the source is one output (Liu et al. 2018,
Eq. 4). Slots that never receive mass (padding, folded words, repeats) are "dead" and get -inf scores.

Repeated words are recognised by *source word ids*: normally the input ids, but a tokenizer may pass ids
that give each distinct out-of-vocabulary word of an example its own id, so two different unknown words
(both ``[UNK]`` in ``input_ids``) stay two different copy targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .labels import PROBABILITY_FLOOR, floored_log


def first_occurrence_positions(source_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """source_ids (B, S) word ids, mask (B, S) True at real tokens -> (B, S) index of the first valid
    position holding the same id (a position's own index when it is the first; padded positions map
    to themselves)."""
    if source_ids.shape != mask.shape or source_ids.dim() != 2:
        raise ValueError(
            f"first_occurrence_positions expects source_ids and mask of the same (B, S) shape; got "
            f"{tuple(source_ids.shape)} and {tuple(mask.shape)}"
        )
    mask = mask.bool()
    same_word = (source_ids.unsqueeze(2) == source_ids.unsqueeze(1)) & mask.unsqueeze(1)  # (B, S, S)
    first = same_word.long().argmax(dim=2)  # argmax returns the first maximal index
    own_index = torch.arange(source_ids.shape[1], device=source_ids.device).expand_as(first)
    return torch.where(mask, first, own_index)


def foldable_positions(
    source_input_ids: torch.Tensor, output_vocab_size: int, unk_token_id: int
) -> torch.Tensor:
    """(B, S) True where the source token is an output-vocabulary word whose copy mass folds into its id."""
    return (source_input_ids < output_vocab_size) & (source_input_ids != unk_token_id)


def extended_target_index(
    source_input_ids: torch.Tensor, first_positions: torch.Tensor, output_vocab_size: int, unk_token_id: int
) -> torch.Tensor:
    """(B, S) the extended-space id that receives the copy mass of each source position."""
    return torch.where(
        foldable_positions(source_input_ids, output_vocab_size, unk_token_id),
        source_input_ids,
        output_vocab_size + first_positions,
    )


def live_copy_slots(
    source_input_ids: torch.Tensor,
    first_positions: torch.Tensor,
    mask: torch.Tensor,
    output_vocab_size: int,
    unk_token_id: int,
) -> torch.Tensor:
    """(B, S) True for slot ``V + j`` that can hold copy mass: a real, non-foldable first occurrence."""
    own_index = torch.arange(source_input_ids.shape[1], device=source_input_ids.device)
    return (
        mask.bool()
        & (first_positions == own_index)
        & ~foldable_positions(source_input_ids, output_vocab_size, unk_token_id)
    )


def positions_to_extended(
    probs_over_positions: torch.Tensor,
    source_input_ids: torch.Tensor,
    first_positions: torch.Tensor,
    output_vocab_size: int,
    unk_token_id: int,
    extended_size: int | None = None,
) -> torch.Tensor:
    """Scatter per-position probabilities into the extended output space (Liu et al. 2018, Eq. 4).

    probs_over_positions (B, [T,] S), source_input_ids (B, S), first_positions (B, S) ->
    (B, [T,] extended_size) with extended_size defaulting to V + S.
    """
    extended_size = extended_size or output_vocab_size + source_input_ids.shape[1]
    index = extended_target_index(source_input_ids, first_positions, output_vocab_size, unk_token_id)
    if probs_over_positions.dim() == 3:
        index = index.unsqueeze(1).expand_as(probs_over_positions)
    out = probs_over_positions.new_zeros(*probs_over_positions.shape[:-1], extended_size)
    return out.scatter_add(-1, index, probs_over_positions)


def extended_to_input_ids(
    ids: torch.Tensor, source_input_ids: torch.Tensor, output_vocab_size: int, unk_token_id: int
) -> torch.Tensor:
    """Map extended-space ids (B, T) to embeddable token ids (B, T): ``V + j`` becomes the source token at
    position j (itself [UNK] for a word outside the shared vocabulary); negative ids (label padding -100)
    become ``unk_token_id``."""
    if ids.dim() != 2 or source_input_ids.dim() != 2 or ids.shape[0] != source_input_ids.shape[0]:
        raise ValueError(
            f"extended_to_input_ids expects ids (B, T) and source_input_ids (B, S) with the same B; got "
            f"{tuple(ids.shape)} and {tuple(source_input_ids.shape)}"
        )
    source_length = source_input_ids.shape[1]
    lowest = 0
    if ids.numel():
        # one reduction for both bounds (generation calls this at every token, where no id is negative)
        bounds = torch.aminmax(ids)
        lowest, highest = int(bounds.min), int(bounds.max)
        if highest >= output_vocab_size + source_length:
            raise ValueError(
                f"extended id {highest} is beyond output_vocab_size + source length = "
                f"{output_vocab_size} + {source_length}"
            )
    positions = (ids - output_vocab_size).clamp(0, source_length - 1)
    copied = source_input_ids.gather(1, positions)
    mapped = torch.where(ids >= output_vocab_size, copied, ids)
    return mapped.masked_fill(ids < 0, unk_token_id) if lowest < 0 else mapped


def positions_matching_ids(
    ids: torch.Tensor,
    source_input_ids: torch.Tensor,
    first_positions: torch.Tensor,
    mask: torch.Tensor,
    output_vocab_size: int,
    unk_token_id: int,
) -> torch.Tensor:
    """(B, S) True at the source positions whose copy mass goes to extended id ``ids`` (B,)."""
    target = extended_target_index(source_input_ids, first_positions, output_vocab_size, unk_token_id)
    return (target == ids.unsqueeze(1)) & mask.bool()


@dataclass
class CopyNetOutput:
    """log_probs: (B, [T,] V + S) float32 log p(y) in the extended space (-inf at dead slots);
    copy_probs: (B, [T,] S) jointly normalised probability of copying each source position;
    generate_probs: (B, [T,] V) jointly normalised probability of generating each vocabulary word."""

    log_probs: torch.Tensor
    copy_probs: torch.Tensor
    generate_probs: torch.Tensor


class CopyNet(nn.Module):
    """The copy layer of CopyNet (Gu et al., ACL 2016).

    Generate-mode scores psi_g(v) = W_o s_t (Gu Eq. 7) come from the caller's output projection; copy-mode
    scores psi_c(x_j) = tanh(W_c h_j)^T s_t (Gu Eq. 8). ONE softmax over [psi_g ; psi_c] normalises both
    modes together (Gu Eq. 4-6), and the copy mass is scattered into the extended output space.
    Also computes the selective read zeta(y_{t-1}) (Gu Eq. 9) for the next decoder input.
    """

    def __init__(self, state_size: int, key_size: int, output_vocab_size: int, unk_token_id: int):
        super().__init__()
        self.output_vocab_size = output_vocab_size
        self.unk_token_id = unk_token_id
        self.copy_projection = nn.Linear(key_size, state_size, bias=False)  # W_c

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """keys (B, S, Hk) -> tanh(W_c h_j) (B, S, Hs): the source half of Gu Eq. (8), once per source."""
        return torch.tanh(self.copy_projection(keys))

    def copy_scores(
        self,
        state: torch.Tensor,
        keys: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """state (B, T, Hs), keys (B, S, Hk), optional :meth:`project_keys` (B, S, Hs) -> psi_c (B, T, S),
        Gu Eq. (8); with ``mask`` (B, S) bool, -inf at the padded positions."""
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        scores = torch.bmm(state, projected_keys.transpose(1, 2))
        return scores if mask is None else scores.masked_fill(~mask.unsqueeze(1), float("-inf"))

    def copy_targets(
        self, source_input_ids: torch.Tensor, first_positions: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-source scatter plan: (extended id receiving each position's copy mass (B, S), dead extended
        slots (B, V + S) bool); a step-by-step decoder computes it once per source."""
        vocab_size = self.output_vocab_size
        index = extended_target_index(source_input_ids, first_positions, vocab_size, self.unk_token_id)
        live = live_copy_slots(source_input_ids, first_positions, mask, vocab_size, self.unk_token_id)
        dead = torch.cat([live.new_zeros(live.shape[0], vocab_size), ~live], dim=-1)
        return index, dead

    def forward(
        self,
        generate_scores: torch.Tensor,
        state: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        source_input_ids: torch.Tensor,
        first_positions: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        targets: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> CopyNetOutput:
        """generate_scores (B, [T,] V), state (B, [T,] Hs), keys (B, S, Hk), mask (B, S),
        source_input_ids (B, S), first_positions (B, S) -> :class:`CopyNetOutput`; ``projected_keys``
        (:meth:`project_keys`) and ``targets`` (:meth:`copy_targets`) may come precomputed."""
        squeeze = generate_scores.dim() == 2
        if squeeze:
            generate_scores, state = generate_scores.unsqueeze(1), state.unsqueeze(1)
        vocab_size, source_length = generate_scores.shape[-1], keys.shape[1]
        if vocab_size != self.output_vocab_size:
            raise ValueError(
                f"generate scores have {vocab_size} columns; CopyNet expects {self.output_vocab_size}"
            )
        mask = mask.bool()
        copy_scores = self.copy_scores(state, keys, projected_keys, mask)  # -inf at padding
        # float32: the probability floor below must survive (it underflows in half precision)
        joint = torch.softmax(
            torch.cat([generate_scores, copy_scores], dim=-1).float(), dim=-1
        )  # Gu Eq. (4)-(6)
        generate_probs, copy_probs = joint.split([vocab_size, source_length], dim=-1)
        index, dead = (
            targets if targets is not None else self.copy_targets(source_input_ids, first_positions, mask)
        )
        extended = copy_probs.new_zeros(*copy_probs.shape[:-1], vocab_size + source_length)
        extended.scatter_add_(-1, index.unsqueeze(1).expand_as(copy_probs), copy_probs)
        extended[..., :vocab_size] += generate_probs
        log_probs = floored_log(extended).masked_fill_(dead.unsqueeze(1), float("-inf"))
        if squeeze:
            return CopyNetOutput(log_probs.squeeze(1), copy_probs.squeeze(1), generate_probs.squeeze(1))
        return CopyNetOutput(log_probs, copy_probs, generate_probs)

    def label_log_probs(
        self,
        generate_scores: torch.Tensor,
        state: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        labels: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
        targets: tuple[torch.Tensor, torch.Tensor] | None = None,
        source_input_ids: torch.Tensor | None = None,
        first_positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """log p(labels) under :meth:`forward`'s distribution without its (B, T, V + S) rows (their fills,
        scatter, floored log and backward were ~30% of a training step): generate_scores (B, T, V), state
        (B, T, Hs), keys (B, S, Hk), mask (B, S), labels (B, T) extended ids (negative = ignored, scored as
        id 0) -> (log-probabilities (B, T), copy probabilities (B, T, S)). The joint normaliser of Gu Eq.
        (4)-(6) is a log-sum-exp over both modes; the label's mass is its generate probability plus the copy
        probability of every position whose mass goes to it, floored as in :meth:`forward`. ``targets`` as
        :meth:`copy_targets` returns, else built from ``source_input_ids`` / ``first_positions``."""
        mask = mask.bool()
        vocab_size = self.output_vocab_size
        generate = generate_scores.float()
        copy = self.copy_scores(state, keys, projected_keys, mask).float()  # (B, T, S), -inf at padding
        # log of the joint normaliser; the shift is a constant for autograd, so the backward over the
        # (B, T, V) scores is one multiply (logsumexp's recomputes the exponentials)
        shift = torch.maximum(generate.amax(-1, keepdim=True), copy.amax(-1, keepdim=True)).detach()
        mass = (generate - shift).exp().sum(-1, keepdim=True) + (copy - shift).exp().sum(-1, keepdim=True)
        log_normaliser = mass.log() + shift  # (B, T, 1)
        copy_probs = (copy - log_normaliser).exp()  # (B, T, S), 0 at padding
        labels = labels.clamp_min(0)
        in_vocab = labels < vocab_size
        generated = (
            generate.gather(-1, labels.clamp_max(vocab_size - 1).unsqueeze(-1)) - log_normaliser
        ).exp().squeeze(-1) * in_vocab
        if targets is None:
            targets = self.copy_targets(source_input_ids, first_positions, mask)
        index = targets[0]
        copied = (copy_probs * (index.unsqueeze(1) == labels.unsqueeze(-1))).sum(-1)
        return floored_log(generated + copied), copy_probs

    def selective_read_from_scores(
        self,
        ids: torch.Tensor,
        previous_copy_scores: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        targets: torch.Tensor,
    ) -> torch.Tensor:
        """Gu Eq. (9) from the previous step's copy scores psi_c (B, S) instead of its jointly normalised
        copy probabilities: rho_j = p(x_j, copy) / K over the positions holding y_{t-1}, and the joint
        normaliser cancels in that ratio, so rho is the softmax of psi_c over those positions (all zero
        when y_{t-1} is not in the source). This lets teacher forcing run the output layer and the joint
        softmax once after the step loop. ids (B,), targets (B, S) from :meth:`copy_targets` -> (B, Hk)."""
        matching = (targets == ids.unsqueeze(1)) & mask
        rho = torch.softmax(previous_copy_scores.masked_fill(~matching, float("-inf")), dim=-1)
        rho = rho.masked_fill(~matching, 0.0)  # a row without a match is NaN before this
        return torch.bmm(rho.unsqueeze(1).to(keys.dtype), keys).squeeze(1)

    def selective_read(
        self,
        previous_ids: torch.Tensor,
        previous_copy_probs: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor,
        source_input_ids: torch.Tensor,
        first_positions: torch.Tensor,
    ) -> torch.Tensor:
        """Gu Eq. (9): zeta(y_{t-1}) = sum_j rho_j h_j, rho_j = p(x_j, copy) / K over the positions holding
        y_{t-1} (zero when y_{t-1} is not in the source). previous_ids (B,), previous_copy_probs (B, S),
        keys (B, S, Hk) -> (B, Hk)."""
        matching = positions_matching_ids(
            previous_ids, source_input_ids, first_positions, mask, self.output_vocab_size, self.unk_token_id
        )
        rho = previous_copy_probs * matching
        rho = rho / rho.sum(dim=1, keepdim=True).clamp_min(PROBABILITY_FLOOR)
        return torch.bmm(rho.unsqueeze(1).to(keys.dtype), keys).squeeze(1)


__all__ = [
    "CopyNet",
    "CopyNetOutput",
    "extended_target_index",
    "extended_to_input_ids",
    "first_occurrence_positions",
    "foldable_positions",
    "live_copy_slots",
    "positions_matching_ids",
    "positions_to_extended",
]
