"""The stock ``Seq2SeqTrainer`` set up for the library's models: training arguments from a paper's preset,
bucketed batches, early stopping, log and time-limit callbacks, generation scores at evaluation, resuming."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..specs import FAMILY_FIELD

if TYPE_CHECKING:  # torch/transformers/datasets cost seconds at import
    import datasets
    from transformers import (
        PreTrainedModel,
        PreTrainedTokenizerFast,
        Seq2SeqTrainer,
        Seq2SeqTrainingArguments,
    )


# ---------------------------------------------------------------- training arguments
#: defaults: plain Adam at a constant rate (as the papers train), early stopping on validation loss
DEFAULT_TRAINING_ARGUMENTS: dict[str, Any] = {
    "learning_rate": 1e-3,
    "per_device_train_batch_size": 64,
    "per_device_eval_batch_size": 64,
    "max_grad_norm": 5.0,
    "num_train_epochs": 20,
    "optim": "adamw_torch_fused",  # the same update as adamw_torch, one kernel (presets._ADAM)
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
        # a BERT tokenizer has no [EOS]: the model's own end token ([SEP] for a warm-started BERT2BERT)
        eos_token_id=tokenizer.eos_token_id
        if tokenizer.eos_token_id is not None
        else getattr(model.config, "eos_token_id", None),
        pad_token_id=tokenizer.pad_token_id,
        decoder_start_token_id=getattr(model.config, "decoder_start_token_id", None)
        or tokenizer.bos_token_id,
    )


def text_generation_scores(
    predictions: Sequence[str], references: Sequence[str], sources: Sequence[str]
) -> dict[str, float]:
    """Exact match and corpus BLEU-4: generic scores for any generated text."""
    from ..metrics.exact_match import exact_match
    from ..metrics.sacrebleu_metric import corpus_bleu

    return {
        "exact_match": float(exact_match(predictions, references)["exact_match"]),
        "bleu": float(corpus_bleu(predictions, references)["bleu"]),
    }


def make_compute_metrics(
    eval_dataset: datasets.Dataset,
    tokenizer: PreTrainedTokenizerFast,
    output_vocab_size: int,
    source_column: str,
    target_column: str,
    score: Callable[[Sequence[str], Sequence[str], Sequence[str]], dict[str, float]] | None = None,
) -> Callable:
    """A ``compute_metrics`` for ``Seq2SeqTrainer(predict_with_generate=True)``.

    Generated ids are decoded with the copy-aware :func:`decode_extended` using the encoded
    ``source_words`` of ``eval_dataset`` (the Trainer evaluates in dataset order); references are the
    raw target texts in the tokenizer's normalised words, untruncated.
    """
    from ..tasks.seq2seq import decode_extended_batch
    from ..tokenization import word_tokenize

    source_words = eval_dataset["source_words"]
    sources = [_text(s) for s in eval_dataset[source_column]]
    references = [" ".join(word_tokenize(tokenizer, _text(t))) for t in eval_dataset[target_column]]

    def compute_metrics(eval_prediction) -> dict[str, float]:
        generated = eval_prediction.predictions
        if isinstance(generated, tuple):
            generated = generated[0]
        predictions = decode_extended_batch(generated, source_words, tokenizer, output_vocab_size)
        return (score or text_generation_scores)(predictions, references, sources)

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


class LogFileCallback:
    """A ``TrainerCallback`` that appends every Trainer log (losses, evaluations) as a JSON line to
    ``path``, tagged with ``run``; when given to :func:`train_seq2seq` it replaces the console printer,
    so a long experiment prints progress bars and tables, not hundreds of log dicts."""

    def __init__(self, path: str | Path, run: str = ""):
        self.path = Path(path)
        self.run = run

    def __getattr__(self, name: str):
        if name.startswith("on_"):  # every other TrainerCallback event: nothing to do
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            entry = {"run": self.run, "step": state.global_step, **(logs or {})}
            handle.write(json.dumps(entry, default=str) + "\n")


class quiet_console:
    """Send transformers' log records and Python warnings to ``log_file`` instead of the console while a
    stage runs, and hide transformers' own progress bars ("Loading weights", "Writing model shards").
    The Trainer's log dicts are kept off the console by :class:`LogFileCallback`; a user still sees our
    progress bars and summaries. Re-entrant use nests (each level restores what it found)."""

    def __init__(self, log_file: str | Path):
        self.log_file = Path(log_file)

    def __enter__(self) -> quiet_console:
        import logging

        from transformers.utils import logging as hf_logging

        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.handler = logging.FileHandler(self.log_file, encoding="utf-8")
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        self.loggers = [hf_logging.get_logger(), logging.getLogger("py.warnings")]
        self.saved = [(lg.level, lg.propagate, list(lg.handlers)) for lg in self.loggers]
        for logger in self.loggers:
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.addHandler(self.handler)
            logger.propagate = False
        self.loggers[0].setLevel(logging.INFO)
        self.showwarning = warnings.showwarning
        logging.captureWarnings(True)  # warnings.warn -> the "py.warnings" logger
        self.bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        return self

    def __exit__(self, *exc: Any) -> bool:
        import logging

        from transformers.utils import logging as hf_logging

        if warnings.showwarning is not self.showwarning:  # this level started the capture
            logging.captureWarnings(False)
            warnings.showwarning = self.showwarning
        for logger, (level, propagate, handlers) in zip(self.loggers, self.saved, strict=True):
            logger.removeHandler(self.handler)
            for handler in handlers:
                logger.addHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
        if self.bars:
            hf_logging.enable_progress_bar()
        self.handler.close()
        return False


def _bar_only_progress_callback() -> type:
    """transformers' ``ProgressCallback`` without its ``on_log``, which writes every log dict under the
    bar: with :class:`LogFileCallback` those dicts go to the log file and the console keeps the bar."""
    from transformers.trainer_callback import ProgressCallback

    class BarOnlyProgressCallback(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            return None

    return BarOnlyProgressCallback


class TimeLimitCallback:
    """A ``TrainerCallback`` that ends training once ``seconds`` of wall-clock time have passed since
    ``on_train_begin``: the last stretch is evaluated and saved, so ``load_best_model_at_end`` still
    restores the best checkpoint by the validation metric (training for the time one has)."""

    def __init__(self, seconds: float):
        if seconds <= 0:
            raise ValueError(f"time limit must be > 0 seconds, got {seconds}")
        self.seconds = seconds
        self.deadline: float | None = None

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_train_begin(self, args, state, control, **kwargs):
        self.deadline = time.monotonic() + self.seconds

    def on_step_end(self, args, state, control, **kwargs):
        if self.deadline is not None and time.monotonic() >= self.deadline:
            control.should_training_stop = True
            control.should_evaluate = args.eval_strategy != "no"
            control.should_save = True
        return control


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


def _with_generation_scores(trainer_class: type, score_model: Callable[[PreTrainedModel], dict[str, float]]):
    """``trainer_class`` whose evaluation also decodes: ``score_model(model)`` (e.g. the task's ROUGE on
    the validation split, decoded as ``Task.predict`` decodes) is added to the ``eval_*`` metrics before
    the Trainer logs them, picks the best checkpoint and runs early stopping, so both can follow a
    generation metric instead of the validation loss."""

    class GenerationScoredTrainer(trainer_class):
        def evaluation_loop(self, *args, **kwargs):
            output = super().evaluation_loop(*args, **kwargs)
            prefix = kwargs.get("metric_key_prefix", args[4] if len(args) > 4 else "eval")
            if prefix == "eval":
                was_training = self.model.training
                scores = score_model(self.model)
                self.model.train(was_training)
                output.metrics.update({f"eval_{key}": float(value) for key, value in scores.items()})
            return output

    return GenerationScoredTrainer


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
    resume_from_checkpoint: bool | str | None = None,
    data_collator: Any | None = None,
    score_model: Callable[[PreTrainedModel], dict[str, float]] | None = None,
    compute_loss_func: Callable | None = None,
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
        resume_from_checkpoint: continue from the last ``checkpoint-*`` in ``output_dir`` (``True``; a
            fresh start when there is none) or from the given checkpoint folder.
        data_collator: batches the encoded examples (default: the flat :class:`Seq2SeqCollator`; a
            task with nested inputs passes its own, ``Task.collator``). A collator that reads dataset
            columns the model's ``forward`` does not take names them all in its ``columns`` attribute:
            the Trainer would otherwise drop them before the collator sees them (its
            ``remove_unused_columns``); the datasets are then narrowed to those columns instead.
        score_model: model -> scores, run at every evaluation and logged as ``eval_<name>`` (so
            ``metric_for_best_model`` may name one of them: selection and early stopping on it).
        compute_loss_func: the Trainer's ``(outputs, labels, num_items_in_batch) -> loss`` instead of the
            model's own loss (a task's objective: :meth:`hf_querygen.tasks.base.Task.loss_function`).
        **training_args: any ``Seq2SeqTrainingArguments`` field; overrides the preset and defaults.

    Returns:
        the trainer after ``train()``; the model in it is the best one, already saved with the
        tokenizer and generation config in ``output_dir``.
    """
    from transformers import EarlyStoppingCallback, Seq2SeqTrainer

    from ..tasks.seq2seq import Seq2SeqCollator

    collator_columns = getattr(data_collator, "columns", None)
    if collator_columns:
        train_dataset = _collator_columns(train_dataset, collator_columns)
        eval_dataset = _collator_columns(eval_dataset, collator_columns) if eval_dataset is not None else None
        training_args = {**training_args, "remove_unused_columns": False}
    args = _seq2seq_arguments(
        output_dir,
        training_preset,
        training_args,
        eval_dataset is not None,
        compute_metrics is not None,
        num_beams,
    )
    if eval_dataset is None:
        early_stopping_patience = None
    configure_generation(model, tokenizer, max_new_tokens, num_beams)
    all_callbacks = list(callbacks or [])
    if early_stopping_patience:
        all_callbacks.append(EarlyStoppingCallback(early_stopping_patience=early_stopping_patience))
    trainer_class = _bucketed_trainer_class() if group_by_length else Seq2SeqTrainer
    if score_model is not None:
        trainer_class = _with_generation_scores(trainer_class, score_model)
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=data_collator or Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id),
        compute_metrics=compute_metrics,
        callbacks=all_callbacks,
        compute_loss_func=compute_loss_func,
    )
    if any(isinstance(callback, LogFileCallback) for callback in all_callbacks):
        _log_to_file_only(trainer)
    resume_from_checkpoint = _checkpoint_to_resume(resume_from_checkpoint, output_dir, model)
    from ..nn.dropout import mask_dropout_training

    with mask_dropout_training(model):  # CPU dropout masks drawn cheaply (hf_querygen.nn.dropout)
        trainer.train(resume_from_checkpoint=resume_from_checkpoint or None)
    trainer.save_model(str(output_dir))  # best model (load_best_model_at_end) + tokenizer + generation config
    trainer.save_state()
    return trainer


