"""A paper's rows under a named budget on a CUDA device, each run stopped after ``--minutes`` of training.

Every run is the runner's own (:func:`hf_querygen.experiments.jobs.train_and_score`: the budget's sizes and
optimiser, or the row's own recipe where the budget says so, the checkpoint kept by the row's selection, the
decoding chosen on validation, the rows that decode its model (``System.decodes_model_of``) scored with it,
the same records in ``OUT/runs/``), with the budget's ``time_limit_s`` set,
since a GPU lease is counted in minutes. The runs go in parallel spawned processes on the one device (small
networks leave it mostly idle, so several share it well). Each record says the device and the time limit;
the paper's studies turn the records into rows (e.g. ``ding2018.studies.update_results``,
``zhang2020.studies.device_rows``).

    python -m hf_querygen.experiments.device_rows --paper zhang2020 --out-dir OUT [--budget full] \\
        [--minutes 4] [--runs warm_start:0,1,2 ctrsgen_copy:0,1,2] [--save-models MODELS] \\
        [--rescore-models KEPT [--variants-only]] [--threads 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from hf_querygen.cli import positive_int
from hf_querygen.experiments.jobs import (
    Job,
    _fold_data,
    _save_record,
    rescore_saved,
    run_name,
    train_and_score,
    with_variants,
)
from hf_querygen.experiments.papers import get_reproduction
from hf_querygen.experiments.recipes import _folds, row_budget, row_prepare_options
from hf_querygen.systems import get_system


def parse_runs(specs: list[str]) -> list[tuple[str, int]]:
    """``copynet:0,1,2`` -> [("copynet", 0), ("copynet", 1), ("copynet", 2)]."""
    runs = []
    for spec in specs:
        key, _, seeds = spec.partition(":")
        runs.extend((key, int(seed)) for seed in (seeds or "0").split(","))
    return runs


def run_one(
    paper: str,
    key: str,
    seed: int,
    budget_name: str,
    minutes: float,
    data_dir: str | None,
    out: str,
    save_models: str | None = None,
    rescore_models: str | None = None,
    threads: int = 1,
    variants_only: bool = False,
) -> dict[str, Any]:
    """One run in its own (spawned) process: the fold, its data with the row's prepare options, the
    runner's training and scoring; returns a summary (the records are in ``out/runs/``, the trained model
    in ``save_models/<run>`` when given). ``rescore_models``: no training; the model an earlier run kept in
    ``rescore_models/<run>`` is decoded and scored with the row's current decoding choice
    (:func:`~hf_querygen.experiments.jobs.rescore_saved`; ``variants_only``: only the rows decoding that
    model another way). ``threads``: torch's CPU threads for this run
    (1 where several runs share the machine: more threads than cores stall each other)."""
    import datasets
    import torch

    torch.set_num_threads(threads)
    datasets.disable_progress_bars()
    started = time.time()
    try:
        reproduction = get_reproduction(paper)
        # any registered row of the paper, a table row or an extra one (its fold settings as train --system)
        system = get_system(f"{paper}/{key}")
        budget = row_budget(system, reproduction.budgets[budget_name])
        budget = dataclasses.replace(budget, time_limit_s=minutes * 60)
        (fold,) = _folds(reproduction, budget, data_dir)
        data = _fold_data(reproduction, fold, {}, row_prepare_options(system, budget))
        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        prepared = time.time() - started
        # the rows that decode this row's model another way are scored with it, as the runner does
        job = Job(system, seed, fold.id, with_variants(system, reproduction.systems))
        models = Path(save_models) if save_models else None
        if rescore_models:
            kept = Path(rescore_models) / run_name(system.key, seed, fold.id)
            records = rescore_saved(
                job, reproduction, budget, data, Path(out), kept, models, fold, variants_only
            )
        else:
            records = train_and_score(
                job, reproduction, budget, data, Path(out), save_models=models, fold=fold
            )
        # the device and the training's time limit (none for a rescoring: nothing trained) beside the
        # runner's fields
        limit = {} if rescore_models else {"time_limit_s": budget.time_limit_s}
        for record in records:
            record.update(device=device, budget=budget_name, **limit)
            _save_record(Path(out), record)
        record = records[0]
        return {
            "run": f"{key}-seed{seed}",
            "device": device,
            "prepare_s": round(prepared, 1),
            "train_s": record["train_seconds"],
            "total_s": round(time.time() - started, 1),
            "training": record["training"],
            "decoding": record.get("decoding"),
            "scores": record["scores"],
        }
    except Exception:  # one run's failure must not lose the others' records
        return {"run": f"{key}-seed{seed}", "error": traceback.format_exc()}


def main(argv: list[str] | None = None, paper: str | None = None, runs: list[str] | None = None) -> int:
    """The command line; a paper's study may fix ``paper`` and its default ``runs``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--paper", required=paper is None, default=paper)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--budget", default="paper")
    parser.add_argument("--minutes", type=float, default=4.5, help="training time of each run (at most)")
    parser.add_argument("--runs", nargs="+", required=runs is None, default=runs)
    parser.add_argument(
        "--save-models", type=Path, default=None, help="keep each trained model in SAVE_MODELS/<row>-seed<n>"
    )
    parser.add_argument(
        "--rescore-models",
        type=Path,
        default=None,
        help="train nothing: decode and score the models an earlier run kept in RESCORE_MODELS/<row>-seed<n> "
        "with each row's current decoding choice (a grid that grew after training)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="torch CPU threads of each run (default 1; a lone run on a CPU machine can use every core)",
    )
    parser.add_argument(
        "--variants-only",
        action="store_true",
        help="with --rescore-models: score only the rows that decode each kept model another way "
        "(System.decodes_model_of); the row keeps the decoding saved with its model",
    )
    args = parser.parse_args(argv)
    if args.variants_only and args.rescore_models is None:
        parser.error("--variants-only goes with --rescore-models (it scores kept models)")
    parsed = parse_runs(args.runs)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    summaries = []
    context = multiprocessing.get_context("spawn")  # CUDA cannot be shared with forked children
    with ProcessPoolExecutor(len(parsed), mp_context=context) as pool:
        futures = [
            pool.submit(
                run_one,
                args.paper,
                key,
                seed,
                args.budget,
                args.minutes,
                args.data_dir,
                str(args.out_dir),
                str(args.save_models) if args.save_models else None,
                str(args.rescore_models) if args.rescore_models else None,
                args.threads,
                args.variants_only,
            )
            for key, seed in parsed
        ]
        for future in as_completed(futures):
            summary = future.result()
            summaries.append(summary)
            print(json.dumps(summary), flush=True)
    (args.out_dir / "summary.json").write_text(json.dumps(summaries, indent=1) + "\n")
    return 1 if any("error" in s for s in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
