"""nl2kw task preprocessing (TF-IDF order, extractive/generative split, dual-decoder / tag labels,
postprocessing), the non-neural baselines, the joint ATS2S+SL model, the keyword-query pipeline and
the Liu'18 report."""

import pytest
import torch

import hf_querygen  # noqa: F401  (registers models and pipelines)
from hf_querygen.baselines.keyword_query import (
    YakeKeywordExtractor,
    raw_query_keywords,
    union_keyword_queries,
)
from hf_querygen.tasks.nl2kw import (
    TfidfKeywordOrder,
    decode_dual_decoder_ids,
    dual_decoder_labels,
    keyword_tag_labels,
    keyword_targets,
)

NL_QUERIES = [
    "where should i go and play when i first came to beijing",
    "where can i buy cheap flights to paris",
    "what should i eat in beijing",
    "how do i renew my passport",
]
KEYWORD_QUERIES = ["beijing sightseeing", "cheap flights paris", "beijing food", "passport renewal"]


@pytest.fixture(scope="module")
def tokenizer():
    from hf_querygen.tokenization import train_word_tokenizer

    return train_word_tokenizer(NL_QUERIES, target_texts=KEYWORD_QUERIES)


def test_tfidf_order_puts_rare_words_first_and_is_fit_on_given_documents():
    order = TfidfKeywordOrder.fit(["the cat", "the dog", "the bird sings"])
    assert order.n_documents == 3 and order.document_frequency["the"] == 3
    assert order.idf("unseen") > order.idf("cat") > order.idf("the")
    assert order.order(["the", "cat"], "the cat sat") == ["cat", "the"]
    # ties keep the keyword query's order; duplicates collapse
    assert order.order(["dog", "bird", "dog"], "") == ["dog", "bird"]
    with pytest.raises(ValueError, match="no documents"):
        TfidfKeywordOrder.fit([])


def test_extractive_generative_split_and_labels():
    source = ["where", "is", "beijing", "?", "beijing"]
    targets = keyword_targets(source, ["beijing", "sightseeing", "?", "Beijing"])
    assert targets.extractive == ["beijing"] and targets.generative == ["sightseeing"]
    assert targets.pointer_positions == [2]  # the first occurrence (Eq. 4); punctuation is no keyword
    labels = dual_decoder_labels(
        targets, sentinel_position=5, output_vocab_size=10, target_token_ids=[7], eos_token_id=3
    )
    assert labels == [10 + 2, 10 + 5, 7, 3]
    assert dual_decoder_labels(targets, 5, 10, [7], 3, pointer_only=True) == [12, 15]
    assert keyword_tag_labels(source, ["Beijing", "?"]) == [0, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="beyond the sentinel"):
        dual_decoder_labels(targets, 2, 10, [7], 3)
    with pytest.raises(ValueError, match="generative words"):
        dual_decoder_labels(targets, 5, 10, [], 3)


class _Words:
    def convert_ids_to_tokens(self, token_id):
        return f"word{token_id}"


def test_decoding_three_phases_keeps_source_words_and_deduplicates():
    source = ["trip", "to", "zhangjiajie"]  # zhangjiajie: outside every vocabulary
    ids = [2, 10 + 2, 10 + 2, 10 + 3, 5, 1, 6, 5, 3, 7]
    query = decode_dual_decoder_ids(
        ids, source, _Words(), output_vocab_size=10, eos_token_id=3, skip_token_ids=(0, 1, 2)
    )
    assert query.extracted == ["zhangjiajie"]
    assert query.generated == ["word5", "word6"]
    assert query.text == "zhangjiajie word5 word6"
    assert query.as_dict()["keywords"] == ["zhangjiajie", "word5", "word6"]


