"""CtrsGen with an input vocabulary sized by word frequency (validation only).

The zhang2020 table's ``ctrsgen`` row (``training_recipe("zhang2020/ctrsgen")``: 64-unit embeddings and GRUs,
the run's contrast setting, the run's caps and 2,000-word output vocabulary, AdamW 2e-3, batch 16, up to 1,200
steps, the decoded validation ROUGE every 200 steps, the checkpoint with the best validation ``rouge_goal``
kept, early stopping after 3 evaluations without improvement), trained as the runner trains it
(:func:`hf_querygen.experiments.jobs.train_and_score`), except for the tokenizer's ``min_frequency``
(``Q2IDTask.prepare``): words seen fewer times in TRAIN read as [UNK], so the input embedding table (and its
dense gradient + AdamW update) shrinks. The test split is dropped before the data is prepared: every number
here is the VALIDATION split's (100 queries), decoded as the table decodes (``no_repeat_ngram_size=2``).

Per run it records the vocabulary size (embedding rows), the output vocabulary, the best validation
``rouge_goal`` and its step, the validation ROUGE of the kept checkpoint, the training seconds and the mean
seconds of a training step (forward + backward + optimizer, timed by a callback; evaluations excluded).
``vocabulary_study.json`` (``systems -> "min_frequency=N" -> metric -> {mean, std, n}`` over seeds, plus
``config`` and ``runs``) and ``vocabulary_study.md`` are written to ``results/zhang2020/`` (``--out-dir``).

    # every run (min_frequency 1 2 3 x seeds 0 1 2), at most --workers trainings at a time, then the summary;
    # finished runs (WORK_DIR/records/*.json) are not trained again
    python -m hf_querygen.experiments.zhang2020.studies.vocabulary_study WORK_DIR [--min-frequencies 1 2 3] \\
        [--seeds 0 1 2] [--workers 2]
    # one run (what the pool launches), or only the summary of the records there are
    python -m hf_querygen.experiments.zhang2020.studies.vocabulary_study WORK_DIR --one MIN_FREQUENCY SEED \\
        [--max-steps N]
    python -m hf_querygen.experiments.zhang2020.studies.vocabulary_study WORK_DIR --summarize
    # the step time of each min_frequency with the machine to itself: one short run after another (seed 0,
    # N steps, WORK_DIR/timing), added to the summary as ``timing_alone``
    python -m hf_querygen.experiments.zhang2020.studies.vocabulary_study WORK_DIR --timing-steps 150
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hf_querygen.experiments._report import aggregate
from hf_querygen.experiments.recipes import training_recipe
from hf_querygen.experiments.zhang2020.studies import RESULTS_DIR as HERE
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.q2id.task import Q2ID_METRICS
from hf_querygen.training import LogFileCallback, choose_decoding, train_preset
from hf_querygen.training.task_training import _training_summary, with_rouge_goal

#: what each training subprocess runs (``--one``)
MODULE = "hf_querygen.experiments.zhang2020.studies.vocabulary_study"
SYSTEM = "zhang2020/ctrsgen"
#: the validation scores reported per run (the table's metrics and extras, plus rouge_goal)
METRICS = ("rouge_goal", *Q2ID_METRICS)
#: per-run numbers summarised over seeds besides the validation scores
RUN_NUMBERS = ("vocab_size", "best_step", "global_steps", "train_seconds", "seconds_per_step")


def _record_path(work: Path, min_frequency: int, seed: int) -> Path:
    return work / "records" / f"min_frequency{min_frequency}-seed{seed}.json"


def train_one(work: Path, min_frequency: int, seed: int, max_steps: int | None = None) -> dict:
    """Train the row once with ``min_frequency`` and ``seed``; score VALIDATION; save the record."""
    import datasets
    import torch
    from transformers import TrainerCallback

    torch.set_num_threads(1)
    recipe = training_recipe(SYSTEM, None)
    system = recipe.system
    # no test split: nothing here can read it
    splits = datasets.DatasetDict(
        {"train": recipe.splits["train"], "validation": recipe.splits["validation"]}
    )
    task = get_task(system.task)
    data = task.prepare_data(splits, **recipe.prepare_options, min_frequency=min_frequency)

    class StepTimer(TrainerCallback):
        """Seconds of each optimizer step (forward, backward, clipping, AdamW), evaluations excluded."""

        def __init__(self) -> None:
            self.seconds: list[float] = []
            self._started = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self._started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self._started)

    timer = StepTimer()
    overrides = dict(recipe.training_overrides)
    overrides["disable_tqdm"] = True
    if max_steps is not None:  # a smoke run of the plumbing
        every = max(max_steps // 2, 1)
        overrides.update(max_steps=max_steps, eval_steps=every, save_steps=every)
    name = f"min_frequency{min_frequency}-seed{seed}"
    started = time.time()
    trainer = train_preset(
        data,
        system.preset,
        work / "checkpoints" / name,
        seed=seed,
        preset_overrides=recipe.preset_overrides,
        training_preset=system.training_preset,
        training_overrides=overrides,
        early_stopping_patience=recipe.early_stopping_patience,
        group_by_length=recipe.group_by_length,
        resume=False,
        callbacks=[LogFileCallback(work / "train.log", name), timer],
        **dict(system.train_options),
    )
    train_seconds = time.time() - started
    model = trainer.model
    summary = _training_summary(trainer)
    decoding, _ = choose_decoding(model, data, system.decoding, system.decoding_choice)
    started_decoding = time.time()
    sources = data.sources("validation")
    outputs = task.predict(model, data.tokenizer, sources, **decoding)
    scores = with_rouge_goal(task.score(outputs, data.references("validation"), sources))
    steps = timer.seconds[1:] or timer.seconds  # the first step builds the optimizer state
    record = {
        "min_frequency": min_frequency,
        "seed": seed,
        "vocab_size": int(model.get_input_embeddings().weight.shape[0]),
        "tokenizer_size": len(data.tokenizer),
        "output_vocab_size": int(data.state["output_vocab_size"]),
        "parameters": sum(p.numel() for p in model.parameters()),
        "best_rouge_goal": summary["best_metric"],
        "best_step": summary["best_checkpoint_step"],
        "global_steps": summary["global_steps"],
        "evaluations": [
            {"step": e["step"], "rouge_goal": e.get("eval_rouge_goal"), "loss": e.get("eval_loss")}
            for e in summary["evaluations"]
        ],
        "validation": scores,
        "decoding": dict(decoding),
        "train_seconds": round(train_seconds, 1),
        "seconds_per_step": round(statistics.mean(steps), 4),
        "step_seconds_median": round(statistics.median(steps), 4),
        "decode_seconds": round(time.time() - started_decoding, 1),
        "max_steps": overrides["max_steps"],
        "torch_threads": torch.get_num_threads(),
    }
    path = _record_path(work, min_frequency, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    import shutil

    shutil.rmtree(work / "checkpoints" / name, ignore_errors=True)
    return record


def run_all(work: Path, min_frequencies: list[int], seeds: list[int], workers: int) -> None:
    """Each (min_frequency, seed) not yet recorded in a process of its own (1 thread), ``workers`` at once."""
    pending = [
        (f, s) for s in seeds for f in min_frequencies if not _record_path(work, f, s).exists()
    ]  # seed-major: a cut-short study still has every min_frequency at the first seeds
    (work / "logs").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    running: list[tuple[subprocess.Popen, str]] = []
    while pending or running:
        while pending and len(running) < workers:
            f, s = pending.pop(0)
            name = f"min_frequency{f}-seed{s}"
            log = open(work / "logs" / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
            command = [sys.executable, "-m", MODULE, str(work), "--one", str(f), str(s)]
            running.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env), name))
            print(time.strftime("%H:%M:%S"), "started", name, flush=True)
        time.sleep(5)
        for process, name in list(running):
            if process.poll() is not None:
                running.remove((process, name))
                print(time.strftime("%H:%M:%S"), "finished", name, "rc", process.returncode, flush=True)


def time_alone(work: Path, min_frequencies: list[int], steps: int) -> None:
    """One short run per min_frequency, one after another (nothing else training): step times only."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for f in min_frequencies:
        command = [
            sys.executable,
            "-m",
            MODULE,
            str(work / "timing"),
            "--one",
            str(f),
            "0",
            "--max-steps",
            str(steps),
        ]
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(time.strftime("%H:%M:%S"), "timed", f"min_frequency{f}", flush=True)


