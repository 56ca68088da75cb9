"""The levers for nl2kw topics unseen in training: target order, length prior + min-keywords
LogitsProcessor, word vectors in the shared embeddings, synthetic pretraining through train_preset,
per-system prepare options in the runner, and the evaluation-question filter of the synthetic pairs. Tiny
data and models (seconds)."""

import datasets
import pytest
import torch

import hf_querygen  # noqa: F401  (registers models)
from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.nl2kw import (
    KeywordLengthPrior,
    MinKeywordsLogitsProcessor,
    NaturalKeywordOrder,
    fit_keyword_order,
)

TRAIN = {
    "nl_query": [
        "where can i buy cheap flights to paris",
        "what should i eat in beijing",
        "how do i renew my passport",
        "where should i go when i visit beijing",
        "cheap hotels in paris near the river",
        "how long does a passport renewal take",
    ],
    "keyword_query": [
        "cheap flights paris",
        "beijing food",
        "passport renewal",
        "beijing sightseeing",
        "paris cheap hotels",
        "passport renewal time",
    ],
}
TINY = {
    "embedding_size": 8,
    "hidden_size": 8,
    "dropout": 0.0,
}  # (the dual decoder has no decoder_hidden_size)


def _splits() -> datasets.DatasetDict:
    train = datasets.Dataset.from_dict({**TRAIN, "topic_id": [f"t{i}" for i in range(6)]})
    held_out = datasets.Dataset.from_dict(
        {
            "nl_query": ["where can i eat in paris", "cheap flights to beijing"],
            "keyword_query": ["paris food", "beijing flights"],
            "topic_id": ["u1", "u2"],
        }
    )
    return datasets.DatasetDict(train=train, validation=held_out, test=held_out)


def test_natural_order_puts_extractive_words_in_source_order_then_generative_by_frequency():
    order = NaturalKeywordOrder.fit(["food food beijing", "food travel", "travel"])
    assert order.target_frequency == {"food": 3, "beijing": 1, "travel": 2}
    # extractive (in the query) in query order, then generative by descending training frequency
    assert order.order(["beijing", "travel", "food", "go"], "where to go in beijing") == [
        "go",
        "beijing",
        "food",
        "travel",
    ]
    assert fit_keyword_order("natural", ["q"], ["a b"]).order(["b", "a"], "a") == ["a", "b"]
    tfidf = fit_keyword_order("tfidf", ["the cat", "the dog", "the bird"], ["cat", "dog", "bird"])
    assert tfidf.order(["the", "cat"], "the cat") == ["cat", "the"]
    with pytest.raises(InvalidInputError, match="keyword_order"):
        fit_keyword_order("alphabetical", ["q"], ["k"])


def test_prepare_options_change_targets_and_vocabulary():
    task = get_task("nl2kw")
    tfidf = task.prepare(_splits())
    natural = task.prepare(_splits(), keyword_order="natural")
    assert tfidf.state["options"]["keyword_order"] == "tfidf"
    assert isinstance(natural.state["order"], NaturalKeywordOrder)
    # "cheap hotels in paris": the target follows the query (the keyword query says paris first)
    first = natural.encoded("seq2seq")["train"][4]["labels"][0]
    assert natural.tokenizer.convert_ids_to_tokens(first) == "cheap"
    assert natural.state["order"].order(["paris", "cheap", "hotels"], TRAIN["nl_query"][4]) == [
        "cheap",
        "hotels",
        "paris",
    ]
    with pytest.raises(InvalidInputError, match="vocabulary"):
        task.prepare(_splits(), vocabulary="web")
    with pytest.raises(TypeError, match="unknown options"):
        task.prepare(_splits(), bogus=1)


def test_length_prior_is_least_squares_on_train_and_clipped():
    prior = KeywordLengthPrior.fit(["a b", "a b c d", "a b c d e f"], ["x", "x y", "x y z"])
    assert prior.slope == pytest.approx(0.5) and prior.intercept == pytest.approx(0.0)
    assert prior.minimum(4) == 2 and prior.minimum(4, scale=2.0) == 3  # max_keywords = 3
    assert prior.minimum(0) == 1 and prior.minimum(1, scale=10.0) == 1  # never more than the query has


