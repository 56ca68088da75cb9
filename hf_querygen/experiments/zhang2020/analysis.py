"""The analyses of the Zhang et al. (CIKM'20) reproduction (:mod:`hf_querygen.experiments.zhang2020`),
hooks of its ``Reproduction`` that add to the results' ``config``: the run's sizes, caps and device
(``describe``), the Eq. (11)/(12) sweep's choice, paired significance tests against CtrsGen and for the
default model, the beta plot of the contrast attention (Fig. 3), and CtrsGen on documents from the
retrieval engine instead of the judged ones."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_querygen.experiments._report import pyplot
from hf_querygen.experiments.jobs import run_name
from hf_querygen.experiments.tables import RunContext
from hf_querygen.experiments.zhang2020.systems import (
    CONTRAST_SETTING,
    DECODING,
    DEFAULT_MODEL,
    DEFAULT_MODEL_BASELINES,
    DEFAULT_MODEL_METRICS,
    SELECTION,
    SWEEP,
    SYSTEMS,
    TABLE_METRICS,
    TASK,
    sweep_key,
)
from hf_querygen.inference import run_generate
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.q2id.encoding import Q2IDCollator, cap_report, decode_description, encode_q2id
from hf_querygen.tasks.q2id.task import DocumentRetriever, as_source


# ---------------------------------------------------------------- significance
def semantic_similarity_measure(data: Any, split: str, outputs: list[str]) -> dict[str, float]:
    """Tables 3-4's semantic similarity of every row (``Reproduction.measures``): the cosine of the
    backbone's mean-pooled sentence embeddings (all-MiniLM-L6-v2, offline) between each description and
    its reference, mean over queries (:func:`hf_querygen.metrics.semantic_similarity.semantic_similarity`;
    one reference per query, so max = mean over references). Without the ``[pretrained]`` extra (no offline
    backbone) the column stays empty, with a warning."""
    from hf_querygen.metrics.semantic_similarity import semantic_similarity

    try:
        scores = semantic_similarity(outputs, data.references(split))
    except ImportError as err:
        warnings.warn(f"zhang2020: semantic_similarity not measured ({err})", stacklevel=2)
        return {}
    return {"semantic_similarity": scores["semantic_similarity"]}


def _per_query(context: RunContext, key: str, split: str = "test") -> list[dict[str, float]] | None:
    """Per-query ROUGE of ``key`` averaged over its seeds (None if it has no run)."""
    records = [r for r in context.records if r["system"] == key and split in r.get("outputs", {})]
    if not records:
        return None
    data = context.data[records[0]["fold"]]
    references = data.references(split)
    rows = [data.task.per_example_scores(r["outputs"][split], references) for r in records]
    return [
        {m: sum(run[i][m] for run in rows) / len(rows) for m in rows[0][i]} for i in range(len(references))
    ]


def significance(context: RunContext) -> dict[str, Any]:
    """Paired two-tailed t-test (scipy) of every table row vs CtrsGen on per-query ROUGE recall/F1."""
    from scipy.stats import ttest_rel

    reference = _per_query(context, "ctrsgen")
    if reference is None:
        return {"significance_vs_ctrsgen": "no CtrsGen run"}
    result: dict[str, Any] = {}
    for system in SYSTEMS:
        if system.key == "ctrsgen":
            continue
        rows = _per_query(context, system.key)
        if rows is None:
            continue
        result[system.key] = {}
        for metric in (*TABLE_METRICS, "rouge1_f", "rouge2_f", "rougeL_f"):
            ours = [row[metric] for row in reference]
            theirs = [row[metric] for row in rows]
            difference = sum(o - t for o, t in zip(ours, theirs, strict=True)) / len(ours)
            same = all(o == t for o, t in zip(ours, theirs, strict=True))
            p_value = 1.0 if same else float(ttest_rel(ours, theirs).pvalue)
            result[system.key][metric] = {"ctrsgen_minus_system": difference, "p_value": p_value}
    return {"significance_vs_ctrsgen": result, "significance_test": "paired two-tailed t-test, per query"}


def paired_tests(
    ours: Sequence[Mapping[str, float]],
    theirs: Sequence[Mapping[str, float]],
    metrics: Sequence[str] = DEFAULT_MODEL_METRICS,
) -> dict[str, dict[str, dict[str, float]]]:
    """Per-query score rows of two systems -> {metric: {"permutation" | "ttest": {mean_difference, p_value}}}
    for each of ``metrics`` (paired, two-sided; ours minus theirs)."""
    from hf_querygen.metrics.retrieval import paired_test

    return {
        metric: {
            method: paired_test([r[metric] for r in ours], [r[metric] for r in theirs], method=method)
            for method in ("permutation", "ttest")
        }
        for metric in metrics
    }


def default_model_tests(context: RunContext) -> dict[str, Any]:
    """Beyond the paper: the default model against copying the query and TextRank on TEST (per query,
    seeds averaged; paired randomization test and t-test)."""
    ours = _per_query(context, DEFAULT_MODEL)
    if ours is None:
        return {}
    tests = {}
    for baseline in DEFAULT_MODEL_BASELINES:
        theirs = _per_query(context, baseline)
        if theirs is not None:
            tests[baseline] = paired_tests(ours, theirs)
    return {"default_model": {"system": DEFAULT_MODEL, "significance": {"test": tests}}}


# ---------------------------------------------------------------- the sweep's choice and the run's settings
def sweep_choice(context: RunContext) -> dict[str, Any]:
    """The validation scores of the Eq. (11)/(12) sweep, its best setting (ROUGE-1 recall, then ROUGE-L
    recall) and whether the table's CtrsGen setting is that one."""
    scores = {}
    for setting in SWEEP:
        key = "ctrsgen" if setting == CONTRAST_SETTING else sweep_key(setting)
        runs = [r for r in context.records if r["system"] == key and r["seed"] == 0]
        runs = [r for r in runs if "validation" in r["scores"]]
        if runs:
            scores[sweep_key(setting)] = {m: runs[0]["scores"]["validation"][m] for m in TABLE_METRICS}
    if not scores:
        return {}
    best = max(scores, key=lambda k: (scores[k]["rouge1_recall"], scores[k]["rougeL_recall"]))
    return {
        "contrast_sweep_validation": scores,
        "contrast_sweep_best": best,
        "contrast_setting_used": dict(CONTRAST_SETTING),
        "contrast_setting_agrees_with_sweep": best == sweep_key(CONTRAST_SETTING),
    }


