"""The papers' command-line modules (each paper's ``studies/`` and its other ``python -m`` entries) import
and answer ``--help``: nothing else exercises them between the runs they serve, so a moved import or a broken
parser would otherwise show only then. ``results/`` holds their data, never their code."""

from __future__ import annotations

import contextlib
import importlib
import io
import pkgutil
from pathlib import Path

import pytest

import hf_querygen.experiments as experiments

ROOT = Path(__file__).resolve().parent.parent

#: the experiment modules with a command line that are not under a paper's ``studies/`` package
OTHER_COMMANDS = (
    "hf_querygen.experiments.lin2017.diagnosis",
    "hf_querygen.experiments.zhang2020.copy",
    "hf_querygen.experiments.device_rows",
)


def _studies() -> list[str]:
    found = []
    for paper in pkgutil.iter_modules(experiments.__path__, experiments.__name__ + "."):
        studies = Path(experiments.__path__[0], paper.name.rsplit(".", 1)[1], "studies")
        if paper.ispkg and (studies / "__init__.py").is_file():
            found += [
                module.name
                for module in pkgutil.iter_modules([str(studies)], f"{paper.name}.studies.")
                if not module.ispkg
            ]
    return sorted(found)


STUDIES = _studies()


def test_the_papers_with_studies_have_them_in_their_package():
    assert {name.split(".")[2] for name in STUDIES} == {"ding2018", "zhang2020"}
    assert len(STUDIES) == 12


def test_results_holds_no_code():
    assert not sorted((ROOT / "results").rglob("*.py"))


@pytest.mark.parametrize("module_name", STUDIES + list(OTHER_COMMANDS))
def test_command_imports_and_answers_help(module_name):
    module = importlib.import_module(module_name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stopped:
        module.main(["--help"])
    assert stopped.value.code == 0
    assert out.getvalue().startswith("usage: ")


@pytest.mark.parametrize("paper", ["ding2018", "zhang2020"])
def test_studies_default_to_the_committed_results(paper):
    studies = importlib.import_module(f"hf_querygen.experiments.{paper}.studies")
    assert studies.RESULTS_DIR == ROOT / "results" / paper
    assert (studies.RESULTS_DIR / "results.json").is_file()
