"""Training-step time of ``zhang2020/warm_start`` on real q2id batches: the BERT2BERT with a pointer
(``bert2bert-pointer``) warm-started from all-MiniLM-L6-v2, its encoder frozen and its states cached, with
the contrast (16 sources a step: 8 relevant, 8 irrelevant); CPU, JSON.

The batches are the train split's first ``--steps`` batches of 8 queries in the order of transformers'
``LengthGroupedSampler`` (seed 0: the longest sources first, the worst case), as the task encodes them.
Variants, interleaved on the same batches and weights, medians:

* ``stock``: torch's dropout (``bernoulli_``; on AMD CPUs drawn one element at a time) and the ``sdpa``
  attention, which leaves its fused kernel for the math path when it drops out;
* ``mask_dropout``: the same inside ``hf_querygen.nn.dropout.mask_dropout_training`` (what
  ``train_seq2seq`` trains under): the masks from 16-bit draws, the attention of that module;
* ``stock_sliced_loss``: ``stock`` with the contrast's loss as it was before it read the pointer's
  log-probabilities as they are (a log-softmax again, then each half sliced out of the (2B, T, V) rows).

    python benchmarks/bench_warm_start_step.py [--steps 6] [--threads 2] [--output ...json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from bench_frozen_encoder import model as warm_started

from hf_querygen.corpora import load_corpus
from hf_querygen.experiments.zhang2020.systems import CAPS, WARM_START_CONTRAST
from hf_querygen.nn.dropout import mask_dropout_training
from hf_querygen.pretrained import MINILM_ID
from hf_querygen.tasks.q2id.encoding import Q2IDCaps
from hf_querygen.tasks.q2id.pieces import ContrastiveCollator, ContrastiveLoss
from hf_querygen.tasks.q2id.task import Q2IDTask
from hf_querygen.training.frozen_encoder import EncoderStatesCollator, freeze_encoder

VARIANTS = ("stock", "mask_dropout", "stock_sliced_loss")


def sliced_loss(logits: torch.Tensor, labels: torch.Tensor, weight: float, margin: float) -> torch.Tensor:
    """The contrast's loss before: a log-softmax over the (2B, T, V) rows, each half sliced and gathered."""
    batch, mask = labels.shape[0], labels != -100
    log_probs = logits.float().log_softmax(-1)
    safe = labels.masked_fill(~mask, 0).unsqueeze(-1)
    relevant = log_probs[:batch].gather(-1, safe).squeeze(-1) * mask
    irrelevant = log_probs[batch:].gather(-1, safe).squeeze(-1) * mask
    count = mask.sum().clamp(min=1)
    lengths = mask.sum(-1).clamp(min=1)
    gap = (relevant.sum(-1) - irrelevant.sum(-1)) / lengths
    return -relevant.sum() / count + weight * (lengths * (margin - gap).clamp(min=0)).sum() / count


def real_batches(steps: int) -> list[list[dict]]:
    from transformers.trainer_pt_utils import LengthGroupedSampler

    task = Q2IDTask(Q2IDCaps(**CAPS))
    data = task.prepare(load_corpus("q2id"), backbone=MINILM_ID, **WARM_START_CONTRAST)
    train = task.encode(data, "bert2bert")["train"]
    generator = torch.Generator().manual_seed(0)
    sampler = LengthGroupedSampler(8, lengths=[len(ids) for ids in train["input_ids"]], generator=generator)
    order = list(sampler)
    columns = ContrastiveCollator.columns
    return [[{c: train[i][c] for c in columns} for i in order[s * 8 : (s + 1) * 8]] for s in range(steps)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    features = real_batches(args.steps + 1)
    network = warm_started(pointer=True)
    collator = EncoderStatesCollator(ContrastiveCollator(0, 101), freeze_encoder(network))
    collator.encode_all(sum(features, []))
    batches = [collator(rows) for rows in features]
    weight, margin = WARM_START_CONTRAST["contrast_weight"], WARM_START_CONTRAST["contrast_margin"]
    loss = ContrastiveLoss(weight, margin, log_probs=True)
    optimizer = torch.optim.AdamW([p for p in network.parameters() if p.requires_grad], lr=1e-4)
    network.train()

    def step(batch: dict, variant: str) -> float:
        batch = dict(batch)
        labels = batch.pop("labels")
        context = mask_dropout_training(network) if variant == "mask_dropout" else contextlib.nullcontext()
        start = time.perf_counter()
        with context:
            outputs = network(**batch)
            if variant == "stock_sliced_loss":
                value = sliced_loss(outputs.logits, labels, weight, margin)
            else:
                value = loss(outputs, labels)
            value.backward()
            optimizer.step()
            optimizer.zero_grad()
        return time.perf_counter() - start

    for variant in VARIANTS:  # warm-up
        step(batches[0], variant)
    seconds: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for batch in batches[1:]:
        for variant in VARIANTS:
            seconds[variant].append(step(batch, variant))
    medians = {variant: statistics.median(values) for variant, values in seconds.items()}
    document = {
        "benchmark": "bench_warm_start_step",
        "backbone": MINILM_ID,
        "queries_per_step": 8,
        "batch_shapes": [
            {"sources": list(b["input_ids"].shape), "targets": list(b["labels"].shape)} for b in batches[1:]
        ],
        "steps": args.steps,
        "threads": args.threads,
        "cpu": platform.processor() or platform.machine(),
        "load_average": list(os.getloadavg()),
        "step_seconds": {variant: round(value, 3) for variant, value in medians.items()},
        "all_step_seconds": {variant: [round(v, 3) for v in values] for variant, values in seconds.items()},
        "speed_up_over_stock": {
            variant: round(medians["stock"] / value, 3) for variant, value in medians.items()
        },
    }
    text = json.dumps(document, indent=1)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
