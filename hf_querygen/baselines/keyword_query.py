"""Non-neural keyword-query baselines for nl2kw (Liu et al., CIKM'18, Table 2).

* :func:`raw_query_keywords`: the natural-language query itself, every word a "keyword" (row 1);
* :class:`YakeKeywordExtractor`: YAKE (Campos et al. 2020), a modern unsupervised keyword
  extractor, as an extra row; its two knobs (number of keywords, n-gram size) are chosen on the
  VALIDATION split with :meth:`YakeKeywordExtractor.select_on_validation`;
* :func:`union_keyword_queries`: the ATS2S+SL / ATS2S+PN systems (rows 6-7) combine two systems'
  outputs and filter duplicates;
* :class:`PseudoRelevanceKeywords`: not in the paper: the raw query expanded by relevance-model (RM3-style)
  pseudo-relevance feedback from a retrieval index, a reformulation for search.

All return keyword lists of words (normalised with the corpus' ``normalize_for_matching``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hf_querygen.errors import InvalidInputError
from hf_querygen.retrieval import analyze
from hf_querygen.tasks.nl2kw.targets import resolve_normalizer, unique_words
from hf_querygen.utils import require_extra

Normalizer = Callable[[str], str]


def raw_query_keywords(nl_query: str, normalize: Normalizer | None = None) -> list[str]:
    """The raw-query baseline: all words of the natural-language query, without repeats."""
    return unique_words(resolve_normalizer(normalize)(nl_query).split())


def union_keyword_queries(*systems: Sequence[Sequence[str]]) -> list[list[str]]:
    """Per query, the union of several systems' keyword lists without duplicates (first system's
    words first), as ATS2S+SL and ATS2S+PN do."""
    if not systems:
        raise ValueError("union_keyword_queries: give at least one system's outputs")
    sizes = {len(outputs) for outputs in systems}
    if len(sizes) != 1:
        raise ValueError(f"union_keyword_queries: systems have different numbers of queries: {sorted(sizes)}")
    return [
        unique_words(w for keywords in per_query for w in keywords)
        for per_query in zip(*systems, strict=True)
    ]


@dataclass
class YakeKeywordExtractor:
    """YAKE keywords of a natural-language query, split into unique normalised words.

    ``top`` keyword phrases of at most ``max_ngram`` words are taken (YAKE's score: lower is
    better). Requires the ``keywords`` extra (``pip install hf-querygen[keywords]``).
    """

    top: int = 3
    max_ngram: int = 1
    language: str = "en"
    normalize: Normalizer | None = None

    def __post_init__(self) -> None:
        if self.top < 1 or self.max_ngram < 1:
            raise ValueError(
                f"YakeKeywordExtractor: top and max_ngram must be >= 1, got {self.top}, {self.max_ngram}"
            )
        yake = require_extra("yake", "keywords", "YakeKeywordExtractor")
        self._extractor = yake.KeywordExtractor(lan=self.language, n=self.max_ngram, top=self.top)

    def __call__(self, nl_query: str) -> list[str]:
        norm = resolve_normalizer(self.normalize)
        phrases = [phrase for phrase, _score in self._extractor.extract_keywords(nl_query)]
        return unique_words(word for phrase in phrases for word in norm(phrase).split())

    def batch(self, nl_queries: Iterable[str]) -> list[list[str]]:
        return [self(q) for q in nl_queries]

    @classmethod
    def select_on_validation(
        cls,
        nl_queries: Sequence[str],
        references: Sequence[Any],
        tops: Sequence[int] = (1, 2, 3, 4, 5, 6, 8),
        max_ngrams: Sequence[int] = (1, 2, 3),
        language: str = "en",
        normalize: Normalizer | None = None,
    ) -> tuple[YakeKeywordExtractor, dict[str, float]]:
        """Grid-search ``top`` x ``max_ngram`` by per-query F1 on the given (validation) queries.

        Returns the best extractor and ``{"top=..,max_ngram=..": f1}`` for every setting tried.
        """
        from hf_querygen.metrics.keyword_prf import keyword_prf

        if not tops or not max_ngrams:
            raise ValueError("select_on_validation: tops and max_ngrams must be non-empty")
        scores: dict[str, float] = {}
        best: tuple[float, YakeKeywordExtractor] | None = None
        for max_ngram in max_ngrams:
            for top in tops:
                extractor = cls(top=top, max_ngram=max_ngram, language=language, normalize=normalize)
                f1 = keyword_prf(extractor.batch(nl_queries), list(references), normalize=normalize)["f1"]
                scores[f"top={top},max_ngram={max_ngram}"] = f1
                if best is None or f1 > best[0]:
                    best = (f1, extractor)
        return best[1], scores  # type: ignore[index]  # non-empty grid: best is set


@dataclass
class PseudoRelevanceKeywords:
    """The raw query plus expansion words from its top BM25 documents (relevance model, RM3-style).

    RM1 (Lavrenko & Croft, SIGIR 2001) over the feedback set ``R`` = the BM25 top ``documents`` of the raw
    query in ``index`` (whose rows are ``texts``):

        P(w | R) = sum_{d in R} P(w | d) P(d | q),   P(w | d) = tf(w, d) / |d|,   P(d | q) = s(d) / sum_R s

    with ``s`` the BM25 scores; the ``terms`` words of highest ``P(w | R)`` that are not query words are
    appended to the raw query's words (RM3's interpolation with the original query, Abdul-Jaleel et al.
    TREC 2004, becomes "every original word once, every expansion word once": a keyword query has no
    weights). Defaults are Anserini's RM3 (``fbDocs=10``, ``fbTerms=10``), not tuned here. Words are the
    index's analysed terms.
    """

    index: Any
    texts: Sequence[str]
    documents: int = 10
    terms: int = 10
    normalize: Normalizer | None = None

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.index):
            raise InvalidInputError(
                f"PseudoRelevanceKeywords: {len(self.texts)} texts for an index of {len(self.index)} "
                "documents"
            )
        for name, value in (("documents", self.documents), ("terms", self.terms)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInputError(
                    f"PseudoRelevanceKeywords: {name} must be an integer >= 1, got {value!r}"
                )

    def __call__(self, nl_query: str) -> list[str]:
        words = raw_query_keywords(nl_query, self.normalize)
        hits = self.index.search(" ".join(words), k=self.documents, ranker="bm25") if words else []
        total = sum(hit.score for hit in hits)
        if not hits or total <= 0:
            return words
        weights: Counter = Counter()
        for hit in hits:
            tokens = analyze(self.texts[hit.row])
            for word, count in Counter(tokens).items():
                weights[word] += (count / len(tokens)) * (hit.score / total)
        query = set(words)
        ranked = sorted((w for w in weights if w not in query), key=lambda w: (-weights[w], w))
        return words + ranked[: self.terms]

    def batch(self, nl_queries: Iterable[str]) -> list[list[str]]:
        return [self(q) for q in nl_queries]
