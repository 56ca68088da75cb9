"""The manifest of an index folder: ``index.json`` lists every file of the folder with its size and the
SHA-256 of its whole content, plus a fingerprint over the list, which ties the statistics, the ids and
the tantivy segments to one build.

The library's own files (the statistics, the ids) are hashed while they are written (:class:`Digests`,
:class:`HashingWriter`: no second pass over them); tantivy writes its segments itself, so those are read
once after its commit, while they are still in the page cache. :func:`write_manifest` adds the list at
the end of a build; :func:`verify_manifest` checks it, by default at every
:meth:`~hf_querygen.retrieval.Index.open` (``Index.open(path, verify=False)`` checks the sizes only;
``Index.verify()`` the contents later), and names a missing, truncated, damaged or foreign file: a damaged
block anywhere in a file changes its hash. Older formats (1: no list; 2: files over 4 MiB hashed by their
first and last MiB only) are refused with the command that rebuilds them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hf_querygen.errors import ModelFolderError

META_FILE = "index.json"
#: 3: every file hashed whole (SHA-256); 2 (sampled hashes of large files) and 1 (no list) are refused
FORMAT_VERSION = 3
_BLOCK = 1 << 20
#: not content: tantivy's locks and garbage-collection bookkeeping, the library's marker
_UNLISTED = (".tantivy-meta.lock", ".tantivy-writer.lock", ".managed.json", ".hf_querygen", META_FILE)
REBUILD = (
    "rebuild it: `hf-querygen index build DOCUMENTS {folder} --overwrite`, or "
    "`Index.from_texts(texts, ids=ids, path='{folder}', overwrite=True)`"
)


class IndexFormatError(ModelFolderError):
    """An index folder written in a format this version does not open (the message says how to rebuild)."""


class HashingWriter:
    """A binary file that hashes what is written to it (``np.save`` and ``write`` go through it)."""

    def __init__(self, path: Path, digests: Digests | None, name: str):
        self._handle = open(path, "wb")  # noqa: SIM115 (closed in __exit__)
        self._hash = hashlib.sha256()
        self._size = 0
        self._digests, self._name = digests, name

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self._hash.update(view)
        self._size += len(view)
        return self._handle.write(view)

    def flush(self) -> None:
        self._handle.flush()

    def __enter__(self) -> HashingWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self._handle.close()
        if kind is None and self._digests is not None:
            self._digests.record(self._name, self._size, self._hash.hexdigest())


class Digests:
    """Sizes and SHA-256 digests of the files a build writes itself, keyed by their path in the folder."""

    def __init__(self, prefix: str = "", into: dict | None = None):
        self._prefix = prefix
        self.files: dict[str, dict] = {} if into is None else into

    def record(self, name: str, size: int, sha256: str) -> None:
        self.files[self._prefix + name] = {"size": size, "sha256": sha256}

    def under(self, folder: str) -> Digests:
        """The same record, for files of the sub-folder ``folder``."""
        return Digests(f"{self._prefix}{folder}/", self.files)

    def writer(self, path: Path, name: str | None = None) -> HashingWriter:
        return HashingWriter(path, self, name or path.name)

    def write_bytes(self, path: Path, data: bytes, name: str | None = None) -> None:
        with self.writer(path, name) as handle:
            handle.write(data)


def file_digest(path: Path) -> str:
    """SHA-256 of the whole file (hashlib releases the GIL on each block: files hash in parallel)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def listed_files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name not in _UNLISTED
    )


def fingerprint(files: dict) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def _threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def write_manifest(folder: Path, written: Mapping[str, dict] | None = None) -> None:
    """Add to index.json every file of the folder with its size and SHA-256, and a fingerprint over them
    all. ``written``: the digests recorded while the build wrote its own files (only the others, the
    tantivy segments, are read here); a recorded size that disagrees with the file is a build error."""
    meta_path = folder / META_FILE
    meta = json.loads(meta_path.read_text())
    names = listed_files(folder)
    written = dict(written or {})
    for name, entry in written.items():
        if name in names and (folder / name).stat().st_size != entry["size"]:
            raise RuntimeError(f"index build: {name} changed after it was written")
    todo = [name for name in names if name not in written]
    with ThreadPoolExecutor(_threads()) as pool:
        hashed = dict(zip(todo, pool.map(lambda name: file_digest(folder / name), todo), strict=True))
    files = {
        name: written[name]
        if name in written
        else {"size": (folder / name).stat().st_size, "sha256": hashed[name]}
        for name in names
    }
    meta["files"] = files
    meta["fingerprint"] = fingerprint(files)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")


def read_manifest(folder: Path, verify: bool = True) -> dict:
    """index.json of an index folder, checked: present, parseable, of this format, and with every file it
    lists there at its size and (``verify``) with its content; raises ModelFolderError naming the file
    otherwise (:class:`IndexFormatError` for another format, saying how to rebuild)."""
    if not folder.is_dir():
        raise ModelFolderError(f"index folder not found: {folder}")
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise ModelFolderError(f"not a complete index folder: {meta_path} is missing")
    try:
        meta = json.loads(meta_path.read_text())
        int(meta["num_docs"])
        version = meta["format_version"]
    except (ValueError, KeyError, TypeError) as err:
        raise ModelFolderError(f"index metadata is corrupted: {meta_path} ({err})") from err
    if version != FORMAT_VERSION:
        why = (
            "written by a newer hf-querygen"
            if isinstance(version, int) and version > FORMAT_VERSION
            else "an older format whose files are not all hashed whole, so damage could go unnoticed"
        )
        raise IndexFormatError(
            f"{meta_path}: index format version {version!r} ({why}); this version opens format "
            f"{FORMAT_VERSION} only: " + REBUILD.format(folder=folder)
        )
    verify_manifest(folder, meta, contents=verify)
    return meta


def verify_manifest(folder: Path, meta: dict, contents: bool = True) -> None:
    """Every file index.json lists is there with its size and (``contents``) its SHA-256; raises
    ModelFolderError naming the first file that is missing, truncated, damaged or from another index."""
    files = meta.get("files")
    if not isinstance(files, dict) or not files or meta.get("fingerprint") != fingerprint(files):
        raise ModelFolderError(
            f"index metadata is corrupted: {folder / META_FILE} (its file list or fingerprint is missing "
            "or was edited); " + REBUILD.format(folder=folder)
        )
    for name, entry in sorted(files.items()):
        path = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not isinstance(entry, dict):
            raise ModelFolderError(f"index metadata is corrupted: {folder / META_FILE} lists {name!r}")
        if not path.is_file():
            raise ModelFolderError(
                f"index file is missing: {path} (listed in {META_FILE}); " + REBUILD.format(folder=folder)
            )
        size = path.stat().st_size
        if size != entry.get("size"):
            raise ModelFolderError(
                f"index file {path} has {size} bytes, {META_FILE} lists {entry.get('size')} (truncated, or "
                "from another index); " + REBUILD.format(folder=folder)
            )
    if not contents:
        return
    names = sorted(files)
    with ThreadPoolExecutor(_threads()) as pool:
        digests = list(pool.map(lambda name: file_digest(folder / name), names))
    for name, digest in zip(names, digests, strict=True):
        if digest != files[name].get("sha256"):
            raise ModelFolderError(
                f"index file {folder / name} is not the one this index was built with (its content differs "
                f"from {META_FILE}: damaged, modified or from another index); "
                + REBUILD.format(folder=folder)
            )
