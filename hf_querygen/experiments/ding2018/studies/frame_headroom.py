"""How far keyword-preserving rewrites can go on the two VALIDATION sources (results/ding2018/NOTES.md).

For every validation keyword query: the query echoed, the query in each of the K most frequent question
frames of the training pairs (the words before the first and after the last keyword word of a training
question; synthetic + reversed nl2kw train pairs), the best single frame per source, the per-query oracle
over the frames (an upper bound for any model that only chooses a frame), the frame the trained model finds
most likely (teacher-forced log-likelihood of each filled frame), and the reference's own frame around the
keyword query (an oracle for frame + keywords). ROUGE-L F, max over references (Table 2's metric). Nothing
here reads a test split.

    python -m hf_querygen.experiments.ding2018.studies.frame_headroom MODEL_DIR OUT_JSON [K]
"""

from __future__ import annotations

import argparse
import collections
import json

import datasets
import numpy as np
import torch
from rouge_score import rouge_scorer

from hf_querygen.experiments.recipes import training_recipe
from hf_querygen.model_folder import load_trained
from hf_querygen.nn.labels import IGNORE_INDEX
from hf_querygen.tasks.k2q.questions import FRAME_SLOT, fill_frame
from hf_querygen.tasks.seq2seq import Seq2SeqCollator, encode_seq2seq
from hf_querygen.text import normalize_for_matching

SCORER = rouge_scorer.RougeScorer(["rougeL"])
SOURCES = {"t0_validation": "validation", "nl2kw_validation": "nl2kw_validation"}


def rouge_l(prediction: str, references: list[str]) -> float:
    return max(SCORER.score(reference, prediction)["rougeL"].fmeasure for reference in references)


def words(text: str) -> list[str]:
    return normalize_for_matching(text).replace("?", " ?").split()


def training_frames(splits: datasets.DatasetDict, k: int) -> list[str]:
    counts: collections.Counter = collections.Counter()
    for split in ("train", "nl2kw_train"):
        for example in splits[split]:
            question, keywords = words(example["question"]), set(words(example["keyword_query"]))
            positions = [i for i, word in enumerate(question) if word in keywords]
            if positions:
                before, after = question[: positions[0]], question[positions[-1] + 1 :]
                counts[" ".join([*before, FRAME_SLOT, *after])] += 1
    return [frame for frame, _ in counts.most_common(k)]


def frame_log_likelihoods(model, tokenizer, queries: list[str], candidates: list[list[str]]) -> np.ndarray:
    """(queries, frames) summed log p(filled frame | keyword query) under the model (teacher forcing)."""
    flat = datasets.Dataset.from_dict(
        {
            "keyword_query": [q for q, row in zip(queries, candidates, strict=True) for _ in row],
            "question": [c for row in candidates for c in row],
        }
    )
    encoded = encode_seq2seq(
        flat, tokenizer, "keyword_query", "question", model.config.output_vocab_size, 32, 24
    )
    collate = Seq2SeqCollator(model.config.pad_token_id)
    totals = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(encoded), 256):
            batch = collate([encoded[i] for i in range(start, min(start + 256, len(encoded)))])
            labels = batch.pop("labels")
            batch.pop("decoder_input_ids", None)
            logits = model(**batch, labels=labels).logits.float()
            if not model.logits_are_log_probs:
                logits = logits.log_softmax(-1)
            picked = logits.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
            totals += torch.where(labels != IGNORE_INDEX, picked, 0.0).sum(-1).tolist()
    return np.array(totals).reshape(len(queries), -1)


def headroom(model_dir: str, out_json: str, k: int = 20) -> None:
    torch.set_num_threads(1)
    model, tokenizer, metadata = load_trained(model_dir)
    splits = training_recipe(metadata["system"], None).splits
    frames = training_frames(splits, k)
    report: dict = {"model": model_dir, "frames": frames, "sources": {}}
    for source, split in SOURCES.items():
        queries, references = splits[split]["keyword_query"], splits[split]["references"]
        candidates = [[fill_frame(frame, query) for frame in frames] for query in queries]
        echo = np.array(
            [rouge_l(normalize_for_matching(q), refs) for q, refs in zip(queries, references, strict=True)]
        )
        by_frame = np.array(
            [[rouge_l(c, refs) for c in row] for row, refs in zip(candidates, references, strict=True)]
        )
        likely = frame_log_likelihoods(model, tokenizer, queries, candidates).argmax(1)
        own = []
        for query, refs, best in zip(queries, references, echo, strict=True):
            keywords = set(words(query))
            for reference in refs:
                ref_words = words(reference)
                positions = [i for i, word in enumerate(ref_words) if word in keywords]
                if positions:
                    filled = [*ref_words[: positions[0]], FRAME_SLOT, *ref_words[positions[-1] + 1 :]]
                    best = max(best, rouge_l(fill_frame(" ".join(filled), query), refs))
            own.append(best)
        best_frame = int(by_frame.mean(0).argmax())
        report["sources"][source] = {
            "queries": len(queries),
            "echo": float(echo.mean()),
            "best_single_frame": {
                "frame": frames[best_frame],
                "rouge_l": float(by_frame[:, best_frame].mean()),
            },
            "by_frame": {frame: float(v) for frame, v in zip(frames, by_frame.mean(0), strict=True)},
            "model_likeliest_frame": float(by_frame[np.arange(len(queries)), likely].mean()),
            "model_likeliest_frame_counts": dict(
                collections.Counter(frames[i] for i in likely).most_common(5)
            ),
            "oracle_frame_or_echo": float(np.maximum(echo, by_frame.max(1)).mean()),
            "oracle_reference_frame": float(np.mean(own)),
        }
    with open(out_json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    for source, row in report["sources"].items():
        print(source, json.dumps({key: value for key, value in row.items() if key != "by_frame"}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model_dir", metavar="MODEL_DIR")
    parser.add_argument("out_json", metavar="OUT_JSON")
    parser.add_argument("k", metavar="K", type=int, nargs="?", default=20, help="frames per source")
    args = parser.parse_args(argv)
    headroom(args.model_dir, args.out_json, args.k)


if __name__ == "__main__":
    main()