def _collator_columns(dataset: datasets.Dataset, columns: Sequence[str]) -> datasets.Dataset:
    """``dataset`` narrowed to the ``columns`` a collator reads (those it holds)."""
    kept = [column for column in dataset.column_names if column in columns]
    if "input_ids" not in kept:
        raise ValueError(f"the collator reads {list(columns)}; the dataset has {dataset.column_names}")
    return dataset.select_columns(kept)


def _seq2seq_arguments(
    output_dir: str | Path,
    training_preset: str | Mapping[str, Any] | None,
    training_args: Mapping[str, Any],
    has_eval: bool,
    with_metrics: bool,
    num_beams: int,
) -> Seq2SeqTrainingArguments:
    """The ``Seq2SeqTrainingArguments`` of :func:`train_seq2seq`: defaults, then the preset, then the
    caller's fields; no evaluation (nor best-model reload) without an eval set."""
    import torch
    from transformers import Seq2SeqTrainingArguments

    if isinstance(training_preset, str):
        from ..presets import training_arguments_from_preset

        training_preset = training_arguments_from_preset(training_preset)
    arguments = {
        **DEFAULT_TRAINING_ARGUMENTS,
        **(training_preset or {}),
        **training_args,
        "output_dir": str(output_dir),
        "predict_with_generate": with_metrics,
        "generation_max_length": None,
        "generation_num_beams": num_beams,
    }
    arguments.setdefault(
        "dataloader_pin_memory", torch.cuda.is_available()
    )  # pinning warns on CPU-only hosts
    if not has_eval:
        arguments.update(eval_strategy="no", load_best_model_at_end=False)
    if arguments.get("max_steps", -1) > 0 and arguments["eval_strategy"] == "epoch" and has_eval:
        raise ValueError(
            "with max_steps, evaluate every eval_steps: pass eval_strategy='steps' and eval_steps"
        )
    return Seq2SeqTrainingArguments(**arguments)


