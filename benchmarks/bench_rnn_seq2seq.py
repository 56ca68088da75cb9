"""Speed and memory of the RNN encoder-decoder presets on CPU; prints one JSON document.

Per preset (each in its own subprocess, so that peak memory is the preset's own):

* training: ``Seq2SeqTrainer`` for ``--train-steps`` optimiser steps at the preset's batch size on
  the nl2kw train split (real vocabulary sizes); examples/s from the trainer's own
  ``train_samples_per_second`` (includes the first, slower step);
* peak memory: growth of the process' peak resident set size during training
  (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after minus before, MiB; Linux reports KiB). It
  counts torch's allocations, which tracemalloc does not see;
* generation: queries/s of ``generate_texts`` (tokenise, generate, copy-aware decoding) with greedy
  and beam-5 search at batch 1 and 64 on validation sources. Every query decodes exactly
  ``--new-tokens`` tokens (``min_new_tokens = max_new_tokens``), so the numbers do not depend on
  when a barely trained model happens to emit [EOS].

    python benchmarks/bench_rnn_seq2seq.py [--presets liu2018-seq2seq ...] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

RNN_PRESETS = (
    "liu2018-seq2seq",
    "liu2018-attn-seq2seq",
    "song2017",
    "ding2018-ednet",
    "ding2018-attnet",
    "ding2018-copynet",
    "lin2017-segmenter",
)


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_preset(preset: str, args: argparse.Namespace) -> dict:
    import torch
    from transformers import AutoModelForSeq2SeqLM

    from hf_querygen.corpora import load_corpus
    from hf_querygen.inference import generate_texts
    from hf_querygen.presets import TRAINING_PRESETS, config_from_preset
    from hf_querygen.tasks.seq2seq import encode_seq2seq
    from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer
    from hf_querygen.training import train_seq2seq

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    splits = load_corpus("nl2kw", "en", data_dir=args.data_dir)
    train_raw = splits["train"]
    tokenizer = train_word_tokenizer(train_raw["nl_query"], target_texts=train_raw["keyword_query"])
    V = output_vocab_size_of(tokenizer)
    config = config_from_preset(
        preset,
        vocab_size=len(tokenizer),
        output_vocab_size=V,
        pad_token_id=0,
        unk_token_id=1,
        bos_token_id=2,
        eos_token_id=3,
        decoder_start_token_id=2,
    )
    model = AutoModelForSeq2SeqLM.from_config(config)
    train = encode_seq2seq(
        train_raw,
        tokenizer,
        "nl_query",
        "keyword_query",
        V,
        64,
        16,
        copy=str(getattr(config, "copy", "none")) != "none",
        remove_columns=True,
    )
    batch_size = (TRAINING_PRESETS[preset] if preset in TRAINING_PRESETS else {}).get(
        "per_device_train_batch_size", 64
    )
    rss_before = _peak_rss_mib()
    with tempfile.TemporaryDirectory() as out:
        trainer = train_seq2seq(
            model,
            tokenizer,
            train,
            None,
            out,
            training_preset=preset,
            max_new_tokens=16,
            max_steps=args.train_steps,
            save_strategy="no",
            logging_steps=10**6,
        )
    rss_after = _peak_rss_mib()
    train_metrics = next(log for log in trainer.state.log_history if "train_samples_per_second" in log)

    model = trainer.model.eval()
    sources = splits["validation"]["nl_query"]
    generation = {}
    for search, beams in (("greedy", 1), ("beam5", 5)):
        for batch in (1, 64):
            n_queries = args.queries_batch1 if batch == 1 else args.queries_batch64
            texts = list(sources[:n_queries])
            generate_texts(
                model,
                tokenizer,
                texts[: min(batch, 4)],
                batch_size=batch,
                num_beams=beams,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
            )  # warm-up
            started = time.perf_counter()
            generate_texts(
                model,
                tokenizer,
                texts,
                batch_size=batch,
                num_beams=beams,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
            )
            generation[f"{search}_batch{batch}_queries_per_s"] = round(
                n_queries / (time.perf_counter() - started), 2
            )
    return {
        "preset": preset,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "output_vocab_size": V,
        "train_batch_size": batch_size,
        "train_steps": args.train_steps,
        "train_examples_per_s": round(float(train_metrics["train_samples_per_second"]), 2),
        "train_peak_rss_growth_mib": round(rss_after - rss_before, 1),
        "peak_rss_mib": round(rss_after, 1),
        **generation,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=list(RNN_PRESETS))
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--new-tokens", type=int, default=8, help="tokens decoded per query")
    parser.add_argument("--queries-batch1", type=int, default=32)
    parser.add_argument("--queries-batch64", type=int, default=256)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # child process: one preset
    args = parser.parse_args(argv)

    if args.one:
        print(json.dumps(bench_preset(args.presets[0], args)))
        return 0
    results = []
    for preset in args.presets:
        command = (
            [sys.executable, os.path.abspath(__file__), "--one", "--presets", preset]
            + [
                flag
                for name in ("threads", "train_steps", "new_tokens", "queries_batch1", "queries_batch64")
                for flag in (f"--{name.replace('_', '-')}", str(getattr(args, name)))
            ]
            + (["--data-dir", args.data_dir] if args.data_dir else [])
        )
        done = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
        )
        if done.returncode != 0:
            results.append({"preset": preset, "error": done.stderr.strip().splitlines()[-1:]})
            continue
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    import torch
    import transformers

    print(
        json.dumps(
            {
                "benchmark": "rnn_seq2seq",
                "device": "cpu",
                "torch_threads": args.threads,
                "cpu_count": os.cpu_count(),
                "load_average_1min_at_end": round(os.getloadavg()[0], 2),
                "python": platform.python_version(),
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "memory_measure": "growth of peak RSS (getrusage ru_maxrss) during training, per preset "
                "process",
                "generation_setting": f"{args.new_tokens} new tokens per query (min = max), nl2kw "
                "validation sources",
                "results": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
