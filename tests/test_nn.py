"""Behaviour of the shared building blocks in hf_querygen.nn (encoder, attention, copy, cache, loss)."""

import math

import pytest
import torch

from hf_querygen.nn import (
    ATTENTION_KINDS,
    CopyNet,
    LocalPredictiveAttention,
    LuongAttention,
    RecurrentEncoderOutput,
    RecurrentStateCache,
    RNNEncoder,
    build_attention,
    extended_to_input_ids,
    first_occurrence_positions,
    live_copy_slots,
    positions_to_extended,
    recurrent_encoder_output,
)
from hf_querygen.nn.loss import token_nll

torch.set_num_threads(1)  # tiny tensors: threads only add contention on the shared 2-core machine


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _padded_batch(lengths, size=5):
    mask = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        mask[row, :length] = 1
    return torch.randn(len(lengths), max(lengths), size) * mask.unsqueeze(-1), mask


# -- encoder ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_encoder_padding_summary_and_batch_equals_single(cell):
    encoder = RNNEncoder(5, 4, num_layers=2, cell=cell, bidirectional=True).eval()
    inputs, mask = _padded_batch([6, 3, 1])
    out = encoder(inputs, mask)
    assert out.outputs.shape == (3, 6, 8) and encoder.output_size == 8
    assert out.final_hidden.shape == (3, 2, 8)
    assert (out.final_cell is not None) == (cell == "lstm")
    assert torch.all(out.outputs[1, 3:] == 0) and torch.all(out.outputs[2, 1:] == 0)
    # top layer summary = [forward state at the last real token ; backward state at position 0] (Liu Eq. 1)
    for row, length in enumerate([6, 3, 1]):
        assert torch.allclose(out.final_hidden[row, -1, :4], out.outputs[row, length - 1, :4], atol=1e-6)
        assert torch.allclose(out.final_hidden[row, -1, 4:], out.outputs[row, 0, 4:], atol=1e-6)
        alone = encoder(inputs[row : row + 1, :length], mask[row : row + 1, :length])
        assert torch.allclose(alone.outputs[0], out.outputs[row, :length], atol=1e-6)
        assert torch.allclose(alone.final_hidden[0], out.final_hidden[row], atol=1e-6)


@pytest.mark.parametrize("cell", ["gru", "rnn"])
@pytest.mark.parametrize("layers,bidirectional", [(1, True), (2, True), (2, False)])
def test_long_sequences_run_unpacked_with_the_packed_results(cell, layers, bidirectional, monkeypatch):
    """Long sequences skip packing (its backward is O(S^2) on CPU): outputs, summaries and gradients must
    be those of the packed computation, padding included; the parameters are the same nn.RNN's."""
    import hf_querygen.nn.encoder as encoder_module

    encoder = RNNEncoder(5, 4, num_layers=layers, cell=cell, bidirectional=bidirectional).eval()
    lengths = [70, 3, 41, 69, 1]
    inputs, mask = _padded_batch(lengths)
    results = {}
    for path, threshold in (("packed", 10**9), ("unpacked", 64)):
        monkeypatch.setattr(encoder_module, "UNPACKED_FROM_LENGTH", threshold)
        encoder.zero_grad()
        leaf = inputs.clone().requires_grad_(True)
        out = encoder(leaf, mask)
        (out.outputs.square().sum() + out.final_hidden.sum()).backward()
        results[path] = (out.outputs, out.final_hidden, leaf.grad, encoder.rnn.weight_hh_l0.grad.clone())
    for packed, unpacked in zip(results["packed"], results["unpacked"], strict=True):
        assert packed.shape == unpacked.shape
        assert torch.allclose(packed, unpacked, atol=1e-5)
    assert torch.all(results["unpacked"][0][1, 3:] == 0)  # zero at padding
    assert not any(name.startswith("_one_direction") for name in encoder.state_dict())