def test_min_keywords_processor_forbids_ending_until_enough_words():
    # 2 rows, vocabulary of 6 (EOS = 3, UNK = 1, PAD = 0, BOS = 2) + 4 source positions
    processor = MinKeywordsLogitsProcessor(
        [2, 1], end_token_ids=[3], sentinel_ids=[6 + 3, 6 + 2], non_word_ids=[0, 1, 2]
    )
    generated = torch.tensor([[2, 6], [2, 7]])  # each row has pointed at one word so far
    scores = torch.zeros(2, 10)
    out = processor(generated, scores)
    floor = torch.finfo(out.dtype).min
    assert out[0, 3] == floor and out[0, 9] == floor and out[0, 1] == floor  # row 0 is short: 1 < 2
    assert torch.equal(out[1], scores[1])  # row 1 has its one word
    assert out[0, 4] == 0 and out[0, 7] == 0 and out[0, 6] == floor  # new words allowed, not repeats
    # beams: rows are repeated per example; [UNK] and the sentinel do not count as words
    beams = processor(torch.tensor([[2, 1], [2, 1], [2, 8], [2, 8]]), torch.zeros(4, 10))
    assert (beams[:, 3] == floor).all()
    assert processor(torch.tensor([[2, 6, 7]] * 2), scores)[0, 3] == 0
    # a repeated word counts once, and cannot be chosen again while the row is short
    generator = MinKeywordsLogitsProcessor(
        [1, 1], [3], sentinel_ids=[9, 8], non_word_ids=[0, 1, 2], min_generated=1, output_vocab_size=6
    )
    handed_over = generator(torch.tensor([[2, 6, 9], [2, 6, 9]]), torch.zeros(2, 10))
    assert handed_over[0, 3] == floor and handed_over[0, 9] == 0  # no generator word yet: no [EOS]
    assert generator(torch.tensor([[2, 6, 9, 4]] * 2), torch.zeros(2, 10))[0, 3] == 0
    with pytest.raises(ValueError, match="output_vocab_size"):
        MinKeywordsLogitsProcessor([1], [3], min_generated=1)
    repeated = processor(torch.tensor([[2, 6, 6], [2, 7, 7]]), scores)
    assert repeated[0, 3] == floor and repeated[0, 6] == floor and repeated[0, 7] == 0


def _tiny_data(**options):
    return get_task("nl2kw").prepare(_splits(), **options)


def _train(tmp_path, data, name, **kwargs):
    from hf_querygen.training import train_preset

    return train_preset(
        data,
        "liu2018-dual-decoder",
        tmp_path / name,
        seed=0,
        preset_overrides=TINY,
        training_overrides={"max_steps": 2, "eval_strategy": "no", "save_strategy": "no", "logging_steps": 1},
        early_stopping_patience=None,
        **kwargs,
    ).model


def test_predict_with_min_keywords_returns_longer_queries(tmp_path):
    task = get_task("nl2kw")
    data = _tiny_data()
    model = _train(tmp_path, data, "plain")
    assert model.config.keyword_length_prior == data.state["length_prior"].as_dict()
    queries = ["where can i buy cheap flights to paris", "how do i renew my passport today"]
    forced = task.predict(model, data.tokenizer, queries, min_keywords=3)
    assert all(len(q.keywords) >= 3 for q in forced)
    by_prior = task.predict(model, data.tokenizer, queries, min_keywords={"prior": 1.0})
    assert len(by_prior) == 2
    with pytest.raises(InvalidInputError, match="min_keywords"):
        task.predict(model, data.tokenizer, queries, min_keywords="long")
    # at least one generator word: the pointer may hand over, the generator may not stop at once
    generated = task.predict(model, data.tokenizer, queries, min_generated=1)
    assert all(len(q.generated) >= 1 for q in generated)
    # a decoding saved with the model (train --system of a decoding row) is predict's default
    plain = task.predict(model, data.tokenizer, queries)
    model.config.task_decoding = {"min_keywords": 3}
    assert [q.keywords for q in task.predict(model, data.tokenizer, queries)] == [q.keywords for q in forced]
    assert [q.keywords for q in task.predict(model, data.tokenizer, queries, min_keywords=0)] == [
        q.keywords for q in plain
    ]


