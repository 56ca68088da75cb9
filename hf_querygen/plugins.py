"""Outside packages join the library through the entry point group ``hf_querygen.plugins``.

A plugin's ``pyproject.toml`` declares::

    [project.entry-points."hf_querygen.plugins"]
    my_plugin = "my_package.hf_querygen_plugin"

The named module (or callable) registers its components the way the library's own modules do:
``MODELS.register(name, ModelSpec(...))`` for a model package, ``REPRODUCTIONS.register(paper, module)``
for a paper, ``register_systems([...])``, ``PRESETS.register(...)``, ``TASKS.register(...)``. Plugins are
loaded once, lazily, on the first lookup of any registry (so ``import hf_querygen`` stays cheap), and a
plugin that fails to import is an error naming it, not a silently missing component.
"""

from __future__ import annotations

from importlib import metadata

from .errors import InvalidInputError

#: the entry point group outside packages declare
ENTRY_POINT_GROUP = "hf_querygen.plugins"

_state = {"loaded": False}


def plugin_entry_points() -> list[metadata.EntryPoint]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP`, sorted by name (a stable load order)."""
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name)


def load_plugins(*, reload: bool = False) -> list[str]:
    """Import every plugin once (``reload``: look for newly installed ones again); a loaded object that
    is callable (``module:register``) is called. Returns the names of the plugins loaded now."""
    if _state["loaded"] and not reload:
        return []
    _state["loaded"] = True  # set first: a plugin's registrations look registries up
    loaded = []
    for point in plugin_entry_points():
        try:
            target = point.load()
        except Exception as error:  # noqa: BLE001 (any import failure of a plugin is reported as one)
            raise InvalidInputError(
                f"hf_querygen plugin {point.name!r} ({point.value}, entry point group {ENTRY_POINT_GROUP!r}) "
                f"failed to load: {type(error).__name__}: {error}"
            ) from error
        if callable(target):
            target()
        loaded.append(point.name)
    return loaded


__all__ = ["ENTRY_POINT_GROUP", "load_plugins", "plugin_entry_points"]
