"""A persistent retrieval index: tantivy for the BM25 first pass, a numpy sidecar for exact statistics.

Folder layout (``Index.from_texts(..., path=folder)``; reopened with ``Index.open(folder)``)::

    folder/index.json    format version, analyzer, counts, and every file below with its size and content
                         hash plus a fingerprint over them (ties statistics, ids and tantivy segments to
                         one build; ``open`` verifies it and names a missing, truncated or foreign file)
    folder/.hf_querygen  the library's marker (what ``overwrite`` may replace: :mod:`hf_querygen._fs`)
    folder/ids.json      the caller's document ids (omitted when ids are row numbers)
    folder/tantivy/      the tantivy index (field ``text``: analysed terms, freqs; fast field ``row``)
    folder/stats/        collection statistics, see :mod:`hf_querygen.retrieval.stats`

Rankers (``search(query, k, ranker, **params)``):

``bm25``  ``k1=1.2, b=0.75``: tantivy's own BM25 top-k (WAND; document lengths quantised by tantivy's
          fieldnorm code above 40 tokens). Other ``k1``/``b``, or ``exact=True``: BM25 computed from the
          sidecar over every matching document, with exact lengths.
``ql``    ``mu=2500``: Dirichlet query likelihood over every document matching a query term (as Indri).
``sdm``   ``mu=2500, weights=(0.85, 0.10, 0.05), window=8, depth=1000``: Indri's sequential dependence
          model re-scoring the BM25 top-``depth`` documents exactly (``depth=None``: every document);
          window counts come from the sidecar positions (exact, and faster than tantivy phrase
          queries, which only give matching documents, not counts).

Bad input: a query that is not a string raises :class:`~hf_querygen.errors.InvalidInputError`; a query
that analyses to no terms (empty, whitespace, punctuation) or whose terms never occur in the collection
returns ``[]``; a query of more than ``max_query_terms`` terms raises ``InvalidInputError``. Every
parameter (ranker parameters, ``k``, ``rows``, thread counts, writer settings) is checked by
:mod:`hf_querygen.retrieval.params` (type, range, finiteness; ``k`` and ``depth`` capped at the
collection size), the layer the CLI's ``--param`` goes through too. No stopword
list is applied (stopwords are ordinary terms, as in the rest of the library). A missing, incomplete
or corrupted folder raises :class:`~hf_querygen.errors.ModelFolderError` naming the file.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import operator
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hf_querygen._fs import atomic_output_dir
from hf_querygen.errors import InvalidInputError, ModelFolderError

from . import params as params_layer
from .analysis import DOCUMENT_MARK, analyze, analyze_chunk
from .rankers import (
    BM25_DEFAULT_B,
    BM25_DEFAULT_K1,
    bm25_scores,
    matching_documents,
    ql_scores,
    sdm_scores,
)
from .stats import CollectionStats

FORMAT_VERSION = 2  # 2: index.json lists every file (size, content hash); 1 is still read
INDEX_KIND = "index"  # the .hf_querygen marker kind of an index folder
META_FILE = "index.json"
IDS_FILE = "ids.json"
TANTIVY_DIR = "tantivy"
STATS_DIR = "stats"
ANALYZER_NAME = "hf_querygen_terms"  # whitespace split of text already analysed by analysis.analyze
TEXT_FIELD = "text"
ROW_FIELD = "row"
#: each ranker's parameters and defaults (their types and ranges: :mod:`hf_querygen.retrieval.params`)
RANKER_PARAMS = {
    ranker: {name: param.default for name, param in specs.items()}
    for ranker, specs in params_layer.RANKER_PARAMS.items()
}
RANKERS = params_layer.RANKERS
#: documents analysed and mapped to term ids together (one split, one lookup pass per chunk)
CHUNK_SIZE = 8192


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved document: the caller's ``id``, the ranker's ``score``, 1-based ``rank``, ``row``
    (0-based position in the texts the index was built from)."""

    id: Any
    score: float
    rank: int
    row: int


def _tantivy():
    import tantivy

    return tantivy


