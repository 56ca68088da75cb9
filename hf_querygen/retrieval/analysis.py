"""The retrieval analyzer: the library's one normalisation, split into index terms.

Documents and queries go through :func:`analyze`, which returns exactly
``normalize_for_matching(text).split()`` (NFKC, case-folded, apostrophes deleted, every other
punctuation or symbol character -- ``_`` included, it is Unicode ``Pc`` -- a word boundary; no
stemming, no stopword list), minus terms of :data:`MAX_TERM_BYTES` UTF-8 bytes or more (tantivy
cannot index a term longer than 65,530 bytes; the same terms are dropped on both sides so the
tantivy index and the sidecar statistics always agree). The analysed text is handed to tantivy
joined with single spaces and indexed with a whitespace-only tokenizer, so tantivy never splits a
term differently from this function (its default tokenizer would split on ``_`` and lower-case by
its own rules).

ASCII text takes a fast path (``bytes.translate``) that gives the same result as the general path;
a property test checks the two against each other. The index build analyses documents in chunks
(:func:`analyze_chunk`): one ``bytes.translate`` over the chunk's ASCII documents, split into documents
and terms, dictionary-encoded and counted by Arrow, and numbered across chunks by Arrow's dictionary
unification (:class:`TermNumbering`): no Python code runs per ASCII document, per term or per token.
Where the optional C module is compiled (:mod:`hf_querygen.retrieval.native`), the build uses it
instead (:func:`native_chunk_encoder`): the same analysis, term ids and tantivy documents in one pass
over the characters, with the GIL released (tested against :func:`analyze` and the Arrow path).
"""

from __future__ import annotations

import re
import string
from typing import TYPE_CHECKING

import numpy as np

from hf_querygen.corpora._base import normalize_for_matching

from .native import load_native

if TYPE_CHECKING:
    import pyarrow as pa

MAX_TERM_BYTES = 256

# ASCII: apostrophe and backtick are deleted (they are in the library's apostrophe set), every other
# ASCII punctuation/symbol (all of string.punctuation is Unicode P* or S*) becomes a space. NFKC is the
# identity on ASCII and casefold() equals lower() there.
_ASCII_DELETE = b"'`"
_ASCII_TABLE = bytes(
    ord(" ") if chr(i) in string.punctuation and chr(i) not in "'`" else i for i in range(256)
)


def _ascii_actions() -> bytes:
    """What :func:`analyze`'s ASCII path does with each of the 128 ASCII characters, for the C module
    (derived from ``_ASCII_TABLE`` and ``_ASCII_DELETE``, so the two paths share one definition): the
    character it becomes (lower-cased), 254 for a word boundary (whitespace as ``str.split()`` has it, or
    punctuation), 255 for a deleted character."""
    actions = bytearray(128)
    for i in range(128):
        kept = chr(_ASCII_TABLE[i])
        actions[i] = 255 if i in _ASCII_DELETE else 254 if kept.isspace() else ord(kept.lower())
    return bytes(actions)


#: the C module's ASCII table (:func:`_ascii_actions`)
ASCII_ACTIONS = _ascii_actions()


def native_chunk_encoder():
    """A new ``_native.ChunkEncoder`` (see ``_native.c``): ``encode(texts, first_row, caller) ->
    (tantivy JSON lines, int32 term ids as bytes, int64 lengths as bytes)`` over chunks, term ids in order
    of first occurrence across them, ``vocabulary()`` at the end. ``None`` where the C module is not there
    (:func:`~hf_querygen.retrieval.native.load_native`): callers then use :func:`analyze_chunk`."""
    native = load_native()
    return None if native is None else native.ChunkEncoder(analyze, MAX_TERM_BYTES, ASCII_ACTIONS)


