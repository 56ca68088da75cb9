"""Seq2seq preprocessing (extended-space labels, collator, copy decoding), Seq2SeqTrainer glue,
gradient accumulation, a real-corpus slice, and the train / evaluate / generate CLI."""

import json

import datasets
import pytest
import torch
from _seq2seq_toy import copy_task_rows, copy_task_tokenizer, tiny_copy_model
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, Seq2SeqTrainer, Seq2SeqTrainingArguments

from hf_querygen.cli import main as cli_main
from hf_querygen.inference import generate_texts
from hf_querygen.tasks.seq2seq import (
    Seq2SeqCollator,
    decode_extended,
    decode_extended_batch,
    encode_seq2seq,
)
from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer
from hf_querygen.training import (
    TRAINING_METADATA_FILE,
    make_compute_metrics,
    train_seq2seq,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def small_tokenizer():
    # output vocabulary: specials + "population", "capital"; "who", "wrote", "of", "the" are
    # source-side words beyond it (ids >= V)
    return train_word_tokenizer(
        ["who wrote the capital of the", "who wrote"], target_texts=["population capital population"]
    )


def test_labels_in_extended_space(small_tokenizer):
    tok = small_tokenizer
    V = output_vocab_size_of(tok)
    assert V == 6
    rows = {
        "src": ["Population of Zorblax and zorblax", "who wrote Qux"],
        "tgt": ["zorblax population unknownword", "wrote qux capital"],
    }
    encoded = encode_seq2seq(datasets.Dataset.from_dict(rows), tok, "src", "tgt", V, max_source_length=10)
    first, second = encoded[0], encoded[1]
    assert first["source_words"] == ["population", "of", "zorblax", "and", "zorblax"]
    assert first["input_ids"][-1] == tok.eos_token_id and len(first["input_ids"]) == 6
    # OOV target word -> V + its FIRST source position; vocabulary word -> id; absent word -> [UNK]; EOS
    assert first["labels"] == [
        V + 2,
        tok.convert_tokens_to_ids("population"),
        tok.unk_token_id,
        tok.eos_token_id,
    ]
    # the two [UNK] source words share an id (same word), distinct from any vocabulary id
    word_ids = first["source_word_ids"]
    assert word_ids[2] == word_ids[4] >= len(tok) and word_ids[3] >= len(tok) and word_ids[3] != word_ids[2]
    assert word_ids[0] == first["input_ids"][0]
    # "wrote" is in the vocabulary but not in the output vocabulary: it is copied too
    assert second["labels"] == [V + 1, V + 2, tok.convert_tokens_to_ids("capital"), tok.eos_token_id]

    no_copy = encode_seq2seq(datasets.Dataset.from_dict(rows), tok, "src", "tgt", V, copy=False)
    assert no_copy[1]["labels"] == [
        tok.unk_token_id,
        tok.unk_token_id,
        tok.convert_tokens_to_ids("capital"),
        3,
    ]
    truncated = encode_seq2seq(datasets.Dataset.from_dict(rows), tok, "src", "tgt", V, 3, 2)
    assert truncated[0]["labels"] == [tok.unk_token_id, tok.eos_token_id]  # zorblax cut from the source
    assert truncated[0]["source_words"] == ["population", "of"]


def test_decode_extended_maps_copies_back_to_source_words(small_tokenizer):
    tok = small_tokenizer
    V = output_vocab_size_of(tok)
    words = ["population", "of", "zorblax"]
    ids = [tok.bos_token_id, V + 2, tok.convert_tokens_to_ids("capital"), V + 3, tok.eos_token_id, V + 2]
    assert decode_extended(ids, words, tok, V) == ["zorblax", "capital"]  # V + 3 is the [EOS] slot
    labels = torch.tensor([V + 2, 5, 3, -100, -100])
    assert decode_extended(labels, words, tok, V) == ["zorblax", tok.convert_ids_to_tokens(5)]
    batch = decode_extended_batch(
        torch.tensor([[V + 2, 3], [V, 3], [V + 1, 3], [V + 2, 3]]),
        [words, ["qux", "zed", "zorblax"]],
        tok,
        V,
        num_return_sequences=2,
    )
    assert batch == ["zorblax", "population", "zed", "zorblax"]
    with pytest.raises(ValueError, match="3 sequences for 2 sources"):
        decode_extended_batch([[3], [3], [3]], [words, words], tok, V)


def test_collator_pads_with_the_right_values(small_tokenizer):
    rows = {
        "src": ["who wrote", "the capital of the zorblax"],
        "tgt": ["capital", "zorblax population capital"],
    }
    encoded = encode_seq2seq(datasets.Dataset.from_dict(rows), small_tokenizer, "src", "tgt", 6)
    batch = Seq2SeqCollator(pad_token_id=0)(list(encoded))
    assert set(batch) == {"input_ids", "attention_mask", "labels", "source_word_ids"}
    assert batch["input_ids"].shape == (2, 6) and batch["input_ids"][0, 3:].tolist() == [0, 0, 0]
    assert batch["attention_mask"][0].tolist() == [1, 1, 1, 0, 0, 0]
    assert batch["labels"][0].tolist() == [5, 3, -100, -100]


def test_encode_errors_name_the_problem(small_tokenizer):
    dataset = datasets.Dataset.from_dict({"src": ["a"], "tgt": ["b"]})
    with pytest.raises(KeyError, match="'nl_query'"):
        encode_seq2seq(dataset, small_tokenizer, "nl_query", "tgt", 6)
    with pytest.raises(ValueError, match="output_vocab_size=99"):
        encode_seq2seq(dataset, small_tokenizer, "src", "tgt", 99)
    with pytest.raises(TypeError, match="column 'tgt', row 0"):
        encode_seq2seq(
            datasets.Dataset.from_dict({"src": ["a"], "tgt": [3]}), small_tokenizer, "src", "tgt", 6
        )


def _toy_splits(tokenizer, train_size=384, eval_size=48):
    V = output_vocab_size_of(tokenizer)
    train = datasets.Dataset.from_list(copy_task_rows(train_size, seed=1))
    validation = datasets.Dataset.from_list(copy_task_rows(eval_size, seed=2))
    encode = dict(tokenizer=tokenizer, source_column="source", target_column="target", output_vocab_size=V)
    return encode_seq2seq(train, **encode), encode_seq2seq(validation, **encode), validation


def test_seq2seq_trainer_learns_copy_task_with_generate_metrics(tmp_path):
    tokenizer = copy_task_tokenizer()
    V = output_vocab_size_of(tokenizer)
    train, validation, raw_validation = _toy_splits(tokenizer)
    model = tiny_copy_model(tokenizer)
    metrics = make_compute_metrics(validation, tokenizer, V, "source", "target")
    trainer = train_seq2seq(
        model,
        tokenizer,
        train,
        validation,
        tmp_path,
        compute_metrics=metrics,
        max_new_tokens=5,
        num_train_epochs=4,
        per_device_train_batch_size=16,
        learning_rate=1e-2,
        logging_steps=10,
    )
    evaluations = [log for log in trainer.state.log_history if "eval_loss" in log]
    assert len(evaluations) == 4 and {"eval_exact_match", "eval_bleu"} <= set(evaluations[0])
    assert evaluations[-1]["eval_loss"] < evaluations[0]["eval_loss"]
    assert trainer.state.best_metric == min(e["eval_loss"] for e in evaluations)  # best model restored
    assert evaluations[-1]["eval_exact_match"] >= 0.9  # names never seen: only copying gets them right

    saved_generation = json.loads((tmp_path / "generation_config.json").read_text())
    assert saved_generation["max_length"] == 6 and saved_generation["num_beams"] == 1
    assert "max_new_tokens" not in saved_generation or saved_generation["max_new_tokens"] is None
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    reloaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    texts = raw_validation["source"][:16]
    outputs = generate_texts(reloaded, reloaded_tokenizer, texts, batch_size=5)
    assert outputs == generate_texts(trainer.model, tokenizer, texts, batch_size=16)
    assert sum(o == t for o, t in zip(outputs, raw_validation["target"][:16], strict=True)) >= 14
    assert all("[UNK]" not in o for o in outputs)
    beams = generate_texts(reloaded, reloaded_tokenizer, texts[:3], num_beams=3, num_return_sequences=2)
    assert len(beams) == 6 and beams[0] == outputs[0]  # the best beam of text 0 comes first


def test_early_stopping_on_validation_loss(tmp_path):
    # validation targets belong to OTHER sources: the better the model copies, the worse its
    # validation loss, so training must stop after `patience` evaluations without improvement
    tokenizer = copy_task_tokenizer()
    train, _, _ = _toy_splits(tokenizer, train_size=192)
    rows = copy_task_rows(32, seed=9)
    shuffled = [
        {"source": row["source"], "target": rows[(i + 1) % len(rows)]["target"]} for i, row in enumerate(rows)
    ]
    validation = encode_seq2seq(
        datasets.Dataset.from_list(shuffled), tokenizer, "source", "target", output_vocab_size_of(tokenizer)
    )
    trainer = train_seq2seq(
        tiny_copy_model(tokenizer),
        tokenizer,
        train,
        validation,
        tmp_path,
        num_train_epochs=20,
        early_stopping_patience=2,
        per_device_train_batch_size=16,
        learning_rate=1e-2,
    )
    evaluations = [log["eval_loss"] for log in trainer.state.log_history if "eval_loss" in log]
    assert trainer.state.epoch < 20 and len(evaluations) < 20
    best = evaluations.index(min(evaluations))
    assert len(evaluations) == best + 3  # stopped two evaluations after the best one
    assert trainer.state.best_metric == min(evaluations)


def test_group_by_length_batches_similar_source_lengths_in_random_order(tmp_path):
    tokenizer = copy_task_tokenizer()
    rows = copy_task_rows(256, seed=4)
    for i, row in enumerate(rows):  # sources of 2..9+ words
        row["source"] = " ".join([row["source"]] + ["alpha"] * (i % 8))
    train = encode_seq2seq(
        datasets.Dataset.from_list(rows),
        tokenizer,
        "source",
        "target",
        output_vocab_size_of(tokenizer),
        remove_columns=True,
    )
    trainer = train_seq2seq(
        tiny_copy_model(tokenizer),
        tokenizer,
        train,
        None,
        tmp_path,
        num_train_epochs=1,
        per_device_train_batch_size=16,
        group_by_length=True,
    )
    epochs = [list(trainer.get_train_dataloader()) for _ in range(2)]
    for batches in epochs:
        source_lengths = [batch["attention_mask"].sum(-1) for batch in batches]
        widths = [int(lengths.max() - lengths.min()) for lengths in source_lengths]
        # random batches of 16 over 8+ source lengths almost surely span >= 6 tokens; sorted ones span 1-2
        assert max(widths) <= 3 and sum(widths) / len(widths) <= 2
        assert sum(len(batch["input_ids"]) for batch in batches) == len(train)  # every example, once
        # ... and the batches are NOT walked from longest to shortest (the stock sampler's order)
        maxima = [int(lengths.max()) for lengths in source_lengths]
        assert maxima != sorted(maxima, reverse=True) and maxima != sorted(maxima)
    assert [b["input_ids"].tolist() for b in epochs[0]] != [b["input_ids"].tolist() for b in epochs[1]]


def test_bucketed_batch_sampler_keeps_the_incomplete_batch_last():
    import torch

    from hf_querygen.training import BucketedBatchSampler

    torch.manual_seed(0)
    keys = [(i * 7) % 5 for i in range(23)]
    indices = list(BucketedBatchSampler(keys, batch_size=4, mega_batch_size=2))
    assert sorted(indices) == list(range(23))
    batches = [indices[i : i + 4] for i in range(0, 23, 4)]
    assert len(batches[-1]) == 3
    for batch in batches:  # each batch is a run of one sorted mega-batch
        assert [keys[i] for i in batch] == sorted(keys[i] for i in batch)
    with pytest.raises(ValueError, match="batch_size"):
        BucketedBatchSampler(keys, batch_size=0)


def _one_sgd_step(tmp_path, batch_size, accumulation, train):
    tokenizer = copy_task_tokenizer()
    model = tiny_copy_model(tokenizer, seed=3)
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation,
        max_steps=1,
        optim="sgd",
        learning_rate=1.0,
        lr_scheduler_type="constant",
        max_grad_norm=1e9,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
        data_seed=0,
        disable_tqdm=True,
        dataloader_pin_memory=False,
    )
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train, data_collator=Seq2SeqCollator())
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer.train()
    gradients = {name: before[name] - p.detach() for name, p in model.named_parameters()}  # lr 1 SGD step
    loss = next(log["loss"] for log in trainer.state.log_history if "loss" in log)
    return loss, gradients


