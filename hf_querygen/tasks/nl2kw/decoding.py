"""nl2kw decoding (Liu et al., CIKM'18, Sec. 3.5, and the length lever): the keyword-length prior
and the logits processor that keeps a decoder from stopping early, and the postprocessing of generated
ids into extracted words, generated words and their union without duplicates (the third inference
phase).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .targets import Normalizer, resolve_normalizer, unique_words

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


# ------------------------------------------------------------------ length prior (the length lever)
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
    words (the length lever: trained decoders stop about one word early).

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
