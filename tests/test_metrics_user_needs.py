"""The measures of what users need beside ROUGE: question well-formedness (a classifier trained on the
query-wellformedness corpus), keywords kept, and semantic similarity to the references."""

from __future__ import annotations

import json
import os

import pytest
from _wellformedness_toy import TINY_SETTINGS, write_corpus
from _wellformedness_toy import tiny_classifier as build_tiny_classifier

from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.metrics import wellformedness_classifier as wfc
from hf_querygen.metrics.keywords_kept import content_words, keywords_kept
from hf_querygen.metrics.semantic_similarity import semantic_similarity


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    return build_tiny_classifier(tmp_path_factory.mktemp("wf"))


def test_question_text_ignores_case_and_the_ending():
    assert wfc.question_text("What is the Capital of France?") == "what is the capital of france ?"
    assert wfc.question_text("what is the capital of france ?") == "what is the capital of france ?"
    assert wfc.question_text("  capital   france ") == "capital france ?"
    assert wfc.question_text("really?!.") == "really ?"
    assert wfc.question_text("") == "?"
    with pytest.raises(InvalidInputError):
        wfc.question_text(3)


def test_tiny_classifier_is_trained_selected_on_validation_and_tested(tiny_classifier):
    folder, data, backbone = tiny_classifier
    info = wfc.classifier_report(folder)
    assert info["sizes"] == {"train": 80, "validation": 24, "test": 24}
    assert info["majority_class"] == "not_well_formed"
    # the frames decide the label, so the tiny model learns them: clearly above the majority class
    assert info["test_accuracy"] >= info["majority_test_accuracy"] + 0.2, info
    assert info["validation_accuracy"] >= 0.9, info
    assert info["best_checkpoint"].startswith("checkpoint-")
    assert not (folder.with_name(folder.name + ".work")).exists()  # the trainer's checkpoints are gone
    scores = wfc.wellformedness_scores(
        [
            "What is the capital of peru chile?",
            "who was the first president of kenya nepal",
            "peru chile capital",
            "population japan egypt owls",
        ],
        folder,
    )
    assert scores["n"] == 4 and scores["wellformed"] == 0.5, scores
    probs = wfc.load_classifier(folder).probabilities(
        ["WHAT IS THE CAPITAL OF PERU", "what is the capital of peru ?"]
    )
    assert probs[0] == pytest.approx(probs[1], abs=1e-6)  # case and the ending do not count
    # a second build of the same inputs is the cached folder, not a new training
    mtime = (folder / wfc.INFO_FILE).stat().st_mtime_ns
    assert wfc.build_classifier(backbone, data_dir=data, settings=TINY_SETTINGS, output_dir=folder) == folder
    assert (folder / wfc.INFO_FILE).stat().st_mtime_ns == mtime


def test_the_cache_key_follows_the_data_the_backbone_and_the_settings(tiny_classifier, tmp_path):
    from hf_querygen.pretrained import resolve_backbone

    _, data, backbone = tiny_classifier
    resolved = resolve_backbone(backbone)
    key = wfc.classifier_key(resolved, TINY_SETTINGS, data)
    assert key == wfc.classifier_key(resolved, TINY_SETTINGS, data)
    other_settings = wfc.ClassifierSettings(**{**TINY_SETTINGS.__dict__, "seed": 1})
    assert wfc.classifier_key(resolved, other_settings, data) != key
    changed = write_corpus(tmp_path / "data", seed=1)
    assert wfc.classifier_key(resolved, TINY_SETTINGS, changed) != key


@pytest.mark.filterwarnings("ignore::hf_querygen.errors.CorpusCountWarning")
def test_the_tiny_build_is_deterministic(tiny_classifier, tmp_path):
    folder, data, backbone = tiny_classifier
    again = wfc.build_classifier(
        backbone, data_dir=data, settings=TINY_SETTINGS, output_dir=tmp_path / "again"
    )
    first, second = wfc.classifier_report(folder), wfc.classifier_report(again)
    assert first["test_accuracy"] == second["test_accuracy"]
    texts = ["what is the capital of chile", "chile capital", "nepal the first how many"]
    assert wfc.load_classifier(folder).probabilities(texts) == pytest.approx(
        wfc.load_classifier(again).probabilities(texts), abs=1e-6
    )


