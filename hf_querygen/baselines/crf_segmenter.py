"""CRF query segmenter with CRFsuite (Lin et al. 2017, Sec. 3.2 and 4.1).

Each query word gets a BIO tag (``B`` starts a segment, ``I`` continues it; paper Table 1) and a
linear-chain CRF, P(y|x, lambda) proportional to exp(sum_i sum_j lambda_j f_j(y_{i-1}, y_i, x, i))
(paper Sec. 3.2), is trained by L-BFGS on the log-likelihood with L1 (``c1``) / L2 (``c2``)
penalties. Two feature sets:

* ``"paper"``: word uni-grams x_-2, x_-1, x, x_+1, x_+2 and bi-grams x_-1 x, x x_+1 (Sec. 4.1);
* ``"paper+corpus"``: adds what the paper's discussion says the CRF lacks: n-gram counts,
  Wikipedia-title membership, 1-/2-gram log probabilities, PMI of the 2-grams around the word, and
  POS tags (binned, so CRFsuite sees categorical attributes). They are read from a
  :class:`~hf_querygen.corpora.webis_qsec_10.SegmentationResources`: either the corpus's own feature
  files (which know only the n-grams of the corpus's 4,848 queries) or
  :meth:`hf_querygen.baselines.segmentation_features.TextStatistics.resources` (computed from text for
  any query, POS from an offline tagger). A query for which the resources know none of its words or
  2-grams gets a warning (once per segmenter): its features are "none", not silently zero.

python-crfsuite is an optional dependency (extra ``crf``) imported where it is used.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from hf_querygen.corpora._base import validation_mask
from hf_querygen.corpora.webis_qsec_10 import SegmentationResources
from hf_querygen.errors import InvalidInputError
from hf_querygen.metrics.segmentation_scores import segmentation_scores
from hf_querygen.tasks.segmentation import bio_to_breaks, breaks_to_bio, breaks_to_string, query_words
from hf_querygen.text import breaks_to_segments
from hf_querygen.utils import require_extra

FEATURE_SETS = ("paper", "paper+corpus")
#: (c1, c2) candidates: L1 only, L2 only, both (chosen on a validation part of the train folds)
REGULARIZATION_GRID: tuple[tuple[float, float], ...] = (
    (0.0, 0.01),
    (0.0, 0.1),
    (0.0, 1.0),
    (0.1, 0.0),
    (1.0, 0.0),
    (0.1, 0.1),
)


logger = logging.getLogger(__name__)


def train_crfsuite_bytes(trainer, params: dict) -> bytes:
    """Train a ``pycrfsuite.Trainer`` with ``params``; returns the model file's bytes (kept in memory)."""
    trainer.set_params(params)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        trainer.train(path)
        return Path(path).read_bytes()


def open_crfsuite_tagger(model_bytes: bytes | None, what: str):
    """A ``pycrfsuite.Tagger`` over model bytes (``what`` names the model in the not-trained error)."""
    if model_bytes is None:
        raise RuntimeError(f"the {what} is not trained: call fit() or load() first")
    pycrfsuite = _require_crfsuite()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        Path(path).write_bytes(model_bytes)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)  # CRFsuite reads the whole model into memory at open
    return tagger


#: what a ``paper+corpus`` CRF reads, for model cards and error messages
FEATURES_NEEDED = {
    "paper": "the query words only",
    "paper+corpus": "the query words; n-gram counts, 1-/2-gram log probabilities and PMI of the query's "
    "2-grams; Wikipedia-title n-grams; POS tags per word (SegmentationResources: the corpus feature "
    "files, which cover only the corpus's own queries, or TextStatistics(...).resources(pos_tagger) for "
    "any query)",
}


def resource_coverage(words: Sequence[str], resources: SegmentationResources) -> int:
    """How many of the query's words and adjacent 2-grams the resources have any value for (0: the
    resources know nothing about this query, and its corpus features would all be ``none``)."""
    hits = sum(w in resources.msn_unigram_logprob for w in words)
    for left, right in zip(words, words[1:], strict=False):
        bigram = f"{left} {right}"
        hits += bigram in resources.google_counts or bigram in resources.pmi
    return hits


def _require_crfsuite():
    return require_extra("pycrfsuite", "crf", "The CRF segmenter", package="python-crfsuite")


