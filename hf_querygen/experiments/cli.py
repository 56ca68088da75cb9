"""``hf-querygen reproduce NAME``: train every system of a paper's table and write results/NAME/."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from .._fs import check_writable_dir
from ..cli import positive_int
from .papers import REPRODUCTIONS, budget_names, reproduction_order


class _PaperChoices:
    """``reproduce``'s choices, read from the paper registry when argparse first checks or prints them
    (building the parser reads nothing: ``hf-querygen --help`` stays cheap)."""

    def _names(self) -> list[str]:
        return [*REPRODUCTIONS.names(), "all"]

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reproduce", help="reproduce a paper's tables (results/<name>/)")
    parser.add_argument(
        "name",
        metavar="NAME",
        choices=_PaperChoices(),
        help="the paper to reproduce: %(choices)s",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the budget `quick`: a smoke run of minutes (small data and models, 1 seed); its tables say so",
    )
    parser.add_argument(
        "--budget",
        default=None,
        help="a named budget instead of `full` (`paper`: the paper's network sizes and optimiser, 3 seeds, "
        "on a CUDA device through the stock Trainer when one is present); budgets: "
        + "; ".join(f"{paper}: {', '.join(names)}" for paper, names in budget_names().items()),
    )
    parser.add_argument("--seeds", type=positive_int, default=None, help="number of seeds / repetitions")
    parser.add_argument("--out-dir", type=Path, default=None, help="default: results/<name>[-quick]")
    parser.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    parser.add_argument("--workers", type=positive_int, default=2, help="training processes (default 2)")
    parser.add_argument("--save-models", type=Path, default=None, help="keep every trained model here")
    parser.add_argument("--resume", action="store_true", help="skip finished runs, continue interrupted ones")
    parser.add_argument("--overwrite", action="store_true", help="start again in a non-empty --out-dir")
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=None,
        help="retrieval: saved nl2kw model folders (default with `all --save-models D`: D/liu2018)",
    )
    parser.set_defaults(func=_reproduce)


def _reproduce(args: argparse.Namespace) -> int:
    import importlib

    if args.quick and args.budget:
        raise SystemExit(f"--quick is the budget `quick`: give --quick or --budget {args.budget}, not both")
    names = reproduction_order() if args.name == "all" else [args.name]
    # output paths before any work (a reproduction runs for minutes to hours)
    for path, what in ((args.out_dir, "--out-dir"), (args.save_models, "--save-models")):
        if path is not None:
            check_writable_dir(path, what)
    if args.models_dir is not None and not args.models_dir.is_dir():
        raise SystemExit(f"--models-dir {args.models_dir} is not a folder")
    for name in names:
        out_dir = args.out_dir / name if (args.out_dir and args.name == "all") else args.out_dir
        suffix = f"-{args.budget}" if args.budget not in (None, "full") else ("-quick" if args.quick else "")
        out_dir = out_dir or Path("results") / (name + suffix)
        save_models = (
            args.save_models / name if (args.save_models and args.name == "all") else args.save_models
        )
        reproduction = importlib.import_module(REPRODUCTIONS.get(name)).REPRODUCTION
        models_dir = args.models_dir
        models_of = getattr(reproduction, "models_of", None)
        if models_dir is None and models_of and args.save_models and args.name == "all":
            models_dir = args.save_models / models_of  # the models ``all`` saved for that paper
        reproduction.reproduce(
            out_dir,
            quick=args.quick,
            seeds=args.seeds,
            data_dir=args.data_dir,
            workers=args.workers,
            save_models=save_models,
            resume=args.resume,
            overwrite=args.overwrite,
            models_dir=models_dir,
            budget=args.budget,
        )
    return 0
