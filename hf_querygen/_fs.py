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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import InvalidInputError, OutputExistsError

MARKER_FILE = ".hf_querygen"
MARKER_FORMAT_VERSION = 1
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


def read_marker(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The folder's marker, or ``None`` when it has none (or one that is not a JSON object)."""
    path = Path(folder) / MARKER_FILE
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


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
    if (
        marker is None
        or marker.get("kind") != kind
        or not isinstance(marker.get("format_version"), int)
        or marker["format_version"] > MARKER_FORMAT_VERSION
    ):
        return None
    known = {MARKER_FILE, *owned, *(e for e in marker.get("entries", []) if isinstance(e, str))}
    return sorted(name for name in os.listdir(folder) if name not in known)


def check_output_dir(
    path: str | os.PathLike, kind: str, overwrite: bool, owned: Iterable[str] = (), what: str = "output"
) -> Path:
    """Check, before any work starts, that ``path`` can receive a ``kind`` folder.

    Accepted: a path that does not exist (its nearest existing ancestor must be a writable folder), an
    empty folder, or with ``overwrite`` a folder the library wrote as ``kind`` holding nothing else
    (``owned``: names the writer may also leave there, e.g. an interrupted run's logs).
    Raises :class:`InvalidInputError` naming the path and, for a folder that is not ours, its files.
    """
    folder = Path(path)
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
            f"refusing to write into {folder}: it holds files that hf-querygen did not write as a {kind} "
            f"folder (no {MARKER_FILE} marker of kind {kind!r}): {_listing(names)}; choose another "
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


def prepare_output_dir(
    path: str | os.PathLike, kind: str, overwrite: bool, owned: Iterable[str] = (), what: str = "output"
) -> Path:
    """:func:`check_output_dir`, then create the folder (in place: for writers that fill it step by
    step, such as a reproduction's ``--out-dir``; one-shot builds use :func:`atomic_output_dir`)."""
    folder = check_output_dir(path, kind, overwrite, owned, what)
    folder.mkdir(parents=True, exist_ok=True)
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
) -> Iterator[Path]:
    """Yield a temporary sibling folder to build into; on success mark it and rename it to ``path``.

    ``path`` is checked first (:func:`check_output_dir`); on any exception the temporary folder is
    removed and ``path`` is left as it was. If another build published ``path`` meanwhile, this one
    raises :class:`InvalidInputError` and discards its work, so exactly one of two racing builds wins.
    """
    target = Path(path)
    check_output_dir(target, kind, overwrite, what=what)
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
        check_output_dir(target, kind, overwrite, what=what)
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
