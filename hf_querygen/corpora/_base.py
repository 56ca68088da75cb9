"""Shared machinery for the corpus builders: data-dir resolution, strict/lenient error
reporting with file and line, the corpus registry, deterministic grouped splits, and writing a
Hub-ready dataset folder (parquet + dataset card whose YAML header is derived from the data).

Every builder module registers itself with :func:`register_corpus`; users call
:func:`hf_querygen.load_corpus`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

from ..errors import CorpusCountWarning, CorpusFileMissingError, CorpusFormatError, InvalidInputError
from ..registry import Registry
from ..text import collapse_whitespace, normalize_for_matching  # noqa: F401  (re-exported)

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    import datasets

DATA_DIR_ENV = "HF_QUERYGEN_DATA_DIR"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Where the raw corpus files live: the argument, else ``$HF_QUERYGEN_DATA_DIR``, else
    ``../shared/data`` (beside the current directory or beside the project checkout)."""
    candidates: list[Path] = []
    if data_dir is not None:
        candidates.append(Path(data_dir))
    elif os.environ.get(DATA_DIR_ENV):
        candidates.append(Path(os.environ[DATA_DIR_ENV]))
    else:
        candidates += [Path.cwd().parent / "shared" / "data", _PACKAGE_ROOT.parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise CorpusFileMissingError(
        f"No corpus data directory found (tried {tried}). Pass data_dir=... or set ${DATA_DIR_ENV}."
    )


_WHOLE_FILE = "whole file"
_REST_OF_FILE = "rest of the file"


def _reason_kind(message: str) -> str:
    """A message with its specifics (quoted values, numbers) blanked, to group skips by reason."""
    kind = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", message)
    # standalone numbers only: "UTF-8" and "val.q1" keep their digits, "line 12" becomes "line N"
    return re.sub(r"(?<![\w.-])\d+(?![\w.])", "N", kind)[:160]


@dataclass
class ParseLog:
    """Collects what a builder skipped or removed, so that nothing is dropped silently.

    In strict mode (the default) :meth:`error` raises :class:`CorpusFormatError`; in lenient
    mode it records the error and the caller skips what ``skipped`` says (one record by default;
    ``"whole file"`` or ``"rest of the file"`` when a file cannot be read further). Deliberate
    removals (duplicates, documented filters) are counted by reason with :meth:`removed`.
    :meth:`per_file` / :meth:`format_summary` give the lenient build's per-file account.
    """

    strict: bool = True
    errors: list[CorpusFormatError] = field(default_factory=list)
    removed_counts: Counter = field(default_factory=Counter)
    skipped_scope: dict[int, str] = field(default_factory=dict)  # id(error) -> what was skipped
    duplicates_kept: Counter = field(default_factory=Counter)

    def error(
        self, path: str | os.PathLike, line: int | str | None, message: str, skipped: str = "record"
    ) -> None:
        err = CorpusFormatError(path, line, message)
        if self.strict:
            raise err
        self.errors.append(err)
        self.skipped_scope[id(err)] = skipped

    def errors_for(self, path: str | os.PathLike) -> list[CorpusFormatError]:
        """The recorded (lenient) errors of one file."""
        return [err for err in self.errors if err.path == str(path)]

    def removed(self, reason: str, count: int = 1) -> None:
        if count:
            self.removed_counts[reason] += count

    def kept_duplicates(self, reason: str, count: int = 1) -> None:
        """Count repeated records that are kept on purpose (documented upstream quirks)."""
        if count:
            self.duplicates_kept[reason] += count

    def per_file(self) -> dict[str, dict]:
        """file -> {"skipped": n, "whole_file": bool, "reasons": {reason: count}, "first": message}."""
        files: dict[str, dict] = {}
        for err in self.errors:
            entry = files.setdefault(
                err.path, {"skipped": 0, "whole_file": False, "reasons": Counter(), "first": str(err)}
            )
            scope = self.skipped_scope.get(id(err), "record")
            entry["skipped"] += 1
            entry["whole_file"] |= scope == _WHOLE_FILE
            reason = _reason_kind(err.reason) + ("" if scope == "record" else f" ({scope} skipped)")
            entry["reasons"][reason] += 1
        for entry in files.values():
            entry["reasons"] = dict(entry["reasons"].most_common())
        return files

    def summary(self) -> dict:
        return {
            "skipped_malformed": len(self.errors),
            "malformed_examples": [str(e) for e in self.errors[:20]],
            "skipped_per_file": self.per_file(),
            "removed": dict(self.removed_counts),
            "duplicates_kept": dict(self.duplicates_kept),
        }

    def format_summary(self) -> str:
        """Lines for a lenient build: per file, how many records were skipped and why."""
        lines = []
        for path, entry in sorted(self.per_file().items()):
            what = "WHOLE FILE SKIPPED; " if entry["whole_file"] else ""
            lines.append(f"  {path}: {what}{entry['skipped']} skipped")
            lines += [f"      {count} x {reason}" for reason, count in entry["reasons"].items()]
            lines.append(f"      first: {entry['first']}")
        for reason, count in sorted(self.removed_counts.items()):
            lines.append(f"  removed {count} x {reason}")
        for reason, count in sorted(self.duplicates_kept.items()):
            lines.append(f"  kept {count} x {reason}")
        return "\n".join(lines)


BuildFn = Callable[[str, Path, ParseLog], "datasets.DatasetDict"]


@dataclass
class CorpusSpec:
    """A registered corpus: its configs and the function that builds one config."""

    name: str
    configs: dict[str, str]  # config name -> one-line description
    default_config: str
    build: BuildFn
    description: str = ""

    def check_config(self, config: str | None) -> str:
        if config is None:
            return self.default_config
        if not isinstance(config, str):
            raise InvalidInputError(
                f"config must be a string naming a config of corpus {self.name!r}, got "
                f"{type(config).__name__} {config!r}; choose one of {sorted(self.configs)}"
            )
        if config not in self.configs:
            raise InvalidInputError(
                f"Corpus {self.name!r} has no config {config!r}{_did_you_mean(config, self.configs)}; "
                f"choose one of {sorted(self.configs)}"
            )
        return config


#: corpus name -> :class:`CorpusSpec`; builder modules register on import (see ``register_corpus``)
CORPORA: Registry[CorpusSpec] = Registry("corpus")


def register_corpus(
    name: str, configs: dict[str, str], default_config: str, description: str = ""
) -> Callable[[BuildFn], BuildFn]:
    """Decorator registering ``build(config, data_dir, log) -> DatasetDict`` under ``name``."""

    def decorator(build: BuildFn) -> BuildFn:
        # replace: re-importing a builder module (reload, tests) registers the same corpus again
        CORPORA.register(
            name, CorpusSpec(name, dict(configs), default_config, build, description), replace=True
        )
        return build

    return decorator


def _ensure_builders_imported() -> None:
    # Builder modules register on import; import them lazily so `import hf_querygen` stays cheap.
    import importlib
    import pkgutil

    package = importlib.import_module("hf_querygen.corpora")
    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"hf_querygen.corpora.{module.name}")


