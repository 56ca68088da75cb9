"""``hf-querygen reproduce retrieval``: what every keyword-query system does to retrieval, on NFCorpus.

Two parts:

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

import functools
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hf_querygen.baselines.keyword_query import (
    PseudoRelevanceKeywords,
    YakeKeywordExtractor,
    raw_query_keywords,
)
from hf_querygen.corpora import resolve_data_dir
from hf_querygen.corpora._q2id_nfcorpus import nfcorpus_test_collection
from hf_querygen.pretrained import MINILM_ID, SentenceEmbedder
from hf_querygen.retrieval import Index, analyze
from hf_querygen.retrieval.dense import encode_documents
from hf_querygen.tasks.base import get_task
from hf_querygen.utils import require_extra

from .._report import results_document, write_results
from ..papers import paper_numbers
from ..tables import Evaluation

METRICS = ("ndcg@5", "ndcg@10", "p@3", "p@5", "p@10", "hits@5", "hits@10")
LEXICAL_RANKERS = ("bm25", "sdm")
DENSE_RANKERS = ("dense", "hybrid")  # need the [pretrained] extra (all-MiniLM-L6-v2)
RANKERS = LEXICAL_RANKERS + DENSE_RANKERS
SPLITS = ("dev", "test")
#: BEIR (Thakur et al., NeurIPS 2021 Datasets), Table 2, NFCorpus, BM25 (retrieval/retrieval.json)
BEIR_BM25_NDCG10 = paper_numbers("retrieval")["bm25_ndcg@10"]
#: the dense rows' encoder, and its published MTEB NFCorpus test nDCG@10 (model card;
#: retrieval/retrieval.json)
DENSE_MODEL = MINILM_ID
MINILM_NDCG10 = paper_numbers("retrieval")["all-MiniLM-L6-v2_ndcg@10"]
#: --quick: the first documents by id of the splits' union (each split keeps those it has), so that the
#: dense rows' encoding (the run's cost: ~10 long documents/s per core) stays short, shared by the splits
QUICK_DOCUMENTS = 200
#: query forms that are not reformulations the library generates (the input, a human title, its words)
NOT_REFORMULATIONS = ("description", "title", "raw_query")
SELECTION_METRIC = "ndcg@10"
SELECTION_ALPHA = 0.05
YAKE_FROM_LIU2018 = {"top": 6, "max_ngram": 2}  # results/liu2018: chosen on nl2kw validation F1
RETRIEVAL_DEPTH = 100
MODELS_DIR_ENV = "HF_QUERYGEN_RETRIEVAL_MODELS"
#: a keyword tagger's KEYWORD threshold for retrieval, chosen on DEV (BM25, SELECTION_METRIC) from these
#: (ties: the higher threshold, the shorter query): a tagger trained on one-sentence questions keeps few
#: words of a multi-sentence description at its argmax (0.5)
KEYWORD_THRESHOLD_GRID = (0.5, 0.4, 0.3, 0.2, 0.1, 0.05)
#: the name of a tagger's row with the threshold chosen on dev: ``<folder name><suffix>``
DEV_THRESHOLD_SUFFIX = "_dev_threshold"
SYSTEM_LABELS = {
    "description": "(a) description (NL query)",
    "title": "(b) human title",
    "raw_query": "(c) raw query",
    "yake": "(c) YAKE",
    "prf": "(e) raw query + RM3 expansion",
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


def _keyword_pipeline(folder: Path) -> Any:
    from transformers import pipeline

    return pipeline("keyword-query-generation", model=str(folder), device="cpu")


def _keywords(generate: Any, texts: Sequence[str], **decoding: Any) -> list[list[str]]:
    outputs = generate(list(texts), batch_size=32, **decoding)
    return [list((out[0] if isinstance(out, list) else out)["keywords"]) for out in outputs]


def _pipeline_system(folder: Path, **decoding: Any) -> Callable[[Sequence[str]], list[list[str]]]:
    generate = functools.cache(lambda: _keyword_pipeline(folder))  # built on the first call, then kept

    def run(texts: Sequence[str]) -> list[list[str]]:
        return _keywords(generate(), texts, **decoding)

    return run


def _is_keyword_tagger(folder: Path) -> bool:
    from transformers import AutoConfig

    return get_task("nl2kw").family_of(AutoConfig.from_pretrained(folder)) == "tagging"


def choose_keyword_thresholds(
    folders: dict[str, Path], data: dict[str, Any], ids: Sequence[str], index: Any
) -> tuple[dict[str, Callable[[Sequence[str]], list[list[str]]]], dict[str, Any]]:
    """For each keyword tagger of ``folders``: its ``keyword_threshold`` chosen on ``data`` (DEV) by BM25
    :data:`SELECTION_METRIC` from :data:`KEYWORD_THRESHOLD_GRID`. Returns the systems with the chosen
    thresholds (``<name>`` + :data:`DEV_THRESHOLD_SUFFIX`) and, per tagger, every threshold's dev score."""
    texts = [data["queries"]["vid-desc"][q] for q in ids]
    systems: dict[str, Callable[[Sequence[str]], list[list[str]]]] = {}
    choices: dict[str, Any] = {}
    for name, folder in folders.items():
        if not _is_keyword_tagger(folder):
            continue
        by_threshold = {}
        generate = _keyword_pipeline(folder)  # one model load for every threshold
        for threshold in KEYWORD_THRESHOLD_GRID:
            keywords = _keywords(generate, texts, keyword_threshold=threshold)
            queries = {q: " ".join(words) for q, words in zip(ids, keywords, strict=True)}
            scores = _evaluate(index, queries, data["qrels"], "bm25")[SELECTION_METRIC]
            by_threshold[threshold] = float(np.mean([scores[q] for q in ids]))
        chosen = max(by_threshold, key=lambda t: (by_threshold[t], t))
        systems[name + DEV_THRESHOLD_SUFFIX] = _pipeline_system(folder, keyword_threshold=chosen)
        choices[name] = {
            "split": "dev",
            "ranker": "bm25",
            "metric": SELECTION_METRIC,
            "by_threshold": by_threshold,
            "chosen": chosen,
        }
    return systems, choices


