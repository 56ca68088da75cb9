"""``hf-querygen train`` / ``evaluate`` / ``generate`` / ``reformulate``: thin argument parsing over library
functions (:func:`hf_querygen.training.train_model`, :meth:`hf_querygen.tasks.base.Task.evaluate` /
:meth:`~hf_querygen.tasks.base.Task.predict`). Nothing heavy is imported to build the parser."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from ._fs import check_output_dir, check_output_file
from ._ray import LOCAL
from .batch_reformulation import ReformulationSettings, print_summary, reformulate
from .cli import LazyChoices, non_negative_int, positive_float, positive_int
from .errors import InvalidInputError
from .experiments.papers import REPRODUCTIONS, budget_names, get_reproduction
from .experiments.recipes import training_recipe
from .metrics.wellformedness_classifier import DEFAULT_BACKBONE, build_classifier, classifier_report
from .model_folder import load_trained
from .systems import get_system
from .tasks.base import TASKS, get_task
from .training import (
    MODEL_FOLDER_KIND,
    QUICK_SETTINGS,
    TRAIN_LOG_FILE,
    DataSelection,
    Recipe,
    quiet_console,
    train_model,
)
from .utils import TRAINING_METADATA_FILE

THREADS_HELP = "torch CPU threads (default 1: these small RNNs gain little from more; 0 = torch's default)"


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``train``, ``evaluate``, ``generate``, ``reformulate`` and ``classifier`` to the ``hf-querygen``
    parser. Stays long because it is one argparse declaration: each subcommand's arguments in the order
    its ``--help`` lists them, with nothing to compute between them."""
    train = subparsers.add_parser(
        "train", help="train a preset (or a paper system) on a task's corpus; writes a model folder"
    )
    train.add_argument(
        "--task",
        default=None,
        metavar="TASK",
        choices=LazyChoices(lambda: TASKS.names()),
        help="%(choices)s (default: the task that trains on --corpus)",
    )
    train.add_argument("--corpus", default=None, help="default: the task's first corpus")
    train.add_argument("--config", default=None, help="corpus config (default: the task's)")
    which = train.add_mutually_exclusive_group(required=True)
    which.add_argument("--preset", help="model preset (hf_querygen.presets.PRESETS)")
    which.add_argument(
        "--system", help="a paper system (hf_querygen.systems.SYSTEMS), e.g. liu2018/dual_decoder"
    )
    train.add_argument(
        "--budget",
        default=None,
        help="--system: train the row as this budget of `reproduce` trains it (the table's data, sizes, "
        f"steps and checkpoint selection); budgets: {_budget_listing()}",
    )
    train.add_argument(
        "--task-corpus-only",
        action="store_true",
        help="--system: train on the task's own corpus (k2q: the QALD seed pairs) instead of the table's "
        "training data (ding2018: the synthetic pairs)",
    )
    train.add_argument("--output-dir", type=Path, required=True)
    train.add_argument("--overwrite", action="store_true", help="replace an existing --output-dir")
    train.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    train.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: with --system, its paper's `quick` budget (as `reproduce --quick`); with "
        f"--preset, {QUICK_SETTINGS['max_steps']} steps and {QUICK_SETTINGS['max_validation_examples']} "
        "validation examples",
    )
    train.add_argument(
        "--max-steps", type=positive_int, default=None, help="stop after this many optimiser steps"
    )
    train.add_argument(
        "--time-limit",
        type=positive_float,
        default=None,
        metavar="MINUTES",
        help="stop training after this many minutes (evaluated and saved; the best checkpoint is kept)",
    )
    train.add_argument("--epochs", type=positive_float, default=None, help="override the preset's epochs")
    train.add_argument(
        "--max-train-examples", type=positive_int, default=None, help="train on a random subset"
    )
    train.add_argument(
        "--max-validation-examples",
        type=positive_int,
        default=None,
        help="validate on the first N examples of each validation split (the decoding is chosen on them too)",
    )
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a config field of the preset (JSON value), e.g. --set hidden_size=64; repeatable",
    )
    train.add_argument("--seed", type=non_negative_int, default=42)
    train.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    train.add_argument("--num-beams", type=positive_int, default=1, help="saved generation config")
    train.add_argument(
        "--group-by-length",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="batch examples of similar source length (faster; default on)",
    )
    train.add_argument("--threads", type=non_negative_int, default=1, help=THREADS_HELP)
    train.add_argument(
        "--verbose",
        action="store_true",
        help="print transformers' logs, warnings and the Trainer's log dicts, and the whole training record "
        "as JSON on stdout (default: a progress bar and a summary; they go to train.log and "
        "hf_querygen_training.json in the model folder)",
    )
    train.set_defaults(func=_train_command)

    evaluate = subparsers.add_parser("evaluate", help="score a trained model on a corpus split (JSON out)")
    evaluate.add_argument("--model", type=Path, required=True, help="folder written by `train`")
    evaluate.add_argument("--corpus", default=None, help="default: the corpus the model was trained on")
    evaluate.add_argument("--config", default=None)
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--data-dir", type=Path, default=None)
    evaluate.add_argument(
        "--num-beams", type=positive_int, default=None, help="default: the saved generation config"
    )
    evaluate.add_argument("--batch-size", type=positive_int, default=64)
    evaluate.add_argument("--limit", type=positive_int, default=None, help="score only the first N examples")
    evaluate.add_argument("--predictions", type=Path, default=None, help="also write outputs (JSON lines)")
    evaluate.add_argument(
        "--no-record",
        dest="record",
        action="store_false",
        help="do not add the scores to the model folder's hf_querygen_evaluations.json (which `export` "
        "puts on the model card)",
    )
    evaluate.add_argument("--threads", type=non_negative_int, default=1, help=THREADS_HELP)
    evaluate.set_defaults(func=_evaluate_command)

    generate = subparsers.add_parser("generate", help="run a trained model on texts (its task's output)")
    generate.add_argument("--model", type=Path, required=True)
    generate.add_argument("texts", nargs="+")
    generate.add_argument("--num-beams", type=positive_int, default=None)
    generate.add_argument("--num-return-sequences", type=positive_int, default=None, help="default: 1")
    generate.add_argument("--max-new-tokens", type=positive_int, default=None)
    generate.add_argument("--threads", type=non_negative_int, default=1, help=THREADS_HELP)
    generate.set_defaults(func=_generate_command)

    reformulate = subparsers.add_parser(
        "reformulate",
        help="run a trained model over a query file in batches (resumable); writes a parquet file",
        description="Every line of --input (.tsv: id<TAB>text with an optional header; .txt: one query per "
        "line, ids = line numbers) through the model's task, in chunks written as they finish (rerun the "
        "same command to continue a killed run), then --output (parquet: id, input, output).",
    )
    reformulate.add_argument("--model", type=Path, required=True, help="model folder (hf-querygen train)")
    reformulate.add_argument("--input", type=Path, required=True, help="queries (.tsv or .txt)")
    reformulate.add_argument("--output", type=Path, required=True, help="parquet file to write")
    reformulate.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    reformulate.add_argument("--batch-size", type=positive_int, default=64, help="queries per model call")
    reformulate.add_argument(
        "--chunk-size", type=positive_int, default=10_000, help="queries per part file (resume granularity)"
    )
    reformulate.add_argument("--num-beams", type=positive_int, default=None)
    reformulate.add_argument("--max-new-tokens", type=positive_int, default=None)
    reformulate.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help="run the chunks through Ray Data (map_batches on --workers actors, the model loaded once per "
        "actor; pip install 'hf-querygen[ray]'): on the cluster at ADDRESS (the files on a file system "
        "every node sees), or without ADDRESS on a Ray started on this machine, else a local one",
    )
    reformulate.add_argument(
        "--workers", type=positive_int, default=1, help="--ray: model replicas (actors), one CPU each"
    )
    reformulate.add_argument("--threads", type=non_negative_int, default=1, help=THREADS_HELP)
    reformulate.set_defaults(func=_reformulate_command)

    classifier = subparsers.add_parser(
        "wellformedness-classifier",
        help="build (once, into the cache) the question well-formedness classifier of the `wellformedness` "
        "metric: the backbone fine-tuned on the query-wellformedness corpus; prints its accuracies (JSON)",
    )
    classifier.add_argument(
        "--backbone", default=None, help="Hub id or folder (default the offline all-MiniLM-L6-v2)"
    )
    classifier.add_argument(
        "--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)"
    )
    classifier.add_argument(
        "--output-dir", type=Path, default=None, help="write it here instead of the cache (never reused)"
    )
    classifier.add_argument("--overwrite", action="store_true", help="build again even if it is cached")
    classifier.add_argument("--threads", type=non_negative_int, default=1, help=THREADS_HELP)
    classifier.set_defaults(func=_wellformedness_classifier_command)


