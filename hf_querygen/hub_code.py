"""Self-contained model code beside the weights, so that plain ``transformers`` loads a saved folder.

A folder written by ``save_pretrained`` (so by ``hf-querygen train``, ``reproduce --save-models`` and
``export``) carries, as a custom model on the Hub does:

* ``configuration_<type>.py``, ``modeling_<type>.py`` and one ``pipeline_<task>.py`` per pipeline task the
  model serves: flat modules generated at save time from the library's current source;
* ``auto_map`` (AutoConfig + the model's Auto class) and ``custom_pipelines`` in ``config.json``.

Then ``AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)`` and
``pipeline("keyword-query-generation", model=folder, trust_remote_code=True)`` work where ``hf_querygen``
is not installed.

Why generated: transformers copies a remote-code module and its same-folder relative imports only, and
our model modules import ``...nn``, ``...validation`` and the task code. :func:`bundle` inlines what a
set of root objects needs, name by name (a tree shaker, not a copy of whole modules), into one module:

* the top-level statements defining the roots and, recursively, every top-level name they use (imports
  inside functions included), in an order where a class's bases and decorators come first;
* third-party imports as they were; package-internal imports dropped (the names live in the same
  module) or turned into an assignment when renamed;
* a name defined differently in two modules gets the module's name appended in one flat namespace;
* code reached only through a function-level import that needs a package a plain ``transformers``
  install lacks (``datasets``, ``tantivy``, ...: training, corpora, metrics) is cut: that import raises
  an ``ImportError`` saying the library is needed for it. The inference path keeps working.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
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
TRAINING_ONLY = (
    "hf_querygen._registration",
    "hf_querygen.baselines",
    "hf_querygen.corpora",
    "hf_querygen.experiments",
    "hf_querygen.metrics",
    "hf_querygen.presets",
    "hf_querygen.retrieval",
    "hf_querygen.synthetic",
    "hf_querygen.tasks.k2q_data",
    "hf_querygen.tasks.nl2kw_resources",
    "hf_querygen.training",
)

#: file names in a saved folder
CONFIG_FILE = "configuration_{model_type}.py"
MODELING_FILE = "modeling_{model_type}.py"
PIPELINE_FILE = "pipeline_{task}.py"


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


# ---------------------------------------------------------------------------------------------- bundling
@dataclass
class _Plan:
    """What a set of bundles holds: units per file, flat names, cut imports."""

    source: _Source
    unit_file: dict[tuple[str, int], int] = field(default_factory=dict)  # (module, index) -> file number
    order: list[tuple[str, int]] = field(default_factory=list)  # units in emission order (all files)
    externals: dict[tuple, int] = field(default_factory=dict)  # external key -> first file using it
    ext_files: dict[int, set[tuple]] = field(default_factory=dict)
    flat: dict[tuple, str] = field(default_factory=dict)  # symbol -> flat name
    cut: set[int] = field(default_factory=set)  # ids of import nodes replaced by a raise
    usable: dict[tuple, bool] = field(default_factory=dict)


class _Bundler:
    def __init__(self) -> None:
        self.source = _Source()
        self.plan = _Plan(self.source)
        self._visiting: set[tuple] = set()

    # -- which symbols a unit needs: hard (its own references) and soft (function-level imports)
    def _hard_deps(self, unit: _Unit) -> list[tuple]:
        module = self.source.module(unit.module)
        deps = []
        for name in _names_used(unit.node):
            if name.id in module.bindings and name.id not in unit.names:
                deps.append(self.source.resolve(unit.module, name.id))
        # third-party names in annotations too: dataclasses read ``ClassVar`` / ``InitVar`` from the module
        annotation_ids = _annotation_nodes(unit.node)
        for node in ast.walk(unit.node):
            if isinstance(node, ast.Name) and id(node) in annotation_ids and node.id in module.bindings:
                symbol = self.source.resolve(unit.module, node.id)
                if symbol[0] == "external" and _external_allowed(symbol[1]):
                    deps.append(symbol)
        return deps

    def _soft_imports(self, unit: _Unit) -> list[tuple[ast.stmt, list[tuple[str, tuple | None]]]]:
        """Function-level imports: (node, [(local name, internal symbol or None for an external)])."""
        module = self.source.module(unit.module)
        found = []
        for node in _nested_imports(unit.node):
            if isinstance(node, ast.ImportFrom):
                target = self.source.absolute(module, node.level, node.module)
                if _is_internal(target) and any(
                    target == p or target.startswith(p + ".") for p in TRAINING_ONLY
                ):
                    found.append((node, [(a.asname or a.name, None) for a in node.names]))
                elif _is_internal(target):
                    found.append(
                        (node, [(a.asname or a.name, self._soft_resolve(target, a.name)) for a in node.names])
                    )
                else:
                    found.append(
                        (
                            node,
                            [
                                (a.asname or a.name, ("external", ("from", target, a.name, None)))
                                for a in node.names
                            ],
                        )
                    )
            else:
                for alias in node.names:
                    if _is_internal(alias.name):
                        raise BundleError(f"'import {alias.name}' inside {unit.module}")
                found.append(
                    (
                        node,
                        [
                            (a.asname or a.name, ("external", ("import", a.name, None, None)))
                            for a in node.names
                        ],
                    )
                )
        return found

    def _soft_resolve(self, module_name: str, name: str) -> tuple | None:
        """A function-level import's symbol; None where the bundler cannot follow it (the import is cut)."""
        try:
            return self.source.resolve(module_name, name)
        except (BundleError, ImportError, SyntaxError):
            return None

    def _unit(self, symbol: tuple) -> _Unit:
        return self.source.module(symbol[1]).units[symbol[2]]

    def usable(self, symbol: tuple) -> bool:
        """Whether ``symbol`` and what it needs at the top level work without the library's extras."""
        if symbol[0] == "external":
            return _external_allowed(symbol[1])
        if symbol in self.plan.usable:
            return self.plan.usable[symbol]
        if symbol in self._visiting:
            return True  # a cycle: decided by the outer call
        self._visiting.add(symbol)
        ok = all(self.usable(dep) for dep in self._hard_deps(self._unit(symbol)))
        self._visiting.discard(symbol)
        self.plan.usable[symbol] = ok
        return ok

    def include(self, symbol: tuple, file: int, why: str) -> None:
        plan = self.plan
        if symbol[0] == "external":
            if not _external_allowed(symbol[1]):
                raise BundleError(f"{why} needs {symbol[1][1]}, which a plain transformers install lacks")
            plan.externals.setdefault(symbol[1], file)
            plan.ext_files.setdefault(file, set()).add(symbol[1])
            return
        key = (symbol[1], symbol[2])
        if key in plan.unit_file:
            return
        unit = self._unit(symbol)
        if not self.usable(symbol):
            raise BundleError(
                f"{unit.module}.{unit.names} (needed by {why}) needs a package beyond transformers"
            )
        plan.unit_file[key] = file
        for dep in self._hard_deps(unit):
            self.include(dep, file, f"{unit.module}.{'/'.join(unit.names)}")
        for node, aliases in self._soft_imports(unit):
            if all(target is not None and self.usable(target) for _, target in aliases):
                for _, target in aliases:
                    self.include(target, file, f"{unit.module}.{'/'.join(unit.names)}")
            else:
                plan.cut.add(id(node))
        plan.order.append(key)

    # -- emission order: load-time dependencies first (bases, decorators, defaults, module-level values)
    def ordered(self, keys: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
        keys = list(keys)
        wanted = set(keys)
        done: list[tuple[str, int]] = []
        state: dict[tuple[str, int], int] = {}

        def visit(key: tuple[str, int]) -> None:
            if state.get(key) == 2:
                return
            if state.get(key) == 1:
                return  # a load-time cycle cannot happen in importable code; keep the source order
            state[key] = 1
            unit = self.source.module(key[0]).units[key[1]]
            module = self.source.module(key[0])
            for name in _names_used(unit.node, skip_functions_bodies=True):
                if name.id in module.bindings and name.id not in unit.names:
                    dep = self.source.resolve(key[0], name.id)
                    if dep[0] == "unit" and (dep[1], dep[2]) in wanted:
                        visit((dep[1], dep[2]))
            state[key] = 2
            done.append(key)

        for key in keys:
            visit(key)
        return done

    # -- flat names: one namespace for everything a set of bundles defines
    def name_symbols(self) -> None:
        plan = self.plan
        claims: dict[str, list[tuple]] = {}
        for key in plan.externals:
            local = key[3] or (key[2] if key[0] == "from" else key[1].split(".")[0])
            claims.setdefault(local, []).append(("external", key))
        for module_name, index in plan.unit_file:
            for name in self.source.module(module_name).units[index].names:
                claims.setdefault(name, []).append(("unit", module_name, index, name))
        for name, symbols in claims.items():
            for position, symbol in enumerate(symbols):
                if position == 0 or symbol[0] == "external":
                    plan.flat[symbol] = name
                else:
                    plan.flat[symbol] = f"{name}_{symbol[1].rpartition('.')[2]}"
            externals = [s for s in symbols if s[0] == "external"]
            if len({id(_external_object(s[1])) for s in externals}) > 1:
                raise BundleError(f"two external imports bind {name!r}: {externals}")
            if externals and len(symbols) > 1:
                for symbol in symbols:
                    if symbol[0] == "unit":
                        plan.flat[symbol] = f"{name}_{symbol[1].rpartition('.')[2]}"

    def flat_name(self, module_name: str, local: str) -> str | None:
        """The flat name of ``module_name``'s top-level ``local`` (None if it is no bundled symbol)."""
        module = self.source.module(module_name)
        if local not in module.bindings:
            return None
        return self.plan.flat.get(self.source.resolve(module_name, local))

    # -- rendering one unit's source with its names made flat
    def render(self, key: tuple[str, int]) -> str:
        module = self.source.module(key[0])
        unit = module.units[key[1]]
        node = unit.node
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        # keep the comment lines right above the statement (the "#:" documentation of a constant)
        while first > 1 and module.lines[first - 2].lstrip().startswith("#"):
            first -= 1
        lines = module.lines[first - 1 : node.end_lineno]
        edits: list[tuple[int, int, int, str]] = []  # (line index, byte start, byte end, text)

        def at(lineno: int) -> int:
            return lineno - first

        for name in _names_used(node):
            flat = self.flat_name(key[0], name.id)
            if flat is not None and flat != name.id:
                edits.append((at(name.lineno), name.col_offset, name.end_col_offset, flat))
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is node:
                flat = self.flat_name(key[0], sub.name)
                if flat and flat != sub.name:
                    line = lines[at(sub.lineno)].encode()
                    match = re.search(rb"\b(?:def|class)\s+(" + sub.name.encode() + rb")\b", line)
                    edits.append((at(sub.lineno), match.start(1), match.end(1), flat))
        replaced_lines: dict[int, list[str]] = {}
        for sub, aliases in self._soft_imports(unit):
            indent = " " * sub.col_offset
            if id(sub) in self.plan.cut:
                what = ", ".join(local for local, _ in aliases)
                text = [
                    f"{indent}raise ImportError(",
                    f'{indent}    "{what} needs the hf-querygen library (pip install hf-querygen): '
                    f'this bundled file holds the inference code only"',
                    f"{indent})",
                ]
            elif any(t is not None and t[0] == "external" for _, t in aliases):
                continue  # an allowed third-party import stays as written
            else:
                text = []
                for local, target in aliases:
                    flat = self.plan.flat[target]
                    current = self.flat_name(key[0], local) or local
                    if flat != current:
                        text.append(f"{indent}{current} = {flat}")
                text = text or [f"{indent}pass  # {', '.join(a for a, _ in aliases)}: defined in this module"]
            replaced_lines[at(sub.lineno)] = text
            for lineno in range(sub.lineno + 1, sub.end_lineno + 1):
                replaced_lines[at(lineno)] = []
            edits = [e for e in edits if not (at(sub.lineno) <= e[0] <= at(sub.end_lineno))]
        out: list[str] = []
        by_line: dict[int, list[tuple[int, int, str]]] = {}
        for line_index, start, end, text in edits:
            by_line.setdefault(line_index, []).append((start, end, text))
        for index, line in enumerate(lines):
            if index in replaced_lines:
                out.extend(replaced_lines[index])
                continue
            data = line.encode()
            for start, end, text in sorted(by_line.get(index, []), reverse=True):
                data = data[:start] + text.encode() + data[end:]
            out.append(data.decode())
        return "\n".join(out)


def _root_symbol(bundler: _Bundler, obj: Any) -> tuple:
    """The symbol of a class, function or module-level instance of the library."""
    module_name = (
        getattr(obj, "__module__", None) if inspect.isclass(obj) or inspect.isfunction(obj) else None
    )
    name = getattr(obj, "__name__", None)
    if module_name is None:
        raise BundleError(f"cannot locate {obj!r} in the source")
    return bundler.source.resolve(module_name, name)


@dataclass
class BundleFile:
    """One generated module: its file name and the objects it must define."""

    filename: str
    roots: Sequence[Any]


def bundle(files: Sequence[BundleFile], *, header: str = "") -> dict[str, str]:
    """Generate flat modules: file name -> source. Each file defines its roots and what they need that
    an earlier file does not define already (it imports that from the earlier file, same folder)."""
    bundler = _Bundler()
    plan = bundler.plan
    roots_of: list[list[tuple]] = []
    for number, spec in enumerate(files):
        symbols = []
        for root in spec.roots:
            # a class / function, or (module, name) of a module-level object (a registered instance)
            symbol = bundler.source.resolve(*root) if isinstance(root, tuple) else _root_symbol(bundler, root)
            bundler.include(symbol, number, spec.filename)
            symbols.append(symbol)
        roots_of.append(symbols)
    bundler.name_symbols()
    registry_names = _registries(bundler)
    outputs: dict[str, str] = {}
    for number, spec in enumerate(files):
        keys = [key for key in plan.order if plan.unit_file[key] == number]
        ordered = bundler.ordered(keys)
        # names this file uses that an earlier file defines
        borrowed: dict[int, set[str]] = {}
        for key in ordered:
            unit = bundler.source.module(key[0]).units[key[1]]
            deps = list(bundler._hard_deps(unit))
            for node, aliases in bundler._soft_imports(unit):
                if id(node) not in plan.cut:
                    deps += [target for _, target in aliases if target[0] == "unit"]
            for dep in deps:
                if dep[0] == "unit" and plan.unit_file[(dep[1], dep[2])] < number:
                    borrowed.setdefault(plan.unit_file[(dep[1], dep[2])], set()).add(plan.flat[dep])
        parts = [f'"""{header}"""' if header else "", "from __future__ import annotations", ""]
        parts += _render_externals(plan.ext_files.get(number, set()), plan)
        for earlier, names in sorted(borrowed.items()):
            stem = Path(files[earlier].filename).stem
            parts.append(f"from .{stem} import {', '.join(sorted(names))}  # noqa: F401")
        current_module = None
        for key in ordered:
            if key[0] != current_module:
                current_module = key[0]
                parts += ["", "", f"# {'-' * 20} from {current_module.replace('.', '/')}.py"]
            parts += ["", bundler.render(key)]
        tails = [name for key, name in registry_names if plan.unit_file[key] == number]
        if tails:
            parts += [
                "",
                "",
                "# the registries' entries are defined above: nothing to import on the first lookup",
            ]
            parts += [f"{name}._modules, {name}._loaded = (), True" for name in tails]
        text = "\n".join(parts).strip() + "\n"
        compile(text, spec.filename, "exec")  # a bundler bug fails here, not in a user's process
        outputs[spec.filename] = text
    return outputs


def _render_externals(keys: set[tuple], plan: _Plan) -> list[str]:
    lines = []
    plain = sorted(k for k in keys if k[0] == "import")
    for key in plain:
        lines.append(f"import {key[1]}" + (f" as {key[3]}" if key[3] else ""))
    grouped: dict[str, list[str]] = {}
    for key in sorted(k for k in keys if k[0] == "from"):
        grouped.setdefault(key[1], []).append(key[2] + (f" as {key[3]}" if key[3] else ""))
    for source, names in sorted(grouped.items()):
        lines.append(f"from {source} import {', '.join(sorted(set(names)))}")
    return lines


def _registries(bundler: _Bundler) -> list[tuple[tuple[str, int], str]]:
    """Bundled module-level registries (their lazy module lists name library modules)."""
    from .registry import Registry

    found = []
    for key in bundler.plan.unit_file:
        unit = bundler.source.module(key[0]).units[key[1]]
        live = sys.modules.get(key[0])
        for name in unit.names:
            if isinstance(getattr(live, name, None), Registry):
                found.append((key, bundler.plan.flat[("unit", key[0], key[1], name)]))
    return found


# ---------------------------------------------------------------------------------------- model folders
def served_pipelines(config: Any) -> dict[str, type]:
    """Pipeline task -> pipeline class for every hf-querygen pipeline that decodes a model of ``config``."""
    from transformers.pipelines import PIPELINE_REGISTRY

    from ._registration import PIPELINES, register_all
    from .pipelines._task_pipeline import _model_labels, _serves
    from .pipelines.text2text import QueryReformulationPipeline
    from .tasks.base import Task, get_task

    register_all()
    family = Task.family_of(Task(), config)
    labels = _model_labels(type("M", (), {"config": config}))
    served = {}
    for task_name, _module in PIPELINES.items():
        pipeline_class = PIPELINE_REGISTRY.supported_tasks[task_name]["impl"]
        if issubclass(pipeline_class, QueryReformulationPipeline):
            ok = family == "seq2seq"
        else:
            ok = _serves(get_task(pipeline_class.task_name), family, labels)
        if ok:
            served[task_name] = pipeline_class
    return served


def _task_root(pipeline_class: type) -> list[tuple]:
    """The module-level binding of the task instance a TaskPipeline decodes through (so that the bundle
    registers it), or nothing for a pipeline that needs no task object."""
    from .tasks.base import get_task

    task_name = getattr(pipeline_class, "task_name", None)
    if task_name is None:
        return []
    task = get_task(task_name)
    module = sys.modules[type(task).__module__]
    for name, value in vars(module).items():
        if value is task:
            return [(module.__name__, name)]
    raise BundleError(f"task {task_name!r} is not bound to a name in {module.__name__}")


def remote_code_files(model: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """(file name -> source, config.json additions) that make ``model``'s folder load without the library."""
    from .pipelines._task_pipeline import _model_labels
    from .tasks.base import Task

    config = model.config
    # the code depends on the classes and on which pipelines the config's family serves, not on weights
    key = (type(model), type(config), Task.family_of(Task(), config), frozenset(_model_labels(model)))
    if key not in _CACHE:
        _CACHE[key] = _remote_code_files(model)
    sources, additions = _CACHE[key]
    return dict(sources), json.loads(json.dumps(additions))


#: remote_code_files per (model class, config class, family, labels): Trainer saves every checkpoint
_CACHE: dict[tuple, tuple[dict[str, str], dict[str, Any]]] = {}


def _remote_code_files(model: Any) -> tuple[dict[str, str], dict[str, Any]]:
    from .models import MODELS
    from .specs import FAMILY_FIELD, family_of

    config = model.config
    model_type = config.model_type
    for cls in (type(model), type(config)):
        if not cls.__module__.startswith(PACKAGE + "."):
            raise BundleError(
                f"{cls.__module__}.{cls.__qualname__} is not a class of {PACKAGE}: nothing to bundle"
            )
    spec = next((s for _, s in MODELS.items() if s.config_class is type(config)), None)
    if spec is None:
        raise BundleError(f"model type {model_type!r} is not registered in hf_querygen.models.MODELS")
    auto_class = spec.auto_class
    config_file = CONFIG_FILE.format(model_type=model_type)
    modeling_file = MODELING_FILE.format(model_type=model_type)
    files = [BundleFile(config_file, [type(config)]), BundleFile(modeling_file, [type(model)])]
    pipelines = served_pipelines(config)
    for task_name, pipeline_class in pipelines.items():
        roots = [pipeline_class, *_task_root(pipeline_class)]
        files.append(BundleFile(PIPELINE_FILE.format(task=task_name.replace("-", "_")), roots))
    header = _header(f"model type {model_type!r}")
    sources = bundle(files, header=header)
    config_stem, modeling_stem = Path(config_file).stem, Path(modeling_file).stem
    additions = {
        # the bundled pipelines run without the model packages' ModelSpec registrations: the family
        # they decode for travels in the config (hf_querygen.specs.family_of reads it there)
        FAMILY_FIELD: family_of(config),
        "auto_map": {
            "AutoConfig": f"{config_stem}.{type(config).__name__}",
            auto_class: f"{modeling_stem}.{type(model).__name__}",
        },
        "custom_pipelines": {
            task_name: {
                "impl": f"{PIPELINE_FILE.format(task=task_name.replace('-', '_'))[:-3]}.{cls.__name__}",
                "pt": [auto_class],
                "type": "text",
            }
            for task_name, cls in pipelines.items()
        },
    }
    return sources, additions


def write_remote_code(model: Any, save_directory: str | Path) -> list[str]:
    """Write the flat code files into ``save_directory`` and add ``auto_map`` / ``custom_pipelines`` to its
    ``config.json`` (written by ``save_pretrained`` before). Returns the file names written."""
    save_directory = Path(save_directory)
    sources, additions = remote_code_files(model)
    for name, text in sources.items():
        (save_directory / name).write_text(text, encoding="utf-8")
    config_path = save_directory / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(additions)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return sorted(sources)


# ------------------------------------------------------------------------------------- library hooks
class _LocallyServedPipelines:
    """``config.custom_pipelines`` without the tasks this process already serves with the library's own
    pipeline classes.

    ``transformers.pipeline(task, model=folder)`` insists on ``trust_remote_code=True`` for any task listed
    in the config's ``custom_pipelines``; where ``hf_querygen`` is imported its registered pipeline serves
    the task, so the library's users keep calling ``pipeline(task, model=folder)`` as before. The stored
    value (``__dict__``, what ``to_dict`` saves) is untouched.
    """

    def __get__(self, config: Any, owner: type) -> Any:
        if config is None:
            return self
        stored = config.__dict__.get("custom_pipelines")
        if not stored:
            return {}
        from transformers.pipelines import PIPELINE_REGISTRY

        local = {
            task
            for task in stored
            if getattr(
                PIPELINE_REGISTRY.supported_tasks.get(task, {}).get("impl"), "__module__", ""
            ).startswith(PACKAGE + ".")
        }
        return {task: info for task, info in stored.items() if task not in local}

    def __set__(self, config: Any, value: Any) -> None:
        config.__dict__["custom_pipelines"] = value


def _save_pretrained_with_code(original: Any) -> Any:
    def save_pretrained(self: Any, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, save_directory, *args, **kwargs)
        if kwargs.get("is_main_process", True) and Path(save_directory, "config.json").is_file():
            try:
                write_remote_code(self, save_directory)
            except BundleError as err:  # e.g. a user's subclass that is not registered: the weights are saved
                warnings.warn(
                    f"{save_directory}: saved without its remote code (loads only where hf_querygen is "
                    f"installed): {err}",
                    UserWarning,
                    stacklevel=2,
                )
        return result

    save_pretrained.__doc__ = original.__doc__
    save_pretrained.__wrapped__ = original  # type: ignore[attr-defined]
    save_pretrained._writes_remote_code = True  # type: ignore[attr-defined]
    return save_pretrained


TOKENIZER_FILE = "tokenization_hf_querygen.py"


def write_tokenizer_code(tokenizer: Any, save_directory: str | Path) -> list[str]:
    """For a tokenizer class of the library (the jieba-segmenting one): write its flat module beside
    ``tokenizer_config.json`` and the ``auto_map`` entry that lets ``AutoTokenizer`` load it with
    ``trust_remote_code=True``. A stock tokenizer class needs nothing: returns ``[]``."""
    cls = type(tokenizer)
    if not cls.__module__.startswith(PACKAGE + "."):
        return []
    save_directory = Path(save_directory)
    (text,) = bundle(
        [BundleFile(TOKENIZER_FILE, [cls])], header=_header(f"tokenizer {cls.__name__}")
    ).values()
    (save_directory / TOKENIZER_FILE).write_text(text, encoding="utf-8")
    config_path = save_directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoTokenizer": [None, f"{Path(TOKENIZER_FILE).stem}.{cls.__name__}"]}
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [TOKENIZER_FILE]


def _header(what: str) -> str:
    from . import __version__

    return (
        f"Generated by hf-querygen {__version__} from its source for {what}: the code a saved folder needs\n"
        "to load with plain transformers (trust_remote_code=True). Do not edit: save_pretrained rewrites it."
    )


def _tokenizer_save_with_code(original: Any) -> Any:
    def save_pretrained(self: Any, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, save_directory, *args, **kwargs)
        if Path(save_directory, "tokenizer_config.json").is_file():
            write_tokenizer_code(self, save_directory)
        return result

    save_pretrained.__doc__ = original.__doc__
    save_pretrained._writes_remote_code = True  # type: ignore[attr-defined]
    return save_pretrained


def install() -> None:
    """Called by the library's registration: every registered model's ``save_pretrained`` also writes its
    self-contained code (:func:`write_remote_code`), and its config hides the custom pipelines this
    process serves itself (:class:`_LocallyServedPipelines`). Idempotent."""
    from .models import MODELS

    for _name, spec in MODELS.items():
        model_class = spec.model_class
        if not getattr(model_class.save_pretrained, "_writes_remote_code", False):
            model_class.save_pretrained = _save_pretrained_with_code(model_class.save_pretrained)
        if not isinstance(spec.config_class.__dict__.get("custom_pipelines"), _LocallyServedPipelines):
            spec.config_class.custom_pipelines = _LocallyServedPipelines()
    from .tokenization import JiebaWordTokenizer

    if not getattr(JiebaWordTokenizer.save_pretrained, "_writes_remote_code", False):
        JiebaWordTokenizer.save_pretrained = _tokenizer_save_with_code(JiebaWordTokenizer.save_pretrained)
