"""The one validation layer for retrieval parameters: ranker parameters, ``k``, ``rows``, thread counts
and index-writer settings, from the Python API and from the CLI's ``--param NAME=VALUE`` alike; and the
checks of an index's texts, ids and batch queries before any work is done.

Each parameter has a type, a range and finiteness checks; a bad value raises
:class:`~hf_querygen.errors.InvalidInputError` naming the parameter, what it takes and what it got.
Nothing reaches tantivy or the scoring formulas unchecked, so no value aborts the process (tantivy
panics on a huge ``limit``) or gives NaN scores or a meaningless order. ``k`` and SDM's ``depth`` are
capped at the collection size (asking for more documents than there are is not an error).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_querygen.errors import InvalidInputError

from .dense import DENSE_BLOCK
from .rankers import BM25_DEFAULT_B, BM25_DEFAULT_K1, SDM_DEFAULT_MU, SDM_DEFAULT_WEIGHTS, SDM_DEFAULT_WINDOW

#: upper bounds where larger values stop being meaningful and start losing float precision
MAX_K1 = 1e4
MAX_MU = 1e9
#: lower bounds (closed) that keep every score finite: ``mu P(x|C)`` must not underflow to 0 even for
#: an unseen expression of the largest collection (``1 / (2 * 2**63)``), nor ``k1`` times a short
#: document's length norm (tests/test_retrieval_params.py proves finiteness over the whole domain)
MIN_K1 = 1e-6
MIN_MU = 1e-6
#: SDM weights whose sum lies outside this range are rescaled (same proportions) before scoring, so that
#: neither the weighted sum overflows (1e308) nor the weights vanish into denormals (5e-324)
_WEIGHT_SUM_RANGE = (1e-100, 1e100)
MAX_WINDOW = 2**31 - 1  # positions are int32 in the statistics
MAX_THREADS = 1024
#: tantivy's limits on the indexing memory arena per writer thread (bytes)
TANTIVY_MIN_ARENA = 15_000_000
TANTIVY_MAX_ARENA = 4_293_967_295
TANTIVY_MAX_THREADS = 8  # tantivy's own cap when it chooses (num_threads=0)


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is ``"float"``, ``"int"``, ``"bool"``, ``"weights"``, ``"depth"``
    (a positive integer or ``None``) or ``"choice"`` (one of ``choices``); ``low`` / ``high`` the range
    (``low_open``: ``low`` excluded)."""

    name: str
    kind: str
    default: Any
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "weights":
            return "3 finite numbers >= 0 (T, O, U) with a positive sum"
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {_number(self.low)}"
        high = "" if self.high is None else f"<= {_number(self.high)}"
        bounds = " and ".join(b for b in (low, high) if b)
        what = "an integer" if self.kind in ("int", "depth") else "a finite number"
        return f"{what} {bounds}" + (" or None" if self.kind == "depth" else "")


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e12 else f"{value:g}"


_MU = Param("mu", "float", SDM_DEFAULT_MU, MIN_MU, MAX_MU)
RANKER_PARAMS: dict[str, dict[str, Param]] = {
    "bm25": {
        "k1": Param("k1", "float", BM25_DEFAULT_K1, MIN_K1, MAX_K1),
        "b": Param("b", "float", BM25_DEFAULT_B, 0.0, 1.0),
        "exact": Param("exact", "bool", False),
    },
    "ql": {"mu": _MU},
    "sdm": {
        "mu": _MU,
        "weights": Param("weights", "weights", SDM_DEFAULT_WEIGHTS),
        "window": Param("window", "int", SDM_DEFAULT_WINDOW, 2, MAX_WINDOW),
        "depth": Param("depth", "depth", 1000, 1, None),
    },
    # exact cosine / dot product over the index's dense field (hf_querygen.retrieval.dense); ``approximate``:
    # the ANN index built by Index.build_ann
    "dense": {
        "block": Param("block", "int", DENSE_BLOCK, 1, None),
        "approximate": Param("approximate", "bool", False),
    },
    # BM25 (k1=1.2, b=0.75) and dense top-``depth`` lists fused over their union (``approximate``: the
    # dense list from the ANN graph)
    "hybrid": {
        "fusion": Param("fusion", "choice", "rrf", choices=("rrf", "convex")),
        "alpha": Param("alpha", "float", 0.5, 0.0, 1.0),
        "rrf_k": Param("rrf_k", "float", 60.0, 0.0, MAX_MU, low_open=True),
        "depth": Param("depth", "int", 100, 1, None),
        "approximate": Param("approximate", "bool", False),
    },
}
RANKERS = tuple(RANKER_PARAMS)


