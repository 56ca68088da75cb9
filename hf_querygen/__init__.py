"""hf-querygen: query understanding and reformulation models for the Hugging Face stack.

Everything public is importable from here, lazily (PEP 562): ``import hf_querygen`` costs
milliseconds and imports neither torch nor transformers; a name is imported on first access.
Configs, models and pipelines are registered with the transformers Auto classes as soon as
transformers' auto classes or pipelines are imported (see :mod:`hf_querygen._lazy_registration`),
so ``import hf_querygen`` + ``AutoConfig`` / ``AutoModel*.from_pretrained`` / ``pipeline(task)`` work.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import _lazy_registration

__version__ = "0.1.0"

#: public name -> module defining it; the config and model classes of every model package (and plugin) are
#: public too, named by the package's :class:`~hf_querygen.specs.ModelSpec` (:func:`_model_export`)
_EXPORTS: dict[str, str] = {
    # corpora
    "load_corpus": "hf_querygen.corpora",
    "build_dataset_folder": "hf_querygen.corpora",
    "normalize_for_matching": "hf_querygen.text",
    # pipelines
    "QueryReformulationPipeline": "hf_querygen.pipelines.text2text",
    "KeywordQueryGenerationPipeline": "hf_querygen.pipelines.keyword_query",
    "QuerySegmentationPipeline": "hf_querygen.pipelines.segmentation",
    "IntentDescriptionPipeline": "hf_querygen.pipelines.intent_description",
    "QuestionGenerationPipeline": "hf_querygen.pipelines.question_generation",
    "load_pipeline": "hf_querygen.pipelines._task_pipeline",
    # tasks, systems, experiments
    "Task": "hf_querygen.tasks.base",
    "TaskData": "hf_querygen.tasks.base",
    "TASKS": "hf_querygen.tasks.base",
    "get_task": "hf_querygen.tasks.base",
    "NL2KWTask": "hf_querygen.tasks.nl2kw.task",
    "SegmentationTask": "hf_querygen.tasks.segmentation.task",
    "Text2TextTask": "hf_querygen.tasks.text2text.task",
    "K2QTask": "hf_querygen.tasks.k2q.task",
    "Q2IDTask": "hf_querygen.tasks.q2id.task",
    "System": "hf_querygen.systems",
    "SYSTEMS": "hf_querygen.systems",
    "get_system": "hf_querygen.systems",
    "Reproduction": "hf_querygen.experiments.runner",
    "Budget": "hf_querygen.experiments.tables",
    "REPRODUCTIONS": "hf_querygen.experiments.papers",
    "run_reproduction": "hf_querygen.experiments.runner",
    # training and presets
    "train_model": "hf_querygen.training",
    "train_preset": "hf_querygen.training",
    "load_trained": "hf_querygen.model_folder",
    "PRESETS": "hf_querygen.presets",
    "config_from_preset": "hf_querygen.presets",
    "train_word_tokenizer": "hf_querygen.tokenization",
    "register_all": "hf_querygen._registration",
    "ModelSpec": "hf_querygen.specs",
    "MODELS": "hf_querygen.specs",
    "load_plugins": "hf_querygen.plugins",
}
#: modules whose names need the Auto-class registration done first
_REGISTERING = ("hf_querygen.models.", "hf_querygen.pipelines.")


def _model_exports() -> dict[str, Any]:
    """Public name -> its :class:`~hf_querygen.specs.ModelSpec`, for every registered model (imports the
    model packages: only reached for a name that is not in :data:`_EXPORTS`)."""
    from .specs import MODELS

    return {name: spec for _, spec in MODELS.items() for name in spec.public_names()}


def __getattr__(name: str) -> Any:
    if name == "__all__":  # ``from hf_querygen import *``: the model names need the model registry
        return ["__version__", *_EXPORTS, *_model_exports()]
    module = _EXPORTS.get(name)
    if module is None:
        spec = None if name.startswith("_") else _model_exports().get(name)
        if spec is None:
            raise AttributeError(f"module 'hf_querygen' has no attribute {name!r}")
        from ._registration import register_all

        register_all()
        value = spec.public_object(name)
        globals()[name] = value
        return value
    if module.startswith(_REGISTERING):
        from ._registration import register_all

        register_all()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    # model names only once the model registry is loaded (listing them must not import torch)
    import sys

    specs = sys.modules.get("hf_querygen.specs")
    loaded = _model_exports() if specs is not None and specs.MODELS._loaded else {}
    return sorted(set(globals()) | set(_EXPORTS) | set(loaded))


_lazy_registration.install()
