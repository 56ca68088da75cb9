"""Word vectors trained on texts (gensim), shared by the tasks' resources and the baselines."""

from __future__ import annotations

from collections.abc import Iterable

from .text import normalize_for_matching


def train_word2vec(
    texts: Iterable[str],
    vector_size: int = 100,
    min_count: int = 2,
    seed: int = 0,
    epochs: int = 5,
    fasttext: bool = False,
):
    """gensim skip-gram word2vec on normalised texts (one worker: deterministic for a seed);
    ``fasttext=True``: skip-gram fastText, whose character n-grams give a vector to any word."""
    from gensim.models import FastText, Word2Vec

    sentences = [normalize_for_matching(t).split() for t in texts]
    model_class = FastText if fasttext else Word2Vec
    return model_class(
        sentences, vector_size=vector_size, min_count=min_count, sg=1, seed=seed, workers=1, epochs=epochs
    ).wv


__all__ = ["train_word2vec"]
