"""An index split into shards built in parallel (Ray tasks or one process), searched with global statistics.

Folder layout (``build_sharded_index(texts, path=folder, num_shards=S)``; reopened with
``ShardedIndex.open(folder)``)::

    folder/shards.json      format version, the shards in row order with their document counts, whether
                            the documents carry ids
    folder/.hf_querygen     the library's marker (kind ``sharded-index``: :mod:`hf_querygen._fs`)
    folder/shard-00000/ ..  one :class:`~hf_querygen.retrieval.Index` folder per shard: the contiguous rows
                            ``[offset_s, offset_s + D_s)`` of the collection

Every collection statistic a ranker reads is additive over shards, because a document (and so every
``#1`` / ``#uwN`` window, which never crosses a document) lies in exactly one shard:

    |D| = sum_s |D_s|,  |C| = sum_s |C_s|,  cf(x) = sum_s cf_s(x),  df(t) = sum_s df_s(t)

for a term or window expression x. A query is scored per shard with these sums in place of the shard's own
(:class:`_GlobalView`, the same formulas of :mod:`~hf_querygen.retrieval.rankers`), and the shards'
candidates are merged by score, ties by global row, so the results equal those of one index over the same
documents:

``ql``, ``bm25`` with ``exact=True`` or other ``k1`` / ``b``
    every document matching a query term, scored with the global sums: the same float64 scores.
``bm25`` (defaults) and the first pass of ``sdm``
    tantivy's BM25, which reads each shard's own statistics, cannot be told the global ones; it is computed
    here in tantivy's arithmetic (float32, fieldnorm codes, :func:`tantivy_bm25_scores`) from the
    statistics sidecar with the global N, df and average length: the same float32 scores as one tantivy
    index. Where several documents tie at the cut-off of the top ``k`` (``depth`` for SDM), one tantivy
    index keeps those its document addresses put first (which follow its writer threads), this index the
    lower rows.
``sdm``
    the exact SDM of the global BM25 top-``depth`` (every document for ``depth=None``).

Scale: each shard is an ordinary index, so shards can be built on different machines
(:func:`build_sharded_index` with ``use_ray=True`` runs one Ray task per shard) into a shared folder;
searching reads every shard (a shard's memory-mapped sidecar is the cost per machine).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from hf_querygen._fs import atomic_output_dir
from hf_querygen._ray import ensure_ray, run_tasks
from hf_querygen.errors import InvalidInputError, ModelFolderError

from . import params as params_layer
from .index import Hit, Index, top_rows
from .rankers import BM25_DEFAULT_B, BM25_DEFAULT_K1, bm25_scores, matching_documents, ql_scores, sdm_scores
from .stats import CollectionStats
from .tantivy_backend import tantivy_bm25

SHARDED_KIND = "sharded-index"  # the .hf_querygen marker kind of a sharded index folder
SHARDS_FILE = "shards.json"
SHARDS_FORMAT_VERSION = 1


def shard_folder_name(shard: int) -> str:
    return f"shard-{shard:05d}"


def shard_ranges(num_docs: int, num_shards: int) -> list[tuple[int, int]]:
    """``num_shards`` contiguous row ranges ``[start, end)`` covering ``num_docs`` rows, sizes differing by at
    most one (the first ones larger)."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise InvalidInputError(f"num_shards must be an integer >= 1, got {num_shards!r}")
    if num_shards > max(num_docs, 1):
        raise InvalidInputError(f"num_shards={num_shards} is more than the {num_docs} documents")
    base, extra = divmod(num_docs, num_shards)
    bounds = np.cumsum([0] + [base + (s < extra) for s in range(num_shards)])
    return [(int(bounds[s]), int(bounds[s + 1])) for s in range(num_shards)]


# ---------------------------------------------------------------------------------------------- building
def _build_shard(texts: list[str], ids: list | None, folder: str, num_threads: int) -> int:
    """Build one shard's index into ``folder`` (a Ray task, or called in process); returns its size.

    A retried task finds no folder: :meth:`Index.from_texts` publishes it with one rename at the end."""
    return len(Index.from_texts(texts, ids=ids, path=folder, show_progress=False, num_threads=num_threads))


