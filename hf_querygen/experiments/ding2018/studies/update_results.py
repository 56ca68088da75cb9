"""Add the rows of the long CopyNet runs and the trivial rows to results/ding2018 (run once per new run).

The full 3-seed reproduction of the new recipe did not fit the CPU budget (NOTES.md); this script
keeps every row of the last full run (results.json as committed: SDM, TBM, EDNet, AttNet, CopyNet,
config, figures) and adds, from ``finalize_long_run.py``'s outputs, one row per long run and the keyword
query echoed and the most frequent question frame (from the first run's output), with ``row_provenance``
saying where each row comes from; a ROW named several times is one row over those runs (seeds: mean, std,
n); it plots the runs' curves (curves.png) and re-renders results.md.

    python -m hf_querygen.experiments.ding2018.studies.update_results \\
        ROW=EVALUATION_JSON:MODEL_DIR [ROW=...] [drop=ROW ...]
    # the runner's records, e.g. gpu_rows.py's
    python -m hf_querygen.experiments.ding2018.studies.update_results ROW=@RUNS_GLOB
    # a full `reproduce` run's table
    python -m hf_querygen.experiments.ding2018.studies.update_results --from-run OUT [ROW=...]

``drop=ROW`` removes a row an earlier update added (e.g. one whose run is withdrawn). ``ROW=@GLOB``: one
row over the runner's records that GLOB matches (one per seed: ``OUT/runs/<system>-seed<s>.json``), its
curves from ``OUT/train.log``. ``--from-run OUT``: the table of a full ``reproduce ding2018 --out-dir OUT``
run (every table row, the figures and analyses, its networks' curves from ``OUT/train.log``) replaces the
committed one; the committed rows the run does not have (extra rows: long runs, GPU rows) are kept with
their provenance and curves.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path
from typing import Any

from hf_querygen.experiments._report import aggregate, pyplot, write_results
from hf_querygen.experiments.ding2018 import render_markdown
from hf_querygen.experiments.ding2018.studies import RESULTS_DIR as HERE

SIZE_FIELDS = ("embedding_size", "hidden_size", "decoder_hidden_size", "dropout")
BUDGET_TEXT = {
    "paper": "the paper's sizes and optimiser",
    "full": "the row's `train --system` recipe, 100/128/256, Adam 2e-3, up to 5,000 steps",
}
OLD_NETWORK = "last full run: 64/64/128, 400 steps, selected on validation LOSS (the old recipe; not rerun)"


def cells(runs_scores: list[dict]) -> dict:
    """One cell per test split and metric over the runs (seeds): mean, std, n."""
    return aggregate(
        [
            {
                f"{split}/{metric}": value
                for split in ("t0", "nl2kw")
                for metric, value in scores_by_split[split].items()
            }
            for scores_by_split in runs_scores
        ]
    )


def curve_of(log_history: list[dict]) -> dict:
    """One run's curves from its Trainer log history: validation loss and ROUGE-L (greedy) per evaluation,
    and the logged training loss."""
    evals = [e for e in log_history if "eval_loss" in e]
    return {
        "steps": [e["step"] for e in evals],
        "epochs": [e.get("epoch") for e in evals],
        "eval_loss": [e["eval_loss"] for e in evals],
        "eval_ROUGE-L": [e["eval_ROUGE-L"] for e in evals],
        "train_loss": [[e["step"], e["loss"]] for e in log_history if "loss" in e and "eval_loss" not in e],
    }


def plot_curves(curves: dict[str, dict], path: Path) -> None:
    """Training / validation loss and validation ROUGE-L (greedy) against steps, one line per run
    (:func:`curve_of`; curves saved before the training loss was kept have no faint line)."""
    plt = pyplot("Plotting the ding2018 curves")
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.6))
    palette = plt.get_cmap("tab20")  # one colour per row, its seeds in the same colour
    rows = list(dict.fromkeys(name.split(" (")[0] for name in curves))
    labelled = set()
    for name, curve in curves.items():
        row = name.split(" (")[0]
        color = palette(rows.index(row) % 20)
        label = None if row in labelled else row
        labelled.add(row)
        train = curve.get("train_loss") or []
        axes[0].plot([s for s, _ in train], [v for _, v in train], color=color, alpha=0.35)
        axes[0].plot(curve["steps"], curve["eval_loss"], marker="o", ms=3, color=color, label=label)
        axes[1].plot(curve["steps"], curve["eval_ROUGE-L"], marker="o", ms=3, color=color, label=label)
    axes[0].set_xlabel("step (batch 64)")
    axes[0].set_ylabel("cross-entropy (faint: training)")
    axes[1].set_xlabel("step (batch 64)")
    axes[1].set_ylabel("validation ROUGE-L F (greedy)")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle("ding2018 long runs (1 CPU core each; H200: one GPU): loss and validation ROUGE-L")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_frame_curves(runs: dict[str, list[dict]], floors: dict[str, float], path: Path) -> dict:
    """The question-frame runs: validation ROUGE-L of each source (T_0's own validation pairs, nl2kw
    validation) against epochs, one line per seed, beside the echoed keyword query (dashed)."""
    plt = pyplot("Plotting the question-frame curves")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    curves = {}
    for index, (run, log_history) in enumerate(runs.items()):
        evals = [e for e in log_history if "eval_selection_criterion" in e]
        curves[run] = {"epochs": [e["epoch"] for e in evals]}
        for ax, source in zip(axes, ("t0_validation", "nl2kw_validation"), strict=True):
            values = [e[f"eval_{source} ROUGE-L"] for e in evals]
            curves[run][source] = values
            ax.plot(curves[run]["epochs"], values, marker="o", color=f"C{index}", label=run)
    for ax, source in zip(axes, ("t0_validation", "nl2kw_validation"), strict=True):
        ax.axhline(floors[source], color="gray", linestyle="--", label="keyword query echoed")
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"{source} ROUGE-L F")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        "ding2018 question-frame model: validation ROUGE-L by source (the epoch kept: best worst gain)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return curves


def frame_provenance(metadata: dict, evaluation: dict) -> str:
    """How a question-frame run was trained and selected (its training JSON)."""
    sizes = metadata["recipe"]["preset_overrides"]
    return (
        f"1 seed: `train --system {metadata['system']} --seed {metadata['seed']}` (question-frame model, "
        f"preset ding2018-question-frames{', overrides ' + json.dumps(sizes) if sizes else ''}), "
        f"{metadata['train_examples']:,} pairs (T_0 train + nl2kw train, no synthetic pairs), "
        f"{metadata['epochs']:.0f} epochs run; the epoch with the best worst validation source's gain over "
        f"the echoed keyword query kept (step {metadata.get('best_checkpoint_step')}); "
        f"{metadata['seconds']:.0f} s on 1 thread"
    )


def provenance(metadata: dict, evaluation: dict, model_dir: str) -> str:
    if metadata.get("family") == "frames":
        return frame_provenance(metadata, evaluation)
    # the sizes the model has (a run may set them on top of the recipe's: train --set)
    config = json.loads(Path(model_dir, "config.json").read_text())
    limit = metadata.get("time_limit_s")
    steps, budget = metadata["global_steps"], metadata["recipe"]["training_overrides"]["max_steps"]
    if steps >= budget:
        stopped = f"all {steps} steps"
    elif limit and metadata.get("seconds", 0) >= 0.95 * limit:
        stopped = f"stopped by the time limit ({limit / 60:.0f} min) at step {steps}"
    else:
        stopped = f"{steps} of {budget} steps (early stopping: no better validation ROUGE-L in 4 evaluations)"
    sizes = {**metadata["recipe"]["preset_overrides"], **{k: config[k] for k in SIZE_FIELDS}}
    criterion = max(r["criterion"] for r in evaluation["decoding_selection"])
    return (
        f"1 seed: `train --system {metadata['system']} --seed {metadata['seed']}` "
        f"({sizes['embedding_size']}/{sizes['hidden_size']}/{sizes['decoder_hidden_size']}, dropout "
        f"{sizes['dropout']}, Adam {metadata['recipe']['training_overrides']['learning_rate']}), {stopped} "
        f"({metadata['epochs']:.2f} epochs of {metadata['train_examples']:,} pairs); best checkpoint by "
        f"validation ROUGE-L at step {metadata.get('best_checkpoint_step')}; decoding chosen on validation "
        f"(worst source's gain over the echo {criterion:+.4f}): "
        f"{json.dumps(evaluation['decoding'])}"
    )


def record_provenance(records: list[dict]) -> str:
    """How the runner's records of one row were trained (device, budget, time limit) and decoded."""
    described = []
    for record in records:
        training, limit = record["training"], record.get("time_limit_s")
        stopped = (
            f"stopped by the time limit ({limit / 60:.0f} min)"
            if limit and record["train_seconds"] >= 0.95 * limit
            else "stopped by early stopping (no better validation ROUGE-L in the budget's patience)"
        )
        criterion = max(row["criterion"] for row in record["decoding_selection"])
        described.append(
            f"seed {record['seed']}: {training['global_steps']:,} steps, {training['epochs']:.2f} epochs, "
            f"{stopped}; decoding chosen on validation (worst source's gain over the echo, network alone "
            f"{record['decoding_selection'][0]['criterion']:+.4f}, chosen {criterion:+.4f}): "
            f"{json.dumps(record['decoding'])}"
        )
    first = records[0]
    return (
        f"{len(records)} seed(s), `hf_querygen/experiments/ding2018/studies/gpu_rows.py` "
        "(the runner's training and scoring, "
        f"budget `{first['budget']}`: {BUDGET_TEXT.get(first['budget'], 'its settings')}, system "
        f"`ding2018/{first['system']}`) on {first['device']}, runs in parallel processes on the one "
        "device: " + " | ".join(described)
    )


