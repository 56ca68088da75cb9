"""Pure query-segmentation metrics (no ``evaluate`` import: it costs seconds and ~500 MB).

See :mod:`hf_querygen.metrics.segmentation` for the definitions and the ``evaluate.Metric``.
"""

from __future__ import annotations

from collections.abc import Sequence

from hf_querygen.errors import InvalidInputError
from hf_querygen.text import BREAK_TOKEN, SegmentationError, parse_segmentation
from hf_querygen.validation import check_string_list

Segmentation = str | Sequence[str]


def _as_breaks(segmentation: Segmentation, what: str, index: int) -> tuple[list[str], list[int]]:
    text = segmentation if isinstance(segmentation, str) else BREAK_TOKEN.join(segmentation)
    try:
        breaks = parse_segmentation(text)
    except SegmentationError as err:
        raise InvalidInputError(f"segmentation: {what}[{index}]={segmentation!r:.80}: {err}") from None
    return text.replace(BREAK_TOKEN, " ").split(), breaks


def _aligned(predictions: Sequence[Segmentation], references: Sequence[Segmentation]):
    check_string_list("segmentation", "predictions", predictions, allow_nested=True)
    check_string_list("segmentation", "references", references, allow_nested=True)
    if len(predictions) != len(references):
        raise InvalidInputError(
            f"segmentation: {len(predictions)} predictions for {len(references)} references"
        )
    if not references:
        raise InvalidInputError("segmentation: no references to score (references=[]); pass at least one")
    for index, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        predicted_words, predicted = _as_breaks(prediction, "predictions", index)
        reference_words, gold = _as_breaks(reference, "references", index)
        if predicted_words != reference_words:
            raise InvalidInputError(
                f"segmentation: predictions[{index}] spells {' '.join(predicted_words)!r} but the reference "
                f"spells {' '.join(reference_words)!r}"
            )
        yield predicted, gold


def _spans(breaks: Sequence[int]) -> set[tuple[int, int]]:
    """(first word, last word) of every segment."""
    spans, start = set(), 0
    for i, is_break in enumerate(breaks):
        if is_break:
            spans.add((start, i))
            start = i + 1
    spans.add((start, len(breaks)))
    return spans


def segmentation_scores(
    predictions: Sequence[Segmentation], references: Sequence[Segmentation]
) -> dict[str, float]:
    """All segmentation metrics of aligned prediction / reference lists (see module docstring)."""
    exact = 0
    per_query_break_accuracies = []
    correct_breaks = total_breaks = 0
    correct_segments = predicted_segments = reference_segments = 0
    n_queries = 0
    for predicted, gold in _aligned(predictions, references):
        n_queries += 1
        exact += predicted == gold
        correct = sum(p == g for p, g in zip(predicted, gold, strict=True))
        if gold:  # a one-word query has no break position to decide
            per_query_break_accuracies.append(correct / len(gold))
        correct_breaks += correct
        total_breaks += len(gold)
        predicted_spans, gold_spans = _spans(predicted), _spans(gold)
        correct_segments += len(predicted_spans & gold_spans)
        predicted_segments += len(predicted_spans)
        reference_segments += len(gold_spans)
    precision = correct_segments / predicted_segments
    recall = correct_segments / reference_segments
    return {
        "query_accuracy": exact / n_queries,
        "break_accuracy": (
            sum(per_query_break_accuracies) / len(per_query_break_accuracies)
            if per_query_break_accuracies
            else 1.0
        ),
        "break_accuracy_pooled": correct_breaks / total_breaks if total_breaks else 1.0,
        "segment_precision": precision,
        "segment_recall": recall,
        "segment_f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "n_queries": n_queries,
    }


def query_accuracy(predictions: Sequence[Segmentation], references: Sequence[Segmentation]) -> float:
    """Share of queries segmented exactly as the reference."""
    return segmentation_scores(predictions, references)["query_accuracy"]


def break_accuracy(predictions: Sequence[Segmentation], references: Sequence[Segmentation]) -> float:
    """Per-query share of correct break decisions, averaged over queries."""
    return segmentation_scores(predictions, references)["break_accuracy"]
