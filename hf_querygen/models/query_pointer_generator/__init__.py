"""Query-based pointer-generator with coverage (PG of Zhang et al. CIKM'20 Table 4; RSA-style attention as a
switch), registered with AutoConfig and AutoModelForSeq2SeqLM."""

from ...specs import MODELS, ModelSpec
from .._papers import ZHANG2020_PG
from .._tiny import Q2ID_SOURCE_KEYS, q2id_row, tiny_q2id_model_inputs
from .configuration_query_pointer_generator import QueryPointerGeneratorConfig
from .modeling_query_pointer_generator import (
    QueryPointerGeneratorEncoder,
    QueryPointerGeneratorEncoderOutput,
    QueryPointerGeneratorForIntentDescription,
    QueryPointerGeneratorPreTrainedModel,
    sentence_query_overlap,
)


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
            model_class=QueryPointerGeneratorForIntentDescription,
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
#: kept for callers of the per-package ``register()`` (the spec now does it)
register = SPEC.register_auto


__all__ = [
    "QueryPointerGeneratorConfig",
    "QueryPointerGeneratorEncoder",
    "QueryPointerGeneratorEncoderOutput",
    "QueryPointerGeneratorForIntentDescription",
    "QueryPointerGeneratorPreTrainedModel",
    "register",
    "sentence_query_overlap",
]