def _fail(where: str, param: Param, value: Any) -> InvalidInputError:
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return InvalidInputError(f"{where}: {param.name} must be {param.describe()}, got {shown}")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_value(param: Param, value: Any, where: str) -> Any:
    """``value`` checked against ``param`` (and converted to a plain Python type)."""
    if param.kind == "choice":
        if not isinstance(value, str) or value not in param.choices:
            raise _fail(where, param, value)
        return value
    if param.kind == "bool":
        if not isinstance(value, bool | np.bool_):
            raise _fail(where, param, value)
        return bool(value)
    if param.kind == "weights":
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence | np.ndarray):
            raise _fail(where, param, value)
        weights = tuple(value)
        if len(weights) != 3 or not all(_is_real(w) and math.isfinite(w) and w >= 0 for w in weights):
            raise _fail(where, param, value)
        if not max(weights) > 0:
            raise _fail(where, param, value)
        weights = tuple(float(w) for w in weights)
        low, high = _WEIGHT_SUM_RANGE
        peak = max(weights)  # the sum lies in [peak, 3 peak]: no overflow in computing it
        if not low <= peak <= high / 3:
            # only the proportions matter (Indri's #weight normalises by the sum): scale by the largest
            # first (no overflow, no underflow of the largest), then to a sum of 1
            scaled = [w / peak for w in weights]
            total = math.fsum(scaled)
            weights = tuple(w / total for w in scaled)
        return weights
    if param.kind == "depth" and value is None:
        return None
    if param.kind in ("int", "depth"):
        if not _is_int(value):
            raise _fail(where, param, value)
        value = int(value)
    else:
        if not _is_real(value) or not math.isfinite(value):
            raise _fail(where, param, value)
        value = float(value)
    too_low = param.low is not None and (value <= param.low if param.low_open else value < param.low)
    if too_low or (param.high is not None and value > param.high):
        raise _fail(where, param, value)
    return value


def ranker_params(ranker: Any, params: Mapping[str, Any], where: str = "Index.search") -> dict[str, Any]:
    """The ranker's full parameter dict (defaults filled in), every value checked."""
    if not isinstance(ranker, str) or ranker not in RANKER_PARAMS:
        raise InvalidInputError(f"{where}: unknown ranker {ranker!r}; choose one of {', '.join(RANKERS)}")
    specs = RANKER_PARAMS[ranker]
    unknown = sorted(map(str, set(params) - set(specs)))
    if unknown:
        raise InvalidInputError(
            f"{where}: ranker {ranker!r} has no parameter(s) {', '.join(unknown)}; "
            f"it takes {', '.join(specs)}"
        )
    checked = {name: spec.default for name, spec in specs.items()}
    for name, value in params.items():
        checked[name] = check_value(specs[name], value, f"{where} ({ranker})")
    return checked


def check_k(k: Any, num_docs: int, where: str = "Index.search") -> int:
    """``k`` as an int >= 1, capped at the collection size (at least 1, for an empty collection)."""
    if not _is_int(k) or k < 1:
        raise InvalidInputError(f"{where}: k must be a positive integer, got {k!r}")
    return int(min(int(k), max(num_docs, 1)))


