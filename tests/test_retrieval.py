"""The retrieval engine against references written independently here: a pure-Python Indri SDM
scorer over token lists that scores every document, a hand-computed SDM case, tantivy's own BM25,
and the library's normaliser; plus persistence and bad input."""

from __future__ import annotations

import json
import math
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_querygen.corpora import normalize_for_matching
from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.retrieval import Index, analyze
from hf_querygen.retrieval import stats as stats_module
from hf_querygen.retrieval.stats import CollectionStats

SMALL = {"show_progress": False, "heap_size": 15_000_000, "num_threads": 1}


# ---------------------------------------------------------------- an independent SDM reference
def reference_sdm(docs: list[list[str]], query: list[str], mu=2500.0, weights=(0.85, 0.10, 0.05), window=8):
    """Indri's SDM, straight from the definitions, for every document (pure Python, no sharing with
    the engine): #combine = mean of Dirichlet log-probabilities, P(x|C) = cf/|C| or 1/(2|C|)."""
    size = sum(len(d) for d in docs)

    def ordered(doc, a, b):
        return sum(1 for i in range(len(doc) - 1) if doc[i] == a and doc[i + 1] == b)

    def unordered(doc, a, b):
        count = 0
        for i, term in enumerate(doc):
            if term not in (a, b):
                continue
            other = b if term == a else a
            if other in doc[i + 1 : i + window]:  # the window: this position and the window-1 after it
                count += 1
        return count

    def log_p(tf, cf, length):
        p = cf / size if cf else 1 / (2 * size)
        return math.log((tf + mu * p) / (length + mu))

    pairs = list(zip(query[:-1], query[1:], strict=True))
    cf_t = {t: sum(d.count(t) for d in docs) for t in query}
    cf_o = {p: sum(ordered(d, *p) for d in docs) for p in pairs}
    cf_u = {p: sum(unordered(d, *p) for d in docs) for p in pairs}
    scores = []
    for doc in docs:
        uni = sum(log_p(doc.count(t), cf_t[t], len(doc)) for t in query) / len(query)
        if not pairs:
            scores.append(uni)
            continue
        od = sum(log_p(ordered(doc, *p), cf_o[p], len(doc)) for p in pairs) / len(pairs)
        uw = sum(log_p(unordered(doc, *p), cf_u[p], len(doc)) for p in pairs) / len(pairs)
        scores.append((weights[0] * uni + weights[1] * od + weights[2] * uw) / sum(weights))
    return scores


def random_corpus(rng: random.Random, n_docs: int, vocab: list[str], max_len: int = 30) -> list[str]:
    return [" ".join(rng.choices(vocab, k=rng.randint(1, max_len))) for _ in range(n_docs)]


@pytest.fixture(scope="module")
def corpus():
    rng = random.Random(0)
    return random_corpus(rng, 120, ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"], 30)


@pytest.fixture(scope="module")
def index(corpus):
    return Index.from_texts(corpus, ids=[f"doc{i}" for i in range(len(corpus))], **SMALL)


@pytest.mark.parametrize(
    "query",
    ["alpha beta", "beta alpha gamma", "alpha alpha", "eta zeta eta delta", "gamma", "alpha unseen beta"],
)
@pytest.mark.parametrize(
    "params",
    [{}, {"mu": 50.0, "window": 4, "weights": (0.6, 0.3, 0.1)}, {"window": 25}],  # 25: binary-search path
)
def test_sdm_equals_brute_force_reference_on_every_document(index, corpus, query, params):
    docs = [text.split() for text in corpus]
    expected = reference_sdm(docs, query.split(), **params)
    np.testing.assert_allclose(index.score(query, ranker="sdm", **params), expected, rtol=1e-12)
    # search with every document a candidate returns the reference ranking
    hits = index.search(query, k=len(corpus), ranker="sdm", depth=None, **params)
    order = sorted(range(len(docs)), key=lambda d: (-expected[d], d))
    assert [hit.row for hit in hits] == order
    np.testing.assert_allclose([hit.score for hit in hits], [expected[d] for d in order], rtol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=st.lists(st.lists(st.sampled_from("abcd"), min_size=1, max_size=12), min_size=1, max_size=8),
    query=st.lists(st.sampled_from("abcde"), min_size=1, max_size=4),
    window=st.integers(2, 5),
)
def test_sdm_fuzzed_against_reference(docs, query, window):
    index = Index.from_texts([" ".join(d) for d in docs], **SMALL)
    expected = reference_sdm(docs, query, mu=10.0, window=window)
    got = index.score(" ".join(query), ranker="sdm", mu=10.0, window=window)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from("abcd"), min_size=1, max_size=12), min_size=1, max_size=8),
    query=st.lists(st.sampled_from("abcde"), min_size=2, max_size=4),
    rows=st.lists(st.integers(0, 7), min_size=1, max_size=3),
)
def test_sdm_with_the_pair_table_on_a_few_candidates_fuzzed_against_reference(docs, query, rows):
    # every term in the pair table (min cf 1) and few candidates: tf from the candidates' own tokens,
    # cf of #1 and #uw8 from the table
    rows = [r % len(docs) for r in rows]
    with _pair_min_cf(1):
        index = Index.from_texts([" ".join(d) for d in docs], **SMALL)
    assert len(index.stats.pair_terms) == len({t for d in docs for t in d})
    expected = reference_sdm(docs, query, mu=10.0)
    got = index.score(" ".join(query), rows=rows, ranker="sdm", mu=10.0)
    np.testing.assert_allclose(got, [expected[r] for r in rows], rtol=1e-12)