def _budget_listing() -> str:
    """Each paper's budgets, from the registered paper data files (no paper module is imported)."""
    return "; ".join(f"{paper}: {', '.join(names)}" for paper, names in budget_names().items())


def set_threads(threads: int) -> None:
    # measured on the 2-core dev machine under load: the quick nl2kw job took 5.5 CPU-minutes with
    # torch's 2 threads and under 2 with one (thread synchronisation dominates at these sizes)
    if threads > 0:
        import torch

        torch.set_num_threads(threads)


def _train_command(args: argparse.Namespace) -> int:
    import contextlib
    import sys

    # before any work (data, tokenizer, training): a folder we may not write ends the command at once
    check_output_dir(args.output_dir, MODEL_FOLDER_KIND, args.overwrite, what="--output-dir")
    set_threads(args.threads)
    recipe, data = _command_recipe(args)
    # the training's log is written beside the folder being built, then saved in it as train.log
    log_file = args.output_dir.parent / f".{args.output_dir.name}.train.log"
    log_file.unlink(missing_ok=True)
    console = contextlib.nullcontext() if args.verbose else quiet_console(log_file)
    # Trainer prints to stdout; keep stdout for the JSON result so that it can be piped
    with contextlib.redirect_stdout(sys.stderr), console:
        metadata = train_model(
            recipe,
            data,
            args.output_dir,
            overwrite=args.overwrite,
            resume=args.resume,
            time_limit=args.time_limit * 60 if args.time_limit else None,
            log_file=None if args.verbose else log_file,
        )
    log_file.unlink(missing_ok=True)
    if args.verbose:
        print(json.dumps(metadata, indent=2))
    else:
        print(training_summary(metadata, args.output_dir))
    return 0


