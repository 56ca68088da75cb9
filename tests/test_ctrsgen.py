"""CtrsGen (Zhang et al. CIKM'20): HF integration (Auto classes, save/load, generate with the recurrent-state
cache), batch = single, the Table 3 ablation configs, queries without irrelevant documents, the contrast
score against a loop reference, and the hierarchical helpers."""

import pytest
import torch
from _q2id_toy import OUTPUT_VOCAB, VOCAB, model_inputs, toy_features
from transformers import AutoConfig, AutoModelForSeq2SeqLM

import hf_querygen  # noqa: F401  (registers the model with the Auto classes)
from hf_querygen.errors import InvalidInputError
from hf_querygen.models.ctrsgen import CtrsGenConfig, CtrsGenForIntentDescription
from hf_querygen.nn.hierarchical import compact_rows
from hf_querygen.presets import PRESETS, ZHANG2020_ABLATIONS, config_from_preset
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.q2id import Q2IDCollator

VARIANTS = {
    "ctrsgen": {},
    "word-context-renormalized-irrelevant-softmax": dict(
        document_context="word", contrast_combination="renormalized", contrast_softmax="irrelevant"
    ),
    "separate-encoders-no-softmax-untied": dict(
        share_document_encoder=False, contrast_softmax="none", tie_word_embeddings=False
    ),
    **{
        name: {k: v for k, v in PRESETS[name].items() if k in switches}
        for name, switches in ZHANG2020_ABLATIONS.items()
    },
}


def tiny_model(seed: int = 0, **overrides) -> CtrsGenForIntentDescription:
    torch.manual_seed(seed)
    kwargs = dict(
        vocab_size=VOCAB,
        output_vocab_size=OUTPUT_VOCAB,
        embedding_size=8,
        hidden_size=8,
        decoder_hidden_size=12,
    )
    kwargs.update(overrides)
    model = CtrsGenForIntentDescription(CtrsGenConfig(**kwargs)).eval()
    with torch.no_grad():  # sharpen the random model so that decoding makes real choices
        for parameter in model.parameters():
            parameter.mul_(8.0)
    return model


def test_collator_shapes_and_masks():
    batch = Q2IDCollator()(toy_features())
    assert batch["input_ids"].shape == (3, 6) and batch["labels"].shape == (3, 7)
    assert batch["relevant_input_ids"].shape == (3, 3, 3, 7)
    assert batch["irrelevant_input_ids"].shape == (3, 2, 3, 6)
    assert batch["relevant_attention_mask"].sum().item() == 5 + 2 + 4 + 3 + 2 + 7 + 1 + 3 + 2 + 2
    assert batch["irrelevant_attention_mask"][1].sum().item() == 0  # example 2 has none
    assert (batch["labels"][1, 3:] == -100).all() and (batch["input_ids"][1, 2:] == 0).all()
    empty = Q2IDCollator()(toy_features(with_irrelevant=False))
    assert (
        empty["irrelevant_input_ids"].shape == (3, 1, 1, 1) and empty["irrelevant_attention_mask"].sum() == 0
    )


def test_compact_rows_moves_valid_entries_to_the_front_in_order():
    values = torch.arange(8).view(2, 4, 1).float()
    mask = torch.tensor([[False, True, False, True], [False, False, False, False]])
    compact, new_mask = compact_rows(values, mask)
    assert compact.squeeze(-1).tolist() == [[1.0, 3.0], [0.0, 0.0]]
    assert new_mask.tolist() == [[True, True], [False, False]]
    compact, new_mask = compact_rows(values[:, :0], mask[:, :0])  # an empty axis stays well-formed
    assert compact.shape == (2, 1, 1) and not new_mask.any()


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_variant_trains_and_generates(name):
    model = tiny_model(**VARIANTS[name]).train()
    batch = Q2IDCollator()(toy_features())
    loss = model(**batch).loss
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert torch.isfinite(loss) and any(g is not None and g.abs().sum() > 0 for g in grads)
    model.eval()
    out = model.generate(**model_inputs(batch), max_length=6, num_beams=2)
    assert out.shape[0] == 3 and out.max() < OUTPUT_VOCAB


