"""Warm-started encoder-decoders: BERT2BERT from a pretrained backbone (Rothe, Narayan, Severyn, TACL 2020).

The model is transformers' own :class:`~transformers.EncoderDecoderModel`, built by
``EncoderDecoderModel.from_encoder_decoder_pretrained(backbone, backbone)``: the encoder is the backbone,
the decoder is the backbone again with causal self-attention, a new cross-attention block per layer and
a masked-LM head whose output projection is tied to the decoder's word embeddings (its transform and bias
start new). Saved folders are plain ``encoder-decoder`` checkpoints: ``AutoModelForSeq2SeqLM`` loads them
without remote code, with the backbone's own tokenizer saved beside them.

Shapes: ``input_ids`` / ``attention_mask`` (B, S) are the backbone's word pieces ``[CLS] w_1 .. w_n
[SEP]``; ``labels`` (B, T) are the target's pieces without ``[CLS]`` and closed by ``[SEP]`` (-100 at
padding); the decoder reads ``[CLS] y_1 .. y_{T-1}`` (the labels shifted right, ``decoder_start_token_id``
= ``[CLS]``) and ``logits`` are (B, T, V) over the backbone's vocabulary. The loss is the mean token
cross-entropy, Eq. (1) of Rothe et al. (maximum likelihood of the target given the source).

The decoder is not tied to the encoder (Rothe et al.'s BERT2BERT, not BERTShare): in transformers 5.24
``from_encoder_decoder_pretrained(..., tie_encoder_decoder=True)`` shares no parameter (checked: every
parameter keeps its own storage), so no switch is offered that would do nothing.

The same warm start builds the BERT2BERT with a pointer over the source pieces
(:class:`~hf_querygen.models.bert2bert_pointer.Bert2BertPointerModel`, model type
:data:`POINTER_MODEL_TYPE`): the encoder and decoder come from the backbone in the same way, the pointer's
two layers start new.

A task marks the family of such a config (``hf_querygen_family``, read by
:func:`hf_querygen.specs.family_of`) and what to warm-start it from (:data:`WARM_START_FIELD`), so that
training builds the model from the backbone's weights (:func:`warm_start_model`) instead of at random.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..pretrained import DEFAULT_BACKBONE, resolve_backbone
from ..specs import FAMILY_FIELD, MODELS

if TYPE_CHECKING:
    from transformers import EncoderDecoderConfig, EncoderDecoderModel, PreTrainedTokenizerFast

#: the model family the tasks encode for and decode from (word pieces of the backbone's tokenizer)
WARM_START_FAMILY = "bert2bert"
#: the ``model_type`` of a warm-start preset: transformers' encoder-decoder
WARM_START_MODEL_TYPE = "encoder-decoder"
#: the ``model_type`` of a warm-start preset with a pointer over the source pieces: the package
#: hf_querygen.models.bert2bert_pointer registers it (named here, so that presets import no model package)
POINTER_MODEL_TYPE = "bert2bert_pointer"
#: every warm-start model type: transformers' encoder-decoder, and ours built on it (config and model classes
#: from their registered spec)
WARM_START_MODEL_TYPES = (WARM_START_MODEL_TYPE, POINTER_MODEL_TYPE)
#: config field recording what the weights were warm-started from: ``{"backbone", "revision"}``
WARM_START_FIELD = "hf_querygen_warm_start"
#: the fields a warm-start preset may hold besides ``model_type`` (the architecture is the backbone's; any
#: other field would be a silently ignored config attribute)
PRESET_FIELDS = ("backbone", "revision")


def is_warm_start_preset(preset: dict[str, Any]) -> bool:
    """Whether a preset's config kwargs describe a warm-started encoder-decoder."""
    return preset.get("model_type") in WARM_START_MODEL_TYPES


def backbone_tokenizer(backbone: str | os.PathLike = DEFAULT_BACKBONE) -> PreTrainedTokenizerFast:
    """The backbone's own tokenizer (its ``tokenizer.json``), resolved by
    :func:`~hf_querygen.pretrained.resolve_backbone` (offline MiniLM, a folder or the Hub cache)."""
    from transformers import AutoTokenizer

    folder = resolve_backbone(backbone).path
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    for name in ("cls_token_id", "sep_token_id", "pad_token_id"):
        if getattr(tokenizer, name, None) is None:
            raise InvalidInputError(
                f"backbone {backbone!r}: its tokenizer has no {name.removesuffix('_id')} token; a BERT2BERT "
                "warm start needs [CLS] (decoder start), [SEP] (end) and [PAD]"
            )
    return tokenizer


