"""A third-party package joins through the ``hf_querygen.plugins`` entry point group, without any edit of
the library: a toy model package, a toy task and a toy paper, installed as a real ``.dist-info`` folder on a
temporary ``sys.path`` entry, show up in the Auto classes, ``pipeline()``, the model contract's
parametrisation, the task registry and ``train --task``, ``train --system`` and ``reproduce --help``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

PLUGIN = {
    # the entry module is cheap: it points the registries at the heavier modules
    "toyqg/__init__.py": "",
    "toyqg/plugin.py": """
        from hf_querygen.experiments.papers import REPRODUCTIONS
        from hf_querygen.specs import MODELS
        from hf_querygen.tasks.base import TASKS

        MODELS.add_modules("toyqg.toy_seq2seq")
        TASKS.add_modules("toyqg.task")
        REPRODUCTIONS.register("toy2024", "toyqg.paper")
    """,
    # a task: one Task object registered under its name (here a text-to-text task on another column pair)
    "toyqg/task.py": """
        from hf_querygen.tasks.base import TASKS
        from hf_querygen.tasks.text2text.task import Text2TextTask


        class ToyTitleTask(Text2TextTask):
            pipeline_task = "toy-title-generation"


        TASKS.register("toytitle", ToyTitleTask("toytitle", {"toy_titles": ("default",)}, "query", "title"))
    """,
    # a model package: one ModelSpec declares it all
    "toyqg/toy_seq2seq/__init__.py": """
        from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
        from hf_querygen.specs import MODELS, CardPaper, ModelSpec


        class ToySeq2SeqConfig(RNNSeq2SeqConfig):
            model_type = "toy_seq2seq"

            def __init__(self, **kwargs):  # transformers' config subclass hook wants an own __init__
                super().__init__(**kwargs)


        class ToySeq2SeqForConditionalGeneration(RNNSeq2SeqForConditionalGeneration):
            config_class = ToySeq2SeqConfig


        def tiny_config(**overrides):
            settings = dict(vocab_size=40, output_vocab_size=24, embedding_size=8, hidden_size=8,
                            decoder_hidden_size=12, dropout=0.0, max_decoding_length=12)
            return ToySeq2SeqConfig(**{**settings, **overrides})


        def tiny_inputs(config, seed=0):
            from hf_querygen.models.rnn_seq2seq import _tiny_inputs

            return _tiny_inputs(config, seed)


        MODELS.register("toy_seq2seq", ModelSpec(
            config_class=ToySeq2SeqConfig,
            model_class=ToySeq2SeqForConditionalGeneration,
            auto_class="AutoModelForSeq2SeqLM",
            tiny_config=tiny_config,
            tiny_inputs=tiny_inputs,
            paper=CardPaper("a toy model", "Toy et al. 2024.", "@misc{toy2024}"),
        ))
    """,
    # a paper: its systems, preset, budgets; its numbers in a data file beside it
    "toyqg/papers/toy2024.json": json.dumps(
        {"module": "toyqg.paper", "paper_numbers": {"toy": {"exact_match": 0.5}}}
    ),
    "toyqg/paper.py": """
        from pathlib import Path

        from hf_querygen.experiments.papers import paper_numbers
        from hf_querygen.experiments.runner import Reproduction
        from hf_querygen.experiments.tables import Budget
        from hf_querygen.presets import PRESETS
        from hf_querygen.systems import System, register_systems

        PRESETS.register("toy2024-toy", {"model_type": "toy_seq2seq", "hidden_size": 8, "embedding_size": 8})
        SYSTEMS = register_systems([System("toy2024/toy", "nl2kw", "Toy", preset="toy2024-toy")])
        REPRODUCTION = Reproduction(
            name="toy2024",
            task="nl2kw",
            systems=SYSTEMS,
            paper_numbers=paper_numbers("toy2024", folder=Path(__file__).parent / "papers"),
            table_metrics=("exact_match",),
            budgets={"full": Budget("full"), "quick": Budget("quick")},
        )
    """,
    "toyqg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toyqg\nVersion: 0.1\n",
    "toyqg-0.1.dist-info/entry_points.txt": "[hf_querygen.plugins]\ntoyqg = toyqg.plugin\n",
}

CHECKS = """
import contextlib, io, json, sys
import hf_querygen
import transformers
from transformers import AutoConfig, AutoModelForSeq2SeqLM, pipeline

