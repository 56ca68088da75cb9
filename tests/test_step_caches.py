"""The decoders' fast paths equal the plain computation they stand for.

* teacher forcing: the RNN decoder's output layer / CopyNet's joint softmax and scatter run once after
  the step loop (and the selective read comes from the previous step's copy scores): the loss and its
  gradients equal a plain step-by-step reference loop written here;
* the dual decoder's loss is one gather instead of two cross-entropies;
* generation keeps per-source projections in the cache, which beam reordering leaves alone, and grows
  the dual decoder's pointer-state buffers by doubling: cached beam search over many steps equals
  uncached;
* ``max_new_tokens`` does not make transformers warn about ``max_length``.
"""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import LogitsProcessor

from hf_querygen.models._generation import SignatureCachedLogitsProcessorList
from hf_querygen.models._tiny import tiny_source
from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration
from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
from hf_querygen.nn.cache import RecurrentStateCache
from hf_querygen.nn.copy import extended_to_input_ids
from hf_querygen.nn.labels import IGNORE_INDEX
from hf_querygen.nn.loss import token_nll

VOCAB, OUTPUT_VOCAB = 40, 30

RNN_VARIANTS = {
    "copynet": {"cell": "gru", "attention": "bahdanau", "copy": "copynet", "copy_selective_read": True},
    "bahdanau-lstm": {"cell": "lstm", "attention": "bahdanau"},
    "luong-input-feeding": {"cell": "lstm", "attention": "luong-general", "attention_query": "current"},
    "local-two-layers": {
        "cell": "gru",
        "attention": "luong-local",
        "attention_query": "current",
        "num_decoder_layers": 2,
    },
}


def rnn_model(variant: str) -> RNNSeq2SeqForConditionalGeneration:
    torch.manual_seed(0)
    config = RNNSeq2SeqConfig(
        vocab_size=VOCAB,
        output_vocab_size=OUTPUT_VOCAB,
        embedding_size=8,
        hidden_size=10,
        decoder_hidden_size=12,
        attention_size=6,
        dropout=0.0,
        **RNN_VARIANTS[variant],
    )
    return RNNSeq2SeqForConditionalGeneration(config)


def source(model) -> tuple[torch.Tensor, torch.Tensor]:
    config = model.config
    return tiny_source(config.vocab_size, 3, config.pad_token_id, config.eos_token_id)


def rnn_labels(model, input_ids: torch.Tensor) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    labels = torch.randint(4, OUTPUT_VOCAB, (input_ids.shape[0], 7), generator=generator)
    if model.config.copy == "copynet":
        # copy targets: an out-of-vocabulary source word (its first position) or a folded in-vocabulary one
        for row in range(input_ids.shape[0]):
            word = int(input_ids[row, 0])
            labels[row, 2] = word if word < OUTPUT_VOCAB else OUTPUT_VOCAB
            labels[row, 4] = labels[row, 2]
    labels[1, 5:] = IGNORE_INDEX
    return labels


