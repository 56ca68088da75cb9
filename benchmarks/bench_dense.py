"""Dense and hybrid retrieval: encoding speed, exact / approximate / hybrid search latency, memory.

1. **Encoding** documents/s with all-MiniLM-L6-v2 (the offline copy) at 1 and 2 torch threads: ours
   (:func:`hf_querygen.retrieval.dense.encode_documents`, chunked, no cache) against sentence-transformers'
   own ``SentenceTransformer.encode`` on the same NFCorpus documents (batch 64 both), alternating, medians
   of ``--encode-repeats`` runs.
2. **Search** at each ``--sizes`` (default 100K and 1M documents of 384 dimensions), one query at a
   time on 1 thread (``OMP_NUM_THREADS=1``):

   * exact dense top-10 (:func:`~hf_querygen.retrieval.dense.dense_top_k`, blocked GEMM + argpartition)
     against a plain numpy ``M @ q`` + ``argpartition`` over the same array (float32, and float16 widened
     to float32 as ours does); both read the whole array per query (bytes given);
   * approximate top-10 (FAISS, ``[ann]``; HNSW up to ``--hnsw-max-size``, IVF at every size): p50 at 1
     thread for several ``ef_search`` / ``nprobe`` and recall@10 against exact;
   * hybrid (RRF, depth 100) through ``Index.search`` against BM25 (tantivy) on the same index, the
     query embedding looked up (the engine's cost; MiniLM's query encoding is measured apart).

   The embeddings are synthetic (the encoder reads ~10 documents/s per core: 1M real ones would take
   a day): ``--clusters`` random unit centres, each document a centre plus Gaussian noise, normalised
   (clustered like real sentence embeddings, so that ANN recall means something); queries are
   perturbed documents. The texts for BM25 are bench_retrieval's question corpus.

The machine is shared by other agents (2 cores, load ~6-12): every latency is a median of repeated
runs, wall and CPU time are both given, and the JSON says so.

    OMP_NUM_THREADS=1 python benchmarks/bench_dense.py --out benchmarks/dense_results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_retrieval import latency, read_question_pool, synthetic_corpus  # noqa: E402

DIMENSION = 384


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------- encoding
def bench_encoding(data_dir: Path, num_docs: int, repeats: int, threads_list: list[int]) -> dict:
    import torch

    from hf_querygen.experiments.retrieval import load_nfcorpus_split
    from hf_querygen.pretrained import SentenceEmbedder
    from hf_querygen.retrieval.dense import encode_documents

    documents = load_nfcorpus_split(data_dir, "test")["documents"]
    texts = [documents[d] for d in sorted(documents)[:num_docs]]
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", device="cpu")
    embedder.encode(texts[:8])  # warm up (first call allocates)
    out: dict = {"documents": len(texts), "mean_words": float(np.mean([len(t.split()) for t in texts]))}
    for threads in threads_list:
        torch.set_num_threads(threads)
        ours, theirs = [], []
        for _ in range(repeats):  # alternating, so load changes hit both alike
            start = time.perf_counter()
            a = encode_documents(embedder, texts, cache=False, show_progress=False)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            b = embedder.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            theirs.append(time.perf_counter() - start)
        assert np.allclose(a, b, atol=1e-5)
        out[f"threads_{threads}"] = {
            "ours_s": [round(x, 2) for x in ours],
            "sentence_transformers_s": [round(x, 2) for x in theirs],
            "ours_docs_per_s": len(texts) / float(np.median(ours)),
            "sentence_transformers_docs_per_s": len(texts) / float(np.median(theirs)),
            "time_ratio_ours_over_st": float(np.median(ours) / np.median(theirs)),
        }
    torch.set_num_threads(1)
    return out


# ---------------------------------------------------------------- synthetic embeddings
def clustered_embeddings(num: int, clusters: int, noise: float, seed: int) -> np.ndarray:
    """``num`` unit vectors: a random unit centre each (of ``clusters``) plus N(0, noise^2 / d) noise per
    dimension."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, DIMENSION), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = np.empty((num, DIMENSION), dtype=np.float32)
    for start in range(0, num, 65_536):
        n = min(65_536, num - start)
        block = centres[rng.integers(0, clusters, n)]
        block += rng.standard_normal((n, DIMENSION), dtype=np.float32) * (noise / np.sqrt(DIMENSION))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + n] = block
    return out