def check_rows(rows: Any, num_docs: int, where: str = "Index.score") -> np.ndarray:
    """``rows`` as an int64 array of document rows in ``[0, num_docs)``."""
    if isinstance(rows, str | bytes | Mapping) or not isinstance(rows, Sequence | np.ndarray | range):
        raise InvalidInputError(
            f"{where}: rows must be a sequence of document rows (integers), got {type(rows).__name__}"
        )
    bad = next((r for r in rows if not _is_int(r)), None)
    if bad is not None:
        raise InvalidInputError(f"{where}: rows must be integers, got {bad!r}")
    array = np.asarray([int(r) for r in rows], dtype=object)
    out_of_range = [int(r) for r in array if not 0 <= r < num_docs]
    if out_of_range:
        raise InvalidInputError(
            f"{where}: rows must lie in [0, {num_docs}) (the collection size), got {out_of_range[:5]}"
        )
    return array.astype(np.int64)


def check_threads(threads: Any, where: str, allow_zero: bool = False, name: str = "threads") -> int | None:
    """A thread count: ``None`` (automatic), or an int in [1, MAX_THREADS] ([0, ...] with ``allow_zero``)."""
    if threads is None:
        return None
    low = 0 if allow_zero else 1
    if not _is_int(threads) or not low <= threads <= MAX_THREADS:
        raise InvalidInputError(
            f"{where}: {name} must be an integer in [{low}, {MAX_THREADS}] or None, got {threads!r}"
        )
    return int(threads)


def check_writer_settings(heap_size: Any, num_threads: Any, where: str = "Index.from_texts") -> None:
    """tantivy's writer needs ``heap_size / threads`` in its per-thread arena limits: say so in our terms
    before tantivy is asked (``num_threads=0``: tantivy's choice, min(CPUs, 8) threads)."""
    num_threads = check_threads(num_threads, where, allow_zero=True, name="num_threads") or 0
    if not _is_int(heap_size):
        raise InvalidInputError(f"{where}: heap_size must be an integer (bytes), got {heap_size!r}")
    threads = num_threads or min(os.cpu_count() or 1, TANTIVY_MAX_THREADS)
    per_thread = int(heap_size) // threads
    if not TANTIVY_MIN_ARENA <= per_thread <= TANTIVY_MAX_ARENA:
        raise InvalidInputError(
            f"{where}: heap_size={heap_size!r} over {threads} writer thread(s) gives {per_thread:,} bytes "
            f"per thread; tantivy needs {TANTIVY_MIN_ARENA:,} to {TANTIVY_MAX_ARENA:,} (raise heap_size "
            "or lower num_threads)"
        )


# ---------------------------------------------------------------- collection and query arguments
def check_queries(queries: Any) -> list[str]:
    """``Index.search_batch``'s queries as a list; one string (not a sequence of them) is refused."""
    if isinstance(queries, str | bytes) or not isinstance(queries, Iterable):
        raise InvalidInputError(
            f"Index.search_batch: queries must be a sequence of strings, not {type(queries).__name__}"
        )
    return list(queries)


def check_collection_arguments(texts: Any, ids: Any) -> tuple[Iterable[str], Sequence | None]:
    """Refuse, before any work, arguments that would be iterated into nonsense (a string's characters,
    a mapping's keys) or that are not sequences at all."""
    for name, value in (("texts", texts), ("ids", ids)):
        if name == "ids" and value is None:
            continue
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            raise InvalidInputError(
                f"Index.from_texts: {name} must be a sequence (list, tuple, iterator) of "
                f"{'strings' if name == 'texts' else 'str or int ids'}, got {type(value).__name__}"
            )
    return texts, ids


def text_problem(text: Any) -> str | None:
    """Why ``text`` cannot be analysed (``None``: it can): not a string, or a string that is not valid
    Unicode text (a lone surrogate, which has no UTF-8 form)."""
    if not isinstance(text, str):
        return f"is {type(text).__name__} {_short(text)}, not a string"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (
            f"has a lone surrogate {text[err.start]!r} at character {err.start} (not valid Unicode text; "
            "decode its source with errors='replace')"
        )
    return None


