"""The runner's unit of work and its records: a :class:`Job` (train one system with one seed on one fold,
then decode and score it and every system decoding its model: :func:`train_and_score`), the worker
processes that run jobs (:func:`_init_worker`, :func:`_run_job`), a baseline's run (:func:`_run_baseline`),
one persisted record per run (``runs/<system>-fold<f>-seed<s>.json``, :func:`run_name`), and the
Trainer's logs sent to ``train.log`` instead of the console (:class:`quiet_console`)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fs import apply_umask
from ..errors import InvalidInputError
from ..model_folder import load_trained
from ..systems import BaselineContext, System
from ..tasks.base import get_task
from ..training import (
    LogFileCallback,
    TimeLimitCallback,
    choose_decoding,
    data_fingerprint,
    quiet_console,
    save_model_folder,
    train_preset,
)
from ..utils import TRAINING_METADATA_FILE
from .papers import get_reproduction
from .recipes import _folds, recipe_metadata, row_prepare_options, row_settings, row_train_options
from .tables import Budget, Fold, PaperTable

if TYPE_CHECKING:
    from ..tasks.base import TaskData


def _fold_tag(fold_id: Any) -> str:
    return "" if fold_id is None else f"-fold{fold_id}"


def run_name(system_key: str, seed: int, fold_id: Any) -> str:
    """One run's name (system x seed x fold): its record's file stem and its saved model's folder."""
    return f"{system_key}{_fold_tag(fold_id)}-seed{seed}"


# ---------------------------------------------------------------- one training job
@dataclass(frozen=True)
class Job:
    """Train ``system`` with ``seed`` on fold ``fold_id``; decode it and its decoding variants."""

    system: System
    seed: int
    fold_id: Any
    variants: tuple[System, ...]  # the system itself first, then systems decoding its model


def with_variants(system: System, systems: Sequence[System]) -> tuple[System, ...]:
    """``system`` and the rows of ``systems`` that decode its model another way
    (``System.decodes_model_of``): what one training job of it decodes and scores."""
    return (system, *(s for s in systems if s.decodes_model_of == system.key))


_WORKER: dict[str, Any] = {}


def _init_worker(
    name: str, mode: str, data_dir: Any, threads: int, out: str, save_models: str | None
) -> None:
    """Per worker process: torch threads, transformers' logs to train.log, the prepared data
    (deterministic, so every process prepares the same)."""
    import datasets
    import torch

    torch.set_num_threads(threads)
    quiet_console(Path(out) / "train.log").__enter__()  # for the worker's lifetime: logs to the file
    datasets.disable_progress_bars()
    reproduction = get_reproduction(name)
    budget = reproduction.budgets[mode]
    folds = _folds(reproduction, budget, data_dir)
    _WORKER.update(
        reproduction=reproduction,
        budget=budget,
        folds={fold.id: fold for fold in folds},
        data={},
        out=Path(out),
        save_models=Path(save_models) if save_models else None,
    )


def _options_key(options: Mapping[str, Any]) -> str:
    return json.dumps(dict(options), sort_keys=True, default=str)


def _fold_data(
    reproduction: PaperTable, fold: Fold, cache: dict, options: Mapping[str, Any] | None = None
) -> TaskData:
    """The prepared data of ``fold`` with the reproduction's prepare options plus a system's own
    (``System.prepare_options``); cached per (fold, options): rows with equal options share it."""
    key = fold.id if not options else (fold.id, _options_key(options))
    if key not in cache:
        task = get_task(reproduction.task)
        options = {**reproduction.prepare_options, **dict(options or {})}
        data = task.prepare_data(fold.splits, data_dir=fold.data_dir, **options)
        data.corpus, data.config_name = reproduction.corpus or task.default_corpus, reproduction.corpus_config
        cache[key] = data
    return cache[key]


