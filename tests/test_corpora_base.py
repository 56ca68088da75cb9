"""The shared corpus layer: load_corpus argument checks, the build summary against the card counts,
the lenient per-file account, and blame for a file that was cut short."""

from __future__ import annotations

import re
import warnings

import pytest
from _corpus_testing import data_dir_with

from hf_querygen.corpora import _q2id_nfcorpus as nfcorpus
from hf_querygen.corpora import load_corpus
from hf_querygen.corpora._base import (
    ParseLog,
    build_summary,
    count_warnings,
    expected_split_sizes,
    find_misalignment,
    iter_lines,
)
from hf_querygen.errors import (
    CorpusCountWarning,
    CorpusFileMissingError,
    CorpusFormatError,
    InvalidInputError,
)

UQV100 = "query-variations/uqv100/uqv100-systemInputRun-uniqueOnly-spelledNormQueries.tsv"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": "nl2kv"}, ["Unknown corpus 'nl2kv'", "did you mean 'nl2kw'"]),
        ({"name": "WikiAnswers"}, ["did you mean 'wikianswers'"]),
        ({"name": 3}, ["corpus name must be a string", "int 3"]),
        ({"name": "nl2kw", "config": "EN"}, ["no config 'EN'", "did you mean 'en'"]),
        ({"name": "wikianswers", "config": "paralexx"}, ["did you mean 'paralex'"]),
        ({"name": "nl2kw", "config": ["en"]}, ["config must be a string"]),
        ({"name": "nl2kw", "strict": "no"}, ["strict must be True or False"]),
        ({"name": "nl2kw", "data_dir": 5}, ["data_dir must be a path"]),
    ],
)
def test_load_corpus_arguments_are_checked_with_close_matches(kwargs, words):
    with pytest.raises(InvalidInputError) as info:
        load_corpus(**kwargs)
    for word in words:
        assert word in str(info.value)


def test_missing_or_wrong_data_dir(tmp_path):
    with pytest.raises(CorpusFileMissingError, match="does not exist"):
        load_corpus("nl2kw", data_dir=tmp_path / "nowhere")
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(InvalidInputError, match="is a file, not a folder"):
        load_corpus("nl2kw", data_dir=tmp_path / "a_file")
    with pytest.raises(CorpusFileMissingError) as info:  # a folder without the corpus files
        load_corpus("webis_qsec_10", data_dir=tmp_path)
    assert "webis-qsec-10-training-set-queries.txt" in str(info.value) and "data_dir" in str(info.value)


def test_an_empty_source_file_is_an_error_and_a_counted_whole_file_skip(data_dir, tmp_path):
    broken = data_dir_with(data_dir, tmp_path / "data", {UQV100: b""})
    with pytest.raises(CorpusFormatError, match="empty file") as info:
        load_corpus("nl2kw", "en", data_dir=broken)
    assert info.value.path == UQV100
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset_dict, log = load_corpus("nl2kw", "en", data_dir=broken, strict=False, return_log=True)
    # a lenient build never shrinks silently: the card counts move, a warning says by how much
    moved = [str(w.message) for w in caught if issubclass(w.category, CorpusCountWarning)]
    assert len(moved) == 3 and all("the dataset card records" in m for m in moved)
    assert log.per_file()[UQV100]["whole_file"]
    assert f"  {UQV100}: WHOLE FILE SKIPPED; 1 skipped" in log.format_summary()
    summary = build_summary("nl2kw", "en", dataset_dict)
    expected = expected_split_sizes("nl2kw")["en"]
    assert {split: entry["expected"] for split, entry in summary.items()} == expected
    assert all(entry["change"] < 0 for entry in summary.values())
    assert count_warnings("nl2kw", "en", dataset_dict) == moved


def test_nfcorpus_file_cut_short_is_blamed_on_itself(data_dir, tmp_path):
    rel = "nfcorpus/dev.vid-desc.queries"
    lines = (data_dir / rel).read_bytes().split(b"\n")
    broken = data_dir_with(data_dir, tmp_path / "data", {rel: b"\n".join(lines[:50]) + b"\n"})
    with pytest.raises(CorpusFormatError) as info:
        nfcorpus.read_nfcorpus_split(broken, "dev", ParseLog())
    assert str(info.value.path).endswith(rel) and info.value.line == 51
    assert "looks truncated" in info.value.reason


def test_lines_are_counted_as_editors_count_them(tmp_path):
    path = tmp_path / "f.tsv"
    path.write_bytes(b"\xef\xbb\xbfa\r\nb\rstill b\n\nc\n\xffd\ne")
    log = ParseLog(strict=False)
    lines = list(iter_lines(path, log))
    assert [(line.number, line.text) for line in lines] == [(1, "a"), (2, "b\rstill b"), (4, "c"), (6, "e")]
    assert [line.offset for line in lines] == [3, 6, 17, 22]
    assert [(e.line, "byte offset 19" in e.reason) for e in log.errors] == [(5, True)]


def test_find_misalignment_on_a_small_example():
    first = [f"question {i} about topic{i}" for i in range(200)]
    second = [f"topic{i} question" for i in range(200)]
    assert find_misalignment(first, second) is None
    assert find_misalignment(first, second[:120] + second[121:]) == (121, "first")
    assert find_misalignment(first[:70] + first[71:], second) == (71, "second")


# ---------------------------------------------------------------- NUL characters
@pytest.mark.parametrize(
    ("name", "content", "line", "reader"),
    [
        ("lines.txt", b"first line\nsecond\x00line\nthird\n", 2, "lines"),
        ("doc.json", b'[\n  {"q": "fine"},\n  {"q": "bad\\u0000"}\n]\n', 3, "json"),
        ("doc.xml", b"<docs>\n<doc>fine</doc>\n<doc>bad&#0;</doc>\n</docs>\n", 3, "xml"),
        ("raw.json", b'[\n  "fine",\n  "bad\x00"\n]\n', 3, "json"),
    ],
)
def test_nul_characters_are_named_by_file_and_line(tmp_path, name, content, line, reader):
    from hf_querygen.corpora._base import ParseLog, iter_lines, read_json, read_xml
    from hf_querygen.errors import CorpusFormatError

    path = tmp_path / name
    path.write_bytes(content)
    read = {
        "lines": lambda log: list(iter_lines(path, log, name)),
        "json": lambda log: read_json(path, name, log, list),
        "xml": lambda log: read_xml(path, name, log, "doc"),
    }[reader]
    with pytest.raises(CorpusFormatError, match=rf"^{re.escape(name)}:{line}: NUL character") as info:
        read(ParseLog())
    assert info.value.path == name and info.value.line == line
    lenient = ParseLog(strict=False)
    read(lenient)  # skipped and reported, never kept
    assert [(e.path, e.line) for e in lenient.errors] == [(name, line)]
    if reader == "lines":
        assert [x.text for x in iter_lines(path, ParseLog(strict=False), name)] == ["first line", "third"]
