"""Generators of corrupt copies of raw corpus files, and the catalogue of every corpus file type.

Each :class:`FileType` names one kind of raw file that a corpus builder reads, the reader to call
on a data dir, and how to make each kind of damage to it; each corruption returns the new bytes and
what the reader must say about it (which line, which words). Shared by the fuzz tests
(``tests/test_fuzz_*.py``) and the bad-input harness (``tests/robustness/bad_inputs.py``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hf_querygen.corpora import _q2id_nfcorpus as nfcorpus
from hf_querygen.corpora import _q2id_semeval as semeval
from hf_querygen.corpora import _qald, nl2kw, wikianswers
from hf_querygen.corpora import webis_qsec_10 as webis
from hf_querygen.corpora._base import ParseLog

Reader = Callable[[Path, ParseLog], object]


@dataclass(frozen=True)
class Expected:
    """What the error must say: ``line`` (None: not checked), words in the reason, and the file."""

    line: int | None
    words: tuple[str, ...]
    rel: str
    line_tolerance: int = 0


@dataclass(frozen=True)
class FileType:
    """One kind of raw corpus file.

    ``kind``: "lines" (one record per line), "json", "xml", "sgml", "csv" or "aligned" (the second
    file of a line-aligned pair). ``duplicate`` is what a repeated record must give: "error" (an
    error naming the repeat), "removed" (dropped and counted) or "kept" (kept and counted).
    ``shrink`` cuts a large file to its first records so the suite stays fast.
    """

    key: str
    rel: str
    read: Reader
    kind: str
    duplicate: str
    record_tag: str = ""
    bad_line_words: tuple[str, ...] = ("expected",)
    truncation_detectable: bool = True
    shrink: Callable[[bytes], bytes] | None = None


def lines_of(raw: bytes) -> list[bytes]:
    """Lines as editors count them (split on LF only), without the final empty one."""
    parts = raw.split(b"\n")
    return parts[:-1] if parts and parts[-1] == b"" else parts


def middle_content_line(raw: bytes, predicate: Callable[[bytes], bool] = bytes.strip) -> int:
    """The 1-based number of the first line at or after the middle that satisfies ``predicate``."""
    lines = lines_of(raw)
    for index in list(range(len(lines) // 2, len(lines))) + list(range(len(lines) // 2)):
        if predicate(lines[index]):
            return index + 1
    raise ValueError("no suitable line")


def line_offset(raw: bytes, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        offset = raw.index(b"\n", offset) + 1
    return offset


def replace_line(raw: bytes, line: int, new: bytes) -> bytes:
    lines = raw.split(b"\n")
    lines[line - 1] = new
    return b"\n".join(lines)


# ---------------------------------------------------------------- corruptions
def invalid_utf8(raw: bytes, ft: FileType) -> tuple[bytes, Expected]:
    """A 0xFF byte at the start of a middle content line (for XML: inside a text or tag line)."""
    line = middle_content_line(raw)
    offset = line_offset(raw, line)
    data = raw[:offset] + b"\xff" + raw[offset:]
    return data, Expected(line, ("not valid UTF-8", f"byte offset {offset}"), ft.rel)


def stray_cr(raw: bytes) -> bytes:
    """A lone CR inside line 2's leading whitespace or, without any, before its last byte."""
    lines = raw.split(b"\n")
    target = lines[1] if len(lines) > 1 else lines[0]
    position = len(target) - len(target.lstrip())
    if position == 0:
        position = max(len(target.rstrip(b"\r")) - 1, 0)
    lines[1 if len(lines) > 1 else 0] = target[:position] + b"\r" + target[position:]
    return b"\n".join(lines)


def truncated(raw: bytes, ft: FileType) -> tuple[bytes, Expected]:
    """The file cut two bytes into a middle content line (mid-record, no final newline)."""
    line = middle_content_line(raw, lambda text: len(text.strip()) > 4)
    offset = line_offset(raw, line) + (len(lines_of(raw)[line - 1]) - len(lines_of(raw)[line - 1].lstrip()))
    words = ("truncated",) if ft.kind == "aligned" else ()
    return raw[: offset + 2], Expected(None, words, ft.rel)


