"""Imports flow one way: each component of ``hf_querygen`` sits on a floor (CONTRIBUTING's "Layers") and
imports only from its own floor or those below, module-level or inside a function alike; and no two
modules import each other, directly or around a circle. Read from the source with ``ast``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hf_querygen"

#: lowest first; a component is a top-level module or sub-package of hf_querygen. The foundation holds the
#: shared helpers and the registries (the package root, registration and the CLI entry import the
#: components they wire by name, with importlib, so they import nothing above them statically)
FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "__init__",
        "_fs",
        "_lazy_registration",
        "_registration",
        "cli",
        "errors",
        "plugins",
        "registry",
        "specs",
        "text",
        "utils",
        "validation",
        "word_vectors",
    ),
    ("corpora", "nn", "tokenization"),
    ("models", "metrics", "retrieval"),
    ("presets", "synthetic"),
    ("tasks", "inference", "model_folder"),
    ("baselines", "training", "hub", "hub_export"),
    ("pipelines",),
    ("experiments", "systems", "commands", "hub_cli", "hub_code", "demo"),
)
FLOOR = {component: level for level, components in enumerate(FLOORS) for component in components}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the hf_querygen modules it imports (any depth of the file: function-local too)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = [f"{target}.{alias.name}" for alias in node.names]
                targets = [name if _is_module(name) else target for name in names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            found[module].update(t for t in targets if t.split(".")[0] == "hf_querygen" and t != module)
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_component_has_a_floor():
    components = {_component(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert components <= set(FLOOR), f"put these in FLOORS (and CONTRIBUTING): {components - set(FLOOR)}"


def test_no_component_imports_from_a_floor_above_it():
    upward = sorted(
        f"{module} -> {target} ({_component(module)} floor {FLOOR[_component(module)]} imports "
        f"{_component(target)} floor {FLOOR[_component(target)]})"
        for module, targets in _imports().items()
        for target in targets
        if FLOOR[_component(target)] > FLOOR[_component(module)]
    )
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_import_cycle_between_modules():
    graph = _imports()
    # a package's __init__ re-exporting its modules is not a dependency of those modules on it
    cycles, state, stack = [], {}, []

    def visit(module: str) -> None:
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if module.startswith(target + "."):  # a module importing its own package's __init__
                continue
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def _takewhile_indented(rows: list[str]) -> list[str]:
    out = []
    for row in rows:
        if not row.startswith("   "):
            break
        out.append(row)
    return out


@pytest.mark.parametrize("floor", range(len(FLOORS)))
def test_contributing_states_the_floors(floor):
    lines = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8").splitlines()
    start = next((i for i, row in enumerate(lines) if row.startswith(f"{floor}. ")), len(lines))
    item = lines[start : start + 1]
    item += _takewhile_indented(lines[start + 1 :])
    line = " ".join(item)
    assert all(f"`{component}`" in line for component in FLOORS[floor] if not component.startswith("_")), (
        f"CONTRIBUTING's Layers list, floor {floor}: {line!r} should name {FLOORS[floor]}"
    )
