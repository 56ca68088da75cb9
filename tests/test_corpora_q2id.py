"""The ``q2id`` corpus: counts of every config from the real data (as the dataset card states),
splits, determinism, the sentence splitters, statistics, the Hub-ready folder, and errors on
corrupted copies of each raw format (SemEval XML 2015/2016, test CSV, NFCorpus TSV/qrels)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from hf_querygen.corpora import (
    CorpusFormatError,
    ParseLog,
    build_dataset_folder,
    load_corpus,
    normalize_for_matching,
    q2id,
)
from hf_querygen.corpora import _q2id_nfcorpus as nfcorpus
from hf_querygen.corpora import _q2id_records as q2id_records
from hf_querygen.corpora import _q2id_semeval as semeval
from hf_querygen.corpora._base import collapse_whitespace, dataset_folder

# The numbers written in dataset_scripts/q2id/README.md.
SPLIT_SIZES = {
    "all": {"train": 1378, "validation": 100, "test": 258},
    "semeval": {"train": 1224, "validation": 87, "test": 221},
    "nfcorpus": {"train": 154, "validation": 13, "test": 37},
}
QUERIES_PER_SOURCE = {
    "semeval2016-original": 159,
    "semeval2016-related": 1206,
    "semeval2015": 167,
    "nfcorpus": 204,
}
REMOVED = {
    "semeval2016-original: no relevant document (removed as in the paper, Sec. 3.2)": 28,
    "semeval2016-related: empty description": 31,
    "semeval2016-related: no relevant document (removed as in the paper, Sec. 3.2)": 109,
    "semeval2015: no relevant document (removed as in the paper, Sec. 3.2)": 49,
    "duplicate question: semeval2016-related copy of a semeval2016-related question": 462,
    "duplicate question: semeval2016-related copy of a semeval2016-original question": 46,
    "duplicate question: semeval2015 copy of a semeval2016-original question": 82,
    "duplicate question: semeval2015 copy of a semeval2016-related question": 2,
}
CONFIGS = tuple(SPLIT_SIZES)


@pytest.fixture(scope="module")
def built(data_dir):
    return {config: load_corpus("q2id", config, data_dir=data_dir, return_log=True) for config in CONFIGS}


# ---------------------------------------------------------------- the real corpus
@pytest.mark.parametrize("config", CONFIGS)
def test_split_sizes_and_build_log_match_the_card(built, config):
    dataset_dict, log = built[config]
    assert {split: ds.num_rows for split, ds in dataset_dict.items()} == SPLIT_SIZES[config]
    assert log.errors == []
    assert dict(log.removed_counts) == REMOVED


def test_sources_per_config_and_splits_shared_across_configs(built):
    ids = {config: {s: set(built[config][0][s]["id"]) for s in q2id.SPLITS} for config in CONFIGS}
    sources = {}
    for split in q2id.SPLITS:
        assert ids["semeval"][split] | ids["nfcorpus"][split] == ids["all"][split]
        assert not ids["semeval"][split] & ids["nfcorpus"][split]
        for source in built["all"][0][split]["source"]:
            sources[source] = sources.get(source, 0) + 1
    assert sources == QUERIES_PER_SOURCE
    all_ids = [i for split in q2id.SPLITS for i in ids["all"][split]]
    assert len(all_ids) == len(set(all_ids)) == sum(QUERIES_PER_SOURCE.values())


def test_quadruples_follow_the_paper(built):
    dataset_dict = built["all"][0]
    keys = set()
    for split in q2id.SPLITS:
        for example in dataset_dict[split]:
            assert example["query"] and example["description"] and example["relevant_documents"]
            relevant = {d["label"] for d in example["relevant_documents"]}
            irrelevant = {d["label"] for d in example["irrelevant_documents"]}
            if example["source"] == "nfcorpus":
                assert example["query_type"] == "title"
                assert relevant <= {"direct link", "indirect link"} and irrelevant <= {"marginal"}
            else:
                assert example["query_type"] == "question"
                assert relevant == {"Good"} and "Good" not in irrelevant
            for document in example["relevant_documents"] + example["irrelevant_documents"]:
                assert document["sentences"] and all(s and s == s.strip() for s in document["sentences"])
            key = (
                normalize_for_matching(example["query"]),
                normalize_for_matching(example["description"]),
            )
            assert key not in keys, f"duplicate question {example['id']}"
            keys.add(key)


def test_features_are_explicit_lists(built):
    from datasets import List, Value

    features = built["all"][0]["train"].features
    assert features == q2id.q2id_features()
    document = features["relevant_documents"]
    assert isinstance(document, List) and document.feature["sentences"] == List(Value("string"))


def test_statistics_match_the_card_table(built):
    card = (dataset_folder("q2id") / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in card.splitlines():
        match = re.match(r"\| `(\w+)` \|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    columns = {config: index for index, config in enumerate(CONFIGS)}
    for config in CONFIGS:
        ours = q2id.stats(built[config][0])
        for key, paper in q2id.PAPER_TABLE2.items():
            assert rows[key][columns[config]] == str(ours[key]), (config, key)
            assert rows[key][len(CONFIGS)] == str(paper), key


def test_stats_on_a_hand_made_dataset():
    import datasets

    def document(n_sentences):
        return {"doc_id": "d", "label": "x", "sentences": ["s"] * n_sentences}

    rows = [
        {
            "id": "a",
            "source": "semeval2015",
            "source_split": "dev",
            "query_type": "question",
            "query": "visa in 2015 for Qatar",
            "description": "one two three four",
            "relevant_documents": [document(1), document(3)],
            "irrelevant_documents": [],
        },
        {
            "id": "b",
            "source": "nfcorpus",
            "source_split": "dev",
            "query_type": "title",
            "query": "café 42",
            "description": "a b",
            "relevant_documents": [document(2)],
            "irrelevant_documents": [document(5), document(1), document(3)],
        },
    ]
    dataset_dict = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(rows[:1], features=q2id.q2id_features()),
            "test": datasets.Dataset.from_list(rows[1:], features=q2id.q2id_features()),
        }
    )
    stats = q2id.stats(dataset_dict)
    assert stats["queries"] == 2 and stats["train"] == 1 and stats["test"] == 1
    assert stats["avg_query_words"] == 2.5  # "visa in for qatar" (digits dropped), "caf" (non-ASCII dropped)
    assert stats["avg_relevant_documents"] == 1.5 and stats["avg_irrelevant_documents"] == 1.5
    assert stats["relevant_documents"] == 3 and stats["irrelevant_documents"] == 3
    assert (
        stats["avg_relevant_document_sentences"] == 2.0 and stats["avg_irrelevant_document_sentences"] == 3.0
    )
    assert stats["avg_description_words"] == 3.0
    assert stats["queries_without_irrelevant_documents"] == 1
    assert stats["queries_per_source"] == {"nfcorpus": 1, "semeval2015": 1}


def test_split_fractions_give_the_papers_test_and_validation_sizes():
    from hf_querygen.corpora import grouped_split

    for n in (716, 1736, 5358):
        assignment = grouped_split([f"q{i}" for i in range(n)], *q2id.split_fractions(n), salt="x")
        assert (assignment.count("test"), assignment.count("validation")) == (258, 100)
    small = grouped_split([f"q{i}" for i in range(300)], *q2id.split_fractions(300), salt="x")
    assert (small.count("test"), small.count("validation")) == (14, 6)  # the paper's proportions


def same_rows(left, right) -> bool:
    """Same features and the same rows (compared as Arrow tables, whatever their chunking)."""
    return left.features == right.features and left.data.table.replace_schema_metadata(None).equals(
        right.data.table.replace_schema_metadata(None)
    )


def test_hub_folder_loads_like_load_corpus(built, data_dir, tmp_path):
    """A folder written now, and the checked-out folder when its parquet files are there (they are
    git-ignored; written earlier by another process), load with ``load_dataset`` to exactly what
    ``load_corpus`` builds; the card's YAML header states the same split sizes."""
    import datasets

    fresh = build_dataset_folder("q2id", out_dir=tmp_path / "q2id", data_dir=data_dir, progress=False)
    committed = dataset_folder("q2id")
    header = yaml.safe_load((committed / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    card_sizes = {
        info["config_name"]: {s["name"]: s["num_examples"] for s in info["splits"]}
        for info in header["dataset_info"]
    }
    assert card_sizes == SPLIT_SIZES
    built_here = (committed / "data" / "all" / "train.parquet").exists()
    for folder in (fresh, committed) if built_here else (fresh,):
        assert datasets.get_dataset_config_names(str(folder)) == list(CONFIGS)
        for config in CONFIGS:
            loaded = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "cache"))
            assert list(loaded) == list(q2id.SPLITS)
            for split, expected in built[config][0].items():
                assert same_rows(loaded[split], expected), (folder, config, split)


