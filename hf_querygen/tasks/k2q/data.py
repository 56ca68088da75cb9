"""Keyword query -> question (K2Q, Ding & Balog ICTIR'18): the data (training only; a saved model's
remote code never needs it, see :data:`hf_querygen.hub_code.TRAINING_ONLY`).

The two test sets have the columns ``id``, ``keywords`` (the keyword query, a string as a user typed
it) and ``references`` (list of natural-language questions; an output is scored against all of them,
avg and max, Eq. 9-10):

* :func:`t0_test` -- T_0 test: the ``seed_pairs`` test split (QALD questions with hand-written
  keyword queries). One example per question; its keyword query is ``keyword_query``, the reference
  is the question. (Nothing in this project is tuned on this split.)
* :func:`nl2kw_reversed_test` -- the human test set: ``nl2kw`` (en) test pairs reversed. One example
  per distinct (topic, keyword query); its references are every distinct natural-language question
  of that topic (a topic with several question formulations gets several references). A keyword
  query that is itself one of its references (normalised text) is dropped: it is a question, not a
  keyword query, and copying it would score 1.

:func:`k2q_test_sets` returns both in a ``DatasetDict`` keyed ``t0`` and ``nl2kw``;
:func:`as_training_split` makes a :class:`~hf_querygen.tasks.k2q.task.K2QTask` split.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import datasets

from ...corpora import load_corpus
from ...corpora._base import normalize_for_matching
from ...errors import InvalidInputError
from .questions import is_question

__all__ = [
    "HUMAN_SPLITS",
    "SEED_SPLITS",
    "EXTRA_SYNTHETIC_SPLIT",
    "SPLIT_FEATURES",
    "as_training_split",
    "k2q_test_sets",
    "nl2kw_reversed_pairs",
    "nl2kw_reversed_test",
    "t0_test",
]

_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "keywords": datasets.Value("string"),
        "references": datasets.List(datasets.Value("string")),
    }
)


def t0_test(data_dir: str | os.PathLike | None = None, split: str = "test") -> datasets.Dataset:
    """T_0 ``split`` (default the test split) as ``id``/``keywords``/``references``."""
    ds = load_corpus("wikianswers", "seed_pairs", data_dir=data_dir)[split]
    return datasets.Dataset.from_dict(
        {
            "id": ds["id"],
            "keywords": ds["keyword_query"],
            "references": [[q] for q in ds["question"]],
        },
        features=_FEATURES,
    )


def nl2kw_reversed_test(
    data_dir: str | os.PathLike | None = None, split: str = "test", language: str = "en"
) -> datasets.Dataset:
    """``nl2kw`` ``split`` reversed: human keyword query -> its topic's question(s) (module docstring)."""
    ds = load_corpus("nl2kw", language, data_dir=data_dir)[split]
    questions: dict[str, list[str]] = {}
    for topic, question in zip(ds["topic_id"], ds["nl_query"], strict=True):
        refs = questions.setdefault(topic, [])
        if question not in refs:
            refs.append(question)
    ids, keywords, references, seen = [], [], [], set()
    for row_id, topic, keyword_query in zip(ds["id"], ds["topic_id"], ds["keyword_query"], strict=True):
        key = (topic, normalize_for_matching(keyword_query))
        if key in seen or not key[1]:
            continue
        seen.add(key)
        refs = questions[topic]
        if key[1] in {normalize_for_matching(r) for r in refs}:
            continue  # the "keyword query" is the question itself
        ids.append(row_id)
        keywords.append(keyword_query)
        references.append(list(refs))
    return datasets.Dataset.from_dict(
        {"id": ids, "keywords": keywords, "references": references}, features=_FEATURES
    )


def k2q_test_sets(data_dir: str | os.PathLike | None = None) -> datasets.DatasetDict:
    """``{"t0": t0_test(), "nl2kw": nl2kw_reversed_test()}``."""
    return datasets.DatasetDict({"t0": t0_test(data_dir), "nl2kw": nl2kw_reversed_test(data_dir)})


# ---------------------------------------------------------------- the trainable task
#: the columns of every split a :class:`K2QTask` reads (``question`` = the first reference: the target)
SPLIT_FEATURES = datasets.Features(
    {
        "keyword_query": datasets.Value("string"),
        "question": datasets.Value("string"),
        "references": datasets.List(datasets.Value("string")),
    }
)