def training_summary(metadata: dict[str, Any], output_dir: Path) -> str:
    """The few lines ``train`` prints: what was trained on what, how long, the validation scores, where."""
    scores = metadata.get("validation") or {}
    shown = ", ".join(
        f"{name.removeprefix('eval_')} {value:.3f}"
        for name, value in scores.items()
        if isinstance(value, int | float) and not name.endswith(("_seconds", "_runtime", "per_second"))
    )
    steps = metadata.get("global_steps")
    lines = [
        f"trained {metadata.get('preset')} ({metadata.get('model_type')}) for {metadata.get('task')} on "
        f"{metadata.get('corpus')}/{metadata.get('config')}: {metadata.get('train_examples')} examples, "
        f"{steps} steps, {metadata.get('seconds')} s"
        + (" (a quick smoke run)" if metadata.get("quick") else ""),
        f"validation ({metadata.get('validation_examples')} examples): {shown or 'not scored'}",
        f"model folder: {output_dir} (record: {TRAINING_METADATA_FILE}, log: {TRAIN_LOG_FILE}; "
        "--verbose prints both)",
    ]
    return "\n".join(lines)


def _command_recipe(args: argparse.Namespace) -> tuple[Recipe, DataSelection]:
    """What ``train`` trains: a paper row's recipe (``--system``: the table's data, sizes, steps and
    checkpoint selection under ``--budget``; with ``--task-corpus-only`` the row's settings on its task's
    corpus) or a bare preset, with the command line's seed, step budget, caps and ``--set`` applied."""
    table_recipe = None
    if args.system:
        system = get_system(args.system)
        variant = None
        if system.decodes_model_of is not None:
            # a decoding of another row's model: train that row, and save this row's decoding with the
            # model (config.task_decoding: Task.predict and the pipeline decode with it by default); a row
            # with its own decoding grid chooses among it on validation (ding2018's *_echo_fallback rows)
            variant = system
            system = get_system(f"{system.name.rsplit('/', 1)[0]}/{system.decodes_model_of}")
        if system.preset is None:
            raise SystemExit(f"system {system.name!r} is a baseline: there is nothing to train")
        table_recipe = None if args.task_corpus_only else _recipe(system, args)
        if table_recipe is not None:
            recipe, data = table_recipe.recipe(), table_recipe.data()
            if variant is not None:
                recipe = dataclasses.replace(recipe, decoding={**recipe.decoding, **variant.decoding})
        else:
            if args.budget:
                raise SystemExit(f"--budget: {system.name!r} has no training recipe to take a budget from")
            # the row's decoding is saved with the model (config.task_decoding): what the table measured
            recipe = Recipe(
                preset=system.preset,
                preset_overrides=dict(system.preset_overrides),
                training_preset=system.training_preset,
                training_overrides=system.training_overrides,
                prepare_options=system.prepare_options,
                train_options=system.train_options,
                decoding=dict((variant or system).decoding),
                decoding_choice=system.decoding_choice,
            )
            data = DataSelection(task=system.task)
        if variant is not None and variant.decoding_choice.grid is not None:
            recipe = dataclasses.replace(recipe, decoding_choice=variant.decoding_choice)
    else:
        if args.budget or args.task_corpus_only:
            raise SystemExit("--budget and --task-corpus-only go with --system")
        recipe, data = Recipe(preset=args.preset), DataSelection()
    if args.quick and args.budget:
        raise SystemExit(f"--quick is the budget `quick`: give --quick or --budget {args.budget}, not both")
    recipe = dataclasses.replace(
        recipe,
        preset_overrides={**recipe.preset_overrides, **parse_assignments(args.set)},
        seed=args.seed,
        quick=args.quick and table_recipe is None,  # a row's --quick is its paper's quick budget (the recipe)
        max_steps=args.max_steps,
        epochs=args.epochs,
        num_beams=args.num_beams,
        group_by_length=args.group_by_length and recipe.group_by_length,  # --no-group-by-length wins
    )
    data = dataclasses.replace(
        data,
        task=args.task or data.task,
        corpus=args.corpus,
        config_name=args.config,
        data_dir=args.data_dir,
        max_train_examples=args.max_train_examples,
        max_validation_examples=args.max_validation_examples,
    )
    return recipe, data


