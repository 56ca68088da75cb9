"""Query-based pointer-generator with coverage (PG of Zhang et al. CIKM'20 Table 4; RSA-style attention as a
switch), registered with AutoConfig and AutoModelForSeq2SeqLM."""

from .configuration_query_pointer_generator import QueryPointerGeneratorConfig
from .modeling_query_pointer_generator import (
    QueryPointerGeneratorEncoder,
    QueryPointerGeneratorEncoderOutput,
    QueryPointerGeneratorForIntentDescription,
    QueryPointerGeneratorPreTrainedModel,
    sentence_query_overlap,
)


def register() -> None:
    """Make ``AutoConfig`` / ``AutoModelForSeq2SeqLM`` resolve model_type "query_pointer_generator"."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    AutoConfig.register(QueryPointerGeneratorConfig.model_type, QueryPointerGeneratorConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(
        QueryPointerGeneratorConfig, QueryPointerGeneratorForIntentDescription, exist_ok=True
    )


__all__ = [
    "QueryPointerGeneratorConfig",
    "QueryPointerGeneratorEncoder",
    "QueryPointerGeneratorEncoderOutput",
    "QueryPointerGeneratorForIntentDescription",
    "QueryPointerGeneratorPreTrainedModel",
    "register",
    "sentence_query_overlap",
]
