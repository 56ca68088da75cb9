"""One registry style for everything the library looks up by name: tasks, systems, presets, corpora,
pipelines, models, rankers and paper reproductions.

A registry maps a name to an object (a class, a factory, a spec). Registration happens at import of the
module that defines the object (``@TASKS.register("nl2kw")`` or ``PRESETS.register("liu2018", {...})``),
so adding a component is one registration, not an edit across files. Lookups of unknown names raise
:class:`~hf_querygen.errors.InvalidInputError` with the close matches and the full list.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, overload

from .errors import InvalidInputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> object. ``kind`` names the registry in error messages ("task", "preset", ...).

    ``modules`` lists modules imported on the first lookup, so that their registrations have run even if
    the caller imported only this registry (lazy: a CLI that only parses arguments imports nothing heavy);
    a callable gives them when called (a registry that discovers its modules, e.g. every model package).
    The first lookup of any registry also loads the outside packages of the ``hf_querygen.plugins``
    entry point group (:func:`hf_querygen.plugins.load_plugins`), so a plugin's components are listed with
    the library's own.
    """

    def __init__(self, kind: str, modules: tuple[str, ...] | Callable[[], Iterable[str]] = ()) -> None:
        self.kind = kind
        self._modules = modules
        self._loaded = False
        self._items: dict[str, T] = {}
        self._on_register: list[Callable[[str, T], None]] = []
        self._extra_modules: list[str] = []

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True  # set first: the imported modules register into this registry
            modules = self._modules() if callable(self._modules) else self._modules
            for module in modules:
                importlib.import_module(module)
            from .plugins import load_plugins

            load_plugins()
            for module in self._extra_modules:
                importlib.import_module(module)

    def add_modules(self, *modules: str) -> None:
        """Modules whose import registers into this registry, imported on the first lookup (now, if that
        happened already): how a plugin's cheap entry module points at its heavier components."""
        if self._loaded:
            for module in modules:
                importlib.import_module(module)
        else:
            self._extra_modules.extend(modules)

    def on_register(self, callback: Callable[[str, T], None]) -> None:
        """Call ``callback(name, obj)`` for every later registration (e.g. wire a model that a plugin
        registers after the Auto classes were set up)."""
        self._on_register.append(callback)

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...
    @overload
    def register(self, name: str, obj: T, *, replace: bool = ...) -> T: ...

    def register(self, name: str, obj: Any = None, *, replace: bool = False) -> Any:
        """Register ``obj`` under ``name``; without ``obj`` returns a decorator. Re-registering the same
        object is harmless; a different object under a taken name is an error unless ``replace``."""
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def add(value: T) -> T:
            current = self._items.get(name)
            if current is not None and current is not value and not replace:
                raise InvalidInputError(
                    f"{self.kind} {name!r} is already registered ({current!r}); pass replace=True to override"
                )
            self._items[name] = value
            for callback in self._on_register:
                callback(name, value)
            return value

        return add if obj is None else add(obj)

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), self._items, n=3)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise InvalidInputError(
                f"unknown {self.kind} {name!r}.{hint} Available: {', '.join(sorted(self._items))}"
            ) from None

    def __getitem__(self, name: str) -> T:
        """``registry[name]``, as :meth:`get` (dict-style access for registries that replaced dicts)."""
        return self.get(name)

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._load()
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._items)} registered)"
