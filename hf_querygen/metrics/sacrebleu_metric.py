"""Corpus BLEU through sacrebleu (Post, WMT 2018), with several references and its signature.

Ding & Balog ICTIR'18 (Table 2, Fig. 5) report BLEU; sacrebleu makes the number reproducible: the
returned ``signature`` (e.g. ``nrefs:var|case:lc|eff:no|tok:13a|smooth:exp|version:2.6.0``) records
the tokenizer, casing, smoothing and version. ``nrefs:var`` when the examples have different numbers
of references (sacrebleu skips the missing ones: ``None`` in a reference stream).

:func:`sacre_bleu` is the implementation; :class:`SacreBleu` is an offline ``evaluate.Metric``
wrapper (``evaluate.load("<path to this file>")``; ``evaluate.load("sacrebleu")`` needs the Hub).
``bleu`` is on sacrebleu's 0-100 scale divided by 100, like the paper's 0.2780.

:func:`corpus_bleu` is the same BLEU over whitespace words (``tok:none``), without smoothing unless
asked: the generic score the trainers and the text2text task report for any generated text.
"""

from __future__ import annotations

from collections.abc import Sequence

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError  # absolute: evaluate.load copies this file
from hf_querygen.validation import check_string_list

__all__ = ["SacreBleu", "corpus_bleu", "sacre_bleu"]

_CITATION = """\
@inproceedings{post-2018-call,
  title={A Call for Clarity in Reporting {BLEU} Scores}, author={Post, Matt},
  booktitle={Proceedings of the Third Conference on Machine Translation}, year={2018}
}
"""
_DESCRIPTION = "sacrebleu corpus BLEU (0-1 scale) with its signature; several references per prediction."
_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated strings.
    references: list of gold strings, or list of lists of gold strings.
    lowercase: case-insensitive BLEU (default True).
    tokenize: sacrebleu tokenizer (default "13a").
    smooth_method: "exp" (default), "floor", "add-k" or "none".
Returns:
    bleu (0-1), score (0-100), precisions (0-100 per order), brevity_penalty, sys_len, ref_len, signature.
"""


def sacre_bleu(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    lowercase: bool = True,
    tokenize: str = "13a",
    smooth_method: str = "exp",
    max_order: int = 4,
) -> dict:
    """Corpus BLEU of ``predictions`` against their references (see the module docstring)."""
    from sacrebleu.metrics import BLEU

    if isinstance(predictions, str) or isinstance(references, str):
        raise InvalidInputError(
            "sacre_bleu: predictions and references must be lists (one entry per example)"
        )
    check_string_list("bleu", "predictions", predictions)  # names the argument and the item
    check_string_list("bleu", "references", references, allow_nested=True)
    if len(predictions) != len(references):
        raise InvalidInputError(
            f"sacre_bleu: {len(predictions)} predictions but {len(references)} references"
        )
    ref_lists = []
    for i, refs in enumerate(references):
        refs = [refs] if isinstance(refs, str) else list(refs)
        if not refs or not all(isinstance(r, str) for r in refs):
            raise InvalidInputError(
                f"sacre_bleu: references[{i}] must be a non-empty string or list of strings"
            )
        ref_lists.append(refs)
    for i, p in enumerate(predictions):
        if not isinstance(p, str):
            raise InvalidInputError(f"sacre_bleu: predictions[{i}] must be a string, got {type(p).__name__}")
    if isinstance(max_order, bool) or not isinstance(max_order, int) or max_order < 1:
        raise InvalidInputError(f"sacre_bleu: max_order must be an integer >= 1, got {max_order!r}")
    if not ref_lists:  # no example: no n-gram to count (as rouge, a result of zeros, not an error)
        return {
            "bleu": 0.0,
            "score": 0.0,
            "precisions": [0.0] * max_order,
            "brevity_penalty": 0.0,
            "sys_len": 0,
            "ref_len": 0,
            "signature": "no examples",
        }
    width = max((len(r) for r in ref_lists), default=0)
    # sacrebleu wants reference *streams*: stream j holds the j-th reference of every example
    streams = [[r[j] if j < len(r) else None for r in ref_lists] for j in range(width)]
    metric = BLEU(
        lowercase=lowercase, tokenize=tokenize, smooth_method=smooth_method, max_ngram_order=max_order
    )
    result = metric.corpus_score(list(predictions), streams)
    return {
        # exp(mean(log p)) of perfect precisions can round to 1 + 1e-16: keep BLEU in [0, 1]
        "bleu": min(result.score / 100.0, 1.0),
        "score": result.score,
        "precisions": list(result.precisions),
        "brevity_penalty": result.bp,
        "sys_len": result.sys_len,
        "ref_len": result.ref_len,
        "signature": str(metric.get_signature()),
    }


def corpus_bleu(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    max_order: int = 4,
    smooth: bool = False,
    lowercase: bool = True,
) -> dict:
    """Corpus BLEU (Papineni et al. 2002) over whitespace-separated words, several references allowed.

    ``smooth=True`` adds one to the matches and the total of every order n > 1 (Lin & Och 2004;
    sacrebleu's ``add-k``), which keeps short keyword-like outputs from scoring 0 whenever no 4-gram
    matches. Returns :func:`sacre_bleu`'s dictionary (``bleu`` on the 0-1 scale, ``signature``).
    """
    if not isinstance(smooth, bool):
        raise InvalidInputError(f"corpus_bleu: smooth must be True or False, got {smooth!r}")
    return sacre_bleu(
        predictions,
        references,
        lowercase=lowercase,
        tokenize="none",
        smooth_method="add-k" if smooth else "none",
        max_order=max_order,
    )


class SacreBleu(evaluate.Metric):
    def compute(self, *, predictions=None, references=None, **kwargs):
        """``evaluate.Metric.compute``; empty ``predictions`` are an error, not a score."""
        # evaluate infers the input format from the first example: with two formats and no example
        # it fails with an IndexError of its own, so refuse empty input here, by name
        if predictions is not None and not isinstance(predictions, str) and len(predictions) == 0:
            raise InvalidInputError("sacre_bleu: no predictions to score (predictions=[]); pass at least one")
        return super().compute(predictions=predictions, references=references, **kwargs)

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
        self,
        predictions,
        references,
        lowercase: bool = True,
        tokenize: str = "13a",
        smooth_method: str = "exp",
    ):
        return sacre_bleu(predictions, references, lowercase, tokenize, smooth_method)