def _schema():
    tantivy = _tantivy()
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(ROW_FIELD, stored=False, indexed=False, fast=True)
    # Frequencies only: positions for SDM come from the sidecar, so tantivy need not store them.
    builder.add_text_field(TEXT_FIELD, stored=False, tokenizer_name=ANALYZER_NAME, index_option="freq")
    return builder.build()


def _register_analyzer(tantivy_index) -> None:
    tantivy = _tantivy()
    tantivy_index.register_tokenizer(
        ANALYZER_NAME, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
    )


class Index:
    """A searchable collection: build with :meth:`from_texts` or :meth:`from_dataset`, then :meth:`open`."""

    def __init__(self, tantivy_index, stats: CollectionStats, ids: list | None, path: Path | None):
        self._tantivy_index = tantivy_index
        self.stats = stats
        self._ids = ids
        self.path = path
        self._schema = tantivy_index.schema
        self._searcher = tantivy_index.searcher()
        self.max_query_terms = 1024

    def __len__(self) -> int:
        return self.stats.num_docs

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return f"Index(num_docs={len(self)}, num_terms={len(self.stats.vocab)}{where})"

    # ------------------------------------------------------------------ building
    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        ids: Sequence | None = None,
        path: str | os.PathLike | None = None,
        overwrite: bool = False,
        show_progress: bool = True,
        heap_size: int = 512_000_000,
        num_threads: int = 0,
    ) -> Index:
        """Index ``texts`` (any iterable of strings, streamed once).

        ``ids``: one id per text (str or int, unique); default the row numbers 0..D-1. ``path``: the
        folder to persist into (``None``: in memory). An existing non-empty folder is an error unless
        ``overwrite=True``, which replaces an index this library wrote there (recognised by its
        ``.hf_querygen`` marker; any other folder is refused, naming its files: :mod:`hf_querygen._fs`).
        The index is built in a temporary sibling folder renamed at the end: a refused or failed build
        leaves nothing behind. ``num_threads``: tantivy writer threads (0: tantivy's choice).
        """
        params_layer.check_writer_settings(heap_size, num_threads)
        texts, ids = _check_collection_arguments(texts, ids)
        if path is None:
            return cls._build(texts, ids, None, show_progress, heap_size, num_threads)
        with atomic_output_dir(path, INDEX_KIND, overwrite, what="index") as staging:
            cls._build(texts, ids, staging, show_progress, heap_size, num_threads)
            gc.collect()  # drop the staging folder's tantivy handles before it is renamed
            _write_manifest(staging)
        return cls.open(path)

    @classmethod
    def _build(
        cls,
        texts: Iterable[str],
        ids: Sequence | None,
        folder: Path | None,
        show_progress: bool,
        heap_size: int,
        num_threads: int,
    ) -> Index:
        tantivy = _tantivy()
        schema = _schema()
        if folder is not None:
            (folder / TANTIVY_DIR).mkdir(parents=True)
            tantivy_index = tantivy.Index(schema, path=str(folder / TANTIVY_DIR))
        else:
            tantivy_index = tantivy.Index(schema)
        _register_analyzer(tantivy_index)
        writer = tantivy_index.writer(heap_size=heap_size, num_threads=num_threads)

        total = len(texts) if hasattr(texts, "__len__") else None
        progress = None
        if show_progress:
            from tqdm.auto import tqdm

            # advanced once per chunk: wrapping the texts would cost a Python call per document
            progress = tqdm(total=total, desc="indexing", unit="doc")
        vocab: dict[str, int] = {}
        token_chunks: list[np.ndarray] = []
        length_chunks: list[np.ndarray] = []
        document, add_document = tantivy.Document, writer.add_document
        row = 0
        # The build allocates millions of short-lived lists and no reference cycles: the cyclic
        # garbage collector only costs time here (measured: about 20% of the build CPU time).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for chunk in _chunks(texts, CHUNK_SIZE):
                try:
                    flat, index_texts, lengths = analyze_chunk(chunk)
                except TypeError as err:
                    raise InvalidInputError(
                        f"Index.from_texts: {err} (text {row} is the chunk's first)"
                    ) from err
                # term ids in bulk: the chunk's new terms, then a C-level map over its tokens; with
                # document marks in ``flat`` (not terms: -1), the document lengths come from their positions
                for term in dict.fromkeys(flat):
                    if term not in vocab and (lengths is not None or term != DOCUMENT_MARK):
                        vocab[term] = len(vocab)
                term_ids = _term_ids(vocab, flat, marked=lengths is None)
                if lengths is None:
                    marks = np.flatnonzero(term_ids < 0)
                    lengths = np.diff(marks, prepend=-1, append=len(term_ids)) - 1
                    term_ids = np.delete(term_ids, marks)
                token_chunks.append(term_ids)
                length_chunks.append(np.asarray(lengths, dtype=np.int64))
                for index_text in index_texts:
                    doc = document()
                    doc.add_unsigned(ROW_FIELD, row)
                    doc.add_text(TEXT_FIELD, index_text)
                    add_document(doc)
                    row += 1
                if progress is not None:
                    progress.update(len(index_texts))
        finally:
            if gc_was_enabled:
                gc.enable()
            if progress is not None:
                progress.close()

        writer.commit()
        writer.wait_merging_threads()
        doc_lengths = np.concatenate(length_chunks) if length_chunks else np.zeros(0, dtype=np.int64)
        num_docs = len(doc_lengths)
        ids = _check_ids(ids, num_docs)

        stats = CollectionStats.from_token_ids(
            list(vocab),
            np.concatenate(token_chunks) if token_chunks else np.zeros(0, dtype=np.int32),
            doc_lengths,
        )
        tantivy_index.reload()
        if folder is not None:
            stats.save(folder / STATS_DIR)
            if ids is not None:
                (folder / IDS_FILE).write_text(json.dumps(ids))
            meta = {
                "format_version": FORMAT_VERSION,
                "analyzer": "hf_querygen.retrieval.analysis.analyze (normalize_for_matching terms)",
                "num_docs": num_docs,
                "num_tokens": stats.num_tokens,
                "num_terms": len(stats.vocab),
                "ids": "ids.json" if ids is not None else "row numbers",
            }
            (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")  # last: marks completion
            stats = CollectionStats.load(folder / STATS_DIR)  # memory-mapped, same as a reopened index
        return cls(tantivy_index, stats, ids, folder)

    @classmethod
    def from_dataset(
        cls,
        dataset,
        text_column: str = "text",
        id_column: str | None = None,
        batch_size: int = 10_000,
        **kwargs: Any,
    ) -> Index:
        """Index a ``datasets.Dataset`` column (streamed in batches); ids from ``id_column`` if given."""
        for column in (text_column, id_column):
            if column is not None and column not in dataset.column_names:
                raise InvalidInputError(
                    f"Index.from_dataset: no column {column!r} (columns: {dataset.column_names})"
                )
        texts = _SizedIter(
            (
                text
                for batch in dataset.select_columns([text_column]).iter(batch_size)
                for text in batch[text_column]
            ),
            len(dataset),
        )
        ids = list(dataset[id_column]) if id_column is not None else None
        return cls.from_texts(texts, ids=ids, **kwargs)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike) -> Index:
        """Reopen a persisted index without rebuilding (the statistics are memory-mapped)."""
        folder = Path(path)
        if not folder.is_dir():
            raise ModelFolderError(f"index folder not found: {folder}")
        meta_path = folder / META_FILE
        if not meta_path.is_file():
            raise ModelFolderError(f"not a complete index folder: {meta_path} is missing")
        try:
            meta = json.loads(meta_path.read_text())
            num_docs = int(meta["num_docs"])
            version = meta["format_version"]
        except (ValueError, KeyError, TypeError) as err:
            raise ModelFolderError(f"index metadata is corrupted: {meta_path} ({err})") from err
        if version not in (1, FORMAT_VERSION):
            raise ModelFolderError(
                f"{meta_path}: format version {version}, this library reads 1 and {FORMAT_VERSION}"
            )
        if version >= 2:
            _verify_manifest(folder, meta)
        ids_path = folder / IDS_FILE
        if meta.get("ids") == IDS_FILE and not ids_path.is_file():
            # never fall back to row numbers: they would be returned as if they were the caller's ids
            raise ModelFolderError(
                f"index ids file is missing: {ids_path} (index.json says the ids are there)"
            )
        tantivy_dir = folder / TANTIVY_DIR
        try:
            tantivy_index, shadow = _open_tantivy(tantivy_dir)
            _register_analyzer(tantivy_index)
            tantivy_docs = tantivy_index.searcher().num_docs
        except (ValueError, OSError) as err:
            raise ModelFolderError(f"tantivy index is missing or corrupted: {tantivy_dir} ({err})") from err
        stats = CollectionStats.load(folder / STATS_DIR)
        if not (tantivy_docs == stats.num_docs == num_docs):
            raise ModelFolderError(
                f"{folder}: document counts disagree (index.json {num_docs}, tantivy {tantivy_docs}, "
                f"stats {stats.num_docs}); rebuild with overwrite=True"
            )
        ids = None
        if ids_path.exists():
            try:
                ids = json.loads(ids_path.read_text())
            except ValueError as err:
                raise ModelFolderError(f"index ids file is corrupted: {ids_path} ({err})") from err
            if not isinstance(ids, list) or len(ids) != num_docs:
                raise ModelFolderError(f"index ids file is corrupted: {ids_path} (expected {num_docs} ids)")
        index = cls(tantivy_index, stats, ids, folder)
        index._read_only_shadow = shadow  # kept alive with the index (None for a writable folder)
        return index

    # ------------------------------------------------------------------ searching
    def doc_id(self, row: int):
        return self._ids[row] if self._ids is not None else row

    def analyze_query(self, query: str) -> list[str]:
        """The query's terms (the index's analyzer); raises InvalidInputError for a non-string."""
        if not isinstance(query, str):
            raise InvalidInputError(f"Index.search: query must be a string, got {type(query).__name__}")
        terms = analyze(query)
        if len(terms) > self.max_query_terms:
            raise InvalidInputError(
                f"Index.search: the query has {len(terms)} terms; at most max_query_terms="
                f"{self.max_query_terms} (shorten it or raise index.max_query_terms)"
            )
        return terms

    def search(self, query: str, k: int = 10, ranker: str = "bm25", **params: Any) -> list[Hit]:
        """The top ``k`` documents for ``query`` under ``ranker`` (best first; ties by row).

        ``params`` are the ranker's (see the module docstring); unknown names raise InvalidInputError.
        """
        params = _ranker_params(ranker, params)
        k = params_layer.check_k(k, len(self))
        terms = self.analyze_query(query)
        term_ids = [self.stats.term_id(t) for t in terms]
        if not any(t >= 0 for t in term_ids):
            return []
        if ranker == "bm25":
            if not params["exact"] and (params["k1"], params["b"]) == (BM25_DEFAULT_K1, BM25_DEFAULT_B):
                rows, scores = self._tantivy_bm25(terms, term_ids, k)
                return self._hits(rows, scores, k)
            docs = matching_documents(self.stats, term_ids)
            return self._hits(docs, bm25_scores(self.stats, term_ids, docs, params["k1"], params["b"]), k)
        if ranker == "ql":
            docs = matching_documents(self.stats, term_ids)
            return self._hits(docs, ql_scores(self.stats, term_ids, docs, params["mu"]), k)
        depth = params["depth"]
        if depth is None:
            docs = np.arange(self.stats.num_docs)
        else:  # capped: tantivy aborts the process on a limit far above the collection size
            docs = np.sort(self._tantivy_bm25(terms, term_ids, min(max(depth, k), len(self)))[0])
        scores = sdm_scores(self.stats, term_ids, docs, params["mu"], params["weights"], params["window"])
        return self._hits(docs, scores, k)

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        ranker: str = "bm25",
        threads: int | None = None,
        **params: Any,
    ) -> list[list[Hit]]:
        """:meth:`search` for each query, on ``threads`` threads (default: the CPU count; tantivy and
        numpy release the GIL). Results in query order."""
        if isinstance(queries, str):
            raise InvalidInputError(
                "Index.search_batch: queries must be a sequence of strings, not one string"
            )
        _ranker_params(ranker, params)  # fail before starting threads
        params_layer.check_k(k, len(self), "Index.search_batch")
        threads = params_layer.check_threads(threads, "Index.search_batch") or os.cpu_count() or 1
        queries = _check_queries(queries)
        if threads <= 1 or len(queries) <= 1:
            return [self.search(q, k, ranker, **params) for q in queries]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(lambda q: self.search(q, k, ranker, **params), queries))

    def score(
        self, query: str, rows: Sequence[int] | None = None, ranker: str = "sdm", **params: Any
    ) -> np.ndarray:
        """Exact scores (sidecar formulas) of the given rows (default: every document) -> (K,) float64.

        BM25 here always uses exact lengths; useful to inspect or to re-rank an external candidate list.
        """
        params = _ranker_params(ranker, params)
        term_ids = [self.stats.term_id(t) for t in self.analyze_query(query)]
        docs = (
            np.arange(self.stats.num_docs)
            if rows is None
            else params_layer.check_rows(rows, self.stats.num_docs)
        )
        if not term_ids:
            return np.zeros(len(docs))
        if ranker == "bm25":
            return bm25_scores(self.stats, term_ids, docs, params["k1"], params["b"])
        if ranker == "ql":
            return ql_scores(self.stats, term_ids, docs, params["mu"])
        return sdm_scores(self.stats, term_ids, docs, params["mu"], params["weights"], params["window"])

    # ------------------------------------------------------------------ internals
    def _tantivy_bm25(
        self, terms: list[str], term_ids: list[int], limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        tantivy = _tantivy()
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, TEXT_FIELD, term))
            for term, term_id in zip(terms, term_ids, strict=True)
            if term_id >= 0
        ]
        query = tantivy.Query.boolean_query(clauses)
        hits = self._searcher.search(query, limit=limit, count=False).hits
        if not hits:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        rows = self._searcher.fast_field_values(ROW_FIELD, [address for _, address in hits])
        return np.asarray(rows, dtype=np.int64), np.asarray([score for score, _ in hits], dtype=np.float64)

    def _hits(self, rows: np.ndarray, scores: np.ndarray, k: int) -> list[Hit]:
        if not len(rows):
            return []
        if len(rows) > k:
            keep = np.argpartition(-scores, k - 1)[:k]
            # argpartition may cut through a tie at the k-th score: take every row tied with it
            threshold = scores[keep].min()
            keep = np.flatnonzero(scores >= threshold)
            rows, scores = rows[keep], scores[keep]
        order = np.lexsort((rows, -scores))[:k]
        return [
            Hit(self.doc_id(int(rows[i])), float(scores[i]), rank, int(rows[i]))
            for rank, i in enumerate(order, start=1)
        ]


