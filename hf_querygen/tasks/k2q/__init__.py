"""Keyword query -> question (K2Q, Ding & Balog ICTIR'18).

* :mod:`.questions`: scores, decoding guards and question frames (every name importable from here);
* :mod:`.data`: the test sets and the training split format (training only; loads ``datasets``);
* :mod:`.task`: the registered :class:`~hf_querygen.tasks.k2q.task.K2QTask`.
"""

# .questions imports nothing heavy at its top (the metrics inside its functions): joining it here costs a
# module of this package nothing
from .questions import (
    BLEU_SIGNATURE,
    FRAME_SLOT,
    NoRepeatSourceWordsProcessor,
    best_frame_ids,
    echo_keyword_queries,
    fill_frame,
    frequent_question_frames,
    is_question,
    k2q_scores,
    k2q_user_scores,
    keeps_keywords,
    question_frame_around,
)

__all__ = [
    "BLEU_SIGNATURE",
    "FRAME_SLOT",
    "NoRepeatSourceWordsProcessor",
    "best_frame_ids",
    "echo_keyword_queries",
    "fill_frame",
    "frequent_question_frames",
    "is_question",
    "k2q_scores",
    "k2q_user_scores",
    "keeps_keywords",
    "question_frame_around",
]
