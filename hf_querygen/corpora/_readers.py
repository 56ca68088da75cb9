"""The reader layer every corpus reads its raw files through: bytes / UTF-8 / line / XML / JSON readers
with file:line errors, streamed XML records and line-aligned file pairs."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

from ..errors import CorpusFileMissingError, CorpusFormatError
from ..text import normalize_for_matching
from ._data_dir import DATA_DIR_ENV
from ._parse_log import _REST_OF_FILE, _WHOLE_FILE, ParseLog

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    pass


# ---------------------------------------------------------------- the reader layer
# Every raw file of every corpus is read through these functions, so that every corpus reports
# decode errors, empty files, line numbers and out-of-step aligned files the same way:
#
# * lines are counted as editors count them: a line ends at "\n" ("\r\n" is one ending); a stray
#   "\r" inside a line is kept as whitespace and never starts a new line (str.splitlines() and
#   text-mode files split on it, which shifted every later line number);
# * bytes that are not UTF-8 are an error naming file, line, column and byte offset; a lenient build
#   skips that line (line files) or that file (JSON / XML documents, which cannot be resumed);
# * a file with no record is an error (a lenient build skips it and says so per file);
# * a missing file raises :class:`CorpusFileMissingError` naming it and the data dir to pass.
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Line:
    """One line of a raw text file: 1-based ``number`` counting ``\\n`` only, ``offset`` of its first
    byte in the file, ``text`` without the line ending and (line 1) without a byte-order mark."""

    number: int
    offset: int
    text: str


def _display(path: str | os.PathLike, name: str | os.PathLike | None) -> str:
    return str(name) if name is not None else str(path)


def read_raw(path: Path, log: ParseLog, name: str | os.PathLike | None = None) -> bytes | None:
    """The bytes of a corpus file, or ``None`` (after :meth:`ParseLog.error`) when the file holds
    nothing but whitespace and a byte-order mark. A missing file raises
    :class:`CorpusFileMissingError`."""
    path = Path(path)
    if not path.is_file():
        raise CorpusFileMissingError(
            f"corpus file not found: {_display(path, name)} (looked in {path.parent}); pass the folder "
            f"that holds the raw corpora as data_dir= / --data-dir, or set ${DATA_DIR_ENV}"
        )
    raw = path.read_bytes()
    if not raw.removeprefix(UTF8_BOM).strip():
        log.error(_display(path, name), None, f"empty file ({len(raw)} bytes, no record)", _WHOLE_FILE)
        return None
    return raw


def decode_error_message(raw: bytes, error: UnicodeDecodeError, base_offset: int = 0) -> tuple[int, str]:
    """``(line, message)`` for invalid UTF-8 at ``error.start`` of ``raw`` (``base_offset`` = the file
    offset of ``raw[0]`` when ``raw`` is one line of a larger file, whose line is then the caller's)."""
    line = raw.count(b"\n", 0, error.start) + 1
    column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
    bad = raw[error.start : error.end].hex(" ")
    return line, (
        f"not valid UTF-8: byte(s) {bad} at column {column} (byte offset {base_offset + error.start}); "
        "re-encode the file as UTF-8"
    )


def iter_lines(
    path: Path,
    log: ParseLog,
    name: str | os.PathLike | None = None,
    blank_is_error: bool = False,
    keep_blank: bool = False,
) -> Iterator[Line]:
    """The lines of a UTF-8 text file (LF or CRLF, optional BOM), numbered as editors number them.

    A line that is not valid UTF-8 is reported (file, line, column, byte offset) and skipped when
    lenient. Blank lines are not yielded; with ``blank_is_error`` one inside the file is an error
    (blank lines at the end are not). A file without a non-blank line is an error; the final
    newline does not make an empty last line.
    """
    raw = read_raw(path, log, name)
    if raw is None:
        return
    shown = _display(path, name)
    start = len(UTF8_BOM) if raw.startswith(UTF8_BOM) else 0
    number, pending_blank, yielded = 0, [], 0
    size = len(raw)
    while start < size:
        end = raw.find(b"\n", start)
        end = size if end < 0 else end
        number += 1
        chunk = raw[start:end]
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as err:
            log.error(shown, number, decode_error_message(chunk, err, start)[1])
        else:
            if "\x00" in text:  # a NUL would survive into the dataset and the tokenizers
                log.error(shown, number, nul_message(text))
                start = end + 1
                continue
            if not text.strip() and not keep_blank:
                pending_blank.append(number)
            else:
                if blank_is_error:
                    for blank in pending_blank:
                        log.error(shown, blank, "empty line inside the file (a record is missing)")
                pending_blank = []
                yielded += bool(text.strip())
                yield Line(number, start, text)
        start = end + 1
    if not yielded and not log.errors_for(shown):
        log.error(shown, None, "no record: every line is blank", _WHOLE_FILE)


def read_text(path: Path, log: ParseLog, name: str | os.PathLike | None = None) -> str | None:
    """A whole UTF-8 document (JSON, XML, SGML) as text, BOM removed; ``None`` when the file is empty
    or not UTF-8 (reported with line, column and byte offset; a lenient build skips the file)."""
    raw = read_raw(path, log, name)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line, message = decode_error_message(raw, err)
        log.error(_display(path, name), line, message, _WHOLE_FILE)
        return None
    # a raw NUL byte, or one escaped as JSON \u0000 / XML &#0; that the parser would turn into one
    nul = _NUL_IN_DOCUMENT.search(text)
    if nul is not None:
        line = text.count("\n", 0, nul.start()) + 1
        column = nul.start() - (text.rfind("\n", 0, nul.start()) + 1) + 1
        log.error(_display(path, name), line, f"NUL character at column {column}", _WHOLE_FILE)
        return None
    return text


#: NUL in a document: the byte itself, JSON's \u0000 (not preceded by another backslash), XML's &#0;
_NUL_IN_DOCUMENT = re.compile(r"\x00|(?<!\\)\\u0000|&#0+;|&#x0+;", re.IGNORECASE)


def nul_message(text: str) -> str:
    """The error for a line holding a NUL character (names its column)."""
    return f"NUL character at column {text.index(chr(0)) + 1}"


def line_numbers(text: str, pattern: str) -> list[int]:
    """The 1-based line of every match of the regex ``pattern`` in ``text``, in one pass (for
    error messages: ElementTree and json keep no line numbers of their elements)."""
    lines, line, previous = [], 1, 0
    for match in re.finditer(pattern, text):
        line += text.count("\n", previous, match.start())
        previous = match.start()
        lines.append(line)
    return lines


_LONE_CR = re.compile(rb"\r(?!\n)")


def _xml_bytes(text: str) -> bytes:
    # XML parsers count a lone "\r" as a line break (XML 1.0 Sec. 2.11), editors do not: make it a
    # space (whitespace either way once the text is collapsed) so that expat's lines are the editor's.
    return _LONE_CR.sub(b" ", text.encode("utf-8"))


def read_xml(
    path: Path, rel: str, log: ParseLog, element: str
) -> tuple[ElementTree.Element | None, list[int]]:
    """The root of an XML file and the line of each ``<element`` opening tag, in document order.

    A file that is empty, not UTF-8, not well-formed (reported with the line of the parse error;
    ``rel`` names it) or holds no ``<element>`` at all gives ``(None, [])``, so a lenient build skips
    the whole file (and says so in its per-file summary).
    """
    text = read_text(path, log, rel)
    if text is None:
        return None, []
    try:
        root = ElementTree.fromstring(_xml_bytes(text))
    except ElementTree.ParseError as err:
        log.error(rel, err.position[0], f"malformed XML: {err}", _WHOLE_FILE)
        return None, []
    if root.find(f".//{element}") is None and root.tag != element:
        log.error(rel, 1, f"no <{element}> element in the file", _WHOLE_FILE)
        return None, []
    return root, line_numbers(text, rf"<{re.escape(element)}[\s>/]")


def read_json(path: Path, rel: str, log: ParseLog, expected: type) -> object | None:
    """A parsed JSON file (a leading BOM is allowed), or ``None`` after reporting an empty or non-UTF-8
    file, a syntax error with its line, or a top-level value that is empty or not of the ``expected``
    type (``list`` / ``dict``). A lenient build then skips the whole file."""
    text = read_text(path, log, rel)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        log.error(rel, err.lineno, f"malformed JSON: {err.msg} (column {err.colno})", _WHOLE_FILE)
        return None
    except RecursionError:
        log.error(rel, 1, "malformed JSON: nested too deeply", _WHOLE_FILE)
        return None
    if not isinstance(data, expected) or not data:
        log.error(
            rel,
            1,
            f"expected a non-empty JSON {expected.__name__} at the top level, got {data!r:.40}",
            _WHOLE_FILE,
        )
        return None
    return data


def check_unique(
    key: str, line: int | str | None, seen: dict[str, int | str | None], path: str, what: str, log: ParseLog
) -> bool:
    """Record ``key`` as seen at ``line``; a repeat is an error naming both places (False: skip it)."""
    if key in seen:
        log.error(path, line, f"duplicate {what} {key!r} (first at {seen[key]})")
        return False
    seen[key] = line
    return True


# ---------------------------------------------------------------- streamed XML records
class XmlElement:
    """A parsed element of one record with the line of its start tag (for error messages)."""

    __slots__ = ("tag", "attributes", "line", "children", "_text")

    def __init__(self, tag: str, attributes: dict[str, str], line: int):
        self.tag, self.attributes, self.line = tag, attributes, line
        self.children: list[XmlElement] = []
        self._text: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self._text)

    def findall(self, tag: str) -> list[XmlElement]:
        return [child for child in self.children if child.tag == tag]

    def attribute(self, name: str, path: str | os.PathLike) -> str:
        if name not in self.attributes:
            raise CorpusFormatError(path, self.line, f"<{self.tag}> has no {name} attribute")
        return self.attributes[name]

    def only_child(self, tag: str, path: str | os.PathLike) -> XmlElement:
        found = self.findall(tag)
        if len(found) != 1:
            raise CorpusFormatError(
                path, self.line, f"<{self.tag}> must have exactly one <{tag}> element, found {len(found)}"
            )
        return found[0]

    def child_text(self, tag: str, path: str | os.PathLike) -> str:
        return self.only_child(tag, path).text


