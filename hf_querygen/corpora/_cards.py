"""Hub-ready dataset folders: parquet files plus a dataset card whose YAML header is derived from
the data."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .._fs import claim_in_place_dir
from ._catalog import build_summary, get_corpus_spec, load_corpus
from ._data_dir import dataset_folder
from ._parse_log import ParseLog
from ._splits import quiet_progress

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    import datasets


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


#: the .hf_querygen marker kind of a dataset folder built into an ``out_dir`` of the user's, and what the
#: build replaces there (the card's header is refreshed, its prose kept; the checkout's own
#: ``dataset_scripts/<name>`` is the library's and carries no marker)
DATASET_KIND = "dataset"
DATASET_OUTPUTS = ("data",)


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

    An ``out_dir`` of your own is written only when it holds no ``data/``, or one built for this corpus
    before (its ``.hf_querygen`` marker): a ``data/`` there that hf-querygen did not write, or another
    corpus's build, is refused before anything is read (:mod:`hf_querygen._fs`).
    """
    from tqdm.auto import tqdm

    spec = get_corpus_spec(name)
    if out_dir is not None and Path(out_dir).resolve() != Path(dataset_folder(name)).resolve():
        claim_in_place_dir(
            out_dir, DATASET_KIND, DATASET_OUTPUTS, identity={"corpus": name}, resume=True, what="--out-dir"
        )
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
