"""Reproduction of Liu et al. (CIKM'18) Tables 2-3 and Figs. 4-5 on the ``nl2kw`` corpus.

``hf-querygen reproduce liu2018 [--quick] [--seeds N]`` trains every system of Table 2 (plus YAKE and
Song'17's Luong-local attention as extra rows) on the same data, splits and tokenisation, decodes the
test split greedily (the paper takes the most probable word, Sec. 3.3), and writes
``results/liu2018/``: ``results.json`` (the project's one format, ``"dual_decoder"`` = the paper's
model), ``results.md`` (our numbers beside the paper's), ``lambda_sweep.png`` (Fig. 4, on the
VALIDATION split) and ``f1_by_length.png`` (Fig. 5).

What differs from the paper, by necessity: the corpus (English TREC / QALD / UQV100 / EPIC-QA pairs,
not the unreleased Baidu Knows set; 5.5k training pairs instead of ~8k), no pre-trained word2vec
embeddings (random initialisation), TF-IDF keyword order computed from the pairs themselves (Sec. 3.1
uses retrieved documents), the retrieval columns of Table 2 (they need the Baidu search engine) are
not reproduced, and the epoch budget is capped so the whole run fits 30 minutes on 2 CPU cores
(early stopping on validation loss within that cap, as the paper does).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from pathlib import Path
from typing import Any

from hf_querygen.experiments.papers import paper_numbers
from hf_querygen.experiments.runner import Reproduction, run_reproduction
from hf_querygen.experiments.tables import Budget, RunContext
from hf_querygen.systems import BaselineContext, System, register_systems

#: Table 2 (translation columns) and Table 3 of the paper; keys are our system and metric names
#: (data file ``papers/liu2018.json``)
PAPER_NUMBERS: dict[str, dict[str, float]] = paper_numbers("liu2018")
#: Table 2 retrieval columns (Baidu search; not reproducible here), kept for the record in the config
PAPER_RETRIEVAL: dict[str, dict[str, float]] = paper_numbers("liu2018", "paper_retrieval_numbers")
#: Fig. 4 of the paper: F1 on the development set peaks at lambda = 0.5 (values only drawn, not printed)
LAMBDAS = (0.3, 0.4, 0.5, 0.6, 0.7)

SYSTEM_LABELS = {
    "raw_query": "1 Raw query",
    "vanilla_seq2seq": "2 Vanilla seq2seq",
    "attentional_seq2seq": "3 Attentional seq2seq (Bahdanau)",
    "luong_local_seq2seq": "3b Attentional seq2seq, Luong local-p (Song'17)",
    "sequence_labeling": "4 Sequence labeling (BiLSTM)",
    "pointer_network": "5 Pointer network",
    "ats2s_sl": "6 ATS2S + SL",
    "ats2s_pn": "7 ATS2S + PN",
    "joint_ats2s_sl": "8 Joint ATS2S + SL",
    "dual_decoder": "9 Dual decoder (Liu'18)",
    "yake": "extra: YAKE (unsupervised)",
    "dual_decoder_natural_order": "extra: dual decoder, source/frequency order",
    "dual_decoder_natural_order_minlen": "extra: dual decoder, source/frequency order + length prior",
    "dual_decoder_plus": "extra: dual decoder + order, in-domain vectors, synthetic pretraining",
    "dual_decoder_plus_minlen": "extra: dual decoder + order, vectors, pretraining + length prior",
}
#: issue 13's levers, one row each (1 seed by default: screening on VALIDATION; test scored for the
#: report only); key -> (label, base system, System fields)
LEVER_LABELS = {
    "dual_decoder_word2vec": "dual decoder, in-domain vocabulary + word2vec (fine-tuned)",
    "dual_decoder_word2vec_frozen": "dual decoder, in-domain vocabulary + word2vec (frozen)",
    "dual_decoder_pretrained": "dual decoder, in-domain vocabulary + synthetic pretraining",
    "attentional_seq2seq_pretrained": "attentional seq2seq, in-domain vocabulary + synthetic pretraining",
    "sequence_labeling_pretrained": "sequence labeling, in-domain vocabulary + synthetic pretraining",
    "sequence_labeling_word2vec": "sequence labeling, in-domain vocabulary + word2vec (fine-tuned)",
}
#: min_keywords decodings (issue 13, lever 4) of the dual decoder rows, scored on validation and test
LENGTH_DECODINGS = {
    "minlen_prior": {"min_keywords": {"prior": 1.0}},
    "minlen_prior0.8": {"min_keywords": {"prior": 0.8}},
    "minlen_prior1.2": {"min_keywords": {"prior": 1.2}},
    "minlen2": {"min_keywords": 2},
    "gen1": {"min_generated": 1},
}
NEURAL_SYSTEMS = (
    "vanilla_seq2seq",
    "attentional_seq2seq",
    "luong_local_seq2seq",
    "sequence_labeling",
    "pointer_network",
    "joint_ats2s_sl",
    "dual_decoder",
)
#: Fig. 5 buckets over the number of normalised words of the natural-language query
LENGTH_BIN_EDGES = (1, 6, 9, 12, 16, 21)

logger = logging.getLogger(__name__)

MAX_SOURCE_LENGTH = 64
MAX_TARGET_LENGTH = 16
#: greedy decoding, as the paper takes the most probable word (Sec. 3.3)
GREEDY = {"num_beams": 1, "do_sample": False}


# ---------------------------------------------------------------- baselines
def raw_query_baseline(context: BaselineContext) -> list[list[str]]:
    """Table 2 row 1: the natural-language query's own words are the keyword query."""
    from hf_querygen.baselines.keyword_query import raw_query_keywords

    return [raw_query_keywords(q) for q in context.sources()]


