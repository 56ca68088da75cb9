"""Generation throughput of the Liu'18 dual decoder beside the attentional seq2seq, on CPU; prints JSON.

Both models have the paper's sizes (embeddings 60, LSTMs 128) and the real nl2kw vocabulary (tokenizer
fitted on the train split); the inputs are nl2kw validation queries. Measured: queries/s of
:func:`hf_querygen.inference.generate_texts` (tokenise, ``generate()``, decode) with greedy search and
beam search (5 beams) at batch sizes 1 and 64. Weights are freshly initialised, so every query decodes
exactly ``--new-tokens`` tokens (``min_new_tokens = max_new_tokens``): the numbers measure the cost per
decoded token, not when a model happens to stop. The dual decoder runs two LSTM decoders and three
attentions per step (Eq. 2-12) where the attentional seq2seq runs one decoder and one attention.

    python benchmarks/bench_dual_decoder.py [--threads 1] [--queries 128] [--new-tokens 12]
"""

from __future__ import annotations

import argparse
import json
import platform
import time


def build_models(tokenizer, output_vocab_size: int) -> dict:
    from hf_querygen.models.dual_decoder import (
        LIU2018_DUAL_DECODER,
        DualDecoderConfig,
        DualDecoderForKeywordGeneration,
    )
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqForConditionalGeneration
    from hf_querygen.presets import config_from_preset

    sizes = {"vocab_size": len(tokenizer), "output_vocab_size": output_vocab_size}
    return {
        "dual_decoder": DualDecoderForKeywordGeneration(DualDecoderConfig(**LIU2018_DUAL_DECODER, **sizes)),
        "attentional_seq2seq": RNNSeq2SeqForConditionalGeneration(
            config_from_preset("liu2018-attn-seq2seq", **sizes)
        ),
    }


def queries_per_second(
    model, tokenizer, texts: list[str], batch_size: int, num_beams: int, new_tokens: int
) -> float:
    from hf_querygen.inference import generate_texts

    generate_texts(
        model,
        tokenizer,
        texts[:batch_size],
        batch_size=batch_size,
        num_beams=num_beams,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
    )  # warm-up
    started = time.perf_counter()
    generate_texts(
        model,
        tokenizer,
        texts,
        batch_size=batch_size,
        num_beams=num_beams,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
    )
    return len(texts) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--queries", type=int, default=128, help="queries per measurement")
    parser.add_argument("--new-tokens", type=int, default=12)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)

    import torch

    from hf_querygen import load_corpus
    from hf_querygen.tokenization import train_word_tokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    splits = load_corpus("nl2kw", "en", data_dir=args.data_dir)
    train = splits["train"]
    tokenizer = train_word_tokenizer(train["nl_query"], target_texts=train["keyword_query"])
    texts = list(splits["validation"]["nl_query"])[: args.queries]
    output_vocab_size = tokenizer.init_kwargs["output_vocab_size"]
    results: dict = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": args.threads,
            "processor": platform.processor() or platform.machine(),
        },
        "queries": len(texts),
        "new_tokens_per_query": args.new_tokens,
        "vocab_size": len(tokenizer),
        "output_vocab_size": output_vocab_size,
        "queries_per_second": {},
    }
    for name, model in build_models(tokenizer, output_vocab_size).items():
        model.eval()
        rates = {}
        for num_beams, search in ((1, "greedy"), (5, "beam5")):
            for batch_size in (1, 64):
                rates[f"{search}_batch{batch_size}"] = round(
                    queries_per_second(model, tokenizer, texts, batch_size, num_beams, args.new_tokens), 1
                )
        results["queries_per_second"][name] = rates
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