def test_encoder_rejects_empty_rows_and_bad_shapes():
    encoder = RNNEncoder(5, 4)
    inputs, mask = _padded_batch([3, 2])
    mask[1] = 0
    with pytest.raises(ValueError, match=r"empty source sequences .*rows \[1\]"):
        encoder(inputs, mask)
    with pytest.raises(ValueError, match="attention_mask"):
        encoder(inputs, mask[:, :1])
    with pytest.raises(ValueError, match="unknown RNN cell"):
        RNNEncoder(5, 4, cell="transformer")


def test_recurrent_encoder_output_wraps_the_encoder_and_validates_word_ids():
    encoder = RNNEncoder(5, 4).eval()
    inputs, mask = _padded_batch([4, 2])
    input_ids = torch.tensor([[7, 3, 7, 2], [3, 3, 0, 0]])
    encoded = encoder(inputs, mask)
    out = recurrent_encoder_output(encoded, input_ids, mask)
    assert isinstance(out, RecurrentEncoderOutput)
    assert out.last_hidden_state is encoded.outputs and out.final_hidden is encoded.final_hidden
    assert (
        out.final_cell is encoded.final_cell
        and out.attention_mask is mask
        and out.source_input_ids is input_ids
    )
    assert out.first_positions.tolist() == [[0, 1, 0, 3], [0, 0, 2, 3]]
    # distinct source word ids keep two [UNK]-like repeats apart
    word_ids = torch.tensor([[7, 3, 8, 2], [3, 4, 0, 0]])
    assert recurrent_encoder_output(encoded, input_ids, mask, word_ids).first_positions.tolist() == [
        [0, 1, 2, 3],
        [0, 1, 2, 3],
    ]
    with pytest.raises(ValueError, match="source_word_ids"):
        recurrent_encoder_output(encoded, input_ids, mask, word_ids[:, :3])


# -- attention -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [k for k in ATTENTION_KINDS if k != "luong-local"])
def test_global_attention_is_a_distribution_over_valid_positions(kind):
    attention = build_attention(kind, 6, 6, 7)
    keys, mask = _padded_batch([5, 2, 4], size=6)
    mask = mask.bool()
    out = attention(torch.randn(3, 6), keys, mask)
    assert torch.allclose(out.weights.sum(-1), torch.ones(3), atol=1e-6)
    assert torch.all(out.weights[~mask] == 0)
    assert torch.all(torch.isneginf(out.scores[~mask])) and torch.all(torch.isfinite(out.scores[mask]))
    assert torch.allclose(out.context, torch.einsum("bs,bsh->bh", out.weights, keys), atol=1e-6)


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_attention_over_many_steps_equals_step_by_step(kind):
    attention = build_attention(kind, 6, 6, 7, window=1)
    keys, mask = _padded_batch([5, 3], size=6)
    queries = torch.randn(2, 4, 6)
    together = attention(queries, keys, mask.bool())
    assert together.context.shape == (2, 4, 6) and together.weights.shape == (2, 4, 5)
    for t in range(4):
        step = attention(queries[:, t], keys, mask.bool())
        assert torch.allclose(step.context, together.context[:, t], atol=1e-6)
        assert torch.allclose(step.weights, together.weights[:, t], atol=1e-6)


def test_luong_scores_follow_their_definitions():
    query, keys = torch.randn(2, 6), torch.randn(2, 4, 6)
    mask = torch.ones(2, 4, dtype=torch.bool)
    dot = LuongAttention(6, 6, "dot")(query, keys, mask)
    assert torch.allclose(dot.scores, torch.einsum("bh,bsh->bs", query, keys), atol=1e-6)
    general = LuongAttention(6, 6, "general")
    expected = torch.einsum("bh,bsh->bs", query, general.key_projection(keys))
    assert torch.allclose(general(query, keys, mask).scores, expected, atol=1e-6)
    with pytest.raises(ValueError, match="query_size == key_size"):
        LuongAttention(6, 8, "dot")
    with pytest.raises(ValueError, match="unknown attention kind"):
        build_attention("luong-multihead", 6, 6)


