"""Batched inference shared by every task: encode raw texts, batch them by length, run the model.

:func:`encoded_batches` is the one loop over raw inputs (tokenise with
:func:`hf_querygen.tasks.seq2seq.encode_sources`, sort by length so that batches hold little padding,
collate); :func:`generate_batches` runs ``generate()`` on them. The tasks' ``predict`` methods decode
what these yield, so a pipeline, the CLI and the experiment runner all decode through the same code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

#: the keys of an encoded example a model may take (filtered by its forward signature)
MODEL_INPUT_KEYS = ("input_ids", "attention_mask", "source_word_ids")


def forward_argument_names(model: PreTrainedModel) -> set[str]:
    return set(inspect.signature(model.forward).parameters)


def output_vocab_size_of_model(model: PreTrainedModel) -> int:
    """The decoder output vocabulary size ``V`` (ids ``>= V`` are copy positions)."""
    size = getattr(model.config, "output_vocab_size", None) or getattr(model.config, "vocab_size", None)
    if size is None:
        raise ValueError(f"{type(model.config).__name__} has neither output_vocab_size nor vocab_size")
    return int(size)


def as_max_length(generate_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``max_new_tokens=n`` -> ``max_length=n + 1`` (the decoder start token counts for an
    encoder-decoder), so that a call-time limit does not clash with the saved ``max_length``."""
    kwargs = dict(generate_kwargs)
    if kwargs.get("max_new_tokens") is not None and kwargs.get("max_length") is None:
        kwargs["max_length"] = kwargs.pop("max_new_tokens") + 1
    return kwargs


def encoded_batches(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 64,
    max_source_length: int | None = None,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor], list[list[str]]]]:
    """Yield ``(indices, batch, source_words)`` over ``texts`` in batches of similar length.

    batch: the model's inputs among ``input_ids`` / ``attention_mask`` / ``source_word_ids``, each
    (B, S) on the model's device; source_words: the normalised words of each text (copy ids index them).
    """
    from .tasks.seq2seq import Seq2SeqCollator, encode_sources

    if isinstance(texts, str):
        raise TypeError("expected a list of texts, not a single string")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    accepted = forward_argument_names(model)
    collator = Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)
    encoded = encode_sources(list(texts), tokenizer, max_source_length)
    order = sorted(range(len(texts)), key=lambda i: len(encoded["input_ids"][i]))
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        features = [{key: encoded[key][i] for key in MODEL_INPUT_KEYS} for i in indices]
        batch = {k: v.to(model.device) for k, v in collator(features).items() if k in accepted}
        yield indices, batch, [encoded["source_words"][i] for i in indices]


def generate_batches(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 64,
    max_source_length: int | None = None,
    logits_processor_factory: Callable[[dict[str, torch.Tensor]], Any] | None = None,
    **generate_kwargs: Any,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor], list[list[str]], torch.Tensor]]:
    """:func:`encoded_batches` plus ``model.generate`` on each: yields ``(indices, batch, source_words,
    sequences)`` with sequences (B * num_return_sequences, T), a text's returns adjacent.

    ``logits_processor_factory(batch)`` builds a ``LogitsProcessor`` for each batch (one that needs the
    batch's own inputs, e.g. a per-query minimum length), added to ``generate``'s ``logits_processor``."""
    import torch
    from transformers import LogitsProcessorList

    generate_kwargs = as_max_length(generate_kwargs)
    if model.training:  # eval() walks every module: a measurable share of a batch-1 call
        model.eval()
    for indices, batch, source_words in encoded_batches(
        model, tokenizer, texts, batch_size, max_source_length
    ):
        kwargs = generate_kwargs
        if logits_processor_factory is not None:
            processors = LogitsProcessorList(generate_kwargs.get("logits_processor") or [])
            processors.append(logits_processor_factory(batch))
            kwargs = {**generate_kwargs, "logits_processor": processors}
        with torch.no_grad():
            generated = model.generate(**batch, **kwargs)
        sequences = generated.sequences if hasattr(generated, "sequences") else generated
        yield indices, batch, source_words, sequences


def generate_texts(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 64,
    max_source_length: int | None = None,
    **generate_kwargs: Any,
) -> list[str]:
    """Batched ``model.generate`` on raw texts; returns decoded texts (copy ids -> source words).

    Task-agnostic text output (the ``query-reformulation`` pipeline's); with
    ``num_return_sequences=n`` the ``n`` outputs of text ``i`` are at ``i * n .. i * n + n - 1``.
    """
    from .tasks.seq2seq import decode_extended_batch

    n_returns = int(generate_kwargs.get("num_return_sequences", 1))
    output_vocab_size = output_vocab_size_of_model(model)
    results: list[list[str]] = [[] for _ in texts]
    for indices, _, source_words, sequences in generate_batches(
        model, tokenizer, texts, batch_size, max_source_length, **generate_kwargs
    ):
        texts_out = decode_extended_batch(sequences, source_words, tokenizer, output_vocab_size, n_returns)
        for k, i in enumerate(indices):
            results[i] = texts_out[k * n_returns : (k + 1) * n_returns]
    return [text for group in results for text in group]
