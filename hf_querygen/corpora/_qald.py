"""Reader for the QALD-2 ... QALD-9 question files (XML and the three JSON layouts).

QALD is not a corpus of its own here: its hand-written keyword annotations feed the ``nl2kw``
corpus (question -> keywords, one config per language) and the ``wikianswers/seed_pairs`` config
(keyword-question seed pairs standing in for Ding & Balog's hand-labelled set). Both dedupe the
same way, through :func:`deduplicated_qald_pairs`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ._base import (
    CorpusFormatError,
    ParseLog,
    collapse_whitespace,
    normalize_for_matching,
    read_json,
    read_xml,
)

QALD_DIR = "qald"


@dataclass(frozen=True)
class QaldEntry:
    """One language version of one QALD question in one file."""

    file: str  # path relative to the data dir, e.g. "qald/9/data/qald-9-train-multilingual.json"
    edition: int
    question_id: str
    language: str
    question: str
    keywords: str  # the annotation as written, whitespace collapsed ("astronaut, female, Russian")

    @property
    def keyword_phrases(self) -> list[str]:
        """The comma-separated annotation as a list of phrases (empty phrases dropped)."""
        return [phrase for phrase in (collapse_whitespace(p) for p in self.keywords.split(",")) if phrase]


def qald_files(data_dir: Path) -> list[Path]:
    """Every QALD question file (``qald/<edition>/data/**/*.xml|json``), in a fixed order."""
    root = data_dir / QALD_DIR
    if not root.is_dir():
        raise FileNotFoundError(f"QALD folder not found: {root}")
    files = [p for p in root.glob("*/data/**/*") if p.suffix in (".xml", ".json") and p.is_file()]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def _edition_of(path: Path, data_dir: Path) -> int:
    return int(path.relative_to(data_dir / QALD_DIR).parts[0])


def _text(value: object) -> str:
    return collapse_whitespace(value) if isinstance(value, str) else ""


def _iter_xml_entries(path: Path, rel: str, edition: int, log: ParseLog) -> Iterator[QaldEntry]:
    root, question_lines = read_xml(path, rel, log, "question")
    if root is None:
        return
    for index, question in enumerate(root.iter("question")):
        line = question_lines[index] if index < len(question_lines) else None
        question_id = question.get("id")
        if not question_id:
            log.error(rel, line, "<question> without an id attribute")
            continue
        strings: dict[str, str] = {}
        keywords: dict[str, str] = {}
        for child in question:
            # QALD-2 has no lang attribute: its questions are English. The first <string lang="en">
            # wins (qald-5.xml question 20 has a second, Persian one).
            lang = child.get("lang", "en")
            if child.tag == "string":
                strings.setdefault(lang, _text(child.text))
            elif child.tag == "keywords":
                keywords.setdefault(lang, _text(child.text))
        if not any(strings.values()):
            log.error(rel, line, f"question id={question_id} has no <string> text")
            continue
        for lang, question_text in strings.items():
            if question_text:
                yield QaldEntry(rel, edition, question_id, lang, question_text, keywords.get(lang, ""))


def _json_language_entries(record: dict) -> tuple[object, list | None, str]:
    """(id, per-language list, text key) of a question record in any of the three JSON layouts."""
    if isinstance(record.get("question"), dict):  # qald-7-train-multilingual-extended-json.json
        inner = record["question"]
        return inner.get("id"), inner.get("language"), "question"
    if isinstance(record.get("body"), list):  # QALD-5 JSON
        return record.get("id"), record["body"], "string"
    return record.get("id"), record.get("question"), "string"  # QALD-6 ... 9


def _iter_json_entries(path: Path, rel: str, edition: int, log: ParseLog) -> Iterator[QaldEntry]:
    data = read_json(path, rel, log, dict)
    if data is None:
        return
    questions = data.get("questions")
    if not isinstance(questions, list):
        log.error(rel, 1, 'expected a JSON object with a "questions" list')
        return
    for index, record in enumerate(questions):
        where = f"questions[{index}]"
        if not isinstance(record, dict):
            log.error(rel, where, "question record is not a JSON object")
            continue
        question_id, languages, text_key = _json_language_entries(record)
        if question_id is None or not isinstance(languages, list):
            log.error(rel, where, "question record without an id or a per-language list")
            continue
        seen: set[str] = set()
        for entry in languages:
            if not isinstance(entry, dict) or not isinstance(entry.get("language"), str):
                log.error(rel, where, f"question id={question_id}: language entry without a language code")
                break
            lang, question_text = entry["language"], _text(entry.get(text_key))
            if lang in seen or not question_text:
                continue
            seen.add(lang)
            yield QaldEntry(rel, edition, str(question_id), lang, question_text, _text(entry.get("keywords")))


def _parse_all(data_dir: Path, log: ParseLog) -> Iterator[QaldEntry]:
    for path in qald_files(data_dir):
        rel = path.relative_to(data_dir).as_posix()
        edition = _edition_of(path, data_dir)
        reader = _iter_xml_entries if path.suffix == ".xml" else _iter_json_entries
        yield from reader(path, rel, edition, log)


@functools.lru_cache(maxsize=4)
def _cached_entries(
    data_dir: Path, file_signature: tuple, strict: bool
) -> tuple[tuple[QaldEntry, ...], tuple[CorpusFormatError, ...]]:
    # file_signature (path, size, mtime of every file) is part of the key, so that an edited or
    # replaced data dir is parsed again; a strict parse that fails raises and is not cached.
    log = ParseLog(strict=strict)
    entries = tuple(_parse_all(data_dir, log))
    return entries, tuple(log.errors)


def iter_qald_entries(data_dir: Path, log: ParseLog) -> Iterator[QaldEntry]:
    """Every (file, question, language) entry of every QALD file, with or without keywords.

    All files are parsed once per process and data-dir state (the ``nl2kw`` configs and
    ``seed_pairs`` each need every file); skipped records of a lenient parse are re-reported to
    ``log`` on every call.
    """
    signature = tuple((p.as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in qald_files(data_dir))
    entries, errors = _cached_entries(data_dir.resolve(), signature, log.strict)
    log.errors.extend(errors)
    yield from entries


def deduplicated_qald_pairs(data_dir: Path, language: str, log: ParseLog) -> list[QaldEntry]:
    """The distinct ``language`` questions that carry keywords, one entry per question.

    The same question recurs across files and editions (answers / no answers, XML / JSON twins,
    later editions re-using earlier questions). Questions are identified by
    :func:`normalize_for_matching`; the entry of the latest edition wins (ties: the first file in
    path order): the newest annotation is taken as the current one. Removed repeats are counted in
    ``log``; entries without keywords (e.g. QALD-5 hybrid questions) are counted too.
    """
    winners: dict[str, QaldEntry] = {}
    without_keywords = repeats = 0
    for entry in iter_qald_entries(data_dir, log):
        if entry.language != language:
            continue
        if not entry.keyword_phrases:
            without_keywords += 1
            continue
        key = normalize_for_matching(entry.question)
        current = winners.get(key)
        if current is not None:
            repeats += 1
            if entry.edition <= current.edition:
                continue
        winners[key] = entry
    log.removed(f"qald: {language} question entries without keywords", without_keywords)
    log.removed(f"qald: repeated {language} questions across files/editions (latest edition kept)", repeats)
    return sorted(winners.values(), key=lambda e: (e.file, e.question_id))


#: a DBpedia resource in a SPARQL query or an answer URI (the name is a Wikipedia article title)
_RESOURCE_PATTERNS = (r"dbpedia\.org/resource/([^\s\"'<>\]\[\\{}|^`]+)", r"\bres:([A-Za-z0-9_%().,'-]+)")


def dbpedia_resource_titles(data_dir: Path, min_words: int = 2, max_words: int = 7) -> set[str]:
    """Multi-word Wikipedia article titles named in the QALD files (DBpedia resource names in queries and
    answers, e.g. ``res:Barack_Obama`` -> ``barack obama``), normalised with
    :func:`~hf_querygen.text.normalize_for_matching`; a trailing ``(disambiguation)`` part is dropped.
    A title source that exists without the Webis-QSeC-10 feature files (query segmentation features)."""
    import re
    from urllib.parse import unquote

    patterns = [re.compile(p) for p in _RESOURCE_PATTERNS]
    titles: set[str] = set()
    for path in qald_files(data_dir):
        text = path.read_text(encoding="utf-8", errors="replace")
        for pattern in patterns:
            for name in pattern.findall(text):
                name = unquote(name).replace("_", " ")
                name = re.sub(r"\s*\([^)]*\)?\s*$", "", name)  # "Mercury (planet)" -> "Mercury"
                title = normalize_for_matching(name)
                if min_words <= len(title.split()) <= max_words:
                    titles.add(title)
    return titles