def _recipe(system: Any, args: argparse.Namespace) -> Any:
    """The row's training recipe when its paper defines one (ding2018), else None (the task's corpus)."""
    paper = system.name.split("/", 1)[0]
    if paper not in REPRODUCTIONS:
        return None
    reproduction = get_reproduction(paper)
    budget = args.budget or ("quick" if args.quick and "quick" in reproduction.budgets else None)
    if reproduction.train_budget is None and not budget:
        return None
    return training_recipe(system, budget, args.data_dir)


def parse_assignments(assignments: list[str]) -> dict[str, Any]:
    """``["hidden_size=64", "cell=gru"]`` -> ``{"hidden_size": 64, "cell": "gru"}`` (JSON values, else
    the string)."""
    out: dict[str, Any] = {}
    for assignment in assignments:
        field, sep, value = assignment.partition("=")
        if not sep or not field:
            raise SystemExit(f"--set expects FIELD=VALUE, got {assignment!r}")
        try:
            out[field] = json.loads(value)
        except json.JSONDecodeError:
            out[field] = value
    return out


def _loaded(model_dir: Path):
    model, tokenizer, metadata = load_trained(model_dir)
    if "task" not in metadata:
        raise SystemExit(
            f"{model_dir} has no task in {TRAINING_METADATA_FILE}: it was not written by `train`"
        )
    return model, tokenizer, metadata, get_task(metadata["task"])