def test_local_p_attention_window_and_gaussian():
    window = 1
    attention = LocalPredictiveAttention(6, 6, score="general", window=window)
    keys, mask = _padded_batch([7, 4, 1], size=6)
    mask = mask.bool()
    query = torch.randn(3, 6) * 3
    with torch.no_grad():
        out = attention(query, keys, mask)
    aligned = attention.predict_position(query.unsqueeze(1), mask).squeeze(1)  # Luong Eq. (9)
    lengths = mask.sum(1)
    assert torch.all(aligned >= 0) and torch.all(aligned <= (lengths - 1).float())
    positions = torch.arange(7).float()
    in_window = ((positions.unsqueeze(0) - aligned.unsqueeze(1)).abs() <= window) & mask
    assert torch.all(out.weights[~in_window] == 0) and torch.all(out.weights[in_window] > 0)
    assert torch.all(out.weights.sum(-1) <= 1 + 1e-6)
    # Eq. (10): softmax of the scores inside the window times exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2
    for row in range(3):
        inside = in_window[row]
        align = torch.softmax(out.scores[row, inside], dim=0)
        sigma = window / 2
        gauss = torch.exp(-((positions[inside] - aligned[row]) ** 2) / (2 * sigma**2))
        assert torch.allclose(out.weights[row, inside], align * gauss, atol=1e-6)
    # a one-token source sits at p_t = 0 with full weight
    assert math.isclose(out.weights[2, 0].item(), 1.0, abs_tol=1e-6)
    with pytest.raises(ValueError, match="window D must be >= 1"):
        LocalPredictiveAttention(6, 6, window=0)


# -- copy ------------------------------------------------------------------------------------
V, UNK = 10, 1


def _copy_example():
    # row 0: words 12 and 12 repeat, 5 is an output-vocabulary word, 1 = [UNK] (two different unknown words)
    input_ids = torch.tensor([[12, 5, 12, 1, 1, 3], [15, 3, 0, 0, 0, 0]])
    word_ids = torch.tensor([[12, 5, 12, 100, 101, 3], [15, 3, 0, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]]).bool()
    return input_ids, word_ids, mask


def test_first_occurrence_and_extended_scatter():
    input_ids, word_ids, mask = _copy_example()
    first = first_occurrence_positions(word_ids, mask)
    assert first.tolist() == [[0, 1, 0, 3, 4, 5], [0, 1, 2, 3, 4, 5]]
    # comparing input ids instead would merge the two unknown words
    assert first_occurrence_positions(input_ids, mask)[0, 4] == 3
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.15, 0.05, 0.2], [0.6, 0.4, 0, 0, 0, 0]])
    extended = positions_to_extended(probs, input_ids, first, V, UNK)
    assert extended.shape == (2, V + 6)
    assert torch.allclose(extended.sum(-1), probs.sum(-1))
    assert math.isclose(float(extended[0, V + 0]), 0.4, abs_tol=1e-6)  # 12 twice -> its first slot
    assert math.isclose(float(extended[0, 5]), 0.2, abs_tol=1e-6)  # in-vocabulary word folds into its id
    assert math.isclose(float(extended[0, V + 3]), 0.15, abs_tol=1e-6)  # [UNK] words keep their own slots
    assert math.isclose(float(extended[0, V + 4]), 0.05, abs_tol=1e-6)
    assert math.isclose(float(extended[0, 3]), 0.2, abs_tol=1e-6)  # [EOS] is foldable too
    assert float(extended[0, UNK]) == 0.0
    live = live_copy_slots(input_ids, first, mask, V, UNK)
    assert live.tolist() == [
        [True, False, False, True, True, False],
        [True, False, False, False, False, False],
    ]


