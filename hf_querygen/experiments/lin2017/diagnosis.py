"""Why our RNN encoder-decoder segmenter reaches 0.071 query accuracy where Lin et al. report 0.421.

``python -m hf_querygen.experiments.lin2017.diagnosis OUT_DIR [--quick]`` trains the table's encoder-decoder
(and variants, one lever at a time) on fold 0 of the lin2017 cross-validation and writes
``rnn_diagnosis.json``. Everything is measured on the fold's validation part (the choices) and, for the
record, on its test fold; nothing is selected on the test fold. What it measures:

* vocabulary: the share of test-fold words that are not in the training vocabulary, and of test queries
  with at least one such word (unconstrained decoding must then write ``[UNK]`` there, a token the
  one-hot model never saw as a target when the vocabulary keeps every training word);
* output space: the share of unconstrained outputs that are a segmentation of the query at all (same
  words in the same order, ``[UNK]`` matching an unknown word), and query accuracy on queries without any
  unknown word;
* training budget: query accuracy on (a sample of) the training queries, and the epochs run;
* decoding constraint: constrained decoding of the same model ("break vs. any word").

The variants: ``table`` (the lin2017 row), ``unk_training`` (training singletons mapped to ``[UNK]``,
``min_word_frequency=2``), ``longer`` (no early stopping, 40 epochs, the last epoch kept),
``lstm_attention`` (LSTM + Bahdanau attention with ``[UNK]`` training: the paper's own future-work
suggestion, Sec. 6), and the BiLSTM tagger with and without ``[UNK]`` training.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_querygen.experiments.lin2017 import FULL_BUDGET, QUICK_BUDGET, cross_validation_folds
from hf_querygen.experiments.lin2017.analysis import vocabulary_statistics
from hf_querygen.inference import run_generate
from hf_querygen.tasks.base import get_task
from hf_querygen.text import BREAK_TOKEN
from hf_querygen.training import train_preset

#: variant -> (prepare options, preset overrides, training overrides, patience)
_SIZES = {
    "embedding_size": 128,
    "hidden_size": 128,
    "decoder_hidden_size": 128,
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
}
VARIANTS: dict[str, dict[str, Any]] = {
    "table": {"prepare": {"min_word_frequency": 1}, "preset": {}, "training": {}, "patience": 2},
    "unk_training": {"prepare": {"min_word_frequency": 2}, "preset": {}, "training": {}, "patience": 2},
    "longer": {
        "prepare": {"min_word_frequency": 1},
        "preset": {},
        # keep the last epoch: by default the Trainer reloads the epoch of lowest validation loss
        "training": {"num_train_epochs": 40, "load_best_model_at_end": False},
        "patience": None,
    },
    "lstm_attention": {
        "prepare": {"min_word_frequency": 2},
        "preset": {"cell": "lstm", "attention": "bahdanau"},
        "training": {},
        "patience": 2,
    },
    # the BiLSTM tagger (lin2017-tagger) with and without [UNK] training, for the same vocabulary choice
    "tagger": {
        "model": "lin2017-tagger",
        "prepare": {"min_word_frequency": 1},
        "preset": {},
        "training": {},
        "patience": 2,
    },
    "tagger_unk_training": {
        "model": "lin2017-tagger",
        "prepare": {"min_word_frequency": 2},
        "preset": {},
        "training": {},
        "patience": 2,
    },
}


def _raw_outputs(model, tokenizer, queries: Sequence[str]) -> list[list[str]]:
    """Unconstrained greedy outputs as tokens (what the paper's decoder writes), per query."""

    from hf_querygen.tasks.segmentation.neural import encode_queries
    from hf_querygen.tasks.seq2seq import Seq2SeqCollator

    encoded = encode_queries(queries, tokenizer)
    collator = Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)
    outputs = []
    for start in range(0, len(queries), 128):
        rows = range(start, min(start + 128, len(queries)))
        batch = collator([{k: encoded[k][i] for k in ("input_ids", "attention_mask")} for i in rows])
        longest = max(len(encoded["source_words"][i]) for i in rows)
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        generated = run_generate(model, inputs, max_length=2 * longest + 1, do_sample=False, num_beams=1)
        special = {tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id}
        for ids in generated.tolist():
            outputs.append(tokenizer.convert_ids_to_tokens([i for i in ids[1:] if i not in special]))
    return outputs


