"""hf-querygen: query reformulation models, their corpora, the paper tables, and search.

Each subcommand lives with the code it drives; a module listed in ``COMMAND_MODULES`` exposes
``add_commands(subparsers)`` and sets ``func`` on its parsers. Heavy imports happen inside the
handlers, so ``hf-querygen --help`` is fast.

Errors: every :class:`~hf_querygen.errors.HFQueryGenError` (and ``SystemExit`` with a message) that a
handler raises on purpose, and every ``OSError`` / ``UnicodeError`` (a file that is missing, not
readable or writable, not UTF-8), prints one line ``hf-querygen: error: ...`` on stderr and exits with
status 2, as argparse does for a bad argument; ``--debug`` shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterable, Iterator

from .errors import HFQueryGenError

COMMAND_MODULES = (
    "hf_querygen.commands",
    "hf_querygen.corpora.cli",
    "hf_querygen.experiments.cli",
    "hf_querygen.hub_cli",
    "hf_querygen.retrieval.cli",
    "hf_querygen.synthetic.cli",
)

PROG = "hf-querygen"
#: exit status for an error we raise on purpose (argparse uses 2 for a bad argument too)
ERROR_EXIT_CODE = 2


def _bounded_number(cast: type, minimum: float, what: str):
    def parse(text: str):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum or value != value:  # value != value: NaN
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    parse.__name__ = what  # argparse names the type in "invalid <name> value" messages
    return parse


#: argparse ``type=`` for counts that must be at least 1 (steps, beams, batch sizes, limits of N items)
positive_int = _bounded_number(int, 1, "an integer >= 1")
#: argparse ``type=`` for counts where 0 means "none/automatic" (threads, seeds)
non_negative_int = _bounded_number(int, 0, "an integer >= 0")


def positive_float(text: str) -> float:
    """argparse ``type=`` for a number > 0 (epochs)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def unit_float(text: str) -> float:
    """argparse ``type=`` for a weight in [0, 1] (interpolation lambdas)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


class LazyChoices:
    """argparse ``choices`` read from a registry when argparse first checks or prints them, so building
    the parser imports nothing (``hf-querygen --help`` stays cheap)."""

    def __init__(self, names: Callable[[], Iterable[str]]):
        self.names = names

    def __contains__(self, name: object) -> bool:
        return name in list(self.names())

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.names()))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of an error instead of one line"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        try:
            importlib.import_module(module).add_commands(subparsers)
        except ModuleNotFoundError as err:  # a module still being written must not break the others
            if err.name != module:
                raise
    # the command list comes from what the modules registered: a new command shows up without an edit here
    parser.epilog = f"commands: {', '.join(subparsers.choices)}; `{PROG} COMMAND --help` for one"
    return parser


def _one_line(message: str) -> str:
    return " ".join(str(message).split()) or "failed (no message; rerun with --debug)"


def main(argv: list[str] | None = None) -> int:
    """Run one command; our own errors print one line and return :data:`ERROR_EXIT_CODE`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    try:
        return int(args.func(args) or 0)
    except HFQueryGenError as error:
        if debug:
            raise
        print(f"{PROG}: error: {_one_line(str(error))}", file=sys.stderr)
        return ERROR_EXIT_CODE
    except SystemExit as exit_:
        # handlers raise SystemExit("message") for a wrong combination of arguments
        if debug or exit_.code is None or isinstance(exit_.code, int):
            raise
        print(f"{PROG}: error: {_one_line(str(exit_.code))}", file=sys.stderr)
        return ERROR_EXIT_CODE
    except (OSError, UnicodeError) as error:  # a path that is not there, not readable, not writable...
        if debug:
            raise
        print(f"{PROG}: error: {_one_line(_describe_os_error(error))}", file=sys.stderr)
        return ERROR_EXIT_CODE


def _describe_os_error(error: OSError | UnicodeError) -> str:
    """The file and the reason, without Python's ``[Errno N]`` prefix."""
    if isinstance(error, UnicodeDecodeError):
        return f"a file is not valid UTF-8 ({error.reason} at byte {error.start}); convert it to UTF-8"
    if isinstance(error, OSError) and error.strerror:
        where = " -> ".join(str(f) for f in (error.filename, error.filename2) if f is not None)
        return f"{where}: {error.strerror}" if where else error.strerror
    return str(error) or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
