"""Question well-formedness: the share of generated questions a classifier judges well-formed.

The classifier (:mod:`hf_querygen.metrics.wellformedness_classifier`) is the backbone (default the offline
all-MiniLM-L6-v2) fine-tuned on the query-wellformedness corpus (Faruqui & Das, EMNLP'18: 25,100 Paralex
queries; well-formed = rated so by at least 4 of 5 annotators), selected on the corpus' validation split,
built once into the cache by ``hf-querygen wellformedness-classifier`` and never shipped. It reads every
question lower-cased with its ending punctuation replaced by `` ?`` (the K2Q models write lower-cased,
tokenised questions), so it judges the words, not the casing or the final mark.

Reported: ``wellformed`` (share of predictions with ``p(well-formed) >= 0.5``), ``wellformed_probability``
(the mean ``p``) and ``n``. Read it against human questions, not as an absolute: the corpus' own raters call
only 38% of its (human) queries well-formed, so the K2Q tables carry a ``reference`` row (the test
questions themselves scored as outputs) and a system's rate is compared with that row's.

The pure function :func:`~hf_querygen.metrics.wellformedness_classifier.wellformedness_scores` is the
implementation; :class:`Wellformedness` is a thin ``evaluate.Metric`` wrapper, loadable offline with
``evaluate.load("<path to this file>")``; ``classifier=<folder>`` at compute time picks another classifier.
"""

from __future__ import annotations

import datasets
import evaluate

from hf_querygen.metrics.wellformedness_classifier import wellformedness_scores

_CITATION = """\
@inproceedings{faruqui2018identifying,
  title={Identifying Well-formed Natural Language Questions},
  author={Faruqui, Manaal and Das, Dipanjan},
  booktitle={EMNLP},
  year={2018}
}
"""

_DESCRIPTION = """\
Share of predictions that a classifier fine-tuned on the query-wellformedness corpus (Faruqui & Das 2018)
judges well-formed natural-language questions (case and ending punctuation ignored).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated questions.
    classifier: optional folder of a classifier written by build_classifier (default: the cached one of
        the default backbone; `hf-querygen wellformedness-classifier` builds it).
Returns:
    wellformed (share judged well-formed), wellformed_probability (mean probability), n.
Examples:
    >>> metric = evaluate.load("hf_querygen/metrics/wellformedness.py")
    >>> metric.compute(predictions=["what is the capital of france ?"])
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Wellformedness(evaluate.Metric):
    """``evaluate`` wrapper of :func:`wellformedness_scores` (no Hub access; load it by file path)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string")}),
            reference_urls=["https://arxiv.org/abs/1808.09419"],
        )

    def _compute(self, predictions, classifier=None):
        return wellformedness_scores(list(predictions), classifier)
