"""Keyword-to-question baselines of Ding & Balog ICTIR'18 Sec. 5.2.1: SDM and TBM.

* :class:`SDMBaseline` -- the best-matching question of the question corpus Q for the keyword query:
  the top hit of SDM retrieval (``hf_querygen.retrieval.Index``, ranker ``"sdm"``) over an index of
  Q; its upstream text is the output.
* :class:`TemplateBaseline` -- TBM, the template-based method of Dror et al. (2013) as the paper
  adapts it: the keyword-question pairs are our synthetic pairs (not a query log), term similarity
  is the cosine of gensim word2vec vectors trained on Q (not TF-IDF context vectors).

  1. Mining: for a pair (k, q) with keyword words k_1..k_n (phrases split into words, no repeats),
     every occurrence of k_i in q's words becomes slot i; a pair where some k_i does not occur in q
     gives no template. The template is stored with its keyword words and its arity n.
  2. Instantiation by arity: for a new query k' with n distinct words, the stored pairs of arity n
     are candidates. The stored keyword query k most similar to k' (first the cosine of the mean
     word vectors picks ``shortlist`` of them; then the best one-to-one alignment of k' words to k
     words by summed word similarity, Hungarian algorithm) gives the template; slot i is filled
     with the k' word aligned to k_i. Similarity of two words: 1 if equal, else the word2vec cosine
     (0 when either word has no vector).
  3. Fallback: where no template of arity n exists, the SDM baseline's question.

Both return one question per keyword query, as the paper ("we retrieve the best matching question
for each keyword query"). Two trivial rows that are not in the paper give the floor a model must beat:
:func:`echo_keyword_queries` (the keyword query unchanged) and :class:`FrameBaseline` (the keyword
query in the most frequent question frame of the training pairs, e.g. "what is X ?").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..corpora._base import normalize_for_matching
from ..errors import InvalidInputError
from ..tasks.k2q.questions import FRAME_SLOT, echo_keyword_queries, fill_frame
from ..word_vectors import train_word2vec  # exported here too: a TBM (TemplateBaseline) takes its vectors

__all__ = [
    "FrameBaseline",
    "SDMBaseline",
    "Template",
    "TemplateBaseline",
    "echo_keyword_queries",
    "mine_template",
    "question_frame",
    "train_word2vec",
]

SLOT = "\x00{}"  # a slot marker no normalised word can contain


class SDMBaseline:
    """Top SDM hit of an index of Q. ``texts[i]`` is the output for the index document with id ``ids[i]``."""

    def __init__(self, index, ids: Sequence[str], texts: Sequence[str], threads: int | None = None):
        if len(ids) != len(texts):
            raise InvalidInputError(f"SDMBaseline: {len(ids)} ids but {len(texts)} texts")
        self.index = index
        self.text_of = dict(zip(ids, texts, strict=True))
        self.threads = threads

    def generate(self, keyword_queries: Sequence[str]) -> list[str]:
        """One question per keyword query ("" when the query matches no indexed term)."""
        if isinstance(keyword_queries, str):
            raise InvalidInputError("SDMBaseline.generate: pass a list of keyword queries, not one string")
        # the index's analyzer may reject punctuation-only input: normalise like Q's texts
        queries = [normalize_for_matching(k) for k in keyword_queries]
        hits = self.index.search_batch(queries, k=1, ranker="sdm", threads=self.threads)
        return [self.text_of[h[0].id] if h else "" for h in hits]


@dataclass(frozen=True)
class Template:
    """A question with slots: ``tokens`` are words or ``SLOT.format(i)`` for keyword word i."""

    keywords: tuple[str, ...]
    tokens: tuple[str, ...]

    @property
    def arity(self) -> int:
        return len(self.keywords)

    def instantiate(self, words: Sequence[str]) -> str:
        """Fill slot i with ``words[i]``."""
        if len(words) != self.arity:
            raise InvalidInputError(f"Template.instantiate: {len(words)} words for arity {self.arity}")
        slots = {SLOT.format(i): w for i, w in enumerate(words)}
        return " ".join(slots.get(t, t) for t in self.tokens)


def _words(text: str) -> list[str]:
    """Distinct normalised words (``_``-joined phrase units count as their words)."""
    return list(dict.fromkeys(normalize_for_matching(text.replace("_", " ")).split()))


def mine_template(keyword_query: str, question: str) -> Template | None:
    """Step 1 of the module docstring; ``None`` when a keyword word does not occur in the question."""
    keywords = _words(keyword_query)
    tokens = normalize_for_matching(question).split()
    if not keywords or not set(keywords) <= set(tokens):
        return None
    slot_of = {w: SLOT.format(i) for i, w in enumerate(keywords)}
    return Template(tuple(keywords), tuple(slot_of.get(t, t) for t in tokens))


@dataclass
class TemplateBaseline:
    """TBM (module docstring). ``vectors``: gensim ``KeyedVectors`` (see :func:`train_word2vec`)."""

    vectors: object
    fallback: SDMBaseline | None = None
    shortlist: int = 50
    templates: dict[int, list[Template]] = field(default_factory=dict)
    _centroids: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def from_pairs(
        cls,
        keyword_queries: Sequence[str],
        questions: Sequence[str],
        vectors,
        fallback: SDMBaseline | None = None,
        shortlist: int = 50,
    ) -> TemplateBaseline:
        """Mine templates from (keyword query, question) pairs; one template per distinct token tuple."""
        if len(keyword_queries) != len(questions):
            raise InvalidInputError(
                f"TemplateBaseline: {len(keyword_queries)} keyword queries but {len(questions)} questions"
            )
        by_arity: dict[int, dict[tuple, Template]] = {}
        for k, q in zip(keyword_queries, questions, strict=True):
            template = mine_template(k, q)
            if template is not None:
                by_arity.setdefault(template.arity, {}).setdefault(
                    (template.keywords, template.tokens), template
                )
        model = cls(vectors=vectors, fallback=fallback, shortlist=shortlist)
        model.templates = {n: list(ts.values()) for n, ts in sorted(by_arity.items())}
        for n, ts in model.templates.items():
            model._centroids[n] = np.stack([model._mean_vector(t.keywords) for t in ts])
        return model

    def _vector(self, word: str) -> np.ndarray | None:
        return self.vectors[word] if word in self.vectors else None

    def _mean_vector(self, words: Sequence[str]) -> np.ndarray:
        """Unit-length mean of the words' vectors, shape (dim,) (zeros when none has a vector)."""
        vecs = [v for v in (self._vector(w) for w in words) if v is not None]
        if not vecs:
            return np.zeros(self.vectors.vector_size, dtype=np.float32)
        mean = np.mean(vecs, axis=0)
        norm = np.linalg.norm(mean)
        return mean / norm if norm > 0 else mean

    def word_similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Matrix S (len(a), len(b)): 1 for equal words, else word2vec cosine, 0 without vectors."""
        out = np.zeros((len(a), len(b)), dtype=np.float64)
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                if x == y:
                    out[i, j] = 1.0
                elif x in self.vectors and y in self.vectors:
                    out[i, j] = float(self.vectors.similarity(x, y))
        return out

    def best_template(self, keyword_query: str) -> tuple[Template, list[str], float] | None:
        """The template, its slot fillers (k' word per slot) and the mean aligned similarity, or None."""
        from scipy.optimize import linear_sum_assignment

        words = _words(keyword_query)
        candidates = self.templates.get(len(words))
        if not words or not candidates:
            return None
        # shortlist by the cosine of mean vectors (the "similar keyword queries" search of D)
        order = np.argsort(-(self._centroids[len(words)] @ self._mean_vector(words)), kind="stable")
        best = None
        for c in order[: self.shortlist]:
            template = candidates[c]
            sim = self.word_similarity(template.keywords, words)
            rows, cols = linear_sum_assignment(sim, maximize=True)
            score = float(sim[rows, cols].mean())
            if best is None or score > best[2]:
                fillers = [words[j] for j in cols[np.argsort(rows)]]
                best = (template, fillers, score)
        return best

    def generate(self, keyword_queries: Sequence[str]) -> list[str]:
        """One question per keyword query: the instantiated best template, else the SDM fallback."""
        if isinstance(keyword_queries, str):
            raise InvalidInputError(
                "TemplateBaseline.generate: pass a list of keyword queries, not one string"
            )
        outputs: list[str | None] = []
        for k in keyword_queries:
            best = self.best_template(k)
            outputs.append(best[0].instantiate(best[1]) if best is not None else None)
        missing = [i for i, o in enumerate(outputs) if o is None]
        if missing:
            fallback = (
                self.fallback.generate([keyword_queries[i] for i in missing])
                if self.fallback is not None
                else [""] * len(missing)
            )
            for i, text in zip(missing, fallback, strict=True):
                outputs[i] = text
        self.last_fallbacks = len(missing)
        return [o or "" for o in outputs]


# ---------------------------------------------------------------- trivial rows
#: the slot of a :class:`FrameBaseline` frame: the whole keyword query goes there


def question_frame(keyword_query: str, question: str) -> str | None:
    """The normalised question (no punctuation) with the maximal runs of keyword-query words replaced
    by one :data:`FRAME_SLOT` ("What is the capital of France?" for "capital france" -> "what is the X
    of X"); ``None`` when no keyword word occurs in the question."""
    keywords = set(_words(keyword_query))
    tokens = normalize_for_matching(question).split()
    frame: list[str] = []
    for token in tokens:
        if token in keywords:
            if not frame or frame[-1] != FRAME_SLOT:
                frame.append(FRAME_SLOT)
        else:
            frame.append(token)
    return " ".join(frame) if FRAME_SLOT in frame else None


@dataclass
class FrameBaseline:
    """The keyword query inside the most frequent one-slot question frame of training pairs
    (:func:`question_frame`; typically "what is X"): a trivial row that tells whether a model learnt
    more than wrapping the query in the commonest question words."""

    frame: str
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, keyword_queries: Sequence[str], questions: Sequence[str]) -> FrameBaseline:
        if len(keyword_queries) != len(questions):
            raise InvalidInputError(
                f"FrameBaseline.from_pairs: {len(keyword_queries)} queries, {len(questions)} questions"
            )
        counts: dict[str, int] = {}
        for keyword_query, question in zip(keyword_queries, questions, strict=True):
            frame = question_frame(keyword_query, question)
            if frame is not None and frame.split().count(FRAME_SLOT) == 1:
                counts[frame] = counts.get(frame, 0) + 1
        if not counts:
            raise InvalidInputError("FrameBaseline.from_pairs: no pair has a one-slot question frame")
        # most frequent first, ties by the frame text (deterministic)
        frame = min(counts, key=lambda f: (-counts[f], f))
        return cls(frame, counts)

    def generate(self, keyword_queries: Sequence[str]) -> list[str]:
        if isinstance(keyword_queries, str):
            raise InvalidInputError("FrameBaseline.generate: pass a list of keyword queries, not one string")
        return [fill_frame(self.frame, k) for k in keyword_queries]
