"""Segmentation features that exist for ANY query: n-gram, PMI and title statistics from text, and an
offline POS tagger.

The Webis-QSeC-10 feature files (Google n-gram counts, MSN log probabilities, PMI, Wikipedia titles, POS
tags) list only the n-grams of the corpus's own 4,848 queries: for any other query every lookup misses.
This module gives each of those features a source that works on a query nobody has seen:

* :class:`TextStatistics`: counts of 1..3-grams (and titles) in text the user supplies, and a
  :class:`~hf_querygen.corpora.webis_qsec_10.SegmentationResources` view of them
  (:meth:`TextStatistics.resources`) whose lookups (``google_counts``, ``msn_unigram_logprob``,
  ``msn_bigram_logprob``, ``pmi``, ``wikipedia_titles``) are computed from the counts for any n-gram,
  so the CRF's corpus features and the WT baseline run on it unchanged;
* :func:`default_statistics`: the default text, built from ``../shared/data`` (the train / validation
  splits of the nl2kw, wikianswers and q2id corpora: questions, keyword queries, intent descriptions and
  the documents of q2id) and the Wikipedia titles named in the QALD files; never a Webis-QSeC-10 query and
  never a test split;
* :class:`POSTagger`: a CRFsuite part-of-speech tagger (word, affix and shape features), trained on the
  POS tags the corpus ships for its TRAINING queries and runnable offline on any query.

Statistics (all from n-gram counts ``c`` over ``N`` tokens of the text, after
:func:`~hf_querygen.text.normalize_for_matching`):

    log10 P(w) = log10(c(w) / N)            (stands in for the MSN 1-gram log probability)
    log10 P(w1 w2) = log10(c(w1 w2) / N)    (the MSN 2-gram log probability)
    PMI(w1, w2) = log2(P(w1 w2) / (P(w1) P(w2)))

An n-gram the text never contains has no value (``None``, the CRF's ``none`` bin: "unseen in the
text"); a query none of whose words occurs in the statistics gets a warning from the CRF segmenter.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_querygen.baselines.crf_segmenter import _require_crfsuite, open_crfsuite_tagger, train_crfsuite_bytes
from hf_querygen.corpora import load_corpus
from hf_querygen.corpora._base import resolve_data_dir
from hf_querygen.corpora._qald import dbpedia_resource_titles
from hf_querygen.corpora.webis_qsec_10 import SegmentationResources
from hf_querygen.text import normalize_for_matching

#: longest n-gram (in normalised tokens) whose count is kept
MAX_NGRAM = 3


def ngram_key(words: Sequence[str] | str) -> str:
    """The statistics' key of a query n-gram (words or a space-joined string): normalised tokens."""
    text = words if isinstance(words, str) else " ".join(words)
    return normalize_for_matching(text)


class _View(Mapping):
    """A read-only mapping over the statistics: ``get`` / ``in`` / ``[]`` for any n-gram string; it
    normalises the key and computes the value, so it is never "missing" merely because the query is new.
    Iteration lists nothing (the key space is every n-gram)."""

    def __init__(self, statistics: TextStatistics, value):
        self._statistics = statistics
        self._value = value

    def __getitem__(self, ngram: str) -> Any:
        value = self._value(self._statistics, ngram_key(ngram))
        if value is None:
            raise KeyError(ngram)
        return value

    def __contains__(self, ngram: object) -> bool:
        return isinstance(ngram, str) and self._value(self._statistics, ngram_key(ngram)) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _TitleView:
    """Set-like ``in`` test against the statistics' titles (normalised)."""

    def __init__(self, titles: set[str]):
        self._titles = titles

    def __contains__(self, ngram: object) -> bool:
        return isinstance(ngram, str) and ngram_key(ngram) in self._titles

    def __len__(self) -> int:
        return len(self._titles)