class _pair_min_cf:
    """Build indexes with this pair-table threshold (Index.from_texts has no argument for it)."""

    def __init__(self, value: int):
        self.value = value

    def __enter__(self):
        self.saved, stats_module.PAIR_MIN_CF = stats_module.PAIR_MIN_CF, self.value

    def __exit__(self, *exc):
        stats_module.PAIR_MIN_CF = self.saved


def test_pair_table_counts_equal_exact_window_counts(corpus):
    terms = [text.split() for text in corpus]
    vocab = sorted({t for d in terms for t in d})
    ids = np.array([vocab.index(t) for d in terms for t in d], dtype=np.int32)
    lengths = np.array([len(d) for d in terms])
    table = CollectionStats.from_token_ids(vocab, ids, lengths, pair_min_cf=1)
    exact = CollectionStats.from_token_ids(vocab, ids, lengths, pair_min_cf=10**9)
    assert len(table.pair_terms) == len(vocab) and not len(exact.pair_terms)
    rng = np.random.default_rng(0)
    candidates = np.sort(rng.choice(len(terms), 5, replace=False))
    for a in range(len(vocab)):
        for b in range(len(vocab)):
            for width, ordered in ((1, True), (8, False)):
                cf, docs = exact.window_matches(a, b, width, ordered)
                assert table.window_cf(a, b, width, ordered) == cf
                got_cf, got_tf = table.window_tf(a, b, width, ordered, candidates)
                assert got_cf == cf
                np.testing.assert_array_equal(got_tf, [np.sum(docs == d) for d in candidates])
            # a reach outside the table is counted exactly
            assert table.window_cf(a, b, 3, True) == exact.window_matches(a, b, 3, True)[0]


def test_pair_table_is_saved_and_checked(tmp_path):
    with _pair_min_cf(1):
        index = Index.from_texts(["a b c a b", "b a x", "c c"], path=tmp_path / "ix", **SMALL)
    reopened = Index.open(tmp_path / "ix")
    np.testing.assert_array_equal(reopened.stats.pair_follow, index.stats.pair_follow)
    assert reopened.stats.window_cf(0, 1, 1, True) == 2  # #1(a b): twice in the first document
    (tmp_path / "ix" / "stats" / "pair_follow.npy").unlink()
    with pytest.raises(ModelFolderError, match="pair_follow.npy"):
        Index.open(tmp_path / "ix")
    np.save(tmp_path / "ix" / "stats" / "pair_follow.npy", np.zeros((2, 1, 1), dtype=np.int64))
    with pytest.raises(ModelFolderError, match="pair_follow.npy"):  # the manifest's sizes, then the shape
        Index.open(tmp_path / "ix")


def test_window_counting_sides_agree(index):
    # from the first term's side, from the second's (used when it is rarer), and by binary search
    stats = index.stats
    for a in range(len(stats.vocab)):
        for b in range(len(stats.vocab)):
            for reach in (1, 3, 7):
                from_a = stats._starts_followed_by(a, b, reach, side="a")
                np.testing.assert_array_equal(from_a, stats._starts_followed_by(a, b, reach, side="b"))
            long_reach = stats._starts_followed_by(a, b, 20, side="a")
            slow = [
                d
                for d in range(stats.num_docs)
                for _ in range(_count_followed(stats.document_terms(d), a, b, 20, stats))
            ]
            np.testing.assert_array_equal(long_reach, slow)


def _count_followed(terms, a, b, reach, stats):
    ta, tb = stats.vocab[a], stats.vocab[b]
    return sum(1 for i, t in enumerate(terms) if t == ta and tb in terms[i + 1 : i + 1 + reach])


