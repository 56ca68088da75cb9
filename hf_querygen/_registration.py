"""Registration of our configs, models, tokenizers and pipelines with the transformers Auto classes.

It runs in phases, each once the transformers module it fills is imported (the import hook of
:mod:`hf_querygen._lazy_registration` calls :func:`register_loaded`), so that a process pays only for
what it uses (``AutoConfig`` of a BERT folder never imports a model class):

* ``configs`` (``configuration_auto``): ``AutoConfig`` knows every model type (imports the config
  classes only);
* ``models`` (``modeling_auto``): the spec's Auto model class knows every config class; a model class
  given as ``"module:Class"`` (:class:`~hf_querygen.specs.ClassReference`) is registered unimported and
  imported on its first lookup (:class:`_ImportedOnLookup`);
* ``tokenizers`` (``tokenization_auto``): ``AutoTokenizer`` knows a spec's tokenizer class;
* ``pipelines`` (``transformers.pipelines``): every pipeline of :data:`PIPELINES`.

:func:`register_all` runs every phase at once (idempotent). The models come from
:data:`hf_querygen.specs.MODELS`. The layers above this one plug in by registration, never imported
here by name: a pipeline module registers its ``register_pipeline`` in :data:`PIPELINES` (the pipeline
modules are found on disk, as the model packages are), and ``hf_querygen.hub_code`` its save hooks in
:data:`CLASS_HOOKS`, run for every config, model and tokenizer class of ours once it is imported.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .registry import Registry
from .specs import MODELS, ModelSpec


def pipeline_modules() -> list[str]:
    """Every pipeline module of the library: the modules of ``hf_querygen.pipelines`` (found on disk
    without importing them; a name starting with ``_`` is a helper)."""
    folder = Path(__file__).resolve().parent / "pipelines"
    return [
        f"{__package__}.pipelines.{info.name}"
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda info: info.name)
        if not info.ispkg and not info.name.startswith("_")
    ]


#: pipeline task name -> the function that adds it to transformers' pipeline registry; each pipeline
#: module registers its own (a new pipeline is one module under hf_querygen.pipelines)
PIPELINES: Registry[Callable[[], None]] = Registry("pipeline", modules=pipeline_modules)

#: name -> ``hook(kind, cls)``, run once for every class of ours the Auto classes know (``kind``:
#: "config", "model" or "tokenizer") as soon as it is imported and registered: how ``hf_querygen.hub_code``
#: makes ``save_pretrained`` write a folder's remote code. Its module registers the hook at its import,
#: on the first lookup of this registry.
CLASS_HOOKS: Registry[Callable[[str, type], None]] = Registry("class hook", modules=("hf_querygen.hub_code",))

#: phase -> the transformers module whose import makes it due (in the order they run)
PHASES: dict[str, str] = {
    "configs": "transformers.models.auto.configuration_auto",
    "models": "transformers.models.auto.modeling_auto",
    "tokenizers": "transformers.models.auto.tokenization_auto",
    "pipelines": "transformers.pipelines",
}

#: ``started``: the phases begun (a spec, pipeline or hook registered later gets those at once: a
#: registry's first lookup from inside the import of one of its modules sees it half filled);
#: ``hooked``: class -> kind, the classes the CLASS_HOOKS ran for; ``running``: a registration is under
#: way (re-entrant calls, from imports it causes, return at once)
_state: dict[str, Any] = {"started": [], "hooked": {}, "running": False}


class _Unimported:
    """A value of an Auto model mapping standing for a spec's model class that is not imported yet."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    def __repr__(self) -> str:
        return "{}:{}".format(*self.spec.model_reference)


class _ImportedOnLookup(dict):
    """The ``_extra_content`` of a transformers Auto model mapping (the registered config -> model class
    pairs) in which a value may be :class:`_Unimported`: the model class is imported on the first lookup,
    ``AutoModelForSeq2SeqLM.from_pretrained`` of one of our folders."""

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        if isinstance(value, _Unimported):
            value = value.spec.model_class
            super().__setitem__(key, value)
        return value

    def __iter__(self) -> Any:
        # overridden so that dict(self) (the mapping's pickling) reads values through __getitem__
        return iter(list(super().keys()))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[key] for key in list(super().keys())]

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(key, self[key]) for key in list(super().keys())]


def _register_config(spec: ModelSpec) -> None:
    spec.register_config()


