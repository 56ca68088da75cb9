"""nl2kw training targets (Liu et al., CIKM'18, Sec. 3.1-3.3): the keyword words' order, their extractive /
generative split and the labels each kind of model learns.

* **TF-IDF keyword order** (Sec. 3.1): the gold keyword query is a word SET; to train a decoder it
  is turned into a sequence sorted by descending TF-IDF. The paper scores words in retrieved
  relevant documents, which we do not have; we score them in the example's own text
  (natural-language query + keyword query) against document frequencies fitted on the TRAINING
  split only (:class:`TfidfKeywordOrder`); :class:`NaturalKeywordOrder` is the
  alternative for topics unseen in training.
* **extractive / generative split** (Sec. 3.1): a target word is extractive when a source word has
  the same normalised form (:func:`hf_querygen.text.normalize_for_matching`, the one
  normaliser shared with the corpus and the metric), generative otherwise.
* **dual-decoder labels** in the extended output space ``[output vocabulary | source positions]``
  (see :mod:`hf_querygen.nn.copy`): ``[V+pos(e_1) .. V+pos(e_m), V+pos(sentinel), g_1 .. g_k, EOS]``:
  the pointer decoder points at the first occurrence of each extractive word (Eq. 4) and then at
  the end sentinel appended to the source (Sec. 3.3); the generator emits vocabulary ids and EOS.
* **tag labels** for the sequence-labeling baseline and the joint ATS2S+SL model (1 = the source
  word is a gold keyword).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ...errors import InvalidInputError
from ...text import normalize_for_matching

Normalizer = Callable[[str], str]

#: tag label ids of the sequence-labeling baseline (a source word is / is not a keyword)
TAG_LABELS: dict[int, str] = {0: "O", 1: "KEYWORD"}


def resolve_normalizer(normalize: Normalizer | None = None) -> Normalizer:
    """``normalize`` if given, else the project's one :func:`~hf_querygen.text.normalize_for_matching`."""
    if normalize is not None:
        return normalize
    return normalize_for_matching


def unique_words(words: Iterable[str]) -> list[str]:
    """``words`` without repeats, first occurrence order."""
    return list(dict.fromkeys(words))


# ------------------------------------------------------------------ TF-IDF target order (Sec. 3.1)
@dataclass
class TfidfKeywordOrder:
    """Orders a keyword set by descending TF-IDF (Liu'18 Sec. 3.1).

    ``score(w) = tf(w) * idf(w)`` with ``tf`` = occurrences of the normalised word in the
    example's natural-language query plus keyword query, and the smoothed
    ``idf(w) = ln((1 + N) / (1 + df(w))) + 1`` over N training documents (a word never seen in
    training gets the largest idf). Ties keep the keyword query's own order (a stable sort).
    """

    document_frequency: dict[str, int]
    n_documents: int
    normalize: Normalizer | None = field(default=None, repr=False)

    @classmethod
    def fit(cls, documents: Iterable[str], normalize: Normalizer | None = None) -> TfidfKeywordOrder:
        """Count document frequencies over ``documents`` (give it the training split only)."""
        norm = resolve_normalizer(normalize)
        frequency: Counter = Counter()
        n_documents = 0
        for document in documents:
            frequency.update(set(norm(document).split()))
            n_documents += 1
        if n_documents == 0:
            raise ValueError("TfidfKeywordOrder.fit: no documents")
        return cls(dict(frequency), n_documents, normalize)

    def idf(self, normalized_word: str) -> float:
        df = self.document_frequency.get(normalized_word, 0)
        return math.log((1 + self.n_documents) / (1 + df)) + 1.0

    def order(self, keyword_words: Sequence[str], nl_query: str) -> list[str]:
        """The unique ``keyword_words`` sorted by descending TF-IDF in ``nl_query`` + keywords."""
        norm = resolve_normalizer(self.normalize)
        words = unique_words(keyword_words)
        context = Counter(norm(nl_query).split()) + Counter(norm(" ".join(keyword_words)).split())

        def score(word: str) -> float:
            parts = norm(word).split() or [word]
            return sum(context[p] * self.idf(p) for p in parts) / len(parts)

        return sorted(words, key=score, reverse=True)


@dataclass
class NaturalKeywordOrder:
    """The keyword order a decoder can follow on an unseen topic (the target-order lever): extractive words
    in the order they occur in the natural-language query, then generative words by descending
    frequency among the TRAINING keyword queries (the most common words first: the generator learns
    its sure words before its rare ones). TF-IDF order (Sec. 3.1) instead puts the rarest word first,
    and on a topic-grouped split that word is usually unknown.

    Same interface as :class:`TfidfKeywordOrder` (``order(keyword_words, nl_query)``)."""

    target_frequency: dict[str, int]
    normalize: Normalizer | None = field(default=None, repr=False)

    @classmethod
    def fit(cls, keyword_queries: Iterable[str], normalize: Normalizer | None = None) -> NaturalKeywordOrder:
        """Count normalised word frequencies over the TRAINING keyword queries."""
        norm = resolve_normalizer(normalize)
        return cls(dict(Counter(w for q in keyword_queries for w in norm(q).split())), normalize)

    def order(self, keyword_words: Sequence[str], nl_query: str) -> list[str]:
        """Unique ``keyword_words``: source-order extractive words, then frequency-order generative ones
        (ties keep the keyword query's own order: a stable sort)."""
        norm = resolve_normalizer(self.normalize)
        first: dict[str, int] = {}
        for position, word in enumerate(norm(nl_query).split()):
            first.setdefault(word, position)

        def key(word: str) -> tuple[int, float]:
            form = norm(word)
            if form in first:
                return (0, first[form])
            parts = form.split() or [word]
            return (1, -sum(self.target_frequency.get(p, 0) for p in parts) / len(parts))

        return sorted(unique_words(keyword_words), key=key)


