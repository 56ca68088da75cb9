"""Training-step time of CopyNet, the dual decoder and the query pointer-generator against the plain
reference computation of the same loss ("before"); CPU, JSON.

One step = forward with labels, backward, Adam update, at the reproduction sizes (batch 64); "library" uses
the optimizer the stock Trainer builds for the model's preset (the fused AdamW kernel), "before" the plain
``adamw_torch`` (on CPU a Python loop over the parameters):

* CopyNet (Ding'18: embeddings 100, BiGRU 200, GRU decoder 400, Bahdanau attention, selective read;
  vocabulary 14,062 / output vocabulary 4,000 as in ``results/ding2018``), sources of 3-8 words and
  targets of 8-14 tokens, 15% of the target tokens copies. "before" is the step-by-step teacher-forcing
  loop (:func:`lean_decoders.stepwise_rnn_scores`: attention, selective read, RNN, output layer, joint
  softmax and scatter inside the loop) + the same loss; "library" is ``model(**batch, labels=labels)``
  (the output layer after the loop, log p read at the labels only).
* dual decoder (Liu'18: embeddings 60, BiLSTM 128; nl2kw vocabulary sizes 4,847 / 3,713): "before" is the
  library's forward + the loss as two cross-entropies over the extended rows (the plain form),
  "library" the one-gather loss.
* query pointer-generator (Zhang'20 Table 4 PG at the run's 64 units: q2id batches of 16 queries, 4 relevant
  documents x 4 sentences x 25 words read as one 400-word sequence, 40 target tokens, 37,286 token ids /
  2,000 output words): "before" is the packed BiGRU source encoder (O(S^2) backward on CPU) + the NLL of
  the full distribution over every token id; "library" the unpacked encoder for long
  sequences + the mixture read at the labels only. "before" runs without dropout (it needs eval mode for
  the full distribution), so its figure is slightly favourable to it.

Both paths run on the same batches, interleaved, medians; the losses of the two paths are compared with
dropout off. Absolute times move with the machine's load (recorded); the ratios are the figures.

* CtrsGen (Zhang'20, with ``--ctrsgen-before PATH``): the zhang2020 run's CtrsGen (64-unit embeddings and
  GRUs, the run's contrast setting) and its default model ctrsgen_copy (128 units, copy=True), on real q2id
  training batches of 16 queries under the run's caps (``zhang2020.systems.CAPS``) and 2,000 output words.
  One step = zero_grad, forward with labels, backward, gradient clipping at 5.0 and the optimizer the stock
  Trainer builds for that checkout's training preset (its ``optim``). "before"
  is the library at PATH (another checkout, e.g. ``git worktree add --detach /tmp/before
  <commit>``), "library" this checkout: each runs in its own process on the same pickled batches with the
  same initial weights, the two processes alternating; the losses of the first batches (no dropout in these
  presets) are compared across them, under the initial weights and after both sides' training steps.

    python benchmarks/bench_training.py [--steps 20] [--ctrsgen-before PATH] [--output ...json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def copynet_batch(config, batch_size: int, generator):
    import torch

    from hf_querygen.nn.labels import IGNORE_INDEX

    lengths = torch.randint(3, 9, (batch_size,), generator=generator)
    source_length = int(lengths.max())
    input_ids = torch.randint(4, config.vocab_size, (batch_size, source_length), generator=generator)
    mask = torch.arange(source_length)[None] < lengths[:, None]
    input_ids[torch.arange(batch_size), lengths - 1] = config.eos_token_id
    input_ids = input_ids.masked_fill(~mask, config.pad_token_id)
    target_lengths = torch.randint(8, 15, (batch_size,), generator=generator)
    labels = torch.randint(
        4, config.output_vocab_size, (batch_size, int(target_lengths.max())), generator=generator
    )
    copies = torch.rand(labels.shape, generator=generator) < 0.15
    # a copy label: the source word's vocabulary id if it is in the output vocabulary, else its position
    position = torch.randint(0, 1_000_000, labels.shape, generator=generator) % (lengths[:, None] - 1)
    word = input_ids.gather(1, position)
    first = (input_ids.unsqueeze(2) == input_ids.unsqueeze(1)).long().argmax(dim=2).gather(1, position)
    copy_label = torch.where(word < config.output_vocab_size, word, config.output_vocab_size + first)
    labels = torch.where(copies, copy_label, labels)
    labels[torch.arange(batch_size), target_lengths - 1] = config.eos_token_id
    labels = labels.masked_fill(torch.arange(labels.shape[1])[None] >= target_lengths[:, None], IGNORE_INDEX)
    return {"input_ids": input_ids, "attention_mask": mask.long()}, labels


def dual_batch(config, batch_size: int, generator):
    import torch

    from hf_querygen.nn.labels import IGNORE_INDEX

    lengths = torch.randint(5, 16, (batch_size,), generator=generator)
    source_length = int(lengths.max())
    input_ids = torch.randint(4, config.vocab_size, (batch_size, source_length), generator=generator)
    mask = torch.arange(source_length)[None] < lengths[:, None]
    input_ids[torch.arange(batch_size), lengths - 1] = config.eos_token_id
    input_ids = input_ids.masked_fill(~mask, config.pad_token_id)
    first = (input_ids.unsqueeze(2) == input_ids.unsqueeze(1)).long().argmax(dim=2)
    vocab = config.output_vocab_size
    rows = []
    for b in range(batch_size):
        n_points = int(torch.randint(1, 4, (1,), generator=generator))
        points = torch.randint(0, int(lengths[b]) - 1, (n_points,), generator=generator)
        extracted = [vocab + int(first[b, p]) for p in points]
        generated = torch.randint(
            4, vocab, (int(torch.randint(0, 3, (1,), generator=generator)),), generator=generator
        )
        rows.append(extracted + [vocab + int(lengths[b]) - 1] + generated.tolist() + [config.eos_token_id])
    width = max(map(len, rows))
    labels = torch.tensor([r + [IGNORE_INDEX] * (width - len(r)) for r in rows])
    return {"input_ids": input_ids, "attention_mask": mask.long()}, labels


def pg_batch(config, batch_size: int, generator):
    import torch

    documents, sentences, words, target = 4, 4, 25, 40
    relevant = torch.randint(
        5, config.vocab_size, (batch_size, documents, sentences, words), generator=generator
    )
    lengths = torch.randint(8, words + 1, (batch_size, documents, sentences), generator=generator)
    mask = (torch.arange(words).view(1, 1, 1, -1) < lengths.unsqueeze(-1)).long()
    labels = torch.randint(5, config.output_vocab_size, (batch_size, target), generator=generator)
    labels[:, ::7] = relevant[:, 0, 0, : len(range(0, target, 7))]  # some copies from the documents
    batch = {
        "input_ids": torch.randint(5, config.vocab_size, (batch_size, 6), generator=generator),
        "attention_mask": torch.ones(batch_size, 6, dtype=torch.long),
        "relevant_input_ids": relevant * mask,
        "relevant_attention_mask": mask,
    }
    return batch, labels


def pg_before(model, batch, labels):
    """The packed encoder and the full distribution (eval mode): the plain reference PG step."""
    import hf_querygen.nn.encoder as encoder_module

    threshold, training = encoder_module.UNPACKED_FROM_LENGTH, model.training
    encoder_module.UNPACKED_FROM_LENGTH = 10**9
    model.train(False)
    try:
        return model(**batch, labels=labels).loss
    finally:
        encoder_module.UNPACKED_FROM_LENGTH = threshold
        model.train(training)


def old_dual_loss(model, batch, labels):
    """The dual decoder's loss as it was: two cross-entropies over the (B, T, V + S) rows."""
    from hf_querygen.nn.labels import IGNORE_INDEX
    from hf_querygen.nn.loss import token_nll

    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    encoded = model.encoder(batch["input_ids"], batch["attention_mask"])
    log_probs, phase = model._decode_parallel(decoder_input_ids, encoded, batch["attention_mask"].bool())
    count = (labels != IGNORE_INDEX).sum().clamp_min(1)
    lam = model.config.loss_lambda
    return lam * token_nll(log_probs, labels.masked_fill(phase, IGNORE_INDEX), count) + (1 - lam) * token_nll(
        log_probs, labels.masked_fill(~phase, IGNORE_INDEX), count
    )


