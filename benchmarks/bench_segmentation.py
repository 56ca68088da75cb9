"""Query-segmentation throughput on CPU (queries/s); prints one JSON document.

Segmenters, on the test fold 0 of webis_qsec_10 (970 queries):

* WT and WT+SNP (exhaustive search over the 2^(k-1) segmentations, dictionary look-ups);
* CRF with the paper's features and with the corpus features, trained on folds 1-4
  (``--crf-iterations`` L-BFGS iterations; the timing covers feature extraction + Viterbi);
* the RNN encoder-decoder (constrained and unconstrained greedy decoding, and beam 5
  constrained) and the BiLSTM tagger at the sizes of the lin2017 reproduction, randomly
  initialised: their speed does not depend on the weights, except that an untrained unconstrained
  decoder may stop early (constrained decoding always writes 2k-1 tokens).

Neural segmenters are timed at batch 1 (first ``--batch1-queries`` queries) and batch 64.

    python benchmarks/bench_segmentation.py [--threads 1] [--crf-iterations 50]
"""

from __future__ import annotations

import argparse
import json
import platform
import time


def _rate(function, n: int) -> dict:
    start = time.perf_counter()
    function()
    seconds = time.perf_counter() - start
    return {"queries": n, "seconds": round(seconds, 3), "queries_per_second": round(n / seconds, 1)}


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--crf-iterations", type=int, default=50)
    parser.add_argument("--batch1-queries", type=int, default=200)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    import datasets
    import torch

    from hf_querygen.baselines.crf_segmenter import CRFSegmenter, CRFSettings
    from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter
    from hf_querygen.corpora import load_corpus
    from hf_querygen.corpora.webis_qsec_10 import load_segmentation_resources
    from hf_querygen.experiments.lin2017 import REPRODUCTION
    from hf_querygen.tasks.base import get_task
    from hf_querygen.tasks.segmentation.neural import segment_breaks
    from hf_querygen.training import model_for_config

    torch.set_num_threads(args.threads)
    corpus = load_corpus("webis_qsec_10", data_dir=args.data_dir)["train"]
    resources = load_segmentation_resources(args.data_dir)
    train = corpus.filter(lambda row: row["fold"] != 0)
    test = corpus.filter(lambda row: row["fold"] == 0)
    queries, n = test["query"], test.num_rows
    results: dict = {
        "device": "cpu",
        "threads": args.threads,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "test_queries": n,
    }

    for name, strict in (("wt", False), ("wt_snp", True)):
        segmenter = WikipediaTitleSegmenter(resources, strict)
        results[name] = _rate(lambda s=segmenter: s(queries), n)

    train_pos = [resources.query_pos.get(i) for i in train["id"]]
    test_pos = [resources.query_pos.get(i) for i in test["id"]]
    for name, feature_set in (("crf", "paper"), ("crf_corpus_features", "paper+corpus")):
        settings = CRFSettings(feature_set, c1=0.0, c2=0.1, max_iterations=args.crf_iterations)
        start = time.perf_counter()
        model = CRFSegmenter(settings, resources).fit(train["words"], train["breaks"], train_pos)
        train_seconds = time.perf_counter() - start
        results[name] = {
            **_rate(lambda m=model: m.predict_breaks(test["words"], test_pos), n),
            "train_seconds": round(train_seconds, 2),
            "train_queries": train.num_rows,
        }

    # the lin2017 table's systems (full-run sizes), untrained: decoding speed does not depend on weights
    task = get_task("segmentation")
    data = task.prepare(datasets.DatasetDict(train=train))
    models = {}
    for key in ("rnn_encoder_decoder", "neural_tagger"):
        system = REPRODUCTION.system(key)
        models[key] = model_for_config(
            task.model_config(system.preset, data, **system.preset_overrides)
        ).eval()
    rnn, tagger, tokenizer = models["rnn_encoder_decoder"], models["neural_tagger"], data.tokenizer
    few = queries[: args.batch1_queries]
    variants = {
        "rnn_encoder_decoder_constrained": (rnn, {"constrained": True}),
        "rnn_encoder_decoder_unconstrained": (rnn, {"constrained": False}),
        "rnn_encoder_decoder_constrained_beam5": (rnn, {"constrained": True, "num_beams": 5}),
        "neural_tagger": (tagger, {}),
    }
    for name, (model, kwargs) in variants.items():
        results[name] = {
            "batch_1": _rate(
                lambda m=model, k=kwargs: segment_breaks(m, tokenizer, few, batch_size=1, **k), len(few)
            ),
            "batch_64": _rate(
                lambda m=model, k=kwargs: segment_breaks(m, tokenizer, queries, batch_size=64, **k), n
            ),
        }
    results["neural_sizes"] = {
        "rnn_hidden_size": rnn.config.hidden_size,
        "rnn_layers": rnn.config.num_encoder_layers,
        "tagger_hidden_size": tagger.config.hidden_size,
        "vocab_size": len(tokenizer),
    }
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
