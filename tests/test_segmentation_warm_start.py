"""The warm-started segmenter (lin2017/warm_start) on a tiny random BERT built here: word-piece aware labels,
the backbone's weights really loaded, a toy rule learned, and the saved folder gives identical outputs
through ``from_pretrained`` and ``pipeline("query-segmentation")``."""

from __future__ import annotations

import datasets
import pytest
import torch
from _tiny_bert import save_tiny_bert
from test_segmentation_neural import COMPOUNDS, SINGLES, toy_corpus

from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.segmentation.neural import encode_for_tagging
from hf_querygen.tasks.word_tagging import word_aligned_inputs

#: pieces of the tiny WordPiece vocabulary: whole words, and two words only as pieces ("graffiti" =
#: "graf" + "##fiti", "freezers" = "freez" + "##ers") so that labels must skip the later pieces
PIECES = ["graf", "##fiti", "freez", "##ers"]


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    """A folder holding a 1-layer random BERT and its WordPiece tokenizer: a local backbone."""
    words = sorted({w for unit in COMPOUNDS + SINGLES for w in unit.split()} - {"graffiti", "freezers"})
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), [*PIECES, *words])


@pytest.fixture(scope="module")
def toy_splits():
    return datasets.DatasetDict(
        train=datasets.Dataset.from_list(toy_corpus(240, seed=0)),
        validation=datasets.Dataset.from_list(toy_corpus(40, seed=1)),
    )


def test_labels_sit_on_each_words_first_piece(backbone, toy_splits):
    data = get_task("segmentation").prepare(toy_splits, backbone=str(backbone))
    tokenizer = data.tokenizer
    row = datasets.Dataset.from_list(
        [{"query": "Graffiti fonts cheap freezers", "breaks": [0, 1, 1], "reference": ""}]
    )
    encoded = encode_for_tagging(row, tokenizer)[0]
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    assert tokens == ["[CLS]", "graf", "##fiti", "fonts", "cheap", "freez", "##ers", "[SEP]"]
    # B I B B on the first pieces (B = 0, I = 1), nothing on later pieces and special tokens
    assert encoded["labels"] == [-100, 0, -100, 1, 0, 0, -100, -100]
    # a word the normaliser deletes entirely is read as [UNK], so it keeps a position and a tag
    aligned = word_aligned_inputs(["cheap \u200b maps"], tokenizer)
    assert tokenizer.convert_ids_to_tokens(aligned["input_ids"][0]) == [
        "[CLS]",
        "cheap",
        "[UNK]",
        "maps",
        "[SEP]",
    ]
    assert aligned["word_starts"] == [[1, 2, 3]]


def test_backbone_and_preset_must_agree(backbone, toy_splits):
    task = get_task("segmentation")
    words = task.prepare(toy_splits)
    with pytest.raises(InvalidInputError, match="prepare option backbone"):
        task.model_config("lin2017-warm-start", words)
    pieces = task.prepare(toy_splits, backbone=str(backbone))
    with pytest.raises(InvalidInputError, match="not built on one"):
        task.model_config("lin2017-tagger", pieces)
    with pytest.raises(InvalidInputError, match="brings its own"):
        task.prepare(toy_splits, backbone=str(backbone), min_word_frequency=2)


@pytest.fixture(scope="module")
def trained(backbone, toy_splits, tmp_path_factory):
    from hf_querygen.training import train_preset

    data = get_task("segmentation").prepare(toy_splits, backbone=str(backbone))
    trainer = train_preset(
        data,
        "lin2017-warm-start",
        tmp_path_factory.mktemp("checkpoints"),
        seed=0,
        training_overrides={
            "num_train_epochs": 30,
            "learning_rate": 1e-2,
            "per_device_train_batch_size": 16,
            "warmup_steps": 0,
        },
        early_stopping_patience=None,
        select_on="query_accuracy",
    )
    return data, trainer.model


def test_the_backbone_weights_are_loaded(backbone, toy_splits):
    from transformers import BertModel

    from hf_querygen.pretrained import BACKBONE_FIELD
    from hf_querygen.training import model_for_config

    data = get_task("segmentation").prepare(toy_splits, backbone=str(backbone))
    config = data.task.model_config("lin2017-warm-start", data)
    assert config.id2label == {0: "B", 1: "I"} and config.hidden_size == 16
    assert getattr(config, BACKBONE_FIELD)["source"] == "local"
    model = model_for_config(config)
    original = BertModel.from_pretrained(backbone).state_dict()
    loaded = model.bert.state_dict()  # a token classifier's encoder has no pooler
    assert set(loaded) == {name for name in original if not name.startswith("pooler.")}
    for name, tensor in loaded.items():
        assert torch.equal(tensor, original[name]), name


def test_a_toy_rule_is_learned_and_the_saved_folder_decodes_identically(trained, tmp_path):
    from transformers import AutoModelForTokenClassification, pipeline

    import hf_querygen  # noqa: F401  (registers the pipeline task)
    from hf_querygen.training import save_model_folder

    data, model = trained
    task = data.task
    queries = data.sources("validation")
    outputs = task.predict(model, data.tokenizer, queries)
    assert task.score(outputs, data.references("validation"), queries)["query_accuracy"] >= 0.9

    folder = save_model_folder(model, data.tokenizer, tmp_path / "segmenter", {"task": "segmentation"})
    loaded = AutoModelForTokenClassification.from_pretrained(folder).eval()
    inputs = data.tokenizer(
        ["graffiti fonts alphabet", "cheap used chest freezers"], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        assert torch.equal(model(**inputs).logits, loaded(**inputs).logits)
    segment = pipeline("query-segmentation", model=str(folder))
    assert segment(queries, batch_size=7) == outputs
    assert segment("Graffiti Fonts alphabet") == ["Graffiti Fonts", "alphabet"]  # the caller's own words
