"""Segmentation representations, break fusion, metrics, the WT / WT+SNP baselines and the CRF."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_querygen.tasks.segmentation import (
    SegmentationError,
    bio_to_breaks,
    break_fusion,
    break_vote_shares,
    breaks_to_bio,
    breaks_to_segments,
    breaks_to_string,
    parse_segmentation,
    segmentation_to_target,
    segments_to_breaks,
    target_tokens_to_breaks,
)

METRIC_FILE = Path(__file__).resolve().parents[1] / "hf_querygen" / "metrics" / "segmentation.py"


# ---------------------------------------------------------------- representations
@pytest.mark.parametrize(
    ("segmentation", "breaks", "bio"),
    [  # Lin'17 Table 1
        ("graffiti fonts|alphabet", [0, 1], ["B", "I", "B"]),
        ("stainless steel|chest freezers", [0, 1, 0], ["B", "I", "B", "I"]),
        ("rutgers|online|graduate classes", [1, 1, 0], ["B", "B", "B", "I"]),
        ("review|on|breezes", [1, 1], ["B", "B", "B"]),
        ("one", [], ["B"]),
    ],
)
def test_round_trips_between_notations(segmentation, breaks, bio):
    words = segmentation.replace("|", " ").split()
    assert parse_segmentation(segmentation, " ".join(words)) == breaks
    assert breaks_to_string(words, breaks) == segmentation
    assert breaks_to_bio(breaks) == bio
    assert bio_to_breaks(bio) == breaks
    assert bio_to_breaks([["B", "I"].index(t) for t in bio]) == breaks  # ClassLabel ids
    segments = breaks_to_segments(words, breaks)
    assert segments == segmentation.split("|") and segments_to_breaks(segments) == breaks


def test_bad_segmentations_are_rejected_with_the_reason():
    with pytest.raises(SegmentationError, match="does not spell the query"):
        parse_segmentation("graffiti|fonts", "graffiti fonts alphabet")
    with pytest.raises(SegmentationError, match="empty segment"):
        parse_segmentation("graffiti||fonts")
    with pytest.raises(SegmentationError, match="needs 2"):
        breaks_to_segments(["a", "b", "c"], [1])
    with pytest.raises(SegmentationError, match="unknown BIO tags"):
        bio_to_breaks(["B", "O"])


def test_seq2seq_target_and_lenient_read_back():
    assert segmentation_to_target("graffiti fonts|alphabet") == "graffiti fonts | alphabet"
    words = ["new", "york", "times", "square"]
    assert target_tokens_to_breaks("new york | times square".split(), words) == [0, 1, 0]
    # a dropped word, an invented word and a leading / doubled break do not shift the alignment
    assert target_tokens_to_breaks("| new york | | cats times | square".split(), words) == [0, 1, 1]
    assert target_tokens_to_breaks([], words) == [0, 0, 0]


# ---------------------------------------------------------------- break fusion
def test_break_fusion_papers_example():
    votes = [(5, "graffiti fonts|alphabet"), (3, "graffiti|fonts|alphabet"), (2, "graffiti fonts alphabet")]
    assert break_vote_shares(votes, "graffiti fonts alphabet") == pytest.approx([0.3, 0.8])
    assert break_fusion(votes, "graffiti fonts alphabet") == [0, 1]


def test_break_fusion_breaks_on_a_tie():
    votes = [(5, "new york|hotels"), (5, "new york hotels")]
    assert break_fusion(votes, "new york hotels") == [0, 1]


def test_break_fusion_normalises_by_more_than_ten_votes():
    # 20 votes: 10 for a break at position 2 is a tie (break), 9 of 20 is a minority (no break)
    tie = [(10, "a b|c"), (10, "a b c")]
    assert break_fusion(tie, "a b c") == [0, 1]
    minority = [(9, "a|b c"), (11, "a b c")]
    assert break_fusion(minority, "a b c") == [0, 0]
    # 13 votes: 6 breaks is a minority although it would be a majority of 10
    thirteen = [(6, "a|b c"), (7, "a b c")]
    assert break_fusion(thirteen, "a b c") == [0, 0]
    assert break_vote_shares(thirteen, "a b c") == pytest.approx([6 / 13, 0.0])


def test_break_fusion_rejects_bad_votes():
    with pytest.raises(SegmentationError, match="non-positive"):
        break_fusion([(0, "a b")], "a b")
    with pytest.raises(SegmentationError, match="does not spell"):
        break_fusion([(3, "a c")], "a b")


# ---------------------------------------------------------------- metrics
def test_metrics_on_hand_examples():
    from hf_querygen.metrics.segmentation_scores import segmentation_scores

    predictions = ["graffiti fonts|alphabet", "a|b c d", ["new york", "times"]]
    references = ["graffiti fonts|alphabet", "a b|c|d", "new york|times"]
    scores = segmentation_scores(predictions, references)
    assert scores["query_accuracy"] == pytest.approx(2 / 3)
    # per query: 2/2, 0/3, 2/2 -> mean 2/3; pooled: 4 of 7 positions
    assert scores["break_accuracy"] == pytest.approx(2 / 3)
    assert scores["break_accuracy_pooled"] == pytest.approx(4 / 7)
    # segments: predicted 2 + 2 + 2 = 6, reference 2 + 3 + 2 = 7, correct 2 + 0 + 2 = 4
    assert scores["segment_precision"] == pytest.approx(4 / 6)
    assert scores["segment_recall"] == pytest.approx(4 / 7)
    assert scores["segment_f1"] == pytest.approx(2 * (4 / 6) * (4 / 7) / (4 / 6 + 4 / 7))


def test_metrics_refuse_misaligned_input():
    from hf_querygen.metrics.segmentation_scores import segmentation_scores

    with pytest.raises(ValueError, match=r"predictions\[0\] spells 'a b' but the reference spells 'a c'"):
        segmentation_scores(["a|b"], ["a c"])
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        segmentation_scores(["a", "b"], ["a"])


def test_evaluate_loads_the_metric_file_offline():
    import evaluate

    metric = evaluate.load(str(METRIC_FILE))
    result = metric.compute(
        predictions=["graffiti fonts|alphabet", "a|b"], references=["graffiti fonts|alphabet", "a b"]
    )
    assert result["query_accuracy"] == 0.5 and isinstance(result["query_accuracy"], float)
    assert result["break_accuracy"] == 0.5 and result["n_queries"] == 2


# ---------------------------------------------------------------- WT / WT+SNP
@pytest.fixture(scope="module")
def resources(data_dir):
    from hf_querygen.corpora.webis_qsec_10 import load_segmentation_resources

    return load_segmentation_resources(data_dir)


@pytest.fixture(scope="module")
def algorithms(data_dir):
    from hf_querygen.corpora import load_corpus

    return load_corpus("webis_qsec_10", "algorithms", data_dir=data_dir)["train"]


def test_wt_weights_equal_the_corpus_normalized_file(resources):
    from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter

    # the corpus ships the WWW'11 weights of every n-gram: titles |s|^2 + |s| * max 2-gram count,
    # others |s| * count; ours are computed from the Google counts and the title list
    segmenter = WikipediaTitleSegmenter(resources)
    mismatches = [
        ngram
        for ngram, weight in resources.normalized_weights.items()
        if segmenter.weight(ngram.split()) != weight
    ]
    assert not mismatches and len(resources.normalized_weights) == 20319


def test_wt_on_hand_made_resources():
    from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter, segmentations_in_order
    from hf_querygen.corpora.webis_qsec_10 import SegmentationResources

    assert list(segmentations_in_order(3)) == [[0, 0], [0, 1], [1, 0]]  # all-breaks is the fallback
    resources = SegmentationResources(
        google_counts={"new york": 1000, "york times": 900, "new york times": 800, "times square": 50},
        wikipedia_titles={"new york", "new york times", "times square"},
        ngram_pos={"cheap hotels": ("JJ", "NNS"), "in new": ("IN", "NP")},
    )
    wt = WikipediaTitleSegmenter(resources)
    # title weights: "new york times" 9 + 3 * 1000 = 3009 > "new york" 4 + 2 * 1000 = 2004
    assert wt.segment("new york times") == "new york times"
    assert wt.segment("new york times square") == "new york times|square"
    # "cheap hotels" is no title, so WT leaves it apart; it has no n-gram count either
    assert wt.segment("cheap hotels in new york") == "cheap|hotels|in|new york"
    resources.google_counts["cheap hotels"] = 10_000
    snp = WikipediaTitleSegmenter(resources, strict_noun_phrases=True)
    assert snp.segment("cheap hotels in new york") == "cheap hotels|in|new york"
    assert snp.segment("zzz yyy") == "zzz|yyy"  # nothing qualifies: every word alone


def test_wt_and_wt_snp_agree_with_the_published_outputs(resources, algorithms):
    from hf_querygen.baselines.wikipedia_titles import WikipediaTitleSegmenter

    sample = algorithms.select(range(0, algorithms.num_rows, 5))
    for strict, column, minimum in ((False, "wt", 0.99), (True, "wt_snp", 0.97)):
        ours = WikipediaTitleSegmenter(resources, strict)(sample["query"])
        identical = sum(a == b for a, b in zip(ours, sample[column], strict=True)) / len(ours)
        assert identical >= minimum, (column, identical)


# ---------------------------------------------------------------- CRF
@pytest.fixture(scope="module")
def small_folds(data_dir):
    from hf_querygen.corpora import load_corpus

    corpus = load_corpus("webis_qsec_10", data_dir=data_dir)["train"]
    train = corpus.filter(lambda row: row["fold"] != 0).select(range(700))
    test = corpus.filter(lambda row: row["fold"] == 0).select(range(300))
    return train, test


def test_crf_learns_and_beats_the_trivial_baseline(small_folds, tmp_path, resources):
    from hf_querygen.baselines.crf_segmenter import CRFSegmenter, CRFSettings
    from hf_querygen.metrics.segmentation_scores import segmentation_scores

    train, test = small_folds
    model = CRFSegmenter(CRFSettings("paper", c1=0.0, c2=0.1, max_iterations=60)).fit(
        train["words"], train["breaks"]
    )
    predictions = model.segment(test["query"])
    ours = segmentation_scores(predictions, test["reference"])
    every_word = segmentation_scores([q.replace(" ", "|") for q in test["query"]], test["reference"])
    assert ours["query_accuracy"] > every_word["query_accuracy"] + 0.05
    assert ours["break_accuracy"] > every_word["break_accuracy"]
    # saved and loaded: same predictions
    loaded = CRFSegmenter.load(model.save(tmp_path / "crf"))
    assert loaded.segment(test["query"]) == predictions

    rich = CRFSegmenter(CRFSettings("paper+corpus", c1=0.0, c2=0.1, max_iterations=60), resources)
    rich.fit(train["words"], train["breaks"], [resources.query_pos[i] for i in train["id"]])
    rich_predictions = rich.predict_breaks(test["words"], [resources.query_pos[i] for i in test["id"]])
    rich_scores = segmentation_scores(
        [breaks_to_string(w, b) for w, b in zip(test["words"], rich_predictions, strict=True)],
        test["reference"],
    )
    assert rich_scores["query_accuracy"] > ours["query_accuracy"]


def test_crf_model_selection_uses_only_the_training_data(small_folds):
    from hf_querygen.baselines.crf_segmenter import select_regularization
    from hf_querygen.corpora._base import validation_mask

    train, _ = small_folds
    grid = ((0.0, 0.1), (0.5, 0.0))
    settings, trials = select_regularization(
        train["words"], train["breaks"], train["id"], grid=grid, max_iterations=20
    )
    assert (settings.c1, settings.c2) in grid and len(trials) == 2
    held_out = sum(validation_mask(train["id"], 0.15))
    assert all(trial["n_queries"] == held_out for trial in trials) and 0 < held_out < len(train)


def test_crf_errors_are_clear():
    from hf_querygen.baselines.crf_segmenter import CRFSegmenter, CRFSettings

    with pytest.raises(ValueError, match="needs the corpus resources"):
        CRFSegmenter(CRFSettings("paper+corpus"))
    with pytest.raises(ValueError, match="feature_set"):
        CRFSegmenter(CRFSettings("words"))
    with pytest.raises(RuntimeError, match="not trained"):
        CRFSegmenter().segment(["a b"])
