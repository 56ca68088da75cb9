"""Training glue around the stock ``Seq2SeqTrainer`` (no training loop of our own).

* :func:`train_seq2seq`: ``Seq2SeqTrainingArguments`` from a paper's training preset, early stopping on
  the validation loss (``EarlyStoppingCallback`` + ``load_best_model_at_end``), bucketed batches,
  resuming from the last checkpoint, the generation config set deliberately before saving;
* :func:`train_preset`: one preset of a task on prepared task data (config sized by the task, the
  task's encoding for the model family) -- what ``hf-querygen train`` and the experiment runner call;
* :func:`save_model_folder`: model + tokenizer + generation config + training metadata + model card,
  written to a temporary folder and renamed (a folder either is complete or does not exist);
* :func:`train_model`: corpus -> task data -> :func:`train_preset` -> :func:`save_model_folder`.

Decoding lives in :mod:`hf_querygen.inference` and the tasks' ``predict``; the CLI in
:mod:`hf_querygen.commands`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model_folder import TOKENIZER_FINGERPRINT_KEY, tokenizer_fingerprint
from .specs import FAMILY_FIELD
from .utils import TRAINING_METADATA_FILE

if TYPE_CHECKING:  # torch/transformers/datasets cost seconds at import
    import datasets
    from transformers import PreTrainedModel, PreTrainedTokenizerFast, Seq2SeqTrainer

    from .tasks.base import Task, TaskData

#: the .hf_querygen marker kind of a model folder written by save_model_folder (see hf_querygen._fs)
MODEL_FOLDER_KIND = "model"
#: file written beside a trained model: the Trainer's log history (training loss, every evaluation)
LOG_HISTORY_FILE = "log_history.json"


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


def text_generation_scores(
    predictions: Sequence[str], references: Sequence[str], sources: Sequence[str]
) -> dict[str, float]:
    """Exact match and corpus BLEU-4: generic scores for any generated text."""
    from .metrics.exact_match import exact_match
    from .metrics.sacrebleu_metric import corpus_bleu

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
            task with nested inputs passes its own, ``Task.collator``).
        score_model: model -> scores, run at every evaluation and logged as ``eval_<name>`` (so
            ``metric_for_best_model`` may name one of them: selection and early stopping on it).
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
    )
    if any(isinstance(callback, LogFileCallback) for callback in all_callbacks):
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
    if resume_from_checkpoint is True:
        from transformers.trainer_utils import get_last_checkpoint

        resume_from_checkpoint = get_last_checkpoint(str(output_dir)) if Path(output_dir).is_dir() else None
    if resume_from_checkpoint:
        check_resumable_checkpoint(resume_from_checkpoint, model.config)
    trainer.train(resume_from_checkpoint=resume_from_checkpoint or None)
    trainer.save_model(str(output_dir))  # best model (load_best_model_at_end) + tokenizer + generation config
    trainer.save_state()
    return trainer


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
    "custom_pipelines",
    FAMILY_FIELD,
}


def check_resumable_checkpoint(checkpoint: str | Path, config: Any) -> None:
    """Refuse to resume from ``checkpoint`` when it cannot continue this training exactly: its
    optimizer state is missing (the optimizer would restart silently) or the model config differs
    (the weights would be loaded into another model, or fail deep inside torch)."""
    from .errors import InvalidInputError

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


# ---------------------------------------------------------------- presets on task data
def model_for_config(config: Any) -> PreTrainedModel:
    """A freshly initialised model for ``config`` through the Auto classes (encoder-decoders:
    ``AutoModelForSeq2SeqLM``, the rest ``AutoModelForTokenClassification``); seed first."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForTokenClassification

    from ._registration import register_all

    register_all()
    auto = (
        AutoModelForSeq2SeqLM
        if getattr(config, "is_encoder_decoder", False)
        else AutoModelForTokenClassification
    )
    return auto.from_config(config)