def yake_baseline(context: BaselineContext) -> tuple[list[list[str]], dict[str, Any]]:
    """YAKE with its (top-k, n-gram) chosen on the VALIDATION split."""
    from hf_querygen.baselines.keyword_query import YakeKeywordExtractor

    data = context.data
    yake, grid = YakeKeywordExtractor.select_on_validation(
        data.sources("validation"), data.references("validation")
    )
    info = {"yake_selected": {"top": yake.top, "max_ngram": yake.max_ngram}, "yake_validation_f1": grid}
    return yake.batch(context.sources()), info


def union_baseline(context: BaselineContext) -> list[list[str]]:
    """ATS2S+SL / ATS2S+PN (Table 2 rows 6-7): per query the union of two systems' keywords (first
    system's words first), from their outputs on the same seed."""
    from hf_querygen.baselines.keyword_query import union_keyword_queries

    return union_keyword_queries(*[[text.split() for text in outputs] for outputs in context.inputs.values()])


# ---------------------------------------------------------------- the table
_NEURAL = {"training_preset": "liu2018-attn-seq2seq", "decoding": GREEDY, "task": "nl2kw"}
_IN_DOMAIN = {"vocabulary": "in-domain"}
#: the levers as System fields (prepare_options / train_options); issue 13
#: the table row of lever 3 (its target order alone); the other levers are screening rows
NATURAL_ORDER: dict[str, Any] = {"prepare_options": {"keyword_order": "natural"}}
LEVERS: dict[str, dict[str, Any]] = {
    "dual_decoder_word2vec": {
        "preset": "liu2018-dual-decoder",
        "prepare_options": _IN_DOMAIN,
        "train_options": {"word_vectors": "in-domain-word2vec"},
    },
    "dual_decoder_word2vec_frozen": {
        "preset": "liu2018-dual-decoder",
        "prepare_options": _IN_DOMAIN,
        "train_options": {"word_vectors": "in-domain-word2vec", "freeze_embeddings": True},
    },
    "dual_decoder_pretrained": {
        "preset": "liu2018-dual-decoder",
        "prepare_options": _IN_DOMAIN,
        "train_options": {"pretrain_on": "k2q-synthetic", "pretrain_steps": 400},
    },
    "attentional_seq2seq_pretrained": {
        "preset": "liu2018-attn-seq2seq",
        "prepare_options": _IN_DOMAIN,
        "train_options": {"pretrain_on": "k2q-synthetic", "pretrain_steps": 400},
    },
    "sequence_labeling_pretrained": {
        "preset": "liu2018-sequence-labeling",
        "prepare_options": _IN_DOMAIN,
        "train_options": {"pretrain_on": "k2q-synthetic", "pretrain_steps": 400},
    },
    "sequence_labeling_word2vec": {
        "preset": "liu2018-sequence-labeling",
        "prepare_options": _IN_DOMAIN,
        "train_options": {"word_vectors": "in-domain-word2vec"},
    },
}
#: the dual decoder with every lever that beat the dual decoder alone on VALIDATION (1 seed; NOTES.md)
PLUS: dict[str, Any] = {
    "prepare_options": {"keyword_order": "natural", "vocabulary": "in-domain"},
    "train_options": {
        "word_vectors": "in-domain-word2vec",
        "pretrain_on": "k2q-synthetic",
        "pretrain_steps": 400,
    },
}
#: its length control, chosen on VALIDATION among LENGTH_DECODINGS
PLUS_DECODING: dict[str, Any] = {"min_keywords": {"prior": 1.0}}

