"""Bad input at the public entry points: pipelines, generate(), the CLI, the tokenizer, model folders.

Every check asserts the message content (what is wrong, which argument / file / task), not only the
exception type. Tiny untrained models (8-dim) keep the file at a few seconds.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from transformers import pipeline

import hf_querygen  # noqa: F401  (registers the models, tokenizers and pipeline tasks)
from hf_querygen import load_pipeline
from hf_querygen.cli import main as cli_main
from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.model_folder import check_model_folder, load_trained
from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer

TEXTS = ["where should i go in beijing", "graffiti fonts alphabet", "what is the weather in berlin"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
    from hf_querygen.models.rnn_tagger import RNNTaggerConfig, RNNTaggerForTokenClassification

    torch.manual_seed(0)
    tokenizer = train_word_tokenizer(TEXTS)
    tokenizer.model_max_length = 5  # what `hf-querygen train` saves: the task's max source length
    size, out = len(tokenizer), output_vocab_size_of(tokenizer)
    models = {
        "seq2seq": RNNSeq2SeqForConditionalGeneration(
            RNNSeq2SeqConfig(
                vocab_size=size, output_vocab_size=out, embedding_size=8, hidden_size=8, max_decoding_length=4
            )
        ),
        "dual": DualDecoderForKeywordGeneration(
            DualDecoderConfig(vocab_size=size, output_vocab_size=out, embedding_size=8, hidden_size=8)
        ),
        "tagger": RNNTaggerForTokenClassification(
            RNNTaggerConfig(
                vocab_size=size,
                embedding_size=8,
                hidden_size=8,
                id2label={0: "B", 1: "I"},  # a segmentation tagger
                label2id={"B": 0, "I": 1},
            )
        ),
    }
    root = tmp_path_factory.mktemp("models")
    paths = {}
    for name, model in models.items():
        if getattr(model, "generation_config", None) is not None:
            model.generation_config.max_length = 4
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        paths[name] = root / name
    return paths


@pytest.fixture(scope="module")
def reformulate(folders):
    return pipeline("query-reformulation", model=str(folders["seq2seq"]))


# ---------------------------------------------------------------- 1. pipelines
def test_empty_list_and_empty_texts_give_empty_results(folders, reformulate):
    keywords = pipeline("keyword-query-generation", model=str(folders["seq2seq"]))
    segment = pipeline("query-segmentation", model=str(folders["tagger"]))
    for pipe in (reformulate, keywords, segment):
        assert pipe([]) == []
        assert pipe("") == []
        assert pipe("  \t ") == []
        mixed = pipe(["", TEXTS[0]])
        assert mixed[0] == [] and mixed[1] != []  # the empty input does not shift the others


def test_long_input_is_cut_to_the_model_limit_with_one_warning(folders, reformulate):
    keywords = pipeline("keyword-query-generation", model=str(folders["seq2seq"]))
    segment = pipeline("query-segmentation", model=str(folders["tagger"]))
    long_text = " ".join(["beijing"] * 100_000)
    for pipe in (reformulate, keywords, segment):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = pipe([long_text, long_text])
        ours = [w for w in caught if "maximum source length" in str(w.message)]
        assert len(ours) == 1, [str(w.message) for w in caught]
        assert "100000 words" in str(ours[0].message) and "5 words" in str(ours[0].message)
        assert len(result) == 2
        # cutting changes nothing the model sees beyond the limit: same output as the cut text
        assert result[0] == pipe(" ".join(["beijing"] * 5))


@pytest.mark.parametrize(
    ("task", "model", "serves"),
    [
        ("query-segmentation", "dual", "keyword-query-generation"),
        ("query-reformulation", "tagger", "query-segmentation"),
        ("question-generation", "dual", "keyword-query-generation"),
        ("keyword-query-generation", "tagger", "query-segmentation"),  # B/I tags are segment tags
    ],
)
def test_wrong_model_kind_names_task_type_and_the_tasks_it_serves(folders, task, model, serves):
    with pytest.raises(InvalidInputError) as info:
        pipeline(task, model=str(folders[model]))
    message = str(info.value)
    assert repr(task) in message
    assert ("dual_decoder" if model == "dual" else "rnn_tagger") in message
    assert serves in message


# ---------------------------------------------------------------- 2. generate
def test_generate_empty_batch_and_bad_arguments(folders):
    model, tokenizer, _ = load_trained(folders["seq2seq"])
    empty = model.generate(torch.zeros((0, 3), dtype=torch.long))
    assert empty.shape == (0, 1) and empty.dtype == torch.long
    ids = tokenizer(TEXTS[:1], return_tensors="pt")["input_ids"]
    assert model.generate(ids).shape[0] == 1
    cases = [
        ({"num_beams": 0}, r"generate\(\): num_beams=0 \(int\) is not valid: an integer in \[1, inf\)"),
        ({"max_new_tokens": -3}, r"max_new_tokens=-3 \(int\) is not valid"),
        ({"max_new_tokens": "5"}, r"max_new_tokens='5' \(str\) is not valid"),
        ({"num_return_sequences": 0}, "num_return_sequences"),
    ]
    for kwargs, expected in cases:
        with pytest.raises(InvalidInputError, match=expected):
            model.generate(ids, **kwargs)
    with pytest.raises(InvalidInputError, match="input_ids must hold integer token ids.*float32"):
        model.generate(ids.float())
    with pytest.raises(
        InvalidInputError, match=f"id {len(tokenizer) + 7}, outside .*\\[0, {len(tokenizer)}\\)"
    ):
        model.generate(ids + len(tokenizer) + 7 - int(ids.max()))
    with pytest.raises(InvalidInputError, match="id -1"):
        model.generate(torch.tensor([[-1, 4]]))
    with pytest.raises(InvalidInputError, match=r"shape \(batch, source_length\), got \(3,\)"):
        model.generate(torch.tensor([4, 5, 6]))


# ---------------------------------------------------------------- 3. CLI
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "--output-dir", "x", "--preset", "p", "--max-steps", "-5"], "integer >= 1, got '-5'"),
        (["train", "--output-dir", "x", "--preset", "p", "--max-steps", "0"], "integer >= 1, got '0'"),
        (["train", "--output-dir", "x", "--preset", "p", "--epochs", "-1"], "number > 0, got '-1'"),
        (["generate", "--model", "m", "--num-beams", "0", "a"], "--num-beams"),
        (["generate", "--model", "m", "--max-new-tokens", "-3", "a"], "--max-new-tokens"),
        (["evaluate", "--model", "m", "--limit", "-1"], "--limit"),
    ],
)
def test_cli_rejects_bad_numbers_before_running(argv, expected, capsys):
    with pytest.raises(SystemExit) as info:
        cli_main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_cli_errors_print_one_line_and_debug_shows_the_traceback(tmp_path, capsys):
    missing = tmp_path / "no-model"
    assert cli_main(["generate", "--model", str(missing), "hello"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("hf-querygen: error: model folder") and str(missing) in err
    assert cli_main(["corpus", "stats", "nl2kv"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hf-querygen: error:") and "nl2kv" in err and err.count("\n") == 0
    with pytest.raises(ModelFolderError, match="does not exist"):
        cli_main(["--debug", "generate", "--model", str(missing), "hello"])


# ---------------------------------------------------------------- 4. tokenizer
@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (None, "texts must be an iterable of strings.*got NoneType"),
        ("where to go", "got str: wrap a single text in a list"),
        (["fine", 3], "source text #1 is int"),
        ([b"bytes"], "source text #0 is bytes"),
    ],
)
def test_train_word_tokenizer_rejects_non_texts(texts, expected):
    with pytest.raises(InvalidInputError, match=expected):
        train_word_tokenizer(texts)


# ---------------------------------------------------------------- 5. model folders
def _copy(folder, tmp_path, name):
    import shutil

    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


@pytest.mark.parametrize(
    ("damage", "file", "expected"),
    [
        (lambda f: (f / "model.safetensors").unlink(), "model.safetensors", "is missing"),
        (lambda f: (f / "model.safetensors").write_bytes(b""), "model.safetensors", "is empty"),
        (
            lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:-100]),
            "model.safetensors",
            "truncated or corrupted",
        ),
        (
            lambda f: (f / "model.safetensors").write_bytes(b"\x00garbage" * 50),
            "model.safetensors",
            "corrupted",
        ),
        (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json", "is missing"),
        (lambda f: (f / "tokenizer.json").write_text("{not json"), "tokenizer.json", "not JSON"),
        (lambda f: (f / "config.json").write_text("[1, 2]"), "config.json", "not an object"),
        (lambda f: (f / "config.json").write_bytes(b"\xff\xfe"), "config.json", "not JSON"),
    ],
)
def test_damaged_model_folder_names_folder_and_file(folders, tmp_path, damage, file, expected):
    folder = _copy(folders["seq2seq"], tmp_path, "damaged")
    damage(folder)
    for load in (load_trained, lambda f: load_pipeline("query-reformulation", f)):
        with pytest.raises(ModelFolderError) as info:
            load(folder)
        message = str(info.value)
        assert str(folder) in message and file in message and expected in message


def test_missing_or_non_folder_is_named(tmp_path):
    with pytest.raises(ModelFolderError, match="does not exist"):
        check_model_folder(tmp_path / "nothing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelFolderError, match="is a file, not a folder"):
        load_trained(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFolderError, match="config.json is missing"):
        load_trained(tmp_path / "empty")


def test_unknown_preset_is_ours_and_still_a_key_error():
    from hf_querygen.errors import UnknownNameError
    from hf_querygen.presets import config_from_preset

    with pytest.raises(UnknownNameError) as info:
        config_from_preset("no-such-preset")
    assert isinstance(info.value, KeyError) and isinstance(info.value, InvalidInputError)
    assert str(info.value).startswith("unknown preset 'no-such-preset'; known presets: [")


# ---------------------------------------------------------------- 4. generation arguments, one check
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"max_new_tokens": -1}, r"max_new_tokens=-1 \(int\) is not valid: an integer in \[1, inf\)"),
        ({"max_new_tokens": "7"}, r"max_new_tokens='7' \(str\) is not valid"),
        ({"max_new_tokens": 2.5}, r"max_new_tokens=2.5 \(float\)"),
        ({"num_beams": True}, r"num_beams=True \(bool\)"),
        ({"temperature": float("nan"), "do_sample": True}, r"temperature=nan"),
        ({"top_p": 1.5, "do_sample": True}, r"top_p=1.5"),
        ({"num_return_sequences": 3}, r"num_return_sequences=3 .*at most num_beams=1"),
    ],
)
@pytest.mark.parametrize("entry", ["pipeline", "predict"])
def test_generation_arguments_are_named_as_written_by_every_entry(folders, kwargs, expected, entry):
    model, tokenizer, _ = load_trained(folders["dual"])
    if entry == "pipeline":
        generator = pipeline("keyword-query-generation", model=str(folders["dual"]))
        with pytest.raises(InvalidInputError, match="keyword-query-generation pipeline: " + expected):
            generator(TEXTS[0], **kwargs)
    else:
        from hf_querygen.tasks.base import get_task

        with pytest.raises(InvalidInputError, match="nl2kw: predict: " + expected):
            get_task("nl2kw").predict(model, tokenizer, TEXTS[:1], **kwargs)


@pytest.mark.parametrize("kwargs", [{"num_beams": 2}, {"num_return_sequences": 2}, {"max_new_tokens": 3}])
def test_a_tagger_refuses_decoding_options_it_cannot_honour(folders, kwargs):
    segmenter = pipeline("query-segmentation", model=str(folders["tagger"]))
    name = next(iter(kwargs))
    with pytest.raises(
        InvalidInputError, match=f"{name}=2|{name}=3" + r".*cannot honour it \(a tagging model"
    ):
        segmenter(TEXTS[0], **kwargs) if name == "num_beams" else segmenter.task_object.predict(
            segmenter.model, segmenter.tokenizer, TEXTS[:1], **kwargs
        )
    assert segmenter(TEXTS[0])  # without them it segments


def test_cli_generate_refuses_what_a_tagger_cannot_honour(folders, capsys):
    import json

    (folders["tagger"] / "hf_querygen_training.json").write_text(json.dumps({"task": "segmentation"}))
    argv = ["generate", "--model", str(folders["tagger"]), "--num-return-sequences", "2", TEXTS[0]]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "generate: --num-return-sequences 2" in err and "cannot honour" in err and "Traceback" not in err
    assert cli_main(["generate", "--model", str(folders["tagger"]), TEXTS[0]]) == 0
