"""Ding & Balog ICTIR'18, Table 1 (Sec. 5.1): the 12 KQGM configurations on T_0, AvgRougeL / MaxRougeL.

For every configuration (baseline Eq. 1 or paraphrase-based Eq. 6; with or without phrase detection;
popular / discriminative / combination term selection, Eq. 3-5) a keyword query is generated for
every T_0 question and scored with ROUGE-L against the question's hand-written keyword queries:
AvgRougeL (Eq. 9, mean over the references) and MaxRougeL (Eq. 10, best reference), through
:mod:`hf_querygen.metrics.rouge` (rouge-score, no stemming). The table reports ROUGE-L F1 (the
paper says "ROUGE-L"); recall is reported beside it.

Protocol (Sec. 5.1 and Sec. 5 "Parameter Tuning"): 5-fold cross-validation repeated ``repeats`` times
(the paper: 100). In each fold, P(s) is estimated on the training folds, lambda in {0.1..0.9} (baseline)
or alpha in {0.1..0.9}, beta in {0.1..1-alpha} (paraphrase) is grid-searched in steps of 0.1 on the
training folds (by mean AvgRougeL F1), and the selected setting is scored on the held-out fold.

Cost: term distributions are computed once per question and configuration
(:meth:`KeywordQueryGenerator.prepare`). Within a repetition each question draws one term sequence
of the maximal length 7 per grid point; a length s drawn per fold takes its first s terms (drawing
s terms one by one without replacement is exactly the first s of a 7-term draw). ROUGE is cached
per (question, keyword query); grid points that define the same mixture for a question (Eq. 6 with
P(t|C_q) = P(t|q)) share one draw. The length draw per (repetition, fold, question) is shared by all
grid points of a fold (common random numbers), which makes the grid comparison less noisy.

Data (our stand-ins, ``dataset_scripts/wikianswers/README.md``): T_0 = ``seed_pairs`` train +
validation (the test split stays untouched for the later tables: nothing here is tuned on it);
references = every distinct QALD keyword annotation of the question (``keyword_query_variants``);
Q, C_q and the collection model from :func:`hf_querygen.synthetic.build_question_corpus`. T_0
questions are not in Q, so their statistics add the question itself to the collection
(``in_collection=False``); none of them has paraphrases in Q, so C_q = {q} and the paraphrase
model differs from the baseline only in its parameter grid (it can put weight 0 on P(t)).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np

from hf_querygen.corpora._base import normalize_for_matching
from hf_querygen.experiments.papers import paper_numbers
from hf_querygen.synthetic.kqgm import (
    STRATEGIES,
    CollectionStatistics,
    KeywordQueryGenerator,
    KQGMConfig,
    LengthPrior,
    keyword_string,
)
from hf_querygen.synthetic.phrases import PhraseDetector

from .._report import markdown_table, results_document

PAPER = "ding2018"
METRICS = ("AvgRougeL", "MaxRougeL")
EXTRA_METRICS = ("AvgRougeL_recall", "MaxRougeL_recall")

# Table 1 of the paper: mean (std) over 100 repetitions of 5-fold CV (ding2018/ding2018.json)
PAPER_NUMBERS: dict[str, dict[str, float]] = paper_numbers(PAPER, "table1_paper_numbers")
PAPER_STD: dict[str, dict[str, float]] = paper_numbers(PAPER, "table1_paper_std")
FOLDS = 5
GRID_STEP = 0.1


def parameter_grid(paraphrase: bool) -> list[tuple[float, float, float]]:
    """Mixture weights (w_q, w_c, w_coll) of the grid (Sec. 5): lambda in [0.1, 0.9] for Eq. (1);
    alpha in [0.1, 0.9], beta in [0.1, 1 - alpha] for Eq. (6); steps of 0.1."""
    steps = [round(GRID_STEP * i, 1) for i in range(1, 10)]
    if not paraphrase:
        return [(round(1 - lam, 1), 0.0, lam) for lam in steps]
    return [(a, b, round(1 - a - b, 1)) for a in steps for b in steps if a + b <= 1.0 + 1e-9]


def _configs():
    return [
        KQGMConfig(strategy=s, paraphrase=p, phrases=ph)
        for p in (False, True)
        for ph in (False, True)
        for s in STRATEGIES
    ]


class _RougeCache:
    """ROUGE-L (F1 and recall, avg and max over references) per (question, keyword query)."""

    def __init__(self, references: list[list[str]]):
        self.references = references
        self.cache: dict[tuple[int, str], tuple[float, float, float, float]] = {}

    def fill(self, keys: set[tuple[int, str]]) -> None:
        from hf_querygen.metrics.rouge import rouge_per_example

        todo = [k for k in keys if k not in self.cache]
        if not todo:
            return
        rows = rouge_per_example([k[1] for k in todo], [self.references[k[0]] for k in todo], ("rougeL",))
        for key, row in zip(todo, rows, strict=True):
            self.cache[key] = (
                row["rougeL_f_avg"],
                row["rougeL_f_max"],
                row["rougeL_recall_avg"],
                row["rougeL_recall_max"],
            )


def _run_repeat(task: tuple) -> dict:
    """One repetition of 5-fold CV for every configuration (runs in a worker process)."""
    repeat, state = task, _STATE
    generators, prepared, lengths, references = (
        state["generators"],
        state["prepared"],
        state["kw_lengths"],
        state["references"],
    )
    n = len(references)
    rng = np.random.default_rng([repeat, 0])
    fold_of = rng.permutation(np.arange(n) % FOLDS)
    rouge = _RougeCache(references)
    out: dict = {}
    for c_index, (config, generator) in enumerate(generators):
        grid = parameter_grid(config.paraphrase)
        # one 7-unit draw per (question, effective mixture): where P(t|C_q) = P(t|q) (no paraphrase),
        # (alpha, beta, 1 - alpha - beta) is the same model as (alpha + beta, 0, 1 - alpha - beta), so
        # those grid points share one draw (and tie; the first wins)
        sequences: list[list[list[str]]] = [[] for _ in grid]
        for q in range(n):
            prep = prepared[c_index][q]
            same = np.array_equal(prep.p_q, prep.p_c)
            drawn: dict[tuple, list[str]] = {}
            for g, weights in enumerate(grid):
                eff = (round(weights[0] + weights[1], 1), 0.0, weights[2]) if same else weights
                if eff not in drawn:
                    seed = [repeat, c_index, q, *(int(round(10 * w)) for w in eff)]
                    drawn[eff] = generator.sample_terms(prep, np.random.default_rng(seed), 7, eff)
                sequences[g].append(drawn[eff])
        per_question = {m: np.zeros(n) for m in (*METRICS, *EXTRA_METRICS)}
        chosen = []
        for fold in range(FOLDS):
            train = np.flatnonzero(fold_of != fold)
            test = np.flatnonzero(fold_of == fold)
            prior = LengthPrior.from_lengths(lengths[i] for i in train)  # P(s) from the training folds
            s_rng = np.random.default_rng([repeat, 1000 + fold])
            lengths_drawn = [prior.sample(s_rng, prepared[c_index][q].length) for q in range(n)]
            keys = [
                [(q, keyword_string(sequences[g][q][: lengths_drawn[q]])) for q in range(n)]
                for g in range(len(grid))
            ]
            rouge.fill({k for row in keys for k in row})
            train_scores = [np.mean([rouge.cache[keys[g][q]][0] for q in train]) for g in range(len(grid))]
            best = int(np.argmax(train_scores))  # first maximum: the smallest setting on ties
            chosen.append(list(grid[best]))
            for q in test:
                values = rouge.cache[keys[best][q]]
                for m, v in zip((*METRICS, *EXTRA_METRICS), values, strict=True):
                    per_question[m][q] = v
        out[config.name] = {
            "per_question": {m: v.tolist() for m, v in per_question.items()},
            "chosen": chosen,
        }
    return out


_STATE: dict = {}


def _run_repeat_indexed(repeat: int) -> tuple[int, dict]:
    return repeat, _run_repeat(repeat)


def _prepare_state(data_dir, quick: bool) -> dict:
    from hf_querygen.synthetic.corpus import build_question_corpus, load_seed_pairs

    seeds = load_seed_pairs(data_dir, splits=["train", "validation"])
    if quick:
        seeds = seeds.select(range(min(120, len(seeds))))
    corpus = build_question_corpus(data_dir)
    texts = corpus.questions["text"]
    detector = PhraseDetector.train(t.split() for t in texts)
    stats_words = CollectionStatistics.from_documents(t.split() for t in texts)
    stats_phrases = CollectionStatistics.from_documents(detector.transform(t.split()) for t in texts)
    placeholder_prior = LengthPrior.from_lengths([])  # the real P(s) is estimated per fold
    generators, prepared = [], []
    for config in _configs():
        stats = stats_phrases if config.phrases else stats_words
        generator = KeywordQueryGenerator(stats, config, placeholder_prior, detector)
        generators.append((config, generator))
        # T_0 questions are not in Q: add each to the collection statistics (in_collection=False)
        prepared.append([generator.prepare(t, (), in_collection=False) for t in seeds["text"]])
    return {
        "generators": generators,
        "prepared": prepared,
        "kw_lengths": [len(normalize_for_matching(k).split()) for k in seeds["keyword_query"]],
        "references": [list(v) for v in seeds["keyword_query_variants"]],
        "corpus_stats": corpus.stats,
        "phrases": len(detector.phrasegrams),
        "seed_questions": len(seeds),
    }


def _run_repeats(cache_dir: Path, repeats: int, num_proc: int, started: float) -> list[dict]:
    """Every repetition's result, in order: those saved in ``cache_dir`` read, the others run (in
    ``num_proc`` forked processes) and saved as each finishes."""
    import multiprocessing

    cache_dir.mkdir(parents=True, exist_ok=True)
    done = {
        r: json.loads((cache_dir / f"{r:03d}.json").read_text())
        for r in range(repeats)
        if (cache_dir / f"{r:03d}.json").exists()
    }
    todo = [r for r in range(repeats) if r not in done]

    def save(item: tuple[int, dict]) -> None:
        repeat, result = item
        (cache_dir / f"{repeat:03d}.json").write_text(json.dumps(result))
        done[repeat] = result
        print(f"table1: repetition {repeat} done after {time.time() - started:.0f} s", flush=True)

    if num_proc > 1 and len(todo) > 1:
        with multiprocessing.get_context("fork").Pool(min(num_proc, len(todo))) as pool:
            for item in pool.imap_unordered(_run_repeat_indexed, todo):
                save(item)
    else:
        for r in todo:
            save(_run_repeat_indexed(r))
    return [done[r] for r in range(repeats)]


def _per_question_runs(results: list[dict]) -> tuple[dict[str, list[dict]], dict[str, list]]:
    """Per KQGM configuration: every held-out question's scores of every repetition (the document's
    runs), and the mixture weights chosen in each fold."""
    system_runs: dict[str, list[dict]] = {}
    chosen: dict[str, list] = {}
    for config, _ in _STATE["generators"]:
        runs, picks = [], []
        for result in results:
            pq = result[config.name]["per_question"]
            picks.extend(result[config.name]["chosen"])
            n = len(pq["AvgRougeL"])
            runs.extend({m: pq[m][i] for m in pq} for i in range(n))
        system_runs[config.name] = runs
        chosen[config.name] = picks
    return system_runs, chosen


def run_table1(
    out_dir: str | os.PathLike = "results/ding2018",
    quick: bool = False,
    repeats: int | None = None,
    data_dir: str | os.PathLike | None = None,
    num_proc: int = 2,
) -> dict:
    """Run Table 1 and write ``table1.json`` (the one results shape) and ``table1.md`` into ``out_dir``.

    ``repeats``: repetitions of 5-fold CV (default 1 with ``quick``, else 10; the paper used 100).
    Per system and metric, ``mean``/``std``/``n`` are over every held-out question score of every
    repetition (the paper's stds, about 0.1, are this spread); ``<metric>_repeat_mean`` gives the
    spread of the CV mean over repetitions.
    """
    started = time.time()
    repeats = repeats if repeats is not None else (1 if quick else 10)
    _STATE.clear()
    _STATE.update(_prepare_state(data_dir, quick))
    prepared_s = time.time() - started
    # every finished repetition is saved, so an interrupted run resumes where it stopped
    cache_dir = Path(out_dir) / ("table1_repeats-quick" if quick else "table1_repeats")
    results = _run_repeats(cache_dir, repeats, num_proc, started)
    system_runs, chosen = _per_question_runs(results)
    document = results_document(
        PAPER,
        system_runs,
        PAPER_NUMBERS,
        {
            "table": "Table 1 (Sec. 5.1): KQGM configurations on T_0",
            "repeats": repeats,
            "folds": FOLDS,
            "grid_step": GRID_STEP,
            "selection": "mean AvgRougeL (ROUGE-L F1) on the training folds",
            "rouge": "rouge-score ROUGE-L F1 (table) and recall, no stemming",
            "seed_questions": _STATE["seed_questions"],
            "seed_splits": "seed_pairs train + validation (test untouched)",
            "question_corpus": _STATE["corpus_stats"],
            "phrasegrams": _STATE["phrases"],
            "quick": quick,
            "prepare_seconds": round(prepared_s, 1),
            "seconds": round(time.time() - started, 1),
            "num_proc": num_proc,
        },
    )
    # the spread of the CV mean over repetitions, and the selected mixture weights
    for name in document["systems"]:
        for metric in METRICS:
            means = [float(np.mean(r[name]["per_question"][metric])) for r in results]
            document["systems"][name][f"{metric}_repeat_mean"] = {
                "mean": statistics.fmean(means),
                "std": statistics.stdev(means) if len(means) > 1 else 0.0,
                "n": len(means),
            }
    document["paper_std"] = PAPER_STD
    # how often each (w_q, w_c, w_coll) was selected, over folds x repetitions
    document["selected_weights"] = {
        name: {json.dumps(w): n for w, n in Counter(tuple(p) for p in picks).most_common()}
        for name, picks in chosen.items()
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table1.json").write_text(json.dumps(document, indent=2) + "\n")
    (out / "table1.md").write_text(render_markdown(document, markdown_table))
    return document


def _label(name: str) -> str:
    model, strategy = name.split("/")
    model = (
        model.replace("baseline", "Baseline")
        .replace("paraphrase", "Paraphrase")
        .replace("+phrases", " + phrases")
    )
    return f"{model}: {strategy}"


def _pm(cell: dict) -> str:
    return f"{cell['mean']:.4f} ± {cell['std']:.4f}"


def render_markdown(document: dict, markdown_table) -> str:
    config = document["config"]
    systems = list(document["systems"])
    labels = {s: _label(s) for s in systems}
    best = max(systems, key=lambda s: document["systems"][s]["AvgRougeL"]["mean"])
    paper_best = max(PAPER_NUMBERS, key=lambda s: PAPER_NUMBERS[s]["AvgRougeL"])
    lines = [
        "# Ding & Balog ICTIR'18, Table 1: KQGM configurations on T_0",
        "",
        f"Ours: {config['seed_questions']} T_0 questions ({config['seed_splits']}), "
        f"{config['folds']}-fold CV "
        f"repeated {config['repeats']} times (paper: 100), mixture weights grid-searched in steps of "
        f"{config['grid_step']} on the training folds. ROUGE-L F1 via rouge-score. Cells: mean ± std over "
        "every held-out question of every repetition (the paper's std is this per-question spread: "
        f"the paper's own std is in `paper_std` of table1.json). Run time {config['seconds']:.0f} s "
        f"with {config['num_proc']} processes.",
        "",
        markdown_table(document, METRICS, systems, labels, digits=4),
        "Std over repetitions of the CV mean, and ROUGE-L recall (ours only):",
        "",
        "| system | AvgRougeL CV mean | MaxRougeL CV mean | AvgRougeL recall | MaxRougeL recall |",
        "|---|---|---|---|---|",
    ]
    for s in systems:
        row = document["systems"][s]
        lines.append(
            f"| {labels[s]} | {_pm(row['AvgRougeL_repeat_mean'])} | {_pm(row['MaxRougeL_repeat_mean'])}"
            f" | {row['AvgRougeL_recall']['mean']:.4f} | {row['MaxRougeL_recall']['mean']:.4f} |"
        )
    lines += [
        "",
        f"Best configuration (AvgRougeL): ours **{labels[best]}**; paper: {_label(paper_best)}.",
        "",
    ]
    return "\n".join(lines)
