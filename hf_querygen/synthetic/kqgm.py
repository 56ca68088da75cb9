"""Keyword query generation model, KQGM (Ding & Balog ICTIR'18 Sec. 3.1, Algorithm 1).

For a question q with terms (or phrase units, Sec. 3.1.4) the term model P(t|theta_q) is

* baseline (Azzopardi et al.), Eq. (1): ``(1 - lambda) P(t|q) + lambda P(t)``,
* paraphrase-based, Eq. (6): ``alpha P(t|q) + beta P(t|C_q) + (1 - alpha - beta) P(t)``,

with the collection model P(t) of Eq. (2) and P(t|q) (and P(t|C_q), C_q's questions concatenated
into one document) by one of three term selection strategies: popular Eq. (3), discriminative
Eq. (4), combination Eq. (5) (:func:`term_distribution`).

Algorithm 1 as implemented by :class:`KeywordQueryGenerator`: the length s is drawn from P(s) over
[3, 7] restricted to s < |q| (:class:`LengthPrior`); then s terms are drawn one by one from
P(t|theta_q), where every question word (WH-word, Sec. 3.1.2) has probability 0 and a drawn term is
set to 0 (line 9: no repeated terms); the zeroed mixture is renormalised, i.e. a draw is from
P(t|theta_q) conditioned on "not excluded". The draw is exact and cheap: the mass of the
question's own terms (q and C_q) is handled explicitly, the rest of the collection component by
rejection sampling from P(t) (the excluded terms hold a small share of P(t)).

Everything random comes from a ``numpy.random.Generator`` the caller seeds (the pipeline seeds one
per question from the run seed and the question id), so a run is deterministic for a seed.

P(t|C_q) for a question without paraphrases: C_q is the paraphrase *cluster* of q, q included
(Sec. 5.1), so for a singleton cluster P(t|C_q) = P(t|q).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..corpora.wikianswers import WH_WORDS
from ..errors import InvalidInputError
from .phrases import phrase_words

__all__ = [
    "QUESTION_WORDS",
    "STRATEGIES",
    "CollectionStatistics",
    "KQGMConfig",
    "KeywordQueryGenerator",
    "LengthPrior",
    "PreparedQuestion",
    "keyword_string",
    "stable_seed",
    "term_distribution",
]

STRATEGIES: tuple[str, ...] = ("popular", "discriminative", "combination")
# Sec. 3.1.2: "keyword queries typically do not contain question words, such as how, what, where,
# who, why, when, etc."
QUESTION_WORDS: frozenset[str] = WH_WORDS
MIN_LENGTH, MAX_LENGTH = 3, 7  # Sec. 5: s in [3, 7]


@dataclass(frozen=True)
class KQGMConfig:
    """One KQGM configuration of Table 1 plus its mixture weights.

    ``lam`` is lambda of Eq. (1) (baseline model); ``alpha``/``beta`` are Eq. (6)'s (paraphrase model).
    """

    strategy: str = "combination"
    paraphrase: bool = True
    phrases: bool = True
    lam: float = 0.5
    alpha: float = 0.5
    beta: float = 0.3

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise InvalidInputError(f"KQGMConfig.strategy: {self.strategy!r} is not one of {STRATEGIES}")
        for name, value in (("lam", self.lam), ("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 <= value <= 1.0:
                raise InvalidInputError(f"KQGMConfig.{name} must be in [0, 1], got {value}")
        if self.paraphrase and self.alpha + self.beta > 1.0 + 1e-9:
            raise InvalidInputError(f"KQGMConfig: alpha + beta = {self.alpha + self.beta} > 1 (Eq. 6)")

    @property
    def weights(self) -> tuple[float, float, float]:
        """(weight of P(t|q), of P(t|C_q), of P(t)): Eq. (1) or Eq. (6)."""
        if self.paraphrase:
            return self.alpha, self.beta, max(0.0, 1.0 - self.alpha - self.beta)
        return 1.0 - self.lam, 0.0, self.lam

    @property
    def name(self) -> str:
        model = "paraphrase" if self.paraphrase else "baseline"
        return f"{model}{'+phrases' if self.phrases else ''}/{self.strategy}"

    def to_dict(self) -> dict:
        return asdict(self)


class CollectionStatistics:
    """Collection term frequencies n(t), question frequencies df(t), N and the vocabulary V.

    Built from tokenised questions (lists of units). ``cf``/``df`` are int64 arrays indexed by
    ``vocab[term]``; P(t) = cf / total (Eq. 2).
    """

    def __init__(self, vocab: dict[str, int], cf: np.ndarray, df: np.ndarray, num_docs: int):
        self.vocab, self.cf, self.df, self.num_docs = (
            vocab,
            cf.astype(np.int64),
            df.astype(np.int64),
            num_docs,
        )
        self.total = int(self.cf.sum())
        self.terms = [None] * len(vocab)
        for term, index in vocab.items():
            self.terms[index] = term
        self.cumulative = np.cumsum(self.cf)

    @classmethod
    def from_documents(cls, documents: Iterable[Sequence[str]]) -> CollectionStatistics:
        cf: Counter = Counter()
        df: Counter = Counter()
        num_docs = 0
        for doc in documents:
            cf.update(doc)
            df.update(set(doc))
            num_docs += 1
        vocab = {t: i for i, t in enumerate(sorted(cf))}
        cf_arr = np.zeros(len(vocab), dtype=np.int64)
        df_arr = np.zeros(len(vocab), dtype=np.int64)
        for t, i in vocab.items():
            cf_arr[i], df_arr[i] = cf[t], df[t]
        return cls(vocab, cf_arr, df_arr, num_docs)

    def counts(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(n(t), df(t)) of ``terms`` (0 for terms outside V)."""
        idx = [self.vocab.get(t, -1) for t in terms]
        cf = np.array([self.cf[i] if i >= 0 else 0 for i in idx], dtype=np.float64)
        df = np.array([self.df[i] if i >= 0 else 0 for i in idx], dtype=np.float64)
        return cf, df

    def probability(self, term: str) -> float:
        """P(t), Eq. (2)."""
        i = self.vocab.get(term, -1)
        return float(self.cf[i]) / self.total if i >= 0 else 0.0

    def sample(self, rng: np.random.Generator) -> str:
        """One term drawn from P(t) (Eq. 2)."""
        return self.terms[int(np.searchsorted(self.cumulative, rng.random() * self.total, side="right"))]


