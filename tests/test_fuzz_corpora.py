"""Corrupt copies of EVERY kind of raw corpus file, read by the builders' own readers.

For each file type (``_fuzz_corrupt.file_types``) and each damage (invalid UTF-8, truncation, empty or
blank file, a malformed record in the file's syntax, a repeated record; misaligned pairs for the
line-aligned files; a stray CR before the damage) the error must name the file, the line and what
is wrong, in strict mode; a lenient read must not raise and must account for the skip in its
per-file summary. ``HF_QUERYGEN_FUZZ=nightly`` adds hypothesis-drawn damage positions.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import _fuzz_corrupt as C
import pytest
from _corpus_testing import data_dir_with
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_querygen.corpora import _qald
from hf_querygen.corpora._base import ParseLog
from hf_querygen.errors import CorpusFileMissingError, CorpusFormatError

NIGHTLY = os.environ.get("HF_QUERYGEN_FUZZ") == "nightly"
REAL = Path(os.environ.get("HF_QUERYGEN_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
if not REAL.is_dir():  # the same rule as the data_dir fixture: the real corpora are needed
    pytest.skip(f"raw corpora not found at {REAL}", allow_module_level=True)

TYPES = {ft.key: ft for ft in C.file_types(REAL)}


def _base(ft: C.FileType) -> bytes:
    raw = (REAL / ft.rel).read_bytes()
    return ft.shrink(raw) if ft.shrink else raw


def _copy(tmp_path: Path, ft: C.FileType, content: bytes, extra: dict[str, bytes] | None = None) -> Path:
    return data_dir_with(REAL, tmp_path / "data", {ft.rel: content, **(extra or {})})


def _strict_error(ft: C.FileType, data_dir: Path) -> CorpusFormatError:
    with pytest.raises(CorpusFormatError) as info:
        ft.read(data_dir, ParseLog(strict=True))
    return info.value


def _check(error: CorpusFormatError, expected: C.Expected) -> None:
    message = str(error)
    assert Path(error.path).as_posix().endswith(expected.rel), f"blamed {error.path}, expected {expected.rel}"
    if expected.line is not None:
        assert isinstance(error.line, int) and abs(error.line - expected.line) <= expected.line_tolerance, (
            f"line {error.line}, expected {expected.line}: {message}"
        )
        assert f":{error.line}: " in message  # the message itself carries file:line
    for word in expected.words:
        assert word in message, f"{word!r} not in {message!r}"


def _lenient(ft: C.FileType, data_dir: Path) -> ParseLog:
    log = ParseLog(strict=False)
    ft.read(data_dir, log)
    assert log.errors, "a lenient read must record what it skipped"
    files = log.per_file()
    assert any(path.endswith(ft.rel) for path in files), files
    assert log.format_summary()  # the printable per-file account
    return log


# ---------------------------------------------------------------- one test per type and damage
@pytest.mark.parametrize("key", sorted(TYPES))
def test_invalid_utf8_names_file_line_and_byte_offset(key, tmp_path):
    ft = TYPES[key]
    content, expected = C.invalid_utf8(_base(ft), ft)
    data_dir = _copy(tmp_path, ft, content)
    _check(_strict_error(ft, data_dir), expected)
    log = _lenient(ft, data_dir)
    assert any(e.line == expected.line and "not valid UTF-8" in e.reason for e in log.errors)


@pytest.mark.parametrize("key", sorted(TYPES))
def test_stray_carriage_return_does_not_shift_later_lines(key, tmp_path):
    ft = TYPES[key]
    broken, expected = C.invalid_utf8(_base(ft), ft)
    # the CR goes into line 2, before the bad byte: the bad byte's line must not move
    with_cr = C.stray_cr(broken)
    assert with_cr.count(b"\n") == broken.count(b"\n")
    log = _lenient(ft, _copy(tmp_path, ft, with_cr))
    assert any(e.line == expected.line and "not valid UTF-8" in e.reason for e in log.errors), [
        str(e) for e in log.errors
    ]


@pytest.mark.parametrize("key", sorted(TYPES))
def test_stray_carriage_return_before_a_malformed_record(key, tmp_path):
    ft = TYPES[key]
    broken, expected = C.bad_syntax(_base(ft), ft)
    log = _lenient(ft, _copy(tmp_path, ft, C.stray_cr(broken)))
    lines = [e.line for e in log.errors]
    assert any(
        isinstance(e.line, int) and abs(e.line - expected.line) <= expected.line_tolerance for e in log.errors
    ), (lines, expected)


@pytest.mark.parametrize("key", sorted(TYPES))
def test_malformed_record_names_file_and_line(key, tmp_path):
    ft = TYPES[key]
    content, expected = C.bad_syntax(_base(ft), ft)
    _check(_strict_error(ft, _copy(tmp_path, ft, content)), expected)


@pytest.mark.parametrize("key", sorted(TYPES))
@pytest.mark.parametrize("content", [b"", b"\n \r\n\t\n", b"\xef\xbb\xbf"], ids=["empty", "blank", "bom"])
def test_empty_file_is_an_error_and_a_whole_file_skip(key, content, tmp_path):
    ft = TYPES[key]
    data_dir = _copy(tmp_path, ft, content)
    _check(_strict_error(ft, data_dir), C.Expected(None, ("empty file",), ft.rel))
    log = _lenient(ft, data_dir)
    entry = next(v for k, v in log.per_file().items() if k.endswith(ft.rel))
    assert entry["whole_file"] and "WHOLE FILE SKIPPED" in log.format_summary()


@pytest.mark.parametrize("key", sorted(k for k, ft in TYPES.items() if ft.truncation_detectable))
def test_truncated_file_is_blamed_on_itself(key, tmp_path):
    ft = TYPES[key]
    content, expected = C.truncated(_base(ft), ft)
    data_dir = _copy(tmp_path, ft, content)
    _check(_strict_error(ft, data_dir), expected)
    _lenient(ft, data_dir)


@pytest.mark.parametrize("key", sorted(k for k, ft in TYPES.items() if ft.duplicate == "error"))
def test_duplicated_record_is_an_error_at_the_repeat(key, tmp_path):
    ft = TYPES[key]
    content, expected = C.duplicated(_base(ft), ft)
    _check(_strict_error(ft, _copy(tmp_path, ft, content)), expected)


def test_duplicated_wellformedness_query_is_dropped_and_counted(tmp_path):
    ft = TYPES["wellformedness-tsv"]
    content, _ = C.duplicated(_base(ft), ft)
    log = ParseLog()
    rows = ft.read(_copy(tmp_path, ft, content), log)
    clean = ft.read(REAL, ParseLog())
    assert sum(len(v) for v in rows.values()) == sum(len(v) for v in clean.values())
    assert list(log.removed_counts.values()) == [1] and "repeated query" in next(iter(log.removed_counts))


def test_duplicated_csv_row_is_kept_and_counted(tmp_path):
    ft = TYPES["semeval2016-csv"]
    content, _ = C.duplicated(_base(ft), ft)
    log, clean_log = ParseLog(), ParseLog()
    ft.read(_copy(tmp_path, ft, content), log)
    ft.read(REAL, clean_log)
    assert sum(log.duplicates_kept.values()) == sum(clean_log.duplicates_kept.values()) + 1


@pytest.mark.parametrize("key", ["qald-xml", "qald-json"])
def test_duplicated_qald_question_is_deduplicated_and_counted(key, tmp_path):
    ft = TYPES[key]
    content, _ = C.duplicated(_base(ft), ft)
    for data, folder in ((_base(ft), "clean"), (content, "dup")):
        target = tmp_path / folder / ft.rel
        target.parent.mkdir(parents=True)
        target.write_bytes(data)
    counts = {}
    for folder in ("clean", "dup"):
        log = ParseLog()
        pairs = _qald.deduplicated_qald_pairs(tmp_path / folder, "en", log)
        counts[folder] = (len(pairs), log.removed_counts)
    assert counts["dup"][0] == counts["clean"][0]
    key_repeat = "qald: repeated en questions across files/editions (latest edition kept)"
    assert counts["dup"][1][key_repeat] == counts["clean"][1][key_repeat] + 1


# ---------------------------------------------------------------- line-aligned pairs
ALIGNED = ["paralex-aligned", "quora-aligned"]


def _first_file(ft: C.FileType) -> str:
    return ft.rel.replace("val.q2", "val.q1")


@pytest.mark.parametrize("key", ALIGNED)
def test_misaligned_pairs_name_the_first_line_out_of_step(key, tmp_path):
    ft = TYPES[key]
    content, expected = C.misaligned(_base(ft), ft)
    data_dir = _copy(tmp_path, ft, content)
    error = _strict_error(ft, data_dir)
    assert abs(error.line - expected.line) <= expected.line_tolerance and "out of step" in error.reason
    log = ParseLog(strict=False)
    rows = ft.read(data_dir, log)
    # lenient: no shifted pair is kept, and the dropped pairs are counted
    assert max(row["source_line"] for row in rows) < error.line
    assert any("fall out of step" in reason for reason in log.removed_counts)


@pytest.mark.parametrize("key", ALIGNED)
def test_a_line_duplicated_in_one_file_puts_the_pairs_out_of_step(key, tmp_path):
    ft = TYPES[key]
    content, expected = C.duplicated(_base(ft), ft)
    error = _strict_error(ft, _copy(tmp_path, ft, content))
    assert "out of step" in error.reason and abs(error.line - expected.line) <= 8


@pytest.mark.parametrize("key", ALIGNED)
def test_a_pair_duplicated_in_both_files_is_counted(key, tmp_path):
    ft = TYPES[key]
    second, _ = C.duplicated(_base(ft), ft)
    first_rel = _first_file(ft)
    first_raw = (REAL / first_rel).read_bytes()
    line = C.middle_content_line(_base(ft))
    lines = first_raw.split(b"\n")
    lines.insert(line, lines[line - 1])
    data_dir = _copy(tmp_path, ft, second, {first_rel: b"\n".join(lines)})
    log, clean_log = ParseLog(), ParseLog()
    ft.read(data_dir, log)
    ft.read(REAL, clean_log)
    assert sum(log.removed_counts.values()) == sum(clean_log.removed_counts.values()) + 2


@pytest.mark.parametrize("key", ALIGNED)
def test_extra_lines_at_the_end_are_blamed_on_the_longer_file(key, tmp_path):
    ft = TYPES[key]
    first_rel = _first_file(ft)
    first_raw = (REAL / first_rel).read_bytes().rstrip(b"\r\n")  # Quora ends with a blank line
    n = len(C.lines_of(first_raw))
    data_dir = _copy(tmp_path, ft, _base(ft), {first_rel: first_raw + b"\none more question ?\n"})
    error = _strict_error(ft, data_dir)
    assert error.path == first_rel and error.line == n + 1 and "no counterpart" in error.reason


if NIGHTLY:

    @pytest.mark.parametrize("key", ALIGNED)
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(fraction=st.floats(0.05, 0.9))
    def test_nightly_misalignment_anywhere(key, fraction, tmp_path_factory):
        ft = TYPES[key]
        lines = _base(ft).split(b"\n")
        line = max(1, int(len(lines) * fraction))
        del lines[line - 1]
        data_dir = _copy(tmp_path_factory.mktemp("mis"), ft, b"\n".join(lines))
        error = _strict_error(ft, data_dir)
        assert abs(error.line - line) <= 8

    @pytest.mark.parametrize("key", sorted(TYPES))
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(fraction=st.floats(0.0, 0.999), byte=st.sampled_from([b"\xff", b"\xc3", b"\x80", b"\xed\xa0\x80"]))
    def test_nightly_invalid_bytes_anywhere(key, fraction, byte, tmp_path_factory):
        ft = TYPES[key]
        raw = _base(ft)
        position = int(len(raw) * fraction)
        content = raw[:position] + byte + raw[position:]
        data_dir = _copy(tmp_path_factory.mktemp("bytes"), ft, content)
        try:
            ft.read(data_dir, ParseLog(strict=True))
        except CorpusFormatError as error:
            assert Path(error.path).as_posix().endswith(ft.rel)
            if "UTF-8" in error.reason:
                assert error.line == content.count(b"\n", 0, position) + 1
        else:  # only a byte that completes a valid UTF-8 sequence may pass
            content.decode("utf-8")


# ---------------------------------------------------------------- missing files
def test_missing_file_names_the_file_and_the_fix(tmp_path):
    ft = TYPES["uqv100-tsv"]
    data_dir = _copy(tmp_path, ft, b"x")
    (data_dir / ft.rel).unlink()
    with pytest.raises(CorpusFileMissingError) as info:
        ft.read(data_dir, ParseLog())
    assert ft.rel in str(info.value) and "data_dir" in str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    shutil.rmtree(tmp_path / "data")
