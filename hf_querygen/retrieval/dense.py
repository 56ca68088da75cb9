"""The dense field of an index: document embeddings beside the tantivy index, exact top-k by blocked matrix
products, and hybrid BM25 + dense fusion.

Layout inside an index folder (listed, with every other file, in ``index.json``'s manifest)::

    folder/dense/embeddings.npy   (num_docs, dimension) float32 or float16, row r = document r; opened
                                  memory-mapped (``np.load(mmap_mode="r")``)

``index.json`` gains a ``"dense"`` entry: the embedder's ``model_id``, ``revision``, ``source``,
``dimension``, ``normalized``, ``max_seq_length``, the stored ``dtype``, the ``file`` and the
``texts_fingerprint`` (SHA-256 over the indexed texts, the key of the encoding cache). The manifest's
fingerprint over all files ties the array to the tantivy segments and statistics of the same build, so a
replaced or edited ``embeddings.npy`` is named at :meth:`~hf_querygen.retrieval.Index.open`.

Encoding (:func:`encode_documents`) is the cost of a dense field (MiniLM reads ~10 long documents/s per CPU
core). It runs chunk by chunk (:data:`ENCODE_CHUNK` texts), each chunk written atomically into a cache
folder keyed by the embedder and the texts' fingerprint (``$HF_QUERYGEN_CACHE/embeddings/<key>/``), so an
interrupted build resumes where it stopped and a second index over the same texts (or an experiment run
again) does not encode again.

Scores. With normalised embeddings (``normalized: true``) the dense score is the cosine
``s(q, d) = e(q) . e(d)``; :func:`dense_top_k` computes ``E[b] @ Q^T`` for blocks ``b`` of
:data:`DENSE_BLOCK` rows (float16 blocks are widened to float32 first: numpy has no float16 BLAS) and keeps
each block's best ``k`` by ``argpartition``, so no Python runs per document. Ties are broken by row.

Hybrid (:func:`fuse`) over the union ``C`` of the BM25 top-``depth`` and the dense top-``depth``:

* ``fusion="rrf"`` (Cormack, Clarke & Buettcher, SIGIR 2009): ``s(d) = sum_r 1 / (rrf_k + rank_r(d))``
  over the two lists ``r`` that contain ``d`` (1-based ranks; a list without ``d`` adds nothing);
* ``fusion="convex"``: ``s(d) = alpha * n_dense(d) + (1 - alpha) * n_bm25(d)`` with min-max normalised
  scores over ``C``, ``n(d) = (x(d) - min_C x) / (max_C x - min_C x)`` (0 when all are equal); BM25 of every
  candidate is the exact sidecar BM25 (``k1=1.2, b=0.75``; a document without a query term scores 0) and
  its dense score the dot product above.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hf_querygen._fs import apply_umask
from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.pretrained import SentenceEmbedder, cache_dir, resolve_backbone

from .manifest import META_FILE

DENSE_DIR = "dense"
EMBEDDINGS_FILE = "dense/embeddings.npy"
META_KEY = "dense"
DTYPES = ("float32", "float16")
#: texts encoded (and cached) together: the unit of resumption
ENCODE_CHUNK = 512
#: document rows multiplied per block: 64K x 384 float32 = 96 MiB read per block, scores 256 KiB per query
DENSE_BLOCK = 65_536
#: what a query embedder must agree on with the stored documents
IDENTITY_KEYS = ("dimension", "model_id", "revision", "normalized")
_CACHE_FORMAT = 1


# ---------------------------------------------------------------- embedders
def make_embedder(embedder: Any, device: str | None = None, where: str = "Index.from_texts") -> Any:
    """A :class:`~hf_querygen.pretrained.SentenceEmbedder` for a model name or folder; an object that
    already has ``encode`` and ``describe`` (an embedder) is returned as it is."""
    if hasattr(embedder, "encode") and hasattr(embedder, "describe"):
        if device is not None and getattr(embedder, "device", device) != device:
            raise InvalidInputError(
                f"{where}: device={device!r} but the embedder given runs on {embedder.device!r}; "
                "pass the device to the embedder, or a model name"
            )
        return embedder
    if not isinstance(embedder, str | os.PathLike):
        raise InvalidInputError(
            f"{where}: embedder must be a model name, a folder or a SentenceEmbedder, "
            f"got {type(embedder).__name__}"
        )
    return SentenceEmbedder(embedder, device=device)


def embedder_info(embedder: Any) -> dict[str, Any]:
    """The embedder's provenance (``describe()``) as JSON-ready values, checked to name a dimension."""
    info = dict(embedder.describe())
    if not isinstance(info.get("dimension"), int) or info["dimension"] < 1:
        raise InvalidInputError(f"embedder describes no positive dimension: {info}")
    return info