def _term_ids(vocab: dict[str, int], terms: list[str], marked: bool) -> np.ndarray:
    """Ids of ``terms`` (every one in ``vocab``) in one C-level lookup; with ``marked`` the document
    marks among them get -1 (a real term spelled like the mark, from an earlier chunk, keeps its id)."""
    if not terms:
        return np.zeros(0, dtype=np.int32)
    real = vocab.get(DOCUMENT_MARK)
    if marked:
        vocab[DOCUMENT_MARK] = -1
    try:
        ids = operator.itemgetter(*terms)(vocab)
    finally:
        if marked:
            if real is None:
                del vocab[DOCUMENT_MARK]
            else:
                vocab[DOCUMENT_MARK] = real
    return np.array(ids if len(terms) > 1 else [ids], dtype=np.int32)


class _SizedIter:
    """An iterator with a length, so the progress bar knows the total."""

    def __init__(self, iterator: Iterable, length: int):
        self._iterator, self._length = iter(iterator), length

    def __iter__(self):
        return self._iterator

    def __len__(self) -> int:
        return self._length


def _chunks(iterable: Iterable, size: int) -> Iterable[list]:
    # islice / list slicing build each chunk in C, not one append per document
    if isinstance(iterable, list):
        for start in range(0, len(iterable), size):
            yield iterable[start : start + size]
        return
    iterator = iter(iterable)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _ranker_params(ranker: str, params: dict[str, Any]) -> dict[str, Any]:
    return params_layer.ranker_params(ranker, params)


