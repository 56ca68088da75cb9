"""The tree shaker: :func:`bundle` inlines what a set of root objects needs, name by name (not whole
modules), into flat modules that run where ``hf_querygen`` is not installed:

* the top-level statements defining the roots and, recursively, every top-level name they use (imports
  inside functions included), in an order where a class's bases and decorators come first;
* third-party imports as they were; package-internal imports dropped (the names live in the same
  module) or turned into an assignment when renamed;
* a name defined differently in two modules gets the module's name appended in one flat namespace;
* a function whose body imports from the library's training-only parts (:data:`TRAINING_ONLY`), and a
  task's training-only methods (:data:`TRAINING_METHODS`), keep their signature and docstring; their body
  becomes one ``raise ImportError`` saying the library is needed, so nothing they alone reach is bundled;
* a remaining function-level import that needs a package a plain ``transformers`` install lacks is cut
  the same way in place. The inference path keeps working.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..registry import Registry
from .source import (
    BundleError,
    _annotation_nodes,
    _external_allowed,
    _external_object,
    _is_internal,
    _names_used,
    _nested_imports,
    _Source,
    _Unit,
)

TRAINING_ONLY = (
    "hf_querygen._registration",
    "hf_querygen.baselines",
    "hf_querygen.corpora",
    "hf_querygen.experiments",
    "hf_querygen.metrics",
    "hf_querygen.presets",
    "hf_querygen.retrieval",
    "hf_querygen.synthetic",
    "hf_querygen.tasks.k2q.data",
    "hf_querygen.tasks.nl2kw.resources",
    "hf_querygen.training",
)

#: methods of the task classes (modules under these packages) that preparing data, training and scoring
#: use and that decoding never calls: bundled as signatures raising ImportError
TRAINING_METHODS: dict[str, frozenset[str]] = {
    "hf_querygen.tasks": frozenset(
        {
            "load",
            "resolve_corpus",
            "prepare",
            "prepare_data",
            "encode",
            "collator",
            "loss_function",
            "model_config",
            "_backbone_config",
            "pretraining_data",
            "word_vectors",
            "selection_splits",
            "selection_floor",
            "split_references",
            "evaluate",
            "score",
            "per_example_scores",
            "card_inputs",
        }
    )
}

_LIBRARY_NEEDED = (
    "needs the hf-querygen library (pip install hf-querygen): this bundled file holds the inference code only"
)


def _training_only_import(target: str) -> bool:
    return _is_internal(target) and any(target == p or target.startswith(p + ".") for p in TRAINING_ONLY)


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of ``function``'s body outside the functions and classes defined in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _body_start(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt | None:
    """The first statement after the docstring (None: the body is the docstring alone, or a one-liner)."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]
    if not body or body[0].lineno == function.lineno:
        return None
    return body[0]


def _suffixed(name: str, module_name: str, taken: set[str]) -> str:
    """``name`` with the shortest tail of ``module_name`` that makes it a new flat name: modules of different
    packages share a last part (``tasks.k2q.task``, ``tasks.text2text.task``)."""
    parts = module_name.split(".")
    for start in range(len(parts) - 1, -1, -1):
        candidate = f"{name}_{'_'.join(parts[start:])}"
        if candidate not in taken:
            return candidate
    raise BundleError(f"no flat name for {module_name}.{name}")


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
    #: (module, unit index) -> the functions of the unit bundled as a raise (_Bundler.cut_functions)
    cut_functions: dict[tuple[str, int], list] = field(default_factory=dict)
    #: (module, unit index) -> ids of the nodes inside those functions' bodies (read by every dependency pass)
    cut_nodes: dict[tuple[str, int], set[int]] = field(default_factory=dict)
    usable: dict[tuple, bool] = field(default_factory=dict)


