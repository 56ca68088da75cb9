"""The tantivy side of an index: the schema (analysed terms with frequencies, a fast ``row`` field), the
whitespace analyzer over text already analysed by :func:`~hf_querygen.retrieval.analysis.analyze`,
opening a folder (read-only ones too) and tantivy's own BM25 top-k. The index itself is
:class:`hf_querygen.retrieval.Index`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .analysis import place_rows

if TYPE_CHECKING:
    import pyarrow as pa

ANALYZER_NAME = "hf_querygen_terms"  # whitespace split of text already analysed by analysis.analyze
TEXT_FIELD = "text"
ROW_FIELD = "row"


def import_tantivy():
    """The tantivy module, imported on first use (``import hf_querygen.retrieval`` stays cheap)."""
    import tantivy

    return tantivy


def build_schema():
    """One text field of analysed terms (frequencies, no positions) and the fast ``row`` field."""
    tantivy = import_tantivy()
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(ROW_FIELD, stored=False, indexed=False, fast=True)
    # Frequencies only: positions for SDM come from the sidecar, so tantivy need not store them.
    builder.add_text_field(TEXT_FIELD, stored=False, tokenizer_name=ANALYZER_NAME, index_option="freq")
    return builder.build()


def register_analyzer(tantivy_index) -> None:
    """Register the whitespace analyzer the schema names (needed again at every open)."""
    tantivy = import_tantivy()
    tantivy_index.register_tokenizer(
        ANALYZER_NAME, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
    )


# what a JSON string may not hold unescaped (RFC 8259 section 7)
_JSON_UNSAFE = r'[\x00-\x1f"\\]'


def json_documents(index_texts: pa.Array, first_row: int) -> list[str]:
    """One tantivy JSON document per analysed text, ``{"row": first_row + i, "text": "..."}``, built in
    Arrow: a document costs tantivy one ``add_json`` call instead of four Python calls (``Document``,
    ``add_unsigned``, ``add_text``, ``add_document``). ``index_texts``: an Arrow string array; a text
    holding a character JSON must escape (a control character inside a term) is escaped by
    :func:`json.encoder.encode_basestring` (C), only that text. The build's Arrow path; the C module
    (:mod:`hf_querygen.retrieval.native`) writes the same lines itself."""
    import pyarrow as pa
    import pyarrow.compute as pc

    unsafe: np.ndarray = np.zeros(0, dtype=np.int64)
    data = index_texts.buffers()[-1]  # the characters of every text (and possibly unused bytes)
    characters = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    # a scan of the bytes (~10x faster than the regex), then the regex finds the texts when one is there
    if (characters < 0x20).any() or (characters == ord('"')).any() or (characters == ord("\\")).any():
        matches = pc.match_substring_regex(index_texts, _JSON_UNSAFE)
        unsafe = np.flatnonzero(matches.to_numpy(zero_copy_only=False))
    if len(unsafe):
        from json.encoder import encode_basestring

        escaped = [encode_basestring(text)[1:-1] for text in index_texts.take(pa.array(unsafe)).to_pylist()]
        everything = np.arange(len(index_texts))
        index_texts = place_rows(
            len(index_texts), (everything, index_texts), (unsafe, pa.array(escaped, type=index_texts.type))
        )
    rows = pa.array(np.arange(first_row, first_row + len(index_texts), dtype=np.uint64)).cast(
        pa.large_string()
    )
    pieces = ['{"' + ROW_FIELD + '":', rows, ',"' + TEXT_FIELD + '":"', index_texts.cast(rows.type), '"}']
    large = [pa.scalar(piece, rows.type) if isinstance(piece, str) else piece for piece in pieces]
    documents = pc.binary_join_element_wise(*large, pa.scalar("", rows.type))
    return documents.to_pylist()


def tantivy_bm25(
    searcher, schema, terms: list[str], term_ids: list[int], limit: int, num_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """tantivy's own BM25 top-``limit`` (WAND) over the terms that occur in the collection (``term_id``
    >= 0): ``(rows, scores)``, best first, ties by row, whatever the number of segments.

    tantivy breaks ties by segment and address within it, which follows the row only in a one-segment
    index (a multi-threaded or large build has several). So one more document than asked is fetched:
    when it ties with the ``limit``-th score, every document tied there is fetched (a larger fetch until
    one past the tie; ``num_docs`` caps it, as tantivy aborts on a limit far above the collection size)
    and the cut is made by (score, row). An untied boundary costs one extra hit, a tied one a second
    search."""
    tantivy = import_tantivy()
    clauses = [
        (tantivy.Occur.Should, tantivy.Query.term_query(schema, TEXT_FIELD, term))
        for term, term_id in zip(terms, term_ids, strict=True)
        if term_id >= 0
    ]
    query = tantivy.Query.boolean_query(clauses)
    fetch = min(limit + 1, max(num_docs, 1))
    while True:
        hits = searcher.search(query, limit=fetch, count=False).hits
        if len(hits) <= limit or hits[-1][0] < hits[limit - 1][0] or fetch >= num_docs:
            break
        # tied groups are often larger than a few documents (duplicates, tantivy's quantised lengths):
        # one generous second fetch rather than many small ones
        fetch = min(max(fetch * 4, 64), num_docs)
    if not hits:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = np.asarray(searcher.fast_field_values(ROW_FIELD, [address for _, address in hits]), dtype=np.int64)
    scores = np.asarray([score for score, _ in hits], dtype=np.float64)
    order = np.lexsort((rows, -scores))[:limit]
    return rows[order], scores[order]


def open_tantivy(tantivy_dir: Path):
    """Open the tantivy index; in a folder we cannot write (read-only mount, permissions) through a
    temporary folder of links to its files, since tantivy insists on creating a lock file beside them.
    Returns ``(tantivy_index, shadow)``; ``shadow`` (a TemporaryDirectory or None) must outlive it."""
    tantivy = import_tantivy()
    if not tantivy_dir.is_dir():
        raise OSError(f"{tantivy_dir} is not a folder")
    if os.access(tantivy_dir, os.W_OK):
        try:
            return tantivy.Index.open(str(tantivy_dir)), None
        except ValueError as err:
            if "lock" not in str(err).lower():
                raise
    import tempfile

    shadow = tempfile.TemporaryDirectory(prefix="hf-querygen-index-")
    for entry in tantivy_dir.iterdir():
        if entry.name not in (".tantivy-meta.lock", ".tantivy-writer.lock"):
            os.symlink(entry.resolve(), Path(shadow.name) / entry.name)
    return tantivy.Index.open(shadow.name), shadow
