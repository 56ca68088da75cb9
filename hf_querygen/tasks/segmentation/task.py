"""The ``segmentation`` task object: a query -> its segments (Lin et al., eCOM@SIGIR'17).

Trained on the ``webis_qsec_10`` corpus (``segmentations`` config: the 4,848 training queries with
their break-fusion reference and 5 deterministic folds; the corpus has no validation split, so
:meth:`SegmentationTask.load` holds out a deterministic part of train). Encodings: ``seq2seq`` (the
RNN encoder-decoder writes the query again with ``|`` at every break) and ``tagging`` (one B/I tag per
word). Decoding: :func:`hf_querygen.tasks.segmentation.neural.segment_breaks` (constrained by default).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError
from ...pretrained import BACKBONE_FIELD, resolve_backbone
from ...text import BIO_LABELS, BREAK_TOKEN, breaks_to_segments
from ..base import TASKS, Task, TaskData
from ..word_tagging import token_classifier_config

if TYPE_CHECKING:
    import datasets
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast


class SegmentationTask(Task):
    """Query segmentation on Webis-QSeC-10; outputs are segment lists (``["graffiti fonts", "alphabet"]``)."""

    name = "segmentation"
    pipeline_task = "query-segmentation"
    example_input = "new york cheap hotels"
    pipeline_tag = "token-classification"
    corpora = {"webis_qsec_10": ("segmentations",)}
    families = ("seq2seq", "tagging")
    source_column = "query"
    reference_column = "reference"
    primary_metric = "query_accuracy"
    #: labels of a segmentation tagger (B = a segment starts, I = it continues)
    tag_labels = BIO_LABELS
    outputs_are_lists = True
    #: longest query (words) the pipeline passes on; Webis-QSeC queries have at most 10 words, the
    #: limit only keeps a pasted document from building a huge tensor (saved as model_max_length)
    max_source_length = 64

    #: share of the training queries held out for validation when the corpus has no validation split
    validation_fraction = 0.1
    #: words seen once in training are [UNK] (so models learn what to do with an unknown word): chosen on
    #: the validation part of lin2017 fold 0 (BiLSTM tagger 0.398 -> 0.431 query accuracy, RNN
    #: encoder-decoder constrained 0.365 -> 0.380, unconstrained 0.056 -> 0.130; results/lin2017/
    #: rnn_diagnosis.json)
    min_word_frequency = 2

    def load(
        self, corpus: str | None = None, config: str | None = None, data_dir: str | Path | None = None
    ) -> datasets.DatasetDict:
        """train / validation / test: the corpus' folds 1-4 -> train (minus a deterministic 10% validation
        part, by query id), fold 0 -> test. The paper's official test set is not available."""
        import datasets

        from ...corpora._base import validation_mask

        splits = super().load(corpus, config, data_dir)
        if "validation" in splits and "test" in splits:
            return splits
        full = splits["train"]
        test_rows = [i for i, fold in enumerate(full["fold"]) if fold == 0]
        rest = full.select([i for i, fold in enumerate(full["fold"]) if fold != 0])
        held_out = validation_mask(rest["id"], self.validation_fraction, salt="neural-validation")
        return datasets.DatasetDict(
            train=rest.select([i for i, h in enumerate(held_out) if not h]),
            validation=rest.select([i for i, h in enumerate(held_out) if h]),
            test=full.select(test_rows),
        )

    def prepare(
        self,
        splits: datasets.DatasetDict,
        min_word_frequency: int | None = None,
        backbone: str | None = None,
        **options: Any,
    ) -> TaskData:
        """Whitespace word tokenizer fitted on the training queries; target side = words + ``|``.
        ``min_word_frequency``: see
        :func:`~hf_querygen.tasks.segmentation.neural.train_segmentation_tokenizer` (2 maps training
        singletons to ``[UNK]``); None: :attr:`min_word_frequency`.

        ``backbone`` (a Hub id or folder, :func:`hf_querygen.pretrained.resolve_backbone`): the backbone's
        own subword tokenizer instead, for a tagger warm-started from it (a preset with that
        ``backbone``); nothing is fitted, and ``min_word_frequency`` does not apply."""
        from .neural import train_segmentation_tokenizer

        if options:
            raise TypeError(f"SegmentationTask.prepare: unknown options {sorted(options)}")
        if backbone is not None:
            if min_word_frequency is not None:
                raise InvalidInputError(
                    "SegmentationTask.prepare: min_word_frequency sizes the word tokenizer; a backbone "
                    f"({backbone!r}) brings its own"
                )
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(resolve_backbone(backbone).path))
            return TaskData(self, splits, tokenizer, state={"backbone": backbone})
        train = splits["train"]
        if min_word_frequency is None:
            min_word_frequency = self.min_word_frequency
        tokenizer = train_segmentation_tokenizer(train["query"], train["reference"], min_word_frequency)
        return TaskData(self, splits, tokenizer)

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        import datasets

        from .neural import encode_for_seq2seq, encode_for_tagging

        encode = encode_for_seq2seq if family == "seq2seq" else encode_for_tagging
        return datasets.DatasetDict(
            {name: encode(split, data.tokenizer) for name, split in data.splits.items()}
        )

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
        from ...presets import PRESETS, config_from_preset

        tokenizer = data.tokenizer
        backbone = data.state.get("backbone")
        if backbone is not None or "backbone" in PRESETS.get(preset):
            return self._backbone_config(preset, backbone, overrides)
        # every special id the tokenizer has, also for a tagger: the Trainer otherwise "aligns" the config
        # with the tokenizer and warns that the tokenizer has new PAD/BOS/EOS tokens
        sizes: dict[str, Any] = {
            "vocab_size": len(tokenizer),
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        }
        if self.family_of(config_from_preset(preset)) == "tagging":
            sizes.update(
                id2label=dict(enumerate(BIO_LABELS)),
                label2id={label: i for i, label in enumerate(BIO_LABELS)},
            )
        else:
            sizes.update(
                output_vocab_size=len(tokenizer),
                unk_token_id=tokenizer.unk_token_id,
                decoder_start_token_id=tokenizer.bos_token_id,
            )
        return config_from_preset(preset, **{**sizes, **overrides})

    def _backbone_config(
        self, preset: str, backbone: str | None, overrides: dict[str, Any]
    ) -> PretrainedConfig:
        """A BIO token classifier on the backbone the data was tokenized for."""
        return token_classifier_config(self.name, preset, backbone, BIO_LABELS, overrides)

    def max_new_tokens(self, data: TaskData | None = None) -> int:
        return 24

    #: what a sequence-to-sequence segmenter honours (it decodes the breaks itself, not generate())
    SEQ2SEQ_DECODING = ("constrained", "num_beams", "pool_word_probability")

    def accepted_decoding(self, family: str) -> tuple[str, ...] | None:
        return self.TAGGER_DECODING if family == "tagging" else self.SEQ2SEQ_DECODING

    def predict(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[str],
        batch_size: int = 64,
        constrained: bool | None = None,
        num_beams: int | None = None,
        pool_word_probability: bool | None = None,
        **generation_kwargs: Any,
    ) -> list[list[str]]:
        """Segments of each query, in the caller's own words (whitespace split, case kept).

        constrained (default True) / num_beams (1) / pool_word_probability (True): see
        :func:`hf_querygen.tasks.segmentation.neural.seq2seq_batch_breaks`; a tagger honours none of
        them (given, they are refused), nor any other decoding argument."""
        from .neural import segment_breaks

        given = {
            "constrained": constrained,
            "num_beams": num_beams,
            "pool_word_probability": pool_word_probability,
        }
        given = {name: value for name, value in given.items() if value is not None}
        self.decoding_arguments(model, {**given, **generation_kwargs})
        constrained = True if constrained is None else constrained
        num_beams = 1 if num_beams is None else num_beams
        pool_word_probability = True if pool_word_probability is None else pool_word_probability
        for i, query in enumerate(inputs):
            if not isinstance(query, str) or not query.split():
                raise ValueError(f"segmentation inputs must be non-empty strings; input {i} is {query!r}")
        breaks = segment_breaks(
            model, tokenizer, list(inputs), constrained, batch_size, num_beams, pool_word_probability
        )
        return [breaks_to_segments(q.split(), b) for q, b in zip(inputs, breaks, strict=True)]

    def card_inputs(self, config: PretrainedConfig, metadata: dict[str, Any]) -> str | None:
        """The features a neural segmenter needs: the query's words and nothing else."""
        vocab = metadata.get("vocab_size", getattr(config, "vocab_size", "?"))
        backbone = getattr(config, BACKBONE_FIELD, None)
        if isinstance(backbone, dict):
            return (
                "Features this segmenter needs: the query's whitespace-separated words only, read by the "
                f"subword tokenizer of its backbone {backbone.get('model_id')!r} (a token classifier "
                "warm-started from it: a word it never saw in training is split into pieces it knows, and "
                "each word's tag is read at its first piece). No n-gram counts, Wikipedia titles or POS "
                "tags."
            )
        return (
            "Features this segmenter needs: the query's whitespace-separated words only (no n-gram counts, "
            "Wikipedia titles or POS tags), so it reads a query it has never seen the same way as a training "
            f"query. Words outside its {vocab}-entry training vocabulary are read as `[UNK]`. The lin2017 "
            "table (hf-querygen README) gives its quality on queries whose text training never saw; the CRF "
            "with text statistics (hf_querygen.baselines.segmentation_features) needs n-gram statistics and "
            "a POS tagger besides the words."
        )

    def as_text(self, output: Sequence[str]) -> str:
        return BREAK_TOKEN.join(output)

    def score(
        self, predictions: Sequence[Any], references: Sequence[str], sources: Sequence[str]
    ) -> dict[str, float]:
        """Query / break accuracy and segment P/R/F1 (Lin'17 Table 2); predictions are segment lists
        or ``|``-notation strings."""
        from ...metrics.segmentation_scores import segmentation_scores

        texts = [p if isinstance(p, str) else self.as_text(p) for p in predictions]
        scores = segmentation_scores(texts, list(references))
        scores.pop("n_queries", None)
        return {k: float(v) for k, v in scores.items()}


SEGMENTATION = TASKS.register("segmentation", SegmentationTask())