def step_timer(model, loss_fn, batches, optimizer):
    def run():
        for batch, labels in batches:
            optimizer.zero_grad()
            loss_fn(model, batch, labels).backward()
            optimizer.step()

    return run


def measure(model, before, after, batches, steps_per_repetition: int, repetitions: int, preset: str) -> dict:
    """``before``: the plain reference computation with ``adamw_torch`` (on CPU a Python loop over the
    parameters); ``library``: this checkout's loss with the optimizer the stock Trainer builds for
    ``preset``."""
    import torch

    optimizers = {
        "before": torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0),
        "library": library_optimizer(model, preset, learning_rate=1e-4),
    }
    model.eval()  # the loss comparison runs without dropout
    with torch.no_grad():
        gaps = [abs(float(before(model, b, y)) - float(after(model, b, y))) for b, y in batches[:4]]
    model.train()
    runs = {
        "before": step_timer(model, before, batches[:steps_per_repetition], optimizers["before"]),
        "library": step_timer(model, after, batches[:steps_per_repetition], optimizers["library"]),
    }
    runs["before"](), runs["library"]()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repetitions):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - started) / steps_per_repetition)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "before_ms_per_step": round(1000 * medians["before"], 2),
        "library_ms_per_step": round(1000 * medians["library"], 2),
        "speedup": round(medians["before"] / medians["library"], 3),
        "max_loss_difference_without_dropout": max(gaps),
        "optimizers": {name: optimizer_name(optimizer) for name, optimizer in optimizers.items()},
    }


