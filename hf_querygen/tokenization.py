"""Word-level tokenizers for the RNN models, built with `tokenizers` and wrapped as
``PreTrainedTokenizerFast`` so that ``save_pretrained`` / ``AutoTokenizer.from_pretrained`` work.

Vocabulary layout (the "extended output space" convention of :mod:`hf_querygen.nn.copy` relies on
it): ``[PAD]=0, [UNK]=1, [BOS]=2, [EOS]=3``, any extra special tokens, then the target-side words by
frequency, then the remaining source-side words by frequency. The decoder's output vocabulary is
therefore simply token ids ``0 .. output_vocab_size - 1`` while encoder and decoder share one
embedding table (the papers use a smaller output vocabulary than input vocabulary).

Every encoding ends with ``[EOS]`` (a post-processor in the tokenizer itself), so training
preprocessing, ``generate()`` called on ``tokenizer(text)`` and the pipelines all feed the encoder
the same sequence.

Chinese text (Liu et al. 2018 work on Chinese queries) is segmented into words with jieba before
the whitespace/punctuation split; jieba comes with the ``zh`` extra and is imported only then.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from .errors import InvalidInputError
from .utils import require_extra

PAD_TOKEN, UNK_TOKEN, BOS_TOKEN, EOS_TOKEN = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
#: the four special tokens in id order 0..3; every model config uses these ids
SPECIAL_TOKENS: tuple[str, ...] = (PAD_TOKEN, UNK_TOKEN, BOS_TOKEN, EOS_TOKEN)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def _jieba():
    jieba = require_extra("jieba", "zh", "Chinese word segmentation")
    jieba.setLogLevel(logging.WARNING)  # jieba logs its dictionary loading at INFO on first use
    return jieba


def segment_chinese(text: str) -> str:
    """Words of ``text`` as segmented by jieba, joined by single spaces (latin words pass through)."""
    return " ".join(word for word in _jieba().lcut(text) if word.strip())


class JiebaWordTokenizer(PreTrainedTokenizerFast):
    """A word-level tokenizer that segments Chinese text with jieba before tokenizing.

    jieba cannot live inside a serialisable ``tokenizers`` pipeline, so the segmentation happens in
    Python before the backend sees the text. The class deliberately has no ``__init__`` of its own:
    then transformers loads ``tokenizer.json`` as it is (normaliser, pre-tokenizer, post-processor).
    ``AutoTokenizer`` finds the class by the name stored in ``tokenizer_config.json`` once
    :func:`register_tokenizers` ran (it runs at ``import hf_querygen``).
    """

    def _encode_plus(self, text, text_pair=None, is_split_into_words: bool = False, **kwargs):
        if not is_split_into_words:
            text = _segment_any(text)
            text_pair = _segment_any(text_pair)
        return super()._encode_plus(
            text, text_pair=text_pair, is_split_into_words=is_split_into_words, **kwargs
        )


def _segment_any(text):
    if text is None:
        return None
    if isinstance(text, str):
        return segment_chinese(text)
    return [_segment_any(t) for t in text]


def uses_chinese_segmentation(tokenizer: PreTrainedTokenizerFast) -> bool:
    return bool(tokenizer.init_kwargs.get("chinese_segmentation", False))


def _backend_pipeline(lowercase: bool, split_punctuation: bool) -> Tokenizer:
    """A WordLevel tokenizer with an empty vocabulary: normaliser + pre-tokenizer only."""
    backend = Tokenizer(models.WordLevel({UNK_TOKEN: 0}, unk_token=UNK_TOKEN))
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    backend.normalizer = normalizers.Sequence(steps)
    splits = [pre_tokenizers.WhitespaceSplit()]
    if split_punctuation:
        splits.append(pre_tokenizers.Punctuation(behavior="isolated"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(splits)
    return backend


def _words_with_backend(backend: Tokenizer, text: str, chinese_segmentation: bool) -> list[str]:
    if chinese_segmentation:
        text = segment_chinese(text)
    normalized = backend.normalizer.normalize_str(text) if backend.normalizer is not None else text
    if backend.pre_tokenizer is None:
        return normalized.split()
    return [word for word, _ in backend.pre_tokenizer.pre_tokenize_str(normalized)]


def word_tokenize(tokenizer: PreTrainedTokenizerFast, text: str) -> list[str]:
    """The normalised words the tokenizer maps to ids, in order (no specials, no [UNK] mapping).

    Position ``j`` of the result is token position ``j`` of ``tokenizer(text)["input_ids"]``, so a
    copy label "source position j" decodes to ``word_tokenize(tokenizer, text)[j]``.
    """
    if not isinstance(text, str):
        raise TypeError(f"word_tokenize expects a string, got {type(text).__name__}: {text!r}")
    return _words_with_backend(tokenizer.backend_tokenizer, text, uses_chinese_segmentation(tokenizer))


def _ranked(counter: Counter, min_frequency: int, first_seen: dict[str, int]) -> list[str]:
    """Words with count >= min_frequency, most frequent first; ties by first appearance on that side."""
    kept = [w for w, c in counter.items() if c >= min_frequency]
    return sorted(kept, key=lambda w: (-counter[w], first_seen[w]))


def train_word_tokenizer(
    texts: Iterable[str],
    target_texts: Iterable[str] | None = None,
    vocab_size: int | None = None,
    min_frequency: int = 1,
    output_vocab_size: int | None = None,
    lowercase: bool = True,
    chinese_segmentation: bool = False,
    split_punctuation: bool = True,
    extra_special_tokens: Sequence[str] = (),
) -> PreTrainedTokenizerFast:
    """Build a word-level tokenizer from source ``texts`` (and optionally ``target_texts``).

    Args:
        texts: source-side texts (the encoder's input).
        target_texts: target-side texts; their words get the lowest ids after the specials, so that
            the first ``output_vocab_size`` ids are the decoder's output vocabulary. Without them,
            ``texts`` serve as both sides.
        vocab_size: cap on the whole vocabulary including special tokens (``None``: no cap).
        min_frequency: words seen fewer times (on their side) are left out ([UNK]).
        output_vocab_size: size of the decoder's output vocabulary including the special tokens;
            stored in ``tokenizer_config.json`` (``None``: every target word).
        lowercase: NFKC normalisation is always applied; lowercasing on top by default.
        chinese_segmentation: segment with jieba first (needs the ``zh`` extra).
        split_punctuation: split punctuation off words (``False``: whitespace only, for corpora whose
            words must stay aligned with whitespace positions, e.g. query segmentation).
        extra_special_tokens: more special tokens, given ids 4, 5, ... after the four fixed ones.

    Returns:
        a ``PreTrainedTokenizerFast`` (``JiebaWordTokenizer`` for Chinese) whose ``__call__`` appends
        ``[EOS]``; ``init_kwargs`` carry ``output_vocab_size`` and the options above.
    """
    specials = _check_tokenizer_options(
        texts, target_texts, vocab_size, min_frequency, extra_special_tokens, chinese_segmentation
    )
    backend = _backend_pipeline(lowercase, split_punctuation)
    source_counts, source_first_seen = _count_words(texts, "source", backend, chinese_segmentation)
    if target_texts is None:
        target_counts, target_first_seen = source_counts, source_first_seen
    else:
        target_counts, target_first_seen = _count_words(target_texts, "target", backend, chinese_segmentation)
    vocabulary, n_target_side = _word_vocabulary(
        specials,
        _ranked(target_counts, min_frequency, target_first_seen),
        _ranked(source_counts, min_frequency, source_first_seen),
        vocab_size,
    )
    if output_vocab_size is None:
        output_vocab_size = min(n_target_side, len(vocabulary))
    if not len(specials) <= output_vocab_size <= len(vocabulary):
        raise InvalidInputError(
            f"train_word_tokenizer: output_vocab_size={output_vocab_size} must lie between the "
            f"{len(specials)} special tokens and the vocabulary size {len(vocabulary)}"
        )

    backend.model = models.WordLevel({word: i for i, word in enumerate(vocabulary)}, unk_token=UNK_TOKEN)
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS_TOKEN}",
        pair=f"$A {EOS_TOKEN} $B {EOS_TOKEN}",
        special_tokens=[(EOS_TOKEN, EOS_ID)],
    )
    tokenizer_class = JiebaWordTokenizer if chinese_segmentation else PreTrainedTokenizerFast
    tokenizer = tokenizer_class(
        tokenizer_object=backend,
        pad_token=PAD_TOKEN,
        unk_token=UNK_TOKEN,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        extra_special_tokens=specials[len(SPECIAL_TOKENS) :],
        output_vocab_size=output_vocab_size,
        chinese_segmentation=chinese_segmentation,
        lowercase=lowercase,
        split_punctuation=split_punctuation,
    )
    # WordLevel knows the specials as vocabulary entries; check the ids the models rely on
    for expected_id, token in enumerate(specials):
        if tokenizer.convert_tokens_to_ids(token) != expected_id:
            raise AssertionError(f"special token {token} got id {tokenizer.convert_tokens_to_ids(token)}")
    return tokenizer


def _check_tokenizer_options(
    texts: Iterable[str],
    target_texts: Iterable[str] | None,
    vocab_size: int | None,
    min_frequency: int,
    extra_special_tokens: Sequence[str],
    chinese_segmentation: bool,
) -> list[str]:
    """Refuse :func:`train_word_tokenizer` options no tokenizer could be built from, before any text is
    read; returns the special tokens (the four fixed ones, then the extra ones)."""
    for side, corpus in (("texts", texts), ("target_texts", target_texts)):
        if corpus is None and side == "target_texts":
            continue
        # a bare string is iterable: it would be read as one text per character
        if corpus is None or isinstance(corpus, (str, bytes)) or not isinstance(corpus, Iterable):
            raise InvalidInputError(
                f"train_word_tokenizer: {side} must be an iterable of strings (one text per item), got "
                f"{type(corpus).__name__}"
                + (": wrap a single text in a list" if isinstance(corpus, str) else "")
            )
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
        raise InvalidInputError(
            f"train_word_tokenizer: min_frequency must be an integer >= 1, got {min_frequency!r}"
        )
    specials = list(SPECIAL_TOKENS) + [t for t in extra_special_tokens if t not in SPECIAL_TOKENS]
    if vocab_size is not None and vocab_size < len(specials):
        raise InvalidInputError(
            f"train_word_tokenizer: vocab_size={vocab_size} is smaller than the {len(specials)} special "
            "tokens; pass None (no cap) or a larger number"
        )
    if chinese_segmentation:
        _jieba()  # fail now, with the install hint, rather than inside the first encode
    return specials


def _count_words(
    corpus: Iterable[str], side: str, backend: Tokenizer, chinese_segmentation: bool
) -> tuple[Counter, dict[str, int]]:
    """Word counts of one side and each word's order of first appearance."""
    counter: Counter = Counter()
    first_seen: dict[str, int] = {}
    for index, text in enumerate(corpus):
        if not isinstance(text, str):
            raise InvalidInputError(
                f"train_word_tokenizer: {side} text #{index} is {type(text).__name__}, not str: {text!r}"
            )
        for word in _words_with_backend(backend, text, chinese_segmentation):
            counter[word] += 1
            first_seen.setdefault(word, len(first_seen))
    return counter, first_seen


def _word_vocabulary(
    specials: list[str], target_words: list[str], source_words: list[str], vocab_size: int | None
) -> tuple[list[str], int]:
    """Specials, then target words, then the remaining source words, cut at ``vocab_size``; returns it
    and the number of entries up to the last target word (before the cut)."""
    vocabulary = list(specials)
    seen = set(vocabulary)
    for word in target_words:
        if word not in seen:
            vocabulary.append(word)
            seen.add(word)
    n_target_side = len(vocabulary)
    for word in source_words:
        if word not in seen:
            vocabulary.append(word)
            seen.add(word)
    if vocab_size is not None:
        vocabulary = vocabulary[:vocab_size]
    return vocabulary, n_target_side


def output_vocab_size_of(tokenizer: PreTrainedTokenizerFast) -> int:
    """The decoder output vocabulary size stored with the tokenizer (whole vocabulary if absent)."""
    return int(tokenizer.init_kwargs.get("output_vocab_size") or len(tokenizer))


def register_tokenizers() -> None:
    """Let ``AutoTokenizer`` resolve ``JiebaWordTokenizer`` by the class name saved with it: a model
    package declares it (``ModelSpec.tokenizer_class``), its Auto registration registers it."""
    from ._registration import register_all

    register_all()