def bert2bert_config(
    tokenizer: PreTrainedTokenizerFast,
    backbone: str | os.PathLike = DEFAULT_BACKBONE,
    revision: str | None = None,
    model_type: str = WARM_START_MODEL_TYPE,
    **overrides: Any,
) -> EncoderDecoderConfig:
    """The :class:`~transformers.EncoderDecoderConfig` of a BERT2BERT from ``backbone``: the backbone's
    config as encoder, the same as decoder (``is_decoder``, ``add_cross_attention``), special ids from
    ``tokenizer`` ([CLS] starts the decoder, [SEP] ends it), the family and the warm-start source recorded.
    ``model_type`` :data:`POINTER_MODEL_TYPE` gives the pointer's config (the same fields). Any other field
    (``overrides``) is refused: the architecture is the backbone's."""
    from transformers import AutoConfig, EncoderDecoderConfig

    if model_type not in WARM_START_MODEL_TYPES:
        raise InvalidInputError(
            f"warm-start model type {model_type!r} is not one of {list(WARM_START_MODEL_TYPES)}"
        )

    if overrides:
        raise InvalidInputError(
            f"a warm-start config takes only {list(PRESET_FIELDS)}, got {sorted(overrides)}: the "
            "architecture is the backbone's"
        )
    resolved = resolve_backbone(backbone, revision)
    encoder = AutoConfig.from_pretrained(str(resolved.path))
    if getattr(encoder, "is_encoder_decoder", False):
        raise InvalidInputError(
            f"backbone {backbone!r} is an encoder-decoder ({encoder.model_type}); BERT2BERT warm-starts "
            "from an encoder (BERT, RoBERTa, MiniLM)"
        )
    decoder = AutoConfig.from_pretrained(str(resolved.path), is_decoder=True, add_cross_attention=True)
    if len(tokenizer) > encoder.vocab_size:
        raise InvalidInputError(
            f"tokenizer has {len(tokenizer)} tokens but backbone {backbone!r} embeds {encoder.vocab_size}: "
            "use the backbone's own tokenizer (backbone_tokenizer)"
        )
    config_class = (
        EncoderDecoderConfig if model_type == WARM_START_MODEL_TYPE else MODELS.get(model_type).config_class
    )
    config = config_class.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id = tokenizer.cls_token_id
    config.eos_token_id = tokenizer.sep_token_id
    config.pad_token_id = tokenizer.pad_token_id
    config.vocab_size = encoder.vocab_size
    setattr(config, FAMILY_FIELD, WARM_START_FAMILY)
    setattr(config, WARM_START_FIELD, {"backbone": resolved.model_id, "revision": resolved.revision})
    return config


def warm_start_model(config: EncoderDecoderConfig) -> EncoderDecoderModel:
    """The BERT2BERT of ``config`` with the encoder and decoder weights of its backbone
    (:data:`WARM_START_FIELD`); cross-attention and the LM head's transform and bias start new (and a
    pointer config's pointer: the model class its package registered, built on the warm-started halves)."""
    import transformers
    from transformers import EncoderDecoderModel

    source = getattr(config, WARM_START_FIELD, None)
    if not isinstance(source, dict) or "backbone" not in source:
        raise InvalidInputError(f"config has no {WARM_START_FIELD} field: not a warm-start config")
    folder = str(resolve_backbone(source["backbone"], source.get("revision")).path)
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the load report lists the new cross-attention weights
    try:
        model = EncoderDecoderModel.from_encoder_decoder_pretrained(folder, folder)
    finally:
        transformers.logging.set_verbosity(verbosity)
    if config.model_type != WARM_START_MODEL_TYPE:
        spec = MODELS.get(config.model_type)
        halves = spec.config_class.from_encoder_decoder_configs(model.encoder.config, model.decoder.config)
        model = spec.model_class(config=halves, encoder=model.encoder, decoder=model.decoder)
    for name in ("decoder_start_token_id", "eos_token_id", "pad_token_id", "vocab_size"):
        setattr(model.config, name, getattr(config, name))
    for name in (FAMILY_FIELD, WARM_START_FIELD):
        setattr(model.config, name, getattr(config, name))
    generation = model.generation_config
    for name in ("decoder_start_token_id", "eos_token_id", "pad_token_id"):
        setattr(generation, name, getattr(config, name))
    generation.bos_token_id = None  # BERT has none; [CLS] starts the decoder
    return model


__all__ = [
    "POINTER_MODEL_TYPE",
    "PRESET_FIELDS",
    "WARM_START_MODEL_TYPES",
    "WARM_START_FAMILY",
    "WARM_START_FIELD",
    "WARM_START_MODEL_TYPE",
    "backbone_tokenizer",
    "bert2bert_config",
    "is_warm_start_preset",
    "warm_start_model",
]
