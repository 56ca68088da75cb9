"""A ``transformers.Pipeline`` that decodes through its task's :meth:`~hf_querygen.tasks.base.Task.predict`.

The pipeline machinery (batching with ``batch_size=...``, lists or single inputs, datasets) stays
transformers'; what happens to one batch of raw inputs is the task's, so ``pipeline(...)`` returns
exactly what the experiment runner scored for the same model.

Input rules shared by every hf-querygen pipeline (:class:`InputGuard`):

* an empty list returns ``[]``; an empty or whitespace-only string returns ``[]`` (no keywords, no
  segments, no generated text) without running the model;
* an input longer than the model's maximum source length (``config.max_source_length``, else the
  tokenizer's ``model_max_length``, saved by ``hf-querygen train``) is cut to that many words, with one
  :class:`UserWarning` per call naming the longest length and the limit;
* a model of a kind the pipeline task cannot decode raises
  :class:`~hf_querygen.errors.InvalidInputError` naming the task, the model type and the tasks that
  model serves.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, ClassVar

from transformers import Pipeline

from .._registration import PIPELINES
from ..errors import InvalidInputError
from ..model_folder import load_trained
from ..tasks.base import TASKS, Task, get_task
from ..tokenization import register_tokenizers

#: transformers' "no limit" placeholder for model_max_length is int(1e30); anything above is no limit
_NO_LIMIT = 10**9


def model_family(model: Any) -> str:
    """The decoding family of ``model`` (as :meth:`hf_querygen.tasks.base.Task.family_of`)."""
    return Task.family_of(Task(), model.config)


def _model_labels(model: Any) -> set[str]:
    return {str(label) for label in (getattr(model.config, "id2label", None) or {}).values()}


def _serves(task: Any, family: str, labels: set[str]) -> bool:
    if family not in task.families:
        return False
    # taggers of different tasks share a family: their label sets tell them apart
    return family != "tagging" or getattr(task, "tag_labels", None) is None or labels == set(task.tag_labels)


def check_pipeline_model(
    pipeline_task: str, families: Iterable[str], model: Any, tag_labels: Iterable[str] | None = None
) -> None:
    """Raise :class:`InvalidInputError` if ``model``'s family is not one of ``families`` (for a tagger:
    or if its labels are not ``tag_labels``)."""
    families = tuple(families)
    family = model_family(model)
    labels = _model_labels(model)
    if family in families and (family != "tagging" or tag_labels is None or labels == set(tag_labels)):
        return
    serving = sorted({task.pipeline_task for _, task in TASKS.items() if _serves(task, family, labels)})
    if family == "tagging":
        family = f"tagging family, labels {sorted(labels)}"
    model_type = getattr(model.config, "model_type", type(model).__name__)
    raise InvalidInputError(
        f"the {pipeline_task!r} pipeline cannot decode a {model_type!r} model ({family}; it decodes "
        f"{list(families)}); a {model_type!r} model serves the pipeline tasks {serving or 'none'}: "
        "pass it to one of those, or train a model for this task"
    )


def max_source_length(model: Any, tokenizer: Any, default: int | None = None) -> int | None:
    """Maximum source length in words: ``config.max_source_length``, else the tokenizer's
    ``model_max_length`` (written at training time), else ``default``."""
    for value in (
        getattr(model.config, "max_source_length", None),
        getattr(tokenizer, "model_max_length", None),
    ):
        if isinstance(value, int) and 0 < value < _NO_LIMIT:
            return value
    return default


def guard_inputs(inputs: Any, limit: int | None, pipeline_task: str) -> tuple[Any, bool]:
    """(inputs with every over-long string cut to ``limit`` words, whether the call returns ``[]`` at
    once); warns once per call. Non-string items pass through (``preprocess`` names them)."""
    if isinstance(inputs, (list, tuple)) and len(inputs) == 0:
        return [], True
    single = isinstance(inputs, str)
    items = [inputs] if single else inputs
    if not isinstance(items, (list, tuple)) or limit is None:
        return inputs, False
    longest = 0
    guarded = []
    for item in items:
        if isinstance(item, str):
            # split lazily on whitespace: a 100,000-word input must not build a 100,000-token tensor
            words = item.split(maxsplit=limit)
            if len(words) > limit:
                longest = max(longest, len(item.split()))
                item = " ".join(words[:limit])
        guarded.append(item)
    if longest:
        warnings.warn(
            f"{pipeline_task} pipeline: an input of {longest} words is longer than the model's maximum "
            f"source length of {limit} words; inputs were truncated to the first {limit} words",
            UserWarning,
            stacklevel=3,
        )
    return (guarded[0] if single else guarded), False


class TaskPipeline(Pipeline):
    """Subclasses set ``task_name`` (a :data:`hf_querygen.tasks.base.TASKS` name) and may override
    :meth:`format_output` (one task output -> what the pipeline returns for one input)."""

    task_name: ClassVar[str]
    #: call-time arguments passed on to ``Task.predict`` (generation settings, decoding options)
    forward_arguments: ClassVar[tuple[str, ...] | None] = None

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        task = self.task_object
        check_pipeline_model(task.pipeline_task, task.families, self.model, task.tag_labels)

    @property
    def task_object(self):
        return get_task(self.task_name)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        task = self.task_object
        limit = max_source_length(self.model, self.tokenizer, getattr(task, "max_source_length", None))
        inputs, empty = guard_inputs(inputs, limit, task.pipeline_task)
        if empty:
            return []
        return super().__call__(inputs, *args, **kwargs)

    def _sanitize_parameters(self, **kwargs: Any):
        allowed = self.forward_arguments
        if allowed is not None and (unknown := sorted(set(kwargs) - set(allowed))):
            raise TypeError(
                f"{self.task_name} pipeline: unknown arguments {unknown}; accepted: {list(allowed)}"
            )
        # the arguments as the caller wrote them, checked once for every call (the task's one check)
        task = self.task_object
        task.decoding_arguments(self.model, kwargs, owner=f"{task.pipeline_task} pipeline")
        return {}, kwargs, {}

    def preprocess(self, text: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise InvalidInputError(
                f"{self.task_object.pipeline_task} pipeline inputs must be strings, got "
                f"{type(text).__name__}: {text!r}"
            )
        return {"texts": [text]}

    def _forward(self, model_inputs: dict[str, Any], **predict_kwargs: Any) -> dict[str, Any]:
        texts = model_inputs["texts"]
        # unbatched: ["text"]; batched by the pipeline's collator: [["text"], ["text"], ...]
        texts = [t[0] if isinstance(t, list) else t for t in texts]
        # an empty or whitespace-only text has no words to decode: it gets [] (documented), the rest
        # (texts, or a task's structured inputs such as q2id records) are decoded together
        kept = [i for i, text in enumerate(texts) if not isinstance(text, str) or text.split()]
        outputs: list[Any] = [None] * len(texts)
        if kept:
            predicted = self.task_object.predict(
                self.model, self.tokenizer, [texts[i] for i in kept], batch_size=len(kept), **predict_kwargs
            )
            self.task_object.warn_if_degenerate(predicted, self.model)
            for i, output in zip(kept, predicted, strict=True):
                outputs[i] = output
        # a 1-tuple per input: the loader's unbatching then hands postprocess one tuple, an unbatched
        # call a list of one tuple (a task output may itself be a list)
        return {"outputs": [(output,) for output in outputs]}

    def postprocess(self, model_outputs: dict[str, Any]) -> Any:
        output = model_outputs["outputs"]
        if isinstance(output, list):
            output = output[0]
        if output[0] is None:  # an empty input
            return []
        return self.format_output(output[0])

    def format_output(self, output: Any) -> Any:
        return output


def load_pipeline(task: str, model_dir: Any, **kwargs: Any) -> Pipeline:
    """``transformers.pipeline(task, ...)`` for a model folder, checked file by file first.

    ``pipeline(task, model="path")`` lets transformers open the folder, and a damaged file then fails
    deep inside it; this helper runs :func:`hf_querygen.model_folder.load_trained` (a missing, empty,
    truncated or corrupted ``model.safetensors`` / ``config.json`` / ``tokenizer.json`` raises
    :class:`~hf_querygen.errors.ModelFolderError` naming the folder and the file) and hands the loaded
    model and tokenizer to the pipeline. ``kwargs`` go to ``transformers.pipeline``.
    """
    from transformers import pipeline

    model, tokenizer, _ = load_trained(model_dir)
    return pipeline(task, model=model, tokenizer=tokenizer, **kwargs)


def register_task_pipeline(
    pipeline_class: type[TaskPipeline], task_class: type[Task], *auto_classes: str
) -> str:
    """Register a task pipeline in :data:`hf_querygen._registration.PIPELINES` under its task's
    ``pipeline_task`` (written once, on the task class) and return that name. The registered function adds
    ``pipeline_class`` to transformers' pipeline registry for models of the transformers Auto classes named
    ``auto_classes`` (``"AutoModelForSeq2SeqLM"``, ...) when the registration's pipelines phase runs."""
    name = task_class.pipeline_task

    def register_pipeline() -> None:
        import transformers
        from transformers.pipelines import PIPELINE_REGISTRY

        PIPELINE_REGISTRY.register_pipeline(
            name,
            pipeline_class=pipeline_class,
            pt_model=tuple(getattr(transformers, auto_class) for auto_class in auto_classes),
            type="text",
        )
        register_tokenizers()

    register_pipeline.__module__ = pipeline_class.__module__  # registered by (and listed under) its module
    register_pipeline.__doc__ = f"Register the ``{name}`` pipeline task with transformers."
    PIPELINES.register(name, register_pipeline)
    return name
