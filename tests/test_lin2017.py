"""The Lin'17 reproduction's neural systems through the runner: both neural segmenters train (length-bucketed
batches, early stopping) on a real Webis-QSeC-10 slice and every decoding of them is scored."""

import dataclasses

import datasets
import pytest
import torch

from hf_querygen.errors import InvalidInputError
from hf_querygen.experiments import lin2017
from hf_querygen.experiments.jobs import Job, rescore_saved, train_and_score, with_variants
from hf_querygen.experiments.tables import Budget, Fold

torch.set_num_threads(1)


def _slice(data_dir):
    from hf_querygen.corpora import load_corpus
    from hf_querygen.tasks.base import get_task

    corpus = load_corpus("webis_qsec_10", "segmentations", data_dir=data_dir)["train"]
    fit, validation = lin2017.folds._validation_split(corpus.select(range(0, 400)), 0.1)
    fold = Fold(
        0, datasets.DatasetDict(train=fit, validation=validation, test=corpus.select(range(400, 460)))
    )
    data = get_task("segmentation").prepare(fold.splits)
    budget = Budget(
        "test",
        patience=1,
        training_overrides={"num_train_epochs": 2},
        preset_overrides={
            "rnn_encoder_decoder": {"hidden_size": 24, "decoder_hidden_size": 24, "embedding_size": 24},
            "neural_tagger": {"hidden_size": 16, "embedding_size": 16},
        },
    )
    return fold, data, budget


def test_neural_systems_train_and_every_decoding_is_scored(data_dir, tmp_path):
    fold, data, budget = _slice(data_dir)
    reproduction = lin2017.REPRODUCTION
    rnn = reproduction.system("rnn_encoder_decoder")
    job = Job(rnn, 0, 0, with_variants(rnn, reproduction.systems))
    assert [v.key for v in job.variants] == [
        "rnn_encoder_decoder",
        "rnn_encoder_decoder_constrained",
        "rnn_encoder_decoder_constrained_word_only",
    ]
    models = tmp_path / "models"
    records = train_and_score(job, reproduction, budget, data, tmp_path, models, fold)
    tagger = reproduction.system("neural_tagger")
    records += train_and_score(Job(tagger, 0, 0, (tagger,)), reproduction, budget, data, tmp_path)
    assert {r["system"] for r in records} == {
        "rnn_encoder_decoder",
        "rnn_encoder_decoder_constrained",
        "rnn_encoder_decoder_constrained_word_only",
        "neural_tagger",
    }
    for record in records:
        scores = record["scores"]["test"]
        assert 0.0 <= scores["query_accuracy"] <= scores["break_accuracy"] <= 1.0, record["system"]
        assert 1 <= record["training"]["epochs"] <= 2, record["system"]
        assert (tmp_path / "runs" / f"{record['system']}-fold0-seed0.json").is_file()
    by_system = {r["system"]: r for r in records}
    # constrained decoding can only break or copy the next word: the segments spell the query
    constrained = by_system["rnn_encoder_decoder_constrained"]["outputs"]["test"]
    for output, query in zip(constrained, fold.splits["test"]["query"], strict=True):
        assert output.replace("|", " ").split() == query.split()
    assert not list((tmp_path / "checkpoints").glob("*/checkpoint-*"))  # checkpoints removed after training
    assert dataclasses.is_dataclass(budget)
    # a row added after the model was kept: only the variants are decoded again, the row keeps its decoding
    kept = models / "rnn_encoder_decoder-fold0-seed0"
    again = rescore_saved(job, reproduction, budget, data, tmp_path / "again", kept, variants_only=True)
    assert [r["system"] for r in again] == [v.key for v in job.variants[1:]]
    for record in again:
        assert record["outputs"] == by_system[record["system"]]["outputs"], record["system"]
        assert record["rescored_from"] == str(kept) and record["train_seconds"] is None
    assert not (tmp_path / "again" / "runs" / "rnn_encoder_decoder-fold0-seed0.json").exists()
    with pytest.raises(InvalidInputError, match="no row that decodes its model another way"):
        rescore_saved(
            Job(rnn, 0, 0, (rnn,)), reproduction, budget, data, tmp_path / "x", kept, variants_only=True
        )


def test_a_kept_model_is_rescored_as_it_was_scored_and_only_by_its_own_run(data_dir, tmp_path):
    """rescore_saved (device_rows --rescore-models) decodes a model kept by train_and_score as that run
    did: same decoding choice, outputs and scores, no training; another run's folder is refused."""
    fold, data, budget = _slice(data_dir)
    reproduction = lin2017.REPRODUCTION
    tagger = reproduction.system("neural_tagger")
    job = Job(tagger, 0, 0, (tagger,))
    models = tmp_path / "models"
    (trained,) = train_and_score(job, reproduction, budget, data, tmp_path / "trained", models, fold)
    kept = models / "neural_tagger-fold0-seed0"
    (rescored,) = rescore_saved(job, reproduction, budget, data, tmp_path / "rescored", kept, fold=fold)
    assert rescored["outputs"] == trained["outputs"] and rescored["scores"] == trained["scores"]
    assert rescored.get("decoding") == trained.get("decoding")
    assert rescored["training"] == trained["training"]
    assert rescored["train_seconds"] is None and rescored["rescored_from"] == str(kept)
    assert (tmp_path / "rescored" / "runs" / "neural_tagger-fold0-seed0.json").is_file()
    with pytest.raises(InvalidInputError, match="seed is 0, but this run rescores 1"):
        rescore_saved(Job(tagger, 1, 0, (tagger,)), reproduction, budget, data, tmp_path / "other", kept)
    with pytest.raises(InvalidInputError, match="into the folder it reads"):
        rescore_saved(job, reproduction, budget, data, tmp_path / "other", kept, save_models=models)
