"""Query-based pointer-generator with coverage (Table 4's PG; RSA-style attention): HF integration, cache =
no cache, batch = single, save/load, the copy mixture, coverage loss and sentence relevance by hand."""

import torch
from _q2id_toy import OUTPUT_VOCAB, VOCAB, model_inputs, toy_features
from transformers import AutoModelForSeq2SeqLM

import hf_querygen  # noqa: F401
from hf_querygen.models.query_pointer_generator import (
    QueryPointerGeneratorConfig,
    QueryPointerGeneratorForIntentDescription,
    sentence_query_overlap,
)
from hf_querygen.nn.coverage import PointerGeneratorMixture, coverage_loss
from hf_querygen.tasks.q2id import Q2IDCollator


def tiny_pg(seed: int = 0, **overrides) -> QueryPointerGeneratorForIntentDescription:
    torch.manual_seed(seed)
    kwargs = dict(
        vocab_size=VOCAB,
        output_vocab_size=OUTPUT_VOCAB,
        embedding_size=8,
        hidden_size=8,
        decoder_hidden_size=12,
    )
    kwargs.update(overrides)
    model = QueryPointerGeneratorForIntentDescription(QueryPointerGeneratorConfig(**kwargs)).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(8.0)
    return model


def features_with_copy_labels():
    features = toy_features()
    # a label outside the output vocabulary that occurs in the first example's relevant words
    copied = features[0]["relevant_input_ids"][0][0][0]
    features[0]["relevant_input_ids"][0][0][0] = max(copied, OUTPUT_VOCAB)
    features[0]["labels"][0] = features[0]["relevant_input_ids"][0][0][0]
    features[1]["labels"][0] = (
        VOCAB - 1
    )  # outside the output vocabulary and not in the source: trained as [UNK]
    return features


def test_variants_train_generate_and_cache_equals_no_cache():
    variants = (
        {},
        {"relevance_scaled_attention": True},
        {"diversity_attention": True},
        {"coverage": False, "use_query": False},
    )
    for overrides in variants:
        model = tiny_pg(**overrides).train()
        batch = Q2IDCollator()(features_with_copy_labels())
        loss = model(**batch).loss
        assert torch.isfinite(loss) and loss < 50
        loss.backward()
        model.eval()
        inputs = model_inputs(batch)
        for beams in (1, 3):
            cached = model.generate(**inputs, max_length=8, num_beams=beams)
            assert torch.equal(
                cached, model.generate(**inputs, max_length=8, num_beams=beams, use_cache=False)
            )
            assert cached.max() < VOCAB


def test_batch_equals_single_and_save_load(tmp_path):
    model = tiny_pg(relevance_scaled_attention=True)
    features = toy_features()
    batch = Q2IDCollator()(features)
    logits = model(**batch).logits
    for row, feature in enumerate(features):
        single = Q2IDCollator()([feature])
        assert torch.allclose(model(**single).logits[0], logits[row, : len(feature["labels"])], atol=1e-5)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    # equal weights; the multi-step GRU call may take another kernel path on reloaded storage (~5e-7)
    assert torch.allclose(loaded(**batch).logits, logits, atol=1e-5)
    inputs = model_inputs(batch)
    assert torch.equal(loaded.generate(**inputs, num_beams=2), model.generate(**inputs, num_beams=2))


def test_mixture_is_a_distribution_and_copies_by_token_id():
    mixture = PointerGeneratorMixture(3)
    vocab_logits = torch.randn(2, 5)
    attention = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    source_ids = torch.tensor([[7, 7, 0], [1, 6, 2]])
    log_probs, p_gen = mixture(vocab_logits, attention, source_ids, torch.randn(2, 3), total_size=8)
    probs = log_probs.exp()
    assert torch.allclose(probs.sum(-1), torch.ones(2), atol=1e-5)
    # id 7 is outside the 5 generable ids: only the copy mass of its two positions reaches it
    assert torch.allclose(probs[0, 7], 1 - p_gen[0], atol=1e-6)
    expected = p_gen[1] * vocab_logits[1].softmax(-1)[2] + (1 - p_gen[1]) * 0.5
    assert torch.allclose(probs[1, 2], expected, atol=1e-6)


def test_coverage_loss_and_sentence_overlap_by_hand():
    weights = torch.tensor([[[0.6, 0.4], [0.5, 0.5]]])
    coverages = torch.tensor([[[0.0, 0.0], [0.6, 0.4]]])
    # step 1: min with zero coverage = 0; step 2: min(0.5, 0.6) + min(0.5, 0.4) = 0.9
    assert torch.isclose(coverage_loss(weights, coverages, torch.tensor([[True, True]])), torch.tensor(0.9))
    assert coverage_loss(weights, coverages, torch.tensor([[True, False]])) == 0
    sentences = torch.tensor([[[[5, 6, 0], [7, 0, 0]]]])  # (B=1, D=1, S=2, L=3)
    query = torch.tensor([[5, 7, 5, 3, 0]])  # words 5, 7 (5 repeated), [EOS], pad
    overlap = sentence_query_overlap(sentences, sentences != 0, query, query != 0, (0, 1, 3))
    assert overlap.tolist() == [[[0.5, 0.5]]]


def test_pg_presets():
    from hf_querygen.presets import config_from_preset

    pg = config_from_preset("zhang2020-pg", vocab_size=60, output_vocab_size=40)
    rsa = config_from_preset("zhang2020-rsa", vocab_size=60, output_vocab_size=40)
    assert pg.model_type == "query_pointer_generator" and pg.coverage and not pg.relevance_scaled_attention
    assert rsa.relevance_scaled_attention
    assert config_from_preset("zhang2020-sd2", vocab_size=60, output_vocab_size=40).diversity_attention


def test_training_loss_reads_the_mixture_at_the_labels_only():
    """In training mode the loss is the NLL of the labels under the mixture without building the
    distribution over every token id; it must equal the eval-mode loss over the full distribution (the
    coverage term included), labels outside the output vocabulary (copied or [UNK]) too."""
    for overrides in ({}, {"relevance_scaled_attention": True}, {"diversity_attention": True}):
        model = tiny_pg(dropout=0.0, **overrides)
        batch = Q2IDCollator()(features_with_copy_labels())
        model.train()
        trained = model(**batch)
        assert trained.logits is None
        model.eval()
        with torch.no_grad():
            evaluated = model(**batch)
        assert evaluated.logits.shape[-1] == VOCAB
        assert torch.allclose(trained.loss, evaluated.loss, atol=1e-4), overrides
        trained.loss.backward()
        assert model.mixture.gate.weight.grad.abs().sum() > 0
