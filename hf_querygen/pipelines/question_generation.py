"""``pipeline("question-generation")``: keyword query in, several scored questions out (Ding & Balog K2Q).

A :class:`~hf_querygen.pipelines._task_pipeline.TaskPipeline` of the ``k2q`` task: one batch of keyword
queries is decoded by :meth:`hf_querygen.tasks.k2q.task.K2QTask.predict` (``return_scores=True``), the same
code that the experiment runner, ``hf-querygen evaluate`` and ``generate`` decode with, including the
decoding saved with the model (``config.task_decoding``: e.g. ``no_repeat_ngram_size`` chosen on
validation). Copy-aware, so copied out-of-vocabulary keyword terms survive. Each input gives a list of
``{"generated_text": question, "score": s}``, best first, distinct, ``num_return_sequences`` long at
most (default 1).

Decoding (``strategy``, :meth:`~hf_querygen.tasks.k2q.task.K2QTask.generate_questions`):

* ``"beam"`` (default): greedy with the default ``num_beams=1``, else beam search; ``score`` is the
  length-normalised log-probability (greedy: the mean per-token log-probability);
* ``"distinct-beam"``: a beam of ``num_return_sequences * overgenerate`` hypotheses, duplicates (same
  words after copy decoding) dropped, so that the list fills with distinct questions (diverse group
  beam search left transformers 5 core: it needs a Hub custom-generate repository);
* ``"sample"``: ancestral sampling (``top_p``, ``temperature``, ... pass through), duplicates dropped,
  sorted by the mean per-token log-probability.

Keeping the keywords: a copy model takes ``no_repeat_source_words`` / ``copy_all_source_words``, a
warm-started (BERT2BERT) one ``require_keywords`` / ``keywords_once`` / ``keywords_in_order`` /
``keyword_bonus`` / ``prefer_keywords`` / ``prefer_questions``
(:class:`~hf_querygen.tasks.subword.SourceWordsProcessor`, the beams' order); each refuses the other's.

    >>> generate_questions = pipeline("question-generation", model="path/to/copynet")
    >>> generate_questions("capital france")
    [{'generated_text': 'what is the capital of france ?', 'score': -0.21}]
    >>> generate_questions("capital france", num_return_sequences=3, strategy="distinct-beam")
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError
from ..tasks.k2q.task import K2QTask
from ._task_pipeline import TaskPipeline, register_task_pipeline

STRATEGIES = ("beam", "distinct-beam", "sample")

#: call-time arguments: the decoding choices and ``generate()``'s settings a user may pass
_ARGUMENTS = (
    "strategy",
    "overgenerate",
    "num_beams",
    "num_return_sequences",
    "max_new_tokens",
    "max_length",
    "min_new_tokens",
    "no_repeat_ngram_size",
    "no_repeat_source_words",
    "copy_all_source_words",
    "keyword_fallback",
    "keyword_bonus",
    "require_keywords",
    "keywords_once",
    "keywords_in_order",
    "prefer_keywords",
    "prefer_questions",
    "repetition_penalty",
    "length_penalty",
    "top_p",
    "top_k",
    "temperature",
    "max_source_length",
)


class QuestionGenerationPipeline(TaskPipeline):
    """Keyword query -> ``num_return_sequences`` scored, distinct questions (module docstring)."""

    task_name = "k2q"
    forward_arguments = _ARGUMENTS

    def _sanitize_parameters(self, return_tensors: bool | None = None, **kwargs: Any):
        _, forward, _ = super()._sanitize_parameters(**kwargs)
        strategy = forward.get("strategy")
        if strategy is not None and strategy not in STRATEGIES:
            raise InvalidInputError(f"{TASK_NAME}: strategy {strategy!r} is not one of {STRATEGIES}")
        forward["return_scores"] = True
        if return_tensors:
            forward["return_token_ids"] = True
        return {}, forward, {}

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """A keyword query -> its list of scored questions; a list of queries -> one list per query;
        ``[]`` and an empty or whitespace-only query -> ``[]``."""
        return super().__call__(inputs, *args, **kwargs)


# encoder-decoders and the question-frame model (a classifier over frames)
TASK_NAME = register_task_pipeline(
    QuestionGenerationPipeline,
    K2QTask,
    "AutoModelForSeq2SeqLM",
    "AutoModelForTokenClassification",
    "AutoModelForSequenceClassification",
)