def test_gradient_accumulation_2x8_equals_batch_16(tmp_path):
    tokenizer = copy_task_tokenizer()
    rows = copy_task_rows(16, seed=5)
    for i, row in enumerate(rows):  # unequal target lengths: per-token normalisation matters
        row["target"] = " ".join([row["target"]] + ["alpha"] * (i % 4))
    train = encode_seq2seq(
        datasets.Dataset.from_list(rows),
        tokenizer,
        "source",
        "target",
        output_vocab_size_of(tokenizer),
        remove_columns=True,
    )
    loss_16, gradients_16 = _one_sgd_step(tmp_path / "a", 16, 1, train)
    loss_8x2, gradients_8x2 = _one_sgd_step(tmp_path / "b", 8, 2, train)
    assert loss_8x2 == pytest.approx(loss_16, rel=1e-4)
    assert any(g.abs().max() > 1e-4 for g in gradients_16.values())
    for name, gradient in gradients_16.items():
        torch.testing.assert_close(gradients_8x2[name], gradient, rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.slow
def test_training_loss_falls_on_a_real_nl2kw_slice(data_dir, tmp_path):
    from hf_querygen.corpora import load_corpus
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration

    splits = load_corpus("nl2kw", "en", data_dir=data_dir)
    train_raw, validation_raw = splits["train"].select(range(512)), splits["validation"].select(range(128))
    tokenizer = train_word_tokenizer(train_raw["nl_query"], target_texts=train_raw["keyword_query"])
    V = output_vocab_size_of(tokenizer)
    encode = dict(
        tokenizer=tokenizer,
        source_column="nl_query",
        target_column="keyword_query",
        output_vocab_size=V,
        max_source_length=32,
        max_target_length=8,
    )
    torch.manual_seed(0)
    config = RNNSeq2SeqConfig(
        vocab_size=len(tokenizer),
        output_vocab_size=V,
        embedding_size=32,
        hidden_size=32,
        attention="bahdanau",
        copy="copynet",
        cell="gru",
    )
    trainer = train_seq2seq(
        RNNSeq2SeqForConditionalGeneration(config),
        tokenizer,
        encode_seq2seq(train_raw, **encode),
        encode_seq2seq(validation_raw, **encode),
        tmp_path,
        training_preset="liu2018-attn-seq2seq",
        num_train_epochs=3,
        per_device_train_batch_size=32,
        logging_steps=4,
    )
    train_losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    eval_losses = [log["eval_loss"] for log in trainer.state.log_history if "eval_loss" in log]
    assert len(train_losses) >= 10
    assert sum(train_losses[-3:]) / 3 < 0.8 * sum(train_losses[:3]) / 3
    assert eval_losses[-1] < eval_losses[0]


@pytest.mark.slow
def test_cli_train_evaluate_generate(data_dir, tmp_path, capsys):
    out = tmp_path / "model"
    assert (
        cli_main(
            [
                "train",
                "--corpus",
                "nl2kw",
                "--preset",
                "liu2018-attn-seq2seq",
                "--output-dir",
                str(out),
                "--quick",
                "--max-steps",
                "12",
                "--data-dir",
                str(data_dir),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("trained ")  # a summary; the record is in the folder
    trained = json.loads((out / TRAINING_METADATA_FILE).read_text())
    assert trained["global_steps"] == 12 and trained["train_examples"] > 1000 and trained["quick"]
    assert trained["group_by_length"]
    assert trained["validation_examples"] == 256 and "eval_f1" in trained["validation"]
    assert not list(out.glob("checkpoint-*")) and (out / "model.safetensors").is_file()
    assert not list(tmp_path.glob(".model.*"))  # checkpoints and the staging folder are gone

    assert (
        cli_main(
            [
                "evaluate",
                "--model",
                str(out),
                "--split",
                "validation",
                "--limit",
                "40",
                "--data-dir",
                str(data_dir),
            ]
        )
        == 0
    )
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["corpus"] == "nl2kw" and evaluated["examples"] == 40
    assert {"precision", "recall", "f1", "recall_generative"} <= set(evaluated["metrics"])
    assert all(0.0 <= evaluated["metrics"][k] <= 1.0 for k in ("precision", "recall", "f1"))

    assert (
        cli_main(
            [
                "generate",
                "--model",
                str(out),
                "what is the history of the Zorblax river",
                "--num-beams",
                "2",
                "--num-return-sequences",
                "2",
            ]
        )
        == 0
    )
    assert len(capsys.readouterr().out.splitlines()) == 2
