"""What every recurrent encoder-decoder of the library shares for ``generate()``: the recurrent-state cache
plumbing, the ``logits`` contract of the copy / pointer models, and LogitsProcessors that stay correct on
their log-probability outputs.

The ``logits`` contract
-----------------------
* Models without a copy mechanism return **raw scores** (``W_o s_t + b``), like every transformers model.
* Copy / pointer models (the CopyNet configuration of :class:`RNNSeq2SeqForConditionalGeneration`, the dual
  decoder) return **normalised log-probabilities** ``log p(y)`` over the extended output space
  ``[vocabulary V | source positions S]`` (:class:`ExtendedSpaceLMOutput`). Their distribution is a
  mixture (Gu et al. 2016 Eq. 4-6; Liu et al. 2018 Eq. 4 and the phase masks) with no raw-score form, and
  ``log p`` is a valid logit vector: ``softmax(log p) = p`` and ``log_softmax(log p) = log p``, so greedy
  search, sampling and beam search (which applies ``log_softmax`` first) all decode the model's distribution.
  Impossible outputs (dead copy slots, the other phase's part) are ``-inf``.

LogitsProcessors on log-probabilities
-------------------------------------
transformers applies the processors to ``log_softmax(logits)`` in beam search and to the raw ``logits`` in
greedy search and sampling. For a copy model the two coincide: every decoding mode hands the processors
log-probabilities, so a processor behaves the same way whatever the search. The masking processors
(``min_length``, ``bad_words_ids``, ``no_repeat_ngram_size``) set ``-inf`` and are exact on any scale. The
repetition penalty theta (Keskar et al. 2019) multiplies a negative score by theta: on a log-probability
that is ``p -> p ** theta`` (renormalised), which lowers the probability of every token already produced,
most for the unlikely ones, exactly what it does to every model under beam search. The copy space keeps
one id per source word (repeats go to the first occurrence, in-vocabulary words fold into their vocabulary
id, :mod:`hf_querygen.nn.copy`), so "token already produced" means "word already produced".

One case is specific to models whose phases mask most of the output space: a processor can leave a row with
no finite score (``min_length`` after the pointer-only dual decoder's end sentinel, whose only continuation
is ``[EOS]``; ``no_repeat_ngram_size`` when every live source position was used). Greedy search and sampling
would then emit id 0 (``[PAD]``) from an all ``-inf`` row; :class:`RestoreDeadRowsLogitsProcessor` gives such
a row its unprocessed scores back (the constraint cannot be met at this step, so it is waived). Beam search
needs no fallback: a beam without a legal continuation is simply outscored by the beams that have one.

Diverse beam groups (``num_beam_groups`` + ``diversity_penalty``, Vijayakumar et al. 2016) left transformers'
core ``generate()`` in 5.x: it now loads the Hub repository ``transformers-community/group-beam-search`` as
``custom_generate`` code and needs ``trust_remote_code=True`` and the network, so it cannot run offline.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch
from transformers import GenerationMixin
from transformers.generation.logits_process import (
    LogitsProcessor,
    LogitsProcessorList,
    SuppressTokensLogitsProcessor,
)
from transformers.modeling_outputs import Seq2SeqLMOutput

from ..errors import InvalidInputError
from ..nn.cache import CACHE_NAME, RecurrentStateCache
from ..validation import check_generation_kwargs


@dataclass
class ExtendedSpaceLMOutput(Seq2SeqLMOutput):
    """Seq2SeqLMOutput of a copy / pointer model.

    ``logits`` (B, T, V + S) are **normalised log-probabilities** ``log p(y_t | y_<t, x)`` over the extended
    output space (ids ``< V``: output-vocabulary words; ``V + j``: copy / point at source position j), not
    raw scores; ``-inf`` marks outputs the model cannot produce at that step. ``logits.exp()`` sums to 1 over
    the last dim. See :mod:`hf_querygen.models._generation` for what this means for LogitsProcessors.
    """


class SnapshotLogitsProcessor(LogitsProcessor):
    """First in the list: remembers the scores before any processor changed them (for the fallback)."""

    def __init__(self) -> None:
        self.scores: torch.FloatTensor | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.scores = scores.clone()
        return scores


class RestoreDeadRowsLogitsProcessor(LogitsProcessor):
    """Last in the list: a row (B * beams, C) whose processed scores are all ``-inf`` (or NaN) gets its
    unprocessed scores back, so greedy search / sampling never pick an arbitrary id from a row the
    processors emptied (see the module docstring)."""

    def __init__(self, snapshot: SnapshotLogitsProcessor) -> None:
        self.snapshot = snapshot

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        original = self.snapshot.scores
        if original is None or original.shape != scores.shape:
            return scores
        dead = ~(torch.isfinite(scores) & ~torch.isnan(scores)).any(dim=-1, keepdim=True)  # (rows, 1)
        return torch.where(dead, original.to(scores.dtype), scores)


class SignatureCachedLogitsProcessorList(LogitsProcessorList):
    """A :class:`LogitsProcessorList` that inspects each processor's signature once, not at every step
    (transformers' ``__call__`` runs ``inspect.signature`` per processor per token: a measurable share of a
    batch-1 step of a small RNN decoder). Same calls, same checks."""

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        cache = self.__dict__.setdefault("_extra_arguments", {})
        for processor in self:
            key = id(processor)
            extra = cache.get(key)
            if extra is None or extra[0] is not processor:
                names = list(inspect.signature(processor.__call__).parameters)[2:]
                extra = cache[key] = (processor, names)
            names = extra[1]
            if names:
                if not all(name in kwargs for name in names):
                    raise ValueError(
                        f"Make sure that all the required parameters: {['input_ids', 'scores', *names]} for "
                        f"{processor.__class__} are passed to the logits processor."
                    )
                scores = processor(input_ids, scores, **kwargs)
            else:
                scores = processor(input_ids, scores)
        return scores


def _new_tokens_as_max_length(generation_config, kwargs: dict) -> None:
    """``max_new_tokens=n`` without ``max_length`` -> ``max_length = prefix + n`` in ``kwargs`` (the same
    limit; likewise ``min_new_tokens`` -> ``min_length``): transformers otherwise warns "Both
    `max_new_tokens` and `max_length` seem to have been set" on every call of a model whose generation
    config carries a ``max_length``."""
    prefix = kwargs.get("decoder_input_ids")
    prefix_length = prefix.shape[1] if isinstance(prefix, torch.Tensor) else 1
    for new_name, total_name in (("max_new_tokens", "max_length"), ("min_new_tokens", "min_length")):
        if kwargs.get(total_name) is not None:
            continue
        new_tokens = kwargs.get(new_name)
        if new_tokens is None and new_name not in kwargs:
            new_tokens = getattr(generation_config, new_name, None)
        if new_tokens is not None:
            kwargs[total_name] = new_tokens + prefix_length
            kwargs[new_name] = None


#: generation settings that select a logits processor, a warper or another search in transformers'
#: generate(), with the value under which they do nothing
_INACTIVE_SETTINGS = {
    "do_sample": (False, None),
    "num_beams": (1, None),
    "num_return_sequences": (1, None),
    "repetition_penalty": (1.0, None),
    "encoder_repetition_penalty": (1.0, None),
    "no_repeat_ngram_size": (0, None),
    "encoder_no_repeat_ngram_size": (0, None),
    "bad_words_ids": (None,),
    "sequence_bias": (None,),
    "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,),
    "forced_bos_token_id": (None,),
    "forced_eos_token_id": (None,),
    "exponential_decay_length_penalty": (None,),
    "guidance_scale": (None, 1.0),
    "watermarking_config": (None,),
    "remove_invalid_values": (False, None),
    "renormalize_logits": (False, None),
    "max_time": (None,),
    "stop_strings": (None,),
    "output_scores": (False, None),
    "output_logits": (False, None),
    "output_attentions": (False, None),
    "output_hidden_states": (False, None),
    "return_dict_in_generate": (False, None),
    "is_assistant": (False, None),
    "use_cache": (True, None),
}
#: the call arguments the plain greedy loop understands (anything else goes to transformers' generate())
_PLAIN_GREEDY_ARGUMENTS = frozenset(
    {"input_ids", "attention_mask", "source_word_ids", "max_length", "min_length", "max_new_tokens"}
    | {"min_new_tokens", "do_sample", "num_beams", "num_return_sequences", "use_cache"}
)


class LogitsContractMixin(GenerationMixin):
    """What ``generate()`` needs from every model of the library, whatever its cache: [PAD] / decoder start
    never generated, and the dead-row fallback around the LogitsProcessors for greedy search and sampling.
    ``logits_are_log_probs`` tells callers which side of the ``logits`` contract a model is on."""

    @property
    def logits_are_log_probs(self) -> bool:
        """True when ``forward(...).logits`` are normalised log-probabilities (copy / pointer models)."""
        return False

    def never_generated_ids(self) -> list[int]:
        """Ids that are never a target ([PAD]: label padding is -100; the decoder start token): generate()
        suppresses them whatever the generation config says, so that a processor that lowers the other
        scores (repetition_penalty) cannot make [PAD] the best next token."""
        config = self.config
        ids = {config.pad_token_id, getattr(config, "decoder_start_token_id", None)}
        return sorted(i for i in ids if i is not None and i != config.eos_token_id)

    def _get_logits_processor(self, generation_config, *args, **kwargs) -> LogitsProcessorList:
        processors = super()._get_logits_processor(generation_config, *args, **kwargs)
        never = self.never_generated_ids()
        if never:
            processors.insert(0, SuppressTokensLogitsProcessor(never, device=self.device))
        if (generation_config.num_beams or 1) > 1:
            # beam search prunes beams without a legal continuation by itself
            return SignatureCachedLogitsProcessorList(processors)
        snapshot = SnapshotLogitsProcessor()
        return SignatureCachedLogitsProcessorList(
            [snapshot, *processors, RestoreDeadRowsLogitsProcessor(snapshot)]
        )


class RecurrentGenerationMixin(LogitsContractMixin):
    """``generate()`` for the RNN encoder-decoders: state in a :class:`RecurrentStateCache` (no key/value
    cache), beam reordering, argument checks and a short greedy loop, with :class:`LogitsContractMixin`'s
    processors."""

    def generate(self, inputs: torch.Tensor | None = None, generation_config=None, *args, **kwargs):
        """``GenerationMixin.generate`` after checking the arguments a caller most often gets wrong.

        Raises :class:`~hf_querygen.errors.InvalidInputError` naming the argument for: ``input_ids`` that
        are not a 2-D integer tensor (B, S) or hold ids outside ``[0, vocab_size)``; ``num_beams`` /
        ``num_return_sequences`` / ``max_new_tokens`` / ``max_length`` that are not integers >= 1.
        A 0-row batch (shape (0, S)) returns an empty ``torch.long`` tensor of shape (0, 1) without
        running the model (or an empty ``sequences`` of that shape with ``return_dict_in_generate``).
        """
        input_ids = inputs if inputs is not None else kwargs.get("input_ids")
        self._check_generation_arguments(generation_config, kwargs)
        if input_ids is not None:
            self._check_input_ids(input_ids)
            self._check_attention_mask(input_ids, kwargs.get("attention_mask"))
            if input_ids.shape[0] == 0:
                empty = torch.empty((0, 1), dtype=torch.long, device=input_ids.device)
                if kwargs.get("return_dict_in_generate"):
                    from transformers.generation.utils import GenerateEncoderDecoderOutput

                    return GenerateEncoderDecoderOutput(sequences=empty)
                return empty
        _new_tokens_as_max_length(generation_config, kwargs)
        if inputs is None and self.plain_greedy_loop:
            plain = self._plain_greedy_settings(generation_config, kwargs)
            if plain is not None:
                return self._plain_greedy(kwargs, *plain)
        return super().generate(inputs, generation_config, *args, **kwargs)

    #: run plain greedy search (no processor but the length ones, no streamer, no scores returned) in a
    #: short loop of our own instead of transformers' generate(): the same ids (checked against it in the
    #: tests), without its per-call setup (config copy and validation, processor and stopping-criteria
    #: lists, signature inspection), which at batch 1 costs as much as the small model's forward. A model
    #: opts in when its encoder takes (input_ids, attention_mask, source_word_ids)
    plain_greedy_loop: bool = False

    def _plain_greedy_settings(
        self, generation_config, kwargs: dict
    ) -> tuple[int, int, list[int], int, int] | None:
        """(max_length, min_length, eos ids, pad id, decoder start id) when this call is plain greedy search
        that :meth:`_plain_greedy` reproduces exactly, else None."""
        if generation_config is not None or not _PLAIN_GREEDY_ARGUMENTS.issuperset(kwargs):
            return None
        if not isinstance(kwargs.get("input_ids"), torch.Tensor) or kwargs.get("attention_mask") is None:
            return None
        config = self.generation_config
        for name, inactive in _INACTIVE_SETTINGS.items():
            value = (
                kwargs[name] if name in kwargs and kwargs[name] is not None else getattr(config, name, None)
            )
            if value not in inactive:
                return None
        max_length = kwargs.get("max_length") or config.max_length
        if max_length is None or kwargs.get("max_new_tokens") is not None:
            return None  # transformers' default length rule (and its warning) applies
        min_length = kwargs.get("min_length")
        min_length = config.min_length if min_length is None else min_length
        eos = config.eos_token_id
        eos_ids = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        start = config.decoder_start_token_id
        start = getattr(self.config, "decoder_start_token_id", None) if start is None else start
        if config.pad_token_id is None or start is None or (min_length and not eos_ids):
            return None
        return int(max_length), int(min_length or 0), eos_ids, int(config.pad_token_id), int(start)

    @torch.no_grad()
    def _plain_greedy(
        self, kwargs: dict, max_length: int, min_length: int, eos_ids: list[int], pad_id: int, start_id: int
    ) -> torch.LongTensor:
        """Greedy search as transformers' ``_sample`` runs it with the processors this model's generate()
        would build for these settings: [PAD] / decoder start suppressed, [EOS] masked below
        ``min_length``, a row the processors emptied restored (:class:`RestoreDeadRowsLogitsProcessor`),
        finished rows padded, stop at [EOS] in every row or at ``max_length``. -> (B, length) ids."""
        input_ids, attention_mask = kwargs["input_ids"], kwargs["attention_mask"]
        encoder_kwargs = {"attention_mask": attention_mask}
        if kwargs.get("source_word_ids") is not None:
            encoder_kwargs["source_word_ids"] = kwargs["source_word_ids"]
        encoder_outputs = self.get_encoder()(input_ids, **encoder_kwargs)
        device = input_ids.device
        batch_size = input_ids.shape[0]
        never = self.never_generated_ids()
        eos = torch.tensor(eos_ids, dtype=torch.long, device=device) if len(eos_ids) > 1 else None
        # the ids set to -inf at each step: the never-generated ones, below min_length the [EOS] ids too (one
        # index_fill per step, the scores SuppressTokens / MinLength leave; a bool-mask fill costs several
        # times more on a (64, C) batch); None where nothing is suppressed
        suppress = torch.tensor(never, dtype=torch.long, device=device) if never else None
        suppress_eos = (
            torch.tensor(never + eos_ids, dtype=torch.long, device=device) if min_length > 1 else None
        )
        step_ids = torch.full((batch_size, 1), start_id, dtype=torch.long, device=device)
        generated = [step_ids]  # (B, 1) ids per step, concatenated once at the end
        unfinished: torch.Tensor | None = None  # (B, 1) bool, from the first [EOS] on (until then: every row)
        source_mask = attention_mask.bool()  # once, not at every step
        cache = None
        length = 1
        while length < max_length:
            # the cache has consumed every id but the last one
            step_logits, cache = self._generation_step(step_ids, encoder_outputs, source_mask, cache)
            logits = step_logits.select(1, -1).float()  # the processors below work out of place
            eos_masked = length < min_length
            processing = suppress_eos if eos_masked else suppress
            scores = logits if processing is None else logits.index_fill(-1, processing, float("-inf"))
            best, step_ids = scores.max(dim=-1, keepdim=True)
            restored = False
            if processing is not None:
                # a row the processors emptied (every score -inf) gets its unprocessed scores back
                dead = torch.isneginf(best)
                if bool(dead.any()):
                    step_ids = torch.where(dead, logits.argmax(dim=-1, keepdim=True), step_ids)
                    restored = True
            if unfinished is not None:  # finished rows are padded
                step_ids = torch.where(unfinished, step_ids, pad_id)
            generated.append(step_ids)
            length += 1
            # below min_length [EOS] is -inf in every scored row: only a restored row can have ended
            if eos_ids and (restored or not eos_masked):
                ended = step_ids == eos_ids[0] if eos is None else torch.isin(step_ids, eos)
                if unfinished is not None or bool(ended.any()):
                    unfinished = ~ended if unfinished is None else unfinished & ~ended
                    if not bool(unfinished.any()):
                        break
        return torch.cat(generated, dim=1)

    def _generation_step(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs,
        attention_mask: torch.Tensor,
        cache: RecurrentStateCache | None,
    ) -> tuple[torch.Tensor, RecurrentStateCache]:
        """One call of the plain greedy loop: ``forward(..., use_cache=True)`` -> (logits (B, T, C), cache);
        ``attention_mask`` (B, S) bool. A model may compute the same without building its output object."""
        outputs = self(
            decoder_input_ids=decoder_input_ids,
            attention_mask=attention_mask,
            encoder_outputs=encoder_outputs,
            use_cache=True,
            return_dict=True,
            **{CACHE_NAME: cache},
        )
        return outputs.logits, getattr(outputs, CACHE_NAME)

    def _check_generation_arguments(self, generation_config, kwargs: dict) -> None:
        # the library's one check of generation arguments (hf_querygen.validation); a call argument
        # overrides the generation config passed in (the model's own is valid)
        counts = ("num_beams", "num_return_sequences", "max_new_tokens", "max_length")
        values = {name: getattr(generation_config, name, None) for name in counts}
        check_generation_kwargs("generate()", {**values, **kwargs}, default_beams=None)

    def _check_input_ids(self, input_ids) -> None:
        if not isinstance(input_ids, torch.Tensor):
            raise InvalidInputError(
                f"generate(): input_ids must be a torch.LongTensor of shape (batch, source_length), got "
                f"{type(input_ids).__name__}; encode texts with the model's tokenizer (return_tensors='pt')"
            )
        if input_ids.dtype.is_floating_point or input_ids.dtype.is_complex or input_ids.dtype == torch.bool:
            raise InvalidInputError(
                f"generate(): input_ids must hold integer token ids (torch.long), got dtype {input_ids.dtype}"
                "; pass the tokenizer's input_ids, or call .long() on integer-valued ids"
            )
        if input_ids.dim() != 2:
            raise InvalidInputError(
                f"generate(): input_ids must have shape (batch, source_length), got {tuple(input_ids.shape)}"
                "; add a batch dimension with input_ids.unsqueeze(0)"
            )
        if input_ids.shape[0] > 0 and input_ids.shape[1] == 0:
            raise InvalidInputError(
                f"generate(): input_ids of shape {tuple(input_ids.shape)} are empty (source length 0); every "
                "source needs at least the [EOS] the tokenizer appends: encode texts with the tokenizer"
            )
        if input_ids.numel() == 0:
            return
        embeddings = self.get_input_embeddings()
        vocab_size = getattr(embeddings, "num_embeddings", None) or self.config.vocab_size
        low, high = (int(value) for value in torch.aminmax(input_ids))
        if low < 0 or high >= vocab_size:
            bad = low if low < 0 else high
            raise InvalidInputError(
                f"generate(): input_ids holds id {bad}, outside the model's input vocabulary "
                f"[0, {vocab_size}); encode texts with the tokenizer saved with this model "
                "(unknown words map to [UNK])"
            )

    @staticmethod
    def _check_attention_mask(input_ids, attention_mask) -> None:
        if attention_mask is None or not isinstance(attention_mask, torch.Tensor):
            return
        if attention_mask.shape != input_ids.shape:
            raise InvalidInputError(
                f"generate(): attention_mask has shape {tuple(attention_mask.shape)} but input_ids "
                f"{tuple(input_ids.shape)}; pass both from the same tokenizer call"
            )
        if input_ids.shape[0] and input_ids.shape[1]:
            has_token = attention_mask.bool().any(dim=1)
            if bool(has_token.all()):
                return
            empty_rows = (~has_token).nonzero().flatten().tolist()
            if empty_rows:
                raise InvalidInputError(
                    f"generate(): attention_mask rows {empty_rows[:5]} are all padding (no source token to "
                    "attend to); drop those rows or encode them with the tokenizer (it appends [EOS])"
                )

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the decoder state lives in a RecurrentStateCache, not a key/value cache

    def _reorder_cache(
        self, past_key_values: RecurrentStateCache, beam_idx: torch.LongTensor
    ) -> RecurrentStateCache:
        """Beam search: keep, for every row, the state of the beam it continues."""
        past_key_values.reorder_cache(beam_idx)
        return past_key_values


__all__ = [
    "ExtendedSpaceLMOutput",
    "LogitsContractMixin",
    "RecurrentGenerationMixin",
    "RestoreDeadRowsLogitsProcessor",
    "SignatureCachedLogitsProcessorList",
    "SnapshotLogitsProcessor",
]
