"""Synthetic keyword-question data (Ding & Balog, ICTIR'18, Sec. 3): KQGM, phrases, KQF, TDF, pipeline.

- :mod:`.corpus`: the question corpus Q, paraphrase clusters C_q and seed pairs T_0;
- :mod:`.kqgm`: the keyword query generation model (Eq. 1-6, Algorithm 1);
- :mod:`.phrases`: two-pass gensim phrase detection (Sec. 3.1.4);
- :mod:`.filters`: the keyword query filter (Eq. 7) and the training data filter (Eq. 8) against
  any index with ``search_batch`` (``hf_querygen.retrieval.Index``);
- :mod:`.pipeline`: the resumable ``datasets`` pipeline behind ``hf-querygen synthesize``.
"""

from .corpus import QuestionCorpus, build_question_corpus, load_seed_pairs
from .filters import KQFResult, SearchIndex, keyword_query_filter, tdf_score, top_l
from .kqgm import (
    QUESTION_WORDS,
    STRATEGIES,
    CollectionStatistics,
    KeywordQueryGenerator,
    KQGMConfig,
    LengthPrior,
    keyword_string,
    term_distribution,
)
from .phrases import PhraseDetector
from .pipeline import SynthesisConfig, build_generator, synthesize

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
