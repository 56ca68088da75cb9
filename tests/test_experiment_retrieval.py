"""The NFCorpus retrieval reproduction's pieces: the NFCorpus reader, a tiny nl2kw model trained through
``hf_querygen.training`` loaded from a models folder as a keyword-query system, precomputed keyword
files, and the report."""

from __future__ import annotations

import json

import pytest

from hf_querygen.experiments import retrieval as experiment
from hf_querygen.retrieval import Index


@pytest.fixture(scope="module")
def nfcorpus_dev(data_dir):
    return experiment.load_nfcorpus_split(data_dir, "dev")


def test_nfcorpus_reader(nfcorpus_dev):
    data = nfcorpus_dev
    assert len(data["documents"]) == 3193 and all(d.startswith("MED-") for d in data["documents"])
    assert len(data["queries"]["vid-desc"]) == 102 and set(data["queries"]["vid-desc"]) == set(
        data["queries"]["vid-titles"]
    )
    levels = {level for docs in data["qrels"].values() for level in docs.values()}
    assert levels == {1, 2}  # graded: indirect and direct links


@pytest.mark.slow
def test_trained_model_folder_becomes_a_keyword_system(data_dir, tmp_path, nfcorpus_dev):
    from hf_querygen.training import DataSelection, Recipe, train_model

    models = tmp_path / "models"
    train_model(
        Recipe("liu2018-attn-seq2seq", quick=True, max_steps=3),
        DataSelection(corpus="nl2kw", data_dir=data_dir, max_train_examples=64, max_validation_examples=16),
        models / "attn_seq2seq",
    )
    ids = [q for q in nfcorpus_dev["queries"]["vid-desc"] if q in nfcorpus_dev["qrels"]][:3]
    (models / "tagger.jsonl").write_text(
        "".join(json.dumps({"id": f"dev/{q}", "keywords": ["vitamin", "diet"]}) + "\n" for q in ids)
    )
    (models / "notes.txt").write_text("not a system")
    callables, precomputed, skipped = experiment.trained_keyword_systems(models)
    assert set(callables) == {"attn_seq2seq"} and set(precomputed) == {"tagger"} and "notes.txt" in skipped
    texts = [nfcorpus_dev["queries"]["vid-desc"][q] for q in ids]
    keywords = callables["attn_seq2seq"](texts)
    assert len(keywords) == 3 and all(isinstance(w, str) for k in keywords for w in k)
    # the keyword queries go through the same engine and metrics as every other row
    docs = dict(list(nfcorpus_dev["documents"].items())[:300])
    index = Index.from_texts(list(docs.values()), ids=list(docs), show_progress=False)
    queries = {q: " ".join(k) or "diet" for q, k in zip(ids, keywords, strict=True)}
    scores = experiment._evaluate(index, queries, nfcorpus_dev["qrels"], "sdm")
    assert set(scores) == set(experiment.METRICS) and set(scores["ndcg@10"]) == set(ids)


