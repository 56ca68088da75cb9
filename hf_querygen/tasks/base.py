"""The seam between tasks and models: one :class:`Task` object per task, registered in :data:`TASKS`.

A task owns everything that is about the TASK and not about a particular model:

* which corpora/configs it is trained on and how they load (:meth:`Task.load`),
* how a tokenizer and task state (e.g. nl2kw's TF-IDF keyword order) are fitted on the training split
  (:meth:`Task.prepare`), and how a split is encoded for each model family (:meth:`Task.encode`:
  ``seq2seq`` / ``dual`` / ``pointer`` / ``tagging`` / ``joint`` for nl2kw, ``seq2seq`` / ``tagging``
  for segmentation),
* the collator, the model config built from a preset for the prepared data (:meth:`Task.model_config`),
* decoding raw inputs into the task's output type (:meth:`Task.predict`, the ONE decode path: the
  pipelines, the ``generate``/``evaluate`` commands and the experiment runner all call it),
* scoring with its metrics (:meth:`Task.score`),
* its ``pipeline()`` task name and the model card's ``pipeline_tag``.

A new task (k2q, q2id) is one subclass + ``TASKS.register(name, instance)`` in its module; add the
module to the registry's ``modules`` below so that a lookup by name imports it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import DegenerateOutputWarning, InvalidInputError
from ..registry import Registry
from ..specs import family_of
from ..validation import asks_for_something, check_generation_kwargs, check_optional_int

if TYPE_CHECKING:
    import datasets
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

#: task name -> :class:`Task` instance; the modules are imported on the first lookup
TASKS: Registry[Task] = Registry(
    "task",
    modules=(
        "hf_querygen.tasks.nl2kw.task",
        "hf_querygen.tasks.q2id.task",
        "hf_querygen.tasks.segmentation.task",
        "hf_querygen.tasks.text2text.task",
        "hf_querygen.tasks.k2q.task",
    ),
)


def pipeline_task_names() -> dict[str, str]:
    """``pipeline()`` task string -> the task it names (each task's one alias; several tasks may share a
    pipeline, e.g. text2text and k2q: then the string names the first registered)."""
    names: dict[str, str] = {}
    for name, task in TASKS.items():
        names.setdefault(task.pipeline_task, name)
    return names


def canonical_task_name(name: str) -> str:
    """The registry name of task ``name``: itself, or the task its pipeline task string stands for. A task
    has one name everywhere (registry, CLI, dataset config, card, results); the transformers
    ``pipeline()`` task string (``Task.pipeline_task``) is its only other name."""
    if name in TASKS:
        return name
    return pipeline_task_names().get(name, name)  # unknown: TASKS.get names the close matches


def get_task(name: str | Task) -> Task:
    """The registered task ``name`` (a :class:`Task` passes through; a pipeline task string resolves to
    its task)."""
    return name if isinstance(name, Task) else TASKS.get(canonical_task_name(name))


def task_for_corpus(corpus: str | None) -> Task:
    """The one registered task that trains on ``corpus`` (an error naming the candidates if none or
    several do: then pass the task explicitly)."""
    if corpus is None:
        raise InvalidInputError("give a task or a corpus")
    candidates = [task for _, task in TASKS.items() if corpus in task.corpora]
    if len(candidates) != 1:
        owners = {name: sorted(task.corpora) for name, task in TASKS.items()}
        what = "no task trains" if not candidates else f"several tasks train ({[t.name for t in candidates]})"
        raise InvalidInputError(
            f"{what} on corpus {corpus!r}: pass --task; tasks and their corpora: {owners}"
        )
    return candidates[0]


@dataclass(frozen=True)
class DecodingChoice:
    """How a trained row's default decoding is chosen on VALIDATION after training
    (:func:`hf_querygen.training.choose_decoding`) and saved with the model (``config.task_decoding``).

    ``grid``: the decodings tried, each on top of the row's ``decoding`` (None: the task's
    :attr:`Task.decoding_grid`, those the model's family can honour; empty: the row's decoding as it is);
    ``metric``: the score maximised (default: the task's ``primary_metric``); ``sample``: each validation
    split is scored on at most this many of its examples, one seeded draw for every entry (None: all of
    them), where decoding a whole split per entry would cost more than the row's training."""

    grid: tuple[Mapping[str, Any], ...] | None = None
    metric: str | None = None
    sample: int | None = None

    def __post_init__(self) -> None:
        if self.grid is not None:
            object.__setattr__(self, "grid", tuple(self.grid))
        check_optional_int("DecodingChoice", "sample", self.sample, minimum=1)


@dataclass
class TaskData:
    """A task's corpus splits with the tokenizer and state fitted on TRAIN, and per-family encodings
    (computed on first use and cached)."""

    task: Task
    splits: datasets.DatasetDict
    tokenizer: PreTrainedTokenizerFast
    state: dict[str, Any] = field(default_factory=dict)
    corpus: str = ""
    config_name: str | None = None
    #: the raw-data folder the splits were read from (None: the default), for resources keyed by it
    data_dir: str | Path | None = None
    _encoded: dict[str, datasets.DatasetDict] = field(default_factory=dict, repr=False)

    def encoded(self, family: str) -> datasets.DatasetDict:
        """Every split encoded for ``family`` (model inputs + labels), cached."""
        if family not in self._encoded:
            self.task.check_family(family)
            self._encoded[family] = self.task.encode(self, family)
        return self._encoded[family]

    def sources(self, split: str) -> list[str]:
        return [_text(s) for s in self.splits[split][self.task.source_column]]

    def references(self, split: str) -> list[Any]:
        """The gold outputs of ``split`` as :meth:`Task.score` takes them (:meth:`Task.split_references`)."""
        return self.task.split_references(self.splits[split])


#: models already warned about (:meth:`Task.warn_if_degenerate`: once per model and process)
_WARNED_DEGENERATE: set[str] = set()


#: the characters :func:`degenerate_reason` counts as punctuation (not "+" or "#": "c++", "c#" are words)
_SENTENCE_PUNCTUATION = frozenset("?!.,;:'\"")


def degenerate_reason(text: str) -> str | None:
    """Why ``text`` looks degenerate (``"empty"``, ``"only punctuation"``, ``"mostly punctuation"``,
    ``"a word repeated"``), or None. Mostly punctuation: at least 4 words, most of them carrying sentence
    punctuation (``?!.,;:`` and quotes), which makes at least a quarter of the characters (an under-trained
    word-piece decoder's "?? drop??? us?? 1st??"; a question's final "?", a description's spaced ";" or
    "c++" stay far below). A word repeated: three times in a row, or at least 4 words of which at most
    half are distinct."""
    words = text.replace("|", " ").split()
    if not words:
        return "empty"
    if not any(any(ch.isalnum() for ch in word) for word in words):
        return "only punctuation"
    marked = sum(any(ch in _SENTENCE_PUNCTUATION for ch in word) for word in words)
    characters = "".join(words)
    punctuation = sum(ch in _SENTENCE_PUNCTUATION for ch in characters)
    if len(words) >= 4 and 2 * marked > len(words) and 4 * punctuation >= len(characters):
        return "mostly punctuation"
    if any(a == b == c for a, b, c in zip(words, words[1:], words[2:], strict=False)):
        return "a word repeated"
    if len(words) >= 4 and len(set(words)) * 2 <= len(words):
        return "a word repeated"
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else " ".join(value)


class Task:
    """Base class of a task; subclasses set the class attributes and implement the abstract methods.

    Attributes:
        name: registry name (``"nl2kw"``).
        pipeline_task: the ``transformers.pipeline`` task name serving it.
        pipeline_tag: the Hub ``pipeline_tag`` of its model cards.
        corpora: corpus name -> the configs this task can train on (first = default).
        families: model families it can encode for (first = default).
        source_column / reference_column: corpus columns of the input and the gold output.
        primary_metric: the metric named first in summaries.
    """

    name: ClassVar[str]
    pipeline_task: ClassVar[str]
    pipeline_tag: ClassVar[str]
    corpora: ClassVar[Mapping[str, tuple[str, ...]]]
    families: ClassVar[tuple[str, ...]]
    source_column: ClassVar[str]
    reference_column: ClassVar[str]
    primary_metric: ClassVar[str]
    #: the labels a token-classification model of this task predicts (None: the task has no tagger)
    tag_labels: ClassVar[tuple[str, ...] | None] = None
    #: one output per input is itself a list (segmentation: the segments), not a list of alternatives
    outputs_are_lists: ClassVar[bool] = False
    #: an input its pipeline takes, as a Python literal would write it (a model card's usage code runs it)
    example_input: ClassVar[Any] = "what is the population of berlin"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    # ------------------------------------------------------------ corpora
    @property
    def default_corpus(self) -> str:
        return next(iter(self.corpora))

    def resolve_corpus(self, corpus: str | None = None, config: str | None = None) -> tuple[str, str | None]:
        """(corpus, config) with defaults filled in; an unsupported pair is an error naming both."""
        corpus = corpus or self.default_corpus
        if corpus not in self.corpora:
            raise InvalidInputError(
                f"task {self.name!r} does not train on corpus {corpus!r}; supported: {sorted(self.corpora)}"
            )
        configs = self.corpora[corpus]
        config = config or (configs[0] if configs else None)
        if configs and config not in configs:
            raise InvalidInputError(
                f"task {self.name!r} uses corpus {corpus!r} with configs {list(configs)}, not {config!r}"
            )
        return corpus, config

    def load(
        self, corpus: str | None = None, config: str | None = None, data_dir: str | Path | None = None
    ) -> datasets.DatasetDict:
        """The corpus splits in the task's columns (``source_column`` / ``reference_column``)."""
        from ..corpora import load_corpus

        corpus, config = self.resolve_corpus(corpus, config)
        return load_corpus(corpus, config, data_dir=data_dir)

    # ------------------------------------------------------------ preparation and encoding
    def prepare(self, splits: datasets.DatasetDict, **options: Any) -> TaskData:
        """Fit the tokenizer (and any task state) on ``splits["train"]``."""
        raise NotImplementedError

    def prepare_data(
        self, splits: datasets.DatasetDict, data_dir: str | Path | None = None, **options: Any
    ) -> TaskData:
        """:meth:`prepare` with the run's raw-data directory (``--data-dir``) passed on to a task whose
        preparation reads resources of its own (nl2kw's in-domain vocabulary, word vectors, synthetic
        pretraining: ``prepare(data_dir=...)``), so they read the same directory as the corpus; an
        explicit ``data_dir`` in ``options`` wins. What ``train`` and the experiment runner call."""
        import inspect

        if data_dir is not None and "data_dir" not in options:
            if "data_dir" in inspect.signature(self.prepare).parameters:
                options["data_dir"] = str(data_dir)
        data = self.prepare(splits, **options)
        data.data_dir = data_dir
        return data

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        """Every split of ``data`` encoded for model ``family`` (model columns only + what decoding needs)."""
        raise NotImplementedError

    def check_family(self, family: str) -> None:
        if family not in self.families:
            raise InvalidInputError(
                f"task {self.name!r} has no model family {family!r}; families: {list(self.families)}"
            )

    def family_of(self, config: PretrainedConfig) -> str:
        """The model family of a model config (which encoding trains it, which decoding reads it), as its
        model package declares it (:attr:`hf_querygen.specs.ModelSpec.family`): a task never names a
        model type."""
        return family_of(config)

    def card_pipeline_tag(self, config: PretrainedConfig) -> str:
        """The Hub ``pipeline_tag`` of a model card: a token classifier is tagged as one, whatever the
        task's pipeline (its card must not claim text generation)."""
        return "token-classification" if self.family_of(config) == "tagging" else self.pipeline_tag

    def card_inputs(self, config: PretrainedConfig, metadata: dict[str, Any]) -> str | None:
        """What a model of this task needs at inference, for its model card (None: nothing to say)."""
        return None

    def collator(self, tokenizer: PreTrainedTokenizerFast) -> Any:
        """Pads encoded examples: ids with [PAD], masks with 0, labels with IGNORE_INDEX."""
        from .seq2seq import Seq2SeqCollator

        return Seq2SeqCollator(pad_token_id=tokenizer.pad_token_id)

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
        """The config of model ``preset`` sized for ``data`` (vocabularies, special ids, labels)."""
        raise NotImplementedError

    def loss_function(self, data: TaskData, family: str, model: Any = None) -> Any:
        """The Trainer's ``compute_loss_func`` (``(outputs, labels, num_items_in_batch) -> loss``) for
        ``model`` (of ``family``) on ``data``, when the task trains it on an objective of its own rather than
        the model's loss (q2id's contrast with the irrelevant documents for a warm-started encoder-decoder);
        None: the model's own loss."""
        return None

    def max_new_tokens(self, data: TaskData | None = None) -> int:
        """Generation length saved with a trained model."""
        return 32

    # ------------------------------------------------------------ training resources
    #: the names :meth:`pretraining_data` knows
    PRETRAINING_DATA: ClassVar[tuple[str, ...]] = ()

    def pretraining_data(self, name: str, data: TaskData) -> tuple[datasets.Dataset, dict[str, Any]]:
        """Extra pairs named ``name`` (task columns) to pretrain on before the task's own TRAIN split
        (``train_preset(pretrain_on=name)``): the dataset and counts to report."""
        self.check_pretraining_name(name)
        raise NotImplementedError

    def check_pretraining_name(self, name: str) -> None:
        """A clear error for a pretraining-data name this task does not know (:attr:`PRETRAINING_DATA`)."""
        if name not in self.PRETRAINING_DATA:
            raise InvalidInputError(
                f"{self.name}: no pretraining data {name!r}; known: {self.PRETRAINING_DATA}"
            )

    def word_vectors(self, name: str, data: TaskData, vector_size: int) -> Any:
        """gensim ``KeyedVectors`` named ``name`` with ``vector_size`` dimensions for this task's words
        (``train_preset(word_vectors=name)``)."""
        raise InvalidInputError(f"task {self.name!r} has no word vectors named {name!r}")

    # ------------------------------------------------------------ choosing a decoding on validation
    #: decodings tried on VALIDATION after training, each on top of the row's decoding
    #: (:func:`hf_querygen.training.choose_decoding`); empty: the task has none to choose
    decoding_grid: ClassVar[tuple[dict[str, Any], ...]] = ()

    def selection_splits(self, data: TaskData) -> tuple[str, ...]:
        """The validation splits a decoding is chosen on, each scored on its own (a task whose
        validation mixes sources of queries names one split per source)."""
        return ("validation",)

    def selection_floor(self, sources: Sequence[str]) -> list[Any] | None:
        """The trivial outputs a chosen decoding is measured against on every selection split (k2q: the
        keyword query echoed); None: the plain metric decides."""
        return None

    # ------------------------------------------------------------ decoding and scoring
    #: the decoding arguments of a family that generates no sequence (a tagger labels its input's words)
    TAGGER_DECODING: ClassVar[tuple[str, ...]] = ()
    #: whether ``num_return_sequences`` must fit the beams (False: the task widens the beam itself)
    RETURNS_WITHIN_BEAMS: ClassVar[bool] = True

    def accepted_decoding(self, family: str) -> tuple[str, ...] | None:
        """The decoding arguments a model of ``family`` can honour (``None``: those of ``generate`` and
        the task's own); a tagger honours none."""
        return self.TAGGER_DECODING if family == "tagging" else None

    def refused_decoding(self, family: str) -> Mapping[str, str]:
        """The options of this task's OTHER families that a model of ``family`` cannot honour, each refused
        by name: option -> what it is and what this family uses instead (k2q: a copy model's word-id
        options given to a warm-started model). Beside :meth:`accepted_decoding`, which lists all a
        family honours, for the families that honour ``generate``'s whole open set of arguments."""
        return {}

    def honours(self, family: str, decoding: Mapping[str, Any]) -> bool:
        """Whether a model of ``family`` honours every option of ``decoding`` (a grid entry)."""
        accepted = self.accepted_decoding(family)
        refused = self.refused_decoding(family)
        return not any(
            (accepted is not None and name not in accepted and value is not None)
            or (name in refused and asks_for_something(value))
            for name, value in decoding.items()
        )

    def decoding_arguments(
        self, model: PreTrainedModel, generation_kwargs: Mapping[str, Any], owner: str | None = None
    ) -> dict[str, Any]:
        """The one check of the decoding arguments a caller passed (pipelines, ``predict``, ``generate``,
        ``evaluate``, the demo), under the names the caller wrote, before any are renamed or merged with
        the model's saved decoding: types and ranges (:func:`hf_querygen.validation.check_generation_kwargs`)
        and the arguments this model cannot honour, refused rather than ignored. The saved decoding
        (:meth:`saved_decoding`) is checked first, by the same rules."""
        return self._checked_decoding(model, generation_kwargs, owner)[1]

    def _checked_decoding(
        self, model: PreTrainedModel, generation_kwargs: Mapping[str, Any], owner: str | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the saved decoding, the caller's arguments), each checked once."""
        saved = self.saved_decoding(model)
        generation = getattr(model, "generation_config", None)
        beams = saved.get("num_beams") or getattr(generation, "num_beams", None) or 1
        given = check_generation_kwargs(
            owner or f"{self.name}: predict",
            generation_kwargs,
            default_beams=(beams if isinstance(beams, int) else 1) if self.RETURNS_WITHIN_BEAMS else None,
            **self._family_rules(model),
        )
        return saved, given

    def saved_decoding(self, model: PreTrainedModel) -> dict[str, Any]:
        """The decoding saved with the model (``config.task_decoding``, written by ``hf-querygen train``
        and the table runner; ``{}`` when none), checked as a caller's arguments are: a config.json edited
        by hand, or a folder of another task, fails here naming the field, never decodes otherwise."""
        saved = getattr(model.config, "task_decoding", None)
        if saved is None:
            return {}
        source = getattr(model.config, "_name_or_path", "") or ""
        where = f"{source}/config.json task_decoding" if source else "config.task_decoding"
        if not isinstance(saved, Mapping):
            raise InvalidInputError(
                f"{self.name}: {where} is a {type(saved).__name__} ({saved!r}); it must be an object of "
                'decoding arguments (e.g. {"num_beams": 4})'
            )
        return check_generation_kwargs(
            f"{self.name}: {where}", saved, default_beams=None, **self._family_rules(model)
        )

    def decoding(
        self, model: PreTrainedModel, generation_kwargs: Mapping[str, Any], owner: str | None = None
    ) -> dict[str, Any]:
        """The decoding of one call: the model's saved decoding, overridden by the caller's arguments,
        both checked (:meth:`decoding_arguments`)."""
        saved, given = self._checked_decoding(model, generation_kwargs, owner)
        return {**saved, **given}

    def _family_rules(self, model: PreTrainedModel) -> dict[str, Any]:
        """What ``model``'s family honours and refuses, as :func:`check_generation_kwargs` takes them."""
        family = self.family_of(model.config)
        return {
            "accepted": self.accepted_decoding(family),
            "refused": self.refused_decoding(family),
            "why": f" (a {family} model of the {self.name} task)",
        }

    def predict(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        inputs: Sequence[str],
        batch_size: int = 64,
        **generation_kwargs: Any,
    ) -> list[Any]:
        """Decode raw ``inputs`` into the task's outputs, one per input (in input order)."""
        raise NotImplementedError

    def split_references(self, split: datasets.Dataset) -> list[Any]:
        """The gold outputs of one split for :meth:`score`: one text per example by default; a task with
        several references per example (k2q) returns a list of texts per example."""
        return [_text(r) for r in split[self.reference_column]]

    def as_text(self, output: Any) -> str:
        """One output as the text the metrics compare with the reference."""
        return str(output)

    def warn_if_degenerate(self, outputs: Sequence[Any], model: Any) -> None:
        """Warn once per model (:class:`~hf_querygen.errors.DegenerateOutputWarning`) when an output for a
        non-empty input is empty, only or mostly punctuation, or a word repeated: what an under-trained model
        writes. Called where a user sees outputs (the pipelines, ``hf-querygen generate``)."""
        name = str(getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__)
        if name in _WARNED_DEGENERATE:
            return
        for output in outputs:
            for one in output if isinstance(output, list) and not self.outputs_are_lists else [output]:
                reason = degenerate_reason(self.as_text(one))
                if reason is not None:
                    _WARNED_DEGENERATE.add(name)
                    warnings.warn(
                        f"model {name!r} wrote {self.as_text(one)!r} ({reason}): it is probably "
                        "under-trained (a quick smoke run?); train it longer or use a fully trained model",
                        DegenerateOutputWarning,
                        stacklevel=3,
                    )
                    return

    def score(
        self, predictions: Sequence[Any], references: Sequence[str], sources: Sequence[str]
    ) -> dict[str, float]:
        """Metric name -> value of ``predictions`` (task outputs) against ``references``."""
        raise NotImplementedError

    def evaluate(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerFast,
        dataset: datasets.Dataset,
        batch_size: int = 64,
        **generation_kwargs: Any,
    ) -> tuple[dict[str, float], list[Any]]:
        """Predict every source of ``dataset`` and score against its references: (scores, outputs)."""
        sources = [_text(s) for s in dataset[self.source_column]]
        references = [_text(r) for r in dataset[self.reference_column]]
        outputs = self.predict(model, tokenizer, sources, batch_size=batch_size, **generation_kwargs)
        return self.score(outputs, references, sources), outputs