def corpus_names() -> list[str]:
    _ensure_builders_imported()
    return CORPORA.names()


def _did_you_mean(value: str, choices: Iterable[str]) -> str:
    import difflib

    choices = list(choices)
    close = difflib.get_close_matches(value, choices, n=3, cutoff=0.6)
    close += [c for c in choices if c.lower() == value.lower() and c not in close]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def get_corpus_spec(name: str) -> CorpusSpec:
    """The registered corpus ``name``; an unknown name raises :class:`InvalidInputError` with the
    closest registered names."""
    _ensure_builders_imported()
    if not isinstance(name, str):
        raise InvalidInputError(
            f"corpus name must be a string, got {type(name).__name__} {name!r}; available: {CORPORA.names()}"
        )
    if name not in CORPORA:
        names = CORPORA.names()
        raise InvalidInputError(f"Unknown corpus {name!r}{_did_you_mean(name, names)}; available: {names}")
    return CORPORA.get(name)


def check_data_dir(data_dir: str | os.PathLike | None) -> None:
    """A ``data_dir`` argument must be None or a path of an existing folder."""
    if data_dir is None:
        return
    if not isinstance(data_dir, str | os.PathLike):
        raise InvalidInputError(
            f"data_dir must be a path (str or os.PathLike) of the folder holding the raw corpora, got "
            f"{type(data_dir).__name__} {data_dir!r}"
        )
    path = Path(data_dir)
    if not path.exists():
        raise CorpusFileMissingError(
            f"data_dir {str(path)!r} does not exist; pass the folder that holds the raw corpora "
            f"(e.g. ../shared/data) or set ${DATA_DIR_ENV}"
        )
    if not path.is_dir():
        raise InvalidInputError(f"data_dir {str(path)!r} is a file, not a folder of raw corpora")