class _Vectors:
    """The part of gensim's KeyedVectors that load_word_vectors reads."""

    def __init__(self, table):
        self.table = table
        self.key_to_index = {w: i for i, w in enumerate(table)}
        self.vector_size = len(next(iter(table.values())))

    def __getitem__(self, word):
        import numpy as np

        return np.asarray(self.table[word], dtype="float32")


def test_load_word_vectors_fills_rows_rescaled_and_freezes():
    from hf_querygen.tasks.nl2kw.resources import load_word_vectors

    embedding = torch.nn.Embedding(5, 2)
    before = embedding.weight.detach().clone()
    vocabulary = {"[PAD]": 0, "paris": 1, "beijing": 2, "unseen": 3, "food": 4}
    vectors = _Vectors({"paris": [1.0, 0.0], "beijing": [0.0, 1.0], "food": [1.0, 1.0], "[PAD]": [9.0, 9.0]})
    info = load_word_vectors(embedding, vocabulary, vectors, freeze=True)
    assert info == {"rows_with_vectors": 3, "rows": 5}
    weight = embedding.weight.detach()
    assert torch.equal(weight[0], before[0]) and torch.equal(weight[3], before[3])  # special / no vector
    # the vectors' geometry survives the rescaling: paris and beijing orthogonal, food their sum
    assert float(weight[1] @ weight[2]) == pytest.approx(0.0, abs=1e-6)
    assert torch.allclose(weight[4], weight[1] + weight[2], atol=1e-6)
    assert not embedding.weight.requires_grad
    with pytest.raises(InvalidInputError, match="dimensions"):
        load_word_vectors(torch.nn.Embedding(5, 3), vocabulary, vectors)


def test_word_vectors_go_into_the_shared_embeddings_before_training(tmp_path, monkeypatch):
    task = get_task("nl2kw")
    data = _tiny_data()
    words = [w for w in data.tokenizer.get_vocab() if not w.startswith("[")]
    table = {w: [float(i % 3 == k) for k in range(8)] for i, w in enumerate(words)}
    monkeypatch.setattr(type(task), "word_vectors", lambda self, name, data, size: _Vectors(table))
    model = _train(tmp_path, data, "frozen", word_vectors="fake", freeze_embeddings=True)
    weight = model.get_input_embeddings().weight
    row = data.tokenizer.convert_tokens_to_ids("paris")
    expected = torch.tensor(table["paris"])
    # frozen: the loaded direction is still there after training (rescaled only)
    assert torch.allclose(weight[row] / weight[row].norm(), expected / expected.norm(), atol=1e-5)
    assert not weight.requires_grad
    with pytest.raises(ValueError, match="freeze_embeddings needs word_vectors"):
        _train(tmp_path, data, "bad", freeze_embeddings=True)