def iter_xml_records(
    path: Path, record_tag: str, log: ParseLog, chunk_size: int = 1 << 20
) -> Iterator[XmlElement]:
    """Stream the ``<record_tag>`` children of the root element of an XML file with expat, one
    subtree at a time, every element carrying its line number (counted as editors count lines).

    A child of the root with another tag is an error; so is malformed XML, whose message names
    the line expat stopped at, and so are an empty file, bytes that are not UTF-8 and a file
    without any record. Malformed XML cannot be resumed: in lenient mode the error is recorded
    and the rest of the file is skipped (the records before it are kept).
    """
    import xml.parsers.expat

    text = read_text(path, log)
    if text is None:
        return
    data = _xml_bytes(text)
    parser = xml.parsers.expat.ParserCreate("utf-8")
    parser.buffer_text = True
    stack: list[XmlElement] = []
    finished: list[XmlElement | CorpusFormatError] = []
    records = 0

    def start(tag: str, attributes: dict[str, str]) -> None:
        element = XmlElement(tag, attributes, parser.CurrentLineNumber)
        if len(stack) >= 2:  # inside a record: keep the subtree (outside it nothing is kept)
            stack[-1].children.append(element)
        stack.append(element)

    def end(tag: str) -> None:
        element = stack.pop()
        if len(stack) == 1:
            if tag == record_tag:
                finished.append(element)
            else:
                finished.append(
                    CorpusFormatError(
                        path, element.line, f"unexpected <{tag}> element (expected <{record_tag}>)"
                    )
                )

    def characters(chunk: str) -> None:
        if len(stack) >= 2:
            stack[-1]._text.append(chunk)

    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.CharacterDataHandler = characters
    for position in range(0, len(data) + 1, chunk_size):
        chunk = data[position : position + chunk_size]
        try:
            parser.Parse(chunk, position + chunk_size > len(data))
        except xml.parsers.expat.ExpatError as err:
            broken = err
        else:
            broken = None
        for item in finished:  # the records completed before a syntax error are still good
            if isinstance(item, CorpusFormatError):
                log.error(item.path, item.line, item.reason)
            else:
                records += 1
                yield item
        finished.clear()
        if broken is not None:
            message = xml.parsers.expat.errors.messages[broken.code]
            log.error(path, broken.lineno, f"malformed XML: {message}", _REST_OF_FILE)
            return
    if not records:
        log.error(path, None, f"no <{record_tag}> record in the file", _WHOLE_FILE)


