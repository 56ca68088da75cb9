"""Liu'18 dual decoder: the phase mechanics of the shared output space, the Eq. (13) loss, beam search with
several returned sequences, pointer-only mode, and a toy task that needs both decoders and out-of-vocabulary
copying. Save/load, batch = single, cache = no cache (greedy, beam, sampling), teacher forcing = step by
step, Trainer accumulation and the LogitsProcessors run in the model contract
(tests/test_model_contract.py)."""

import random

import pytest
import torch

import hf_querygen  # noqa: F401  (registers the Auto classes)
from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration
from hf_querygen.tasks.nl2kw import decode_dual_decoder_ids

V = 12  # output vocabulary: [PAD] [UNK] [BOS] [EOS] + 8 words
PAD, UNK, BOS, EOS = 0, 1, 2, 3


def tiny_config(**overrides) -> DualDecoderConfig:
    settings = {
        "vocab_size": 40,
        "output_vocab_size": V,
        "embedding_size": 8,
        "hidden_size": 12,
        "dropout": 0.0,
    }
    return DualDecoderConfig(**{**settings, **overrides})


def tiny_model(seed: int = 0, **overrides) -> DualDecoderForKeywordGeneration:
    torch.manual_seed(seed)
    return DualDecoderForKeywordGeneration(tiny_config(**overrides)).eval()


# sources end with [EOS], the pointer's end sentinel; row 1 is shorter (right-padded)
SOURCES = torch.tensor([[20, 25, 31, 25, EOS], [17, 22, EOS, PAD, PAD]])
MASK = (SOURCES != PAD).long()
# pointer part (V + position), sentinel (V + last real position), generator part, [EOS]
LABELS = torch.tensor([[V + 1, V + 2, V + 4, 5, EOS], [V + 0, V + 2, 7, 8, EOS]])


def trimmed(sequence: torch.Tensor) -> list[int]:
    ids = sequence.tolist()
    return ids[: ids.index(EOS) + 1] if EOS in ids else ids


def test_forward_shapes_phases_and_masking():
    model = tiny_model()
    out = model(input_ids=SOURCES, attention_mask=MASK, labels=LABELS)
    assert out.logits.shape == (2, 5, V + SOURCES.shape[1])
    probs = out.logits.exp()
    assert torch.allclose(probs.sum(-1), torch.ones(2, 5), atol=1e-5)
    # steps before the sentinel is fed are pointer steps: no mass on the vocabulary part
    assert probs[0, :3, :V].sum() == 0 and probs[1, :2, :V].sum() == 0
    # generator steps: no mass on positions; [PAD] and [BOS] are never produced
    assert probs[0, 3:, V:].sum() == 0 and probs[0, 3:, [PAD, BOS]].sum() == 0
    # Eq. (4): the repeated word (position 3 repeats position 1) and padding are dead slots
    assert probs[0, 0, V + 3] == 0 and probs[1, 0, V + 3 :].sum() == 0
    assert torch.isfinite(out.loss)


def test_loss_is_lambda_weighted_sum_of_both_decoders():
    losses = {}
    for loss_lambda in (0.0, 0.5, 1.0):
        model = tiny_model(loss_lambda=loss_lambda)
        losses[loss_lambda] = model(input_ids=SOURCES, attention_mask=MASK, labels=LABELS).loss.item()
    # same weights (same seed): Eq. (13) is linear in lambda
    assert losses[0.5] == pytest.approx((losses[0.0] + losses[1.0]) / 2, rel=1e-5)
    assert losses[0.0] != pytest.approx(losses[1.0])


def test_beam_search_returns_several_sequences():
    model = tiny_model(seed=4)
    out = model.generate(
        input_ids=SOURCES,
        attention_mask=MASK,
        max_new_tokens=6,
        num_beams=4,
        num_return_sequences=3,
        do_sample=False,
    )
    assert out.shape[0] == 6
    assert (out[:, 0] == BOS).all()


def test_pointer_only_mode_is_a_pointer_network():
    model = tiny_model(seed=7, pointer_only=True)
    assert not hasattr(model, "generator_rnn")
    out = model.generate(input_ids=SOURCES, attention_mask=MASK, max_new_tokens=10, do_sample=False)
    for row, sequence in enumerate(out.tolist()):
        produced = sequence[1:]
        sentinel = V + int(MASK[row].sum()) - 1
        # only source positions until the sentinel, then [EOS] (probability 1) ends the sequence
        if sentinel in produced:
            end = produced.index(sentinel)
            assert produced[end + 1] == EOS
            produced = produced[:end]
        assert all(V <= token < sentinel for token in produced)