def test_encode_nl2kw_modes(tokenizer):
    import datasets

    from hf_querygen.tasks.nl2kw import encode_nl2kw
    from hf_querygen.tokenization import EOS_ID, UNK_ID

    dataset = datasets.Dataset.from_dict({"nl_query": NL_QUERIES, "keyword_query": KEYWORD_QUERIES})
    order = TfidfKeywordOrder.fit(NL_QUERIES + KEYWORD_QUERIES)
    output_vocab_size = 8  # only the most frequent target words can be generated
    dual = encode_nl2kw(dataset, tokenizer, order, "dual", output_vocab_size)
    for row in dual:
        sentinel = output_vocab_size + len(row["input_ids"]) - 1
        assert sentinel in row["labels"] and row["labels"][-1] == EOS_ID
        pointer_part = row["labels"][: row["labels"].index(sentinel)]
        assert [row["source_words"][i - output_vocab_size] for i in pointer_part] == [
            w for w in row["target_words"] if w in row["source_words"]
        ]
        generator_part = row["labels"][row["labels"].index(sentinel) + 1 : -1]
        assert all(i < output_vocab_size for i in generator_part)
    first = dual[0]
    assert first["source_words"][first["labels"][0] - output_vocab_size] == "beijing"
    tagging = encode_nl2kw(dataset, tokenizer, order, "tagging", output_vocab_size)
    row = tagging[1]
    assert [w for w, t in zip(row["source_words"], row["labels"], strict=False) if t == 1] == [
        "cheap",
        "flights",
        "paris",
    ]
    assert row["labels"][-1] == -100 and len(row["labels"]) == len(row["input_ids"])
    joint = encode_nl2kw(dataset, tokenizer, order, "joint", output_vocab_size)
    seq2seq = encode_nl2kw(dataset, tokenizer, order, "seq2seq", output_vocab_size)
    # the joint labels carry copy ids where the plain seq2seq labels have [UNK]
    assert any(i >= output_vocab_size for row in joint for i in row["labels"])
    assert all(i < output_vocab_size for row in seq2seq for i in row["labels"])
    assert any(i == UNK_ID for row in seq2seq for i in row["labels"])
    with pytest.raises(ValueError, match="unknown mode"):
        encode_nl2kw(dataset, tokenizer, order, "bogus", output_vocab_size)


def test_raw_query_union_and_yake_baselines():
    assert raw_query_keywords("Where is Beijing? Beijing!") == ["where", "is", "beijing"]
    assert union_keyword_queries([["a", "b"], ["c"]], [["b", "d"], []]) == [["a", "b", "d"], ["c"]]
    with pytest.raises(ValueError, match="different numbers"):
        union_keyword_queries([["a"]], [])
    extractor = YakeKeywordExtractor(top=1, max_ngram=1)
    words = extractor("where can i buy cheap flights to paris")
    assert len(words) == 1 and words[0] in {"cheap", "flights", "paris", "buy"}
    best, grid = YakeKeywordExtractor.select_on_validation(
        NL_QUERIES, KEYWORD_QUERIES, tops=(1, 3), max_ngrams=(1,)
    )
    assert set(grid) == {"top=1,max_ngram=1", "top=3,max_ngram=1"}
    assert grid[f"top={best.top},max_ngram={best.max_ngram}"] == max(grid.values())
    with pytest.raises(ValueError, match="must be >= 1"):
        YakeKeywordExtractor(top=0)


def _tiny_joint():
    from hf_querygen.models.joint_seq2seq_tagger import (
        JointSeq2SeqTaggerConfig,
        JointSeq2SeqTaggerForConditionalGeneration,
    )

    torch.manual_seed(0)
    config = JointSeq2SeqTaggerConfig(
        vocab_size=30,
        output_vocab_size=10,
        embedding_size=8,
        hidden_size=8,
        attention="bahdanau",
        dropout=0.0,
    )
    return JointSeq2SeqTaggerForConditionalGeneration(config).eval()


def test_joint_model_derives_tags_trains_both_heads_and_round_trips(tmp_path):
    from transformers import AutoModelForSeq2SeqLM

    model = _tiny_joint()
    input_ids = torch.tensor([[5, 12, 20, 12, 3], [7, 25, 3, 0, 0]])
    mask = (input_ids != 0).long()
    # row 0: vocab word 5 and the OOV word at position 1 (copy id 10 + 1); row 1: nothing from the source
    labels = torch.tensor([[5, 11, 8, 3], [9, 3, -100, -100]])
    encoder_outputs = model.encoder(input_ids, mask)
    tags = model.tag_labels_from_labels(labels, encoder_outputs)
    # position 3 repeats position 1, so it is tagged too; [EOS] and padding carry no tag loss
    assert tags.tolist() == [[1, 1, 0, 1, -100], [0, 0, -100, -100, -100]]
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    assert out.tag_logits.shape == (2, 5, 2)
    assert out.loss.item() == pytest.approx(out.decoder_loss.item() + out.tag_loss.item(), rel=1e-6)
    generated = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
    assert int(generated.max()) < 10  # the decoder never emits copy ids
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    again = loaded(input_ids=input_ids, attention_mask=mask, labels=labels)
    assert torch.equal(out.tag_logits, again.tag_logits) and out.loss.item() == again.loss.item()