SYSTEMS = register_systems(
    [
        System("liu2018/raw_query", "nl2kw", SYSTEM_LABELS["raw_query"], baseline=raw_query_baseline),
        System(
            "liu2018/vanilla_seq2seq",
            label=SYSTEM_LABELS["vanilla_seq2seq"],
            preset="liu2018-seq2seq",
            **_NEURAL,
        ),
        System(
            "liu2018/attentional_seq2seq",
            label=SYSTEM_LABELS["attentional_seq2seq"],
            preset="liu2018-attn-seq2seq",
            cost=3,
            **_NEURAL,
        ),
        # Song'17's architecture under Liu'18's shared training settings (Sec. 5.1: "also used in the
        # other models")
        System(
            "liu2018/luong_local_seq2seq",
            label=SYSTEM_LABELS["luong_local_seq2seq"],
            preset="song2017",
            preset_overrides={"dropout": 0.4},
            cost=3,
            **_NEURAL,
        ),
        System(
            "liu2018/sequence_labeling",
            label=SYSTEM_LABELS["sequence_labeling"],
            preset="liu2018-sequence-labeling",
            **_NEURAL,
        ),
        System(
            "liu2018/pointer_network",
            label=SYSTEM_LABELS["pointer_network"],
            preset="liu2018-pointer-network",
            **_NEURAL,
        ),
        System(
            "liu2018/ats2s_sl",
            "nl2kw",
            SYSTEM_LABELS["ats2s_sl"],
            baseline=union_baseline,
            inputs=("attentional_seq2seq", "sequence_labeling"),
            deterministic=False,
        ),
        System(
            "liu2018/ats2s_pn",
            "nl2kw",
            SYSTEM_LABELS["ats2s_pn"],
            baseline=union_baseline,
            inputs=("attentional_seq2seq", "pointer_network"),
            deterministic=False,
        ),
        System(
            "liu2018/joint_ats2s_sl",
            label=SYSTEM_LABELS["joint_ats2s_sl"],
            preset="liu2018-joint",
            cost=3,
            **_NEURAL,
        ),
        System(
            "liu2018/dual_decoder",
            label=SYSTEM_LABELS["dual_decoder"],
            preset="liu2018-dual-decoder",
            evaluate_on=("test", "validation"),  # validation: the lambda = 0.5 point of Fig. 4
            cost=3,
            **_NEURAL,
        ),
        System("liu2018/yake", "nl2kw", SYSTEM_LABELS["yake"], baseline=yake_baseline),
        # issue 13: the dual decoder with source/frequency target order (lever 3), the same with every
        # lever that helped alone on validation, each also decoded with the training length prior
        System(
            "liu2018/dual_decoder_natural_order",
            label=SYSTEM_LABELS["dual_decoder_natural_order"],
            preset="liu2018-dual-decoder",
            evaluate_on=("test", "validation"),
            cost=3,
            **_NEURAL,
            **NATURAL_ORDER,
        ),
        System(
            "liu2018/dual_decoder_natural_order_minlen",
            "nl2kw",
            SYSTEM_LABELS["dual_decoder_natural_order_minlen"],
            decodes_model_of="dual_decoder_natural_order",
            decoding={**GREEDY, **PLUS_DECODING},
            evaluate_on=("test", "validation"),
        ),
        System(
            "liu2018/dual_decoder_plus",
            label=SYSTEM_LABELS["dual_decoder_plus"],
            preset="liu2018-dual-decoder",
            evaluate_on=("test", "validation"),
            cost=4,
            **_NEURAL,
            **PLUS,
        ),
        System(
            "liu2018/dual_decoder_plus_minlen",
            "nl2kw",
            SYSTEM_LABELS["dual_decoder_plus_minlen"],
            decodes_model_of="dual_decoder_plus",
            decoding={**GREEDY, **PLUS_DECODING},
            evaluate_on=("test", "validation"),
        ),
    ]
)


