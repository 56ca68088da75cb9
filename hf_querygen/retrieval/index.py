"""A persistent retrieval index: tantivy for the BM25 first pass, a numpy sidecar for exact statistics.

Folder layout (``Index.from_texts(..., path=folder)``; reopened with ``Index.open(folder)``)::

    folder/index.json    format version, analyzer, counts, and every file below with its size and SHA-256
                         of its whole content plus a fingerprint over them (ties statistics, ids and
                         tantivy segments to one build; ``open`` verifies it and names a missing,
                         truncated, damaged or foreign file: :mod:`hf_querygen.retrieval.manifest`)
    folder/.hf_querygen  the library's marker (what ``overwrite`` may replace: :mod:`hf_querygen._fs`)
    folder/ids.json      the caller's document ids (omitted when ids are row numbers)
    folder/tantivy/      the tantivy index (field ``text``: analysed terms, freqs; fast field ``row``):
                         :mod:`hf_querygen.retrieval.tantivy_backend`
    folder/stats/        collection statistics, see :mod:`hf_querygen.retrieval.stats`
    folder/dense/        document embeddings, when built with ``embedder=``
                         (:mod:`hf_querygen.retrieval.dense`)

Rankers (``search(query, k, ranker, **params)``):

``bm25``  ``k1=1.2, b=0.75``: tantivy's own BM25 top-k (WAND; document lengths quantised by tantivy's
          fieldnorm code above 40 tokens). Other ``k1``/``b``, or ``exact=True``: BM25 computed from the
          sidecar over every matching document, with exact lengths.
``ql``    ``mu=2500``: Dirichlet query likelihood over every document matching a query term (as Indri).
``sdm``   ``mu=2500, weights=(0.85, 0.10, 0.05), window=8, depth=1000``: Indri's sequential dependence
          model re-scoring the BM25 top-``depth`` documents exactly (``depth=None``: every document);
          window counts come from the sidecar positions (exact, and faster than tantivy phrase
          queries, which only give matching documents, not counts).
``dense`` ``block=65536, approximate=False``: exact top-k of the query embedding's dot product (cosine for
          normalised embeddings) with the document embeddings, by blocked matrix products; with
          ``approximate=True`` the FAISS HNSW / IVF index of :meth:`Index.build_ann`.
``hybrid`` ``fusion="rrf", alpha=0.5, rrf_k=60, depth=100, approximate=False``: BM25 and dense
          top-max(``depth``, k) fused over their union by reciprocal rank fusion or a convex combination of
          min-max normalised scores (:mod:`hf_querygen.retrieval.dense`); ``approximate``: the dense list
          from the ANN graph.

Bad input: a query that is not a string raises :class:`~hf_querygen.errors.InvalidInputError`; a query
that analyses to no terms (empty, whitespace, punctuation) or whose terms never occur in the collection
returns ``[]``; a query of more than ``max_query_terms`` terms raises ``InvalidInputError``. Every
parameter (ranker parameters, ``k``, ``rows``, thread counts, writer settings; texts and ids) is checked by
:mod:`hf_querygen.retrieval.params` (type, range, finiteness; ``k`` and ``depth`` capped at the
collection size), the layer the CLI's ``--param`` goes through too. No stopword
list is applied (stopwords are ordinary terms, as in the rest of the library). A missing, incomplete
or corrupted folder raises :class:`~hf_querygen.errors.ModelFolderError` naming the file.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import itertools
import json
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hf_querygen._fs import atomic_output_dir
from hf_querygen.errors import InvalidInputError, ModelFolderError

from . import dense as dense_field
from . import params as params_layer
from .analysis import TermNumbering, analyze, analyze_chunk, native_chunk_encoder
from .ann import AnnIndex
from .manifest import FORMAT_VERSION, META_FILE, Digests, read_manifest, write_manifest
from .rankers import (
    BM25_DEFAULT_B,
    BM25_DEFAULT_K1,
    bm25_scores,
    matching_documents,
    ql_scores,
    sdm_scores,
)
from .stats import CollectionStats
from .tantivy_backend import (
    build_schema,
    import_tantivy,
    json_documents,
    open_tantivy,
    register_analyzer,
    tantivy_bm25,
)

INDEX_KIND = "index"  # the .hf_querygen marker kind of an index folder
IDS_FILE = "ids.json"
TANTIVY_DIR = "tantivy"
STATS_DIR = "stats"
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
        self.dense: dense_field.DenseField | None = None  # document embeddings (rankers dense, hybrid)
        self.ann = None  # Index.build_ann's approximate graph over them

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
        embedder: Any = None,
        dense_dtype: str = "float32",
        device: str | None = None,
        embedding_cache: str | os.PathLike | bool = True,
        embeddings: np.ndarray | None = None,
    ) -> Index:
        """Index ``texts`` (any iterable of strings, streamed once).

        ``ids``: one id per text (str or int, unique); default the row numbers 0..D-1. ``path``: the
        folder to persist into (``None``: in memory). An existing non-empty folder is an error unless
        ``overwrite=True``, which replaces an index this library wrote there (recognised by its
        ``.hf_querygen`` marker; any other folder is refused, naming its files: :mod:`hf_querygen._fs`).
        The index is built in a temporary sibling folder renamed at the end: a refused or failed build
        leaves nothing behind. ``num_threads``: tantivy writer threads (0: tantivy's choice); besides
        them and the calling thread (which hands documents to tantivy and then builds the statistics),
        one worker thread analyses the texts. ``texts`` is iterated in the calling thread only.

        ``embedder`` (a model name or folder, or a :class:`~hf_querygen.pretrained.SentenceEmbedder`) adds
        a dense field: every text is encoded (on ``device``; chunk by chunk, resumable through
        ``embedding_cache``: :func:`~hf_querygen.retrieval.dense.encode_documents`) and stored as
        ``dense_dtype`` (``"float32"`` or ``"float16"``); queries are embedded with the same model.
        ``embeddings``: the texts' embeddings by ``embedder`` computed beforehand, ``(len(texts), dim)``
        (e.g. from :func:`~hf_querygen.retrieval.dense.encode_documents` over a larger collection).
        """
        params_layer.check_writer_settings(heap_size, num_threads)
        texts, ids = params_layer.check_collection_arguments(texts, ids)
        dense = None
        if embeddings is not None and embedder is None:
            raise InvalidInputError("Index.from_texts: embeddings= needs the embedder= that computed them")
        if embedder is not None:
            dense_dtype = dense_field.check_dtype(dense_dtype)
            embedder = dense_field.make_embedder(embedder, device)
            texts = list(texts)  # read twice: by the encoder, then by the build
            info = dense_field.embedder_info(embedder)
            if embeddings is None:
                vectors = dense_field.encode_documents(
                    embedder, texts, cache=embedding_cache, show_progress=show_progress
                )
            else:
                vectors = dense_field.check_embeddings(embeddings, len(texts), info["dimension"])
            dense = (vectors, info, dense_dtype, dense_field.texts_fingerprint(texts))
        if path is None:
            index = cls._build(texts, ids, None, show_progress, heap_size, num_threads)
            if dense is not None:
                vectors, info, dtype, fingerprint = dense
                entry = {**info, "dtype": dtype, "texts_fingerprint": fingerprint}
                index.dense = dense_field.DenseField(vectors.astype(dtype), entry, embedder)
            return index
        with atomic_output_dir(path, INDEX_KIND, overwrite, what="index") as staging:
            digests = Digests()
            cls._build(texts, ids, staging, show_progress, heap_size, num_threads, digests)
            gc.collect()  # drop the staging folder's tantivy handles before it is renamed
            if dense is not None:
                dense_field.write_dense(staging, *dense)
            write_manifest(staging, digests.files)
        # the files were hashed as they were written (tantivy's and the embeddings right after): sizes suffice
        return cls.open(path, embedder=embedder, verify=False)

    @classmethod
    def _build(
        cls,
        texts: Iterable[str],
        ids: Sequence | None,
        folder: Path | None,
        show_progress: bool,
        heap_size: int,
        num_threads: int,
        digests: Digests | None = None,
    ) -> Index:
        tantivy = import_tantivy()
        schema = build_schema()
        if folder is not None:
            (folder / TANTIVY_DIR).mkdir(parents=True)
            tantivy_index = tantivy.Index(schema, path=str(folder / TANTIVY_DIR))
        else:
            tantivy_index = tantivy.Index(schema)
        register_analyzer(tantivy_index)
        writer = tantivy_index.writer(heap_size=heap_size, num_threads=num_threads)

        total = len(texts) if hasattr(texts, "__len__") else None
        progress = None
        if show_progress:
            from tqdm.auto import tqdm

            # advanced once per chunk: wrapping the texts would cost a Python call per document
            progress = tqdm(total=total, desc="indexing", unit="doc")
        analyser = _CollectionAnalyser()

        def hand_to_tantivy(analysed) -> None:
            documents = analysed.result()
            # one C-level loop of add_json calls (maxlen 0: nothing kept), no Python code per document
            collections.deque(map(writer.add_json, documents), maxlen=0)
            if progress is not None:
                progress.update(len(documents))

        # The build allocates millions of short-lived lists and no reference cycles: the cyclic
        # garbage collector only costs time here (measured: about 20% of the build CPU time).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        # One worker thread analyses the next chunk while this thread hands the last one to tantivy
        # (the C module and Arrow's kernels release the GIL). One worker: chunks are analysed in order, so
        # term ids follow document order. The statistics are built after tantivy's commit, once its buffers
        # are freed.
        with ThreadPoolExecutor(1, thread_name_prefix="hf-querygen-analysis") as worker:
            pending: collections.deque = collections.deque()
            try:
                row = 0
                for chunk in _chunks(texts, CHUNK_SIZE):
                    pending.append(worker.submit(analyser.analyse, chunk, row))
                    row += len(chunk)
                    while pending and (len(pending) > 1 or pending[0].done()):
                        hand_to_tantivy(pending.popleft())
                while pending:
                    hand_to_tantivy(pending.popleft())
            except BaseException:
                for future in pending:
                    future.cancel()
                # join tantivy's indexing threads before the caller removes the staging folder: a worker
                # still opening segment files would refill the folder while it is being deleted
                with contextlib.suppress(Exception):
                    writer.rollback()
                    writer.wait_merging_threads()
                raise
            finally:
                if gc_was_enabled:
                    gc.enable()
                if progress is not None:
                    progress.close()
        writer.commit()
        writer.wait_merging_threads()
        stats = analyser.statistics()
        num_docs = stats.num_docs
        ids = params_layer.check_ids(ids, num_docs)
        tantivy_index.reload()
        if folder is not None:
            digests = digests or Digests()
            stats.save(folder / STATS_DIR, digests.under(STATS_DIR))
            if ids is not None:
                digests.write_bytes(folder / IDS_FILE, json.dumps(ids).encode("utf-8"))
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
    def open(cls, path: str | os.PathLike, embedder: Any = None, verify: bool = True) -> Index:
        """Reopen a persisted index without rebuilding (the statistics and embeddings are memory-mapped).

        ``embedder``: the query embedder of the dense field (checked to be the model, revision, dimension
        and normalisation the documents were encoded with); default: loaded from ``index.json`` on the
        first dense query. ``verify`` (default): every file's SHA-256 is checked against ``index.json``
        first, so a damaged block anywhere is a :class:`~hf_querygen.errors.ModelFolderError` naming the
        file, never wrong results (cost: one read of the folder, about 200 MB at 1M documents; see
        ``benchmarks/index_verify.json``). ``verify=False`` checks the file list and sizes only (then
        :meth:`verify` checks the contents when convenient). An index of an older format is refused
        with the command that rebuilds it."""
        folder = Path(path)
        meta = read_manifest(folder, verify=verify)
        num_docs = int(meta["num_docs"])
        ids_path = folder / IDS_FILE
        if meta.get("ids") == IDS_FILE and not ids_path.is_file():
            # never fall back to row numbers: they would be returned as if they were the caller's ids
            raise ModelFolderError(
                f"index ids file is missing: {ids_path} (index.json says the ids are there)"
            )
        tantivy_dir = folder / TANTIVY_DIR
        try:
            tantivy_index, shadow = open_tantivy(tantivy_dir)
            register_analyzer(tantivy_index)
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
        index.dense = dense_field.load_dense(folder, meta, num_docs)
        if embedder is not None:
            index._dense_field("Index.open").attach(embedder, "Index.open")
        index._read_only_shadow = shadow  # kept alive with the index (None for a writable folder)
        return index

    def verify(self) -> None:
        """Check every file of this index's folder against the SHA-256 its ``index.json`` lists (what
        :meth:`open` does by default); raises ModelFolderError naming the first damaged file."""
        if self.path is None:
            raise InvalidInputError("Index.verify: an in-memory index has no folder to verify")
        read_manifest(self.path, verify=True)

    # ------------------------------------------------------------------ searching
    def doc_id(self, row: int):
        return self._ids[row] if self._ids is not None else row

    def analyze_query(self, query: str) -> list[str]:
        """The query's terms (the index's analyzer); raises InvalidInputError for a non-string."""
        params_layer.check_query(query)
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
        if ranker in ("dense", "hybrid"):
            return self._search_dense([query], k, ranker, params)[0]
        terms = self.analyze_query(query)
        term_ids = [self.stats.term_id(t) for t in terms]
        if not any(t >= 0 for t in term_ids):
            return []
        if ranker == "bm25":
            if not params["exact"] and (params["k1"], params["b"]) == (BM25_DEFAULT_K1, BM25_DEFAULT_B):
                rows, scores = tantivy_bm25(self._searcher, self._schema, terms, term_ids, k, len(self))
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
            limit = min(max(depth, k), len(self))
            docs = np.sort(tantivy_bm25(self._searcher, self._schema, terms, term_ids, limit, len(self))[0])
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
        checked = _ranker_params(ranker, params)  # fail before starting threads
        capped_k = params_layer.check_k(k, len(self), "Index.search_batch")
        threads = params_layer.check_threads(threads, "Index.search_batch") or os.cpu_count() or 1
        queries = params_layer.check_queries(queries)
        if ranker in ("dense", "hybrid"):  # queries embedded together, documents read once per block
            return self._search_dense(queries, capped_k, ranker, checked, threads)
        if threads <= 1 or len(queries) <= 1:
            return [self.search(q, k, ranker, **params) for q in queries]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(lambda q: self.search(q, k, ranker, **params), queries))

    def score(
        self, query: str, rows: Sequence[int] | None = None, ranker: str = "sdm", **params: Any
    ) -> np.ndarray:
        """Exact scores (sidecar formulas) of the given rows (default: every document) -> (K,) float64.

        BM25 here always uses exact lengths; useful to inspect or to re-rank an external candidate list.
        ``dense``: the dot products with the query embedding (``hybrid`` scores depend on the candidate
        lists, so it has no per-row score).
        """
        params = _ranker_params(ranker, params)
        if ranker == "hybrid":
            raise InvalidInputError("Index.score: hybrid scores depend on the candidate lists; use search")
        if ranker == "dense":
            docs = np.arange(len(self)) if rows is None else params_layer.check_rows(rows, len(self))
            field = self._dense_field("Index.score")
            return dense_field.dense_scores(field.matrix, self._embed([query], "Index.score")[0], docs)
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

    def build_ann(self, kind: str = "hnsw", threads: int | None = None, **settings: int) -> None:
        """Build the approximate index (FAISS HNSW or IVF) over the dense field, used by ``search(...,
        ranker="dense" or "hybrid", approximate=True)``; ``settings``: ``m``, ``ef_construction``,
        ``ef_search`` (hnsw) or ``nlist``, ``nprobe`` (ivf) (:mod:`hf_querygen.retrieval.ann`). Needs
        ``pip install 'hf-querygen[ann]'``."""
        field = self._dense_field("Index.build_ann")
        self.ann = AnnIndex.build(field.matrix, kind=kind, threads=threads, **settings)

    # ------------------------------------------------------------------ dense internals
    def _dense_field(self, where: str) -> dense_field.DenseField:
        if self.dense is None:
            raise InvalidInputError(
                f"{where}: this index has no dense field; build it with "
                "Index.from_texts(..., embedder=MODEL) or `hf-querygen index build --embed MODEL`"
            )
        return self.dense

    def _embed(self, queries: Sequence[str], where: str) -> np.ndarray:
        bad = next((q for q in queries if not isinstance(q, str)), None)
        if bad is not None:
            raise InvalidInputError(f"{where}: query must be a string, got {type(bad).__name__}")
        return self._dense_field(where).embed_queries(queries)

    def _search_dense(
        self, queries: Sequence[str], k: int, ranker: str, params: dict[str, Any], threads: int = 1
    ) -> list[list[Hit]]:
        """``dense`` / ``hybrid`` for a list of queries (an empty or whitespace query returns ``[]``)."""
        where = "Index.search"
        field = self._dense_field(where)
        vectors = np.zeros((len(queries), field.dimension), dtype=np.float32)
        live = [i for i, q in enumerate(queries) if not isinstance(q, str) or q.strip()]
        if live:
            vectors[live] = self._embed([queries[i] for i in live], where)
        depth = k if ranker == "dense" else min(max(params["depth"], k), len(self))
        if params["approximate"]:
            if self.ann is None:
                raise InvalidInputError(f"{where}: approximate=True needs Index.build_ann() first")
            found = self.ann.search(vectors[live], depth)
        else:
            block = params["block"] if ranker == "dense" else dense_field.DENSE_BLOCK
            found = dense_field.dense_top_k(field.matrix, vectors[live], depth, block)
        lists: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0, np.int64), np.zeros(0))] * len(queries)
        for i, result in zip(live, found, strict=True):
            lists[i] = result
        if ranker == "dense":
            return [
                [
                    Hit(self.doc_id(int(r)), float(s), rank, int(r))
                    for rank, (r, s) in enumerate(zip(*pair, strict=True), 1)
                ]
                for pair in lists
            ]

        def fuse_one(i: int) -> list[Hit]:
            if i not in live_set:
                return []
            terms = self.analyze_query(queries[i])
            term_ids = [self.stats.term_id(term) for term in terms]
            matched = any(t >= 0 for t in term_ids)
            dense_rows = lists[i][0]
            bm25_rows = np.zeros(0, np.int64)
            if matched:
                # the engine's BM25 list (tantivy's scores), ties by row
                rows, first_pass = tantivy_bm25(
                    self._searcher, self._schema, terms, term_ids, depth, len(self)
                )
                bm25_rows = rows[np.lexsort((rows, -first_pass))]
            candidates = np.union1d(bm25_rows, dense_rows)
            lexical = (
                bm25_scores(self.stats, term_ids, candidates, BM25_DEFAULT_K1, BM25_DEFAULT_B)
                if matched
                else np.zeros(len(candidates))
            )
            semantic = dense_field.dense_scores(field.matrix, vectors[i], candidates)
            scores = dense_field.fuse(
                candidates,
                bm25_rows,
                dense_rows,
                lexical,
                semantic,
                params["fusion"],
                params["alpha"],
                params["rrf_k"],
            )
            return self._hits(candidates, scores, k)

        live_set = set(live)
        if threads <= 1 or len(queries) <= 1:
            return [fuse_one(i) for i in range(len(queries))]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(fuse_one, range(len(queries))))

    # ------------------------------------------------------------------ internals
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


class _SizedIter:
    """An iterator with a length, so the progress bar knows the total."""

    def __init__(self, iterator: Iterable, length: int):
        self._iterator, self._length = iter(iterator), length

    def __iter__(self):
        return self._iterator

    def __len__(self) -> int:
        return self._length


class _CollectionAnalyser:
    """The build's analysis, run by its worker thread: each chunk's tantivy JSON documents, and the
    collection's term ids and lengths kept for the statistics built at the end. By the C module where it
    is compiled (:func:`~hf_querygen.retrieval.analysis.native_chunk_encoder`), else by Arrow."""

    def __init__(self) -> None:
        self.native = native_chunk_encoder()
        self.terms = TermNumbering()
        self.id_chunks: list[np.ndarray] = []
        self.length_chunks: list[np.ndarray] = []

    def analyse(self, chunk: list, first_row: int) -> list[str]:
        try:
            if self.native is not None:
                documents, ids, lengths = self.native.encode(chunk, first_row, "analyze_chunk")
                self.id_chunks.append(np.frombuffer(ids, dtype=np.int32))
                self.length_chunks.append(np.frombuffer(lengths, dtype=np.int64))
                return documents
            index_texts, terms, lengths = analyze_chunk(chunk)
        except (TypeError, UnicodeEncodeError) as err:  # a non-string, a lone surrogate: name its row
            raise params_layer.locate_bad_text(chunk, first_row) from err
        self.terms.add(terms)
        self.length_chunks.append(lengths)
        return json_documents(index_texts, first_row)

    def statistics(self) -> CollectionStats:
        if self.native is not None:
            vocabulary = self.native.vocabulary()
            tokens = np.concatenate(self.id_chunks) if self.id_chunks else np.zeros(0, dtype=np.int32)
        else:
            vocabulary, tokens = self.terms.result()
        lengths = np.concatenate(self.length_chunks) if self.length_chunks else np.zeros(0, dtype=np.int64)
        return CollectionStats.from_token_ids(vocabulary, tokens, lengths)


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
