"""pipeline("intent-description") on a tiny saved CtrsGen model: save -> from_pretrained gives identical
outputs, and the pipeline returns what generate() + decoding return for the same input."""

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

import hf_querygen  # noqa: F401  (registers model and pipeline)
from hf_querygen.errors import InvalidInputError
from hf_querygen.models.ctrsgen import CtrsGenConfig, CtrsGenForIntentDescription
from hf_querygen.tasks.q2id import Q2IDCaps, Q2IDCollator, decode_description, encode_q2id, split_document
from hf_querygen.tokenization import train_word_tokenizer

RELEVANT = [
    "Eight nations of the Amazon basin asked for money. They want to preserve the rain forest.",
    "Destruction of tropical forests is faster than estimated.",
]
IRRELEVANT = ["Burning trees adds carbon dioxide. Scientists warn about warming."]
QUERY = "amazon rain forest"
DESCRIPTION = "what measures preserve the amazon rain forest"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tokenizer = train_word_tokenizer(
        [QUERY, *RELEVANT, *IRRELEVANT], target_texts=[DESCRIPTION, "describe the forest"]
    )
    torch.manual_seed(0)
    config = CtrsGenConfig(
        vocab_size=len(tokenizer),
        output_vocab_size=int(tokenizer.init_kwargs["output_vocab_size"]),
        embedding_size=8,
        hidden_size=8,
        decoder_hidden_size=12,
        max_decoding_length=8,
    )
    model = CtrsGenForIntentDescription(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(8.0)
    path = tmp_path_factory.mktemp("ctrsgen")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, model, tokenizer


def _direct(model, tokenizer, **generate_kwargs):
    encoded = encode_q2id(
        {"query": [QUERY], "relevant_documents": [RELEVANT], "irrelevant_documents": [IRRELEVANT]},
        tokenizer,
        Q2IDCaps(),
        with_labels=False,
    )
    batch = Q2IDCollator()([{key: values[0] for key, values in encoded.items()}])
    return [decode_description(g, tokenizer) for g in model.generate(**batch, **generate_kwargs)]


def test_saved_model_reloads_with_identical_outputs(model_dir):
    path, model, tokenizer = model_dir
    loaded = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    reloaded_tokenizer = AutoTokenizer.from_pretrained(path)
    assert _direct(model, tokenizer, num_beams=2) == _direct(loaded, reloaded_tokenizer, num_beams=2)


def test_pipeline_matches_generate_and_accepts_every_document_form(model_dir):
    path, model, tokenizer = model_dir
    describe = pipeline("intent-description", model=str(path))
    inputs = {"query": QUERY, "relevant_documents": RELEVANT, "irrelevant_documents": IRRELEVANT}
    (result,) = describe(inputs, num_beams=2)
    assert result["description"] == _direct(model, tokenizer, num_beams=2)[0]
    assert result["description"].strip()
    as_sentences = {
        "query": QUERY,
        "relevant_documents": [split_document(d) for d in RELEVANT],
        "irrelevant_documents": [{"sentences": split_document(d)} for d in IRRELEVANT],
    }
    assert describe(as_sentences, num_beams=2) == [result]
    # several inputs, several sequences each, and queries without irrelevant documents
    outputs = describe(
        [inputs, {"query": QUERY, "relevant_documents": RELEVANT}], num_beams=3, num_return_sequences=2
    )
    assert len(outputs) == 2 and all(len(per_input) == 2 for per_input in outputs)


def test_restate_query_puts_the_query_before_the_generated_description(model_dir):
    path, model, tokenizer = model_dir
    describe = pipeline("intent-description", model=str(path))
    inputs = {"query": QUERY, "relevant_documents": RELEVANT, "irrelevant_documents": IRRELEVANT}
    (plain,) = describe(inputs, num_beams=2)
    (restated,) = describe(inputs, num_beams=2, restate_query=True)
    assert restated["description"] == f"{QUERY} {plain['description']}"
    # as a saved decoding (what zhang2020.copy chooses on validation) it is the pipeline's default
    model.config.task_decoding = {"num_beams": 2, "restate_query": True}
    try:
        from hf_querygen.tasks.base import get_task

        assert get_task("q2id").predict(model, tokenizer, [inputs]) == [restated["description"]]
        with pytest.raises(InvalidInputError, match="restate_query"):
            get_task("q2id").predict(model, tokenizer, [inputs], restate_query="yes")
    finally:
        model.config.task_decoding = None


def test_whole_sentences_drops_the_unfinished_last_sentence_and_reaches_the_pipeline(model_dir):
    from hf_querygen.tasks.q2id import whole_sentences

    cut = "i am planning to buy a water park in doha. is there any good"
    assert whole_sentences(cut) == "i am planning to buy a water park in doha."
    assert whole_sentences("is it safe? my kids want to go!") == "is it safe? my kids want to go!"
    assert whole_sentences('he said "go." and then') == 'he said "go."'
    assert whole_sentences("no sentence ends here") == "no sentence ends here"  # nothing to end at
    assert whole_sentences("see e.g. this page") == "see e.g. this page"  # an abbreviation ends nothing
    path, model, tokenizer = model_dir
    describe = pipeline("intent-description", model=str(path))
    inputs = {"query": QUERY, "relevant_documents": RELEVANT, "irrelevant_documents": IRRELEVANT}
    (plain,) = describe(inputs, num_beams=2)
    (whole,) = describe(inputs, num_beams=2, whole_sentences=True, restate_query=True)
    assert whole["description"] == f"{QUERY} {whole_sentences(plain['description'])}".strip()
    with pytest.raises(InvalidInputError, match="whole_sentences"):
        describe(inputs, whole_sentences="yes")


def test_pipeline_rejects_malformed_inputs(model_dir):
    describe = pipeline("intent-description", model=str(model_dir[0]))
    with pytest.raises(InvalidInputError, match="relevant_documents"):
        describe({"query": QUERY})
    with pytest.raises(InvalidInputError, match="lists of documents"):
        describe({"query": QUERY, "relevant_documents": RELEVANT[0]})


def test_q2id_models_are_routed_to_the_intent_description_pipeline():
    """CtrsGen is an encoder-decoder, but only the q2id task can encode its nested inputs: the error for
    a wrong pipeline names the one pipeline task that serves it."""
    from types import SimpleNamespace

    from hf_querygen.errors import InvalidInputError
    from hf_querygen.pipelines._task_pipeline import check_pipeline_model

    model = SimpleNamespace(
        config=SimpleNamespace(model_type="ctrsgen", is_encoder_decoder=True, id2label={})
    )
    with pytest.raises(InvalidInputError, match=r"serves the pipeline tasks \['intent-description'\]"):
        check_pipeline_model("keyword-query-generation", ("seq2seq", "dual", "pointer"), model)
    check_pipeline_model("intent-description", ("hierarchical", "hierarchical-copy"), model)  # accepted


#: a tiny collection: BM25 ranks FOREST_FIRST (3 query words) before FOREST_SECOND (2), then RAIN_ONLY (1);
#: the distractors match no query word
FOREST_FIRST = "The Amazon rain forest is large. It is green."
FOREST_SECOND = "Forest fires burn in the Amazon."
RAIN_ONLY = "Heavy rain fell in August."
DISTRACTORS = ["A recipe for banana bread with walnuts.", "The football season starts in August."]


def test_retrieval_sourced_documents_feed_the_same_decoding(model_dir):
    """A bare query plus a DocumentRetriever: the BM25 top-k documents are the relevant set, the next ones
    the irrelevant set, and the description is what the pipeline gives for those documents passed by hand."""
    from hf_querygen.tasks.q2id.task import DocumentRetriever

    path, _, _ = model_dir
    describe = pipeline("intent-description", model=str(path))
    collection = [DISTRACTORS[0], RAIN_ONLY, FOREST_SECOND, DISTRACTORS[1], FOREST_FIRST]
    retriever = DocumentRetriever.from_documents(collection, relevant=2, irrelevant=2)
    (source,) = retriever.sources([QUERY])
    assert source == {
        "query": QUERY,
        "relevant_documents": [FOREST_FIRST, FOREST_SECOND],
        "irrelevant_documents": [RAIN_ONLY],  # nothing else matches: fewer than 2 irrelevant documents
    }
    assert retriever.retrieved_ids(QUERY) == ([4, 2], [1])
    by_hand = describe(source, num_beams=2)
    assert describe(QUERY, retriever=retriever, num_beams=2) == by_hand
    assert describe({"query": QUERY}, retriever=retriever, num_beams=2) == by_hand
    with pytest.raises(InvalidInputError, match="no document of the collection matches"):
        describe("zzzz qqqq", retriever=retriever)
    lenient = DocumentRetriever(retriever.index, collection, relevant=2, if_nothing="query")
    assert lenient.sources(["zzzz qqqq"]) == [
        {"query": "zzzz qqqq", "relevant_documents": ["zzzz qqqq"], "irrelevant_documents": []}
    ]
    assert lenient.unanswered == 1
    with pytest.raises(InvalidInputError, match="index of"):
        DocumentRetriever(retriever.index, collection[:-1])
    with pytest.raises(InvalidInputError, match="relevant_documents"):
        describe({"query": QUERY})  # a bare query without a retriever