def _evaluate_command(args: argparse.Namespace) -> int:
    if args.predictions is not None:
        check_output_file(args.predictions, "--predictions")  # before the model is run
    if args.record:  # a damaged record file is named now, not after the model has run
        from .hub import read_evaluations

        read_evaluations(args.model)
    set_threads(args.threads)
    model, tokenizer, metadata, task = _loaded(args.model)
    corpus = args.corpus or metadata.get("corpus")
    config_name = args.config or (metadata.get("config") if corpus == metadata.get("corpus") else None)
    splits = task.load(corpus, config_name, args.data_dir)
    if args.split not in splits:
        raise SystemExit(f"corpus {corpus!r} has no split {args.split!r}; splits: {list(splits)}")
    dataset = splits[args.split]
    if args.limit is not None:
        dataset = dataset.select(range(min(args.limit, len(dataset))))
    generate_kwargs = {} if args.num_beams is None else {"num_beams": args.num_beams}
    started = time.perf_counter()
    scores, outputs = task.evaluate(model, tokenizer, dataset, args.batch_size, **generate_kwargs)
    result = {
        "model": str(args.model),
        "task": task.name,
        "corpus": corpus,
        "config": config_name,
        "split": args.split,
        "examples": len(dataset),
        "seconds": round(time.perf_counter() - started, 1),
        "metrics": scores,
    }
    if args.record:
        from .hub import record_evaluation

        record_evaluation(args.model, {**result, "limit": args.limit})
    if args.predictions is not None:
        with open(args.predictions, "w", encoding="utf-8") as handle:
            for source, output in zip(dataset[task.source_column], outputs, strict=True):
                handle.write(json.dumps({"source": source, "prediction": task.as_text(output)}) + "\n")
    print(json.dumps(result, indent=2))
    return 0


def _reformulate_command(args: argparse.Namespace) -> int:
    generation: dict[str, Any] = {}
    if args.num_beams is not None:
        generation["num_beams"] = args.num_beams
    if args.max_new_tokens is not None:
        generation["max_new_tokens"] = args.max_new_tokens
    if args.workers > 1 and args.ray is None:
        raise SystemExit("reformulate: --workers runs model replicas on Ray; add --ray")
    set_threads(args.threads)
    settings = ReformulationSettings(
        batch_size=args.batch_size, chunk_size=args.chunk_size, generation=generation, threads=args.threads
    )
    summary = reformulate(
        args.model,
        args.input,
        args.output,
        settings,
        ray_address=args.ray,
        workers=args.workers,
        overwrite=args.overwrite,
    )
    print_summary(summary, args.output)
    return 0


def _generate_command(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    model, tokenizer, _, task = _loaded(args.model)
    # only what the user gave: the task's one check refuses an option this model cannot honour (a
    # tagger has no beams or sequences) instead of ignoring it, naming the option as typed
    given = {
        "num_beams": args.num_beams,
        "num_return_sequences": args.num_return_sequences,
        "max_new_tokens": args.max_new_tokens,
    }
    kwargs = {name: value for name, value in given.items() if value is not None}
    try:
        task.decoding_arguments(model, kwargs, owner="generate")
    except InvalidInputError as err:
        for name in given:  # the option as the user typed it
            err.args = (str(err).replace(f"generate: {name}=", f"generate: --{name.replace('_', '-')} "),)
        raise
    outputs = task.predict(model, tokenizer, args.texts, **kwargs)
    task.warn_if_degenerate(outputs, model)
    returns = kwargs.get("num_return_sequences", 1)
    for output in outputs:
        for one in output if isinstance(output, list) and returns > 1 else [output]:
            print(task.as_text(one))
    return 0


def _wellformedness_classifier_command(args: argparse.Namespace) -> int:
    import contextlib
    import sys

    set_threads(args.threads)
    with contextlib.redirect_stdout(sys.stderr):  # the Trainer prints its logs; stdout is the JSON result
        folder = build_classifier(
            args.backbone or DEFAULT_BACKBONE,
            data_dir=args.data_dir,
            output_dir=args.output_dir,
            overwrite=args.overwrite or args.output_dir is not None,
            progress=True,
        )
    print(json.dumps({"folder": str(folder), **classifier_report(folder)}, indent=2))
    return 0
