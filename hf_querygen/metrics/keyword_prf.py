"""Keyword precision / recall / F1 for keyword-query generation (Liu et al., CIKM'18, Sec. 5.2).

A keyword query is compared with the gold one as a SET of normalised words (the paper treats the
keyword query as a word set, Sec. 3.1). Normalisation is the corpus' own
:func:`hf_querygen.text.normalize_for_matching`, the same function that splits gold
keywords into extractive and generative ones, so "a keyword occurs in the query" means the same
thing for the data and for the metric.

Two averages are reported, because the paper does not say which one it used:

* per query (macro): P, R, F1 computed for each query, then averaged over queries
  (``precision``, ``recall``, ``f1``);
* pooled (micro): true positives, predicted and gold counts summed over all queries first
  (``pooled_precision``, ``pooled_recall``, ``pooled_f1``).

With the natural-language ``sources`` given, recall is also split into extractive keywords (gold
words occurring in the source), generative keywords (the others) and all keywords, pooled over the
test set (Table 3), and :func:`f1_by_length` gives F1 per source-length bucket (Fig. 5).

The pure functions are the implementation; :class:`KeywordPRF` is a thin ``evaluate.Metric``
wrapper, loadable offline with ``evaluate.load("<path to this file>")``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError
from hf_querygen.text import normalize_for_matching
from hf_querygen.validation import check_string_list, invalid

Keywords = str | Sequence[str]
Normalizer = Callable[[str], str]

_CITATION = """\
@inproceedings{liu2018generating,
  title={Generating Keyword Queries for Natural Language Queries to Alleviate Lexical Chasm Problem},
  author={Liu, Xiaoyu and Pan, Shunda and Zhang, Qi and Jiang, Yu-Gang and Huang, Xuanjing},
  booktitle={CIKM},
  year={2018}
}
"""

_DESCRIPTION = """\
Precision, recall and F1 of predicted against gold keyword queries, each taken as a set of
normalised words; per-query (macro) and pooled (micro) averages; with `sources`, recall on
extractive / generative / all gold keywords (Liu et al. 2018, Table 3).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of predicted keyword queries (one string per query, words separated by spaces).
    references: list of gold keyword queries (same form).
    sources: optional list of the natural-language queries; enables the extractive/generative recalls.
Returns:
    precision, recall, f1 (per-query means), pooled_precision, pooled_recall, pooled_f1,
    n_queries; with sources also recall_extractive, recall_generative, recall_total,
    n_gold_extractive, n_gold_generative.
Examples:
    >>> metric = evaluate.load("hf_querygen/metrics/keyword_prf.py")
    >>> metric.compute(predictions=["beijing sightseeing"], references=["beijing sightseeing"])["f1"]
    1.0
