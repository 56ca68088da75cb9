"""Argument validation shared by every public entry point (configs, metrics, corpora).

Each check raises :class:`hf_querygen.errors.InvalidInputError` with one message shape:
``"<owner>: <argument>=<value> (<type>) is not valid: <what is allowed>"``, so a user sees which
argument, which value and what to pass instead, at construction time rather than as an unnamed
TypeError deep inside torch. ``bool`` is never accepted where a number is expected (it is an
``int`` subclass in Python, and ``hidden_size=True`` is always a mistake).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .errors import InvalidInputError

__all__ = [
    "check_bool",
    "check_generation_kwargs",
    "check_choice",
    "check_float",
    "check_int",
    "check_optional_int",
    "check_string_list",
    "invalid",
]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def invalid(owner: str, name: str, value: Any, allowed: str) -> InvalidInputError:
    """The error for argument ``name`` of ``owner`` holding ``value``; ``allowed`` says what fits."""
    return InvalidInputError(
        f"{owner}: {name}={_shown(value)} ({type(value).__name__}) is not valid: {allowed}"
    )


def check_output_vocabulary(owner: str, vocab_size: int, output_vocab_size: int, **special_ids: int) -> None:
    """The decoders' softmax covers the first ``output_vocab_size`` ids: it must be in [1, vocab_size],
    and every special id (``pad_token_id=0, ...``) must lie inside it, or that token could never be
    generated (eos) or its row would not exist (pad, decoder start)."""
    if not 0 < output_vocab_size <= vocab_size:
        raise invalid(
            owner, "output_vocab_size", output_vocab_size, f"an integer in [1, vocab_size={vocab_size}]"
        )
    outside = {name: i for name, i in special_ids.items() if not 0 <= i < output_vocab_size}
    if outside:
        raise invalid(
            owner,
            "special token ids",
            outside,
            f"special token ids must be < output_vocab_size={output_vocab_size}",
        )


def _range_text(minimum: float | None, maximum: float | None, low_open: bool, high_open: bool) -> str:
    low = "-inf" if minimum is None else f"{minimum}"
    high = "inf" if maximum is None else f"{maximum}"
    opening = "(" if low_open or minimum is None else "["
    closing = ")" if high_open or maximum is None else "]"
    return f"{opening}{low}, {high}{closing}"


def check_int(
    owner: str, name: str, value: Any, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An integer (Python or numpy; not bool) in ``[minimum, maximum]``; returned as ``int``."""
    allowed = f"an integer in {_range_text(minimum, maximum, False, False)}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise invalid(owner, name, value, allowed)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise invalid(owner, name, value, allowed)
    return int(value)


def check_optional_int(
    owner: str, name: str, value: Any, minimum: int | None = None, maximum: int | None = None
) -> int | None:
    """``None`` or :func:`check_int`."""
    return None if value is None else check_int(owner, name, value, minimum, maximum)


