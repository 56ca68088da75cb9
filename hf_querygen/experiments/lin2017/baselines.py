"""Lin et al. (eCOM@SIGIR'17) reproduction, the baselines: the callables of the table's rows that train
no neural model (WT / WT+SNP, the CRF on each feature set, the trivial segmentations, the published
outputs), each reading a fold's resources from its :class:`~hf_querygen.systems.BaselineContext`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_querygen.baselines.crf_segmenter import CRFSegmenter, select_regularization
from hf_querygen.baselines.segmentation_features import cross_fitted_tags
from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter
from hf_querygen.systems import BaselineContext
from hf_querygen.tasks.segmentation import breaks_to_string


def _as_strings(word_lists: Sequence[Sequence[str]], break_lists: Sequence[Sequence[int]]) -> list[str]:
    return [breaks_to_string(words, breaks) for words, breaks in zip(word_lists, break_lists, strict=True)]


def wikipedia_title_baseline(
    context: BaselineContext, strict_noun_phrases: bool = False, source: str = "corpus"
) -> list[str]:
    """WT / WT+SNP (Hagen et al. CIKM'12), our re-implementation, on the context's queries; ``source``
    ``"corpus"``: the corpus's feature files, ``"text"``: the text statistics that exist for any query."""
    if source == "text":
        statistics = context.resources["text_statistics"]
        segmenter = WikipediaTitleSegmenter(
            statistics.resources(), strict_noun_phrases, statistics.median_bigram_count()
        )
    else:
        segmenter = WikipediaTitleSegmenter(context.resources["segmentation"], strict_noun_phrases)
    return segmenter(context.data.splits[context.split]["query"])


def unseen_query_features(context: BaselineContext) -> dict[str, Any]:
    """The fold's features that exist for any query (cached per fold): the default text statistics with
    a POS tagger trained on the POS the corpus ships for the fold's TRAINING queries, and those training
    queries' tags cross-fitted (each half tagged by a tagger trained on the other half), so that the CRF
    learns from tags as noisy as a new query's."""
    cache = context.resources["unseen_features_cache"]
    if "resources" not in cache:
        train = context.resources["train_full"]
        shipped = [context.resources["segmentation"].query_pos.get(i) for i in train["id"]]
        settings = context.resources["crf_budget"]
        train_tags, tagger = cross_fitted_tags(
            train["words"], shipped, folds=2, max_iterations=settings["pos_iterations"]
        )
        cache["resources"] = context.resources["text_statistics"].resources(tagger)
        cache["train_pos"] = train_tags
    return cache


def every_word_baseline(context: BaselineContext) -> list[str]:
    """The trivial segmentation: every word its own segment."""
    return [q.replace(" ", "|") for q in context.data.splits[context.split]["query"]]


def no_breaks_baseline(context: BaselineContext) -> list[str]:
    """The other trivial segmentation: the whole query is one segment (no break anywhere)."""
    return list(context.data.splits[context.split]["query"])


def published_baseline(context: BaselineContext, column: str) -> list[str]:
    """A published algorithm's output shipped with the corpus, for the same test queries."""
    return list(context.resources["published"][column])


def crf_baseline(context: BaselineContext, feature_set: str = "paper") -> tuple[list[str], dict[str, Any]]:
    """The CRF (python-crfsuite) on the fold's full training part; c1/c2 selected on a validation part of
    it (query accuracy), then refit on all of it."""
    train, test = context.resources["train_full"], context.data.splits[context.split]
    settings_of_budget = context.resources["crf_budget"]
    if feature_set == "paper+text":
        # features that exist for any query: text statistics, POS from the offline tagger
        kit = unseen_query_features(context)
        resources, pos, test_pos = kit["resources"], kit["train_pos"], None  # None: the tagger tags
        feature_set = "paper+corpus"
    else:
        resources = context.resources["segmentation"]
        with_pos = feature_set == "paper+corpus"
        pos = [resources.query_pos.get(i) for i in train["id"]] if with_pos else None
        test_pos = [resources.query_pos.get(i) for i in test["id"]] if with_pos else None
    settings, trials = select_regularization(
        train["words"],
        train["breaks"],
        train["id"],
        feature_set,
        resources,
        pos,
        settings_of_budget["grid"],
        max_iterations=settings_of_budget["max_iterations"],
    )
    model = CRFSegmenter(settings, resources).fit(train["words"], train["breaks"], pos)
    predicted = model.predict_breaks(test["words"], test_pos)
    info = {
        "c1_c2": [settings.c1, settings.c2],
        "validation_query_accuracy": max(t["query_accuracy"] for t in trials),
    }
    return _as_strings(test["words"], predicted), info