def as_training_split(
    keyword_queries: Sequence[str], references: Sequence[Sequence[str]]
) -> datasets.Dataset:
    """A :class:`K2QTask` split: ``keyword_query``, ``question`` (the first reference, the training
    target) and ``references`` (all of them, for scoring)."""
    if len(keyword_queries) != len(references):
        raise InvalidInputError(
            f"as_training_split: {len(keyword_queries)} keyword queries but {len(references)} reference lists"
        )
    empty = [i for i, refs in enumerate(references) if not refs]
    if empty:
        raise InvalidInputError(f"as_training_split: examples {empty[:5]} have no reference question")
    return datasets.Dataset.from_dict(
        {
            "keyword_query": list(keyword_queries),
            "question": [refs[0] for refs in references],
            "references": [list(refs) for refs in references],
        },
        features=SPLIT_FEATURES,
    )


def nl2kw_reversed_pairs(
    data_dir: str | os.PathLike | None = None, split: str = "train", language: str = "en"
) -> datasets.Dataset:
    """Human training pairs: every (keyword query, question) of the reversed ``nl2kw`` ``split``
    (:func:`nl2kw_reversed_test`), one pair per reference question, as a :func:`as_training_split`
    split (each pair's ``references`` = all of its topic's questions)."""
    ds = nl2kw_reversed_test(data_dir, split, language)
    keywords, references = [], []
    for keyword_query, refs in zip(ds["keywords"], ds["references"], strict=True):
        for i in range(len(refs)):
            keywords.append(keyword_query)
            references.append([refs[i], *refs[:i], *refs[i + 1 :]])  # this pair's target first
    return as_training_split(keywords, references)


def human_question_pairs(pairs: datasets.Dataset) -> datasets.Dataset:
    """Each distinct question of ``pairs`` (an :func:`as_training_split`; normalised text) that ends as a
    question, once, with the keyword query of its first pair that asks it as a question: a topic with
    eighty keyword-query variations (UQV100's) counts once, and a topic description that asks nothing
    ("Document will identify ...") is no target for a model asked to write questions; the same words written
    once without and later with a question mark are kept from the latter."""
    seen: set[str] = set()
    kept = []
    for i, question in enumerate(pairs["question"]):
        key = normalize_for_matching(question)
        if key not in seen and is_question(question):
            kept.append(i)
            seen.add(key)
    return pairs.select(kept)


def without_evaluation_overlap(
    split: datasets.Dataset, evaluation: Sequence[datasets.Dataset], keyword_queries: bool = True
) -> tuple[datasets.Dataset, int]:
    """``split`` (an :func:`as_training_split`) without the pairs that share a question (any reference,
    normalised) with an ``evaluation`` split, or, with ``keyword_queries``, their keyword query: the
    reversed nl2kw corpus holds QALD questions that T_0's validation and test splits hold too (144 of
    T_0's 189 test questions are in nl2kw train), so its pairs must not train or select a model that is
    scored on them. -> (the kept pairs, how many were removed)."""
    questions = {normalize_for_matching(q) for ds in evaluation for refs in ds["references"] for q in refs}
    keywords = {normalize_for_matching(k) for ds in evaluation for k in ds["keyword_query"]}

    def clean(example: dict) -> bool:
        if keyword_queries and normalize_for_matching(example["keyword_query"]) in keywords:
            return False
        return not any(normalize_for_matching(q) in questions for q in example["references"])

    kept = split.filter(clean, desc="removing pairs that overlap evaluation splits")
    return kept, len(split) - len(kept)


#: splits a k2q fold may carry besides train / validation / tests: the human pairs that the prepare
#: option ``human_pairs`` adds to train and validation (:meth:`K2QTask.prepare`)
HUMAN_SPLITS = {"train": "nl2kw_train", "validation": "nl2kw_validation"}
#: T_0's own train / validation splits, which a reproduction fold carries apart besides its validation
#: split (their union): the prepare option ``seed_pairs`` trains on the first and selects on the second
SEED_SPLITS = {"train": "seed_train", "validation": "seed_validation"}
#: the further synthetic keyword queries of each question (the ding2018 fold with
#: ``keyword_queries_per_question`` > 1), appended to train by ``K2QTask.prepare(synthetic_extra=True)``
EXTRA_SYNTHETIC_SPLIT = "synthetic_extra"
#: the synthetic pairs held apart by ``K2QTask.prepare(synthetic_first=True)``: the pretraining pairs
#: ``"synthetic"`` (``train_preset(pretrain_on="synthetic")``), trained on before the human pairs
SYNTHETIC_FIRST_SPLIT = "synthetic_first"