def stepwise_rnn_scores(model, input_ids, attention_mask, labels) -> torch.Tensor:
    """The plain decoder: every piece of every step inside the loop (attention, selective read
    from the joint copy probabilities, RNN module call, output layer, CopyNet's joint softmax + scatter)."""
    decoder, config = model.decoder, model.config
    encoded = model.encoder(input_ids, attention_mask)
    keys, mask = encoded.last_hidden_state, encoded.attention_mask.bool()
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    embedded = decoder.embed_tokens(
        extended_to_input_ids(
            decoder_input_ids, encoded.source_input_ids, config.output_vocab_size, config.unk_token_id
        )
    )
    state = decoder.initial_state(encoded)
    projected_keys = decoder.attention.project_keys(keys)
    steps = []
    for t in range(embedded.shape[1]):
        pieces, context = [embedded[:, t]], None
        if decoder.attend_before_rnn:
            context = decoder.attention(state["hidden"][:, -1], keys, mask, projected_keys).context
            pieces.append(context)
        if decoder.input_feeding:
            pieces.append(state["feed"])
        if decoder.selective_read:
            pieces.append(
                decoder.copynet.selective_read(
                    decoder_input_ids[:, t],
                    state["copy_probs"],
                    keys,
                    mask,
                    encoded.source_input_ids,
                    encoded.first_positions,
                )
            )
        output, rnn_state = decoder._run_rnn(torch.cat(pieces, dim=-1).unsqueeze(1), state)
        output = output.squeeze(1)
        if not decoder.attend_before_rnn:
            context = decoder.attention(output, keys, mask, projected_keys).context
        if decoder.attend_before_rnn:
            features, attentional = torch.cat([output, context], dim=-1), None
        else:
            attentional = torch.tanh(decoder.attentional_projection(torch.cat([context, output], dim=-1)))
            features = attentional
        scores = decoder.output_projection(features)
        state = dict(state, **rnn_state)
        if decoder.copynet is not None:
            copied = decoder.copynet(
                scores, output, keys, mask, encoded.source_input_ids, encoded.first_positions
            )
            scores = copied.log_probs
            state["copy_probs"] = copied.copy_probs
        if decoder.input_feeding:
            state["feed"] = attentional
        steps.append(scores)
    return torch.stack(steps, dim=1)


@pytest.mark.parametrize("variant", sorted(RNN_VARIANTS))
def test_vectorised_teacher_forcing_equals_the_step_by_step_loop(variant):
    model = rnn_model(variant)
    input_ids, attention_mask = source(model)
    labels = rnn_labels(model, input_ids)
    output = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    output.loss.backward()
    new_grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    reference_scores = stepwise_rnn_scores(model, input_ids, attention_mask, labels)
    reference_loss = model.compute_loss_from_scores(reference_scores, labels)
    reference_loss.backward()
    assert abs(output.loss.item() - reference_loss.item()) <= 1e-6
    logits = output.logits
    if model.config.copy == "copynet":  # training reads log p(label) only: the rows come in eval mode
        assert logits is None
        with torch.no_grad():
            logits = model.eval()(input_ids=input_ids, attention_mask=attention_mask, labels=labels).logits
    finite = torch.isfinite(reference_scores)
    assert torch.equal(finite, torch.isfinite(logits))
    assert torch.allclose(logits[finite], reference_scores[finite], atol=1e-5)
    for name, p in model.named_parameters():
        if p.grad is not None:
            assert torch.allclose(new_grads[name], p.grad, atol=1e-6), name


@pytest.mark.parametrize("bad", ["dead_slot", "out_of_range"])
def test_copynet_training_and_eval_reject_the_same_labels_with_the_same_error(bad):
    """Training reads log p(label) without the rows whose -inf marks a dead copy slot: it checks the labels
    from the source instead, and must refuse exactly what the full rows refuse."""
    model = rnn_model("copynet")
    input_ids, attention_mask = source(model)
    labels = rnn_labels(model, input_ids)
    source_length = input_ids.shape[1]
    lengths = attention_mask.sum(1)
    # a padded position of the shortest source is dead; one past V + S is outside every row
    row = int(lengths.argmin())
    labels[row, 3] = OUTPUT_VOCAB + source_length - 1 if bad == "dead_slot" else OUTPUT_VOCAB + source_length
    assert int(lengths[row]) < source_length
    messages = []
    for training in (True, False):
        model.train(training)
        with pytest.raises(ValueError) as error:
            model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert ("cannot hold probability" if bad == "dead_slot" else "output classes") in messages[0]