def log_entries(log_path: Path) -> list[dict]:
    """The runner's ``train.log`` JSON lines (each tagged with its run's name); other lines (the
    Trainer's own messages in a full run's log) are skipped."""
    return [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith('{"run"')]


def record_curves(records: list[dict], log_path: Path, label: str) -> dict[str, dict]:
    """Each record's curves from the runner's ``train.log``."""
    entries = log_entries(log_path)
    curves = {}
    for record in records:
        name = f"{record['system']}-seed{record['seed']}"
        history = [e for e in entries if e.get("run") == name]
        if any("eval_ROUGE-L" in e for e in history):
            curves[label.format(**record)] = curve_of(history)
    return curves


def from_run(run_dir: Path, committed: dict) -> dict:
    """The document of a full run (``--from-run``) with the committed extra rows kept."""
    import shutil

    document = json.loads((run_dir / "results.json").read_text())
    config, old = document["config"], committed["config"]
    table_rows = list(document["systems"])
    extra = [row for row in committed["systems"] if row not in document["systems"]]
    for row in extra:
        document["systems"][row] = committed["systems"][row]
    records = [json.loads(path.read_text()) for path in sorted((run_dir / "runs").glob("*.json"))]
    seeds = {row: sorted({r["seed"] for r in records if r["system"] == row}) for row in table_rows}
    trained_rows = {r["system"] for r in records if r.get("training")}
    config["row_provenance"] = {
        **{
            row: f"the full run (`reproduce ding2018`, seed(s) {', '.join(map(str, seeds[row]))}"
            + (": the row's `train --system` recipe)" if row in trained_rows else ")")
            for row in table_rows
        },
        **{row: text for row, text in old.get("row_provenance", {}).items() if row in extra},
    }
    config["long_runs"] = {row: value for row, value in old.get("long_runs", {}).items() if row in extra}
    if "question_frame_curves" in old:  # session 24's train --system runs of the same recipe (NOTES.md)
        config["question_frame_curves"] = old["question_frame_curves"]
    # the full run's networks (their curves from its train.log), then the extra rows' saved curves
    trained = [r for r in records if r.get("training") and r["system"] != "question_frames"]
    curves = record_curves(trained, run_dir / "train.log", label="{system} (full run, seed {seed})")
    superseded = tuple(f"{row} (seed" for row in table_rows)
    curves.update({name: c for name, c in old.get("curves", {}).items() if not name.startswith(superseded)})
    config["curves"] = curves
    for figure in ("fig5.png", "fig6.png"):
        if (run_dir / figure).is_file():
            shutil.copyfile(run_dir / figure, HERE / figure)
    return document