def test_sdm_hand_computed():
    # |C| = 10. cf(a) = cf(b) = 3 -> P = 0.3; #1(a b): D0 twice -> cf 2, P 0.2;
    # #uw8(a b): D0 positions 0 (a, b follows), 1 (b, a at 3), 3 (a, b at 4) -> 3, D1 position 0 (b, a
    # follows) -> 1; cf 4, P 0.4. mu = 2.
    index = Index.from_texts(["a b c a b", "b a x", "c c"], **SMALL)
    d0 = 0.85 * math.log(2.6 / 7) + 0.10 * math.log(2.4 / 7) + 0.05 * math.log(3.8 / 7)
    d1 = 0.85 * math.log(1.6 / 5) + 0.10 * math.log(0.4 / 5) + 0.05 * math.log(1.8 / 5)
    d2 = 0.85 * math.log(0.6 / 4) + 0.10 * math.log(0.4 / 4) + 0.05 * math.log(0.8 / 4)
    np.testing.assert_allclose(index.score("a b", ranker="sdm", mu=2.0), [d0, d1, d2], rtol=1e-12)
    # Indri's background for an expression that never occurs: 1 / (2|C|) = 0.05
    unseen = 0.85 * (math.log(1.6 / 5) + math.log(0.1 / 5)) / 2 + 0.15 * math.log(0.1 / 5)
    assert index.score("a zzz", ranker="sdm", mu=2.0)[1] == pytest.approx(unseen, rel=1e-12)
    # a single term is the unigram part alone; SDM over the BM25 first pass ranks D0 first
    assert index.score("x", ranker="sdm", mu=2.0)[1] == pytest.approx(math.log(1.2 / 5), rel=1e-12)
    assert [hit.row for hit in index.search("a b", k=3, ranker="sdm", mu=2.0)] == [0, 1]


def test_ql_is_dirichlet_query_likelihood(index, corpus):
    docs = [text.split() for text in corpus]
    size = sum(map(len, docs))
    query = ["alpha", "gamma", "gamma"]
    expected = [
        sum(
            math.log((d.count(t) + 300 * sum(x.count(t) for x in docs) / size) / (len(d) + 300))
            for t in query
        )
        for d in docs
    ]
    np.testing.assert_allclose(index.score(" ".join(query), ranker="ql", mu=300.0), expected, rtol=1e-12)
    hits = index.search("alpha gamma gamma", k=5, ranker="ql", mu=300.0)
    assert [h.row for h in hits] == sorted(range(len(docs)), key=lambda d: (-expected[d], d))[:5]


def test_bm25_matches_tantivy_order_and_scores(index, corpus):
    # documents of <= 30 tokens: tantivy's fieldnorm codes are exact there, so scores agree to float32
    for query in ["alpha beta", "gamma gamma eta", "zeta"]:
        fast = index.search(query, k=15)
        exact = index.search(query, k=15, exact=True)
        np.testing.assert_allclose([h.score for h in fast], [h.score for h in exact], rtol=1e-5)
        assert [h.id for h in fast] == [h.id for h in exact]  # ties broken by row on both paths
    other = index.search("alpha beta", k=5, k1=0.9, b=0.4)
    docs = [text.split() for text in corpus]
    avgdl = sum(map(len, docs)) / len(docs)

    def bm25(doc):
        total = 0.0
        for term in ("alpha", "beta"):
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            total += idf * tf * 1.9 / (tf + 0.9 * (1 - 0.4 + 0.4 * len(doc) / avgdl))
        return total

    expected = sorted(range(len(docs)), key=lambda d: (-bm25(docs[d]), d))[:5]
    assert [h.row for h in other] == expected


def test_search_batch_equals_search(index):
    queries = ["alpha beta", "", "gamma delta eps", "unknownword", "zeta eta"]
    for ranker in ("bm25", "sdm"):
        batch = index.search_batch(queries, k=7, ranker=ranker, threads=3)
        assert batch == [index.search(q, k=7, ranker=ranker) for q in queries]


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
    | st.text(alphabet="aB_c'`-!  é\t", max_size=30)
)
def test_analyzer_is_the_library_normaliser(text):
    assert analyze(text) == normalize_for_matching(text).split()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="ab _'-\x0b\x1c\x1e\x1f\t\n", max_size=12) | st.text(max_size=8), max_size=6)
)
def test_analyze_many_equals_analyze_and_tantivy_sees_the_same_terms(texts):
    from hf_querygen.retrieval.analysis import analyze_many

    terms, index_texts = analyze_many(texts)
    assert terms == [analyze(t) for t in texts]
    tantivy_whitespace = " \t\n\r\x0c"  # what tantivy's whitespace tokenizer splits on (checked)
    for text, expected in zip(index_texts, terms, strict=True):
        assert not any(c.isspace() and c not in tantivy_whitespace for c in text)
        assert [t for t in re.split("[ \t\n\r\x0c]", text) if t] == expected


