"""Exact match of generated and gold texts after whitespace/case normalisation.

:func:`exact_match` is the implementation; :class:`ExactMatch` is a thin ``evaluate.Metric``
wrapper, loadable offline with ``evaluate.load("<path to this file>")``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError
from hf_querygen.validation import check_bool, check_string_list, invalid

_DESCRIPTION = "Fraction of predictions equal to their reference (or to any of several references)."
_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated strings.
    references: list of gold strings, or list of lists of gold strings (any may match).
    lowercase: compare case-insensitively (default True).
Returns:
    exact_match: float in [0, 1]; n: number of predictions.
"""


def normalize_text(text: str, lowercase: bool = True) -> str:
    """Collapse runs of whitespace (and lowercase): the comparison form of :func:`exact_match`."""
    text = " ".join(text.split())
    return text.lower() if lowercase else text


def exact_match(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    lowercase: bool = True,
    normalize: Callable[[str], str] | None = None,
) -> dict[str, float]:
    """Share of predictions matching their reference (any reference, if a list is given)."""
    check_string_list("exact_match", "predictions", predictions)
    check_string_list("exact_match", "references", references, allow_nested=True)
    check_bool("exact_match", "lowercase", lowercase)
    if normalize is not None and not callable(normalize):
        raise invalid("exact_match", "normalize", normalize, "None or a callable str -> str")
    if len(predictions) != len(references):
        raise InvalidInputError(
            f"exact_match: {len(predictions)} predictions but {len(references)} references"
        )
    if not predictions:
        raise InvalidInputError("exact_match: no predictions to score (predictions=[]); pass at least one")
    normalize = normalize or (lambda text: normalize_text(text, lowercase))
    hits = 0
    for prediction, reference in zip(predictions, references, strict=True):
        golds = [reference] if isinstance(reference, str) else list(reference)
        hits += normalize(prediction) in {normalize(gold) for gold in golds}
    return {"exact_match": hits / len(predictions), "n": len(predictions)}


class ExactMatch(evaluate.Metric):
    def compute(self, *, predictions=None, references=None, **kwargs):
        """``evaluate.Metric.compute``; empty ``predictions`` are an error, not a score."""
        # evaluate infers the input format from the first example: with two formats and no example
        # it fails with an IndexError of its own, so refuse empty input here, by name
        if predictions is not None and not isinstance(predictions, str) and len(predictions) == 0:
            raise InvalidInputError(
                "exact_match: no predictions to score (predictions=[]); pass at least one"
            )
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
                ),
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.List(datasets.Value("string")),
                    }
                ),
            ],
        )

    def _compute(self, predictions, references, lowercase: bool = True) -> dict[str, float]:
        return exact_match(predictions, references, lowercase=lowercase)
