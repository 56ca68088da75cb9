"""ROUGE-1/2/L (Lin, 2004) through Google's ``rouge-score``, with several references per prediction.

``evaluate.load("rouge")`` fetches its script from the Hub and fails offline; this module is the
offline equivalent, loadable with ``evaluate.load("<path to this file>")`` or used through the pure
function :func:`rouge`.

For each prediction and each reference, rouge-score gives precision, recall and F1. Over the
references of one prediction we report both aggregations the papers use:

- ``avg``: the mean over the references (Ding & Balog ICTIR'18, AvgRougeL, Eq. 9),
- ``max``: the best reference (MaxRougeL, Eq. 10; the usual multi-reference ROUGE).

The returned keys are ``{rouge_type}_{precision|recall|f}_{avg|max}`` (e.g. ``rougeL_recall_max``),
each the mean over predictions (macro average), plus ``{rouge_type}_{recall|f}`` as the ``max``
values for convenience. Zhang et al. CIKM'20 report ROUGE recall; Ding & Balog report ROUGE-L
(we give F and recall, see their tables).

Text is tokenised by rouge-score's tokenizer (lowercase, non-alphanumerics to spaces) without
stemming by default; ``use_stemmer=True`` applies the Porter stemmer as the official ROUGE-1.5.5 ``-m``.
Empty predictions or references score 0.

Resource limit: ROUGE-L is a longest common subsequence, O(n * m) in pure Python. A prediction or
reference longer than :data:`MAX_WORDS` (2,000) whitespace-separated words is truncated to its first
``MAX_WORDS`` words, with a ``UserWarning`` saying how many texts were cut, so that a runaway
100,000-word output scores in seconds instead of hours (generation outputs and intent
descriptions are tens of words; the limit never bites on real data).
"""

from __future__ import annotations

from collections.abc import Sequence

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError
from hf_querygen.validation import check_bool, check_string_list

#: texts longer than this many whitespace-separated words are truncated (see the module docstring)
MAX_WORDS = 2000

ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")

_CITATION = """\
@inproceedings{lin2004rouge,
  title={ROUGE: A Package for Automatic Evaluation of Summaries},
  author={Lin, Chin-Yew}, booktitle={Text Summarization Branches Out}, year={2004}
}
"""
_DESCRIPTION = (
    "ROUGE-1/2/L precision, recall and F1 (rouge-score), averaged and maxed over several references."
)
_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated strings.
    references: list of gold strings, or list of lists of gold strings (several references).
    rouge_types: subset of ("rouge1", "rouge2", "rougeL") (default all three).
    use_stemmer: Porter-stem words before matching (default False).
Returns:
    {rouge_type}_{precision|recall|f}_{avg|max} and {rouge_type}_{recall|f} (= the max variant),
    each the mean over predictions.
