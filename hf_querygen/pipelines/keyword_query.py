"""``pipeline("keyword-query-generation")``: natural-language query in, keyword query out, with which
words were extracted from the query and which were generated (Liu et al., CIKM'18).

    >>> generate_keywords = pipeline("keyword-query-generation", model="path/to/dual-decoder")
    >>> generate_keywords("where should I go and play when I first came to beijing")
    [{'keyword_query': 'beijing sightseeing', 'keywords': ['beijing', 'sightseeing'],
      'extracted': ['beijing'], 'generated': ['sightseeing']}]

Decoding is :meth:`hf_querygen.tasks.nl2kw.task.NL2KWTask.predict` (the same as the liu2018 tables):
with the dual decoder, "extracted" is what the pointer decoder pointed at and "generated" what the
generator decoder produced; the keyword query is their union without duplicates (Sec. 3.5). Every
other model of the task works too: a seq2seq model's words are split by whether they occur in the
query, the BiLSTM tagger's keyword-tagged words are "extracted", the joint model adds its tags to its
decoder's words. Generation arguments (``num_beams``, ``num_return_sequences``, ``max_new_tokens``,
``suppress_tokens``, ...) pass through to ``generate()``; ``batch_size=...`` batches.
"""

from __future__ import annotations

from typing import Any

from ..tasks.nl2kw.task import NL2KWTask
from ._task_pipeline import TaskPipeline, register_task_pipeline


class KeywordQueryGenerationPipeline(TaskPipeline):
    """Keyword-query generation with the extracted / generated split; one list of dicts per input (one
    dict per returned sequence)."""

    task_name = "nl2kw"

    def format_output(self, output: Any) -> list[dict[str, Any]]:
        queries = output if isinstance(output, list) else [output]
        return [query.as_dict() for query in queries]


TASK_NAME = register_task_pipeline(
    KeywordQueryGenerationPipeline, NL2KWTask, "AutoModelForSeq2SeqLM", "AutoModelForTokenClassification"
)
