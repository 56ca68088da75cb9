"""An empty, punctuation-only or repetitive output warns once per model, naming it: an under-trained model."""

import warnings

import pytest

from hf_querygen.errors import DegenerateOutputWarning
from hf_querygen.tasks import base
from hf_querygen.tasks.base import degenerate_reason, get_task


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("? ? ?", "only punctuation"),
        ("which the the the the ? ? ? ?", "a word repeated"),
        ("berlin berlin population population", "a word repeated"),
        ("what is the population of berlin ?", None),
        ("new york|times", None),
        ("berlin population", None),
        ("?? drop??? us?? 1st?? henry?? in?? runs?? missouri?? time?? zone?? rome??", "mostly punctuation"),
        ("what??, is?? the?? capital??", "mostly punctuation"),
        ("c++ c# f# java", None),  # symbols, not sentence punctuation
        ("u.s. vs u.k. trade deals", None),
        ("hello everybody ; i ' m moving to doha . does anyone know a language school ?", None),
        ("who directed the movie avant-garde ?", None),
    ],
)
def test_degenerate_reason(text, reason):
    assert degenerate_reason(text) == reason


class _Config:
    def __init__(self, name):
        self._name_or_path = name


class _Model:
    def __init__(self, name):
        self.config = _Config(name)


def test_warns_once_per_model_naming_it(monkeypatch):
    monkeypatch.setattr(base, "_WARNED_DEGENERATE", set())
    task = get_task("text2text")
    with pytest.warns(
        DegenerateOutputWarning, match="runs/copynet.*'which the the the ..'.*under-trained"
    ) as seen:
        task.warn_if_degenerate(["what is it ?", "which the the the .."], _Model("runs/copynet"))
        task.warn_if_degenerate(["", "? ?"], _Model("runs/copynet"))  # the same model: not again
    assert len(seen) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        task.warn_if_degenerate(["what is the capital of france ?"], _Model("runs/good"))
    with pytest.warns(DegenerateOutputWarning, match="runs/other"):
        task.warn_if_degenerate([["", "what is it ?"]], _Model("runs/other"))  # alternatives per input


def test_segments_are_one_output_each(monkeypatch):
    monkeypatch.setattr(base, "_WARNED_DEGENERATE", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        get_task("segmentation").warn_if_degenerate([["graffiti fonts", "alphabet"]], _Model("seg"))
