"""Lin et al. (eCOM@SIGIR'17) reproduction, the analyses: the ``config`` entries of the report (folds,
CRF grid, neural settings, per-fold details, the coverage of the features that exist for any query, how
often our WT / WT+SNP give the published output) and the vocabulary statistics the diagnosis shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_querygen.baselines.crf_segmenter import resource_coverage
from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter
from hf_querygen.experiments._report import aggregate
from hf_querygen.experiments.lin2017.folds import crf_settings
from hf_querygen.experiments.tables import RunContext
from hf_querygen.metrics.segmentation_scores import segmentation_scores


def _scores(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    scores = segmentation_scores(predictions, references)
    scores.pop("n_queries")
    return scores


def vocabulary_statistics(train_queries: Sequence[str], test_queries: Sequence[str], min_frequency: int = 1):
    """Out-of-vocabulary shares of ``test_queries`` w.r.t. the words seen >= ``min_frequency`` times in
    ``train_queries`` (whitespace words, lower-cased as the tokenizer does)."""
    from collections import Counter

    counts = Counter(w for q in train_queries for w in q.lower().split())
    known = {w for w, c in counts.items() if c >= min_frequency}
    words = [w for q in test_queries for w in q.lower().split()]
    with_unknown = [any(w not in known for w in q.lower().split()) for q in test_queries]
    return {
        "train_vocabulary": len(known),
        "test_words_unknown": sum(w not in known for w in words) / len(words),
        "test_queries_with_an_unknown_word": sum(with_unknown) / len(test_queries),
    }


def reimplementation_agreement(algorithms, resources) -> dict[str, dict[str, float]]:
    """Share of all queries on which our WT / WT+SNP output equals the published one."""
    agreement = {}
    for strict_noun_phrases in (False, True):
        segmenter = WikipediaTitleSegmenter(resources, strict_noun_phrases)
        ours = segmenter(algorithms["query"])
        published = algorithms[segmenter.name]
        identical = sum(a == b for a, b in zip(ours, published, strict=True))
        agreement[segmenter.name] = {
            "identical": identical / len(ours),
            "queries": len(ours),
            "published_scores_against_ours": _scores(ours, published),
        }
    return agreement


def describe(context: RunContext) -> dict[str, Any]:
    """The config entries of the report: folds, CRF grid, neural settings, per-fold details."""

    crf = crf_settings(context.budget)
    per_fold = []
    for fold in context.folds:
        entry: dict[str, Any] = {
            "fold": fold.id,
            "train_queries": len(fold.extras["train_full"]),
            "test_queries": len(fold.splits["test"]),
            "training_queries_sharing_a_test_query_text_removed": fold.extras["shared_queries_removed"],
            # a one-hot decoder without copying cannot write a word it never saw as a target
            "vocabulary": vocabulary_statistics(fold.splits["train"]["query"], fold.splits["test"]["query"]),
        }
        for record in context.records:
            if record["fold"] != fold.id:
                continue
            if record["system"] in ("crf", "crf_corpus_features", "crf_text_features"):
                entry[f"{record['system']}_c1_c2"] = record["info"]["c1_c2"]
                entry[f"{record['system']}_validation_query_accuracy"] = record["info"][
                    "validation_query_accuracy"
                ]
            if "training" in record:
                entry[f"{record['system']}_epochs_seed{record['seed']}"] = record["training"]["epochs"]
        per_fold.append(entry)
    neural = {
        system.key: {
            "preset": system.preset,
            "config_overrides": {
                **system.preset_overrides,
                **context.budget.preset_overrides.get(system.key, {}),
            },
            "training": {**context.budget.training_overrides, **system.training_overrides},
            "patience": context.budget.patience,
            "validation_fraction": context.budget.settings["validation_fraction"],
        }
        for system in context.reproduction.systems
        if system.trainable
    }
    n = len(context.folds)
    return {
        "corpus": "webis_qsec_10 (training set, 4,848 queries; references by break fusion)",
        "evaluation": f"{n}-fold cross-validation (deterministic folds of the corpus), mean +- std over folds"
        + (f" x {context.seeds} seeds for the neural rows" if context.seeds > 1 else ""),
        "paper_numbers_measured_on": "the official Webis-QSeC-10 test set (48,587 queries), not available "
        "here",
        "crf": {
            "grid_c1_c2": [list(p) for p in crf["grid"]],
            "max_iterations": crf["max_iterations"],
            "selection": "query accuracy on a 15% validation part of the training folds",
        },
        "neural": neural,
        "paper_rnn": "2-layer tanh RNN, 1024 units, one-hot input, Adam 1e-4, dropout 0.05, 50,000 epochs",
        "per_fold": per_fold,
        "unseen_query_features": unseen_feature_coverage(context),
        "reimplementation_agreement": reimplementation_agreement(
            context.resources["algorithms"], context.resources["segmentation"]
        ),
    }


def unseen_word_queries(context: RunContext) -> dict[str, Any]:
    """Every row's scores on the test queries with a word that no query of the fold's training part has
    (whitespace words, lower-cased; the training part is all the other folds, what the CRFs train on):
    the queries a segmenter must read from what it knows beyond the corpus. Mean ± std over runs
    (folds x seeds), from each run's test outputs."""
    chosen: dict[Any, list[int]] = {}
    shares = []
    for fold in context.folds:
        known = {w for q in fold.extras["train_full"]["query"] for w in q.lower().split()}
        queries = fold.splits["test"]["query"]
        chosen[fold.id] = [i for i, q in enumerate(queries) if any(w not in known for w in q.lower().split())]
        shares.append(len(chosen[fold.id]) / len(queries))
    runs: dict[str, list[dict[str, float]]] = {}
    for record in context.records:
        rows = chosen.get(record["fold"])
        outputs = record["outputs"].get("test")
        if not rows or outputs is None:
            continue
        references = context.data[record["fold"]].splits["test"]["reference"]
        runs.setdefault(record["system"], []).append(
            _scores([outputs[i] for i in rows], [references[i] for i in rows])
        )
    return {
        "unseen_word_queries": {
            "definition": "test queries with a word (lower-cased) that no training query of the fold has",
            "queries": sum(len(rows) for rows in chosen.values()),
            "share_of_the_test_queries": sum(shares) / len(shares),
            "systems": {system: aggregate(scores) for system, scores in runs.items()},
        }
    }


