"""The analyses of the Ding & Balog (ICTIR'18) reproduction (:mod:`hf_querygen.experiments.ding2018`),
hooks of its ``Reproduction`` that add to the results' ``config``: the data and BLEU signatures of a run
(``describe``), the networks' settings, the paper's ordering per split and metric, Fig. 6's vocabulary
coverage and Fig. 5's CopyNet runs on every T_L."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hf_querygen.experiments.ding2018.data import (
    fig5_training_sets,
    pairs_split,
    vocabulary,
    vocabulary_coverage,
)
from hf_querygen.experiments.ding2018.systems import FIG5_SYSTEM, HEADLINE, PAPER_ORDER, TEST_SPLITS
from hf_querygen.experiments.jobs import (
    Job,
    _fold_data,
    _load_records,
    run_name,
    train_and_score,
)
from hf_querygen.experiments.tables import Budget, Fold, RunContext
from hf_querygen.metrics.wellformedness_classifier import classifier_report
from hf_querygen.tasks.base import TaskData
from hf_querygen.tasks.k2q.questions import (
    BLEU_SIGNATURE,
    cached_wellformedness_classifier,
    k2q_scores,
    k2q_user_scores,
)
from hf_querygen.training import quiet_console


# ---------------------------------------------------------------- Figs. 6 and 5
def user_measures(data: TaskData, split: str, outputs: list[str]) -> dict[str, float]:
    """Table 2's measures of what users need (``Reproduction.measures``): keywords kept, and
    well-formedness when the classifier is built (:func:`~hf_querygen.tasks.k2q.k2q_user_scores`)."""
    return k2q_user_scores(outputs, data.sources(split), data_dir=data.data_dir)


def user_measures_config(context: RunContext) -> dict[str, Any]:
    """How the measures beside ROUGE were taken: the classifier's provenance and its accuracy on the
    corpus' test split beside the majority class, or why well-formedness is missing."""
    folder = cached_wellformedness_classifier(context.folds[0].data_dir if context.folds else None)
    keywords = (
        "keywords_kept: share of the keyword query's content words (text.content_words: normalised, no "
        "stopwords, no stemming) among the question's words, mean over queries"
    )
    if folder is None:
        return {
            "user_measures": {
                "keywords_kept": keywords,
                "wellformed": "not measured: the classifier is not built "
                "(hf-querygen wellformedness-classifier)",
            }
        }
    info = classifier_report(folder)
    return {
        "user_measures": {
            "keywords_kept": keywords,
            "wellformed": "share judged well-formed (p >= 0.5) by the backbone fine-tuned on query-"
            "wellformedness (rating >= 0.8), lower-cased, ending punctuation -> ' ?'",
            "classifier": {
                key: info[key]
                for key in (
                    "backbone",
                    "settings",
                    "corpus_files",
                    "sizes",
                    "validation_accuracy",
                    "test_accuracy",
                    "majority_class",
                    "majority_test_accuracy",
                )
            },
        }
    }


def fig6(context: RunContext) -> dict[str, Any]:
    """Vocabulary coverage of T_L under TDF and under random selection (3 random draws)."""
    pairs = context.folds[0].extras["synthetic"].synthetic_set("par_ph_kqf")
    sizes = sorted({max(1, round(f * len(pairs))) for f in context.budget.settings["fig6_fractions"]})
    return {
        "fig6": {
            "sizes": sizes,
            "pairs": len(pairs),
            "tdf": vocabulary_coverage(pairs, sizes, "tdf"),
            "random": vocabulary_coverage(pairs, sizes, "random", seeds=(0, 1, 2)),
            "vocabulary": len(vocabulary(pairs["question"])),
        }
    }


def fig5(context: RunContext) -> dict[str, Any]:
    """Fig. 5: CopyNet trained on every T_L (runner's :func:`train_and_score`, persisted and resumed like
    the table's runs), T_0-test ROUGE-L and BLEU per (variant, L)."""
    import datasets

    settings = context.budget.settings
    if not settings.get("fig5"):
        return {}
    fold = context.folds[0]
    synthetic = fold.extras["synthetic"]
    budget = dataclasses.replace(
        context.budget, training_overrides={**context.budget.training_overrides, **settings["fig5_training"]}
    )
    out = context.out_dir
    if out is None:
        raise ValueError("ding2018 fig5: the runner gives no output folder to persist the runs in")
    done = _load_records(out)
    curves: dict[str, dict[str, list[dict[str, float]]]] = {}
    started = time.time()
    for variant, size, run, pairs in fig5_training_sets(
        synthetic, settings["fig5_sizes"], settings["fig5_runs"]
    ):
        fold_id = f"{variant}-L{size}"
        name = run_name(FIG5_SYSTEM.key, run, fold_id)
        if name in done:
            record = done[name]
        else:
            splits = fold.splits.copy()
            splits["train"] = pairs_split(pairs)
            splits = {k: v for k, v in splits.items() if k in ("train", "validation", "t0")}
            with quiet_console(out / "train.log"):
                data = _fold_data(context.reproduction, Fold(fold_id, datasets.DatasetDict(splits)), {})
                job = Job(FIG5_SYSTEM, run, fold_id, (FIG5_SYSTEM,))
                record = train_and_score(job, context.reproduction, budget, data, out)[0]
        scores = record["scores"]["t0"]
        curves.setdefault(variant, {}).setdefault(str(size), []).append(
            {"ROUGE-L": scores["ROUGE-L"], "BLEU": scores["BLEU"], "train_pairs": len(pairs)}
        )
    if (out / "checkpoints").is_dir() and not any((out / "checkpoints").iterdir()):
        (out / "checkpoints").rmdir()  # every run is persisted: no checkpoint is left behind
    return {
        "fig5": {
            "sizes": list(settings["fig5_sizes"]),
            "runs": curves,
            "seconds": round(time.time() - started),
        }
    }