def load_corpus(
    name: str,
    config: str | None = None,
    data_dir: str | os.PathLike | None = None,
    strict: bool = True,
    return_log: bool = False,
):
    """Build a corpus config from the raw upstream files as a typed ``datasets.DatasetDict``.

    ``strict=False`` skips malformed records instead of raising; the skipped records and the
    deliberate removals are in the :class:`ParseLog` returned with ``return_log=True``.
    """
    spec = get_corpus_spec(name)
    config = spec.check_config(config)
    if not isinstance(strict, bool):
        raise InvalidInputError(f"strict must be True or False, got {type(strict).__name__} {strict!r}")
    check_data_dir(data_dir)
    log = ParseLog(strict=strict)
    dataset_dict = spec.build(config, resolve_data_dir(data_dir), log)
    for warning in count_warnings(name, config, dataset_dict):
        warnings.warn(warning, CorpusCountWarning, stacklevel=2)
    return (dataset_dict, log) if return_log else dataset_dict


def expected_split_sizes(name: str, folder: str | os.PathLike | None = None) -> dict[str, dict[str, int]]:
    """config -> split -> rows, as recorded in the ``dataset_info`` of the corpus's dataset card
    (``<folder>/README.md``, by default ``dataset_scripts/<name>/README.md``); empty without a card."""
    import yaml

    card = Path(folder if folder is not None else dataset_folder(name)) / "README.md"
    if not card.is_file():
        return {}
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---\n") or text.count("---\n") < 2:
        return {}
    header = yaml.safe_load(text.split("---\n", 2)[1]) or {}
    return {
        info["config_name"]: {split["name"]: split["num_examples"] for split in info.get("splits", [])}
        for info in header.get("dataset_info", [])
        if "config_name" in info
    }


def build_summary(
    name: str, config: str, dataset_dict: datasets.DatasetDict, folder: str | os.PathLike | None = None
) -> dict[str, dict]:
    """split -> {"rows": built, "expected": from the dataset card or None, "change": rows - expected}."""
    expected = expected_split_sizes(name, folder).get(config, {})
    summary = {}
    for split in sorted(set(dataset_dict) | set(expected)):
        rows = dataset_dict[split].num_rows if split in dataset_dict else 0
        want = expected.get(split)
        summary[split] = {"rows": rows, "expected": want, "change": None if want is None else rows - want}
    return summary


def count_warnings(name: str, config: str, dataset_dict: datasets.DatasetDict) -> list[str]:
    """One message per split whose row count differs from the dataset card's (nothing without a card)."""
    messages = []
    for split, entry in build_summary(name, config, dataset_dict).items():
        if entry["change"]:
            share = entry["change"] / entry["expected"] if entry["expected"] else float("inf")
            messages.append(
                f"{name}/{config} {split}: {entry['rows']} rows, "
                f"the dataset card records {entry['expected']} "
                f"({entry['change']:+d}, {share:+.1%}); check the raw files and the build log"
            )
    return messages