# ---------------------------------------------------------------- sentence splitting and words
def test_split_sentences_rules():
    text = 'Hi Dr. Smith, see e.g. the J. Doe post.. It works!! Really?\nNew line "quoted." end'
    assert q2id_records.split_sentences(text) == [
        "Hi Dr. Smith, see e.g. the J. Doe post..",
        "It works!!",
        "Really?",
        'New line "quoted."',
        "end",
    ]
    assert q2id_records.split_sentences("version 2.5 costs 8.000 QAR; www.qatarliving.com ok") == [
        "version 2.5 costs 8.000 QAR; www.qatarliving.com ok"
    ]
    assert q2id_records.split_sentences(" \n\t ") == []


@pytest.mark.parametrize(
    "text",
    [
        "a. b. c",
        "Ok..\r\n\r\nthanks  a lot!:)",
        "Mr. X. Y? (yes.) no",
        "  lead\tand trail  ",
        "one\u2028two. three",
    ],
)
def test_split_sentences_keeps_every_word(text):
    assert " ".join(q2id_records.split_sentences(text)) == collapse_whitespace(text)


def test_split_nfcorpus_document():
    text = "statin study pubmed ncbi abstract aims  num study abstract x"
    assert nfcorpus.split_nfcorpus_document(text) == [
        "statin study pubmed ncbi",
        "abstract aims num study abstract x",
    ]
    assert nfcorpus.split_nfcorpus_document("title only summary text") == ["title only summary text"]
    assert nfcorpus.split_nfcorpus_document("abstract first") == ["abstract first"]


