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

from ...errors import InvalidInputError
from ...inference import encoded_batches, generate_batches, output_vocab_size_of_model, sequences_of
from ...pretrained import BACKBONE_FIELD
from ...text import normalize_for_matching
from ..base import TASKS, Task, TaskData
from ..subword import encode_subword_pairs, generate_candidates, prepare_backbone, warm_start_task_config
from ..word_tagging import encode_word_tags, predict_word_tags, token_classifier_config
from .decoding import KeywordLengthPrior, KeywordQuery, MinKeywordsLogitsProcessor, decode_dual_decoder_ids
from .encoding import encode_nl2kw
from .resources import in_domain_texts, synthetic_pairs, word_vectors
from .targets import TAG_LABELS, fit_keyword_order, keyword_tag_labels, unique_words

if TYPE_CHECKING:
    import datasets
    import torch
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

    from .decoding import KeywordQuery

#: families whose outputs point at source positions past the output vocabulary, closed by a sentinel
#: (Liu'18's dual decoder and its pointer-only ablation)
POINTER_FAMILIES = ("dual", "pointer")

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
    tag_logits: torch.Tensor,
    attention_mask: torch.Tensor,
    source_words: Sequence[Sequence[str]],
    threshold: float | None = None,
) -> list[list[str]]:
    """Words tagged KEYWORD (tag_logits (B, S, 2), attention_mask (B, S)), unique, in order: the argmax, or
    P(KEYWORD) >= ``threshold``."""
    keyword = tag_logits.argmax(-1) == 1 if threshold is None else tag_logits.softmax(-1)[..., 1] >= threshold
    tags = keyword & attention_mask.bool()
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
    #: ``bert2bert``: a warm-started encoder-decoder writing the keyword query in the backbone's word pieces
    families = ("seq2seq", "dual", "pointer", "tagging", "joint", "bert2bert")
    source_column = "nl_query"
    reference_column = "keyword_query"
    primary_metric = "f1"

    max_source_length = 64
    #: labels of a keyword tagger (KEYWORD = the word belongs to the keyword query)
    tag_labels = tuple(TAG_LABELS.values())
    #: a keyword tagger's one decoding: a word is a keyword where P(KEYWORD) >= ``keyword_threshold``
    #: (default: the argmax, i.e. 0.5); a lower threshold keeps more of a long query's words
    TAGGER_DECODING = ("keyword_threshold",)
    max_target_length = 16

    # ------------------------------------------------------------ preparation
    def prepare(
        self,
        splits: datasets.DatasetDict,
        min_output_frequency: int = 2,
        chinese_segmentation: bool = False,
        keyword_order: str = "tfidf",
        vocabulary: str | None = None,
        data_dir: str | None = None,
        backbone: str | None = None,
        **options: Any,
    ) -> TaskData:
        """Tokenizer (input vocabulary = all training words) and keyword order, fitted on TRAIN.

        The generator's output vocabulary = the target words seen at least ``min_output_frequency``
        times in training (Liu'18: "the most common query keywords"). ``keyword_order``: ``"tfidf"``
        (Sec. 3.1) or ``"natural"`` (:class:`~hf_querygen.tasks.nl2kw.NaturalKeywordOrder`).
        ``vocabulary="in-domain"`` adds the words of the in-domain question texts
        (:func:`hf_querygen.tasks.nl2kw.resources.in_domain_texts`: never validation or test) to the
        INPUT vocabulary only, so that word vectors and pretraining reach words nl2kw train lacks; the
        output vocabulary is unchanged. ``state["length_prior"]`` is the
        :class:`~hf_querygen.tasks.nl2kw.KeywordLengthPrior` of TRAIN. ``backbone``: the backbone's own
        tokenizer instead (a warm-start preset writes the keyword query as given, in word pieces; the
        vocabulary and keyword-order options do not apply)."""
        from ...tokenization import train_word_tokenizer, word_tokenize

        if options:
            raise TypeError(f"NL2KWTask.prepare: unknown options {sorted(options)}")
        if backbone is not None:
            tokenizer, state = prepare_backbone(backbone)
            return TaskData(self, splits, tokenizer, state)
        train = splits["train"]
        sources = list(train["nl_query"])
        if vocabulary == "in-domain":
            sources += in_domain_texts(splits, data_dir)
        elif vocabulary is not None:
            raise InvalidInputError(
                f"NL2KWTask.prepare: vocabulary {vocabulary!r} is not None or 'in-domain'"
            )
        tokenizer = train_word_tokenizer(
            sources, target_texts=train["keyword_query"], chinese_segmentation=chinese_segmentation
        )
        target_counts = Counter(w for q in train["keyword_query"] for w in word_tokenize(tokenizer, q))
        # the tokenizer ranks target words by frequency right after the 4 specials
        output_vocab_size = 4 + sum(1 for count in target_counts.values() if count >= min_output_frequency)
        state = {
            "output_vocab_size": output_vocab_size,
            "order": fit_keyword_order(keyword_order, train["nl_query"], train["keyword_query"]),
            "length_prior": KeywordLengthPrior.fit(train["nl_query"], train["keyword_query"]),
            "options": {"keyword_order": keyword_order, "vocabulary": vocabulary},
            "data_dir": data_dir,
        }
        return TaskData(self, splits, tokenizer, state)

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        if family == "tagging" and "backbone" in data.state:
            return self._encode_backbone_tags(data)
        if family == "bert2bert":
            return encode_subword_pairs(
                data.splits,
                data.tokenizer,
                self.source_column,
                self.reference_column,
                2 * self.max_source_length,
                2 * self.max_target_length,
            )
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

    def _encode_backbone_tags(self, data: TaskData) -> datasets.DatasetDict:
        """A token classifier on a backbone's word pieces: each whitespace word of the question tagged
        KEYWORD when its normalised form is a word of the keyword query (its first piece carries the
        tag, :func:`~hf_querygen.tasks.word_tagging.encode_word_tags`)."""
        import datasets

        def tags(batch: dict[str, list], i: int, words: list[str]) -> list[int]:
            keywords = normalize_for_matching(batch[self.reference_column][i]).split()
            return keyword_tag_labels(words, keywords, normalize_for_matching)

        return datasets.DatasetDict(
            {
                name: encode_word_tags(split, data.tokenizer, self.source_column, tags, desc="keyword tags")
                for name, split in data.splits.items()
            }
        )

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
        from ...presets import PRESETS, config_from_preset, is_warm_start

        if is_warm_start(preset):
            return warm_start_task_config(preset, data, **overrides)
        if "backbone" in data.state or "backbone" in PRESETS.get(preset):
            return token_classifier_config(
                self.name, preset, data.state.get("backbone"), self.tag_labels, overrides
            )
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
        if "length_prior" in data.state:  # min_keywords={"prior": scale} decoding reads it from the config
            sizes["keyword_length_prior"] = data.state["length_prior"].as_dict()
        return config_from_preset(preset, **{**sizes, **overrides})

    def max_new_tokens(self, data: TaskData | None = None) -> int:
        if data is not None and "backbone" in data.state:
            return 2 * self.max_target_length  # word pieces, [SEP] included
        return self.max_target_length + 2  # pointer sentinel and [EOS]

    #: ``pretraining_data`` / ``word_vectors`` names (:mod:`hf_querygen.tasks.nl2kw.resources`)
    PRETRAINING_DATA = ("k2q-synthetic",)
    WORD_VECTORS = ("in-domain-word2vec", "in-domain-fasttext")

    def pretraining_data(self, name: str, data: TaskData) -> tuple[datasets.Dataset, dict[str, Any]]:
        """``"k2q-synthetic"``: the K2Q synthetic question -> keyword-query pairs (no nl2kw validation or
        test question). Keyword words that are neither in the question nor in the generator's output
        vocabulary are dropped: the generator would only learn to emit [UNK] for them."""
        from ...tokenization import word_tokenize

        self.check_pretraining_name(name)
        pairs, info = synthetic_pairs(data.splits, data.state.get("data_dir"))
        vocab, size, tokenizer = data.tokenizer.get_vocab(), data.state["output_vocab_size"], data.tokenizer

        def keep_learnable(batch: dict[str, list]) -> dict[str, list]:
            kept = []
            for question, keywords in zip(batch["nl_query"], batch["keyword_query"], strict=True):
                in_question = set(normalize_for_matching(question).split())
                words = [
                    w
                    for w in word_tokenize(tokenizer, keywords)
                    if normalize_for_matching(w) in in_question or vocab.get(w, size) < size
                ]
                kept.append(" ".join(words))
            return {"keyword_query": kept}

        pairs = pairs.map(keep_learnable, batched=True, desc="learnable synthetic keywords")
        pairs = pairs.filter(lambda row: bool(row["keyword_query"].strip()))
        return pairs, {**info, "pretraining_pairs": len(pairs)}

    def word_vectors(self, name: str, data: TaskData, vector_size: int) -> Any:
        """``"in-domain-word2vec"`` / ``"in-domain-fasttext"``: skip-gram vectors trained on the question
        corpus Q and nl2kw TRAIN (never validation / test)."""
        if name not in self.WORD_VECTORS:
            raise InvalidInputError(f"nl2kw: no word vectors {name!r}; known: {self.WORD_VECTORS}")
        kind = name.removeprefix("in-domain-")
        return word_vectors(data.splits, kind, vector_size, data.state.get("data_dir"))

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

        Greedy unless ``generation_kwargs`` say otherwise (or the model's saved ``config.task_decoding``);
        ``suppress_tokens=[UNK_ID]`` forbids the decoders to spend steps on [UNK] (dropped from a keyword
        query anyway); ``min_keywords`` (an int, or ``{"prior": scale}`` for ``scale`` x the TRAINING
        length prior) forbids ending before that many words (:meth:`min_keywords_processor`)."""
        import torch

        max_source_length = max_source_length or self.max_source_length
        generation_kwargs = self.decoding(model, generation_kwargs)
        family = self.family_of(model.config)
        threshold = generation_kwargs.pop("keyword_threshold", None)
        if threshold is not None and family != "tagging":
            raise InvalidInputError(
                f"nl2kw: keyword_threshold={threshold!r} is a keyword tagger's decoding; this is a {family} "
                "model (it takes generate()'s arguments)"
            )
        if model.training:  # eval() walks every module: a measurable share of a batch-1 call
            model.eval()
        if family == "bert2bert":
            return self._warm_start_keywords(
                model, tokenizer, inputs, batch_size, 2 * max_source_length, generation_kwargs
            )
        if family == "tagging" and getattr(model.config, BACKBONE_FIELD, None) is not None:
            return self._backbone_tagger_keywords(model, tokenizer, inputs, batch_size, threshold)
        results: list[list[KeywordQuery]] = [[] for _ in inputs]
        if family == "tagging":
            for indices, batch, source_words in encoded_batches(
                model, tokenizer, inputs, batch_size, max_source_length
            ):
                with torch.no_grad():
                    logits = model(
                        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
                    ).logits
                tagged = tagged_words(logits, batch["attention_mask"], source_words, threshold)
                for i, words in zip(indices, tagged, strict=True):
                    results[i] = [KeywordQuery(words, [])]
            return [group[0] for group in results]
        n_returns = int(generation_kwargs.get("num_return_sequences", 1))
        size = output_vocab_size_of_model(model)
        min_keywords = generation_kwargs.pop("min_keywords", None)
        min_generated = int(generation_kwargs.pop("min_generated", 0))
        if min_generated and min_keywords is None:
            min_keywords = 0
        batches = generate_batches(
            model,
            tokenizer,
            inputs,
            batch_size,
            max_source_length,
            logits_processor_factory=(
                None
                if min_keywords is None
                else lambda batch: self.min_keywords_processor(
                    model.config, batch, min_keywords, size, min_generated
                )
            ),
            **generation_kwargs,
        )
        for indices, batch, source_words, generated in batches:
            sequences = sequences_of(generated)
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

    def _backbone_tagger_keywords(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[str],
        batch_size: int,
        threshold: float | None = None,
    ) -> list[KeywordQuery]:
        """:meth:`predict` for a token classifier on a backbone's word pieces: the question's whitespace
        words tagged KEYWORD (read at their first piece; P(KEYWORD) >= ``threshold`` where given),
        normalised, repeats dropped, all extracted."""
        keyword = self.tag_labels[1]
        tags = predict_word_tags(
            model,
            tokenizer,
            list(inputs),
            batch_size,
            cut_off_tag=self.tag_labels[0],
            tag_threshold=None if threshold is None else (keyword, threshold),
        )
        return [
            KeywordQuery(
                unique_words(
                    piece
                    for word, tag in zip(text.split(), row, strict=True)
                    if tag == keyword
                    for piece in normalize_for_matching(word).split()
                ),
                [],
            )
            for text, row in zip(inputs, tags, strict=True)
        ]

    def _warm_start_keywords(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[str],
        batch_size: int,
        max_source_length: int,
        generation_kwargs: dict[str, Any],
    ) -> list[KeywordQuery] | list[list[KeywordQuery]]:
        """:meth:`predict` for a warm-started BERT2BERT: its text, split into words, as a
        :class:`KeywordQuery` (words of the question first as extracted, the others as generated; repeats
        dropped). ``min_keywords`` / ``min_generated`` are decodings of the word-vocabulary models."""
        for option in ("min_keywords", "min_generated"):
            if generation_kwargs.pop(option, None):
                raise InvalidInputError(f"nl2kw: {option} is a decoding of the word-vocabulary models")
        n_returns = int(generation_kwargs.get("num_return_sequences") or 1)
        groups = generate_candidates(
            model, tokenizer, list(inputs), batch_size, max_source_length, **generation_kwargs
        )
        results = []
        for source, group in zip(inputs, groups, strict=True):
            in_source = set(normalize_for_matching(source).split())
            queries = []
            for text, _ in group:
                words = unique_words(normalize_for_matching(text).split())
                queries.append(
                    KeywordQuery(
                        [w for w in words if w in in_source], [w for w in words if w not in in_source]
                    )
                )
            results.append(queries)
        return [group[0] for group in results] if n_returns == 1 else results

    def min_keywords_processor(
        self,
        config: PretrainedConfig,
        batch: dict[str, torch.Tensor],
        min_keywords: Any,
        output_vocab_size: int,
        min_generated: int = 0,
    ) -> Any:
        """A :class:`~hf_querygen.tasks.nl2kw.MinKeywordsLogitsProcessor` for one encoded batch
        (``min_generated``: at least that many generator words, see the processor).

        ``min_keywords``: an int (the same minimum for every query) or ``{"prior": scale}``: ``scale`` x
        the keyword count the model's TRAINING length prior expects for the query's length
        (``config.keyword_length_prior``, saved by training)."""
        lengths = (batch["attention_mask"].sum(1) - 1).tolist()  # words (the final [EOS] is not one)
        if isinstance(min_keywords, int) and not isinstance(min_keywords, bool) and min_keywords >= 0:
            minimum = [min_keywords] * len(lengths)
        elif isinstance(min_keywords, dict) and set(min_keywords) == {"prior"}:
            fitted = getattr(config, "keyword_length_prior", None)
            if not fitted:
                raise InvalidInputError(
                    "min_keywords={'prior': ...}: the model has no keyword_length_prior in its config "
                    "(train it with hf_querygen >= this version, or give an int)"
                )
            prior = KeywordLengthPrior(**fitted)
            minimum = [prior.minimum(n, float(min_keywords["prior"])) for n in lengths]
        else:
            raise InvalidInputError(
                f"min_keywords must be an int >= 0 or {{'prior': scale}}, got {min_keywords!r}"
            )
        pointer = self.family_of(config) in POINTER_FAMILIES
        return MinKeywordsLogitsProcessor(
            minimum,
            end_token_ids=[config.eos_token_id],
            sentinel_ids=[output_vocab_size + n for n in lengths] if pointer else None,
            non_word_ids=[
                config.pad_token_id,
                getattr(config, "unk_token_id", 1),
                config.decoder_start_token_id,
            ],
            min_generated=min_generated,
            output_vocab_size=output_vocab_size,
        )

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
        from ..seq2seq import decode_extended

        if self.family_of(config) in POINTER_FAMILIES:
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
        from ...metrics.keyword_prf import keyword_prf

        texts = [
            p.text if hasattr(p, "text") else (p if isinstance(p, str) else " ".join(p)) for p in predictions
        ]
        result = keyword_prf(texts, list(references), sources=list(sources))
        return {k: float(v) for k, v in result.items() if k in KEYWORD_METRICS}


NL2KW = TASKS.register("nl2kw", NL2KWTask())
