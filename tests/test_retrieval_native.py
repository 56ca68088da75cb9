"""The index build's C module (``hf_querygen/retrieval/_native.c``) against the library's references:
``analyze`` and ``json.dumps`` for the chunk encoder, the numpy statistics for the counting sort, the
postings and the pair table, and the Arrow build path for whole indexes (same arrays, same results)."""

from __future__ import annotations

import json
import os
import shutil
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_querygen.errors import InvalidInputError
from hf_querygen.retrieval import Index, analyze
from hf_querygen.retrieval.analysis import ASCII_ACTIONS, MAX_TERM_BYTES
from hf_querygen.retrieval.native import NO_NATIVE_ENV, load_native
from hf_querygen.retrieval.stats import ARRAYS, PAIR_ARRAYS, CollectionStats
from hf_querygen.retrieval.tantivy_backend import ROW_FIELD, TEXT_FIELD

native = load_native()
needs_native = pytest.mark.skipif(native is None, reason="the C module is not compiled here")


def arrow_path():
    """The build without the C module (Arrow analysis, numpy statistics)."""
    return mock.patch.dict(os.environ, {NO_NATIVE_ENV: "1"})


# texts that reach every branch: ASCII punctuation, apostrophes, every ASCII whitespace Python splits on,
# control characters inside terms (JSON escapes), quotes and backslashes, long terms on both sides of the
# limit, non-ASCII text (the Python analyzer), empty and whitespace-only documents
TEXT_PIECES = [
    "Red fox's",
    "it`s",
    'a"b',
    "c\\d",
    "x\x01y",
    "b\x08s",
    "\x7fdel",
    "tab\tsep",
    "v\x0bt\x1cu\x1fw",
    "\r\n\x0c",
    "Ünï",
    "ﬁne",
    "Straße",
    "é\x00",
    "q",
    "-_-",
    "",
    "   ",
    "z" * (MAX_TERM_BYTES - 1),
    "y" * MAX_TERM_BYTES,
    "é" * 130,
    "ÿ" * 127 + " ok",
]
texts_strategy = st.lists(
    st.one_of(
        st.lists(st.sampled_from(TEXT_PIECES), max_size=6).map(" ".join),
        st.text(alphabet=st.characters(max_codepoint=0x3000, exclude_categories=["Cs"]), max_size=20),
    ),
    max_size=12,
)


def test_the_c_module_is_built_where_a_c_compiler_is():
    # pip builds it as an optional extension: a compiler that fails on it would silently give the slow path
    if os.environ.get(NO_NATIVE_ENV, "") not in ("", "0"):
        pytest.skip(f"{NO_NATIVE_ENV} is set")
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the Arrow path is the build's")
    assert native is not None, "hf_querygen.retrieval._native did not compile: `pip install -e .` says why"


@needs_native
@settings(max_examples=80, deadline=None)
@given(chunks=st.lists(texts_strategy, max_size=4), first_row=st.integers(0, 2**40))
def test_chunk_encoder_is_analyze_and_json_dumps(chunks, first_row):
    encoder = native.ChunkEncoder(analyze, MAX_TERM_BYTES, ASCII_ACTIONS)
    reference: dict[str, int] = {}
    for chunk in chunks:
        documents, ids, lengths = encoder.encode(chunk, first_row, "test")
        terms = [analyze(text) for text in chunk]
        assert documents == [
            json.dumps(
                {ROW_FIELD: first_row + i, TEXT_FIELD: " ".join(t)}, ensure_ascii=False, separators=(",", ":")
            )
            for i, t in enumerate(terms)
        ]
        assert np.frombuffer(lengths, dtype=np.int64).tolist() == [len(t) for t in terms]
        # ids in order of first occurrence over every chunk the encoder saw
        expected = [reference.setdefault(term, len(reference)) for t in terms for term in t]
        assert np.frombuffer(ids, dtype=np.int32).tolist() == expected
    assert encoder.vocabulary() == list(reference) and len(encoder) == len(reference)


