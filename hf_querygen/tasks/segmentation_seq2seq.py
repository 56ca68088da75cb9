"""Query segmentation as sequence-to-sequence generation (Lin et al. 2017, Sec. 3.4).

The encoder reads the query words; the decoder writes them again with a ``|`` token at every
break (Vocab_target = Vocab_source + {"|"}). Two ways to decode the same trained model:

* unconstrained (as the paper ran it): plain ``generate()``; the output may drop, repeat or
  invent words, and is read back leniently with
  :func:`hf_querygen.tasks.segmentation.target_tokens_to_breaks`;
* constrained: a :class:`ConstrainedSegmentationLogitsProcessor` allows at each step only "copy
  the next query word", "emit a break" (not twice in a row, not first) or, after the last word,
  ``[EOS]``. The output is then always a segmentation of the query itself.

Words are whitespace tokens (the tokenizer is trained with ``split_punctuation=False``), so token
position ``j`` is query word ``j`` and breaks map back onto the user's own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from .segmentation import BREAK_TOKEN, segmentation_to_target, target_tokens_to_breaks

if TYPE_CHECKING:
    import datasets
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

TARGET_COLUMN = "segmentation_target"


class ConstrainedSegmentationLogitsProcessor(LogitsProcessor):
    """Masks every token except: the next query word, the break token, or EOS after the last word.

    Args:
        word_token_ids: per example, the output-space id that writes query word ``j`` - its
            vocabulary id (a model without copying) or ``output_vocab_size + j`` (a copy model).
        break_token_id: id of ``|``.
        eos_token_id: id of ``[EOS]``.
        num_beams: generate()'s rows are example-major: row ``r`` belongs to example ``r // num_beams``.
    """

    def __init__(self, word_token_ids: Sequence[Sequence[int]], break_token_id: int, eos_token_id: int,
                 num_beams: int = 1):
        self.word_token_ids = [list(ids) for ids in word_token_ids]
        self.break_token_id = break_token_id
        self.eos_token_id = eos_token_id
        self.num_beams = num_beams

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
        """input_ids: (B * beams, t) decoder prefix incl. the start token; scores: (B * beams, C)."""
        mask = torch.full_like(scores, float("-inf"))
        for row, prefix in enumerate(input_ids[:, 1:].tolist()):
            mask[row, self.allowed_next(row // self.num_beams, prefix)] = 0.0
        return scores + mask


def add_segmentation_targets(dataset: datasets.Dataset, reference_column: str = "reference") -> datasets.Dataset:
    """Add the seq2seq target (words with ``|`` tokens) of the ``|``-notation ``reference_column``."""
    return dataset.map(
        lambda batch: {TARGET_COLUMN: [segmentation_to_target(s) for s in batch[reference_column]]},
        batched=True,
        desc="segmentation targets",
    )


def train_segmentation_tokenizer(queries: Sequence[str], references: Sequence[str]) -> PreTrainedTokenizerFast:
    """Whitespace word tokenizer whose target side is the queries' words plus ``|``."""
    from ..tokenization import train_word_tokenizer

    return train_word_tokenizer(
        queries,
        target_texts=[segmentation_to_target(reference) for reference in references],
        split_punctuation=False,
    )


def _word_token_ids(model: PreTrainedModel, input_ids: torch.Tensor, lengths: Sequence[int]) -> list[list[int]]:
    """Per example the output id that writes each query word (see the logits processor)."""
    if getattr(model.config, "copy", "none") != "none":
        first_copy_id = model.config.output_vocab_size
        return [[first_copy_id + j for j in range(n)] for n in lengths]
    if bool((input_ids >= model.config.output_vocab_size).any()):
        raise ValueError("a query word id lies outside the output vocabulary of this model without copying")
    return [row[:n] for row, n in zip(input_ids.tolist(), lengths, strict=True)]


def _output_tokens(ids: Sequence[int], source_ids: Sequence[int], tokenizer: PreTrainedTokenizerFast,
                   output_vocab_size: int) -> list[str]:
    """Generated ids (after the start token) -> token strings up to [EOS]; a copy id
    ``output_vocab_size + j`` becomes the token of source position ``j``. Unlike
    :func:`hf_querygen.tasks.seq2seq.decode_extended` this keeps ``[UNK]``: it stands for a query word."""
    from ..tokenization import EOS_ID

    tokens = []
    for token_id in ids:
        if token_id == EOS_ID:
            break
        if token_id == tokenizer.pad_token_id:
            continue
        if token_id >= output_vocab_size:
            position = token_id - output_vocab_size
            if position < len(source_ids):
                tokens.append(tokenizer.convert_ids_to_tokens(source_ids[position]))
            continue
        tokens.append(tokenizer.convert_ids_to_tokens(token_id))
    return tokens


def segment_with_seq2seq(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    queries: Sequence[str],
    constrained: bool = True,
    batch_size: int = 64,
    num_beams: int = 1,
) -> list[list[int]]:
    """Break vector of each query (split at whitespace) as decoded by an encoder-decoder segmenter."""
    from ..tokenization import EOS_ID
    from .seq2seq import Seq2SeqCollator, encode_sources

    word_lists = [query.split() for query in queries]
    encoded = encode_sources([" ".join(words) for words in word_lists], tokenizer)
    for words, source_words in zip(word_lists, encoded["source_words"], strict=True):
        if len(words) != len(source_words):
            raise ValueError(f"tokenizer splits {' '.join(words)!r} into {len(source_words)} tokens, not "
                             f"{len(words)} words: train it with split_punctuation=False")
    break_id = tokenizer.convert_tokens_to_ids(BREAK_TOKEN)
    if break_id == tokenizer.unk_token_id:
        raise ValueError(f"the tokenizer has no {BREAK_TOKEN!r} token: not a segmentation tokenizer")
    collator = Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)
    longest = max(len(words) for words in word_lists)
    breaks: list[list[int]] = []
    model.eval()
    for start in range(0, len(word_lists), batch_size):
        rows = range(start, min(start + batch_size, len(word_lists)))
        batch = collator([{k: encoded[k][i] for k in ("input_ids", "attention_mask", "source_word_ids")} for i in rows])
        lengths = [len(word_lists[i]) for i in rows]
        kwargs = {"num_beams": num_beams, "do_sample": False, "max_new_tokens": 2 * longest + 1}
        if constrained:
            processor = ConstrainedSegmentationLogitsProcessor(
                _word_token_ids(model, batch["input_ids"], lengths), break_id, EOS_ID, num_beams
            )
            kwargs["logits_processor"] = LogitsProcessorList([processor])
        inputs = {k: v.to(model.device) for k, v in batch.items() if k != "source_word_ids" or model.config.copy != "none"}
        with torch.no_grad():
            generated = model.generate(**inputs, **kwargs)
        for i, ids in zip(rows, generated.tolist(), strict=True):
            source_ids = encoded["input_ids"][i][: len(word_lists[i])]
            tokens = _output_tokens(ids[1:], source_ids, tokenizer, model.config.output_vocab_size)
            # [UNK] on both sides lines an out-of-vocabulary query word up with its output token
            breaks.append(target_tokens_to_breaks(tokens, tokenizer.convert_ids_to_tokens(source_ids)))
    return breaks
