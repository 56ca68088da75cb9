"""The webis_qsec_10 corpus: exact counts, folds, determinism, the Hub-ready folder, corrupted files."""

from __future__ import annotations

import pytest
from _corpus_testing import card_split_sizes, data_dir_with

from hf_querygen.corpora import CorpusFormatError, build_dataset_folder, load_corpus
from hf_querygen.corpora.webis_qsec_10 import (
    CROWD_FILE,
    PUBLISHED_ALGORITHMS,
    QUERIES_FILE,
    corpus_stats,
    load_segmentation_resources,
)

CROWD = f"webis-qsec-10/{CROWD_FILE}"
QUERIES = f"webis-qsec-10/{QUERIES_FILE}"
MORE_THAN_TEN_VOTES = {
    "1710241058": 19,
    "1761623024": 20,
    "1859104272": 16,
    "2371167945": 18,
    "3530952206": 14,
    "4042050915": 13,
    "4247813540": 16,
    "4284741415": 22,
    "851325886": 18,
}


@pytest.fixture(scope="module")
def segmentations(data_dir):
    return load_corpus("webis_qsec_10", "segmentations", data_dir=data_dir)["train"]


def test_counts_votes_and_the_papers_example(segmentations):
    assert segmentations.num_rows == 4848
    totals = dict(zip(segmentations["id"], segmentations["total_votes"], strict=True))
    assert {q: t for q, t in totals.items() if t != 10} == MORE_THAN_TEN_VOTES
    row = segmentations[segmentations["id"].index("1004073900")]
    assert row["query"] == "graffiti fonts alphabet"
    # Lin'17 Sec. 2: 7 of 10 votes against a break at position 1, 8 of 10 for one at position 2
    assert row["reference"] == "graffiti fonts|alphabet"
    assert row["breaks"] == [0, 1]
    assert row["break_vote_share"] == pytest.approx([0.3, 0.8])
    assert row["bio_tags"] == [0, 1, 0]  # B I B (paper Table 1)
    assert segmentations.features["bio_tags"].feature.names == ["B", "I"]
    # double-quoted literals with apostrophes parse: every crowd segmentation spells its query
    for query, crowd in zip(segmentations["query"], segmentations["crowd_segmentations"], strict=True):
        assert all(c["segmentation"].replace("|", " ") == query for c in crowd)


def test_folds_are_balanced_and_deterministic(segmentations, data_dir):
    assert sorted(segmentations.to_pandas()["fold"].value_counts().tolist()) == [969, 969, 970, 970, 970]
    again = load_corpus("webis_qsec_10", "segmentations", data_dir=data_dir)["train"]
    assert again["fold"] == segmentations["fold"]
    assert again["reference"] == segmentations["reference"]


def test_algorithms_config_has_every_published_output(data_dir, segmentations):
    algorithms = load_corpus("webis_qsec_10", "algorithms", data_dir=data_dir)["train"]
    assert algorithms.num_rows == 4848
    assert algorithms["id"] == segmentations["id"] and algorithms["fold"] == segmentations["fold"]
    row = algorithms[0]
    assert row["wt"] == "graffiti|fonts|alphabet" and row["wt_snp"] == "graffiti fonts|alphabet"
    assert set(PUBLISHED_ALGORITHMS) <= set(algorithms.column_names)


def test_stats_and_feature_resources(data_dir):
    stats = corpus_stats("segmentations", data_dir)
    assert stats["queries"] == 4848 and stats["votes_per_query"]["queries_over_10_votes"] == 9
    assert (
        stats["words_per_query"]["histogram"][3] == 2164 and stats["words_per_query"]["histogram"][10] == 23
    )
    assert stats["paper"]["training_queries"] == 4850
    resources = load_segmentation_resources(data_dir)
    tables = {name: value for name, value in vars(resources).items() if name not in ("source", "pos_tagger")}
    sizes = {name: len(value) for name, value in tables.items()}
    assert resources.pos_tagger is None and "corpus's own queries only" in resources.source
    assert sizes == {
        "google_counts": 20319,
        "normalized_weights": 20319,
        "wikipedia_titles": 4130,
        "msn_unigram_logprob": 7405,
        "msn_bigram_logprob": 13199,
        "pmi": 13199,
        "ngram_pos": 33176,
        "query_pos": 4848,
    }