def _run_job(job: Job) -> list[dict[str, Any]]:
    """Worker side of :func:`hf_querygen.experiments.runner.run_reproduction`: train, decode, score,
    persist; returns the records."""
    reproduction, budget = _WORKER["reproduction"], _WORKER["budget"]
    data = _fold_data(
        reproduction, _WORKER["folds"][job.fold_id], _WORKER["data"], row_prepare_options(job.system, budget)
    )
    fold = _WORKER["folds"][job.fold_id]
    return train_and_score(job, reproduction, budget, data, _WORKER["out"], _WORKER["save_models"], fold)


def train_and_score(
    job: Job,
    reproduction: PaperTable,
    budget: Budget,
    data: TaskData,
    out: Path,
    save_models: Path | None = None,
    fold: Fold | None = None,
) -> list[dict[str, Any]]:
    """Train ``job.system`` on ``data`` (resuming from ``out/checkpoints/...`` if there is one), then decode
    and score every variant on its ``evaluate_on`` splits; persist each record in ``out/runs/``."""
    system = job.system
    name = run_name(system.key, job.seed, job.fold_id)
    checkpoints = out / "checkpoints" / name
    started = time.time()
    settings = row_settings(reproduction, system, budget)
    trainer = train_preset(
        data,
        system.preset,
        checkpoints,
        seed=job.seed,
        preset_overrides=settings["preset_overrides"],
        training_preset=settings["training_preset"],
        training_overrides=settings["training_overrides"],
        early_stopping_patience=settings["early_stopping_patience"],
        group_by_length=settings["group_by_length"],
        resume=True,
        callbacks=[
            LogFileCallback(out / "train.log", name),
            *([TimeLimitCallback(budget.time_limit_s)] if budget.time_limit_s else []),
        ],
        **settings["train_options"],
    )
    model = trainer.model
    train_seconds = round(time.time() - started, 1)
    summary = {"epochs": trainer.state.epoch, "global_steps": trainer.state.global_step}
    records = _score_trained(job, budget, data, model, out, summary, train_seconds)
    if save_models is not None:
        metadata = _saved_model_metadata(job, reproduction, budget, data, model, records, fold, summary)
        save_model_folder(model, data.tokenizer, save_models / name, metadata, overwrite=True)
    shutil.rmtree(checkpoints, ignore_errors=True)  # the run is persisted: checkpoints are not results
    return records


def rescore_saved(
    job: Job,
    reproduction: PaperTable,
    budget: Budget,
    data: TaskData,
    out: Path,
    model_dir: Path,
    save_models: Path | None = None,
    fold: Fold | None = None,
    variants_only: bool = False,
) -> list[dict[str, Any]]:
    """Decode and score a model kept by an earlier run of this job (``save_models``) as
    :func:`train_and_score` scores a model it has just trained: the row's decoding chosen afresh on
    validation from its current grid, every variant, the records in ``out/runs/`` (each with
    ``rescored_from``, and ``train_seconds`` None: no training happened). For a decoding grid that grew
    after the models were trained. The folder must hold this job's model, trained on this data: its
    system, seed, fold and data fingerprint are checked (:class:`~hf_querygen.errors.InvalidInputError`
    naming the field). ``save_models``: keep the model again there, with the decoding now chosen.
    ``variants_only``: only the rows that decode the model another way (``System.decodes_model_of``, a row
    added after the model was trained) are decoded and scored; the row keeps the decoding saved with it."""
    name = run_name(job.system.key, job.seed, job.fold_id)
    if save_models is not None and (save_models / name).resolve() == Path(model_dir).resolve():
        raise InvalidInputError(
            f"rescoring {model_dir} would write the model again into the folder it reads; pass another "
            "save_models folder (--save-models)"
        )
    model, _, metadata = load_trained(model_dir)
    expected = {
        "system": job.system.name,
        "seed": job.seed,
        "fold": job.fold_id,
        "data_fingerprint": data_fingerprint(data),
    }
    for field, value in expected.items():
        if metadata.get(field) != value:
            raise InvalidInputError(
                f"{model_dir / TRAINING_METADATA_FILE}: {field} is {metadata.get(field)!r}, but this run "
                f"rescores {value!r}; pass the folder that run {name} saved"
            )
    summary = {"epochs": metadata.get("epochs"), "global_steps": metadata.get("global_steps")}
    if variants_only:
        if len(job.variants) < 2:
            raise InvalidInputError(f"{job.system.name} has no row that decodes its model another way")
        kept = dict(model.config.task_decoding or {})
    else:
        kept = None
        model.config.task_decoding = None  # chosen afresh from the row's grid, not filled in by the old one
    records = _score_trained(
        job, budget, data, model, out, summary, None, kept_decoding=kept, rescored_from=str(model_dir)
    )
    if save_models is not None:
        metadata = _saved_model_metadata(job, reproduction, budget, data, model, records, fold, summary)
        save_model_folder(model, data.tokenizer, save_models / name, metadata, overwrite=True)
    return records