# ---------------------------------------------------------------- features
def paper_features(words: Sequence[str], i: int) -> dict[str, float]:
    """Uni-grams x_-2..x_+2 and bi-grams x_-1 x, x x_+1 of word ``i`` (paper Sec. 4.1)."""

    def word(offset: int) -> str:
        j = i + offset
        return words[j] if 0 <= j < len(words) else ("<s>" if j < 0 else "</s>")

    features = {"bias": 1.0}
    for offset in (-2, -1, 0, 1, 2):
        features[f"w[{offset}]={word(offset)}"] = 1.0
    features[f"w[-1]w[0]={word(-1)}|{word(0)}"] = 1.0
    features[f"w[0]w[1]={word(0)}|{word(1)}"] = 1.0
    return features


def _bin(value: float, width: float) -> int:
    return math.floor(value / width)


def _pair_features(prefix: str, left: str, right: str, resources: SegmentationResources) -> dict[str, float]:
    """Association of the 2-gram ``left right`` (the break position between them)."""
    bigram = f"{left} {right}"
    features: dict[str, float] = {}
    count = resources.google_counts.get(bigram)
    features[
        f"{prefix}.log10count=" + ("none" if count is None else str(_bin(math.log10(count + 1), 1.0)))
    ] = 1.0
    pmi = resources.pmi.get(bigram)
    features[f"{prefix}.pmi=" + ("none" if pmi is None else str(_bin(pmi, 1.0)))] = 1.0
    logprob = resources.msn_bigram_logprob.get(bigram)
    features[f"{prefix}.msn2=" + ("none" if logprob is None else str(_bin(logprob, 1.0)))] = 1.0
    if bigram in resources.wikipedia_titles:
        features[f"{prefix}.title2"] = 1.0
    return features


def _title_cover(words: Sequence[str], titles: set[str]) -> list[bool]:
    """For each break position i: does a Wikipedia title n-gram of the query span words i, i+1?"""
    covered = [False] * (len(words) - 1)
    for start in range(len(words)):
        for end in range(start + 2, min(len(words), start + 7) + 1):
            if " ".join(words[start:end]) in titles:
                for i in range(start, end - 1):
                    covered[i] = True
    return covered


def corpus_features(
    words: Sequence[str],
    i: int,
    resources: SegmentationResources,
    pos_tags: Sequence[str] | None,
    title_cover: Sequence[bool],
) -> dict[str, float]:
    """The corpus's web-frequency, Wikipedia, PMI and POS knowledge about word ``i``."""
    features: dict[str, float] = {}
    logprob = resources.msn_unigram_logprob.get(words[i])
    features["msn1=" + ("none" if logprob is None else str(_bin(logprob, 1.0)))] = 1.0
    if i > 0:
        features.update(_pair_features("left", words[i - 1], words[i], resources))
        features[f"left.in_title={title_cover[i - 1]}"] = 1.0
    if i < len(words) - 1:
        features.update(_pair_features("right", words[i], words[i + 1], resources))
        features[f"right.in_title={title_cover[i]}"] = 1.0
    if pos_tags is not None:
        for offset in (-1, 0, 1):
            j = i + offset
            tag = pos_tags[j] if 0 <= j < len(pos_tags) else "<none>"
            features[f"pos[{offset}]={tag}"] = 1.0
        features[f"pos[-1]pos[0]={pos_tags[i - 1] if i else '<s>'}|{pos_tags[i]}"] = 1.0
    return features


# ---------------------------------------------------------------- model
@dataclass
class CRFSettings:
    feature_set: str = "paper"
    c1: float = 0.0
    c2: float = 0.1
    max_iterations: int = 200


