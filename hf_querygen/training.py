"""Training and inference glue around the stock ``Seq2SeqTrainer``, and the CLI subcommands
``hf-querygen train`` / ``evaluate`` / ``generate``.

No training loop of our own: :func:`train_seq2seq` configures ``Seq2SeqTrainingArguments`` from a
paper's training preset (optimiser settings, batch size, gradient clipping), early-stops on the
validation loss (``EarlyStoppingCallback`` + ``load_best_model_at_end``), evaluates with
``predict_with_generate`` when metrics are asked for, and sets the generation config deliberately
before saving. :func:`generate_texts` runs batched ``generate()`` and maps copy ids back to source
words (:func:`hf_querygen.tasks.seq2seq.decode_extended`).

Which corpus columns are source and target, and how outputs are scored, is declared per corpus in
:data:`SEQ2SEQ_TASKS` (other tasks add theirs with :func:`register_seq2seq_task`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch/transformers/datasets cost seconds at import; the CLI imports this module
    import datasets
    from transformers import PreTrainedModel, PreTrainedTokenizerFast, Seq2SeqTrainer

#: (predictions, references, sources) -> metric name -> value
ScoreFn = Callable[[Sequence[str], Sequence[str], Sequence[str]], dict[str, float]]

#: file written beside a trained model: what it was trained on and how (read by ``evaluate``)
TRAINING_METADATA_FILE = "hf_querygen_training.json"


# ---------------------------------------------------------------- per-corpus task declarations
def text_generation_scores(
    predictions: Sequence[str], references: Sequence[str], sources: Sequence[str]
) -> dict[str, float]:
    """Exact match and corpus BLEU-4: generic scores for any generated text."""
    from .metrics.bleu import corpus_bleu
    from .metrics.exact_match import exact_match

    return {
        "exact_match": exact_match(predictions, references)["exact_match"],
        "bleu": corpus_bleu(predictions, references)["bleu"],
    }


def keyword_query_scores(
    predictions: Sequence[str], references: Sequence[str], sources: Sequence[str]
) -> dict[str, float]:
    """Liu'18 keyword P/R/F1 (per query and pooled, extractive/generative recall) + exact match."""
    from .metrics.exact_match import exact_match
    from .metrics.keyword_prf import keyword_prf

    scores = {k: float(v) for k, v in keyword_prf(predictions, references, sources=sources).items()}
    scores["exact_match"] = exact_match(predictions, references)["exact_match"]
    return scores


@dataclass(frozen=True)
class Seq2SeqCorpusTask:
    """How a corpus is used as a seq2seq task: which columns, which default config, which scores."""

    source_column: str
    target_column: str
    score: ScoreFn = text_generation_scores
    default_config: str | None = None
    description: str = ""


SEQ2SEQ_TASKS: dict[str, Seq2SeqCorpusTask] = {
    "nl2kw": Seq2SeqCorpusTask(
        "nl_query", "keyword_query", keyword_query_scores, "en", "natural-language query -> keyword query"
    ),
}


def register_seq2seq_task(corpus: str, task: Seq2SeqCorpusTask) -> None:
    """Make ``corpus`` usable with ``hf-querygen train/evaluate`` (task modules call this)."""
    SEQ2SEQ_TASKS[corpus] = task


def get_seq2seq_task(corpus: str) -> Seq2SeqCorpusTask:
    if corpus not in SEQ2SEQ_TASKS:
        raise ValueError(
            f"Corpus {corpus!r} has no seq2seq task declaration; known: {sorted(SEQ2SEQ_TASKS)} "
            "(add one with hf_querygen.training.register_seq2seq_task)"
        )
    return SEQ2SEQ_TASKS[corpus]


