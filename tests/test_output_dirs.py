"""What ``overwrite`` may delete (hf_querygen._fs): only a folder the library wrote, recognised by its
marker; builds are published atomically, so a refused or failed build leaves nothing behind and of
two racing builds exactly one wins."""

from __future__ import annotations

import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hf_querygen import _fs
from hf_querygen._fs import MARKER_FILE, atomic_output_dir, read_marker, remove_tree, write_marker
from hf_querygen.errors import InvalidInputError, OutputExistsError
from hf_querygen.retrieval import Index

SMALL = {"show_progress": False, "heap_size": 15_000_000, "num_threads": 1}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name != folder.name)


@pytest.fixture
def user_folder(tmp_path) -> Path:
    """A user's own folder that happens to hold subfolders named like an index's."""
    folder = tmp_path / "mine"
    (folder / "stats").mkdir(parents=True)
    (folder / "tantivy").mkdir()
    (folder / "thesis.tex").write_text("years of work")
    (folder / "stats" / "results.csv").write_text("a,b\n1,2\n")
    (folder / "tantivy" / "notes.md").write_text("# notes")
    (folder / "index.json").write_text('{"format_version": 1, "num_docs": 1}')
    return folder


def test_overwrite_refuses_a_folder_the_library_did_not_write(user_folder):
    before = snapshot(user_folder)
    with pytest.raises(OutputExistsError, match=r"did not write.*index.json.*stats.*tantivy.*thesis.tex"):
        Index.from_texts(["alpha beta"], path=user_folder, overwrite=True, **SMALL)
    assert snapshot(user_folder) == before
    assert siblings(user_folder) == []  # no temporary folder left behind