#: a named seq2seq row's runs (seeds), each (evaluation, training metadata, log history, model dir)
Runs = dict[str, list[tuple[dict, dict, list, str]]]


def update(*arguments: str) -> None:
    """Merge the named rows (and ``--from-run OUT``) into ``results.json`` and re-render it; arguments as
    in :func:`main`."""
    document = json.loads((HERE / "results.json").read_text())
    if arguments[:1] == ("--from-run",):
        document = from_run(Path(arguments[1]), document)
        arguments = arguments[2:]
        from_full_run = True
    else:
        from_full_run = False
    config = document["config"]
    runs, record_rows, record_logs = _read_arguments(arguments, document)
    first = next(iter(runs.values()))[0][0] if runs else None
    if first is not None:
        for key in ("echo", "frame"):
            document["systems"][key] = cells([first["rows"][key]])
    provenances = dict(config.get("row_provenance", {}))  # rows not named here keep theirs
    if first is not None:
        provenances.update(
            {
                "sdm": "last full run (deterministic; unchanged by this update)",
                "tbm": "last full run (deterministic; unchanged by this update)",
                **{key: OLD_NETWORK for key in ("ednet", "attnet", "copynet")},
                "echo": "computed on the full test sets by finalize_long_run.py (no model)",
                "frame": f"computed on the full test sets by finalize_long_run.py: frame '{first['frame']}' "
                "(the most frequent one-slot frame of the 51,657 synthetic pairs)",
            }
        )
    new_curves = {}
    for row, records in record_rows.items():
        document["systems"][row] = cells([record["scores"] for record in records])
        provenances[row] = record_provenance(records)
        new_curves.update(record_curves(records, record_logs[row], label=row + " (seed {seed})"))
    long_runs = dict(config.get("long_runs", {}))
    for row, seeds in runs.items():
        model_row = seeds[0][1]["system"].split("/")[1]
        document["systems"][row] = cells([evaluation["rows"][model_row] for evaluation, *_ in seeds])
        provenances[row] = _seeds_provenance(seeds)
        long_runs[row] = [_long_run(evaluation, metadata) for evaluation, metadata, _, _ in seeds]
    dropped = [paths for row, paths in (a.split("=", 1) for a in arguments) if row == "drop"]
    config["row_provenance"] = {row: text for row, text in provenances.items() if row not in dropped}
    config["long_runs"] = {row: value for row, value in long_runs.items() if row not in dropped}
    config.pop("long_run", None)
    _update_curves(config, runs, new_curves, dropped, from_full_run, first)
    write_results(document, HERE, render_markdown(document))


