"""The retrieval parameter layer (hf_querygen.retrieval.params) over the whole parameter space: every
value gives either a clear InvalidInputError naming the parameter or finite scores in descending
order (ties by row), through the API and through the CLI's ``--param`` alike; no value aborts."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_querygen.errors import InvalidInputError
from hf_querygen.retrieval import Index
from hf_querygen.retrieval.params import RANKER_PARAMS, parse_param, parse_params

SMALL = {"show_progress": False, "heap_size": 15_000_000, "num_threads": 1}
DOCS = [
    "alpha beta gamma",
    "beta gamma delta beta",
    "alpha alpha epsilon",
    "gamma",
    "delta epsilon alpha beta gamma alpha",
    "",
    "zeta eta theta alpha",
]
ANY_VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=4),
    st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3)),
    st.just(np.int64(3)),
    st.just(np.float32(0.5)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
GOOD_VALUE = {  # values inside each parameter's range, to reach the scoring code often
    "k1": st.floats(1e-6, 1e4),
    "b": st.floats(0.0, 1.0),
    "exact": st.booleans(),
    "mu": st.floats(1e-6, 1e9),
    "weights": st.tuples(*[st.floats(0, 1e6)] * 3),
    "window": st.integers(2, 2**31 - 1),
    "depth": st.one_of(st.none(), st.integers(1, 2**70)),
}
#: the rankers this index (no dense field) serves; dense and hybrid: tests/test_retrieval_dense.py
SIDECAR_RANKERS = [r for r in RANKER_PARAMS if r not in ("dense", "hybrid")]


@pytest.fixture(scope="module")
def index():
    return Index.from_texts(DOCS, ids=[f"d{i}" for i in range(len(DOCS))], **SMALL)


def ranker_and_params():
    def params_for(ranker):
        names = list(RANKER_PARAMS[ranker])
        values = st.one_of(ANY_VALUE, *(GOOD_VALUE[n] for n in names))
        chosen = st.dictionaries(st.sampled_from(names), values, max_size=len(names))
        return st.tuples(st.just(ranker), chosen)

    return st.sampled_from(SIDECAR_RANKERS).flatmap(params_for)


def assert_well_ordered(hits, k: int):
    assert len(hits) <= min(k, len(DOCS)) if isinstance(k, int) else True
    scores = [h.score for h in hits]
    assert all(math.isfinite(s) for s in scores), scores
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    for a, b in zip(hits, hits[1:], strict=False):
        assert a.score > b.score or (a.score == b.score and a.row < b.row), (a, b)
    assert len({h.row for h in hits}) == len(hits)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    choice=ranker_and_params(),
    k=st.one_of(st.integers(-2, 12), st.integers(2**31, 2**80), ANY_VALUE),
    query=st.sampled_from(["alpha beta", "gamma", "alpha beta gamma delta", "nothing here", ""]),
)
def test_search_gives_a_clear_error_or_finite_ordered_scores(index, choice, k, query):
    ranker, params = choice
    try:
        hits = index.search(query, k=k, ranker=ranker, **params)
    except InvalidInputError as err:
        named = [name for name in params if name in str(err)] + (["k"] if "k must" in str(err) else [])
        assert named, f"the error names no parameter: {err}"
        return
    assert_well_ordered(hits, k)
    if hits and ranker != "bm25":  # each hit's score is the exact score of its document
        every = index.score(query, ranker=ranker, **{n: v for n, v in params.items() if n != "depth"})
        assert [h.score for h in hits] == pytest.approx(list(every[[h.row for h in hits]]), rel=1e-9)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(choice=ranker_and_params(), rows=st.one_of(ANY_VALUE, st.lists(st.integers(-3, 10), max_size=8)))
def test_score_gives_a_clear_error_or_finite_scores(index, choice, rows):
    ranker, params = choice
    params.pop("depth", None)
    params.pop("exact", None)
    try:
        scores = index.score("alpha beta", rows=rows, ranker=ranker, **params)
    except InvalidInputError:
        return
    assert np.isfinite(scores).all() and len(scores) == (len(DOCS) if rows is None else len(rows))


@settings(max_examples=300, deadline=None)
@given(ranker=st.sampled_from(list(RANKER_PARAMS)), name=st.text(max_size=8), value=st.text(max_size=12))
def test_cli_param_parsing_is_the_same_layer(ranker, name, value):
    names = list(RANKER_PARAMS[ranker])
    for candidate in (f"{name}={value}", f"{names[len(value) % len(names)]}={value}"):
        try:
            parsed_name, parsed = parse_param(ranker, candidate)
        except InvalidInputError as err:
            assert "--param" in str(err)
            continue
        # whatever the parser accepts, the API accepts unchanged
        from hf_querygen.retrieval.params import ranker_params

        assert ranker_params(ranker, {parsed_name: parsed})[parsed_name] == parsed


@pytest.mark.parametrize(
    ("ranker", "pair", "message"),
    [
        ("ql", "mu=abc", "mu must be a finite number >= 1e-06"),
        ("ql", "mu=nan", "mu must be"),
        ("ql", "mu=-1", "mu must be"),
        ("bm25", "k1=inf", "k1 must be"),
        ("bm25", "b=1.5", "b must be"),
        ("bm25", "exact=maybe", "exact must be true or false"),
        ("sdm", "weights=1,2", "weights must be 3"),
        ("sdm", "weights=0,0,0", "positive sum"),
        ("sdm", "depth=0", "depth must be"),
        ("sdm", "window=2.5", "window must be an integer"),
        ("sdm", "k1=1", "has no parameter 'k1'"),
        ("sdm", "mu", "expected NAME=VALUE"),
    ],
)
def test_cli_param_errors_name_the_parameter(ranker, pair, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_param(ranker, pair)


def test_cli_param_values_and_duplicates():
    assert parse_params("sdm", ["weights=0.8,0.1,0.1", "depth=none", "window=4"]) == {
        "weights": (0.8, 0.1, 0.1),
        "depth": None,
        "window": 4,
    }
    assert parse_params("bm25", ["exact=yes", "k1=0.9"]) == {"exact": True, "k1": 0.9}
    with pytest.raises(InvalidInputError, match="given twice"):
        parse_params("ql", ["mu=10", "mu=20"])


def test_cli_search_param_error_is_one_line(tmp_path, capsys):
    from hf_querygen.cli import main

    docs = tmp_path / "d.txt"
    docs.write_text("red fox\nblue hen\n")
    assert main(["index", "build", str(docs), str(tmp_path / "ix")]) == 0
    capsys.readouterr()
    assert main(["index", "search", str(tmp_path / "ix"), "fox", "--ranker", "ql", "--param", "mu=abc"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-querygen: error: --param 'mu=abc'") and err.count("\n") == 1


def test_huge_k_and_depth_are_capped_not_fatal():
    """tantivy aborts the interpreter on a huge result limit: run in a child process so a regression
    shows as a failed test rather than a dead test session."""
    code = (
        "from hf_querygen.retrieval import Index\n"
        f"ix = Index.from_texts({DOCS!r}, show_progress=False, heap_size=15_000_000, num_threads=1)\n"
        "a = ix.search('alpha beta', k=10**12)\n"
        "b = ix.search('alpha beta', k=2**63, ranker='sdm', depth=10**15)\n"
        "c = ix.search_batch(['alpha', 'gamma'], k=2**40, threads=2)\n"
        "assert len(a) == len(b) == 5 and [len(h) for h in c] == [4, 4], (a, b, c)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"heap_size": 10}, "heap_size=10"),
        ({"num_threads": -1}, "num_threads must be"),
        ({"num_threads": 10**6}, "num_threads must be"),
        ({"heap_size": "big"}, "heap_size must be an integer"),
    ],
)
def test_writer_settings_are_checked(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        Index.from_texts(["a b"], **{**SMALL, **kwargs})


@pytest.mark.parametrize(
    ("texts", "ids", "message"),
    [
        ("alpha beta", None, "texts must be a sequence"),
        ({"a": "alpha"}, None, "texts must be a sequence"),
        (None, None, "texts must be a sequence"),
        (["a", "b"], "xy", "ids must be a sequence"),
        (["a", "b"], ["x", " "], "id of text 1 is empty"),
        (["a", "b"], ["x", None], "the id of text 1 is None"),
        (["a", "b"], ["x", 1.5], "the id of text 1 is 1.5"),
        (["a", "b", "c"], ["x", "y", "x"], "texts 0 and 2 share id 'x'"),
    ],
)
def test_collection_arguments_are_checked(texts, ids, message):
    with pytest.raises(InvalidInputError, match=message):
        Index.from_texts(texts, ids=ids, **SMALL)


# ---------------------------------------------------------------- the accepted domain, at its edges
EDGE_COLLECTIONS = {
    "no documents": [],
    "only empty documents": ["", "  ", "?!"],
    "documents": DOCS,
    "a long document": ["alpha " * 5000 + "beta", "beta", ""],
}


@pytest.fixture(scope="module")
def edge_indexes():
    return {name: Index.from_texts(texts, **SMALL) for name, texts in EDGE_COLLECTIONS.items()}


def _edges(low: float, high: float) -> st.SearchStrategy:
    """The bounds of a range, the floats next to them on both sides, and what lies far outside."""
    special = [low, high, math.nextafter(low, math.inf), math.nextafter(high, -math.inf)]
    special += [math.nextafter(low, -math.inf), math.nextafter(high, math.inf), 5e-324, 2.2e-308, 1e308, 0.0]
    return st.one_of(st.sampled_from(special), st.floats(low, high), st.floats(allow_nan=False))


EDGE_VALUE = {
    "k1": _edges(RANKER_PARAMS["bm25"]["k1"].low, RANKER_PARAMS["bm25"]["k1"].high),
    "b": _edges(0.0, 1.0),
    "mu": _edges(RANKER_PARAMS["ql"]["mu"].low, RANKER_PARAMS["ql"]["mu"].high),
    "weights": st.tuples(
        *[st.one_of(st.sampled_from([0.0, 5e-324, 2.2e-308, 1e-100, 1.0, 1e100, 1e308]), st.floats(0, 1e308))]
        * 3
    ),
    "window": st.sampled_from([2, 3, 8, 2**31 - 1]),
}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ranker=st.sampled_from(["bm25", "ql", "sdm"]),
    data=st.data(),
    collection=st.sampled_from(list(EDGE_COLLECTIONS)),
    query=st.sampled_from(["alpha beta", "beta", "alpha zzz beta", "zzz", "beta alpha alpha"]),
)
def test_every_accepted_value_gives_finite_scores_in_every_collection(
    edge_indexes, ranker, data, collection, query
):
    """Over the whole accepted domain (its bounds and the floats next to them included) every score of
    every document is finite, in an empty collection, one of empty documents and one of very unequal
    lengths alike; a value outside it is refused naming the parameter."""
    index = edge_indexes[collection]
    names = [n for n in RANKER_PARAMS[ranker] if n in EDGE_VALUE]
    params = {name: data.draw(EDGE_VALUE[name], label=name) for name in names}
    try:
        scores = index.score(query, ranker=ranker, **params)
    except InvalidInputError as err:
        assert any(name in str(err) for name in params), err
        return
    assert np.isfinite(scores).all(), (params, scores)
    assert len(scores) == len(EDGE_COLLECTIONS[collection])
    hits = index.search(query, k=5, ranker=ranker, **params)
    assert all(math.isfinite(h.score) for h in hits)


@pytest.mark.parametrize("scale", [5e-324, 1e-200, 1.0, 1e200, 1e308 / 0.85 * 0.5])
def test_sdm_weights_are_proportions_whatever_their_scale(index, scale):
    base = index.score("alpha beta gamma", ranker="sdm", weights=(0.85, 0.10, 0.05))
    if scale == 5e-324:  # every weight the smallest denormal: equal proportions
        scaled = index.score("alpha beta gamma", ranker="sdm", weights=(scale, scale, scale))
        equal = index.score("alpha beta gamma", ranker="sdm", weights=(1, 1, 1))
        np.testing.assert_allclose(scaled, equal, rtol=1e-12)
        return
    scaled = index.score(
        "alpha beta gamma", ranker="sdm", weights=tuple(w * scale for w in (0.85, 0.10, 0.05))
    )
    np.testing.assert_allclose(scaled, base, rtol=1e-12)
    assert [
        h.row
        for h in index.search(
            "alpha beta gamma", ranker="sdm", weights=(0.85 * scale, 0.1 * scale, 0.05 * scale)
        )
    ] == [h.row for h in index.search("alpha beta gamma", ranker="sdm")]


@pytest.mark.parametrize(("name", "value"), [("mu", 5e-324), ("mu", 1e-7), ("k1", 5e-324), ("k1", 0.0)])
def test_values_below_the_finite_domain_are_refused(index, name, value):
    ranker = "bm25" if name == "k1" else "ql"
    with pytest.raises(InvalidInputError, match=f"{name} must be a finite number >= 1e-06"):
        index.score("alpha", ranker=ranker, **{name: value})
