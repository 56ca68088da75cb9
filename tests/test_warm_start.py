"""The warm-started BERT2BERT family (models._warm_start, tasks.subword) on a tiny random BERT built here."""

from __future__ import annotations

import random

import pytest
import torch
from _tiny_bert import save_tiny_bert

from hf_querygen.errors import InvalidInputError
from hf_querygen.text import normalize_for_matching

WORDS = ("capital", "france", "pizza", "york", "flights", "london", "ibuprofen", "effects", "cheap", "best")
FRAMES = ("what is the {} ?", "where is the {} ?", "how much is the {} ?")


def tiny_backbone(folder, seed: int = 0):
    """A 2-layer 32-d random BERT with a WordPiece vocabulary spelling every word (letters as ``##``
    pieces), saved with its tokenizer: what resolve_backbone reads from a folder."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces = ["?", "what", "is", "the", "where", "how", "much"]
    pieces += [w for w in WORDS if w not in ("ibuprofen",)] + list(letters) + [f"##{c}" for c in letters]
    return save_tiny_bert(folder, pieces, hidden_size=32, num_hidden_layers=2, seed=seed)


def k2q_rows(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.sample(WORDS, 2)
        rows.append({"keyword_query": f"{a} {b}", "question": rng.choice(FRAMES).format(f"{a} {b}")})
    return rows


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    return tiny_backbone(tmp_path_factory.mktemp("backbone"))


def test_the_config_and_the_warm_start_keep_the_backbone_weights(backbone):
    from transformers import AutoModel

    from hf_querygen.models._warm_start import backbone_tokenizer, bert2bert_config, warm_start_model
    from hf_querygen.specs import family_of

    tokenizer = backbone_tokenizer(backbone)
    config = bert2bert_config(tokenizer, backbone)
    assert family_of(config) == "bert2bert"
    assert (config.decoder_start_token_id, config.eos_token_id) == (
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
    )
    model = warm_start_model(config)
    original = AutoModel.from_pretrained(str(backbone))
    for name, tensor in original.state_dict().items():
        assert torch.equal(model.encoder.state_dict()[name], tensor), name
    decoder = model.decoder.bert.state_dict()
    assert torch.equal(
        decoder["embeddings.word_embeddings.weight"], original.embeddings.word_embeddings.weight
    )
    assert torch.equal(
        decoder["encoder.layer.1.attention.self.query.weight"],
        original.encoder.layer[1].attention.self.query.weight,
    )
    assert model.generation_config.decoder_start_token_id == tokenizer.cls_token_id
    with pytest.raises(InvalidInputError, match="takes only"):
        bert2bert_config(tokenizer, backbone, hidden_size=8)


def test_a_warm_start_preset_needs_data_prepared_with_its_backbone(backbone):
    import datasets

    from hf_querygen.presets import config_from_preset
    from hf_querygen.tasks.base import get_task

    task = get_task("text2text")
    splits = datasets.DatasetDict(train=datasets.Dataset.from_list(k2q_rows(8, 0)))
    with pytest.raises(InvalidInputError, match="backbone"):
        task.model_config("bert2bert", task.prepare(splits), backbone=str(backbone))
    with pytest.raises(InvalidInputError, match="tokenizer"):
        config_from_preset("bert2bert")
    data = task.prepare(splits, backbone=str(backbone))
    encoded = task.encode(data, "bert2bert")["train"]
    assert set(encoded.column_names) == {"input_ids", "attention_mask", "labels"}
    row = encoded[0]
    tokenizer = data.tokenizer
    assert row["input_ids"][0] == tokenizer.cls_token_id and row["input_ids"][-1] == tokenizer.sep_token_id
    assert row["labels"][0] != tokenizer.cls_token_id and row["labels"][-1] == tokenizer.sep_token_id
    question = tokenizer.decode(row["labels"], skip_special_tokens=True)
    assert normalize_for_matching(question) == normalize_for_matching(splits["train"][0]["question"])


def test_train_prepares_the_data_with_the_backbone_the_model_starts_from(backbone, tmp_path, data_dir):
    """``train --preset bert2bert --corpus ...`` needs no data option: the data is read by the tokenizer of
    the preset's backbone, or of the one ``--set backbone=...`` chooses, also over a system's own."""
    import dataclasses
    import json

    from hf_querygen.cli import main
    from hf_querygen.presets import data_read_by_backbone
    from hf_querygen.pretrained import MINILM_ID

    out = tmp_path / "model"
    arguments = ["train", "--preset", "bert2bert", "--corpus", "nl2kw", "--set", f"backbone={backbone}"]
    arguments += ["--output-dir", str(out), "--max-steps", "1", "--max-train-examples", "8"]
    assert main([*arguments, "--max-validation-examples", "2", "--data-dir", str(data_dir)]) == 0
    saved = json.loads((out / "hf_querygen_training.json").read_text())
    assert saved["prepare_options"] == {"backbone": str(backbone)}
    assert (
        json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
        == json.loads((backbone / "tokenizer.json").read_text())["model"]["vocab"]
    )

    own = {"backbone": MINILM_ID, "human_pairs": True}
    assert data_read_by_backbone("bert2bert", {}, own) == own
    assert data_read_by_backbone("bert2bert", {"backbone": "/elsewhere"}, own) == {
        "backbone": "/elsewhere",
        "human_pairs": True,
    }
    assert data_read_by_backbone("bert2bert", {}, {}) == {"backbone": MINILM_ID}
    assert data_read_by_backbone("liu2018-attn-seq2seq", {"hidden_size": 8}, {"min_frequency": 2}) == {
        "min_frequency": 2
    }
    assert data_read_by_backbone(None, {}, {"min_frequency": 2}) == {"min_frequency": 2}
    # the runner's rows alike: a budget that swaps a row's backbone prepares its data with it
    from hf_querygen.experiments import ding2018
    from hf_querygen.experiments.recipes import row_prepare_options
    from hf_querygen.systems import get_system

    row = get_system("ding2018/warm_start")
    swapped = dataclasses.replace(ding2018.FULL_BUDGET, preset_overrides={"warm_start": {"backbone": "/b"}})
    assert row_prepare_options(row, swapped) == {**row.prepare_options, "backbone": "/b"}
    assert row_prepare_options(row, ding2018.FULL_BUDGET) == dict(row.prepare_options)


def test_the_source_words_processor_keeps_every_keyword_and_finishes_words(backbone):
    from transformers import AutoTokenizer, EncoderDecoderModel

    from hf_querygen.models._warm_start import bert2bert_config, warm_start_model
    from hf_querygen.tasks.k2q import keeps_keywords
    from hf_querygen.tasks.subword import generate_candidates

    tokenizer = AutoTokenizer.from_pretrained(str(backbone))
    model = warm_start_model(bert2bert_config(tokenizer, backbone))
    assert isinstance(model, EncoderDecoderModel)
    queries = ["capital france", "ibuprofen effects", "cheap flights london"]
    free = generate_candidates(model, tokenizer, queries, max_length=24)
    assert not all(keeps_keywords(group[0][0], q) for group, q in zip(free, queries, strict=True))
    for settings in ({}, {"num_beams": 3, "num_return_sequences": 3, "no_repeat_ngram_size": 3}):
        forced = generate_candidates(
            model, tokenizer, queries, require_keywords=True, max_length=40, **settings
        )
        for group, query in zip(forced, queries, strict=True):
            assert keeps_keywords(group[0][0], query), (query, group)  # "ibuprofen" spelled by pieces
    bonus = generate_candidates(model, tokenizer, queries, keyword_bonus=50.0, max_length=40)
    assert all(keeps_keywords(group[0][0], q) for group, q in zip(bonus, queries, strict=True))


def test_a_comma_separated_keyword_phrase_stays_whole_and_in_order(backbone):
    from transformers import AutoTokenizer

    from hf_querygen.models._warm_start import bert2bert_config, warm_start_model
    from hf_querygen.tasks.subword import generate_candidates, source_word_pieces

    tokenizer = AutoTokenizer.from_pretrained(str(backbone))

    def keywords(text: str) -> list[str]:
        return [tokenizer.decode(list(p)).replace(" ", "") for p in source_word_pieces(tokenizer, text)]

    assert keywords("cheap flights london") == ["cheap", "flights", "london"]
    assert keywords("London, cheap flights, london") == ["london", "cheapflights"]
    assert keywords("cheap,flights; york") == ["cheapflights", "york"]  # no space after the comma: a word
    model = warm_start_model(bert2bert_config(tokenizer, backbone))
    queries = ["france, best pizza", "effects, ibuprofen, cheap flights london"]
    for settings in ({}, {"num_beams": 3, "no_repeat_ngram_size": 3}):
        forced = generate_candidates(
            model, tokenizer, queries, require_keywords=True, max_length=48, **settings
        )
        for group, phrase in zip(forced, ("best pizza", "cheap flights london"), strict=True):
            assert phrase in normalize_for_matching(group[0][0]), (phrase, group)


def test_a_begun_keyword_is_the_only_way_on_and_a_finished_one_takes_no_continuation():
    from hf_querygen.tasks.subword import SourceWordsProcessor

    # vocabulary of 10 pieces: 6-9 continue a word; the keyword is the pieces (5, 6, 7); [CLS] = 1, end = 2
    continuation = [False] * 6 + [True] * 4
    processor = SourceWordsProcessor([[(5, 6, 7)]], eos_token_id=2, continuation=continuation)
    scores = torch.log_softmax(torch.linspace(0.0, 3.0, 10).repeat(4, 1), dim=-1)
    scores[2, 6] = -float("inf")  # a repeated n-gram another processor banned
    input_ids = torch.tensor(
        [
            [1, 3, 3, 5],  # begun: only its next piece may come, above the row's best
            [1, 3, 5, 6],  # two pieces written: the third
            [1, 3, 3, 5],  # begun, but the next piece is banned: the ban holds and nothing is forced
            [1, 5, 6, 7],  # finished: no continuation piece (no "##s" after the keyword)
        ]
    )
    out = processor(input_ids, scores.clone())
    assert torch.isfinite(out[0]).tolist() == [i == 6 for i in range(10)]
    assert out[0, 6] > scores[0].max()
    assert torch.isfinite(out[1]).tolist() == [i == 7 for i in range(10)]
    assert torch.equal(out[2], scores[2])
    assert torch.isfinite(out[3]).tolist() == [i < 6 for i in range(10)]
    assert torch.equal(out[3, :6], scores[3, :6])
    # a finished word that begins a missing one ("new" before "newton"): the missing one goes on
    both = SourceWordsProcessor([[(5,), (5, 6)]], eos_token_id=2, continuation=continuation)
    out = both(torch.tensor([[1, 3, 5]]), scores[:1].clone())
    assert torch.isfinite(out[0]).tolist() == [i == 6 for i in range(10)]


def test_a_required_keyword_comes_before_the_question_mark_that_would_close_the_question():
    from hf_querygen.tasks.subword import SourceWordsProcessor

    # pieces 0-5 start a word, 6-9 continue one; the keywords are (5,) and (4,); [CLS] = 1, end = 2, "?" = 3
    continuation = [False] * 6 + [True] * 4
    scores = torch.full((3, 10), -5.0)
    scores[:, 3] = -0.1  # the model would close its question here
    processor = SourceWordsProcessor(
        [[(5,), (4,)]], eos_token_id=2, continuation=continuation, require=True, closing=[3]
    )
    out = processor(torch.tensor([[1, 0, 0], [1, 0, 5], [1, 5, 4]]), scores.clone())
    # both keywords missing: no "?", and each keyword scores at least what "?" did
    assert out[0, 3] == -float("inf") and out[0, 2] == -float("inf")
    assert out[0, 5] >= -0.1 and out[0, 4] >= -0.1
    assert out[1, 3] == -float("inf") and out[1, 4] >= -0.1  # one still missing
    assert torch.equal(out[2, :6], scores[2, :6])  # every keyword written: the question may close
    # without closing pieces a "?" is free to come first and the keywords trail after it
    free = SourceWordsProcessor([[(5,), (4,)]], eos_token_id=2, continuation=continuation, require=True)
    assert free(torch.tensor([[1, 0, 0]]), scores[:1].clone())[0, 3] == -0.1


def test_a_required_keyword_does_not_lift_a_piece_another_processor_banned():
    from transformers import LogitsProcessorList, NoRepeatNGramLogitsProcessor

    from hf_querygen.tasks.subword import SourceWordsProcessor

    # the keyword (5, 6) is missing; the hypothesis "5 4 5 4" would repeat the trigram "5 4 5" with 5 next.
    # Lifting the banned 5 to the end token's score looped "old battle old battle old old ..." in a query
    # that held "old battle star galactica" beside another phrase of the same words
    continuation = [False] * 10
    scores = torch.full((1, 10), -5.0)
    scores[0, 2] = -0.1  # the model would end here
    processors = LogitsProcessorList(
        [
            NoRepeatNGramLogitsProcessor(3),
            SourceWordsProcessor([[(5, 6)]], eos_token_id=2, continuation=continuation, require=True),
        ]
    )
    out = processors(torch.tensor([[1, 5, 4, 5, 4]]), scores.clone())
    assert out[0, 5] == -float("inf")  # stays banned: the keyword comes later
    assert out[0, 2] == -float("inf")  # and the question cannot end without it
    assert torch.isfinite(out[0]).any()
    # where nothing bans it, the keyword's first piece still scores at least the end token's -0.1
    fresh = processors(torch.tensor([[1, 4, 3]]), scores.clone())
    assert fresh[0, 5] >= -0.1


def test_with_once_a_keywords_content_words_start_only_where_the_keyword_is_written():
    from hf_querygen.tasks.subword import SourceWordsProcessor

    # pieces 0-9 start a word, 10-14 continue one; 0 is a function word ("the"); [CLS] = 1, end = 2.
    # Keywords: (3,) "lipoma"; the phrase (7, 0, 8) "ludwig the beethoven"; (9, 11) "vega ##n"
    continuation = [False] * 10 + [True] * 5
    keywords = [[(3,), (7, 0, 8), (9, 11)]]
    once = SourceWordsProcessor(keywords, 2, continuation, once=True, function_pieces=[0])
    rows = torch.tensor(
        [
            [1, 3, 4, 4],  # "lipoma" written: it does not start again; the phrase's later word waits
            [1, 3, 7, 0],  # inside the phrase: its next word is the way on (the begun-keyword rule)
        ]
    )
    out = once(rows, torch.zeros(2, 15))
    banned = [i for i in range(15) if not torch.isfinite(out[0, i])]
    assert banned == [3, 8]  # not the function word 0, not the missing keywords' first pieces 7 and 9
    assert torch.isfinite(out[1]).tolist() == [i == 8 for i in range(15)]
    every = once(torch.tensor([[1, 3, 7, 0, 8, 9, 11]]), torch.zeros(1, 15))
    # all written: none of their content words starts again, nor continues "vega ##n" (finished)
    assert [i for i in range(15) if not torch.isfinite(every[0, i])] == [3, 7, 8, 9, *range(10, 15)]
    free = SourceWordsProcessor(keywords, 2, continuation, function_pieces=[0])
    assert torch.isfinite(free(torch.tensor([[1, 3, 4, 4]]), torch.zeros(1, 15))).all()
    # a word two keywords share: written in one, it still finishes the other ("tina turner", "ike turner")
    shared = SourceWordsProcessor([[(4, 8), (6, 8)]], 2, continuation, once=True)
    out = shared(torch.tensor([[1, 4, 8, 6], [1, 4, 8, 5]]), torch.zeros(2, 15))
    assert torch.isfinite(out[0]).tolist() == [i == 8 for i in range(15)]
    assert not torch.isfinite(out[1, 8]) and not torch.isfinite(out[1, 4]) and torch.isfinite(out[1, 6])
    # never every piece of a row: where only banned pieces were left, the row is as it was
    only = torch.full((1, 15), -float("inf"))
    only[0, 3] = 0.0
    assert torch.equal(once(torch.tensor([[1, 3, 4, 4]]), only.clone()), only)


def test_in_order_only_the_first_missing_keyword_may_begin():
    from hf_querygen.tasks.subword import SourceWordsProcessor

    # as above: pieces 0-9 start a word, 10-14 continue one, 0 is "the", [CLS] = 1, end = 2. Keywords in
    # the query's order: (3,) "battle"; the phrase (7, 0, 8) "ludwig the beethoven"; (9, 11) "vega ##n"
    continuation = [False] * 10 + [True] * 5
    keywords = [[(3,), (7, 0, 8), (9, 11)]]
    ordered = SourceWordsProcessor(keywords, 2, continuation, bonus=1.0, in_order=True, function_pieces=[0])
    rows = torch.tensor(
        [
            [1, 4, 5, 6],  # nothing written: only "battle" may begin, and only it gets the bonus
            [1, 4, 3, 5],  # "battle" written: the phrase is next, "vega" still waits (no once: 8 may come)
            [1, 3, 7, 0],  # inside the phrase: its next word
        ]
    )
    out = ordered(rows, torch.zeros(3, 15))
    assert [i for i in range(15) if not torch.isfinite(out[0, i])] == [7, 8, 9]
    assert out[0, 3] == 1.0 and out[0, 7] != 1.0
    assert [i for i in range(15) if not torch.isfinite(out[1, i])] == [9]
    assert out[1, 7] == 1.0
    assert torch.isfinite(out[2]).tolist() == [i == 8 for i in range(15)]
    # a later keyword's prefix written by the model's own choice is no keyword begun out of order
    late = ordered(torch.tensor([[1, 4, 9]]), torch.zeros(1, 15))
    assert torch.isfinite(late[0, 3]) and torch.isfinite(late[0, 5])
    # with require, the end waits for the first missing keyword, which is the one pushed to the end's score
    required = SourceWordsProcessor(keywords, 2, continuation, require=True, in_order=True)
    scores = torch.zeros(1, 15)
    scores[0, 2] = 5.0
    pushed = required(torch.tensor([[1, 4]]), scores)
    assert pushed[0, 3] == 5.0 and not torch.isfinite(pushed[0, 2]) and not torch.isfinite(pushed[0, 9])


def test_keywords_once_reaches_the_generation_and_is_checked(backbone):
    from transformers import AutoTokenizer

    from hf_querygen.models._warm_start import bert2bert_config, warm_start_model
    from hf_querygen.tasks.base import get_task
    from hf_querygen.tasks.subword import function_word_pieces

    tokenizer = AutoTokenizer.from_pretrained(str(backbone))
    vocab = tokenizer.get_vocab()
    assert {vocab["what"], vocab["is"], vocab["the"]} <= set(function_word_pieces(tokenizer))
    assert vocab["london"] not in function_word_pieces(tokenizer)
    model = warm_start_model(bert2bert_config(tokenizer, backbone))
    task = get_task("k2q")
    queries = ["cheap flights london", "capital france", "best pizza, york"]
    settings = {"num_beams": 3, "no_repeat_ngram_size": 3, "require_keywords": True, "max_length": 40}
    for question, query in zip(
        task.predict(model, tokenizer, queries, keywords_once=True, **settings), queries, strict=True
    ):
        words = normalize_for_matching(question).split()
        assert all(words.count(w) == 1 for w in normalize_for_matching(query).replace(",", " ").split())
    with pytest.raises(InvalidInputError, match="keywords_once"):
        task.predict(model, tokenizer, queries[:1], keywords_once="yes", **settings)
    both = {**settings, "keywords_once": True, "keywords_in_order": True}
    for question, query in zip(task.predict(model, tokenizer, queries, **both), queries, strict=True):
        words = normalize_for_matching(question).split()
        places = [words.index(w) for w in normalize_for_matching(query).replace(",", " ").split()]
        assert places == sorted(places), (query, question)
    with pytest.raises(InvalidInputError, match="keywords_in_order"):
        task.predict(model, tokenizer, queries[:1], keywords_in_order=1, **settings)
    # a copy model's word-id options: refused by name, given per call or saved with the model; unset, they
    # ask for nothing and pass
    for option in ("no_repeat_source_words", "copy_all_source_words"):
        with pytest.raises(InvalidInputError, match=f"{option} is a word-vocabulary decoding"):
            task.predict(model, tokenizer, queries[:1], **{option: True}, **settings)
        model.config.task_decoding = {option: True}
        with pytest.raises(InvalidInputError, match=f"task_decoding: {option} is a word-vocabulary"):
            task.predict(model, tokenizer, queries[:1], **settings)
        model.config.task_decoding = None
    unset = dict.fromkeys(("no_repeat_source_words", "copy_all_source_words"), False)
    assert task.predict(model, tokenizer, queries[:1], **unset, **settings) == task.predict(
        model, tokenizer, queries[:1], **settings
    )
    assert not task.honours("bert2bert", {"no_repeat_source_words": True})
    assert task.honours("bert2bert", {"keywords_once": True, "no_repeat_source_words": False})
    assert not task.honours("seq2seq", {"keyword_bonus": 2.0})


#: the keyword-to-question decoding the brief trainings save
K2Q_DECODING = {"num_beams": 2, "no_repeat_ngram_size": 3, "require_keywords": True}


def train_k2q_briefly(preset: str, backbone, output_dir) -> dict:
    """12 steps of warm-start preset ``preset`` from ``backbone`` on 64 toy keyword query -> question pairs
    through the recipe (K2Q_DECODING saved); returns the training metadata, after checking that the
    validation loss fell."""
    import datasets

    from hf_querygen.training import DataSelection, Recipe, train_model

    splits = datasets.DatasetDict(
        train=datasets.Dataset.from_list(k2q_rows(64, 0)),
        validation=datasets.Dataset.from_list(k2q_rows(8, 1)),
    )
    recipe = Recipe(
        preset,
        prepare_options={"backbone": str(backbone)},
        preset_overrides={"backbone": str(backbone)},
        training_overrides={"learning_rate": 5e-3, "per_device_train_batch_size": 16, "warmup_steps": 0},
        decoding=K2Q_DECODING,
        max_steps=12,
    )
    metadata = train_model(recipe, DataSelection(task="text2text", splits=splits), output_dir)
    assert metadata["family"] == "bert2bert"
    losses = [evaluation["eval_loss"] for evaluation in metadata["evaluations"]]
    assert len(losses) >= 2 and losses[-1] < losses[0]
    return metadata


def test_train_save_load_and_pipeline_give_the_same_questions(backbone, tmp_path):
    from transformers import pipeline

    from hf_querygen.model_folder import load_trained
    from hf_querygen.tasks.base import get_task

    metadata = train_k2q_briefly("bert2bert", backbone, tmp_path / "model")
    assert metadata["model_type"] == "encoder-decoder"
    config = (tmp_path / "model" / "config.json").read_text()
    assert "auto_map" not in config and '"hf_querygen_family": "bert2bert"' in config
    model, tokenizer, _ = load_trained(tmp_path / "model")
    assert model.config.task_decoding == K2Q_DECODING
    task = get_task("k2q")
    queries = ["capital france", "best pizza york"]
    first = task.predict(model, tokenizer, queries)
    again_model, again_tokenizer, _ = load_trained(tmp_path / "model")
    assert task.predict(again_model, again_tokenizer, queries) == first
    assert all(q.split()[0] in out for q, out in zip(queries, first, strict=True))
    generator = pipeline("question-generation", model=str(tmp_path / "model"))
    assert [out[0]["generated_text"] for out in generator(queries)] == first
    # the keyword options at call time, through the pipeline as through predict
    for settings in (
        {"require_keywords": True, "keywords_once": True, "keyword_bonus": 1.0},
        {"require_keywords": True, "keywords_in_order": True, "keyword_bonus": 1.0},
    ):
        expected = task.predict(model, tokenizer, queries, **settings)
        assert [out[0]["generated_text"] for out in generator(queries, **settings)] == expected
    with pytest.raises(InvalidInputError, match="word-vocabulary"):
        task.predict(model, tokenizer, queries, copy_all_source_words=True)
    # exported as a Hub repository: transformers' own classes, no remote code; the card's code runs
    from _card_code import run_card_code

    from hf_querygen.hub_export import check_model_repo, export_model

    hub = export_model(tmp_path / "model", tmp_path / "hub", repo_id="me/k2q")
    assert check_model_repo(hub) == [] and not list(hub.glob("*.py"))
    with_library, plain = run_card_code(hub, "me/k2q", tmp_path)
    assert with_library and plain.startswith("[")


def test_nl2kw_reads_a_warm_started_model_into_keyword_queries(backbone):
    import datasets

    from hf_querygen.tasks.base import get_task

    task = get_task("nl2kw")
    rows = [
        {"nl_query": f"what is the {a} of {b} ?", "keyword_query": f"{a} {b}"}
        for a, b in zip(WORDS, WORDS[1:], strict=False)
    ]
    data = task.prepare(datasets.DatasetDict(train=datasets.Dataset.from_list(rows)), backbone=str(backbone))
    encoded = task.encode(data, "bert2bert")["train"]
    assert data.tokenizer.decode(encoded[0]["labels"], skip_special_tokens=True) == rows[0]["keyword_query"]
    from hf_querygen.training.task_training import model_for_config

    model = model_for_config(task.model_config("bert2bert", data, backbone=str(backbone)))
    sources = [row["nl_query"] for row in rows[:3]]
    queries = task.predict(model, data.tokenizer, sources, max_length=8)
    assert len(queries) == 3
    for source, query in zip(sources, queries, strict=True):
        assert set(query.extracted) <= set(normalize_for_matching(source).split())
        assert not set(query.generated) & set(normalize_for_matching(source).split())
    with pytest.raises(InvalidInputError, match="word-vocabulary"):
        task.predict(model, data.tokenizer, sources, min_keywords=2)
    assert len(task.predict(model, data.tokenizer, sources, num_beams=2, num_return_sequences=2)[0]) == 2


def test_a_keyword_no_repeat_ngram_forbids_finishing_is_given_up_not_looped_over():
    from transformers import LogitsProcessorList, NoRepeatNGramLogitsProcessor

    from hf_querygen.tasks.subword import SourceWordsProcessor

    # "new battle ##star gal ##act ##ica" is written; the missing phrase "old battle star gal ##act ##ica"
    # holds the trigram "gal ##act ##ica" again, which NoRepeatNGram(3) never lets it finish. Pieces 0-9
    # start a word, 10-14 continue one; [CLS] = 1, end = 2; new 3, battle 4, ##star 10, gal 5, ##act 11,
    # ##ica 12, old 6, star 7
    continuation = [False] * 10 + [True] * 5
    first, second = (3, 4, 10, 5, 11, 12), (6, 4, 7, 5, 11, 12)
    written = [1, 8, *first]
    scores = torch.zeros(3, 15)
    scores[:, 2] = 5.0

    def processors(n: int) -> LogitsProcessorList:
        keep = SourceWordsProcessor([[first, second]], 2, continuation, require=True, no_repeat_ngram_size=n)
        return (
            LogitsProcessorList([NoRepeatNGramLogitsProcessor(3), keep]) if n else LogitsProcessorList([keep])
        )

    rows = torch.tensor([written + [9, 9, 9], written + [6, 4, 7], written + [9, 6, 9]])
    out = processors(3)(rows, scores.clone())
    assert out[0, 2] == 5.0  # not begun: given up, the question may end
    assert out[1, 2] == 5.0  # begun "old battle star": its "gal ##act ##ica" cannot come either
    assert out[2, 2] == 5.0
    assert not torch.isfinite(processors(0)(rows, scores.clone())[0, 2])  # without the limit: required
    # a phrase that shares only a bigram is still required
    short = SourceWordsProcessor([[first, (6, 5, 11)]], 2, continuation, require=True, no_repeat_ngram_size=3)
    assert not torch.isfinite(short(torch.tensor([written]), scores[:1].clone())[0, 2])


def test_prefer_questions_puts_the_beams_that_end_as_a_question_first(backbone):
    from transformers import AutoTokenizer

    from hf_querygen.models._warm_start import bert2bert_config, warm_start_model
    from hf_querygen.tasks.base import get_task
    from hf_querygen.tasks.k2q import is_question

    tokenizer = AutoTokenizer.from_pretrained(str(backbone))
    torch.manual_seed(2)
    model = warm_start_model(bert2bert_config(tokenizer, backbone))
    with torch.no_grad():  # a random model that writes "?" now and then, so that some beams end as questions
        model.get_output_embeddings().bias[tokenizer.convert_tokens_to_ids("?")] = 0.25
    task = get_task("k2q")
    queries = ["cheap flights london", "capital france", "best pizza york", "ibuprofen effects"]
    settings = {"num_beams": 6, "num_return_sequences": 6, "max_length": 12, "keyword_bonus": 1.0}
    plain = task.predict(model, tokenizer, queries, **settings)
    first = task.predict(model, tokenizer, queries, prefer_questions=True, **settings)
    for beams, ordered in zip(plain, first, strict=True):
        # the same candidates, the questions first, each group in the beams' own order
        assert ordered == [q for q in beams if is_question(q)] + [q for q in beams if not is_question(q)]
    assert any(is_question(q) for beams in plain for q in beams)  # the order was put to the test
    assert any(not is_question(beams[0]) and any(map(is_question, beams)) for beams in plain)
    top = task.predict(
        model, tokenizer, queries, prefer_questions=True, **{**settings, "num_return_sequences": 1}
    )
    assert top == [ordered[0] for ordered in first]
    assert is_question("what is it ? ") and not is_question("give me all albums.")
    with pytest.raises(InvalidInputError, match="prefer_questions"):
        task.predict(model, tokenizer, queries[:1], prefer_questions="yes", **settings)


def test_a_bert2bert_first_stage_is_reloaded_on_resume_with_its_tied_output_projection(backbone, tmp_path):
    """The first stage of a two-stage row is kept as a saved BERT2BERT; a resumed run reloads it. Its
    output projection is the decoder's word embeddings, stored once under the embeddings' name."""
    from hf_querygen.model_folder import missing_untied
    from hf_querygen.models._warm_start import backbone_tokenizer, bert2bert_config, warm_start_model
    from hf_querygen.training.task_training import _pretrain

    config = bert2bert_config(backbone_tokenizer(backbone), backbone)
    trained = warm_start_model(config)
    with torch.no_grad():
        trained.decoder.cls.predictions.bias.add_(1.0)  # a "trained" tensor that is tied too
    trained.save_pretrained(tmp_path / "pretrained")
    fresh = warm_start_model(config)
    # no pretraining pairs are read: the saved weights are loaded instead
    _pretrain(fresh, None, "bert2bert", "synthetic", 5, tmp_path / "pretrained", {}, seed=0)
    assert all(
        torch.equal(a, b)
        for a, b in zip(trained.state_dict().values(), fresh.state_dict().values(), strict=True)
    )
    assert (
        fresh.decoder.cls.predictions.decoder.weight is fresh.decoder.bert.embeddings.word_embeddings.weight
    )
    # a name is missing only when no name of its tensor was stored
    everything = [name for name, _ in fresh.named_parameters(remove_duplicate=False)]
    projection, encoder = (
        "decoder.cls.predictions.decoder.weight",
        "encoder.embeddings.word_embeddings.weight",
    )
    stored = [name for name in everything if name not in (projection, encoder)]
    assert missing_untied(fresh, [projection, encoder], stored) == [encoder]
    with pytest.raises(ValueError, match="do not fit the model"):
        _pretrain(warm_start_model(config).encoder, None, "bert2bert", "x", 5, tmp_path / "pretrained", {}, 0)
