"""q2id task encoding: caps (documents, sentences, words; truncate vs chunk), [EOS] and [UNK] handling, the
cap report counted by hand, and the tokenizer's output vocabulary."""

import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.q2id import Q2IDCaps, Q2IDCollator, cap_report, encode_q2id, train_q2id_tokenizer
from hf_querygen.tokenization import EOS_ID, UNK_ID

EXAMPLES = [
    {
        "query": "rain forest",
        "description": "protect the rain forest now",
        "relevant_documents": [
            {"sentences": ["a b c d e f g", "rain forest"]},
            {"sentences": ["forest fires", "", "b c"]},
            {"sentences": ["third document"]},
        ],
        "irrelevant_documents": [{"sentences": ["cats and dogs"]}],
    },
    {
        "query": "tuna",
        "description": "cat food",
        "relevant_documents": [{"sentences": ["cats like tuna"]}],
        "irrelevant_documents": [],
    },
]


@pytest.fixture(scope="module")
def tokenizer():
    import datasets

    return train_q2id_tokenizer(datasets.Dataset.from_list(EXAMPLES), output_vocab_size=9)


def _batch(examples):
    return {key: [example[key] for example in examples] for key in examples[0]}


def test_caps_truncate_or_chunk(tokenizer):
    caps = Q2IDCaps(max_relevant_documents=2, max_sentences_per_document=2, max_words_per_sentence=3)
    encoded = encode_q2id(_batch(EXAMPLES), tokenizer, caps)
    relevant = encoded["relevant_input_ids"][0]
    assert [len(document) for document in relevant] == [2, 2]  # 2 documents; chunks count as sentences
    assert [len(s) for s in relevant[0]] == [3, 3]  # "a b c d e f g" -> "a b c", "d e f" (cap 2 reached)
    assert [len(s) for s in relevant[1]] == [2, 2]  # the empty sentence is dropped and does not count
    truncated = encode_q2id(
        _batch(EXAMPLES),
        tokenizer,
        Q2IDCaps(max_sentences_per_document=2, max_words_per_sentence=3, long_sentences="truncate"),
    )
    assert [len(s) for s in truncated["relevant_input_ids"][0][0]] == [3, 2]
    assert encoded["irrelevant_input_ids"][1] == []
    assert encoded["input_ids"][0][-1] == EOS_ID and encoded["labels"][0][-1] == EOS_ID
    # 4 specials + the first 5 target words (all of example 1's) make the 9 output ids: "cat food" -> [UNK]
    assert encoded["labels"][1] == [UNK_ID, UNK_ID, EOS_ID] and UNK_ID not in encoded["labels"][0]


def test_cap_report_counts_by_hand(tokenizer):
    caps = Q2IDCaps(
        max_relevant_documents=2,
        max_irrelevant_documents=0,
        max_sentences_per_document=2,
        max_words_per_sentence=3,
    )
    report = cap_report(EXAMPLES, caps, tokenizer)
    # relevant words: 7 + 2 | 2 + 0 + 2 | 2 in example 1, 3 in example 2 = 18; kept: 3 + 3 | 2 + 2 and 3 = 13
    assert report["relevant"]["words"] == 18 and report["relevant"]["words_kept"] == 13
    assert report["relevant"]["documents_kept"] == 3 and report["relevant"]["documents"] == 4
    assert report["irrelevant"]["words_kept_fraction"] == 0.0
    assert report["query"]["words_kept_fraction"] == 1.0


def test_encoding_rejects_queries_without_relevant_text(tokenizer):
    with pytest.raises(InvalidInputError, match="no relevant document"):
        encode_q2id(_batch([{**EXAMPLES[1], "relevant_documents": [{"sentences": [""]}]}]), tokenizer)
    with pytest.raises(InvalidInputError, match="must be an integer"):
        Q2IDCaps(max_words_per_sentence=0)


def test_collated_real_encoding_runs_through_ctrsgen(tokenizer):
    import torch

    from hf_querygen.models.ctrsgen import CtrsGenConfig, CtrsGenForIntentDescription

    encoded = encode_q2id(_batch(EXAMPLES), tokenizer)
    batch = Q2IDCollator()([{key: values[i] for key, values in encoded.items()} for i in range(2)])
    torch.manual_seed(0)
    config = CtrsGenConfig(vocab_size=len(tokenizer), output_vocab_size=9, embedding_size=8, hidden_size=8)
    loss = CtrsGenForIntentDescription(config)(**batch).loss
    assert torch.isfinite(loss)


def test_prepare_min_frequency_sends_rare_words_to_unk():
    import datasets

    from hf_querygen.tasks.base import get_task

    task = get_task("q2id")
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_list(EXAMPLES)})
    default, every, frequent = (
        task.prepare(splits, **options).tokenizer
        for options in ({}, {"min_frequency": 1}, {"min_frequency": 2})
    )
    assert default.get_vocab() == every.get_vocab()  # the default keeps every word, as before
    assert len(frequent) < len(every)

    def ids(tokenizer, text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    # seen once: "protect" (a description), "third" and "a" (document sentences); twice: "cats", "b" and
    # "rain" (query + sentence), "forest"
    assert UNK_ID not in ids(every, "protect third a")
    assert ids(frequent, "protect third a") == [UNK_ID] * 3
    assert UNK_ID not in ids(frequent, "cats b rain forest")
    with pytest.raises(InvalidInputError, match="min_frequency"):
        task.prepare(splits, min_frequency=0)
