"""Registration of our configs, models and pipelines with the transformers Auto classes.

Runs once at ``import hf_querygen`` (like SpanMarker/SetFit); registering twice is harmless.
Each model package exposes ``register()``; each pipeline module exposes ``register_pipeline()``.
Add new ones to the tuples below.
"""

import importlib

#: model packages under hf_querygen.models whose ``register()`` wires AutoConfig/AutoModel*
MODEL_PACKAGES: tuple[str, ...] = (
    "rnn_seq2seq",
    "rnn_tagger",
    "dual_decoder",
    "joint_seq2seq_tagger",
    "ctrsgen",
    "query_pointer_generator",
)

#: modules under hf_querygen.pipelines whose ``register_pipeline()`` adds a pipeline task
PIPELINE_MODULES: tuple[str, ...] = (
    "text2text",
    "segmentation",
    "keyword_query",
    "intent_description",
    "question_generation",
)

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
    for module in PIPELINE_MODULES:
        importlib.import_module(f"hf_querygen.pipelines.{module}").register_pipeline()
    _done = True
