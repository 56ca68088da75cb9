"""``hf-querygen reproduce NAME``: train every system of a paper's table and write results/NAME/."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli import positive_int

#: the reproductions the parser offers; kept literal so that building the parser imports nothing
#: heavy (a test checks it equals the REPRODUCTIONS registry)
NAMES = ("liu2018", "lin2017", "zhang2020", "ding2018", "retrieval")


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reproduce", help="reproduce a paper's tables (results/<name>/)")
    parser.add_argument("name", choices=[*NAMES, "all"])
    parser.add_argument(
        "--quick", action="store_true", help="minutes-long run (small data and models, 1 seed)"
    )
    parser.add_argument(
        "--budget",
        default=None,
        help="a named budget of the reproduction instead of full/quick (zhang2020: paper = the paper's "
        "model sizes, 3 seeds; uses a CUDA device through the stock Trainer when one is present)",
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

    from .runner import REPRODUCTIONS, run_reproduction

    names = list(NAMES) if args.name == "all" else [args.name]
    for name in names:
        out_dir = args.out_dir / name if (args.out_dir and args.name == "all") else args.out_dir
        suffix = f"-{args.budget}" if args.budget else ("-quick" if args.quick else "")
        out_dir = out_dir or Path("results") / (name + suffix)
        save_models = (
            args.save_models / name if (args.save_models and args.name == "all") else args.save_models
        )
        module = importlib.import_module(REPRODUCTIONS.get(name))
        if not hasattr(module, "REPRODUCTION"):  # an evaluation that trains nothing (retrieval)
            models_dir = args.models_dir
            if models_dir is None and args.save_models and args.name == "all":
                models_dir = args.save_models / "liu2018"
            document = module.run(
                out_dir, quick=args.quick, seeds=args.seeds, data_dir=args.data_dir, models_dir=models_dir
            )
            print(module.summary_table(document), flush=True)
            continue
        run_reproduction(
            module.REPRODUCTION,
            out_dir,
            quick=args.quick,
            seeds=args.seeds,
            data_dir=args.data_dir,
            workers=args.workers,
            save_models=save_models,
            resume=args.resume,
            overwrite=args.overwrite,
            **({"budget": args.budget} if args.budget else {}),
        )
    return 0
