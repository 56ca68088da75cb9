"""The BERT2BERT pointer-generator (models.bert2bert_pointer): See et al.'s Eq. (9) mixture, the source ids
through precomputed encoder states, and the warm start trained on q2id, saved, reloaded and served."""

from __future__ import annotations

import pytest
import torch
from test_q2id_pieces import logged_losses, q2id_rows, tiny_q2id_backbone, train_q2id_briefly

from hf_querygen.errors import InvalidInputError
from hf_querygen.models import MODELS
from hf_querygen.models.bert2bert_pointer import Bert2BertPointerModel


def _tiny(switch_bias: float | None = None, seed: int = 0) -> tuple[Bert2BertPointerModel, dict]:
    spec = MODELS.get("bert2bert_pointer")
    config = spec.tiny_config()
    torch.manual_seed(seed)
    model = Bert2BertPointerModel(config).eval()
    if switch_bias is not None:  # p_gen = sigmoid(bias): ~0 copies only, ~1 generates only
        with torch.no_grad():
            model.copy_switch.weight.zero_()
            model.copy_switch.bias.fill_(switch_bias)
    return model, spec.tiny_inputs(config, seed)


def test_the_output_is_the_eq_9_mixture_of_generating_and_copying_source_pieces():
    from transformers import EncoderDecoderModel

    from hf_querygen.models._warm_start import POINTER_MODEL_TYPE

    assert MODELS.get(POINTER_MODEL_TYPE).config_class.model_type == POINTER_MODEL_TYPE

    model, inputs = _tiny()
    with torch.no_grad():
        log_probs = model(**inputs).logits
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(log_probs.shape[:-1]), atol=1e-5)

    copying, _ = _tiny(switch_bias=-60.0)
    with torch.no_grad():
        probs = copying(**inputs).logits.exp()
    copyable = copying.copyable_positions(inputs["input_ids"], inputs["attention_mask"])
    for row in range(probs.shape[0]):
        ids = sorted(set(inputs["input_ids"][row][copyable[row]].tolist()))
        # all the mass on the row's copyable source pieces; never [PAD], [CLS] or [SEP]
        assert torch.allclose(probs[row][:, ids].sum(-1), torch.ones(probs.shape[1]), atol=1e-5)
        config = copying.config
        for special in (config.pad_token_id, config.decoder_start_token_id, config.eos_token_id):
            assert bool((probs[row][:, special] < 1e-6).all()), special

    generating, _ = _tiny(switch_bias=60.0)
    source = {key: inputs[key] for key in ("input_ids", "attention_mask")}
    decoder_input_ids = generating.prepare_decoder_input_ids_from_labels(inputs["labels"])
    with torch.no_grad():
        mixture = generating(**source, decoder_input_ids=decoder_input_ids).logits
        plain = EncoderDecoderModel.forward(generating, **source, decoder_input_ids=decoder_input_ids)
        plain = plain.logits.log_softmax(-1)
    assert torch.allclose(mixture, plain, atol=1e-4)


def _eq_9_over_the_whole_vocabulary(
    model, vocab_logits, decoder_states, encoder_states, source_ids, copyable
):
    """See et al.'s Eq. (1)-(3), (8), (9) as printed: the copy distribution scattered over all V pieces."""
    scores = torch.einsum("bth,bsh->bts", model.copy_query(decoder_states), encoder_states)
    scores = (scores / encoder_states.shape[-1] ** 0.5).masked_fill(~copyable[:, None, :], float("-inf"))
    has_copy = copyable.any(-1)[:, None, None]
    attention = torch.softmax(scores.masked_fill(~has_copy, 0.0), -1) * has_copy
    context = torch.einsum("bts,bsh->bth", attention, encoder_states)
    p_gen = torch.sigmoid(model.copy_switch(torch.cat([decoder_states, context], -1)))
    p_gen = torch.where(has_copy, p_gen, torch.ones_like(p_gen))
    index = source_ids[:, None, :].expand(-1, attention.shape[1], -1)
    copied = torch.zeros_like(vocab_logits).scatter_add(-1, index, attention)
    return (p_gen * vocab_logits.softmax(-1) + (1 - p_gen) * copied).log()


