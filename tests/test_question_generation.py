"""The ``question-generation`` pipeline on a tiny ding2018-copynet trained on synthetic K2Q pairs."""

from __future__ import annotations

import datasets
import pytest
import torch
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, pipeline

import hf_querygen  # noqa: F401  (registers the pipeline task and the model type)
from hf_querygen.errors import InvalidInputError
from hf_querygen.pipelines.question_generation import QuestionGenerationPipeline
from hf_querygen.presets import config_from_preset
from hf_querygen.synthetic import KQGMConfig, LengthPrior, SynthesisConfig, synthesize
from hf_querygen.tasks.seq2seq import Seq2SeqCollator, encode_seq2seq
from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer

torch.set_num_threads(1)

QUESTIONS = [
    ("what is the capital of france", "c1"),
    ("which city is the capital of france", "c1"),
    ("how tall is the eiffel tower", "c2"),
    ("what is the height of the eiffel tower", "c2"),
    ("who wrote the hobbit novel", "c3"),
    ("who is the author of the hobbit", "c3"),
    ("when did the berlin wall fall down", "c4"),
    ("what is the longest river in africa", "c6"),
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqForConditionalGeneration

    tmp = tmp_path_factory.mktemp("qg")
    rows = {"id": [], "question": [], "text": [], "cluster_id": [], "paraphrases": []}
    for i, (text, cluster) in enumerate(QUESTIONS):
        rows["id"].append(f"q{i}")
        rows["question"].append(text)
        rows["text"].append(text)
        rows["cluster_id"].append(cluster)
        rows["paraphrases"].append([t for t, c in QUESTIONS if c == cluster and t != text])
    config = SynthesisConfig(
        kqgm=KQGMConfig(strategy="combination", paraphrase=True, phrases=False, alpha=0.1, beta=0.9),
        num_candidates=1,
        shard_size=8,
    )
    # the real generator (KQGM only: KQF/TDF need an index) gives the keyword side of the pairs
    pairs = [
        synthesize(
            datasets.Dataset.from_dict(rows),
            tmp / f"syn{seed}",
            config.__class__(**{**config.__dict__, "seed": seed}),
            LengthPrior.from_lengths([3]),
            None,
            progress=False,
        )
        for seed in range(6)
    ]
    train = datasets.concatenate_datasets(pairs).select_columns(["keyword_query", "question"])
    tokenizer = train_word_tokenizer(train["keyword_query"], target_texts=train["question"])
    encoded = encode_seq2seq(train, tokenizer, "keyword_query", "question", output_vocab_size_of(tokenizer))
    # ding2018-copynet, shrunk: same architecture (BiGRU encoder, GRU decoder, attention, CopyNet)
    model = RNNSeq2SeqForConditionalGeneration(
        config_from_preset(
            "ding2018-copynet",
            vocab_size=len(tokenizer),
            output_vocab_size=output_vocab_size_of(tokenizer),
            embedding_size=16,
            hidden_size=16,
            decoder_hidden_size=32,
            dropout=0.0,
        )
    )
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp / "run"),
        max_steps=60,
        per_device_train_batch_size=8,
        learning_rate=2e-2,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        remove_unused_columns=False,
    )
    collator = Seq2SeqCollator(tokenizer.pad_token_id)
    Seq2SeqTrainer(model=model, args=args, train_dataset=encoded, data_collator=collator).train()
    model.generation_config.max_new_tokens = 10
    model.save_pretrained(tmp / "model")
    tokenizer.save_pretrained(tmp / "model")
    return tmp / "model"


@pytest.fixture(scope="module")
def generate_questions(model_dir):
    return pipeline("question-generation", model=str(model_dir))


def test_pipeline_returns_several_distinct_scored_questions(generate_questions):
    assert isinstance(generate_questions, QuestionGenerationPipeline)
    for strategy in ("beam", "distinct-beam", "sample"):
        out = generate_questions("capital france", num_return_sequences=3, num_beams=4, strategy=strategy)
        texts = [o["generated_text"] for o in out]
        assert 1 <= len(out) <= 3 and len(set(texts)) == len(texts)
        scores = [o["score"] for o in out]
        assert scores == sorted(scores, reverse=True) and all(s <= 0 for s in scores)
    distinct = generate_questions("capital france", num_return_sequences=3, strategy="distinct-beam")
    assert len(distinct) == 3  # over-generation fills the list with distinct questions


