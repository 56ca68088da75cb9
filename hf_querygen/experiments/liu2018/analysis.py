"""Liu et al. (CIKM'18) reproduction, the analyses: the ``config`` entries the runner adds to
``results.json`` after training (:class:`~hf_querygen.experiments.runner.Reproduction` ``analyses``
hooks of :mod:`hf_querygen.experiments.liu2018`): the data description, YAKE's selection, Fig. 4's
lambda sweep, Fig. 5's F1 by query length, and the lever table and seen / unseen word split."""

from __future__ import annotations

import math
import statistics
from typing import Any

from hf_querygen.experiments.tables import RunContext
from hf_querygen.text import normalize_for_matching

#: Fig. 4 of the paper: F1 on the development set peaks at lambda = 0.5 (values only drawn, not printed)
LAMBDAS = (0.3, 0.4, 0.5, 0.6, 0.7)
#: Fig. 5 buckets over the number of normalised words of the natural-language query
LENGTH_BIN_EDGES = (1, 6, 9, 12, 16, 21)

#: the nl2kw task's truncation lengths, as the data description states them
MAX_SOURCE_LENGTH = 64
MAX_TARGET_LENGTH = 16


def _runs_of(context: RunContext, key: str) -> list[dict[str, Any]]:
    return [r for r in context.records if r["system"] == key]


def describe_data(context: RunContext) -> dict[str, Any]:
    data = context.data[None]
    return {
        "corpus": "nl2kw/en",
        "vocab_size": len(data.tokenizer),
        "output_vocab_size": data.state["output_vocab_size"],
        "max_source_length": MAX_SOURCE_LENGTH,
        "max_target_length": MAX_TARGET_LENGTH,
        "batching": (
            "random batches of similar source length, in random order "
            "(hf_querygen.training.BucketedBatchSampler)"
            if context.budget.group_by_length
            else "random batches"
        ),
    }


def yake_selection(context: RunContext) -> dict[str, Any]:
    runs = _runs_of(context, "yake")
    return dict(runs[0].get("info", {})) if runs else {}


def lambda_sweep(context: RunContext) -> dict[str, Any]:
    """Validation F1 per lambda (Fig. 4); lambda = 0.5 has every seed of the main runs."""
    sweep: dict[str, list[float]] = {str(lam): [] for lam in LAMBDAS}
    for lam in LAMBDAS:
        key = "dual_decoder" if lam == 0.5 else f"dual_decoder_lambda{lam}"
        for record in sorted(_runs_of(context, key), key=lambda r: r["seed"]):
            if "validation" in record["scores"]:
                sweep[str(lam)].append(record["scores"]["validation"]["f1"])
    return {"lambda_sweep_validation_f1": sweep}


def length_profiles(context: RunContext) -> dict[str, Any]:
    """Fig. 5: seed-mean F1 per bucket of query length; and the share of empty test outputs."""
    from hf_querygen.metrics.keyword_prf import f1_by_length

    data = context.data[None]
    sources, references = data.sources("test"), data.references("test")
    profiles: dict[str, list[list[dict[str, float]]]] = {}
    empty: dict[str, list[float]] = {}
    for system in context.reproduction.systems:
        for record in sorted(_runs_of(context, system.key), key=lambda r: r["seed"]):
            outputs = record["outputs"]["test"]
            profiles.setdefault(system.key, []).append(
                f1_by_length(outputs, references, sources, LENGTH_BIN_EDGES)
            )
            empty.setdefault(system.key, []).append(
                sum(not o.split() for o in outputs) / max(len(outputs), 1)
            )
    return {
        "f1_by_length_test": _mean_length_profiles(profiles),
        "empty_prediction_rate_test": {k: round(statistics.fmean(v), 4) for k, v in empty.items()},
        "length_bin_edges_words": list(LENGTH_BIN_EDGES),
    }


def _mean_std(values: list[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values) if values else float("nan"),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def lever_table(context: RunContext) -> dict[str, Any]:
    """The levers for unseen topics: validation and test P/R/F1 and Table 3 recalls (mean ± std over
    the seeds run) of every trained row, lever and length decoding; validation decides, test is only
    reported."""
    metrics = ("f1", "precision", "recall", "recall_extractive", "recall_generative")
    scores: dict[str, dict[str, dict[str, list[float]]]] = {}
    for record in context.records:
        for split in ("validation", "test"):
            if split in record["scores"]:
                by_metric = scores.setdefault(record["system"], {}).setdefault(split, {})
                for metric in metrics:
                    by_metric.setdefault(metric, []).append(record["scores"][split][metric])
    table = {
        system: {
            split: {metric: _mean_std(values) for metric, values in by_metric.items()}
            for split, by_metric in splits.items()
        }
        for system, splits in scores.items()
        if "validation" in splits
    }
    return {"levers": table}


def word_split(context: RunContext) -> dict[str, Any]:
    """F1 on test / validation queries split by whether the query's topic is seen in TRAIN.

    nl2kw's splits are grouped by topic, so no validation or test topic id occurs in training (all
    are "unseen topics"); the informative split is lexical: a query is "seen words" when every gold
    keyword word occurs in some TRAINING keyword query, else "unseen words"."""
    data = context.data[None]
    train_topics = set(data.splits["train"]["topic_id"])
    train_words = {
        w for q in data.splits["train"]["keyword_query"] for w in normalize_for_matching(q).split()
    }
    out: dict[str, Any] = {"topic_seen_counts": {}, "seen_words_counts": {}, "f1_by_seen_words": {}}
    masks: dict[str, list[bool]] = {}
    for split in ("validation", "test"):
        topics = data.splits[split]["topic_id"]
        out["topic_seen_counts"][split] = {
            "seen": sum(t in train_topics for t in topics),
            "unseen": sum(t not in train_topics for t in topics),
        }
        masks[split] = [set(normalize_for_matching(r).split()) <= train_words for r in data.references(split)]
        out["seen_words_counts"][split] = {
            "seen": sum(masks[split]),
            "unseen": len(masks[split]) - sum(masks[split]),
        }
    per_system: dict[str, dict[str, dict[str, list[float]]]] = {}
    for record in context.records:
        for split, outputs in record["outputs"].items():
            if split not in masks:
                continue
            sources, references = data.sources(split), data.references(split)
            for part, wanted in (("seen", True), ("unseen", False)):
                rows = [i for i, m in enumerate(masks[split]) if m is wanted]
                if not rows:
                    continue
                f1 = data.task.score(
                    [outputs[i] for i in rows], [references[i] for i in rows], [sources[i] for i in rows]
                )["f1"]
                per_system.setdefault(record["system"], {}).setdefault(split, {}).setdefault(part, []).append(
                    f1
                )
    out["f1_by_seen_words"] = {
        system: {split: {part: _mean_std(v) for part, v in parts.items()} for split, parts in splits.items()}
        for system, splits in per_system.items()
    }
    return out


def _mean_length_profiles(
    lengths: dict[str, list[list[dict[str, float]]]],
) -> dict[str, list[dict[str, float]]]:
    """Seed-mean F1 per length bucket for each system."""
    out = {}
    for system, profiles in lengths.items():
        rows = []
        for buckets in zip(*profiles, strict=True):
            values = [b["f1"] for b in buckets if not math.isnan(b["f1"])]
            rows.append(
                {
                    "bucket": buckets[0]["bucket"],
                    "n": buckets[0]["n"],
                    "f1": statistics.fmean(values) if values else float("nan"),
                }
            )
        out[system] = rows
    return out
