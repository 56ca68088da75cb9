"""Neural segmenters: constrained decoding never leaves the query, the tagger learns a toy task, and the
``query-segmentation`` pipeline returns segments, batched like single."""

from __future__ import annotations

import random

import pytest
import torch

from hf_querygen.tasks.segmentation import breaks_to_string
from hf_querygen.tasks.segmentation.neural import (
    ConstrainedSegmentationLogitsProcessor,
    encode_for_seq2seq,
    encode_for_tagging,
    encode_queries,
    segment_breaks,
    train_segmentation_tokenizer,
)

#: toy segmentation rule: these pairs are always one segment, every other word stands alone
COMPOUNDS = ("graffiti fonts", "new york", "chest freezers", "stainless steel", "high school")
SINGLES = ("alphabet", "cheap", "hotels", "reviews", "jobs", "maps", "free", "used")


def toy_corpus(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        units = rng.sample(COMPOUNDS, rng.randint(0, 2)) + rng.sample(SINGLES, rng.randint(1, 2))
        rng.shuffle(units)
        words = " ".join(units).split()
        breaks = []
        for unit in units:
            breaks += [0] * (len(unit.split()) - 1) + [1]
        breaks = breaks[:-1]
        rows.append(
            {
                "id": str(i),
                "query": " ".join(words),
                "words": words,
                "breaks": breaks,
                "reference": breaks_to_string(words, breaks),
            }
        )
    return rows


@pytest.fixture(scope="module")
def toy():
    import datasets

    train = datasets.Dataset.from_list(toy_corpus(240, seed=0))
    tokenizer = train_segmentation_tokenizer(train["query"], train["reference"])
    return train, tokenizer


def tiny_seq2seq(tokenizer, copy: str = "none"):
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration

    torch.manual_seed(0)
    config = RNNSeq2SeqConfig(
        vocab_size=len(tokenizer),
        embedding_size=8,
        hidden_size=12,
        cell="gru",
        bidirectional_encoder=False,
        attention="none" if copy == "none" else "bahdanau",
        copy=copy,
    )
    return RNNSeq2SeqForConditionalGeneration(config).eval()


def test_logits_processor_masks_and_pools_by_hand():
    # vocabulary: 0 pad, 1 unk, 2 bos, 3 eos, 4 "|", 5 "new", 6 "york", 7 "cats"
    processor = ConstrainedSegmentationLogitsProcessor([[5, 6]], break_token_id=4, eos_token_id=3)
    assert processor.allowed_next(0, []) == [5]  # never a break first
    assert processor.allowed_next(0, [5]) == [6, 4]
    assert processor.allowed_next(0, [5, 4]) == [6]  # never two breaks in a row
    assert processor.allowed_next(0, [5, 4, 6]) == [3]
    logits = torch.log(torch.tensor([[0.01, 0.01, 0.01, 0.02, 0.35, 0.05, 0.15, 0.40]]))
    prefix = torch.tensor([[2, 5]])
    plain = processor(prefix, logits.clone())
    assert torch.isinf(plain[0, [0, 1, 2, 3, 5, 7]]).all() and plain[0, 4] > plain[0, 6]  # 0.35 > 0.15: break
    pooled = ConstrainedSegmentationLogitsProcessor([[5, 6]], 4, 3, pool_word_probability=True)(
        prefix, logits.clone()
    )
    # writing any word (0.63 of the mass outside "|" and [EOS]) beats a break (0.35): continue
    assert pooled[0, 6] == pytest.approx(torch.log(torch.tensor(0.63)).item(), abs=1e-5)
    assert pooled[0, 6] > pooled[0, 4] and torch.isinf(pooled[0, 7])


QUERIES = ["graffiti fonts alphabet", "cheap zzzunknown hotels new york", "new new new york", "used"]


@pytest.mark.parametrize(("copy", "num_beams"), [("none", 1), ("none", 3), ("copynet", 1), ("copynet", 2)])
def test_constrained_decoding_only_writes_the_query(toy, copy, num_beams):
    from hf_querygen.tasks.seq2seq import Seq2SeqCollator

    _, tokenizer = toy
    model = tiny_seq2seq(tokenizer, copy)
    encoded = encode_queries(QUERIES, tokenizer)
    keys = ("input_ids", "attention_mask") + (("source_word_ids",) if copy != "none" else ())
    batch = Seq2SeqCollator()([{k: encoded[k][i] for k in keys} for i in range(len(QUERIES))])
    lengths = [len(q.split()) for q in QUERIES]
    break_id = tokenizer.convert_tokens_to_ids("|")
    vocab, size = tokenizer.get_vocab(), model.config.output_vocab_size
    # the id that writes each query word: its vocabulary id, or (copy model, OOV word) V + first position
    word_ids = [
        [vocab[w] if w in vocab else (size + q.split().index(w) if copy != "none" else 1) for w in q.split()]
        for q in QUERIES
    ]
    assert any(i >= size for ids in word_ids for i in ids) == (copy != "none")
    processor = ConstrainedSegmentationLogitsProcessor(word_ids, break_id, tokenizer.eos_token_id, num_beams)
    generated = model.generate(
        **batch,
        logits_processor=[processor],
        num_beams=num_beams,
        do_sample=False,
        max_length=2 * max(lengths) + 1,
        num_return_sequences=num_beams,
    )
    for row, sequence in enumerate(generated.tolist()):
        expected = word_ids[row // num_beams]
        body = sequence[1 : sequence.index(tokenizer.eos_token_id)]
        assert [t for t in body if t != break_id] == expected  # every query word, in order, nothing else
        assert body[0] != break_id and all(
            not (a == b == break_id) for a, b in zip(body, body[1:], strict=False)
        )
    # through the public helper the break vectors fit the queries
    breaks = segment_breaks(model, tokenizer, QUERIES, constrained=True, num_beams=num_beams)
    assert [len(b) for b in breaks] == [n - 1 for n in lengths]


def test_unconstrained_decoding_is_read_back_leniently(toy):
    _, tokenizer = toy
    breaks = segment_breaks(tiny_seq2seq(tokenizer), tokenizer, QUERIES, constrained=False)
    assert [len(b) for b in breaks] == [len(q.split()) - 1 for q in QUERIES]
    assert all(set(b) <= {0, 1} for b in breaks)


def test_seq2seq_and_tagging_encodings(toy):
    train, tokenizer = toy
    row = train.filter(lambda r: r["query"].startswith("graffiti fonts")).select([0])
    seq2seq = encode_for_seq2seq(row, tokenizer)[0]
    words = row[0]["query"].split()
    target = tokenizer.convert_ids_to_tokens(seq2seq["labels"])
    assert target[:3] == ["graffiti", "fonts", "|"] and target[-1] == "[EOS]"
    assert [t for t in target[:-1] if t != "|"] == words
    tagging = encode_for_tagging(row, tokenizer)[0]
    assert tagging["labels"][:2] == [0, 1] and tagging["labels"][-1] == -100
    assert len(tagging["labels"]) == len(tagging["input_ids"]) == len(words) + 1
    with pytest.raises(ValueError, match="split_punctuation=False"):
        from hf_querygen.tokenization import train_word_tokenizer

        encode_queries(["king james's school"], train_word_tokenizer(["king james's school"]))


@pytest.fixture(scope="module")
def trained_tagger(toy, tmp_path_factory):
    import datasets

    from hf_querygen.models.rnn_tagger import RNNTaggerConfig, RNNTaggerForTokenClassification
    from hf_querygen.training import train_seq2seq

    train, tokenizer = toy
    validation = datasets.Dataset.from_list(toy_corpus(40, seed=1))
    torch.manual_seed(0)
    config = RNNTaggerConfig(
        vocab_size=len(tokenizer),
        embedding_size=16,
        hidden_size=16,
        id2label={0: "B", 1: "I"},
        label2id={"B": 0, "I": 1},
    )
    out = tmp_path_factory.mktemp("tagger")
    trainer = train_seq2seq(
        RNNTaggerForTokenClassification(config),
        tokenizer,
        encode_for_tagging(train, tokenizer),
        encode_for_tagging(validation, tokenizer),
        out,
        num_train_epochs=12,
        learning_rate=0.02,
        per_device_train_batch_size=16,
        early_stopping_patience=None,
        save_strategy="no",
        eval_strategy="no",
        load_best_model_at_end=False,
        seed=0,
    )
    trainer.save_model(str(out))
    return out, validation


def test_tagger_learns_the_toy_rule(trained_tagger, toy):
    from hf_querygen.metrics.segmentation_scores import segmentation_scores
    from hf_querygen.models.rnn_tagger import RNNTaggerForTokenClassification

    out, validation = trained_tagger
    _, tokenizer = toy
    model = RNNTaggerForTokenClassification.from_pretrained(out)
    breaks = segment_breaks(model, tokenizer, validation["query"], batch_size=7)
    predictions = [breaks_to_string(w, b) for w, b in zip(validation["words"], breaks, strict=True)]
    assert segmentation_scores(predictions, validation["reference"])["query_accuracy"] >= 0.9


def test_pipeline_returns_segments_batched_like_single(trained_tagger):
    from transformers import pipeline

    import hf_querygen  # noqa: F401  (registers the task)

    out, validation = trained_tagger
    segment = pipeline("query-segmentation", model=str(out))
    assert segment("graffiti fonts alphabet") == ["graffiti fonts", "alphabet"]
    assert segment("Cheap Hotels New York") == ["Cheap", "Hotels", "New York"]  # the caller's own words
    queries = validation["query"][:9]
    assert segment(queries, batch_size=4) == [segment(q) for q in queries]
    assert segment("   ") == []  # no words, no segments (documented; the model does not run)


def test_pipeline_runs_an_encoder_decoder(toy, tmp_path):
    from transformers import pipeline

    import hf_querygen  # noqa: F401

    _, tokenizer = toy
    model = tiny_seq2seq(tokenizer)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    segment = pipeline("query-segmentation", model=str(tmp_path))
    for query in QUERIES[:3]:
        constrained = segment(query)
        assert " ".join(constrained).split() == query.split()
        assert " ".join(segment(query, constrained=False)).split() == query.split()
    assert segment(QUERIES, batch_size=3) == [segment(q) for q in QUERIES]