def test_overwrite_from_the_cli_refuses_and_names_the_files(user_folder, tmp_path, capsys):
    from hf_querygen.cli import main

    docs = tmp_path / "docs.tsv"
    docs.write_text("d1\tthe red fox\n")
    before = snapshot(user_folder)
    assert main(["index", "build", str(docs), str(user_folder), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-querygen: error: refusing") and "thesis.tex" in err
    assert snapshot(user_folder) == before


def test_overwrite_replaces_an_index_the_library_wrote(tmp_path):
    path = tmp_path / "ix"
    Index.from_texts(["alpha beta", "gamma"], ids=["a", "b"], path=path, **SMALL)
    marker = read_marker(path)
    assert marker["kind"] == "index" and marker["format_version"] == 1
    assert {"index.json", "ids.json", "stats", "tantivy"} <= set(marker["entries"])
    with pytest.raises(OutputExistsError, match="overwrite=True"):
        Index.from_texts(["delta"], path=path, **SMALL)
    index = Index.from_texts(["delta epsilon"], path=path, overwrite=True, **SMALL)
    assert len(index) == 1 and index.search("delta")[0].id == 0
    assert read_marker(path)["build_id"] != marker["build_id"]
    assert siblings(path) == []  # neither the staging folder nor the replaced index is left


def test_a_file_added_to_a_library_folder_is_never_deleted(tmp_path):
    path = tmp_path / "ix"
    Index.from_texts(["alpha"], path=path, **SMALL)
    (path / "my-queries.txt").write_text("precious")
    with pytest.raises(OutputExistsError, match="my-queries.txt"):
        Index.from_texts(["beta"], path=path, overwrite=True, **SMALL)
    assert (path / "my-queries.txt").read_text() == "precious"
    assert Index.open(path).search("alpha")  # the old index is intact


@pytest.mark.parametrize(
    "marker",
    [
        {"kind": "model", "format_version": 1, "entries": []},  # another kind
        {"kind": "index", "format_version": 99, "entries": []},  # a format this version cannot know
        {"kind": "index"},  # no version
        ["index"],  # not an object
    ],
)
def test_a_marker_of_another_kind_or_version_is_not_ours(tmp_path, marker):
    path = tmp_path / "ix"
    path.mkdir()
    (path / MARKER_FILE).write_text(json.dumps(marker))
    (path / "data.bin").write_bytes(b"\0")
    with pytest.raises(OutputExistsError, match="did not write"):
        Index.from_texts(["alpha"], path=path, overwrite=True, **SMALL)
    assert (path / "data.bin").exists()


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    path = tmp_path / "ix"
    with pytest.raises(InvalidInputError, match="not a string"):
        Index.from_texts(["fine", None], path=path, **SMALL)
    assert not path.exists() and siblings(path) == []
    # and a failed rebuild leaves the previous index as it was
    Index.from_texts(["alpha"], path=path, **SMALL)
    before = snapshot(path)
    with pytest.raises(InvalidInputError, match="unique"):
        Index.from_texts(["a", "b"], ids=["x", "x"], path=path, overwrite=True, **SMALL)
    assert snapshot(path) == before and siblings(path) == []


def test_a_file_added_while_the_staging_folder_is_removed_is_removed_too(tmp_path, monkeypatch):
    """A writer thread still closing (tantivy's indexing workers) can add a file while ``rmtree``
    walks the folder; ``rmtree(ignore_errors=True)`` then leaves the folder behind. Simulated here."""
    real_rmtree, calls = _fs.shutil.rmtree, []

    def rmtree_with_a_late_writer(folder, ignore_errors=False):
        calls.append(folder)
        real_rmtree(folder, ignore_errors=ignore_errors)
        if len(calls) == 1:  # the writer's file lands after the walk
            Path(folder).mkdir()
            (Path(folder) / "late.idx").write_text("x")

    monkeypatch.setattr(_fs.shutil, "rmtree", rmtree_with_a_late_writer)
    path = tmp_path / "out"
    with pytest.raises(RuntimeError, match="build failed"), atomic_output_dir(path, "thing") as staging:
        (staging / "part").write_text("1")
        raise RuntimeError("build failed")
    assert len(calls) == 2 and not path.exists() and siblings(path) == []
    # a tree that cannot be removed is an error that names it, not a silent leftover
    stuck = tmp_path / "stuck"
    stuck.mkdir()
    monkeypatch.setattr(
        _fs.shutil,
        "rmtree",
        lambda folder, ignore_errors=False: None if ignore_errors else real_rmtree(tmp_path / "absent"),
    )
    monkeypatch.setattr(_fs.time, "sleep", lambda seconds: None)
    with pytest.raises(FileNotFoundError, match="absent"):
        remove_tree(stuck)


def test_racing_builds_into_one_path_exactly_one_wins(tmp_path):
    path = tmp_path / "ix"
    texts = [f"document {i} about topic {i % 7}" for i in range(3000)]

    def build(tag: str):
        try:
            Index.from_texts([*texts, tag], path=path, **SMALL)
            return tag
        except InvalidInputError as err:
            return err

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(build, ["first", "second"]))
    winners = [o for o in outcomes if isinstance(o, str)]
    losers = [o for o in outcomes if not isinstance(o, str)]
    assert len(winners) == 1 and len(losers) == 1
    assert "another process" in str(losers[0]) or "not empty" in str(losers[0])
    assert Index.open(path).search(winners[0])[0].row == len(texts)
    assert siblings(path) == []


@pytest.mark.parametrize("overwrite", [False, True])
def test_publish_race_the_later_build_is_discarded(tmp_path, overwrite):
    path = tmp_path / "out"
    if overwrite:  # both builds replace the same library folder
        with atomic_output_dir(path, "thing") as staging:
            (staging / "v").write_text("0")
    first = atomic_output_dir(path, "thing", overwrite)
    second = atomic_output_dir(path, "thing", overwrite)
    a, b = first.__enter__(), second.__enter__()  # both started before either finished
    (a / "v").write_text("a")
    (b / "v").write_text("b")
    first.__exit__(None, None, None)
    with pytest.raises(InvalidInputError, match="another process"):
        second.__exit__(None, None, None)
    assert (path / "v").read_text() == "a" and siblings(path) == []


def test_published_folders_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_output_dir(tmp_path / "out", "thing") as staging:
            (staging / "f").write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o750


def test_output_path_checks(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInputError, match="not a folder"):
        Index.from_texts(["a"], path=tmp_path / "file", overwrite=True, **SMALL)
    with pytest.raises(InvalidInputError, match="not a folder"):
        Index.from_texts(["a"], path=tmp_path / "file" / "sub", **SMALL)
    (tmp_path / "empty").mkdir()
    assert len(Index.from_texts(["a"], path=tmp_path / "empty", **SMALL)) == 1  # an empty folder is fine


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_parent_is_refused_before_work(tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        with pytest.raises(InvalidInputError, match="not writable"):
            Index.from_texts(iter(["never read"] * 3), path=parent / "ix", **SMALL)
    finally:
        parent.chmod(0o755)


def test_save_model_folder_replaces_only_model_folders(tmp_path):
    from hf_querygen.training import save_model_folder

    class Stub:  # save_model_folder only needs save_pretrained from both
        def save_pretrained(self, folder):
            (Path(folder) / "config.json").write_text("{}")

    model, tokenizer = Stub(), Stub()
    user = tmp_path / "user-model"
    user.mkdir()
    (user / "weights.bin").write_bytes(b"mine")
    with pytest.raises(OutputExistsError, match="weights.bin"):
        save_model_folder(model, tokenizer, user, {}, overwrite=True)
    assert (user / "weights.bin").read_bytes() == b"mine" and siblings(user) == []


class _Table:
    """What the runner's folder check reads of a reproduction: its name and the keys of its rows."""

    def __init__(self, name, keys=("a", "b")):
        self.name = name
        self.systems = [type("S", (), {"key": key})() for key in keys]


def test_reproduction_overwrite_needs_the_marker_and_keeps_other_files(tmp_path):
    from hf_querygen.experiments.runner import _prepare_out_dir

    table = _Table("liu2018")
    out = tmp_path / "results"
    (out / "runs").mkdir(parents=True)
    (out / "results.json").write_text("{}")
    (out / "NOTES.md").write_text("my notes")
    with pytest.raises(OutputExistsError, match="no .hf_querygen marker"):
        _prepare_out_dir(out, False, True, table, "full")
    assert (out / "runs").is_dir() and (out / "results.json").exists()
    write_marker(out, "reproduction")
    _prepare_out_dir(out, False, True, table, "full")
    assert sorted(p.name for p in out.iterdir()) == [MARKER_FILE, "NOTES.md"]
    assert read_marker(out)["identity"] == {"paper": "liu2018", "budget": "full"}
    with pytest.raises(OutputExistsError, match="--resume"):
        (out / "results.json").write_text("{}")
        _prepare_out_dir(out, False, False, table, "full")


@pytest.mark.parametrize(
    ("paper", "budget"), [("lin2017", "full"), ("liu2018", "quick")], ids=["another paper", "another budget"]
)
def test_resume_never_continues_another_papers_or_budgets_run(tmp_path, paper, budget):
    from hf_querygen.experiments.runner import _prepare_out_dir

    out = tmp_path / "results"
    _prepare_out_dir(out, False, False, _Table("liu2018"), "full")
    (out / "runs").mkdir()
    (out / "runs" / "a-seed0.json").write_text('{"system": "a"}')
    (out / "results.json").write_text('{"paper": "liu2018"}')
    before = snapshot(out)
    differs = (
        f"paper 'liu2018' there, paper '{paper}'"
        if paper != "liu2018"
        else f"'full' there, budget '{budget}'"
    )
    with pytest.raises(OutputExistsError, match=r"refusing to resume.*" + differs + " here"):
        _prepare_out_dir(out, True, False, _Table(paper), budget)
    assert snapshot(out) == before
    _prepare_out_dir(out, True, False, _Table("liu2018"), "full")  # the same run continues
    assert snapshot(out) == before


def test_resume_of_an_older_marker_goes_by_what_its_files_name(tmp_path):
    from hf_querygen.experiments.runner import _prepare_out_dir

    out = tmp_path / "results"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "a-seed0.json").write_text('{"system": "a"}')
    write_marker(out, "reproduction")  # no identity: written before markers named the paper
    with pytest.raises(OutputExistsError, match="refusing to resume"):
        _prepare_out_dir(out, True, False, _Table("lin2017", keys=("x",)), "full")
    _prepare_out_dir(out, True, False, _Table("liu2018"), "full")
    assert read_marker(out)["identity"] == {"paper": "liu2018", "budget": "full"}


def test_resume_into_a_foreign_folder_with_like_named_files_is_refused(tmp_path):
    from hf_querygen.experiments.runner import _prepare_out_dir

    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.json").write_text("my own results")
    with pytest.raises(OutputExistsError, match="results.json but no .hf_querygen marker"):
        _prepare_out_dir(out, True, False, _Table("liu2018"), "full")
    assert snapshot(out) == {"results.json": b"my own results"}


@pytest.mark.parametrize(
    "marker",
    ["{not json", '{"kind": "model", "format_version": 1, "entries": 5}', '{"kind": 3, "format_version": 1}'],
    ids=["not json", "entries not a list", "kind not a string"],
)
def test_a_damaged_marker_is_not_ours_and_is_named(tmp_path, marker):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / MARKER_FILE).write_text(marker)
    (folder / "config.json").write_text("{}")
    with pytest.raises(OutputExistsError, match="marker is damaged"):
        _fs.check_output_dir(folder, "model", overwrite=True)
    assert (folder / "config.json").exists()


