"""ShardedIndex: shards searched with the collection's summed statistics give one index's results."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_querygen.errors import InvalidInputError, ModelFolderError, OutputExistsError
from hf_querygen.retrieval import Index
from hf_querygen.retrieval import stats as stats_module
from hf_querygen.retrieval.sharded import (
    FIELDNORMS,
    SHARDS_FILE,
    ShardedIndex,
    build_sharded_index,
    fieldnorm_codes,
    shard_ranges,
)

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]

collections = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=24).map(" ".join), min_size=1, max_size=40
)
queries = st.lists(st.sampled_from(WORDS + ["unseen"]), min_size=1, max_size=5).map(" ".join)


def _in_memory(texts, ids=None):
    return Index.from_texts(texts, ids=ids, show_progress=False, num_threads=1)


def _tuples(hits):
    return [(h.id, h.score, h.rank, h.row) for h in hits]


def _tie_at(scores: list[float], cut: int) -> bool:
    """Whether the cut after the first ``cut`` of these (descending) scores splits a tie."""
    return 0 < cut < len(scores) and scores[cut - 1] == scores[cut]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=collections,
    num_shards=st.integers(1, 4),
    query_list=st.lists(queries, min_size=1, max_size=4),
    k=st.integers(1, 45),
    depth=st.integers(1, 12),
    with_ids=st.booleans(),
    pair_table=st.booleans(),
)
def test_sharded_results_identical_to_one_index(
    texts, num_shards, query_list, k, depth, with_ids, pair_table
):
    num_shards = min(num_shards, len(texts))
    ids = [f"d{i}" for i in range(len(texts))] if with_ids else None
    # a low threshold puts every term in the pair table, so window counts come from it (as for frequent
    # terms of a large collection) in the single index and in the shards alike
    with mock.patch.object(stats_module, "PAIR_MIN_CF", 1 if pair_table else stats_module.PAIR_MIN_CF):
        single = _in_memory(texts, ids)
        # in memory, as build_sharded_index cuts them (its folders: test_folder_checks, the Ray tests)
        sharded = ShardedIndex(
            [
                _in_memory(texts[start:end], ids[start:end] if ids else None)
                for start, end in shard_ranges(len(texts), num_shards)
            ],
            ids=with_ids,
        )
    assert len(sharded) == len(single) and len(sharded.shards) == num_shards
    for query in query_list:
        first_pass = [h.score for h in single.search(query, k=len(single))]  # tantivy BM25, all matching
        settings_list = [
            ("bm25", {}, not _tie_at(first_pass, k)),
            ("bm25", {"exact": True}, True),
            ("bm25", {"k1": 0.9, "b": 0.4}, True),
            ("ql", {}, True),
            ("ql", {"mu": 10.0}, True),
            ("sdm", {"depth": None}, True),
            ("sdm", {}, not _tie_at(first_pass, min(max(1000, k), len(single)))),
            ("sdm", {"depth": depth, "window": 3}, not _tie_at(first_pass, min(max(depth, k), len(single)))),
        ]
        for ranker, params, comparable in settings_list:
            if not comparable:  # a tie at tantivy's cut-off: one index keeps its own document order there
                continue
            expected = _tuples(single.search(query, k=k, ranker=ranker, **params))
            got = _tuples(sharded.search(query, k=k, ranker=ranker, **params))
            assert got == expected, (query, ranker, params)
    batch = sharded.search_batch(query_list, k=k, ranker="sdm", threads=2, depth=None)
    assert [_tuples(h) for h in batch] == [
        _tuples(sharded.search(q, k=k, ranker="sdm", depth=None)) for q in query_list
    ]


def test_tantivy_arithmetic_on_long_documents():
    """Above 40 tokens tantivy quantises lengths: the sharded first pass follows its codes exactly."""
    rng = np.random.default_rng(3)
    texts = [" ".join(rng.choice(WORDS[:4], size=int(n))) for n in rng.integers(30, 400, size=60)]
    single = _in_memory(texts)
    sharded = ShardedIndex([_in_memory(texts[:25]), _in_memory(texts[25:])], ids=False)
    for query in ["alpha", "beta gamma", "alpha alpha delta beta"]:
        assert _tuples(sharded.search(query, k=len(texts))) == _tuples(single.search(query, k=len(texts)))


def test_fieldnorm_codes():
    assert list(fieldnorm_codes(np.arange(41))) == list(range(41))
    assert FIELDNORMS[40] == 40 and FIELDNORMS[41] == 42 and FIELDNORMS[255] == 2013265944
    assert fieldnorm_codes(np.array([41, 43, 2**31]))[0] == 40
    assert list(fieldnorm_codes(np.array([41, 43, 2**31]))) == [40, 41, 255]


def test_shard_ranges():
    assert shard_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_ranges(2, 2) == [(0, 1), (1, 2)]
    with pytest.raises(InvalidInputError, match="more than the 2 documents"):
        shard_ranges(2, 3)
    with pytest.raises(InvalidInputError, match="num_shards"):
        shard_ranges(5, 0)


def test_folder_checks(tmp_path):
    texts = ["a b", "b c", "c d"]
    folder = tmp_path / "idx"
    build_sharded_index(texts, folder, 2, show_progress=False, num_threads=1)
    with pytest.raises(OutputExistsError):
        build_sharded_index(texts, folder, 2, show_progress=False, num_threads=1)
    again = build_sharded_index(texts[:2], folder, 2, overwrite=True, show_progress=False, num_threads=1)
    assert len(again) == 2
    manifest = json.loads((folder / SHARDS_FILE).read_text())
    manifest["num_docs"] = 7
    (folder / SHARDS_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match="not 7"):
        ShardedIndex.open(folder)
    (folder / SHARDS_FILE).unlink()
    with pytest.raises(ModelFolderError, match="shards.json is missing"):
        ShardedIndex.open(folder)
    with pytest.raises(InvalidInputError, match="duplicate|unique"):
        build_sharded_index(
            texts, tmp_path / "dup", 2, ids=["x", "x", "y"], show_progress=False, num_threads=1
        )
    assert not (tmp_path / "dup").exists()