def test_analyzer_splits_underscores_like_the_library():
    assert analyze("snake_case C++ don't") == ["snake", "case", "c", "dont"]


# ---------------------------------------------------------------- persistence
def test_reopen_without_rebuilding_gives_same_results(tmp_path, corpus):
    built = Index.from_texts(corpus, ids=list(range(100, 100 + len(corpus))), path=tmp_path / "ix", **SMALL)
    reopened = Index.open(tmp_path / "ix")
    for ranker in ("bm25", "ql", "sdm"):
        assert reopened.search("alpha beta", k=10, ranker=ranker) == built.search(
            "alpha beta", k=10, ranker=ranker
        )
    assert reopened.search("alpha", k=1)[0].id >= 100


def test_building_twice_needs_overwrite(tmp_path):
    Index.from_texts(["one doc"], path=tmp_path / "ix", **SMALL)
    with pytest.raises(InvalidInputError, match="overwrite=True"):
        Index.from_texts(["another doc"], path=tmp_path / "ix", **SMALL)
    Index.from_texts(["another doc"], path=tmp_path / "ix", overwrite=True, **SMALL)
    assert Index.open(tmp_path / "ix").search("another")[0].row == 0
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInputError, match="did not write.*notes.txt"):
        Index.from_texts(["x"], path=tmp_path / "other", overwrite=True, **SMALL)


def test_from_dataset_column():
    import datasets

    ds = datasets.Dataset.from_dict({"doc_id": ["x", "y", "z"], "body": ["red fox", "blue fox", "red hen"]})
    index = Index.from_dataset(ds, text_column="body", id_column="doc_id", **SMALL)
    assert [h.id for h in index.search("red hen", k=2)] == ["z", "x"]
    with pytest.raises(InvalidInputError, match="no column 'text'"):
        Index.from_dataset(ds, **SMALL)


def test_missing_or_corrupted_folder_names_the_file(tmp_path):
    with pytest.raises(ModelFolderError, match="not found"):
        Index.open(tmp_path / "nothing")
    Index.from_texts(["alpha beta", "beta gamma"], path=tmp_path / "ix", **SMALL)
    positions = tmp_path / "ix" / "stats" / "positions.npy"
    positions.write_bytes(positions.read_bytes()[:-8])
    with pytest.raises(ModelFolderError, match="positions.npy"):
        Index.open(tmp_path / "ix")
    Index.from_texts(["alpha beta", "beta gamma"], path=tmp_path / "ix", overwrite=True, **SMALL)
    (tmp_path / "ix" / "stats" / "vocab.txt").unlink()
    with pytest.raises(ModelFolderError, match="vocab.txt"):
        Index.open(tmp_path / "ix")
    Index.from_texts(["alpha beta"], path=tmp_path / "ix", overwrite=True, **SMALL)
    (tmp_path / "ix" / "tantivy" / "meta.json").write_text("{not json")
    with pytest.raises(ModelFolderError, match="tantivy"):
        Index.open(tmp_path / "ix")
    Index.from_texts(["alpha beta"], path=tmp_path / "ix", overwrite=True, **SMALL)
    (tmp_path / "ix" / "index.json").unlink()
    with pytest.raises(ModelFolderError, match="index.json"):
        Index.open(tmp_path / "ix")


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("ranker", ["bm25", "ql", "sdm"])
@pytest.mark.parametrize("query", ["", "   \t", "?!...", "unknownword nothere"])
def test_queries_without_known_terms_return_nothing(index, query, ranker):
    assert index.search(query, ranker=ranker) == []


def test_bad_queries_and_parameters_raise_clear_errors(index):
    for bad in (None, 3, ["alpha"], b"alpha"):
        with pytest.raises(InvalidInputError, match="the query is .*not a string"):
            index.search(bad)
    for ranker in ("bm25", "ql", "sdm"):  # a lone surrogate: named, never a raw UnicodeEncodeError
        with pytest.raises(InvalidInputError, match=r"lone surrogate '\\udc80' at character 6"):
            index.search("alpha \udc80", ranker=ranker)
        with pytest.raises(InvalidInputError, match="lone surrogate"):
            index.score("alpha \udc80", ranker=ranker)
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        index.search_batch(["alpha", "\ud800"], threads=2)
    with pytest.raises(InvalidInputError, match="max_query_terms"):
        index.search("alpha " * 2000)
    long_query = " ".join(random.Random(1).choices(["alpha", "beta", "gamma", "x"], k=1000))
    assert len(index.search(long_query, k=3, ranker="sdm")) == 3
    with pytest.raises(InvalidInputError, match="k must be a positive integer"):
        index.search("alpha", k=0)
    with pytest.raises(InvalidInputError, match="unknown ranker 'dfr'"):
        index.search("alpha", ranker="dfr")
    with pytest.raises(InvalidInputError, match="has no parameter"):
        index.search("alpha", ranker="sdm", k1=1.0)
    with pytest.raises(InvalidInputError, match="weights"):
        index.search("alpha", ranker="sdm", weights=(1.0, 0.0))
    with pytest.raises(InvalidInputError, match="not a string"):
        Index.from_texts(["fine", None], **SMALL)
    with pytest.raises(InvalidInputError, match="unique"):
        Index.from_texts(["a", "b"], ids=["x", "x"], **SMALL)
    with pytest.raises(InvalidInputError, match="a sequence of strings"):
        index.search_batch("alpha")


