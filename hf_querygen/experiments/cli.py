"""``hf-querygen reproduce NAME``: train every system of a paper's table and write results/NAME/."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    from . import REPRODUCTIONS

    parser = subparsers.add_parser("reproduce", help="reproduce a paper's tables (results/<name>/)")
    parser.add_argument("name", choices=[*REPRODUCTIONS, "all"])
    parser.add_argument("--quick", action="store_true", help="minutes-long smoke run (small data, 1 seed)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds / repetitions")
    parser.add_argument("--out-dir", type=Path, default=None, help="default: results/<name>")
    parser.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    parser.set_defaults(func=_reproduce)


def _reproduce(args: argparse.Namespace) -> int:
    from . import REPRODUCTIONS, get_reproduction

    names = list(REPRODUCTIONS) if args.name == "all" else [args.name]
    for name in names:
        out_dir = args.out_dir / name if (args.out_dir and args.name == "all") else args.out_dir
        out_dir = out_dir or Path("results") / (name + ("-quick" if args.quick else ""))
        get_reproduction(name).run(
            out_dir=out_dir, quick=args.quick, seeds=args.seeds, data_dir=args.data_dir
        )
    return 0
