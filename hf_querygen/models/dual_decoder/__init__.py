"""Liu et al. (CIKM'18) dual-decoder keyword-query generator (pointer + generator decoders)."""

from .configuration_dual_decoder import LIU2018_DUAL_DECODER, DualDecoderConfig
from .modeling_dual_decoder import (
    DualDecoderForKeywordGeneration,
    DualDecoderPreTrainedModel,
)


def register() -> None:
    """Make ``AutoConfig`` / ``AutoModelForSeq2SeqLM`` resolve model_type "dual_decoder"."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    AutoConfig.register(DualDecoderConfig.model_type, DualDecoderConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(DualDecoderConfig, DualDecoderForKeywordGeneration, exist_ok=True)


__all__ = [
    "LIU2018_DUAL_DECODER",
    "DualDecoderConfig",
    "DualDecoderForKeywordGeneration",
    "DualDecoderPreTrainedModel",
    "register",
]
