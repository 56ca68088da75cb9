"""The Lin'17 reproduction's neural fold: both neural segmenters train (length-bucketed batches, early
stopping) on a real Webis-QSeC-10 slice and every decoding of them is scored."""

import torch

from hf_querygen.experiments.lin2017 import NeuralSettings, run_neural_fold

torch.set_num_threads(1)


def test_neural_fold_trains_and_scores_every_neural_system(data_dir, tmp_path):
    from hf_querygen.corpora import load_corpus

    corpus = load_corpus("webis_qsec_10", "segmentations", data_dir=data_dir)["train"]
    train = corpus.select(range(0, 400))
    test = corpus.select(range(400, 460))
    settings = NeuralSettings(
        rnn_hidden_size=24,
        rnn_layers=1,
        tagger_embedding_size=16,
        tagger_hidden_size=16,
        max_epochs=2,
        patience=1,
    )
    out = run_neural_fold(train, test, settings, seed=0, work_dir=tmp_path)
    assert set(out) == {
        "rnn_encoder_decoder",
        "rnn_encoder_decoder_constrained",
        "rnn_encoder_decoder_constrained_word_only",
        "neural_tagger",
    }
    for system, result in out.items():
        scores = result["scores"]
        assert 0.0 <= scores["query_accuracy"] <= scores["break_accuracy"] <= 1.0, system
        assert 1 <= result["epochs"] <= settings.max_epochs, system
    # constrained decoding can only break or copy the next word: the segments spell the query
    assert out["rnn_encoder_decoder_constrained"]["scores"]["break_accuracy"] > 0.3
    assert not list(tmp_path.glob("*/checkpoint-*"))  # checkpoints are removed after training
