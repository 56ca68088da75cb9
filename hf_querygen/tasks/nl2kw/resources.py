"""Out-of-corpus resources for nl2kw (the levers for topics unseen in training): in-domain question
texts, the K2Q synthetic question -> keyword-query pairs, and word vectors trained on them.

Every resource is built from ``../shared/data`` (``data_dir``) and never sees nl2kw's validation or
test questions: questions whose normalised text equals one of theirs are removed (and counted), so
neither model selection nor the test score can profit from a copy of an evaluation question.

* :func:`in_domain_texts`: the question corpus Q of the keyword-to-question pipeline (the wikianswers
  stand-ins: ComQA, Paralex, Quora, well-formed queries; 51,657 questions), minus nl2kw validation/test;
* :func:`synthetic_pairs`: Ding & Balog's generator (:mod:`hf_querygen.synthetic`: KQGM with
  paraphrases + phrases, KQF with SDM, TDF) run over Q, as ``nl_query`` / ``keyword_query`` pairs.
  The dataset folder is built once (about 10 minutes on 2 cores) under ``cache_dir`` and reused;
* :func:`word_vectors`: gensim word2vec / fastText on Q + nl2kw TRAIN, cached on disk.

Cache folders: ``cache_dir`` argument, else ``$HF_QUERYGEN_SYNTHETIC_DIR`` (the synthetic dataset
folder itself) / ``$HF_QUERYGEN_CACHE`` (default ``~/.cache/hf_querygen``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError
from ...text import normalize_for_matching
from ...word_vectors import train_word2vec

if TYPE_CHECKING:
    import datasets

#: the generator configuration of the K2Q issue's synthetic set (Table 1's best KQGM: combination
#: strategy, paraphrase mixture alpha 0.1 / beta 0.9, phrases; KQF m = 20 with SDM, N = 100)
SYNTHETIC_KQGM = {
    "strategy": "combination",
    "paraphrase": True,
    "phrases": True,
    "lam": 0.1,
    "alpha": 0.1,
    "beta": 0.9,
}
SYNTHETIC_SETTINGS = {"seed": 0, "num_candidates": 20, "top_n": 100, "shard_size": 5000}
#: ``word_vectors(kind=...)``
WORD_VECTOR_KINDS = ("word2vec", "fasttext")


def cache_root() -> Path:
    return Path(os.environ.get("HF_QUERYGEN_CACHE") or Path.home() / ".cache" / "hf_querygen")


def _evaluation_questions(splits: Any) -> set[str]:
    """Normalised nl2kw validation and test questions (what no resource may contain)."""
    held_out = set()
    for split in ("validation", "test"):
        if split in splits:
            held_out.update(normalize_for_matching(q) for q in splits[split]["nl_query"])
    return held_out


@functools.lru_cache(maxsize=2)
def _question_corpus(data_dir: str | None) -> tuple[str, ...]:
    from ...synthetic.corpus import build_question_corpus

    return tuple(build_question_corpus(data_dir).questions["question"])


def in_domain_texts(splits: Any, data_dir: str | os.PathLike | None = None) -> list[str]:
    """The questions of Q (see the module docstring) except nl2kw validation / test questions."""
    held_out = _evaluation_questions(splits)
    return [
        q
        for q in _question_corpus(None if data_dir is None else str(data_dir))
        if normalize_for_matching(q) not in held_out
    ]


def _synthesis_config():
    from ...synthetic.kqgm import KQGMConfig
    from ...synthetic.pipeline import SynthesisConfig

    return SynthesisConfig(kqgm=KQGMConfig(**SYNTHETIC_KQGM), **SYNTHETIC_SETTINGS)


def synthetic_dataset_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where the synthetic dataset folder lives (see the module docstring)."""
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get("HF_QUERYGEN_SYNTHETIC_DIR"):
        return Path(os.environ["HF_QUERYGEN_SYNTHETIC_DIR"])
    return cache_root() / "k2q-synthetic"


