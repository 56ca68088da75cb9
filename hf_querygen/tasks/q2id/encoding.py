"""Q2ID (query -> intent description, Zhang et al. CIKM'20): encoding of the nested inputs, the collator
and decoding back to text.

An example of the ``q2id`` corpus (:mod:`hf_querygen.corpora.q2id`) holds ``query``, ``description`` and
``relevant_documents`` / ``irrelevant_documents``, each a list of ``{"doc_id", "label", "sentences"}``;
the corpus builder already split every document into sentences with
:func:`hf_querygen.corpora._q2id_records.split_sentences` (the library's deterministic splitter, used
again here for raw text at inference: :func:`split_document`).

:func:`encode_q2id` turns a batch of examples into word ids with the project's word-level tokenizer
(:mod:`hf_querygen.tokenization`) under the caps of :class:`Q2IDCaps` (documents per set, sentences per
document, words per sentence; the paper's relevant mega-documents have about 203 sentences, ours about
19 before capping). :func:`cap_report` measures how much text the caps drop. :class:`Q2IDCollator` pads
the nested lists into ``(B, D, S, L)`` tensors with masks (every axis at least 1 long, so a batch in
which no query has irrelevant documents still has well-formed, all-masked tensors).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ...corpora._q2id_records import ends_a_sentence, split_sentences
from ...errors import InvalidInputError
from ...nn.labels import IGNORE_INDEX
from ...tokenization import EOS_ID, PAD_ID, UNK_ID, output_vocab_size_of, train_word_tokenizer, word_tokenize

if TYPE_CHECKING:
    import datasets
    import torch
    from transformers import PreTrainedTokenizerFast

#: columns :func:`encode_q2id` adds
ENCODED_COLUMNS = ("input_ids", "attention_mask", "relevant_input_ids", "irrelevant_input_ids", "labels")
#: the nested (documents x sentences x words) columns
NESTED_COLUMNS = ("relevant_input_ids", "irrelevant_input_ids")


@dataclass(frozen=True)
class Q2IDCaps:
    """Truncation of the inputs (first documents / sentences / words are kept, in corpus order).

    max_query_words: query words (``[EOS]`` is added after them).
    max_relevant_documents / max_irrelevant_documents: documents per set (0 irrelevant = none).
    max_sentences_per_document: sentences kept from the start of each document.
    max_words_per_sentence: words kept from the start of each sentence.
    max_description_words: target words (``[EOS]`` is added after them).
    long_sentences: "truncate" keeps the first ``max_words_per_sentence`` words of a sentence; "chunk"
        cuts a longer sentence into consecutive pieces of that length, each a sentence of its own (the
        NFCorpus abstracts have no punctuation left and arrive as one "sentence" of ~250 words).
    """

    max_query_words: int = 32
    max_relevant_documents: int = 10
    max_irrelevant_documents: int = 10
    max_sentences_per_document: int = 6
    max_words_per_sentence: int = 40
    max_description_words: int = 64
    long_sentences: str = "chunk"

    def __post_init__(self) -> None:
        if self.long_sentences not in ("truncate", "chunk"):
            raise InvalidInputError(
                f"Q2IDCaps.long_sentences must be 'truncate' or 'chunk'; got {self.long_sentences!r}"
            )
        for name, value in asdict(self).items():
            if name == "long_sentences":
                continue
            minimum = 0 if name == "max_irrelevant_documents" else 1
            if not isinstance(value, int) or value < minimum:
                raise InvalidInputError(f"Q2IDCaps.{name} must be an integer >= {minimum}; got {value!r}")


def split_document(text: str) -> list[str]:
    """Raw document text -> sentences, with the splitter the q2id corpus was built with."""
    if not isinstance(text, str):
        raise InvalidInputError(f"a document must be a string; got {type(text).__name__}: {text!r}")
    return split_sentences(text)


def _document_sentences(document: Any, where: str) -> list[str]:
    if isinstance(document, str):
        return split_document(document)
    if isinstance(document, Mapping) and "sentences" in document:
        sentences = document["sentences"]
        if isinstance(sentences, Sequence) and all(isinstance(s, str) for s in sentences):
            return list(sentences)
    raise InvalidInputError(
        f"{where}: a document must be a string or a mapping with a 'sentences' list of strings; "
        f"got {document!r}"
    )


def _capped_sentences(sentences: Sequence[Sequence[int]], caps: Q2IDCaps) -> list[list[int]]:
    """Word ids (or word lists) of a document's sentences -> what the caps keep: non-empty sentences
    truncated or chunked to ``max_words_per_sentence``, at most ``max_sentences_per_document`` of them."""
    width = caps.max_words_per_sentence
    kept: list[list[int]] = []
    for sentence in sentences:
        if not sentence:
            continue
        pieces = (
            [sentence[:width]]
            if caps.long_sentences == "truncate"
            else [sentence[start : start + width] for start in range(0, len(sentence), width)]
        )
        for piece in pieces:
            if len(kept) == caps.max_sentences_per_document:
                return kept
            kept.append(list(piece))
    return kept


def _encode_documents(
    documents: Sequence[Any],
    tokenizer: PreTrainedTokenizerFast,
    max_documents: int,
    caps: Q2IDCaps,
    where: str,
) -> list[list[list[int]]]:
    """documents -> [document][sentence][word] ids (no [EOS]); sentences without any word are dropped and so
    are documents left without a sentence."""
    encoded = []
    for index, document in enumerate(documents):
        if len(encoded) == max_documents:
            break
        sentences = _document_sentences(document, f"{where}[{index}]")
        if not sentences:
            continue
        kept = _capped_sentences(tokenizer(sentences, add_special_tokens=False)["input_ids"], caps)
        if kept:
            encoded.append(kept)
    return encoded


def _capped_with_eos(ids: Sequence[int], max_words: int) -> list[int]:
    """Tokenizer output (words then [EOS]) -> at most ``max_words`` words, then [EOS]."""
    words = [i for i in ids if i != EOS_ID][:max_words]
    return words + [EOS_ID]


def encode_q2id(
    examples: Mapping[str, Sequence[Any]],
    tokenizer: PreTrainedTokenizerFast,
    caps: Q2IDCaps = Q2IDCaps(),
    output_vocab_size: int | None = None,
    with_labels: bool = True,
) -> dict[str, list]:
    """Encode a batch (``datasets.map(batched=True)`` layout: column -> list of values).

    Returns, per example: ``input_ids`` / ``attention_mask`` (query words + [EOS]),
    ``relevant_input_ids`` and ``irrelevant_input_ids`` as [document][sentence][word] ids, and with
    ``with_labels`` ``labels`` (description words + [EOS], ids >= ``output_vocab_size`` -> [UNK]).
    ``irrelevant_documents`` may be missing (then every example has none).
    """
    for column in ("query", "relevant_documents"):
        if column not in examples:
            raise InvalidInputError(
                f"encode_q2id: the batch has no {column!r} column; got {sorted(examples)}"
            )
    if with_labels and "description" not in examples:
        raise InvalidInputError("encode_q2id: with_labels=True needs a 'description' column")
    output_vocab_size = output_vocab_size or output_vocab_size_of(tokenizer)
    queries = list(examples["query"])
    for index, query in enumerate(queries):
        if not isinstance(query, str):
            raise InvalidInputError(f"encode_q2id: query #{index} is {type(query).__name__}, not str")
    query_ids = [_capped_with_eos(ids, caps.max_query_words) for ids in tokenizer(queries)["input_ids"]]
    irrelevant_sets = examples.get("irrelevant_documents") or [[] for _ in queries]
    out: dict[str, list] = {
        "input_ids": query_ids,
        "attention_mask": [[1] * len(ids) for ids in query_ids],
        "relevant_input_ids": [],
        "irrelevant_input_ids": [],
    }
    for index, (relevant, irrelevant) in enumerate(
        zip(examples["relevant_documents"], irrelevant_sets, strict=True)
    ):
        encoded = _encode_documents(
            relevant or [],
            tokenizer,
            caps.max_relevant_documents,
            caps,
            f"example {index} relevant_documents",
        )
        if not encoded:
            raise InvalidInputError(
                f"encode_q2id: example {index} (query {queries[index]!r}) has no relevant document with a "
                "word in it; Q2ID needs at least one (Zhang'20 Sec. 3.1)"
            )
        out["relevant_input_ids"].append(encoded)
        out["irrelevant_input_ids"].append(
            _encode_documents(
                irrelevant or [],
                tokenizer,
                caps.max_irrelevant_documents,
                caps,
                f"example {index} irrelevant_documents",
            )
        )
    if with_labels:
        labels = []
        for ids in tokenizer(list(examples["description"]))["input_ids"]:
            capped = _capped_with_eos(ids, caps.max_description_words)
            labels.append([i if i < output_vocab_size else UNK_ID for i in capped])
        out["labels"] = labels
    return out


def encode_q2id_dataset(
    dataset: datasets.Dataset | datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerFast,
    caps: Q2IDCaps = Q2IDCaps(),
    output_vocab_size: int | None = None,
    num_proc: int | None = None,
) -> datasets.Dataset | datasets.DatasetDict:
    """``dataset.map(encode_q2id)`` keeping ``query`` / ``description`` (for scoring) and ``id``."""
    columns = dataset.column_names
    if isinstance(columns, dict):
        columns = next(iter(columns.values()))
    keep = {"id", "query", "description", "query_type"}
    return dataset.map(
        encode_q2id,
        batched=True,
        fn_kwargs={"tokenizer": tokenizer, "caps": caps, "output_vocab_size": output_vocab_size},
        remove_columns=[c for c in columns if c not in keep],
        num_proc=num_proc,
        desc="encoding q2id",
    )


def train_q2id_tokenizer(
    dataset: datasets.Dataset,
    output_vocab_size: int = 10_000,
    vocab_size: int | None = None,
    min_frequency: int = 1,
) -> PreTrainedTokenizerFast:
    """A word-level tokenizer from a (training) split: source side = queries and all document sentences,
    target side = descriptions, whose ``output_vocab_size`` most frequent words (with the 4 specials) form
    the decoder's output vocabulary (past the last description word it continues with source-side words,
    which no training target contains) (the paper keeps 120,000 words for both sides, Sec. 5.1; on CPU the
    output layer dominates the step time, see the model's notes)."""

    def sources() -> Iterable[str]:
        for example in dataset:
            yield example["query"]
            for key in ("relevant_documents", "irrelevant_documents"):
                for document in example[key] or []:
                    yield from document["sentences"]

    tokenizer = train_word_tokenizer(
        sources(),
        target_texts=dataset["description"],
        vocab_size=vocab_size,
        min_frequency=min_frequency,
    )
    tokenizer.init_kwargs["output_vocab_size"] = min(output_vocab_size, len(tokenizer))
    return tokenizer


def cap_report(
    dataset: datasets.Dataset | Iterable[Mapping[str, Any]],
    caps: Q2IDCaps,
    tokenizer: PreTrainedTokenizerFast,
) -> dict[str, dict[str, float]]:
    """How much text :func:`encode_q2id` keeps under ``caps``: for ``relevant`` / ``irrelevant`` documents
    the fractions of documents, sentences and words kept (words as the tokenizer splits them), and for
    ``description`` / ``query`` the fraction of words kept; plus the raw totals. With
    ``long_sentences="chunk"`` the kept "sentences" are the pieces the model sees, so their fraction
    can exceed 1; ``words_kept_fraction`` is the measure of dropped text."""
    totals = {
        side: {
            "documents": 0,
            "documents_kept": 0,
            "sentences": 0,
            "sentences_kept": 0,
            "words": 0,
            "words_kept": 0,
        }
        for side in ("relevant", "irrelevant")
    }
    flat = {side: {"words": 0, "words_kept": 0} for side in ("query", "description")}
    limits = {"relevant": caps.max_relevant_documents, "irrelevant": caps.max_irrelevant_documents}
    for example in dataset:
        for side, key in (("relevant", "relevant_documents"), ("irrelevant", "irrelevant_documents")):
            counts = totals[side]
            kept_documents = 0
            for document in example.get(key) or []:
                words = [word_tokenize(tokenizer, s) for s in document["sentences"]]
                counts["documents"] += 1
                counts["sentences"] += len(words)
                counts["words"] += sum(len(w) for w in words)
                kept = [len(piece) for piece in _capped_sentences(words, caps)]
                if kept and kept_documents < limits[side]:
                    kept_documents += 1
                    counts["documents_kept"] += 1
                    counts["sentences_kept"] += len(kept)
                    counts["words_kept"] += sum(kept)
        for side, key, cap in (
            ("query", "query", caps.max_query_words),
            ("description", "description", caps.max_description_words),
        ):
            if key in example:
                n = len(word_tokenize(tokenizer, example[key]))
                flat[side]["words"] += n
                flat[side]["words_kept"] += min(n, cap)
    report: dict[str, dict[str, float]] = {}
    for side, counts in {**totals, **flat}.items():
        row = {k: float(v) for k, v in counts.items()}
        for unit in ("documents", "sentences", "words"):
            if unit in counts:
                row[f"{unit}_kept_fraction"] = counts[f"{unit}_kept"] / counts[unit] if counts[unit] else 1.0
        report[side] = row
    return report


def _pad_nested(rows: Sequence[Sequence[Sequence[Sequence[int]]]], pad_id: int):
    """[example][document][sentence][word] ids -> (ids (B, D, S, L), mask (B, D, S, L)), every axis >= 1."""
    import torch

    docs = max(1, max((len(r) for r in rows), default=0))
    sents = max(1, max((len(d) for r in rows for d in r), default=0))
    words = max(1, max((len(s) for r in rows for d in r for s in d), default=0))
    ids = torch.full((len(rows), docs, sents, words), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), docs, sents, words), dtype=torch.long)
    for b, row in enumerate(rows):
        for d, document in enumerate(row):
            for s, sentence in enumerate(document):
                if sentence:
                    ids[b, d, s, : len(sentence)] = torch.tensor(sentence, dtype=torch.long)
                    mask[b, d, s, : len(sentence)] = 1
    return ids, mask


