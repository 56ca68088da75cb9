"""``hf-querygen export``: the Hub repository folder of a trained dual decoder holds everything a Hub repo
needs (weights, tokenizer, code, generation config, card with a model-index that huggingface_hub parses,
the recorded test-split scores), ``--push`` commits exactly that folder (HfApi's transport is a local git
repository, ``local_hub`` of test_hub.py), and the pushed repository loads with plain transformers in a
process without the library. Datasets export the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import datasets
import pytest
from _card_code import BLOCK_LIBRARY
from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import model_index_to_eval_results
from test_hub import local_hub  # noqa: F401  (fixture)
from transformers import pipeline

from hf_querygen.cli import main as cli_main
from hf_querygen.errors import InvalidInputError
from hf_querygen.hub import EVALUATIONS_FILE
from hf_querygen.hub_export import (
    MODEL_REPO_FILES,
    check_dataset_repo,
    check_model_repo,
    export_dataset,
    validate_card_metadata,
)
from hf_querygen.training import TRAINING_METADATA_FILE

TINY = ["--set", "embedding_size=8", "--set", "hidden_size=8"]
QUESTION = "what is the population of berlin"


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_dir):
    """A dual decoder trained by the CLI (a few steps), with its test split evaluated by the CLI."""
    out = tmp_path_factory.mktemp("trained") / "dual"
    arguments = ["train", "--corpus", "nl2kw", "--preset", "liu2018-dual-decoder", "--output-dir", str(out)]
    arguments += ["--max-steps", "3", "--max-train-examples", "64", "--max-validation-examples", "8"]
    assert cli_main([*arguments, *TINY, "--data-dir", str(data_dir)]) == 0
    evaluate = ["evaluate", "--model", str(out), "--split", "test", "--data-dir", str(data_dir)]
    assert cli_main(evaluate) == 0
    return out


def test_evaluate_records_its_scores_beside_the_model(trained, capsys):
    records = json.loads((trained / EVALUATIONS_FILE).read_text())
    assert [(r["corpus"], r["split"], r["limit"]) for r in records] == [("nl2kw", "test", None)]
    assert records[0]["examples"] > 0 and "f1" in records[0]["metrics"]


def test_export_of_a_trained_dual_decoder_is_a_complete_hub_repo(trained, tmp_path, local_hub, capsys):  # noqa: F811
    out = tmp_path / "repo"
    capsys.readouterr()
    assert cli_main(["export", str(trained), str(out), "--push", "me/dual"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "model" and report["commit"].startswith("file://")
    files = set(report["files"])
    code = {f"{stem}.py" for stem in ("configuration_dual_decoder", "modeling_dual_decoder")}
    code.add("pipeline_keyword_query_generation.py")
    assert set(MODEL_REPO_FILES) | code | {"generation_config.json", TRAINING_METADATA_FILE} <= files
    assert check_model_repo(out) == []

    config = json.loads((out / "config.json").read_text())
    auto_model = config["auto_map"]["AutoModelForSeq2SeqLM"]
    assert auto_model == "modeling_dual_decoder.DualDecoderForKeywordGeneration"
    assert set(config["custom_pipelines"]) == {"keyword-query-generation"}

    # the card: model-index parsed by huggingface_hub holds validation (training) and test (evaluate) scores
    card = ModelCard.load(out / "README.md")
    name, results = model_index_to_eval_results(card.data.to_dict()["model-index"])
    assert name == "dual"
    recorded = json.loads((trained / EVALUATIONS_FILE).read_text())[0]["metrics"]
    test_results = {r.metric_type: r.metric_value for r in results if r.dataset_split == "test"}
    assert test_results == pytest.approx(recorded)
    assert {r.dataset_split for r in results} == {"validation", "test"}
    assert card.data.pipeline_tag and card.data.library_name == "transformers"
    assert 'pipeline("keyword-query-generation", model="me/dual", trust_remote_code=True)' in str(card)

    # --push committed exactly the folder
    repo = local_hub / "me" / "dual"
    pushed = {str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert pushed == files
    assert (repo / "model.safetensors").read_bytes() == (out / "model.safetensors").read_bytes()

    # the pushed repository works with the library...
    ours = pipeline("keyword-query-generation", model=str(repo))(QUESTION)
    assert ours == pipeline("keyword-query-generation", model=str(trained))(QUESTION)
    # ...and with plain transformers where the library cannot be imported
    script = BLOCK_LIBRARY + textwrap.dedent(
        """
        import json

        from transformers import pipeline

        print(json.dumps(pipeline(sys.argv[2], model=sys.argv[1], trust_remote_code=True)(sys.argv[3])))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    run = subprocess.run(
        [sys.executable, "-I", "-c", script, str(repo), "keyword-query-generation", QUESTION],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == ours


def test_export_refuses_to_overwrite_and_names_what_is_missing(trained, tmp_path, capsys):
    out = tmp_path / "repo"
    out.mkdir()
    (out / "keep.txt").write_text("user file")
    for flags in ([], ["--overwrite"]):  # a user's folder is never replaced, with --overwrite neither
        assert cli_main(["export", str(trained), str(out), *flags]) == 2
        assert "keep.txt" in capsys.readouterr().err and (out / "keep.txt").read_text() == "user file"

    source_files = sorted(p.name for p in trained.iterdir())
    assert cli_main(["export", str(trained), str(trained)]) == 2
    assert "is the input" in capsys.readouterr().err
    # an output folder holding the model (its parent), or inside it: refused, the model untouched
    for inside in (trained.parent, trained / "hub"):
        assert cli_main(["export", str(trained), str(inside), "--overwrite"]) == 2
        assert "the input" in capsys.readouterr().err
    assert sorted(p.name for p in trained.iterdir()) == source_files

    exported = tmp_path / "exported"
    assert cli_main(["export", str(trained), str(exported)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert ".hf_querygen" not in report["files"]
    assert cli_main(["export", str(trained), str(exported)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert cli_main(["export", str(trained), str(exported), "--overwrite"]) == 0  # our own: replaced

    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "README.md"):
        (broken / name).write_text((trained / name).read_text())
    problems = check_model_repo(broken)
    assert "missing model.safetensors" in problems and "missing tokenizer.json" in problems
    assert any("configuration_dual_decoder.py" in p for p in problems)


def test_card_metadata_problems_are_named(tmp_path):
    card = tmp_path / "README.md"
    card.write_text("---\nlicense: apache-2.0\ntags: [x]\n---\n# x\n")
    problems = validate_card_metadata(card)
    assert any("library_name" in p for p in problems) and any("pipeline_tag" in p for p in problems)
    # a result without a value: huggingface_hub's own model-index parser rejects it
    card.write_text(
        "---\nlicense: apache-2.0\nmodel-index:\n- name: x\n  results:\n  - task: {type: t}\n"
        "    dataset: {name: d, type: d}\n    metrics: [{type: f1}]\n---\n# x\n"
    )
    assert any("model_index" in p or "model-index" in p for p in validate_card_metadata(card))


@pytest.fixture()
def dataset_folder(tmp_path):
    """A built dataset folder in the layout of dataset_scripts/<name> (card with configs + parquet)."""
    folder = tmp_path / "toy_corpus"
    for config, rows in (("en", 3), ("de", 2)):
        for split in ("train", "test"):
            data = datasets.Dataset.from_dict({"query": [f"{config} {split} {i}" for i in range(rows)]})
            (folder / "data" / config).mkdir(parents=True, exist_ok=True)
            data.to_parquet(str(folder / "data" / config / f"{split}.parquet"))
    configs = "".join(
        f"- config_name: {config}\n  data_files:\n"
        + "".join(f"  - split: {s}\n    path: data/{config}/{s}.parquet\n" for s in ("train", "test"))
        for config in ("en", "de")
    )
    (folder / "README.md").write_text(f"---\nlicense: mit\nconfigs:\n{configs}---\n# toy\n")
    (folder / "build.py").write_text("print('rebuild')\n")
    return folder


def test_dataset_export_and_push(dataset_folder, tmp_path, local_hub, capsys):  # noqa: F811
    out = tmp_path / "dataset_repo"
    assert cli_main(["export", str(dataset_folder), str(out), "--push", "me/toy"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "dataset"
    assert set(report["files"]) == {"README.md"} | {
        f"data/{c}/{s}.parquet" for c in ("en", "de") for s in ("train", "test")
    }  # the build script stays behind: datasets 5 runs no scripts
    assert check_dataset_repo(out) == []
    repo = local_hub / "me" / "toy"
    assert datasets.get_dataset_config_names(str(repo)) == ["en", "de"]
    assert datasets.load_dataset(str(repo), "de")["test"]["query"] == ["de test 0", "de test 1"]


def test_dataset_export_names_missing_data(dataset_folder, tmp_path):
    (dataset_folder / "data" / "de" / "test.parquet").unlink()
    with pytest.raises(InvalidInputError, match="data/de/test.parquet"):
        export_dataset(dataset_folder, tmp_path / "out")
    assert cli_main(["export", "no_such_corpus", str(tmp_path / "out2")]) == 2


@pytest.mark.parametrize(
    "repo, env, message",
    [
        ("not a/valid id!", {}, "is not a valid Hub repository id"),
        ("me/model", {"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
        ("me/model", {"HF_HUB_OFFLINE": "", "HF_TOKEN": ""}, "no Hub token"),
        ("me/model", {"HF_HUB_OFFLINE": "", "HF_TOKEN": "hf_x"}, "cannot reach the Hub"),
    ],
)
def test_push_is_checked_before_anything_is_written(
    trained, tmp_path, capsys, monkeypatch, repo, env, message
):
    import huggingface_hub

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: os.environ.get("HF_TOKEN") or None)
    out = tmp_path / "repo"
    assert cli_main(["export", str(trained), str(out), "--push", repo]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and err.startswith("hf-querygen: error:")
    assert not out.exists()


@pytest.mark.parametrize("content", ["{not json", '{"a": 1}', "[1, 2]"])
def test_a_damaged_evaluations_file_is_named_before_the_model_runs(trained, tmp_path, capsys, content):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(trained, model)
    (model / EVALUATIONS_FILE).write_text(content)
    predictions = tmp_path / "predictions.jsonl"
    arguments = ["evaluate", "--model", str(model), "--split", "test", "--predictions", str(predictions)]
    assert cli_main(arguments) == 2
    err = capsys.readouterr().err
    assert EVALUATIONS_FILE in err and "damaged" in err and "Traceback" not in err
    assert not predictions.exists() and (model / EVALUATIONS_FILE).read_text() == content
    assert cli_main(["export", str(model), str(tmp_path / "out")]) == 2
    assert "damaged" in capsys.readouterr().err and not (tmp_path / "out").exists()
