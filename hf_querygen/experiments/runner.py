"""The one experiment runner: a paper table = a :class:`Reproduction` (a list of Systems, the paper's
numbers, a budget per mode, optional folds and analysis hooks), run by :func:`run_reproduction`.

What a run does, for every fold (one unless the paper cross-validates):

1. load the task's corpus splits (capped by the budget), ``Task.prepare`` them (tokenizer on TRAIN);
2. run the baselines (once if deterministic, else per seed);
3. train every trainable system per seed with the stock ``Seq2SeqTrainer``
   (:func:`hf_querygen.training.train_preset`; jobs spread over ``workers`` processes, longest first),
   decode through ``Task.predict`` -- the same path as ``pipeline()`` -- for the system and every
   system decoding its model (``System.decodes_model_of``), score with ``Task.score``;
4. combine outputs (systems with ``inputs``), run the analysis hooks, write ``results.json`` (the one
   shape of :mod:`hf_querygen.experiments._report`), ``results.md``, plots, and print a summary table.

Every finished run (system x seed x fold) is persisted at once as ``runs/<system>-fold<f>-seed<s>.json``;
``resume=True`` skips those and continues an interrupted training from its last checkpoint
(``checkpoints/``). ``save_models=DIR`` keeps each trained model as a folder that ``from_pretrained``
and ``pipeline()`` open, with its model card (written atomically). An existing output folder is never
silently reused: pass ``resume`` or ``overwrite``. The Trainer's logs go to ``train.log`` in the output
folder, not to the console.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..systems import BaselineContext, System

# name -> module defining a :class:`Reproduction` named ``REPRODUCTION``: one data file per paper
# (``experiments/papers/<name>.json``), see :mod:`hf_querygen.experiments.papers`
from .papers import REPRODUCTIONS

if TYPE_CHECKING:
    import datasets

    from ..tasks.base import Task, TaskData

logger = logging.getLogger(__name__)


def get_reproduction(name: str) -> Reproduction:
    import importlib

    return importlib.import_module(REPRODUCTIONS.get(name)).REPRODUCTION


@dataclass(frozen=True)
class Budget:
    """How much of everything a mode runs.

    seeds: default number of seeds; max_train / max_validation / max_test: split caps (a seeded random
    subset, seed 0); patience: early stopping (evaluations without improvement); training_overrides:
    ``Seq2SeqTrainingArguments`` fields for every trained system (e.g. ``num_train_epochs``);
    preset_overrides: system key -> config fields (quick mode: smaller models); folds: which folds
    (None = all); settings: paper-specific values read by its hooks (e.g. the CRF grid); skip: system
    keys the mode leaves out; seeds_per_system: system key -> at most this many seeds (a costly row run
    with fewer seeds than the budget's; the report's ``n`` says how many).
    """

    name: str
    seeds: int = 1
    max_train: int | None = None
    max_validation: int | None = None
    max_test: int | None = None
    patience: int | None = 3
    training_overrides: Mapping[str, Any] = field(default_factory=dict)
    preset_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    group_by_length: bool = True
    folds: tuple[Any, ...] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: system keys this mode does not run (e.g. rows whose resources take longer to build than a quick run)
    skip: tuple[str, ...] = ()
    seeds_per_system: Mapping[str, int] = field(default_factory=dict)
    #: system keys trained with their own recipe: their ``training_overrides`` win over the budget's (so the
    #: row is what ``train --system`` trains)
    own_recipe: tuple[str, ...] = ()


@dataclass
class Fold:
    """One data setting of a run: its id, the task splits (train / validation / test) and extras
    that baselines read (``BaselineContext.resources``)."""

    id: Any
    splits: datasets.DatasetDict
    extras: dict[str, Any] = field(default_factory=dict)
    #: the run's raw-data directory, which the task's own resources read too (``Task.prepare_data``)
    data_dir: Any = None


@dataclass
class RunContext:
    """What analysis hooks and the markdown renderer get besides the records."""

    reproduction: Reproduction
    budget: Budget
    seeds: int
    folds: list[Fold]
    data: dict[Any, TaskData]
    resources: Mapping[str, Any]
    records: list[dict[str, Any]]
    #: the output folder and the saved models' folder (``save_models``; None when models are not kept)
    out_dir: Path | None = None
    save_models: Path | None = None


@dataclass
class Reproduction:
    """A paper table: what to run and how to report it.

    systems: the rows (and extra runs with ``in_table=False``), in table order.
    paper_numbers: system key -> metric -> the paper's value.
    table_metrics: the metrics of the printed summary table (first = the headline metric).
    budgets: ``{"full": Budget, "quick": Budget}``.
    folds: (task, budget, data_dir) -> list of :class:`Fold` (default: the task's own splits).
    resources: data_dir -> shared resources for baselines / hooks (loaded once per process).
    extra_systems: (budget, seeds) -> [(System, seeds to run it with)]: runs that only feed analyses.
    analyses: hooks (RunContext) -> dict merged into ``config``.
    render_markdown: document -> results.md text (default: one table of all metrics).
    plots: (document, out_dir) -> None.
    config: static config entries (paper settings, what differs from the paper).
    table_splits: several test splits in one table (Ding'18: T_0 and nl2kw): each run's metrics of these
        splits go into the document as ``"<split>/<metric>"`` (default: the system's first
        ``evaluate_on`` split, metric names unprefixed).
    """

    name: str
    task: str
    systems: list[System]
    paper_numbers: Mapping[str, Mapping[str, float]]
    table_metrics: tuple[str, ...]
    budgets: Mapping[str, Budget]
    corpus: str | None = None
    corpus_config: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    folds: Callable[[Task, Budget, Any], list[Fold]] | None = None
    resources: Callable[[Any], Mapping[str, Any]] | None = None
    extra_systems: Callable[[Budget, int], list[tuple[System, Sequence[int]]]] | None = None
    analyses: Sequence[Callable[[RunContext], Mapping[str, Any]]] = ()
    render_markdown: Callable[[dict], str] | None = None
    plots: Callable[[dict, Path], None] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    prepare_options: Mapping[str, Any] = field(default_factory=dict)
    threads_per_worker: int = 1
    table_splits: tuple[str, ...] = ()
    #: the budget whose recipe ``hf-querygen train --system <paper>/<row>`` trains (the table's data,
    #: sizes, steps and checkpoint selection: :func:`training_recipe`); None: ``train --system`` trains
    #: on the task's own corpus with the system's settings
    train_budget: str | None = None

    #: a table that reads another paper's saved models names it (None: it trains its own)
    models_of: ClassVar[str | None] = None

    def reproduce(self, out_dir: str | Path, **options: Any) -> dict:
        """``hf-querygen reproduce``'s entry: :func:`run_reproduction` with the command's options
        (options a training table has no use for, ``models_dir``, are ignored)."""
        options.pop("models_dir", None)
        return run_reproduction(self, out_dir, **options)

    def system(self, key: str) -> System:
        for system in self.systems:
            if system.key == key:
                return system
        raise KeyError(f"{self.name} has no system {key!r}")

    def label(self, key: str) -> str:
        try:
            return self.system(key).label or key
        except KeyError:
            return self.labels.get(key, key)


@dataclass(frozen=True)
class Evaluation:
    """A table that trains nothing (the retrieval evaluation): ``run(out_dir, quick, seeds, data_dir,
    models_dir) -> document`` writes the report, ``summary(document)`` is the text printed after it;
    ``models_of`` names the paper whose saved models it decodes (``reproduce all --save-models D``
    passes ``D/<models_of>``)."""

    name: str
    run: Callable[..., dict]
    summary: Callable[[dict], str]
    models_of: str | None = None

    def reproduce(
        self,
        out_dir: str | Path,
        quick: bool = False,
        seeds: int | None = None,
        data_dir: str | Path | None = None,
        models_dir: str | Path | None = None,
        **_training_options: Any,
    ) -> dict:
        """Run it (the training options of ``reproduce``, ``workers`` / ``resume`` ..., do not apply)."""
        document = self.run(out_dir, quick=quick, seeds=seeds, data_dir=data_dir, models_dir=models_dir)
        print(self.summary(document), flush=True)
        return document


# ---------------------------------------------------------------- one row's recipe, outside the runner
@dataclass
class TrainingRecipe:
    """Everything :func:`hf_querygen.training.train_model` needs to train one table row exactly as the
    runner does (:func:`train_and_score`): the fold's splits, the prepare options, the preset with the
    budget's overrides, the training arguments, early stopping, the row's decoding, and the metadata
    that names the data (:func:`recipe_metadata`)."""

    system: System
    budget: Budget
    splits: datasets.DatasetDict
    prepare_options: dict[str, Any]
    preset_overrides: dict[str, Any]
    training_overrides: dict[str, Any]
    early_stopping_patience: int | None
    group_by_length: bool
    decoding: dict[str, Any]
    metadata: dict[str, Any]

    def train_model_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~hf_querygen.training.train_model` (besides the preset, the task
        and the output folder)."""
        return {
            "splits": self.splits,
            "prepare_options": self.prepare_options,
            "preset_overrides": self.preset_overrides,
            "training_preset": self.system.training_preset,
            "training_overrides": self.training_overrides,
            "train_options": dict(self.system.train_options),
            "early_stopping_patience": self.early_stopping_patience,
            "group_by_length": self.group_by_length,
            "decoding": self.decoding,
            "extra_metadata": self.metadata,
        }


def row_settings(reproduction: Reproduction, system: System, budget: Budget) -> dict[str, Any]:
    """The resolved training settings of ``system`` under ``budget`` (what :func:`train_and_score`
    passes to ``train_preset``): the one definition that ``train --system`` and the runner share."""
    return {
        "preset": system.preset,
        "preset_overrides": {**system.preset_overrides, **budget.preset_overrides.get(system.key, {})},
        "training_preset": system.training_preset,
        # the mode's budget wins over the system's own settings (quick mode: more steps, a higher rate),
        # except for a row with its own recipe under that budget (Budget.own_recipe)
        "training_overrides": (
            {**budget.training_overrides, **system.training_overrides}
            if system.key in budget.own_recipe
            else {**system.training_overrides, **budget.training_overrides}
        ),
        "prepare_options": {**reproduction.prepare_options, **dict(system.prepare_options)},
        "train_options": dict(system.train_options),
        "early_stopping_patience": budget.patience,
        "group_by_length": budget.group_by_length,
    }


def recipe_metadata(
    reproduction: Reproduction, system: System, budget: Budget, fold: Fold | None
) -> dict[str, Any]:
    """The training JSON entries that name a row's recipe: reproduction, budget, system, resolved
    settings, and what the fold says about its data (e.g. the synthetic set)."""
    return {
        "reproduction": reproduction.name,
        "budget": budget.name,
        "system": system.name,
        "recipe": _jsonable(row_settings(reproduction, system, budget)),
        **dict((fold.extras.get("training_metadata") or {}) if fold is not None else {}),
    }


def training_recipe(
    system: System | str,
    budget: str | None = None,
    data_dir: str | Path | None = None,
    reproduction: Reproduction | None = None,
) -> TrainingRecipe:
    """The recipe of table row ``system`` under ``budget`` (default: its reproduction's
    ``train_budget``): the same fold, prepared data options, sizes, steps and checkpoint selection as
    ``hf-querygen reproduce <paper>`` (one seed; the seed is the caller's). ``reproduction``: a
    modified copy of the paper's (default: the registered one)."""
    from ..errors import InvalidInputError
    from ..systems import get_system

    system = get_system(system)
    paper = system.name.split("/", 1)[0]
    if reproduction is None:
        if paper not in REPRODUCTIONS:
            raise InvalidInputError(f"system {system.name!r}: no reproduction {paper!r} defines its recipe")
        reproduction = get_reproduction(paper)
    name = budget or reproduction.train_budget
    if name is None:
        raise InvalidInputError(f"reproduction {paper!r} defines no training recipe (train_budget)")
    if name not in reproduction.budgets:
        raise InvalidInputError(
            f"reproduction {paper!r} has no budget {name!r}; budgets: {sorted(reproduction.budgets)}"
        )
    if not system.trainable:
        raise InvalidInputError(f"system {system.name!r} is not trained (a baseline or a decoding variant)")
    chosen = reproduction.budgets[name]
    fold = _folds(reproduction, chosen, data_dir)[0]
    settings = row_settings(reproduction, system, chosen)
    return TrainingRecipe(
        system=system,
        budget=chosen,
        splits=fold.splits,
        prepare_options=settings["prepare_options"],
        preset_overrides=settings["preset_overrides"],
        training_overrides=settings["training_overrides"],
        early_stopping_patience=settings["early_stopping_patience"],
        group_by_length=settings["group_by_length"],
        decoding=dict(system.decoding),
        metadata=recipe_metadata(reproduction, system, chosen, fold),
    )


# ---------------------------------------------------------------- data
def default_folds(
    task: Task, budget: Budget, data_dir: Any, corpus: str | None, config: str | None
) -> list[Fold]:
    """One fold: the task's splits, each capped by the budget (seeded random subset)."""
    splits = task.load(corpus, config, data_dir)
    caps = {"train": budget.max_train, "validation": budget.max_validation, "test": budget.max_test}
    for split, cap in caps.items():
        if cap is not None and split in splits and len(splits[split]) > cap:
            splits[split] = splits[split].shuffle(seed=0).select(range(cap))
    return [Fold(None, splits)]


def _fold_tag(fold_id: Any) -> str:
    return "" if fold_id is None else f"-fold{fold_id}"


def run_name(system_key: str, seed: int, fold_id: Any) -> str:
    return f"{system_key}{_fold_tag(fold_id)}-seed{seed}"


# ---------------------------------------------------------------- one training job
@dataclass(frozen=True)
class Job:
    """Train ``system`` with ``seed`` on fold ``fold_id``; decode it and its decoding variants."""

    system: System
    seed: int
    fold_id: Any
    variants: tuple[System, ...]  # the system itself first, then systems decoding its model


_WORKER: dict[str, Any] = {}


def _init_worker(
    name: str, mode: str, data_dir: Any, threads: int, out: str, save_models: str | None
) -> None:
    """Per worker process: torch threads, transformers' logs to train.log, the prepared data
    (deterministic, so every process prepares the same)."""
    import datasets
    import torch

    torch.set_num_threads(threads)
    _quiet_console(Path(out) / "train.log").__enter__()  # for the worker's lifetime: logs to the file
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


def _folds(reproduction: Reproduction, budget: Budget, data_dir: Any) -> list[Fold]:
    from ..tasks.base import get_task

    task = get_task(reproduction.task)
    if reproduction.folds is not None:
        folds = reproduction.folds(task, budget, data_dir)
    else:
        folds = default_folds(task, budget, data_dir, reproduction.corpus, reproduction.corpus_config)
    if budget.folds is not None:
        folds = [fold for fold in folds if fold.id in budget.folds]
    for fold in folds:
        fold.data_dir = data_dir
    return folds


def _options_key(options: Mapping[str, Any]) -> str:
    return json.dumps(dict(options), sort_keys=True, default=str)


def _fold_data(
    reproduction: Reproduction, fold: Fold, cache: dict, options: Mapping[str, Any] | None = None
) -> TaskData:
    """The prepared data of ``fold`` with the reproduction's prepare options plus a system's own
    (``System.prepare_options``); cached per (fold, options): rows with equal options share it."""
    from ..tasks.base import get_task

    key = fold.id if not options else (fold.id, _options_key(options))
    if key not in cache:
        task = get_task(reproduction.task)
        options = {**reproduction.prepare_options, **dict(options or {})}
        data = task.prepare_data(fold.splits, data_dir=fold.data_dir, **options)
        data.corpus, data.config_name = reproduction.corpus or task.default_corpus, reproduction.corpus_config
        cache[key] = data
    return cache[key]


def _run_job(job: Job) -> list[dict[str, Any]]:
    """Worker side of :func:`run_reproduction`: train, decode, score, persist; returns the records."""
    reproduction, budget = _WORKER["reproduction"], _WORKER["budget"]
    data = _fold_data(
        reproduction, _WORKER["folds"][job.fold_id], _WORKER["data"], job.system.prepare_options
    )
    fold = _WORKER["folds"][job.fold_id]
    return train_and_score(job, reproduction, budget, data, _WORKER["out"], _WORKER["save_models"], fold)


def train_and_score(
    job: Job,
    reproduction: Reproduction,
    budget: Budget,
    data: TaskData,
    out: Path,
    save_models: Path | None = None,
    fold: Fold | None = None,
) -> list[dict[str, Any]]:
    """Train ``job.system`` on ``data`` (resuming from ``out/checkpoints/...`` if there is one), then decode
    and score every variant on its ``evaluate_on`` splits; persist each record in ``out/runs/``."""
    from ..training import LogFileCallback, choose_decoding, data_fingerprint, save_model_folder, train_preset

    system, task = job.system, data.task
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
        callbacks=[LogFileCallback(out / "train.log", name)],
        **settings["train_options"],
    )
    model = trainer.model
    train_seconds = time.time() - started
    summary = {"epochs": trainer.state.epoch, "global_steps": trainer.state.global_step}
    # the row's decoding: a task with a decoding grid chooses it on validation (k2q's guards against
    # repeats), and the table reports the decoding saved with the model, as the pipeline uses it
    chosen, decoding_rows = (
        choose_decoding(model, data, system.decoding) if system.in_table else (dict(system.decoding), [])
    )
    if chosen:
        model.config.task_decoding = dict(chosen)
    records = []
    for variant in job.variants:
        record = _decode_and_score(variant, job, model, data, chosen if variant is system else None)
        if variant is system and decoding_rows:
            record["decoding"] = chosen
            record["decoding_selection"] = decoding_rows
        record.update(train_seconds=round(train_seconds, 1), training=summary)
        _save_record(out, record)
        records.append(record)
    if save_models is not None:
        metadata = {
            "task": task.name,
            "corpus": data.corpus,
            "config": data.config_name,
            "preset": system.preset,
            "system": system.name,
            "prepare_options": dict(system.prepare_options),
            "train_options": dict(system.train_options),
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
        save_model_folder(model, data.tokenizer, save_models / name, metadata, overwrite=True)
    shutil.rmtree(checkpoints, ignore_errors=True)  # the run is persisted: checkpoints are not results
    return records


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
    from .._fs import apply_umask

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


# ---------------------------------------------------------------- the run
#: the .hf_querygen marker kind of a reproduction's out_dir (see hf_querygen._fs)
REPRODUCTION_KIND = "reproduction"
#: what a reproduction writes in its out_dir and ``overwrite`` deletes there (nothing else is touched)
REPRODUCTION_OUTPUTS = ("runs", "checkpoints", "results.json", "results.md", "train.log")


def _prepare_out_dir(out: Path, resume: bool, overwrite: bool) -> None:
    from .._fs import check_output_dir, foreign_entries, read_marker, write_marker
    from ..errors import OutputExistsError

    # an empty or absent folder (and the writability of its parent); a non-empty one is decided below
    if not (out.is_dir() and any(out.iterdir())):
        check_output_dir(out, REPRODUCTION_KIND, overwrite, what="--out-dir")
    elif overwrite:
        ours = [name for name in REPRODUCTION_OUTPUTS if (out / name).exists()]
        if ours and foreign_entries(out, REPRODUCTION_KIND) is None:
            raise OutputExistsError(
                f"refusing to overwrite {out}: it has no .hf_querygen marker of a reproduction, so "
                f"{', '.join(ours)} there may not be hf-querygen's; move them away or choose another "
                "--out-dir"
            )
        for name in ours:  # only the reproduction's own outputs; other files in the folder stay
            path = out / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    elif not resume:
        raise OutputExistsError(
            f"{out} is not empty: pass --resume to continue that run or --overwrite to start again"
        )
    out.mkdir(parents=True, exist_ok=True)
    if read_marker(out) is None:
        write_marker(out, REPRODUCTION_KIND)


def _check_save_models(save_dir: Path, jobs: Sequence[Job]) -> None:
    from .._fs import check_output_dir, check_writable_dir
    from ..training import MODEL_FOLDER_KIND

    check_writable_dir(save_dir, "--save-models")
    for job in jobs:
        name = run_name(job.system.key, job.seed, job.fold_id)
        check_output_dir(save_dir / name, MODEL_FOLDER_KIND, overwrite=True, what="--save-models")


def budget_systems(reproduction: Reproduction, budget: Budget) -> list[System]:
    """The reproduction's rows that ``budget`` runs (all but ``budget.skip``)."""
    return [s for s in reproduction.systems if s.key not in budget.skip]


def run_reproduction(
    reproduction: Reproduction | str,
    out_dir: str | Path,
    quick: bool = False,
    seeds: int | None = None,
    data_dir: str | Path | None = None,
    workers: int = 2,
    save_models: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    budget: str | None = None,
) -> dict:
    """Run every system of ``reproduction`` x seeds (x folds) and write the report to ``out_dir``.

    Args:
        quick: the ``"quick"`` budget (minutes on 2 cores) instead of ``"full"``.
        budget: the name of any budget of the reproduction (e.g. zhang2020's ``"paper"``: paper sizes,
            for a CUDA machine); overrides ``quick``.
        seeds: number of seeds (default: the budget's).
        workers: training processes (spawned; each prepares the deterministic data itself). 1 = in
            this process (always so for a reproduction that is not the registered one, e.g. a modified
            copy: the workers could not find it).
        save_models: keep every trained model as ``save_models/<system>[-fold<f>]-seed<s>/``.
        resume: skip finished runs (``out_dir/runs/``) and continue interrupted trainings.
        overwrite: start again in a non-empty ``out_dir`` written by a reproduction (its
            :data:`REPRODUCTION_OUTPUTS` are deleted, other files kept; a folder without the
            library's marker is refused).
        progress: one tqdm bar per stage on stderr.
        budget: a budget by name (e.g. ``"paper"``: the paper's sizes); overrides ``quick``.

    Returns:
        the results document (also in ``out_dir/results.json``).
    """
    import datasets
    import torch
    from tqdm.auto import tqdm

    from ._report import results_document, write_results

    if isinstance(reproduction, str):
        reproduction = get_reproduction(reproduction)
    mode = budget or ("quick" if quick else "full")
    if mode not in reproduction.budgets:
        from ..errors import InvalidInputError

        raise InvalidInputError(
            f"{reproduction.name}: no budget {mode!r}; budgets: {sorted(reproduction.budgets)}"
        )
    budget = reproduction.budgets[mode]
    n_seeds = seeds or budget.seeds
    out = Path(out_dir)
    _prepare_out_dir(out, resume, overwrite)
    save_dir = Path(save_models) if save_models else None
    torch.set_num_threads(reproduction.threads_per_worker)
    datasets.disable_progress_bars()
    started = time.time()
    timings: dict[str, float] = {}

    with _quiet_console(out / "train.log"):
        folds = _folds(reproduction, budget, data_dir)
        cache: dict[Any, TaskData] = {}
        for fold in folds:
            _fold_data(reproduction, fold, cache)
        resources = reproduction.resources(data_dir) if reproduction.resources else {}
    timings["prepare_data_s"] = time.time() - started
    by_name = _load_records(out) if resume else {}

    systems = budget_systems(reproduction, budget)
    extra = reproduction.extra_systems(budget, n_seeds) if reproduction.extra_systems else []
    capped = budget.seeds_per_system
    seeds_of = {s.key: list(range(min(n_seeds, capped.get(s.key, n_seeds)))) for s in systems}
    for system, system_seeds in extra:
        systems.append(system)
        seeds_of[system.key] = list(system_seeds)

    # ---- training jobs
    jobs = []
    for fold in folds:
        for system in systems:
            if not system.trainable:
                continue
            variants = (system, *(s for s in systems if s.decodes_model_of == system.key))
            for seed in seeds_of[system.key]:
                names = [run_name(v.key, seed, fold.id) for v in variants]
                if all(n in by_name for n in names):
                    continue
                jobs.append(Job(system, seed, fold.id, variants))
    jobs.sort(key=lambda job: -job.system.cost)
    if save_dir is not None:  # refuse a --save-models folder we may not replace now, not after training
        _check_save_models(save_dir, jobs)

    # ---- baselines that need no trained outputs run first
    plain = [s for s in systems if s.baseline is not None and not s.inputs]
    with tqdm(
        total=sum(len(folds) * (1 if s.deterministic else n_seeds) for s in plain),
        desc=f"{reproduction.name}: baselines",
        disable=not progress,
        file=sys.stderr,
    ) as bar:
        for fold in folds:
            for system in plain:
                for seed in [0] if system.deterministic else range(n_seeds):
                    name = run_name(system.key, seed, fold.id)
                    if name not in by_name:
                        record = _run_baseline(system, seed, fold, cache[fold.id], resources, by_name)
                        _save_record(out, record)
                        by_name[name] = record
                    bar.update()
    timings["baselines_s"] = time.time() - started - timings["prepare_data_s"]

    # ---- training
    t0 = time.time()
    with tqdm(
        total=len(jobs), desc=f"{reproduction.name}: training", disable=not progress, file=sys.stderr
    ) as bar:
        # worker processes look the reproduction up by name: an unregistered or modified one trains here
        registered = (
            reproduction.name in REPRODUCTIONS and get_reproduction(reproduction.name) is reproduction
        )
        if workers > 1 and len(jobs) > 1 and registered:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            context = multiprocessing.get_context("spawn")
            init = (
                reproduction.name,
                mode,
                data_dir,
                reproduction.threads_per_worker,
                str(out),
                save_dir and str(save_dir),
            )
            with ProcessPoolExecutor(
                min(workers, len(jobs)), mp_context=context, initializer=_init_worker, initargs=init
            ) as pool:
                futures = [pool.submit(_run_job, job) for job in jobs]
                for future in as_completed(futures):
                    for record in future.result():
                        by_name[run_name(record["system"], record["seed"], record["fold"])] = record
                    bar.update()
        else:
            fold_of = {fold.id: fold for fold in folds}
            with _quiet_console(out / "train.log"):
                for job in jobs:
                    data = _fold_data(reproduction, fold_of[job.fold_id], cache, job.system.prepare_options)
                    fold = fold_of[job.fold_id]
                    for record in train_and_score(job, reproduction, budget, data, out, save_dir, fold):
                        by_name[run_name(record["system"], record["seed"], record["fold"])] = record
                    bar.update()
    timings["training_s"] = time.time() - t0

    with _quiet_console(out / "train.log"):  # (the empty checkpoints folder of finished runs)
        if (out / "checkpoints").is_dir() and not any((out / "checkpoints").iterdir()):
            (out / "checkpoints").rmdir()

    # ---- systems built from other systems' outputs
    combined = [s for s in systems if s.baseline is not None and s.inputs]
    for fold in folds:
        for system in combined:
            for seed in range(n_seeds):
                name = run_name(system.key, seed, fold.id)
                if name not in by_name:
                    by_name[name] = _run_baseline(system, seed, fold, cache[fold.id], resources, by_name)
                    _save_record(out, by_name[name])

    # ---- the document
    records = sorted(by_name.values(), key=lambda r: (str(r["fold"]), r["seed"], r["system"]))
    table_split = {s.key: s.evaluate_on[0] for s in systems}
    system_runs: dict[str, list[dict[str, float]]] = defaultdict(list)
    for system in systems:
        if not system.in_table:
            continue
        for record in records:
            if record["system"] == system.key:
                system_runs[system.key].append(
                    table_scores(record, reproduction.table_splits)
                    if reproduction.table_splits
                    else record["scores"][table_split[system.key]]
                )
    context = RunContext(reproduction, budget, n_seeds, folds, cache, resources, records, out, save_dir)
    timings["total_s"] = time.time() - started
    config: dict[str, Any] = {
        **dict(reproduction.config),
        "quick": mode == "quick",
        "seeds": n_seeds,
        "budget": _jsonable(dataclasses.asdict(budget)),
        "folds": [fold.id for fold in folds] if folds[0].id is not None else None,
        "split_sizes": {str(k): len(v) for k, v in folds[0].splits.items()},
        "workers": workers,
        "torch_threads_per_worker": reproduction.threads_per_worker,
    }
    for analysis in reproduction.analyses:
        config.update(analysis(context))
    config["timings_s"] = {k: round(v, 1) for k, v in timings.items()}
    document = results_document(reproduction.name, system_runs, reproduction.paper_numbers, config)
    markdown = (reproduction.render_markdown or _default_markdown(reproduction))(document)
    write_results(document, out, markdown)
    if reproduction.plots is not None:
        reproduction.plots(document, out)
    if progress:
        print(summary_table(reproduction, document), file=sys.stderr)
    return document


def table_scores(record: Mapping[str, Any], splits: Sequence[str]) -> dict[str, float]:
    """One run's metrics of several test splits for the results document, as ``"<split>/<metric>"``."""
    return {f"{split}/{m}": v for split in splits for m, v in record["scores"].get(split, {}).items()}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _default_markdown(reproduction: Reproduction) -> Callable[[dict], str]:
    from ._report import markdown_table

    def render(document: dict) -> str:
        metrics = sorted({m for runs in document["systems"].values() for m in runs})
        labels = {key: reproduction.label(key) for key in document["systems"]}
        return f"# {reproduction.name}\n\n" + markdown_table(document, metrics, None, labels)

    return render


def summary_table(reproduction: Reproduction, document: dict) -> str:
    """The console summary: one row per system, ours (mean ± std) beside the paper's, table metrics."""
    from ._report import markdown_table

    systems = [s.key for s in reproduction.systems if s.in_table and s.key in document["systems"]]
    labels = {key: reproduction.label(key) for key in systems}
    mode = document["config"].get("budget", {}).get("name") or (
        "quick" if document["config"].get("quick") else "full"
    )
    seconds = document["config"].get("timings_s", {}).get("total_s")
    head = f"\n{reproduction.name} ({mode} run, {document['config'].get('seeds')} seed(s), {seconds} s)\n"
    return head + markdown_table(document, list(reproduction.table_metrics), systems, labels)


class _quiet_console:
    """Send the Trainer's / transformers' log records to ``log_file`` instead of the console while a
    stage runs (the Trainer's stdout prints are replaced by :class:`hf_querygen.training.LogFileCallback`)."""

    def __init__(self, log_file: Path):
        self.log_file = log_file

    def __enter__(self):
        from transformers.utils import logging as hf_logging

        self.handler = logging.FileHandler(self.log_file, encoding="utf-8")
        self.logger = hf_logging.get_logger()  # the "transformers" root logger
        self.level = self.logger.level
        self.propagate = self.logger.propagate
        self.old_handlers = list(self.logger.handlers)
        for handler in self.old_handlers:
            self.logger.removeHandler(handler)
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.INFO)
        self.bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # "Writing model shards" / "Loading weights" bars
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        for handler in self.old_handlers:
            self.logger.addHandler(handler)
        self.logger.setLevel(self.level)
        if self.bars:
            from transformers.utils import logging as hf_logging

            hf_logging.enable_progress_bar()
        self.handler.close()
        return False
