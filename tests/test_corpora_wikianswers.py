"""The ``wikianswers`` corpus built from the real files in shared/data: counts, clusters, Ding'18's
question filter, seed pairs, Hub folder, and errors on corrupted copies of each raw format."""

from __future__ import annotations

import json
import shutil

import pytest
from _corpus_testing import assert_card_header_is_rendered, card_split_sizes, data_dir_with

from hf_querygen.corpora import CorpusFormatError, build_dataset_folder, load_corpus
from hf_querygen.corpora._base import dataset_folder, normalize_for_matching
from hf_querygen.corpora.wikianswers import CONFIGS, passes_question_filter, question_terms

# The counts the dataset card states (dataset_scripts/wikianswers/README.md).
EXPECTED_SPLITS = {
    "comqa": {"train": 7816, "test": 2243},
    "paralex": {"train": 9726, "validation": 1087, "test": 2817},
    "quora": {"train": 7110, "validation": 767, "test": 1919},
    "wellformedness": {"train": 17500, "validation": 3750, "test": 3850},
    "wellformedness_filtered": {"train": 12778, "validation": 2752, "test": 2833},
    "seed_pairs": {"train": 679, "validation": 75, "test": 189},
}


@pytest.fixture(scope="module")
def built(data_dir):
    return {
        config: load_corpus("wikianswers", config, data_dir=data_dir, return_log=True) for config in CONFIGS
    }


def test_question_filter_of_ding_and_balog():
    assert passes_question_filter("What is the capital of France ?")  # 6 terms, WH-word first
    assert passes_question_filter("can you eat raw pumpkin seed")  # auxiliary first (lemmatised Paralex)
    assert not passes_question_filter("capital of France what is it")  # neither first
    assert not passes_question_filter("Who is he ?")  # 3 terms < 5
    assert not passes_question_filter("what " + "very " * 11 + "long")  # 13 terms > 12
    assert question_terms("Who's   Mia Hamm's coach ?") == ["whos", "mia", "hamms", "coach"]


def test_every_config_has_the_card_counts(built):
    for config, (dataset_dict, log) in built.items():
        assert {split: ds.num_rows for split, ds in dataset_dict.items()} == EXPECTED_SPLITS[config], config
        assert log.errors == []
    assert card_split_sizes(dataset_folder("wikianswers") / "README.md") == EXPECTED_SPLITS


def test_card_header_is_the_one_the_build_writes(built):
    assert_card_header_is_rendered("wikianswers", built)


def test_comqa_clusters_and_answers(built):
    dataset_dict, log = built["comqa"]
    train = dataset_dict["train"]
    # shared/data/README: 7,850 questions in 3,966 clusters; 34 repeats inside a cluster are removed.
    assert len(set(train["cluster_id"][:])) == 3966
    assert train.num_rows + log.removed_counts["comqa: question repeated inside its train cluster"] == 7850
    rows = train.to_list()
    members: dict[str, set[str]] = {}
    for row in rows:
        members.setdefault(row["cluster_id"], set()).add(row["question"])
    for row in rows:
        assert set(row["paraphrases"]) == members[row["cluster_id"]] - {row["question"]}
    test = dataset_dict["test"]
    assert all(p == [] for p in test["paraphrases"][:]) and len(set(test["cluster_id"][:])) == test.num_rows
    assert "" not in {a for answers in test["answers"][:] for a in answers}  # [""] means "no answer"
    assert sum(answers == [] for answers in test["answers"][:]) == 89


def test_paraphrase_pairs_become_clusters(built, data_dir):
    for config in ("paralex", "quora"):
        dataset_dict, _ = built[config]
        rows = [r for ds in dataset_dict.values() for r in ds.to_list()]
        cluster_of = {normalize_for_matching(r["question"]): r["cluster_id"] for r in rows}
        assert len(cluster_of) == len(rows)  # one row per distinct question
        q1 = (data_dir / f"wikianswers/{config}/val.q1").read_text(encoding="utf-8").splitlines()
        q2 = (data_dir / f"wikianswers/{config}/val.q2").read_text(encoding="utf-8").splitlines()
        for first, second in list(zip(q1, q2, strict=True))[:2000]:
            if first.strip():
                assert cluster_of[normalize_for_matching(first)] == cluster_of[normalize_for_matching(second)]
        splits_of_cluster: dict[str, set[str]] = {}
        for split, ds in dataset_dict.items():
            for cluster in ds["cluster_id"][:]:
                splits_of_cluster.setdefault(cluster, set()).add(split)
        assert all(len(s) == 1 for s in splits_of_cluster.values()), config


def test_wellformedness_rating_and_ding_filter(built):
    full, _ = built["wellformedness"]
    filtered, log = built["wellformedness_filtered"]
    for split in full:
        rows = full[split]
        assert all((r >= 0.8) == w for r, w in zip(rows["rating"][:], rows["is_well_formed"][:], strict=True))
        assert all(q.endswith("?") and not q.endswith(" ?") for q in rows["question"][:])
        kept = filtered[split]
        assert kept.num_rows == sum(rows["passes_question_filter"][:])
        assert all(5 <= n <= 12 for n in kept["num_terms"][:])
        assert set(kept["id"][:]) == {
            i for i, p in zip(rows["id"][:], rows["passes_question_filter"][:], strict=True) if p
        }
    assert sum(log.removed_counts.values()) == 25100 - sum(
        EXPECTED_SPLITS["wellformedness_filtered"].values()
    )


