"""Table 2's rows renamed for what they are, and the measures of what users need, from what is kept.

    python -m hf_querygen.experiments.ding2018.studies.user_measures

1. The committed EDNet / AttNet / CopyNet / CopyNet + nl2kw rows of the 3-seed full run were decoded with
   the decoding chosen on validation from a grid that held the keyword fallback (the keyword query where
   no output keeps every keyword): that is what the ``<row>_echo_fallback`` rows now are, so their numbers
   move there unchanged. The paper-named rows (the network's own output) need the runs again: the full
   run kept neither its records nor its models, so they stay empty here until ``reproduce ding2018``
   runs again (row_provenance says so).
2. The ``reference`` row (the test questions themselves, scored as outputs) and the measures beside ROUGE
   (``wellformed``, ``keywords_kept``: :func:`hf_querygen.tasks.k2q.k2q_user_scores`) for every row whose
   outputs exist: the reference and echo rows (computed from the test sets) and the runner records kept in
   ``gpu_paper_budget/runs`` and ``gpu_kq3/runs``. Each recomputed ROUGE-L is checked against the committed
   one before a measure is added. Rows whose outputs were not kept get ``-``.
3. ``results.md`` re-rendered.

Needs the well-formedness classifier (``hf-querygen wellformedness-classifier``); without it only
keywords kept is added.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
from pathlib import Path

from hf_querygen.experiments._report import aggregate, write_results
from hf_querygen.experiments.ding2018 import render_markdown
from hf_querygen.experiments.ding2018.analysis import user_measures_config
from hf_querygen.experiments.ding2018.studies import RESULTS_DIR as HERE
from hf_querygen.experiments.ding2018.systems import FALLBACK_ROWS, TEST_SPLITS
from hf_querygen.tasks.k2q.data import k2q_test_sets
from hf_querygen.tasks.k2q.questions import echo_keyword_queries, k2q_scores, k2q_user_scores

#: the runner records kept in results/ding2018/: (glob, system, budget) -> row
RECORD_ROWS = {
    ("gpu_paper_budget/runs/ednet-seed*.json", "paper"): "ednet_paper_budget_h200",
    ("gpu_paper_budget/runs/attnet-seed*.json", "paper"): "attnet_paper_budget_h200",
    ("gpu_paper_budget/runs/copynet-seed*.json", "paper"): "copynet_paper_budget_h200",
    ("gpu_kq3/runs/copynet-seed*.json", "full"): "copynet_h200_3min",
    ("gpu_kq3/runs/copynet_kq3-seed*.json", "full"): "copynet_kq3_h200_3min",
}
NOT_RERUN = (
    "not measured: the network's own output needs the full run again (its records and models were not "
    "kept; the committed numbers of this row, the decoding with the keyword fallback, are the "
    "`{key}_echo_fallback` row)"
)


def _same(ours: float, committed: float, what: str) -> None:
    if not math.isclose(ours, committed, abs_tol=1e-9):
        raise SystemExit(f"{what}: recomputed ROUGE-L {ours:.6f} is not the committed {committed:.6f}")


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    document = json.loads((HERE / "results.json").read_text())
    systems, config = document["systems"], document["config"]
    provenance = config.setdefault("row_provenance", {})
    for key in FALLBACK_ROWS:
        if key in systems and f"{key}_echo_fallback" not in systems:
            systems[f"{key}_echo_fallback"] = systems.pop(key)
            provenance[f"{key}_echo_fallback"] = (
                provenance.pop(key, "the full run")
                + "; decoded as chosen on validation from the grid with the keyword fallback (the row was "
                "labelled as the network until the fallback became its own row)"
            )
        provenance[key] = NOT_RERUN.format(key=key)

    tests = k2q_test_sets()
    sources = {split: list(tests[split]["keywords"]) for split in TEST_SPLITS}
    references = {split: [list(r) for r in tests[split]["references"]] for split in TEST_SPLITS}

    def scored(outputs: dict[str, list[str]], full: bool) -> dict[str, float]:
        run: dict[str, float] = {}
        for split in TEST_SPLITS:
            scores = k2q_scores(outputs[split], references[split]) if full else {}
            scores.update(k2q_user_scores(outputs[split], sources[split]))
            run.update({f"{split}/{metric}": value for metric, value in scores.items()})
        return run

    reference = {split: [refs[0] for refs in references[split]] for split in TEST_SPLITS}
    systems["reference"] = aggregate([scored(reference, full=True)])
    provenance["reference"] = (
        "computed on the full test sets by user_measures.py: each test question (its first reference) as the "
        "output, as written (the classifier lower-cases and ignores the ending punctuation, so the "
        "lower-cased questions the K2Q models write score the same)"
    )

    echo = {split: echo_keyword_queries(sources[split]) for split in TEST_SPLITS}
    echo_run = scored(echo, full=True)
    for split in TEST_SPLITS:
        _same(echo_run[f"{split}/ROUGE-L"], systems["echo"][f"{split}/ROUGE-L"]["mean"], f"echo {split}")
    systems["echo"].update({k: v for k, v in aggregate([echo_run]).items() if k not in systems["echo"]})

    for (pattern, budget), row in RECORD_ROWS.items():
        records = [json.loads(Path(f).read_text()) for f in sorted(glob.glob(str(HERE / pattern)))]
        records = [r for r in records if r.get("budget") == budget]
        if not records or row not in systems:
            continue
        runs = []
        for record in records:
            for split in TEST_SPLITS:
                ours = k2q_scores(record["outputs"][split], references[split])["ROUGE-L"]
                _same(ours, record["scores"][split]["ROUGE-L"], f"{row} seed {record['seed']} {split}")
            runs.append(scored(record["outputs"], full=False))
        systems[row].update(aggregate(runs))

    config.update(user_measures_config(None))
    config["user_measures"]["rows"] = (
        "measured from the outputs that are kept: the reference and echo rows (the test sets), the H200 rows "
        "(the runner's records in gpu_paper_budget/ and gpu_kq3/); the other rows' outputs were not kept "
        "(`-`) until `reproduce ding2018` runs again"
    )
    write_results(document, HERE, render_markdown(document))
    shown = ("ROUGE-L", "wellformed", "keywords_kept")
    summary = {
        row: {k: round(v["mean"], 4) for k, v in cells.items() if k.split("/")[-1] in shown}
        for row, cells in systems.items()
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
