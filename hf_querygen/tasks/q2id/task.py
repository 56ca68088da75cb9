"""The ``q2id`` task object: query + relevant (+ irrelevant) documents -> intent description (Zhang et
al. CIKM'20).

Inputs are document sets, not strings: a source is a mapping ``{"query", "relevant_documents",
"irrelevant_documents"}`` (documents as raw text, sentence lists or q2id corpus records), so
:class:`Q2IDTaskData` hands the runner whole records as ``sources``. Encoding, collation and decoding
come from :mod:`hf_querygen.tasks.q2id`; the model family is ``hierarchical`` (CtrsGen: labels outside
the output vocabulary become [UNK]) or ``hierarchical-copy`` (the query pointer-generator PG/RSA/SD2:
labels keep every tokenizer id, which it can copy from the relevant documents). Scored by ROUGE-1/2/L
recall (the paper's Tables 3-4), F1 and mean output length (:mod:`hf_querygen.metrics.rouge`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import InvalidInputError
from ...inference import as_max_length, run_generate, sequences_of
from ..base import TASKS, Task, TaskData
from ..subword import prepare_backbone, warm_start_task_config
from .pieces import ContrastiveCollator, ContrastiveLoss, encode_q2id_pieces, generate_descriptions

if TYPE_CHECKING:
    import datasets
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

    from .encoding import Q2IDCaps

#: the metrics of Tables 3-4 (recall) plus F1 and mean output length in words
Q2ID_METRICS = (
    "rouge1_recall",
    "rouge2_recall",
    "rougeL_recall",
    "rouge1_f",
    "rouge2_f",
    "rougeL_f",
    "output_words",
)
#: the input fields of one q2id source
SOURCE_FIELDS = ("query", "relevant_documents", "irrelevant_documents")


def as_source(example: Mapping[str, Any]) -> dict[str, Any]:
    """A corpus record (or any mapping with ``query`` and ``relevant_documents``, or such a mapping as a JSON
    string, as ``hf-querygen generate`` passes it) -> a q2id source."""
    if isinstance(example, str) and example.lstrip().startswith("{"):
        import json

        try:
            example = json.loads(example)
        except json.JSONDecodeError as err:
            raise InvalidInputError(f"a q2id input given as text must be a JSON object: {err}") from err
    if not isinstance(example, Mapping) or "query" not in example or "relevant_documents" not in example:
        raise InvalidInputError(
            "a q2id input must be a mapping with 'query' and 'relevant_documents' (and optionally "
            f"'irrelevant_documents'); got {example!r:.200}"
        )
    relevant = example["relevant_documents"]
    irrelevant = example.get("irrelevant_documents") or []
    if isinstance(relevant, str) or isinstance(irrelevant, str):
        raise InvalidInputError("q2id: relevant/irrelevant_documents must be lists of documents, not strings")
    return {
        "query": example["query"],
        "relevant_documents": [_as_document(d, f"relevant_documents[{i}]") for i, d in enumerate(relevant)],
        "irrelevant_documents": [
            _as_document(d, f"irrelevant_documents[{i}]") for i, d in enumerate(irrelevant)
        ],
    }


def _as_document(document: Any, where: str) -> Any:
    """Raw text and ``{"sentences": [...]}`` records pass; a list of sentences becomes a record."""
    if isinstance(document, str) or (isinstance(document, Mapping) and "sentences" in document):
        return document
    if isinstance(document, (list, tuple)) and all(isinstance(s, str) for s in document):
        return {"sentences": list(document)}
    raise InvalidInputError(
        f"q2id: {where} must be a string, a list of sentences or a mapping with 'sentences'; "
        f"got {type(document).__name__}"
    )


def document_text(document: Any) -> str:
    """A q2id document (raw text, a list of sentences or a ``{"sentences": [...]}`` record) as one string."""
    if isinstance(document, str):
        return document
    if isinstance(document, Mapping) and "sentences" in document:
        return " ".join(document["sentences"])
    if isinstance(document, (list, tuple)) and all(isinstance(s, str) for s in document):
        return " ".join(document)
    raise InvalidInputError(
        "q2id: a document must be a string, a list of sentences or a mapping with 'sentences'; got "
        f"{type(document).__name__}"
    )


class DocumentRetriever:
    """Relevant and irrelevant documents for a bare query, from the retrieval engine (beyond Zhang'20).

    The paper's inputs are judged documents. A user with only a query and a document collection gets them
    from :class:`hf_querygen.retrieval.Index`: the ``relevant`` best-ranked documents stand in for the
    relevant set, the next ``irrelevant`` ones (ranks ``relevant + 1 .. relevant + irrelevant``: retrieved,
    so topically close, but ranked lower, like the judged non-relevant documents of Sec. 3.2) for the
    irrelevant set.

    Args:
        index: the searchable collection; its row ``i`` is ``documents[i]``.
        documents: the collection's documents (raw text, sentence lists or q2id records), in index-row order.
        relevant: documents taken as relevant (>= 1).
        irrelevant: documents after them taken as irrelevant (>= 0).
        ranker, ranker_params: :meth:`hf_querygen.retrieval.Index.search` ranker and its parameters.
        if_nothing: what a query that retrieves nothing (no query word in the collection) gets: "raise"
            (:class:`InvalidInputError` naming the query) or "query" (the query itself as its one relevant
            document, for an evaluation that must answer every query; :attr:`unanswered` counts them).
    """

    def __init__(
        self,
        index: Any,
        documents: Sequence[Any],
        relevant: int = 5,
        irrelevant: int = 5,
        ranker: str = "bm25",
        if_nothing: str = "raise",
        **ranker_params: Any,
    ) -> None:
        if if_nothing not in ("raise", "query"):
            raise InvalidInputError(
                f"DocumentRetriever: if_nothing must be 'raise' or 'query'; got {if_nothing!r}"
            )
        if len(documents) != len(index):
            raise InvalidInputError(
                f"DocumentRetriever: {len(documents)} documents for an index of {len(index)} rows; "
                "documents[i] must be the index's row i"
            )
        for name, value, minimum in (("relevant", relevant, 1), ("irrelevant", irrelevant, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise InvalidInputError(
                    f"DocumentRetriever: {name} must be an integer >= {minimum}; got {value!r}"
                )
        self.index, self.documents = index, documents
        self.relevant, self.irrelevant = relevant, irrelevant
        self.ranker, self.ranker_params = ranker, ranker_params
        self.if_nothing, self.unanswered = if_nothing, 0

    @classmethod
    def from_documents(cls, documents: Sequence[Any], ids: Sequence[Any] | None = None, **kwargs: Any):
        """Index ``documents`` in memory (BM25 statistics over :func:`document_text`) and wrap them."""
        from ...retrieval import Index

        index = Index.from_texts([document_text(d) for d in documents], ids=ids, show_progress=False)
        return cls(index, documents, **kwargs)

    def sources(self, queries: Sequence[str]) -> list[dict[str, Any]]:
        """One q2id source per query: ``{"query", "relevant_documents", "irrelevant_documents"}``.

        Raises :class:`InvalidInputError` naming the query when nothing is retrieved for it (no query word
        is in the collection): CtrsGen needs at least one relevant document."""
        if isinstance(queries, str):
            raise InvalidInputError("DocumentRetriever.sources takes a list of queries, not one string")
        depth = self.relevant + self.irrelevant
        rankings = self.index.search_batch(
            list(queries), k=depth, ranker=self.ranker, threads=1, **self.ranker_params
        )
        sources = []
        for query, hits in zip(queries, rankings, strict=True):
            if not hits and self.if_nothing == "query":
                self.unanswered += 1
                sources.append(as_source({"query": query, "relevant_documents": [query]}))
                continue
            if not hits:
                raise InvalidInputError(
                    f"DocumentRetriever: no document of the collection matches the query {query!r}; give its "
                    "relevant_documents instead"
                )
            rows = [hit.row for hit in hits]
            sources.append(
                as_source(
                    {
                        "query": query,
                        "relevant_documents": [self.documents[r] for r in rows[: self.relevant]],
                        "irrelevant_documents": [self.documents[r] for r in rows[self.relevant :]],
                    }
                )
            )
        return sources

    def retrieved_ids(self, query: str) -> tuple[list[Any], list[Any]]:
        """(relevant ids, irrelevant ids) of ``query`` under this retriever (the index's document ids)."""
        hits = self.index.search(
            query, k=self.relevant + self.irrelevant, ranker=self.ranker, **self.ranker_params
        )
        ids = [hit.id for hit in hits]
        return ids[: self.relevant], ids[self.relevant :]


@dataclass
class Q2IDTaskData(TaskData):
    """:class:`TaskData` whose sources are whole q2id records (query + document sets), not strings."""

    def sources(self, split: str) -> list[dict[str, Any]]:  # type: ignore[override]
        return [as_source(example) for example in self.splits[split]]


class Q2IDTask(Task):
    """Query + documents -> intent description on the ``q2id`` corpus."""

    name = "q2id"
    pipeline_task = "intent-description"
    example_input: ClassVar[Any] = {
        "query": "language teacher job doha",
        "relevant_documents": ["How a qualified English teacher can find a teaching job in Doha, Qatar."],
        "irrelevant_documents": ["Doha weather in summer."],
    }
    pipeline_tag = "summarization"
    corpora = {"q2id": ()}
    #: ``bert2bert``: a warm-started encoder-decoder reading the query and the relevant documents as one
    #: word-piece sequence, trained against the irrelevant ones (:mod:`hf_querygen.tasks.q2id.pieces`)
    families = ("hierarchical", "hierarchical-copy", "bert2bert")
    source_column = "query"
    reference_column = "description"
    primary_metric = "rouge1_recall"

    #: word pieces a warm-started model reads (BERT's position limit) and writes (a 40-word description
    #: is ~50 pieces)
    max_source_pieces = 512
    max_target_pieces = 64

    #: decoder output vocabulary: the training descriptions hold ~6.5K distinct words; 5K keep the
    #: CPU step time at ~4 s for the paper's size (benchmarks/ctrsgen_q2id_NOTES.md)
    output_vocab_size = 5_000

    #: decoding options only a warm-started model honours (see :meth:`refused_decoding`)
    WORD_PIECE_DECODING: ClassVar[tuple[str, ...]] = ("encoder_repetition_penalty",)

    def __init__(self, caps: Q2IDCaps | None = None) -> None:
        # the default caps are built on first use: tasks.q2id loads torch, and the registered instance is
        # made when this module is imported (so registering the task stays light)
        self._caps = caps

    @property
    def caps(self) -> Q2IDCaps:
        if self._caps is None:
            from .encoding import Q2IDCaps

            self._caps = Q2IDCaps()
        return self._caps

    # ------------------------------------------------------------ preparation
    def prepare(
        self,
        splits: datasets.DatasetDict,
        output_vocab_size: int | None = None,
        caps: Q2IDCaps | Mapping[str, Any] | None = None,
        min_frequency: int = 1,
        backbone: str | None = None,
        contrast_weight: float = 0.5,
        contrast_margin: float = 1.0,
        **options: Any,
    ) -> Q2IDTaskData:
        """Word tokenizer on TRAIN (queries + document sentences; description words first = the output
        vocabulary of ``output_vocab_size`` words). ``caps`` (default: the task's) are the input / target
        caps of this data; they travel with the tokenizer (``init_kwargs["q2id_caps"]``, saved in its
        folder), so that a saved model is decoded under the caps it was trained with (:meth:`caps_for`).
        ``min_frequency``: words seen fewer times in TRAIN (counted on their side: descriptions, or queries
        + document sentences) get no id of their own and read as [UNK]; 1 (default) keeps every word; 2 / 3
        size the input embedding table by frequency (the zhang2020 run's train split: 37,286 -> 28,975 /
        21,206 rows; the effect on quality: results/zhang2020/vocabulary_study.md).

        ``backbone``: the backbone's own tokenizer instead, for a warm-started encoder-decoder (the
        ``bert2bert`` family); ``contrast_weight`` (λ) and ``contrast_margin`` (m, nats per piece) set its
        objective (:mod:`hf_querygen.tasks.q2id.pieces`; λ = 0: the likelihood alone, no irrelevant half).
        ``caps`` still bound the documents per set; the word pieces are cut by the source budget."""
        from .encoding import Q2IDCaps, train_q2id_tokenizer

        if options:
            raise TypeError(f"Q2IDTask.prepare: unknown options {sorted(options)}")
        if isinstance(caps, Mapping):
            caps = Q2IDCaps(**caps)
        caps = caps or self.caps
        if backbone is not None:
            if contrast_weight < 0 or contrast_margin < 0:
                raise InvalidInputError(
                    f"contrast_weight and contrast_margin must be >= 0, got {contrast_weight} and "
                    f"{contrast_margin}"
                )
            tokenizer, state = prepare_backbone(backbone)
            tokenizer.init_kwargs["q2id_caps"] = dataclasses.asdict(caps)
            state["contrast"] = {"weight": float(contrast_weight), "margin": float(contrast_margin)}
            return Q2IDTaskData(self, splits, tokenizer, state)
        tokenizer = train_q2id_tokenizer(
            splits["train"],
            output_vocab_size=output_vocab_size or self.output_vocab_size,
            min_frequency=min_frequency,
        )
        tokenizer.init_kwargs["q2id_caps"] = dataclasses.asdict(caps)
        state = {"output_vocab_size": int(tokenizer.init_kwargs["output_vocab_size"])}
        return Q2IDTaskData(self, splits, tokenizer, state)

    def caps_for(self, tokenizer: PreTrainedTokenizerFast | None) -> Q2IDCaps:
        """The caps a tokenizer's data was prepared with (``init_kwargs["q2id_caps"]``), else the task's."""
        from .encoding import Q2IDCaps

        saved = getattr(tokenizer, "init_kwargs", {}).get("q2id_caps") if tokenizer is not None else None
        return Q2IDCaps(**saved) if isinstance(saved, Mapping) else self.caps

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        """Nested ids (:func:`~hf_querygen.tasks.q2id.encode_q2id`); the copy family keeps label ids past
        the output vocabulary (the pointer can copy them), the other maps them to [UNK]."""
        from .encoding import ENCODED_COLUMNS, encode_q2id_dataset

        if family == "bert2bert":
            return self._encode_pieces(data)
        copy = family == "hierarchical-copy"
        label_space = len(data.tokenizer) if copy else data.state["output_vocab_size"]
        caps = self.caps_for(data.tokenizer)
        encoded = encode_q2id_dataset(data.splits, data.tokenizer, caps, output_vocab_size=label_space)
        return encoded.select_columns(list(ENCODED_COLUMNS))

    def source_budget(self, tokenizer: PreTrainedTokenizerFast) -> int:
        """Word pieces of a warm-started model's source: :attr:`max_source_pieces`, or the tokenizer's
        ``model_max_length`` when that is smaller (a backbone with fewer positions)."""
        limit = getattr(tokenizer, "model_max_length", None)
        bounded = isinstance(limit, int) and 0 < limit < 10**9  # transformers' "no limit" is int(1e30)
        return min(self.max_source_pieces, limit) if bounded else self.max_source_pieces

    def _encode_pieces(self, data: TaskData) -> datasets.DatasetDict:
        """Word pieces of every split (:func:`~hf_querygen.tasks.q2id.pieces.encode_q2id_pieces`): the
        irrelevant half only where the contrast trains (weight > 0) and only for train / validation."""
        import datasets

        if "backbone" not in data.state:
            raise InvalidInputError(
                "q2id: the bert2bert family reads a backbone's pieces: prepare(backbone=...)"
            )
        caps = self.caps_for(data.tokenizer)
        contrast = data.state["contrast"]["weight"] > 0

        def encode(split: str, batch: dict[str, list]) -> dict[str, list]:
            rows = [dict(zip(batch, values, strict=True)) for values in zip(*batch.values(), strict=True)]
            for row in rows:  # the caps bound the documents per set, as for the other families
                row["relevant_documents"] = row["relevant_documents"][: caps.max_relevant_documents]
                row["irrelevant_documents"] = (row.get("irrelevant_documents") or [])[
                    : caps.max_irrelevant_documents
                ]
            return encode_q2id_pieces(
                rows,
                data.tokenizer,
                self.source_budget(data.tokenizer),
                self.max_target_pieces,
                contrast=contrast and split != "test",
            )

        return datasets.DatasetDict(
            {
                name: split.map(
                    lambda batch, name=name: encode(name, batch),
                    batched=True,
                    remove_columns=split.column_names,
                    desc=f"word pieces ({name})",
                )
                for name, split in data.splits.items()
            }
        )

    def collator(self, tokenizer: PreTrainedTokenizerFast) -> Any:
        from .encoding import Q2IDCollator

        if getattr(tokenizer, "cls_token_id", None) is not None:  # a backbone's tokenizer: word pieces
            return ContrastiveCollator(tokenizer.pad_token_id, tokenizer.cls_token_id)
        return Q2IDCollator(tokenizer.pad_token_id)

    def loss_function(self, data: TaskData, family: str, model: Any = None) -> Any:
        """The contrast with the irrelevant documents for a warm-started model (weight > 0), else None; it
        reads ``model``'s outputs as log-probabilities when the model says they are (a pointer's)."""

        contrast = data.state.get("contrast")
        if family != "bert2bert" or not contrast or contrast["weight"] <= 0:
            return None
        log_probs = bool(getattr(model, "logits_are_log_probs", False))
        return ContrastiveLoss(contrast["weight"], contrast["margin"], log_probs=log_probs)

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
        from ...presets import config_from_preset, is_warm_start

        if is_warm_start(preset):
            return warm_start_task_config(preset, data, **overrides)
        tokenizer = data.tokenizer
        sizes = {
            "vocab_size": len(tokenizer),
            "output_vocab_size": data.state["output_vocab_size"],
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "unk_token_id": tokenizer.unk_token_id,
            "decoder_start_token_id": tokenizer.bos_token_id,
        }
        return config_from_preset(preset, **{**sizes, **overrides})

    def max_new_tokens(self, data: TaskData | None = None) -> int:
        if data is not None and "backbone" in data.state:
            return self.max_target_pieces
        return self.caps.max_description_words + 1  # [EOS]

    # ------------------------------------------------------------ decoding
    def refused_decoding(self, family: str) -> dict[str, str]:
        if family == "bert2bert":
            return {}
        # generate() applies it only to 2-D encoder input_ids: for (B, D, S, L) documents it would warn and
        # decode as if it were not given
        what = (
            "a reward for the source's word pieces, honoured by the warm-started (bert2bert) models; a "
            "CtrsGen model reads its documents as (B, D, S, L) word ids and copies through its pointer-"
            "generator instead"
        )
        return dict.fromkeys(self.WORD_PIECE_DECODING, what)

    def predict(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[Mapping[str, Any]],
        batch_size: int = 16,
        caps: Q2IDCaps | None = None,
        **generation_kwargs: Any,
    ) -> list[str] | list[list[str]]:
        """One description per input (a list of ``n`` with ``num_return_sequences=n``).

        Every input is encoded with :func:`~hf_querygen.tasks.q2id.encode_q2id` under ``caps`` (default:
        the tokenizer's, see :meth:`caps_for`), batched by :class:`~hf_querygen.tasks.q2id.Q2IDCollator`
        into (B, D, S, L) tensors, decoded by ``generate()`` (greedy unless ``generation_kwargs`` or the
        model's saved ``config.task_decoding`` say otherwise) and read back by
        :func:`~hf_querygen.tasks.q2id.decode_description`. ``restate_query=True`` (a decoding option, not a
        ``generate`` argument) puts the query before each generated description
        (:func:`~hf_querygen.tasks.q2id.restate_query`); ``whole_sentences=True`` ends each generated
        description at its last whole sentence (:func:`~hf_querygen.tasks.q2id.whole_sentences`: what a
        length limit cut mid-sentence), before the query is restated."""

        from .encoding import Q2IDCollator, decode_description, encode_q2id, restate_query, whole_sentences

        if isinstance(inputs, Mapping):
            raise InvalidInputError("Q2IDTask.predict takes a list of inputs, not one mapping")
        sources = [as_source(example) for example in inputs]
        caps = caps or self.caps_for(tokenizer)
        collate = Q2IDCollator(tokenizer.pad_token_id)
        generation_kwargs = self.decoding(model, generation_kwargs)
        # bools, checked by decoding(); what is done to each generated text, not generate() arguments
        restate = bool(generation_kwargs.pop("restate_query", False))
        whole = bool(generation_kwargs.pop("whole_sentences", False))

        def finished(source: Mapping[str, Any], text: str) -> str:
            text = whole_sentences(text) if whole else text
            return restate_query(source["query"], text) if restate else text

        n_returns = int(generation_kwargs.get("num_return_sequences", 1))
        generation_kwargs = as_max_length(dict(generation_kwargs))
        model.eval()
        if self.family_of(model.config) == "bert2bert":
            groups = generate_descriptions(
                model, tokenizer, sources, batch_size, self.source_budget(tokenizer), **generation_kwargs
            )
            results = [
                [finished(s, text) for text in group] for s, group in zip(sources, groups, strict=True)
            ]
            return [group[0] for group in results] if n_returns == 1 else results
        results: list[list[str]] = []
        for start in range(0, len(sources), max(1, batch_size)):
            chunk = sources[start : start + batch_size]
            batch = {field: [s[field] for s in chunk] for field in SOURCE_FIELDS}
            encoded = encode_q2id(batch, tokenizer, caps, with_labels=False)
            features = [{key: values[i] for key, values in encoded.items()} for i in range(len(chunk))]
            sequences = sequences_of(run_generate(model, collate(features), **generation_kwargs))
            rows = [decode_description(row, tokenizer) for row in sequences]
            for k, source in enumerate(chunk):
                group = rows[k * n_returns : (k + 1) * n_returns]
                results.append([finished(source, text) for text in group])
        return [group[0] for group in results] if n_returns == 1 else results

    def evaluate(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        dataset: datasets.Dataset,
        batch_size: int = 16,
        **generation_kwargs: Any,
    ) -> tuple[dict[str, float], list[Any]]:
        """Predict every record of ``dataset`` and score against its descriptions: (scores, outputs)."""
        sources = [as_source(example) for example in dataset]
        references = list(dataset[self.reference_column])
        outputs = self.predict(model, tokenizer, sources, batch_size=batch_size, **generation_kwargs)
        return self.score(outputs, references, sources), outputs

    # ------------------------------------------------------------ scoring
    def score(
        self, predictions: Sequence[Any], references: Sequence[str], sources: Sequence[Any]
    ) -> dict[str, float]:
        """ROUGE-1/2/L recall (Zhang'20 Tables 3-4) and F1 (no stemming; one reference per query) and
        the mean number of words per output; all ROUGE values in [0, 1]."""
        from ...metrics.rouge import rouge

        texts = [self.as_text(p) for p in predictions]
        result = rouge(texts, list(references))
        scores = {key: float(result[key]) for key in Q2ID_METRICS if key in result}
        scores["output_words"] = float(sum(len(t.split()) for t in texts) / len(texts)) if texts else 0.0
        return scores

    def per_example_scores(self, predictions: Sequence[str], references: Sequence[str]) -> list[dict]:
        """Per-query ROUGE recall/F1 rows (for paired significance tests), keys as in :meth:`score`."""
        from ...metrics.rouge import rouge_per_example

        rows = rouge_per_example([self.as_text(p) for p in predictions], list(references))
        return [
            {
                f"{t}_{f}": row[f"{t}_{'recall' if f == 'recall' else 'f'}_max"]
                for t in ("rouge1", "rouge2", "rougeL")
                for f in ("recall", "f")
            }
            for row in rows
        ]


Q2ID = TASKS.register("q2id", Q2IDTask())
