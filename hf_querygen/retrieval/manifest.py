"""The manifest of an index folder: ``index.json`` lists every file of the folder with its size and content
hash, plus a fingerprint over the list, which ties the statistics, the ids and the tantivy segments to one
build. :func:`write_manifest` adds it at the end of a build; :func:`verify_manifest` checks it at every
:meth:`~hf_querygen.retrieval.Index.open` (through :func:`read_manifest`) and names a missing, truncated or
foreign file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hf_querygen.errors import ModelFolderError

META_FILE = "index.json"
FORMAT_VERSION = 2  # 2: index.json lists every file (size, content hash); 1 is still read
#: files up to this size are hashed whole; larger ones by their size, first and last MiB (fast to
#: verify at every open, and enough to tell two builds apart: their headers and vocabularies differ)
MANIFEST_FULL_HASH_LIMIT = 4 << 20
_SAMPLE_BYTES = 1 << 20
#: not content: tantivy's locks and garbage-collection bookkeeping, the library's marker
_UNLISTED = (".tantivy-meta.lock", ".tantivy-writer.lock", ".managed.json", ".hf_querygen", META_FILE)


def file_digest(path: Path, size: int) -> str:
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        if size <= MANIFEST_FULL_HASH_LIMIT:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        else:
            digest.update(handle.read(_SAMPLE_BYTES))
            handle.seek(size - _SAMPLE_BYTES)
            digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()


def listed_files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name not in _UNLISTED
    )


def fingerprint(files: dict) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def write_manifest(folder: Path) -> None:
    """Add to index.json every file of the folder with its size and content hash, and a fingerprint
    over them all, which ties the statistics, the ids and the tantivy segments to one build."""
    meta_path = folder / META_FILE
    meta = json.loads(meta_path.read_text())
    files = {}
    for name in listed_files(folder):
        size = (folder / name).stat().st_size
        files[name] = {"size": size, "sha256": file_digest(folder / name, size)}
    meta["files"] = files
    meta["fingerprint"] = fingerprint(files)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")


def read_manifest(folder: Path) -> dict:
    """index.json of an index folder, checked: present, parseable, of a format this library reads, and
    (format 2) with every file it lists intact; raises ModelFolderError naming the file otherwise."""
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
    if version not in (1, FORMAT_VERSION):
        raise ModelFolderError(
            f"{meta_path}: format version {version}, this library reads 1 and {FORMAT_VERSION}"
        )
    if version >= 2:
        verify_manifest(folder, meta)
    return meta


def verify_manifest(folder: Path, meta: dict) -> None:
    """Every file index.json lists is there with its size and content; raises ModelFolderError naming
    the first file that is missing, truncated or from another index."""
    files = meta.get("files")
    if not isinstance(files, dict) or not files or meta.get("fingerprint") != fingerprint(files):
        raise ModelFolderError(
            f"index metadata is corrupted: {folder / META_FILE} (its file list or fingerprint is missing "
            "or was edited); rebuild the index"
        )
    for name, entry in sorted(files.items()):
        path = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not isinstance(entry, dict):
            raise ModelFolderError(f"index metadata is corrupted: {folder / META_FILE} lists {name!r}")
        if not path.is_file():
            raise ModelFolderError(
                f"index file is missing: {path} (listed in {META_FILE}); rebuild the index"
            )
        size = path.stat().st_size
        if size != entry.get("size"):
            raise ModelFolderError(
                f"index file {path} has {size} bytes, {META_FILE} lists {entry.get('size')} (truncated, or "
                "from another index); rebuild the index"
            )
        if file_digest(path, size) != entry.get("sha256"):
            raise ModelFolderError(
                f"index file {path} is not the one this index was built with (its content differs from "
                f"{META_FILE}: from another index, or modified); rebuild the index"
            )
