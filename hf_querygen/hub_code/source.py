"""The library's source as the bundler reads it: each module parsed once, its top-level statements
(:class:`_Unit`), what each binds and which names it uses, and where an imported name is defined
(:meth:`_Source.resolve`, through the package's re-exports). Nothing here is generated: the bundler
(:mod:`.bundler`) decides what to keep."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE = "hf_querygen"

#: third-party packages a plain ``transformers`` installation brings (besides the standard library)
ALLOWED_EXTERNAL = frozenset(
    {"torch", "transformers", "tokenizers", "numpy", "huggingface_hub", "safetensors"}
)

#: library parts that a loaded model never needs: a function-level import from them is cut (it raises
#: an ImportError naming the library) instead of bundling training, corpus and evaluation code


class BundleError(RuntimeError):
    """The library's source uses a construct the bundler cannot flatten (a bug to fix in the bundler)."""


# ---------------------------------------------------------------------------------------------- parsing
@dataclass
class _Unit:
    """One top-level statement of one module."""

    module: str
    index: int
    node: ast.stmt
    names: tuple[str, ...]  # the top-level names it binds


@dataclass
class _Module:
    name: str
    path: Path
    package: str
    lines: list[str]
    tree: ast.Module
    units: list[_Unit] = field(default_factory=list)
    #: top-level name -> ("unit", index) | ("internal", module, name) | ("external", key)
    bindings: dict[str, tuple] = field(default_factory=dict)


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    names = []
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) and not isinstance(child, (ast.Import, ast.ImportFrom)):
                names += _bound_names(child)
        for body in ("body", "orelse", "finalbody"):
            for child in getattr(node, body, []):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    raise BundleError(f"an import inside a top-level block: {ast.unparse(child)}")
        return names
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.append(sub.id)
    return names


def _is_internal(module: str | None) -> bool:
    return module is not None and (module == PACKAGE or module.startswith(PACKAGE + "."))


class _Source:
    """Parsed library modules, loaded on demand."""

    def __init__(self) -> None:
        self.modules: dict[str, _Module] = {}

    def module(self, name: str) -> _Module:
        if name not in self.modules:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.origin or not spec.origin.endswith(".py"):
                raise BundleError(f"no source for module {name}")
            path = Path(spec.origin)
            text = path.read_text(encoding="utf-8")
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            module = _Module(name, path, package, text.splitlines(), ast.parse(text))
            self._index(module)
            self.modules[name] = module
        return self.modules[name]

    def absolute(self, module: _Module, level: int, target: str | None) -> str:
        if level == 0:
            return target or ""
        return importlib.util.resolve_name("." * level + (target or ""), module.package)

    def _index(self, module: _Module) -> None:
        for index, node in enumerate(module.tree.body):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            if _is_type_checking(node):
                continue  # annotations only (never evaluated: every bundle has postponed annotations)
            if isinstance(node, ast.ImportFrom):
                source = self.absolute(module, node.level, node.module)
                for alias in node.names:
                    if alias.name == "*":
                        raise BundleError(f"star import in {module.name}")
                    local = alias.asname or alias.name
                    if _is_internal(source):
                        module.bindings[local] = ("internal", source, alias.name)
                    else:
                        module.bindings[local] = ("external", ("from", source, alias.name, alias.asname))
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if _is_internal(alias.name):
                        raise BundleError(f"'import {alias.name}' in {module.name}: use 'from ... import'")
                    local = alias.asname or alias.name.split(".")[0]
                    module.bindings[local] = ("external", ("import", alias.name, None, alias.asname))
                continue
            unit = _Unit(module.name, index, node, tuple(_bound_names(node)))
            module.units.append(unit)
            for name in unit.names:
                module.bindings[name] = ("unit", len(module.units) - 1)

    def resolve(self, module_name: str, name: str, seen: frozenset = frozenset()) -> tuple:
        """The symbol ``name`` of ``module_name`` stands for: ("unit", module, index) or ("external", key)."""
        if (module_name, name) in seen:
            raise BundleError(f"import cycle resolving {module_name}.{name}")
        module = self.module(module_name)
        binding = module.bindings.get(name)
        if binding is None:
            submodule = f"{module_name}.{name}"
            try:
                is_module = importlib.util.find_spec(submodule) is not None
            except ImportError:
                is_module = False
            if is_module:
                raise BundleError(f"{module_name} imports the module {submodule}; import names from it")
            raise BundleError(f"{name!r} is not defined at the top level of {module_name}")
        if binding[0] == "unit":
            return ("unit", module_name, binding[1], name)
        if binding[0] == "internal":
            return self.resolve(binding[1], binding[2], seen | {(module_name, name)})
        return binding


# -------------------------------------------------------------------------------------- dependencies
def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside annotations (not evaluated: bundles postpone annotations)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(node.returns)
        elif isinstance(node, ast.arg):
            parts.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            parts.append(node.annotation)
        for part in parts:
            if part is not None:
                skipped.update(id(sub) for sub in ast.walk(part))
    return skipped


def _names_used(tree: ast.AST, skip_functions_bodies: bool = False) -> list[ast.Name]:
    """Name nodes of ``tree`` outside annotations (and, for load-time dependencies, outside function
    bodies)."""
    skipped = _annotation_nodes(tree)
    found: list[ast.Name] = []

    def visit(node: ast.AST, top: bool) -> None:
        if id(node) in skipped:
            return
        if isinstance(node, ast.Name):
            found.append(node)
        if skip_functions_bodies and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for part in node.decorator_list if not isinstance(node, ast.Lambda) else []:
                visit(part, False)
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    visit(default, False)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, False)

    visit(tree, True)
    return found


def _nested_imports(node: ast.stmt) -> list[ast.Import | ast.ImportFrom]:
    return [
        sub for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom)) and sub is not node
    ]


def _external_allowed(key: tuple) -> bool:
    top = key[1].split(".")[0]
    return top in ALLOWED_EXTERNAL or top in sys.stdlib_module_names


def _external_object(key: tuple) -> Any:
    """What an external import binds (two import paths to one object may share a name)."""
    if key[0] == "import":
        return importlib.import_module(key[1] if key[3] else key[1].split(".")[0])
    try:
        return getattr(importlib.import_module(key[1]), key[2])
    except AttributeError:
        return importlib.import_module(f"{key[1]}.{key[2]}")
