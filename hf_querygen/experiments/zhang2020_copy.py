"""The default intent-description model (CtrsGen + copy, beyond Zhang et al. CIKM'20): its decoding chosen
on VALIDATION, its test scores beside copying the query and TextRank, and paired significance tests.

``python -m hf_querygen.experiments.zhang2020_copy MODEL_DIR [--out FILE] [--data-dir DIR]``

1. decode the q2id VALIDATION split with every decoding of :data:`DECODING_GRID` (beam size,
   ``no_repeat_ngram_size``, a minimum length) and keep the best by ``rouge_goal`` (the mean of ROUGE-1
   recall, ROUGE-L recall and ROUGE-L F1, the three scores the model is judged on); it is saved into the
   model folder as ``config.task_decoding`` (``Task.predict`` and the pipeline decode with it by default);
2. decode the TEST split once, with that decoding;
3. score copying the query and TextRank (the zhang2020 table's baselines) on both splits and test the
   model against each with the paired randomization test (and the paired t-test the tables use) on
   per-query ROUGE.

MODEL_DIR is a folder written by ``hf-querygen train`` or a Trainer checkpoint of it (config, weights and
tokenizer). Nothing is selected on the test split.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_querygen.training import ROUGE_GOAL_METRICS

#: decodings tried on validation: beam search or greedy, the n-gram blocking every zhang2020 row uses (2) or a
#: looser one (3), and a minimum length (ROUGE recall against ~40-word descriptions rewards longer outputs)
DECODING_GRID: tuple[dict[str, int], ...] = tuple(
    {"num_beams": beams, "no_repeat_ngram_size": ngram, "min_new_tokens": minimum}
    for beams in (1, 4)
    for ngram in (2, 3)
    for minimum in (0, 15)
)
#: the scores the significance tests compare
COMPARED_METRICS = ("rouge1_recall", "rougeL_recall", "rougeL_f")
BASELINES = ("copy_query", "textrank")


def rouge_goal(scores: Mapping[str, float]) -> float:
    """The mean of ROUGE-1 recall, ROUGE-L recall and ROUGE-L F1 (what ``select_on="rouge_goal"`` uses)."""
    return sum(scores[m] for m in ROUGE_GOAL_METRICS) / len(ROUGE_GOAL_METRICS)


def baseline_outputs(name: str, examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The zhang2020 table's baseline ``name`` (copy_query / textrank) on ``examples``."""
    from hf_querygen.baselines.intent_description import copy_query, extract_descriptions

    if name == "copy_query":
        return copy_query(list(examples))
    return extract_descriptions(list(examples), name)


def select_decoding(
    model: Any,
    tokenizer: Any,
    data: Any,
    grid: Sequence[Mapping[str, Any]] = DECODING_GRID,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Decode VALIDATION with every decoding of ``grid``: (the best by rouge_goal, every row's scores)."""
    task = data.task
    sources, references = data.sources("validation"), data.references("validation")
    rows = []
    for decoding in grid:
        started = time.perf_counter()
        outputs = task.predict(model, tokenizer, sources, **dict(decoding))
        scores = task.score(outputs, references, sources)
        scores["rouge_goal"] = rouge_goal(scores)
        rows.append({"decoding": dict(decoding), "scores": scores, "seconds": time.perf_counter() - started})
    best = max(rows, key=lambda row: row["scores"]["rouge_goal"])
    return dict(best["decoding"]), rows


def _load(model_dir: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from hf_querygen._registration import register_all

    register_all()
    return AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval(), AutoTokenizer.from_pretrained(model_dir)


def report(
    model_dir: str | Path,
    data_dir: str | Path | None = None,
    save_decoding: bool = True,
    limit: int | None = None,
    grid: Sequence[Mapping[str, Any]] = DECODING_GRID,
) -> dict:
    """Steps 1-3 of the module docstring; returns the report (scores, decodings, tests, outputs).
    ``limit``: only the first queries of each split (a smoke run)."""
    from hf_querygen.metrics.retrieval import paired_test
    from hf_querygen.tasks.base import get_task
    from hf_querygen.tasks.q2id_task import Q2IDTaskData

    model_dir = Path(model_dir)
    model, tokenizer = _load(model_dir)
    model.config.task_decoding = None  # the grid decides; a saved decoding must not leak into it
    task = get_task("q2id")
    splits = task.load("q2id", None, data_dir)
    if limit is not None:
        for split in ("validation", "test"):
            splits[split] = splits[split].select(range(min(limit, len(splits[split]))))
    data = Q2IDTaskData(task, splits, tokenizer)
    decoding, rows = select_decoding(model, tokenizer, data, grid)
    if save_decoding:
        model.config.task_decoding = dict(decoding)
        model.config.save_pretrained(model_dir)  # config.json only: the weights are untouched
    document: dict[str, Any] = {
        "model_dir": str(model_dir),
        "decoding": decoding,
        "decoding_grid_validation": rows,
        "scores": {},
        "outputs": {},
        "significance": {},
    }
    for split in ("validation", "test"):
        sources, references = data.sources(split), data.references(split)
        examples = [dict(example) for example in splits[split]]
        outputs = {
            "ctrsgen_copy": [task.as_text(o) for o in task.predict(model, tokenizer, sources, **decoding)]
        }
        for name in BASELINES:
            outputs[name] = baseline_outputs(name, examples)
        per_query = {name: task.per_example_scores(texts, references) for name, texts in outputs.items()}
        document["scores"][split] = {}
        for name, texts in outputs.items():
            scores = task.score(texts, references, sources)
            scores["rouge_goal"] = rouge_goal(scores)
            document["scores"][split][name] = scores
        document["outputs"][split] = outputs
        document["significance"][split] = {
            baseline: {
                metric: {
                    method: paired_test(
                        [row[metric] for row in per_query["ctrsgen_copy"]],
                        [row[metric] for row in per_query[baseline]],
                        method=method,
                    )
                    for method in ("permutation", "ttest")
                }
                for metric in COMPARED_METRICS
            }
            for baseline in BASELINES
        }
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write the report here (JSON)")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--no-save-decoding", action="store_true", help="leave config.json as it is")
    parser.add_argument("--limit", type=int, default=None, help="first N queries per split (smoke run)")
    args = parser.parse_args(argv)
    document = report(args.model_dir, args.data_dir, not args.no_save_decoding, args.limit)
    text = json.dumps(document, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    summary = {split: document["scores"][split] for split in document["scores"]}
    print(json.dumps({"decoding": document["decoding"], "scores": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