#: ``NL2KWTask.prepare(keyword_order=...)``: the decoders' target order
KEYWORD_ORDERS = ("tfidf", "natural")


def fit_keyword_order(
    order: str, nl_queries: Sequence[str], keyword_queries: Sequence[str], normalize: Normalizer | None = None
) -> TfidfKeywordOrder | NaturalKeywordOrder:
    """The target order named ``order`` fitted on the TRAINING pairs (``nl_queries``, ``keyword_queries``)."""
    if order == "tfidf":
        return TfidfKeywordOrder.fit(list(dict.fromkeys(nl_queries)) + list(keyword_queries), normalize)
    if order == "natural":
        return NaturalKeywordOrder.fit(keyword_queries, normalize)
    raise InvalidInputError(f"keyword_order: {order!r} is not one of {KEYWORD_ORDERS}")


# ------------------------------------------------------------------ extractive / generative split
@dataclass(frozen=True)
class KeywordTargets:
    """One example's target words (tokenizer words), in TF-IDF order.

    ``pointer_positions[i]`` is the first source-word index whose normalised form equals that of
    ``extractive[i]`` (Eq. 4 sums the attention over all such positions into this slot).
    """

    source_words: list[str]
    ordered: list[str]
    extractive: list[str]
    generative: list[str]
    pointer_positions: list[int]


def keyword_targets(
    source_words: Sequence[str],
    ordered_keyword_words: Sequence[str],
    normalize: Normalizer | None = None,
    max_words: int | None = None,
) -> KeywordTargets:
    """Split the (already TF-IDF-ordered) keyword words into extractive (a source word has the
    same normalised form) and generative ones; ``max_words`` caps their total, keeping the
    highest-ranked words."""
    norm = resolve_normalizer(normalize)
    first_position: dict[str, int] = {}
    for position, word in enumerate(source_words):
        if norm(word):  # punctuation is never a keyword
            first_position.setdefault(norm(word), position)
    by_form: dict[str, str] = {}  # one target per normalised form ("Beijing" = "beijing")
    for word in ordered_keyword_words:
        if norm(word):  # punctuation is never a keyword
            by_form.setdefault(norm(word), word)
    ordered = list(by_form.values())[:max_words]
    extractive, generative, positions = [], [], []
    for word in ordered:
        position = first_position.get(norm(word))
        if position is None:
            generative.append(word)
        else:
            extractive.append(word)
            positions.append(position)
    return KeywordTargets(list(source_words), ordered, extractive, generative, positions)


def keyword_tag_labels(
    source_words: Sequence[str], keyword_words: Sequence[str], normalize: Normalizer | None = None
) -> list[int]:
    """1 for each source word whose normalised form is a gold keyword word, else 0 (every
    occurrence is tagged: the tagger cannot know which occurrence the annotator meant)."""
    norm = resolve_normalizer(normalize)
    gold = {norm(w) for w in keyword_words} - {""}
    return [int(norm(word) in gold) for word in source_words]


def dual_decoder_labels(
    targets: KeywordTargets,
    sentinel_position: int,
    output_vocab_size: int,
    target_token_ids: Sequence[int],
    eos_token_id: int,
    pointer_only: bool = False,
) -> list[int]:
    """Labels in the extended output space for the dual decoder (Sec. 3.3-3.5).

    ``target_token_ids`` are the token ids of ``targets.generative`` (ids >= ``output_vocab_size``
    must already be mapped to [UNK]); ``sentinel_position`` is the source position of the end
    sentinel. In pointer-only mode (the Pointer Network baseline) the generator part is dropped.
    """
    if len(target_token_ids) != len(targets.generative):
        raise ValueError(
            f"dual_decoder_labels: {len(targets.generative)} generative words but {len(target_token_ids)} ids"
        )
    if any(p >= sentinel_position for p in targets.pointer_positions):
        raise ValueError(
            f"dual_decoder_labels: pointer position beyond the sentinel at {sentinel_position}: "
            f"{targets.pointer_positions}"
        )
    labels = [output_vocab_size + p for p in targets.pointer_positions]
    labels.append(output_vocab_size + sentinel_position)
    if not pointer_only:
        labels += list(target_token_ids) + [eos_token_id]
    return labels
