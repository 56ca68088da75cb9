"""Model folders that load without a word today but are wrong: a tokenizer from another model, a
missing or foreign tensor, NaN or integer weights, a generation config with wrong types; plus
``--set`` with an unknown field and ``--resume`` from a checkpoint that cannot continue the run."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import hf_querygen  # noqa: F401  (registers the models)
from hf_querygen.cli import main as cli_main
from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.model_folder import load_trained
from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer
from hf_querygen.training import (
    TRAINING_METADATA_FILE,
    check_resumable_checkpoint,
    save_model_folder,
)

TEXTS = ["where should i go in beijing", "graffiti fonts alphabet", "what is the weather in berlin"]
OTHER_TEXTS = ["completely different words here", "and some more of them", "zebra yak quokka"]


def tiny_model(tokenizer):
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration

    torch.manual_seed(0)
    config = RNNSeq2SeqConfig(
        vocab_size=len(tokenizer),
        output_vocab_size=output_vocab_size_of(tokenizer),
        embedding_size=8,
        hidden_size=8,
        max_decoding_length=4,
    )
    model = RNNSeq2SeqForConditionalGeneration(config)
    model.generation_config.max_length = 4
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A folder written by save_model_folder (as `train` does: metadata with the tokenizer hash)."""
    tokenizer = train_word_tokenizer(TEXTS)
    folder = tmp_path_factory.mktemp("models") / "good"
    save_model_folder(tiny_model(tokenizer), tokenizer, folder, {"task": "text2text"})
    return folder


@pytest.fixture
def folder(saved, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(saved, copy)
    return copy


def edit_weights(folder, change):
    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    change(tensors)
    save_file(tensors, str(path), metadata={"format": "pt"})


def test_the_good_folder_loads(saved):
    model, tokenizer, metadata = load_trained(saved)
    assert metadata["task"] == "text2text" and len(tokenizer) == model.config.vocab_size


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda t: t.pop(sorted(t)[0]), "lacks tensors the model needs"),
        (
            lambda t: t.__setitem__("extra.weight", torch.zeros(2)),
            r"does not have \(weights of another model\?\): extra.weight",
        ),
        (lambda t: t[sorted(t)[0]].view(-1).__setitem__(0, float("nan")), "holds NaN or infinite"),
        (lambda t: t[sorted(t)[-1]].view(-1).__setitem__(-1, float("inf")), "holds NaN or infinite"),
        (lambda t: t.__setitem__(sorted(t)[0], t[sorted(t)[0]].to(torch.int64)), "as I64; the model expects"),
    ],
)
def test_weights_that_are_not_the_models_are_named(folder, damage, expected):
    edit_weights(folder, damage)
    with pytest.raises(ModelFolderError, match=expected) as info:
        load_trained(folder)
    assert str(folder) in str(info.value) and "model.safetensors" in str(info.value)


def test_tokenizer_from_another_model(folder):
    other = train_word_tokenizer(OTHER_TEXTS)
    assert len(other) <= len(train_word_tokenizer(TEXTS))  # same or smaller: the size alone tells nothing
    other.save_pretrained(folder)
    with pytest.raises(ModelFolderError, match="tokenizer.json is not the tokenizer the model was trained"):
        load_trained(folder)


def test_bigger_tokenizer_than_the_embedding_without_training_metadata(folder):
    (folder / TRAINING_METADATA_FILE).unlink()
    train_word_tokenizer(TEXTS + OTHER_TEXTS).save_pretrained(folder)
    with pytest.raises(ModelFolderError, match=r"tokenizer.json has \d+ tokens but the model's vocabulary"):
        load_trained(folder)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("num_beams", "4", "num_beams='4'; expected an integer >= 1"),
        ("max_length", 2.5, "max_length=2.5; expected an integer"),
        ("num_beams", 0, "expected an integer >= 1"),
        ("eos_token_id", -1, "eos_token_id=-1; expected a token id"),
        ("eos_token_id", [3, "x"], "eos_token_id"),
        ("do_sample", "yes", "do_sample='yes'; expected true or false"),
        ("temperature", 0, "temperature=0; expected a finite number > 0"),
        ("top_p", 3.0, "top_p"),
        ("early_stopping", "sometimes", "early_stopping"),
    ],
)
def test_generation_config_types(folder, field, value, expected):
    path = folder / "generation_config.json"
    config = json.loads(path.read_text())
    config[field] = value
    path.write_text(json.dumps(config))
    with pytest.raises(ModelFolderError, match=expected.replace("(", r"\(").replace("[", r"\[")):
        load_trained(folder)


