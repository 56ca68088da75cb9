"""Weight initialisation for the RNN models, written with ``transformers.initialization`` so that
``from_pretrained`` never overwrites loaded weights (v5 skips parameters it has already loaded)."""

from __future__ import annotations

from torch import nn
from transformers import initialization as init


def init_uniform_weights(module: nn.Module, init_range: float) -> None:
    """Uniform [-init_range, init_range] weights for Linear / RNN / Embedding modules, zero biases and a
    zero padding row: the usual recipe for RNN encoder-decoders (Ding & Balog 2018 Sec. 4.1 use 0.1)."""
    if isinstance(module, nn.Linear):
        init.uniform_(module.weight, -init_range, init_range)
        if module.bias is not None:
            init.zeros_(module.bias)
    elif isinstance(module, nn.RNNBase):
        for name, param in module.named_parameters():
            if name.startswith("weight"):
                init.uniform_(param, -init_range, init_range)
            else:
                init.zeros_(param)
    elif isinstance(module, nn.Embedding):
        init.uniform_(module.weight, -init_range, init_range)
        # slicing drops the "already loaded" flag, so check it explicitly (as transformers does)
        if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
            init.zeros_(module.weight[module.padding_idx])


__all__ = ["init_uniform_weights"]