def term_distribution(
    document: Sequence[str],
    strategy: str,
    stats: CollectionStatistics,
    in_collection: bool = True,
    support: Sequence[str] | None = None,
) -> tuple[list[str], np.ndarray]:
    """P(t|d) over the distinct terms of ``document`` (or over ``support``, zero outside d).

    - popular, Eq. (3): n(t,d) / sum_t' n(t',d)
    - discriminative, Eq. (4): (b(t,d) / P(t)) / sum_t' b(t',d) / P(t')
    - combination, Eq. (5): n(t,d) log(N/df(t)) / sum_t' n(t',d) log(N/df(t'))

    ``in_collection=False`` (a question that is not in Q, e.g. a T_0 question) adds the document to
    the collection statistics (n(t) += n(t,d), df(t) += 1, N += 1), so that P(t) and df(t) of its
    unseen terms are not zero. Where Eq. (5)'s weights are all 0 (every term in every question) the
    popular distribution is returned. Returns (terms, probabilities) with probabilities summing to 1.
    """
    if strategy not in STRATEGIES:
        raise InvalidInputError(f"term_distribution: strategy {strategy!r} is not one of {STRATEGIES}")
    if not document:
        raise InvalidInputError("term_distribution: empty document")
    tf = Counter(document)
    terms = list(support) if support is not None else list(tf)
    n = np.array([tf.get(t, 0) for t in terms], dtype=np.float64)
    cf, df = stats.counts(terms)
    total, num_docs = float(stats.total), float(stats.num_docs)
    if not in_collection:
        cf, df = cf + n, df + (n > 0)
        total, num_docs = total + len(document), num_docs + 1
    if strategy == "popular":
        weights = n
    elif strategy == "discriminative":
        present = n > 0
        if np.any(present & (cf == 0)):
            missing = [t for t, p, c in zip(terms, present, cf, strict=True) if p and c == 0]
            raise InvalidInputError(
                f"term_distribution: terms {missing[:5]} have P(t) = 0 (not in the collection); "
                "pass in_collection=False for a document outside Q"
            )
        weights = np.where(present, 1.0 / np.where(present, cf / total, 1.0), 0.0)
    else:
        with np.errstate(divide="ignore"):
            idf = np.where(n > 0, np.log(num_docs / np.maximum(df, 1.0)), 0.0)
        weights = n * idf
        if weights.sum() <= 0:
            weights = n
    return terms, weights / weights.sum()


