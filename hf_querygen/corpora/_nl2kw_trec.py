"""TREC topic files (``trec-topics/``) as nl2kw pairs: the ad hoc / WT10g / Robust04 / Terabyte / Core SGML
files (description -> title), the Web-track 2009-2014 XML topics (and their sub-topics, which UQV100
reads), TREC-COVID round 5 (question -> query) and EPIC-QA (question -> query, under the COVID topic
that shares its query); the corpus is :mod:`hf_querygen.corpora.nl2kw`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ._base import (
    ParseLog,
    check_unique,
    collapse_whitespace,
    line_numbers,
    normalize_for_matching,
    read_json,
    read_text,
    read_xml,
)
from ._nl2kw_records import _Pair

TREC_DIR = "trec-topics"


# SGML topic files in de-duplication priority (the first copy of a (title, description) pair is
# kept). TREC numbers these topics in one sequence (51-850) except Core18's new Washington Post
# topics 801-825, which collide with Terabyte06 801-850 and get their own namespace.
_TREC_SGML_FILES = (
    ("topics.adhoc.51-100.txt", "trec-adhoc"),
    ("topics.adhoc.101-150.txt", "trec-adhoc"),
    ("topics.adhoc.151-200.txt", "trec-adhoc"),
    ("topics.adhoc.451-550.txt", "trec-wt10g"),
    ("topics.robust04.txt", "trec-robust04"),
    ("topics.core17.txt", "trec-core17"),
    ("topics.core18.txt", "trec-core18"),
    ("topics.terabyte04.701-750.txt", "trec-terabyte"),
    ("topics.terabyte05.751-800.txt", "trec-terabyte"),
    ("topics.terabyte06.801-850.txt", "trec-terabyte"),
)
_TREC_WEB_FILES = tuple(
    f"topics.web.{r}.txt" for r in ("1-50", "51-100", "101-150", "151-200", "201-250", "251-300")
)
_COVID_FILE = "topics.covid-round5.xml"
_EPICQA_FILES = tuple(
    f"topics.epidemic-qa.{kind}.{rnd}.json"
    for kind in ("consumer", "expert")
    for rnd in ("prelim", "primary")
)


# ---------------------------------------------------------------- TREC SGML
_SGML_TAG = re.compile(r"<(/?)([a-zA-Z]+)>")
_SGML_PREFIX = {"num": r"Number:", "title": r"Topic:", "desc": r"Description:"}


def _sgml_fields(block: str) -> dict[str, str]:
    """Text of each field of one ``<top>`` block: a field runs from its tag to the next tag."""
    fields: dict[str, str] = {}
    tags = list(_SGML_TAG.finditer(block))
    for tag, following in zip(tags, tags[1:] + [None], strict=True):
        if tag.group(1):  # closing tag (Core18 closes its fields)
            continue
        name = tag.group(2).lower()
        text = block[tag.end() : following.start() if following else len(block)]
        prefix = _SGML_PREFIX.get(name)
        if prefix:
            text = re.sub(rf"^\s*{prefix}", "", text)
        fields.setdefault(name, collapse_whitespace(text))
    return fields


def _iter_trec_sgml(data_dir: Path, file_name: str, source: str, log: ParseLog) -> Iterator[_Pair]:
    path = data_dir / TREC_DIR / file_name
    rel = path.relative_to(data_dir).as_posix()
    text = read_text(path, log, rel)
    if text is None:
        return
    openings = list(re.finditer(r"<top>", text))
    if not openings:
        log.error(rel, 1, "no <top> topic block in a TREC topic file", "whole file")
    seen: dict[str, int | str | None] = {}
    for opening, line in zip(openings, line_numbers(text, r"<top>"), strict=True):
        closing = text.find("</top>", opening.end())
        next_opening = text.find("<top>", opening.end())
        if closing < 0 or (0 <= next_opening < closing):
            log.error(rel, line, "<top> block without a closing </top>")
            continue
        fields = _sgml_fields(text[opening.end() : closing])
        number = re.match(r"\d+", fields.get("num", ""))
        if not number:
            log.error(rel, line, "topic without a <num> number")
            continue
        number_int = int(number.group())
        if not check_unique(str(number_int), line, seen, rel, "topic number", log):
            continue
        title, description = fields.get("title", ""), fields.get("desc", "")
        if not title or not description:
            missing = "<title>" if not title else "<desc>"
            log.error(rel, line, f"topic {number_int} has an empty or missing {missing}")
            continue
        namespace = "trec-core18" if source == "trec-core18" and number_int > 800 else "trec"
        yield _Pair(
            id=f"{source}:{number_int}",
            source=source,
            topic_id=f"{namespace}:{number_int}",
            nl_query=description,
            keyword_query=title,
            language="en",
            source_file=rel,
        )


# ---------------------------------------------------------------- TREC XML
@dataclass
class WebTopic:
    """A TREC Web-track topic: its keyword query, description and sub-topic descriptions."""

    number: int
    query: str
    description: str
    subtopics: dict[int, str] = field(default_factory=dict)
    file: str = ""

    def need(self, subtopic: int) -> str | None:
        """The description of the whole topic (``subtopic`` 0) or of one sub-topic."""
        return self.description if subtopic == 0 else self.subtopics.get(subtopic)


def _web_topic_description(topic: ET.Element) -> str:
    description = collapse_whitespace(topic.findtext("description") or "")
    if description:
        return description
    # Upstream quirks (topics.web.251-300.txt): topic 296 holds its description as direct text
    # before an empty <description>; topic 269 has none at all -> its first sub-topic.
    direct = collapse_whitespace(" ".join([topic.text or ""] + [child.tail or "" for child in topic]))
    if direct:
        return direct
    return collapse_whitespace(topic.findtext("subtopic") or "")


def read_web_topics(data_dir: Path, log: ParseLog) -> dict[int, WebTopic]:
    """The TREC Web-track 2009-2014 topics (1-300) by number."""
    topics: dict[int, WebTopic] = {}
    for file_name in _TREC_WEB_FILES:
        path = data_dir / TREC_DIR / file_name
        rel = path.relative_to(data_dir).as_posix()
        root, lines = read_xml(path, rel, log, "topic")
        if root is None:
            continue
        seen: dict[str, int | str | None] = {}
        for index, topic in enumerate(root.iter("topic")):
            line = lines[index] if index < len(lines) else None
            number, query = topic.get("number", ""), collapse_whitespace(topic.findtext("query") or "")
            description = _web_topic_description(topic)
            if not number.isdigit() or not query or not description:
                log.error(rel, line, "Web-track <topic> needs a numeric number, a <query> and a description")
                continue
            if not check_unique(number, line, seen, rel, "topic number", log):
                continue
            if int(number) in topics:
                log.error(rel, line, f"topic {number} is also in {topics[int(number)].file}")
                continue
            subtopics = {}
            for subtopic in topic.iter("subtopic"):
                sub_number = subtopic.get("number", "")
                if not sub_number.isdigit():
                    log.error(rel, line, f"topic {number}: <subtopic> without a numeric number")
                    continue
                subtopics[int(sub_number)] = collapse_whitespace(subtopic.text or "")
            topics[int(number)] = WebTopic(int(number), query, description, subtopics, rel)
    return topics


def _iter_covid(data_dir: Path, log: ParseLog) -> Iterator[_Pair]:
    path = data_dir / TREC_DIR / _COVID_FILE
    rel = path.relative_to(data_dir).as_posix()
    root, lines = read_xml(path, rel, log, "topic")
    if root is None:
        return
    seen: dict[str, int | str | None] = {}
    for index, topic in enumerate(root.iter("topic")):
        number = topic.get("number", "")
        query = collapse_whitespace(topic.findtext("query") or "")
        question = collapse_whitespace(topic.findtext("question") or "")
        if not number.isdigit() or not query or not question:
            log.error(
                rel,
                lines[index] if index < len(lines) else None,
                "TREC-COVID <topic> needs a numeric number, a <query> and a <question>",
            )
            continue
        if not check_unique(
            number, lines[index] if index < len(lines) else None, seen, rel, "topic number", log
        ):
            continue
        yield _Pair(f"trec-covid:{number}", "trec-covid", f"trec-covid:{number}", question, query, "en", rel)


def _iter_epicqa(data_dir: Path, covid_topic_of_query: dict[str, str], log: ParseLog) -> Iterator[_Pair]:
    for file_name in _EPICQA_FILES:
        path = data_dir / TREC_DIR / file_name
        rel = path.relative_to(data_dir).as_posix()
        records = read_json(path, rel, log, list)
        if records is None:
            continue
        seen: dict[str, int | str | None] = {}
        for index, record in enumerate(records):
            values = [
                record.get(k) if isinstance(record, dict) else None
                for k in ("question_id", "question", "query")
            ]
            if not all(isinstance(v, str) and v.strip() for v in values):
                log.error(
                    rel, f"record {index}", "EPIC-QA record needs non-empty question_id, question and query"
                )
                continue
            question_id, question, query = (collapse_whitespace(v) for v in values)
            if not check_unique(question_id, f"record {index}", seen, rel, "question_id", log):
                continue
            topic_id = covid_topic_of_query.get(normalize_for_matching(query), f"epic-qa:{question_id}")
            yield _Pair(f"epic-qa:{question_id}", "epic-qa", topic_id, question, query, "en", rel)
