"""Hypothesis fuzzing of the text inputs: normalisers, metrics, the word tokenizer, config
construction and the corpus reader layer.

Properties, not examples: any Unicode text is accepted or refused with
:class:`~hf_querygen.errors.InvalidInputError` naming the argument (never a bare TypeError /
IndexError), scores stay in [0, 1], a perfect prediction scores 1, reading any bytes leniently
never raises and numbers lines as editors do. The default run is small; ``HF_QUERYGEN_FUZZ=nightly``
raises ``max_examples`` (hypothesis profiles below).
"""

from __future__ import annotations

import math
import os
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_querygen.corpora._base import ParseLog, collapse_whitespace, find_misalignment, iter_lines
from hf_querygen.corpora._base import normalize_for_matching as normalize
from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.exact_match import exact_match
from hf_querygen.metrics.keyword_prf import keyword_prf
from hf_querygen.metrics.rouge import MAX_WORDS, rouge
from hf_querygen.metrics.sacrebleu_metric import corpus_bleu
from hf_querygen.metrics.segmentation_scores import segmentation_scores
from hf_querygen.models.dual_decoder.configuration_dual_decoder import DualDecoderConfig
from hf_querygen.models.joint_seq2seq_tagger.configuration_joint_seq2seq_tagger import (
    JointSeq2SeqTaggerConfig,
)
from hf_querygen.models.rnn_seq2seq.configuration_rnn_seq2seq import RNNSeq2SeqConfig
from hf_querygen.models.rnn_tagger.configuration_rnn_tagger import RNNTaggerConfig

settings.register_profile(
    "default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nightly", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("nightly" if os.environ.get("HF_QUERYGEN_FUZZ") == "nightly" else "default")

# any Unicode (surrogates excluded: they cannot be encoded, no file or pipeline can hand them to us)
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
words = st.lists(st.text("abcdefghij", min_size=1, max_size=6), min_size=1, max_size=8)
not_a_string = st.one_of(st.none(), st.integers(), st.floats(), st.binary(max_size=5), st.booleans())


# ---------------------------------------------------------------- normalisers
@given(text)
def test_normalize_for_matching_is_idempotent_and_whitespace_free(value):
    once = normalize(value)
    assert normalize(once) == once
    assert all(token and not any(c.isspace() for c in token) for token in once.split(" ") if once)


@given(text)
def test_collapse_whitespace(value):
    collapsed = collapse_whitespace(value)
    assert collapsed == collapsed.strip() and "  " not in collapsed and collapsed.split() == value.split()


# ---------------------------------------------------------------- metrics
@given(st.lists(text, min_size=1, max_size=5), st.lists(text, min_size=1, max_size=5))
def test_keyword_prf_scores_stay_in_range(predictions, references):
    references = (references * len(predictions))[: len(predictions)]
    result = keyword_prf(predictions, references)
    for key in ("precision", "recall", "f1", "pooled_precision", "pooled_recall", "pooled_f1"):
        assert 0.0 <= result[key] <= 1.0
    assert keyword_prf(references, references)["f1"] == 1.0


@given(not_a_string)
def test_metrics_name_a_bad_item(bad):
    for metric, kwargs in (
        (keyword_prf, {}),
        (exact_match, {}),
        (corpus_bleu, {}),
        (rouge, {}),
    ):
        with pytest.raises(InvalidInputError, match=r"predictions\[1\]"):
            metric(["ok", bad], ["ok", "ok"], **kwargs)
        with pytest.raises(InvalidInputError, match="references"):
            metric(["ok"], "ok", **kwargs)


@given(st.lists(text, min_size=1, max_size=4))
def test_bleu_and_exact_match_of_a_perfect_prediction(predictions):
    assert exact_match(predictions, predictions)["exact_match"] == 1.0
    result = corpus_bleu(predictions, predictions, max_order=1)
    assert 0.0 <= result["bleu"] <= 1.0
    if any(p.split() for p in predictions):
        assert math.isclose(result["bleu"], 1.0)


@settings(max_examples=10)
@given(st.lists(text, min_size=1, max_size=3))
def test_rouge_of_any_text(predictions):
    result = rouge(predictions, [[p, "x"] for p in predictions])
    assert all(0.0 <= value <= 1.0 for value in result.values())


@given(words, st.lists(st.booleans(), max_size=8), st.lists(st.booleans(), max_size=8))
def test_segmentation_scores(query_words, breaks_a, breaks_b):
    def segmentation(breaks):
        out = query_words[0]
        for word, cut in zip(query_words[1:], breaks + [False] * len(query_words), strict=False):
            out += ("|" if cut else " ") + word
        return out

    a, b = segmentation(breaks_a), segmentation(breaks_b)
    scores = segmentation_scores([a], [b])
    assert all(0.0 <= scores[k] <= 1.0 for k in ("query_accuracy", "break_accuracy", "segment_f1"))
    assert segmentation_scores([a], [a])["query_accuracy"] == 1.0


def test_segmentation_of_other_words_is_refused_with_the_position():
    with pytest.raises(InvalidInputError, match=r"predictions\[0\] spells 'a b'"):
        segmentation_scores(["a|b"], ["a|c"])
    with pytest.raises(InvalidInputError, match="empty segment"):
        segmentation_scores(["a||b"], ["a|b"])


# ---------------------------------------------------------------- tokenizer
@pytest.fixture(scope="module")
def tokenizer():
    from hf_querygen.tokenization import train_word_tokenizer

    return train_word_tokenizer(["where to go in beijing", "what is the weather"], vocab_size=40)


@given(text)
def test_word_tokenizer_on_any_text(tokenizer, value):
    from hf_querygen.tokenization import word_tokenize

    ids = tokenizer(value)["input_ids"]
    assert ids[-1] == tokenizer.eos_token_id
    assert len(word_tokenize(tokenizer, value)) == len(ids) - 1


# ---------------------------------------------------------------- config construction
CONFIGS = (RNNSeq2SeqConfig, DualDecoderConfig, RNNTaggerConfig, JointSeq2SeqTaggerConfig)
ARGUMENTS = {
    RNNSeq2SeqConfig: [
        "vocab_size",
        "hidden_size",
        "cell",
        "attention",
        "dropout",
        "bridge",
        "copy",
        "bos_token_id",
    ],
    DualDecoderConfig: [
        "vocab_size",
        "hidden_size",
        "dropout",
        "loss_lambda",
        "pointer_only",
        "eos_token_id",
    ],
    RNNTaggerConfig: ["vocab_size", "num_layers", "cell", "bidirectional", "dropout", "pad_token_id"],
    JointSeq2SeqTaggerConfig: ["num_tag_labels", "tag_loss_weight", "hidden_size", "copy"],
}
any_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 100),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_config_construction_fails_early_and_names_the_argument(config_class, data):
    name = data.draw(st.sampled_from(ARGUMENTS[config_class]))
    value = data.draw(any_value)
    try:
        config = config_class(**{name: value})
    except InvalidInputError as err:
        assert name in str(err) or "special token ids" in str(err), str(err)
        assert config_class.__name__ in str(err)
    else:  # accepted: the value is stored as given (or the documented default for None)
        assert getattr(config, name, value) == value or value is None or isinstance(value, float)


