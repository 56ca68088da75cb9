"""Score a ding2018 run (``train --system ding2018/<row>``: the long CopyNet runs, the question-frame model)
of results/ding2018/NOTES.md.

The decoding is chosen again with :func:`hf_querygen.training.choose_decoding` on the two VALIDATION
sources apart (T_0 validation, reversed nl2kw validation: the worst source's gain over the echoed keyword
query decides; a run started from older code chose it on the pooled split) and saved as
``config.task_decoding``; then the model (chosen decoding, and plain greedy for comparison) and the
trivial rows (keyword query echoed, most frequent question frame of the synthetic pairs) are scored on
validation, T_0 test and the reversed nl2kw test, with paired randomization tests against the trivial
rows. Nothing is chosen on a test split.

    python -m hf_querygen.experiments.ding2018.studies.finalize_long_run MODEL_DIR OUT_JSON [BUDGET]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import datasets
import torch

from hf_querygen.baselines.k2q import FrameBaseline, echo_keyword_queries
from hf_querygen.experiments.ding2018.systems import GREEDY
from hf_querygen.experiments.recipes import training_recipe
from hf_querygen.metrics.retrieval import paired_test
from hf_querygen.metrics.rouge import rouge_per_example
from hf_querygen.model_folder import load_trained
from hf_querygen.systems import get_system
from hf_querygen.tasks.base import TaskData
from hf_querygen.tasks.k2q.questions import fill_frame, k2q_scores
from hf_querygen.tasks.k2q.task import K2Q
from hf_querygen.training import TRAINING_METADATA_FILE, choose_decoding, save_model_folder

QUERIES = [
    "capital france",
    "side effects ibuprofen",
    "python list sort",
    "eiffel tower height",
    "obama birthplace",
]


def finalize(model_dir: str, out_json: str, budget: str | None = None) -> None:
    torch.set_num_threads(1)
    started = time.time()
    model, tokenizer, metadata = load_trained(model_dir)
    system = metadata["system"]  # ding2018/copynet_human, ding2018/copynet, ding2018/question_frames, ...
    row = system.split("/")[1]
    recipe = training_recipe(system, budget)
    splits = recipe.splits
    # the row's own validation sources, as its training prepared them (the question-frame row trains on
    # T_0 train, so T_0's validation split alone selects for it)
    prepared = K2Q.prepare(splits, **recipe.prepare_options).splits
    names = K2Q.selection_splits(TaskData(K2Q, prepared, tokenizer))
    validation = prepared["validation"]
    selection = {name: prepared[name] for name in names}
    # the decoding is chosen on the two validation sources apart (K2QTask.selection_splits: the worst
    # source's gain over the echoed keyword query decides), from the row's own grid (none for the
    # question-frame model: a frame per query, nothing to decode)
    data = TaskData(K2Q, datasets.DatasetDict(validation=validation, **selection), tokenizer)
    seq2seq = metadata.get("family") != "frames"
    chosen, rows = choose_decoding(model, data, GREEDY if seq2seq else {}, get_system(system).decoding_choice)
    # the test decodings below are what the saved model gives: the choice is its default from here on
    model.config.task_decoding = dict(chosen)
    evaluation: dict = {"decoding": chosen, "decoding_selection": rows, "rows": {}}
    # the "frame" row: the most frequent frame of the synthetic pairs (the CopyNet recipe's train split)
    synthetic = (
        splits["train"]
        if len(splits["train"])
        else training_recipe("ding2018/copynet", budget).splits["train"]
    )
    frame = FrameBaseline.from_pairs(synthetic["keyword_query"], synthetic["question"])
    evaluation["frame"] = frame.frame
    # validation: the trivial rows here; the model's validation ROUGE-L is the grid's (decoding_selection)
    named = {"validation": validation, **selection, "t0": splits["t0"], "nl2kw": splits["nl2kw"]}
    for name, split in named.items():
        sources, references = split["keyword_query"], [list(r) for r in split["references"]]
        outputs = {"echo": echo_keyword_queries(sources), "frame": frame.generate(sources)}
        if name in ("t0", "nl2kw"):
            outputs[row] = K2Q.predict(model, tokenizer, sources)  # the saved default decoding
            if seq2seq:
                model.config.task_decoding = None
                outputs[f"{row}_greedy"] = K2Q.predict(model, tokenizer, sources, **GREEDY)
                model.config.task_decoding = dict(chosen)
            fallback = chosen.get("keyword_fallback")
            if fallback:  # the share of questions that are the keyword query in the fallback frame
                framed = [fill_frame(fallback, source) for source in sources]
                evaluation.setdefault("keyword_fallback_share", {})[name] = sum(
                    question == filled for question, filled in zip(outputs[row], framed, strict=True)
                ) / len(framed)
            evaluation.setdefault("examples", {})[name] = [
                {"keyword_query": s, "question": q, "references": r}
                for s, q, r in list(zip(sources, outputs[row], references, strict=True))[:12]
            ]
        for output_row, predicted in outputs.items():
            evaluation["rows"].setdefault(output_row, {})[name] = k2q_scores(predicted, references)
        if name in ("t0", "nl2kw"):  # paired randomization tests of per-query ROUGE-L F (max over refs)
            per_query = {
                output_row: [r["rougeL_f_max"] for r in rouge_per_example(predicted, references)]
                for output_row, predicted in outputs.items()
            }
            evaluation.setdefault("paired_tests", {})[name] = {
                f"{model_row} vs {floor}": paired_test(per_query[model_row], per_query[floor])
                for model_row in ((row, f"{row}_greedy") if seq2seq else (row,))
                for floor in ("echo", "frame")
            }
    evaluation["queries"] = {q: K2Q.predict(model, tokenizer, [q], return_scores=True)[0] for q in QUERIES}
    model.config.task_decoding = dict(chosen) or None
    metadata = {
        **metadata,
        "decoding": chosen,
        "decoding_selection": rows,
        "decoding_note": "chosen after training by training.choose_decoding on the two validation "
        "sources apart (finalize_long_run.py)",
    }
    log_file = Path(model_dir, "log_history.json")
    log_history = json.loads(log_file.read_text())
    log_file.unlink()  # written again by save_model_folder (an older run of this script wrote it after)
    save_model_folder(model, tokenizer, model_dir, metadata, overwrite=True, log_history=log_history)
    assert json.loads(Path(model_dir, TRAINING_METADATA_FILE).read_text())["decoding"] == chosen
    evaluation["seconds"] = round(time.time() - started, 1)
    Path(out_json).write_text(json.dumps(evaluation, indent=1, default=str) + "\n")
    print(
        json.dumps(
            {r: {s: v["ROUGE-L"] for s, v in d.items()} for r, d in evaluation["rows"].items()}, indent=1
        )
    )
    print("decoding", chosen)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model_dir", metavar="MODEL_DIR")
    parser.add_argument("out_json", metavar="OUT_JSON")
    parser.add_argument("budget", metavar="BUDGET", nargs="?", default=None)
    args = parser.parse_args(argv)
    finalize(args.model_dir, args.out_json, args.budget)


if __name__ == "__main__":
    main()
