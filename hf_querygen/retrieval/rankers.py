"""Exact scoring functions over :class:`~hf_querygen.retrieval.stats.CollectionStats`.

Every function takes the query as a list of term ids (``-1`` for a term that never occurs in the
collection) and returns float64 scores for the given documents. Formulas:

* BM25 (Robertson & Zaragoza 2009, the Lucene/tantivy variant): per query term occurrence
  ``idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b |D| / avgdl))`` with
  ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``.
* Query likelihood with Dirichlet smoothing (Zhai & Lafferty 2001, Eq. 6 of Metzler & Croft 2005):
  ``sum_t log((tf(t, D) + mu P(t|C)) / (|D| + mu))``, ``P(t|C) = cf(t) / |C|``.
* Sequential dependence model (Metzler & Croft 2005, Sec. 4.1, Eq. 2 and Table 1; Indri's
  ``#weight(0.85 #combine(t_i) 0.10 #combine(#1(t_i t_i+1)) 0.05 #combine(#uw8(t_i t_i+1)))``):
  each ``#combine`` is the mean over its children of the Dirichlet-smoothed log-probability
  ``log((tf(x, D) + mu P(x|C)) / (|D| + mu))``, ``P(x|C) = cf(x) / |C|`` or ``1 / (2 |C|)`` for an
  expression that never occurs (Indri's background for unseen terms and windows). ``#weight``
  normalises its weights by their sum (as Indri does), which only matters when they do not sum to 1
  or when a single-term query leaves only the unigram part.

A collection without any term (no documents, or only empty ones) scores every document 0 under each
ranker (no ``P(x|C)`` or ``avgdl`` exists); a term absent from a document adds 0 to its BM25.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .stats import CollectionStats

SDM_DEFAULT_WEIGHTS = (0.85, 0.10, 0.05)
SDM_DEFAULT_MU = 2500.0
SDM_DEFAULT_WINDOW = 8
BM25_DEFAULT_K1 = 1.2  # tantivy's (and Lucene's) fixed values
BM25_DEFAULT_B = 0.75


def background_probability(stats: CollectionStats, cf: int) -> float:
    """``P(x|C) = cf / |C|``, or Indri's ``1 / (2 |C|)`` when the expression never occurs."""
    return cf / stats.num_tokens if cf > 0 else 1.0 / (2.0 * stats.num_tokens)


def dirichlet_log_prob(tf: np.ndarray, doc_lengths: np.ndarray, p_collection: float, mu: float) -> np.ndarray:
    """``log((tf + mu P(x|C)) / (|D| + mu))`` elementwise; tf, doc_lengths (K,) -> (K,) float64."""
    return np.log((tf + mu * p_collection) / (doc_lengths + mu))


def matching_documents(stats: CollectionStats, term_ids: Sequence[int]) -> np.ndarray:
    """Documents containing at least one of the terms, ascending (the documents Indri scores)."""
    lists = [stats.postings(t)[0] for t in set(term_ids) if t >= 0]
    if not lists:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(lists)).astype(np.int64)


def bm25_scores(
    stats: CollectionStats, term_ids: Sequence[int], docs: np.ndarray, k1: float, b: float
) -> np.ndarray:
    """BM25 of ``docs`` (K,) for the query; a repeated query term counts once per occurrence."""
    docs = np.asarray(docs, dtype=np.int64)
    scores = np.zeros(len(docs))
    if not stats.num_tokens:  # no document has a term (an empty collection, or only empty documents)
        return scores
    lengths = stats.doc_lengths[docs]
    avgdl = stats.num_tokens / stats.num_docs
    norm = k1 * (1.0 - b + b * lengths / avgdl)
    for t in term_ids:
        if t < 0:
            continue
        df = stats.df(t)
        idf = np.log1p((stats.num_docs - df + 0.5) / (df + 0.5))
        tf = stats.term_tf(t, docs).astype(np.float64)
        # tf = 0 contributes 0 (the formula's limit); computed only where tf > 0, so an empty document
        # with b = 1 (norm 0) is not 0/0
        saturation = np.divide(tf * (k1 + 1.0), tf + norm, out=np.zeros(len(docs)), where=tf > 0)
        scores += idf * saturation
    return scores


def ql_scores(stats: CollectionStats, term_ids: Sequence[int], docs: np.ndarray, mu: float) -> np.ndarray:
    """Dirichlet query likelihood of ``docs`` (K,): sum over query terms (repeats count)."""
    docs = np.asarray(docs, dtype=np.int64)
    lengths = stats.doc_lengths[docs]
    scores = np.zeros(len(docs))
    if not stats.num_tokens:  # no P(x|C) exists: every document is empty and scores alike
        return scores
    for t in term_ids:
        scores += dirichlet_log_prob(
            stats.term_tf(t, docs), lengths, background_probability(stats, stats.cf(t)), mu
        )
    return scores


def sdm_scores(
    stats: CollectionStats,
    term_ids: Sequence[int],
    docs: np.ndarray,
    mu: float = SDM_DEFAULT_MU,
    weights: Sequence[float] = SDM_DEFAULT_WEIGHTS,
    window: int = SDM_DEFAULT_WINDOW,
) -> np.ndarray:
    """Indri's SDM score of ``docs`` (K,) -> (K,) float64 (module docstring; Metzler & Croft 2005 Eq. 2).

    ``weights = (lambda_T, lambda_O, lambda_U)``; ``window`` is N of ``#uwN``. The ordered part is
    ``#1`` (adjacent, in order). A single-term query has only the unigram part.
    """
    docs = np.asarray(docs, dtype=np.int64)
    lengths = stats.doc_lengths[docs]
    n = len(term_ids)
    unigram = np.zeros(len(docs))
    if not stats.num_tokens or not n:  # no P(x|C) exists (every document empty), or no query term
        return unigram
    for t in term_ids:
        p = background_probability(stats, stats.cf(t))
        unigram += dirichlet_log_prob(stats.term_tf(t, docs), lengths, p, mu)
    unigram /= n
    if n < 2:
        return unigram
    ordered = np.zeros(len(docs))
    unordered = np.zeros(len(docs))
    for a, b in zip(term_ids[:-1], term_ids[1:], strict=True):
        cf, tf = stats.window_tf(a, b, 1, True, docs)
        ordered += dirichlet_log_prob(tf, lengths, background_probability(stats, cf), mu)
        cf, tf = stats.window_tf(a, b, window, False, docs)
        unordered += dirichlet_log_prob(tf, lengths, background_probability(stats, cf), mu)
    w_t, w_o, w_u = (float(w) for w in weights)
    total = w_t + w_o + w_u
    return (w_t * unigram + w_o * ordered / (n - 1) + w_u * unordered / (n - 1)) / total
