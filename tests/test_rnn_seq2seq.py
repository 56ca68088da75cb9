"""RNNSeq2SeqForConditionalGeneration: the extended copy space, loss normalisation, presets, and a learned
copy task. Save/load, batch = single, cache = no cache, teacher forcing = incremental decoding, Trainer
accumulation and the LogitsProcessors run for every configuration in the model contract
(tests/test_model_contract.py over hf_querygen.models.MODELS)."""

import pytest
import torch

import hf_querygen  # noqa: F401  (registers the model with the Auto classes)
from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
from hf_querygen.nn import first_occurrence_positions
from hf_querygen.presets import PRESETS, TRAINING_PRESETS, config_from_preset, training_arguments_from_preset

VOCAB, OUTPUT_VOCAB, PAD, UNK, BOS, EOS = 40, 24, 0, 1, 2, 3

torch.set_num_threads(1)  # tiny models: threads only add contention on the shared 2-core machine

CONFIGS = {
    "lstm-vanilla": dict(attention="none"),
    "gru-bahdanau-2layers-untied": dict(
        cell="gru",
        attention="bahdanau",
        num_encoder_layers=2,
        num_decoder_layers=2,
        tie_word_embeddings=False,
    ),
    "lstm-luong-dot": dict(attention="luong-dot", decoder_hidden_size=16),
    "lstm-luong-general": dict(attention="luong-general"),
    "gru-luong-concat-no-input-feeding": dict(cell="gru", attention="luong-concat", input_feeding=False),
    "lstm-luong-local": dict(attention="luong-local", local_attention_window=1),
    "lstm-song2017-local-previous": dict(attention="luong-local", attention_query="previous"),
    "rnn-unidirectional": dict(
        cell="rnn", bidirectional_encoder=False, num_encoder_layers=2, num_decoder_layers=2
    ),
    "gru-copynet": dict(cell="gru", attention="bahdanau", copy="copynet"),
    # no input feeding and no selective read: the decoder runs all teacher-forced steps in one RNN call
    "lstm-copynet-luong-parallel": dict(
        attention="luong-general", copy="copynet", copy_selective_read=False, input_feeding=False
    ),
}


def tiny_model(seed: int = 0, **overrides) -> RNNSeq2SeqForConditionalGeneration:
    torch.manual_seed(seed)
    kwargs = dict(
        vocab_size=VOCAB,
        output_vocab_size=OUTPUT_VOCAB,
        embedding_size=8,
        hidden_size=8,
        decoder_hidden_size=12,
        pad_token_id=PAD,
        unk_token_id=UNK,
        bos_token_id=BOS,
        eos_token_id=EOS,
    )
    kwargs.update(overrides)
    model = RNNSeq2SeqForConditionalGeneration(RNNSeq2SeqConfig(**kwargs)).eval()
    with torch.no_grad():  # sharpen the random model so that decoding makes real choices
        for parameter in model.parameters():
            parameter.mul_(6.0)
    return model


LENGTHS = [6, 4, 2]


def source_batch(seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(4, VOCAB, (len(LENGTHS), max(LENGTHS)), generator=generator)
    mask = torch.zeros_like(input_ids)
    for row, length in enumerate(LENGTHS):
        mask[row, :length] = 1
    input_ids[1, 2] = input_ids[1, 0]  # a repeated word
    input_ids[0, 1] = UNK
    return input_ids.masked_fill(mask == 0, PAD), mask


def target_batch(seed: int = 2, steps: int = 5):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(4, OUTPUT_VOCAB, (len(LENGTHS), steps), generator=generator)
    labels[2, 3:] = -100
    return labels


def test_copied_ids_embed_the_source_word():
    """An extended id V + j fed back to the decoder is embedded as the source token at position j."""
    model = tiny_model(**CONFIGS["lstm-copynet-luong-parallel"])
    input_ids, mask = source_batch()
    input_ids[:, 1] = 20  # a word whose token id is also a valid decoder input
    start = torch.full((3, 1), BOS)
    copied = torch.cat([start, torch.full((3, 1), OUTPUT_VOCAB + 1)], dim=1)  # "copy position 1"
    explicit = torch.cat([start, torch.full((3, 1), 20)], dim=1)
    with torch.no_grad():
        by_slot = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=copied).logits
        by_token = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=explicit).logits
        other = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=copied - 1).logits
    assert by_slot.shape == (3, 2, OUTPUT_VOCAB + input_ids.shape[1])
    assert torch.allclose(by_slot, by_token, equal_nan=True)
    assert not torch.allclose(by_slot[:, 1], other[:, 1], equal_nan=True)  # position 0 holds another word
    # log-probabilities over the extended space; padded source slots can never be produced
    assert torch.allclose(by_slot.exp().sum(-1), torch.ones(3, 2), atol=1e-5)
    assert torch.all(torch.isneginf(by_slot[2, :, OUTPUT_VOCAB + LENGTHS[2] :]))


