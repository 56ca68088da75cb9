"""Keywords kept: how much of the keyword query a generated question keeps (keyword query -> question).

For each example, the share of the keyword query's content words (:func:`hf_querygen.text.content_words`:
the words of :func:`~hf_querygen.text.normalize_for_matching`, without :data:`~hf_querygen.text.STOPWORDS`;
all its words when it has no content word) that occur among the question's words (same normalisation; no
stemming: ``flights`` is not ``flight``). Reported: ``keywords_kept`` (the mean share over examples),
``all_keywords_kept`` (the share of examples keeping every content word) and ``n``. A question that
changes a keyword ("obama birthplace" -> "who was the population of obama born?") loses it here, which
ROUGE against the reference question may not show.

The pure function :func:`keywords_kept` is the implementation; :class:`KeywordsKept` is a thin
``evaluate.Metric`` wrapper, loadable offline with ``evaluate.load("<path to this file>")``; its second
input is ``sources`` (the keyword queries), not references.
"""

from __future__ import annotations

from collections.abc import Sequence

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError
from hf_querygen.text import content_words, normalize_for_matching
from hf_querygen.validation import check_string_list

_DESCRIPTION = """\
Share of the keyword query's content words (stopwords removed, normalised, no stemming) that the
generated question contains; mean over examples, and the share of examples keeping all of them.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated questions.
    sources: list of the keyword queries they were generated from (one per prediction).
Returns:
    keywords_kept (mean share of content words kept), all_keywords_kept (share of examples keeping
    every content word), n.
Examples:
    >>> metric = evaluate.load("hf_querygen/metrics/keywords_kept.py")
    >>> metric.compute(predictions=["what is the capital of france ?"], sources=["capital france"])
    {'keywords_kept': 1.0, 'all_keywords_kept': 1.0, 'n': 1}
"""


def kept_share(prediction: str, source: str) -> float:
    """Share of ``source``'s content words among ``prediction``'s words (1.0 for a source without words)."""
    wanted = content_words(source)
    if not wanted:
        return 1.0
    present = set(normalize_for_matching(prediction).split())
    return sum(word in present for word in wanted) / len(wanted)


def keywords_kept(predictions: Sequence[str], sources: Sequence[str]) -> dict[str, float]:
    """``keywords_kept`` / ``all_keywords_kept`` / ``n`` of questions against their keyword queries."""
    check_string_list("keywords_kept", "predictions", predictions)
    check_string_list("keywords_kept", "sources", sources)
    if len(predictions) != len(sources):
        raise InvalidInputError(
            f"keywords_kept: {len(predictions)} predictions but {len(sources)} sources; pass one keyword "
            "query per prediction"
        )
    if not predictions:
        raise InvalidInputError("keywords_kept: no predictions to score (predictions=[]); pass at least one")
    for i, source in enumerate(sources):
        if not normalize_for_matching(source):
            raise InvalidInputError(f"keywords_kept: sources[{i}]={source!r} holds no word")
    shares = [kept_share(p, s) for p, s in zip(predictions, sources, strict=True)]
    return {
        "keywords_kept": sum(shares) / len(shares),
        "all_keywords_kept": sum(share == 1.0 for share in shares) / len(shares),
        "n": len(shares),
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KeywordsKept(evaluate.Metric):
    """``evaluate`` wrapper of :func:`keywords_kept` (no Hub access; load it by file path)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "sources": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions, sources):
        return keywords_kept(list(predictions), list(sources))
