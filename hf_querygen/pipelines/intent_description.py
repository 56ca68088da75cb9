"""``pipeline("intent-description")``: a query plus its relevant documents (and optionally irrelevant ones)
in, a natural-language intent description out (Zhang et al. CIKM'20's Q2ID task, decoded by CtrsGen or
the query pointer-generator baselines).

    >>> describe = pipeline("intent-description", model="path/to/trained-ctrsgen")
    >>> describe({"query": "amazon rain forest",
    ...           "relevant_documents": ["Eight nations of the Amazon basin ... . At the first summit ..."],
    ...           "irrelevant_documents": ["Scientists caution that burning the trees ..."]}, num_beams=4)
    [{'description': 'what measures are taken to preserve the amazon rain forest'}]

A document is raw text (split into sentences with the splitter the q2id corpus was built with), a list of
sentences, or a q2id corpus record ``{"sentences": [...]}``.

Beyond the paper: with ``retriever=`` (a :class:`hf_querygen.tasks.q2id.task.DocumentRetriever` over a
:class:`hf_querygen.retrieval.Index`), an input may be a bare query (a string, or a mapping without
``relevant_documents``): its top-ranked documents become the relevant set and the next ones the
irrelevant set.

    >>> retriever = DocumentRetriever.from_documents(collection, relevant=5, irrelevant=5)
    >>> describe("amazon rain forest", retriever=retriever)

Decoding is
:meth:`hf_querygen.tasks.q2id.task.Q2IDTask.predict` (the same as the zhang2020 tables); inputs are
truncated by :class:`hf_querygen.tasks.q2id.Q2IDCaps` (``caps=`` per call). Generation arguments
(``num_beams``, ``max_new_tokens``, ``num_return_sequences``, ...) pass through to ``generate()``;
``batch_size=...`` batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError
from ..tasks.q2id.task import Q2IDTask, as_source
from ._task_pipeline import TaskPipeline, register_task_pipeline


class IntentDescriptionPipeline(TaskPipeline):
    """Q2ID generation: one list of ``{"description": str}`` per input (one dict per returned sequence)."""

    task_name = "q2id"

    def __call__(self, inputs: Mapping[str, Any] | list[Mapping[str, Any]], **kwargs: Any):
        # transformers treats a dict as one input but a list of dicts as several: keep that
        return super().__call__(inputs, **kwargs)

    def _sanitize_parameters(self, retriever: Any = None, **kwargs: Any):
        preprocess, forward, postprocess = super()._sanitize_parameters(**kwargs)
        if retriever is not None:
            if not callable(getattr(retriever, "sources", None)):
                raise InvalidInputError(
                    f"{TASK_NAME}: retriever must be a DocumentRetriever (with .sources(queries)); got "
                    f"{type(retriever).__name__}"
                )
            preprocess["retriever"] = retriever
        return preprocess, forward, postprocess

    def preprocess(self, inputs: Mapping[str, Any] | str, retriever: Any = None) -> dict[str, Any]:  # type: ignore[override]
        bare = isinstance(inputs, str) or (isinstance(inputs, Mapping) and "relevant_documents" not in inputs)
        if bare and retriever is not None:
            query = inputs if isinstance(inputs, str) else inputs.get("query")
            if not isinstance(query, str):
                raise InvalidInputError(
                    f"{TASK_NAME}: a bare input needs a string query; got {inputs!r:.200}"
                )
            # the retrieval engine's top-ranked / lower-ranked documents stand in for the judged ones
            return {"texts": retriever.sources([query])}
        if not isinstance(inputs, Mapping):
            raise InvalidInputError(
                f"{TASK_NAME} inputs must be mappings with 'query' and 'relevant_documents' (or a query, "
                f"with retriever=...); got {type(inputs).__name__}"
            )
        # validated (and documents normalised) here, so that a bad input fails before the model runs
        return {"texts": [as_source(inputs)]}

    def _forward(self, model_inputs: dict[str, Any], **predict_kwargs: Any) -> dict[str, Any]:
        sources = model_inputs["texts"]
        # unbatched: [source]; batched by the pipeline's collator: [[source], [source], ...]
        model_inputs["texts"] = [s[0] if isinstance(s, list) else s for s in sources]
        return super()._forward(model_inputs, **predict_kwargs)

    def format_output(self, output: Any) -> list[dict[str, str]]:
        descriptions = output if isinstance(output, list) else [output]
        return [{"description": description} for description in descriptions]


TASK_NAME = register_task_pipeline(IntentDescriptionPipeline, Q2IDTask, "AutoModelForSeq2SeqLM")

__all__ = ["TASK_NAME", "IntentDescriptionPipeline"]
