"""Q2ID quadruples before they become rows, and what every source shares.

A :class:`Q2IDRecord` holds one query with its judged documents (:class:`Q2IDDocument`) and becomes a
row of :func:`q2id_features`. The text rules (the deterministic sentence splitter, the paper's word
count), the line reader and the usability filter are shared by the source readers
(:mod:`._q2id_semeval`, :mod:`._q2id_nfcorpus`); the corpus is :mod:`hf_querygen.corpora.q2id`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ._base import ParseLog, collapse_whitespace, iter_lines, normalize_for_matching

if TYPE_CHECKING:
    import datasets

# ---------------------------------------------------------------- text
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "vs", "e.g", "i.e", "jr", "sr", "approx"})
# End punctuation (runs like "..", "?!") plus closing quotes/brackets: a sentence ends there when more text
# follows (_SENTENCE_END) or the text ends (_ENDS_THE_TEXT)
_END_MARKS = r"[.!?]+[\"')\]]*"
_SENTENCE_END = re.compile(_END_MARKS + r"(?=\s+\S)")
_ENDS_THE_TEXT = re.compile(_END_MARKS + r"$")


def ends_a_sentence(text: str) -> bool:
    """Whether ``text`` ends as :func:`split_sentences` ends a sentence within a text (its end marks)."""
    return _ENDS_THE_TEXT.search(text) is not None


def split_sentences(text: str) -> list[str]:
    """Split forum text into sentences, deterministically and without a trained model.

    A sentence ends at a line break, or after a run of ``.``, ``!`` or ``?`` (with closing quotes
    or brackets) followed by whitespace, except after a known abbreviation (``Dr.``, ``e.g.``)
    or a single-letter initial. Whitespace inside a sentence is collapsed, so
    ``" ".join(split_sentences(t)) == collapse_whitespace(t)``.
    """
    sentences: list[str] = []
    for line in text.splitlines():
        line = collapse_whitespace(line)
        start = 0
        for match in _SENTENCE_END.finditer(line):
            last_word = line[start : match.start()].rsplit(" ", 1)[-1].lower()
            if match.group().startswith(".") and match.group().count(".") == 1:
                if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
                    continue
            sentences.append(line[start : match.end()].strip())
            start = match.end()
        if line[start:].strip():
            sentences.append(line[start:].strip())
    return sentences


def paper_words(text: str) -> list[str]:
    """Words as Zhang'20 Sec. 5.1 counts them: lower-cased, white-space tokenised, non-English
    (non-ASCII) characters removed, pure-digit words dropped."""
    ascii_text = text.lower().encode("ascii", "ignore").decode("ascii")
    return [word for word in ascii_text.split() if not word.isdigit()]


# ---------------------------------------------------------------- records
@dataclass
class Q2IDDocument:
    """A judged document: its upstream id, the source's judgment and its sentences."""

    doc_id: str
    label: str  # the source's own judgment ("Good", "PotentiallyUseful", "direct link", ...)
    sentences: list[str]


@dataclass
class Q2IDRecord:
    """One quadruple before it becomes a row (see :func:`q2id_features` for the fields)."""

    id: str
    source: str
    source_split: str
    query_type: str  # "question" (SemEval) or "title" (NFCorpus, standing in for TREC keyword queries)
    query: str
    description: str
    relevant_documents: list[Q2IDDocument] = field(default_factory=list)
    irrelevant_documents: list[Q2IDDocument] = field(default_factory=list)
    line: int | None = None  # of the record's first line in its file, for messages

    def dedup_key(self) -> tuple[str, str]:
        # 2016 text replaced every comma by a semicolon: punctuation-free matching sees through it.
        return normalize_for_matching(self.query), normalize_for_matching(self.description)

    def add_document(self, document: Q2IDDocument, relevant: bool) -> None:
        (self.relevant_documents if relevant else self.irrelevant_documents).append(document)

    def to_example(self) -> dict:
        def documents(docs: list[Q2IDDocument]) -> list[dict]:
            return [{"doc_id": d.doc_id, "label": d.label, "sentences": d.sentences} for d in docs]

        return {
            "id": self.id,
            "source": self.source,
            "source_split": self.source_split,
            "query_type": self.query_type,
            "query": self.query,
            "description": self.description,
            "relevant_documents": documents(self.relevant_documents),
            "irrelevant_documents": documents(self.irrelevant_documents),
        }


def q2id_features() -> datasets.Features:
    """Explicit features; documents are lists of structs whose sentences are lists of strings."""
    from datasets import Features, List, Value

    document = {"doc_id": Value("string"), "label": Value("string"), "sentences": List(Value("string"))}
    return Features(
        {
            "id": Value("string"),
            "source": Value("string"),
            "source_split": Value("string"),
            "query_type": Value("string"),
            "query": Value("string"),
            "description": Value("string"),
            "relevant_documents": List(document),
            "irrelevant_documents": List(document),
        }
    )


# ---------------------------------------------------------------- shared by the source readers
def read_lines(path: Path, log: ParseLog) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` of a UTF-8 file (LF or CRLF, optional BOM) through the shared reader
    layer (:func:`~hf_querygen.corpora._base.iter_lines`): lines numbered as editors number them, a
    line that is not valid UTF-8 an error naming file, line and byte offset (skipped when lenient),
    an empty file an error. Blank lines are yielded (a CSV field may span them)."""
    for line in iter_lines(path, log, keep_blank=True):
        yield line.number, line.text


def is_usable(record: Q2IDRecord, log: ParseLog) -> bool:
    """Zhang'20 Sec. 3.2 removes queries without relevant documents; a quadruple also needs a
    query and a description. Removals are counted by reason."""
    for problem, missing in (
        ("empty query", not record.query),
        ("empty description", not record.description),
        ("no relevant document (removed as in the paper, Sec. 3.2)", not record.relevant_documents),
    ):
        if missing:
            log.removed(f"{record.source}: {problem}")
            return False
    return True