def summarize(work: Path, out_dir: Path = HERE, notes: list[str] | None = None) -> dict:
    """``vocabulary_study.json`` and ``.md`` from the records in ``work/records``."""
    records = sorted(
        (json.loads(p.read_text()) for p in (work / "records").glob("*.json")),
        key=lambda r: (r["min_frequency"], r["seed"]),
    )
    systems: dict[str, dict] = {}
    for f in sorted({r["min_frequency"] for r in records}):
        runs = [
            {
                **{metric: r["validation"][metric] for metric in METRICS},
                "best_rouge_goal": r["best_rouge_goal"],
                **{key: r[key] for key in RUN_NUMBERS},
            }
            for r in records
            if r["min_frequency"] == f
        ]
        systems[f"min_frequency={f}"] = aggregate(runs)
    recipe = training_recipe(SYSTEM, None)
    document = {
        "systems": systems,
        "config": {
            "issue": 23,
            "system": SYSTEM,
            "split": "validation (100 queries); the test split is not read",
            "varied": "Q2IDTask.prepare(min_frequency=...): words seen fewer times in TRAIN -> [UNK]",
            "min_frequencies": sorted({r["min_frequency"] for r in records}),
            "seeds": sorted({r["seed"] for r in records}),
            "prepare_options": recipe.prepare_options,
            "preset": recipe.system.preset,
            "preset_overrides": recipe.preset_overrides,
            "training_overrides": recipe.training_overrides,
            "train_options": recipe.system.train_options,
            "early_stopping_patience": recipe.early_stopping_patience,
            "decoding": recipe.decoding,
            "torch_threads_per_run": 1,
            "trainings_at_once": 2,
            "machine": f"{os.cpu_count()} CPU cores, no GPU",
            "seconds_per_step": "mean seconds of a training step (forward, backward, AdamW; evaluations "
            "excluded) while 2 trainings share the 2 cores",
            "best_rouge_goal": "validation rouge_goal at the kept checkpoint, as evaluated during training "
            "(greedy, no_repeat_ngram_size=2); rouge_goal and the ROUGE metrics: the kept model decoded "
            "again after training, as the table decodes",
        },
        "runs": records,
    }
    if notes:
        document["config"]["notes"] = list(notes)
    timing = sorted(
        (json.loads(p.read_text()) for p in (work / "timing" / "records").glob("*.json")),
        key=lambda r: r["min_frequency"],
    )
    if timing:
        document["timing_alone"] = {
            "note": "one training at a time (nothing else running), seed 0, 1 torch thread; seconds of a "
            "training step (forward, backward, AdamW), the first step left out",
            "steps": timing[0]["max_steps"],
            **{
                f"min_frequency={r['min_frequency']}": {
                    "vocab_size": r["vocab_size"],
                    "seconds_per_step": r["seconds_per_step"],
                    "step_seconds_median": r["step_seconds_median"],
                }
                for r in timing
            },
        }
    (out_dir / "vocabulary_study.json").write_text(json.dumps(document, indent=1) + "\n")
    (out_dir / "vocabulary_study.md").write_text(render_markdown(document))
    return document


