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
a property test checks the two against each other.
"""

from __future__ import annotations

import re
import string

import numpy as np

from hf_querygen.corpora._base import normalize_for_matching

MAX_TERM_BYTES = 256

# ASCII: apostrophe and backtick are deleted (they are in the library's apostrophe set), every other
# ASCII punctuation/symbol (all of string.punctuation is Unicode P* or S*) becomes a space. NFKC is the
# identity on ASCII and casefold() equals lower() there.
_ASCII_DELETE = b"'`"
_ASCII_TABLE = bytes(
    ord(" ") if chr(i) in string.punctuation and chr(i) not in "'`" else i for i in range(256)
)


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


# a term of MAX_TERM_BYTES ASCII characters or more: ``\s`` is exactly what ``str.split()`` splits on
_LONG_ASCII_TERM = re.compile(rf"\S{{{MAX_TERM_BYTES}}}")


def _index_texts(texts: list[str], caller: str) -> tuple[list[str], list[list[str] | None]]:
    """(index_texts, terms) of a chunk: ``terms[i]`` is None where ``index_texts[i].split()`` gives
    ``analyze(texts[i])`` (the ASCII fast path: one ``bytes.translate`` over all its documents), else the
    analysed terms (the general path, their index text the terms joined by spaces)."""
    try:
        # one C-level pass over the chunk checks every type (instead of one isinstance per document)
        joined = _SEPARATOR.join(texts)
    except TypeError:
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{caller}: text {i} is {type(text).__name__}, not a string") from None
        raise
    terms: list = [None] * len(texts)
    index_texts: list = [None] * len(texts)
    if joined.isascii():  # the common case: every document ASCII, no per-document test
        fast: list[int] | range = range(len(texts))
        slow: list[int] = []
    else:  # the ASCII documents, found in C (map, numpy) rather than a Python loop
        ascii_docs = np.fromiter(map(str.isascii, texts), dtype=bool, count=len(texts))
        fast, slow = np.flatnonzero(ascii_docs).tolist(), np.flatnonzero(~ascii_docs).tolist()
        joined = _SEPARATOR.join(map(texts.__getitem__, fast))
    if (
        fast
        and joined.count(_SEPARATOR) == len(fast) - 1
        and not any(c in joined for c in _NOT_TANTIVY_WHITESPACE if c != _SEPARATOR)
    ):
        normalized = joined.encode("ascii").translate(_ASCII_TABLE, _ASCII_DELETE).lower().decode("ascii")
        pieces = normalized.split(_SEPARATOR)
        if isinstance(fast, range):
            index_texts = pieces
        else:
            for i, text in zip(fast, pieces, strict=True):
                index_texts[i] = text
        # only a document of MAX_TERM_BYTES characters or more can hold a term that long (rare): those
        # documents drop their long terms in the general path
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        slow += [
            fast[j]
            for j in np.flatnonzero(lengths >= MAX_TERM_BYTES).tolist()
            if _LONG_ASCII_TERM.search(pieces[j])
        ]
    else:
        slow = range(len(texts))
    for i in slow:
        terms[i] = analyze(texts[i])
        index_texts[i] = " ".join(terms[i])
    return index_texts, terms


def analyze_many(texts: list[str]) -> tuple[list[list[str]], list[str]]:
    """``([analyze(t) for t in texts], index_texts)``, fast for ASCII: one ``bytes.translate`` over
    all ASCII documents of the chunk instead of one per document (the others go one by one).

    ``index_texts[i]`` is what tantivy indexes for document ``i``: text whose tantivy whitespace
    tokens are exactly ``analyze(texts[i])`` (the normalised text itself when that holds, else the
    terms joined by spaces). Raises ``TypeError`` naming the first non-string.
    """
    index_texts, terms = _index_texts(texts, "analyze_many")
    return [text.split() if t is None else t for text, t in zip(index_texts, terms, strict=True)], index_texts


class TermIds(dict):
    """term -> id, a term never seen before numbered ``len`` at its first lookup (ids in order of first
    occurrence, ``list(term_ids)`` is the vocabulary)."""

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self)
        return term_id


def analyze_chunk(texts: list[str], vocab: TermIds) -> tuple[list[str], np.ndarray, np.ndarray]:
    """A chunk's analysis for the index: ``(index_texts, term_ids, lengths)``, every document's term ids
    in order (int32; terms new to ``vocab`` added in order of first occurrence) and its term count.

    ``index_texts`` as :func:`analyze_many`; their terms are split, de-duplicated and counted in Arrow
    (C++), so Python code runs once per distinct term of the chunk rather than once per token. The split
    is ``str.split()``'s: an index text's whitespace is ASCII whitespace that Arrow splits on too (the
    characters where the two differ send a chunk to the per-document path, which joins terms with
    spaces). Raises ``TypeError`` naming the first non-string.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    index_texts, _ = _index_texts(texts, "analyze_chunk")
    trimmed = pc.ascii_trim_whitespace(pa.array(index_texts, type=pa.string()))
    split = pc.ascii_split_whitespace(trimmed)
    lengths = pc.list_value_length(split).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(split)
    empty = pc.equal(pc.binary_length(trimmed), 0).to_numpy(zero_copy_only=False)
    if empty.any():  # Arrow splits "" into [""], str.split() into []
        lengths[empty] = 0
        flat = pc.filter(flat, pc.not_equal(flat, ""))
    encoded = pc.dictionary_encode(flat)  # the distinct terms in order of first occurrence
    distinct = encoded.dictionary.to_pylist()
    ids = np.fromiter(map(vocab.__getitem__, distinct), dtype=np.int32, count=len(distinct))
    return index_texts, ids[encoded.indices.to_numpy(zero_copy_only=False)], lengths
