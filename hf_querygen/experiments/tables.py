"""What a paper table declares: its rows, the paper's numbers, a :class:`Budget` per mode, how its data
splits into :class:`Fold` s, and the hooks that analyse and report a run (:class:`PaperTable`); what
those hooks get (:class:`RunContext`); a table that trains nothing (:class:`Evaluation`).

:class:`~hf_querygen.experiments.runner.Reproduction` is a :class:`PaperTable` that ``hf-querygen
reproduce`` runs; the runner's parts below it (the recipes, the jobs) read the declaration only, so it
sits here, beneath them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .._fs import claim_in_place_dir
from ..systems import System

#: the .hf_querygen marker kind of a reproduction's out_dir (see hf_querygen._fs)
REPRODUCTION_KIND = "reproduction"


def results_paper(out: Path) -> dict[str, str] | None:
    """``{"paper": ...}`` of the results.json in ``out`` (a folder marked before markers named their
    paper), or None when there is none to read."""
    import json

    try:
        paper = json.loads((Path(out) / "results.json").read_text(encoding="utf-8")).get("paper")
    except (OSError, ValueError, AttributeError):
        return None
    return {"paper": paper} if isinstance(paper, str) else None


if TYPE_CHECKING:
    import datasets

    from ..tasks.base import Task, TaskData


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
    #: system key -> ``Seq2SeqTrainingArguments`` fields this mode gives that row above every other setting
    #: (a smoke run's few steps for a row whose own recipe is long, e.g. a pretrained network)
    row_training: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: system key -> decoding fields this mode sets over that row's decoding and every entry of its
    #: decoding grid (a smoke run's greedy search and short outputs for a row whose beam search over a
    #: briefly trained pretrained network is slow); the record's ``decoding`` says what was used
    row_decoding: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: system key -> prepare options this mode gives that row over its own (a smoke run's shorter inputs for
    #: a row whose steps are slow on long ones, e.g. fewer documents per query)
    row_prepare: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: system key -> ``train_preset`` options this mode gives that row over its own (a smoke run's few
    #: pretraining steps for a row that pretrains, ``pretrain_steps``)
    row_train_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: seconds of training per run, then the run stops and keeps its best checkpoint by validation
    #: (:class:`~hf_querygen.training.TimeLimitCallback`; e.g. a GPU lease); None: the schedule decides
    time_limit_s: float | None = None


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

    reproduction: PaperTable
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
class PaperTable:
    """A paper table: what to run and how to report it (the runner's
    :class:`~hf_querygen.experiments.runner.Reproduction` adds the entry that runs it).

    systems: the rows (and extra runs with ``in_table=False``), in table order.
    paper_numbers: system key -> metric -> the paper's value.
    table_metrics: the metrics of the printed summary table (first = the headline metric).
    budgets: ``{"full": Budget, "quick": Budget}``.
    folds: (task, budget, data_dir) -> list of :class:`Fold` (default: the task's own splits).
    resources: data_dir -> shared resources for baselines / hooks (loaded once per process).
    extra_systems: (budget, seeds) -> [(System, seeds to run it with)]: runs that only feed analyses.
    measures: (data, split, outputs) -> metrics added to a run's scores of ``split`` at report time, from
        the run's saved outputs (so resumed and earlier runs get them too): measures beyond the task's
        scores that need no retraining (Ding'18's well-formedness and keywords kept). Applied to the
        splits the table reports (``table_splits``, else each row's first ``evaluate_on`` split).
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
    measures: Sequence[Callable[[TaskData, str, list[str]], Mapping[str, float]]] = ()
    analyses: Sequence[Callable[[RunContext], Mapping[str, Any]]] = ()
    render_markdown: Callable[[dict], str] | None = None
    plots: Callable[[dict, Path], None] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    prepare_options: Mapping[str, Any] = field(default_factory=dict)
    threads_per_worker: int = 1
    table_splits: tuple[str, ...] = ()
    #: the budget whose recipe ``hf-querygen train --system <paper>/<row>`` trains (the table's data,
    #: sizes, steps and checkpoint selection: :func:`hf_querygen.experiments.recipes.training_recipe`);
    #: None: ``train --system`` trains on the task's own corpus with the system's settings
    train_budget: str | None = None

    #: a table that reads another paper's saved models names it (None: it trains its own)
    models_of: ClassVar[str | None] = None

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
        """Run it (the training options of ``reproduce``, ``workers`` / ``save_models`` ..., do not
        apply). ``out_dir`` goes through the same owner as a training table's: another paper's or
        budget's results are never replaced, those of this evaluation only with ``resume`` (it is
        computed again) or ``overwrite``."""
        mode = "quick" if quick else "full"
        claim_in_place_dir(
            out_dir,
            REPRODUCTION_KIND,
            ("results.json", "results.md"),
            identity={"paper": self.name, "budget": mode},
            overwrite=bool(_training_options.get("overwrite")),
            resume=bool(_training_options.get("resume")),
            what="--out-dir",
            legacy_identity=results_paper,
        )
        document = self.run(out_dir, quick=quick, seeds=seeds, data_dir=data_dir, models_dir=models_dir)
        print(self.summary(document), flush=True)
        return document