def test_extended_to_input_ids():
    input_ids, _, _ = _copy_example()
    ids = torch.tensor([[2, V + 0, V + 3, 5, -100], [2, V + 0, 3, 0, 0]])
    assert extended_to_input_ids(ids, input_ids, V, UNK).tolist() == [[2, 12, 1, 5, UNK], [2, 15, 3, 0, 0]]
    with pytest.raises(ValueError, match="beyond output_vocab_size"):
        extended_to_input_ids(torch.tensor([[V + 6]] * 2), input_ids, V, UNK)


def test_copynet_joint_distribution_and_selective_read():
    input_ids, word_ids, mask = _copy_example()
    first = first_occurrence_positions(word_ids, mask)
    copynet = CopyNet(state_size=4, key_size=3, output_vocab_size=V, unk_token_id=UNK)
    keys = torch.randn(2, 6, 3)
    out = copynet(torch.randn(2, 5, V), torch.randn(2, 5, 4), keys, mask, input_ids, first)
    assert out.log_probs.shape == (2, 5, V + 6)
    assert torch.allclose(
        out.log_probs.exp().sum(-1), torch.ones(2, 5), atol=1e-5
    )  # ONE softmax over both modes
    assert torch.allclose(out.copy_probs.sum(-1) + out.generate_probs.sum(-1), torch.ones(2, 5), atol=1e-5)
    assert torch.all(out.copy_probs[1, :, 2:] == 0)
    dead = ~live_copy_slots(input_ids, first, mask, V, UNK)
    assert torch.all(torch.isneginf(out.log_probs[..., V:][dead.unsqueeze(1).expand(-1, 5, -1)]))
    # selective read (Gu Eq. 9): after emitting word 12 (slot V + 0) read positions 0 and 2 by their copy mass
    previous = out.copy_probs[:, 0]
    read = copynet.selective_read(torch.tensor([V + 0, 7]), previous, keys, mask, input_ids, first)
    rho = previous[0, [0, 2]] / previous[0, [0, 2]].sum()
    assert torch.allclose(read[0], rho[0] * keys[0, 0] + rho[1] * keys[0, 2], atol=1e-6)
    assert torch.all(read[1] == 0)  # word 7 is not in the source


# -- cache -----------------------------------------------------------------------------------
def test_recurrent_state_cache_reorders_and_validates():
    cache = RecurrentStateCache(
        {"hidden": torch.arange(6.0).view(3, 1, 2), "feed": torch.arange(3.0).view(3, 1)}
    )
    assert cache.get_seq_length() == 0 and cache.batch_size == 3
    cache.advance(2)
    assert cache.get_seq_length() == 2
    cache.reorder_cache(torch.tensor([2, 2, 0]))
    assert cache["feed"].flatten().tolist() == [2.0, 2.0, 0.0]
    assert cache["hidden"][:, 0, 0].tolist() == [4.0, 4.0, 0.0]
    cache.batch_repeat_interleave(2)
    assert cache.batch_size == 6
    with pytest.raises(ValueError, match="batch dim 2"):
        cache["cell"] = torch.zeros(2, 1)
    with pytest.raises(KeyError, match="no state 'cell'"):
        cache["cell"]
    assert not cache.is_compileable and not cache.is_croppable


# -- loss ------------------------------------------------------------------------------------
def test_token_nll_normalisation_supports_gradient_accumulation():
    scores = torch.randn(4, 3, 7)
    labels = torch.randint(0, 7, (4, 3))
    labels[0, 2] = labels[3, 1:] = -100
    mean = token_nll(scores, labels)
    kept = labels != -100
    expected = -torch.log_softmax(scores, -1)[kept].gather(-1, labels[kept].unsqueeze(-1)).mean()
    assert torch.allclose(mean, expected, atol=1e-6)
    halves = token_nll(scores[:2], labels[:2], kept.sum()) + token_nll(scores[2:], labels[2:], kept.sum())
    assert torch.allclose(halves, mean, atol=1e-6)
    with pytest.raises(ValueError, match="outside the 7 output classes"):
        token_nll(scores, labels.clamp_min(0) + 7)