"""


def _as_reference_lists(references: Sequence[str | Sequence[str]]) -> list[list[str]]:
    lists = []
    for index, reference in enumerate(references):
        if isinstance(reference, str):
            lists.append([reference])
        elif isinstance(reference, Sequence) and all(isinstance(r, str) for r in reference):
            lists.append(list(reference))
        else:
            raise InvalidInputError(
                f"rouge: references[{index}] must be a string or a list of strings, got "
                f"{type(reference).__name__}"
            )
    return lists


def rouge_per_example(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    rouge_types: Sequence[str] = ROUGE_TYPES,
    use_stemmer: bool = False,
) -> list[dict[str, float]]:
    """One dict per prediction with ``{rouge_type}_{precision|recall|f}_{avg|max}`` (for paired tests)."""
    from rouge_score import rouge_scorer

    if isinstance(predictions, str) or isinstance(references, str):
        raise InvalidInputError("rouge: predictions and references must be lists (one entry per example)")
    check_string_list("rouge", "predictions", predictions)
    check_string_list("rouge", "references", references, allow_nested=True)
    check_bool("rouge", "use_stemmer", use_stemmer)
    if isinstance(rouge_types, str) or not all(isinstance(t, str) for t in rouge_types):
        raise InvalidInputError(
            f"rouge: rouge_types must be a list of names from {ROUGE_TYPES}, got {rouge_types!r}"
        )
    if len(predictions) != len(references):
        raise InvalidInputError(f"rouge: {len(predictions)} predictions but {len(references)} references")
    unknown = set(rouge_types) - set(ROUGE_TYPES)
    if unknown:
        raise InvalidInputError(f"rouge: unknown rouge_types {sorted(unknown)}; choose from {ROUGE_TYPES}")
    for index, prediction in enumerate(predictions):
        if not isinstance(prediction, str):
            raise InvalidInputError(
                f"rouge: predictions[{index}] must be a string, got {type(prediction).__name__}"
            )
    scorer = rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=use_stemmer)
    truncated = [0]

    def limited(text: str) -> str:
        if text.count(" ") < MAX_WORDS and len(text) < 40 * MAX_WORDS:  # cheap pre-check
            return text
        words = text.split()
        if len(words) <= MAX_WORDS:
            return text
        truncated[0] += 1
        return " ".join(words[:MAX_WORDS])

    rows = []
    pairs = [
        (limited(prediction), [limited(r) for r in refs])
        for prediction, refs in zip(predictions, _as_reference_lists(references), strict=True)
    ]
    if truncated[0]:
        import warnings

        warnings.warn(
            f"rouge: {truncated[0]} text(s) longer than MAX_WORDS={MAX_WORDS} words were truncated to their "
            "first MAX_WORDS words (ROUGE-L is quadratic in the length)",
            UserWarning,
            stacklevel=2,
        )
    for prediction, refs in pairs:
        scores = [scorer.score(reference, prediction) for reference in refs] if refs else []
        row: dict[str, float] = {}
        for rouge_type in rouge_types:
            for field, attribute in (("precision", "precision"), ("recall", "recall"), ("f", "fmeasure")):
                values = [getattr(score[rouge_type], attribute) for score in scores] or [0.0]
                row[f"{rouge_type}_{field}_avg"] = float(sum(values) / len(values))
                row[f"{rouge_type}_{field}_max"] = float(max(values))
        rows.append(row)
    return rows


def rouge(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    rouge_types: Sequence[str] = ROUGE_TYPES,
    use_stemmer: bool = False,
) -> dict[str, float]:
    """Mean over predictions of :func:`rouge_per_example` (see module docstring for the keys)."""
    rows = rouge_per_example(predictions, references, rouge_types, use_stemmer)
    keys = [f"{t}_{f}_{a}" for t in rouge_types for f in ("precision", "recall", "f") for a in ("avg", "max")]
    result = {key: (sum(row[key] for row in rows) / len(rows) if rows else 0.0) for key in keys}
    for rouge_type in rouge_types:
        result[f"{rouge_type}_recall"] = result[f"{rouge_type}_recall_max"]
        result[f"{rouge_type}_f"] = result[f"{rouge_type}_f_max"]
    return result


class Rouge(evaluate.Metric):
    """``evaluate`` wrapper of :func:`rouge`; loads offline."""

    def compute(self, *, predictions=None, references=None, **kwargs):
        """``evaluate.Metric.compute``; empty ``predictions`` are an error, not a score."""
        # evaluate infers the input format from the first example: with two formats and no example
        # it fails with an IndexError of its own, so refuse empty input here, by name
        if predictions is not None and not isinstance(predictions, str) and len(predictions) == 0:
            raise InvalidInputError("rouge: no predictions to score (predictions=[]); pass at least one")
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
                datasets.Features(
                    {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
                ),
            ],
        )

    def _compute(
        self, predictions, references, rouge_types=ROUGE_TYPES, use_stemmer=False
    ) -> dict[str, float]:
        return rouge(predictions, references, rouge_types=rouge_types, use_stemmer=use_stemmer)