def test_empty_documents_and_empty_collection():
    index = Index.from_texts(["", "alpha beta", "  ", "beta"], **SMALL)
    hits = index.search("alpha", ranker="sdm", depth=None, k=4, mu=10.0)
    assert hits[0].row == 1 and hits[1].score == pytest.approx(math.log(1 / 3))  # empty doc: log P(alpha|C)
    empty = Index.from_texts([], **SMALL)
    assert len(empty) == 0 and empty.search("alpha") == []


def test_index_cli_build_and_search(tmp_path, capsys):
    import json

    from hf_querygen.cli import main

    docs = tmp_path / "docs.tsv"
    docs.write_text("d1\tthe red fox\nd2\ta blue hen\nd3\tred hens and foxes\n")
    assert main(["index", "build", str(docs), str(tmp_path / "ix")]) == 0
    assert (
        main(
            [
                "index",
                "search",
                str(tmp_path / "ix"),
                "red fox",
                "-k",
                "2",
                "--ranker",
                "sdm",
                "--param",
                "mu=10",
            ]
        )
        == 0
    )
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["query"] == "red fox" and [h["id"] for h in line["hits"]] == ["d1", "d3"]
    # the CLI prints our errors as one line and exits 2; --debug raises them
    assert main(["index", "build", str(docs), str(tmp_path / "ix")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-querygen: error: index folder") and "--overwrite" in err
    with pytest.raises(InvalidInputError, match="overwrite"):
        main(["--debug", "index", "build", str(docs), str(tmp_path / "ix")])


# ---------------------------------------------------------------- index folder integrity
def test_missing_ids_file_is_an_error_not_row_numbers(tmp_path):
    Index.from_texts(["alpha", "beta"], ids=["a", "b"], path=tmp_path / "ix", **SMALL)
    (tmp_path / "ix" / "ids.json").unlink()
    with pytest.raises(ModelFolderError, match="ids.json"):
        Index.open(tmp_path / "ix")


@pytest.mark.parametrize(
    "part", ["stats/vocab.txt", "stats/doc_offsets.npy", "ids.json", "tantivy/meta.json"]
)
def test_files_from_another_index_of_the_same_size_are_named(tmp_path, part):
    # same number of documents, tokens and terms: only the order differs
    Index.from_texts(["a b c", "d e"], ids=["x", "y"], path=tmp_path / "one", **SMALL)
    Index.from_texts(["d e", "a b c"], ids=["y", "x"], path=tmp_path / "two", **SMALL)
    assert (tmp_path / "one" / part).read_bytes() != (tmp_path / "two" / part).read_bytes()
    if part == "tantivy/meta.json":  # a whole tantivy folder from the other build
        import shutil

        shutil.rmtree(tmp_path / "one" / "tantivy")
        shutil.copytree(tmp_path / "two" / "tantivy", tmp_path / "one" / "tantivy")
    else:
        (tmp_path / "one" / part).write_bytes((tmp_path / "two" / part).read_bytes())
    with pytest.raises(ModelFolderError, match=re.escape(part.split("/")[0])):
        Index.open(tmp_path / "one")


def test_edited_manifest_is_refused(tmp_path):
    import json

    Index.from_texts(["alpha beta"], path=tmp_path / "ix", **SMALL)
    meta_path = tmp_path / "ix" / "index.json"
    meta = json.loads(meta_path.read_text())
    meta["files"]["stats/vocab.txt"]["size"] += 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelFolderError, match="fingerprint"):
        Index.open(tmp_path / "ix")


def test_read_only_index_folder_opens_for_search(tmp_path):
    import os
    import subprocess

    built = Index.from_texts(
        ["red fox", "blue hen", "red hen"], ids=["x", "y", "z"], path=tmp_path / "ix", **SMALL
    )
    expected = built.search("red hen", k=3, ranker="sdm")
    view = tmp_path / "ro"
    if os.geteuid() == 0:  # root ignores permissions: a read-only bind mount, where the system allows one
        view.mkdir()
        if subprocess.run(
            ["mount", "--bind", str(tmp_path / "ix"), str(view)], capture_output=True
        ).returncode:
            pytest.skip("no read-only view possible here (root without mount)")
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
    else:
        view = tmp_path / "ix"
        for path in [view, *view.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        assert not os.access(view / "tantivy", os.W_OK)
        assert Index.open(view).search("red hen", k=3, ranker="sdm") == expected
    finally:
        if os.geteuid() == 0:
            import gc

            gc.collect()  # release the memory maps before unmounting; lazily if something still holds one
            subprocess.run(["umount", "-l", str(view)], check=False)
        else:
            for path in [view, *view.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("chunk_size", [2, 8192])
def test_chunk_analysis_splits_counts_and_numbers_terms_as_str_split(chunk_size, monkeypatch):
    # the chunk's terms are split and counted in Arrow: empty, whitespace-only and padded documents,
    # every whitespace the fast path keeps, "\x00" (a term character), the per-document path's
    # characters (\x0b, \x1c) and non-ASCII text must give analyze()'s terms, lengths and vocabulary
    from hf_querygen.retrieval import Index
    from hf_querygen.retrieval import index as index_module
    from hf_querygen.retrieval.analysis import analyze, analyze_chunk
    from hf_querygen.retrieval.stats import CollectionStats

    texts = [
        "red fox",
        "",
        "   ",
        " \tFox,\r\nred;\x0cFOX! ",
        "a \x00 b",
        "x\x00y",
        "é  Straße",
        "p\x0bq\x1cr",
    ]
    for chunk in (texts[:-1], texts):  # the ASCII fast path (padded index texts), the per-document path
        index_texts, terms, lengths = analyze_chunk(chunk)
        vocab, ids = numbered(terms)
        assert list(lengths) == [len(analyze(t)) for t in chunk]
        assert [vocab[i] for i in ids] == [term for t in chunk for term in analyze(t)]
        assert [t.split() for t in index_texts.to_pylist()] == [analyze(t) for t in chunk]
    monkeypatch.setattr(index_module, "CHUNK_SIZE", chunk_size)
    index = Index.from_texts(iter(texts), show_progress=False)
    reference = CollectionStats.from_documents([analyze(t) for t in texts])
    assert list(index.stats.vocab) == list(reference.vocab)
    np.testing.assert_array_equal(index.stats.tokens, reference.tokens)
    np.testing.assert_array_equal(index.stats.doc_lengths, reference.doc_lengths)
    assert [hit.row for hit in index.search("fox", k=5, ranker="ql")] == [3, 0]
    assert [hit.row for hit in index.search("x\x00y", k=5, ranker="ql")] == [5]


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.characters(max_codepoint=0x3000)), min_size=1, max_size=12))
def test_chunk_analysis_fuzzed_against_analyze(texts):
    from hf_querygen.retrieval.analysis import analyze, analyze_chunk

    texts = [t for t in texts if not any(0xD800 <= ord(c) <= 0xDFFF for c in t)]  # not UTF-8
    _, terms, lengths = analyze_chunk(texts)
    vocab, ids = numbered(terms)
    assert list(lengths) == [len(analyze(t)) for t in texts]
    assert [vocab[i] for i in ids] == [term for t in texts for term in analyze(t)]