@needs_native
def test_chunk_encoder_names_a_non_string_and_passes_the_analyzers_errors():
    encoder = native.ChunkEncoder(analyze, MAX_TERM_BYTES, ASCII_ACTIONS)

    class Text(str):
        pass

    documents, _, _ = encoder.encode([Text("Sub Class"), Text("ünï")], 0, "where")  # str subclasses are text
    assert [json.loads(d)[TEXT_FIELD] for d in documents] == ["sub class", "ünï"]
    encoder = native.ChunkEncoder(analyze, MAX_TERM_BYTES, ASCII_ACTIONS)
    with pytest.raises(TypeError, match="where: text 2 is bytes, not a string"):
        encoder.encode(["a", "b", b"c"], 0, "where")
    with pytest.raises(UnicodeEncodeError):
        encoder.encode(["é \ud800"], 0, "where")
    with pytest.raises(TypeError, match="list of strings"):
        native.ChunkEncoder(lambda text: [1], MAX_TERM_BYTES, ASCII_ACTIONS).encode(["é"], 0, "where")
    with pytest.raises(ValueError, match="positive size"):
        native.ChunkEncoder(analyze, 0, ASCII_ACTIONS)
    for actions in (ASCII_ACTIONS[:-1], ASCII_ACTIONS[:-1] + b"\xe9"):  # too short; a non-ASCII character
        with pytest.raises(ValueError, match="ascii_actions must be 128 bytes"):
            native.ChunkEncoder(analyze, MAX_TERM_BYTES, actions)
    with pytest.raises(ValueError, match="first_row must be >= 0"):
        encoder.encode(["a"], -1, "where")
    assert len(encoder) == 0  # nothing numbered by the failed chunks' documents before the error
    encoder.encode(["a b"], 0, "where")
    assert encoder.vocabulary() == ["a", "b"]


@needs_native
def test_chunk_encoder_refuses_a_second_caller_while_it_runs():
    # its vocabulary and buffers are its own: an encode() that re-enters it (here from the Python analyzer,
    # which runs while the first call holds the encoder) is refused, and the encoder works again afterwards
    encoder = native.ChunkEncoder(
        lambda text: encoder.encode(["inner"], 0, "inner") or [], MAX_TERM_BYTES, ASCII_ACTIONS
    )
    with pytest.raises(RuntimeError, match="already running"):
        encoder.encode(["ok", "é"], 0, "outer")
    documents, _, _ = encoder.encode(["a b"], 0, "again")
    assert documents == ['{"row":0,"text":"a b"}'] and encoder.vocabulary() == ["a", "b"]


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ([b"x"], "text 0 is bytes"),
        (["ok", 3], "text 1 is int 3"),
        (["a", "b", "é \ud800 b"], r"text 2 has a lone surrogate '\\ud800' at character 2"),
    ],
)
@pytest.mark.parametrize("path", ["native", "arrow"])
def test_both_build_paths_reject_bad_texts_the_same_way_naming_the_texts_row(bad, named, path):
    if path == "native" and native is None:
        pytest.skip("the C module is not compiled here")
    with mock.patch.dict(os.environ, {NO_NATIVE_ENV: "1" if path == "arrow" else "0"}):
        with pytest.raises(InvalidInputError, match=r"Index.from_texts: " + named):
            Index.from_texts(bad, show_progress=False, num_threads=1, heap_size=15_000_000)


@needs_native
@settings(max_examples=60, deadline=None)
@given(
    documents=st.lists(st.lists(st.integers(0, 6), max_size=12), max_size=15),
    vocab_extra=st.integers(0, 3),
    pair_min_cf=st.sampled_from([1, 2, 10**9]),
)
def test_c_statistics_equal_numpys(documents, vocab_extra, pair_min_cf):
    # few distinct ids: repeated terms inside windows, runs of one document in a term's positions;
    # vocab_extra: ids that never occur (empty position ranges)
    vocab = [f"t{i}" for i in range(7 + vocab_extra)]
    tokens = np.array([t for doc in documents for t in doc], dtype=np.int32)
    lengths = np.array([len(doc) for doc in documents], dtype=np.int64)
    built = CollectionStats.from_token_ids(vocab, tokens, lengths, pair_min_cf=pair_min_cf)
    with arrow_path():
        reference = CollectionStats.from_token_ids(vocab, tokens, lengths, pair_min_cf=pair_min_cf)
    for name in ARRAYS + PAIR_ARRAYS:
        got, expected = getattr(built, name), getattr(reference, name)
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


