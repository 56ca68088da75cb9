"""nl2kw pairs before they become rows: :class:`_Pair` (what every source reader yields), the row features
(:func:`_features`) and the derived keyword fields (:func:`split_keywords`: Liu'18 Sec. 3, y = y^p + y^g).
The readers are :mod:`._nl2kw_trec` and :mod:`._nl2kw_uqv100`; the corpus is
:mod:`hf_querygen.corpora.nl2kw`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._base import (
    normalize_for_matching,
)


@dataclass
class _Pair:
    """One example before the derived keyword fields are computed."""

    id: str
    source: str
    topic_id: str
    nl_query: str
    keyword_query: str
    language: str
    source_file: str
    query_count: int = 1


def _features():
    import datasets

    words = datasets.List(datasets.Value("string"))
    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "source": datasets.Value("string"),
            "topic_id": datasets.Value("string"),
            "nl_query": datasets.Value("string"),
            "keyword_query": datasets.Value("string"),
            "keywords": words,
            "language": datasets.Value("string"),
            "extractive_keywords": words,
            "generative_keywords": words,
            "query_count": datasets.Value("int32"),
            "source_file": datasets.Value("string"),
        }
    )


# ---------------------------------------------------------------- keywords
def split_keywords(nl_query: str, keyword_query: str) -> tuple[list[str], list[str], list[str]]:
    """``(keywords, extractive, generative)`` of one pair (Liu'18 Sec. 3: y = y^p + y^g).

    Keywords are the distinct words of the normalised keyword query, in order; a keyword is
    extractive when it is a word of the normalised natural-language query.
    """
    keywords = list(dict.fromkeys(normalize_for_matching(keyword_query).split()))
    source_words = set(normalize_for_matching(nl_query).split())
    extractive = [k for k in keywords if k in source_words]
    generative = [k for k in keywords if k not in source_words]
    return keywords, extractive, generative


def _add_keyword_fields(batch: dict) -> dict:
    columns = [
        split_keywords(nl, kw) for nl, kw in zip(batch["nl_query"], batch["keyword_query"], strict=True)
    ]
    return {
        "keywords": [c[0] for c in columns],
        "extractive_keywords": [c[1] for c in columns],
        "generative_keywords": [c[2] for c in columns],
    }
