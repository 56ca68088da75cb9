"""Imports flow one way: each component of ``hf_querygen`` sits on a floor (CONTRIBUTING's "Layers") and
imports only from its own floor or those below, module-level or inside a function alike, by statement or
by name (``importlib.import_module``, ``__import__``); and no two modules import each other, directly or
around a circle. Read from the source with ``ast``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hf_querygen"

#: lowest first; a component is a top-level module or sub-package of hf_querygen. The foundation holds the
#: shared helpers and the registries: the package root, the Auto-class registration and the CLI entry reach
#: the components above them only through registries those fill at their import (modules found on disk or
#: given as a registry's ``modules``; the root's lazy names, the CLI's command modules: names in data)
FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "__init__",
        "_fs",
        "_lazy_registration",
        "_ray",
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
    ("corpora", "nn", "tokenization", "pretrained"),
    ("models", "metrics", "retrieval"),
    ("presets", "synthetic"),
    ("tasks", "inference", "model_folder"),
    ("baselines", "training", "hub", "hub_export"),
    ("pipelines",),
    ("experiments", "systems", "commands", "batch_reformulation", "hub_cli", "hub_code", "demo"),
)
FLOOR = {component: level for level, components in enumerate(FLOORS) for component in components}


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package at ``root`` it imports (any depth of the file: function-local
    too), by statement or by name: ``importlib.import_module("a.b")`` / ``__import__("a.b")``, and an
    f-string name with a literal start (``f"a.b.{name}"``) as every module whose name so starts."""
    top = root.name
    modules = sorted(_module_name(path, root) for path in root.rglob("*.py"))
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = [f"{target}.{alias.name}" for alias in node.names]
                targets = [name if _is_module(name, root) else target for name in names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.Call):
                targets = _imported_by_name(node, module, package, modules)
            else:
                continue
            found[module].update(t for t in targets if t.split(".")[0] == top and t != module)
    return found


