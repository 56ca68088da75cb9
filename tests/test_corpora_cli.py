"""``hf-querygen corpus list | build | stats`` end to end: on a tiny corpus registered by this test
(full folder build: parquet + card header, lenient/strict) and on a small real config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _corpus_testing import card_header

from hf_querygen.cli import main
from hf_querygen.corpora import _base


def _build_tiny(config: str, data_dir: Path, log: _base.ParseLog):
    """Rows of ``tiny/pairs.tsv`` (question TAB keywords); config ``upper`` upper-cases them."""
    import datasets

    rel = "tiny/pairs.tsv"
    columns: dict[str, list] = {"question": [], "keywords": []}
    for number, line in enumerate((data_dir / rel).read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            log.error(rel, number, "expected question<TAB>keywords")
            continue
        transform = str.upper if config == "upper" else str
        columns["question"].append(transform(fields[0]))
        columns["keywords"].append(transform(fields[1]).split())
    features = datasets.Features(
        {"question": datasets.Value("string"), "keywords": datasets.List(datasets.Value("string"))}
    )
    dataset = _base.dataset_from_columns(columns, features)
    return datasets.DatasetDict(
        {"train": dataset.select(range(1, len(dataset))), "test": dataset.select([0])}
    )


def corpus_stats(config: str, data_dir=None) -> dict:
    """The stats hook the CLI finds through the module of the registered build function."""
    dataset_dict = _base.load_corpus("tiny", config, data_dir=data_dir)
    return {
        "splits": {split: {"examples": ds.num_rows} for split, ds in dataset_dict.items()},
        "paper": {"examples": 4},
    }


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """The corpus ``tiny`` registered for one test, with its raw data and a card with prose."""
    monkeypatch.setitem(
        _base.CORPORA._items,  # registered for this test only
        "tiny",
        _base.CorpusSpec(
            "tiny", {"plain": "as written", "upper": "upper-cased"}, "plain", _build_tiny, "test corpus"
        ),
    )
    data = tmp_path / "raw"
    (data / "tiny").mkdir(parents=True)
    (data / "tiny" / "pairs.tsv").write_text(
        "who wrote hamlet\thamlet author\nwhere is kyoto\tkyoto\nwhat is rust\trust language\n",
        encoding="utf-8",
    )
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "README.md").write_text(
        "---\nlicense: mit\n---\n# Tiny\n\nProse that the build keeps.\n", encoding="utf-8"
    )
    return data, folder


def test_list_shows_the_registered_corpora(capsys):
    assert main(["corpus", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("nl2kw", "wikianswers"):
        assert f"\n{name}: " in "\n" + out
    assert "  en (default): " in out and "  seed_pairs: " in out


def test_build_writes_parquet_and_the_card_header(tiny, capsys, tmp_path):
    import datasets

    data, folder = tiny
    assert main(["corpus", "build", "tiny", "--data-dir", str(data), "--out-dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "tiny/plain: {'test': 1, 'train': 2}; skipped malformed: 0" in out
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.endswith("---\n# Tiny\n\nProse that the build keeps.\n")
    header = card_header(folder / "README.md")
    assert header["license"] == "mit"
    assert [c["config_name"] for c in header["configs"]] == ["plain", "upper"]
    assert {s["name"]: s["num_examples"] for s in header["dataset_info"][1]["splits"]} == {
        "train": 2,
        "test": 1,
    }
    upper = datasets.load_dataset(str(folder), "upper", cache_dir=str(tmp_path / "cache"))
    assert upper["test"][0] == {"question": "WHO WROTE HAMLET", "keywords": ["HAMLET", "AUTHOR"]}
    assert datasets.get_dataset_config_names(str(folder)) == ["plain", "upper"]


def test_build_strict_fails_naming_file_and_line_and_lenient_skips(tiny, capsys):
    data, folder = tiny
    with (data / "tiny" / "pairs.tsv").open("a", encoding="utf-8") as handle:
        handle.write("a line without keywords\n")
    assert main(["corpus", "build", "tiny", "--data-dir", str(data), "--out-dir", str(folder)]) == 2
    assert "tiny/pairs.tsv:4: expected question<TAB>keywords" in capsys.readouterr().err
    assert not (folder / "data").exists()
    args = ["corpus", "build", "tiny", "--data-dir", str(data), "--out-dir", str(folder), "--lenient"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "tiny/plain: {'test': 1, 'train': 2}; skipped malformed: 1" in out
    # the lenient per-file summary: file, count, reason, first message
    assert "  tiny/pairs.tsv: 1 skipped\n      1 x expected question<TAB>keywords\n" in out
    assert "first: tiny/pairs.tsv:4: expected question<TAB>keywords" in out


def test_build_summary_warns_when_a_count_moves_against_the_card(tiny, capsys):
    data, folder = tiny
    args = ["corpus", "build", "tiny", "--data-dir", str(data), "--out-dir", str(folder)]
    assert main(args) == 0
    assert "train: 2 rows (no count in the card)" in capsys.readouterr().out  # no counts recorded yet
    assert main(args) == 0  # the card now records train 2 / test 1
    captured = capsys.readouterr()
    assert "train: 2 rows (card 2)\n" in captured.out and "WARNING" not in captured.out + captured.err
    with (data / "tiny" / "pairs.tsv").open("a", encoding="utf-8") as handle:
        handle.write("who painted guernica\tguernica painter\n")
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "train: 3 rows (card 2)  <-- WARNING: +1 rows" in captured.out
    assert "row counts moved against the dataset card" in captured.err


def test_unknown_config_is_a_usage_error(tiny, capsys):
    data, folder = tiny
    assert (
        main(
            [
                "corpus",
                "build",
                "tiny",
                "--data-dir",
                str(data),
                "--out-dir",
                str(folder),
                "--config",
                "lower",
            ]
        )
        == 2
    )
    assert "no config 'lower'; choose one of ['plain', 'upper']" in capsys.readouterr().err
    assert main(["corpus", "stats", "tiny", "--data-dir", str(data), "--config", "lower"]) == 2
    assert main(["corpus", "build", "no-such-corpus"]) == 2
    assert "Unknown corpus 'no-such-corpus'" in capsys.readouterr().err
    assert not (folder / "data").exists()


def test_stats_prints_tables_and_json(tiny, capsys, tmp_path):
    data, _ = tiny
    out_json = tmp_path / "stats.json"
    assert main(["corpus", "stats", "tiny", "--data-dir", str(data), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "== tiny / plain" in out and "== tiny / upper" in out
    assert any(line.split() == ["train", "2"] for line in out.splitlines())
    document = json.loads(out_json.read_text(encoding="utf-8"))
    assert document["upper"]["splits"] == {"train": {"examples": 2}, "test": {"examples": 1}}
    assert json.loads(out[out.index("{\n") :]) == document


def test_partial_build_and_stats_of_a_real_config(data_dir, capsys, tmp_path):
    import pyarrow.parquet as pq

    args = [
        "corpus",
        "build",
        "nl2kw",
        "--config",
        "pt_BR",
        "--out-dir",
        str(tmp_path),
        "--data-dir",
        str(data_dir),
    ]
    assert main(args) == 0
    sizes = {
        p.stem: pq.ParquetFile(p).metadata.num_rows for p in (tmp_path / "data" / "pt_BR").glob("*.parquet")
    }
    assert sizes == {"train": 157, "validation": 18, "test": 44}
    assert not (tmp_path / "README.md").exists()  # a partial build leaves the card alone
    capsys.readouterr()
    assert main(["corpus", "stats", "nl2kw", "--config", "pt_BR", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    stats = json.loads(out[out.index("{\n") :])["pt_BR"]
    assert stats["splits"]["test"]["examples"] == 44
    assert stats["beside_paper"]["extractive_keyword_share"]["paper"] == 0.55
    header = next(line for line in out.splitlines() if line.startswith("beside_paper"))
    assert header.split() == ["beside_paper", "ours", "paper"]