def train_preset(
    data: TaskData,
    preset: str,
    output_dir: str | Path,
    *,
    seed: int = 42,
    preset_overrides: Mapping[str, Any] | None = None,
    training_preset: str | None = None,
    training_overrides: Mapping[str, Any] | None = None,
    early_stopping_patience: int | None = 3,
    group_by_length: bool = True,
    resume: bool = False,
    callbacks: Sequence | None = None,
    pretrain_on: str | None = None,
    pretrain_steps: int = 400,
    word_vectors: str | None = None,
    freeze_embeddings: bool = False,
    select_on: str | None = None,
    selection_decoding: Mapping[str, Any] | None = None,
) -> Seq2SeqTrainer:
    """Train model ``preset`` on ``data`` (a :class:`~hf_querygen.tasks.base.TaskData`) with the stock
    ``Seq2SeqTrainer``; checkpoints and the best model go to ``output_dir``.

    ``word_vectors``: a name of ``task.word_vectors`` loaded into the shared input embeddings before
    training (``freeze_embeddings``: kept fixed). ``pretrain_on``: a name of ``task.pretraining_data``;
    the model first trains ``pretrain_steps`` steps on those pairs (same trainer, same training
    arguments, no evaluation; the result is kept in ``output_dir/pretrained`` so a resumed run skips it),
    then trains on ``data``'s TRAIN split as usual (early stopping on validation).

    The model config is ``data.task.model_config(preset, data, **preset_overrides)``; the training
    arguments are :data:`DEFAULT_TRAINING_ARGUMENTS` < the training preset (``training_preset``, else
    the preset's own name when it has one) < ``training_overrides`` (any ``Seq2SeqTrainingArguments``
    field). The train / validation splits are the task's encoding for the config's model family.
    ``resume`` continues from the last checkpoint in ``output_dir``. ``select_on``: a score of
    ``task.score`` (e.g. ``"ROUGE-L"`` for k2q, ``"rougeL_recall"`` for q2id) or ``"rouge_goal"`` (the
    mean of ROUGE-1 recall, ROUGE-L recall and ROUGE-L F1): every evaluation then also decodes the
    VALIDATION split with ``task.predict`` (keyword arguments ``selection_decoding``), and the best
    checkpoint and early stopping follow that score instead of the validation loss.
    Returns the trainer (its model is the best one, in eval mode).
    """
    from transformers import set_seed

    from .presets import TRAINING_PRESETS, check_config_overrides

    check_config_overrides(preset, preset_overrides or {}, what="preset_overrides (--set)")
    task = data.task
    set_seed(seed)
    config = task.model_config(preset, data, **dict(preset_overrides or {}))
    model = model_for_config(config)
    if word_vectors is not None:
        from .tasks.nl2kw_resources import load_word_vectors

        embedding = model.get_input_embeddings()
        vectors = task.word_vectors(word_vectors, data, embedding.weight.shape[1])
        load_word_vectors(embedding, data.tokenizer.get_vocab(), vectors, freeze=freeze_embeddings)
    elif freeze_embeddings:
        raise ValueError("freeze_embeddings needs word_vectors (frozen random embeddings are not a system)")
    family = task.family_of(config)
    encoded = data.encoded(family)
    training_name = training_preset or (preset if preset in TRAINING_PRESETS else None)
    arguments = dict(TRAINING_PRESETS.get(training_name)) if training_name else {}
    overrides = {"seed": seed, "save_total_limit": 1, **dict(training_overrides or {})}
    score_model = None
    if select_on is not None:
        if "validation" not in data.splits:
            raise ValueError(f"select_on={select_on!r} needs a validation split")
        score_model = _validation_scorer(data, select_on, selection_decoding or {})
        overrides.update(metric_for_best_model=select_on, greater_is_better=True)
    if pretrain_on is not None:
        _pretrain(
            model, data, family, pretrain_on, pretrain_steps, Path(output_dir) / "pretrained", arguments, seed
        )
    trainer = train_seq2seq(
        model,
        data.tokenizer,
        encoded["train"],
        encoded["validation"] if "validation" in encoded else None,
        output_dir,
        training_preset=arguments,
        max_new_tokens=task.max_new_tokens(data),
        early_stopping_patience=early_stopping_patience,
        callbacks=callbacks,
        group_by_length=group_by_length,
        resume_from_checkpoint=resume,
        data_collator=task.collator(data.tokenizer),
        label_names=["labels"],  # the joint model's optional tag_labels must not hide the eval loss
        score_model=score_model,
        **overrides,
    )
    trainer.model.eval()
    return trainer


