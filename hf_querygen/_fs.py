"""Output folders the library writes: the one place that decides what ``overwrite`` may delete.

Policy (README, "What overwrite may delete"): a folder is only ever deleted or replaced when the
library wrote it, recognised by a marker file :data:`MARKER_FILE` (JSON: ``kind``, ``format_version``,
``entries`` = the top-level names written with it). Anything else is refused with an
:class:`~hf_querygen.errors.InvalidInputError` naming the files that are not ours: a folder without a
marker, with a marker of another kind or a newer format version, or with files added after the
library wrote it.

Writers build into a temporary sibling folder and publish it with one ``rename`` (:func:`atomic_output_dir`),
so a refused or failed build leaves nothing behind, a reader never sees half a folder, and of two
builds racing for one path exactly one wins: the other gets a clear error and its work is discarded.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import InvalidInputError, OutputExistsError

MARKER_FILE = ".hf_querygen"
MARKER_FORMAT_VERSION = 1
#: ``hf-querygen evaluate`` records its scores in this file beside a model (``export`` puts them on the card)
MODEL_EVALUATIONS_FILE = "hf_querygen_evaluations.json"
#: names the library adds to a finished folder of a kind after it was built (so they are not in the
#: marker's ``entries``) and which are therefore its own, never foreign
COMPANION_FILES: dict[str, tuple[str, ...]] = {"model": (MODEL_EVALUATIONS_FILE,)}
#: how many foreign names an error message lists before "(+N more)"
_SHOWN = 8


def current_umask() -> int:
    """The process umask (``os.umask`` can only be read by setting it; restored at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike, directory: bool = True) -> None:
    """Give ``path`` the mode a plain ``mkdir``/``open`` would (``tempfile`` makes 0700 / 0600)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def marker_problem(marker: Any) -> str | None:
    """What makes a parsed marker unusable (``None``: nothing): every field the policy reads is typed."""
    if not isinstance(marker, dict):
        return "it is not a JSON object"
    if not isinstance(marker.get("kind"), str):
        return "it has no 'kind' string"
    version = marker.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return "its 'format_version' is not an integer"
    entries = marker.get("entries", [])
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        return "its 'entries' is not a list of names"
    if not isinstance(marker.get("identity", {}), dict):
        return "its 'identity' is not an object"
    return None


def read_marker(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The folder's marker, or ``None`` when it has none, or one that is damaged (not JSON, or a field
    of the wrong type: :func:`marker_problem`); a damaged marker makes the folder not the library's."""
    path = Path(folder) / MARKER_FILE
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return marker if marker_problem(marker) is None else None


