"""Reproduction of Ding & Balog (ICTIR'18) Table 2 and Figs. 5-6: keyword query -> question.

``hf-querygen reproduce ding2018 [--quick]``:

1. builds (or reuses) the synthetic keyword-question set through :mod:`hf_querygen.synthetic`: Q and
   C_q from the wikianswers corpora, KQGM paraphrase + phrases + combination with Table 1's selected
   weights (lambda 0.1, alpha 0.1, beta 0.9), KQF over an SDM index of Q (m = 20), the TDF score
   (N = 100). Every set lives in a cache folder (``$HF_QUERYGEN_DING2018_CACHE``, default
   ``~/.cache/hf_querygen/ding2018``); ``synthesize`` resumes or reuses it and refuses a folder made
   with other settings;
2. Table 2: SDM and TBM (baseline Systems) and EDNet / AttNet / CopyNet (the ``ding2018-*`` presets,
   trained on the synthetic pairs keyword query -> question by the stock ``Seq2SeqTrainer`` through
   the runner, 3 seeds), scored on T_0 test and on the reversed nl2kw test
   (:func:`hf_querygen.tasks.k2q.k2q_scores`: ROUGE-1/2/L F1 and recall, max and avg over references,
   sacrebleu corpus BLEU);
3. Fig. 5: CopyNet trained on T_L from the Baseline / Par / Par+Ph / Par+Ph+KQF / Par+Ph+KQF+TDF sets
   for several L, scored on T_0 test; Fig. 6: the share of the synthetic vocabulary in T_L under TDF
   selection and under random selection.

Model selection is on validation only: the best checkpoint by validation ROUGE-L, the validation split
being T_0 train + validation (hand-written keyword queries, never the test split), plus the reversed
nl2kw validation split for the row trained with human pairs (``copynet_human``: synthetic pairs + the
reversed nl2kw TRAIN split). Two trivial rows give the floor: the keyword query echoed, and the keyword
query in the most frequent question frame of the training pairs. ``hf-querygen train --system
ding2018/<row>`` trains a row's recipe of the ``full`` budget (``--budget paper``: the paper's sizes,
for a GPU). What differs from
the paper, by necessity (2 shared CPU cores, 60 minutes): 51,657 questions instead of 3.17M, smaller
networks and a step budget instead of training to convergence (see ``config["models"]``), Adam at
2e-3 instead of 1e-4; each network's decoding (greedy, guards against repeated keyword words, every
keyword required, 4 beams) is chosen on validation (``K2QTask.decoding_grid``) and saved with the model.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_querygen.experiments.jobs import Job, run_name
from hf_querygen.experiments.papers import paper_numbers
from hf_querygen.experiments.runner import Reproduction
from hf_querygen.experiments.tables import Budget, Fold, RunContext
from hf_querygen.systems import BaselineContext, System, register_systems

logger = logging.getLogger(__name__)

#: Table 2 of the paper (T_0: 1,000 WikiAnswers keyword-question pairs); the paper has no nl2kw column
PAPER_NUMBERS: dict[str, dict[str, float]] = paper_numbers("ding2018")
#: the paper's ordering (Table 2), best first
PAPER_ORDER = ("copynet", "attnet", "ednet", "tbm", "sdm")
TEST_SPLITS = ("t0", "nl2kw")
HEADLINE = ("ROUGE-L", "ROUGE-1", "ROUGE-2", "BLEU")
LABELS = {
    "echo": "keyword query echoed",
    "frame": "most frequent question frame",
    "sdm": "SDM",
    "tbm": "TBM",
    "ednet": "EDNet",
    "attnet": "AttNet",
    "copynet": "CopyNet",
    "copynet_human": "CopyNet + nl2kw train pairs",
}
#: the rows of our table, in print order (the paper's five, two trivial rows, one with human pairs)
TABLE_ORDER = ("echo", "frame", "sdm", "tbm", "ednet", "attnet", "copynet", "copynet_human")
#: Fig. 5's data configurations (Sec. 6.1), in the paper's order
VARIANTS = ("baseline", "par", "par_ph", "par_ph_kqf", "par_ph_kqf_tdf")
VARIANT_LABELS = {
    "baseline": "Baseline",
    "par": "Par",
    "par_ph": "Par+Ph",
    "par_ph_kqf": "Par+Ph+KQF",
    "par_ph_kqf_tdf": "Par+Ph+KQF+TDF",
}
#: greedy decoding: the paper feeds the keyword query in and takes "the most probable question"
GREEDY = {"num_beams": 1, "do_sample": False}


# ---------------------------------------------------------------- the synthetic sets
def kqgm_config(variant: str):
    """The KQGM configuration of a Fig. 5 data variant; Table 1's selected weights (lambda 0.1 for the
    baseline model, alpha 0.1 / beta 0.9 for the paraphrase model: results/ding2018/table1.json)."""
    from hf_querygen.synthetic import KQGMConfig

    if variant not in VARIANTS:
        raise KeyError(f"ding2018: no data variant {variant!r}; variants: {VARIANTS}")
    return KQGMConfig(
        strategy="combination",
        paraphrase=variant != "baseline",
        phrases=variant not in ("baseline", "par"),
        lam=0.1,
        alpha=0.1,
        beta=0.9,
    )


def uses_kqf(variant: str) -> bool:
    """Par+Ph+KQF(+TDF) keep the best of m = 20 candidates by KQF; the others a random one (Sec. 6.1)."""
    return variant.startswith("par_ph_kqf")


def cache_dir(settings: Mapping[str, Any] | None = None) -> Path:
    """Where the synthetic sets and the index of Q live (budget setting ``cache_dir``, else
    ``$HF_QUERYGEN_DING2018_CACHE``, else ``~/.cache/hf_querygen/ding2018``)."""
    chosen = (settings or {}).get("cache_dir") or os.environ.get("HF_QUERYGEN_DING2018_CACHE")
    return Path(chosen or Path.home() / ".cache" / "hf_querygen" / "ding2018").expanduser()


@dataclasses.dataclass
class SyntheticData:
    """Q, its index, P(s) and the synthetic sets built so far (one per data variant)."""

    corpus: Any
    questions: Any
    index: Any
    length_prior: Any
    cache: Path
    tag: str
    num_proc: int | None = None
    sets: dict[str, Any] = dataclasses.field(default_factory=dict)

    def synthetic_set(self, variant: str):
        """The synthetic set of ``variant`` (built on first use, then read from the cache)."""
        from hf_querygen.synthetic import SynthesisConfig, synthesize

        name = "par_ph_kqf" if uses_kqf(variant) else variant  # +TDF is a selection of the KQF set
        if name not in self.sets:
            config = SynthesisConfig(
                kqgm=kqgm_config(name), seed=0, num_candidates=20, top_n=100, shard_size=5000,
                num_proc=self.num_proc, threads=1,
            )  # fmt: skip
            index = self.index if uses_kqf(name) else None
            self.sets[name] = synthesize(
                self.questions,
                self.cache / f"synthetic-{name}{self.tag}",
                config,
                self.length_prior,
                index,
                progress=False,
            )
        return self.sets[name]


def load_synthetic_data(data_dir: Any, settings: Mapping[str, Any]) -> SyntheticData:
    """Q (the first ``settings["questions"]`` of it in quick runs), its SDM index (built once into the
    cache) and P(s) from T_0 train."""
    from hf_querygen.retrieval import Index
    from hf_querygen.synthetic.corpus import build_question_corpus, seed_length_prior

    corpus = build_question_corpus(data_dir)
    questions = corpus.questions
    limit = settings.get("questions")
    if limit is not None:
        questions = questions.select(range(min(int(limit), len(questions))))
    tag = "" if limit is None else f"-q{limit}"
    cache = cache_dir(settings)
    cache.mkdir(parents=True, exist_ok=True)
    index_path = cache / f"index{tag}"
    if index_path.exists():  # built by an earlier run (Index.from_texts writes its folder at the end)
        index = Index.open(index_path)
    else:
        index = Index.from_texts(questions["text"], ids=questions["id"], path=index_path, show_progress=False)
    return SyntheticData(
        corpus, questions, index, seed_length_prior(data_dir), cache, tag, settings.get("num_proc")
    )


def select_top_l(pairs, size: int, selection: str, seed: int = 0):
    """T_L: the ``size`` pairs with the highest TDF score (``"tdf"``, Eq. 8) or ``size`` pairs drawn at
    random with ``seed`` (``"random"``, the paper's selection for every other configuration)."""
    from hf_querygen.errors import InvalidInputError
    from hf_querygen.synthetic import top_l

    if selection == "tdf":
        return top_l(pairs, size)
    if selection != "random":
        raise InvalidInputError(f"select_top_l: selection {selection!r} is not 'tdf' or 'random'")
    return pairs.shuffle(seed=seed).select(range(min(size, len(pairs))))


def pairs_split(pairs):
    """Synthetic pairs as a k2q training split (keyword query -> its question)."""
    from hf_querygen.tasks.k2q_data import as_training_split

    return as_training_split(pairs["keyword_query"], [[q] for q in pairs["question"]])


_SYNTHETIC: dict[Any, SyntheticData] = {}


def _synthetic(data_dir: Any, settings: Mapping[str, Any]) -> SyntheticData:
    key = (str(data_dir), json.dumps({k: settings.get(k) for k in ("questions", "cache_dir")}))
    if key not in _SYNTHETIC:
        _SYNTHETIC[key] = load_synthetic_data(data_dir, settings)
    return _SYNTHETIC[key]


def folds(task: Any, budget: Budget, data_dir: Any) -> list[Fold]:
    """One fold: train = the Par+Ph+KQF synthetic set (top ``train_pairs`` by TDF when set), validation =
    T_0 train + validation, and the test splits ``t0`` and ``nl2kw`` (capped by the budget)."""
    import datasets

    from hf_querygen.tasks.k2q_data import (
        as_training_split,
        k2q_test_sets,
        nl2kw_reversed_pairs,
        nl2kw_reversed_test,
        t0_test,
    )

    settings = budget.settings
    synthetic = _synthetic(data_dir, settings)
    pairs = synthetic.synthetic_set("par_ph_kqf")
    if settings.get("train_pairs"):
        pairs = select_top_l(pairs, int(settings["train_pairs"]), "tdf")
    seeds = datasets.concatenate_datasets([t0_test(data_dir, "train"), t0_test(data_dir, "validation")])
    splits = {
        "train": pairs_split(pairs),
        "validation": as_training_split(seeds["keywords"], seeds["references"]),
    }
    for name, ds in k2q_test_sets(data_dir).items():
        splits[name] = as_training_split(ds["keywords"], ds["references"])
    # the human pairs (reversed nl2kw TRAIN, one pair per question; its VALIDATION for selection): only
    # the rows with the prepare option human_pairs use them (K2QTask.prepare drops them otherwise)
    splits["nl2kw_train"] = nl2kw_reversed_pairs(data_dir, "train")
    human_validation = nl2kw_reversed_test(data_dir, "validation")
    splits["nl2kw_validation"] = as_training_split(
        human_validation["keywords"], human_validation["references"]
    )
    caps = {
        "validation": budget.max_validation,
        "nl2kw_validation": budget.max_validation,
        "t0": budget.max_test,
        "nl2kw": budget.max_test,
        "nl2kw_train": budget.max_train,
    }
    for split, cap in caps.items():
        if cap is not None and len(splits[split]) > cap:
            splits[split] = splits[split].shuffle(seed=0).select(range(cap))
    return [
        Fold(
            None,
            datasets.DatasetDict(splits),
            {"synthetic": synthetic, "training_metadata": synthetic_set_metadata(synthetic, pairs, settings)},
        )
    ]


def synthetic_set_metadata(synthetic: SyntheticData, pairs, settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a trained model's training JSON says about its synthetic training set: the folder (its
    dataset card is README.md there), the number of pairs, the pipeline settings and a fingerprint of
    the pairs themselves (sha1 over keyword query / question), so two trainings can be compared."""
    import hashlib

    folder = synthetic.cache / f"synthetic-par_ph_kqf{synthetic.tag}"
    digest = hashlib.sha1()
    for keyword_query, question in zip(pairs["keyword_query"], pairs["question"], strict=True):
        digest.update(f"{keyword_query}\t{question}\n".encode())
    manifest = folder / "synthesis.json"
    return {
        "synthetic_set": {
            "name": "ding2018 Par+Ph+KQF"
            + (f" top {settings['train_pairs']} by TDF" if settings.get("train_pairs") else ""),
            "path": str(folder),
            "card": str(folder / "README.md"),
            "pairs": len(pairs),
            "questions": len(synthetic.questions),
            "fingerprint": digest.hexdigest(),
            "synthesis": json.loads(manifest.read_text()) if manifest.is_file() else None,
        }
    }


# ---------------------------------------------------------------- baselines (Sec. 5.2.1)
_BASELINES: dict[Any, Any] = {}


def _sdm(context: BaselineContext):
    from hf_querygen.baselines.k2q import SDMBaseline

    synthetic = context.resources["synthetic"]
    key = ("sdm", id(synthetic))
    if key not in _BASELINES:
        q = synthetic.questions
        _BASELINES[key] = SDMBaseline(synthetic.index, q["id"], q["question"], threads=1)
    return _BASELINES[key]


def sdm_baseline(context: BaselineContext) -> list[str]:
    """SDM: the question of Q that SDM ranks first for the keyword query."""
    return _sdm(context).generate(context.sources())


def tbm_baseline(context: BaselineContext) -> tuple[list[str], dict[str, Any]]:
    """TBM (Dror et al. 2013 as the paper adapts it): templates mined from the training pairs, word2vec
    on Q, SDM where no template has the query's arity."""
    from hf_querygen.baselines.k2q import TemplateBaseline, train_word2vec

    synthetic = context.resources["synthetic"]
    train = context.data.splits["train"]
    key = ("tbm", id(synthetic), len(train))
    if key not in _BASELINES:
        vectors = train_word2vec(synthetic.questions["text"])
        _BASELINES[key] = TemplateBaseline.from_pairs(
            train["keyword_query"], train["question"], vectors, fallback=_sdm(context)
        )
    tbm = _BASELINES[key]
    outputs = tbm.generate(context.sources())
    info = {
        "tbm_templates_by_arity": {str(n): len(ts) for n, ts in tbm.templates.items()},
        f"tbm_fallbacks_{context.split}": tbm.last_fallbacks,
        "word2vec_words": len(tbm.vectors),
    }
    return outputs, info


def echo_baseline(context: BaselineContext) -> list[str]:
    """The keyword query unchanged (not in the paper: the floor every row must beat)."""
    from hf_querygen.baselines.k2q import echo_keyword_queries

    return echo_keyword_queries(context.sources())


def frame_baseline(context: BaselineContext) -> tuple[list[str], dict[str, Any]]:
    """The keyword query in the most frequent one-slot question frame of the training pairs (not in
    the paper; "what is X ?" on the synthetic pairs)."""
    from hf_querygen.baselines.k2q import FrameBaseline

    train = context.data.splits["train"]
    key = ("frame", len(train), train._fingerprint)
    if key not in _BASELINES:
        _BASELINES[key] = FrameBaseline.from_pairs(train["keyword_query"], train["question"])
    frame = _BASELINES[key]
    top = sorted(frame.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return frame.generate(context.sources()), {"frame": frame.frame, "top_frames": dict(top)}


# ---------------------------------------------------------------- the table
#: every network: the best checkpoint by validation ROUGE-L (greedy decoding of the validation split at
#: each evaluation), what the table reports, rather than by validation loss
_NEURAL = {
    "task": "k2q",
    "decoding": GREEDY,
    "evaluate_on": TEST_SPLITS,
    "train_options": {"select_on": "ROUGE-L", "selection_decoding": dict(GREEDY)},
}
SYSTEMS = register_systems(
    [
        System("ding2018/echo", "k2q", LABELS["echo"], baseline=echo_baseline, evaluate_on=TEST_SPLITS),
        System("ding2018/frame", "k2q", LABELS["frame"], baseline=frame_baseline, evaluate_on=TEST_SPLITS),
        System("ding2018/sdm", "k2q", LABELS["sdm"], baseline=sdm_baseline, evaluate_on=TEST_SPLITS),
        System("ding2018/tbm", "k2q", LABELS["tbm"], baseline=tbm_baseline, evaluate_on=TEST_SPLITS),
        System("ding2018/ednet", label=LABELS["ednet"], preset="ding2018-ednet", **_NEURAL),
        System("ding2018/attnet", label=LABELS["attnet"], preset="ding2018-attnet", cost=1.5, **_NEURAL),
        System("ding2018/copynet", label=LABELS["copynet"], preset="ding2018-copynet", cost=2, **_NEURAL),
        # not in the paper: CopyNet on the synthetic pairs plus the human pairs of the reversed nl2kw
        # TRAIN split (its validation split joins T_0's for checkpoint selection; its test is never used)
        System(
            "ding2018/copynet_human",
            label=LABELS["copynet_human"],
            preset="ding2018-copynet",
            cost=2.2,
            prepare_options={"human_pairs": True},
            **_NEURAL,
        ),
    ]
)
#: the Fig. 5 runs: CopyNet on each T_L, scored on T_0 test (trained by the fig5 analysis, not a row)
FIG5_SYSTEM = System(
    "ding2018/fig5_copynet",
    "k2q",
    "CopyNet (Fig. 5)",
    preset="ding2018-copynet",
    decoding=GREEDY,
    evaluate_on=("t0",),
    in_table=False,
)

#: the networks' sizes on a CPU (the paper: embeddings 100, BiGRU 200, GRU 400, dropout 0.5): one step of
#: batch 64 costs 0.25 s at 64/64/128, 0.52 s at these and 0.80 s at the paper's on one idle core of
#: the dev machine (measured on the nl2kw pairs, output vocabulary 3,906), so these sizes get ~5 epochs
#: of the ~58k pairs in about 45 minutes where the paper's get ~3; one size for the three networks so
#: that they differ only in attention / copying
FULL_MODEL = {"embedding_size": 100, "hidden_size": 128, "decoder_hidden_size": 256, "dropout": 0.2}
#: Fig. 5's runs keep the earlier, smaller networks (150 steps each: a comparison of data sets)
FIG5_MODEL = {"embedding_size": 64, "hidden_size": 64, "decoder_hidden_size": 128, "dropout": 0.1}
TINY_MODEL = {"embedding_size": 16, "hidden_size": 16, "decoder_hidden_size": 32, "dropout": 0.0}
#: Adam at 2e-3 (the paper: 1e-4 on 3.17M pairs), clipping 0.1 and batch 64 as the preset; 5,000 steps
#: (~5.5 epochs of the synthetic + human pairs, ~6 of the synthetic ones); every 500 steps the
#: validation split is decoded and the best checkpoint by validation ROUGE-L is kept; training stops
#: after 4 evaluations without improvement
FULL_TRAINING = {
    "max_steps": 5000,
    "learning_rate": 2e-3,
    "eval_strategy": "steps",
    "eval_steps": 500,
    "save_strategy": "steps",
    "save_steps": 500,
}
FIG5_TRAINING = {**FULL_TRAINING, "max_steps": 150, "eval_steps": 50, "save_steps": 50}
FULL_BUDGET = Budget(
    "full",
    seeds=3,
    patience=4,
    training_overrides=FULL_TRAINING,
    preset_overrides={
        **{key: FULL_MODEL for key in ("ednet", "attnet", "copynet", "copynet_human")},
        "fig5_copynet": FIG5_MODEL,
    },
    settings={
        "train_pairs": None,
        "fig5": True,
        "fig5_sizes": (5000, 45000),
        "fig5_runs": 2,
        "fig5_training": FIG5_TRAINING,
        "fig6_fractions": (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0),
        "num_proc": None,
    },
)
#: the paper's networks and optimiser (the ding2018-* presets as they are: 100 / 200 / 400, dropout 0.5,
#: Adam 1e-4, clipping 0.1), trained by epochs until validation ROUGE-L stops improving (3 epochs
#: without improvement, at most 30), 3 seeds. Meant for a CUDA machine: the stock Trainer puts the model
#: on the GPU when torch sees one (on one CPU core a seed takes hours).
PAPER_BUDGET = Budget(
    "paper",
    seeds=3,
    patience=3,
    training_overrides={"num_train_epochs": 30, "eval_strategy": "epoch", "save_strategy": "epoch"},
    preset_overrides={"fig5_copynet": FIG5_MODEL},
    settings={
        "train_pairs": None,
        "fig5": True,
        "fig5_sizes": (5000, 45000),
        "fig5_runs": 3,
        "fig5_training": FIG5_TRAINING,
        "fig6_fractions": (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0),
        "num_proc": None,
    },
)
# 100 steps: at 30 the tiny CopyNet still wrote "? ? ?" (T_0 ROUGE-L 0.000); at 100 it reaches 0.24 in ~10 s
QUICK_TRAINING = {
    "max_steps": 100,
    "learning_rate": 1e-2,
    "eval_strategy": "steps",
    "eval_steps": 50,
    "save_strategy": "steps",
    "save_steps": 50,
}
QUICK_BUDGET = Budget(
    "quick",
    seeds=1,
    max_validation=100,
    max_test=100,
    max_train=500,  # caps the human pairs (nl2kw_train); the synthetic set is capped by "questions"
    patience=None,
    training_overrides=QUICK_TRAINING,
    preset_overrides={
        key: TINY_MODEL for key in ("ednet", "attnet", "copynet", "copynet_human", "fig5_copynet")
    },
    settings={
        "questions": 1500,
        "train_pairs": None,
        "fig5": True,
        "fig5_sizes": (300, 1000),
        "fig5_runs": 1,
        "fig5_training": {**QUICK_TRAINING, "max_steps": 10, "eval_steps": 5, "save_steps": 5},
        "fig6_fractions": (0.1, 0.5, 1.0),
        "num_proc": None,
    },
)


# ---------------------------------------------------------------- Fig. 6 and Fig. 5 data
def vocabulary(texts: Sequence[str]) -> set[str]:
    """The distinct normalised words of ``texts``."""
    from hf_querygen.text import normalize_for_matching

    return {w for t in texts for w in normalize_for_matching(t).split()}


def vocabulary_coverage(
    pairs, sizes: Sequence[int], selection: str, seeds: Sequence[int] = (0,)
) -> list[float]:
    """Fig. 6: |V(T_L)| / |V(T)| for each L in ``sizes`` (V = the words of the questions), T_L chosen by
    ``selection`` (``"tdf"`` or ``"random"``; random: the mean over ``seeds``)."""
    total = len(vocabulary(pairs["question"])) or 1
    out = []
    for size in sizes:
        draws = [0] if selection == "tdf" else list(seeds)
        shares = [len(vocabulary(select_top_l(pairs, size, selection, s)["question"])) / total for s in draws]
        out.append(statistics.fmean(shares))
    return out


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


def fig5_training_sets(synthetic: SyntheticData, sizes: Sequence[int], runs: int):
    """(variant, L, run) -> T_L, for Fig. 5: random L pairs of each KQGM set (a new draw per run), the
    top L of the KQF set by TDF (deterministic: one run)."""
    for variant in VARIANTS:
        pairs = synthetic.synthetic_set(variant)
        for size in sizes:
            for run in range(1 if variant == "par_ph_kqf_tdf" else runs):
                selection = "tdf" if variant == "par_ph_kqf_tdf" else "random"
                yield variant, size, run, select_top_l(pairs, size, selection, seed=run)


def fig5(context: RunContext) -> dict[str, Any]:
    """Fig. 5: CopyNet trained on every T_L (runner's :func:`train_and_score`, persisted and resumed like
    the table's runs), T_0-test ROUGE-L and BLEU per (variant, L)."""
    import datasets

    from hf_querygen.experiments.jobs import _fold_data, _load_records, _quiet_console, train_and_score

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
            with _quiet_console(out / "train.log"):
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
    from hf_querygen.tasks.k2q import BLEU_SIGNATURE, k2q_scores

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


# ---------------------------------------------------------------- report
def render_markdown(document: dict) -> str:
    from hf_querygen.experiments._report import markdown_table

    config = document["config"]
    systems = [k for k in TABLE_ORDER if k in document["systems"]]
    models = config.get("models", {})
    lines = [
        "# Ding & Balog (ICTIR'18) on our data: Table 2, Figs. 5-6",
        "",
        f"{'QUICK smoke run: numbers are not meaningful. ' if config['quick'] else ''}"
        f"Q = {config['question_corpus'].get('used', 0):,} questions; "
        f"{config['synthetic_pairs']:,} synthetic pairs (Par+Ph+KQF, m = 20, N = 100); "
        f"{config['seeds']} seed(s); vocabulary {config['vocab_size']:,}, "
        f"decoder output vocabulary {config['output_vocab_size']:,}. Networks (the paper's: "
        f"emb 100 / BiGRU 200 / GRU 400, dropout 0.5): {json.dumps(models.get('sizes'))}, "
        f"{models.get('training')}. Splits: {json.dumps(config['split_sizes'])}.",
        "",
        *[f"- **{LABELS.get(k, k)}**: {text}" for k, text in config.get("row_provenance", {}).items()],
        "",
        "ROUGE: rouge-score F1, max over references (Eq. 10; T_0 has one reference so avg = max); BLEU: "
        f"sacrebleu `{json.dumps(config.get('bleu_signatures', config['bleu_signature']))}` (0-1). "
        "The paper's T_0 is 1,000 WikiAnswers pairs; ours "
        "is the QALD seed_pairs test split. The paper has no nl2kw column.",
        "",
        "## Table 2 on T_0 test",
        "",
        markdown_table(document, [f"t0/{m}" for m in HEADLINE], systems, LABELS, digits=4),
        "## Table 2 on the reversed nl2kw test (human keyword queries)",
        "",
        markdown_table(document, [f"nl2kw/{m}" for m in HEADLINE], systems, LABELS, digits=4),
        "## ROUGE-L recall (max over references) and avg-over-references F1",
        "",
        markdown_table(
            document,
            [f"{s}/ROUGE-L recall" for s in TEST_SPLITS] + [f"{s}/ROUGE-L avg" for s in TEST_SPLITS],
            systems,
            LABELS,
            digits=4,
        ),
        "## The paper's ordering CopyNet > AttNet > EDNet > TBM > SDM",
        "",
        "| split/metric | our ranking (best first) | pairs that hold | all hold |",
        "|---|---|---|---|",
    ]
    for key, check in config.get("orderings", {}).items():
        held = ", ".join(f"{p} {'yes' if v else 'NO'}" for p, v in check["pairs"].items())
        ranking = " > ".join(LABELS.get(k, k) for k in check["ours"])
        lines.append(f"| {key} | {ranking} | {held} | {'yes' if check['holds'] else 'NO'} |")
    lines += ["", *render_figures(config)]
    lines += ["", f"Timings (s): {json.dumps(config.get('timings_s', {}))}", ""]
    return "\n".join(lines)


def fig5_means(fig5_config: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """variant -> metric -> L -> mean over runs."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for variant, by_size in fig5_config.get("runs", {}).items():
        for size, runs in by_size.items():
            for metric in ("ROUGE-L", "BLEU"):
                out.setdefault(variant, {}).setdefault(metric, {})[size] = statistics.fmean(
                    r[metric] for r in runs
                )
    return out


def render_figures(config: Mapping[str, Any]) -> list[str]:
    lines = []
    if config.get("fig5"):
        means = fig5_means(config["fig5"])
        sizes = [str(s) for s in config["fig5"]["sizes"]]
        runs = max(len(r) for v in config["fig5"]["runs"].values() for r in v.values())
        lines += [
            "## Fig. 5: CopyNet on T_L of each data configuration (T_0 test; fig5.png)",
            "",
            f"Runs per point: {runs} (random T_L draws; TDF's T_L is deterministic). Each point trains "
            f"{config['fig5'].get('max_steps', '?')} steps (the same compute for every L).",
            "",
            "| data | "
            + " | ".join(f"ROUGE-L L={s}" for s in sizes)
            + " | "
            + " | ".join(f"BLEU L={s}" for s in sizes)
            + " |",
            "|---|" + "---|" * (2 * len(sizes)),
        ]
        for variant in VARIANTS:
            if variant not in means:
                continue
            cells = [f"{means[variant]['ROUGE-L'].get(s, float('nan')):.4f}" for s in sizes]
            cells += [f"{means[variant]['BLEU'].get(s, float('nan')):.4f}" for s in sizes]
            lines.append(f"| {VARIANT_LABELS[variant]} | " + " | ".join(cells) + " |")
        lines.append("")
    if config.get("fig6"):
        fig = config["fig6"]
        lines += [
            "## Fig. 6: share of the synthetic vocabulary in T_L (fig6.png)",
            "",
            f"Vocabulary of T (question words): {fig['vocabulary']:,} over {fig['pairs']:,} pairs.",
            "",
            "| L | TDF top-L | random L (mean of 3) |",
            "|---|---|---|",
        ]
        for size, tdf, rnd in zip(fig["sizes"], fig["tdf"], fig["random"], strict=True):
            lines.append(f"| {size:,} | {tdf:.4f} | {rnd:.4f} |")
        lines.append("")
    return lines


def _pyplot():
    from hf_querygen.experiments._report import pyplot

    return pyplot("Plotting the ding2018 figures")


def plot_fig5(fig5_config: Mapping[str, Any], path: Path) -> None:
    """Two panels, ROUGE-L and BLEU on T_0 test against L, one line per data configuration."""
    plt = _pyplot()
    means = fig5_means(fig5_config)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, metric in zip(axes, ("ROUGE-L", "BLEU"), strict=True):
        for variant in VARIANTS:
            if variant in means:
                points = sorted((int(s), v) for s, v in means[variant][metric].items())
                ax.plot(
                    [p[0] for p in points], [p[1] for p in points], marker="o", label=VARIANT_LABELS[variant]
                )
        ax.set_xlabel("training pairs L")
        ax.set_ylabel(f"{metric} (T_0 test)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 5: CopyNet by synthetic-data configuration")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_fig6(fig6_config: Mapping[str, Any], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    ax.plot(fig6_config["sizes"], fig6_config["tdf"], marker="o", label="TDF top-L")
    ax.plot(fig6_config["sizes"], fig6_config["random"], marker="s", label="random L")
    from hf_querygen.experiments._report import save_figure

    save_figure(
        plt,
        fig,
        ax,
        "training pairs L",
        "share of the vocabulary of T",
        "Fig. 6: vocabulary coverage of T_L",
        path,
    )


def _plots(document: dict, out: Path) -> None:
    config = document["config"]
    if config.get("fig5"):
        plot_fig5(config["fig5"], out / "fig5.png")
    if config.get("fig6"):
        plot_fig6(config["fig6"], out / "fig6.png")


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


def _models(context: RunContext) -> dict[str, Any]:
    budget = context.budget
    return {
        "models": {
            "sizes": dict(budget.preset_overrides.get("copynet", {})),
            "training": _training_text(budget),
            "paper": "emb 100, BiGRU 200, GRU 400, dropout 0.5, Adam 1e-4, clip 0.1",
        }
    }


def _with_fig5_steps(context: RunContext) -> dict[str, Any]:
    result = fig5(context)
    if result:
        result["fig5"]["max_steps"] = context.budget.settings["fig5_training"]["max_steps"]
    return result


REPRODUCTION = Reproduction(
    name="ding2018",
    task="k2q",
    corpus="k2q",
    systems=SYSTEMS,
    paper_numbers=PAPER_NUMBERS,
    table_metrics=tuple(f"t0/{m}" for m in HEADLINE),
    budgets={"full": FULL_BUDGET, "quick": QUICK_BUDGET, "paper": PAPER_BUDGET},
    train_budget="full",
    folds=folds,
    analyses=(describe, _models, orderings, fig6, _with_fig5_steps),
    render_markdown=render_markdown,
    plots=_plots,
    labels=LABELS,
    table_splits=TEST_SPLITS,
    prepare_options={"min_frequency": 2, "max_output_vocab_size": 4000},
    config={
        "decoding": "greedy",
        "validation": "T_0 train + validation (seed_pairs; + reversed nl2kw validation for copynet_human): "
        "the best checkpoint by validation ROUGE-L",
        "synthetic": "KQGM paraphrase + phrases + combination (lambda 0.1, alpha 0.1, beta 0.9), KQF m = 20 "
        "with SDM over Q, TDF N = 100",
    },
)
