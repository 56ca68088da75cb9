"""Natural-language query -> keyword query (Liu et al., CIKM'18): targets, encodings, decoding.

What this module adds on top of the generic seq2seq preprocessing (:mod:`hf_querygen.tasks.seq2seq`):

* **TF-IDF keyword order** (Sec. 3.1): the gold keyword query is a word SET; to train a decoder it
  is turned into a sequence sorted by descending TF-IDF. The paper scores words in retrieved
  relevant documents, which we do not have; we score them in the example's own text
  (natural-language query + keyword query) against document frequencies fitted on the TRAINING
  split only (:class:`TfidfKeywordOrder`).
* **extractive / generative split** (Sec. 3.1): a target word is extractive when a source word has
  the same normalised form (:func:`hf_querygen.text.normalize_for_matching`, the one
  normaliser shared with the corpus and the metric), generative otherwise.
* **dual-decoder labels** in the extended output space ``[output vocabulary | source positions]``
  (see :mod:`hf_querygen.nn.copy`): ``[V+pos(e_1) .. V+pos(e_m), V+pos(sentinel), g_1 .. g_k, EOS]``:
  the pointer decoder points at the first occurrence of each extractive word (Eq. 4) and then at
  the end sentinel appended to the source (Sec. 3.3); the generator emits vocabulary ids and EOS.
* **tag labels** for the sequence-labeling baseline and the joint ATS2S+SL model (1 = the source
  word is a gold keyword).
* **postprocessing**: generated ids -> extracted words, generated words and their union without
  duplicates (the third inference phase, Sec. 3.5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datasets
    from transformers import PreTrainedTokenizerBase

Normalizer = Callable[[str], str]

#: tag label ids of the sequence-labeling baseline (a source word is / is not a keyword)
TAG_LABELS: dict[int, str] = {0: "O", 1: "KEYWORD"}


def resolve_normalizer(normalize: Normalizer | None = None) -> Normalizer:
    """``normalize`` if given, else the project's one :func:`~hf_querygen.text.normalize_for_matching`."""
    if normalize is not None:
        return normalize
    from hf_querygen.text import normalize_for_matching

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
    """The keyword order a decoder can follow on an unseen topic (issue 13, lever 3): extractive words
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
    from hf_querygen.errors import InvalidInputError

    raise InvalidInputError(f"keyword_order: {order!r} is not one of {KEYWORD_ORDERS}")


# ------------------------------------------------------------------ length prior (issue 13, lever 4)
@dataclass(frozen=True)
class KeywordLengthPrior:
    """Expected number of keywords given the query's length in words, learned on TRAIN:
    ``n_keywords ~ intercept + slope * n_words`` (least squares), rounded and clipped to
    ``[1, max_keywords]``. Decoding forces at least ``scale * expected`` keywords
    (:class:`MinKeywordsLogitsProcessor`)."""

    intercept: float
    slope: float
    max_keywords: int

    @classmethod
    def fit(
        cls, nl_queries: Sequence[str], keyword_queries: Sequence[str], normalize: Normalizer | None = None
    ) -> KeywordLengthPrior:
        norm = resolve_normalizer(normalize)
        xs = [len(norm(q).split()) for q in nl_queries]
        ys = [len(set(norm(k).split())) for k in keyword_queries]
        if not xs:
            raise ValueError("KeywordLengthPrior.fit: no pairs")
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
        return cls(my - slope * mx, slope, max(ys))

    def expected(self, n_words: int) -> float:
        return self.intercept + self.slope * n_words

    def minimum(self, n_words: int, scale: float = 1.0) -> int:
        """The forced minimum for a query of ``n_words`` normalised words (never more than it has)."""
        value = round(scale * self.expected(n_words))
        return int(max(1, min(value, self.max_keywords, max(n_words, 1))))

    def as_dict(self) -> dict[str, float]:
        return {"intercept": self.intercept, "slope": self.slope, "max_keywords": self.max_keywords}


class MinKeywordsLogitsProcessor:
    """A ``LogitsProcessor`` that forbids ending a keyword query before it holds ``min_keywords[b]``
    words (issue 13, lever 4: trained decoders stop about one word early).

    Ending = [EOS], and for the dual decoder / pointer network also the pointer's end sentinel (the
    extended id ``output_vocab_size + sentinel_position[b]``: without forbidding it, the pointer would
    stop and hand over to the generator). A step counts as a word unless it is an end, padding, [UNK]
    or [BOS], and words are counted once; while a row is short, those ids and its repeats are
    forbidden too (they would spend a step on nothing).
    Rows of a beam search are the batch rows repeated ``num_beams`` times (adjacent).

    Args:
        min_keywords: (B,) minimum word counts.
        end_token_ids: ids that end the query for every row ([EOS]).
        sentinel_ids: (B,) per-row extended sentinel ids, or None (no pointer).
        non_word_ids: ids that do not count as a word.
        min_generated: also forbid ending before this many distinct GENERATOR words (vocabulary ids
            below ``output_vocab_size``; the pointer's sentinel stays allowed, so the pointer can hand
            over): forces the generative part of the dual decoder (Table 3's generative recall).
    """

    def __init__(
        self,
        min_keywords: Sequence[int],
        end_token_ids: Sequence[int],
        sentinel_ids: Sequence[int] | None = None,
        non_word_ids: Sequence[int] = (),
        min_generated: int = 0,
        output_vocab_size: int | None = None,
    ):
        import torch

        if min_generated and output_vocab_size is None:
            raise ValueError("MinKeywordsLogitsProcessor: min_generated needs output_vocab_size")
        self.min_generated = int(min_generated)
        self.output_vocab_size = output_vocab_size
        self.min_keywords = torch.as_tensor(list(min_keywords), dtype=torch.long)
        self.end_token_ids = list(end_token_ids)
        self.sentinel_ids = None if sentinel_ids is None else torch.as_tensor(list(sentinel_ids))
        self.non_word_ids = sorted({*end_token_ids, *non_word_ids})

    def __call__(self, input_ids, scores):
        """input_ids (B*k, t) generated so far (decoder start first), scores (B*k, V') -> scores."""
        import torch

        rows = input_ids.shape[0]
        repeat = rows // max(len(self.min_keywords), 1)
        minimum = self.min_keywords.to(input_ids.device).repeat_interleave(repeat)
        generated = input_ids[:, 1:]
        is_word = ~torch.isin(generated, torch.tensor(self.non_word_ids, device=input_ids.device))
        if self.sentinel_ids is not None:
            sentinels = self.sentinel_ids.to(input_ids.device).repeat_interleave(repeat)
            is_word &= generated < sentinels.unsqueeze(1)  # past-the-sentinel ids are padding positions
            is_word &= generated != sentinels.unsqueeze(1)
        # distinct words: a repeated id adds nothing to the keyword query (it is deduplicated)
        words = [set(row[mask].tolist()) for row, mask in zip(generated, is_word, strict=True)]
        short_total = torch.tensor([len(w) for w in words], device=input_ids.device) < minimum
        short = short_total.clone()
        if self.min_generated:  # generator words: vocabulary ids (copy / pointer ids lie above)
            generator_words = torch.tensor([sum(i < self.output_vocab_size for i in w) for w in words])
            short |= generator_words.to(input_ids.device) < self.min_generated
        if not bool(short.any()):
            return scores
        scores = scores.clone()
        floor = torch.finfo(scores.dtype).min
        for token_id in self.non_word_ids:  # ends, and steps that add no word ([UNK], padding)
            if token_id < scores.shape[1]:
                scores[short, token_id] = floor
        for row in short.nonzero().squeeze(1).tolist():  # and repeats
            repeated = [i for i in words[row] if i < scores.shape[1]]
            if repeated:
                scores[row, repeated] = floor
        if self.sentinel_ids is not None:  # the pointer may hand over once the total is reached
            rows_short = short_total.nonzero().squeeze(1)
            columns = sentinels[rows_short].clamp(max=scores.shape[1] - 1)
            scores[rows_short, columns] = floor
        return scores


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


# ------------------------------------------------------------------ postprocessing (Sec. 3.5)
@dataclass(frozen=True)
class KeywordQuery:
    """A decoded keyword query: what the pointer extracted, what the generator produced, and the
    final query = their union without duplicates (pointer words first)."""

    extracted: list[str]
    generated: list[str]

    @property
    def keywords(self) -> list[str]:
        return unique_words([*self.extracted, *self.generated])

    @property
    def text(self) -> str:
        return " ".join(self.keywords)

    def as_dict(self) -> dict[str, Any]:
        return {
            "keyword_query": self.text,
            "keywords": self.keywords,
            "extracted": list(self.extracted),
            "generated": list(self.generated),
        }


def decode_dual_decoder_ids(
    ids: Sequence[int],
    source_words: Sequence[str],
    tokenizer: PreTrainedTokenizerBase,
    output_vocab_size: int,
    eos_token_id: int,
    skip_token_ids: Iterable[int] = (),
) -> KeywordQuery:
    """Turn one generated id sequence into a :class:`KeywordQuery` (the three inference phases).

    Pointer phase: ids ``>= output_vocab_size`` name a source position; the source word itself is
    emitted (so a rare or out-of-vocabulary name survives), until the position of the end
    sentinel, i.e. ``len(source_words)``. Generator phase: vocabulary ids until ``eos_token_id``;
    ids in ``skip_token_ids`` (padding, [UNK], [BOS]) are dropped.
    """
    skip = set(skip_token_ids)
    extracted: list[str] = []
    generated: list[str] = []
    in_pointer_phase = True
    for token_id in (int(t) for t in ids):
        if token_id in skip:
            continue
        if token_id >= output_vocab_size:
            position = token_id - output_vocab_size
            if position >= len(source_words):  # the end sentinel (or padding past it) ends pointing
                in_pointer_phase = False
                continue
            if in_pointer_phase:
                extracted.append(source_words[position])
            continue
        if token_id == eos_token_id:
            break
        in_pointer_phase = False
        generated.append(tokenizer.convert_ids_to_tokens(token_id))
    return KeywordQuery(unique_words(extracted), unique_words(generated))


# ------------------------------------------------------------------ dataset encoding
#: what :func:`encode_nl2kw` prepares the labels for
ENCODING_MODES = ("seq2seq", "dual", "pointer", "tagging", "joint")


def add_keyword_targets(
    dataset: datasets.Dataset | datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    order: TfidfKeywordOrder,
    normalize: Normalizer | None = None,
) -> datasets.Dataset | datasets.DatasetDict:
    """Add ``target_words`` (the keyword query's tokenizer words, unique, in TF-IDF order) and
    ``ordered_keyword_query`` (the same joined by spaces: the decoders' target text).

    Words that normalise to nothing (punctuation split off by the tokenizer, e.g. the "," of QALD
    keyword lists) are not keywords and are dropped."""
    from hf_querygen.tokenization import word_tokenize

    norm = resolve_normalizer(normalize)

    def add(batch: dict[str, list]) -> dict[str, list]:
        ordered = [
            order.order([w for w in word_tokenize(tokenizer, keyword_query) if norm(w)], nl_query)
            for nl_query, keyword_query in zip(batch["nl_query"], batch["keyword_query"], strict=True)
        ]
        return {"target_words": ordered, "ordered_keyword_query": [" ".join(words) for words in ordered]}

    return dataset.map(add, batched=True, desc="ordering keywords by TF-IDF")


def encode_nl2kw(
    dataset: datasets.Dataset | datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    order: TfidfKeywordOrder,
    mode: str,
    output_vocab_size: int,
    max_source_length: int = 64,
    max_target_length: int = 24,
    normalize: Normalizer | None = None,
    num_proc: int | None = None,
) -> datasets.Dataset | datasets.DatasetDict:
    """Encode nl2kw examples for one kind of model.

    Every mode runs :func:`hf_querygen.tasks.seq2seq.encode_seq2seq` on ``nl_query`` ->
    ``ordered_keyword_query`` (input_ids ending in [EOS], source_words, source_word_ids, labels
    without copying = the vanilla / attentional seq2seq targets), then:

    * ``"dual"`` / ``"pointer"``: ``labels`` replaced by :func:`dual_decoder_labels` (pointer part,
      sentinel, and for "dual" the generator part + [EOS]); also ``pointer_positions``;
    * ``"tagging"``: ``labels`` replaced by per-token :func:`keyword_tag_labels` (-100 on [EOS]);
    * ``"joint"``: seq2seq labels encoded WITH copy ids (``V + first source position`` for a target
      word outside the output vocabulary that occurs in the source): the joint ATS2S+SL model reads
      its tag labels off them and maps them to [UNK] for its decoder.
    """
    from hf_querygen.tasks.seq2seq import encode_seq2seq
    from hf_querygen.tokenization import EOS_ID, UNK_ID

    if mode not in ENCODING_MODES:
        raise ValueError(f"encode_nl2kw: unknown mode {mode!r}; expected one of {ENCODING_MODES}")
    with_targets = add_keyword_targets(dataset, tokenizer, order, normalize)
    encoded = encode_seq2seq(
        with_targets,
        tokenizer,
        "nl_query",
        "ordered_keyword_query",
        output_vocab_size,
        max_source_length=max_source_length,
        max_target_length=max_target_length,
        copy=mode == "joint",
        num_proc=num_proc,
    )
    if mode in ("seq2seq", "joint"):
        return encoded
    vocab = tokenizer.get_vocab()

    def relabel(batch: dict[str, list]) -> dict[str, list]:
        out: dict[str, list] = {}
        for source_words, target_words, input_ids in zip(
            batch["source_words"], batch["target_words"], batch["input_ids"], strict=True
        ):
            if mode == "tagging":
                out.setdefault("labels", []).append(
                    keyword_tag_labels(source_words, target_words, normalize) + [-100]
                )
                continue
            # room for the sentinel and [EOS]
            targets = keyword_targets(source_words, target_words, normalize, max_words=max_target_length - 2)
            generative = targets.generative
            pointer_positions = targets.pointer_positions
            generator_ids = [
                i if (i := vocab.get(word, UNK_ID)) < output_vocab_size else UNK_ID for word in generative
            ]
            out.setdefault("labels", []).append(
                dual_decoder_labels(
                    targets,
                    len(input_ids) - 1,
                    output_vocab_size,
                    generator_ids,
                    EOS_ID,
                    pointer_only=mode == "pointer",
                )
            )
            out.setdefault("pointer_positions", []).append(pointer_positions)
        return out

    return encoded.map(relabel, batched=True, num_proc=num_proc, desc=f"{mode} labels")
