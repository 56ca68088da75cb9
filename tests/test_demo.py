"""``hf-querygen demo``: the quick-trained model set is built on first start, every panel gets its result,
and headless Chromium (Debian's chromium + chromium-driver; no browser download) shows them.

The models are tiny (2 training steps): the test checks that each panel shows what the demo computed for
the typed question, not that the reformulations are good."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

gradio = pytest.importorskip("gradio", reason="the demo needs the extra: pip install 'hf-querygen[demo]'")

from hf_querygen.cli import main as cli_main  # noqa: E402
from hf_querygen.demo import (  # noqa: E402
    DEMO_MODELS,
    TEXT_PANELS,
    QueryDemo,
    build_quick_models,
    find_chromium,
    load_documents,
    model_label,
)

TINY = {"embedding_size": 8, "hidden_size": 8}
TINY_DECODER = {**TINY, "decoder_hidden_size": 8}
OVERRIDES = {"keywords": TINY, "segmentation": TINY_DECODER, "k2q": TINY_DECODER, "q2id": TINY_DECODER}
QUESTION = "what are the health benefits of eating broccoli"
KEYWORDS = "broccoli health benefits"
#: where the browser test writes its screenshot (set to results/demo/screenshot.png to refresh the README's)
SCREENSHOT_ENV = "HF_QUERYGEN_DEMO_SCREENSHOT"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, data_dir):
    models_dir = tmp_path_factory.mktemp("demo_models")
    folders = build_quick_models(
        models_dir, data_dir, max_steps=2, max_train_examples=64, preset_overrides=OVERRIDES, progress=False
    )
    assert all((folder / "config.json").is_file() for folder in folders.values())
    return folders


@pytest.fixture(scope="module")
def demo(folders, data_dir):
    return QueryDemo(folders, load_documents(data_dir))


def test_quick_set_is_built_once(folders, data_dir):
    """A second start finds the models and trains nothing (the folders are not rewritten)."""
    stamps = {role: (folder / "model.safetensors").stat().st_mtime_ns for role, folder in folders.items()}
    again = build_quick_models(folders["keywords"].parent, data_dir, max_steps=2, progress=False)
    assert again == folders
    assert {role: (f / "model.safetensors").stat().st_mtime_ns for role, f in folders.items()} == stamps
    assert set(folders) == set(DEMO_MODELS)


def test_panels_are_labelled_by_the_models_passed(demo, folders, tmp_path):
    for role, folder in folders.items():
        assert folder.name in demo.labels[role] and "quick smoke run" in demo.labels[role]  # built --quick
        assert DEMO_MODELS[role][0] in demo.labels[role]  # the preset the folder was trained with
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "bert"}')
    assert model_label("k2q", other) == "bert: other"


def test_every_panel_gets_its_result(demo):
    result = demo.run(QUESTION, KEYWORDS)
    assert all([result.keywords_dual, result.segmentation, result.k2q_questions, result.intent])
    assert result.keywords_yake and all(word in QUESTION for word in result.keywords_yake.split())
    assert result.k2q_input == KEYWORDS
    assert result.segmentation.startswith("[") and result.segmentation.replace("[", "").replace("]", "")
    assert result.k2q_questions and result.intent
    # the tables are the index's own rankings, question column first
    for ranker in ("bm25", "sdm"):
        expected = [hit.id for hit in demo.index.search(QUESTION, k=5, ranker=ranker)]
        first_column = [row.split(" | ")[1] for row in result.tables[ranker].splitlines()[2:]]
        assert [cell.split("**")[1] for cell in first_column] == expected
        assert "intent description" in result.tables[ranker].splitlines()[0]
    # no typed keyword query: the dual decoder's is used
    assert demo.run(QUESTION).k2q_input == result.keywords_dual


def test_dense_and_hybrid_tables_with_an_embedder(folders, data_dir, tmp_path):
    from _dense_toy import tiny_bert

    from hf_querygen.pretrained import SentenceEmbedder

    documents = dict(list(load_documents(data_dir).items())[:40])
    embedder = SentenceEmbedder(tiny_bert(tmp_path / "bert"), device="cpu")
    dense_demo = QueryDemo(folders, documents, embedder=embedder)
    assert dense_demo.rankers == ("bm25", "sdm", "dense", "hybrid")
    result = dense_demo.run(QUESTION, KEYWORDS)
    for ranker in ("dense", "hybrid"):
        expected = [hit.id for hit in dense_demo.index.search(QUESTION, k=5, ranker=ranker)]
        first_column = [row.split(" | ")[1] for row in result.tables[ranker].splitlines()[2:]]
        assert [cell.split("**")[1] for cell in first_column] == expected


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _chromium() -> None:
    if find_chromium() is None:
        pytest.skip(
            "headless Chromium is not installed (Debian: apt-get install chromium chromium-driver; "
            ".ci/setup installs it when run as root)"
        )
    pytest.importorskip("selenium", reason="selenium drives the browser (the `dev` extra)")


def _run_demo_cli(arguments: list[str], folders: dict, cwd: Path) -> subprocess.CompletedProcess:
    """``hf-querygen demo ARGUMENTS`` in its own process. Gradio's server configures uvicorn's logging with
    the streams of the moment (pytest's captures, closed when the test ends), and its threads may outlive
    ``close()``: no server runs inside the test process."""
    for role, folder in folders.items():
        arguments = [*arguments, f"--{role}", str(folder)]
    code = "import sys; from hf_querygen.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, "demo", *arguments], capture_output=True, text=True, timeout=600, cwd=cwd
    )


def test_demo_in_headless_chromium(demo, folders, data_dir, tmp_path):
    """``demo --screenshot``: the question and keyword query typed into the served app in headless
    Chromium; every panel shows what the demo computes for them, and the PNG is written."""
    _chromium()
    screenshot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "screenshot.png").resolve()
    arguments = ["--data-dir", str(data_dir), "--screenshot", str(screenshot)]
    arguments += ["--question", QUESTION, "--keyword-query", KEYWORDS]
    run = _run_demo_cli(arguments, folders, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    shown = json.loads(run.stdout[run.stdout.index("{") :])
    expected = demo.run(QUESTION, KEYWORDS)
    # every panel whose model was asked shows something (an output, or a note that the model wrote nothing)
    assert all(shown[name].strip() for name in TEXT_PANELS), {name: shown[name] for name in TEXT_PANELS}
    assert {name: shown[name] for name in TEXT_PANELS} == {
        "keywords-dual": expected.keywords_dual,
        "keywords-yake": expected.keywords_yake,
        "segmentation": expected.segmentation,
        "k2q-used": KEYWORDS,
        "k2q": expected.k2q_questions,
        "intent": expected.intent,
    }
    assert "BM25 top 5" in shown["bm25"]
    for ranker in ("bm25", "sdm"):
        for hit in demo.index.search(QUESTION, k=5, ranker=ranker):
            assert str(hit.id) in shown[ranker], (ranker, hit.id)
        assert all(label in shown[ranker] for label in ("YAKE", "K2Q question", "intent description"))
    assert screenshot.stat().st_size > 10_000


def test_cli_demo_serves_a_collection_for_a_bounded_time(folders, tmp_path, capsys):
    documents = tmp_path / "documents.txt"
    documents.write_text("broccoli is a healthy vegetable\nvitamin c in citrus\n\nhealth benefits of tea\n")
    arguments = ["--documents", str(documents), "--max-seconds", "0.5", "--port", str(_free_port())]
    run = _run_demo_cli(arguments, folders, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "hf-querygen demo on http://127.0.0.1:" in run.stdout
    # an empty collection is refused before anything is served: in this process
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    arguments = ["demo", "--documents", str(empty), *arguments[2:]]
    for role, folder in folders.items():
        arguments += [f"--{role}", str(folder)]
    assert cli_main(arguments) == 2
    assert "no documents" in capsys.readouterr().err
