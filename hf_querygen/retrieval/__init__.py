"""Retrieval: a persistent index on tantivy with BM25, Dirichlet query likelihood and exact Indri SDM.

>>> from hf_querygen.retrieval import Index
>>> index = Index.from_texts(["a first document", "a second one"], ids=["d1", "d2"], show_progress=False)
>>> [hit.id for hit in index.search("second document", k=2, ranker="sdm")]
['d2', 'd1']
"""

from .analysis import analyze
from .index import RANKERS, Hit, Index
from .stats import CollectionStats

__all__ = ["RANKERS", "CollectionStats", "Hit", "Index", "analyze"]
