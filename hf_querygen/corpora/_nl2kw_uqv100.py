"""UQV100 as nl2kw pairs: every distinct crowd query variation, paired with the description of the
Web-track topic (or sub-topic) its backstory was written for (:mod:`._nl2kw_trec`), ``query_count`` = how
many workers typed it; the corpus is :mod:`hf_querygen.corpora.nl2kw`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ._base import (
    ParseLog,
    check_unique,
    collapse_whitespace,
    iter_lines,
)
from ._nl2kw_records import _Pair
from ._nl2kw_trec import WebTopic

UQV100_FILE = "query-variations/uqv100/uqv100-systemInputRun-uniqueOnly-spelledNormQueries.tsv"


# ---------------------------------------------------------------- UQV100
def _iter_uqv100(data_dir: Path, web_topics: dict[int, WebTopic], log: ParseLog) -> Iterator[_Pair]:
    path = data_dir / UQV100_FILE
    rel = path.relative_to(data_dir).as_posix()
    seen: dict[str, int | str | None] = {}
    for record in iter_lines(path, log, rel):  # the file starts with a BOM
        line_number, line = record.number, record.text
        columns = line.split("\t")
        meta = columns[0].split("|")
        if len(columns) != 2 or len(meta) != 7:
            log.error(rel, line_number, "expected '<7 |-separated metadata fields>\\t<query>'")
            continue
        topic_field, worker_query_id, raw_count = meta[1], meta[3], meta[6]
        topic_match = re.fullmatch(r"(\d+)-(\d+)", topic_field)
        query = collapse_whitespace(columns[1])
        if not topic_match or not raw_count.isdigit() or not query:
            log.error(
                rel, line_number, f"bad topic field {topic_field!r}, count {raw_count!r} or empty query"
            )
            continue
        # (topic, worker query) identifies a row: a repeated row would double the row's worker count
        if not check_unique(f"{topic_field}|{worker_query_id}", line_number, seen, rel, "query row", log):
            continue
        topic_number, subtopic = int(topic_match.group(1)), int(topic_match.group(2))
        topic = web_topics.get(topic_number)
        need = topic.need(subtopic) if topic is not None else None
        if not need:
            log.error(rel, line_number, f"no Web-track description for topic {topic_field}")
            continue
        yield _Pair(
            id=f"uqv100:{topic_field}:{worker_query_id}",
            source="uqv100",
            topic_id=f"trec-web:{topic_number}",
            nl_query=need,
            keyword_query=query,
            language="en",
            source_file=rel,
            query_count=int(raw_count),
        )
