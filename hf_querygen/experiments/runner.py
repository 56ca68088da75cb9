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

The runner's parts: :mod:`.tables` (what a table declares), :mod:`.recipes` (a row's folds and
settings), :mod:`.jobs` (a training job, a baseline's run, their records); this module runs them in order
(:func:`run_reproduction`, one named step per stage) and writes the report.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fs import check_output_dir, check_writable_dir, claim_in_place_dir
from ..errors import InvalidInputError
from ..systems import System
from ..tasks.base import degenerate_reason
from ..training import MODEL_FOLDER_KIND, quiet_console
from ._report import markdown_table, results_document, write_results
from .jobs import (
    Job,
    _fold_data,
    _init_worker,
    _load_records,
    _run_baseline,
    _run_job,
    _save_record,
    run_name,
    train_and_score,
    with_variants,
)
from .papers import REPRODUCTIONS, get_reproduction
from .recipes import _folds, _jsonable, row_prepare_options
from .tables import REPRODUCTION_KIND, Budget, Fold, PaperTable, RunContext, results_paper

if TYPE_CHECKING:
    from ..tasks.base import TaskData


@dataclass
class Reproduction(PaperTable):
    """A paper table (:class:`~hf_querygen.experiments.tables.PaperTable`: its rows, numbers, budgets and
    hooks) that ``hf-querygen reproduce`` runs with :func:`run_reproduction`."""

    def reproduce(self, out_dir: str | Path, **options: Any) -> dict:
        """``hf-querygen reproduce``'s entry: :func:`run_reproduction` with the command's options
        (options a training table has no use for, ``models_dir``, are ignored)."""
        options.pop("models_dir", None)
        return run_reproduction(self, out_dir, **options)


# ---------------------------------------------------------------- the run
#: what a reproduction writes in its out_dir and ``overwrite`` deletes there (nothing else is touched)
REPRODUCTION_OUTPUTS = ("runs", "checkpoints", "results.json", "results.md", "train.log")


def _prepare_out_dir(out: Path, resume: bool, overwrite: bool, reproduction: PaperTable, mode: str) -> None:
    # the one owner of "may this run write, continue or replace here" (hf_querygen._fs): another
    # paper's or budget's run is never continued, a folder without our marker never written over
    claim_in_place_dir(
        out,
        REPRODUCTION_KIND,
        REPRODUCTION_OUTPUTS,
        identity={"paper": reproduction.name, "budget": mode},
        overwrite=overwrite,
        resume=resume,
        what="--out-dir",
        legacy_identity=lambda folder: _legacy_identity(folder, reproduction),
    )


def _legacy_identity(out: Path, reproduction: PaperTable) -> dict[str, Any] | None:
    """The paper of a reproduction folder marked before markers named it: its results.json's, else
    ``reproduction``'s when every run record there is of one of its systems (else unknown)."""
    import json

    found = results_paper(out)
    if found is not None:
        return found
    keys = {system.key for system in reproduction.systems}
    try:
        records = sorted((out / "runs").glob("*.json"))
        systems = {json.loads(path.read_text(encoding="utf-8")).get("system") for path in records}
    except (OSError, ValueError, AttributeError):
        return None
    return {"paper": reproduction.name} if systems and systems <= keys else None


def _check_save_models(save_dir: Path, jobs: Sequence[Job]) -> None:
    check_writable_dir(save_dir, "--save-models")
    for job in jobs:
        name = run_name(job.system.key, job.seed, job.fold_id)
        check_output_dir(save_dir / name, MODEL_FOLDER_KIND, overwrite=True, what="--save-models")


def budget_systems(reproduction: PaperTable, budget: Budget) -> list[System]:
    """The reproduction's rows that ``budget`` runs (all but ``budget.skip``)."""
    return [s for s in reproduction.systems if s.key not in budget.skip]


@dataclass(frozen=True)
class RunSettings:
    """What one call of :func:`run_reproduction` was asked to do; fixed before its first step."""

    reproduction: Reproduction
    mode: str
    budget: Budget
    n_seeds: int
    out: Path
    save_dir: Path | None
    data_dir: Any
    workers: int
    progress: bool


@dataclass
class ReproductionRun:
    """One call of :func:`run_reproduction`: its settings, and what its steps have produced so far."""

    settings: RunSettings
    started: float = field(default_factory=time.time)
    timings: dict[str, float] = field(default_factory=dict)
    folds: list[Fold] = field(default_factory=list)
    #: prepared data per fold (and per system prepare options: :func:`~.jobs._fold_data`)
    cache: dict[Any, TaskData] = field(default_factory=dict)
    resources: Mapping[str, Any] = field(default_factory=dict)
    #: run name -> its record: every finished run (with ``resume``, an earlier call's too)
    by_name: dict[str, dict[str, Any]] = field(default_factory=dict)
    systems: list[System] = field(default_factory=list)
    seeds_of: dict[str, list[int]] = field(default_factory=dict)


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

    Returns:
        the results document (also in ``out_dir/results.json``).
    """
    import datasets
    import torch

    if isinstance(reproduction, str):
        reproduction = get_reproduction(reproduction)
    mode = _budget_name(reproduction, budget, quick)
    chosen = reproduction.budgets[mode]
    out = Path(out_dir)
    _prepare_out_dir(out, resume, overwrite, reproduction, mode)
    save_dir = Path(save_models) if save_models else None
    torch.set_num_threads(reproduction.threads_per_worker)
    datasets.disable_progress_bars()
    run = ReproductionRun(
        RunSettings(
            reproduction, mode, chosen, seeds or chosen.seeds, out, save_dir, data_dir, workers, progress
        )
    )
    _prepare_data(run, resume)
    _choose_systems(run)
    jobs = _training_jobs(run)
    if save_dir is not None:  # refuse a --save-models folder we may not replace now, not after training
        _check_save_models(save_dir, jobs)
    # every stage's library and dependency logs, warnings and loading bars go to train.log (a numpy
    # warning from sumy's LexRank, transformers' "Loading weights"); the console keeps our bars and tables
    with quiet_console(out / "train.log"):
        # the baselines run here while the training workers start and train: they need no trained
        # output, and this process would otherwise leave a core idle
        _train(run, jobs, meanwhile=lambda: _run_plain_baselines(run))
        if (out / "checkpoints").is_dir() and not any((out / "checkpoints").iterdir()):
            (out / "checkpoints").rmdir()  # the empty checkpoints folder of finished runs
        _run_combined_systems(run)
        return _write_report(run)


def _budget_name(reproduction: Reproduction, budget: str | None, quick: bool) -> str:
    mode = budget or ("quick" if quick else "full")
    if mode not in reproduction.budgets:
        raise InvalidInputError(
            f"{reproduction.name}: no budget {mode!r}; budgets: {sorted(reproduction.budgets)}"
        )
    return mode


def _prepare_data(run: ReproductionRun, resume: bool) -> None:
    """The folds, their prepared data (the reproduction's prepare options), the shared resources; the
    records of finished runs when resuming."""
    settings = run.settings
    reproduction = settings.reproduction
    with quiet_console(settings.out / "train.log"):
        run.folds = _folds(reproduction, settings.budget, settings.data_dir)
        for fold in run.folds:
            _fold_data(reproduction, fold, run.cache)
        run.resources = reproduction.resources(settings.data_dir) if reproduction.resources else {}
    run.timings["prepare_data_s"] = time.time() - run.started
    run.by_name = _load_records(settings.out) if resume else {}


def _choose_systems(run: ReproductionRun) -> None:
    """The budget's rows plus the reproduction's extra runs, and the seeds each runs with."""
    reproduction, budget, n_seeds = run.settings.reproduction, run.settings.budget, run.settings.n_seeds
    systems = budget_systems(reproduction, budget)
    extra = reproduction.extra_systems(budget, n_seeds) if reproduction.extra_systems else []
    capped = budget.seeds_per_system
    seeds_of = {s.key: list(range(min(n_seeds, capped.get(s.key, n_seeds)))) for s in systems}
    for system, system_seeds in extra:
        systems.append(system)
        seeds_of[system.key] = list(system_seeds)
    run.systems, run.seeds_of = systems, seeds_of


def _training_jobs(run: ReproductionRun) -> list[Job]:
    """A job per trainable system x seed x fold not finished yet, the costliest first."""
    jobs = []
    for fold in run.folds:
        for system in run.systems:
            if not system.trainable:
                continue
            variants = with_variants(system, run.systems)
            for seed in run.seeds_of[system.key]:
                names = [run_name(v.key, seed, fold.id) for v in variants]
                if all(n in run.by_name for n in names):
                    continue
                jobs.append(Job(system, seed, fold.id, variants))
    jobs.sort(key=lambda job: -job.system.cost)
    return jobs


def _run_plain_baselines(run: ReproductionRun) -> None:
    """The baselines that need no trained outputs: once per fold if deterministic, else per seed."""
    from tqdm.auto import tqdm

    settings = run.settings
    started = time.time()
    plain = [s for s in run.systems if s.baseline is not None and not s.inputs]
    with tqdm(
        total=sum(len(run.folds) * (1 if s.deterministic else settings.n_seeds) for s in plain),
        desc=f"{settings.reproduction.name}: baselines",
        disable=not settings.progress,
        file=sys.stderr,
    ) as bar:
        for fold in run.folds:
            for system in plain:
                for seed in [0] if system.deterministic else range(settings.n_seeds):
                    name = run_name(system.key, seed, fold.id)
                    if name not in run.by_name:
                        record = _run_baseline(
                            system, seed, fold, run.cache[fold.id], run.resources, run.by_name
                        )
                        _save_record(settings.out, record)
                        run.by_name[name] = record
                    bar.update()
    run.timings["baselines_s"] = time.time() - started


def _train(run: ReproductionRun, jobs: Sequence[Job], meanwhile: Callable[[], None]) -> None:
    """Every training job: in ``workers`` spawned processes, or here (one worker, one job, or a
    reproduction the workers cannot look up by name: unregistered or a modified copy). ``meanwhile``
    runs in this process while the workers train (before the jobs when they train here)."""
    from tqdm.auto import tqdm

    reproduction = run.settings.reproduction
    t0 = time.time()
    registered = reproduction.name in REPRODUCTIONS and get_reproduction(reproduction.name) is reproduction
    in_workers = run.settings.workers > 1 and len(jobs) > 1 and registered
    if not in_workers:
        meanwhile()
        t0 = time.time()

    def bar() -> Any:
        return tqdm(
            total=len(jobs),
            desc=f"{reproduction.name}: training",
            disable=not run.settings.progress,
            file=sys.stderr,
        )

    if in_workers:
        _train_in_workers(run, jobs, bar, meanwhile)
    else:
        with bar() as progress:
            _train_here(run, jobs, progress)
    run.timings["training_s"] = time.time() - t0


def _train_in_workers(
    run: ReproductionRun, jobs: Sequence[Job], bar: Callable[[], Any], meanwhile: Callable[[], None]
) -> None:
    """Spawned processes, each preparing the (deterministic) data itself (:func:`~.jobs._init_worker`);
    ``meanwhile`` runs here once the jobs are submitted, then the progress ``bar()`` follows them."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    settings = run.settings
    context = multiprocessing.get_context("spawn")
    init = (
        settings.reproduction.name,
        settings.mode,
        settings.data_dir,
        settings.reproduction.threads_per_worker,
        str(settings.out),
        settings.save_dir and str(settings.save_dir),
    )
    with ProcessPoolExecutor(
        min(settings.workers, len(jobs)), mp_context=context, initializer=_init_worker, initargs=init
    ) as pool:
        futures = [pool.submit(_run_job, job) for job in jobs]
        try:
            meanwhile()
        except BaseException:  # the jobs not started yet are dropped; the running ones end first
            for future in futures:
                future.cancel()
            raise
        with bar() as progress:
            for future in as_completed(futures):
                for record in future.result():
                    run.by_name[run_name(record["system"], record["seed"], record["fold"])] = record
                progress.update()


def _train_here(run: ReproductionRun, jobs: Sequence[Job], bar: Any) -> None:
    """In this process, on the data the run prepared (plus each system's own prepare options)."""
    settings = run.settings
    fold_of = {fold.id: fold for fold in run.folds}
    with quiet_console(settings.out / "train.log"):
        for job in jobs:
            fold = fold_of[job.fold_id]
            options = row_prepare_options(job.system, settings.budget)
            data = _fold_data(settings.reproduction, fold, run.cache, options)
            records = train_and_score(
                job,
                settings.reproduction,
                settings.budget,
                data,
                settings.out,
                settings.save_dir,
                fold,
            )
            for record in records:
                run.by_name[run_name(record["system"], record["seed"], record["fold"])] = record
            bar.update()


def _run_combined_systems(run: ReproductionRun) -> None:
    """The systems built from other systems' outputs (``System.inputs``), every seed."""
    combined = [s for s in run.systems if s.baseline is not None and s.inputs]
    for fold in run.folds:
        for system in combined:
            for seed in range(run.settings.n_seeds):
                name = run_name(system.key, seed, fold.id)
                if name not in run.by_name:
                    record = _run_baseline(system, seed, fold, run.cache[fold.id], run.resources, run.by_name)
                    run.by_name[name] = record
                    _save_record(run.settings.out, record)


def _write_report(run: ReproductionRun) -> dict:
    """The analyses, then ``results.json`` / ``results.md`` / plots and the printed summary."""
    settings = run.settings
    reproduction = settings.reproduction
    records = sorted(run.by_name.values(), key=lambda r: (str(r["fold"]), r["seed"], r["system"]))
    context = RunContext(
        reproduction,
        settings.budget,
        settings.n_seeds,
        run.folds,
        run.cache,
        run.resources,
        records,
        settings.out,
        settings.save_dir,
    )
    _add_measures(run, records)
    run.timings["total_s"] = time.time() - run.started
    config = _run_config(run)
    config["degenerate_outputs"] = degenerate_shares(run, records)
    for analysis in reproduction.analyses:
        config.update(analysis(context))
    config["timings_s"] = {k: round(v, 1) for k, v in run.timings.items()}
    document = results_document(
        reproduction.name, _system_runs(run, records), reproduction.paper_numbers, config
    )
    markdown = (reproduction.render_markdown or _default_markdown(reproduction))(document)
    write_results(document, settings.out, markdown)
    if reproduction.plots is not None:
        reproduction.plots(document, settings.out)
    if settings.progress:
        print(summary_table(reproduction, document), file=sys.stderr)
    return document


def _add_measures(run: ReproductionRun, records: Sequence[dict[str, Any]]) -> None:
    """The reproduction's ``measures`` of each record's outputs on the splits the table reports, added to
    the record's scores (in memory: the saved records keep what the run measured)."""
    measures = run.settings.reproduction.measures
    if not measures:
        return
    import torch

    started = time.time()
    first_split = {s.key: s.evaluate_on[0] for s in run.systems if s.in_table}
    # the training workers are done: the measures (a sentence encoder) may use the cores they had
    threads = torch.get_num_threads()
    settings = run.settings
    torch.set_num_threads(max(threads, settings.workers * settings.reproduction.threads_per_worker))
    try:
        for record in records:
            if record["system"] not in first_split:  # runs that only feed an analysis
                continue
            data = run.cache.get(record["fold"])
            splits = settings.reproduction.table_splits or (first_split.get(record["system"]),)
            for split in splits:
                outputs = record.get("outputs", {}).get(split)
                if data is None or outputs is None or split not in record.get("scores", {}):
                    continue
                for measure in measures:
                    record["scores"][split].update(measure(data, split, list(outputs)))
    finally:
        torch.set_num_threads(threads)
    run.timings["measures_s"] = time.time() - started


def _system_runs(run: ReproductionRun, records: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """Table row -> the table's scores of each of its runs (seeds x folds)."""
    table_split = {s.key: s.evaluate_on[0] for s in run.systems}
    table_splits = run.settings.reproduction.table_splits
    system_runs: dict[str, list[dict[str, float]]] = defaultdict(list)
    for system in run.systems:
        if not system.in_table:
            continue
        for record in records:
            if record["system"] == system.key:
                system_runs[system.key].append(
                    table_scores(record, table_splits)
                    if table_splits
                    else record["scores"][table_split[system.key]]
                )
    return system_runs


def _run_config(run: ReproductionRun) -> dict[str, Any]:
    """The document's ``config``: the paper's static entries and how this run ran."""
    settings = run.settings
    folds = run.folds
    return {
        **dict(settings.reproduction.config),
        "quick": settings.mode == "quick",
        "seeds": settings.n_seeds,
        "budget": _jsonable(dataclasses.asdict(settings.budget)),
        "folds": [fold.id for fold in folds] if folds[0].id is not None else None,
        "split_sizes": {str(k): len(v) for k, v in folds[0].splits.items()},
        "workers": settings.workers,
        "torch_threads_per_worker": settings.reproduction.threads_per_worker,
    }


def degenerate_shares(run: ReproductionRun, records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Table row -> the share of its outputs on the table's splits (every seed) that look degenerate
    (:func:`~hf_querygen.tasks.base.degenerate_reason`: empty, only or mostly punctuation, a word
    repeated); rows with none are left out. A quick run's console table names the rows where most are
    (:func:`smoke_run_notes`)."""
    table_splits = run.settings.reproduction.table_splits
    first_split = {s.key: s.evaluate_on[0] for s in run.systems if s.in_table}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        if record["system"] not in first_split:
            continue
        for split in table_splits or (first_split[record["system"]],):
            outputs = record.get("outputs", {}).get(split) or []
            counts[record["system"]][0] += sum(degenerate_reason(str(o)) is not None for o in outputs)
            counts[record["system"]][1] += len(outputs)
    return {key: round(bad / total, 3) for key, (bad, total) in counts.items() if total and bad}


def table_scores(record: Mapping[str, Any], splits: Sequence[str]) -> dict[str, float]:
    """One run's metrics of several test splits for the results document, as ``"<split>/<metric>"``."""
    return {f"{split}/{m}": v for split in splits for m, v in record["scores"].get(split, {}).items()}


def _default_markdown(reproduction: PaperTable) -> Callable[[dict], str]:
    def render(document: dict) -> str:
        metrics = sorted({m for runs in document["systems"].values() for m in runs})
        labels = {key: reproduction.label(key) for key in document["systems"]}
        return f"# {reproduction.name}\n\n" + markdown_table(document, metrics, None, labels)

    return render


def summary_table(reproduction: PaperTable, document: dict) -> str:
    """The console summary: one row per system, ours (mean ± std) beside the paper's, table metrics."""
    systems = [s.key for s in reproduction.systems if s.in_table and s.key in document["systems"]]
    labels = {key: reproduction.label(key) for key in systems}
    mode = document["config"].get("budget", {}).get("name") or (
        "quick" if document["config"].get("quick") else "full"
    )
    seconds = document["config"].get("timings_s", {}).get("total_s")
    run = f"{mode} run, {document['config'].get('seeds')} seed(s), {seconds} s"
    if mode == "quick":
        run = f"QUICK SMOKE RUN: tiny models trained for minutes, 1 seed, {seconds} s"
    head = f"\n{reproduction.name} ({run})\n"
    table = markdown_table(document, list(reproduction.table_metrics), systems, labels)
    every_label = {s.key: reproduction.label(s.key) for s in reproduction.systems}
    return (
        head + table + smoke_run_notes(document, list(reproduction.table_metrics), systems, every_label, mode)
    )


#: a quick run's console table names the rows with at least this share of degenerate outputs
DEGENERATE_NOTE_SHARE = 0.5


def smoke_run_notes(
    document: dict, metrics: list[str], systems: list[str], labels: dict[str, str], mode: str
) -> str:
    """A quick run's footnote: which rows read 0.000, or write mostly degenerate outputs
    (``config["degenerate_outputs"]``, :func:`degenerate_shares`), and why (the smoke-sized models write
    nothing useful yet), which rows the budget leaves out (``skip``), and where the real numbers are.
    Empty for other budgets. ``labels``: row key -> label, the left-out rows' too."""
    if mode != "quick":
        return ""
    zero = [
        labels.get(key, key)
        for key in systems
        if any(
            isinstance(document["systems"][key].get(metric), dict)
            and document["systems"][key][metric].get("mean") == 0
            for metric in metrics
        )
    ]
    shares = document["config"].get("degenerate_outputs") or {}
    degenerate = [
        f"{labels.get(key, key)}: {shares[key]:.0%}"
        for key in systems
        if shares.get(key, 0) >= DEGENERATE_NOTE_SHARE and labels.get(key, key) not in zero
    ]
    note = "\nThese are not results: the committed full-run tables are in results/<paper>/results.md."
    skipped = (document["config"].get("budget") or {}).get("skip") or ()
    if skipped:
        note += f"\nRows a smoke run leaves out: {', '.join(labels.get(key, key) for key in skipped)}."
    if zero:
        note += (
            f"\nRows at 0.000 ({', '.join(zero)}): their smoke-sized models are trained too briefly to "
            "write a correct output yet; a full run trains them to convergence."
        )
    if degenerate:
        note += (
            "\nRows whose outputs are mostly degenerate (empty, only or mostly punctuation, or a word "
            "repeated; "
            f"{', '.join(degenerate)}): their smoke-sized models are trained too briefly to write a useful "
            "output yet; they score only the words they happen to share with the reference."
        )
    return note + "\n"
