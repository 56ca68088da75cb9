"""Batch reformulation of a query log through a trained model's task: ``hf-querygen reformulate``.

``reformulate(model_dir, input_path, output_path, ...)`` reads ``input_path`` (``.tsv``: ``id<TAB>text``,
a first line ``id<TAB>text`` / ``id<TAB>query`` is a header; ``.txt``: one text per line, ids = line
numbers from 0), runs every text through the model's task (:meth:`hf_querygen.tasks.base.Task.predict`,
the decode path of the pipelines and tables) in batches and writes ``output_path``, a parquet file with
the columns ``id``, ``input``, ``output`` (:meth:`~hf_querygen.tasks.base.Task.as_text`) in input order.

The input is cut into chunks of ``chunk_size`` lines. One pass over the file (UTF-8 and format checked,
errors name file and line) records where each chunk starts; each chunk is then read from there, decoded
and written as ``<output>.parts/part-XXXXX.parquet`` (temporary file + rename), so a killed run continues
with the chunks that have no part yet (the parts folder carries the library's marker with the run's
settings: a rerun with other settings is refused). At the end the parts are joined, in order, into
``output_path`` (written to a temporary file, then renamed) and the parts folder is removed.

Without Ray the chunks run in this process with the model loaded once. With ``ray_address``, the missing
chunks are a Ray Dataset and ``map_batches`` runs them on ``workers`` actors of :class:`ChunkReformulator`,
each loading the model once (Ray Data's actor pool); the output is the same file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._fs import check_output_file, foreign_entries, read_marker, remove_tree, write_marker
from ._ray import ensure_ray
from .errors import CorpusFormatError, InvalidInputError, OutputExistsError
from .model_folder import load_trained
from .tasks.base import get_task
from .utils import TRAINING_METADATA_FILE

PARTS_KIND = "reformulation-parts"
INPUT_SUFFIXES = (".tsv", ".txt")
#: a first .tsv line with these columns is a header, not a query
TSV_HEADERS = (("id", "text"), ("id", "query"), ("qid", "query"), ("query_id", "query"))


@dataclass
class ReformulationSettings:
    """What determines the output (a resumed run must use the same); ``threads``: torch threads per
    process (default 1: the small RNNs gain little from more, and the workers share the cores)."""

    batch_size: int = 64
    chunk_size: int = 10_000
    generation: dict[str, Any] = field(default_factory=dict)
    threads: int = 1


@dataclass(frozen=True)
class Chunk:
    """Lines ``[first_line, first_line + rows)`` of the input (1-based line numbers), at byte ``offset``;
    ``first_row``: the 0-based row of its first query (its id in a ``.txt`` file)."""

    index: int
    offset: int
    rows: int
    first_line: int
    first_row: int


def _decode(path: Path, line_number: int, raw: bytes) -> str:
    try:
        line = raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
    except UnicodeDecodeError as err:
        raise CorpusFormatError(
            path, line_number, f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})"
        ) from None
    if "\0" in line:
        raise CorpusFormatError(path, line_number, f"NUL byte at column {line.index(chr(0)) + 1}")
    return line.rstrip("\r\n")


def _parse(path: Path, line_number: int, line: str, row: int) -> tuple[str, str]:
    """(id, text) of one line."""
    if path.suffix.lower() == ".txt":
        return str(row), line
    columns = line.split("\t", 1)
    if len(columns) != 2:
        raise CorpusFormatError(path, line_number, "expected id<TAB>text")
    if not columns[0].strip():
        raise CorpusFormatError(path, line_number, "empty id")
    return columns[0], columns[1]


def plan_chunks(path: str | os.PathLike, chunk_size: int) -> tuple[list[Chunk], str]:
    """One streaming pass over the input: every line checked (UTF-8, NUL bytes, ``id<TAB>text``), the
    chunks of ``chunk_size`` queries with their byte offsets, and a fingerprint of the file's content."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"reformulate: input file not found: {path}")
    if path.suffix.lower() not in INPUT_SUFFIXES:
        raise InvalidInputError(
            f"reformulate: input {path}: unknown extension {path.suffix or '(none)'!r}; use .tsv "
            "(id<TAB>text) or .txt (one query per line)"
        )
    is_tsv = path.suffix.lower() == ".tsv"
    chunks: list[Chunk] = []
    digest = hashlib.blake2b(digest_size=16)
    offset, row, start = 0, 0, None
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            digest.update(raw)
            line = _decode(path, line_number, raw)
            if is_tsv and not line.strip():
                raise CorpusFormatError(path, line_number, "empty line (expected id<TAB>text)")
            if (
                is_tsv
                and line_number == 1
                and tuple(c.strip().lower() for c in line.split("\t")) in TSV_HEADERS
            ):
                offset += len(raw)
                continue
            _parse(path, line_number, line, row)
            if start is None:
                start = (offset, line_number, row)
            row += 1
            offset += len(raw)
            if row - start[2] == chunk_size:
                chunks.append(Chunk(len(chunks), start[0], chunk_size, start[1], start[2]))
                start = None
    if start is not None:
        chunks.append(Chunk(len(chunks), start[0], row - start[2], start[1], start[2]))
    return chunks, digest.hexdigest()


