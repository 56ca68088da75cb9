"""Finish the long CopyNet + human pairs run of results/ding2018/NOTES.md and score it (run once).

``hf-querygen train --system ding2018/copynet_human --seed 0 --time-limit 62`` was started from a
snapshot of the code that predates the decoding choice on validation (training.choose_decoding); this
script applies that same function to the saved model (grid on the VALIDATION split: T_0 train +
validation and the reversed nl2kw validation), saves the choice as config.task_decoding, then scores
the model (chosen decoding, and plain greedy for comparison) and the trivial rows (keyword query
echoed, most frequent question frame of the synthetic pairs) on validation, T_0 test and the reversed
nl2kw test. Nothing is chosen on a test split.

    python results/ding2018/finalize_long_run.py MODEL_DIR OUT_JSON [BUDGET]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import datasets
import torch

from hf_querygen.baselines.k2q import FrameBaseline, echo_keyword_queries
from hf_querygen.experiments.ding2018_systems import GREEDY
from hf_querygen.experiments.runner import training_recipe
from hf_querygen.tasks.base import TaskData
from hf_querygen.tasks.k2q import K2Q, k2q_scores
from hf_querygen.model_folder import load_trained
from hf_querygen.training import TRAINING_METADATA_FILE, choose_decoding, save_model_folder

QUERIES = [
    "capital france",
    "side effects ibuprofen",
    "python list sort",
    "eiffel tower height",
    "obama birthplace",
]


def main(model_dir: str, out_json: str, budget: str | None = None) -> None:
    torch.set_num_threads(1)
    started = time.time()
    model, tokenizer, metadata = load_trained(model_dir)
    recipe = training_recipe("ding2018/copynet_human", budget)
    splits = recipe.splits
    validation = datasets.concatenate_datasets([splits["validation"], splits["nl2kw_validation"]])
    data = TaskData(K2Q, datasets.DatasetDict(validation=validation), tokenizer)
    chosen, rows = choose_decoding(model, data, GREEDY)
    evaluation: dict = {"decoding": chosen, "decoding_selection": rows, "rows": {}}
    frame = FrameBaseline.from_pairs(splits["train"]["keyword_query"], splits["train"]["question"])
    evaluation["frame"] = frame.frame
    # validation: the trivial rows here; the model's validation ROUGE-L is the grid's (decoding_selection)
    named = {"validation": validation, "t0": splits["t0"], "nl2kw": splits["nl2kw"]}
    for name, split in named.items():
        sources, references = split["keyword_query"], [list(r) for r in split["references"]]
        outputs = {"echo": echo_keyword_queries(sources), "frame": frame.generate(sources)}
        if name != "validation":
            outputs["copynet_human"] = K2Q.predict(model, tokenizer, sources, **chosen)
            outputs["copynet_human_greedy"] = K2Q.predict(model, tokenizer, sources, **GREEDY)
            evaluation.setdefault("examples", {})[name] = [
                {"keyword_query": s, "question": q, "references": r}
                for s, q, r in list(zip(sources, outputs["copynet_human"], references, strict=True))[:12]
            ]
        for row, predicted in outputs.items():
            evaluation["rows"].setdefault(row, {})[name] = k2q_scores(predicted, references)
    evaluation["queries"] = {
        q: K2Q.predict(model, tokenizer, [q], return_scores=True, **chosen)[0] for q in QUERIES
    }
    model.config.task_decoding = dict(chosen)
    metadata = {
        **metadata,
        "decoding": chosen,
        "decoding_selection": rows,
        "decoding_note": "chosen after training by training.choose_decoding (finalize_long_run.py)",
    }
    log_history = Path(model_dir, "log_history.json").read_text()
    save_model_folder(model, tokenizer, model_dir, metadata, overwrite=True)
    Path(model_dir, "log_history.json").write_text(log_history)
    assert json.loads(Path(model_dir, TRAINING_METADATA_FILE).read_text())["decoding"] == chosen
    evaluation["seconds"] = round(time.time() - started, 1)
    Path(out_json).write_text(json.dumps(evaluation, indent=1, default=str) + "\n")
    print(
        json.dumps(
            {r: {s: v["ROUGE-L"] for s, v in d.items()} for r, d in evaluation["rows"].items()}, indent=1
        )
    )
    print("decoding", chosen)


if __name__ == "__main__":
    main(*sys.argv[1:4])