@pytest.mark.parametrize(
    "name", ["ctrsgen", "word-context-renormalized-irrelevant-softmax", "zhang2020-ctrsgen-i-con"]
)
def test_cache_equals_no_cache_greedy_and_beam(name):
    model = tiny_model(**VARIANTS[name])
    inputs = model_inputs(Q2IDCollator()(toy_features()))
    for beams in (1, 3):
        cached = model.generate(**inputs, max_length=8, num_beams=beams, use_cache=True)
        uncached = model.generate(**inputs, max_length=8, num_beams=beams, use_cache=False)
        assert torch.equal(cached, uncached)


@pytest.mark.parametrize(
    "name", ["ctrsgen", "word-context-renormalized-irrelevant-softmax", "zhang2020-ctrsgen-ircon"]
)
def test_batch_equals_single(name):
    model = tiny_model(**VARIANTS[name])
    features = toy_features()
    batch = Q2IDCollator()(features)
    logits = model(**batch).logits
    generated = model.generate(**model_inputs(batch), max_length=7, num_beams=2)
    for row, feature in enumerate(features):
        single = Q2IDCollator()([feature])
        length = len(feature["labels"])
        assert torch.allclose(model(**single).logits[0], logits[row, :length], atol=1e-5)
        alone = model.generate(**model_inputs(single), max_length=7, num_beams=2)[0]
        assert alone.tolist() == generated[row, : alone.shape[0]].tolist()


def test_save_load_is_bit_identical(tmp_path):
    model = tiny_model(document_context="word")
    batch = Q2IDCollator()(toy_features())
    model.save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).model_type == "ctrsgen"
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is CtrsGenForIntentDescription
    assert torch.equal(model(**batch).logits, loaded(**batch).logits)
    inputs = model_inputs(batch)
    assert torch.equal(model.generate(**inputs, num_beams=2), loaded.generate(**inputs, num_beams=2))


def test_no_irrelevant_documents_anywhere():
    """A batch where no example has irrelevant documents: absent, all-masked and zero-size inputs agree,
    and for the full model they equal m = 0 (the -I ablation with the same weights)."""
    model = tiny_model()
    batch = Q2IDCollator()(toy_features(with_irrelevant=False))
    masked = model(**batch).logits
    absent = model(**{k: v for k, v in batch.items() if not k.startswith("irrelevant")}).logits
    zero = dict(batch, irrelevant_input_ids=torch.zeros(3, 0, 0, 0, dtype=torch.long))
    zero["irrelevant_attention_mask"] = zero["irrelevant_input_ids"].clone()
    assert torch.equal(masked, absent) and torch.equal(masked, model(**zero).logits)
    encoded = model.encoder(**model_inputs(batch))
    assert torch.equal(encoded.contrast_penalty, torch.zeros_like(encoded.contrast_penalty))
    without = tiny_model(use_irrelevant=False)
    without.load_state_dict(model.state_dict(), strict=False)
    assert torch.allclose(without(**batch).logits, masked)
    assert model.generate(**model_inputs(batch), max_length=5, num_beams=2).shape[0] == 3


def test_irrelevant_documents_change_the_output_only_through_the_contrast():
    model = tiny_model()
    with_irr = Q2IDCollator()(toy_features())
    without = Q2IDCollator()(toy_features(with_irrelevant=False))
    assert not torch.allclose(model(**with_irr).logits[0], model(**without).logits[0])
    ablated = tiny_model(use_irrelevant=False)
    assert torch.equal(ablated(**with_irr).logits, ablated(**without).logits)


