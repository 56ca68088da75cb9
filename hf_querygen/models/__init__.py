"""One folder per model: ``configuration_x.py`` + ``modeling_x.py`` (transformers layout).

:data:`MODELS` names every model of the library. Each model package registers a :class:`ModelSpec` at
import: its config and model classes, the Auto class that loads it, and a tiny configuration and input
factory. The shared model test contract (``tests/model_contract.py``: save/load, batch = single, cache =
no cache, beam >= greedy, Trainer step, resize_token_embeddings, LogitsProcessors) runs over this registry,
so a new model gets the whole contract by registering.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..registry import Registry


@dataclass(frozen=True)
class ModelSpec:
    """What the library (and its test contract) knows about one model.

    Args:
        config_class / model_class: the transformers classes.
        auto_class: name of the ``transformers`` Auto class that loads a saved folder
            ("AutoModelForSeq2SeqLM", "AutoModelForTokenClassification").
        tiny_config: ``(**overrides) -> config``: a tiny random configuration (vocab ~40, hidden 8-16).
        tiny_inputs: ``(config, seed) -> dict`` of tensors for ``forward``: ``input_ids`` (B, S) and
            ``attention_mask`` (B, S) right-padded with rows of different lengths, and ``labels`` valid for
            the model (-100 at padding).
        variants: named config overrides that the contract also runs (e.g. "copynet", "pointer_only").
        generates: whether the model decodes with ``generate()``.
        exact_accumulation: whether k accumulated micro-batches give exactly the update of one batch (False
            for a loss with a part the Trainer's ``num_items_in_batch`` does not count, e.g. the joint model's
            per-tag-token mean; the contract then checks the update to within a few percent).
        source_keys: the ``tiny_inputs`` that describe the source, passed to ``generate()`` and the encoder
            (a model with nested document inputs lists them all).
        row_inputs: ``(inputs, row) -> dict``: one example of the tiny batch alone, without padding (for
            "batch = single"; default: ``input_ids`` / ``attention_mask`` cut to the row's length).
    """

    config_class: type
    model_class: type
    auto_class: str
    tiny_config: Callable[..., Any]
    tiny_inputs: Callable[[Any, int], dict]
    variants: dict[str, dict[str, Any]] = field(default_factory=lambda: {"default": {}})
    generates: bool = True
    exact_accumulation: bool = True
    source_keys: tuple[str, ...] = ("input_ids", "attention_mask")
    row_inputs: Callable[[dict, int], dict] | None = None


#: model name -> :class:`ModelSpec`; the model packages register on import (lazily loaded here)
MODELS: Registry[ModelSpec] = Registry(
    "model",
    modules=(
        "hf_querygen.models.rnn_seq2seq",
        "hf_querygen.models.dual_decoder",
        "hf_querygen.models.joint_seq2seq_tagger",
        "hf_querygen.models.rnn_tagger",
        "hf_querygen.models.ctrsgen",
        "hf_querygen.models.query_pointer_generator",
    ),
)

__all__ = ["MODELS", "ModelSpec"]
