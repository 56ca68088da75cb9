"""``pipeline("query-reformulation")``: text in, reformulated text out (any ``text2text`` model).

transformers 5 dropped the stock ``text2text-generation`` pipeline (``pipeline("text2text-generation")``
now raises and points to chat models), and its decoding would turn copied source words into ``[UNK]``
anyway: our RNN encoder-decoders emit ids ``>= output_vocab_size`` meaning "copy source position j".

A :class:`~hf_querygen.pipelines._task_pipeline.TaskPipeline` of the ``text2text`` task: a batch of texts
is decoded by :meth:`hf_querygen.tasks.text2text.task.Text2TextTask.predict`, the code ``evaluate``,
``generate`` and the experiment runner decode with, so the decoding saved with the model
(``config.task_decoding``) applies, copied out-of-vocabulary words survive, and a warm-started BERT2BERT
decodes in its word pieces. Generation arguments (``num_beams``, ``num_return_sequences``,
``max_new_tokens``, ``do_sample``, ...) pass through; ``batch_size=...`` batches. Each input gives a list
of ``{"generated_text": text}``, ``num_return_sequences`` long (default 1).

    >>> reformulate = pipeline("query-reformulation", model="path/to/trained-model")
    >>> reformulate("what is the population of Reykjavik?", num_beams=5)
    [{'generated_text': 'reykjavik population'}]
"""

from __future__ import annotations

from typing import Any

from ..tasks.text2text.task import Text2TextTask
from ._task_pipeline import TaskPipeline, register_task_pipeline


class QueryReformulationPipeline(TaskPipeline):
    """Text -> ``num_return_sequences`` generated texts (module docstring)."""

    task_name = "text2text"

    def format_output(self, output: Any) -> list[dict[str, str]]:
        texts = output if isinstance(output, list) else [output]
        return [{"generated_text": text} for text in texts]


# a token classifier loads too, so that __init__ can say which task it serves instead of
# transformers listing every seq2seq config class
TASK_NAME = register_task_pipeline(
    QueryReformulationPipeline, Text2TextTask, "AutoModelForSeq2SeqLM", "AutoModelForTokenClassification"
)
