"""``hf-querygen export`` (the Hub repository folder of a model or a dataset, optionally pushed) and
``hf-querygen demo`` (a Gradio app over trained models)."""

from __future__ import annotations

import argparse
from pathlib import Path


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


def _export_command(args: argparse.Namespace) -> int:
    import json

    from .hub import export_dataset, export_model, push_folder

    source = Path(args.source)
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
        "files": sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()),
    }
    if args.push:
        report["commit"] = push_folder(
            out, args.push, repo_type=kind, private=args.private or None, token=args.token
        )
    print(json.dumps(report, indent=2))
    return 0
