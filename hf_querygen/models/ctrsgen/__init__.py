"""CtrsGen (Zhang et al., CIKM'20): query + relevant / irrelevant documents -> intent description, and its
Table 3 ablations as config settings; registered with AutoConfig and AutoModelForSeq2SeqLM."""

from .configuration_ctrsgen import CtrsGenConfig
from .modeling_ctrsgen import (
    CtrsGenDecoder,
    CtrsGenEncoder,
    CtrsGenEncoderOutput,
    CtrsGenForIntentDescription,
    CtrsGenOutput,
    CtrsGenPreTrainedModel,
)


def register() -> None:
    """Make ``AutoConfig`` / ``AutoModelForSeq2SeqLM`` resolve model_type "ctrsgen"."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    AutoConfig.register(CtrsGenConfig.model_type, CtrsGenConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(CtrsGenConfig, CtrsGenForIntentDescription, exist_ok=True)


__all__ = [
    "CtrsGenConfig",
    "CtrsGenDecoder",
    "CtrsGenEncoder",
    "CtrsGenEncoderOutput",
    "CtrsGenForIntentDescription",
    "CtrsGenOutput",
    "CtrsGenPreTrainedModel",
    "register",
]
