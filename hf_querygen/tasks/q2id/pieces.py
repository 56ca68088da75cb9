"""Q2ID for a warm-started encoder-decoder (``zhang2020/warm_start``): the query and its documents as one
word-piece sequence, and CtrsGen's contrast with the irrelevant documents as a training loss.

Source (:func:`source_pieces`): ``[CLS] query [SEP] d_1 [SEP] d_2 [SEP] ... [SEP]`` in the backbone's word
pieces, at most ``max_length`` (512 for BERT) pieces in all. The query is kept whole (up to
``max_query_pieces``); the rest of the budget is shared by the documents in corpus order by water-filling:
every document gets an equal share, a document shorter than its share keeps its length and leaves the rest
to the others, each document is cut at its end. A document set too large for ``min_document_pieces`` each
keeps its first documents only.

Contrast (Zhang et al. contrast the relevant with the irrelevant documents inside the decoder's attention,
Eq. (9)-(12); a warm-started transformers model has no such attention, so the contrast moves into the
objective). For every training pair the batch holds the source twice: with the RELEVANT documents (rows
``0 .. B-1``) and with the IRRELEVANT ones (rows ``B .. 2B-1``; the query alone when a query has none),
both decoding the same description ``y`` (:class:`ContrastiveCollator`). With ``ℓ_rel = (1/|y|) Σ_t log
p(y_t | y_<t, query, relevant)`` and ``ℓ_irr`` the same given the irrelevant documents, the loss is
(:func:`contrastive_loss`)::

    L = - Σ_i Σ_t log p(y_it | relevant_i)  /  N
        + λ Σ_i |y_i| · max(0, m - (ℓ_rel,i - ℓ_irr,i))  /  N

with ``N`` the target pieces of the (accumulated) batch: the description must be at least ``m`` nats per
piece more likely given the relevant documents than given the irrelevant ones, so the decoder has to read
what sets the relevant documents apart instead of writing what the query alone predicts. ``λ = 0`` is the
ablation without contrast (``zhang2020/warm_start_no_contrast``: the irrelevant half is not even built).
At inference only the relevant half exists: the model is a plain ``EncoderDecoderModel``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError
from ...inference import run_generate, sequences_of

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerFast

LABEL_PAD_ID = -100


def _document_text(document: Any) -> str:
    if isinstance(document, str):
        return document
    if isinstance(document, Mapping) and "sentences" in document:
        return " ".join(document["sentences"])
    raise InvalidInputError(
        f"q2id: a document must be text or a mapping with 'sentences', got {type(document)}"
    )


def share_budget(lengths: Sequence[int], budget: int) -> list[int]:
    """Pieces kept of each document (water-filling): equal shares of ``budget``, a short document keeps its
    length and its unused share goes to the others; the total is at most ``budget``."""
    kept = [0] * len(lengths)
    open_rows = sorted(range(len(lengths)), key=lambda i: lengths[i])
    left = max(budget, 0)
    while open_rows:
        share = left // len(open_rows)
        row = open_rows[0]
        if lengths[row] <= share:
            kept[row] = lengths[row]
            left -= lengths[row]
            open_rows.pop(0)
            continue
        for position, row in enumerate(sorted(open_rows)):  # equal shares; the remainder to the first
            kept[row] = share + (1 if position < left - share * len(open_rows) else 0)
        break
    return kept


def source_pieces(
    query: str,
    documents: Sequence[Any],
    tokenizer: PreTrainedTokenizerFast,
    max_length: int = 512,
    max_query_pieces: int = 64,
    min_document_pieces: int = 16,
) -> list[int]:
    """``[CLS] query [SEP] d_1 [SEP] ... [SEP]`` ids within ``max_length`` (module docstring)."""
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls_id is None or sep_id is None:
        raise InvalidInputError("q2id word pieces need a tokenizer with [CLS] and [SEP] (a BERT backbone's)")
    if max_length < 3:
        raise InvalidInputError(f"max_length must leave room for [CLS], a piece and [SEP]; got {max_length}")
    texts = [query, *(_document_text(d) for d in documents)]
    pieces = tokenizer(texts, add_special_tokens=False, truncation=True, max_length=max_length)["input_ids"]
    query_ids = pieces[0][: min(max_query_pieces, max_length - 2)]
    ids = [cls_id, *query_ids, sep_id]
    room = max_length - len(ids)
    documents_kept = min(len(pieces) - 1, room // (min_document_pieces + 1))
    if documents_kept > 0:
        document_ids = pieces[1 : 1 + documents_kept]
        shares = share_budget([len(d) for d in document_ids], room - documents_kept)
        for document, keep in zip(document_ids, shares, strict=True):
            ids += [*document[:keep], sep_id]
    return ids


def encode_q2id_pieces(
    examples: Sequence[Mapping[str, Any]],
    tokenizer: PreTrainedTokenizerFast,
    max_source_length: int = 512,
    max_target_length: int = 64,
    contrast: bool = True,
) -> dict[str, list]:
    """Columns of a batch of q2id records: ``input_ids`` (query + relevant documents), ``labels`` (the
    description's pieces closed by ``[SEP]``, no ``[CLS]``: the model shifts them behind ``[CLS]``), and
    with ``contrast`` ``irrelevant_input_ids`` (query + irrelevant documents; the query alone without
    any)."""
    out: dict[str, list] = {"input_ids": [], "labels": []}
    if contrast:
        out["irrelevant_input_ids"] = []
    descriptions = [str(example.get("description") or "") for example in examples]
    targets = tokenizer(descriptions, truncation=True, max_length=max_target_length + 1)["input_ids"]
    for example, target in zip(examples, targets, strict=True):
        out["input_ids"].append(
            source_pieces(example["query"], example["relevant_documents"], tokenizer, max_source_length)
        )
        out["labels"].append(target[1:])  # drop [CLS]; [SEP] closes the target
        if contrast:
            irrelevant = example.get("irrelevant_documents") or []
            out["irrelevant_input_ids"].append(
                source_pieces(example["query"], irrelevant, tokenizer, max_source_length)
            )
    return out


def _pad(rows: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    import torch

    width = max(len(row) for row in rows)
    return torch.tensor([list(row) + [value] * (width - len(row)) for row in rows], dtype=torch.long)


class ContrastiveCollator:
    """Pads a batch of :func:`encode_q2id_pieces` rows; with ``irrelevant_input_ids`` the encoder inputs are
    stacked as ``[relevant; irrelevant]`` (2B rows) and ``decoder_input_ids`` (the labels behind
    ``decoder_start_token_id``) are repeated for both halves, while ``labels`` stay (B, T): the Trainer counts
    the target pieces once and :func:`contrastive_loss` reads both halves against them."""

    #: the columns it reads; ``irrelevant_input_ids`` is no argument of the model's ``forward``, so the
    #: Trainer must not remove it (:func:`hf_querygen.training.train_seq2seq`)
    columns = ("input_ids", "irrelevant_input_ids", "labels")

    def __init__(self, pad_token_id: int, decoder_start_token_id: int) -> None:
        self.pad_token_id = pad_token_id
        self.decoder_start_token_id = decoder_start_token_id

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        sources = [f["input_ids"] for f in features]
        contrast = "irrelevant_input_ids" in features[0]
        if contrast:
            sources = sources + [f["irrelevant_input_ids"] for f in features]
        input_ids = _pad(sources, self.pad_token_id)
        labels = _pad([f["labels"] for f in features], LABEL_PAD_ID)
        decoder_input_ids = labels.new_full(labels.shape, self.pad_token_id)
        decoder_input_ids[:, 0] = self.decoder_start_token_id
        decoder_input_ids[:, 1:] = labels[:, :-1].masked_fill(
            labels[:, :-1] == LABEL_PAD_ID, self.pad_token_id
        )
        decoder_attention_mask = (labels != LABEL_PAD_ID).long()
        if contrast:
            decoder_input_ids = decoder_input_ids.repeat(2, 1)
            decoder_attention_mask = decoder_attention_mask.repeat(2, 1)
        return {
            "input_ids": input_ids,
            "attention_mask": (input_ids != self.pad_token_id).long(),
            "decoder_input_ids": decoder_input_ids,
            "decoder_attention_mask": decoder_attention_mask,
            "labels": labels,
        }


def contrastive_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    weight: float,
    margin: float,
    num_items_in_batch: torch.Tensor | int | None = None,
    log_probs: bool = False,
) -> torch.Tensor:
    """The objective of the module docstring.

    logits: (B, T, V) (no contrast) or (2B, T, V) (rows ``B..2B-1`` given the irrelevant documents), raw
    scores, or normalised log-probabilities with ``log_probs`` (a pointer's mixture: no log-softmax again);
    labels: (B, T) with -100 at padding. ``num_items_in_batch``: target pieces of the accumulated batch
    (the Trainer's count of ``labels``); None: this batch's."""
    import torch

    batch = labels.shape[0]
    if logits.shape[0] not in (batch, 2 * batch):
        raise InvalidInputError(f"logits have {logits.shape[0]} rows for {batch} targets (expected B or 2B)")
    mask = labels != LABEL_PAD_ID
    # log p of every label in one pass over the (2B, T, V) rows: slicing them into halves first would cost
    # a (2B, T, V) zero-fill and copy per half in the backward pass
    halves = logits.shape[0] // batch
    pick = torch.nn.functional.nll_loss if log_probs else torch.nn.functional.cross_entropy
    label_log_probs = -pick(
        logits.flatten(0, 1).float(),
        labels.repeat(halves, 1).flatten(),
        ignore_index=LABEL_PAD_ID,
        reduction="none",
    ).view(halves * batch, -1)  # (halves * B, T), 0 at padding
    relevant = label_log_probs[:batch]
    count = num_items_in_batch if num_items_in_batch is not None else mask.sum()
    count = torch.as_tensor(count, device=logits.device, dtype=torch.float32).clamp(min=1)
    loss = -relevant.sum() / count
    if weight > 0 and logits.shape[0] == batch:
        raise InvalidInputError(
            f"the contrast (weight {weight}) needs the irrelevant half of the batch (logits of 2 x {batch} "
            f"rows), got {batch} rows: the batch was built without irrelevant_input_ids"
        )
    if logits.shape[0] == 2 * batch and weight > 0:
        irrelevant = label_log_probs[batch:]
        lengths = mask.sum(-1).clamp(min=1)
        gap = (relevant.sum(-1) - irrelevant.sum(-1)) / lengths  # per-piece log-likelihood gap, (B,)
        loss = loss + weight * (lengths * (margin - gap).clamp(min=0)).sum() / count
    return loss


class ContrastiveLoss:
    """``compute_loss_func`` of the Trainer: ``(outputs, labels, num_items_in_batch) -> loss`` by
    :func:`contrastive_loss` with weight ``λ`` and margin ``m``."""

    def __init__(self, weight: float = 0.5, margin: float = 1.0, log_probs: bool = False) -> None:
        if weight < 0 or margin < 0:
            raise InvalidInputError(f"contrast weight and margin must be >= 0, got {weight}, {margin}")
        self.weight, self.margin = float(weight), float(margin)
        self.log_probs = bool(log_probs)

    def __call__(self, outputs: Any, labels: torch.Tensor, num_items_in_batch: Any = None) -> torch.Tensor:
        logits = outputs["logits"] if isinstance(outputs, Mapping) else outputs.logits
        return contrastive_loss(logits, labels, self.weight, self.margin, num_items_in_batch, self.log_probs)


def generate_descriptions(
    model: Any,
    tokenizer: PreTrainedTokenizerFast,
    sources: Sequence[Mapping[str, Any]],
    batch_size: int = 16,
    max_source_length: int = 512,
    **generation_kwargs: Any,
) -> list[list[str]]:
    """Descriptions of q2id ``sources`` (``{"query", "relevant_documents", ...}``) by a warm-started
    encoder-decoder: each source read as :func:`source_pieces` (relevant documents only), batches padded
    to their longest source, ``generate()`` with ``generation_kwargs``, the pieces decoded to text. One list
    per source (``num_return_sequences`` texts, in the order generate returns them)."""

    n_returns = int(generation_kwargs.get("num_return_sequences", 1))
    pad_id = tokenizer.pad_token_id
    results: list[list[str]] = []
    for start in range(0, len(sources), max(1, batch_size)):
        chunk = sources[start : start + batch_size]
        rows = [
            source_pieces(s["query"], s["relevant_documents"], tokenizer, max_source_length) for s in chunk
        ]
        input_ids = _pad(rows, pad_id)
        inputs = {"input_ids": input_ids, "attention_mask": (input_ids != pad_id).long()}
        sequences = sequences_of(run_generate(model, inputs, **generation_kwargs))
        texts = tokenizer.batch_decode(sequences, skip_special_tokens=True)
        results += [texts[k * n_returns : (k + 1) * n_returns] for k in range(len(chunk))]
    return results