def perturbed_queries(matrix: np.ndarray, num: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    queries = matrix[rng.integers(0, len(matrix), num)].astype(np.float32)
    queries += rng.standard_normal(queries.shape, dtype=np.float32) * (noise / np.sqrt(DIMENSION))
    return queries / np.linalg.norm(queries, axis=1, keepdims=True)


def numpy_top10(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = (matrix if matrix.dtype == np.float32 else matrix.astype(np.float32)) @ query
    top = np.argpartition(-scores, 9)[:10]
    return top[np.argsort(-scores[top])]


def median_latency(fn, queries, repeats: int) -> dict:
    """Per-query latency over ``queries``, repeated; the medians of each run's p50 / p95."""
    runs = [latency(fn, queries) for _ in range(repeats)]
    return {
        key: float(np.median([r[key] for r in runs]))
        for key in ("p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms")
    } | {"n": runs[0]["n"], "repeats": repeats}


# ---------------------------------------------------------------- search
class LookupEmbedder:
    """An embedder whose query vectors are looked up (MiniLM's identity, so the index accepts it): the
    engine's search cost without the query encoder, which is measured on its own."""

    def __init__(self, describe: dict, vectors: dict[str, np.ndarray]):
        self._describe, self.vectors = describe, vectors

    def describe(self) -> dict:
        return dict(self._describe)

    def encode(self, texts, batch_size: int = 64) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def bench_search(size: int, args: argparse.Namespace, pool: list[str], minilm_info: dict) -> dict:
    from hf_querygen.retrieval import Index
    from hf_querygen.retrieval.ann import AnnIndex, recall_at_k
    from hf_querygen.retrieval.dense import dense_top_k

    out: dict = {"documents": size, "dimension": DIMENSION}
    started = time.perf_counter()
    matrix = clustered_embeddings(size, args.clusters, args.noise, args.seed)
    queries = perturbed_queries(matrix, args.num_queries, args.noise, args.seed)
    out["generate_s"] = round(time.perf_counter() - started, 1)
    block = 65_536

    exact_rows = []
    for dtype in ("float32", "float16") if size <= args.float16_max_size else ("float32",):
        stored = matrix if dtype == "float32" else matrix.astype(np.float16)
        ours = median_latency(
            lambda q, m=stored: dense_top_k(m, q[None, :], 10, block), queries, args.repeats
        )
        plain = median_latency(lambda q, m=stored: numpy_top10(m, q), queries, args.repeats)
        agree = all(
            dense_top_k(stored, q[None, :], 10, block)[0][0].tolist() == numpy_top10(stored, q).tolist()
            for q in queries[:20]
        )
        out[f"exact_{dtype}"] = {
            "ours": ours,
            "numpy_matmul": plain,
            "p50_ratio_ours_over_numpy": ours["p50_ms"] / plain["p50_ms"],
            "p95_ratio_ours_over_numpy": ours["p95_ms"] / plain["p95_ms"],
            "cpu_p50_ratio_ours_over_numpy": ours["cpu_p50_ms"] / plain["cpu_p50_ms"],
            "bytes_read_per_query": int(stored.nbytes),
            "effective_gb_per_s_ours_p50": stored.nbytes / (ours["p50_ms"] / 1000) / 1e9,
            "same_top10_as_numpy_on_20_queries": agree,
        }
        if dtype == "float32":
            exact_rows = [dense_top_k(stored, q[None, :], 10, block)[0][0] for q in queries]
        del stored

    anns: dict = {}
    if not args.skip_ann:
        import faiss

        kinds = [("ivf", "nprobe", args.ivf_nprobe, {"nlist": args.ivf_nlist})]
        if size <= args.hnsw_max_size:
            settings = {"m": args.ann_m, "ef_construction": args.ann_ef_construction}
            kinds.insert(0, ("hnsw", "ef_search", args.ann_ef, settings))
        for kind, knob, values, settings in kinds:
            started, cpu = time.perf_counter(), time.process_time()
            ann = AnnIndex.build(matrix, kind, threads=args.ann_build_threads, **settings)
            build = {
                "wall_s": round(time.perf_counter() - started, 1),
                "cpu_s": round(time.process_time() - cpu, 1),
            }
            faiss.omp_set_num_threads(1)
            curve = []
            for value in values:
                ann.set_search(**{knob: value})
                found = [ann.search(q[None, :], 10)[0][0] for q in queries]
                timing = median_latency(lambda q, a=ann: a.search(q[None, :], 10), queries, args.repeats)
                curve.append({knob: value, "recall@10": recall_at_k(found, exact_rows, 10), **timing})
            meeting = [c for c in curve if c["recall@10"] >= 0.95]
            best = min(meeting, key=lambda c: c["cpu_p50_ms"]) if meeting else None
            anns[kind] = (ann, knob, best[knob] if best else max(values))
            out[f"ann_{kind}"] = {
                "library": f"faiss-cpu {faiss.__version__}",
                **settings,
                "build": build | {"threads": args.ann_build_threads},
                "search_threads": 1,
                "curve": curve,
                "fastest_at_recall_0.95": best,
            }

    # hybrid vs BM25 through the Index: real question texts, the synthetic embeddings as the dense field
    texts = synthetic_corpus(pool, size, args.seed)
    query_texts = list(
        dict.fromkeys(
            pool[i] for i in np.random.default_rng(args.seed + 2).integers(0, len(pool), args.num_queries * 2)
        )
    )[: args.num_queries]
    lookup = LookupEmbedder(minilm_info, dict(zip(query_texts, queries, strict=True)))
    started = time.perf_counter()
    index = Index.from_texts(texts, embedder=lookup, embeddings=matrix, show_progress=False)
    out["index_build_s"] = round(time.perf_counter() - started, 1)
    del texts
    bm25 = median_latency(lambda q: index.search(q, k=10, ranker="bm25"), query_texts, args.repeats)
    hybrid = median_latency(lambda q: index.search(q, k=10, ranker="hybrid"), query_texts, args.repeats)
    out["bm25"] = bm25
    out["hybrid_exact"] = hybrid | {
        "p95_ratio_over_bm25": hybrid["p95_ms"] / bm25["p95_ms"],
        "cpu_p95_ratio_over_bm25": hybrid["cpu_p95_ms"] / bm25["cpu_p95_ms"],
    }
    for kind, (ann, knob, value) in anns.items():
        index.ann = ann
        ann.set_search(**{knob: value})
        approx = median_latency(
            lambda q: index.search(q, k=10, ranker="hybrid", approximate=True), query_texts, args.repeats
        )
        out[f"hybrid_{kind}"] = approx | {
            knob: value,
            "p95_ratio_over_bm25": approx["p95_ms"] / bm25["p95_ms"],
            "cpu_p95_ratio_over_bm25": approx["cpu_p95_ms"] / bm25["cpu_p95_ms"],
        }
    out["memory"] = {
        "embeddings_float32_mb": matrix.nbytes / 2**20,
        "embeddings_float16_mb": matrix.nbytes / 2**21,
        "process_peak_rss_mb": rss_mb(),
    }
    return out


def bench_query_encoding(pool: list[str], num: int, repeats: int) -> dict:
    """MiniLM's encoding of one short query at a time (1 thread): the part of a dense / hybrid query that
    the search numbers above leave out."""
    import torch

    from hf_querygen.pretrained import SentenceEmbedder

    torch.set_num_threads(1)
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", device="cpu")
    queries = pool[:num]
    embedder.encode(queries[:4])
    return median_latency(lambda q: embedder.encode([q]), queries, repeats) | {
        "mean_words": float(np.mean([len(q.split()) for q in queries]))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("HF_QUERYGEN_DATA_DIR", "../shared/data"))
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--num-queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--noise", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encode-docs", type=int, default=48)
    parser.add_argument("--encode-repeats", type=int, default=3)
    parser.add_argument("--encode-threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-encoding", action="store_true")
    parser.add_argument("--skip-ann", action="store_true")
    parser.add_argument("--ann-m", type=int, default=32)
    parser.add_argument("--ann-ef-construction", type=int, default=40)
    parser.add_argument("--ann-build-threads", type=int, default=2)
    parser.add_argument("--ann-ef", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument(
        "--hnsw-max-size", type=int, default=200_000, help="HNSW (slow to build) up to this size"
    )
    parser.add_argument("--ivf-nlist", type=int, default=1024)
    parser.add_argument(
        "--float16-max-size",
        type=int,
        default=10**9,
        help="float16 exact search up to this size (numpy widens "
        "float16 slowly: ~7x float32's CPU per query)",
    )
    parser.add_argument("--ivf-nprobe", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from hf_querygen.pretrained import SentenceEmbedder

    result: dict = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "load_average_start": load_average(),
            "note": "shared machine (2 cores, other agents running: not idle); latencies are medians of "
            "repeated runs, wall and CPU time both given",
        },
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    pool = read_question_pool(args.data_dir)
    minilm = SentenceEmbedder("all-MiniLM-L6-v2", device="cpu")
    minilm_info = minilm.describe()
    result["query_encoding_minilm_1_thread"] = bench_query_encoding(pool, args.num_queries, args.repeats)
    if not args.skip_encoding:
        result["encoding"] = bench_encoding(
            args.data_dir, args.encode_docs, args.encode_repeats, args.encode_threads
        )
    for size in args.sizes:
        result[f"search_{size}"] = bench_search(size, args, pool, minilm_info)
        print(json.dumps(result[f"search_{size}"], indent=1), file=sys.stderr, flush=True)
    result["machine"]["load_average_end"] = load_average()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
