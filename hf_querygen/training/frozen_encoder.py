"""Training an encoder-decoder with its encoder frozen, each distinct source encoded once.

A frozen encoder maps a source to the same states at every step, so computing them again each time a batch
holds that source is wasted work: on 2 CPU cores the encoder's forward pass over 8 sources of 400 word
pieces is about two thirds of a frozen-encoder step of a BERT2BERT (2.9 s with it, 0.88 s with the states
cached: ``benchmarks/bench_frozen_encoder.py``). With
:func:`freeze_encoder` the encoder's parameters stop training, and :class:`EncoderStatesCollator` adds
``encoder_outputs`` to every batch: the states of each source row, taken from a cache filled the first time
the row is seen (in eval mode: the encoder is a fixed feature extractor, without dropout). transformers'
encoder-decoders (``EncoderDecoderModel``, ``AutoModelForSeq2SeqLM``) skip their encoder when given
``encoder_outputs``, so the stock Trainer trains the rest unchanged, and the saved model is the plain
class: at inference its encoder runs as usual.

Memory: the cache holds ``sources x pieces x hidden`` floats (the q2id train split with the contrast:
~2,800 sources of <= 512 pieces x 384 = ~1.5 GB).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel


def freeze_encoder(model: PreTrainedModel) -> torch.nn.Module:
    """Stops the training of ``model``'s encoder (``requires_grad`` off) and returns it.

    Raises InvalidInputError when the model is not an encoder-decoder (``config.is_encoder_decoder`` and
    ``get_encoder``) or when a tensor of the encoder is also the decoder's (``tie_encoder_decoder``): the
    decoder would train a weight whose cached states then no longer match it."""
    get_encoder = getattr(model, "get_encoder", None)
    encoder_decoder = getattr(getattr(model, "config", None), "is_encoder_decoder", False)
    encoder = get_encoder() if callable(get_encoder) and encoder_decoder else None
    if encoder is None or encoder is model:
        raise InvalidInputError(
            f"freeze_encoder needs an encoder-decoder with a separate encoder; {type(model).__name__} is "
            "not one"
        )
    encoder_tensors = {id(p) for p in encoder.parameters()}
    shared = [
        name
        for name, p in model.named_parameters(remove_duplicate=False)
        if id(p) in encoder_tensors and not name.startswith("encoder.")
    ]
    if shared:
        raise InvalidInputError(
            f"freeze_encoder: the encoder shares {len(shared)} tensor(s) with the decoder (e.g. "
            f"{shared[0]!r}; tie_encoder_decoder): a trained decoder would change the states the cache holds"
        )
    for parameter in encoder.parameters():
        parameter.requires_grad_(False)
    return encoder


class EncoderStatesCollator:
    """Wraps a collator whose batches have ``input_ids`` and ``attention_mask`` (padded on the right) and
    adds ``encoder_outputs``: ``(states,)`` of shape (N, S, H), one row per source row of the batch, zeros
    at padding. Each distinct source (its unpadded ids) is encoded once by ``encoder`` (no gradient, eval
    mode) and kept; a later batch with the same source reads it back. The states are kept on the CPU; the
    Trainer moves the batch to the model's device."""

    def __init__(
        self, collator: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]], encoder: Any
    ) -> None:
        self.collator = collator
        self.encoder = encoder
        # the columns the wrapped collator reads (hf_querygen.training.train_seq2seq keeps them)
        self.columns = getattr(collator, "columns", None)
        self._states: dict[bytes, torch.Tensor] = {}
        self.encoded_sources = 0  # sources run through the encoder (the rest came from the cache)

    @property
    def cached_sources(self) -> int:
        """Distinct sources whose states are kept."""
        return len(self._states)

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        batch, keys, fresh = self._collated_sources(features)
        self._encode(fresh)
        input_ids, mask = batch["input_ids"], batch["attention_mask"].bool()
        states = [self._states[key] for key in keys]
        hidden = states[0].shape[-1]
        padded = torch.zeros(input_ids.shape[0], input_ids.shape[1], hidden, dtype=states[0].dtype)
        for index, state in enumerate(states):
            padded[index, mask[index]] = state
        batch["encoder_outputs"] = (padded,)
        return batch

    def encode_all(
        self,
        features: Any,
        batch_size: int = 32,
        progress: bool = False,
        description: str = "encoding sources",
    ) -> int:
        """Encodes now every source of ``features`` (a ``datasets.Dataset`` or a sequence of feature
        dicts, as the Trainer hands them to the collator) that is not cached yet, sorted by length in
        batches of ``batch_size``: a training batch pads its sources to its longest one, and on the q2id
        train split with the contrast the sources of the Trainer's batches hold ~1.75x the pieces of the
        sources themselves. ``progress``: a progress bar (``description``). Returns how many sources it
        encoded."""
        from tqdm.auto import tqdm

        if batch_size < 1:
            raise InvalidInputError(f"encode_all: batch_size must be >= 1, got {batch_size}")
        if hasattr(features, "select_columns"):  # the columns the Trainer would hand over
            wanted = self.columns or ("input_ids", "attention_mask", "labels")
            features = features.select_columns([c for c in wanted if c in features.column_names])
        fresh: dict[bytes, torch.Tensor] = {}
        for start in range(0, len(features), 256):
            chunk = features[start : start + 256]
            if isinstance(chunk, Mapping):  # a Dataset slice: columns of lists
                chunk = [dict(zip(chunk, row, strict=True)) for row in zip(*chunk.values(), strict=True)]
            for key, row in self._collated_sources(chunk)[2].items():
                fresh.setdefault(key, row)
        by_length = sorted(fresh, key=lambda key: len(fresh[key]))
        with tqdm(total=len(by_length), desc=description, unit="source", disable=not progress) as bar:
            for start in range(0, len(by_length), batch_size):
                self._encode({key: fresh[key] for key in by_length[start : start + batch_size]})
                bar.update(min(batch_size, len(by_length) - start))
        return len(fresh)

    def _collated_sources(
        self, features: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[str, Any], list[bytes], dict[bytes, torch.Tensor]]:
        """The wrapped collator's batch of ``features``, the key of each of its source rows (the row's
        unpadded ids as bytes: one key per distinct source), and the rows not cached yet (key -> ids)."""
        batch = self.collator(features)
        if "input_ids" not in batch or "attention_mask" not in batch:
            raise InvalidInputError(
                f"EncoderStatesCollator: the wrapped collator's batch has no input_ids / attention_mask "
                f"(keys {sorted(batch)})"
            )
        rows = [
            ids[keep] for ids, keep in zip(batch["input_ids"], batch["attention_mask"].bool(), strict=True)
        ]
        keys = [row.numpy().tobytes() for row in rows]
        fresh: dict[bytes, torch.Tensor] = {}
        for key, row in zip(keys, rows, strict=True):
            if key not in self._states:
                fresh.setdefault(key, row)
        return batch, keys, fresh

    def _encode(self, fresh: Mapping[bytes, torch.Tensor]) -> None:
        """Encodes the sources ``fresh`` (key -> unpadded ids, none cached yet) in one padded pass and
        caches their states under their keys."""
        import torch

        if not fresh:
            return
        width = max(len(row) for row in fresh.values())
        ids = torch.zeros(len(fresh), width, dtype=torch.long)
        mask = torch.zeros(len(fresh), width, dtype=torch.long)
        for index, row in enumerate(fresh.values()):
            ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        device = next(self.encoder.parameters()).device
        was_training = self.encoder.training
        self.encoder.eval()
        try:
            with torch.no_grad():
                states = self.encoder(input_ids=ids.to(device), attention_mask=mask.to(device))[0].cpu()
        finally:
            self.encoder.train(was_training)
        for index, (key, row) in enumerate(fresh.items()):
            self._states[key] = states[index, : len(row)].clone()
        self.encoded_sources += len(fresh)
