"""``pipeline("keyword-query-generation")``: natural-language query in, keyword query out, with which
words were extracted from the query and which were generated (Liu et al., CIKM'18).

    >>> generate_keywords = pipeline("keyword-query-generation", model="path/to/dual-decoder")
    >>> generate_keywords("where should I go and play when I first came to beijing")
    [{'keyword_query': 'beijing sightseeing', 'keywords': ['beijing', 'sightseeing'],
      'extracted': ['beijing'], 'generated': ['sightseeing']}]

With the dual decoder, "extracted" is what the pointer decoder pointed at (the source words
themselves, so rare names and out-of-vocabulary words survive) and "generated" what the generator
decoder produced; the keyword query is their union without duplicates (Sec. 3.5). Any other model
of the project (e.g. an attentional seq2seq) works too: its output words are then split by whether
they occur in the query. Batching and generation arguments (``num_beams``, ``max_new_tokens``, ...)
behave as in the ``query-reformulation`` pipeline this one extends.
"""

from __future__ import annotations

from typing import Any

from .text2text import QueryReformulationPipeline

TASK_NAME = "keyword-query-generation"


class KeywordQueryGenerationPipeline(QueryReformulationPipeline):
    """Keyword-query generation with the extracted / generated split of the dual decoder."""

    def postprocess(
        self, model_outputs: dict[str, Any], return_tensors: bool = False
    ) -> list[dict[str, Any]]:
        from ..corpora.nl2kw import normalize_for_matching
        from ..tasks.nl2kw import KeywordQuery, decode_dual_decoder_ids
        from ..tasks.seq2seq import decode_extended

        if return_tensors:
            return super().postprocess(model_outputs, return_tensors=True)
        sequences = model_outputs["sequences"][0]  # (n, T) of this input
        source_words = model_outputs["source_words"]
        if source_words and isinstance(source_words[0], list):
            source_words = source_words[0]
        config = self.model.config
        output_vocab_size = getattr(config, "output_vocab_size", None) or config.vocab_size
        results = []
        for sequence in sequences:
            if config.model_type == "dual_decoder":
                skip = (config.pad_token_id, config.unk_token_id, config.decoder_start_token_id)
                query = decode_dual_decoder_ids(
                    sequence.tolist(),
                    source_words,
                    self.tokenizer,
                    output_vocab_size,
                    config.eos_token_id,
                    skip_token_ids=skip,
                )
            else:
                in_source = {normalize_for_matching(word) for word in source_words}
                words = decode_extended(sequence, source_words, self.tokenizer, output_vocab_size)
                query = KeywordQuery(
                    [w for w in words if normalize_for_matching(w) in in_source],
                    [w for w in words if normalize_for_matching(w) not in in_source],
                )
            results.append(query.as_dict())
        return results


def register_pipeline() -> None:
    """Register the ``keyword-query-generation`` task (called at ``import hf_querygen``)."""
    from transformers import AutoModelForSeq2SeqLM
    from transformers.pipelines import PIPELINE_REGISTRY

    from ..tokenization import register_tokenizers

    PIPELINE_REGISTRY.register_pipeline(
        TASK_NAME,
        pipeline_class=KeywordQueryGenerationPipeline,
        pt_model=AutoModelForSeq2SeqLM,
        type="text",
    )
    register_tokenizers()
