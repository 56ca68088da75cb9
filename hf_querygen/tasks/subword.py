"""Encoding and decoding for the warm-started encoder-decoders (the ``bert2bert`` family), for every task.

A warm-started model reads and writes the word pieces of its backbone's own tokenizer
(:func:`hf_querygen.models._warm_start.backbone_tokenizer`), not the tasks' word vocabularies:

* :func:`encode_subword_pairs`: per example ``input_ids`` / ``attention_mask`` (``[CLS] source [SEP]``,
  at most ``max_source_length`` pieces) and ``labels`` (the target's pieces without ``[CLS]``, closed by
  ``[SEP]``, at most ``max_target_length``); the model shifts the labels right behind ``[CLS]``;
* :func:`generate_candidates`: batched ``generate()`` on raw texts (sorted by length so that batches hold
  little padding), every returned sequence decoded to text with its score;
* :class:`SourceWordsProcessor`: a ``LogitsProcessor`` that keeps the source's words in the output
  (a bonus for each source word not yet written, and optionally no end before every one is written).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..inference import run_generate
from ..models._warm_start import WARM_START_FIELD, backbone_tokenizer
from ..pretrained import resolve_backbone
from ..text import STOPWORDS, normalize_for_matching

if TYPE_CHECKING:
    import datasets
    import torch
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

    from .base import TaskData


def prepare_backbone(backbone: str) -> tuple[PreTrainedTokenizerFast, dict[str, Any]]:
    """What a task's ``prepare(backbone=...)`` keeps: the backbone's own tokenizer and the state
    ``{"backbone": canonical id}`` that :func:`warm_start_task_config` checks a preset against."""
    return backbone_tokenizer(backbone), {"backbone": resolve_backbone(backbone).model_id}


def warm_start_task_config(preset: str, data: TaskData, **overrides: Any) -> PretrainedConfig:
    """The config of warm-start ``preset`` for task data prepared with the same backbone's tokenizer
    (``prepare(backbone=...)``); an error names the mismatch."""
    from ..presets import warm_start_config

    prepared = data.state.get("backbone")
    if prepared is None:
        raise InvalidInputError(
            f"preset {preset!r} warm-starts from a pretrained backbone and reads its word pieces: prepare "
            f"the {data.task.name} data with backbone=<the preset's backbone> (a system's prepare_options)"
        )
    config = warm_start_config(preset, data.tokenizer, **overrides)
    wanted = getattr(config, WARM_START_FIELD)["backbone"]
    if wanted != prepared:
        raise InvalidInputError(
            f"preset {preset!r} warm-starts from {wanted!r} but the data was prepared with the tokenizer of "
            f"{prepared!r}"
        )
    return config


#: the columns :func:`encode_subword_pairs` keeps
SUBWORD_COLUMNS = ("input_ids", "attention_mask", "labels")
LABEL_PAD_ID = -100


def _text(value: Any, column: str, row: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return " ".join(value)  # a keyword list is read as its words in order
    raise InvalidInputError(f"column {column!r}, row {row}: expected text, got {type(value).__name__}")


def encode_subword_pairs(
    splits: datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerFast,
    source_column: str,
    target_column: str,
    max_source_length: int,
    max_target_length: int,
) -> datasets.DatasetDict:
    """Every split tokenised for a warm-started encoder-decoder (module docstring); only
    :data:`SUBWORD_COLUMNS` are kept."""
    if max_source_length < 3 or max_target_length < 2:
        raise InvalidInputError(
            "max_source_length must leave room for [CLS], a piece and [SEP]; max_target_length for a piece "
            f"and [SEP] (got {max_source_length}, {max_target_length})"
        )

    def encode(batch: dict[str, list]) -> dict[str, list]:
        sources = [_text(s, source_column, i) for i, s in enumerate(batch[source_column])]
        targets = [_text(t, target_column, i) for i, t in enumerate(batch[target_column])]
        source = tokenizer(
            sources, truncation=True, max_length=max_source_length, return_token_type_ids=False
        )
        # +1: the target's [CLS] is dropped below, so max_target_length pieces remain with [SEP] last
        target = tokenizer(
            targets, truncation=True, max_length=max_target_length + 1, return_token_type_ids=False
        )
        return {
            "input_ids": source["input_ids"],
            "attention_mask": source["attention_mask"],
            "labels": [ids[1:] for ids in target["input_ids"]],
        }

    out = {}
    for name, split in splits.items():
        for column in (source_column, target_column):
            if column not in split.column_names:
                raise InvalidInputError(f"split {name!r} has no column {column!r} ({split.column_names})")
        out[name] = split.map(
            encode, batched=True, remove_columns=split.column_names, desc=f"word pieces ({name})"
        )
    import datasets

    return datasets.DatasetDict(out)


#: what separates a keyword query's phrases ("Sam Raimi, movie, Army of Darkness"); a comma inside a number
#: ("1,000") has no space after it and separates nothing
PHRASE_SEPARATOR = re.compile(r",\s|;")


def source_word_pieces(tokenizer: PreTrainedTokenizerFast, text: str) -> list[tuple[int, ...]]:
    """The word pieces of each distinct keyword of ``text``, in order of first occurrence, each word
    normalised as the keyword checks compare (:func:`~hf_querygen.text.normalize_for_matching`).

    A keyword is a word; where the query separates its keywords by commas or semicolons
    (:data:`PHRASE_SEPARATOR`), it is a phrase: its words' pieces in a row, so that a name stays whole
    ("lake placid", not "placid ... lake"). A word the vocabulary cannot spell is not forced; it splits its
    phrase."""
    phrases = PHRASE_SEPARATOR.split(text) if PHRASE_SEPARATOR.search(text) else text.split()
    pieces: list[tuple[int, ...]] = []
    for phrase in phrases:
        run: list[int] = []
        for word in [*normalize_for_matching(phrase).split(), None]:
            ids = tuple(tokenizer(word, add_special_tokens=False)["input_ids"]) if word else ()
            if ids and tokenizer.unk_token_id not in ids:
                run.extend(ids)
            elif run:
                pieces.append(tuple(run))
                run = []
    return list(dict.fromkeys(pieces))


class SourceWordsProcessor:
    """A ``LogitsProcessor`` keeping the source's words in a warm-started model's output.

    For each hypothesis (``input_ids`` (N, t), N = batch x beams, a row's beams adjacent) and each source
    word not yet written (its pieces not found as a contiguous run followed by a word start; a "word" here is
    a keyword of :func:`source_word_pieces`, so a comma-separated phrase counts as one, and once begun it is
    finished whole):

    * ``bonus``: its first piece's score is raised by ``bonus`` (a soft copy prior on the source words);
    * ``require``: the end token cannot be chosen, and each missing word's first piece gets at least the
      end token's score (unless another processor banned it: a repeated n-gram stays banned, and the word
      comes later), so where the model would end it writes a missing word instead (the hard form:
      every source word the vocabulary can spell appears, unless the length limit comes first). The
      ``closing`` pieces (a question's "?") end a sentence as the end token ends the sequence, so they are
      held back the same way: otherwise the model closes its question and the missing words trail after
      it as fragments ("what is the depth of placid? lake?");
    * a word begun (the hypothesis ends with a proper prefix of its pieces) is finished: its next piece is
      the only one the row may take, scored at least the row's best (a half-written keyword is no word, and
      beam search would otherwise keep a beam that turned "ib" into "ibroro" beside the one that finishes
      "ibuprofen"), unless another processor banned it (a repeated n-gram stays banned);
    * a word just finished (the hypothesis ends with all its pieces) takes no continuation piece (``##s``),
      so the word stays the source's word and counts as written;
    * with ``require`` and ``max_length`` (generate's limit, [CLS] included): once the steps left are no
      more than the pieces still missing, only the next missing piece may come, so the limit cannot cut a
      keyword off;
    * ``once``: a keyword's content words (the words that are not one of ``function_pieces``) start only
      where that keyword is being written, so each comes once. A written keyword's content words do not
      start again ("what is lipoma lipoma?"), and a missing phrase's later content words do not start
      before it ("what date was beethoven ... ludwig van beethoven death date?"). A piece that begins or
      continues a missing keyword stays allowed.
    * ``in_order``: the keywords come in the source's order. Only the first keyword not yet written may
      begin (and is the one ``bonus`` and ``require`` push); the content words of the keywords after it
      do not start before it is written. People keep a keyword query's order in most of their questions
      ("Battle of Gettysburg" -> "When was the Battle of Gettysburg?"), and ROUGE-L's longest common
      subsequence counts only the words in the reference's order.
    * ``no_repeat_ngram_size`` (generate's, n > 0): a missing word that cannot be written without repeating
      an n-gram of the hypothesis (``NoRepeatNGramLogitsProcessor`` would ban one of its pieces for good) is
      given up: no longer pushed or required, and counted as written for ``once`` and ``in_order``. A query
      whose two phrases share a piece trigram ("new BattleStar Galactica series, ..., old Battle Star
      Galactica series") otherwise loops, restarting the second phrase until the length limit.

    ``source_pieces[b]`` lists the pieces of example ``b``'s words (:func:`source_word_pieces`);
    ``continuation`` tells a piece that continues a word (WordPiece ``##``) from one that starts one.
    """

    def __init__(
        self,
        source_pieces: Sequence[Sequence[tuple[int, ...]]],
        eos_token_id: int,
        continuation: Sequence[bool],
        bonus: float = 0.0,
        require: bool = False,
        max_length: int | None = None,
        closing: Sequence[int] = (),
        once: bool = False,
        function_pieces: Sequence[int] = (),
        in_order: bool = False,
        no_repeat_ngram_size: int = 0,
    ) -> None:
        if bonus < 0:
            raise InvalidInputError(f"keyword_bonus must be >= 0, got {bonus}")
        self.source_pieces = [list(words) for words in source_pieces]
        self.eos_token_id = int(eos_token_id)
        self.continuation = continuation
        self.bonus = float(bonus)
        self.require = bool(require)
        self.max_length = max_length
        self.closing = sorted({int(i) for i in closing})
        self.once = bool(once)
        self.in_order = bool(in_order)
        self.no_repeat_ngram_size = int(no_repeat_ngram_size or 0)
        function = {int(i) for i in function_pieces}
        # per example and keyword: the first piece of each content word, and of each after the first
        self._content_starts = (
            [[self._word_starts(pieces, function) for pieces in words] for words in self.source_pieces]
            if self.once or self.in_order
            else []
        )
        self._continuation_ids: torch.Tensor | None = None

    def _word_starts(self, pieces: tuple[int, ...], function: set[int]) -> tuple[set[int], set[int]]:
        """(first pieces of the keyword's content words, those of its content words after the first)."""
        starts = [j for j, piece in enumerate(pieces) if j == 0 or not self.continuation[piece]]
        content: set[int] = set()
        later: set[int] = set()
        for n, j in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(pieces)
            if end - j == 1 and pieces[j] in function:
                continue
            content.add(pieces[j])
            if n:
                later.add(pieces[j])
        return content, later

    def _out_of_place(self, example: int, missing: list[tuple[int, ...]], finishing: set[int]) -> list[int]:
        """The banned pieces for one hypothesis. ``once``: the content-word starts of the written keywords
        and the later content-word starts of the missing ones, except a missing keyword's first piece.
        ``in_order``: every content-word start of the missing keywords after the first one, except the
        first one's first piece. Never the next piece of the keyword begun (``finishing``)."""
        missing_set = set(missing)
        waiting = set(missing[1:]) if self.in_order else set()
        banned: set[int] = set()
        for pieces, (content, later) in zip(
            self.source_pieces[example], self._content_starts[example], strict=True
        ):
            if pieces in waiting:
                banned |= content
            elif self.once:
                banned |= later if pieces in missing_set else content
        starts = {pieces[0] for pieces in (missing[:1] if self.in_order else missing)}
        return sorted(banned - finishing - starts)

    def _missing(self, generated: list[int], words: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        missing = []
        seen: set[tuple[int, ...]] | None = None  # the hypothesis' n-grams, read once when first needed
        for pieces in words:
            n = len(pieces)
            written = any(
                tuple(generated[i : i + n]) == pieces
                and (i + n == len(generated) or not self.continuation[generated[i + n]])
                for i in range(len(generated) - n + 1)
            )
            if written:
                continue
            if self.no_repeat_ngram_size > 0:
                if seen is None:
                    size = self.no_repeat_ngram_size
                    seen = {tuple(generated[i : i + size]) for i in range(len(generated) - size + 1)}
                if not self._writable(generated, pieces, seen):
                    continue
            missing.append(pieces)
        return missing

    def _writable(self, generated: list[int], pieces: tuple[int, ...], seen: set[tuple[int, ...]]) -> bool:
        """Whether ``pieces`` can still be written without repeating an n-gram of the hypothesis (n =
        ``no_repeat_ngram_size``, ``seen`` the hypothesis' n-grams): continued from a prefix begun at the
        hypothesis' end, or afresh (then only the n-grams inside the word are known; those across its start
        depend on the words before it)."""
        n = self.no_repeat_ngram_size

        def repeats(sequence: list[int], first: int) -> bool:
            added: set[tuple[int, ...]] = set()
            for end in range(max(first, n - 1), len(sequence)):
                gram = tuple(sequence[end - n + 1 : end + 1])
                if gram in seen or gram in added:
                    return True
                added.add(gram)
            return False

        for k in range(len(pieces) - 1, 0, -1):
            if tuple(generated[-k:]) == pieces[:k] and not repeats([*generated, *pieces[k:]], len(generated)):
                return True
        return not repeats([*generated, *pieces], len(generated) + n - 1)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """input_ids (N, t) ids so far ([CLS] first); scores (N, V) -> scores (N, V)."""
        import torch

        rows, batch = input_ids.shape[0], len(self.source_pieces)
        expand = max(rows // batch, 1)
        scores = scores.clone()
        if self._continuation_ids is None:
            flags = torch.tensor(list(self.continuation), dtype=torch.bool)
            self._continuation_ids = flags.nonzero().squeeze(-1).to(scores.device)
        continuation_ids = self._continuation_ids[self._continuation_ids < scores.shape[-1]]
        history = input_ids.tolist()
        for row in range(rows):
            words = self.source_pieces[row // expand]
            if not words:
                continue
            generated = history[row][1:]
            missing = self._missing(generated, words)
            begun: tuple[int, int] | None = None  # (index into missing, pieces written)
            finishing: set[int] = set()  # the next piece of each word begun and not banned
            # in order, only the first missing keyword can be the one begun
            for index, pieces in enumerate(missing[:1] if self.in_order else missing):
                for k in range(len(pieces) - 1, 0, -1):  # a word begun is finished (longest prefix)
                    if tuple(generated[-k:]) == pieces[:k]:
                        if torch.isfinite(scores[row, pieces[k]]):
                            finishing.add(pieces[k])
                        begun = begun or (index, k)
                        break
            # a word finished takes no continuation, unless its pieces also begin a missing word ("new"
            # finished while "newton" is missing: that word goes on)
            if begun is None and any(
                len(generated) >= len(p) and tuple(generated[-len(p) :]) == p for p in words
            ):
                scores[row, continuation_ids] = -float("inf")
            if self.once or self.in_order:
                banned = self._out_of_place(row // expand, missing, finishing)
                if banned and torch.isfinite(scores[row]).sum() > torch.isfinite(scores[row, banned]).sum():
                    scores[row, banned] = -float("inf")  # never all of the row's pieces
            if not missing:
                continue
            end = scores[row, [self.eos_token_id, *self.closing]].max().clone()
            for pieces in missing[:1] if self.in_order else missing:
                first = pieces[0]
                if self.bonus:
                    scores[row, first] = scores[row, first] + self.bonus
                # a piece another processor banned stays banned (a repeated n-gram): the keyword waits
                if self.require and torch.isfinite(scores[row, first]):
                    scores[row, first] = torch.maximum(scores[row, first], end)
            best = scores[row].max().clone()
            if finishing:
                allowed = torch.tensor(sorted(finishing), device=scores.device)
                # strictly above the best: among the pieces allowed, the model's order decides
                kept = torch.maximum(scores[row, allowed], best + 1e-3)
                scores[row] = -float("inf")
                scores[row, allowed] = kept
            if not self.require:
                continue
            scores[row, self.eos_token_id] = -float("inf")
            closing = [i for i in self.closing if i not in finishing]  # a keyword's own "." stays
            if closing:
                scores[row, closing] = -float("inf")
            if self.max_length is not None:
                needed = sum(len(pieces) for pieces in missing) - (begun[1] if begun else 0)
                if needed >= self.max_length - input_ids.shape[1]:
                    index, written = begun or (0, 0)
                    forced = missing[index][written]
                    kept = (scores[row, forced] if torch.isfinite(scores[row, forced]) else best).clone()
                    scores[row] = -float("inf")
                    scores[row, forced] = kept
        return scores


#: the marks that end a sentence: under ``require_keywords`` they wait, as the end token does, until every
#: keyword word is written
SENTENCE_END_MARKS = ("?", "!", ".")


def sentence_end_pieces(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    """The ids of the vocabulary's sentence-end marks (:data:`SENTENCE_END_MARKS`) as whole pieces."""
    vocab = tokenizer.get_vocab()
    return [vocab[mark] for mark in SENTENCE_END_MARKS if mark in vocab]


def function_word_pieces(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    """The ids of the vocabulary's whole pieces that are function words (:data:`~hf_querygen.text.STOPWORDS`):
    a keyword word spelt by one of them ("the" of "The Beatles") is no content word."""
    vocab = tokenizer.get_vocab()
    return sorted(vocab[word] for word in STOPWORDS if word in vocab)


def continuation_mask(tokenizer: PreTrainedTokenizerFast) -> list[bool]:
    """Per token id, whether the piece continues a word (WordPiece's ``##`` prefix)."""
    prefix = getattr(getattr(tokenizer.backend_tokenizer, "model", None), "continuing_subword_prefix", "##")
    mask = [False] * len(tokenizer)
    for token, index in tokenizer.get_vocab().items():
        if index < len(mask) and prefix and token.startswith(prefix):
            mask[index] = True
    return mask


def generate_candidates(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 64,
    max_source_length: int | None = None,
    keyword_bonus: float = 0.0,
    require_keywords: bool = False,
    keywords_once: bool = False,
    keywords_in_order: bool = False,
    **generate_kwargs: Any,
) -> list[list[tuple[str, float]]]:
    """Per text, every returned sequence as ``(text, score)`` in generate's order (beam search: best first).

    ``score``: beam search's length-normalised log-probability (``sequences_scores``), for greedy or
    sampling the mean log-probability of the emitted pieces under the processed distribution.
    ``keyword_bonus`` / ``require_keywords`` / ``keywords_once`` / ``keywords_in_order``: a
    :class:`SourceWordsProcessor` over each text's words (its ``bonus`` / ``require`` / ``once`` /
    ``in_order``; a content word is one not in :data:`~hf_querygen.text.STOPWORDS`; a keyword that
    generate's ``no_repeat_ngram_size`` would never let it finish is given up).
    ``generate_kwargs`` go to ``generate()`` (``num_beams``, ``num_return_sequences``, ``max_length``,
    ``no_repeat_ngram_size``, ...)."""
    import torch

    if isinstance(texts, str):
        raise InvalidInputError("expected a list of texts, not a single string")
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be >= 1, got {batch_size}")
    texts = [str(t) for t in texts]
    kwargs = {**generate_kwargs, "return_dict_in_generate": True, "output_scores": True}
    n = int(kwargs.get("num_return_sequences") or 1)
    keeping = keyword_bonus or require_keywords or keywords_once or keywords_in_order
    continuation = continuation_mask(tokenizer) if keeping else None
    closing = sentence_end_pieces(tokenizer) if continuation is not None else []
    function = function_word_pieces(tokenizer) if keywords_once or keywords_in_order else []
    max_length = kwargs.get("max_length") or model.generation_config.max_length
    eos = model.generation_config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    if model.training:
        model.eval()
    encoded = tokenizer(
        texts,
        truncation=max_source_length is not None,
        max_length=max_source_length,
        return_token_type_ids=False,
    )["input_ids"]
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
    results: list[list[tuple[str, float]]] = [[] for _ in texts]
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        width = max(len(encoded[i]) for i in indices)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([encoded[i] + [pad] * (width - len(encoded[i])) for i in indices])
        mask = torch.tensor([[1] * len(encoded[i]) + [0] * (width - len(encoded[i])) for i in indices])
        processors = []
        if continuation is not None:
            processors.append(
                SourceWordsProcessor(
                    [source_word_pieces(tokenizer, texts[i]) for i in indices],
                    eos,
                    continuation,
                    bonus=keyword_bonus,
                    require=require_keywords,
                    max_length=max_length,
                    closing=closing,
                    once=keywords_once,
                    in_order=keywords_in_order,
                    function_pieces=function,
                    no_repeat_ngram_size=kwargs.get("no_repeat_ngram_size") or 0,
                )
            )
        out = run_generate(model, {"input_ids": input_ids, "attention_mask": mask}, processors, **kwargs)
        sequences = out.sequences
        if getattr(out, "sequences_scores", None) is not None:
            scores = out.sequences_scores.tolist()
        else:
            log_probs = torch.log_softmax(torch.stack(out.scores).float(), dim=-1)  # (T', N, V)
            generated = sequences[:, -len(out.scores) :]
            steps = log_probs.gather(-1, generated.T.unsqueeze(-1)).squeeze(-1).T  # (N, T')
            keep = (generated != pad) & torch.isfinite(steps)
            scores = (torch.where(keep, steps, 0.0).sum(-1) / keep.sum(-1).clamp(min=1)).tolist()
        decoded = tokenizer.batch_decode(
            sequences, skip_special_tokens=True, clean_up_tokenization_spaces=True
        )
        for k, i in enumerate(indices):
            results[i] = [(decoded[j].strip(), float(scores[j])) for j in range(k * n, (k + 1) * n)]
    return results


__all__ = [
    "SUBWORD_COLUMNS",
    "SourceWordsProcessor",
    "continuation_mask",
    "encode_subword_pairs",
    "function_word_pieces",
    "generate_candidates",
    "prepare_backbone",
    "sentence_end_pieces",
    "source_word_pieces",
    "warm_start_task_config",
]
