"""Rows of Table 4 trained on a CUDA device (:mod:`hf_querygen.experiments.device_rows`), added to the
committed results with their semantic similarity and the warm start's paired tests against CtrsGen + copy.

    python -m hf_querygen.experiments.zhang2020.studies.device_rows \\
        warm_start='RUNS/warm_start-seed*.json' ctrsgen_copy_h200='RUNS2/ctrsgen_copy-seed*.json' ...

``ROW=GLOB``: one row over the runner's records that GLOB matches (one per seed): test scores as recorded
(mean, std, n over seeds), ``semantic_similarity`` measured here from the records' outputs
(:func:`hf_querygen.metrics.semantic_similarity.semantic_similarity`, as the table's measure). A ROW that is
a system of the table (``warm_start``) replaces its cells; any other name (``ctrsgen_copy_h200``: the same
recipe as a table row, trained again beside the warm start) goes in ``config["device_rows"]``.
``config["warm_start_vs_copy"]`` holds, per warm-started row given (``WARM_START_ROWS``, and the rows
decoding their models another way, ``WARM_START_VARIANTS``), the paired tests (randomization and t-test, per
query, seeds averaged) against :data:`COPY_RERUN` on ROUGE and semantic similarity;
``config["contrast_ablation"]`` / ``["pointer_ablation"]`` / ``["length_cap_ablation"]``, per row with the
contrast / the pointer / the length cap whose row without it is given too (``ABLATIONS``), the same tests on
the seeds both have. ``--drop ROW ...`` removes rows whose committed cells no longer hold. ``results.md`` is
re-rendered.
"""

from __future__ import annotations

import argparse
import glob
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_querygen.experiments._report import aggregate, write_results
from hf_querygen.experiments.jobs import _fold_data
from hf_querygen.experiments.recipes import _folds
from hf_querygen.experiments.zhang2020 import REPRODUCTION, WARM_START_ROWS
from hf_querygen.experiments.zhang2020.analysis import paired_tests
from hf_querygen.experiments.zhang2020.studies import RESULTS_DIR as HERE
from hf_querygen.experiments.zhang2020.systems import ABLATIONS, WARM_START_VARIANTS
from hf_querygen.metrics.semantic_similarity import semantic_similarity

#: CtrsGen + copy trained again with its own recipe on the same device: the outputs the paired tests need
#: (the committed CPU run kept none)
COPY_RERUN = "ctrsgen_copy_h200"
COMPARED = ("rougeL_f", "rouge1_recall", "rougeL_recall", "semantic_similarity")