def optimizer_name(optimizer) -> str:
    return type(optimizer).__name__ + (" (fused)" if optimizer.defaults.get("fused") else "")


#: the zhang2020 run's CtrsGen sizes (hf_querygen/experiments/zhang2020.py: 64 units for every trained row;
#: ctrsgen_copy keeps its own, zhang2020.systems.COPY_SIZES)
CTRSGEN_SETTINGS = {
    "ctrsgen_zhang2020": ("zhang2020", {"embedding_size": 64, "hidden_size": 64, "decoder_hidden_size": 64}),
    "ctrsgen_copy_zhang2020": ("zhang2020-ctrsgen-copy", None),
}


def ctrsgen_batches(path: Path, steps: int) -> None:
    """Real q2id training batches of 16 queries under the zhang2020 run's caps and output vocabulary,
    pickled to ``path`` for the worker processes (labels past the output vocabulary kept for the copy model,
    as the q2id task encodes them for the copy family)."""
    import pickle

    import hf_querygen
    from hf_querygen.experiments.zhang2020.systems import CAPS, OUTPUT_VOCAB_SIZE
    from hf_querygen.tasks.q2id import Q2IDCaps, Q2IDCollator, encode_q2id_dataset, train_q2id_tokenizer

    train = hf_querygen.load_corpus("q2id")["train"]
    tokenizer = train_q2id_tokenizer(train, output_vocab_size=OUTPUT_VOCAB_SIZE)
    examples = train.select(range(16 * steps))
    collate = Q2IDCollator(tokenizer.pad_token_id)
    batches = {}
    for copy in (False, True):
        encoded = encode_q2id_dataset(
            examples, tokenizer, Q2IDCaps(**CAPS), output_vocab_size=len(tokenizer) if copy else None
        )
        batches[copy] = [
            dict(collate([encoded[i] for i in range(16 * s, 16 * s + 16)])) for s in range(steps)
        ]
    data = {"vocab_size": len(tokenizer), "output_vocab_size": OUTPUT_VOCAB_SIZE, "batches": batches}
    path.write_bytes(pickle.dumps(data))


def ctrsgen_config(setting: str, data: dict):
    """``(preset, copy, config)`` of a CtrsGen setting (``CTRSGEN_SETTINGS``) for the batches of
    :func:`ctrsgen_batches` (``data``: their vocabulary sizes)."""
    from hf_querygen.experiments.zhang2020.systems import CONTRAST_SETTING, COPY_SIZES
    from hf_querygen.presets import config_from_preset

    preset, sizes = CTRSGEN_SETTINGS[setting]
    copy = sizes is None
    config = config_from_preset(
        preset,
        vocab_size=data["vocab_size"],
        output_vocab_size=data["output_vocab_size"],
        **CONTRAST_SETTING,
        **(COPY_SIZES if copy else sizes),
    )
    return preset, copy, config


