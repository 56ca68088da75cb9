"""Throughput of the synthetic-data generator (Ding & Balog Sec. 3) and the projection to 3.17M questions.

Measures, on the real question corpus Q (wikianswers stand-ins):

* set-up: building Q/C_q, training the two-pass phrase detector, the collection statistics;
* KQGM: m = 20 candidate keyword queries per question (the paraphrase model with phrases and
  combination selection, the paper's best configuration) through the pipeline's batched
  ``Dataset.map(num_proc=...)``: questions/s and candidates/s;
* KQF + TDF: only with a real retrieval index (``hf_querygen.retrieval.Index``, SDM). The ranker is
  pluggable: ``--index-factory module:function`` names a callable ``(texts, ids) -> index`` with
  ``search_batch``; by default the real ``Index.from_texts`` is used when the module exists, and the
  KQF/TDF section is left out (``null``) when it does not. No stand-in index is ever timed;
* peak RSS of this process and its workers.

The projection multiplies the measured per-question cost by the paper's 3,168,678 questions
(linear: every question is handled independently given Q's statistics, phrase training and
statistics are a single pass over Q).

    python benchmarks/bench_synthetic.py --questions 5000 --num-proc 2
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import time
from pathlib import Path

PAPER_QUESTIONS = 3_168_678


def _peak_rss_mb() -> dict[str, float]:
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self_mb": self_kb / 1024, "largest_child_mb": children_kb / 1024}


class _CountingIndex:
    """Counts the queries sent to ``search_batch`` (SDM searches)."""

    def __init__(self, index):
        self.index, self.sent = index, 0

    def search_batch(self, queries, **kwargs):
        self.sent += len(queries)
        return self.index.search_batch(queries, **kwargs)


def _index_factory(spec: str | None):
    if spec:
        module, name = spec.split(":")
        return getattr(importlib.import_module(module), name)
    try:
        from hf_querygen.retrieval import Index
    except ImportError:
        return None
    return lambda texts, ids: Index.from_texts(texts, ids=ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--questions", type=int, default=5000, help="questions timed through KQGM (+ KQF/TDF)"
    )
    parser.add_argument("--num-candidates", type=int, default=20)
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--index-factory", default=None, help="module:function (texts, ids) -> index")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/synthetic_cpu_results.json"))
    args = parser.parse_args()

    import datasets

    from hf_querygen.corpora._base import quiet_progress
    from hf_querygen.synthetic.corpus import build_question_corpus, seed_length_prior
    from hf_querygen.synthetic.filters import keyword_query_filter
    from hf_querygen.synthetic.kqgm import KQGMConfig
    from hf_querygen.synthetic.pipeline import _candidates_batch, build_generator

    timings: dict[str, float] = {}
    t = time.perf_counter()
    corpus = build_question_corpus(args.data_dir)
    timings["build_question_corpus_s"] = time.perf_counter() - t
    questions = corpus.questions
    # the weights Table 1 selected for paraphrase + phrases + combination (results/ding2018/table1.json)
    kqgm = KQGMConfig(strategy="combination", paraphrase=True, phrases=True, alpha=0.1, beta=0.9)
    t = time.perf_counter()
    generator = build_generator(questions, kqgm, seed_length_prior(args.data_dir))
    timings["phrases_and_statistics_s"] = time.perf_counter() - t
    sample = questions.shuffle(seed=0).select(range(min(args.questions, len(questions))))

    datasets.disable_caching()
    kqgm_runs = {}
    for m in sorted({1, args.num_candidates}):  # m = 1: KQGM-only data; m = 20: the KQF candidate pool
        t = time.perf_counter()
        with quiet_progress():
            with_candidates = sample.map(
                _candidates_batch,
                batched=True,
                batch_size=500,
                num_proc=args.num_proc if args.num_proc > 1 else None,
                fn_kwargs={"generator": generator, "seed": 0, "m": m},
                new_fingerprint=f"bench-{len(sample)}-{m}",
            )
        seconds = time.perf_counter() - t
        kqgm_runs[m] = {
            "questions": len(sample),
            "seconds": seconds,
            "questions_per_s": len(sample) / seconds,
            "candidates_per_s": len(sample) * m / seconds,
        }
    n = len(sample)
    per_question_kqgm = kqgm_runs[args.num_candidates]["seconds"] / n
    result = {
        "benchmark": "synthetic keyword-question generation (Ding & Balog ICTIR'18)",
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
            "note": "2-core machine shared with other jobs: timings are upper bounds",
        },
        "question_corpus": {"questions": len(questions), "clusters": corpus.stats["clusters"]},
        "kqgm_config": kqgm.to_dict(),
        "num_candidates": args.num_candidates,
        "num_proc": args.num_proc,
        "setup": timings,
        "kqgm_by_num_candidates": kqgm_runs,
        "kqgm_only_pairs_per_s": kqgm_runs[1]["questions_per_s"],
        "kqgm_only_hours_3_17M": PAPER_QUESTIONS / kqgm_runs[1]["questions_per_s"] / 3600,
    }
    factory = _index_factory(args.index_factory)
    if factory is None:
        result["kqf_tdf"] = None
        result["kqf_tdf_note"] = "hf_querygen.retrieval is not available yet: KQF/TDF not timed"
        per_question_total = per_question_kqgm
    else:
        t = time.perf_counter()
        index = factory(questions["text"], questions["id"])
        index_s = time.perf_counter() - t
        counting = _CountingIndex(index)
        kqf_runs = {}
        # before / after: one search per candidate sent vs repeats skipped and shared strings searched once
        for label, dedup in (("without_deduplication", False), ("with_deduplication", True)):
            counting.sent = 0
            t = time.perf_counter()
            kqf = keyword_query_filter(
                with_candidates["id"],
                with_candidates["candidates"],
                counting,
                top_n=100,
                threads=args.threads,
                deduplicate=dedup,
            )
            kqf_s = time.perf_counter() - t
            kqf_runs[label] = {
                "seconds": kqf_s,
                "questions_per_s": n / kqf_s,
                "sdm_searches": counting.sent,
                "sdm_searches_per_question": counting.sent / n,
                "ms_per_search": 1000 * kqf_s / max(counting.sent, 1),
            }
        cluster_of = dict(zip(questions["id"], questions["cluster_id"], strict=True))
        t = time.perf_counter()
        clusters = with_candidates["cluster_id"]
        tdf = [
            sum(cluster_of.get(h) == c for h in r.retrieved) / len(r.retrieved) if r.retrieved else 0.0
            for r, c in zip(kqf, clusters, strict=True)
        ]  # Eq. (8), as the pipeline computes it from KQF's retrieved list
        tdf_s = time.perf_counter() - t
        result["kqf_tdf"] = {
            "index_build_s": index_s,
            "ranker": "sdm (exact Indri SDM, hf_querygen.retrieval)",
            "threads": args.threads,
            **kqf_runs,
            "tdf_seconds": tdf_s,
            "tdf_mean_score": sum(tdf) / n,
            "mean_candidates_tried": sum(r.candidates_tried for r in kqf) / n,
            "share_ranked_first": sum(r.rank == 1 for r in kqf) / n,
            "sdm_share_of_time": kqf_runs["with_deduplication"]["seconds"]
            / (kqf_runs["with_deduplication"]["seconds"] + tdf_s + per_question_kqgm * n),
        }
        per_question_total = per_question_kqgm + (kqf_runs["with_deduplication"]["seconds"] + tdf_s) / n
    # pairs/s of the full pipeline: m candidates each, plus KQF/TDF when an index was timed
    result["pairs_per_s"] = 1.0 / per_question_total
    result["projection_3_17M"] = {
        "questions": PAPER_QUESTIONS,
        "hours_on_this_machine": PAPER_QUESTIONS * per_question_total / 3600,
        "includes_kqf_tdf": factory is not None,
        "setup_hours_linear": (timings["phrases_and_statistics_s"] * PAPER_QUESTIONS / len(questions)) / 3600,
    }
    retrieval = Path(__file__).with_name("retrieval_results.json")
    if factory is not None and retrieval.exists():
        # SDM re-scores the BM25 top 1000, whose cost grows with the collection: use the per-search CPU
        # time measured on 1M documents (bench_retrieval.py) for the 3.17M projection, spread on threads
        sdm_ms_1m = json.loads(retrieval.read_text())["ours"]["sdm_latency_batch1"]["cpu_p50_ms"]
        searches = result["kqf_tdf"]["with_deduplication"]["sdm_searches_per_question"]
        per_q = per_question_kqgm + searches * sdm_ms_1m / 1000 / max(args.threads, 1)
        result["projection_3_17M"]["sdm_cpu_ms_per_search_at_1M_docs"] = sdm_ms_1m
        result["projection_3_17M"]["hours_with_1M_doc_search_cost"] = PAPER_QUESTIONS * per_q / 3600
    result["peak_rss"] = _peak_rss_mb()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