#: ``select_on="rouge_goal"``: the mean of the three scores an intent description model is judged on
ROUGE_GOAL_METRICS = ("rouge1_recall", "rougeL_recall", "rougeL_f")


def _validation_scorer(
    data: TaskData, select_on: str, decoding: Mapping[str, Any]
) -> Callable[[PreTrainedModel], dict[str, float]]:
    """model -> the task's scores on the VALIDATION split (decoded by ``task.predict`` with ``decoding``),
    plus ``rouge_goal`` when the scores have ROUGE."""
    task, sources, references = data.task, data.sources("validation"), data.references("validation")

    def score(model: PreTrainedModel) -> dict[str, float]:
        outputs = task.predict(model, data.tokenizer, sources, **dict(decoding))
        scores = task.score(outputs, references, sources)
        if all(metric in scores for metric in ROUGE_GOAL_METRICS):
            scores["rouge_goal"] = sum(scores[m] for m in ROUGE_GOAL_METRICS) / len(ROUGE_GOAL_METRICS)
        if select_on not in scores:
            raise ValueError(f"select_on={select_on!r} is not one of the task's scores {sorted(scores)}")
        return scores

    return score


def _pretrain(
    model: PreTrainedModel,
    data: TaskData,
    family: str,
    name: str,
    steps: int,
    output_dir: Path,
    arguments: Mapping[str, Any],
    seed: int,
) -> None:
    """``train_preset(pretrain_on=...)``: ``steps`` steps of the stock trainer on the task's pretraining
    pairs, encoded exactly as TRAIN (same tokenizer, target order and output vocabulary); the weights
    are kept in ``output_dir`` and reloaded when it already holds them (resume)."""
    import datasets
    from safetensors.torch import load_file

    from .tasks.base import TaskData

    weights = output_dir / "model.safetensors"
    if weights.is_file():
        loaded = model.load_state_dict(load_file(str(weights)), strict=False)
        tied = set(getattr(model, "_tied_weights_keys", None) or ())  # tied tables are stored once
        missing = [key for key in loaded.missing_keys if key not in tied]
        if missing or loaded.unexpected_keys:
            raise ValueError(
                f"pretrained weights in {weights} do not fit the model (missing {missing}, unexpected "
                f"{loaded.unexpected_keys}); delete {output_dir} to pretrain again"
            )
        return
    if steps < 1:
        raise ValueError(f"pretrain_steps must be >= 1, got {steps}")
    pairs, _ = data.task.pretraining_data(name, data)
    extra = TaskData(data.task, datasets.DatasetDict(train=pairs), data.tokenizer, data.state)
    trainer = train_seq2seq(
        model,
        data.tokenizer,
        extra.encoded(family)["train"],
        None,
        output_dir / "checkpoints",
        training_preset=dict(arguments),
        max_new_tokens=data.task.max_new_tokens(data),
        group_by_length=True,
        data_collator=data.task.collator(data.tokenizer),
        label_names=["labels"],
        seed=seed,
        max_steps=steps,
        save_strategy="no",
        logging_steps=50,
    )
    trainer.model.save_pretrained(str(output_dir))
    import shutil

    shutil.rmtree(output_dir / "checkpoints", ignore_errors=True)


