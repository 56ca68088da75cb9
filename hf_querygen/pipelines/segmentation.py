"""``pipeline("query-segmentation")``: a query in, its segments out.

Runs either neural segmenter of :mod:`hf_querygen.tasks.segmentation_neural`: the RNN
encoder-decoder (Lin et al. 2017; decoding constrained to "next query word or break" by default,
``constrained=False`` decodes as the paper did) or the BiLSTM BIO tagger. Segments are returned in
the caller's own words (case kept), split at whitespace. Batched with ``batch_size=...``.

    >>> segment = pipeline("query-segmentation", model="path/to/segmenter")
    >>> segment("graffiti fonts alphabet")
    ['graffiti fonts', 'alphabet']
    >>> segment(["graffiti fonts alphabet", "stainless steel chest freezers"], batch_size=16)
    [['graffiti fonts', 'alphabet'], ['stainless steel', 'chest freezers']]
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import Pipeline

from ..tasks.segmentation import breaks_to_segments
from ..tasks.segmentation_neural import (
    encode_queries,
    is_seq2seq_segmenter,
    seq2seq_batch_breaks,
    tagger_batch_breaks,
)

TASK_NAME = "query-segmentation"


class QuerySegmentationPipeline(Pipeline):
    """Query segmentation with an encoder-decoder or token-classification segmenter."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def _sanitize_parameters(self, constrained: bool | None = None, num_beams: int | None = None):
        forward_params: dict[str, Any] = {}
        if constrained is not None:
            forward_params["constrained"] = constrained
        if num_beams is not None:
            forward_params["num_beams"] = num_beams
        return {}, forward_params, {}

    def preprocess(self, query: str) -> dict[str, Any]:
        if not isinstance(query, str) or not query.split():
            raise ValueError(f"{TASK_NAME} pipeline inputs must be non-empty strings, got {query!r}")
        encoded = encode_queries([query], self.tokenizer)
        return {
            "input_ids": torch.tensor(encoded["input_ids"]),  # (1, S)
            "attention_mask": torch.tensor(encoded["attention_mask"]),  # (1, S)
            "source_word_ids": torch.tensor(encoded["source_word_ids"]),  # (1, S)
            "num_words": torch.tensor([len(query.split())]),  # (1,)
            "words": query.split(),  # as given, for the output
            "source_words": encoded["source_words"][0],  # normalised, for the model
        }

    def _forward(
        self, model_inputs: dict[str, Any], constrained: bool = True, num_beams: int = 1
    ) -> dict[str, Any]:
        words, source_words = model_inputs["words"], model_inputs["source_words"]
        if isinstance(words[0], str):  # an unbatched call hands over one word list, not a list of them
            words, source_words = [words], [source_words]
        if is_seq2seq_segmenter(self.model):
            breaks = seq2seq_batch_breaks(
                self.model, self.tokenizer, model_inputs, source_words, constrained, num_beams
            )
        else:
            lengths = model_inputs["num_words"].tolist()
            breaks = tagger_batch_breaks(
                self.model, model_inputs["input_ids"], model_inputs["attention_mask"], lengths
            )
        return {"segments": [breaks_to_segments(w, b) for w, b in zip(words, breaks, strict=True)]}

    def postprocess(self, model_outputs: dict[str, Any]) -> list[str]:
        segments = model_outputs["segments"]
        # unbatched: [[segments of the query]]; unbatched by the pipeline's loader: [segments]
        return segments[0] if isinstance(segments[0], list) else segments


def register_pipeline() -> None:
    """Register the ``query-segmentation`` task (called at ``import hf_querygen``)."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForTokenClassification
    from transformers.pipelines import PIPELINE_REGISTRY

    PIPELINE_REGISTRY.register_pipeline(
        TASK_NAME,
        pipeline_class=QuerySegmentationPipeline,
        pt_model=(AutoModelForSeq2SeqLM, AutoModelForTokenClassification),
        type="text",
    )
