"""``pipeline("query-segmentation")``: a query in, its segments out.

Runs either neural segmenter through :meth:`hf_querygen.tasks.segmentation.task.SegmentationTask.predict`
(the same decoding as the lin2017 tables): the RNN encoder-decoder (Lin et al. 2017; decoding
constrained to "next query word or break" by default, ``constrained=False`` decodes as the paper did)
or the BiLSTM BIO tagger. Segments are returned in the caller's own words (case kept), split at
whitespace. Batched with ``batch_size=...``. An empty or whitespace-only query gives ``[]`` (no
segments); see :mod:`hf_querygen.pipelines._task_pipeline` for the shared input rules.

    >>> segment = pipeline("query-segmentation", model="path/to/segmenter")
    >>> segment("graffiti fonts alphabet")
    ['graffiti fonts', 'alphabet']
    >>> segment(["graffiti fonts alphabet", "stainless steel chest freezers"], batch_size=16)
    [['graffiti fonts', 'alphabet'], ['stainless steel', 'chest freezers']]
"""

from __future__ import annotations

from ..tasks.segmentation.task import SegmentationTask
from ._task_pipeline import TaskPipeline, register_task_pipeline


class QuerySegmentationPipeline(TaskPipeline):
    """Query segmentation with an encoder-decoder or token-classification segmenter."""

    task_name = "segmentation"
    forward_arguments = ("constrained", "num_beams", "pool_word_probability")


TASK_NAME = register_task_pipeline(
    QuerySegmentationPipeline, SegmentationTask, "AutoModelForSeq2SeqLM", "AutoModelForTokenClassification"
)
