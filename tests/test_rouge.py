"""The offline ROUGE module against hand-computed values."""

import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.rouge import Rouge, rouge, rouge_per_example


def test_worked_example_by_hand():
    # prediction "the cat sat", reference "the cat sat on the mat":
    # unigrams: 3 of 3 predicted words match, 3 of 6 reference words -> P=1, R=0.5, F=2/3
    # bigrams: "the cat", "cat sat" both in the reference (5 bigrams) -> P=1, R=2/5
    # LCS = 3 -> same as unigrams
    scores = rouge(["the cat sat"], ["the cat sat on the mat"])
    assert scores["rouge1_precision_max"] == pytest.approx(1.0)
    assert scores["rouge1_recall_max"] == pytest.approx(0.5)
    assert scores["rouge1_f_max"] == pytest.approx(2 / 3)
    assert scores["rouge2_recall_max"] == pytest.approx(2 / 5)
    assert scores["rougeL_recall"] == pytest.approx(0.5)


def test_avg_and_max_over_references():
    # reference 1 matches fully (R=1), reference 2 shares "cat" of its 2 words (R=0.5)
    rows = rouge_per_example(["cat sat"], [["cat sat", "cat ran"]])
    assert rows[0]["rouge1_recall_max"] == pytest.approx(1.0)
    assert rows[0]["rouge1_recall_avg"] == pytest.approx(0.75)


def test_empty_prediction_scores_zero_and_bad_input_is_named():
    assert rouge([""], ["a b"])["rougeL_f"] == 0.0
    with pytest.raises(InvalidInputError, match="2 predictions but 1 references"):
        rouge(["a", "b"], ["a"])
    with pytest.raises(InvalidInputError, match=r"references\[0\]"):
        rouge(["a"], [3])


def test_evaluate_module_matches_function():
    metric = Rouge()
    result = metric.compute(predictions=["the cat sat"], references=[["the cat sat on the mat", "a dog"]])
    assert result["rouge1_recall_max"] == pytest.approx(0.5)