def test_pretraining_runs_before_training_and_is_reused_on_resume(tmp_path, monkeypatch):
    task = get_task("nl2kw")
    data = _tiny_data()
    calls = []
    extra = datasets.Dataset.from_dict(
        {
            "nl_query": ["cheap flights to rome", "what to eat in rome"],
            "keyword_query": ["rome flights", "rome food"],
        }
    )

    def pretraining_data(self, name, data):
        calls.append(name)
        return extra, {"pretraining_pairs": len(extra)}

    monkeypatch.setattr(type(task), "pretraining_data", pretraining_data)
    plain = _train(tmp_path, data, "plain")
    pretrained = _train(tmp_path, data, "pre", pretrain_on="fake", pretrain_steps=3)
    assert calls == ["fake"] and (tmp_path / "pre" / "pretrained" / "model.safetensors").is_file()
    differs = any(
        not torch.equal(a, b)
        for a, b in zip(plain.state_dict().values(), pretrained.state_dict().values(), strict=True)
    )
    assert differs  # same seed and steps: only the pretraining can make them differ
    again = _train(tmp_path, data, "pre", pretrain_on="fake", pretrain_steps=3)
    assert calls == ["fake"]  # the pretrained weights were reloaded, not retrained
    assert all(
        torch.equal(a, b)
        for a, b in zip(pretrained.state_dict().values(), again.state_dict().values(), strict=True)
    )
    with pytest.raises(InvalidInputError, match="no pretraining data"):
        get_task("nl2kw").__class__.__mro__[1].pretraining_data(task, "x", data)


def test_synthetic_pairs_drop_evaluation_questions(monkeypatch):
    from hf_querygen.tasks.nl2kw import resources as nl2kw_resources

    full = datasets.Dataset.from_dict(
        {
            "question": ["Where can I eat in Paris?", "who wrote hamlet?", "what is rome famous for?"],
            "keyword_query": ["paris eat", "hamlet author", "rome"],
        }
    )
    monkeypatch.setattr(
        nl2kw_resources, "build_synthetic_dataset", lambda data_dir=None, cache_dir=None: full
    )
    pairs, info = nl2kw_resources.synthetic_pairs(_splits())
    assert pairs["nl_query"] == ["who wrote hamlet?", "what is rome famous for?"]
    assert info == {"synthetic_pairs": 3, "removed_evaluation_questions": 1}


def test_runner_prepares_one_data_set_per_system_prepare_options():
    from hf_querygen.experiments.jobs import _fold_data
    from hf_querygen.experiments.liu2018 import REPRODUCTION
    from hf_querygen.experiments.tables import Fold

    cache: dict = {}
    fold = Fold(None, _splits())
    plain = _fold_data(REPRODUCTION, fold, cache)
    natural = _fold_data(REPRODUCTION, fold, cache, {"keyword_order": "natural"})
    assert plain is _fold_data(REPRODUCTION, fold, cache, {})
    assert natural is _fold_data(REPRODUCTION, fold, cache, {"keyword_order": "natural"})
    assert natural is not plain and natural.state["options"]["keyword_order"] == "natural"


def test_train_model_saves_the_decoding_as_the_models_default(data_dir, tmp_path):
    from hf_querygen.model_folder import load_trained
    from hf_querygen.training import DataSelection, Recipe, train_model

    train_model(
        Recipe(
            "liu2018-dual-decoder",
            preset_overrides=TINY,
            prepare_options={"keyword_order": "natural"},
            decoding={"min_keywords": 2},
            max_steps=1,
        ),
        DataSelection(task="nl2kw", data_dir=data_dir, max_train_examples=16, max_validation_examples=4),
        tmp_path / "model",
        evaluate_split=None,
    )
    model, tokenizer, metadata = load_trained(tmp_path / "model")
    assert model.config.task_decoding == {"min_keywords": 2}
    assert metadata["prepare_options"] == {"keyword_order": "natural"}
    queries = get_task("nl2kw").predict(model, tokenizer, ["where can i buy cheap flights to paris"])
    assert len(queries[0].keywords) >= 2


def test_quick_liu2018_skips_the_rows_that_need_the_synthetic_pairs():
    from hf_querygen.experiments.liu2018 import FULL_BUDGET, QUICK_BUDGET, REPRODUCTION
    from hf_querygen.experiments.runner import budget_systems

    quick = {s.key for s in budget_systems(REPRODUCTION, QUICK_BUDGET)}
    full = {s.key for s in budget_systems(REPRODUCTION, FULL_BUDGET)}
    assert "dual_decoder_plus" in full and "dual_decoder_plus" not in quick
    assert full - quick == {"dual_decoder_plus", "dual_decoder_plus_minlen"}
    assert "dual_decoder_natural_order_minlen" in quick
