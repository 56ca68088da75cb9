"""The question-frame model (models.question_frames) through the k2q task: its frames and targets, training
with the stock Trainer (train_model), the question-generation pipeline with every strategy, save / load."""

from __future__ import annotations

import datasets
import pytest
import torch
from transformers import pipeline

import hf_querygen  # noqa: F401  (registers the pipeline task and the model type)
from hf_querygen.errors import InvalidInputError
from hf_querygen.model_folder import load_trained
from hf_querygen.models.question_frames import QuestionFramesConfig, best_frames_nll
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.k2q import best_frame_ids, frequent_question_frames, question_frame_around
from hf_querygen.tasks.k2q.data import as_training_split
from hf_querygen.training import DataSelection, Recipe, train_model

torch.set_num_threads(1)

DISHES = ["lasagna", "pancake", "curry", "risotto", "goulash", "paella", "falafel", "chili", "gumbo", "ramen"]
COUNTRIES = ["france", "peru", "spain", "chile", "kenya", "japan", "egypt", "norway", "ghana", "nepal"]
NEW_DISH, NEW_COUNTRY = "moussaka", "fiji"


def _pairs(dishes: list[str], countries: list[str]) -> datasets.Dataset:
    """Recipe queries are asked as "find a good X online", capital queries as "what is the X ?": the
    first / last word tells the frame."""
    queries = [f"{dish} recipe" for dish in dishes] + [f"capital {country}" for country in countries]
    questions = [f"find a good {dish} recipe online" for dish in dishes]
    questions += [f"what is the capital of {country} ?" for country in countries]
    return as_training_split(queries, [[q] for q in questions])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("frames") / "model"
    splits = datasets.DatasetDict(
        {"train": _pairs(DISHES[:8], COUNTRIES[:8]), "validation": _pairs(DISHES[8:], COUNTRIES[8:])}
    )
    train_model(
        Recipe(
            "ding2018-question-frames",
            preset_overrides={"embedding_size": 8, "hidden_size": 8, "dropout": 0.0, "num_frames": 5},
            training_overrides={
                "learning_rate": 5e-2,
                "per_device_train_batch_size": 4,
                "disable_tqdm": True,
            },
            max_steps=60,
            early_stopping_patience=None,
        ),
        DataSelection(task="k2q", splits=splits),
        folder,
    )
    return folder


@pytest.fixture(scope="module")
def generate_questions(model_dir):
    return pipeline("question-generation", model=str(model_dir))


def test_question_frame_around_keeps_the_words_outside_the_keywords():
    assert question_frame_around("side effects ibuprofen", "What are the side effects of ibuprofen?") == (
        "what are the X"
    )
    assert question_frame_around("capital france", "Paris is nice") is None


def test_frequent_frames_count_distinct_questions_and_start_with_the_query_itself():
    queries = ["a b", "a b", "a c", "d e", "f g"]
    # "find the X in town" asked 2x by one question: counts once; "what is X" by two questions
    questions = ["find the a b in town", "find the a b in town", "what is a c", "what is d e", "who f g"]
    assert frequent_question_frames(queries, questions, 3) == ["X", "what is X", "find the X in town"]
    with pytest.raises(InvalidInputError, match="k must be"):
        frequent_question_frames(queries, questions, 0)


def test_best_frame_ids_keeps_every_tied_frame():
    frames = ["X", "what X", "what is the X", "find X"]
    ids = best_frame_ids(frames, ["capital france", "lasagna"], [["what is the capital of france"], ["x y"]])
    assert ids[0] == [2]
    assert ids[1] == [0, 1, 2, 3]  # no frame word in the reference: all tie at 0


def test_best_frames_nll_is_the_marginal_likelihood_of_the_best_set():
    logits = torch.tensor([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])
    labels = torch.tensor([[1, 2], [0, -100]])
    log_probs = logits.log_softmax(-1)
    expected = -(torch.logsumexp(log_probs[0, 1:], 0) + log_probs[1, 0]) / 2
    assert torch.allclose(best_frames_nll(logits, labels), expected)
    with pytest.raises(ValueError, match="frame ids must lie in"):
        best_frames_nll(logits, torch.tensor([[3], [0]]))


def test_config_rejects_frames_without_one_slot():
    with pytest.raises(InvalidInputError, match="exactly one 'X' slot"):
        QuestionFramesConfig(frames=["what is"])
    with pytest.raises(InvalidInputError, match="query_views"):
        QuestionFramesConfig(query_views=["middle"])
    config = QuestionFramesConfig(frames=["X", "what X"])
    assert config.id2label == {0: "X", 1: "what X"}
    assert QuestionFramesConfig.from_dict(config.to_dict()).frames == ["X", "what X"]


