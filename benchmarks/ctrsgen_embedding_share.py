"""How much of a CtrsGen training step its input embedding's gradient and AdamW update cost: the step time
with the embedding table trained against the same model with the table frozen (``requires_grad=False``).
The difference bounds what a sparse or frequency-sized embedding update could save (the study of a
frequency-sized table, quality and speed: ``results/zhang2020/vocabulary_study.md``).

Real q2id training batches of 16 queries under the zhang2020 run's caps (``bench_training.ctrsgen_batches``),
the library's optimizer (``bench_training.library_optimizer``: fused AdamW), 1 thread, both CtrsGen settings
of ``bench_training.py``; 3 rounds of (trained, frozen), each a fresh model, 2 timed passes over the batches::

    python benchmarks/ctrsgen_embedding_share.py [--steps 15] [--out benchmarks/ctrsgen_embedding_share.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_training import CTRSGEN_SETTINGS, ctrsgen_batches, ctrsgen_config, library_optimizer  # noqa: E402


def step_ms(config, preset: str, batches: list, vocab_size: int, frozen: bool) -> tuple[float, list]:
    import torch
    from transformers import AutoModelForSeq2SeqLM

    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(config).train()
    tables = [(n, p) for n, p in model.named_parameters() if p.dim() == 2 and p.shape[0] == vocab_size]
    for _, parameter in tables if frozen else ():
        parameter.requires_grad_(False)
    optimizer = library_optimizer(model, preset, 2e-3)
    trained = [p for p in model.parameters() if p.requires_grad]

    def run() -> None:
        for batch in batches:
            optimizer.zero_grad(set_to_none=True)
            model(**batch).loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 5.0)
            optimizer.step()

    run()  # warm-up
    start = time.perf_counter()
    run()
    run()
    return (time.perf_counter() - start) / (2 * len(batches)) * 1000, [(n, list(p.shape)) for n, p in tables]


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batches.pkl"
        ctrsgen_batches(path, args.steps)
        data = pickle.loads(path.read_bytes())
    result: dict = {"threads": 1, "steps": args.steps, "loadavg_before": os.getloadavg()}
    for setting in CTRSGEN_SETTINGS:
        preset, copy, config = ctrsgen_config(setting, data)
        batches = data["batches"][copy][: args.steps]
        row: dict = {"trained_ms_per_step": [], "frozen_ms_per_step": []}
        for _ in range(args.rounds):
            for frozen in (False, True):
                ms, tables = step_ms(config, preset, batches, data["vocab_size"], frozen)
                row["frozen_ms_per_step" if frozen else "trained_ms_per_step"].append(ms)
        row["embedding_tables"] = tables
        row["share_of_step"] = [
            (a - b) / a for a, b in zip(row["trained_ms_per_step"], row["frozen_ms_per_step"], strict=True)
        ]
        result[setting] = row
        print(setting, json.dumps(row), flush=True)
    result["loadavg_after"] = os.getloadavg()
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("\n| setting | embedding | trained ms/step | frozen ms/step | share of a step |")
    print("|---|---|---|---|---|")
    for setting in CTRSGEN_SETTINGS:
        row = result[setting]
        print(
            f"| {setting} | {row['embedding_tables'][0][1]} | "
            f"{' / '.join(f'{v:.0f}' for v in row['trained_ms_per_step'])} | "
            f"{' / '.join(f'{v:.0f}' for v in row['frozen_ms_per_step'])} | "
            f"{' / '.join(f'{100 * v:.0f}%' for v in row['share_of_step'])} |"
        )


if __name__ == "__main__":
    main()
