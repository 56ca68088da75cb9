"""``hf-querygen reproduce retrieval``: what every keyword-query system does to retrieval, on NFCorpus.

Two parts (issue 11):

1. **Engine sanity** on a public number: BM25 over the NFCorpus test documents with the test
   ``titles`` queries (the query text BEIR uses: its NFCorpus queries are the NutritionFacts page
   titles) and the 2-1-0 qrels (BEIR's), nDCG@10 beside BEIR's BM25 (0.325, Thakur et al. 2021,
   Table 2). Our documents differ from BEIR's: BEIR indexes all 3,633 documents of the raw dump
   (title + abstract, cased, with punctuation, numbers and stopwords) and Elasticsearch's English
   analyzer (stopwords removed, stemmed) over title and body; the archive here has, per split, only the
   split's documents (test: 3,161), already lower-cased, stopword-filtered, without numbers or
   punctuation, and our analyzer does not stem. A diagnostic row with Porter-stemmed documents and
   queries (nltk) shows how much of the gap is stemming.
2. **The table** Liu'18 and Song'17 imply: for the dev and test ``vid-desc`` queries (natural-language
   video descriptions) with graded 2-1-0 qrels, retrieve with BM25 and SDM using (a) the description
   as it is, (b) the human video title, (c) the keyword query of each nl2kw system, (d) description +
   keywords; nDCG@5/10, P@3/5/10, Hits@5/10 (Liu'18 Table 2's retrieval columns), mean over queries,
   paired randomization test against (a) (scipy). The nl2kw systems are trained on the nl2kw corpus
   (questions -> keyword queries), so applying them to health-video descriptions is a transfer setting.

Systems of (c) available without training: the raw query (every word of the description, once) and
YAKE with the setting liu2018 selected on the nl2kw VALIDATION split (top 6, n-grams <= 2; nothing
is tuned on NFCorpus). Trained systems come from ``models_dir`` (``--models-dir``): each sub-folder
holding a saved model is run through ``pipeline("keyword-query-generation", model=folder)``; a file
``<system>.jsonl`` of ``{"id": "<split>/PLAIN-..", "keywords": [...]}`` lines adds precomputed keyword
queries of any other system (e.g. a tagger without a keyword pipeline).

Every (split, ranker, query form) is a "system" of the one results JSON shape
(``experiments/_report.py``) with per-query values as the runs, so ``mean`` is the mean over queries,
``std`` their spread and ``n`` the number of queries; the significance tests are in
``config["significance"]``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hf_querygen.baselines.keyword_query import YakeKeywordExtractor, raw_query_keywords
from hf_querygen.corpora import resolve_data_dir
from hf_querygen.corpora._q2id_nfcorpus import nfcorpus_test_collection
from hf_querygen.utils import require_extra

from ._report import results_document, write_results
from .papers import paper_numbers
from .tables import Evaluation

METRICS = ("ndcg@5", "ndcg@10", "p@3", "p@5", "p@10", "hits@5", "hits@10")
RANKERS = ("bm25", "sdm")
SPLITS = ("dev", "test")
#: BEIR (Thakur et al., NeurIPS 2021 Datasets), Table 2, NFCorpus, BM25 (papers/retrieval.json)
BEIR_BM25_NDCG10 = paper_numbers("retrieval")["bm25_ndcg@10"]
YAKE_FROM_LIU2018 = {"top": 6, "max_ngram": 2}  # results/liu2018: chosen on nl2kw validation F1
RETRIEVAL_DEPTH = 100
MODELS_DIR_ENV = "HF_QUERYGEN_RETRIEVAL_MODELS"
SYSTEM_LABELS = {
    "description": "(a) description (NL query)",
    "title": "(b) human title",
    "raw_query": "(c) raw query",
    "yake": "(c) YAKE",
}


# ---------------------------------------------------------------- data
def load_nfcorpus_split(data_dir: Path, split: str) -> dict[str, Any]:
    """Documents, vid-desc / vid-titles / titles queries and 2-1-0 qrels of one NFCorpus split, read by
    the corpus layer (:func:`hf_querygen.corpora._q2id_nfcorpus.nfcorpus_test_collection`; a malformed
    line raises naming file and line)."""
    return nfcorpus_test_collection(data_dir, split)


# ---------------------------------------------------------------- keyword systems
def keyword_systems_without_training() -> dict[str, Callable[[Sequence[str]], list[list[str]]]]:
    yake = YakeKeywordExtractor(**YAKE_FROM_LIU2018)
    return {"raw_query": lambda texts: [raw_query_keywords(t) for t in texts], "yake": yake.batch}


def trained_keyword_systems(
    models_dir: Path | None,
) -> tuple[dict[str, Callable], dict[str, dict], dict[str, str]]:
    """``(callables, precomputed, skipped)`` from ``models_dir`` (see the module docstring)."""
    callables: dict[str, Callable] = {}
    precomputed: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    if models_dir is None:
        return callables, precomputed, skipped
    models_dir = Path(models_dir)
    if not models_dir.is_dir():
        raise FileNotFoundError(f"--models-dir {models_dir} is not a folder")
    for entry in sorted(models_dir.iterdir()):
        if entry.is_dir() and (entry / "config.json").is_file():
            callables[entry.name] = _pipeline_system(entry)
        elif entry.suffix == ".jsonl":
            keywords = {}
            for line in entry.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    keywords[record["id"]] = list(record["keywords"])
            precomputed[entry.stem] = keywords
        else:
            skipped[entry.name] = "neither a saved model folder (config.json) nor a .jsonl of keyword queries"
    return callables, precomputed, skipped


def _pipeline_system(folder: Path) -> Callable[[Sequence[str]], list[list[str]]]:
    def run(texts: Sequence[str]) -> list[list[str]]:
        from transformers import pipeline

        generate = pipeline("keyword-query-generation", model=str(folder), device="cpu")
        outputs = generate(list(texts), batch_size=32)
        return [list((out[0] if isinstance(out, list) else out)["keywords"]) for out in outputs]

    return run


# ---------------------------------------------------------------- running
def _evaluate(index, queries: dict[str, str], qrels, ranker: str) -> dict[str, dict[str, float]]:
    from hf_querygen.metrics.retrieval import per_query_scores

    ids = list(queries)
    results = index.search_batch([queries[q] for q in ids], k=RETRIEVAL_DEPTH, ranker=ranker, threads=2)
    run = {q: [hit.id for hit in hits] for q, hits in zip(ids, results, strict=True)}
    return per_query_scores(run, {q: qrels[q] for q in ids}, METRICS)


def sanity_check(data_dir: Path, quick: bool = False) -> dict[str, Any]:
    """BM25 (and SDM) over the test documents with the test title queries, beside BEIR's BM25."""
    from hf_querygen.retrieval import Index

    data = load_nfcorpus_split(data_dir, "test")
    queries = {q: t for q, t in data["queries"]["titles"].items() if q in data["qrels"]}
    if quick:
        queries = dict(list(queries.items())[:50])
    out: dict[str, Any] = {"num_documents": len(data["documents"]), "num_queries": len(queries)}
    index = Index.from_texts(
        list(data["documents"].values()), ids=list(data["documents"]), show_progress=False
    )
    for ranker in RANKERS:
        out[ranker] = _evaluate(index, queries, data["qrels"], ranker)
    try:  # diagnostic: how much of the gap to BEIR is stemming (BEIR's Elasticsearch stems)
        from nltk.stem.porter import PorterStemmer

        stem = PorterStemmer().stem
        from hf_querygen.retrieval import analyze

        def stemmed(text: str) -> str:
            return " ".join(stem(w) for w in analyze(text))

        stemmed_index = Index.from_texts(
            [stemmed(t) for t in data["documents"].values()], ids=list(data["documents"]), show_progress=False
        )
        out["bm25_porter_stemmed"] = _evaluate(
            stemmed_index, {q: stemmed(t) for q, t in queries.items()}, data["qrels"], "bm25"
        )
    except ImportError:  # nltk is optional
        pass
    return out


