"""Reproduction of Lin et al. (eCOM@SIGIR'17) Table 2 on Webis-QSeC-10 with 5-fold cross-validation.

``hf-querygen reproduce lin2017 [--quick] [--seeds N]`` scores, on the same deterministic folds of
the 4,848 training queries (references by break fusion):

* the paper's rows: WT and WT+SNP (our re-implementations, :mod:`hf_querygen.baselines.wikipedia_titles`),
  the CRF with the paper's word features, and the RNN encoder-decoder decoded as the paper did
  (unconstrained);
* rows whose features exist for any query ("unseen-ready"): the CRF with n-gram / PMI / title
  statistics of the text in shared/data and POS from an offline tagger
  (:mod:`hf_querygen.baselines.segmentation_features`), and WT over the same statistics; the table
  "Unseen queries" puts them beside the trivial segmentations, the neural rows (words only) and the
  rows that read the corpus's feature files (which exist only for the corpus's own queries);
* extra rows: the CRF with the corpus's own features, the same encoder-decoder with decoding
  constrained to "next query word or break" (scoring "continue" by the probability of writing any
  word, and by the next word's own probability), a BiLSTM BIO tagger, the trivial "every word a
  segment", and the seven published algorithm outputs shipped with the corpus
  (``published_<name>``), scored on the same folds.

Writes ``results.json`` (the project's one format; ``query_accuracy`` / ``break_accuracy`` per
system, mean +- std over folds, plus ``reimplementation_agreement``: the share of queries on which
our WT / WT+SNP give exactly the published output) and ``results.md``.

Every test fold shares no query text with its training part (:func:`disjoint_training_rows`; the
corpus has no repeated query, so the check removes nothing). The neural models read training singletons
as ``[UNK]`` (``SegmentationTask.min_word_frequency``, chosen on validation; the paper's setting, every
training word in the vocabulary, is measured by :mod:`hf_querygen.experiments.lin2017_diagnosis`).

What differs from the paper, by necessity: the paper reports the official test set (48,587
queries), which is not available; we cross-validate on the training set. The paper's RNN
(2 x 1024 tanh units, 50,000 epochs) does not fit a CPU budget; we train the same architecture
smaller and with early stopping on a validation part of the training folds (sizes in
``config``). Hyper-parameters (CRF c1/c2, neural early stopping) are chosen on a validation part of
the TRAINING folds only; the test fold is used once, for the reported numbers.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_querygen.corpora.webis_qsec_10 import PUBLISHED_ALGORITHMS
from hf_querygen.experiments.papers import paper_numbers
from hf_querygen.experiments.runner import Reproduction, run_reproduction
from hf_querygen.experiments.tables import Budget, Fold, RunContext
from hf_querygen.systems import BaselineContext, System, register_systems

if TYPE_CHECKING:
    from hf_querygen.tasks.base import Task

PAPER = "lin2017"
#: Table 2 of the paper (official Webis-QSeC-10 test set; data file ``papers/lin2017.json``)
PAPER_NUMBERS: dict[str, dict[str, float]] = paper_numbers(PAPER)
SYSTEM_LABELS = {
    "wt": "WT (ours, re-implemented)",
    "wt_snp": "WT+SNP (ours, re-implemented)",
    "crf": "CRF (paper features)",
    "rnn_encoder_decoder": "RNN encoder-decoder (unconstrained, as in the paper; training singletons [UNK])",
    "crf_corpus_features": "extra: CRF + corpus features (n-grams, Wikipedia, PMI, POS)",
    "rnn_encoder_decoder_constrained": "extra: RNN encoder-decoder, constrained (break vs. any word)",
    "rnn_encoder_decoder_constrained_word_only": "extra: RNN encoder-decoder, constrained (break vs. "
    "next word)",
    "crf_text_features": "unseen-ready: CRF + features that exist for any query (text n-grams / PMI / titles "
    "from shared/data, POS by an offline tagger)",
    "wt_text_features": "unseen-ready: WT over the same text statistics and titles",
    "neural_tagger": "extra: BiLSTM BIO tagger",
    "every_word": "extra: trivial, every word its own segment",
    "no_breaks": "extra: trivial, the whole query one segment",
    "published_wt": "published output: WT (CIKM'12)",
    "published_wt_snp": "published output: WT+SNP (CIKM'12)",
    "published_pmi": "published output: PMI baseline",
    "published_naive": "published output: naive (SIGIR'10)",
    "published_wikipedia_normalized": "published output: Wikipedia-based normalization (WWW'11)",
    "published_hybrid_acc": "published output: HYB-A (CIKM'12)",
    "published_hybrid_ir": "published output: HYB-I (CIKM'12)",
}
TABLE_METRICS = ("query_accuracy", "break_accuracy")
EXTRA_METRICS = ("break_accuracy_pooled", "segment_precision", "segment_recall", "segment_f1")

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- scoring helpers
def _scores(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    from hf_querygen.metrics.segmentation_scores import segmentation_scores

    scores = segmentation_scores(predictions, references)
    scores.pop("n_queries")
    return scores


def _as_strings(word_lists: Sequence[Sequence[str]], break_lists: Sequence[Sequence[int]]) -> list[str]:
    from hf_querygen.tasks.segmentation import breaks_to_string

    return [breaks_to_string(words, breaks) for words, breaks in zip(word_lists, break_lists, strict=True)]


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
    from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter

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


# ---------------------------------------------------------------- baselines
def wikipedia_title_baseline(
    context: BaselineContext, strict_noun_phrases: bool = False, source: str = "corpus"
) -> list[str]:
    """WT / WT+SNP (Hagen et al. CIKM'12), our re-implementation, on the context's queries; ``source``
    ``"corpus"``: the corpus's feature files, ``"text"``: the text statistics that exist for any query."""
    from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter

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
    from hf_querygen.baselines.segmentation_features import cross_fitted_tags

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
    from hf_querygen.baselines.crf_segmenter import CRFSegmenter, select_regularization

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


# ---------------------------------------------------------------- the table
#: our RNN encoder-decoder: the paper's architecture (presets.py) at 2 x 128 units, trained with Adam 1e-3
#: (the paper's 1e-4 over 50,000 epochs does not fit the budget), batch 64, clipping 5
_RNN_SIZES = {
    "embedding_size": 128,
    "hidden_size": 128,
    "decoder_hidden_size": 128,
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
}
_NEURAL_TRAINING = {"learning_rate": 1e-3, "per_device_train_batch_size": 64, "max_grad_norm": 5.0}
_NEURAL = {
    "task": "segmentation",
    "training_preset": "lin2017-segmenter",
    "training_overrides": _NEURAL_TRAINING,
}

SYSTEMS = register_systems(
    [
        System("lin2017/wt", "segmentation", SYSTEM_LABELS["wt"], baseline=wikipedia_title_baseline),
        System(
            "lin2017/wt_snp",
            "segmentation",
            SYSTEM_LABELS["wt_snp"],
            baseline=functools.partial(wikipedia_title_baseline, strict_noun_phrases=True),
        ),
        System("lin2017/crf", "segmentation", SYSTEM_LABELS["crf"], baseline=crf_baseline),
        System(
            "lin2017/rnn_encoder_decoder",
            label=SYSTEM_LABELS["rnn_encoder_decoder"],
            preset="lin2017-segmenter",
            preset_overrides=_RNN_SIZES,
            decoding={"constrained": False},
            cost=2,
            **_NEURAL,
        ),
        System(
            "lin2017/crf_corpus_features",
            "segmentation",
            SYSTEM_LABELS["crf_corpus_features"],
            baseline=functools.partial(crf_baseline, feature_set="paper+corpus"),
        ),
        System(
            "lin2017/crf_text_features",
            "segmentation",
            SYSTEM_LABELS["crf_text_features"],
            baseline=functools.partial(crf_baseline, feature_set="paper+text"),
        ),
        System(
            "lin2017/wt_text_features",
            "segmentation",
            SYSTEM_LABELS["wt_text_features"],
            baseline=functools.partial(wikipedia_title_baseline, source="text"),
        ),
        System(
            "lin2017/rnn_encoder_decoder_constrained",
            "segmentation",
            SYSTEM_LABELS["rnn_encoder_decoder_constrained"],
            decodes_model_of="rnn_encoder_decoder",
            decoding={"constrained": True, "pool_word_probability": True},
        ),
        System(
            "lin2017/rnn_encoder_decoder_constrained_word_only",
            "segmentation",
            SYSTEM_LABELS["rnn_encoder_decoder_constrained_word_only"],
            decodes_model_of="rnn_encoder_decoder",
            decoding={"constrained": True, "pool_word_probability": False},
        ),
        System(
            "lin2017/neural_tagger", label=SYSTEM_LABELS["neural_tagger"], preset="lin2017-tagger", **_NEURAL
        ),
        System(
            "lin2017/every_word", "segmentation", SYSTEM_LABELS["every_word"], baseline=every_word_baseline
        ),
        System("lin2017/no_breaks", "segmentation", SYSTEM_LABELS["no_breaks"], baseline=no_breaks_baseline),
    ]
    + [
        System(
            f"lin2017/published_{column}",
            "segmentation",
            SYSTEM_LABELS[f"published_{column}"],
            baseline=functools.partial(published_baseline, column=column),
        )
        for column in PUBLISHED_ALGORITHMS
    ]
)

FULL_BUDGET = Budget(
    "full",
    seeds=3,
    patience=2,
    training_overrides={"num_train_epochs": 20},
    settings={"crf_grid": None, "crf_iterations": 100, "validation_fraction": 0.1, "pos_iterations": 40},
)
#: minutes on 2 cores: fold 0 only, one smaller RNN layer, 4 epochs at a higher rate, a CRF grid of 2
QUICK_BUDGET = Budget(
    "quick",
    seeds=1,
    patience=None,
    training_overrides={"num_train_epochs": 4, "learning_rate": 3e-3},
    preset_overrides={
        "rnn_encoder_decoder": {
            "embedding_size": 64,
            "hidden_size": 64,
            "decoder_hidden_size": 64,
            "num_encoder_layers": 1,
            "num_decoder_layers": 1,
        },
        "neural_tagger": {"embedding_size": 32, "hidden_size": 32},
    },
    folds=(0,),
    settings={"crf_grid": 2, "crf_iterations": 50, "validation_fraction": 0.1, "pos_iterations": 20},
)


def cross_validation_folds(task: Task, budget: Budget, data_dir: Any) -> list[Fold]:
    """The corpus' 5 deterministic folds: test = one fold; train = the others (the CRF's training set),
    of which a deterministic 10% (by query id) is the neural models' validation part. Quick mode caps
    the neural training part (a seeded subset of the other folds)."""
    import datasets

    from hf_querygen.corpora import load_corpus
    from hf_querygen.corpora.webis_qsec_10 import NUM_FOLDS

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
            "crf_budget": _with_crf_budget(budget),
            "shared_queries_removed": shared,
            "unseen_features_cache": {},
        }
        folds.append(Fold(fold, splits, extras))
    return folds


