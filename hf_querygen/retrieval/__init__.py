"""Retrieval: a persistent index on tantivy with BM25, Dirichlet query likelihood and exact Indri SDM.

>>> from hf_querygen.retrieval import Index
>>> texts = ["a first document", "the second document here", "document on the second day"]
>>> index = Index.from_texts(texts, ids=["d1", "d2", "d3"], show_progress=False)
>>> [hit.id for hit in index.search("second document", k=3, ranker="sdm")]
['d2', 'd3', 'd1']
"""

from .analysis import analyze
from .index import RANKERS, Hit, Index
from .sharded import ShardedIndex, build_sharded_index
from .stats import CollectionStats

__all__ = ["RANKERS", "CollectionStats", "Hit", "Index", "ShardedIndex", "analyze", "build_sharded_index"]