def test_wellformedness_bad_input_and_missing_classifier(tiny_classifier, tmp_path, monkeypatch):
    folder, _, _ = tiny_classifier
    with pytest.raises(InvalidInputError, match="no predictions"):
        wfc.wellformedness_scores([], folder)
    with pytest.raises(InvalidInputError, match="predictions"):
        wfc.wellformedness_scores("what is it", folder)
    with pytest.raises(ModelFolderError, match="not a classifier folder"):
        wfc.wellformedness_scores(["what is it"], tmp_path)
    monkeypatch.setenv("HF_QUERYGEN_CACHE", str(tmp_path / "empty-cache"))
    pytest.importorskip("all_minilm_l6_v2", reason="the default backbone needs the [pretrained] extra")
    with pytest.raises(ModelFolderError, match="hf-querygen wellformedness-classifier"):
        wfc.default_classifier()


# ---------------------------------------------------------------- keywords kept
def test_keywords_kept_counts_content_words_of_the_keyword_query():
    assert content_words("the capital of France") == ["capital", "france"]
    assert content_words("what is it") == ["what", "is", "it"]  # no content word: every word counts
    scores = keywords_kept(
        ["what is the capital of france ?", "who is the president ?", "Obama's birthplace?"],
        ["capital france", "president of the usa", "obamas birthplace"],
    )
    assert scores["keywords_kept"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert scores["all_keywords_kept"] == pytest.approx(2 / 3)
    assert scores["n"] == 3
    # no stemming: a plural is another word
    assert keywords_kept(["cheap flight to london"], ["cheap flights london"])[
        "keywords_kept"
    ] == pytest.approx(2 / 3)


def test_keywords_kept_bad_input():
    with pytest.raises(InvalidInputError, match="2 predictions but 1 sources"):
        keywords_kept(["a", "b"], ["a"])
    with pytest.raises(InvalidInputError, match=r"sources\[0\]"):
        keywords_kept(["a"], [" ? "])
    with pytest.raises(InvalidInputError, match="no predictions"):
        keywords_kept([], [])


# ---------------------------------------------------------------- semantic similarity
class _Embedder:
    """Bag-of-words vectors, L2-normalised (a stand-in for the sentence embedder)."""

    def __init__(self, vocabulary):
        self.vocabulary = {w: i for i, w in enumerate(vocabulary)}

    def encode(self, texts, batch_size=64, show_progress_bar=False):
        import numpy as np

        out = np.zeros((len(texts), len(self.vocabulary)), dtype="float32")
        for row, text in enumerate(texts):
            for word in text.split():
                out[row, self.vocabulary[word]] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def test_semantic_similarity_takes_max_and_mean_over_references():
    embedder = _Embedder(["a", "b", "c", "d"])
    scores = semantic_similarity(["a b", "c"], [["a b", "c d"], ["c"]], embedder=embedder)
    # example 1: cos(ab, ab) = 1, cos(ab, cd) = 0; example 2: 1
    assert scores["semantic_similarity"] == pytest.approx(1.0)
    assert scores["semantic_similarity_avg"] == pytest.approx((0.5 + 1.0) / 2)
    single = semantic_similarity(["a"], ["a b"], embedder=embedder)  # one reference as a string
    assert single["semantic_similarity"] == pytest.approx(2**-0.5, abs=1e-6)
    with pytest.raises(InvalidInputError, match="1 predictions but 2 references"):
        semantic_similarity(["a"], ["a", "b"], embedder=embedder)
    with pytest.raises(InvalidInputError, match=r"references\[0\] is empty"):
        semantic_similarity(["a"], [[]], embedder=embedder)


def test_our_embedder_encodes_each_text_once_per_process(monkeypatch):
    from hf_querygen.metrics import semantic_similarity as module

    encoded = []

    class Counting(_Embedder):
        def encode(self, texts, batch_size=64, show_progress_bar=False):
            encoded.extend(texts)
            return super().encode(texts)

    monkeypatch.setattr(module, "_VECTORS", type(module._VECTORS)())
    monkeypatch.setattr(module, "embedder_for", lambda backbone: Counting(["a", "b", "c", "d"]))
    first = semantic_similarity(["a b", "c"], [["a b", "c d"], ["c"]], backbone="toy")
    again = semantic_similarity(["a", "c"], [["a b", "c d"], ["c"]], backbone="toy")  # a new row, same refs
    assert sorted(encoded) == ["a", "a b", "c", "c d"]  # the references and "c" once
    assert first["semantic_similarity"] == pytest.approx(1.0)
    assert again["per_example"] == pytest.approx([2**-0.5, 1.0], abs=1e-6)
    other = semantic_similarity(["a"], ["a"], backbone="another")  # another backbone: its own vectors
    assert encoded[-1] == "a" and other["n"] == 1


def test_semantic_similarity_with_the_offline_minilm():
    pytest.importorskip("all_minilm_l6_v2", reason="needs the [pretrained] extra")
    scores = semantic_similarity(
        ["what is the capital of france ?", "how do i sort a list in python"],
        [["What is France's capital city?"], ["Which city is the capital of France?"]],
    )
    per = scores["per_example"]
    assert per[0] > 0.8 and per[1] < 0.3, per


@pytest.mark.slow
def test_the_real_classifier_separates_formed_from_malformed_questions():
    """The cached classifier of the default backbone (built by `hf-querygen wellformedness-classifier`)."""
    pytest.importorskip("all_minilm_l6_v2", reason="needs the [pretrained] extra")
    try:
        folder = wfc.default_classifier()
    except ModelFolderError:
        pytest.skip("the real classifier is not built on this machine (3-35 minutes on one CPU thread)")
    info = wfc.classifier_report(folder)
    assert info["test_accuracy"] >= info["majority_test_accuracy"] + 0.05, info
    formed = [
        "what is the capital of france ?",
        "who wrote the novel war and peace ?",
        "how tall is mount everest ?",
    ]
    malformed = ["capital france ?", "war peace novel wrote who ?", "everest tall how mount ?"]
    probs = wfc.load_classifier(folder).probabilities(formed + malformed)
    assert min(probs[:3]) > max(probs[3:]), probs
    assert os.fspath(folder)  # the folder it came from (for the report)
    json.dumps(info)


@pytest.mark.filterwarnings("ignore::hf_querygen.errors.CorpusCountWarning")
def test_the_build_command_writes_a_folder_and_prints_its_accuracies(tiny_classifier, tmp_path, capsys):
    from hf_querygen.cli import main

    _, data, backbone = tiny_classifier
    out = tmp_path / "built"
    arguments = ["wellformedness-classifier", "--backbone", str(backbone), "--data-dir", str(data)]
    assert main([*arguments, "--output-dir", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["folder"] == str(out) and printed["sizes"]["test"] == 24
    assert 0.0 <= printed["test_accuracy"] <= 1.0 and "majority_test_accuracy" in printed
    assert (out / "config.json").is_file() and (out / wfc.INFO_FILE).is_file()


def test_the_table_measures_read_the_classifier_of_the_runs_data_folder(tmp_path, monkeypatch):
    """A reproduction run with --data-dir elsewhere than the default looks its classifier up by that
    folder's corpus, in the records' measures and in the table's config alike."""
    import datasets

    from hf_querygen.experiments.ding2018.analysis import user_measures
    from hf_querygen.tasks.base import TaskData, get_task
    from hf_querygen.tasks.k2q import questions

    asked = []

    def classifier_of(data_dir=None):
        asked.append(data_dir)
        raise InvalidInputError("not built")

    monkeypatch.setattr(wfc, "default_classifier", classifier_of)
    monkeypatch.setattr(questions, "_CLASSIFIERS", {})
    split = datasets.Dataset.from_dict({"keyword_query": ["capital france"], "question": ["what is it ?"]})
    task = get_task("k2q")
    data = TaskData(task, datasets.DatasetDict(validation=split), tokenizer=None, data_dir=tmp_path)
    scores = user_measures(data, "validation", ["what is the capital of france ?"])
    assert asked == [tmp_path] and scores["keywords_kept"] == 1.0 and "wellformed" not in scores
    user_measures(data, "validation", ["what is france ?"])
    assert asked == [tmp_path]  # looked up once per folder
