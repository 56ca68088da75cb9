"""The remote code of a saved model folder: which flat files it carries (:func:`remote_code_files`), their
``config.json`` entries (``auto_map``, ``custom_pipelines``, the family), and the hooks that make every
registered model's and the jieba tokenizer's ``save_pretrained`` write them (:func:`install`)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

from .. import __version__
from .._registration import CLASS_HOOKS, PIPELINES, register_all
from ..model_folder import CODE_HASHES_FIELD, code_hashes
from ..models import MODELS
from ..specs import FAMILY_FIELD, ModelSpec, family_of
from ..tasks.base import Task, get_task
from .bundler import BundleFile, bundle
from .source import PACKAGE, BundleError

#: file names in a saved folder
CONFIG_FILE = "configuration_{model_type}.py"
MODELING_FILE = "modeling_{model_type}.py"
PIPELINE_FILE = "pipeline_{task}.py"


# ---------------------------------------------------------------------------------------- model folders
def served_pipelines(config: Any) -> dict[str, type]:
    """Pipeline task -> pipeline class for every hf-querygen pipeline that decodes a model of ``config``."""
    from transformers.pipelines import PIPELINE_REGISTRY

    from ..pipelines._task_pipeline import _model_labels, _serves

    register_all()
    family = Task.family_of(Task(), config)
    labels = _model_labels(type("M", (), {"config": config}))
    served = {}
    for task_name, _module in PIPELINES.items():
        pipeline_class = PIPELINE_REGISTRY.supported_tasks[task_name]["impl"]
        if _serves(get_task(pipeline_class.task_name), family, labels):
            served[task_name] = pipeline_class
    return served


def _task_root(pipeline_class: type) -> list[tuple]:
    """The module-level binding of the task instance a TaskPipeline decodes through (so that the bundle
    registers it), or nothing for a pipeline that needs no task object."""
    task_name = getattr(pipeline_class, "task_name", None)
    if task_name is None:
        return []
    task = get_task(task_name)
    module = sys.modules[type(task).__module__]
    for name, value in vars(module).items():
        if value is task:
            return [(module.__name__, name)]
    raise BundleError(f"task {task_name!r} is not bound to a name in {module.__name__}")


def remote_code_files(model: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """(file name -> source, config.json additions) that make ``model``'s folder load without the library."""
    from ..pipelines._task_pipeline import _model_labels

    config = model.config
    # the code depends on the classes and on which pipelines the config's family serves, not on weights
    key = (type(model), type(config), Task.family_of(Task(), config), frozenset(_model_labels(model)))
    if key not in _CACHE:
        _CACHE[key] = _remote_code_files(model)
    sources, additions = _CACHE[key]
    return dict(sources), json.loads(json.dumps(additions))


#: remote_code_files per (model class, config class, family, labels): Trainer saves every checkpoint
_CACHE: dict[tuple, tuple[dict[str, str], dict[str, Any]]] = {}


def _remote_code_files(model: Any) -> tuple[dict[str, str], dict[str, Any]]:
    config = model.config
    model_type = config.model_type
    for cls in (type(model), type(config)):
        if not cls.__module__.startswith(PACKAGE + "."):
            raise BundleError(
                f"{cls.__module__}.{cls.__qualname__} is not a class of {PACKAGE}: nothing to bundle"
            )
    spec = next((s for _, s in MODELS.items() if s.config_class is type(config)), None)
    if spec is None:
        raise BundleError(f"model type {model_type!r} is not registered in hf_querygen.models.MODELS")
    auto_class = spec.auto_class
    config_file = CONFIG_FILE.format(model_type=model_type)
    modeling_file = MODELING_FILE.format(model_type=model_type)
    files = [BundleFile(config_file, [type(config)]), BundleFile(modeling_file, [type(model)])]
    pipelines = served_pipelines(config)
    for task_name, pipeline_class in pipelines.items():
        roots = [pipeline_class, *_task_root(pipeline_class)]
        files.append(BundleFile(PIPELINE_FILE.format(task=task_name.replace("-", "_")), roots))
    header = _header(f"model type {model_type!r}")
    sources = bundle(files, header=header)
    config_stem, modeling_stem = Path(config_file).stem, Path(modeling_file).stem
    additions = {
        # the bundled pipelines run without the model packages' ModelSpec registrations: the family
        # they decode for travels in the config (hf_querygen.specs.family_of reads it there)
        FAMILY_FIELD: family_of(config),
        "auto_map": {
            "AutoConfig": f"{config_stem}.{type(config).__name__}",
            auto_class: f"{modeling_stem}.{type(model).__name__}",
        },
        "custom_pipelines": {
            task_name: {
                "impl": f"{PIPELINE_FILE.format(task=task_name.replace('-', '_'))[:-3]}.{cls.__name__}",
                "pt": [auto_class],
                "type": "text",
            }
            for task_name, cls in pipelines.items()
        },
    }
    return sources, additions


def write_remote_code(model: Any, save_directory: str | Path) -> list[str]:
    """Write the flat code files into ``save_directory`` and add ``auto_map`` / ``custom_pipelines`` to its
    ``config.json`` (written by ``save_pretrained`` before). Returns the file names written."""
    save_directory = Path(save_directory)
    sources, additions = remote_code_files(model)
    for name, text in sources.items():
        (save_directory / name).write_text(text, encoding="utf-8")
    config_path = save_directory / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(additions)
    # what the loaders check before transformers imports a file (hf_querygen.model_folder)
    config[CODE_HASHES_FIELD] = code_hashes(sources)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return sorted(sources)