def test_keyword_query_pipeline_on_a_saved_dual_decoder(tmp_path, tokenizer):
    from transformers import pipeline

    from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration

    torch.manual_seed(0)
    output_vocab_size = tokenizer.init_kwargs["output_vocab_size"]
    model = DualDecoderForKeywordGeneration(
        DualDecoderConfig(
            vocab_size=len(tokenizer),
            output_vocab_size=output_vocab_size,
            embedding_size=8,
            hidden_size=8,
            dropout=0.0,
        )
    )
    model.generation_config.max_new_tokens = 6
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    generate_keywords = pipeline("keyword-query-generation", model=str(tmp_path))
    texts = ["where should i go when i first came to zhangjiajie", "cheap flights"]
    outputs = generate_keywords(texts)
    for text, result in zip(texts, outputs, strict=True):
        (result,) = result
        assert set(result) == {"keyword_query", "keywords", "extracted", "generated"}
        assert result["keyword_query"] == " ".join(result["keywords"])
        assert set(result["extracted"]) <= set(text.split())  # pointed-at words are the source words
        assert "[UNK]" not in result["keywords"]


def test_report_renders_both_tables_and_the_claim_verdict():
    from hf_querygen.experiments import liu2018
    from hf_querygen.experiments._report import results_document

    def runs(f1):
        return [
            {
                "precision": f1,
                "recall": f1,
                "f1": f1 + d,
                "recall_extractive": 0.5,
                "recall_generative": 0.1,
                "recall_total": 0.3,
                "pooled_precision": f1,
                "pooled_recall": f1,
                "pooled_f1": f1,
            }
            for d in (-0.01, 0.0, 0.01)
        ]

    config = {
        "split_sizes": {"test": 3},
        "seeds": 3,
        "quick": False,
        "vocab_size": 10,
        "output_vocab_size": 5,
        "lambda_sweep_validation_f1": {"0.3": [0.2], "0.5": [0.3, 0.32]},
        "f1_by_length_test": {
            s: [{"bucket": "1-5", "n": 2, "f1": 0.4}] for s in ("sequence_labeling", "dual_decoder")
        },
        "timings_s": {"total_s": 1.0},
    }
    losing = results_document(
        "liu2018", {"sequence_labeling": runs(0.5), "dual_decoder": runs(0.4)}, liu2018.PAPER_NUMBERS, config
    )
    text = liu2018.render_markdown(losing)
    assert "Table 2" in text and "Table 3" in text and "0.514" in text and "0.467" in text
    assert "DOES NOT HOLD" in text
    winning = results_document(
        "liu2018", {"sequence_labeling": runs(0.4), "dual_decoder": runs(0.5)}, liu2018.PAPER_NUMBERS, config
    )
    assert "Claim HOLDS (margin larger than the seed std)" in liu2018.report.claim_check(winning)


def test_prepared_nl2kw_data_respects_the_dual_decoder_conventions(data_dir):
    """On the real corpus (capped): vocabulary, output vocabulary and labels of every model kind."""
    from hf_querygen.experiments.recipes import default_folds
    from hf_querygen.experiments.tables import Budget
    from hf_querygen.tasks.base import get_task

    task = get_task("nl2kw")
    (fold,) = default_folds(
        task, Budget("test", max_train=300, max_validation=40, max_test=40), data_dir, None, None
    )
    data = task.prepare(fold.splits)
    assert [len(data.splits[s]) for s in ("train", "validation", "test")] == [300, 40, 40]
    vocab = data.state["output_vocab_size"]
    assert 4 < vocab < len(data.tokenizer)
    dual = data.encoded("dual")["train"]
    n_extractive = n_generative = 0
    for row in dual:
        sentinel = vocab + len(row["input_ids"]) - 1
        labels = row["labels"]
        assert labels.count(sentinel) == 1 and labels[-1] == 3  # [EOS]
        end = labels.index(sentinel)
        assert all(vocab <= i < sentinel for i in labels[:end]) and all(i < vocab for i in labels[end + 1 :])
        n_extractive += end
        n_generative += len(labels) - end - 2
    # both decoders have work to do on this corpus (Liu'18: 55% of keywords are extractive)
    assert 0.3 < n_extractive / (n_extractive + n_generative) < 0.9
    pointer = data.encoded("pointer")["train"]
    assert all(row["labels"][-1] == vocab + len(row["input_ids"]) - 1 for row in pointer)
