"""Q2ID baselines (LexRank / LSA / TextRank through sumy on the library's splitters, copy-the-query, the
ROUGE oracle) and a ROUGE worked example computed by hand."""

import pytest

from hf_querygen.baselines.intent_description import (
    LibraryTokenizer,
    copy_query,
    extract_descriptions,
    extractive_summary,
    oracle_sentences,
)
from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.rouge import rouge

# the central sentence shares words with two others, which share nothing with each other
CENTRAL = "Amazon protection stops the burning of rain forests."
SENTENCES = [
    "Rich countries fund Amazon protection.",
    CENTRAL,
    "Burning rain forests releases carbon.",
    "My cat likes tuna.",
]
EXAMPLE = {
    "id": "toy",
    "query": "amazon rain forest",
    "description": "what measures protect the amazon rain forest",
    "relevant_documents": [{"sentences": SENTENCES[:2]}, {"sentences": SENTENCES[2:]}],
}


def test_rouge_worked_example_by_hand():
    """reference "the cat sat on the mat" (6 words), prediction "the cat is on the mat today" (7 words):
    unigram overlap the x2, cat, on, mat = 5 -> R1 recall 5/6, precision 5/7, F 10/13; bigram overlap
    "the cat", "on the", "the mat" = 3 of 5 reference / 6 predicted bigrams -> R2 recall 3/5, F 6/11;
    LCS "the cat on the mat" = 5 -> RL as R1."""
    scores = rouge(["the cat is on the mat today"], ["the cat sat on the mat"])
    assert scores["rouge1_recall"] == pytest.approx(5 / 6)
    assert scores["rouge1_precision_max"] == pytest.approx(5 / 7)
    assert scores["rouge1_f"] == pytest.approx(10 / 13)
    assert scores["rouge2_recall"] == pytest.approx(3 / 5)
    assert scores["rouge2_f"] == pytest.approx(6 / 11)
    assert scores["rougeL_recall"] == pytest.approx(5 / 6)
    assert scores["rougeL_f"] == pytest.approx(10 / 13)


def test_library_tokenizer_splits_without_punkt():
    tokenizer = LibraryTokenizer()
    assert tokenizer.to_sentences("Dr. Who came. He left! Fine") == ("Dr. Who came.", "He left!", "Fine")
    assert tokenizer.to_words("The 2 Amazon forests , burn.") == ("the", "amazon", "forests", "burn")


@pytest.mark.parametrize("method", ["lexrank", "textrank"])
def test_graph_rankers_pick_the_central_sentence(method):
    assert extractive_summary(SENTENCES, method) == CENTRAL


def test_extractive_methods_return_relevant_sentences():
    for method in ("lexrank", "lsa", "textrank"):
        (description,) = extract_descriptions([EXAMPLE], method)
        assert description in SENTENCES and description != SENTENCES[3]
        two = extractive_summary(SENTENCES, method, sentences_count=2)
        assert sum(sentence in two for sentence in SENTENCES) == 2
    with pytest.raises(InvalidInputError, match="unknown extractive method"):
        extract_descriptions([EXAMPLE], "luhnish")


def test_copy_query_and_oracle():
    assert copy_query([EXAMPLE]) == ["amazon rain forest"]
    (oracle,) = oracle_sentences([EXAMPLE])
    # the oracle maximises ROUGE-L F against the reference among the relevant sentences
    best = max(SENTENCES, key=lambda s: rouge([s], [EXAMPLE["description"]])["rougeL_f"])
    assert oracle == best
    with pytest.raises(InvalidInputError, match="no relevant_documents"):
        oracle_sentences([{**EXAMPLE, "relevant_documents": []}])