def _register_model(spec: ModelSpec) -> None:
    """The spec's Auto model class resolves its config class; a model class not imported yet stays so
    until looked up (where transformers' mapping is not the dict this expects: imported now)."""
    import transformers

    module, name = spec.model_reference
    mapping = getattr(getattr(transformers, spec.auto_class), "_model_mapping", None)
    content = getattr(mapping, "_extra_content", None)
    if getattr(sys.modules.get(module), name, None) is not None or not isinstance(content, dict):
        spec.register_model()
        return
    if not isinstance(content, _ImportedOnLookup):
        content = mapping._extra_content = _ImportedOnLookup(content)
    if spec.config_class not in content:
        dict.__setitem__(content, spec.config_class, _Unimported(spec))


def _register_tokenizer(spec: ModelSpec) -> None:
    spec.register_tokenizer()


#: phase -> what it does for one spec
_PER_SPEC: dict[str, Callable[[ModelSpec], None]] = {
    "configs": _register_config,
    "models": _register_model,
    "tokenizers": _register_tokenizer,
}


def _run_phase(phase: str) -> None:
    # the registry's entries first: its first lookup imports its modules, which register into it. Only
    # then is the phase begun, so that an entry registered while it runs (an import it causes, or the
    # module whose own import is under way) gets the phase at once, and no entry gets it twice
    # (transformers logs every second registration of a pipeline task)
    entries = list(MODELS.items()) if phase in _PER_SPEC else list(PIPELINES.items())
    _state["started"].append(phase)
    try:
        if phase in _PER_SPEC:
            for _name, spec in entries:
                _PER_SPEC[phase](spec)
        else:
            for _task, register_pipeline in entries:
                register_pipeline()
    except BaseException:
        _state["started"].remove(phase)  # the next call tries again
        raise


def _imported_classes(spec: ModelSpec) -> list[tuple[str, type]]:
    """The classes of ``spec`` imported by now, with their kind (the config class always is)."""
    found = [("config", spec.config_class)]
    for kind, reference in (("model", spec.model_reference), ("tokenizer", spec.tokenizer_reference)):
        cls = None if reference is None else getattr(sys.modules.get(reference[0]), reference[1], None)
        if cls is not None:
            found.append((kind, cls))
    return found


def _run_class_hooks(specs: list[ModelSpec]) -> None:
    new = [(kind, cls) for spec in specs for kind, cls in _imported_classes(spec)]
    new = [(kind, cls) for kind, cls in new if cls not in _state["hooked"]]
    if not new:
        return
    for kind, cls in new:
        _state["hooked"][cls] = kind
    for _name, hook in CLASS_HOOKS.items():
        for kind, cls in new:
            hook(kind, cls)


def _register(phases: list[str]) -> None:
    """Run ``phases`` not run yet (in their order), then the class hooks of every class imported by now."""
    if _state["running"]:
        return
    _state["running"] = True
    try:
        for phase in PHASES:
            if phase in phases and phase not in _state["started"]:
                _run_phase(phase)
        if _state["started"]:
            _run_class_hooks([spec for _name, spec in MODELS.items()])
    finally:
        _state["running"] = False


def register_loaded() -> None:
    """Run every phase whose transformers module is imported by now (and, for every class of ours imported
    since, the class hooks); the import hook calls it after each import it watches."""
    while not _state["running"]:
        due = [
            phase
            for phase, module in PHASES.items()
            if module in sys.modules and phase not in _state["started"]
        ]
        _register(due)
        if not due:  # (a phase may import the module of a later one: then run that one too)
            return


def register_all() -> None:
    """Register every model package and pipeline now, whatever transformers imported so far (idempotent;
    a re-entrant call returns at once)."""
    if _state["running"]:
        return
    for module in PHASES.values():
        importlib.import_module(module)
    _register(list(PHASES))


def _register_late(_name: str, spec: ModelSpec) -> None:
    """A model registered after the registration began (a package imported while it runs, a plugin
    imported later, the package whose own import started the registration) gets the phases run so far at
    once, and the class hooks of its imported classes."""
    for phase in list(_state["started"]):
        if phase in _PER_SPEC:
            _PER_SPEC[phase](spec)
    if _state["started"] and not _state["running"]:
        _run_class_hooks([spec])


def _pipeline_added(_task: str, register_pipeline: Callable[[], None]) -> None:
    if "pipelines" in _state["started"]:
        register_pipeline()


def _hook_added(_name: str, hook: Callable[[str, type], None]) -> None:
    for cls, kind in list(_state["hooked"].items()):
        hook(kind, cls)


MODELS.on_register(_register_late)
PIPELINES.on_register(_pipeline_added)
CLASS_HOOKS.on_register(_hook_added)
