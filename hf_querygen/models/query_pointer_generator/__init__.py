"""Query-based pointer-generator with coverage (PG of Zhang et al. CIKM'20 Table 4; RSA-style attention as a
switch), registered with AutoConfig and AutoModelForSeq2SeqLM."""

from typing import Any

from ...specs import MODELS, ModelSpec
from ...utils import lazy_attribute
from .._papers import ZHANG2020_PG
from .._tiny import Q2ID_SOURCE_KEYS, q2id_row, tiny_q2id_model_inputs
from .configuration_query_pointer_generator import QueryPointerGeneratorConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "QueryPointerGeneratorEncoder": "modeling_query_pointer_generator",
    "QueryPointerGeneratorEncoderOutput": "modeling_query_pointer_generator",
    "QueryPointerGeneratorForIntentDescription": "modeling_query_pointer_generator",
    "QueryPointerGeneratorPreTrainedModel": "modeling_query_pointer_generator",
    "sentence_query_overlap": "modeling_query_pointer_generator",
}


def _tiny_config(**overrides) -> QueryPointerGeneratorConfig:
    settings = dict(
        vocab_size=40, output_vocab_size=24, embedding_size=8, hidden_size=8, decoder_hidden_size=12
    )
    return QueryPointerGeneratorConfig(**{**settings, **overrides})


def _register_spec() -> ModelSpec:
    return MODELS.register(
        "query_pointer_generator",
        ModelSpec(
            config_class=QueryPointerGeneratorConfig,
            model_class=f"{__name__}.modeling_query_pointer_generator:QueryPointerGeneratorForIntentDescription",
            auto_class="AutoModelForSeq2SeqLM",
            tiny_config=_tiny_config,
            tiny_inputs=tiny_q2id_model_inputs,
            variants={
                "pg": {},
                "rsa": dict(relevance_scaled_attention=True),
                "sd2": dict(diversity_attention=True),
                "no-coverage": dict(coverage=False),
            },
            source_keys=Q2ID_SOURCE_KEYS,
            row_inputs=q2id_row,
            family="hierarchical-copy",
            paper=ZHANG2020_PG,
        ),
    )


SPEC = _register_spec()


__all__ = [
    "QueryPointerGeneratorConfig",
    "QueryPointerGeneratorEncoder",
    "QueryPointerGeneratorEncoderOutput",
    "QueryPointerGeneratorForIntentDescription",
    "QueryPointerGeneratorPreTrainedModel",
    "sentence_query_overlap",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