def check_float(
    owner: str,
    name: str,
    value: Any,
    minimum: float | None = None,
    maximum: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number (int or float; not bool) in the range, open at the ends asked for."""
    allowed = f"a finite number in {_range_text(minimum, maximum, low_open, high_open)}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(owner, name, value, allowed)
    number = float(value)
    if not math.isfinite(number):
        raise invalid(owner, name, value, allowed)
    if minimum is not None and (number < minimum or (low_open and number == minimum)):
        raise invalid(owner, name, value, allowed)
    if maximum is not None and (number > maximum or (high_open and number == maximum)):
        raise invalid(owner, name, value, allowed)
    return number


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``True`` or ``False`` (numpy bools too); not 0/1 or strings."""
    if type(value).__name__ not in ("bool", "bool_"):
        raise invalid(owner, name, value, "True or False")
    return bool(value)


def check_choice(owner: str, name: str, value: Any, choices: Collection[Any]) -> Any:
    """One of ``choices``; a near miss of a string choice is named ("did you mean ...")."""
    try:
        if value in choices:
            return value
    except TypeError:  # unhashable value against a set
        pass
    hint = ""
    if isinstance(value, str):
        import difflib

        close = difflib.get_close_matches(value, [c for c in choices if isinstance(c, str)], n=2, cutoff=0.6)
        close += [c for c in choices if isinstance(c, str) and c.lower() == value.lower() and c not in close]
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise invalid(owner, name, value, f"one of {tuple(choices)}{hint}")


def check_string_list(owner: str, name: str, value: Any, allow_nested: bool = False) -> list:
    """A list/tuple of strings (with ``allow_nested``, items may also be lists of strings, e.g.
    several references per example). A bare string is refused: it would be read as characters."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        what = "a list of strings" + (" (or of lists of strings)" if allow_nested else "")
        raise invalid(owner, name, value, f"{what}, one item per example; wrap a single string in a list")
    for position, item in enumerate(value):
        if isinstance(item, str):
            continue
        if allow_nested and isinstance(item, Sequence) and not isinstance(item, bytes):
            bad = [x for x in item if not isinstance(x, str)]
            if not bad:
                continue
            raise invalid(owner, f"{name}[{position}]", item, "a list of strings")
        raise invalid(
            owner, f"{name}[{position}]", item, "a string" + (" or a list of strings" if allow_nested else "")
        )
    return list(value)


# ---------------------------------------------------------------- generation arguments
#: the generation arguments ``generate`` reads as counts, with their smallest value (also the checks of a
#: saved ``generation_config.json``: :mod:`hf_querygen.model_folder`)
GENERATION_INTS = {
    "max_length": 1,
    "max_new_tokens": 1,
    "min_length": 0,
    "min_new_tokens": 0,
    "num_beams": 1,
    "num_beam_groups": 1,
    "num_return_sequences": 1,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "top_k": 0,
}
GENERATION_POSITIVE_FLOATS = ("temperature", "repetition_penalty", "top_p", "encoder_repetition_penalty")
#: probabilities in (0, 1]: nucleus sampling's mass, a keyword tagger's KEYWORD threshold
GENERATION_PROBABILITIES = ("top_p", "keyword_threshold")
GENERATION_FLOATS = ("length_penalty", "diversity_penalty")
#: numbers >= 0: the keyword-keeping decoding's bonus (k2q, warm-started models)
GENERATION_NONNEGATIVE_FLOATS = ("keyword_bonus",)
GENERATION_BOOLS = (
    "do_sample",
    "use_cache",
    "output_scores",
    "return_dict_in_generate",
    # k2q's keyword-keeping options (word vocabularies: the copy models; word pieces: warm-started ones)
    "no_repeat_source_words",
    "copy_all_source_words",
    "require_keywords",
    "keywords_once",
    "keywords_in_order",
    "prefer_keywords",
    "prefer_questions",
    # q2id: the query before each generated description; the description cut at its last whole sentence
    "restate_query",
    "whole_sentences",
)


def asks_for_something(value: Any) -> bool:
    """Whether a decoding option's value asks for anything (``None``, ``False`` and 0 ask for nothing, so a
    model that cannot honour the option takes them)."""
    return value not in (None, False, 0)


def check_generation_kwargs(
    owner: str,
    kwargs: Mapping[str, Any],
    accepted: Collection[str] | None = None,
    why: str = "",
    default_beams: int | None = 1,
    refused: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The one check of the generation arguments a caller passes to a pipeline, ``Task.predict``,
    ``generate`` / ``evaluate`` or the demo, under the name the caller wrote (before anything renames
    ``max_new_tokens`` into ``max_length``): counts are integers >= their minimum (not bools, not
    strings), probabilities and penalties finite numbers in range, flags bools. ``accepted``: the names
    the model can honour (``None``: any); another name is refused, never ignored (``why`` says why).
    ``num_return_sequences`` above the beams (``default_beams``: the model's saved ``num_beams``)
    without sampling is refused naming both (``default_beams=None``: the caller widens the beam itself).
    ``refused``: names of another family of models, each with what it is (``Task.refused_decoding``),
    refused when set (a value of ``None``, ``False`` or 0 asks for nothing and passes).
    ``None`` values mean "the default" and pass."""
    if not isinstance(kwargs, Mapping):
        raise invalid(owner, "generation arguments", kwargs, "keyword arguments")
    if accepted is not None:
        refused = sorted(name for name in kwargs if name not in accepted and kwargs[name] is not None)
        if refused:
            takes = ", ".join(sorted(accepted)) if accepted else "none"
            raise invalid(
                owner, refused[0], kwargs[refused[0]], f"this model cannot honour it{why} (it takes: {takes})"
            )
    for name, value in kwargs.items():
        if value is None:
            continue
        if name in GENERATION_INTS:
            check_int(owner, name, value, GENERATION_INTS[name])
        elif name in GENERATION_PROBABILITIES:
            check_float(owner, name, value, 0.0, 1.0, low_open=True)
        elif name in GENERATION_POSITIVE_FLOATS:
            check_float(owner, name, value, 0.0, None, low_open=True)
        elif name in GENERATION_FLOATS:
            check_float(owner, name, value)
        elif name in GENERATION_NONNEGATIVE_FLOATS:
            check_float(owner, name, value, 0.0, None)
        elif name in GENERATION_BOOLS:
            check_bool(owner, name, value)
        elif name == "early_stopping" and not (isinstance(value, bool) or value == "never"):
            raise invalid(owner, name, value, 'True, False or "never"')
    for name, what in (refused or {}).items():
        if asks_for_something(kwargs.get(name)):
            raise InvalidInputError(f"{owner}: {name} is {what}")
    returns, beams = kwargs.get("num_return_sequences"), kwargs.get("num_beams")
    beams = default_beams if beams is None else beams
    if (
        default_beams is not None
        and returns is not None
        and not kwargs.get("do_sample")
        and returns > max(beams, 1)
    ):
        raise invalid(
            owner,
            "num_return_sequences",
            returns,
            f"at most num_beams={beams} (beam search returns its beams; raise num_beams or sample)",
        )
    return dict(kwargs)
