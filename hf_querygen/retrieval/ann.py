"""Approximate nearest neighbours over a dense field: a FAISS HNSW graph (``pip install 'hf-querygen[ann]'``).

Why FAISS (``faiss-cpu``) rather than hnswlib: it is maintained (hnswlib's last release is 0.8.0, 2023),
ships manylinux wheels for every supported Python (hnswlib often compiles from source), exposes its
OpenMP thread count (:func:`faiss.omp_set_num_threads`, so a 1-thread latency is measurable) and offers
HNSW, IVF and exact flat indexes behind one interface, so recall against exact search is measured with
the same library.

The graph is ``IndexHNSWFlat`` with the inner-product metric (cosine for normalised embeddings):
``m`` neighbours per node, ``ef_construction`` while building, ``ef_search`` candidates kept while
searching (the recall / latency knob). It is built in memory from the field's array (float32) and kept on
the :class:`~hf_querygen.retrieval.Index` (``Index.build_ann``); it is not written into the index folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_querygen.errors import InvalidInputError
from hf_querygen.utils import require_extra

ANN_DEFAULTS = {"m": 32, "ef_construction": 80, "ef_search": 128}
#: rows added to the graph per call (keeps the float32 copy of a float16 field small)
_ADD_BLOCK = 65_536


def import_faiss() -> Any:
    return require_extra("faiss", "ann", "Approximate dense search", "faiss-cpu")


@dataclass
class AnnIndex:
    """A FAISS HNSW graph over ``num_docs`` rows of dimension ``dimension``."""

    graph: Any
    num_docs: int
    dimension: int
    settings: dict[str, int]

    @classmethod
    def build(
        cls,
        matrix: np.ndarray,
        m: int = ANN_DEFAULTS["m"],
        ef_construction: int = ANN_DEFAULTS["ef_construction"],
        ef_search: int = ANN_DEFAULTS["ef_search"],
        threads: int | None = None,
    ) -> AnnIndex:
        """The graph over ``matrix`` (D, h) float32/float16; ``threads``: FAISS OpenMP threads while
        building (``None``: FAISS's default)."""
        for name, value, low in (
            ("m", m, 2),
            ("ef_construction", ef_construction, 1),
            ("ef_search", ef_search, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidInputError(f"Index.build_ann: {name} must be an integer >= {low}, got {value!r}")
        faiss = import_faiss()
        if threads is not None:
            faiss.omp_set_num_threads(int(threads))
        graph = faiss.IndexHNSWFlat(int(matrix.shape[1]), m, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = ef_construction
        for start in range(0, matrix.shape[0], _ADD_BLOCK):
            graph.add(np.ascontiguousarray(matrix[start : start + _ADD_BLOCK], dtype=np.float32))
        graph.hnsw.efSearch = ef_search
        settings = {"m": m, "ef_construction": ef_construction, "ef_search": ef_search}
        return cls(graph, int(matrix.shape[0]), int(matrix.shape[1]), settings)

    def set_ef_search(self, ef_search: int) -> None:
        if not isinstance(ef_search, int) or isinstance(ef_search, bool) or ef_search < 1:
            raise InvalidInputError(f"ef_search must be an integer >= 1, got {ef_search!r}")
        self.graph.hnsw.efSearch = ef_search
        self.settings["ef_search"] = ef_search

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