def texts_fingerprint(texts: Sequence[str]) -> str:
    """SHA-256 over the texts in order (each length-prefixed, UTF-8): the identity of what was encoded."""
    digest = hashlib.sha256(str(len(texts)).encode())
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def default_cache() -> Path:
    return cache_dir() / "embeddings"


def _atomic_save(path: Path, array: np.ndarray) -> None:
    """``np.save`` into a temporary sibling, then one rename: a chunk file is whole or absent."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            np.save(out, array, allow_pickle=False)
        apply_umask(temporary, directory=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def encode_documents(
    embedder: Any,
    texts: Sequence[str],
    batch_size: int = 64,
    chunk_size: int = ENCODE_CHUNK,
    cache: str | os.PathLike | bool = True,
    show_progress: bool = True,
) -> np.ndarray:
    """``(len(texts), dimension)`` float32 embeddings of ``texts``, encoded chunk by chunk.

    ``cache``: ``True`` (the library cache, :func:`default_cache`), a folder, or ``False`` (nothing kept).
    With a cache, chunk ``i`` is stored as ``<cache>/<key>/chunk-<i>.npy`` (written atomically) where
    ``key`` hashes the embedder's identity (model, revision, normalisation, text length), the texts'
    fingerprint and ``chunk_size``; chunks already there are read instead of encoded, so an interrupted
    encoding resumes and gives the same array.
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InvalidInputError("encode_documents: texts must be a list of strings")
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidInputError(f"encode_documents: text {row} is {type(text).__name__}, not a string")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInputError(
            f"encode_documents: chunk_size must be a positive integer, got {chunk_size!r}"
        )
    info = embedder_info(embedder)
    dimension = info["dimension"]
    folder = None
    if cache is not False:
        root = default_cache() if cache is True else Path(cache)
        key_source = {"format": _CACHE_FORMAT, "embedder": info, "texts": texts_fingerprint(texts)}
        key_source["chunk_size"] = chunk_size
        key = hashlib.sha256(json.dumps(key_source, sort_keys=True, default=str).encode()).hexdigest()[:32]
        folder = root / key
        folder.mkdir(parents=True, exist_ok=True)
        info_path = folder / "key.json"
        if not info_path.is_file():
            info_path.write_text(json.dumps(key_source, indent=2, sort_keys=True, default=str) + "\n")
    progress = None
    if show_progress:
        from tqdm.auto import tqdm

        progress = tqdm(total=len(texts), desc="embedding", unit="doc")
    out = np.empty((len(texts), dimension), dtype=np.float32)
    try:
        for number, start in enumerate(range(0, len(texts), chunk_size)):
            chunk = texts[start : start + chunk_size]
            path = None if folder is None else folder / f"chunk-{number:06d}.npy"
            vectors = _read_chunk(path, len(chunk), dimension)
            if vectors is None:
                vectors = np.asarray(embedder.encode(list(chunk), batch_size=batch_size), dtype=np.float32)
                if vectors.shape != (len(chunk), dimension):
                    raise InvalidInputError(
                        f"encode_documents: the embedder returned shape {vectors.shape} for {len(chunk)} "
                        f"texts; its describe() says dimension {dimension}"
                    )
                if path is not None:
                    _atomic_save(path, vectors)
            out[start : start + len(chunk)] = vectors
            if progress is not None:
                progress.update(len(chunk))
    finally:
        if progress is not None:
            progress.close()
    if not np.isfinite(out).all():
        bad = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
        raise InvalidInputError(f"encode_documents: the embedding of text {bad} is not finite")
    return out


def _read_chunk(path: Path | None, rows: int, dimension: int) -> np.ndarray | None:
    if path is None or not path.is_file():
        return None
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None  # a damaged cache entry is encoded again (and replaced)
    if vectors.shape != (rows, dimension) or vectors.dtype != np.float32:
        return None
    return vectors