def numbered(*chunks_terms):
    from hf_querygen.retrieval.analysis import TermNumbering

    numbering = TermNumbering()
    for terms in chunks_terms:
        numbering.add(terms)
    return numbering.result()


@settings(max_examples=40, deadline=None)
@given(
    chunks=st.lists(
        st.lists(st.sampled_from(["a b", "b", "c a", "", "d e f", "Ünï c", "g"]), max_size=5), max_size=9
    ),
    unify_every=st.sampled_from([1, 2, 64]),
)
def test_term_numbering_across_chunks_is_first_occurrence_order(chunks, unify_every):
    # chunks numbered together by Arrow's dictionary unification, every `unify_every` chunks and at the end:
    # a term keeps its id, new terms follow in order of first appearance in the collection
    from unittest import mock

    from hf_querygen.retrieval.analysis import TermNumbering, analyze, analyze_chunk

    with mock.patch.object(TermNumbering, "UNIFY_EVERY", unify_every):
        vocab, ids = numbered(*(analyze_chunk(chunk)[1] for chunk in chunks))
    reference: dict[str, int] = {}
    expected = [
        reference.setdefault(t, len(reference)) for chunk in chunks for text in chunk for t in analyze(text)
    ]
    assert vocab == list(reference) and ids.tolist() == expected and ids.dtype == np.int32


def test_a_lone_surrogate_is_an_error_naming_the_text():
    from hf_querygen.retrieval import Index

    with pytest.raises(InvalidInputError, match="text 1 has a lone surrogate"):
        Index.from_texts(["c", "a \ud800 b"], show_progress=False)