def test_paper_words():
    words = q2id_records.paper_words("Visa 2015 for Qatar, café 3rd")
    assert words == ["visa", "for", "qatar,", "caf", "3rd"]


# ---------------------------------------------------------------- corrupted copies
def nth_index(content: bytes, needle: bytes, occurrence: int) -> int:
    index = -1
    for _ in range(occurrence):
        index = content.index(needle, index + 1)
    return index


def line_at(content: bytes, index: int) -> int:
    return content[:index].count(b"\n") + 1


def corrupted_copy(
    data_dir: Path, tmp_path: Path, relative: str, old: bytes, new: bytes, occurrence: int = 1
):
    """A data dir in ``tmp_path`` linking every raw q2id file, with ``relative`` copied and its
    ``occurrence``-th ``old`` replaced by ``new``; returns (data dir, corrupted path, line of the change)."""
    root = tmp_path / "data"
    for source in q2id.source_files(data_dir):
        target = root / source.relative_to(data_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.relative_to(data_dir).as_posix() != relative:
            target.symlink_to(source)
    content = (data_dir / relative).read_bytes()
    index = nth_index(content, old, occurrence)
    (root / relative).write_bytes(content[:index] + new + content[index + len(old) :])
    return root, root / relative, line_at(content, index)


def assert_error_at(err: pytest.ExceptionInfo, path: Path, line: int, reason: str) -> None:
    assert (Path(err.value.path), err.value.line) == (path, line)
    assert reason in err.value.reason and str(err.value).startswith(f"{path}:{line}: ")


def test_semeval2015_malformed_xml(data_dir, tmp_path):
    root, path, line = corrupted_copy(
        data_dir, tmp_path, semeval.SEMEVAL2015_XML, b"</QSubject>", b"</QSubj>", 11
    )
    with pytest.raises(CorpusFormatError) as err:
        semeval.read_semeval2015(root, ParseLog())
    assert_error_at(err, path, line, "malformed XML: mismatched tag")
    log = ParseLog(strict=False)
    records = semeval.read_semeval2015(root, log)
    assert len(records) == 10 and len(log.errors) == 1  # the questions before the break are kept


def test_semeval2015_unknown_label_in_reader_and_load_corpus(built, data_dir, tmp_path):
    # The sixth Good comment belongs to Q2603, a training query of the real build.
    assert "semeval2015/dev/Q2603" in built["semeval"][0]["train"]["id"]
    root, path, line = corrupted_copy(
        data_dir, tmp_path, semeval.SEMEVAL2015_XML, b'CGOLD="Good"', b'CGOLD="Great"', 6
    )
    with pytest.raises(CorpusFormatError) as err:
        semeval.read_semeval2015(root, ParseLog())
    assert_error_at(err, path, line, "unknown CGOLD label: 'Great'")
    log = ParseLog(strict=False)
    assert len(semeval.read_semeval2015(root, log)) == 299 and len(log.errors) == 1

    with pytest.raises(CorpusFormatError, match=re.escape(f"{path}:{line}:")):
        load_corpus("q2id", "semeval", data_dir=root)
    # Lenient: only Q2603 goes, and an independent parse of the other files gives the same rows in
    # the same splits (Q2603 comes after every test and validation query in the hash order, so
    # none of them moves): a determinism check across two parses.
    dataset_dict, log = load_corpus("q2id", "semeval", data_dir=root, strict=False, return_log=True)
    assert log.summary()["skipped_malformed"] == 1
    assert log.summary()["malformed_examples"][0].startswith(f"{path}:{line}:")
    expected = built["semeval"][0]
    assert list(dataset_dict["train"]["id"]) == [
        i for i in expected["train"]["id"] if i != "semeval2015/dev/Q2603"
    ]
    for split in ("validation", "test"):
        assert same_rows(dataset_dict[split], expected[split])


def test_semeval2015_unexpected_element(data_dir, tmp_path):
    root, path, line = corrupted_copy(
        data_dir, tmp_path, semeval.SEMEVAL2015_XML, b"<root>\r\n", b"<root>\r\n<Note/>\r\n"
    )
    with pytest.raises(CorpusFormatError) as err:
        semeval.read_semeval2015(root, ParseLog())
    assert_error_at(err, path, line + 1, "unexpected <Note> element (expected <Question>)")
    log = ParseLog(strict=False)
    assert len(semeval.read_semeval2015(root, log)) == 300 and len(log.errors) == 1


def test_semeval2016_original_question_changes_text(data_dir, tmp_path):
    relative = semeval.SEMEVAL2016_XML["train-part2"]
    content = (data_dir / relative).read_bytes()
    start = nth_index(content, b"<OrgQSubject>", 2)
    subject = content[start : content.index(b"</OrgQSubject>", start)]
    root, path, line = corrupted_copy(data_dir, tmp_path, relative, subject, subject + b" (edited)", 2)
    with pytest.raises(CorpusFormatError) as err:
        semeval.read_semeval2016_xml(root, "train-part2", ParseLog())
    first_line = line_at(content, content.index(b"<OrgQuestion "))
    assert_error_at(err, path, line - 1, f"has another subject or body than at line {first_line}")


def test_semeval2016_missing_element(data_dir, tmp_path):
    relative = semeval.SEMEVAL2016_XML["dev"]
    content = (data_dir / relative).read_bytes()
    start = nth_index(content, b"<OrgQBody>", 4)  # the fourth thread element of the first question
    body = content[start : content.index(b"</OrgQBody>", start) + len(b"</OrgQBody>")]
    root, path, _ = corrupted_copy(data_dir, tmp_path, relative, body, b"", 4)
    element_line = line_at(content, content.rindex(b"<OrgQuestion ", 0, start))
    with pytest.raises(CorpusFormatError) as err:
        semeval.read_semeval2016_xml(root, "dev", ParseLog())
    assert_error_at(
        err, path, element_line, "<OrgQuestion> must have exactly one <OrgQBody> element, found 0"
    )
    log = ParseLog(strict=False)
    originals, related = semeval.read_semeval2016_xml(root, "dev", log)
    assert (len(originals), len(related), len(log.errors)) == (50, 499, 1)
    assert len(originals[0].relevant_documents) + len(originals[0].irrelevant_documents) == 90


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (b",Good\r\n", b"\r\n", "expected 4 columns, found 3"),
        (b",Good\r\n", b",Fine\r\n", "unknown value in column 'labels': 'Fine'"),
        (b"feature,question", b"subject,question", "expected the header"),
        (b"Why finding", b'"Why "finding', "malformed CSV: ',' expected after '\"'"),
    ],
)
def test_semeval2016_test_csv(data_dir, tmp_path, old, new, reason):
    root, path, line = corrupted_copy(data_dir, tmp_path, semeval.SEMEVAL2016_TEST_CSV["related"], old, new)
    with pytest.raises(CorpusFormatError) as err:
        semeval.read_semeval2016_test_csv(root, "related", ParseLog())
    assert_error_at(err, path, line, reason)
    log = ParseLog(strict=False)
    records = semeval.read_semeval2016_test_csv(root, "related", log)
    assert len(log.errors) == 1
    comments = sum(len(r.relevant_documents) + len(r.irrelevant_documents) for r in records)
    assert comments == 6840 - (line > 1)  # a bad data row is skipped; after a bad header all rows are read


