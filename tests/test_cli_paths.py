"""The CLI checks output paths before any work, and turns every file-system or encoding error into
the one-line ``hf-querygen: error: ...`` with exit status 2 (``--debug``: the traceback)."""

from __future__ import annotations

import argparse
import sys

import pytest

from hf_querygen import cli
from hf_querygen.cli import main


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


def run_one_line(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-querygen: error: ") and err.count("\n") == 1, err
    return err


def no_work(*args, **kwargs):
    raise AssertionError("work started before the output path was checked")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "--preset", "liu2018-seq2seq", "--corpus", "nl2kw", "--output-dir", "{file}"],
            "not a folder",
        ),
        (["train", "--preset", "liu2018-seq2seq", "--output-dir", "{file}/model"], "is not a folder"),
        (["evaluate", "--model", "{tmp}/nowhere", "--predictions", "{tmp}"], "--predictions .* is a folder"),
        (["evaluate", "--model", "{tmp}/nowhere", "--predictions", "{file}/p.jsonl"], "is not a folder"),
        (["reproduce", "lin2017", "--quick", "--out-dir", "{file}"], "--out-dir .* not a folder"),
        (["reproduce", "lin2017", "--quick", "--save-models", "{file}"], "--save-models .* not a folder"),
        (["synthesize", "--out-dir", "{file}", "--no-filters"], "--out-dir .* not a folder"),
        (["corpus", "build", "nl2kw", "--out-dir", "{file}"], "--out-dir .* not a folder"),
        (["corpus", "stats", "nl2kw", "--json", "{tmp}"], "--json .* is a folder"),
    ],
)
def test_output_paths_are_checked_before_any_work(argv, message, tmp_path, a_file, capsys, monkeypatch):
    import re

    import hf_querygen.model_folder
    import hf_querygen.training
    from hf_querygen.corpora import _base
    from hf_querygen.experiments import runner
    from hf_querygen.synthetic import corpus

    cli.build_parser()  # the command modules import these by name: import them before the patch
    for module, name in [
        (hf_querygen.training, "train_model"),
        (runner, "run_reproduction"),
        (corpus, "build_question_corpus"),
        (_base, "build_dataset_folder"),
        (_base, "corpus_stats"),
        (hf_querygen.model_folder, "load_trained"),
    ]:
        original = getattr(module, name)
        for other in [m for key, m in sys.modules.items() if key.startswith("hf_querygen")]:
            if getattr(other, name, None) is original:
                monkeypatch.setattr(other, name, no_work)
    argv = [a.format(file=a_file, tmp=tmp_path) for a in argv]
    err = run_one_line(argv, capsys)
    assert re.search(message, err), err


@pytest.mark.parametrize(
    "error",
    [
        PermissionError(13, "Permission denied", "/some/where/file.json"),
        IsADirectoryError(21, "Is a directory", "/some/folder"),
        OSError(28, "No space left on device"),
        UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte"),
    ],
)
def test_os_and_unicode_errors_are_one_line(error, capsys, monkeypatch):
    def handler(args):
        raise error

    parser = argparse.ArgumentParser()
    parser.set_defaults(func=handler, debug=False)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    err = run_one_line([], capsys)
    assert "Errno" not in err and "Traceback" not in err
    if getattr(error, "filename", None):
        assert error.filename in err and error.strerror in err
    parser.set_defaults(debug=True)
    with pytest.raises(type(error)):
        main([])
