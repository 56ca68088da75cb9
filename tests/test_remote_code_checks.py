"""The code files a saved folder carries are checked before transformers imports any of them
(``hf_querygen.model_folder.check_remote_code``, run by every loader of the library and by ``export``): a
damaged, truncated or swapped file, a missing one, or an ``auto_map`` / ``custom_pipelines`` entry that
points outside the folder is a ModelFolderError naming the file, never transformers' raw SyntaxError,
FileNotFoundError or unpacking error."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import torch

from hf_querygen import load_pipeline
from hf_querygen.errors import ModelFolderError
from hf_querygen.model_folder import CODE_HASHES_FIELD, check_model_folder, load_trained
from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer

TEXTS = ["where should i go in beijing", "graffiti fonts alphabet", "what is the weather in berlin"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration

    torch.manual_seed(0)
    tokenizer = train_word_tokenizer(TEXTS)
    model = DualDecoderForKeywordGeneration(
        DualDecoderConfig(
            vocab_size=len(tokenizer),
            output_vocab_size=output_vocab_size_of(tokenizer),
            embedding_size=8,
            hidden_size=8,
        )
    )
    folder = tmp_path_factory.mktemp("saved") / "dual"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def copy(saved, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(saved, folder)
    return folder


def _config(folder):
    return json.loads((folder / "config.json").read_text())


def _edit_config(folder, change):
    config = _config(folder)
    change(config)
    (folder / "config.json").write_text(json.dumps(config))


def test_the_saved_folder_records_its_code_and_passes(saved):
    config = _config(saved)
    named = {ref.split(".")[0] + ".py" for ref in config["auto_map"].values()}
    assert named <= set(config[CODE_HASHES_FIELD]) and all((saved / n).is_file() for n in named)
    check_model_folder(saved)
    load_trained(saved)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "swapped", "one byte", "missing"])
def test_a_damaged_code_file_is_named(copy, damage):
    modeling = next(copy.glob("modeling_*.py"))
    configuration = next(copy.glob("configuration_*.py"))
    text = modeling.read_bytes()
    if damage == "garbage":
        modeling.write_bytes(b"\x00\xff not python (")
    elif damage == "truncated":
        modeling.write_bytes(text[: len(text) // 2])
    elif damage == "swapped":
        modeling.write_bytes(configuration.read_bytes())
    elif damage == "one byte":
        modeling.write_bytes(text.replace(b"def ", b"def_", 1))
    else:
        modeling.unlink()
    expected = "is missing" if damage == "missing" else "is not the code saved with this model"
    for load in (check_model_folder, load_trained, lambda f: load_pipeline("keyword-query-generation", f)):
        with pytest.raises(ModelFolderError, match=f"{modeling.name} {expected}"):
            load(copy)


@pytest.mark.parametrize(
    "reference",
    [
        "../outside.Evil",
        "other/repo--modeling_dual_decoder.X",
        "modeling_dual_decoder",
        "a.b.C",
        5,
        "/tmp/x.Y",
    ],
)
@pytest.mark.parametrize("where", ["auto_map", "custom_pipelines"])
def test_a_reference_outside_the_folder_is_refused(copy, reference, where):
    def point(config):
        if where == "auto_map":
            config["auto_map"]["AutoConfig"] = reference
        else:
            task = next(iter(config["custom_pipelines"]))
            config["custom_pipelines"][task]["impl"] = reference

    _edit_config(copy, point)
    with pytest.raises(ModelFolderError, match=r"config.json has .*not 'module.Class' of a code file"):
        check_model_folder(copy)


def test_a_folder_saved_without_hashes_is_still_compiled_and_checked(copy):
    _edit_config(copy, lambda config: config.pop(CODE_HASHES_FIELD))
    check_model_folder(copy)  # intact code: fine
    modeling = next(copy.glob("modeling_*.py"))
    text = modeling.read_text()
    # cut before a top-level def / class past a third of the file: a cut inside a block would make the
    # error an IndentationError, depending on what the bundled code holds at that byte
    cut = len(text) // 3 + re.search(r"\n(?=(def|class) )", text[len(text) // 3 :]).start()
    modeling.write_text(text[:cut] + "\ndef broken(:\n")
    with pytest.raises(ModelFolderError, match=rf"{modeling.name} is damaged \(SyntaxError line \d+\)"):
        check_model_folder(copy)
    class_name = _config(copy)["auto_map"]["AutoConfig"].split(".")[1]
    configuration = next(copy.glob("configuration_*.py"))
    modeling.write_text(text)
    configuration.write_text(configuration.read_text().replace(f"class {class_name}", "class Other"))
    with pytest.raises(ModelFolderError, match=f"{configuration.name} does not define {class_name}"):
        check_model_folder(copy)


def test_export_names_a_damaged_code_file(copy, tmp_path):
    from hf_querygen.hub_export import check_model_repo

    next(copy.glob("pipeline_*.py")).write_text("x = (")
    problems = check_model_repo(copy)
    assert any("pipeline_" in p and "not the code saved" in p for p in problems)