@pytest.mark.parametrize(
    ("decoding", "expected"),
    [
        ({"num_beams": "4"}, "task_decoding: num_beams='4'"),
        ({"require_keywords": "no"}, "task_decoding: require_keywords='no'"),
        ({"keyword_bonus": -1.0}, "task_decoding: keyword_bonus=-1.0"),
        ({"temperature": 0}, "task_decoding: temperature=0"),
        ([4, 3], "task_decoding=[4, 3]; expected an object"),
    ],
)
def test_a_saved_decoding_with_wrong_types_fails_when_the_folder_opens(folder, decoding, expected):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["task_decoding"] = decoding
    path.write_text(json.dumps(config))
    with pytest.raises(ModelFolderError, match=r"config\.json has .*" + expected.replace("[", r"\[")):
        load_trained(folder)


def test_a_saved_decoding_is_checked_by_the_task_like_a_callers_arguments(saved):
    """Set in memory (no folder check ran), the saved decoding still meets the task's one check."""
    from hf_querygen.tasks.base import get_task

    model, tokenizer, _ = load_trained(saved)
    task = get_task("text2text")
    model.config.task_decoding = {"num_beams": 2, "num_return_sequences": 2}
    (returned,) = task.predict(model, tokenizer, ["beijing"])  # the saved decoding is the default
    assert isinstance(returned, list) and len(returned) == 2
    model.config.task_decoding = {"no_repeat_ngram_size": 1.5}
    with pytest.raises(InvalidInputError, match=r"task_decoding: no_repeat_ngram_size=1\.5"):
        task.predict(model, tokenizer, ["beijing"])
    model.config.task_decoding = "beam"
    with pytest.raises(InvalidInputError, match="task_decoding is a str"):
        task.predict(model, tokenizer, ["beijing"])


def test_set_unknown_field_is_refused_with_a_suggestion(tmp_path, capsys):
    argv = ["train", "--preset", "liu2018-seq2seq", "--corpus", "nl2kw", "--output-dir", str(tmp_path / "m")]
    assert cli_main([*argv, "--set", "hiden_size=3"]) == 2
    err = capsys.readouterr().err
    assert "no field 'hiden_size'" in err and "did you mean 'hidden_size'" in err
    assert cli_main([*argv, "--set", "no_such_field=3"]) == 2
    assert "no field 'no_such_field'" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_resume_refuses_a_checkpoint_that_cannot_continue(tmp_path):
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig

    config = RNNSeq2SeqConfig(vocab_size=20, output_vocab_size=10, embedding_size=8, hidden_size=8)
    checkpoint = tmp_path / "checkpoints" / "checkpoint-10"
    checkpoint.mkdir(parents=True)
    config.save_pretrained(checkpoint)
    with pytest.raises(InvalidInputError, match="no optimizer.pt"):
        check_resumable_checkpoint(checkpoint, config)
    (checkpoint / "optimizer.pt").write_bytes(b"state")
    check_resumable_checkpoint(checkpoint, config)  # the same config resumes
    changed = RNNSeq2SeqConfig(vocab_size=20, output_vocab_size=10, embedding_size=8, hidden_size=16)
    with pytest.raises(InvalidInputError, match="hidden_size: 8 in the checkpoint, 16 now"):
        check_resumable_checkpoint(checkpoint, changed)


def test_written_files_follow_the_umask(tmp_path):
    import os
    import stat

    from hf_querygen.experiments.jobs import _save_record

    tokenizer = train_word_tokenizer(TEXTS)
    old = os.umask(0o027)
    try:
        folder = save_model_folder(
            tiny_model(tokenizer), tokenizer, tmp_path / "model", {"task": "text2text"}
        )
        _save_record(tmp_path / "out", {"system": "s", "seed": 0, "fold": None, "scores": {}})
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o750
    files = [p for p in folder.rglob("*") if p.is_file()] + list((tmp_path / "out" / "runs").iterdir())
    assert files and {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o640}, [
        (p.name, oct(p.stat().st_mode)) for p in files
    ]


def test_every_registered_system_and_budget_sets_only_fields_its_config_has():
    """The strict --set check applies to the library's own recipes too: a field a config does not have
    would be ignored silently (liu2018's quick budget set decoder_hidden_size on the dual decoder)."""
    from hf_querygen.experiments.papers import REPRODUCTIONS, get_reproduction
    from hf_querygen.presets import check_config_overrides

    checked = 0
    for name in REPRODUCTIONS:
        reproduction = get_reproduction(name)
        if not hasattr(reproduction, "systems"):  # an evaluation without trained systems (retrieval)
            continue
        for system in reproduction.systems:
            if system.preset is None:
                continue
            check_config_overrides(system.preset, system.preset_overrides)
            for budget in reproduction.budgets.values():
                check_config_overrides(system.preset, (budget.preset_overrides or {}).get(system.key, {}))
                checked += 1
    assert checked > 20
