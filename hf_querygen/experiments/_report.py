"""One results format for every paper reproduction.

``results.json``::

    {"paper": "liu2018",
     "systems": {"<system>": {"<metric>": {"mean": x, "std": s, "n": k}}},
     "paper_numbers": {"<system>": {"<metric>": x}},
     "config": {...}}

plus a markdown table with the paper's number beside ours for each (system, metric).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..utils import require_extra


def aggregate(runs: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Per metric mean, sample std (0 for a single run) and n over runs (seeds or folds)."""
    metrics = sorted({m for run in runs for m in run})
    out = {}
    for metric in metrics:
        values = [float(run[metric]) for run in runs if metric in run]
        out[metric] = {
            "mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "n": len(values),
        }
    return out


def results_document(
    paper: str,
    system_runs: Mapping[str, Sequence[Mapping[str, float]]],
    paper_numbers: Mapping[str, Mapping[str, float]],
    config: Mapping,
) -> dict:
    return {
        "paper": paper,
        "systems": {system: aggregate(runs) for system, runs in system_runs.items()},
        "paper_numbers": {s: dict(m) for s, m in paper_numbers.items()},
        "config": dict(config),
    }


def _fmt(cell: Mapping[str, float] | None, digits: int) -> str:
    if cell is None:
        return "-"
    if cell["n"] > 1:
        return f"{cell['mean']:.{digits}f} ± {cell['std']:.{digits}f}"
    return f"{cell['mean']:.{digits}f}"


def markdown_table(
    document: Mapping,
    metrics: Sequence[str],
    systems: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    digits: int = 3,
) -> str:
    """Rows = systems, for each metric two columns: ours (mean ± std) and the paper's."""
    systems = list(systems or document["systems"])
    labels = labels or {}
    header = ["system"] + [f"{m} ({kind})" for m in metrics for kind in ("ours", "paper")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for system in systems:
        ours = document["systems"].get(system, {})
        paper = document["paper_numbers"].get(system, {})
        row = [labels.get(system, system)]
        for metric in metrics:
            row.append(_fmt(ours.get(metric), digits))
            value = paper.get(metric)
            row.append(
                "-"
                if value is None or (isinstance(value, float) and math.isnan(value))
                else f"{value:.{digits}f}"
            )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_results(document: Mapping, out_dir: str | Path, markdown: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    (out / "results.md").write_text(markdown)
    return out


def pyplot(what: str):
    """matplotlib.pyplot on the file-only Agg backend (the ``plots`` extra; ``what`` names the caller in
    the install hint)."""
    require_extra("matplotlib", "plots", what).use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt, fig, ax, xlabel: str, ylabel: str, title: str, path: Path) -> None:
    """Label one-panel ``fig``, add legend and grid, write it to ``path`` (PNG, 120 dpi) and close it."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