def ctrsgen_worker(setting: str, batches_path: str, steps: int, repetitions: int, threads: int) -> dict:
    """One process: the library on PYTHONPATH, timed on the pickled batches -> per-repetition seconds per step
    and the losses of the first batches under the initial weights."""
    import pickle

    import torch
    from transformers import AutoModelForSeq2SeqLM

    torch.set_num_threads(threads)
    data = pickle.loads(Path(batches_path).read_bytes())
    preset, copy, config = ctrsgen_config(setting, data)
    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(config).train()
    batches = data["batches"][copy][:steps]
    with torch.no_grad():  # training mode (the copy model's label-only loss); these presets have no dropout
        losses = [float(model(**batch).loss) for batch in batches[:4]]
    optimizer = library_optimizer(model, preset, learning_rate=2e-3)

    def run():
        for batch in batches:
            optimizer.zero_grad(set_to_none=True)
            model(**batch).loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()

    run()  # warm-up
    times = []
    for _ in range(repetitions):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) / len(batches))
    with torch.no_grad():  # after (1 + repetitions) x steps updates: the two sides' training must agree
        trained_losses = [float(model(**batch).loss) for batch in batches[:4]]
    return {
        "seconds_per_step": times,
        "losses": losses,
        "trained_losses": trained_losses,
        "optimizer": optimizer_name(optimizer),
    }


def library_optimizer(model, preset: str, learning_rate: float):
    """The optimizer the stock Trainer builds for this checkout's training preset (its ``optim``)."""
    import tempfile

    from transformers import Trainer, TrainingArguments

    from hf_querygen.presets import training_arguments_from_preset

    preset_arguments = training_arguments_from_preset(preset)
    with tempfile.TemporaryDirectory() as folder:
        arguments = TrainingArguments(
            output_dir=folder,
            optim=preset_arguments.get("optim", "adamw_torch"),
            learning_rate=learning_rate,
            weight_decay=preset_arguments.get("weight_decay", 0.0),
            report_to="none",
        )
        optimizer_cls, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(arguments, model)
    return optimizer_cls(model.parameters(), **optimizer_kwargs)


def largest_gap(runs: dict[str, list[dict]], key: str) -> float:
    """The largest difference between the two sides' losses ``key`` of the same batches (first rounds)."""
    pairs = zip(runs["before"][0][key], runs["library"][0][key], strict=True)
    return max(abs(a - b) for a, b in pairs)


