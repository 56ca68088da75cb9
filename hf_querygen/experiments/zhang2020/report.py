"""The report of the Zhang et al. (CIKM'20) reproduction (:mod:`hf_querygen.experiments.zhang2020`):
``results.md`` with Tables 3 and 4 beside the paper's numbers, the sweep, the paper's claims checked on our
means, the default model's tests and the retrieval-sourced setting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hf_querygen.experiments.zhang2020.analysis import RETRIEVED_RELEVANT_CHOICES
from hf_querygen.experiments.zhang2020.systems import (
    ABLATIONS,
    ABSTRACTIVE_BASELINES,
    DEFAULT_MODEL,
    DEFAULT_MODEL_BASELINES,
    DEFAULT_MODEL_METRICS,
    EXTRACTIVE,
    LABELS,
    TABLE3,
    TABLE4,
    TABLE_METRICS,
)


def _cell(document: dict, key: str, metric: str) -> str:
    cell = document["systems"].get(key, {}).get(metric)
    if cell is None:
        return "-"
    scale = 1 if metric in ("output_words", "semantic_similarity") else 100
    if cell["n"] > 1:
        return f"{cell['mean'] * scale:.2f} ± {cell['std'] * scale:.2f}"
    return f"{cell['mean'] * scale:.2f}"


def _table(document: dict, rows: Sequence[str]) -> str:
    significance = document["config"].get("significance_vs_ctrsgen", {})
    head = ["system"]
    for metric in TABLE_METRICS:
        head += [f"{metric} ours", "paper"]
    head += ["R-1 F ours", "R-L F ours", "words", "sem. sim. ours", "p (R-1/R-2/R-L recall vs CtrsGen)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in rows:
        if key not in document["systems"]:
            continue
        cells = [_label(key)]
        for metric in TABLE_METRICS:
            paper = document["paper_numbers"].get(key, {}).get(metric)
            cells += [_cell(document, key, metric), "-" if paper is None else f"{paper * 100:.2f}"]
        cells += [
            _cell(document, key, m) for m in ("rouge1_f", "rougeL_f", "output_words", "semantic_similarity")
        ]
        tests = significance.get(key) if isinstance(significance, dict) else None
        cells.append("/".join(f"{tests[m]['p_value']:.3g}" for m in TABLE_METRICS) if tests else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _label(key: str) -> str:
    return LABELS.get(key, key)


def _mean(document: dict, key: str, metric: str) -> float | None:
    cell = document["systems"].get(key, {}).get(metric)
    return None if cell is None else cell["mean"]


def claims(document: dict) -> list[tuple[str, bool | None]]:
    """The paper's claims checked on our means (ROUGE-1/2/L recall); None = a row is missing."""

    def beats(a: str, b: str) -> bool | None:
        pairs = [(_mean(document, a, m), _mean(document, b, m)) for m in TABLE_METRICS]
        if any(x is None or y is None for x, y in pairs):
            return None
        return all(x > y for x, y in pairs)

    result = []
    for key in TABLE3[:-1]:
        result.append((f"CtrsGen > {_label(key)} (R-1, R-2 and R-L recall)", beats("ctrsgen", key)))
    for key in (*EXTRACTIVE, *ABSTRACTIVE_BASELINES):
        result.append((f"CtrsGen > {_label(key)} (R-1, R-2 and R-L recall)", beats("ctrsgen", key)))
    result.append(("SD2 > PG and SD2 > RSA", _both(beats("sd2", "pg"), beats("sd2", "rsa"))))
    abstractive = [beats(a, e) for a in ABSTRACTIVE_BASELINES for e in EXTRACTIVE]
    result.append(
        (
            "every abstractive baseline > every extractive one",
            None if None in abstractive else all(abstractive),
        )
    )
    q_i = [
        beats(other, "ctrsgen_q_i")
        for other in TABLE3[:-1]
        if other not in ("ctrsgen_q_i", "ctrsgen_reircon")
    ]
    result.append(
        ("CtrsGen-Q-I is below every other ablation but ReIrCon", None if None in q_i else all(q_i))
    )
    return result


def _both(a: bool | None, b: bool | None) -> bool | None:
    return None if a is None or b is None else a and b


