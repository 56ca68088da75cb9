"""``pipeline("query-reformulation")``: text in, reformulated text out, with copy-aware decoding.

transformers 5 dropped the stock ``text2text-generation`` pipeline (``pipeline("text2text-generation")``
now raises and points to chat models), and its decoding would turn copied source words into
``[UNK]`` anyway: our models emit ids ``>= output_vocab_size`` meaning "copy source position j".
This pipeline keeps the source words of every input and decodes with
:func:`hf_querygen.tasks.seq2seq.decode_extended`, so out-of-vocabulary names survive. It batches
with the Pipeline machinery (``batch_size=...``); generation arguments (``num_beams``,
``num_return_sequences``, ``max_new_tokens``, ``do_sample``, ...) pass through to ``generate()``.

    >>> reformulate = pipeline("query-reformulation", model="path/to/trained-model")
    >>> reformulate("what is the population of Reykjavik?", num_beams=5)
    [{'generated_text': 'reykjavik population'}]
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from transformers import Pipeline

from ..errors import InvalidInputError
from ..inference import as_max_length
from ..tasks.seq2seq import decode_extended, encode_sources
from ..tasks.text2text_task import Text2TextTask
from ..validation import check_generation_kwargs
from ._task_pipeline import check_pipeline_model, guard_inputs, max_source_length

TASK_NAME = "query-reformulation"

#: the keys of a preprocessed example that the model may take (filtered by its forward signature)
_MODEL_INPUT_KEYS = ("input_ids", "attention_mask", "source_word_ids")


class QueryReformulationPipeline(Pipeline):
    """Seq2seq generation for our RNN encoder-decoders (and any model using the extended output space)."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    #: the pipeline task named in errors and warnings
    pipeline_task_name: str = TASK_NAME

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # only encoder-decoders with the extended output space decode here (a tagger or the dual
        # decoder has no single decoder to generate from)
        check_pipeline_model(self.pipeline_task_name, ("seq2seq",), self.model)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Shared input rules (:mod:`hf_querygen.pipelines._task_pipeline`): ``[]`` -> ``[]``, an empty or
        whitespace-only text -> ``[]`` (no generated text), over-long texts cut with one warning."""
        default = inspect.signature(Text2TextTask.__init__).parameters["max_source_length"].default
        limit = kwargs.get("max_source_length") or max_source_length(self.model, self.tokenizer, default)
        inputs, empty = guard_inputs(inputs, limit, self.pipeline_task_name)
        if empty:
            return []
        if isinstance(inputs, str):
            return super().__call__(inputs, *args, **kwargs) if inputs.split() else []
        if isinstance(inputs, (list, tuple)):
            kept = [i for i, text in enumerate(inputs) if not isinstance(text, str) or text.split()]
            results: list[Any] = [[] for _ in inputs]
            if kept:
                outputs = super().__call__([inputs[i] for i in kept], *args, **kwargs)
                for i, output in zip(kept, outputs, strict=True):
                    results[i] = output
            return results
        return super().__call__(inputs, *args, **kwargs)

    def _sanitize_parameters(
        self, max_source_length: int | None = None, return_tensors: bool | None = None, **generate_kwargs: Any
    ):
        preprocess_params = {} if max_source_length is None else {"max_source_length": max_source_length}
        postprocess_params = {} if return_tensors is None else {"return_tensors": return_tensors}
        # the one check of generation arguments, under the names the caller wrote (before max_new_tokens
        # -> max_length); a seq2seq model (checked at construction) honours every generate() argument
        beams = getattr(getattr(self.model, "generation_config", None), "num_beams", None)
        check_generation_kwargs(
            f"{self.pipeline_task_name} pipeline",
            generate_kwargs,
            default_beams=beams if isinstance(beams, int) else 1,
        )
        return preprocess_params, as_max_length(generate_kwargs), postprocess_params

    def preprocess(self, text: str, max_source_length: int | None = None) -> dict[str, Any]:
        if not isinstance(text, str):
            raise InvalidInputError(
                f"{self.pipeline_task_name} pipeline inputs must be strings, got {type(text).__name__}: "
                f"{text!r}"
            )
        encoded = encode_sources([text], self.tokenizer, max_source_length)
        inputs = {key: torch.tensor(encoded[key]) for key in _MODEL_INPUT_KEYS}  # each (1, S)
        inputs["source_words"] = encoded["source_words"][0]
        return inputs

    def _forward(self, model_inputs: dict[str, Any], **generate_kwargs: Any) -> dict[str, Any]:
        source_words = model_inputs.pop("source_words")
        batch_size = model_inputs["input_ids"].shape[0]
        # unbatched calls hand over one example's word list, batched ones a list of word lists
        if batch_size == 1 and (not source_words or isinstance(source_words[0], str)):
            source_words = [source_words]
        accepted = set(inspect.signature(self.model.forward).parameters)
        inputs = {key: value for key, value in model_inputs.items() if key in accepted}
        generated = self.model.generate(**inputs, **generate_kwargs)
        sequences = generated.sequences if hasattr(generated, "sequences") else generated
        # (B * n, T) -> (B, n, T) so that the pipeline's unbatching keeps an input's n outputs together
        sequences = sequences.reshape(batch_size, -1, sequences.shape[-1])
        return {"sequences": sequences, "source_words": source_words}

    def postprocess(
        self, model_outputs: dict[str, Any], return_tensors: bool = False
    ) -> list[dict[str, Any]]:
        sequences = model_outputs["sequences"][0]  # (n, T) of this input
        source_words = model_outputs["source_words"]
        if source_words and isinstance(source_words[0], list):
            source_words = source_words[0]
        output_vocab_size = (
            getattr(self.model.config, "output_vocab_size", None) or self.model.config.vocab_size
        )
        if return_tensors:
            return [{"generated_token_ids": sequence} for sequence in sequences]
        return [
            {
                "generated_text": " ".join(
                    decode_extended(sequence, source_words, self.tokenizer, output_vocab_size)
                )
            }
            for sequence in sequences
        ]


def register_pipeline() -> None:
    """Register the ``query-reformulation`` task (called at ``import hf_querygen``)."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForTokenClassification
    from transformers.pipelines import PIPELINE_REGISTRY

    PIPELINE_REGISTRY.register_pipeline(
        TASK_NAME,
        pipeline_class=QueryReformulationPipeline,
        # a token classifier loads too, so that __init__ can say which task it serves instead of
        # transformers listing every seq2seq config class
        pt_model=(AutoModelForSeq2SeqLM, AutoModelForTokenClassification),
        type="text",
    )