def check_embeddings(
    embeddings: Any, rows: int, dimension: int, where: str = "Index.from_texts"
) -> np.ndarray:
    """Precomputed embeddings as a float32 ``(rows, dimension)`` array of finite values."""
    array = np.asarray(embeddings)
    if array.shape != (rows, dimension) or not np.issubdtype(array.dtype, np.floating):
        raise InvalidInputError(
            f"{where}: embeddings must be a float array of shape ({rows}, {dimension}) (one row per text, "
            f"the embedder's dimension), got {array.dtype} {array.shape}"
        )
    if not np.isfinite(array).all():
        raise InvalidInputError(f"{where}: embeddings hold NaN or infinite values")
    return array.astype(np.float32, copy=False)


# ---------------------------------------------------------------- the field in an index folder
def check_dtype(dtype: Any, where: str = "Index.from_texts") -> str:
    name = np.dtype(dtype).name if isinstance(dtype, str | np.dtype | type) else None
    if isinstance(dtype, str) and dtype not in DTYPES:
        name = None
    if name not in DTYPES:
        raise InvalidInputError(f"{where}: dense_dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return name


def write_dense(
    folder: Path, embeddings: np.ndarray, info: dict[str, Any], dtype: str, fingerprint: str
) -> None:
    """Store ``embeddings`` as ``dense/embeddings.npy`` and describe it in ``index.json`` (call before
    the manifest is written, which then lists and hashes the array)."""
    (folder / DENSE_DIR).mkdir(exist_ok=True)
    np.save(folder / EMBEDDINGS_FILE, np.ascontiguousarray(embeddings, dtype=dtype), allow_pickle=False)
    meta_path = folder / META_FILE
    meta = json.loads(meta_path.read_text())
    meta[META_KEY] = {**info, "dtype": dtype, "file": EMBEDDINGS_FILE, "texts_fingerprint": fingerprint}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")


@dataclass
class DenseField:
    """Document embeddings ``matrix`` (num_docs, dimension) and what made them (``info``: the manifest
    entry). The query embedder is the one given, else loaded on first use from ``info``'s model."""

    matrix: np.ndarray
    info: dict[str, Any]
    embedder: Any = None

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1])

    def attach(self, embedder: Any, where: str = "Index") -> None:
        """Use ``embedder`` for queries, after checking it is the model the documents were encoded with."""
        given = embedder_info(embedder)
        for key in IDENTITY_KEYS:
            if given.get(key) != self.info.get(key):
                raise InvalidInputError(
                    f"{where}: the query embedder's {key} is {given.get(key)!r}, but the documents were "
                    f"encoded with {key}={self.info.get(key)!r} ({self.info.get('model_id')}); "
                    "queries must be embedded with the same model"
                )
        self.embedder = embedder

    def query_embedder(self) -> Any:
        if self.embedder is None:
            backbone = resolve_backbone(self.info["model_id"], self.info.get("revision"))
            embedder = SentenceEmbedder(
                backbone,
                normalize=bool(self.info.get("normalized", True)),
                max_seq_length=self.info.get("max_seq_length"),
            )
            self.attach(embedder)
        return self.embedder

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """``(len(queries), dimension)`` float32 query embeddings."""
        vectors = np.asarray(self.query_embedder().encode(list(queries)), dtype=np.float32)
        if vectors.shape != (len(queries), self.dimension):
            raise InvalidInputError(
                f"the query embedder returned shape {vectors.shape}; the index stores dimension "
                f"{self.dimension}"
            )
        return vectors


def load_dense(folder: Path, meta: dict, num_docs: int) -> DenseField | None:
    """The dense field of an index folder (memory-mapped), checked against ``index.json``; ``None`` when
    the index has none. Raises :class:`ModelFolderError` naming the file when it disagrees."""
    info = meta.get(META_KEY)
    if info is None:
        return None
    path = folder / EMBEDDINGS_FILE
    if not isinstance(info, dict) or info.get("file") != EMBEDDINGS_FILE or info.get("dtype") not in DTYPES:
        raise ModelFolderError(f"index metadata is corrupted: {folder / 'index.json'} (its dense entry)")
    if EMBEDDINGS_FILE not in meta.get("files", {EMBEDDINGS_FILE: None}):
        raise ModelFolderError(
            f"index metadata is corrupted: {folder / 'index.json'} describes {path} but its manifest does "
            "not list it"
        )
    if not path.is_file():
        raise ModelFolderError(f"index file is missing: {path} (the dense field index.json describes)")
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ModelFolderError(f"index file {path} is not a readable .npy array ({err})") from err
    expected = (num_docs, info.get("dimension"))
    if matrix.ndim != 2 or tuple(matrix.shape) != expected or matrix.dtype.name != info["dtype"]:
        raise ModelFolderError(
            f"index file {path} holds a {matrix.dtype.name} array of shape {tuple(matrix.shape)}; "
            f"index.json says {info['dtype']} {expected}; rebuild the index"
        )
    return DenseField(matrix, dict(info))