# ---------------------------------------------------------------- training arguments
#: defaults: plain Adam at a constant rate (as the papers train), early stopping on validation loss
DEFAULT_TRAINING_ARGUMENTS: dict[str, Any] = {
    "learning_rate": 1e-3,
    "per_device_train_batch_size": 64,
    "per_device_eval_batch_size": 64,
    "max_grad_norm": 5.0,
    "num_train_epochs": 20,
    "optim": "adamw_torch",
    "weight_decay": 0.0,
    "lr_scheduler_type": "constant",
    "eval_strategy": "epoch",
    "save_strategy": "epoch",
    "logging_strategy": "steps",
    "logging_steps": 20,
    "load_best_model_at_end": True,
    "metric_for_best_model": "eval_loss",
    "greater_is_better": False,
    "save_total_limit": 2,
    "report_to": "none",
    "dataloader_num_workers": 0,
    "disable_tqdm": True,
}


def configure_generation(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, max_new_tokens: int, num_beams: int = 1
) -> None:
    """Set the model's generation config on purpose (otherwise ``save_model`` writes max_length 20).

    The length goes in as ``max_length = max_new_tokens + 1`` (the decoder start token counts for an
    encoder-decoder): Seq2SeqTrainer fills in a default ``max_length`` during evaluation, and a config
    holding both limits makes every ``generate()`` warn.
    """
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        max_length=max_new_tokens + 1,
        num_beams=num_beams,
        do_sample=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        decoder_start_token_id=getattr(model.config, "decoder_start_token_id", None)
        or tokenizer.bos_token_id,
    )


def make_compute_metrics(
    eval_dataset: datasets.Dataset,
    tokenizer: PreTrainedTokenizerFast,
    output_vocab_size: int,
    source_column: str,
    target_column: str,
    score: ScoreFn = text_generation_scores,
) -> Callable:
    """A ``compute_metrics`` for ``Seq2SeqTrainer(predict_with_generate=True)``.

    Generated ids are decoded with the copy-aware :func:`decode_extended` using the encoded
    ``source_words`` of ``eval_dataset`` (the Trainer evaluates in dataset order); references are the
    raw target texts in the tokenizer's normalised words, untruncated.
    """
    from .tasks.seq2seq import decode_extended_batch
    from .tokenization import word_tokenize

    source_words = eval_dataset["source_words"]
    sources = [_text(s) for s in eval_dataset[source_column]]
    references = [" ".join(word_tokenize(tokenizer, _text(t))) for t in eval_dataset[target_column]]

    def compute_metrics(eval_prediction) -> dict[str, float]:
        generated = eval_prediction.predictions
        if isinstance(generated, tuple):
            generated = generated[0]
        predictions = decode_extended_batch(generated, source_words, tokenizer, output_vocab_size)
        return score(predictions, references, sources)

    return compute_metrics


def _text(value) -> str:
    return value if isinstance(value, str) else " ".join(value)


def source_length_keys(dataset: datasets.Dataset) -> list[int]:
    """Sort key of length-grouped batching: each example's source length.

    Not the target length, although an RNN decoder loops over the longest target of the batch: batches
    of equal target length are batches of equal stopping decisions (a pointer decoder trained on a
    batch of one-word targets learns "stop at once"). On nl2kw (liu2018) the pointer network's
    validation F1 was 0.394 +- 0.012 with random batches and 0.369 +- 0.035 grouped by source length
    (3 seeds), 0.286 grouped by target then source length (seed 0)."""
    if "input_ids" not in dataset.column_names:
        raise ValueError("group_by_length needs an input_ids column in the training dataset")
    return [len(ids) for ids in dataset["input_ids"]]


