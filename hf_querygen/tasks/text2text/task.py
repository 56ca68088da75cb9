"""A generic text -> text task over two corpus columns, decoded as plain text (copy-aware).

Registered once for the WikiAnswers seed pairs (keyword query -> question, the direction of Ding &
Balog's K2Q) so that the ding2018-* presets train today; the k2q task proper (synthetic data,
filters, its own metrics) registers its own :class:`~hf_querygen.tasks.base.Task`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...inference import generate_texts
from ...text import normalize_for_matching
from ..base import TASKS, Task, TaskData
from ..subword import encode_subword_pairs, generate_candidates, prepare_backbone, warm_start_task_config

if TYPE_CHECKING:
    import datasets
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast


class Text2TextTask(Task):
    """``source_column`` -> ``reference_column`` of the given corpora; outputs are strings; scored by
    exact match and corpus BLEU-4 against the tokenizer-normalised references."""

    pipeline_task = "query-reformulation"
    pipeline_tag = "text2text-generation"
    #: ``bert2bert``: a warm-started encoder-decoder on the backbone's word pieces (:mod:`.subword`)
    families = ("seq2seq", "bert2bert")
    primary_metric = "bleu"

    def __init__(
        self,
        name: str,
        corpora: Mapping[str, tuple[str, ...]],
        source_column: str,
        reference_column: str,
        max_source_length: int = 64,
        max_target_length: int = 24,
    ) -> None:
        self.name = name
        self.corpora = dict(corpora)
        self.source_column = source_column
        self.reference_column = reference_column
        self.max_source_length = max_source_length
        self.max_target_length = max_target_length

    def prepare(
        self,
        splits: datasets.DatasetDict,
        output_vocab_size: int | None = None,
        backbone: str | None = None,
        **options: Any,
    ) -> TaskData:
        """Word tokenizer on TRAIN (target words first: they are the decoder's output vocabulary); with
        ``backbone``, that backbone's own tokenizer instead (for a warm-start preset, :mod:`.subword`)."""
        from ...tokenization import output_vocab_size_of, train_word_tokenizer

        if options:
            raise TypeError(f"{type(self).__name__}.prepare: unknown options {sorted(options)}")
        if backbone is not None:
            tokenizer, state = prepare_backbone(backbone)
            return TaskData(self, splits, tokenizer, state)
        train = splits["train"]
        tokenizer = train_word_tokenizer(
            train[self.source_column],
            target_texts=train[self.reference_column],
            output_vocab_size=output_vocab_size,
        )
        return TaskData(self, splits, tokenizer, {"output_vocab_size": output_vocab_size_of(tokenizer)})

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        from ..seq2seq import encode_seq2seq

        if family == "bert2bert":
            return encode_subword_pairs(
                data.splits,
                data.tokenizer,
                self.source_column,
                self.reference_column,
                self.subword_source_length,
                self.subword_target_length,
            )

        copy = bool(data.state.get("copy", False))
        encoded = encode_seq2seq(
            data.splits,
            data.tokenizer,
            self.source_column,
            self.reference_column,
            data.state["output_vocab_size"],
            max_source_length=self.max_source_length,
            max_target_length=self.max_target_length,
            copy=copy,
        )
        columns = ["input_ids", "attention_mask", "labels"] + (["source_word_ids"] if copy else [])
        return encoded.select_columns(columns)

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
        from ...presets import config_from_preset, is_warm_start

        if is_warm_start(preset):
            data._encoded.clear()
            return warm_start_task_config(preset, data, **overrides)
        tokenizer = data.tokenizer
        config = config_from_preset(
            preset,
            vocab_size=len(tokenizer),
            output_vocab_size=data.state["output_vocab_size"],
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            unk_token_id=tokenizer.unk_token_id,
            decoder_start_token_id=tokenizer.bos_token_id,
            **overrides,
        )
        # the labels live in the extended (copy) space exactly when the model copies
        data.state["copy"] = str(getattr(config, "copy", "none")).lower() not in ("none", "false", "")
        data._encoded.clear()
        return config

    def max_new_tokens(self, data: TaskData | None = None) -> int:
        if data is not None and "backbone" in data.state:
            return self.subword_target_length
        return self.max_target_length

    @property
    def subword_source_length(self) -> int:
        """Word pieces of a source for a warm-started model: [CLS], [SEP] and ~1.5 pieces per word."""
        return 2 * self.max_source_length

    @property
    def subword_target_length(self) -> int:
        """Word pieces of a target for a warm-started model ([SEP] included)."""
        return 2 * self.max_target_length

    def predict(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[str],
        batch_size: int = 64,
        max_source_length: int | None = None,
        **generation_kwargs: Any,
    ) -> list[str] | list[list[str]]:
        """Generated text per input (a list of ``n`` with ``num_return_sequences=n``). The decoding saved
        with the model (``config.task_decoding``: e.g. k2q's no-repeat and length settings chosen on
        validation) is the default; ``generation_kwargs`` override it."""
        generation_kwargs = self.decoding(model, generation_kwargs)
        if self.family_of(model.config) == "bert2bert":
            n = int(generation_kwargs.get("num_return_sequences") or 1)
            groups = generate_candidates(
                model,
                tokenizer,
                list(inputs),
                batch_size,
                max_source_length or self.subword_source_length,
                **generation_kwargs,
            )
            texts = [[text for text, _ in group] for group in groups]
            return [group[0] for group in texts] if n == 1 else texts
        texts = generate_texts(
            model,
            tokenizer,
            list(inputs),
            batch_size,
            max_source_length or self.max_source_length,
            **generation_kwargs,
        )
        n = int(generation_kwargs.get("num_return_sequences", 1))
        return texts if n == 1 else [texts[i : i + n] for i in range(0, len(texts), n)]

    def score(
        self, predictions: Sequence[Any], references: Sequence[str], sources: Sequence[str]
    ) -> dict[str, float]:
        from ...metrics.exact_match import exact_match
        from ...metrics.sacrebleu_metric import corpus_bleu

        predicted = [normalize_for_matching(p) for p in predictions]
        gold = [normalize_for_matching(r) for r in references]
        return {
            "exact_match": float(exact_match(predicted, gold)["exact_match"]),
            "bleu": float(corpus_bleu(predicted, gold)["bleu"]),
        }


WIKIANSWERS_SEED_PAIRS = TASKS.register(
    "text2text",
    Text2TextTask("text2text", {"wikianswers": ("seed_pairs",)}, "keyword_query", "question"),
)