class TextStatistics:
    """n-gram counts (1..:data:`MAX_NGRAM` tokens) and a title set built from text.

    ``from_texts(texts, titles)`` counts the texts (titles are counted as text too, so a title's words
    have counts); ``update`` adds more text (e.g. the user's own query log).
    """

    def __init__(
        self, counts: Counter | None = None, titles: Iterable[str] = (), sources: Sequence[str] = ()
    ):
        self.counts: Counter = counts if counts is not None else Counter()
        self.titles: set[str] = {ngram_key(t) for t in titles}
        self.tokens = sum(c for k, c in self.counts.items() if " " not in k)
        self.sources: list[str] = list(sources)

    @classmethod
    def from_texts(
        cls, texts: Iterable[str], titles: Iterable[str] = (), source: str = "user text"
    ) -> TextStatistics:
        statistics = cls(titles=titles)
        statistics.update(texts, source)
        statistics.update(statistics.titles, "titles")
        return statistics

    def update(self, texts: Iterable[str], source: str = "user text") -> TextStatistics:
        """Count the 1..3-grams of ``texts`` (each text on its own: no n-gram spans two texts)."""
        counts = self.counts
        for text in texts:
            tokens = normalize_for_matching(text).split()
            for n in range(1, MAX_NGRAM + 1):
                counts.update(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
            self.tokens += len(tokens)
        self.sources.append(source)
        return self

    # -- statistics of one normalised key (None: the text does not contain it)
    def count(self, key: str) -> int | None:
        count = self.counts.get(key, 0)
        return count or None

    def log_probability(self, key: str) -> float | None:
        count = self.count(key)
        return None if count is None or not self.tokens else math.log10(count / self.tokens)

    def pmi(self, key: str) -> float | None:
        """log2 P(w1 w2) / (P(w1) P(w2)) for a two-token key (None otherwise or when unseen)."""
        tokens = key.split()
        if len(tokens) != 2:
            return None
        joint, left, right = self.count(key), self.count(tokens[0]), self.count(tokens[1])
        if joint is None or left is None or right is None:
            return None
        return math.log2(joint * self.tokens / (left * right))

    def median_bigram_count(self) -> int:
        """Median count of the 2-grams in the text (WT's fallback weight of a title with no known 2-gram)."""
        import statistics

        counts = [c for k, c in self.counts.items() if k.count(" ") == 1]
        return int(statistics.median(counts)) if counts else 1

    def resources(self, pos_tagger: POSTagger | None = None) -> SegmentationResources:
        """A :class:`SegmentationResources` whose lookups are computed from these statistics for any
        n-gram (``query_pos`` is empty: POS come from ``pos_tagger``, kept as ``.pos_tagger``)."""

        def multi_word(function):
            return lambda s, key: function(s, key) if " " in key else None

        def single_word(function):
            return lambda s, key: function(s, key) if key and " " not in key else None

        resources = SegmentationResources(
            google_counts=_View(self, multi_word(TextStatistics.count)),
            normalized_weights={},
            wikipedia_titles=_TitleView(self.titles),
            msn_unigram_logprob=_View(self, single_word(TextStatistics.log_probability)),
            msn_bigram_logprob=_View(self, multi_word(TextStatistics.log_probability)),
            pmi=_View(self, TextStatistics.pmi),
            ngram_pos=_TaggedNgrams(pos_tagger) if pos_tagger is not None else {},
            query_pos={},
            source=f"text statistics ({', '.join(self.sources)})"
            + ("; POS by the offline tagger" if pos_tagger is not None else ""),
            pos_tagger=pos_tagger,
        )
        return resources

    def describe(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "ngrams": len(self.counts),
            "titles": len(self.titles),
            "sources": list(self.sources),
        }


class _TaggedNgrams(Mapping):
    """``ngram_pos`` for WT+SNP: the tags of an n-gram tagged alone, by the offline tagger."""

    def __init__(self, tagger: POSTagger):
        self._tagger = tagger

    def __getitem__(self, ngram: str) -> tuple[str, ...]:
        return tuple(self._tagger.tag([ngram.split()])[0])

    def get(self, ngram: str, default=None):
        return self[ngram] if ngram.split() else default

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


# ---------------------------------------------------------------- the default text
def default_texts(data_dir: Any = None) -> Iterator[str]:
    """Text from ``../shared/data`` for the default statistics: the train and validation splits of the
    nl2kw (questions, keyword queries), wikianswers (questions, paraphrases) and q2id (queries,
    descriptions, document sentences) corpora. No Webis-QSeC-10 query, no test split."""
    nl2kw = load_corpus("nl2kw", "en", data_dir=data_dir)
    for split in ("train", "validation"):
        yield from nl2kw[split]["nl_query"]
        yield from nl2kw[split]["keyword_query"]
    wikianswers = load_corpus("wikianswers", data_dir=data_dir)
    for split in ("train", "validation"):
        if split not in wikianswers:
            continue
        yield from wikianswers[split]["question"]
        for paraphrases in wikianswers[split]["paraphrases"]:
            yield from _list_field(paraphrases)
    q2id = load_corpus("q2id", data_dir=data_dir)
    for split in ("train", "validation"):
        rows = q2id[split]
        yield from rows["query"]
        yield from rows["description"]
        for column in ("relevant_documents", "irrelevant_documents"):
            for documents in rows[column]:
                for document in _list_field(documents):
                    yield from document.get("sentences", ()) if isinstance(document, dict) else ()


def _list_field(value: Any) -> list:
    """A list column, or a list stored as its Python literal."""
    if isinstance(value, str):
        import ast

        value = ast.literal_eval(value) if value.startswith("[") else [value]
    return list(value or ())


def default_titles(data_dir: Any = None) -> set[str]:
    """Multi-word Wikipedia titles named in ``../shared/data`` (the QALD files' DBpedia resources)."""
    return dbpedia_resource_titles(Path(resolve_data_dir(data_dir)))


def default_statistics(data_dir: Any = None) -> TextStatistics:
    """:class:`TextStatistics` of :func:`default_texts` with the titles of :func:`default_titles`."""
    return TextStatistics.from_texts(
        default_texts(data_dir), default_titles(data_dir), source="shared/data: nl2kw, wikianswers, q2id"
    )


# ---------------------------------------------------------------- POS tagger
def _word_shape(word: str) -> str:
    shape = "".join("d" if c.isdigit() else "a" if c.isalpha() else c for c in word)
    # collapse runs: "aaaa-dd" -> "a-d"
    return "".join(c for i, c in enumerate(shape) if i == 0 or c != shape[i - 1])


def pos_features(words: Sequence[str], i: int) -> dict[str, float]:
    """Features of word ``i`` for the POS tagger: the word, its affixes and shape, and its neighbours."""
    word = words[i].lower()
    features = {
        "bias": 1.0,
        f"w={word}": 1.0,
        f"shape={_word_shape(word)}": 1.0,
        f"len={min(len(word), 8)}": 1.0,
    }
    for k in (1, 2, 3, 4):
        if len(word) > k:
            features[f"suf{k}={word[-k:]}"] = 1.0
            features[f"pre{k}={word[:k]}"] = 1.0
    for offset in (-2, -1, 1, 2):
        j = i + offset
        features[f"w[{offset}]={words[j].lower() if 0 <= j < len(words) else '<pad>'}"] = 1.0
    for offset in (-1, 1):
        j = i + offset
        if 0 <= j < len(words):
            features[f"suf3[{offset}]={words[j].lower()[-3:]}"] = 1.0
    return features


class POSTagger:
    """A linear-chain CRF (CRFsuite) POS tagger for queries; ``fit`` on (words, tags) pairs, ``tag``
    word lists. Runs offline; trained on the POS tags the corpus ships for its training queries."""

    def __init__(self, c1: float = 0.05, c2: float = 0.01, max_iterations: int = 60):
        self.c1, self.c2, self.max_iterations = c1, c2, max_iterations
        self._model_bytes: bytes | None = None
        self._tagger = None

    def fit(self, word_lists: Sequence[Sequence[str]], tag_lists: Sequence[Sequence[str]]) -> POSTagger:
        pycrfsuite = _require_crfsuite()
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        used = 0
        for words, tags in zip(word_lists, tag_lists, strict=True):
            if tags is None or len(tags) != len(words) or not words:
                continue  # the corpus tagger split this query differently: no aligned tags to learn from
            trainer.append(pycrfsuite.ItemSequence([pos_features(words, i) for i in range(len(words))]), tags)
            used += 1
        if not used:
            raise ValueError("POSTagger.fit: no query with one tag per word")
        params = {"c1": self.c1, "c2": self.c2, "max_iterations": self.max_iterations}
        self._model_bytes = train_crfsuite_bytes(trainer, params)
        self._tagger = None
        self.trained_on = used
        return self

    def _get(self):
        if self._tagger is None:
            self._tagger = open_crfsuite_tagger(self._model_bytes, "POS tagger")
        return self._tagger

    def tag(self, word_lists: Sequence[Sequence[str]]) -> list[list[str]]:
        """One tag per word of each word list."""
        pycrfsuite = _require_crfsuite()
        tagger = self._get()
        tags = []
        for words in word_lists:
            items = pycrfsuite.ItemSequence([pos_features(words, i) for i in range(len(words))])
            tags.append(list(tagger.tag(items)) if words else [])
        return tags

    def save(self, path: str | Path) -> None:
        if self._model_bytes is None:
            raise RuntimeError("nothing to save: the POS tagger is not trained")
        Path(path).write_bytes(self._model_bytes)

    @classmethod
    def load(cls, path: str | Path) -> POSTagger:
        tagger = cls()
        tagger._model_bytes = Path(path).read_bytes()
        return tagger


def cross_fitted_tags(
    word_lists: Sequence[Sequence[str]],
    tag_lists: Sequence[Sequence[str] | None],
    folds: int = 5,
    **tagger_options: Any,
) -> tuple[list[list[str]], POSTagger]:
    """POS of TRAINING queries as the tagger would give them on unseen queries: each fifth is tagged by a
    tagger trained on the other four (so the segmenter learns from tags as noisy as at test time), plus
    the tagger trained on all of them (for new queries)."""
    tags: list[list[str] | None] = [None] * len(word_lists)
    for k in range(folds):
        held = [i for i in range(len(word_lists)) if i % folds == k]
        rest = [i for i in range(len(word_lists)) if i % folds != k]
        tagger = POSTagger(**tagger_options).fit([word_lists[i] for i in rest], [tag_lists[i] for i in rest])
        for i, predicted in zip(held, tagger.tag([word_lists[i] for i in held]), strict=True):
            tags[i] = predicted
    return [t or [] for t in tags], POSTagger(**tagger_options).fit(word_lists, tag_lists)
