"""Joint ATS2S+SL baseline of Liu et al. (CIKM'18): attentional seq2seq + tagger on one shared encoder."""

from .configuration_joint_seq2seq_tagger import JointSeq2SeqTaggerConfig
from .modeling_joint_seq2seq_tagger import (
    JointSeq2SeqTaggerForConditionalGeneration,
    JointSeq2SeqTaggerOutput,
)


def register() -> None:
    """Make ``AutoConfig`` / ``AutoModelForSeq2SeqLM`` resolve model_type "joint_seq2seq_tagger"."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    AutoConfig.register(JointSeq2SeqTaggerConfig.model_type, JointSeq2SeqTaggerConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(
        JointSeq2SeqTaggerConfig, JointSeq2SeqTaggerForConditionalGeneration, exist_ok=True
    )


__all__ = [
    "JointSeq2SeqTaggerConfig",
    "JointSeq2SeqTaggerForConditionalGeneration",
    "JointSeq2SeqTaggerOutput",
    "register",
]
