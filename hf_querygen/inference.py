"""Batched inference shared by every task: encode raw texts, batch them by length, run the model.

:func:`run_generate` is the library's one call of ``model.generate`` (no gradients, eval mode, a call-time
``max_new_tokens`` as ``max_length``, per-batch logits processors after the caller's); every task's
``predict`` reaches generation through it. :func:`encoded_batches` is the one loop over raw single-text
inputs (tokenise with :func:`hf_querygen.tasks.seq2seq.encode_sources`, sort by length so that batches hold
little padding, collate); :func:`generate_batches` runs :func:`run_generate` on them. So a pipeline, the CLI
and the experiment runner all decode through the same code.
"""

from __future__ import annotations

import contextlib
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


def run_generate(
    model: PreTrainedModel,
    inputs: Mapping[str, torch.Tensor],
    logits_processors: Sequence[Any] = (),
    **generate_kwargs: Any,
) -> Any:
    """``model.generate(**inputs, **generate_kwargs)`` without gradients, in eval mode, with the inputs on
    the model's device, ``max_new_tokens`` read as ``max_length`` (:func:`as_max_length`) and
    ``logits_processors`` (built for this batch) after any given in ``logits_processor``.

    inputs: the model's encoder inputs, e.g. ``input_ids`` / ``attention_mask`` (B, S). Returns what
    ``generate`` returns: sequences (B * num_return_sequences, T), or a ``ModelOutput`` with
    ``return_dict_in_generate`` (:func:`sequences_of` reads either)."""
    import torch
    from transformers import LogitsProcessorList

    kwargs = as_max_length(generate_kwargs)
    if logits_processors:
        kwargs["logits_processor"] = LogitsProcessorList(
            [*(kwargs.get("logits_processor") or []), *logits_processors]
        )
    if model.training:  # eval() walks every module: a measurable share of a batch-1 call
        model.eval()
    inputs = {k: v.to(model.device) for k, v in inputs.items()}
    with torch.no_grad():
        reused = _reused_encoder_outputs(model, inputs) if "encoder_outputs" not in kwargs else None
        if reused is not None:
            kwargs["encoder_outputs"] = reused
        return model.generate(**inputs, **kwargs)


#: id(model) -> {inputs key: encoder outputs}, for the models inside :func:`encoder_outputs_reused`
_ENCODER_OUTPUTS: dict[int, dict[tuple, Any]] = {}


@contextlib.contextmanager
def encoder_outputs_reused(model: PreTrainedModel) -> Iterator[PreTrainedModel]:
    """While the block runs, :func:`run_generate` encodes each distinct batch of inputs of ``model`` once
    and passes the kept states to ``generate`` at every later call with the same inputs (bit for bit: the
    same rows, padding and order). For a decoding grid (:func:`hf_querygen.training.choose_decoding`) or
    the evaluations of a frozen encoder's training, where the encoder reads the same sources again and
    again: a q2id warm start's encoder is ~37% of decoding its 100 validation queries greedily. The
    encoder must not change inside the block. Only transformers' ``EncoderDecoderModel`` (the warm-started
    models) is served; others encode as usual. Nested blocks over the same model share one store."""
    from transformers import EncoderDecoderModel

    if not isinstance(model, EncoderDecoderModel) or id(model) in _ENCODER_OUTPUTS:
        yield model
        return
    _ENCODER_OUTPUTS[id(model)] = {}
    try:
        yield model
    finally:
        del _ENCODER_OUTPUTS[id(model)]


def _reused_encoder_outputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> Any:
    """The kept encoder outputs of ``inputs`` (computed now when new) as a fresh output object (generate
    writes its expanded beams into the object it is given), or None outside :func:`encoder_outputs_reused`."""
    store = _ENCODER_OUTPUTS.get(id(model))
    if store is None or "input_ids" not in inputs:
        return None
    key = tuple(
        (name, tuple(tensor.shape), str(tensor.dtype), tensor.cpu().numpy().tobytes())
        for name, tensor in sorted(inputs.items())
    )
    if key not in store:
        encoder = model.get_encoder()
        accepted = forward_argument_names(encoder)
        wildcard = "kwargs" in accepted or "model_kwargs" in accepted
        store[key] = encoder(
            **{k: v for k, v in inputs.items() if wildcard or k in accepted}, return_dict=True
        )
    kept = store[key]
    return type(kept)(**kept)


def sequences_of(generated: Any) -> torch.Tensor:
    """The (B * num_return_sequences, T) ids of :func:`run_generate`'s output, either form."""
    return generated.sequences if hasattr(generated, "sequences") else generated


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
) -> Iterator[tuple[list[int], dict[str, torch.Tensor], list[list[str]], Any]]:
    """:func:`encoded_batches` plus :func:`run_generate` on each: yields ``(indices, batch, source_words,
    generated)``, generated as ``generate`` returns it (:func:`sequences_of`: (B * num_return_sequences, T),
    a text's returns adjacent).

    ``logits_processor_factory(batch)`` builds a ``LogitsProcessor`` for each batch (one that needs the
    batch's own inputs, e.g. a per-query minimum length), added to ``generate``'s ``logits_processor``."""
    for indices, batch, source_words in encoded_batches(
        model, tokenizer, texts, batch_size, max_source_length
    ):
        processors = () if logits_processor_factory is None else (logits_processor_factory(batch),)
        yield indices, batch, source_words, run_generate(model, batch, processors, **generate_kwargs)


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
    for indices, _, source_words, generated in generate_batches(
        model, tokenizer, texts, batch_size, max_source_length, **generate_kwargs
    ):
        texts_out = decode_extended_batch(
            sequences_of(generated), source_words, tokenizer, output_vocab_size, n_returns
        )
        for k, i in enumerate(indices):
            results[i] = texts_out[k * n_returns : (k + 1) * n_returns]
    return [text for group in results for text in group]
