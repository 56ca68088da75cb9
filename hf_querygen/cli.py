"""The ``hf-querygen`` command: train / evaluate / generate / reproduce / corpus.

Each subcommand lives with the code it drives; a module listed in ``COMMAND_MODULES`` exposes
``add_commands(subparsers)`` and sets ``func`` on its parsers. Heavy imports happen inside the
handlers, so ``hf-querygen --help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "hf_querygen.commands",
    "hf_querygen.corpora.cli",
    "hf_querygen.experiments.cli",
    "hf_querygen.retrieval.cli",
    "hf_querygen.synthetic.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-querygen", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        try:
            importlib.import_module(module).add_commands(subparsers)
        except ModuleNotFoundError as err:  # a module still being written must not break the others
            if err.name != module:
                raise
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