def read_chunk(path: str | os.PathLike, chunk: Chunk) -> tuple[list[str], list[str]]:
    """(ids, texts) of one chunk, read from its offset."""
    path = Path(path)
    ids, texts = [], []
    with path.open("rb") as handle:
        handle.seek(chunk.offset)
        for i in range(chunk.rows):
            line_number = chunk.first_line + i
            doc_id, text = _parse(
                path, line_number, _decode(path, line_number, handle.readline()), chunk.first_row + i
            )
            ids.append(doc_id)
            texts.append(text)
    return ids, texts


class ChunkReformulator:
    """The model of ``model_dir`` loaded once; called on chunks, writes each one's part file.

    Ray Data's class UDF (``map_batches(ChunkReformulator, fn_constructor_args=...)``): one instance per
    actor, each call a batch of chunk rows (``index``, ``offset``, ``rows``, ``first_line``,
    ``first_row``) -> the rows decoded per chunk and the seconds it took."""

    def __init__(self, model_dir: str, input_path: str, parts_dir: str, settings: dict[str, Any]):
        if settings.get("threads"):
            import torch

            torch.set_num_threads(settings["threads"])
        self.model, self.tokenizer, metadata = load_trained(model_dir)
        if "task" not in metadata:
            raise InvalidInputError(
                f"reformulate: {model_dir} has no task in {TRAINING_METADATA_FILE}: it was not written by "
                "`hf-querygen train`"
            )
        self.task = get_task(metadata["task"])
        self.input_path, self.parts_dir = Path(input_path), Path(parts_dir)
        self.settings = settings

    def run(self, chunk: Chunk) -> int:
        """Decode one chunk and write its part (temporary file + rename); returns its rows."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        ids, texts = read_chunk(self.input_path, chunk)
        outputs = self.task.predict(
            self.model,
            self.tokenizer,
            texts,
            batch_size=self.settings["batch_size"],
            **self.settings["generation"],
        )
        table = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "input": pa.array(texts, pa.string()),
                "output": pa.array([self.task.as_text(o) for o in outputs], pa.string()),
            }
        )
        path = part_path(self.parts_dir, chunk.index)
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, path)  # a killed run never leaves half a part
        return len(ids)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        rows, seconds = [], []
        for values in zip(*(batch[name] for name in Chunk.__dataclass_fields__), strict=True):
            started = time.perf_counter()
            rows.append(self.run(Chunk(*(int(v) for v in values))))
            seconds.append(time.perf_counter() - started)
        return {"index": list(batch["index"]), "rows": rows, "seconds": seconds}


def part_path(parts_dir: Path, index: int) -> Path:
    return parts_dir / f"part-{index:05d}.parquet"


def _open_parts_dir(parts_dir: Path, run: dict[str, Any]) -> None:
    """Create the parts folder with its marker, or check that the one there holds this run's parts."""
    if parts_dir.exists():
        marker = read_marker(parts_dir)
        foreign = foreign_entries(
            parts_dir, PARTS_KIND, owned=[p.name for p in parts_dir.glob("part-*.parquet*")]
        )
        if marker is None or foreign is None or foreign:
            raise OutputExistsError(
                f"reformulate: {parts_dir} exists and is not the parts folder of a reformulate run "
                f"(unexpected: {foreign if foreign else 'no marker'}); move it away"
            )
        if marker.get("run") != json.loads(json.dumps(run)):
            raise InvalidInputError(
                f"reformulate: {parts_dir} holds the parts of a run with other settings or another input / "
                "model; remove it (or rerun with the same settings) to continue"
            )
        for stale in parts_dir.glob("part-*.parquet.tmp"):
            stale.unlink()
        return
    parts_dir.mkdir(parents=True)
    write_marker(parts_dir, PARTS_KIND, run=run)