def _check_queries(queries: Any) -> list[str]:
    if isinstance(queries, str | bytes) or not isinstance(queries, Iterable):
        raise InvalidInputError(
            f"Index.search_batch: queries must be a sequence of strings, not {type(queries).__name__}"
        )
    return list(queries)


def _check_collection_arguments(texts: Any, ids: Any) -> tuple[Iterable[str], Sequence | None]:
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


def _check_ids(ids: Sequence | None, num_docs: int) -> list | None:
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


# ---------------------------------------------------------------- index folder integrity
#: files up to this size are hashed whole; larger ones by their size, first and last MiB (fast to
#: verify at every open, and enough to tell two builds apart: their headers and vocabularies differ)
MANIFEST_FULL_HASH_LIMIT = 4 << 20
_SAMPLE_BYTES = 1 << 20
#: not content: tantivy's locks and garbage-collection bookkeeping, the library's marker
_UNLISTED = (".tantivy-meta.lock", ".tantivy-writer.lock", ".managed.json", ".hf_querygen", META_FILE)


def _file_digest(path: Path, size: int) -> str:
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        if size <= MANIFEST_FULL_HASH_LIMIT:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        else:
            digest.update(handle.read(_SAMPLE_BYTES))
            handle.seek(size - _SAMPLE_BYTES)
            digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()


