"""Build the Hub-ready ``q2id`` dataset folder next to this script.

Writes ``data/<config>/<split>.parquet`` for every config, regenerates the YAML header of
``README.md`` from the data (the card's prose is kept) and prints each config's statistics beside
Zhang et al.'s Table 2, so that the card's numbers can be checked against a fresh build.

    python dataset_scripts/q2id/build.py [--data-dir ../shared/data] [--lenient]

(``hf-querygen corpus build q2id`` does the same without the statistics.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hf_querygen.corpora import build_dataset_folder
from hf_querygen.corpora.q2id import CONFIGS, CORPUS_NAME, corpus_stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    parser.add_argument(
        "--lenient", action="store_true", help="skip malformed records (counted) instead of failing"
    )
    args = parser.parse_args(argv)
    logs: dict = {}
    summaries: dict = {}
    folder = build_dataset_folder(
        CORPUS_NAME,
        out_dir=Path(__file__).resolve().parent,
        data_dir=args.data_dir,
        strict=not args.lenient,
        logs=logs,
        summaries=summaries,
    )
    for config, summary in summaries.items():  # rows against the counts the card recorded before
        moved = {split: entry for split, entry in summary.items() if entry["change"]}
        print(f"{CORPUS_NAME}/{config}: {summary}" + (f"  WARNING: counts moved {moved}" if moved else ""))
        if logs[config].errors:
            print(logs[config].format_summary())
    statistics = {config: corpus_stats(config, args.data_dir) for config in CONFIGS}
    print(json.dumps(statistics, indent=2))
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
