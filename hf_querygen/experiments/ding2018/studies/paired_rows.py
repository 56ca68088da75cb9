"""Paired randomization tests between rows made of the runner's records (e.g. ``gpu_rows.py``'s), and of
each against the keyword query echoed: per test query, ROUGE-L F (max over references) averaged over a
row's seeds; 10,000 resamples.

    python -m hf_querygen.experiments.ding2018.studies.paired_rows A=RUNS_GLOB B=RUNS_GLOB [--out FILE.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

import numpy as np

from hf_querygen.baselines.k2q import echo_keyword_queries
from hf_querygen.metrics.retrieval import paired_test
from hf_querygen.metrics.rouge import rouge_per_example
from hf_querygen.tasks.k2q.data import k2q_test_sets

SPLITS = ("t0", "nl2kw")


def per_query(outputs: list[str], references: list[list[str]]) -> np.ndarray:
    return np.array([row["rougeL_f_max"] for row in rouge_per_example(outputs, references, ["rougeL"])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rows", nargs=2, metavar="ROW=GLOB")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    tests = k2q_test_sets(args.data_dir)
    rows = {}
    for spec in args.rows:
        name, pattern = spec.split("=", 1)
        records = [json.loads(Path(p).read_text()) for p in sorted(glob.glob(pattern))]
        if not records:
            raise SystemExit(f"{spec}: no record matches")
        rows[name] = {
            split: np.mean(
                [per_query(r["outputs"][split], tests[split]["references"]) for r in records], axis=0
            )
            for split in SPLITS
        }
        rows[name]["seeds"] = [r["seed"] for r in records]
    echo = {
        split: per_query(echo_keyword_queries(tests[split]["keywords"]), tests[split]["references"])
        for split in SPLITS
    }
    (a, a_scores), (b, b_scores) = rows.items()
    result = {"rows": {name: {"seeds": scores["seeds"]} for name, scores in rows.items()}, "tests": {}}
    for split in SPLITS:
        result["tests"][split] = {
            f"{a} - {b}": paired_test(a_scores[split], b_scores[split]),
            **{f"{name} - echo": paired_test(scores[split], echo[split]) for name, scores in rows.items()},
            "means": {
                **{name: float(scores[split].mean()) for name, scores in rows.items()},
                "echo": float(echo[split].mean()),
            },
        }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
