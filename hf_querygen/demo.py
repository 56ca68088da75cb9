"""``hf-querygen demo``: type a question, see every reformulation and what BM25 / SDM return for each.

Panels (one Gradio app, offline, on ``127.0.0.1``):

* the keyword query of the dual decoder (Liu et al. CIKM'18) and of YAKE (the setting liu2018 selected on
  the nl2kw validation split);
* for a typed keyword query (empty: the dual decoder's): its segmentation (Lin et al. 2017's RNN
  encoder-decoder) and its K2Q questions (Ding & Balog ICTIR'18, CopyNet);
* the intent description (CtrsGen, Zhang et al. CIKM'20) of the question, with the top-ranked documents
  of the collection as its relevant set and the next ones as its irrelevant set;
* the BM25 and SDM top 5 of the collection for the question and for each reformulation, side by side.

Models are folders the user trained (``--keywords DIR`` ...); the ones not given come from ``--models-dir``
where a quick-trained set (``train --quick`` of each preset of :data:`DEMO_MODELS`) is built on first
start, with a progress bar. The collection is NFCorpus's dev documents (never its test split) or a text
file with one document per line (``--documents``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._fs import check_output_dir
from .baselines.keyword_query import YakeKeywordExtractor
from .corpora import resolve_data_dir
from .corpora._q2id_nfcorpus import nfcorpus_test_collection
from .errors import InvalidInputError
from .retrieval import Index
from .tasks.q2id.task import DocumentRetriever
from .training import MODEL_FOLDER_KIND, DataSelection, Recipe, train_model
from .utils import TRAINING_METADATA_FILE
from .validation import check_float, check_int, invalid

#: role -> (preset, task, pipeline task, what the panel says)
DEMO_MODELS: dict[str, tuple[str, str, str, str]] = {
    "keywords": (
        "liu2018-dual-decoder",
        "nl2kw",
        "keyword-query-generation",
        "dual decoder (Liu et al. CIKM'18)",
    ),
    "segmentation": (
        "lin2017-segmenter",
        "segmentation",
        "query-segmentation",
        "RNN encoder-decoder (Lin et al. 2017)",
    ),
    "k2q": ("ding2018-copynet", "k2q", "question-generation", "CopyNet (Ding & Balog ICTIR'18)"),
    "q2id": ("zhang2020", "q2id", "intent-description", "CtrsGen (Zhang et al. CIKM'20)"),
}
RANKERS = ("bm25", "sdm")
#: the rankers a demo built with an embedder adds (a dense field over the documents)
DENSE_RANKERS = ("dense", "hybrid")
TOP_K = 5
#: YAKE as liu2018 selected it on the nl2kw validation split (results/liu2018)
YAKE_SETTING = {"top": 6, "max_ngram": 2}
EXAMPLE_QUESTION = "what are the health benefits of eating broccoli and other vegetables"


def build_quick_models(
    models_dir: str | Path,
    data_dir: str | Path | None = None,
    *,
    roles: Sequence[str] = tuple(DEMO_MODELS),
    max_steps: int | None = None,
    max_train_examples: int | None = None,
    preset_overrides: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool = True,
) -> dict[str, Path]:
    """Train the demo's models that ``models_dir`` lacks (``train --quick`` of each preset: a smoke-sized
    run, minutes on a CPU) and return role -> folder. ``preset_overrides`` per role (tests: tiny sizes)."""
    from tqdm.auto import tqdm

    models_dir = Path(models_dir)
    folders = {role: models_dir / role for role in roles}
    missing = [role for role, folder in folders.items() if not (folder / "config.json").is_file()]
    for role in missing:  # every folder it will write, before the first model trains (minutes each)
        check_output_dir(folders[role], MODEL_FOLDER_KIND, overwrite=True, what=f"demo: {role} model")
    bar = tqdm(missing, desc="demo: training the quick model set (first start)", disable=not progress)
    for role in bar:
        preset, task, _, _ = DEMO_MODELS[role]
        bar.set_postfix_str(preset)
        train_model(
            Recipe(
                preset=preset,
                preset_overrides=dict((preset_overrides or {}).get(role, {})),
                quick=True,
                max_steps=max_steps,
            ),
            DataSelection(
                task=task,
                data_dir=data_dir,
                max_train_examples=max_train_examples,
                max_validation_examples=8 if max_steps is not None else None,
            ),
            folders[role],
            overwrite=True,  # only folders without a model get here (an interrupted build)
        )
    return folders


def load_documents(
    data_dir: str | Path | None = None, documents_file: str | Path | None = None
) -> dict[str, str]:
    """id -> text: the lines of ``documents_file`` (ids ``line-N``), else NFCorpus's dev documents."""
    if documents_file is not None:
        path = Path(documents_file)
        lines = path.read_text(encoding="utf-8").splitlines()
        documents = {f"line-{number}": line.strip() for number, line in enumerate(lines, 1) if line.strip()}
        if not documents:
            raise InvalidInputError(f"demo: {path} has no documents (one per line)")
        return documents
    return nfcorpus_test_collection(resolve_data_dir(data_dir), "dev")["documents"]