# ---------------------------------------------------------------- scoring
def dense_top_k(
    matrix: np.ndarray, queries: np.ndarray, k: int, block: int = DENSE_BLOCK
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact top-``k`` rows of ``matrix @ q`` for each row ``q`` of ``queries`` -> per query
    ``(rows int64, scores float32)``, best first, ties by row.

    ``matrix``: (D, h) float32/float16 (memory-mapped or not); ``queries``: (Q, h) float32. Every block of
    ``block`` rows is read once for all queries (one GEMM), and its best ``k`` per query kept (plus every
    row tied with the k-th, so the final order by (score desc, row asc) is exact).
    """
    num_docs = matrix.shape[0]
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    k = min(k, num_docs)
    if k < 1 or not len(queries):
        return [(np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in range(len(queries))]
    kept_rows: list[list[np.ndarray]] = [[] for _ in range(len(queries))]
    kept_scores: list[list[np.ndarray]] = [[] for _ in range(len(queries))]
    transposed = queries.T
    for start in range(0, num_docs, block):
        part = matrix[start : start + block]
        if part.dtype != np.float32:
            part = part.astype(np.float32)
        scores = part @ transposed  # (B, Q)
        for q in range(len(queries)):
            rows, values = _block_top(scores[:, q], k)
            kept_rows[q].append(rows + start)
            kept_scores[q].append(values)
    return [
        _order(np.concatenate(r), np.concatenate(s), k) for r, s in zip(kept_rows, kept_scores, strict=True)
    ]


def _block_top(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if len(scores) <= k:
        return np.arange(len(scores)), scores.copy()
    keep = np.argpartition(-scores, k - 1)[:k]
    threshold = scores[keep].min()
    keep = np.flatnonzero(scores >= threshold)  # every row tied with the k-th
    return keep, scores[keep]


def _order(rows: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((rows, -scores))[:k]
    return rows[order].astype(np.int64), scores[order]


def dense_scores(matrix: np.ndarray, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix[rows] @ query`` (float32 arithmetic) -> (len(rows),) float64."""
    if not len(rows):
        return np.zeros(0)
    return (np.asarray(matrix[np.sort(rows)], dtype=np.float32) @ query)[np.argsort(np.argsort(rows))].astype(
        np.float64
    )


def ranks(rows: np.ndarray, universe: np.ndarray) -> np.ndarray:
    """1-based rank of each of ``universe`` in the ranked list ``rows`` (0 where it is absent)."""
    position = {int(r): i + 1 for i, r in enumerate(rows)}
    return np.asarray([position.get(int(u), 0) for u in universe], dtype=np.float64)


def min_max(scores: np.ndarray) -> np.ndarray:
    """``(x - min) / (max - min)`` (all zeros when the scores are equal)."""
    if not len(scores):
        return scores
    low, high = float(scores.min()), float(scores.max())
    return (scores - low) / (high - low) if high > low else np.zeros_like(scores)


def fuse(
    candidates: np.ndarray,
    bm25_rows: np.ndarray,
    dense_rows: np.ndarray,
    bm25: np.ndarray,
    dense: np.ndarray,
    fusion: str,
    alpha: float,
    rrf_k: float,
) -> np.ndarray:
    """Hybrid scores of ``candidates`` (the union of the two ranked lists ``bm25_rows`` and
    ``dense_rows``) given their BM25 and dense scores (module docstring: RRF or the convex combination)."""
    if fusion == "rrf":
        out = np.zeros(len(candidates))
        for ranked in (bm25_rows, dense_rows):
            rank = ranks(ranked, candidates)
            present = rank > 0
            out[present] += 1.0 / (rrf_k + rank[present])
        return out
    return alpha * min_max(dense) + (1.0 - alpha) * min_max(bm25)
