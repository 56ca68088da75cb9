"""Keyword query -> question (K2Q, Ding & Balog ICTIR'18): scores, decoding guards and question frames.

:func:`k2q_scores` (Table 2's ROUGE / BLEU against every reference of an example),
:class:`NoRepeatSourceWordsProcessor` (a copied keyword word cannot come again under any id) and the
question frames of ``keyword_fallback`` (:func:`fill_frame`, :func:`keeps_keywords`). The task object is
:class:`hf_querygen.tasks.k2q.task.K2QTask`; the test sets and the split format are in
:mod:`hf_querygen.tasks.k2q.data` (training only).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ...errors import InvalidInputError
from ...text import FRAME_SLOT, normalize_for_matching

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


def k2q_scores(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """Table 2's metrics of generated questions against their references (Sec. 5.2, Eq. 9-10).

    ``ROUGE-1/2/L``: rouge-score F1, max over an example's references (Eq. 10), mean over examples;
    ``... avg``: F1 averaged over the references (Eq. 9); ``... recall`` / ``... recall avg``: the same
    with recall. ``BLEU``: sacrebleu corpus BLEU (lowercased, 13a, exp smoothing) on a 0-1 scale; its
    signature is :data:`BLEU_SIGNATURE` of the last call (sacrebleu's version is part of it).
    """
    from ...metrics.rouge import rouge
    from ...metrics.sacrebleu_metric import sacre_bleu

    refs = [list(r) for r in references]
    r = rouge(list(predictions), refs)
    b = sacre_bleu(list(predictions), refs)
    BLEU_SIGNATURE[0] = b["signature"]
    out = {"BLEU": float(b["bleu"])}
    for name, key in (("ROUGE-L", "rougeL"), ("ROUGE-1", "rouge1"), ("ROUGE-2", "rouge2")):
        out[name] = float(r[f"{key}_f_max"])
        out[f"{name} avg"] = float(r[f"{key}_f_avg"])
        out[f"{name} recall"] = float(r[f"{key}_recall_max"])
        out[f"{name} recall avg"] = float(r[f"{key}_recall_avg"])
    return out


def k2q_user_scores(
    predictions: Sequence[str],
    sources: Sequence[str],
    classifier: Any = "cached",
    data_dir: str | os.PathLike | None = None,
) -> dict[str, float]:
    """What users need of a generated question beside ROUGE: ``keywords_kept`` / ``all_keywords_kept``
    (:func:`hf_querygen.metrics.keywords_kept.keywords_kept` against the keyword queries ``sources``) and
    ``wellformed`` / ``wellformed_probability`` (:func:`hf_querygen.metrics.wellformedness_classifier.
    wellformedness_scores`). ``classifier``: a classifier folder, ``"cached"`` (the default classifier of
    the corpus in ``data_dir`` when it is built: else the well-formedness keys are left out) or None (left
    out)."""
    from ...metrics.keywords_kept import keywords_kept
    from ...metrics.wellformedness_classifier import wellformedness_scores

    kept = keywords_kept(list(predictions), list(sources))
    out = {"keywords_kept": kept["keywords_kept"], "all_keywords_kept": kept["all_keywords_kept"]}
    folder = cached_wellformedness_classifier(data_dir) if classifier == "cached" else classifier
    if folder is not None:
        formed = wellformedness_scores(list(predictions), folder)
        out.update(wellformed=formed["wellformed"], wellformed_probability=formed["wellformed_probability"])
    return out


def cached_wellformedness_classifier(data_dir: str | os.PathLike | None = None) -> Any:
    """The default well-formedness classifier's folder when it is built (``hf-querygen
    wellformedness-classifier``) on the corpus in ``data_dir`` (default: the data folder the corpora are
    read from), else None; looked up once per process and folder."""
    key = str(data_dir) if data_dir is not None else None
    if key not in _CLASSIFIERS:
        from ...metrics.wellformedness_classifier import default_classifier

        try:
            _CLASSIFIERS[key] = default_classifier(data_dir)
        except (InvalidInputError, ImportError):  # not built, no corpus folder to key it by, no backbone
            _CLASSIFIERS[key] = None
    return _CLASSIFIERS[key]


#: data folder (None: the default) -> its classifier's folder or None
_CLASSIFIERS: dict[str | None, Any] = {}


#: the sacrebleu signature of the last :func:`k2q_scores` call (a one-item list: set in place)
BLEU_SIGNATURE: list[str] = [""]


class NoRepeatSourceWordsProcessor:
    """A ``LogitsProcessor`` for copy models: a keyword-query word already in the output cannot come
    again, whichever way it was produced (its vocabulary id or a copy of any source position holding
    it). The stock ``no_repeat_ngram_size`` compares ids, and a copy model writes the same word under
    several ids ("capital" from the vocabulary and "capital" copied), so it misses the repeats a
    half-trained CopyNet makes ("which the capital capital capital"). Words not in the source (the
    question words) may repeat. ``copy_all``: besides, the question cannot end while a keyword word
    is missing from it: [EOS] is held back and each missing word's copy gets at least [EOS]'s score, so
    where the model would end it writes a missing keyword instead.

    ``input_ids`` (B, S) / ``source_word_ids`` (B, S) are the batch's encoder inputs; a generated id
    ``>= output_vocab_size`` copies source position ``id - output_vocab_size``."""

    def __init__(
        self,
        input_ids: Any,
        source_word_ids: Any,
        output_vocab_size: int,
        special_ids: Sequence[int],
        eos_token_id: int | None = None,
        copy_all: bool = False,
        no_repeat: bool = True,
    ) -> None:
        if copy_all and eos_token_id is None:
            raise ValueError("copy_all needs the eos_token_id it holds back")
        self.vocab_ids = input_ids
        self.source = source_word_ids if source_word_ids is not None else input_ids
        self.output_vocab_size = int(output_vocab_size)
        self.special_ids = list(special_ids)
        self.eos_token_id = eos_token_id
        self.copy_all = copy_all
        self.no_repeat = no_repeat

    def __call__(self, generated: Any, scores: Any) -> Any:
        """generated (N, t) ids so far, N = B x beams (or returns); scores (N, V') -> scores with the
        emitted source words banned."""
        import torch

        rows, batch = generated.shape[0], self.source.shape[0]
        expand = rows // batch  # beams / returns of one example are adjacent (repeat_interleave)
        source = self.source.to(generated.device).repeat_interleave(expand, dim=0)  # (N, S)
        vocab_ids = self.vocab_ids.to(generated.device).repeat_interleave(expand, dim=0)  # (N, S)
        size, length = self.output_vocab_size, source.shape[1]
        copied = generated - size  # (N, t): the source position where the id is a copy
        is_copy = (copied >= 0) & (copied < length)
        # each generated token as a source-word key: the copied position's word id, or the id itself
        keys = torch.where(is_copy, source.gather(1, copied.clamp(0, length - 1)), generated)
        special = torch.tensor(self.special_ids, device=generated.device)
        keys = torch.where(torch.isin(keys, special), torch.full_like(keys, -1), keys)
        # source word q counts as emitted when some generated key equals it: (N, S)
        words = ~torch.isin(source, special)
        emitted = (keys.unsqueeze(-1) == source.unsqueeze(1)).any(1) & words
        if self.copy_all:  # no end of the question while a keyword word is missing: where the model
            # would end, a missing word takes [EOS]'s score instead (copying it is as likely as ending)
            missing = words & ~emitted  # (N, S)
            pending = missing.any(1)  # (N,)
            scores = scores.clone()
            end = scores[:, self.eos_token_id].clone()  # (N,)
            columns = self.output_vocab_size + torch.arange(length, device=scores.device)
            fits = columns < scores.shape[-1]
            copy_scores = scores[:, columns[fits]]  # (N, S')
            raised = torch.where(missing[:, fits], torch.maximum(copy_scores, end.unsqueeze(1)), copy_scores)
            scores[:, columns[fits]] = raised
            scores[pending, self.eos_token_id] = float("-inf")
        if not self.no_repeat or not bool(emitted.any()):
            return scores
        banned = torch.zeros_like(scores, dtype=torch.bool)
        columns = size + torch.arange(length, device=scores.device)
        fits = columns < scores.shape[-1]
        banned[:, columns[fits]] = emitted[:, fits]  # every copy position holding an emitted word
        in_vocab = emitted & (vocab_ids < size) & ~torch.isin(vocab_ids, special)
        rows_index, positions = in_vocab.nonzero(as_tuple=True)
        banned[rows_index, vocab_ids[rows_index, positions]] = True  # and the word's vocabulary id
        return scores.masked_fill(banned, float("-inf"))


def fill_frame(frame: str, keyword_query: str) -> str:
    """``frame`` ("what is X") with its :data:`FRAME_SLOT` replaced by the normalised keyword query."""
    return " ".join(normalize_for_matching(keyword_query) if t == FRAME_SLOT else t for t in frame.split())


def echo_keyword_queries(keyword_queries: Sequence[str]) -> list[str]:
    """The keyword query unchanged: the floor any keyword-to-question model must beat (a table row in
    ``baselines.k2q`` and the floor of the decoding choice, ``K2QTask.selection_floor``)."""
    if isinstance(keyword_queries, str):
        raise InvalidInputError("echo_keyword_queries: pass a list of keyword queries, not one string")
    return [str(k) for k in keyword_queries]


def is_question(text: str) -> bool:
    """Whether ``text`` ends as a question (its last mark is "?"): what a keyword-to-question model is
    asked to write, and what a beam that stopped on a fragment or an imperative is not."""
    return text.rstrip().endswith("?")


def keeps_keywords(question: str, keyword_query: str) -> bool:
    """Whether every word of ``keyword_query`` occurs in ``question`` (normalised text): a question that
    drops one asks about something else than the user typed."""
    asked = set(normalize_for_matching(question).split())
    return all(word in asked for word in normalize_for_matching(keyword_query).split())


def question_frame_around(keyword_query: str, question: str) -> str | None:
    """The one-slot frame of ``question`` around ``keyword_query``: the question's words before its first
    keyword word, :data:`FRAME_SLOT`, its words after the last one ("What are the side effects of
    ibuprofen?" for "side effects ibuprofen" -> "what are the X"); ``None`` when no keyword word occurs.
    Words between the keywords are dropped: filling the frame writes the keyword query as typed."""
    keywords = set(normalize_for_matching(keyword_query).split())
    words = normalize_for_matching(question).split()
    positions = [i for i, word in enumerate(words) if word in keywords]
    if not positions:
        return None
    return " ".join([*words[: positions[0]], FRAME_SLOT, *words[positions[-1] + 1 :]])


def frequent_question_frames(keyword_queries: Sequence[str], questions: Sequence[str], k: int) -> list[str]:
    """The keyword query unchanged (``X``) and the ``k - 1`` one-slot frames (:func:`question_frame_around`)
    that the most DISTINCT questions of the pairs share: a frame that only one information need uses
    ("find job openings for X surveyors", the query variants of one topic) counts once, so the frames
    are the ones that transfer to new topics. Ties by the frame text (deterministic)."""
    if len(keyword_queries) != len(questions):
        raise InvalidInputError(
            f"frequent_question_frames: {len(keyword_queries)} keyword queries, {len(questions)} questions"
        )
    if not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"frequent_question_frames: k must be an integer >= 1, got {k!r}")
    askers: dict[str, set[str]] = {}
    for keyword_query, question in zip(keyword_queries, questions, strict=True):
        frame = question_frame_around(keyword_query, question)
        if frame is not None and frame != FRAME_SLOT:
            askers.setdefault(frame, set()).add(normalize_for_matching(question))
    ranked = sorted(askers, key=lambda frame: (-len(askers[frame]), frame))
    return [FRAME_SLOT, *ranked[: k - 1]]


def best_frame_ids(
    frames: Sequence[str], keyword_queries: Sequence[str], references: Sequence[Sequence[str]]
) -> list[list[int]]:
    """Per keyword query, the indices of the ``frames`` whose filled question (:func:`fill_frame`) has the
    best ROUGE-L F against the example's references (max over them, Table 2's metric); ties all count
    (the question-frame model's training targets)."""
    from ...metrics.rouge import rouge_per_example

    if len(keyword_queries) != len(references):
        raise InvalidInputError(
            f"best_frame_ids: {len(keyword_queries)} keyword queries, {len(references)} reference lists"
        )
    filled = [fill_frame(frame, query) for query in keyword_queries for frame in frames]
    repeated = [list(refs) for refs in references for _ in frames]
    scores = [row["rougeL_f_max"] for row in rouge_per_example(filled, repeated, rouge_types=("rougeL",))]
    out = []
    for start in range(0, len(scores), len(frames)):
        row = scores[start : start + len(frames)]
        top = max(row)
        out.append([i for i, score in enumerate(row) if score >= top - 1e-12])
    return out
