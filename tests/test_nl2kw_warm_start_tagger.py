"""The warm-started keyword tagger (liu2018/warm_start_tagger) on a tiny random BERT built here: KEYWORD/O
labels on each question word's first piece, the preset and the prepared backbone must agree, a toy rule is
learned, and the saved folder decodes identically through ``pipeline("keyword-query-generation")``."""

from __future__ import annotations

import random

import datasets
import pytest
from _tiny_bert import save_tiny_bert

from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.base import get_task

FUNCTION_WORDS = ["what", "is", "the", "of", "how", "do", "i", "a", "for", "where", "can", "in"]
CONTENT_WORDS = ["graffiti", "fonts", "berlin", "population", "cheap", "freezers", "visa", "doha", "teacher"]
#: two content words exist only as pieces, so that labels must skip the later piece
PIECES = ["graf", "##fiti", "freez", "##ers"]


def toy_pairs(n: int, seed: int) -> list[dict[str, str]]:
    """Questions mixing function and content words; the keyword query is the content words, in order."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words = rng.sample(FUNCTION_WORDS, 3) + rng.sample(CONTENT_WORDS, 2)
        rng.shuffle(words)
        question = " ".join(words) + " ?"
        rows.append({"nl_query": question, "keyword_query": " ".join(w for w in words if w in CONTENT_WORDS)})
    return rows


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    """A folder holding a 1-layer random BERT and its WordPiece tokenizer: a local backbone."""
    whole = sorted(set(FUNCTION_WORDS + CONTENT_WORDS) - {"graffiti", "freezers"})
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), ["?", *PIECES, *whole])


@pytest.fixture(scope="module")
def toy_splits():
    return datasets.DatasetDict(
        train=datasets.Dataset.from_list(toy_pairs(200, seed=0)),
        validation=datasets.Dataset.from_list(toy_pairs(30, seed=1)),
    )


def test_keyword_labels_sit_on_each_words_first_piece(backbone, toy_splits):
    task = get_task("nl2kw")
    row = datasets.DatasetDict(
        train=datasets.Dataset.from_list(
            [{"nl_query": "Graffiti fonts for the freezers?", "keyword_query": "graffiti freezers"}]
        )
    )
    data = task.prepare(row, backbone=str(backbone))
    encoded = task.encode(data, "tagging")["train"][0]
    tokens = data.tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    assert tokens == ["[CLS]", "graf", "##fiti", "fonts", "for", "the", "freez", "##ers", "?", "[SEP]"]
    # "freezers?" is one whitespace word: its tag (KEYWORD = 1, by its normalised form) sits on "freez"
    assert encoded["labels"] == [-100, 1, -100, 0, 0, 0, 1, -100, -100, -100]


def test_backbone_and_preset_must_agree(backbone, toy_splits):
    task = get_task("nl2kw")
    words = task.prepare(toy_splits)
    with pytest.raises(InvalidInputError, match="prepare option backbone"):
        task.model_config("liu2018-warm-start-tagger", words)
    pieces = task.prepare(toy_splits, backbone=str(backbone))
    with pytest.raises(InvalidInputError, match="not built on one"):
        task.model_config("liu2018-sequence-labeling", pieces)
    config = task.model_config("liu2018-warm-start-tagger", pieces)
    assert config.id2label == {0: "O", 1: "KEYWORD"} and config.hidden_size == 16


@pytest.fixture(scope="module")
def trained(backbone, toy_splits, tmp_path_factory):
    from hf_querygen.training import train_preset

    data = get_task("nl2kw").prepare(toy_splits, backbone=str(backbone))
    trainer = train_preset(
        data,
        "liu2018-warm-start-tagger",
        tmp_path_factory.mktemp("checkpoints"),
        seed=0,
        training_overrides={
            "num_train_epochs": 25,
            "learning_rate": 1e-2,
            "per_device_train_batch_size": 16,
            "warmup_steps": 0,
        },
        early_stopping_patience=None,
    )
    return data, trainer.model


def test_a_toy_rule_is_learned_and_the_saved_folder_decodes_identically(trained, tmp_path):
    from transformers import pipeline

    import hf_querygen  # noqa: F401  (registers the pipeline task)
    from hf_querygen.training import save_model_folder

    data, model = trained
    task = data.task
    questions = data.sources("validation")
    outputs = task.predict(model, data.tokenizer, questions)
    assert task.score(outputs, data.references("validation"), questions)["f1"] >= 0.9
    for question, output in zip(questions, outputs, strict=True):
        assert output.generated == [] and set(output.extracted) <= set(question.split())

    folder = save_model_folder(model, data.tokenizer, tmp_path / "tagger", {"task": "nl2kw"})
    extract = pipeline("keyword-query-generation", model=str(folder))
    served = extract(questions, batch_size=7)
    assert [rows[0]["keywords"] for rows in served] == [output.keywords for output in outputs]
    # the caller's casing and punctuation do not reach the keywords: they are normalised words
    assert extract("Where is the POPULATION of Berlin?")[0]["keywords"] == ["population", "berlin"]


def test_the_keyword_threshold_keeps_more_words_as_it_falls_and_is_checked(trained):
    """keyword_threshold: a word is a keyword where P(KEYWORD) >= it; 0.5 is the argmax, a threshold near 0
    keeps every word, and the keyword sets grow as it falls. A bad value, or the option on a model that is
    not a tagger, is refused naming it."""
    data, model = trained
    task = data.task
    questions = data.sources("validation")
    argmax = task.predict(model, data.tokenizer, questions)
    sizes = []
    for threshold in (0.99, 0.5, 0.1, 1e-6):
        outputs = task.predict(model, data.tokenizer, questions, keyword_threshold=threshold)
        sizes.append(sum(len(output.keywords) for output in outputs))
        if threshold == 0.5:
            assert [o.keywords for o in outputs] == [o.keywords for o in argmax]
        if threshold == 1e-6:
            assert [o.keywords for o in outputs] == [
                list(dict.fromkeys(w.strip("?") for w in q.split() if w.strip("?"))) for q in questions
            ]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    for bad in (0, 1.5, "0.3", True):
        with pytest.raises(InvalidInputError, match="keyword_threshold"):
            task.predict(model, data.tokenizer, questions[:1], keyword_threshold=bad)


def test_the_keyword_threshold_is_refused_by_a_generating_model():
    from hf_querygen.presets import config_from_preset
    from hf_querygen.training.task_training import model_for_config

    task = get_task("nl2kw")
    data = task.prepare(
        datasets.DatasetDict(train=datasets.Dataset.from_list(toy_pairs(20, seed=2))), min_output_frequency=1
    )
    size = len(data.tokenizer)
    config = config_from_preset(
        "liu2018-attn-seq2seq", vocab_size=size, embedding_size=8, hidden_size=8, decoder_hidden_size=8
    )
    model = model_for_config(config)
    with pytest.raises(InvalidInputError, match="keyword_threshold.*tagger"):
        task.predict(model, data.tokenizer, ["what is the population of berlin"], keyword_threshold=0.3)


def test_the_exported_folder_needs_no_remote_code_and_its_card_runs(trained, tmp_path):
    from _card_code import run_card_code

    from hf_querygen.hub_export import check_model_repo, export_model
    from hf_querygen.training import save_model_folder

    data, model = trained
    folder = save_model_folder(model, data.tokenizer, tmp_path / "tagger", {"task": "nl2kw"})
    hub = export_model(folder, tmp_path / "hub", repo_id="me/keywords")
    assert check_model_repo(hub) == [] and not list(hub.glob("*.py"))  # transformers' own class
    with_library, plain = run_card_code(hub, "me/keywords", tmp_path)
    # the library's pipeline gives keyword queries, plain transformers' token-classification tags
    assert "'keyword_query'" in with_library and plain.startswith("[")
