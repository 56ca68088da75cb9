"""First measurements of CtrsGen on q2id (validation split only; never the test split).

    python benchmarks/ctrsgen_q2id.py steptime --output-vocab 5000 10000 20000 --out steptime.json
    python benchmarks/ctrsgen_q2id.py train --preset zhang2020 --minutes 5 --out run.json
    python benchmarks/ctrsgen_q2id.py baselines --out baselines.json

``steptime``: seconds per Seq2SeqTrainer-style optimiser step (forward + backward + Adam) of the paper-size
model (embeddings 300, GRUs 256, batch 16) on real q2id batches, per output-vocabulary size.
``train``: trains a (small) preset with the stock Seq2SeqTrainer for a wall-clock budget, decodes the
validation split with generate() and scores ROUGE-1/2/L recall (the paper's measure), F1 and length.
The full Tables 3-4 run goes through the experiment runner; this is the smoke-sized first look.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import hf_querygen
from hf_querygen.presets import config_from_preset, training_arguments_from_preset
from hf_querygen.tasks.q2id import (
    Q2IDCaps,
    Q2IDCollator,
    decode_description,
    encode_q2id_dataset,
    train_q2id_tokenizer,
)


def _data(output_vocab: int, caps: Q2IDCaps, copy_labels: bool = False):
    """Tokenizer trained on train, train + validation encoded. ``copy_labels``: keep label ids outside the
    output vocabulary (a pointer-generator can copy them from the source; it trains the others as [UNK])."""
    corpus = hf_querygen.load_corpus("q2id")
    tokenizer = train_q2id_tokenizer(corpus["train"], output_vocab_size=output_vocab)
    label_space = len(tokenizer) if copy_labels else None
    train = encode_q2id_dataset(corpus["train"], tokenizer, caps, output_vocab_size=label_space)
    validation = encode_q2id_dataset(corpus["validation"], tokenizer, caps, output_vocab_size=label_space)
    return tokenizer, train, validation


def _model(preset: str, tokenizer, **overrides):
    from transformers import AutoModelForSeq2SeqLM

    config = config_from_preset(
        preset,
        vocab_size=len(tokenizer),
        output_vocab_size=int(tokenizer.init_kwargs["output_vocab_size"]),
        **overrides,
    )
    return AutoModelForSeq2SeqLM.from_config(config)


def steptime(args: argparse.Namespace) -> dict:
    caps = Q2IDCaps()
    rows = {}
    for output_vocab in args.output_vocab:
        tokenizer, train, _ = _data(output_vocab, caps)
        model = _model(args.preset, tokenizer).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
        collate = Q2IDCollator(tokenizer.pad_token_id)
        times = []
        for step in range(args.steps + 1):
            batch = collate([train[i] for i in range(step * 16, step * 16 + 16)])
            start = time.perf_counter()
            loss = model(**{k: v for k, v in batch.items()}).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            optimizer.zero_grad()
            if step:  # the first step pays for allocation
                times.append(time.perf_counter() - start)
        rows[str(output_vocab)] = {
            "output_vocab_size": int(tokenizer.init_kwargs["output_vocab_size"]),
            "seconds_per_step_median": statistics.median(times),
            "seconds_per_step": times,
        }
        print(output_vocab, rows[str(output_vocab)], flush=True)
    return {"preset": args.preset, "batch_size": 16, "threads": torch.get_num_threads(), "steps": rows}


def train(args: argparse.Namespace) -> dict:
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, TrainerCallback

    from hf_querygen.metrics.rouge import rouge
    from hf_querygen.presets import PRESETS

    caps = Q2IDCaps()
    copy_labels = PRESETS[args.preset]["model_type"] == "query_pointer_generator"
    tokenizer, train_set, validation = _data(args.output_vocab, caps, copy_labels)
    overrides = dict(embedding_size=args.embedding, hidden_size=args.hidden, decoder_hidden_size=args.hidden)
    torch.manual_seed(args.seed)  # the initial weights
    model = _model(args.preset, tokenizer, **overrides)
    model.generation_config.max_length = caps.max_description_words + 2

    class Budget(TrainerCallback):
        def __init__(self):
            self.start = time.perf_counter()

        def on_step_end(self, arguments, state, control, **kwargs):
            if time.perf_counter() - self.start > args.minutes * 60:
                control.should_training_stop = True

    training = training_arguments_from_preset(args.preset)
    if args.learning_rate is not None:
        training["learning_rate"] = args.learning_rate
    training_args = Seq2SeqTrainingArguments(
        output_dir=str(Path(args.workdir) / args.preset),
        num_train_epochs=args.epochs,
        logging_steps=10,
        save_strategy="no",
        eval_strategy="no",
        report_to=[],
        seed=args.seed,
        dataloader_pin_memory=False,
        remove_unused_columns=True,
        **training,
    )
    budget = Budget()
    trainer = Seq2SeqTrainer(
        model=model,
        args=training_args,
        train_dataset=train_set,
        data_collator=Q2IDCollator(tokenizer.pad_token_id),
        processing_class=tokenizer,
        callbacks=[budget],
    )
    result = trainer.train()
    train_seconds = time.perf_counter() - budget.start
    steps = trainer.state.global_step

    model.eval()
    collate = Q2IDCollator(tokenizer.pad_token_id)
    predictions = []
    start = time.perf_counter()
    with torch.no_grad():
        for begin in range(0, len(validation), 16):
            rows = [validation[i] for i in range(begin, min(begin + 16, len(validation)))]
            batch = collate(rows)
            batch.pop("labels")
            generated = model.generate(
                **batch, num_beams=args.beams, max_length=caps.max_description_words + 2
            )
            predictions += [decode_description(g, tokenizer) for g in generated]
    decode_seconds = time.perf_counter() - start
    scores = rouge(predictions, list(validation["description"]))
    lengths = [len(p.split()) for p in predictions]
    return {
        "preset": args.preset,
        "model_overrides": overrides,
        "learning_rate": training["learning_rate"],
        "output_vocab_size": int(tokenizer.init_kwargs["output_vocab_size"]),
        "train_steps": steps,
        "epochs": trainer.state.epoch,
        "train_seconds": train_seconds,
        "seconds_per_step": train_seconds / max(steps, 1),
        "final_train_loss": result.training_loss,
        "decode_seconds": decode_seconds,
        "num_beams": args.beams,
        "validation": {
            **{f"{t}_recall": scores[f"{t}_recall"] for t in ("rouge1", "rouge2", "rougeL")},
            **{f"{t}_f": scores[f"{t}_f"] for t in ("rouge1", "rouge2", "rougeL")},
            "mean_length_words": statistics.fmean(lengths),
        },
        "examples": [
            {"query": q, "prediction": p}
            for q, p in zip(validation["query"][:5], predictions[:5], strict=True)
        ],
    }


def baselines(args: argparse.Namespace) -> dict:
    """Table 4's extractive rows (one sentence of the relevant documents), copy-the-query and the ORACLE
    best relevant sentence on the validation split."""
    from hf_querygen.baselines.intent_description import copy_query, extract_descriptions, oracle_sentences
    from hf_querygen.metrics.rouge import rouge

    examples = list(hf_querygen.load_corpus("q2id")["validation"])
    references = [example["description"] for example in examples]
    systems = {
        "lexrank": lambda: extract_descriptions(examples, "lexrank"),
        "lsa": lambda: extract_descriptions(examples, "lsa"),
        "textrank": lambda: extract_descriptions(examples, "textrank"),
        "copy-query (extra)": lambda: copy_query(examples),
        "ORACLE best relevant sentence by ROUGE-L F (extra, uses the reference)": lambda: oracle_sentences(
            examples
        ),
    }
    rows = {}
    for name, run in systems.items():
        start = time.perf_counter()
        predictions = run()
        scores = rouge(predictions, references)
        rows[name] = {
            **{key: scores[key] for key in ("rouge1_recall", "rouge2_recall", "rougeL_recall")},
            **{key: scores[key] for key in ("rouge1_f", "rouge2_f", "rougeL_f")},
            "mean_length_words": statistics.fmean(len(p.split()) for p in predictions),
            "seconds": time.perf_counter() - start,
        }
        print(name, {k: round(v, 4) for k, v in rows[name].items()}, flush=True)
    return {"split": "validation", "n": len(examples), "systems": rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("steptime")
    p.add_argument("--preset", default="zhang2020")
    p.add_argument("--output-vocab", type=int, nargs="+", default=[5000, 10000, 20000])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--out", required=True)
    p = sub.add_parser("baselines")
    p.add_argument("--out", required=True)
    p = sub.add_parser("train")
    p.add_argument("--preset", default="zhang2020")
    p.add_argument("--output-vocab", type=int, default=5000)
    p.add_argument("--embedding", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--epochs", type=float, default=50.0)
    p.add_argument("--beams", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--learning-rate", type=float, default=None, help="override the preset's")
    p.add_argument("--workdir", default="/tmp/ctrsgen_runs")
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = {"steptime": steptime, "train": train, "baselines": baselines}[args.command](args)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "examples"}, indent=1))


if __name__ == "__main__":
    main()