def output_space(model, tokenizer, queries: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Share of unconstrained outputs that segment the query itself, and accuracy with / without an
    unknown word in the query."""
    vocab = tokenizer.get_vocab()
    unk = tokenizer.unk_token
    outputs = _raw_outputs(model, tokenizer, queries)
    valid, exact_known, n_known, exact_unknown, n_unknown = 0, 0, 0, 0, 0
    for query, reference, tokens in zip(queries, references, outputs, strict=True):
        words = [w if w in vocab else unk for w in query.lower().split()]
        written = [t for t in tokens if t != BREAK_TOKEN]
        is_valid = written == words
        valid += is_valid
        wanted = reference.lower().replace("|", f" {BREAK_TOKEN} ").split()
        wanted = [w if (w == BREAK_TOKEN or w in vocab) else unk for w in wanted]
        correct = tokens == wanted
        if unk in words:
            n_unknown += 1
            exact_unknown += correct
        else:
            n_known += 1
            exact_known += correct
    return {
        "outputs_that_segment_the_query": valid / len(queries),
        "query_accuracy_queries_without_unknown_word": exact_known / max(n_known, 1),
        "query_accuracy_queries_with_unknown_word": exact_unknown / max(n_unknown, 1),
        "queries_with_unknown_word": n_unknown / len(queries),
    }


def run(out_dir: str | Path, quick: bool = False, data_dir: Any = None, variants: Sequence[str] = ()) -> dict:
    """Train each variant on fold 0 and write ``rnn_diagnosis.json`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    task = get_task("segmentation")
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    fold = cross_validation_folds(task, budget, data_dir)[0]
    splits = fold.splits
    result: dict[str, Any] = {
        "fold": fold.id,
        "sizes": {name: len(split) for name, split in splits.items()},
        "vocabulary": {
            f"min_frequency_{m}": vocabulary_statistics(splits["train"]["query"], splits["test"]["query"], m)
            for m in (1, 2)
        },
        "variants": {},
    }
    train_sample = splits["train"].select(range(min(600, len(splits["train"]))))
    for name in variants or VARIANTS:
        spec = VARIANTS[name]
        started = time.time()
        data = task.prepare(splits, **spec["prepare"])
        training = {"learning_rate": 1e-3, "per_device_train_batch_size": 64, "max_grad_norm": 5.0}
        training["num_train_epochs"] = 4 if quick else 20
        training.update(spec["training"])
        model_preset = spec.get("model", "lin2017-segmenter")
        sizes = _SIZES if model_preset == "lin2017-segmenter" else {}
        trainer = train_preset(
            data,
            model_preset,
            out / "checkpoints" / name,
            seed=0,
            preset_overrides={**sizes, **spec["preset"]},
            training_overrides=training,
            early_stopping_patience=spec["patience"],
        )
        model = trainer.model
        entry: dict[str, Any] = {
            "settings": spec,
            "epochs": trainer.state.epoch,
            "train_seconds": round(time.time() - started, 1),
            "vocab_size": len(data.tokenizer),
        }
        for split_name, split in (("train_sample", train_sample), *splits.items()):
            if split_name == "train":
                continue
            queries, references = split["query"], split["reference"]
            scores = {}
            is_tagger = model_preset != "lin2017-segmenter"
            for label, constrained in (("unconstrained", False), ("constrained", True))[is_tagger:]:
                predicted = task.predict(model, data.tokenizer, queries, constrained=constrained)
                scores[label] = task.score(predicted, references, queries)["query_accuracy"]
            if not is_tagger:
                scores.update(output_space(model, data.tokenizer, queries, references))
            entry[split_name] = scores
        result["variants"][name] = entry
        previous = out / "rnn_diagnosis.json"
        if previous.is_file():  # runs of other variants into the same folder add up
            earlier = json.loads(previous.read_text())["variants"]
            result["variants"] = {**earlier, **result["variants"]}
        previous.write_text(json.dumps(result, indent=2) + "\n")
        print(name, json.dumps(entry), flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--variants", nargs="*", default=())
    args = parser.parse_args(argv)
    run(args.out_dir, args.quick, variants=args.variants)


if __name__ == "__main__":
    main()
