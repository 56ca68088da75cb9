"""The ``nl2kw`` corpus built from the real files in shared/data: counts, splits, keyword split,
de-duplication, Hub folder, and errors on corrupted copies of each raw format."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from _corpus_testing import assert_card_header_is_rendered, card_split_sizes, data_dir_with

from hf_querygen.corpora import CorpusFormatError, build_dataset_folder, load_corpus
from hf_querygen.corpora._base import dataset_folder
from hf_querygen.corpora.nl2kw import CONFIGS, QALD_LANGUAGES, normalize_for_matching, split_keywords

# The counts the dataset card states (dataset_scripts/nl2kw/README.md).
EXPECTED_SPLITS = {
    "en": {"train": 5492, "validation": 615, "test": 1518},
    "de": {"train": 567, "validation": 63, "test": 157},
    "es": {"train": 535, "validation": 60, "test": 149},
    "fa": {"train": 494, "validation": 55, "test": 137},
    "fr": {"train": 555, "validation": 62, "test": 154},
    "hi_IN": {"train": 402, "validation": 45, "test": 112},
    "it": {"train": 564, "validation": 63, "test": 157},
    "nl": {"train": 536, "validation": 60, "test": 149},
    "pt": {"train": 388, "validation": 43, "test": 108},
    "pt_BR": {"train": 157, "validation": 18, "test": 44},
    "ro": {"train": 448, "validation": 50, "test": 124},
    "ru": {"train": 388, "validation": 43, "test": 108},
}
UQV100 = "query-variations/uqv100/uqv100-systemInputRun-uniqueOnly-spelledNormQueries.tsv"


@pytest.fixture(scope="module")
def built(data_dir):
    return {config: load_corpus("nl2kw", config, data_dir=data_dir, return_log=True) for config in CONFIGS}


@pytest.fixture(scope="module")
def english(built):
    dataset_dict, _ = built["en"]
    return {split: ds.to_list() for split, ds in dataset_dict.items()}


def test_normalize_for_matching():
    assert normalize_for_matching("What's the  COVID-19 origin?") == "whats the covid 19 origin"
    assert normalize_for_matching("Zürich\u00a0Straße") == "zürich strasse"  # NFKC + casefold
    # Devanagari vowel signs are combining marks, not separators: the word stays whole.
    assert normalize_for_matching("बोर्ड गेम।") == "बोर्ड गेम"
    assert normalize_for_matching("  ") == ""


def test_split_keywords_partitions_the_keyword_words():
    keywords, extractive, generative = split_keywords(
        "Give me all female Russian astronauts.", "astronaut, female, Russian, female"
    )
    assert keywords == ["astronaut", "female", "russian"]
    assert extractive == ["female", "russian"]  # no stemming: "astronauts" is not "astronaut"
    assert generative == ["astronaut"]


def test_every_config_has_the_card_counts(built):
    assert set(CONFIGS) == {"en", *QALD_LANGUAGES}
    for config, (dataset_dict, log) in built.items():
        assert {split: ds.num_rows for split, ds in dataset_dict.items()} == EXPECTED_SPLITS[config], config
        assert log.errors == []
    assert card_split_sizes(dataset_folder("nl2kw") / "README.md") == EXPECTED_SPLITS


def test_card_header_is_the_one_the_build_writes(built):
    assert_card_header_is_rendered("nl2kw", built)


def test_qald_questions_are_deduplicated_across_editions(built, english):
    rows = [r for split in english.values() for r in split if r["source"].startswith("qald")]
    # shared/data/README: 943 distinct English QALD questions carry keywords.
    assert len(rows) == 943
    assert len({normalize_for_matching(r["nl_query"]) for r in rows}) == 943
    removed = built["en"][1].removed_counts
    assert removed["qald: repeated en questions across files/editions (latest edition kept)"] > 0
    for config in QALD_LANGUAGES:
        dataset_dict, _ = built[config]
        questions = [q for ds in dataset_dict.values() for q in ds["nl_query"][:]]
        assert len(questions) == len({normalize_for_matching(q) for q in questions}), config
        assert set(dataset_dict["train"]["language"][:]) == {config}


def test_trec_repeats_are_removed_by_title_and_description(built, english):
    rows = [r for split in english.values() for r in split]
    pairs = Counter(
        (normalize_for_matching(r["nl_query"]), normalize_for_matching(r["keyword_query"])) for r in rows
    )
    assert max(pairs.values()) == 1
    removed = built["en"][1].removed_counts
    # shared/data/README: 43 of the 50 Core17 and 23 of the 25 re-used Core18 topics repeat Robust04.
    assert removed["duplicate (nl_query, keyword_query) pair: trec-core17 repeats trec-robust04"] == 43
    assert removed["duplicate (nl_query, keyword_query) pair: trec-core18 repeats trec-robust04"] == 23
    by_id = {r["id"]: r for r in rows}
    assert (
        "trec-robust04:301" in by_id
        and by_id["trec-robust04:301"]["keyword_query"] == "International Organized Crime"
    )
    core17_kept = [r for r in rows if r["source"] == "trec-core17"]
    assert len(core17_kept) == 7  # the reworded descriptions, same topic id as in Robust04
    assert all(
        r["topic_id"] in {x["topic_id"] for x in rows if x["source"] == "trec-robust04"} for r in core17_kept
    )
    # Core18's new Washington Post topics 801-825 are not Terabyte06 topics 801-825.
    assert by_id["trec-core18:801"]["topic_id"] != by_id["trec-terabyte:801"]["topic_id"]


def test_web_topic_quirks_and_uqv100_descriptions(english):
    by_id = {r["id"]: r for split in english.values() for r in split}
    assert by_id["trec-web:296"]["nl_query"] == "Where can I recycle lead acid batteries?"
    assert (
        by_id["trec-web:269"]["nl_query"]
        == "Find information about Marshall County Schools in West Virginia."
    )
    # UQV100 row "CW12|201-4|UQV100.001|slider-8939|1|4.390909091|1\tamazon raspberry pi": sub-topic 4 of 201.
    row = by_id["uqv100:201-4:slider-8939"]
    assert row["keyword_query"] == "amazon raspberry pi" and row["topic_id"] == "trec-web:201"
    assert row["nl_query"] != by_id["trec-web:201"]["nl_query"]
    assert sum(r["query_count"] for r in by_id.values() if r["source"] == "uqv100") <= 10835


def test_epic_qa_questions_share_their_covid_topic(english):
    rows = [r for split in english.values() for r in split]
    covid_topic_of_query = {
        normalize_for_matching(r["keyword_query"]): r["topic_id"] for r in rows if r["source"] == "trec-covid"
    }
    epic = [r for r in rows if r["source"] == "epic-qa"]
    assert epic and any(r["topic_id"].startswith("trec-covid:") for r in epic)
    for row in epic:
        expected = covid_topic_of_query.get(normalize_for_matching(row["keyword_query"]))
        assert row["topic_id"] == (expected or f"epic-qa:{row['id'].split(':')[1]}")


def test_keyword_fields_follow_the_normalised_query(english):
    shares = []
    for rows in english.values():
        for row in rows:
            source_words = set(normalize_for_matching(row["nl_query"]).split())
            assert row["keywords"] == list(
                dict.fromkeys(normalize_for_matching(row["keyword_query"]).split())
            )
            assert row["extractive_keywords"] == [k for k in row["keywords"] if k in source_words]
            assert row["generative_keywords"] == [k for k in row["keywords"] if k not in source_words]
            shares.append((len(row["extractive_keywords"]), len(row["keywords"])))
    share = sum(e for e, _ in shares) / sum(n for _, n in shares)
    assert 0.5 < share < 0.75  # measured 0.6245 (the paper's Baidu corpus: 0.55)


def test_splits_are_grouped_by_topic_with_liu_fractions(built):
    for config, (dataset_dict, _) in built.items():
        topics = {split: set(ds["topic_id"][:]) for split, ds in dataset_dict.items()}
        assert not topics["train"] & topics["validation"], config
        assert not topics["train"] & topics["test"], config
        assert not topics["validation"] & topics["test"], config
        n_topics = sum(len(t) for t in topics.values())
        assert len(topics["test"]) == round(0.2 * n_topics), config
        assert len(topics["validation"]) == round(0.1 * (n_topics - len(topics["test"]))), config


def test_two_builds_are_identical(data_dir, english):
    from hf_querygen.corpora import _qald

    _qald._cached_entries.cache_clear()  # a real second parse, not the cached one
    again = load_corpus("nl2kw", "en", data_dir=data_dir)
    assert {split: ds.to_list() for split, ds in again.items()} == english


def test_load_dataset_of_the_folder_equals_load_corpus(data_dir, built, tmp_path):
    import datasets

    folder = tmp_path / "nl2kw"
    folder.mkdir()
    shutil.copy(dataset_folder("nl2kw") / "README.md", folder / "README.md")
    build_dataset_folder("nl2kw", out_dir=folder, data_dir=data_dir, configs=["en", "hi_IN"], progress=False)
    for config in ("en", "hi_IN"):
        loaded = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "cache"))
        expected, _ = built[config]
        assert list(loaded) == list(expected)
        for split in expected:
            assert loaded[split].features == expected[split].features
            assert loaded[split].to_list() == expected[split].to_list()


# ---------------------------------------------------------------- corrupted copies
def _read(data_dir, rel: str) -> str:
    return (data_dir / rel).read_text(encoding="utf-8")


def _expect_error(data_dir, tmp_path, rel: str, content: str, config: str = "en") -> CorpusFormatError:
    broken = data_dir_with(data_dir, tmp_path / "data", {rel: content.encode("utf-8")})
    with pytest.raises(CorpusFormatError) as info:
        load_corpus("nl2kw", config, data_dir=broken)
    assert info.value.path == rel
    return info.value


def test_sgml_topic_without_closing_tag(data_dir, tmp_path):
    rel = "trec-topics/topics.robust04.txt"
    text = _read(data_dir, rel)
    cut = text.rfind("</top>")
    error = _expect_error(data_dir, tmp_path, rel, text[:cut])
    assert error.line == text[: text.rfind("<top>")].count("\n") + 1
    assert "closing </top>" in str(error) and f"{rel}:{error.line}" in str(error)


def test_sgml_topic_without_title(data_dir, tmp_path):
    rel = "trec-topics/topics.core17.txt"
    text = _read(data_dir, rel)
    start = text.index("<title>")
    error = _expect_error(data_dir, tmp_path, rel, text[:start] + text[text.index("<desc>", start) :])
    assert error.line == text[: text.index("<top>")].count("\n") + 1 and "<title>" in error.reason


def test_topic_files_without_topics(data_dir, tmp_path):
    error = _expect_error(
        data_dir, tmp_path / "sgml", "trec-topics/topics.adhoc.51-100.txt", "not a topic file\n"
    )
    assert error.line == 1 and "no <top>" in error.reason
    error = _expect_error(data_dir, tmp_path / "xml", "trec-topics/topics.covid-round5.xml", "<topics/>")
    assert error.line == 1 and "no <topic>" in error.reason


def test_truncated_web_track_xml(data_dir, tmp_path):
    rel = "trec-topics/topics.web.201-250.txt"
    text = _read(data_dir, rel)
    half = text[: len(text) // 2]
    error = _expect_error(data_dir, tmp_path, rel, half)
    assert "malformed XML" in error.reason and isinstance(error.line, int) and error.line >= half.count("\n")


def test_uqv100_row_with_a_missing_column(data_dir, tmp_path):
    lines = (data_dir / UQV100).read_text(encoding="utf-8-sig").splitlines(keepends=True)
    lines[99] = lines[99].split("\t")[0] + "\n"
    error = _expect_error(data_dir, tmp_path, UQV100, "\ufeff" + "".join(lines))
    assert error.line == 100


def test_bad_epic_qa_json(data_dir, tmp_path):
    rel = "trec-topics/topics.epidemic-qa.expert.primary.json"
    text = _read(data_dir, rel)
    error = _expect_error(data_dir, tmp_path, rel, text.replace('"query":', '"query"', 1))
    assert error.line == text[: text.index('"query":')].count("\n") + 1 and "JSON" in error.reason


def test_qald_xml_question_without_id(data_dir, tmp_path):
    rel = "qald/2/data/dbpedia-train.xml"
    text = _read(data_dir, rel)
    target = '<question id="3" '
    error = _expect_error(data_dir, tmp_path, rel, text.replace(target, "<question "), config="de")
    assert error.line == text[: text.index(target)].count("\n") + 1 and "id" in error.reason


def test_qald_json_record_without_languages(data_dir, tmp_path):
    rel = "qald/8/data/qald-8-test-multilingual.json"
    data = json.loads(_read(data_dir, rel))
    del data["questions"][5]["question"]
    error = _expect_error(data_dir, tmp_path, rel, json.dumps(data), config="fr")
    assert error.line == "questions[5]"


def test_lenient_mode_skips_and_counts(data_dir, tmp_path, built):
    lines = (data_dir / UQV100).read_text(encoding="utf-8-sig").splitlines(keepends=True)
    dropped_id = "uqv100:" + lines[0].split("|")[1] + ":" + lines[0].split("|")[3]
    lines[0] = lines[0].replace("|", ";")
    broken = data_dir_with(data_dir, tmp_path / "data", {UQV100: "".join(lines).encode("utf-8")})
    dataset_dict, log = load_corpus("nl2kw", "en", data_dir=broken, strict=False, return_log=True)
    assert len(log.errors) == 1 and log.errors[0].line == 1 and log.summary()["skipped_malformed"] == 1
    ids = {i for ds in dataset_dict.values() for i in ds["id"][:]}
    expected_ids = {i for ds in built["en"][0].values() for i in ds["id"][:]}
    assert expected_ids - ids == {dropped_id}


def test_a_changed_data_dir_is_parsed_again(data_dir, tmp_path, built):
    rel = "qald/9/data/qald-9-test-multilingual.json"
    data = json.loads(_read(data_dir, rel))
    for entry in data["questions"][0]["question"]:
        if entry["language"] == "de":
            entry["keywords"] = "geänderte, Schlüsselwörter"
    changed = data_dir_with(data_dir, tmp_path / "data", {rel: json.dumps(data).encode("utf-8")})
    rebuilt = load_corpus("nl2kw", "de", data_dir=changed)
    keywords = {k for ds in rebuilt.values() for k in ds["keyword_query"][:]}
    assert "geänderte, Schlüsselwörter" in keywords
    assert "geänderte, Schlüsselwörter" not in {
        k for ds in built["de"][0].values() for k in ds["keyword_query"][:]
    }