def build_sharded_index(
    texts: Sequence[str],
    path: str | os.PathLike,
    num_shards: int,
    ids: Sequence | None = None,
    overwrite: bool = False,
    use_ray: bool = False,
    ray_address: str | None = None,
    num_threads: int = 0,
    show_progress: bool = True,
) -> ShardedIndex:
    """Split ``texts`` into ``num_shards`` contiguous shards, build each as an :class:`Index` (one Ray task
    per shard with ``use_ray``, at ``ray_address`` or a local Ray; else one after the other here) and
    publish the folder at ``path`` (:func:`hf_querygen._fs.atomic_output_dir`: a failed build leaves
    nothing). ``ids`` as for :meth:`Index.from_texts` (unique over the whole collection); ``num_threads``:
    tantivy writer threads per shard. With Ray, ``path`` must be on a file system every worker sees.

    A shard whose task fails is run once more; if it fails again the build stops with an
    :class:`InvalidInputError` naming the shard and the error."""
    params_layer.check_writer_settings(512_000_000, num_threads, "build_sharded_index")
    texts, ids = params_layer.check_collection_arguments(texts, ids)
    texts = list(texts)
    ids = params_layer.check_ids(list(ids) if ids is not None else None, len(texts))
    ranges = shard_ranges(len(texts), num_shards)
    with atomic_output_dir(path, SHARDED_KIND, overwrite, what="sharded index") as staging:
        arguments = [
            (
                texts[start:end],
                ids[start:end] if ids is not None else None,
                str(staging / shard_folder_name(s)),
                num_threads,
            )
            for s, (start, end) in enumerate(ranges)
        ]
        names = [f"shard {s} (rows {start}..{end - 1})" for s, (start, end) in enumerate(ranges)]
        progress = None
        if show_progress:
            from tqdm.auto import tqdm

            progress = tqdm(total=len(texts), desc=f"indexing {num_shards} shards", unit="doc")
        # a failure leaves nothing: the shards built so far are inside the staging folder, removed with it
        try:
            if use_ray:
                ensure_ray(ray_address)
                sizes = run_tasks(
                    _build_shard,
                    arguments,
                    names,
                    "build_sharded_index",
                    on_done=(lambda _, size: progress.update(size)) if progress is not None else None,
                )
            else:
                sizes = []
                for args in arguments:
                    sizes.append(_build_shard(*args))
                    if progress is not None:
                        progress.update(sizes[-1])
        finally:
            if progress is not None:
                progress.close()
        manifest = {
            "format_version": SHARDS_FORMAT_VERSION,
            "num_docs": len(texts),
            "ids": ids is not None,
            "shards": [{"folder": shard_folder_name(s), "num_docs": size} for s, size in enumerate(sizes)],
        }
        (staging / SHARDS_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    return ShardedIndex.open(path)


def open_any_index(path: str | os.PathLike) -> Index | ShardedIndex:
    """The index at ``path``: a :class:`ShardedIndex` where the folder holds ``shards.json``, else an
    :class:`Index` (both answer ``search`` / ``search_batch`` alike)."""
    if (Path(path) / SHARDS_FILE).is_file():
        return ShardedIndex.open(path)
    return Index.open(path)


# ---------------------------------------------------------------------------------------------- tantivy BM25
def _fieldnorm_table() -> np.ndarray:
    """tantivy's 256 fieldnorm codes (Lucene's one-byte length encoding): code -> the length it stands for.
    Codes below 24 are exact; above, 3 mantissa bits on an exponent."""
    table = np.zeros(256, dtype=np.int64)
    for code in range(256):
        if code < 24:
            table[code] = code
            continue
        bits, shift = (code - 24) & 7, (code - 24) >> 3
        table[code] = 24 + (bits if shift == 0 else (bits | 8) << (shift - 1))
    return table


FIELDNORMS = _fieldnorm_table()


def fieldnorm_codes(lengths: np.ndarray) -> np.ndarray:
    """Document lengths (D,) -> tantivy's fieldnorm code of each (D,) uint8 (the largest code not above)."""
    return (np.searchsorted(FIELDNORMS, np.asarray(lengths), side="right") - 1).astype(np.uint8)


def _load_logf():
    """The C library's single-precision ``logf``: tantivy's ``f32::ln``. numpy's float32 log and a float64
    log rounded to float32 each differ from it in the last bit for some arguments."""
    name = ctypes.util.find_library("m")
    try:
        logf = ctypes.CDLL(name).logf if name else None
    except OSError:
        logf = None
    if logf is None:
        return lambda x: float(np.float32(math.log(x)))
    logf.restype, logf.argtypes = ctypes.c_float, [ctypes.c_float]
    return logf


_logf = _load_logf()
_F32 = np.float32


def tantivy_idf(df: int, num_docs: int) -> np.float32:
    """tantivy's BM25 idf in float32: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    x = (_F32(num_docs - df) + _F32(0.5)) / (_F32(df) + _F32(0.5))
    return _F32(_logf(float(_F32(1.0) + x)))


def _tf_norms(num_tokens: int, num_docs: int) -> np.ndarray:
    """tantivy's BM25 length normalisation per fieldnorm code (256,) float32:
    ``k1 (1 - b + b dl / avgdl)``, ``avgdl = |C| / N`` in float32."""
    k1, b = _F32(BM25_DEFAULT_K1), _F32(BM25_DEFAULT_B)
    average = _F32(num_tokens) / _F32(num_docs)
    return k1 * (_F32(1.0) - b + b * FIELDNORMS.astype(_F32) / average)


def tantivy_bm25_scores(
    num_docs: int,
    num_tokens: int,
    fieldnorm: np.ndarray,
    query: Sequence[tuple[int, np.ndarray, np.ndarray]],
    size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """tantivy's BM25 (Robertson & Zaragoza 2009, k1 = 1.2, b = 0.75) in its float32 arithmetic, over the
    documents matching a query term: ``score(d) = sum_t w_t tf / (tf + k1 (1 - b + b dl(d) / avgdl))`` with
    ``w_t = idf(t) (1 + k1)``, ``dl`` the fieldnorm code's length, ``avgdl = |C| / N``, terms summed in
    query order (as tantivy does).

    ``num_docs`` N and ``num_tokens`` |C| are the collection's (global); ``fieldnorm`` (size,) the codes of
    this collection part's documents; ``query``: per query term occurrence ``(df, post_docs, post_tfs)``
    with its global df and its postings in this part. Returns ``(docs, scores)``: the matching documents
    ascending (K,) int64 and their float32 scores (K,)."""
    k1 = _F32(BM25_DEFAULT_K1)
    norm = _tf_norms(num_tokens, num_docs)
    scores = np.zeros(size, dtype=_F32)
    matched = np.zeros(size, dtype=bool)
    for df, docs, tfs in query:
        weight = tantivy_idf(df, num_docs) * (_F32(1.0) + k1)
        tf = tfs.astype(_F32)
        scores[docs] += weight * (tf / (tf + norm[fieldnorm[docs]]))
        matched[docs] = True
    docs = np.flatnonzero(matched)
    return docs, scores[docs]


# ---------------------------------------------------------------------------------------------- searching
class _QueryStatistics:
    """A query's terms in every shard and their global statistics.

    Term ids here are global to the query: ``g`` is the position of the term among the query's distinct
    terms that occur in the collection (``-1``: nowhere), ``local[s][g]`` its id in shard ``s`` (``-1``:
    not in that shard)."""

    def __init__(self, shards: Sequence[CollectionStats], terms: Sequence[str]):
        self.shards = shards
        self.terms = list(terms)
        present: dict[str, list[int]] = {}
        for term in dict.fromkeys(terms):
            ids = [stats.term_id(term) for stats in shards]
            if any(i >= 0 for i in ids):
                present[term] = ids
        position = {term: g for g, term in enumerate(present)}
        self.term_ids = [position.get(term, -1) for term in terms]
        self.local = [[present[term][s] for term in present] for s in range(len(shards))]
        self.cf = [sum(stats.cf(ids[s]) for s, stats in enumerate(shards)) for ids in present.values()]
        self.df = [sum(stats.df(ids[s]) for s, stats in enumerate(shards)) for ids in present.values()]
        self.num_docs = sum(stats.num_docs for stats in shards)
        self.num_tokens = sum(stats.num_tokens for stats in shards)
        self._windows: dict[tuple[int, int, int, bool], int] = {}

    def window_cf(self, a: int, b: int, width: int, ordered: bool) -> int:
        """cf of ``#1(a b)`` / ``#uwN(a b)`` in the collection: the sum of the shards' (windows never cross
        a document, so never a shard)."""
        key = (a, b, width, ordered)
        if key not in self._windows:
            total = 0
            if a >= 0 and b >= 0:
                for s, stats in enumerate(self.shards):
                    la, lb = self.local[s][a], self.local[s][b]
                    if la >= 0 and lb >= 0:
                        total += stats.window_cf(la, lb, width, ordered)
            self._windows[key] = total
        return self._windows[key]


class _GlobalView:
    """One shard's :class:`CollectionStats` as the rankers of :mod:`~hf_querygen.retrieval.rankers` read
    them, with the collection's sums (N, |C|, cf, df, window cf) in place of the shard's own; per-document
    values (lengths, tf, postings) are the shard's. Takes the query's global term ids."""

    def __init__(self, stats: CollectionStats, query: _QueryStatistics, shard: int):
        self._stats, self._query, self._local = stats, query, query.local[shard]
        self.num_docs, self.num_tokens = query.num_docs, query.num_tokens
        self.doc_lengths = stats.doc_lengths

    def _to_local(self, term: int) -> int:
        return self._local[term] if term >= 0 else -1

    def cf(self, term: int) -> int:
        return self._query.cf[term] if term >= 0 else 0

    def df(self, term: int) -> int:
        return self._query.df[term] if term >= 0 else 0

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        return self._stats.postings(self._to_local(term))

    def term_tf(self, term: int, docs: np.ndarray) -> np.ndarray:
        return self._stats.term_tf(self._to_local(term), docs)

    def window_tf(
        self, a: int, b: int, width: int, ordered: bool, docs: np.ndarray
    ) -> tuple[int, np.ndarray]:
        cf = self._query.window_cf(a, b, width, ordered)
        la, lb = self._to_local(a), self._to_local(b)
        if la < 0 or lb < 0:
            return cf, np.zeros(len(docs), dtype=np.int64)
        return cf, self._stats.window_tf(la, lb, width, ordered, docs)[1]


class ShardedIndex:
    """Shards of one collection searched as one index (module docstring); open with :meth:`open`."""

    def __init__(self, shards: Sequence[Index], ids: bool, path: Path | None = None):
        if not shards:
            raise InvalidInputError("ShardedIndex: no shards")
        self.shards = list(shards)
        self.path = path
        self._ids = ids
        sizes = [len(shard) for shard in self.shards]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._fieldnorms = [fieldnorm_codes(shard.stats.doc_lengths) for shard in self.shards]
        self.max_query_terms = self.shards[0].max_query_terms

    @classmethod
    def open(cls, path: str | os.PathLike) -> ShardedIndex:
        """Open a folder written by :func:`build_sharded_index`; a missing or inconsistent shard raises
        :class:`~hf_querygen.errors.ModelFolderError` naming it."""
        folder = Path(path)
        manifest_path = folder / SHARDS_FILE
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            entries = manifest["shards"]
            declared = int(manifest["num_docs"])
        except FileNotFoundError as err:
            raise ModelFolderError(f"not a sharded index: {manifest_path} is missing") from err
        except (ValueError, KeyError, TypeError) as err:
            raise ModelFolderError(f"sharded index manifest is corrupted: {manifest_path} ({err})") from err
        if manifest.get("format_version", 0) > SHARDS_FORMAT_VERSION:
            raise ModelFolderError(
                f"{manifest_path}: format version {manifest['format_version']} is newer than this library"
            )
        shards = []
        for entry in entries:
            shard = Index.open(folder / entry["folder"])
            if len(shard) != int(entry["num_docs"]):
                raise ModelFolderError(
                    f"{folder / entry['folder']}: {len(shard)} documents, {manifest_path} says "
                    f"{entry['num_docs']}"
                )
            shards.append(shard)
        index = cls(shards, bool(manifest.get("ids")), folder)
        if len(index) != declared:
            raise ModelFolderError(f"{manifest_path}: the shards hold {len(index)} documents, not {declared}")
        return index

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return f"ShardedIndex(num_docs={len(self)}, num_shards={len(self.shards)}{where})"

    def doc_id(self, row: int):
        """The id of global row ``row`` (the row itself when the documents carry no ids)."""
        if not self._ids:
            return row
        shard = int(np.searchsorted(self.offsets, row, side="right")) - 1
        return self.shards[shard].doc_id(row - int(self.offsets[shard]))

    def search(self, query: str, k: int = 10, ranker: str = "bm25", **params: Any) -> list[Hit]:
        """:meth:`Index.search` over the whole collection (rows are global: shard offset + local row)."""
        params = params_layer.ranker_params(ranker, params, "ShardedIndex.search")
        k = params_layer.check_k(k, len(self), "ShardedIndex.search")
        terms = self.shards[0].analyze_query(query)
        query_stats = _QueryStatistics([shard.stats for shard in self.shards], terms)
        term_ids = query_stats.term_ids
        if not any(t >= 0 for t in term_ids):
            return []
        tantivy_defaults = (params.get("k1"), params.get("b")) == (BM25_DEFAULT_K1, BM25_DEFAULT_B)
        if ranker == "bm25" and not params["exact"] and tantivy_defaults:
            rows, scores = self._tantivy_bm25(query_stats, k)
            return self._hits(rows, scores.astype(np.float64), k)
        views = [_GlobalView(shard.stats, query_stats, s) for s, shard in enumerate(self.shards)]
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        if ranker in ("bm25", "ql"):
            for s, view in enumerate(views):
                docs = matching_documents(view, term_ids)
                if ranker == "bm25":
                    scores = bm25_scores(view, term_ids, docs, params["k1"], params["b"])
                else:
                    scores = ql_scores(view, term_ids, docs, params["mu"])
                parts.append((docs + self.offsets[s], scores))
        else:
            depth = params["depth"]
            if depth is None:
                candidates = [np.arange(len(shard)) for shard in self.shards]
            else:
                limit = min(max(depth, k), len(self))
                first_rows, first_scores = self._tantivy_bm25(query_stats, limit)
                first_rows, _ = top_rows(first_rows, first_scores, limit)
                candidates = self._split(np.sort(first_rows))
            for s, (view, docs) in enumerate(zip(views, candidates, strict=True)):
                scores = sdm_scores(view, term_ids, docs, params["mu"], params["weights"], params["window"])
                parts.append((docs + self.offsets[s], scores))
        rows = np.concatenate([p[0] for p in parts]).astype(np.int64)
        return self._hits(rows, np.concatenate([p[1] for p in parts]), k)

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        ranker: str = "bm25",
        threads: int | None = None,
        **params: Any,
    ) -> list[list[Hit]]:
        """:meth:`search` for each query on ``threads`` threads (default: the CPU count); query order."""
        if isinstance(queries, str):
            raise InvalidInputError(
                "ShardedIndex.search_batch: queries must be a sequence of strings, not one string"
            )
        params_layer.ranker_params(ranker, params, "ShardedIndex.search_batch")
        params_layer.check_k(k, len(self), "ShardedIndex.search_batch")
        threads = params_layer.check_threads(threads, "ShardedIndex.search_batch") or os.cpu_count() or 1
        queries = params_layer.check_queries(queries)
        if threads <= 1 or len(queries) <= 1:
            return [self.search(q, k, ranker, **params) for q in queries]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(lambda q: self.search(q, k, ranker, **params), queries))

    # ------------------------------------------------------------------ internals
    def _tantivy_bm25(self, query: _QueryStatistics, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Global rows and their tantivy BM25 (float32) under global statistics: a set of matching documents
        that holds the global top ``limit`` (all of them where the top is tied at the cut-off).

        Each shard's own tantivy top l (WAND, the shard's statistics) is re-scored with the global ones. A
        document it left out has a local score <= the shard's l-th, s_l, and a global score <= ratio * s_l,
        where ratio bounds global / local per term: max_t w_global(t) / w_local(t) times
        max(1, avgdl_global / avgdl_local) (the tf part tf / (tf + k1 (1 - b + b dl / avgdl)) changes by at
        most the ratio of the averages). l starts at twice the shard's share of ``limit``; a shard whose
        bound reaches the ``limit``-th global score of the candidates is asked again for l = ``limit``, and
        if it still reaches it, scored in full (every matching document)."""
        k1 = _F32(BM25_DEFAULT_K1)
        num_docs, num_tokens = query.num_docs, query.num_tokens
        global_weights = {
            t: tantivy_idf(query.df[t], num_docs) * (_F32(1.0) + k1) for t in set(query.term_ids) if t >= 0
        }
        norm = _tf_norms(num_tokens, num_docs)

        def candidates(s: int, shard_limit: int) -> tuple[np.ndarray, np.ndarray, float | None]:
            """The shard's tantivy top ``shard_limit`` with global scores, and the bound on the global
            score of what it left out (None: it returned every matching document)."""
            shard, local = self.shards[s], query.local[s]
            stats = shard.stats
            present = [t for t in query.term_ids if t >= 0 and local[t] >= 0]
            local_ids = [local[t] if t >= 0 else -1 for t in query.term_ids]
            docs, local_scores = tantivy_bm25(
                shard._searcher, shard._schema, query.terms, local_ids, shard_limit, len(shard)
            )
            docs = np.sort(docs)
            scores = np.zeros(len(docs), dtype=_F32)
            codes = self._fieldnorms[s][docs]
            for t in present:  # query order, as tantivy sums; a term not in a document adds 0
                tf = stats.term_tf(local[t], docs).astype(_F32)
                scores += global_weights[t] * (tf / (tf + norm[codes]))
            if len(docs) < shard_limit or shard_limit >= len(shard):
                return docs, scores, None
            local_average = _F32(stats.num_tokens) / _F32(stats.num_docs)
            weight_ratio = max(
                float(global_weights[t]) / float(tantivy_idf(stats.df(local[t]), stats.num_docs) * (1 + k1))
                for t in present
            )
            length_ratio = max(1.0, float(_F32(num_tokens) / _F32(num_docs)) / float(local_average))
            # the margin covers float32 rounding of both scores, far above it
            return docs, scores, float(local_scores.min()) * weight_ratio * length_ratio * (1.0 + 1e-4)

        def full(s: int) -> tuple[np.ndarray, np.ndarray, None]:
            occurrences = [
                (query.df[t], *self.shards[s].stats.postings(query.local[s][t]))
                for t in query.term_ids
                if t >= 0 and query.local[s][t] >= 0
            ]
            docs, scores = tantivy_bm25_scores(
                num_docs, num_tokens, self._fieldnorms[s], occurrences, len(self.shards[s])
            )
            return docs, scores, None

        searched = [
            s
            for s in range(len(self.shards))
            if any(t >= 0 and query.local[s][t] >= 0 for t in query.term_ids)
        ]
        if not searched:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=_F32)
        # first ask each shard for twice its share of the top (enough unless the top gathers in a few
        # shards), then the whole top from the shards whose bound is not below the global limit-th score,
        # then every matching document of those still not below it
        share = min(limit, -(-2 * limit // len(searched)))
        parts = {s: candidates(s, min(share, len(self.shards[s]))) for s in searched}
        for step in ("top", "full"):
            pooled = np.concatenate([part[1] for part in parts.values()])
            threshold = np.partition(pooled, len(pooled) - limit)[-limit] if len(pooled) >= limit else None
            open_shards = [
                s
                for s, (_, _, bound) in parts.items()
                if bound is not None and (threshold is None or bound >= threshold)
            ]
            for s in open_shards:
                shard_limit = min(limit, len(self.shards[s]))
                wider = step == "top" and share < shard_limit
                parts[s] = candidates(s, shard_limit) if wider else full(s)
        rows = np.concatenate([parts[s][0] + self.offsets[s] for s in searched]).astype(np.int64)
        return rows, np.concatenate([parts[s][1] for s in searched])

    def _split(self, rows: np.ndarray) -> list[np.ndarray]:
        """Ascending global rows -> each shard's local rows (ascending)."""
        cuts = np.searchsorted(rows, self.offsets)
        return [rows[cuts[s] : cuts[s + 1]] - self.offsets[s] for s in range(len(self.shards))]

    def _hits(self, rows: np.ndarray, scores: np.ndarray, k: int) -> list[Hit]:
        rows, scores = top_rows(rows, scores, k)
        return [
            Hit(self.doc_id(int(row)), float(score), rank, int(row))
            for rank, (row, score) in enumerate(zip(rows, scores, strict=True), start=1)
        ]
