"""Ranking metrics with graded relevance through ``ir-measures`` (pytrec_eval, i.e. trec_eval's C code),
and paired significance tests through ``scipy.stats``.

Why ir-measures rather than ranx: it evaluates with pytrec_eval, the implementation BEIR and the TREC
literature report (so nDCG@10 here is comparable with BEIR's published numbers), it is installed
without a JIT compiler (ranx pulls numba and compiles on first use), and its measure names
(``nDCG@10``, ``P@5``, ``Success@5``, ``RR``, ``R@100``) are the ones papers use.

Metric names accepted here (case-insensitive): ``ndcg@k``, ``p@k``, ``hits@k`` (= Success@k: at
least one relevant document in the top k; Liu'18's Hits@K), ``mrr`` (reciprocal rank of the first
relevant document), ``recall@k``, ``map``. nDCG uses the graded qrels as linear gains (trec_eval,
as BEIR); the binary metrics count a document relevant when its grade is >= ``relevance_level``.

Runs are ranked lists of document ids per query: the ranking is evaluated exactly as given (the list
is turned into strictly decreasing scores, because trec_eval would otherwise re-break score ties by
document id). The mean is over every query of the qrels: a query with an empty (or missing) run
scores 0 on every metric; queries of the run without qrels are ignored (they cannot be scored).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import datasets
import evaluate
import numpy as np

from hf_querygen.errors import InvalidInputError  # absolute: evaluate.load copies this file

Run = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]
DEFAULT_METRICS = ("ndcg@5", "ndcg@10", "p@3", "p@5", "p@10", "hits@5", "hits@10")  # Liu'18 Table 2

_METRIC = re.compile(r"^(ndcg|p|hits|recall|mrr|map)(?:@(\d+))?$")
_CUTOFF_REQUIRED = {"ndcg": False, "p": True, "hits": True, "recall": True, "mrr": False, "map": False}


def to_measure(name: str, relevance_level: int = 1):
    """The ir-measures measure for one of our metric names (module docstring)."""
    import ir_measures

    match = _METRIC.match(name.strip().lower())
    if not match:
        raise InvalidInputError(
            f"unknown retrieval metric {name!r}; use ndcg@k, p@k, hits@k, recall@k, mrr or map"
        )
    kind, cutoff = match.group(1), match.group(2)
    if _CUTOFF_REQUIRED[kind] and cutoff is None:
        raise InvalidInputError(f"metric {name!r} needs a cutoff, e.g. {kind}@10")
    if kind in ("mrr", "map") and cutoff is not None:
        raise InvalidInputError(f"metric {name!r}: {kind} takes no cutoff here")
    measure = {
        "ndcg": ir_measures.nDCG,
        "p": ir_measures.P(rel=relevance_level),
        "hits": ir_measures.Success(rel=relevance_level),
        "recall": ir_measures.R(rel=relevance_level),
        "mrr": ir_measures.RR(rel=relevance_level),
        "map": ir_measures.AP(rel=relevance_level),
    }[kind]
    return measure @ int(cutoff) if cutoff is not None else measure


def per_query_scores(
    run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS, relevance_level: int = 1
) -> dict[str, dict[str, float]]:
    """``{metric: {query_id: value}}`` for every query of ``qrels`` (module docstring for the rules)."""
    import ir_measures

    if not qrels:
        raise InvalidInputError("per_query_scores: qrels are empty")
    measures = {name: to_measure(name, relevance_level) for name in metrics}
    scored_run = {}
    for qid, ranking in run.items():
        if isinstance(ranking, str):
            raise InvalidInputError(
                f"per_query_scores: run[{qid!r}] must be a list of document ids, not a string"
            )
        if len(set(ranking)) != len(ranking):
            raise InvalidInputError(f"per_query_scores: run[{qid!r}] lists a document twice")
        if ranking and str(qid) in qrels:
            scored_run[str(qid)] = {str(doc): float(len(ranking) - rank) for rank, doc in enumerate(ranking)}
    qrels_str = {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in qrels.items()}
    out = {name: dict.fromkeys(qrels_str, 0.0) for name in metrics}
    by_measure = {measure: name for name, measure in measures.items()}
    if scored_run:
        for result in ir_measures.iter_calc(list(measures.values()), qrels_str, scored_run):
            out[by_measure[result.measure]][result.query_id] = float(result.value)
    return out


def evaluate_run(
    run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS, relevance_level: int = 1
) -> dict[str, float]:
    """Mean over the qrels' queries of each metric."""
    per_query = per_query_scores(run, qrels, metrics, relevance_level)
    return {name: float(np.mean(list(values.values()))) for name, values in per_query.items()}


