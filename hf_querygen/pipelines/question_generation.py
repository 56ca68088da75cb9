"""``pipeline("question-generation")``: keyword query in, several scored questions out (Ding & Balog K2Q).

Built on :class:`~hf_querygen.pipelines.text2text.QueryReformulationPipeline` (copy-aware decoding,
so copied out-of-vocabulary keyword terms survive) for EDNet / AttNet / CopyNet
(``ding2018-{ednet,attnet,copynet}`` presets). Each input gives a list of
``{"generated_text": question, "score": s}``, best first, ``num_return_sequences`` long at most.

Decoding (``strategy``):

* ``"beam"`` (default): beam search, ``num_beams`` >= ``num_return_sequences``; ``score`` is the
  length-normalised log-probability (``sequences_scores`` of ``generate()``).
* ``"distinct-beam"``: a simple diverse decoding of our own. Diverse (group) beam search was
  removed from transformers 5.x core (``num_beam_groups`` / ``diversity_penalty`` now need a Hub
  custom-generate repository, which does not work offline), so we over-generate: a beam of
  ``num_return_sequences * overgenerate`` hypotheses, decoded to text, duplicates (same words after
  copy decoding) dropped, the best ``num_return_sequences`` distinct questions kept. Distinct by
  construction, not diverse in the Vijayakumar et al. sense.
* ``"sample"``: ancestral sampling (``top_p``, ``temperature``, ... pass through), duplicates
  dropped; ``score`` is the mean per-token log-probability under the sampling distribution
  (``compute_transition_scores`` of the processed scores), results sorted by it.

    >>> generate_questions = pipeline("question-generation", model="path/to/copynet")
    >>> generate_questions("capital france", num_return_sequences=3, strategy="distinct-beam")
    [{'generated_text': 'what is the capital of france', 'score': -0.21}, ...]
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from ..errors import InvalidInputError
from ..tasks.seq2seq import decode_extended
from .text2text import _MODEL_INPUT_KEYS, QueryReformulationPipeline

TASK_NAME = "question-generation"
STRATEGIES = ("beam", "distinct-beam", "sample")


class QuestionGenerationPipeline(QueryReformulationPipeline):
    """Keyword query -> ``num_return_sequences`` scored questions (module docstring)."""

    pipeline_task_name = TASK_NAME

    def _sanitize_parameters(
        self,
        max_source_length: int | None = None,
        return_tensors: bool | None = None,
        strategy: str | None = None,
        overgenerate: int | None = None,
        **generate_kwargs: Any,
    ):
        preprocess, forward, postprocess = super()._sanitize_parameters(
            max_source_length, return_tensors, **generate_kwargs
        )
        if strategy is not None:
            if strategy not in STRATEGIES:
                raise InvalidInputError(f"{TASK_NAME}: strategy {strategy!r} is not one of {STRATEGIES}")
            forward["strategy"] = strategy
        if overgenerate is not None:
            if overgenerate < 1:
                raise InvalidInputError(f"{TASK_NAME}: overgenerate must be >= 1, got {overgenerate}")
            forward["overgenerate"] = overgenerate
        return preprocess, forward, postprocess

    def _forward(
        self,
        model_inputs: dict[str, Any],
        strategy: str = "beam",
        overgenerate: int = 3,
        **generate_kwargs: Any,
    ) -> dict[str, Any]:
        source_words = model_inputs.pop("source_words")
        batch_size = model_inputs["input_ids"].shape[0]
        if batch_size == 1 and (not source_words or isinstance(source_words[0], str)):
            source_words = [source_words]
        accepted = set(inspect.signature(self.model.forward).parameters)
        inputs = {k: v for k, v in model_inputs.items() if k in accepted and k in _MODEL_INPUT_KEYS}
        wanted = int(generate_kwargs.pop("num_return_sequences", 1))
        kwargs = dict(generate_kwargs, return_dict_in_generate=True, output_scores=True)
        if strategy == "sample":
            kwargs.update(do_sample=True, num_beams=1, num_return_sequences=wanted * overgenerate)
        else:
            returned = wanted * (overgenerate if strategy == "distinct-beam" else 1)
            kwargs.update(
                do_sample=False,
                num_return_sequences=returned,
                num_beams=max(returned, kwargs.get("num_beams", 1)),
            )
        out = self.model.generate(**inputs, **kwargs)
        sequences = out.sequences  # (B * n, T)
        if strategy == "sample":
            # per-token log-probabilities of the sampled tokens, (B * n, T'); padding after EOS is 0
            # (compute_transition_scores assumes width config.vocab_size; copy models emit the wider
            # extended output space, so gather by hand): processed scores (T', B*n, V') -> log-softmax
            log_probs = torch.log_softmax(torch.stack(out.scores).float(), dim=-1)
            generated = sequences[:, -len(out.scores) :]  # (B*n, T') without the decoder start token
            steps = log_probs.gather(-1, generated.T.unsqueeze(-1)).squeeze(-1).T  # (B*n, T')
            pad = self.model.config.pad_token_id
            keep = (generated != pad) & torch.isfinite(steps)  # padding after EOS does not count
            scores = torch.where(keep, steps, 0.0).sum(-1) / keep.sum(-1).clamp(min=1)
        else:
            scores = out.sequences_scores  # (B * n,) length-normalised log-probability
        n = sequences.shape[0] // batch_size
        return {
            "sequences": sequences.reshape(batch_size, n, -1),
            "scores": scores.reshape(batch_size, n),
            "source_words": source_words,
            "wanted": torch.full((batch_size,), wanted),
        }

    def postprocess(
        self, model_outputs: dict[str, Any], return_tensors: bool = False
    ) -> list[dict[str, Any]]:
        sequences, scores = model_outputs["sequences"][0], model_outputs["scores"][0]  # (n, T), (n,)
        wanted = int(model_outputs["wanted"][0])
        source_words = model_outputs["source_words"]
        if source_words and isinstance(source_words[0], list):
            source_words = source_words[0]
        output_vocab_size = (
            getattr(self.model.config, "output_vocab_size", None) or self.model.config.vocab_size
        )
        order = torch.argsort(scores, descending=True, stable=True).tolist()
        results, seen = [], set()
        for i in order:
            text = " ".join(decode_extended(sequences[i], source_words, self.tokenizer, output_vocab_size))
            if text in seen:
                continue  # distinct questions only
            seen.add(text)
            item = {"generated_text": text, "score": float(scores[i])}
            if return_tensors:
                item["generated_token_ids"] = sequences[i]
            results.append(item)
            if len(results) == wanted:
                break
        return results


def register_pipeline() -> None:
    """Register the ``question-generation`` task (called at ``import hf_querygen``)."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForTokenClassification
    from transformers.pipelines import PIPELINE_REGISTRY

    PIPELINE_REGISTRY.register_pipeline(
        TASK_NAME,
        pipeline_class=QuestionGenerationPipeline,
        pt_model=(AutoModelForSeq2SeqLM, AutoModelForTokenClassification),
        type="text",
    )
