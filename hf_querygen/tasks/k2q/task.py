"""The ``k2q`` task object: keyword query -> natural-language question (Ding & Balog ICTIR'18).

:class:`K2QTask` (registered as ``"k2q"``) trains the ``ding2018-*`` presets on ``keyword_query`` ->
``question`` pairs (synthetic pairs in ``hf_querygen.experiments.ding2018``; T_0 train by default)
and scores against every reference of an example (``references`` column) with
:func:`hf_querygen.tasks.k2q.k2q_scores`. The test sets and the split format are in
:mod:`hf_querygen.tasks.k2q.data` (training only).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError
from ...inference import as_max_length, encoded_batches, generate_batches, output_vocab_size_of_model
from ..base import TASKS, TaskData
from ..subword import generate_candidates, prepare_backbone
from ..text2text.task import Text2TextTask
from .questions import (
    FRAME_SLOT,
    NoRepeatSourceWordsProcessor,
    best_frame_ids,
    echo_keyword_queries,
    fill_frame,
    frequent_question_frames,
    is_question,
    k2q_scores,
    keeps_keywords,
)

if TYPE_CHECKING:
    import datasets

__all__ = ["K2Q", "K2QTask"]


#: what the keyword fallback may return when no candidate question keeps every keyword word: the keyword
#: query itself (``X``: do not rewrite what the model cannot rewrite faithfully) or the query in a question
#: frame among the 15 most frequent around the keyword words of the training pairs (synthetic + reversed
#: nl2kw train): the one-slot frame ``what X`` (the most frequent, the ``frame`` row of Table 2) and two
#: with the article and question mark the users' TREC descriptions start with; which one (if any) is chosen
#: on validation with the rest of the decoding
FALLBACK_FRAMES = ("X", "what X", "what is the X ?", "what are the X ?")


def _count(name: str, value: Any) -> int:
    """A count setting of the decoding (``num_return_sequences``, ``num_beams``, ``overgenerate``): an
    integer >= 1, not a bool."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"k2q: {name} must be an integer >= 1, got {value!r}")
    return value


def _keyword_fallback(kwargs: dict[str, Any]) -> str | None:
    """``keyword_fallback`` popped from a call's decoding: None or a question frame with one slot."""
    fallback = kwargs.pop("keyword_fallback", None)
    if fallback is not None and (not isinstance(fallback, str) or fallback.split().count(FRAME_SLOT) != 1):
        raise InvalidInputError(
            f"k2q: keyword_fallback must be a question frame with one {FRAME_SLOT!r} slot "
            f"(e.g. 'what is {FRAME_SLOT}'), got {fallback!r}"
        )
    return fallback