def save_model_folder(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    directory: str | Path,
    metadata: Mapping[str, Any],
    overwrite: bool = False,
    log_history: Sequence[Mapping[str, Any]] | None = None,
) -> Path:
    """Write a self-contained model folder: weights, config, generation config, tokenizer,
    ``hf_querygen_training.json`` (``metadata``), ``log_history.json`` (the Trainer's curves: training
    loss and every evaluation, when given) and a model card (README.md, :mod:`hf_querygen.hub`).

    Atomic: everything is written to a temporary sibling folder that is renamed at the end, so an
    interrupted run never leaves a half-written model. An existing folder is an error
    (:class:`~hf_querygen.errors.OutputExistsError`) unless ``overwrite`` and the library wrote it (then
    it is replaced only once the new one is complete); a folder holding anything else is never replaced.
    """
    from ._fs import atomic_output_dir
    from .hub import card_kwargs_from_training, render_model_card

    directory = Path(directory)
    # replaces only a model folder this library wrote (its .hf_querygen marker); see hf_querygen._fs
    with atomic_output_dir(directory, MODEL_FOLDER_KIND, overwrite, what="model") as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        recorded = {**dict(metadata), TOKENIZER_FINGERPRINT_KEY: tokenizer_fingerprint(tokenizer)}
        (staging / TRAINING_METADATA_FILE).write_text(
            json.dumps(recorded, indent=2, default=str) + "\n", encoding="utf-8"
        )
        if log_history is not None:  # what a plot of convergence needs
            (staging / LOG_HISTORY_FILE).write_text(
                json.dumps(list(log_history), indent=1, default=str) + "\n", encoding="utf-8"
            )
        render_model_card(model, **card_kwargs_from_training(staging)).save(staging / "README.md")
    return directory


