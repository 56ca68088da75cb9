"""The library's one BLEU (sacrebleu) against an independent, test-only textbook implementation."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.sacrebleu_metric import corpus_bleu, sacre_bleu

PREDICTIONS = ["what is the capital of france", "who wrote the hobbit book", "how tall is it now"]
REFERENCES = [
    ["what is the capital city of france", "which city is the capital of france"],
    ["who is the author of the hobbit book"],
    ["how tall is the eiffel tower now", "how high is it now"],
]


def reference_bleu(predictions, references, max_order=4, smooth=False):
    """Papineni et al. (2002) written out: clipped n-gram matches pooled over the corpus, closest
    reference length (ties to the shorter), brevity penalty; add-one for n > 1 when ``smooth``."""

    def ngrams(words, n):
        return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))

    matches, possible = [0] * max_order, [0] * max_order
    c = r = 0
    for prediction, refs in zip(predictions, references, strict=True):
        cand = prediction.lower().split()
        golds = [g.lower().split() for g in ([refs] if isinstance(refs, str) else refs)]
        c += len(cand)
        r += min((abs(len(g) - len(cand)), len(g)) for g in golds)[1]
        for n in range(1, max_order + 1):
            best: Counter = Counter()
            for g in golds:
                best |= ngrams(g, n)
            matches[n - 1] += sum(min(k, best[gram]) for gram, k in ngrams(cand, n).items())
            possible[n - 1] += max(len(cand) - n + 1, 0)
    p = [
        (matches[n] + 1) / (possible[n] + 1) if smooth and n > 0 else matches[n] / possible[n]
        for n in range(max_order)
    ]
    if min(p) == 0:
        return 0.0
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(sum(math.log(x) for x in p) / max_order)


@pytest.mark.parametrize("max_order", [1, 2, 4])
@pytest.mark.parametrize("smooth", [False, True])
def test_corpus_bleu_equals_the_textbook_definition(max_order, smooth):
    ours = corpus_bleu(PREDICTIONS, REFERENCES, max_order=max_order, smooth=smooth)
    assert ours["bleu"] == pytest.approx(reference_bleu(PREDICTIONS, REFERENCES, max_order, smooth), abs=1e-9)
    assert ours["signature"].startswith("nrefs:var|case:lc|eff:no|tok:none")


def test_sacre_bleu_reports_its_signature_and_scores_a_perfect_match_one():
    ours = sacre_bleu(PREDICTIONS, REFERENCES, tokenize="none", smooth_method="none")
    assert ours["bleu"] == pytest.approx(reference_bleu(PREDICTIONS, REFERENCES), abs=1e-9)
    assert ours["signature"].startswith("nrefs:var|case:lc|eff:no|tok:none|smooth:none")
    assert sacre_bleu(["a b c d"], ["a b c d"])["bleu"] == pytest.approx(1.0)


def test_bleu_rejects_bad_input_with_a_clear_message():
    with pytest.raises(InvalidInputError, match=r"references\[0\]"):
        sacre_bleu(["a"], [[]])
    with pytest.raises(InvalidInputError, match="max_order"):
        corpus_bleu(["a"], ["a"], max_order=0)
    with pytest.raises(InvalidInputError, match="smooth"):
        corpus_bleu(["a"], ["a"], smooth="yes")
