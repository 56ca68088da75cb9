"""K2Q (Ding & Balog ICTIR'18): KQF/TDF on the real index, SDM/TBM baselines, the test sets."""

from __future__ import annotations

import numpy as np
import pytest

from hf_querygen.baselines.k2q import SDMBaseline, TemplateBaseline, mine_template
from hf_querygen.errors import InvalidInputError
from hf_querygen.retrieval import Index
from hf_querygen.synthetic.filters import keyword_query_filter, tdf_score

QUESTIONS = [
    "what is the capital of france",
    "which city is the capital of france",
    "how tall is the eiffel tower",
    "what is the height of the eiffel tower",
    "who wrote the hobbit novel",
    "who is the author of the hobbit",
    "when did the berlin wall fall down",
    "how many people live in berlin germany",
    "what is the longest river in africa",
    "where is the amazon river located",
]
IDS = [f"q{i}" for i in range(len(QUESTIONS))]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return Index.from_texts(QUESTIONS, ids=IDS, path=tmp_path_factory.mktemp("k2q") / "index")


def test_kqf_and_tdf_on_the_real_sdm_index(index):
    # Eq. (7) on the real index must equal an exhaustive reference built from single SDM searches
    cands = [
        ["capital", "france city capital", "capital france"],
        ["hobbit", "author hobbit"],
        ["zzz", "yyy"],
    ]
    qids = ["q1", "q5", "q9"]
    got = keyword_query_filter(qids, cands, index, top_n=3, ranker="sdm", threads=2)
    for qid, cs, res in zip(qids, cands, got, strict=True):
        ranks = [next((r for r, h in enumerate(index.search(c, 3, "sdm"), 1) if h.id == qid), 0) for c in cs]
        rr = [1 / r if r else 0.0 for r in ranks]
        assert res.chosen == int(np.argmax(rr)) and res.rank == ranks[res.chosen]
        assert res.retrieved == (
            [h.id for h in index.search(cs[res.chosen], 3, "sdm")] if ranks[res.chosen] else []
        )
    assert got[1].rank == 1 and got[1].candidates_tried == 2  # "author hobbit" ranks q5 first: early exit
    assert got[2].rank == 0 and got[2].chosen == 0  # never retrieved: first candidate kept
    # Eq. (8): C_q = {q0, q1}; the kept query for q1 retrieves both France questions in its top 3
    assert tdf_score(got[0].retrieved, {"q0", "q1"}) == pytest.approx(
        sum(r in {"q0", "q1"} for r in got[0].retrieved) / len(got[0].retrieved)
    )


def test_sdm_baseline_returns_the_top_question(index):
    upstream = [q.capitalize() + "?" for q in QUESTIONS]
    sdm = SDMBaseline(index, IDS, upstream, threads=1)
    out = sdm.generate(["Eiffel Tower, height", "berlin wall", "qqqq"])
    assert out[0] == upstream[3] and out[1] == upstream[6] and out[2] == ""
    with pytest.raises(InvalidInputError):
        sdm.generate("one string")


def test_mine_template_slots_every_keyword_word():
    t = mine_template("capital_city france", "What is the capital city of France?")
    assert t.keywords == ("capital", "city", "france") and t.arity == 3
    assert t.instantiate(["main", "town", "spain"]) == "what is the main town of spain"
    assert mine_template("capital germany", "what is the capital of france") is None


def _vectors():
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=3)
    words = ["france", "germany", "capital", "river", "longest", "africa", "europe", "height", "tower"]
    vecs = np.array(
        [
            [1, 0, 0],
            [0.95, 0.1, 0],
            [0, 1, 0],
            [0, 0, 1],
            [0.1, 0.1, 1],
            [0.9, 0, 0.3],
            [0.92, 0, 0.35],
            [0, 0.5, 0.8],
            [0.1, 0.6, 0.7],
        ],
        dtype=np.float32,
    )
    kv.add_vectors(words, vecs)
    return kv


def test_tbm_instantiates_the_most_similar_template_by_arity(index):
    pairs = [
        ("france capital", "what is the capital of france"),
        ("longest river africa", "what is the longest river in africa"),
        ("tower height", "what is the height of the tower"),
        ("berlin unknownword", "the wall of berlin"),  # unknownword not in the question: no template
    ]
    fallback = SDMBaseline(index, IDS, QUESTIONS, threads=1)
    tbm = TemplateBaseline.from_pairs([k for k, _ in pairs], [q for _, q in pairs], _vectors(), fallback)
    assert sorted(tbm.templates) == [2, 3] and len(tbm.templates[2]) == 2
    # word order of the query does not matter: alignment maps germany->france slot, capital->capital
    assert tbm.generate(["capital germany"]) == ["what is the capital of germany"]
    assert tbm.generate(["longest river europe"]) == ["what is the longest river in europe"]
    # arity 1 has no template: the SDM fallback answers
    assert tbm.generate(["hobbit"]) == [fallback.generate(["hobbit"])[0]] and tbm.last_fallbacks == 1


def test_test_sets_have_keywords_and_references(data_dir):
    from hf_querygen.tasks.k2q.data import k2q_test_sets

    sets = k2q_test_sets(data_dir)
    assert sets["t0"].column_names == ["id", "keywords", "references"] and len(sets["t0"]) > 0
    assert all(len(r) == 1 for r in sets["t0"]["references"])
    nl = sets["nl2kw"]
    assert any(len(r) > 1 for r in nl["references"])  # topics with several questions
    from hf_querygen.corpora._base import normalize_for_matching as norm

    for k, refs in zip(nl["keywords"], nl["references"], strict=True):
        assert norm(k) not in {norm(r) for r in refs}


def test_sacre_bleu_loads_offline_as_an_evaluate_module():
    import evaluate

    import hf_querygen.metrics.sacrebleu_metric as module

    metric = evaluate.load(module.__file__)
    out = metric.compute(predictions=["the cat sat on the mat"], references=[["the cat sat on the mat"]])
    assert out["bleu"] == pytest.approx(1.0) and "tok:13a" in out["signature"]


def test_kqf_deduplication_gives_the_same_result_with_fewer_searches(index):
    class Counting:
        def __init__(self, inner):
            self.inner, self.sent = inner, 0

        def search_batch(self, queries, **kw):
            self.sent += len(queries)
            return self.inner.search_batch(queries, **kw)

    rng = np.random.default_rng(0)
    qids = IDS * 2  # the same question twice: its candidates repeat across rows of a round as well
    cands = [
        [" ".join(rng.choice(QUESTIONS[int(q[1:])].split(), 2, replace=False)) for _ in range(8)]
        for q in qids
    ]
    plain, dedup = Counting(index), Counting(index)
    a = keyword_query_filter(qids, cands, plain, top_n=5, ranker="sdm", threads=1, deduplicate=False)
    b = keyword_query_filter(qids, cands, dedup, top_n=5, ranker="sdm", threads=1)
    assert [(r.chosen, r.rank, r.retrieved, r.candidates_tried) for r in a] == [
        (r.chosen, r.rank, r.retrieved, r.candidates_tried) for r in b
    ]
    assert dedup.sent < plain.sent
