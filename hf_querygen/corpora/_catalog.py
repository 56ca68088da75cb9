"""The corpus registry (:data:`CORPORA`, :func:`register_corpus`), lookups by name, :func:`load_corpus`
and the row-count checks against the dataset cards."""

from __future__ import annotations

import os
import pkgutil
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CorpusCountWarning, InvalidInputError
from ..registry import Registry
from ._data_dir import check_data_dir, dataset_folder, resolve_data_dir
from ._parse_log import ParseLog

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    import datasets


#: a corpus builder: (config, data dir, parse log) -> the splits
BuildFn = Callable[[str, Path, ParseLog], "datasets.DatasetDict"]


@dataclass
class CorpusSpec:
    """A registered corpus: its configs and the function that builds one config."""

    name: str
    configs: dict[str, str]  # config name -> one-line description
    default_config: str
    build: BuildFn
    description: str = ""
    #: the data's license as a Hub ``license`` value (``"other"`` with ``license_details`` for mixed or
    #: unstated terms): dataset cards and the cards of models trained on it state it
    license: str = "other"
    license_details: str = ""
    #: the dataset's Hub id where one publishes this corpus as built here (None: not on the Hub)
    hub_dataset_id: str | None = None

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


def builder_modules() -> list[str]:
    """Every corpus builder module: the modules of ``hf_querygen.corpora`` not starting with ``_``
    (found on disk without importing them)."""
    folder = Path(__file__).resolve().parent
    return [
        f"{__package__}.{info.name}"
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda info: info.name)
        if not info.name.startswith("_")
    ]


#: corpus name -> :class:`CorpusSpec`; builder modules register on import (see ``register_corpus``), and
#: are imported on the first lookup, lazily, so that ``import hf_querygen`` stays cheap
CORPORA: Registry[CorpusSpec] = Registry("corpus", modules=builder_modules)


def register_corpus(
    name: str,
    configs: dict[str, str],
    default_config: str,
    description: str = "",
    license: str = "other",
    license_details: str = "",
    hub_dataset_id: str | None = None,
) -> Callable[[BuildFn], BuildFn]:
    """Decorator registering ``build(config, data_dir, log) -> DatasetDict`` under ``name``."""

    def decorator(build: BuildFn) -> BuildFn:
        spec = CorpusSpec(
            name, dict(configs), default_config, build, description, license, license_details, hub_dataset_id
        )
        # replace: re-importing a builder module (reload, tests) registers the same corpus again
        CORPORA.register(name, spec, replace=True)
        return build

    return decorator


def _ensure_builders_imported() -> None:
    len(CORPORA)  # the first lookup imports the builder modules


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