def _read_arguments(
    arguments: tuple[str, ...], document: dict
) -> tuple[Runs, dict[str, list[dict]], dict[str, Path]]:
    """The ``ROW=...`` arguments: ``drop=ROW`` removes a row from ``document`` now; ``ROW=@GLOB`` names
    the runner records of a row (returned with the train.log beside them); ``ROW=EVAL_JSON:MODEL_DIR``
    one seed of a long run (its evaluation, training metadata and log history read here)."""
    runs: Runs = {}
    record_rows: dict[str, list[dict]] = {}
    record_logs: dict[str, Path] = {}
    for argument in arguments:
        row, paths = argument.split("=", 1)
        if row == "drop":
            document["systems"].pop(paths, None)
            continue
        if paths.startswith("@"):
            files = sorted(glob.glob(paths[1:]))
            if not files:
                raise SystemExit(f"{argument}: no record matches {paths[1:]}")
            record_rows[row] = [json.loads(Path(f).read_text()) for f in files]
            record_logs[row] = Path(files[0]).parent.parent / "train.log"
            continue
        evaluation_json, model_dir = paths.split(":", 1)
        evaluation = json.loads(Path(evaluation_json).read_text())
        metadata = json.loads(Path(model_dir, "hf_querygen_training.json").read_text())
        log_history = json.loads(Path(model_dir, "log_history.json").read_text())
        runs.setdefault(row, []).append((evaluation, metadata, log_history, model_dir))
    return runs, record_rows, record_logs


