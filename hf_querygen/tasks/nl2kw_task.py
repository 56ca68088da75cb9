"""The ``nl2kw`` task object: natural-language query -> keyword query (Liu et al., CIKM'18).

Encodings per model family come from :func:`hf_querygen.tasks.nl2kw.encode_nl2kw`; decoding reads
every family's output into a :class:`~hf_querygen.tasks.nl2kw.KeywordQuery` (extracted words, generated
words, their union): the dual decoder / pointer network by their pointer and generator phases
(Sec. 3.5), a seq2seq model by whether each output word occurs in the query, the BiLSTM tagger by its
KEYWORD tags, and the joint ATS2S+SL model by the union of its decoder's words and its tags.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .base import TASKS, Task, TaskData
from .nl2kw import TAG_LABELS

if TYPE_CHECKING:
    import datasets
    import torch
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

    from .nl2kw import KeywordQuery

#: metrics of the Liu'18 tables (keyword_prf keys) plus exact match
KEYWORD_METRICS = (
    "precision",
    "recall",
    "f1",
    "pooled_precision",
    "pooled_recall",
    "pooled_f1",
    "recall_extractive",
    "recall_generative",
    "recall_total",
)


def tagged_words(
    tag_logits: torch.Tensor, attention_mask: torch.Tensor, source_words: Sequence[Sequence[str]]
) -> list[list[str]]:
    """Words whose argmax tag is KEYWORD (tag_logits (B, S, 2), attention_mask (B, S)), unique, in order."""
    from .nl2kw import unique_words

    tags = (tag_logits.argmax(-1) == 1) & attention_mask.bool()
    return [
        unique_words(w for w, keep in zip(words, row, strict=False) if keep)
        for row, words in zip(tags.tolist(), source_words, strict=True)
    ]


class NL2KWTask(Task):
    """Natural-language query -> keyword query on the ``nl2kw`` corpus (configs ``en`` / ``zh``)."""

    name = "nl2kw"
    pipeline_task = "keyword-query-generation"
    pipeline_tag = "text2text-generation"
    corpora = {"nl2kw": ("en", "zh")}
    families = ("seq2seq", "dual", "pointer", "tagging", "joint")
    source_column = "nl_query"
    reference_column = "keyword_query"
    primary_metric = "f1"

    max_source_length = 64
    #: labels of a keyword tagger (KEYWORD = the word belongs to the keyword query)
    tag_labels = tuple(TAG_LABELS.values())
    max_target_length = 16

    # ------------------------------------------------------------ preparation
    def prepare(
        self,
        splits: datasets.DatasetDict,
        min_output_frequency: int = 2,
        chinese_segmentation: bool = False,
        **options: Any,
    ) -> TaskData:
        """Tokenizer (input vocabulary = all training words) and TF-IDF keyword order, fitted on TRAIN.

        The generator's output vocabulary = the target words seen at least ``min_output_frequency``
        times in training (Liu'18: "the most common query keywords")."""
        from ..tokenization import train_word_tokenizer, word_tokenize
        from .nl2kw import TfidfKeywordOrder

        if options:
            raise TypeError(f"NL2KWTask.prepare: unknown options {sorted(options)}")
        train = splits["train"]
        tokenizer = train_word_tokenizer(
            train["nl_query"], target_texts=train["keyword_query"], chinese_segmentation=chinese_segmentation
        )
        target_counts = Counter(w for q in train["keyword_query"] for w in word_tokenize(tokenizer, q))
        # the tokenizer ranks target words by frequency right after the 4 specials
        output_vocab_size = 4 + sum(1 for count in target_counts.values() if count >= min_output_frequency)
        documents = list(dict.fromkeys(train["nl_query"])) + list(train["keyword_query"])
        state = {"output_vocab_size": output_vocab_size, "order": TfidfKeywordOrder.fit(documents)}
        return TaskData(self, splits, tokenizer, state)

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        from .nl2kw import encode_nl2kw

        encoded = encode_nl2kw(
            data.splits,
            data.tokenizer,
            data.state["order"],
            family,
            data.state["output_vocab_size"],
            max_source_length=self.max_source_length,
            max_target_length=self.max_target_length,
        )
        columns = [
            c
            for c in ("input_ids", "attention_mask", "labels", "source_word_ids")
            if c in encoded["train"].column_names
        ]
        return encoded.select_columns(columns)

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
        from ..presets import config_from_preset
        from .nl2kw import TAG_LABELS

        tokenizer = data.tokenizer
        # every special id the tokenizer has, also for a tagger: the Trainer otherwise "aligns" the config
        # with the tokenizer and warns that the tokenizer has new PAD/BOS/EOS tokens
        sizes: dict[str, Any] = {
            "vocab_size": len(tokenizer),
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        }
        config = config_from_preset(preset)
        if self.family_of(config) == "tagging":
            sizes.update(id2label=dict(TAG_LABELS), label2id={v: k for k, v in TAG_LABELS.items()})
        else:
            sizes.update(
                output_vocab_size=data.state["output_vocab_size"],
                unk_token_id=tokenizer.unk_token_id,
                decoder_start_token_id=tokenizer.bos_token_id,
            )
        return config_from_preset(preset, **{**sizes, **overrides})

    def max_new_tokens(self, data: TaskData | None = None) -> int:
        return self.max_target_length + 2  # pointer sentinel and [EOS]

    # ------------------------------------------------------------ decoding
    def predict(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[str],
        batch_size: int = 64,
        max_source_length: int | None = None,
        **generation_kwargs: Any,
    ) -> list[KeywordQuery] | list[list[KeywordQuery]]:
        """One :class:`KeywordQuery` per input (a list of ``n`` with ``num_return_sequences=n``).

        Greedy unless ``generation_kwargs`` say otherwise; ``suppress_tokens=[UNK_ID]`` forbids the
        decoders to spend steps on [UNK] (dropped from a keyword query anyway)."""
        import torch

        from ..inference import encoded_batches, generate_batches, output_vocab_size_of_model

        max_source_length = max_source_length or self.max_source_length
        family = self.family_of(model.config)
        model.eval()
        results: list[list[KeywordQuery]] = [[] for _ in inputs]
        if family == "tagging":
            from .nl2kw import KeywordQuery

            for indices, batch, source_words in encoded_batches(
                model, tokenizer, inputs, batch_size, max_source_length
            ):
                with torch.no_grad():
                    logits = model(
                        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
                    ).logits
                tagged = tagged_words(logits, batch["attention_mask"], source_words)
                for i, words in zip(indices, tagged, strict=True):
                    results[i] = [KeywordQuery(words, [])]
            return [group[0] for group in results]
        n_returns = int(generation_kwargs.get("num_return_sequences", 1))
        size = output_vocab_size_of_model(model)
        for indices, batch, source_words, sequences in generate_batches(
            model, tokenizer, inputs, batch_size, max_source_length, **generation_kwargs
        ):
            tags: list[list[str]] | None = None
            if family == "joint":
                with torch.no_grad():
                    encoder_outputs = model.encoder(
                        batch["input_ids"], batch["attention_mask"], batch.get("source_word_ids")
                    )
                    tags = tagged_words(model.tag(encoder_outputs), batch["attention_mask"], source_words)
            for k, i in enumerate(indices):
                rows = sequences[k * n_returns : (k + 1) * n_returns].tolist()
                results[i] = [
                    self.decode_ids(model.config, tokenizer, ids, source_words[k], size, tags and tags[k])
                    for ids in rows
                ]
        return [group[0] for group in results] if n_returns == 1 else results

    def decode_ids(
        self,
        config: PretrainedConfig,
        tokenizer: PreTrainedTokenizerFast,
        ids: Sequence[int],
        source_words: Sequence[str],
        output_vocab_size: int,
        tagged: Sequence[str] | None = None,
    ) -> KeywordQuery:
        """One generated id sequence (+ the joint model's tagged words) -> :class:`KeywordQuery`."""
        from ..text import normalize_for_matching
        from .nl2kw import KeywordQuery, decode_dual_decoder_ids, unique_words
        from .seq2seq import decode_extended

        if config.model_type == "dual_decoder":
            skip = (config.pad_token_id, config.unk_token_id, config.decoder_start_token_id)
            return decode_dual_decoder_ids(
                ids, source_words, tokenizer, output_vocab_size, config.eos_token_id, skip_token_ids=skip
            )
        words = unique_words(
            [*decode_extended(ids, source_words, tokenizer, output_vocab_size), *(tagged or ())]
        )
        in_source = {normalize_for_matching(word) for word in source_words}
        return KeywordQuery(
            [w for w in words if normalize_for_matching(w) in in_source],
            [w for w in words if normalize_for_matching(w) not in in_source],
        )

    def as_text(self, output: KeywordQuery | Sequence[str] | str) -> str:
        """The keyword query's text (a word list is joined by spaces)."""
        if isinstance(output, str):
            return output
        return output.text if hasattr(output, "text") else " ".join(output)

    def score(
        self, predictions: Sequence[Any], references: Sequence[str], sources: Sequence[str]
    ) -> dict[str, float]:
        """Liu'18 keyword P/R/F1 (per-query means and pooled), recall on extractive / generative gold
        words (Table 3); predictions are :class:`KeywordQuery` objects, word lists or texts."""
        from ..metrics.keyword_prf import keyword_prf

        texts = [
            p.text if hasattr(p, "text") else (p if isinstance(p, str) else " ".join(p)) for p in predictions
        ]
        result = keyword_prf(texts, list(references), sources=list(sources))
        return {k: float(v) for k, v in result.items() if k in KEYWORD_METRICS}


NL2KW = TASKS.register("nl2kw", NL2KWTask())
