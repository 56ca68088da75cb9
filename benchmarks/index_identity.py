"""Check that two versions of the library build the same index: analysed tokens, term ids, sidecar
statistics and every ranker's results (ids, rows, scores, exactly).

Run ``dump`` once per version (``PYTHONPATH`` pointing at each tree, e.g. a ``git archive`` copy of
main in /tmp), then ``compare``::

    PYTHONPATH=/tmp/main-copy python benchmarks/index_identity.py dump /tmp/before.pkl --chunk-size 1000
    PYTHONPATH=$PWD python benchmarks/index_identity.py dump /tmp/after.pkl --chunk-size 1000
    python benchmarks/index_identity.py compare /tmp/before.pkl /tmp/after.pkl

Documents: NFCorpus dev documents, SemEval-2016 CQA dev question and comment text, QALD question
strings (many languages), and hand-written edge cases (long terms, the chunk separators, control
characters, unicode case folding and compatibility forms), all twice over. The index is built with
one tantivy writer thread: with several, the segment layout varies from run to run and tantivy breaks
ties at the k-th BM25 score by document address, so even the same code differs at that boundary.
"""

from __future__ import annotations

import argparse
import gc
import glob
import html
import json
import os
import pickle
import random
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

STATS_ARRAYS = (
    "tokens",
    "doc_offsets",
    "pos_ptr",
    "positions",
    "pos_doc",
    "doc_ptr",
    "post_docs",
    "post_tfs",
)
RANKERS = (
    ("bm25", {}),
    ("bm25", {"exact": True}),
    ("bm25", {"k1": 0.9, "b": 0.4}),
    ("ql", {}),
    ("sdm", {}),
    ("sdm", {"depth": None}),
)
EDGE_CASES = [
    "", "   ", "!!!", "it's the fox's den", "foo_bar baz-qux", "a\x00b c", "x\x1ey z", "p\x0bq",
    "u\x1cv\x1dw\x1f", "a" * 255, "b" * 256, "c" * 300 + " short", "é" * 130, "é" * 127 + " ok",
    "Straße ﬁne ǅ ＦＵＬＬ", "tab\there\nnew line", "ctrl\x01char \x7f del", "emoji 😀 smile",
    "İstanbul ΣΊΣΥΦΟΣ", "\u00a0nbsp\u2003em\u3000ideo", "mixed ascii then ü", "'quoted' `back` ’curly’",
    "\x00", "DOC\x00MARK only", "zero\u200bwidth",
]  # fmt: skip


def _qald_strings(data_dir: Path) -> list[str]:
    strings: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("string", "keywords") and isinstance(value, str):
                    strings.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for name in sorted(glob.glob(str(data_dir / "qald/**/*.json"), recursive=True))[:6]:
        try:
            walk(json.loads(Path(name).read_text(encoding="utf-8")))
        except ValueError:
            continue
    return strings


def corpus(data_dir: Path) -> tuple[list[str], list[str]]:
    """(documents, queries)."""
    docs = [
        line.split("\t", 1)[1] if "\t" in line else line
        for line in (data_dir / "nfcorpus/dev.docs").read_text(encoding="utf-8").splitlines()
    ]
    xml = (data_dir / "semeval-cqa/2016/SemEval2016-Task3-CQA-QL-dev.xml").read_text(encoding="utf-8")
    docs += [html.unescape(t) for t in re.findall(r"<(?:RelCText|RelQBody|RelQSubject)>(.*?)</", xml, re.S)][
        :3000
    ]
    qald = _qald_strings(data_dir)
    docs += qald[:3000]
    rng = random.Random(0)
    for text in EDGE_CASES:
        docs.insert(rng.randrange(len(docs)), text)
    docs = docs * 2
    queries = [
        line.split("\t", 1)[1]
        for line in (data_dir / "nfcorpus/dev.titles.queries").read_text(encoding="utf-8").splitlines()
    ][:80]
    queries += qald[3000:3040] + [d[:60] for d in rng.sample(docs, 40)]
    queries += ["fox den", "straße fine", "istanbul", "emoji smile", "c" * 300, "a\x00b"]
    return docs, queries


def dump(out: Path, data_dir: Path, chunk_size: int | None) -> None:
    import hf_querygen.retrieval.index as index_module
    from hf_querygen.retrieval import Index, analyze

    if chunk_size:
        index_module.CHUNK_SIZE = chunk_size
    docs, queries = corpus(data_dir)
    result: dict = {"n_docs": len(docs), "analyze": [analyze(d) for d in docs]}
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.from_texts(docs, path=Path(tmp) / "ix", show_progress=False, num_threads=1)
        result["vocab"] = list(index.stats.vocab)
        for name in STATS_ARRAYS:
            result[name] = np.array(getattr(index.stats, name))
        result["search"] = {
            (query, ranker, tuple(sorted(params.items()))): [
                (hit.id, hit.row, hit.score) for hit in index.search(query, k=20, ranker=ranker, **params)
            ]
            for query in queries
            for ranker, params in RANKERS
        }
        del index
        gc.collect()
    out.write_bytes(pickle.dumps(result))
    found = sum(bool(hits) for hits in result["search"].values())
    print(
        f"{len(docs)} documents, {len(queries)} queries, {len(result['search'])} searches ({found} non-empty)"
    )


def compare(before: Path, after: Path) -> int:
    a, b = pickle.loads(before.read_bytes()), pickle.loads(after.read_bytes())
    differ = [
        key
        for key in a.keys() | b.keys()
        if not (
            np.array_equal(a.get(key), b.get(key)) and a[key].dtype == b[key].dtype
            if isinstance(a.get(key), np.ndarray)
            else a.get(key) == b.get(key)
        )
    ]
    print(
        f"differences: {sorted(differ) or 'none'} ({len(a['search'])} searches, {len(a['vocab'])} terms, "
        f"{a['n_docs']} documents)"
    )
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dump_parser = sub.add_parser("dump")
    dump_parser.add_argument("out", type=Path)
    dump_parser.add_argument("--chunk-size", type=int, default=None)
    dump_parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("HF_QUERYGEN_DATA_DIR", "../shared/data"))
    )
    compare_parser = sub.add_parser("compare")
    compare_parser.add_argument("before", type=Path)
    compare_parser.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.data_dir, args.chunk_size)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