def test_hub_folder_loads_with_load_dataset(tmp_path, data_dir, segmentations):
    import datasets

    folder = build_dataset_folder("webis_qsec_10", out_dir=tmp_path, data_dir=data_dir, progress=False)
    assert card_split_sizes(folder / "README.md") == {
        "segmentations": {"train": 4848},
        "algorithms": {"train": 4848},
    }
    loaded = datasets.load_dataset(str(folder), "segmentations", split="train")
    assert loaded.features == segmentations.features
    assert loaded["reference"] == segmentations["reference"]


def test_the_committed_card_states_the_built_counts():
    from pathlib import Path

    card = Path(__file__).resolve().parents[1] / "dataset_scripts" / "webis_qsec_10" / "README.md"
    assert card_split_sizes(card) == {"segmentations": {"train": 4848}, "algorithms": {"train": 4848}}


# ---------------------------------------------------------------- corrupted copies
def _crowd_lines(data_dir) -> list[bytes]:
    return (data_dir / CROWD).read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    ("line_no", "bad_record", "message"),
    [
        (2, b"[(8, 'stainless steel|chest freezers'), (2, 'stainless steel|chest", "Python list literal"),
        (3, b"[(10, 'rutgers online|graduate classes|extra')]", "does not spell the query"),
        (5, b"[(0, 'whatever')]", "non-positive vote count"),
        (6, b"[(10, 5)]", "not a \\(int votes, str segmentation\\) tuple"),
    ],
)
def test_corrupted_crowd_file_names_file_and_line(tmp_path, data_dir, line_no, bad_record, message):
    lines = _crowd_lines(data_dir)
    query_id = lines[line_no - 1].split(b"\t")[0]
    lines[line_no - 1] = query_id + b"\t" + bad_record + b"\n"
    corrupted = data_dir_with(data_dir, tmp_path / "data", {CROWD: b"".join(lines)})
    with pytest.raises(CorpusFormatError, match=message) as caught:
        load_corpus("webis_qsec_10", data_dir=corrupted)
    assert caught.value.path.endswith(CROWD_FILE) and caught.value.line == line_no


def test_missing_tab_names_file_and_line(tmp_path, data_dir):
    lines = _crowd_lines(data_dir)
    lines[3] = lines[3].replace(b"\t", b" ", 1)
    corrupted = data_dir_with(data_dir, tmp_path / "data", {CROWD: b"".join(lines)})
    with pytest.raises(CorpusFormatError, match=f"{CROWD_FILE}:4: expected 2 TAB-separated fields, found 1"):
        load_corpus("webis_qsec_10", data_dir=corrupted)


def test_lenient_mode_skips_and_reports(tmp_path, data_dir):
    lines = _crowd_lines(data_dir)
    lines[1] = b"1004593125\tnot a list\n"
    corrupted = data_dir_with(data_dir, tmp_path / "data", {CROWD: b"".join(lines)})
    dataset, log = load_corpus("webis_qsec_10", data_dir=corrupted, strict=False, return_log=True)
    assert dataset["train"].num_rows == 4847
    # the query loses its crowd line (line 2) and is then reported as having no segmentations
    assert log.summary()["skipped_malformed"] == 2
    assert any(":2:" in message for message in log.summary()["malformed_examples"])


def test_duplicate_query_id_is_an_error(tmp_path, data_dir):
    lines = (data_dir / QUERIES).read_bytes().splitlines(keepends=True)
    lines.append(lines[0])
    corrupted = data_dir_with(data_dir, tmp_path / "data", {QUERIES: b"".join(lines)})
    with pytest.raises(CorpusFormatError, match="duplicate query id") as caught:
        load_corpus("webis_qsec_10", "algorithms", data_dir=corrupted)
    assert caught.value.line == len(lines)