def choose_decoding(
    model: PreTrainedModel, data: TaskData, base: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The decoding of ``task.decoding_grid`` (each entry on top of ``base``) with the best
    ``task.primary_metric`` on the VALIDATION split (ties: the earlier, simpler entry), and one row per
    entry (decoding, score). ``(base, [])`` for a task without a grid or data without validation."""
    task = data.task
    grid = tuple(getattr(task, "decoding_grid", ()) or ())
    if not grid or "validation" not in data.splits:
        return dict(base or {}), []
    sources = data.sources("validation")
    references = data.references("validation")
    rows = []
    for candidate in grid:
        decoding = {**dict(base or {}), **candidate}
        outputs = task.predict(model, data.tokenizer, sources, **decoding)
        rows.append(
            {
                "decoding": decoding,
                task.primary_metric: task.score(outputs, references, sources)[task.primary_metric],
            }
        )
    best = max(rows, key=lambda row: row[task.primary_metric])  # max keeps the first of equal scores
    return dict(best["decoding"]), rows


def data_fingerprint(data: TaskData) -> str:
    """sha1 over the prepared train and validation pairs (source, target) and the tokenizer's
    vocabulary: equal exactly when two trainings saw the same data (``train --system`` and
    ``reproduce --save-models`` both save it)."""
    import hashlib

    digest = hashlib.sha1()
    task = data.task
    for split in ("train", "validation"):
        if split not in data.splits:
            continue
        digest.update(f"[{split}]".encode())
        columns = data.splits[split][task.source_column], data.splits[split][task.reference_column]
        for source, target in zip(*columns, strict=True):
            digest.update(f"{source}\t{target}\n".encode())
    digest.update(json.dumps(sorted(data.tokenizer.get_vocab().items())).encode())
    return digest.hexdigest()


def _training_summary(trainer: Seq2SeqTrainer) -> dict[str, Any]:
    history = trainer.state.log_history
    evaluations = [log for log in history if "eval_loss" in log]
    losses = [log["loss"] for log in history if "loss" in log]
    best = min(evaluations, key=lambda log: log["eval_loss"]) if evaluations else {}
    selected_on = trainer.args.metric_for_best_model or "eval_loss"
    selected_on = selected_on if selected_on.startswith("eval_") else f"eval_{selected_on}"
    return {
        "global_steps": trainer.state.global_step,
        "epochs": trainer.state.epoch,
        "best_eval_loss": best.get("eval_loss"),
        # the checkpoint kept (load_best_model_at_end) is the best by this metric
        "selected_on": selected_on,
        "best_metric": trainer.state.best_metric,
        "best_checkpoint_step": _checkpoint_step(trainer.state.best_model_checkpoint),
        "evaluations": [
            {k: v for k, v in log.items() if k.startswith("eval_") or k in ("step", "epoch")}
            for log in evaluations
        ],
        "train_loss_curve": [
            [log["step"], log["loss"]] for log in history if "loss" in log and "step" in log
        ],
        "first_logged_train_loss": losses[0] if losses else None,
        "last_logged_train_loss": losses[-1] if losses else None,
    }


def _checkpoint_step(path: str | None) -> int | None:
    """``.../checkpoint-1200`` -> 1200."""
    if not path:
        return None
    tail = Path(path).name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


#: --quick for ``train``: a step budget and a validation subset (a smoke run, minutes on a CPU)
QUICK_SETTINGS = {"max_steps": 150, "eval_steps": 75, "max_validation_examples": 256}


def train_model(
    preset: str,
    output_dir: str | Path,
    *,
    task: str | Task | None = None,
    corpus: str | None = None,
    config_name: str | None = None,
    data_dir: str | Path | None = None,
    seed: int = 42,
    quick: bool = False,
    max_steps: int | None = None,
    epochs: float | None = None,
    max_train_examples: int | None = None,
    max_validation_examples: int | None = None,
    preset_overrides: Mapping[str, Any] | None = None,
    training_preset: str | None = None,
    training_overrides: Mapping[str, Any] | None = None,
    num_beams: int = 1,
    group_by_length: bool = True,
    overwrite: bool = False,
    resume: bool = False,
    evaluate_split: str | None = "validation",
    prepare_options: Mapping[str, Any] | None = None,
    train_options: Mapping[str, Any] | None = None,
    decoding: Mapping[str, Any] | None = None,
    splits: datasets.DatasetDict | None = None,
    early_stopping_patience: int | None = 3,
    extra_metadata: Mapping[str, Any] | None = None,
    time_limit: float | None = None,
) -> dict[str, Any]:
    """Corpus -> task data (tokenizer on TRAIN) -> :func:`train_preset` -> :func:`save_model_folder`.

    ``task`` defaults to the one task that trains on ``corpus`` (and ``corpus`` to the task's first).
    Checkpoints go to ``output_dir/../.<name>.checkpoints`` (kept for ``resume`` until the model folder
    is written). ``prepare_options`` go to ``Task.prepare``, ``train_options`` to :func:`train_preset`
    (a paper system's own, ``System.prepare_options`` / ``train_options``); ``decoding`` (a system's
    ``Task.predict`` keyword arguments) is saved as ``config.task_decoding``, the model's default
    decoding. ``splits``: the train / validation (and other) splits to train on instead of
    ``task.load(corpus)`` (a paper system's own data: :func:`hf_querygen.experiments.runner.training_recipe`);
    ``extra_metadata`` goes into the saved training JSON (e.g. the synthetic set's name, size and
    fingerprint). ``time_limit`` (seconds): stop training then (:class:`TimeLimitCallback`; the best
    checkpoint so far is kept as usual). Returns the metadata saved with the model, including the
    task's scores on ``evaluate_split`` (decoded by ``Task.predict``, as the pipeline does); the
    training curves (every logged loss and evaluation) are saved as ``log_history.json``.
    """
    import shutil

    import torch

    from ._fs import check_output_dir
    from .tasks.base import get_task, task_for_corpus

    output_dir = Path(output_dir)
    check_output_dir(output_dir, MODEL_FOLDER_KIND, overwrite, what="--output-dir")  # before any work
    from .presets import check_config_overrides

    check_config_overrides(preset, preset_overrides or {}, what="preset_overrides (--set)")
    task_object = get_task(task) if task is not None else task_for_corpus(corpus)
    corpus, config_name = task_object.resolve_corpus(corpus, config_name)
    started = time.perf_counter()
    if splits is None:
        splits = task_object.load(corpus, config_name, data_dir)
    else:  # a copy the caps below may change (dict.copy would lose the DatasetDict type)
        import datasets

        splits = datasets.DatasetDict(splits)
    for split in ("train", "validation"):
        if split not in splits:
            raise ValueError(f"corpus {corpus!r} config {config_name!r} has no {split!r} split")
    if max_train_examples is not None and len(splits["train"]) > max_train_examples:
        splits["train"] = splits["train"].shuffle(seed=seed).select(range(max_train_examples))
    cap = max_validation_examples or (QUICK_SETTINGS["max_validation_examples"] if quick else None)
    if cap is not None and len(splits["validation"]) > cap:
        splits["validation"] = splits["validation"].select(range(cap))
    data = task_object.prepare_data(splits, data_dir=data_dir, **dict(prepare_options or {}))
    data.corpus, data.config_name = corpus, config_name

    # a user at a terminal sees a progress bar with its ETA (the experiment runner logs to a file instead)
    overrides: dict[str, Any] = {"data_seed": seed, "disable_tqdm": False, **dict(training_overrides or {})}
    steps = max_steps if max_steps is not None else (QUICK_SETTINGS["max_steps"] if quick else None)
    if steps is not None:
        every = min(QUICK_SETTINGS["eval_steps"] if quick else max(steps // 5, 1), steps)
        overrides.update(max_steps=steps, eval_strategy="steps", save_strategy="steps")
        overrides.update(eval_steps=every, save_steps=every)
    if epochs is not None:
        overrides["num_train_epochs"] = epochs
    checkpoints = output_dir.parent / f".{output_dir.name}.checkpoints"
    trainer = train_preset(
        data,
        preset,
        checkpoints,
        seed=seed,
        preset_overrides=preset_overrides,
        training_preset=training_preset,
        training_overrides=overrides,
        group_by_length=group_by_length,
        resume=resume,
        early_stopping_patience=early_stopping_patience,
        callbacks=[TimeLimitCallback(time_limit)] if time_limit else None,
        **dict(train_options or {}),
    )
    model = trainer.model
    model.generation_config.num_beams = num_beams
    # a task with a decoding grid (k2q: no-repeat / repetition-penalty settings) picks its default
    # decoding on VALIDATION; it is saved with the model as config.task_decoding
    decoding, decoding_rows = choose_decoding(model, data, decoding)
    if decoding:
        model.config.task_decoding = dict(decoding)
    metadata: dict[str, Any] = {
        "task": task_object.name,
        "corpus": corpus,
        "config": config_name,
        "preset": preset,
        "model_type": model.config.model_type,
        "family": task_object.family_of(model.config),
        "seed": seed,
        "quick": quick,
        "source_column": task_object.source_column,
        "target_column": task_object.reference_column,
        "vocab_size": len(data.tokenizer),
        "output_vocab_size": getattr(model.config, "output_vocab_size", None),
        "train_examples": len(data.splits["train"]),
        "validation_examples": len(data.splits["validation"]),
        "data_fingerprint": data_fingerprint(data),
        "group_by_length": group_by_length,
        "prepare_options": dict(prepare_options or {}),
        "train_options": dict(train_options or {}),
        **dict(extra_metadata or {}),
        **_training_summary(trainer),
        "time_limit_s": time_limit,
        "decoding": dict(decoding or {}),
        "decoding_selection": decoding_rows,
        "torch_threads": torch.get_num_threads(),
    }
    if evaluate_split is not None and evaluate_split in data.splits:
        # the prepared split (a recipe may add examples) against every reference of an example
        sources = data.sources(evaluate_split)
        outputs = task_object.predict(model, data.tokenizer, sources, **dict(decoding or {}))
        scores = task_object.score(outputs, data.references(evaluate_split), sources)
        metadata["validation" if evaluate_split == "validation" else evaluate_split] = {
            f"eval_{k}": v for k, v in scores.items()
        }
    metadata["seconds"] = round(time.perf_counter() - started, 1)
    # the pipelines cut longer inputs to the tokenizer's model_max_length (with a warning): save the
    # length the task encoded sources with, unless the tokenizer already has a real limit
    source_limit = getattr(task_object, "max_source_length", None)
    current = getattr(data.tokenizer, "model_max_length", None)
    if isinstance(source_limit, int) and not (isinstance(current, int) and 0 < current < 10**9):
        data.tokenizer.model_max_length = source_limit
    metadata[TOKENIZER_FINGERPRINT_KEY] = tokenizer_fingerprint(data.tokenizer)
    save_model_folder(
        model,
        data.tokenizer,
        output_dir,
        metadata,
        overwrite=overwrite,
        log_history=trainer.state.log_history,
    )
    shutil.rmtree(checkpoints, ignore_errors=True)
    return metadata


def __getattr__(name: str) -> Any:
    # decoding moved to hf_querygen.inference; old imports keep working
    if name in ("generate_texts", "as_max_length", "output_vocab_size_of_model"):
        from . import inference

        return getattr(inference, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