class CRFSegmenter:
    """BIO-tagging CRF segmenter. ``fit`` on word lists + break vectors, ``segment`` query strings.

    With ``feature_set="paper+corpus"`` pass the corpus ``resources``; POS tags come from
    ``pos_tags`` given per query (the corpus's query POS file, used when it has one tag per word).
    """

    def __init__(self, settings: CRFSettings | None = None, resources: SegmentationResources | None = None):
        self.settings = settings or CRFSettings()
        if self.settings.feature_set not in FEATURE_SETS:
            raise ValueError(f"feature_set {self.settings.feature_set!r} is not one of {FEATURE_SETS}")
        if self.settings.feature_set == "paper+corpus" and resources is None:
            raise ValueError(
                "feature_set 'paper+corpus' needs the corpus resources (load_segmentation_resources())"
            )
        self.resources = resources
        self._model_bytes: bytes | None = None
        self._tagger = None
        self._warned_missing = False

    @property
    def uses_corpus_features(self) -> bool:
        return self.settings.feature_set == "paper+corpus"

    def pos_tags_for(
        self, word_lists: Sequence[Sequence[str]], pos_tag_lists: Sequence[Sequence[str] | None] | None
    ) -> list[Sequence[str] | None]:
        """The given POS tags; for a query without them, the resources' offline tagger's (if any)."""
        given = list(pos_tag_lists) if pos_tag_lists is not None else [None] * len(word_lists)
        tagger = getattr(self.resources, "pos_tagger", None) if self.uses_corpus_features else None
        missing = [i for i, tags in enumerate(given) if tags is None]
        if tagger is not None and missing:
            for i, tags in zip(missing, tagger.tag([word_lists[i] for i in missing]), strict=True):
                given[i] = tags
        return given

    def check_coverage(self, word_lists: Sequence[Sequence[str]]) -> int:
        """Warn (once per segmenter) when the resources know nothing about some queries; returns how many."""
        if not self.uses_corpus_features:
            return 0
        blind = [words for words in word_lists if len(words) and not resource_coverage(words, self.resources)]
        if blind:
            message = (
                f"CRF segmenter: {len(blind)} of {len(word_lists)} queries have none of the corpus features "
                f"(no n-gram count, log probability or PMI for any of their words and 2-grams, e.g. "
                f"{' '.join(blind[0])!r}) in {self.resources.source}; they are segmented from their words"
                + ("" if getattr(self.resources, "pos_tagger", None) else " alone")
                + ". Build features that exist for any query with "
                "hf_querygen.baselines.segmentation_features.default_statistics().resources(pos_tagger)."
            )
            logger.info(message)
            if not self._warned_missing:
                warnings.warn(message, UserWarning, stacklevel=3)
                self._warned_missing = True
        return len(blind)

    # -- features
    def item_features(
        self, words: Sequence[str], pos_tags: Sequence[str] | None = None
    ) -> list[dict[str, float]]:
        """One feature dict per word."""
        if pos_tags is not None and len(pos_tags) != len(words):
            pos_tags = None  # the tagger split this query differently; no POS rather than misaligned POS
        items = [paper_features(words, i) for i in range(len(words))]
        if self.settings.feature_set == "paper+corpus":
            cover = _title_cover(words, self.resources.wikipedia_titles)
            for i, item in enumerate(items):
                item.update(corpus_features(words, i, self.resources, pos_tags, cover))
        return items

    # -- training / inference
    def fit(
        self,
        word_lists: Sequence[Sequence[str]],
        break_lists: Sequence[Sequence[int]],
        pos_tag_lists: Sequence[Sequence[str] | None] | None = None,
    ) -> CRFSegmenter:
        pycrfsuite = _require_crfsuite()
        if len(word_lists) != len(break_lists):
            raise ValueError(f"{len(word_lists)} queries but {len(break_lists)} break vectors")
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        pos_tag_lists = self.pos_tags_for(word_lists, pos_tag_lists)
        for words, breaks, pos_tags in zip(word_lists, break_lists, pos_tag_lists, strict=True):
            trainer.append(
                pycrfsuite.ItemSequence(self.item_features(words, pos_tags)), breaks_to_bio(breaks)
            )
        params = {
            "c1": self.settings.c1,
            "c2": self.settings.c2,
            "max_iterations": self.settings.max_iterations,
            "feature.possible_transitions": True,
        }
        self._model_bytes = train_crfsuite_bytes(trainer, params)
        self._tagger = None
        return self

    def _get_tagger(self):
        if self._tagger is None:
            self._tagger = open_crfsuite_tagger(self._model_bytes, "CRF segmenter")
        return self._tagger

    def predict_breaks(
        self, word_lists: Sequence[Sequence[str]], pos_tag_lists: Sequence[Sequence[str] | None] | None = None
    ) -> list[list[int]]:
        pycrfsuite = _require_crfsuite()
        tagger = self._get_tagger()
        self.check_coverage(word_lists)
        pos_tag_lists = self.pos_tags_for(word_lists, pos_tag_lists)
        return [
            bio_to_breaks(tagger.tag(pycrfsuite.ItemSequence(self.item_features(words, pos_tags))))
            for words, pos_tags in zip(word_lists, pos_tag_lists, strict=True)
        ]

    def segment(self, queries: Sequence[str]) -> list[list[str]]:
        """The segments of each query, as ``pipeline("query-segmentation")`` returns them
        (``[["new york city", "hotels"]]``; POS from the resources' tagger, when they have one).
        ``"|".join(segments)`` is the corpus's ``|`` notation."""
        if isinstance(queries, str):
            raise InvalidInputError("segment() takes a list of queries, got one string")
        word_lists = [query_words(query) for query in queries]
        return [
            breaks_to_segments(w, b) for w, b in zip(word_lists, self.predict_breaks(word_lists), strict=True)
        ]

    # -- persistence
    def save(self, directory: str | os.PathLike) -> Path:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        if self._model_bytes is None:
            raise RuntimeError("nothing to save: the CRF segmenter is not trained")
        (out / "model.crfsuite").write_bytes(self._model_bytes)
        (out / "crf_settings.json").write_text(json.dumps(asdict(self.settings), indent=2) + "\n")
        source = getattr(self.resources, "source", None) if self.uses_corpus_features else None
        (out / "README.md").write_text(
            "# CRF query segmenter (hf-querygen; Lin et al. 2017, Sec. 3.2)\n\n"
            f"Feature set `{self.settings.feature_set}`, c1={self.settings.c1}, c2={self.settings.c2}.\n\n"
            f"Features this model needs: {FEATURES_NEEDED[self.settings.feature_set]}.\n"
            + (
                f"\nTrained with features from: {source}. Load it with the same kind of resources.\n"
                if source
                else ""
            )
        )
        return out

    @classmethod
    def load(
        cls, directory: str | os.PathLike, resources: SegmentationResources | None = None
    ) -> CRFSegmenter:
        folder = Path(directory)
        settings = CRFSettings(**json.loads((folder / "crf_settings.json").read_text()))
        segmenter = cls(settings, resources)
        segmenter._model_bytes = (folder / "model.crfsuite").read_bytes()
        return segmenter


