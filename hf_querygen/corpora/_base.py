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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

from ..errors import CorpusFormatError
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
    raise FileNotFoundError(
        f"No corpus data directory found (tried {tried}). Pass data_dir=... or set ${DATA_DIR_ENV}."
    )


@dataclass
class ParseLog:
    """Collects what a builder skipped or removed, so that nothing is dropped silently.

    In strict mode (the default) :meth:`error` raises :class:`CorpusFormatError`; in lenient
    mode it records the error and the caller skips the record. Deliberate removals
    (duplicates, documented filters) are counted by reason with :meth:`removed`.
    """

    strict: bool = True
    errors: list[CorpusFormatError] = field(default_factory=list)
    removed_counts: Counter = field(default_factory=Counter)

    def error(self, path: str | os.PathLike, line: int | str | None, message: str) -> None:
        err = CorpusFormatError(path, line, message)
        if self.strict:
            raise err
        self.errors.append(err)

    def removed(self, reason: str, count: int = 1) -> None:
        self.removed_counts[reason] += count

    def summary(self) -> dict:
        return {
            "skipped_malformed": len(self.errors),
            "malformed_examples": [str(e) for e in self.errors[:20]],
            "removed": dict(self.removed_counts),
        }


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
        config = config or self.default_config
        if config not in self.configs:
            raise ValueError(
                f"Corpus {self.name!r} has no config {config!r}; choose one of {sorted(self.configs)}"
            )
        return config


_REGISTRY: dict[str, CorpusSpec] = {}


def register_corpus(
    name: str, configs: dict[str, str], default_config: str, description: str = ""
) -> Callable[[BuildFn], BuildFn]:
    """Decorator registering ``build(config, data_dir, log) -> DatasetDict`` under ``name``."""

    def decorator(build: BuildFn) -> BuildFn:
        _REGISTRY[name] = CorpusSpec(name, dict(configs), default_config, build, description)
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
    return sorted(_REGISTRY)


def get_corpus_spec(name: str) -> CorpusSpec:
    _ensure_builders_imported()
    if name not in _REGISTRY:
        raise ValueError(f"Unknown corpus {name!r}; available: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


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
    log = ParseLog(strict=strict)
    dataset_dict = spec.build(config, resolve_data_dir(data_dir), log)
    return (dataset_dict, log) if return_log else dataset_dict


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


# ---------------------------------------------------------------- raw-file readers
def line_numbers(text: str, pattern: str) -> list[int]:
    """The 1-based line of every match of the regex ``pattern`` in ``text``, in one pass (for
    error messages: ElementTree and json keep no line numbers of their elements)."""
    lines, line, previous = [], 1, 0
    for match in re.finditer(pattern, text):
        line += text.count("\n", previous, match.start())
        previous = match.start()
        lines.append(line)
    return lines


def read_xml(
    path: Path, rel: str, log: ParseLog, element: str
) -> tuple[ElementTree.Element | None, list[int]]:
    """The root of an XML file and the line of each ``<element`` opening tag, in document order.

    A file that is not well-formed (reported with the line of the parse error; ``rel`` names it) or
    holds no ``<element>`` at all gives ``(None, [])``, so a lenient build skips the whole file.
    """
    raw = path.read_bytes()
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError as err:
        log.error(rel, err.position[0], f"malformed XML: {err}")
        return None, []
    if root.find(f".//{element}") is None and root.tag != element:
        log.error(rel, 1, f"no <{element}> element in the file")
        return None, []
    return root, line_numbers(raw.decode("utf-8", errors="replace"), rf"<{re.escape(element)}[\s>/]")


def read_json(path: Path, rel: str, log: ParseLog, expected: type) -> object | None:
    """A parsed JSON file (a leading BOM is allowed), or ``None`` after reporting a syntax error with
    its line, or a top-level value that is empty or not of the ``expected`` type (``list`` / ``dict``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as err:
        log.error(rel, err.lineno, f"malformed JSON: {err.msg}")
        return None
    if not isinstance(data, expected) or not data:
        log.error(rel, 1, f"expected a non-empty JSON {expected.__name__} at the top level, got {data!r:.40}")
        return None
    return data


# ---------------------------------------------------------------- deterministic splits
def stable_unit_hash(key: str, salt: str = "hf-querygen") -> float:
    """A platform-independent hash of ``key`` in [0, 1) (Python's hash() is salted per process)."""
    digest = hashlib.sha1(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


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
) -> Path:
    """Write ``data/<config>/<split>.parquet`` for every config and refresh the YAML header of the
    folder's ``README.md`` (the dataset card prose below the header is kept).

    Afterwards ``datasets.load_dataset(out_dir, config)`` works with nothing else installed.
    Pass a dict as ``logs`` to receive each config's :class:`ParseLog` (skipped and removed records).
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
