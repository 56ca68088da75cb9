"""The strict / lenient account of a corpus build: every skipped record and deliberate removal with
file and line (:class:`ParseLog`)."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import CorpusFormatError

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    pass


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
