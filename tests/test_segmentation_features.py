"""Segmentation features that exist for any query (text statistics, offline POS tagger), the warning when a
query has none, and the lin2017 split that shares no query text with training."""

import math
import warnings

import pytest

from hf_querygen.baselines.crf_segmenter import CRFSegmenter, CRFSettings, corpus_features, resource_coverage
from hf_querygen.baselines.segmentation_features import POSTagger, TextStatistics, cross_fitted_tags
from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter
from hf_querygen.corpora.webis_qsec_10 import SegmentationResources
from hf_querygen.experiments.lin2017.folds import disjoint_training_rows

pytest.importorskip("pycrfsuite")

TEXTS = [
    "Stainless steel chest freezers are on sale.",
    "A chest freezer of stainless steel keeps food cold.",
    "New York hotels near Central Park",
    "cheap hotels in new york city",
    "graffiti fonts for the alphabet",
]


def test_text_statistics_give_values_for_a_query_nobody_has_seen():
    statistics = TextStatistics.from_texts(TEXTS, titles=["New York City", "Central Park"])
    resources = statistics.resources()
    # an unseen query: its 2-grams are in the text, not in any query list
    words = "stainless steel chest freezers".split()
    assert resources.google_counts["stainless steel"] == 2
    n = statistics.tokens
    assert resources.msn_unigram_logprob["steel"] == pytest.approx(math.log10(2 / n))
    # PMI = log2 P(xy) / (P(x) P(y)) by hand: c(stainless steel)=2, c(stainless)=2, c(steel)=2
    assert resources.pmi["stainless steel"] == pytest.approx(math.log2(2 * n / (2 * 2)))
    assert "new york city" in resources.wikipedia_titles and "New York City" in resources.wikipedia_titles
    assert "steel chest" not in resources.wikipedia_titles
    features = corpus_features(words, 1, resources, None, [False, False, False])
    assert "left.log10count=none" not in features and "left.pmi=none" not in features
    assert resource_coverage(words, resources) > 0
    # a 2-gram the text never has: no value (the CRF's "none" bin), not a made-up count
    assert "freezers alphabet" not in resources.google_counts
    assert resources.google_counts.get("freezers alphabet") is None


def test_wt_runs_over_text_statistics():
    statistics = TextStatistics.from_texts(TEXTS, titles=["new york city", "central park"])
    segmenter = WikipediaTitleSegmenter(statistics.resources(), median_two_gram_count=1)
    assert segmenter.segment("new york city hotels") == "new york city|hotels"


def _tagged_queries():
    nouns = ["freezer", "hotel", "font", "park", "city", "steel", "car", "shoe"]
    adjectives = ["cheap", "new", "red", "big", "old"]
    words, tags = [], []
    for i, noun in enumerate(nouns):
        adjective = adjectives[i % len(adjectives)]
        words.append([adjective, noun, "in", nouns[(i + 3) % len(nouns)]])
        tags.append(["JJ", "NN", "IN", "NN"])
    return words, tags


def test_offline_pos_tagger_tags_an_unseen_query():
    words, tags = _tagged_queries()
    tagger = POSTagger(max_iterations=30).fit(words, tags)
    predicted = tagger.tag([["big", "steel", "in", "hotel"], ["old", "car"]])
    assert predicted == [["JJ", "NN", "IN", "NN"], ["JJ", "NN"]]
    crossed, full = cross_fitted_tags(words, tags, folds=2, max_iterations=30)
    assert [len(t) for t in crossed] == [len(w) for w in words]
    # the resources hand the tagger to the CRF: POS features for a query without shipped POS tags
    resources = TextStatistics.from_texts(TEXTS).resources(full)
    segmenter = CRFSegmenter(CRFSettings("paper+corpus", max_iterations=5), resources)
    assert segmenter.pos_tags_for([["cheap", "hotel"]], None) == [["JJ", "NN"]]


def _train(segmenter):
    words = [q.split() for q in ("stainless steel chest freezers", "new york hotels", "cheap hotels")]
    return segmenter.fit(words, [[0, 1, 0], [0, 1], [1]])


