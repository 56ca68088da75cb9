"""Ding & Balog ICTIR'18 Table 2, baseline rows: SDM and TBM on T_0 test and on the reversed nl2kw test.

Neither baseline has a parameter chosen on a test set (SDM: the retrieval engine's default SDM
weights; TBM: templates from the synthetic pairs, word2vec on Q with fixed settings), so scoring
them on the test splits is not tuning. Both output one question per keyword query.

Metrics (:mod:`hf_querygen.metrics.rouge`, :mod:`hf_querygen.metrics.sacrebleu_metric`): ROUGE-1/2/L
F1 and recall, averaged (Eq. 9) and maxed (Eq. 10) over the references (T_0 has one reference, so
avg = max there), and sacrebleu corpus BLEU (lowercased, 13a; the signature is in the config). The
paper does not say which ROUGE variant its Table 2 uses; the headline columns are F1 (max over
references), recall is reported beside them.

    python -m hf_querygen.experiments.ding2018_table2_baselines --synthetic /work/runs/k2q-synthetic/data \
        --index /work/runs/k2q-synthetic/index --out results/ding2018
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import time
from pathlib import Path

from ._report import markdown_table, results_document

__all__ = ["PAPER_TABLE2", "run_table2_baselines", "score_outputs"]

#: Table 2 of the paper (T_0: 1000 WikiAnswers keyword-question pairs), baseline rows
PAPER_TABLE2: dict[str, dict[str, float]] = {
    "SDM": {"t0/ROUGE-L": 0.3650, "t0/ROUGE-1": 0.4123, "t0/ROUGE-2": 0.1940, "t0/BLEU": 0.2780},
    "TBM": {"t0/ROUGE-L": 0.4357, "t0/ROUGE-1": 0.5134, "t0/ROUGE-2": 0.2056, "t0/BLEU": 0.2858},
}
HEADLINE = ("ROUGE-L", "ROUGE-1", "ROUGE-2", "BLEU")


def score_outputs(predictions: list[str], references: list[list[str]], prefix: str) -> tuple[dict, str]:
    """``{prefix}/ROUGE-L`` etc. (F1, max over references), ``.../ROUGE-L avg``, ``... recall`` and BLEU."""
    from ..metrics.rouge import rouge
    from ..metrics.sacrebleu_metric import sacre_bleu

    r = rouge(predictions, references)
    b = sacre_bleu(predictions, references)
    out = {f"{prefix}/BLEU": b["bleu"]}
    for name, key in (("ROUGE-L", "rougeL"), ("ROUGE-1", "rouge1"), ("ROUGE-2", "rouge2")):
        out[f"{prefix}/{name}"] = r[f"{key}_f_max"]
        out[f"{prefix}/{name} avg"] = r[f"{key}_f_avg"]
        out[f"{prefix}/{name} recall"] = r[f"{key}_recall_max"]
        out[f"{prefix}/{name} recall avg"] = r[f"{key}_recall_avg"]
    return out, b["signature"]


def run_table2_baselines(
    out_dir: str | os.PathLike,
    synthetic_dir: str | os.PathLike,
    index_path: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    threads: int | None = None,
) -> dict:
    """Build Q, open (or build) its index, mine TBM templates from the synthetic pairs under
    ``synthetic_dir`` (``data/all/*.parquet`` of ``hf-querygen synthesize``), score both baselines on
    both test sets, write ``table2_baselines.{json,md}`` and return the results document."""
    import datasets

    from ..baselines.k2q import SDMBaseline, TemplateBaseline, train_word2vec
    from ..corpora._base import normalize_for_matching
    from ..retrieval import Index
    from ..synthetic.corpus import build_question_corpus
    from ..tasks.k2q import k2q_test_sets

    start = time.perf_counter()
    corpus = build_question_corpus(data_dir)
    q = corpus.questions
    index_path = Path(index_path)
    index = (
        Index.open(index_path)
        if index_path.exists()
        else Index.from_texts(q["text"], ids=q["id"], path=index_path)
    )
    sdm = SDMBaseline(index, q["id"], q["question"], threads=threads)
    files = sorted(glob.glob(str(Path(synthetic_dir) / "data" / "all" / "*.parquet")))
    if not files:
        raise FileNotFoundError(f"no synthetic shards under {synthetic_dir}/data/all")
    pairs = datasets.Dataset.from_parquet(files)
    vectors = train_word2vec(q["text"])
    tbm = TemplateBaseline.from_pairs(pairs["keyword_query"], pairs["question"], vectors, fallback=sdm)
    tests = k2q_test_sets(data_dir)
    q_texts = set(q["text"])
    runs: dict[str, dict] = {"SDM": {}, "TBM": {}}
    details: dict = {"test_sets": {}, "tbm_fallbacks": {}, "examples": {}}
    signature = None
    for name, ds in tests.items():
        refs = ds["references"]
        in_q = sum(any(normalize_for_matching(r) in q_texts for r in rs) for rs in refs)
        details["test_sets"][name] = {"examples": len(ds), "with_a_reference_in_Q": in_q}
        outputs = {"SDM": sdm.generate(ds["keywords"]), "TBM": tbm.generate(ds["keywords"])}
        details["tbm_fallbacks"][name] = tbm.last_fallbacks
        for system, preds in outputs.items():
            scores, signature = score_outputs(preds, refs, name)
            runs[system].update(scores)
        details["examples"][name] = [
            {"keywords": k, "references": r, "SDM": s, "TBM": t}
            for k, r, s, t in list(zip(ds["keywords"], refs, outputs["SDM"], outputs["TBM"], strict=True))[:5]
        ]
    config = {
        "table": "Table 2 (Sec. 5.2), baseline rows SDM and TBM",
        "question_corpus": corpus.stats,
        "synthetic_pairs": len(pairs),
        "synthetic_dir": str(synthetic_dir),
        "tbm_templates_by_arity": {n: len(ts) for n, ts in tbm.templates.items()},
        "tbm_shortlist": tbm.shortlist,
        "word2vec": {
            "sg": 1,
            "vector_size": vectors.vector_size,
            "min_count": 2,
            "epochs": 5,
            "words": len(vectors),
        },
        "rouge": "rouge-score, no stemming; headline = F1, max over references (avg and recall also given)",
        "bleu_signature": signature,
        "seconds": round(time.perf_counter() - start, 1),
        **details,
    }
    document = results_document("ding2018", {s: [m] for s, m in runs.items()}, PAPER_TABLE2, config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table2_baselines.json").write_text(json.dumps(document, indent=2) + "\n")
    md = [
        "# Ding & Balog ICTIR'18, Table 2: the SDM and TBM baselines",
        "",
        f"Q = {corpus.stats['questions']:,} questions; TBM templates mined from {len(pairs):,} "
        "synthetic pairs "
        f"({sum(config['tbm_templates_by_arity'].values()):,} templates). BLEU: sacrebleu `{signature}`.",
        "ROUGE columns: F1, max over references (paper's variant unstated). The paper's T_0 is 1,000",
        "WikiAnswers pairs; ours is the QALD seed_pairs test split. The paper has no nl2kw column.",
        "",
        "## T_0 test",
        "",
        markdown_table(document, [f"t0/{m}" for m in HEADLINE], digits=4),
        "## Reversed nl2kw test",
        "",
        markdown_table(document, [f"nl2kw/{m}" for m in HEADLINE], digits=4),
        "## ROUGE recall (max over references) and avg-over-references F1",
        "",
        markdown_table(
            document,
            [f"{s}/ROUGE-L recall" for s in ("t0", "nl2kw")] + [f"{s}/ROUGE-L avg" for s in ("t0", "nl2kw")],
            digits=4,
        ),
        f"Test sets: {json.dumps(details['test_sets'])}; TBM fell back to SDM for "
        f"{json.dumps(details['tbm_fallbacks'])} keyword queries (no template of their arity).",
        "",
    ]
    (out / "table2_baselines.md").write_text("\n".join(md))
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", required=True, type=Path)
    parser.add_argument("--index", required=True, type=Path)
    parser.add_argument("--out", default=Path("results/ding2018"), type=Path)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    doc = run_table2_baselines(args.out, args.synthetic, args.index, args.data_dir, args.threads)
    print(json.dumps(doc["systems"], indent=1)[:3000])


if __name__ == "__main__":
    main()