def disjoint_training_rows(queries: Sequence[str], test_rows: Sequence[int]) -> tuple[list[int], int]:
    """Rows outside ``test_rows`` whose query text (normalised: case, punctuation, whitespace) is not a test
    query's, and how many were dropped for sharing one: the evaluation is then on queries whose text
    training never saw (Webis-QSeC-10 has no repeated query, so nothing is dropped there)."""
    from hf_querygen.text import normalize_for_matching

    test = set(test_rows)
    test_texts = {normalize_for_matching(queries[i]) for i in test}
    rest = [i for i in range(len(queries)) if i not in test]
    kept = [i for i in rest if normalize_for_matching(queries[i]) not in test_texts]
    return kept, len(rest) - len(kept)


def _validation_split(train, fraction: float):
    from hf_querygen.baselines.crf_segmenter import validation_mask

    held_out = validation_mask(train["id"], fraction, salt="neural-validation")
    return (
        train.select([i for i, h in enumerate(held_out) if not h]),
        train.select([i for i, h in enumerate(held_out) if h]),
    )


def segmentation_resources(data_dir: Any) -> dict[str, Any]:
    from hf_querygen.baselines.segmentation_features import default_statistics
    from hf_querygen.corpora import load_corpus
    from hf_querygen.corpora.webis_qsec_10 import load_segmentation_resources

    return {
        "segmentation": load_segmentation_resources(data_dir),
        "algorithms": load_corpus("webis_qsec_10", "algorithms", data_dir=data_dir)["train"],
        # features that exist for any query (never built from a Webis-QSeC-10 query)
        "text_statistics": default_statistics(data_dir),
    }