def test_crf_warns_once_when_a_query_has_none_of_its_features():
    corpus_like = SegmentationResources(
        google_counts={"stainless steel": 10, "chest freezers": 5, "new york": 99},
        msn_unigram_logprob={"stainless": -5.0, "steel": -4.0, "new": -2.0, "york": -3.0, "hotels": -4.0},
        pmi={"stainless steel": 3.0},
    )
    segmenter = _train(CRFSegmenter(CRFSettings("paper+corpus", max_iterations=10), corpus_like))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        segmenter.segment(["new york hotels"])  # covered: no warning
        assert not caught
        segmenter.segment(["graffiti fonts alphabet", "new york hotels"])
        segmenter.segment(["graffiti fonts alphabet"])
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages  # once per segmenter
    assert "1 of 2 queries have none of the corpus features" in messages[0]
    assert "graffiti fonts alphabet" in messages[0]
    # the same query with features that exist for any query: no warning
    text_segmenter = _train(
        CRFSegmenter(
            CRFSettings("paper+corpus", max_iterations=10), TextStatistics.from_texts(TEXTS).resources()
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert " ".join(text_segmenter.segment(["graffiti fonts alphabet"])[0]) == "graffiti fonts alphabet"


def test_paper_features_never_warn():
    segmenter = _train(CRFSegmenter(CRFSettings("paper", max_iterations=5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        segmenter.segment(["graffiti fonts alphabet"])


def test_disjoint_split_shares_no_query_text_with_training():
    queries = [
        "new york hotels",
        "cheap flights",
        "New York  hotels!",
        "graffiti fonts",
        "cheap-flights",
        "x y",
    ]
    test_rows = [0, 1]
    train_rows, removed = disjoint_training_rows(queries, test_rows)
    assert removed == 2 and train_rows == [3, 5]
    from hf_querygen.text import normalize_for_matching

    test_texts = {normalize_for_matching(queries[i]) for i in test_rows}
    assert not {normalize_for_matching(queries[i]) for i in train_rows} & test_texts


def test_lin2017_folds_share_no_query_with_their_training_part(data_dir):
    from hf_querygen.experiments import lin2017
    from hf_querygen.tasks.base import get_task

    for fold in lin2017.cross_validation_folds(get_task("segmentation"), lin2017.QUICK_BUDGET, data_dir):
        test = set(fold.splits["test"]["query"])
        assert test
        for part in (fold.extras["train_full"], fold.splits["train"], fold.splits["validation"]):
            assert not test & set(part["query"])


def test_saved_crf_names_the_features_it_needs(tmp_path):
    resources = TextStatistics.from_texts(TEXTS).resources()
    segmenter = _train(CRFSegmenter(CRFSettings("paper+corpus", max_iterations=5), resources))
    card = (segmenter.save(tmp_path / "crf") / "README.md").read_text()
    assert "Features this model needs" in card and "POS tags per word" in card
    assert "text statistics" in card  # where its features came from
    loaded = CRFSegmenter.load(tmp_path / "crf", resources)
    assert loaded.segment(["new york hotels"]) == segmenter.segment(["new york hotels"])


def test_readme_segmenter_recipe_is_the_best_pipeline_model_on_unseen_queries():
    """The README's `query-segmentation` recipe trains the system that the committed lin2017 table ranks
    best on unseen queries among the models pipeline() loads (trained rows and their decodings)."""
    import json
    import re
    from pathlib import Path

    from hf_querygen.experiments import lin2017

    root = Path(__file__).resolve().parents[1]
    recipe = re.search(
        r"hf-querygen train --system lin2017/(\w+) --output-dir runs/segmenter",
        (root / "README.md").read_text(),
    )
    assert recipe, "the README has no query-segmentation recipe"
    document = json.loads((root / "results" / "lin2017" / "results.json").read_text())
    # the warm_start budget's run (the same folds and scoring; results/lin2017/warm_start) adds its rows
    warm = root / "results" / "lin2017" / "warm_start" / "results.json"
    if warm.is_file():
        extra = json.loads(warm.read_text())["systems"]
        document["systems"].update({k: v for k, v in extra.items() if k not in document["systems"]})
    systems = {s.key: s for s in lin2017.REPRODUCTION.systems}
    loadable = [
        key
        for key in (*lin2017.report.UNSEEN_READY, "warm_start")
        if key in document["systems"] and (systems[key].preset or systems[key].decodes_model_of)
    ]
    best = max(loadable, key=lambda key: document["systems"][key]["query_accuracy"]["mean"])
    trained = systems[best].decodes_model_of or best
    assert recipe.group(1) == trained, (recipe.group(1), best)