@pytest.mark.parametrize(
    ("relative", "old", "new", "reason", "errors"),
    [
        (
            "nfcorpus/dev.2-1-0.qrel",
            b"MED-2422\t",
            b"MED-99999\t",
            "judged document MED-99999 is not in nfcorpus/dev.docs",
            1,
        ),
        ("nfcorpus/test.3-2-1.qrel", b"\t0\tMED-", b"\t1\tMED-", "malformed qrels line", 1),
        ("nfcorpus/test.2-1-0.qrel", b"\t2\n", b"\t7\n", "unknown relevance level '7'", 1),
        # the title line is lost, so its description has no title either: two errors
        (
            "nfcorpus/dev.vid-titles.queries",
            b"PLAIN-2439\t",
            b"PLAIN-2439 ",
            "expected 2 tab-separated columns",
            2,
        ),
    ],
)
def test_nfcorpus_malformed_lines(data_dir, tmp_path, relative, old, new, reason, errors):
    root, path, line = corrupted_copy(data_dir, tmp_path, relative, old, new)
    split = relative.split("/")[1].split(".")[0]
    with pytest.raises(CorpusFormatError) as err:
        nfcorpus.read_nfcorpus_split(root, split, ParseLog())
    assert_error_at(err, path, line, reason)
    log = ParseLog(strict=False)
    nfcorpus.read_nfcorpus_split(root, split, log)
    assert len(log.errors) == errors


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (b"MED118\talkylphenols", "malformed id 'MED118'"),
        (b"MED-118\talkyl\xffphenols", "not valid UTF-8: byte(s) ff at column 14 (byte offset "),
    ],
)
def test_nfcorpus_malformed_document_line(data_dir, tmp_path, new, reason):
    root, path, line = corrupted_copy(data_dir, tmp_path, "nfcorpus/dev.docs", b"MED-118\talkylphenols", new)
    with pytest.raises(CorpusFormatError) as err:
        nfcorpus.read_nfcorpus_split(root, "dev", ParseLog())
    assert_error_at(err, path, line, reason)
    # Lenient: the document is skipped, so each judgment of it is an error of its own.
    judgments = sum(
        row.split("\t")[2] == "MED-118"
        for name in ("dev.2-1-0.qrel", "dev.3-2-1.qrel")
        for row in (data_dir / "nfcorpus" / name).read_text(encoding="utf-8").splitlines()
    )
    log = ParseLog(strict=False)
    records = nfcorpus.read_nfcorpus_split(root, "dev", log)
    assert judgments > 0 and len(log.errors) == 1 + judgments
    assert len(records) == 102
    assert all(d.doc_id != "MED-118" for r in records for d in r.relevant_documents + r.irrelevant_documents)


def test_nfcorpus_description_missing(data_dir, tmp_path):
    content = (data_dir / "nfcorpus/dev.vid-desc.queries").read_bytes()
    start = content.index(b"PLAIN-2449\t")
    line_bytes = content[start : content.index(b"\n", start) + 1]
    root, _, _ = corrupted_copy(data_dir, tmp_path, "nfcorpus/dev.vid-desc.queries", line_bytes, b"")
    titles = root / "nfcorpus/dev.vid-titles.queries"
    title_line = line_at(titles.read_bytes(), titles.read_bytes().index(b"PLAIN-2449\t"))
    with pytest.raises(CorpusFormatError) as err:
        nfcorpus.read_nfcorpus_split(root, "dev", ParseLog())
    assert_error_at(err, titles, title_line, "PLAIN-2449 has no line in dev.vid-desc.queries")
    log = ParseLog(strict=False)
    records = nfcorpus.read_nfcorpus_split(root, "dev", log)
    assert len(records) == 101 and "nfcorpus/dev/PLAIN-2449" not in {r.id for r in records}
