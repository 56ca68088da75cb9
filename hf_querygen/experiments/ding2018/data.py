"""The data of the Ding & Balog (ICTIR'18) reproduction (:mod:`hf_querygen.experiments.ding2018`): the
synthetic keyword-question sets of the Fig. 5 data configurations (built once into a cache folder), the
fold of Table 2 (synthetic train pairs, T_0 validation, the T_0 and reversed nl2kw test splits, the human
pairs), what a trained model's metadata says about its training set, and the T_L selections and
vocabulary coverage of Figs. 5-6."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_querygen.errors import InvalidInputError
from hf_querygen.experiments.tables import Budget, Fold
from hf_querygen.synthetic.filters import top_l
from hf_querygen.text import normalize_for_matching

if TYPE_CHECKING:
    import datasets

logger = logging.getLogger(__name__)

#: Fig. 5's data configurations (Sec. 6.1), in the paper's order
VARIANTS = ("baseline", "par", "par_ph", "par_ph_kqf", "par_ph_kqf_tdf")
VARIANT_LABELS = {
    "baseline": "Baseline",
    "par": "Par",
    "par_ph": "Par+Ph",
    "par_ph_kqf": "Par+Ph+KQF",
    "par_ph_kqf_tdf": "Par+Ph+KQF+TDF",
}


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
    #: search threads of the keyword-query filter (SDM over Q; None: every core): most of the set's build
    #: time, and its output does not depend on them (:func:`hf_querygen.synthetic.synthesize`)
    threads: int | None = None
    sets: dict[str, Any] = dataclasses.field(default_factory=dict)

    def synthetic_set(self, variant: str, per_question: int = 1):
        """The synthetic set of ``variant`` (built on first use, then read from the cache); ``per_question``
        > 1: up to that many keyword queries per question that pass the keyword query filter (column
        ``query_number``; KQF variants only)."""
        from hf_querygen.synthetic import SynthesisConfig, synthesize

        name = "par_ph_kqf" if uses_kqf(variant) else variant  # +TDF is a selection of the KQF set
        key = name if per_question == 1 else f"{name}-kq{per_question}"
        if key not in self.sets:
            config = SynthesisConfig(
                kqgm=kqgm_config(name), seed=0, num_candidates=20, top_n=100, shard_size=5000,
                num_proc=self.num_proc, threads=self.threads, keyword_queries_per_question=per_question,
            )  # fmt: skip
            index = self.index if uses_kqf(name) else None
            self.sets[key] = synthesize(
                self.questions,
                self.cache / f"synthetic-{key}{self.tag}",
                config,
                self.length_prior,
                index,
                progress=False,
            )
        return self.sets[key]


def load_synthetic_data(data_dir: Any, settings: Mapping[str, Any]) -> SyntheticData:
    """Q (the first ``settings["questions"]`` of it in quick runs), its SDM index (built once into the
    cache) and P(s) from T_0 train."""
    from hf_querygen.retrieval import Index
    from hf_querygen.retrieval.manifest import IndexFormatError
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
    index = None
    if index_path.exists():  # built by an earlier run (Index.from_texts writes its folder at the end)
        with contextlib.suppress(IndexFormatError):  # an older format: rebuilt below
            index = Index.open(index_path)
    if index is None:
        index = Index.from_texts(
            questions["text"], ids=questions["id"], path=index_path, show_progress=False, overwrite=True
        )
    return SyntheticData(
        corpus,
        questions,
        index,
        seed_length_prior(data_dir),
        cache,
        tag,
        settings.get("num_proc"),
        settings.get("synthesis_threads"),
    )


def select_top_l(pairs, size: int, selection: str, seed: int = 0):
    """T_L: the ``size`` pairs with the highest TDF score (``"tdf"``, Eq. 8) or ``size`` pairs drawn at
    random with ``seed`` (``"random"``, the paper's selection for every other configuration)."""
    if selection == "tdf":
        return top_l(pairs, size)
    if selection != "random":
        raise InvalidInputError(f"select_top_l: selection {selection!r} is not 'tdf' or 'random'")
    return pairs.shuffle(seed=seed).select(range(min(size, len(pairs))))


def pairs_split(pairs):
    """Synthetic pairs as a k2q training split (keyword query -> its question)."""
    from hf_querygen.tasks.k2q.data import as_training_split

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

    from hf_querygen.tasks.k2q.data import EXTRA_SYNTHETIC_SPLIT, as_training_split, k2q_test_sets, t0_test

    settings = budget.settings
    # setting synthetic_pairs=False: a fold for rows that do not train on the synthetic set (the
    # question-frame row's train --system), which is then neither built nor read
    synthetic = _synthetic(data_dir, settings) if settings.get("synthetic_pairs", True) else None
    if synthetic is not None:
        pairs, train, extra_splits = _synthetic_splits(synthetic, settings)
    else:
        train, extra_splits = as_training_split([], []), {}
    # T_0's train and validation pairs: read once, their union is the validation split, and they are
    # also carried apart (below) for the rows that train on T_0's train pairs
    seed_train, seed_validation = (t0_test(data_dir, split) for split in ("train", "validation"))
    seeds = datasets.concatenate_datasets([seed_train, seed_validation])
    splits = {
        "train": train,
        "validation": as_training_split(seeds["keywords"], seeds["references"]),
        **extra_splits,
    }
    for name, ds in k2q_test_sets(data_dir).items():
        splits[name] = as_training_split(ds["keywords"], ds["references"])
    overlap_removed = _add_human_pairs(splits, data_dir, seed_train, seed_validation)
    logger.info("ding2018: human pairs removed for overlapping evaluation splits: %s", overlap_removed)
    _cap_splits(splits, budget)
    return [
        Fold(
            None,
            datasets.DatasetDict(splits),
            {
                **({"synthetic": synthetic} if synthetic is not None else {}),
                "training_metadata": {
                    **(
                        synthetic_set_metadata(synthetic, pairs, settings)
                        if synthetic is not None
                        else {"synthetic_set": None}
                    ),
                    **(
                        {"synthetic_extra_pairs": len(extra_splits[EXTRA_SYNTHETIC_SPLIT])}
                        if extra_splits
                        else {}
                    ),
                    "human_pairs_removed_for_overlap": overlap_removed,
                },
            },
        )
    ]


def _synthetic_splits(
    synthetic: SyntheticData, settings: Mapping[str, Any]
) -> tuple[datasets.Dataset, datasets.Dataset, dict[str, datasets.Dataset]]:
    """The synthetic pairs (top ``train_pairs`` by TDF when set), them as the train split, and the
    extra split of further keyword queries per question when the setting asks for them."""
    from hf_querygen.tasks.k2q.data import EXTRA_SYNTHETIC_SPLIT

    pairs = synthetic.synthetic_set("par_ph_kqf")
    if settings.get("train_pairs"):
        pairs = select_top_l(pairs, int(settings["train_pairs"]), "tdf")
    train = pairs_split(pairs)
    extra_splits = {}
    # setting keyword_queries_per_question k > 1: the further keyword queries of each question (2..k,
    # from the set built with k) carried as their own split, for the rows with the prepare option
    # synthetic_extra (K2QTask.prepare); the others drop it
    per_question = int(settings.get("keyword_queries_per_question", 1))
    if per_question > 1:
        several = synthetic.synthetic_set("par_ph_kqf", per_question)
        further = several.filter(
            lambda numbers: [n > 1 for n in numbers], input_columns="query_number", batched=True
        )
        extra_splits[EXTRA_SYNTHETIC_SPLIT] = pairs_split(further)
    return pairs, train, extra_splits


def _add_human_pairs(
    splits: dict[str, datasets.Dataset],
    data_dir: Any,
    seed_train: datasets.Dataset,
    seed_validation: datasets.Dataset,
) -> dict[str, Any]:
    """Add the human pairs (reversed nl2kw) and T_0's own train / validation pairs to ``splits``, each
    without the pairs that overlap an evaluation split; returns what was removed per split."""
    from hf_querygen.tasks.k2q.data import (
        as_training_split,
        nl2kw_reversed_pairs,
        nl2kw_reversed_test,
        without_evaluation_overlap,
    )

    # the human pairs (reversed nl2kw TRAIN, one pair per question; its VALIDATION for selection): only
    # the rows with the prepare option human_pairs use them (K2QTask.prepare drops them otherwise). The
    # nl2kw corpus holds QALD questions of T_0's validation and test splits: such pairs are removed
    # (train: against every evaluation split, by question or keyword query; validation: against the tests)
    tests = [splits[name] for name in ("t0", "nl2kw")]
    human_validation = nl2kw_reversed_test(data_dir, "validation")
    splits["nl2kw_validation"], removed_validation = without_evaluation_overlap(
        as_training_split(human_validation["keywords"], human_validation["references"]), tests, False
    )
    splits["nl2kw_train"], removed_train = without_evaluation_overlap(
        nl2kw_reversed_pairs(data_dir, "train"),
        [splits["validation"], splits["nl2kw_validation"], *tests],
    )
    # T_0's own train / validation pairs, for the rows that train on them (prepare option seed_pairs):
    # the same removal, since the nl2kw corpus holds QALD questions
    splits["seed_validation"], removed_seed_validation = without_evaluation_overlap(
        as_training_split(seed_validation["keywords"], seed_validation["references"]), tests, False
    )
    splits["seed_train"], removed_seed_train = without_evaluation_overlap(
        as_training_split(seed_train["keywords"], seed_train["references"]),
        [splits["seed_validation"], splits["nl2kw_validation"], *tests],
    )
    return {
        "nl2kw_train": removed_train,
        "nl2kw_validation": removed_validation,
        "seed_train": removed_seed_train,
        "seed_validation": removed_seed_validation,
    }


def _cap_splits(splits: dict[str, datasets.Dataset], budget: Budget) -> None:
    """Cut the splits to the budget's sizes (a seeded sample, the same in every run)."""
    caps = {
        "validation": budget.max_validation,
        "nl2kw_validation": budget.max_validation,
        "t0": budget.max_test,
        "nl2kw": budget.max_test,
        "nl2kw_train": budget.max_train,
        "seed_train": budget.max_train,
        "seed_validation": budget.max_validation,
    }
    for split, cap in caps.items():
        if cap is not None and len(splits[split]) > cap:
            splits[split] = splits[split].shuffle(seed=0).select(range(cap))


def synthetic_set_metadata(synthetic: SyntheticData, pairs, settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a trained model's training JSON says about its synthetic training set: the folder (its
    dataset card is README.md there), the number of pairs, the pipeline settings and a fingerprint of
    the pairs themselves (sha1 over keyword query / question), so two trainings can be compared."""
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


# ---------------------------------------------------------------- Fig. 6 and Fig. 5 data
def vocabulary(texts: Sequence[str]) -> set[str]:
    """The distinct normalised words of ``texts``."""
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


def fig5_training_sets(synthetic: SyntheticData, sizes: Sequence[int], runs: int):
    """(variant, L, run) -> T_L, for Fig. 5: random L pairs of each KQGM set (a new draw per run), the
    top L of the KQF set by TDF (deterministic: one run)."""
    for variant in VARIANTS:
        pairs = synthetic.synthetic_set(variant)
        for size in sizes:
            for run in range(1 if variant == "par_ph_kqf_tdf" else runs):
                selection = "tdf" if variant == "par_ph_kqf_tdf" else "random"
                yield variant, size, run, select_top_l(pairs, size, selection, seed=run)
