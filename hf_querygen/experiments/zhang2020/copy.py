"""The default intent-description model (CtrsGen + copy, beyond Zhang et al. CIKM'20): its decoding chosen
on VALIDATION, its test scores beside copying the query and TextRank, and paired significance tests.

``python -m hf_querygen.experiments.zhang2020.copy MODEL_DIR [--out FILE] [--data-dir DIR]``

1. decode the q2id VALIDATION split with every decoding of :data:`DECODING_GRID` (the row's
   ``System.decoding_choice``: beam size, ``no_repeat_ngram_size``, a minimum length, each with and without
   ``restate_query``, the query put before the generated words), and keep the best by ``rouge_goal`` (the
   mean of ROUGE-1 recall, ROUGE-L recall and ROUGE-L F1, the three scores the model is judged on): the
   choice ``train --system zhang2020/ctrsgen_copy`` made already; it is saved into the model folder as
   ``config.task_decoding`` (``Task.predict`` and the pipeline decode with it by default);
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_querygen._registration import register_all
from hf_querygen.baselines.intent_description import copy_query, extract_descriptions
from hf_querygen.experiments.zhang2020.analysis import collection_documents, paired_tests
from hf_querygen.experiments.zhang2020.systems import COPY_DECODING_GRID
from hf_querygen.tasks.base import DecodingChoice, get_task
from hf_querygen.tasks.q2id.task import DocumentRetriever, Q2IDTaskData
from hf_querygen.training.task_training import choose_decoding, with_rouge_goal

#: decodings tried on validation: the row's own (System.decoding_choice), what `train --system` chooses from
DECODING_GRID: tuple[dict[str, Any], ...] = COPY_DECODING_GRID
#: the scores the significance tests compare
COMPARED_METRICS = ("rouge1_recall", "rougeL_recall", "rougeL_f")
BASELINES = ("copy_query", "textrank")


def baseline_outputs(name: str, examples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The zhang2020 table's baseline ``name`` (copy_query / textrank) on ``examples``."""
    if name == "copy_query":
        return copy_query(list(examples))
    return extract_descriptions(list(examples), name)


def _load(model_dir: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

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
    model_dir = Path(model_dir)
    model, tokenizer = _load(model_dir)
    model.config.task_decoding = None  # the grid decides; a saved decoding must not leak into it
    task = get_task("q2id")
    splits = task.load("q2id", None, data_dir)
    if limit is not None:
        for split in ("validation", "test"):
            splits[split] = splits[split].select(range(min(limit, len(splits[split]))))
    data = Q2IDTaskData(task, splits, tokenizer)
    # the choice train --system makes (the same function, grid and metric), every validation score kept
    decoding, chosen_rows = choose_decoding(model, data, None, DecodingChoice(tuple(grid), "rouge_goal"))
    rows = [{"decoding": row["decoding"], "scores": row["scores"]["validation"]} for row in chosen_rows]
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
            document["scores"][split][name] = with_rouge_goal(task.score(texts, references, sources))
        document["outputs"][split] = outputs
        document["significance"][split] = {
            baseline: paired_tests(per_query["ctrsgen_copy"], per_query[baseline], COMPARED_METRICS)
            for baseline in BASELINES
        }
    return document


def training_curves(log_history: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """Trainer ``log_history`` -> {"train": [[step, loss]], "validation": [{step, eval_*}]}."""
    train = [[log["step"], log["loss"]] for log in log_history if "loss" in log and "step" in log]
    validation = [
        {k: v for k, v in log.items() if k.startswith("eval_") or k == "step"}
        for log in log_history
        if "eval_loss" in log
    ]
    return {"train": train, "validation": validation}


def plot_curves(curves: Mapping[str, Any], path: str | Path, selected_step: int | None = None) -> None:
    """Loss (training, validation) and validation ROUGE-1 / ROUGE-L recall and ROUGE-L F1 against steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    if curves["train"]:
        steps, losses = zip(*curves["train"], strict=True)
        left.plot(steps, losses, label="training loss", alpha=0.6)
    validation = curves["validation"]
    steps = [row["step"] for row in validation]
    left.plot(steps, [row["eval_loss"] for row in validation], "o-", label="validation loss")
    left.set_xlabel("step (16 queries)")
    left.set_ylabel("NLL per target word")
    left.legend()
    for metric, label in (
        ("eval_rouge1_recall", "ROUGE-1 recall"),
        ("eval_rougeL_recall", "ROUGE-L recall"),
        ("eval_rougeL_f", "ROUGE-L F1"),
    ):
        if validation and metric in validation[0]:
            right.plot(steps, [100 * row[metric] for row in validation], "o-", label=label)
    if selected_step is not None:
        for axis in (left, right):
            axis.axvline(selected_step, color="grey", linestyle="--", linewidth=1)
    right.set_xlabel("step (16 queries)")
    right.set_ylabel("validation score (%)")
    right.legend()
    figure.suptitle("CtrsGen + copy on q2id: validation curves (dashed: the checkpoint kept)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


#: bare queries shown through the retriever option (typed for the README, not taken from any split)
BARE_QUERIES = ("driving licence in qatar", "turmeric and heart disease")


def examples(
    model_dir: str | Path,
    data_dir: str | Path | None = None,
    queries: int = 3,
    bare_queries: Sequence[str] = BARE_QUERIES,
) -> dict[str, Any]:
    """What the model writes (its saved decoding, through ``pipeline("intent-description")``) for the first
    ``queries`` TEST queries with their judged documents, and for ``bare_queries`` with BM25-retrieved
    documents (5 relevant, 5 irrelevant) from every judged q2id document."""
    from transformers import pipeline

    task = get_task("q2id")
    splits = task.load("q2id", None, data_dir)
    describe = pipeline("intent-description", model=str(model_dir))
    judged = []
    for example in splits["test"].select(range(queries)):
        source = {
            "query": example["query"],
            "relevant_documents": example["relevant_documents"],
            "irrelevant_documents": example["irrelevant_documents"],
        }
        judged.append(
            {
                "query": example["query"],
                "relevant_documents": len(example["relevant_documents"]),
                "irrelevant_documents": len(example["irrelevant_documents"]),
                "first_relevant_sentence": example["relevant_documents"][0]["sentences"][0],
                "reference": example["description"],
                "description": describe(source)[0]["description"],
            }
        )
    ids, documents = collection_documents(splits)
    retriever = DocumentRetriever.from_documents(documents, ids=ids, relevant=5, irrelevant=5)
    retrieved = []
    for query in bare_queries:
        relevant_ids, _ = retriever.retrieved_ids(query)
        first = documents[ids.index(relevant_ids[0])]["sentences"][0] if relevant_ids else None
        retrieved.append(
            {
                "query": query,
                "top_document": first,
                "description": describe(query, retriever=retriever)[0]["description"],
            }
        )
    return {"judged_documents": judged, "retrieved_documents": retrieved}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write the report here (JSON)")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--no-save-decoding", action="store_true", help="leave config.json as it is")
    parser.add_argument("--limit", type=int, default=None, help="first N queries per split (smoke run)")
    parser.add_argument("--examples-only", action="store_true", help="only the README examples")
    args = parser.parse_args(argv)
    if args.examples_only:
        print(json.dumps(examples(args.model_dir, args.data_dir), indent=1))
        return 0
    document = report(args.model_dir, args.data_dir, not args.no_save_decoding, args.limit)
    document["examples"] = examples(args.model_dir, args.data_dir)
    text = json.dumps(document, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    summary = {split: document["scores"][split] for split in document["scores"]}
    print(json.dumps({"decoding": document["decoding"], "scores": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
