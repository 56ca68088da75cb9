"""Systems: the rows of a paper's table, registered by name in :data:`SYSTEMS`.

A :class:`System` is a name, a task and EITHER a preset (a trainable model, with preset and training
overrides) OR a baseline callable. The experiment runner (:mod:`hf_querygen.experiments.runner`) runs
a list of systems; ``hf-querygen train --system NAME`` trains a trainable one. Variants of one trained
model (another decoding) name it in ``decodes_model_of``; systems built from other systems' outputs
(Liu'18's ATS2S+SL = the union of two systems' keywords) list them in ``inputs``.

Names are ``"<paper>/<system>"`` (``"liu2018/dual_decoder"``) so that papers never collide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InvalidInputError
from .experiments.papers import paper_modules
from .registry import Registry
from .tasks.base import DecodingChoice

if TYPE_CHECKING:
    from .tasks.base import TaskData


@dataclass(frozen=True)
class BaselineContext:
    """What a baseline callable gets: the task data of this run (splits, tokenizer), the split to
    predict, the seed, and the outputs of the systems named in ``System.inputs`` on that split."""

    data: TaskData
    split: str
    seed: int
    inputs: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    resources: Mapping[str, Any] = field(default_factory=dict)

    def sources(self) -> list[str]:
        return self.data.sources(self.split)


#: a baseline: context -> one task output per example of ``context.split`` (plus optional run info,
#: returned as ``(outputs, info_dict)``)
Baseline = Callable[[BaselineContext], Any]


@dataclass(frozen=True)
class System:
    """One row of a paper table.

    Attributes:
        name: registry name, ``"<paper>/<key>"``; ``key`` is the row's key in results.json.
        task: the :data:`~hf_querygen.tasks.base.TASKS` name.
        label: the row label of the markdown table.
        preset: model preset (trainable system) ...
        baseline: ... or a baseline callable (exactly one of the two, or ``decodes_model_of``).
        preset_overrides: config fields on top of the preset (e.g. ``{"dropout": 0.4}``).
        training_preset: name in ``TRAINING_PRESETS`` (default: the preset's own, if any).
        training_overrides: ``Seq2SeqTrainingArguments`` fields on top of it.
        decoding: keyword arguments of ``Task.predict`` (e.g. ``{"constrained": False}``).
        decoding_choice: how the decoding saved with the model is chosen on VALIDATION after training
            (:class:`~hf_querygen.tasks.base.DecodingChoice`: the grid, each entry on top of
            ``decoding``, the metric, the sample of each split); the default tries the task's
            ``decoding_grid`` (k2q's; empty for most tasks: ``decoding`` as it is). A row that decodes
            another's model (``decodes_model_of``) is chosen on validation only with a grid of its own.
        decodes_model_of: key of a trainable system of the same table whose trained model this row
            decodes (with its own ``decoding``) instead of training one.
        inputs: keys of systems whose outputs a baseline combines (run before it).
        deterministic: a baseline that gives the same output for every seed (run once).
        evaluate_on: splits scored (the table's split first).
        in_table: False for runs that only feed an analysis (e.g. a hyper-parameter sweep).
        cost: relative training cost (the runner starts the longest jobs first).
        prepare_options: keyword arguments of ``Task.prepare`` for this row's data (e.g. nl2kw's
            ``{"keyword_order": "natural", "vocabulary": "in-domain"}``); rows with the same options
            share one prepared data set.
        train_options: keyword arguments of :func:`hf_querygen.training.train_preset` (``pretrain_on``,
            ``pretrain_steps``, ``word_vectors``, ``freeze_embeddings``).
        fold_settings: budget settings that ``train --system`` gives this row's fold on top of the
            budget's (:func:`hf_querygen.experiments.recipes.training_recipe`): a row that does not use a
            costly part of the shared fold need not build it (ding2018's question-frame row: no synthetic
            set). The runner's one fold serves every row, so they may only leave out what the row's
            ``prepare_options`` drop anyway.
    """

    name: str
    task: str
    label: str = ""
    preset: str | None = None
    baseline: Baseline | None = None
    preset_overrides: Mapping[str, Any] = field(default_factory=dict)
    training_preset: str | None = None
    training_overrides: Mapping[str, Any] = field(default_factory=dict)
    decoding: Mapping[str, Any] = field(default_factory=dict)
    decoding_choice: DecodingChoice = field(default_factory=DecodingChoice)
    decodes_model_of: str | None = None
    inputs: tuple[str, ...] = ()
    deterministic: bool = True
    evaluate_on: tuple[str, ...] = ("test",)
    in_table: bool = True
    cost: float = 1.0
    prepare_options: Mapping[str, Any] = field(default_factory=dict)
    train_options: Mapping[str, Any] = field(default_factory=dict)
    fold_settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kinds = [self.preset is not None, self.baseline is not None, self.decodes_model_of is not None]
        if sum(kinds) != 1:
            raise InvalidInputError(
                f"system {self.name!r}: give exactly one of preset, baseline or decodes_model_of"
            )

    @property
    def key(self) -> str:
        """The row key in results.json (the name without the paper prefix)."""
        return self.name.rsplit("/", 1)[-1]

    @property
    def trainable(self) -> bool:
        return self.preset is not None

    @property
    def neural(self) -> bool:
        """Trained or decoding a trained model: one run per seed."""
        return self.preset is not None or self.decodes_model_of is not None


#: "<paper>/<system>" -> :class:`System`; the paper modules (every registered paper's, plugins' too)
#: register theirs at import, on the first lookup (the paper registry lists them then)
SYSTEMS: Registry[System] = Registry("system", modules=paper_modules)


def register_systems(systems: Sequence[System]) -> list[System]:
    """Register every system of a table; returns them (the table's row order)."""
    return [SYSTEMS.register(system.name, system) for system in systems]


def get_system(name: str | System) -> System:
    return name if isinstance(name, System) else SYSTEMS.get(name)
