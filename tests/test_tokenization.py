"""Word-level tokenizer: vocabulary order, output vocabulary, normalisation, AutoTokenizer round trip,
Chinese segmentation."""

import sys

import pytest
from transformers import AutoTokenizer

import hf_querygen  # noqa: F401  (registers the tokenizer class with AutoTokenizer)
from hf_querygen.errors import InvalidInputError
from hf_querygen.tokenization import (
    SPECIAL_TOKENS,
    JiebaWordTokenizer,
    output_vocab_size_of,
    train_word_tokenizer,
    word_tokenize,
)

SOURCES = [
    "What is the capital of France?",
    "What is the population of Paris?",
    "Who wrote the play Hamlet?",
]
TARGETS = ["france capital", "paris population", "hamlet author author"]


def test_specials_then_target_words_by_frequency_then_source_words():
    tokenizer = train_word_tokenizer(SOURCES, target_texts=TARGETS)
    vocab = tokenizer.get_vocab()
    assert [vocab[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    by_id = sorted(vocab, key=vocab.get)
    # "author" is the most frequent target word; the other target words follow in first-seen order
    assert by_id[4:10] == ["author", "france", "capital", "paris", "population", "hamlet"]
    # then source-only words, most frequent first: "the" and "?" 3 times, "what", "is", "of" twice
    assert by_id[10:12] == ["the", "?"] and set(by_id[12:15]) == {"what", "is", "of"}
    assert output_vocab_size_of(tokenizer) == 10  # specials + every target word by default
    assert len(tokenizer) == len(vocab)


def test_vocab_size_min_frequency_and_output_vocab_limits():
    tokenizer = train_word_tokenizer(SOURCES, TARGETS, vocab_size=8, output_vocab_size=6)
    assert len(tokenizer) == 8 and output_vocab_size_of(tokenizer) == 6
    frequent = train_word_tokenizer(SOURCES, TARGETS, min_frequency=2)
    assert set(frequent.get_vocab()) == set(SPECIAL_TOKENS) | {"author", "the", "what", "is", "of", "?"}
    with pytest.raises(ValueError, match="output_vocab_size=2"):
        train_word_tokenizer(SOURCES, TARGETS, output_vocab_size=2)
    with pytest.raises(ValueError, match="output_vocab_size=99"):
        train_word_tokenizer(SOURCES, TARGETS, output_vocab_size=99)
    with pytest.raises(InvalidInputError, match="target text #1"):
        train_word_tokenizer(SOURCES, ["ok", None])


def test_normalisation_eos_and_word_positions():
    tokenizer = train_word_tokenizer(SOURCES, TARGETS)
    text = "What is the Capital of ﬁnland?"  # NFKC turns the "ﬁ" ligature into "fi"
    words = word_tokenize(tokenizer, text)
    assert words == ["what", "is", "the", "capital", "of", "finland", "?"]
    ids = tokenizer(text)["input_ids"]
    assert len(ids) == len(words) + 1 and ids[-1] == tokenizer.eos_token_id
    assert ids[5] == tokenizer.unk_token_id  # position j of ids is word j
    assert tokenizer.convert_ids_to_tokens(ids[:5]) == words[:5]
    whitespace_only = train_word_tokenizer(["don't stop"], split_punctuation=False)
    assert word_tokenize(whitespace_only, "Don't  stop") == ["don't", "stop"]


def test_save_and_load_with_autotokenizer(tmp_path):
    tokenizer = train_word_tokenizer(SOURCES, TARGETS, output_vocab_size=7)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.get_vocab() == tokenizer.get_vocab()
    assert output_vocab_size_of(loaded) == 7
    texts = ["Who wrote Hamlet and Othello?", "population of FRANCE"]
    assert loaded(texts, padding=True)["input_ids"] == tokenizer(texts, padding=True)["input_ids"]
    assert word_tokenize(loaded, texts[0]) == word_tokenize(tokenizer, texts[0])
    assert (loaded.pad_token_id, loaded.unk_token_id, loaded.bos_token_id, loaded.eos_token_id) == (
        0,
        1,
        2,
        3,
    )


def test_chinese_segmentation_round_trip(tmp_path):
    pytest.importorskip("jieba")
    sources = ["我想知道北京天安门的历史", "北京是中国的首都"]
    tokenizer = train_word_tokenizer(
        sources, target_texts=["北京 历史", "中国 首都"], chinese_segmentation=True
    )
    assert isinstance(tokenizer, JiebaWordTokenizer)
    words = word_tokenize(tokenizer, "北京的历史")
    assert words == ["北京", "的", "历史"]  # words, not characters and not one unsplit run
    ids = tokenizer("北京的历史")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == words + ["[EOS]"]
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert isinstance(loaded, JiebaWordTokenizer)
    assert (
        loaded(["北京的历史", "中国首都"])["input_ids"] == tokenizer(["北京的历史", "中国首都"])["input_ids"]
    )


def test_chinese_without_jieba_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)  # makes `import jieba` raise ImportError
    with pytest.raises(ImportError, match=r"hf-querygen\[zh\]"):
        train_word_tokenizer(["北京是中国的首都"], chinese_segmentation=True)