def bad_syntax(raw: bytes, ft: FileType) -> tuple[bytes, Expected]:
    """One malformed record in the file's own syntax, at a known line."""
    if ft.kind == "json":  # a key without its colon, at the first key after the middle of the file
        match = re.compile(rb'"\s*:').search(raw, len(raw) // 2)
        line = raw.count(b"\n", 0, match.start()) + 1
        data = raw[: match.start()] + b'"' + raw[match.end() :]
        return data, Expected(line, ("malformed JSON",), ft.rel)
    if ft.kind == "xml":
        line = middle_content_line(raw, lambda text: re.search(rb"</\w+>", text) is not None)
        old = lines_of(raw)[line - 1]
        new = re.sub(rb"</(\w+)>", rb"</\1zz>", old, count=1)
        return replace_line(raw, line, new), Expected(line, ("malformed XML",), ft.rel)
    if ft.kind == "sgml":
        text = raw.decode("utf-8")
        middle = text.index("<top>", len(text) // 2)
        closing = text.index("</top>", middle)
        line = text.count("\n", 0, middle) + 1
        return (text[:closing] + text[closing + len("</top>") :]).encode(), Expected(
            line, ("</top>",), ft.rel
        )
    if ft.kind == "csv":
        lines = raw.split(b"\n")
        lines.insert(1, b'"only","two columns"')
        return b"\n".join(lines), Expected(2, ("expected 4 columns",), ft.rel)
    if ft.kind == "aligned":
        line = middle_content_line(raw)
        return replace_line(raw, line, b"   "), Expected(line, ("empty line",), ft.rel)
    line = middle_content_line(raw)
    old = lines_of(raw)[line - 1]
    if "literal" in ft.key:
        new = old.replace(b"[(", b"[((", 1) if b"[(" in old else old.replace(b"['", b"[['", 1)
    elif ft.key == "webis-titles":
        new = old + b"\textra"
    else:
        new = old.replace(b"\t", b" ")
    return replace_line(raw, line, new), Expected(line, ft.bad_line_words, ft.rel)


def duplicated(raw: bytes, ft: FileType) -> tuple[bytes, Expected]:
    """One record repeated right after itself; ``Expected.line`` is the repeat's line when known."""
    if ft.kind in ("lines", "aligned", "csv"):
        line = middle_content_line(raw)
        lines = raw.split(b"\n")
        if ft.kind == "csv":  # a whole row: the first line that starts a row of the file's own layout
            line = 2
        lines.insert(line, lines[line - 1])
        return b"\n".join(lines), Expected(line + 1, ("duplicate",), ft.rel)
    text = raw.decode("utf-8-sig")
    if ft.kind == "json":
        data = json.loads(text)
        records = data if isinstance(data, list) else data["questions"]
        records.insert(len(records) // 2, records[len(records) // 2])
        return json.dumps(data, indent=2, ensure_ascii=False).encode(), Expected(None, ("duplicate",), ft.rel)
    opening, closing = (f"<{ft.record_tag}", f"</{ft.record_tag}>")
    start = text.index(opening, len(text) // 2)
    end = text.index(closing, start) + len(closing)
    copy_line = text.count("\n", 0, end) + 1  # the copy starts right after the original's end
    new = text[:end] + text[start:end] + text[end:]
    return new.encode(), Expected(copy_line, ("duplicate",), ft.rel)


def misaligned(raw: bytes, ft: FileType) -> tuple[bytes, Expected]:
    """The middle line of the second file of an aligned pair deleted: every later pair shifts."""
    lines = raw.split(b"\n")
    line = len(lines) // 2
    del lines[line - 1]
    tolerance = 8 if "paralex" in ft.key else 3  # Paralex neighbours are paraphrases of each other
    return b"\n".join(lines), Expected(line, ("out of step",), ft.rel, line_tolerance=tolerance)


# ---------------------------------------------------------------- shrinking big files
def head_xml(record_tag: str, keep: int) -> Callable[[bytes], bytes]:
    """Keep the first ``keep`` records of an XML file whose root closes at the end."""

    def shrink(raw: bytes) -> bytes:
        closing = f"</{record_tag}>".encode()
        end = 0
        for _ in range(keep):
            end = raw.index(closing, end) + len(closing)
        root_close = raw[raw.rindex(b"</") :]
        return raw[:end] + b"\n" + root_close

    return shrink


def head_json_list(keep: int) -> Callable[[bytes], bytes]:
    def shrink(raw: bytes) -> bytes:
        return json.dumps(json.loads(raw.decode("utf-8-sig"))[:keep], indent=2).encode()

    return shrink


# ---------------------------------------------------------------- the catalogue
@functools.lru_cache(maxsize=1)
def _web_topics(data_dir: Path) -> dict:
    return nl2kw.read_web_topics(data_dir, ParseLog())


@functools.lru_cache(maxsize=1)
def _webis_queries(data_dir: Path) -> dict:
    return webis.read_queries(data_dir, ParseLog())


def file_types(real_data_dir: Path) -> list[FileType]:
    """Every kind of raw file the corpus builders read (one representative file each)."""
    qsec = f"{webis.CORPUS_FOLDER}/"
    prefix = webis.PREFIX
    return [
        FileType(
            "trec-sgml",
            "trec-topics/topics.robust04.txt",
            lambda d, log: list(nl2kw._iter_trec_sgml(d, "topics.robust04.txt", "trec-robust04", log)),
            "sgml",
            "error",
            record_tag="top",
        ),
        FileType(
            "trec-web-xml",
            "trec-topics/topics.web.201-250.txt",
            lambda d, log: nl2kw.read_web_topics(d, log),
            "xml",
            "error",
            record_tag="topic",
        ),
        FileType(
            "trec-covid-xml",
            "trec-topics/topics.covid-round5.xml",
            lambda d, log: list(nl2kw._iter_covid(d, log)),
            "xml",
            "error",
            record_tag="topic",
        ),
        FileType(
            "epic-qa-json",
            "trec-topics/topics.epidemic-qa.expert.primary.json",
            lambda d, log: list(nl2kw._iter_epicqa(d, {}, log)),
            "json",
            "error",
        ),
        FileType(
            "uqv100-tsv",
            nl2kw.UQV100_FILE,
            lambda d, log: list(nl2kw._iter_uqv100(d, _web_topics(real_data_dir), log)),
            "lines",
            "error",
        ),
        FileType(
            "qald-xml",
            "qald/3/data/dbpedia-train.xml",
            lambda d, log: list(
                _qald._iter_xml_entries(
                    d / "qald/3/data/dbpedia-train.xml", "qald/3/data/dbpedia-train.xml", 3, log
                )
            ),
            "xml",
            "removed",
            record_tag="question",
        ),
        FileType(
            "qald-json",
            "qald/8/data/qald-8-test-multilingual.json",
            lambda d, log: list(
                _qald._iter_json_entries(
                    d / "qald/8/data/qald-8-test-multilingual.json",
                    "qald/8/data/qald-8-test-multilingual.json",
                    8,
                    log,
                )
            ),
            "json",
            "removed",
        ),
        FileType(
            "comqa-json",
            "wikianswers/comqa/comqa_train.json",
            lambda d, log: wikianswers._comqa_rows(d, log),
            "json",
            "error",
            shrink=head_json_list(300),
        ),
        FileType(
            "paralex-aligned",
            "wikianswers/paralex/val.q2",
            lambda d, log: wikianswers._paired_rows(d, "wikianswers/paralex", "paralex", log),
            "aligned",
            "removed",
        ),
        FileType(
            "quora-aligned",
            "wikianswers/quora/val.q2",
            lambda d, log: wikianswers._paired_rows(d, "wikianswers/quora", "quora", log),
            "aligned",
            "removed",
        ),
        FileType(
            "wellformedness-tsv",
            "wikianswers/query-wellformedness/dev.tsv",
            lambda d, log: wikianswers._wellformedness_rows(d, log),
            "lines",
            "removed",
        ),
        FileType(
            "webis-queries",
            f"{qsec}{webis.QUERIES_FILE}",
            lambda d, log: webis.read_queries(d, log),
            "lines",
            "error",
        ),
        FileType(
            "webis-crowd-literal",
            f"{qsec}{webis.CROWD_FILE}",
            lambda d, log: webis.read_crowd_votes(d, _webis_queries(real_data_dir), log),
            "lines",
            "error",
            bad_line_words=("Python list literal",),
        ),
        FileType(
            "webis-algorithm",
            f"{qsec}segmentations-of-algorithms/{prefix}segmentations-wt-baseline.txt",
            lambda d, log: webis.read_algorithm_outputs(d, _webis_queries(real_data_dir), log),
            "lines",
            "error",
        ),
        FileType(
            "webis-values",
            f"{qsec}data/{prefix}n-gram-pmi-values.txt",
            lambda d, log: webis._read_values(d / f"{qsec}data/{prefix}n-gram-pmi-values.txt", log, float),
            "lines",
            "error",
        ),
        FileType(
            "webis-pos-literal",
            f"{qsec}data/{prefix}queries-pos-tagged.txt",
            lambda d, log: webis._read_pos(d / f"{qsec}data/{prefix}queries-pos-tagged.txt", log),
            "lines",
            "error",
            bad_line_words=("Python list literal",),
        ),
        FileType(
            "webis-titles",
            f"{qsec}data/{prefix}n-gram-wikipedia-titles.txt",
            lambda d, log: webis.read_wikipedia_titles(
                d / f"{qsec}data/{prefix}n-gram-wikipedia-titles.txt", log
            ),
            "lines",
            "error",
            bad_line_words=("one n-gram per line",),
            truncation_detectable=False,  # a cut n-gram is still an n-gram
        ),
        FileType(
            "semeval2015-xml",
            semeval.SEMEVAL2015_XML,
            lambda d, log: semeval.read_semeval2015(d, log),
            "xml",
            "error",
            record_tag="Question",
            shrink=head_xml("Question", 60),
        ),
        FileType(
            "semeval2016-xml",
            semeval.SEMEVAL2016_XML["dev"],
            lambda d, log: semeval.read_semeval2016_xml(d, "dev", log),
            "xml",
            "error",
            record_tag="OrgQuestion",
            shrink=head_xml("OrgQuestion", 40),
        ),
        FileType(
            "semeval2016-csv",
            semeval.SEMEVAL2016_TEST_CSV["related"],
            lambda d, log: semeval.read_semeval2016_test_csv(d, "related", log),
            "csv",
            "kept",
        ),
        FileType(
            "nfcorpus-ids",
            "nfcorpus/dev.vid-titles.queries",
            lambda d, log: nfcorpus.read_nfcorpus_split(d, "dev", log),
            "lines",
            "error",
        ),
        FileType(
            "nfcorpus-docs",
            "nfcorpus/dev.docs",
            lambda d, log: nfcorpus.read_nfcorpus_split(d, "dev", log),
            "lines",
            "error",
        ),
        FileType(
            "nfcorpus-qrels",
            "nfcorpus/dev.2-1-0.qrel",
            lambda d, log: nfcorpus.read_nfcorpus_split(d, "dev", log),
            "lines",
            "error",
        ),
    ]


CORRUPTIONS = ("invalid_utf8", "truncated", "empty", "whitespace_only", "bad_syntax", "duplicated")
