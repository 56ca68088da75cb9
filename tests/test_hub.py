"""Model cards render offline; push_to_hub really commits model, tokenizer and card.

The Hub transport of ``HfApi`` (create_repo / create_commit) is replaced by a local git repository,
so everything up to the wire (saving, card rendering, upload_folder's file selection) stays real;
the pushed repository is then loaded back with ``from_pretrained``.
"""

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from _seq2seq_toy import copy_task_tokenizer, tiny_copy_model
from huggingface_hub import HfApi, ModelCard
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_querygen  # noqa: F401  (registers the Auto classes)
from hf_querygen.hub import card_kwargs_from_training, push_to_hub, render_model_card
from hf_querygen.inference import generate_texts
from hf_querygen.training import TRAINING_METADATA_FILE, configure_generation


@pytest.fixture()
def local_hub(tmp_path, monkeypatch):
    """HfApi.create_repo / create_commit (and the server's card YAML check) work on git repositories
    under tmp_path/hub/<repo_id>."""
    import huggingface_hub.hf_api

    root = tmp_path / "hub"

    def create_repo(self, repo_id, **kwargs):
        path = root / repo_id
        if not (path / ".git").exists():
            path.mkdir(parents=True)
            subprocess.run(["git", "init", "-q", str(path)], check=True)
        return SimpleNamespace(repo_id=repo_id, url=str(path))

    def create_commit(self, repo_id, operations, *, commit_message, **kwargs):
        path = root / repo_id
        for operation in operations:
            target = path / operation.path_in_repo
            target.parent.mkdir(parents=True, exist_ok=True)
            source = operation.path_or_fileobj
            target.write_bytes(source if isinstance(source, bytes) else Path(source).read_bytes())
        git = ["git", "-C", str(path), "-c", "user.name=test", "-c", "user.email=test@example.com"]
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-q", "-m", commit_message], check=True)
        oid = subprocess.run(
            git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
        return SimpleNamespace(oid=oid, commit_url=f"file://{path}/commit/{oid}")

    def validate_yaml(self, content, **kwargs):  # the server-side card check, done locally
        header = content.split("---\n")[1]
        assert isinstance(yaml.safe_load(header), dict), "model card YAML header is not a mapping"

    # a push is checked first (hub_export.check_push): online, a token, the token accepted
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_local_test_token")
    monkeypatch.setattr(HfApi, "whoami", lambda self, *a, **k: {"name": "me"})
    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "_validate_yaml", validate_yaml)
    monkeypatch.setattr(HfApi, "create_commit", create_commit)
    monkeypatch.setattr(huggingface_hub.hf_api, "is_xet_available", lambda: False)  # the single-commit path
    return root


def _trained_folder(tmp_path):
    tokenizer = copy_task_tokenizer()
    model = tiny_copy_model(tokenizer).eval()
    configure_generation(model, tokenizer, max_new_tokens=4)
    folder = tmp_path / "trained"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    metadata = {
        "corpus": "nl2kw",
        "config": "en",
        "preset": "liu2018-attn-seq2seq",
        "seed": 7,
        "train_examples": 123,
        "source_column": "nl_query",
        "target_column": "keyword_query",
        "validation": {"eval_loss": 2.5, "eval_f1": 0.25, "eval_runtime": 1.0, "eval_n_queries": 9.0},
    }
    (folder / TRAINING_METADATA_FILE).write_text(json.dumps(metadata))
    return model, tokenizer, folder


def test_card_renders_training_metadata_offline(tmp_path):
    model, _, folder = _trained_folder(tmp_path)
    kwargs = card_kwargs_from_training(folder)
    assert kwargs["eval_metrics"] == {"loss": 2.5, "f1": 0.25}  # no runtime / count entries
    card = render_model_card(model, model_name="toy", repo_id="me/toy", **kwargs)
    text = str(card)
    assert "| f1 | 0.2500 |" in text and "| preset | liu2018-attn-seq2seq |" in text
    assert 'pipeline("query-reformulation", model="me/toy")' in text
    assert card.data.model_name == "toy" and "hf-querygen" in card.data.tags
    assert card.data.eval_results[0].dataset_name == "nl2kw"
    # a title; the usage code imports the model's own Auto class; the training data's license, not ours;
    # `datasets:` holds Hub dataset ids only (nl2kw is built here, not on the Hub)
    assert "\n# toy\n" in text
    auto_class = text.split("from transformers import ", 1)[1].split(",")[0]
    assert auto_class.startswith("AutoModelFor") and f"model = {auto_class}.from_pretrained" in text
    assert card.data.license == "other" and "TREC" in text and "not on the Hub" in text
    assert card.data.datasets is None
    with pytest.raises(FileNotFoundError, match=TRAINING_METADATA_FILE):
        card_kwargs_from_training(tmp_path)


