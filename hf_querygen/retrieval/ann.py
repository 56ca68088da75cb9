"""Approximate nearest neighbours over a dense field: a FAISS HNSW graph (``pip install 'hf-querygen[ann]'``).

Why FAISS (``faiss-cpu``) rather than hnswlib: it is maintained (hnswlib's last release is 0.8.0, 2023),
ships manylinux wheels for every supported Python (hnswlib often compiles from source), exposes its
OpenMP thread count (:func:`faiss.omp_set_num_threads`, so a 1-thread latency is measurable) and offers
HNSW, IVF and exact flat indexes behind one interface, so recall against exact search is measured with
the same library.

Two kinds, both with the inner-product metric (cosine for normalised embeddings), built in memory from the
field's array (as float32) and kept on the :class:`~hf_querygen.retrieval.Index` (``Index.build_ann``; not
written into the index folder):

* ``"hnsw"`` (``IndexHNSWFlat``): ``m`` neighbours per node, ``ef_construction`` while building,
  ``ef_search`` candidates kept while searching (the recall / latency knob). Best recall per query
  cost, but the build inserts one vector at a time (about 0.5 ms CPU per 384-dim vector at m=32);
* ``"ivf"`` (``IndexIVFFlat``): k-means into ``nlist`` lists (trained on at most 64 vectors per list),
  every vector stored in its nearest list; a query scans the ``nprobe`` nearest lists. Builds several
  times faster than HNSW (one matrix product per vector), so it is the one for a million documents on a
  few cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_querygen.errors import InvalidInputError
from hf_querygen.utils import require_extra

ANN_DEFAULTS = {"m": 32, "ef_construction": 80, "ef_search": 128, "nlist": 1024, "nprobe": 16}
KINDS = ("hnsw", "ivf")
_TRAIN_PER_LIST = 64
#: rows added to the graph per call (keeps the float32 copy of a float16 field small)
_ADD_BLOCK = 65_536


def import_faiss() -> Any:
    return require_extra("faiss", "ann", "Approximate dense search", "faiss-cpu")


@dataclass
class AnnIndex:
    """A FAISS HNSW graph or IVF index over ``num_docs`` rows of dimension ``dimension``."""

    graph: Any
    num_docs: int
    dimension: int
    settings: dict[str, int]

    @classmethod
    def build(
        cls,
        matrix: np.ndarray,
        kind: str = "hnsw",
        threads: int | None = None,
        seed: int = 0,
        **settings: int,
    ) -> AnnIndex:
        """The index over ``matrix`` (D, h) float32/float16. ``settings``: ``m``, ``ef_construction``,
        ``ef_search`` (hnsw) or ``nlist``, ``nprobe`` (ivf); ``threads``: FAISS OpenMP threads while
        building (``None``: FAISS's default); ``seed``: the ivf training sample."""
        if kind not in KINDS:
            raise InvalidInputError(f"Index.build_ann: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        names = ("m", "ef_construction", "ef_search") if kind == "hnsw" else ("nlist", "nprobe")
        unknown = sorted(set(settings) - set(names))
        if unknown:
            raise InvalidInputError(f"Index.build_ann: kind {kind!r} takes {', '.join(names)}, not {unknown}")
        chosen = {name: settings.get(name, ANN_DEFAULTS[name]) for name in names}
        for name, value in chosen.items():
            low = 2 if name == "m" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidInputError(f"Index.build_ann: {name} must be an integer >= {low}, got {value!r}")
        faiss = import_faiss()
        if threads is not None:
            faiss.omp_set_num_threads(int(threads))
        num, dimension = int(matrix.shape[0]), int(matrix.shape[1])
        if kind == "hnsw":
            graph = faiss.IndexHNSWFlat(dimension, chosen["m"], faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efConstruction = chosen["ef_construction"]
        else:
            chosen["nlist"] = min(chosen["nlist"], max(num, 1))
            quantizer = faiss.IndexFlatIP(dimension)
            graph = faiss.IndexIVFFlat(quantizer, dimension, chosen["nlist"], faiss.METRIC_INNER_PRODUCT)
            size = min(num, chosen["nlist"] * _TRAIN_PER_LIST)
            sample = np.sort(np.random.default_rng(seed).choice(num, size, replace=False))
            graph.train(np.ascontiguousarray(matrix[sample], dtype=np.float32))
        for start in range(0, num, _ADD_BLOCK):
            graph.add(np.ascontiguousarray(matrix[start : start + _ADD_BLOCK], dtype=np.float32))
        index = cls(graph, num, dimension, {"kind": kind, **chosen})
        index.set_search(**{k: chosen[k] for k in ("ef_search", "nprobe") if k in chosen})
        return index

    def set_search(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """The search-time knob: ``ef_search`` (hnsw) or ``nprobe`` (ivf)."""
        kind = self.settings["kind"]
        name, value = ("ef_search", ef_search) if kind == "hnsw" else ("nprobe", nprobe)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInputError(f"{name} must be an integer >= 1 for a {kind} index, got {value!r}")
        if name == "ef_search":
            self.graph.hnsw.efSearch = value
        else:
            self.graph.nprobe = value
        self.settings[name] = value

    def search(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Approximate top-``k`` per query -> ``(rows int64, scores float32)``, best first, ties by row."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, self.num_docs)
        scores, rows = self.graph.search(queries, k)
        out = []
        for r, s in zip(rows, scores, strict=True):
            found = r >= 0  # fewer than k reachable: FAISS pads with -1
            r, s = r[found].astype(np.int64), s[found]
            order = np.lexsort((r, -s))
            out.append((r[order], s[order]))
        return out


def recall_at_k(approximate: list[np.ndarray], exact: list[np.ndarray], k: int) -> float:
    """Mean over queries of ``|approx top-k & exact top-k| / k``."""
    if not exact:
        return float("nan")
    return float(
        np.mean(
            [
                len(set(a[:k].tolist()) & set(e[:k].tolist())) / k
                for a, e in zip(approximate, exact, strict=True)
            ]
        )
    )