class Q2IDCollator:
    """Pads encoded q2id examples into a batch for :class:`CtrsGenForIntentDescription`.

    ``input_ids`` (B, C) / ``attention_mask`` with pad / 0, ``labels`` (B, Z) with -100, and
    ``relevant_input_ids`` / ``irrelevant_input_ids`` (B, D, S, L) with pad plus their
    ``*_attention_mask``. Other keys (raw text) are dropped.
    """

    def __init__(self, pad_token_id: int = PAD_ID):
        self.pad_token_id = pad_token_id

    def __call__(self, features: list[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        import torch

        if not features:
            raise InvalidInputError("Q2IDCollator got an empty list of examples")
        batch: dict[str, torch.Tensor] = {}
        for key, pad_value in (
            ("input_ids", self.pad_token_id),
            ("attention_mask", 0),
            ("labels", IGNORE_INDEX),
        ):
            if key not in features[0]:
                continue
            rows = [list(feature[key]) for feature in features]
            width = max(1, max(len(row) for row in rows))
            batch[key] = torch.tensor(
                [row + [pad_value] * (width - len(row)) for row in rows], dtype=torch.long
            )
        for key in NESTED_COLUMNS:
            if key not in features[0]:
                continue
            ids, mask = _pad_nested([feature[key] or [] for feature in features], self.pad_token_id)
            batch[key] = ids
            batch[key.replace("input_ids", "attention_mask")] = mask
        return batch


def decode_description(ids: Sequence[int] | torch.Tensor, tokenizer: PreTrainedTokenizerFast) -> str:
    """Generated ids -> description text: special tokens dropped, words joined by spaces."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)


def restate_query(query: str, description: str) -> str:
    """The description that restates the query before the generated words (decoding option
    ``restate_query``): many reference descriptions open with the query itself ("where is the best drinking
    in qatar for americans men looking to meet women?"), which the decoder, writing from a 2K-word output
    vocabulary and copying single words, rarely reproduces whole."""
    return f"{query.strip()} {description.strip()}".strip()


def whole_sentences(description: str) -> str:
    """The description up to the end of its last whole sentence (decoding option ``whole_sentences``): a
    description cut by the length limit (``max_new_tokens``) mid-sentence loses the unfinished one ("...
    in doha. is there any good" -> "... in doha."); one without a sentence end is kept whole. Sentences as
    :func:`~hf_querygen.corpora._q2id_records.split_sentences` splits the documents."""
    sentences = split_sentences(description)
    if len(sentences) > 1 and not ends_a_sentence(sentences[-1]):
        sentences = sentences[:-1]
    return " ".join(sentences)


__all__ = [
    "ENCODED_COLUMNS",
    "NESTED_COLUMNS",
    "Q2IDCaps",
    "Q2IDCollator",
    "cap_report",
    "decode_description",
    "encode_q2id",
    "encode_q2id_dataset",
    "restate_query",
    "split_document",
    "train_q2id_tokenizer",
    "whole_sentences",
]
