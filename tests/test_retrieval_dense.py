"""The dense field of an index and the dense / hybrid rankers (a tiny random BERT as the embedder)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from _dense_toy import TEXTS, tiny_bert

from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.retrieval import Index
from hf_querygen.retrieval import dense as dense_field
from hf_querygen.retrieval.params import parse_params, ranker_params

pytest.importorskip("sentence_transformers", reason="needs the [pretrained] extra")

IDS = [f"d{i}" for i in range(len(TEXTS))]
QUERIES = ["apple pie", "sour juice", "garden tree", "market price of fruit", "sweet"]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    from hf_querygen.pretrained import SentenceEmbedder

    return SentenceEmbedder(tiny_bert(tmp_path_factory.mktemp("bert") / "tiny"), device="cpu")


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    folder = tmp_path_factory.mktemp("index") / "idx"
    cache = tmp_path_factory.mktemp("cache")
    index = Index.from_texts(
        TEXTS, ids=IDS, path=folder, embedder=embedder, show_progress=False, embedding_cache=cache
    )
    return index, folder


def _brute_force(matrix, query, k):
    scores = matrix.astype(np.float32) @ query
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return order, scores[order]


def test_the_field_is_stored_listed_and_reopened(built, embedder):
    index, folder = built
    meta = json.loads((folder / "index.json").read_text())
    entry = meta["dense"]
    assert entry["dimension"] == 16 and entry["normalized"] is True and entry["dtype"] == "float32"
    assert entry["model_id"] == embedder.describe()["model_id"]
    assert entry["texts_fingerprint"] == dense_field.texts_fingerprint(TEXTS)
    assert dense_field.EMBEDDINGS_FILE in meta["files"]
    reopened = Index.open(folder, embedder=embedder)
    assert isinstance(reopened.dense.matrix, np.memmap)
    np.testing.assert_array_equal(np.asarray(reopened.dense.matrix), embedder.encode(TEXTS))


@pytest.mark.parametrize("block", [1, 5, 65_536])
def test_dense_equals_brute_force_numpy(built, embedder, block):
    index, _ = built
    matrix = np.asarray(index.dense.matrix)
    for query in QUERIES:
        vector = embedder.encode([query])[0]
        rows, scores = _brute_force(matrix, vector, 5)
        hits = index.search(query, k=5, ranker="dense", block=block)
        assert [h.row for h in hits] == rows.tolist()
        assert [h.id for h in hits] == [IDS[r] for r in rows]
        np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-5, atol=1e-6)
    # one batch of query embeddings: the same order (scores equal to float32 rounding of the encoder)
    batch = index.search_batch(QUERIES, k=5, ranker="dense", threads=2)
    for hits, query in zip(batch, QUERIES, strict=True):
        single = index.search(query, k=5, ranker="dense")
        assert [h.row for h in hits] == [h.row for h in single]
        np.testing.assert_allclose([h.score for h in hits], [h.score for h in single], rtol=1e-5)
    np.testing.assert_allclose(
        index.score(QUERIES[0], ranker="dense"), matrix @ embedder.encode([QUERIES[0]])[0], rtol=1e-5
    )


def test_dense_top_k_breaks_ties_by_row():
    matrix = np.zeros((10, 4), dtype=np.float32)
    matrix[:, 0] = [0.5, 1.0, 0.5, 1.0, 0.2, 1.0, 0.5, 0.0, 1.0, 0.5]
    for block in (1, 3, 100):
        ((rows, scores),) = dense_field.dense_top_k(matrix, np.array([[1.0, 0, 0, 0]]), 5, block)
        assert rows.tolist() == [1, 3, 5, 8, 0] and scores.tolist() == [1, 1, 1, 1, 0.5]


def test_float16_field_matches_float32(tmp_path, embedder):
    index = Index.from_texts(
        TEXTS, embedder=embedder, dense_dtype="float16", show_progress=False, embedding_cache=False
    )
    assert index.dense.matrix.dtype == np.float16
    reference = embedder.encode(TEXTS).astype(np.float16).astype(np.float32)
    vector = embedder.encode(["apple pie"])[0]
    rows, _ = _brute_force(reference, vector, 4)
    assert [h.row for h in index.search("apple pie", k=4, ranker="dense")] == rows.tolist()


def _hand_hybrid(index, embedder, query, k, depth, fusion, alpha=0.5, rrf_k=60.0):
    """RRF / convex fusion written out for one query, from the two first-stage lists (each of
    max(depth, k) documents, so that k can be filled)."""
    depth = max(depth, k)
    vector = embedder.encode([query])[0]
    matrix = np.asarray(index.dense.matrix)
    dense_all = matrix @ vector
    dense_list = [int(r) for r in np.lexsort((np.arange(len(dense_all)), -dense_all))[:depth]]
    bm25_list = [h.row for h in index.search(query, k=depth, ranker="bm25")]
    union = sorted(set(dense_list) | set(bm25_list))
    exact_bm25 = index.score(query, rows=union, ranker="bm25")
    scores = {}
    for j, row in enumerate(union):
        if fusion == "rrf":
            s = 0.0
            for ranked in (bm25_list, dense_list):
                if row in ranked:
                    s += 1.0 / (rrf_k + ranked.index(row) + 1)
        else:
            dense_values = [float(dense_all[r]) for r in union]
            d_lo, d_hi = min(dense_values), max(dense_values)
            b_lo, b_hi = float(min(exact_bm25)), float(max(exact_bm25))
            d = (dense_all[row] - d_lo) / (d_hi - d_lo) if d_hi > d_lo else 0.0
            b = (exact_bm25[j] - b_lo) / (b_hi - b_lo) if b_hi > b_lo else 0.0
            s = alpha * d + (1 - alpha) * b
        scores[row] = s
    ranked = sorted(scores, key=lambda r: (-scores[r], r))[:k]
    return ranked, [scores[r] for r in ranked]


@pytest.mark.parametrize("fusion,alpha", [("rrf", 0.5), ("convex", 0.5), ("convex", 0.8)])
def test_hybrid_fusion_against_a_hand_computation(built, embedder, fusion, alpha):
    index, _ = built
    for query in QUERIES:
        for k in (3, 6):
            hits = index.search(query, k=k, ranker="hybrid", fusion=fusion, alpha=alpha, depth=4)
            rows, scores = _hand_hybrid(index, embedder, query, k, 4, fusion, alpha)
            assert [h.row for h in hits] == rows, query
            np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-5, atol=1e-7)
    batch = index.search_batch(QUERIES, k=6, ranker="hybrid", threads=2, fusion=fusion, alpha=alpha, depth=4)
    assert [[h.row for h in hits] for hits in batch] == [
        [h.row for h in index.search(q, k=6, ranker="hybrid", fusion=fusion, alpha=alpha, depth=4)]
        for q in QUERIES
    ]


def test_hybrid_with_no_matching_term_is_the_dense_order(built):
    index, _ = built
    hits = index.search("fruit", k=3, ranker="hybrid", fusion="convex", alpha=0.3)
    assert [h.row for h in hits] == [h.row for h in index.search("fruit", k=3, ranker="dense")]
    assert index.search("   ", ranker="dense") == [] and index.search("", ranker="hybrid") == []


def test_parameters_go_through_the_params_layer(built):
    index, _ = built
    assert ranker_params("hybrid", {})["fusion"] == "rrf"
    assert parse_params("hybrid", ["fusion=convex", "alpha=0.25"]) == {"fusion": "convex", "alpha": 0.25}
    for bad, message in (
        ({"fusion": "max"}, "fusion must be one of 'rrf', 'convex'"),
        ({"alpha": 1.5}, "alpha must be a finite number >= 0 and <= 1"),
        ({"rrf_k": 0}, "rrf_k must be"),
        ({"depth": 0}, "depth must be an integer >= 1"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            index.search("apple", ranker="hybrid", **bad)
    with pytest.raises(InvalidInputError, match="block must be an integer >= 1"):
        index.search("apple", ranker="dense", block=0)
    with pytest.raises(InvalidInputError, match="has no dense field"):
        Index.from_texts(TEXTS, show_progress=False).search("apple", ranker="dense")
    with pytest.raises(InvalidInputError, match="hybrid scores depend"):
        index.score("apple", ranker="hybrid")
    with pytest.raises(InvalidInputError, match="dense_dtype must be one of"):
        Index.from_texts(TEXTS, embedder=index.dense.embedder, dense_dtype="int8", show_progress=False)


def test_tampered_embeddings_are_named(built, tmp_path):
    _, folder = built
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    path = copy / dense_field.EMBEDDINGS_FILE
    array = np.load(path)
    array[3, 2] += 0.5
    np.save(path, array)
    with pytest.raises(ModelFolderError, match="embeddings.npy is not the one this index was built with"):
        Index.open(copy)
    path.unlink()
    with pytest.raises(ModelFolderError, match="embeddings.npy"):
        Index.open(copy)


def test_another_model_or_dimension_is_refused_for_queries(built, tmp_path):
    from hf_querygen.pretrained import SentenceEmbedder

    _, folder = built
    wider = SentenceEmbedder(tiny_bert(tmp_path / "wide", hidden=24), device="cpu")
    with pytest.raises(InvalidInputError, match="dimension is 24.*dimension=16"):
        Index.open(folder, embedder=wider)
    other = SentenceEmbedder(tiny_bert(tmp_path / "other", seed=1), device="cpu")
    with pytest.raises(
        InvalidInputError, match="model_id is .*other.*queries must be embedded with the same"
    ):
        Index.open(folder, embedder=other)


def test_an_interrupted_encoding_resumes_to_the_same_array(tmp_path, embedder):
    class Failing:
        """The embedder, failing on its third chunk."""

        def __init__(self):
            self.calls = 0

        def describe(self):
            return embedder.describe()

        def encode(self, texts, batch_size=64):
            self.calls += 1
            if self.calls == 3:
                raise RuntimeError("interrupted")
            return embedder.encode(texts)

    failing = Failing()
    with pytest.raises(RuntimeError, match="interrupted"):
        dense_field.encode_documents(failing, TEXTS, chunk_size=3, cache=tmp_path, show_progress=False)
    (key,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert sorted(p.name for p in key.glob("chunk-*.npy")) == ["chunk-000000.npy", "chunk-000001.npy"]

    class Counting(Failing):
        def encode(self, texts, batch_size=64):
            self.calls += 1
            return embedder.encode(texts)

    counting = Counting()
    resumed = dense_field.encode_documents(counting, TEXTS, chunk_size=3, cache=tmp_path, show_progress=False)
    assert counting.calls == 2  # chunks 2 and 3 only
    np.testing.assert_array_equal(resumed, embedder.encode(TEXTS))
    # a damaged chunk is encoded again
    (key / "chunk-000000.npy").write_bytes(b"not an array")
    again = dense_field.encode_documents(counting, TEXTS, chunk_size=3, cache=tmp_path, show_progress=False)
    assert counting.calls == 3
    np.testing.assert_array_equal(again, resumed)


def test_ann_recall_against_exact(built):
    pytest.importorskip("faiss", reason="needs the [ann] extra")
    index, _ = built
    exact = index.search_batch(QUERIES, k=5, ranker="dense")
    # a 12-document graph searched with ef_search 32 visits every node, 4 lists probed out of 4 are all
    # of them: the ANN answers are exact
    for kind, settings in (("hnsw", {"m": 8, "ef_search": 32}), ("ivf", {"nlist": 4, "nprobe": 4})):
        index.build_ann(kind, **settings)
        approximate = index.search_batch(QUERIES, k=5, ranker="dense", approximate=True)
        assert [[h.row for h in hits] for hits in approximate] == [[h.row for h in hits] for hits in exact]
    hybrid = index.search("apple pie", k=5, ranker="hybrid", approximate=True)
    assert [h.row for h in hybrid] == [h.row for h in index.search("apple pie", k=5, ranker="hybrid")]
    with pytest.raises(InvalidInputError, match="kind 'ivf' takes nlist, nprobe"):
        index.build_ann("ivf", m=8)


def test_cli_build_with_embed_and_search(tmp_path, embedder, capsys, monkeypatch):
    from hf_querygen.cli import main

    monkeypatch.setenv("HF_QUERYGEN_CACHE", str(tmp_path / "cache"))

    docs = tmp_path / "docs.tsv"
    docs.write_text("".join(f"{i}\t{t}\n" for i, t in zip(IDS, TEXTS, strict=True)))
    model = str(embedder.backbone.path)
    assert main(["index", "build", str(docs), str(tmp_path / "idx"), "--embed", model]) == 0
    assert (
        main(
            [
                "index",
                "search",
                str(tmp_path / "idx"),
                "apple pie",
                "--ranker",
                "hybrid",
                "-k",
                "3",
                "--param",
                "fusion=convex",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert list((tmp_path / "cache" / "embeddings").glob("*/chunk-000000.npy"))  # the encoding cache
    index = Index.open(tmp_path / "idx")
    expected = index.search("apple pie", k=3, ranker="hybrid", fusion="convex")
    assert [h["id"] for h in out["hits"]] == [h.id for h in expected]