def select_regularization(
    word_lists: Sequence[Sequence[str]],
    break_lists: Sequence[Sequence[int]],
    keys: Sequence[str],
    feature_set: str = "paper",
    resources: SegmentationResources | None = None,
    pos_tag_lists: Sequence[Sequence[str] | None] | None = None,
    grid: Sequence[tuple[float, float]] = REGULARIZATION_GRID,
    validation_fraction: float = 0.15,
    max_iterations: int = 200,
) -> tuple[CRFSettings, list[dict]]:
    """Pick (c1, c2) by query accuracy (then break accuracy) on a held-out part of the given
    training data; returns the chosen settings and every candidate's validation scores."""
    held_out = validation_mask(keys, validation_fraction)
    pos_tag_lists = pos_tag_lists or [None] * len(word_lists)

    def part(values, keep):
        return [v for v, h in zip(values, held_out, strict=True) if h == keep]

    train_words, valid_words = part(word_lists, False), part(word_lists, True)
    train_breaks, valid_breaks = part(break_lists, False), part(break_lists, True)
    train_pos, valid_pos = part(pos_tag_lists, False), part(pos_tag_lists, True)
    if not valid_words or not train_words:
        raise ValueError(
            f"validation_fraction {validation_fraction} leaves an empty train or validation part"
        )
    references = [breaks_to_string(w, b) for w, b in zip(valid_words, valid_breaks, strict=True)]
    trials = []
    for c1, c2 in grid:
        settings = CRFSettings(feature_set, c1, c2, max_iterations)
        model = CRFSegmenter(settings, resources).fit(train_words, train_breaks, train_pos)
        predicted = model.predict_breaks(valid_words, valid_pos)
        scores = segmentation_scores(
            [breaks_to_string(w, b) for w, b in zip(valid_words, predicted, strict=True)], references
        )
        trials.append({"c1": c1, "c2": c2, **scores})
    best = max(trials, key=lambda t: (t["query_accuracy"], t["break_accuracy"]))
    return CRFSettings(feature_set, best["c1"], best["c2"], max_iterations), trials
