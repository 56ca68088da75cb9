"""Keyword query filter KQF (Sec. 3.2.1, Eq. 7) and training data filter TDF (Sec. 3.2.2, Eq. 8).

Both retrieve with SDM over an index of Q. They are written against :class:`SearchIndex`, the public
API of ``hf_querygen.retrieval.Index`` (``search_batch(queries, k=..., ranker=..., threads=...)``
returning one ranked list of hits with ``.id`` per query), so any index with that method plugs in.

KQF: for each question q, m candidate keyword queries k_1..k_m; keep
``argmax_i 1 / rank(q, R(k_i))`` (Eq. 7), the first candidate on ties; a question whose q is not in
any top-N list keeps its first candidate (rank 0 = "not retrieved"). Retrieval is batched by
*rounds*: round j sends candidate j of every question that is still open, and a question leaves
once a candidate ranks it first (its reciprocal rank cannot improve), the early exit. With ``keep`` k > 1
a question stays open until k distinct candidates have ranked it first (or its candidates run out): the
kept candidate is the same, and the further ones (``KQFResult.also``) give the question k keyword
queries that all pass the filter (more training pairs per question).

TDF: ``P(k, q) = |C_q ∩ RR(k)| / |RR(k)|`` (Eq. 8) over the top N = 100 retrieved questions RR(k);
C_q is q's cluster, q included. KQF already retrieved the top N for the kept candidate, so TDF
reuses those hits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..errors import InvalidInputError

__all__ = ["Hit", "KQFResult", "SearchIndex", "keyword_query_filter", "tdf_score", "top_l"]


@runtime_checkable
class Hit(Protocol):
    id: str
    score: float


@runtime_checkable
class SearchIndex(Protocol):
    """What KQF/TDF need of ``hf_querygen.retrieval.Index``."""

    def search_batch(
        self, queries: Sequence[str], k: int = 10, ranker: str = "bm25", threads: int | None = None, **params
    ) -> list[list[Hit]]: ...


@dataclass
class KQFResult:
    """Per question: index of the kept candidate, rank of q for it (1-based; 0 = not in the top N),
    the ids retrieved for it (top N, for TDF) and how many candidates were retrieved (early exit)."""

    chosen: int
    rank: int
    retrieved: list[str]
    candidates_tried: int
    #: with ``keep`` > 1: further candidates that rank q first, in candidate order, each with its
    #: retrieved ids (the kept one excluded, at most ``keep - 1``)
    also: list[tuple[int, list[str]]] = field(default_factory=list)


def _rank_of(question_id: str, hits: Sequence[Hit]) -> int:
    for position, hit in enumerate(hits, start=1):
        if hit.id == question_id:
            return position
    return 0


def keyword_query_filter(
    question_ids: Sequence[str],
    candidates: Sequence[Sequence[str]],
    index: SearchIndex,
    top_n: int = 100,
    ranker: str = "sdm",
    threads: int | None = None,
    progress: Callable[[int], None] | None = None,
    deduplicate: bool = True,
    keep: int = 1,
) -> list[KQFResult]:
    """KQF, Eq. (7), with batched rounds and early exit (module docstring).

    ``candidates[i]`` are the m candidate keyword queries (strings) of question ``question_ids[i]``.
    ``progress(n)`` is called with the number of candidates each round handled.

    ``deduplicate`` (same result, less retrieval): a candidate string that question i already tried
    is skipped (its reciprocal rank cannot beat the earlier one: ties keep the first), and a string
    that several questions send in one round is retrieved once. KQGM draws few terms from short
    questions, so repeats are common (``benchmarks/bench_synthetic.py`` measures the saving).

    ``keep``: a question leaves once this many distinct candidates ranked it first (module docstring);
    the kept candidate does not depend on it.
    """
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
        raise InvalidInputError(f"keyword_query_filter: keep must be an integer >= 1, got {keep!r}")
    if keep > 1 and not deduplicate:
        raise InvalidInputError("keyword_query_filter: keep > 1 needs deduplicate (distinct candidates)")
    if len(question_ids) != len(candidates):
        raise InvalidInputError(
            f"keyword_query_filter: {len(question_ids)} questions but {len(candidates)} candidate lists"
        )
    best = [KQFResult(chosen=0, rank=0, retrieved=[], candidates_tried=0) for _ in question_ids]
    best_rr = [-1.0] * len(question_ids)
    rounds = max((len(c) for c in candidates), default=0)
    open_rows = [i for i, c in enumerate(candidates) if c]
    tried: list[set[str]] = [set() for _ in question_ids] if deduplicate else []
    for j in range(rounds):
        rows = [i for i in open_rows if j < len(candidates[i])]
        if not rows:
            break
        if deduplicate:
            repeats = {i for i in rows if candidates[i][j] in tried[i]}
            for i in rows:
                tried[i].add(candidates[i][j])
            queries = list(dict.fromkeys(candidates[i][j] for i in rows if i not in repeats))
        else:
            repeats, queries = set(), [candidates[i][j] for i in rows]
        results = index.search_batch(queries, k=top_n, ranker=ranker, threads=threads) if queries else []
        if len(results) != len(queries):
            raise InvalidInputError(
                f"keyword_query_filter: index returned {len(results)} result lists for {len(queries)} queries"
            )
        hits_of = dict(zip(queries, results, strict=True))
        still_open = []
        for i in rows:
            if i in repeats:  # same string as an earlier candidate of i: cannot improve, stays open
                best[i].candidates_tried = j + 1
                still_open.append(i)
                continue
            hits = hits_of[candidates[i][j]]
            rank = _rank_of(question_ids[i], hits)
            rr = 1.0 / rank if rank else 0.0
            best[i].candidates_tried = j + 1
            if rr > best_rr[i]:  # strict: the first candidate wins ties
                best_rr[i] = rr
                best[i].chosen, best[i].rank, best[i].retrieved = j, rank, [h.id for h in hits]
            elif rank == 1:  # a further distinct candidate that ranks q first (only with keep > 1)
                best[i].also.append((j, [h.id for h in hits]))
            if rank != 1 or 1 + len(best[i].also) < keep:
                still_open.append(i)
        open_rows = still_open  # a row without candidate j has no later candidate either
        if progress is not None:
            progress(len(rows))
    return best


def tdf_score(retrieved: Sequence[str], cluster: set[str] | frozenset[str]) -> float:
    """Eq. (8): |C_q ∩ RR(k)| / |RR(k)| (0 when nothing was retrieved)."""
    if not retrieved:
        return 0.0
    return sum(1 for r in retrieved if r in cluster) / len(retrieved)


def top_l(dataset, limit: int, score_column: str = "tdf_score"):
    """T_L: the ``limit`` pairs with the highest TDF score (stable: ties keep corpus order)."""
    if limit < 0:
        raise InvalidInputError(f"top_l: limit must be >= 0, got {limit}")
    ranked = dataset.sort(score_column, reverse=True)  # pyarrow sorts stably
    return ranked.select(range(min(limit, len(ranked))))
