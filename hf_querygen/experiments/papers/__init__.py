"""One declaration per paper: ``<name>/<name>.json`` inside the paper's package
(``hf_querygen/experiments/<name>/``).

Each data file names the module that declares the paper's systems, budgets and hooks (its
``REPRODUCTION``) and holds the paper's published numbers (``paper_numbers``, system -> metric -> value,
as pyserini keeps its reproduction matrices in YAML), which the module and the report read with
:func:`paper_data`. The files are the registry: :data:`REPRODUCTIONS` lists them without importing any
experiment code (so ``hf-querygen reproduce --help`` stays cheap), and everything that lists papers reads
it: the runner, ``reproduce``'s choices, :data:`hf_querygen.systems.SYSTEMS`. A plugin adds a paper with
``REPRODUCTIONS.register("<name>", "<its module>")`` (entry point group ``hf_querygen.plugins``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from ...errors import InvalidInputError
from ...registry import Registry

#: the folder of the library's paper packages, each holding its data file ``<name>/<name>.json``
PAPERS_DIR = Path(__file__).resolve().parent.parent


@functools.cache
def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InvalidInputError(f"{path}: not a readable paper data file ({error})") from error
    if not isinstance(data, dict) or not isinstance(data.get("module", ""), str):
        raise InvalidInputError(f"{path}: a paper data file is a JSON object with a 'module' string")
    return data


def paper_files(folder: str | Path | None = None) -> dict[str, Path]:
    """Paper name -> its data file: every ``<name>.json`` in ``folder``, or by default every library paper's
    ``<name>/<name>.json``."""
    if folder is not None:
        return {path.stem: path for path in sorted(Path(folder).glob("*.json"))}
    return {path.stem: path for path in sorted(PAPERS_DIR.glob("*/*.json")) if path.stem == path.parent.name}


def _data_file(name: str, folder: str | Path | None) -> Path:
    return Path(folder) / f"{name}.json" if folder is not None else PAPERS_DIR / name / f"{name}.json"


def paper_data(name: str, folder: str | Path | None = None) -> dict[str, Any]:
    """The data file of paper ``name`` (``module``, ``paper``, ``paper_numbers``, ...), read once: the
    library paper's own, or ``<name>.json`` in ``folder`` (a plugin's)."""
    path = _data_file(name, folder)
    if not path.is_file():
        raise InvalidInputError(f"no paper data file {path}; known: {sorted(paper_files(folder))}")
    return _read(path)


def paper_numbers(name: str, key: str = "paper_numbers", folder: str | Path | None = None) -> dict:
    """System -> metric -> published value of paper ``name`` (``key``: another table of the same file)."""
    data = paper_data(name, folder)
    if key not in data:
        raise InvalidInputError(f"{_data_file(name, folder)} has no {key!r}; keys: {sorted(data)}")
    return data[key]


#: paper name -> module defining its ``REPRODUCTION`` (a :class:`~hf_querygen.experiments.runner.Reproduction`
#: or another object with ``reproduce(out_dir, **options)``, e.g. the retrieval evaluation)
REPRODUCTIONS: Registry[str] = Registry("reproduction", modules=())
for _name, _path in paper_files().items():
    REPRODUCTIONS.register(_name, _read(_path).get("module") or f"hf_querygen.experiments.{_name}")


def budget_names() -> dict[str, list[str]]:
    """Paper -> the names of its budgets, as its data file declares them (``budgets``; a test checks them
    against the module's): what ``--budget`` / ``--quick`` help lists without importing experiment code."""
    return {name: list(_read(path).get("budgets", [])) for name, path in paper_files().items()}


def paper_modules() -> list[str]:
    """The module of every registered paper (the library's and the plugins')."""
    return [module for _, module in REPRODUCTIONS.items()]


def get_reproduction(name: str) -> Any:
    """The ``REPRODUCTION`` of registered paper ``name`` (a
    :class:`~hf_querygen.experiments.runner.Reproduction`, or the retrieval evaluation); imports its
    module."""
    import importlib

    return importlib.import_module(REPRODUCTIONS.get(name)).REPRODUCTION


def reproduction_order() -> list[str]:
    """Every paper name, a paper that reads another's saved models (``models_of``) after that one; what
    ``reproduce all`` runs. Imports the paper modules."""
    import importlib

    names = REPRODUCTIONS.names()
    later = {
        name
        for name in names
        if getattr(importlib.import_module(REPRODUCTIONS.get(name)).REPRODUCTION, "models_of", None)
    }
    return [name for name in names if name not in later] + [name for name in names if name in later]


__all__ = [
    "PAPERS_DIR",
    "REPRODUCTIONS",
    "get_reproduction",
    "paper_data",
    "paper_files",
    "paper_modules",
    "paper_numbers",
    "reproduction_order",
]
