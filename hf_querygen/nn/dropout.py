"""Dropout whose random mask is cheap on any CPU, for training transformers models there.

PyTorch draws a CPU dropout mask (``bernoulli_``) one element at a time unless MKL's vector RNG is used,
which ATen does on Intel CPUs only. On AMD CPUs the draw dominates a training step's dropout: on the shared
2-core EPYC machine a cross-attention's (16, 12, 64, 512) probabilities take ~75 ms to drop out, and the
``sdpa`` attention with dropout leaves its fused kernel for the math path (fwd + bwd 196 ms against 80 ms
without dropout). Here the mask comes from 64-bit random words cut into four 16-bit uniform integers
(:func:`dropout_keep_mask`: ~22 ms for the same tensor), in

* :class:`MaskDropout`, an ``nn.Dropout`` drawing its mask that way on the CPU;
* :func:`attention_with_mask_dropout`, transformers' attention interface ``"sdpa_mask_dropout"``: ``sdpa``
  when nothing is dropped (evaluation, ``p = 0``, a GPU), else ``softmax(q k^T s + mask)`` dropped out by the
  mask, times ``v``;
* :func:`mask_dropout_training`, a context manager that puts both into a CPU model for its training and
  takes them out again, so that a saved model or config never names them.

The drop probability is rounded to a multiple of 1/65,536 (0.1 -> 0.100006) and the kept values are scaled
by the inverse of the rounded keep probability, so the expectation is unchanged. The draws come from torch's
global generator: a seeded run is repeatable.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..errors import InvalidInputError

#: the attention interface name of :func:`attention_with_mask_dropout` (registered at import)
MASK_DROPOUT_ATTENTION = "sdpa_mask_dropout"
_LEVELS = 1 << 16  # a draw is a uniform 16-bit integer
_LANES = 4  # 16-bit draws per 64-bit random word


def dropout_keep_mask(
    shape: tuple[int, ...] | torch.Size, p: float, device: torch.device | str | None = None, dtype=None
) -> torch.Tensor:
    """The scaled keep mask of inverted dropout with drop probability ``p``: a tensor of ``shape`` holding
    ``0`` (dropped) or ``1 / (1 - p')`` (kept), ``p' = round(p * 65536) / 65536``. ``dtype`` defaults to
    torch's default float type."""
    if not 0.0 <= p <= 1.0:
        raise InvalidInputError(f"dropout probability must be in [0, 1], got {p}")
    dropped_levels = round(p * _LEVELS)
    dtype = dtype or torch.get_default_dtype()
    if dropped_levels == 0:
        return torch.ones(shape, device=device, dtype=dtype)
    if dropped_levels == _LEVELS:
        return torch.zeros(shape, device=device, dtype=dtype)
    count = math.prod(shape)
    words = torch.randint(-(2**63), 2**63 - 1, (-(-count // _LANES),), dtype=torch.int64, device=device)
    draws = words.view(torch.int16)[:count].view(shape)  # uniform over [-32768, 32767]
    scale = torch.tensor(_LEVELS / (_LEVELS - dropped_levels), dtype=dtype, device=device)
    return torch.where(draws >= dropped_levels - _LEVELS // 2, scale, scale.new_zeros(()))


class MaskDropout(nn.Dropout):
    """``nn.Dropout`` whose mask is :func:`dropout_keep_mask` on the CPU (the stock draw elsewhere)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0 or input.device.type != "cpu":
            return super().forward(input)
        return input * dropout_keep_mask(input.shape, self.p, input.device, input.dtype)


def attention_with_mask_dropout(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention interface (``sdpa``'s signature): query (B, heads, T, D), key / value
    (B, heads, S, D), ``attention_mask`` boolean (True = attend) or additive, broadcastable to (B, heads, T,
    S), or None (causal when the module is and T > 1, as ``sdpa`` reads it). Returns the output (B, T,
    heads, D) and no weights. Only a CPU training call with ``dropout > 0`` takes the path of this module;
    every other call (and any a BERT-like layer does not make: grouped keys, a position bias) is ``sdpa``."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    plain = key.shape[1] == query.shape[1] and kwargs.get("position_bias") is None
    if dropout == 0 or not plain or query.device.type != "cpu" or kwargs.get("softcap") is not None:
        return sdpa_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout=dropout,
            scaling=scaling,
            is_causal=is_causal,
            **kwargs,
        )
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(query * scale, key.transpose(-1, -2))  # (B, heads, T, S)
    if attention_mask is None:
        causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        if causal and query.shape[2] > 1:
            attention_mask = torch.ones(
                query.shape[2], key.shape[2], dtype=torch.bool, device=query.device
            ).tril(key.shape[2] - query.shape[2])
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # to an additive mask: (B, 1, T, S) is small beside the scores
            blocked = torch.finfo(scores.dtype).min
            attention_mask = torch.zeros((), dtype=scores.dtype).masked_fill(~attention_mask, blocked)
        scores = scores.add_(attention_mask[..., : key.shape[2]])
    probabilities = scores.softmax(-1)
    probabilities = probabilities * dropout_keep_mask(probabilities.shape, dropout, query.device, query.dtype)
    return torch.matmul(probabilities, value).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(MASK_DROPOUT_ATTENTION, attention_with_mask_dropout)
    ALL_MASK_ATTENTION_FUNCTIONS.register(MASK_DROPOUT_ATTENTION, sdpa_mask)


@contextlib.contextmanager
def mask_dropout_training(model: nn.Module) -> Iterator[nn.Module]:
    """While the block runs, a transformers model whose parameters are all on the CPU drops out with
    :func:`dropout_keep_mask`: every configuration of the model (itself and its sub-models') whose attention
    is ``sdpa`` reads it through :func:`attention_with_mask_dropout`, and each ``nn.Dropout`` module is
    replaced by a :class:`MaskDropout` of the same probability. Both are put back on exit, also on an
    error. Any other model is left as it is: one on a GPU, and one without ``sdpa`` attention (the
    library's RNN models, whose dropped tensors are small)."""
    configs: dict[int, Any] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if getattr(config, "_attn_implementation", None) == "sdpa":
            configs[id(config)] = config
    if not configs or any(parameter.device.type != "cpu" for parameter in model.parameters()):
        yield model
        return
    _register()
    swapped: list[tuple[nn.Module, str, nn.Module]] = []
    try:
        for config in configs.values():
            config._attn_implementation = MASK_DROPOUT_ATTENTION
        for parent in model.modules():
            for name, child in list(parent.named_children()):
                if type(child) is nn.Dropout:
                    parent._modules[name] = MaskDropout(child.p, child.inplace).train(child.training)
                    swapped.append((parent, name, child))
        yield model
    finally:
        for config in configs.values():
            config._attn_implementation = "sdpa"
        for parent, name, child in swapped:
            parent._modules[name] = child


__all__ = [
    "MASK_DROPOUT_ATTENTION",
    "MaskDropout",
    "attention_with_mask_dropout",
    "dropout_keep_mask",
    "mask_dropout_training",
]