def lambda_sweep_systems(budget: Budget, seeds: int) -> list[tuple[System, list[int]]]:
    """Fig. 4: the dual decoder with every other lambda (Eq. 13), scored on VALIDATION only (lambda =
    0.5 comes from the main runs); seeds 0 .. ``sweep_seeds - 1``."""
    if not budget.settings.get("lambda_sweep", True):
        return []
    sweep_seeds = list(range(min(int(budget.settings.get("sweep_seeds", 1)), seeds)))
    return [
        (
            System(
                f"liu2018/dual_decoder_lambda{lam}",
                label=f"dual decoder, lambda {lam}",
                preset="liu2018-dual-decoder",
                preset_overrides={"loss_lambda": lam},
                evaluate_on=("validation",),
                in_table=False,
                cost=3,
                **_NEURAL,
            ),
            sweep_seeds,
        )
        for lam in LAMBDAS
        if lam != 0.5
    ]


def lever_systems(budget: Budget, seeds: int) -> list[tuple[System, list[int]]]:
    """Issue 13's levers (:data:`LEVERS`), each scored on validation and test with seeds
    0 .. ``lever_seeds - 1``, plus the :data:`LENGTH_DECODINGS` of the dual decoder and of the levers'
    dual decoders (decodings of the same trained models, validation and test)."""
    if not budget.settings.get("levers", True):
        return []
    lever_seeds = list(range(min(int(budget.settings.get("lever_seeds", 1)), seeds)))
    out: list[tuple[System, list[int]]] = []
    for key, fields in LEVERS.items():
        out.append(
            (
                System(
                    f"liu2018/{key}",
                    label=LEVER_LABELS[key],
                    evaluate_on=("validation", "test"),
                    in_table=False,
                    # the dual decoder's levers first: they decide the table's new row
                    cost=(4 if "pretrain_on" in fields.get("train_options", {}) else 3)
                    - (0 if key.startswith("dual_decoder") else 2),
                    **_NEURAL,
                    **fields,
                ),
                lever_seeds,
            )
        )
    table_rows = ("dual_decoder", "dual_decoder_natural_order")
    for base in (*table_rows, *(k for k in LEVERS if k.startswith("dual_decoder"))):
        base_seeds = list(range(seeds)) if base in table_rows else lever_seeds
        for name, decoding in LENGTH_DECODINGS.items():
            out.append(
                (
                    System(
                        f"liu2018/{base}_{name}",
                        "nl2kw",
                        f"{base}, {name}",
                        decodes_model_of=base,
                        decoding={**GREEDY, **decoding},
                        evaluate_on=("validation", "test"),
                        in_table=False,
                    ),
                    base_seeds,
                )
            )
    return out


def extra_systems(budget: Budget, seeds: int) -> list[tuple[System, list[int]]]:
    return lambda_sweep_systems(budget, seeds) + lever_systems(budget, seeds)


