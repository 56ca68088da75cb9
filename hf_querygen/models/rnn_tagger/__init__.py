"""(Bi)LSTM token classifier registered with AutoConfig and AutoModelForTokenClassification."""

from typing import Any

from ...specs import MODELS, ModelSpec
from ...utils import lazy_attribute
from .._papers import LIN2017
from .._tiny import tiny_source
from .configuration_rnn_tagger import RNNTaggerConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "RNNTaggerForTokenClassification": "modeling_rnn_tagger",
    "RNNTaggerPreTrainedModel": "modeling_rnn_tagger",
}


def _tiny_config(**overrides) -> RNNTaggerConfig:
    tags = {0: "O", 1: "B", 2: "I"}
    settings = dict(
        vocab_size=40,
        embedding_size=8,
        hidden_size=8,
        id2label=tags,
        label2id={tag: i for i, tag in tags.items()},
    )
    return RNNTaggerConfig(**{**settings, **overrides})


def _tiny_inputs(config: RNNTaggerConfig, seed: int = 0) -> dict:
    import torch

    input_ids, mask = tiny_source(config.vocab_size, seed, config.pad_token_id, eos_token_id=3)
    generator = torch.Generator().manual_seed(seed + 1)
    labels = torch.randint(0, config.num_labels, input_ids.shape, generator=generator)
    return {"input_ids": input_ids, "attention_mask": mask, "labels": labels.masked_fill(mask == 0, -100)}


SPEC = MODELS.register(
    "rnn_tagger",
    ModelSpec(
        config_class=RNNTaggerConfig,
        model_class=f"{__name__}.modeling_rnn_tagger:RNNTaggerForTokenClassification",
        auto_class="AutoModelForTokenClassification",
        tiny_config=_tiny_config,
        tiny_inputs=_tiny_inputs,
        variants={"bilstm": {}, "gru-2layers": dict(cell="gru", num_layers=2)},
        generates=False,
        paper=LIN2017,
    ),
)

__all__ = ["RNNTaggerConfig", "RNNTaggerForTokenClassification", "RNNTaggerPreTrainedModel"]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
