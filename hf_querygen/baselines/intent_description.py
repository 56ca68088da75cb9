"""Non-neural baselines for Q2ID (Zhang et al. CIKM'20, Table 4, Sec. 5.2.2) and two extra reference rows.

- LexRank (Erkan & Radev 2004), LSA (Steinberger & Jezek 2004), TextRank (Mihalcea & Tarau 2004): the
  paper extracts ONE sentence from the relevant documents as the description; we run sumy's
  implementations over the relevant mega-document. sumy's own tokenizer needs NLTK's punkt data, which
  is not installed (and not wanted): :class:`LibraryTokenizer` gives sumy the library's sentence splitter
  (:func:`hf_querygen.corpora._q2id_records.split_sentences`) and word splitter
  (:func:`hf_querygen.corpora._q2id_records.paper_words`, the paper's lower-cased white-space words).
- copy the query (extra row): the description is the query itself.
- ORACLE best single relevant sentence (extra row, an upper bound for any one-sentence extractor, not a
  system): the relevant sentence with the highest ROUGE against the reference description.

Every function takes q2id examples (mappings with ``query``, ``relevant_documents`` as lists of
``{"sentences": [...]}``, and for the oracle ``description``) and returns one string per example.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..corpora._q2id_records import paper_words, split_sentences
from ..errors import InvalidInputError
from ..utils import require_extra

EXTRACTIVE_METHODS: tuple[str, ...] = ("lexrank", "lsa", "textrank")
_HAS_WORD_CHARACTER = re.compile(r"\w")


class LibraryTokenizer:
    """The sumy tokenizer interface (``to_sentences`` / ``to_words``) on the library's own splitters."""

    language = "english"

    def to_sentences(self, paragraph: str) -> tuple[str, ...]:
        return tuple(split_sentences(paragraph))

    def to_words(self, sentence: str) -> tuple[str, ...]:
        # the paper's white-space words keep attached punctuation ("forest."), which would make the same
        # word two terms of the sentence similarities: strip it, and drop punctuation-only tokens
        words = (word.strip(string.punctuation) for word in paper_words(sentence))
        return tuple(word for word in words if _HAS_WORD_CHARACTER.search(word))


def relevant_sentences(example: Mapping[str, Any]) -> list[str]:
    """The relevant mega-document of an example (Zhang'20 Sec. 4.3): all sentences of all relevant
    documents in order."""
    documents = example.get("relevant_documents")
    if not documents:
        raise InvalidInputError(f"q2id example {example.get('id', '?')!r} has no relevant_documents")
    return [sentence for document in documents for sentence in document["sentences"] if sentence.strip()]


def _summarizer(method: str, language: str):
    require_extra("sumy", "summarization", "LexRank / LSA / TextRank baselines")
    from sumy.nlp.stemmers import Stemmer
    from sumy.summarizers.lex_rank import LexRankSummarizer
    from sumy.summarizers.lsa import LsaSummarizer
    from sumy.summarizers.text_rank import TextRankSummarizer
    from sumy.utils import get_stop_words

    classes = {"lexrank": LexRankSummarizer, "lsa": LsaSummarizer, "textrank": TextRankSummarizer}
    if method not in classes:
        raise InvalidInputError(f"unknown extractive method {method!r}; expected one of {EXTRACTIVE_METHODS}")
    summarizer = classes[method](Stemmer(language))
    summarizer.stop_words = get_stop_words(language)
    return summarizer


def extractive_summary(
    sentences: Sequence[str],
    method: str,
    sentences_count: int = 1,
    language: str = "english",
    summarizer=None,
) -> str:
    """The ``sentences_count`` sentences ``method`` ranks highest among ``sentences``, in document order,
    joined by a space. A single candidate is returned as it is."""
    from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence

    candidates = [s for s in sentences if s.strip()]
    if not candidates:
        raise InvalidInputError("extractive_summary got no non-empty sentence")
    if len(candidates) <= sentences_count:
        return " ".join(candidates)
    tokenizer = LibraryTokenizer()
    document = ObjectDocumentModel([Paragraph([Sentence(text, tokenizer) for text in candidates])])
    summarizer = summarizer or _summarizer(method, language)
    chosen = summarizer(document, sentences_count)
    if not chosen:  # every sentence had only stop words: sumy ranks nothing, keep the first
        return candidates[0]
    return " ".join(str(sentence) for sentence in chosen)


def extract_descriptions(
    examples: Iterable[Mapping[str, Any]], method: str, sentences_count: int = 1, language: str = "english"
) -> list[str]:
    """LexRank / LSA / TextRank over each example's relevant mega-document (Table 4's extractive rows)."""
    summarizer = _summarizer(method, language)
    return [
        extractive_summary(relevant_sentences(example), method, sentences_count, language, summarizer)
        for example in examples
    ]


def copy_query(examples: Iterable[Mapping[str, Any]]) -> list[str]:
    """Extra row: the query itself as its description."""
    return [str(example["query"]) for example in examples]


def oracle_sentences(
    examples: Iterable[Mapping[str, Any]], criterion: str = "rougeL_f_max", use_stemmer: bool = False
) -> list[str]:
    """ORACLE (uses the reference): per example the relevant sentence with the highest ``criterion``
    (a key of :func:`hf_querygen.metrics.rouge.rouge_per_example`) against its ``description``; ties go
    to the earlier sentence."""
    from ..metrics.rouge import rouge_per_example

    chosen = []
    for example in examples:
        candidates = relevant_sentences(example)
        rows = rouge_per_example(
            candidates, [example["description"]] * len(candidates), use_stemmer=use_stemmer
        )
        if criterion not in rows[0]:
            raise InvalidInputError(
                f"oracle criterion {criterion!r} is not a ROUGE key; have {sorted(rows[0])}"
            )
        best = max(range(len(candidates)), key=lambda i: (rows[i][criterion], -i))
        chosen.append(candidates[best])
    return chosen


__all__ = [
    "EXTRACTIVE_METHODS",
    "LibraryTokenizer",
    "copy_query",
    "extract_descriptions",
    "extractive_summary",
    "oracle_sentences",
    "relevant_sentences",
]