# ---------------------------------------------------------------- running
def _evaluate(index, queries: dict[str, str], qrels, ranker: str) -> dict[str, dict[str, float]]:
    from hf_querygen.metrics.retrieval import per_query_scores

    ids = list(queries)
    results = index.search_batch([queries[q] for q in ids], k=RETRIEVAL_DEPTH, ranker=ranker, threads=2)
    run = {q: [hit.id for hit in hits] for q, hits in zip(ids, results, strict=True)}
    return per_query_scores(run, {q: qrels[q] for q in ids}, METRICS)


def dense_embedder() -> tuple[Any, str | None]:
    """``(embedder, None)``, or ``(None, why)`` when the [pretrained] extra is missing (the dense and
    hybrid rows are then skipped and the reason recorded)."""
    try:
        return SentenceEmbedder(DENSE_MODEL, device="cpu"), None
    except ImportError as err:
        return None, str(err)


def document_embeddings(embedder, collections: Sequence[dict[str, str]]) -> dict[str, Any]:
    """Embeddings of every document of ``collections`` (id -> text), encoded once: the union in id
    order through :func:`~hf_querygen.retrieval.dense.encode_documents`, whose cache (keyed by the
    backbone revision and the texts' fingerprint) makes a second run, or the other split, free."""
    union: dict[str, str] = {}
    for documents in collections:
        for doc_id, text in documents.items():
            if union.setdefault(doc_id, text) != text:
                raise ValueError(f"document {doc_id} has different texts in two splits")
    ids = sorted(union)
    vectors = encode_documents(embedder, [union[i] for i in ids], show_progress=True)
    return dict(zip(ids, vectors, strict=True))


