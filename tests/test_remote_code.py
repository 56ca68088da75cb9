"""Saved folders load with plain transformers: ``trust_remote_code=True`` in a process where ``hf_querygen``
cannot be imported gives the library's outputs, for every registered model type and every pipeline task
its folder declares (``custom_pipelines``)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch
import transformers
from transformers import pipeline

import hf_querygen  # noqa: F401  (registers the Auto classes and pipelines)
from hf_querygen.hub_code import bundle, remote_code_files
from hf_querygen.models import MODELS
from hf_querygen.specs import family_of
from hf_querygen.tasks.nl2kw import TAG_LABELS
from hf_querygen.text import BIO_LABELS, BREAK_TOKEN
from hf_querygen.tokenization import train_word_tokenizer

#: extra cases beside each model's default tiny config: a tagger serves the task whose labels it has
CASES: dict[str, tuple[str, dict]] = {name: (name, {}) for name in MODELS.names()}
CASES["rnn_tagger"] = ("rnn_tagger", {"id2label": dict(TAG_LABELS)})
CASES["rnn_tagger-bio"] = ("rnn_tagger", {"id2label": dict(enumerate(BIO_LABELS))})

TEXT = "w4 w5 w6 w7 w8 w9 w10"
DOCUMENT = "w12 w13 w14 w4 w5 . w15 w16 w6 w7 w17 ."
#: one input per pipeline task
INPUTS = {
    "intent-description": {
        "query": "w4 w5 w6",
        "relevant_documents": [DOCUMENT, "w18 w19 w4 . w20 w5 w6 ."],
        "irrelevant_documents": ["w21 w22 w23 . w24 w25 ."],
    },
}
#: call arguments per pipeline task (question-generation: two scored beams, so that scores are compared too)
CALL_KWARGS = {"question-generation": {"num_beams": 2, "num_return_sequences": 2}}


def _word_piece_tokenizer(vocab_size: int):
    """A BERT tokenizer over ``[PAD] [UNK] [CLS] [SEP] w4 ..``: the ids of a tiny warm-start config."""
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *(f"w{i}" for i in range(4, vocab_size))]
    return BertTokenizerFast(vocab={word: i for i, word in enumerate(words)})


def _tokenizer(config):
    if family_of(config) == "bert2bert":  # the warm starts read a BERT backbone's word pieces
        return _word_piece_tokenizer(config.vocab_size)
    vocab = config.vocab_size
    output = getattr(config, "output_vocab_size", None) or vocab
    # "|" (id 4) lets a seq2seq model segment too; the rest are plain words
    words = [f"w{i}" for i in range(5, vocab)]
    return train_word_tokenizer(
        [" ".join(words)],
        target_texts=[" ".join(words[: output - 5])],
        vocab_size=vocab,
        output_vocab_size=output,
        extra_special_tokens=(BREAK_TOKEN,),
    )


CLEAN_SCRIPT = textwrap.dedent(
    """
    import json, sys

    class BlockLibrary:  # the library is not installed here
        def find_spec(self, name, path=None, target=None):
            if name == "hf_querygen" or name.startswith("hf_querygen."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)")

    sys.meta_path.insert(0, BlockLibrary())
    try:
        import hf_querygen  # noqa: F401
        raise SystemExit("hf_querygen is importable: the test is not clean")
    except ModuleNotFoundError:
        pass
    import torch, transformers
    from transformers import AutoConfig, pipeline

    jobs = json.load(open(sys.argv[1]))
    results = {}
    for name, job in jobs.items():
        folder = job["folder"]
        config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
        auto = getattr(transformers, job["auto_class"])
        model = auto.from_pretrained(folder, trust_remote_code=True).eval()
        inputs = torch.load(job["inputs"])
        out = {"config_module": type(config).__module__, "model_module": type(model).__module__}
        with torch.no_grad():
            for parameter in model.parameters():  # fresh memory: bit-identical kernels (test_model_contract)
                parameter.data = parameter.data.clone()
            tensors = {"logits": model(**inputs).logits}
            for beams in job["beams"]:
                source = {key: inputs[key] for key in job["source_keys"]}
                tensors[f"generate_{beams}"] = model.generate(**source, num_beams=beams, max_new_tokens=6)
        torch.save(tensors, job["tensors_out"])
        out["pipelines"] = {
            task: pipeline(task, model=folder, trust_remote_code=True)(
                value, **job["call_kwargs"].get(task, {})
            )
            for task, value in job["pipeline_inputs"].items()
        }
        results[name] = out
    assert not [m for m in sys.modules if m.startswith("hf_querygen")]
    json.dump(results, open(sys.argv[2], "w"))
    """
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every case saved by ``save_pretrained``, the library's outputs, and the clean process's outputs."""
    # the model classes come from the internal MODELS registry here, not through hf_querygen.<Class>
    # (which registers): register explicitly, so that save_pretrained writes the code
    hf_querygen.register_all()
    root = tmp_path_factory.mktemp("remote_code")
    jobs, library = {}, {}
    for case, (name, overrides) in CASES.items():
        spec = MODELS.get(name)
        config = spec.tiny_config(**overrides)
        torch.manual_seed(0)
        model = spec.model_class(config).eval()
        with torch.no_grad():  # decisive decoding (as the model contract sharpens)
            for parameter in model.parameters():
                parameter.mul_(4.0)
        if spec.generates:
            model.generation_config.max_new_tokens = 6
        folder = root / case
        model.save_pretrained(folder)
        _tokenizer(config).save_pretrained(folder)
        inputs = spec.tiny_inputs(config, 0)
        torch.save(inputs, root / f"{case}.inputs.pt")
        saved_config = json.loads((folder / "config.json").read_text())
        tasks = sorted(saved_config.get("custom_pipelines", {}))
        beams = (1, 2) if spec.generates else ()
        with torch.no_grad():
            tensors = {"logits": model(**inputs).logits}
            for n in beams:
                source = {key: inputs[key] for key in spec.source_keys}
                tensors[f"generate_{n}"] = model.generate(**source, num_beams=n, max_new_tokens=6)
        pipeline_inputs = {task: INPUTS.get(task, TEXT) for task in tasks}
        library[case] = {
            "config": saved_config,
            "folder": folder,
            "spec": spec,
            "tensors": tensors,
            # the library's own pipelines (no trust_remote_code: its registry serves these tasks)
            "pipelines": json.loads(
                json.dumps(
                    {
                        task: pipeline(task, model=str(folder))(value, **CALL_KWARGS.get(task, {}))
                        for task, value in pipeline_inputs.items()
                    }
                )
            ),
        }
        jobs[case] = {
            "folder": str(folder),
            "auto_class": spec.auto_class,
            "inputs": str(root / f"{case}.inputs.pt"),
            "tensors_out": str(root / f"{case}.clean.pt"),
            "source_keys": list(spec.source_keys),
            "beams": list(beams),
            "pipeline_inputs": pipeline_inputs,
            "call_kwargs": CALL_KWARGS,
        }
    (root / "jobs.json").write_text(json.dumps(jobs))
    (root / "clean.py").write_text(CLEAN_SCRIPT)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
    }
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_MODULES_CACHE=str(root / "modules"))
    env.setdefault("OMP_NUM_THREADS", "1")
    # -I: no PYTHONPATH, no current directory, no user site; run from an empty folder
    run = subprocess.run(
        [sys.executable, "-I", str(root / "clean.py"), str(root / "jobs.json"), str(root / "results.json")],
        cwd=tmp_path_factory.mktemp("empty"),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    clean = json.loads((root / "results.json").read_text())
    return root, library, clean


@pytest.mark.parametrize("case", sorted(CASES))
def test_saved_folder_loads_with_plain_transformers_and_gives_the_same_outputs(saved, case):
    root, library, clean = saved
    ours, theirs = library[case], clean[case]
    config, spec = ours["config"], ours["spec"]
    model_type = config["model_type"]
    # auto_map: config + the model's Auto class, both in flat files beside the weights
    assert config["auto_map"] == {
        "AutoConfig": f"configuration_{model_type}.{spec.config_class.__name__}",
        spec.auto_class: f"modeling_{model_type}.{spec.model_class.__name__}",
    }
    assert theirs["config_module"].startswith("transformers_modules.")
    assert theirs["model_module"].startswith("transformers_modules.")
    # the model's pipeline tasks, each with its flat pipeline file
    assert config["custom_pipelines"], f"{case}: no pipeline task declared"
    for task, info in config["custom_pipelines"].items():
        assert info["pt"] == [spec.auto_class]
        assert (ours["folder"] / f"{info['impl'].split('.')[0]}.py").is_file(), task
    # same numbers: logits, greedy and beam generation
    tensors = torch.load(root / f"{case}.clean.pt")
    assert tensors.keys() == ours["tensors"].keys()
    assert torch.allclose(tensors["logits"], ours["tensors"]["logits"], atol=1e-6, rtol=0, equal_nan=True)
    for key in tensors:
        if key.startswith("generate"):
            assert torch.equal(tensors[key], ours["tensors"][key]), key
    # same pipeline outputs, for every declared task
    assert theirs["pipelines"] == ours["pipelines"]
    assert set(theirs["pipelines"]) == set(config["custom_pipelines"])


def test_every_pipeline_task_is_exercised_by_some_model(saved):
    _, library, _ = saved
    from hf_querygen._registration import PIPELINES

    exercised = {task for case in library.values() for task in case["pipelines"]}
    assert exercised == set(PIPELINES.names())


def test_generated_code_is_flat_and_needs_only_transformers(saved):
    """No import of the library, no parent-relative import; third-party imports are the ones a plain
    transformers install has (transformers' own check_imports scan, as the loader runs it)."""
    from transformers.dynamic_module_utils import get_imports

    root, library, _ = saved
    folder = library["dual_decoder"]["folder"]
    files = sorted(folder.glob("*.py"))
    assert {f.name for f in files} >= {"configuration_dual_decoder.py", "modeling_dual_decoder.py"}
    for file in files:
        imports = [
            n for n in ast.walk(ast.parse(file.read_text())) if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
        modules = [getattr(n, "module", None) or "" for n in imports] + [
            alias.name for n in imports if isinstance(n, ast.Import) for alias in n.names
        ]
        assert not [m for m in modules if m.split(".")[0] == "hf_querygen"], file
        assert all(getattr(n, "level", 0) <= 1 for n in imports), file  # same-folder imports only
        top_levels = set(get_imports(file))
        assert top_levels <= {"torch", "transformers", "tokenizers", "numpy", "huggingface_hub"} | set(
            sys.stdlib_module_names
        ), (file, top_levels)


def test_training_code_is_not_bundled(saved):
    """A task's training-only methods and the functions that import training code keep their signature
    and raise ImportError: what only they reach (tokenizer training, synthetic data, backbone download)
    is not in the file a reviewer reads."""
    _, library, _ = saved
    text = (library["dual_decoder"]["folder"] / "pipeline_keyword_query_generation.py").read_text()
    for reached_by_training_only in (
        "def train_word_tokenizer",
        "def build_synthetic_dataset",
        "def resolve_backbone",
    ):
        assert reached_by_training_only not in text
    tree = ast.parse(text)
    (task_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NL2KWTask"]
    methods = {n.name: n for n in task_class.body if isinstance(n, ast.FunctionDef)}
    (raised,) = [n for n in methods["prepare"].body if isinstance(n, ast.Raise)]
    assert "NL2KWTask.prepare needs the hf-querygen library" in ast.unparse(raised)
    assert not [
        n
        for n in ast.walk(methods["predict"])
        if isinstance(n, ast.Raise) and "hf-querygen library" in ast.unparse(n)
    ]


def test_the_code_follows_the_library_source(tmp_path):
    """Generated at save time from the current source: the config file defines the class the library
    has, with the same source lines."""
    import inspect

    from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration

    model = DualDecoderForKeywordGeneration(MODELS.get("dual_decoder").tiny_config())
    sources, additions = remote_code_files(model)
    config_source = sources["configuration_dual_decoder.py"]
    assert inspect.getsource(DualDecoderConfig).strip() in config_source
    assert "custom_pipelines" in additions and "keyword-query-generation" in additions["custom_pipelines"]


def test_bundle_renames_clashing_names_and_cuts_training_only_imports():
    """Two pipeline modules define TASK_NAME: one flat namespace keeps both apart; the task's training
    paths (corpora, metrics, the k2q data) become an ImportError naming the library, not a dependency."""
    from hf_querygen.pipelines.intent_description import IntentDescriptionPipeline
    from hf_querygen.pipelines.question_generation import QuestionGenerationPipeline

    (text,) = bundle(
        [
            _file(
                "pipeline_question_generation.py",
                QuestionGenerationPipeline,
                IntentDescriptionPipeline,
                ("hf_querygen.tasks.k2q.task", "K2Q"),
            )
        ]
    ).values()
    module = types.ModuleType("bundled_question_generation")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    try:
        exec(compile(text, "bundled", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    namespace = module.__dict__
    task_names = {key: value for key, value in namespace.items() if key.startswith("TASK_NAME")}
    assert len(task_names) == 2 and set(task_names.values()) == {"question-generation", "intent-description"}
    # each class reads its own TASK_NAME (renamed), not the other module's
    for cls, expected in (
        ("QuestionGenerationPipeline", "question-generation"),
        ("IntentDescriptionPipeline", "intent-description"),
    ):
        read = namespace[cls]._sanitize_parameters.__code__.co_names
        assert [task_names[name] for name in read if name in task_names] == [expected]
    assert "needs the hf-querygen library" in text  # K2QTask.load / prepare: training data and metrics
    with pytest.raises(ImportError, match="hf-querygen"):
        namespace["K2QTask"]().load()
    assert "import datasets" not in text and "tantivy" not in text


def _file(name, *roots):
    from hf_querygen.hub_code import BundleFile

    return BundleFile(name, list(roots))


def test_trainer_checkpoints_carry_the_code_too(tmp_path):
    """The hook is save_pretrained itself: a plain save of a registered model writes the files."""
    spec = MODELS.get("rnn_seq2seq")
    model = spec.model_class(spec.tiny_config())
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert Path(tmp_path, "modeling_rnn_seq2seq.py").is_file() and "auto_map" in saved
    # the library still loads its own classes (local code wins without trust_remote_code)
    loaded = getattr(transformers, spec.auto_class).from_pretrained(tmp_path)
    assert type(loaded) is spec.model_class


def test_a_subclass_outside_the_library_is_saved_with_a_warning(tmp_path):
    """Saving never fails for want of bundled code: the weights are written, the folder has no auto_map."""
    spec = MODELS.get("rnn_tagger")

    class MyTagger(spec.model_class):
        pass

    with pytest.warns(UserWarning, match="saved without its remote code"):
        MyTagger(spec.tiny_config()).save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    assert "auto_map" not in json.loads((tmp_path / "config.json").read_text())


def test_a_custom_tokenizer_loads_with_plain_transformers(tmp_path):
    """The jieba-segmenting tokenizer (Chinese models) is our class: its folder carries its code and an
    auto_map, and AutoTokenizer in a process without the library encodes exactly as the library does."""
    pytest.importorskip("jieba")
    texts = ["我想去北京旅游", "北京的天气怎么样", "上海 travel guide"]
    tokenizer = train_word_tokenizer(texts, chinese_segmentation=True)
    tokenizer.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert saved["auto_map"] == {"AutoTokenizer": [None, "tokenization_hf_querygen.JiebaWordTokenizer"]}
    expected = [tokenizer(text)["input_ids"] for text in texts]
    script = textwrap.dedent(
        """
        import json, sys

        class BlockLibrary:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "hf_querygen":
                    raise ModuleNotFoundError(name)

        sys.meta_path.insert(0, BlockLibrary())
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
        print(type(tokenizer).__module__)
        print(json.dumps([tokenizer(text)["input_ids"] for text in json.loads(sys.argv[2])]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    run = subprocess.run(
        [sys.executable, "-I", "-c", script, str(tmp_path), json.dumps(texts)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    module, ids = run.stdout.strip().splitlines()[-2:]
    assert module.startswith("transformers_modules.")
    assert json.loads(ids) == expected
