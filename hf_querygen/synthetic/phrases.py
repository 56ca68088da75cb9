"""Phrase detection (Ding & Balog Sec. 3.1.4; Mikolov et al.'s word2phrase) with gensim ``Phrases``.

Two passes give phrases of up to four words (bigrams, then bigrams of bigrams, i.e. trigrams such
as ``honda_crf_230``). The second pass runs over the output of the frozen first pass and **needs a
delimiter of its own**: ``Phrases.export_phrases`` / ``freeze`` split each vocabulary token on the
model's delimiter and score the first and last piece, so with ``_`` in both passes the token
``honda_crf_230`` splits into three unigrams, is scored as ``honda ... 230`` and exported wrongly (or
not at all). With ``~`` in the second pass, ``honda_crf~230`` splits into ``honda_crf`` and ``230``;
:meth:`PhraseDetector.transform` then writes every phrase with ``_``.

WH-words are connector words (like ``of``/``the``): they may sit inside a phrase but never start or
end one, so frequent pairs such as ``what is`` / ``how many`` never become a sampleable "term" that
would smuggle a question word into a keyword query (Sec. 3.1.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..corpora.wikianswers import WH_WORDS

__all__ = ["PHRASE_DELIMITER", "PhraseDetector", "phrase_words"]

PHRASE_DELIMITER = "_"
_SECOND_PASS_DELIMITER = "~"


def phrase_words(unit: str) -> list[str]:
    """The words of a term or phrase unit (``honda_crf_230`` -> ``["honda", "crf", "230"]``)."""
    return unit.replace(_SECOND_PASS_DELIMITER, PHRASE_DELIMITER).split(PHRASE_DELIMITER)


class _Mapped:
    """A re-iterable view of ``model[sentence]`` over a re-iterable of sentences."""

    def __init__(self, model, sentences):
        self.model, self.sentences = model, sentences

    def __iter__(self):
        return (self.model[list(s)] for s in self.sentences)


class PhraseDetector:
    """Two frozen gensim phrase passes. ``transform(terms)`` -> units (a phrase is one unit).

    ``min_count`` / ``threshold`` are gensim's (word2phrase defaults 5 / 10).
    """

    def __init__(self, first, second):
        self.first, self.second = first, second

    @classmethod
    def train(
        cls, sentences: Iterable[Sequence[str]], min_count: int = 5, threshold: float = 10.0
    ) -> PhraseDetector:
        """Train on tokenised questions: a re-iterable (a list, or a stream such as
        :class:`hf_querygen.synthetic.pipeline.TokenStream` that reads a dataset column in batches, so
        a corpus of millions is never held as lists); a one-shot iterator is materialised."""
        from gensim.models.phrases import ENGLISH_CONNECTOR_WORDS, Phrases

        if iter(sentences) is sentences:  # a generator can be read only once; both passes need it
            sentences = [list(s) for s in sentences]
        connectors = frozenset(ENGLISH_CONNECTOR_WORDS) | WH_WORDS
        first = Phrases(
            sentences, min_count=min_count, threshold=threshold, connector_words=connectors
        ).freeze()
        second = Phrases(
            _Mapped(first, sentences),
            min_count=min_count,
            threshold=threshold,
            connector_words=connectors,
            delimiter=_SECOND_PASS_DELIMITER,
        ).freeze()
        return cls(first, second)

    @property
    def phrasegrams(self) -> dict[str, float]:
        """Every exported phrase (``_``-joined) with its gensim score, both passes."""
        out = {
            p.replace(_SECOND_PASS_DELIMITER, PHRASE_DELIMITER): s for p, s in self.first.phrasegrams.items()
        }
        for p, s in self.second.phrasegrams.items():
            out[p.replace(_SECOND_PASS_DELIMITER, PHRASE_DELIMITER)] = s
        return out

    def transform(self, terms: Sequence[str]) -> list[str]:
        return [
            u.replace(_SECOND_PASS_DELIMITER, PHRASE_DELIMITER) for u in self.second[self.first[list(terms)]]
        ]