def test_trained_model_puts_unseen_queries_in_their_frame(model_dir, generate_questions):
    model, _, metadata = load_trained(model_dir)
    assert metadata["family"] == "frames" and model.config.frames[0] == "X"
    assert {"find a good X online", "what is the X"} <= set(model.config.frames)
    # the default call: one question per query, the query words as typed, in the frame of its kind
    assert (
        generate_questions(f"{NEW_DISH} recipe")[0]["generated_text"]
        == f"find a good {NEW_DISH} recipe online"
    )
    assert (
        generate_questions(f"capital {NEW_COUNTRY}")[0]["generated_text"]
        == f"what is the capital {NEW_COUNTRY}"
    )


@pytest.mark.parametrize("strategy", ["beam", "distinct-beam", "sample"])
@pytest.mark.parametrize("num_beams", [1, 2, 5])
@pytest.mark.parametrize("returns", [1, 3])
def test_every_strategy_beam_width_and_return_count_on_a_batch(
    generate_questions, strategy, num_beams, returns
):
    queries = [f"{NEW_DISH} recipe", f"capital {NEW_COUNTRY}"]
    answers = generate_questions(
        queries, strategy=strategy, num_beams=num_beams, num_return_sequences=returns
    )
    assert len(answers) == 2
    for query, answer in zip(queries, answers, strict=True):
        texts = [item["generated_text"] for item in answer]
        scores = [item["score"] for item in answer]
        assert 1 <= len(answer) <= returns and len(set(texts)) == len(texts)
        assert scores == sorted(scores, reverse=True) and all(score <= 0 for score in scores)
        assert all(query in text for text in texts)  # every keyword kept, in order
        if strategy != "sample":
            assert len(answer) == returns


def test_saved_and_loaded_model_gives_the_same_questions_and_scores(model_dir, tmp_path):
    task = get_task("k2q")
    model, tokenizer, _ = load_trained(model_dir)
    queries = ["pizza recipe", "capital x", "", "recipe"]
    before = task.predict(model, tokenizer, queries, return_scores=True, num_return_sequences=3)
    model.save_pretrained(tmp_path / "again")
    tokenizer.save_pretrained(tmp_path / "again")
    again = type(model).from_pretrained(tmp_path / "again")
    assert task.predict(again, tokenizer, queries, return_scores=True, num_return_sequences=3) == before


def test_bad_decoding_arguments_are_named(generate_questions):
    with pytest.raises(InvalidInputError, match="num_return_sequences"):
        generate_questions("pizza recipe", num_return_sequences=0)
    with pytest.raises(InvalidInputError, match="temperature"):
        generate_questions("pizza recipe", strategy="sample", temperature=0)
    with pytest.raises(InvalidInputError, match="num_beams"):
        generate_questions("pizza recipe", num_beams=0)


def _fold() -> datasets.DatasetDict:
    def split(tag: str, n: int) -> datasets.Dataset:
        return as_training_split([f"{tag} {i}" for i in range(n)], [[f"what is {tag} {i}"] for i in range(n)])

    return datasets.DatasetDict(
        {
            "train": split("synthetic", 5),
            "validation": split("seed", 4),  # T_0 train + validation, as the ding2018 fold has it
            "seed_train": split("seed", 3),
            "seed_validation": split("seed", 1),
            "nl2kw_train": split("human", 2),
            "nl2kw_validation": split("user", 2),
        }
    )


def test_prepare_trains_on_seed_and_human_pairs_without_the_synthetic_ones():
    task = get_task("k2q")
    data = task.prepare(_fold(), human_pairs=True, seed_pairs=True, synthetic_pairs=False)
    assert sorted(data.splits["train"]["keyword_query"]) == [
        "human 0",
        "human 1",
        "seed 0",
        "seed 1",
        "seed 2",
    ]
    # T_0 train is training data, so only T_0's validation split selects (beside the users' validation)
    assert data.splits["t0_validation"]["keyword_query"] == ["seed 0"]
    assert data.splits["validation"]["keyword_query"] == ["seed 0", "user 0", "user 1"]
    assert not {"seed_train", "seed_validation", "nl2kw_train"} & set(data.splits)
    plain = task.prepare(_fold())
    assert len(plain.splits["train"]) == 5 and len(plain.splits["validation"]) == 4
    with pytest.raises(InvalidInputError, match="nothing left to train on"):
        task.prepare(_fold(), synthetic_pairs=False)
    with pytest.raises(InvalidInputError, match=r"seed_pairs=True\): the splits lack \['seed_train'"):
        task.prepare(
            datasets.DatasetDict({k: v for k, v in _fold().items() if k != "seed_train"}), seed_pairs=True
        )
    with pytest.raises(InvalidInputError, match="seed_pairs must be True or False"):
        task.prepare(_fold(), seed_pairs="yes")