def analyze(text: str) -> list[str]:
    """Index terms of ``text`` (see the module docstring); ``[]`` for empty or punctuation-only text.

    Raises ``TypeError`` naming the type when ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"analyze: expected a string, got {type(text).__name__}")
    if text.isascii():
        terms = text.encode("ascii").translate(_ASCII_TABLE, _ASCII_DELETE).lower().decode("ascii").split()
        if len(text) >= MAX_TERM_BYTES and any(len(term) >= MAX_TERM_BYTES for term in terms):
            terms = [term for term in terms if len(term) < MAX_TERM_BYTES]
        return terms
    return [
        term for term in normalize_for_matching(text).split() if len(term.encode("utf-8")) < MAX_TERM_BYTES
    ]


# Python's str.split() treats these ASCII characters as whitespace, tantivy's whitespace tokenizer does
# not; a chunk holding one takes the per-document path, whose index text is re-joined with spaces.
_NOT_TANTIVY_WHITESPACE = ("\x0b", "\x1c", "\x1d", "\x1e", "\x1f")
_SEPARATOR = "\x1e"

# The chunk path's table: as _ASCII_TABLE, and the whitespace both splitters agree on (tab, newline,
# carriage return, form feed) becomes a space, so that an index text needs no JSON escaping unless it
# holds a control character that is part of a term (rare; tantivy_backend escapes those documents).
_CHUNK_TABLE = bytes(ord(" ") if chr(i) in "\t\n\r\x0c" else b for i, b in enumerate(_ASCII_TABLE))

# a term of MAX_TERM_BYTES ASCII characters or more: ``\s`` is exactly what ``str.split()`` splits on
_LONG_ASCII_TERM = re.compile(rf"\S{{{MAX_TERM_BYTES}}}")


def _index_text_array(texts: list[str], caller: str) -> pa.Array:
    """The chunk's index texts as one Arrow string array: text ``i``'s whitespace-split terms are
    ``analyze(texts[i])``, its whitespace only ASCII whitespace that tantivy's whitespace tokenizer,
    Arrow's ``ascii_split_whitespace`` and ``str.split()`` all split on.

    The ASCII documents (the common case) take one ``bytes.translate`` over the whole chunk, split into
    documents by Arrow, no Python string per document; non-ASCII documents, documents holding a
    character on which the splitters disagree, and ASCII documents with a term of ``MAX_TERM_BYTES`` or
    more go through :func:`analyze` one by one (their terms joined by spaces) and are put in place by
    one Arrow ``take``. Raises ``TypeError`` naming the first non-string."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        # one C-level pass over the chunk checks every type (instead of one isinstance per document)
        joined = _SEPARATOR.join(texts)
    except TypeError:
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{caller}: text {i} is {type(text).__name__}, not a string") from None
        raise
    if joined.isascii():  # every document ASCII: no per-document test
        fast = np.arange(len(texts))
    else:  # the ASCII documents, found in C (map, numpy) rather than a Python loop
        fast = np.flatnonzero(np.fromiter(map(str.isascii, texts), dtype=bool, count=len(texts)))
        joined = _SEPARATOR.join(map(texts.__getitem__, fast.tolist()))
    if not (
        len(fast)
        and joined.count(_SEPARATOR) == len(fast) - 1
        and not any(c in joined for c in _NOT_TANTIVY_WHITESPACE if c != _SEPARATOR)
    ):
        fast = fast[:0]
    slow = np.setdiff1d(np.arange(len(texts)), fast, assume_unique=True)
    fast_texts = pa.array([], type=pa.large_string())
    if len(fast):
        normalized = joined.encode("ascii").translate(_CHUNK_TABLE, _ASCII_DELETE).lower()
        # large (64-bit offsets): a chunk of long documents may pass 2 GiB
        pieces = pc.split_pattern(pa.array([normalized], type=pa.large_binary()), _SEPARATOR.encode("ascii"))
        fast_texts = pc.list_flatten(pieces).cast(pa.large_string())
        # only a document of MAX_TERM_BYTES characters or more can hold a term that long (rare): those
        # documents drop their long terms in the per-document path
        text_lengths = pc.binary_length(fast_texts).to_numpy(zero_copy_only=False)
        candidates = np.flatnonzero(text_lengths >= MAX_TERM_BYTES)
        if len(candidates):
            long_texts = fast_texts.take(pa.array(candidates)).to_pylist()
            long_term = [
                j
                for j, text in zip(candidates.tolist(), long_texts, strict=True)
                if _LONG_ASCII_TERM.search(text)
            ]
            slow = np.union1d(slow, fast[long_term]).astype(np.int64)
    if not len(slow):
        return fast_texts
    slow_texts = pa.array([" ".join(analyze(texts[i])) for i in slow.tolist()], type=pa.large_string())
    return place_rows(len(texts), (fast, fast_texts), (slow, slow_texts))  # the per-document version wins