def _score_trained(
    job: Job,
    budget: Budget,
    data: TaskData,
    model: Any,
    out: Path,
    summary: Mapping[str, Any],
    train_seconds: float | None,
    kept_decoding: Mapping[str, Any] | None = None,
    **provenance: Any,
) -> list[dict[str, Any]]:
    """The records of a trained model: its decoding chosen, every variant decoded and scored, each record
    persisted in ``out/runs/`` with the training summary (and ``provenance``). ``kept_decoding``: the
    row's decoding is this one (saved with a kept model) and only the other variants are scored."""
    system = job.system
    # the row's decoding: a task with a decoding grid chooses it on validation (k2q's guards against
    # repeats), and the table reports the decoding saved with the model, as the pipeline uses it
    overrides = budget.row_decoding.get(system.key, {})
    if kept_decoding is not None:
        chosen, decoding_rows = dict(kept_decoding), []
    elif system.in_table:
        chosen, decoding_rows = choose_decoding(
            model, data, system.decoding, system.decoding_choice, overrides
        )
    else:
        chosen, decoding_rows = {**system.decoding, **overrides}, []
    if chosen:
        model.config.task_decoding = dict(chosen)
    records = []
    for variant in job.variants:
        if variant is system and kept_decoding is not None:
            continue
        if variant is system:
            record = _decode_and_score(variant, job, model, data, chosen)
            rows = decoding_rows
        else:
            record, rows = _decode_variant(variant, job, model, data, budget.row_decoding.get(variant.key))
        if rows:
            record.setdefault("decoding", chosen)  # a variant's own choice is in its record already
            record["decoding_selection"] = rows
        record.update(train_seconds=train_seconds, training=dict(summary), **provenance)
        _save_record(out, record)
        records.append(record)
    return records


def _saved_model_metadata(
    job: Job,
    reproduction: PaperTable,
    budget: Budget,
    data: TaskData,
    model: Any,
    records: list[dict[str, Any]],
    fold: Fold | None,
    summary: Mapping[str, Any],
) -> dict[str, Any]:
    """The training JSON of a kept model (``save_models``): its data, settings, sizes and validation
    scores, with the same recipe entries as ``train --system`` writes."""
    system, task = job.system, data.task
    return {
        "task": task.name,
        "corpus": data.corpus,
        "config": data.config_name,
        "preset": system.preset,
        "system": system.name,
        "prepare_options": row_prepare_options(system, budget),
        "train_options": row_train_options(system, budget),
        "reproduction": reproduction.name,
        "budget": budget.name,
        "seed": job.seed,
        "fold": job.fold_id,
        "source_column": task.source_column,
        "target_column": task.reference_column,
        "train_examples": len(data.splits["train"]),
        "validation_examples": len(data.splits["validation"]) if "validation" in data.splits else 0,
        "vocab_size": len(data.tokenizer),
        "output_vocab_size": getattr(model.config, "output_vocab_size", None),
        **summary,
        "validation": {f"eval_{k}": v for k, v in records[0]["scores"].get("validation", {}).items()},
        # the same entries as `train --system` writes (training_recipe): one recipe, comparable
        **recipe_metadata(reproduction, system, budget, fold),
        "data_fingerprint": data_fingerprint(data),  # as train_model writes it
    }