def test_card_of_a_recipe_says_the_recipe_backbone_and_chosen_decoding(tmp_path):
    """A folder `train --system` wrote: the card names the recipe and the command that trains it, the
    backbone it was warm-started from (not a word-level vocabulary) and the decoding chosen on validation."""
    model, _, folder = _trained_folder(tmp_path)
    path = folder / TRAINING_METADATA_FILE
    metadata = json.loads(path.read_text())
    system = "ding2018/warm_start_then_questions_pointer"
    metadata.update(
        corpus="k2q",
        config=None,
        system=system,
        reproduction="ding2018",
        budget="full",
        prepare_options={"backbone": "sentence-transformers/all-MiniLM-L6-v2", "seed_pairs": True},
        train_options={"pretrain_on": "synthetic", "pretrain_steps": 800},
        synthetic_set={"name": "ding2018 Par+Ph+KQF", "pairs": 51657},
        decoding={"num_beams": 4, "keyword_bonus": 0.0},
        decoding_selection=[{"criterion": 0.05}],
        seconds=1627.0,
        torch_threads=2,
    )
    path.write_text(json.dumps(metadata))
    kwargs = card_kwargs_from_training(folder)
    text = str(render_model_card(model, model_name="toy", repo_id="me/toy", **kwargs))
    assert f"| system | {system} |" in text and f"`hf-querygen train --system {system}`" in text
    assert "| backbone | sentence-transformers/all-MiniLM-L6-v2 |" in text
    assert '| decoding (chosen on validation) | {"keyword_bonus": 0.0, "num_beams": 4} |' in text
    assert '| training options | {"pretrain_on": "synthetic", "pretrain_steps": 800} |' in text
    assert "| training seconds | 1627.0 (2 threads) |" in text
    assert "Synthetic set: ding2018 Par+Ph+KQF, 51657 pairs." in text
    assert "Warm-started from `sentence-transformers/all-MiniLM-L6-v2`" in text
    assert "Word-level" not in text and "not one of this installation's corpora" not in text
    # a folder trained from a preset on one corpus keeps the corpus's sentence and the word-level note
    plain_model, _, plain = _trained_folder(tmp_path / "plain")
    plain_text = str(render_model_card(plain_model, **card_kwargs_from_training(plain)))
    assert "Word-level vocabulary" in plain_text and "| system |" not in plain_text


def test_push_to_hub_commits_a_loadable_model(tmp_path, local_hub):
    model, tokenizer, folder = _trained_folder(tmp_path)
    url = push_to_hub(model, "me/toy", tokenizer=tokenizer, **card_kwargs_from_training(folder))
    repo = local_hub / "me" / "toy"
    assert url.startswith(f"file://{repo}/commit/")
    pushed = {p.name for p in repo.iterdir() if p.name != ".git"}
    assert {
        "README.md",
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "generation_config.json",
    } <= pushed
    assert ModelCard.load(repo / "README.md").data.model_name == "hf-querygen rnn_seq2seq"

    loaded = AutoModelForSeq2SeqLM.from_pretrained(repo).eval()
    loaded_tokenizer = AutoTokenizer.from_pretrained(repo)
    batch = tokenizer(["please find alpha qwzrtx beta"], return_tensors="pt")
    with torch.no_grad():
        expected = model(**batch, decoder_input_ids=torch.tensor([[2, 4, 5]])).logits
        actual = loaded(**batch, decoder_input_ids=torch.tensor([[2, 4, 5]])).logits
    torch.testing.assert_close(actual, expected)
    texts = ["please find gamma zzkrpt delta"]
    assert generate_texts(loaded, loaded_tokenizer, texts) == generate_texts(model, tokenizer, texts)
