"""Index build, two versions of the library A/B: alternating runs, each in a fresh process.

On a shared 2-core machine one build's wall and CPU time vary by 10-15% from run to run (other tenants),
more than most changes to the build path. This script builds the same corpus (the one of
``bench_retrieval.py``) with two source trees in turn, ``--pairs`` times, swapping which goes first in
every other pair, and reports each run plus the per-pair differences (B - A) and their medians::

    git worktree add --detach /tmp/main-before main
    python benchmarks/bench_index_ab.py --a /tmp/main-before --b . --pairs 6 --num-docs 1000000 \\
        --out benchmarks/index_build_ab.json

Measured per run: wall seconds and CPU seconds (the process, every thread: tantivy's writer threads
included) of ``Index.from_texts`` persisted to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_retrieval import add_corpus_arguments, benchmark_corpus  # noqa: E402

CHILD = r"""
import json, pickle, sys, tempfile, time
from pathlib import Path
docs = pickle.load(open(sys.argv[1], "rb"))
from hf_querygen.retrieval import Index
with tempfile.TemporaryDirectory() as tmp:
    start, start_cpu = time.perf_counter(), time.process_time()
    Index.from_texts(docs, path=Path(tmp) / "ix", show_progress=False, num_threads=int(sys.argv[2]))
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
import hf_querygen
try:
    from hf_querygen.retrieval.native import load_native
    native = load_native() is not None
except ImportError:  # a tree from before the C module
    native = False
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "library": hf_querygen.__file__, "c_module": native}))
"""


def build_once(tree: Path, corpus: Path, threads: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    # run in the tree: `python -c` puts the working directory first on sys.path, which would otherwise
    # import the checkout the script was started from for both sides
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(corpus), str(threads)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(result["library"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"the run for {tree} imported {result['library']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--a", type=Path, required=True, help="source tree A (the one holding hf_querygen/)")
    parser.add_argument("--b", type=Path, required=True, help="source tree B")
    parser.add_argument("--pairs", type=int, default=6)
    add_corpus_arguments(parser)
    args = parser.parse_args()
    docs = benchmark_corpus(args)
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    if args.a.resolve() == args.b.resolve():
        parser.error("--a and --b are the same tree")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "docs.pkl"
        corpus.write_bytes(pickle.dumps(docs))
        for pair in range(args.pairs):
            for side in ("a", "b") if pair % 2 == 0 else ("b", "a"):
                runs[side].append(build_once(getattr(args, side).resolve(), corpus, args.threads))
                print(side, runs[side][-1], flush=True)
    result = {
        "num_docs": args.num_docs,
        "threads": args.threads,
        "a": str(args.a),
        "b": str(args.b),
        "runs": runs,
        "loadavg_after": os.getloadavg(),
    }
    for key in ("wall_s", "cpu_s"):
        differences = [b[key] - a[key] for a, b in zip(runs["a"], runs["b"], strict=True)]
        result[f"median_{key}"] = {
            "a": statistics.median(r[key] for r in runs["a"]),
            "b": statistics.median(r[key] for r in runs["b"]),
            "b_minus_a_per_pair": differences,
            "median_b_minus_a": statistics.median(differences),
        }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    wall, cpu = result["median_wall_s"], result["median_cpu_s"]
    print(
        f"\n| | A | B | median of B - A per pair |\n|---|---|---|---|\n"
        f"| wall s | {wall['a']:.2f} | {wall['b']:.2f} | {wall['median_b_minus_a']:+.2f} |\n"
        f"| CPU s | {cpu['a']:.2f} | {cpu['b']:.2f} | {cpu['median_b_minus_a']:+.2f} |"
    )


if __name__ == "__main__":
    main()