def render_markdown(document: dict) -> str:
    config = document["config"]
    seeds = config.get("seeds")
    mode = (
        "quick smoke run (tiny models, data subsets; not for reporting)"
        if config.get("quick")
        else "full run"
    )
    sweep = config.get("contrast_sweep_validation", {})
    lines = [
        "# Zhang et al. CIKM'20, Tables 3-4: query -> intent description on q2id",
        "",
        f"{mode}; **{seeds} seed(s)** per neural row (mean ± std over seeds when more than one); "
        f"test split of {config.get('split_sizes', {}).get('test')} queries; ROUGE in %, recall as the "
        "paper reports, F1 and mean output length in words beside it. The paper's numbers are on its own "
        "5,000/100/258 split with documents ~11x longer and a model trained to convergence; ours are "
        f"from models of {config.get('model_sizes')} trained for "
        f"up to {config.get('training', {}).get('max_steps')} steps (the checkpoint with the best "
        f"validation {config.get('selected_on', 'loss')} kept), decoded "
        f"greedily with {config.get('decoding')}, under the caps {config.get('caps')}; rows run with "
        f"fewer seeds: {config.get('seeds_per_system') or 'none'}. Compare rows with each other, not with "
        "the paper (see NOTES.md).",
        "",
        "## Table 3: ablations",
        "",
        _table(document, TABLE3),
        "## Table 4: baselines",
        "",
        _table(document, TABLE4),
        "p: paired two-tailed t-test against CtrsGen on per-query ROUGE recall (seeds averaged per query). "
        "sem. sim.: cosine of all-MiniLM-L6-v2 mean-pooled sentence embeddings of the description and its "
        "reference (0-1 scale; `-`: the row's outputs were not kept, so it was not measured).",
        "",
        "## Eq. (11) softmax axis / Eq. (12) scaling (validation sweep, 1 seed)",
        "",
        "| setting | R-1 recall | R-2 recall | R-L recall |",
        "|---|---|---|---|",
        *[
            f"| {key} | {v['rouge1_recall'] * 100:.2f} | {v['rouge2_recall'] * 100:.2f} | "
            f"{v['rougeL_recall'] * 100:.2f} |"
            for key, v in sweep.items()
        ],
        "",
        f"Table rows use {config.get('contrast_setting_used')}; best of this run's sweep on validation: "
        f"{config.get('contrast_sweep_best')} (agrees: {config.get('contrast_setting_agrees_with_sweep')}).",
        "",
        "## The paper's claims on our numbers",
        "",
        *[
            f"- {claim}: {'holds' if ok else 'n/a' if ok is None else 'does NOT hold'}"
            for claim, ok in claims(document)
        ],
        "",
        *_default_model_section(document),
        *_device_rows_section(document),
        *_retrieval_section(config.get("retrieval_sourced")),
        f"Beta plot: {config.get('beta_plot')}. Runtime {config.get('timings_s', {}).get('total_s')} s.",
        "",
    ]
    return "\n".join(lines)