def test_report_renders_from_the_document_alone(tmp_path):
    from hf_querygen.experiments._report import results_document

    runs = {}
    for split in experiment.SPLITS:
        for ranker in experiment.RANKERS:
            for name in ("description", "title", "yake", "description+yake"):
                runs[f"{split}/{ranker}/{name}"] = [
                    {m: 0.1 * i for m in experiment.METRICS} for i in range(3)
                ]
    for key in ("sanity/test/bm25/titles", "sanity/test/sdm/titles"):
        runs[key] = [{m: 0.3 for m in experiment.METRICS}]
    significance = {
        "test/sdm/yake": {m: {"p_value": 0.001, "mean_difference": 0.1} for m in experiment.METRICS}
    }
    document = results_document("retrieval", runs, {}, {"significance": significance, "skipped_systems": {}})
    markdown = experiment.render_markdown(document)
    assert (
        "| (d) description + YAKE |" in markdown
        and "0.100**" in markdown
        and "| BM25 (ours) | 0.300 |" in markdown
    )
    experiment.plot_ndcg(document, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 1000


def test_reformulation_is_selected_on_dev_and_read_on_test():
    """The raw query's best dev ranker is the baseline; a row is selected only when better on dev at
    p < 0.05."""
    queries = [f"q{i}" for i in range(12)]

    def scores(values):
        return {"ndcg@10": dict(zip(queries, values, strict=True))}

    low, mid, high = [0.2] * 12, [0.3] * 12, [0.3 + 0.02 * (i % 3 + 1) for i in range(12)]
    per_query = {
        "dev/bm25/raw_query": scores(mid),
        "dev/dense/raw_query": scores(low),
        "dev/bm25/yake": scores(high),  # better everywhere on dev
        "dev/dense/yake": scores([0.9] + [0.2] * 11),  # one lucky query: not significant
        "dev/bm25/description": scores([0.99] * 12),  # the input itself is no reformulation
        "test/bm25/raw_query": scores(mid),
        "test/dense/raw_query": scores(mid),
        "test/bm25/yake": scores(low),
        "test/dense/yake": scores(mid),
        "test/bm25/description": scores(mid),
    }
    selection = experiment.select_reformulation(per_query)
    assert selection["baseline"] == {
        "query": "raw_query",
        "ranker": "bm25",
        "dev": pytest.approx(0.3),
        "test": pytest.approx(0.3),
    }
    assert [(c["query"], c["ranker"]) for c in selection["candidates_dev"]] == [
        ("yake", "bm25"),
        ("yake", "dense"),
    ]
    chosen = selection["selected"]
    assert (chosen["query"], chosen["ranker"]) == ("yake", "bm25") and chosen["p_value"] < 0.05
    assert chosen["test"] == pytest.approx(0.2) and chosen["test_vs_baseline"]["mean_difference"] < 0
    assert "does not hold on test" in "\n".join(experiment._reformulation_markdown(selection))


def test_quick_run_with_dense_and_hybrid_rows(data_dir, tmp_path, monkeypatch):
    """The whole run at quick size, the dense rows by a tiny random BERT (the real encoder: MiniLM)."""
    from _dense_toy import tiny_bert

    from hf_querygen.pretrained import SentenceEmbedder

    tiny = SentenceEmbedder(tiny_bert(tmp_path / "bert"), device="cpu")
    monkeypatch.setattr(experiment, "dense_embedder", lambda: (tiny, None))
    monkeypatch.setattr(experiment, "QUICK_DOCUMENTS", 60)
    monkeypatch.setenv("HF_QUERYGEN_CACHE", str(tmp_path / "cache"))
    document = experiment.run(tmp_path / "out", quick=True, data_dir=data_dir)
    systems = document["systems"]
    for ranker in experiment.RANKERS:
        assert systems[f"sanity/test/{ranker}/titles"]["ndcg@10"]["n"] == 50
        assert systems[f"test/{ranker}/raw_query"]["ndcg@10"]["n"] == 20
    sizes = document["config"]["num_documents"]
    assert 0 < sizes["dev"] <= 60 and 0 < sizes["test"] <= 60  # each split: its share of the first 60
    assert document["config"]["num_documents_sanity"] == sizes["test"]
    assert document["config"]["reformulation"]["baseline"]["query"] == "raw_query"
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert "### test, HYBRID (20 queries)" in markdown and "all-MiniLM-L6-v2, MTEB NFCorpus" in markdown
    assert "| query | BM25 | SDM | DENSE | HYBRID |" in experiment.summary_table(document)


def test_pseudo_relevance_keywords_by_hand():
    from hf_querygen.baselines.keyword_query import PseudoRelevanceKeywords
    from hf_querygen.errors import InvalidInputError

    texts = ["apple pie apple", "apple juice", "banana bread", "juice bar"]
    index = Index.from_texts(texts, show_progress=False)
    hits = index.search("apple", k=10, ranker="bm25")
    assert [h.row for h in hits] == [0, 1]
    p0, p1 = (h.score / sum(x.score for x in hits) for h in hits)
    weights = {"pie": p0 / 3, "juice": p1 / 2}  # P(w | R), apple is a query word
    expected = sorted(weights, key=lambda w: (-weights[w], w))
    prf = PseudoRelevanceKeywords(index, texts, documents=10, terms=1)
    assert prf("Apple?") == ["apple", expected[0]]
    assert PseudoRelevanceKeywords(index, texts, terms=5)("apple") == ["apple", *expected]
    assert prf("kiwi") == ["kiwi"] and prf("") == []  # nothing retrieved: the raw query
    with pytest.raises(InvalidInputError, match="3 texts for an index of 4"):
        PseudoRelevanceKeywords(index, texts[:3])
