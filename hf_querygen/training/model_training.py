"""Corpus -> task data -> :func:`~hf_querygen.training.task_training.train_preset` -> saved model folder:
:func:`train_model`, what ``hf-querygen train`` runs."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fs import check_output_dir
from ..model_folder import TOKENIZER_FINGERPRINT_KEY, tokenizer_fingerprint
from ..tasks.base import get_task, task_for_corpus

if TYPE_CHECKING:  # torch/transformers/datasets cost seconds at import
    import datasets

    from ..tasks.base import Task

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
    decoding_grid: Sequence[Mapping[str, Any]] | None = None,
    decoding_metric: str | None = None,
    splits: datasets.DatasetDict | None = None,
    early_stopping_patience: int | None = 3,
    extra_metadata: Mapping[str, Any] | None = None,
    time_limit: float | None = None,
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """Corpus -> task data (tokenizer on TRAIN) -> :func:`train_preset` -> :func:`save_model_folder`.

    ``task`` defaults to the one task that trains on ``corpus`` (and ``corpus`` to the task's first).
    Checkpoints go to ``output_dir/../.<name>.checkpoints`` (kept for ``resume`` until the model folder
    is written). ``prepare_options`` go to ``Task.prepare``, ``train_options`` to :func:`train_preset`
    (a paper system's own, ``System.prepare_options`` / ``train_options``); ``decoding`` (a system's
    ``Task.predict`` keyword arguments) is saved as ``config.task_decoding``, the model's default
    decoding, unless ``decoding_grid`` (else the task's) chooses it on validation by ``decoding_metric``
    (:func:`choose_decoding`; a system's ``System.decoding_grid`` / ``decoding_metric``).
    ``splits``: the train / validation (and other) splits to train on instead of
    ``task.load(corpus)`` (a paper system's own data:
    :func:`hf_querygen.experiments.recipes.training_recipe`);
    ``extra_metadata`` goes into the saved training JSON (e.g. the synthetic set's name, size and
    fingerprint). ``time_limit`` (seconds): stop training then (:class:`TimeLimitCallback`; the best
    checkpoint so far is kept as usual). ``log_file``: the Trainer's log records go there as JSON lines
    instead of under the progress bar (:class:`LogFileCallback`), and the file is saved in the model
    folder as ``train.log``. Returns the metadata saved with the model, including the
    task's scores on ``evaluate_split`` (decoded by ``Task.predict``, as the pipeline does); the
    training curves (every logged loss and evaluation) are saved as ``log_history.json``.
    """
    import shutil

    import torch

    output_dir = Path(output_dir)
    check_output_dir(output_dir, MODEL_FOLDER_KIND, overwrite, what="--output-dir")  # before any work
    from ..presets import check_config_overrides

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
        callbacks=[
            *([TimeLimitCallback(time_limit)] if time_limit else []),
            *([LogFileCallback(log_file, output_dir.name)] if log_file is not None else []),
        ]
        or None,
        **dict(train_options or {}),
    )
    model = trainer.model
    model.generation_config.num_beams = num_beams
    # a task with a decoding grid (k2q: no-repeat / repetition-penalty settings) picks its default
    # decoding on VALIDATION; it is saved with the model as config.task_decoding
    decoding, decoding_rows = choose_decoding(model, data, decoding, decoding_grid, decoding_metric)
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
        log_file=log_file,
    )
    shutil.rmtree(checkpoints, ignore_errors=True)
    return metadata
