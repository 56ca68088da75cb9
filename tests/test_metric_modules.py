"""Every metric module under hf_querygen/metrics loads with ``evaluate.load(<its file>)`` from a clean
process (evaluate copies the file elsewhere, so a relative import would break it) and refuses
mismatched lengths and empty references with a clear error instead of a bare ``zip()`` error or a
silent 0."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

METRICS_DIR = Path(__file__).resolve().parents[1] / "hf_querygen" / "metrics"
#: shared code of the modules, not metrics themselves
HELPERS = {"__init__.py", "segmentation_scores.py", "wellformedness_classifier.py"}


def defines_metric(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.ClassDef) and any(ast.unparse(base) == "evaluate.Metric" for base in node.bases)
        for node in tree.body
    )


MODULES = sorted(p.name for p in METRICS_DIR.glob("*.py") if p.name not in HELPERS)

#: per module: a valid call, then bad calls with the message they must give
CASES = {
    "exact_match.py": ({"predictions": ["a b"], "references": ["a b"]}, []),
    "keyword_prf.py": (
        {"predictions": ["a b"], "references": ["a c"]},
        [({"predictions": ["a"], "references": [" "]}, "references[0]=' ' holds no keyword")],
    ),
    "rouge.py": (
        {"predictions": ["a b"], "references": ["a b"]},
        [({"predictions": [], "references": []}, "no predictions")],
    ),
    "sacrebleu_metric.py": (
        {"predictions": ["a b c d"], "references": ["a b c d"]},
        [({"predictions": [], "references": []}, "no predictions")],
    ),
    "segmentation.py": ({"predictions": ["a|b"], "references": ["a|b"]}, []),
    "keywords_kept.py": (
        {"predictions": ["what is the capital of france ?"], "sources": ["capital france"]},
        [({"predictions": ["a"], "sources": ["?"]}, "sources[0]='?' holds no word")],
    ),
    "semantic_similarity.py": (
        {"predictions": ["capital of france"], "references": [["what is the capital of france?"]]},
        [({"predictions": ["a"], "references": [[]]}, "references[0] is empty")],
    ),
    # the classifier: a tiny one trained in the test (TINY_CLASSIFIER is replaced by its folder)
    "wellformedness.py": (
        {"predictions": ["what is the capital of peru chile ?"], "classifier": "TINY_CLASSIFIER"},
        [({"predictions": [], "classifier": "TINY_CLASSIFIER"}, "no predictions")],
    ),
    "retrieval.py": (
        {"predictions": [["d1", "d2"]], "references": [{"doc_ids": ["d1"], "relevance": [1]}]},
        [
            (
                {"predictions": [["d1"]], "references": [{"doc_ids": [], "relevance": []}]},
                "judges no documents",
            ),
            (
                {"predictions": [["d1"]], "references": [{"doc_ids": ["d1", "d2"], "relevance": [1]}]},
                "2 doc_ids but 1 relevance grades",
            ),
        ],
    ),
}

SCRIPT = """
import json, sys, traceback
import evaluate
results = {}
for name, (path, good, bad) in json.loads(sys.argv[1]).items():
    try:
        metric = evaluate.load(path)
        out = {"good": metric.compute(**good), "bad": []}
        # a module with a second input column (references, sources) refuses columns of different lengths
        others = [key for key in good if key not in ("predictions", "classifier")]
        mismatch = [[{**good, "predictions": good["predictions"] * 2}, "Mismatch"]] if others else []
        for call, _ in bad + mismatch:
            try:
                metric.compute(**call)
                out["bad"].append("no error")
            except Exception as err:
                out["bad"].append(f"{type(err).__name__}: {err}")
    except Exception:
        out = {"error": traceback.format_exc()}
    results[name] = out
print(json.dumps(results))
"""


def test_every_metric_module_is_covered():
    assert {name for name in MODULES if defines_metric(METRICS_DIR / name)} == set(MODULES) == set(CASES)


@pytest.fixture(scope="session")  # once per test process: a module scope is set up again after interleaving
def loaded_in_a_clean_process(tmp_path_factory):
    """Every module loaded by path and called in one fresh interpreter, outside the repository (a module
    must not rely on being imported from it): name -> its results, or the error that stopped it. One
    interpreter for all of them: each load is what is under test, the interpreter's start is not."""
    from _wellformedness_toy import tiny_classifier

    folder = str(tiny_classifier(tmp_path_factory.mktemp("wellformedness"))[0])
    calls = {
        name: [
            str(METRICS_DIR / name),
            *json.loads(json.dumps(CASES[name]).replace("TINY_CLASSIFIER", folder)),
        ]
        for name in MODULES
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(calls)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path_factory.mktemp("elsewhere"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", MODULES)
def test_metric_module_loads_by_path_in_a_clean_process(name, loaded_in_a_clean_process):
    good, bad = CASES[name]
    out = loaded_in_a_clean_process[name]
    assert "error" not in out, out.get("error")
    numbers = [x for v in out["good"].values() for x in (v if isinstance(v, list) else [v])]
    assert any(isinstance(x, float) for x in numbers), out  # (some modules also return strings)
    mismatch = any(key not in ("predictions", "classifier") for key in good)
    expected = [message for _, message in bad] + ["Mismatch in the number of predictions"] * mismatch
    for got, message in zip(out["bad"], expected, strict=True):
        assert message in got and "zip()" not in got, (name, got)