# ---------------------------------------------------------------- line-aligned file pairs
def _word_overlap(first: frozenset[str], second: frozenset[str]) -> float:
    return len(first & second) / max(1, min(len(first), len(second)))


def find_misalignment(
    first: Sequence[str], second: Sequence[str], window: int = 50, threshold: float = 0.06
) -> tuple[int, str] | None:
    """Where two line-aligned files of paraphrase pairs fall out of step, or ``None``.

    Line i of both files should be a pair, and a pair shares words. For every line i we compare
    the word overlap of the aligned pair (i, i) with the overlap of the pairs shifted by one line,
    (i+1, i) and (i, i+1). When over ``window`` consecutive lines a shifted pairing shares on
    average ``threshold`` more of its words than the aligned one, a line was lost or added; the
    line where it happened is the change point: the line from which on the shifted pairing wins
    (the minimum of the running sum of (shifted - aligned) around the first such window). On the
    real Paralex and Quora files the aligned pairing wins every window by a clear margin (the best
    shifted window is at most +0.02 for Paralex, where consecutive lines are paraphrases of each
    other, and below -0.39 for Quora); one lost line gives +0.12 / +0.55. When neighbouring
    lines are paraphrases of each other the change point can be a few lines early or late.

    Returns ``(line, which)``: the 1-based line and which file has the extra line before it
    (``"first"``: line i of the first file pairs with line i-1 of the second from there on).
    """
    n = min(len(first), len(second)) - 1
    if n < window:
        return None
    words_a = [frozenset(normalize_for_matching(t).split()) for t in first[: n + 1]]
    words_b = [frozenset(normalize_for_matching(t).split()) for t in second[: n + 1]]
    aligned = [_word_overlap(words_a[i], words_b[i]) for i in range(n)]
    best: tuple[int, str, list[float]] | None = None
    for which, (da, db) in (("first", (1, 0)), ("second", (0, 1))):
        running = [0.0]
        for i in range(n):
            running.append(running[-1] + _word_overlap(words_a[i + da], words_b[i + db]) - aligned[i])
        for k in range(n - window + 1):
            if (running[k + window] - running[k]) / window > threshold:
                if best is None or k < best[0]:
                    best = (k, which, running)
                break
    if best is None:
        return None
    k, which, running = best
    low, high = max(0, k - window), min(n, k + window)
    change = min(range(low, high + 1), key=lambda j: (running[j], j))
    return change + 1, which


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def read_aligned_lines(
    paths: tuple[Path, Path], names: tuple[str, str], log: ParseLog
) -> list[tuple[int, str, str]]:
    """``(line, text of file 1, text of file 2)`` for every line of two line-aligned files.

    Checked pair by pair: a line that is blank or not UTF-8 on either side skips the pair (reported
    for its file); files that fall out of step (a line lost or added in one of them, found by
    :func:`find_misalignment`) are an error naming the first line where they do, and a lenient build
    drops every pair from that line on (counted); a file that ends early is blamed as truncated
    (the other file has lines beyond its end). Blank lines at the very end are not records.
    """
    lines = []
    for path, name in zip(paths, names, strict=True):
        by_number = {line.number: line.text for line in iter_lines(path, log, name, blank_is_error=True)}
        last = max(by_number, default=0)
        lines.append((by_number, last))
    (first, n_first), (second, n_second) = lines
    n = min(n_first, n_second)
    cut = n + 1
    dense_a = [first.get(i, "") for i in range(1, n + 1)]
    dense_b = [second.get(i, "") for i in range(1, n + 1)]
    shifted = find_misalignment(dense_a, dense_b)
    if shifted is not None:
        line, which = shifted
        extra, other = (names[0], names[1]) if which == "first" else (names[1], names[0])
        log.error(
            extra,
            line,
            f"{names[0]} and {names[1]} fall out of step here: from this line on, line i of {extra} "
            f"pairs with line i-1 of {other} (a line was added to {extra} or lost from {other} "
            "just before this line); every later pair would be wrong",
            _REST_OF_FILE,
        )
        cut = line
    elif n_first != n_second:
        short, long_ = (0, 1) if n_first < n_second else (1, 0)
        longest = max(n_first, n_second)
        if not _ends_with_newline(paths[short]):  # cut off mid-line: the short one was truncated
            blamed, message = (
                short,
                (
                    f"{names[short]} ends after line {n} without a final newline while {names[long_]} has "
                    f"{longest} lines: {names[short]} looks truncated"
                ),
            )
        else:
            blamed, message = (
                long_,
                (
                    f"lines {n + 1}-{longest} of {names[long_]} have no counterpart: "
                    f"{names[short]} ends after line {n} (lines added to {names[long_]}, "
                    f"or {names[short]} lost its last lines)"
                ),
            )
        log.error(names[blamed], n + 1, message, _REST_OF_FILE)
    dropped = sum(1 for i in range(cut, n + 1) if i in first and i in second)
    log.removed(f"{names[0]} / {names[1]}: pairs after the line where the files fall out of step", dropped)
    return [(i, first[i], second[i]) for i in range(1, min(cut, n + 1)) if i in first and i in second]
