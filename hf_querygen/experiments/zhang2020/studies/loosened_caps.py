"""The convergence study with the caps and output vocabulary loosened (results/zhang2020/NOTES.md).

CtrsGen without copy at one of the study's three sizes, as the study's runs (``train --system
zhang2020/ctrsgen_copy --set copy=false`` at that size: AdamW 2e-3, batch 16, the decoded validation ROUGE
every 200 steps, the checkpoint with the best validation ``rouge_goal`` kept, up to 2,000 steps), but under
the q2id task's default caps (10 relevant + 10 irrelevant documents x 6 sentences x 40 words, 64 target
words) instead of the run's (4 + 3 x 4 x 25, 40), and a 5,000-word output vocabulary instead of 2,000.
Validation only; the curves go into convergence.json with ``convergence_study.py``.

    python -m hf_querygen.experiments.zhang2020.studies.loosened_caps OUT_DIR [--size 64|128|paper] \\
        [--minutes 45] [--resume]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from hf_querygen.experiments.recipes import training_recipe
from hf_querygen.tasks.base import DecodingChoice
from hf_querygen.training import train_model

LOOSENED = {"output_vocab_size": 5000, "caps": {}}  # {}: the task's default caps
#: the study's sizes (embeddings / encoder GRUs / decoder GRU); "paper" = the zhang2020 preset's own
SIZES = {
    "64": {"embedding_size": 64, "hidden_size": 64, "decoder_hidden_size": 64},
    "128": {"embedding_size": 128, "hidden_size": 128, "decoder_hidden_size": 128},
    "paper": {"embedding_size": 300, "hidden_size": 256, "decoder_hidden_size": 256},
}


def train(out: str, size: str = "64", minutes: float = 45, resume: bool = False) -> None:
    torch.set_num_threads(1)
    recipe = training_recipe("zhang2020/ctrsgen_copy", None)
    row = recipe.recipe()
    row = dataclasses.replace(
        row,
        prepare_options={**row.prepare_options, **LOOSENED},
        preset_overrides={**row.preset_overrides, "copy": False, **SIZES[size]},
        training_overrides={**row.training_overrides, "max_steps": 2000},
        decoding_choice=DecodingChoice(()),  # the curves only: no decoding choice after training
        seed=0,
    )
    started = time.time()
    metadata = train_model(row, recipe.data(), out, resume=resume, time_limit=minutes * 60)
    print("seconds", round(time.time() - started), "best step", metadata.get("best_checkpoint_step"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--size", choices=tuple(SIZES), default="64")
    parser.add_argument("--minutes", type=float, default=45, help="training time limit")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    train(args.out, args.size, args.minutes, args.resume)


if __name__ == "__main__":
    main()