def test_loss_normalisation_makes_gradient_accumulation_equal_one_big_batch():
    model = tiny_model(**CONFIGS["gru-copynet"])
    model.train()
    generator = torch.Generator().manual_seed(3)
    input_ids = torch.randint(4, VOCAB, (16, 5), generator=generator)
    labels = torch.randint(4, OUTPUT_VOCAB, (16, 4), generator=generator)
    labels[:5, 1:] = -100  # the first half has far fewer label tokens than the second
    model.config.dropout = 0.0

    def gradients(loss):
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in model.parameters()]

    full_loss = model(input_ids=input_ids, labels=labels).loss
    full_grads = gradients(full_loss)
    num_items = (labels != -100).sum()
    accumulated_loss, accumulated_grads = 0.0, None
    for half in (slice(0, 8), slice(8, 16)):
        loss = model(input_ids=input_ids[half], labels=labels[half], num_items_in_batch=num_items).loss
        grads = gradients(loss)
        accumulated_loss += loss.item()
        accumulated_grads = (
            grads
            if accumulated_grads is None
            else [a + g for a, g in zip(accumulated_grads, grads, strict=True)]
        )
    assert abs(accumulated_loss - full_loss.item()) < 1e-5
    assert all(torch.allclose(a, f, atol=1e-5) for a, f in zip(accumulated_grads, full_grads, strict=True))
    # plain mean over tokens when Trainer passes nothing: not the mean of per-example means
    half_means = [
        model(input_ids=input_ids[h], labels=labels[h]).loss.item() for h in (slice(0, 8), slice(8, 16))
    ]
    assert abs(sum(half_means) / 2 - full_loss.item()) > 1e-4


def test_bad_labels_and_configs_fail_with_clear_errors():
    input_ids, mask = source_batch()
    plain = tiny_model(attention="bahdanau")
    with pytest.raises(ValueError, match="no copy mechanism"):
        plain(input_ids=input_ids, attention_mask=mask, labels=torch.full((3, 2), OUTPUT_VOCAB + 1))
    copy = tiny_model(**CONFIGS["gru-copynet"])
    dead_slot = torch.tensor([[5, 6], [5, 6], [5, OUTPUT_VOCAB + 4]])  # row 2 has only 2 real source tokens
    with pytest.raises(ValueError, match="batch row 2, step 1 is a copy slot"):
        copy(input_ids=input_ids, attention_mask=mask, labels=dead_slot)
    with pytest.raises(ValueError, match="needs decoder_input_ids or labels"):
        copy(input_ids=input_ids, attention_mask=mask)
    with pytest.raises(ValueError, match="attention='luong-multi'"):
        RNNSeq2SeqConfig(attention="luong-multi")
    with pytest.raises(ValueError, match="copynet' needs an attention"):
        RNNSeq2SeqConfig(copy="copynet")
    with pytest.raises(ValueError, match="special token ids must be < output_vocab_size"):
        RNNSeq2SeqConfig(vocab_size=50, output_vocab_size=3)
    with pytest.raises(ValueError, match="input_feeding needs Luong-style"):
        RNNSeq2SeqConfig(attention="bahdanau", input_feeding=True)


def test_presets_carry_the_papers_hyper_parameters():
    liu = config_from_preset("liu2018-attn-seq2seq", vocab_size=60)
    assert (liu.cell, liu.embedding_size, liu.hidden_size, liu.dropout, liu.attention) == (
        "lstm",
        60,
        128,
        0.4,
        "bahdanau",
    )
    assert liu.tie_word_embeddings and liu.bidirectional_encoder
    ding = config_from_preset("ding2018-copynet", vocab_size=60, output_vocab_size=30)
    assert (ding.cell, ding.embedding_size, ding.hidden_size, ding.decoder_hidden_size, ding.dropout) == (
        "gru",
        100,
        200,
        400,
        0.5,
    )
    assert ding.copy == "copynet" and ding.output_vocab_size == 30
    song = config_from_preset("song2017")
    assert song.attention == "luong-local" and song.cell == "lstm" and song.bidirectional_encoder
    lin = config_from_preset("lin2017-segmenter")
    assert (lin.cell, lin.hidden_size, lin.num_encoder_layers, lin.dropout) == ("rnn", 1024, 2, 0.05)
    assert training_arguments_from_preset("liu2018-seq2seq") == {
        "optim": "adamw_torch_fused",
        "weight_decay": 0.0,
        "learning_rate": 1e-3,
        "per_device_train_batch_size": 64,
        "max_grad_norm": 5.0,
    }
    assert TRAINING_PRESETS["ding2018-attnet"]["max_grad_norm"] == 0.1
    assert set(TRAINING_PRESETS) == set(PRESETS)
    with pytest.raises(KeyError, match="unknown preset"):
        config_from_preset("liu2019")