def _damaged_marker(folder: Path) -> str:
    """`` (its marker is damaged: ...)`` when ``folder`` has a marker file that does not parse, else ''."""
    path = folder / MARKER_FILE
    if not path.is_file():
        return ""
    try:
        problem = marker_problem(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        problem = f"it does not parse ({type(err).__name__})"
    return f" (its {MARKER_FILE} marker is damaged: {problem})" if problem else ""


def write_marker(folder: str | os.PathLike, kind: str, **info: Any) -> dict[str, Any]:
    """Mark ``folder`` as written by the library (call last: ``entries`` lists what is there now)."""
    folder = Path(folder)
    marker = {
        "kind": kind,
        "format_version": MARKER_FORMAT_VERSION,
        "build_id": info.pop("build_id", None) or uuid.uuid4().hex,
        "entries": sorted(name for name in os.listdir(folder) if name != MARKER_FILE),
        **info,
    }
    (folder / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return marker


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _listing(names: Iterable[str]) -> str:
    names = sorted(names)
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" (+{len(names) - _SHOWN} more)" if len(names) > _SHOWN else "")


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path.cwd()


def foreign_entries(folder: Path, kind: str, owned: Iterable[str] = ()) -> list[str] | None:
    """Names in ``folder`` the library did not write as ``kind``; ``None``: the folder has no valid
    marker of that kind (so every name in it is foreign)."""
    marker = read_marker(folder)
    if marker is None or marker["kind"] != kind or marker["format_version"] > MARKER_FORMAT_VERSION:
        return None
    known = {MARKER_FILE, *owned, *COMPANION_FILES.get(kind, ()), *marker.get("entries", [])}
    return sorted(name for name in os.listdir(folder) if name not in known)


def check_apart(folder: Path, protected: Iterable[str | os.PathLike], what: str = "output") -> None:
    """Refuse an output folder that is, holds or lies inside one of ``protected`` (a command's inputs:
    replacing the output must never delete or alter what the command reads)."""
    target = Path(os.path.abspath(folder)).resolve()
    for source in protected:
        source_path = Path(os.path.abspath(source)).resolve()
        if target == source_path or source_path.is_relative_to(target) or target.is_relative_to(source_path):
            relation = (
                "is"
                if target == source_path
                else ("holds" if source_path.is_relative_to(target) else "lies inside")
            )
            raise InvalidInputError(
                f"{what} folder {folder} {relation} the input {source}; choose a folder apart from it"
            )


def check_output_dir(
    path: str | os.PathLike,
    kind: str,
    overwrite: bool,
    owned: Iterable[str] = (),
    what: str = "output",
    protected: Iterable[str | os.PathLike] = (),
) -> Path:
    """Check, before any work starts, that ``path`` can receive a ``kind`` folder.

    Accepted: a path that does not exist (its nearest existing ancestor must be a writable folder), an
    empty folder, or with ``overwrite`` a folder the library wrote as ``kind`` holding nothing else
    (``owned``: names the writer may also leave there, e.g. an interrupted run's logs). ``protected``:
    the command's inputs, which the folder may neither be, hold nor lie inside (:func:`check_apart`).
    Raises :class:`InvalidInputError` naming the path and, for a folder that is not ours, its files.
    """
    folder = Path(path)
    check_apart(folder, protected, what)
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(f"{what} path {folder} exists and is not a folder")
    ancestor = _nearest_existing(folder.parent if not folder.exists() else folder)
    if not ancestor.is_dir():
        raise InvalidInputError(f"{what} path {folder}: {ancestor} is not a folder")
    # the folder is published by renaming a sibling: the parent must be writable too
    writable = ancestor if not folder.exists() else folder.parent
    if not os.access(writable, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{what} path {folder}: {writable} is not writable")
    if not folder.is_dir():
        return folder
    try:
        names = os.listdir(folder)
    except OSError as err:
        raise InvalidInputError(f"{what} path {folder} cannot be read ({err.strerror})") from err
    if not names:
        return folder
    foreign = foreign_entries(folder, kind, owned)
    if foreign is None:
        raise OutputExistsError(
            f"refusing to write into {folder}: it holds files that hf-querygen did not write as {_a(kind)} "
            f"folder (no {MARKER_FILE} marker of kind {kind!r}){_damaged_marker(folder)}: "
            f"{_listing(names)}; choose another "
            "folder, or move those files away yourself"
        )
    if foreign:
        raise OutputExistsError(
            f"refusing to overwrite {folder}: besides the {kind} hf-querygen wrote there it holds "
            f"files it did not write: {_listing(foreign)}; move them away first"
        )
    if not overwrite:
        raise OutputExistsError(
            f"{what} folder {folder} is not empty: it holds hf-querygen output (a {kind} folder); pass "
            "overwrite=True (CLI: --overwrite) to replace it"
        )
    return folder


def _build_id(folder: Path) -> str | None:
    marker = read_marker(folder) if folder.is_dir() else None
    return marker.get("build_id") if marker else None


def _concurrent(folder: Path, kind: str) -> InvalidInputError:
    return InvalidInputError(
        f"{folder} was written by another process while this {kind} was being built; this build was "
        "discarded (one build per folder at a time)"
    )


@contextlib.contextmanager
def atomic_output_dir(
    path: str | os.PathLike,
    kind: str,
    overwrite: bool = False,
    what: str = "output",
    marker_info: dict[str, Any] | None = None,
    protected: Iterable[str | os.PathLike] = (),
) -> Iterator[Path]:
    """Yield a temporary sibling folder to build into; on success mark it and rename it to ``path``.

    ``path`` is checked first (:func:`check_output_dir`, with the inputs ``protected``); on any
    exception the temporary folder is removed and ``path`` is left as it was. If another build
    published ``path`` meanwhile, this one raises :class:`InvalidInputError` and discards its work, so
    exactly one of two racing builds wins.
    """
    target = Path(path)
    protected = tuple(protected)
    check_output_dir(target, kind, overwrite, what=what, protected=protected)
    seen = _build_id(target)  # which folder this build may replace (None: absent or empty)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    trash: Path | None = None
    try:
        apply_umask(staging)
        yield staging
        write_marker(staging, kind, **dict(marker_info or {}))
        # writers that go through temporary files (safetensors, tempfile) leave 0600: publish with the
        # modes a plain mkdir / open would give, as users expect of their outputs
        for root, dirs, files in os.walk(staging):
            for name in dirs:
                apply_umask(os.path.join(root, name))
            for name in files:
                if not os.path.islink(os.path.join(root, name)):
                    apply_umask(os.path.join(root, name), directory=False)
        if target.is_dir() and os.listdir(target) and _build_id(target) != seen:
            raise _concurrent(target, kind)
        # re-check: files may have appeared in the folder during the build
        check_output_dir(target, kind, overwrite, what=what, protected=protected)
        if target.is_dir() and os.listdir(target):
            trash = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
            try:
                target.rename(trash)
            except FileNotFoundError as err:  # another build moved it away first
                raise _concurrent(target, kind) from err
        try:
            staging.rename(target)  # atomic; fails on a non-empty folder, so a racing build loses
        except OSError as err:
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise _concurrent(target, kind) from err
            raise
    except BaseException:
        remove_tree(staging)
        raise
    finally:
        if trash is not None:
            remove_tree(trash)


def claim_in_place_dir(
    path: str | os.PathLike,
    kind: str,
    outputs: Iterable[str],
    *,
    identity: dict[str, Any],
    overwrite: bool = False,
    resume: bool = False,
    what: str = "output",
    legacy_identity: Callable[[Path], dict[str, Any] | None] | None = None,
) -> Path:
    """The one decision for writers that fill a folder step by step and own only some names in it
    (``outputs``: a reproduction's ``runs/`` and ``results.*``, a synthetic set's ``data/``): may this
    run write into ``path``, continue what is there, or replace it? Checked before any work starts.

    * absent or empty: yes; the folder is created and marked with ``kind`` and ``identity`` (what the
      output depends on, e.g. the paper and the budget).
    * holding none of ``outputs``: with ``resume`` or ``overwrite`` yes, the other files are left
      alone (without either: refused, an existing folder is never silently reused).
    * holding ``outputs`` under a marker of ``kind``: ``resume`` continues only a run of the same
      ``identity`` (anything else is another run's work, refused naming both); ``overwrite`` deletes
      the ``outputs`` (other files stay) and re-marks the folder; neither: refused.
    * holding ``outputs`` without a marker of ``kind`` (or with a damaged one): refused, nothing touched.

    ``legacy_identity(folder)``: the identity of a folder marked before markers carried one (``None``:
    unknown, so it cannot be resumed). Returns the folder.
    """
    folder = Path(path)
    outputs = tuple(outputs)
    if not (folder.is_dir() and os.listdir(folder)):
        check_output_dir(folder, kind, overwrite=False, what=what)  # writability of what will hold it
    elif not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{what} {folder} is not writable")
    ours = sorted(name for name in outputs if os.path.lexists(folder / name))
    marker = read_marker(folder) if folder.is_dir() else None
    if marker is not None and (marker["kind"] != kind or marker["format_version"] > MARKER_FORMAT_VERSION):
        marker = None
    if ours and marker is None:
        raise OutputExistsError(
            f"refusing to write into {folder}: it holds {_listing(ours)} but no {MARKER_FILE} marker of a "
            f"{kind}{_damaged_marker(folder)}, so they may not be hf-querygen's; move them away or choose "
            f"another {what}"
        )
    present = sorted(name for name in os.listdir(folder) if name != MARKER_FILE) if folder.is_dir() else []
    if present and not ours and not (resume or overwrite):
        raise OutputExistsError(
            f"{what} {folder} is not empty ({_listing(present)}): pass resume (CLI: --resume) or overwrite "
            "(--overwrite) to write the run's files beside them, or choose another folder"
        )
    if ours and not overwrite:
        found = marker.get("identity") if marker is not None else None
        wanted = json.loads(json.dumps(identity, default=str))
        if found is None and legacy_identity is not None:
            # an older marker: what its files tell (e.g. the paper, not the budget) must match
            found = legacy_identity(folder) or None
            if found is not None:
                wanted = {key: wanted.get(key) for key in found}
        if not resume:
            raise OutputExistsError(
                f"{what} {folder} holds a {kind} ({_describe(found)}): pass resume (CLI: --resume) to "
                "continue it or overwrite (--overwrite) to start again"
            )
        if found != wanted:
            if found is None:
                raise OutputExistsError(
                    f"refusing to resume in {folder}: its {kind} was written with unknown settings (an "
                    f"older marker), so it may be another run's; choose another {what} (or --overwrite "
                    "to replace it)"
                )
            keys = sorted(key for key in {*found, *wanted} if found.get(key) != wanted.get(key))
            there = _describe({k: found.get(k) for k in keys})
            here = _describe({k: wanted.get(k) for k in keys})
            raise OutputExistsError(
                f"refusing to resume in {folder}: it holds another {kind} (different {', '.join(keys)}: "
                f"{there} there, {here} here); choose another {what} (or --overwrite to replace that run)"
            )
    if ours and overwrite:
        for name in ours:  # only the writer's own outputs; other files in the folder stay
            target = folder / name
            if target.is_dir() and not target.is_symlink():
                remove_tree(target)
            else:
                target.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    if marker is None or overwrite or not ours or marker.get("identity") is None:
        path_ = folder / MARKER_FILE
        info = {
            "kind": kind,
            "format_version": MARKER_FORMAT_VERSION,
            "build_id": uuid.uuid4().hex,
            "entries": [],
            "identity": json.loads(json.dumps(identity, default=str)),
        }
        path_.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return folder


def _describe(identity: dict[str, Any] | None) -> str:
    if not identity:
        return "unknown settings (an older marker)"
    shown = []
    for key, value in identity.items():
        text = repr(value)
        shown.append(f"{key} {text if len(text) <= 60 else text[:57] + '...'}")
    return ", ".join(shown)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling renamed over it: a reader (or a crash)
    never sees half a file; the file gets the mode a plain ``open`` would."""
    path = Path(path)
    handle = tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False, encoding="utf-8"
    )
    try:
        with handle:
            handle.write(text)
        apply_umask(handle.name, directory=False)
        os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise
    return path


def remove_tree(folder: Path, attempts: int = 5) -> None:
    """Remove ``folder`` and all below it; retried, since a writer's thread that is still closing may
    add a file while the tree is walked (``rmtree`` then fails on the non-empty folder)."""
    for attempt in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return
        time.sleep(0.05 * (attempt + 1))
    shutil.rmtree(folder)  # the last try raises, naming what could not be removed


def check_writable_dir(path: str | os.PathLike, what: str) -> Path:
    """A folder the caller will add files to (nothing is deleted): it must be a writable folder, or
    not exist yet below a writable folder. Checked before any work starts."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(f"{what} {folder} exists and is not a folder")
    ancestor = _nearest_existing(folder)
    if not ancestor.is_dir():
        raise InvalidInputError(f"{what} {folder}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{what} {folder}: {ancestor} is not writable")
    return folder


def check_output_file(path: str | os.PathLike, what: str) -> Path:
    """A file the caller will write: not a folder, and its folder writable (or creatable)."""
    file = Path(path)
    if file.is_dir():
        raise InvalidInputError(f"{what} {file} is a folder; give a file name")
    if file.exists() and not os.access(file, os.W_OK):
        raise InvalidInputError(f"{what} {file} is not writable")
    check_writable_dir(file.parent, f"{what} {file}: folder")
    return file
