"""What the index's content hashes cost: the build (every file hashed whole, the library's own while they
are written, tantivy's right after its commit) and ``Index.open`` with and without ``verify``.

The corpus is bench_retrieval.py's (questions sampled with replacement, words shuffled in half the
copies). Each open is timed ``--repeats`` times on a warm page cache (the folder was just written; a
cold cache adds the disk's read time of the folder to both the verify and the first searches).

    python benchmarks/bench_index_verify.py --num-docs 1000000 --out benchmarks/index_verify.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from bench_retrieval import add_corpus_arguments, benchmark_corpus

from hf_querygen.retrieval import Index


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpus_arguments(parser)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    texts = benchmark_corpus(args)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ix"
        started = time.perf_counter()
        Index.from_texts(texts, path=path, show_progress=False, num_threads=args.threads)
        build_s = time.perf_counter() - started
        size = folder_bytes(path)
        timings: dict[str, list[float]] = {"open_verify_s": [], "open_no_verify_s": []}
        for _ in range(args.repeats):
            for key, verify in (("open_verify_s", True), ("open_no_verify_s", False)):
                started = time.perf_counter()
                Index.open(path, verify=verify)
                timings[key].append(time.perf_counter() - started)
    verify_s = statistics.median(timings["open_verify_s"])
    report = {
        "num_docs": args.num_docs,
        "index_mb": round(size / 2**20, 1),
        "build_s_with_hashes": round(build_s, 2),
        "open_verify_s_median": round(verify_s, 3),
        "open_no_verify_s_median": round(statistics.median(timings["open_no_verify_s"]), 3),
        "verify_mb_per_s": round(size / 2**20 / verify_s, 1),
        "timings": {k: [round(t, 4) for t in v] for k, v in timings.items()},
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
            "idle": False,
            "note": "shared 2-core machine, other jobs running (see loadavg): not idle",
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        existing = json.loads(args.out.read_text()) if args.out.exists() else {}
        existing[str(args.num_docs)] = report
        args.out.write_text(json.dumps(existing, indent=2) + "\n")


if __name__ == "__main__":
    main()
