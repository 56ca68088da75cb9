"""An encoder-decoder trained with its encoder frozen (hf_querygen.training.frozen_encoder): each distinct
source is encoded once, the batch's cached states give the loss the encoder itself gives, the encoder's
weights do not move while the decoder's do, and the saved model is the plain class; on a tiny random
BERT2BERT built here."""

from __future__ import annotations

import pytest
import torch
from test_q2id_pieces import q2id_backbone, q2id_rows  # noqa: F401 (a fixture of that module)

from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.q2id.pieces import ContrastiveCollator
from hf_querygen.training.frozen_encoder import EncoderStatesCollator, freeze_encoder


def bert2bert(folder: str):
    from transformers import EncoderDecoderModel

    torch.manual_seed(0)
    model = EncoderDecoderModel.from_encoder_decoder_pretrained(folder, folder)
    model.config.decoder_start_token_id = 2
    model.config.pad_token_id = 0
    return model


def features() -> list[dict]:
    return [
        {"input_ids": [2, 7, 8, 9, 3], "labels": [10, 11, 3], "irrelevant_input_ids": [2, 7, 3]},
        {"input_ids": [2, 7, 8, 3], "labels": [12, 3], "irrelevant_input_ids": [2, 7, 3]},
    ]


def test_each_source_is_encoded_once_and_gives_the_encoders_own_states_and_loss(q2id_backbone):  # noqa: F811
    model = bert2bert(str(q2id_backbone))
    collator = EncoderStatesCollator(ContrastiveCollator(0, 2), freeze_encoder(model))
    batch = collator(features())
    (states,) = batch["encoder_outputs"]
    assert states.shape[:2] == batch["input_ids"].shape == (4, 5)  # relevant then irrelevant halves
    assert collator.encoded_sources == collator.cached_sources == 3  # the two irrelevant sources are one
    model.eval()
    for row, mask, state in zip(batch["input_ids"], batch["attention_mask"].bool(), states, strict=True):
        alone = model.get_encoder()(input_ids=row[mask][None])[0][0]
        torch.testing.assert_close(state[mask], alone, atol=1e-5, rtol=1e-5)
        assert not state[~mask].any()  # zeros where the source is padded
    collator(features()[::-1])
    assert collator.encoded_sources == 3  # read back, not encoded again
    collator([{**features()[0], "input_ids": [2, 9, 3]}])
    assert collator.encoded_sources == 4
    labels = batch.pop("labels")
    cached = model(**batch).logits
    del batch["encoder_outputs"]
    torch.testing.assert_close(cached, model(**batch).logits, atol=1e-4, rtol=1e-4)
    assert labels.shape == (2, 3)


def test_freeze_encoder_refuses_a_model_without_an_encoder_and_a_decoder_tied_to_it(q2id_backbone):  # noqa: F811
    from transformers import BertModel

    with pytest.raises(InvalidInputError, match="separate encoder"):
        freeze_encoder(BertModel.from_pretrained(str(q2id_backbone)))
    shared = bert2bert(str(q2id_backbone))  # one word-embedding table for both sides
    shared.decoder.bert.embeddings.word_embeddings = shared.encoder.embeddings.word_embeddings
    with pytest.raises(InvalidInputError, match="shares 1 tensor"):
        freeze_encoder(shared)
    with pytest.raises(InvalidInputError, match="input_ids / attention_mask"):
        EncoderStatesCollator(lambda rows: {"labels": torch.zeros(1)}, object())([{}])


def test_a_q2id_bert2bert_trains_its_decoder_alone_and_reloads_with_the_same_outputs(
    q2id_backbone,  # noqa: F811
    tmp_path,
):
    import datasets
    from transformers import AutoModelForSeq2SeqLM

    from hf_querygen.tasks.base import get_task
    from hf_querygen.training import model_for_config, save_model_folder, train_preset

    task = get_task("q2id")
    splits = datasets.DatasetDict(
        train=datasets.Dataset.from_list(q2id_rows(16)), validation=datasets.Dataset.from_list(q2id_rows(4))
    )
    data = task.prepare(splits, backbone=str(q2id_backbone), contrast_weight=0.5)
    overrides = {"backbone": str(q2id_backbone)}
    torch.manual_seed(0)
    start = model_for_config(task.model_config("bert2bert", data, **overrides)).state_dict()
    trainer = train_preset(
        data,
        "bert2bert",
        tmp_path / "checkpoints",
        preset_overrides=overrides,
        training_overrides={
            "max_steps": 4,
            "eval_strategy": "steps",
            "eval_steps": 2,
            "save_strategy": "steps",
            "save_steps": 2,
            "per_device_train_batch_size": 4,
            "prediction_loss_only": True,
            "learning_rate": 1e-3,
        },
        early_stopping_patience=None,
        frozen_encoder=True,
    )
    model = trainer.model
    assert isinstance(trainer.data_collator, EncoderStatesCollator)
    encoded = data.encoded("bert2bert")
    distinct = {
        tuple(ids)
        for split in ("train", "validation")
        for column in ("input_ids", "irrelevant_input_ids")
        for ids in encoded[split][column]
    }
    assert trainer.data_collator.encoded_sources == len(distinct) == 8  # 4 topics x (relevant, irrelevant)
    trained = model.state_dict()
    encoder = [name for name in trained if name.startswith("encoder.")]
    decoder = [name for name in trained if name.startswith("decoder.")]
    assert all(torch.equal(trained[name], start[name]) for name in encoder)
    assert any(not torch.equal(trained[name], start[name]) for name in decoder)
    losses = [log["train_loss"] for log in trainer.state.log_history if "train_loss" in log]
    assert losses and all(loss == loss and loss > 0 for loss in losses)
    sources = data.sources("validation")
    outputs = task.predict(model, data.tokenizer, sources, no_repeat_ngram_size=2)
    folder = save_model_folder(model, data.tokenizer, tmp_path / "q2id", {"task": "q2id"})
    loaded = AutoModelForSeq2SeqLM.from_pretrained(folder)
    assert type(loaded).__name__ == "EncoderDecoderModel"
    assert task.predict(loaded, data.tokenizer, sources, no_repeat_ngram_size=2) == outputs


def test_encode_all_fills_the_cache_sorted_by_length_and_the_batches_read_it(q2id_backbone):  # noqa: F811
    import datasets

    model = bert2bert(str(q2id_backbone))
    collator = EncoderStatesCollator(ContrastiveCollator(0, 2), freeze_encoder(model))
    rows = features() + [
        {"input_ids": [2, 9, 9, 9, 9, 9, 3], "labels": [4, 3], "irrelevant_input_ids": [2, 3]}
    ]
    table = datasets.Dataset.from_list([{**row, "query": "unread"} for row in rows])
    assert collator.encode_all(table, batch_size=2, progress=True) == 5  # 3 relevant + [2, 7, 3] + [2, 3]
    assert collator.encode_all(rows) == 0  # all kept: nothing encoded again
    batch = collator(rows)
    assert collator.encoded_sources == 5
    model.eval()
    (states,) = batch["encoder_outputs"]
    for row, mask, state in zip(batch["input_ids"], batch["attention_mask"].bool(), states, strict=True):
        alone = model.get_encoder()(input_ids=row[mask][None])[0][0]
        torch.testing.assert_close(state[mask], alone, atol=1e-5, rtol=1e-5)
    with pytest.raises(InvalidInputError, match="batch_size"):
        collator.encode_all(rows, batch_size=0)
