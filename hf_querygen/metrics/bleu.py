"""Corpus BLEU (Papineni et al., ACL 2002) over whitespace-separated words, with multiple references.

BLEU = BP * exp(sum_n w_n log p_n), p_n the clipped n-gram precision pooled over the corpus,
BP = min(1, exp(1 - r / c)) with r the summed closest reference lengths and c the candidate length.
``smooth=True`` adds one to numerator and denominator of p_n for n > 1 (Lin & Och 2004), which keeps
short keyword-like outputs from scoring 0 whenever no 4-gram matches.

:func:`corpus_bleu` is the implementation; :class:`Bleu` is a thin ``evaluate.Metric`` wrapper,
loadable offline with ``evaluate.load("<path to this file>")``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError
from hf_querygen.validation import check_bool, check_int, check_string_list

_CITATION = """\
@inproceedings{papineni2002bleu,
  title={BLEU: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={ACL}, year={2002}
}
"""
_DESCRIPTION = "Corpus-level BLEU over whitespace tokens (lowercased by default), several references allowed."
_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated strings.
    references: list of gold strings, or list of lists of gold strings.
    max_order: longest n-gram (default 4).
    smooth: add-one smoothing for n > 1 (default False).
    lowercase: lowercase before splitting (default True).
Returns:
    bleu, precisions (list per order), brevity_penalty, length_ratio, translation_length,
    reference_length.
"""


def _ngrams(words: Sequence[str], order: int) -> Counter:
    return Counter(tuple(words[i : i + order]) for i in range(len(words) - order + 1))


def corpus_bleu(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    max_order: int = 4,
    smooth: bool = False,
    lowercase: bool = True,
) -> dict:
    """Corpus BLEU with clipped n-gram counts and the brevity penalty (see module docstring)."""
    check_string_list("bleu", "predictions", predictions)
    check_string_list("bleu", "references", references, allow_nested=True)
    if len(predictions) != len(references):
        raise InvalidInputError(f"bleu: {len(predictions)} predictions but {len(references)} references")
    check_int("bleu", "max_order", max_order, minimum=1)
    check_bool("bleu", "smooth", smooth)
    check_bool("bleu", "lowercase", lowercase)

    def split(text: str) -> list[str]:
        return (text.lower() if lowercase else text).split()

    matches, possible = [0] * max_order, [0] * max_order
    candidate_length = reference_length = 0
    for prediction, reference in zip(predictions, references, strict=True):
        candidate = split(prediction)
        golds = [split(r) for r in ([reference] if isinstance(reference, str) else reference)]
        if not golds:
            raise InvalidInputError("bleu: a prediction has an empty list of references")
        candidate_length += len(candidate)
        # closest reference length, ties to the shorter one (as Papineni et al. / sacrebleu)
        reference_length += min((abs(len(g) - len(candidate)), len(g)) for g in golds)[1]
        for n in range(1, max_order + 1):
            counts = _ngrams(candidate, n)
            max_ref_counts: Counter = Counter()
            for gold in golds:
                max_ref_counts |= _ngrams(gold, n)
            matches[n - 1] += sum(min(c, max_ref_counts[g]) for g, c in counts.items())
            possible[n - 1] += max(len(candidate) - n + 1, 0)

    precisions = []
    for n in range(max_order):
        if smooth and n > 0:
            precisions.append((matches[n] + 1) / (possible[n] + 1))
        else:
            precisions.append(matches[n] / possible[n] if possible[n] else 0.0)
    if min(precisions) > 0:
        geo_mean = math.exp(sum(math.log(p) for p in precisions) / max_order)
    else:
        geo_mean = 0.0
    ratio = candidate_length / reference_length if reference_length else 0.0
    brevity_penalty = 1.0 if ratio > 1.0 else (math.exp(1 - 1 / ratio) if ratio > 0 else 0.0)
    return {
        "bleu": geo_mean * brevity_penalty,
        "precisions": precisions,
        "brevity_penalty": brevity_penalty,
        "length_ratio": ratio,
        "translation_length": candidate_length,
        "reference_length": reference_length,
    }


class Bleu(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
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

    def _compute(
        self, predictions, references, max_order: int = 4, smooth: bool = False, lowercase: bool = True
    ):
        return corpus_bleu(predictions, references, max_order=max_order, smooth=smooth, lowercase=lowercase)