def corpus_stats(name: str, config: str | None = None, data_dir: str | os.PathLike | None = None) -> dict:
    """Paper-style statistics of a corpus config, from the ``corpus_stats(config, data_dir)`` function
    of the module that registered the corpus (the convention every builder module follows)."""
    import importlib

    spec = get_corpus_spec(name)
    module = importlib.import_module(spec.build.__module__)
    stats_function = getattr(module, "corpus_stats", None)
    if stats_function is None:
        raise NotImplementedError(
            f"Corpus {name!r} ({module.__name__}) defines no corpus_stats(config, data_dir)"
        )
    return stats_function(spec.check_config(config), data_dir)


def dataset_from_columns(columns: dict[str, list], features: datasets.Features) -> datasets.Dataset:
    """An in-memory ``datasets.Dataset`` of plain Python columns with explicit ``features``.

    Same result as ``Dataset.from_dict(columns, features=features)`` for features that need no
    encoding (strings, numbers, booleans, lists of them), about 8x faster: pyarrow converts the
    columns in one go instead of ``datasets`` encoding every value. In memory, so nothing is cached
    on disk and a changed data dir can never return a stale table.
    """
    import datasets
    import pyarrow as pa
    from datasets.table import InMemoryTable

    missing = set(features) - set(columns)
    if missing:
        raise ValueError(f"columns missing for features {sorted(missing)}")
    table = pa.Table.from_pydict({name: columns[name] for name in features}, schema=features.arrow_schema)
    return datasets.Dataset(InMemoryTable(table), info=datasets.DatasetInfo(features=features))


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
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line, message = decode_error_message(raw, err)
        log.error(_display(path, name), line, message, _WHOLE_FILE)
        return None


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


# ---------------------------------------------------------------- deterministic splits
def stable_unit_hash(key: str, salt: str = "hf-querygen") -> float:
    """A platform-independent hash of ``key`` in [0, 1) (Python's hash() is salted per process)."""
    digest = hashlib.sha1(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def validation_mask(keys: Sequence[str], fraction: float, salt: str = "crf-validation") -> list[bool]:
    """Deterministic held-out part of the TRAIN folds (never the test fold) for model selection."""
    return [stable_unit_hash(key, salt) < fraction for key in keys]


def grouped_split(
    group_keys: Sequence[str],
    test_fraction: float = 0.2,
    validation_fraction: float = 0.1,
    salt: str = "hf-querygen",
) -> list[str]:
    """Assign each example a split so that all examples of one group share it.

    Groups are ordered by a stable hash; the first ``round(test_fraction * n_groups)`` go to
    test, then ``round(validation_fraction * rest)`` to validation, the rest to train (Liu'18:
    test 20%, validation 10% of the remainder). Returns one split name per example.
    """
    groups = sorted(set(group_keys), key=lambda g: (stable_unit_hash(g, salt), g))
    n_test = round(test_fraction * len(groups))
    n_val = round(validation_fraction * (len(groups) - n_test))
    split_of = {}
    for i, group in enumerate(groups):
        split_of[group] = "test" if i < n_test else "validation" if i < n_test + n_val else "train"
    return [split_of[g] for g in group_keys]


def kfold_assignment(keys: Sequence[str], n_folds: int = 5, salt: str = "hf-querygen") -> list[int]:
    """Deterministic fold index per key: keys ordered by stable hash, dealt round-robin."""
    order = sorted(range(len(keys)), key=lambda i: (stable_unit_hash(keys[i], salt), keys[i]))
    folds = [0] * len(keys)
    for rank, i in enumerate(order):
        folds[i] = rank % n_folds
    return folds


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """Silence the progress bars of ``datasets`` (map/filter over a few thousand rows) for a block."""
    from datasets import utils as datasets_tqdm

    was_disabled = datasets_tqdm.are_progress_bars_disabled()
    datasets_tqdm.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets_tqdm.enable_progress_bars()


# ---------------------------------------------------------------- Hub-ready folders
DATASET_SCRIPTS_DIR = _PACKAGE_ROOT / "dataset_scripts"


def dataset_folder(name: str) -> Path:
    """``dataset_scripts/<name>`` of the checkout (or of the current directory when installed)."""
    root = DATASET_SCRIPTS_DIR if DATASET_SCRIPTS_DIR.is_dir() else Path.cwd() / "dataset_scripts"
    return root / name


def _features_yaml(features: datasets.Features) -> list:
    """The ``dataset_info.features`` YAML of the Hub for ``features`` (same as datasets writes)."""
    from datasets.info import DatasetInfo

    return DatasetInfo(features=features)._to_yaml_dict()["features"]


def render_card_header(name: str, built: dict[str, datasets.DatasetDict], extra: dict | None = None) -> str:
    """The YAML front matter (configs + dataset_info with features and split sizes)."""
    import yaml

    configs, infos = [], []
    spec = get_corpus_spec(name)
    for config, dataset_dict in built.items():
        configs.append(
            {
                "config_name": config,
                "data_files": [
                    {"split": split, "path": f"data/{config}/{split}.parquet"} for split in dataset_dict
                ],
                **({"default": True} if config == spec.default_config else {}),
            }
        )
        first = next(iter(dataset_dict.values()))
        # datasets ignores a `splits` entry without num_bytes (the Arrow size of the split's rows;
        # flatten_indices so that a split made by select() does not count its parent's table).
        with quiet_progress():
            splits = [
                {"name": split, "num_bytes": ds.flatten_indices().data.nbytes, "num_examples": ds.num_rows}
                for split, ds in dataset_dict.items()
            ]
        infos.append(
            {
                "config_name": config,
                "features": _features_yaml(first.features),
                "splits": splits,
                "dataset_size": sum(split["num_bytes"] for split in splits),
            }
        )
    header = {**(extra or {}), "configs": configs, "dataset_info": infos}
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=100) + "---\n"