def _seeds_provenance(seeds: list[tuple[dict, dict, list, str]]) -> str:
    """A long-run row's provenance line: each seed's, with its share of keyword-fallback outputs."""
    described = []
    for evaluation, metadata, _, model_dir in seeds:
        text = provenance(metadata, evaluation, model_dir)
        shares = evaluation.get("keyword_fallback_share")
        if shares:
            text += "; outputs that are the keyword-fallback frame: " + ", ".join(
                f"{split} {share:.0%}" for split, share in shares.items()
            )
        described.append(text)
    return described[0] if len(seeds) == 1 else f"{len(seeds)} seeds (mean ± std): " + " | ".join(described)


def _long_run(evaluation: dict, metadata: dict) -> dict[str, Any]:
    """What ``config["long_runs"]`` keeps of one seed: its metadata (the synthetic set by fingerprint),
    decoding choice, validation scores, tests and queries."""
    return {
        "metadata": {k: metadata[k] for k in metadata if k not in ("synthetic_set",)},
        "synthetic_set": (metadata.get("synthetic_set") or {}).get("fingerprint"),
        "decoding_selection": evaluation["decoding_selection"],
        "validation": {
            name: {split: scores for split, scores in by_split.items() if "validation" in split}
            for name, by_split in evaluation["rows"].items()
        },
        "paired_tests": evaluation.get("paired_tests"),
        "keyword_fallback_share": evaluation.get("keyword_fallback_share"),
        "queries": evaluation["queries"],
    }


def _histories(runs: Runs, family_is_frames: bool) -> dict[str, list]:
    """The log histories of the question-frame runs (or of the others), one per row and seed."""
    return {
        row if len(seeds) == 1 else f"{row} (seed {metadata['seed']})": history
        for row, seeds in runs.items()
        for _, metadata, history, _ in seeds
        if (metadata.get("family") == "frames") == family_is_frames
    }


def _update_curves(
    config: dict, runs: Runs, new_curves: dict, dropped: list[str], from_full_run: bool, first: dict | None
) -> None:
    """Replot curves.png (and the question-frame curves) with the named runs' validation curves and keep
    them in ``config``."""
    new_curves.update({name: curve_of(history) for name, history in _histories(runs, False).items()})
    if new_curves:  # the seq2seq runs' curves (curves.png): the named runs join the saved ones
        saved = config.get("curves", {})
        curves = {name: curve for name, curve in saved.items() if name.split(" (")[0] not in dropped}
        curves.update(new_curves)
        plot_curves(curves, HERE / "curves.png")
        # results.json keeps the validation curves; the training loss is in each run's log_history.json
        config["curves"] = {
            name: {k: v for k, v in curve.items() if k != "train_loss"} for name, curve in curves.items()
        }
    elif from_full_run:  # the run's curves, plotted once (named runs above replot them with theirs)
        plot_curves(config["curves"], HERE / "curves.png")
    if _histories(runs, True):
        floors = first["rows"]["echo"]
        config["question_frame_curves"] = plot_frame_curves(
            _histories(runs, True),
            {source: floors[source]["ROUGE-L"] for source in ("t0_validation", "nl2kw_validation")},
            HERE / "question_frames_curves.png",
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--from-run", metavar="OUT", type=Path, default=None)
    parser.add_argument(
        "rows", nargs="*", metavar="ROW=...", help="ROW=EVALUATION_JSON:MODEL_DIR, ROW=@RUNS_GLOB or drop=ROW"
    )
    args = parser.parse_args(argv)
    update(*(["--from-run", str(args.from_run)] if args.from_run else []), *args.rows)


if __name__ == "__main__":
    main()