def _caps_of(context: RunContext) -> dict[str, Any]:
    """The caps every model of the run was trained and decoded with, and how much text they drop (train)."""
    data = context.data[context.folds[0].id]
    caps = data.task.caps_for(data.tokenizer)
    report = cap_report(data.splits["train"], caps, data.tokenizer)
    kept = {
        side: round(row["words_kept_fraction"], 4)
        for side, row in report.items()
        if "words_kept_fraction" in row
    }
    return {**dataclasses.asdict(caps), "train_words_kept_fraction": kept}


def _device() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return "cpu (no CUDA device)"


def describe(context: RunContext) -> dict[str, Any]:
    return {
        "device": _device(),
        "paper_sizes": "embeddings 300, BiGRU/GRU 256, vocabulary 120K, 5,000 training queries",
        "model_sizes": dict(context.budget.preset_overrides.get("ctrsgen", {})),
        "pointer_generator_sizes": dict(context.budget.preset_overrides.get("pg", {})),
        "training": dict(context.budget.training_overrides),
        "selected_on": SELECTION["select_on"],
        "decoding": {"greedy": True, **DECODING, "max_new_tokens": "max_description_words + 1"},
        "seeds_per_system": dict(context.budget.seeds_per_system),
        "caps": _caps_of(context),
        "paper_numbers_note": "the paper's Tables 3-4 (ROUGE recall, %, here as fractions), 5,000/100/258",
        "seeds_note": f"{context.seeds} seed(s) per neural row; baselines are deterministic (1 run)",
    }


# ---------------------------------------------------------------- documents from the retrieval engine
#: Beyond the paper: how many BM25 top-ranked documents stand in for the relevant set (picked on
#: VALIDATION with the seed-0 CtrsGen), and how many documents after them for the irrelevant set
RETRIEVED_RELEVANT_CHOICES = (3, 5, 10)
RETRIEVED_IRRELEVANT = 5


