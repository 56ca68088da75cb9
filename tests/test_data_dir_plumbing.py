"""``--data-dir X`` reaches every resource a system reads, not only its corpus: nl2kw's in-domain
vocabulary, word vectors and synthetic pretraining pairs read X through ``train`` (training) and the
experiment runner alike (the resource loaders are replaced by recorders of the directory they get)."""

from __future__ import annotations

import datasets
import pytest

from hf_querygen.experiments.jobs import _fold_data
from hf_querygen.experiments.papers import REPRODUCTIONS, get_reproduction
from hf_querygen.experiments.recipes import _folds
from hf_querygen.systems import SYSTEMS
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.nl2kw import resources as nl2kw_resources
from hf_querygen.tasks.nl2kw import task as nl2kw_task

ROWS = {
    "train": [
        {"nl_query": "how do i cook rice quickly", "keyword_query": "cook rice"},
        {"nl_query": "what is the capital of france", "keyword_query": "capital france"},
    ]
    * 3,
    "validation": [{"nl_query": "how to boil an egg", "keyword_query": "boil egg"}],
    "test": [{"nl_query": "best way to learn python", "keyword_query": "learn python"}],
}


class _Stop(Exception):
    """Raised by the patched training once the prepared data is seen."""


@pytest.fixture
def recorded(monkeypatch):
    """Every nl2kw resource loader replaced by a recorder of the data directory it is asked for."""
    calls: list[tuple[str, object]] = []

    def question_corpus(data_dir):
        calls.append(("in-domain vocabulary", data_dir))
        return ("how do i cook pasta", "where is paris")

    def word_vectors(splits, kind, vector_size, data_dir=None):
        calls.append((f"word vectors ({kind})", data_dir))
        return object()

    def synthetic_pairs(splits, data_dir=None, cache_dir=None):
        calls.append(("synthetic pairs", data_dir))
        pairs = datasets.Dataset.from_list([{"nl_query": "cook pasta now", "keyword_query": "cook pasta"}])
        return pairs, {"synthetic_pairs": 1}

    monkeypatch.setattr(nl2kw_resources, "_question_corpus", question_corpus)
    for module in (nl2kw_resources, nl2kw_task):  # the task imports the loaders by name
        monkeypatch.setattr(module, "word_vectors", word_vectors)
        monkeypatch.setattr(module, "synthetic_pairs", synthetic_pairs)
    task = get_task("nl2kw")
    monkeypatch.setattr(
        type(task),
        "load",
        lambda self, corpus=None, config=None, data_dir=None: datasets.DatasetDict(
            {split: datasets.Dataset.from_list(rows) for split, rows in ROWS.items()}
        ),
    )
    return calls


def _systems_with_task_resources() -> list:
    """Every registered system (and extra run of a paper) of a task whose preparation reads data_dir."""
    import inspect

    systems = list(dict(SYSTEMS.items()).values())
    for name in REPRODUCTIONS.names():
        reproduction = get_reproduction(name)
        extra = getattr(reproduction, "extra_systems", None)
        if extra is not None:
            budget = reproduction.budgets["full"]
            systems += [system for system, _seeds in extra(budget, 1)]
    return [
        s
        for s in systems
        if "data_dir" in inspect.signature(get_task(s.task).prepare).parameters and s.trainable
    ]


def _use_resources(data, system) -> None:
    """Ask the task for the resources ``train_preset`` would load for ``system``."""
    options = dict(system.train_options)
    if options.get("word_vectors"):
        data.task.word_vectors(options["word_vectors"], data, 8)
    if options.get("pretrain_on"):
        data.task.pretraining_data(options["pretrain_on"], data)


def test_every_resource_of_every_system_reads_the_given_data_dir_through_train(
    recorded, monkeypatch, tmp_path
):
    from hf_querygen import training

    seen = {}

    def stop(data, preset, output_dir, **kwargs):
        seen["data"] = data
        raise _Stop

    monkeypatch.setattr(training.model_training, "train_preset", stop)  # what train_model calls
    systems = _systems_with_task_resources()
    assert any(s.train_options.get("pretrain_on") for s in systems)
    assert any(s.train_options.get("word_vectors") for s in systems)
    assert any(s.prepare_options.get("vocabulary") == "in-domain" for s in systems)
    data_dir = tmp_path / "my-data"
    for system in systems:
        with pytest.raises(_Stop):
            training.train_model(
                training.Recipe(
                    system.preset,
                    prepare_options=system.prepare_options,
                    train_options=system.train_options,
                ),
                training.DataSelection(task=system.task, data_dir=data_dir),
                tmp_path / "out" / system.key,
            )
        _use_resources(seen["data"], system)
    assert recorded, "no system read a resource"
    assert {kind for kind, _ in recorded} == {
        "in-domain vocabulary",
        "word vectors (word2vec)",
        "synthetic pairs",
    }
    assert all(directory == str(data_dir) for _, directory in recorded), recorded


def test_every_resource_of_every_system_reads_the_given_data_dir_in_the_runner(recorded, tmp_path):
    data_dir = tmp_path / "my-data"
    systems = _systems_with_task_resources()
    for name in REPRODUCTIONS.names():
        reproduction = get_reproduction(name)
        if not hasattr(reproduction, "systems") or reproduction.task != "nl2kw":
            continue
        (fold,) = _folds(reproduction, reproduction.budgets["quick"], data_dir)
        assert fold.data_dir == data_dir
        for system in [s for s in systems if s.name.startswith(f"{name}/")]:
            _use_resources(_fold_data(reproduction, fold, {}, system.prepare_options), system)
    assert {kind for kind, _ in recorded} >= {"in-domain vocabulary", "synthetic pairs"}
    assert all(directory == str(data_dir) for _, directory in recorded), recorded


def test_without_a_data_dir_the_resources_keep_their_default(recorded):
    data = get_task("nl2kw").prepare_data(get_task("nl2kw").load(), data_dir=None, vocabulary="in-domain")
    assert recorded == [("in-domain vocabulary", None)] and data.state["data_dir"] is None
