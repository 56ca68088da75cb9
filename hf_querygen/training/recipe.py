"""What :func:`~hf_querygen.training.train_model` trains, split by concern.

* :class:`Recipe`: how the model is built and trained (preset, optimiser settings, the task's prepare and
  train options, early stopping, the decoding saved with it, seed and step budget); what ``hf-querygen
  train --system`` and ``reproduce`` build for a table row
  (:meth:`hf_querygen.experiments.recipes.TrainingRecipe.recipe`);
* :class:`DataSelection`: what it is trained on (a task's corpus, or splits given directly, and caps).

Both are frozen: change a field with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..tasks.base import DecodingChoice

if TYPE_CHECKING:
    import datasets

    from ..tasks.base import Task


@dataclass(frozen=True)
class Recipe:
    """How one model is trained.

    ``preset`` / ``preset_overrides``: the model config (:data:`hf_querygen.presets.PRESETS`);
    ``training_preset`` (default: the preset's name) / ``training_overrides``: ``TrainingArguments``;
    ``prepare_options`` go to ``Task.prepare``, ``train_options`` to
    :func:`~hf_querygen.training.train_preset`; ``decoding`` (``Task.predict`` keyword arguments) is saved
    as ``config.task_decoding`` unless ``decoding_choice`` (:class:`~hf_querygen.tasks.base.DecodingChoice`;
    default: the task's grid) chooses it on validation;
    ``early_stopping_patience`` in evaluations (``None``: no early stopping);
    ``num_beams``: the saved generation config's; ``max_steps`` / ``epochs`` cap the training
    (``quick``: 150 steps, see :data:`~hf_querygen.training.QUICK_SETTINGS`)."""

    preset: str
    preset_overrides: Mapping[str, Any] = field(default_factory=dict)
    training_preset: str | None = None
    training_overrides: Mapping[str, Any] = field(default_factory=dict)
    prepare_options: Mapping[str, Any] = field(default_factory=dict)
    train_options: Mapping[str, Any] = field(default_factory=dict)
    decoding: Mapping[str, Any] = field(default_factory=dict)
    decoding_choice: DecodingChoice = field(default_factory=DecodingChoice)
    #: decoding fields set over ``decoding`` and every grid entry (a paper budget's ``row_decoding``)
    decoding_overrides: Mapping[str, Any] = field(default_factory=dict)
    early_stopping_patience: int | None = 3
    group_by_length: bool = True
    num_beams: int = 1
    seed: int = 42
    max_steps: int | None = None
    epochs: float | None = None
    quick: bool = False


@dataclass(frozen=True)
class DataSelection:
    """What a model is trained on: ``task`` (default: the one task that trains on ``corpus``; ``corpus``
    defaults to the task's first) loaded from ``data_dir``, or ``splits`` given directly (a paper row's
    own data); ``max_train_examples`` (a seeded shuffle) / ``max_validation_examples`` (the first ones
    of ``validation`` and of every ``<source>_validation`` split) cap them; ``metadata`` (e.g. a synthetic
    set's name, size and fingerprint) is saved with the model."""

    task: str | Task | None = None
    corpus: str | None = None
    config_name: str | None = None
    data_dir: str | Path | None = None
    splits: datasets.DatasetDict | None = None
    max_train_examples: int | None = None
    max_validation_examples: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


__all__ = ["DataSelection", "Recipe"]
