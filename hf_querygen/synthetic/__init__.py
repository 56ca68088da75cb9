"""Synthetic keyword-question data (Ding & Balog, ICTIR'18, Sec. 3): KQGM, phrases, KQF, TDF, pipeline.

- :mod:`.corpus`: the question corpus Q, paraphrase clusters C_q and seed pairs T_0;
- :mod:`.kqgm`: the keyword query generation model (Eq. 1-6, Algorithm 1);
- :mod:`.phrases`: two-pass gensim phrase detection (Sec. 3.1.4);
- :mod:`.filters`: the keyword query filter (Eq. 7) and the training data filter (Eq. 8) against
  any index with ``search_batch`` (``hf_querygen.retrieval.Index``);
- :mod:`.pipeline`: the resumable ``datasets`` pipeline behind ``hf-querygen synthesize``.
"""

import importlib

# Lazy exports: `hf-querygen --help` imports synthetic.cli, which must not pull in datasets/gensim.
_EXPORTS = {
    "QuestionCorpus": "corpus",
    "build_question_corpus": "corpus",
    "load_seed_pairs": "corpus",
    "KQFResult": "filters",
    "SearchIndex": "filters",
    "keyword_query_filter": "filters",
    "tdf_score": "filters",
    "top_l": "filters",
    "QUESTION_WORDS": "kqgm",
    "STRATEGIES": "kqgm",
    "CollectionStatistics": "kqgm",
    "KeywordQueryGenerator": "kqgm",
    "KQGMConfig": "kqgm",
    "LengthPrior": "kqgm",
    "keyword_string": "kqgm",
    "term_distribution": "kqgm",
    "PhraseDetector": "phrases",
    "SynthesisConfig": "pipeline",
    "build_generator": "pipeline",
    "synthesize": "pipeline",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "QUESTION_WORDS",
    "STRATEGIES",
    "CollectionStatistics",
    "KQFResult",
    "KQGMConfig",
    "KeywordQueryGenerator",
    "LengthPrior",
    "PhraseDetector",
    "QuestionCorpus",
    "SearchIndex",
    "SynthesisConfig",
    "build_generator",
    "build_question_corpus",
    "keyword_query_filter",
    "keyword_string",
    "load_seed_pairs",
    "synthesize",
    "tdf_score",
    "term_distribution",
    "top_l",
]