def test_evaluations_recorded_beside_a_model_are_the_librarys_own(tmp_path):
    folder = tmp_path / "model"
    with atomic_output_dir(folder, "model") as staging:
        (staging / "config.json").write_text("{}")
    (folder / _fs.MODEL_EVALUATIONS_FILE).write_text("[]")
    _fs.check_output_dir(folder, "model", overwrite=True)  # not foreign: no error
    with atomic_output_dir(folder, "model", overwrite=True) as staging:
        (staging / "config.json").write_text('{"new": 1}')
    assert (folder / "config.json").read_text() == '{"new": 1}'


@pytest.mark.parametrize("failure", ["a bad text in a later chunk", "the caller's iterable"])
def test_a_build_failing_in_its_pipeline_leaves_nothing_and_no_thread(tmp_path, monkeypatch, failure):
    # chunks are analysed by a worker thread while the calling thread feeds tantivy: an error on
    # either side reaches the caller, and neither the staging folder nor the worker survives it
    import threading

    from hf_querygen.retrieval import index as index_module

    monkeypatch.setattr(index_module, "CHUNK_SIZE", 4)

    def texts():
        for i in range(40):
            if i == 25 and failure == "the caller's iterable":
                raise RuntimeError("source went away")
            yield b"bytes" if i == 25 else f"document {i}"

    expected = (
        (InvalidInputError, "text 25 is bytes b'bytes', not a string")
        if failure.startswith("a bad")
        else (
            RuntimeError,
            "source went away",
        )
    )
    with pytest.raises(expected[0], match=expected[1]):
        Index.from_texts(texts(), path=tmp_path / "ix", **SMALL)
    assert not (tmp_path / "ix").exists() and siblings(tmp_path / "ix") == []
    assert not [t for t in threading.enumerate() if t.name.startswith("hf-querygen-analysis")]


def test_corpus_build_writes_only_into_a_folder_of_that_corpus(tmp_path):
    from hf_querygen.corpora import build_dataset_folder

    mine = tmp_path / "mine"
    (mine / "data").mkdir(parents=True)
    (mine / "README.md").write_text("my card")
    (mine / "data" / "x.parquet").write_bytes(b"mine")
    before = snapshot(mine)
    # refused before a raw file is read (no data_dir is needed to get there)
    with pytest.raises(OutputExistsError, match=r"holds data but no .hf_querygen marker"):
        build_dataset_folder("nl2kw", mine, data_dir=tmp_path / "absent", progress=False)
    assert snapshot(mine) == before
    other = tmp_path / "other"
    _fs.claim_in_place_dir(other, "dataset", ("data",), identity={"corpus": "q2id"})
    (other / "data").mkdir()
    (other / "README.md").write_text("q2id card")
    with pytest.raises(OutputExistsError, match="different corpus: corpus 'q2id' there, corpus 'nl2kw' here"):
        build_dataset_folder("nl2kw", other, data_dir=tmp_path / "absent", progress=False)
    assert (other / "README.md").read_text() == "q2id card"
