"""Ranking metrics against values computed by hand from their definitions, and the paired test
against an exact enumeration of sign flips."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.retrieval import RetrievalMetrics, evaluate_run, paired_test, per_query_scores

QRELS = {"q1": {"a": 2, "b": 1, "x": 0}, "q2": {"c": 1}, "q3": {"d": 2}}
RUN = {"q1": ["b", "z", "a", "y"], "q2": ["y", "z", "w", "v", "c"], "q3": []}


def dcg(gains):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def test_metrics_equal_their_definitions():
    got = per_query_scores(RUN, QRELS, ["ndcg@3", "p@2", "hits@1", "hits@5", "mrr", "recall@3", "ndcg@10"])
    assert got["ndcg@3"]["q1"] == pytest.approx(dcg([1, 0, 2]) / dcg([2, 1]))
    assert got["ndcg@10"]["q2"] == pytest.approx(dcg([0, 0, 0, 0, 1]) / dcg([1]))
    assert got["p@2"]["q1"] == pytest.approx(0.5)
    assert got["hits@1"] == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert got["hits@5"]["q2"] == 1.0
    assert got["mrr"]["q2"] == pytest.approx(1 / 5)
    assert got["recall@3"]["q1"] == pytest.approx(1.0) and got["recall@3"]["q2"] == 0.0
    # q3 has an empty run: it still counts, as 0, in the mean over the qrels' queries
    means = evaluate_run(RUN, QRELS, ["hits@5"])
    assert means["hits@5"] == pytest.approx(2 / 3)


def test_ranking_is_evaluated_as_given_not_re_sorted_by_doc_id():
    qrels = {"q": {"a": 1}}
    assert per_query_scores({"q": ["b", "a"]}, qrels, ["mrr"])["mrr"]["q"] == pytest.approx(0.5)
    assert per_query_scores({"q": ["a", "b"]}, qrels, ["mrr"])["mrr"]["q"] == pytest.approx(1.0)


def test_relevance_level_for_binary_metrics():
    got = per_query_scores(RUN, QRELS, ["p@1"], relevance_level=2)
    assert got["p@1"]["q1"] == 0.0  # "b" has grade 1 < 2


def test_bad_metric_names_and_runs():
    with pytest.raises(InvalidInputError, match="unknown retrieval metric"):
        evaluate_run(RUN, QRELS, ["bleu"])
    with pytest.raises(InvalidInputError, match="needs a cutoff"):
        evaluate_run(RUN, QRELS, ["p"])
    with pytest.raises(InvalidInputError, match="twice"):
        evaluate_run({"q1": ["a", "a"]}, QRELS, ["p@1"])


def test_paired_permutation_test_is_exact_randomization():
    x = np.array([0.9, 0.5, 0.7, 0.3, 0.8, 0.6, 0.4])
    y = np.array([0.2, 0.4, 0.1, 0.35, 0.3, 0.5, 0.45])
    observed = abs(np.mean(x - y))
    flips = [np.mean(np.array(signs) * (x - y)) for signs in itertools.product([1, -1], repeat=len(x))]
    exact = np.mean([abs(f) >= observed - 1e-12 for f in flips])
    result = paired_test(x, y, method="permutation")
    assert result["p_value"] == pytest.approx(exact)
    assert result["mean_difference"] == pytest.approx(np.mean(x - y))
    assert paired_test(x, x)["p_value"] == 1.0
    assert 0 < paired_test(x, y, method="ttest")["p_value"] < 0.1
    keyed = paired_test({"a": 1.0, "b": 0.5}, {"b": 0.5, "a": 0.0})
    assert keyed["mean_difference"] == pytest.approx(0.5)
    with pytest.raises(InvalidInputError, match="different queries"):
        paired_test({"a": 1.0, "b": 0.5}, {"a": 1.0, "c": 0.5})


def test_evaluate_metric_module():
    metric = RetrievalMetrics()
    result = metric.compute(
        predictions=[["b", "z", "a"], ["c"]],
        references=[{"doc_ids": ["a", "b"], "relevance": [2, 1]}, {"doc_ids": ["c"], "relevance": [1]}],
        metrics=["hits@1", "ndcg@3"],
    )
    assert result["hits@1"] == pytest.approx(1.0)
    assert result["ndcg@3"] == pytest.approx((dcg([1, 0, 2]) / dcg([2, 1]) + 1.0) / 2)
