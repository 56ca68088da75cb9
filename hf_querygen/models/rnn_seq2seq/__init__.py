"""Configurable RNN encoder-decoder (LSTM|GRU|tanh-RNN; attention none|Bahdanau|Luong global/local;
copy none|CopyNet) registered with AutoConfig and AutoModelForSeq2SeqLM."""

from .configuration_rnn_seq2seq import RNNSeq2SeqConfig
from .modeling_rnn_seq2seq import (
    RNNSeq2SeqEncoder,
    RNNSeq2SeqEncoderOutput,
    RNNSeq2SeqForConditionalGeneration,
    RNNSeq2SeqPreTrainedModel,
)


def register() -> None:
    """Make ``AutoConfig`` / ``AutoModelForSeq2SeqLM`` resolve model_type "rnn_seq2seq"."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    AutoConfig.register(RNNSeq2SeqConfig.model_type, RNNSeq2SeqConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration, exist_ok=True)


__all__ = [
    "RNNSeq2SeqConfig",
    "RNNSeq2SeqEncoder",
    "RNNSeq2SeqEncoderOutput",
    "RNNSeq2SeqForConditionalGeneration",
    "RNNSeq2SeqPreTrainedModel",
    "register",
]
