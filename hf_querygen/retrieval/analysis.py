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

import operator
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


def _index_texts(texts: list[str], caller: str) -> tuple[list[str], list[list[str] | None]]:
    """(index_texts, terms) of a chunk: ``terms[i]`` is None where ``index_texts[i].split()`` gives
    ``analyze(texts[i])`` (the ASCII fast path: one ``bytes.translate`` over all its documents), else the
    analysed terms (the general path, their index text the terms joined by spaces)."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{caller}: text {i} is {type(text).__name__}, not a string")
    terms: list = [None] * len(texts)
    index_texts: list = [None] * len(texts)
    fast = [i for i, text in enumerate(texts) if text.isascii() and len(text) < MAX_TERM_BYTES]
    joined = _SEPARATOR.join([texts[i] for i in fast])
    if (
        fast
        and joined.count(_SEPARATOR) == len(fast) - 1
        and not any(c in joined for c in _NOT_TANTIVY_WHITESPACE if c != _SEPARATOR)
    ):
        normalized = joined.encode("ascii").translate(_ASCII_TABLE, _ASCII_DELETE).lower().decode("ascii")
        for i, text in zip(fast, normalized.split(_SEPARATOR), strict=True):
            index_texts[i] = text
    for i, text in enumerate(texts):
        if index_texts[i] is None:
            terms[i] = analyze(text)
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


#: separates documents in :func:`analyze_chunk`'s flat term list: not whitespace for ``str.split``, and
#: a chunk whose texts contain it takes the per-document count instead
DOCUMENT_MARK = "\x00"


def analyze_chunk(texts: list[str]) -> tuple[list[str], list[str], list[int] | None]:
    """A chunk's terms without a list per document: ``(flat, index_texts, lengths)``.

    ``flat`` is every document's terms in order, documents separated by :data:`DOCUMENT_MARK` (one
    ``str.split`` over the joined index texts, in C); ``lengths`` is None then (the marks give them).
    If a text contains the mark itself, ``flat`` has no marks and ``lengths`` are the per-document term
    counts. ``index_texts`` as :func:`analyze_many`. Raises ``TypeError`` naming the first non-string.
    """
    index_texts, _ = _index_texts(texts, "analyze_chunk")
    separator = f" {DOCUMENT_MARK} "
    joined = separator.join(index_texts)
    if joined.count(DOCUMENT_MARK) == len(index_texts) - 1:
        return joined.split(), index_texts, None
    flat_terms = [text.split() for text in index_texts]
    return [term for terms in flat_terms for term in terms], index_texts, [len(t) for t in flat_terms]


def chunk_term_ids(vocab: dict[str, int], terms: list[str], marked: bool) -> np.ndarray:
    """Ids of ``terms`` (:func:`analyze_chunk`'s ``flat``, every term in ``vocab``) in one C-level lookup;
    with ``marked`` the document marks among them get -1 (a real term spelled like the mark, from an
    earlier chunk, keeps its id)."""
    if not terms:
        return np.zeros(0, dtype=np.int32)
    real = vocab.get(DOCUMENT_MARK)
    if marked:
        vocab[DOCUMENT_MARK] = -1
    try:
        ids = operator.itemgetter(*terms)(vocab)
    finally:
        if marked:
            if real is None:
                del vocab[DOCUMENT_MARK]
            else:
                vocab[DOCUMENT_MARK] = real
    return np.array(ids if len(terms) > 1 else [ids], dtype=np.int32)