def _with_crf_budget(budget: Budget) -> dict[str, Any]:
    from hf_querygen.baselines.crf_segmenter import REGULARIZATION_GRID

    size = budget.settings.get("crf_grid")
    grid = REGULARIZATION_GRID if size is None else REGULARIZATION_GRID[:size]
    return {
        "grid": grid,
        "max_iterations": budget.settings["crf_iterations"],
        "pos_iterations": budget.settings.get("pos_iterations", 40),
    }


# ---------------------------------------------------------------- analyses
def describe(context: RunContext) -> dict[str, Any]:
    """The config entries of the report: folds, CRF grid, neural settings, per-fold details."""

    crf = _with_crf_budget(context.budget)
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


def unseen_feature_coverage(context: RunContext) -> dict[str, Any]:
    """How much the features that exist for any query know about the corpus's queries, beside the corpus
    files (which were built for exactly these queries)."""
    from hf_querygen.baselines.crf_segmenter import resource_coverage

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


def _resources(data_dir: Any) -> dict[str, Any]:
    return segmentation_resources(data_dir)


REPRODUCTION = Reproduction(
    name=PAPER,
    task="segmentation",
    corpus="webis_qsec_10",
    corpus_config="segmentations",
    systems=SYSTEMS,
    paper_numbers=PAPER_NUMBERS,
    table_metrics=TABLE_METRICS,
    budgets={"full": FULL_BUDGET, "quick": QUICK_BUDGET},
    train_budget="full",  # `hf-querygen train --system` trains this budget's recipe (the table's)
    folds=cross_validation_folds,
    resources=_resources,
    analyses=(describe,),
    render_markdown=lambda document: render_markdown(document),
)