def _device_rows_section(document: dict) -> list[str]:
    """Markdown of the rows trained one by one (``studies/device_rows.py``: on a CUDA device, or the CPU
    recipe): where each comes from, the re-run of CtrsGen + copy beside them, each warm-started row's
    paired tests against it, and the ablations (:data:`~.systems.ABLATIONS`: a row with the contrast or the
    pointer minus the row without)."""
    config = document["config"]
    provenance = config.get("row_provenance") or {}
    if not provenance:
        return []
    lines = ["## Beyond the paper: rows trained one by one (a GPU, or the CPU recipe)", ""]
    if config.get("device_rows_note"):
        lines += [str(config["device_rows_note"]), ""]
    lines += [f"- **{_label(row)}**: {text}" for row, text in provenance.items()]
    # every row of the section side by side: the table's own (their cells in ``systems``) and the re-runs
    # beside them (``device_rows``)
    systems = document.get("systems") or {}
    cells = {row: systems[row] for row in provenance if row in systems}
    cells.update(config.get("device_rows") or {})
    if cells:
        metrics = ("rouge1_recall", "rougeL_recall", "rougeL_f", "output_words", "semantic_similarity")
        view = {"systems": cells}
        lines += ["", "| row | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
        lines += [f"| {row} | " + " | ".join(_cell(view, row, m) for m in metrics) + " |" for row in cells]
    paired = [
        *(config.get("warm_start_vs_copy") or {}).values(),
        *(test for key in ABLATIONS for test in (config.get(key) or {}).values()),
    ]
    for tests in paired:
        lines += [
            "",
            str(tests.get("note", "")),
            "",
            "| metric | difference | p (randomization) | p (t-test) |",
            "|---|---|---|---|",
        ]
        for metric, result in tests["metrics"].items():
            lines.append(
                f"| {metric} | {result['permutation']['mean_difference']:+.4f} | "
                f"{result['permutation']['p_value']:.3g} | {result['ttest']['p_value']:.3g} |"
            )
    return [*lines, ""]


def _default_model_section(document: dict) -> list[str]:
    """Markdown of the default model (CtrsGen + copy) against copying the query and TextRank on TEST."""
    result = document["config"].get("default_model")
    if not isinstance(result, Mapping) or DEFAULT_MODEL not in document["systems"]:
        return []
    rows = (DEFAULT_MODEL, *DEFAULT_MODEL_BASELINES)
    lines = [
        "## Beyond the paper: the default model (CtrsGen + copy) vs copying the query and TextRank",
        "",
        str(result.get("note", "")),
        "",
        "| system | " + " | ".join(f"{m} (test)" for m in DEFAULT_MODEL_METRICS) + " | words |",
        "|---|" + "---|" * (len(DEFAULT_MODEL_METRICS) + 1),
    ]
    for key in rows:
        if key in document["systems"]:
            cells = [_cell(document, key, m) for m in (*DEFAULT_MODEL_METRICS, "output_words")]
            lines.append(f"| {_label(key)} | " + " | ".join(cells) + " |")
    tests = result.get("significance", {}).get("test", {})
    lines += ["", "| CtrsGen + copy minus | metric | difference (points) | p (randomization) | p (t-test) |"]
    lines.append("|---|---|---|---|---|")
    for baseline, by_metric in tests.items():
        for metric, by_method in by_metric.items():
            permutation, ttest = by_method["permutation"], by_method["ttest"]
            lines.append(
                f"| {_label(baseline)} | {metric} | {permutation['mean_difference'] * 100:+.2f} | "
                f"{permutation['p_value']:.3g} | {ttest['p_value']:.3g} |"
            )
    return [*lines, ""]


def _retrieval_section(result: Any) -> list[str]:
    """Markdown of :func:`retrieval_sourced` (judged vs retrieved documents, same CtrsGen models)."""
    lines = ["## Beyond the paper: relevant / irrelevant documents from the retrieval engine", ""]
    if not isinstance(result, Mapping):
        return [*lines, f"{result}", ""]
    summary = result["summary"]
    lines += [
        f"The same CtrsGen models (seeds {result['seeds']}) decode the test queries twice: with the judged "
        f"documents (Table 3) and with BM25 over all {result['collection_documents']:,} judged q2id "
        f"documents (top {result['relevant_documents']} = relevant, chosen on validation from "
        f"{list(RETRIEVED_RELEVANT_CHOICES)}; the next {result['irrelevant_documents']} = irrelevant). "
        f"{result['retrieved_relevant_precision'] * 100:.1f}% of the retrieved 'relevant' documents are "
        f"judged relevant for their query; {result.get('test_queries_retrieving_nothing', 0)} test "
        "queries retrieve nothing (no query word in the collection) and get the query as their document.",
        "",
        "| metric | judged documents | retrieved documents | loss (judged - retrieved) | p (paired t) |",
        "|---|---|---|---|---|",
    ]
    for metric, row in summary.items():
        scale = 1 if metric in ("output_words", "semantic_similarity") else 100
        p_value = f"{row['p_value']:.3g}" if "p_value" in row else ""
        lines.append(
            f"| {metric} | {row['judged'] * scale:.2f} | {row['retrieved'] * scale:.2f} | "
            f"{row['loss'] * scale:.2f} | {p_value} |"
        )
    return [*lines, ""]
