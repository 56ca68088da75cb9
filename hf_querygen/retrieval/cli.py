"""``hf-querygen index build|search``: build a persistent index from a file and query it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_querygen._fs import check_output_dir
from hf_querygen.errors import CorpusFormatError, InvalidInputError
from hf_querygen.retrieval import Index
from hf_querygen.retrieval.dense import DTYPES
from hf_querygen.retrieval.index import INDEX_KIND
from hf_querygen.retrieval.params import RANKERS, parse_params
from hf_querygen.retrieval.sharded import SHARDED_KIND, build_sharded_index, open_any_index

from .._ray import LOCAL
from ..cli import non_negative_int, positive_int


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "index", help="build or search a retrieval index (BM25, QL, SDM, dense, hybrid)"
    )
    commands = parser.add_subparsers(dest="index_command", required=True)

    build = commands.add_parser(
        "build",
        help="index documents from a file",
        description="Documents from a UTF-8 .tsv (id<TAB>text; a first line id<TAB>text is a header), "
        ".jsonl (one object per line) or .txt (one document per line, ids = line numbers from 0) file. "
        "Ids must be non-empty and unique; any other extension is refused.",
    )
    build.add_argument("input", type=Path, help="documents file (.tsv, .jsonl or .txt)")
    build.add_argument("output", type=Path, help="index folder to create")
    build.add_argument("--text-field", default="text", help="jsonl: the text field (default text)")
    build.add_argument("--id-field", default="id", help="jsonl: the id field (default id; absent = row)")
    build.add_argument("--overwrite", action="store_true", help="replace an index already in the folder")
    build.add_argument(
        "--threads", type=non_negative_int, default=0, help="tantivy writer threads (0 = automatic)"
    )
    build.add_argument(
        "--embed",
        metavar="MODEL",
        default=None,
        help="add a dense field: embed every document with this sentence-transformers model (Hub id or "
        "folder; all-MiniLM-L6-v2 works offline); enables --ranker dense / hybrid",
    )
    build.add_argument("--dense-dtype", choices=DTYPES, default="float32", help="stored embedding type")
    build.add_argument("--device", default=None, help="encoding device (cpu, cuda; default: CUDA if present)")
    build.add_argument(
        "--shards",
        type=positive_int,
        default=None,
        help="split the documents into N contiguous shards, each its own index, searched as one with the "
        "summed collection statistics (results equal one index's)",
    )
    build.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help="build the shards as Ray tasks (needs --shards; pip install 'hf-querygen[ray]'): on the cluster "
        "at ADDRESS (e.g. ray://head:10001, the output folder on a file system every node sees), or without "
        "ADDRESS on a Ray started on this machine, else a local one",
    )
    build.set_defaults(func=_build)

    search = commands.add_parser("search", help="search an index; prints JSON lines")
    search.add_argument("index", type=Path, help="index folder (one index or a sharded one)")
    search.add_argument("queries", nargs="*", help="queries (default: one per line on stdin)")
    search.add_argument("-k", type=positive_int, default=10, help="hits per query (default 10)")
    search.add_argument("--ranker", default="bm25", choices=list(RANKERS))
    search.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="ranker parameter, e.g. mu=1000, k1=0.9, depth=500, weights=0.8,0.1,0.1, fusion=convex, "
        "alpha=0.3 (repeatable)",
    )
    search.add_argument(
        "--threads", type=positive_int, default=None, help="search threads (default: CPU count)"
    )
    search.set_defaults(func=_search)


DOCUMENT_SUFFIXES = (".tsv", ".jsonl", ".txt")
#: a first .tsv line with these columns is a header, not a document
TSV_HEADERS = (("id", "text"), ("docid", "text"), ("doc_id", "text"), ("_id", "text"))


def _document_lines(path: Path):
    """(line number, text) of each line, decoded strictly as UTF-8 (a BOM at the start is dropped);
    a line that is not UTF-8 or holds a NUL byte is a CorpusFormatError naming file and line."""
    try:
        handle = path.open("rb")
    except OSError as err:
        raise InvalidInputError(f"documents file {path} cannot be read ({err.strerror})") from err
    with handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise CorpusFormatError(
                    path,
                    line_number,
                    f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})",
                ) from None
            if "\0" in line:
                raise CorpusFormatError(path, line_number, f"NUL byte at column {line.index(chr(0)) + 1}")
            yield line_number, line.rstrip("\r\n")


def _read_documents(path: Path, text_field: str, id_field: str) -> tuple[list[str], list | None]:
    if not path.is_file():
        raise InvalidInputError(f"documents file not found: {path}")
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        raise InvalidInputError(
            f"documents file {path}: unknown extension {path.suffix or '(none)'!r}; use .tsv (id<TAB>text), "
            ".jsonl (one object per line) or .txt (one document per line)"
        )
    texts: list[str] = []
    ids: list = []
    lines: list[int] = []  # the line of each document, to name it in errors
    for line_number, line in _document_lines(path):
        if suffix == ".tsv":
            if not line.strip():
                continue
            columns = line.split("\t", 1)
            if len(columns) != 2:
                raise CorpusFormatError(path, line_number, "expected id<TAB>text")
            if not texts and tuple(c.strip().lower() for c in columns) in TSV_HEADERS:
                continue  # a header line
            ids.append(columns[0])
            texts.append(columns[1])
        elif suffix == ".jsonl":
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
        lines.append(line_number)
    if suffix == ".txt" or all(i is None for i in ids):
        return texts, None
    first_line: dict = {}
    for line_number, doc_id in zip(lines, ids, strict=True):
        if doc_id is None:
            raise CorpusFormatError(path, line_number, f"no {id_field!r} field (other records have one)")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            raise CorpusFormatError(path, line_number, f"id must be a string or an integer, got {doc_id!r}")
        if isinstance(doc_id, str) and not doc_id.strip():
            raise CorpusFormatError(path, line_number, "empty id")
        if doc_id in first_line:
            raise CorpusFormatError(
                path, line_number, f"duplicate id {doc_id!r} (first on line {first_line[doc_id]})"
            )
        first_line[doc_id] = line_number
    return texts, ids


def _parse_params(ranker: str, pairs: list[str]) -> dict:
    return parse_params(ranker, pairs)


def _build(args: argparse.Namespace) -> int:
    import time

    if args.ray is not None and args.shards is None:
        raise SystemExit("index build: --ray builds shards as Ray tasks; give --shards N")
    if args.embed is not None and args.shards is not None:
        raise SystemExit("index build: --embed builds one index's dense field; it does not go with --shards")
    kind = INDEX_KIND if args.shards is None else SHARDED_KIND
    check_output_dir(args.output, kind, args.overwrite, what="index")  # before reading the input
    texts, ids = _read_documents(args.input, args.text_field, args.id_field)
    start = time.perf_counter()
    if args.shards is None:
        index = Index.from_texts(
            texts,
            ids=ids,
            path=args.output,
            overwrite=args.overwrite,
            num_threads=args.threads,
            embedder=args.embed,
            dense_dtype=args.dense_dtype,
            device=args.device,
        )
    else:
        index = build_sharded_index(
            texts,
            args.output,
            args.shards,
            ids=ids,
            overwrite=args.overwrite,
            use_ray=args.ray is not None,
            ray_address=args.ray,
            num_threads=args.threads,
        )
    seconds = time.perf_counter() - start
    print(
        f"{index} built in {seconds:.1f} s ({len(index) / max(seconds, 1e-9):,.0f} docs/s)", file=sys.stderr
    )
    return 0


def _search(args: argparse.Namespace) -> int:
    params = _parse_params(args.ranker, args.param)  # before opening the index
    index = open_any_index(args.index)
    queries = args.queries or [line.rstrip("\n") for line in sys.stdin]
    results = index.search_batch(queries, k=args.k, ranker=args.ranker, threads=args.threads, **params)
    for query, hits in zip(queries, results, strict=True):
        print(
            json.dumps(
                {"query": query, "hits": [{"id": h.id, "score": h.score, "rank": h.rank} for h in hits]}
            )
        )
    return 0