def test_contrast_penalty_matches_a_loop_reference():
    """Eq. (11) + the max of Eq. (8), recomputed with explicit loops for every softmax axis."""
    torch.manual_seed(1)
    relevant, irrelevant = torch.randn(2, 3, 16), torch.randn(2, 4, 16)
    relevant_mask = torch.tensor([[1, 1, 1], [1, 1, 0]]).bool()
    irrelevant_mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]]).bool()
    for axis in ("relevant", "irrelevant", "none"):
        encoder = tiny_model(contrast_softmax=axis).encoder
        got = encoder.contrast_penalty(relevant, relevant_mask, irrelevant, irrelevant_mask)
        w6 = encoder.irrelevant_similarity.weight.detach()
        b = 0
        sims = torch.tensor(
            [
                [float(torch.tanh(relevant[b, u] @ w6.T @ irrelevant[b, v])) for v in range(2)]
                for u in range(3)
            ]
        )
        if axis == "irrelevant":
            sims = sims.softmax(dim=1)
        elif axis == "relevant":
            sims = sims.softmax(dim=0)
        assert torch.allclose(got[0], sims.max(dim=1).values, atol=1e-6)
        assert torch.equal(got[1], torch.zeros(3))  # no irrelevant sentence: m = 0


def test_contrast_attention_weights_follow_eq_12():
    model = tiny_model(contrast_combination="renormalized")
    out = model(**Q2IDCollator()(toy_features()), output_attentions=True)
    combined = out.document_attention  # (B, Z, U)
    assert torch.allclose(combined.sum(-1), torch.ones_like(combined.sum(-1)), atol=1e-5)
    product = tiny_model()(**Q2IDCollator()(toy_features()), output_attentions=True)
    assert torch.allclose(product.document_attention, product.relevant_attention * product.contrast_attention)
    assert (product.document_attention.sum(-1) <= 1 + 1e-6).all()


def test_bad_inputs_name_the_problem():
    model = tiny_model()
    batch = Q2IDCollator()(toy_features())
    with pytest.raises(InvalidInputError, match="no relevant sentence"):
        model(**dict(batch, relevant_attention_mask=torch.zeros_like(batch["relevant_attention_mask"])))
    with pytest.raises(InvalidInputError, match="documents, sentences, words"):
        model(**dict(batch, relevant_input_ids=batch["relevant_input_ids"][:, 0]))
    with pytest.raises(ValueError, match="decoder_attention"):
        CtrsGenConfig(decoder_attention="sum")


def test_presets_build_each_ablation():
    names = ["zhang2020", *ZHANG2020_ABLATIONS]
    configs = {name: config_from_preset(name, vocab_size=60, output_vocab_size=40) for name in names}
    assert configs["zhang2020"].hidden_size == 256 and configs["zhang2020"].contrast_lambda == 0.5
    assert (
        not configs["zhang2020-ctrsgen-q-i"].use_query and not configs["zhang2020-ctrsgen-q-i"].use_irrelevant
    )
    assert configs["zhang2020-ctrsgen-i-con"].decoder_attention == "concat"
    assert configs["zhang2020-ctrsgen-reircon"].irrelevant_as_relevant
    assert configs["zhang2020-ctrsgen-ircon"].irrelevant_encoding == "concatenated"


def test_stock_seq2seq_trainer_keeps_nested_columns_and_learns(tmp_path):
    """Seq2SeqTrainer keeps the nested columns (they are forward arguments), the loss falls on a repeated
    toy batch, and predict_with_generate runs generate() on the nested inputs."""
    import datasets
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    rows = toy_features() * 4
    dataset = datasets.Dataset.from_list([{**row, "query": "q"} for row in rows])  # "query": an unused column
    model = tiny_model().train()
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        learning_rate=0.01,
        max_steps=30,
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        predict_with_generate=True,
        generation_max_length=6,
        dataloader_pin_memory=False,
    )
    trainer = Seq2SeqTrainer(
        model=model, args=args, train_dataset=dataset, eval_dataset=dataset, data_collator=Q2IDCollator()
    )
    first = trainer.evaluate()["eval_loss"]
    trainer.train()
    metrics = trainer.evaluate()
    assert metrics["eval_loss"] < first - 0.5
    prediction = trainer.predict(dataset.select(range(3)))
    assert prediction.predictions.shape[0] == 3