def test_the_log_space_mixture_is_eq_9_in_value_and_gradient():
    """pointer_log_probs writes the mixture over the source's pieces only: a piece held twice, [PAD] and
    [SEP] in the source, and a row with nothing to copy give Eq. (9)'s log-probabilities and gradients."""
    model, _ = _tiny(seed=3)
    config = model.config
    vocab, hidden = config.decoder.vocab_size, config.encoder.hidden_size
    cls, sep, pad = config.decoder_start_token_id, config.eos_token_id, config.pad_token_id
    source_ids = torch.tensor(
        [
            [cls, 11, 12, 11, 13, 11, sep, pad, pad],
            [cls, 20, 21, 22, 23, 24, 25, 26, sep],
            [cls, sep] + [pad] * 7,
        ]
    )
    copyable = model.copyable_positions(source_ids, (source_ids != pad).long())
    generator = torch.Generator().manual_seed(0)
    tensors = [
        torch.randn(3, 5, vocab, generator=generator) * 3,
        torch.randn(3, 5, hidden, generator=generator),
        torch.randn(3, source_ids.shape[1], hidden, generator=generator),
    ]
    # labels: the twice-held piece, a source piece, a piece absent from the source, and [SEP]
    labels = torch.tensor([[11, 12, 30, sep, 11], [20, 26, 31, 24, sep], [11, 32, sep, 33, 34]])

    def value_and_gradients(compute):
        model.zero_grad()
        inputs = [tensor.clone().requires_grad_() for tensor in tensors]
        log_probs = compute(*inputs)
        log_probs.gather(-1, labels[..., None]).sum().backward()
        parameters = [model.copy_query.weight, model.copy_switch.weight, model.copy_switch.bias]
        return log_probs.detach(), [t.grad for t in inputs] + [p.grad.clone() for p in parameters]

    fast, fast_gradients = value_and_gradients(
        lambda *inputs: model.pointer_log_probs(*inputs, source_ids, copyable)[0]
    )
    dense, dense_gradients = value_and_gradients(
        lambda *inputs: _eq_9_over_the_whole_vocabulary(model, *inputs, source_ids, copyable)
    )
    assert torch.allclose(fast, dense, atol=1e-5)
    for fast_gradient, dense_gradient in zip(fast_gradients, dense_gradients, strict=True):
        assert torch.allclose(fast_gradient, dense_gradient, atol=1e-5)
    assert torch.allclose(fast[2], tensors[0][2].log_softmax(-1), atol=1e-6)  # nothing to copy: generates


def test_a_source_with_nothing_to_copy_generates():
    model, inputs = _tiny(switch_bias=-60.0)
    config = model.config
    source = torch.tensor([[config.decoder_start_token_id, config.eos_token_id]])  # [CLS] [SEP] only
    decoder_input_ids = torch.tensor([[config.decoder_start_token_id, 7, 9]])
    with torch.no_grad():
        log_probs = model(input_ids=source, decoder_input_ids=decoder_input_ids).logits
        vocabulary = model.decoder(
            input_ids=decoder_input_ids, encoder_hidden_states=model.encoder(input_ids=source)[0]
        ).logits.log_softmax(-1)
    assert torch.allclose(log_probs, vocabulary, atol=1e-5)


def test_precomputed_encoder_states_copy_from_the_ids_beside_them():
    """The frozen-encoder training passes ``encoder_outputs=(states,)`` with the batch's ``input_ids``."""
    model, inputs = _tiny()
    with torch.no_grad():
        expected = model(**inputs).logits
        states = model.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])[0]
        given = model(**inputs, encoder_outputs=(states,)).logits
        without_ids = {key: value for key, value in inputs.items() if key != "input_ids"}
        from_source_ids = model(
            **without_ids, encoder_outputs=(states,), source_ids=inputs["input_ids"]
        ).logits
        with pytest.raises(InvalidInputError, match="source ids"):
            model(**without_ids, encoder_outputs=(states,))
    assert torch.equal(given, expected) and torch.equal(from_source_ids, expected)
    with pytest.raises(InvalidInputError, match="resize"):
        model.resize_token_embeddings(60)


