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
    from hf_querygen.synthetic.cli import _length_prior
    from hf_querygen.synthetic.corpus import build_question_corpus
    from hf_querygen.synthetic.filters import keyword_query_filter
    from hf_querygen.synthetic.kqgm import KQGMConfig
    from hf_querygen.synthetic.pipeline import _candidates_batch, build_generator

    timings: dict[str, float] = {}
    t = time.perf_counter()
    corpus = build_question_corpus(args.data_dir)
    timings["build_question_corpus_s"] = time.perf_counter() - t
    questions = corpus.questions
    kqgm = KQGMConfig(strategy="combination", paraphrase=True, phrases=True, alpha=0.5, beta=0.3)
    t = time.perf_counter()
    generator = build_generator(questions, kqgm, _length_prior(args.data_dir))
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
        t = time.perf_counter()
        kqf = keyword_query_filter(
            with_candidates["id"], with_candidates["candidates"], index, top_n=100, threads=args.threads
        )
        kqf_s = time.perf_counter() - t
        tried = sum(r.candidates_tried for r in kqf)
        result["kqf_tdf"] = {
            "index_build_s": index_s,
            "seconds": kqf_s,
            "questions_per_s": n / kqf_s,
            "queries_per_s": tried / kqf_s,
            "mean_candidates_tried": tried / n,
            "share_ranked_first": sum(r.rank == 1 for r in kqf) / n,
        }
        per_question_total = per_question_kqgm + kqf_s / n
    # pairs/s of the full pipeline: m candidates each, plus KQF/TDF when an index was timed
    result["pairs_per_s"] = 1.0 / per_question_total
    result["projection_3_17M"] = {
        "questions": PAPER_QUESTIONS,
        "hours_on_this_machine": PAPER_QUESTIONS * per_question_total / 3600,
        "includes_kqf_tdf": factory is not None,
        "setup_hours_linear": (timings["phrases_and_statistics_s"] * PAPER_QUESTIONS / len(questions)) / 3600,
    }
    result["peak_rss"] = _peak_rss_mb()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
