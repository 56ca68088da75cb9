"""One row's recipe, the one definition that the runner and ``hf-querygen train --system`` share: a
table's data folds under a budget (:func:`default_folds`, capped by the budget), the resolved training
settings of a row (:func:`row_settings`), the metadata naming them (:func:`recipe_metadata`), and all of
it for one row outside the runner (:func:`training_recipe` -> :class:`TrainingRecipe`)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..systems import System, get_system
from ..tasks.base import get_task
from ..training.recipe import DataSelection, Recipe
from .papers import REPRODUCTIONS, get_reproduction
from .tables import Budget, Fold, PaperTable

if TYPE_CHECKING:
    import datasets

    from ..tasks.base import Task


@dataclass
class TrainingRecipe:
    """Everything :func:`hf_querygen.training.train_model` needs to train one table row exactly as the
    runner does (:func:`hf_querygen.experiments.jobs.train_and_score`): the fold's splits, the prepare
    options, the preset with the budget's overrides, the training arguments, early stopping, the row's
    decoding, and the metadata that names the data (:func:`recipe_metadata`)."""

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

    def recipe(self) -> Recipe:
        """How :func:`~hf_querygen.training.train_model` trains the row (the seed and step budget are the
        caller's)."""
        return Recipe(
            preset=self.system.preset,
            preset_overrides=self.preset_overrides,
            training_preset=self.system.training_preset,
            training_overrides=self.training_overrides,
            prepare_options=self.prepare_options,
            train_options=row_train_options(self.system, self.budget),
            decoding=self.decoding,
            decoding_choice=self.system.decoding_choice,
            decoding_overrides=self.budget.row_decoding.get(self.system.key, {}),
            early_stopping_patience=self.early_stopping_patience,
            group_by_length=self.group_by_length,
        )

    def data(self, data_dir: str | Path | None = None) -> DataSelection:
        """What the row trains on: the fold's splits, and the metadata that names them."""
        return DataSelection(
            task=self.system.task, splits=self.splits, data_dir=data_dir, metadata=self.metadata
        )


def row_prepare_options(system: System, budget: Budget) -> dict[str, Any]:
    """The row's own prepare options under ``budget`` (``System.prepare_options``, then
    ``Budget.row_prepare``, then the backbone its preset starts from under the budget's preset overrides:
    :func:`~hf_querygen.presets.data_read_by_backbone`); the reproduction's come beneath them."""
    from ..presets import data_read_by_backbone  # loads transformers: not at the experiments' import

    options = {**dict(system.prepare_options), **budget.row_prepare.get(system.key, {})}
    overrides = {**system.preset_overrides, **budget.preset_overrides.get(system.key, {})}
    return data_read_by_backbone(system.preset, overrides, options)


def row_budget(system: System, budget: Budget) -> Budget:
    """``budget`` with the settings of the row's own fold (``System.fold_settings``: what it may leave out),
    as ``reproduce``, ``train --system`` and the single-row runs build it."""
    if not system.fold_settings:
        return budget
    return dataclasses.replace(budget, settings={**budget.settings, **system.fold_settings})


def row_train_options(system: System, budget: Budget) -> dict[str, Any]:
    """The row's ``train_preset`` options under ``budget`` (``System.train_options``, then
    ``Budget.row_train_options``)."""
    return {**dict(system.train_options), **budget.row_train_options.get(system.key, {})}


def row_settings(reproduction: PaperTable, system: System, budget: Budget) -> dict[str, Any]:
    """The resolved training settings of ``system`` under ``budget`` (what
    :func:`hf_querygen.experiments.jobs.train_and_score` passes to ``train_preset``): the one definition
    that ``train --system`` and the runner share."""
    return {
        "preset": system.preset,
        "preset_overrides": {**system.preset_overrides, **budget.preset_overrides.get(system.key, {})},
        "training_preset": system.training_preset,
        # the mode's budget wins over the system's own settings (quick mode: more steps, a higher rate),
        # except for a row with its own recipe under that budget (Budget.own_recipe)
        "training_overrides": {
            **(
                {**budget.training_overrides, **system.training_overrides}
                if system.key in budget.own_recipe
                else {**system.training_overrides, **budget.training_overrides}
            ),
            **budget.row_training.get(system.key, {}),
        },
        "prepare_options": {**reproduction.prepare_options, **row_prepare_options(system, budget)},
        "train_options": row_train_options(system, budget),
        "early_stopping_patience": budget.patience,
        "group_by_length": budget.group_by_length,
    }


def recipe_metadata(
    reproduction: PaperTable, system: System, budget: Budget, fold: Fold | None
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
    reproduction: PaperTable | None = None,
) -> TrainingRecipe:
    """The recipe of table row ``system`` under ``budget`` (default: its reproduction's
    ``train_budget``): the same fold, prepared data options, sizes, steps and checkpoint selection as
    ``hf-querygen reproduce <paper>`` (one seed; the seed is the caller's). ``reproduction``: a
    modified copy of the paper's (default: the registered one)."""
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
    chosen = row_budget(system, reproduction.budgets[name])
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


def _folds(reproduction: PaperTable, budget: Budget, data_dir: Any) -> list[Fold]:
    """The folds of ``reproduction`` that ``budget`` runs, each told the run's raw-data directory."""
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


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
