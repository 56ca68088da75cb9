"""keyword_prf: Liu'18 keyword P/R/F1 (per query and pooled), Table 3 recalls, Fig. 5 buckets."""

import math
from pathlib import Path

import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.keyword_prf import (
    extractive_generative_recall,
    f1_by_length,
    keyword_prf,
    keyword_words,
    query_counts,
)

METRIC_FILE = Path(__file__).resolve().parents[1] / "hf_querygen" / "metrics" / "keyword_prf.py"


def test_keyword_words_normalise_and_deduplicate():
    # the corpus normaliser: case-folded, punctuation split, apostrophes dropped
    assert keyword_words("Beijing, SIGHTSEEING beijing") == ["beijing", "sightseeing"]
    assert keyword_words(["New York", "hotels", "new"]) == ["new", "york", "hotels"]
    assert keyword_words("What's up?") == ["whats", "up"]
    with pytest.raises(InvalidInputError, match=r"keywords\[1\]=3 \(int\)"):
        keyword_words(["ok", 3])


def test_per_query_and_pooled_averages_differ_as_defined():
    predictions = ["a b", "c d e f"]
    references = ["a x", "c d e f"]
    result = keyword_prf(predictions, references, normalize=str.lower)
    # query 1: P = R = 1/2; query 2: P = R = 1
    assert result["precision"] == pytest.approx(0.75)
    assert result["recall"] == pytest.approx(0.75)
    assert result["f1"] == pytest.approx(0.75)
    # pooled: 5 correct of 6 predicted and 6 gold
    assert result["pooled_precision"] == pytest.approx(5 / 6)
    assert result["pooled_recall"] == pytest.approx(5 / 6)
    assert result["n_queries"] == 2
    assert all(type(v) in (float, int) for v in result.values())


def test_empty_prediction_scores_zero_and_f1_is_harmonic():
    counts = query_counts("", "a b", normalize=str.lower)
    assert (counts.precision, counts.recall, counts.f1) == (0.0, 0.0, 0.0)
    counts = query_counts("a b c d", "a", normalize=str.lower)
    assert counts.precision == 0.25 and counts.recall == 1.0
    assert counts.f1 == pytest.approx(2 * 0.25 / 1.25)


def test_table3_recalls_split_gold_by_source_occurrence():
    sources = ["where to go in beijing", "cheap flights"]
    references = ["beijing sightseeing", "flights airfare"]
    predictions = ["beijing", "airfare"]
    recalls = extractive_generative_recall(predictions, references, sources)
    # extractive gold: beijing, flights (1 of 2 found); generative: sightseeing, airfare (1 of 2)
    assert recalls["recall_extractive"] == pytest.approx(0.5)
    assert recalls["recall_generative"] == pytest.approx(0.5)
    assert recalls["recall_total"] == pytest.approx(0.5)
    assert (recalls["n_gold_extractive"], recalls["n_gold_generative"]) == (2, 2)
    full = keyword_prf(predictions, references, sources=sources)
    assert full["recall_total"] == pytest.approx(full["pooled_recall"])


def test_mismatched_lengths_fail_clearly():
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        keyword_prf(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no predictions"):
        keyword_prf([], [])


def test_f1_by_length_buckets():
    sources = ["one two", "one two three four", "a b c d e f g"]
    buckets = f1_by_length(["one", "x", "a"], ["one", "y", "a"], sources, bin_edges=[1, 3, 6, 10])
    assert [b["bucket"] for b in buckets] == ["1-2", "3-5", "6-9", "10+"]
    assert [b["n"] for b in buckets] == [1, 1, 1, 0]
    assert [b["f1"] for b in buckets[:3]] == [1.0, 0.0, 1.0]
    assert math.isnan(buckets[3]["f1"])
    with pytest.raises(ValueError, match="strictly increasing"):
        f1_by_length(["a"], ["a"], ["a"], bin_edges=[3, 1])


def test_evaluate_load_by_file_path_offline():
    import evaluate

    metric = evaluate.load(str(METRIC_FILE))
    result = metric.compute(
        predictions=["beijing sightseeing", "flights"],
        references=["beijing sightseeing", "cheap flights"],
        sources=["where to go in beijing", "cheap flights please"],
    )
    assert result["f1"] == pytest.approx((1.0 + 2 / 3) / 2)
    assert result["recall_extractive"] == pytest.approx(2 / 3)
    assert result["recall_generative"] == pytest.approx(1.0)