@dataclass
class DemoResult:
    """What the panels show for one question (strings, as displayed)."""

    keywords_dual: str
    keywords_yake: str
    segmentation: str
    k2q_input: str
    k2q_questions: str
    intent: str
    tables: dict[str, str]  # ranker -> markdown table


class QueryDemo:
    """The demo's logic, without the UI: ``run(question, keyword_query)`` gives every panel's content."""

    def __init__(
        self,
        folders: Mapping[str, str | Path],
        documents: Mapping[str, str],
        top_k: int = TOP_K,
        embedder: Any = None,
    ):
        from .pipelines._task_pipeline import load_pipeline

        missing = sorted(set(DEMO_MODELS) - set(folders))
        if missing:
            raise InvalidInputError(f"demo: no model folder for {missing}")
        self.pipelines = {role: load_pipeline(DEMO_MODELS[role][2], folders[role]) for role in DEMO_MODELS}
        #: each panel's label names the model it shows (the folder's system or preset), not a fixed one
        self.labels = {role: model_label(role, folders[role]) for role in DEMO_MODELS}
        self.yake = YakeKeywordExtractor(**YAKE_SETTING)
        self.ids = list(documents)
        self.texts = [documents[i] for i in self.ids]
        # with an embedder (a model name or SentenceEmbedder), dense and hybrid tables too
        self.index = Index.from_texts(self.texts, ids=self.ids, show_progress=False, embedder=embedder)
        self.rankers = RANKERS + (DENSE_RANKERS if embedder is not None else ())
        # top-ranked documents as the relevant set, the next ones as the irrelevant set (Sec. 3.2's roles)
        self.retriever = DocumentRetriever(
            self.index, self.texts, relevant=5, irrelevant=5, if_nothing="query"
        )
        self.top_k = top_k

    def keyword_queries(self, question: str) -> tuple[str, str]:
        dual = self.pipelines["keywords"](question)
        return (dual[0]["keyword_query"] if dual else ""), " ".join(self.yake(question))

    def segment(self, query: str) -> list[str]:
        return list(self.pipelines["segmentation"](query)) if query.split() else []

    def questions(self, keyword_query: str, n: int = 3) -> list[dict[str, Any]]:
        if not keyword_query.split():
            return []
        return self.pipelines["k2q"](keyword_query, num_beams=max(n, 2), num_return_sequences=n)

    def intent(self, question: str) -> str:
        described = self.pipelines["q2id"](question, retriever=self.retriever)
        return described[0]["description"] if described else ""

    def search(self, query: str, ranker: str) -> list[tuple[str, float, str]]:
        if not query.strip():
            return []
        hits = self.index.search(query, k=self.top_k, ranker=ranker)
        return [(str(hit.id), float(hit.score), self.texts[hit.row]) for hit in hits]

    def table(self, forms: Mapping[str, str], ranker: str) -> str:
        """Markdown: one column per query form, one row per rank (document id and its first words)."""
        columns = {label: self.search(query, ranker) for label, query in forms.items()}
        titles = [
            f"{label}: *{_cell(query, 60)}*" if query else f"{label}: (none)"
            for label, query in forms.items()
        ]
        header = "| rank | " + " | ".join(titles) + " |"
        rows = [header, "|---|" + "---|" * len(forms)]
        for rank in range(self.top_k):
            cells = []
            for hits in columns.values():
                if rank < len(hits):
                    doc_id, score, text = hits[rank]
                    cells.append(f"**{doc_id}** ({score:.2f}) {_cell(text, 70)}")
                else:
                    cells.append("-")
            rows.append(f"| {rank + 1} | " + " | ".join(cells) + " |")
        return "\n".join(rows)

    def run(self, question: str, keyword_query: str = "") -> DemoResult:
        question = (question or "").strip()
        dual, yake = self.keyword_queries(question) if question else ("", "")
        # the keyword query the user typed, else the dual decoder's, is segmented and turned into questions
        k2q_input = (keyword_query or "").strip() or dual
        segments = self.segment(k2q_input)
        questions = self.questions(k2q_input)
        intent = self.intent(question) if question else ""
        forms = {
            "question": question,
            "dual decoder": dual,
            "YAKE": yake,
            "K2Q question": questions[0]["generated_text"] if questions else "",
            "intent description": intent,
        }
        asked = {"keywords": bool(question), "segmentation": bool(k2q_input.split()), "k2q": bool(k2q_input)}
        asked["q2id"] = bool(question)
        return DemoResult(
            keywords_dual=dual or self.no_output("keywords", asked),
            keywords_yake=yake,
            segmentation=" | ".join(f"[{segment}]" for segment in segments)
            or self.no_output("segmentation", asked),
            k2q_input=k2q_input,
            k2q_questions="\n".join(f"{q['generated_text']}  ({q['score']:.2f})" for q in questions)
            or self.no_output("k2q", asked),
            intent=intent or self.no_output("q2id", asked),
            tables={ranker: self.table(forms, ranker) for ranker in self.rankers},
        )

    def no_output(self, role: str, asked: Mapping[str, bool]) -> str:
        """A panel whose model was asked and wrote nothing says so (never a blank panel)."""
        if not asked.get(role):
            return ""
        return f"(no output: {self.labels[role]} wrote nothing for this input; it is probably under-trained)"


