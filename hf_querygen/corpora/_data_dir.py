"""Where the raw corpus files live: the ``data_dir`` argument, ``$HF_QUERYGEN_DATA_DIR`` or
``../shared/data``, and the check of a ``data_dir`` argument."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CorpusFileMissingError, InvalidInputError

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    pass


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


DATASET_SCRIPTS_DIR = _PACKAGE_ROOT / "dataset_scripts"


def dataset_folder(name: str) -> Path:
    """``dataset_scripts/<name>`` of the checkout (or of the current directory when installed)."""
    root = DATASET_SCRIPTS_DIR if DATASET_SCRIPTS_DIR.is_dir() else Path.cwd() / "dataset_scripts"
    return root / name
