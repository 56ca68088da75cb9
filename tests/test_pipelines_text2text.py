"""The ``query-reformulation`` pipeline on a tiny trained copy model loaded from disk."""

import datasets
import pytest
import torch
from _seq2seq_toy import copy_task_rows, copy_task_tokenizer, tiny_copy_model
from transformers import pipeline

import hf_querygen  # noqa: F401  (registers the pipeline task and the model type)
from hf_querygen.errors import InvalidInputError
from hf_querygen.inference import generate_texts
from hf_querygen.pipelines.text2text import QueryReformulationPipeline
from hf_querygen.tasks.seq2seq import encode_seq2seq
from hf_querygen.tokenization import output_vocab_size_of
from hf_querygen.training import train_seq2seq

torch.set_num_threads(1)

# names are random strings the tokenizer has never seen: they can only come out by copying
TEXTS = [
    "please find alpha qwzrtx beta",
    "please find gamma mmbvcx delta",
    "please find epsilon ztrplk alpha",
    "find delta",
    "please find beta hjkgfd gamma",
]
EXPECTED = {0: "qwzrtx alpha", 1: "mmbvcx gamma", 2: "ztrplk epsilon", 4: "hjkgfd beta"}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("copy_model")
    tokenizer = copy_task_tokenizer()
    train = encode_seq2seq(
        datasets.Dataset.from_list(copy_task_rows(384, seed=11)),
        tokenizer,
        "source",
        "target",
        output_vocab_size_of(tokenizer),
    )
    train_seq2seq(
        tiny_copy_model(tokenizer, seed=1),
        tokenizer,
        train,
        None,
        out,
        max_new_tokens=5,
        num_train_epochs=4,
        per_device_train_batch_size=16,
        learning_rate=1e-2,
        save_strategy="no",
    )
    return out


@pytest.fixture(scope="module")
def reformulate(model_dir):
    return pipeline("query-reformulation", model=str(model_dir))


def test_pipeline_loads_by_task_name_and_copies_unseen_names(reformulate):
    assert isinstance(reformulate, QueryReformulationPipeline)
    outputs = [reformulate(text) for text in TEXTS]
    assert all(len(output) == 1 for output in outputs)
    texts = [output[0]["generated_text"] for output in outputs]
    assert sum(texts[i] == expected for i, expected in EXPECTED.items()) >= 3
    assert all("[UNK]" not in text for text in texts)


def test_batched_pipeline_equals_unbatched_and_generate_texts(reformulate):
    single = [reformulate(text)[0]["generated_text"] for text in TEXTS]
    batched = reformulate(TEXTS, batch_size=3)
    assert [output[0]["generated_text"] for output in batched] == single
    assert generate_texts(reformulate.model, reformulate.tokenizer, TEXTS, batch_size=2) == single


def test_pipeline_beam_search_returns_n_sequences_per_input(reformulate):
    beams = reformulate(TEXTS[:3], batch_size=2, num_beams=3, num_return_sequences=2)
    assert [len(output) for output in beams] == [2, 2, 2]
    expected = generate_texts(
        reformulate.model, reformulate.tokenizer, TEXTS[:3], num_beams=3, num_return_sequences=2
    )
    assert [o["generated_text"] for output in beams for o in output] == expected


def test_pipeline_rejects_non_text(reformulate):
    with pytest.raises(InvalidInputError, match="must be strings"):
        reformulate([["please", "find"]])


def test_stock_text2text_pipeline_is_gone_in_transformers_5(model_dir):
    # why this package ships its own pipeline: the stock task no longer exists
    with pytest.raises(KeyError, match="text2text-generation has been removed"):
        pipeline("text2text-generation", model=str(model_dir))
