"""The convergence study: CtrsGen (no copy) at three sizes, validation curves against steps.

    python -m hf_querygen.experiments.zhang2020.studies.convergence_study NAME=RUN_DIR [NAME=RUN_DIR ...] \\
        [--out results/zhang2020]

Each RUN_DIR is a folder written by ``hf-querygen train --system zhang2020/ctrsgen_copy --set copy=false
--set embedding_size=E --set hidden_size=H --set decoder_hidden_size=H`` (its ``log_history.json``), or a
Trainer checkpoint of an interrupted run (its ``trainer_state.json``), or of ``loosened_caps.py``.
Adds the named runs to ``convergence.json`` (the curves: training loss, validation loss and the
decoded validation ROUGE at every evaluation; runs not named keep theirs),
``convergence.png`` and prints a markdown table. Validation only: nothing here reads the test split.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hf_querygen.experiments.zhang2020.copy import training_curves
from hf_querygen.experiments.zhang2020.studies import RESULTS_DIR


def log_history(run: Path) -> list[dict]:
    if (run / "log_history.json").is_file():
        return json.loads((run / "log_history.json").read_text())
    return json.loads((run / "trainer_state.json").read_text())["log_history"]


def rouge_goal(row: dict) -> float:
    return (row["eval_rouge1_recall"] + row["eval_rougeL_recall"] + row["eval_rougeL_f"]) / 3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="NAME=RUN_DIR")
    parser.add_argument("--out", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    out = Path(args.out)
    # the runs named here join (or replace) the curves already in convergence.json
    saved = out / "convergence.json"
    study = json.loads(saved.read_text()) if saved.is_file() else {}
    for item in args.runs:
        name, run = item.split("=", 1)
        curves = training_curves(log_history(Path(run)))
        for row in curves["validation"]:
            row["rouge_goal"] = rouge_goal(row)
        study[name] = curves
    (out / "convergence.json").write_text(json.dumps(study, indent=1) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, curves in study.items():
        steps = [row["step"] for row in curves["validation"]]
        left.plot(steps, [row["eval_loss"] for row in curves["validation"]], "o-", label=name)
        right.plot(steps, [100 * row["rouge_goal"] for row in curves["validation"]], "o-", label=name)
    left.set(xlabel="step (16 queries)", ylabel="validation loss (NLL per word)")
    right.set(xlabel="step (16 queries)", ylabel="validation rouge_goal (%)")
    left.legend(), right.legend()
    figure.suptitle(
        "CtrsGen on q2id: validation loss and decoded ROUGE (greedy, no-repeat 2) by size and caps"
    )
    figure.tight_layout()
    figure.savefig(out / "convergence.png", dpi=110)

    print(
        "| size | step | "
        + " | ".join(("val loss", "R-1 rec", "R-L rec", "R-L F1", "rouge_goal", "words"))
        + " |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, curves in study.items():
        best = max(row["rouge_goal"] for row in curves["validation"])
        for row in curves["validation"]:
            mark = "**" if row["rouge_goal"] == best else ""
            print(
                f"| {name} | {row['step']} | {row['eval_loss']:.2f} | "
                f"{100 * row['eval_rouge1_recall']:.2f} | "
                f"{100 * row['eval_rougeL_recall']:.2f} | {100 * row['eval_rougeL_f']:.2f} | "
                f"{mark}{100 * row['rouge_goal']:.2f}{mark} | {row['eval_output_words']:.1f} |"
            )


if __name__ == "__main__":
    main()
