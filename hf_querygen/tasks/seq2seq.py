"""Generic seq2seq preprocessing and postprocessing, shared by every sequence-to-sequence task.

Encoding (:func:`encode_seq2seq`, a batched ``datasets.map``) produces per example

* ``input_ids`` / ``attention_mask``: the source words, then ``[EOS]`` (the tokenizer's
  post-processor appends it, so ``tokenizer(text)`` at inference gives the same sequence);
* ``labels`` in the *extended output space* (see :mod:`hf_querygen.nn.copy`): a target word
  whose id is below ``output_vocab_size`` keeps its id; otherwise, with copying on, a word that
  occurs in the (truncated) source becomes ``output_vocab_size + j`` for its FIRST source position
  ``j``; otherwise ``[UNK]``. The sequence ends with ``[EOS]``;
* ``source_word_ids``: the source token ids with every out-of-vocabulary word given its own id
  ``len(tokenizer) + k`` (k-th distinct OOV word of the example), so that a copy model can tell two
  different OOV words apart when it sums attention over repeated words (Liu'18 Eq. 4) -
  ``input_ids`` maps both to ``[UNK]``;
* ``source_words``: the normalised source words, position ``j`` = input position ``j``, kept to
  turn copy ids back into strings (:func:`decode_extended`).

:func:`decode_extended` is the single place that maps extended ids back to words, so an OOV name
copied from the source comes out as itself, never as ``[UNK]``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..tokenization import EOS_ID, UNK_ID, word_tokenize

if TYPE_CHECKING:
    import datasets
    import torch
    from transformers import PreTrainedTokenizerFast

LABEL_PAD_ID = -100
#: columns :func:`encode_seq2seq` adds
ENCODED_COLUMNS = ("input_ids", "attention_mask", "labels", "source_word_ids", "source_words")


def source_word_ids_for(input_ids: Sequence[int], source_words: Sequence[str], vocab_size: int) -> list[int]:
    """``input_ids`` with each distinct OOV word (an ``[UNK]`` at a word position) given the id
    ``vocab_size + k``; ``[EOS]`` and in-vocabulary words keep their ids."""
    oov_ids: dict[str, int] = {}
    out = list(input_ids)
    for position, word in enumerate(source_words):
        if out[position] == UNK_ID:
            out[position] = oov_ids.setdefault(word, vocab_size + len(oov_ids))
    return out


def extended_target_ids(
    target_words: Sequence[str],
    source_words: Sequence[str],
    vocab: Mapping[str, int],
    output_vocab_size: int,
    copy: bool = True,
) -> list[int]:
    """Target words -> ids in the extended output space (no ``[EOS]``; see module docstring).

    ``vocab`` is ``tokenizer.get_vocab()`` (passed in because building it costs a dict per call).
    """
    first_position: dict[str, int] = {}
    for position, word in enumerate(source_words):
        first_position.setdefault(word, position)
    ids = []
    for word in target_words:
        token_id = vocab.get(word, UNK_ID)
        if token_id < output_vocab_size and token_id != UNK_ID:
            ids.append(token_id)
        elif copy and word in first_position:
            ids.append(output_vocab_size + first_position[word])
        else:
            ids.append(UNK_ID)
    return ids


def encode_sources(
    texts: Sequence[str], tokenizer: PreTrainedTokenizerFast, max_source_length: int | None = None
) -> dict[str, list]:
    """Source side of :func:`encode_seq2seq` for a list of texts (also used at inference):
    ``input_ids``, ``attention_mask``, ``source_word_ids``, ``source_words`` (lists, unpadded)."""
    # split_special_tokens: a literal "[EOS]" in the text is text, as word_tokenize sees it
    encoded = tokenizer(
        list(texts),
        truncation=max_source_length is not None,
        max_length=max_source_length,
        split_special_tokens=True,
    )
    out: dict[str, list] = {
        "input_ids": encoded["input_ids"],
        "attention_mask": encoded["attention_mask"],
        "source_word_ids": [],
        "source_words": [],
    }
    vocab_size = len(tokenizer)
    for text, input_ids in zip(texts, encoded["input_ids"], strict=True):
        # the tokenizer kept len(input_ids) - 1 words before [EOS]
        words = word_tokenize(tokenizer, text)[: len(input_ids) - 1]
        out["source_words"].append(words)
        out["source_word_ids"].append(source_word_ids_for(input_ids, words, vocab_size))
    return out


def _encode_batch(
    batch: Mapping[str, list],
    tokenizer: PreTrainedTokenizerFast,
    source_column: str,
    target_column: str | None,
    output_vocab_size: int,
    max_source_length: int,
    max_target_length: int,
    copy: bool,
) -> dict[str, list]:
    sources = [_as_text(s, source_column, i) for i, s in enumerate(batch[source_column])]
    out = encode_sources(sources, tokenizer, max_source_length)
    if target_column is not None:
        out["labels"] = []
        vocab = tokenizer.get_vocab()
        for i, (target, words) in enumerate(zip(batch[target_column], out["source_words"], strict=True)):
            target_words = word_tokenize(tokenizer, _as_text(target, target_column, i))
            ids = extended_target_ids(
                target_words[: max_target_length - 1], words, vocab, output_vocab_size, copy
            )
            out["labels"].append(ids + [EOS_ID])
    return out


def _as_text(value: Any, column: str, index: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return " ".join(value)  # a list of keywords / words is read as the words in order
    raise TypeError(f"column {column!r}, row {index} of the batch: expected text, got {type(value).__name__}")


def encode_seq2seq(
    dataset: datasets.Dataset | datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerFast,
    source_column: str,
    target_column: str | None,
    output_vocab_size: int,
    max_source_length: int = 64,
    max_target_length: int = 32,
    copy: bool = True,
    num_proc: int | None = None,
    remove_columns: bool = False,
) -> datasets.Dataset | datasets.DatasetDict:
    """Tokenise a (dict of) dataset(s) for a seq2seq model; see the module docstring for the columns.

    Args:
        source_column / target_column: text columns (a list of strings is joined with spaces);
            ``target_column=None`` encodes sources only (inference).
        output_vocab_size: the decoder's output vocabulary size ``V`` (ids ``>= V`` are copies).
        max_source_length / max_target_length: lengths including the final ``[EOS]``.
        copy: encode target words outside the output vocabulary as source positions (``False``:
            they become ``[UNK]``, the label space of a model without copying).
        remove_columns: drop the dataset's original columns (by default they stay, so references
            such as keyword lists remain available for evaluation).
    """
    if max_source_length < 2 or max_target_length < 2:
        raise ValueError("max_source_length and max_target_length must leave room for a word and [EOS]")
    if not 0 < output_vocab_size <= len(tokenizer):
        raise ValueError(
            f"output_vocab_size={output_vocab_size} must be in 1..{len(tokenizer)} (the vocabulary)"
        )
    column_names = dataset.column_names
    some_columns = next(iter(column_names.values())) if isinstance(column_names, dict) else column_names
    for column in (source_column, target_column):
        if column is not None and column not in some_columns:
            raise KeyError(f"column {column!r} not in the dataset (columns: {some_columns})")
    clashes = [c for c in ENCODED_COLUMNS if c in some_columns and c not in (source_column, target_column)]
    if clashes:
        raise ValueError(f"the dataset already has columns {clashes}; rename them before encoding")
    return dataset.map(
        _encode_batch,
        batched=True,
        num_proc=num_proc,
        remove_columns=some_columns if remove_columns else None,
        fn_kwargs={
            "tokenizer": tokenizer,
            "source_column": source_column,
            "target_column": target_column,
            "output_vocab_size": output_vocab_size,
            "max_source_length": max_source_length,
            "max_target_length": max_target_length,
            "copy": copy,
        },
        desc="encoding seq2seq",
    )


class Seq2SeqCollator:
    """Pads a list of encoded examples into a batch of tensors.

    ``input_ids`` / ``source_word_ids`` / ``decoder_input_ids`` are padded with ``pad_token_id``,
    masks with 0 and ``labels`` with -100 (ignored by the loss); ``pad_values`` adds or overrides
    keys (task-specific integer columns, e.g. pointer positions). Keys that do not hold integer
    sequences (``source_words``, raw text) are dropped.
    """

    def __init__(self, pad_token_id: int = 0, pad_values: Mapping[str, int] | None = None):
        self.pad_values = {
            "input_ids": pad_token_id,
            "source_word_ids": pad_token_id,
            "decoder_input_ids": pad_token_id,
            "attention_mask": 0,
            "decoder_attention_mask": 0,
            "labels": LABEL_PAD_ID,
            **(pad_values or {}),
        }

    def __call__(self, features: list[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        import torch

        if not features:
            raise ValueError("Seq2SeqCollator got an empty list of examples")
        batch = {}
        for key, pad_value in self.pad_values.items():
            if key not in features[0]:
                continue
            rows = [list(feature[key]) for feature in features]
            width = max(len(row) for row in rows)
            batch[key] = torch.tensor(
                [row + [pad_value] * (width - len(row)) for row in rows], dtype=torch.long
            )
        return batch


def decode_extended(
    ids: Sequence[int] | torch.Tensor,
    source_words: Sequence[str],
    tokenizer: PreTrainedTokenizerFast,
    output_vocab_size: int,
    skip_token_ids: Collection[int] | None = None,
) -> list[str]:
    """Extended-space ids -> words: ``id >= output_vocab_size`` is the source word at position
    ``id - output_vocab_size``; stops at ``[EOS]``; skips ``skip_token_ids`` (default: every special
    token) and -100 padding.

    A copy id pointing past the source words (the ``[EOS]`` position or batch padding) yields no
    word. Leading ``decoder_start_token_id`` / ``[BOS]`` are specials and therefore skipped.
    """
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    special_ids = set(tokenizer.all_special_ids if skip_token_ids is None else skip_token_ids)
    words: list[str] = []
    for token_id in ids:
        if token_id == EOS_ID:
            break
        if token_id < 0 or token_id in special_ids:
            continue
        if token_id >= output_vocab_size:
            position = token_id - output_vocab_size
            if position < len(source_words):
                words.append(source_words[position])
            continue
        words.append(tokenizer.convert_ids_to_tokens(token_id))
    return words


def decode_extended_batch(
    sequences: Sequence[Sequence[int]] | torch.Tensor,
    source_words: Sequence[Sequence[str]],
    tokenizer: PreTrainedTokenizerFast,
    output_vocab_size: int,
    num_return_sequences: int = 1,
) -> list[str]:
    """Decode generated sequences to texts (words joined by spaces); with ``num_return_sequences``
    > 1, sequences ``i * n .. i * n + n - 1`` belong to source ``i`` (generate()'s order)."""
    if len(sequences) != len(source_words) * num_return_sequences:
        raise ValueError(
            f"{len(sequences)} sequences for {len(source_words)} sources x {num_return_sequences} returns"
        )
    return [
        " ".join(decode_extended(seq, source_words[i // num_return_sequences], tokenizer, output_vocab_size))
        for i, seq in enumerate(sequences)
    ]