def test_beam_scores_are_the_models_length_normalised_log_probabilities(generate_questions):
    out = generate_questions("eiffel tower height", num_return_sequences=2, num_beams=3, return_tensors=True)
    model, tokenizer = generate_questions.model, generate_questions.tokenizer
    from hf_querygen.tasks.seq2seq import encode_sources

    enc = encode_sources(["eiffel tower height"], tokenizer)
    inputs = {k: torch.tensor(enc[k]) for k in ("input_ids", "attention_mask", "source_word_ids")}
    ref = model.generate(
        **inputs, num_beams=3, num_return_sequences=2, return_dict_in_generate=True, output_scores=True
    )
    assert out[0]["score"] == pytest.approx(float(ref.sequences_scores.max()), abs=1e-5)


def test_batched_equals_unbatched_and_bad_strategy_fails(generate_questions):
    queries = ["capital france", "hobbit author", "berlin wall fall"]
    single = [generate_questions(q, num_return_sequences=2, num_beams=2) for q in queries]
    batched = generate_questions(queries, num_return_sequences=2, num_beams=2, batch_size=2)
    assert [[o["generated_text"] for o in b] for b in batched] == [
        [o["generated_text"] for o in s] for s in single
    ]
    with pytest.raises(InvalidInputError):
        generate_questions("capital france", strategy="group-beam")


QUERIES = ["capital france", "hobbit author", "berlin wall fall"]


@pytest.mark.parametrize("strategy", ["beam", "distinct-beam", "sample"])
def test_every_strategy_beam_width_and_return_count_on_a_batch(generate_questions, strategy):
    for num_beams in (1, 2, 5):
        for wanted in (1, 3):
            torch.manual_seed(0)
            out = generate_questions(
                QUERIES, strategy=strategy, num_beams=num_beams, num_return_sequences=wanted
            )
            assert len(out) == len(QUERIES)  # one list per keyword query, in input order
            for questions in out:
                assert 1 <= len(questions) <= wanted
                texts = [q["generated_text"] for q in questions]
                assert all(isinstance(t, str) for t in texts) and len(set(texts)) == len(texts)
                scores = [q["score"] for q in questions]
                assert all(isinstance(s, float) and s <= 0 for s in scores)
                assert scores == sorted(scores, reverse=True)
            if strategy == "distinct-beam":
                assert all(len(questions) == wanted for questions in out)


def test_default_call_is_greedy_and_matches_the_task_predict(generate_questions):
    """No arguments: one greedy question per query, the text that K2QTask.predict (the runner's decoding)
    gives; the score is the mean per-token log-probability."""
    from hf_querygen.tasks.k2q.task import K2Q

    single = generate_questions("capital france")
    assert len(single) == 1 and set(single[0]) == {"generated_text", "score"}
    predicted = K2Q.predict(generate_questions.model, generate_questions.tokenizer, QUERIES)
    assert [o[0]["generated_text"] for o in generate_questions(QUERIES)] == predicted
    assert predicted[0] == single[0]["generated_text"]
    assert generate_questions([]) == [] and generate_questions("   ") == []


