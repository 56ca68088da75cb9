"""``hf-querygen index build|search``: build a persistent index from a file and query it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import non_negative_int, positive_int


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("index", help="build or search a retrieval index (BM25, QL, SDM)")
    commands = parser.add_subparsers(dest="index_command", required=True)

    build = commands.add_parser(
        "build",
        help="index documents from a file",
        description="Documents from a .tsv (id<TAB>text), .jsonl (one object per line) or .txt "
        "(one document per line, ids = line numbers from 0) file.",
    )
    build.add_argument("input", type=Path, help="documents file (.tsv, .jsonl or .txt)")
    build.add_argument("output", type=Path, help="index folder to create")
    build.add_argument("--text-field", default="text", help="jsonl: the text field (default text)")
    build.add_argument("--id-field", default="id", help="jsonl: the id field (default id; absent = row)")
    build.add_argument("--overwrite", action="store_true", help="replace an index already in the folder")
    build.add_argument(
        "--threads", type=non_negative_int, default=0, help="tantivy writer threads (0 = automatic)"
    )
    build.set_defaults(func=_build)

    search = commands.add_parser("search", help="search an index; prints JSON lines")
    search.add_argument("index", type=Path, help="index folder")
    search.add_argument("queries", nargs="*", help="queries (default: one per line on stdin)")
    search.add_argument("-k", type=positive_int, default=10, help="hits per query (default 10)")
    search.add_argument("--ranker", default="bm25", choices=["bm25", "ql", "sdm"])
    search.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="ranker parameter, e.g. mu=1000, k1=0.9, depth=500, weights=0.8,0.1,0.1 (repeatable)",
    )
    search.add_argument(
        "--threads", type=positive_int, default=None, help="search threads (default: CPU count)"
    )
    search.set_defaults(func=_search)


def _read_documents(path: Path, text_field: str, id_field: str) -> tuple[list[str], list | None]:
    from hf_querygen.errors import CorpusFormatError, InvalidInputError

    if not path.is_file():
        raise InvalidInputError(f"documents file not found: {path}")
    texts: list[str] = []
    ids: list = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if path.suffix == ".tsv":
                if not line:
                    continue
                columns = line.split("\t", 1)
                if len(columns) != 2:
                    raise CorpusFormatError(path, line_number, "expected id<TAB>text")
                ids.append(columns[0])
                texts.append(columns[1])
            elif path.suffix == ".jsonl":
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as err:
                    raise CorpusFormatError(path, line_number, f"not JSON: {err}") from err
                if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                    raise CorpusFormatError(path, line_number, f"no string field {text_field!r}")
                texts.append(record[text_field])
                ids.append(record.get(id_field))
            else:
                texts.append(line)
    if path.suffix not in (".tsv", ".jsonl") or all(i is None for i in ids):
        return texts, None
    if any(i is None for i in ids):
        raise CorpusFormatError(path, ids.index(None) + 1, f"no {id_field!r} field (other records have one)")
    return texts, ids


def _parse_params(ranker: str, pairs: list[str]) -> dict:
    from hf_querygen.retrieval.params import parse_params

    return parse_params(ranker, pairs)


def _build(args: argparse.Namespace) -> int:
    import time

    from hf_querygen._fs import check_output_dir
    from hf_querygen.retrieval import Index
    from hf_querygen.retrieval.index import INDEX_KIND

    check_output_dir(args.output, INDEX_KIND, args.overwrite, what="index")  # before reading the input
    texts, ids = _read_documents(args.input, args.text_field, args.id_field)
    start = time.perf_counter()
    index = Index.from_texts(
        texts, ids=ids, path=args.output, overwrite=args.overwrite, num_threads=args.threads
    )
    seconds = time.perf_counter() - start
    print(
        f"{index} built in {seconds:.1f} s ({len(index) / max(seconds, 1e-9):,.0f} docs/s)", file=sys.stderr
    )
    return 0


def _search(args: argparse.Namespace) -> int:
    from hf_querygen.retrieval import Index

    params = _parse_params(args.ranker, args.param)  # before opening the index
    index = Index.open(args.index)
    queries = args.queries or [line.rstrip("\n") for line in sys.stdin]
    results = index.search_batch(queries, k=args.k, ranker=args.ranker, threads=args.threads, **params)
    for query, hits in zip(queries, results, strict=True):
        print(
            json.dumps(
                {"query": query, "hits": [{"id": h.id, "score": h.score, "rank": h.rank} for h in hits]}
            )
        )
    return 0