def _cell(text: str, limit: int) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_label(role: str, folder: str | Path) -> str:
    """What a panel shows as its model: the table row (``system``) or preset the folder was trained as,
    its model type, and the folder's name; the paper's name when it is the role's default preset."""
    import json

    folder = Path(folder)
    try:
        metadata = json.loads((folder / TRAINING_METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        metadata = {}
    if not isinstance(metadata, dict):
        metadata = {}
    try:
        model_type = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        model_type = None
    default_preset, _, _, paper_label = DEMO_MODELS[role]
    name = metadata.get("system") or metadata.get("preset") or model_type or "model"
    if name == default_preset:
        name = f"{paper_label}, preset {name}"
    elif model_type and model_type not in name:
        name = f"{name} ({model_type})"
    quick = ", quick smoke run" if metadata.get("quick") or metadata.get("budget") == "quick" else ""
    return f"{name}{quick}: {folder.name}"


def build_app(demo: QueryDemo, example: str = EXAMPLE_QUESTION) -> Any:
    """The Gradio Blocks app over ``demo`` (every panel has an ``elem_id`` for the browser test)."""
    import gradio as gr

    def respond(question: str, keyword_query: str) -> tuple:
        result = demo.run(question, keyword_query)
        return (
            result.keywords_dual,
            result.keywords_yake,
            result.segmentation,
            result.k2q_input,
            result.k2q_questions,
            result.intent,
            *(f"### {ranker.upper()} top 5\n\n" + result.tables[ranker] for ranker in demo.rankers),
        )

    with gr.Blocks(title="hf-querygen demo", analytics_enabled=False) as app:
        gr.Markdown(
            "# hf-querygen: query reformulations and what they retrieve\n"
            "Type a question; every model runs offline on this machine."
        )
        with gr.Row():
            question = gr.Textbox(label="Question", value=example, elem_id="question", scale=3)
            keyword_input = gr.Textbox(
                label="Keyword query for K2Q (empty: the dual decoder's)", elem_id="k2q-input", scale=2
            )
        run = gr.Button("Reformulate and search", variant="primary", elem_id="run")
        with gr.Row():
            dual = gr.Textbox(label=f"Keyword query: {demo.labels['keywords']}", elem_id="keywords-dual")
            yake = gr.Textbox(label="Keyword query: YAKE", elem_id="keywords-yake")
            segmentation = gr.Textbox(
                label=f"Segmentation of the K2Q input: {demo.labels['segmentation']}",
                elem_id="segmentation",
            )
        with gr.Row():
            k2q_used = gr.Textbox(label="K2Q input (keyword query)", elem_id="k2q-used")
            k2q = gr.Textbox(label=f"K2Q questions: {demo.labels['k2q']}", lines=3, elem_id="k2q")
            intent = gr.Textbox(
                label=f"Intent description from retrieved documents: {demo.labels['q2id']}",
                elem_id="intent",
            )
        tables = [gr.Markdown(elem_id=ranker) for ranker in demo.rankers]
        outputs = [dual, yake, segmentation, k2q_used, k2q, intent, *tables]
        run.click(respond, inputs=[question, keyword_input], outputs=outputs)
        question.submit(respond, inputs=[question, keyword_input], outputs=outputs)
    return app


#: the panels' elem_ids holding a text field
TEXT_PANELS = ("keywords-dual", "keywords-yake", "segmentation", "k2q-used", "k2q", "intent")


def find_chromium() -> tuple[str, str] | None:
    """(browser, driver) paths of Debian's ``chromium`` and ``chromium-driver`` packages, or None."""
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def browse(
    url: str,
    question: str,
    keyword_query: str = "",
    screenshot: str | Path | None = None,
    timeout: float = 120.0,
) -> dict[str, str]:
    """Drive the running app in headless Chromium: type ``question`` (and ``keyword_query``), press the
    button, wait for the retrieval tables; return what each panel shows (elem_id -> text) and save a
    screenshot of the page. Needs selenium and Debian's chromium + chromium-driver (no browser download)."""
    found = find_chromium()
    if found is None:
        raise InvalidInputError(
            "headless Chromium is not installed: apt-get install chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        driver.set_page_load_timeout(timeout)
        driver.get(url)
        wait = WebDriverWait(driver, timeout)

        def field(elem_id: str) -> Any:
            return driver.find_element(By.CSS_SELECTOR, f"#{elem_id} textarea, #{elem_id} input")

        wait.until(lambda d: field("question"))
        field("question").clear()
        field("question").send_keys(question)
        field("k2q-input").clear()
        if keyword_query:
            field("k2q-input").send_keys(keyword_query)
        driver.find_element(By.CSS_SELECTOR, "#run").click()
        wait.until(lambda d: "SDM top 5" in d.find_element(By.CSS_SELECTOR, "#sdm").text)
        shown = {name: field(name).get_property("value") for name in TEXT_PANELS}
        shown |= {name: driver.find_element(By.CSS_SELECTOR, f"#{name}").text for name in RANKERS}
        if screenshot is not None:
            # the whole page: the window grows to the document's height (the tables end below 1900 px)
            height = driver.execute_script(
                "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
            )
            driver.set_window_size(1500, int(height) + 40)
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(screenshot))
        return shown
    finally:
        driver.quit()


#: how long the demo waits for ``--host`` to resolve (a name server that never answers must not hang it)
HOST_RESOLVE_TIMEOUT_S = 10.0
MAX_PORT = 65535


@dataclass(frozen=True)
class ServeArguments:
    """Where and how long the demo serves, checked (:func:`check_serve_arguments`): ``host`` is the
    address ``--host`` resolved to, once."""

    host: str
    port: int | None
    max_seconds: float | None


def check_serve_arguments(host: Any, port: Any, max_seconds: Any) -> ServeArguments:
    """Check the demo's serving arguments before anything starts (models, Gradio): ``port`` an integer in
    [1, 65535] that this machine can bind on ``host`` now (``None``: the first free one from 7860),
    ``max_seconds`` a finite number > 0 (or ``None``: serve until stopped), ``host`` a name or address
    resolved once, within :data:`HOST_RESOLVE_TIMEOUT_S`, to an address of this machine (the resolved
    address is what is served on). Raises :class:`InvalidInputError` naming the argument."""
    import concurrent.futures
    import socket

    if port is not None:
        check_int("demo", "port", port, 1, MAX_PORT)
    if max_seconds is not None:
        check_float("demo", "max_seconds", max_seconds, 0.0, None, low_open=True)
    if not isinstance(host, str) or not host.strip():
        raise invalid("demo", "host", host, "a host name or IP address of this machine, e.g. 127.0.0.1")
    # getaddrinfo has no timeout of its own: ask in a worker thread, give up after the limit
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hf-querygen-resolve")
    future = pool.submit(socket.getaddrinfo, host, port or 0, type=socket.SOCK_STREAM)
    pool.shutdown(wait=False)
    try:
        infos = future.result(timeout=HOST_RESOLVE_TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        raise invalid(
            "demo", "host", host, f"a name that resolves; no answer within {HOST_RESOLVE_TIMEOUT_S:g} s"
        ) from None
    except (OSError, UnicodeError) as err:
        raise invalid("demo", "host", host, f"a name that resolves ({err})") from None
    family, _, _, _, address = infos[0]
    resolved = str(address[0])
    with socket.socket(family, socket.SOCK_STREAM) as probe:  # can this machine serve there, now?
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((resolved, port or 0))
        except OSError as err:
            what = f"port {port} on {resolved}" if port else f"address {resolved}"
            raise InvalidInputError(
                f"demo: cannot serve on {what} (host={host!r}): {err.strerror or err}; "
                + ("choose another --port" if port else "--host must be an address of this machine")
            ) from None
    return ServeArguments(
        resolved, None if port is None else int(port), None if max_seconds is None else float(max_seconds)
    )


def launch(
    demo: QueryDemo,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    max_seconds: float | None = None,
    on_start: Callable[[str], None] | None = None,
    block: bool = True,
) -> Any:
    """Serve the app on ``host:port`` (local only by default); with ``max_seconds``, close it after that
    long (a bounded run for scripts and CI); ``block=False`` returns the running app at once (the caller
    closes it). ``on_start`` gets the URL."""
    import time

    serve = check_serve_arguments(host, port, max_seconds)  # before Gradio starts anything
    host, port, max_seconds = serve.host, serve.port, serve.max_seconds
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # offline: no usage reporting
    app = build_app(demo)
    app.queue()
    app.launch(server_name=host, server_port=port, prevent_thread_lock=True, share=False, quiet=True)
    if on_start is not None:
        on_start(app.local_url)
    if not block:
        return app
    if max_seconds is not None:
        time.sleep(max_seconds)
        app.close()
    else:
        app.block_thread()
    return app