def test_the_pointer_warm_starts_trains_on_q2id_and_is_served_after_reloading(tmp_path):
    import datasets
    from transformers import AutoModel, AutoModelForSeq2SeqLM, pipeline

    from hf_querygen.tasks.base import get_task
    from hf_querygen.training import save_model_folder

    backbone = tiny_q2id_backbone(tmp_path / "backbone")
    task = get_task("q2id")
    splits = datasets.DatasetDict(
        train=datasets.Dataset.from_list(q2id_rows(16)), validation=datasets.Dataset.from_list(q2id_rows(4))
    )
    data = task.prepare(splits, backbone=str(backbone), contrast_weight=0.0)
    trainer = train_q2id_briefly(
        data, "bert2bert-pointer", backbone, tmp_path / "checkpoints", frozen_encoder=True
    )
    model = trainer.model
    assert isinstance(model, Bert2BertPointerModel)
    original = AutoModel.from_pretrained(str(backbone))
    for name, tensor in original.state_dict().items():  # the frozen encoder is the backbone's
        assert torch.equal(model.encoder.state_dict()[name], tensor), name
    losses = logged_losses(trainer)
    assert len(losses) == 4 and all(loss == loss and loss > 0 for loss in losses)

    sources = data.sources("validation")
    outputs = task.predict(model, data.tokenizer, sources, no_repeat_ngram_size=2)
    assert len(outputs) == 4 and all(isinstance(text, str) for text in outputs)
    folder = save_model_folder(model, data.tokenizer, tmp_path / "q2id", {"task": "q2id"})
    loaded = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    assert type(loaded) is Bert2BertPointerModel
    assert task.predict(loaded, data.tokenizer, sources, no_repeat_ngram_size=2) == outputs
    rewarded = task.predict(loaded, data.tokenizer, sources, encoder_repetition_penalty=1.3)
    assert len(rewarded) == 4  # the source reward is an option of every warm start, the pointer's too
    describe = pipeline("intent-description", model=str(folder))
    (served,) = describe(sources[0], no_repeat_ngram_size=2)
    assert served["description"] == outputs[0]


def test_the_pointer_serves_keyword_to_question_with_the_keyword_decoding(tmp_path):
    """The same building block for the other word-piece tasks: trained through the recipe, its keyword
    processors act on its log-probabilities, and the pipeline gives what predict gives."""
    from test_warm_start import tiny_backbone, train_k2q_briefly
    from transformers import pipeline

    from hf_querygen.model_folder import load_trained
    from hf_querygen.tasks.base import get_task
    from hf_querygen.tasks.k2q import keeps_keywords

    metadata = train_k2q_briefly(
        "bert2bert-pointer", tiny_backbone(tmp_path / "backbone"), tmp_path / "model"
    )
    assert metadata["model_type"] == "bert2bert_pointer"
    model, tokenizer, _ = load_trained(tmp_path / "model")
    assert isinstance(model, Bert2BertPointerModel)
    queries = ["capital france", "best pizza york", "ibuprofen effects"]
    questions = get_task("k2q").predict(model, tokenizer, queries)
    assert all(keeps_keywords(q, k) for q, k in zip(questions, queries, strict=True)), questions
    generator = pipeline("question-generation", model=str(tmp_path / "model"))
    assert [out[0]["generated_text"] for out in generator(queries)] == questions


@pytest.mark.parametrize("beams", [1, 3])
def test_reused_encoder_outputs_decode_as_the_encoder_does_and_encode_once(beams):
    """hf_querygen.inference.encoder_outputs_reused: a decoding grid over the same sources encodes them once;
    the kept states (with the pointer's source ids) decode as a fresh encoding does, beam search included
    (it expands the outputs it is given: the kept ones must not grow)."""
    from torch import nn

    from hf_querygen.inference import encoder_outputs_reused, run_generate, sequences_of

    model, inputs = _tiny()
    batch = {"input_ids": inputs["input_ids"], "attention_mask": inputs["attention_mask"]}
    settings = ({"num_beams": beams}, {"num_beams": beams, "no_repeat_ngram_size": 2}, {"num_beams": beams})
    expected = [sequences_of(run_generate(model, batch, max_new_tokens=5, **s)) for s in settings]
    calls = []
    hook = model.encoder.register_forward_hook(lambda *args: calls.append(1))
    with encoder_outputs_reused(model):
        got = [sequences_of(run_generate(model, batch, max_new_tokens=5, **s)) for s in settings]
        other = {k: v[:1] for k, v in batch.items()}
        run_generate(model, other, max_new_tokens=5, num_beams=beams)
    assert len(calls) == 2  # the batch once, the other batch once
    for ours, theirs in zip(got, expected, strict=True):
        assert torch.equal(ours, theirs)
    run_generate(model, batch, max_new_tokens=5)
    assert len(calls) == 3  # outside the block: encoded again
    hook.remove()
    plain = nn.Linear(2, 2)  # not an encoder-decoder: served as it is
    with encoder_outputs_reused(plain):
        pass