#: the paper's settings: 12-epoch cap with early stopping on validation loss (patience 2), 3 seeds
FULL_BUDGET = Budget(
    "full",
    seeds=3,
    patience=2,
    training_overrides={"num_train_epochs": 12},
    settings={"lambda_sweep": True, "sweep_seeds": 1, "levers": True, "lever_seeds": 1},
)
_NO_DECODER_HIDDEN_SIZE = (
    "sequence_labeling",
    "pointer_network",
    "dual_decoder",
    "dual_decoder_natural_order",
    "dual_decoder_plus",
)
#: minutes on 2 cores: a training subset, smaller models at a higher rate, no lambda sweep
QUICK_BUDGET = Budget(
    "quick",
    seeds=1,
    max_train=2000,
    max_validation=200,
    max_test=300,
    patience=None,
    training_overrides={"num_train_epochs": 6, "learning_rate": 3e-3},
    preset_overrides={
        key: {
            "embedding_size": 32,
            "hidden_size": 64,
            # the dual decoder's config has no decoder_hidden_size (its decoders share hidden_size)
            **({} if key in _NO_DECODER_HIDDEN_SIZE else {"decoder_hidden_size": 64}),
        }
        for key in (
            "vanilla_seq2seq",
            "attentional_seq2seq",
            "luong_local_seq2seq",
            "sequence_labeling",
            "pointer_network",
            "joint_ats2s_sl",
            "dual_decoder",
            "dual_decoder_natural_order",
            "dual_decoder_plus",
        )
    },
    settings={"lambda_sweep": False, "levers": False},
    # the synthetic pairs take about 10 minutes to build the first time: not in a smoke run
    skip=("dual_decoder_plus", "dual_decoder_plus_minlen"),
)


# ---------------------------------------------------------------- analyses
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
    """Issue 13: validation and test P/R/F1 and Table 3 recalls (mean ± std over the seeds run) of every
    trained row, lever and length decoding; validation decides, test is only reported."""
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
    """Issue 13: F1 on test / validation queries split by whether the query's topic is seen in TRAIN.

    nl2kw's splits are grouped by topic, so no validation or test topic id occurs in training (all
    are "unseen topics"); the informative split is lexical: a query is "seen words" when every gold
    keyword word occurs in some TRAINING keyword query, else "unseen words"."""
    from hf_querygen.text import normalize_for_matching

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


def _plots(document: dict, out: Path) -> None:
    config = document["config"]
    plot_lambda_sweep(config["lambda_sweep_validation_f1"], out / "lambda_sweep.png")
    plot_f1_by_length(config["f1_by_length_test"], out / "f1_by_length.png")


REPRODUCTION = Reproduction(
    name="liu2018",
    task="nl2kw",
    corpus="nl2kw",
    corpus_config="en",
    systems=SYSTEMS,
    paper_numbers=PAPER_NUMBERS,
    table_metrics=("precision", "recall", "f1"),
    budgets={"full": FULL_BUDGET, "quick": QUICK_BUDGET},
    train_budget="full",  # `hf-querygen train --system` trains this budget's recipe (the table's)
    extra_systems=extra_systems,
    analyses=(describe_data, yake_selection, lambda_sweep, length_profiles, lever_table, word_split),
    render_markdown=lambda document: render_markdown(document),
    plots=_plots,
    config={
        "decoding": "greedy, [UNK] allowed (dropped afterwards)",
        "training": "Adam lr 1e-3, batch 64, grad clip 5, dropout 0.4, emb 60, LSTM 128, early stopping on "
        "validation loss (Liu'18 Sec. 5.1) within the epoch cap",
        "metric_averaging": "precision/recall/f1 = mean over test queries; pooled_* = micro over all "
        "keywords; recall_extractive/generative/total pooled over gold words (Table 3)",
        "paper_retrieval_numbers_not_reproduced": PAPER_RETRIEVAL,
    },
)


def run(
    out_dir: str | Path = "results/liu2018",
    quick: bool = False,
    seeds: int | None = None,
    data_dir: str | Path | None = None,
    workers: int = 2,
    **runner_options: Any,
) -> dict:
    """Train and evaluate every system through :func:`hf_querygen.experiments.runner.run_reproduction`
    (results.json / results.md / the two plots in ``out_dir``; ``runner_options``: ``save_models``,
    ``resume``, ``overwrite``, ``progress``)."""
    return run_reproduction(REPRODUCTION, out_dir, quick, seeds, data_dir, workers, **runner_options)