class LengthPrior:
    """P(s) over s in [min_length, max_length] (Sec. 5: [3, 7]), estimated from keyword queries.

    Estimated on T_0 train: the share of keyword queries of each length in the range, add-one
    smoothed so that every allowed length stays possible. ``sample(rng, question_length)`` draws
    from P(s | s < |q|) (Algorithm 1 line 5-6). When no allowed s is below |q| (questions of 3
    terms or fewer), s = |q| - 1 (at least 1): the keyword query stays shorter than the question.
    """

    def __init__(self, probabilities: dict[int, float]):
        if not probabilities or any(p < 0 for p in probabilities.values()):
            raise InvalidInputError("LengthPrior: needs non-negative probabilities for at least one length")
        self.lengths = np.array(sorted(probabilities), dtype=np.int64)
        p = np.array([probabilities[s] for s in self.lengths], dtype=np.float64)
        self.probabilities = p / p.sum()

    @classmethod
    def from_lengths(
        cls, lengths: Iterable[int], min_length: int = MIN_LENGTH, max_length: int = MAX_LENGTH
    ) -> LengthPrior:
        counts = Counter(int(s) for s in lengths if min_length <= s <= max_length)
        return cls({s: counts.get(s, 0) + 1.0 for s in range(min_length, max_length + 1)})

    def as_dict(self) -> dict[int, float]:
        return {int(s): float(p) for s, p in zip(self.lengths, self.probabilities, strict=True)}

    def sample(self, rng: np.random.Generator, question_length: int) -> int:
        allowed = self.lengths < question_length
        if not allowed.any():
            return max(1, question_length - 1)
        p = np.where(allowed, self.probabilities, 0.0)
        return int(self.lengths[np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right")])


@dataclass
class PreparedQuestion:
    """A question's precomputed term model (reused over grid points and candidates).

    ``support``: the distinct units of q and C_q; ``p_q``, ``p_c``, ``p_coll``: P(t|q), P(t|C_q) and
    P(t) on ``support`` (arrays of shape (len(support),)); ``excluded_outside``: P(t) mass of the
    question words outside ``support``; ``length``: |q| in units.
    """

    support: list[str]
    p_q: np.ndarray
    p_c: np.ndarray
    p_coll: np.ndarray
    blocked: np.ndarray
    excluded_outside: float
    length: int


class KeywordQueryGenerator:
    """Algorithm 1 for one KQGM configuration (see the module docstring).

    ``stats`` must be built from Q tokenised the same way as the questions passed in (with the
    phrase detector's units when ``config.phrases``).
    """

    def __init__(
        self,
        stats: CollectionStatistics,
        config: KQGMConfig,
        length_prior: LengthPrior,
        phrase_detector=None,
    ):
        if config.phrases and phrase_detector is None:
            raise InvalidInputError(f"KeywordQueryGenerator: {config.name} needs a phrase detector")
        self.stats, self.config, self.length_prior = stats, config, length_prior
        self.phrase_detector = phrase_detector if config.phrases else None
        self._question_word_mass = sum(stats.probability(w) for w in QUESTION_WORDS)

    def units(self, text: str) -> list[str]:
        """Normalised text -> units (terms, or phrases when the configuration detects them)."""
        terms = text.split()
        return self.phrase_detector.transform(terms) if self.phrase_detector is not None else terms

    def prepare(
        self, text: str, paraphrases: Sequence[str] = (), in_collection: bool = True
    ) -> PreparedQuestion:
        q = self.units(text)
        if not q:
            raise InvalidInputError(f"KeywordQueryGenerator.prepare: empty question {text!r}")
        cluster = list(q)  # C_q includes q (Sec. 5.1), its members concatenated into one document
        for p in paraphrases:
            cluster.extend(self.units(p))
        support = list(dict.fromkeys(cluster))
        strategy = self.config.strategy
        _, p_q = term_distribution(q, strategy, self.stats, in_collection, support)
        _, p_c = term_distribution(cluster, strategy, self.stats, in_collection, support)
        if in_collection:
            p_coll = np.array([self.stats.probability(t) for t in support])
        else:  # the question joins the collection (see term_distribution)
            cf, _ = self.stats.counts(support)
            own = Counter(q)
            p_coll = (cf + np.array([own.get(t, 0) for t in support])) / (self.stats.total + len(q))
        blocked = np.array([t in QUESTION_WORDS for t in support])
        inside_qw = float(sum(self.stats.probability(t) for t in support if t in QUESTION_WORDS))
        return PreparedQuestion(
            support=support,
            p_q=p_q,
            p_c=p_c,
            p_coll=p_coll,
            blocked=blocked,
            excluded_outside=self._question_word_mass - inside_qw,
            length=len(q),
        )

    def sample_terms(
        self,
        prepared: PreparedQuestion,
        rng: np.random.Generator,
        length: int,
        weights: tuple[float, float, float] | None = None,
    ) -> list[str]:
        """Draw ``length`` distinct non-question-word units from P(t|theta_q) (Algorithm 1 lines 6-10).

        ``weights`` overrides the configuration's mixture weights (grid search). Returns fewer
        units only when nothing is left to draw.
        """
        w_q, w_c, w_coll = weights if weights is not None else self.config.weights
        local = w_q * prepared.p_q + w_c * prepared.p_c + w_coll * prepared.p_coll
        local = np.where(prepared.blocked, 0.0, local)
        support_set = set(prepared.support)
        # P(t) mass outside the support still allowed (question words and drawn outside terms excluded).
        outside = max(0.0, 1.0 - float(prepared.p_coll.sum()) - prepared.excluded_outside)
        drawn: list[str] = []
        drawn_outside: set[str] = set()
        while len(drawn) < length:
            local_mass = float(local.sum())
            outside_mass = w_coll * outside
            total = local_mass + outside_mass
            if total <= 1e-15:
                break
            u = rng.random() * total
            if u < local_mass:
                i = int(np.searchsorted(np.cumsum(local), u, side="right"))
                i = min(i, len(local) - 1)
                while local[i] <= 0:  # float edge: land on a zeroed slot, step back to a live one
                    i -= 1
                drawn.append(prepared.support[i])
                local[i] = 0.0
            else:
                while True:  # rejection sampling from P(t) restricted to the allowed outside terms
                    term = self.stats.sample(rng)
                    if term not in support_set and term not in QUESTION_WORDS and term not in drawn_outside:
                        break
                drawn.append(term)
                drawn_outside.add(term)
                outside -= self.stats.probability(term)
        return drawn

    def generate(
        self,
        text: str,
        rng: np.random.Generator,
        paraphrases: Sequence[str] = (),
        in_collection: bool = True,
        prepared: PreparedQuestion | None = None,
    ) -> list[str]:
        """One keyword query (list of units) for the normalised question ``text`` (Algorithm 1)."""
        prepared = prepared or self.prepare(text, paraphrases, in_collection)
        length = self.length_prior.sample(rng, prepared.length)
        return self.sample_terms(prepared, rng, length)


def keyword_string(units: Sequence[str]) -> str:
    """A keyword query as text: units joined by spaces, phrases written as words."""
    return " ".join(w for u in units for w in phrase_words(u))


def stable_seed(seed: int, key: str) -> list[int]:
    """Entropy for ``numpy.random.default_rng`` from the run seed and a row key (process-independent)."""
    import hashlib

    digest = hashlib.blake2b(key.encode("utf8"), digest_size=8).digest()
    return [int(seed), int.from_bytes(digest, "little")]