def collection_documents(splits: Mapping[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """Every distinct judged document of the q2id splits (relevant and irrelevant, all splits), by doc_id in
    first-seen order: (ids, records). This pool is the "document collection" of the retrieval setting."""
    documents: dict[str, dict[str, Any]] = {}
    for split in splits:
        for column in ("relevant_documents", "irrelevant_documents"):
            for docs in splits[split][column]:
                for doc in docs:
                    documents.setdefault(doc["doc_id"], {"sentences": list(doc["sentences"])})
    return list(documents), list(documents.values())


def _saved_ctrsgen(context: RunContext) -> list[tuple[int, Path]]:
    fold = context.folds[0]
    folders = [
        (seed, context.save_models / run_name("ctrsgen", seed, fold.id)) for seed in range(context.seeds)
    ]
    return [(seed, folder) for seed, folder in folders if folder.is_dir()]


def retrieval_sourced(context: RunContext) -> dict[str, Any]:
    """Beyond the paper: CtrsGen given only the query and the document collection. The same trained models
    (every seed) decode the TEST queries with relevant / irrelevant documents from BM25 over all judged
    q2id documents (:class:`~hf_querygen.tasks.q2id.task.DocumentRetriever`) instead of the judged ones;
    the number of relevant documents is chosen on VALIDATION. Reports ROUGE both ways, the loss and a
    paired t-test, and how many retrieved "relevant" documents are judged relevant for their query."""
    if context.save_models is None:
        return {"retrieval_sourced": "not run: needs --save-models (the trained CtrsGen models)"}
    saved = _saved_ctrsgen(context)
    if not saved:
        return {"retrieval_sourced": "not run: no saved CtrsGen model"}
    from scipy.stats import ttest_rel
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    fold = context.folds[0]
    data = context.data[fold.id]
    task = data.task
    decoding = dict(next(s for s in SYSTEMS if s.key == "ctrsgen").decoding)
    ids, records = collection_documents(fold.splits)
    # a query none of whose words is in the collection gets itself as its one relevant document (counted)
    retriever = DocumentRetriever.from_documents(
        records, ids=ids, irrelevant=RETRIEVED_IRRELEVANT, if_nothing="query"
    )

    def load(folder: Path):
        return AutoModelForSeq2SeqLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)

    def retrieved(split: str, relevant: int) -> list[dict[str, Any]]:
        retriever.relevant = relevant
        return retriever.sources([source["query"] for source in data.sources(split)])

    model, tokenizer = load(saved[0][1])
    validation = {}
    for relevant in RETRIEVED_RELEVANT_CHOICES:
        outputs = task.predict(model, tokenizer, retrieved("validation", relevant), **decoding)
        validation[relevant] = task.score(outputs, data.references("validation"), [])
    chosen = max(validation, key=lambda k: (validation[k]["rouge1_recall"], validation[k]["rougeL_recall"]))
    retriever.unanswered = 0
    sources = retrieved("test", chosen)
    unanswered = retriever.unanswered
    references = data.references("test")
    judged_ids = [{doc["doc_id"] for doc in example["relevant_documents"]} for example in fold.splits["test"]]
    precision = [  # ids of the index are the doc_ids
        len(set(retriever.retrieved_ids(source["query"])[0]) & judged) / chosen
        for source, judged in zip(sources, judged_ids, strict=True)
    ]
    per_seed, per_query = [], []
    for seed, folder in saved:
        if seed != saved[0][0]:
            model, tokenizer = load(folder)
        outputs = task.predict(model, tokenizer, sources, **decoding)
        scores = task.score(outputs, references, sources)
        judged = next(r for r in context.records if r["system"] == "ctrsgen" and r["seed"] == seed)
        per_seed.append({"seed": seed, "retrieved": scores, "judged": judged["scores"]["test"]})
        per_query.append(
            (
                task.per_example_scores(judged["outputs"]["test"], references),
                task.per_example_scores(outputs, references),
            )
        )
    summary: dict[str, Any] = {}
    for metric in (*TABLE_METRICS, "rouge1_f", "rougeL_f", "output_words"):
        judged_values = [row["judged"][metric] for row in per_seed]
        retrieved_values = [row["retrieved"][metric] for row in per_seed]
        summary[metric] = {
            "judged": sum(judged_values) / len(judged_values),
            "retrieved": sum(retrieved_values) / len(retrieved_values),
        }
        summary[metric]["loss"] = summary[metric]["judged"] - summary[metric]["retrieved"]
        if metric in TABLE_METRICS:
            a = [sum(run[0][i][metric] for run in per_query) / len(per_query) for i in range(len(references))]
            b = [sum(run[1][i][metric] for run in per_query) / len(per_query) for i in range(len(references))]
            summary[metric]["p_value"] = 1.0 if a == b else float(ttest_rel(a, b).pvalue)
    return {
        "retrieval_sourced": {
            "collection_documents": len(records),
            "ranker": "bm25",
            "relevant_choices_validation": {str(k): v for k, v in validation.items()},
            "relevant_documents": chosen,
            "irrelevant_documents": RETRIEVED_IRRELEVANT,
            "retrieved_relevant_precision": sum(precision) / len(precision),
            "test_queries_retrieving_nothing": unanswered,
            "seeds": [row["seed"] for row in per_seed],
            "per_seed": per_seed,
            "summary": summary,
        }
    }


# ---------------------------------------------------------------- the beta plot (Fig. 3)
def beta_analysis(context: RunContext, queries: int = 3) -> dict[str, Any]:
    """With saved models: the beta plot of the seed-0 CtrsGen for the first ``queries`` TEST queries."""
    if context.save_models is None or context.out_dir is None:
        return {"beta_plot": "not drawn: run with --save-models to keep the CtrsGen model"}
    fold = context.folds[0]
    folder = context.save_models / run_name("ctrsgen", 0, fold.id)
    if not folder.is_dir():
        return {"beta_plot": f"not drawn: no saved model at {folder}"}
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    sources = context.data[fold.id].sources("test")[:queries]
    chosen = plot_beta(model, tokenizer, sources, context.out_dir / "beta.png")
    return {"beta_plot": "beta.png", "beta_top_sentences": chosen}


def contrast_weights(model: Any, tokenizer: Any, source: Mapping[str, Any]) -> dict[str, Any]:
    """For one q2id source: the greedy description and, at its first output word (Fig. 3 of the paper),
    alpha^r (Eq. 7), beta (Eq. 8-11) and beta * alpha (Eq. 12) over the kept relevant sentences."""
    import torch

    source = as_source(source)
    task = _task()
    encoded = encode_q2id(
        {k: [v] for k, v in source.items()}, tokenizer, task.caps_for(tokenizer), with_labels=False
    )
    batch = Q2IDCollator(tokenizer.pad_token_id)([{k: v[0] for k, v in encoded.items()}])
    generated = run_generate(model, batch)  # the saved generation config (greedy, its max length)
    labels = generated[:, 1:] if generated[0, 0] == model.config.decoder_start_token_id else generated
    with torch.no_grad():
        out = model(**batch, labels=labels, output_attentions=True)
    # the model compacts the kept relevant sentences (documents x sentences, in order) to the front of U
    sentence_mask = batch["relevant_attention_mask"][0].any(-1).flatten().bool()
    sentences = [
        " ".join(tokenizer.convert_ids_to_tokens([i for i in ids if i != tokenizer.pad_token_id]))
        for ids in batch["relevant_input_ids"][0].flatten(0, 1)[sentence_mask].tolist()
    ]
    kept = len(sentences)

    def pick(weights: torch.Tensor) -> list[float]:  # (B, Z, U) -> the first output word's U weights
        return weights[0, 0, :kept].tolist()

    return {
        "query": source["query"],
        "description": decode_description(generated[0], tokenizer),
        "sentences": sentences,
        "alpha": pick(out.relevant_attention),
        "beta": pick(out.contrast_attention),
        "beta_alpha": pick(out.document_attention),
    }


def _task():
    return get_task(TASK)


def plot_beta(model: Any, tokenizer: Any, sources: Sequence[Mapping[str, Any]], path: Path) -> list[dict]:
    """One panel per source: alpha^r, beta and beta*alpha over its relevant sentences at the first output
    word; saves a PNG at ``path``; returns per source the query and its top-3 sentences by beta*alpha."""
    plt = pyplot("Plotting the zhang2020 beta plot")
    weights = [contrast_weights(model, tokenizer, source) for source in sources]
    fig, axes = plt.subplots(len(weights), 1, figsize=(8, 2.6 * len(weights)), squeeze=False)
    chosen = []
    for ax, w in zip(axes[:, 0], weights, strict=True):
        positions = range(len(w["sentences"]))
        width = 0.28
        ax.bar([p - width for p in positions], w["alpha"], width, label="alpha^r (Eq. 7)")
        ax.bar(list(positions), w["beta"], width, label="beta (Eq. 8-11)")
        ax.bar([p + width for p in positions], w["beta_alpha"], width, label="beta*alpha (Eq. 12)")
        ax.set_title(f"query: {w['query'][:60]} -> {w['description'][:50]}", fontsize=8)
        ax.set_xlabel("relevant sentence", fontsize=8)
        ax.legend(fontsize=6)
        order = sorted(positions, key=lambda u: -w["beta_alpha"][u])[:3]
        chosen.append({"query": w["query"], "top_sentences": [w["sentences"][u][:120] for u in order]})
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return chosen
