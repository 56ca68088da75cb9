"""CtrsGen (Zhang et al., CIKM'20): query + relevant / irrelevant documents -> intent description, and its
Table 3 ablations as config settings; registered with AutoConfig and AutoModelForSeq2SeqLM."""

from typing import Any

from ...specs import MODELS, ModelSpec
from ...utils import lazy_attribute
from .._papers import ZHANG2020
from .._tiny import Q2ID_SOURCE_KEYS, q2id_row, tiny_q2id_model_inputs
from .configuration_ctrsgen import CtrsGenConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "CtrsGenDecoder": "modeling_ctrsgen",
    "CtrsGenEncoder": "modeling_ctrsgen",
    "CtrsGenEncoderOutput": "modeling_ctrsgen",
    "CtrsGenForIntentDescription": "modeling_ctrsgen",
    "CtrsGenOutput": "modeling_ctrsgen",
    "CtrsGenPreTrainedModel": "modeling_ctrsgen",
}


def _tiny_config(**overrides) -> CtrsGenConfig:
    settings = dict(
        vocab_size=40, output_vocab_size=24, embedding_size=8, hidden_size=8, decoder_hidden_size=12
    )
    return CtrsGenConfig(**{**settings, **overrides})


def _family(config: CtrsGenConfig) -> str:
    """With the copy switch the labels keep every token id (the pointer can copy them)."""
    return "hierarchical-copy" if getattr(config, "copy", False) else "hierarchical"


def _register_spec() -> ModelSpec:
    return MODELS.register(
        "ctrsgen",
        ModelSpec(
            config_class=CtrsGenConfig,
            model_class=f"{__name__}.modeling_ctrsgen:CtrsGenForIntentDescription",
            auto_class="AutoModelForSeq2SeqLM",
            tiny_config=_tiny_config,
            tiny_inputs=tiny_q2id_model_inputs,
            variants={
                "ctrsgen": {},
                "word-context-renormalized-irrelevant-softmax": dict(
                    document_context="word",
                    contrast_combination="renormalized",
                    contrast_softmax="irrelevant",
                ),
                "separate-encoders-no-softmax-untied": dict(
                    share_document_encoder=False, contrast_softmax="none", tie_word_embeddings=False
                ),
                "-I": dict(use_irrelevant=False),
                "-I+Con": dict(use_irrelevant=False, decoder_attention="concat"),
                "-Q": dict(use_query=False),
                "-Q-I": dict(use_query=False, use_irrelevant=False),
                "IrCon": dict(irrelevant_encoding="concatenated"),
                "ReIrCon": dict(irrelevant_as_relevant=True),
                "copy": dict(copy=True),
                "copy-Q-word-context": dict(copy=True, use_query=False, document_context="word"),
            },
            source_keys=Q2ID_SOURCE_KEYS,
            row_inputs=q2id_row,
            family=_family,
            paper=ZHANG2020,
        ),
    )


SPEC = _register_spec()


__all__ = [
    "CtrsGenConfig",
    "CtrsGenDecoder",
    "CtrsGenEncoder",
    "CtrsGenEncoderOutput",
    "CtrsGenForIntentDescription",
    "CtrsGenOutput",
    "CtrsGenPreTrainedModel",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
