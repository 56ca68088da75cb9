"""RNNTaggerForTokenClassification: padding, loss masking, learning and the preset; save/load, batch =
single, Trainer accumulation and resize_token_embeddings run in the model contract."""

import pytest
import torch

import hf_querygen  # noqa: F401  (registers the model with the Auto classes)
from hf_querygen.models.rnn_tagger import RNNTaggerConfig, RNNTaggerForTokenClassification
from hf_querygen.presets import config_from_preset

torch.set_num_threads(1)  # tiny models: threads only add contention on the shared 2-core machine

TAGS = {0: "O", 1: "B", 2: "I"}


def tiny_tagger(**overrides) -> RNNTaggerForTokenClassification:
    torch.manual_seed(0)
    kwargs = dict(
        vocab_size=30,
        embedding_size=8,
        hidden_size=8,
        id2label=TAGS,
        label2id={tag: i for i, tag in TAGS.items()},
    )
    kwargs.update(overrides)
    return RNNTaggerForTokenClassification(RNNTaggerConfig(**kwargs)).eval()


def padded_inputs():
    input_ids = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 12, 0, 0]])
    return input_ids, (input_ids != 0).long()


def test_padded_batch_equals_each_example_alone_and_loss_ignores_minus_100():
    model = tiny_tagger()
    input_ids, mask = padded_inputs()
    labels = torch.tensor([[1, 2, 0, 1, 2], [1, 0, 2, -100, -100]])
    with torch.no_grad():
        out = model(input_ids, mask, labels=labels)
        alone = model(input_ids[1:, :3], mask[1:, :3]).logits
    assert out.logits.shape == (2, 5, 3)
    assert torch.allclose(out.logits[1, :3], alone[0], atol=1e-6)
    kept = labels != -100
    expected = -torch.log_softmax(out.logits, -1)[kept].gather(-1, labels[kept].unsqueeze(-1)).mean()
    assert torch.allclose(out.loss, expected, atol=1e-6)
    with pytest.raises(ValueError, match="outside the 3 output classes"):
        model(input_ids, mask, labels=labels.clamp_min(0) + 3)
    with pytest.raises(ValueError, match="cell='crf'"):
        RNNTaggerConfig(cell="crf")


def test_tagger_learns_a_tagging_task_that_needs_context():
    """Tag a token B when it follows the break marker 4, I otherwise: only context tells them apart."""
    torch.manual_seed(0)
    model = tiny_tagger(hidden_size=16)
    model.train()
    generator = torch.Generator().manual_seed(1)

    def batch(size):
        input_ids = torch.randint(5, 30, (size, 8), generator=generator)
        # markers at every third position with probability 1/2, so B and I tokens share their words
        input_ids[:, ::3] = torch.where(torch.rand(size, 3, generator=generator) < 0.5, 4, input_ids[:, ::3])
        after_marker = torch.zeros_like(input_ids, dtype=torch.bool)
        after_marker[:, 1:] = input_ids[:, :-1] == 4
        labels = torch.where(after_marker, 1, 2).masked_fill(input_ids == 4, 0)
        return input_ids, labels

    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(120):
        input_ids, labels = batch(32)
        loss = model(input_ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    input_ids, labels = batch(200)
    with torch.no_grad():
        accuracy = (model(input_ids).logits.argmax(-1) == labels).float().mean().item()
    assert accuracy >= 0.97, accuracy


def test_liu2018_sequence_labeling_preset_builds_the_bilstm():
    config = config_from_preset("liu2018-sequence-labeling", vocab_size=40, num_labels=2)
    assert isinstance(config, RNNTaggerConfig)
    assert (config.cell, config.bidirectional, config.embedding_size, config.hidden_size, config.dropout) == (
        "lstm",
        True,
        60,
        128,
        0.4,
    )
    model = RNNTaggerForTokenClassification(config)
    assert model(torch.tensor([[5, 6, 7]])).logits.shape == (1, 3, 2)