def paired_test(
    system: Sequence[float] | Mapping[str, float],
    baseline: Sequence[float] | Mapping[str, float],
    method: str = "permutation",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, float]:
    """Two-sided paired significance test of per-query scores (same queries, same order or same keys).

    ``method="permutation"``: paired randomization test (Fisher; Smucker et al. CIKM'07) of the mean
    difference, ``scipy.stats.permutation_test(permutation_type="samples")``, exact when 2^n is at
    most ``n_resamples``. ``method="ttest"``: ``scipy.stats.ttest_rel``.
    Returns ``{"mean_difference", "p_value"}`` (system minus baseline); p = 1 when all differences are 0.
    """
    from scipy import stats

    if isinstance(system, Mapping) != isinstance(baseline, Mapping):
        raise InvalidInputError("paired_test: give both score sets as mappings or both as sequences")
    if isinstance(system, Mapping):
        if set(system) != set(baseline):
            raise InvalidInputError("paired_test: the two systems were scored on different queries")
        keys = sorted(system)
        x = np.array([system[k] for k in keys], dtype=float)
        y = np.array([baseline[k] for k in keys], dtype=float)
    else:
        x, y = np.asarray(system, dtype=float), np.asarray(baseline, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise InvalidInputError(
            f"paired_test: need two equal-length lists of >= 2 scores, got {x.shape}, {y.shape}"
        )
    diff = float(np.mean(x - y))
    if np.all(x == y):
        return {"mean_difference": 0.0, "p_value": 1.0}
    if method == "permutation":
        result = stats.permutation_test(
            (x, y),
            lambda a, b, axis: np.mean(a - b, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        )
    elif method == "ttest":
        result = stats.ttest_rel(x, y)
    else:
        raise InvalidInputError(f"paired_test: method must be 'permutation' or 'ttest', got {method!r}")
    return {"mean_difference": diff, "p_value": float(result.pvalue)}


_DESCRIPTION = (
    "nDCG@k, P@k, Hits@k, Recall@k, MRR, MAP of ranked document lists with graded qrels (ir-measures)."
)
_KWARGS_DESCRIPTION = """
Args:
    predictions: per query, the ranked list of retrieved document ids.
    references: per query, {"doc_ids": [...], "relevance": [...]} (graded judgments).
    metrics: names such as "ndcg@10", "p@5", "hits@10", "mrr", "recall@100" (default Liu'18 Table 2's).
    relevance_level: minimum grade counted relevant by the binary metrics (default 1).
Returns:
    {metric: mean over queries}.
"""


class RetrievalMetrics(evaluate.Metric):
    """``evaluate`` wrapper of :func:`evaluate_run`; loads offline (``evaluate.load(<this file>)``)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.List(datasets.Value("string")),
                    "references": {
                        "doc_ids": datasets.List(datasets.Value("string")),
                        "relevance": datasets.List(datasets.Value("int32")),
                    },
                }
            ),
        )

    def _compute(
        self, predictions, references, metrics=DEFAULT_METRICS, relevance_level=1
    ) -> dict[str, float]:
        if not references:
            raise InvalidInputError("retrieval metrics: no queries to score (references=[])")
        run = {str(i): list(ranking) for i, ranking in enumerate(predictions)}
        qrels = {}
        for i, ref in enumerate(references):
            doc_ids, grades = list(ref["doc_ids"]), list(ref["relevance"])
            if len(doc_ids) != len(grades):
                raise InvalidInputError(
                    f"retrieval metrics: references[{i}] has {len(doc_ids)} doc_ids but {len(grades)} "
                    "relevance grades (one grade per judged document)"
                )
            if not doc_ids:
                # every metric would be 0 for this query whatever the run: a missing judgment, not a score
                raise InvalidInputError(
                    f"retrieval metrics: references[{i}] judges no documents (doc_ids=[])"
                )
            if len(set(doc_ids)) != len(doc_ids):
                raise InvalidInputError(f"retrieval metrics: references[{i}] judges a document twice")
            qrels[str(i)] = dict(zip(doc_ids, grades, strict=True))
        return evaluate_run(run, qrels, metrics, relevance_level)