def test_seed_pairs_are_qald_questions_with_keywords(built):
    dataset_dict, _ = built["seed_pairs"]
    rows = [r for ds in dataset_dict.values() for r in ds.to_list()]
    assert len(rows) == 943  # distinct English QALD questions with keywords
    for row in rows:
        assert row["keyword_query"] == ", ".join(row["keyword_phrases"])
        assert row["keyword_query_variants"][0] == row["keyword_query"]
        assert len(set(row["keyword_query_variants"])) == len(row["keyword_query_variants"])
    # shared/data/README: for 373 questions the keyword string differs between files.
    assert sum(len(r["keyword_query_variants"]) > 1 for r in rows) > 100


def test_two_builds_are_identical(built, data_dir):
    for config in ("paralex", "seed_pairs"):
        again = load_corpus("wikianswers", config, data_dir=data_dir)
        assert {s: ds.to_list() for s, ds in again.items()} == {
            s: ds.to_list() for s, ds in built[config][0].items()
        }


def test_load_dataset_of_the_folder_equals_load_corpus(data_dir, built, tmp_path):
    import datasets

    folder = tmp_path / "wikianswers"
    folder.mkdir()
    shutil.copy(dataset_folder("wikianswers") / "README.md", folder / "README.md")
    configs = ["comqa", "wellformedness_filtered", "seed_pairs"]
    build_dataset_folder("wikianswers", out_dir=folder, data_dir=data_dir, configs=configs, progress=False)
    for config in configs:
        loaded = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "cache"))
        expected, _ = built[config]
        assert list(loaded) == list(expected)
        for split in expected:
            assert loaded[split].features == expected[split].features
            assert loaded[split].to_list() == expected[split].to_list()


# ---------------------------------------------------------------- corrupted copies
def _expect_error(data_dir, tmp_path, config: str, rel: str, content: str) -> CorpusFormatError:
    broken = data_dir_with(data_dir, tmp_path / "data", {rel: content.encode("utf-8")})
    with pytest.raises(CorpusFormatError) as info:
        load_corpus("wikianswers", config, data_dir=broken)
    assert info.value.path == rel
    return info.value


def test_truncated_comqa_json(data_dir, tmp_path):
    rel = "wikianswers/comqa/comqa_test.json"
    text = (data_dir / rel).read_text(encoding="utf-8")
    error = _expect_error(data_dir, tmp_path, "comqa", rel, text[: len(text) // 3])
    assert error.line == text[: len(text) // 3].count("\n") + 1 and "malformed JSON" in error.reason


def test_empty_comqa_test_file(data_dir, tmp_path):
    error = _expect_error(data_dir, tmp_path, "comqa", "wikianswers/comqa/comqa_test.json", "[]")
    assert error.line == 1 and "non-empty JSON list" in error.reason


def test_comqa_cluster_without_questions(data_dir, tmp_path):
    rel = "wikianswers/comqa/comqa_train.json"
    clusters = json.loads((data_dir / rel).read_text(encoding="utf-8"))
    clusters[7]["questions"] = []
    error = _expect_error(data_dir, tmp_path, "comqa", rel, json.dumps(clusters))
    assert error.line == "record 7"


def test_paralex_files_out_of_step(data_dir, tmp_path):
    rel = "wikianswers/paralex/val.q2"
    lines = (data_dir / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    error = _expect_error(
        data_dir,
        tmp_path,
        "paralex",
        "wikianswers/paralex/val.q1",
        (data_dir / "wikianswers/paralex/val.q1").read_text(encoding="utf-8") + "one more line\r\n",
    )
    assert error.line == len(lines) + 1 and "counterpart" in error.reason


def test_quora_blank_line_inside(data_dir, tmp_path):
    rel = "wikianswers/quora/val.q2"
    lines = (data_dir / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[41] = "   \n"
    error = _expect_error(data_dir, tmp_path, "quora", rel, "".join(lines))
    assert error.line == 42 and "empty line" in error.reason
    broken = data_dir_with(data_dir, tmp_path / "lenient", {rel: "".join(lines).encode("utf-8")})
    dataset_dict, log = load_corpus("wikianswers", "quora", data_dir=broken, strict=False, return_log=True)
    assert [(e.path, e.line) for e in log.errors] == [(rel, 42)]  # the pair is skipped, reported once
    lines_of_ids = {i for ds in dataset_dict.values() for i in ds["source_line"][:]}
    assert 42 not in lines_of_ids and 41 in lines_of_ids


def test_wellformedness_row_with_a_missing_column(data_dir, tmp_path):
    rel = "wikianswers/query-wellformedness/dev.tsv"
    lines = (data_dir / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[9] = lines[9].split("\t")[0] + "\n"
    lines[19] = lines[19].split("\t")[0] + "\tvery good\n"
    error = _expect_error(data_dir, tmp_path, "wellformedness", rel, "".join(lines))
    assert error.line == 10
    broken = data_dir_with(data_dir, tmp_path / "lenient", {rel: "".join(lines).encode("utf-8")})
    dataset_dict, log = load_corpus(
        "wikianswers", "wellformedness", data_dir=broken, strict=False, return_log=True
    )
    assert [(e.path, e.line) for e in log.errors] == [(rel, 10), (rel, 20)]
    assert dataset_dict["validation"].num_rows == EXPECTED_SPLITS["wellformedness"]["validation"] - 2
    assert "rating 'very good'" in log.summary()["malformed_examples"][1]