def _is_import_by_name(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr == "import_module" and ast.unparse(function.value) == "importlib"
    return isinstance(function, ast.Name) and function.id in ("import_module", "__import__")


def _imported_by_name(call: ast.Call, module: str, package: list[str], modules: list[str]) -> list[str]:
    """The modules a call ``importlib.import_module(name[, package])`` / ``__import__(name)`` may import:
    a literal name, or every module starting with an f-string's literal start; relative names resolved
    against ``__name__`` / ``__package__`` (or a literal package). Other names (variables) are not read."""
    if not _is_import_by_name(call) or not call.args:
        return []
    name = call.args[0]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        text, exact = name.value, True
    elif (
        isinstance(name, ast.JoinedStr)
        and name.values
        and isinstance(name.values[0], ast.Constant)
        and isinstance(name.values[0].value, str)
    ):
        text, exact = name.values[0].value, False
    else:
        return []
    if text.startswith("."):
        anchor = call.args[1] if len(call.args) > 1 else None
        anchor = next((k.value for k in call.keywords if k.arg == "package"), anchor)
        if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
            base = anchor.value.split(".")
        elif isinstance(anchor, ast.Name) and anchor.id in ("__name__", "__package__"):
            base = package if anchor.id == "__package__" else module.split(".")
        else:
            return []
        dots = len(text) - len(text.lstrip("."))
        text = ".".join(base[: len(base) - dots + 1]) + "." + text[dots:]
    if exact:
        return _with_packages(text)
    return [name for name in modules if name.startswith(text)] + _with_packages(text.rpartition(".")[0])


def _is_module(name: str, root: Path = PACKAGE) -> bool:
    path = root.parent / Path(*name.split("."))
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


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (module -> the modules it imports), each as the modules around it."""
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
    return cycles


def test_no_import_cycle_between_modules():
    cycles = _cycles(_imports())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_cycle_check_sees_imports_by_name(tmp_path):
    """A circle closed by an import by name (literal, f-string with a literal start, ``__import__``,
    relative to ``__name__``) is a circle; a name the source cannot tell (a variable) is not read."""
    root = tmp_path / "fakepkg"
    (root / "plugins").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "low.py": "import importlib\n\ndef wire():\n    importlib.import_module('fakepkg.high')\n",
        "high.py": "from .low import wire\n",
        "hooks.py": "from importlib import import_module\n\ndef run(name):\n"
        "    import_module(f'fakepkg.plugins.{name}')\n",
        "plugins/__init__.py": "",
        "plugins/one.py": "from ..hooks import run\n",
        "dunder.py": "def load():\n    return __import__('fakepkg.uses_dunder')\n",
        "uses_dunder.py": "from . import dunder\n",
        "relative.py": "import importlib\n\ndef load():\n"
        "    importlib.import_module('.uses_relative', __package__)\n",
        "uses_relative.py": "import fakepkg.relative\n",
        "opaque.py": "import importlib\n\ndef load(name):\n    importlib.import_module(name)\n",
        "uses_opaque.py": "from . import opaque\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    graph = _imports(root)
    assert graph["fakepkg.hooks"] >= {"fakepkg.plugins", "fakepkg.plugins.one"}
    circles = {frozenset(cycle) for cycle in _cycles(graph)}
    assert circles == {
        frozenset({"fakepkg.low", "fakepkg.high"}),
        frozenset({"fakepkg.hooks", "fakepkg.plugins.one"}),
        frozenset({"fakepkg.dunder", "fakepkg.uses_dunder"}),
        frozenset({"fakepkg.relative", "fakepkg.uses_relative"}),
    }


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


# -- function-local imports ------------------------------------------------------------------------------

#: third-party packages worth a function-local import of a module that loads them: each costs at least as
#: much as numpy to import, or is an optional extra of pyproject (jieba, yake, pycrfsuite, matplotlib, gensim,
#: sumy, bm25s, gradio, selenium: at a module's top it would break that module for whoever lacks the extra).
#: Measured with ``python -X importtime`` (sum of self times, best of 3, on the loaded dev machine): torch
#: 8.5 s, ``from huggingface_hub import HfApi`` 1.8 s (its http stack; a bare ``import huggingface_hub`` is
#: lazy), pyarrow 0.96 s, scipy 0.84 s, numpy 0.68 s, sacrebleu 0.65 s; earlier, on a quieter machine,
#: evaluate 12 s, accelerate 3.8 s, ``rouge_score.rouge_scorer`` 3.3 s (nltk), datasets 2.2 s, nltk 2.2 s,
#: pandas 1.9 s, transformers 1.7 s. Below numpy and not here (a module needing them imports them at its
#: top): tqdm 0.49 s, ir_measures 0.40 s, yaml 0.25 s, tokenizers 0.23 s, tantivy 0.16 s, safetensors 0.15 s
HEAVY = frozenset(
    {
        "accelerate",
        "datasets",
        "evaluate",
        "huggingface_hub",
        "nltk",
        "numpy",
        "pandas",
        "pyarrow",
        "rouge_score",
        "sacrebleu",
        "scipy",
        "torch",
        "transformers",
        # optional extras
        "bm25s",
        "gensim",
        "gradio",
        "jieba",
        "matplotlib",
        "pycrfsuite",
        "ray",
        "selenium",
        "sumy",
        "yake",
    }
)

#: what importing a HEAVY package loads of the others (measured with ``sys.modules``): a module that loads
#: torch has numpy already
HEAVY_LOADS: dict[str, frozenset[str]] = {
    "accelerate": frozenset({"numpy", "torch"}),
    "datasets": frozenset({"numpy", "pandas", "pyarrow"}),
    "evaluate": frozenset(
        {"accelerate", "datasets", "numpy", "pandas", "pyarrow", "scipy", "torch", "transformers"}
    ),
    "gensim": frozenset({"numpy", "scipy"}),
    "gradio": frozenset({"numpy", "pandas", "pyarrow"}),
    "matplotlib": frozenset({"numpy"}),
    "nltk": frozenset({"numpy", "scipy"}),
    "pandas": frozenset({"numpy", "pyarrow"}),
    "pyarrow": frozenset({"numpy"}),
    "rouge_score": frozenset({"nltk", "numpy", "scipy"}),
    "scipy": frozenset({"numpy"}),
    "torch": frozenset({"numpy"}),
    # a bare ``import transformers`` is lazy; any name from it (``PretrainedConfig``) loads torch
    "transformers": frozenset({"numpy", "torch"}),
    "yake": frozenset({"numpy"}),
}

#: (importing module, imported module) -> why the import stays inside a function although it loads nothing
#: heavy that the importing module does not load already
LOCAL_IMPORT_ALLOWED: dict[tuple[str, str], str] = {
    # the PEP 562 root: ``import hf_querygen`` loads only the import hook, a public name on first access
    ("hf_querygen", "hf_querygen.specs"): "root's lazy __getattr__/__dir__: model names on first access",
    ("hf_querygen", "hf_querygen._registration"): "root's lazy __getattr__: registers on first access",
    # the import hook that ``import hf_querygen`` installs registers only when transformers' Auto classes load
    ("hf_querygen._lazy_registration", "hf_querygen._registration"): "on the path of import hf_querygen",
    # the entry-point loader: importlib.metadata costs ~20 ms, a third of ``import hf_querygen.cli``, and is
    # needed only at the first registry lookup
    ("hf_querygen.registry", "hf_querygen.plugins"): "plugins load at the first registry lookup",
}

#: modules that a saved folder's remote code may carry (:mod:`hf_querygen.hub_code`): the bundler cuts their
#: function-local imports of ``hub_code.bundler.TRAINING_ONLY`` modules (corpora, metrics, ...), so such an
#: import stays in its function even when light, or the bundle would carry the training stack
BUNDLED = (
    "hf_querygen.tasks",
    "hf_querygen.pipelines",
    "hf_querygen.models",
    "hf_querygen.nn",
    "hf_querygen.inference",
    "hf_querygen.tokenization",
    "hf_querygen.model_folder",
)


def _training_only() -> tuple[str, ...]:
    for node in _tree("hf_querygen.hub_code.bundler").body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "TRAINING_ONLY":
            return ast.literal_eval(node.value)
    raise AssertionError("hub_code/bundler.py has no TRAINING_ONLY")


def _cut_by_the_bundler(module: str, target: str) -> bool:
    def within(name: str, prefixes: tuple[str, ...]) -> bool:
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    training = _training_only()
    return within(module, BUNDLED) and not within(module, training) and within(target, training)


def _module_path(module: str) -> Path:
    path = PACKAGE.parent / Path(*module.split("."))
    return path / "__init__.py" if (path / "__init__.py").is_file() else path.with_suffix(".py")


_TREES: dict[str, ast.Module] = {}


def _tree(module: str) -> ast.Module:
    if module not in _TREES:
        _TREES[module] = ast.parse(_module_path(module).read_text(encoding="utf-8"))
    return _TREES[module]


_EXPORT_MAPS: dict[str, dict[str, str]] = {}


def _lazy_exports(package: str) -> dict[str, str]:
    """Name -> module of a package whose ``__init__`` exports lazily (PEP 562 ``__getattr__`` over an
    ``_EXPORTS`` dict: the root, ``synthetic``): ``from hf_querygen import load_corpus`` imports
    ``hf_querygen.corpora``."""
    if package not in _EXPORT_MAPS:
        _EXPORT_MAPS[package] = {}
        if _module_path(package).name == "__init__.py":
            for node in _tree(package).body:
                target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                if isinstance(target, ast.Name) and target.id == "_EXPORTS":
                    _EXPORT_MAPS[package] = {
                        name: module if module.startswith("hf_querygen.") else f"{package}.{module}"
                        for name, module in ast.literal_eval(node.value).items()
                    }
    return _EXPORT_MAPS[package]


def _with_packages(module: str) -> list[str]:
    """Importing ``a.b.c`` runs ``a`` and ``a.b`` first."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _loaded_by(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Every module that executing the import statement ``node`` of ``module`` may load (ours and third-party
    ones, with their parent packages)."""
    if isinstance(node, ast.Import):
        return [name for alias in node.names for name in _with_packages(alias.name)]
    package = module.split(".") if _module_path(module).name == "__init__.py" else module.split(".")[:-1]
    if node.level:
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    loaded = _with_packages(base)
    for alias in node.names:
        if base.split(".")[0] != "hf_querygen":
            continue
        if _is_module(f"{base}.{alias.name}"):
            loaded += [f"{base}.{alias.name}"]
        elif _is_module(base) and alias.name in _lazy_exports(base):
            loaded += _with_packages(_lazy_exports(base)[alias.name])
    return loaded


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _import_time(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported: not those inside a function (nor a
    lambda), nor under ``if TYPE_CHECKING:`` (its ``else`` does run)."""
    found = []
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.Import | ast.ImportFrom):
            found.append(child)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        elif _is_type_checking(child):
            found += [n for stmt in child.orelse for n in _import_time(ast.Module(body=[stmt]))]
        else:
            found += _import_time(child)
    return found