def _irrelevant_reference(model, features: list[dict], concatenated: bool) -> list[torch.Tensor]:
    """Per example, the irrelevant sentence states h^i (V, H_e) computed one document at a time with a loop:
    per_document (Sec. 4.4) runs the sentence BiGRU over each document alone; IrCon (Table 3) runs it once
    over all the irrelevant sentences in a row, so the states of one document depend on the others."""
    encoder = model.encoder
    hierarchy = encoder._irrelevant_hierarchy()
    result = []
    for feature in features:
        documents = []
        for document in feature["irrelevant_input_ids"]:
            embeddings = []
            for sentence in document:
                ids = torch.tensor([[[sentence]]])  # (1, 1, 1, L)
                level = hierarchy.encode_words(
                    encoder.embed_tokens(ids), torch.ones_like(ids, dtype=torch.bool)
                )
                embeddings.append(level.sentence_embeddings[0, 0, 0])
            documents.append(torch.stack(embeddings))
        if not documents:
            result.append(torch.zeros(0, model.config.encoder_output_size))
            continue
        groups = [torch.cat(documents)] if concatenated else documents
        states = [
            hierarchy.encode_sentences(g.unsqueeze(0), torch.ones(1, len(g), dtype=torch.bool))[0]
            for g in groups
        ]
        result.append(torch.cat(states))
    return result


@pytest.mark.parametrize("encoding", ["per_document", "concatenated"])
def test_irrelevant_encoding_matches_a_per_example_loop(encoding):
    model = tiny_model(irrelevant_encoding=encoding)
    features = toy_features()
    batch = Q2IDCollator()(features)
    with torch.no_grad():
        states, mask = model.encoder._irrelevant_states(
            batch["irrelevant_input_ids"], batch["irrelevant_attention_mask"]
        )
        expected = _irrelevant_reference(model, features, concatenated=encoding == "concatenated")
    for row, reference in enumerate(expected):
        assert int(mask[row].sum()) == len(reference)
        assert torch.allclose(states[row, : len(reference)], reference, atol=1e-5)


def test_ircon_changes_the_outputs_only_where_irrelevant_documents_can_interact():
    """CtrsGen_IrCon (interaction among the irrelevant documents) with CtrsGen's weights: different logits
    for the example with two irrelevant documents, identical ones where there are fewer than two."""
    ctrsgen = tiny_model()
    ircon = tiny_model(irrelevant_encoding="concatenated")
    ircon.load_state_dict(ctrsgen.state_dict())  # the switch adds no parameter: equal weights
    features = toy_features()
    batch = Q2IDCollator()(features)
    with torch.no_grad():
        ours, theirs = ctrsgen(**batch), ircon(**batch)
    for row, feature in enumerate(features):
        length = len(feature["labels"])
        same = torch.allclose(ours.logits[row, :length], theirs.logits[row, :length], atol=1e-6)
        assert same == (len(feature["irrelevant_input_ids"]) < 2), row
    with torch.no_grad():  # and the contrast penalty m_u (Eq. 8, 11) is where the difference enters
        m_ours = ctrsgen.get_encoder()(**model_inputs(batch)).contrast_penalty
        m_theirs = ircon.get_encoder()(**model_inputs(batch)).contrast_penalty
    assert not torch.allclose(m_ours[0], m_theirs[0]) and torch.allclose(m_ours[1:], m_theirs[1:])


# ----------------------------------------------------------------------------- copy (beyond the paper)
def _copy_batch():
    """The toy batch with one label per example set to a token id outside the output vocabulary that occurs in
    that example's relevant documents (copyable), and one to an id that occurs nowhere in its sources."""
    features = toy_features()
    for feature in features:
        words = [w for document in feature["relevant_input_ids"] for s in document for w in s]
        sources = set(words) | set(feature["input_ids"])
        outside = [w for w in words if w >= OUTPUT_VOCAB]
        nowhere = [w for w in range(OUTPUT_VOCAB, VOCAB) if w not in sources]
        feature["labels"] = [outside[0] if outside else 5, nowhere[0], *feature["labels"]]
    return Q2IDCollator()(features)


def test_copy_config_is_checked():
    with pytest.raises(ValueError, match="copy must be True or False"):
        CtrsGenConfig(vocab_size=VOCAB, copy="yes")
    assert CtrsGenConfig(vocab_size=VOCAB, copy=True).copy is True


