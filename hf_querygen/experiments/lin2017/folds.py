"""Lin et al. (eCOM@SIGIR'17) reproduction, the data protocol: Webis-QSeC-10's five deterministic
cross-validation folds (each test fold's query texts kept out of its training part, a validation part for
the neural models), the CRF budget of a fold, and the feature resources the systems read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hf_querygen.baselines.crf_segmenter import REGULARIZATION_GRID
from hf_querygen.baselines.segmentation_features import default_statistics
from hf_querygen.corpora import load_corpus
from hf_querygen.corpora._base import validation_mask
from hf_querygen.corpora.webis_qsec_10 import NUM_FOLDS, load_segmentation_resources
from hf_querygen.experiments.tables import Budget, Fold
from hf_querygen.text import normalize_for_matching

if TYPE_CHECKING:
    from hf_querygen.tasks.base import Task


def cross_validation_folds(task: Task, budget: Budget, data_dir: Any) -> list[Fold]:
    """The corpus' 5 deterministic folds: test = one fold; train = the others (the CRF's training set),
    of which a deterministic 10% (by query id) is the neural models' validation part. Quick mode caps
    the neural training part (a seeded subset of the other folds)."""
    import datasets

    corpus = load_corpus("webis_qsec_10", "segmentations", data_dir=data_dir)["train"]
    algorithms = load_corpus("webis_qsec_10", "algorithms", data_dir=data_dir)["train"]
    if algorithms["id"] != corpus["id"]:
        raise RuntimeError("the algorithms config lists other queries than the segmentations config")
    folds = []
    for fold in budget.folds or range(NUM_FOLDS):
        test_rows = [i for i, f in enumerate(corpus["fold"]) if f == fold]
        train_rows, shared = disjoint_training_rows(corpus["query"], test_rows)
        train = corpus.select(train_rows)
        neural = train
        if budget.max_train is not None and len(train) > budget.max_train:
            neural = train.shuffle(seed=0).select(range(budget.max_train))
        fit, validation = _validation_split(neural, budget.settings["validation_fraction"])
        splits = datasets.DatasetDict(train=fit, validation=validation, test=corpus.select(test_rows))
        extras = {
            "train_full": train,
            "published": algorithms.select(test_rows),
            "crf_budget": crf_settings(budget),
            "shared_queries_removed": shared,
            "unseen_features_cache": {},
        }
        folds.append(Fold(fold, splits, extras))
    return folds


def disjoint_training_rows(queries: Sequence[str], test_rows: Sequence[int]) -> tuple[list[int], int]:
    """Rows outside ``test_rows`` whose query text (normalised: case, punctuation, whitespace) is not a test
    query's, and how many were dropped for sharing one: the evaluation is then on queries whose text
    training never saw (Webis-QSeC-10 has no repeated query, so nothing is dropped there)."""
    test = set(test_rows)
    test_texts = {normalize_for_matching(queries[i]) for i in test}
    rest = [i for i in range(len(queries)) if i not in test]
    kept = [i for i in rest if normalize_for_matching(queries[i]) not in test_texts]
    return kept, len(rest) - len(kept)


def _validation_split(train, fraction: float):
    held_out = validation_mask(train["id"], fraction, salt="neural-validation")
    return (
        train.select([i for i, h in enumerate(held_out) if not h]),
        train.select([i for i, h in enumerate(held_out) if h]),
    )


def segmentation_resources(data_dir: Any) -> dict[str, Any]:
    return {
        "segmentation": load_segmentation_resources(data_dir),
        "algorithms": load_corpus("webis_qsec_10", "algorithms", data_dir=data_dir)["train"],
        # features that exist for any query (never built from a Webis-QSeC-10 query)
        "text_statistics": default_statistics(data_dir),
    }


def crf_settings(budget: Budget) -> dict[str, Any]:
    """The CRF's regularisation grid and iteration caps under ``budget`` (a fold's ``crf_budget``)."""
    size = budget.settings.get("crf_grid")
    grid = REGULARIZATION_GRID if size is None else REGULARIZATION_GRID[:size]
    return {
        "grid": grid,
        "max_iterations": budget.settings["crf_iterations"],
        "pos_iterations": budget.settings.get("pos_iterations", 40),
    }