def write_report(document: dict, out_dir: str | Path) -> Path:
    """results.json, results.md and the two plots, all from ``document`` alone (so a finished run's
    report can be re-rendered: ``write_report(json.load(open("results.json")), out_dir)``)."""
    from hf_querygen.experiments._report import write_results

    out = write_results(document, out_dir, render_markdown(document))
    config = document["config"]
    plot_lambda_sweep(config["lambda_sweep_validation_f1"], out / "lambda_sweep.png")
    plot_f1_by_length(config["f1_by_length_test"], out / "f1_by_length.png")
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


# ---------------------------------------------------------------- report
def render_markdown(document: dict) -> str:
    """Table 2 (translation columns) and Table 3 in the paper's layout, ours (mean ± std over seeds)
    beside the paper's; the claim check; the lambda sweep and length buckets as small tables."""
    from hf_querygen.experiments._report import markdown_table

    systems = [s for s in SYSTEM_LABELS if s in document["systems"]]
    config = document["config"]
    lines = [
        "# Liu et al. (CIKM'18) on nl2kw: Tables 2-3, Figs. 4-5",
        "",
        f"Corpus nl2kw/en, splits {config['split_sizes']}; {config['seeds']} seed(s); greedy decoding; "
        f"vocabulary {config['vocab_size']}, generator output vocabulary {config['output_vocab_size']}. "
        f"{'QUICK smoke run: numbers are not meaningful. ' if config['quick'] else ''}"
        "Paper numbers are on the Chinese Baidu Knows corpus; ours on English TREC/QALD/UQV100/EPIC-QA "
        "pairs.",
        "",
        "## Table 2: translation performance on the test split",
        "",
        "P/R/F1 are means over test queries (the paper does not say; pooled micro averages in results.json).",
        "",
        markdown_table(document, ["precision", "recall", "f1"], systems, SYSTEM_LABELS),
        "## Table 3: recall on extractive, generative and all gold keywords (pooled)",
        "",
        markdown_table(
            document, ["recall_extractive", "recall_generative", "recall_total"], systems, SYSTEM_LABELS
        ),
        "## Pooled (micro) P/R/F1",
        "",
        markdown_table(document, ["pooled_precision", "pooled_recall", "pooled_f1"], systems, SYSTEM_LABELS),
        claim_check(document),
        "## Fig. 4: lambda sweep (validation F1, per-query mean; see lambda_sweep.png)",
        "",
        "Every lambda is trained with seed 0 (the curve); lambda = 0.5 also has the main runs' other seeds.",
        "",
        "| lambda | F1 (validation), seed 0 | mean ± std over all runs | runs |",
        "|---|---|---|---|",
    ]
    for lam, values in config["lambda_sweep_validation_f1"].items():
        if not values:
            continue
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        lines.append(
            f"| {lam} | {values[0]:.3f} | {statistics.fmean(values):.3f} ± {spread:.3f} | {len(values)} |"
        )
    lines += ["", "## Fig. 5: F1 by query length in words (test; see f1_by_length.png)", ""]
    profiles = config["f1_by_length_test"]
    buckets = [row["bucket"] for row in next(iter(profiles.values()))]
    counts = [row["n"] for row in next(iter(profiles.values()))]
    lines.append(
        "| system | " + " | ".join(f"{b} words (n={n})" for b, n in zip(buckets, counts, strict=True)) + " |"
    )
    lines.append("|---|" + "---|" * len(buckets))
    for system in systems:
        cells = [f"{row['f1']:.3f}" for row in profiles[system]]
        lines.append(f"| {SYSTEM_LABELS[system]} | " + " | ".join(cells) + " |")
    lines += ["", levers_markdown(document)]
    lines += ["", f"Timings (s): {json.dumps(config['timings_s'])}", ""]
    return "\n".join(lines)