def measure_ctrsgen(before_path: str, steps: int, repetitions: int, rounds: int, threads: int) -> dict:
    """Before (the library at ``before_path``) vs this checkout, alternating worker processes."""
    import subprocess
    import tempfile

    here = Path(__file__).resolve()
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        batches_path = Path(folder) / "batches.pkl"
        ctrsgen_batches(batches_path, steps)
        trees = {"before": str(Path(before_path).resolve()), "library": str(here.parent.parent)}
        for setting in CTRSGEN_SETTINGS:
            runs: dict[str, list[dict]] = {name: [] for name in trees}
            for _ in range(rounds):
                for name, tree in trees.items():
                    command = [sys.executable, str(here), "--ctrsgen-worker", setting, str(batches_path)]
                    command += ["--steps", str(steps), "--repetitions", str(repetitions)]
                    command += ["--threads", str(threads)]
                    environment = {**os.environ, "PYTHONPATH": tree}
                    output = subprocess.run(
                        command, env=environment, check=True, capture_output=True, text=True
                    )
                    runs[name].append(json.loads(output.stdout.strip().splitlines()[-1]))
            medians = {
                name: statistics.median(t for run in worker_runs for t in run["seconds_per_step"])
                for name, worker_runs in runs.items()
            }
            results[setting] = {
                "before_ms_per_step": round(1000 * medians["before"], 2),
                "library_ms_per_step": round(1000 * medians["library"], 2),
                "speedup": round(medians["before"] / medians["library"], 3),
                "max_loss_difference_without_dropout": largest_gap(runs, "losses"),
                "max_loss_difference_after_training": largest_gap(runs, "trained_losses"),
                "optimizers": {name: worker_runs[0]["optimizer"] for name, worker_runs in runs.items()},
                "timed_steps_per_side": sum(len(run["seconds_per_step"]) for run in runs["library"]) * steps,
            }
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=5, help="training steps per timed repetition")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--pg-batch-size", type=int, default=16, help="queries per PG step (the run's)")
    parser.add_argument("--output", default=None)
    parser.add_argument(
        "--ctrsgen-before", default=None, help="a checkout of the library before, for the CtrsGen rows"
    )
    parser.add_argument("--ctrsgen-rounds", type=int, default=3, help="worker processes per side and model")
    parser.add_argument("--ctrsgen-worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ctrsgen_worker:
        result = ctrsgen_worker(*args.ctrsgen_worker, args.steps, args.repetitions, args.threads)
        print(json.dumps(result))
        return result

    import torch
    from lean_decoders import stepwise_rnn_scores

    from hf_querygen.models.dual_decoder import (
        LIU2018_DUAL_DECODER,
        DualDecoderConfig,
        DualDecoderForKeywordGeneration,
    )
    from hf_querygen.models.query_pointer_generator import QueryPointerGeneratorForIntentDescription
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqForConditionalGeneration
    from hf_querygen.presets import config_from_preset

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    copynet = RNNSeq2SeqForConditionalGeneration(
        config_from_preset("ding2018-copynet", vocab_size=14062, output_vocab_size=4000)
    )
    copynet_batches = [copynet_batch(copynet.config, args.batch_size, generator) for _ in range(args.steps)]

    def copynet_before(model, batch, labels):
        scores = stepwise_rnn_scores(model, batch["input_ids"], batch["attention_mask"], labels)
        return model.compute_loss_from_scores(scores, labels)

    def library(model, batch, labels):
        return model(**batch, labels=labels).loss

    dual = DualDecoderForKeywordGeneration(
        DualDecoderConfig(**LIU2018_DUAL_DECODER, vocab_size=4847, output_vocab_size=3713)
    )
    dual_batches = [dual_batch(dual.config, args.batch_size, generator) for _ in range(args.steps)]
    pg = QueryPointerGeneratorForIntentDescription(
        config_from_preset(
            "zhang2020-pg", vocab_size=37286, output_vocab_size=2000, embedding_size=64, hidden_size=64
        )
    )
    pg_batches = [pg_batch(pg.config, args.pg_batch_size, generator) for _ in range(args.steps)]
    results = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": args.threads,
            "processor": platform.processor() or platform.machine(),
        },
        "batch_size": args.batch_size,
        "steps_per_repetition": args.steps,
        "repetitions": args.repetitions,
        "copynet_ding2018": measure(
            copynet,
            copynet_before,
            library,
            copynet_batches,
            args.steps,
            args.repetitions,
            "ding2018-copynet",
        ),
        "dual_decoder_liu2018": measure(
            dual, old_dual_loss, library, dual_batches, args.steps, args.repetitions, "liu2018-dual-decoder"
        ),
        "pg_zhang2020": measure(
            pg, pg_before, library, pg_batches, args.steps, args.repetitions, "zhang2020-pg"
        ),
    }
    if args.ctrsgen_before:
        results.update(
            measure_ctrsgen(
                args.ctrsgen_before, args.steps, args.repetitions, args.ctrsgen_rounds, args.threads
            )
        )
    results["load_average_before_after"] = [list(load_before), list(os.getloadavg())]
    print(json.dumps(results, indent=2))
    print("\n| model | before ms/step | library ms/step | speed-up | loss difference (no dropout) |")
    print("|---|---|---|---|---|")
    for name in ("copynet_ding2018", "dual_decoder_liu2018", "pg_zhang2020", *CTRSGEN_SETTINGS):
        if name not in results:
            continue
        row = results[name]
        print(
            f"| {name} | {row['before_ms_per_step']} | {row['library_ms_per_step']} | {row['speedup']} | "
            f"{row['max_loss_difference_without_dropout']:.2e} |"
        )
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