def render_markdown(document: dict) -> str:
    def cell(row: dict, key: str, scale: float = 100.0, digits: int = 2) -> str:
        stats = row[key]
        return f"{stats['mean'] * scale:.{digits}f} ± {stats['std'] * scale:.{digits}f}"

    lines = [
        "# CtrsGen: input vocabulary sized by frequency (VALIDATION only)",
        "",
        "The zhang2020 table's `ctrsgen` row (64 units, 1,200 steps, checkpoint kept on validation "
        "`rouge_goal`), trained with the q2id tokenizer's `min_frequency` varied: words seen fewer times in "
        "TRAIN read as [UNK]. Mean ± std over seeds "
        f"{document['config']['seeds']}; ROUGE in % on the 100 validation queries (the test split is not "
        "read); s/step: a training step's mean seconds, 2 trainings sharing the 2 cores. "
        "Made by `python -m hf_querygen.experiments.zhang2020.studies.vocabulary_study`.",
        "",
        "| min_frequency | embedding rows | rouge_goal | R-1 recall | R-2 recall | R-L recall | R-L F1 "
        "| best step | s/step |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in document["systems"].items():
        lines.append(
            f"| {name.split('=')[1]} | {row['vocab_size']['mean']:,.0f} | {cell(row, 'rouge_goal')} "
            f"| {cell(row, 'rouge1_recall')} | {cell(row, 'rouge2_recall')} | {cell(row, 'rougeL_recall')} "
            f"| {cell(row, 'rougeL_f')} | {row['best_step']['mean']:.0f} "
            f"| {cell(row, 'seconds_per_step', 1.0, 3)} |"
        )
    notes = document["config"].get("notes")
    if notes:
        lines += ["", *(f"Note: {note}" for note in notes)]
    timing = document.get("timing_alone")
    if timing:
        lines += [
            "",
            f"Step time with the machine to itself ({timing['steps']} steps of seed 0 per min_frequency, one "
            "training at a time, 1 thread):",
            "",
            "| min_frequency | embedding rows | s/step (mean) | s/step (median) |",
            "|---|---|---|---|",
        ]
        for name, row in timing.items():
            if name.startswith("min_frequency="):
                lines.append(
                    f"| {name.split('=')[1]} | {row['vocab_size']:,} | {row['seconds_per_step']:.4f} "
                    f"| {row['step_seconds_median']:.4f} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path, help="records, logs and checkpoints go here")
    parser.add_argument("--one", nargs=2, type=int, metavar=("MIN_FREQUENCY", "SEED"), help="train one run")
    parser.add_argument("--max-steps", type=int, help="with --one: a smoke run of this many steps")
    parser.add_argument("--summarize", action="store_true", help="only write the summary of the records")
    parser.add_argument("--min-frequencies", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workers", type=int, default=2, help="trainings at once (one torch thread each)")
    parser.add_argument("--out-dir", type=Path, default=HERE, help="where the summary goes")
    parser.add_argument("--note", action="append", help="a note for the summary (repeatable)")
    parser.add_argument(
        "--timing-steps", type=int, help="only time each min_frequency alone, this many steps"
    )
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(train_one(args.work, *args.one, max_steps=args.max_steps), indent=1))
    elif args.timing_steps:
        time_alone(args.work, args.min_frequencies, args.timing_steps)
        summarize(args.work, args.out_dir, args.note)
    else:
        if not args.summarize:
            run_all(args.work, args.min_frequencies, args.seeds, args.workers)
        summarize(args.work, args.out_dir, args.note)


if __name__ == "__main__":
    main()
