"""A ``transformers.Pipeline`` that decodes through its task's :meth:`~hf_querygen.tasks.base.Task.predict`.

The pipeline machinery (batching with ``batch_size=...``, lists or single inputs, datasets) stays
transformers'; what happens to one batch of raw inputs is the task's, so ``pipeline(...)`` returns
exactly what the experiment runner scored for the same model.
"""

from __future__ import annotations

from typing import Any, ClassVar

from transformers import Pipeline


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

    @property
    def task_object(self):
        from ..tasks.base import get_task

        return get_task(self.task_name)

    def _sanitize_parameters(self, **kwargs: Any):
        allowed = self.forward_arguments
        if allowed is not None and (unknown := sorted(set(kwargs) - set(allowed))):
            raise TypeError(
                f"{self.task_name} pipeline: unknown arguments {unknown}; accepted: {list(allowed)}"
            )
        return {}, kwargs, {}

    def preprocess(self, text: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError(
                f"{self.task_name} pipeline inputs must be strings, got {type(text).__name__}: {text!r}"
            )
        return {"texts": [text]}

    def _forward(self, model_inputs: dict[str, Any], **predict_kwargs: Any) -> dict[str, Any]:
        texts = model_inputs["texts"]
        # unbatched: ["text"]; batched by the pipeline's collator: [["text"], ["text"], ...]
        texts = [t[0] if isinstance(t, list) else t for t in texts]
        outputs = self.task_object.predict(
            self.model, self.tokenizer, texts, batch_size=len(texts), **predict_kwargs
        )
        # a 1-tuple per input: the loader's unbatching then hands postprocess one tuple, an unbatched
        # call a list of one tuple (a task output may itself be a list)
        return {"outputs": [(output,) for output in outputs]}

    def postprocess(self, model_outputs: dict[str, Any]) -> Any:
        output = model_outputs["outputs"]
        if isinstance(output, list):
            output = output[0]
        return self.format_output(output[0])

    def format_output(self, output: Any) -> Any:
        return output
