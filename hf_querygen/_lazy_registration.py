"""Registration with the transformers Auto classes without importing torch at ``import hf_querygen``.

Registering a config needs its class, and every config class imports ``transformers``'
``PretrainedConfig``, which imports torch (seconds). So ``import hf_querygen`` registers nothing
itself. Instead it installs an import hook: the moment transformers' auto-config, auto-model,
auto-tokenizer or pipelines module finishes importing, :func:`hf_querygen._registration.register_loaded`
runs the phase of the registration that module makes due (configs, models, tokenizers, pipelines); those
already imported are registered at once. Our own model / pipeline modules are tracked too, so that
registration never starts while one of them is half-imported (it runs when the outermost of them
completes), and so that a model class imported later gets its class hooks (its ``save_pretrained`` writes
the folder's remote code). Touching a model, config or pipeline class through ``hf_querygen``
(``hf_querygen.DualDecoderConfig``) registers everything. Either way ``import hf_querygen`` followed by
``AutoConfig.from_pretrained(...)`` / ``pipeline("keyword-query-generation", ...)`` works as before.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

#: transformers modules after whose import our types must be known (each makes a phase of the
#: registration due: hf_querygen._registration.PHASES)
TRIGGERS = frozenset(
    {
        "transformers.models.auto.configuration_auto",
        "transformers.models.auto.modeling_auto",
        "transformers.models.auto.tokenization_auto",
        "transformers.pipelines",
    }
)

#: transformers modules that our model / pipeline modules import from: while one of them is
#: half-imported, registration waits (``transformers.modeling_utils`` imports the quantizers, which
#: import the auto config, a trigger: registering then would import our models, which need
#: ``PreTrainedModel`` from the half-built ``modeling_utils``)
TRANSFORMERS_DEPENDENCIES = frozenset(
    {
        "transformers.modeling_utils",
        "transformers.generation.utils",
        "transformers.configuration_utils",
        "transformers.tokenization_utils_base",
        "transformers.trainer",
    }
)

#: our modules that registration imports: while one of them is half-imported (importing it imports
#: transformers, which fires a trigger), registration waits until it is complete
OWN_PREFIXES = ("hf_querygen.models.", "hf_querygen.pipelines.", "hf_querygen.tokenization")

#: ``depth``: tracked modules being imported right now (one may import another: auto_factory imports
#: configuration_auto while modeling_auto is half-imported); registration waits for the outermost
_state = {"registering": False, "depth": 0}


def _register() -> None:
    from ._registration import register_loaded

    if _state["registering"]:
        return
    _state["registering"] = True
    try:
        register_loaded()
    finally:
        _state["registering"] = False


class _Loader(importlib.abc.Loader):
    """Wraps a trigger module's loader: run it, then register."""

    def __init__(self, loader: importlib.abc.Loader):
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        _state["depth"] += 1
        try:
            self.loader.exec_module(module)
        finally:
            _state["depth"] -= 1
        # only once no tracked module is half-imported, and only once transformers' auto classes exist
        if _state["depth"] == 0 and any(name in sys.modules for name in TRIGGERS):
            _register()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        tracked = fullname in TRIGGERS or fullname in TRANSFORMERS_DEPENDENCIES
        if not tracked and not fullname.startswith(OWN_PREFIXES):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and not isinstance(spec.loader, _Loader):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


_FINDER = _Finder()


def install() -> None:
    """Watch the imports (the registration's later phases, the class hooks of a model imported later);
    register what transformers already imported at once."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    if any(name in sys.modules for name in TRIGGERS):
        _register()
