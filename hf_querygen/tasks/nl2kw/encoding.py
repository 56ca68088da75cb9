"""nl2kw dataset encoding (Liu et al., CIKM'18): the labels of each kind of model (:func:`encode_nl2kw`) on
top of the generic seq2seq preprocessing (:mod:`hf_querygen.tasks.seq2seq`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .targets import (
    Normalizer,
    TfidfKeywordOrder,
    dual_decoder_labels,
    keyword_tag_labels,
    keyword_targets,
    resolve_normalizer,
)

if TYPE_CHECKING:
    import datasets
    from transformers import PreTrainedTokenizerBase

__all__ = ["ENCODING_MODES", "add_keyword_targets", "encode_nl2kw"]


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
