"""Synthetic keyword-question generator (Ding & Balog ICTIR'18 Sec. 3): KQGM, phrases, KQF, TDF, pipeline."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import datasets
import numpy as np
import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.synthetic import filters as filters_module
from hf_querygen.synthetic.filters import SearchIndex, keyword_query_filter, tdf_score, top_l
from hf_querygen.synthetic.kqgm import (
    QUESTION_WORDS,
    CollectionStatistics,
    KeywordQueryGenerator,
    KQGMConfig,
    LengthPrior,
    term_distribution,
)
from hf_querygen.synthetic.phrases import PhraseDetector
from hf_querygen.synthetic.pipeline import SynthesisConfig, synthesize

TOY = [["a", "b", "b", "c"], ["b", "c"], ["c", "d"]]


@dataclass
class FakeHit:
    id: str
    score: float


class BruteForceIndex:
    """In-test stand-in for hf_querygen.retrieval.Index: scores every document by the summed idf of the
    distinct query terms it contains (ties by id), no index structure at all."""

    def __init__(self, texts: list[str], ids: list[str]):
        self.docs = [(i, set(t.split())) for i, t in zip(ids, texts, strict=True)]
        df = Counter(w for _, d in self.docs for w in d)
        self.idf = {w: math.log((len(self.docs) + 1) / n) for w, n in df.items()}
        self.calls: list[int] = []

    def search_batch(self, queries, k=10, ranker="bm25", threads=None, **params):
        self.calls.append(len(queries))
        out = []
        for q in queries:
            terms = set(q.split())
            scored = [(sum(self.idf[w] for w in terms & d), i) for i, d in self.docs]
            scored = sorted((s, i) for s, i in scored if s > 0)
            scored.sort(key=lambda x: (-x[0], x[1]))
            out.append([FakeHit(i, s) for s, i in scored[:k]])
        return out


def test_fake_index_satisfies_protocol():
    assert isinstance(BruteForceIndex(["a b"], ["x"]), SearchIndex)


# ------------------------------------------------------------------ Eq. (3)-(5)
def test_term_distributions_match_hand_computation():
    stats = CollectionStatistics.from_documents(TOY)  # n: a1 b3 c3 d1 (total 8); df: a1 b2 c3 d1; N=3
    terms, p = term_distribution(TOY[0], "popular", stats)
    assert dict(zip(terms, p, strict=True)) == pytest.approx({"a": 0.25, "b": 0.5, "c": 0.25})  # Eq. 3
    terms, p = term_distribution(TOY[0], "discriminative", stats)
    # Eq. 4: 1/P(t) = 8, 8/3, 8/3 -> sum 40/3
    assert dict(zip(terms, p, strict=True)) == pytest.approx({"a": 0.6, "b": 0.2, "c": 0.2})
    terms, p = term_distribution(TOY[0], "combination", stats)
    z = math.log(3) + 2 * math.log(1.5)  # Eq. 5: c occurs in every question -> weight 0
    assert dict(zip(terms, p, strict=True)) == pytest.approx(
        {"a": math.log(3) / z, "b": 2 * math.log(1.5) / z, "c": 0}
    )


def test_term_distribution_outside_collection_adds_the_question():
    stats = CollectionStatistics.from_documents(TOY)
    with pytest.raises(InvalidInputError, match="in_collection=False"):
        term_distribution(["a", "zebra"], "discriminative", stats)
    terms, p = term_distribution(["a", "zebra"], "discriminative", stats, in_collection=False)
    # with the question added: n(a)=2, n(zebra)=1, total 10 -> 1/P = 5, 10
    assert dict(zip(terms, p, strict=True)) == pytest.approx({"a": 1 / 3, "zebra": 2 / 3})


# ------------------------------------------------------------------ Eq. (6) and Algorithm 1
def _first_draw_frequencies(generator, prepared, weights, draws=20000):
    rng = np.random.default_rng(0)
    counts = Counter(generator.sample_terms(prepared, rng, 1, weights)[0] for _ in range(draws))
    return {t: c / draws for t, c in counts.items()}


def test_paraphrase_mixture_first_draw_follows_eq6():
    docs = [["what", "is", "x", "y"], ["z", "w"], ["y", "z", "v"], ["how", "v", "u"]]
    stats = CollectionStatistics.from_documents(docs)
    config = KQGMConfig(strategy="popular", paraphrase=True, phrases=False, alpha=0.5, beta=0.3)
    gen = KeywordQueryGenerator(stats, config, LengthPrior.from_lengths([3]))
    prepared = gen.prepare("what is x y", paraphrases=["z w"])
    # P(t|C_q): C_q = q + its paraphrase concatenated: what is x y z w, each 1/6
    expected = {}
    for t in stats.vocab:
        if t in QUESTION_WORDS:
            continue
        p_q = 0.25 if t in ("is", "x", "y") else 0.0
        p_c = 1 / 6 if t in ("is", "x", "y", "z", "w") else 0.0
        expected[t] = 0.5 * p_q + 0.3 * p_c + 0.2 * stats.probability(t)
    z = sum(expected.values())  # "what"/"how" have probability 0 (Sec. 3.1.2): renormalise
    observed = _first_draw_frequencies(gen, prepared, config.weights)
    assert set(observed) <= set(expected)
    for t, p in expected.items():
        assert observed.get(t, 0.0) == pytest.approx(p / z, abs=0.012), t


def test_sampling_constraints_length_no_question_words_no_repeats():
    rng = np.random.default_rng(1)
    docs = [f"what is the t{i} of t{i + 1} and t{i + 2} in t{i + 3}".split() for i in range(30)]
    stats = CollectionStatistics.from_documents(docs)
    prior = LengthPrior.from_lengths([3, 4, 4, 5, 7, 9, 1])
    assert set(prior.as_dict()) == {3, 4, 5, 6, 7}
    gen = KeywordQueryGenerator(stats, KQGMConfig(paraphrase=False, phrases=False, lam=0.5), prior)
    for i in range(300):
        text = " ".join(docs[i % 30][: 4 + i % 6])  # 4..9 terms
        k = gen.generate(text, rng)
        q_len = len(text.split())
        assert 3 <= len(k) <= 7 and len(k) < q_len
        assert not set(k) & QUESTION_WORDS
        assert len(set(k)) == len(k)
    assert {prior.sample(rng, 5) for _ in range(200)} == {3, 4}
    assert prior.sample(rng, 3) == 2  # no allowed s < |q|: |q| - 1


def test_generation_is_deterministic_for_a_seed():
    stats = CollectionStatistics.from_documents(TOY)
    gen = KeywordQueryGenerator(
        stats, KQGMConfig(paraphrase=False, phrases=False), LengthPrior.from_lengths([3])
    )
    runs = [[gen.generate("a b b c d", np.random.default_rng(s)) for s in (7, 7, 8)] for _ in range(2)]
    assert runs[0] == runs[1]


# ------------------------------------------------------------------ phrases (Sec. 3.1.4)
def test_phrase_detection_on_toy_corpus():
    sentences = (
        [["how", "fast", "is", f"p{i}", "honda", "crf", "230", f"s{i}"] for i in range(40)]
        + [["what", "is", "the", "honda", "crf", "230", "price"]] * 20
        + [["where", "is", "honda", "made"], ["crf", "rules"], ["230", "volts"], ["price", "of", "it"]] * 3
        + [[f"x{i}", f"y{i}", f"z{i}"] for i in range(200)]  # a vocabulary of realistic size
    )
    detector = PhraseDetector.train(sentences, min_count=2, threshold=0.5)
    units = detector.transform(["how", "fast", "is", "a", "2004", "honda", "crf", "230"])
    assert "honda_crf_230" in units and "how" in units  # a trigram from the second pass; WH-words stay alone
    assert "honda_crf_230" in detector.phrasegrams
    # why the second pass has its own delimiter: with "_" in both, the frozen second pass exports no
    # phrasegram of two bigrams/a bigram and a word, so the trigram is never joined
    from gensim.models.phrases import Phrases

    first = Phrases(sentences, min_count=2, threshold=0.5).freeze()
    same = Phrases([first[s] for s in sentences], min_count=2, threshold=0.5).freeze()
    assert "honda_crf_230" not in same.phrasegrams
    assert "honda_crf_230" not in same[first[["how", "fast", "is", "a", "2004", "honda", "crf", "230"]]]


def test_phrase_is_one_sampling_unit():
    sentences = (
        [[f"p{i}", "honda", "crf", "230", f"s{i}"] for i in range(30)]
        + [["honda", "x"], ["crf", "y"], ["230", "z"]] * 2
        + [[f"x{i}", f"y{i}", f"z{i}"] for i in range(200)]
    )
    detector = PhraseDetector.train(sentences, min_count=2, threshold=0.5)
    docs = [detector.transform(s) for s in sentences]
    stats = CollectionStatistics.from_documents(docs)
    gen = KeywordQueryGenerator(
        stats, KQGMConfig(paraphrase=False, phrases=True, lam=0.1), LengthPrior.from_lengths([3]), detector
    )
    prepared = gen.prepare("p1 honda crf 230 s2")
    assert "honda_crf_230" in prepared.support and "crf" not in prepared.support


# ------------------------------------------------------------------ KQF (Eq. 7) and TDF (Eq. 8)
def test_kqf_keeps_best_reciprocal_rank_and_exits_early():
    texts = ["red car engine", "red car paint", "blue car engine", "red paint job"]
    ids = ["q0", "q1", "q2", "q3"]
    index = BruteForceIndex(texts, ids)
    candidates = [
        ["red", "red paint", "paint job", "job"],  # q3: rank 3, 2 (q1 ties first by id), 1 -> stop
        ["blue", "zzz"],  # q1: never retrieved -> first candidate, rank 0
    ]
    results = keyword_query_filter(["q3", "q1"], candidates, index, top_n=3)
    assert results[0].chosen == 2 and results[0].rank == 1 and results[0].candidates_tried == 3
    assert results[0].retrieved == ["q3", "q1"]  # "paint" also matches q1
    assert results[1].chosen == 0 and results[1].rank == 0 and results[1].candidates_tried == 2
    assert index.calls == [2, 2, 1]  # batched rounds; q1 has no third candidate, q3 leaves after round 3
    # ties keep the first candidate: ranks 2, 3, 2
    tie = keyword_query_filter(["q2"], [["car engine", "car", "engine"]], index, top_n=3)
    assert tie[0].chosen == 0 and tie[0].rank == 2 and tie[0].candidates_tried == 3


def test_kqf_reference_by_exhaustive_search():
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(12)]
    texts = [" ".join(rng.choice(vocab, 5, replace=False)) for _ in range(25)]
    ids = [f"q{i}" for i in range(25)]
    index = BruteForceIndex(texts, ids)
    cands = [[" ".join(rng.choice(t.split(), 2, replace=False)) for _ in range(6)] for t in texts]
    got = keyword_query_filter(ids, cands, index, top_n=5)
    for qid, cs, res in zip(ids, cands, got, strict=True):
        ranks = [
            next((r for r, h in enumerate(hits, 1) if h.id == qid), 0) for hits in index.search_batch(cs, k=5)
        ]
        rr = [1 / r if r else 0 for r in ranks]
        assert res.chosen == int(np.argmax(rr)) and res.rank == ranks[res.chosen]


def test_kqf_keep_adds_further_rank_one_candidates_and_keeps_the_same_choice():
    texts = ["red car engine", "red car paint", "blue car engine", "red paint job"]
    ids = ["q0", "q1", "q2", "q3"]
    index = BruteForceIndex(texts, ids)
    candidates = [
        ["red", "paint job", "job", "paint job", "red job", "red paint job"],  # q3: rank 3, then 1, 1, ...
        ["blue", "zzz"],  # q1: never retrieved
        ["car engine", "blue", "blue car", "blue engine"],  # q2: rank 2, then 1, 1, 1
    ]
    one = keyword_query_filter(["q3", "q1", "q2"], candidates, index, top_n=3)
    three = keyword_query_filter(["q3", "q1", "q2"], candidates, index, top_n=3, keep=3)
    assert [(r.chosen, r.rank, r.retrieved) for r in one] == [(r.chosen, r.rank, r.retrieved) for r in three]
    assert all(r.also == [] for r in one)
    # q3: "paint job" kept (round 1), its repeat skipped, "job" and "red job" rank q3 first: 3 found
    assert [j for j, _ in three[0].also] == [2, 4] and three[0].candidates_tried == 5
    assert three[0].also[0][1] == ["q3"]  # each further candidate's own retrieved ids
    assert three[1].also == [] and three[1].candidates_tried == 2
    assert three[2].chosen == 1 and [j for j, _ in three[2].also] == [2, 3]
    with pytest.raises(InvalidInputError, match="keep"):
        keyword_query_filter(["q3"], candidates[:1], index, keep=0)


def test_pipeline_with_several_keyword_queries_per_question(tmp_path):
    single = _run(tmp_path, "one")
    several = _run(tmp_path, "three", keyword_queries_per_question=3)
    assert len(several) > len(single) and set(several["query_number"]) <= {1, 2, 3}
    kept = several.filter(lambda row: row["query_number"] == 1)
    for column in ("id", "keyword_query", "kqf_candidate", "kqf_rank", "tdf_score"):
        assert kept[column] == single[column], column
    by_question: dict = {}
    for row in several:
        by_question.setdefault(row["id"], []).append(row)
    for rows in by_question.values():
        assert [r["query_number"] for r in rows] == list(range(1, len(rows) + 1))
        assert len({r["keyword_query"] for r in rows}) == len(rows)  # distinct keyword queries
        assert all(r["kqf_rank"] == 1 for r in rows[1:])  # the further ones pass the filter
    assert "Up to 3 keyword queries" in (tmp_path / "three" / "README.md").read_text()
    with pytest.raises(InvalidInputError, match="needs the index"):
        _run(tmp_path, "no-index", index=False, keyword_queries_per_question=2)


def test_tdf_score_and_top_l():
    assert tdf_score(["a", "b", "c", "d"], {"a", "c", "x"}) == 0.5
    assert tdf_score([], {"a"}) == 0.0
    ds = datasets.Dataset.from_dict({"id": list("abcd"), "tdf_score": [0.1, 0.9, 0.5, 0.9]})
    assert top_l(ds, 3)["id"] == ["b", "d", "c"]


# ------------------------------------------------------------------ the pipeline
def _toy_questions():
    base = [
        ("what is the capital of france", "c1"),
        ("which city is the capital of france", "c1"),
        ("how tall is the eiffel tower", "c2"),
        ("what is the height of the eiffel tower", "c2"),
        ("who wrote the hobbit novel", "c3"),
        ("who is the author of the hobbit", "c3"),
        ("when did the berlin wall fall down", "c4"),
        ("how many people live in berlin germany", "c5"),
        ("what is the longest river in africa", "c6"),
        ("where is the amazon river located", "c7"),
        ("what language is spoken in brazil today", "c8"),
    ]
    rows = {"id": [], "question": [], "text": [], "cluster_id": [], "paraphrases": []}
    for i, (text, cluster) in enumerate(base):
        rows["id"].append(f"q{i:02d}")
        rows["question"].append(text + "?")
        rows["text"].append(text)
        rows["cluster_id"].append(cluster)
        rows["paraphrases"].append([t for t, c in base if c == cluster and t != text])
    return datasets.Dataset.from_dict(rows)


def _run(tmp_path, name, index=True, **kw):
    questions = _toy_questions()
    fake = BruteForceIndex(questions["text"], questions["id"]) if index else None
    config = SynthesisConfig(
        kqgm=KQGMConfig(strategy="combination", paraphrase=True, phrases=False, alpha=0.6, beta=0.3),
        seed=kw.pop("seed", 5),
        num_candidates=4,
        top_n=5,
        shard_size=kw.pop("shard_size", 4),
        **kw,
    )
    return synthesize(
        questions, tmp_path / name, config, LengthPrior.from_lengths([3, 4]), fake, top_l=5, progress=False
    )


def test_pipeline_writes_hub_folder_and_is_deterministic(tmp_path):
    first = _run(tmp_path, "a")
    assert len(first) == 11 and first["id"] == sorted(first["id"])
    again = _run(tmp_path, "b", num_proc=2, shard_size=6)  # other sharding / processes: same pairs
    assert first["keyword_query"] == again["keyword_query"]
    assert first["kqf_rank"] == again["kqf_rank"]
    other = _run(tmp_path, "c", seed=6)
    assert other["keyword_query"] != first["keyword_query"]
    assert all(1 <= c <= 4 for c in first["kqf_candidates_tried"])
    assert all(0.0 <= s <= 1.0 for s in first["tdf_score"])
    loaded = datasets.load_dataset(str(tmp_path / "a"), "all", split="train")
    assert loaded["keyword_query"] == first["keyword_query"]
    top = datasets.load_dataset(str(tmp_path / "a"), "top_l", split="train")
    assert len(top) == 5 and top["tdf_score"] == sorted(first["tdf_score"], reverse=True)[:5]
    assert "configs:" in (tmp_path / "a" / "README.md").read_text()


def test_pipeline_without_index_keeps_first_candidate(tmp_path):
    ds = _run(tmp_path, "n", index=False)
    assert set(ds["kqf_rank"]) == {-1} and all(math.isnan(s) for s in ds["tdf_score"])


def test_pipeline_resumes_after_a_kill(tmp_path, monkeypatch):
    reference = _run(tmp_path, "full")
    real = filters_module.keyword_query_filter
    calls = {"n": 0}

    def dies_on_second_shard(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed")
        return real(*args, **kwargs)

    import hf_querygen.synthetic.pipeline as pipeline_module

    monkeypatch.setattr(pipeline_module, "keyword_query_filter", dies_on_second_shard)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "killed")
    shard_files = sorted((tmp_path / "killed" / "data" / "all").glob("*.parquet"))
    assert len(shard_files) == 1 and not list((tmp_path / "killed").rglob("*.tmp"))
    mtime = shard_files[0].stat().st_mtime_ns
    monkeypatch.setattr(pipeline_module, "keyword_query_filter", real)
    resumed = _run(tmp_path, "killed")
    assert shard_files[0].stat().st_mtime_ns == mtime  # the finished shard was not redone
    assert resumed["keyword_query"] == reference["keyword_query"]
    assert resumed["tdf_score"] == reference["tdf_score"]
    with pytest.raises(InvalidInputError, match="different"):
        _run(tmp_path, "killed", seed=99)


# ------------------------------------------------------------------ Table 1 machinery
def test_first_s_of_a_long_draw_is_an_s_draw():
    """Table 1 draws 7 units once and truncates per fold: exact because draws are sequential."""
    docs = [f"what is t{i} of t{i + 1} and t{i + 2} in t{i + 3} u{i}".split() for i in range(20)]
    stats = CollectionStatistics.from_documents(docs)
    gen = KeywordQueryGenerator(
        stats, KQGMConfig(paraphrase=False, phrases=False), LengthPrior.from_lengths([3])
    )
    prep = gen.prepare(" ".join(docs[3]))
    for s in range(1, 7):
        long = gen.sample_terms(prep, np.random.default_rng(11), 7, (0.6, 0.0, 0.4))
        short = gen.sample_terms(prep, np.random.default_rng(11), s, (0.6, 0.0, 0.4))
        assert long[:s] == short


def test_table1_grid_and_configurations():
    from hf_querygen.experiments.ding2018.table1 import PAPER_NUMBERS, _configs, parameter_grid

    baseline, paraphrase = parameter_grid(False), parameter_grid(True)
    assert len(baseline) == 9 and baseline[0] == (0.9, 0.0, 0.1)  # lambda = 0.1
    assert len(paraphrase) == 45  # alpha in [0.1, 0.9], beta in [0.1, 1 - alpha]
    assert all(a >= 0.1 and b >= 0.1 and c >= -1e-9 and abs(a + b + c - 1) < 1e-9 for a, b, c in paraphrase)
    assert sorted(c.name for c in _configs()) == sorted(PAPER_NUMBERS)


def test_clusters_merge_transitively():
    from hf_querygen.synthetic.corpus import connected_clusters

    # rows (text, group): A-B share g0 (a ComQA cluster), B-C share g1 (a Quora pair), D alone,
    # E appears in two configs' groups g3 and g4 with F in g4
    texts = {"A": 0, "B": 1, "C": 2, "D": 3, "E": 4, "F": 5}
    rows = [("A", 0), ("B", 0), ("B", 1), ("C", 1), ("D", 2), ("E", 3), ("E", 4), ("F", 4)]
    labels = connected_clusters(
        np.array([texts[t] for t, _ in rows]), np.array([g for _, g in rows]), len(texts), 5
    )
    assert labels[0] == labels[1] == labels[2]
    assert labels[4] == labels[5]
    assert len({labels[0], labels[3], labels[4]}) == 3