def run(
    out_dir: str | Path,
    quick: bool = False,
    seeds: int | None = None,
    data_dir: str | Path | None = None,
    models_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Run both parts and write ``results.json``, ``results.md`` and ``ndcg10.png`` into ``out_dir``.

    ``seeds`` is accepted for the runner's uniform signature; retrieval is deterministic.
    ``models_dir`` defaults to ``$HF_QUERYGEN_RETRIEVAL_MODELS`` when set.
    """
    from hf_querygen.metrics.retrieval import paired_test
    from hf_querygen.retrieval import Index

    started = time.perf_counter()
    data_dir = resolve_data_dir(data_dir)
    if models_dir is None and os.environ.get(MODELS_DIR_ENV):
        models_dir = Path(os.environ[MODELS_DIR_ENV])
    systems = keyword_systems_without_training()
    trained, precomputed, skipped = trained_keyword_systems(models_dir)
    systems.update(trained)

    sanity = sanity_check(data_dir, quick)
    system_runs: dict[str, list[dict[str, float]]] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    keyword_queries: dict[str, dict[str, dict[str, str]]] = {}
    num_queries = {}
    for split in SPLITS:
        data = load_nfcorpus_split(data_dir, split)
        descriptions = data["queries"]["vid-desc"]
        ids = [q for q in descriptions if q in data["qrels"] and q in data["queries"]["vid-titles"]]
        if quick:
            ids = ids[:20]
        num_queries[split] = len(ids)
        texts = [descriptions[q] for q in ids]
        forms: dict[str, list[str]] = {
            "description": texts,
            "title": [data["queries"]["vid-titles"][q] for q in ids],
        }
        for name, system in systems.items():
            keywords = system(texts)
            forms[name] = [" ".join(k) for k in keywords]
        for name, table in precomputed.items():
            missing = [q for q in ids if f"{split}/{q}" not in table]
            if missing:
                skipped[name] = f"no keywords for {len(missing)} {split} queries (e.g. {split}/{missing[0]})"
                continue
            forms[name] = [" ".join(table[f"{split}/{q}"]) for q in ids]
        for name in [n for n in forms if n not in ("description", "title", "raw_query")]:
            # (d) description + keywords (for the raw query this would only repeat the description)
            forms[f"description+{name}"] = [f"{d} {k}" for d, k in zip(texts, forms[name], strict=True)]
        keyword_queries[split] = {
            name: dict(zip(ids, queries, strict=True)) for name, queries in forms.items()
        }
        index = Index.from_texts(
            list(data["documents"].values()), ids=list(data["documents"]), show_progress=False
        )
        for ranker in RANKERS:
            for name, queries in forms.items():
                key = f"{split}/{ranker}/{name}"
                scores = _evaluate(index, dict(zip(ids, queries, strict=True)), data["qrels"], ranker)
                per_query[key] = scores
                system_runs[key] = [{m: scores[m][q] for m in METRICS} for q in ids]

    significance = {}
    for key, scores in per_query.items():
        split, ranker, name = key.split("/", 2)
        if name == "description":
            continue
        baseline = per_query[f"{split}/{ranker}/description"]
        significance[key] = {m: paired_test(scores[m], baseline[m]) for m in METRICS}
    sanity_key = "sanity/test/bm25/titles"
    system_runs[sanity_key] = [{m: sanity["bm25"][m][q] for m in METRICS} for q in sanity["bm25"]["ndcg@10"]]
    if "bm25_porter_stemmed" in sanity:
        stemmed = sanity["bm25_porter_stemmed"]
        system_runs["sanity/test/bm25-porter/titles"] = [
            {m: stemmed[m][q] for m in METRICS} for q in stemmed["ndcg@10"]
        ]
    system_runs["sanity/test/sdm/titles"] = [
        {m: sanity["sdm"][m][q] for m in METRICS} for q in sanity["sdm"]["ndcg@10"]
    ]
    document = results_document(
        "retrieval",
        system_runs,
        {sanity_key: {"ndcg@10": BEIR_BM25_NDCG10}},
        {
            "corpus": "NFCorpus (Boteva et al. ECIR 2016), per-split documents, 2-1-0 qrels",
            "quick": quick,
            "queries": {
                "table": "vid-desc with a vid-titles line and >= 1 relevant document",
                "sanity": "titles",
            },
            "num_queries": {**num_queries, "sanity": sanity["num_queries"]},
            "num_documents_sanity": sanity["num_documents"],
            "retrieval_depth": RETRIEVAL_DEPTH,
            "rankers": {
                "bm25": {"k1": 1.2, "b": 0.75},
                "sdm": {"mu": 2500, "weights": [0.85, 0.1, 0.05], "window": 8, "depth": 1000},
            },
            "metrics": list(METRICS),
            "metric_library": "ir-measures (pytrec_eval); nDCG linear graded gains; binary: grade >= 1",
            "significance_test": "paired randomization test of the mean difference vs (a), two-sided, "
            "scipy.stats.permutation_test, 10,000 resamples",
            "significance": significance,
            "yake": YAKE_FROM_LIU2018,
            "trained_systems": sorted(trained) + sorted(n for n in precomputed if n not in skipped),
            "skipped_systems": skipped,
            "models_dir": str(models_dir) if models_dir else None,
            "transfer_note": "trained on nl2kw questions, applied to NFCorpus video descriptions",
            "example_queries": {
                split: {name: dict(list(q.items())[:3]) for name, q in forms_.items()}
                for split, forms_ in keyword_queries.items()
            },
            "timings_s": {"total": round(time.perf_counter() - started, 1)},
        },
    )
    out = write_results(document, out_dir, render_markdown(document))
    plot_ndcg(document, out / "ndcg10.png")
    return document


# ---------------------------------------------------------------- report
def _label(name: str) -> str:
    if name.startswith("description+"):
        return f"(d) description + {_label(name.split('+', 1)[1]).removeprefix('(c) ')}"
    return SYSTEM_LABELS.get(name, f"(c) {name}")


def render_markdown(document: dict) -> str:
    systems, config = document["systems"], document["config"]
    sig = config["significance"]
    lines = ["# Retrieval on NFCorpus: natural-language descriptions vs keyword queries", ""]
    sanity = systems["sanity/test/bm25/titles"]["ndcg@10"]
    lines += [
        "## Engine sanity (test documents, test `titles` queries, 2-1-0 qrels)",
        "",
        "| run | nDCG@10 | queries |",
        "|---|---|---|",
        f"| BM25 (ours) | {sanity['mean']:.3f} | {sanity['n']} |",
    ]
    if "sanity/test/bm25-porter/titles" in systems:
        cell = systems["sanity/test/bm25-porter/titles"]["ndcg@10"]
        lines.append(
            f"| BM25, Porter-stemmed documents and queries (diagnostic) | {cell['mean']:.3f} | {cell['n']} |"
        )
    cell = systems["sanity/test/sdm/titles"]["ndcg@10"]
    lines.append(f"| SDM (ours) | {cell['mean']:.3f} | {cell['n']} |")
    lines += [f"| BM25, BEIR (Thakur et al. 2021) | {BEIR_BM25_NDCG10:.3f} | 323 |", ""]
    lines += [
        "## vid-desc queries: the description, the title, and keyword queries",
        "",
        "Mean over queries; `*` p < 0.05, `**` p < 0.01 (paired randomization test against (a), same split "
        "and ranker). The nl2kw systems were trained on nl2kw (transfer).",
        "",
    ]
    for split in SPLITS:
        for ranker in RANKERS:
            prefix = f"{split}/{ranker}/"
            names = [k[len(prefix) :] for k in systems if k.startswith(prefix)]
            if not names:
                continue
            n = systems[prefix + names[0]][METRICS[0]]["n"]
            lines += [f"### {split}, {ranker.upper()} ({n} queries)", ""]
            lines.append("| query | " + " | ".join(METRICS) + " |")
            lines.append("|---|" + "---|" * len(METRICS))
            for name in names:
                cells = []
                for metric in METRICS:
                    value = systems[prefix + name][metric]["mean"]
                    p = sig.get(prefix + name, {}).get(metric, {}).get("p_value")
                    mark = "" if p is None else "**" if p < 0.01 else "*" if p < 0.05 else ""
                    cells.append(f"{value:.3f}{mark}")
                lines.append(f"| {_label(name)} | " + " | ".join(cells) + " |")
            lines.append("")
    if config.get("skipped_systems"):
        lines += ["Skipped: " + "; ".join(f"{k}: {v}" for k, v in config["skipped_systems"].items()), ""]
    return "\n".join(lines)


def plot_ndcg(document: dict, path: Path) -> None:
    """nDCG@10 per query form, BM25 and SDM, one panel per split."""
    require_extra("matplotlib", "plots", "Plotting the retrieval results").use("Agg")
    import matplotlib.pyplot as plt

    systems = document["systems"]
    fig, axes = plt.subplots(1, len(SPLITS), figsize=(11, 4.2), sharey=True)
    for ax, split in zip(axes, SPLITS, strict=True):
        names = [k.split("/", 2)[2] for k in systems if k.startswith(f"{split}/bm25/")]
        width = 0.4
        for offset, ranker in ((-width / 2, "bm25"), (width / 2, "sdm")):
            values = [systems[f"{split}/{ranker}/{n}"]["ndcg@10"]["mean"] for n in names]
            ax.bar([i + offset for i in range(len(names))], values, width, label=ranker.upper())
        ax.set_xticks(range(len(names)), [_label(n) for n in names], rotation=40, ha="right", fontsize=7)
        ax.set_title(f"NFCorpus {split} vid-desc")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("nDCG@10")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def summary_table(document: dict, split: str = "test", metric: str = "ndcg@10") -> str:
    """The console summary of a run: one row per query form, ``metric`` with BM25 and SDM on ``split``."""
    systems = document["systems"]
    names = sorted({key.split("/", 2)[2] for key in systems if key.startswith(f"{split}/")})
    order = ["description", "title"] + [n for n in names if n not in ("description", "title")]
    n = document["config"]["num_queries"].get(split, 0)
    lines = [
        f"retrieval on NFCorpus ({split}, {n} vid-desc queries, {metric}; full table in results.md)",
        "| query | BM25 | SDM |",
        "|---|---|---|",
    ]
    for name in order:
        cells = []
        for ranker in RANKERS:
            cell = systems.get(f"{split}/{ranker}/{name}", {}).get(metric)
            cells.append("-" if cell is None else f"{cell['mean']:.3f}")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


#: ``hf-querygen reproduce retrieval``: trains nothing; decodes liu2018's saved models when given
REPRODUCTION = Evaluation("retrieval", run=run, summary=summary_table, models_of="liu2018")