def place_rows(length: int, *parts: tuple[np.ndarray, pa.Array]) -> pa.Array:
    """An Arrow array of ``length`` rows from ``(rows, values)`` parts, ``values[k]`` at row ``rows[k]``:
    one ``take`` over the parts' concatenation. Every row comes from some part; where parts overlap, the
    later one wins."""
    import pyarrow as pa

    where = np.empty(length, dtype=np.int64)
    start = 0
    for rows, values in parts:
        where[rows] = start + np.arange(len(rows))
        start += len(values)
    return pa.concat_arrays([values for _, values in parts]).take(pa.array(where))


def analyze_many(texts: list[str]) -> tuple[list[list[str]], list[str]]:
    """``([analyze(t) for t in texts], index_texts)``: the chunk path of :func:`analyze_chunk` (one
    ``bytes.translate`` over all ASCII documents instead of one per document), as Python lists.

    ``index_texts[i]`` is what tantivy indexes for document ``i``: text whose tantivy whitespace
    tokens are exactly ``analyze(texts[i])``. Raises ``TypeError`` naming the first non-string.
    """
    index_texts = _index_text_array(texts, "analyze_many").to_pylist()
    return [text.split() for text in index_texts], index_texts


def analyze_chunk(texts: list[str]) -> tuple[pa.Array, pa.DictionaryArray, np.ndarray]:
    """A chunk's analysis for the index: ``(index_texts, terms, lengths)``: every document's terms in order,
    dictionary-encoded (the chunk's distinct terms in order of first occurrence; numbered across chunks by
    :class:`TermNumbering`), and each document's term count.

    ``index_texts``: an Arrow string array (see :func:`analyze_many`); their terms are split,
    de-duplicated and counted in Arrow (C++): no Python code runs per token, term or document.
    Raises ``TypeError`` naming the first non-string.
    """
    import pyarrow.compute as pc

    index_texts = _index_text_array(texts, "analyze_chunk")
    trimmed = pc.ascii_trim_whitespace(index_texts)
    split = pc.ascii_split_whitespace(trimmed)
    lengths = pc.list_value_length(split).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(split)
    empty = pc.equal(pc.binary_length(trimmed), 0).to_numpy(zero_copy_only=False)
    if empty.any():  # Arrow splits "" into [""], str.split() into []
        lengths[empty] = 0
        flat = pc.filter(flat, pc.not_equal(flat, ""))
    return index_texts, pc.dictionary_encode(flat), lengths


class TermNumbering:
    """Term ids over a collection's chunks, in order of first occurrence (``vocabulary[i]`` is term ``i``).

    Chunks' dictionary-encoded terms (:func:`analyze_chunk`) are numbered by Arrow's dictionary
    unification (C++), with the vocabulary so far as the first dictionary, so that its terms keep their
    ids and new ones follow in order of appearance: every ``UNIFY_EVERY`` chunks (which bounds the chunk
    dictionaries held) and at the end. No Python dictionary lookup per term."""

    #: chunks whose dictionaries wait for the next unification
    UNIFY_EVERY = 64

    def __init__(self) -> None:
        import pyarrow as pa

        self._vocabulary = pa.array([], type=pa.large_string())
        self._pending: list = []
        self._ids: list[np.ndarray] = []

    def add(self, terms: pa.DictionaryArray) -> None:
        self._pending.append(terms)
        if len(self._pending) >= self.UNIFY_EVERY:
            self._unify()

    def _unify(self) -> None:
        import pyarrow as pa

        if not self._pending:
            return
        vocabulary = pa.DictionaryArray.from_arrays(pa.array([], type=pa.int32()), self._vocabulary)
        pending = [terms.cast(vocabulary.type) for terms in self._pending]
        unified = pa.chunked_array([vocabulary, *pending]).unify_dictionaries()
        self._vocabulary = unified.chunks[0].dictionary
        self._ids.extend(
            chunk.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
            for chunk in unified.chunks[1:]
        )
        self._pending = []

    def result(self) -> tuple[list[str], np.ndarray]:
        """``(vocabulary, term_ids)``: the terms by id, and every token's id (int32), chunks concatenated."""
        self._unify()
        ids = np.concatenate(self._ids) if self._ids else np.zeros(0, dtype=np.int32)
        return self._vocabulary.to_pylist(), ids