def build_dataset_folder(
    name: str,
    out_dir: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    configs: Iterable[str] | None = None,
    strict: bool = True,
    progress: bool = True,
    logs: dict[str, ParseLog] | None = None,
    summaries: dict[str, dict] | None = None,
) -> Path:
    """Write ``data/<config>/<split>.parquet`` for every config and refresh the YAML header of the
    folder's ``README.md`` (the dataset card prose below the header is kept).

    Afterwards ``datasets.load_dataset(out_dir, config)`` works with nothing else installed.
    Pass a dict as ``logs`` to receive each config's :class:`ParseLog` (skipped and removed records)
    and one as ``summaries`` to receive each config's :func:`build_summary` (rows per split against
    the counts the dataset card recorded before this build rewrote it).
    """
    from tqdm.auto import tqdm

    spec = get_corpus_spec(name)
    out = Path(out_dir) if out_dir is not None else dataset_folder(name)
    out.mkdir(parents=True, exist_ok=True)
    built = {}
    selected = list(configs) if configs else list(spec.configs)
    for config in tqdm(selected, desc=f"building {name}", disable=not progress):
        dataset_dict, log = load_corpus(name, config, data_dir=data_dir, strict=strict, return_log=True)
        if logs is not None:
            logs[config] = log
        if summaries is not None:
            summaries[config] = build_summary(name, config, dataset_dict, out)
        for split, ds in dataset_dict.items():
            path = out / "data" / config / f"{split}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            with quiet_progress():  # one bar per config (above) is enough
                ds.to_parquet(str(path))
        built[config] = dataset_dict
    if configs:  # a partial build writes parquet only: the card header describes every config
        return out
    card = out / "README.md"
    text = card.read_text(encoding="utf-8") if card.exists() else ""
    extra = {"pretty_name": name, "language": ["en"]}
    prose = text
    if text.startswith("---\n") and text.count("---\n") >= 2:
        import yaml

        _, header, prose = text.split("---\n", 2)
        old = yaml.safe_load(header) or {}
        extra = {k: v for k, v in old.items() if k not in ("configs", "dataset_info")}
    card.write_text(render_card_header(name, built, extra) + prose, encoding="utf-8")
    return out