def _top_level_definition(module: str, name: str) -> ast.AST | None:
    """The function or class ``name`` that ``module`` defines at its top."""
    for node in _tree(module).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            return node
    return None


def _called_at_import(module: str) -> list[tuple[str, ast.Import | ast.ImportFrom]]:
    """The function-local imports that run at import anyway: those of a function (or a class's
    ``__init__`` / ``__post_init__``) of ours that the module's top-level code calls (``TASKS.register(
    "q2id", Q2IDTask())``), this module's or one it imports by name; one call deep."""
    tree = _tree(module)
    imported = {}  # name -> the module of ours it comes from
    for node in _import_time(tree):
        if isinstance(node, ast.ImportFrom):
            source = _loaded_by(module, ast.ImportFrom(module=node.module, names=[], level=node.level))
            for alias in node.names:
                if source and source[-1].startswith("hf_querygen") and _is_module(source[-1]):
                    imported[alias.asname or alias.name] = (source[-1], alias.name)
    found = []
    for call in (n for statement in _import_time_code(tree) for n in ast.walk(statement)):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        owner, name = imported.get(call.func.id, (module, call.func.id))
        definition = _top_level_definition(owner, name)
        if isinstance(definition, ast.ClassDef):
            bodies = [n for n in definition.body if getattr(n, "name", "") in ("__init__", "__post_init__")]
        else:
            bodies = [definition] if definition is not None else []
        found += [(owner, node) for body in bodies for node in _function_local(body)]
    return found


