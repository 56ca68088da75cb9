"""(Bi)LSTM token classifier registered with AutoConfig and AutoModelForTokenClassification."""

from .configuration_rnn_tagger import RNNTaggerConfig
from .modeling_rnn_tagger import RNNTaggerForTokenClassification, RNNTaggerPreTrainedModel


def register() -> None:
    """Make ``AutoConfig`` / ``AutoModelForTokenClassification`` resolve model_type "rnn_tagger"."""
    from transformers import AutoConfig, AutoModelForTokenClassification

    AutoConfig.register(RNNTaggerConfig.model_type, RNNTaggerConfig, exist_ok=True)
    AutoModelForTokenClassification.register(RNNTaggerConfig, RNNTaggerForTokenClassification, exist_ok=True)


__all__ = ["RNNTaggerConfig", "RNNTaggerForTokenClassification", "RNNTaggerPreTrainedModel", "register"]
