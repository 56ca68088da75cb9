"""The optional C module of the index build (``_native.c``): the chunk analysis of
:mod:`hf_querygen.retrieval.analysis` and the statistics of :mod:`hf_querygen.retrieval.stats` in one or
two passes over the characters and tokens, with the GIL released.

``pip install`` compiles it where a C compiler is there; elsewhere (or with ``HF_QUERYGEN_NO_NATIVE=1``)
the build takes the Arrow and numpy paths, which give the same index (tested against each other).
"""

from __future__ import annotations

import os
from types import ModuleType

try:
    from . import _native as _compiled
except ImportError:  # not compiled: no C compiler at install time
    _compiled = None

#: set to 1 to build indexes without the C module even where it is compiled (benchmarks, tests)
NO_NATIVE_ENV = "HF_QUERYGEN_NO_NATIVE"


def load_native() -> ModuleType | None:
    """``hf_querygen.retrieval._native``, or ``None`` where it was not compiled or is switched off."""
    if os.environ.get(NO_NATIVE_ENV, "") not in ("", "0"):
        return None
    return _compiled