class _Bundler:
    def __init__(self) -> None:
        self.source = _Source()
        self.plan = _Plan(self.source)
        self._visiting: set[tuple] = set()

    # -- functions bundled as a signature raising ImportError (module docstring)
    def cut_functions(self, unit: _Unit) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        if (unit.module, unit.index) in self.plan.cut_functions:
            return self.plan.cut_functions[(unit.module, unit.index)]
        module = self.source.module(unit.module)
        methods = next(
            (names for package, names in TRAINING_METHODS.items() if unit.module.startswith(package + ".")),
            frozenset(),
        )
        cut: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        if isinstance(unit.node, ast.ClassDef):
            for node in unit.node.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in methods:
                    cut.append(node)
        for node in ast.walk(unit.node):
            # the innermost function holding a training-only import: its enclosing ones keep working
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node not in cut:
                if any(
                    isinstance(sub, ast.ImportFrom)
                    and _training_only_import(self.source.absolute(module, sub.level, sub.module))
                    for sub in _own_statements(node)
                ):
                    cut.append(node)
        cut = [node for node in cut if _body_start(node) is not None]
        # a function inside a cut one is gone with it
        inside = {id(sub) for node in cut for stmt in node.body for sub in ast.walk(stmt)}
        cut = [node for node in cut if id(node) not in inside]
        self.plan.cut_functions[(unit.module, unit.index)] = cut
        return cut

    def _cut_node_ids(self, unit: _Unit) -> set[int]:
        key = (unit.module, unit.index)
        if key not in self.plan.cut_nodes:
            self.plan.cut_nodes[key] = {
                id(sub)
                for function in self.cut_functions(unit)
                for stmt in function.body
                for sub in ast.walk(stmt)
            }
        return self.plan.cut_nodes[key]

    # -- which symbols a unit needs: hard (its own references) and soft (function-level imports)
    def _hard_deps(self, unit: _Unit) -> list[tuple]:
        module = self.source.module(unit.module)
        deps = []
        cut = self._cut_node_ids(unit)
        for name in _names_used(unit.node):
            if id(name) in cut:
                continue
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
        cut = self._cut_node_ids(unit)
        for node in _nested_imports(unit.node):
            if id(node) in cut:
                continue
            if isinstance(node, ast.ImportFrom):
                target = self.source.absolute(module, node.level, node.module)
                if _training_only_import(target):
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
        taken = set(claims)
        for name, symbols in claims.items():
            externals = [s for s in symbols if s[0] == "external"]
            if len({id(_external_object(s[1])) for s in externals}) > 1:
                raise BundleError(f"two external imports bind {name!r}: {externals}")
            for position, symbol in enumerate(symbols):
                if symbol[0] == "external" or (position == 0 and not externals):
                    plan.flat[symbol] = name
                else:
                    plan.flat[symbol] = _suffixed(name, symbol[1], taken)
                    taken.add(plan.flat[symbol])

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

        cut = self._cut_node_ids(unit)
        for name in _names_used(node):
            if id(name) in cut:
                continue
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
        owner = unit.names[0] if len(unit.names) == 1 else key[0].rpartition(".")[2]
        for function in self.cut_functions(unit):
            start = _body_start(function)
            indent = " " * start.col_offset
            what = function.name if function is node else f"{owner}.{function.name}"
            replaced_lines[at(start.lineno)] = [f'{indent}raise ImportError("{what} {_LIBRARY_NEEDED}")']
            for lineno in range(start.lineno + 1, function.end_lineno + 1):
                replaced_lines[at(lineno)] = []
        for sub, aliases in self._soft_imports(unit):
            indent = " " * sub.col_offset
            if id(sub) in self.plan.cut:
                what = ", ".join(local for local, _ in aliases)
                text = [f'{indent}raise ImportError("{what} {_LIBRARY_NEEDED}")']
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
    found = []
    for key in bundler.plan.unit_file:
        unit = bundler.source.module(key[0]).units[key[1]]
        live = sys.modules.get(key[0])
        for name in unit.names:
            if isinstance(getattr(live, name, None), Registry):
                found.append((key, bundler.plan.flat[("unit", key[0], key[1], name)]))
    return found
