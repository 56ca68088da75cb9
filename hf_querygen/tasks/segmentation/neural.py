"""Neural query segmenters: data preparation and decoding for the RNN encoder-decoder (Lin et al.
2017, Sec. 3.4) and the BiLSTM BIO tagger.

Encoder-decoder: the encoder reads the query words; the decoder writes them again with a ``|``
token at every break (Vocab_target = Vocab_source + {"|"}). The same trained model is decoded two
ways:

* unconstrained (as the paper ran it): plain ``generate()``; the output may drop, repeat or
  invent words, and is read back leniently with
  :func:`hf_querygen.tasks.segmentation.target_tokens_to_breaks`;
* constrained: :class:`ConstrainedSegmentationLogitsProcessor` allows at each step only "write
  the next query word", "emit a break" (not first, not twice in a row) or, after the last word,
  ``[EOS]``; the output is then always a segmentation of the query itself.

Tagger: one B/I tag per query word (``[EOS]`` gets no label), read back with
:func:`hf_querygen.tasks.segmentation.bio_to_breaks`.

Words are whitespace tokens (the tokenizer is trained with ``split_punctuation=False``), so token
position ``j`` is query word ``j`` and breaks map back onto the caller's own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from transformers import LogitsProcessor

from ...inference import run_generate
from ...text import (
    BIO_LABELS,
    BREAK_TOKEN,
    bio_to_breaks,
    breaks_to_bio,
    segmentation_to_target,
    target_tokens_to_breaks,
)
from ...tokenization import train_word_tokenizer
from ..seq2seq import Seq2SeqCollator, decode_extended, encode_seq2seq, encode_sources, extended_target_ids
from ..word_tagging import IGNORED_LABEL, encode_word_tags, predict_word_tags

if TYPE_CHECKING:
    import datasets
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

TARGET_COLUMN = "segmentation_target"
LABEL_PAD_ID = IGNORED_LABEL


class ConstrainedSegmentationLogitsProcessor(LogitsProcessor):
    """Masks every token except: the next query word, the break token, or EOS after the last word.

    Args:
        word_token_ids: per example, the output-space id that writes query word ``j`` - its
            vocabulary id (a model without copying) or ``output_vocab_size + j`` (a copy model).
        break_token_id: id of ``|``.
        eos_token_id: id of ``[EOS]``.
        num_beams: generate()'s rows are example-major: row ``r`` belongs to example ``r // num_beams``.
        pool_word_probability: score "write the next word" with the probability of writing ANY
            word (logsumexp over every token but ``|`` and ``[EOS]``) instead of that word's own
            probability. The choice is then "break or continue" by the model's break probability;
            without pooling a model that cannot predict a rare next word always breaks.
    """

    def __init__(
        self,
        word_token_ids: Sequence[Sequence[int]],
        break_token_id: int,
        eos_token_id: int,
        num_beams: int = 1,
        pool_word_probability: bool = False,
    ):
        self.word_token_ids = [list(ids) for ids in word_token_ids]
        self.break_token_id = break_token_id
        self.eos_token_id = eos_token_id
        self.num_beams = num_beams
        self.pool_word_probability = pool_word_probability

    def allowed_next(self, example: int, generated: Sequence[int]) -> list[int]:
        """Token ids allowed after ``generated`` (the decoder prefix without its start token)."""
        words = self.word_token_ids[example]
        words_written = sum(token != self.break_token_id for token in generated)
        if words_written >= len(words):
            return [self.eos_token_id]
        allowed = [words[words_written]]
        if generated and generated[-1] != self.break_token_id:
            allowed.append(self.break_token_id)
        return allowed

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """input_ids: (B * beams, t) decoder prefix incl. the start token; scores: (B * beams, C)
        log-probabilities (or logits) of the next token. Returns scores with -inf outside the allowed set."""
        out = torch.full_like(scores, float("-inf"))
        if self.pool_word_probability:
            log_probs = scores.log_softmax(-1)
            non_word = torch.zeros(scores.shape[-1], dtype=torch.bool, device=scores.device)
            non_word[[self.break_token_id, self.eos_token_id]] = True
            any_word = log_probs.masked_fill(non_word, float("-inf")).logsumexp(-1)  # (B * beams,)
        for row, prefix in enumerate(input_ids[:, 1:].tolist()):
            allowed = self.allowed_next(row // self.num_beams, prefix)
            if self.pool_word_probability:
                out[row, allowed] = log_probs[row, allowed]
                if allowed[0] != self.eos_token_id:  # the first allowed token writes the next word
                    out[row, allowed[0]] = any_word[row]
            else:
                out[row, allowed] = scores[row, allowed]
        return out


# ---------------------------------------------------------------- data preparation
def train_segmentation_tokenizer(
    queries: Sequence[str], references: Sequence[str], min_word_frequency: int = 1
) -> PreTrainedTokenizerFast:
    """Whitespace word tokenizer whose target side is the references' words plus ``|``.

    min_word_frequency: words seen fewer times in training are ``[UNK]`` on both sides. With 2, the
    training queries' singletons become ``[UNK]``, so a model learns what to do with a word it does not
    know (the input of every unseen word); with 1 ``[UNK]`` never occurs in training and its embedding
    stays at its random initialisation.
    """
    return train_word_tokenizer(
        queries,
        target_texts=[segmentation_to_target(reference) for reference in references],
        min_frequency=min_word_frequency,
        split_punctuation=False,
    )


def encode_for_seq2seq(
    dataset: datasets.Dataset, tokenizer: PreTrainedTokenizerFast, reference_column: str = "reference"
) -> datasets.Dataset:
    """Model columns for the encoder-decoder: source = ``query``, target = the reference with ``|``
    tokens (labels in the output vocabulary; the paper's model does not copy)."""
    with_targets = dataset.map(
        lambda batch: {TARGET_COLUMN: [segmentation_to_target(s) for s in batch[reference_column]]},
        batched=True,
        desc="segmentation targets",
    )
    encoded = encode_seq2seq(with_targets, tokenizer, "query", TARGET_COLUMN, len(tokenizer), copy=False)
    return encoded.select_columns(["input_ids", "attention_mask", "labels"])


def encode_for_tagging(
    dataset: datasets.Dataset, tokenizer: PreTrainedTokenizerFast, breaks_column: str = "breaks"
) -> datasets.Dataset:
    """Model columns for a BIO tagger: ``input_ids``, ``attention_mask``, ``labels``: each word's B/I id
    on its first piece, -100 on its other pieces and on special tokens (``[CLS]`` / ``[SEP]`` of a BERT
    tokenizer, ``[EOS]`` of the word tokenizer): :func:`hf_querygen.tasks.word_tagging.encode_word_tags`."""

    def bio_ids(batch: dict[str, list], i: int, words: list[str]) -> list[int]:
        return [BIO_LABELS.index(tag) for tag in breaks_to_bio(batch[breaks_column][i])]

    return encode_word_tags(dataset, tokenizer, "query", bio_ids, desc="BIO tagging")


def encode_queries(queries: Sequence[str], tokenizer: PreTrainedTokenizerFast) -> dict[str, list]:
    """Encoder inputs of raw queries, with a check that tokens and whitespace words line up."""
    encoded = encode_sources([" ".join(query.split()) for query in queries], tokenizer)
    for query, source_words in zip(queries, encoded["source_words"], strict=True):
        if len(query.split()) != len(source_words):
            raise ValueError(
                f"the tokenizer splits {query!r} into {len(source_words)} tokens, not "
                f"{len(query.split())} words: train it with split_punctuation=False"
            )
    return encoded


# ---------------------------------------------------------------- decoding (one batch)
def _word_token_ids(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, source_words: Sequence[Sequence[str]]
) -> list[list[int]]:
    """Per example the output id that writes each query word (see the logits processor): the id a
    label of that word would have (:func:`hf_querygen.tasks.seq2seq.extended_target_ids`), i.e. its
    output-vocabulary id, or for a copy model and a word outside the output vocabulary
    ``output_vocab_size + `` its first source position."""
    vocab = tokenizer.get_vocab()
    copies = getattr(model.config, "copy", "none") != "none"
    size = model.config.output_vocab_size
    return [extended_target_ids(words, words, vocab, size, copy=copies) for words in source_words]


def seq2seq_batch_breaks(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    batch: dict[str, torch.Tensor],
    source_words: Sequence[Sequence[str]],
    constrained: bool = True,
    num_beams: int = 1,
    pool_word_probability: bool = True,
) -> list[list[int]]:
    """Break vectors decoded by an encoder-decoder segmenter for one padded batch.

    batch: ``input_ids`` / ``attention_mask`` (B, S) with the query words then ``[EOS]``, and
    ``source_word_ids`` (B, S) for a copy model; source_words: the normalised words per query.
    constrained: decode with :class:`ConstrainedSegmentationLogitsProcessor` (with
    ``pool_word_probability``, "continue" is scored by the probability of writing any word).
    """
    break_id = tokenizer.convert_tokens_to_ids(BREAK_TOKEN)
    if break_id == tokenizer.unk_token_id:
        raise ValueError(f"the tokenizer has no {BREAK_TOKEN!r} token: it is not a segmentation tokenizer")
    lengths = [len(words) for words in source_words]
    # start token + n words + (n - 1) breaks + [EOS]
    kwargs = {"num_beams": num_beams, "do_sample": False, "max_length": 2 * max(lengths) + 1}
    processors = []
    if constrained:
        processors.append(
            ConstrainedSegmentationLogitsProcessor(
                _word_token_ids(model, tokenizer, source_words),
                break_id,
                tokenizer.eos_token_id,
                num_beams,
                pool_word_probability,
            )
        )
    inputs = ["input_ids", "attention_mask"] + (["source_word_ids"] if model.config.copy != "none" else [])
    generated = run_generate(model, {key: batch[key] for key in inputs}, processors, **kwargs)
    breaks = []
    for row, ids, n in zip(batch["input_ids"].tolist(), generated.tolist(), lengths, strict=True):
        query_tokens = tokenizer.convert_ids_to_tokens(row[:n])
        # only padding is skipped: [UNK] on both sides lines an out-of-vocabulary query word up with its
        # output token (ids[1:]: after the start token)
        output_tokens = decode_extended(
            ids[1:],
            query_tokens,
            tokenizer,
            model.config.output_vocab_size,
            skip_token_ids={tokenizer.pad_token_id},
        )
        breaks.append(target_tokens_to_breaks(output_tokens, query_tokens))
    return breaks


def is_seq2seq_segmenter(model: PreTrainedModel) -> bool:
    return bool(getattr(model.config, "is_encoder_decoder", False))


def segment_breaks(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    queries: Sequence[str],
    constrained: bool = True,
    batch_size: int = 64,
    num_beams: int = 1,
    pool_word_probability: bool = True,
) -> list[list[int]]:
    """Break vector of each query (words = whitespace split) by an encoder-decoder or tagger segmenter;
    ``constrained`` / ``num_beams`` / ``pool_word_probability``: see :func:`seq2seq_batch_breaks`."""
    collator = Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)
    model.eval()
    breaks: list[list[int]] = []
    if not is_seq2seq_segmenter(model):
        # a word the tokenizer cut off starts a segment of its own: the model never saw it
        tags = predict_word_tags(model, tokenizer, queries, batch_size, cut_off_tag="B")
        return [bio_to_breaks(row) for row in tags]
    encoded = encode_queries(queries, tokenizer)
    for start in range(0, len(queries), batch_size):
        rows = range(start, min(start + batch_size, len(queries)))
        batch = collator(
            [{k: encoded[k][i] for k in ("input_ids", "attention_mask", "source_word_ids")} for i in rows]
        )
        breaks += seq2seq_batch_breaks(
            model,
            tokenizer,
            batch,
            [encoded["source_words"][i] for i in rows],
            constrained,
            num_beams,
            pool_word_probability,
        )
    return breaks
