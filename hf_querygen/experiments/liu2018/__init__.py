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

The analyses (the ``config`` entries) are in :mod:`hf_querygen.experiments.liu2018.analysis`, the
markdown and the figures in :mod:`hf_querygen.experiments.liu2018.report`.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from hf_querygen.baselines.keyword_query import (
    YakeKeywordExtractor,
    raw_query_keywords,
    union_keyword_queries,
)
from hf_querygen.experiments.liu2018.analysis import (
    LAMBDAS,
    describe_data,
    lambda_sweep,
    length_profiles,
    lever_table,
    word_split,
    yake_selection,
)
from hf_querygen.experiments.liu2018.report import SYSTEM_LABELS, render_markdown, write_plots
from hf_querygen.experiments.papers import paper_numbers
from hf_querygen.experiments.runner import Reproduction, run_reproduction
from hf_querygen.experiments.tables import Budget
from hf_querygen.systems import BaselineContext, System, register_systems

#: Table 2 (translation columns) and Table 3 of the paper; keys are our system and metric names
#: (data file ``liu2018/liu2018.json``)
PAPER_NUMBERS: dict[str, dict[str, float]] = paper_numbers("liu2018")
#: Table 2 retrieval columns (Baidu search; not reproducible here), kept for the record in the config
PAPER_RETRIEVAL: dict[str, dict[str, float]] = paper_numbers("liu2018", "paper_retrieval_numbers")
#: the levers for topics unseen in training (nl2kw's splits are grouped by topic: no validation or test
#: topic occurs in training), one row each (1 seed by default: screening on VALIDATION; test scored for the
#: report only); key -> (label, base system, System fields)
LEVER_LABELS = {
    "dual_decoder_word2vec": "dual decoder, in-domain vocabulary + word2vec (fine-tuned)",
    "dual_decoder_word2vec_frozen": "dual decoder, in-domain vocabulary + word2vec (frozen)",
    "dual_decoder_pretrained": "dual decoder, in-domain vocabulary + synthetic pretraining",
    "attentional_seq2seq_pretrained": "attentional seq2seq, in-domain vocabulary + synthetic pretraining",
    "sequence_labeling_pretrained": "sequence labeling, in-domain vocabulary + synthetic pretraining",
    "sequence_labeling_word2vec": "sequence labeling, in-domain vocabulary + word2vec (fine-tuned)",
}
#: min_keywords decodings (the length lever) of the dual decoder rows, scored on validation and test
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

logger = logging.getLogger(__name__)

#: greedy decoding, as the paper takes the most probable word (Sec. 3.3)
GREEDY = {"num_beams": 1, "do_sample": False}


# ---------------------------------------------------------------- baselines
def raw_query_baseline(context: BaselineContext) -> list[list[str]]:
    """Table 2 row 1: the natural-language query's own words are the keyword query."""
    return [raw_query_keywords(q) for q in context.sources()]


def yake_baseline(context: BaselineContext) -> tuple[list[list[str]], dict[str, Any]]:
    """YAKE with its (top-k, n-gram) chosen on the VALIDATION split."""
    data = context.data
    yake, grid = YakeKeywordExtractor.select_on_validation(
        data.sources("validation"), data.references("validation")
    )
    info = {"yake_selected": {"top": yake.top, "max_ngram": yake.max_ngram}, "yake_validation_f1": grid}
    return yake.batch(context.sources()), info


def union_baseline(context: BaselineContext) -> list[list[str]]:
    """ATS2S+SL / ATS2S+PN (Table 2 rows 6-7): per query the union of two systems' keywords (first
    system's words first), from their outputs on the same seed."""
    return union_keyword_queries(*[[text.split() for text in outputs] for outputs in context.inputs.values()])