@pytest.mark.parametrize("name", [n for n in PRESETS if PRESETS[n]["model_type"] == "rnn_seq2seq"])
def test_every_seq2seq_preset_builds_a_model_that_trains_one_step(name):
    torch.manual_seed(0)
    config = config_from_preset(name, vocab_size=30, output_vocab_size=20)
    model = RNNSeq2SeqForConditionalGeneration(config)
    input_ids = torch.randint(4, 30, (2, 5))
    labels = torch.randint(4, 20, (2, 3))
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    assert torch.isfinite(loss) and model.decoder.output_projection.weight.grad.abs().sum() > 0


# -- learning: a copy task whose words lie outside the output vocabulary -----------------------------
COPY_VOCAB, COPY_OUTPUT_VOCAB = 40, 12


def copy_task_batch(size: int, generator: torch.Generator):
    """Targets repeat the source; most words are outside the output vocabulary (ids >= 12) and some are
    even outside the shared vocabulary (word ids >= 40 appear as [UNK] in input_ids)."""
    lengths = torch.randint(2, 6, (size,), generator=generator)
    width = int(lengths.max()) + 1
    words = torch.randint(4, COPY_VOCAB + 20, (size, width), generator=generator)
    mask = torch.arange(width).unsqueeze(0) <= lengths.unsqueeze(1)
    words[torch.arange(size), lengths] = EOS
    words = words.masked_fill(~mask, PAD)
    input_ids = torch.where(words >= COPY_VOCAB, torch.full_like(words, UNK), words)
    first = first_occurrence_positions(words, mask)
    in_output_vocab = (input_ids < COPY_OUTPUT_VOCAB) & (input_ids != UNK)
    labels = torch.where(in_output_vocab, input_ids, COPY_OUTPUT_VOCAB + first).masked_fill(~mask, -100)
    return input_ids, mask.long(), words, labels


def copy_task_exact_match(model, generator: torch.Generator) -> float:
    input_ids, mask, words, _ = copy_task_batch(200, generator)
    with torch.no_grad():
        generated = model.generate(
            input_ids=input_ids, attention_mask=mask, source_word_ids=words, max_length=9
        )
    hits = 0
    for row in range(len(input_ids)):
        predicted = []
        for token in generated[row, 1:].tolist():
            if token in (EOS, PAD):
                break
            # a copy slot decodes to the source WORD at that position, never to [UNK]
            predicted.append(
                int(words[row, token - COPY_OUTPUT_VOCAB]) if token >= COPY_OUTPUT_VOCAB else token
            )
        hits += predicted == words[row, : int(mask[row].sum()) - 1].tolist()
    return hits / len(input_ids)


def train_on_copy_task(copy: str, steps: int = 60) -> RNNSeq2SeqForConditionalGeneration:
    torch.manual_seed(0)
    config = RNNSeq2SeqConfig(
        vocab_size=COPY_VOCAB,
        output_vocab_size=COPY_OUTPUT_VOCAB,
        embedding_size=16,
        hidden_size=16,
        decoder_hidden_size=32,
        attention="bahdanau",
        copy=copy,
    )
    model = RNNSeq2SeqForConditionalGeneration(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        input_ids, mask, words, labels = copy_task_batch(32, generator)
        if copy == "none":  # without copying, a word outside the output vocabulary can only be [UNK]
            labels = torch.where(labels >= COPY_OUTPUT_VOCAB, torch.full_like(labels, UNK), labels)
        loss = model(input_ids=input_ids, attention_mask=mask, source_word_ids=words, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
    return model.eval()


def test_copynet_learns_to_copy_words_outside_the_vocabulary_and_plain_attention_cannot():
    with_copy = copy_task_exact_match(train_on_copy_task("copynet"), torch.Generator().manual_seed(99))
    without_copy = copy_task_exact_match(train_on_copy_task("none"), torch.Generator().manual_seed(99))
    assert with_copy >= 0.95, with_copy
    assert without_copy <= 0.1, without_copy
