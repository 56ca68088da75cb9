"""Registration of our configs, models and pipelines with the transformers Auto classes.

Runs once at ``import hf_querygen`` (like SpanMarker/SetFit); registering twice is harmless.
Each model package exposes ``register()``; each pipeline module exposes ``register_pipeline()``.
Add new model packages to ``MODEL_PACKAGES`` and pipelines to ``PIPELINES``.
"""

import importlib

from .registry import Registry

#: model packages under hf_querygen.models whose ``register()`` wires AutoConfig/AutoModel*
MODEL_PACKAGES: tuple[str, ...] = (
    "rnn_seq2seq",
    "rnn_tagger",
    "dual_decoder",
    "joint_seq2seq_tagger",
    "ctrsgen",
    "query_pointer_generator",
)

#: pipeline task name -> the module under hf_querygen.pipelines whose ``register_pipeline()`` adds it to
#: transformers' pipeline registry (a new pipeline is one registration here)
PIPELINES: Registry[str] = Registry("pipeline")
PIPELINES.register("query-reformulation", "text2text")
PIPELINES.register("query-segmentation", "segmentation")
PIPELINES.register("keyword-query-generation", "keyword_query")
PIPELINES.register("intent-description", "intent_description")
PIPELINES.register("question-generation", "question_generation")

_done = False
_running = False


def register_all() -> None:
    """Register every model package and pipeline (idempotent). Re-entrant calls return at once: importing
    a model module imports transformers' auto classes, whose import hook
    (:mod:`hf_querygen._lazy_registration`) would otherwise start a second, nested registration."""
    global _done, _running
    if _done or _running:
        return
    _running = True
    try:
        _register_all()
    finally:
        _running = False


def _register_all() -> None:
    global _done
    for package in MODEL_PACKAGES:
        importlib.import_module(f"hf_querygen.models.{package}").register()
    # AutoTokenizer must know our tokenizer classes by name before a pipeline loads a saved model
    importlib.import_module("hf_querygen.tokenization").register_tokenizers()
    for _task, module in PIPELINES.items():
        importlib.import_module(f"hf_querygen.pipelines.{module}").register_pipeline()
    # saved folders carry their own code (auto_map, custom_pipelines): hf_querygen.hub_code
    importlib.import_module("hf_querygen.hub_code").install()
    _done = True