def test_copynet_selective_read_from_scores_equals_the_one_from_joint_probabilities():
    model = rnn_model("copynet")
    copynet = model.decoder.copynet
    input_ids, attention_mask = source(model)
    encoded = model.encoder(input_ids, attention_mask)
    keys, mask = encoded.last_hidden_state, attention_mask.bool()
    torch.manual_seed(2)
    state = torch.randn(input_ids.shape[0], model.config.decoder_hidden_size)
    generate_scores = torch.randn(input_ids.shape[0], OUTPUT_VOCAB)
    joint = copynet(generate_scores, state, keys, mask, input_ids, encoded.first_positions)
    targets, _ = copynet.copy_targets(input_ids, encoded.first_positions, mask)
    copy_scores = copynet.copy_scores(state.unsqueeze(1), keys).squeeze(1)
    for previous in (targets[:, 0], targets[:, 1], torch.full_like(targets[:, 0], 5)):
        expected = copynet.selective_read(
            previous, joint.copy_probs, keys, mask, input_ids, encoded.first_positions
        )
        got = copynet.selective_read_from_scores(previous, copy_scores, keys, mask, targets)
        assert torch.allclose(got, expected, atol=1e-6)


def dual_model(pointer_only: bool = False) -> DualDecoderForKeywordGeneration:
    torch.manual_seed(0)
    return DualDecoderForKeywordGeneration(
        DualDecoderConfig(
            vocab_size=VOCAB,
            output_vocab_size=OUTPUT_VOCAB,
            embedding_size=8,
            hidden_size=10,
            attention_size=6,
            dropout=0.0,
            pointer_only=pointer_only,
        )
    )


def dual_labels(model, attention_mask) -> torch.Tensor:
    lengths = attention_mask.sum(dim=1)
    sentinel = OUTPUT_VOCAB + lengths - 1
    rows = []
    for row in range(attention_mask.shape[0]):
        words = [OUTPUT_VOCAB, int(sentinel[row])]
        if not model.config.pointer_only:
            words += [7, 9, model.config.eos_token_id]
        rows.append(words if row != 1 else words[:-1])
    width = max(map(len, rows))
    return torch.tensor([r + [IGNORE_INDEX] * (width - len(r)) for r in rows])


@pytest.mark.parametrize("pointer_only", [False, True])
def test_dual_decoder_loss_gathered_once_equals_two_cross_entropies(pointer_only):
    model = dual_model(pointer_only)
    input_ids, attention_mask = source(model)
    labels = dual_labels(model, attention_mask)
    output = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    output.loss.backward()
    new_grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    encoded = model.encoder(input_ids, attention_mask)
    log_probs, phase = model._decode_parallel(decoder_input_ids, encoded, attention_mask.bool())
    count = (labels != IGNORE_INDEX).sum()
    lambda_ = model.config.loss_lambda
    reference = lambda_ * token_nll(log_probs, labels.masked_fill(phase, IGNORE_INDEX), count)
    if not pointer_only:
        reference = reference + (1 - lambda_) * token_nll(
            log_probs, labels.masked_fill(~phase, IGNORE_INDEX), count
        )
    reference.backward()
    assert abs(output.loss.item() - reference.item()) <= 1e-6
    for name, p in model.named_parameters():
        if p.grad is not None:
            assert torch.allclose(new_grads[name], p.grad, atol=1e-6), name


@pytest.mark.parametrize("pointer_only", [False, True])
def test_dual_decoder_long_cached_beam_search_equals_uncached(pointer_only):
    # 20 steps: the pointer-state buffers grow past their first capacity (8) twice, under beam reordering
    model = dual_model(pointer_only).eval()
    input_ids, attention_mask = source(model)
    settings = dict(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=20, min_new_tokens=20)
    for beams in (1, 3):
        cached = model.generate(**settings, num_beams=beams, use_cache=True)
        uncached = model.generate(**settings, num_beams=beams, use_cache=False)
        assert torch.equal(cached, uncached), beams


@pytest.mark.parametrize("variant", sorted(RNN_VARIANTS))
def test_rnn_cached_beam_search_equals_uncached(variant):
    model = rnn_model(variant).eval()
    input_ids, attention_mask = source(model)
    settings = dict(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=9, min_new_tokens=9)
    for beams in (1, 3):
        cached = model.generate(**settings, num_beams=beams, use_cache=True)
        uncached = model.generate(**settings, num_beams=beams, use_cache=False)
        assert torch.equal(cached, uncached), beams


