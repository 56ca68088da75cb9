"""``generate()`` against a lean greedy loop of the same sizes, and single-query pipeline latency; CPU, JSON.

Every figure is a ratio against a reference measured in the same process (repetitions interleaved,
medians), next to the absolute time, with the machine's load average before and after: the machine this
runs on is often shared, so absolute times move with the load while the ratios stay comparable.

* ``generate``: ``model.generate(num_beams=1, min_new_tokens = max_new_tokens = N)`` on nl2kw validation
  queries (batches of 1 and 64) against :mod:`lean_decoders`' greedy loops, which produce the same ids
  (checked) from the same weights: the dual decoder (Liu'18 sizes), the attentional seq2seq (Liu'18)
  and CopyNet (Ding'18 sizes: embeddings 100, BiGRU 200, GRU 400), all on the nl2kw vocabulary.
* ``pipeline``: ``pipeline("keyword-query-generation")`` on one query at a time (tokenise, generate,
  postprocess), dual decoder, greedy, 1 thread: p50 / p95 over the queries, beside ``generate()`` alone
  on the same encoded queries. With ``--model-dir`` (a trained dual decoder, e.g. from
  ``hf-querygen train --system liu2018/dual_decoder``) the model stops where it predicts [EOS];
  without, random weights decode exactly ``--new-tokens`` tokens.

    python benchmarks/bench_generation.py [--model-dir DIR] [--output benchmarks/generation_cpu_results.json]
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


def build_models(tokenizer, output_vocab_size: int) -> dict:
    import torch

    from hf_querygen.models.dual_decoder import (
        LIU2018_DUAL_DECODER,
        DualDecoderConfig,
        DualDecoderForKeywordGeneration,
    )
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqForConditionalGeneration
    from hf_querygen.presets import config_from_preset

    sizes = {"vocab_size": len(tokenizer), "output_vocab_size": output_vocab_size}
    torch.manual_seed(0)
    return {
        "dual_decoder": DualDecoderForKeywordGeneration(DualDecoderConfig(**LIU2018_DUAL_DECODER, **sizes)),
        "attentional_seq2seq": RNNSeq2SeqForConditionalGeneration(
            config_from_preset("liu2018-attn-seq2seq", **sizes)
        ),
        "copynet": RNNSeq2SeqForConditionalGeneration(config_from_preset("ding2018-copynet", **sizes)),
    }


def interleaved(functions: dict, repetitions: int) -> dict[str, float]:
    """Median seconds of each function, the functions run in turn ``repetitions`` times."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repetitions):
        for name, function in functions.items():
            started = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def bench_generate(models: dict, tokenizer, texts: list[str], new_tokens: int, repetitions: int) -> dict:
    import torch
    from lean_decoders import dual_decoder_greedy, rnn_seq2seq_greedy

    from hf_querygen.inference import encoded_batches

    results = {}
    for name, model in models.items():
        model.eval()
        lean = dual_decoder_greedy if name == "dual_decoder" else rnn_seq2seq_greedy
        for batch_size in (1, 64):
            batches = [
                batch
                for _, batch, _ in encoded_batches(model, tokenizer, texts[: max(batch_size, 32)], batch_size)
            ]
            settings = dict(
                max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=1, do_sample=False
            )

            def library(batches=batches, model=model, settings=settings):
                with torch.no_grad():
                    return [model.generate(**batch, **settings) for batch in batches]

            def reference(batches=batches, model=model, lean=lean):
                return [
                    lean(
                        model,
                        batch["input_ids"],
                        batch["attention_mask"],
                        new_tokens,
                        batch.get("source_word_ids"),
                    )
                    for batch in batches
                ]

            same = all(torch.equal(a, b) for a, b in zip(library(), reference(), strict=True))
            medians = interleaved({"generate": library, "lean": reference}, repetitions)
            per_call = {key: 1000 * value / len(batches) for key, value in medians.items()}
            results[f"{name}/batch{batch_size}"] = {
                "generate_ms_per_call": round(per_call["generate"], 3),
                "lean_ms_per_call": round(per_call["lean"], 3),
                "ratio": round(per_call["generate"] / per_call["lean"], 3),
                "same_ids": same,
                "calls": len(batches),
            }
    return results


