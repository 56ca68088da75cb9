"""``nl2kw``: natural-language query -> keyword query pairs (stand-in for Liu et al. CIKM'18's
unreleased Baidu Knows corpus; also the task of Song et al. SIGIR'17).

Config ``en`` pools every English source in ``shared/data``:

* TREC topic files (``trec-topics/``): description -> title. Ad hoc 51-200, WT10g 451-550,
  Robust04, Terabyte 2004-06, Core17/18 (SGML) and Web 2009-2014 (XML). Core17/18 re-use Robust04
  topics: exact repeats of (title, description) are removed, reworded ones kept under the same
  topic id (so they land in the same split).
* TREC-COVID round 5 (question -> query) and EPIC-QA (TAC 2020; question -> query). EPIC-QA
  questions were written for TREC-COVID topics and share their keyword queries: they get the
  COVID topic as ``topic_id`` so that a topic's questions never straddle splits.
* UQV100: every distinct crowd query variation, paired with the description of the Web-track topic
  (or sub-topic) its backstory was written for; ``query_count`` = how many workers typed it.
* QALD-2 ... 9 English questions -> their hand-written keywords (deduplicated across editions).

Every other language with QALD keyword annotations is a config of its own (QALD only).

Each example carries the keywords as words normalised by :func:`normalize_for_matching`, split into
``extractive_keywords`` (occurring in the normalised ``nl_query``) and ``generative_keywords``
(Liu'18 Sec. 3 and Table 3). Splits follow Liu'18 Sec. 5.1 (test 20%, validation 10% of the rest),
grouped by ``topic_id`` and deterministic (:func:`grouped_split`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ._base import (
    ParseLog,
    check_unique,
    collapse_whitespace,
    dataset_from_columns,
    grouped_split,
    iter_lines,
    line_numbers,
    normalize_for_matching,
    quiet_progress,
    read_json,
    read_text,
    read_xml,
    register_corpus,
)
from ._qald import deduplicated_qald_pairs

__all__ = [
    "CONFIGS",
    "PAPER_STATISTICS",
    "WebTopic",
    "build_nl2kw",
    "corpus_stats",
    "normalize_for_matching",
    "read_web_topics",
    "split_keywords",
]

TREC_DIR = "trec-topics"
UQV100_FILE = "query-variations/uqv100/uqv100-systemInputRun-uniqueOnly-spelledNormQueries.tsv"

QALD_LANGUAGES = ("de", "es", "fa", "fr", "hi_IN", "it", "nl", "pt", "pt_BR", "ro", "ru")
CONFIGS = {
    "en": "English: TREC topics (description -> title), TREC-COVID and EPIC-QA (question -> query), "
    "UQV100 variations (topic description -> user query), QALD-2..9 (question -> keywords)",
    **{lang: f"QALD-2..9 questions -> keyword annotations in language {lang!r}" for lang in QALD_LANGUAGES},
}

# Liu'18 Table 1 and Sec. 3/5.1 (Baidu Knows, Chinese).
PAPER_STATISTICS = {
    "question_keyword_query_pairs": 11296,
    "avg_keywords_per_keyword_query": 3.05,
    "extractive_keyword_share": 0.55,
    "split": "train/test 8:2, 10% of train as validation",
}

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


@dataclass
class _Pair:
    """One example before the derived keyword fields are computed."""

    id: str
    source: str
    topic_id: str
    nl_query: str
    keyword_query: str
    language: str
    source_file: str
    query_count: int = 1


def _features():
    import datasets

    words = datasets.List(datasets.Value("string"))
    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "source": datasets.Value("string"),
            "topic_id": datasets.Value("string"),
            "nl_query": datasets.Value("string"),
            "keyword_query": datasets.Value("string"),
            "keywords": words,
            "language": datasets.Value("string"),
            "extractive_keywords": words,
            "generative_keywords": words,
            "query_count": datasets.Value("int32"),
            "source_file": datasets.Value("string"),
        }
    )


# ---------------------------------------------------------------- keywords
def split_keywords(nl_query: str, keyword_query: str) -> tuple[list[str], list[str], list[str]]:
    """``(keywords, extractive, generative)`` of one pair (Liu'18 Sec. 3: y = y^p + y^g).

    Keywords are the distinct words of the normalised keyword query, in order; a keyword is
    extractive when it is a word of the normalised natural-language query.
    """
    keywords = list(dict.fromkeys(normalize_for_matching(keyword_query).split()))
    source_words = set(normalize_for_matching(nl_query).split())
    extractive = [k for k in keywords if k in source_words]
    generative = [k for k in keywords if k not in source_words]
    return keywords, extractive, generative


def _add_keyword_fields(batch: dict) -> dict:
    columns = [
        split_keywords(nl, kw) for nl, kw in zip(batch["nl_query"], batch["keyword_query"], strict=True)
    ]
    return {
        "keywords": [c[0] for c in columns],
        "extractive_keywords": [c[1] for c in columns],
        "generative_keywords": [c[2] for c in columns],
    }


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


# ---------------------------------------------------------------- QALD
def _iter_qald(data_dir: Path, language: str, log: ParseLog) -> Iterator[_Pair]:
    for entry in deduplicated_qald_pairs(data_dir, language, log):
        key = normalize_for_matching(entry.question)
        yield _Pair(
            id=f"qald-{entry.edition}:{Path(entry.file).stem}:{entry.question_id}:{language}",
            source=f"qald-{entry.edition}",
            topic_id=f"qald:{key}",  # one topic per distinct question
            nl_query=entry.question,
            keyword_query=", ".join(entry.keyword_phrases),
            language=language,
            source_file=entry.file,
        )


# ---------------------------------------------------------------- assembly
def _english_pairs(data_dir: Path, log: ParseLog) -> Iterator[_Pair]:
    for file_name, source in _TREC_SGML_FILES:
        yield from _iter_trec_sgml(data_dir, file_name, source, log)
    web_topics = read_web_topics(data_dir, log)
    for topic in web_topics.values():
        yield _Pair(
            f"trec-web:{topic.number}",
            "trec-web",
            f"trec-web:{topic.number}",
            topic.description,
            topic.query,
            "en",
            topic.file,
        )
    covid = list(_iter_covid(data_dir, log))
    yield from covid
    yield from _iter_epicqa(
        data_dir, {normalize_for_matching(p.keyword_query): p.topic_id for p in covid}, log
    )
    yield from _iter_uqv100(data_dir, web_topics, log)
    yield from _iter_qald(data_dir, "en", log)


def _deduplicate(pairs: Iterator[_Pair], log: ParseLog) -> list[_Pair]:
    """Drop repeats of a normalised (nl_query, keyword_query) pair; the first source wins."""
    kept: dict[tuple[str, str], _Pair] = {}
    removed: Counter = Counter()
    for pair in pairs:
        key = (normalize_for_matching(pair.nl_query), normalize_for_matching(pair.keyword_query))
        if key in kept:
            first = kept[key]
            removed[f"duplicate (nl_query, keyword_query) pair: {pair.source} repeats {first.source}"] += 1
            if first.source == pair.source:  # UQV100 spellings that normalise alike: pool their workers
                first.query_count += pair.query_count
            continue
        kept[key] = pair
    for reason, count in sorted(removed.items()):
        log.removed(reason, count)
    return list(kept.values())


@register_corpus(
    "nl2kw",
    configs=CONFIGS,
    default_config="en",
    description="Natural-language query -> keyword query pairs (Liu et al. CIKM'18; Song et al. SIGIR'17)",
)
def build_nl2kw(config: str, data_dir: Path, log: ParseLog):
    """Build one ``nl2kw`` config as a ``DatasetDict`` with train / validation / test splits."""
    import datasets

    raw = _english_pairs(data_dir, log) if config == "en" else _iter_qald(data_dir, config, log)
    pairs = sorted(_deduplicate(raw, log), key=lambda p: p.id)
    split_of = grouped_split(
        [p.topic_id for p in pairs], test_fraction=0.2, validation_fraction=0.1, salt="nl2kw"
    )
    features = _features()
    base_features = datasets.Features({name: features[name] for name in _Pair.__dataclass_fields__})
    splits = {}
    for split in ("train", "validation", "test"):
        # One table per split (not select() over one table): no index mapping to drag along.
        members = [p for p, s in zip(pairs, split_of, strict=True) if s == split]
        columns = {name: [getattr(p, name) for p in members] for name in base_features}
        dataset = dataset_from_columns(columns, base_features)
        with quiet_progress():
            dataset = dataset.map(_add_keyword_fields, batched=True, features=features)
        splits[split] = dataset.select_columns(list(features))
    return datasets.DatasetDict(splits)


# ---------------------------------------------------------------- statistics
def corpus_stats(config: str, data_dir: str | Path | None = None) -> dict:
    """Paper-style statistics of one config (Liu'18 Table 1 / Sec. 3), with the paper's numbers."""
    from ._base import load_corpus

    dataset_dict, log = load_corpus("nl2kw", config, data_dir=data_dir, return_log=True)
    stats: dict = {"config": config, "splits": {}}
    totals = Counter()
    sources: Counter = Counter()
    for split, ds in dataset_dict.items():
        columns = ds.to_dict()  # whole columns at once: iterating a datasets Column decodes row by row
        n_keywords = sum(len(k) for k in columns["keywords"])
        n_extractive = sum(len(k) for k in columns["extractive_keywords"])
        n_words = sum(len(normalize_for_matching(q).split()) for q in columns["nl_query"])
        sources.update(columns["source"])
        stats["splits"][split] = {
            "examples": ds.num_rows,
            "topics": len(set(columns["topic_id"])),
            "avg_nl_query_words": round(n_words / max(ds.num_rows, 1), 2),
            "avg_keywords": round(n_keywords / max(ds.num_rows, 1), 2),
            "extractive_keyword_share": round(n_extractive / max(n_keywords, 1), 4),
        }
        totals.update(examples=ds.num_rows, keywords=n_keywords, extractive=n_extractive, words=n_words)
    stats["total"] = {
        "examples": totals["examples"],
        "avg_nl_query_words": round(totals["words"] / max(totals["examples"], 1), 2),
        "avg_keywords": round(totals["keywords"] / max(totals["examples"], 1), 2),
        "extractive_keyword_share": round(totals["extractive"] / max(totals["keywords"], 1), 4),
    }
    stats["beside_paper"] = {
        "question_keyword_query_pairs": {
            "ours": totals["examples"],
            "paper": PAPER_STATISTICS["question_keyword_query_pairs"],
        },
        "avg_keywords_per_keyword_query": {
            "ours": stats["total"]["avg_keywords"],
            "paper": PAPER_STATISTICS["avg_keywords_per_keyword_query"],
        },
        "extractive_keyword_share": {
            "ours": stats["total"]["extractive_keyword_share"],
            "paper": PAPER_STATISTICS["extractive_keyword_share"],
        },
    }
    stats["examples_per_source"] = dict(sorted(sources.items()))
    stats["build_log"] = log.summary()
    stats["paper"] = PAPER_STATISTICS
    return stats