def test_saved_task_decoding_is_the_default_and_call_arguments_override_it(model_dir, tmp_path):
    """config.task_decoding (chosen on validation by train_model) is what the pipeline decodes with."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from hf_querygen.tasks.k2q.task import K2Q

    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    guarded = {"no_repeat_ngram_size": 1, "num_beams": 1}
    expected = K2Q.predict(model, tokenizer, QUERIES, **guarded)
    for text in expected:  # no word twice: the guard is applied
        assert len(text.split()) == len(set(text.split()))
    model.config.task_decoding = guarded
    model.save_pretrained(tmp_path / "guarded")
    tokenizer.save_pretrained(tmp_path / "guarded")
    generate = pipeline("question-generation", model=str(tmp_path / "guarded"))
    assert [o[0]["generated_text"] for o in generate(QUERIES)] == expected
    unguarded = K2Q.predict(model, tokenizer, QUERIES, no_repeat_ngram_size=0)
    assert [o[0]["generated_text"] for o in generate(QUERIES, no_repeat_ngram_size=0)] == unguarded


def test_bad_arguments_are_named(generate_questions):
    with pytest.raises(InvalidInputError, match="num_return_sequences"):
        generate_questions("capital france", num_return_sequences=0)
    with pytest.raises(InvalidInputError, match="overgenerate"):
        generate_questions("capital france", overgenerate=0)
    with pytest.raises(InvalidInputError, match="num_beams"):
        generate_questions("capital france", num_beams=0)
    with pytest.raises(TypeError, match="unknown arguments"):
        generate_questions("capital france", beams=3)
    # the warm-started models' keyword options: refused by a copy model, typed for every model
    for option, value in (("keywords_once", True), ("require_keywords", True), ("keyword_bonus", 2.0)):
        with pytest.raises(InvalidInputError, match=f"{option} is a word-piece decoding"):
            generate_questions("capital france", **{option: value})
    assert generate_questions("capital france", keywords_once=False, keyword_bonus=0.0)
    for option, value in (("keywords_once", "yes"), ("no_repeat_source_words", 1), ("keyword_bonus", -1.0)):
        with pytest.raises(InvalidInputError, match=option):
            generate_questions("capital france", **{option: value})


def test_no_repeat_source_words_bans_a_copied_word_under_every_id():
    from hf_querygen.tasks.k2q import NoRepeatSourceWordsProcessor

    # V = 10; source: word 7, an OOV word (input [UNK]=1, source id 20), word 7 again, [EOS]=3
    processor = NoRepeatSourceWordsProcessor(
        torch.tensor([[7, 1, 7, 3]]), torch.tensor([[7, 20, 7, 3]]), 10, special_ids=[0, 1, 2, 3]
    )
    scores = torch.zeros(3, 14)  # 3 beams of the one example, width V + S
    generated = torch.tensor([[2, 7], [2, 11], [2, 4]])  # word 7 from the vocabulary; OOV copied; other
    banned = processor(generated, scores).isinf()
    assert banned[0].nonzero().flatten().tolist() == [7, 10, 12]  # its id and both positions holding it
    assert banned[1].nonzero().flatten().tolist() == [11]  # the OOV word's position only
    assert not banned[2].any()  # a question word may repeat
    copied = processor(torch.tensor([[2, 12]]), torch.zeros(1, 14)).isinf()  # word 7 copied from pos 2
    assert copied[0].nonzero().flatten().tolist() == [7, 10, 12]


def test_no_repeat_source_words_in_decoding(generate_questions):
    for strategy in ("beam", "sample"):
        out = generate_questions(QUERIES, strategy=strategy, num_beams=2, no_repeat_source_words=True)
        for query, questions in zip(QUERIES, out, strict=True):
            words = questions[0]["generated_text"].split()
            source_words = [w for w in words if w in query.split()]
            assert len(source_words) == len(set(source_words)), (query, words)


def test_copy_all_source_words_holds_back_the_end_until_every_keyword_is_out():
    from hf_querygen.tasks.k2q import NoRepeatSourceWordsProcessor

    processor = NoRepeatSourceWordsProcessor(
        torch.tensor([[7, 8, 3]]), None, 10, special_ids=[0, 1, 2, 3], eos_token_id=3, copy_all=True
    )
    scores = torch.zeros(1, 13)
    scores[0, 3] = 5.0  # the model wants to end
    waiting = processor(torch.tensor([[2, 7]]), scores)  # word 8 still missing
    assert waiting[0, 3].isinf() and waiting[0, [7, 10]].isinf().all() and not waiting[0, 8].isinf()
    assert waiting[0].argmax() == 11 and waiting[0, 11] == 5.0  # copying word 8 takes the end's score
    done = processor(torch.tensor([[2, 7, 11]]), torch.zeros(1, 13))  # 8 copied from position 1
    assert not done[0, 3].isinf()


def test_copy_all_source_words_in_decoding(generate_questions):
    out = generate_questions(
        QUERIES, copy_all_source_words=True, no_repeat_source_words=True, max_new_tokens=12
    )
    for query, questions in zip(QUERIES, out, strict=True):
        words = questions[0]["generated_text"].split()
        # every keyword word unless the length limit ended the question first
        assert set(query.split()) <= set(words) or len(words) >= 11, (query, words)


def test_keyword_fallback_keeps_every_keyword_or_writes_the_frame(generate_questions):
    """keyword_fallback: only questions that keep every keyword come back; when no candidate does, the
    keyword query in the frame (with the best candidate's score)."""
    from hf_querygen.tasks.k2q import fill_frame, keeps_keywords

    assert keeps_keywords("what is the capital of france ?", "capital france")
    assert not keeps_keywords("what is the capital ?", "capital France")
    assert fill_frame("what is X", "Capital, France") == "what is capital france"
    plain = generate_questions(QUERIES, num_beams=3, num_return_sequences=3)
    kept = generate_questions(QUERIES, num_beams=3, num_return_sequences=3, keyword_fallback="what is X")
    for query, before, after in zip(QUERIES, plain, kept, strict=True):
        faithful = [item for item in before if keeps_keywords(item["generated_text"], query)]
        if faithful:
            assert after == faithful
        else:
            assert after == [{"generated_text": fill_frame("what is X", query), "score": before[0]["score"]}]
    with pytest.raises(InvalidInputError, match="keyword_fallback"):
        generate_questions("capital france", keyword_fallback="what is it")
