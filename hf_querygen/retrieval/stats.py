"""Collection statistics kept beside the tantivy index (tantivy's Python API exposes neither
collection frequencies nor positions, and SDM needs both).

All arrays are flat numpy arrays, saved one ``.npy`` per array in ``<index>/stats/`` and opened
memory-mapped, so reopening an index costs milliseconds whatever its size. With ``D`` documents,
``V`` distinct terms and ``|C|`` term occurrences (tokens):

* ``tokens``       (|C|,)  int32  term id of every token, documents concatenated in row order
* ``doc_offsets``  (D+1,)  int64  document ``d`` holds ``tokens[doc_offsets[d]:doc_offsets[d+1]]``
* ``pos_ptr``      (V+1,)  int64  term ``t``'s occurrences are ``positions[pos_ptr[t]:pos_ptr[t+1]]``
* ``positions``    (|C|,)  int64  global token positions grouped by term, ascending within a term
* ``pos_doc``      (|C|,)  int32  the document of each entry of ``positions``
* ``doc_ptr``      (V+1,)  int64  term ``t``'s postings are ``post_docs/post_tfs[doc_ptr[t]:doc_ptr[t+1]]``
* ``post_docs``    (P,)    int32  documents containing the term, ascending
* ``post_tfs``     (P,)    int32  tf(t, d) for each posting

plus ``vocab.txt`` (one term per line, line ``i`` = term id ``i``; terms never contain whitespace), and,
when the collection has terms at least ``PAIR_MIN_CF`` frequent, the window counts of their pairs
(the windows that are expensive to count at query time: every occurrence of the rarer term is read):

* ``pair_terms``   (F,)       int32  the frequent terms (at most ``PAIR_MAX_TERMS``), ascending ids
* ``pair_reaches`` (R,)       int64  the reaches counted (1: ``#1``; ``SDM_WINDOW - 1``: ``#uw8``)
* ``pair_follow``  (R, F, F)  int64  ``[r, i, j]``: positions holding ``pair_terms[i]`` with
  ``pair_terms[j]`` at one of the ``pair_reaches[r]`` positions after it in the same document
Collection frequency ``cf(t) = pos_ptr[t+1] - pos_ptr[t]``, document frequency
``df(t) = doc_ptr[t+1] - doc_ptr[t]``, ``|D| = doc_offsets[d+1] - doc_offsets[d]``.

Window counts (``#1(a b)``, ``#uwN(a b)``, Metzler & Croft 2005 / Indri) are computed exactly from
``positions`` by :meth:`CollectionStats.window_matches`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hf_querygen.errors import ModelFolderError

from .manifest import Digests
from .native import load_native

ARRAYS = ("tokens", "doc_offsets", "pos_ptr", "positions", "pos_doc", "doc_ptr", "post_docs", "post_tfs")
#: optional (an index without frequent terms has none: its windows are counted exactly)
PAIR_ARRAYS = ("pair_terms", "pair_reaches", "pair_follow")
VOCAB_FILE = "vocab.txt"
#: a term enters the pair table from this collection frequency on: below it, counting a window from the
#: term's occurrences at query time costs well under a millisecond
PAIR_MIN_CF = 5000
#: at most this many terms (the most frequent): 2 x 512 x 512 int64 counts = 4 MiB on disk
PAIR_MAX_TERMS = 512
#: the reaches of SDM's default expressions: #1 (the next position) and #uw8 (the 7 after a start)
PAIR_REACHES = (1, 7)
#: token positions per block while the pair table is counted
PAIR_BLOCK = 1 << 20


class CollectionStats:
    """Term, window and length statistics of a collection (see the module docstring for the arrays)."""

    def __init__(self, vocab: Sequence[str], arrays: dict[str, np.ndarray], window_cache_size: int = 4096):
        self.vocab = list(vocab)
        self.term_ids = {term: i for i, term in enumerate(self.vocab)}
        for name in ARRAYS:
            # a plain ndarray view of a memmap: numpy's memmap subclass makes every slice and gather
            # pay a Python-level __getitem__/__array_finalize__ (measured: 60% of SDM time at 1M docs)
            setattr(self, name, np.asarray(arrays[name]))
        self.num_docs = len(self.doc_offsets) - 1
        self.num_tokens = int(self.doc_offsets[-1]) if self.num_docs else 0
        self.doc_lengths = np.diff(self.doc_offsets)
        self.pair_terms = np.asarray(arrays.get("pair_terms", np.zeros(0, dtype=np.int32)))
        self.pair_reaches = np.asarray(arrays.get("pair_reaches", np.zeros(0, dtype=np.int64)))
        self.pair_follow = np.asarray(arrays.get("pair_follow", np.zeros((0, 0, 0), dtype=np.int64)))
        #: term id -> its row in the pair table; reach -> its layer
        self._pair_slot = {int(t): i for i, t in enumerate(self.pair_terms)}
        self._pair_layer = {int(r): i for i, r in enumerate(self.pair_reaches)}
        self._window_cache: OrderedDict[tuple, tuple[int, np.ndarray]] = OrderedDict()
        self._window_cache_size = window_cache_size
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_token_ids(
        cls,
        vocab: Sequence[str],
        tokens: np.ndarray,
        doc_lengths: np.ndarray,
        pair_min_cf: int | None = None,
    ) -> CollectionStats:
        """Build every array from the concatenated term ids ``tokens`` (|C|,) and ``doc_lengths`` (D,).

        ``pair_min_cf``: the collection frequency from which terms enter the pair table (default
        ``PAIR_MIN_CF``)."""
        tokens = np.ascontiguousarray(tokens, dtype=np.int32)
        doc_lengths = np.ascontiguousarray(doc_lengths, dtype=np.int64)
        num_docs, vocab_size = len(doc_lengths), len(vocab)
        doc_offsets = np.zeros(num_docs + 1, dtype=np.int64)
        np.cumsum(doc_lengths, out=doc_offsets[1:])
        positions, pos_doc, pos_ptr, post_docs, post_tfs, doc_ptr = _positions_and_postings(
            tokens, doc_lengths, vocab_size
        )
        arrays = {
            "tokens": tokens,
            "doc_offsets": doc_offsets,
            "pos_ptr": pos_ptr,
            "positions": positions,
            "pos_doc": pos_doc,
            "doc_ptr": doc_ptr,
            "post_docs": post_docs,
            "post_tfs": post_tfs,
        }
        cf = np.diff(pos_ptr)
        min_cf = PAIR_MIN_CF if pair_min_cf is None else pair_min_cf
        frequent = np.flatnonzero(cf >= max(min_cf, 1))
        if len(frequent):
            frequent = np.sort(frequent[np.argsort(-cf[frequent], kind="stable")[:PAIR_MAX_TERMS]])
            arrays.update(
                _pair_table(tokens, doc_lengths, positions, pos_ptr, frequent.astype(np.int32), vocab_size)
            )
        return cls(vocab, arrays)

    @classmethod
    def from_documents(cls, documents: Iterable[Sequence[str]]) -> CollectionStats:
        """From analysed documents (lists of terms); term ids in order of first occurrence."""
        vocab: dict[str, int] = {}
        ids: list[int] = []
        lengths: list[int] = []
        for terms in documents:
            ids.extend([vocab.setdefault(t, len(vocab)) for t in terms])
            lengths.append(len(terms))
        return cls.from_token_ids(list(vocab), np.array(ids, dtype=np.int32), np.array(lengths))

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | Path, digests: Digests | None = None) -> None:
        """Write the arrays (``.npy``) and the vocabulary; each file's SHA-256 is computed as it is
        written and recorded in ``digests`` (the index manifest's), so no file is read back."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        digests = digests or Digests()
        for name in ARRAYS + (PAIR_ARRAYS if len(self.pair_terms) else ()):
            with digests.writer(folder / f"{name}.npy") as handle:
                np.save(handle, np.ascontiguousarray(getattr(self, name)))
        vocabulary = "".join(term + "\n" for term in self.vocab).encode("utf-8")
        digests.write_bytes(folder / VOCAB_FILE, vocabulary)

    @classmethod
    def load(cls, folder: str | Path) -> CollectionStats:
        """Open saved statistics memory-mapped; a missing or inconsistent file raises
        :class:`~hf_querygen.errors.ModelFolderError` naming it."""
        folder = Path(folder)
        arrays = {}
        names = ARRAYS
        if any((folder / f"{name}.npy").is_file() for name in PAIR_ARRAYS):
            names += PAIR_ARRAYS  # a pair table is all of its files or a broken index
        for name in names:
            path = folder / f"{name}.npy"
            if not path.is_file():
                raise ModelFolderError(f"index statistics file missing: {path}")
            mmap_mode = None if name in PAIR_ARRAYS else "r"  # the pair table is a few MiB: read, not mapped
            try:
                arrays[name] = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
            except (ValueError, OSError, EOFError) as err:
                raise ModelFolderError(f"index statistics file is corrupted: {path} ({err})") from err
        vocab_path = folder / VOCAB_FILE
        if not vocab_path.is_file():
            raise ModelFolderError(f"index statistics file missing: {vocab_path}")
        try:
            text = vocab_path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise ModelFolderError(f"index statistics file is corrupted: {vocab_path} ({err})") from err
        vocab = text.split("\n")[:-1] if text else []
        _check_consistent(folder, vocab, arrays)
        return cls(vocab, arrays)

    # ------------------------------------------------------------------ lookups
    def term_id(self, term: str) -> int:
        """The id of ``term``, or -1 when it never occurs in the collection."""
        return self.term_ids.get(term, -1)

    def cf(self, term_id: int) -> int:
        return 0 if term_id < 0 else int(self.pos_ptr[term_id + 1] - self.pos_ptr[term_id])

    def df(self, term_id: int) -> int:
        return 0 if term_id < 0 else int(self.doc_ptr[term_id + 1] - self.doc_ptr[term_id])

    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """``(docs, tfs)`` of a term: the documents containing it (ascending) and tf in each."""
        if term_id < 0:
            empty = np.zeros(0, dtype=np.int32)
            return empty, empty
        lo, hi = self.doc_ptr[term_id], self.doc_ptr[term_id + 1]
        return self.post_docs[lo:hi], self.post_tfs[lo:hi]

    def term_tf(self, term_id: int, docs: np.ndarray) -> np.ndarray:
        """tf(t, d) for each document in ``docs`` (K,) -> (K,) int64."""
        post_docs, post_tfs = self.postings(term_id)
        return count_lookup(post_docs, post_tfs, docs)

    def document_terms(self, doc: int) -> list[str]:
        return [self.vocab[t] for t in self.tokens[self.doc_offsets[doc] : self.doc_offsets[doc + 1]]]

    # ------------------------------------------------------------------ windows
    def window_matches(self, a: int, b: int, width: int, ordered: bool) -> tuple[int, np.ndarray]:
        """Exact matches of a two-term window expression in the whole collection.

        ``ordered=True``: Indri ``#N(a b)`` for ``width=N`` with N=1 the ``#1`` of SDM: a start
        position holding ``a`` matches when ``b`` occurs within the ``width`` positions after it.
        ``ordered=False``: Indri ``#uwN(a b)`` with ``width=N``: a start position holding ``a`` or ``b``
        matches when the window of ``N`` words starting there (that position and the ``N-1`` after it,
        inside the same document) holds the other term (for ``a == b``: another occurrence).

        Returns ``(cf, docs)``: the number of matching start positions in the collection and the
        document of each match (ascending, one entry per match, so counts per document are tf).
        Cached per expression (least recently used first out).
        """
        key = (a, b, width, ordered) if ordered or a <= b else (b, a, width, ordered)
        with self._lock:
            hit = self._window_cache.get(key)
            if hit is not None:
                self._window_cache.move_to_end(key)
                return hit
        if a < 0 or b < 0:
            result = (0, np.zeros(0, dtype=np.int32))
        else:
            reach = window_reach(width, ordered)
            docs_a = self._starts_followed_by(a, b, reach)
            if not ordered and a != b:
                docs_b = self._starts_followed_by(b, a, reach)
                docs_a = np.sort(np.concatenate([docs_a, docs_b]), kind="stable")
            result = (len(docs_a), docs_a)
        with self._lock:
            self._window_cache[key] = result
            if len(self._window_cache) > self._window_cache_size:
                self._window_cache.popitem(last=False)
        return result

    def _starts_followed_by(self, a: int, b: int, reach: int, side: str = "auto") -> np.ndarray:
        """Documents (one per match, ascending) of the positions p holding ``a`` such that ``b``
        occurs at some q with p < q <= p + reach, q in p's document.

        The work is proportional to the rarer term's occurrences times ``reach``: from ``a``'s side
        (look at the tokens after each p) or from ``b``'s side (look at the tokens before each q, then
        de-duplicate the start positions). ``side`` forces one of them (``"a"``, ``"b"``; for tests).
        """
        cf_a, cf_b = self.cf(a), self.cf(b)
        if reach < 1 or not cf_a or not cf_b:
            return np.zeros(0, dtype=np.int32)
        if side == "auto":
            side = "a" if cf_a <= cf_b or reach > 16 else "b"
        if side == "b":
            lo, hi = self.pos_ptr[b], self.pos_ptr[b + 1]
            qb = self.positions[lo:hi]
            doc_start = self.doc_offsets[self.pos_doc[lo:hi].astype(np.int64)]
            starts = []
            for offset in range(1, reach + 1):
                p = qb - offset
                ok = (p >= doc_start) & (self.tokens[np.maximum(p, 0)] == a)
                starts.append(p[ok])
            matched = np.unique(np.concatenate(starts))  # a start position counts once
            docs = np.searchsorted(self.doc_offsets, matched, side="right") - 1
            return docs.astype(np.int32)
        lo, hi = self.pos_ptr[a], self.pos_ptr[a + 1]
        pa = self.positions[lo:hi]
        docs = self.pos_doc[lo:hi]
        doc_end = self.doc_offsets[docs.astype(np.int64) + 1]  # one past p's document
        if reach <= 16:
            # short windows: look at the tokens after each p directly (monotone gathers, O(reach |A|))
            return np.asarray(docs[self._followed_within(pa, doc_end, b, reach)])
        # long windows: the first occurrence of b after p, by binary search (O(|A| log |B|))
        pb = self.positions[self.pos_ptr[b] : self.pos_ptr[b + 1]]
        nxt_index = np.searchsorted(pb, pa, side="right")
        inside = nxt_index < len(pb)
        nxt = np.full(len(pa), np.iinfo(np.int64).max, dtype=np.int64)
        nxt[inside] = pb[nxt_index[inside]]
        return np.asarray(docs[nxt <= np.minimum(pa + reach, doc_end - 1)])

    def window_cf(self, a: int, b: int, width: int, ordered: bool) -> int:
        """The collection frequency of a window expression (see :meth:`window_matches`): read from the
        pair table when both terms and the reach are in it, else counted exactly."""
        reach = window_reach(width, ordered)
        layer = self._pair_layer.get(reach)
        i, j = self._pair_slot.get(a), self._pair_slot.get(b)
        if layer is None or i is None or j is None:
            return self.window_matches(a, b, width, ordered)[0]
        table = self.pair_follow[layer]
        if ordered or a == b:
            return int(table[i, j])
        return int(table[i, j] + table[j, i])

    def window_tf(
        self, a: int, b: int, width: int, ordered: bool, docs: np.ndarray
    ) -> tuple[int, np.ndarray]:
        """``(cf, tf per document in docs)`` of a window expression (see :meth:`window_matches`).

        tf comes from whichever reads fewer tokens: the given documents' own tokens, or every
        occurrence of the rarer term (the collection-wide matches, cached)."""
        docs = np.asarray(docs, dtype=np.int64)
        if a < 0 or b < 0:
            return 0, np.zeros(len(docs), dtype=np.int64)
        candidate_tokens = int(self.doc_lengths[docs].sum())
        if candidate_tokens > min(self.cf(a), self.cf(b)):
            cf, match_docs = self.window_matches(a, b, width, ordered)
            return cf, count_lookup(match_docs, None, docs)
        reach = window_reach(width, ordered)
        tf = self._followed_in_docs(a, b, reach, docs)
        if not ordered and a != b:
            tf += self._followed_in_docs(b, a, reach, docs)
        return self.window_cf(a, b, width, ordered), tf

    def _followed_in_docs(self, a: int, b: int, reach: int, docs: np.ndarray) -> np.ndarray:
        """Per document of ``docs`` (K,): the positions holding ``a`` with ``b`` at one of the ``reach``
        positions after it, in that document -> (K,) int64 (:meth:`_starts_followed_by`, restricted)."""
        lengths = self.doc_lengths[docs]
        total = int(lengths.sum())
        if not total or reach < 1:
            return np.zeros(len(docs), dtype=np.int64)
        owner = np.repeat(np.arange(len(docs)), lengths)  # (T,) the entry of docs each token belongs to
        first = np.cumsum(lengths) - lengths
        p = self.doc_offsets[docs][owner] + (np.arange(total) - first[owner])  # (T,) global positions
        end = self.doc_offsets[docs + 1][owner]
        holds_a = self.tokens[p] == a
        found = self._followed_within(p[holds_a], end[holds_a], b, reach)
        return np.bincount(owner[holds_a][found], minlength=len(docs)).astype(np.int64)

    def _followed_within(self, positions: np.ndarray, doc_end: np.ndarray, b: int, reach: int) -> np.ndarray:
        """(N,) bool: whether ``b`` occurs at one of the ``reach`` positions after each of ``positions``
        (N,), before its document's end ``doc_end`` (N,, one past the document)."""
        found = np.zeros(len(positions), dtype=bool)
        last = len(self.tokens) - 1
        for offset in range(1, reach + 1):
            q = positions + offset
            found |= (self.tokens[np.minimum(q, last)] == b) & (q < doc_end)
        return found


def window_reach(width: int, ordered: bool) -> int:
    """How many positions after a start a window expression reads: ``#N`` reads N, ``#uwN`` the N-1
    after its first position."""
    return width if ordered else width - 1


def count_lookup(sorted_docs: np.ndarray, counts: np.ndarray | None, docs: np.ndarray) -> np.ndarray:
    """For each of ``docs`` (K,), its count in a posting list.

    ``counts is None``: ``sorted_docs`` holds one entry per occurrence (ascending) and the result is
    the number of entries equal to each doc. Otherwise ``sorted_docs`` is unique and ascending with
    ``counts`` beside it. Returns (K,) int64.
    """
    docs = np.asarray(docs)
    if not len(sorted_docs):
        return np.zeros(len(docs), dtype=np.int64)
    left = np.searchsorted(sorted_docs, docs, side="left")
    if counts is None:
        return (np.searchsorted(sorted_docs, docs, side="right") - left).astype(np.int64)
    inside = left < len(sorted_docs)
    out = np.zeros(len(docs), dtype=np.int64)
    hit = inside.copy()
    hit[inside] = sorted_docs[left[inside]] == docs[inside]
    out[hit] = counts[left[hit]]
    return out


def _positions_and_postings(
    tokens: np.ndarray, doc_lengths: np.ndarray, vocab_size: int
) -> tuple[np.ndarray, ...]:
    """``(positions, pos_doc, pos_ptr, post_docs, post_tfs, doc_ptr)`` (module docstring) from the term ids
    (|C|,) int32 and the document lengths (D,) int64: by the C module where it is compiled (a counting
    sort and one pass per array), else by numpy (the same arrays)."""
    num_docs, num_positions = len(doc_lengths), len(tokens)
    native = load_native()
    if native is not None:
        positions = np.empty(num_positions, dtype=np.int64)
        pos_doc = np.empty(num_positions, dtype=np.int32)
        pos_ptr = np.empty(vocab_size + 1, dtype=np.int64)
        native.sort_positions(tokens, doc_lengths, vocab_size, positions, pos_doc, pos_ptr)
        post_docs = np.empty(num_positions, dtype=np.int32)
        post_tfs = np.empty(num_positions, dtype=np.int32)
        doc_ptr = np.empty(vocab_size + 1, dtype=np.int64)
        num_postings = native.doc_postings(pos_doc, pos_ptr, post_docs, post_tfs, doc_ptr)
        # views, not copies: the pages past num_postings were never written, so they hold no memory
        return positions, pos_doc, pos_ptr, post_docs[:num_postings], post_tfs[:num_postings], doc_ptr
    # Stable sort by term: within a term, global positions stay ascending (and so do documents).
    positions = _stable_argsort(tokens, vocab_size).astype(np.int64, copy=False)
    token_doc = np.repeat(np.arange(num_docs, dtype=np.int32), doc_lengths)
    pos_doc = token_doc[positions]
    pos_ptr = np.zeros(vocab_size + 1, dtype=np.int64)
    np.cumsum(np.bincount(tokens, minlength=vocab_size), out=pos_ptr[1:])
    # Document-level postings: one entry per run of equal (term, doc) in the term-sorted order. The
    # term changes exactly at the pos_ptr boundaries, so no term-sorted copy of the tokens is needed.
    starts = np.ones(num_positions, dtype=bool)
    if num_positions:
        np.not_equal(pos_doc[1:], pos_doc[:-1], out=starts[1:])
        term_starts = pos_ptr[1:-1]
        starts[term_starts[term_starts < num_positions]] = True
    start_index = np.flatnonzero(starts)
    post_docs = pos_doc[start_index]
    post_tfs = np.empty(len(start_index), dtype=np.int32)
    if len(start_index):
        np.subtract(start_index[1:], start_index[:-1], out=post_tfs[:-1], casting="unsafe")
        post_tfs[-1] = num_positions - start_index[-1]
    # every term's runs lie in its own position range, which starts with a run: the runs before
    # pos_ptr[t] are the document postings of the terms before t
    doc_ptr = np.searchsorted(start_index, pos_ptr).astype(np.int64, copy=False)
    return positions, pos_doc, pos_ptr, post_docs, post_tfs, doc_ptr


def _pair_table(
    tokens: np.ndarray,
    doc_lengths: np.ndarray,
    positions: np.ndarray,
    pos_ptr: np.ndarray,
    frequent: np.ndarray,
    vocab_size: int,
) -> dict[str, np.ndarray]:
    """The pair table of the ``frequent`` term ids (F,) (module docstring): for each reach of
    ``PAIR_REACHES``, how many positions hold term i with term j at one of the reach positions after it
    (a start position counts once per j however often j occurs in its window).

    By the C module where it is compiled (one pass over the tokens, each start's window read once), else
    by numpy (the same table): a follower at position p counts for the start s = p - offset only if it
    is j's first occurrence after s, i.e. j's previous occurrence lies at or before s:
    ``gap(p) = p - previous(p) >= offset``.
    ``gap`` comes from ``positions`` (grouped by term, ascending within a term); one pass over the
    positions holding a frequent term per offset, on int16 slots (F <= PAIR_MAX_TERMS < 2**15)."""
    num_frequent = len(frequent)
    reach = max(PAIR_REACHES)
    slot = np.full(vocab_size, -1, dtype=np.int16)
    slot[frequent] = np.arange(num_frequent, dtype=np.int16)
    reaches = np.asarray(PAIR_REACHES, dtype=np.int64)
    native = load_native()
    if native is not None:
        follow = np.zeros((len(PAIR_REACHES), num_frequent, num_frequent), dtype=np.int64)
        native.pair_follow(tokens, doc_lengths, slot, reaches, follow)
        return {"pair_terms": frequent, "pair_reaches": reaches, "pair_follow": follow}
    doc_offsets = np.zeros(len(doc_lengths) + 1, dtype=np.int64)
    np.cumsum(doc_lengths, out=doc_offsets[1:])
    token_doc = np.repeat(np.arange(len(doc_lengths), dtype=np.int32), doc_lengths)
    # padded past the end, so that start + offset needs no bounds check
    token_slot = np.concatenate([slot[tokens], np.full(reach, -1, dtype=np.int16)])
    # distance to the previous occurrence of the same term, capped at reach + 1 (a term's first
    # occurrence: reach + 1); int8, computed in blocks so that no |C|-sized int64 temporary is made
    cap = reach + 1
    gap = np.full(len(tokens) + reach, cap, dtype=np.int8)
    for block in range(1, len(positions), PAIR_BLOCK):
        end = min(block + PAIR_BLOCK, len(positions))
        gap[positions[block:end]] = np.minimum(positions[block:end] - positions[block - 1 : end - 1], cap)
    first_occurrences = pos_ptr[:-1][pos_ptr[:-1] < pos_ptr[1:]]
    gap[positions[first_occurrences]] = cap
    num_pairs = num_frequent * num_frequent
    # one extra bin (num_pairs) takes the followers that do not count: np.where + bincount is cheaper
    # than selecting the ones that do with a boolean mask
    layers = np.zeros((len(PAIR_REACHES), num_pairs + 1), dtype=np.int64)
    # in blocks of positions: the per-offset temporaries stay a few MiB whatever the collection's size
    for block in range(0, len(tokens), PAIR_BLOCK):
        block_starts = block + np.flatnonzero(token_slot[block : min(block + PAIR_BLOCK, len(tokens))] >= 0)
        start_key = token_slot[block_starts].astype(np.int32) * num_frequent
        # positions after each start in its document
        room = (doc_offsets[1:][token_doc[block_starts]] - block_starts - 1).astype(np.int32)
        counts = np.zeros(num_pairs + 1, dtype=np.int64)
        for offset in range(1, reach + 1):
            follower = token_slot[block_starts + offset]
            counted = (follower >= 0) & (room >= offset) & (gap[block_starts + offset] >= offset)
            counts += np.bincount(np.where(counted, start_key + follower, num_pairs), minlength=num_pairs + 1)
            if offset in PAIR_REACHES:
                layers[PAIR_REACHES.index(offset)] += counts
    return {
        "pair_terms": frequent,
        "pair_reaches": reaches,
        "pair_follow": layers[:, :num_pairs].reshape(len(PAIR_REACHES), num_frequent, num_frequent),
    }


def _check_consistent(folder: Path, vocab: list[str], arrays: dict[str, np.ndarray]) -> None:
    """Cheap structural checks, so a truncated or mixed-up sidecar fails at open, naming the file."""

    def bad(name: str, why: str) -> ModelFolderError:
        path = folder / (name if name.endswith(".txt") else f"{name}.npy")
        return ModelFolderError(f"index statistics file is corrupted: {path} ({why})")

    vocab_size, num_tokens = len(vocab), len(arrays["tokens"])
    offsets = arrays["doc_offsets"]
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != num_tokens:
        raise bad("doc_offsets", f"does not span the {num_tokens} tokens")
    for name in ("pos_ptr", "doc_ptr"):
        ptr = arrays[name]
        if ptr.shape != (vocab_size + 1,):
            raise bad(name, f"shape {ptr.shape}, expected ({vocab_size + 1},) for {vocab_size} terms")
    if arrays["pos_ptr"][-1] != num_tokens:
        raise bad("pos_ptr", "does not span the tokens")
    for name in ("positions", "pos_doc"):
        if len(arrays[name]) != num_tokens:
            raise bad(name, f"length {len(arrays[name])}, expected {num_tokens}")
    postings = int(arrays["doc_ptr"][-1])
    for name in ("post_docs", "post_tfs"):
        if len(arrays[name]) != postings:
            raise bad(name, f"length {len(arrays[name])}, expected {postings}")
    if num_tokens and int(arrays["tokens"].max()) >= vocab_size:
        raise bad(VOCAB_FILE, f"{vocab_size} terms but tokens use id {int(arrays['tokens'].max())}")
    if "pair_terms" in arrays:
        terms, reaches, follow = arrays["pair_terms"], arrays["pair_reaches"], arrays["pair_follow"]
        if terms.ndim != 1 or (len(terms) and (terms.min() < 0 or terms.max() >= vocab_size)):
            raise bad("pair_terms", f"not a list of term ids below {vocab_size}")
        if reaches.ndim != 1 or (len(reaches) and reaches.min() < 1):
            raise bad("pair_reaches", "not a list of positive reaches")
        expected = (len(reaches), len(terms), len(terms))
        if follow.shape != expected:
            raise bad("pair_follow", f"shape {follow.shape}, expected {expected}")


def _stable_argsort(values: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for non-negative int32 ``values`` < ``bound``, by numpy's
    radix sort (O(n), what ``kind="stable"`` picks for 16-bit keys; 32-bit keys get a comparison sort):
    one 16-bit pass when the bound allows, else two (low half, then high half: LSD radix, stable)."""
    if bound <= 1 << 16:
        return np.argsort(values.astype(np.uint16), kind="stable")
    low = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((values >> 16).astype(np.uint16)[low], kind="stable")]
