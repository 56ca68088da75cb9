"""Training-step time of the q2id BERT2BERT (all-MiniLM-L6-v2 on both sides, the ``bert2bert`` preset) with
its encoder fine-tuned, frozen, and frozen with its states cached (hf_querygen.training.frozen_encoder), and
of the BERT2BERT with a pointer (``bert2bert-pointer``, hf_querygen.models.bert2bert_pointer) frozen and
cached; CPU, JSON.

One step = forward, backward and an AdamW update of a batch of 8 queries (the ``zhang2020/warm_start*``
recipes' batch): with the contrast 16 sources (relevant and irrelevant halves) of ``--source-pieces`` word
pieces decoding a ``--target-pieces`` description, without it 8. "frozen" still runs the encoder's forward
pass every step; "cached" reads the states (the second epoch onward: the first encodes each source once, at
the cost of one forward pass). Same batches and weights for every variant, interleaved, medians.

    python benchmarks/bench_frozen_encoder.py [--steps 6] [--threads 2] [--output ...json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from hf_querygen.models.bert2bert_pointer import Bert2BertPointerConfig, Bert2BertPointerModel
from hf_querygen.pretrained import MINILM_ID, resolve_backbone
from hf_querygen.tasks.q2id.pieces import ContrastiveCollator
from hf_querygen.training.frozen_encoder import EncoderStatesCollator, freeze_encoder


def model(pointer: bool = False):
    from transformers import EncoderDecoderModel

    folder = str(resolve_backbone(MINILM_ID).path)
    torch.manual_seed(0)
    network = EncoderDecoderModel.from_encoder_decoder_pretrained(folder, folder)
    if pointer:  # the same halves under the pointer's class (what the warm start builds)
        halves = Bert2BertPointerConfig.from_encoder_decoder_configs(
            network.encoder.config, network.decoder.config
        )
        network = Bert2BertPointerModel(config=halves, encoder=network.encoder, decoder=network.decoder)
    network.config.decoder_start_token_id = 101
    network.config.pad_token_id = 0
    network.config.eos_token_id = 102
    return network


def batches(count: int, queries: int, contrast: bool, source: int, target: int) -> list[list[dict]]:
    generator = torch.Generator().manual_seed(0)

    def ids(length: int) -> list[int]:
        return [101, *torch.randint(1000, 20000, (length - 2,), generator=generator).tolist(), 102]

    rows = []
    for _ in range(count):
        batch = []
        for _ in range(queries):
            row = {"input_ids": ids(source), "labels": ids(target)[1:]}
            if contrast:
                row["irrelevant_input_ids"] = ids(source)
            batch.append(row)
        rows.append(batch)
    return rows


def step_seconds(network, collator, batches: list[list[dict]], optimizer) -> list[float]:
    network.train()
    seconds = []
    for features in batches:
        start = time.perf_counter()
        batch = collator(features)
        labels = batch.pop("labels")
        logits = network(**batch).logits
        rows = labels.shape[0]
        loss = torch.nn.functional.cross_entropy(
            logits[:rows].flatten(0, 1), labels.flatten(), ignore_index=-100
        )
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--source-pieces", type=int, default=400)
    parser.add_argument("--target-pieces", type=int, default=48)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {}
    for contrast in (True, False):
        data = batches(args.steps, 8, contrast, args.source_pieces, args.target_pieces)
        plain = ContrastiveCollator(0, 101)
        timings = {}
        for variant in ("fine_tuned", "frozen", "cached", "cached_pointer"):
            network = model(pointer=variant == "cached_pointer")
            if variant != "fine_tuned":
                encoder = freeze_encoder(network)
            cached = variant.startswith("cached")
            collator = EncoderStatesCollator(plain, encoder) if cached else plain
            if cached:
                collator(sum(data, []))  # the first epoch's single pass over every source
            parameters = [p for p in network.parameters() if p.requires_grad]
            optimizer = torch.optim.AdamW(parameters, lr=1e-4)
            step_seconds(network, collator, data[:1], optimizer)  # warm-up
            timings[variant] = statistics.median(step_seconds(network, collator, data, optimizer))
        key = "with_contrast" if contrast else "without_contrast"
        results[key] = {
            "step_seconds": {name: round(value, 3) for name, value in timings.items()},
            "speed_up_over_fine_tuned": {
                name: round(timings["fine_tuned"] / value, 2) for name, value in timings.items()
            },
        }
    document = {
        "benchmark": "bench_frozen_encoder",
        "backbone": MINILM_ID,
        "queries_per_step": 8,
        "source_pieces": args.source_pieces,
        "target_pieces": args.target_pieces,
        "steps": args.steps,
        "threads": args.threads,
        "cpu": platform.processor() or platform.machine(),
        "load_average": list(os.getloadavg()),
        "results": results,
    }
    text = json.dumps(document, indent=1)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