def build_index(documents: dict[str, str], embedder=None, vectors: dict[str, Any] | None = None):
    """The index of ``documents`` (id -> text), with the dense field when ``embedder`` is given."""
    texts, ids = list(documents.values()), list(documents)
    if embedder is None:
        return Index.from_texts(texts, ids=ids, show_progress=False)
    matrix = np.stack([vectors[i] for i in ids])
    return Index.from_texts(texts, ids=ids, show_progress=False, embedder=embedder, embeddings=matrix)


def quick_documents(splits: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Per split, its documents among the first :data:`QUICK_DOCUMENTS` ids of all splits together."""
    keep = set(sorted(set().union(*(data["documents"] for data in splits.values())))[:QUICK_DOCUMENTS])
    return {
        split: {d: text for d, text in data["documents"].items() if d in keep}
        for split, data in splits.items()
    }


def sanity_check(
    data_dir: Path,
    quick: bool = False,
    embedder=None,
    vectors: dict[str, Any] | None = None,
    documents: dict[str, str] | None = None,
) -> dict[str, Any]:
    """BM25 and SDM (and dense, hybrid with an embedder) over the test documents (or ``documents``) with
    the test title queries, beside BEIR's BM25 and the model's MTEB figure."""
    data = load_nfcorpus_split(data_dir, "test")
    queries = {q: t for q, t in data["queries"]["titles"].items() if q in data["qrels"]}
    documents = data["documents"] if documents is None else documents
    if quick:
        queries = dict(list(queries.items())[:50])
    out: dict[str, Any] = {"num_documents": len(documents), "num_queries": len(queries)}
    index = build_index(documents, embedder, vectors)
    for ranker in RANKERS if embedder is not None else LEXICAL_RANKERS:
        out[ranker] = _evaluate(index, queries, data["qrels"], ranker)
    try:  # diagnostic: how much of the gap to BEIR is stemming (BEIR's Elasticsearch stems)
        from nltk.stem.porter import PorterStemmer

        stem = PorterStemmer().stem

        def stemmed(text: str) -> str:
            return " ".join(stem(w) for w in analyze(text))

        stemmed_index = Index.from_texts(
            [stemmed(t) for t in documents.values()], ids=list(documents), show_progress=False
        )
        out["bm25_porter_stemmed"] = _evaluate(
            stemmed_index, {q: stemmed(t) for q, t in queries.items()}, data["qrels"], "bm25"
        )
    except ImportError:  # nltk is optional
        pass
    return out


def select_reformulation(
    per_query: dict[str, dict[str, dict[str, float]]],
    metric: str = SELECTION_METRIC,
    alpha: float = SELECTION_ALPHA,
) -> dict[str, Any]:
    """Does a reformulation the library generates beat the raw query at its best? Selected on dev only.

    The baseline is the raw query under the ranker that serves it best on dev. Every (ranker,
    reformulation) row of dev (forms outside :data:`NOT_REFORMULATIONS`) is compared with it by the
    paired randomization test; the selected one is the best dev mean among those better at p < ``alpha``.
    Only then is test read: the selected row against the baseline's row (same rankers) on test.
    """
    from hf_querygen.metrics.retrieval import paired_test

    def mean(key: str) -> float:
        values = list(per_query[key][metric].values())
        return sum(values) / len(values)

    raw = {r: mean(f"dev/{r}/raw_query") for r in RANKERS if f"dev/{r}/raw_query" in per_query}
    if not raw:
        return {"note": "no raw-query rows"}
    best_ranker = max(raw, key=lambda r: (raw[r], -RANKERS.index(r)))
    baseline = f"dev/{best_ranker}/raw_query"
    candidates = []
    for key in per_query:
        split, ranker, name = key.split("/", 2)
        if split != "dev" or name in NOT_REFORMULATIONS:
            continue
        test = paired_test(per_query[key][metric], per_query[baseline][metric])
        candidates.append({"ranker": ranker, "query": name, "dev": mean(key), **test})
    candidates.sort(key=lambda c: -c["dev"])
    eligible = [c for c in candidates if c["mean_difference"] > 0 and c["p_value"] < alpha]
    out: dict[str, Any] = {
        "metric": metric,
        "alpha": alpha,
        "baseline": {"query": "raw_query", "ranker": best_ranker, "dev": raw[best_ranker]},
        "raw_query_dev_by_ranker": raw,
        "candidates_dev": candidates,
        "selected": None,
    }
    test_baseline = f"test/{best_ranker}/raw_query"
    out["baseline"]["test"] = mean(test_baseline)
    for label, chosen in (("selected", eligible[0] if eligible else None), ("best_dev_mean", candidates[0])):
        if chosen is None:
            continue
        key = f"test/{chosen['ranker']}/{chosen['query']}"
        test = paired_test(per_query[key][metric], per_query[test_baseline][metric])
        out[label] = {**chosen, "test": mean(key), "test_vs_baseline": test}
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
    started = time.perf_counter()
    data_dir = resolve_data_dir(data_dir)
    if models_dir is None and os.environ.get(MODELS_DIR_ENV):
        models_dir = Path(os.environ[MODELS_DIR_ENV])
    systems = keyword_systems_without_training()
    trained, precomputed, skipped = trained_keyword_systems(models_dir)
    systems.update(trained)

    splits = {split: load_nfcorpus_split(data_dir, split) for split in SPLITS}
    query_ids = _table_query_ids(splits, quick)
    split_documents = (
        quick_documents(splits) if quick else {s: dict(d["documents"]) for s, d in splits.items()}
    )
    embedder, no_dense = dense_embedder()
    vectors = None
    timings: dict[str, float] = {}
    if embedder is not None:
        encoding_started = time.perf_counter()
        vectors = document_embeddings(embedder, list(split_documents.values()))
        timings["document_embeddings"] = round(time.perf_counter() - encoding_started, 1)
    else:
        skipped["dense, hybrid"] = no_dense
    rankers = RANKERS if embedder is not None else LEXICAL_RANKERS

    sanity = sanity_check(data_dir, quick, embedder, vectors, split_documents["test"])
    indexes = {split: build_index(split_documents[split], embedder, vectors) for split in SPLITS}
    folders = {name: Path(models_dir) / name for name in trained}
    tuned, threshold_choice = choose_keyword_thresholds(
        folders, splits["dev"], query_ids["dev"], indexes["dev"]
    )
    systems.update(tuned)
    system_runs: dict[str, list[dict[str, float]]] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    keyword_queries: dict[str, dict[str, dict[str, str]]] = {}
    for split in SPLITS:
        ids = query_ids[split]
        forms = _query_forms(splits[split], split, ids, systems, precomputed, skipped)
        keyword_queries[split] = {
            name: dict(zip(ids, queries, strict=True)) for name, queries in forms.items()
        }
        index = indexes[split]
        # raw query + RM3-style expansion from this split's documents (BM25 feedback, Anserini's defaults)
        prf = PseudoRelevanceKeywords(index, list(split_documents[split].values()))
        forms["prf"] = [" ".join(k) for k in prf.batch(forms["description"])]
        keyword_queries[split]["prf"] = dict(zip(ids, forms["prf"], strict=True))
        for ranker in rankers:
            for name, queries in forms.items():
                key = f"{split}/{ranker}/{name}"
                scores = _evaluate(
                    index, dict(zip(ids, queries, strict=True)), splits[split]["qrels"], ranker
                )
                per_query[key] = scores
                system_runs[key] = [{m: scores[m][q] for m in METRICS} for q in ids]
    system_runs.update(_sanity_runs(sanity, rankers))
    paper = {"sanity/test/bm25/titles": {"ndcg@10": BEIR_BM25_NDCG10}}
    if embedder is not None:
        paper["sanity/test/dense/titles"] = {"ndcg@10": MINILM_NDCG10}
    config = _report_config(
        quick=quick,
        num_queries={split: len(ids) for split, ids in query_ids.items()},
        sanity=sanity,
        split_documents=split_documents,
        embedder=embedder,
        per_query=per_query,
        trained=trained,
        precomputed=precomputed,
        skipped=skipped,
        models_dir=models_dir,
        keyword_queries=keyword_queries,
        timings=timings,
        started=started,
    )
    config["keyword_threshold_choice"] = threshold_choice
    document = results_document("retrieval", system_runs, paper, config)
    out = write_results(document, out_dir, render_markdown(document))
    plot_ndcg(document, out / "ndcg10.png")
    return document


def _table_query_ids(splits: dict[str, dict[str, Any]], quick: bool) -> dict[str, list[str]]:
    """Per split, the table's queries: vid-desc ones with a vid-titles line and >= 1 relevant document
    (the first 20 with ``quick``)."""
    query_ids: dict[str, list[str]] = {}
    for split, data in splits.items():
        descriptions = data["queries"]["vid-desc"]
        ids = [q for q in descriptions if q in data["qrels"] and q in data["queries"]["vid-titles"]]
        query_ids[split] = ids[:20] if quick else ids
    return query_ids


def _query_forms(
    data: dict[str, Any],
    split: str,
    ids: list[str],
    systems: dict[str, Callable[[Sequence[str]], list[list[str]]]],
    precomputed: dict[str, dict[str, list[str]]],
    skipped: dict[str, str],
) -> dict[str, list[str]]:
    """The query forms (a)-(d) of the module docstring for one split: form name -> one query per id.
    A precomputed system that lacks some of these queries is recorded in ``skipped`` instead."""
    descriptions = data["queries"]["vid-desc"]
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
    return forms


def _sanity_runs(sanity: dict[str, Any], rankers: Sequence[str]) -> dict[str, list[dict[str, float]]]:
    """The engine sanity check's per-query values as systems of the results document."""
    runs = {
        f"sanity/test/{ranker}/titles": [
            {m: sanity[ranker][m][q] for m in METRICS} for q in sanity[ranker]["ndcg@10"]
        ]
        for ranker in rankers
    }
    if "bm25_porter_stemmed" in sanity:
        stemmed = sanity["bm25_porter_stemmed"]
        runs["sanity/test/bm25-porter/titles"] = [
            {m: stemmed[m][q] for m in METRICS} for q in stemmed["ndcg@10"]
        ]
    return runs


def _significance(per_query: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Each (split, ranker, form) against the description with that ranker, per metric."""
    from hf_querygen.metrics.retrieval import paired_test

    significance = {}
    for key, scores in per_query.items():
        split, ranker, name = key.split("/", 2)
        if name == "description":
            continue
        baseline = per_query[f"{split}/{ranker}/description"]
        significance[key] = {m: paired_test(scores[m], baseline[m]) for m in METRICS}
    return significance


def _report_config(
    *,
    quick: bool,
    num_queries: dict[str, int],
    sanity: dict[str, Any],
    split_documents: dict[str, dict[str, str]],
    embedder: Any,
    per_query: dict[str, dict[str, dict[str, float]]],
    trained: dict[str, Any],
    precomputed: dict[str, Any],
    skipped: dict[str, str],
    models_dir: str | Path | None,
    keyword_queries: dict[str, dict[str, dict[str, str]]],
    timings: dict[str, float],
    started: float,
) -> dict[str, Any]:
    """The results document's ``config``: the setting, the significance tests, the reformulation choice;
    the total time counts from ``started`` to the end of the tests."""
    from hf_querygen.metrics.retrieval import paired_test

    significance = _significance(per_query)
    sanity_significance = {}
    if embedder is not None:  # hybrid against the better of its two parts, on the sanity queries
        for part in ("bm25", "dense"):
            sanity_significance[f"hybrid vs {part}"] = paired_test(
                sanity["hybrid"]["ndcg@10"], sanity[part]["ndcg@10"]
            )
    return {
        "corpus": "NFCorpus (Boteva et al. ECIR 2016), per-split documents, 2-1-0 qrels",
        "quick": quick,
        "queries": {
            "table": "vid-desc with a vid-titles line and >= 1 relevant document",
            "sanity": "titles",
        },
        "num_queries": {**num_queries, "sanity": sanity["num_queries"]},
        "num_documents_sanity": sanity["num_documents"],
        "num_documents": {split: len(docs) for split, docs in split_documents.items()},
        "retrieval_depth": RETRIEVAL_DEPTH,
        "rankers": {
            "bm25": {"k1": 1.2, "b": 0.75},
            "sdm": {"mu": 2500, "weights": [0.85, 0.1, 0.05], "window": 8, "depth": 1000},
            "dense": {"exact": True, "similarity": "cosine (normalised embeddings)"},
            "hybrid": {"fusion": "rrf", "rrf_k": 60, "depth": 100, "lists": "bm25 + dense"},
        },
        "dense_encoder": embedder.describe() if embedder is not None else None,
        "metrics": list(METRICS),
        "metric_library": "ir-measures (pytrec_eval); nDCG linear graded gains; binary: grade >= 1",
        "significance_test": "paired randomization test of the mean difference vs (a), two-sided, "
        "scipy.stats.permutation_test, 10,000 resamples",
        "significance": significance,
        "sanity_significance": sanity_significance,
        "reformulation": select_reformulation(per_query),
        "yake": YAKE_FROM_LIU2018,
        "trained_systems": sorted(trained) + sorted(n for n in precomputed if n not in skipped),
        "skipped_systems": skipped,
        "models_dir": str(models_dir) if models_dir else None,
        "transfer_note": "trained on nl2kw questions, applied to NFCorpus video descriptions",
        "example_queries": {
            split: {name: dict(list(q.items())[:3]) for name, q in forms_.items()}
            for split, forms_ in keyword_queries.items()
        },
        "timings_s": {**timings, "total": round(time.perf_counter() - started, 1)},
    }


# ---------------------------------------------------------------- report
def _label(name: str) -> str:
    if name.startswith("description+"):
        return f"(d) description + {_label(name.split('+', 1)[1]).removeprefix('(c) ')}"
    if name.endswith(DEV_THRESHOLD_SUFFIX):
        return f"(c) {name.removesuffix(DEV_THRESHOLD_SUFFIX)}, KEYWORD threshold chosen on dev"
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
    lines.append(f"| BM25, BEIR (Thakur et al. 2021) | {BEIR_BM25_NDCG10:.3f} | 323 |")
    sanity_sig = config.get("sanity_significance", {})
    for ranker, label in (
        ("dense", "Dense, all-MiniLM-L6-v2 exact cosine (ours)"),
        ("hybrid", "Hybrid, RRF of BM25 + dense (ours)"),
    ):
        if f"sanity/test/{ranker}/titles" in systems:
            cell = systems[f"sanity/test/{ranker}/titles"]["ndcg@10"]
            note = ""
            if ranker == "hybrid" and sanity_sig:
                note = (
                    " ("
                    + ", ".join(
                        f"{k}: {v['mean_difference']:+.3f}, p={v['p_value']:.3f}"
                        for k, v in sanity_sig.items()
                    )
                    + ")"
                )
            lines.append(f"| {label}{note} | {cell['mean']:.3f} | {cell['n']} |")
    if "sanity/test/dense/titles" in systems:
        lines.append(f"| all-MiniLM-L6-v2, MTEB NFCorpus (model card) | {MINILM_NDCG10:.3f} | 323 |")
    lines.append("")
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
    for name, choice in (config.get("keyword_threshold_choice") or {}).items():
        grid = ", ".join(f"{t}: {v:.3f}" for t, v in choice["by_threshold"].items())
        lines += [
            f"{name}: KEYWORD threshold {choice['chosen']} chosen on {choice['split']} "
            f"({choice['ranker'].upper()} {choice['metric']} per threshold: {grid}).",
            "",
        ]
    lines += _reformulation_markdown(config.get("reformulation") or {})
    if config.get("skipped_systems"):
        lines += ["Skipped: " + "; ".join(f"{k}: {v}" for k, v in config["skipped_systems"].items()), ""]
    return "\n".join(lines)


def _reformulation_markdown(selection: dict) -> list[str]:
    if "baseline" not in selection:
        return []
    base = selection["baseline"]
    lines = [
        "## Does a reformulation beat the raw query at its best? (selected on dev, read on test)",
        "",
        f"Baseline: the raw query under {base['ranker'].upper()}, its best ranker on dev "
        f"({base['dev']:.3f} dev, {base['test']:.3f} test {selection['metric']}). Every library "
        f"reformulation x ranker compared with it on dev (paired randomization test); selected: the best dev "
        f"mean among those better at p < {selection['alpha']}.",
        "",
    ]
    chosen = selection.get("selected")
    if chosen is None:
        lines.append("**None** is significantly better on dev.")
    else:
        t = chosen["test_vs_baseline"]
        holds = t["mean_difference"] > 0 and t["p_value"] < selection["alpha"]
        lines.append(
            f"**Selected: {_label(chosen['query'])} under {chosen['ranker'].upper()}**: "
            f"dev {chosen['dev']:.3f} (p={chosen['p_value']:.3f}); test {chosen['test']:.3f} vs "
            f"{base['test']:.3f} ({t['mean_difference']:+.3f}, p={t['p_value']:.3f}: "
            f"{'holds' if holds else 'does not hold'} on test)."
        )
    best = selection.get("best_dev_mean")
    if best is not None and (
        chosen is None or best["query"] != chosen["query"] or best["ranker"] != chosen["ranker"]
    ):
        t = best["test_vs_baseline"]
        lines.append(
            "Best dev mean regardless of significance: "
            f"{_label(best['query'])} under {best['ranker'].upper()}, "
            f"dev {best['dev']:.3f} ({best['mean_difference']:+.3f}, p={best['p_value']:.3f}), "
            f"test {best['test']:.3f} ({t['mean_difference']:+.3f}, p={t['p_value']:.3f})."
        )
    lines += ["", "| dev: query | ranker | nDCG@10 | vs baseline | p |", "|---|---|---|---|---|"]
    for c in selection["candidates_dev"]:
        lines.append(
            f"| {_label(c['query'])} | {c['ranker'].upper()} | {c['dev']:.3f} | {c['mean_difference']:+.3f} "
            f"| {c['p_value']:.3f} |"
        )
    return [*lines, ""]


def plot_ndcg(document: dict, path: Path) -> None:
    """nDCG@10 per query form and ranker, one panel per split."""
    require_extra("matplotlib", "plots", "Plotting the retrieval results").use("Agg")
    import matplotlib.pyplot as plt

    systems = document["systems"]
    fig, axes = plt.subplots(1, len(SPLITS), figsize=(12, 4.4), sharey=True)
    rankers = [r for r in RANKERS if any(k.startswith(f"{SPLITS[0]}/{r}/") for k in systems)]
    for ax, split in zip(axes, SPLITS, strict=True):
        names = [k.split("/", 2)[2] for k in systems if k.startswith(f"{split}/bm25/")]
        width = 0.8 / len(rankers)
        for j, ranker in enumerate(rankers):
            offset = (j - (len(rankers) - 1) / 2) * width
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
    """The console summary of a run: one row per query form, ``metric`` under each ranker on ``split``."""
    systems = document["systems"]
    rankers = [r for r in RANKERS if any(k.startswith(f"{split}/{r}/") for k in systems)]
    names = sorted({key.split("/", 2)[2] for key in systems if key.startswith(f"{split}/")})
    order = ["description", "title"] + [n for n in names if n not in ("description", "title")]
    n = document["config"]["num_queries"].get(split, 0)
    lines = [
        f"retrieval on NFCorpus ({split}, {n} vid-desc queries, {metric}; full table in results.md)",
        "| query | " + " | ".join(r.upper() for r in rankers) + " |",
        "|---|" + "---|" * len(rankers),
    ]
    for name in order:
        cells = []
        for ranker in rankers:
            cell = systems.get(f"{split}/{ranker}/{name}", {}).get(metric)
            cells.append("-" if cell is None else f"{cell['mean']:.3f}")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


#: ``hf-querygen reproduce retrieval``: trains nothing; decodes liu2018's saved models when given
REPRODUCTION = Evaluation("retrieval", run=run, summary=summary_table, models_of="liu2018")
