"""``hf-querygen demo``: the quick-trained model set is built on first start, every panel gets its result,
and headless Chromium (Debian's chromium + chromium-driver; no browser download) shows them.

The models are tiny (2 training steps): the test checks that each panel shows what the demo computed for
the typed question, not that the reformulations are good."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

gradio = pytest.importorskip("gradio", reason="the demo needs the extra: pip install 'hf-querygen[demo]'")

from hf_querygen.cli import main as cli_main  # noqa: E402
from hf_querygen.demo import DEMO_MODELS, QueryDemo, build_app, build_quick_models, load_documents  # noqa: E402

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


def test_every_panel_gets_its_result(demo):
    result = demo.run(QUESTION, KEYWORDS)
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip(
            "headless Chromium is not installed (Debian: apt-get install chromium chromium-driver; "
            ".ci/setup installs it when run as root)"
        )
    pytest.importorskip("selenium", reason="selenium drives the browser (the `dev` extra)")
    return browser, driver


def test_demo_in_headless_chromium(demo, tmp_path):
    browser, driver_path = _chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    app = build_app(demo, example=QUESTION)
    app.queue()
    port = _free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(f"http://127.0.0.1:{port}/")
        wait = WebDriverWait(driver, 120)

        def field(elem_id: str):
            return driver.find_element(By.CSS_SELECTOR, f"#{elem_id} textarea, #{elem_id} input")

        wait.until(lambda d: field("question"))
        field("k2q-input").send_keys(KEYWORDS)
        driver.find_element(By.CSS_SELECTOR, "#run").click()
        wait.until(lambda d: "SDM top 5" in d.find_element(By.CSS_SELECTOR, "#sdm").text)
        wait.until(lambda d: field("intent").get_property("value"))

        expected = demo.run(QUESTION, KEYWORDS)
        shown = {
            name: field(name).get_property("value")
            for name in ("keywords-dual", "keywords-yake", "segmentation", "k2q-used", "k2q", "intent")
        }
        assert shown == {
            "keywords-dual": expected.keywords_dual,
            "keywords-yake": expected.keywords_yake,
            "segmentation": expected.segmentation,
            "k2q-used": KEYWORDS,
            "k2q": expected.k2q_questions,
            "intent": expected.intent,
        }
        for ranker, elem_id in (("bm25", "bm25"), ("sdm", "sdm")):
            text = driver.find_element(By.CSS_SELECTOR, f"#{elem_id}").text
            for hit in demo.index.search(QUESTION, k=5, ranker=ranker):
                assert str(hit.id) in text, (ranker, hit.id)
            assert "YAKE" in text and "K2Q question" in text and "intent description" in text
        screenshot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "screenshot.png")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        driver.find_element(By.TAG_NAME, "body")  # the page is there
        assert driver.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 10_000
    finally:
        driver.quit()
        app.close()


def test_cli_demo_serves_locally_for_a_bounded_time(folders, tmp_path, capsys):
    documents = tmp_path / "documents.txt"
    documents.write_text("broccoli is a healthy vegetable\nvitamin c in citrus\n\nhealth benefits of tea\n")
    arguments = ["demo", "--documents", str(documents), "--max-seconds", "0.5", "--port", str(_free_port())]
    for role, folder in folders.items():
        arguments += [f"--{role}", str(folder)]
    assert cli_main(arguments) == 0
    assert "hf-querygen demo on http://127.0.0.1:" in capsys.readouterr().out
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert cli_main([*arguments[:1], "--documents", str(empty), *arguments[3:]]) == 2
    assert "no documents" in capsys.readouterr().err
