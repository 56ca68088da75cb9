"""``hf-querygen train`` / ``evaluate`` / ``generate`` / ``reformulate``: thin argument parsing over library
functions (:func:`hf_querygen.training.train_model`, :meth:`hf_querygen.tasks.base.Task.evaluate` /
:meth:`~hf_querygen.tasks.base.Task.predict`). Nothing heavy is imported to build the parser."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from ._fs import check_output_dir, check_output_file
from ._ray import LOCAL
from .batch_reformulation import ReformulationSettings, print_summary, reformulate
from .cli import non_negative_int, positive_float, positive_int
from .experiments.papers import REPRODUCTIONS, get_reproduction
from .experiments.recipes import training_recipe
from .model_folder import load_trained
from .systems import get_system
from .tasks.base import get_task
from .training import MODEL_FOLDER_KIND, train_model
from .utils import TRAINING_METADATA_FILE

THREADS_HELP = "torch CPU threads (default 1: these small RNNs gain little from more; 0 = torch's default)"


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    train = subparsers.add_parser(
        "train", help="train a preset (or a paper system) on a task's corpus; writes a model folder"
    )
    train.add_argument(
        "--task", default=None, help="nl2kw | segmentation | text2text | q2id (default: the corpus')"
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
        help="--system of a paper with a training recipe (ding2018): train the row as this budget of "
        "`reproduce` does (default: the paper's train budget, `full`; ding2018 also has `paper`, `quick`)",
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
    train.add_argument("--quick", action="store_true", help="smoke run: 150 steps, 256 validation examples")
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
        "--max-validation-examples", type=positive_int, default=None, help="validate on the first N examples"
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
    generate.add_argument("--num-return-sequences", type=positive_int, default=1)
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
    preset, task = args.preset, args.task
    preset_overrides: dict[str, Any] = {}
    kwargs: dict[str, Any] = {}
    if args.system:
        system = get_system(args.system)
        if system.decodes_model_of is not None:
            # a decoding of another row's model: train that row, and save this row's decoding with the
            # model (config.task_decoding: Task.predict and the pipeline decode with it by default)
            kwargs["decoding"] = dict(system.decoding)
            system = get_system(f"{system.name.rsplit('/', 1)[0]}/{system.decodes_model_of}")
        if system.preset is None:
            raise SystemExit(f"system {system.name!r} is a baseline: there is nothing to train")
        preset, task = system.preset, task or system.task
        recipe = None if args.task_corpus_only else _recipe(system, args)
        if recipe is not None:  # the table's data, sizes, steps and checkpoint selection
            recipe_kwargs = recipe.train_model_kwargs()
            preset_overrides.update(recipe_kwargs.pop("preset_overrides"))
            recipe_kwargs["decoding"] = {**recipe_kwargs["decoding"], **kwargs.get("decoding", {})}
            kwargs.update(recipe_kwargs)
        else:
            if args.budget:
                raise SystemExit(f"--budget: {system.name!r} has no training recipe to take a budget from")
            preset_overrides.update(system.preset_overrides)
            # the row's decoding is saved with the model (config.task_decoding): what the table measured
            kwargs.setdefault("decoding", dict(system.decoding))
            kwargs.update(
                training_preset=system.training_preset,
                training_overrides=system.training_overrides,
                prepare_options=system.prepare_options,
                train_options=system.train_options,
                decoding_grid=system.decoding_grid,
                decoding_metric=system.decoding_metric,
            )
    elif args.budget or args.task_corpus_only:
        raise SystemExit("--budget and --task-corpus-only go with --system")
    preset_overrides.update(parse_assignments(args.set))
    # Trainer prints to stdout; keep stdout for the JSON result so that it can be piped
    with contextlib.redirect_stdout(sys.stderr):
        metadata = train_model(
            preset,
            args.output_dir,
            task=task,
            corpus=args.corpus,
            config_name=args.config,
            data_dir=args.data_dir,
            seed=args.seed,
            quick=args.quick,
            max_steps=args.max_steps,
            epochs=args.epochs,
            max_train_examples=args.max_train_examples,
            max_validation_examples=args.max_validation_examples,
            preset_overrides=preset_overrides,
            num_beams=args.num_beams,
            # --no-group-by-length wins over a recipe's bucketing
            group_by_length=args.group_by_length and kwargs.pop("group_by_length", True),
            overwrite=args.overwrite,
            resume=args.resume,
            time_limit=args.time_limit * 60 if args.time_limit else None,
            **kwargs,
        )
    print(json.dumps(metadata, indent=2))
    return 0


def _recipe(system: Any, args: argparse.Namespace) -> Any:
    """The row's training recipe when its paper defines one (ding2018), else None (the task's corpus)."""
    paper = system.name.split("/", 1)[0]
    if paper not in REPRODUCTIONS:
        return None
    if get_reproduction(paper).train_budget is None and not args.budget:
        return None
    return training_recipe(system, args.budget, args.data_dir)


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
    kwargs: dict[str, Any] = {}
    if task.name == "segmentation":
        kwargs = {} if args.num_beams is None else {"num_beams": args.num_beams}
    else:
        kwargs["num_return_sequences"] = args.num_return_sequences
        if args.num_beams is not None:
            kwargs["num_beams"] = args.num_beams
        if args.max_new_tokens is not None:
            kwargs["max_new_tokens"] = args.max_new_tokens
        generation = getattr(model, "generation_config", None)  # None: a model that does not decode
        beams = args.num_beams or getattr(generation, "num_beams", None) or 1
        if generation is not None and args.num_return_sequences > max(beams, 1):
            raise SystemExit(
                "--num-return-sequences cannot exceed --num-beams (beam search returns its beams)"
            )
    outputs = task.predict(model, tokenizer, args.texts, **kwargs)
    for output in outputs:
        for one in output if isinstance(output, list) and task.name != "segmentation" else [output]:
            print(task.as_text(one))
    return 0