class BucketedBatchSampler:
    """Random batches of similar source length, in random order (a bucket iterator).

    Every epoch: shuffle the examples, cut them into mega-batches of ``mega_batch_size`` batches, sort
    each mega-batch by ``keys`` (:func:`source_length_keys`), cut it into batches and SHUFFLE THE
    BATCHES. The last step is what transformers' ``LengthGroupedSampler`` does not do: it walks each
    mega-batch from the longest to the shortest examples, so every epoch ends on a run of the shortest
    ones just before the evaluation that picks the checkpoint.

    Yields example indices; the DataLoader's ``batch_size`` cuts them back into the same batches (the
    one incomplete batch, if any, comes last). A plain iterable with ``__len__`` is all a DataLoader
    sampler needs, which keeps torch out of this module's import.
    """

    def __init__(self, keys: Sequence[int], batch_size: int, mega_batch_size: int = 50):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.keys = list(keys)
        self.batch_size = batch_size
        self.mega_batch_size = mega_batch_size

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self):
        import torch

        permutation = torch.randperm(
            len(self.keys)
        ).tolist()  # torch's RNG: seeded by Trainer like the stock samplers
        span = self.batch_size * self.mega_batch_size
        batches = []
        for start in range(0, len(permutation), span):
            mega_batch = sorted(permutation[start : start + span], key=self.keys.__getitem__)
            batches += [
                mega_batch[i : i + self.batch_size] for i in range(0, len(mega_batch), self.batch_size)
            ]
        incomplete = [batches.pop()] if batches and len(batches[-1]) < self.batch_size else []
        order = torch.randperm(len(batches)).tolist()
        for batch in [batches[i] for i in order] + incomplete:
            yield from batch


def _bucketed_trainer_class():
    """Seq2SeqTrainer whose training batches come from :class:`BucketedBatchSampler`."""
    from transformers import Seq2SeqTrainer

    class BucketedSeq2SeqTrainer(Seq2SeqTrainer):
        def _get_train_sampler(self, train_dataset=None):
            dataset = self.train_dataset if train_dataset is None else train_dataset
            return BucketedBatchSampler(
                source_length_keys(dataset),
                self.args.train_batch_size * self.args.gradient_accumulation_steps,
            )

    return BucketedSeq2SeqTrainer


def train_seq2seq(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    train_dataset: datasets.Dataset,
    eval_dataset: datasets.Dataset | None,
    output_dir: str | Path,
    training_preset: str | Mapping[str, Any] | None = None,
    compute_metrics: Callable | None = None,
    max_new_tokens: int = 32,
    num_beams: int = 1,
    early_stopping_patience: int | None = 3,
    callbacks: Sequence | None = None,
    group_by_length: bool = False,
    **training_args: Any,
) -> Seq2SeqTrainer:
    """Train a seq2seq model with the stock ``Seq2SeqTrainer`` and save the best one to ``output_dir``.

    Args:
        train_dataset / eval_dataset: encoded with :func:`hf_querygen.tasks.seq2seq.encode_seq2seq`.
            With ``eval_dataset`` the best checkpoint by validation loss is restored at the end and
            training stops after ``early_stopping_patience`` evaluations without improvement.
        training_preset: a ``hf_querygen.presets.TRAINING_PRESETS`` name, or a dict of
            ``Seq2SeqTrainingArguments`` fields (optimiser, learning rate, batch size, clipping).
        compute_metrics: e.g. :func:`make_compute_metrics`; turns on ``predict_with_generate``.
        max_new_tokens / num_beams: the generation config saved with the model (and used in eval).
        group_by_length: batch training examples of similar source length together
            (:class:`BucketedBatchSampler`: random batches in random order). The encoder and every
            attention step run over the longest source of the batch, so on corpora of mixed lengths
            an epoch takes about 1.2-1.5x less time.
        **training_args: any ``Seq2SeqTrainingArguments`` field; overrides the preset and defaults.

    Returns:
        the trainer after ``train()``; the model in it is the best one, already saved with the
        tokenizer and generation config in ``output_dir``.
    """
    import torch
    from transformers import EarlyStoppingCallback, Seq2SeqTrainer, Seq2SeqTrainingArguments

    from .tasks.seq2seq import Seq2SeqCollator

    if isinstance(training_preset, str):
        from .presets import training_arguments_from_preset

        training_preset = training_arguments_from_preset(training_preset)
    arguments = {
        **DEFAULT_TRAINING_ARGUMENTS,
        **(training_preset or {}),
        **training_args,
        "output_dir": str(output_dir),
        "predict_with_generate": compute_metrics is not None,
        "generation_max_length": None,
        "generation_num_beams": num_beams,
    }
    arguments.setdefault(
        "dataloader_pin_memory", torch.cuda.is_available()
    )  # pinning warns on CPU-only hosts
    if eval_dataset is None:
        arguments.update(eval_strategy="no", load_best_model_at_end=False)
        early_stopping_patience = None
    if (
        arguments.get("max_steps", -1) > 0
        and arguments["eval_strategy"] == "epoch"
        and eval_dataset is not None
    ):
        raise ValueError(
            "with max_steps, evaluate every eval_steps: pass eval_strategy='steps' and eval_steps"
        )
    args = Seq2SeqTrainingArguments(**arguments)

    configure_generation(model, tokenizer, max_new_tokens, num_beams)
    all_callbacks = list(callbacks or [])
    if early_stopping_patience:
        all_callbacks.append(EarlyStoppingCallback(early_stopping_patience=early_stopping_patience))
    trainer_class = _bucketed_trainer_class() if group_by_length else Seq2SeqTrainer
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id),
        compute_metrics=compute_metrics,
        callbacks=all_callbacks,
    )
    trainer.train()
    trainer.save_model(str(output_dir))  # best model (load_best_model_at_end) + tokenizer + generation config
    trainer.save_state()
    return trainer


