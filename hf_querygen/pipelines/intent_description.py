"""``pipeline("intent-description")``: a query plus its relevant documents (and optionally irrelevant ones)
in, a natural-language intent description out (Zhang et al. CIKM'20's Q2ID task, decoded by CtrsGen).

    >>> describe = pipeline("intent-description", model="path/to/trained-ctrsgen")
    >>> describe({"query": "amazon rain forest",
    ...           "relevant_documents": ["Eight nations of the Amazon basin ... . At the first summit ..."],
    ...           "irrelevant_documents": ["Scientists caution that burning the trees ..."]}, num_beams=4)
    [{'description': 'what measures are taken to preserve the amazon rain forest'}]

A document is raw text (split into sentences with the splitter the q2id corpus was built with), a list of
sentences, or a q2id corpus record ``{"sentences": [...]}``. Inputs are truncated by
:class:`hf_querygen.tasks.q2id.Q2IDCaps` (``caps=`` per call). Generation arguments (``num_beams``,
``max_new_tokens``, ``num_return_sequences``, ...) pass through to ``generate()``. Every input is one
whole document set, so inputs are run one at a time (``batch_size`` is ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformers import Pipeline

from ..errors import InvalidInputError
from ..tasks.q2id import Q2IDCaps, Q2IDCollator, decode_description, encode_q2id
from ..training import as_max_length

TASK_NAME = "intent-description"


def _as_document(document: Any, where: str) -> Any:
    if isinstance(document, str) or (isinstance(document, Mapping) and "sentences" in document):
        return document
    if isinstance(document, (list, tuple)) and all(isinstance(s, str) for s in document):
        return {"sentences": list(document)}
    raise InvalidInputError(
        f"{TASK_NAME}: {where} must be a string, a list of sentences or a mapping with 'sentences'; "
        f"got {type(document).__name__}"
    )


class IntentDescriptionPipeline(Pipeline):
    """Q2ID generation with :class:`hf_querygen.models.ctrsgen.CtrsGenForIntentDescription`."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __call__(self, inputs: Mapping[str, Any] | list[Mapping[str, Any]], **kwargs: Any):
        kwargs["batch_size"] = 1  # each input is a nested document set; the default collation is 2-D only
        return super().__call__(inputs, **kwargs)

    def _sanitize_parameters(self, caps: Q2IDCaps | None = None, **generate_kwargs: Any):
        preprocess_params = {} if caps is None else {"caps": caps}
        generate_kwargs.pop("batch_size", None)
        return preprocess_params, as_max_length(generate_kwargs), {}

    def preprocess(self, inputs: Mapping[str, Any], caps: Q2IDCaps | None = None) -> dict[str, Any]:
        if not isinstance(inputs, Mapping) or "query" not in inputs or "relevant_documents" not in inputs:
            raise InvalidInputError(
                f"{TASK_NAME} inputs must be mappings with 'query' and 'relevant_documents' (and optionally "
                f"'irrelevant_documents'); got {inputs!r:.200}"
            )
        relevant = inputs["relevant_documents"]
        irrelevant = inputs.get("irrelevant_documents") or []
        if isinstance(relevant, str) or isinstance(irrelevant, str):
            raise InvalidInputError(f"{TASK_NAME}: relevant/irrelevant_documents must be lists of documents")
        batch = {
            "query": [inputs["query"]],
            "relevant_documents": [
                [_as_document(d, f"relevant_documents[{i}]") for i, d in enumerate(relevant)]
            ],
            "irrelevant_documents": [
                [_as_document(d, f"irrelevant_documents[{i}]") for i, d in enumerate(irrelevant)]
            ],
        }
        encoded = encode_q2id(batch, self.tokenizer, caps or Q2IDCaps(), with_labels=False)
        features = [{key: values[0] for key, values in encoded.items()}]
        return Q2IDCollator(self.tokenizer.pad_token_id)(features)

    def _forward(self, model_inputs: dict[str, Any], **generate_kwargs: Any) -> dict[str, Any]:
        generated = self.model.generate(**model_inputs, **generate_kwargs)
        sequences = generated.sequences if hasattr(generated, "sequences") else generated
        return {"sequences": sequences}

    def postprocess(self, model_outputs: dict[str, Any]) -> list[dict[str, str]]:
        return [
            {"description": decode_description(sequence, self.tokenizer)}
            for sequence in model_outputs["sequences"]
        ]


def register_pipeline() -> None:
    """Register the ``intent-description`` task (called at ``import hf_querygen``)."""
    from transformers import AutoModelForSeq2SeqLM
    from transformers.pipelines import PIPELINE_REGISTRY

    PIPELINE_REGISTRY.register_pipeline(
        TASK_NAME,
        pipeline_class=IntentDescriptionPipeline,
        pt_model=AutoModelForSeq2SeqLM,
        type="text",
    )


__all__ = ["TASK_NAME", "IntentDescriptionPipeline", "register_pipeline"]