def reformulate(
    model_dir: str | os.PathLike,
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    settings: ReformulationSettings | None = None,
    ray_address: str | None = None,
    workers: int = 1,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) the job of the module docstring; returns its summary: rows, seconds, rows/s,
    chunks done now and before."""
    import pyarrow.parquet as pq
    from tqdm.auto import tqdm

    settings = settings or ReformulationSettings()
    output_path, input_path, model_dir = Path(output_path), Path(input_path), Path(model_dir)
    if output_path.suffix.lower() != ".parquet":
        raise InvalidInputError(f"reformulate: --output {output_path} must end in .parquet")
    check_output_file(output_path, "--output")
    if output_path.exists() and not overwrite:
        raise OutputExistsError(f"reformulate: {output_path} exists; pass --overwrite to replace it")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidInputError(f"reformulate: workers must be an integer >= 1, got {workers!r}")
    started = time.perf_counter()
    chunks, fingerprint = plan_chunks(input_path, settings.chunk_size)
    parts_dir = output_path.with_name(output_path.name + ".parts")
    run = {"model": str(model_dir.resolve()), "input": fingerprint, "settings": asdict(settings)}
    del run["settings"]["threads"]  # threads do not change the outputs
    _open_parts_dir(parts_dir, run)
    todo = [chunk for chunk in chunks if not part_path(parts_dir, chunk.index).exists()]
    total = sum(chunk.rows for chunk in chunks)
    bar = tqdm(
        total=total,
        initial=total - sum(c.rows for c in todo),
        desc="reformulate",
        unit="query",
        disable=not progress,
    )
    try:
        if todo and ray_address is None:
            reformulator = ChunkReformulator(
                str(model_dir), str(input_path), str(parts_dir), asdict(settings)
            )
            for chunk in todo:
                bar.update(reformulator.run(chunk))
        elif todo:
            for rows in _run_on_ray(model_dir, input_path, parts_dir, settings, todo, ray_address, workers):
                bar.update(rows)
    finally:
        bar.close()
    decoded_seconds = time.perf_counter() - started
    tmp = output_path.with_name(output_path.name + ".tmp")
    schema = pq.read_schema(part_path(parts_dir, 0)) if chunks else None
    if schema is None:
        import pyarrow as pa

        pq.write_table(pa.table({name: pa.array([], pa.string()) for name in ("id", "input", "output")}), tmp)
    else:
        with pq.ParquetWriter(tmp, schema) as writer:
            for chunk in chunks:  # one part in memory at a time
                writer.write_table(pq.read_table(part_path(parts_dir, chunk.index)))
    os.replace(tmp, output_path)
    remove_tree(parts_dir)
    seconds = time.perf_counter() - started
    done_now = sum(c.rows for c in todo)
    return {
        "rows": total,
        "rows_this_run": done_now,
        "chunks": len(chunks),
        "chunks_resumed": len(chunks) - len(todo),
        "seconds": seconds,
        "queries_per_second": done_now / decoded_seconds if decoded_seconds > 0 else float("nan"),
        "ray": ray_address is not None,
        "workers": workers if ray_address is not None else 1,
    }


def _run_on_ray(
    model_dir: Path,
    input_path: Path,
    parts_dir: Path,
    settings: ReformulationSettings,
    todo: list[Chunk],
    ray_address: str,
    workers: int,
) -> Iterator[int]:
    """The chunks of ``todo`` through Ray Data: a dataset of chunk rows, ``map_batches`` on ``workers``
    actors of :class:`ChunkReformulator` (one chunk per call); yields each chunk's rows as it finishes."""
    ray = ensure_ray(ray_address)
    # one block per chunk: the actors share the chunks (in one block, one actor would take them all)
    dataset = ray.data.from_items([asdict(chunk) for chunk in todo], override_num_blocks=len(todo))
    results = dataset.map_batches(
        ChunkReformulator,
        fn_constructor_args=(str(model_dir), str(input_path), str(parts_dir), asdict(settings)),
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
    )
    for row in results.iter_rows():
        yield int(row["rows"])


def print_summary(summary: dict[str, Any], output: str | os.PathLike) -> None:
    print(
        f"{summary['rows']:,} queries in {output} ({summary['rows_this_run']:,} decoded now in "
        f"{summary['seconds']:.1f} s: {summary['queries_per_second']:,.1f} queries/s"
        + (f", {summary['chunks_resumed']} chunks from a previous run" if summary["chunks_resumed"] else "")
        + ")",
        file=sys.stderr,
    )