class K2QTask(Text2TextTask):
    """Keyword query -> question (Ding & Balog ICTIR'18): the :class:`Text2TextTask` encoding and
    copy-aware decoding, several references per example, ROUGE / BLEU scores (:func:`k2q_scores`).

    Splits have the columns of :func:`~hf_querygen.tasks.k2q.data.as_training_split`. :meth:`load`
    gives the supervised data that exists without the synthetic generator: T_0 train / validation, and
    the two test sets ``t0`` and ``nl2kw``; the ding2018 reproduction replaces train with synthetic pairs.
    """

    primary_metric = "ROUGE-L"
    pipeline_task = "question-generation"
    example_input = "capital france"
    #: the beam is widened to the questions asked for (:meth:`generate_questions`)
    RETURNS_WITHIN_BEAMS = False
    #: what a question-frame model honours: it fills frames, it generates no words
    FRAME_DECODING = ("num_return_sequences", "num_beams", "temperature", "strategy", "overgenerate")
    #: the keyword-keeping options of the warm-started models' word pieces (SourceWordsProcessor)
    WORD_PIECE_DECODING = (
        "keyword_bonus",
        "require_keywords",
        "keywords_once",
        "keywords_in_order",
        "prefer_keywords",
        "prefer_questions",
    )
    #: the word-id options of the copy models' vocabulary (NoRepeatSourceWordsProcessor)
    WORD_ID_DECODING = ("no_repeat_source_words", "copy_all_source_words")
    #: encoder-decoders (EDNet / AttNet / CopyNet), the question-frame model (a frame per query) and
    #: the warm-started BERT2BERT on the backbone's word pieces
    families = ("seq2seq", "frames", "bert2bert")
    #: decoding strategies of :meth:`generate_questions` (and of ``pipeline("question-generation")``)
    strategies = ("beam", "distinct-beam", "sample")
    #: the decodings tried on VALIDATION after training (:func:`hf_querygen.training.choose_decoding`):
    #: greedy with and without guards against degenerate repeats ("capital capital capital", "the the":
    #: :class:`NoRepeatSourceWordsProcessor`, ``no_repeat_ngram_size``, ``repetition_penalty``), with
    #: every keyword word required (``copy_all_source_words``) and 4-beam searches; the one with the largest
    #: worst-split gain over the echoed keyword query (:meth:`selection_splits`) is saved with the model as
    #: ``config.task_decoding``. Every output is the model's own: the keyword fallback, which returns the
    #: keyword query (in a frame) instead, is in :attr:`fallback_decoding_grid` only
    decoding_grid: tuple[dict[str, Any], ...] = (
        {},
        {"no_repeat_source_words": True},
        {"no_repeat_source_words": True, "no_repeat_ngram_size": 2},
        {"repetition_penalty": 1.3},
        {"no_repeat_source_words": True, "copy_all_source_words": True},
        {"no_repeat_source_words": True, "copy_all_source_words": True, "num_beams": 4},
        {"no_repeat_source_words": True, "no_repeat_ngram_size": 2, "num_beams": 4},
    )
    #: :attr:`decoding_grid` plus the keyword fallback in each of :data:`FALLBACK_FRAMES` (greedy, and 4 beams
    #: with the repeat guard): the grid of the ``*_echo_fallback`` rows of Table 2 (a model's output where it
    #: keeps every keyword, else the keyword query), never of a paper's own row
    fallback_decoding_grid: tuple[dict[str, Any], ...] = (
        *decoding_grid,
        *(
            entry
            for frame in FALLBACK_FRAMES
            for entry in (
                {"keyword_fallback": frame},
                {"keyword_fallback": frame, "num_beams": 4, "no_repeat_source_words": True},
            )
        ),
    )

    def __init__(self) -> None:
        super().__init__(
            "k2q", {"k2q": ()}, "keyword_query", "question", max_source_length=32, max_target_length=24
        )

    def load(
        self, corpus: str | None = None, config: str | None = None, data_dir: str | Path | None = None
    ) -> datasets.DatasetDict:
        """T_0 train / validation (``seed_pairs``) and the test sets ``t0`` and ``nl2kw``."""
        import datasets

        from .data import as_training_split, k2q_test_sets, t0_test

        self.resolve_corpus(corpus, config)
        splits = {split: t0_test(data_dir, split) for split in ("train", "validation")} | dict(
            k2q_test_sets(data_dir)
        )
        return datasets.DatasetDict(
            {name: as_training_split(ds["keywords"], ds["references"]) for name, ds in splits.items()}
        )

    def prepare(
        self,
        splits: datasets.DatasetDict,
        output_vocab_size: int | None = None,
        min_frequency: int = 1,
        max_output_vocab_size: int | None = None,
        human_pairs: bool | int = False,
        human_questions: bool = False,
        seed_pairs: bool = False,
        synthetic_pairs: bool = True,
        synthetic_extra: bool = False,
        synthetic_first: bool = False,
        replay: int = 0,
        backbone: str | None = None,
        **options: Any,
    ):
        """Word tokenizer on TRAIN: every word seen ``min_frequency`` times (targets first: the decoder's
        output vocabulary: all target words, or ``output_vocab_size``, or at most ``max_output_vocab_size``
        when the data has more; the softmax over it is the decoder's main cost).

        ``human_pairs``: append the splits ``nl2kw_train`` / ``nl2kw_validation``
        (:data:`~hf_querygen.tasks.k2q.data.HUMAN_SPLITS`,
        :func:`~hf_querygen.tasks.k2q.data.nl2kw_reversed_pairs`) to train / validation; without it
        ``nl2kw_train`` is dropped (never trained on); an integer n appends the human train pairs n times
        (upsampling users' topics against the synthetic pairs; validation once). ``human_questions``: train
        on the human pairs' questions instead, each distinct question of ``nl2kw_train`` that ends as a
        question once, with its first keyword query (:func:`~hf_querygen.tasks.k2q.data.human_question_pairs`:
        the topics with many keyword-query variations do not teach their descriptions, and the descriptions
        that are no questions are no targets); validation is unchanged. ``seed_pairs``: train on
        T_0's train pairs too (the fold's split ``seed_train``), which the reproduction otherwise uses for
        validation: validation is then T_0's validation split alone (``seed_validation``;
        :data:`~hf_querygen.tasks.k2q.data.SEED_SPLITS`). ``synthetic_pairs=False``: the fold's own
        ``train`` split (the reproduction's synthetic pairs; T_0 train under :meth:`load`) is not trained
        on. ``synthetic_extra``: train on the fold's further synthetic keyword queries per question too
        (:data:`~hf_querygen.tasks.k2q.data.EXTRA_SYNTHETIC_SPLIT`). ``synthetic_first``: the fold's
        synthetic pairs are not trained on with the human pairs but before them, as the pretraining pairs
        ``"synthetic"`` (:meth:`pretraining_data`; the split
        :data:`~hf_querygen.tasks.k2q.data.SYNTHETIC_FIRST_SPLIT`); train is then the human / T_0 pairs
        plus ``replay`` synthetic pairs for each of them (a seeded draw), so the second stage does not
        teach every keyword query the human pairs' way of asking. The two validation sources stay as
        the splits ``t0_validation`` and ``nl2kw_validation`` too, where the decoding is chosen
        (:meth:`selection_splits`). ``backbone``: the backbone's own tokenizer instead of a word tokenizer
        (a warm-start preset reads its word pieces; ``min_frequency`` and the vocabulary sizes do not
        apply)."""
        import datasets

        from ...tokenization import output_vocab_size_of, train_word_tokenizer
        from .data import (
            EXTRA_SYNTHETIC_SPLIT,
            HUMAN_SPLITS,
            SEED_SPLITS,
            SYNTHETIC_FIRST_SPLIT,
            human_question_pairs,
        )

        if options:
            raise TypeError(f"K2QTask.prepare: unknown options {sorted(options)}")
        flags = (
            ("human_questions", human_questions),
            ("seed_pairs", seed_pairs),
            ("synthetic_pairs", synthetic_pairs),
            ("synthetic_extra", synthetic_extra),
            ("synthetic_first", synthetic_first),
        )
        for name, value in flags:
            if not isinstance(value, bool):
                raise InvalidInputError(f"K2QTask.prepare: {name} must be True or False, got {value!r}")
        if not isinstance(human_pairs, int) or human_pairs < 0:  # a bool is an int: True = 1 copy
            raise InvalidInputError(
                f"K2QTask.prepare: human_pairs must be a bool or a number of copies >= 0, got {human_pairs!r}"
            )
        if isinstance(replay, bool) or not isinstance(replay, int) or replay < 0:
            raise InvalidInputError(f"K2QTask.prepare: replay must be an integer >= 0, got {replay!r}")
        if human_pairs and human_questions:
            raise InvalidInputError(
                "K2QTask.prepare: human_pairs trains on every human pair, human_questions on each distinct "
                "question once: choose one"
            )
        if synthetic_first and not (synthetic_pairs and (human_pairs or human_questions or seed_pairs)):
            raise InvalidInputError(
                "K2QTask.prepare(synthetic_first=True): it trains on the synthetic pairs, then on the human "
                "pairs: it needs synthetic_pairs=True and human_pairs, human_questions or seed_pairs"
            )
        if replay and not synthetic_first:
            raise InvalidInputError(
                "K2QTask.prepare: replay draws synthetic pairs into the second stage of synthetic_first=True"
            )
        wanted = {
            "human_pairs": HUMAN_SPLITS.values() if human_pairs else (),
            "human_questions": (HUMAN_SPLITS["train"],) if human_questions else (),
            "seed_pairs": SEED_SPLITS.values() if seed_pairs else (),
            "synthetic_extra": (EXTRA_SYNTHETIC_SPLIT,) if synthetic_extra else (),
        }
        for option, names in wanted.items():
            missing = [name for name in names if name not in splits]
            if missing:
                raise InvalidInputError(f"K2QTask.prepare({option}=True): the splits lack {missing}")
        original = splits
        extra = {*HUMAN_SPLITS.values(), *SEED_SPLITS.values(), EXTRA_SYNTHETIC_SPLIT}
        splits = datasets.DatasetDict({k: v for k, v in splits.items() if k not in extra})
        if seed_pairs:  # T_0 train becomes training data: only T_0's own validation split selects
            splits["validation"] = original[SEED_SPLITS["validation"]]
        first = splits["train"] if synthetic_first else None
        if not synthetic_pairs or synthetic_first:
            splits["train"] = splits["train"].select([])
        if "validation" in splits:
            splits["t0_validation"] = splits["validation"]
        if HUMAN_SPLITS["validation"] in original:
            splits[HUMAN_SPLITS["validation"]] = original[HUMAN_SPLITS["validation"]]
        if human_pairs:
            for split, name in HUMAN_SPLITS.items():
                copies = int(human_pairs) if split == "train" else 1
                splits[split] = datasets.concatenate_datasets([splits[split], *[original[name]] * copies])
        if human_questions:
            questions = human_question_pairs(original[HUMAN_SPLITS["train"]])
            splits["train"] = datasets.concatenate_datasets([splits["train"], questions])
        if seed_pairs:
            splits["train"] = datasets.concatenate_datasets([splits["train"], original[SEED_SPLITS["train"]]])
        if synthetic_extra:
            splits["train"] = datasets.concatenate_datasets(
                [splits["train"], original[EXTRA_SYNTHETIC_SPLIT]]
            )
        if first is not None:
            drawn = first.shuffle(seed=0).select(range(min(len(first), replay * len(splits["train"]))))
            splits["train"] = datasets.concatenate_datasets([splits["train"], drawn])
            splits[SYNTHETIC_FIRST_SPLIT] = first
        if len(splits["train"]) == 0:
            raise InvalidInputError(
                "K2QTask.prepare(synthetic_pairs=False): nothing left to train on "
                "(add human_pairs or seed_pairs)"
            )
        # a word vocabulary covers what the model trains on in both stages
        train = splits["train"] if first is None else datasets.concatenate_datasets([splits["train"], first])
        if backbone is not None:
            tokenizer, state = prepare_backbone(backbone)
            return TaskData(self, splits, tokenizer, state)

        def build(size: int | None):
            return train_word_tokenizer(
                train[self.source_column],
                target_texts=train[self.reference_column],
                output_vocab_size=size,
                min_frequency=min_frequency,
            )

        tokenizer = build(output_vocab_size)
        if max_output_vocab_size is not None and output_vocab_size_of(tokenizer) > max_output_vocab_size:
            tokenizer = build(max_output_vocab_size)
        return TaskData(self, splits, tokenizer, {"output_vocab_size": output_vocab_size_of(tokenizer)})

    #: the pretraining pairs of :meth:`pretraining_data`
    PRETRAINING_DATA = ("synthetic",)

    def pretraining_data(self, name: str, data: TaskData) -> tuple[datasets.Dataset, dict[str, Any]]:
        """``"synthetic"``: the fold's synthetic pairs that :meth:`prepare` held apart
        (``synthetic_first=True``), trained on before the human pairs
        (``train_preset(pretrain_on="synthetic")``)."""
        from .data import SYNTHETIC_FIRST_SPLIT

        self.check_pretraining_name(name)
        if SYNTHETIC_FIRST_SPLIT not in data.splits:
            raise InvalidInputError(
                f"k2q: pretraining on {name!r} needs the data prepared with synthetic_first=True"
            )
        pairs = data.splits[SYNTHETIC_FIRST_SPLIT]
        return pairs, {"pretraining_pairs": len(pairs)}

    def model_config(self, preset: str, data: TaskData, **overrides: Any) -> Any:
        """The preset's config sized for ``data``; a question-frame model also gets its frames: the
        ``num_frames`` most frequent of the TRAIN pairs (:func:`~hf_querygen.tasks.k2q.
        frequent_question_frames`), unless ``frames`` is given."""
        config = super().model_config(preset, data, **overrides)
        if self.family_of(config) == "frames":
            if "frames" not in overrides:
                train = data.splits["train"]
                frames = frequent_question_frames(
                    train[self.source_column], train[self.reference_column], config.num_frames
                )
                config = type(config).from_dict({**config.to_dict(), "frames": frames})
            data.state["frames"] = list(config.frames)  # super() has cleared the cached encodings
        return config

    def encode(self, data: TaskData, family: str) -> datasets.DatasetDict:
        """``seq2seq``: the :class:`Text2TextTask` encoding; ``frames``: the keyword query's words and, as
        ``labels``, the frames whose filled question scores best against the references
        (:func:`~hf_querygen.tasks.k2q.best_frame_ids`)."""
        if family != "frames":
            return super().encode(data, family)
        import datasets

        from ..seq2seq import encode_sources

        if "frames" not in data.state:
            raise InvalidInputError("k2q: the frames encoding needs the model config first (model_config)")
        frames = data.state["frames"]
        out = {}
        for name, split in data.splits.items():
            sources = [str(s) for s in split[self.source_column]]
            encoded = encode_sources(sources, data.tokenizer, self.max_source_length)
            labels = best_frame_ids(frames, sources, self.split_references(split))
            out[name] = datasets.Dataset.from_dict(
                {
                    "input_ids": encoded["input_ids"],
                    "attention_mask": encoded["attention_mask"],
                    "labels": labels,
                }
            )
        return datasets.DatasetDict(out)

    def selection_splits(self, data: Any) -> tuple[str, ...]:
        """T_0 (QALD) validation and the reversed nl2kw validation (users' TREC topics), each on its own:
        a decoding must not lose to echoing the keyword query on either; ``validation`` when the data
        has not these two (:meth:`load` without the reproduction's splits)."""
        names = ("t0_validation", "nl2kw_validation")
        return names if all(name in data.splits for name in names) else ("validation",)

    def selection_floor(self, sources: Sequence[str]) -> list[str]:
        """The keyword query echoed: the floor to beat."""
        return echo_keyword_queries(sources)

    def accepted_decoding(self, family: str) -> tuple[str, ...] | None:
        return self.FRAME_DECODING if family == "frames" else super().accepted_decoding(family)

    def refused_decoding(self, family: str) -> dict[str, str]:
        if family == "bert2bert":
            what = (
                "a word-vocabulary decoding of the copy models; a warm-started model uses "
                "no_repeat_ngram_size / require_keywords / keyword_bonus"
            )
            return dict.fromkeys(self.WORD_ID_DECODING, what)
        if family == "seq2seq":
            what = (
                "a word-piece decoding of the warm-started models; a word-vocabulary model uses "
                "no_repeat_source_words / copy_all_source_words / keyword_fallback"
            )
            return dict.fromkeys(self.WORD_PIECE_DECODING, what)
        return {}

    def predict(
        self,
        model: Any,
        tokenizer: Any,
        inputs: Sequence[str],
        batch_size: int = 64,
        max_source_length: int | None = None,
        return_scores: bool = False,
        **generation_kwargs: Any,
    ) -> list[Any]:
        """One question per keyword query (a list of ``num_return_sequences`` distinct ones when that is
        > 1); with ``return_scores`` the scored lists of :meth:`generate_questions` (what
        ``pipeline("question-generation")`` returns). Every decoding goes through
        :meth:`generate_questions`: the runner, ``evaluate`` and the pipeline share it."""
        scored = self.generate_questions(
            model, tokenizer, inputs, batch_size, max_source_length, **generation_kwargs
        )
        if return_scores:
            return scored
        if int(generation_kwargs.get("num_return_sequences") or 1) == 1:
            return [items[0]["generated_text"] if items else "" for items in scored]
        return [[item["generated_text"] for item in items] for items in scored]

    def generate_questions(
        self,
        model: Any,
        tokenizer: Any,
        inputs: Sequence[str],
        batch_size: int = 64,
        max_source_length: int | None = None,
        strategy: str = "beam",
        overgenerate: int = 3,
        return_token_ids: bool = False,
        **generation_kwargs: Any,
    ) -> list[list[dict[str, Any]]]:
        """Per keyword query, up to ``num_return_sequences`` DISTINCT questions (after copy decoding),
        best first: ``[{"generated_text": q, "score": s}, ...]``.

        The model's saved decoding (``config.task_decoding``) is the default; ``generation_kwargs``
        override it. ``strategy``:

        * ``"beam"``: greedy when ``num_beams`` is 1 and one question is wanted, else beam search with
          ``max(num_beams, num_return_sequences)`` beams; every finished beam is decoded and the best
          distinct ones kept. ``score``: the length-normalised log-probability of beam search
          (``sequences_scores``), or for greedy the mean per-token log-probability;
        * ``"distinct-beam"``: the same with ``num_return_sequences * overgenerate`` beams, so that the
          list fills with distinct questions (diverse group beam search left transformers 5 core);
        * ``"sample"``: ``num_return_sequences * overgenerate`` ancestral samples (``top_p``,
          ``temperature``, ... pass through), duplicates dropped; ``score``: the mean per-token
          log-probability under the (processed) sampling distribution.

        ``keyword_fallback`` (a question frame such as ``"what X"``; a decoding option chosen on
        validation): only candidates that keep every keyword (:func:`keeps_keywords`) are returned; when
        none does, the keyword query in the frame (:func:`fill_frame`), with the best candidate's score.
        """
        import torch

        from ..seq2seq import decode_extended_batch

        if strategy not in self.strategies:
            raise InvalidInputError(f"k2q: strategy {strategy!r} is not one of {self.strategies}")
        _count("overgenerate", overgenerate)
        kwargs = as_max_length(self.decoding(model, generation_kwargs))
        wanted = kwargs.pop("num_return_sequences", None)
        wanted = 1 if wanted is None else _count("num_return_sequences", wanted)
        if kwargs.get("num_beams") is not None:  # an explicit 0 is an error, not the default
            _count("num_beams", kwargs["num_beams"])
        # the families that decode by their own loop: word pieces (bert2bert) and question frames
        own_loop = {"bert2bert": self._warm_start_questions, "frames": self._frame_questions}
        decode = own_loop.get(self.family_of(model.config))
        if decode is not None:
            settings = (batch_size, max_source_length, strategy, overgenerate, wanted, kwargs)
            return decode(model, tokenizer, inputs, *settings)
        for option in self.WORD_PIECE_DECODING:  # set ones were refused by decoding(): these ask for nothing
            kwargs.pop(option, None)
        no_repeat_source_words = bool(kwargs.pop("no_repeat_source_words", False))
        fallback = _keyword_fallback(kwargs)
        copy_all_source_words = bool(kwargs.pop("copy_all_source_words", False))
        if strategy == "sample":
            kwargs.update(do_sample=True, num_beams=1, num_return_sequences=wanted * overgenerate)
        else:
            beams = kwargs.get("num_beams") or getattr(model.generation_config, "num_beams", 1) or 1
            beams = max(beams, wanted * (overgenerate if strategy == "distinct-beam" else 1))
            kwargs.update(do_sample=False, num_beams=beams, num_return_sequences=beams)
        kwargs.update(return_dict_in_generate=True, output_scores=True)
        output_vocab_size = output_vocab_size_of_model(model)
        pad = model.config.pad_token_id
        results: list[list[dict[str, Any]]] = [[] for _ in inputs]

        def source_words_processor(batch: dict[str, torch.Tensor]) -> NoRepeatSourceWordsProcessor:
            return NoRepeatSourceWordsProcessor(
                batch["input_ids"],
                batch.get("source_word_ids"),
                output_vocab_size,
                tokenizer.all_special_ids,
                eos_token_id=tokenizer.eos_token_id,
                copy_all=copy_all_source_words,
                no_repeat=no_repeat_source_words,
            )

        batches = generate_batches(
            model,
            tokenizer,
            list(inputs),
            batch_size,
            max_source_length or self.max_source_length,
            source_words_processor if no_repeat_source_words or copy_all_source_words else None,
            **kwargs,
        )
        for indices, _, source_words, out in batches:
            sequences = out.sequences  # (B * n, T)
            n = sequences.shape[0] // len(indices)
            if getattr(out, "sequences_scores", None) is not None:
                scores = out.sequences_scores  # (B * n,) length-normalised log-probability
            else:
                # per-token log-probabilities of the emitted tokens, (B*n, T'): the processed scores
                # (T', B*n, V') -> log-softmax -> gather (copy models emit the wider extended space,
                # so compute_transition_scores, which assumes config.vocab_size, does not apply)
                log_probs = torch.log_softmax(torch.stack(out.scores).float(), dim=-1)
                generated = sequences[:, -len(out.scores) :]
                steps = log_probs.gather(-1, generated.T.unsqueeze(-1)).squeeze(-1).T
                keep = (generated != pad) & torch.isfinite(steps)  # padding after EOS does not count
                scores = torch.where(keep, steps, 0.0).sum(-1) / keep.sum(-1).clamp(min=1)
            texts = decode_extended_batch(sequences, source_words, tokenizer, output_vocab_size, n)
            for k, i in enumerate(indices):
                own = range(k * n, (k + 1) * n)
                order = sorted(own, key=lambda j: -float(scores[j]))  # stable: beam order on ties
                if any(texts[j] for j in order):  # an empty question only when nothing else came out
                    order = [j for j in order if texts[j]]
                if fallback is not None:  # only the questions that keep every keyword
                    order = [j for j in order if keeps_keywords(texts[j], inputs[i])]
                    if not order:  # none among the candidates: the keyword query in the frame
                        best = max(own, key=lambda j: float(scores[j]))
                        results[i].append(
                            {"generated_text": fill_frame(fallback, inputs[i]), "score": float(scores[best])}
                        )
                        continue
                seen: set[str] = set()
                for j in order:
                    if texts[j] in seen:
                        continue  # distinct questions only
                    seen.add(texts[j])
                    item = {"generated_text": texts[j], "score": float(scores[j])}
                    if return_token_ids:
                        item["generated_token_ids"] = sequences[j]
                    results[i].append(item)
                    if len(results[i]) == wanted:
                        break
        return results

    def _warm_start_questions(
        self,
        model: Any,
        tokenizer: Any,
        inputs: Sequence[str],
        batch_size: int,
        max_source_length: int | None,
        strategy: str,
        overgenerate: int,
        wanted: int,
        kwargs: dict[str, Any],
    ) -> list[list[dict[str, Any]]]:
        """:meth:`generate_questions` for a warm-started BERT2BERT (word pieces,
        :func:`~hf_querygen.tasks.subword.generate_candidates`). Its own decoding options:

        * ``keyword_bonus`` (>= 0): added to the score of each keyword word not yet written (a soft copy
          prior); ``require_keywords``: the question cannot end before every keyword word is in it;
          ``keywords_in_order``: the keywords come in the query's order;
          ``keywords_once``: a keyword's content words start only where the keyword is written, so none
          comes twice (:class:`~hf_querygen.tasks.subword.SourceWordsProcessor`);
        * ``prefer_questions``: among the candidates (the beams), those that end with a question mark come
          first, best score first: a beam that stopped at "a iphone battery replacement" or "give me all
          single loona" gives way to a question when one was found (``prefer_keywords`` then reorders
          within that order);
        * ``prefer_keywords``: among the candidates (the beams), those that keep every keyword word
          (:func:`keeps_keywords`) come first, best score first; the rest follow;
        * ``keyword_fallback`` as for the other families.

        The word-id options of the copy models (``no_repeat_source_words``, ``copy_all_source_words``) do
        not apply to word pieces: ``no_repeat_ngram_size`` and ``require_keywords`` are their counterparts.
        """
        for option in self.WORD_ID_DECODING:  # set ones were refused by decoding(): these ask for nothing
            kwargs.pop(option, None)
        prefer = bool(kwargs.pop("prefer_keywords", False))
        questions_first = bool(kwargs.pop("prefer_questions", False))
        fallback = _keyword_fallback(kwargs)
        # types and ranges: checked by decoding(), the caller's arguments and the saved decoding alike
        bonus = kwargs.pop("keyword_bonus", None) or 0.0
        require = bool(kwargs.pop("require_keywords", False))
        once = bool(kwargs.pop("keywords_once", False))
        in_order = bool(kwargs.pop("keywords_in_order", False))
        if strategy == "sample":
            kwargs.update(do_sample=True, num_beams=1, num_return_sequences=wanted * overgenerate)
        else:
            beams = kwargs.get("num_beams") or getattr(model.generation_config, "num_beams", 1) or 1
            beams = max(beams, wanted * (overgenerate if strategy == "distinct-beam" else 1))
            kwargs.update(do_sample=False, num_beams=beams, num_return_sequences=beams)
        groups = generate_candidates(
            model,
            tokenizer,
            list(inputs),
            batch_size,
            max_source_length or self.subword_source_length,
            keyword_bonus=float(bonus),
            require_keywords=require,
            keywords_once=once,
            keywords_in_order=in_order,
            **kwargs,
        )
        results: list[list[dict[str, Any]]] = []
        for query, group in zip(inputs, groups, strict=True):
            ranked = sorted(group, key=lambda item: -item[1])  # stable: beam order on ties
            if any(text for text, _ in ranked):
                ranked = [item for item in ranked if item[0]]
            if questions_first:  # stable: best score first within each group
                ranked = sorted(ranked, key=lambda item: not is_question(item[0]))
            if prefer or fallback is not None:
                keeping = [item for item in ranked if keeps_keywords(item[0], query)]
                if fallback is not None and not keeping:
                    results.append([{"generated_text": fill_frame(fallback, query), "score": ranked[0][1]}])
                    continue
                ranked = keeping + ([] if fallback is not None else [i for i in ranked if i not in keeping])
            items: list[dict[str, Any]] = []
            seen: set[str] = set()
            for text, score in ranked:
                if text not in seen:  # distinct questions only
                    seen.add(text)
                    items.append({"generated_text": text, "score": score})
            results.append(items[:wanted])
        return results

    def _frame_questions(
        self,
        model: Any,
        tokenizer: Any,
        inputs: Sequence[str],
        batch_size: int,
        max_source_length: int | None,
        strategy: str,
        overgenerate: int,
        wanted: int,
        kwargs: dict[str, Any],
    ) -> list[list[dict[str, Any]]]:
        """:meth:`generate_questions` for a question-frame model: each query in its likeliest frames
        (``score``: log p(frame | query)); ``wanted``: ``num_return_sequences`` and ``kwargs`` the rest of the
        call's settings, both checked by the caller. ``beam`` / ``distinct-beam``: the top ``wanted``
        frames (every frame gives a distinct question, so no over-generation is needed); ``sample``:
        ``num_return_sequences * overgenerate`` frames drawn from p(frame | query) (``temperature``),
        duplicates dropped, sorted by score. Word-level generation settings (``no_repeat_ngram_size``,
        ``max_new_tokens``, ...) do not apply: the question is the query as typed in a frame."""
        import torch

        temperature = kwargs.get("temperature") or 1.0  # a number > 0: checked by decoding()
        frames = list(model.config.frames)
        results: list[list[dict[str, Any]]] = [[] for _ in inputs]
        model.eval()
        for indices, batch, _ in encoded_batches(
            model, tokenizer, list(inputs), batch_size, max_source_length or self.max_source_length
        ):
            with torch.no_grad():
                log_probs = model(batch["input_ids"], batch["attention_mask"]).logits.float().log_softmax(-1)
            for row, i in enumerate(indices):
                if strategy == "sample":
                    draws = torch.multinomial(
                        (log_probs[row] / temperature).softmax(-1), wanted * overgenerate, replacement=True
                    ).tolist()
                    chosen = sorted(set(draws), key=lambda f: -float(log_probs[row, f]))[:wanted]
                else:
                    chosen = log_probs[row].topk(min(wanted, len(frames))).indices.tolist()
                seen: set[str] = set()
                for frame in chosen:
                    text = fill_frame(frames[frame], inputs[i])
                    if text in seen:
                        continue
                    seen.add(text)
                    results[i].append({"generated_text": text, "score": float(log_probs[row, frame])})
        return results

    def evaluate(
        self,
        model: Any,
        tokenizer: Any,
        dataset: datasets.Dataset,
        batch_size: int = 64,
        **generation_kwargs: Any,
    ) -> tuple[dict[str, float], list[Any]]:
        """Predict every keyword query of ``dataset`` and score against ALL its references (Eq. 10),
        not only the first (the base class scores one reference per example)."""
        sources = [str(s) for s in dataset[self.source_column]]
        outputs = self.predict(model, tokenizer, sources, batch_size=batch_size, **generation_kwargs)
        return self.score(outputs, self.split_references(dataset), sources), outputs

    def split_references(self, split: datasets.Dataset) -> list[list[str]]:
        if "references" in split.column_names:
            return [list(r) for r in split["references"]]
        return [[q] for q in split[self.reference_column]]

    def score(
        self, predictions: Sequence[Any], references: Sequence[Any], sources: Sequence[str]
    ) -> dict[str, float]:
        refs = [[r] if isinstance(r, str) else list(r) for r in references]
        return k2q_scores([str(p) for p in predictions], refs)


K2Q = TASKS.register("k2q", K2QTask())
