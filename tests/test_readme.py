"""Every code example of README.md runs as written, at tiny size.

The bash blocks run in order through the CLI's ``main`` (in this process, in a temporary working
directory), the python blocks with ``exec`` in the same directory, so the python example finds the
``runs/...`` models that the README's own ``train`` commands wrote. Tiny size: every ``train`` gets a
few steps on one thread on a data slice with 8-unit layers appended (a BERT2BERT warm start gets a tiny
random backbone with MiniLM's tokenizer instead; later flags win; a ding2018 system's recipe
takes ``--budget quick``: its synthetic set from 1,500 questions), ``reproduce`` runs ``--quick``
and ``synthesize`` takes 20 questions. Not run: the Quickstart
block (it installs the package and runs the whole suite, i.e. this test).
"""

import re
import shlex
from pathlib import Path

import pytest

from hf_querygen.cli import main as cli_main

README = Path(__file__).resolve().parents[1] / "README.md"
#: one torch thread whatever the example asks (``--threads 2``): the suite's other worker holds the second
#: core, and two threads on one free core made the K2Q example 7 times slower
TINY_TRAIN = [
    "--max-steps",
    "2",
    "--max-train-examples",
    "64",
    "--max-validation-examples",
    "8",
    "--threads",
    "1",
]


def tiny_sizes(arguments: list[str], stand_in: Path) -> list[str]:
    """``--set`` 8-unit layers (``decoder_hidden_size`` for the presets whose config has that field:
    ``--set`` refuses a field the config does not have); for a BERT2BERT warm start, whose sizes are its
    backbone's, the tiny ``stand_in`` backbone (MiniLM's tokenizer: the data is prepared with the chosen
    backbone's); none for a token classifier on a backbone (one forward pass of MiniLM is cheap)."""
    from hf_querygen.presets import PRESETS, config_fields, is_warm_start
    from hf_querygen.systems import get_system

    if "--preset" in arguments:
        preset = arguments[arguments.index("--preset") + 1]
    else:
        system = get_system(arguments[arguments.index("--system") + 1])
        if system.decodes_model_of is not None:
            system = get_system(f"{system.name.rsplit('/', 1)[0]}/{system.decodes_model_of}")
        preset = system.preset
    if is_warm_start(preset):
        return ["--set", f"backbone={stand_in}"]
    if "backbone" in PRESETS.get(preset):
        return []
    sizes = "--set embedding_size=8 --set hidden_size=8".split()
    fields = config_fields(PRESETS.get(preset)["model_type"])
    return sizes + (["--set", "decoder_hidden_size=8"] if "decoder_hidden_size" in fields else [])


SKIPPED_BECAUSE = {".ci/setup": "the Quickstart installs the package and runs the whole test suite"}


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced ``bash`` / ``python`` block, in order."""
    return re.findall(r"^```(bash|python)\n(.*?)^```", text, flags=re.M | re.S)


def bash_commands(code: str) -> list[list[str]]:
    commands = []
    for line in code.splitlines():
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            commands.append(shlex.split(line))
    return commands


def test_readme_has_the_examples_this_test_runs():
    blocks = code_blocks(README.read_text(encoding="utf-8"))
    languages = [language for language, _ in blocks]
    assert languages.count("python") >= 1 and languages.count("bash") >= 3
    skipped = [code for _, code in blocks if any(marker in code for marker in SKIPPED_BECAUSE)]
    assert len(skipped) == 1  # only the Quickstart


def test_every_readme_command_can_run_again():
    """A reader runs an example twice: every command that refuses a non-empty output without
    ``--overwrite`` (or ``--resume``) is written with it (the parser says which commands have it)."""
    from hf_querygen.cli import build_parser

    parser = build_parser()
    once_only = []
    for language, code in code_blocks(README.read_text(encoding="utf-8")):
        if language != "bash" or any(marker in code for marker in SKIPPED_BECAUSE):
            continue
        for command in bash_commands(code):
            arguments = parser.parse_args(command[1:])
            if getattr(arguments, "overwrite", True) is False and not getattr(arguments, "resume", False):
                once_only.append(" ".join(command))
    assert once_only == []


@pytest.mark.slow
def test_every_readme_example_runs(data_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_QUERYGEN_DATA_DIR", str(data_dir))
    monkeypatch.setenv("HF_QUERYGEN_DING2018_CACHE", str(tmp_path / "ding2018-cache"))
    from _tiny_bert import save_tiny_bert_with_tokenizer_of

    stand_in = save_tiny_bert_with_tokenizer_of(tmp_path / "tiny-backbone")
    ran = 0
    for language, code in code_blocks(README.read_text(encoding="utf-8")):
        if any(marker in code for marker in SKIPPED_BECAUSE):
            continue
        if language == "python":
            exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
            ran += 1
            continue
        for command in bash_commands(code):
            assert command[0] == "hf-querygen", command
            arguments = command[1:]
            if arguments[0] == "train":
                arguments += TINY_TRAIN + tiny_sizes(arguments, stand_in)
                if any(a.startswith("ding2018/") for a in arguments):
                    arguments += ["--budget", "quick"]  # the recipe's synthetic set from 1,500 questions
            elif arguments[0] == "reproduce" and "--quick" not in arguments:
                arguments.append("--quick")
            elif arguments[0] == "synthesize":
                arguments += ["--limit", "20"]
            assert cli_main(arguments) == 0, command
            ran += 1
    assert (tmp_path / "runs" / "dual-decoder" / "README.md").is_file()
    # the exported card's usage code runs against the exported folder, with and without the library
    from _card_code import run_card_code

    with_library, plain = run_card_code(tmp_path / "hub" / "dual-decoder", "REPO_ID", tmp_path)
    assert with_library == plain and with_library.startswith("[")
    assert (tmp_path / "runs" / "segmenter" / "config.json").is_file()
    assert ran >= 9