@needs_native
def test_c_statistics_check_their_arguments():
    tokens, lengths = np.array([0, 1, 2], dtype=np.int32), np.array([2, 1], dtype=np.int64)
    out64, out32, ptr = np.empty(3, np.int64), np.empty(3, np.int32), np.empty(4, np.int64)
    with pytest.raises(ValueError, match="term ids in"):
        native.sort_positions(tokens, lengths, 2, out64, out32, np.empty(3, np.int64))  # id 2 of 2 terms
    with pytest.raises(ValueError, match="outputs of"):
        native.sort_positions(tokens, lengths, 3, np.empty(2, np.int64), out32, ptr)
    with pytest.raises(ValueError, match="sum to the tokens"):
        native.sort_positions(tokens, np.array([1, 1], dtype=np.int64), 3, out64, out32, ptr)
    # a negative length after lengths that already sum to the tokens: the walk would run past them
    past = np.array([3, -1, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="sum to the tokens"):
        native.sort_positions(tokens, past, 3, out64, out32, ptr)
    with pytest.raises(ValueError, match="lengths summing to the tokens"):
        native.pair_follow(
            tokens, past, np.zeros(3, np.int16), np.array([1], np.int64), np.zeros(1, np.int64)
        )
    with pytest.raises(ValueError, match="whole number"):
        native.sort_positions(tokens.tobytes()[:-1], lengths, 3, out64, out32, ptr)
    with pytest.raises(ValueError, match="pos_ptr must span"):
        native.doc_postings(out32, np.array([0, 1, 2, 5], np.int64), out32.copy(), out32.copy(), ptr)
    with pytest.raises(ValueError, match="ascending reaches"):
        follow = np.zeros((2, 1, 1), np.int64)
        native.pair_follow(tokens, lengths, np.zeros(3, np.int16), np.array([7, 1], np.int64), follow)


CORPUS = [
    "The red fox jumps over the lazy dog",
    "the dog's bowl; the fox's den",
    "Ünïcode Straße, ﬁne dogs",
    "",
    "x\x00y and \x01 control characters",
    "red red red fox",
    "y" * MAX_TERM_BYTES + " long terms dropped, " + "z" * (MAX_TERM_BYTES - 1),
    'quotes " and back\\slashes',
    "tab\tnew\nline\rcarriage\x0cfeed\x0bvertical\x1cfile separators",
    "lazy dogs sleep; lazy foxes run",
] * 3


@needs_native
@pytest.mark.parametrize("chunk_size", [1, 4, 8192])
def test_c_and_arrow_builds_give_the_same_index(chunk_size, tmp_path):
    from hf_querygen.retrieval import index as index_module

    with mock.patch.object(index_module, "CHUNK_SIZE", chunk_size):
        with mock.patch("hf_querygen.retrieval.stats.PAIR_MIN_CF", 2):
            built = Index.from_texts(CORPUS, path=tmp_path / "c", show_progress=False, num_threads=1)
            with arrow_path():
                reference = Index.from_texts(CORPUS, path=tmp_path / "a", show_progress=False, num_threads=1)
    assert len(built.stats.pair_terms) > 0  # the pair table was built and compared
    assert built.stats.vocab == reference.stats.vocab
    for name in ARRAYS + PAIR_ARRAYS:
        expected = getattr(reference.stats, name)
        np.testing.assert_array_equal(getattr(built.stats, name), expected, err_msg=name)
    queries = ["red fox", "lazy dog", "ünïcode strasse", "x\x00y", "control characters", "back slashes"]
    for query in queries:
        for ranker, params in (("bm25", {}), ("bm25", {"exact": True}), ("ql", {}), ("sdm", {})):
            got = [(h.row, h.score) for h in built.search(query, k=40, ranker=ranker, **params)]
            expected = [(h.row, h.score) for h in reference.search(query, k=40, ranker=ranker, **params)]
            assert got == expected, (query, ranker, params)


def test_without_the_compiled_module_the_build_takes_the_arrow_path(monkeypatch):
    # an install without a C compiler: importing the package works and indexes are built all the same
    import importlib
    import sys

    import hf_querygen.retrieval as package
    import hf_querygen.retrieval.native as native_module

    monkeypatch.setitem(sys.modules, "hf_querygen.retrieval._native", None)  # import fails: not compiled
    monkeypatch.delattr(package, "_native", raising=False)
    try:
        importlib.reload(native_module)
        assert native_module.load_native() is None
        index = Index.from_texts(CORPUS, show_progress=False, num_threads=1, heap_size=15_000_000)
    finally:
        monkeypatch.undo()
        importlib.reload(native_module)
    assert (native_module.load_native() is None) == (native is None)
    reference = Index.from_texts(CORPUS, show_progress=False, num_threads=1, heap_size=15_000_000)
    assert index.stats.vocab == reference.stats.vocab
    for query in ("lazy dog", "ünïcode strasse"):
        got = [(h.row, h.score) for h in index.search(query, k=8, ranker="sdm")]
        assert got and got == [(h.row, h.score) for h in reference.search(query, k=8, ranker="sdm")]
