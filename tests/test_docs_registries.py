"""README's Layout and CONTRIBUTING name what the registries hold: every model package, task, pipeline
task and paper (a new component without its line in the Layout fails here), and CONTRIBUTING's recipes
do not send contributors to the lists the registries replaced."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _layout_entries() -> dict[str, str]:
    """Layout entry (``models/``, ``tasks/`` ...) -> its text, continuation lines included."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        match = re.match(r"^  (\S+)\s", line)
        if match:
            current = match.group(1)
            entries[current] = line
        elif current and line.startswith("    "):
            entries[current] += " " + line.strip()
    return entries


def _names_in(text: str) -> set[str]:
    return set(re.findall(r"[\w-]+", text))


def test_readme_layout_names_every_registered_component():
    from hf_querygen._registration import PIPELINES
    from hf_querygen.experiments.papers import REPRODUCTIONS
    from hf_querygen.specs import model_packages
    from hf_querygen.tasks.base import TASKS

    entries = _layout_entries()
    missing = {
        "models/": {p.rsplit(".", 1)[-1] for p in model_packages()} - _names_in(entries.get("models/", "")),
        "tasks/": set(TASKS.names()) - _names_in(entries.get("tasks/", "")),
        "pipelines/": set(PIPELINES.names()) - _names_in(entries.get("pipelines/", "")),
        "experiments/": set(REPRODUCTIONS.names()) - _names_in(entries.get("experiments/", "")),
    }
    assert not any(missing.values()), f"README Layout lacks: {missing}"


def test_readme_layout_names_every_module_of_the_package():
    entries = " ".join(_layout_entries())
    package = ROOT / "hf_querygen"
    components = {
        path.name + ("/" if path.is_dir() else "")
        for path in package.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file()) and not path.name.startswith("_")
    }
    mentioned = {c for c in components if c in entries or c in " ".join(_layout_entries().values())}
    assert components == mentioned, f"README Layout lacks {sorted(components - mentioned)}"


def test_contributing_recipes_use_the_registries_not_lists():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    # hand-kept lists of models or papers would drift from the registries: the recipes must not name one
    for stale in (
        "MODEL_PACKAGES",
        "_EXPORTS",
        "cli.NAMES",
        "MODEL_FAMILIES",
        'REPRODUCTIONS.register("<paper>", "hf_querygen',
    ):
        assert stale not in text, stale
    for needed in ("ModelSpec", "<paper>/<paper>.json", "hf_querygen.plugins", "tasks.base.get_task"):
        assert needed in text, needed


def test_every_paper_data_file_declares_the_budgets_its_module_defines():
    """``--budget`` / ``--quick`` help lists the data files' budgets without importing the papers: they must
    be the modules' own."""
    from hf_querygen.experiments.papers import REPRODUCTIONS, budget_names, get_reproduction

    declared = budget_names()
    assert set(declared) == set(REPRODUCTIONS.names())
    for name in REPRODUCTIONS.names():
        budgets = getattr(get_reproduction(name), "budgets", None)
        if budgets is not None:  # a Reproduction (the retrieval evaluation has full / quick only)
            assert sorted(declared[name]) == sorted(budgets), name
        assert "quick" in declared[name], f"{name}: every paper has a quick budget (--quick)"
