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

import string

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


def analyze_many(texts: list[str]) -> tuple[list[list[str]], list[str]]:
    """``([analyze(t) for t in texts], index_texts)``, fast for ASCII: one ``bytes.translate`` over
    all ASCII documents of the chunk instead of one per document (the others go one by one).

    ``index_texts[i]`` is what tantivy indexes for document ``i``: text whose tantivy whitespace
    tokens are exactly ``analyze(texts[i])`` (the normalised text itself when that holds, else the
    terms joined by spaces). Raises ``TypeError`` naming the first non-string.
    """
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"analyze_many: text {i} is {type(text).__name__}, not a string")
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
            terms[i] = text.split()
    for i, text in enumerate(texts):
        if terms[i] is None:
            terms[i] = analyze(text)
            index_texts[i] = " ".join(terms[i])
    return terms, index_texts