def _listed_files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name not in _UNLISTED
    )


def _fingerprint(files: dict) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def _write_manifest(folder: Path) -> None:
    """Add to index.json every file of the folder with its size and content hash, and a fingerprint
    over them all, which ties the statistics, the ids and the tantivy segments to one build."""
    meta_path = folder / META_FILE
    meta = json.loads(meta_path.read_text())
    files = {}
    for name in _listed_files(folder):
        size = (folder / name).stat().st_size
        files[name] = {"size": size, "sha256": _file_digest(folder / name, size)}
    meta["files"] = files
    meta["fingerprint"] = _fingerprint(files)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")


def _verify_manifest(folder: Path, meta: dict) -> None:
    """Every file index.json lists is there with its size and content; raises ModelFolderError naming
    the first file that is missing, truncated or from another index."""
    files = meta.get("files")
    if not isinstance(files, dict) or not files or meta.get("fingerprint") != _fingerprint(files):
        raise ModelFolderError(
            f"index metadata is corrupted: {folder / META_FILE} (its file list or fingerprint is missing "
            "or was edited); rebuild the index"
        )
    for name, entry in sorted(files.items()):
        path = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not isinstance(entry, dict):
            raise ModelFolderError(f"index metadata is corrupted: {folder / META_FILE} lists {name!r}")
        if not path.is_file():
            raise ModelFolderError(
                f"index file is missing: {path} (listed in {META_FILE}); rebuild the index"
            )
        size = path.stat().st_size
        if size != entry.get("size"):
            raise ModelFolderError(
                f"index file {path} has {size} bytes, {META_FILE} lists {entry.get('size')} (truncated, or "
                "from another index); rebuild the index"
            )
        if _file_digest(path, size) != entry.get("sha256"):
            raise ModelFolderError(
                f"index file {path} is not the one this index was built with (its content differs from "
                f"{META_FILE}: from another index, or modified); rebuild the index"
            )


def _open_tantivy(tantivy_dir: Path):
    """Open the tantivy index; in a folder we cannot write (read-only mount, permissions) through a
    temporary folder of links to its files, since tantivy insists on creating a lock file beside them.
    Returns ``(tantivy_index, shadow)``; ``shadow`` (a TemporaryDirectory or None) must outlive it."""
    tantivy = _tantivy()
    if not tantivy_dir.is_dir():
        raise OSError(f"{tantivy_dir} is not a folder")
    if os.access(tantivy_dir, os.W_OK):
        try:
            return tantivy.Index.open(str(tantivy_dir)), None
        except ValueError as err:
            if "lock" not in str(err).lower():
                raise
    import tempfile

    shadow = tempfile.TemporaryDirectory(prefix="hf-querygen-index-")
    for entry in tantivy_dir.iterdir():
        if entry.name not in (".tantivy-meta.lock", ".tantivy-writer.lock"):
            os.symlink(entry.resolve(), Path(shadow.name) / entry.name)
    return tantivy.Index.open(shadow.name), shadow