# ---------------------------------------------------------------- the table
_NEURAL = {"training_preset": "liu2018-attn-seq2seq", "decoding": GREEDY, "task": "nl2kw"}
#: the warm-start row: the backbone whose tokenizer the data is prepared with (the preset's), and its schedule
#: under the full budget (Budget.own_recipe): AdamW 1e-4 (the bert2bert training preset), batch 32, 600
#: steps (~3.5 epochs of nl2kw train; a step costs ~2.6 CPU-seconds at 1 thread, ~26 minutes on one core), the
#: best checkpoint by validation loss every 100 steps
WARM_START_DATA = {"backbone": "sentence-transformers/all-MiniLM-L6-v2"}
WARM_START_TRAINING = {
    "max_steps": 600,
    "eval_strategy": "steps",
    "eval_steps": 100,
    "save_strategy": "steps",
    "save_steps": 100,
    "logging_steps": 50,
}
#: the warm-started tagger's own recipe (Budget.own_recipe): 4 epochs of 5.5K questions at the rate of
#: lin2017's warm-started tagger, the epoch of lowest validation loss kept
WARM_START_TAGGER_TRAINING = {"learning_rate": 1e-4, "num_train_epochs": 4}
_IN_DOMAIN = {"vocabulary": "in-domain"}
#: the levers as System fields (prepare_options / train_options)
#: the table row of the target-order lever (its target order alone); the other levers are screening rows
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
            # a tagger labels the question's words: no decoding settings to pass
            **{**_NEURAL, "decoding": {}},
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
        # the levers for unseen topics: the dual decoder with source/frequency target order, the same
        # with every lever that helped alone on validation, each also decoded with the training length
        # prior
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
        # not in the paper: BERT2BERT (Rothe et al. TACL 2020) warm-started from all-MiniLM-L6-v2
        # (models._warm_start) writing the keyword query in word pieces, greedy as the other rows
        System(
            "liu2018/warm_start",
            "nl2kw",
            SYSTEM_LABELS["warm_start"],
            preset="bert2bert",
            decoding=GREEDY,
            cost=4,
            prepare_options=WARM_START_DATA,
            training_overrides=WARM_START_TRAINING,
        ),
        # not in the paper: a token classifier warm-started from the same backbone that tags each question
        # word KEYWORD or not (an extractive model: it cannot add a word the question lacks)
        System(
            "liu2018/warm_start_tagger",
            "nl2kw",
            SYSTEM_LABELS["warm_start_tagger"],
            preset="liu2018-warm-start-tagger",
            decoding={},
            evaluate_on=("test", "validation"),  # validation: the README's rule picks a default on it
            cost=2,
            prepare_options=WARM_START_DATA,
            training_overrides=WARM_START_TAGGER_TRAINING,
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
    """The levers for unseen topics (:data:`LEVERS`), each scored on validation and test with seeds
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
    own_recipe=("warm_start", "warm_start_tagger"),
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
    # the warm-started BERT2BERT (49M parameters): a few steps of its own rate
    row_training={
        "warm_start": {
            "max_steps": 6,
            "learning_rate": 1e-4,
            "warmup_steps": 0,
            "per_device_train_batch_size": 8,
            "eval_strategy": "steps",
            "eval_steps": 6,  # one evaluation: each took 8.5 s of its 26 s
            "save_strategy": "steps",
            "save_steps": 6,
        },
        # the warm-started tagger: 25 steps of the subset (one epoch, 63 steps, took 53 s) at its
        # fine-tuning rate, not the RNNs' 3e-3
        "warm_start_tagger": {
            "max_steps": 25,
            "learning_rate": 1e-4,
            "eval_strategy": "steps",
            "eval_steps": 25,
            "save_strategy": "steps",
            "save_steps": 25,
        },
    },
    # the synthetic pairs take about 10 minutes to build the first time: not in a smoke run
    skip=("dual_decoder_plus", "dual_decoder_plus_minlen"),
)

#: the full budget for the warm-started row and the rows it is measured against (the raw question, YAKE):
#: the same data, recipe and scoring as "full", 3 seeds, without the hours of the from-scratch networks
WARM_START_BUDGET = dataclasses.replace(
    FULL_BUDGET,
    name="warm_start",
    skip=tuple(
        s.key for s in SYSTEMS if s.key not in ("warm_start", "warm_start_tagger", "raw_query", "yake")
    ),
    settings={**FULL_BUDGET.settings, "lambda_sweep": False, "levers": False},
    # a BERT2BERT seed costs 26-66 min at 1 thread on 2 CPU cores; its other seeds belong in a GPU run
    seeds_per_system={"warm_start": 1},
)


REPRODUCTION = Reproduction(
    name="liu2018",
    task="nl2kw",
    corpus="nl2kw",
    corpus_config="en",
    systems=SYSTEMS,
    paper_numbers=PAPER_NUMBERS,
    table_metrics=("precision", "recall", "f1"),
    budgets={"full": FULL_BUDGET, "quick": QUICK_BUDGET, "warm_start": WARM_START_BUDGET},
    train_budget="full",  # `hf-querygen train --system` trains this budget's recipe (the table's)
    extra_systems=extra_systems,
    analyses=(describe_data, yake_selection, lambda_sweep, length_profiles, lever_table, word_split),
    render_markdown=render_markdown,
    plots=write_plots,
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
