import argparse
import socket
import subprocess
import sys

import pytest


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_is_lazy_and_registration_happens_on_first_auto_use():
    # import hf_querygen (and building the CLI parser) loads neither torch nor transformers ...
    loaded = _fresh(
        "import sys, hf_querygen\n"
        "from hf_querygen.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    assert loaded == "[]"
    # ... yet the Auto classes and pipeline() know our types as soon as transformers' are imported
    found = _fresh(
        "import hf_querygen\n"
        "from transformers import AutoConfig\n"
        "from transformers.pipelines import PIPELINE_REGISTRY\n"
        "print(type(AutoConfig.for_model('dual_decoder')).__name__,"
        " 'keyword-query-generation' in PIPELINE_REGISTRY.get_supported_tasks())"
    )
    assert found == "DualDecoderConfig True"


@pytest.mark.parametrize(
    "first_import",
    [
        "import transformers.modeling_utils",  # its quantizers import the auto config (a trigger)
        "import transformers.generation.utils",
        "import transformers.trainer",
        "from transformers import Seq2SeqTrainer",
    ],
)
def test_registration_never_runs_inside_a_half_imported_transformers_module(first_import):
    # registering imports our models, which need PreTrainedModel: firing inside modeling_utils'
    # own import was a circular-import error for any user who imported it after hf_querygen
    found = _fresh(
        f"import hf_querygen\n{first_import}\n"
        "from transformers import AutoConfig, PreTrainedModel, Seq2SeqTrainer\n"
        "print(type(AutoConfig.for_model('dual_decoder')).__name__)"
    )
    assert found == "DualDecoderConfig"


@pytest.mark.parametrize(
    "first_import",
    [
        "from hf_querygen import batch_reformulation",
        "import hf_querygen.models.rnn_seq2seq",
        "import hf_querygen",
    ],
)
def test_every_model_saves_its_code_whichever_import_starts_the_registration(first_import):
    # a model package whose own import starts the registration registers its spec after the registration
    # ended: its save_pretrained must still write the remote code (auto_map), as every other model's does
    found = _fresh(
        f"{first_import}\n"
        "from transformers import AutoConfig\n"
        "from hf_querygen.specs import MODELS\n"
        "print(sorted(name for name, spec in MODELS.items()\n"
        "    if not getattr(spec.model_class.save_pretrained, '_writes_remote_code', False)))"
    )
    assert found == "[]"


def test_the_registration_is_silent():
    # each pipeline task is registered with transformers once: a second registration logs "already
    # registered. Overwriting pipeline" on every command's console
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import hf_querygen\nfrom transformers import AutoConfig, pipeline\n"
            "import hf_querygen.experiments.liu2018\nAutoConfig.for_model('dual_decoder')",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "already registered" not in out.stderr and "Overwriting" not in out.stderr, out.stderr


def test_every_public_name_is_exported_lazily():
    import hf_querygen
    from hf_querygen import _EXPORTS
    from hf_querygen.specs import model_packages

    assert hf_querygen.__version__
    for name in _EXPORTS:
        assert getattr(hf_querygen, name) is not None, name
    # every config and model class of every model package is public, derived from its ModelSpec
    import importlib

    public = set(hf_querygen.__all__)
    for package in model_packages():
        module = importlib.import_module(package)
        for name in module.__all__:
            if name.endswith("Config") or "For" in name:
                assert name in public, f"hf_querygen.{name} ({package}) is not exported"
                assert getattr(hf_querygen, name) is getattr(module, name)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        hf_querygen.Nope  # noqa: B018


def test_reproduce_choices_equal_the_registry():
    from hf_querygen.cli import build_parser
    from hf_querygen.experiments.papers import REPRODUCTIONS

    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    name = next(a for a in subparsers.choices["reproduce"]._actions if a.dest == "name")
    assert list(name.choices) == [*REPRODUCTIONS.names(), "all"]


def test_network_is_blocked():
    with pytest.raises(RuntimeError, match="network connection"):
        socket.create_connection(("93.184.216.34", 80), timeout=1)


def test_cli_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "hf_querygen.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "reproduce" in out.stdout and "train" in out.stdout


def test_pipeline_registry_names_match_the_pipeline_modules():
    from hf_querygen._registration import PIPELINES, pipeline_modules

    registered = {register.__module__ for _task, register in PIPELINES.items()}
    assert registered == set(pipeline_modules())
    # a pipeline's name is its task's pipeline_task, written once on the task
    from hf_querygen.tasks.base import TASKS

    assert set(PIPELINES.names()) == {task.pipeline_task for _name, task in TASKS.items()}
    for task, register in PIPELINES.items():
        assert sys.modules[register.__module__].TASK_NAME == task


def test_every_task_class_is_exported_at_the_root():
    import hf_querygen
    from hf_querygen.tasks.base import TASKS

    for _name, task in TASKS.items():
        assert getattr(hf_querygen, type(task).__name__) is type(task)
