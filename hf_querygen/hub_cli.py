"""``hf-querygen export`` (the Hub repository folder of a model or a dataset, optionally pushed) and
``hf-querygen demo`` (a Gradio app over trained models)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._fs import MARKER_FILE
from .demo import (
    DEMO_MODELS,
    EXAMPLE_QUESTION,
    QueryDemo,
    browse,
    build_quick_models,
    check_serve_arguments,
    launch,
    load_documents,
)
from .utils import require_extra


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    export = subparsers.add_parser(
        "export",
        help="write the Hub repository folder of a trained model or a dataset (and push it with --push)",
        description="SOURCE is a model folder (written by `train`, `reproduce --save-models` or "
        "save_pretrained), a built dataset folder (dataset_scripts/NAME) or a corpus name (built from the "
        "raw files). OUT_DIR gets what the Hub repository holds: weights, tokenizer, the model's code "
        "(auto_map, custom_pipelines), generation config, model card with model-index (validation and "
        "recorded test scores); for a dataset its card and parquet files.",
    )
    export.add_argument("source", help="model folder, dataset folder or corpus name")
    export.add_argument("out_dir", type=Path, help="the repository folder to write")
    export.add_argument("--push", metavar="REPO", default=None, help="then upload it to this Hub repository")
    export.add_argument("--private", action="store_true", help="create the Hub repository as private")
    export.add_argument("--token", default=None, help="Hub token (default: the logged-in one)")
    export.add_argument("--overwrite", action="store_true", help="replace a non-empty OUT_DIR")
    export.add_argument("--data-dir", type=Path, default=None, help="raw corpora (for a corpus name)")
    export.set_defaults(func=_export_command)

    demo = subparsers.add_parser(
        "demo",
        help="a Gradio app: type a question, see its reformulations and their BM25 / SDM top 5 (extra: demo)",
        description="Runs offline on 127.0.0.1. Model folders not given are taken from --models-dir, where a "
        "quick-trained set (train --quick of each preset) is built on first start.",
    )
    for role, (preset, _task, pipeline_task, _what) in DEMO_MODELS.items():
        demo.add_argument(
            f"--{role}",
            type=Path,
            default=None,
            metavar="DIR",
            help=f"{pipeline_task} model (default: {preset})",
        )
    demo.add_argument(
        "--models-dir", type=Path, default=Path("demo_models"), help="quick-trained models (built if missing)"
    )
    demo.add_argument(
        "--data-dir", type=Path, default=None, help="raw corpora (training, NFCorpus documents)"
    )
    demo.add_argument("--documents", type=Path, default=None, help="collection: one document per line")
    demo.add_argument(
        "--host", default="127.0.0.1", help="interface to serve on (default: this machine only)"
    )
    demo.add_argument("--port", type=int, default=None, help="default: the first free port from 7860")
    demo.add_argument("--max-seconds", type=float, default=None, help="stop serving after this long")
    demo.add_argument("--build-only", action="store_true", help="build the quick-trained set, do not serve")
    demo.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        metavar="PNG",
        help="type --question into the app in headless Chromium, save a screenshot, print the panels, stop",
    )
    demo.add_argument("--question", default=None, help="the question for --screenshot (default: an example)")
    demo.add_argument(
        "--embed",
        metavar="MODEL",
        default=None,
        help="also show dense and hybrid tables: embed the documents with this model (e.g. all-MiniLM-L6-v2)",
    )
    demo.add_argument("--keyword-query", default="", help="the K2Q keyword query for --screenshot")
    demo.set_defaults(func=_demo_command)


def _export_command(args: argparse.Namespace) -> int:
    import json

    from .hub_export import check_push, export_dataset, export_model, push_folder

    source = Path(args.source)
    if args.push is not None:  # repository id, offline switch, token and network before anything is written
        check_push(args.push, args.token)
    if (source / "config.json").is_file():
        kind = "model"
        out = export_model(source, args.out_dir, repo_id=args.push, overwrite=args.overwrite)
    elif source.is_dir() or ("/" not in args.source and not source.suffix):
        kind = "dataset"
        out = export_dataset(
            source if source.is_dir() else args.source,
            args.out_dir,
            data_dir=args.data_dir,
            overwrite=args.overwrite,
        )
    else:
        raise FileNotFoundError(
            f"export: {args.source} is neither a model folder, a dataset folder nor a corpus name"
        )
    report = {
        "kind": kind,
        "folder": str(out),
        "files": sorted(
            str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != MARKER_FILE
        ),
    }
    if args.push:
        report["commit"] = push_folder(
            out, args.push, repo_type=kind, private=args.private or None, token=args.token
        )
    print(json.dumps(report, indent=2))
    return 0


def _demo_command(args: argparse.Namespace) -> int:
    # every serving argument checked, and --host resolved once, before models are built or loaded
    serve = check_serve_arguments(args.host, args.port, args.max_seconds)
    args.host = serve.host
    require_extra("gradio", "demo", "hf-querygen demo")
    given = {role: getattr(args, role) for role in DEMO_MODELS if getattr(args, role) is not None}
    missing = [role for role in DEMO_MODELS if role not in given]
    folders = dict(given)
    if missing:
        folders |= build_quick_models(args.models_dir, args.data_dir, roles=missing)
    if args.build_only:
        print("\n".join(f"{role}: {folder}" for role, folder in folders.items()))
        return 0
    demo = QueryDemo(folders, load_documents(args.data_dir, args.documents), embedder=args.embed)
    if args.screenshot is not None:
        import json

        app = launch(demo, host=args.host, port=args.port, block=False)
        try:
            shown = browse(
                app.local_url, args.question or EXAMPLE_QUESTION, args.keyword_query, args.screenshot
            )
        finally:
            app.close()
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    launch(
        demo,
        host=args.host,
        port=args.port,
        max_seconds=args.max_seconds,
        on_start=lambda url: print(f"hf-querygen demo on {url}", flush=True),
    )
    return 0