def run(
    out_dir: str | Path = "results/lin2017",
    quick: bool = False,
    seeds: int | None = None,
    data_dir: Any = None,
    workers: int = 2,
    **runner_options: Any,
) -> dict:
    """Cross-validate every system through :func:`hf_querygen.experiments.runner.run_reproduction` and
    write ``results.json`` + ``results.md`` into ``out_dir``."""
    return run_reproduction(REPRODUCTION, out_dir, quick, seeds, data_dir, workers, **runner_options)


def _best_system(document: dict, candidates: Sequence[str]) -> str:
    return max(candidates, key=lambda s: document["systems"][s]["query_accuracy"]["mean"])


def _extra_table(document: dict, systems: Sequence[str]) -> str:
    """Our further metrics (the paper reports none of them): mean ± std over folds."""
    lines = ["| system | " + " | ".join(EXTRA_METRICS) + " |", "|" + "---|" * (len(EXTRA_METRICS) + 1)]
    for system in systems:
        cells = document["systems"][system]
        row = [f"{cells[m]['mean']:.3f} ± {cells[m]['std']:.3f}" for m in EXTRA_METRICS]
        lines.append(f"| {SYSTEM_LABELS[system]} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


#: rows whose every input exists for a query the corpus does not describe (words, text statistics, tagger)
UNSEEN_READY = (
    "crf_text_features",
    "wt_text_features",
    "crf",
    "neural_tagger",
    "rnn_encoder_decoder_constrained",
    "rnn_encoder_decoder",
    "every_word",
    "no_breaks",
)
#: rows that read the corpus's feature files, which exist only for the corpus's own 4,848 queries
CORPUS_FILE_ROWS = ("wt", "wt_snp", "crf_corpus_features")


def unseen_query_table(document: dict) -> str:
    """The rows that work on a query nobody has seen, beside the rows that need the corpus files."""
    lines = [
        "| system | features for a new query | query_accuracy | break_accuracy |",
        "|---|---|---|---|",
    ]
    for group, available in ((UNSEEN_READY, "yes"), (CORPUS_FILE_ROWS, "no (corpus files)")):
        for system in group:
            if system not in document["systems"]:
                continue
            cells = document["systems"][system]
            q, b = cells["query_accuracy"], cells["break_accuracy"]
            lines.append(
                f"| {SYSTEM_LABELS[system]} | {available} | {q['mean']:.3f} ± {q['std']:.3f} "
                f"| {b['mean']:.3f} ± {b['std']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def best_unseen_ready(document: dict) -> str:
    """The best row (query accuracy) among those whose features exist for any query."""
    return _best_system(document, [s for s in UNSEEN_READY if s in document["systems"]])


def render_markdown(document: dict) -> str:
    from hf_querygen.experiments._report import markdown_table

    systems = [s for s in SYSTEM_LABELS if s in document["systems"]]
    ours = [s for s in systems if not s.startswith("published_")]
    best = _best_system(document, ours)
    best_q = document["systems"][best]["query_accuracy"]
    published = document["systems"]["published_wt_snp"]["query_accuracy"]
    verdict = "beats" if best_q["mean"] > published["mean"] else "does not beat"
    config = document["config"]
    agreement = document.get("reimplementation_agreement") or config["reimplementation_agreement"]
    lines = [
        "# Lin et al. 2017, Table 2: query segmentation on Webis-QSeC-10",
        "",
        f"Ours: {config['evaluation']} on the 4,848 training queries. The paper's numbers were measured on "
        f"{config['paper_numbers_measured_on']}; they are beside ours for orientation, not as a "
        "like-for-like "
        "comparison. `published output` rows score the segmentations shipped with the corpus on the "
        "same folds.",
        "",
        markdown_table(document, TABLE_METRICS, systems, SYSTEM_LABELS),
        "Further metrics (ours only):",
        "",
        _extra_table(document, systems),
        f"**Best of our segmenters: {SYSTEM_LABELS[best]}**, query accuracy {best_q['mean']:.3f} "
        f"± {best_q['std']:.3f}; it {verdict} the published WT+SNP output on the same folds "
        f"({published['mean']:.3f} ± {published['std']:.3f}).",
        "",
        "## Unseen queries",
        "",
        "Every test fold shares no query text with its training part (checked; "
        f"{sum(f['training_queries_sharing_a_test_query_text_removed'] for f in config['per_fold'])} "
        "training queries removed for sharing one). The corpus's feature files (Google n-gram counts, "
        "Wikipedia titles, MSN probabilities, PMI, POS) were built for the corpus's own queries, test folds "
        "included: rows that read them would find nothing for a user's query. The rows marked *yes* use "
        "only what exists for any query: the words, n-gram / PMI / title statistics of text in shared/data "
        "(no Webis query) and a POS tagger trained on the training folds' POS tags.",
        "",
        unseen_query_table(document),
        _coverage_line(config),
        "",
        "Re-implementation check (all 4,848 queries): our WT gives exactly the published WT segmentation "
        f"for {agreement['wt']['identical']:.2%} of the queries, our WT+SNP the published WT+SNP one for "
        f"{agreement['wt_snp']['identical']:.2%}.",
        "",
        "Constrained decoding: the paper's encoder-decoder decoded so that it can only write the next query "
        'word or a break. Scoring "write the next word" by that word\'s own probability (word only) '
        "makes a model "
        "that cannot predict rare words break everywhere; scoring it by the probability of writing any word "
        "(break vs. any word) reads the model's break probability. The second variant was added after the "
        "first turned out to equal the trivial segmentation on fold 0 in a development run; both are "
        "reported.",
        "",
        f"Neural settings (the paper's RNN: {config['paper_rnn']}): {config['neural']}. "
        f"CRF: {config['crf']}. Runtime {_runtime(config):.0f} s"
        + (" (quick smoke run: 1 fold, small models; not for reporting)." if config["quick"] else "."),
        "",
    ]
    return "\n".join(lines)


def _coverage_line(config: dict) -> str:
    coverage = config.get("unseen_query_features", {}).get("coverage_of_the_test_queries")
    if not coverage:
        return ""
    text, corpus = coverage["text_statistics"], coverage["corpus_files"]
    return (
        "Coverage of the test queries, text statistics vs. corpus files: words with a count "
        f"{text['words_with_a_count']:.1%} vs. {corpus['words_with_a_count']:.1%}; 2-grams with a count "
        f"{text['two_grams_with_a_count']:.1%} vs. {corpus['two_grams_with_a_count']:.1%}; multi-word "
        f"reference segments that are titles {text['multi_word_reference_segments_that_are_titles']:.1%} vs. "
        f"{corpus['multi_word_reference_segments_that_are_titles']:.1%}."
    )


def _runtime(config: dict) -> float:
    """Seconds of the whole run (``timings_s.total_s``; older results: ``runtime_seconds``)."""
    return config.get("timings_s", {}).get("total_s", config.get("runtime_seconds", float("nan")))
