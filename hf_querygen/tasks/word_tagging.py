"""Word-level token classification on any tokenizer: one tag per whitespace word, read at its first piece.

The building block of every tagger that labels a query's own words, whatever the tokenizer cuts them
into: the BIO segmenters (:mod:`hf_querygen.tasks.segmentation.neural`) and the keyword tagger warm-started
from a pretrained encoder (:mod:`hf_querygen.tasks.nl2kw.task`).

* :func:`word_aligned_inputs`: encoder inputs of whitespace-split texts with the position of each word's
  first piece;
* :func:`encode_word_tags`: those inputs plus ``labels``, each word's tag id on its first piece and -100
  on its other pieces and on special tokens, so the loss counts every word once, as decoding reads it;
* :func:`predict_word_tags`: each word's argmax tag name, batched;
* :func:`token_classifier_config`: the config of a token classifier warm-started from the backbone the
  data was tokenized for.

Shapes: ``input_ids`` / ``attention_mask`` (B, S) word pieces; logits (B, S, L) over the L tags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..specs import family_of

if TYPE_CHECKING:
    import datasets
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

#: the label id the loss ignores (pieces after a word's first, special tokens)
IGNORED_LABEL = -100


def word_aligned_inputs(texts: Sequence[str], tokenizer: PreTrainedTokenizerFast) -> dict[str, list]:
    """Encoder inputs of a tagger for whitespace-split texts, with where each word starts.

    Any tokenizer: a word-level one gives one token per word, a subword one (WordPiece, BPE) several;
    the words are handed over pre-split (``is_split_into_words``), so a word is never merged with its
    neighbour. Returns ``input_ids`` / ``attention_mask`` (lists, unpadded) and ``word_starts``: per text,
    the position of each word's FIRST piece (the piece whose tag is the word's), ``-1`` for a word cut off
    by the tokenizer's ``model_max_length``. A word the tokenizer turns into no piece at all (a zero-width
    space, a control character: BERT's normaliser drops them) is read as the unknown token, so every word
    keeps a position.
    """
    word_lists = [text.split() for text in texts]
    vocabulary = sorted({word for words in word_lists for word in words})
    pieces = (
        tokenizer(vocabulary, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        if vocabulary
        else []
    )
    empty = {word for word, ids in zip(vocabulary, pieces, strict=True) if not ids}
    if empty:  # stand-in words of one piece, whose piece becomes the unknown token below
        stand_in = _one_piece_word(tokenizer)
        word_lists = [[stand_in if word in empty else word for word in words] for words in word_lists]
    limit = getattr(tokenizer, "model_max_length", None)
    bounded = isinstance(limit, int) and 0 < limit < 10**9  # transformers' "no limit" is int(1e30)
    encoded = tokenizer(
        word_lists,
        is_split_into_words=True,
        truncation=bounded,
        max_length=limit if bounded else None,
        split_special_tokens=True,
    )
    starts: list[list[int]] = []
    for row, words in enumerate(word_lists):
        first = [-1] * len(words)
        for position, word in enumerate(encoded.word_ids(row)):
            if word is not None and first[word] < 0:
                first[word] = position
        starts.append(first)
        if empty:
            for word, position in zip(texts[row].split(), first, strict=True):
                if word in empty and position >= 0:
                    encoded["input_ids"][row][position] = tokenizer.unk_token_id
    return {
        "input_ids": encoded["input_ids"],
        "attention_mask": encoded["attention_mask"],
        "word_starts": starts,
    }


def _one_piece_word(tokenizer: PreTrainedTokenizerFast) -> str:
    """A word the tokenizer reads as exactly one piece (a stand-in position for a word it deletes)."""
    for candidate in ("a", "x", "0", "unk"):
        if len(tokenizer(candidate, add_special_tokens=False)["input_ids"]) == 1:
            return candidate
    raise ValueError("the tokenizer reads none of 'a', 'x', '0', 'unk' as one piece")


def encode_word_tags(
    dataset: datasets.Dataset,
    tokenizer: PreTrainedTokenizerFast,
    text_column: str,
    word_tags: Callable[[dict[str, Any], int, list[str]], list[int]],
    desc: str = "word tags",
) -> datasets.Dataset:
    """Model columns ``input_ids`` / ``attention_mask`` / ``labels`` of a word tagger.

    ``word_tags(batch, i, words)``: the tag id of each whitespace word of row ``i`` of ``batch`` (one per
    word, else a ``ValueError`` naming the counts). Each tag sits on its word's first piece; every other
    position is :data:`IGNORED_LABEL`."""

    def encode(batch: dict[str, list]) -> dict[str, list]:
        encoded = word_aligned_inputs(batch[text_column], tokenizer)
        labels = []
        for i, (input_ids, starts) in enumerate(
            zip(encoded["input_ids"], encoded["word_starts"], strict=True)
        ):
            words = batch[text_column][i].split()
            tags = word_tags(batch, i, words)
            if len(tags) != len(starts):
                raise ValueError(f"{len(starts)} words in {batch[text_column][i]!r} but {len(tags)} tags")
            row = [IGNORED_LABEL] * len(input_ids)
            for start, tag in zip(starts, tags, strict=True):
                if start >= 0:
                    row[start] = tag
            labels.append(row)
        return {
            "input_ids": encoded["input_ids"],
            "attention_mask": encoded["attention_mask"],
            "labels": labels,
        }

    return dataset.map(encode, batched=True, remove_columns=dataset.column_names, desc=desc)


def predict_word_tags(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 64,
    cut_off_tag: str | None = None,
    tag_threshold: tuple[str, float] | None = None,
) -> list[list[str]]:
    """The argmax tag name (``config.id2label``) of each whitespace word of each text.

    A word cut off by the tokenizer's length limit gets ``cut_off_tag`` (the model never saw it); with
    ``cut_off_tag=None`` it gets the tag of label id 0. ``tag_threshold=(name, p)``: see
    :func:`first_piece_tags`."""
    rows: list[list[str]] = []
    for batch, starts in _aligned_batches(tokenizer, texts, batch_size):
        rows += first_piece_tags(
            model, batch["input_ids"], batch["attention_mask"], starts, cut_off_tag, tag_threshold
        )
    return rows


def _aligned_batches(
    tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], batch_size: int
) -> Iterator[tuple[dict[str, Any], list[list[int]]]]:
    from .seq2seq import Seq2SeqCollator

    collator = Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)
    aligned = word_aligned_inputs(texts, tokenizer)
    for start in range(0, len(texts), batch_size):
        rows = range(start, min(start + batch_size, len(texts)))
        batch = collator([{k: aligned[k][i] for k in ("input_ids", "attention_mask")} for i in rows])
        yield batch, [aligned["word_starts"][i] for i in rows]


def first_piece_tags(
    model: PreTrainedModel,
    input_ids: Any,
    attention_mask: Any,
    word_starts: Sequence[Sequence[int]],
    cut_off_tag: str | None = None,
    tag_threshold: tuple[str, float] | None = None,
) -> list[list[str]]:
    """Tag names per word from a token classifier's argmax, read at each word's first piece.

    input_ids / attention_mask: (B, S); word_starts: per row the position of each word's first piece
    (:func:`word_aligned_inputs`, ``-1`` for a word the tokenizer cut off: ``cut_off_tag``).
    ``tag_threshold=(name, p)``: the word gets tag ``name`` wherever its probability is at least ``p``, else
    the argmax of the other tags (with two tags, ``p=0.5`` is the argmax)."""
    import torch

    with torch.no_grad():
        logits = model(
            input_ids=input_ids.to(model.device), attention_mask=attention_mask.to(model.device)
        ).logits  # (B, S, L)
    label_names = [model.config.id2label[i] for i in range(logits.shape[-1])]
    missing = label_names[0] if cut_off_tag is None else cut_off_tag
    chosen = logits.argmax(-1)  # (B, S)
    if tag_threshold is not None:
        name, minimum = tag_threshold
        if name not in label_names:
            raise InvalidInputError(f"tag_threshold names tag {name!r}; the model's tags are {label_names}")
        tag = label_names.index(name)
        others = logits.clone()
        others[..., tag] = float("-inf")
        chosen = torch.where(logits.softmax(-1)[..., tag] >= minimum, tag, others.argmax(-1))
    tags = chosen.tolist()
    return [
        [label_names[row[start]] if start >= 0 else missing for start in starts]
        for row, starts in zip(tags, word_starts, strict=True)
    ]


def token_classifier_config(
    task_name: str,
    preset: str,
    backbone: str | None,
    labels: Sequence[str],
    overrides: dict[str, Any],
) -> PretrainedConfig:
    """A token classifier over ``labels`` on the backbone the data was tokenized for (the model's and the
    tokenizer's vocabularies must be the same one); an error names the mismatch."""
    from ..presets import PRESETS, config_from_preset

    if backbone is None:
        raise InvalidInputError(
            f"preset {preset!r} warm-starts from backbone {PRESETS.get(preset)['backbone']!r}: prepare "
            f"the {task_name} data with that backbone's tokenizer (prepare option backbone=...)"
        )
    if "backbone" not in PRESETS.get(preset):
        raise InvalidInputError(
            f"the {task_name} data is tokenized for backbone {backbone!r} but preset {preset!r} is not "
            "built on one"
        )
    fields = {"id2label": dict(enumerate(labels)), "label2id": {t: i for i, t in enumerate(labels)}}
    config = config_from_preset(preset, **{**fields, **overrides, "backbone": backbone})
    if family_of(config) != "tagging":
        raise InvalidInputError(
            f"preset {preset!r}: a {task_name} model on a backbone here is a token classifier, "
            f"not a {family_of(config)!r} model"
        )
    return config


__all__ = [
    "IGNORED_LABEL",
    "encode_word_tags",
    "first_piece_tags",
    "predict_word_tags",
    "token_classifier_config",
    "word_aligned_inputs",
]