def bench_pipeline(model, tokenizer, texts: list[str], new_tokens: int | None, repetitions: int) -> dict:
    import torch
    from transformers import pipeline

    from hf_querygen.inference import encoded_batches

    model.eval()
    generate_kwargs = (
        {} if new_tokens is None else {"max_new_tokens": new_tokens, "min_new_tokens": new_tokens}
    )
    keywords = pipeline("keyword-query-generation", model=model, tokenizer=tokenizer)
    encoded = [batch for _, batch, _ in encoded_batches(model, tokenizer, texts, 1)]
    for text in texts[:5]:
        keywords(text, **generate_kwargs)
    pipeline_times: list[float] = []
    pipeline_cpu_times: list[float] = []
    generate_times: list[float] = []
    lengths = []
    for _ in range(repetitions):
        for text, batch in zip(texts, encoded, strict=True):
            started, started_cpu = time.perf_counter(), time.process_time()
            keywords(text, **generate_kwargs)
            pipeline_times.append(time.perf_counter() - started)
            pipeline_cpu_times.append(time.process_time() - started_cpu)
            started = time.perf_counter()
            with torch.no_grad():
                ids = model.generate(**batch, num_beams=1, **generate_kwargs)
            generate_times.append(time.perf_counter() - started)
            lengths.append(ids.shape[1] - 1)

    def quantile(values: list[float], q: float) -> float:
        return round(1000 * statistics.quantiles(values, n=100)[int(q * 100) - 1], 3)

    return {
        "queries": len(texts),
        "repetitions": repetitions,
        "mean_decoded_tokens": round(statistics.mean(lengths), 2),
        "pipeline_p50_ms": round(1000 * statistics.median(pipeline_times), 3),
        "pipeline_p95_ms": quantile(pipeline_times, 0.95),
        # the process's own CPU time: what the call costs without waiting for a core on a loaded machine
        "pipeline_cpu_p50_ms": round(1000 * statistics.median(pipeline_cpu_times), 3),
        "pipeline_cpu_p95_ms": quantile(pipeline_cpu_times, 0.95),
        "generate_p50_ms": round(1000 * statistics.median(generate_times), 3),
        "outside_generate_p50_ms": round(
            1000 * (statistics.median(pipeline_times) - statistics.median(generate_times)), 3
        ),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=6, help="decoded tokens per query (generate)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--model-dir", default=None, help="a trained dual decoder for the pipeline latency")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)

    import torch

    from hf_querygen import load_corpus
    from hf_querygen.tokenization import train_word_tokenizer

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    splits = load_corpus("nl2kw", "en", data_dir=args.data_dir)
    texts = list(splits["validation"]["nl_query"])[: args.queries]
    if args.model_dir:
        from hf_querygen.model_folder import load_trained

        trained, tokenizer, _ = load_trained(args.model_dir)
    else:
        train = splits["train"]
        tokenizer = train_word_tokenizer(train["nl_query"], target_texts=train["keyword_query"])
        trained = None
    output_vocab_size = tokenizer.init_kwargs.get("output_vocab_size") or len(tokenizer)
    models = build_models(tokenizer, output_vocab_size)
    results: dict = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": args.threads,
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        "vocab_size": len(tokenizer),
        "output_vocab_size": output_vocab_size,
        "new_tokens_per_query": args.new_tokens,
        "repetitions": args.repetitions,
        "generate_vs_lean": bench_generate(models, tokenizer, texts, args.new_tokens, args.repetitions),
    }
    pipeline_model = trained if trained is not None else models["dual_decoder"]
    results["pipeline_single_query"] = {
        "model": "trained dual decoder " + args.model_dir
        if trained is not None
        else "random-weight dual decoder",
        **bench_pipeline(
            pipeline_model,
            tokenizer,
            texts,
            None if trained is not None else args.new_tokens,
            args.repetitions,
        ),
    }
    results["load_average_before_after"] = [list(load_before), list(os.getloadavg())]
    print(json.dumps(results, indent=2))
    print("\n| model / batch | generate() ms/call | lean loop ms/call | ratio | same ids |")
    print("|---|---|---|---|---|")
    for key, row in results["generate_vs_lean"].items():
        print(
            f"| {key} | {row['generate_ms_per_call']} | {row['lean_ms_per_call']} | {row['ratio']} | "
            f"{row['same_ids']} |"
        )
    p = results["pipeline_single_query"]
    print(
        f"| pipeline, 1 query ({p['model']}) | p50 {p['pipeline_p50_ms']} / p95 {p['pipeline_p95_ms']} "
        f"(CPU p50 {p['pipeline_cpu_p50_ms']} / p95 {p['pipeline_cpu_p95_ms']}) | "
        f"generate() p50 {p['generate_p50_ms']} | outside generate {p['outside_generate_p50_ms']} ms | |"
    )
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
