"""Text normalisation shared by corpora, tasks and metrics (so that imports flow one way: each of them
imports this module, none imports another for a normaliser)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from .errors import InvalidInputError


def collapse_whitespace(text: str) -> str:
    # str.split() splits on the same Unicode whitespace as r"\s+" and is ~10x faster
    return " ".join(text.split())


_APOSTROPHES = frozenset("'\u2019\u02bc`\u00b4")


class _MatchingTable(dict):
    """``str.translate`` table filled on first sight of each character: apostrophes are deleted,
    Unicode punctuation (P*) and symbols (S*) become spaces, everything else stays. Letters, digits
    and combining marks stay (Devanagari vowel signs are Mc/Mn, which a plain \\w regex would
    wrongly split on)."""

    def __missing__(self, codepoint: int) -> str:
        char = chr(codepoint)
        value = "" if char in _APOSTROPHES else " " if unicodedata.category(char)[0] in "PS" else char
        self[codepoint] = value
        return value


_MATCHING_TABLE = _MatchingTable()


def normalize_for_matching(text: str) -> str:
    """The one normalisation used to compare queries, keywords and questions across the project.

    NFKC, case-folded, apostrophes deleted (``what's`` -> ``whats``, as UQV100 normalises),
    every other punctuation or symbol character replaced by a space, whitespace collapsed. No
    stemming: ``astronauts`` and ``astronaut`` stay different words. Returns space-separated
    tokens (``.split()`` gives the word list). Used for the extractive / generative keyword split
    (Liu'18 Sec. 3: a keyword is extractive when it occurs in the natural-language query), for
    de-duplication keys, and by the keyword metrics.
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().translate(_MATCHING_TABLE).split())


#: English function words (articles, pronouns, prepositions, conjunctions, auxiliaries, question words),
#: in :func:`normalize_for_matching`'s form (apostrophes deleted: ``dont``); what is not here is a content
#: word (:func:`content_words`). A short closed-class list on purpose: a keyword query keeps its content
#: words, and a question adds function words around them.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an the this that these those some any each every no other such
    i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
    what which who whom whose when where why how whether
    is am are was were be been being do does did doing done have has had having
    can could may might must shall should will would
    isnt arent wasnt werent dont doesnt didnt cant couldnt wont wouldnt shouldnt hasnt havent hadnt
    whats whos wheres hows thats theres
    of in on at to for from by with about as into onto over under between through during before after
    above below up down out off than via per
    and or but nor so if then because while though although
    not also too very just only there here
    """.split()
)


def content_words(text: str) -> list[str]:
    """The words of ``text`` (:func:`normalize_for_matching`) that are not :data:`STOPWORDS`, first
    occurrence order, without repeats; all its words when none is a content word (``"what is it"``)."""
    words = list(dict.fromkeys(normalize_for_matching(text).split()))
    content = [w for w in words if w not in STOPWORDS]
    return content or words


# ================================================================ query segmentation notation
# Query segmentation representations and conversions (Lin et al. 2017; Hagen et al. 2011/2012).
#
# A query of ``k`` words has ``k - 1`` break positions. One segmentation is written in four
# interchangeable ways:
#
# * ``|`` notation (the Webis-QSeC-10 files): ``"graffiti fonts|alphabet"``;
# * a segment list: ``["graffiti fonts", "alphabet"]``;
# * a break vector of length ``k - 1``: ``[0, 1]`` (1 = a break between word i and word i+1);
# * BIO tags, one per word (paper Table 1): ``["B", "I", "B"]``. Every word belongs to a segment,
#   so "O" never occurs; ``B`` starts a segment, ``I`` continues it.
#
# Plus the seq2seq target of the encoder-decoder segmenter (paper Sec. 3.4): the query words with
# a ``|`` token between segments, ``"graffiti fonts | alphabet"`` (Vocab_target = Vocab_source +
# {"|"}).
#
# Break fusion (paper Sec. 2, after Hagen et al. CIKM 2012) turns crowd votes into one reference.


#: the break symbol of the Webis-QSeC-10 notation and the extra target token of the RNN segmenter
BREAK_TOKEN = "|"
#: tag names, index = label id (ClassLabel order of the corpus)
BIO_LABELS: tuple[str, str] = ("B", "I")


class SegmentationError(InvalidInputError):
    """A segmentation that does not fit its query (wrong words, wrong length, bad tag)."""


def query_words(query: str) -> list[str]:
    """Words of a query: split at single spaces (queries in the corpus use exactly one space)."""
    words = query.split()
    if not words:
        raise SegmentationError(f"empty query {query!r}")
    return words


# ---------------------------------------------------------------- conversions
def parse_segmentation(segmentation: str, query: str | None = None) -> list[int]:
    """Break vector (length k-1) of a ``|``-notation segmentation; checks it against ``query``."""
    segments = [segment.split() for segment in segmentation.split(BREAK_TOKEN)]
    if any(not segment for segment in segments):
        raise SegmentationError(f"empty segment in {segmentation!r}")
    words = [word for segment in segments for word in segment]
    if query is not None and words != query_words(query):
        raise SegmentationError(f"segmentation {segmentation!r} does not spell the query {query!r}")
    breaks: list[int] = []
    for segment in segments:
        breaks.extend([0] * (len(segment) - 1))
        breaks.append(1)
    return breaks[:-1]


def breaks_to_segments(words: Sequence[str], breaks: Sequence[int]) -> list[str]:
    """Segments of ``words`` cut at each position ``i`` with ``breaks[i] == 1``."""
    if len(breaks) != len(words) - 1:
        raise SegmentationError(
            f"break vector of length {len(breaks)} for {len(words)} words (needs {len(words) - 1})"
        )
    segments, current = [], [words[0]]
    for word, is_break in zip(words[1:], breaks, strict=True):
        if is_break:
            segments.append(" ".join(current))
            current = [word]
        else:
            current.append(word)
    segments.append(" ".join(current))
    return segments


def segments_to_breaks(segments: Sequence[str]) -> list[int]:
    """Break vector of a segment list (the words are the segments' words in order)."""
    return parse_segmentation(BREAK_TOKEN.join(segments))


def breaks_to_string(words: Sequence[str], breaks: Sequence[int]) -> str:
    """``|`` notation of a break vector."""
    return BREAK_TOKEN.join(breaks_to_segments(words, breaks))


def breaks_to_bio(breaks: Sequence[int]) -> list[str]:
    """BIO tags (k) of a break vector (k-1): a word starts a segment iff a break precedes it."""
    return ["B"] + ["B" if is_break else "I" for is_break in breaks]


def bio_to_breaks(tags: Sequence[str | int]) -> list[int]:
    """Break vector of BIO tags (names or ``BIO_LABELS`` ids). The first tag is always read as B
    (a segment must start somewhere), so any tag sequence gives a valid segmentation."""
    names = [BIO_LABELS[tag] if isinstance(tag, int) else tag for tag in tags]
    unknown = sorted({tag for tag in names if tag not in BIO_LABELS})
    if unknown:
        raise SegmentationError(f"unknown BIO tags {unknown}; expected one of {BIO_LABELS}")
    return [1 if tag == "B" else 0 for tag in names[1:]]


def segmentation_to_target(segmentation: str) -> str:
    """Seq2seq target: words with a standalone ``|`` token at each break (paper Sec. 3.4)."""
    return f" {BREAK_TOKEN} ".join(" ".join(segment.split()) for segment in segmentation.split(BREAK_TOKEN))


def target_tokens_to_breaks(tokens: Sequence[str], words: Sequence[str]) -> list[int]:
    """Read a decoded token sequence back as a break vector of the query ``words``.

    Used for the UNconstrained encoder-decoder, whose output need not spell the query: a break
    is predicted at position i iff a ``|`` token follows the i-th copied query word, where the
    output words are aligned to the query words left to right (extra or wrong words are skipped,
    missing words get no break). This is lenient on purpose; query accuracy still counts only
    exact segmentations of the real query words.
    """
    breaks = [0] * (len(words) - 1)
    position = -1  # index of the last matched query word
    for token in tokens:
        if token == BREAK_TOKEN:
            if 0 <= position < len(breaks):
                breaks[position] = 1
        elif position + 1 < len(words) and token == words[position + 1]:
            position += 1
    return breaks


# ---------------------------------------------------------------- break fusion
def break_vote_counts(votes: Sequence[tuple[int, str]], query: str) -> tuple[list[int], int]:
    """Votes for a break at each of the k-1 positions, and the query's vote total.

    ``votes`` are (count, ``|``-segmentation) pairs; most queries have 10 votes, some up to 22.
    """
    words = query_words(query)
    break_votes = [0] * (len(words) - 1)
    vote_total = 0
    for count, segmentation in votes:
        if count <= 0:
            raise SegmentationError(f"non-positive vote count {count} for {segmentation!r}")
        vote_total += count
        for i, is_break in enumerate(parse_segmentation(segmentation, query)):
            break_votes[i] += count * is_break
    if vote_total == 0:
        raise SegmentationError(f"no votes for query {query!r}")
    return break_votes, vote_total


def break_vote_shares(votes: Sequence[tuple[int, str]], query: str) -> list[float]:
    """Share of the votes (normalised by the query's total) for a break at each position."""
    break_votes, vote_total = break_vote_counts(votes, query)
    return [count / vote_total for count in break_votes]


def break_fusion(votes: Sequence[tuple[int, str]], query: str) -> list[int]:
    """Reference break vector by break fusion (Lin'17 Sec. 2; Hagen et al. CIKM'12): follow the
    majority of annotators at each break position and insert a break on a tie. Integer
    arithmetic (2 * break votes >= total), so ties are exact whatever the vote total."""
    break_votes, vote_total = break_vote_counts(votes, query)
    return [1 if 2 * count >= vote_total else 0 for count in break_votes]


#: the slot of a one-slot question frame ("what is X"): where a keyword query goes (the k2q task's frames,
#: the question-frame model's labels)
FRAME_SLOT = "X"