def _log_to_file_only(trainer: Seq2SeqTrainer) -> None:
    """Drop the Trainer's printed log dicts (a log file records them); a terminal run keeps its bar."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(_bar_only_progress_callback())


def _checkpoint_to_resume(
    resume_from_checkpoint: bool | str | None, output_dir: str | Path, model: PreTrainedModel
) -> bool | str | None:
    """``True`` -> the last checkpoint in ``output_dir`` (None when there is none); a checkpoint is
    checked against the model before training resumes from it."""
    if resume_from_checkpoint is True:
        from transformers.trainer_utils import get_last_checkpoint

        resume_from_checkpoint = get_last_checkpoint(str(output_dir)) if Path(output_dir).is_dir() else None
    if resume_from_checkpoint:
        check_resumable_checkpoint(resume_from_checkpoint, model.config)
    return resume_from_checkpoint


#: config fields that may differ between a checkpoint and the same model rebuilt (bookkeeping)
#: config.json fields that say how the folder was saved, not what the model is (the remote-code
#: additions of hf_querygen.hub_code included)
_VOLATILE_CONFIG_FIELDS = {
    "transformers_version",
    "_name_or_path",
    "architectures",
    "dtype",
    "torch_dtype",
    "auto_map",
    # the remote code files' hashes, recorded by save_pretrained beside auto_map (model_folder)
    "hf_querygen_code_sha256",
    "custom_pipelines",
    FAMILY_FIELD,
}


def check_resumable_checkpoint(checkpoint: str | Path, config: Any) -> None:
    """Refuse to resume from ``checkpoint`` when it cannot continue this training exactly: its
    optimizer state is missing (the optimizer would restart silently) or the model config differs
    (the weights would be loaded into another model, or fail deep inside torch)."""
    checkpoint = Path(checkpoint)
    fix = f"delete {checkpoint.parent} to train from scratch, or train into another --output-dir"
    if not (checkpoint / "optimizer.pt").is_file():
        raise InvalidInputError(
            f"cannot resume from {checkpoint}: it has no optimizer.pt (resuming would restart the "
            f"optimizer from scratch); {fix}"
        )
    saved_path = checkpoint / "config.json"
    try:
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InvalidInputError(
            f"cannot resume from {checkpoint}: config.json is unreadable ({err}); {fix}"
        ) from err
    # save_pretrained writes the fields that differ from the defaults: compare like with like
    current = json.loads(config.to_json_string(use_diff=True))
    changed = sorted(
        name
        for name in set(saved) | set(current)
        if name not in _VOLATILE_CONFIG_FIELDS and saved.get(name) != current.get(name)
    )
    if changed:
        shown = "; ".join(
            f"{name}: {saved.get(name)!r} in the checkpoint, {current.get(name)!r} now"
            for name in changed[:5]
        )
        raise InvalidInputError(
            f"cannot resume from {checkpoint}: the model config changed ({shown}"
            f"{'; ...' if len(changed) > 5 else ''}); {fix}"
        )