def load_rows(specs: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """``ROW=GLOB`` -> {row: records sorted by seed}; a glob that matches nothing is an error."""
    rows = {}
    for spec in specs:
        row, sep, pattern = spec.partition("=")
        if not sep or not row or not pattern:
            raise SystemExit(f"expected ROW=GLOB, got {spec!r}")
        paths = sorted(glob.glob(pattern))
        if not paths:
            raise SystemExit(f"{row}: no records match {pattern!r}")
        records = [json.loads(Path(path).read_text(encoding="utf-8")) for path in paths]
        rows[row] = sorted(records, key=lambda record: record["seed"])
    return rows


def record_queries(
    data: Any, record: Mapping[str, Any], similarity: Sequence[float]
) -> list[dict[str, float]]:
    """One record's per-query test ROUGE (the task's per-example scores) and semantic similarity
    (``similarity``: its per-query cosines)."""
    rows = data.task.per_example_scores(record["outputs"]["test"], data.references("test"))
    return [{**row, "semantic_similarity": s} for row, s in zip(rows, similarity, strict=True)]


def seed_mean(runs: Sequence[Sequence[Mapping[str, float]]]) -> list[dict[str, float]]:
    """Per-query scores of several runs (seeds) -> their mean per query, on :data:`COMPARED`."""
    return [
        {metric: sum(run[i][metric] for run in runs) / len(runs) for metric in COMPARED}
        for i in range(len(runs[0]))
    ]


def provenance(row: str, records: Sequence[Mapping[str, Any]]) -> str:
    """Where a row comes from: device, budget, steps and the decoding chosen, per seed; the system that
    trained the records when it is not the row (a recipe found to be another row's); whether the records
    were decoded again from kept models rather than trained."""
    first = records[0]
    rescored = sum(1 for record in records if record.get("rescored_from"))
    mixed = 0 < rescored < len(records)
    trained_as = str(first.get("system", "")).rsplit("/", 1)[-1]
    origin = f"records of `{first['system']}`, " if trained_as and trained_as != row else ""
    if row in WARM_START_VARIANTS:  # no model of its own: another row's, decoded its way
        origin = f"{origin}the `{WARM_START_VARIANTS[row]}` model of each seed decoded this row's way, "
    seeds = "; ".join(
        f"seed {r['seed']}: {r['training']['global_steps']:,} steps ({r['training']['epochs']:.1f} epochs), "
        f"decoding {json.dumps(r.get('decoding'))}"
        + (" (its kept model decoded again, `--rescore-models`)" if mixed and r.get("rescored_from") else "")
        for r in records
    )
    if rescored == len(records):
        how = (
            "the models an earlier run of the row's own recipe kept, decoded and scored again with the row's "
            "current decoding choice (`--rescore-models`, no training)"
        )
    else:
        # the limit of the runs the runner trained (a rescored record has none of its own)
        limit = next(r["time_limit_s"] for r in records if not r.get("rescored_from"))
        how = f"the runner's training and scoring, the row's own recipe, time limit {limit} s"
    return (
        f"{origin}{len(records)} seed(s) on {first.get('device')} (`python -m "
        f"hf_querygen.experiments.device_rows --paper zhang2020 --budget {first.get('budget')}`: {how}); "
        f"{seeds}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rows", nargs="*", help="ROW=GLOB of the runner's records")
    parser.add_argument(
        "--drop", nargs="+", default=[], help="rows whose committed cells no longer hold (a recipe's bug)"
    )
    parser.add_argument("--note", default=None, help="what the section of these rows must say first")
    args = parser.parse_args(argv)
    rows = load_rows(args.rows)
    document = json.loads((HERE / "results.json").read_text())
    if args.note is not None:
        document["config"]["device_rows_note"] = args.note
    for row in args.drop:
        for place in (document["systems"], document["config"].get("device_rows") or {}):
            place.pop(row, None)
        for key in ("row_provenance", "warm_start_vs_copy", *ABLATIONS):
            (document["config"].get(key) or {}).pop(row, None)
    fold = _folds(REPRODUCTION, REPRODUCTION.budgets["full"], None)[0]
    data = _fold_data(REPRODUCTION, fold, {})
    config = document["config"]
    table_keys = {system.key for system in REPRODUCTION.systems}
    per_row, by_seed, summary = {}, {}, {}
    for row, records in rows.items():
        runs, similarities = [], []
        for record in records:
            if len(record["outputs"]["test"]) != len(data.references("test")):
                raise SystemExit(
                    f"{row} seed {record['seed']}: its test outputs are not this fold's test split"
                )
            # each description embedded once: the per-query cosines feed the paired tests, their mean is
            # the row's cell (what Reproduction.measures' semantic_similarity_measure computes)
            similarity = semantic_similarity(record["outputs"]["test"], data.references("test"))
            similarities.append(similarity["per_example"])
            runs.append(
                {**record["scores"]["test"], "semantic_similarity": similarity["semantic_similarity"]}
            )
        cells = aggregate(runs)
        target = document["systems"] if row in table_keys else config.setdefault("device_rows", {})
        target[row] = cells
        config.setdefault("row_provenance", {})[row] = provenance(row, records)
        by_seed[row] = {
            r["seed"]: record_queries(data, r, s) for r, s in zip(records, similarities, strict=True)
        }
        per_row[row] = seed_mean(list(by_seed[row].values()))
        summary[row] = {metric: round(cell["mean"], 4) for metric, cell in cells.items()}
    tests = config.setdefault("warm_start_vs_copy", {})
    warm_starts = (*WARM_START_ROWS, *WARM_START_VARIANTS)
    for row in (row for row in warm_starts if row in per_row and COPY_RERUN in per_row):
        tests[row] = {
            "metrics": paired_tests(per_row[row], per_row[COPY_RERUN], COMPARED),
            "note": f"{row} minus {COPY_RERUN} on the {len(per_row[row])} test queries, per-query scores "
            "averaged over each row's seeds; paired randomization test (two-sided) and paired t-test",
        }
    for config_key, (pairs, part) in ABLATIONS.items():
        for row, without in pairs.items():
            seeds = sorted(set(by_seed.get(row, {})) & set(by_seed.get(without, {})))
            if not seeds:
                continue
            queries = {key: seed_mean([by_seed[key][seed] for seed in seeds]) for key in (row, without)}
            config.setdefault(config_key, {})[row] = {
                "metrics": paired_tests(queries[row], queries[without], COMPARED),
                "note": f"{part}'s ablation: {row} minus {without} (the same recipe without {part}) on the "
                f"{len(queries[row])} test queries, seed(s) {', '.join(map(str, seeds))} of both, "
                "per-query scores averaged over those seeds; paired randomization test (two-sided) and "
                "paired t-test",
            }
    write_results(document, HERE, REPRODUCTION.render_markdown(document))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