def unseen_feature_coverage(context: RunContext) -> dict[str, Any]:
    """How much the features that exist for any query know about the corpus's queries, beside the corpus
    files (which were built for exactly these queries)."""
    statistics = context.resources["text_statistics"]
    text, corpus = statistics.resources(), context.resources["segmentation"]
    queries = [q for fold in context.folds for q in fold.splits["test"]["query"]]
    references = [r for fold in context.folds for r in fold.splits["test"]["reference"]]
    words = [w for q in queries for w in q.split()]
    bigrams = [f"{a} {b}" for q in queries for a, b in zip(q.split(), q.split()[1:], strict=False)]
    segments = [seg for r in references for seg in r.split("|") if " " in seg]

    def shares(resources) -> dict[str, float]:
        return {
            "words_with_a_count": sum(w in resources.msn_unigram_logprob for w in words) / len(words),
            "two_grams_with_a_count": sum(b in resources.google_counts for b in bigrams) / len(bigrams),
            "multi_word_reference_segments_that_are_titles": sum(
                s in resources.wikipedia_titles for s in segments
            )
            / max(len(segments), 1),
            "queries_with_no_feature": sum(resource_coverage(q.split(), resources) == 0 for q in queries)
            / len(queries),
        }

    return {
        "text_statistics": statistics.describe(),
        "coverage_of_the_test_queries": {"text_statistics": shares(text), "corpus_files": shares(corpus)},
    }
