"""Query segmentation accuracy (Lin et al. 2017, Sec. 4; Hagen et al. WWW 2011 / CIKM 2012).

* ``query_accuracy``: share of queries whose predicted segmentation equals the reference.
* ``break_accuracy``: for each query the share of its k-1 break positions decided correctly,
  averaged over queries (the paper's "ratio of correct decisions over all break positions in
  q"); ``break_accuracy_pooled`` pools all break positions of all queries first.
* ``segment_precision`` / ``segment_recall`` / ``segment_f1``: a predicted segment is correct
  when the reference has a segment with the same start and end word; pooled over all queries
  (Bergsma & Wang 2007; Hagen et al. 2011).

Segmentations are given in the corpus's ``|`` notation (``"graffiti fonts|alphabet"``) or as
segment lists (``["graffiti fonts", "alphabet"]``); prediction and reference must spell the same
words. The pure functions (in :mod:`hf_querygen.metrics.segmentation_scores`, importable without
``evaluate``) are the implementation; :class:`SegmentationAccuracy` is a thin ``evaluate.Metric``
wrapper, loadable offline with ``evaluate.load("<path to this file>")``.
"""

from __future__ import annotations

import datasets
import evaluate

from hf_querygen.metrics.segmentation_scores import break_accuracy, query_accuracy, segmentation_scores

__all__ = ["SegmentationAccuracy", "break_accuracy", "query_accuracy", "segmentation_scores"]

_CITATION = """\
@inproceedings{lin2017query,
  title={Query Segmentation via RNNs Encoder-Decoder Framework},
  author={Lin, Yiu-Chang and Amanatullah, Ali and Cheng, Kan and Qiu, Tzu-Chuan and Huang, Wei-Hsiang},
  booktitle={SIGIR eCom Workshop},
  year={2017}
}
@inproceedings{hagen2011query,
  title={Query Segmentation Revisited},
  author={Hagen, Matthias and Potthast, Martin and Stein, Benno and Br{\\"a}utigam, Christof},
  booktitle={WWW},
  year={2011}
}
"""

_DESCRIPTION = """\
Query accuracy, break accuracy (per-query mean and pooled) and segment precision / recall / F1 of
predicted against reference query segmentations.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of predicted segmentations, each in `|` notation ("graffiti fonts|alphabet").
    references: list of reference segmentations of the same queries (same notation).
Returns:
    query_accuracy, break_accuracy, break_accuracy_pooled, segment_precision, segment_recall,
    segment_f1, n_queries.
Examples:
    >>> metric = evaluate.load("hf_querygen/metrics/segmentation.py")
    >>> segmentation = ["graffiti fonts|alphabet"]
    >>> metric.compute(predictions=segmentation, references=segmentation)["query_accuracy"]
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SegmentationAccuracy(evaluate.Metric):
    """``evaluate`` wrapper of :func:`segmentation_scores` (string segmentations in ``|`` notation)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://webis.de/data/webis-qsec-10.html"],
        )

    def _compute(self, predictions, references) -> dict[str, float]:
        return {
            key: float(value) if key != "n_queries" else int(value)
            for key, value in segmentation_scores(predictions, references).items()
        }
