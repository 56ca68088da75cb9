"""Small helpers shared across the package."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: the file ``hf-querygen train`` writes beside a model (training settings, scores): written by
#: :mod:`hf_querygen.training`, read by the model card (:mod:`hf_querygen.hub`) and the CLI
TRAINING_METADATA_FILE = "hf_querygen_training.json"


def require_extra(module: str, extra: str, purpose: str, package: str | None = None) -> ModuleType:
    """Import an optional dependency, or fail with the ``pip install 'hf-querygen[extra]'`` that brings it.

    ``purpose`` says what needs it ("The CRF segmenter"); ``package`` is its PyPI name when that differs
    from the module name (python-crfsuite -> pycrfsuite).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:  # depends on the installation
        raise ImportError(f"{purpose} needs {package or module}: pip install 'hf-querygen[{extra}]'") from err


def lazy_attribute(package: str, exports: dict[str, str], name: str) -> Any:
    """The PEP 562 ``__getattr__`` of a package that exports ``name -> module`` (relative to the
    package) lazily: a model package's modeling names, whose module imports transformers' modeling
    stack, load on first access."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{module}"), name)