def locate_bad_text(
    texts: Sequence[Any], first_row: int, where: str = "Index.from_texts"
) -> InvalidInputError:
    """The error for the first text of ``texts`` (rows from ``first_row``) that cannot be analysed,
    naming that text's own row; called once a chunk failed, so the good path pays nothing."""
    for offset, text in enumerate(texts):
        problem = text_problem(text)
        if problem is not None:
            return InvalidInputError(f"{where}: text {first_row + offset} {problem}")
    return InvalidInputError(f"{where}: a text among rows {first_row}..{first_row + len(texts) - 1} failed")


def check_query(query: Any, where: str = "Index.search") -> str:
    """A query: a string of valid Unicode text (the error names what it is instead)."""
    problem = text_problem(query)
    if problem is not None:
        raise InvalidInputError(f"{where}: the query {problem}")
    return query


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_ids(ids: Sequence | None, num_docs: int) -> list | None:
    """The caller's document ids as a list: one per text, str or int, none empty, all distinct (the error
    names the text); ``None`` (row numbers) passes through."""
    if ids is None:
        return None
    ids = list(ids)
    if len(ids) != num_docs:
        raise InvalidInputError(f"Index.from_texts: {len(ids)} ids for {num_docs} texts")
    # (the position, not the value: a None id must be found too)
    bad = next(
        (row for row, i in enumerate(ids) if not isinstance(i, str | int) or isinstance(i, bool)), None
    )
    if bad is not None:
        raise InvalidInputError(
            f"Index.from_texts: ids must be str or int; the id of text {bad} is {ids[bad]!r}"
        )
    empty = next((row for row, i in enumerate(ids) if isinstance(i, str) and not i.strip()), None)
    if empty is not None:
        raise InvalidInputError(f"Index.from_texts: id of text {empty} is empty ({ids[empty]!r})")
    if len(set(ids)) != len(ids):
        seen: dict = {}
        first, second = next((seen[i], row) for row, i in enumerate(ids) if seen.setdefault(i, row) != row)
        raise InvalidInputError(
            f"Index.from_texts: ids must be unique; texts {first} and {second} share id {ids[first]!r}"
        )
    return ids


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse_param(ranker: str, text: str, where: str = "--param") -> tuple[str, Any]:
    """``NAME=VALUE`` (the CLI's ``--param``) -> (name, value) converted by the parameter's type and
    checked like an API value."""
    name, sep, raw = text.partition("=")
    name, raw = name.strip(), raw.strip()
    if not sep or not name:
        raise InvalidInputError(f"{where} {text!r}: expected NAME=VALUE")
    specs = RANKER_PARAMS.get(ranker)
    if specs is None:
        raise InvalidInputError(f"unknown ranker {ranker!r}; choose one of {', '.join(RANKERS)}")
    if name not in specs:
        raise InvalidInputError(
            f"{where} {text!r}: ranker {ranker!r} has no parameter {name!r}; it takes {', '.join(specs)}"
        )
    param = specs[name]
    value: Any
    try:
        if param.kind == "choice":
            value = raw
        elif param.kind == "bool":
            if raw.lower() not in _TRUE + _FALSE:
                raise ValueError(raw)
            value = raw.lower() in _TRUE
        elif param.kind == "weights":
            value = tuple(float(v) for v in raw.split(","))
        elif param.kind == "depth" and raw.lower() == "none":
            value = None
        elif param.kind in ("int", "depth"):
            value = int(raw)
        else:
            value = float(raw)
    except ValueError:
        raise InvalidInputError(f"{where} {text!r}: {name} must be {param.describe()}") from None
    return name, check_value(param, value, f"{where} ({ranker})")


def parse_params(ranker: str, pairs: Sequence[str], where: str = "--param") -> dict[str, Any]:
    """Every ``--param NAME=VALUE`` of a command line (:func:`parse_param`); a name given twice is an
    error rather than a silent last-wins."""
    params: dict[str, Any] = {}
    for pair in pairs:
        name, value = parse_param(ranker, pair, where)
        if name in params:
            raise InvalidInputError(f"{where}: {name} given twice")
        params[name] = value
    return params
