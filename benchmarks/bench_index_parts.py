"""Where an index build's CPU time goes: analysis, the tantivy side, the sidecar statistics, raw tantivy.

The build overlaps analysis with feeding tantivy, so its total does not say what each part costs. Here
each part runs alone in one process, on the corpus of ``bench_retrieval.py``:

* ``analysis``: every chunk through the build's analyser (normalisation, term ids, tantivy's JSON lines),
  serially (the C module where compiled; ``HF_QUERYGEN_NO_NATIVE=1`` measures the Arrow path);
* ``tantivy_side``: those JSON lines handed to a tantivy writer (``add_json``), commit and merge: the
  calling thread's calls and tantivy's indexing threads;
* ``statistics``: the sidecar arrays (positions, postings, pair table) from the term ids;
* ``raw_tantivy``: the lean reference of ``bench_retrieval.py`` (tantivy's default tokenizer, one
  ``Document`` per text), for the ratio.

    python benchmarks/bench_index_parts.py --num-docs 1000000 --threads 2 --repeats 3
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_retrieval import add_corpus_arguments, bench_raw_tantivy, benchmark_corpus, build_path  # noqa: E402


def measure_parts(docs: list[str], threads: int) -> dict:
    import pyarrow.compute  # noqa: F401  (imported by the first chunk otherwise: not analysis time)

    from hf_querygen.retrieval.index import CHUNK_SIZE, _CollectionAnalyser
    from hf_querygen.retrieval.tantivy_backend import build_schema, import_tantivy, register_analyzer

    analyser = _CollectionAnalyser()
    start = time.process_time()
    chunks = [analyser.analyse(docs[i : i + CHUNK_SIZE], i) for i in range(0, len(docs), CHUNK_SIZE)]
    parts = {"analysis_cpu_s": time.process_time() - start}
    tantivy = import_tantivy()
    with tempfile.TemporaryDirectory() as tmp:
        start, start_cpu = time.perf_counter(), time.process_time()
        index = tantivy.Index(build_schema(), path=tmp)
        register_analyzer(index)
        writer = index.writer(heap_size=512_000_000, num_threads=threads)
        for documents in chunks:
            collections.deque(map(writer.add_json, documents), maxlen=0)
        writer.commit()
        writer.wait_merging_threads()
        parts["tantivy_side_wall_s"] = time.perf_counter() - start
        parts["tantivy_side_cpu_s"] = time.process_time() - start_cpu
    start = time.process_time()
    analyser.statistics()
    parts["statistics_cpu_s"] = time.process_time() - start
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    add_corpus_arguments(parser)
    args = parser.parse_args()
    docs = benchmark_corpus(args)
    runs = []
    for _ in range(args.repeats):
        parts = measure_parts(docs, args.threads)
        raw: queue.Queue = queue.Queue()
        bench_raw_tantivy(docs, [], args.threads, raw)
        parts["raw_tantivy_cpu_s"] = raw.get()["index_cpu_seconds"]
        ours = parts["analysis_cpu_s"] + parts["tantivy_side_cpu_s"] + parts["statistics_cpu_s"]
        parts["sum_of_parts_cpu_s"] = ours
        parts["ratio_to_raw_tantivy"] = ours / parts["raw_tantivy_cpu_s"]
        parts["ratio_without_analysis"] = (ours - parts["analysis_cpu_s"]) / parts["raw_tantivy_cpu_s"]
        runs.append(parts)
        print(json.dumps({k: round(v, 3) for k, v in parts.items()}), flush=True)
    result = {
        "build_path": build_path(),
        "num_docs": args.num_docs,
        "threads": args.threads,
        "runs": runs,
        "loadavg_after": os.getloadavg(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    print("\n| part | CPU s per run |\n|---|---|")
    for key in ("analysis_cpu_s", "tantivy_side_cpu_s", "statistics_cpu_s", "raw_tantivy_cpu_s"):
        print(f"| {key[:-6]} | {' / '.join(f'{run[key]:.2f}' for run in runs)} |")
    for key, label in (
        ("ratio_to_raw_tantivy", "ratio to raw tantivy"),
        ("ratio_without_analysis", "... without analysis"),
    ):
        print(f"| {label} | {' / '.join(f'{run[key]:.2f}' for run in runs)} |")


if __name__ == "__main__":
    main()