def levers_markdown(document: dict) -> str:
    """Issue 13: every trained row, lever and length decoding on VALIDATION (what decides) and test
    (reported only), with Table 3's recalls and the F1 split by seen / unseen keyword words."""
    config = document["config"]
    levers = config.get("levers")
    if not levers:
        return ""
    split_f1 = config.get("f1_by_seen_words", {})
    counts = config.get("seen_words_counts", {}).get("test", {})

    def cell(value: dict | None) -> str:
        if not value or value.get("n", 0) == 0:
            return "-"
        return f"{value['mean']:.3f} ± {value['std']:.3f}" if value["n"] > 1 else f"{value['mean']:.3f}"

    lines = [
        "## Issue 13: levers for unseen topics (validation decides; test only reported)",
        "",
        "Every lever is its own row; n = seeds. R ext / R gen = recall on extractive / generative gold "
        "words (Table 3, pooled). Test F1 is split by whether every gold keyword word occurs in a training "
        f"keyword query (seen words: {counts.get('seen', '?')} test queries, unseen: "
        f"{counts.get('unseen', '?')}); no validation or test topic id occurs in training "
        f"({config.get('topic_seen_counts')}).",
        "",
        "| row | n | F1 validation | F1 test | R test | R ext test | R gen test | F1 test, seen words "
        "| F1 test, unseen words |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(levers, key=lambda k: -levers[k]["validation"]["f1"]["mean"])
    for key in order:
        val, test = levers[key]["validation"], levers[key].get("test", {})
        parts = split_f1.get(key, {}).get("test", {})
        lines.append(
            f"| {key} | {val['f1']['n']} | {cell(val['f1'])} | {cell(test.get('f1'))} | "
            f"{cell(test.get('recall'))} | {cell(test.get('recall_extractive'))} | "
            f"{cell(test.get('recall_generative'))} | {cell(parts.get('seen'))} | "
            f"{cell(parts.get('unseen'))} |"
        )
    return "\n".join(lines) + "\n"


def render_levers_run(document: dict, previous: dict) -> str:
    """results.md of a run of the new rows only (issue 13): this run's rows beside the rows of an
    earlier full run (``previous``, a results.json document, e.g. the committed 3-seed table), the goal
    check on test F1 and the lever table."""
    from hf_querygen.experiments._report import markdown_table

    config = document["config"]

    def seeds(runs: dict) -> int:
        return int(runs.get("f1", {}).get("n", 0))

    # a row of this run replaces the earlier run's only when it has at least as many seeds
    new = sorted(
        k
        for k, runs in document["systems"].items()
        if k not in previous["systems"] or seeds(runs) >= seeds(previous["systems"][k])
    )
    merged = {**previous, "systems": {**previous["systems"], **{k: document["systems"][k] for k in new}}}
    systems = [s for s in SYSTEM_LABELS if s in merged["systems"]]
    metrics = ["precision", "recall", "f1", "recall_extractive", "recall_generative"]
    lines = [
        "# Liu et al. (CIKM'18) on nl2kw: issue 13's levers",
        "",
        f"New rows ({', '.join(new)}) from this run: {config['seeds']} seed(s), greedy decoding, test split "
        f"{config['split_sizes']}. The other rows are the earlier full run "
        f"({previous['config'].get('seeds')} seeds, results/liu2018/results.json). Paper numbers are on "
        "Baidu Knows.",
        "",
        "## Table 2 / Table 3 on the test split",
        "",
        markdown_table(merged, metrics, systems, SYSTEM_LABELS),
        goal_check(merged),
        levers_markdown(document),
        f"Timings (s): {json.dumps(config['timings_s'])}",
        "",
    ]
    return "\n".join(lines)


def goal_check(document: dict) -> str:
    """Issue 13's goal: the best dual-decoder row beats YAKE, the raw query and every trained baseline
    on test F1 (seed means), with generative recall clearly above zero."""
    systems = document["systems"]
    dual = {k: v for k, v in systems.items() if k.startswith("dual_decoder")}
    if not dual:
        return ""
    best = max(dual, key=lambda k: dual[k]["f1"]["mean"])
    others = {k: v["f1"]["mean"] for k, v in systems.items() if not k.startswith("dual_decoder")}
    rival = max(others, key=others.get)
    ours = dual[best]["f1"]["mean"]
    generative = dual[best].get("recall_generative", {}).get("mean", float("nan"))
    verdict = "REACHED" if ours > others[rival] else f"NOT REACHED ({ours - others[rival]:+.3f} F1)"
    return (
        "\n## Goal (issue 13)\n\n"
        f"Best dual-decoder row: {best}, test F1 {ours:.3f} ± {dual[best]['f1']['std']:.3f}, generative "
        f"recall {generative:.3f}; best other row: {rival} {others[rival]:.3f}. Goal {verdict}.\n"
    )


def claim_check(document: dict) -> str:
    """The paper's claim: the dual decoder has the best F1 of all systems (0.514 vs 0.467)."""
    systems = document["systems"]
    if "dual_decoder" not in systems:
        return ""
    ours = systems["dual_decoder"]["f1"]
    others = {s: m["f1"] for s, m in systems.items() if s != "dual_decoder"}
    best_system = max(others, key=lambda s: others[s]["mean"])
    best = others[best_system]
    holds = ours["mean"] > best["mean"]
    margin = ours["mean"] - best["mean"]
    clear = holds and margin > ours["std"] + best["std"]
    verdict = (
        ("HOLDS" + (" (margin larger than the seed std)" if clear else " (within seed noise)"))
        if holds
        else "DOES NOT HOLD"
    )
    return (
        "\n## The paper's claim\n\n"
        f"Liu'18: the dual decoder beats every baseline on F1 (0.514 vs 0.467 for sequence labeling). "
        f"Here: dual decoder F1 {ours['mean']:.3f} ± {ours['std']:.3f}; best other system "
        f"{SYSTEM_LABELS.get(best_system, best_system)} {best['mean']:.3f} ± {best['std']:.3f}. "
        f"Claim {verdict} on nl2kw.\n"
    )


def _pyplot():
    from hf_querygen.experiments._report import pyplot

    return pyplot("Plotting the liu2018 figures")


def _save_figure(plt, fig, ax, xlabel: str, ylabel: str, title: str, path: Path) -> None:
    from hf_querygen.experiments._report import save_figure

    save_figure(plt, fig, ax, xlabel, ylabel, title, path)


def plot_lambda_sweep(validation_f1: dict, path: Path) -> None:
    """Fig. 4: validation F1 against lambda for seed 0 (every lambda was trained with it), plus the
    mean ± std of all seeds where there are several (lambda = 0.5, from the main runs)."""
    plt = _pyplot()
    points = sorted((float(lam), values) for lam, values in validation_f1.items() if values)
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.plot([lam for lam, _ in points], [values[0] for _, values in points], marker="o", label="seed 0")
    several = [(lam, values) for lam, values in points if len(values) > 1]
    if several:
        ax.errorbar(
            [lam for lam, _ in several],
            [statistics.fmean(v) for _, v in several],
            yerr=[statistics.stdev(v) for _, v in several],
            fmt="s",
            capsize=3,
            label=f"mean ± std ({len(several[0][1])} seeds)",
        )
    _save_figure(
        plt, fig, ax, "lambda (Eq. 13)", "F1 (validation)", "Fig. 4: dual decoder, lambda sweep", path
    )


def plot_f1_by_length(profiles: dict[str, list[dict[str, float]]], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for system in (
        "raw_query",
        "attentional_seq2seq",
        "sequence_labeling",
        "pointer_network",
        "joint_ats2s_sl",
        "dual_decoder",
    ):
        if system not in profiles:
            continue
        rows = profiles[system]
        ax.plot([r["bucket"] for r in rows], [r["f1"] for r in rows], marker="o", label=SYSTEM_LABELS[system])
    _save_figure(
        plt, fig, ax, "natural-language query length (words)", "F1 (test)", "Fig. 5: F1 by query length", path
    )
