"""Registration of our configs, models and pipelines with the transformers Auto classes.

Runs once, when transformers' Auto classes are first imported (see :mod:`hf_querygen._lazy_registration`);
registering twice is harmless. The models come from :data:`hf_querygen.specs.MODELS` (every model package
and plugin declares a :class:`~hf_querygen.specs.ModelSpec`, whose
:meth:`~hf_querygen.specs.ModelSpec.register_auto` wires AutoConfig / AutoModel*); each pipeline module
exposes ``register_pipeline()`` and is one line in ``PIPELINES``.
"""

import importlib
from typing import Any

from .registry import Registry
from .specs import MODELS, ModelSpec, model_packages

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
    for _name, spec in MODELS.items():
        spec.register_auto()
    # (a spec's tokenizer_class is registered with it: AutoTokenizer knows our tokenizer classes by name
    # before a pipeline loads a saved model)
    for _task, module in PIPELINES.items():
        importlib.import_module(f"hf_querygen.pipelines.{module}").register_pipeline()
    # saved folders carry their own code (auto_map, custom_pipelines): hf_querygen.hub_code
    importlib.import_module("hf_querygen.hub_code").install()
    _done = True


def _register_late(_name: str, spec: ModelSpec) -> None:
    """A model registered after :func:`register_all` started (a package imported while it runs, a plugin
    imported later, the package whose own import started the registration) is wired at once:
    transformers' Auto classes are complete by then. Once the registration is done, its save hooks too
    (while it runs, ``hub_code.install`` at its end covers every model registered by then)."""
    if _done or _running:
        spec.register_auto()
    if _done:
        importlib.import_module("hf_querygen.hub_code").install_spec(spec)


MODELS.on_register(_register_late)


def __getattr__(name: str) -> Any:
    if name == "MODEL_PACKAGES":  # the old hard-coded list, now found on disk
        return tuple(package.rsplit(".", 1)[-1] for package in model_packages())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
