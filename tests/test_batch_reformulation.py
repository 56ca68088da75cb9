"""``hf-querygen reformulate``: a query file through a model's task in resumable chunks (one process; the
Ray Data path is in test_ray_jobs.py)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import torch

import hf_querygen  # noqa: F401  (registers the models)
from hf_querygen import batch_reformulation
from hf_querygen.batch_reformulation import ReformulationSettings, plan_chunks, reformulate
from hf_querygen.cli import main
from hf_querygen.errors import CorpusFormatError, InvalidInputError, OutputExistsError
from hf_querygen.model_folder import load_trained
from hf_querygen.tasks.base import get_task
from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer
from hf_querygen.utils import TRAINING_METADATA_FILE

TEXTS = ["where should i go in beijing", "graffiti fonts alphabet", "what is the weather in berlin"]


def tiny_model_folder(root):
    """An untrained 8-dim seq2seq saved as `train` saves it (task text2text: keyword query -> question)."""
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration

    torch.manual_seed(0)
    tokenizer = train_word_tokenizer(TEXTS)
    config = RNNSeq2SeqConfig(
        vocab_size=len(tokenizer),
        output_vocab_size=output_vocab_size_of(tokenizer),
        embedding_size=8,
        hidden_size=8,
        max_decoding_length=5,
    )
    model = RNNSeq2SeqForConditionalGeneration(config)
    model.generation_config.max_length = 5
    model.save_pretrained(root)
    tokenizer.save_pretrained(root)
    (root / TRAINING_METADATA_FILE).write_text(json.dumps({"task": "text2text"}))
    return root


def query_file(path, n):
    words = " ".join(TEXTS).split()
    lines = [
        f"q{i}\t" + " ".join(words[(i * 7 + j) % len(words)] for j in range(1 + i % 4)) for i in range(n)
    ]
    path.write_text("id\tquery\n" + "\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model_folder(tmp_path_factory.mktemp("model"))


def _expected(model_dir, texts):
    model, tokenizer, metadata = load_trained(model_dir)
    task = get_task(metadata["task"])
    return [task.as_text(o) for o in task.predict(model, tokenizer, texts, batch_size=4)]


def test_output_is_the_task_decode_in_input_order(model_dir, tmp_path, capsys):
    queries = query_file(tmp_path / "q.tsv", 23)
    out = tmp_path / "out.parquet"
    args = ["reformulate", "--model", str(model_dir), "--input", str(queries), "--output", str(out)]
    assert main([*args, "--batch-size", "4", "--chunk-size", "5"]) == 0
    assert "queries/s" in capsys.readouterr().err
    table = pq.read_table(out).to_pydict()
    assert table["id"] == [f"q{i}" for i in range(23)]
    assert table["output"] == _expected(model_dir, table["input"])
    assert not (tmp_path / "out.parquet.parts").exists()
    assert main(args) == 2  # an existing output needs --overwrite
    assert "--overwrite" in capsys.readouterr().err


def test_a_killed_run_resumes_with_the_missing_chunks(model_dir, tmp_path, monkeypatch):
    queries = query_file(tmp_path / "q.tsv", 12)
    settings = ReformulationSettings(batch_size=4, chunk_size=5)
    reference = tmp_path / "reference.parquet"
    reformulate(model_dir, queries, reference, settings, progress=False)
    real_run = batch_reformulation.ChunkReformulator.run
    calls = {"n": 0}

    def dies_on_second_chunk(self, chunk):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed")
        return real_run(self, chunk)

    monkeypatch.setattr(batch_reformulation.ChunkReformulator, "run", dies_on_second_chunk)
    out = tmp_path / "out.parquet"
    with pytest.raises(KeyboardInterrupt):
        reformulate(model_dir, queries, out, settings, progress=False)
    parts = tmp_path / "out.parquet.parts"
    assert sorted(p.name for p in parts.glob("part-*")) == ["part-00000.parquet"] and not out.exists()
    with pytest.raises(InvalidInputError, match="other settings"):
        reformulate(
            model_dir, queries, out, ReformulationSettings(batch_size=4, chunk_size=6), progress=False
        )
    monkeypatch.setattr(batch_reformulation.ChunkReformulator, "run", real_run)
    summary = reformulate(model_dir, queries, out, settings, progress=False)
    assert summary["chunks_resumed"] == 1 and summary["rows_this_run"] == 7 and summary["rows"] == 12
    assert pq.read_table(out).equals(pq.read_table(reference))


def test_bad_inputs_are_named(model_dir, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1\tfine\nno tab here\n")
    with pytest.raises(CorpusFormatError, match=r"bad.tsv:2: expected id<TAB>text"):
        plan_chunks(bad, 10)
    (tmp_path / "latin.txt").write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(CorpusFormatError, match=r"latin.txt:2: not valid UTF-8"):
        plan_chunks(tmp_path / "latin.txt", 10)
    (tmp_path / "x.csv").write_text("a\n")
    with pytest.raises(InvalidInputError, match="unknown extension"):
        plan_chunks(tmp_path / "x.csv", 10)
    with pytest.raises(InvalidInputError, match="must end in .parquet"):
        reformulate(model_dir, tmp_path / "latin.txt", tmp_path / "out.csv")
    (tmp_path / "taken.parquet.parts").mkdir()
    (tmp_path / "taken.parquet.parts" / "mine.txt").write_text("x")
    good = tmp_path / "good.txt"
    good.write_text("graffiti fonts\n\nberlin\n")
    with pytest.raises(OutputExistsError, match="not the parts folder"):
        reformulate(model_dir, good, tmp_path / "taken.parquet", progress=False)
    chunks, _ = plan_chunks(good, 2)
    assert [(c.rows, c.first_line, c.first_row) for c in chunks] == [(2, 1, 0), (1, 3, 2)]
    summary = reformulate(model_dir, good, tmp_path / "good.parquet", progress=False)
    table = pq.read_table(tmp_path / "good.parquet").to_pydict()
    assert table["id"] == ["0", "1", "2"] and table["input"][1] == "" and summary["rows"] == 3