def test_copy_puts_probability_only_on_source_words_outside_the_output_vocabulary():
    model = tiny_model(copy=True)
    batch = _copy_batch()
    with torch.no_grad():
        log_probs = model(**batch).logits  # (B, Z, vocab_size): log P over every token id
    assert model.logits_are_log_probs and log_probs.shape[-1] == VOCAB
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(log_probs.shape[:2]), atol=1e-4)
    for row in range(batch["labels"].shape[0]):
        sources = set(batch["input_ids"][row].tolist()) | set(
            batch["relevant_input_ids"][row][batch["relevant_attention_mask"][row].bool()].tolist()
        )
        for token in range(OUTPUT_VOCAB, VOCAB):
            probability = log_probs[row, 0, token].exp().item()
            if token in sources:
                assert probability > 1e-6, (row, token)  # copyable: some attention mass
            else:
                assert probability < 1e-6, (row, token)  # neither generated nor copyable


def test_copy_training_loss_is_the_nll_of_the_full_distribution():
    """In training mode the loss reads the mixture at the labels only; it must equal the NLL of the logits
    the model gives in eval mode (labels no source supplies are trained as [UNK])."""
    from hf_querygen.nn.coverage import copyable_labels
    from hf_querygen.nn.loss import token_nll

    model = tiny_model(copy=True)
    batch = _copy_batch()
    model.train()
    train = model(**batch)
    assert train.logits is None  # no distribution over every token id in training
    model.eval()
    with torch.no_grad():
        evaluated = model(**batch)
        encoded = model.encoder(**{k: v for k, v in batch.items() if k != "labels"})
    labels = copyable_labels(batch["labels"], encoded.copy_ids, encoded.copy_mask, OUTPUT_VOCAB, 1)
    assert (labels[:, 1] == 1).all() and (labels[:, 0] >= OUTPUT_VOCAB).sum() >= 2  # [UNK] / copyable kept
    assert torch.allclose(train.loss, token_nll(evaluated.logits, labels), atol=1e-4)
    assert torch.allclose(train.loss, evaluated.loss, atol=1e-4)
    train.loss.backward()
    assert model.decoder.copy_mixture.gate.weight.grad.abs().sum() > 0


def test_copy_generates_token_ids_the_tokenizer_decodes():
    model = tiny_model(copy=True)
    batch = _copy_batch()
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    for beams in (1, 3):
        generated = model.generate(**inputs, num_beams=beams, max_new_tokens=6)
        assert generated.max() < VOCAB and generated.shape[0] == batch["input_ids"].shape[0]


def test_copy_model_family_keeps_label_ids_past_the_output_vocabulary():
    from hf_querygen.tasks.base import get_task

    task = get_task("q2id")
    assert task.family_of(CtrsGenConfig(vocab_size=VOCAB, copy=True)) == "hierarchical-copy"
    assert task.family_of(CtrsGenConfig(vocab_size=VOCAB)) == "hierarchical"
    config = config_from_preset("zhang2020-ctrsgen-copy", vocab_size=VOCAB, output_vocab_size=OUTPUT_VOCAB)
    assert config.copy and config.hidden_size == PRESETS["zhang2020"]["hidden_size"]


def test_a_reward_for_source_pieces_is_refused_by_name_not_ignored():
    """generate() would only warn and decode without it: the q2id task refuses it for CtrsGen models."""
    task = get_task("q2id")
    model = tiny_model()
    with pytest.raises(InvalidInputError, match="encoder_repetition_penalty is a reward for the source"):
        task.decoding_arguments(model, {"encoder_repetition_penalty": 1.3})
    model.config.task_decoding = {"encoder_repetition_penalty": 1.3}
    with pytest.raises(InvalidInputError, match="task_decoding: encoder_repetition_penalty is a reward"):
        task.decoding_arguments(model, {})
    assert not task.honours("hierarchical", {"encoder_repetition_penalty": 1.3})
    assert task.honours("bert2bert", {"encoder_repetition_penalty": 1.3, "restate_query": True})
