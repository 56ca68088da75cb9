"""Corpus -> task data -> :func:`~hf_querygen.training.task_training.train_preset` -> saved model folder:
:func:`train_model`, what ``hf-querygen train`` runs."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fs import check_output_dir
from ..model_folder import TOKENIZER_FINGERPRINT_KEY, tokenizer_fingerprint
from ..tasks.base import get_task, task_for_corpus

if TYPE_CHECKING:  # torch/transformers/datasets cost seconds at import
    from ..tasks.base import TaskData

from .recipe import DataSelection, Recipe
from .task_training import (
    MODEL_FOLDER_KIND,
    _training_summary,
    choose_decoding,
    data_fingerprint,
    save_model_folder,
    train_preset,
)
from .trainer import LogFileCallback, TimeLimitCallback

QUICK_SETTINGS = {"max_steps": 150, "eval_steps": 75, "max_validation_examples": 256}


def train_model(
    recipe: Recipe,
    data: DataSelection,
    output_dir: str | Path,
    *,
    overwrite: bool = False,
    resume: bool = False,
    evaluate_split: str | None = "validation",
    time_limit: float | None = None,
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """Corpus -> task data (tokenizer on TRAIN) -> :func:`train_preset` -> :func:`save_model_folder`.

    ``recipe``: how (:class:`~hf_querygen.training.recipe.Recipe`); ``data``: on what
    (:class:`~hf_querygen.training.recipe.DataSelection`, with at least a task or a corpus). Checkpoints
    go to ``output_dir/../.<name>.checkpoints`` (kept for ``resume`` until the model folder is written).
    ``time_limit`` (seconds): stop training then (:class:`TimeLimitCallback`; the best checkpoint so far is
    kept as usual). ``log_file``: the Trainer's log records go there as JSON lines instead of under the
    progress bar (:class:`LogFileCallback`), and the file is saved in the model folder as ``train.log``.
    Returns the metadata saved with the model, including the task's scores on ``evaluate_split`` (decoded
    by ``Task.predict``, as the pipeline does); the training curves (every logged loss and evaluation) are
    saved as ``log_history.json``.
    """
    import shutil

    output_dir = Path(output_dir)
    check_output_dir(output_dir, MODEL_FOLDER_KIND, overwrite, what="--output-dir")  # before any work
    from ..presets import check_config_overrides, data_read_by_backbone

    check_config_overrides(recipe.preset, recipe.preset_overrides, what="preset_overrides (--set)")
    recipe = replace(
        recipe,
        prepare_options=data_read_by_backbone(recipe.preset, recipe.preset_overrides, recipe.prepare_options),
    )
    started = time.perf_counter()
    task_data = _prepared_data(recipe, data)
    checkpoints = output_dir.parent / f".{output_dir.name}.checkpoints"
    callbacks = [
        *([TimeLimitCallback(time_limit)] if time_limit else []),
        *([LogFileCallback(log_file, output_dir.name)] if log_file is not None else []),
    ]
    trainer = train_preset(
        task_data,
        recipe.preset,
        checkpoints,
        seed=recipe.seed,
        preset_overrides=recipe.preset_overrides,
        training_preset=recipe.training_preset,
        training_overrides=_training_overrides(recipe),
        group_by_length=recipe.group_by_length,
        resume=resume,
        early_stopping_patience=recipe.early_stopping_patience,
        callbacks=callbacks or None,
        **dict(recipe.train_options),
    )
    model = trainer.model
    model.generation_config.num_beams = recipe.num_beams
    # a task with a decoding grid (k2q: no-repeat / repetition-penalty settings) picks its default
    # decoding on VALIDATION; it is saved with the model as config.task_decoding
    decoding, decoding_rows = choose_decoding(
        model,
        task_data,
        recipe.decoding,
        recipe.decoding_choice,
        recipe.decoding_overrides,
    )
    if decoding:
        model.config.task_decoding = dict(decoding)
    metadata = _training_metadata(recipe, data, task_data, trainer, decoding, decoding_rows, time_limit)
    if evaluate_split is not None and evaluate_split in task_data.splits:
        # the prepared split (a recipe may add examples) against every reference of an example
        task = task_data.task
        sources = task_data.sources(evaluate_split)
        outputs = task.predict(model, task_data.tokenizer, sources, **dict(decoding or {}))
        scores = task.score(outputs, task_data.references(evaluate_split), sources)
        metadata["validation" if evaluate_split == "validation" else evaluate_split] = {
            f"eval_{k}": v for k, v in scores.items()
        }
    metadata["seconds"] = round(time.perf_counter() - started, 1)
    _limit_source_length(task_data)
    metadata[TOKENIZER_FINGERPRINT_KEY] = tokenizer_fingerprint(task_data.tokenizer)
    save_model_folder(
        model,
        task_data.tokenizer,
        output_dir,
        metadata,
        overwrite=overwrite,
        log_history=trainer.state.log_history,
        log_file=log_file,
    )
    shutil.rmtree(checkpoints, ignore_errors=True)
    return metadata


def validation_splits(splits: Mapping[str, Any]) -> list[str]:
    """The splits a model is validated on: ``validation`` and every ``<source>_validation`` (the splits a
    task chooses a decoding on, e.g. k2q's ``t0_validation`` / ``nl2kw_validation``), which a validation
    cap limits alike."""
    return [name for name in splits if name == "validation" or name.endswith("_validation")]


def _prepared_data(recipe: Recipe, data: DataSelection) -> TaskData:
    """The selected splits, capped, prepared by the task (its tokenizer fitted on TRAIN)."""
    import datasets

    task = get_task(data.task) if data.task is not None else task_for_corpus(data.corpus)
    corpus, config_name = task.resolve_corpus(data.corpus, data.config_name)
    if data.splits is None:
        splits = task.load(corpus, config_name, data.data_dir)
    else:  # a copy the caps below may change (dict.copy would lose the DatasetDict type)
        splits = datasets.DatasetDict(data.splits)
    for split in ("train", "validation"):
        if split not in splits:
            raise ValueError(f"corpus {corpus!r} config {config_name!r} has no {split!r} split")
    if data.max_train_examples is not None and len(splits["train"]) > data.max_train_examples:
        splits["train"] = splits["train"].shuffle(seed=recipe.seed).select(range(data.max_train_examples))
    cap = data.max_validation_examples or (
        QUICK_SETTINGS["max_validation_examples"] if recipe.quick else None
    )
    if cap is not None:
        for split in validation_splits(splits):
            if len(splits[split]) > cap:
                splits[split] = splits[split].select(range(cap))
    prepared = task.prepare_data(splits, data_dir=data.data_dir, **dict(recipe.prepare_options))
    prepared.corpus, prepared.config_name = corpus, config_name
    return prepared


def _training_overrides(recipe: Recipe) -> dict[str, Any]:
    """The recipe's ``TrainingArguments`` overrides with its step / epoch budget applied."""
    # a user at a terminal sees a progress bar with its ETA (the experiment runner logs to a file instead)
    overrides: dict[str, Any] = {
        "data_seed": recipe.seed,
        "disable_tqdm": False,
        **dict(recipe.training_overrides),
    }
    steps = (
        recipe.max_steps
        if recipe.max_steps is not None
        else (QUICK_SETTINGS["max_steps"] if recipe.quick else None)
    )
    if steps is not None:
        every = min(QUICK_SETTINGS["eval_steps"] if recipe.quick else max(steps // 5, 1), steps)
        overrides.update(max_steps=steps, eval_strategy="steps", save_strategy="steps")
        overrides.update(eval_steps=every, save_steps=every)
    if recipe.epochs is not None:
        overrides["num_train_epochs"] = recipe.epochs
    return overrides


def _training_metadata(
    recipe: Recipe,
    data: DataSelection,
    task_data: TaskData,
    trainer: Any,
    decoding: Mapping[str, Any] | None,
    decoding_rows: Any,
    time_limit: float | None,
) -> dict[str, Any]:
    """The training record saved with the model (``hf_querygen_training.json``)."""
    import torch

    task, model = task_data.task, trainer.model
    return {
        "task": task.name,
        "corpus": task_data.corpus,
        "config": task_data.config_name,
        "preset": recipe.preset,
        "model_type": model.config.model_type,
        "family": task.family_of(model.config),
        "seed": recipe.seed,
        "quick": recipe.quick,
        "source_column": task.source_column,
        "target_column": task.reference_column,
        "vocab_size": len(task_data.tokenizer),
        "output_vocab_size": getattr(model.config, "output_vocab_size", None),
        "train_examples": len(task_data.splits["train"]),
        "validation_examples": len(task_data.splits["validation"]),
        "data_fingerprint": data_fingerprint(task_data),
        "group_by_length": recipe.group_by_length,
        "prepare_options": dict(recipe.prepare_options),
        "train_options": dict(recipe.train_options),
        **dict(data.metadata),
        **_training_summary(trainer),
        "time_limit_s": time_limit,
        "decoding": dict(decoding or {}),
        "decoding_selection": decoding_rows,
        "torch_threads": torch.get_num_threads(),
    }


def _limit_source_length(task_data: TaskData) -> None:
    """The pipelines cut longer inputs to the tokenizer's ``model_max_length`` (with a warning): save the
    length the task encoded sources with, unless the tokenizer already has a real limit."""
    source_limit = getattr(task_data.task, "max_source_length", None)
    current = getattr(task_data.tokenizer, "model_max_length", None)
    if isinstance(source_limit, int) and not (isinstance(current, int) and 0 < current < 10**9):
        task_data.tokenizer.model_max_length = source_limit