# ---------------------------------------------------------------- the reader layer
@given(st.binary(max_size=300))
def test_lenient_line_reader_on_any_bytes(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("raw") / "file.txt"
    path.write_bytes(raw)
    log = ParseLog(strict=False)
    lines = list(iter_lines(path, log, blank_is_error=True))
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    offset = 3 if body is not raw else 0
    for line in lines:
        # the line number is the editor's: one more than the LFs before the line's first byte
        assert line.number == raw.count(b"\n", 0, line.offset) + 1
        assert "\n" not in line.text and line.text.strip()
        assert line.offset >= offset
    for error in log.errors:
        assert error.path == str(path)
        assert error.line is None or 1 <= error.line <= raw.count(b"\n") + 1


@given(st.lists(words, min_size=80, max_size=120), st.integers(5, 60))
def test_find_misalignment_locates_a_lost_line(pairs, lost):
    first = [" ".join(w) for w in pairs]
    second = [" ".join(reversed(w)) + " extra" for w in pairs]  # a pair shares all its words
    assert find_misalignment(first, second) is None
    shifted = second[:lost] + second[lost + 1 :]
    found = find_misalignment(first, shifted)
    # identical neighbouring lines cannot be told apart: only distinct neighbours fix the position
    if found is not None:
        assert found[0] <= lost + 1 + 8
    distinct = len({" ".join(sorted(w)) for w in pairs}) == len(pairs)
    if distinct and len(pairs) - lost > 60:
        assert found is not None and abs(found[0] - (lost + 1)) <= 1


# ---------------------------------------------------------------- resource limits
LONG = " ".join(f"word{i % 997}" for i in range(100_000))


@pytest.mark.parametrize(
    "call",
    [
        lambda: normalize(LONG),
        lambda: keyword_prf([LONG], [LONG]),
        lambda: exact_match([LONG], [LONG]),
        lambda: corpus_bleu([LONG], [LONG]),
        lambda: segmentation_scores([LONG], [LONG]),
    ],
    ids=["normalize", "keyword_prf", "exact_match", "bleu", "segmentation"],
)
def test_a_100000_word_input_is_linear(call):
    start = time.perf_counter()
    call()
    assert time.perf_counter() - start < 10  # about 0.1-1 s idle; generous for a loaded machine


def test_rouge_truncates_a_100000_word_input_with_a_warning():
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = rouge([LONG], [LONG], rouge_types=["rouge1", "rougeL"])
    assert any(f"MAX_WORDS={MAX_WORDS}" in str(w.message) for w in caught)
    assert result["rougeL_f"] == 1.0 and time.perf_counter() - start < 60


def test_a_100000_word_corpus_line(tmp_path):
    path = tmp_path / "long.tsv"
    path.write_text(f"1\t{LONG}\n2\tshort\n", encoding="utf-8")
    lines = list(iter_lines(path, ParseLog()))
    assert [line.number for line in lines] == [1, 2] and len(lines[0].text.split()) == 100_001