# ------------------------------------------------------------------------------------- library hooks
class _LocallyServedPipelines:
    """``config.custom_pipelines`` without the tasks this process already serves with the library's own
    pipeline classes.

    ``transformers.pipeline(task, model=folder)`` insists on ``trust_remote_code=True`` for any task listed
    in the config's ``custom_pipelines``; where ``hf_querygen`` is imported its registered pipeline serves
    the task, so the library's users keep calling ``pipeline(task, model=folder)`` as before. The stored
    value (``__dict__``, what ``to_dict`` saves) is untouched.
    """

    def __get__(self, config: Any, owner: type) -> Any:
        if config is None:
            return self
        stored = config.__dict__.get("custom_pipelines")
        if not stored:
            return {}
        from transformers.pipelines import PIPELINE_REGISTRY

        local = {
            task
            for task in stored
            if getattr(
                PIPELINE_REGISTRY.supported_tasks.get(task, {}).get("impl"), "__module__", ""
            ).startswith(PACKAGE + ".")
        }
        return {task: info for task, info in stored.items() if task not in local}

    def __set__(self, config: Any, value: Any) -> None:
        config.__dict__["custom_pipelines"] = value


def _save_pretrained_with_code(original: Any) -> Any:
    def save_pretrained(self: Any, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, save_directory, *args, **kwargs)
        if kwargs.get("is_main_process", True) and Path(save_directory, "config.json").is_file():
            try:
                write_remote_code(self, save_directory)
            except BundleError as err:  # e.g. a user's subclass that is not registered: the weights are saved
                warnings.warn(
                    f"{save_directory}: saved without its remote code (loads only where hf_querygen is "
                    f"installed): {err}",
                    UserWarning,
                    stacklevel=2,
                )
        return result

    save_pretrained.__doc__ = original.__doc__
    save_pretrained.__wrapped__ = original  # type: ignore[attr-defined]
    save_pretrained._writes_remote_code = True  # type: ignore[attr-defined]
    return save_pretrained


TOKENIZER_FILE = "tokenization_hf_querygen.py"


def write_tokenizer_code(tokenizer: Any, save_directory: str | Path) -> list[str]:
    """For a tokenizer class of the library (the jieba-segmenting one): write its flat module beside
    ``tokenizer_config.json`` and the ``auto_map`` entry that lets ``AutoTokenizer`` load it with
    ``trust_remote_code=True``. A stock tokenizer class needs nothing: returns ``[]``."""
    cls = type(tokenizer)
    if not cls.__module__.startswith(PACKAGE + "."):
        return []
    save_directory = Path(save_directory)
    (text,) = bundle(
        [BundleFile(TOKENIZER_FILE, [cls])], header=_header(f"tokenizer {cls.__name__}")
    ).values()
    (save_directory / TOKENIZER_FILE).write_text(text, encoding="utf-8")
    config_path = save_directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoTokenizer": [None, f"{Path(TOKENIZER_FILE).stem}.{cls.__name__}"]}
    config[CODE_HASHES_FIELD] = code_hashes({TOKENIZER_FILE: text})
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [TOKENIZER_FILE]


def _header(what: str) -> str:
    return (
        f"Generated by hf-querygen {__version__} from its source for {what}: the code a saved folder needs\n"
        "to load with plain transformers (trust_remote_code=True). Do not edit: save_pretrained rewrites it."
    )


def _tokenizer_save_with_code(original: Any) -> Any:
    def save_pretrained(self: Any, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, save_directory, *args, **kwargs)
        if Path(save_directory, "tokenizer_config.json").is_file():
            write_tokenizer_code(self, save_directory)
        return result

    save_pretrained.__doc__ = original.__doc__
    save_pretrained._writes_remote_code = True  # type: ignore[attr-defined]
    return save_pretrained


def install_class(kind: str, cls: type) -> None:
    """The registration's hook (:data:`~hf_querygen._registration.CLASS_HOOKS`) for one of our classes
    once imported: a model's (``kind`` "model") or tokenizer's ``save_pretrained`` also writes its
    self-contained code (:func:`write_remote_code`, :func:`write_tokenizer_code`), a config hides the custom
    pipelines this process serves itself (:class:`_LocallyServedPipelines`). Idempotent."""
    if kind == "config":
        if not isinstance(cls.__dict__.get("custom_pipelines"), _LocallyServedPipelines):
            cls.custom_pipelines = _LocallyServedPipelines()
        return
    wrap = {"model": _save_pretrained_with_code, "tokenizer": _tokenizer_save_with_code}[kind]
    if not getattr(cls.save_pretrained, "_writes_remote_code", False):
        cls.save_pretrained = wrap(cls.save_pretrained)


def install_spec(spec: ModelSpec) -> None:
    """The hooks of :func:`install_class` for every class of one model (imports its model class)."""
    install_class("config", spec.config_class)
    install_class("model", spec.model_class)
    if spec.tokenizer_reference is not None:
        install_class("tokenizer", spec.tokenizer_class)


def install() -> None:
    """The hooks of :func:`install_class` for every registered model, and the jieba tokenizer (the
    registration runs them by itself for each class once imported). Idempotent."""
    for _name, spec in MODELS.items():
        install_spec(spec)
    from ..tokenization import JiebaWordTokenizer

    install_class("tokenizer", JiebaWordTokenizer)


CLASS_HOOKS.register("remote-code", install_class)