def test_static_states_survive_beam_reordering_but_not_row_selection():
    cache = RecurrentStateCache({"hidden": torch.arange(3.0)[:, None], "keys": torch.arange(3.0)[:, None]})
    cache.mark_static("keys")
    cache.reorder_cache(torch.tensor([2, 2, 0]))
    assert cache["hidden"].flatten().tolist() == [2.0, 2.0, 0.0]
    assert cache["keys"].flatten().tolist() == [0.0, 1.0, 2.0]  # per source: beams share it
    cache.batch_select_indices(torch.tensor([1]))
    assert cache["hidden"].flatten().tolist() == [2.0] and cache["keys"].flatten().tolist() == [1.0]
    with pytest.raises(KeyError, match="no state 'missing'"):
        cache.mark_static("missing")


@pytest.mark.parametrize("make", [lambda: rnn_model("bahdanau-lstm"), dual_model])
def test_max_new_tokens_neither_warns_nor_changes_the_length(make, monkeypatch):
    import transformers.generation.utils as generation_utils

    model = make().eval()
    model.generation_config.max_length = 32  # as a saved model carries it
    messages = []
    monkeypatch.setattr(generation_utils.logger, "warning", lambda message, *a, **k: messages.append(message))
    input_ids, attention_mask = source(model)
    out = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=4, min_new_tokens=4
    )
    assert out.shape[1] == 5  # decoder start + 4 new tokens
    assert not [m for m in messages if "seem to have been set" in str(m)]


class _NeedsExtra(LogitsProcessor):
    def __call__(self, input_ids, scores, extra):
        return scores + extra


def test_signature_cached_processor_list_passes_and_checks_extra_arguments():
    processors = SignatureCachedLogitsProcessorList([_NeedsExtra()])
    scores = torch.zeros(1, 3)
    for _ in range(2):  # the second call uses the cached signature
        assert torch.equal(processors(None, scores, extra=1.0), torch.ones(1, 3))
    with pytest.raises(ValueError, match="required parameters"):
        processors(None, scores)


def _models_for_greedy():
    for variant in sorted(RNN_VARIANTS):
        yield f"rnn-{variant}", rnn_model(variant)
    yield "dual", dual_model()
    yield "pointer-only", dual_model(pointer_only=True)


@pytest.mark.parametrize("eos_bias", [0.0, 3.0])
def test_plain_greedy_loop_equals_transformers_generate(eos_bias):
    # eos_bias makes rows end at different steps: finished rows are padded, the loop stops when all end
    settings = [
        {"max_new_tokens": 9},
        {"max_new_tokens": 9, "min_new_tokens": 4},
        {"max_length": 7, "min_length": 3},
        {},  # the model's saved max_length
    ]
    for name, model in _models_for_greedy():
        model.eval()
        model.generation_config.max_length = 8
        with torch.no_grad():
            projection = model.decoder.output_projection if hasattr(model, "decoder") else None
            projection = projection or getattr(model, "output_projection", None)
            if projection is not None:
                projection.bias[model.config.eos_token_id] += eos_bias
        input_ids, attention_mask = source(model)
        for extra in settings:
            kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, **extra)
            assert model._plain_greedy_settings(None, dict(kwargs)) is not None or "max_new_tokens" in extra
            fast = model.generate(**kwargs)
            model.plain_greedy_loop = False
            reference = model.generate(**kwargs)
            model.plain_greedy_loop = True
            assert torch.equal(fast, reference), (name, extra)


def test_plain_greedy_loop_is_not_used_for_other_searches():
    model = dual_model().eval()
    input_ids, attention_mask = source(model)
    base = dict(input_ids=input_ids, attention_mask=attention_mask, max_length=6)
    assert model._plain_greedy_settings(None, dict(base)) is not None
    for extra in (
        {"num_beams": 2},
        {"do_sample": True},
        {"repetition_penalty": 1.5},
        {"output_scores": True},
    ):
        assert model._plain_greedy_settings(None, {**base, **extra}) is None, extra
    model.generation_config.no_repeat_ngram_size = 2
    assert model._plain_greedy_settings(None, dict(base)) is None