def test_chunk_analysis_drops_long_terms_only_where_they_are_and_names_a_non_string():
    # the chunk path finds long ASCII terms by document length, not per document: a long document
    # without a long term keeps its normalised text, one with a long term drops that term, and a
    # non-ASCII document in the same chunk goes through analyze() on its own
    from hf_querygen.retrieval.analysis import MAX_TERM_BYTES, analyze, analyze_many

    long_words = " ".join(["Word"] * 80)  # 400 characters, every term short
    long_term = "x" * MAX_TERM_BYTES + " kept, Terms"
    almost = "y" * (MAX_TERM_BYTES - 1)
    texts = [long_words, long_term, almost, "Straße ﬁne", "it's short", "é" * 130, ""]
    terms, index_texts = analyze_many(texts)
    assert terms == [analyze(t) for t in texts]
    assert terms[1] == ["kept", "terms"] and terms[2] == [almost] and terms[5] == []
    assert [t.split() for t in index_texts] == terms
    with pytest.raises(TypeError, match="text 2 is bytes"):
        analyze_many(["a", "b", b"c"])


def test_chunk_term_ids_number_new_terms_in_order_of_first_occurrence(monkeypatch):
    from hf_querygen.retrieval import Index
    from hf_querygen.retrieval import index as index_module
    from hf_querygen.retrieval.stats import CollectionStats

    monkeypatch.setattr(index_module, "CHUNK_SIZE", 3)
    texts = ["b a", "c b", "", "d a", "e", "a f b", "g"]
    index = Index.from_texts(texts, show_progress=False)
    reference = CollectionStats.from_documents([analyze(t) for t in texts])
    assert list(index.stats.vocab) == list(reference.vocab) == ["b", "a", "c", "d", "e", "f", "g"]
    np.testing.assert_array_equal(index.stats.tokens, reference.tokens)
    np.testing.assert_array_equal(index.stats.doc_lengths, reference.doc_lengths)


@pytest.mark.parametrize("bound", [1, 300, 1 << 16, (1 << 16) + 1, 1 << 31])
def test_stable_argsort_by_radix_equals_numpys_stable_argsort(bound):
    from hf_querygen.retrieval.stats import _stable_argsort

    rng = np.random.default_rng(bound)
    # few distinct values too (long runs of ties: stability is what keeps positions ascending)
    for values in (rng.integers(0, bound, 5000), rng.integers(0, min(bound, 3), 5000), np.zeros(0)):
        values = values.astype(np.int32)
        np.testing.assert_array_equal(_stable_argsort(values, bound), np.argsort(values, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.text(alphabet=st.characters(max_codepoint=0x3000, exclude_categories=["Cs"])), max_size=8
    )
)
def test_json_documents_are_the_rows_and_texts_as_json(texts):
    # what tantivy's add_json receives: any text (quotes, backslashes, control characters included)
    import pyarrow as pa

    from hf_querygen.retrieval.tantivy_backend import ROW_FIELD, TEXT_FIELD, json_documents

    documents = json_documents(pa.array(texts, type=pa.large_string()), first_row=7)
    assert [json.loads(d) for d in documents] == [
        {ROW_FIELD: 7 + i, TEXT_FIELD: text} for i, text in enumerate(texts)
    ]


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(
        st.lists(
            st.sampled_from(
                ['a"b', "c\\d", "x\x01y", "tab\tsep", "Ünï", "ﬁ", "q", "q q", "-", "z" * 300, "é\x00"]
            ),
            max_size=6,
        ).map(" ".join),
        min_size=1,
        max_size=14,
    ),
    chunk_size=st.sampled_from([1, 3, 8192]),
    arrow_path=st.booleans(),
)
def test_tantivy_indexes_the_terms_the_sidecar_counts(texts, chunk_size, arrow_path):
    # what tantivy receives as JSON lines (quotes, backslashes, control characters inside terms, long
    # terms, non-ASCII text, chunk boundaries anywhere) gives every document the sidecar's BM25 score,
    # built by the C module (where compiled) or by Arrow
    import os
    from unittest import mock

    from hf_querygen.retrieval import index as index_module
    from hf_querygen.retrieval.native import NO_NATIVE_ENV

    with (
        mock.patch.object(index_module, "CHUNK_SIZE", chunk_size),
        mock.patch.dict(os.environ, {NO_NATIVE_ENV: "1" if arrow_path else "0"}),
    ):
        index = Index.from_texts(texts, show_progress=False, num_threads=1, heap_size=15_000_000)
    for term in {term for text in texts for term in analyze(text)}:
        # every matching document (k > the collection), compared by row: tantivy scores in float32, so
        # two documents within its rounding of each other may swap places
        fast = {h.row: h.score for h in index.search(term, k=20)}
        exact = {h.row: h.score for h in index.search(term, k=20, exact=True)}
        assert sorted(fast) == sorted(exact), term
        np.testing.assert_allclose([fast[row] for row in exact], list(exact.values()), rtol=1e-5)


