"""SemEval-2015/2016 Task 3 English (Qatar Living) as Q2ID records: query = question subject, intent
description = question body, relevant documents = ``Good`` comments, irrelevant documents = every other
comment. Readers of the 2015 XML, the 2016 XML and the 2016 test CSV, and the de-duplication across
them; the corpus is :mod:`hf_querygen.corpora.q2id`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ._base import (
    CorpusFormatError,
    ParseLog,
    XmlElement,
    check_unique,
    collapse_whitespace,
    iter_xml_records,
)
from ._q2id_records import Q2IDDocument, Q2IDRecord, is_usable, read_lines, split_sentences

SEMEVAL2015_XML = "semeval-cqa/2015/CQA-QL-devel.xml"
SEMEVAL2016_XML = {
    "dev": "semeval-cqa/2016/SemEval2016-Task3-CQA-QL-dev.xml",
    "train-part2": "semeval-cqa/2016/SemEval2016-Task3-CQA-QL-train-part2.xml",
}
SEMEVAL2016_TEST_CSV = {
    "original": "semeval-cqa/2016/test-csv/subtask-c/TEST-BASE.csv",  # labels: comment -> original question
    "related": "semeval-cqa/2016/test-csv/subtask-a/TEST-BASE.csv",  # labels: comment -> related question
}
SEMEVAL_RELEVANT_LABEL = "Good"
SEMEVAL2015_LABELS = frozenset({"Good", "Bad", "Potential", "Dialogue", "Not English"})
SEMEVAL2016_LABELS = frozenset({"Good", "Bad", "PotentiallyUseful"})
CSV_HEADER = ["feature", "question", "answer", "labels"]

# Record sources, in the order in which duplicates are resolved (the first copy is kept): the
# 2016 original questions carry 100 comments judged against the question itself, the related
# questions their own 10, a 2015 question its own thread (avg. 5.5 comments).
SOURCE_SEMEVAL2016_ORIGINAL = "semeval2016-original"
SOURCE_SEMEVAL2016_RELATED = "semeval2016-related"
SOURCE_SEMEVAL2015 = "semeval2015"


def semeval_files(data_dir: Path) -> list[Path]:
    """Every raw SemEval file the corpus reads."""
    return [
        data_dir / name
        for name in (SEMEVAL2015_XML, *SEMEVAL2016_XML.values(), *SEMEVAL2016_TEST_CSV.values())
    ]


def _check_label(label: str, allowed: frozenset[str], path: Path, line: int | None, what: str) -> str:
    if label not in allowed:
        raise CorpusFormatError(path, line, f"unknown {what}: {label!r} (expected one of {sorted(allowed)})")
    return label


def _comment_document(
    record: Q2IDRecord, doc_id: str, label: str, text: str, log: ParseLog, source: str
) -> None:
    sentences = split_sentences(text)
    if not sentences:
        log.removed(f"{source}: empty comment text")
        return
    record.add_document(Q2IDDocument(doc_id, label, sentences), relevant=label == SEMEVAL_RELEVANT_LABEL)


def read_semeval2015(data_dir: Path, log: ParseLog) -> list[Q2IDRecord]:
    """SemEval-2015 Task 3 dev questions, each with the comments of its own thread (``CGOLD``)."""
    path = data_dir / SEMEVAL2015_XML
    records = []
    seen: dict[str, int | str | None] = {}
    for question in iter_xml_records(path, "Question", log):
        try:  # a question is validated whole before anything is kept, so a lenient skip is clean
            record = Q2IDRecord(
                id=f"{SOURCE_SEMEVAL2015}/dev/{question.attribute('QID', path)}",
                source=SOURCE_SEMEVAL2015,
                source_split="dev",
                query_type="question",
                query=collapse_whitespace(question.child_text("QSubject", path)),
                description=collapse_whitespace(question.child_text("QBody", path)),
                line=question.line,
            )
            # <CSubject> is a truncated copy of the body's first words: the body is the document.
            comments = [
                (
                    comment.attribute("CID", path),
                    _check_label(
                        comment.attribute("CGOLD", path),
                        SEMEVAL2015_LABELS,
                        path,
                        comment.line,
                        "CGOLD label",
                    ),
                    comment.child_text("CBody", path),
                )
                for comment in question.findall("Comment")
            ]
        except CorpusFormatError as err:
            log.error(err.path, err.line, err.reason)
            continue
        if not check_unique(record.id, question.line, seen, path, "question QID", log):
            continue
        for comment_id, label, text in comments:
            _comment_document(record, comment_id, label, text, log, SOURCE_SEMEVAL2015)
        records.append(record)
    return records


@dataclass
class _Semeval2016Thread:
    """One ``<OrgQuestion>`` element: the original question and one of its related threads."""

    original_id: str
    subject: str
    body: str
    related: Q2IDRecord
    comments: list[tuple[str, str, str, str]]  # (RELC_ID, label to original, label to related, text)


def _parse_semeval2016_element(element: XmlElement, path: Path, split: str) -> _Semeval2016Thread:
    thread = element.only_child("Thread", path)
    question = thread.only_child("RelQuestion", path)
    related = Q2IDRecord(
        id=f"{SOURCE_SEMEVAL2016_RELATED}/{split}/{question.attribute('RELQ_ID', path)}",
        source=SOURCE_SEMEVAL2016_RELATED,
        source_split=split,
        query_type="question",
        query=collapse_whitespace(question.child_text("RelQSubject", path)),
        description=collapse_whitespace(question.child_text("RelQBody", path)),
        line=question.line,
    )
    comments = []
    for comment in thread.findall("RelComment"):
        labels = [
            _check_label(
                comment.attribute(name, path), SEMEVAL2016_LABELS, path, comment.line, f"{name} label"
            )
            for name in ("RELC_RELEVANCE2ORGQ", "RELC_RELEVANCE2RELQ")
        ]
        comments.append((comment.attribute("RELC_ID", path), *labels, comment.child_text("RelCText", path)))
    return _Semeval2016Thread(
        original_id=element.attribute("ORGQ_ID", path),
        subject=collapse_whitespace(element.child_text("OrgQSubject", path)),
        body=collapse_whitespace(element.child_text("OrgQBody", path)),
        related=related,
        comments=comments,
    )


def read_semeval2016_xml(
    data_dir: Path, split: str, log: ParseLog
) -> tuple[list[Q2IDRecord], list[Q2IDRecord]]:
    """SemEval-2016 Task 3 XML: ``(original questions, related questions)``.

    Each ``<OrgQuestion>`` element holds one of its related threads, so an original question is
    the set of elements sharing an ``ORGQ_ID``; its documents are the comments of all its threads
    judged against it (``RELC_RELEVANCE2ORGQ``; subtask C). Each thread's related question is a
    query of its own with its comments judged against it (``RELC_RELEVANCE2RELQ``; subtask A).
    """
    path = data_dir / SEMEVAL2016_XML[split]
    originals: dict[str, Q2IDRecord] = {}
    related: list[Q2IDRecord] = []
    seen_threads: dict[str, int | str | None] = {}
    for element in iter_xml_records(path, "OrgQuestion", log):
        try:
            thread = _parse_semeval2016_element(element, path, split)
            original = originals.get(thread.original_id)
            if original is not None and (original.query, original.description) != (
                thread.subject,
                thread.body,
            ):
                raise CorpusFormatError(
                    path,
                    element.line,
                    f"ORGQ_ID {thread.original_id} has another subject or body than at line {original.line}",
                )
        except CorpusFormatError as err:
            log.error(err.path, err.line, err.reason)
            continue
        # a thread appears once per original question: a repeat would add its comments twice
        thread_key = f"{thread.original_id}/{thread.related.id}"
        if not check_unique(thread_key, element.line, seen_threads, path, "thread (ORGQ_ID/RELQ_ID)", log):
            continue
        if original is None:
            original = originals[thread.original_id] = Q2IDRecord(
                id=f"{SOURCE_SEMEVAL2016_ORIGINAL}/{split}/{thread.original_id}",
                source=SOURCE_SEMEVAL2016_ORIGINAL,
                source_split=split,
                query_type="question",
                query=thread.subject,
                description=thread.body,
                line=element.line,
            )
        for comment_id, to_original, to_related, text in thread.comments:
            _comment_document(original, comment_id, to_original, text, log, SOURCE_SEMEVAL2016_ORIGINAL)
            _comment_document(thread.related, comment_id, to_related, text, log, SOURCE_SEMEVAL2016_RELATED)
        related.append(thread.related)
    return list(originals.values()), related


def _strip_stray_quotes(value: str) -> str:
    # The CSV values keep literal quotes from an earlier quoting step (data README, "Stray quotes").
    return value.strip().strip('"').strip()


def read_semeval2016_test_csv(data_dir: Path, kind: str, log: ParseLog) -> list[Q2IDRecord]:
    """The 2016 test set as CSV (no ids): ``kind="original"`` reads subtask C (an original
    question with the 100 comments of its related threads), ``kind="related"`` subtask A (a
    related question with its 10 comments). A question is a run of consecutive rows with the
    same subject and body."""
    path = data_dir / SEMEVAL2016_TEST_CSV[kind]
    source = SOURCE_SEMEVAL2016_ORIGINAL if kind == "original" else SOURCE_SEMEVAL2016_RELATED
    prefix = "csv-c" if kind == "original" else "csv-a"
    numbered = list(read_lines(path, log))
    if not numbered:
        log.error(path, 1, f"empty file (expected the header {CSV_HEADER})")
        return []
    reader = csv.reader((f"{text}\n" for _, text in numbered), strict=True)  # RFC 4180, as the README says
    records: list[Q2IDRecord] = []
    group_key: tuple[str, str] | None = None
    comments_in_group = 0
    header_seen = False
    previous_row: list[str] | None = None
    while True:
        # reader.line_num counts the lines read so far, so the next row starts on the next one.
        line = numbered[min(reader.line_num, len(numbered) - 1)][0]
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            log.error(path, line, f"malformed CSV: {err}")
            continue
        try:
            if not header_seen:
                header_seen = True
                if row != CSV_HEADER:
                    raise CorpusFormatError(path, line, f"expected the header {CSV_HEADER}, found {row}")
                continue
            if len(row) != len(CSV_HEADER):
                raise CorpusFormatError(path, line, f"expected {len(CSV_HEADER)} columns, found {len(row)}")
            subject, body, answer = (_strip_stray_quotes(value) for value in row[:3])
            label = _check_label(row[3], SEMEVAL2016_LABELS, path, line, "value in column 'labels'")
        except CorpusFormatError as err:
            log.error(err.path, err.line, err.reason)
            continue
        if row == previous_row:  # upstream repeats rows (92 in subtask A, 97 in C): kept, counted
            log.kept_duplicates(f"{path.name} ({kind}): row identical to the row before it")
        previous_row = row
        if group_key != (subject, body):
            group_key, comments_in_group = (subject, body), 0
            records.append(
                Q2IDRecord(
                    id=f"{source}/test/{prefix}-{len(records) + 1:04d}",
                    source=source,
                    source_split="test",
                    query_type="question",
                    query=collapse_whitespace(subject),
                    description=collapse_whitespace(body),
                    line=line,
                )
            )
        comments_in_group += 1
        doc_id = f"{prefix}-{len(records):04d}_C{comments_in_group}"
        _comment_document(records[-1], doc_id, label, answer, log, source)
    return records


def deduplicate(records: Iterable[Q2IDRecord], log: ParseLog) -> list[Q2IDRecord]:
    """Keep the first record of every question (same subject and body after
    :func:`normalize_for_matching`); each dropped copy is counted by which copy was kept."""
    kept: dict[tuple[str, str], Q2IDRecord] = {}
    for record in records:
        first = kept.setdefault(record.dedup_key(), record)
        if first is not record:
            log.removed(f"duplicate question: {record.source} copy of a {first.source} question")
    return list(kept.values())


def read_semeval(data_dir: Path, log: ParseLog) -> list[Q2IDRecord]:
    """All SemEval queries, filtered and de-duplicated; the first copy in this order is kept:
    2016 original questions (XML dev, train-part2, then test CSV), 2016 related questions (same
    order), 2015 questions."""
    questions_2015 = read_semeval2015(data_dir, log)
    originals, related = [], []
    for split in SEMEVAL2016_XML:
        split_originals, split_related = read_semeval2016_xml(data_dir, split, log)
        originals += split_originals
        related += split_related
    originals += read_semeval2016_test_csv(data_dir, "original", log)
    related += read_semeval2016_test_csv(data_dir, "related", log)
    ordered = originals + related + questions_2015
    return deduplicate((record for record in ordered if is_usable(record, log)), log)
