"""Wikipedia-title baselines WT and WT+SNP (Hagen et al., CIKM 2012; Lin et al. 2017 Sec. 3.1).

Only Wikipedia titles (WT), or Wikipedia titles and strict noun phrases (WT+SNP), may be
multi-word segments; every other word stands alone. Among the segmentations allowed, the one
with the highest score wins, where the score sums over multi-word segments ``s`` the weight of
the Wikipedia-based normalization (Hagen et al., WWW 2011, Sec. 3)::

    weight(s) = |s|^2 + |s| * max_{2-gram t in s} freq(t)     if s is a Wikipedia title
    weight(s) = |s| * freq(s)                                 otherwise (a strict noun phrase)

with ``freq`` the Google n-gram count (the corpus's ``n-gram-web-frequencies-google.txt``; the
corpus's ``...-normalized.txt`` holds exactly these weights, which the tests check). A strict
noun phrase (CIKM 2012, Sec. 3) is an n-gram whose POS tags are all nouns, adjectives,
determiners/articles or numbers (``N*``, ``J*``, ``D*``, ``CD``; the corpus's n-gram POS file).

Details that decide ties and gaps follow the published outputs shipped with the corpus (the
agreement is measured in the lin2017 reproduction): segmentations are visited in the order of
their break bit-mask read as a binary number (first break = most significant bit; "no break" =
0) and a later one wins only with a strictly higher score; the all-breaks segmentation is the
fallback; a title without any known 2-gram count gets the median 2-gram count of the Google
n-grams; summing stops at the first qualifying segment that has no n-gram count at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hf_querygen.corpora.webis_qsec_10 import SegmentationResources
from hf_querygen.tasks.segmentation import breaks_to_string, query_words

#: median Google 2-gram count, used when none of a title's 2-grams has a count (Hagen et al.)
MEDIAN_TWO_GRAM_COUNT = 3_461_030
#: POS tag prefixes (and exact tags) a strict noun phrase may consist of
_SNP_TAG_PREFIXES = ("N", "J", "D")
_SNP_EXACT_TAGS = ("CD",)


def is_strict_noun_phrase(tags: Sequence[str] | None) -> bool:
    """Nouns, adjectives, determiners and numbers only (CIKM 2012's SNP); unknown n-gram -> False."""
    if not tags:
        return False
    return all(tag.startswith(_SNP_TAG_PREFIXES) or tag in _SNP_EXACT_TAGS for tag in tags)


def segmentations_in_order(num_words: int) -> Iterator[list[int]]:
    """Break vectors of a ``num_words``-word query, in bit-mask order, without the all-breaks one."""
    positions = num_words - 1
    for mask in range(2**positions - 1):
        yield [(mask >> (positions - 1 - i)) & 1 for i in range(positions)]


class WikipediaTitleSegmenter:
    """WT (``strict_noun_phrases=False``) or WT+SNP (``True``) over the corpus's feature files."""

    def __init__(
        self,
        resources: SegmentationResources,
        strict_noun_phrases: bool = False,
        median_two_gram_count: int = MEDIAN_TWO_GRAM_COUNT,
    ):
        """``median_two_gram_count``: the fallback 2-gram count of a title (the median 2-gram count of the
        count source: Google's by default; a text's own median for text statistics)."""
        self.resources = resources
        self.strict_noun_phrases = strict_noun_phrases
        self.median_two_gram_count = median_two_gram_count

    @property
    def name(self) -> str:
        return "wt_snp" if self.strict_noun_phrases else "wt"

    def is_title(self, ngram: str) -> bool:
        return ngram in self.resources.wikipedia_titles

    def qualifies(self, ngram: str) -> bool:
        """May ``ngram`` be a multi-word segment?"""
        if self.is_title(ngram):
            return True
        return self.strict_noun_phrases and is_strict_noun_phrase(self.resources.ngram_pos.get(ngram))

    def weight(self, words: Sequence[str]) -> int | None:
        """WWW'11 weight of a multi-word segment; None when its n-gram count is unknown."""
        ngram = " ".join(words)
        counts = self.resources.google_counts
        if ngram not in counts:
            return None
        length = len(words)
        if self.is_title(ngram):
            two_gram_counts = [counts.get(f"{a} {b}", 0) for a, b in zip(words, words[1:], strict=False)]
            best = max(two_gram_counts) or self.median_two_gram_count
            return length * length + length * best
        return length * counts[ngram]

    def score(self, words: Sequence[str], breaks: Sequence[int]) -> int | None:
        """Score of one segmentation; None if a multi-word segment may not be one."""
        segments, start = [], 0
        for i, is_break in enumerate([*breaks, 1]):
            if is_break:
                segments.append(words[start : i + 1])
                start = i + 1
        multi_word = [segment for segment in segments if len(segment) > 1]
        if not all(self.qualifies(" ".join(segment)) for segment in multi_word):
            return None
        total = 0
        for segment in multi_word:
            weight = self.weight(segment)
            if weight is None:
                break
            total += weight
        return total

    def segment_breaks(self, words: Sequence[str]) -> list[int]:
        """Break vector of the best-scoring segmentation of ``words``."""
        best_breaks, best_score = [1] * (len(words) - 1), 0
        for breaks in segmentations_in_order(len(words)):
            score = self.score(words, breaks)
            if score is not None and score > best_score:
                best_breaks, best_score = breaks, score
        return best_breaks

    def segment(self, query: str) -> str:
        """``|`` notation of the segmentation of one query."""
        words = query_words(query)
        return breaks_to_string(words, self.segment_breaks(words))

    def __call__(self, queries: Iterable[str]) -> list[str]:
        return [self.segment(query) for query in queries]