found = {}
# Auto classes
config = AutoConfig.for_model("toy_seq2seq", vocab_size=40, output_vocab_size=24, hidden_size=8,
                              embedding_size=8, decoder_hidden_size=12)
model = AutoModelForSeq2SeqLM.from_config(config)
found["auto"] = [type(config).__name__, type(model).__name__]
found["export"] = hf_querygen.ToySeq2SeqConfig is type(config)
from hf_querygen.specs import family_of
from hf_querygen.hub import render_model_card
found["family"] = family_of(config)
found["card"] = "Toy et al. 2024." in str(render_model_card(model))

# pipeline(): a saved toy model decodes through the task
sys.path.insert(0, TESTS)
from _seq2seq_toy import copy_task_tokenizer
from hf_querygen.tokenization import output_vocab_size_of
tokenizer = copy_task_tokenizer()
config = AutoConfig.for_model("toy_seq2seq", vocab_size=len(tokenizer), hidden_size=8, embedding_size=8,
                              output_vocab_size=output_vocab_size_of(tokenizer), max_decoding_length=4)
AutoModelForSeq2SeqLM.from_config(config).save_pretrained(OUT)
tokenizer.save_pretrained(OUT)
reformulate = pipeline("query-reformulation", model=OUT)
outputs = reformulate(["please find alpha beta"])
texts = [type(output[0]["generated_text"]).__name__ for output in outputs]
found["pipeline"] = [type(reformulate.model).__name__, texts]

# the model contract's parametrisation source
from model_contract import CASES
found["contract"] = [case for case in CASES if case[0] == "toy_seq2seq"]

# train --system: the CLI resolves the plugin's system to its preset and task
import hf_querygen.training
calls = []
hf_querygen.training.train_model = (
    lambda recipe, data, output_dir, **kw: calls.append((recipe.preset, data.task)) or {}
)
from hf_querygen.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["train", "--system", "toy2024/toy", "--output-dir", OUT + "-train"])
found["train"] = calls

# the task: found by name and by the corpus it trains on, offered by train --task
from hf_querygen.tasks.base import get_task, task_for_corpus
found["task"] = [type(get_task("toytitle")).__name__, task_for_corpus("toy_titles").name]
help_text = io.StringIO()
with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
    main(["train", "--help"])
found["train_task_help"] = "toytitle" in help_text.getvalue()
from hf_querygen.presets import config_from_preset
found["preset"] = type(config_from_preset("toy2024-toy")).__name__

# reproduce --help lists the paper, and the runner finds it
help_text = io.StringIO()
with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
    main(["reproduce", "--help"])
found["reproduce_help"] = "toy2024" in help_text.getvalue()
from hf_querygen.experiments.papers import get_reproduction
found["paper_numbers"] = dict(get_reproduction("toy2024").paper_numbers)
print("FOUND" + json.dumps(found))
"""


def _write_plugin(root: Path) -> None:
    for relative, text in PLUGIN.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def test_a_plugin_package_joins_every_registry_without_touching_the_library(tmp_path):
    plugin_root = tmp_path / "site"
    _write_plugin(plugin_root)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_root), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }
    code = f"TESTS = {str(TESTS)!r}\nOUT = {str(tmp_path / 'toy_model')!r}\n" + CHECKS
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.split("FOUND", 1)[1])
    assert found["auto"] == ["ToySeq2SeqConfig", "ToySeq2SeqForConditionalGeneration"]
    assert found["export"] is True
    assert found["family"] == "seq2seq" and found["card"] is True
    assert found["pipeline"] == ["ToySeq2SeqForConditionalGeneration", ["str"]]
    assert found["contract"] == [["toy_seq2seq", "default"]]
    assert found["train"] == [["toy2024-toy", "nl2kw"]]
    assert found["task"] == ["ToyTitleTask", "toytitle"] and found["train_task_help"] is True
    assert found["preset"] == "ToySeq2SeqConfig"
    assert found["reproduce_help"] is True
    assert found["paper_numbers"] == {"toy": {"exact_match": 0.5}}


def test_a_plugin_that_fails_to_import_is_an_error_naming_it(monkeypatch):
    from importlib import metadata

    from hf_querygen import plugins
    from hf_querygen.errors import InvalidInputError

    broken = metadata.EntryPoint("broken", "no_such_module_xyz.plugin", plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins.metadata, "entry_points", lambda group: [broken] if group else [])
    with pytest.raises(InvalidInputError, match="plugin 'broken'.*no_such_module_xyz"):
        plugins.load_plugins(reload=True)
