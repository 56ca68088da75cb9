"""choose_decoding: the decoding grid is scored on each selection split; with a floor (k2q: the keyword
query echoed) the worst split's gain over it decides, so a decoding that wins big on one source of
queries but only ties the trivial output on another is not chosen over one that beats it on both."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import datasets
import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.base import DecodingChoice, Task, TaskData
from hf_querygen.training import choose_decoding

#: decoding mode -> split -> how many of the split's 4 examples it gets right (the first ones)
RIGHT = {"big-on-a": {"a": 4, "b": 2}, "even": {"a": 2, "b": 3}, "small": {"a": 1, "b": 1}}
#: the trivial output (the floor) is right on the first 2 examples of b
FLOOR_RIGHT = {"a": 0, "b": 2}


class _ToyTask(Task):
    name = "toy-selection"
    source_column = "source"
    reference_column = "target"
    primary_metric = "accuracy"
    decoding_grid = tuple({"mode": mode} for mode in RIGHT)

    def __init__(self, floor: bool) -> None:
        self.floor = floor

    def accepted_decoding(self, family: str) -> None:
        return None  # its predict honours the grid, whatever family the stand-in config reads as

    def selection_splits(self, data: TaskData) -> tuple[str, ...]:
        return ("a", "b", "not-in-the-data")

    def selection_floor(self, sources: list[str]) -> list[str] | None:
        return [_answer(s, FLOOR_RIGHT) for s in sources] if self.floor else None

    def predict(self, model: Any, tokenizer: Any, inputs: list[str], **decoding: Any) -> list[str]:
        # like K2QTask.predict: the model's saved decoding is the default the call's arguments override
        decoding = {**(getattr(getattr(model, "config", None), "task_decoding", None) or {}), **decoding}
        if decoding.get("all_right"):
            return [f"gold {s}" for s in inputs]
        return [_answer(s, RIGHT[decoding["mode"]]) for s in inputs]

    def score(self, predictions: list[str], references: list[str], sources: list[str]) -> dict[str, float]:
        right = sum(p == r for p, r in zip(predictions, references, strict=True))
        return {"accuracy": right / len(references)}


def _answer(source: str, right: dict[str, int]) -> str:
    split, index = source.split(":")
    return f"gold {source}" if int(index) < right[split] else source


def _data(task: Task) -> TaskData:
    splits = {
        name: datasets.Dataset.from_dict(
            {"source": [f"{name}:{i}" for i in range(4)], "target": [f"gold {name}:{i}" for i in range(4)]}
        )
        for name in ("a", "b")
    }
    return TaskData(task, datasets.DatasetDict(splits), tokenizer=None)


def test_with_a_floor_the_worst_splits_gain_over_it_decides():
    chosen, rows = choose_decoding(None, _data(_ToyTask(floor=True)), {"num_beams": 1})
    by_mode = {row["decoding"]["mode"]: row for row in rows}
    assert by_mode["big-on-a"]["by_split"] == {"a": 1.0, "b": 0.5}
    assert by_mode["big-on-a"]["floor"] == {"a": 0.0, "b": 0.5}
    # gains: big-on-a (1.0, 0.0) -> 0.0; even (0.5, 0.25) -> 0.25; small (0.25, -0.25) -> -0.25
    assert [row["criterion"] for row in rows] == [0.0, 0.25, -0.25]
    assert chosen == {"num_beams": 1, "mode": "even"}


def test_without_a_floor_the_mean_of_the_splits_decides():
    chosen, rows = choose_decoding(None, _data(_ToyTask(floor=False)))
    assert [row["criterion"] for row in rows] == [0.75, 0.625, 0.25]
    assert chosen == {"mode": "big-on-a"} and rows[0]["floor"] == {}


def test_no_grid_or_no_selection_split_keeps_the_base_decoding():
    task = _ToyTask(floor=True)
    empty = TaskData(task, datasets.DatasetDict(), tokenizer=None)
    assert choose_decoding(None, empty, {"num_beams": 2}) == ({"num_beams": 2}, [])


def test_a_decoding_saved_with_the_model_does_not_fill_in_the_candidates():
    model = SimpleNamespace(config=SimpleNamespace(task_decoding={"all_right": True, "mode": "small"}))
    chosen, rows = choose_decoding(model, _data(_ToyTask(floor=True)))
    assert [row["criterion"] for row in rows] == [0.0, 0.25, -0.25] and chosen == {"mode": "even"}
    assert model.config.task_decoding == {"all_right": True, "mode": "small"}  # restored; the caller saves


def test_overrides_are_set_over_every_candidate_and_the_base():
    # a budget's row_decoding (a smoke run's greedy search): over the base and over each grid entry
    chosen, rows = choose_decoding(
        None, _data(_ToyTask(floor=False)), {"num_beams": 4}, overrides={"num_beams": 1, "mode": "small"}
    )
    assert [row["decoding"] for row in rows] == [{"num_beams": 1, "mode": "small"}] * 3
    assert chosen == {"num_beams": 1, "mode": "small"}
    task = _ToyTask(floor=True)
    empty = TaskData(task, datasets.DatasetDict(), tokenizer=None)
    chosen, rows = choose_decoding(None, empty, {"num_beams": 4}, overrides={"num_beams": 1})
    assert (chosen, rows) == ({"num_beams": 1}, [])


def test_entries_made_equal_by_the_overrides_are_decoded_once_and_each_keeps_its_row():
    decoded = []

    class Counting(_ToyTask):
        def predict(self, model, tokenizer, inputs, **decoding):
            decoded.append(decoding["mode"])
            return super().predict(model, tokenizer, inputs, **decoding)

    _, rows = choose_decoding(None, _data(Counting(floor=False)), overrides={"mode": "small"})
    assert decoded == ["small", "small"]  # once per selection split, not once per grid entry
    assert len(rows) == 3 and rows[0] == rows[1] == rows[2] and rows[0] is not rows[1]


def test_a_sample_scores_every_entry_and_the_floor_on_the_same_seeded_draw_of_each_split():
    seen = []

    class Recording(_ToyTask):
        def predict(self, model, tokenizer, inputs, **decoding):
            seen.append(tuple(inputs))
            return super().predict(model, tokenizer, inputs, **decoding)

        def selection_floor(self, sources):
            seen.append(("floor", *sources))
            return super().selection_floor(sources)

    _, rows = choose_decoding(None, _data(Recording(floor=True)), choice=DecodingChoice(sample=2))
    assert all(row["examples"] == {"a": 2, "b": 2} for row in rows)
    floors, decoded = seen[:2], seen[2:]
    assert len(decoded) == 3 * 2 and all(len(inputs) == 2 for inputs in decoded)
    assert [inputs for inputs in decoded[:2]] * 3 == decoded  # the same draw for every entry
    assert [("floor", *inputs) for inputs in decoded[:2]] == floors  # and for the floor
    # the draw keeps the split's order and is the same on every call
    assert all(list(inputs) == sorted(inputs) for inputs in decoded)
    seen.clear()
    again = choose_decoding(None, _data(Recording(floor=True)), choice=DecodingChoice(sample=2))[1]
    assert seen[2:4] == decoded[:2] and [r["by_split"] for r in again] == [r["by_split"] for r in rows]
    # a sample as large as the split, or none: every example
    for sample in (4, 10, None):
        rows = choose_decoding(None, _data(_ToyTask(floor=True)), choice=DecodingChoice(sample=sample))[1]
        assert rows[0]["examples"] == {"a": 4, "b": 4}
        assert [row["criterion"] for row in rows] == [0.0, 0.25, -0.25]


@pytest.mark.parametrize("sample", [0, -3, True, 2.5, "250"])
def test_a_sample_that_is_not_a_number_of_examples_is_refused_where_it_is_given(sample):
    from hf_querygen.systems import System

    with pytest.raises(InvalidInputError, match=r"DecodingChoice: sample="):
        System("toy/row", "k2q", preset="bert2bert", decoding_choice=DecodingChoice(sample=sample))