# ---------------------------------------------------------------- content integrity (every byte hashed)
@pytest.fixture(scope="module")
def large_index(tmp_path_factory):
    """An index whose positions array is over 4 MiB (1.2M tokens): past the size where format 2 hashed
    only the first and last MiB."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rng.choices(words, k=6000)) for _ in range(200)]
    path = tmp_path_factory.mktemp("large") / "ix"
    Index.from_texts(texts, path=path, **SMALL)
    return path


def _flip_middle_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("which", ["stats/positions.npy", "the largest tantivy file"])
def test_a_damaged_block_in_the_middle_of_a_large_file_is_named(large_index, tmp_path, which):
    import shutil

    folder = tmp_path / "ix"
    shutil.copytree(large_index, folder)
    if which.startswith("stats"):
        target = folder / which
    else:
        target = max((folder / "tantivy").iterdir(), key=lambda p: p.stat().st_size)
    assert target.stat().st_size > (4 << 20 if which.startswith("stats") else 1 << 19)
    Index.open(folder).verify()  # intact: opens and verifies
    _flip_middle_byte(target)
    with pytest.raises(ModelFolderError, match=re.escape(target.name) + ".*damaged.*--overwrite"):
        Index.open(folder)
    opened = Index.open(folder, verify=False)  # the opt-out checks sizes only ...
    with pytest.raises(ModelFolderError, match=re.escape(target.name)):
        opened.verify()  # ... and the contents when asked


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_format_is_refused_saying_how_to_rebuild(tmp_path, version):
    import json

    from hf_querygen.cli import main
    from hf_querygen.retrieval.manifest import IndexFormatError

    Index.from_texts(["alpha beta"], path=tmp_path / "ix", **SMALL)
    meta_path = tmp_path / "ix" / "index.json"
    meta = json.loads(meta_path.read_text())
    meta["format_version"] = version
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(IndexFormatError, match=r"format version .*older.*index build .*--overwrite"):
        Index.open(tmp_path / "ix")
    assert main(["index", "search", str(tmp_path / "ix"), "alpha"]) == 2


def test_the_build_hashes_its_own_files_as_it_writes_them(tmp_path, monkeypatch):
    # only tantivy's files are read back to be hashed: the statistics and ids are hashed while written
    from hf_querygen.retrieval import manifest

    read = []
    real = manifest.file_digest
    monkeypatch.setattr(manifest, "file_digest", lambda path: read.append(path.parent.name) or real(path))
    Index.from_texts(["alpha beta", "gamma"], ids=["a", "b"], path=tmp_path / "ix", **SMALL)
    assert read and set(read) == {"tantivy"}
    Index.open(tmp_path / "ix")  # and the recorded digests are those of the files on disk


# ---------------------------------------------------------------- ties across segments
@pytest.fixture(scope="module")
def tied_indexes(tmp_path_factory):
    """The same collection built with 1, 2 and 4 writer threads (one segment per thread): groups of
    identical documents, so that whole groups tie under every ranker."""
    texts = [["alpha beta", "alpha", "beta gamma alpha", "delta"][i % 4] for i in range(4000)]
    indexes = {}
    for threads in (1, 2, 4):
        path = tmp_path_factory.mktemp(f"tied{threads}") / "ix"
        Index.from_texts(
            texts, path=path, show_progress=False, num_threads=threads, heap_size=15_000_000 * threads
        )
        indexes[threads] = Index.open(path)
    return indexes


@pytest.mark.parametrize(
    ("ranker", "params"),
    [("bm25", {}), ("bm25", {"exact": True}), ("ql", {}), ("sdm", {}), ("sdm", {"depth": 5})],
    ids=["bm25-tantivy", "bm25-exact", "ql", "sdm", "sdm-depth5"],
)
@pytest.mark.parametrize("query", ["alpha", "beta alpha", "gamma alpha delta"])
def test_ties_are_broken_by_row_whatever_the_number_of_segments(tied_indexes, ranker, params, query):
    assert {t: ix._searcher.num_segments for t, ix in tied_indexes.items()} == {1: 1, 2: 2, 4: 4}
    results = {t: ix.search(query, k=7, ranker=ranker, **params) for t, ix in tied_indexes.items()}
    for hits in results.values():
        keys = [(-h.score, h.row) for h in hits]
        assert keys == sorted(keys) and len(hits) == 7
    assert [h.row for h in results[2]] == [h.row for h in results[1]] == [h.row for h in results[4]]