def build_synthetic_dataset(
    data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> datasets.Dataset:
    """The K2Q synthetic pairs over Q (all columns of :data:`hf_querygen.synthetic.pipeline.FEATURES`).

    A complete folder whose ``synthesis.json`` has this configuration is read as it is (read-only);
    otherwise the retrieval index of Q is built beside it and :func:`hf_querygen.synthetic.synthesize`
    runs (resumable shard by shard)."""
    import datasets

    out = synthetic_dataset_dir(cache_dir)
    config = _synthesis_config()
    manifest = out / "synthesis.json"
    if manifest.is_file() and (out / "README.md").is_file():
        found = json.loads(manifest.read_text(encoding="utf-8"))
        wanted = {k: v for k, v in config.to_dict().items() if k not in ("num_proc", "threads", "batch_size")}
        if found.get("config") != json.loads(json.dumps(wanted)) or not found.get("kqf_tdf"):
            raise InvalidInputError(
                f"synthetic pairs: {out} holds a run with another configuration ({found.get('config')}); "
                "pass another cache_dir"
            )
        return datasets.load_dataset(str(out), "all", split="train")
    from ...retrieval import Index
    from ...retrieval.manifest import IndexFormatError

    # P(s) of the KQGM: the keyword-query lengths of the seed pairs' train split
    from ...synthetic.corpus import build_question_corpus, seed_length_prior
    from ...synthetic.pipeline import synthesize

    corpus = build_question_corpus(data_dir)
    index_path = out.parent / f"{out.name}-index"
    index = None
    if index_path.exists():
        with contextlib.suppress(IndexFormatError):  # an older format: rebuilt below
            index = Index.open(index_path)
    if index is None:
        index = Index.from_texts(
            corpus.questions["text"], ids=corpus.questions["id"], path=index_path, overwrite=True
        )
    return synthesize(corpus.questions, out, config, seed_length_prior(data_dir), index)


def synthetic_pairs(
    splits: Any, data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> tuple[datasets.Dataset, dict[str, int]]:
    """Synthetic pairs as ``nl_query`` / ``keyword_query`` rows, without nl2kw validation / test
    questions; returns the dataset and counts (``synthetic_pairs``, ``removed_evaluation_questions``)."""
    full = build_synthetic_dataset(data_dir, cache_dir)
    held_out = _evaluation_questions(splits)
    keep = [i for i, q in enumerate(full["question"]) if normalize_for_matching(q) not in held_out]
    pairs = (
        full.select(keep).select_columns(["question", "keyword_query"]).rename_column("question", "nl_query")
    )
    pairs = pairs.filter(lambda row: bool(normalize_for_matching(row["keyword_query"])))
    return pairs, {"synthetic_pairs": len(full), "removed_evaluation_questions": len(full) - len(keep)}


def word_vectors(
    splits: Any,
    kind: str = "word2vec",
    vector_size: int = 60,
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    epochs: int = 5,
    cache_dir: str | os.PathLike | None = None,
):
    """gensim ``KeyedVectors`` (skip-gram word2vec or fastText, ``vector_size`` dimensions) trained on
    normalised Q questions + nl2kw TRAIN questions and keyword queries; cached under ``cache_dir``
    (default ``$HF_QUERYGEN_CACHE/word-vectors``) by a hash of the texts and settings."""
    if kind not in WORD_VECTOR_KINDS:
        raise InvalidInputError(f"word_vectors: kind {kind!r} is not one of {WORD_VECTOR_KINDS}")
    texts = (
        in_domain_texts(splits, data_dir)
        + list(splits["train"]["nl_query"])
        + list(splits["train"]["keyword_query"])
    )
    key = hashlib.sha1(json.dumps([kind, vector_size, seed, epochs, texts]).encode("utf-8")).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else cache_root() / "word-vectors"
    path = folder / f"{kind}-{vector_size}-{key}.kv"
    from gensim.models import KeyedVectors

    if path.is_file():
        return KeyedVectors.load(str(path))
    vectors = train_word2vec(
        texts, vector_size=vector_size, seed=seed, epochs=epochs, fasttext=kind == "fasttext"
    )
    folder.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(f".tmp{os.getpid()}")
    vectors.save(str(staging))
    for produced in folder.glob(staging.name + "*"):  # gensim may write .npy sidecars
        produced.rename(folder / produced.name.replace(staging.name, path.name))
    return vectors


def load_word_vectors(
    embedding: Any, vocabulary: dict[str, int], vectors: Any, freeze: bool = False
) -> dict[str, float]:
    """Copy ``vectors[word]`` into row ``vocabulary[word]`` of ``embedding`` (an ``nn.Embedding`` (V, E))
    for every word that has a vector (fastText: every word, through its subwords); rows of special
    tokens and words without a vector keep their initialisation. Vectors are rescaled to the rows'
    current standard deviation so the encoder sees inputs of the scale it was initialised for.
    ``freeze`` stops gradient updates of the whole table. Returns coverage counts."""
    import numpy as np
    import torch

    weight = embedding.weight
    if vectors.vector_size != weight.shape[1]:
        raise InvalidInputError(
            f"load_word_vectors: vectors have {vectors.vector_size} dimensions, "
            f"the embedding {weight.shape[1]}"
        )
    rows, values = [], []
    subwords = hasattr(vectors, "buckets_word") or type(vectors).__name__ == "FastTextKeyedVectors"
    for word, index in vocabulary.items():
        if word.startswith("[") and word.endswith("]"):
            continue
        if index < weight.shape[0] and (word in vectors.key_to_index or subwords):
            rows.append(index)
            values.append(vectors[word])
    if rows:
        matrix = np.asarray(values, dtype=np.float32)
        matrix *= float(weight.detach().std()) / max(float(matrix.std()), 1e-8)
        with torch.no_grad():
            weight[torch.as_tensor(rows)] = torch.from_numpy(matrix).to(weight.dtype)
    weight.requires_grad_(not freeze)
    return {"rows_with_vectors": len(rows), "rows": int(weight.shape[0])}


__all__ = [
    "SYNTHETIC_KQGM",
    "SYNTHETIC_SETTINGS",
    "WORD_VECTOR_KINDS",
    "build_synthetic_dataset",
    "in_domain_texts",
    "load_word_vectors",
    "synthetic_dataset_dir",
    "synthetic_pairs",
    "word_vectors",
]