def test_config_validation():
    with pytest.raises(ValueError, match="loss_lambda"):
        tiny_config(loss_lambda=1.5)
    with pytest.raises(ValueError, match="output_vocab_size"):
        tiny_config(output_vocab_size=41)


# ---------------------------------------------------------------- a toy task needing both decoders
NAME_IDS = range(30, 40)  # input-vocabulary names outside the output vocabulary
OOV = "oov"  # names missing from the whole vocabulary: [UNK] in input_ids, distinct source_word_ids


def toy_example(rng: random.Random):
    """Source: 3-6 filler words (ids 12-29) with one name (ids 30-39, or a word outside the whole
    vocabulary) mixed in. Target: the name (pointer), then the category word 4 + first id % 8
    (generator: it is never in the source)."""
    words = [rng.randrange(12, 30) for _ in range(rng.randint(3, 6))]
    name = rng.choice(list(NAME_IDS)) if rng.random() < 0.7 else OOV + str(rng.randrange(100))
    words.insert(rng.randrange(1, len(words) + 1), name)
    source_words = [f"w{w}" if isinstance(w, int) else w for w in words]
    input_ids = [w if isinstance(w, int) else UNK for w in words] + [EOS]
    oov = {}
    word_ids = [w if isinstance(w, int) else oov.setdefault(w, 40 + len(oov)) for w in words] + [EOS]
    names = [i for i, w in enumerate(words) if not isinstance(w, int) or w in NAME_IDS]
    labels = [V + i for i in names] + [V + len(words), 4 + words[0] % 8, EOS]
    return input_ids, word_ids, labels, source_words, [source_words[i] for i in names]


def toy_batch(examples):
    width = max(len(e[0]) for e in examples)
    target_width = max(len(e[2]) for e in examples)

    def pad(rows, w, value):
        return torch.tensor([r + [value] * (w - len(r)) for r in rows])

    input_ids = pad([e[0] for e in examples], width, PAD)
    return {
        "input_ids": input_ids,
        "attention_mask": (input_ids != PAD).long(),
        "source_word_ids": pad([e[1] for e in examples], width, PAD),
        "labels": pad([e[2] for e in examples], target_width, -100),
    }


class _Vocab:
    """convert_ids_to_tokens for the toy vocabulary (w<id>)."""

    def convert_ids_to_tokens(self, token_id: int) -> str:
        return f"w{token_id}"


def test_toy_task_needs_pointer_and_generator_and_keeps_oov_names():
    rng = random.Random(0)
    torch.manual_seed(0)
    model = DualDecoderForKeywordGeneration(tiny_config(vocab_size=40, embedding_size=16, hidden_size=32))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(400):
        batch = toy_batch([toy_example(rng) for _ in range(32)])
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    test = [toy_example(random.Random(1000 + i)) for i in range(60)]
    batch = toy_batch(test)
    generated = model.generate(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        source_word_ids=batch["source_word_ids"],
        max_new_tokens=8,
        do_sample=False,
    )
    exact = extracted_ok = generated_ok = oov_seen = oov_kept = 0
    for sequence, (_, _, labels, source_words, names) in zip(generated, test, strict=True):
        query = decode_dual_decoder_ids(
            sequence, source_words, _Vocab(), V, EOS, skip_token_ids=(PAD, UNK, BOS)
        )
        expected_category = f"w{labels[-2]}"
        extracted_ok += query.extracted == names
        generated_ok += query.generated == [expected_category]
        exact += query.keywords == [*names, expected_category]
        for name in names:
            if name.startswith(OOV):
                oov_seen += 1
                oov_kept += name in query.extracted
    assert extracted_ok / len(test) >= 0.9, extracted_ok
    assert generated_ok / len(test) >= 0.8, generated_ok
    assert exact / len(test) >= 0.75, exact
    # words outside the whole vocabulary come out as themselves, not [UNK]
    assert oov_seen > 5 and oov_kept / oov_seen >= 0.9
