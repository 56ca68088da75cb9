"""The report of the Ding & Balog (ICTIR'18) reproduction (:mod:`hf_querygen.experiments.ding2018`):
``results.md`` (Table 2 on both test splits, the paper's ordering, the Figs. 5-6 tables) and the
figures ``fig5.png`` / ``fig6.png``."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_querygen.experiments._report import markdown_table, pyplot, save_figure
from hf_querygen.experiments.ding2018.data import VARIANT_LABELS, VARIANTS
from hf_querygen.experiments.ding2018.systems import (
    EXTRA_ROW_LABELS,
    HEADLINE,
    LABELS,
    TABLE_ORDER,
    TEST_SPLITS,
    USER_MEASURES,
)


def render_markdown(document: dict) -> str:
    config = document["config"]
    systems = [k for k in (*TABLE_ORDER, *EXTRA_ROW_LABELS) if k in document["systems"]]
    labels = {**LABELS, **EXTRA_ROW_LABELS}
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
        *[f"- **{labels.get(k, k)}**: {text}" for k, text in config.get("row_provenance", {}).items()],
        "",
        "ROUGE: rouge-score F1, max over references (Eq. 10; T_0 has one reference so avg = max); BLEU: "
        f"sacrebleu `{json.dumps(config.get('bleu_signatures', config['bleu_signature']))}` (0-1). "
        "The paper's T_0 is 1,000 WikiAnswers pairs; ours "
        "is the QALD seed_pairs test split. The paper has no nl2kw column.",
        "",
        "## Table 2 on T_0 test",
        "",
        markdown_table(document, [f"t0/{m}" for m in HEADLINE], systems, labels, digits=4),
        "## Table 2 on the reversed nl2kw test (human keyword queries)",
        "",
        markdown_table(document, [f"nl2kw/{m}" for m in HEADLINE], systems, labels, digits=4),
        "## ROUGE-L recall (max over references) and avg-over-references F1",
        "",
        markdown_table(
            document,
            [f"{s}/ROUGE-L recall" for s in TEST_SPLITS] + [f"{s}/ROUGE-L avg" for s in TEST_SPLITS],
            systems,
            labels,
            digits=4,
        ),
        *render_user_measures(document, systems, labels),
        "## The paper's ordering CopyNet > AttNet > EDNet > TBM > SDM",
        "",
        "| split/metric | our ranking (best first) | pairs that hold | all hold |",
        "|---|---|---|---|",
    ]
    for key, check in config.get("orderings", {}).items():
        held = ", ".join(f"{p} {'yes' if v else 'NO'}" for p, v in check["pairs"].items())
        ranking = " > ".join(labels.get(k, k) for k in check["ours"])
        lines.append(f"| {key} | {ranking} | {held} | {'yes' if check['holds'] else 'NO'} |")
    lines += ["", *render_figures(config)]
    lines += ["", f"Timings (s): {json.dumps(config.get('timings_s', {}))}", ""]
    return "\n".join(lines)


def render_user_measures(document: dict, systems: list[str], labels: Mapping[str, str]) -> list[str]:
    """Table 2's measures of what users need: well-formed share and keywords kept per test split, for the
    rows that have them (measured from each run's outputs), with how they were measured."""
    metrics = [f"{split}/{m}" for split in TEST_SPLITS for m in USER_MEASURES]
    rows = [k for k in systems if any(m in document["systems"][k] for m in metrics)]
    if not rows:
        return []
    measures = document["config"].get("user_measures", {})
    classifier = measures.get("classifier")
    if classifier:
        how = (
            f"wellformed: {measures.get('wellformed', '')}; the classifier "
            f"({classifier['backbone']['model_id']}) is right on {classifier['test_accuracy']:.3f} of the "
            f"corpus' test split, the majority class ({classifier['majority_class']}) on "
            f"{classifier['majority_test_accuracy']:.3f}. "
        )
    else:
        how = f"wellformed: {measures.get('wellformed', 'not measured')}. "
    return [
        "## What users need beside ROUGE",
        "",
        how + f"{measures.get('keywords_kept', 'keywords_kept')}. Read well-formedness against the reference "
        "row (the test questions themselves), not as an absolute.",
        "",
        markdown_table(document, metrics, rows, labels, digits=3),
    ]


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
    save_figure(
        plt,
        fig,
        ax,
        "training pairs L",
        "share of the vocabulary of T",
        "Fig. 6: vocabulary coverage of T_L",
        path,
    )


def plots(document: dict, out: Path) -> None:
    config = document["config"]
    if config.get("fig5"):
        plot_fig5(config["fig5"], out / "fig5.png")
    if config.get("fig6"):
        plot_fig6(config["fig6"], out / "fig6.png")