def _import_time_code(tree: ast.AST) -> list[ast.AST]:
    """The statements and expressions that run at import (decorators, class bodies, defaults too)."""
    found = []
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            # (a keyword-only argument without a default has None in kw_defaults)
            found += [*child.decorator_list, *child.args.defaults, *filter(None, child.args.kw_defaults)]
        elif isinstance(child, ast.Lambda | ast.Import | ast.ImportFrom) or child is None:
            continue
        elif _is_type_checking(child):
            found += [
                n for statement in child.orelse for n in _import_time_code(ast.Module(body=[statement]))
            ]
        elif isinstance(child, ast.stmt | ast.ClassDef):
            found += _import_time_code(child) if _has_statements(child) else [child]
        else:
            found.append(child)
    return found


def _has_statements(node: ast.AST) -> bool:
    return any(isinstance(child, ast.stmt) for child in ast.iter_child_nodes(node))


def _function_local(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in function.body:
                found += [n for n in ast.walk(statement) if isinstance(n, ast.Import | ast.ImportFrom)]
    # a function nested in a function is walked twice
    return list({id(node): node for node in found}.values())


def _heavy_closure(modules: list[str]) -> set[str]:
    """The HEAVY packages that importing ``modules`` loads, following our modules' import-time imports."""
    heavy, seen, todo = set(), set(), list(modules)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        if module.split(".")[0] != "hf_querygen":
            if module.split(".")[0] in HEAVY:
                heavy |= {module.split(".")[0], *HEAVY_LOADS.get(module.split(".")[0], ())}
        elif _is_module(module):
            todo += [name for node in _import_time(_tree(module)) for name in _loaded_by(module, node)]
            todo += [name for owner, node in _called_at_import(module) for name in _loaded_by(owner, node)]
    return heavy


def _local_imports() -> tuple[list[str], list[str], dict[tuple[str, str], list[str]]]:
    """Each function-local import of one of our modules, as ``module:line: import``: (justified, with the
    heavy packages it adds; unjustified; LOCAL_IMPORT_ALLOWED key -> the imports it allows)."""
    justified, unjustified, allowed = [], [], defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        own = _heavy_closure(_with_packages(module))
        for node in _function_local(_tree(module)):
            loaded = _loaded_by(module, node)
            ours = [name for name in loaded if name.split(".")[0] == "hf_querygen"]
            if not ours:
                continue
            added = _heavy_closure(loaded) - own
            row = f"{module}:{node.lineno}: {ast.unparse(node)}"
            if added:
                justified.append(f"{row} (adds {', '.join(sorted(added))})")
            elif _cut_by_the_bundler(module, ours[-1]):
                justified.append(f"{row} (cut from the remote-code bundle)")
            elif (module, ours[-1]) in LOCAL_IMPORT_ALLOWED:
                allowed[module, ours[-1]].append(row)
            else:
                unjustified.append(row)
    return justified, unjustified, allowed


def test_function_local_imports_only_where_laziness_is_the_point():
    """A function-local import of one of our modules is for laziness only: the module it imports loads (at
    its import, through its own module-level imports) a HEAVY package that the importing module does not
    load already. Anything else goes at the module's top, where a reader sees the real structure; a light
    path that must stay light (``import hf_querygen``) gets a LOCAL_IMPORT_ALLOWED entry with its reason.
    A module that remote code may carry (BUNDLED) keeps its imports of training-only modules local too: the
    bundler cuts exactly those.

    HEAVY: every package that costs at least numpy's import (torch, transformers, datasets, evaluate,
    accelerate, huggingface_hub's names, pandas, pyarrow, scipy, numpy, nltk, rouge_score, sacrebleu) and
    every optional extra (jieba, yake, pycrfsuite, matplotlib, gensim, sumy, bm25s, gradio, selenium); the
    measurements are at HEAVY. "Loads at its import" is read from the source: module-level imports (and
    their parent packages; not under ``if TYPE_CHECKING``), names of a lazily exporting package resolved
    to their module (``from hf_querygen import load_corpus``), and the function-local imports of a function
    or constructor that module-level code calls (a registry entry built at import)."""
    _, unjustified, _ = _local_imports()
    assert not unjustified, (
        "move these imports to the module's top (they load nothing heavy that the module does not load "
        "already; see HEAVY and LOCAL_IMPORT_ALLOWED):\n" + "\n".join(unjustified)
    )


def test_every_allowed_local_import_still_exists():
    # a stale entry would let the next such import in silently
    _, _, allowed = _local_imports()
    stale = sorted(set(LOCAL_IMPORT_ALLOWED) - set(allowed))
    assert not stale, f"LOCAL_IMPORT_ALLOWED entries with no such import: {stale}"