"""


def keyword_words(keywords: Keywords, normalize: Normalizer | None = None) -> list[str]:
    """The normalised words of a keyword query, first occurrence order, without duplicates.

    ``keywords`` is either one string ("beijing sightseeing") or a list of keywords (each may hold
    several words, e.g. ``["new york", "hotels"]``); both give the same words.
    """
    if isinstance(keywords, str):
        keywords = [keywords]
    elif not isinstance(keywords, Sequence) or isinstance(keywords, bytes):
        raise invalid("keyword_prf", "keywords", keywords, "a string or a list of strings")
    normalize = normalize or normalize_for_matching
    words: dict[str, None] = {}
    for position, keyword in enumerate(keywords):
        if not isinstance(keyword, str):
            raise invalid("keyword_prf", f"keywords[{position}]", keyword, "a string")
        for word in normalize(keyword).split():
            words.setdefault(word, None)
    return list(words)


@dataclass(frozen=True)
class QueryCounts:
    """Set-overlap counts of one query: |pred & gold|, |pred|, |gold|."""

    true_positives: int
    predicted: int
    gold: int

    @property
    def precision(self) -> float:
        # an empty prediction has no correct keyword: precision 0, unless the gold set is empty too
        if self.predicted == 0:
            return 1.0 if self.gold == 0 else 0.0
        return self.true_positives / self.predicted

    @property
    def recall(self) -> float:
        if self.gold == 0:
            return 1.0 if self.predicted == 0 else 0.0
        return self.true_positives / self.gold

    @property
    def f1(self) -> float:
        return harmonic_f1(self.precision, self.recall)


def harmonic_f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def query_counts(
    prediction: Keywords, reference: Keywords, normalize: Normalizer | None = None
) -> QueryCounts:
    predicted = set(keyword_words(prediction, normalize))
    gold = set(keyword_words(reference, normalize))
    return QueryCounts(len(predicted & gold), len(predicted), len(gold))


def _check_lengths(name: str, values: Sequence, predictions: Sequence) -> None:
    if len(values) != len(predictions):
        raise InvalidInputError(
            f"keyword_prf: {len(predictions)} predictions but {len(values)} {name}; pass one per prediction"
        )


def _check_inputs(predictions, references, sources=None, normalize=None) -> None:
    """Lists of keyword queries (a string or a list of keyword strings each), aligned; a callable
    ``normalize``. Raises :class:`InvalidInputError` naming the argument and the offending item."""
    check_string_list("keyword_prf", "predictions", predictions, allow_nested=True)
    check_string_list("keyword_prf", "references", references, allow_nested=True)
    _check_lengths("references", references, predictions)
    if sources is not None:
        check_string_list("keyword_prf", "sources", sources)
        _check_lengths("sources", sources, predictions)
    if normalize is not None and not callable(normalize):
        raise invalid("keyword_prf", "normalize", normalize, "None or a callable str -> str")


def keyword_prf(
    predictions: Sequence[Keywords],
    references: Sequence[Keywords],
    sources: Sequence[str] | None = None,
    normalize: Normalizer | None = None,
) -> dict[str, float]:
    """Per-query and pooled P/R/F1 of keyword sets; with ``sources`` the Table 3 recalls.

    Returns plain floats (and integer counts), never numpy scalars.
    """
    _check_inputs(predictions, references, sources, normalize)
    if not predictions:
        raise InvalidInputError("keyword_prf: no predictions to score (predictions=[]); pass at least one")
    normalize = normalize or normalize_for_matching
    counts = [query_counts(p, r, normalize) for p, r in zip(predictions, references, strict=True)]
    n = len(counts)
    tp = sum(c.true_positives for c in counts)
    n_pred = sum(c.predicted for c in counts)
    n_gold = sum(c.gold for c in counts)
    pooled_p = tp / n_pred if n_pred else 0.0
    pooled_r = tp / n_gold if n_gold else 0.0
    result: dict[str, float] = {
        "precision": sum(c.precision for c in counts) / n,
        "recall": sum(c.recall for c in counts) / n,
        "f1": sum(c.f1 for c in counts) / n,
        "pooled_precision": pooled_p,
        "pooled_recall": pooled_r,
        "pooled_f1": harmonic_f1(pooled_p, pooled_r),
        "n_queries": n,
    }
    if sources is not None:
        result.update(extractive_generative_recall(predictions, references, sources, normalize))
    return result


def extractive_generative_recall(
    predictions: Sequence[Keywords],
    references: Sequence[Keywords],
    sources: Sequence[str],
    normalize: Normalizer | None = None,
) -> dict[str, float]:
    """Recall on extractive gold words (in the normalised source), generative ones (not in it) and
    all of them, pooled over queries (Liu'18 Table 3: a per-query mean is undefined for the many
    queries without any generative, or without any extractive, keyword)."""
    normalize = normalize or normalize_for_matching
    found = {"extractive": 0, "generative": 0}
    total = {"extractive": 0, "generative": 0}
    for prediction, reference, source in zip(predictions, references, sources, strict=True):
        source_words = set(normalize(source).split())
        predicted = set(keyword_words(prediction, normalize))
        for word in keyword_words(reference, normalize):
            kind = "extractive" if word in source_words else "generative"
            total[kind] += 1
            found[kind] += word in predicted
    all_found, all_total = sum(found.values()), sum(total.values())
    return {
        "recall_extractive": found["extractive"] / total["extractive"] if total["extractive"] else 0.0,
        "recall_generative": found["generative"] / total["generative"] if total["generative"] else 0.0,
        "recall_total": all_found / all_total if all_total else 0.0,
        "n_gold_extractive": total["extractive"],
        "n_gold_generative": total["generative"],
    }


def f1_by_length(
    predictions: Sequence[Keywords],
    references: Sequence[Keywords],
    sources: Sequence[str],
    bin_edges: Sequence[int],
    normalize: Normalizer | None = None,
) -> list[dict[str, float]]:
    """Mean per-query F1 per source-length bucket (Liu'18 Fig. 5).

    Length = number of normalised source words. ``bin_edges`` ``[e0, e1, ..., ek]`` (increasing)
    define buckets ``[e0, e1), [e1, e2), ..., [ek, inf)``; sources shorter than ``e0`` go to the
    first bucket. Empty buckets are reported with ``n == 0`` and ``f1`` NaN.
    """
    _check_inputs(predictions, references, sources, normalize)
    if not bin_edges or list(bin_edges) != sorted(set(bin_edges)):
        raise InvalidInputError(
            f"f1_by_length: bin_edges must be strictly increasing and non-empty, got {bin_edges}"
        )
    normalize = normalize or normalize_for_matching
    sums = [0.0] * len(bin_edges)
    sizes = [0] * len(bin_edges)
    for prediction, reference, source in zip(predictions, references, sources, strict=True):
        length = len(normalize(source).split())
        bucket = max([i for i, edge in enumerate(bin_edges) if length >= edge] or [0])
        sums[bucket] += query_counts(prediction, reference, normalize).f1
        sizes[bucket] += 1
    buckets = []
    for i, edge in enumerate(bin_edges):
        upper = bin_edges[i + 1] - 1 if i + 1 < len(bin_edges) else None
        label = f"{edge}-{upper}" if upper is not None else f"{edge}+"
        f1 = sums[i] / sizes[i] if sizes[i] else float("nan")
        buckets.append({"bucket": label, "min_words": edge, "n": sizes[i], "f1": f1})
    return buckets


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KeywordPRF(evaluate.Metric):
    """``evaluate`` wrapper of :func:`keyword_prf` (no Hub access; load it by file path)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://doi.org/10.1145/3269206.3271727"],
        )

    def _compute(self, predictions, references, sources=None):
        # as an evaluate module (scoring a system against gold keywords), a reference without any
        # keyword is a missing reference: recall over it is undefined, so it is refused, not scored 0
        for i, reference in enumerate(references):
            if not keyword_words(reference, normalize_for_matching):
                raise InvalidInputError(f"keyword_prf: references[{i}]={reference!r} holds no keyword")
        return keyword_prf(list(predictions), list(references), None if sources is None else list(sources))
