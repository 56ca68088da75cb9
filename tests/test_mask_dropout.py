"""hf_querygen.nn.dropout: the cheap CPU dropout mask, the attention that uses it, and the training context
that puts both into a transformers model and takes them out again."""

import pytest
import torch
from torch import nn
from transformers import BertConfig, EncoderDecoderConfig, EncoderDecoderModel
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from hf_querygen.errors import InvalidInputError
from hf_querygen.nn.dropout import (
    MASK_DROPOUT_ATTENTION,
    MaskDropout,
    attention_with_mask_dropout,
    dropout_keep_mask,
    mask_dropout_training,
)

torch.set_num_threads(1)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_the_mask_drops_p_of_every_16_bit_lane_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    mask = dropout_keep_mask((1_000_003,), p)  # not a multiple of 4: the last word is cut
    dropped = round(p * 65536) / 65536
    assert mask.unique().tolist() == [0.0, pytest.approx(1 / (1 - dropped))]
    lanes = (mask[:1_000_000].view(-1, 4) == 0).float().mean(0)  # each quarter of the 64-bit words
    assert torch.allclose(lanes, torch.full((4,), dropped), atol=0.004), lanes
    assert mask.mean().item() == pytest.approx(1.0, abs=0.01)


def test_the_mask_is_seeded_by_torch_and_handles_the_ends():
    torch.manual_seed(3)
    first = dropout_keep_mask((7, 5), 0.3)
    torch.manual_seed(3)
    assert torch.equal(first, dropout_keep_mask((7, 5), 0.3))
    assert torch.equal(dropout_keep_mask((2, 3), 0.0), torch.ones(2, 3))
    assert torch.equal(dropout_keep_mask((2, 3), 1.0), torch.zeros(2, 3))
    assert dropout_keep_mask((2, 3), 0.2, dtype=torch.float64).dtype == torch.float64
    for bad in (-0.1, 1.5):
        with pytest.raises(InvalidInputError, match="dropout probability"):
            dropout_keep_mask((2,), bad)


def test_mask_dropout_drops_in_training_only():
    layer = MaskDropout(0.25)
    x = torch.ones(4000)
    layer.train()
    out = layer(x)
    assert 0.2 < (out == 0).float().mean().item() < 0.3
    assert torch.allclose(out[out != 0], torch.tensor(65536 / (65536 - 16384)))
    layer.eval()
    assert torch.equal(layer(x), x)


class _Head(nn.Module):
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.is_causal = causal


@pytest.mark.parametrize("mask_kind", ["bool", "additive", "causal", "none"])
def test_the_attention_is_sdpa_when_nothing_is_dropped(mask_kind):
    """A drop probability under 1/131,072 rounds to no drop: the path of the module then must equal sdpa."""
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 4)
    keep = torch.rand(2, 1, 5, 7) > 0.3
    keep[..., 0] = True  # every query attends somewhere
    mask = {
        "bool": keep,
        "additive": torch.zeros(2, 1, 5, 7).masked_fill(~keep, torch.finfo(torch.float32).min),
        "causal": None,
        "none": None,
    }[mask_kind]
    if mask_kind == "causal":
        k, v = k[:, :, :5], v[:, :, :5]
    head = _Head(causal=mask_kind == "causal")
    ours, weights = attention_with_mask_dropout(head, q, k, v, mask, dropout=1e-7)
    stock, _ = sdpa_attention_forward(head, q, k, v, mask, dropout=0.0)
    assert weights is None and ours.shape == (2, 5, 3, 4)
    torch.testing.assert_close(ours, stock)


def _bert2bert() -> EncoderDecoderModel:
    torch.manual_seed(0)
    small = dict(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    config = EncoderDecoderConfig.from_encoder_decoder_configs(
        BertConfig(**small), BertConfig(**small, is_decoder=True, add_cross_attention=True)
    )
    config.decoder_start_token_id, config.pad_token_id = 2, 0
    return EncoderDecoderModel(config=config)


def _inputs() -> dict[str, torch.Tensor]:
    ids = torch.tensor([[2, 5, 6, 7, 3], [2, 8, 9, 3, 0]])
    return {
        "input_ids": ids,
        "attention_mask": (ids != 0).long(),
        "decoder_input_ids": torch.tensor([[2, 11, 12], [2, 13, 0]]),
        "decoder_attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
    }


def test_the_training_context_swaps_in_and_out_and_leaves_evaluation_unchanged(tmp_path):
    model = _bert2bert().eval()
    before = model(**_inputs()).logits
    with mask_dropout_training(model):
        configs = [model.config.encoder, model.config.decoder, model.encoder.config, model.decoder.config]
        assert {c._attn_implementation for c in configs} == {MASK_DROPOUT_ATTENTION}
        dropouts = [m for m in model.modules() if isinstance(m, nn.Dropout)]
        assert dropouts and all(type(m) is MaskDropout for m in dropouts)
        torch.testing.assert_close(model(**_inputs()).logits, before)  # eval: nothing dropped
        model.train()
        torch.manual_seed(1)
        first = model(**_inputs()).logits
        first.sum().backward()
        torch.manual_seed(1)
        assert torch.equal(model(**_inputs()).logits, first)  # seeded by torch
        assert not torch.allclose(model(**_inputs()).logits, first)  # and dropped out
        model.eval()
    assert {model.encoder.config._attn_implementation, model.decoder.config._attn_implementation} == {"sdpa"}
    assert all(type(m) is nn.Dropout for m in model.modules() if isinstance(m, nn.Dropout))
    model.save_pretrained(tmp_path)
    assert MASK_DROPOUT_ATTENTION not in (tmp_path / "config.json").read_text()
    torch.testing.assert_close(model(**_inputs()).logits, before)


def test_the_training_context_restores_after_an_error_and_skips_other_models():
    model = _bert2bert()
    with pytest.raises(RuntimeError, match="stop"), mask_dropout_training(model):
        raise RuntimeError("stop")
    assert model.decoder.config._attn_implementation == "sdpa"
    assert not any(type(m) is MaskDropout for m in model.modules())
    recurrent = nn.Sequential(nn.GRU(4, 4), nn.Dropout(0.3))  # no sdpa attention: left as it is
    with mask_dropout_training(recurrent):
        assert type(recurrent[1]) is nn.Dropout
