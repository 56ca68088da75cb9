"""NFCorpus as Q2ID records (video title -> video description; linked vs marginal abstracts), and one
NFCorpus split as a retrieval test collection. The corpus is :mod:`hf_querygen.corpora.q2id`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ._base import ParseLog, collapse_whitespace
from ._q2id_records import Q2IDDocument, Q2IDRecord, is_usable, read_lines

NFCORPUS_DIR = "nfcorpus"
NFCORPUS_SPLITS = ("dev", "test")  # the train split has no qrels or documents in the data folder
NFCORPUS_RELEVANT_LEVELS = {2: "direct link", 1: "indirect link"}  # the official 2-1-0 qrels
NFCORPUS_GRADED_LEVELS = {3: "direct link", 2: "indirect link", 1: "marginal"}  # the 3-2-1 qrels
NFCORPUS_IRRELEVANT_LEVEL = 1  # "marginal" in the 3-2-1 qrels = level 0 of the 2-1-0 qrels
_QUERY_ID = re.compile(r"PLAIN-\d+")
_DOC_ID = re.compile(r"MED-\d+")
SOURCE_NFCORPUS = "nfcorpus"
_NFCORPUS_ABSTRACT_HEADING = re.compile(r"(?<=\S) (?=abstract\b)")


def nfcorpus_files(data_dir: Path) -> list[Path]:
    """Every raw NFCorpus file the corpus reads."""
    return [
        data_dir / NFCORPUS_DIR / f"{split}.{suffix}"
        for split in NFCORPUS_SPLITS
        for suffix in ("vid-titles.queries", "vid-desc.queries", "docs", "2-1-0.qrel", "3-2-1.qrel")
    ]


def split_nfcorpus_document(text: str) -> list[str]:
    """NFCorpus documents were lower-cased and stripped of punctuation upstream, so the only
    recoverable boundary is the PubMed ``abstract`` heading between title and abstract: the
    result is ``[title, "abstract ..."]``, or ``[text]`` when the heading is missing."""
    text = collapse_whitespace(text)
    parts = _NFCORPUS_ABSTRACT_HEADING.split(text, maxsplit=1)
    return [part for part in parts if part]


def _read_id_text_file(path: Path, id_pattern: re.Pattern, log: ParseLog) -> dict[str, tuple[int, str]]:
    """An NFCorpus ``<id>\\t<text>`` file as ``{id: (line, text)}``."""
    entries: dict[str, tuple[int, str]] = {}
    for line, text in read_lines(path, log):
        columns = text.split("\t")
        if len(columns) != 2:
            log.error(path, line, f"expected 2 tab-separated columns (id, text), found {len(columns)}")
        elif not id_pattern.fullmatch(columns[0]):
            log.error(path, line, f"malformed id {columns[0]!r} (expected {id_pattern.pattern})")
        elif columns[0] in entries:
            log.error(path, line, f"duplicate id {columns[0]} (first at line {entries[columns[0]][0]})")
        else:
            entries[columns[0]] = (line, columns[1])
    return entries


def _read_qrels(
    path: Path, levels: dict[int, str], documents: dict, log: ParseLog
) -> Iterator[tuple[str, str, int]]:
    """``(query_id, doc_id, level)`` of a TAB-separated NFCorpus qrels file."""
    known_levels = {str(level) for level in levels}
    seen: dict[tuple[str, str], int] = {}
    for line, text in read_lines(path, log):
        columns = text.split("\t")
        if len(columns) != 4:
            log.error(
                path,
                line,
                f"expected 4 tab-separated columns (query, 0, document, level), found {len(columns)}",
            )
            continue
        query_id, iteration, doc_id, level = columns
        if iteration != "0" or not _QUERY_ID.fullmatch(query_id):
            log.error(path, line, f"malformed qrels line {text!r}")
        elif level not in known_levels:
            log.error(path, line, f"unknown relevance level {level!r} (expected one of {sorted(levels)})")
        elif (query_id, doc_id) in seen:
            log.error(
                path,
                line,
                f"duplicate judgment of {doc_id} for {query_id} (first at line {seen[query_id, doc_id]})",
            )
        elif doc_id not in documents:
            log.error(
                path,
                line,
                f"judged document {doc_id} is not in {path.parent.name}/{path.name.split('.')[0]}.docs",
            )
        else:
            seen[query_id, doc_id] = line
            yield query_id, doc_id, int(level)


def read_nfcorpus_split(data_dir: Path, split: str, log: ParseLog) -> list[Q2IDRecord]:
    """NFCorpus video pages of one split: title -> description, linked vs marginal abstracts."""
    folder = data_dir / NFCORPUS_DIR
    titles_path = folder / f"{split}.vid-titles.queries"
    descriptions_path = folder / f"{split}.vid-desc.queries"
    titles = _read_id_text_file(titles_path, _QUERY_ID, log)
    descriptions = _read_id_text_file(descriptions_path, _QUERY_ID, log)
    for path, ids, other_path, other in (
        (titles_path, titles, descriptions_path, descriptions),
        (descriptions_path, descriptions, titles_path, titles),
    ):
        missing = sorted(set(ids) - set(other), key=lambda q: ids[q][0])
        shared_lines = [line for query_id, (line, _) in ids.items() if query_id in other]
        if missing and other and ids[missing[0]][0] > max(shared_lines, default=0):
            # every id without a counterpart comes after the last shared one: the other file was
            # cut short (truncated), so the other file is to blame, once, at its end
            last = max(line for line, _ in other.values())
            log.error(
                other_path,
                last + 1,
                f"{other_path.name} ends after line {last}: the {len(missing)} ids from {missing[0]} on "
                f"({path.name} lines {ids[missing[0]][0]}-{ids[missing[-1]][0]}) have no line here; "
                "the file looks truncated",
                "rest of the file",
            )
            continue
        for query_id in missing:
            log.error(path, ids[query_id][0], f"{query_id} has no line in {other_path.name}")
    documents = _read_id_text_file(folder / f"{split}.docs", _DOC_ID, log)
    sentences = {doc_id: split_nfcorpus_document(text) for doc_id, (_, text) in documents.items()}

    judged: dict[str, dict[str, tuple[str, bool]]] = {}  # query -> doc -> (label, relevant)
    for query_id, doc_id, level in _read_qrels(
        folder / f"{split}.2-1-0.qrel", NFCORPUS_RELEVANT_LEVELS, documents, log
    ):
        judged.setdefault(query_id, {})[doc_id] = (NFCORPUS_RELEVANT_LEVELS[level], True)
    for query_id, doc_id, level in _read_qrels(
        folder / f"{split}.3-2-1.qrel", NFCORPUS_GRADED_LEVELS, documents, log
    ):
        if level == NFCORPUS_IRRELEVANT_LEVEL:
            judged.setdefault(query_id, {}).setdefault(doc_id, (NFCORPUS_GRADED_LEVELS[level], False))

    records = []
    for query_id, (line, title) in titles.items():
        if query_id not in descriptions:
            continue
        record = Q2IDRecord(
            id=f"{SOURCE_NFCORPUS}/{split}/{query_id}",
            source=SOURCE_NFCORPUS,
            source_split=split,
            query_type="title",
            query=collapse_whitespace(title),
            description=collapse_whitespace(descriptions[query_id][1]),
            line=line,
        )
        for doc_id, (label, relevant) in judged.get(query_id, {}).items():
            if sentences[doc_id]:
                record.add_document(Q2IDDocument(doc_id, label, sentences[doc_id]), relevant)
            else:
                log.removed(f"{SOURCE_NFCORPUS}: empty document text")
        records.append(record)
    return records


def read_nfcorpus(data_dir: Path, log: ParseLog) -> list[Q2IDRecord]:
    """NFCorpus dev + test video queries with at least one relevant document."""
    records = [r for split in NFCORPUS_SPLITS for r in read_nfcorpus_split(data_dir, split, log)]
    return [record for record in records if is_usable(record, log)]


def nfcorpus_test_collection(data_dir: str | Path, split: str) -> dict[str, dict]:
    """One NFCorpus split as a retrieval test collection: ``{"documents": {id: text}, "queries": {kind:
    {id: text}} for kind in vid-desc / vid-titles / titles, "qrels": {query_id: {doc_id: level}}}`` with
    the official 2-1-0 levels. Strict: the first malformed line raises naming file and line."""
    folder = Path(data_dir) / NFCORPUS_DIR
    log = ParseLog()
    documents = {
        d: text for d, (_, text) in _read_id_text_file(folder / f"{split}.docs", _DOC_ID, log).items()
    }
    queries = {
        kind: {
            q: text
            for q, (_, text) in _read_id_text_file(folder / f"{split}.{kind}.queries", _QUERY_ID, log).items()
        }
        for kind in ("vid-desc", "vid-titles", "titles")
    }
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, level in _read_qrels(
        folder / f"{split}.2-1-0.qrel", NFCORPUS_RELEVANT_LEVELS, documents, log
    ):
        qrels.setdefault(query_id, {})[doc_id] = level
    return {"documents": documents, "queries": queries, "qrels": qrels}