# ---------------------------------------------------------------- analyses
def describe(context: RunContext) -> dict[str, Any]:
    """The data, vocabularies and the BLEU signature of this run."""
    data = context.data[None]
    synthetic = context.folds[0].extras["synthetic"]
    signatures = {}
    for split in TEST_SPLITS:  # the signature of each test split's references (nrefs differs)
        references = data.references(split)
        k2q_scores([refs[0] for refs in references], references)
        signatures[split] = BLEU_SIGNATURE[0]
    pairs = synthetic.synthetic_set("par_ph_kqf")
    ranks = pairs["kqf_rank"]
    tbm = [r for r in context.records if r["system"] == "tbm"]
    return {
        "question_corpus": synthetic.corpus.stats | {"used": len(synthetic.questions)},
        "synthetic_pairs": len(pairs),
        "kqf_rank1_share": sum(r == 1 for r in ranks) / max(len(ranks), 1),
        "vocab_size": len(data.tokenizer),
        "output_vocab_size": data.state["output_vocab_size"],
        "bleu_signature": signatures["t0"],
        "bleu_signatures": signatures,
        "tbm": tbm[0].get("info", {}) if tbm else {},
    }


def _seed_means(context: RunContext, metric: str) -> dict[str, float]:
    out = {}
    for key in PAPER_ORDER:
        values = [
            r["scores"][metric.split("/")[0]][metric.split("/", 1)[1]]
            for r in context.records
            if r["system"] == key and metric.split("/")[0] in r["scores"]
        ]
        if values:
            out[key] = statistics.fmean(values)
    return out


def ordering_check(means: Mapping[str, float], order: Sequence[str] = PAPER_ORDER) -> dict[str, Any]:
    """Our ranking of the systems by ``means`` beside the paper's ``order`` (best first): which of the
    paper's adjacent pairs (a > b) hold here."""
    ours = sorted(means, key=lambda k: -means[k])
    present = [k for k in order if k in means]
    pairs = {f"{a}>{b}": means[a] > means[b] for a, b in zip(present, present[1:], strict=False)}
    return {"ours": ours, "pairs": pairs, "holds": all(pairs.values()) and bool(pairs)}


def orderings(context: RunContext) -> dict[str, Any]:
    """The paper's ordering CopyNet > AttNet > EDNet > TBM > SDM, per test split and headline metric."""
    return {
        "orderings": {
            f"{split}/{metric}": ordering_check(_seed_means(context, f"{split}/{metric}"))
            for split in TEST_SPLITS
            for metric in HEADLINE
        }
    }


# ---------------------------------------------------------------- the networks
def _training_text(budget: Budget) -> str:
    overrides = budget.training_overrides
    length = (
        f"{overrides['max_steps']} steps"
        if overrides.get("max_steps")
        else f"{overrides.get('num_train_epochs')} epochs"
    )
    return (
        f"Adam lr {overrides.get('learning_rate', 'of the preset')}, batch 64, clip 0.1, {length} at most, "
        f"best checkpoint by validation ROUGE-L (early stopping after {budget.patience} evaluations without "
        "improvement)"
    )


def models_config(context: RunContext) -> dict[str, Any]:
    budget = context.budget
    return {
        "models": {
            "sizes": dict(budget.preset_overrides.get("copynet", {})),
            "training": _training_text(budget),
            "paper": "emb 100, BiGRU 200, GRU 400, dropout 0.5, Adam 1e-4, clip 0.1",
        }
    }


def fig5_with_steps(context: RunContext) -> dict[str, Any]:
    result = fig5(context)
    if result:
        result["fig5"]["max_steps"] = context.budget.settings["fig5_training"]["max_steps"]
    return result
