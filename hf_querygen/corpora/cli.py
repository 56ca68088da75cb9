"""``hf-querygen corpus list | build NAME | stats NAME``: the corpus builders on the command line.

``build`` writes the Hub-ready folder ``dataset_scripts/NAME`` (parquet per config and split, the
YAML header of the dataset card regenerated from the data); ``stats`` prints the paper-style
statistics of a corpus (the ``corpus_stats`` of its builder module) as tables and as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from .._fs import check_output_file, check_writable_dir
from ..errors import InvalidInputError
from ._base import CorpusFormatError, build_dataset_folder, corpus_names, corpus_stats, get_corpus_spec


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    corpus = subparsers.add_parser(
        "corpus", help="build corpora as Hub-ready datasets; print their statistics"
    )
    commands = corpus.add_subparsers(dest="corpus_command", required=True)

    listing = commands.add_parser("list", help="registered corpora and their configs")
    listing.set_defaults(func=_list)

    build = commands.add_parser(
        "build", help="write dataset_scripts/NAME/data/<config>/<split>.parquet + card header"
    )
    build.add_argument("name", help="corpus name (see `hf-querygen corpus list`)")
    build.add_argument("--out-dir", type=Path, default=None, help="default: dataset_scripts/NAME")
    build.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    build.add_argument(
        "--config",
        action="append",
        default=None,
        help="build only this config (repeatable; the card header is then left as it is)",
    )
    build.add_argument(
        "--lenient", action="store_true", help="skip malformed records (counted) instead of failing"
    )
    build.set_defaults(func=_build)

    stats = commands.add_parser("stats", help="paper-style statistics of a corpus")
    stats.add_argument("name", help="corpus name (see `hf-querygen corpus list`)")
    stats.add_argument("--config", default=None, help="one config (default: every config)")
    stats.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    stats.add_argument("--json", type=Path, default=None, help="also write the statistics to this JSON file")
    stats.set_defaults(func=_stats)


def _list(args: argparse.Namespace) -> int:
    for name in corpus_names():
        spec = get_corpus_spec(name)
        print(f"{name}: {spec.description}")
        for config, description in spec.configs.items():
            default = " (default)" if config == spec.default_config else ""
            print(f"  {config}{default}: {description}")
    return 0


def _build(args: argparse.Namespace) -> int:
    # unknown corpus or config: InvalidInputError, printed as one line by hf_querygen.cli.main
    spec = get_corpus_spec(args.name)
    for config in args.config or []:
        spec.check_config(config)
    if args.out_dir is not None:
        check_writable_dir(args.out_dir, "--out-dir")
    logs: dict = {}
    summaries: dict = {}
    try:
        out = build_dataset_folder(
            args.name,
            out_dir=args.out_dir,
            data_dir=args.data_dir,
            configs=args.config,
            strict=not args.lenient,
            progress=True,
            logs=logs,
            summaries=summaries,
        )
    except InvalidInputError as err:  # CorpusFormatError names file and line; a missing file its path
        if isinstance(err, CorpusFormatError):
            err.args = (f"{err} (re-run with --lenient to skip malformed records)",)
        raise
    moved = False
    for config, log in logs.items():
        summary = log.summary()
        summaries[config] = {s: summaries[config][s] for s in sorted(summaries[config])}
        rows = {split: entry["rows"] for split, entry in summaries.get(config, {}).items()}
        print(
            f"{args.name}/{config}: {rows}; skipped malformed: {summary['skipped_malformed']}; "
            f"removed: {summary['removed'] or 'nothing'}"
        )
        for split, entry in summaries.get(config, {}).items():
            expected = "no count in the card" if entry["expected"] is None else f"card {entry['expected']}"
            flag = f"  <-- WARNING: {entry['change']:+d} rows" if entry["change"] else ""
            moved |= bool(entry["change"])
            print(f"  {split}: {entry['rows']} rows ({expected}){flag}")
        if log.errors:
            print("  skipped per file (lenient):")
            print(log.format_summary())
    if moved:
        print(
            "warning: row counts moved against the dataset card (see above); the card header now states "
            "the new counts: check the raw files before committing it",
            file=sys.stderr,
        )
    print(f"wrote {out}")
    return 0


def _scalar(value: object) -> bool:
    return not isinstance(value, Mapping | list | tuple)


def _flatten(stats: Mapping, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in stats.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value if _scalar(value) else json.dumps(value, ensure_ascii=False)
    return flat


def format_table(rows: Mapping[str, Mapping[str, object]], row_title: str) -> str:
    """A plain-text table: one row per key of ``rows``, one column per statistic."""
    columns: list[str] = []
    for values in rows.values():
        columns += [c for c in values if c not in columns]
    cells = [[row_title, *columns]] + [
        [name, *(_format_value(values.get(c, "")) for c in columns)] for name, values in rows.items()
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _format_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _is_table(value: object) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(isinstance(v, Mapping) for v in value.values())


def render_stats(name: str, stats: Mapping) -> str:
    """Tables of one config's statistics: every mapping of mappings (``splits``: one row per split;
    ``beside_paper``: ours and the paper's value per statistic) as its own table, then every other
    value, with the paper's numbers last."""
    parts = [f"== {name} / {stats.get('config', '')}"]
    tables = [key for key, value in stats.items() if key != "paper" and _is_table(value)]
    for key in tables:
        parts.append(format_table({row: _flatten(values) for row, values in stats[key].items()}, key))
    rest = {k: v for k, v in stats.items() if k not in (*tables, "paper", "config")}
    if rest:
        parts.append(
            format_table({key: {"value": value} for key, value in _flatten(rest).items()}, "statistic")
        )
    if isinstance(stats.get("paper"), Mapping):
        paper = _flatten(stats["paper"])
        parts.append(format_table({key: {"paper": value} for key, value in paper.items()}, "paper statistic"))
    return "\n\n".join(parts)


def _stats(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    spec = get_corpus_spec(args.name)
    configs = [spec.check_config(args.config)] if args.config else list(spec.configs)
    if args.json is not None:
        check_output_file(args.json, "--json")  # before the statistics are computed
    results = {}
    for config in tqdm(
        configs, desc=f"statistics of {args.name}", disable=len(configs) == 1, file=sys.stderr
    ):
        results[config] = corpus_stats(args.name, config, data_dir=args.data_dir)
    for config, stats in results.items():
        print(render_stats(args.name, {"config": config, **stats}))
        print()
    document = json.dumps(results, indent=2, ensure_ascii=False, default=str)
    print(document)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(document + "\n", encoding="utf-8")
    return 0