def _decode_variant(
    variant: System,
    job: Job,
    model: Any,
    data: TaskData,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A row decoding another row's model (``System.decodes_model_of``): with its own decoding grid
    (ding2018's ``*_echo_fallback`` rows), its decoding is chosen on validation like a trained row's, with
    ``overrides`` (the budget's ``row_decoding`` of the row) on every entry, and decoded as itself (the
    model's saved decoding does not fill in the keys it leaves out); else its ``decoding`` on top of the
    model's saved one."""
    if variant.decoding_choice.grid is None or not variant.in_table:
        return _decode_and_score(variant, job, model, data), []
    chosen, rows = choose_decoding(model, data, variant.decoding, variant.decoding_choice, overrides)
    saved = model.config.task_decoding
    model.config.task_decoding = None
    try:
        record = _decode_and_score(variant, job, model, data, chosen)
    finally:
        model.config.task_decoding = saved
    record["decoding"] = chosen
    return record, rows


def _decode_and_score(
    system: System, job: Job, model: Any, data: TaskData, decoding: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    task = data.task
    decoding = system.decoding if decoding is None else decoding
    record: dict[str, Any] = {
        "system": system.key,
        "seed": job.seed,
        "fold": job.fold_id,
        "scores": {},
        "outputs": {},
    }
    for split in system.evaluate_on:
        started = time.perf_counter()
        outputs = task.predict(model, data.tokenizer, data.sources(split), **decoding)
        record["outputs"][split] = [task.as_text(o) for o in outputs]
        record["scores"][split] = task.score(outputs, data.references(split), data.sources(split))
        record.setdefault("decode_seconds", {})[split] = round(time.perf_counter() - started, 2)
    return record


def _save_record(out: Path, record: dict[str, Any]) -> None:
    """Write one run's record atomically (a temp file renamed), so that ``resume`` never reads half."""
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    path = runs / (run_name(record["system"], record["seed"], record["fold"]) + ".json")
    with tempfile.NamedTemporaryFile("w", dir=runs, suffix=".tmp", delete=False, encoding="utf-8") as handle:
        json.dump(record, handle)
    apply_umask(handle.name, directory=False)  # NamedTemporaryFile is 0600; users expect their umask
    os.replace(handle.name, path)


def _load_records(out: Path) -> dict[str, dict[str, Any]]:
    runs = out / "runs"
    if not runs.is_dir():
        return {}
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in runs.glob("*.json")}


# ---------------------------------------------------------------- baselines
def _run_baseline(
    system: System, seed: int, fold: Fold, data: TaskData, resources: Mapping[str, Any], by_name: Mapping
) -> dict[str, Any]:
    task = data.task
    record: dict[str, Any] = {
        "system": system.key,
        "seed": seed,
        "fold": fold.id,
        "scores": {},
        "outputs": {},
    }
    for split in system.evaluate_on:
        inputs = {}
        for key in system.inputs:
            source = by_name[run_name(key, seed, fold.id)]
            inputs[key] = source["outputs"][split]
        context = BaselineContext(data, split, seed, inputs, {**resources, **fold.extras})
        started = time.perf_counter()
        result = system.baseline(context)
        outputs, info = result if isinstance(result, tuple) else (result, None)
        record["outputs"][split] = [o if isinstance(o, str) else task.as_text(o) for o in outputs]
        record["scores"][split] = task.score(outputs, data.references(split), data.sources(split))
        record.setdefault("decode_seconds", {})[split] = round(time.perf_counter() - started, 2)
        if info:
            record.setdefault("info", {}).update(info)
    return record