# ---------------------------------------------------------------- inference
def _forward_argument_names(model: PreTrainedModel) -> set[str]:
    return set(inspect.signature(model.forward).parameters)


def output_vocab_size_of_model(model: PreTrainedModel) -> int:
    """The decoder output vocabulary size ``V`` (ids ``>= V`` are copy positions)."""
    size = getattr(model.config, "output_vocab_size", None) or getattr(model.config, "vocab_size", None)
    if size is None:
        raise ValueError(f"{type(model.config).__name__} has neither output_vocab_size nor vocab_size")
    return int(size)


def as_max_length(generate_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``max_new_tokens=n`` -> ``max_length=n + 1`` (the decoder start token counts for an
    encoder-decoder), so that a call-time limit does not clash with the saved ``max_length``."""
    kwargs = dict(generate_kwargs)
    if kwargs.get("max_new_tokens") is not None and kwargs.get("max_length") is None:
        kwargs["max_length"] = kwargs.pop("max_new_tokens") + 1
    return kwargs


def generate_texts(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 64,
    max_source_length: int | None = None,
    **generate_kwargs: Any,
) -> list[str]:
    """Batched ``model.generate`` on raw texts; returns decoded texts (copy ids -> source words).

    Texts are batched by length (fewer pad positions; a padded batch decodes like single examples)
    and returned in input order; with ``num_return_sequences=n`` the ``n`` outputs of text ``i`` are
    at ``i * n .. i * n + n - 1``.
    """
    import torch

    from .tasks.seq2seq import Seq2SeqCollator, decode_extended_batch, encode_sources

    if isinstance(texts, str):
        raise TypeError("generate_texts expects a list of texts, not a single string")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    generate_kwargs = as_max_length(generate_kwargs)
    n_returns = int(generate_kwargs.get("num_return_sequences", 1))
    output_vocab_size = output_vocab_size_of_model(model)
    accepted = _forward_argument_names(model)
    collator = Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)
    encoded = encode_sources(texts, tokenizer, max_source_length)
    order = sorted(range(len(texts)), key=lambda i: len(encoded["input_ids"][i]))
    results: list[list[str]] = [[] for _ in texts]
    model.eval()
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        features = [
            {key: encoded[key][i] for key in ("input_ids", "attention_mask", "source_word_ids")}
            for i in indices
        ]
        batch = {k: v.to(model.device) for k, v in collator(features).items() if k in accepted}
        with torch.no_grad():
            generated = model.generate(**batch, **generate_kwargs)
        sequences = generated.sequences if hasattr(generated, "sequences") else generated
        texts_out = decode_extended_batch(
            sequences, [encoded["source_words"][i] for i in indices], tokenizer, output_vocab_size, n_returns
        )
        for k, i in enumerate(indices):
            results[i] = texts_out[k * n_returns : (k + 1) * n_returns]
    return [text for group in results for text in group]


def evaluate_model(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    dataset: datasets.Dataset,
    task: Seq2SeqCorpusTask,
    batch_size: int = 64,
    max_source_length: int | None = None,
    **generate_kwargs: Any,
) -> tuple[dict[str, float], list[str]]:
    """Generate for every source of ``dataset`` and score against its targets; returns (scores, outputs)."""
    from .tokenization import word_tokenize

    sources = [_text(s) for s in dataset[task.source_column]]
    predictions = generate_texts(model, tokenizer, sources, batch_size, max_source_length, **generate_kwargs)
    references = [" ".join(word_tokenize(tokenizer, _text(t))) for t in dataset[task.target_column]]
    return task.score(predictions, references, sources), predictions


# ---------------------------------------------------------------- CLI
#: the --quick settings: a step budget, evaluation every eval_steps on a validation subset
QUICK_SETTINGS = {"max_steps": 150, "eval_steps": 75, "max_validation_examples": 256}


THREADS_HELP = "torch CPU threads (default 1: these small RNNs gain little from more; 0 = torch's default)"


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    train = subparsers.add_parser("train", help="train a seq2seq model on a corpus (Seq2SeqTrainer)")
    train.add_argument("--corpus", required=True, help=f"one of {sorted(SEQ2SEQ_TASKS)}")
    train.add_argument("--config", default=None, help="corpus config (default: the task's)")
    train.add_argument("--preset", required=True, help="model preset name (hf_querygen.presets.PRESETS)")
    train.add_argument("--output-dir", type=Path, required=True)
    train.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_SETTINGS}")
    train.add_argument("--max-steps", type=int, default=None, help="stop after this many optimiser steps")
    train.add_argument("--epochs", type=float, default=None, help="override the preset's epochs")
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    train.add_argument("--vocab-size", type=int, default=None, help="cap on the whole vocabulary")
    train.add_argument(
        "--output-vocab-size", type=int, default=None, help="decoder vocabulary (default all targets)"
    )
    train.add_argument("--min-frequency", type=int, default=1)
    train.add_argument("--max-source-length", type=int, default=64)
    train.add_argument("--max-target-length", type=int, default=16)
    train.add_argument("--num-beams", type=int, default=1, help="saved generation config")
    train.add_argument("--keep-checkpoints", action="store_true", help="keep checkpoint-* folders")
    train.add_argument(
        "--group-by-length",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="batch examples of similar source length (faster; default on)",
    )
    train.add_argument(
        "--chinese-segmentation", action="store_true", help="segment words with jieba (zh extra)"
    )
    train.add_argument("--threads", type=int, default=1, help=THREADS_HELP)
    train.set_defaults(func=_train_command)

    evaluate = subparsers.add_parser("evaluate", help="score a trained model on a corpus split (JSON out)")
    evaluate.add_argument("--model", type=Path, required=True, help="folder written by `train`")
    evaluate.add_argument("--corpus", default=None, help="default: the corpus the model was trained on")
    evaluate.add_argument("--config", default=None)
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--data-dir", type=Path, default=None)
    evaluate.add_argument("--num-beams", type=int, default=None, help="default: the saved generation config")
    evaluate.add_argument("--batch-size", type=int, default=64)
    evaluate.add_argument("--limit", type=int, default=None, help="score only the first N examples")
    evaluate.add_argument("--predictions", type=Path, default=None, help="also write outputs (JSON lines)")
    evaluate.add_argument("--threads", type=int, default=1, help=THREADS_HELP)
    evaluate.set_defaults(func=_evaluate_command)

    generate = subparsers.add_parser("generate", help="generate from texts with a trained model")
    generate.add_argument("--model", type=Path, required=True)
    generate.add_argument("texts", nargs="+")
    generate.add_argument("--num-beams", type=int, default=None)
    generate.add_argument("--num-return-sequences", type=int, default=1)
    generate.add_argument("--max-new-tokens", type=int, default=None)
    generate.add_argument("--threads", type=int, default=1, help=THREADS_HELP)
    generate.set_defaults(func=_generate_command)


def model_copies(config) -> bool:
    """Whether the model's labels live in the extended (copy) space."""
    copy = getattr(config, "copy", None)
    if copy is not None:
        return str(copy).lower() not in ("none", "false", "")
    return bool(getattr(config, "uses_copy", False))


def train_on_corpus(
    corpus: str,
    preset: str,
    output_dir: str | Path,
    config_name: str | None = None,
    data_dir: str | Path | None = None,
    seed: int = 42,
    quick: bool = False,
    max_steps: int | None = None,
    epochs: float | None = None,
    vocab_size: int | None = None,
    output_vocab_size: int | None = None,
    min_frequency: int = 1,
    max_source_length: int = 64,
    max_target_length: int = 16,
    num_beams: int = 1,
    keep_checkpoints: bool = False,
    chinese_segmentation: bool = False,
    group_by_length: bool = True,
) -> dict[str, Any]:
    """Corpus -> tokenizer -> preset model -> Seq2SeqTrainer; returns (and saves) the run's metadata.

    The tokenizer is trained on the TRAIN split only (targets first, so the output vocabulary is the
    frequent target words); the validation split drives early stopping and the reported metrics.
    """
    import shutil

    import torch
    from transformers import AutoModelForSeq2SeqLM, set_seed

    from .corpora import load_corpus
    from .presets import PRESETS, TRAINING_PRESETS, config_from_preset
    from .tasks.seq2seq import encode_seq2seq
    from .tokenization import train_word_tokenizer

    task = get_seq2seq_task(corpus)
    if preset not in PRESETS:
        raise ValueError(f"Unknown model preset {preset!r}; available: {sorted(PRESETS)}")
    if PRESETS[preset]["model_type"] != "rnn_seq2seq":
        # the dual decoder needs pointer/generator targets (tasks.nl2kw.encode_nl2kw(mode="dual")), the
        # tagger BIO labels: both are trained by their reproductions, not by this generic path
        raise ValueError(
            f"`train` fits rnn_seq2seq presets; {preset!r} is a {PRESETS[preset]['model_type']!r} model, "
            "trained by `hf-querygen reproduce liu2018` / `lin2017`"
        )
    config_name = config_name or task.default_config
    started = time.perf_counter()
    set_seed(seed)
    splits = load_corpus(corpus, config_name, data_dir=data_dir)
    for split in ("train", "validation"):
        if split not in splits:
            raise ValueError(f"corpus {corpus!r} config {config_name!r} has no {split!r} split")
    train_split, validation_split = splits["train"], splits["validation"]
    if quick and len(validation_split) > QUICK_SETTINGS["max_validation_examples"]:
        validation_split = validation_split.select(range(QUICK_SETTINGS["max_validation_examples"]))

    tokenizer = train_word_tokenizer(
        [_text(s) for s in train_split[task.source_column]],
        target_texts=[_text(t) for t in train_split[task.target_column]],
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        output_vocab_size=output_vocab_size,
        chinese_segmentation=chinese_segmentation,
    )
    output_vocab = int(tokenizer.init_kwargs["output_vocab_size"])
    model_config = config_from_preset(
        preset,
        vocab_size=len(tokenizer),
        output_vocab_size=output_vocab,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        unk_token_id=tokenizer.unk_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
    )
    model = AutoModelForSeq2SeqLM.from_config(model_config)
    copy = model_copies(model_config)
    encode = dict(
        tokenizer=tokenizer,
        source_column=task.source_column,
        target_column=task.target_column,
        output_vocab_size=output_vocab,
        max_source_length=max_source_length,
        max_target_length=max_target_length,
        copy=copy,
    )
    train_encoded = encode_seq2seq(train_split, **encode)
    validation_encoded = encode_seq2seq(validation_split, **encode)

    overrides: dict[str, Any] = {"seed": seed, "data_seed": seed}
    steps = max_steps if max_steps is not None else (QUICK_SETTINGS["max_steps"] if quick else None)
    if steps is not None:
        eval_steps = QUICK_SETTINGS["eval_steps"] if quick else max(steps // 5, 1)
        overrides.update(max_steps=steps, eval_strategy="steps", save_strategy="steps")
        overrides.update(eval_steps=min(eval_steps, steps), save_steps=min(eval_steps, steps))
    if epochs is not None:
        overrides["num_train_epochs"] = epochs
    compute_metrics = make_compute_metrics(
        validation_encoded, tokenizer, output_vocab, task.source_column, task.target_column, task.score
    )
    trainer = train_seq2seq(
        model,
        tokenizer,
        train_encoded,
        validation_encoded,
        output_dir,
        training_preset=preset if preset in TRAINING_PRESETS else None,
        compute_metrics=compute_metrics,
        max_new_tokens=max_target_length,
        num_beams=num_beams,
        group_by_length=group_by_length,
        **overrides,
    )
    # the restored best model's evaluation is already in the log: no second pass over validation
    evaluations = [log for log in trainer.state.log_history if "eval_loss" in log]
    validation_metrics = min(evaluations, key=lambda log: log["eval_loss"]) if evaluations else {}
    train_losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    metadata = {
        "corpus": corpus,
        "config": config_name,
        "preset": preset,
        "model_type": model_config.model_type,
        "seed": seed,
        "quick": quick,
        "copy": copy,
        "source_column": task.source_column,
        "target_column": task.target_column,
        "max_source_length": max_source_length,
        "max_target_length": max_target_length,
        "vocab_size": len(tokenizer),
        "output_vocab_size": output_vocab,
        "train_examples": len(train_split),
        "validation_examples": len(validation_split),
        "global_steps": trainer.state.global_step,
        "group_by_length": group_by_length,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "first_logged_train_loss": train_losses[0] if train_losses else None,
        "last_logged_train_loss": train_losses[-1] if train_losses else None,
        "validation": {k: float(v) for k, v in validation_metrics.items() if isinstance(v, int | float)},
        "seconds": round(time.perf_counter() - started, 1),
        "torch_threads": torch.get_num_threads(),
    }
    Path(output_dir, TRAINING_METADATA_FILE).write_text(
        json.dumps(metadata, indent=2) + "\n", encoding="utf-8"
    )
    if not keep_checkpoints:
        for checkpoint in Path(output_dir).glob("checkpoint-*"):
            shutil.rmtree(checkpoint)
    return metadata


def load_trained(model_dir: str | Path):
    """(model, tokenizer, metadata) from a folder written by ``hf-querygen train``."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import hf_querygen  # noqa: F401  (registers our model types with the Auto classes)

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} holds no trained model (no config.json)")
    metadata_path = model_dir / TRAINING_METADATA_FILE
    metadata = json.loads(metadata_path.read_text(encoding="utf-8")) if metadata_path.is_file() else {}
    return (
        AutoModelForSeq2SeqLM.from_pretrained(model_dir),
        AutoTokenizer.from_pretrained(model_dir),
        metadata,
    )


def _set_threads(threads: int) -> None:
    # measured on the 2-core dev machine under load: the quick nl2kw job took 5.5 CPU-minutes with
    # torch's 2 threads and under 2 with one (thread synchronisation dominates at these sizes)
    if threads > 0:
        import torch

        torch.set_num_threads(threads)


def _train_command(args: argparse.Namespace) -> int:
    import contextlib
    import sys

    _set_threads(args.threads)
    # Trainer prints its logs to stdout; keep stdout for the JSON result so that it can be piped
    with contextlib.redirect_stdout(sys.stderr):
        metadata = train_on_corpus(
            args.corpus,
            args.preset,
            args.output_dir,
            config_name=args.config,
            data_dir=args.data_dir,
            seed=args.seed,
            quick=args.quick,
            max_steps=args.max_steps,
            epochs=args.epochs,
            vocab_size=args.vocab_size,
            output_vocab_size=args.output_vocab_size,
            min_frequency=args.min_frequency,
            max_source_length=args.max_source_length,
            max_target_length=args.max_target_length,
            num_beams=args.num_beams,
            keep_checkpoints=args.keep_checkpoints,
            chinese_segmentation=args.chinese_segmentation,
            group_by_length=args.group_by_length,
        )
    print(json.dumps(metadata, indent=2))
    return 0


def _evaluate_command(args: argparse.Namespace) -> int:
    from .corpora import load_corpus

    _set_threads(args.threads)
    model, tokenizer, metadata = load_trained(args.model)
    corpus = args.corpus or metadata.get("corpus")
    if corpus is None:
        raise SystemExit(f"{args.model} has no {TRAINING_METADATA_FILE}: pass --corpus")
    task = get_seq2seq_task(corpus)
    config_name = args.config or (metadata.get("config") if corpus == metadata.get("corpus") else None)
    config_name = config_name or task.default_config
    splits = load_corpus(corpus, config_name, data_dir=args.data_dir)
    if args.split not in splits:
        raise SystemExit(f"corpus {corpus!r} has no split {args.split!r}; splits: {list(splits)}")
    dataset = splits[args.split]
    if args.limit is not None:
        dataset = dataset.select(range(min(args.limit, len(dataset))))
    generate_kwargs = {} if args.num_beams is None else {"num_beams": args.num_beams}
    started = time.perf_counter()
    scores, predictions = evaluate_model(
        model, tokenizer, dataset, task, args.batch_size, metadata.get("max_source_length"), **generate_kwargs
    )
    result = {
        "model": str(args.model),
        "corpus": corpus,
        "config": config_name,
        "split": args.split,
        "examples": len(dataset),
        "num_beams": args.num_beams or model.generation_config.num_beams,
        "seconds": round(time.perf_counter() - started, 1),
        "metrics": scores,
    }
    if args.predictions is not None:
        with open(args.predictions, "w", encoding="utf-8") as handle:
            for source, prediction in zip(dataset[task.source_column], predictions, strict=True):
                handle.write(json.dumps({"source": _text(source), "prediction": prediction}) + "\n")
    print(json.dumps(result, indent=2))
    return 0


def _generate_command(args: argparse.Namespace) -> int:
    _set_threads(args.threads)
    model, tokenizer, metadata = load_trained(args.model)
    generate_kwargs: dict[str, Any] = {"num_return_sequences": args.num_return_sequences}
    if args.num_beams is not None:
        generate_kwargs["num_beams"] = args.num_beams
    if args.max_new_tokens is not None:
        generate_kwargs["max_new_tokens"] = args.max_new_tokens
    if args.num_return_sequences > max(args.num_beams or model.generation_config.num_beams or 1, 1):
        raise SystemExit("--num-return-sequences cannot exceed --num-beams (beam search returns its beams)")
    outputs = generate_texts(
        model, tokenizer, args.texts, max_source_length=metadata.get("max_source_length"), **generate_kwargs
    )
    for output in outputs:
        print(output)
    return 0
